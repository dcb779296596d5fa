/* test_pool.c: the worker pool, and the world's step split over it.
 *
 * The pool must run every index of a range exactly once, on more than one
 * thread. The world must come out bit-identical (steer_world_hash after every
 * tick) with 1, 2, 4 threads and as many as there are cores, on a scenario that
 * exercises every branch of the steering pass the threads share: separation,
 * predictive avoidance against neighbours, walls and obstacles of the map,
 * kept neighbour sets, pursuit of other agents, wander (per-agent generators), paths, and the
 * kinematic and heading models, with spawns and despawns reshuffling the dense
 * list between ticks; and the same with the vector batches off (the scalar
 * reference) and on, there and on bench_world's dense and mixed scenarios.
 * And the server takes --threads / STEERD_THREADS (0, the
 * default, is one per core) and refuses a count it cannot run. */
#include <check.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_run.h"
#include "pool.h"
#include "rng.h"
#include "steerd_proc.h"
#include "world.h"
#include "world_internal.h" /* world_batch_set_avx: the lean batches four or eight lanes wide */

/* ---- the pool ------------------------------------------------------------ */

#define RANGE_MAX 5000u

typedef struct cover {
  atomic_uint hits[RANGE_MAX];
  atomic_uint calls;
  uint32_t chunk;
  int bad_chunk;
} cover;

static void cover_fn(void *ctx, uint32_t begin, uint32_t end) {
  cover *c = ctx;
  if (end <= begin || end - begin > c->chunk || begin % c->chunk != 0)
    c->bad_chunk = 1;
  for (uint32_t i = begin; i < end; i++)
    atomic_fetch_add(&c->hits[i], 1);
  atomic_fetch_add(&c->calls, 1);
}

START_TEST(test_pool_covers_range) {
  static const uint32_t threads[] = {1, 2, 3, 8};
  static const uint32_t counts[] = {0, 1, 7, 64, 65, 1000, RANGE_MAX};
  static const uint32_t chunks[] = {0, 1, 16, 64, 5000};
  static cover c;
  for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
    steer_pool *p = steer_pool_create(threads[t]);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(steer_pool_threads(p), threads[t]);
    for (int round = 0; round < 3; round++) /* the same pool runs again and again */
      for (size_t n = 0; n < sizeof(counts) / sizeof(counts[0]); n++)
        for (size_t k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++) {
          memset(&c, 0, sizeof(c));
          uint32_t chunk = chunks[k] ? chunks[k] : 1;
          /* A single call covers a range of at most one chunk (or any range with one thread). */
          c.chunk = (counts[n] <= chunk || threads[t] == 1) ? (counts[n] ? counts[n] : 1) : chunk;
          steer_pool_run(p, counts[n], chunks[k], cover_fn, &c);
          for (uint32_t i = 0; i < counts[n]; i++)
            ck_assert_msg(atomic_load(&c.hits[i]) == 1, "threads %u count %u chunk %u: index %u ran %u times",
                          threads[t], counts[n], chunks[k], i, atomic_load(&c.hits[i]));
          ck_assert_int_eq(c.bad_chunk, 0);
          uint32_t want = counts[n] == 0 ? 0 : (counts[n] + c.chunk - 1) / c.chunk;
          ck_assert_uint_eq(atomic_load(&c.calls), want);
        }
    steer_pool_destroy(p);
  }
  steer_pool_destroy(NULL);
  ck_assert_uint_eq(steer_pool_threads(NULL), 1);
}
END_TEST

START_TEST(test_pool_limits) {
  ck_assert_ptr_null(steer_pool_create(0));
  ck_assert_ptr_null(steer_pool_create(STEER_POOL_MAX_THREADS + 1));
  ck_assert_uint_ge(steer_pool_cores(), 1);
  ck_assert_uint_le(steer_pool_cores(), STEER_POOL_MAX_THREADS);
}
END_TEST

/* Two chunks of one index; each waits until both have started. With a single
 * thread taking chunks the first would wait for ever (here: 60 s, then fail),
 * so passing shows a worker took the other chunk. */
typedef struct meet {
  atomic_uint started;
  atomic_int timed_out;
} meet;

static void meet_fn(void *ctx, uint32_t begin, uint32_t end) {
  (void)begin;
  (void)end;
  meet *m = ctx;
  atomic_fetch_add(&m->started, 1);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (atomic_load(&m->started) < 2) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec - t0.tv_sec > 60) {
      atomic_store(&m->timed_out, 1);
      return;
    }
    struct timespec nap = {0, 100000};
    nanosleep(&nap, NULL);
  }
}

START_TEST(test_pool_uses_workers) {
  steer_pool *p = steer_pool_create(2);
  ck_assert_ptr_nonnull(p);
  for (int round = 0; round < 5; round++) {
    meet m;
    atomic_init(&m.started, 0);
    atomic_init(&m.timed_out, 0);
    steer_pool_run(p, 2, 1, meet_fn, &m);
    ck_assert_uint_eq(atomic_load(&m.started), 2);
    ck_assert_int_eq(atomic_load(&m.timed_out), 0);
  }
  steer_pool_destroy(p);
}
END_TEST

/* ---- the world over the pool --------------------------------------------- */

#define AGENTS 3000u
#define SIDE   260.0f
#define TICKS  60
#define DT     0.05f

static steer_world *make_world(void) {
  steer_world_config cfg = steer_default_world_config();
  cfg.max_agents = AGENTS + 64;
  cfg.max_paths = 8;
  cfg.max_path_points = 8;
  cfg.max_events = 4 * AGENTS;
  cfg.min = v2(0.0f, 0.0f);
  cfg.max = v2(SIDE, SIDE);
  cfg.cell_size = 8.0f;
  cfg.seed = 5;
  steer_world *w = steer_world_create(&cfg);
  ck_assert_ptr_nonnull(w);
  vec2 sides[] = {{1, 1}, {SIDE - 1, 1}, {SIDE - 1, SIDE - 1}, {1, SIDE - 1}, {1, 1}};
  steer_obstacle_desc walls = {STEER_OBSTACLE_WALL, 5, sides, 0.0f};
  ck_assert_int_eq(steer_world_add_obstacle(w, 1, &walls, NULL), STEER_OK);
  vec2 route[] = {{30, 30}, {200, 40}, {220, 200}, {40, 220}};
  int path = steer_world_path_create(w, route, 4, 2.0f, STEER_PATH_LOOP, STEER_CORNER_ARC);
  ck_assert_int_ge(path, 0);
  steer_rng rng;
  steer_rng_seed(&rng, 99);
  steer_id first = 0;
  for (uint32_t i = 0; i < AGENTS; i++) {
    steer_agent_desc d = steer_default_agent_desc();
    d.limits.radius = 0.6f;
    d.limits.max_speed = 2.5f;
    d.state.position = steer_rng_point(&rng, 5.0f, SIDE - 5.0f, 5.0f, SIDE - 5.0f);
    d.state.velocity = steer_rng_point(&rng, -1.0f, 1.0f, -1.0f, 1.0f);
    vec2 goal = steer_rng_point(&rng, 5.0f, SIDE - 5.0f, 5.0f, SIDE - 5.0f);
    int follow = 0;
    switch (i % 6) {
    case 0: /* arrive with predictive avoidance */
      d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_ARRIVE);
      d.behaviour.target.kind = STEER_TARGET_POINT;
      d.behaviour.target.point = goal;
      d.behaviour.avoid_weight = 1.0f;
      d.behaviour.max_neighbours = 10;
      d.behaviour.neighbour_period = (uint8_t)(1 + i % 4); /* kept neighbour sets between queries */
      break;
    case 1: /* seek with separation and avoidance */
      d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_SEEK);
      d.behaviour.target.kind = STEER_TARGET_POINT;
      d.behaviour.target.point = goal;
      d.behaviour.separation_weight = 1.0f;
      d.behaviour.avoid_weight = 0.5f;
      d.behaviour.max_neighbours = 8;
      break;
    case 2: /* pursue an earlier agent, with avoidance */
      d.behaviour = steer_default_behaviour(i > 0 ? STEER_BEHAVIOUR_PURSUE : STEER_BEHAVIOUR_WANDER);
      d.behaviour.target.kind = STEER_TARGET_AGENT;
      d.behaviour.target.agent = first;
      d.behaviour.avoid_weight = 1.0f;
      d.behaviour.max_neighbours = 6;
      break;
    case 3: /* wander: a generator per agent */
      d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
      d.behaviour.separation_weight = 0.5f;
      d.behaviour.max_neighbours = 4;
      break;
    case 4: /* kinematic wander against the walls */
      d.model = STEER_MODEL_KINEMATIC;
      d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
      break;
    default: /* heading model on a shared path */
      d.model = STEER_MODEL_HEADING;
      d.limits.max_rotation = 4.0f;
      follow = 1;
      break;
    }
    steer_id id;
    ck_assert_int_eq(steer_world_spawn(w, &d, i % 7, &id), STEER_OK);
    if (i == 0)
      first = id;
    if (follow)
      ck_assert_int_eq(steer_world_follow_path(w, id, path), STEER_OK);
  }
  /* Obstacles last, on top of the agents: the world moves them out. */
  for (uint32_t k = 0; k < 40; k++) {
    float cx = 20.0f + 30.0f * (float)(k % 8), cy = 30.0f + 45.0f * (float)(k / 8);
    if (k % 2 == 0) {
      vec2 c = v2(cx, cy);
      steer_obstacle_desc o = {STEER_OBSTACLE_CIRCLE, 1, &c, 2.0f};
      ck_assert_int_eq(steer_world_add_obstacle(w, 10 + k, &o, NULL), STEER_OK);
    } else {
      vec2 b[] = {{cx - 3, cy - 1}, {cx + 3, cy - 1}, {cx + 3, cy + 1}, {cx - 3, cy + 1}};
      steer_obstacle_desc o = {STEER_OBSTACLE_POLYGON, 4, b, 0.0f};
      ck_assert_int_eq(steer_world_add_obstacle(w, 10 + k, &o, NULL), STEER_OK);
    }
  }
  return w;
}

/* The same host calls on every world: despawn a few and spawn a few, so the
 * dense list is reordered and the grid rebuilt between ticks. */
static void churn(steer_world *w, int tick) {
  steer_world_view v = steer_world_get_view(w);
  if (tick % 10 != 5 || v.count < 100)
    return;
  steer_id gone[3] = {v.id[(uint32_t)tick % v.count], v.id[v.count / 2], v.id[v.count - 1]};
  for (int k = 0; k < 3; k++)
    steer_world_despawn(w, gone[k]);
  for (int k = 0; k < 3; k++) {
    steer_agent_desc d = steer_default_agent_desc();
    d.state.position = v2(10.0f + 7.0f * (float)k + (float)tick, 100.0f);
    d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
    d.behaviour.avoid_weight = 1.0f;
    d.behaviour.max_neighbours = 8;
    ck_assert_int_eq(steer_world_spawn(w, &d, 0, NULL), STEER_OK);
  }
}

START_TEST(test_step_same_hash_any_threads) {
  uint32_t counts[] = {1, 2, 4, steer_pool_cores()};
  enum { N = sizeof(counts) / sizeof(counts[0]) };
  steer_pool *pools[N];
  steer_world *worlds[N];
  for (int i = 0; i < N; i++) {
    pools[i] = steer_pool_create(counts[i]);
    ck_assert_ptr_nonnull(pools[i]);
    worlds[i] = make_world();
    steer_world_set_pool(worlds[i], pools[i]);
  }
  uint64_t h0 = steer_world_hash(worlds[0]);
  for (int i = 1; i < N; i++)
    ck_assert_uint_eq(steer_world_hash(worlds[i]), h0);
  steer_world_view v0 = steer_world_get_view(worlds[0]);
  float x0 = v0.px[0], y0 = v0.py[0];
  for (int t = 0; t < TICKS; t++) {
    for (int i = 0; i < N; i++) {
      churn(worlds[i], t);
      steer_world_step(worlds[i], DT);
    }
    uint64_t h = steer_world_hash(worlds[0]);
    uint32_t ne0;
    steer_world_events(worlds[0], &ne0);
    for (int i = 1; i < N; i++) {
      ck_assert_msg(steer_world_hash(worlds[i]) == h, "tick %d: %u threads differ from one", t + 1,
                    counts[i]);
      uint32_t ne;
      steer_world_events(worlds[i], &ne);
      ck_assert_uint_eq(ne, ne0);
    }
  }
  /* The scenario did move (the hash is not equal for want of a step). */
  steer_world_view v = steer_world_get_view(worlds[0]);
  ck_assert(v.px[0] != x0 || v.py[0] != y0 || steer_world_hash(worlds[0]) != h0);
  ck_assert_uint_eq(steer_world_tick(worlds[0]), TICKS);
  for (int i = 0; i < N; i++) {
    steer_world_destroy(worlds[i]);
    steer_pool_destroy(pools[i]);
  }
}
END_TEST

/* The vector batches (steer_world_set_simd) against the scalar reference:
 * the same hash after every tick, on the scenario above (arrive with
 * avoidance and kept neighbour sets among every other kind, churn), alone
 * and with two threads. */
START_TEST(test_simd_same_hash_as_scalar) {
  steer_pool *two = steer_pool_create(2);
  ck_assert_ptr_nonnull(two);
  steer_world *ref = make_world(), *vec = make_world(), *vec2t = make_world();
  steer_world_set_simd(ref, 0);
  steer_world_set_pool(vec2t, two);
  for (int t = 0; t < TICKS; t++) {
    churn(ref, t);
    churn(vec, t);
    churn(vec2t, t);
    steer_world_step(ref, DT);
    steer_world_step(vec, DT);
    steer_world_step(vec2t, DT);
    uint64_t h = steer_world_hash(ref);
    ck_assert_msg(steer_world_hash(vec) == h, "tick %d: the vector path differs from the scalar one", t + 1);
    ck_assert_msg(steer_world_hash(vec2t) == h, "tick %d: vector path, 2 threads, differs", t + 1);
  }
  steer_world_destroy(ref);
  steer_world_destroy(vec);
  steer_world_destroy(vec2t);
  steer_pool_destroy(two);
}
END_TEST

/* The same events in the same order in two worlds; returns their count and
 * ORs their types into *kinds. */
static uint32_t same_events(const steer_world *a, const steer_world *b, uint32_t *kinds, const char *what,
                            int t) {
  uint32_t na, nb;
  const steer_event *ea = steer_world_events(a, &na), *eb = steer_world_events(b, &nb);
  ck_assert_msg(na == nb, "%s tick %d: %u events against %u", what, t + 1, nb, na);
  for (uint32_t i = 0; i < na; i++) {
    ck_assert_msg(ea[i].agent == eb[i].agent && ea[i].type == eb[i].type && ea[i].node == eb[i].node,
                  "%s tick %d: event %u differs", what, t + 1, i);
    *kinds |= 1u << ea[i].type;
  }
  return na;
}

/* The vector path integrates each block as it steers it while no agent
 * targets another (world_tick.c, steer_range): against the scalar reference after
 * every tick while that switches on and off. The scenario above starts with
 * pursuers (two passes); they are turned into arrivals (one fused pass, with
 * walls, obstacles, avoidance and kept neighbour sets); one pursues again (two
 * passes: it steers from its target's state of the last tick), is stopped
 * (fused), another is sent after the first agent, which despawns (its target
 * gone: brake); the map is cleared (the plain quads integrate four at a time),
 * then everyone stops. With one and two threads. */
static void fused_script(steer_world *w, int t) {
  steer_world_view v = steer_world_get_view(w);
  steer_agent_info info;
  if (t == 20 || t == 45) { /* every pursuer (or every agent) arrives at a point instead */
    for (uint32_t i = 0; i < v.count; i++) {
      ck_assert_int_eq(steer_world_get(w, v.id[i], &info), STEER_OK);
      if (info.behaviour.target.kind != STEER_TARGET_AGENT && t == 20)
        continue;
      if (info.behaviour.kind == STEER_BEHAVIOUR_FOLLOW_PATH)
        continue;
      steer_behaviour b = info.behaviour;
      b.kind = STEER_BEHAVIOUR_ARRIVE;
      b.target.kind = STEER_TARGET_POINT;
      if (t == 45 && i % 4 == 1) { /* stuck detection on some: the events pass reads their behaviour */
        b.stuck_time = 0.3f;
        b.stuck_reaction = i % 8 == 1 ? STEER_STUCK_NUDGE : STEER_STUCK_REPORT;
      }
      int rc, k = 0;
      do { /* a goal inside an obstacle is refused: the next one */
        b.target.point =
            v2(20.0f + (float)((i + 37u * (uint32_t)k) % 200), 30.0f + (float)((i + (uint32_t)k) % 150));
        rc = steer_world_set_behaviour(w, v.id[i], &b);
      } while (rc == STEER_EBLOCKED && ++k < 50);
      ck_assert_int_eq(rc, STEER_OK);
    }
  }
  if (t == 30 || t == 38) { /* one pursues the last agent again */
    ck_assert_int_eq(steer_world_get(w, v.id[7], &info), STEER_OK);
    steer_behaviour b = steer_default_behaviour(STEER_BEHAVIOUR_PURSUE);
    b.target.kind = STEER_TARGET_AGENT;
    b.target.agent = v.id[t == 30 ? v.count - 1 : 0];
    ck_assert_int_eq(steer_world_set_behaviour(w, v.id[7], &b), STEER_OK);
  }
  if (t == 35)
    ck_assert_int_eq(steer_world_stop(w, v.id[7]), STEER_OK);
  if (t == 42) /* the pursued agent goes: the pursuer brakes, still counted */
    ck_assert_int_eq(steer_world_despawn(w, v.id[0]), STEER_OK);
  if (t == 50) { /* no map: plain arrivals and wanderers integrate four at a time */
    ck_assert_int_eq(steer_world_remove_obstacle(w, 1), STEER_OK);
    for (uint32_t k = 0; k < 40; k++)
      ck_assert_int_eq(steer_world_remove_obstacle(w, 10 + k), STEER_OK);
  }
  if (t == 70)
    for (uint32_t i = 0; i < v.count; i += 3)
      ck_assert_int_eq(steer_world_stop(w, v.id[i]), STEER_OK);
}

START_TEST(test_simd_fused_same_hash_as_scalar) {
  const int avx_was = world_batch_set_avx(_i == 0); /* _i 1: the lean batches four lanes wide */
  steer_pool *two = steer_pool_create(2);
  ck_assert_ptr_nonnull(two);
  steer_world *ref = make_world(), *vec = make_world(), *vec2t = make_world();
  steer_world_set_simd(ref, 0);
  steer_world_set_pool(vec2t, two);
  uint32_t kinds = 0;
  for (int t = 0; t < 90; t++) {
    fused_script(ref, t);
    fused_script(vec, t);
    fused_script(vec2t, t);
    steer_world_step(ref, DT);
    steer_world_step(vec, DT);
    steer_world_step(vec2t, DT);
    uint64_t h = steer_world_hash(ref);
    ck_assert_msg(steer_world_hash(vec) == h, "tick %d: the vector path differs from the scalar one", t + 1);
    ck_assert_msg(steer_world_hash(vec2t) == h, "tick %d: vector path, 2 threads, differs", t + 1);
    uint32_t ne_ref, ne_vec;
    const steer_event *er = steer_world_events(ref, &ne_ref), *ev = steer_world_events(vec, &ne_vec);
    ck_assert_uint_eq(ne_vec, ne_ref);
    for (uint32_t i = 0; i < ne_ref; i++) { /* the same events in the same order */
      ck_assert(er[i].agent == ev[i].agent && er[i].type == ev[i].type && er[i].node == ev[i].node);
      kinds |= 1u << er[i].type;
    }
    same_events(ref, vec2t, &kinds, "vector path, 2 threads", t);
  }
  /* Arrivals, waypoints and STUCK all came (the events pass's fast cases and its full one). */
  ck_assert(kinds & (1u << STEER_EVENT_ARRIVED));
  ck_assert(kinds & (1u << STEER_EVENT_WAYPOINT));
  ck_assert(kinds & (1u << STEER_EVENT_STUCK));
  steer_world_destroy(ref);
  steer_world_destroy(vec);
  steer_world_destroy(vec2t);
  steer_pool_destroy(two);
  world_batch_set_avx(avx_was);
}
END_TEST

/* bench_world's scenarios, smaller: dense (arrive to random goals, a new goal
 * on arrival, separation from the 8 nearest within 15 m) and mixed (heading
 * agents patrolling ping-pong paths, dynamic arrive, dynamic wander). */
static steer_world *bench_like(int mixed, uint32_t n, steer_rng *rng) {
  uint32_t per_row = 1;
  while (per_row * per_row < n)
    per_row++;
  float side = 5.0f * (float)per_row;
  steer_world_config cfg = steer_default_world_config();
  cfg.max_agents = n;
  cfg.max_paths = 4;
  cfg.max_path_points = 8;
  cfg.max_events = n;
  cfg.min = v2(0.0f, 0.0f);
  cfg.max = v2(side, side);
  cfg.cell_size = 8.0f;
  cfg.seed = 42;
  steer_world *w = steer_world_create(&cfg);
  ck_assert_ptr_nonnull(w);
  vec2 zig[5];
  for (int k = 0; k < 5; k++)
    zig[k] = v2(side * 0.5f - 40.0f + 20.0f * (float)k, side * 0.5f + ((k & 1) ? 12.0f : -12.0f));
  int path = steer_world_path_create(w, zig, 5, 1.0f, STEER_PATH_PINGPONG, STEER_CORNER_ARC);
  ck_assert_int_ge(path, 0);
  for (uint32_t i = 0; i < n; i++) {
    steer_agent_desc d = steer_default_agent_desc();
    d.limits.max_speed = 2.0f;
    d.model = STEER_MODEL_DYNAMIC;
    d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_ARRIVE);
    d.behaviour.target.kind = STEER_TARGET_POINT;
    d.behaviour.target.point = steer_rng_point(rng, 0.0f, side, 0.0f, side);
    d.state.position = v2_add(v2(2.5f + 5.0f * (float)(i % per_row), 2.5f + 5.0f * (float)(i / per_row)),
                              steer_rng_point(rng, -1.0f, 1.0f, -1.0f, 1.0f));
    int follow = 0;
    if (!mixed) {
      d.limits.radius = 1.5f;
      d.behaviour.separation_weight = 1.0f;
      d.behaviour.max_neighbours = 8;
      d.behaviour.params.separation_radius = 12.0f;
    } else if (i % 3 == 0) {
      d.model = STEER_MODEL_HEADING;
      d.limits.max_rotation = 6.0f;
      d.state.position = zig[0];
      d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_NONE);
      follow = 1;
    } else if (i % 3 == 2) {
      d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
    }
    steer_id id;
    ck_assert_int_eq(steer_world_spawn(w, &d, 0, &id), STEER_OK);
    if (follow)
      ck_assert_int_eq(steer_world_follow_path(w, id, path), STEER_OK);
  }
  return w;
}

/* The benchmark's host loop: a new random goal for each agent that arrived. */
static void retarget(steer_world *w, steer_rng *rng, float side) {
  uint32_t ne;
  const steer_event *ev = steer_world_events(w, &ne);
  for (uint32_t i = 0; i < ne; i++) {
    if (ev[i].type != STEER_EVENT_ARRIVED)
      continue;
    steer_agent_info info;
    ck_assert_int_eq(steer_world_get(w, ev[i].agent, &info), STEER_OK);
    steer_behaviour b = info.behaviour;
    b.target.point = steer_rng_point(rng, 0.0f, side, 0.0f, side);
    ck_assert_int_eq(steer_world_set_behaviour(w, ev[i].agent, &b), STEER_OK);
  }
}

START_TEST(test_simd_same_hash_bench_scenarios) {
  /* _i % 3: 0 dense, 1 mixed, 2 mixed big enough that two threads take
   * chunks of a whole block (world_tick.c, pass_steering), with the events pass's
   * prechecks on both threads; _i < 3 with the lean batches as wide as the
   * processor allows (eight lanes with AVX), else four lanes. */
  const int avx_was = world_batch_set_avx(_i < 3);
  const int scenario = _i % 3;
  const uint32_t n = scenario == 2 ? 20011 : 2501; /* not a multiple of the batch or block */
  steer_pool *two = steer_pool_create(2);
  ck_assert_ptr_nonnull(two);
  steer_rng ra, rb, rc;
  steer_rng_seed(&ra, 7);
  steer_rng_seed(&rb, 7);
  steer_rng_seed(&rc, 7);
  int mixed = scenario > 0;
  steer_world *ref = bench_like(mixed, n, &ra), *vec = bench_like(mixed, n, &rb),
              *vec2t = bench_like(mixed, n, &rc);
  steer_world_set_simd(ref, 0);
  steer_world_set_pool(vec2t, two);
  uint32_t per_row = 1;
  while (per_row * per_row < n)
    per_row++;
  float side = 5.0f * (float)per_row;
  uint32_t arrivals = 0, kinds = 0;
  for (int t = 0; t < 150; t++) {
    steer_world_step(ref, 0.05f);
    steer_world_step(vec, 0.05f);
    steer_world_step(vec2t, 0.05f);
    uint64_t h = steer_world_hash(ref);
    ck_assert_msg(steer_world_hash(vec) == h, "%s tick %d: the vector path differs",
                  mixed ? "mixed" : "dense", t + 1);
    ck_assert_msg(steer_world_hash(vec2t) == h, "%s tick %d: vector, 2 threads, differs",
                  mixed ? "mixed" : "dense", t + 1);
    same_events(ref, vec, &kinds, "vector path", t);
    same_events(ref, vec2t, &kinds, "vector path, 2 threads", t);
    uint32_t ne;
    const steer_event *ev = steer_world_events(ref, &ne);
    for (uint32_t i = 0; i < ne; i++)
      arrivals += ev[i].type == STEER_EVENT_ARRIVED;
    retarget(ref, &ra, side);
    retarget(vec, &rb, side);
    retarget(vec2t, &rc, side);
  }
  ck_assert_uint_gt(arrivals, 0); /* goals were reached and redrawn: the arrive branches all ran */
  if (mixed)                      /* the patrols passed nodes */
    ck_assert(kinds & (1u << STEER_EVENT_WAYPOINT));
  steer_world_destroy(ref);
  steer_world_destroy(vec);
  steer_world_destroy(vec2t);
  steer_pool_destroy(two);
  world_batch_set_avx(avx_was);
}
END_TEST

/* A pool set and then taken away: the world goes back to one thread, same results. */
START_TEST(test_pool_swapped_mid_run) {
  steer_pool *p = steer_pool_create(2);
  ck_assert_ptr_nonnull(p);
  steer_world *a = make_world(), *b = make_world();
  for (int t = 0; t < 20; t++) {
    steer_world_set_pool(b, t % 2 ? p : NULL);
    steer_world_step(a, DT);
    steer_world_step(b, DT);
    ck_assert_uint_eq(steer_world_hash(a), steer_world_hash(b));
  }
  steer_world_destroy(a);
  steer_world_destroy(b);
  steer_pool_destroy(p);
}
END_TEST

/* ---- the server's flag ---------------------------------------------------- */

static void expect_threads_line(const char *const *extra, const char *env, const char *line) {
  if (env)
    setenv("STEERD_THREADS", env, 1);
  else
    unsetenv("STEERD_THREADS");
  steerd_proc p;
  int rc = steerd_proc_start(&p, STEERD_BINARY, extra, 20000);
  unsetenv("STEERD_THREADS");
  ck_assert_int_eq(rc, 0);
  ck_assert_msg(steerd_proc_log_contains(&p, line), "no '%s' in the log", line);
  /* The loop keeps ticking the demo with the pool (its CPU time grows). */
  steerd_proc_sleep_ms(300);
  ck_assert_int_eq(steerd_proc_stop(&p, 10000), 0);
}

START_TEST(test_server_threads_flag) {
  static const char *const two[] = {"--threads", "2", NULL};
  expect_threads_line(two, NULL, "steering pass on 2 threads");
  expect_threads_line(NULL, "1", "steering pass on 1 thread");
  expect_threads_line(NULL, "3", "steering pass on 3 threads");
  static const char *const one[] = {"--threads", "1", NULL};
  expect_threads_line(one, "3", "steering pass on 1 thread"); /* the flag wins */
  char line[64];
  uint32_t cores = steer_pool_cores();
  snprintf(line, sizeof line, "steering pass on %u thread%s", cores, cores == 1 ? "" : "s");
  expect_threads_line(NULL, NULL, line);
}
END_TEST

START_TEST(test_server_threads_refused) {
  char cmd[512], out[4096];
  snprintf(cmd, sizeof cmd, "%s --bind 127.0.0.1 --port 0 --http-port 0 --threads 257 2>&1", STEERD_BINARY);
  FILE *f = popen(cmd, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = '\0';
  int status = pclose(f);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2, "%s", out);
  ck_assert_ptr_nonnull(strstr(out, "bad value '257' for --threads"));
}
END_TEST

static Suite *pool_suite(void) {
  Suite *s = suite_create("pool");
  TCase *tc = tcase_create("pool");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_pool_covers_range);
  tcase_add_test(tc, test_pool_limits);
  tcase_add_test(tc, test_pool_uses_workers);
  suite_add_tcase(s, tc);
  tc = tcase_create("world");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_step_same_hash_any_threads);
  tcase_add_test(tc, test_pool_swapped_mid_run);
  tcase_add_test(tc, test_simd_same_hash_as_scalar);
  tcase_add_loop_test(tc, test_simd_fused_same_hash_as_scalar, 0, 2);
  tcase_add_loop_test(tc, test_simd_same_hash_bench_scenarios, 0, 6);
  suite_add_tcase(s, tc);
  tc = tcase_create("server");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_server_threads_flag);
  tcase_add_test(tc, test_server_threads_refused);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return check_run(pool_suite()); }

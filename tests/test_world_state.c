/* test_world_state.c: saving a world to bytes and loading it back.
 *
 * A busy world (every model and behaviour, separation, shared, private and
 * released paths, cornering, churn that retires slots, dropped events) is saved
 * and loaded; the copy must hash the same, continue bit-identically under the
 * same commands, hand out the same ids and handles, and save to the same bytes.
 * Damaged bytes (every truncation, single-byte flips, fields rewritten with a
 * valid checksum) are refused with STEER_ECORRUPT or STEER_EVERSION, never a
 * crash. The test includes world_internal.h only to check that the busy world
 * really holds what it is meant to (retired slots, live query hints). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "rng.h"
#include "world.h"
#include "world_internal.h"

#define DT (1.0f / 30.0f)

/* ---- the documented checksum, written again from world_state.c's banner -- */

#define K1 0x9E3779B185EBCA87ULL
#define K2 0xC2B2AE3D27D4EB4FULL
#define K3 0x165667B19E3779F9ULL
#define K4 0x85EBCA77C2B2AE63ULL
#define K5 0x27D4EB2F165667C5ULL

static uint64_t rd64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static void wr64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void wr32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rot(uint64_t x, unsigned r) { return (x << r) | (x >> (64u - r)); }
static uint64_t rnd(uint64_t acc, uint64_t w) { return rot(acc + w * K2, 31) * K1; }

static uint64_t checksum(const uint8_t *p, size_t n) {
  size_t i = 0;
  uint64_t h = K5 + n;
  if (n >= 32) {
    uint64_t v[4] = {K1 + K2, K2, 0, 0 - K1};
    for (; i + 32 <= n; i += 32)
      for (int l = 0; l < 4; l++)
        v[l] = rnd(v[l], rd64(p + i + 8 * l));
    for (int l = 0; l < 4; l++)
      h = (h ^ rnd(0, v[l])) * K1 + K4;
  }
  for (; i + 8 <= n; i += 8)
    h = rot(h ^ rnd(0, rd64(p + i)), 27) * K1 + K4;
  for (; i < n; i++)
    h = rot(h ^ (p[i] * K5), 11) * K1;
  h ^= h >> 33;
  h *= K2;
  h ^= h >> 29;
  h *= K3;
  h ^= h >> 32;
  return h;
}

/* Rewrites the trailer after a test edits the bytes on purpose. */
static void reseal(uint8_t *buf, size_t len) { wr64(buf + len - 8, checksum(buf, len - 8)); }

/* ---- a busy world -------------------------------------------------------- */

#define MAX_SHARED 12

/* Drives one world with random commands; two drivers with equal state issue
 * the same commands to equal worlds. */
typedef struct driver {
  steer_world *w;
  steer_rng r;
  int shared[MAX_SHARED]; /* shared path handles not yet released */
  int nshared;
} driver;

static uint32_t pick(driver *dv, uint32_t n) { return n ? steer_rng_next(&dv->r) % n : 0; }
static float range(driver *dv, float lo, float hi) { return steer_rng_range(&dv->r, lo, hi); }

static steer_id random_agent(driver *dv) {
  steer_world_view v = steer_world_get_view(dv->w);
  return v.count ? v.id[pick(dv, v.count)] : 0;
}

static vec2 random_point(driver *dv) {
  const steer_world_config *c = steer_world_get_config(dv->w);
  return v2(range(dv, c->min.x, c->max.x), range(dv, c->min.y, c->max.y));
}

static const uint8_t kinds_kinematic[] = {STEER_BEHAVIOUR_NONE, STEER_BEHAVIOUR_SEEK, STEER_BEHAVIOUR_FLEE,
                                          STEER_BEHAVIOUR_ARRIVE, STEER_BEHAVIOUR_WANDER};
static const uint8_t kinds_heading[] = {STEER_BEHAVIOUR_NONE, STEER_BEHAVIOUR_SEEK, STEER_BEHAVIOUR_ARRIVE,
                                        STEER_BEHAVIOUR_WANDER};

static steer_behaviour random_behaviour(driver *dv, uint8_t model, steer_id self) {
  uint8_t kind;
  if (model == STEER_MODEL_KINEMATIC)
    kind = kinds_kinematic[pick(dv, sizeof(kinds_kinematic))];
  else if (model == STEER_MODEL_HEADING)
    kind = kinds_heading[pick(dv, sizeof(kinds_heading))];
  else
    kind = (uint8_t)pick(dv, STEER_BEHAVIOUR_FOLLOW_PATH); /* every kind but follow-path */
  steer_behaviour b = steer_default_behaviour((steer_behaviour_kind)kind);
  b.facing = (uint8_t)pick(dv, STEER_FACING_COUNT);
  b.combine = (uint8_t)pick(dv, STEER_COMBINE_COUNT);
  static const uint8_t neighbours[] = {1, 3, 8, 12, 32};
  b.max_neighbours = neighbours[pick(dv, sizeof(neighbours))];
  b.separation_weight = pick(dv, 3) ? range(dv, 0.5f, 3.0f) : 0.0f;
  b.params.separation_radius = range(dv, 1.0f, 4.0f);
  b.params.target_radius = range(dv, 0.3f, 2.0f);
  b.params.slow_radius = b.params.target_radius + range(dv, 0.0f, 6.0f);
  b.params.wander_rate = range(dv, 0.5f, 6.0f);
  steer_id a = random_agent(dv), a2 = random_agent(dv);
  int agent_ok = a != 0 && a != self;
  int wants_agent = kind == STEER_BEHAVIOUR_PURSUE || kind == STEER_BEHAVIOUR_EVADE ||
                    kind == STEER_BEHAVIOUR_VELOCITY_MATCH || kind == STEER_BEHAVIOUR_INTERPOSE;
  if (wants_agent || (agent_ok && pick(dv, 3) == 0 && kind != STEER_BEHAVIOUR_NONE &&
                      kind != STEER_BEHAVIOUR_WANDER && kind != STEER_BEHAVIOUR_LOOK_WHERE_GOING)) {
    b.target.kind = STEER_TARGET_AGENT;
    b.target.agent = a;
    b.target.agent2 = a2;
  } else if (kind != STEER_BEHAVIOUR_NONE && kind != STEER_BEHAVIOUR_WANDER &&
             kind != STEER_BEHAVIOUR_LOOK_WHERE_GOING) {
    b.target.kind = STEER_TARGET_POINT;
    b.target.point = random_point(dv);
    b.target.orientation = range(dv, -3.0f, 3.0f);
  }
  return b; /* may be refused (a bad interpose pair, self): the refusal is part of the run */
}

static void random_path(driver *dv, vec2 *pts, uint32_t *n, float *radius) {
  *n = 1 + pick(dv, 6);
  for (uint32_t i = 0; i < *n; i++)
    pts[i] = random_point(dv);
  *radius = range(dv, 0.5f, 3.0f);
}

static void spawn_random(driver *dv) {
  steer_agent_desc d = steer_default_agent_desc();
  d.model = (uint8_t)pick(dv, STEER_MODEL_COUNT);
  d.state.position = random_point(dv);
  d.state.orientation = range(dv, -3.1f, 3.1f);
  d.state.velocity = v2(range(dv, -2.0f, 2.0f), range(dv, -2.0f, 2.0f));
  d.limits.max_speed = range(dv, 1.0f, 8.0f);
  d.limits.radius = range(dv, 0.2f, 1.5f);
  d.behaviour = random_behaviour(dv, d.model, 0);
  steer_world_spawn(dv->w, &d, pick(dv, 5), NULL);
}

static void command(driver *dv) {
  steer_id a = random_agent(dv);
  steer_agent_info info;
  vec2 pts[8];
  uint32_t n;
  float radius;
  switch (pick(dv, 20)) {
  case 0:
  case 1:
  case 2:
  case 3:
    spawn_random(dv);
    break;
  case 4:
  case 5:
    steer_world_despawn(dv->w, a);
    break;
  case 6:
  case 7:
  case 8:
    if (steer_world_get(dv->w, a, &info) == STEER_OK) {
      steer_behaviour b = random_behaviour(dv, info.model, a);
      steer_world_set_behaviour(dv->w, a, &b);
    }
    break;
  case 9: {
    steer_limits l = steer_default_limits();
    l.max_speed = range(dv, 1.0f, 8.0f);
    l.radius = range(dv, 0.1f, 2.0f);
    steer_world_set_limits(dv->w, a, &l);
    break;
  }
  case 10:
    steer_world_stop(dv->w, a);
    break;
  case 11:
  case 12:
    if (dv->nshared > 0)
      steer_world_follow_path(dv->w, a, dv->shared[pick(dv, (uint32_t)dv->nshared)]);
    break;
  case 13:
  case 14:
    if (steer_world_get(dv->w, a, &info) == STEER_OK) {
      random_path(dv, pts, &n, &radius);
      steer_cornering corner = info.model == STEER_MODEL_HEADING
                                   ? (steer_cornering)pick(dv, STEER_CORNER_COUNT)
                                   : STEER_CORNER_NONE;
      steer_world_set_path(dv->w, a, pts, n, radius, (steer_path_mode)pick(dv, STEER_PATH_MODE_COUNT),
                           corner);
    }
    break;
  case 15:
    if (dv->nshared < MAX_SHARED) {
      random_path(dv, pts, &n, &radius);
      int h = steer_world_path_create(dv->w, pts, n, radius, (steer_path_mode)pick(dv, STEER_PATH_MODE_COUNT),
                                      (steer_cornering)pick(dv, STEER_CORNER_COUNT));
      if (h >= 0)
        dv->shared[dv->nshared++] = h;
    }
    break;
  case 16:
    if (dv->nshared > 0) {
      uint32_t k = pick(dv, (uint32_t)dv->nshared);
      steer_world_path_release(dv->w, dv->shared[k]);
      dv->shared[k] = dv->shared[--dv->nshared];
    }
    break;
  default:
    break;
  }
}

static void run(driver *dv, uint32_t ticks, uint32_t commands_per_tick) {
  for (uint32_t t = 0; t < ticks; t++) {
    for (uint32_t c = 0; c < commands_per_tick; c++)
      command(dv);
    steer_world_step(dv->w, DT);
  }
}

#define BUSY_CAPACITY 200

/* A world with every kind of state in it; see the checks in test_busy_world. */
static driver make_busy(void) {
  steer_world_config c = steer_default_world_config();
  c.max_agents = BUSY_CAPACITY;
  c.max_paths = 64;
  c.max_path_points = 8;
  c.max_events = 1; /* small: some are dropped */
  c.min = v2(-40.0f, -40.0f);
  c.max = v2(40.0f, 40.0f);
  c.cell_size = 4.0f;
  c.seed = 77;
  driver dv;
  memset(&dv, 0, sizeof(dv));
  dv.w = steer_world_create(&c);
  ck_assert_ptr_nonnull(dv.w);
  steer_rng_seed(&dv.r, 2024);
  for (int i = 0; i < 140; i++)
    spawn_random(&dv);
  /* Churn through the free slots until some have used up their generations. */
  steer_agent_desc d = steer_default_agent_desc();
  uint32_t free_slots = BUSY_CAPACITY - steer_world_count(dv.w);
  for (uint32_t i = 0; i < free_slots * (GEN_MAX - 1u) + free_slots / 2u; i++) {
    steer_id id;
    ck_assert_int_eq(steer_world_spawn(dv.w, &d, 9, &id), STEER_OK);
    ck_assert_int_eq(steer_world_despawn(dv.w, id), STEER_OK);
  }
  run(&dv, 400, 2);
  return dv;
}

static uint8_t *save(const steer_world *w, size_t *len) {
  size_t need = steer_world_state_size(w);
  uint8_t *buf = malloc(need);
  ck_assert_ptr_nonnull(buf);
  ck_assert_int_eq(steer_world_save(w, buf, need, len), STEER_OK);
  ck_assert_uint_eq(*len, need);
  return buf;
}

static steer_world *load_ok(const uint8_t *buf, size_t len) {
  int err = 12345;
  steer_world *w = steer_world_load(buf, len, &err);
  ck_assert_int_eq(err, STEER_OK);
  ck_assert_ptr_nonnull(w);
  return w;
}

static void assert_refused(const uint8_t *buf, size_t len) {
  int err = 0;
  steer_world *w = steer_world_load(buf, len, &err);
  if (w) {
    steer_world_destroy(w);
    ck_abort_msg("damaged state of %zu bytes was accepted", len);
  }
  ck_assert_msg(err == STEER_ECORRUPT || err == STEER_EVERSION, "error %d", err);
}

/* ---- tests --------------------------------------------------------------- */

/* The busy world holds what the other tests rely on. */
START_TEST(test_busy_world) {
  driver dv = make_busy();
  const steer_world *w = dv.w;
  uint32_t retired = 0, high_gen = 0, hints = 0, separating = 0, on_path = 0, cornering = 0;
  uint32_t models[STEER_MODEL_COUNT] = {0}, kinds[STEER_BEHAVIOUR_COUNT] = {0};
  uint32_t released_in_use = 0, shared_paths = 0, stale_targets = 0;
  for (uint32_t s = 0; s < BUSY_CAPACITY; s++) {
    retired += w->slot_dense[s] == NO_DENSE && w->slot_gen[s] == GEN_MAX;
    high_gen += w->slot_gen[s] > 1000;
  }
  for (uint32_t r = 0; r < w->free_count; r++)
    retired -= w->slot_gen[w->free_ring[(w->free_head + r) % BUSY_CAPACITY]] == GEN_MAX;
  for (uint32_t d = 0; d < w->count; d++) {
    hints += w->nhint[d] > 0.0f;
    separating += w->behaviour[d].separation_weight > 0.0f;
    models[w->model[d]]++;
    kinds[w->behaviour[d].kind]++;
    on_path += w->path[d] >= 0;
    cornering += w->path[d] >= 0 && w->paths[w->path[d]].cornering != STEER_CORNER_NONE;
    stale_targets += w->behaviour[d].target.kind == STEER_TARGET_AGENT &&
                     !steer_world_alive(w, w->behaviour[d].target.agent);
  }
  for (uint32_t h = 0; h < w->cfg.max_paths; h++) {
    released_in_use += w->paths[h].in_use && w->paths[h].released;
    shared_paths += w->paths[h].in_use && w->paths[h].users > 1;
  }
  ck_assert_uint_gt(retired, 0);
  ck_assert_uint_gt(high_gen, 0);
  ck_assert_uint_gt(hints, 0);
  ck_assert_uint_gt(separating, 0);
  ck_assert_uint_gt(on_path, 0);
  ck_assert_uint_gt(cornering, 0);
  ck_assert_uint_gt(released_in_use, 0);
  ck_assert_uint_gt(shared_paths, 0);
  ck_assert_uint_gt(stale_targets, 0);
  ck_assert_uint_gt(w->path_free_count, 0);
  for (int m = 0; m < STEER_MODEL_COUNT; m++)
    ck_assert_uint_gt(models[m], 0);
  for (int k = 0; k < STEER_BEHAVIOUR_COUNT; k++)
    ck_assert_msg(kinds[k] > 0, "no agent runs behaviour %d", k);
  ck_assert_uint_gt(steer_world_events_dropped(w), 0);
  steer_world_destroy(dv.w);
}
END_TEST

/* Saved at tick T and loaded: the same hash, then 5000 ticks under the same
 * commands with the same hash after every tick. */
START_TEST(test_round_trip_continues) {
  driver a = make_busy();
  size_t len;
  uint8_t *buf = save(a.w, &len);
  driver b = a;
  b.w = load_ok(buf, len);
  ck_assert_uint_eq(steer_world_hash(b.w), steer_world_hash(a.w));
  ck_assert_uint_eq(steer_world_tick(b.w), steer_world_tick(a.w));
  ck_assert_uint_eq(steer_world_count(b.w), steer_world_count(a.w));
  ck_assert_uint_eq(steer_world_events_dropped(b.w), steer_world_events_dropped(a.w));
  ck_assert_uint_eq(steer_world_path_count(b.w), steer_world_path_count(a.w));
  ck_assert_mem_eq(steer_world_get_config(b.w), steer_world_get_config(a.w), sizeof(steer_world_config));
  /* Everything a client can see of every agent. */
  steer_world_view v = steer_world_get_view(a.w);
  for (uint32_t i = 0; i < v.count; i++) {
    steer_agent_info ia, ib;
    ck_assert_int_eq(steer_world_get(a.w, v.id[i], &ia), STEER_OK);
    ck_assert_int_eq(steer_world_get(b.w, v.id[i], &ib), STEER_OK);
    ck_assert_mem_eq(&ia, &ib, sizeof(ia));
  }
  for (uint32_t t = 1; t <= 5000; t++) {
    command(&a);
    command(&b);
    steer_world_step(a.w, DT);
    steer_world_step(b.w, DT);
    ck_assert_uint_eq(steer_world_hash(a.w), steer_world_hash(b.w));
    if (t % 500 == 0) {
      uint32_t na, nb;
      const steer_event *ea = steer_world_events(a.w, &na);
      const steer_event *eb = steer_world_events(b.w, &nb);
      ck_assert_uint_eq(na, nb);
      ck_assert_mem_eq(ea, eb, na * sizeof(*ea));
      ck_assert_uint_eq(steer_world_events_dropped(a.w), steer_world_events_dropped(b.w));
      steer_id qa[64], qb[64];
      uint32_t ka = steer_world_query_radius(a.w, v2(0.0f, 0.0f), 20.0f, qa, 64);
      uint32_t kb = steer_world_query_radius(b.w, v2(0.0f, 0.0f), 20.0f, qb, 64);
      ck_assert_uint_eq(ka, kb);
      ck_assert_mem_eq(qa, qb, ka * sizeof(*qa));
    }
  }
  ck_assert_uint_gt(steer_world_count(a.w), 0);
  free(buf);
  steer_world_destroy(a.w);
  steer_world_destroy(b.w);
}
END_TEST

/* Saving a loaded world gives the same bytes: nothing is lost or made up. */
START_TEST(test_resave_identical) {
  driver a = make_busy();
  for (int round = 0; round < 8; round++) {
    size_t len1, len2;
    uint8_t *b1 = save(a.w, &len1);
    steer_world *w = load_ok(b1, len1);
    uint8_t *b2 = save(w, &len2);
    ck_assert_uint_eq(len1, len2);
    ck_assert_mem_eq(b1, b2, len1);
    steer_world_destroy(w);
    free(b1);
    free(b2);
    run(&a, 37, 3);
  }
  steer_world_destroy(a.w);
}
END_TEST

/* A world of `n` avoiders arriving at one point, with the given arrival,
 * stepped 20 times. */
static steer_world *rally_world(uint32_t n, uint8_t arrival) {
  steer_world_config cfg = steer_default_world_config();
  cfg.max_agents = n;
  steer_world *w = steer_world_create(&cfg);
  ck_assert_ptr_nonnull(w);
  for (uint32_t i = 0; i < n; i++) {
    steer_agent_desc d = steer_default_agent_desc();
    d.model = STEER_MODEL_DYNAMIC;
    d.state.position = v2(3.0f * cosf((float)i), 3.0f * sinf((float)i));
    d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_ARRIVE);
    d.behaviour.target.kind = STEER_TARGET_POINT;
    d.behaviour.avoid_weight = 1.0f;
    d.behaviour.arrival = arrival;
    ck_assert_int_eq(steer_world_spawn(w, &d, 0, NULL), STEER_OK);
  }
  for (int t = 0; t < 20; t++)
    steer_world_step(w, DT);
  return w;
}

/* A file of version 2 (no arrival byte in the avoidance records) loads, its
 * agents arriving at their point, and saves as the current version: the
 * bytes of the same world saved now. The version 2 file is the current one
 * without the arrival bytes, found as the bytes where a world differs from
 * the same world that settles. */
START_TEST(test_version_2_loads) {
  enum { N = 5 };
  steer_world *a = rally_world(N, STEER_ARRIVAL_POINT), *b = rally_world(N, STEER_ARRIVAL_SETTLE);
  size_t len, len_b;
  uint8_t *cur = save(a, &len), *other = save(b, &len_b);
  ck_assert_uint_eq(len, len_b);
  uint8_t *old = malloc(len);
  size_t n = 0, removed = 0;
  for (size_t i = 0; i < len - 8; i++) {
    if (i >= 24 && cur[i] != other[i]) {
      ck_assert_uint_eq(cur[i], STEER_ARRIVAL_POINT);
      ck_assert_uint_eq(other[i], STEER_ARRIVAL_SETTLE);
      removed++;
      continue;
    }
    old[n++] = cur[i];
  }
  ck_assert_uint_eq(removed, N); /* one byte an agent: the worlds differ in nothing else yet */
  n += 8;
  wr32(old + 4, 2);
  wr64(old + 16, n);
  reseal(old, n);
  steer_world *w = load_ok(old, n);
  ck_assert_uint_eq(steer_world_hash(w), steer_world_hash(a));
  size_t len_w;
  uint8_t *again = save(w, &len_w);
  ck_assert_uint_eq(len_w, len);
  ck_assert_mem_eq(again, cur, len);
  free(again);
  free(old);
  free(cur);
  free(other);
  steer_world_destroy(w);
  steer_world_destroy(a);
  steer_world_destroy(b);
}
END_TEST

/* After a load, spawns get the ids the original would have given, through
 * reused, high-generation and retired slots; path handles too. */
START_TEST(test_ids_after_load) {
  driver a = make_busy();
  size_t len;
  uint8_t *buf = save(a.w, &len);
  steer_world *b = load_ok(buf, len);
  steer_agent_desc d = steer_default_agent_desc();
  for (int round = 0; round < 3000; round++) {
    steer_id ia = 0, ib = 0;
    int ra = steer_world_spawn(a.w, &d, 1, &ia);
    int rb = steer_world_spawn(b, &d, 1, &ib);
    ck_assert_int_eq(ra, rb);
    ck_assert_uint_eq(ia, ib);
    if (ra == STEER_OK && round % 3 != 0) {
      ck_assert_int_eq(steer_world_despawn(a.w, ia), STEER_OK);
      ck_assert_int_eq(steer_world_despawn(b, ib), STEER_OK);
    }
    vec2 p = v2(1.0f, 2.0f);
    int ha = steer_world_path_create(a.w, &p, 1, 1.0f, STEER_PATH_ONCE, STEER_CORNER_NONE);
    int hb = steer_world_path_create(b, &p, 1, 1.0f, STEER_PATH_ONCE, STEER_CORNER_NONE);
    ck_assert_int_eq(ha, hb);
    if (ha >= 0 && round % 2 == 0) {
      steer_world_path_release(a.w, ha);
      steer_world_path_release(b, hb);
    }
  }
  ck_assert_uint_eq(steer_world_hash(a.w), steer_world_hash(b));
  free(buf);
  steer_world_destroy(a.w);
  steer_world_destroy(b);
}
END_TEST

/* Loading at many points, with and without separation's hints warm, gives a
 * world that stays equal to the original. */
START_TEST(test_load_anywhere) {
  driver a = make_busy();
  for (int k = 0; k < 12; k++) {
    size_t len;
    uint8_t *buf = save(a.w, &len);
    driver b = a;
    b.w = load_ok(buf, len);
    driver a2 = a;
    steer_world *ref = load_ok(buf, len);
    a2.w = ref; /* a second copy runs alongside so the original can keep going */
    run(&a2, 150, 1);
    run(&b, 150, 1);
    ck_assert_uint_eq(steer_world_hash(a2.w), steer_world_hash(b.w));
    steer_world_destroy(b.w);
    steer_world_destroy(ref);
    free(buf);
    run(&a, 1 + (uint32_t)k * 13, 2);
  }
  steer_world_destroy(a.w);
}
END_TEST

/* An empty world and a fresh one round-trip too. */
START_TEST(test_empty_world) {
  steer_world_config c = steer_default_world_config();
  c.max_agents = 5;
  steer_world *w = steer_world_create(&c);
  size_t len;
  uint8_t *buf = save(w, &len);
  steer_world *b = load_ok(buf, len);
  ck_assert_uint_eq(steer_world_hash(w), steer_world_hash(b));
  ck_assert_uint_eq(steer_world_get_config(b)->max_paths, 5);
  steer_world_destroy(b);
  steer_world_destroy(w);
  free(buf);
}
END_TEST

START_TEST(test_save_buffer_too_small) {
  driver a = make_busy();
  size_t need = steer_world_state_size(a.w), len = 0;
  uint8_t *buf = malloc(need);
  ck_assert_int_eq(steer_world_save(a.w, buf, need - 1, &len), STEER_EINVAL);
  ck_assert_uint_eq(len, need);
  ck_assert_int_eq(steer_world_save(a.w, NULL, 0, &len), STEER_EINVAL);
  ck_assert_uint_eq(len, need);
  ck_assert_int_eq(steer_world_save(a.w, buf, 0, NULL), STEER_EINVAL);
  ck_assert_int_eq(steer_world_save(a.w, buf, need, NULL), STEER_OK);
  int err = 0;
  ck_assert_ptr_null(steer_world_load(NULL, 0, &err));
  ck_assert_int_eq(err, STEER_ECORRUPT);
  ck_assert_ptr_null(steer_world_load(buf, 0, NULL)); /* err may be NULL */
  ck_assert_str_eq(steer_strerror(STEER_ECORRUPT), "state data corrupt or truncated");
  ck_assert_str_eq(steer_strerror(STEER_EVERSION), "state format version not supported");
  free(buf);
  steer_world_destroy(a.w);
}
END_TEST

/* A smaller busy world, so that every truncation and every byte can be tried. */
static driver make_small(void) {
  steer_world_config c = steer_default_world_config();
  c.max_agents = 48;
  c.max_paths = 16;
  c.max_path_points = 6;
  c.min = v2(-20.0f, -20.0f);
  c.max = v2(20.0f, 20.0f);
  c.cell_size = 4.0f;
  driver dv;
  memset(&dv, 0, sizeof(dv));
  dv.w = steer_world_create(&c);
  ck_assert_ptr_nonnull(dv.w);
  steer_rng_seed(&dv.r, 99);
  for (int i = 0; i < 30; i++)
    spawn_random(&dv);
  run(&dv, 200, 2);
  ck_assert_uint_gt(steer_world_count(dv.w), 10);
  ck_assert_uint_gt(steer_world_path_count(dv.w), 2);
  return dv;
}

START_TEST(test_every_truncation) {
  driver a = make_small();
  size_t len;
  uint8_t *buf = save(a.w, &len);
  for (size_t n = 0; n < len; n++) {
    /* A copy of exactly n bytes, so ASan sees any read past it. */
    uint8_t *t = malloc(n ? n : 1);
    memcpy(t, buf, n);
    assert_refused(t, n);
    free(t);
  }
  /* Extra bytes after the end are refused too. */
  uint8_t *longer = calloc(1, len + 1);
  memcpy(longer, buf, len);
  assert_refused(longer, len + 1);
  steer_world_destroy(load_ok(buf, len));
  free(longer);
  free(buf);
  steer_world_destroy(a.w);
}
END_TEST

START_TEST(test_every_byte_flipped) {
  driver a = make_small();
  size_t len;
  uint8_t *buf = save(a.w, &len);
  static const uint8_t masks[] = {0x01, 0x80, 0xff, 0x10};
  for (size_t i = 0; i < len; i++) {
    for (size_t m = 0; m < sizeof(masks); m++) {
      buf[i] ^= masks[m];
      assert_refused(buf, len);
      buf[i] ^= masks[m];
    }
  }
  steer_world_destroy(load_ok(buf, len));
  /* Flips across the big world's whole length, at a stride. */
  size_t blen;
  driver big = make_busy();
  uint8_t *bbuf = save(big.w, &blen);
  for (size_t i = 0; i < blen; i += 7) {
    bbuf[i] ^= (uint8_t)(1u << (i % 8));
    assert_refused(bbuf, blen);
    bbuf[i] ^= (uint8_t)(1u << (i % 8));
  }
  for (size_t n = 0; n < blen; n += 97)
    assert_refused(bbuf, n);
  free(bbuf);
  free(buf);
  steer_world_destroy(big.w);
  steer_world_destroy(a.w);
}
END_TEST

/* Fields rewritten with a valid checksum: the checks behind it catch them. */
START_TEST(test_validated_fields) {
  driver a = make_small();
  size_t len;
  uint8_t *orig = save(a.w, &len);
  uint8_t *buf = malloc(len);
  const uint32_t cap = 48, count = steer_world_count(a.w);
  const size_t agents = 96, slots = agents + (size_t)count * 173u, table = slots + cap * 2u;
  const size_t ring = table + cap * 4u;
  const uint32_t free_n = rd32(orig + ring);
  const size_t paths = ring + 4u + free_n * 4u;
  ck_assert_uint_gt(free_n, 2);
  /* Find an agent on a path (its record's path field is at +155). */
  uint32_t on_path = UINT32_MAX;
  for (uint32_t d = 0; d < count && on_path == UINT32_MAX; d++)
    if ((int32_t)rd32(orig + agents + d * 173u + 155u) >= 0)
      on_path = d;
  ck_assert_uint_ne(on_path, UINT32_MAX);
  float nan = NAN, inf = INFINITY, far = 1000.0f;
  uint32_t u_nan, u_inf, u_far;
  memcpy(&u_nan, &nan, 4);
  memcpy(&u_inf, &inf, 4);
  memcpy(&u_far, &far, 4);
  struct {
    const char *what;
    size_t off;
    uint32_t value;
    int bytes; /* 1 or 4 */
  } cases[] = {
      {"reserved", 12, 1, 4},
      {"byte order", 8, 0x04030201u, 4},
      {"total size", 16, (uint32_t)len + 8u, 4},
      {"max_agents 0", 24, 0, 4},
      {"max_agents too big", 24, STEER_MAX_CAPACITY + 1u, 4},
      {"max_agents beyond the data", 24, 1000000, 4},
      {"max_paths 0", 28, 0, 4},
      {"max_paths beyond the data", 28, 100000000, 4},
      {"max_path_points 0", 32, 0, 4},
      {"bounds NaN", 40, u_nan, 4},
      {"cell size inf", 56, u_inf, 4},
      {"count above capacity", 92, cap + 1u, 4},
      {"count one more", 92, count + 1u, 4},
      {"count one less", 92, count - 1u, 4},
      {"id of another slot", agents, 5u, 4},
      {"id generation", agents + 3, 0x7f, 1},
      {"model", agents + 8, STEER_MODEL_COUNT, 1},
      {"arrived", agents + 9, 2, 1},
      {"position NaN", agents + 10, u_nan, 4},
      {"position outside", agents + 14, u_far, 4},
      {"velocity inf", agents + 18, u_inf, 4},
      {"wander NaN", agents + 34, u_nan, 4},
      {"max_speed NaN", agents + 46, u_nan, 4},
      {"behaviour kind", agents + 66, STEER_BEHAVIOUR_COUNT, 1},
      {"facing", agents + 67, STEER_FACING_COUNT, 1},
      {"combine", agents + 68, STEER_COMBINE_COUNT, 1},
      {"separation NaN", agents + 70, u_nan, 4},
      {"target kind", agents + 74, STEER_TARGET_KIND_COUNT, 1},
      {"params NaN", agents + 95, u_nan, 4},
      {"path out of range", agents + on_path * 173u + 155u, 16, 4},
      {"path -2", agents + on_path * 173u + 155u, (uint32_t)-2, 4},
      {"path dropped", agents + on_path * 173u + 155u, (uint32_t)-1, 4},
      {"cursor node", agents + on_path * 173u + 159u, 1000, 4},
      {"cursor dir", agents + 163, 0, 1},
      {"cursor finished", agents + 164, 2, 1},
      {"turn rate NaN", agents + 169, u_nan, 4},
      {"generation 0", slots + 2, 0, 1},
      {"slot table", table, 47, 4},
      {"slot table free", table + 4u * (rd32(orig + agents) & STEER_ID_INDEX_MASK), UINT32_MAX, 4},
      {"ring count", ring, free_n + 1u, 4},
      {"ring slot range", ring + 4, cap, 4},
      {"ring duplicate", ring + 8, rd32(orig + ring + 4), 4},
      {"ring live slot", ring + 4, rd32(orig + agents) & STEER_ID_INDEX_MASK, 4},
      {"paths live count", paths, 17, 4},
      {"path handle range", paths + 4, 16, 4},
      {"path points 0", paths + 8, 0, 4},
      {"path points too many", paths + 8, 7, 4},
      {"path radius 0", paths + 12, 0, 4},
      {"path mode", paths + 16, STEER_PATH_MODE_COUNT, 1},
      {"path cornering", paths + 17, STEER_CORNER_COUNT, 1},
      {"path released", paths + 18, 2, 1},
      {"path users", paths + 19, 1000, 4},
      {"path point outside", paths + 23, u_far, 4},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    memcpy(buf, orig, len);
    if (cases[i].bytes == 1)
      buf[cases[i].off] = (uint8_t)cases[i].value;
    else
      wr32(buf + cases[i].off, cases[i].value);
    ck_assert_msg(memcmp(buf, orig, len) != 0, "case %s changes nothing", cases[i].what);
    reseal(buf, len);
    int err = 0;
    steer_world *w = steer_world_load(buf, len, &err);
    ck_assert_msg(w == NULL && err == STEER_ECORRUPT, "case %s: %p err %d", cases[i].what, (void *)w, err);
  }
  /* The checksum written again from the banner matches the real one. */
  memcpy(buf, orig, len);
  reseal(buf, len);
  ck_assert_mem_eq(buf, orig, len);
  /* An intact state of another version. */
  wr32(buf + 4, STEER_STATE_VERSION + 1);
  reseal(buf, len);
  int err = 0;
  ck_assert_ptr_null(steer_world_load(buf, len, &err));
  ck_assert_int_eq(err, STEER_EVERSION);
  /* Not a state at all. */
  memcpy(buf, orig, len);
  buf[0] = 'X';
  reseal(buf, len);
  ck_assert_ptr_null(steer_world_load(buf, len, &err));
  ck_assert_int_eq(err, STEER_ECORRUPT);
  free(buf);
  free(orig);
  steer_world_destroy(a.w);
}
END_TEST

/* Whether every agent's motion state is finite and inside the bounds. */
static int world_finite(const steer_world *w) {
  steer_world_view v = steer_world_get_view(w);
  const steer_world_config *c = steer_world_get_config(w);
  for (uint32_t i = 0; i < v.count; i++)
    if (!(v.px[i] >= c->min.x && v.px[i] <= c->max.x && v.py[i] >= c->min.y && v.py[i] <= c->max.y) ||
        !isfinite(v.vx[i]) || !isfinite(v.vy[i]) || !isfinite(v.theta[i]) || !isfinite(v.omega[i]))
      return 0;
  return 1;
}

/* Random bytes with a valid checksum: refused, or a world that works. */
START_TEST(test_random_edits) {
  driver a = make_small();
  size_t len;
  uint8_t *orig = save(a.w, &len);
  uint8_t *buf = malloc(len);
  steer_rng r;
  steer_rng_seed(&r, 5);
  uint32_t accepted = 0, went_nan = 0;
  for (int i = 0; i < 20000; i++) {
    memcpy(buf, orig, len);
    uint32_t edits = 1 + steer_rng_next(&r) % 3;
    for (uint32_t e = 0; e < edits; e++)
      buf[steer_rng_next(&r) % (len - 8)] = (uint8_t)steer_rng_next(&r);
    reseal(buf, len);
    int err = 0;
    steer_world *w = steer_world_load(buf, len, &err);
    if (!w) {
      ck_assert_msg(err == STEER_ECORRUPT || err == STEER_EVERSION || err == STEER_ENOMEM, "err %d", err);
      continue;
    }
    accepted++;
    for (int t = 0; t < 20; t++)
      steer_world_step(w, DT);
    size_t n = steer_world_state_size(w), got;
    uint8_t *again = malloc(n);
    ck_assert_int_eq(steer_world_save(w, again, n, &got), STEER_OK);
    if (world_finite(w)) {
      steer_world *w2 = load_ok(again, got);
      ck_assert_uint_eq(steer_world_hash(w2), steer_world_hash(w));
      steer_world_destroy(w2);
    } else {
      /* Extreme parameters (a time to target of 1e-38 s, say, which the
       * server's validation refuses) can drive the core to NaN; such a state
       * is refused rather than restored. */
      assert_refused(again, got);
      went_nan++;
    }
    free(again);
    steer_world_destroy(w);
  }
  ck_assert_uint_gt(accepted, 1000);
  ck_assert_uint_lt(went_nan, accepted / 10);
  free(buf);
  free(orig);
  steer_world_destroy(a.w);
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static Suite *world_state_suite(void) {
  Suite *s = suite_create("world_state");
  TCase *tc = check_tcase(s, "round trip", 120);
  tcase_add_test(tc, test_busy_world);
  tcase_add_test(tc, test_round_trip_continues);
  tcase_add_test(tc, test_resave_identical);
  tcase_add_test(tc, test_version_2_loads);
  tcase_add_test(tc, test_ids_after_load);
  tcase_add_test(tc, test_load_anywhere);
  tcase_add_test(tc, test_empty_world);
  tcase_add_test(tc, test_save_buffer_too_small);
  tc = check_tcase(s, "damage", 120);
  tcase_add_test(tc, test_every_truncation);
  tcase_add_test(tc, test_every_byte_flipped);
  tcase_add_test(tc, test_validated_fields);
  tcase_add_test(tc, test_random_edits);
  return s;
}

int main(void) { return check_run(world_state_suite()); }

/* test_world.c: the agent store, the path pool, the tick and its guarantees.
 *
 * Each test drives a world through its public API (world.h) and checks what a
 * client would see: ids, refusals that leave no trace, the order of a tick,
 * events, the path pool, separation, the world's walls, determinism, no heap
 * traffic inside a step, and radius queries. */
#include <check.h>
#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "rng.h"
#include "world.h"

#if defined(__SANITIZE_ADDRESS__)
#define TEST_MALLOC_REPLACED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define TEST_MALLOC_REPLACED 1
#endif
#endif
#ifndef TEST_MALLOC_REPLACED
#define TEST_MALLOC_REPLACED 0
#endif

#define DT (1.0f / 30.0f)

/* ---- helpers ------------------------------------------------------------- */

static steer_world *make_world(uint32_t max_agents, uint64_t seed) {
  steer_world_config c = steer_default_world_config();
  c.max_agents = max_agents;
  c.min = v2(-60.0f, -60.0f);
  c.max = v2(60.0f, 60.0f);
  c.cell_size = 4.0f;
  c.seed = seed;
  steer_world *w = steer_world_create(&c);
  ck_assert_ptr_nonnull(w);
  return w;
}

static steer_agent_desc desc_at(steer_model model, float x, float y, float theta) {
  steer_agent_desc d = steer_default_agent_desc();
  d.model = (uint8_t)model;
  d.state.position = v2(x, y);
  d.state.orientation = theta;
  return d;
}

static steer_behaviour beh_point(steer_behaviour_kind kind, float x, float y) {
  steer_behaviour b = steer_default_behaviour(kind);
  b.target.kind = STEER_TARGET_POINT;
  b.target.point = v2(x, y);
  return b;
}

static steer_behaviour beh_agent(steer_behaviour_kind kind, steer_id a, steer_id b2) {
  steer_behaviour b = steer_default_behaviour(kind);
  b.target.kind = STEER_TARGET_AGENT;
  b.target.agent = a;
  b.target.agent2 = b2;
  return b;
}

static steer_id spawn(steer_world *w, const steer_agent_desc *d, uint32_t owner) {
  steer_id id = 0;
  int rc = steer_world_spawn(w, d, owner, &id);
  ck_assert_msg(rc == STEER_OK, "spawn: %s", steer_strerror(rc));
  ck_assert_uint_ne(id, 0);
  return id;
}

static steer_id spawn_b(steer_world *w, steer_model model, float x, float y, float theta,
                        const steer_behaviour *b) {
  steer_agent_desc d = desc_at(model, x, y, theta);
  if (b)
    d.behaviour = *b;
  return spawn(w, &d, 0);
}

static steer_agent_info info_of(const steer_world *w, steer_id id) {
  steer_agent_info i;
  ck_assert_int_eq(steer_world_get(w, id, &i), STEER_OK);
  return i;
}

static float dist_of(const steer_world *w, steer_id a, steer_id b) {
  steer_agent_info x = info_of(w, a), y = info_of(w, b);
  return v2_len(v2_sub(x.state.position, y.state.position));
}

static void run(steer_world *w, int ticks) {
  for (int i = 0; i < ticks; i++)
    steer_world_step(w, DT);
}

static void assert_state_finite_inside(const steer_world *w) {
  const steer_world_config *c = steer_world_get_config(w);
  steer_world_view v = steer_world_get_view(w);
  for (uint32_t i = 0; i < v.count; i++) {
    ck_assert_msg(isfinite(v.px[i]) && isfinite(v.py[i]) && isfinite(v.vx[i]) && isfinite(v.vy[i]) &&
                      isfinite(v.theta[i]) && isfinite(v.omega[i]),
                  "agent %u has a non-finite state", v.id[i]);
    ck_assert(v.px[i] >= c->min.x && v.px[i] <= c->max.x && v.py[i] >= c->min.y && v.py[i] <= c->max.y);
    ck_assert(v.theta[i] > -STEER_PI && v.theta[i] <= STEER_PI);
  }
}

/* ---- ids ----------------------------------------------------------------- */

static int id_cmp(const void *a, const void *b) {
  steer_id x = *(const steer_id *)a, y = *(const steer_id *)b;
  return x < y ? -1 : (x > y);
}

/* A tiny world cycled until every slot retires: no id is ever issued twice, a
 * despawned id stays dead for every call, and the world ends up refusing
 * spawns instead of reusing an id. */
START_TEST(test_ids_never_reused) {
  const uint32_t cap = 4;
  const uint32_t gens = (1u << (32u - STEER_ID_INDEX_BITS)) - 1u; /* nonzero generations */
  steer_world *w = make_world(cap, 1);
  steer_id *issued = malloc(sizeof(steer_id) * cap * (gens + 8));
  ck_assert_ptr_nonnull(issued);
  uint32_t n_issued = 0;
  steer_id live[4];
  uint32_t n_live = 0;
  steer_rng r;
  steer_rng_seed(&r, 5);
  steer_agent_desc d = desc_at(STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f);
  steer_behaviour seek = beh_point(STEER_BEHAVIOUR_SEEK, 1.0f, 1.0f);
  for (;;) {
    steer_id id = 0;
    int rc = steer_world_spawn(w, &d, 0, &id);
    if (rc == STEER_OK) {
      ck_assert_uint_ne(id, 0);
      ck_assert_uint_lt(n_issued, cap * (gens + 8));
      issued[n_issued++] = id;
      live[n_live++] = id;
      ck_assert_uint_le(n_live, cap);
      continue;
    }
    ck_assert_int_eq(rc, STEER_EFULL);
    ck_assert_uint_eq(steer_world_count(w), n_live);
    if (n_live == 0)
      break; /* every slot retired */
    /* Despawn one or more live agents, chosen at random. */
    uint32_t k = 1 + steer_rng_next(&r) % n_live;
    for (uint32_t j = 0; j < k; j++) {
      uint32_t pick = steer_rng_next(&r) % n_live;
      steer_id dead = live[pick];
      live[pick] = live[--n_live];
      ck_assert_int_eq(steer_world_despawn(w, dead), STEER_OK);
      steer_agent_info info;
      ck_assert_int_eq(steer_world_get(w, dead, &info), STEER_ENOENT);
      ck_assert_int_eq(steer_world_despawn(w, dead), STEER_ENOENT);
      ck_assert_int_eq(steer_world_set_behaviour(w, dead, &seek), STEER_ENOENT);
      ck_assert_int_eq(steer_world_stop(w, dead), STEER_ENOENT);
      ck_assert(!steer_world_alive(w, dead));
    }
    for (uint32_t j = 0; j < n_live; j++)
      ck_assert(steer_world_alive(w, live[j]));
  }
  /* Each slot issued each nonzero generation exactly once. */
  ck_assert_uint_eq(n_issued, cap * gens);
  qsort(issued, n_issued, sizeof(steer_id), id_cmp);
  for (uint32_t i = 1; i < n_issued; i++)
    ck_assert_msg(issued[i] != issued[i - 1], "id %u issued twice", issued[i]);
  /* A retired world stays usable for everything else. */
  ck_assert_uint_eq(steer_world_count(w), 0);
  steer_world_step(w, DT);
  free(issued);
  steer_world_destroy(w);
}
END_TEST

START_TEST(test_ids_unknown) {
  steer_world *w = make_world(8, 1);
  steer_agent_desc d = desc_at(STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f);
  steer_id a = spawn(w, &d, 0);
  steer_agent_info info;
  steer_behaviour b = steer_default_behaviour(STEER_BEHAVIOUR_NONE);
  steer_limits l = steer_default_limits();
  const steer_id bogus[] = {0, a ^ (1u << STEER_ID_INDEX_BITS), a + 1, 7, STEER_ID_INDEX_MASK, UINT32_MAX};
  for (size_t i = 0; i < sizeof(bogus) / sizeof(bogus[0]); i++) {
    ck_assert_int_eq(steer_world_get(w, bogus[i], &info), STEER_ENOENT);
    ck_assert_int_eq(steer_world_despawn(w, bogus[i]), STEER_ENOENT);
    ck_assert_int_eq(steer_world_set_behaviour(w, bogus[i], &b), STEER_ENOENT);
    ck_assert_int_eq(steer_world_set_limits(w, bogus[i], &l), STEER_ENOENT);
    ck_assert_int_eq(steer_world_stop(w, bogus[i]), STEER_ENOENT);
    ck_assert(!steer_world_alive(w, bogus[i]));
  }
  ck_assert_uint_eq(steer_world_count(w), 1);
  steer_world_destroy(w);
}
END_TEST

START_TEST(test_capacity) {
  steer_world *w = make_world(5, 1);
  ck_assert_uint_eq(steer_world_capacity(w), 5);
  steer_id ids[5];
  for (int i = 0; i < 5; i++) {
    steer_agent_desc d = desc_at(STEER_MODEL_DYNAMIC, (float)i, 0.0f, 0.0f);
    ids[i] = spawn(w, &d, (uint32_t)i);
  }
  uint64_t h = steer_world_hash(w);
  steer_agent_desc d = desc_at(STEER_MODEL_DYNAMIC, 9.0f, 0.0f, 0.0f);
  steer_id extra = 12345;
  ck_assert_int_eq(steer_world_spawn(w, &d, 0, &extra), STEER_EFULL);
  ck_assert_uint_eq(extra, 12345); /* untouched on failure */
  ck_assert_uint_eq(steer_world_count(w), 5);
  ck_assert_uint_eq(steer_world_hash(w), h);
  /* A despawn makes room for exactly one more. */
  ck_assert_int_eq(steer_world_despawn(w, ids[2]), STEER_OK);
  steer_id again = spawn(w, &d, 0);
  for (int i = 0; i < 5; i++)
    ck_assert_uint_ne(again, ids[i]);
  ck_assert_int_eq(steer_world_spawn(w, &d, 0, NULL), STEER_EFULL);
  steer_world_destroy(w);
}
END_TEST

/* Despawning from the middle of the dense list moves the last agent into the
 * hole: every other agent's full state survives, and the view lists exactly
 * the live agents. */
START_TEST(test_despawn_swap_remove) {
  steer_world *w = make_world(16, 3);
  enum { N = 12 };
  steer_id ids[N];
  int path = steer_world_path_create(w, (const vec2[]){{0, 0}, {10, 0}, {10, 10}}, 3, 1.0f, STEER_PATH_LOOP,
                                     STEER_CORNER_NONE);
  ck_assert_int_ge(path, 0);
  for (int i = 0; i < N; i++) {
    steer_agent_desc d = desc_at((steer_model)(i % 3), (float)(i * 3 - 20), (float)(i % 5), 0.1f * (float)i);
    d.state.velocity = v2(0.5f, -0.25f * (float)(i % 3));
    d.limits.max_speed = 2.0f + 0.25f * (float)i;
    d.limits.radius = 0.3f + 0.01f * (float)i;
    d.behaviour = beh_point(i % 2 ? STEER_BEHAVIOUR_SEEK : STEER_BEHAVIOUR_ARRIVE, (float)i, 5.0f);
    d.behaviour.params.slow_radius = 3.0f + (float)i;
    d.behaviour.separation_weight = (i % 4 == 0) ? 1.0f : 0.0f;
    ids[i] = spawn(w, &d, 100u + (uint32_t)i);
  }
  ck_assert_int_eq(steer_world_follow_path(w, ids[4], path), STEER_OK);
  ck_assert_int_eq(steer_world_follow_path(w, ids[11], path), STEER_OK);
  steer_behaviour pursue = beh_agent(STEER_BEHAVIOUR_PURSUE, ids[11], 0);
  ck_assert_int_eq(steer_world_set_behaviour(w, ids[1], &pursue), STEER_OK);
  run(w, 20);

  steer_agent_info before[N];
  for (int i = 0; i < N; i++)
    before[i] = info_of(w, ids[i]);
  int dead[N] = {0};
  const int order[] = {5, 0, 11, 6, 10};
  for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
    ck_assert_int_eq(steer_world_despawn(w, ids[order[k]]), STEER_OK);
    dead[order[k]] = 1;
    for (int i = 0; i < N; i++) {
      steer_agent_info now;
      if (dead[i]) {
        ck_assert_int_eq(steer_world_get(w, ids[i], &now), STEER_ENOENT);
        continue;
      }
      now = info_of(w, ids[i]);
      ck_assert_msg(memcmp(&now, &before[i], sizeof(now)) == 0, "agent %d changed after despawning %d", i,
                    order[k]);
    }
    steer_world_view v = steer_world_get_view(w);
    ck_assert_uint_eq(v.count, steer_world_count(w));
    ck_assert_uint_eq(v.count, (uint32_t)(N - (int)k - 1));
    int listed[N] = {0};
    for (uint32_t j = 0; j < v.count; j++) {
      int found = -1;
      for (int i = 0; i < N; i++)
        if (ids[i] == v.id[j])
          found = i;
      ck_assert_msg(found >= 0 && !dead[found], "view lists id %u, which is not live", v.id[j]);
      ck_assert_msg(!listed[found], "view lists id %u twice", v.id[j]);
      listed[found] = 1;
      ck_assert(v.px[j] == before[found].state.position.x && v.py[j] == before[found].state.position.y);
      ck_assert(v.vx[j] == before[found].state.velocity.x && v.vy[j] == before[found].state.velocity.y);
      ck_assert(v.theta[j] == before[found].state.orientation && v.omega[j] == before[found].state.rotation);
      ck_assert_uint_eq(v.owner[j], 100u + (uint32_t)found);
    }
  }
  /* The path survives its remaining follower; the world keeps stepping. */
  ck_assert_int_eq(info_of(w, ids[4]).path, path);
  run(w, 20);
  assert_state_finite_inside(w);
  steer_world_destroy(w);
}
END_TEST

/* ---- validation ---------------------------------------------------------- */

#define REFUSE(call, code)                                                                                   \
  do {                                                                                                       \
    int rc_ = (call);                                                                                        \
    ck_assert_msg(rc_ == (code), "%s: got %d (%s), want %d", #call, rc_, steer_strerror(rc_), (int)(code));  \
    ck_assert_msg(steer_world_hash(w) == h0, "%s changed the world", #call);                                 \
    ck_assert_uint_eq(steer_world_count(w), count0);                                                         \
    ck_assert_uint_eq(steer_world_path_count(w), paths0);                                                    \
  } while (0)

static void set_float(void *base, size_t index, float value) {
  memcpy((char *)base + index * sizeof(float), &value, sizeof(float));
}

START_TEST(test_validation) {
  steer_world *w = make_world(8, 1);
  steer_id a = spawn_b(w, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL);
  steer_id k = spawn_b(w, STEER_MODEL_KINEMATIC, 5.0f, 0.0f, 0.0f, NULL);
  steer_id hd = spawn_b(w, STEER_MODEL_HEADING, -5.0f, 0.0f, 0.0f, NULL);
  steer_id gone = spawn_b(w, STEER_MODEL_DYNAMIC, 1.0f, 1.0f, 0.0f, NULL);
  ck_assert_int_eq(steer_world_despawn(w, gone), STEER_OK);
  int shared_arc =
      steer_world_path_create(w, (const vec2[]){{0, 0}, {10, 0}}, 2, 1.0f, STEER_PATH_ONCE, STEER_CORNER_ARC);
  ck_assert_int_ge(shared_arc, 0);
  run(w, 3);
  const uint64_t h0 = steer_world_hash(w);
  const uint32_t count0 = steer_world_count(w), paths0 = steer_world_path_count(w);
  const float bad[] = {NAN, INFINITY, -INFINITY};
  steer_agent_desc d0 = desc_at(STEER_MODEL_DYNAMIC, 2.0f, 2.0f, 0.0f);
  steer_id out = 0;

  /* The description itself. */
  REFUSE(steer_world_spawn(w, NULL, 0, &out), STEER_EINVAL);
  steer_agent_desc d = d0;
  d.model = STEER_MODEL_COUNT;
  REFUSE(steer_world_spawn(w, &d, 0, &out), STEER_EINVAL);
  for (size_t f = 0; f < sizeof(steer_state) / sizeof(float); f++)
    for (size_t b = 0; b < 3; b++) {
      d = d0;
      set_float(&d.state, f, bad[b]);
      REFUSE(steer_world_spawn(w, &d, 0, &out), STEER_EINVAL);
    }
  const vec2 outside[] = {{60.001f, 0}, {0, -61}, {-1e30f, 0}, {0, 1e9f}};
  for (size_t i = 0; i < 4; i++) {
    d = d0;
    d.state.position = outside[i];
    REFUSE(steer_world_spawn(w, &d, 0, &out), STEER_EINVAL);
  }
  const float bad_limit[] = {NAN, INFINITY, -1.0f, 0.0f};
  for (size_t f = 0; f < sizeof(steer_limits) / sizeof(float); f++)
    for (size_t b = 0; b < 4; b++) {
      int radius = f == offsetof(steer_limits, radius) / sizeof(float);
      if (radius && bad_limit[b] == 0.0f)
        continue; /* a point-sized agent is fine */
      steer_limits l = steer_default_limits();
      set_float(&l, f, bad_limit[b]);
      d = d0;
      d.limits = l;
      REFUSE(steer_world_spawn(w, &d, 0, &out), STEER_EINVAL);
      REFUSE(steer_world_set_limits(w, a, &l), STEER_EINVAL);
    }
  REFUSE(steer_world_set_limits(w, a, NULL), STEER_EINVAL);

  /* Behaviour parameters, through spawn and set_behaviour. */
  for (size_t f = 0; f < sizeof(steer_params) / sizeof(float); f++)
    for (size_t b = 0; b < 3; b++) {
      steer_behaviour be = beh_point(STEER_BEHAVIOUR_SEEK, 1.0f, 1.0f);
      set_float(&be.params, f, bad[b]);
      d = d0;
      d.behaviour = be;
      REFUSE(steer_world_spawn(w, &d, 0, &out), STEER_EINVAL);
      REFUSE(steer_world_set_behaviour(w, a, &be), STEER_EINVAL);
    }
  {
    steer_behaviour be = beh_point(STEER_BEHAVIOUR_ARRIVE, 1.0f, 1.0f);
    be.params.time_to_target = 0.0f;
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_EINVAL);
    be = beh_point(STEER_BEHAVIOUR_ARRIVE, 1.0f, 1.0f);
    be.params.slow_radius = be.params.target_radius * 0.5f;
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_EINVAL);
    be = beh_point(STEER_BEHAVIOUR_ARRIVE, 1.0f, 1.0f);
    be.params.target_radius = -1.0f;
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_EINVAL);
    for (size_t b = 0; b < 3; b++) {
      be = beh_point(STEER_BEHAVIOUR_SEEK, 1.0f, 1.0f);
      be.separation_weight = bad[b];
      REFUSE(steer_world_set_behaviour(w, a, &be), STEER_EINVAL);
      be = beh_point(STEER_BEHAVIOUR_SEEK, bad[b], 1.0f);
      REFUSE(steer_world_set_behaviour(w, a, &be), STEER_EINVAL);
      d = d0;
      d.behaviour = be;
      REFUSE(steer_world_spawn(w, &d, 0, &out), STEER_EINVAL);
      be = beh_point(STEER_BEHAVIOUR_SEEK, 1.0f, bad[b]);
      REFUSE(steer_world_set_behaviour(w, a, &be), STEER_EINVAL);
      be = beh_point(STEER_BEHAVIOUR_ALIGN, 1.0f, 1.0f);
      be.target.orientation = bad[b];
      REFUSE(steer_world_set_behaviour(w, a, &be), STEER_EINVAL);
    }
    be = beh_point(STEER_BEHAVIOUR_SEEK, 1.0f, 1.0f);
    be.separation_weight = -1.0f;
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_EINVAL);
    be.separation_weight = 0.0f;
    be.kind = STEER_BEHAVIOUR_COUNT;
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_EINVAL);
    be.kind = STEER_BEHAVIOUR_SEEK;
    be.facing = STEER_FACING_COUNT;
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_EINVAL);
    be.facing = 0;
    be.combine = STEER_COMBINE_COUNT;
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_EINVAL);
    be.combine = 0;
    be.target.kind = STEER_TARGET_KIND_COUNT;
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_EINVAL);
    REFUSE(steer_world_set_behaviour(w, a, NULL), STEER_EINVAL);
    /* A path is started with set_path / follow_path, never by a behaviour. */
    d = d0;
    d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_FOLLOW_PATH);
    REFUSE(steer_world_spawn(w, &d, 0, &out), STEER_EINVAL);
    be = steer_default_behaviour(STEER_BEHAVIOUR_FOLLOW_PATH);
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_EINVAL);
  }

  /* Behaviours that do not suit the model. */
  {
    steer_behaviour pursue = beh_agent(STEER_BEHAVIOUR_PURSUE, a, 0);
    REFUSE(steer_world_set_behaviour(w, k, &pursue), STEER_EMODEL);
    REFUSE(steer_world_set_behaviour(w, hd, &pursue), STEER_EMODEL);
    d = desc_at(STEER_MODEL_KINEMATIC, 3.0f, 3.0f, 0.0f);
    d.behaviour = pursue;
    REFUSE(steer_world_spawn(w, &d, 0, &out), STEER_EMODEL);
    steer_behaviour flee = beh_point(STEER_BEHAVIOUR_FLEE, 0.0f, 0.0f);
    REFUSE(steer_world_set_behaviour(w, hd, &flee), STEER_EMODEL);
    steer_behaviour align = beh_point(STEER_BEHAVIOUR_ALIGN, 0.0f, 0.0f);
    REFUSE(steer_world_set_behaviour(w, k, &align), STEER_EMODEL);
    steer_behaviour interpose = beh_agent(STEER_BEHAVIOUR_INTERPOSE, a, k);
    REFUSE(steer_world_set_behaviour(w, hd, &interpose), STEER_EMODEL);
    steer_behaviour look = steer_default_behaviour(STEER_BEHAVIOUR_LOOK_WHERE_GOING);
    REFUSE(steer_world_set_behaviour(w, k, &look), STEER_EMODEL);
    /* Arc and lazy cornering steer a heading-model agent only. */
    const vec2 pts[] = {{0, 0}, {10, 0}, {10, 10}};
    REFUSE(steer_world_set_path(w, a, pts, 3, 1.0f, STEER_PATH_LOOP, STEER_CORNER_ARC), STEER_EMODEL);
    REFUSE(steer_world_set_path(w, a, pts, 3, 1.0f, STEER_PATH_LOOP, STEER_CORNER_LAZY), STEER_EMODEL);
    REFUSE(steer_world_set_path(w, k, pts, 3, 1.0f, STEER_PATH_ONCE, STEER_CORNER_LAZY), STEER_EMODEL);
    REFUSE(steer_world_follow_path(w, a, shared_arc), STEER_EMODEL);
    REFUSE(steer_world_follow_path(w, k, shared_arc), STEER_EMODEL);
  }

  /* Targets. */
  {
    steer_behaviour be = steer_default_behaviour(STEER_BEHAVIOUR_PURSUE);
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_ETARGET); /* no target at all */
    be = beh_point(STEER_BEHAVIOUR_PURSUE, 1.0f, 1.0f);
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_ETARGET); /* a point cannot be pursued */
    be = beh_agent(STEER_BEHAVIOUR_PURSUE, gone, 0);
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_ETARGET);
    d = d0;
    d.behaviour = be;
    REFUSE(steer_world_spawn(w, &d, 0, &out), STEER_ETARGET);
    be = beh_agent(STEER_BEHAVIOUR_PURSUE, 0, 0);
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_ETARGET);
    be = beh_agent(STEER_BEHAVIOUR_PURSUE, a, 0);
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_ETARGET); /* itself */
    be = beh_agent(STEER_BEHAVIOUR_EVADE, a, 0);
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_ETARGET);
    be = beh_agent(STEER_BEHAVIOUR_INTERPOSE, k, gone);
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_ETARGET);
    be = beh_agent(STEER_BEHAVIOUR_INTERPOSE, k, a);
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_ETARGET);
    be = beh_agent(STEER_BEHAVIOUR_INTERPOSE, gone, k);
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_ETARGET);
    be = steer_default_behaviour(STEER_BEHAVIOUR_SEEK);
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_ETARGET);
    REFUSE(steer_world_set_behaviour(w, k, &be), STEER_ETARGET);
    be = beh_agent(STEER_BEHAVIOUR_SEEK, gone, 0);
    REFUSE(steer_world_set_behaviour(w, hd, &be), STEER_ETARGET);
    be = steer_default_behaviour(STEER_BEHAVIOUR_VELOCITY_MATCH);
    REFUSE(steer_world_set_behaviour(w, a, &be), STEER_ETARGET);
  }

  /* Paths. */
  {
    const vec2 pts[] = {{0, 0}, {10, 0}, {10, 10}};
    vec2 nan_pts[] = {{0, 0}, {NAN, 0}};
    vec2 out_pts[] = {{0, 0}, {70, 0}};
    REFUSE(steer_world_set_path(w, a, nan_pts, 2, 1.0f, STEER_PATH_ONCE, STEER_CORNER_NONE), STEER_EINVAL);
    REFUSE(steer_world_set_path(w, a, out_pts, 2, 1.0f, STEER_PATH_ONCE, STEER_CORNER_NONE), STEER_EINVAL);
    REFUSE(steer_world_set_path(w, a, pts, 0, 1.0f, STEER_PATH_ONCE, STEER_CORNER_NONE), STEER_EINVAL);
    REFUSE(steer_world_set_path(w, a, NULL, 3, 1.0f, STEER_PATH_ONCE, STEER_CORNER_NONE), STEER_EINVAL);
    REFUSE(steer_world_set_path(w, a, pts, 3, 0.0f, STEER_PATH_ONCE, STEER_CORNER_NONE), STEER_EINVAL);
    REFUSE(steer_world_set_path(w, a, pts, 3, NAN, STEER_PATH_ONCE, STEER_CORNER_NONE), STEER_EINVAL);
    REFUSE(steer_world_set_path(w, a, pts, 3, 1.0f, STEER_PATH_MODE_COUNT, STEER_CORNER_NONE), STEER_EINVAL);
    REFUSE(steer_world_set_path(w, gone, pts, 3, 1.0f, STEER_PATH_ONCE, STEER_CORNER_NONE), STEER_ENOENT);
    static vec2 many[STEER_PATH_MAX_POINTS + 1];
    REFUSE(steer_world_set_path(w, a, many, steer_world_get_config(w)->max_path_points + 1, 1.0f,
                                STEER_PATH_ONCE, STEER_CORNER_NONE),
           STEER_EINVAL);
    REFUSE(steer_world_path_create(w, nan_pts, 2, 1.0f, STEER_PATH_LOOP, STEER_CORNER_NONE), STEER_EINVAL);
    REFUSE(steer_world_follow_path(w, a, -1), STEER_EINVAL);
    REFUSE(steer_world_follow_path(w, a, shared_arc + 1), STEER_EINVAL); /* never created */
    REFUSE(steer_world_follow_path(w, a, 1 << 20), STEER_EINVAL);
    REFUSE(steer_world_follow_path(w, gone, shared_arc), STEER_ENOENT);
    REFUSE(steer_world_path_release(w, -1), STEER_EINVAL);
    REFUSE(steer_world_path_release(w, shared_arc + 1), STEER_EINVAL);
  }

  /* A step that cannot run changes nothing. */
  const float bad_dt[] = {0.0f, -DT, NAN, INFINITY};
  for (size_t i = 0; i < 4; i++) {
    steer_world_step(w, bad_dt[i]);
    ck_assert_uint_eq(steer_world_hash(w), h0);
  }
  /* And the world still accepts good calls afterwards. */
  steer_behaviour good = beh_agent(STEER_BEHAVIOUR_PURSUE, k, 0);
  ck_assert_int_eq(steer_world_set_behaviour(w, a, &good), STEER_OK);
  ck_assert_uint_ne(steer_world_hash(w), h0);
  steer_world_destroy(w);
}
END_TEST

START_TEST(test_create_config) {
  steer_world_config c = steer_default_world_config();
  c.max_agents = 0;
  ck_assert_ptr_null(steer_world_create(&c));
  c = steer_default_world_config();
  c.max_agents = STEER_MAX_CAPACITY + 1;
  ck_assert_ptr_null(steer_world_create(&c));
  c = steer_default_world_config();
  c.max_path_points = STEER_PATH_MAX_POINTS + 1;
  ck_assert_ptr_null(steer_world_create(&c));
  c = steer_default_world_config();
  c.max = c.min;
  ck_assert_ptr_null(steer_world_create(&c));
  c = steer_default_world_config();
  c.min.x = NAN;
  ck_assert_ptr_null(steer_world_create(&c));
  c = steer_default_world_config();
  c.max.y = INFINITY;
  ck_assert_ptr_null(steer_world_create(&c));
  c = steer_default_world_config();
  c.cell_size = 0.0f;
  ck_assert_ptr_null(steer_world_create(&c));
  ck_assert_ptr_null(steer_world_create(NULL));
  steer_world_destroy(NULL);
  c = steer_default_world_config();
  c.max_agents = 100;
  steer_world *w = steer_world_create(&c);
  ck_assert_ptr_nonnull(w);
  ck_assert_uint_eq(steer_world_get_config(w)->max_paths, 100); /* 0 means max_agents */
  ck_assert_uint_eq(steer_world_tick(w), 0);
  steer_world_destroy(w);
  for (int e = STEER_OK; e >= STEER_ENOMEM; e--)
    ck_assert_str_ne(steer_strerror(e), "unknown error");
  ck_assert_str_eq(steer_strerror(-99), "unknown error");
}
END_TEST

/* ---- step semantics ------------------------------------------------------ */

/* Three agents that steer by each other (pursue, evade, interpose) plus a
 * seeker with separation, spawned in every order: if a step read an agent
 * already moved this tick, the result would depend on the order. */
START_TEST(test_steering_reads_previous_tick) {
  static const int perms[6][4] = {{0, 1, 2, 3}, {1, 0, 2, 3}, {2, 1, 3, 0},
                                  {3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}};
  steer_agent_info ref[4];
  for (int p = 0; p < 6; p++) {
    steer_world *w = make_world(8, 11);
    steer_id ids[4];
    const vec2 pos[4] = {{-10, 0}, {10, 2}, {0, 8}, {1, 7}};
    for (int j = 0; j < 4; j++) {
      int role = perms[p][j];
      ids[role] = spawn_b(w, STEER_MODEL_DYNAMIC, pos[role].x, pos[role].y, 0.5f * (float)role, NULL);
    }
    steer_behaviour b0 = beh_agent(STEER_BEHAVIOUR_PURSUE, ids[1], 0);
    steer_behaviour b1 = beh_agent(STEER_BEHAVIOUR_EVADE, ids[0], 0);
    steer_behaviour b2 = beh_agent(STEER_BEHAVIOUR_INTERPOSE, ids[0], ids[1]);
    steer_behaviour b3 = beh_agent(STEER_BEHAVIOUR_SEEK, ids[0], 0);
    b2.separation_weight = 1.0f;
    b3.separation_weight = 2.0f;
    b3.facing = STEER_FACING_TARGET;
    ck_assert_int_eq(steer_world_set_behaviour(w, ids[0], &b0), STEER_OK);
    ck_assert_int_eq(steer_world_set_behaviour(w, ids[1], &b1), STEER_OK);
    ck_assert_int_eq(steer_world_set_behaviour(w, ids[2], &b2), STEER_OK);
    ck_assert_int_eq(steer_world_set_behaviour(w, ids[3], &b3), STEER_OK);
    run(w, 400);
    for (int role = 0; role < 4; role++) {
      steer_agent_info i = info_of(w, ids[role]);
      if (p == 0) {
        ref[role] = i;
        continue;
      }
      ck_assert_msg(memcmp(&i.state, &ref[role].state, sizeof(i.state)) == 0,
                    "spawn order %d: role %d at (%.9g, %.9g), reference (%.9g, %.9g)", p, role,
                    (double)i.state.position.x, (double)i.state.position.y,
                    (double)ref[role].state.position.x, (double)ref[role].state.position.y);
    }
    /* Sanity: the chase really happened. */
    if (p == 0)
      ck_assert(v2_len(v2_sub(ref[0].state.position, v2(-10, 0))) > 5.0f);
    steer_world_destroy(w);
  }
}
END_TEST

/* Two agents pursuing each other from mirrored places meet in the middle. */
START_TEST(test_mutual_pursuit_symmetric) {
  steer_world *w = make_world(4, 1);
  steer_id a = spawn_b(w, STEER_MODEL_DYNAMIC, -20.0f, 0.0f, STEER_PI / 2, NULL);
  steer_id b = spawn_b(w, STEER_MODEL_DYNAMIC, 20.0f, 0.0f, -STEER_PI / 2, NULL);
  steer_behaviour ba = beh_agent(STEER_BEHAVIOUR_PURSUE, b, 0), bb = beh_agent(STEER_BEHAVIOUR_PURSUE, a, 0);
  ck_assert_int_eq(steer_world_set_behaviour(w, a, &ba), STEER_OK);
  ck_assert_int_eq(steer_world_set_behaviour(w, b, &bb), STEER_OK);
  float best = 1e9f;
  for (int t = 0; t < 300; t++) {
    steer_world_step(w, DT);
    steer_agent_info ia = info_of(w, a), ib = info_of(w, b);
    /* Mirror images through the origin, up to rounding. */
    ck_assert_float_eq_tol(ia.state.position.x, -ib.state.position.x, 1e-3f);
    ck_assert_float_eq_tol(ia.state.position.y, -ib.state.position.y, 1e-3f);
    float dd = dist_of(w, a, b);
    if (dd < best)
      best = dd;
  }
  ck_assert(best < 1.0f);
  steer_world_destroy(w);
}
END_TEST

/* An agent whose target is despawned stops steering after it and comes to
 * rest, in every model. */
START_TEST(test_lost_target_comes_to_rest) {
  steer_world *w = make_world(8, 2);
  steer_id t = spawn_b(w, STEER_MODEL_DYNAMIC, 30.0f, 0.0f, 0.0f, NULL);
  steer_behaviour wander = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
  ck_assert_int_eq(steer_world_set_behaviour(w, t, &wander), STEER_OK);
  steer_behaviour pursue = beh_agent(STEER_BEHAVIOUR_PURSUE, t, 0);
  steer_behaviour seek = beh_agent(STEER_BEHAVIOUR_SEEK, t, 0);
  steer_behaviour arrive = beh_agent(STEER_BEHAVIOUR_ARRIVE, t, 0);
  steer_id p = spawn_b(w, STEER_MODEL_DYNAMIC, -30.0f, 0.0f, 0.0f, &pursue);
  steer_id k = spawn_b(w, STEER_MODEL_KINEMATIC, -30.0f, 10.0f, 0.0f, &seek);
  steer_id h = spawn_b(w, STEER_MODEL_HEADING, -30.0f, -10.0f, 0.0f, &arrive);
  steer_id v = spawn_b(w, STEER_MODEL_DYNAMIC, -30.0f, 20.0f, 0.0f, NULL);
  steer_behaviour vm = beh_agent(STEER_BEHAVIOUR_VELOCITY_MATCH, t, 0);
  ck_assert_int_eq(steer_world_set_behaviour(w, v, &vm), STEER_OK);
  run(w, 90);
  const steer_id chasers[] = {p, k, h, v};
  for (int i = 0; i < 3; i++)
    ck_assert_msg(v2_len(info_of(w, chasers[i]).state.velocity) > 1.0f, "chaser %d not moving", i);
  ck_assert_int_eq(steer_world_despawn(w, t), STEER_OK);
  run(w, 240);
  steer_agent_info before[4];
  for (int i = 0; i < 4; i++) {
    before[i] = info_of(w, chasers[i]);
    ck_assert_msg(v2_len(before[i].state.velocity) < 1e-3f, "chaser %d still at %g m/s", i,
                  (double)v2_len(before[i].state.velocity));
    ck_assert(fabsf(before[i].state.rotation) < 1e-3f);
  }
  run(w, 30);
  for (int i = 0; i < 4; i++) {
    steer_agent_info now = info_of(w, chasers[i]);
    ck_assert(v2_len(v2_sub(now.state.position, before[i].state.position)) < 1e-3f);
  }
  steer_world_destroy(w);
}
END_TEST

/* ---- events -------------------------------------------------------------- */

static uint32_t count_events(const steer_world *w, steer_id agent, steer_event_type type) {
  uint32_t n, c = 0;
  const steer_event *e = steer_world_events(w, &n);
  for (uint32_t i = 0; i < n; i++)
    c += e[i].agent == agent && e[i].type == type;
  return c;
}

START_TEST(test_event_arrived_once) {
  for (int model = 0; model < STEER_MODEL_COUNT; model++) {
    steer_world *w = make_world(8, 1);
    steer_behaviour arrive = beh_point(STEER_BEHAVIOUR_ARRIVE, 12.0f, 5.0f);
    steer_behaviour wander = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
    steer_id other = spawn_b(w, (steer_model)model, -40.0f, -40.0f, 0.0f, &wander);
    steer_id a = spawn_b(w, (steer_model)model, 0.0f, 0.0f, 0.3f, &arrive);
    /* A second arriver that arrives later, so the agent field matters. */
    steer_behaviour far = beh_point(STEER_BEHAVIOUR_ARRIVE, 30.0f, -30.0f);
    steer_id b = spawn_b(w, (steer_model)model, 0.0f, -2.0f, 0.0f, &far);
    uint64_t arrived_tick[2] = {0, 0};
    const steer_id who[2] = {a, b};
    const vec2 goal[2] = {{12.0f, 5.0f}, {30.0f, -30.0f}};
    const float r = arrive.params.target_radius;
    for (int t = 0; t < 1200; t++) {
      float dist_before[2];
      for (int i = 0; i < 2; i++)
        dist_before[i] = v2_len(v2_sub(info_of(w, who[i]).state.position, goal[i]));
      steer_world_step(w, DT);
      uint32_t n;
      const steer_event *e = steer_world_events(w, &n);
      for (uint32_t j = 0; j < n; j++) {
        ck_assert_uint_eq(e[j].tick, steer_world_tick(w));
        ck_assert_uint_eq(e[j].type, STEER_EVENT_ARRIVED);
        ck_assert_msg(e[j].agent == a || e[j].agent == b, "event for agent %u", e[j].agent);
        int i = e[j].agent == a ? 0 : 1;
        ck_assert_msg(arrived_tick[i] == 0, "model %d: agent %d arrived twice", model, i);
        arrived_tick[i] = e[j].tick;
        /* It arrived during this tick: inside now, outside before. */
        float now = v2_len(v2_sub(info_of(w, who[i]).state.position, goal[i]));
        ck_assert(now < r);
        ck_assert(dist_before[i] >= r);
        ck_assert_uint_eq(info_of(w, who[i]).arrived, 1);
      }
      ck_assert_uint_eq(count_events(w, other, STEER_EVENT_ARRIVED), 0);
    }
    ck_assert_msg(arrived_tick[0] > 0 && arrived_tick[1] > 0, "model %d: arrivals at %llu, %llu", model,
                  (unsigned long long)arrived_tick[0], (unsigned long long)arrived_tick[1]);
    ck_assert_uint_lt(arrived_tick[0], arrived_tick[1]);
    /* Still at rest inside the radius at the end. */
    steer_agent_info ia = info_of(w, a);
    ck_assert(v2_len(v2_sub(ia.state.position, goal[0])) < r);
    ck_assert(v2_len(ia.state.velocity) < 1e-2f);
    /* A new arrive behaviour re-arms the event. */
    steer_behaviour back = beh_point(STEER_BEHAVIOUR_ARRIVE, 0.0f, 0.0f);
    ck_assert_int_eq(steer_world_set_behaviour(w, a, &back), STEER_OK);
    ck_assert_uint_eq(info_of(w, a).arrived, 0);
    uint32_t again = 0;
    for (int t = 0; t < 900; t++) {
      steer_world_step(w, DT);
      again += count_events(w, a, STEER_EVENT_ARRIVED);
    }
    ck_assert_uint_eq(again, 1);
    steer_world_destroy(w);
  }
}
END_TEST

typedef struct ev {
  uint8_t type;
  uint32_t node;
} ev;

static uint32_t collect(steer_world *w, steer_id id, int ticks, ev *out, uint32_t max) {
  uint32_t n = 0;
  for (int t = 0; t < ticks; t++) {
    steer_world_step(w, DT);
    uint32_t c;
    const steer_event *e = steer_world_events(w, &c);
    for (uint32_t i = 0; i < c; i++) {
      ck_assert_uint_eq(e[i].tick, steer_world_tick(w));
      if (e[i].agent == id && n < max) {
        out[n].type = e[i].type;
        out[n].node = e[i].node;
        n++;
      }
    }
  }
  return n;
}

/* Ping-pong: waypoints 0 1 2, reverse at 2, waypoints 1 0, reverse at 0, ... with
 * every model and every cornering. */
START_TEST(test_event_pingpong) {
  const vec2 pts[] = {{0, 0}, {20, 0}, {20, 20}};
  const struct {
    steer_model model;
    steer_cornering corner;
  } cfgs[] = {{STEER_MODEL_DYNAMIC, STEER_CORNER_NONE},
              {STEER_MODEL_KINEMATIC, STEER_CORNER_NONE},
              {STEER_MODEL_HEADING, STEER_CORNER_NONE},
              {STEER_MODEL_HEADING, STEER_CORNER_ARC},
              {STEER_MODEL_HEADING, STEER_CORNER_LAZY}};
  for (size_t c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
    steer_world *w = make_world(4, 1);
    steer_id a = spawn_b(w, cfgs[c].model, -3.0f, 0.5f, 0.0f, NULL);
    ck_assert_int_eq(steer_world_set_path(w, a, pts, 3, 1.0f, STEER_PATH_PINGPONG, cfgs[c].corner), STEER_OK);
    ev e[64];
    uint32_t n = collect(w, a, 3000, e, 64);
    /* Expected: (W0) (W1) (W2 R2) (W1) (W0 R0) (W1) (W2 R2) ... */
    static const uint32_t cycle[] = {0, 1, 2, 1};
    uint32_t k = 0, waypoints = 0;
    for (uint32_t i = 0; k < n; i++) {
      uint32_t node = cycle[i % 4];
      ck_assert_msg(e[k].type == STEER_EVENT_WAYPOINT && e[k].node == node,
                    "config %zu event %u: type %u node %u, want waypoint %u", c, k, e[k].type, e[k].node,
                    node);
      k++;
      waypoints++;
      if ((node == 2 || (node == 0 && i > 0)) && k < n) {
        ck_assert_msg(e[k].type == STEER_EVENT_REVERSED && e[k].node == node,
                      "config %zu event %u: type %u node %u, want reversed at %u", c, k, e[k].type, e[k].node,
                      node);
        k++;
      }
    }
    ck_assert_msg(waypoints >= 8, "config %zu: only %u waypoints in 100 s", c, waypoints);
    steer_world_destroy(w);
  }
}
END_TEST

START_TEST(test_event_once_and_loop) {
  const vec2 pts[] = {{0, 0}, {15, 0}, {15, 15}, {0, 15}};
  for (int model = 0; model < STEER_MODEL_COUNT; model++) {
    for (int mode = STEER_PATH_ONCE; mode <= STEER_PATH_LOOP; mode++) {
      steer_world *w = make_world(4, 1);
      steer_id a = spawn_b(w, (steer_model)model, 2.0f, -3.0f, 0.0f, NULL);
      ck_assert_int_eq(
          steer_world_set_path(w, a, pts, 4, 1.0f, (steer_path_mode)mode,
                               model == STEER_MODEL_HEADING ? STEER_CORNER_ARC : STEER_CORNER_NONE),
          STEER_OK);
      ev e[64];
      uint32_t n = collect(w, a, 2400, e, 64);
      if (mode == STEER_PATH_ONCE) {
        /* W0 W1 W2 W3 FINISHED(3), and nothing after. */
        ck_assert_msg(n == 5, "model %d: %u events", model, n);
        for (uint32_t i = 0; i < 4; i++)
          ck_assert(e[i].type == STEER_EVENT_WAYPOINT && e[i].node == i);
        ck_assert(e[4].type == STEER_EVENT_PATH_FINISHED && e[4].node == 3);
        steer_agent_info in = info_of(w, a);
        ck_assert(in.cursor.finished);
        ck_assert(v2_len(v2_sub(in.state.position, pts[3])) <= 1.0f);
        ck_assert(v2_len(in.state.velocity) < 1e-2f);
      } else {
        ck_assert_msg(n >= 8, "model %d: %u events", model, n);
        for (uint32_t i = 0; i < n; i++)
          ck_assert(e[i].type == STEER_EVENT_WAYPOINT && e[i].node == i % 4);
      }
      steer_world_destroy(w);
    }
  }
}
END_TEST

START_TEST(test_event_overflow) {
  steer_world_config c = steer_default_world_config();
  c.max_agents = 16;
  c.max_events = (uint32_t)_i; /* 0 and 3 */
  steer_world *w = steer_world_create(&c);
  ck_assert_ptr_nonnull(w);
  /* Ten agents already inside their arrive radius: ten ARRIVED in tick 1. */
  for (int i = 0; i < 10; i++) {
    steer_behaviour b = beh_point(STEER_BEHAVIOUR_ARRIVE, (float)i * 5.0f + 0.1f, 0.0f);
    spawn_b(w, STEER_MODEL_DYNAMIC, (float)i * 5.0f, 0.0f, 0.0f, &b);
  }
  ck_assert_uint_eq(steer_world_events_dropped(w), 0);
  steer_world_step(w, DT);
  uint32_t n;
  const steer_event *e = steer_world_events(w, &n);
  ck_assert_uint_eq(n, c.max_events);
  for (uint32_t i = 0; i < n; i++)
    ck_assert(e[i].type == STEER_EVENT_ARRIVED && e[i].tick == 1);
  ck_assert_uint_eq(steer_world_events_dropped(w), 10u - c.max_events);
  /* The next tick has nothing new; the dropped count is a running total. */
  steer_world_step(w, DT);
  steer_world_events(w, &n);
  ck_assert_uint_eq(n, 0);
  ck_assert_uint_eq(steer_world_events_dropped(w), 10u - c.max_events);
  steer_world_destroy(w);
}
END_TEST

/* ---- paths --------------------------------------------------------------- */

START_TEST(test_path_own_freed) {
  steer_world *w = make_world(8, 1);
  const vec2 pts[] = {{0, 0}, {10, 0}, {10, 10}};
  steer_id a = spawn_b(w, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL);
  steer_id b = spawn_b(w, STEER_MODEL_HEADING, 0.0f, 5.0f, 0.0f, NULL);
  ck_assert_uint_eq(steer_world_path_count(w), 0);
  ck_assert_int_eq(steer_world_set_path(w, a, pts, 3, 1.0f, STEER_PATH_LOOP, STEER_CORNER_NONE), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 1);
  steer_agent_info i = info_of(w, a);
  ck_assert_int_ge(i.path, 0);
  ck_assert_uint_eq(i.behaviour.kind, STEER_BEHAVIOUR_FOLLOW_PATH);
  run(w, 10);
  /* A new path replaces the old one. */
  for (int k = 0; k < 20; k++) {
    ck_assert_int_eq(steer_world_set_path(w, a, pts, 3, 1.0f, STEER_PATH_PINGPONG, STEER_CORNER_NONE),
                     STEER_OK);
    ck_assert_uint_eq(steer_world_path_count(w), 1);
  }
  /* Changing only the parameters of the path following keeps the path. */
  steer_behaviour fp = steer_default_behaviour(STEER_BEHAVIOUR_FOLLOW_PATH);
  fp.params.time_to_target = 0.2f;
  ck_assert_int_eq(steer_world_set_behaviour(w, a, &fp), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 1);
  ck_assert_int_ge(info_of(w, a).path, 0);
  /* Another behaviour frees it. */
  steer_behaviour seek = beh_point(STEER_BEHAVIOUR_SEEK, 5.0f, 5.0f);
  ck_assert_int_eq(steer_world_set_behaviour(w, a, &seek), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 0);
  ck_assert_int_eq(info_of(w, a).path, -1);
  /* So does stop, and despawn. */
  ck_assert_int_eq(steer_world_set_path(w, a, pts, 3, 1.0f, STEER_PATH_ONCE, STEER_CORNER_NONE), STEER_OK);
  ck_assert_int_eq(steer_world_set_path(w, b, pts, 3, 1.0f, STEER_PATH_ONCE, STEER_CORNER_ARC), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 2);
  ck_assert_int_eq(steer_world_stop(w, a), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 1);
  ck_assert_uint_eq(info_of(w, a).behaviour.kind, STEER_BEHAVIOUR_NONE);
  run(w, 5);
  ck_assert_int_eq(steer_world_despawn(w, b), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 0);
  /* Churn: the pool never leaks. */
  for (int k = 0; k < 200; k++) {
    steer_id c = spawn_b(w, STEER_MODEL_KINEMATIC, 1.0f, 1.0f, 0.0f, NULL);
    ck_assert_int_eq(steer_world_set_path(w, c, pts, 3, 1.0f, STEER_PATH_LOOP, STEER_CORNER_NONE), STEER_OK);
    steer_world_step(w, DT);
    ck_assert_int_eq(steer_world_despawn(w, c), STEER_OK);
  }
  ck_assert_uint_eq(steer_world_path_count(w), 0);
  steer_world_destroy(w);
}
END_TEST

START_TEST(test_path_shared) {
  steer_world *w = make_world(8, 1);
  const vec2 pts[] = {{0, 0}, {10, 0}, {10, 10}, {0, 10}};
  int h = steer_world_path_create(w, pts, 4, 1.0f, STEER_PATH_LOOP, STEER_CORNER_NONE);
  ck_assert_int_ge(h, 0);
  ck_assert_uint_eq(steer_world_path_count(w), 1);
  steer_id a = spawn_b(w, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL);
  steer_id b = spawn_b(w, STEER_MODEL_KINEMATIC, 1.0f, 0.0f, 0.0f, NULL);
  steer_id c = spawn_b(w, STEER_MODEL_HEADING, 2.0f, 0.0f, 0.0f, NULL);
  ck_assert_int_eq(steer_world_follow_path(w, a, h), STEER_OK);
  ck_assert_int_eq(steer_world_follow_path(w, b, h), STEER_OK);
  ck_assert_int_eq(steer_world_follow_path(w, c, h), STEER_OK);
  ck_assert_int_eq(steer_world_path_release(w, h), STEER_OK);
  ck_assert_int_eq(steer_world_path_release(w, h), STEER_EINVAL); /* released once only */
  ck_assert_uint_eq(steer_world_path_count(w), 1);
  run(w, 60);
  /* Re-following the same path keeps it alive and restarts at node 0. */
  ck_assert_int_eq(steer_world_follow_path(w, a, h), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 1);
  ck_assert_uint_eq(info_of(w, a).cursor.node, 0);
  ck_assert_int_eq(steer_world_despawn(w, a), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 1);
  steer_behaviour wander = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
  ck_assert_int_eq(steer_world_set_behaviour(w, b, &wander), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 1);
  run(w, 30);
  ck_assert_int_eq(info_of(w, c).path, h);
  /* The last follower moves to its own path: the shared one goes. */
  ck_assert_int_eq(steer_world_set_path(w, c, pts, 2, 1.0f, STEER_PATH_ONCE, STEER_CORNER_LAZY), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 1);
  /* Released before the new one was created, so the new path took its handle. */
  ck_assert_int_eq(info_of(w, c).path, h);
  ck_assert_int_eq(steer_world_follow_path(w, b, h), STEER_EMODEL); /* now c's lazy path */
  ck_assert_int_eq(steer_world_stop(w, c), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 0);
  /* A path nobody follows goes as soon as it is released. */
  h = steer_world_path_create(w, pts, 4, 1.0f, STEER_PATH_ONCE, STEER_CORNER_NONE);
  ck_assert_int_ge(h, 0);
  ck_assert_uint_eq(steer_world_path_count(w), 1);
  ck_assert_int_eq(steer_world_path_release(w, h), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 0);
  steer_world_destroy(w);
}
END_TEST

START_TEST(test_path_pool_full) {
  steer_world_config cfg = steer_default_world_config();
  cfg.max_agents = 8;
  cfg.max_paths = 3;
  steer_world *w = steer_world_create(&cfg);
  ck_assert_ptr_nonnull(w);
  const vec2 pts[] = {{0, 0}, {10, 0}};
  int h[3];
  for (int i = 0; i < 3; i++) {
    h[i] = steer_world_path_create(w, pts, 2, 1.0f, STEER_PATH_LOOP, STEER_CORNER_NONE);
    ck_assert_int_ge(h[i], 0);
  }
  steer_id a = spawn_b(w, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL);
  const uint64_t h0 = steer_world_hash(w);
  const uint32_t count0 = steer_world_count(w), paths0 = 3;
  REFUSE(steer_world_path_create(w, pts, 2, 1.0f, STEER_PATH_LOOP, STEER_CORNER_NONE), STEER_EFULL);
  REFUSE(steer_world_set_path(w, a, pts, 2, 1.0f, STEER_PATH_LOOP, STEER_CORNER_NONE), STEER_EFULL);
  ck_assert_uint_eq(info_of(w, a).behaviour.kind, STEER_BEHAVIOUR_NONE);
  /* Releasing an unused path makes room. */
  ck_assert_int_eq(steer_world_path_release(w, h[1]), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 2);
  ck_assert_int_eq(steer_world_set_path(w, a, pts, 2, 1.0f, STEER_PATH_LOOP, STEER_CORNER_NONE), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 3);
  /* The pool is full again, but replacing the agent's own path frees its entry
   * first: that succeeds, in place. */
  int own = info_of(w, a).path;
  const vec2 pts2[] = {{0, 0}, {0, 10}, {5, 5}};
  ck_assert_int_eq(steer_world_set_path(w, a, pts2, 3, 1.0f, STEER_PATH_ONCE, STEER_CORNER_NONE), STEER_OK);
  ck_assert_uint_eq(steer_world_path_count(w), 3);
  ck_assert_int_eq(info_of(w, a).path, own);
  ck_assert_uint_eq(info_of(w, a).cursor.node, 0);
  /* A second follower keeps the path alive: then replacing it needs a free entry. */
  steer_id b = spawn_b(w, STEER_MODEL_DYNAMIC, 1.0f, 0.0f, 0.0f, NULL);
  ck_assert_int_eq(steer_world_follow_path(w, b, own), STEER_OK);
  const uint64_t h1 = steer_world_hash(w);
  ck_assert_int_eq(steer_world_set_path(w, a, pts, 2, 1.0f, STEER_PATH_LOOP, STEER_CORNER_NONE), STEER_EFULL);
  ck_assert_uint_eq(steer_world_hash(w), h1);
  ck_assert_int_eq(info_of(w, a).path, own);
  ck_assert_uint_eq(info_of(w, a).behaviour.kind, STEER_BEHAVIOUR_FOLLOW_PATH);
  steer_world_destroy(w);
}
END_TEST

/* ---- separation and walls ------------------------------------------------ */

START_TEST(test_separation) {
  steer_world *w = make_world(8, 1);
  steer_behaviour none = steer_default_behaviour(STEER_BEHAVIOUR_NONE);
  none.separation_weight = 1.0f;
  steer_id a = spawn_b(w, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, &none);
  steer_id b = spawn_b(w, STEER_MODEL_DYNAMIC, 0.3f, 0.1f, 0.0f, &none);
  /* The same pair without separation, elsewhere. */
  steer_behaviour still = steer_default_behaviour(STEER_BEHAVIOUR_NONE);
  steer_id c = spawn_b(w, STEER_MODEL_DYNAMIC, 40.0f, 40.0f, 0.0f, &still);
  steer_id d = spawn_b(w, STEER_MODEL_DYNAMIC, 40.3f, 40.1f, 0.0f, &still);
  /* And a coincident pair facing apart: separation still parts them. */
  steer_id e = spawn_b(w, STEER_MODEL_DYNAMIC, -40.0f, -40.0f, 0.0f, &none);
  steer_id f = spawn_b(w, STEER_MODEL_DYNAMIC, -40.0f, -40.0f, STEER_PI, &none);
  float start = dist_of(w, a, b);
  vec2 mid0 = v2_scale(v2_add(info_of(w, a).state.position, info_of(w, b).state.position), 0.5f);
  run(w, 600);
  float end = dist_of(w, a, b);
  const steer_params p = steer_default_params();
  const float radius = steer_default_limits().radius;
  ck_assert_msg(end > start && end >= p.separation_radius, "separated from %g to %g", (double)start,
                (double)end);
  ck_assert(end >= 2.0f * radius);                              /* not overlapping */
  ck_assert(end <= p.separation_radius + 2.0f * radius + 0.5f); /* and not flung apart */
  /* Pushed symmetrically, and at rest again. */
  vec2 mid = v2_scale(v2_add(info_of(w, a).state.position, info_of(w, b).state.position), 0.5f);
  ck_assert(v2_len(v2_sub(mid, mid0)) < 1e-3f);
  ck_assert(v2_len(info_of(w, a).state.velocity) < 1e-2f);
  ck_assert(v2_len(info_of(w, b).state.velocity) < 1e-2f);
  /* Without separation they stay exactly where they were. */
  ck_assert_float_eq(info_of(w, c).state.position.x, 40.0f);
  ck_assert_float_eq(info_of(w, c).state.position.y, 40.0f);
  ck_assert_float_eq(info_of(w, d).state.position.x, 40.3f);
  ck_assert_float_eq(info_of(w, d).state.position.y, 40.1f);
  ck_assert(dist_of(w, e, f) >= p.separation_radius);
  steer_world_destroy(w);
}
END_TEST

/* Separation with the priority combine: it wins while it asks for anything,
 * then the behaviour resumes. */
START_TEST(test_separation_priority) {
  steer_world *w = make_world(8, 1);
  steer_behaviour b = beh_point(STEER_BEHAVIOUR_ARRIVE, 10.0f, 0.0f);
  b.separation_weight = 1.0f;
  b.combine = STEER_COMBINE_PRIORITY;
  steer_id a = spawn_b(w, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, &b);
  steer_behaviour none = steer_default_behaviour(STEER_BEHAVIOUR_NONE);
  steer_id blocker = spawn_b(w, STEER_MODEL_DYNAMIC, 10.0f, 0.0f, 0.0f, &none);
  run(w, 900);
  /* The arriver cannot reach a goal occupied by an agent it keeps clear of. */
  float gap = dist_of(w, a, blocker);
  ck_assert_msg(gap > 1.0f, "gap %g", (double)gap);
  ck_assert_float_eq(info_of(w, blocker).state.position.x, 10.0f);
  steer_world_destroy(w);
}
END_TEST

START_TEST(test_world_walls) {
  steer_world *w = make_world(16, 1);
  const steer_world_config *c = steer_world_get_config(w);
  /* Fleeing toward a wall, in each model that can flee, and seeking a point
   * beyond the bounds (allowed: the wall holds the agent). */
  steer_behaviour flee = beh_point(STEER_BEHAVIOUR_FLEE, 0.0f, 0.0f);
  steer_id df = spawn_b(w, STEER_MODEL_DYNAMIC, 55.0f, 1.0f, 0.0f, &flee);
  steer_id kf = spawn_b(w, STEER_MODEL_KINEMATIC, -1.0f, -55.0f, 0.0f, &flee);
  steer_behaviour seek = beh_point(STEER_BEHAVIOUR_SEEK, 500.0f, 500.0f);
  steer_id hs = spawn_b(w, STEER_MODEL_HEADING, 0.0f, 0.0f, 0.0f, &seek);
  steer_id ds = spawn_b(w, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 1.0f, &seek);
  steer_behaviour wander = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
  for (int i = 0; i < 6; i++)
    spawn_b(w, (steer_model)(i % 3), 58.0f, (float)(i * 3), 0.0f, &wander);
  for (int t = 0; t < 900; t++) {
    steer_world_step(w, DT);
    assert_state_finite_inside(w);
  }
  steer_agent_info i = info_of(w, df);
  ck_assert_float_eq(i.state.position.x, c->max.x);
  ck_assert(i.state.velocity.x <= 0.0f); /* no speed into the wall */
  i = info_of(w, kf);
  ck_assert_float_eq(i.state.position.y, c->min.y);
  ck_assert(i.state.velocity.y >= 0.0f);
  /* The seekers end in the corner nearest their target. */
  i = info_of(w, hs);
  ck_assert(v2_len(v2_sub(i.state.position, c->max)) < 3.0f);
  i = info_of(w, ds);
  ck_assert(v2_len(v2_sub(i.state.position, c->max)) < 1.0f);
  steer_world_destroy(w);
}
END_TEST

/* ---- determinism --------------------------------------------------------- */

#define BUSY_MAX 256

/* A world with every model and behaviour, paths in every mode and cornering
 * (own and shared), separation blended and by priority, facing modes. Commands
 * are a function of `cmd_seed` only, so worlds of different seeds get the same
 * commands. */
typedef struct busy {
  steer_world *w;
  steer_id ids[BUSY_MAX];
  uint32_t n;
  steer_rng cmd;
  int shared;
} busy;

static steer_id busy_add(busy *b, steer_model model, const steer_behaviour *beh) {
  steer_rng *r = &b->cmd;
  float o = steer_rng_range(r, -3.0f, 3.0f);
  vec2 at = steer_rng_point(r, -50.0f, 50.0f, -50.0f, 50.0f);
  steer_agent_desc d = desc_at(model, at.x, at.y, o);
  d.state.velocity = steer_rng_point(r, -1.0f, 1.0f, -1.0f, 1.0f);
  d.limits.max_speed = steer_rng_range(r, 1.0f, 5.0f);
  d.limits.radius = steer_rng_range(r, 0.2f, 1.0f);
  if (beh)
    d.behaviour = *beh;
  steer_id id = spawn(b->w, &d, (uint32_t)b->n);
  ck_assert_uint_lt(b->n, BUSY_MAX);
  b->ids[b->n++] = id;
  return id;
}

static steer_behaviour busy_flavour(busy *b, steer_behaviour beh) {
  steer_rng *r = &b->cmd;
  uint32_t k = steer_rng_next(r);
  if (k % 3 == 0) {
    beh.separation_weight = steer_rng_range(r, 0.5f, 3.0f);
    beh.combine = (uint8_t)((k >> 4) % STEER_COMBINE_COUNT);
  }
  beh.facing = (uint8_t)((k >> 8) % STEER_FACING_COUNT);
  beh.max_neighbours = (uint8_t)(1 + (k >> 12) % 40);
  return beh;
}

static vec2 rnd_point(steer_rng *r) { return steer_rng_point(r, -55.0f, 55.0f, -55.0f, 55.0f); }

static void busy_path(busy *b, steer_id id, steer_model model, uint32_t variant) {
  vec2 pts[6];
  uint32_t count = 2 + variant % 5;
  for (uint32_t i = 0; i < count; i++)
    pts[i] = rnd_point(&b->cmd);
  steer_path_mode mode = (steer_path_mode)(variant % STEER_PATH_MODE_COUNT);
  steer_cornering corner = model == STEER_MODEL_HEADING
                               ? (steer_cornering)((variant / 3) % STEER_CORNER_COUNT)
                               : STEER_CORNER_NONE;
  ck_assert_int_eq(
      steer_world_set_path(b->w, id, pts, count, steer_rng_range(&b->cmd, 0.5f, 3.0f), mode, corner),
      STEER_OK);
}

static void busy_create(busy *b, uint64_t seed, uint64_t cmd_seed) {
  memset(b, 0, sizeof(*b));
  steer_world_config c = steer_default_world_config();
  c.max_agents = BUSY_MAX;
  c.min = v2(-60.0f, -60.0f);
  c.max = v2(60.0f, 60.0f);
  c.cell_size = 5.0f;
  c.seed = seed;
  b->w = steer_world_create(&c);
  ck_assert_ptr_nonnull(b->w);
  steer_rng_seed(&b->cmd, cmd_seed);
  steer_rng *r = &b->cmd;
  /* Wanderers in every model: moving targets for the rest. */
  steer_id wand[6];
  for (int i = 0; i < 6; i++) {
    steer_behaviour wb = busy_flavour(b, steer_default_behaviour(STEER_BEHAVIOUR_WANDER));
    wand[i] = busy_add(b, (steer_model)(i % 3), &wb);
  }
  /* Dynamic: every behaviour. */
  for (int rep = 0; rep < 3; rep++) {
    for (int kind = STEER_BEHAVIOUR_NONE; kind < STEER_BEHAVIOUR_FOLLOW_PATH; kind++) {
      steer_behaviour beh = steer_default_behaviour((steer_behaviour_kind)kind);
      uint32_t i1 = steer_rng_next(r) % 6, i2 = (i1 + 1 + steer_rng_next(r) % 5) % 6;
      steer_id t1 = wand[i1], t2 = wand[i2];
      int by_agent = (steer_rng_next(r) & 1u) != 0;
      switch (kind) {
      case STEER_BEHAVIOUR_SEEK:
      case STEER_BEHAVIOUR_FLEE:
      case STEER_BEHAVIOUR_ARRIVE:
      case STEER_BEHAVIOUR_FACE:
      case STEER_BEHAVIOUR_ALIGN:
        if (by_agent) {
          beh.target.kind = STEER_TARGET_AGENT;
          beh.target.agent = t1;
        } else {
          beh.target.kind = STEER_TARGET_POINT;
          beh.target.point = rnd_point(r);
          beh.target.orientation = steer_rng_range(r, -3.0f, 3.0f);
        }
        if (kind == STEER_BEHAVIOUR_FLEE && rep == 1)
          beh.params.panic_radius = 20.0f;
        break;
      case STEER_BEHAVIOUR_VELOCITY_MATCH:
      case STEER_BEHAVIOUR_PURSUE:
      case STEER_BEHAVIOUR_EVADE:
      case STEER_BEHAVIOUR_INTERPOSE:
        beh.target.kind = STEER_TARGET_AGENT;
        beh.target.agent = t1;
        beh.target.agent2 = t2;
        break;
      default:
        break;
      }
      beh = busy_flavour(b, beh);
      busy_add(b, STEER_MODEL_DYNAMIC, &beh);
    }
  }
  /* Kinematic and heading: what they can do. */
  const steer_behaviour_kind kin[] = {STEER_BEHAVIOUR_NONE, STEER_BEHAVIOUR_SEEK, STEER_BEHAVIOUR_FLEE,
                                      STEER_BEHAVIOUR_ARRIVE, STEER_BEHAVIOUR_WANDER};
  for (int rep = 0; rep < 2; rep++)
    for (size_t i = 0; i < 5; i++) {
      for (int model = STEER_MODEL_KINEMATIC; model <= STEER_MODEL_HEADING; model += 2) {
        if (model == STEER_MODEL_HEADING && kin[i] == STEER_BEHAVIOUR_FLEE)
          continue;
        steer_behaviour beh = steer_default_behaviour(kin[i]);
        if (kin[i] != STEER_BEHAVIOUR_NONE && kin[i] != STEER_BEHAVIOUR_WANDER) {
          if (rep) {
            beh.target.kind = STEER_TARGET_AGENT;
            beh.target.agent = wand[i];
          } else {
            beh.target.kind = STEER_TARGET_POINT;
            beh.target.point = rnd_point(r);
          }
        }
        busy_add(b, (steer_model)model, &beh);
      }
    }
  /* Own paths: every model, mode and (heading) cornering. */
  for (uint32_t v = 0; v < 18; v++)
    for (int model = 0; model < STEER_MODEL_COUNT; model++) {
      if (model != STEER_MODEL_HEADING && v >= 6)
        continue;
      steer_id id = busy_add(b, (steer_model)model, NULL);
      busy_path(b, id, (steer_model)model, v);
      if (model == STEER_MODEL_DYNAMIC && v % 2) {
        steer_behaviour fp = busy_flavour(b, steer_default_behaviour(STEER_BEHAVIOUR_FOLLOW_PATH));
        ck_assert_int_eq(steer_world_set_behaviour(b->w, id, &fp), STEER_OK);
      }
    }
  /* A shared path with several followers, released at once. */
  vec2 pts[5];
  for (int i = 0; i < 5; i++)
    pts[i] = rnd_point(r);
  b->shared = steer_world_path_create(b->w, pts, 5, 2.0f, STEER_PATH_PINGPONG, STEER_CORNER_NONE);
  ck_assert_int_ge(b->shared, 0);
  for (int i = 0; i < 6; i++) {
    steer_id id = busy_add(b, i % 2 ? STEER_MODEL_KINEMATIC : STEER_MODEL_DYNAMIC, NULL);
    ck_assert_int_eq(steer_world_follow_path(b->w, id, b->shared), STEER_OK);
  }
  ck_assert_int_eq(steer_world_path_release(b->w, b->shared), STEER_OK);
}

/* Commands issued at some ticks: despawns (targets among them), spawns, new
 * behaviours and paths. */
static void busy_commands(busy *b, uint64_t tick) {
  if (tick % 250 != 0)
    return;
  steer_rng *r = &b->cmd;
  uint32_t n = b->n;
  /* Despawn one agent at random (a wanderer now and then: others lose it). */
  uint32_t victim = steer_rng_next(r) % n;
  if (steer_world_alive(b->w, b->ids[victim]))
    ck_assert_int_eq(steer_world_despawn(b->w, b->ids[victim]), STEER_OK);
  /* Give a live agent a new behaviour toward another live agent or a point. */
  uint32_t who = steer_rng_next(r) % n, whom = steer_rng_next(r) % n;
  if (steer_world_alive(b->w, b->ids[who])) {
    steer_agent_info i = info_of(b->w, b->ids[who]);
    steer_behaviour beh = steer_default_behaviour(STEER_BEHAVIOUR_SEEK);
    if (i.model == STEER_MODEL_DYNAMIC && who != whom && steer_world_alive(b->w, b->ids[whom])) {
      beh = beh_agent(STEER_BEHAVIOUR_PURSUE, b->ids[whom], 0);
    } else {
      beh.target.kind = STEER_TARGET_POINT;
      beh.target.point = rnd_point(r);
    }
    ck_assert_int_eq(steer_world_set_behaviour(b->w, b->ids[who], &beh), STEER_OK);
    if (tick % 1000 == 0)
      busy_path(b, b->ids[who], (steer_model)i.model, steer_rng_next(r) % 18);
  }
  /* Spawn a replacement. */
  if (b->n < BUSY_MAX) {
    steer_behaviour wb = busy_flavour(b, steer_default_behaviour(STEER_BEHAVIOUR_WANDER));
    busy_add(b, (steer_model)(steer_rng_next(r) % 3), &wb);
  }
}

static void busy_run(busy *b, int ticks, uint64_t *hashes, int every) {
  for (int t = 1; t <= ticks; t++) {
    steer_world_step(b->w, DT);
    busy_commands(b, steer_world_tick(b->w));
    if (hashes && t % every == 0)
      hashes[t / every - 1] = steer_world_hash(b->w);
  }
}

START_TEST(test_determinism) {
  enum { TICKS = 10000, EVERY = 500 };
  static uint64_t ha[TICKS / EVERY], hb[TICKS / EVERY], hc[TICKS / EVERY];
  busy a, b, c;
  busy_create(&a, 42, 7);
  busy_create(&b, 42, 7);
  busy_create(&c, 43, 7);
  ck_assert_uint_eq(steer_world_hash(a.w), steer_world_hash(b.w));
  ck_assert_uint_ne(steer_world_hash(a.w), steer_world_hash(c.w)); /* per-agent generators differ */
  ck_assert_uint_gt(steer_world_count(a.w), 90);
  busy_run(&a, TICKS, ha, EVERY);
  busy_run(&b, TICKS, hb, EVERY);
  busy_run(&c, TICKS, hc, EVERY);
  for (int i = 0; i < TICKS / EVERY; i++) {
    ck_assert_msg(ha[i] == hb[i], "same seed, hashes differ at tick %d", (i + 1) * EVERY);
    ck_assert_msg(ha[i] != hc[i], "different seeds, same hash at tick %d", (i + 1) * EVERY);
  }
  ck_assert_uint_eq(steer_world_tick(a.w), TICKS);
  ck_assert_uint_eq(steer_world_count(a.w), steer_world_count(b.w));
  /* Same hash, same state: compare every agent's full state too. */
  steer_world_view va = steer_world_get_view(a.w), vb = steer_world_get_view(b.w);
  for (uint32_t i = 0; i < va.count; i++) {
    ck_assert_uint_eq(va.id[i], vb.id[i]);
    ck_assert(memcmp(&va.px[i], &vb.px[i], sizeof(float)) == 0 &&
              memcmp(&va.py[i], &vb.py[i], sizeof(float)) == 0);
  }
  assert_state_finite_inside(a.w);
  assert_state_finite_inside(c.w);
  /* The crowd really moved about. */
  float moving = 0.0f;
  for (uint32_t i = 0; i < va.count; i++)
    moving += sqrtf(va.vx[i] * va.vx[i] + va.vy[i] * va.vy[i]);
  ck_assert(moving > 10.0f);
  steer_world_destroy(a.w);
  steer_world_destroy(b.w);
  steer_world_destroy(c.w);
}
END_TEST

/* The hash sees every agent's position, to the last bit. */
START_TEST(test_hash_sensitivity) {
  enum { N = 24 };
  uint64_t hs[2 * N + 1];
  for (int k = -1; k < 2 * N; k++) {
    steer_world *w = make_world(N, 9);
    for (int i = 0; i < N; i++) {
      float x = -30.0f + 2.5f * (float)i, y = 1.0f + 0.5f * (float)i;
      if (k == i)
        x = nextafterf(x, INFINITY);
      if (k == N + i)
        y = nextafterf(y, -INFINITY);
      spawn_b(w, (steer_model)(i % 3), x, y, 0.0f, NULL);
    }
    hs[k + 1] = steer_world_hash(w);
    steer_world_destroy(w);
  }
  for (int i = 0; i < 2 * N + 1; i++)
    for (int j = 0; j < i; j++)
      ck_assert_msg(hs[i] != hs[j], "hash collision between variants %d and %d", i - 1, j - 1);
  /* A step changes the hash (the tick at least), even when nothing moves. */
  steer_world *w = make_world(4, 9);
  spawn_b(w, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL);
  uint64_t h = steer_world_hash(w);
  ck_assert_uint_eq(steer_world_hash(w), h);
  steer_world_step(w, DT);
  ck_assert_uint_ne(steer_world_hash(w), h);
  steer_world_destroy(w);
}
END_TEST

/* The same spawns and despawns in the same order give the same hash; the same
 * despawns in another order leave the agents listed in another order (the view
 * shows it), which the hash must tell apart. */
START_TEST(test_hash_spawn_order) {
  uint64_t h[3];
  for (int v = 0; v < 3; v++) {
    steer_world *w = make_world(16, 5);
    steer_id ids[10];
    for (int i = 0; i < 10; i++) {
      steer_behaviour beh = beh_point(STEER_BEHAVIOUR_SEEK, (float)i, 0.0f);
      ids[i] = spawn_b(w, (steer_model)(i % 3), (float)i, (float)i, 0.0f, &beh);
    }
    ck_assert_int_eq(steer_world_despawn(w, ids[v == 2 ? 7 : 3]), STEER_OK);
    ck_assert_int_eq(steer_world_despawn(w, ids[v == 2 ? 3 : 7]), STEER_OK);
    spawn_b(w, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL);
    run(w, 50);
    h[v] = steer_world_hash(w);
    steer_world_destroy(w);
  }
  ck_assert_uint_eq(h[0], h[1]);
  ck_assert_uint_ne(h[0], h[2]);
}
END_TEST

/* ---- no heap traffic inside a step --------------------------------------- */

START_TEST(test_step_no_allocation) {
  busy b;
  busy_create(&b, 1, 2);
  /* glibc keeps freed small chunks in per-size caches that mallinfo2 counts as
   * allocated, so a malloc + free inside a step would go unseen if the cache
   * already held a chunk of its size. Empty the caches first (keeping the chunks
   * until the end): then even a transient small allocation raises uordblks. A
   * transient large one (beyond the caches, over 1 KiB) is seen only if it leaks. */
  enum { SIZES = 64, PER_SIZE = 16 };
  static void *hold[SIZES * PER_SIZE];
  for (int i = 0; i < SIZES * PER_SIZE; i++) {
    hold[i] = malloc((size_t)(i / PER_SIZE + 1) * 16u);
    ck_assert_ptr_nonnull(hold[i]);
  }
  size_t before = mallinfo2().uordblks;
  size_t max_seen = before, min_seen = before;
  for (int t = 0; t < 1000; t++) {
    steer_world_step(b.w, DT);
    size_t now = mallinfo2().uordblks;
    if (now > max_seen)
      max_seen = now;
    if (now < min_seen)
      min_seen = now;
  }
  size_t after = mallinfo2().uordblks;
  if (!TEST_MALLOC_REPLACED) {
    ck_assert_msg(after == before && max_seen == before && min_seen == before,
                  "allocated bytes moved during steps: %zu -> %zu (min %zu, max %zu)", before, after,
                  min_seen, max_seen);
    /* Sanity: the probe does see an allocation. */
    static void *volatile probe; /* volatile: the compiler may not drop the pair */
    probe = malloc(4096);
    ck_assert_ptr_nonnull(probe);
    ck_assert_uint_gt(mallinfo2().uordblks, before);
    free(probe);
  }
  for (int i = 0; i < SIZES * PER_SIZE; i++)
    free(hold[i]);
  /* The steps did run a busy world. */
  uint32_t moving = 0;
  steer_world_view v = steer_world_get_view(b.w);
  for (uint32_t i = 0; i < v.count; i++)
    moving += v.vx[i] != 0.0f || v.vy[i] != 0.0f;
  ck_assert_uint_gt(moving, v.count / 4);
  assert_state_finite_inside(b.w);
  steer_world_destroy(b.w);
}
END_TEST

/* ---- queries ------------------------------------------------------------- */

static void check_radius_query(const steer_world *w, vec2 centre, float radius, uint32_t max) {
  steer_world_view v = steer_world_get_view(w);
  steer_id out[512];
  ck_assert_uint_le(max, 512);
  uint32_t n = steer_world_query_radius(w, centre, radius, out, max);
  /* Brute force over the current positions. */
  uint32_t inside = 0;
  float r2 = radius * radius;
  for (uint32_t i = 0; i < v.count; i++) {
    float dx = v.px[i] - centre.x, dy = v.py[i] - centre.y;
    inside += dx * dx + dy * dy < r2;
  }
  ck_assert_msg(n == (inside < max ? inside : max), "query (%g,%g) r=%g: %u ids, %u agents inside",
                (double)centre.x, (double)centre.y, (double)radius, n, inside);
  float prev = -1.0f, last = 0.0f;
  for (uint32_t k = 0; k < n; k++) {
    int found = -1;
    for (uint32_t i = 0; i < v.count; i++)
      if (v.id[i] == out[k])
        found = (int)i;
    ck_assert_msg(found >= 0, "query returned id %u, which is not live", out[k]);
    for (uint32_t j = 0; j < k; j++)
      ck_assert_uint_ne(out[j], out[k]);
    float dx = v.px[found] - centre.x, dy = v.py[found] - centre.y;
    float d2 = dx * dx + dy * dy;
    ck_assert_msg(d2 < r2, "id %u at distance %g outside radius %g", out[k], (double)sqrtf(d2),
                  (double)radius);
    ck_assert_msg(d2 >= prev, "not nearest first");
    prev = last = d2;
  }
  /* Nobody left out is nearer than the farthest returned. */
  if (n == max) {
    for (uint32_t i = 0; i < v.count; i++) {
      float dx = v.px[i] - centre.x, dy = v.py[i] - centre.y;
      float d2 = dx * dx + dy * dy;
      if (d2 < last) {
        int listed = 0;
        for (uint32_t k = 0; k < n; k++)
          listed |= out[k] == v.id[i];
        ck_assert_msg(listed, "id %u nearer than the farthest returned but missing", v.id[i]);
      }
    }
  }
}

START_TEST(test_query_radius) {
  steer_world *w = make_world(300, 4);
  steer_rng r;
  steer_rng_seed(&r, 77);
  steer_id ids[300];
  for (int i = 0; i < 300; i++) {
    steer_behaviour wb = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
    vec2 at = steer_rng_point(&r, -30.0f, 30.0f, -30.0f, 30.0f);
    ids[i] = spawn_b(w, (steer_model)(i % 3), at.x, at.y, 0.0f, &wb);
  }
  /* Known layout first: three agents on a line from the centre. */
  steer_world *s = make_world(8, 1);
  steer_id far = spawn_b(s, STEER_MODEL_DYNAMIC, 5.0f, 0.0f, 0.0f, NULL);
  steer_id near = spawn_b(s, STEER_MODEL_DYNAMIC, 1.0f, 0.0f, 0.0f, NULL);
  steer_id mid = spawn_b(s, STEER_MODEL_DYNAMIC, 0.0f, -3.0f, 0.0f, NULL);
  steer_world_step(s, DT);
  steer_id out[4];
  ck_assert_uint_eq(steer_world_query_radius(s, v2(0, 0), 10.0f, out, 4), 3);
  ck_assert_uint_eq(out[0], near);
  ck_assert_uint_eq(out[1], mid);
  ck_assert_uint_eq(out[2], far);
  ck_assert_uint_eq(steer_world_query_radius(s, v2(0, 0), 4.0f, out, 4), 2);
  ck_assert_uint_eq(steer_world_query_radius(s, v2(0, 0), 10.0f, out, 1), 1);
  ck_assert_uint_eq(out[0], near);
  ck_assert_uint_eq(steer_world_query_radius(s, v2(0, 0), 0.5f, out, 4), 0);
  ck_assert_uint_eq(steer_world_query_radius(s, v2(0, 0), 10.0f, out, 0), 0);
  steer_world_destroy(s);

  /* A moving crowd, queried after each step, after despawns and after spawns. */
  for (int round = 0; round < 30; round++) {
    steer_world_step(w, DT);
    for (int q = 0; q < 10; q++) {
      vec2 c = steer_rng_point(&r, -70.0f, 70.0f, -70.0f, 70.0f);
      uint32_t max = 1 + steer_rng_next(&r) % 64; /* drawn before the radius, as GCC did */
      check_radius_query(w, c, steer_rng_range(&r, 0.5f, 40.0f), max);
    }
    if (round % 3 == 1) {
      for (int k = 0; k < 5; k++) {
        uint32_t i = steer_rng_next(&r) % 300;
        if (steer_world_alive(w, ids[i]))
          ck_assert_int_eq(steer_world_despawn(w, ids[i]), STEER_OK);
      }
      steer_world_view v = steer_world_get_view(w);
      check_radius_query(w, v2(v.px[0], v.py[0]), 20.0f, 256);
      check_radius_query(w, v2(0.0f, 0.0f), 100.0f, 256);
      spawn_b(w, STEER_MODEL_DYNAMIC, steer_rng_range(&r, -30.0f, 30.0f), 0.0f, 0.0f, NULL);
      check_radius_query(w, v2(0.0f, 0.0f), 100.0f, 256);
    }
  }
  steer_world_destroy(w);
}
END_TEST

/* The neighbour query reaches as far as any neighbour can push: a big agent
 * whose reach (separation_radius + both radii) covers a small one pushes it,
 * although it is farther than separation_radius + twice the small radius. */
START_TEST(test_separation_big_neighbour) {
  steer_world *w = make_world(8, 1);
  steer_behaviour none = steer_default_behaviour(STEER_BEHAVIOUR_NONE);
  none.separation_weight = 1.0f;
  steer_id small = spawn_b(w, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, &none);
  steer_agent_desc d = desc_at(STEER_MODEL_DYNAMIC, 4.0f, 0.0f, 0.0f);
  d.limits.radius = 3.0f;
  steer_id big = spawn(w, &d, 0);
  /* 4 m apart: beyond 2 + 2 * 0.5, within 2 + 0.5 + 3. */
  steer_world_step(w, DT);
  ck_assert_msg(info_of(w, small).state.velocity.x < 0.0f, "small agent not pushed: vx %g",
                (double)info_of(w, small).state.velocity.x);
  /* When the big one shrinks, the reach is back to the small radii. */
  steer_limits l = info_of(w, big).limits;
  l.radius = 0.5f;
  ck_assert_int_eq(steer_world_set_limits(w, big, &l), STEER_OK);
  steer_behaviour brake = steer_default_behaviour(STEER_BEHAVIOUR_NONE);
  ck_assert_int_eq(steer_world_set_behaviour(w, small, &brake), STEER_OK);
  run(w, 120);
  ck_assert_int_eq(steer_world_set_behaviour(w, small, &none), STEER_OK);
  ck_assert_float_ge(dist_of(w, small, big), 3.0f + 1e-3f);
  vec2 v0 = info_of(w, small).state.velocity;
  steer_world_step(w, DT);
  /* Only braking now: the speed does not grow. */
  ck_assert_float_le(v2_len(info_of(w, small).state.velocity), v2_len(v0));
  steer_world_destroy(w);
}
END_TEST

/* Interpose needs two different agents. */
START_TEST(test_interpose_same_agent) {
  steer_world *w = make_world(8, 1);
  steer_id a = spawn_b(w, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL);
  steer_id b = spawn_b(w, STEER_MODEL_DYNAMIC, 5.0f, 0.0f, 0.0f, NULL);
  steer_id c = spawn_b(w, STEER_MODEL_DYNAMIC, 0.0f, 5.0f, 0.0f, NULL);
  steer_behaviour bad = beh_agent(STEER_BEHAVIOUR_INTERPOSE, b, b);
  ck_assert_int_eq(steer_world_set_behaviour(w, a, &bad), STEER_ETARGET);
  steer_agent_desc d = desc_at(STEER_MODEL_DYNAMIC, 1.0f, 1.0f, 0.0f);
  d.behaviour = bad;
  ck_assert_int_eq(steer_world_spawn(w, &d, 0, NULL), STEER_ETARGET);
  steer_behaviour good = beh_agent(STEER_BEHAVIOUR_INTERPOSE, b, c);
  ck_assert_int_eq(steer_world_set_behaviour(w, a, &good), STEER_OK);
  steer_world_destroy(w);
}
END_TEST

/* Worlds that hash equal hand out the same ids and path handles next: the hash
 * covers slot generations, the free-slot ring and the free-path stack. */
START_TEST(test_hash_free_lists) {
  steer_world *a = make_world(2, 9), *b = make_world(2, 9);
  steer_id a1 = spawn_b(a, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL);
  steer_id a2 = spawn_b(a, STEER_MODEL_DYNAMIC, 1.0f, 0.0f, 0.0f, NULL);
  steer_id b1 = spawn_b(b, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL);
  steer_id b2 = spawn_b(b, STEER_MODEL_DYNAMIC, 1.0f, 0.0f, 0.0f, NULL);
  ck_assert_uint_eq(steer_world_hash(a), steer_world_hash(b));
  /* The same agents gone in another order: their slots come back in another order. */
  ck_assert_int_eq(steer_world_despawn(a, a1), STEER_OK);
  ck_assert_int_eq(steer_world_despawn(a, a2), STEER_OK);
  ck_assert_int_eq(steer_world_despawn(b, b2), STEER_OK);
  ck_assert_int_eq(steer_world_despawn(b, b1), STEER_OK);
  ck_assert_uint_ne(steer_world_hash(a), steer_world_hash(b));
  steer_id na = spawn_b(a, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL);
  steer_id nb = spawn_b(b, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL);
  ck_assert_uint_ne(na, nb);
  steer_world_destroy(a);
  steer_world_destroy(b);

  /* Slot generations: two one-slot worlds, one of which has used its slot, so the
   * generator states differ too; equalise them with a spawn in the other. */
  a = make_world(2, 9);
  b = make_world(2, 9);
  steer_id x = spawn_b(a, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL);
  ck_assert_int_eq(steer_world_despawn(a, x), STEER_OK);                /* slot 0 gen 2, ring [1, 0] */
  steer_id y = spawn_b(a, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL); /* slot 1 */
  ck_assert_int_eq(steer_world_despawn(a, y), STEER_OK);                /* ring [0, 1], gens 2, 2 */
  x = spawn_b(b, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL);
  y = spawn_b(b, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL);
  ck_assert_int_eq(steer_world_despawn(b, x), STEER_OK);
  ck_assert_int_eq(steer_world_despawn(b, y), STEER_OK); /* ring [0, 1], gens 2, 2 */
  ck_assert_uint_eq(steer_world_hash(a), steer_world_hash(b));
  ck_assert_uint_eq(spawn_b(a, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL),
                    spawn_b(b, STEER_MODEL_DYNAMIC, 0.0f, 0.0f, 0.0f, NULL));
  steer_world_destroy(a);
  steer_world_destroy(b);

  /* Paths released in another order: the next handles differ. */
  a = make_world(2, 9);
  b = make_world(2, 9);
  const vec2 pts[] = {{0, 0}, {10, 0}};
  int pa[2], pb[2];
  for (int i = 0; i < 2; i++) {
    pa[i] = steer_world_path_create(a, pts, 2, 1.0f, STEER_PATH_LOOP, STEER_CORNER_NONE);
    pb[i] = steer_world_path_create(b, pts, 2, 1.0f, STEER_PATH_LOOP, STEER_CORNER_NONE);
  }
  ck_assert_uint_eq(steer_world_hash(a), steer_world_hash(b));
  ck_assert_int_eq(steer_world_path_release(a, pa[0]), STEER_OK);
  ck_assert_int_eq(steer_world_path_release(a, pa[1]), STEER_OK);
  ck_assert_int_eq(steer_world_path_release(b, pb[1]), STEER_OK);
  ck_assert_int_eq(steer_world_path_release(b, pb[0]), STEER_OK);
  ck_assert_uint_ne(steer_world_hash(a), steer_world_hash(b));
  ck_assert_int_ne(steer_world_path_create(a, pts, 2, 1.0f, STEER_PATH_LOOP, STEER_CORNER_NONE),
                   steer_world_path_create(b, pts, 2, 1.0f, STEER_PATH_LOOP, STEER_CORNER_NONE));
  steer_world_destroy(a);
  steer_world_destroy(b);
}
END_TEST

/* A query returns as many agents as asked for: there is no internal cap. */
START_TEST(test_query_radius_no_cap) {
  steer_world *w = make_world(400, 3);
  for (int i = 0; i < 400; i++)
    spawn_b(w, STEER_MODEL_DYNAMIC, (float)(i % 20) - 10.0f, (float)(i / 20) - 10.0f, 0.0f, NULL);
  static steer_id out[400];
  ck_assert_uint_eq(steer_world_query_radius(w, v2(0.0f, 0.0f), 100.0f, out, 400), 400);
  check_radius_query(w, v2(0.0f, 0.0f), 100.0f, 300);
  steer_world_step(w, DT);
  ck_assert_uint_eq(steer_world_query_radius(w, v2(0.0f, 0.0f), 100.0f, out, 400), 400);
  check_radius_query(w, v2(1.0f, 0.5f), 8.0f, 300);
  steer_world_destroy(w);
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

static Suite *world_suite(void) {
  Suite *s = suite_create("world");
  TCase *tc = check_tcase(s, "ids", 120);
  tcase_add_test(tc, test_ids_never_reused);
  tcase_add_test(tc, test_ids_unknown);
  tcase_add_test(tc, test_capacity);
  tcase_add_test(tc, test_despawn_swap_remove);
  tc = check_tcase(s, "validation", 120);
  tcase_add_test(tc, test_validation);
  tcase_add_test(tc, test_create_config);
  tc = check_tcase(s, "step", 120);
  tcase_add_test(tc, test_steering_reads_previous_tick);
  tcase_add_test(tc, test_mutual_pursuit_symmetric);
  tcase_add_test(tc, test_lost_target_comes_to_rest);
  tc = check_tcase(s, "events", 120);
  tcase_add_test(tc, test_event_arrived_once);
  tcase_add_test(tc, test_event_pingpong);
  tcase_add_test(tc, test_event_once_and_loop);
  tcase_add_loop_test(tc, test_event_overflow, 0, 1);
  tcase_add_loop_test(tc, test_event_overflow, 3, 4);
  tc = check_tcase(s, "paths", 120);
  tcase_add_test(tc, test_path_own_freed);
  tcase_add_test(tc, test_path_shared);
  tcase_add_test(tc, test_path_pool_full);
  tcase_add_test(tc, test_interpose_same_agent);
  tc = check_tcase(s, "separation", 120);
  tcase_add_test(tc, test_separation);
  tcase_add_test(tc, test_separation_priority);
  tcase_add_test(tc, test_separation_big_neighbour);
  tcase_add_test(tc, test_world_walls);
  tc = check_tcase(s, "determinism", 120);
  tcase_add_test(tc, test_determinism);
  tcase_add_test(tc, test_hash_sensitivity);
  tcase_add_test(tc, test_hash_spawn_order);
  tcase_add_test(tc, test_hash_free_lists);
  tcase_add_test(tc, test_step_no_allocation);
  tc = check_tcase(s, "query", 120);
  tcase_add_test(tc, test_query_radius);
  tcase_add_test(tc, test_query_radius_no_cap);
  return s;
}

int main(void) { return check_run(world_suite()); }

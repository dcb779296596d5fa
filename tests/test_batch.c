/* test_batch.c: the vector path's lean batches (server/core/batch.c) against
 * the scalar reference, lane by lane, at both widths.
 *
 * A lean batch steps a whole agent (steering, integration, the world's edge,
 * the events precheck) for eight lanes with AVX or four with SSE2. Called
 * directly on agents whose states hit the kernels' corners (angles that wrap,
 * zero velocities, a target under the agent, the world's edge, arc turns,
 * final legs), it must do every lane (the returned mask: the vector path
 * really ran, eight wide where the processor has AVX) and leave each agent's
 * state, wander angle and generator bit for bit as the scalar step does; lanes
 * outside the vector path's exact range (NaN, an angle error beyond 9 rad, an
 * orientation beyond 1e5 rad, two zeros at fmaxf) must be left to the scalar
 * path, untouched. And the cache the batches read (w->bkind, w->brec) must
 * follow every change of model, behaviour, parameters, limits and tuning,
 * despawns and a save and load. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check_run.h"
#include "world.h"
#include "world_internal.h"

#define DT 0.05f

static steer_world *new_world(uint32_t n) {
  steer_world_config cfg = steer_default_world_config();
  cfg.max_agents = n;
  cfg.max_paths = 8;
  cfg.max_path_points = 8;
  cfg.max_events = 4 * n;
  cfg.min = v2(0.0f, 0.0f);
  cfg.max = v2(100.0f, 100.0f);
  cfg.cell_size = 8.0f;
  cfg.seed = 5;
  steer_world *w = steer_world_create(&cfg);
  ck_assert_ptr_nonnull(w);
  return w;
}

static steer_id spawn(steer_world *w, uint8_t model, steer_behaviour b, vec2 p, float theta, vec2 v) {
  steer_agent_desc d = steer_default_agent_desc();
  d.model = model;
  d.behaviour = b;
  d.state.position = p;
  d.state.orientation = theta;
  d.state.velocity = v;
  steer_id id;
  ck_assert_int_eq(steer_world_spawn(w, &d, 0, &id), STEER_OK);
  return id;
}

/* Eight agents of one lean kind (kind: 1 arrive + look, 2 wander, 3 heading
 * path follower), their states at the kernels' corners. */
static steer_world *corner_world(int kind) {
  steer_world *w = new_world(8);
  int paths[3] = {-1, -1, -1};
  if (kind == BATCH_PATH_HEADING) {
    const vec2 zig[4] = {{30.0f, 30.0f}, {50.0f, 40.0f}, {70.0f, 30.0f}, {90.0f, 40.0f}};
    const vec2 one[1] = {{60.0f, 60.0f}};
    paths[0] = steer_world_path_create(w, zig, 4, 1.0f, STEER_PATH_PINGPONG, STEER_CORNER_ARC);
    paths[1] = steer_world_path_create(w, zig, 4, 1.0f, STEER_PATH_ONCE, STEER_CORNER_NONE);
    paths[2] = steer_world_path_create(w, one, 1, 1.0f, STEER_PATH_LOOP, STEER_CORNER_ARC);
    for (int k = 0; k < 3; k++)
      ck_assert_int_ge(paths[k], 0);
  }
  for (uint32_t i = 0; i < 8; i++) {
    steer_behaviour b =
        steer_default_behaviour(kind == BATCH_WANDER ? STEER_BEHAVIOUR_WANDER : STEER_BEHAVIOUR_ARRIVE);
    b.target.kind = STEER_TARGET_POINT;
    b.target.point = v2(20.0f + 7.0f * (float)i, 80.0f - 5.0f * (float)i);
    vec2 p = v2(10.0f + 9.0f * (float)i, 20.0f + 3.0f * (float)i);
    float theta = -3.0f + 0.8f * (float)i;
    vec2 v = v2(1.5f * cosf((float)i), 1.5f * sinf((float)i));
    switch (i) {
    case 0: /* at rest: look-where-going brakes */
      v = v2(0.0f, 0.0f);
      break;
    case 1: /* orientation next to pi, turning over it: the wrap */
      theta = 3.14f;
      v = v2(-1.0f, 0.05f);
      break;
    case 2: /* on its target: no direction */
      p = b.target.point;
      break;
    case 3: /* at the world's edge, running out */
      p = v2(0.0f, 50.0f);
      v = v2(-2.0f, 0.5f);
      theta = 3.0f;
      break;
    case 4: /* inside the target radius */
      p = v2(b.target.point.x + 0.2f, b.target.point.y);
      break;
    case 5: /* orientation just above -pi */
      theta = -3.14159f;
      v = v2(-1.0f, -0.01f);
      break;
    default:
      break;
    }
    if (kind == BATCH_PATH_HEADING)
      b = steer_default_behaviour(STEER_BEHAVIOUR_NONE);
    steer_id id =
        spawn(w, kind == BATCH_PATH_HEADING ? STEER_MODEL_HEADING : STEER_MODEL_DYNAMIC, b, p, theta, v);
    if (kind == BATCH_PATH_HEADING)
      ck_assert_int_eq(steer_world_follow_path(w, id, paths[i % 3]), STEER_OK);
  }
  if (kind == BATCH_PATH_HEADING) {
    /* Agent 0 in an arc turn, agent 4 on the last leg of its once path,
     * agent 6 near a node (the gain rises within 1 m). */
    w->cursor[0].turn_time_left = 0.3f;
    w->cursor[0].turn_rate = -1.2f;
    w->cursor[4].node = 3;
    w->px[6] = 50.4f;
    w->py[6] = 40.3f;
    w->cursor[6].node = 1;
  }
  if (kind == BATCH_WANDER)
    for (uint32_t i = 0; i < 8; i++) /* wander angles that wrap */
      w->wander[i] = i % 2 ? 3.1f : -3.1f;
  for (uint32_t i = 0; i < 8; i++)
    ck_assert_uint_eq(w->bkind[i], (uint8_t)kind); /* lean: no flags */
  return w;
}

/* The per-agent state a lean batch writes. */
static void same_agent(const steer_world *a, const steer_world *b, uint32_t d, const char *what) {
  const float fa[7] = {a->px[d], a->py[d], a->vx[d], a->vy[d], a->theta[d], a->omega[d], a->wander[d]};
  const float fb[7] = {b->px[d], b->py[d], b->vx[d], b->vy[d], b->theta[d], b->omega[d], b->wander[d]};
  ck_assert_msg(memcmp(fa, fb, sizeof fa) == 0, "%s: agent %u's state differs (px %.9g/%.9g theta %.9g/%.9g)",
                what, d, (double)fa[0], (double)fb[0], (double)fa[4], (double)fb[4]);
  ck_assert_msg(a->arng[d].state == b->arng[d].state, "%s: agent %u's generator differs", what, d);
}

/* Runs lean batches of world_batch_width() over the corner worlds (several
 * steps, so the states move through the corners) and compares each agent
 * with a scalar twin after every step; returns the lanes done. */
static uint32_t lanes_against_scalar(int kind) {
  steer_world *vec = corner_world(kind), *ref = corner_world(kind);
  steer_world_set_simd(ref, 0);
  const uint32_t width = world_batch_width();
  uint32_t done = 0;
  for (int t = 0; t < 40; t++) {
    uint32_t dd[8];
    for (uint32_t i = 0; i < 8; i++)
      dd[i] = i;
    for (uint32_t at = 0; at < 8; at += width) {
      unsigned did = world_batch_lean(vec, DT, kind, dd + at, width);
      ck_assert_msg(did == (1u << width) - 1u, "kind %d tick %d: lanes %#x of %u done", kind, t, did, width);
      done += width;
    }
    steer_world_step(ref, DT);
    for (uint32_t d = 0; d < 8; d++)
      same_agent(vec, ref, d, kind == 1 ? "arrive" : kind == 2 ? "wander" : "path");
    /* The batch does the events pass's precheck; the pass itself runs on
     * the scalar twin only, so the twin's cursor and arrivals are copied
     * back (they are what the next steering reads). */
    memcpy(vec->cursor, ref->cursor, 8 * sizeof(*vec->cursor));
    memcpy(vec->arrived, ref->arrived, 8);
  }
  steer_world_destroy(vec);
  steer_world_destroy(ref);
  return done;
}

START_TEST(test_lean_lanes_match_scalar) {
  /* _i: 0 the widest the processor has (8 with AVX), 1 four lanes */
  int was = world_batch_set_avx(_i == 0);
  ck_assert_uint_eq(world_batch_width(), _i == 0 && world_batch_avx_supported() ? 8u : 4u);
  for (int kind = BATCH_ARRIVE_LOOK; kind <= BATCH_PATH_HEADING; kind++)
    ck_assert_uint_eq(lanes_against_scalar(kind), 40u * 8u);
  world_batch_set_avx(was);
}
END_TEST

/* Lanes outside the exact range go back untouched; the rest are done. A
 * whole step with them matches the scalar step (the scalar path redoes
 * them). */
static void poison(steer_world *w, int kind) {
  w->vx[1] = NAN;      /* NaN */
  w->theta[3] = 50.0f; /* an angle error beyond 9 rad (arrive), a wrap beyond it */
  w->theta[5] = 2e5f;  /* beyond steer_sincos's range */
  if (kind == BATCH_PATH_HEADING) {
    /* On the last leg exactly half a node radius from the node: fmaxf of two zeros. */
    w->cursor[7].node = 3;
    w->px[7] = 90.5f;
    w->py[7] = 40.0f;
  }
  if (kind == BATCH_ARRIVE_LOOK) { /* a velocity whose square overflows */
    w->vx[7] = 3e19f;
    w->vy[7] = 1e19f;
  }
}

START_TEST(test_lean_redo_lanes_untouched) {
  int was = world_batch_set_avx(_i == 0);
  const uint32_t width = world_batch_width();
  for (int kind = BATCH_ARRIVE_LOOK; kind <= BATCH_PATH_HEADING; kind++) {
    steer_world *vec = corner_world(kind), *ref = corner_world(kind), *whole = corner_world(kind);
    poison(vec, kind);
    poison(ref, kind);
    poison(whole, kind);
    steer_world_set_simd(ref, 0);
    uint32_t dd[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    unsigned did = 0;
    for (uint32_t at = 0; at < 8; at += width)
      did |= world_batch_lean(vec, DT, kind, dd + at, width) << at;
    /* Out of the exact range: a NaN (1: its sign and payload are the
     * compiled scalar code's own), an angle error or a wrap beyond 9 rad
     * (3), an orientation beyond sincos' range or an error beyond 9 rad (5),
     * a square that overflows (7, arrive) or fmaxf of two zeros (7, path).
     * The others are done. */
    unsigned must_redo = (1u << 1) | (1u << 3) | (1u << 5) | (kind != BATCH_WANDER ? 1u << 7 : 0u);
    ck_assert_msg(did == (0xffu & ~must_redo), "kind %d: lanes done %#x, expected %#x", kind, did,
                  0xffu & ~must_redo);
    steer_world_step(ref, DT);
    for (uint32_t d = 0; d < 8; d++) {
      if (did & (1u << d)) {
        same_agent(vec, ref, d, "a lane done");
      } else { /* untouched: still the poisoned start */
        ck_assert(memcmp(&vec->px[d], &whole->px[d], sizeof(float)) == 0);
        ck_assert(memcmp(&vec->vx[d], &whole->vx[d], sizeof(float)) == 0);
        ck_assert(memcmp(&vec->theta[d], &whole->theta[d], sizeof(float)) == 0);
        ck_assert(memcmp(&vec->omega[d], &whole->omega[d], sizeof(float)) == 0);
        ck_assert(memcmp(&vec->wander[d], &whole->wander[d], sizeof(float)) == 0);
        ck_assert_uint_eq(vec->arng[d].state, whole->arng[d].state);
      }
    }
    /* A whole vector step (lean batches, the scalar path for the rest) is
     * the scalar step. */
    steer_world_step(whole, DT);
    for (uint32_t d = 0; d < 8; d++)
      same_agent(whole, ref, d, "whole step");
    steer_world_destroy(vec);
    steer_world_destroy(ref);
    steer_world_destroy(whole);
  }
  world_batch_set_avx(was);
}
END_TEST

/* Short batches (fewer agents than lanes) repeat the last agent in the spare
 * lanes: only the agents given are written. */
START_TEST(test_lean_short_batches) {
  for (uint32_t n = 1; n <= world_batch_width(); n++) {
    steer_world *vec = corner_world(BATCH_WANDER), *ref = corner_world(BATCH_WANDER),
                *ref_all = corner_world(BATCH_WANDER);
    steer_world_set_simd(ref_all, 0);
    uint32_t dd[8] = {6, 2, 4, 0, 7, 1, 3, 5};
    ck_assert_uint_eq(world_batch_lean(vec, DT, BATCH_WANDER, dd, n), (1u << n) - 1u);
    steer_world_step(ref_all, DT);
    for (uint32_t i = 0; i < 8; i++) {
      uint32_t d = dd[i];
      same_agent(vec, i < n ? ref_all : ref, d, i < n ? "a batch's agent" : "an agent outside the batch");
    }
    steer_world_destroy(vec);
    steer_world_destroy(ref);
    steer_world_destroy(ref_all);
  }
}
END_TEST

/* ---- the cache -------------------------------------------------------------- */

/* Every agent's cached kind and record equal what its behaviour gives now. */
static void cache_fresh(steer_world *w, const char *what) {
  for (uint32_t d = 0; d < w->count; d++) {
    uint8_t kind = w->bkind[d];
    world_batch_rec rec = w->brec[d];
    world_batch_refresh(w, d);
    ck_assert_msg(kind == w->bkind[d], "%s: agent %u's cached kind %u, now %u", what, d, kind, w->bkind[d]);
    ck_assert_msg(memcmp(&rec, &w->brec[d], sizeof rec) == 0, "%s: agent %u's cached record is stale", what,
                  d);
  }
}

START_TEST(test_cache_follows_changes) {
  steer_world *w = new_world(16);
  const vec2 zig[3] = {{30.0f, 30.0f}, {50.0f, 40.0f}, {70.0f, 30.0f}};
  int path = steer_world_path_create(w, zig, 3, 1.0f, STEER_PATH_LOOP, STEER_CORNER_ARC);
  ck_assert_int_ge(path, 0);
  steer_id id[12];
  for (uint32_t i = 0; i < 12; i++) {
    steer_behaviour b = steer_default_behaviour(i % 3 == 1 ? STEER_BEHAVIOUR_WANDER : STEER_BEHAVIOUR_ARRIVE);
    b.target.kind = STEER_TARGET_POINT;
    b.target.point = v2(10.0f + (float)i, 60.0f);
    id[i] = spawn(w, i % 3 == 2 ? STEER_MODEL_HEADING : STEER_MODEL_DYNAMIC, b,
                  v2(5.0f + 6.0f * (float)i, 10.0f), 0.1f * (float)i, v2(0.0f, 0.0f));
    if (i % 3 == 2)
      ck_assert_int_eq(steer_world_follow_path(w, id[i], path), STEER_OK);
  }
  cache_fresh(w, "spawn, follow_path");
  ck_assert_uint_eq(w->bkind[0], BATCH_ARRIVE_LOOK);
  ck_assert_uint_eq(w->bkind[1], BATCH_WANDER);
  ck_assert_uint_eq(w->bkind[2], BATCH_PATH_HEADING);

  steer_params p = steer_default_params();
  p.target_radius = 1.25f;
  p.wander_rate = 2.5f;
  p.turn_trigger_distance = 3.5f;
  for (uint32_t i = 0; i < 3; i++)
    ck_assert_int_eq(steer_world_set_params(w, id[i], &p), STEER_OK);
  cache_fresh(w, "set_params");
  ck_assert(w->brec[0].k[1] == 1.25f && w->brec[1].k[0] == 2.5f && w->brec[2].k[0] == 3.5f);

  steer_limits l = steer_default_limits();
  l.max_speed = 1.75f;
  ck_assert_int_eq(steer_world_set_limits(w, id[3], &l), STEER_OK);
  cache_fresh(w, "set_limits");
  ck_assert(w->brec[3].max_speed == 1.75f);

  steer_behaviour t = steer_default_behaviour(STEER_BEHAVIOUR_NONE);
  t.stuck_time = 2.0f;
  ck_assert_int_eq(steer_world_set_tuning(w, id[4], &t), STEER_OK);
  cache_fresh(w, "set_tuning");
  ck_assert_uint_eq(w->bkind[4], BATCH_WANDER | BATCH_STUCK);

  steer_behaviour sep = steer_default_behaviour(STEER_BEHAVIOUR_ARRIVE);
  sep.target.kind = STEER_TARGET_POINT;
  sep.target.point = v2(40.0f, 40.0f);
  sep.separation_weight = 1.0f;
  ck_assert_int_eq(steer_world_set_behaviour(w, id[6], &sep), STEER_OK);
  sep.separation_weight = 0.0f;
  sep.facing = STEER_FACING_TARGET; /* face the target: not the batch's look-where-going */
  ck_assert_int_eq(steer_world_set_behaviour(w, id[9], &sep), STEER_OK);
  cache_fresh(w, "set_behaviour");
  ck_assert_uint_eq(w->bkind[6], BATCH_ARRIVE_LOOK | BATCH_NEIGHBOURS);
  ck_assert_uint_eq(w->bkind[9], BATCH_NONE);

  ck_assert_int_eq(steer_world_stop(w, id[7]), STEER_OK);
  cache_fresh(w, "stop");
  ck_assert_uint_eq(w->bkind[7], BATCH_NONE);

  ck_assert_int_eq(steer_world_despawn(w, id[0]), STEER_OK); /* the last agent moves into its place */
  ck_assert_int_eq(steer_world_despawn(w, id[5]), STEER_OK);
  cache_fresh(w, "despawn");

  for (int s = 0; s < 5; s++)
    steer_world_step(w, DT);
  size_t len = 0;
  static uint8_t buf[1 << 16];
  ck_assert_int_eq(steer_world_save(w, buf, sizeof buf, &len), STEER_OK);
  int err = 0;
  steer_world *back = steer_world_load(buf, len, &err);
  ck_assert_ptr_nonnull(back);
  cache_fresh(back, "load");
  for (uint32_t d = 0; d < w->count; d++) {
    ck_assert_uint_eq(back->bkind[d], w->bkind[d]);
    ck_assert(memcmp(&back->brec[d], &w->brec[d], sizeof(world_batch_rec)) == 0);
  }
  steer_world_destroy(back);
  steer_world_destroy(w);
}
END_TEST

static Suite *batch_suite(void) {
  Suite *s = suite_create("batch");
  TCase *tc = check_tcase(s, "lanes", 120);
  tcase_add_loop_test(tc, test_lean_lanes_match_scalar, 0, 2);
  tcase_add_loop_test(tc, test_lean_redo_lanes_untouched, 0, 2);
  tcase_add_test(tc, test_lean_short_batches);
  tc = check_tcase(s, "cache", 60);
  tcase_add_test(tc, test_cache_follows_changes);
  return s;
}

int main(void) { return check_run(batch_suite()); }

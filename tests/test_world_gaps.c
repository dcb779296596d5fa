/* test_world_gaps.c: the movement core's answers to inputs at its edges.
 *
 *   - the world refuses limits, params, bounds and steps that could produce a
 *     NaN or a silent zero (ranges in world.h), and a property test: no state
 *     of any agent ever becomes non-finite or leaves the world for random
 *     inputs anywhere in the accepted ranges, every model and behaviour;
 *   - a vector too long to square is still clipped to its length, not zeroed;
 *   - align, face and look_where_going as behaviours brake the linear motion
 *     (documented choice, PROTOCOL.md 5.3); velocity_match clips the target
 *     velocity to max_speed; look_where_going at rest brakes a spin;
 *   - a ping-pong path's first arrival at node 0 is no reversal;
 *   - the two draws that seed an agent's generator come in a fixed order. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "rng.h"
#include "world.h"
#include "world_internal.h"

#define DT (1.0f / 30.0f)

static steer_world *make_world(float half, uint64_t seed) {
  steer_world_config c = steer_default_world_config();
  c.max_agents = 64;
  c.min = v2(-half, -half);
  c.max = v2(half, half);
  c.cell_size = half / 16.0f > 8.0f ? half / 16.0f : 8.0f; /* a grid of at most 32 x 32 cells */
  c.seed = seed;
  steer_world *w = steer_world_create(&c);
  ck_assert_ptr_nonnull(w);
  return w;
}

static steer_id spawn(steer_world *w, const steer_agent_desc *d) {
  steer_id id = 0;
  ck_assert_int_eq(steer_world_spawn(w, d, 0, &id), STEER_OK);
  return id;
}

static steer_agent_desc dynamic_at(float x, float y) {
  steer_agent_desc d = steer_default_agent_desc();
  d.model = STEER_MODEL_DYNAMIC;
  d.state.position = v2(x, y);
  return d;
}

static steer_state state_of(const steer_world *w, steer_id id) {
  steer_agent_info info;
  ck_assert_int_eq(steer_world_get(w, id, &info), STEER_OK);
  return info.state;
}

/* ---- refusals ------------------------------------------------------------------- */

/* Values that would give zero steering (time_to_target 1e-20), NaN
 * positions (1e-39) or NaN at tick 25 (max_speed 1e-38 under interpose): refused. */
START_TEST(the_world_refuses_what_could_make_a_nan) {
  steer_world *w = make_world(100, 1);
  steer_agent_desc d = dynamic_at(0, 0);
  steer_id a = spawn(w, &d), b = spawn(w, &d), c = spawn(w, &d);
  static const float bad_times[] = {1e-20f, 1e-39f, 0.0f, 1e-4f, 1e4f, NAN, INFINITY};
  for (size_t i = 0; i < sizeof bad_times / sizeof bad_times[0]; i++) {
    steer_behaviour bh = steer_default_behaviour(STEER_BEHAVIOUR_SEEK);
    bh.target.kind = STEER_TARGET_POINT;
    bh.target.point = v2(10, 0);
    bh.params.time_to_target = bad_times[i];
    ck_assert_int_eq(steer_world_set_behaviour(w, a, &bh), STEER_EINVAL);
    bh.params = steer_default_behaviour(STEER_BEHAVIOUR_SEEK).params;
    bh.params.align_time_to_target = bad_times[i];
    ck_assert_int_eq(steer_world_set_behaviour(w, a, &bh), STEER_EINVAL);
  }
  static const float bad_rates[] = {1e-38f, 1e-4f, 0.0f, -1.0f, 1e5f, 1e30f, NAN};
  for (size_t i = 0; i < sizeof bad_rates / sizeof bad_rates[0]; i++) {
    steer_limits l = steer_default_limits();
    l.max_speed = bad_rates[i];
    ck_assert_int_eq(steer_world_set_limits(w, a, &l), STEER_EINVAL);
    l = steer_default_limits();
    l.max_angular_acceleration = bad_rates[i];
    ck_assert_int_eq(steer_world_set_limits(w, a, &l), STEER_EINVAL);
    steer_agent_desc e = d;
    e.limits.max_acceleration = bad_rates[i];
    ck_assert_int_eq(steer_world_spawn(w, &e, 0, NULL), STEER_EINVAL);
  }
  /* The edges of the ranges are accepted. */
  steer_limits l = steer_default_limits();
  l.max_speed = STEER_MIN_RATE;
  l.max_acceleration = STEER_MAX_RATE;
  ck_assert_int_eq(steer_world_set_limits(w, c, &l), STEER_OK);
  steer_behaviour ip = steer_default_behaviour(STEER_BEHAVIOUR_INTERPOSE);
  ip.target.kind = STEER_TARGET_AGENT;
  ip.target.agent = a;
  ip.target.agent2 = b;
  ip.params.time_to_target = STEER_MIN_TIME;
  ck_assert_int_eq(steer_world_set_behaviour(w, c, &ip), STEER_OK);
  ip.params.max_prediction = STEER_MAX_TIME * 2;
  ck_assert_int_eq(steer_world_set_behaviour(w, c, &ip), STEER_EINVAL);
  ip.params = steer_default_behaviour(STEER_BEHAVIOUR_INTERPOSE).params;
  ip.separation_weight = STEER_MAX_FACTOR * 2;
  ck_assert_int_eq(steer_world_set_behaviour(w, c, &ip), STEER_EINVAL);
  /* Steps of no time or of more than STEER_MAX_DT do nothing. */
  uint64_t t = steer_world_tick(w);
  steer_world_step(w, 2.0f);
  steer_world_step(w, 1e30f);
  ck_assert_uint_eq(steer_world_tick(w), t);
  steer_world_step(w, STEER_MAX_DT);
  ck_assert_uint_eq(steer_world_tick(w), t + 1);
  steer_world_destroy(w);
  /* Bounds beyond STEER_MAX_COORD. */
  steer_world_config cfg = steer_default_world_config();
  cfg.max = v2(1e7f, 10);
  ck_assert_ptr_null(steer_world_create(&cfg));
}
END_TEST

/* A spawn velocity too long to square (1e30 m/s) is clipped to max_speed along
 * its direction: it was zeroed (the square overflowed to infinity). */
START_TEST(a_huge_vector_is_clipped_not_zeroed) {
  vec2 v = v2_clip(v2(3e30f, -4e30f), 5.0f);
  ck_assert_float_eq_tol(v.x, 3.0f, 1e-5f);
  ck_assert_float_eq_tol(v.y, -4.0f, 1e-5f);
  steer_world *w = make_world(100, 1);
  steer_agent_desc d = dynamic_at(0, 0);
  d.state.velocity = v2(1e30f, 0);
  d.limits.max_speed = 3;
  steer_id a = spawn(w, &d);
  steer_state s = state_of(w, a);
  ck_assert_float_eq_tol(s.velocity.x, 3.0f, 1e-5f);
  ck_assert_float_eq(s.velocity.y, 0.0f);
  steer_world_destroy(w);
}
END_TEST

/* ---- the property test ---------------------------------------------------------------- */

static uint64_t rs;
static double uni(void) { /* [0, 1) */
  rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
  return (double)(rs >> 11) / 9007199254740992.0;
}

/* Anywhere in [lo, hi]: the ends (1 in 8 each), else log-uniform when lo > 0, uniform otherwise. */
static float pick(float lo, float hi) {
  double u = uni();
  if (u < 0.125)
    return lo;
  if (u < 0.25)
    return hi;
  if (lo > 0.0f)
    return (float)(lo * pow((double)hi / lo, uni()));
  if (uni() < 0.5) /* small values matter too */
    return (float)((double)hi * pow(1e-6, uni()));
  return (float)(lo + ((double)hi - lo) * uni());
}

static steer_limits random_limits(void) {
  steer_limits l;
  l.max_speed = pick(STEER_MIN_RATE, STEER_MAX_RATE);
  l.max_acceleration = pick(STEER_MIN_RATE, STEER_MAX_RATE);
  l.max_rotation = pick(STEER_MIN_RATE, STEER_MAX_RATE);
  l.max_angular_acceleration = pick(STEER_MIN_RATE, STEER_MAX_RATE);
  l.radius = pick(0.0f, uni() < 0.5 ? 10.0f : STEER_MAX_DISTANCE);
  return l;
}

static steer_params random_params(void) {
  steer_params p;
  p.time_to_target = pick(STEER_MIN_TIME, STEER_MAX_TIME);
  p.kinematic_time_to_target = pick(STEER_MIN_TIME, STEER_MAX_TIME);
  p.align_time_to_target = pick(STEER_MIN_TIME, STEER_MAX_TIME);
  p.target_radius = pick(0.0f, STEER_MAX_DISTANCE);
  p.slow_radius = p.target_radius + pick(0.0f, STEER_MAX_DISTANCE - p.target_radius);
  p.align_target_radius = pick(0.0f, 3.14159265f);
  p.align_slow_radius = p.align_target_radius + pick(0.0f, 3.14159265f - p.align_target_radius);
  p.max_prediction = pick(0.0f, STEER_MAX_TIME);
  p.panic_radius = pick(0.0f, STEER_MAX_DISTANCE);
  p.wander_offset = pick(0.0f, STEER_MAX_DISTANCE);
  p.wander_radius = pick(0.0f, STEER_MAX_DISTANCE);
  p.wander_rate = pick(0.0f, STEER_MAX_FACTOR);
  p.separation_radius = pick(0.0f, STEER_MAX_DISTANCE);
  p.turn_trigger_distance = pick(0.0f, STEER_MAX_DISTANCE);
  p.path_recover_strength = pick(0.0f, STEER_MAX_FACTOR);
  return p;
}

static vec2 random_point(float half) {
  return v2((float)((2 * uni() - 1) * half), (float)((2 * uni() - 1) * half));
}

static int state_ok(const steer_state *s, float half) {
  return isfinite(s->position.x) && isfinite(s->position.y) && isfinite(s->velocity.x) &&
         isfinite(s->velocity.y) && isfinite(s->orientation) && isfinite(s->rotation) &&
         fabsf(s->position.x) <= half && fabsf(s->position.y) <= half && s->orientation > -3.1415927f &&
         s->orientation <= 3.1415927f;
}

/* 60 worlds of 24 agents, every model and behaviour, limits, params, targets,
 * spawn states and steps drawn anywhere in the accepted ranges (and some
 * refused ones, which must change nothing); 200 steps each, changing
 * behaviours and limits on the way. Every state stays finite and in the world. */
START_TEST(no_nan_for_any_accepted_input) {
  rs = 0x9e3779b97f4a7c15ull;
  uint64_t accepted = 0, refused = 0, steps = 0;
  for (int world = 0; world < 60; world++) {
    float half = world % 3 == 0 ? STEER_MAX_COORD : world % 3 == 1 ? 50.0f : 1.0f;
    steer_world *w = make_world(half, (uint64_t)world + 1);
    steer_id ids[24];
    uint32_t n = 0;
    for (int step = 0; step < 200; step++) {
      /* Now and then: spawn, or give someone a new behaviour, limits or path. */
      if (n < 24 && (step < 24 || uni() < 0.05)) {
        steer_agent_desc d = steer_default_agent_desc();
        d.model = (uint8_t)(uni() * STEER_MODEL_COUNT);
        d.state.position = random_point(half);
        d.state.orientation = (float)((2 * uni() - 1) * 1e6);
        d.state.velocity = uni() < 0.2 ? v2(1e30f, -1e30f) : random_point(pick(0.0f, STEER_MAX_RATE));
        d.state.rotation = pick(-STEER_MAX_RATE, STEER_MAX_RATE);
        d.limits = random_limits();
        if (steer_world_spawn(w, &d, 0, &ids[n]) == STEER_OK)
          n++, accepted++;
        else
          refused++;
      }
      if (n > 0 && uni() < 0.3) {
        steer_id who = ids[(uint32_t)(uni() * n)];
        steer_behaviour b =
            steer_default_behaviour((steer_behaviour_kind)(uni() * (STEER_BEHAVIOUR_COUNT - 1)));
        b.params = random_params();
        b.facing = (uint8_t)(uni() * STEER_FACING_COUNT);
        b.combine = (uint8_t)(uni() * STEER_COMBINE_COUNT);
        b.separation_weight = uni() < 0.5 ? 0.0f : pick(0.0f, STEER_MAX_FACTOR);
        b.max_neighbours = (uint8_t)(uni() * 16);
        if (uni() < 0.5) { /* avoidance, walls and stuck detection anywhere in their ranges */
          b.avoid_weight = pick(0.0f, STEER_MAX_FACTOR);
          b.avoid_horizon = pick(STEER_MIN_TIME, STEER_MAX_TIME);
          b.wall_lookahead = pick(0.0f, STEER_MAX_TIME);
          b.wall_margin = pick(0.0f, STEER_MAX_DISTANCE);
          b.stuck_time = pick(0.0f, STEER_MAX_TIME);
        }
        if (uni() < 0.5 && n > 2) {
          b.target.kind = STEER_TARGET_AGENT;
          b.target.agent = ids[(uint32_t)(uni() * n)];
          b.target.agent2 = ids[(uint32_t)(uni() * n)];
        } else {
          b.target.kind = STEER_TARGET_POINT;
          b.target.point = random_point(half);
          b.target.orientation = (float)((2 * uni() - 1) * 1e6);
        }
        int rc = steer_world_set_behaviour(w, who, &b);
        rc == STEER_OK ? accepted++ : refused++;
      }
      if (n > 0 && uni() < 0.1) {
        steer_limits l = random_limits();
        int rc = steer_world_set_limits(w, ids[(uint32_t)(uni() * n)], &l);
        rc == STEER_OK ? accepted++ : refused++;
      }
      if (n > 0 && uni() < 0.05) {
        vec2 pts[8];
        uint32_t count = 1 + (uint32_t)(uni() * 8);
        for (uint32_t k = 0; k < count; k++)
          pts[k] = random_point(half);
        int rc = steer_world_set_path(w, ids[(uint32_t)(uni() * n)], pts, count, pick(1e-3f, 100.0f),
                                      (steer_path_mode)(uni() * 3), (steer_cornering)(uni() * 3));
        rc == STEER_OK ? accepted++ : refused++;
      }
      float dt = uni() < 0.8 ? DT : pick(1e-6f, STEER_MAX_DT);
      steer_world_step(w, dt);
      steps++;
      for (uint32_t k = 0; k < n; k++) {
        steer_state s = state_of(w, ids[k]);
        ck_assert_msg(
            state_ok(&s, half),
            "world %d step %d agent %u: position (%g, %g) velocity (%g, %g) orientation %g rotation %g",
            world, step, ids[k], s.position.x, s.position.y, s.velocity.x, s.velocity.y, s.orientation,
            s.rotation);
      }
    }
    steer_world_destroy(w);
  }
  printf("no-NaN property: %llu steps, %llu accepted and %llu refused calls\n", (unsigned long long)steps,
         (unsigned long long)accepted, (unsigned long long)refused);
  ck_assert_uint_gt(accepted, 2000);
}
END_TEST

/* ---- documented choices ------------------------------------------------------------------- */

/* Align (and face, look_where_going) as a behaviour turns the agent and brakes
 * its linear velocity to rest, as "none" does (the seed's Align leaves the
 * velocity alone, so a moving agent would coast on for ever). */
START_TEST(align_face_and_look_where_going_brake_the_linear_motion) {
  static const steer_behaviour_kind kinds[] = {STEER_BEHAVIOUR_ALIGN, STEER_BEHAVIOUR_FACE,
                                               STEER_BEHAVIOUR_LOOK_WHERE_GOING};
  for (size_t k = 0; k < 3; k++) {
    steer_world *w = make_world(100, 1);
    steer_agent_desc d = dynamic_at(0, 0);
    d.state.velocity = v2(2, 0);
    steer_id a = spawn(w, &d);
    steer_behaviour b = steer_default_behaviour(kinds[k]);
    b.target.kind = STEER_TARGET_POINT;
    b.target.point = v2(0, 50); /* face: straight up */
    b.target.orientation = 1.5707964f;
    if (kinds[k] == STEER_BEHAVIOUR_LOOK_WHERE_GOING)
      b.target.kind = STEER_TARGET_NONE;
    ck_assert_int_eq(steer_world_set_behaviour(w, a, &b), STEER_OK);
    float last = 2.0f;
    for (int i = 0; i < 90; i++) {
      steer_world_step(w, DT);
      float speed = v2_len(state_of(w, a).velocity);
      ck_assert_float_le(speed, last + 1e-6f);
      last = speed;
    }
    steer_state s = state_of(w, a);
    ck_assert_float_le(v2_len(s.velocity), 1e-3f);
    ck_assert_float_le(s.position.x, 1.0f); /* it stopped within a metre: it did not coast */
    if (kinds[k] != STEER_BEHAVIOUR_LOOK_WHERE_GOING)
      ck_assert_float_le(fabsf(s.orientation - 1.5707964f), 0.05f);
    else
      ck_assert_float_le(fabsf(s.orientation), 0.05f); /* it looked where it went: +x */
    steer_world_destroy(w);
  }
}
END_TEST

/* look_where_going at rest has no direction: it brakes any spin. */
START_TEST(look_where_going_at_rest_brakes_a_spin) {
  steer_world *w = make_world(100, 1);
  steer_agent_desc d = dynamic_at(0, 0);
  d.state.rotation = 3.0f;
  steer_id a = spawn(w, &d);
  steer_behaviour b = steer_default_behaviour(STEER_BEHAVIOUR_LOOK_WHERE_GOING);
  ck_assert_int_eq(steer_world_set_behaviour(w, a, &b), STEER_OK);
  for (int i = 0; i < 30; i++)
    steer_world_step(w, DT);
  ck_assert_float_le(fabsf(state_of(w, a).rotation), 1e-3f);
  steer_world_destroy(w);
}
END_TEST

/* velocity_match: the target's velocity clipped to the matcher's max_speed. A
 * target at 5 m/s, a matcher of 3 m/s: it settles at 3 m/s the same way. */
START_TEST(velocity_match_clips_the_target_velocity) {
  steer_world *w = make_world(400, 1);
  steer_agent_desc t = steer_default_agent_desc();
  t.model = STEER_MODEL_KINEMATIC;
  t.state.position = v2(-300, 0);
  t.limits.max_speed = 5;
  steer_id target = spawn(w, &t);
  steer_behaviour seek = steer_default_behaviour(STEER_BEHAVIOUR_SEEK);
  seek.target.kind = STEER_TARGET_POINT;
  seek.target.point = v2(300, 240);
  ck_assert_int_eq(steer_world_set_behaviour(w, target, &seek), STEER_OK);
  steer_agent_desc m = dynamic_at(-300, -100);
  m.limits.max_speed = 3;
  steer_id matcher = spawn(w, &m);
  steer_behaviour vm = steer_default_behaviour(STEER_BEHAVIOUR_VELOCITY_MATCH);
  vm.target.kind = STEER_TARGET_AGENT;
  vm.target.agent = target;
  ck_assert_int_eq(steer_world_set_behaviour(w, matcher, &vm), STEER_OK);
  for (int i = 0; i < 90; i++)
    steer_world_step(w, DT);
  vec2 tv = state_of(w, target).velocity, mv = state_of(w, matcher).velocity;
  ck_assert_float_eq_tol(v2_len(tv), 5.0f, 1e-3f);
  ck_assert_float_eq_tol(v2_len(mv), 3.0f, 1e-3f);
  ck_assert_float_ge(v2_dot(v2_scale(tv, 1.0f / 5.0f), v2_scale(mv, 1.0f / 3.0f)), 0.9999f);
  steer_world_destroy(w);
}
END_TEST

/* A ping-pong path: the first arrival at node 0, from off the path, is
 * WAYPOINT(0) alone; the reversals come at the far end and back at node 0. */
START_TEST(first_arrival_at_node_zero_is_no_reversal) {
  steer_world *w = make_world(100, 1);
  steer_agent_desc d = dynamic_at(-20, -20);
  steer_id a = spawn(w, &d);
  vec2 pts[3] = {v2(0, 0), v2(10, 0), v2(20, 0)};
  ck_assert_int_eq(steer_world_set_path(w, a, pts, 3, 1.0f, STEER_PATH_PINGPONG, STEER_CORNER_NONE),
                   STEER_OK);
  int seen[8][2];
  int n = 0;
  for (int i = 0; i < 3000 && n < 8; i++) {
    steer_world_step(w, DT);
    uint32_t count;
    const steer_event *ev = steer_world_events(w, &count);
    for (uint32_t k = 0; k < count && n < 8; k++)
      if (ev[k].agent == a) {
        seen[n][0] = ev[k].type;
        seen[n][1] = (int)ev[k].node;
        n++;
      }
  }
  ck_assert_int_ge(n, 7);
  static const int expect[7][2] = {{STEER_EVENT_WAYPOINT, 0}, {STEER_EVENT_WAYPOINT, 1},
                                   {STEER_EVENT_WAYPOINT, 2}, {STEER_EVENT_REVERSED, 2},
                                   {STEER_EVENT_WAYPOINT, 1}, {STEER_EVENT_WAYPOINT, 0},
                                   {STEER_EVENT_REVERSED, 0}};
  for (int i = 0; i < 7; i++) {
    ck_assert_int_eq(seen[i][0], expect[i][0]);
    ck_assert_int_eq(seen[i][1], expect[i][1]);
  }
  steer_world_destroy(w);
}
END_TEST

/* ---- generator seeding -------------------------------------------------------------------- */

/* An agent's generator is seeded with (first draw << 32) | second draw of the
 * world's generator, in that order; randomBinomial is first - second. */
START_TEST(seed_draws_come_in_a_fixed_order) {
  steer_world *w = make_world(100, 77);
  steer_agent_desc d = dynamic_at(0, 0);
  spawn(w, &d);
  spawn(w, &d);
  steer_rng world;
  steer_rng_seed(&world, 77);
  for (uint32_t k = 0; k < 2; k++) {
    uint64_t hi = steer_rng_next(&world);
    uint64_t lo = steer_rng_next(&world);
    steer_rng expect;
    steer_rng_seed(&expect, (hi << 32) | lo);
    ck_assert_uint_eq(w->arng[k].state, expect.state);
  }
  steer_world_destroy(w);
  steer_rng r, q;
  steer_rng_seed(&r, 5);
  steer_rng_seed(&q, 5);
  float first = steer_rng_float(&q);
  float second = steer_rng_float(&q);
  ck_assert_float_eq(steer_rng_binomial(&r), first - second);
}
END_TEST

static Suite *world_gaps_suite(void) {
  Suite *s = suite_create("world_gaps");
  TCase *tc = check_tcase(s, "core", 120);
  tcase_add_test(tc, the_world_refuses_what_could_make_a_nan);
  tcase_add_test(tc, a_huge_vector_is_clipped_not_zeroed);
  tcase_add_test(tc, no_nan_for_any_accepted_input);
  tcase_add_test(tc, align_face_and_look_where_going_brake_the_linear_motion);
  tcase_add_test(tc, look_where_going_at_rest_brakes_a_spin);
  tcase_add_test(tc, velocity_match_clips_the_target_velocity);
  tcase_add_test(tc, first_arrival_at_node_zero_is_no_reversal);
  tcase_add_test(tc, seed_draws_come_in_a_fixed_order);
  return s;
}

int main(void) { return check_run(world_gaps_suite()); }

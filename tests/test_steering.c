/* test_steering.c: each behaviour's defining physical property, simulated.
 *
 * Every test runs the behaviour through the integrators of steering.h (dt = 0.05 s
 * unless told) and asserts what the behaviour is for: arrive comes to rest inside
 * its radius without overshooting, align does not oscillate, pursue beats seek,
 * and so on. Loops record the worst value seen and assert once, so a failure
 * names the number that broke. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "steering.h"

#define DT     0.05f
#define DEG(d) ((d)*STEER_PI / 180.0f)

static steer_state state_at(float x, float y, float orientation) {
  steer_state s;
  memset(&s, 0, sizeof s);
  s.position = v2(x, y);
  s.orientation = orientation;
  return s;
}

static float dist(vec2 a, vec2 b) { return v2_len(v2_sub(a, b)); }

/* ---------------------------------------------------------------- arrive */

/* Runs arrive from start toward target and checks: speed and acceleration within
 * the limits, no reversal along the approach axis once slowing down, at
 * rest inside target_radius at the end and still there 10 s later. */
static void check_arrive(steer_limits l, steer_params p, vec2 start_velocity, float dt) {
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  s.velocity = start_velocity;
  vec2 target = v2(30.0f, 40.0f); /* 50 m away */
  vec2 axis = v2_norm(target);
  float max_speed_seen = 0.0f, max_acc_seen = 0.0f;
  int entered_slow = 0, sign = 0, reversals = 0;
  float arrived_at = -1.0f;
  /* slow_radius, or the shortest stopping distance if that is longer: from there
   * on any correct arrive is slowing down. */
  float slow_zone = fmaxf(p.slow_radius, l.max_speed * l.max_speed / (2.0f * l.max_acceleration));
  int steps = (int)(120.0f / dt);
  for (int i = 0; i < steps; i++) {
    vec2 v_before = s.velocity;
    steer_integrate_dynamic(&s, &l, steer_arrive(&s, &l, &p, target), dt);
    float acc = v2_len(v2_sub(s.velocity, v_before)) / dt;
    if (acc > max_acc_seen)
      max_acc_seen = acc;
    if (v2_len(s.velocity) > max_speed_seen)
      max_speed_seen = v2_len(s.velocity);
    float d = dist(s.position, target);
    if (d <= slow_zone)
      entered_slow = 1;
    if (entered_slow) {
      float along = v2_dot(s.velocity, axis);
      int now = along > 1e-6f ? 1 : (along < -1e-6f ? -1 : 0);
      if (now != 0 && sign != 0 && now != sign)
        reversals++;
      if (now != 0)
        sign = now;
    }
    if (arrived_at < 0.0f && d < p.target_radius && v2_len(s.velocity) < 1e-4f)
      arrived_at = (float)(i + 1) * dt;
  }
  ck_assert_msg(entered_slow, "never entered the slow zone");
  ck_assert_msg(arrived_at > 0.0f, "not at rest inside target_radius after 120 s: d=%g |v|=%g",
                (double)dist(s.position, target), (double)v2_len(s.velocity));
  ck_assert_msg(max_speed_seen <= l.max_speed + 1e-4f, "speed %g above max %g", (double)max_speed_seen,
                (double)l.max_speed);
  ck_assert_msg(max_acc_seen <= l.max_acceleration + 1e-3f, "acceleration %g above max %g",
                (double)max_acc_seen, (double)l.max_acceleration);
  ck_assert_msg(reversals == 0, "velocity along the approach reversed %d times", reversals);

  /* Still at rest, still inside, 10 s later. */
  vec2 rest = s.position;
  for (int i = 0; i < (int)(10.0f / dt); i++) {
    steer_integrate_dynamic(&s, &l, steer_arrive(&s, &l, &p, target), dt);
    ck_assert_float_lt(dist(s.position, target), p.target_radius);
    ck_assert_float_lt(v2_len(s.velocity), 1e-4f);
  }
  ck_assert_float_lt(dist(s.position, rest), 1e-3f);
}

START_TEST(test_arrive_from_rest) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  check_arrive(l, p, v2(0.0f, 0.0f), 0.05f);
  check_arrive(l, p, v2(0.0f, 0.0f), 0.1f);
}
END_TEST

START_TEST(test_arrive_sideways_start) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  /* Full speed across the approach axis (the axis is (0.6, 0.8)). */
  check_arrive(l, p, v2(2.4f, -1.8f), 0.05f);
  check_arrive(l, p, v2(-2.4f, 1.8f), 0.1f);
  /* And full speed straight at the target. */
  check_arrive(l, p, v2(1.8f, 2.4f), 0.05f);
}
END_TEST

START_TEST(test_arrive_low_acceleration) {
  /* Millington's ramp alone would overshoot here: 3 m/s cannot be shed in
   * slow_radius = 4 m at 0.5 m/s^2 (it needs 9 m). */
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  l.max_acceleration = 0.5f;
  check_arrive(l, p, v2(0.0f, 0.0f), 0.05f);
  check_arrive(l, p, v2(0.0f, 0.0f), 0.1f);
}
END_TEST

START_TEST(test_arrive_small_slow_radius_and_target_radius) {
  /* A steep ramp and a tiny dead band: the caps must keep it from crossing. */
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  p.slow_radius = 0.2f;
  p.target_radius = 0.01f;
  check_arrive(l, p, v2(0.0f, 0.0f), 0.05f);
  check_arrive(l, p, v2(0.0f, 0.0f), 0.1f);
}
END_TEST

START_TEST(test_arrive_no_slow_radius) {
  /* No ramp at all (slow_radius 0), weak brakes, a 1 cm dead band: only the
   * braking curve and its headroom keep the agent from crossing the target. */
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  l.max_acceleration = 0.3f;
  p.slow_radius = 0.0f;
  p.target_radius = 0.01f;
  check_arrive(l, p, v2(0.0f, 0.0f), 0.05f);
  check_arrive(l, p, v2(0.0f, 0.0f), 0.1f);
  l.max_speed = 0.5f;
  check_arrive(l, p, v2(0.0f, 0.0f), 0.1f);
}
END_TEST

START_TEST(test_arrive_inside_radius_brakes) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  s.velocity = v2(0.1f, 0.0f);
  steer_output o = steer_arrive(&s, &l, &p, v2(0.2f, 0.0f));
  /* Seed 000 returns nothing here; we brake: -v / time_to_target. */
  ck_assert_float_eq_tol(o.linear.x, -1.0f, 1e-5f);
  ck_assert_float_eq_tol(o.linear.y, 0.0f, 1e-6f);
  s.velocity = v2(0.0f, 0.0f);
  o = steer_arrive(&s, &l, &p, v2(0.2f, 0.0f));
  ck_assert_float_eq(o.linear.x, 0.0f);
  ck_assert_float_eq(o.linear.y, 0.0f);
}
END_TEST

/* ---------------------------------------------------------- seek, flee, match */

START_TEST(test_seek_reaches_target) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  vec2 target = v2(-12.0f, 16.0f);
  float closest = 1e9f, max_speed_seen = 0.0f;
  for (int i = 0; i < (int)(10.0f / DT); i++) {
    steer_integrate_dynamic(&s, &l, steer_seek(&s, &l, &p, target), DT);
    float d = dist(s.position, target);
    if (d < closest)
      closest = d;
    if (v2_len(s.velocity) > max_speed_seen)
      max_speed_seen = v2_len(s.velocity);
  }
  ck_assert_float_lt(closest, 0.2f);
  ck_assert_float_le(max_speed_seen, l.max_speed + 1e-4f);
  ck_assert_float_gt(max_speed_seen, l.max_speed - 1e-3f); /* seek runs flat out */
}
END_TEST

START_TEST(test_flee_distance_grows) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  steer_state s = state_at(1.0f, 0.5f, 2.0f);
  vec2 threat = v2(0.0f, 0.0f);
  float prev = dist(s.position, threat);
  for (int i = 0; i < (int)(10.0f / DT); i++) {
    steer_integrate_dynamic(&s, &l, steer_flee(&s, &l, &p, threat), DT);
    float d = dist(s.position, threat);
    ck_assert_msg(d > prev, "tick %d: distance %g not above %g", i, (double)d, (double)prev);
    prev = d;
  }
  ck_assert_float_gt(prev, 25.0f); /* 10 s at up to 3 m/s */
}
END_TEST

START_TEST(test_flee_panic_radius) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  p.panic_radius = 5.0f;
  steer_state s = state_at(10.0f, 0.0f, 0.0f);
  s.velocity = v2(0.5f, 0.0f);
  steer_output o = steer_flee(&s, &l, &p, v2(0.0f, 0.0f));
  ck_assert_float_eq(o.linear.x, 0.0f);
  ck_assert_float_eq(o.linear.y, 0.0f);
  ck_assert_float_eq(o.angular, 0.0f);
  s.position = v2(0.0f, 3.0f);
  o = steer_flee(&s, &l, &p, v2(0.0f, 0.0f));
  /* Inside: away from the threat at the limit, cancelling the sideways drift. */
  ck_assert_float_eq_tol(v2_len(o.linear), l.max_acceleration, 1e-4f);
  ck_assert_float_gt(o.linear.y, 5.0f);
  ck_assert_float_lt(o.linear.x, 0.0f);
  /* Evade honours the same radius. */
  steer_state pursuer = state_at(20.0f, 0.0f, 0.0f);
  s.position = v2(0.0f, 0.0f);
  o = steer_evade(&s, &l, &p, &pursuer);
  ck_assert_float_eq(v2_len(o.linear), 0.0f);
}
END_TEST

START_TEST(test_velocity_match_converges) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  s.velocity = v2(3.0f, 0.0f);
  vec2 goal = v2(-1.0f, 2.0f);
  float max_acc_seen = 0.0f;
  for (int i = 0; i < (int)(3.0f / DT); i++) {
    vec2 before = s.velocity;
    steer_integrate_dynamic(&s, &l, steer_velocity_match(&s, &l, &p, goal), DT);
    float acc = v2_len(v2_sub(s.velocity, before)) / DT;
    if (acc > max_acc_seen)
      max_acc_seen = acc;
  }
  ck_assert_float_lt(dist(s.velocity, goal), 1e-3f);
  ck_assert_float_le(max_acc_seen, l.max_acceleration + 1e-3f);
  ck_assert_float_gt(max_acc_seen, l.max_acceleration - 1e-3f); /* it was clipped, not slow */
}
END_TEST

/* ------------------------------------------------------- align, face, look */

typedef enum turn_kind { TURN_ALIGN, TURN_FACE, TURN_LOOK } turn_kind;

/* Turns with one of the angular behaviours until settled and checks that the
 * error never changes sign after entering the slow radius and ends at rest inside
 * the dead band. Returns the smallest |orientation| seen (for the short-way test). */
static float check_turn(turn_kind kind, steer_state s, float goal, vec2 face_point, float dt) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  int entered_slow = 0, sign = 0, flips = 0;
  float min_abs_orientation = fabsf(s.orientation), max_rot_seen = 0.0f;
  for (int i = 0; i < (int)(6.0f / dt); i++) {
    steer_output o;
    if (kind == TURN_ALIGN)
      o = steer_align(&s, &l, &p, goal);
    else if (kind == TURN_FACE)
      o = steer_face(&s, &l, &p, face_point);
    else
      o = steer_look_where_going(&s, &l, &p);
    ck_assert_float_eq(o.linear.x, 0.0f);
    ck_assert_float_eq(o.linear.y, 0.0f);
    steer_integrate_dynamic(&s, &l, o, dt);
    ck_assert_msg(s.orientation > -STEER_PI && s.orientation <= STEER_PI, "orientation %g out of range",
                  (double)s.orientation);
    if (fabsf(s.orientation) < min_abs_orientation)
      min_abs_orientation = fabsf(s.orientation);
    if (fabsf(s.rotation) > max_rot_seen)
      max_rot_seen = fabsf(s.rotation);
    float err = steer_wrap_angle(goal - s.orientation);
    if (fabsf(err) <= p.align_slow_radius)
      entered_slow = 1;
    if (entered_slow) {
      int now = err > 0.0f ? 1 : (err < 0.0f ? -1 : 0);
      if (now != 0 && sign != 0 && now != sign)
        flips++;
      if (now != 0)
        sign = now;
    }
  }
  float err = steer_wrap_angle(goal - s.orientation);
  ck_assert_msg(entered_slow, "never entered the slow radius");
  ck_assert_msg(flips == 0, "angular error changed sign %d times (oscillation)", flips);
  ck_assert_msg(fabsf(err) < p.align_target_radius, "ended %g rad off", (double)err);
  ck_assert_msg(fabsf(s.rotation) < 1e-4f, "still turning at %g rad/s", (double)s.rotation);
  ck_assert_float_le(max_rot_seen, l.max_rotation + 1e-5f);
  return min_abs_orientation;
}

START_TEST(test_align_settles_without_oscillation) {
  vec2 none = v2(0.0f, 0.0f);
  float goals[] = {2.5f, -2.5f, 0.3f, -0.05f, 3.1f};
  for (unsigned i = 0; i < sizeof goals / sizeof goals[0]; i++) {
    check_turn(TURN_ALIGN, state_at(0.0f, 0.0f, 0.0f), goals[i], none, 0.05f);
    check_turn(TURN_ALIGN, state_at(0.0f, 0.0f, 0.0f), goals[i], none, 0.1f);
  }
  /* Already turning the wrong way at full rate. */
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  s.rotation = -4.0f;
  check_turn(TURN_ALIGN, s, 1.5f, none, 0.05f);
}
END_TEST

START_TEST(test_align_short_way_across_pi) {
  /* 170 deg to -170 deg is 20 deg through +-pi, never through 0. */
  float min_abs = check_turn(TURN_ALIGN, state_at(0.0f, 0.0f, DEG(170.0f)), DEG(-170.0f), v2(0.0f, 0.0f), DT);
  ck_assert_float_ge(min_abs, DEG(169.0f));
  min_abs = check_turn(TURN_ALIGN, state_at(0.0f, 0.0f, DEG(-170.0f)), DEG(170.0f), v2(0.0f, 0.0f), DT);
  ck_assert_float_ge(min_abs, DEG(169.0f));
}
END_TEST

START_TEST(test_face_turns_to_target) {
  vec2 point = v2(-3.0f, 4.0f);
  check_turn(TURN_FACE, state_at(0.0f, 0.0f, 0.0f), atan2f(4.0f, -3.0f), point, DT);
  /* Facing across +-pi takes the short way too. */
  point = v2(-10.0f, -1.0f); /* at about -174 deg */
  float min_abs = check_turn(TURN_FACE, state_at(0.0f, 0.0f, DEG(170.0f)), atan2f(-1.0f, -10.0f), point, DT);
  ck_assert_float_ge(min_abs, DEG(169.0f));
}
END_TEST

START_TEST(test_face_zero_direction_does_nothing) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  steer_state s = state_at(2.0f, 3.0f, 1.0f);
  steer_state before = s;
  steer_output o = steer_face(&s, &l, &p, s.position);
  ck_assert_float_eq(o.angular, 0.0f);
  ck_assert_float_eq(v2_len(o.linear), 0.0f);
  for (int i = 0; i < 20; i++)
    steer_integrate_dynamic(&s, &l, steer_face(&s, &l, &p, s.position), DT);
  ck_assert_mem_eq(&s, &before, sizeof s);
  /* A turning agent with nothing to face stops turning (no new target). */
  s.rotation = 2.0f;
  for (int i = 0; i < 40; i++)
    steer_integrate_dynamic(&s, &l, steer_face(&s, &l, &p, s.position), DT);
  ck_assert_float_lt(fabsf(s.rotation), 1e-4f);
}
END_TEST

START_TEST(test_look_where_going) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  /* Moving straight down at 2 m/s, facing 2 rad: the short way is counter-clockwise. */
  steer_state s = state_at(0.0f, 0.0f, 2.0f);
  s.velocity = v2(0.0f, -2.0f);
  float min_abs = check_turn(TURN_LOOK, s, -STEER_PI / 2.0f, v2(0.0f, 0.0f), DT);
  ck_assert_float_ge(min_abs, 1.5f); /* went through pi, not through 0 */
  /* Still agent: nothing. */
  s = state_at(0.0f, 0.0f, 0.7f);
  steer_output o = steer_look_where_going(&s, &l, &p);
  ck_assert_float_eq(o.angular, 0.0f);
  ck_assert_float_eq(v2_len(o.linear), 0.0f);
}
END_TEST

/* ------------------------------------------------------ pursue, evade, interpose */

/* Seconds until the chaser gets within 1 m of a target moving at constant
 * velocity, or a negative number if it never does within 30 s. */
static float time_to_intercept(int use_pursue) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  steer_state target = state_at(12.0f, 0.0f, STEER_PI / 2.0f);
  target.velocity = v2(0.0f, 2.0f);
  for (int i = 0; i < (int)(30.0f / DT); i++) {
    steer_output o = use_pursue ? steer_pursue(&s, &l, &p, &target) : steer_seek(&s, &l, &p, target.position);
    steer_integrate_dynamic(&s, &l, o, DT);
    target.position = v2_add(target.position, v2_scale(target.velocity, DT));
    if (dist(s.position, target.position) < 1.0f)
      return (float)(i + 1) * DT;
  }
  return -1.0f;
}

START_TEST(test_pursue_beats_seek) {
  float pursue = time_to_intercept(1);
  float seek = time_to_intercept(0);
  ck_assert_msg(pursue > 0.0f, "pursue never intercepted");
  ck_assert_msg(seek < 0.0f || pursue < seek - 0.5f, "pursue %g s not sooner than seek %g s", (double)pursue,
                (double)seek);
}
END_TEST

START_TEST(test_pursue_head_on_seeks_position) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  s.velocity = v2(1.0f, 0.0f);
  steer_state target = state_at(10.0f, 1.0f, STEER_PI);
  target.velocity = v2(-2.0f, 0.5f);
  steer_output a = steer_pursue(&s, &l, &p, &target);
  steer_output b = steer_seek(&s, &l, &p, target.position);
  ck_assert_mem_eq(&a, &b, sizeof a);
  /* Not head on (target crossing): it leads the target instead. */
  target.orientation = STEER_PI / 2.0f;
  a = steer_pursue(&s, &l, &p, &target);
  ck_assert_float_gt(dist(a.linear, b.linear), 0.1f);
}
END_TEST

START_TEST(test_pursue_max_prediction_caps) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  steer_state target = state_at(100.0f, 0.0f, STEER_PI / 2.0f);
  target.velocity = v2(0.0f, 3.0f);
  /* Uncapped look-ahead would be 100 / (3 + 3) = 16.7 s; capped at 2 s. */
  steer_output o = steer_pursue(&s, &l, &p, &target);
  steer_output capped = steer_seek(&s, &l, &p, v2(100.0f, 6.0f));
  ck_assert_float_eq_tol(o.linear.x, capped.linear.x, 1e-4f);
  ck_assert_float_eq_tol(o.linear.y, capped.linear.y, 1e-4f);
  p.max_prediction = 100.0f;
  o = steer_pursue(&s, &l, &p, &target);
  steer_output uncapped = steer_seek(&s, &l, &p, v2(100.0f, 50.0f));
  ck_assert_float_eq_tol(o.linear.x, uncapped.linear.x, 1e-4f);
  ck_assert_float_eq_tol(o.linear.y, uncapped.linear.y, 1e-4f);
  ck_assert_float_gt(dist(capped.linear, uncapped.linear), 1.0f);
}
END_TEST

START_TEST(test_evade_distance_grows) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  steer_limits pl = l;
  pl.max_speed = 2.0f; /* a slower pursuer, or no one escapes */
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  steer_state pursuer = state_at(-6.0f, -3.0f, 0.0f);
  float prev = dist(s.position, pursuer.position);
  int ticks = (int)(15.0f / DT);
  for (int i = 0; i < ticks; i++) {
    steer_output e = steer_evade(&s, &l, &p, &pursuer);
    steer_output q = steer_pursue(&pursuer, &pl, &p, &s);
    steer_integrate_dynamic(&s, &l, e, DT);
    steer_integrate_dynamic(&pursuer, &pl, q, DT);
    float d = dist(s.position, pursuer.position);
    if ((float)i * DT >= 1.0f)
      ck_assert_msg(d > prev, "t=%g s: distance %g not above %g", (double)((float)i * DT), (double)d,
                    (double)prev);
    prev = d;
  }
  ck_assert_float_gt(prev, 10.0f);
}
END_TEST

START_TEST(test_evade_flees_predicted_position) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  steer_state pursuer = state_at(-6.0f, 0.0f, 0.0f);
  pursuer.velocity = v2(0.0f, 3.0f);
  /* Look-ahead 6 / (3 + 3) = 1 s: flee from (-6, 3), i.e. down and to the right. */
  steer_output o = steer_evade(&s, &l, &p, &pursuer);
  steer_output want = steer_flee(&s, &l, &p, v2(-6.0f, 3.0f));
  ck_assert_float_eq_tol(o.linear.x, want.linear.x, 1e-4f);
  ck_assert_float_eq_tol(o.linear.y, want.linear.y, 1e-4f);
  ck_assert_float_lt(o.linear.y, -1.0f);
}
END_TEST

static void check_interpose(steer_state a, steer_state b, steer_state s) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  float worst_late = 0.0f;
  int ticks = (int)(30.0f / DT);
  for (int i = 0; i < ticks; i++) {
    steer_integrate_dynamic(&s, &l, steer_interpose(&s, &l, &p, &a, &b), DT);
    a.position = v2_add(a.position, v2_scale(a.velocity, DT));
    b.position = v2_add(b.position, v2_scale(b.velocity, DT));
    float d = dist(s.position, v2_scale(v2_add(a.position, b.position), 0.5f));
    if (i >= ticks - (int)(5.0f / DT) && d > worst_late)
      worst_late = d;
  }
  ck_assert_msg(worst_late < 0.5f, "%g m from the midpoint in the last 5 s", (double)worst_late);
}

START_TEST(test_interpose_static_pair) {
  steer_state a = state_at(0.0f, 0.0f, 0.0f);
  steer_state b = state_at(10.0f, 4.0f, 0.0f);
  check_interpose(a, b, state_at(-5.0f, 8.0f, 0.0f));
}
END_TEST

START_TEST(test_interpose_moving_pair) {
  steer_state a = state_at(0.0f, -3.0f, 0.0f);
  steer_state b = state_at(0.0f, 3.0f, 0.0f);
  a.velocity = b.velocity = v2(1.5f, 0.0f);
  check_interpose(a, b, state_at(5.0f, 10.0f, 0.0f));
}
END_TEST

/* ------------------------------------------------------------- kinematic */

START_TEST(test_kinematic_seek_flee) {
  steer_limits l = steer_default_limits();
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  vec2 target = v2(6.0f, -8.0f);
  float closest = 1e9f;
  for (int i = 0; i < (int)(5.0f / DT); i++) {
    steer_kinematic_output o = steer_kinematic_seek(&s, &l, target);
    ck_assert_float_eq_tol(v2_len(o.velocity), l.max_speed, 1e-4f);
    steer_integrate_kinematic(&s, &l, o, DT);
    if (dist(s.position, target) < closest)
      closest = dist(s.position, target);
  }
  ck_assert_float_le(closest, l.max_speed * DT);
  /* The agent faces where it moves. */
  s = state_at(0.0f, 0.0f, 0.0f);
  steer_integrate_kinematic(&s, &l, steer_kinematic_seek(&s, &l, target), DT);
  ck_assert_float_eq_tol(s.orientation, atan2f(-8.0f, 6.0f), 1e-5f);

  /* Flee: the distance grows by exactly max_speed * dt each tick. */
  s = state_at(1.0f, 1.0f, 0.0f);
  float prev = dist(s.position, target);
  for (int i = 0; i < 100; i++) {
    steer_integrate_kinematic(&s, &l, steer_kinematic_flee(&s, &l, target), DT);
    float d = dist(s.position, target);
    ck_assert_float_eq_tol(d - prev, l.max_speed * DT, 1e-3f);
    prev = d;
  }
}
END_TEST

START_TEST(test_kinematic_arrive) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  float dts[] = {0.05f, 0.1f, 0.25f};
  for (unsigned k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    steer_state s = state_at(0.0f, 0.0f, 0.0f);
    vec2 target = v2(-30.0f, 40.0f);
    vec2 axis = v2_norm(target);
    for (int i = 0; i < (int)(30.0f / dts[k]); i++) {
      steer_kinematic_output o = steer_kinematic_arrive(&s, &l, &p, target);
      ck_assert_float_le(v2_len(o.velocity), l.max_speed + 1e-4f);
      steer_integrate_kinematic(&s, &l, o, dts[k]);
      /* Never past the target along the approach. */
      ck_assert_float_ge(v2_dot(v2_sub(target, s.position), axis), -1e-4f);
      ck_assert_float_ge(v2_dot(s.velocity, axis), 0.0f);
    }
    ck_assert_float_lt(dist(s.position, target), p.target_radius);
    steer_kinematic_output o = steer_kinematic_arrive(&s, &l, &p, target);
    ck_assert_float_eq(v2_len(o.velocity), 0.0f);
    ck_assert_float_eq(v2_len(s.velocity), 0.0f);
  }
}
END_TEST

#define WANDER_TICKS 400

static void run_kinematic_wander(uint64_t seed, steer_state *out) {
  steer_limits l = steer_default_limits();
  steer_rng rng;
  steer_rng_seed(&rng, seed);
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  for (int i = 0; i < WANDER_TICKS; i++) {
    steer_kinematic_output o = steer_kinematic_wander(&s, &l, &rng);
    ck_assert_float_eq_tol(v2_len(o.velocity), l.max_speed, 1e-4f);
    ck_assert_float_le(fabsf(o.rotation), l.max_rotation);
    steer_integrate_kinematic(&s, &l, o, DT);
    out[i] = s;
  }
}

static void run_dynamic_wander(uint64_t seed, steer_state *out) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  steer_rng rng;
  steer_rng_seed(&rng, seed);
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  float wander = 0.0f;
  for (int i = 0; i < WANDER_TICKS; i++) {
    float before = wander;
    steer_output o = steer_wander(&s, &l, &p, &wander, &rng, DT);
    /* The wander target drifts by at most wander_rate * dt per tick. */
    ck_assert_float_le(fabsf(steer_wrap_angle(wander - before)), p.wander_rate * DT + 1e-6f);
    ck_assert_float_le(v2_len(o.linear), l.max_acceleration + 1e-4f);
    ck_assert_float_le(fabsf(o.angular), l.max_angular_acceleration);
    steer_integrate_dynamic(&s, &l, o, DT);
    ck_assert_float_le(v2_len(s.velocity), l.max_speed + 1e-4f);
    ck_assert_float_le(fabsf(s.rotation), l.max_rotation);
    out[i] = s;
  }
}

static void check_wander(void (*run)(uint64_t, steer_state *)) {
  static steer_state a[WANDER_TICKS], b[WANDER_TICKS], c[WANDER_TICKS];
  run(42, a);
  run(42, b);
  run(43, c);
  ck_assert_mem_eq(a, b, sizeof a); /* bit for bit */
  ck_assert_msg(memcmp(a, c, sizeof a) != 0, "another seed gave the same walk");
  ck_assert_float_gt(dist(a[WANDER_TICKS - 1].position, c[WANDER_TICKS - 1].position), 0.5f);
  /* It wanders: the heading changes, and it does not stand still. */
  float min_o = 1e9f, max_o = -1e9f;
  for (int i = 0; i < WANDER_TICKS; i++) {
    min_o = fminf(min_o, a[i].orientation);
    max_o = fmaxf(max_o, a[i].orientation);
  }
  ck_assert_float_gt(max_o - min_o, 0.2f);
  ck_assert_float_gt(v2_len(a[WANDER_TICKS - 1].velocity), 1.0f);
}

START_TEST(test_kinematic_wander_reproducible) { check_wander(run_kinematic_wander); }
END_TEST

START_TEST(test_dynamic_wander_reproducible) { check_wander(run_dynamic_wander); }
END_TEST

/* --------------------------------------------------- separation and combining */

START_TEST(test_separation_pushes_apart) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  /* Reach R = 2 + 0.5 + 0.5 = 3 m. */
  steer_state a = state_at(0.0f, 0.0f, 0.0f);
  steer_state b = state_at(0.6f, 0.0f, STEER_PI);
  float radius = l.radius;
  float prev = dist(a.position, b.position);
  for (int i = 0; i < 100; i++) {
    steer_output oa = steer_separation(&a, &l, &p, &b.position, &radius, 1);
    steer_output ob = steer_separation(&b, &l, &p, &a.position, &radius, 1);
    if (prev < 3.0f) {
      ck_assert_float_lt(oa.linear.x, 0.0f);
      ck_assert_float_gt(ob.linear.x, 0.0f);
    }
    steer_integrate_dynamic(&a, &l, oa, DT);
    steer_integrate_dynamic(&b, &l, ob, DT);
    float d = dist(a.position, b.position);
    ck_assert_float_gt(d, prev);
    prev = d;
  }
  ck_assert_float_gt(prev, 3.0f);

  /* Linear falloff: half strength half way, nothing at or beyond the reach. */
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  vec2 n = v2(0.0f, 1.5f);
  steer_output o = steer_separation(&s, &l, &p, &n, &radius, 1);
  ck_assert_float_eq_tol(o.linear.y, -0.5f * l.max_acceleration, 1e-4f);
  ck_assert_float_eq_tol(o.linear.x, 0.0f, 1e-6f);
  n = v2(0.0f, 3.01f);
  o = steer_separation(&s, &l, &p, &n, &radius, 1);
  ck_assert_float_eq(v2_len(o.linear), 0.0f);
  n = v2(3.0f, 0.0f);
  o = steer_separation(&s, &l, &p, &n, NULL, 1); /* NULL radii: same as ours */
  ck_assert_float_eq(v2_len(o.linear), 0.0f);

  /* Coincident: a deterministic, non-zero push; many neighbours stay clipped. */
  vec2 crowd[3] = {s.position, s.position, v2(0.1f, 0.0f)};
  o = steer_separation(&s, &l, &p, crowd, NULL, 3);
  ck_assert_float_le(v2_len(o.linear), l.max_acceleration + 1e-4f);
  ck_assert_float_gt(v2_len(o.linear), 1.0f);
  steer_output again = steer_separation(&s, &l, &p, crowd, NULL, 3);
  ck_assert_mem_eq(&o, &again, sizeof o);
}
END_TEST

/* The scalar definition of steer_separation (steering.h), operation by
 * operation; the library's vector path must match it to the bit. */
static steer_output separation_reference(const steer_state *s, const steer_limits *l, const steer_params *p,
                                         const vec2 *nb, const float *nr, int count) {
  steer_output o = {{0.0f, 0.0f}, 0.0f};
  for (int i = 0; i < count; i++) {
    float r = nr != NULL ? nr[i] : l->radius;
    float reach = p->separation_radius + l->radius + r;
    vec2 away = v2_sub(s->position, nb[i]);
    float d2 = v2_len2(away);
    if (!(reach > 0.0f) || d2 >= reach * reach)
      continue;
    float d = sqrtf(d2);
    vec2 dir = d > 0.0f ? v2_scale(away, 1.0f / d) : v2_scale(steer_heading(s->orientation), -1.0f);
    o.linear = v2_add(o.linear, v2_scale(dir, l->max_acceleration * (reach - d) / reach));
  }
  o.linear = v2_clip(o.linear, l->max_acceleration);
  return o;
}

START_TEST(test_separation_matches_scalar_definition) {
  steer_rng r;
  steer_rng_seed(&r, 99);
  for (int t = 0; t < 2000; t++) {
    float o = steer_rng_range(&r, -3.0f, 3.0f);
    vec2 at = steer_rng_point(&r, -20.0f, 20.0f, -20.0f, 20.0f);
    steer_state s = state_at(at.x, at.y, o);
    steer_limits l = steer_default_limits();
    l.radius = steer_rng_range(&r, 0.0f, 2.0f);
    l.max_acceleration = steer_rng_range(&r, 0.5f, 20.0f);
    steer_params p = steer_default_params();
    p.separation_radius = (t % 7 == 0) ? 0.0f : steer_rng_range(&r, 0.0f, 15.0f);
    vec2 nb[32];
    float nr[32];
    int count = (int)(steer_rng_next(&r) % 33u);
    for (int i = 0; i < count; i++) {
      uint32_t k = steer_rng_next(&r) % 8u;
      if (k == 0)
        nb[i] = s.position; /* coincident */
      else if (k == 1 && i > 0)
        nb[i] = nb[i - 1]; /* a tie */
      else
        nb[i] = v2_add(s.position, steer_rng_point(&r, -20.0f, 20.0f, -20.0f, 20.0f));
      nr[i] = (t % 5 == 0) ? 0.0f : steer_rng_range(&r, 0.0f, 3.0f);
    }
    const float *radii = (t & 1) ? nr : NULL;
    steer_output want = separation_reference(&s, &l, &p, nb, radii, count);
    steer_output got = steer_separation(&s, &l, &p, nb, radii, count);
    ck_assert_msg(memcmp(&want.linear, &got.linear, sizeof(vec2)) == 0 && got.angular == 0.0f,
                  "case %d (%d neighbours): (%a, %a) vs (%a, %a)", t, count, (double)got.linear.x,
                  (double)got.linear.y, (double)want.linear.x, (double)want.linear.y);
  }
}
END_TEST

START_TEST(test_blend_clips) {
  steer_limits l = steer_default_limits();
  steer_output outs[2];
  outs[0].linear = v2(6.0f, 0.0f);
  outs[0].angular = 10.0f;
  outs[1].linear = v2(6.0f, 0.0f);
  outs[1].angular = 10.0f;
  float w[2] = {1.0f, 1.0f};
  steer_output o = steer_blend(outs, w, 2, &l);
  ck_assert_float_eq_tol(v2_len(o.linear), l.max_acceleration, 1e-4f);
  ck_assert_float_eq_tol(o.linear.x, l.max_acceleration, 1e-4f);
  ck_assert_float_eq_tol(o.angular, l.max_angular_acceleration, 1e-4f);
  /* Under the limits it is the plain weighted sum. */
  outs[1].linear = v2(0.0f, -4.0f);
  outs[1].angular = -8.0f;
  w[0] = 0.5f;
  w[1] = 0.25f;
  o = steer_blend(outs, w, 2, &l);
  ck_assert_float_eq_tol(o.linear.x, 3.0f, 1e-5f);
  ck_assert_float_eq_tol(o.linear.y, -1.0f, 1e-5f);
  ck_assert_float_eq_tol(o.angular, 3.0f, 1e-5f);
}
END_TEST

START_TEST(test_priority_first_above_epsilon) {
  steer_output outs[4];
  memset(outs, 0, sizeof outs);
  outs[1].linear = v2(1e-4f, 0.0f); /* below epsilon */
  outs[2].linear = v2(0.0f, 2.0f);
  outs[3].linear = v2(5.0f, 0.0f);
  steer_output o = steer_priority(outs, 4, 1e-3f);
  ck_assert_float_eq(o.linear.y, 2.0f);
  ck_assert_float_eq(o.linear.x, 0.0f);
  outs[1].angular = 0.5f; /* angular alone is enough */
  o = steer_priority(outs, 4, 1e-3f);
  ck_assert_float_eq(o.angular, 0.5f);
  o = steer_priority(outs, 2, 1.0f);
  ck_assert_float_eq(v2_len(o.linear), 0.0f);
  ck_assert_float_eq(o.angular, 0.0f);
}
END_TEST

START_TEST(test_brake_stops) {
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  steer_state s = state_at(0.0f, 0.0f, 1.0f);
  s.velocity = v2(2.0f, -2.0f);
  s.rotation = -3.0f;
  for (int i = 0; i < (int)(3.0f / DT); i++)
    steer_integrate_dynamic(&s, &l, steer_brake(&s, &l, &p), DT);
  ck_assert_float_lt(v2_len(s.velocity), 1e-4f);
  ck_assert_float_lt(fabsf(s.rotation), 1e-4f);
}
END_TEST

/* ------------------------------------------------------------ integrators */

START_TEST(test_integrators_respect_limits) {
  steer_limits l = steer_default_limits();
  steer_state s = state_at(0.0f, 0.0f, 3.1f);
  steer_output push;
  push.linear = v2(100.0f, 50.0f);
  push.angular = 200.0f;
  for (int i = 0; i < 200; i++) {
    vec2 before = s.velocity;
    steer_integrate_dynamic(&s, &l, push, DT);
    ck_assert_float_le(v2_len(s.velocity), l.max_speed + 1e-4f);
    ck_assert_float_le(v2_len(v2_sub(s.velocity, before)) / DT, l.max_acceleration + 1e-3f);
    ck_assert_float_le(fabsf(s.rotation), l.max_rotation);
    ck_assert(s.orientation > -STEER_PI && s.orientation <= STEER_PI);
  }
  ck_assert_float_eq_tol(v2_len(s.velocity), l.max_speed, 1e-4f);

  steer_kinematic_output k;
  k.velocity = v2(-30.0f, 0.0f);
  k.rotation = -40.0f;
  s = state_at(0.0f, 0.0f, -3.1f);
  for (int i = 0; i < 200; i++) {
    steer_integrate_kinematic(&s, &l, k, DT);
    ck_assert_float_le(v2_len(s.velocity), l.max_speed + 1e-4f);
    ck_assert_float_le(fabsf(s.rotation), l.max_rotation);
    ck_assert(s.orientation > -STEER_PI && s.orientation <= STEER_PI);
  }
  ck_assert_float_eq_tol(s.position.x, -l.max_speed * DT * 200.0f, 1e-2f);
  /* With no rotation the kinematic agent faces its velocity. */
  k.rotation = 0.0f;
  k.velocity = v2(0.0f, -1.0f);
  steer_integrate_kinematic(&s, &l, k, DT);
  ck_assert_float_eq_tol(s.orientation, -STEER_PI / 2.0f, 1e-6f);

  steer_heading_output h;
  h.speed = 50.0f;
  h.rotation = 9.0f;
  s = state_at(0.0f, 0.0f, 3.0f);
  float prev_speed = 0.0f;
  for (int i = 0; i < 200; i++) {
    vec2 before = s.position;
    steer_integrate_heading(&s, &l, h, DT);
    float speed = v2_len(s.velocity);
    ck_assert_float_le(speed, l.max_speed + 1e-4f);
    ck_assert_float_le(speed - prev_speed, l.max_acceleration * DT + 1e-4f);
    ck_assert_float_le(fabsf(s.rotation), l.max_rotation);
    ck_assert(s.orientation > -STEER_PI && s.orientation <= STEER_PI);
    /* It moves along its (new) heading. */
    vec2 step = v2_sub(s.position, before);
    ck_assert_float_eq_tol(v2_cross(step, steer_heading(s.orientation)), 0.0f, 1e-5f);
    prev_speed = speed;
  }
  ck_assert_float_eq_tol(prev_speed, l.max_speed, 1e-4f);
  h.speed = 0.0f;
  for (int i = 0; i < 20; i++)
    steer_integrate_heading(&s, &l, h, DT);
  ck_assert_float_eq(v2_len(s.velocity), 0.0f);
}
END_TEST

START_TEST(test_heading_turn_toward) {
  steer_limits l = steer_default_limits();
  steer_state s = state_at(0.0f, 0.0f, 0.0f);
  /* 0.1 rad to the left at 2 m/s: omega = 0.1 * 2. */
  float w = steer_heading_turn_toward(&s, &l, 2.0f, v2(cosf(0.1f), sinf(0.1f)));
  ck_assert_float_eq_tol(w, 0.2f, 1e-5f);
  w = steer_heading_turn_toward(&s, &l, 2.0f, v2(cosf(-0.1f), sinf(-0.1f)));
  ck_assert_float_eq_tol(w, -0.2f, 1e-5f);
  w = steer_heading_turn_toward(&s, &l, 20.0f, v2(-1.0f, 0.01f)); /* behind: clipped */
  ck_assert_float_eq_tol(w, l.max_rotation, 1e-5f);
  /* Across +-pi it takes the short way. */
  s.orientation = DEG(175.0f);
  w = steer_heading_turn_toward(&s, &l, 1.0f, v2(cosf(DEG(-175.0f)), sinf(DEG(-175.0f))));
  ck_assert_float_eq_tol(w, DEG(10.0f), 1e-4f);
  /* Driven by the heading integrator it homes in on the point. */
  s = state_at(0.0f, 0.0f, STEER_PI / 2.0f);
  vec2 target = v2(20.0f, 0.0f);
  steer_heading_output h;
  h.speed = 2.0f;
  float closest = 1e9f;
  for (int i = 0; i < (int)(20.0f / DT); i++) {
    h.rotation = steer_heading_turn_toward(&s, &l, v2_len(s.velocity), target);
    steer_integrate_heading(&s, &l, h, DT);
    closest = fminf(closest, dist(s.position, target));
  }
  ck_assert_float_lt(closest, 0.2f);
}
END_TEST

START_TEST(test_default_values) {
  steer_params p = steer_default_params();
  steer_limits l = steer_default_limits();
  ck_assert_float_eq(p.time_to_target, 0.1f);
  ck_assert_float_eq(p.target_radius, 0.5f);
  ck_assert_float_eq(p.slow_radius, 0.0f);
  ck_assert_float_eq(p.kinematic_time_to_target, 0.25f);
  ck_assert_float_eq(p.align_target_radius, 0.02f);
  ck_assert_float_eq(p.align_slow_radius, 0.6f);
  ck_assert_float_eq(p.max_prediction, 2.0f);
  ck_assert_float_eq(p.panic_radius, 0.0f);
  ck_assert_float_eq(l.max_speed, 3.0f);
  ck_assert_float_eq(l.max_acceleration, 6.0f);
  ck_assert_float_eq(l.max_rotation, 4.0f);
  ck_assert_float_eq(l.max_angular_acceleration, 16.0f);
  ck_assert_float_eq(l.radius, 0.5f);
}
END_TEST

/* The core's own atan2 and sincos (vec2.h) against double-precision libm: within
 * about an ulp of pi, the conventions at the edges kept. */
START_TEST(test_trig_accuracy) {
  double worst_atan = 0.0, worst_sc = 0.0;
  for (int i = 0; i <= 200000; i++) {
    double t = -3.3 + 6.6 * i / 200000.0;
    float th = (float)t, sn, cs;
    steer_sincos(th, &sn, &cs);
    worst_sc = fmax(worst_sc, fmax(fabs(sn - sin((double)th)), fabs(cs - cos((double)th))));
    float len = 0.001f + (float)(i % 13) * 7.0f;
    float x = (float)cos(t) * len, y = (float)sin(t) * len;
    worst_atan = fmax(worst_atan, fabs(steer_atan2(y, x) - atan2((double)y, (double)x)));
  }
  ck_assert_msg(worst_sc < 2e-7, "sincos error %g", worst_sc);
  ck_assert_msg(worst_atan < 5e-7, "atan2 error %g", worst_atan);
  /* Large arguments (wander adds angles) and the libm fallback. */
  for (float th = -2000.0f; th <= 2000.0f; th += 0.37f) {
    float sn, cs;
    steer_sincos(th, &sn, &cs);
    ck_assert_msg(fabs(sn - sin((double)th)) < 2e-6 && fabs(cs - cos((double)th)) < 2e-6, "sincos(%g)",
                  (double)th);
  }
  float sn, cs;
  steer_sincos(3e6f, &sn, &cs);
  ck_assert_float_eq(sn, sinf(3e6f));
  /* Edges: the zero vector, the axes, and -0 on the negative x axis (pi, not -pi). */
  ck_assert_float_eq(steer_atan2(0.0f, 0.0f), 0.0f);
  ck_assert_float_eq(steer_atan2(0.0f, 2.0f), 0.0f);
  ck_assert_float_eq_tol(steer_atan2(2.0f, 0.0f), STEER_PI / 2.0f, 1e-7f);
  ck_assert_float_eq_tol(steer_atan2(-2.0f, 0.0f), -STEER_PI / 2.0f, 1e-7f);
  ck_assert_float_gt(steer_atan2(0.0f, -1.0f), 3.1415925f);
  ck_assert_float_gt(steer_atan2(-0.0f, -1.0f), 3.1415925f);
  ck_assert_float_le(steer_atan2(-0.0f, -1.0f), STEER_PI);
  ck_assert_float_lt(steer_atan2(-1e-30f, -1.0f), -3.1415925f);
  vec2 h = steer_heading(0.0f);
  ck_assert_float_eq(h.x, 1.0f);
  ck_assert_float_eq(h.y, 0.0f);
}
END_TEST

/* ------------------------------------------------- four agents at a time */

/* A float for the batch test: mostly ordinary, sometimes an edge (zero, tiny,
 * huge, infinite, NaN, exactly the limit of a branch). */
static float batch_value(steer_rng *r, float lo, float hi, int edgy) {
  uint32_t k = steer_rng_next(r) % 40u;
  if (!edgy || k >= 12)
    return steer_rng_range(r, lo, hi);
  static const float edges[] = {0.0f,     -0.0f, 1e-30f,   -1e-40f,   1e19f, -3e38f,
                                INFINITY, NAN,   STEER_PI, -STEER_PI, 0.5f,  4.0f};
  return edges[k];
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* steer_arrive_look_x4 against steer_arrive + steer_look_where_going, bit for
 * bit, over ordinary agents and every edge the scalar code branches on:
 * inside target_radius, on the target, standing still, inside the align dead
 * band, orientations beyond +-pi (the scalar wrap in double), lengths whose
 * square overflows, infinities and NaN. Ordinary lanes must take the vector
 * path (with SSE2), so the comparison is not the scalar code against itself. */
START_TEST(test_arrive_look_x4_bit_identical) {
  steer_rng r;
  steer_rng_seed(&r, 2026u);
  long vector_lanes = 0, ordinary_quads = 0;
  for (int round = 0; round < 40000; round++) {
    int edgy = round % 2;
    steer_state st[4];
    steer_limits lim[4];
    steer_params par[4];
    vec2 tgt[4];
    const steer_state *sp[4];
    const steer_limits *lp[4];
    const steer_params *pp[4];
    for (int i = 0; i < 4; i++) {
      memset(&st[i], 0, sizeof st[i]);
      st[i].position = v2(batch_value(&r, -500.0f, 500.0f, edgy), batch_value(&r, -500.0f, 500.0f, edgy));
      uint32_t v = steer_rng_next(&r) % 8u;
      st[i].velocity = v == 0 ? v2(0.0f, 0.0f)
                              : v2(batch_value(&r, -3.0f, 3.0f, edgy), batch_value(&r, -3.0f, 3.0f, edgy));
      st[i].orientation = steer_rng_next(&r) % 16u == 0 ? batch_value(&r, -20.0f, 20.0f, edgy)
                                                        : batch_value(&r, -STEER_PI, STEER_PI, edgy);
      st[i].rotation = batch_value(&r, -8.0f, 8.0f, edgy);
      lim[i] = steer_default_limits();
      lim[i].max_speed = steer_rng_range(&r, 0.5f, 6.0f);
      lim[i].max_acceleration = steer_rng_range(&r, 1.0f, 20.0f);
      lim[i].max_rotation = steer_rng_range(&r, 1.0f, 8.0f);
      lim[i].max_angular_acceleration = steer_rng_range(&r, 1.0f, 30.0f);
      par[i] = steer_default_params();
      par[i].slow_radius = steer_rng_range(&r, 0.1f, 10.0f);
      par[i].target_radius = steer_rng_range(&r, 0.1f, 2.0f);
      par[i].align_slow_radius = steer_rng_range(&r, 0.05f, 1.5f);
      uint32_t t = steer_rng_next(&r) % 8u;
      if (t == 0)
        tgt[i] = st[i].position; /* on the target */
      else if (t == 1)           /* inside target_radius */
        tgt[i] = v2_add(st[i].position, v2(0.5f * par[i].target_radius, 0.0f));
      else
        tgt[i] = v2(batch_value(&r, -500.0f, 500.0f, edgy), batch_value(&r, -500.0f, 500.0f, edgy));
      if (steer_rng_next(&r) % 8u == 0 && v2_len2(st[i].velocity) > 0.0f) /* in the dead band */
        st[i].orientation = steer_orientation_of(st[i].velocity) + 0.5f * par[i].align_target_radius;
      sp[i] = &st[i];
      lp[i] = &lim[i];
      pp[i] = &par[i];
    }
    steer_output out[4];
    int done = steer_arrive_look_x4(sp, lp, pp, tgt, out);
    vector_lanes += done;
    if (!edgy) {
      int in_range = 1;
      for (int i = 0; i < 4; i++)
        in_range &= st[i].orientation > -STEER_PI && st[i].orientation <= STEER_PI;
      if (in_range) {
        ordinary_quads++;
#if defined(__SSE2__)
        ck_assert_int_eq(done, 4);
#endif
      }
    }
    for (int i = 0; i < 4; i++) {
      steer_output a = steer_arrive(sp[i], lp[i], pp[i], tgt[i]);
      steer_output b = steer_look_where_going(sp[i], lp[i], pp[i]);
      ck_assert_msg(same_bits(out[i].linear.x, a.linear.x) && same_bits(out[i].linear.y, a.linear.y) &&
                        same_bits(out[i].angular, b.angular),
                    "round %d lane %d: batch (%a, %a, %a), scalar (%a, %a, %a); p (%a, %a) v (%a, %a) "
                    "theta %a omega %a target (%a, %a)",
                    round, i, (double)out[i].linear.x, (double)out[i].linear.y, (double)out[i].angular,
                    (double)a.linear.x, (double)a.linear.y, (double)b.angular, (double)st[i].position.x,
                    (double)st[i].position.y, (double)st[i].velocity.x, (double)st[i].velocity.y,
                    (double)st[i].orientation, (double)st[i].rotation, (double)tgt[i].x, (double)tgt[i].y);
    }
  }
  ck_assert_int_gt(ordinary_quads, 1000);
#if defined(__SSE2__)
  ck_assert_int_gt(vector_lanes, 4 * ordinary_quads);
#endif
}
END_TEST

/* steer_wander_x4 against four steer_wander calls, bit for bit: outputs,
 * wander angles and generator states, over ordinary agents and the edges
 * (orientations beyond +-pi and beyond 1e5 rad, NaN, infinities, huge rates,
 * zero offsets and radii so the target sits on the agent). */
START_TEST(test_wander_x4_bit_identical) {
  steer_rng r;
  steer_rng_seed(&r, 4242u);
  long vector_lanes = 0, ordinary_quads = 0;
  for (int round = 0; round < 40000; round++) {
    int edgy = round % 2;
    steer_state st[4];
    steer_limits lim[4];
    steer_params par[4];
    float wa[4], wb[4];
    steer_rng ga[4], gb[4];
    const steer_state *sp[4];
    const steer_limits *lp[4];
    const steer_params *pp[4];
    float *wp[4];
    steer_rng *gp[4];
    int ordinary = 1;
    for (int i = 0; i < 4; i++) {
      memset(&st[i], 0, sizeof st[i]);
      st[i].position = v2(batch_value(&r, -500.0f, 500.0f, edgy), batch_value(&r, -500.0f, 500.0f, edgy));
      st[i].velocity = v2(batch_value(&r, -3.0f, 3.0f, edgy), batch_value(&r, -3.0f, 3.0f, edgy));
      uint32_t o = steer_rng_next(&r) % 16u;
      st[i].orientation = o == 0   ? batch_value(&r, -2e5f, 2e5f, 1)
                          : o == 1 ? batch_value(&r, -20.0f, 20.0f, edgy)
                                   : batch_value(&r, -STEER_PI, STEER_PI, edgy);
      ordinary &= st[i].orientation > -STEER_PI && st[i].orientation <= STEER_PI; /* as the world keeps it */
      st[i].rotation = batch_value(&r, -8.0f, 8.0f, edgy);
      lim[i] = steer_default_limits();
      lim[i].max_acceleration = steer_rng_range(&r, 1.0f, 20.0f);
      lim[i].max_rotation = steer_rng_range(&r, 1.0f, 8.0f);
      lim[i].max_angular_acceleration = steer_rng_range(&r, 1.0f, 30.0f);
      par[i] = steer_default_params();
      par[i].wander_rate = edgy && steer_rng_next(&r) % 8u == 0 ? 1e6f : steer_rng_range(&r, 0.0f, 8.0f);
      par[i].wander_offset = steer_rng_next(&r) % 16u == 0 ? 0.0f : steer_rng_range(&r, 0.0f, 6.0f);
      par[i].wander_radius = steer_rng_next(&r) % 16u == 0 ? 0.0f : steer_rng_range(&r, 0.0f, 3.0f);
      wa[i] = wb[i] = batch_value(&r, -STEER_PI, STEER_PI, edgy);
      steer_rng_seed(&ga[i], steer_rng_next(&r));
      gb[i] = ga[i];
      sp[i] = &st[i];
      lp[i] = &lim[i];
      pp[i] = &par[i];
      wp[i] = &wa[i];
      gp[i] = &ga[i];
    }
    steer_output out[4];
    int done = steer_wander_x4(sp, lp, pp, wp, gp, DT, out);
    vector_lanes += done;
    if (!edgy && ordinary) {
      ordinary_quads++;
#if defined(__SSE2__)
      ck_assert_int_eq(done, 4);
#endif
    }
    for (int i = 0; i < 4; i++) {
      steer_output want = steer_wander(sp[i], lp[i], pp[i], &wb[i], &gb[i], DT);
      ck_assert_msg(same_bits(out[i].linear.x, want.linear.x) && same_bits(out[i].linear.y, want.linear.y) &&
                        same_bits(out[i].angular, want.angular) && same_bits(wa[i], wb[i]),
                    "round %d lane %d: batch (%a, %a, %a, w %a), scalar (%a, %a, %a, w %a); theta %a", round,
                    i, (double)out[i].linear.x, (double)out[i].linear.y, (double)out[i].angular,
                    (double)wa[i], (double)want.linear.x, (double)want.linear.y, (double)want.angular,
                    (double)wb[i], (double)st[i].orientation);
      ck_assert(memcmp(&ga[i], &gb[i], sizeof ga[i]) == 0);
    }
  }
  ck_assert_int_gt(ordinary_quads, 1000);
#if defined(__SSE2__)
  ck_assert_int_gt(vector_lanes, 4 * ordinary_quads);
#endif
}
END_TEST

static int same_state(const steer_state *a, const steer_state *b) {
  return same_bits(a->position.x, b->position.x) && same_bits(a->position.y, b->position.y) &&
         same_bits(a->velocity.x, b->velocity.x) && same_bits(a->velocity.y, b->velocity.y) &&
         same_bits(a->orientation, b->orientation) && same_bits(a->rotation, b->rotation);
}

/* steer_integrate_dynamic_x4 and steer_integrate_heading_x4 against the scalar
 * integrators, bit for bit (every field of the state), over ordinary agents
 * and the edges: outputs beyond the limits, lengths whose square overflows,
 * zero and negative speeds asked of the heading model (fmaxf with two zeros),
 * orientations beyond +-pi and 1e5 rad, infinities, NaN. Ordinary quads must
 * take the vector path. */
START_TEST(test_integrate_x4_bit_identical) {
  steer_rng r;
  steer_rng_seed(&r, 777u);
  long vector_lanes = 0, ordinary_quads = 0;
  for (int round = 0; round < 40000; round++) {
    int edgy = round % 2, heading = (round / 2) % 2;
    steer_state a[4], b[4];
    steer_limits lim[4];
    steer_output od[4];
    steer_heading_output oh[4];
    steer_state *sp[4];
    const steer_limits *lp[4];
    int ordinary = !edgy;
    for (int i = 0; i < 4; i++) {
      lim[i] = steer_default_limits();
      lim[i].max_speed = steer_rng_range(&r, 0.5f, 6.0f);
      lim[i].max_acceleration = steer_rng_range(&r, 0.5f, 20.0f);
      lim[i].max_rotation = steer_rng_range(&r, 0.5f, 8.0f);
      lim[i].max_angular_acceleration = steer_rng_range(&r, 1.0f, 30.0f);
      memset(&a[i], 0, sizeof a[i]);
      a[i].position = v2(batch_value(&r, -500.0f, 500.0f, edgy), batch_value(&r, -500.0f, 500.0f, edgy));
      uint32_t o = steer_rng_next(&r) % 16u;
      a[i].orientation = o == 0   ? batch_value(&r, -2e5f, 2e5f, 1)
                         : o == 1 ? batch_value(&r, -20.0f, 20.0f, edgy)
                                  : batch_value(&r, -STEER_PI, STEER_PI, edgy);
      ordinary &= a[i].orientation > -STEER_PI && a[i].orientation <= STEER_PI;
      a[i].rotation = batch_value(&r, -8.0f, 8.0f, edgy);
      if (heading) {
        float speed = steer_rng_next(&r) % 8u == 0 ? 0.0f : batch_value(&r, 0.0f, lim[i].max_speed, edgy);
        a[i].velocity = v2_scale(steer_heading(a[i].orientation), speed);
        uint32_t w = steer_rng_next(&r) % 8u;
        oh[i].speed = w == 0 ? 0.0f : w == 1 ? -1.0f : batch_value(&r, 0.0f, 8.0f, edgy);
        oh[i].rotation = batch_value(&r, -10.0f, 10.0f, edgy);
      } else {
        a[i].velocity = v2(batch_value(&r, -6.0f, 6.0f, edgy), batch_value(&r, -6.0f, 6.0f, edgy));
        od[i].linear = v2(batch_value(&r, -30.0f, 30.0f, edgy), batch_value(&r, -30.0f, 30.0f, edgy));
        od[i].angular = batch_value(&r, -40.0f, 40.0f, edgy);
      }
      b[i] = a[i];
      sp[i] = &a[i];
      lp[i] = &lim[i];
    }
    int done =
        heading ? steer_integrate_heading_x4(sp, lp, oh, DT) : steer_integrate_dynamic_x4(sp, lp, od, DT);
    vector_lanes += done;
    if (ordinary) {
      ordinary_quads++;
#if defined(__SSE2__)
      ck_assert_msg(done == 4, "round %d: an ordinary quad took the scalar path (%d lanes)", round, done);
#endif
    }
    for (int i = 0; i < 4; i++) {
      if (heading)
        steer_integrate_heading(&b[i], lp[i], oh[i], DT);
      else
        steer_integrate_dynamic(&b[i], lp[i], od[i], DT);
      ck_assert_msg(
          same_state(&a[i], &b[i]),
          "round %d lane %d (%s): batch p (%a, %a) v (%a, %a) theta %a omega %a, scalar p (%a, %a) v "
          "(%a, %a) theta %a omega %a",
          round, i, heading ? "heading" : "dynamic", (double)a[i].position.x, (double)a[i].position.y,
          (double)a[i].velocity.x, (double)a[i].velocity.y, (double)a[i].orientation, (double)a[i].rotation,
          (double)b[i].position.x, (double)b[i].position.y, (double)b[i].velocity.x, (double)b[i].velocity.y,
          (double)b[i].orientation, (double)b[i].rotation);
    }
  }
  ck_assert_int_gt(ordinary_quads, 1000);
#if defined(__SSE2__)
  ck_assert_int_gt(vector_lanes, 4 * ordinary_quads);
#endif
}
END_TEST

static Suite *steering_suite(void) {
  Suite *s = suite_create("steering");
  TCase *tc = tcase_create("behaviours");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_default_values);
  tcase_add_test(tc, test_trig_accuracy);
  tcase_add_test(tc, test_arrive_from_rest);
  tcase_add_test(tc, test_arrive_sideways_start);
  tcase_add_test(tc, test_arrive_low_acceleration);
  tcase_add_test(tc, test_arrive_small_slow_radius_and_target_radius);
  tcase_add_test(tc, test_arrive_no_slow_radius);
  tcase_add_test(tc, test_arrive_inside_radius_brakes);
  tcase_add_test(tc, test_seek_reaches_target);
  tcase_add_test(tc, test_flee_distance_grows);
  tcase_add_test(tc, test_flee_panic_radius);
  tcase_add_test(tc, test_velocity_match_converges);
  tcase_add_test(tc, test_align_settles_without_oscillation);
  tcase_add_test(tc, test_align_short_way_across_pi);
  tcase_add_test(tc, test_face_turns_to_target);
  tcase_add_test(tc, test_face_zero_direction_does_nothing);
  tcase_add_test(tc, test_look_where_going);
  tcase_add_test(tc, test_pursue_beats_seek);
  tcase_add_test(tc, test_pursue_head_on_seeks_position);
  tcase_add_test(tc, test_pursue_max_prediction_caps);
  tcase_add_test(tc, test_evade_distance_grows);
  tcase_add_test(tc, test_evade_flees_predicted_position);
  tcase_add_test(tc, test_interpose_static_pair);
  tcase_add_test(tc, test_interpose_moving_pair);
  tcase_add_test(tc, test_kinematic_seek_flee);
  tcase_add_test(tc, test_kinematic_arrive);
  tcase_add_test(tc, test_kinematic_wander_reproducible);
  tcase_add_test(tc, test_dynamic_wander_reproducible);
  tcase_add_test(tc, test_separation_pushes_apart);
  tcase_add_test(tc, test_separation_matches_scalar_definition);
  tcase_add_test(tc, test_blend_clips);
  tcase_add_test(tc, test_priority_first_above_epsilon);
  tcase_add_test(tc, test_brake_stops);
  tcase_add_test(tc, test_integrators_respect_limits);
  tcase_add_test(tc, test_heading_turn_toward);
  tcase_add_test(tc, test_arrive_look_x4_bit_identical);
  tcase_add_test(tc, test_wander_x4_bit_identical);
  tcase_add_test(tc, test_integrate_x4_bit_identical);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return check_run(steering_suite()); }

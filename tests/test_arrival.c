/* test_arrival.c: arrival's physical properties in a world (the batch lanes and
 * the ARRIVED event included), dynamic agents with the default params.
 *
 * A clear trip of length L at max speed v and max acceleration a arrives within
 * 1.1 L / v plus the time to reach v, passes the goal by no more than a few
 * centimetres and ends at rest; a path's intermediate nodes keep the speed; the
 * same run twice gives the same state hashes. Loops record the worst value seen
 * and assert once, so a failure names the number that broke. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check_run.h"
#include "world.h"

#define DT 0.05f

static steer_world *trip_world(void) {
  steer_world_config cfg = steer_default_world_config();
  steer_world *w = steer_world_create(&cfg);
  ck_assert_ptr_nonnull(w);
  return w;
}

static steer_id spawn_arriving(steer_world *w, vec2 at, vec2 goal, float max_speed, float max_acc) {
  steer_agent_desc d = steer_default_agent_desc();
  d.model = STEER_MODEL_DYNAMIC;
  d.state.position = at;
  d.limits.max_speed = max_speed;
  d.limits.max_acceleration = max_acc;
  d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_ARRIVE);
  d.behaviour.target.kind = STEER_TARGET_POINT;
  d.behaviour.target.point = goal;
  steer_id id;
  ck_assert_int_eq(steer_world_spawn(w, &d, 0, &id), STEER_OK);
  return id;
}

static int arrived_now(const steer_world *w, steer_id id) {
  uint32_t n;
  const steer_event *ev = steer_world_events(w, &n);
  for (uint32_t i = 0; i < n; i++)
    if (ev[i].agent == id && ev[i].type == STEER_EVENT_ARRIVED)
      return 1;
  return 0;
}

typedef struct trip {
  float arrived; /* s, the ARRIVED event */
  float rest;    /* s, first at rest (speed < 1 mm/s) */
  float beyond;  /* m, farthest past the goal along the trip */
  float top;     /* m/s, highest speed */
} trip;

/* A trip of length len along (0.6, 0.8), 60 s at most. */
static trip run_trip(float len, float max_speed, float max_acc, uint64_t *hash) {
  steer_world *w = trip_world();
  vec2 axis = v2(0.6f, 0.8f), goal = v2_scale(axis, len);
  steer_id id = spawn_arriving(w, v2(0.0f, 0.0f), goal, max_speed, max_acc);
  trip t = {-1.0f, -1.0f, -INFINITY, 0.0f};
  for (int i = 1; i <= (int)(60.0f / DT); i++) {
    steer_world_step(w, DT);
    steer_agent_info info;
    ck_assert_int_eq(steer_world_get(w, id, &info), STEER_OK);
    float speed = v2_len(info.state.velocity);
    t.top = fmaxf(t.top, speed);
    t.beyond = fmaxf(t.beyond, v2_dot(info.state.position, axis) - len);
    if (t.arrived < 0.0f && arrived_now(w, id))
      t.arrived = (float)i * DT;
    if (t.arrived >= 0.0f && t.rest < 0.0f && speed < 1e-3f)
      t.rest = (float)i * DT;
  }
  if (hash)
    *hash = steer_world_hash(w);
  steer_world_destroy(w);
  return t;
}

static void check_trip(float len, float max_speed, float max_acc) {
  trip t = run_trip(len, max_speed, max_acc, NULL);
  float bound = 1.1f * len / max_speed + max_speed / max_acc;
  ck_assert_msg(t.arrived > 0.0f && t.arrived <= bound,
                "%g m at %g m/s, %g m/s^2: arrived at %g s, bound %g s", (double)len, (double)max_speed,
                (double)max_acc, (double)t.arrived, (double)bound);
  ck_assert_msg(t.rest > 0.0f && t.rest <= bound + 1.5f, "%g m: at rest at %g s (arrived %g s)", (double)len,
                (double)t.rest, (double)t.arrived);
  ck_assert_msg(t.beyond <= 0.05f, "%g m: passed the goal by %g m", (double)len, (double)t.beyond);
  ck_assert_msg(t.top <= max_speed + 1e-4f, "%g m: speed %g above %g", (double)len, (double)t.top,
                (double)max_speed);
}

START_TEST(test_clear_trip) {
  check_trip(3.2f, 3.0f, 6.0f);
  check_trip(10.0f, 3.0f, 6.0f);
  check_trip(20.0f, 3.0f, 6.0f);
  check_trip(50.0f, 3.0f, 6.0f);
  check_trip(20.0f, 1.5f, 4.0f);
  check_trip(20.0f, 6.0f, 2.0f);
}
END_TEST

/* A path of goals on a line: the agent keeps its speed through the
 * intermediate ones and brakes only for the last. */
START_TEST(test_chain_flows) {
  steer_world *w = trip_world();
  steer_id id = spawn_arriving(w, v2(0.0f, 0.0f), v2(0.0f, 0.0f), 3.0f, 6.0f);
  const vec2 goals[4] = {{8.0f, 0.0f}, {16.0f, 0.0f}, {24.0f, 0.0f}, {32.0f, 0.0f}};
  ck_assert_int_eq(steer_world_set_path(w, id, goals, 4, 0.5f, STEER_PATH_ONCE, STEER_CORNER_NONE), STEER_OK);
  float slowest = INFINITY, done = -1.0f;
  for (int i = 1; i <= (int)(30.0f / DT) && done < 0.0f; i++) {
    steer_world_step(w, DT);
    steer_agent_info info;
    ck_assert_int_eq(steer_world_get(w, id, &info), STEER_OK);
    float x = info.state.position.x;
    if (x > 6.0f && x < 26.0f)
      slowest = fminf(slowest, v2_len(info.state.velocity));
    uint32_t n;
    const steer_event *ev = steer_world_events(w, &n);
    for (uint32_t k = 0; k < n; k++)
      if (ev[k].agent == id && ev[k].type == STEER_EVENT_PATH_FINISHED)
        done = (float)i * DT;
  }
  steer_world_destroy(w);
  ck_assert_msg(slowest >= 2.9f, "slowed to %g m/s at an intermediate goal", (double)slowest);
  ck_assert_msg(done > 0.0f && done <= 1.1f * 32.0f / 3.0f + 0.5f, "finished at %g s", (double)done);
}
END_TEST

/* An agent that passes its goals (STEER_ARRIVAL_PASS), sent on to the next
 * one at each ARRIVED as a client would (by arrive, by_path 0), or along a
 * once path of the same four goals (by_path 1): it never slows below 2.9 of
 * its 3 m/s, is done with the last goal as soon as full speed can get there,
 * then holds: at rest past the goal by no more than its braking distance,
 * and not back. */
START_TEST(test_pass_keeps_speed) {
  const int by_path = _i;
  const float v = 3.0f, a = 6.0f, radius = 0.5f, brake = v * v / (2.0f * a);
  const vec2 goals[4] = {{8.0f, 0.0f}, {16.0f, 0.0f}, {24.0f, 0.0f}, {32.0f, 0.0f}};
  steer_world *w = trip_world();
  steer_id id = spawn_arriving(w, v2(0.0f, 0.0f), goals[0], v, a);
  steer_behaviour b = steer_default_behaviour(STEER_BEHAVIOUR_ARRIVE);
  b.target.kind = STEER_TARGET_POINT;
  b.target.point = goals[0];
  b.arrival = STEER_ARRIVAL_PASS;
  ck_assert_int_eq(steer_world_set_behaviour(w, id, &b), STEER_OK);
  if (by_path)
    ck_assert_int_eq(steer_world_set_path(w, id, goals, 4, radius, STEER_PATH_ONCE, STEER_CORNER_NONE),
                     STEER_OK);
  const uint8_t done_type = by_path ? STEER_EVENT_PATH_FINISHED : STEER_EVENT_ARRIVED;
  int next = 1;
  float slowest = INFINITY, done = -1.0f, rest_x = NAN;
  for (int i = 1; i <= (int)(30.0f / DT); i++) {
    steer_world_step(w, DT);
    steer_agent_info info;
    ck_assert_int_eq(steer_world_get(w, id, &info), STEER_OK);
    float speed = v2_len(info.state.velocity);
    if (done < 0.0f && info.state.position.x > 1.0f)
      slowest = fminf(slowest, speed);
    if (done >= 0.0f && speed < 1e-3f && isnan(rest_x))
      rest_x = info.state.position.x;
    uint32_t n;
    const steer_event *ev = steer_world_events(w, &n);
    for (uint32_t k = 0; k < n; k++) {
      if (ev[k].agent != id || ev[k].type != done_type)
        continue;
      if (by_path || next == 4) {
        done = (float)i * DT;
      } else {
        b.target.point = goals[next++];
        ck_assert_int_eq(steer_world_set_behaviour(w, id, &b), STEER_OK);
      }
    }
  }
  steer_agent_info info;
  ck_assert_int_eq(steer_world_get(w, id, &info), STEER_OK);
  steer_world_destroy(w);
  /* Full speed from rest, then the line to the radius at v (ticks of DT). */
  float fastest = (32.0f - radius) / v + v / (2.0f * a);
  ck_assert_msg(slowest >= 2.9f, "slowed to %g m/s before the last goal", (double)slowest);
  ck_assert_msg(done > 0.0f && done <= fastest + 2.0f * DT, "done at %g s, full speed gets there in %g s",
                (double)done, (double)fastest);
  ck_assert_msg(!isnan(rest_x) && rest_x > 32.0f - radius && rest_x <= 32.0f - radius + brake + 0.2f,
                "came to rest at x = %g (braking from the radius takes %g m)", (double)rest_x, (double)brake);
  ck_assert_msg(fabsf(info.state.position.x - rest_x) < 1e-3f, "went from %g back to %g", (double)rest_x,
                (double)info.state.position.x);
}
END_TEST

START_TEST(test_trip_replays) {
  uint64_t a, b;
  run_trip(20.0f, 3.0f, 6.0f, &a);
  run_trip(20.0f, 3.0f, 6.0f, &b);
  ck_assert_uint_eq(a, b);
}
END_TEST

static Suite *arrival_suite(void) {
  Suite *s = suite_create("arrival");
  TCase *tc = tcase_create("physics");
  tcase_add_test(tc, test_clear_trip);
  tcase_add_test(tc, test_chain_flows);
  tcase_add_loop_test(tc, test_pass_keeps_speed, 0, 2);
  tcase_add_test(tc, test_trip_replays);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return check_run(arrival_suite()); }

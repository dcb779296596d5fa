/* test_path.c: path following, modes and cornering (path.c), simulated with the
 * real integrators at a fixed tick. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "path.h"

#define DT         0.05f
#define MAX_EVENTS 256
#define DEG        (STEER_PI / 180.0f)

typedef enum sim_model { SIM_KINEMATIC, SIM_DYNAMIC, SIM_HEADING } sim_model;

/* One agent following one path, with every event it reported. */
typedef struct sim {
  steer_state s;
  steer_limits l;
  steer_params p;
  steer_path path;
  steer_path_cursor c;
  sim_model model;
  float t; /* s */
  int n_wp;
  uint32_t wp[MAX_EVENTS];
  float wp_t[MAX_EVENTS];
  int n_rev;
  uint32_t rev[MAX_EVENTS];
  float rev_t[MAX_EVENTS];
  int n_fin;
  float fin_t;
  uint32_t last_reached;
} sim;

static void sim_init(sim *m, const vec2 *points, uint32_t count, float radius, steer_path_mode mode,
                     steer_cornering cornering, sim_model model, vec2 start, float theta) {
  memset(m, 0, sizeof *m);
  m->s.position = start;
  m->s.orientation = theta;
  m->l = steer_default_limits();
  m->p = steer_default_params();
  m->path.points = points;
  m->path.count = count;
  m->path.radius = radius;
  m->path.mode = (uint8_t)mode;
  m->path.cornering = (uint8_t)cornering;
  m->model = model;
  steer_path_cursor_init(&m->c);
}

/* One tick: steer from the current state, integrate, advance, record events. */
static unsigned sim_step(sim *m) {
  switch (m->model) {
  case SIM_KINEMATIC:
    steer_integrate_kinematic(&m->s, &m->l, steer_path_steer_kinematic(&m->s, &m->l, &m->p, &m->path, &m->c),
                              DT);
    break;
  case SIM_DYNAMIC:
    steer_integrate_dynamic(&m->s, &m->l, steer_path_steer_dynamic(&m->s, &m->l, &m->p, &m->path, &m->c), DT);
    break;
  case SIM_HEADING:
    steer_integrate_heading(&m->s, &m->l, steer_path_steer_heading(&m->s, &m->l, &m->p, &m->path, &m->c), DT);
    break;
  }
  m->t += DT;
  uint32_t reached = UINT32_MAX;
  unsigned ev = steer_path_advance(&m->path, &m->c, &m->s, &m->l, &m->p, DT, &reached);
  if (ev & STEER_PATH_EVENT_WAYPOINT) {
    ck_assert_msg(reached < m->path.count, "WAYPOINT without a valid reached index (%u)", reached);
    m->last_reached = reached;
    if (m->n_wp < MAX_EVENTS) {
      m->wp[m->n_wp] = reached;
      m->wp_t[m->n_wp] = m->t;
    }
    m->n_wp++;
  }
  if (ev & STEER_PATH_EVENT_REVERSED) {
    ck_assert_msg(ev & STEER_PATH_EVENT_WAYPOINT, "REVERSED without WAYPOINT");
    if (m->n_rev < MAX_EVENTS) {
      m->rev[m->n_rev] = reached;
      m->rev_t[m->n_rev] = m->t;
    }
    m->n_rev++;
  }
  if (ev & STEER_PATH_EVENT_FINISHED) {
    ck_assert_msg(ev & STEER_PATH_EVENT_WAYPOINT, "FINISHED without WAYPOINT");
    m->n_fin++;
    m->fin_t = m->t;
  }
  return ev;
}

static void sim_run(sim *m, float seconds) {
  int ticks = (int)lroundf(seconds / DT);
  for (int i = 0; i < ticks; i++)
    sim_step(m);
}

static float dist_to(const sim *m, vec2 q) { return v2_len(v2_sub(m->s.position, q)); }

/* ------------------------------------------------------------------ cursor */

START_TEST(test_prev_node_table) {
  static const vec2 pts[4] = {{0, 0}, {10, 0}, {20, 0}, {30, 0}};
  steer_path path = {pts, 4, 1.0f, STEER_PATH_PINGPONG, STEER_CORNER_NONE};
  steer_path_cursor c;
  steer_path_cursor_init(&c);
  ck_assert_uint_eq(c.node, 0);
  ck_assert_int_eq(c.dir, 1);
  ck_assert_uint_eq(c.finished, 0);
  ck_assert_uint_eq(steer_path_prev_node(&path, &c), 0); /* very start */
  c.node = 2;
  ck_assert_uint_eq(steer_path_prev_node(&path, &c), 1);
  c.dir = -1;
  ck_assert_uint_eq(steer_path_prev_node(&path, &c), 3);
  c.node = 0;
  ck_assert_uint_eq(steer_path_prev_node(&path, &c), 1);

  path.mode = STEER_PATH_ONCE;
  c.dir = 1;
  c.node = 3;
  ck_assert_uint_eq(steer_path_prev_node(&path, &c), 2);
  c.node = 0;
  ck_assert_uint_eq(steer_path_prev_node(&path, &c), 0);

  path.mode = STEER_PATH_LOOP;
  ck_assert_uint_eq(steer_path_prev_node(&path, &c), 3); /* the closing leg */
  c.node = 1;
  ck_assert_uint_eq(steer_path_prev_node(&path, &c), 0);

  path.count = 1;
  c.node = 0;
  ck_assert_uint_eq(steer_path_prev_node(&path, &c), 0);
}
END_TEST

/* Teleport onto each node in turn: after every WAYPOINT the previous node is the
 * node just reached, in both directions of a ping-pong and across a loop's wrap. */
START_TEST(test_prev_node_follows_advance) {
  static const vec2 pts[4] = {{0, 0}, {10, 0}, {20, 5}, {30, 0}};
  const steer_path_mode modes[3] = {STEER_PATH_ONCE, STEER_PATH_LOOP, STEER_PATH_PINGPONG};
  steer_limits l = steer_default_limits();
  steer_params p = steer_default_params();
  for (int m = 0; m < 3; m++) {
    steer_path path = {pts, 4, 1.0f, (uint8_t)modes[m], STEER_CORNER_NONE};
    steer_path_cursor c;
    steer_path_cursor_init(&c);
    int saw_backward = 0;
    for (int i = 0; i < 12 && !c.finished; i++) {
      steer_state s;
      memset(&s, 0, sizeof s);
      s.position = pts[c.node];
      uint32_t before = c.node, reached = UINT32_MAX;
      unsigned ev = steer_path_advance(&path, &c, &s, &l, &p, DT, &reached);
      ck_assert_msg(ev & STEER_PATH_EVENT_WAYPOINT, "mode %d: node %u not reached on it", m, before);
      ck_assert_uint_eq(reached, before);
      if (!c.finished)
        ck_assert_msg(steer_path_prev_node(&path, &c) == reached,
                      "mode %d: prev %u after reaching %u (dir %d)", m, steer_path_prev_node(&path, &c),
                      reached, c.dir);
      if (c.dir < 0)
        saw_backward = 1;
    }
    if (modes[m] == STEER_PATH_PINGPONG)
      ck_assert_msg(saw_backward, "ping-pong never ran backward");
    if (modes[m] == STEER_PATH_ONCE)
      ck_assert_msg(c.finished && c.node == 3, "once did not finish on its last node");
  }
}
END_TEST

/* ---------------------------------------------------------------- once mode */

static const vec2 k_square[4] = {{0, 0}, {12, 0}, {12, 12}, {0, 12}};

static void check_once(sim_model model, steer_cornering cornering) {
  sim m;
  sim_init(&m, k_square, 4, 0.5f, STEER_PATH_ONCE, cornering, model, v2(-3.0f, -2.0f), 0.0f);
  /* Arrival without overshoot: once on the last leg and inside slow_radius of the
   * last node, the velocity along the approach axis never turns back. */
  vec2 axis = v2_norm(v2_sub(k_square[3], k_square[2]));
  float worst_back = 0.0f, overshoot = -1e9f;
  while ((m.n_fin == 0 || m.t < m.fin_t + 3.0f) && m.t < 60.0f) {
    sim_step(&m);
    if (m.c.node == 3 && dist_to(&m, k_square[3]) < m.p.slow_radius) {
      worst_back = fminf(worst_back, v2_dot(m.s.velocity, axis));
      overshoot = fmaxf(overshoot, v2_dot(v2_sub(m.s.position, k_square[3]), axis));
    }
  }
  ck_assert_msg(m.n_fin == 1, "model %d cornering %d: not finished after %.1f s", model, cornering,
                (double)m.t);
  ck_assert_msg(worst_back > -1e-3f, "model %d cornering %d: moved back along the last leg at %g m/s", model,
                cornering, (double)worst_back);
  ck_assert_msg(overshoot < 0.05f, "model %d cornering %d: passed the last node by %g m", model, cornering,
                (double)overshoot);
  ck_assert_int_eq(m.n_wp, 4);
  for (int i = 0; i < 4; i++)
    ck_assert_msg(m.wp[i] == (uint32_t)i, "waypoint %d was node %u", i, m.wp[i]);
  ck_assert_msg(m.wp_t[3] == m.fin_t, "FINISHED not reported with the last WAYPOINT");
  ck_assert_uint_eq(m.c.finished, 1);
  ck_assert_uint_eq(m.c.node, 3);

  /* It has had 3 s to come to rest; now watch it for 10 s. */
  vec2 rest = m.s.position;
  float d_rest = dist_to(&m, k_square[3]);
  ck_assert_msg(v2_len(m.s.velocity) < 1e-3f, "model %d: still moving at %g m/s 3 s after finishing", model,
                (double)v2_len(m.s.velocity));
  ck_assert_msg(d_rest <= m.path.radius, "model %d: rests %g m from the last node", model, (double)d_rest);
  float max_speed = 0.0f;
  for (int i = 0; i < (int)(10.0f / DT); i++) {
    ck_assert_msg(sim_step(&m) == 0u, "event after finishing");
    max_speed = fmaxf(max_speed, v2_len(m.s.velocity));
  }
  ck_assert_msg(v2_len(v2_sub(m.s.position, rest)) < 1e-3f, "model %d: drifted %g m at rest", model,
                (double)v2_len(v2_sub(m.s.position, rest)));
  ck_assert_msg(max_speed < 1e-3f, "model %d: moved at %g m/s while finished", model, (double)max_speed);
  ck_assert_int_eq(m.n_fin, 1);
  ck_assert_int_eq(m.n_wp, 4);
  printf(
      "once model %d cornering %d: finished at %.2f s, rests %.3f m from the last node (overshoot %.3f m)\n",
      model, cornering, (double)m.fin_t, (double)d_rest, (double)overshoot);
}

START_TEST(test_once_dynamic) { check_once(SIM_DYNAMIC, STEER_CORNER_NONE); }
END_TEST

START_TEST(test_once_kinematic) { check_once(SIM_KINEMATIC, STEER_CORNER_NONE); }
END_TEST

START_TEST(test_once_heading) {
  check_once(SIM_HEADING, STEER_CORNER_NONE);
  check_once(SIM_HEADING, STEER_CORNER_ARC);
  check_once(SIM_HEADING, STEER_CORNER_LAZY);
}
END_TEST

/* A path of one point, with a node radius below target_radius: arrive there,
 * report it once, stay. */
START_TEST(test_single_point) {
  static const vec2 pt[1] = {{5, 2}};
  const sim_model models[3] = {SIM_KINEMATIC, SIM_DYNAMIC, SIM_HEADING};
  for (int i = 0; i < 3; i++) {
    for (int mode = STEER_PATH_ONCE; mode < STEER_PATH_MODE_COUNT; mode++) {
      sim m;
      sim_init(&m, pt, 1, 0.3f, (steer_path_mode)mode, STEER_CORNER_NONE, models[i], v2(0, 0), 0.0f);
      sim_run(&m, 20.0f);
      ck_assert_msg(m.n_wp == 1 && m.wp[0] == 0, "model %d mode %d: %d waypoints", i, mode, m.n_wp);
      ck_assert_int_eq(m.n_fin, mode == STEER_PATH_ONCE ? 1 : 0);
      ck_assert_int_eq(m.n_rev, 0);
      ck_assert_msg(dist_to(&m, pt[0]) <= 0.3f && v2_len(m.s.velocity) < 1e-3f,
                    "model %d mode %d: not at rest on the point (%g m, %g m/s)", i, mode,
                    (double)dist_to(&m, pt[0]), (double)v2_len(m.s.velocity));
    }
  }
}
END_TEST

/* ---------------------------------------------------------------- loop mode */

static void check_loop(sim_model model, steer_cornering cornering) {
  static const vec2 pts[4] = {{0, 0}, {20, 0}, {20, 20}, {0, 20}};
  sim m;
  sim_init(&m, pts, 4, 1.0f, STEER_PATH_LOOP, cornering, model, v2(0, 0), 0.0f);
  int wrap_turns = 0;
  while (m.n_wp < 9 && m.t < 120.0f) {
    unsigned ev = sim_step(&m);
    /* From the second lap on, node 0 is a corner like the others. */
    if ((ev & STEER_PATH_EVENT_WAYPOINT) && m.last_reached == 0 && m.n_wp > 1 && m.c.turn_time_left > 0.0f)
      wrap_turns++;
  }
  ck_assert_msg(m.n_wp >= 9, "model %d cornering %d: %d waypoints in %.0f s", model, cornering, m.n_wp,
                (double)m.t);
  for (int i = 0; i < 9; i++)
    ck_assert_msg(m.wp[i] == (uint32_t)(i % 4), "waypoint %d was node %u", i, m.wp[i]);
  ck_assert_int_eq(m.n_fin, 0);
  ck_assert_int_eq(m.n_rev, 0);
  if (cornering == STEER_CORNER_ARC)
    ck_assert_msg(wrap_turns == 2, "arc turns at the wrap corner: %d, want 2", wrap_turns);
}

START_TEST(test_loop) {
  check_loop(SIM_DYNAMIC, STEER_CORNER_NONE);
  check_loop(SIM_KINEMATIC, STEER_CORNER_NONE);
  check_loop(SIM_HEADING, STEER_CORNER_NONE);
  check_loop(SIM_HEADING, STEER_CORNER_ARC);
  check_loop(SIM_HEADING, STEER_CORNER_LAZY);
}
END_TEST

/* ----------------------------------------------------------- ping-pong mode */

static void check_pingpong_line(sim_model model) {
  static const vec2 line[4] = {{0, 0}, {10, 0}, {20, 0}, {30, 0}};
  static const uint32_t order[11] = {0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 2};
  sim m;
  sim_init(&m, line, 4, 1.0f, STEER_PATH_PINGPONG, STEER_CORNER_NONE, model, v2(-2, 0), 0.0f);
  /* Velocity along the path's direction (+x), before and after each reversal. */
  float max_vx_before = -1e9f, min_vx_after_end = 1e9f, max_vx_after_start = -1e9f;
  while (m.n_wp < 11 && m.t < 120.0f) {
    sim_step(&m);
    if (m.n_rev == 0)
      max_vx_before = fmaxf(max_vx_before, m.s.velocity.x);
    else if (m.n_rev == 1 && m.t < m.rev_t[0] + 4.0f)
      min_vx_after_end = fminf(min_vx_after_end, m.s.velocity.x);
    else if (m.n_rev == 2 && m.t < m.rev_t[1] + 4.0f)
      max_vx_after_start = fmaxf(max_vx_after_start, m.s.velocity.x);
  }
  ck_assert_msg(m.n_wp >= 11, "model %d: %d waypoints in %.0f s", model, m.n_wp, (double)m.t);
  for (int i = 0; i < 11; i++)
    ck_assert_msg(m.wp[i] == order[i], "model %d: waypoint %d was node %u, want %u", model, i, m.wp[i],
                  order[i]);
  ck_assert_msg(m.n_rev == 3 && m.rev[0] == 3 && m.rev[1] == 0 && m.rev[2] == 3,
                "model %d: reversals %d (%u, %u, %u)", model, m.n_rev, m.rev[0], m.rev[1], m.rev[2]);
  ck_assert_msg(m.rev_t[0] == m.wp_t[3] && m.rev_t[1] == m.wp_t[6] && m.rev_t[2] == m.wp_t[9],
                "REVERSED not reported with the end WAYPOINT");
  ck_assert_int_eq(m.n_fin, 0);
  ck_assert_msg(max_vx_before > 2.0f, "model %d: max forward speed %g before the reversal", model,
                (double)max_vx_before);
  ck_assert_msg(min_vx_after_end < -2.0f,
                "model %d: no backward motion after reversing at the end (min vx %g)", model,
                (double)min_vx_after_end);
  ck_assert_msg(max_vx_after_start > 2.0f,
                "model %d: no forward motion after reversing at node 0 (max vx %g)", model,
                (double)max_vx_after_start);
}

START_TEST(test_pingpong_order) {
  check_pingpong_line(SIM_DYNAMIC);
  check_pingpong_line(SIM_KINEMATIC);
  check_pingpong_line(SIM_HEADING);
}
END_TEST

/* Heading model patrolling a zigzag with a sharp corner, for each cornering and a
 * wide and a narrow node radius: it must keep reversing at both ends, visit the
 * nodes in ping-pong order and never hang around (circling a node, stuck). */
START_TEST(test_pingpong_patrol) {
  static const vec2 zig[5] = {{0, 0}, {16, 0}, {16, 12}, {4, 4}, {4, 16}};
  const float radii[2] = {1.0f, 0.3f};
  for (int corner = 0; corner < STEER_CORNER_COUNT; corner++) {
    for (int r = 0; r < 2; r++) {
      sim m;
      sim_init(&m, zig, 5, radii[r], STEER_PATH_PINGPONG, (steer_cornering)corner, SIM_HEADING, v2(-1, -1),
               0.0f);
      float worst_gap = 0.0f, last_t = 0.0f;
      int seen = 0;
      while (m.t < 200.0f) {
        if (sim_step(&m) & STEER_PATH_EVENT_WAYPOINT) {
          worst_gap = fmaxf(worst_gap, m.t - last_t);
          last_t = m.t;
          seen++;
        }
        ck_assert_msg(m.t - last_t < 15.0f,
                      "cornering %d radius %g: no waypoint for 15 s at t=%.1f (node %u)", corner,
                      (double)radii[r], (double)m.t, m.c.node);
      }
      ck_assert_msg(m.n_rev >= 8, "cornering %d radius %g: only %d reversals", corner, (double)radii[r],
                    m.n_rev);
      for (int i = 0; i < m.n_rev && i < MAX_EVENTS; i++)
        ck_assert_msg(m.rev[i] == (i % 2 == 0 ? 4u : 0u), "reversal %d at node %u", i, m.rev[i]);
      for (int i = 1; i < m.n_wp && i < MAX_EVENTS; i++)
        ck_assert_msg(m.wp[i] == m.wp[i - 1] + 1 || m.wp[i] + 1 == m.wp[i - 1], "waypoint %u after %u",
                      m.wp[i], m.wp[i - 1]);
      printf("patrol cornering %d radius %.1f: %d waypoints, %d reversals, longest gap %.2f s\n", corner,
             (double)radii[r], seen, m.n_rev, (double)worst_gap);
    }
  }
}
END_TEST

/* A node close beside the agent's course, from many starts (distance 0.5..6 m,
 * every 15 degrees of bearing, every 30 degrees of heading, at full speed), with a
 * node radius of 0.3 m: the heading laws must reach it rather than orbit it. */
START_TEST(test_no_circling) {
  static const vec2 pts[2] = {{0, 0}, {40, 0}};
  for (int corner = 0; corner < STEER_CORNER_COUNT; corner++) {
    int failed = 0, runs = 0;
    float worst = 0.0f;
    for (int di = 1; di <= 12; di++) {
      for (int bi = 0; bi < 24; bi++) {
        for (int hi = 0; hi < 12; hi++) {
          float d = 0.5f * (float)di, bearing = (float)bi * (STEER_TWO_PI / 24.0f);
          sim m;
          sim_init(&m, pts, 2, 0.3f, STEER_PATH_PINGPONG, (steer_cornering)corner, SIM_HEADING,
                   v2_scale(steer_heading(bearing), d), steer_wrap_angle((float)hi * (STEER_TWO_PI / 12.0f)));
          m.s.velocity = v2_scale(steer_heading(m.s.orientation), m.l.max_speed);
          while (m.n_wp == 0 && m.t < 10.0f)
            sim_step(&m);
          runs++;
          if (m.n_wp == 0)
            failed++;
          worst = fmaxf(worst, m.t);
        }
      }
    }
    ck_assert_msg(failed == 0, "cornering %d: %d of %d starts never reached the node in 10 s", corner, failed,
                  runs);
    printf("no circling, cornering %d: %d starts, slowest reached its node in %.2f s\n", corner, runs,
           (double)worst);
  }
}
END_TEST

/* ------------------------------------------------------------ arc cornering */

/* Runs a heading agent along a 20 m in-leg (+x) into a corner whose out-leg has
 * direction out_angle (CCW from +x), and measures the turn against the inscribed
 * circle computed from the in-leg and the distance at the trigger. */
static void check_arc(float out_angle, float *worst_radius_err, float *exit_err) {
  vec2 pts[3];
  pts[0] = v2(0, 0);
  pts[1] = v2(20, 0);
  pts[2] = v2_add(pts[1], v2_scale(steer_heading(out_angle), 20.0f));
  sim m;
  sim_init(&m, pts, 3, 0.5f, STEER_PATH_ONCE, STEER_CORNER_ARC, SIM_HEADING, pts[0], 0.0f);
  float R = 0.0f, speed = 0.0f;
  vec2 centre = v2(0, 0);
  int turning = 0, turn_ticks = 0;
  *worst_radius_err = 0.0f;
  *exit_err = -1.0f;
  while (m.t < 30.0f && *exit_err < 0.0f) {
    unsigned ev = sim_step(&m);
    if ((ev & STEER_PATH_EVENT_WAYPOINT) && m.last_reached == 1) {
      ck_assert_msg(m.c.turn_time_left > 0.0f, "no turn started at the corner");
      float d = dist_to(&m, pts[1]);
      ck_assert_msg(d <= m.p.turn_trigger_distance + 1e-4f && d > m.p.turn_trigger_distance - 0.5f,
                    "triggered %g m from the corner", (double)d);
      R = d / tanf(0.5f * fabsf(out_angle));
      speed = v2_len(m.s.velocity);
      vec2 in_dir = v2(1, 0);
      vec2 left = v2(-in_dir.y, in_dir.x);
      vec2 foot = v2_sub(pts[1], v2_scale(in_dir, d));
      centre = v2_add(foot, v2_scale(left, out_angle > 0.0f ? R : -R));
      turning = 1;
      continue;
    }
    if (turning) {
      float err = fabsf(dist_to(&m, centre) - R) / R;
      *worst_radius_err = fmaxf(*worst_radius_err, err);
      ck_assert_msg(fabsf(v2_len(m.s.velocity) - speed) < 1e-4f, "speed changed during the turn");
      turn_ticks++;
      if (!(m.c.turn_time_left > 0.0f)) {
        turning = 0;
        *exit_err = fabsf(steer_wrap_angle(m.s.orientation - out_angle));
      }
    }
  }
  ck_assert_msg(R > 0.0f, "corner never triggered");
  ck_assert_msg(*exit_err >= 0.0f, "turn never ended");
  float expect_ticks = R * fabsf(out_angle) / speed / DT;
  ck_assert_msg(fabsf((float)turn_ticks - expect_ticks) <= 1.5f, "turn lasted %d ticks, want %.1f",
                turn_ticks, (double)expect_ticks);
  ck_assert_msg(*worst_radius_err < 0.05f, "corner %.0f deg: off the circle by %.2f%% of R",
                (double)(out_angle / DEG), (double)(*worst_radius_err * 100.0f));
  ck_assert_msg(*exit_err < 2.0f * DEG, "corner %.0f deg: leaves the turn %.2f deg off the out-leg",
                (double)(out_angle / DEG), (double)(*exit_err / DEG));
  /* And the rest of the path still works: it finishes on the last node. */
  while (m.n_fin == 0 && m.t < 60.0f)
    sim_step(&m);
  ck_assert_msg(m.n_fin == 1, "did not finish after the corner");
  printf("arc corner %+.0f deg: R %.3f m, worst radius error %.3f%%, exit heading error %.3f deg\n",
         (double)(out_angle / DEG), (double)R, (double)(*worst_radius_err * 100.0f),
         (double)(*exit_err / DEG));
}

START_TEST(test_arc_corners) {
  float err, exit_err;
  check_arc(90.0f * DEG, &err, &exit_err);
  check_arc(-90.0f * DEG, &err, &exit_err);
  check_arc(60.0f * DEG, &err, &exit_err);
  check_arc(-60.0f * DEG, &err, &exit_err);
  check_arc(135.0f * DEG, &err, &exit_err);
}
END_TEST

/* A corner below 1 degree is reached at the trigger distance without a turn. */
START_TEST(test_arc_straight) {
  static const vec2 pts[3] = {{0, 0}, {20, 0}, {40, 0.1f}};
  sim m;
  sim_init(&m, pts, 3, 0.5f, STEER_PATH_ONCE, STEER_CORNER_ARC, SIM_HEADING, v2(0, 0), 0.0f);
  while (m.n_wp < 2 && m.t < 30.0f)
    sim_step(&m);
  ck_assert_int_eq(m.n_wp, 2);
  ck_assert_msg(dist_to(&m, pts[1]) > 4.0f, "straight corner reached at %g m", (double)dist_to(&m, pts[1]));
  ck_assert_msg(m.c.turn_time_left == 0.0f && m.c.turn_rate == 0.0f, "a turn started on a straight corner");
}
END_TEST

/* ----------------------------------------------------------- lazy cornering */

START_TEST(test_lazy_recovers) {
  static const vec2 leg[2] = {{0, 0}, {100, 0}};
  sim m;
  sim_init(&m, leg, 2, 1.0f, STEER_PATH_PINGPONG, STEER_CORNER_LAZY, SIM_HEADING, v2(0, 3), 0.0f);
  m.c.node = 1; /* on the leg 0 -> 1, 3 m to its side, heading parallel */
  m.s.velocity = v2(m.l.max_speed, 0);
  float converged_t = -1.0f, converged_x = 0.0f, worst_after = 0.0f;
  while (m.n_wp == 0 && m.t < 60.0f) {
    sim_step(&m);
    if (m.n_wp > 0)
      break;
    float off = fabsf(m.s.position.y);
    if (off < 0.1f) {
      if (converged_t < 0.0f) {
        converged_t = m.t;
        converged_x = m.s.position.x;
      }
      worst_after = fmaxf(worst_after, off);
    } else {
      converged_t = -1.0f; /* left the band again: not converged yet */
    }
  }
  ck_assert_msg(m.n_wp == 1 && m.wp[0] == 1, "leg end not reached");
  ck_assert_msg(converged_t > 0.0f, "lateral offset never stayed below 0.1 m (now %g m)",
                (double)fabsf(m.s.position.y));
  ck_assert_msg(converged_x < 100.0f - 5.0f, "converged only %g m before the leg's end",
                (double)(100.0f - converged_x));
  printf("lazy: offset 3 m -> < 0.1 m after %.2f s (%.1f m along a 100 m leg)\n", (double)converged_t,
         (double)converged_x);
}
END_TEST

/* --------------------------------------------------------------- determinism */

START_TEST(test_deterministic) {
  static const vec2 zig[5] = {{0, 0}, {16, 0}, {16, 12}, {4, 4}, {4, 16}};
  sim a, b;
  sim_init(&a, zig, 5, 1.0f, STEER_PATH_PINGPONG, STEER_CORNER_ARC, SIM_HEADING, v2(-1, -1), 0.0f);
  sim_init(&b, zig, 5, 1.0f, STEER_PATH_PINGPONG, STEER_CORNER_ARC, SIM_HEADING, v2(-1, -1), 0.0f);
  sim_run(&a, 60.0f);
  sim_run(&b, 60.0f);
  ck_assert_msg(memcmp(&a.s, &b.s, sizeof a.s) == 0 && memcmp(&a.c, &b.c, sizeof a.c) == 0, "runs differ");
}
END_TEST

/* ------------------------------------------------ four agents at a time */

static float edge_value(steer_rng *r, float lo, float hi, int edgy) {
  uint32_t k = steer_rng_next(r) % 40u;
  if (!edgy || k >= 10)
    return steer_rng_range(r, lo, hi);
  static const float edges[] = {0.0f,     -0.0f, 1e-30f,   -1e-40f,   1e19f,
                                INFINITY, NAN,   STEER_PI, -STEER_PI, 1.0f};
  return edges[k];
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* steer_path_steer_heading_x4 against steer_path_steer_heading, bit for bit:
 * every mode and cornering, cursors at every node (and past the end), running
 * arc turns, finished paths, one-point paths, agents on the node, within a
 * metre of it (the raised gain), at rest, inside the braking room of a last
 * leg, orientations beyond +-pi and 1e5 rad, infinities and NaN. Ordinary
 * quads (no lazy cornering, moving, orientations in (-pi, pi]) must take the
 * vector path, so this is not the scalar code against itself. */
START_TEST(test_heading_x4_bit_identical) {
  steer_rng r;
  steer_rng_seed(&r, 1313u);
  long vector_lanes = 0, ordinary_quads = 0;
  for (int round = 0; round < 40000; round++) {
    int edgy = round % 2;
    vec2 pts[4][5];
    steer_path path[4];
    steer_path_cursor cur[4];
    steer_state st[4];
    steer_limits lim[4];
    steer_params par[4];
    const steer_state *sp[4];
    const steer_limits *lp[4];
    const steer_params *pp[4];
    const steer_path *pa[4];
    const steer_path_cursor *cp[4];
    int ordinary = !edgy;
    for (int i = 0; i < 4; i++) {
      uint32_t count = 1u + steer_rng_next(&r) % 5u;
      for (uint32_t k = 0; k < count; k++)
        pts[i][k] = steer_rng_point(&r, -50.0f, 50.0f, -50.0f, 50.0f);
      path[i].points = pts[i];
      path[i].count = count;
      path[i].radius = steer_rng_range(&r, 0.1f, 3.0f);
      path[i].mode = (uint8_t)(steer_rng_next(&r) % STEER_PATH_MODE_COUNT);
      uint32_t corner = steer_rng_next(&r) % 8u;
      path[i].cornering = (uint8_t)(corner == 0  ? STEER_CORNER_LAZY
                                    : corner < 4 ? STEER_CORNER_NONE
                                                 : STEER_CORNER_ARC);
      ordinary &= path[i].cornering != STEER_CORNER_LAZY;
      steer_path_cursor_init(&cur[i]);
      cur[i].node = steer_rng_next(&r) % (count + 1u); /* sometimes past the end (clamped) */
      cur[i].dir = steer_rng_next(&r) % 2u ? 1 : -1;
      cur[i].finished = steer_rng_next(&r) % 16u == 0;
      ordinary &= !cur[i].finished;
      if (steer_rng_next(&r) % 4u == 0) {
        cur[i].turn_time_left = steer_rng_next(&r) % 8u == 0 ? 0.0f : steer_rng_range(&r, 0.0f, 2.0f);
        cur[i].turn_rate = edge_value(&r, -6.0f, 6.0f, edgy);
      }
      lim[i] = steer_default_limits();
      lim[i].max_speed = steer_rng_range(&r, 0.5f, 6.0f);
      lim[i].max_acceleration = steer_rng_range(&r, 0.5f, 20.0f);
      lim[i].max_rotation = steer_rng_range(&r, 0.5f, 8.0f);
      par[i] = steer_default_params();
      memset(&st[i], 0, sizeof st[i]);
      vec2 node = pts[i][cur[i].node < count ? cur[i].node : count - 1u];
      uint32_t where = steer_rng_next(&r) % 8u;
      if (where == 0)
        st[i].position = node; /* on the node */
      else if (where == 1)     /* within a metre */
        st[i].position = v2_add(node, steer_rng_point(&r, -0.7f, 0.7f, -0.7f, 0.7f));
      else if (where == 2) { /* at the edge of the braking room: fmaxf(+0, 0), libm's to choose */
        st[i].position = v2_add(node, v2(0.5f * path[i].radius, 0.0f));
        ordinary = 0;
      } else
        st[i].position = v2(edge_value(&r, -60.0f, 60.0f, edgy), edge_value(&r, -60.0f, 60.0f, edgy));
      uint32_t o = steer_rng_next(&r) % 16u;
      st[i].orientation = o == 0   ? edge_value(&r, -2e5f, 2e5f, 1)
                          : o == 1 ? edge_value(&r, -20.0f, 20.0f, edgy)
                                   : edge_value(&r, -STEER_PI, STEER_PI, edgy);
      ordinary &= st[i].orientation > -STEER_PI && st[i].orientation <= STEER_PI;
      float speed =
          steer_rng_next(&r) % 8u == 0 ? 0.0f : edge_value(&r, 0.01f, lim[i].max_speed * 1.2f, edgy);
      ordinary &= speed > 0.0f;
      vec2 h = steer_heading(st[i].orientation);
      st[i].velocity = v2_scale(h, speed);
      st[i].rotation = edge_value(&r, -6.0f, 6.0f, edgy);
      sp[i] = &st[i];
      lp[i] = &lim[i];
      pp[i] = &par[i];
      pa[i] = &path[i];
      cp[i] = &cur[i];
    }
    steer_heading_output out[4];
    int done = steer_path_steer_heading_x4(sp, lp, pp, pa, cp, out);
    vector_lanes += done;
    if (ordinary) {
      ordinary_quads++;
#if defined(__SSE2__)
      ck_assert_msg(done == 4, "round %d: an ordinary quad took the scalar path (%d lanes)", round, done);
#endif
    }
    for (int i = 0; i < 4; i++) {
      steer_heading_output want = steer_path_steer_heading(sp[i], lp[i], pp[i], pa[i], cp[i]);
      ck_assert_msg(same_bits(out[i].rotation, want.rotation) && same_bits(out[i].speed, want.speed),
                    "round %d lane %d: batch (%a, %a), scalar (%a, %a); p (%a, %a) theta %a node %u", round,
                    i, (double)out[i].rotation, (double)out[i].speed, (double)want.rotation,
                    (double)want.speed, (double)st[i].position.x, (double)st[i].position.y,
                    (double)st[i].orientation, cur[i].node);
    }
  }
  ck_assert_int_gt(ordinary_quads, 1000);
#if defined(__SSE2__)
  ck_assert_int_gt(vector_lanes, 4 * ordinary_quads);
#endif
}
END_TEST

static Suite *path_suite(void) {
  Suite *s = suite_create("path");
  struct {
    const char *name;
    const TTest *test;
  } cases[] = {
      {"prev_node", test_prev_node_table},
      {"prev_node_advance", test_prev_node_follows_advance},
      {"once_dynamic", test_once_dynamic},
      {"once_kinematic", test_once_kinematic},
      {"once_heading", test_once_heading},
      {"single_point", test_single_point},
      {"loop", test_loop},
      {"pingpong_order", test_pingpong_order},
      {"pingpong_patrol", test_pingpong_patrol},
      {"no_circling", test_no_circling},
      {"arc_corners", test_arc_corners},
      {"arc_straight", test_arc_straight},
      {"lazy", test_lazy_recovers},
      {"deterministic", test_deterministic},
      {"heading_x4", test_heading_x4_bit_identical},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    TCase *tc = check_tcase(s, cases[i].name, 60);
    tcase_add_test(tc, cases[i].test);
  }
  return s;
}

int main(void) { return check_run(path_suite()); }

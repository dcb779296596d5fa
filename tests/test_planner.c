/* test_planner.c: GOTO (planner.h) on a real world with a map: a point in the
 * next room is reached through the door and the agent stops there; closing the
 * door on the route replans through the other door; closing the only one is
 * UNREACHABLE and a new GOTO after opening it gets through; a moving target
 * agent makes it replan; a gap narrower than a body is never planned for it; a
 * burst of 10 000 GOTO in one tick is served over a bounded number of ticks
 * within the budget, deterministically; bad requests get their error codes; a
 * warm-up on threads serves its class at a due tick that waits for the build
 * with the host's hook, with the results of a run that did not wait. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_run.h"
#include "map.h"
#include "planner.h"
#include "world.h"
#include "world_fixture.h"

#define HALF 50.0f
#define DT   0.05f

static void wall(steer_world *w, uint32_t id, vec2 a, vec2 b) {
  vec2 p[2] = {a, b};
  steer_obstacle_desc o = {STEER_OBSTACLE_WALL, 2, p, 0.0f};
  ck_assert_int_eq(steer_world_add_obstacle(w, id, &o, NULL), 0);
}

/* A wall along x = 0 with doors at y in [-21.5, -18.5] (ids 1..3 around them)
 * and y in [18.5, 21.5]; the doors themselves are ids 10 (lower), 11 (upper)
 * when closed. */
static void two_rooms(steer_world *w) {
  wall(w, 1, v2(0.0f, -HALF), v2(0.0f, -21.5f));
  wall(w, 2, v2(0.0f, -18.5f), v2(0.0f, 18.5f));
  wall(w, 3, v2(0.0f, 21.5f), v2(0.0f, HALF));
}

/* The two rooms in a world for 16 agents. */
static steer_world *rooms(void) {
  steer_world *w = make_world(16, HALF, 1);
  two_rooms(w);
  return w;
}

/* A planner of the default configuration on w. */
static steer_planner *planner(steer_world *w) {
  steer_planner_config pc = steer_default_planner_config();
  steer_planner *p = steer_planner_create(w, &pc);
  ck_assert_ptr_nonnull(p);
  return p;
}

/* A saved state's checksum made right again after its bytes were changed:
 * FNV-1a 64 of all but the last 8 bytes, stored little-endian in them. */
static void reseal(uint8_t *b, size_t len) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < len - 8; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  for (int i = 0; i < 8; i++)
    b[len - 8 + (size_t)i] = (uint8_t)(h >> (8 * i));
}

static steer_id spawn(steer_world *w, vec2 p, float radius, uint8_t model) {
  steer_agent_desc d = steer_default_agent_desc();
  d.model = model;
  d.state.position = p;
  d.limits.radius = radius;
  d.limits.max_speed = 4.0f;
  d.limits.max_acceleration = 8.0f;
  steer_id id;
  ck_assert_int_eq(steer_world_spawn(w, &d, 0, &id), 0);
  return id;
}

static vec2 pos(const steer_world *w, steer_id id) {
  steer_agent_info info;
  ck_assert_int_eq(steer_world_get(w, id, &info), 0);
  return info.state.position;
}

/* Runs ticks, collecting the planner's events of the agent. */
typedef struct seen {
  int planned, replanned, unreachable;
  uint8_t last_reason;
} seen;

static void run(steer_planner *p, steer_world *w, int ticks, steer_id id, seen *s) {
  for (int t = 0; t < ticks; t++) {
    steer_planner_update(p, w);
    uint32_t n;
    const steer_plan_event *ev = steer_planner_events(p, &n);
    for (uint32_t i = 0; i < n; i++) {
      if (ev[i].agent != id)
        continue;
      s->planned += ev[i].type == STEER_PLAN_PLANNED;
      s->replanned += ev[i].type == STEER_PLAN_REPLANNED;
      s->unreachable += ev[i].type == STEER_PLAN_UNREACHABLE;
      s->last_reason = ev[i].reason;
    }
    steer_world_step(w, DT);
    steer_planner_observe(p, w);
  }
}

static steer_goto goto_point(vec2 t) {
  steer_goto g = steer_default_goto();
  g.target.kind = STEER_TARGET_POINT;
  g.target.point = t;
  return g;
}

START_TEST(reaches_the_next_room_and_stops) {
  static const uint8_t models[] = {STEER_MODEL_DYNAMIC, STEER_MODEL_KINEMATIC, STEER_MODEL_HEADING};
  for (unsigned k = 0; k < 3; k++) {
    steer_world *w = rooms();
    steer_planner *p = planner(w);
    steer_id a = spawn(w, v2(-10.0f, 30.0f), 0.5f, models[k]);
    ck_assert_int_eq(steer_planner_warm(p, w), 1); /* its class is served from the first tick */
    vec2 target = v2(10.0f, 30.0f);
    steer_goto g = goto_point(target);
    if (models[k] == STEER_MODEL_HEADING)
      g.cornering = STEER_CORNER_LAZY;
    ck_assert_int_eq(steer_planner_goto(p, w, a, &g), 0);
    ck_assert_int_eq(steer_planner_status(p, a, NULL), STEER_GOTO_QUEUED);
    seen s = {0};
    run(p, w, 1, a, &s);
    ck_assert_int_eq(s.planned, 1);
    ck_assert_int_eq(steer_planner_status(p, a, NULL), STEER_GOTO_FOLLOWING);
    /* The route: through the upper door (x = 0 crossed with 18.5 < y < 21.5). */
    steer_agent_info info;
    steer_world_get(w, a, &info);
    steer_path path;
    ck_assert_int_eq(steer_world_path_get(w, info.path, &path), 0);
    ck_assert(path.points[path.count - 1].x == target.x && path.points[path.count - 1].y == target.y);
    vec2 prev = pos(w, a);
    int crossed = 0;
    for (int t = 0; t < 1200 && !crossed; t++) {
      run(p, w, 1, a, &s);
      vec2 now = pos(w, a);
      if (prev.x < 0.0f && now.x >= 0.0f) {
        ck_assert_float_gt(now.y, 18.5f);
        ck_assert_float_lt(now.y, 21.5f);
        crossed = 1;
      }
      prev = now;
    }
    ck_assert_msg(crossed, "model %u never went through the door", k);
    /* It arrives, and stays: no overshoot past the node radius once inside it. */
    int inside = 0;
    float worst = 0.0f;
    for (int t = 0; t < 1200; t++) {
      run(p, w, 1, a, &s);
      float d = v2_len(v2_sub(pos(w, a), target));
      if (d < 0.5f)
        inside = 1;
      if (inside && d > worst)
        worst = d;
    }
    ck_assert_msg(inside, "model %u did not arrive", k);
    ck_assert_float_lt(worst, 0.6f);
    ck_assert_int_eq(s.unreachable, 0);
    steer_planner_destroy(p);
    steer_world_destroy(w);
  }
}
END_TEST

/* A stuck agent whose new plan is the route it follows keeps that route: no
 * REPLANNED, the same path, the plan counted as kept. */
START_TEST(a_replan_of_the_same_route_keeps_it_quietly) {
  steer_world *w = rooms();
  steer_planner *p = planner(w);
  steer_id a = spawn(w, v2(-10.0f, 30.0f), 0.5f, STEER_MODEL_DYNAMIC);
  ck_assert_int_eq(steer_planner_warm(p, w), 1);
  steer_goto g = goto_point(v2(10.0f, 30.0f));
  ck_assert_int_eq(steer_planner_goto(p, w, a, &g), 0);
  seen s = {0};
  run(p, w, 1, a, &s);
  ck_assert_int_eq(s.planned, 1);
  steer_agent_info info;
  ck_assert_int_eq(steer_world_get(w, a, &info), 0);
  int32_t path = info.path;
  /* Too slow for 0.1 m of progress in 0.5 s: STUCK, and a plan again, from where it is. */
  steer_behaviour t = info.behaviour;
  t.stuck_time = 0.5f;
  ck_assert_int_eq(steer_world_set_tuning(w, a, &t), 0);
  steer_limits l = info.limits;
  l.max_speed = 0.05f;
  ck_assert_int_eq(steer_world_set_limits(w, a, &l), 0);
  uint64_t plans = steer_planner_get_stats(p).plans;
  run(p, w, 100, a, &s);
  steer_planner_stats st = steer_planner_get_stats(p);
  ck_assert_uint_gt(st.plans, plans);
  ck_assert_uint_eq(st.kept, st.plans - plans);
  ck_assert_int_eq(s.replanned, 0);
  ck_assert_int_eq(s.unreachable, 0);
  ck_assert_int_eq(steer_world_get(w, a, &info), 0);
  ck_assert_int_eq(info.path, path);
  ck_assert_int_eq(steer_planner_status(p, a, NULL), STEER_GOTO_FOLLOWING);
  /* Free again, it goes on along the same route and arrives. */
  l.max_speed = 4.0f;
  ck_assert_int_eq(steer_world_set_limits(w, a, &l), 0);
  run(p, w, 800, a, &s);
  ck_assert_float_lt(v2_len(v2_sub(pos(w, a), g.target.point)), 0.6f);
  ck_assert_int_eq(s.replanned, 0);
  steer_planner_destroy(p);
  steer_world_destroy(w);
}
END_TEST

START_TEST(closed_door_replans_then_unreachable_then_open) {
  steer_world *w = rooms();
  steer_planner *p = planner(w);
  steer_id a = spawn(w, v2(-10.0f, 25.0f), 0.5f, STEER_MODEL_DYNAMIC);
  vec2 target = v2(10.0f, 25.0f);
  steer_goto g = goto_point(target);
  ck_assert_int_eq(steer_planner_goto(p, w, a, &g), 0);
  seen s = {0};
  run(p, w, 10, a, &s);
  ck_assert_int_eq(s.planned, 1);
  /* The upper door closes: replanned through the lower one within 3 ticks
   * (the mesh is rebuilt off the tick, due one tick after the change on a map
   * this small), and it arrives. */
  wall(w, 11, v2(0.0f, 18.5f), v2(0.0f, 21.5f));
  for (int t = 0; t < 3 && !s.replanned; t++)
    run(p, w, 1, a, &s);
  ck_assert_int_eq(s.replanned, 1);
  ck_assert_int_eq(s.last_reason, STEER_PLAN_MAP);
  float low = HALF;
  for (int t = 0; t < 3000 && v2_len(v2_sub(pos(w, a), target)) > 0.5f; t++) {
    run(p, w, 1, a, &s);
    if (fabsf(pos(w, a).x) < 0.5f && pos(w, a).y < low)
      low = pos(w, a).y;
  }
  ck_assert_float_lt(v2_len(v2_sub(pos(w, a), target)), 0.5f);
  ck_assert_float_lt(low, -18.0f); /* it went by the lower door */
  /* Back again with both doors closed: UNREACHABLE and the agent stops. */
  wall(w, 10, v2(0.0f, -21.5f), v2(0.0f, -18.5f));
  steer_goto back = goto_point(v2(-10.0f, 25.0f));
  ck_assert_int_eq(steer_planner_goto(p, w, a, &back), 0);
  for (int t = 0; t < 3 && !s.unreachable; t++)
    run(p, w, 1, a, &s);
  ck_assert_int_eq(s.unreachable, 1);
  ck_assert_int_eq(steer_planner_status(p, a, NULL), STEER_GOTO_UNREACHABLE);
  steer_agent_info info;
  steer_world_get(w, a, &info);
  ck_assert_int_eq(info.behaviour.kind, STEER_BEHAVIOUR_NONE);
  /* The lower door opens: a new GOTO gets through. */
  ck_assert_int_eq(steer_world_remove_obstacle(w, 10), 0);
  ck_assert_int_eq(steer_planner_goto(p, w, a, &back), 0);
  for (int t = 0; t < 3 && s.planned < 2; t++)
    run(p, w, 1, a, &s);
  ck_assert_int_eq(s.planned, 2);
  for (int t = 0; t < 3000 && v2_len(v2_sub(pos(w, a), back.target.point)) > 0.5f; t++)
    run(p, w, 1, a, &s);
  ck_assert_float_lt(v2_len(v2_sub(pos(w, a), back.target.point)), 0.5f);
  steer_planner_destroy(p);
  steer_world_destroy(w);
}
END_TEST

START_TEST(follows_a_moving_agent) {
  steer_world *w = rooms();
  steer_planner *p = planner(w);
  steer_id a = spawn(w, v2(-10.0f, 25.0f), 0.5f, STEER_MODEL_DYNAMIC);
  steer_id b = spawn(w, v2(10.0f, 25.0f), 0.5f, STEER_MODEL_KINEMATIC);
  steer_goto g = steer_default_goto();
  g.target.kind = STEER_TARGET_AGENT;
  g.target.agent = b;
  ck_assert_int_eq(steer_planner_goto(p, w, a, &g), 0);
  seen s = {0};
  run(p, w, 2, a, &s);
  ck_assert_int_eq(s.planned, 1);
  /* b walks down its room to the lower door's level: a replans for it. */
  steer_behaviour seek = steer_default_behaviour(STEER_BEHAVIOUR_ARRIVE);
  seek.target.kind = STEER_TARGET_POINT;
  seek.target.point = v2(10.0f, -25.0f);
  ck_assert_int_eq(steer_world_set_behaviour(w, b, &seek), 0);
  run(p, w, 600, a, &s);
  ck_assert_int_ge(s.replanned, 1);
  ck_assert_int_eq(s.last_reason, STEER_PLAN_TARGET_MOVED);
  for (int t = 0; t < 2000 && v2_len(v2_sub(pos(w, a), pos(w, b))) > 2.5f; t++)
    run(p, w, 1, a, &s);
  ck_assert_float_lt(v2_len(v2_sub(pos(w, a), pos(w, b))), 2.5f); /* replan_distance + node radius */
  /* Another behaviour takes it out of GOTO. */
  ck_assert_int_eq(steer_world_stop(w, a), 0);
  run(p, w, 1, a, &s);
  ck_assert_int_eq(steer_planner_status(p, a, NULL), STEER_GOTO_NONE);
  steer_planner_destroy(p);
  steer_world_destroy(w);
}
END_TEST

START_TEST(narrow_gap_by_radius) {
  steer_world *w = make_world(16, HALF, 1);
  wall(w, 1, v2(0.0f, -HALF), v2(0.0f, -0.6f));
  wall(w, 2, v2(0.0f, 0.6f), v2(0.0f, HALF)); /* a 1.2 m gap */
  steer_planner *p = planner(w);
  steer_id small = spawn(w, v2(-10.0f, 0.0f), 0.4f, STEER_MODEL_DYNAMIC);
  steer_id big = spawn(w, v2(-10.0f, 5.0f), 0.7f, STEER_MODEL_DYNAMIC);
  ck_assert_int_eq(steer_planner_warm(p, w), 2);
  steer_goto g = goto_point(v2(10.0f, 0.0f));
  ck_assert_int_eq(steer_planner_goto(p, w, small, &g), 0);
  ck_assert_int_eq(steer_planner_goto(p, w, big, &g), 0);
  seen s = {0}, t = {0};
  run(p, w, 1, small, &s);
  ck_assert_int_eq(s.planned, 1);
  ck_assert_int_eq(steer_planner_status(p, big, NULL), STEER_GOTO_UNREACHABLE);
  run(p, w, 1, big, &t);
  for (int k = 0; k < 2000 && v2_len(v2_sub(pos(w, small), g.target.point)) > 0.5f; k++)
    run(p, w, 1, small, &s);
  ck_assert_float_lt(v2_len(v2_sub(pos(w, small), g.target.point)), 0.5f);
  ck_assert_float_lt(pos(w, big).x, 0.0f);
  steer_planner_destroy(p);
  steer_world_destroy(w);
}
END_TEST

START_TEST(bad_requests) {
  steer_world *w = rooms();
  vec2 box[4] = {v2(-30.0f, -30.0f), v2(-25.0f, -30.0f), v2(-25.0f, -25.0f), v2(-30.0f, -25.0f)};
  steer_obstacle_desc o = {STEER_OBSTACLE_POLYGON, 4, box, 0.0f};
  ck_assert_int_eq(steer_world_add_obstacle(w, 20, &o, NULL), 0);
  steer_planner *p = planner(w);
  steer_id a = spawn(w, v2(-10.0f, 0.0f), 0.5f, STEER_MODEL_DYNAMIC);
  steer_goto g = goto_point(v2(-27.0f, -27.0f));
  ck_assert_int_eq(steer_planner_goto(p, w, a, &g), STEER_EBLOCKED);
  g = goto_point(v2(NAN, 0.0f));
  ck_assert_int_eq(steer_planner_goto(p, w, a, &g), STEER_EINVAL);
  g = goto_point(v2(1000.0f, 0.0f));
  ck_assert_int_eq(steer_planner_goto(p, w, a, &g), STEER_EINVAL);
  g = goto_point(v2(10.0f, 0.0f));
  g.node_radius = 0.0f;
  ck_assert_int_eq(steer_planner_goto(p, w, a, &g), STEER_EINVAL);
  g = goto_point(v2(10.0f, 0.0f));
  g.cornering = STEER_CORNER_ARC;
  ck_assert_int_eq(steer_planner_goto(p, w, a, &g), STEER_EMODEL);
  g = steer_default_goto();
  g.target.kind = STEER_TARGET_AGENT;
  g.target.agent = a;
  ck_assert_int_eq(steer_planner_goto(p, w, a, &g), STEER_ETARGET);
  g.target.agent = 12345;
  ck_assert_int_eq(steer_planner_goto(p, w, a, &g), STEER_ETARGET);
  g.target.kind = STEER_TARGET_NONE;
  ck_assert_int_eq(steer_planner_goto(p, w, a, &g), STEER_EINVAL);
  g = goto_point(v2(10.0f, 0.0f));
  ck_assert_int_eq(steer_planner_goto(p, w, 999, &g), STEER_ENOENT);
  ck_assert_int_eq(steer_planner_cancel(p, a), STEER_ENOENT);
  ck_assert_uint_eq(steer_planner_get_stats(p).queued, 0);
  /* Cancelled while queued: never served. */
  ck_assert_int_eq(steer_planner_goto(p, w, a, &g), 0);
  ck_assert_int_eq(steer_planner_cancel(p, a), 0);
  steer_planner_update(p, w);
  ck_assert_uint_eq(steer_planner_get_stats(p).last_served, 0);
  steer_planner_destroy(p);
  steer_world_destroy(w);
}
END_TEST

/* 10 000 agents in the left room all GOTO the right room in one tick. */
static uint64_t burst(uint32_t *ticks, uint32_t *max_served, uint32_t *max_spent, uint32_t budget) {
  const uint32_t N = 10000;
  steer_world *w = make_world(N, HALF, 1);
  two_rooms(w);
  steer_planner_config pc = steer_default_planner_config();
  pc.budget = budget;
  steer_planner *p = steer_planner_create(w, &pc);
  ck_assert_ptr_nonnull(p);
  steer_id *ids = malloc(N * sizeof *ids);
  for (uint32_t i = 0; i < N; i++) {
    vec2 at = v2(-45.0f + (float)(i % 100) * 0.42f, -45.0f + (float)(i / 100) * 0.9f);
    ids[i] = spawn(w, at, 0.2f, STEER_MODEL_KINEMATIC);
  }
  for (uint32_t i = 0; i < N; i++) {
    steer_goto g = goto_point(v2(10.0f + (float)(i % 50) * 0.7f, -40.0f + (float)(i / 50) * 0.4f));
    ck_assert_int_eq(steer_planner_goto(p, w, ids[i], &g), 0);
  }
  uint32_t answered = 0;
  *ticks = 0;
  *max_served = 0;
  *max_spent = 0;
  while (steer_planner_get_stats(p).queued > 0) {
    steer_planner_update(p, w);
    uint32_t n;
    steer_planner_events(p, &n);
    answered += n;
    steer_planner_stats st = steer_planner_get_stats(p);
    if (st.last_served > *max_served)
      *max_served = st.last_served;
    if (st.last_expanded > *max_spent)
      *max_spent = st.last_expanded;
    steer_world_step(w, DT);
    steer_planner_observe(p, w);
    ++*ticks;
    ck_assert_uint_lt(*ticks, 2000);
  }
  ck_assert_uint_eq(answered, N);
  ck_assert_uint_eq(steer_planner_get_stats(p).unreachable, 0);
  uint64_t h = steer_world_hash(w);
  free(ids);
  steer_planner_destroy(p);
  steer_world_destroy(w);
  return h;
}

START_TEST(burst_of_ten_thousand) {
  uint32_t ticks, served, spent, ticks2, served2, spent2;
  uint64_t h1 = burst(&ticks, &served, &spent, 4096);
  uint64_t h2 = burst(&ticks2, &served2, &spent2, 4096);
  ck_assert_uint_eq(h1, h2); /* same calls, same world */
  ck_assert_uint_eq(ticks, ticks2);
  ck_assert_uint_gt(ticks, 1);      /* spread over ticks, */
  ck_assert_uint_lt(served, 10000); /* never all in one */
  /* Budget: a tick stops serving once it is spent, so it overshoots by at most
   * one plan (on this map, well under 1000 expansions). */
  ck_assert_uint_lt(spent, 4096 + 1000);
}
END_TEST

/* Saved mid-way (a queue waiting, routes followed, a door closed since the
 * graphs were built), the world and the planner loaded into new ones continue
 * exactly as the originals: same world hash, planner hash and events every tick. */
/* Saves p and w and loads them into a new world and planner. */
static void restore(steer_planner *p, steer_world *w, const steer_planner_config *pc, steer_planner **p2,
                    steer_world **w2) {
  size_t wl = steer_world_state_size(w), pl = steer_planner_state_size(p);
  uint8_t *wb = malloc(wl), *pb = malloc(pl);
  ck_assert_int_eq(steer_world_save(w, wb, wl, NULL), 0);
  ck_assert_int_eq(steer_planner_save(p, pb, pl, NULL), 0);
  *w2 = steer_world_load(wb, wl, NULL);
  ck_assert_ptr_nonnull(*w2);
  *p2 = steer_planner_create(*w2, pc);
  ck_assert_int_eq(steer_planner_load(*p2, pb, pl), 0);
  free(wb);
  free(pb);
}

/* Runs both for ticks, with the same events, expansions and hashes in every
 * tick; returns the events. */
static uint32_t lockstep(steer_planner *p, steer_world *w, steer_planner *p2, steer_world *w2, int ticks) {
  uint32_t events = 0;
  for (int t = 0; t < ticks; t++) {
    steer_planner_update(p, w);
    steer_planner_update(p2, w2);
    uint32_t n1, n2;
    const steer_plan_event *e1 = steer_planner_events(p, &n1);
    const steer_plan_event *e2 = steer_planner_events(p2, &n2);
    ck_assert_uint_eq(n1, n2);
    for (uint32_t i = 0; i < n1; i++) {
      ck_assert_uint_eq(e1[i].agent, e2[i].agent);
      ck_assert_uint_eq(e1[i].type, e2[i].type);
      ck_assert_uint_eq(e1[i].reason, e2[i].reason);
      ck_assert_uint_eq(e1[i].points, e2[i].points);
      ck_assert(e1[i].length == e2[i].length);
    }
    events += n1;
    ck_assert_uint_eq(steer_planner_get_stats(p).last_expanded, steer_planner_get_stats(p2).last_expanded);
    steer_world_step(w, DT);
    steer_world_step(w2, DT);
    steer_planner_observe(p, w);
    steer_planner_observe(p2, w2);
    ck_assert_uint_eq(steer_world_hash(w), steer_world_hash(w2));
    ck_assert_uint_eq(steer_planner_hash(p), steer_planner_hash(p2));
  }
  return events;
}

START_TEST(checkpoint_continues_bit_for_bit) {
  steer_world *w = make_world(64, HALF, 1);
  two_rooms(w);
  steer_planner_config pc = steer_default_planner_config();
  pc.budget = 40; /* a few plans per tick: the queue is still full when saved */
  steer_planner *p = steer_planner_create(w, &pc);
  steer_id ids[40];
  for (uint32_t i = 0; i < 40; i++)
    ids[i] = spawn(w, v2(-40.0f + (float)(i % 8) * 4.0f, -30.0f + (float)(i / 8) * 12.0f), 0.4f,
                   i % 3 == 0 ? STEER_MODEL_KINEMATIC : STEER_MODEL_DYNAMIC);
  for (uint32_t i = 0; i < 40; i++) {
    steer_goto g = goto_point(v2(10.0f + (float)(i % 5) * 6.0f, -35.0f + (float)(i / 5) * 9.0f));
    if (i % 7 == 3) {
      g.target.kind = STEER_TARGET_AGENT;
      g.target.agent = ids[(i + 1) % 40];
    }
    ck_assert_int_eq(steer_planner_goto(p, w, ids[i], &g), 0);
  }
  seen s = {0};
  run(p, w, 3, ids[0], &s);
  wall(w, 11, v2(0.0f, 18.5f), v2(0.0f, 21.5f));         /* the upper door closes: replans wait */
  ck_assert_int_eq(steer_planner_cancel(p, ids[39]), 0); /* a queued slot left GOTO */
  ck_assert_uint_gt(steer_planner_get_stats(p).queued, 0);

  size_t wl = steer_world_state_size(w), pl = steer_planner_state_size(p), got = 0;
  uint8_t *wb = malloc(wl), *pb = malloc(pl);
  ck_assert_int_eq(steer_world_save(w, wb, wl, NULL), 0);
  ck_assert_int_eq(steer_planner_save(p, pb, pl - 1, &got), STEER_EINVAL);
  ck_assert_uint_eq(got, pl);
  ck_assert_int_eq(steer_planner_save(p, pb, pl, &got), 0);
  ck_assert_uint_eq(got, pl);
  steer_world *w2 = steer_world_load(wb, wl, NULL);
  ck_assert_ptr_nonnull(w2);
  steer_planner *p2 = steer_planner_create(w2, &pc);
  ck_assert_int_eq(steer_planner_load(p2, pb, pl), 0);
  ck_assert_uint_eq(steer_planner_hash(p2), steer_planner_hash(p));
  /* It saves back byte for byte. */
  uint8_t *pb2 = malloc(pl);
  ck_assert_int_eq(steer_planner_save(p2, pb2, pl, &got), 0);
  ck_assert_mem_eq(pb, pb2, pl);

  uint32_t events = lockstep(p, w, p2, w2, 400);
  ck_assert_uint_gt(events, 30); /* the queue was served after the restore, replans included */

  /* Untrusted bytes: damage, another version, another capacity. */
  pb2[20] ^= 1;
  ck_assert_int_eq(steer_planner_load(p2, pb2, pl), STEER_ECORRUPT);
  ck_assert_int_eq(steer_planner_load(p2, pb, pl - 1), STEER_ECORRUPT);
  memcpy(pb2, pb, pl);
  pb2[4] = STEER_PLANNER_STATE_VERSION + 1u; /* a later version, checksum repaired */
  reseal(pb2, pl);
  ck_assert_int_eq(steer_planner_load(p2, pb2, pl), STEER_EVERSION);
  steer_world *small = make_world(32, HALF, 1);
  steer_planner *p3 = steer_planner_create(small, &pc);
  ck_assert_int_eq(steer_planner_load(p3, pb, pl), STEER_ECORRUPT);
  steer_planner_destroy(p3);
  steer_world_destroy(small);

  free(wb);
  free(pb);
  free(pb2);
  steer_planner_destroy(p2);
  steer_world_destroy(w2);
  steer_planner_destroy(p);
  steer_world_destroy(w);
}
END_TEST

/* Warming up (steer_planner_warm) builds the graphs of the classes in use
 * before the first tick and makes them served at once: the warmed planner
 * plans in its first tick and builds nothing in any tick, through map changes
 * made after the warm-up (incremental updates). A lazy planner builds the same
 * classes off the tick thread and serves them from their due tick on. */
static void warm_world(steer_world *w, steer_id *ids) {
  two_rooms(w);
  for (uint32_t i = 0; i < 12; i++)
    ids[i] = spawn(w, v2(-40.0f + (float)(i % 4) * 8.0f, -30.0f + (float)(i / 4) * 25.0f),
                   i % 2 ? 0.8f : 0.4f, STEER_MODEL_DYNAMIC);
}

START_TEST(warm_up_builds_before_the_first_tick) {
  steer_world *w[2] = {make_world(32, HALF, 1), make_world(32, HALF, 1)};
  steer_id ids[2][12];
  steer_planner *p[2];
  steer_planner_config pc = steer_default_planner_config();
  pc.nav = STEER_NAV_GRAPH; /* updated in place after map changes (a mesh is rebuilt, off the tick) */
  for (int k = 0; k < 2; k++) {
    warm_world(w[k], ids[k]);
    p[k] = steer_planner_create(w[k], &pc);
    ck_assert_ptr_nonnull(p[k]);
    ck_assert_uint_eq(steer_planner_graph_builds(p[k]), 0);
  }
  /* The classes in use: the agents' (0.4 m and 0.8 m). */
  float cls[3] = {0.0f, steer_nav_class_radius(0.4f), steer_nav_class_radius(0.8f)};
  int distinct = 1 + (cls[2] != cls[1]);
  ck_assert_int_eq(distinct, 2);
  ck_assert_int_eq(steer_planner_warm(p[0], w[0]), distinct);
  ck_assert_uint_eq(steer_planner_graph_builds(p[0]), (uint64_t)distinct);
  ck_assert_int_eq(steer_planner_warm(p[0], w[0]), 0); /* nothing more to build */
  ck_assert_uint_eq(steer_planner_graph_builds(p[0]), (uint64_t)distinct);
  /* The map changes after the warm-up: the warmed graphs are updated, not rebuilt. */
  for (int k = 0; k < 2; k++)
    wall(w[k], 11, v2(0.0f, 18.5f), v2(0.0f, 21.5f));
  for (int k = 0; k < 2; k++)
    for (uint32_t i = 0; i < 12; i++) {
      steer_goto g = goto_point(v2(10.0f + (float)(i % 4) * 8.0f, -30.0f + (float)(i / 4) * 25.0f));
      ck_assert_int_eq(steer_planner_goto(p[k], w[k], ids[k][i], &g), 0);
    }
  uint32_t events[2] = {0, 0};
  for (int t = 0; t < 300; t++) {
    uint64_t before = steer_planner_graph_builds(p[0]);
    if (t == 40)
      for (int k = 0; k < 2; k++) /* the lower door closes too: routes replan on updated graphs */
        wall(w[k], 10, v2(0.0f, -21.5f), v2(0.0f, -18.5f));
    steer_planner_update(p[0], w[0]);
    steer_planner_update(p[1], w[1]);
    ck_assert_uint_eq(steer_planner_graph_builds(p[0]), before); /* no build in a tick of the warmed one */
    uint32_t n[2];
    steer_planner_events(p[0], &n[0]);
    steer_planner_events(p[1], &n[1]);
    if (t == 0) {
      ck_assert_uint_eq(n[0], 12); /* served at once */
      ck_assert_uint_eq(n[1], 0);  /* waiting for the due tick (the build runs meanwhile) */
    }
    for (int k = 0; k < 2; k++) {
      events[k] += n[k];
      steer_world_step(w[k], DT);
      steer_planner_observe(p[k], w[k]);
    }
  }
  ck_assert_uint_ge(events[0], 12);
  ck_assert_uint_ge(events[1], 12);
  ck_assert_uint_eq(steer_planner_graph_builds(p[1]),
                    (uint64_t)distinct); /* the same classes, off the tick */
  for (int k = 0; k < 2; k++)
    ck_assert_uint_eq(steer_planner_tick_builds(p[k]), 0);
  /* A new class at a command: built then, once; beyond the classes or bad: nothing. */
  uint64_t b = steer_planner_graph_builds(p[0]);
  ck_assert_int_eq(steer_planner_warm_radius(p[0], w[0], 1.6f), 1);
  ck_assert_int_eq(steer_planner_warm_radius(p[0], w[0], 1.6f), 0);
  ck_assert_uint_eq(steer_planner_graph_builds(p[0]), b + 1u);
  ck_assert_int_eq(steer_planner_warm_radius(p[0], w[0], 100.0f), 0);
  ck_assert_int_eq(steer_planner_warm_radius(p[0], w[0], NAN), STEER_EINVAL);
  ck_assert_int_eq(steer_planner_warm_radius(p[0], w[0], -1.0f), STEER_EINVAL);
  ck_assert_uint_eq(steer_planner_graph_builds(p[0]), b + 1u);
  for (int k = 0; k < 2; k++) {
    steer_planner_destroy(p[k]);
    steer_world_destroy(w[k]);
  }
}
END_TEST

/* A radius class that appears after the warm-up (an agent's radius changed
 * mid-GOTO, a new agent of another radius) is built off the tick thread: its
 * requests wait in the queue until the due tick (the request's tick plus
 * build_delay), the agent keeps its old route meanwhile, no graph is built in
 * a tick, and the results do not depend on timing: a replay gives the same
 * events and hashes, and so does a planner restored from a checkpoint taken
 * while the builds were under way (its graphs warmed at the restore, its
 * classes still waiting for the same due tick), through a map change made
 * after the builds started: on meshes that change has each new class's mesh
 * rebuilt from its due tick on (a served class is rebuilt after a change, its
 * requests waiting another delay), on visibility graphs it is an update. */
START_TEST(new_class_built_off_the_tick_deterministically) {
  enum { RUNS = 3, TICKS = 200, CHANGE = 20, DELAY = 6, CHECKPOINT = 23 };
  steer_world *w[RUNS] = {NULL};
  steer_planner *p[RUNS] = {NULL};
  steer_id a[2], b[2], c[2] = {0, 0};
  steer_planner_config pc = steer_default_planner_config();
  pc.build_delay = DELAY;
  for (int k = 0; k < 2; k++) {
    w[k] = rooms();
    a[k] = spawn(w[k], v2(-30.0f, 30.0f), 0.4f, STEER_MODEL_DYNAMIC);
    b[k] = spawn(w[k], v2(-30.0f, -30.0f), 0.4f, STEER_MODEL_DYNAMIC);
    p[k] = steer_planner_create(w[k], &pc);
    ck_assert_int_eq(steer_planner_warm(p[k], w[k]), 1); /* the 0.5 m class */
    steer_goto g = goto_point(v2(30.0f, 30.0f));
    ck_assert_int_eq(steer_planner_goto(p[k], w[k], a[k], &g), 0);
    g = goto_point(v2(30.0f, -30.0f));
    ck_assert_int_eq(steer_planner_goto(p[k], w[k], b[k], &g), 0);
  }
  int b_served = -1, c_served = -1;
  uint32_t events = 0;
  for (int t = 0; t < TICKS; t++) {
    if (t == CHANGE)
      for (int k = 0; k < 2; k++) {
        /* b grows to the 1.25 m class mid-GOTO and asks again; c, of the
         * 1.75 m class, arrives. */
        steer_agent_info info;
        ck_assert_int_eq(steer_world_get(w[k], b[k], &info), 0);
        steer_limits l = info.limits;
        l.radius = 1.1f;
        ck_assert_int_eq(steer_world_set_limits(w[k], b[k], &l), 0);
        steer_goto g = goto_point(v2(30.0f, -40.0f));
        ck_assert_int_eq(steer_planner_goto(p[k], w[k], b[k], &g), 0);
        c[k] = spawn(w[k], v2(-35.0f, 0.0f), 1.6f, STEER_MODEL_DYNAMIC);
        g = goto_point(v2(35.0f, 0.0f));
        ck_assert_int_eq(steer_planner_goto(p[k], w[k], c[k], &g), 0);
      }
    if (t == CHANGE + 1)
      for (int k = 0; k < RUNS; k++) /* after the builds started from copies of the map */
        if (w[k]) {
          vec2 ctr = v2(-20.0f, -10.0f);
          steer_obstacle_desc o = {STEER_OBSTACLE_CIRCLE, 1, &ctr, 1.5f};
          ck_assert_int_eq(steer_world_add_obstacle(w[k], 50, &o, NULL), 0);
        }
    if (t == CHECKPOINT) {
      /* A checkpoint of run 0 while its two builds wait for their due tick. */
      size_t wl = steer_world_state_size(w[0]), pl = steer_planner_state_size(p[0]);
      uint8_t *wb = malloc(wl), *pb = malloc(pl);
      ck_assert_int_eq(steer_world_save(w[0], wb, wl, NULL), 0);
      ck_assert_int_eq(steer_planner_save(p[0], pb, pl, NULL), 0);
      w[2] = steer_world_load(wb, wl, NULL);
      ck_assert_ptr_nonnull(w[2]);
      p[2] = steer_planner_create(w[2], &pc);
      ck_assert_ptr_nonnull(p[2]);
      steer_planner_restoring(p[2]);
      ck_assert_int_eq(steer_planner_load(p[2], pb, pl), 0);
      ck_assert_int_eq(steer_planner_warm(p[2], w[2]), 3); /* as the server does: built, not served */
      ck_assert_uint_eq(steer_planner_hash(p[2]), steer_planner_hash(p[0]));
      free(wb);
      free(pb);
    }
    uint32_t n[RUNS] = {0};
    const steer_plan_event *e[RUNS] = {NULL};
    for (int k = 0; k < RUNS; k++)
      if (p[k]) {
        steer_planner_update(p[k], w[k]);
        e[k] = steer_planner_events(p[k], &n[k]);
      }
    for (int k = 1; k < RUNS; k++) {
      if (!p[k])
        continue;
      ck_assert_uint_eq(n[k], n[0]);
      for (uint32_t i = 0; i < n[0]; i++) {
        ck_assert_uint_eq(e[k][i].tick, e[0][i].tick);
        ck_assert_uint_eq(e[k][i].agent, e[0][i].agent);
        ck_assert_uint_eq(e[k][i].type, e[0][i].type);
        ck_assert_uint_eq(e[k][i].reason, e[0][i].reason);
        ck_assert_uint_eq(e[k][i].points, e[0][i].points);
        ck_assert(e[k][i].length == e[0][i].length);
      }
    }
    for (uint32_t i = 0; i < n[0]; i++) {
      if (t >= CHANGE && e[0][i].agent == b[0] && b_served < 0)
        b_served = t;
      if (t >= CHANGE && e[0][i].agent == c[0] && c_served < 0)
        c_served = t;
    }
    events += n[0];
    for (int k = 0; k < RUNS; k++)
      if (p[k]) {
        steer_world_step(w[k], DT);
        steer_planner_observe(p[k], w[k]);
      }
    for (int k = 1; k < RUNS; k++)
      if (p[k]) {
        ck_assert_uint_eq(steer_world_hash(w[k]), steer_world_hash(w[0]));
        ck_assert_uint_eq(steer_planner_hash(p[k]), steer_planner_hash(p[0]));
      }
  }
  /* Served exactly at the due tick (the world's tick at the request was
   * CHANGE), and on meshes one delay later for the rebuild after the map
   * change at CHANGE + 1. */
  ck_assert_int_eq(b_served, CHANGE + DELAY + (pc.nav == STEER_NAV_MESH ? DELAY : 0));
  ck_assert_int_eq(c_served, CHANGE + DELAY + (pc.nav == STEER_NAV_MESH ? DELAY : 0));
  ck_assert_uint_ge(events, 4);
  for (int k = 0; k < RUNS; k++) {
    ck_assert_uint_eq(steer_planner_tick_builds(p[k]), 0); /* no graph built on the tick thread */
    ck_assert_int_ne(steer_planner_status(p[k], c[k < 2 ? k : 0], NULL), STEER_GOTO_QUEUED);
  }
  /* Warmed 0.5 m, then 1.25 m and 1.75 m off the thread; on meshes the three
   * rebuilt after the map change, off the thread too. */
  ck_assert_uint_eq(steer_planner_graph_builds(p[0]), pc.nav == STEER_NAV_MESH ? 6u : 3u);
  for (int k = 0; k < RUNS; k++) {
    steer_planner_destroy(p[k]);
    steer_world_destroy(w[k]);
  }
}
END_TEST

/* A map whose graph takes a while to build (about 0.1 s): 40-gons on a grid,
 * fewer in an unoptimized build with sanitizers, which builds 30 times slower. */
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
#define PILLAR_ROWS 5u
#else
#define PILLAR_ROWS 9u
#endif
static steer_world *pillars_for(uint32_t cap) {
  steer_world *w = make_world(cap, HALF, 1);
  vec2 pts[40];
  for (uint32_t i = 0; i < PILLAR_ROWS * PILLAR_ROWS; i++) {
    vec2 c = v2(-45.0f + 10.0f * ((float)(i % PILLAR_ROWS) + 0.5f),
                -45.0f + 10.0f * ((float)(i / PILLAR_ROWS) + 0.5f));
    for (int k = 0; k < 40; k++) {
      float a = 2.0f * STEER_PI * (float)k / 40.0f;
      pts[k] = v2(c.x + 3.0f * cosf(a), c.y + 3.0f * sinf(a));
    }
    steer_obstacle_desc o = {STEER_OBSTACLE_POLYGON, 40, pts, 0.0f};
    ck_assert_int_eq(steer_world_add_obstacle(w, 100 + i, &o, NULL), 0);
  }
  return w;
}

static steer_world *pillars(void) { return pillars_for(16); }

typedef struct hook_log {
  uint32_t slices, ends;
  float radius;
  uint64_t waited_ns;
} hook_log;

static void on_wait(void *ctx, float class_radius, uint64_t waited_ns, int done) {
  hook_log *h = ctx;
  h->radius = class_radius;
  h->waited_ns = waited_ns;
  if (done)
    h->ends++;
  else
    h->slices++;
}

/* steer_planner_warm_start: the classes in use get a due tick as a late class
 * does and their builds run on threads; the tick due waits for a build still
 * running in slices, calling the hook between them; a planner whose build had
 * ended before the due tick gives the same events and hashes, and the
 * request's queue position is reported while it waits. */
START_TEST(warm_start_waits_with_the_hook_deterministically) {
  enum { DELAY = 2, TICKS = 8 };
  steer_planner_config pc = steer_default_planner_config();
  pc.build_delay = DELAY;
  pc.nav = STEER_NAV_GRAPH; /* builds of seconds: the wait is certain */
  steer_world *w[2];
  steer_planner *p[2];
  steer_id a[2];
  hook_log h[2];
  memset(h, 0, sizeof h);
  for (int k = 1; k >= 0; k--) { /* run 1 first: its build ends before run 0's starts */
    w[k] = pillars();
    a[k] = spawn(w[k], v2(-45.0f, -45.0f), 0.4f, STEER_MODEL_DYNAMIC);
    p[k] = steer_planner_create(w[k], &pc);
    ck_assert_ptr_nonnull(p[k]);
    steer_planner_set_wait_hook(p[k], on_wait, &h[k]);
    ck_assert_int_eq(steer_planner_warm_start(p[k], w[k]), 1); /* the 0.5 m class */
    ck_assert_int_eq(steer_planner_warm_start(p[k], w[k]), 0); /* under way */
    steer_goto g = goto_point(v2(44.0f, 44.0f));
    ck_assert_int_eq(steer_planner_goto(p[k], w[k], a[k], &g), 0);
    uint32_t pos = 99;
    ck_assert_int_eq(steer_planner_queue_position(p[k], a[k], &pos), 0);
    ck_assert_uint_eq(pos, 0);
    /* Run 1's build ends before its due tick; run 0's is waited for. */
    while (k == 1 && steer_planner_warming(p[1]) > 0)
      nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  ck_assert_uint_eq(steer_planner_warming(p[1]), 0);
  int served = -1;
  for (int t = 0; t < TICKS; t++) {
    uint32_t n[2];
    const steer_plan_event *e[2];
    for (int k = 0; k < 2; k++) {
      steer_planner_update(p[k], w[k]);
      e[k] = steer_planner_events(p[k], &n[k]);
    }
    ck_assert_uint_eq(n[0], n[1]);
    for (uint32_t i = 0; i < n[0]; i++) {
      ck_assert_uint_eq(e[0][i].tick, e[1][i].tick);
      ck_assert_uint_eq(e[0][i].type, STEER_PLAN_PLANNED);
      ck_assert_uint_eq(e[1][i].points, e[0][i].points);
      ck_assert(e[1][i].length == e[0][i].length);
      served = t;
    }
    if (t < DELAY) { /* still queued, first in line */
      uint32_t pos = 99;
      ck_assert_int_eq(steer_planner_queue_position(p[0], a[0], &pos), 0);
      ck_assert_uint_eq(pos, 0);
    } else {
      uint32_t pos;
      ck_assert_int_eq(steer_planner_queue_position(p[0], a[0], &pos), STEER_ENOENT);
    }
    for (int k = 0; k < 2; k++) {
      steer_world_step(w[k], DT);
      steer_planner_observe(p[k], w[k]);
    }
    ck_assert_uint_eq(steer_world_hash(w[0]), steer_world_hash(w[1]));
    ck_assert_uint_eq(steer_planner_hash(p[0]), steer_planner_hash(p[1]));
  }
  ck_assert_int_eq(served, DELAY); /* the due tick: the tick of the warm-up plus build_delay */
  /* Run 0 waited (its build takes far longer than two steps of one agent). */
  steer_planner_stats st0 = steer_planner_get_stats(p[0]), st1 = steer_planner_get_stats(p[1]);
  ck_assert_uint_eq(st0.waits, 1);
  ck_assert_uint_eq(h[0].ends, 1);
  ck_assert_uint_gt(h[0].waited_ns, 0);
  ck_assert_uint_eq(st0.wait_ns, h[0].waited_ns);
  ck_assert(h[0].radius == 0.5f);
  ck_assert_uint_eq(st1.waits, 0);
  ck_assert_uint_eq(h[1].ends + h[1].slices, 0);
  for (int k = 0; k < 2; k++) {
    steer_planner_stats st = steer_planner_get_stats(p[k]);
    ck_assert_uint_eq(st.plans, 1);
    ck_assert_uint_eq(st.planned, 1);
    uint64_t in_buckets = 0;
    for (int b = 0; b < STEER_PLANNER_TIME_BUCKETS; b++)
      in_buckets += st.plan_time_bucket[b];
    ck_assert_uint_eq(in_buckets, 1);
    ck_assert_uint_eq(steer_planner_tick_builds(p[k]), 0);
    ck_assert_uint_eq(steer_planner_sync_builds(p[k]), 0);
    ck_assert_uint_eq(steer_planner_graph_builds(p[k]), 1);
    steer_planner_destroy(p[k]);
    steer_world_destroy(w[k]);
  }
}
END_TEST

/* On a mesh a plan longer than the budget goes on over ticks, first in the
 * queue, and ends with the route a plan in one go gives; no tick spends more
 * than the budget and one set-up; a map change meanwhile begins it again on
 * the new map. */
START_TEST(sliced_plan_is_the_whole_plan) {
  enum { SMALL = 64 };
  steer_world *w[2];
  steer_planner *p[2];
  steer_id a[2];
  const uint32_t budgets[2] = {SMALL, 1000000u};
  for (int k = 0; k < 2; k++) {
    w[k] = pillars();
    steer_planner_config pc = steer_default_planner_config();
    pc.budget = budgets[k];
    p[k] = steer_planner_create(w[k], &pc);
    a[k] = spawn(w[k], v2(-45.0f, -45.0f), 0.4f, STEER_MODEL_DYNAMIC);
    steer_goto g = goto_point(v2(44.0f, 44.0f));
    ck_assert_int_eq(steer_planner_goto(p[k], w[k], a[k], &g), 0);
  }
  int ticks[2] = {-1, -1};
  uint32_t slices = 0;
  for (int t = 0; t < 4000 && ticks[0] < 0; t++)
    for (int k = 0; k < 2; k++) {
      if (ticks[k] >= 0)
        continue;
      steer_planner_update(p[k], w[k]);
      uint32_t n;
      const steer_plan_event *e = steer_planner_events(p[k], &n);
      if (k == 0)
        ck_assert_uint_le(steer_planner_get_stats(p[k]).last_expanded, SMALL + 1u);
      steer_world_step(w[k], DT);
      steer_planner_observe(p[k], w[k]);
      if (n) {
        ck_assert_uint_eq(e[0].type, STEER_PLAN_PLANNED);
        ticks[k] = t;
      } else if (k == 0 && ticks[1] >= 0) {
        uint32_t pos = 99;
        ck_assert_int_eq(steer_planner_queue_position(p[0], a[0], &pos), 0); /* still first */
        ck_assert_uint_eq(pos, 0);
        slices++;
      }
    }
  ck_assert_int_ge(ticks[1], 0);
  ck_assert_int_gt(ticks[0], ticks[1] + 3); /* many slices */
  ck_assert_uint_gt(slices, 2);
  steer_agent_info i0, i1;
  ck_assert_int_eq(steer_world_get(w[0], a[0], &i0), 0);
  ck_assert_int_eq(steer_world_get(w[1], a[1], &i1), 0);
  steer_path r0, r1;
  ck_assert_int_eq(steer_world_path_get(w[0], i0.path, &r0), 0);
  ck_assert_int_eq(steer_world_path_get(w[1], i1.path, &r1), 0);
  ck_assert_uint_eq(r0.count, r1.count);
  for (uint32_t i = 0; i < r0.count; i++) {
    ck_assert(r0.points[i].x == r1.points[i].x);
    ck_assert(r0.points[i].y == r1.points[i].y);
  }
  /* A map change while the slices go on: the plan begins again and its route
   * keeps clear of the new wall. */
  steer_id b = spawn(w[0], v2(-45.0f, 45.0f), 0.4f, STEER_MODEL_DYNAMIC);
  steer_goto g = goto_point(v2(44.0f, -44.0f));
  ck_assert_int_eq(steer_planner_goto(p[0], w[0], b, &g), 0);
  for (int t = 0; t < 4; t++) {
    steer_planner_update(p[0], w[0]);
    steer_world_step(w[0], DT);
  }
  wall(w[0], 999, v2(-2.0f, -40.0f), v2(2.0f, 40.0f));
  int planned = 0;
  for (int t = 0; t < 2000 && !planned; t++) {
    steer_planner_update(p[0], w[0]);
    uint32_t n;
    const steer_plan_event *e = steer_planner_events(p[0], &n);
    for (uint32_t i = 0; i < n; i++)
      planned |= e[i].agent == b && e[i].type == STEER_PLAN_PLANNED;
    if (!planned)
      steer_world_step(w[0], DT);
  }
  ck_assert(planned);
  steer_agent_info ib;
  ck_assert_int_eq(steer_world_get(w[0], b, &ib), 0);
  steer_path rb;
  ck_assert_int_eq(steer_world_path_get(w[0], ib.path, &rb), 0);
  vec2 at = ib.state.position;
  for (uint32_t i = 0; i < rb.count; i++) {
    ck_assert(steer_nav_clear(steer_world_map(w[0]), at, rb.points[i], 0.4f));
    at = rb.points[i];
  }
  for (int k = 0; k < 2; k++) {
    steer_planner_destroy(p[k]);
    steer_world_destroy(w[k]);
  }
}
END_TEST

/* A plan in progress is its agent's: the agent despawned, the next in the
 * queue gets its own route; its radius changed to another class, it begins
 * again on that class and still ends at its own target. */
START_TEST(pending_plan_stays_with_its_agent) {
  steer_world *w = pillars();
  steer_planner_config pc = steer_default_planner_config();
  pc.budget = 64;
  steer_planner *p = steer_planner_create(w, &pc);
  steer_id a = spawn(w, v2(-45.0f, -45.0f), 0.4f, STEER_MODEL_DYNAMIC);
  steer_id b = spawn(w, v2(45.0f, -45.0f), 0.4f, STEER_MODEL_DYNAMIC);
  steer_id c = spawn(w, v2(-45.0f, 45.0f), 0.4f, STEER_MODEL_DYNAMIC);
  steer_goto ga = goto_point(v2(44.0f, 44.0f)), gb = goto_point(v2(-44.0f, -40.0f)),
             gc = goto_point(v2(40.0f, -44.0f));
  ck_assert_int_eq(steer_planner_goto(p, w, a, &ga), 0);
  ck_assert_int_eq(steer_planner_goto(p, w, b, &gb), 0);
  ck_assert_int_eq(steer_planner_goto(p, w, c, &gc), 0);
  int despawned = 0, grown = 0, planned_b = 0, planned_c = 0;
  for (int t = 0; t < 6000 && !(planned_b && planned_c); t++) {
    steer_planner_update(p, w);
    uint32_t n;
    const steer_plan_event *e = steer_planner_events(p, &n);
    for (uint32_t i = 0; i < n; i++) {
      ck_assert_uint_ne(e[i].agent, a); /* despawned before its plan ended */
      planned_b |= e[i].agent == b && e[i].type == STEER_PLAN_PLANNED;
      planned_c |= e[i].agent == c && e[i].type == STEER_PLAN_PLANNED;
    }
    uint32_t pos;
    if (!despawned && t > 3 && steer_planner_queue_position(p, a, &pos) == 0 && pos == 0) {
      ck_assert_int_eq(steer_world_despawn(w, a), 0); /* its plan is in progress */
      despawned = 1;
    }
    if (despawned && !grown && steer_planner_queue_position(p, c, &pos) == 0 && pos == 0 && t % 7 == 0) {
      steer_agent_info info;
      ck_assert_int_eq(steer_world_get(w, c, &info), 0);
      steer_limits l = info.limits;
      l.radius = 0.9f; /* the 1 m class */
      ck_assert_int_eq(steer_world_set_limits(w, c, &l), 0);
      grown = 1;
    }
    steer_world_step(w, DT);
    steer_planner_observe(p, w);
  }
  ck_assert_msg(despawned && grown && planned_b && planned_c, "despawned %d grown %d b %d c %d", despawned,
                grown, planned_b, planned_c);
  const steer_id who[2] = {b, c};
  const vec2 where[2] = {gb.target.point, gc.target.point};
  for (int k = 0; k < 2; k++) { /* each route is planned to its own agent's target */
    steer_goto_info gi;
    ck_assert_int_eq(steer_planner_get(p, who[k], &gi), 0);
    ck_assert_float_lt(v2_len(v2_sub(gi.goal, where[k])), 1e-3f);
    steer_agent_info info;
    ck_assert_int_eq(steer_world_get(w, who[k], &info), 0);
    steer_path route;
    ck_assert_int_eq(steer_world_path_get(w, info.path, &route), 0);
    if (!gi.partial) {
      vec2 last = route.points[route.count - 1u];
      ck_assert_float_lt(v2_len(v2_sub(last, where[k])), 1e-3f);
    }
  }
  steer_planner_destroy(p);
  steer_world_destroy(w);
}
END_TEST

/* A route of more corners than a plan held at first (a serpentine of 300
 * walls: more than 1 200 corners) is planned whole, not UNREACHABLE, and
 * followed in parts of max_path_points. */
START_TEST(long_route_planned_whole) {
  for (int kind = 0; kind < 2; kind++) {
    steer_world *w = make_world(4, 400.0f, 1);
    for (uint32_t i = 0; i < 300; i++) { /* walls at x = -300 + 2i, open at the top or the bottom in turn */
      float x = -300.0f + 2.0f * (float)i;
      vec2 a = v2(x, i % 2 ? -380.0f : -400.0f), b = v2(x, i % 2 ? 400.0f : 380.0f);
      wall(w, 1000 + i, a, b);
    }
    steer_planner_config pc = steer_default_planner_config();
    pc.nav =
        kind ? STEER_NAV_GRAPH : STEER_NAV_MESH; /* the graph does not say how long: planned again, wider */
    steer_planner *p = steer_planner_create(w, &pc);
    steer_id a = spawn(w, v2(-310.0f, 0.0f), 0.4f, STEER_MODEL_DYNAMIC);
    steer_goto g = goto_point(v2(310.0f, 0.0f));
    ck_assert_int_eq(steer_planner_goto(p, w, a, &g), 0);
    seen s = {0};
    for (int t = 0; t < 200 && !s.planned && !s.unreachable; t++)
      run(p, w, 1, a, &s);
    ck_assert_int_eq(s.unreachable, 0);
    ck_assert_int_eq(s.planned, 1);
    steer_goto_info gi;
    ck_assert_int_eq(steer_planner_get(p, a, &gi), 0);
    ck_assert(gi.partial); /* its first part is followed */
    steer_planner_destroy(p);
    steer_world_destroy(w);
  }
}
END_TEST

/* A served mesh class's landmarks are computed off the tick and used by the
 * plans begun from their due tick on; a planner restored before that tick or
 * after it, each time with a plan in progress, goes on exactly as the saved
 * one (the same expansions in every tick, the same routes). */
START_TEST(landmarks_used_from_their_due_tick_across_restores) {
  steer_world *w = pillars_for(64);
  steer_planner_config pc = steer_default_planner_config();
  pc.budget = 24; /* plans in slices: one is in progress at every save */
  steer_planner *p = steer_planner_create(w, &pc);
  for (uint32_t i = 0; i < 40; i++) {
    vec2 at = v2(-45.0f + 10.0f * (float)(i % 10), -45.0f + 10.0f * (float)(i / 10));
    steer_id a = spawn(w, at, 0.4f, STEER_MODEL_DYNAMIC);
    steer_goto g = goto_point(v2(-at.x, -at.y + (i / 10 < 2 ? 0.0f : -20.0f)));
    ck_assert_int_eq(steer_planner_goto(p, w, a, &g), 0);
  }
  int on = -1;
  for (int t = 0; t < 200 && on < 0; t++) {
    if (t == 8) { /* the mesh served, its landmarks not yet due */
      ck_assert_uint_eq(steer_planner_get_stats(p).landmark_classes, 0);
      ck_assert_uint_gt(steer_planner_get_stats(p).queued, 0);
      steer_planner *p2;
      steer_world *w2;
      restore(p, w, &pc, &p2, &w2);
      lockstep(p, w, p2, w2, 60); /* across the due tick */
      ck_assert_uint_eq(steer_planner_get_stats(p2).landmark_classes, 1);
      steer_planner_destroy(p2);
      steer_world_destroy(w2);
      t += 60;
    }
    seen s = {0};
    run(p, w, 1, 0, &s);
    if (steer_planner_get_stats(p).landmark_classes)
      on = t;
  }
  ck_assert_int_ge(on, (int)STEER_PLANNER_LANDMARK_TICKS);
  /* Restored with landmarks in use and a plan in progress. */
  run(p, w, 3, 0, &(seen){0});
  ck_assert_uint_gt(steer_planner_get_stats(p).queued, 0);
  steer_planner *p3;
  steer_world *w3;
  restore(p, w, &pc, &p3, &w3);
  ck_assert_uint_eq(steer_planner_get_stats(p3).landmark_classes, 1);
  lockstep(p, w, p3, w3, 60);
  steer_planner_destroy(p3);
  steer_world_destroy(w3);
  steer_planner_destroy(p);
  steer_world_destroy(w);
}
END_TEST

/* A saved state of format version 1 (before the served classes were saved)
 * is read with every class served. */
START_TEST(version_1_state_serves_every_class) {
  steer_world *w = rooms();
  steer_planner *p = planner(w);
  steer_id a = spawn(w, v2(-30.0f, 30.0f), 0.4f, STEER_MODEL_DYNAMIC);
  steer_goto g = goto_point(v2(30.0f, 30.0f));
  ck_assert_int_eq(steer_planner_goto(p, w, a, &g), 0);
  size_t pl = steer_planner_state_size(p);
  uint8_t *pb = malloc(pl);
  ck_assert_int_eq(steer_planner_save(p, pb, pl, NULL), 0);
  /* Version 1: the same without the classes' part (1 + 8 x 8 bytes), the
   * mesh rebuilds (20 x 8), the landmarks (8 x 8 + 1) and the flag of a plan
   * in progress (1 byte: none). */
  size_t l1 = pl - 291u;
  pb[4] = 1;
  reseal(pb, l1);
  steer_planner *q = planner(w);
  ck_assert_int_eq(steer_planner_load(q, pb, l1), 0);
  steer_planner_update(q, w); /* served in its first tick: no due tick to wait for */
  uint32_t n;
  steer_planner_events(q, &n);
  ck_assert_uint_eq(n, 1);
  free(pb);
  steer_planner_destroy(q);
  steer_planner_destroy(p);
  steer_world_destroy(w);
}
END_TEST

/* The default build delay (PROTOCOL.md 5.6) counts the map's segments: a
 * polygon's edges, a wall's; a circle counts none. On visibility graphs 64
 * squares (256 segments) delay a new class by 1 + 256 / 128 = 3 ticks, 64
 * circles by 1, as an empty map. */
START_TEST(build_delay_counts_segments_not_circles) {
  for (int circles = 0; circles < 2; circles++) {
    steer_world *w = make_world(16, HALF, 1);
    for (uint32_t i = 0; i < 64; i++) {
      vec2 c = v2(-40.0f + 10.0f * (float)(i % 8), 5.0f + 5.0f * (float)(i / 8));
      vec2 sq[4] = {v2(c.x - 1, c.y - 1), v2(c.x + 1, c.y - 1), v2(c.x + 1, c.y + 1), v2(c.x - 1, c.y + 1)};
      steer_obstacle_desc o = {STEER_OBSTACLE_POLYGON, 4, sq, 0.0f};
      steer_obstacle_desc r = {STEER_OBSTACLE_CIRCLE, 1, &c, 1.0f};
      ck_assert_int_eq(steer_world_add_obstacle(w, i + 1u, circles ? &r : &o, NULL), 0);
    }
    ck_assert_uint_eq(steer_map_segment_count(steer_world_map(w)), circles ? 0u : 256u);
    steer_id a = spawn(w, v2(0.0f, -20.0f), 0.5f, STEER_MODEL_DYNAMIC);
    steer_planner_config pc = steer_default_planner_config();
    pc.nav = STEER_NAV_GRAPH;
    pc.build_delay = 0; /* by the map's size */
    steer_planner *p = steer_planner_create(w, &pc);
    ck_assert_ptr_nonnull(p);
    steer_goto g = goto_point(v2(20.0f, -30.0f));
    ck_assert_int_eq(steer_planner_goto(p, w, a, &g), 0);
    int served = -1;
    for (int t = 0; t < 20 && served < 0; t++) {
      steer_planner_update(p, w);
      uint32_t n;
      steer_planner_events(p, &n);
      if (n > 0)
        served = t;
      steer_world_step(w, DT);
      steer_planner_observe(p, w);
    }
    ck_assert_int_eq(served, circles ? 1 : 3);
    steer_planner_destroy(p);
    steer_world_destroy(w);
  }
}
END_TEST

static Suite *planner_suite(void) {
  Suite *s = suite_create("planner");
  TCase *tc = check_tcase(s, "core", 300);
  tcase_add_test(tc, reaches_the_next_room_and_stops);
  tcase_add_test(tc, a_replan_of_the_same_route_keeps_it_quietly);
  tcase_add_test(tc, closed_door_replans_then_unreachable_then_open);
  tcase_add_test(tc, follows_a_moving_agent);
  tcase_add_test(tc, narrow_gap_by_radius);
  tcase_add_test(tc, bad_requests);
  tcase_add_test(tc, burst_of_ten_thousand);
  tcase_add_test(tc, checkpoint_continues_bit_for_bit);
  tcase_add_test(tc, warm_up_builds_before_the_first_tick);
  tcase_add_test(tc, new_class_built_off_the_tick_deterministically);
  tcase_add_test(tc, build_delay_counts_segments_not_circles);
  tcase_add_test(tc, warm_start_waits_with_the_hook_deterministically);
  tcase_add_test(tc, version_1_state_serves_every_class);
  tcase_add_test(tc, landmarks_used_from_their_due_tick_across_restores);
  tcase_add_test(tc, sliced_plan_is_the_whole_plan);
  tcase_add_test(tc, pending_plan_stays_with_its_agent);
  tcase_add_test(tc, long_route_planned_whole);
  return s;
}

int main(void) { return check_run(planner_suite()); }

/* test_map.c: the map (geometry, validation, the cell index, add and remove by
 * id) and the hard guarantee of integration: after every step no body
 * overlaps geometry by more than 1 mm and every centre is inside the bounds,
 * for every movement model, fast agents, radius 0, and obstacles dropped on
 * top of agents while they move. The map is part of a saved world. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "map.h"
#include "rng.h"
#include "world.h"
#include "world_fixture.h"

#define DT    0.05f
#define SLACK 1e-3f

static int add_wall(steer_world *w, uint32_t id, const vec2 *p, uint32_t n) {
  steer_obstacle_desc o = {STEER_OBSTACLE_WALL, n, p, 0.0f};
  return steer_world_add_obstacle(w, id, &o, NULL);
}

static int add_poly(steer_world *w, uint32_t id, const vec2 *p, uint32_t n) {
  steer_obstacle_desc o = {STEER_OBSTACLE_POLYGON, n, p, 0.0f};
  return steer_world_add_obstacle(w, id, &o, NULL);
}

static int add_circle(steer_world *w, uint32_t id, vec2 c, float r) {
  steer_obstacle_desc o = {STEER_OBSTACLE_CIRCLE, 1, &c, r};
  return steer_world_add_obstacle(w, id, &o, NULL);
}

/* Rooms with doors, a concave L block, a U-shaped wall (a dead end), pillars. */
static void build_level(steer_world *w) {
  /* Room A: walls x -40..-10, y -20..20, door 3 m on its east side. */
  vec2 a[] = {{-10, -1.5f}, {-10, -20}, {-40, -20}, {-40, 20}, {-10, 20}, {-10, 1.5f}};
  ck_assert_int_eq(add_wall(w, 1, a, 6), STEER_OK);
  /* Corridor walls east of the door. */
  vec2 c1[] = {{-10, 1.5f}, {10, 1.5f}}, c2[] = {{-10, -1.5f}, {10, -1.5f}};
  ck_assert_int_eq(add_wall(w, 2, c1, 2), STEER_OK);
  ck_assert_int_eq(add_wall(w, 3, c2, 2), STEER_OK);
  /* Concave L block. */
  vec2 l[] = {{15, 10}, {35, 10}, {35, 14}, {19, 14}, {19, 30}, {15, 30}};
  ck_assert_int_eq(add_poly(w, 4, l, 6), STEER_OK);
  /* U-shaped dead end opening west. */
  vec2 u[] = {{20, -10}, {30, -10}, {30, -20}, {20, -20}};
  ck_assert_int_eq(add_wall(w, 5, u, 4), STEER_OK);
  /* Pillars and a triangle. */
  for (uint32_t i = 0; i < 5; i++)
    ck_assert_int_eq(add_circle(w, 10 + i, v2(-30.0f + 5.0f * (float)i, 30.0f), 1.0f), STEER_OK);
  vec2 t[] = {{40, -40}, {50, -35}, {42, -30}};
  ck_assert_int_eq(add_poly(w, 20, t, 3), STEER_OK);
}

static vec2 free_point(steer_world *w, steer_rng *rng, float half, float r) {
  for (;;) {
    vec2 p = steer_rng_point(rng, -half, half, -half, half);
    if (steer_map_free(steer_world_map(w), p, r + 0.01f, 0.0f))
      return p;
  }
}

/* ---- geometry and validation --------------------------------------------- */

START_TEST(test_validation) {
  steer_map *m = steer_map_create(v2(-10, -10), v2(10, 10), 2.0f);
  ck_assert_ptr_nonnull(m);
  vec2 ok3[] = {{0, 0}, {2, 0}, {0, 2}};
  steer_obstacle_desc o = {STEER_OBSTACLE_POLYGON, 3, ok3, 0.0f};
  ck_assert_int_eq(steer_map_add(m, 0, &o), STEER_EINVAL); /* id 0 */
  ck_assert_int_eq(steer_map_add(m, 7, &o), STEER_OK);
  ck_assert_int_eq(steer_map_add(m, 7, &o), STEER_EINVAL); /* id in use */
  vec2 line[] = {{0, 0}, {1, 1}, {2, 2}};                  /* zero area */
  o.points = line;
  ck_assert_int_eq(steer_map_add(m, 8, &o), STEER_EINVAL);
  vec2 bow[] = {{0, 0}, {2, 2}, {2, 0}, {0, 2}}; /* crossing edges */
  o.points = bow;
  o.count = 4;
  ck_assert_int_eq(steer_map_add(m, 8, &o), STEER_EINVAL);
  vec2 out[] = {{0, 0}, {20, 0}, {0, 2}}; /* outside the bounds */
  o.points = out;
  o.count = 3;
  ck_assert_int_eq(steer_map_add(m, 8, &o), STEER_EINVAL);
  vec2 nan[] = {{0, 0}, {NAN, 0}, {0, 2}};
  o.points = nan;
  ck_assert_int_eq(steer_map_add(m, 8, &o), STEER_EINVAL);
  vec2 dup[] = {{0, 0}, {0, 0}, {0, 2}}; /* zero-length edge */
  o.points = dup;
  ck_assert_int_eq(steer_map_add(m, 8, &o), STEER_EINVAL);
  o.count = 2; /* a polygon needs 3 */
  o.points = ok3;
  ck_assert_int_eq(steer_map_add(m, 8, &o), STEER_EINVAL);
  o.count = STEER_MAP_MAX_VERTICES + 1;
  ck_assert_int_eq(steer_map_add(m, 8, &o), STEER_EINVAL);
  steer_obstacle_desc wall = {STEER_OBSTACLE_WALL, 1, ok3, 0.0f}; /* a wall needs 2 */
  ck_assert_int_eq(steer_map_add(m, 8, &wall), STEER_EINVAL);
  vec2 c = {9.5f, 0};
  steer_obstacle_desc circ = {STEER_OBSTACLE_CIRCLE, 1, &c, 1.0f}; /* crosses the bound */
  ck_assert_int_eq(steer_map_add(m, 8, &circ), STEER_EINVAL);
  circ.radius = 0.0f;
  c.x = 0;
  ck_assert_int_eq(steer_map_add(m, 8, &circ), STEER_EINVAL);
  circ.radius = INFINITY;
  ck_assert_int_eq(steer_map_add(m, 8, &circ), STEER_EINVAL);
  o.kind = STEER_OBSTACLE_KIND_COUNT;
  o.count = 3;
  ck_assert_int_eq(steer_map_add(m, 8, &o), STEER_EINVAL);
  ck_assert_uint_eq(steer_map_count(m), 1);
  ck_assert_uint_eq(steer_map_version(m), 1);
  ck_assert_int_eq(steer_map_remove(m, 99), STEER_ENOENT);
  ck_assert_int_eq(steer_map_remove(m, 7), STEER_OK);
  ck_assert_uint_eq(steer_map_count(m), 0);
  ck_assert_uint_eq(steer_map_version(m), 2);
  steer_map_destroy(m);
}
END_TEST

START_TEST(test_queries) {
  steer_map *m = steer_map_create(v2(-50, -50), v2(50, 50), 4.0f);
  /* A concave U polygon (open to +y) and a long wall across many cells. */
  vec2 u[] = {{0, 0}, {10, 0}, {10, 10}, {8, 10}, {8, 2}, {2, 2}, {2, 10}, {0, 10}};
  steer_obstacle_desc o = {STEER_OBSTACLE_POLYGON, 8, u, 0.0f};
  ck_assert_int_eq(steer_map_add(m, 1, &o), STEER_OK);
  vec2 wall[] = {{-40, -30}, {40, -30}};
  steer_obstacle_desc wo = {STEER_OBSTACLE_WALL, 2, wall, 0.0f};
  ck_assert_int_eq(steer_map_add(m, 2, &wo), STEER_OK);
  ck_assert(steer_map_inside(m, v2(1, 5)));    /* in the left arm */
  ck_assert(!steer_map_inside(m, v2(5, 5)));   /* in the notch */
  ck_assert(!steer_map_inside(m, v2(0, -30))); /* walls have no inside */
  ck_assert(steer_map_free(m, v2(5, 6), 1.0f, 0.0f));
  ck_assert(!steer_map_free(m, v2(5, 6), 3.5f, 0.0f));
  ck_assert_float_eq_tol(steer_map_distance(m, v2(5, 6), 10.0f), 3.0f, 1e-5f);
  ck_assert_float_eq_tol(steer_map_distance(m, v2(33, -27.5f), 10.0f), 2.5f, 1e-5f);
  /* A disc cast straight down at the wall from 5 m stops at r + skin. */
  float t;
  vec2 n;
  ck_assert(steer_map_cast(m, v2(-20, -25), v2(0, -10), 1.0f, &t, &n));
  ck_assert_float_eq_tol(-25.0f - 10.0f * t, -30.0f + 1.0f + STEER_MAP_SKIN, 1e-4f);
  ck_assert_float_eq_tol(n.y, 1.0f, 1e-6f);
  ck_assert(!steer_map_cast(m, v2(-20, -25), v2(10, 0), 1.0f, &t, &n));
  /* Radius 0 cannot pass through a wall of thickness 0, even in one big step. */
  vec2 p1 = v2(5, -40);
  vec2 v = v2(0, -100);
  ck_assert_int_gt(steer_map_move(m, v2(5, -20), &p1, 0.0f, &v, v2(-50, -50), v2(50, 50)), 0);
  ck_assert(p1.y > -30.0f);
  ck_assert_float_eq(v.y, 0.0f);
  /* A slanted move into the wall slides along it. */
  p1 = v2(10, -35);
  v = v2(1, -1);
  steer_map_move(m, v2(0, -28), &p1, 1.0f, &v, v2(-50, -50), v2(50, 50));
  ck_assert_float_eq_tol(p1.y, -29.0f + STEER_MAP_SKIN, 1e-4f);
  ck_assert(p1.x > 5.0f);
  ck_assert_float_eq_tol(v.y, 0.0f, 1e-6f);
  /* Nearest free point from inside the polygon's arm. */
  vec2 f;
  ck_assert_int_eq(steer_map_nearest_free(m, v2(1, 5), 0.5f, 20.0f, v2(-50, -50), v2(50, 50), &f), STEER_OK);
  ck_assert(steer_map_free(m, f, 0.5f, 0.0f));
  ck_assert_float_lt(v2_len(v2_sub(f, v2(1, 5))), 2.0f);
  steer_map_destroy(m);
}
END_TEST

/* ---- the guarantee --------------------------------------------------------- */

typedef struct crowd {
  steer_world *w;
  steer_rng rng;
  float half;
} crowd;

static void retarget(crowd *c, steer_id id) {
  steer_agent_info info;
  if (steer_world_get(c->w, id, &info) != STEER_OK)
    return;
  steer_behaviour b = info.behaviour;
  if (b.kind != STEER_BEHAVIOUR_ARRIVE && b.kind != STEER_BEHAVIOUR_SEEK)
    return;
  for (int k = 0; k < 100; k++) {
    b.target.point = steer_rng_point(&c->rng, -c->half, c->half, -c->half, c->half);
    if (steer_world_set_behaviour(c->w, id, &b) == STEER_OK)
      return;
  }
}

static void spawn_crowd(crowd *c, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    steer_agent_desc d = steer_default_agent_desc();
    d.model = (uint8_t)(i % 5 == 3   ? STEER_MODEL_KINEMATIC
                        : i % 5 == 4 ? STEER_MODEL_HEADING
                                     : STEER_MODEL_DYNAMIC);
    d.limits.radius = (i % 7 == 0) ? 0.0f : steer_rng_range(&c->rng, 0.2f, 1.0f);
    d.limits.max_speed = (i % 11 == 0) ? 25.0f : steer_rng_range(&c->rng, 1.0f, 6.0f); /* some very fast */
    d.limits.max_acceleration = 20.0f;
    d.limits.max_rotation = 6.0f;
    d.state.position = free_point(c->w, &c->rng, c->half, d.limits.radius);
    d.state.orientation = steer_rng_range(&c->rng, -3.0f, 3.0f);
    d.behaviour = steer_default_behaviour(i % 9 == 0 ? STEER_BEHAVIOUR_WANDER : STEER_BEHAVIOUR_ARRIVE);
    if (d.model != STEER_MODEL_HEADING && i % 9 != 0)
      d.behaviour.kind = (i & 1) ? STEER_BEHAVIOUR_ARRIVE : STEER_BEHAVIOUR_SEEK;
    if (d.behaviour.kind != STEER_BEHAVIOUR_WANDER) {
      d.behaviour.target.kind = STEER_TARGET_POINT;
      d.behaviour.target.point = free_point(c->w, &c->rng, c->half, 0.0f);
    }
    if (d.model == STEER_MODEL_DYNAMIC && (i & 2)) {
      d.behaviour.avoid_weight = 1.0f;
      d.behaviour.params.separation_radius = 3.0f;
    }
    steer_id id;
    ck_assert_int_eq(steer_world_spawn(c->w, &d, 0, &id), STEER_OK);
  }
}

static void step_crowd(crowd *c, uint32_t ticks, int admin) {
  uint32_t next_id = 1000;
  for (uint32_t t = 0; t < ticks; t++) {
    if (admin && t % 25 == 0) {
      /* Drop a crate or a pillar on a random agent; remove an older one. */
      steer_world_view v = steer_world_get_view(c->w);
      uint32_t k = steer_rng_next(&c->rng) % v.count;
      vec2 at = v2(v.px[k], v.py[k]);
      int rc;
      if (t % 50 == 0) {
        vec2 box[] = {{at.x - 1.5f, at.y - 1.0f},
                      {at.x + 1.5f, at.y - 1.0f},
                      {at.x + 1.5f, at.y + 1.0f},
                      {at.x - 1.5f, at.y + 1.0f}};
        rc = add_poly(c->w, next_id, box, 4);
      } else {
        rc = add_circle(c->w, next_id, at, 1.2f);
      }
      ck_assert_msg(rc == STEER_OK || rc == STEER_EINVAL || rc == STEER_EBLOCKED, "add %d", rc);
      next_id++;
      if (next_id > 1004)
        steer_world_remove_obstacle(c->w, next_id - 5);
      int outside;
      float o = worst_overlap(c->w, &outside);
      ck_assert_msg(o <= SLACK && !outside, "after an add at tick %u: overlap %g m", t, (double)o);
    }
    steer_world_step(c->w, DT);
    uint32_t n;
    const steer_event *ev = steer_world_events(c->w, &n);
    for (uint32_t i = 0; i < n; i++)
      if (ev[i].type == STEER_EVENT_ARRIVED)
        retarget(c, ev[i].agent);
    if (t % 40 == 39) {
      steer_world_view v = steer_world_get_view(c->w);
      for (uint32_t i = 0; i < v.count; i += 13)
        retarget(c, v.id[i]); /* seekers never arrive: new goals now and then */
    }
    int outside;
    float o = worst_overlap(c->w, &outside);
    ck_assert_msg(o <= SLACK, "tick %u: a body overlaps geometry by %g m", t, (double)o);
    ck_assert_msg(!outside, "tick %u: a centre left the bounds", t);
  }
}

START_TEST(test_no_penetration_level) {
  crowd c;
  c.half = 60.0f;
  c.w = make_world(2000, c.half, 5);
  steer_rng_seed(&c.rng, 99);
  build_level(c.w);
  spawn_crowd(&c, 2000);
  step_crowd(&c, 1500, 0);
  steer_world_destroy(c.w);
}
END_TEST

START_TEST(test_no_penetration_admin) {
  crowd c;
  c.half = 60.0f;
  c.w = make_world(2000, c.half, 6);
  steer_rng_seed(&c.rng, 123);
  build_level(c.w);
  spawn_crowd(&c, 2000);
  step_crowd(&c, 1000, 1);
  steer_world_destroy(c.w);
}
END_TEST

/* ---- rules ------------------------------------------------------------------ */

START_TEST(test_placement_rules) {
  steer_world *w = make_world(16, 60.0f, 1);
  build_level(w);
  steer_agent_desc d = steer_default_agent_desc();
  d.limits.radius = 0.5f;
  d.state.position = v2(16, 20); /* inside the L block */
  ck_assert_int_eq(steer_world_spawn(w, &d, 0, NULL), STEER_EBLOCKED);
  d.state.position = v2(-10.2f, 10); /* body across room A's wall */
  ck_assert_int_eq(steer_world_spawn(w, &d, 0, NULL), STEER_EBLOCKED);
  d.state.position = v2(-20, 0);
  steer_id id;
  ck_assert_int_eq(steer_world_spawn(w, &d, 0, &id), STEER_OK);
  steer_behaviour b = steer_default_behaviour(STEER_BEHAVIOUR_ARRIVE);
  b.target.kind = STEER_TARGET_POINT;
  b.target.point = v2(-25, 30); /* inside a pillar */
  ck_assert_int_eq(steer_world_set_behaviour(w, id, &b), STEER_EBLOCKED);
  vec2 path[] = {{0, 0}, {16, 20}};
  ck_assert_int_eq(steer_world_set_path(w, id, path, 2, 1.0f, STEER_PATH_ONCE, STEER_CORNER_NONE),
                   STEER_EBLOCKED);
  ck_assert_int_eq(steer_world_path_create(w, path, 2, 1.0f, STEER_PATH_ONCE, STEER_CORNER_NONE),
                   STEER_EBLOCKED);
  steer_limits l = steer_default_limits();
  l.radius = 30.0f; /* would reach through the walls */
  ck_assert_int_eq(steer_world_set_limits(w, id, &l), STEER_EBLOCKED);
  /* An obstacle that leaves no free point within reach is refused, nothing moves. */
  vec2 huge[] = {{-60, -60}, {60, -60}, {60, 60}, {-60, 60}};
  uint32_t moved = 7;
  steer_obstacle_desc o = {STEER_OBSTACLE_WALL, 4, huge, 0.0f};
  ck_assert_int_eq(steer_world_add_obstacle(w, 500, &o, &moved), STEER_OK); /* a wall loop: nobody on it */
  ck_assert_uint_eq(moved, 0);
  ck_assert_int_eq(steer_world_remove_obstacle(w, 500), STEER_OK);
  uint64_t before = steer_world_hash(w);
  uint32_t version = steer_map_version(steer_world_map(w));
  o.kind = STEER_OBSTACLE_POLYGON;
  ck_assert_int_eq(steer_world_add_obstacle(w, 501, &o, &moved), STEER_EBLOCKED);
  ck_assert_int_eq(steer_map_find(steer_world_map(w), 501), -1);
  ck_assert_uint_eq(steer_world_hash(w), before);
  ck_assert_uint_eq(steer_map_version(steer_world_map(w)), version); /* a refused add is no change */
  steer_world_destroy(w);
}
END_TEST

START_TEST(test_obstacle_on_agent_moves_it) {
  steer_world *w = make_world(16, 60.0f, 1);
  steer_agent_desc d = steer_default_agent_desc();
  d.limits.radius = 0.5f;
  d.state.position = v2(3, 3);
  d.state.velocity = v2(1, 0);
  steer_id id;
  ck_assert_int_eq(steer_world_spawn(w, &d, 0, &id), STEER_OK);
  uint32_t moved = 0;
  vec2 c = v2(3.2f, 3);
  steer_obstacle_desc o = {STEER_OBSTACLE_CIRCLE, 1, &c, 2.0f};
  ck_assert_int_eq(steer_world_add_obstacle(w, 9, &o, &moved), STEER_OK);
  ck_assert_uint_eq(moved, 1);
  steer_agent_info info;
  steer_world_get(w, id, &info);
  ck_assert(steer_map_free(steer_world_map(w), info.state.position, 0.5f, 0.0f));
  ck_assert_float_lt(v2_len(v2_sub(info.state.position, c)), 2.6f);
  ck_assert_float_eq(info.state.velocity.x, 0.0f);
  steer_world_destroy(w);
}
END_TEST

/* Many obstacles at once: a held map (one index build) is the map built one
 * obstacle at a time, queries included; a load into a world is all or nothing. */
START_TEST(test_bulk_load_same_map) {
  steer_world *one = make_world(16, 60.0f, 1);
  build_level(one);
  const steer_map *src = steer_world_map(one);
  steer_world *bulk = make_world(16, 60.0f, 1);
  steer_agent_desc d = steer_default_agent_desc();
  d.limits.radius = 0.5f;
  d.state.position = v2(-30.0f, 30.0f); /* on a pillar of the level */
  steer_id id;
  ck_assert_int_eq(steer_world_spawn(bulk, &d, 0, &id), STEER_OK);
  uint32_t moved = 0, failed = 99;
  ck_assert_int_eq(steer_world_add_obstacles(bulk, src, &moved, &failed), STEER_OK);
  ck_assert_uint_eq(moved, 1);
  ck_assert_uint_eq(failed, steer_map_count(src));
  const steer_map *m = steer_world_map(bulk);
  ck_assert_uint_eq(steer_map_count(m), steer_map_count(src));
  ck_assert_uint_eq(steer_map_segment_count(m), steer_map_segment_count(src));
  ck_assert_uint_eq(steer_map_hash(m, 7), steer_map_hash(src, 7));
  steer_rng rng;
  steer_rng_seed(&rng, 5);
  for (int i = 0; i < 2000; i++) {
    vec2 p = steer_rng_point(&rng, -60, 60, -60, 60);
    ck_assert_int_eq(steer_map_inside(m, p), steer_map_inside(src, p));
    ck_assert_int_eq(steer_map_free(m, p, 0.7f, 0.0f), steer_map_free(src, p, 0.7f, 0.0f));
  }
  steer_agent_info info;
  steer_world_get(bulk, id, &info);
  ck_assert(steer_map_free(m, info.state.position, 0.5f, 0.0f));

  /* A duplicate id is refused by index and nothing changes. */
  uint64_t before = steer_map_hash(m, 7);
  ck_assert_int_eq(steer_world_add_obstacles(bulk, src, &moved, &failed), STEER_EINVAL);
  ck_assert_uint_eq(failed, 0);
  ck_assert_uint_eq(steer_map_hash(m, 7), before);

  /* An agent walled in with nowhere to go within reach: refused, nothing changes. */
  steer_world *box = make_world(16, 60.0f, 1);
  steer_map *ring = steer_map_create(v2(-60, -60), v2(60, 60), 4.0f);
  vec2 big[] = {{-59.9f, -59.9f}, {59.9f, -59.9f}, {59.9f, 59.9f}, {-59.9f, 59.9f}};
  steer_obstacle_desc o = {STEER_OBSTACLE_POLYGON, 4, big, 0.0f};
  vec2 c = v2(50, 50);
  steer_obstacle_desc pillar = {STEER_OBSTACLE_CIRCLE, 1, &c, 1.0f};
  ck_assert_int_eq(steer_map_add(ring, 3, &pillar), STEER_OK);
  ck_assert_int_eq(steer_map_add(ring, 4, &o), STEER_OK);
  d.state.position = v2(0, 0);
  ck_assert_int_eq(steer_world_spawn(box, &d, 0, &id), STEER_OK);
  ck_assert_int_eq(steer_world_add_obstacles(box, ring, &moved, &failed), STEER_EBLOCKED);
  ck_assert_uint_eq(failed, 2);
  ck_assert_uint_eq(moved, 0);
  ck_assert_uint_eq(steer_map_count(steer_world_map(box)), 0);
  ck_assert_uint_eq(steer_map_version(steer_world_map(box)), 0);
  ck_assert_uint_eq(steer_map_segment_count(steer_world_map(box)), 0);
  steer_world_get(box, id, &info);
  ck_assert_float_eq(info.state.position.x, 0.0f);
  steer_map_destroy(ring);
  steer_world_destroy(box);
  steer_world_destroy(bulk);
  steer_world_destroy(one);
}
END_TEST

/* ---- the map's caps ----------------------------------------------------------- */

/* A 512 x 512 m world with 1 m cells: 262 144 cells, under
 * STEER_MAP_MAX_CELLS, so the index keeps the cell size it is given. */
static steer_map *big_map(void) {
  steer_map *m = steer_map_create(v2(-256, -256), v2(256, 256), 1.0f);
  ck_assert_ptr_nonnull(m);
  return m;
}

/* The map holds exactly STEER_MAP_MAX_OBSTACLES; one more is EFULL, held or
 * not, and a removal (in the middle: the ids after it move down) makes room. */
START_TEST(test_obstacle_cap) {
  ck_assert_uint_ge(STEER_MAP_MAX_OBSTACLES, 65536u);
  steer_map *m = big_map();
  steer_map_hold(m);
  vec2 c;
  steer_obstacle_desc o = {STEER_OBSTACLE_CIRCLE, 1, &c, 0.25f};
  uint32_t side = 256u, n = 0;
  for (uint32_t j = 0; j < side && n < STEER_MAP_MAX_OBSTACLES; j++)
    for (uint32_t i = 0; i < side && n < STEER_MAP_MAX_OBSTACLES; i++) {
      c = v2(-255.0f + 2.0f * (float)i, -255.0f + 2.0f * (float)j);
      ck_assert_int_eq(steer_map_add(m, ++n, &o), STEER_OK);
    }
  ck_assert_uint_eq(n, STEER_MAP_MAX_OBSTACLES);
  c = v2(0.5f, 0.5f);
  ck_assert_int_eq(steer_map_check(m, n + 1, &o), STEER_EFULL);
  ck_assert_int_eq(steer_map_add(m, n + 1, &o), STEER_EFULL);
  ck_assert_int_eq(steer_map_release(m), STEER_OK);
  ck_assert_uint_eq(steer_map_count(m), STEER_MAP_MAX_OBSTACLES);
  ck_assert_int_eq(steer_map_add(m, n + 1, &o), STEER_EFULL);
  ck_assert_uint_eq(steer_map_count(m), STEER_MAP_MAX_OBSTACLES);
  /* Ids are found wherever they are, and unused ones are not. */
  for (uint32_t id = 1; id <= n; id += 997u)
    ck_assert_int_eq(steer_map_find(m, id), (int32_t)id - 1);
  ck_assert_int_eq(steer_map_find(m, n + 1), -1);
  ck_assert_int_eq(steer_map_find(m, 0x80000001u), -1);
  /* The index over 1 m cells: inside a circle, and free between them. */
  ck_assert(steer_map_inside(m, v2(-255.0f, -255.0f)));
  ck_assert(steer_map_inside(m, v2(255.1f, 255.0f)));
  ck_assert(!steer_map_inside(m, v2(-254.0f, -254.0f)));
  ck_assert(steer_map_free(m, v2(0.0f, 0.0f), 0.7f, 0.0f));
  ck_assert(!steer_map_free(m, v2(1.0f, 0.6f), 0.7f, 0.0f));
  /* A removal in the middle moves the later obstacles down by one. */
  ck_assert_int_eq(steer_map_remove(m, 30000), STEER_OK);
  ck_assert_int_eq(steer_map_find(m, 30000), -1);
  ck_assert_int_eq(steer_map_find(m, 29999), 29998);
  ck_assert_int_eq(steer_map_find(m, 30001), 29999);
  ck_assert_int_eq(steer_map_find(m, n), (int32_t)n - 2);
  ck_assert_int_eq(steer_map_add(m, n + 1, &o), STEER_OK);
  ck_assert_int_eq(steer_map_find(m, n + 1), (int32_t)n - 1);
  ck_assert_int_eq(steer_map_add(m, n + 2, &o), STEER_EFULL);
  /* The last one goes and comes back; clear forgets every id. */
  ck_assert_int_eq(steer_map_remove(m, n + 1), STEER_OK);
  ck_assert_int_eq(steer_map_find(m, n + 1), -1);
  ck_assert_int_eq(steer_map_find(m, n), (int32_t)n - 2);
  steer_map_clear(m);
  ck_assert_int_eq(steer_map_find(m, 1), -1);
  ck_assert_int_eq(steer_map_add(m, 1, &o), STEER_OK);
  ck_assert_int_eq(steer_map_find(m, 1), 0);
  steer_map_destroy(m);
}
END_TEST

/* The map holds exactly STEER_MAP_MAX_SEGMENTS: walls of 255 segments and one
 * to make up the rest; another segment is EFULL, while a circle (no segment)
 * still fits. */
START_TEST(test_segment_cap) {
  ck_assert_uint_ge(STEER_MAP_MAX_SEGMENTS, 1048576u);
  steer_map *m = big_map();
  static vec2 pts[STEER_MAP_MAX_VERTICES];
  steer_obstacle_desc o = {STEER_OBSTACLE_WALL, STEER_MAP_MAX_VERTICES, pts, 0.0f};
  const uint32_t per = STEER_MAP_MAX_VERTICES - 1u;
  const uint32_t walls = STEER_MAP_MAX_SEGMENTS / per, rest = STEER_MAP_MAX_SEGMENTS % per;
  const float gap = 510.0f / (float)(walls + 1u);
  steer_map_hold(m);
  uint32_t id = 0;
  for (uint32_t j = 0; j <= walls; j++) {
    o.count = j < walls ? STEER_MAP_MAX_VERTICES : rest + 1u;
    if (o.count < 2)
      break;
    for (uint32_t k = 0; k < o.count; k++)
      pts[k] = v2(-255.0f + 2.0f * (float)k, -255.0f + gap * (float)j);
    ck_assert_int_eq(steer_map_add(m, ++id, &o), STEER_OK);
  }
  o.count = 2;
  pts[0] = v2(0.0f, 255.5f);
  pts[1] = v2(1.0f, 255.5f);
  ck_assert_int_eq(steer_map_check(m, id + 1, &o), STEER_EFULL);
  ck_assert_int_eq(steer_map_add(m, id + 1, &o), STEER_EFULL);
  ck_assert_int_eq(steer_map_release(m), STEER_OK);
  ck_assert_uint_eq(steer_map_segment_count(m), STEER_MAP_MAX_SEGMENTS);
  ck_assert_int_eq(steer_map_add(m, id + 1, &o), STEER_EFULL);
  vec2 c = v2(0.0f, 255.5f);
  steer_obstacle_desc circle = {STEER_OBSTACLE_CIRCLE, 1, &c, 0.25f};
  ck_assert_int_eq(steer_map_add(m, id + 1, &circle), STEER_OK);
  ck_assert_uint_eq(steer_map_segment_count(m), STEER_MAP_MAX_SEGMENTS);
  /* The index finds the walls: a move across one stops short of it. */
  vec2 to = v2(0.5f, -255.0f + gap * 0.5f);
  ck_assert_int_gt(
      steer_map_move(m, v2(0.5f, -255.0f - gap * 0.5f), &to, 0.01f, NULL, v2(-256, -256), v2(256, 256)), 0);
  ck_assert_float_lt(to.y, -255.0f);
  ck_assert_int_eq(steer_map_remove(m, 1), STEER_OK);
  ck_assert_uint_eq(steer_map_segment_count(m), STEER_MAP_MAX_SEGMENTS - per);
  steer_map_destroy(m);
}
END_TEST

/* Ids are found through a hash table: after any mix of adds, removals (the
 * last obstacle, or one in the middle) and clears, steer_map_find agrees with
 * a walk over the map. */
START_TEST(test_find_after_changes) {
  steer_map *m = steer_map_create(v2(-50, -50), v2(50, 50), 4.0f);
  ck_assert_ptr_nonnull(m);
  steer_map_hold(m);
  steer_rng rng;
  steer_rng_seed(&rng, 11);
  vec2 c = v2(0.0f, 0.0f);
  steer_obstacle_desc o = {STEER_OBSTACLE_CIRCLE, 1, &c, 0.5f};
  for (int step = 0; step < 3000; step++) {
    uint32_t n = steer_map_count(m), r = steer_rng_next(&rng);
    if (step % 1000 == 999) {
      steer_map_clear(m);
    } else if (n > 0 && r % 3u == 0u) {
      uint32_t id;
      steer_obstacle_desc d;
      uint32_t at = r % 8u ? n - 1u : (r >> 8) % n; /* mostly the last, else any */
      ck_assert_int_eq(steer_map_get(m, at, &id, &d), STEER_OK);
      ck_assert_int_eq(steer_map_remove(m, id), STEER_OK);
    } else {
      uint32_t id = 1u + (r >> 4) % 700u; /* ids collide: a used one is refused */
      int used = steer_map_find(m, id) >= 0;
      ck_assert_int_eq(steer_map_add(m, id, &o), used ? STEER_EINVAL : STEER_OK);
    }
    if (step % 25 != 0)
      continue;
    n = steer_map_count(m);
    int32_t where[701];
    for (uint32_t id = 0; id <= 700; id++)
      where[id] = -1;
    for (uint32_t i = 0; i < n; i++) {
      uint32_t id;
      steer_obstacle_desc d;
      ck_assert_int_eq(steer_map_get(m, i, &id, &d), STEER_OK);
      where[id] = (int32_t)i;
    }
    for (uint32_t id = 1; id <= 700; id++)
      ck_assert_int_eq(steer_map_find(m, id), where[id]);
  }
  ck_assert_int_eq(steer_map_release(m), STEER_OK);
  steer_map_destroy(m);
}
END_TEST

/* A dense cluster (600 short walls in one 8 m cell, more than one query
 * took before the caps grew) is answered, not given up on: the free point
 * beside it is free and outside, and a body there moves. */
START_TEST(test_dense_cell) {
  steer_map *m = steer_map_create(v2(-50, -50), v2(50, 50), 8.0f);
  ck_assert_ptr_nonnull(m);
  steer_map_hold(m);
  uint32_t id = 0;
  for (uint32_t j = 0; j < 20; j++)
    for (uint32_t i = 0; i < 30; i++) {
      vec2 w[2] = {{0.13f * (float)i, 0.2f * (float)j}, {0.13f * (float)i + 0.1f, 0.2f * (float)j}};
      steer_obstacle_desc o = {STEER_OBSTACLE_WALL, 2, w, 0.0f};
      ck_assert_int_eq(steer_map_add(m, ++id, &o), STEER_OK);
    }
  ck_assert_int_eq(steer_map_release(m), STEER_OK);
  vec2 p = v2(5.5f, 5.5f); /* in the walls' cell (-2..6 m), 1.5 m off the nearest */
  ck_assert(!steer_map_inside(m, p));
  ck_assert(steer_map_free(m, p, 0.5f, 0.0f));
  ck_assert_float_eq_tol(steer_map_distance(m, p, 3.0f), v2_len(v2_sub(p, v2(3.87f, 3.8f))), 1e-4f);
  vec2 to = v2(5.5f, 5.9f);
  ck_assert_int_eq(steer_map_move(m, p, &to, 0.5f, NULL, v2(-50, -50), v2(50, 50)), 0);
  ck_assert_float_eq(to.y, 5.9f);
  steer_map_destroy(m);
}
END_TEST

/* ---- checkpoint ------------------------------------------------------------ */

START_TEST(test_map_in_checkpoint) {
  crowd c;
  c.half = 60.0f;
  c.w = make_world(600, c.half, 8);
  steer_rng_seed(&c.rng, 4);
  build_level(c.w);
  spawn_crowd(&c, 600);
  for (int i = 0; i < 100; i++)
    steer_world_step(c.w, DT);
  size_t len = steer_world_state_size(c.w);
  uint8_t *buf = malloc(len);
  ck_assert_int_eq(steer_world_save(c.w, buf, len, NULL), STEER_OK);
  int err = 0;
  steer_world *r = steer_world_load(buf, len, &err);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(steer_world_hash(r), steer_world_hash(c.w));
  ck_assert_uint_eq(steer_map_count(steer_world_map(r)), steer_map_count(steer_world_map(c.w)));
  ck_assert_uint_eq(steer_map_version(steer_world_map(r)), steer_map_version(steer_world_map(c.w)));
  for (int i = 0; i < 200; i++) {
    steer_world_step(c.w, DT);
    steer_world_step(r, DT);
  }
  ck_assert_uint_eq(steer_world_hash(r), steer_world_hash(c.w));
  /* The hash sees the map: removing an obstacle changes it. */
  ck_assert_int_eq(steer_world_remove_obstacle(r, 4), STEER_OK);
  ck_assert_uint_ne(steer_world_hash(r), steer_world_hash(c.w));
  /* A damaged obstacle in the file is refused. */
  size_t at = len - 8 - 8; /* the last point's y of the last obstacle */
  uint8_t save = buf[at + 3];
  buf[at + 3] = 0x7f; /* y becomes NaN-ish or huge */
  buf[at + 2] = 0xff;
  ck_assert_ptr_null(steer_world_load(buf, len, &err));
  buf[at + 3] = save;
  free(buf);
  steer_world_destroy(r);
  steer_world_destroy(c.w);
}
END_TEST

/* A map of more than 16 384 obstacles (the old cap) is saved and restored
 * whole: same map hash, same world hash. */
START_TEST(test_large_map_in_checkpoint) {
  steer_world *w = make_world(16, 256.0f, 3);
  const uint32_t n = 20000;
  steer_map *src = steer_map_create(v2(-256, -256), v2(256, 256), 4.0f);
  ck_assert_ptr_nonnull(src);
  steer_map_hold(src);
  for (uint32_t i = 0; i < n; i++) {
    float x = -255.0f + 2.0f * (float)(i % 250u), y = -255.0f + 2.0f * (float)(i / 250u);
    vec2 sq[4] = {{x, y}, {x + 0.5f, y}, {x + 0.5f, y + 0.5f}, {x, y + 0.5f}};
    vec2 c = v2(x + 0.25f, y + 1.25f);
    steer_obstacle_desc o = {STEER_OBSTACLE_POLYGON, 4, sq, 0.0f};
    steer_obstacle_desc circ = {STEER_OBSTACLE_CIRCLE, 1, &c, 0.125f};
    ck_assert_int_eq(steer_map_add(src, 3u * i + 1u, i % 3u ? &o : &circ), STEER_OK);
  }
  ck_assert_int_eq(steer_map_release(src), STEER_OK);
  uint32_t failed = 0;
  ck_assert_int_eq(steer_world_add_obstacles(w, src, NULL, &failed), STEER_OK);
  const steer_map *m = steer_world_map(w);
  ck_assert_uint_eq(steer_map_count(m), n);
  ck_assert_uint_eq(steer_map_hash(m, 0), steer_map_hash(src, 0));
  steer_agent_desc d = steer_default_agent_desc();
  d.state.position = v2(0.0f, 100.0f); /* north of the obstacles, which end at y = -96 */
  steer_id id;
  ck_assert_int_eq(steer_world_spawn(w, &d, 0, &id), STEER_OK);
  steer_world_step(w, DT);
  size_t len = steer_world_state_size(w);
  uint8_t *buf = malloc(len);
  ck_assert_ptr_nonnull(buf);
  ck_assert_int_eq(steer_world_save(w, buf, len, NULL), STEER_OK);
  int err = 0;
  steer_world *r = steer_world_load(buf, len, &err);
  ck_assert_msg(r != NULL, "load: %d", err);
  const steer_map *rm = steer_world_map(r);
  ck_assert_uint_eq(steer_map_count(rm), n);
  ck_assert_uint_eq(steer_map_segment_count(rm), steer_map_segment_count(m));
  ck_assert_uint_eq(steer_map_version(rm), steer_map_version(m));
  ck_assert_uint_eq(steer_map_hash(rm, 0), steer_map_hash(m, 0));
  ck_assert_uint_eq(steer_world_hash(r), steer_world_hash(w));
  ck_assert_int_eq(steer_map_find(rm, 3u * (n - 1u) + 1u), (int32_t)n - 1);
  free(buf);
  steer_world_destroy(r);
  steer_world_destroy(w);
  steer_map_destroy(src);
}
END_TEST

static Suite *map_suite(void) {
  Suite *s = suite_create("map");
  TCase *t = check_tcase(s, "geometry", 120);
  tcase_add_test(t, test_validation);
  tcase_add_test(t, test_queries);
  tcase_add_test(t, test_placement_rules);
  tcase_add_test(t, test_obstacle_on_agent_moves_it);
  tcase_add_test(t, test_bulk_load_same_map);
  TCase *caps = check_tcase(s, "caps", 120);
  tcase_add_test(caps, test_obstacle_cap);
  tcase_add_test(caps, test_segment_cap);
  tcase_add_test(caps, test_dense_cell);
  tcase_add_test(caps, test_find_after_changes);
  tcase_add_test(caps, test_large_map_in_checkpoint);
  TCase *g = check_tcase(s, "guarantee", 600);
  tcase_add_test(g, test_no_penetration_level);
  tcase_add_test(g, test_no_penetration_admin);
  tcase_add_test(g, test_map_in_checkpoint);
  return s;
}

int main(void) { return check_run(map_suite()); }

/* crowd_scenes.c: see crowd_scenes.h. */
#include "crowd_scenes.h"

#include <math.h>

#include "map.h"
#include "rng.h"

steer_world *crowd_world(uint32_t max_agents, float half, uint64_t seed) {
  steer_world_config c = steer_default_world_config();
  c.max_agents = max_agents;
  c.max_events = 3 * max_agents;
  c.min = v2(-half, -half);
  c.max = v2(half, half);
  c.cell_size = 4.0f;
  c.seed = seed;
  return steer_world_create(&c);
}

steer_agent_desc crowd_walker(vec2 at, vec2 goal) {
  steer_agent_desc d = steer_default_agent_desc();
  d.model = STEER_MODEL_DYNAMIC;
  d.limits.radius = CROWD_RADIUS;
  d.limits.max_speed = 1.5f;
  d.limits.max_acceleration = 4.0f;
  d.state.position = at;
  d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_ARRIVE);
  d.behaviour.target.kind = STEER_TARGET_POINT;
  d.behaviour.target.point = goal;
  d.behaviour.params.target_radius = 0.5f;
  d.behaviour.params.slow_radius = 2.0f;
  d.behaviour.max_neighbours = 10;
  d.behaviour.params.separation_radius = 5.0f;
  d.behaviour.avoid_weight = 1.0f;
  return d;
}

int crowd_rooms(steer_world *w) {
  vec2 left[] = {{-1.5f, 1.5f}, {-1.5f, 20}, {1.5f, 20}, {1.5f, 1.5f}};
  vec2 right[] = {{-1.5f, -20}, {-1.5f, -1.5f}, {1.5f, -1.5f}, {1.5f, -20}};
  vec2 outer[] = {{-20, -20}, {20, -20}, {20, 20}, {-20, 20}, {-20, -20}};
  steer_obstacle_desc a = {STEER_OBSTACLE_POLYGON, 4, left, 0.0f},
                      b = {STEER_OBSTACLE_POLYGON, 4, right, 0.0f}, o = {STEER_OBSTACLE_WALL, 5, outer, 0.0f};
  int rc = steer_world_add_obstacle(w, 1, &a, NULL);
  if (rc == STEER_OK)
    rc = steer_world_add_obstacle(w, 2, &b, NULL);
  if (rc == STEER_OK)
    rc = steer_world_add_obstacle(w, 3, &o, NULL);
  return rc;
}

steer_world *crowd_circle(uint8_t period) {
  steer_world *w = crowd_world(CROWD_CIRCLE_N, 80.0f, 3);
  for (uint32_t i = 0; w && i < CROWD_CIRCLE_N; i++) {
    float a = STEER_TWO_PI * (float)i / (float)CROWD_CIRCLE_N;
    vec2 p = v2(50.0f * cosf(a), 50.0f * sinf(a));
    steer_agent_desc d = crowd_walker(p, v2_scale(p, -1.0f));
    d.behaviour.neighbour_period = period;
    d.behaviour.stuck_time = 5.0f;
    d.behaviour.stuck_reaction = STEER_STUCK_REPORT;
    if (steer_world_spawn(w, &d, 0, NULL) != STEER_OK) {
      steer_world_destroy(w);
      w = NULL;
    }
  }
  return w;
}

steer_world *crowd_doorway(uint8_t period, float horizon, uint32_t variant) {
  steer_world *w = crowd_world(CROWD_DOORWAY_N, 30.0f, 4);
  if (w && crowd_rooms(w) != STEER_OK) {
    steer_world_destroy(w);
    return NULL;
  }
  steer_rng rng;
  steer_rng_seed(&rng, 1000u + variant);
  for (uint32_t i = 0; w && i < CROWD_DOORWAY_N; i++) {
    int left = i < CROWD_DOORWAY_N / 2;
    uint32_t k = i % (CROWD_DOORWAY_N / 2);
    vec2 at = v2((left ? -14.0f : 4.0f) + 2.0f * (float)(k % 5), -9.0f + 2.0f * (float)(k / 5));
    if (variant > 0)
      at = v2_add(at, steer_rng_point(&rng, -0.5f, 0.5f, -0.5f, 0.5f));
    vec2 goal = v2(at.x + (left ? 18.0f : -18.0f), at.y);
    steer_agent_desc d = crowd_walker(at, goal);
    d.behaviour.neighbour_period = period;
    d.behaviour.avoid_horizon = horizon;
    d.behaviour.stuck_time = 20.0f;
    d.behaviour.stuck_reaction = STEER_STUCK_REPORT;
    /* Through the door: a two-point path, the door then the goal. */
    vec2 pts[3] = {{left ? -3.0f : 3.0f, 0}, {left ? 3.0f : -3.0f, 0}, goal};
    steer_id id;
    if (steer_world_spawn(w, &d, 0, &id) != STEER_OK ||
        steer_world_set_path(w, id, pts, 3, 1.2f, STEER_PATH_ONCE, STEER_CORNER_NONE) != STEER_OK) {
      steer_world_destroy(w);
      w = NULL;
    }
  }
  return w;
}

steer_world *crowd_rally(uint8_t arrival, int by_path) {
  steer_world *w = crowd_world(CROWD_RALLY_N, 40.0f, 5);
  for (uint32_t i = 0; w && i < CROWD_RALLY_N; i++) {
    float a = STEER_TWO_PI * (float)i / (float)CROWD_RALLY_N;
    vec2 goal = v2(0.0f, 0.0f);
    steer_agent_desc d = crowd_walker(v2(20.0f * cosf(a), 20.0f * sinf(a)), goal);
    d.behaviour.arrival = arrival;
    steer_id id;
    if (steer_world_spawn(w, &d, 0, &id) != STEER_OK ||
        (by_path &&
         steer_world_set_path(w, id, &goal, 1, 0.5f, STEER_PATH_ONCE, STEER_CORNER_NONE) != STEER_OK)) {
      steer_world_destroy(w);
      w = NULL;
    }
  }
  return w;
}

float crowd_min_gap(const steer_world *w) {
  steer_world_view v = steer_world_get_view(w);
  float best = INFINITY;
  for (uint32_t i = 0; i < v.count; i++)
    for (uint32_t j = i + 1; j < v.count; j++)
      best = fminf(best, hypotf(v.px[i] - v.px[j], v.py[i] - v.py[j]) - 2.0f * CROWD_RADIUS);
  return best;
}

float crowd_deepest(const steer_world *w) {
  const steer_map *m = steer_world_map(w);
  steer_world_view v = steer_world_get_view(w);
  float worst = -INFINITY;
  for (uint32_t i = 0; i < v.count; i++) {
    steer_agent_info info;
    steer_world_get(w, v.id[i], &info);
    float r = info.limits.radius;
    vec2 p = v2(v.px[i], v.py[i]);
    worst = fmaxf(worst, steer_map_inside(m, p) ? r + 1.0f : r - steer_map_distance(m, p, r + 1.0f));
  }
  return worst;
}

uint32_t crowd_count_events(const steer_world *w, uint8_t type) {
  uint32_t n, k = 0;
  const steer_event *ev = steer_world_events(w, &n);
  for (uint32_t i = 0; i < n; i++)
    k += ev[i].type == type;
  return k;
}

crowd_run crowd_run_until(steer_world *w, uint8_t done, uint32_t n, uint32_t max_ticks, int walls) {
  crowd_run r = {0, 0, 0, INFINITY, -INFINITY};
  while (r.ticks < max_ticks && r.done < n) {
    steer_world_step(w, CROWD_DT);
    r.ticks++;
    r.done += crowd_count_events(w, done);
    r.stuck += crowd_count_events(w, STEER_EVENT_STUCK);
    r.gap = fminf(r.gap, crowd_min_gap(w));
    if (walls)
      r.deepest = fmaxf(r.deepest, crowd_deepest(w));
  }
  return r;
}

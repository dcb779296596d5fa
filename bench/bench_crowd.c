/* bench_crowd.c: how well crowds move, not how fast (BENCHMARKS.md "World with
 * walls"): the standard scenarios with avoidance and walls, measured in ticks
 * of the simulation, so the figures are the same on any machine.
 *
 *   circle  100 agents on a 50 m circle, each to its antipode (the ORCA test):
 *           completion against the straight-line time, the smallest gap between
 *           two bodies (negative: overlap), STUCK reports (stuck_time 5 s).
 *   doorway two groups of 50 swap rooms through a 3 m door: completion, whether
 *           every agent got through (no deadlock within 6 000 ticks = 300 s),
 *           the smallest gap between bodies, the deepest any body went into a
 *           wall (<= 0: none touched one), STUCK reports (stuck_time 20 s).
 *   level   the demo world and its level (server/demo.c, maps/demo.json) for
 *           five simulated minutes at 30 Hz: doorway crossings each way in the
 *           slowest minute, STUCK reports, the deepest contact with geometry.
 *
 * Bodies 0.4 m, 1.5 m/s, dynamic, avoidance on (10 neighbours), dt 0.05 s in
 * the first two (as tests/test_avoid.c). Each row ends with the world's state
 * hash, so a change to the core can be checked to change nothing.
 *   sweep   the doorway from 8 jittered starts (each start moved by up to
 *           0.5 m): runs that finish, median and slowest completion, flow.
 *   bench_crowd [circle|doorway|sweep|level|all] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"
#include "rng.h"
#include "map.h"
#include "world.h"

#define DT 0.05f
#define R  0.4f

static steer_world *make_world(uint32_t max_agents, float half, uint64_t seed) {
  steer_world_config c = steer_default_world_config();
  c.max_agents = max_agents;
  c.max_events = 3 * max_agents;
  c.min = v2(-half, -half);
  c.max = v2(half, half);
  c.cell_size = 4.0f;
  c.seed = seed;
  return steer_world_create(&c);
}

static steer_agent_desc walker(vec2 at, vec2 goal, uint8_t period, float stuck_time) {
  steer_agent_desc d = steer_default_agent_desc();
  d.model = STEER_MODEL_DYNAMIC;
  d.limits.radius = R;
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
  d.behaviour.neighbour_period = period;
  d.behaviour.stuck_time = stuck_time;
  d.behaviour.stuck_reaction = STEER_STUCK_REPORT;
  return d;
}

/* Smallest gap between two bodies of radius R (negative: overlap). */
static float min_gap(const steer_world *w) {
  steer_world_view v = steer_world_get_view(w);
  float best = INFINITY;
  for (uint32_t i = 0; i < v.count; i++)
    for (uint32_t j = i + 1; j < v.count; j++)
      best = fminf(best, hypotf(v.px[i] - v.px[j], v.py[i] - v.py[j]) - 2.0f * R);
  return best;
}

/* Deepest any body is in the geometry (m; <= 0: clear of it). */
static float deepest(const steer_world *w) {
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

/* Smallest gap between two bodies of their own radii inside the level's box. */
static float level_gap(const steer_world *w) {
  steer_world_view v = steer_world_get_view(w);
  float best = INFINITY, r[STEERD_DEMO_MAX_AGENTS];
  uint32_t idx[STEERD_DEMO_MAX_AGENTS], n = 0;
  for (uint32_t i = 0; i < v.count && n < STEERD_DEMO_MAX_AGENTS; i++) {
    steer_agent_info info;
    if (!steerd_demo_in_level(v2(v.px[i], v.py[i])) || steer_world_get(w, v.id[i], &info) != STEER_OK)
      continue;
    r[n] = info.limits.radius;
    idx[n++] = i;
  }
  for (uint32_t a = 0; a < n; a++)
    for (uint32_t b = a + 1; b < n; b++)
      best = fminf(best, hypotf(v.px[idx[a]] - v.px[idx[b]], v.py[idx[a]] - v.py[idx[b]]) - r[a] - r[b]);
  return best;
}

static uint32_t count(const steer_world *w, uint8_t type) {
  uint32_t n, k = 0;
  const steer_event *ev = steer_world_events(w, &n);
  for (uint32_t i = 0; i < n; i++)
    k += ev[i].type == type;
  return k;
}

static void circle(uint8_t period) {
  const uint32_t n = 100, max_ticks = 6000;
  steer_world *w = make_world(n, 80.0f, 3);
  for (uint32_t i = 0; i < n; i++) {
    float a = STEER_TWO_PI * (float)i / (float)n;
    vec2 p = v2(50.0f * cosf(a), 50.0f * sinf(a));
    steer_agent_desc d = walker(p, v2_scale(p, -1.0f), period, 5.0f);
    steer_world_spawn(w, &d, 0, NULL);
  }
  uint32_t arrived = 0, stuck = 0, t;
  float gap = INFINITY;
  for (t = 1; t <= max_ticks && arrived < n; t++) {
    steer_world_step(w, DT);
    arrived += count(w, STEER_EVENT_ARRIVED);
    stuck += count(w, STEER_EVENT_STUCK);
    gap = fminf(gap, min_gap(w));
  }
  float straight = 100.0f / 1.5f / DT;
  printf("| circle swap, 100 on a 50 m circle | %u | %u of %u, %u ticks (%.1f s) | %.0f ticks | %.2fx | %.3f "
         "m | — "
         "| %u | `%016llx` |\n",
         period, arrived, n, t - 1, (double)(t - 1) * DT, (double)straight, (double)(t - 1) / straight,
         (double)gap, stuck, (unsigned long long)steer_world_hash(w));
  steer_world_destroy(w);
}

/* Two rooms, x < -1.5 and x > 1.5 (walls 3 m thick), joined by a 3 m door
 * (as test_avoid.c). */
static void build_rooms(steer_world *w) {
  vec2 left[] = {{-1.5f, 1.5f}, {-1.5f, 20}, {1.5f, 20}, {1.5f, 1.5f}};
  vec2 right[] = {{-1.5f, -20}, {-1.5f, -1.5f}, {1.5f, -1.5f}, {1.5f, -20}};
  steer_obstacle_desc a = {STEER_OBSTACLE_POLYGON, 4, left, 0.0f},
                      b = {STEER_OBSTACLE_POLYGON, 4, right, 0.0f};
  steer_world_add_obstacle(w, 1, &a, NULL);
  steer_world_add_obstacle(w, 2, &b, NULL);
  vec2 outer[] = {{-20, -20}, {20, -20}, {20, 20}, {-20, 20}, {-20, -20}};
  steer_obstacle_desc o = {STEER_OBSTACLE_WALL, 5, outer, 0.0f};
  steer_world_add_obstacle(w, 3, &o, NULL);
}

/* The doorway's 100 agents; variant > 0 jitters every start by up to 0.5 m
 * (its own generator), so a sweep shows how robust the flow is rather than
 * one chaotic run. */
static steer_world *doorway_world(uint8_t period, float horizon, uint32_t variant) {
  steer_world *w = make_world(100, 30.0f, 4);
  build_rooms(w);
  steer_rng rng;
  steer_rng_seed(&rng, 1000u + variant);
  for (uint32_t i = 0; i < 100; i++) {
    int left = i < 50;
    uint32_t k = i % 50;
    vec2 at = v2((left ? -14.0f : 4.0f) + 2.0f * (float)(k % 5), -9.0f + 2.0f * (float)(k / 5));
    if (variant > 0)
      at = v2_add(at, v2(steer_rng_range(&rng, -0.5f, 0.5f), steer_rng_range(&rng, -0.5f, 0.5f)));
    vec2 goal = v2(at.x + (left ? 18.0f : -18.0f), at.y);
    steer_agent_desc d = walker(at, goal, period, 20.0f);
    d.behaviour.avoid_horizon = horizon;
    steer_id id;
    steer_world_spawn(w, &d, 0, &id);
    vec2 pts[3] = {{left ? -3.0f : 3.0f, 0}, {left ? 3.0f : -3.0f, 0}, goal};
    steer_world_set_path(w, id, pts, 3, 1.2f, STEER_PATH_ONCE, STEER_CORNER_NONE);
  }
  return w;
}

static void doorway(uint8_t period, float horizon) {
  const uint32_t max_ticks = 6000;
  steer_world *w = doorway_world(period, horizon, 0);
  uint32_t finished = 0, stuck = 0, t;
  float gap = INFINITY, worst = -INFINITY;
  for (t = 1; t <= max_ticks && finished < 100; t++) {
    steer_world_step(w, DT);
    finished += count(w, STEER_EVENT_PATH_FINISHED);
    stuck += count(w, STEER_EVENT_STUCK);
    gap = fminf(gap, min_gap(w));
    worst = fmaxf(worst, deepest(w));
  }
  printf("| doorway, 50 + 50 through 3 m (horizon %.0f s) | %u | %u of 100, %u ticks (%.1f s)%s | — | — | "
         "%.3f m | "
         "%.3f m | %u | `%016llx` |\n",
         (double)horizon, period, finished, t - 1, (double)(t - 1) * DT,
         finished < 100 ? " **deadlock**" : "", (double)gap, (double)worst, stuck,
         (unsigned long long)steer_world_hash(w));
  steer_world_destroy(w);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* The doorway in `runs` jittered variants: how many finish within 300 s, the
 * median and the slowest completion, the flow at the median (agents per
 * second through the door, all 100 over the median time), the smallest gap. */
static void doorway_sweep(uint8_t period, float horizon, uint32_t runs) {
  const uint32_t max_ticks = 6000;
  uint32_t done[64], ok = 0;
  float gap = INFINITY;
  for (uint32_t r = 0; r < runs && r < 64; r++) {
    steer_world *w = doorway_world(period, horizon, r + 1);
    uint32_t finished = 0, t;
    for (t = 1; t <= max_ticks && finished < 100; t++) {
      steer_world_step(w, DT);
      finished += count(w, STEER_EVENT_PATH_FINISHED);
      gap = fminf(gap, min_gap(w));
    }
    ok += finished == 100;
    done[r] = finished == 100 ? t - 1 : UINT32_MAX;
    steer_world_destroy(w);
  }
  qsort(done, runs, sizeof(done[0]), cmp_u32);
  uint32_t med = done[runs / 2], slow = done[runs - 1];
  char ms[32], ss[32];
  snprintf(ms, sizeof(ms), med == UINT32_MAX ? "—" : "%.1f s", (double)med * DT);
  snprintf(ss, sizeof(ss), slow == UINT32_MAX ? "not all" : "%.1f s", (double)slow * DT);
  printf("| doorway, %u jittered starts (horizon %.0f s) | %u | %u of %u | %s | %s | %.2f agents/s | %.3f m |\n",
         runs, (double)horizon, period, ok, runs, ms, ss,
         med == UINT32_MAX ? 0.0 : 100.0 / ((double)med * DT), (double)gap);
}

static void level(void) {
  const uint32_t rate = 30, minutes = 5;
  steer_world_config cfg = steer_default_world_config();
  steer_world *w = steer_world_create(&cfg);
  steerd_demo d;
  if (!w || steerd_demo_create(&d, w, cfg.seed) != STEER_OK || !d.level) {
    fprintf(stderr, "bench_crowd: the demo level did not build\n");
    exit(1);
  }
  uint32_t slowest[2] = {UINT32_MAX, UINT32_MAX}, last[2] = {0, 0};
  float worst = -INFINITY, gap = INFINITY;
  for (uint32_t t = 1; t <= minutes * 60 * rate; t++) {
    steer_world_step(w, 1.0f / (float)rate);
    uint32_t n;
    const steer_event *ev = steer_world_events(w, &n);
    steerd_demo_update(&d, w, ev, n);
    worst = fmaxf(worst, deepest(w));
    gap = fminf(gap, level_gap(w));
    if (t % (60 * rate) == 0)
      for (int k = 0; k < 2; k++) {
        if (d.crossings[k] - last[k] < slowest[k])
          slowest[k] = d.crossings[k] - last[k];
        last[k] = d.crossings[k];
      }
  }
  printf(
      "\n| demo level, 2 x %u crossing (avoidance on), %u simulated minutes at %u Hz | crossings west to "
      "east "
      "| east to west | slowest minute (each way) | smallest gap between bodies | deepest contact with "
      "geometry | STUCK | side door changes | state hash |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n",
      STEERD_DEMO_CROWD, minutes, rate);
  printf("| %u agents, %u obstacles | %u | %u | %u, %u | %.3f m | %.3f m | %u | %u | `%016llx` |\n",
         steer_world_count(w), steer_map_count(steer_world_map(w)), d.crossings[0], d.crossings[1],
         slowest[0], slowest[1], (double)gap, (double)worst, d.stuck, d.door_changes,
         (unsigned long long)steer_world_hash(w));
  steer_world_destroy(w);
}

int main(int argc, char **argv) {
  const char *which = argc > 1 ? argv[1] : "all";
  if (strcmp(which, "-h") == 0 || strcmp(which, "--help") == 0) {
    printf("usage: bench_crowd [circle|doorway|sweep|level|all]\n");
    return 0;
  }
  int all = strcmp(which, "all") == 0;
  if (all || strcmp(which, "circle") == 0 || strcmp(which, "doorway") == 0) {
    printf("| scenario | neighbour period | arrived, completion | straight line | completion / straight | "
           "smallest gap between bodies | deepest into a wall | STUCK | state hash |\n"
           "|---|---:|---|---:|---:|---:|---:|---:|---|\n");
  }
  if (all || strcmp(which, "circle") == 0)
    for (int p = 0; p < 3; p++)
      circle((uint8_t)(p == 0 ? 1 : p == 1 ? 4 : 8));
  if (all || strcmp(which, "doorway") == 0) {
    doorway(1, 1.0f);
    doorway(4, 1.0f);
    doorway(1, 3.0f);
    doorway(4, 3.0f);
  }
  if (all || strcmp(which, "sweep") == 0) {
    printf("\n| scenario | neighbour period | runs with all 100 through in 300 s | median completion | slowest | "
           "flow at the median | smallest gap between bodies |\n|---|---:|---:|---:|---:|---:|---:|\n");
    doorway_sweep(1, 3.0f, 8);
    doorway_sweep(4, 3.0f, 8);
    doorway_sweep(1, 1.0f, 8);
  }
  if (all || strcmp(which, "level") == 0)
    level();
  return 0;
}

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
 * the first two: the scenes of tests/support/crowd_scenes.h, which
 * tests/test_avoid.c asserts on. Each row ends with the world's state hash,
 * so a change to the core can be checked to change nothing.
 *   sweep   the doorway from 8 jittered starts (each start moved by up to
 *           0.5 m): runs that finish, median and slowest completion, flow.
 *   trip    one agent with the default params on a clear line (3.2, 10, 20,
 *           50 m): arrival and rest against the straight-line time.
 *   bench_crowd [circle|doorway|sweep|level|trip|all] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crowd_scenes.h"
#include "demo.h"
#include "map.h"
#include "world.h"

#define DT CROWD_DT

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

/* The scene, or the benchmark stops: its figures would be of nothing. */
static steer_world *built(steer_world *w, const char *scene) {
  if (!w) {
    fprintf(stderr, "bench_crowd: the %s did not build\n", scene);
    exit(1);
  }
  return w;
}

static void circle(uint8_t period) {
  steer_world *w = built(crowd_circle(period), "circle swap");
  crowd_run r = crowd_run_until(w, STEER_EVENT_ARRIVED, CROWD_CIRCLE_N, 6000, 0);
  float straight = 100.0f / 1.5f / DT;
  printf("| circle swap, 100 on a 50 m circle | %u | %u of %u, %u ticks (%.1f s) | %.0f ticks | %.2fx | %.3f "
         "m | — "
         "| %u | `%016llx` |\n",
         period, r.done, CROWD_CIRCLE_N, r.ticks, (double)r.ticks * DT, (double)straight,
         (double)r.ticks / straight, (double)r.gap, r.stuck, (unsigned long long)steer_world_hash(w));
  steer_world_destroy(w);
}

static void doorway(uint8_t period, float horizon) {
  steer_world *w = built(crowd_doorway(period, horizon, 0), "doorway");
  crowd_run r = crowd_run_until(w, STEER_EVENT_PATH_FINISHED, CROWD_DOORWAY_N, 6000, 1);
  printf("| doorway, 50 + 50 through 3 m (horizon %.0f s) | %u | %u of 100, %u ticks (%.1f s)%s | — | — | "
         "%.3f m | "
         "%.3f m | %u | `%016llx` |\n",
         (double)horizon, period, r.done, r.ticks, (double)r.ticks * DT,
         r.done < CROWD_DOORWAY_N ? " **deadlock**" : "", (double)r.gap, (double)r.deepest, r.stuck,
         (unsigned long long)steer_world_hash(w));
  steer_world_destroy(w);
}

/* A squad sent to one point, by arrive and by path, arriving at the point
 * or settling against those already there: how many are done in 60 s, when
 * the last was, how close bodies came, and how far the last done is from
 * the point (the squad's spread). */
static void rally(uint8_t arrival, int by_path) {
  steer_world *w = built(crowd_rally(arrival, by_path), "rally");
  crowd_run r =
      crowd_run_until(w, by_path ? STEER_EVENT_PATH_FINISHED : STEER_EVENT_ARRIVED, CROWD_RALLY_N, 1200, 0);
  steer_world_view v = steer_world_get_view(w);
  float spread = 0.0f;
  for (uint32_t i = 0; i < v.count; i++)
    spread = fmaxf(spread, v2_len(v2(v.px[i], v.py[i])));
  float straight = 20.0f / 1.5f / DT;
  printf("| rally, 60 from a 20 m circle to its centre (%s, %s) | %u of %u%s | %u ticks (%.1f s) | %.2fx | "
         "%.3f m | %.1f m | %u | `%016llx` |\n",
         by_path ? "path" : "arrive", arrival == STEER_ARRIVAL_SETTLE ? "settle" : "point", r.done,
         CROWD_RALLY_N, r.done < CROWD_RALLY_N ? " in 60 s" : "", r.ticks, (double)r.ticks * DT,
         (double)r.ticks / straight, (double)r.gap, (double)spread, r.stuck,
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
  for (uint32_t i = 0; i < runs && i < 64; i++) {
    steer_world *w = built(crowd_doorway(period, horizon, i + 1), "doorway");
    crowd_run r = crowd_run_until(w, STEER_EVENT_PATH_FINISHED, CROWD_DOORWAY_N, max_ticks, 0);
    gap = fminf(gap, r.gap);
    ok += r.done == CROWD_DOORWAY_N;
    done[i] = r.done == CROWD_DOORWAY_N ? r.ticks : UINT32_MAX;
    steer_world_destroy(w);
  }
  qsort(done, runs, sizeof(done[0]), cmp_u32);
  uint32_t med = done[runs / 2], slow = done[runs - 1];
  char ms[32], ss[32];
  snprintf(ms, sizeof(ms), med == UINT32_MAX ? "—" : "%.1f s", (double)med * DT);
  snprintf(ss, sizeof(ss), slow == UINT32_MAX ? "not all" : "%.1f s", (double)slow * DT);
  printf(
      "| doorway, %u jittered starts (horizon %.0f s) | %u | %u of %u | %s | %s | %.2f agents/s | %.3f m |\n",
      runs, (double)horizon, period, ok, runs, ms, ss, med == UINT32_MAX ? 0.0 : 100.0 / ((double)med * DT),
      (double)gap);
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
    worst = fmaxf(worst, crowd_deepest(w));
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

/* A default world with one dynamic agent at the origin arriving at goal (the
 * default params and limits), with the given arrival; *d is its desc. */
static steer_world *lone_arriver(const char *what, vec2 goal, uint8_t arrival, steer_agent_desc *d,
                                 steer_id *id) {
  steer_world_config cfg = steer_default_world_config();
  steer_world *w = built(steer_world_create(&cfg), what);
  *d = steer_default_agent_desc();
  d->model = STEER_MODEL_DYNAMIC;
  d->behaviour = steer_default_behaviour(STEER_BEHAVIOUR_ARRIVE);
  d->behaviour.target.kind = STEER_TARGET_POINT;
  d->behaviour.target.point = goal;
  d->behaviour.arrival = arrival;
  if (steer_world_spawn(w, d, 0, id) != STEER_OK)
    built(NULL, what);
  return w;
}

/* One dynamic agent with the default params on a clear line of len m at 3 m/s,
 * 6 m/s^2: when it arrives (the ARRIVED event) and is at rest, against the
 * straight-line time len / max_speed. */
static void trip(float len) {
  steer_agent_desc d;
  steer_id id;
  steer_world *w = lone_arriver("trip", v2(len, 0.0f), STEER_ARRIVAL_POINT, &d, &id);
  float arrived = -1.0f, rest = -1.0f, beyond = -INFINITY;
  for (int i = 1; i <= (int)(60.0f / DT); i++) {
    steer_world_step(w, DT);
    steer_agent_info info;
    steer_world_get(w, id, &info);
    beyond = fmaxf(beyond, info.state.position.x - len);
    if (arrived < 0.0f && info.arrived)
      arrived = (float)i * DT;
    if (arrived >= 0.0f && rest < 0.0f && v2_len(info.state.velocity) < 1e-3f)
      rest = (float)i * DT;
  }
  float line = len / d.limits.max_speed;
  printf("| trip %g m | %.2f s | %.2f s | %.2f s | %.2f | %.3f m |\n", (double)len, (double)arrived,
         (double)rest, (double)line, (double)(arrived / line), (double)beyond);
  steer_world_destroy(w);
}

/* One dynamic agent (default limits) sent by a client to goal after goal:
 * `goals` points `step` m apart on a line, each sent at the ARRIVED of the
 * one before, with the given arrival. When the last ARRIVED came, and the
 * slowest speed on the way after the first metre. */
static void chain(uint8_t arrival, int goals, float step) {
  steer_agent_desc d;
  steer_id id;
  steer_world *w = lone_arriver("chain", v2(step, 0.0f), arrival, &d, &id);
  int sent = 1;
  float done = -1.0f, slowest = INFINITY;
  for (int i = 1; i <= (int)(120.0f / DT) && done < 0.0f; i++) {
    steer_world_step(w, DT);
    steer_agent_info info;
    steer_world_get(w, id, &info);
    if (info.state.position.x > 1.0f)
      slowest = fminf(slowest, v2_len(info.state.velocity));
    uint32_t n;
    const steer_event *ev = steer_world_events(w, &n);
    for (uint32_t k = 0; k < n; k++) {
      if (ev[k].agent != id || ev[k].type != STEER_EVENT_ARRIVED)
        continue;
      if (sent == goals) {
        done = (float)i * DT;
      } else {
        d.behaviour.target.point = v2(step * (float)++sent, 0.0f);
        steer_world_set_behaviour(w, id, &d.behaviour);
      }
    }
  }
  float line = step * (float)goals / d.limits.max_speed;
  printf("| %d goals %g m apart, each sent at ARRIVED (%s) | %.2f s | %.2f s | %.2f | %.2f m/s |\n", goals,
         (double)step, arrival == STEER_ARRIVAL_PASS ? "pass" : "point", (double)done, (double)line,
         (double)(done / line), (double)slowest);
  steer_world_destroy(w);
}

int main(int argc, char **argv) {
  const char *which = argc > 1 ? argv[1] : "all";
  if (strcmp(which, "-h") == 0 || strcmp(which, "--help") == 0) {
    printf("usage: bench_crowd [circle|doorway|sweep|level|trip|rally|all]\n");
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
    printf("\n| scenario | neighbour period | runs with all 100 through in 300 s | median completion | "
           "slowest | "
           "flow at the median | smallest gap between bodies |\n|---|---:|---:|---:|---:|---:|---:|\n");
    doorway_sweep(1, 3.0f, 8);
    doorway_sweep(4, 3.0f, 8);
    doorway_sweep(1, 1.0f, 8);
  }
  if (all || strcmp(which, "rally") == 0) {
    printf("\n| scenario | done | the last done | last / straight line | smallest gap between bodies | "
           "farthest from the point | STUCK | state hash |\n|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (int k = 0; k < 4; k++)
      rally(k & 1 ? STEER_ARRIVAL_SETTLE : STEER_ARRIVAL_POINT, k >> 1);
  }
  if (all || strcmp(which, "level") == 0)
    level();
  if (all || strcmp(which, "trip") == 0) {
    printf("\n| scenario | arrived | at rest | straight line | arrived / straight | past the goal |\n"
           "|---|---:|---:|---:|---:|---:|\n");
    trip(3.2f);
    trip(10.0f);
    trip(20.0f);
    trip(50.0f);
    printf("\n| scenario | last ARRIVED | straight line | last / straight | slowest after the first metre |\n"
           "|---|---:|---:|---:|---:|\n");
    chain(STEER_ARRIVAL_POINT, 5, 8.0f);
    chain(STEER_ARRIVAL_PASS, 5, 8.0f);
    chain(STEER_ARRIVAL_POINT, 10, 3.2f);
    chain(STEER_ARRIVAL_PASS, 10, 3.2f);
  }
  return 0;
}

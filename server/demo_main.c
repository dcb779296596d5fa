/* demo_main.c: steerd-demo, a headless run of the demo world.
 *
 * Steps the demo world for a while at the server's tick rate and prints, per
 * group of agents, what they did: distance travelled, speeds, events. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demo.h"
#include "map.h"

#define MAX_TRACKED STEERD_DEMO_MAX_AGENTS

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  double seconds = 60.0;
  const double rate = 30.0;
  if (argc > 1 && strcmp(argv[1], "--version") == 0) {
    printf("steerd-demo %s\n", STEERD_VERSION);
    return 0;
  }
  if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    printf(
        "usage: steerd-demo [SECONDS]\n  Steps the demo world headless (default 60 s at 30 Hz) and prints a "
        "summary.\n  steerd-demo --version prints the version.\n");
    return 0;
  }
  if (argc > 1)
    seconds = atof(argv[1]);
  if (!(seconds > 0.0))
    seconds = 60.0;

  steer_world_config cfg = steer_default_world_config();
  steer_world *w = steer_world_create(&cfg);
  if (!w) {
    fprintf(stderr, "steerd-demo: cannot create the world\n");
    return 1;
  }
  steerd_demo demo;
  int rc = steerd_demo_create(&demo, w, cfg.seed);
  /* GOTO, served around each step as the server does (goto.h). */
  steer_planner_config pc = steer_default_planner_config();
  steer_planner *planner = steer_planner_create(w, &pc);
  if (rc == STEER_OK)
    rc = planner ? steerd_demo_set_planner(&demo, w, planner, 1) : STEER_ENOMEM;
  if (rc == STEER_OK) /* the graphs of the radius classes in use, before the first step */
    rc = steer_planner_warm(planner, w) < 0 ? STEER_ENOMEM : STEER_OK;
  if (rc != STEER_OK) {
    fprintf(stderr, "steerd-demo: cannot populate the world: %s\n", steer_strerror(rc));
    return 1;
  }
  uint32_t plan_events[STEER_PLAN_EVENT_TYPE_COUNT] = {0}, replans_for_map = 0;

  static double travelled[MAX_TRACKED], top_speed[MAX_TRACKED];
  static uint32_t event_counts[MAX_TRACKED][STEER_EVENT_TYPE_COUNT];
  float worst = -INFINITY; /* deepest any body went into the geometry (m; <= 0: never touched) */
  steer_agent_info info;
  vec2 last[MAX_TRACKED];
  for (uint32_t i = 0; i < demo.id_count; i++) {
    steer_world_get(w, demo.ids[i], &info);
    last[i] = info.state.position;
  }

  uint64_t ticks = (uint64_t)(seconds * rate);
  const float dt = (float)(1.0 / rate);
  double t0 = now_s();
  for (uint64_t t = 0; t < ticks; t++) {
    steer_planner_update(planner, w);
    uint32_t pn;
    const steer_plan_event *pe = steer_planner_events(planner, &pn);
    for (uint32_t e = 0; e < pn; e++) {
      plan_events[pe[e].type]++;
      replans_for_map += pe[e].type == STEER_PLAN_REPLANNED && pe[e].reason == STEER_PLAN_MAP;
    }
    steer_world_step(w, dt);
    steer_planner_observe(planner, w);
    uint32_t n;
    const steer_event *ev = steer_world_events(w, &n);
    for (uint32_t e = 0; e < n; e++)
      for (uint32_t i = 0; i < demo.id_count; i++)
        if (demo.ids[i] == ev[e].agent)
          event_counts[i][ev[e].type]++;
    steerd_demo_update(&demo, w, ev, n);
    for (uint32_t i = 0; i < demo.id_count; i++) {
      if (steer_world_get(w, demo.ids[i], &info) != STEER_OK)
        continue;
      travelled[i] += v2_len(v2_sub(info.state.position, last[i]));
      last[i] = info.state.position;
      double speed = v2_len(info.state.velocity);
      if (speed > top_speed[i])
        top_speed[i] = speed;
      const steer_map *m = steer_world_map(w);
      float r = info.limits.radius;
      float over = steer_map_inside(m, info.state.position)
                       ? r + 1.0f
                       : r - steer_map_distance(m, info.state.position, r + 1.0f);
      if (over > worst)
        worst = over;
    }
  }
  double elapsed = now_s() - t0;

  printf("steerd demo world: %u agents, %.0f s simulated at %.0f Hz (%llu ticks) in %.3f s\n\n",
         steer_world_count(w), seconds, rate, (unsigned long long)ticks, elapsed);
  printf("%-36s %6s %10s %10s %9s %9s %9s %9s %6s\n", "group", "agents", "travelled", "top speed", "arrived",
         "waypoints", "reversed", "finished", "stuck");
  printf("%-36s %6s %10s %10s %9s %9s %9s %9s %6s\n", "", "", "m (sum)", "m/s (max)", "", "", "", "", "");
  for (uint32_t g = 0; g < demo.group_count; g++) {
    const steerd_demo_group *gr = &demo.groups[g];
    double dist = 0.0, top = 0.0;
    uint32_t ev[STEER_EVENT_TYPE_COUNT] = {0};
    for (uint32_t i = gr->first; i < gr->first + gr->count; i++) {
      dist += travelled[i];
      if (top_speed[i] > top)
        top = top_speed[i];
      for (int e = 0; e < STEER_EVENT_TYPE_COUNT; e++)
        ev[e] += event_counts[i][e];
    }
    printf("%-36s %6u %10.1f %10.2f %9u %9u %9u %9u %6u\n", gr->name, gr->count, dist, top,
           ev[STEER_EVENT_ARRIVED], ev[STEER_EVENT_WAYPOINT], ev[STEER_EVENT_REVERSED],
           ev[STEER_EVENT_PATH_FINISHED], ev[STEER_EVENT_STUCK]);
  }
  printf("\ntag: %u role swaps; arrivals re-targeted %u times\n", demo.swaps, demo.retargets);
  if (demo.level)
    printf(
        "level: %u obstacles; the doorway crossed %u times west to east, %u east to west; %u STUCK; the side "
        "door closed or opened %u times\n",
        steer_map_count(steer_world_map(w)), demo.crossings[0], demo.crossings[1], demo.stuck,
        demo.door_changes);
  if (demo.planner && demo.level)
    printf("goto: %u GOTOs sent, %u arrived; routes planned %u, replanned %u (%u because the map changed), "
           "unreachable %u\n",
           demo.goto_sent, demo.goto_arrived, plan_events[STEER_PLAN_PLANNED],
           plan_events[STEER_PLAN_REPLANNED], replans_for_map, plan_events[STEER_PLAN_UNREACHABLE]);
  printf("deepest any body went into the geometry: %.4f m (<= 0: none touched it)\n", (double)worst);
  printf("state hash after tick %llu: %016llx (same seed, same hash: the run is deterministic)\n",
         (unsigned long long)steer_world_tick(w), (unsigned long long)steer_world_hash(w));
  steer_planner_destroy(planner);
  steer_world_destroy(w);
  return 0;
}

/* crowd_scenes.h: the standard crowd scenarios, built in one place for
 * tests/test_avoid.c (which asserts on them) and bench/bench_crowd.c (which
 * prints their figures, BENCHMARKS.md "World with walls"), so the benchmark
 * measures exactly what the test asserts; and what both measure of a run.
 *
 * Pedestrians: dynamic bodies of CROWD_RADIUS (0.4 m), 1.5 m/s, 4 m/s^2,
 * arriving, avoidance on (10 neighbours), stepped by CROWD_DT (0.05 s).
 *   circle  CROWD_CIRCLE_N (100) on a 50 m circle, each to its antipode (the
 *           ORCA test), STUCK reported after 5 s.
 *   doorway two groups of 50 swap rooms through a 3 m door (crowd_rooms),
 *           each on a path through the door, STUCK reported after 20 s.
 *   rally   CROWD_RALLY_N (60) on a 20 m circle, all to its centre (the
 *           fan-in of a squad sent to one point), by arrive or by a "once"
 *           path, with a chosen steer_arrival.
 * Without Check: a scene that cannot be built is NULL, for the caller to
 * fail on. */
#ifndef STEERD_CROWD_SCENES_H
#define STEERD_CROWD_SCENES_H

#include <stdint.h>

#include "world.h"

#define CROWD_DT        0.05f /* s */
#define CROWD_RADIUS    0.4f  /* m */
#define CROWD_CIRCLE_N  100u
#define CROWD_DOORWAY_N 100u
#define CROWD_RALLY_N   60u

/* A world of [-half, half] x [-half, half] m for max_agents agents (3 events
 * each), 4 m cells, the given seed; otherwise steer_default_world_config().
 * NULL when it cannot be created. */
steer_world *crowd_world(uint32_t max_agents, float half, uint64_t seed);

/* A pedestrian at `at` arriving at `goal` (target radius 0.5 m, slow radius
 * 2 m, separation radius 5 m, avoid weight 1); everything else the defaults
 * (neighbour period 1, horizon 3 s, stuck detection off). */
steer_agent_desc crowd_walker(vec2 at, vec2 goal);

/* Two rooms, x < -1.5 and x > 1.5 (walls 3 m thick, obstacles 1 and 2),
 * joined by a 3 m door at y in [-1.5, 1.5], inside a wall round [-20, 20]^2
 * (obstacle 3). STEER_OK or the first error. */
int crowd_rooms(steer_world *w);

/* The circle swap (seed 3, a world of +-80 m), neighbour sets kept for
 * `period` ticks. */
steer_world *crowd_circle(uint8_t period);

/* The doorway swap (seed 4, a world of +-30 m): agent i < 50 starts in the
 * left room at (-14 + 2 (k % 5), -9 + 2 (k / 5)), k = i % 50, the others at
 * x + 18 in the right room, each going 18 m across along the path (door's
 * near side, far side, goal); neighbour sets kept for `period` ticks, the
 * given avoidance horizon. variant > 0 moves every start by up to 0.5 m on
 * each axis (a generator seeded 1000 + variant), so that a sweep shows how
 * robust the flow is rather than one chaotic run. */
steer_world *crowd_doorway(uint8_t period, float horizon, uint32_t variant);

/* The rally (seed 5, a world of +-40 m): agent i starts at angle 2 pi i / 60
 * on the circle of 20 m round the origin and goes to the origin, arriving
 * there (by_path 0: done is ARRIVED) or along a one-node "once" path of radius
 * 0.5 m (by_path 1: done is PATH_FINISHED, as a GOTO without walls), with the
 * given arrival (steer_arrival). */
steer_world *crowd_rally(uint8_t arrival, int by_path);

/* Smallest gap between two bodies of CROWD_RADIUS (negative: overlap). */
float crowd_min_gap(const steer_world *w);

/* Deepest any body (of its own radius) is in the geometry (m; <= 0: clear of
 * it; a centre inside an obstacle counts as radius + 1 m). */
float crowd_deepest(const steer_world *w);

/* How many of the last step's events are of this type. */
uint32_t crowd_count_events(const steer_world *w, uint8_t type);

/* A run of a scene: steps by CROWD_DT until n agents have sent the event
 * `done` (STEER_EVENT_ARRIVED, STEER_EVENT_PATH_FINISHED) or max_ticks
 * steps, checking the gap between bodies after every step and, with
 * `walls`, how deep a body went into the geometry. */
typedef struct crowd_run {
  uint32_t done;  /* agents that sent `done` */
  uint32_t ticks; /* steps taken: when the n-th was done, else max_ticks */
  uint32_t stuck; /* STUCK events */
  float gap;      /* smallest crowd_min_gap after a step */
  float deepest;  /* largest crowd_deepest after a step (-INFINITY without walls) */
} crowd_run;

crowd_run crowd_run_until(steer_world *w, uint8_t done, uint32_t n, uint32_t max_ticks, int walls);

#endif /* STEERD_CROWD_SCENES_H */

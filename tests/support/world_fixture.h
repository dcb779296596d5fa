/* world_fixture.h: worlds for the movement tests (Check tests only: a world
 * that cannot be created fails the test). */
#ifndef STEERD_WORLD_FIXTURE_H
#define STEERD_WORLD_FIXTURE_H

#include <stdint.h>

#include "world.h"

/* A world of [-half, half] x [-half, half] m for max_agents agents (3 events
 * each), 4 m cells, the given seed; otherwise steer_default_world_config()
 * (crowd_world of crowd_scenes.h, the benchmarks' worlds). */
steer_world *make_world(uint32_t max_agents, float half, uint64_t seed);

/* Deepest any body is in the geometry (crowd_deepest of crowd_scenes.h: m,
 * <= 0 clear of it, a centre inside counts as radius + 1 m), and in *outside
 * whether a centre left the world's bounds. */
float worst_overlap(const steer_world *w, int *outside);

#endif /* STEERD_WORLD_FIXTURE_H */

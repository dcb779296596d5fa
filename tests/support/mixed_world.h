/* mixed_world.h: the world of the delta-snapshot benchmark and of
 * test_interp_link (BENCHMARKS.md): dynamic agents spawned at random in a
 * square, a third patrolling 4-point loops, a third wandering, a third
 * pursuing the agent spawned before them. The same seed gives the same world. */
#ifndef MIXED_WORLD_H
#define MIXED_WORLD_H

#include <stdint.h>

#include "protocol.h"

typedef struct mixed_world {
  uint64_t rng;
  float side; /* m: the square's side, centred on the origin */
  uint32_t next;
  proto_id prev; /* the agent spawned last: the next pursuer's target */
} mixed_world;

void mixed_world_init(mixed_world *m, float side, uint64_t seed);

/* The SPAWN of the next agent into *cmd (request_id 0). Once its ACK names
 * the new agent, call mixed_world_spawned. */
void mixed_world_next(mixed_world *m, proto_command *cmd);
void mixed_world_spawned(mixed_world *m, proto_id id);

/* A uniform number in [0, 1) from the world's generator (for views and the like). */
double mixed_world_rnd01(uint64_t *state);

#endif /* MIXED_WORLD_H */

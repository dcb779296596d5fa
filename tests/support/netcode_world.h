/* netcode_world.h: the random world of the netcode tests (test_netcode,
 * test_netcode_threads): wandering agents of random models and speeds spawned
 * at random in a square, the list of their ids, and one xorshift generator
 * that drives the world's changes and the test's other random choices alike
 * (the same seed gives the same run). Check tests only: a world that cannot be
 * created, or a despawn that fails, fails the test. */
#ifndef STEERD_NETCODE_WORLD_H
#define STEERD_NETCODE_WORLD_H

#include <stdint.h>

#include "world.h"

typedef struct netcode_world {
  uint64_t rng;      /* the generator's state: set it to seed a run */
  float half;        /* m: the world is [-half, half] x [-half, half] */
  uint32_t capacity; /* the world's max_agents and the size of ids[] */
  steer_id *ids;     /* caller-owned, capacity entries: the live agents */
  uint32_t nids;
} netcode_world;
/* A test's own, over its ids[]: static netcode_world nw = {.half = 60, .capacity = 400, .ids = ids}; */

/* A world of capacity agents in the square, the given world seed; forgets the
 * ids (nids = 0). The generator is left as it is. */
steer_world *netcode_world_create(netcode_world *nw, uint64_t world_seed);

uint32_t netcode_world_rnd(netcode_world *nw);
float netcode_world_rndf(netcode_world *nw, float lo, float hi); /* in [lo, hi) */
vec2 netcode_world_point(netcode_world *nw);                     /* 1 m inside the square */

/* A wandering agent of a random model, position, orientation and top speed
 * (none once capacity - 1 agents live). */
void netcode_world_spawn_one(netcode_world *nw, steer_world *w);
/* Despawns a random live agent (nothing when there is none). */
void netcode_world_despawn_one(netcode_world *nw, steer_world *w);

#endif /* STEERD_NETCODE_WORLD_H */

/* randcmd.h: random but valid commands for load tools (steerd-client bots,
 * bench/soak): a seedable generator and behaviours that suit an agent's model
 * with the targets they need, so a load run exercises the server, not its
 * error paths. */
#ifndef STEERD_RANDCMD_H
#define STEERD_RANDCMD_H

#include <stdint.h>

#include "protocol.h"

/* splitmix64: seedable, so a run repeats with the same seed. */
uint64_t steerd_rand_next(uint64_t *s);
/* Uniform in [0, n); 0 when n is 0. */
uint32_t steerd_rand_below(uint64_t *s, uint32_t n);
/* Uniform in [lo, hi). */
float steerd_rand_range(uint64_t *s, float lo, float hi);
/* Uniform in the box [lo, hi). */
proto_vec2 steerd_rand_point(uint64_t *s, proto_vec2 lo, proto_vec2 hi);

/* A behaviour suiting model (world.h's table of models and behaviours): points
 * fall in [lo, hi); agent targets are taken from agents[0..n) other than
 * agents[self] (self >= n: no agent targets, as for a spawn). Kinds that need
 * agents fall back to arrive when there are too few. */
void steerd_rand_behaviour(uint64_t *s, proto_vec2 lo, proto_vec2 hi, const proto_id *agents, uint32_t n,
                           uint32_t self, uint8_t model, proto_behaviour *out);

/* A path of 2 to max_points points in [lo, hi), any mode, with cornering
 * only for the heading model (arc and lazy are for it alone). */
void steerd_rand_path(uint64_t *s, proto_vec2 lo, proto_vec2 hi, uint32_t max_points, uint8_t model,
                      proto_path *out);

#endif /* STEERD_RANDCMD_H */

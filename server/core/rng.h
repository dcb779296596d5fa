/* rng.h: seeded random numbers owned by the world (PCG32, O'Neill 2014).
 *
 * Nothing in the core calls rand(): every generator is a value the world owns and
 * saves, so a run replays bit for bit from its seed and its commands. */
#ifndef STEER_RNG_H
#define STEER_RNG_H

#include <stdint.h>

#include "vec2.h"

typedef struct steer_rng {
  uint64_t state;
} steer_rng;

#define STEER_RNG_MULT 6364136223846793005ULL
#define STEER_RNG_INC  1442695040888963407ULL

static inline uint32_t steer_rng_next(steer_rng *r) {
  uint64_t old = r->state;
  r->state = old * STEER_RNG_MULT + STEER_RNG_INC;
  uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
  uint32_t rot = (uint32_t)(old >> 59u);
  return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

static inline void steer_rng_seed(steer_rng *r, uint64_t seed) {
  r->state = 0;
  steer_rng_next(r);
  r->state += seed;
  steer_rng_next(r);
}

/* Uniform in [0, 1). */
static inline float steer_rng_float(steer_rng *r) {
  return (float)(steer_rng_next(r) >> 8) * (1.0f / 16777216.0f);
}

/* randomBinomial (seed 003): random() - random(), in (-1, 1), most often near 0. */
static inline float steer_rng_binomial(steer_rng *r) {
  float a = steer_rng_float(r); /* two statements: C leaves the order within one unspecified */
  float b = steer_rng_float(r);
  return a - b;
}

/* Uniform in [lo, hi). */
static inline float steer_rng_range(steer_rng *r, float lo, float hi) {
  return lo + (hi - lo) * steer_rng_float(r);
}

/* A point uniform in [x0, x1) x [y0, y1). y is drawn before x: C leaves the
 * order of a call's arguments unspecified, so v2(steer_rng_range(..),
 * steer_rng_range(..)) draws x first with clang and y first with GCC; this is
 * GCC's order, which the figures and hashes recorded so far were made with. */
static inline vec2 steer_rng_point(steer_rng *r, float x0, float x1, float y0, float y1) {
  float y = steer_rng_range(r, y0, y1);
  float x = steer_rng_range(r, x0, x1);
  return v2(x, y);
}

#endif /* STEER_RNG_H */

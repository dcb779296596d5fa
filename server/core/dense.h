/* dense.h: what follows the behaviour in a crowd, four agents at a time.
 *
 * The separation from the nearest neighbours and its blend with the
 * behaviour's output, computed for four agents as the lanes of one vector
 * (simd.h) instead of one agent after another: the four agents' square roots
 * and divisions are independent, so they overlap instead of forming one long
 * chain per agent that waits on that agent's neighbour query. Internal to the
 * core. */
#ifndef STEER_DENSE_H
#define STEER_DENSE_H

#include <stdint.h>

#include "grid.h"
#include "steering.h"

/* For each agent j of four (s[j] four states, not necessarily different):
 *   sep  = steer_separation(s[j], l[j], p[j], nxy[j], nrad[j], n[j]);
 *   out[j] = steer_blend({o[j], sep}, {1, weight[j]}, 2, l[j]);
 * bit for bit (o[j] is the behaviour's output; out may be o). Neighbour i of
 * agent j is lane j of the i-th step, and each lane adds its pushes in
 * neighbour order, as the scalar loop does. A lane outside the vector path's
 * exact range (a coincident or NaN neighbour, whose push is along the heading;
 * a sum whose square overflows) is redone by the scalar functions. nrad[j]
 * may not be NULL. Returns the lanes the vector path computed (0 without
 * SSE2; the fewer of the two halves below). */
int steer_separation_blend_x4(const steer_state *const s[4], const steer_limits *const l[4],
                              const steer_params *const p[4], const float weight[4], const vec2 *const nxy[4],
                              const float *const nrad[4], const uint32_t n[4], const steer_output o[4],
                              steer_output out[4]);

/* The two halves, so a caller can start the separation (which needs only
 * the neighbours) before the behaviour's output is known:
 *   sep[j] = steer_separation(s[j], l[j], p[j], nxy[j], nrad[j], n[j]);
 *   out[j] = steer_blend({o[j], sep[j]}, {1, weight[j]}, 2, l[j]);
 * bit for bit, each returning the lanes its vector path computed. */
int steer_separation_x4(const steer_state *const s[4], const steer_limits *const l[4],
                        const steer_params *const p[4], const vec2 *const nxy[4], const float *const nrad[4],
                        const uint32_t n[4], steer_output sep[4]);
int steer_blend_separation_x4(const steer_output o[4], const steer_output sep[4], const float weight[4],
                              const steer_limits *const l[4], steer_output out[4]);

/* steer_separation_x4 with the neighbours given as dense indices into the
 * kept lists' records (steer_grid_nearest_kept_idx): neighbour i of agent j
 * is at rec[nb[j][i]].x, .y with radius rec[nb[j][i]].r. The same results,
 * bit for bit, without copying the neighbours out first. n[j] <=
 * STEER_SEPARATION_X4_MAX. */
#define STEER_SEPARATION_X4_MAX 32u
int steer_separation_x4_idx(const steer_state *const s[4], const steer_limits *const l[4],
                            const steer_params *const p[4], const steer_grid_rec *rec,
                            const uint32_t *const nb[4], const uint32_t n[4], steer_output sep[4]);

/* The eight-lane (AVX) path: whether the processor has it, whether it is in
 * use (by default where supported), and a switch for tests and benchmarks
 * (returns the previous setting; on is ignored where unsupported). Both
 * paths give the same results. Not to be switched while a step runs. */
int steer_dense_avx_supported(void);
int steer_dense_avx(void);
int steer_dense_set_avx(int on);

#endif /* STEER_DENSE_H */

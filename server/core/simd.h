/* simd.h: four lanes of the core's float arithmetic with SSE2 (x86-64's
 * baseline), for steering batches of agents: the basic selects and clamps,
 * and the end of the four-lane kernels (f4_finish_lanes). The steering's
 * helpers (atan2, sincos, the angle wrap, clips, fminf/fmaxf, arrive, face,
 * the integrators) are written once for four and eight lanes in simdw.h.
 *
 * Every helper does, per lane, exactly the operations of the scalar code it
 * mirrors, in the same order: SSE's add, mul, div and sqrt round like the
 * scalar ones (IEEE single, round to nearest; the core is built with
 * -ffp-contract=off, so no fused multiply-add on either path), and each
 * branch of the scalar code becomes a compare with the same predicate and a
 * select, so NaN takes the same side as in the scalar code. A batch is then
 * bit-identical to the scalar path, which stays the reference
 * (tests/test_steering.c compares them). STEER_SIMD is 0 without SSE2; callers
 * then use the scalar functions. Internal to the core. */
#ifndef STEER_SIMD_H
#define STEER_SIMD_H

#include "vec2.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#define STEER_SIMD 1

typedef __m128 f4;

#define SIMD_INLINE static inline __attribute__((always_inline))

SIMD_INLINE f4 f4_set(float x) { return _mm_set1_ps(x); }
/* m ? a : b, m from a compare (all ones or all zeros per lane). */
SIMD_INLINE f4 f4_sel(f4 m, f4 a, f4 b) { return _mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b)); }
SIMD_INLINE f4 f4_neg(f4 a) { return _mm_xor_ps(a, _mm_set1_ps(-0.0f)); }
SIMD_INLINE f4 f4_abs(f4 a) { return _mm_andnot_ps(_mm_set1_ps(-0.0f), a); }
/* steer_clampf: v < lo ? lo : (v > hi ? hi : v). */
SIMD_INLINE f4 f4_clamp(f4 v, f4 lo, f4 hi) {
  return f4_sel(_mm_cmplt_ps(v, lo), lo, f4_sel(_mm_cmpgt_ps(v, hi), hi, v));
}

/* The end of every four-lane kernel: v[0..n) are its results (n <= 8). The
 * lanes set in bad (a compare mask) or in the bits of also (bit i: lane i)
 * are outside the vector path's exact range: redo(ctx, i) computes them with
 * the scalar code. The other lanes are handed to keep(ctx, i, r), where
 * r[k][i] is lane i of v[k]. Returns the number of lanes kept, which the kernels
 * return (what the vector path did, for the tests). Inlined, so keep and redo
 * are direct calls. */
typedef void (*f4_keep_fn)(void *ctx, int lane, const float (*r)[4]);
typedef void (*f4_redo_fn)(void *ctx, int lane);

SIMD_INLINE int f4_finish_lanes(const f4 *v, int n, f4 bad, int also, f4_keep_fn keep, f4_redo_fn redo,
                                void *ctx) {
  float t[8][4];
  for (int k = 0; k < n; k++)
    _mm_storeu_ps(t[k], v[k]);
  int redo_mask = _mm_movemask_ps(bad) | also, kept = 0;
  for (int i = 0; i < 4; i++) {
    if (redo_mask & (1 << i)) {
      redo(ctx, i);
      continue;
    }
    keep(ctx, i, t);
    kept++;
  }
  return kept;
}

#else
#define STEER_SIMD 0
#endif

#endif /* STEER_SIMD_H */

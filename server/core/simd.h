/* simd.h: four lanes of the core's float arithmetic with SSE2 (x86-64's
 * baseline), for steering batches of agents.
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

/* fminf / fmaxf, lane by lane, for the lanes where both are numbers and not
 * two zeros (there libm's choice of sign is its own): *bad gets the others,
 * which the caller redoes with the scalar code. */
SIMD_INLINE f4 f4_fmin(f4 a, f4 b, f4 *bad) {
  *bad = _mm_or_ps(*bad, _mm_or_ps(_mm_cmpunord_ps(a, b),
                                   _mm_and_ps(_mm_cmpeq_ps(a, _mm_setzero_ps()), _mm_cmpeq_ps(b, _mm_setzero_ps()))));
  return _mm_min_ps(a, b);
}
SIMD_INLINE f4 f4_fmax(f4 a, f4 b, f4 *bad) {
  *bad = _mm_or_ps(*bad, _mm_or_ps(_mm_cmpunord_ps(a, b),
                                   _mm_and_ps(_mm_cmpeq_ps(a, _mm_setzero_ps()), _mm_cmpeq_ps(b, _mm_setzero_ps()))));
  return _mm_max_ps(a, b);
}

/* steer_atan2 (vec2.h), lane by lane. */
SIMD_INLINE f4 f4_atan2(f4 y, f4 x) {
  const f4 zero = _mm_setzero_ps(), one = f4_set(1.0f);
  f4 ax = f4_abs(x), ay = f4_abs(y);
  f4 xgt = _mm_cmpgt_ps(ax, ay);
  f4 hi = f4_sel(xgt, ax, ay), lo = f4_sel(xgt, ay, ax);
  f4 a = _mm_div_ps(lo, hi);
  f4 big = _mm_cmpgt_ps(a, f4_set(0.41421356237309503f));
  f4 base = _mm_and_ps(big, f4_set(0.78539816339744831f));
  a = f4_sel(big, _mm_div_ps(_mm_sub_ps(a, one), _mm_add_ps(a, one)), a);
  f4 z = _mm_mul_ps(a, a);
  f4 poly = _mm_sub_ps(_mm_mul_ps(f4_set(8.05374449538e-2f), z), f4_set(1.38776856032e-1f));
  poly = _mm_add_ps(_mm_mul_ps(poly, z), f4_set(1.99777106478e-1f));
  poly = _mm_sub_ps(_mm_mul_ps(poly, z), f4_set(3.33329491539e-1f));
  f4 r = _mm_add_ps(base, _mm_add_ps(_mm_mul_ps(_mm_mul_ps(poly, z), a), a));
  r = f4_sel(_mm_cmpgt_ps(ay, ax), _mm_sub_ps(f4_set(1.57079632679489662f), r), r);
  r = f4_sel(_mm_cmplt_ps(x, zero), _mm_sub_ps(f4_set(3.14159265358979324f), r), r);
  r = f4_sel(_mm_cmplt_ps(y, zero), f4_neg(r), r);
  /* !(hi > 0): the zero vector (and NaN) gives 0. */
  return _mm_and_ps(_mm_cmpgt_ps(hi, zero), r);
}

/* steer_wrap_angle_d's reduction for two doubles x = a + pi with a in
 * [-9, 9] (so x in (-2 pi, 4 pi)): there fmod(x, 2 pi) is x, or x - 2 pi
 * when x >= 2 pi (exact: Sterbenz), and the rest is the same double
 * operations in the same order. */
SIMD_INLINE __m128d d2_wrap(__m128d a) {
  const __m128d pi = _mm_set1_pd(3.14159265358979323846), two_pi = _mm_set1_pd(6.28318530717958647692);
  __m128d x = _mm_add_pd(a, pi);
  __m128d over = _mm_cmpge_pd(x, two_pi);
  x = _mm_or_pd(_mm_and_pd(over, _mm_sub_pd(x, two_pi)), _mm_andnot_pd(over, x));
  __m128d low = _mm_cmple_pd(x, _mm_setzero_pd());
  x = _mm_or_pd(_mm_and_pd(low, _mm_add_pd(x, two_pi)), _mm_andnot_pd(low, x));
  return _mm_sub_pd(x, pi);
}

/* steer_wrap_angle, lane by lane, for angles in [-9, 9] (an error between
 * two angles of (-pi, pi] always is); *bad gets the lanes outside, and NaN
 * passes through as in the scalar code. */
SIMD_INLINE f4 f4_wrap_angle(f4 a, f4 *bad) {
  const f4 pi = f4_set(STEER_PI);
  f4 out = _mm_or_ps(_mm_cmpgt_ps(a, pi), _mm_cmple_ps(a, f4_neg(pi)));
  if (!_mm_movemask_ps(out))
    return a; /* the common case: nothing to wrap */
  *bad = _mm_or_ps(*bad, _mm_andnot_ps(_mm_cmple_ps(f4_abs(a), f4_set(9.0f)), out));
  f4 lo = _mm_cvtpd_ps(d2_wrap(_mm_cvtps_pd(a)));
  f4 hi = _mm_cvtpd_ps(d2_wrap(_mm_cvtps_pd(_mm_movehl_ps(a, a))));
  f4 f = _mm_movelh_ps(lo, hi);
  /* f <= -STEER_PI ? STEER_PI : f */
  f = f4_sel(_mm_cmple_ps(f, f4_neg(pi)), pi, f);
  return f4_sel(out, f, a);
}

/* floorf for |x| < 2^23 (the caller keeps x there): truncate, and step
 * down where that rounded up. */
SIMD_INLINE f4 f4_floor_small(f4 x) {
  f4 t = _mm_cvtepi32_ps(_mm_cvttps_epi32(x));
  return _mm_sub_ps(t, _mm_and_ps(_mm_cmpgt_ps(t, x), f4_set(1.0f)));
}

/* steer_sincos, lane by lane, for |theta| < 1e5; *bad gets the other lanes
 * (and NaN), which the scalar code sends to libm. */
SIMD_INLINE void f4_sincos(f4 theta, f4 *s, f4 *c, f4 *bad) {
  *bad = _mm_or_ps(*bad, _mm_andnot_ps(_mm_cmplt_ps(f4_abs(theta), f4_set(1e5f)), _mm_castsi128_ps(_mm_set1_epi32(-1))));
  f4 k = f4_floor_small(_mm_add_ps(_mm_mul_ps(theta, f4_set(0.63661977236758134f)), f4_set(0.5f)));
  f4 x = _mm_sub_ps(_mm_sub_ps(_mm_sub_ps(theta, _mm_mul_ps(k, f4_set(1.5703125f))),
                               _mm_mul_ps(k, f4_set(4.8375129699707031e-4f))),
                    _mm_mul_ps(k, f4_set(7.5497899548918821e-8f)));
  f4 z = _mm_mul_ps(x, x);
  f4 sn = _mm_add_ps(_mm_mul_ps(f4_set(-1.9515295891e-4f), z), f4_set(8.3321608736e-3f));
  sn = _mm_sub_ps(_mm_mul_ps(sn, z), f4_set(1.6666654611e-1f));
  sn = _mm_add_ps(_mm_mul_ps(_mm_mul_ps(sn, z), x), x);
  f4 cs = _mm_sub_ps(_mm_mul_ps(f4_set(2.443315711809948e-5f), z), f4_set(1.388731625493765e-3f));
  cs = _mm_add_ps(_mm_mul_ps(cs, z), f4_set(4.166664568298827e-2f));
  cs = _mm_add_ps(_mm_sub_ps(_mm_mul_ps(_mm_mul_ps(cs, z), z), _mm_mul_ps(f4_set(0.5f), z)), f4_set(1.0f));
  /* The quadrant, (int)k & 3: 0 (sn, cs), 1 (cs, -sn), 2 (-sn, -cs), 3 (-cs, sn). */
  __m128i q = _mm_and_si128(_mm_cvttps_epi32(k), _mm_set1_epi32(3));
  f4 odd = _mm_castsi128_ps(_mm_cmpeq_epi32(_mm_and_si128(q, _mm_set1_epi32(1)), _mm_set1_epi32(1)));
  f4 s_neg = _mm_castsi128_ps(_mm_cmpgt_epi32(q, _mm_set1_epi32(1)));                           /* 2, 3 */
  f4 c_neg = _mm_castsi128_ps(_mm_or_si128(_mm_cmpeq_epi32(q, _mm_set1_epi32(1)), _mm_cmpeq_epi32(q, _mm_set1_epi32(2)))); /* 1, 2 */
  f4 rs = f4_sel(odd, cs, sn), rc = f4_sel(odd, sn, cs);
  *s = f4_sel(s_neg, f4_neg(rs), rs);
  *c = f4_sel(c_neg, f4_neg(rc), rc);
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

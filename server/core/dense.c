/* dense.c: separation and its blend, four agents at a time (dense.h). */
#include "dense.h"

#include <float.h>

#include "simd.h"

/* The scalar reference: what dynamic_finish does for one agent. */
static steer_output separation_blend(const steer_state *s, const steer_limits *l, const steer_params *p,
                                     float weight, const vec2 *nxy, const float *nrad, uint32_t n,
                                     steer_output o) {
  steer_output sep = steer_separation(s, l, p, nxy, nrad, (int)n);
  steer_output both[2] = {o, sep};
  float weights[2] = {1.0f, weight};
  return steer_blend(both, weights, 2, l);
}

#if STEER_SIMD
/* v2_clip(a, max) lane by lane, for the lanes whose length squared does not
 * overflow (*bad gets the others). The scalar code computes the square root
 * and the division only where it clips; here every lane does, and the select
 * keeps them where the scalar code would have used them. */
SIMD_INLINE void f4_clip(f4 *x, f4 *y, f4 max, f4 *bad) {
  f4 l2 = _mm_add_ps(_mm_mul_ps(*x, *x), _mm_mul_ps(*y, *y));
  f4 over = _mm_and_ps(_mm_cmpgt_ps(l2, _mm_mul_ps(max, max)), _mm_cmpgt_ps(l2, _mm_setzero_ps()));
  *bad = _mm_or_ps(*bad, _mm_andnot_ps(_mm_cmple_ps(l2, f4_set(FLT_MAX)), over));
  f4 k = _mm_div_ps(max, _mm_sqrt_ps(l2));
  *x = f4_sel(over, _mm_mul_ps(*x, k), *x);
  *y = f4_sel(over, _mm_mul_ps(*y, k), *y);
}
#endif

int steer_separation_blend_x4(const steer_state *const s[4], const steer_limits *const l[4],
                              const steer_params *const p[4], const float weight[4], const vec2 *const nxy[4],
                              const float *const nrad[4], const uint32_t n[4], const steer_output o[4],
                              steer_output out[4]) {
#if STEER_SIMD
  /* Built from scalars with set (not stored and loaded back as a vector:
   * four narrow stores do not forward to one wide load). */
  uint32_t most = n[0];
  for (int j = 1; j < 4; j++)
    most = n[j] > most ? n[j] : most;
  const f4 zero = _mm_setzero_ps(), one = f4_set(1.0f);
  /* reach = this + the neighbour's radius, as separation_push adds them */
  const f4 vbase = _mm_setr_ps(p[0]->separation_radius + l[0]->radius, p[1]->separation_radius + l[1]->radius,
                               p[2]->separation_radius + l[2]->radius, p[3]->separation_radius + l[3]->radius);
  const f4 vacc = _mm_setr_ps(l[0]->max_acceleration, l[1]->max_acceleration, l[2]->max_acceleration,
                              l[3]->max_acceleration);
  const f4 vpx = _mm_setr_ps(s[0]->position.x, s[1]->position.x, s[2]->position.x, s[3]->position.x);
  const f4 vpy = _mm_setr_ps(s[0]->position.y, s[1]->position.y, s[2]->position.y, s[3]->position.y);
  const __m128i count = _mm_setr_epi32((int)n[0], (int)n[1], (int)n[2], (int)n[3]);
  f4 sx = zero, sy = zero, bad = zero;
  for (uint32_t i = 0; i < most; i++) {
    /* Lanes past their agent's count are masked off (and read neighbour 0,
     * or zeros when there is none). */
    uint32_t a0 = i < n[0] ? i : 0, a1 = i < n[1] ? i : 0, a2 = i < n[2] ? i : 0, a3 = i < n[3] ? i : 0;
    f4 nx = _mm_setr_ps(n[0] ? nxy[0][a0].x : 0.0f, n[1] ? nxy[1][a1].x : 0.0f, n[2] ? nxy[2][a2].x : 0.0f,
                        n[3] ? nxy[3][a3].x : 0.0f);
    f4 ny = _mm_setr_ps(n[0] ? nxy[0][a0].y : 0.0f, n[1] ? nxy[1][a1].y : 0.0f, n[2] ? nxy[2][a2].y : 0.0f,
                        n[3] ? nxy[3][a3].y : 0.0f);
    f4 nr = _mm_setr_ps(n[0] ? nrad[0][a0] : 0.0f, n[1] ? nrad[1][a1] : 0.0f, n[2] ? nrad[2][a2] : 0.0f,
                        n[3] ? nrad[3][a3] : 0.0f);
    f4 live = _mm_castsi128_ps(_mm_cmpgt_epi32(count, _mm_set1_epi32((int)i)));
    f4 reach = _mm_add_ps(vbase, nr);
    f4 ax = _mm_sub_ps(vpx, nx), ay = _mm_sub_ps(vpy, ny);
    f4 d2 = _mm_add_ps(_mm_mul_ps(ax, ax), _mm_mul_ps(ay, ay));
    /* separation_push: reach > 0 and not d2 >= reach^2 (NaN as there). */
    f4 in = _mm_and_ps(live, _mm_and_ps(_mm_cmpgt_ps(reach, zero), _mm_cmpnge_ps(d2, _mm_mul_ps(reach, reach))));
    f4 d = _mm_sqrt_ps(d2);
    /* Not d > 0 (coincident, or NaN): the push is along the heading. */
    bad = _mm_or_ps(bad, _mm_andnot_ps(_mm_cmpgt_ps(d, zero), in));
    f4 inv = _mm_div_ps(one, d);
    f4 f = _mm_div_ps(_mm_mul_ps(vacc, _mm_sub_ps(reach, d)), reach);
    sx = f4_sel(in, _mm_add_ps(sx, _mm_mul_ps(_mm_mul_ps(ax, inv), f)), sx);
    sy = f4_sel(in, _mm_add_ps(sy, _mm_mul_ps(_mm_mul_ps(ay, inv), f)), sy);
  }
  f4_clip(&sx, &sy, vacc, &bad); /* steer_separation's clip */
  /* steer_blend: from zero, + o * 1, + sep * weight (sep's angular part is 0). */
  const f4 vw = _mm_setr_ps(weight[0], weight[1], weight[2], weight[3]);
  const f4 ox = _mm_setr_ps(o[0].linear.x, o[1].linear.x, o[2].linear.x, o[3].linear.x);
  const f4 oy = _mm_setr_ps(o[0].linear.y, o[1].linear.y, o[2].linear.y, o[3].linear.y);
  const f4 oa = _mm_setr_ps(o[0].angular, o[1].angular, o[2].angular, o[3].angular);
  f4 bx = _mm_add_ps(_mm_add_ps(zero, _mm_mul_ps(ox, one)), _mm_mul_ps(sx, vw));
  f4 by = _mm_add_ps(_mm_add_ps(zero, _mm_mul_ps(oy, one)), _mm_mul_ps(sy, vw));
  f4 ba = _mm_add_ps(_mm_add_ps(zero, _mm_mul_ps(oa, one)), _mm_mul_ps(zero, vw));
  f4_clip(&bx, &by, vacc, &bad);
  const f4 vaacc = _mm_setr_ps(l[0]->max_angular_acceleration, l[1]->max_angular_acceleration,
                               l[2]->max_angular_acceleration, l[3]->max_angular_acceleration);
  ba = f4_clamp(ba, f4_neg(vaacc), vaacc);
  float rx[4], ry[4], ra[4];
  _mm_storeu_ps(rx, bx);
  _mm_storeu_ps(ry, by);
  _mm_storeu_ps(ra, ba);
  int redo = _mm_movemask_ps(bad), done = 0;
  for (int j = 0; j < 4; j++) {
    if (redo & (1 << j)) {
      out[j] = separation_blend(s[j], l[j], p[j], weight[j], nxy[j], nrad[j], n[j], o[j]);
    } else {
      out[j].linear = v2(rx[j], ry[j]);
      out[j].angular = ra[j];
      done++;
    }
  }
  return done;
#else
  for (int j = 0; j < 4; j++)
    out[j] = separation_blend(s[j], l[j], p[j], weight[j], nxy[j], nrad[j], n[j], o[j]);
  return 0;
#endif
}

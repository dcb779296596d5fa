/* simdw.h: the core's float arithmetic for W lanes, written once.
 *
 * Included with BL_W 4 (SSE2, x86-64's baseline; steering.c, path.c and
 * batch.c) or BL_W 8 (AVX: every function built with target("avx"), for
 * callers that choose it at run time; batch.c), it defines the helpers and
 * the batch kinds' steering as static inline functions named name_4 or
 * name_8 (BL(name)). The arithmetic is the operators + - * / of the
 * compilers' vector types (__m128 and __m256 are such types in GCC and
 * clang) and the intrinsics below for the rest; the core is built with
 * -ffp-contract=off, so nothing is fused, and IEEE single add, mul, div and
 * sqrt round alike at every width. Each function does, per lane, the
 * operations of the scalar code it mirrors in the same order, each branch a
 * compare with the same predicate and a select, so NaN takes the same side
 * as in the scalar code; the lanes outside the exact range (named at each
 * function) are ORed into *bad for the caller to redo with the scalar code.
 * Not a public header: no include guard; simdw_end.h undefines its macros
 * (include it before including this file again with another width). */

#if BL_W == 4
#define VF        __m128
#define BL(name)  name##_4
#define BL_INLINE static inline __attribute__((always_inline))
#define BL_FN     static
#include <emmintrin.h>
#define V1(x)         _mm_set1_ps(x)
#define VZERO         _mm_setzero_ps()
#define VSQRT(a)      _mm_sqrt_ps(a)
#define VAND(a, b)    _mm_and_ps(a, b)
#define VOR(a, b)     _mm_or_ps(a, b)
#define VANDN(m, a)   _mm_andnot_ps(m, a) /* ~m & a */
#define VXOR(a, b)    _mm_xor_ps(a, b)
#define VMIN(a, b)    _mm_min_ps(a, b) /* a < b ? a : b */
#define VMAX(a, b)    _mm_max_ps(a, b) /* a > b ? a : b */
#define VSEL(m, a, b) _mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b))
#define VLT(a, b)     _mm_cmplt_ps(a, b)
#define VLE(a, b)     _mm_cmple_ps(a, b)
#define VGT(a, b)     _mm_cmpgt_ps(a, b)
#define VGE(a, b)     _mm_cmpge_ps(a, b)
#define VEQ(a, b)     _mm_cmpeq_ps(a, b)
#define VUNORD(a, b)  _mm_cmpunord_ps(a, b)
#define VMASK(a)      _mm_movemask_ps(a)
#define VSTORE(p, a)  _mm_storeu_ps(p, a)
#define VLOAD(p)      _mm_loadu_ps(p)
/* Lanes of scalars (a set, not a store and a load: narrow stores do not
 * forward to a wide load). */
#define VGATHER(e) _mm_setr_ps(e(0), e(1), e(2), e(3))

/* Four consecutive floats at p[i] (lane i) as four vectors (a transpose). */
BL_INLINE void BL(vrows4)(const float *const p[4], VF out[4]) {
  VF a = _mm_loadu_ps(p[0]), b = _mm_loadu_ps(p[1]), c = _mm_loadu_ps(p[2]), d = _mm_loadu_ps(p[3]);
  _MM_TRANSPOSE4_PS(a, b, c, d);
  out[0] = a;
  out[1] = b;
  out[2] = c;
  out[3] = d;
}

/* floorf for |x| < 2^23: truncate, and step down where that rounded up. */
BL_INLINE VF BL(vfloor)(VF x) {
  VF t = _mm_cvtepi32_ps(_mm_cvttps_epi32(x));
  return t - VAND(VGT(t, x), V1(1.0f));
}

#ifndef SIMDW_D2_WRAP
#define SIMDW_D2_WRAP
/* steer_wrap_angle_d's reduction for two doubles x = a + pi with a in
 * [-9, 9] (so x in (-2 pi, 4 pi)): there fmod(x, 2 pi) is x, or x - 2 pi
 * when x >= 2 pi (exact: Sterbenz), and the rest is the same double
 * operations in the same order. */
static inline __attribute__((always_inline)) __m128d d2_wrap(__m128d a) {
  const __m128d pi = _mm_set1_pd(3.14159265358979323846), two_pi = _mm_set1_pd(6.28318530717958647692);
  __m128d x = _mm_add_pd(a, pi);
  __m128d over = _mm_cmpge_pd(x, two_pi);
  x = _mm_or_pd(_mm_and_pd(over, _mm_sub_pd(x, two_pi)), _mm_andnot_pd(over, x));
  __m128d low = _mm_cmple_pd(x, _mm_setzero_pd());
  x = _mm_or_pd(_mm_and_pd(low, _mm_add_pd(x, two_pi)), _mm_andnot_pd(low, x));
  return _mm_sub_pd(x, pi);
}
#endif

/* steer_wrap_angle_d's reduction of four floats a in [-9, 9], as doubles. */
BL_INLINE VF BL(vwrap_d)(VF a) {
  VF lo = _mm_cvtpd_ps(d2_wrap(_mm_cvtps_pd(a)));
  VF hi = _mm_cvtpd_ps(d2_wrap(_mm_cvtps_pd(_mm_movehl_ps(a, a))));
  return _mm_movelh_ps(lo, hi);
}

#elif BL_W == 8
#define VF        __m256
#define BL(name)  name##_8
#define BL_INLINE static inline __attribute__((always_inline, target("avx")))
#define BL_FN     static __attribute__((target("avx")))
#include <immintrin.h>
#define V1(x)         _mm256_set1_ps(x)
#define VZERO         _mm256_setzero_ps()
#define VSQRT(a)      _mm256_sqrt_ps(a)
#define VAND(a, b)    _mm256_and_ps(a, b)
#define VOR(a, b)     _mm256_or_ps(a, b)
#define VANDN(m, a)   _mm256_andnot_ps(m, a)
#define VXOR(a, b)    _mm256_xor_ps(a, b)
#define VMIN(a, b)    _mm256_min_ps(a, b)
#define VMAX(a, b)    _mm256_max_ps(a, b)
/* Not blendv: GCC 12 folds it into a generic select, which it then splits
 * lane by lane in a function built with target("avx"). */
#define VSEL(m, a, b) _mm256_or_ps(_mm256_and_ps(m, a), _mm256_andnot_ps(m, b))
/* SSE's predicates: ordered (false with NaN). */
#define VLT(a, b)     _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define VLE(a, b)     _mm256_cmp_ps(a, b, _CMP_LE_OQ)
#define VGT(a, b)     _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define VGE(a, b)     _mm256_cmp_ps(a, b, _CMP_GE_OQ)
#define VEQ(a, b)     _mm256_cmp_ps(a, b, _CMP_EQ_OQ)
#define VUNORD(a, b)  _mm256_cmp_ps(a, b, _CMP_UNORD_Q)
#define VMASK(a)      _mm256_movemask_ps(a)
#define VSTORE(p, a)  _mm256_storeu_ps(p, a)
#define VLOAD(p)      _mm256_loadu_ps(p)
#define VGATHER(e)    _mm256_setr_ps(e(0), e(1), e(2), e(3), e(4), e(5), e(6), e(7))

BL_INLINE VF BL(vfloor)(VF x) { return _mm256_floor_ps(x); }

/* Four consecutive floats at p[i] (lane i) as four vectors: lanes i and
 * i + 4 share a row, and the four rows are transposed within each half. */
BL_INLINE void BL(vrows4)(const float *const p[8], VF out[4]) {
  VF r[4];
  for (int i = 0; i < 4; i++)
    r[i] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p[i])), _mm_loadu_ps(p[i + 4]), 1);
  VF t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  VF t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  out[0] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  out[1] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  out[2] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  out[3] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
}

BL_INLINE __m256d d4_wrap(__m256d a) {
  const __m256d pi = _mm256_set1_pd(3.14159265358979323846), two_pi = _mm256_set1_pd(6.28318530717958647692);
  __m256d x = _mm256_add_pd(a, pi);
  __m256d over = _mm256_cmp_pd(x, two_pi, _CMP_GE_OQ);
  x = _mm256_or_pd(_mm256_and_pd(over, _mm256_sub_pd(x, two_pi)), _mm256_andnot_pd(over, x));
  __m256d low = _mm256_cmp_pd(x, _mm256_setzero_pd(), _CMP_LE_OQ);
  x = _mm256_or_pd(_mm256_and_pd(low, _mm256_add_pd(x, two_pi)), _mm256_andnot_pd(low, x));
  return _mm256_sub_pd(x, pi);
}

BL_INLINE VF BL(vwrap_d)(VF a) {
  __m128 lo = _mm256_cvtpd_ps(d4_wrap(_mm256_cvtps_pd(_mm256_castps256_ps128(a))));
  __m128 hi = _mm256_cvtpd_ps(d4_wrap(_mm256_cvtps_pd(_mm256_extractf128_ps(a, 1))));
  return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
}
#else
#error "BL_W is 4 or 8"
#endif

#define VALL  VEQ(VZERO, VZERO) /* all ones */
#define VW    ((unsigned)BL_W)
#define VFULL ((1u << BL_W) - 1u)

/* m ? a : b, m from a compare (all ones or all zeros per lane). */
BL_INLINE VF BL(vsel)(VF m, VF a, VF b) { return VSEL(m, a, b); }
BL_INLINE VF BL(vneg)(VF a) { return VXOR(a, V1(-0.0f)); }
BL_INLINE VF BL(vabs)(VF a) { return VANDN(V1(-0.0f), a); }
/* steer_clampf: v < lo ? lo : (v > hi ? hi : v). */
BL_INLINE VF BL(vclamp)(VF v, VF lo, VF hi) { return BL(vsel)(VLT(v, lo), lo, BL(vsel)(VGT(v, hi), hi, v)); }

/* fminf / fmaxf where both are numbers and not two zeros (*bad gets the
 * other lanes: libm's choice of sign at two zeros is its own). */
BL_INLINE VF BL(vfmin)(VF a, VF b, VF *bad) {
  *bad = VOR(*bad, VOR(VUNORD(a, b), VAND(VEQ(a, VZERO), VEQ(b, VZERO))));
  return VMIN(a, b);
}
BL_INLINE VF BL(vfmax)(VF a, VF b, VF *bad) {
  *bad = VOR(*bad, VOR(VUNORD(a, b), VAND(VEQ(a, VZERO), VEQ(b, VZERO))));
  return VMAX(a, b);
}

/* steer_atan2 (vec2.h). */
BL_INLINE VF BL(vatan2)(VF y, VF x) {
  const VF zero = VZERO, one = V1(1.0f);
  VF ax = BL(vabs)(x), ay = BL(vabs)(y);
  VF xgt = VGT(ax, ay);
  VF hi = BL(vsel)(xgt, ax, ay), lo = BL(vsel)(xgt, ay, ax);
  VF a = lo / hi;
  VF big = VGT(a, V1(0.41421356237309503f));
  VF base = VAND(big, V1(0.78539816339744831f));
  a = BL(vsel)(big, (a - one) / (a + one), a);
  VF z = a * a;
  VF poly = ((((V1(8.05374449538e-2f) * z - V1(1.38776856032e-1f)) * z + V1(1.99777106478e-1f)) * z -
              V1(3.33329491539e-1f)) *
             z * a) +
            a;
  VF r = base + poly;
  r = BL(vsel)(VGT(ay, ax), V1(1.57079632679489662f) - r, r);
  r = BL(vsel)(VLT(x, zero), V1(3.14159265358979324f) - r, r);
  r = BL(vsel)(VLT(y, zero), BL(vneg)(r), r);
  return VAND(VGT(hi, zero), r); /* !(hi > 0): 0 */
}

/* steer_wrap_angle for angles in [-9, 9]; *bad gets the lanes outside, NaN
 * passes through as in the scalar code. */
BL_INLINE VF BL(vwrap)(VF a, VF *bad) {
  const VF pi = V1(STEER_PI);
  VF out = VOR(VGT(a, pi), VLE(a, BL(vneg)(pi)));
  if (!VMASK(out))
    return a; /* the common case: nothing to wrap */
  *bad = VOR(*bad, VANDN(VLE(BL(vabs)(a), V1(9.0f)), out));
  VF f = BL(vwrap_d)(a);
  f = BL(vsel)(VLE(f, BL(vneg)(pi)), pi, f); /* f <= -STEER_PI ? STEER_PI : f */
  return BL(vsel)(out, f, a);
}

/* steer_sincos for |theta| < 1e5; *bad gets the other lanes (and NaN). The
 * quadrant (int)k & 3 is k - 4 floor(k / 4), exact in floats there. */
BL_INLINE void BL(vsincos)(VF theta, VF *s, VF *c, VF *bad) {
  *bad = VOR(*bad, VANDN(VLT(BL(vabs)(theta), V1(1e5f)), VALL));
  VF k = BL(vfloor)(theta * V1(0.63661977236758134f) + V1(0.5f));
  VF x = ((theta - k * V1(1.5703125f)) - k * V1(4.8375129699707031e-4f)) - k * V1(7.5497899548918821e-8f);
  VF z = x * x;
  VF sn = ((V1(-1.9515295891e-4f) * z + V1(8.3321608736e-3f)) * z - V1(1.6666654611e-1f)) * z * x + x;
  VF cs =
      ((V1(2.443315711809948e-5f) * z - V1(1.388731625493765e-3f)) * z + V1(4.166664568298827e-2f)) * z * z -
      V1(0.5f) * z + V1(1.0f);
  VF q = k - V1(4.0f) * BL(vfloor)(k * V1(0.25f));
  /* 0 (sn, cs), 1 (cs, -sn), 2 (-sn, -cs), 3 (-cs, sn). */
  VF odd = VOR(VEQ(q, V1(1.0f)), VEQ(q, V1(3.0f)));
  VF s_neg = VGT(q, V1(1.5f));
  VF c_neg = VOR(VEQ(q, V1(1.0f)), VEQ(q, V1(2.0f)));
  VF rs = BL(vsel)(odd, cs, sn), rc = BL(vsel)(odd, sn, cs);
  *s = BL(vsel)(s_neg, BL(vneg)(rs), rs);
  *c = BL(vsel)(c_neg, BL(vneg)(rc), rc);
}

/* v2_clip; *bad gets the lanes whose square overflowed. */
BL_INLINE void BL(vclip)(VF *x, VF *y, VF max_len, VF *bad) {
  VF l2 = *x * *x + *y * *y;
  VF cut = VAND(VGT(l2, max_len * max_len), VGT(l2, VZERO));
  *bad = VOR(*bad, VANDN(VLE(l2, V1(FLT_MAX)), cut));
  VF k = max_len / VSQRT(l2);
  *x = BL(vsel)(cut, *x * k, *x);
  *y = BL(vsel)(cut, *y * k, *y);
}

/* approach_speed (steering.c): the ramp and half-limit curve with slow_radius > 0,
 * the curve of ARRIVE_BRAKE_SHARE (0.9) of the limit with slow_radius 0. */
BL_INLINE VF BL(vapproach)(VF dist, VF max_speed, VF max_acc, VF slow_radius, VF time_to_target) {
  VF ramped = VLT(VZERO, slow_radius);
  VF speed = BL(vsel)(VAND(ramped, VLT(dist, slow_radius)), max_speed * dist / slow_radius, max_speed);
  VF acc = V1(0.9f) * max_acc;
  VF lag = acc * time_to_target;
  VF physical = VSQRT(lag * lag + V1(2.0f) * acc * dist) - lag;
  VF braking = BL(vsel)(ramped, VSQRT(max_acc * dist), physical);
  speed = BL(vsel)(VLT(braking, speed), braking, speed);
  VF damped = dist / (V1(4.0f) * time_to_target);
  return BL(vsel)(VLT(damped, speed), damped, speed);
}

/* The angular part of steer_face toward direction (dx, dy): a rotation brake
 * for the zero direction or inside the dead band, else steer_align. */
BL_INLINE VF BL(vface)(VF dx, VF dy, VF theta, VF omega, VF mr, VF maa, VF attt, VF atr, VF asr, VF *bad) {
  const VF zero = VZERO;
  VF nmaa = BL(vneg)(maa);
  VF brake = BL(vclamp)(BL(vneg)(omega) / attt, nmaa, maa);
  VF still = VEQ(dx * dx + dy * dy, zero);
  VF wrap_bad = zero;
  VF error = BL(vwrap)(BL(vatan2)(dy, dx) - theta, &wrap_bad);
  *bad = VOR(*bad, VANDN(still, wrap_bad)); /* a still direction brakes: no angle read */
  VF size = BL(vabs)(error);
  VF rate = BL(vapproach)(size, mr, maa, asr, attt);
  rate = BL(vsel)(VLT(error, zero), BL(vneg)(rate), rate);
  VF turn = BL(vclamp)((rate - omega) / attt, nmaa, maa);
  return BL(vsel)(VOR(still, VLT(size, atr)), brake, turn);
}

/* steer_integrate_dynamic of the output (lx, ly, ang) from the state in
 * p*, v*, th, om (results in place). */
BL_INLINE void BL(vintegrate_dynamic)(VF lx, VF ly, VF ang, VF ms, VF ma, VF mr, VF maa, VF t, VF *px, VF *py,
                                      VF *vx, VF *vy, VF *th, VF *om, VF *bad) {
  BL(vclip)(&lx, &ly, ma, bad);
  ang = BL(vclamp)(ang, BL(vneg)(maa), maa);
  VF nvx = *vx + lx * t, nvy = *vy + ly * t;
  BL(vclip)(&nvx, &nvy, ms, bad);
  VF rot = BL(vclamp)(*om + ang * t, BL(vneg)(mr), mr);
  *px = *px + nvx * t;
  *py = *py + nvy * t;
  *th = BL(vwrap)(*th + rot * t, bad);
  *vx = nvx;
  *vy = nvy;
  *om = rot;
}

/* ---- the steering of the batch kinds, lane by lane ------------------------- */

/* steer_arrive's linear part toward the point (f[10], f[11]) and
 * steer_look_where_going's angular part; f: the lanes of the agents'
 * records, laid out as world_batch_rec for arrive + look (limits, then
 * time_to_target, target_radius, slow_radius, align_target_radius,
 * align_slow_radius, align_time_to_target, the point). */
BL_INLINE void BL(varrive_look)(VF px, VF py, VF vx, VF vy, VF th, VF om, const VF *f, VF *lx, VF *ly,
                                VF *ang, VF *bad) {
  const VF zero = VZERO;
  const VF ms = f[0], ma = f[1], mr = f[2], maa = f[3];
  const VF ttt = f[4], tr = f[5], sr = f[6], atr = f[7], asr = f[8], attt = f[9], tx = f[10], ty = f[11];
  /* steer_arrive: approach_velocity outside target_radius, else rest. */
  VF ox = tx - px, oy = ty - py;
  VF o2 = ox * ox + oy * oy;
  VF dist = VSQRT(o2);
  VF speed = BL(vapproach)(dist, ms, ma, sr, ttt);
  VF k = speed / dist;
  VF go = VAND(VGE(o2, tr * tr), VGT(dist, zero));
  VF dx = VAND(go, ox * k), dy = VAND(go, oy * k);
  BL(vclip)(&dx, &dy, ms, bad);
  /* seek_linear */
  VF inv = V1(1.0f) / ttt;
  *lx = (dx - vx) * inv;
  *ly = (dy - vy) * inv;
  BL(vclip)(lx, ly, ma, bad);
  /* steer_look_where_going: face along the velocity. */
  *ang = BL(vface)(vx, vy, th, om, mr, maa, attt, atr, asr, bad);
}

/* steer_wander from its two draws already made (bin: the binomials) and the
 * wander angles wa_in: the new wander angles *wa and the output; f: the
 * record's lanes for wander (limits, then wander_rate, wander_offset,
 * wander_radius, align_target_radius, align_slow_radius,
 * align_time_to_target). */
BL_INLINE void BL(vwander)(VF px, VF py, VF th, VF om, VF wa_in, VF bin, VF t, const VF *f, VF *lx, VF *ly,
                           VF *ang, VF *wa, VF *bad) {
  const VF ma = f[1], mr = f[2], maa = f[3];
  const VF wr = f[4], off = f[5], rad = f[6], atr = f[7], asr = f[8], attt = f[9];
  *wa = BL(vwrap)(wa_in + (bin * wr) * t, bad);
  VF hs, hc, ts, tc;
  BL(vsincos)(th, &hs, &hc, bad);
  VF cx = px + hc * off, cy = py + hs * off;
  BL(vsincos)(th + *wa, &ts, &tc, bad);
  VF tx = cx + tc * rad, ty = cy + ts * rad;
  *ang = BL(vface)(tx - px, ty - py, th, om, mr, maa, attt, atr, asr, bad);
  *lx = hc * ma;
  *ly = hs * ma;
}

/* steer_path_steer_heading for a live path, not finished, not lazy: toward
 * the node (tx, ty), braking on a final leg (is_fin, hr half the node
 * radius), or an arc turn's rate (is_turn). Gives the output and the
 * agent's speed |v| (*speed_now). */
BL_INLINE void BL(vpath_heading)(VF px, VF py, VF vx, VF vy, VF th, VF ms, VF ma, VF mr, VF tx, VF ty, VF hr,
                                 VF is_fin, VF is_turn, VF rate, VF *o_rot, VF *o_speed, VF *speed_now,
                                 VF *bad) {
  const VF zero = VZERO;
  VF bad_turn = zero, bad_go = zero;
  *speed_now = VSQRT(vx * vx + vy * vy);
  /* A running arc: its rate, at the speed it started with. */
  VF turn_speed = BL(vfmin)(*speed_now, ms, &bad_turn);
  /* Else toward the node. */
  VF ox = tx - px, oy = ty - py;
  VF d2 = ox * ox + oy * oy;
  VF dist = VSQRT(d2);
  VF bad_fin = zero;
  VF room = BL(vfmax)(dist - hr, zero, &bad_fin);
  VF brake = BL(vfmin)(ms, VSQRT((V1(2.0f) * ma) * room), &bad_fin);
  bad_go = VAND(is_fin, bad_fin);
  VF speed = BL(vsel)(is_fin, brake, ms);
  /* reachable_speed */
  VF hs, hc;
  BL(vsincos)(th, &hs, &hc, &bad_go);
  VF sin_b = BL(vabs)(hc * oy - hs * ox) / dist;
  VF cap = (mr * dist) / (V1(2.0f) * sin_b);
  VF capped = BL(vsel)(VLT(cap, speed), cap, speed);
  speed = BL(vsel)(VOR(VLE(dist, zero), VLE(sin_b, zero)), speed, capped);
  /* turn_gain (PATH_GAIN_DISTANCE 1 m), then steer_heading_turn_toward with it */
  VF fast = BL(vfmax)(speed, *speed_now, &bad_go);
  VF near = VAND(VLT(dist, V1(1.0f)), VGT(dist, zero));
  VF gain = BL(vsel)(near, fast * (V1(1.0f) / dist), fast);
  VF still = VEQ(d2, zero);
  VF wrap_bad = zero;
  VF diff = BL(vwrap)(BL(vatan2)(oy, ox) - th, &wrap_bad);
  bad_go = VOR(bad_go, VANDN(still, wrap_bad));
  VF rot = VANDN(still, BL(vclamp)(diff * gain, BL(vneg)(mr), mr));
  *o_rot = BL(vsel)(is_turn, rate, rot);
  *o_speed = BL(vsel)(is_turn, turn_speed, speed);
  *bad = VOR(*bad, BL(vsel)(is_turn, bad_turn, bad_go));
}

/* steer_integrate_heading of the output (o_rot, o_speed) from the state in
 * p*, th and the speed |v| (results in place). */
BL_INLINE void BL(vintegrate_heading)(VF o_rot, VF o_speed, VF speed_now, VF ms, VF ma, VF mr, VF t, VF *px,
                                      VF *py, VF *vx, VF *vy, VF *th, VF *om, VF *bad) {
  const VF zero = VZERO;
  VF bad_up = zero, bad_down = zero;
  VF want = BL(vclamp)(o_speed, zero, ms);
  VF step = ma * t;
  VF up = VGT(want, speed_now);
  VF faster = BL(vfmin)(want, speed_now + step, &bad_up);
  VF slower = BL(vfmax)(want, speed_now - step, &bad_down);
  *bad = VOR(*bad, BL(vsel)(up, bad_up, bad_down));
  VF sp = BL(vsel)(up, faster, slower);
  sp = BL(vsel)(VGT(sp, ms), ms, sp);
  *om = BL(vclamp)(o_rot, BL(vneg)(mr), mr);
  *th = BL(vwrap)(*th + *om * t, bad);
  VF hs, hc;
  BL(vsincos)(*th, &hs, &hc, bad);
  VF run = sp * t;
  *px = *px + hc * run;
  *py = *py + hs * run;
  *vx = hc * sp;
  *vy = hs * sp;
}

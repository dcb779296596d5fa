/* dense.c: separation and its blend, four agents at a time (dense.h).
 *
 * Two vector paths with the same results: four lanes with SSE2 (x86-64's
 * baseline), and, where the processor has AVX (checked once at run time),
 * eight lanes that take two neighbours of the four agents at a time. The
 * pushes are computed with the same operations (IEEE single sqrt and
 * division round alike in every width), and each agent's pushes are still
 * added one by one in neighbour order, so both are the scalar code's results
 * to the bit. The separation is divider-bound (a square root and two
 * divisions per neighbour), which the eight lanes halve. */
#include "dense.h"

#include <float.h>

#include "simd.h"

#if STEER_SIMD && defined(__GNUC__) && !defined(__AVX__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define DENSE_AVX 1 /* an AVX variant chosen at run time */
#else
#define DENSE_AVX 0
#endif

/* -1: not decided yet. Relaxed atomics: threads deciding at once all store
 * the same value. */
static int use_avx = -1;

int steer_dense_set_avx(int on) {
  int was = steer_dense_avx();
  __atomic_store_n(&use_avx, on && DENSE_AVX ? steer_dense_avx_supported() : 0, __ATOMIC_RELAXED);
  return was;
}

int steer_dense_avx_supported(void) {
#if DENSE_AVX
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") ? 1 : 0;
#else
  return 0;
#endif
}

int steer_dense_avx(void) {
  int on = __atomic_load_n(&use_avx, __ATOMIC_RELAXED);
  if (on < 0) {
    on = steer_dense_avx_supported();
    __atomic_store_n(&use_avx, on, __ATOMIC_RELAXED);
  }
  return on;
}

/* steer_separation for one agent whose n neighbours are records rec[nb[i]]
 * (the scalar code the index paths are checked against and fall back to). */
static steer_output separation_idx(const steer_state *s, const steer_limits *l, const steer_params *p,
                                   const steer_grid_rec *rec, const uint32_t *nb, uint32_t n) {
  vec2 xy[STEER_SEPARATION_X4_MAX];
  float r[STEER_SEPARATION_X4_MAX];
  for (uint32_t i = 0; i < n; i++) {
    xy[i] = v2(rec[nb[i]].x, rec[nb[i]].y);
    r[i] = rec[nb[i]].r;
  }
  return steer_separation(s, l, p, xy, r, (int)n);
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

/* After the sums of the pushes (sx, sy): steer_separation's clip, stored in
 * the lanes not in bad; returns the lanes in bad (bit j: lane j), which the
 * caller redoes with the scalar steer_separation. */
SIMD_INLINE int sep_clip_store(f4 sx, f4 sy, f4 bad, const steer_limits *const l[4], steer_output sep[4]) {
  const f4 vacc = _mm_setr_ps(l[0]->max_acceleration, l[1]->max_acceleration, l[2]->max_acceleration,
                              l[3]->max_acceleration);
  f4_clip(&sx, &sy, vacc, &bad);
  float rx[4], ry[4];
  _mm_storeu_ps(rx, sx);
  _mm_storeu_ps(ry, sy);
  int redo = _mm_movemask_ps(bad);
  for (int j = 0; j < 4; j++) {
    sep[j].linear = v2(rx[j], ry[j]);
    sep[j].angular = 0.0f;
  }
  return redo;
}

/* sep_clip_store, then the scalar steer_separation for the lanes in bad;
 * returns the lanes the vector path computed. */
SIMD_INLINE int sep_finish(f4 sx, f4 sy, f4 bad, const steer_state *const s[4],
                           const steer_limits *const l[4], const steer_params *const p[4],
                           const vec2 *const nxy[4], const float *const nrad[4], const uint32_t n[4],
                           steer_output sep[4]) {
  int redo = sep_clip_store(sx, sy, bad, l, sep), done = 4;
  for (int j = 0; j < 4; j++)
    if (redo & (1 << j)) {
      sep[j] = steer_separation(s[j], l[j], p[j], nxy[j], nrad[j], (int)n[j]);
      done--;
    }
  return done;
}

/* The same for neighbours given by index into rec. */
SIMD_INLINE int sep_finish_idx(f4 sx, f4 sy, f4 bad, const steer_state *const s[4],
                               const steer_limits *const l[4], const steer_params *const p[4],
                               const steer_grid_rec *rec, const uint32_t *const nb[4], const uint32_t n[4],
                               steer_output sep[4]) {
  int redo = sep_clip_store(sx, sy, bad, l, sep), done = 4;
  for (int j = 0; j < 4; j++)
    if (redo & (1 << j)) {
      sep[j] = separation_idx(s[j], l[j], p[j], rec, nb[j], n[j]);
      done--;
    }
  return done;
}
#endif

int steer_blend_separation_x4(const steer_output o[4], const steer_output sep[4], const float weight[4],
                              const steer_limits *const l[4], steer_output out[4]) {
#if STEER_SIMD
  /* steer_blend: from zero, + o * 1, + sep * weight, then the clips. */
  const f4 zero = _mm_setzero_ps(), one = f4_set(1.0f);
  const f4 vacc = _mm_setr_ps(l[0]->max_acceleration, l[1]->max_acceleration, l[2]->max_acceleration,
                              l[3]->max_acceleration);
  const f4 vw = _mm_setr_ps(weight[0], weight[1], weight[2], weight[3]);
  const f4 ox = _mm_setr_ps(o[0].linear.x, o[1].linear.x, o[2].linear.x, o[3].linear.x);
  const f4 oy = _mm_setr_ps(o[0].linear.y, o[1].linear.y, o[2].linear.y, o[3].linear.y);
  const f4 oa = _mm_setr_ps(o[0].angular, o[1].angular, o[2].angular, o[3].angular);
  const f4 sx = _mm_setr_ps(sep[0].linear.x, sep[1].linear.x, sep[2].linear.x, sep[3].linear.x);
  const f4 sy = _mm_setr_ps(sep[0].linear.y, sep[1].linear.y, sep[2].linear.y, sep[3].linear.y);
  const f4 sa = _mm_setr_ps(sep[0].angular, sep[1].angular, sep[2].angular, sep[3].angular);
  f4 bad = zero;
  f4 bx = _mm_add_ps(_mm_add_ps(zero, _mm_mul_ps(ox, one)), _mm_mul_ps(sx, vw));
  f4 by = _mm_add_ps(_mm_add_ps(zero, _mm_mul_ps(oy, one)), _mm_mul_ps(sy, vw));
  f4 ba = _mm_add_ps(_mm_add_ps(zero, _mm_mul_ps(oa, one)), _mm_mul_ps(sa, vw));
  f4_clip(&bx, &by, vacc, &bad);
  const f4 vaacc = _mm_setr_ps(l[0]->max_angular_acceleration, l[1]->max_angular_acceleration,
                               l[2]->max_angular_acceleration, l[3]->max_angular_acceleration);
  ba = f4_clamp(ba, f4_neg(vaacc), vaacc);
  /* A NaN's sign and payload depend on which operand the compiled scalar
   * code names first: NaN lanes take the scalar code. */
  bad = _mm_or_ps(bad, _mm_or_ps(_mm_cmpunord_ps(bx, by), _mm_cmpunord_ps(ba, ba)));
  float rx[4], ry[4], ra[4];
  _mm_storeu_ps(rx, bx);
  _mm_storeu_ps(ry, by);
  _mm_storeu_ps(ra, ba);
  int redo = _mm_movemask_ps(bad), done = 0;
  for (int j = 0; j < 4; j++) {
    if (redo & (1 << j)) {
      steer_output both[2] = {o[j], sep[j]};
      float weights[2] = {1.0f, weight[j]};
      out[j] = steer_blend(both, weights, 2, l[j]);
    } else {
      out[j].linear = v2(rx[j], ry[j]);
      out[j].angular = ra[j];
      done++;
    }
  }
  return done;
#else
  for (int j = 0; j < 4; j++) {
    steer_output both[2] = {o[j], sep[j]};
    float weights[2] = {1.0f, weight[j]};
    out[j] = steer_blend(both, weights, 2, l[j]);
  }
  return 0;
#endif
}

#if STEER_SIMD
/* Neighbour i of agent j, or zeros past its count (those lanes are masked). */
#define NB_X(j, i) ((i) < n[j] ? nxy[j][i].x : 0.0f)
#define NB_Y(j, i) ((i) < n[j] ? nxy[j][i].y : 0.0f)
#define NB_R(j, i) ((i) < n[j] ? nrad[j][i] : 0.0f)

/* The four-lane separations' constants (agent j in lane j). Built from
 * scalars with set (not stored and loaded back as a vector: four narrow
 * stores do not forward to one wide load). Returns the largest count. */
typedef struct sep4 {
  f4 base, acc, px, py; /* separation radius + own radius (reach = it + the neighbour's radius, as
                           separation_push adds them), max acceleration, position */
  __m128i count;
} sep4;

SIMD_INLINE uint32_t sep4_setup(const steer_state *const s[4], const steer_limits *const l[4],
                                const steer_params *const p[4], const uint32_t n[4], sep4 *k) {
  uint32_t most = n[0];
  for (int j = 1; j < 4; j++)
    most = n[j] > most ? n[j] : most;
  k->base = _mm_setr_ps(p[0]->separation_radius + l[0]->radius, p[1]->separation_radius + l[1]->radius,
                        p[2]->separation_radius + l[2]->radius, p[3]->separation_radius + l[3]->radius);
  k->acc = _mm_setr_ps(l[0]->max_acceleration, l[1]->max_acceleration, l[2]->max_acceleration,
                       l[3]->max_acceleration);
  k->px = _mm_setr_ps(s[0]->position.x, s[1]->position.x, s[2]->position.x, s[3]->position.x);
  k->py = _mm_setr_ps(s[0]->position.y, s[1]->position.y, s[2]->position.y, s[3]->position.y);
  k->count = _mm_setr_epi32((int)n[0], (int)n[1], (int)n[2], (int)n[3]);
  return most;
}

/* Neighbour i of the four agents (nx, ny, nr), pushed into the sums of the
 * lanes that have one (i below their count). */
SIMD_INLINE void sep4_push(const sep4 *k, uint32_t i, f4 nx, f4 ny, f4 nr, f4 *sx, f4 *sy, f4 *bad) {
  const f4 zero = _mm_setzero_ps(), one = f4_set(1.0f);
  f4 live = _mm_castsi128_ps(_mm_cmpgt_epi32(k->count, _mm_set1_epi32((int)i)));
  f4 reach = _mm_add_ps(k->base, nr);
  f4 ax = _mm_sub_ps(k->px, nx), ay = _mm_sub_ps(k->py, ny);
  f4 d2 = _mm_add_ps(_mm_mul_ps(ax, ax), _mm_mul_ps(ay, ay));
  /* separation_push: reach > 0 and not d2 >= reach^2 (NaN as there). */
  f4 in =
      _mm_and_ps(live, _mm_and_ps(_mm_cmpgt_ps(reach, zero), _mm_cmpnge_ps(d2, _mm_mul_ps(reach, reach))));
  f4 d = _mm_sqrt_ps(d2);
  /* Not d > 0 (coincident, or NaN): the push is along the heading. */
  *bad = _mm_or_ps(*bad, _mm_andnot_ps(_mm_cmpgt_ps(d, zero), in));
  f4 inv = _mm_div_ps(one, d);
  f4 f = _mm_div_ps(_mm_mul_ps(k->acc, _mm_sub_ps(reach, d)), reach);
  *sx = f4_sel(in, _mm_add_ps(*sx, _mm_mul_ps(_mm_mul_ps(ax, inv), f)), *sx);
  *sy = f4_sel(in, _mm_add_ps(*sy, _mm_mul_ps(_mm_mul_ps(ay, inv), f)), *sy);
}

static int sep_sse(const steer_state *const s[4], const steer_limits *const l[4],
                   const steer_params *const p[4], const vec2 *const nxy[4], const float *const nrad[4],
                   const uint32_t n[4], steer_output sep[4]) {
  sep4 k;
  const uint32_t most = sep4_setup(s, l, p, n, &k);
  f4 sx = _mm_setzero_ps(), sy = sx, bad = sx;
  for (uint32_t i = 0; i < most; i++) {
    f4 nx = _mm_setr_ps(NB_X(0, i), NB_X(1, i), NB_X(2, i), NB_X(3, i));
    f4 ny = _mm_setr_ps(NB_Y(0, i), NB_Y(1, i), NB_Y(2, i), NB_Y(3, i));
    f4 nr = _mm_setr_ps(NB_R(0, i), NB_R(1, i), NB_R(2, i), NB_R(3, i));
    sep4_push(&k, i, nx, ny, nr, &sx, &sy, &bad);
  }
  return sep_finish(sx, sy, bad, s, l, p, nxy, nrad, n, sep);
}

#if DENSE_AVX
/* The eight-lane paths' constants: lanes 0-3 and 4-7 are agents 0-3 (for
 * neighbours i and i + 1). Returns the largest count. */
typedef struct sep8 {
  __m256 base, acc, px, py; /* separation radius + own radius, max acceleration, position */
  __m256 count, step;       /* the counts (up to 32: exact as floats), and 0 | 1 for neighbour i | i + 1 */
} sep8;

__attribute__((target("avx"), always_inline)) static inline uint32_t
sep8_setup(const steer_state *const s[4], const steer_limits *const l[4], const steer_params *const p[4],
           const uint32_t n[4], sep8 *c) {
  uint32_t most = n[0];
  for (int j = 1; j < 4; j++)
    most = n[j] > most ? n[j] : most;
  const float b0 = p[0]->separation_radius + l[0]->radius, b1 = p[1]->separation_radius + l[1]->radius,
              b2 = p[2]->separation_radius + l[2]->radius, b3 = p[3]->separation_radius + l[3]->radius;
  c->base = _mm256_setr_ps(b0, b1, b2, b3, b0, b1, b2, b3);
  c->acc = _mm256_setr_ps(l[0]->max_acceleration, l[1]->max_acceleration, l[2]->max_acceleration,
                          l[3]->max_acceleration, l[0]->max_acceleration, l[1]->max_acceleration,
                          l[2]->max_acceleration, l[3]->max_acceleration);
  c->px = _mm256_setr_ps(s[0]->position.x, s[1]->position.x, s[2]->position.x, s[3]->position.x,
                         s[0]->position.x, s[1]->position.x, s[2]->position.x, s[3]->position.x);
  c->py = _mm256_setr_ps(s[0]->position.y, s[1]->position.y, s[2]->position.y, s[3]->position.y,
                         s[0]->position.y, s[1]->position.y, s[2]->position.y, s[3]->position.y);
  c->count = _mm256_setr_ps((float)n[0], (float)n[1], (float)n[2], (float)n[3], (float)n[0], (float)n[1],
                            (float)n[2], (float)n[3]);
  c->step = _mm256_setr_ps(0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f, 1.0f);
  return most;
}

/* The same with eight lanes: lanes 0-3 neighbour i of agents 0-3, lanes 4-7
 * neighbour i + 1; the sums take the low half, then the high half. The
 * predicates are the SSE ones (ordered greater-than; "not greater or equal",
 * true for NaN). */
__attribute__((target("avx"))) static int
sep_avx(const steer_state *const s[4], const steer_limits *const l[4], const steer_params *const p[4],
        const vec2 *const nxy[4], const float *const nrad[4], const uint32_t n[4], steer_output sep[4]) {
  sep8 k;
  const uint32_t most = sep8_setup(s, l, p, n, &k);
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  const __m256 vbase = k.base, vacc = k.acc, vpx = k.px, vpy = k.py, count = k.count, step = k.step;
  __m128 sx = _mm_setzero_ps(), sy = _mm_setzero_ps();
  __m256 bad = zero;
  /* The pushes of two neighbours of each agent, added in neighbour order. */
#define SEP_AVX_PUSHES(nx, ny, nr, live)                                                                     \
  do {                                                                                                       \
    __m256 reach = _mm256_add_ps(vbase, nr);                                                                 \
    __m256 ax = _mm256_sub_ps(vpx, nx), ay = _mm256_sub_ps(vpy, ny);                                         \
    __m256 d2 = _mm256_add_ps(_mm256_mul_ps(ax, ax), _mm256_mul_ps(ay, ay));                                 \
    __m256 in =                                                                                              \
        _mm256_and_ps(live, _mm256_and_ps(_mm256_cmp_ps(reach, zero, _CMP_GT_OQ),                            \
                                          _mm256_cmp_ps(d2, _mm256_mul_ps(reach, reach), _CMP_NGE_UQ)));     \
    __m256 d = _mm256_sqrt_ps(d2);                                                                           \
    bad = _mm256_or_ps(bad, _mm256_andnot_ps(_mm256_cmp_ps(d, zero, _CMP_GT_OQ), in));                       \
    __m256 inv = _mm256_div_ps(one, d);                                                                      \
    __m256 f = _mm256_div_ps(_mm256_mul_ps(vacc, _mm256_sub_ps(reach, d)), reach);                           \
    __m256 px = _mm256_mul_ps(_mm256_mul_ps(ax, inv), f), py = _mm256_mul_ps(_mm256_mul_ps(ay, inv), f);     \
    /* A lane out of reach adds +0, which leaves a sum as it is: it starts at                                \
     * +0 and a sum of floats is never -0 in round-to-nearest. */                                            \
    px = _mm256_and_ps(in, px);                                                                              \
    py = _mm256_and_ps(in, py);                                                                              \
    sx = _mm_add_ps(sx, _mm256_castps256_ps128(px));                                                         \
    sy = _mm_add_ps(sy, _mm256_castps256_ps128(py));                                                         \
    sx = _mm_add_ps(sx, _mm256_extractf128_ps(px, 1));                                                       \
    sy = _mm_add_ps(sy, _mm256_extractf128_ps(py, 1));                                                       \
  } while (0)
  if (n[1] == n[0] && n[2] == n[0] && n[3] == n[0] && n[0] % 2 == 0) {
    /* The crowd's case: the same even count for all four, so neighbours i
     * and i + 1 of an agent are one 16-byte load, and a transpose gives the
     * lanes. */
    const __m256 all = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    for (uint32_t i = 0; i < most; i += 2) {
      __m128 a0 = _mm_loadu_ps(&nxy[0][i].x), a1 = _mm_loadu_ps(&nxy[1][i].x);
      __m128 a2 = _mm_loadu_ps(&nxy[2][i].x), a3 = _mm_loadu_ps(&nxy[3][i].x);
      _MM_TRANSPOSE4_PS(a0, a1, a2, a3); /* x of i, y of i, x of i + 1, y of i + 1 */
      __m256 nx = _mm256_insertf128_ps(_mm256_castps128_ps256(a0), a2, 1);
      __m256 ny = _mm256_insertf128_ps(_mm256_castps128_ps256(a1), a3, 1);
      __m128 r0 = _mm_castpd_ps(_mm_load_sd((const double *)(const void *)&nrad[0][i]));
      __m128 r1 = _mm_castpd_ps(_mm_load_sd((const double *)(const void *)&nrad[1][i]));
      __m128 r2 = _mm_castpd_ps(_mm_load_sd((const double *)(const void *)&nrad[2][i]));
      __m128 r3 = _mm_castpd_ps(_mm_load_sd((const double *)(const void *)&nrad[3][i]));
      __m128 u01 = _mm_unpacklo_ps(r0, r1), u23 = _mm_unpacklo_ps(r2, r3); /* ri0 ri1 rh0 rh1 */
      __m256 nr =
          _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_movelh_ps(u01, u23)), _mm_movehl_ps(u23, u01), 1);
      SEP_AVX_PUSHES(nx, ny, nr, all);
    }
    __m128 bad4 = _mm_or_ps(_mm256_castps256_ps128(bad), _mm256_extractf128_ps(bad, 1));
    return sep_finish(sx, sy, bad4, s, l, p, nxy, nrad, n, sep);
  }
  for (uint32_t i = 0; i < most; i += 2) {
    const uint32_t h = i + 1;
    __m256 nx = _mm256_setr_ps(NB_X(0, i), NB_X(1, i), NB_X(2, i), NB_X(3, i), NB_X(0, h), NB_X(1, h),
                               NB_X(2, h), NB_X(3, h));
    __m256 ny = _mm256_setr_ps(NB_Y(0, i), NB_Y(1, i), NB_Y(2, i), NB_Y(3, i), NB_Y(0, h), NB_Y(1, h),
                               NB_Y(2, h), NB_Y(3, h));
    __m256 nr = _mm256_setr_ps(NB_R(0, i), NB_R(1, i), NB_R(2, i), NB_R(3, i), NB_R(0, h), NB_R(1, h),
                               NB_R(2, h), NB_R(3, h));
    __m256 live = _mm256_cmp_ps(_mm256_add_ps(_mm256_set1_ps((float)i), step), count, _CMP_LT_OQ);
    SEP_AVX_PUSHES(nx, ny, nr, live);
  }
  __m128 bad4 = _mm_or_ps(_mm256_castps256_ps128(bad), _mm256_extractf128_ps(bad, 1));
  return sep_finish(sx, sy, bad4, s, l, p, nxy, nrad, n, sep);
}

/* sep_avx for neighbours by index. A record (x, y, cell position, radius) is
 * one 16-byte load; two agents' records of neighbours i and i + 1 in the two
 * halves of a register, unpacked, give the lanes. Lanes past a count read a
 * record of zeros and are masked off. */
__attribute__((target("avx"))) static int sep_avx_idx(const steer_state *const s[4],
                                                      const steer_limits *const l[4],
                                                      const steer_params *const p[4],
                                                      const steer_grid_rec *rec, const uint32_t *const nb[4],
                                                      const uint32_t n[4], steer_output sep[4]) {
  sep8 k;
  const uint32_t most = sep8_setup(s, l, p, n, &k);
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  const __m256 vbase = k.base, vacc = k.acc, vpx = k.px, vpy = k.py, count = k.count, step = k.step;
  static const float none[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  __m128 sx = _mm_setzero_ps(), sy = _mm_setzero_ps();
  __m256 bad = zero;
  const int even = n[1] == n[0] && n[2] == n[0] && n[3] == n[0] && n[0] % 2 == 0;
  for (uint32_t i = 0; i < most; i += 2) {
    const uint32_t h = i + 1;
    __m256 y[4];
    for (int j = 0; j < 4; j++) {
      const float *a = i < n[j] ? &rec[nb[j][i]].x : none, *c = h < n[j] ? &rec[nb[j][h]].x : none;
      y[j] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(a)), _mm_loadu_ps(c), 1);
    }
    __m256 u01 = _mm256_unpacklo_ps(y[0], y[1]), u23 = _mm256_unpacklo_ps(y[2], y[3]); /* x0 x1 y0 y1 | ... */
    __m256 v01 = _mm256_unpackhi_ps(y[0], y[1]), v23 = _mm256_unpackhi_ps(y[2], y[3]); /* p0 p1 r0 r1 | ... */
    __m256 nx = _mm256_shuffle_ps(u01, u23, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 ny = _mm256_shuffle_ps(u01, u23, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 nr = _mm256_shuffle_ps(v01, v23, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 live = even ? _mm256_castsi256_ps(_mm256_set1_epi32(-1))
                       : _mm256_cmp_ps(_mm256_add_ps(_mm256_set1_ps((float)i), step), count, _CMP_LT_OQ);
    SEP_AVX_PUSHES(nx, ny, nr, live);
  }
#undef SEP_AVX_PUSHES
  __m128 bad4 = _mm_or_ps(_mm256_castps256_ps128(bad), _mm256_extractf128_ps(bad, 1));
  return sep_finish_idx(sx, sy, bad4, s, l, p, rec, nb, n, sep);
}
#endif

/* sep_sse for neighbours by index: four records, transposed. */
static int sep_sse_idx(const steer_state *const s[4], const steer_limits *const l[4],
                       const steer_params *const p[4], const steer_grid_rec *rec, const uint32_t *const nb[4],
                       const uint32_t n[4], steer_output sep[4]) {
  sep4 k;
  const uint32_t most = sep4_setup(s, l, p, n, &k);
  static const float none[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  f4 sx = _mm_setzero_ps(), sy = sx, bad = sx;
  for (uint32_t i = 0; i < most; i++) {
    f4 c[4];
    for (int j = 0; j < 4; j++)
      c[j] = _mm_loadu_ps(i < n[j] ? &rec[nb[j][i]].x : none);
    _MM_TRANSPOSE4_PS(c[0], c[1], c[2], c[3]); /* x, y, cell position, radius */
    const f4 nx = c[0], ny = c[1], nr = c[3];
    sep4_push(&k, i, nx, ny, nr, &sx, &sy, &bad);
  }
  return sep_finish_idx(sx, sy, bad, s, l, p, rec, nb, n, sep);
}
#endif /* STEER_SIMD */

int steer_separation_x4(const steer_state *const s[4], const steer_limits *const l[4],
                        const steer_params *const p[4], const vec2 *const nxy[4], const float *const nrad[4],
                        const uint32_t n[4], steer_output sep[4]) {
#if DENSE_AVX
  if (steer_dense_avx())
    return sep_avx(s, l, p, nxy, nrad, n, sep);
#endif
#if STEER_SIMD
  return sep_sse(s, l, p, nxy, nrad, n, sep);
#else
  for (int j = 0; j < 4; j++)
    sep[j] = steer_separation(s[j], l[j], p[j], nxy[j], nrad[j], (int)n[j]);
  return 0;
#endif
}

int steer_separation_x4_idx(const steer_state *const s[4], const steer_limits *const l[4],
                            const steer_params *const p[4], const steer_grid_rec *rec,
                            const uint32_t *const nb[4], const uint32_t n[4], steer_output sep[4]) {
#if DENSE_AVX
  if (steer_dense_avx())
    return sep_avx_idx(s, l, p, rec, nb, n, sep);
#endif
#if STEER_SIMD
  return sep_sse_idx(s, l, p, rec, nb, n, sep);
#else
  for (int j = 0; j < 4; j++) {
    sep[j] = separation_idx(s[j], l[j], p[j], rec, nb[j], n[j]);
  }
  return 0;
#endif
}

int steer_separation_blend_x4(const steer_state *const s[4], const steer_limits *const l[4],
                              const steer_params *const p[4], const float weight[4], const vec2 *const nxy[4],
                              const float *const nrad[4], const uint32_t n[4], const steer_output o[4],
                              steer_output out[4]) {
  steer_output sep[4];
  int a = steer_separation_x4(s, l, p, nxy, nrad, n, sep);
  int b = steer_blend_separation_x4(o, sep, weight, l, out);
  /* Lanes that took the vector path in both. */
  return a < b ? a : b;
}

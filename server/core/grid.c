/* grid.c: uniform grid built by counting sort; k-nearest queries.
 *
 * A query's cost is in comparing candidates, and the obvious loop (test the
 * distance, insert into a sorted list) is bound by branch mispredictions: about
 * half the candidates pass the radius test, in no predictable pattern. The
 * query for up to STEER_GRID_FAST_K neighbours therefore runs without
 * data-dependent branches: a distance pass over a run of candidates writes every
 * candidate and advances the output only for those that pass (compaction), then
 * each survivor goes into a sorted top-k (k <= 16) held in up to eight SSE
 * registers by masks and blends. Rows are visited from the query's row outward, the admission
 * threshold shrinks to the k-th distance found so far, each row is clipped to
 * the chord of the threshold circle and rows beyond it are skipped, so most
 * candidates never get near the sort. Order among equal distances is by
 * position in cell order, which makes the visiting order irrelevant.
 *
 * With a guessed bound (the world's: last tick's k-th distance, widened by how
 * far the pair can have closed) the query does less: one box, no running
 * top-k, the few survivors ranked once (nearest_box). The running top-k is the
 * fallback when the guess holds fewer than k or a crowd of survivors. */
#include "grid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#define GRID_SIMD 1
#else
#define GRID_SIMD 0
#endif

#if GRID_SIMD && defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define GRID_AVX2 1 /* an AVX2 variant of the boxed query, chosen at run time */
#else
#define GRID_AVX2 0
#endif

#include "world.h"

/* Slots after the last in sx and sy, so a block of four (eight with AVX2)
 * may start at any position (its lanes past the end are masked off). */
#define GRID_PAD 8u

/* -1: not decided yet. Relaxed atomics: threads deciding at once all store
 * the same value. */
static int grid_use_avx2 = -1;

int steer_grid_avx2_supported(void) {
#if GRID_AVX2
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt");
#else
  return 0;
#endif
}

int steer_grid_avx2(void) {
  int on = __atomic_load_n(&grid_use_avx2, __ATOMIC_RELAXED);
  if (on < 0) {
    on = steer_grid_avx2_supported();
    __atomic_store_n(&grid_use_avx2, on, __ATOMIC_RELAXED);
  }
  return on;
}

int steer_grid_set_avx2(int on) {
  int was = steer_grid_avx2();
  __atomic_store_n(&grid_use_avx2, on ? steer_grid_avx2_supported() : 0, __ATOMIC_RELAXED);
  return was;
}

int steer_grid_init(steer_grid *g, vec2 min, vec2 max, float cell, uint32_t capacity) {
  memset(g, 0, sizeof(*g));
  if (!(cell > 0.0f) || !(max.x > min.x) || !(max.y > min.y) || capacity == 0)
    return STEER_EINVAL;
  double w = (double)max.x - min.x, h = (double)max.y - min.y;
  /* Grow the cell until the cell count fits the cap. */
  while ((w / cell + 1.0) * (h / cell + 1.0) > (double)STEER_GRID_MAX_CELLS)
    cell *= 2.0f;
  g->min = min;
  g->cell = cell;
  g->inv_cell = 1.0f / cell;
  g->cols = (uint32_t)(w / cell) + 1;
  g->rows = (uint32_t)(h / cell) + 1;
  g->capacity = capacity;
  size_t cells = (size_t)g->cols * g->rows;
  g->cell_start = calloc(cells + 1, sizeof(uint32_t));
  g->items = malloc(capacity * sizeof(uint32_t));
  g->item_pos = malloc(capacity * sizeof(uint32_t));
  g->sx = calloc((size_t)capacity + GRID_PAD, sizeof(float));
  g->sy = calloc((size_t)capacity + GRID_PAD, sizeof(float));
  g->svx = malloc(capacity * sizeof(float));
  g->svy = malloc(capacity * sizeof(float));
  g->sr = malloc(capacity * sizeof(float));
  g->skey = malloc(capacity * sizeof(uint16_t));
  if (!g->cell_start || !g->items || !g->item_pos || !g->sx || !g->sy || !g->svx || !g->svy || !g->sr ||
      !g->skey) {
    steer_grid_free(g);
    return STEER_ENOMEM;
  }
  return STEER_OK;
}

void steer_grid_free(steer_grid *g) {
  free(g->cell_start);
  free(g->items);
  free(g->item_pos);
  free(g->sx);
  free(g->sy);
  free(g->svx);
  free(g->svy);
  free(g->sr);
  free(g->skey);
  memset(g, 0, sizeof(*g));
}

static inline uint32_t grid_col(const steer_grid *g, float x) {
  float c = (x - g->min.x) * g->inv_cell;
  if (!(c > 0.0f))
    return 0; /* also catches NaN */
  /* Clamp before converting: a float beyond UINT32_MAX does not convert. */
  return c < (float)g->cols ? (uint32_t)c : g->cols - 1;
}

static inline uint32_t grid_row(const steer_grid *g, float y) {
  float r = (y - g->min.y) * g->inv_cell;
  if (!(r > 0.0f))
    return 0;
  return r < (float)g->rows ? (uint32_t)r : g->rows - 1;
}

void steer_grid_build(steer_grid *g, const float *px, const float *py, uint32_t count) {
  steer_grid_build_payload(g, px, py, NULL, NULL, NULL, NULL, count);
}

void steer_grid_build_payload(steer_grid *g, const float *px, const float *py, const float *vx,
                              const float *vy, const float *r, const uint16_t *key, uint32_t count) {
  uint32_t cells = g->cols * g->rows;
  uint32_t *start = g->cell_start;
  memset(start, 0, (cells + 1) * sizeof(uint32_t));
  for (uint32_t i = 0; i < count; i++) {
    uint32_t c = grid_row(g, py[i]) * g->cols + grid_col(g, px[i]);
    g->item_pos[i] = c;
    start[c + 1]++;
  }
  for (uint32_t c = 0; c < cells; c++)
    start[c + 1] += start[c];
  /* Scatter with start[c] as the running cursor; afterwards start[c] holds the end
   * of cell c, which is the start of cell c + 1, so shift back by one cell. */
  if (r && vx) { /* the world's build: one pass */
    for (uint32_t i = 0; i < count; i++) {
      uint32_t slot = start[g->item_pos[i]]++;
      g->item_pos[i] = slot;
      g->items[slot] = i;
      g->sx[slot] = px[i];
      g->sy[slot] = py[i];
      g->sr[slot] = r[i];
      g->svx[slot] = vx[i];
      g->svy[slot] = vy[i];
      g->skey[slot] = key[i];
    }
  } else if (r && !vx) { /* the world's build without avoidance: one pass too */
    for (uint32_t i = 0; i < count; i++) {
      uint32_t slot = start[g->item_pos[i]]++;
      g->item_pos[i] = slot;
      g->items[slot] = i;
      g->sx[slot] = px[i];
      g->sy[slot] = py[i];
      g->sr[slot] = r[i];
    }
  } else {
    for (uint32_t i = 0; i < count; i++) {
      uint32_t slot = start[g->item_pos[i]]++;
      g->item_pos[i] = slot;
      g->items[slot] = i;
      g->sx[slot] = px[i];
      g->sy[slot] = py[i];
    }
    if (r)
      for (uint32_t i = 0; i < count; i++)
        g->sr[g->item_pos[i]] = r[i];
    if (vx)
      for (uint32_t i = 0; i < count; i++) {
        uint32_t slot = g->item_pos[i];
        g->svx[slot] = vx[i];
        g->svy[slot] = vy[i];
        g->skey[slot] = key[i];
      }
  }
  memmove(start + 1, start, cells * sizeof(uint32_t));
  start[0] = 0;
  g->count = count;
  g->radii = r != NULL;
}

static inline float grid_maxf(float a, float b) { return a > b ? a : b; }

static inline float grid_d2(const steer_grid *g, uint32_t k, vec2 p) {
  float dx = g->sx[k] - p.x, dy = g->sy[k] - p.y;
  return dx * dx + dy * dy;
}

/* The general query: a sorted insertion over rows in ascending order, which is
 * cell order, so stable insertion orders ties by cell position. out holds cell
 * positions until the end; without out_d2 the distances are recomputed (the
 * same operations give the same floats), so there is no buffer to cap max. */
static uint32_t nearest_general(const steer_grid *g, vec2 p, float radius, uint32_t excl, uint32_t *out,
                                float *out_d2, uint32_t max, int want_pos) {
  float r2 = radius * radius;
  uint32_t c0 = grid_col(g, p.x - radius), c1 = grid_col(g, p.x + radius);
  uint32_t r0 = grid_row(g, p.y - radius), r1 = grid_row(g, p.y + radius);
  uint32_t n = 0;
  float worst = r2; /* admission threshold: r2 until the list is full */
  /* Every row in [r0, r1] can hold a point within the radius: edge rows also
   * hold the points clamped in from outside the bounds, whatever their distance
   * from the row's own span, so no row is skipped on geometry. */
  for (uint32_t row = r0; row <= r1; row++) {
    const uint32_t *rs = g->cell_start + (size_t)row * g->cols;
    for (uint32_t k = rs[c0]; k < rs[c1 + 1]; k++) {
      float d2 = grid_d2(g, k, p);
      if (d2 >= worst || k == excl)
        continue;
      uint32_t j = n < max ? n++ : max - 1;
      while (j > 0 && (out_d2 ? out_d2[j - 1] : grid_d2(g, out[j - 1], p)) > d2) {
        if (out_d2)
          out_d2[j] = out_d2[j - 1];
        out[j] = out[j - 1];
        j--;
      }
      if (out_d2)
        out_d2[j] = d2;
      out[j] = k;
      if (n == max)
        worst = out_d2 ? out_d2[max - 1] : grid_d2(g, out[max - 1], p);
    }
  }
  if (!want_pos)
    for (uint32_t i = 0; i < n; i++)
      out[i] = g->items[out[i]];
  return n;
}

uint32_t steer_grid_within(const steer_grid *g, vec2 p, float radius, uint32_t *out, uint32_t max) {
  float r2 = radius * radius;
  uint32_t c0 = grid_col(g, p.x - radius), c1 = grid_col(g, p.x + radius);
  uint32_t r0 = grid_row(g, p.y - radius), r1 = grid_row(g, p.y + radius);
  uint32_t n = 0;
  for (uint32_t row = r0; row <= r1; row++) { /* every row may hold clamped points: see nearest_general */
    const uint32_t *rs = g->cell_start + (size_t)row * g->cols;
    for (uint32_t k = rs[c0]; k < rs[c1 + 1]; k++) {
      if (grid_d2(g, k, p) >= r2)
        continue;
      if (n == max)
        return n;
      out[n++] = g->items[k];
    }
  }
  return n;
}

#if GRID_SIMD

/* The k nearest so far, sorted by (d2, cell position): keys in k[v] (ranks
 * 4v..4v+3), cell positions in i[v]; nv registers (2 for up to 8 ranks, 4 for
 * up to 16). Empty ranks hold the radius squared, which every admitted
 * candidate is below. */
#define GRID_TOP_V 4
typedef struct topk {
  __m128 k[GRID_TOP_V];
  __m128i i[GRID_TOP_V];
} topk;

#define GRID_INLINE static inline __attribute__((always_inline))

/* Inserts (d2, pos) in sorted place, dropping the last rank. mask m_j says
 * rank j's entry sorts after the newcomer; the masks are monotone (0..0 1..1),
 * so rank j becomes its predecessor where m_(j-1), the newcomer where m_j
 * alone, and stays where neither. Each register takes the rank carried out of
 * the one before it. */
GRID_INLINE void topk_insert(topk *t, const int nv, float d2, uint32_t pos) {
  __m128 x = _mm_set1_ps(d2);
  __m128i xi = _mm_set1_epi32((int)pos), xk = _mm_castps_si128(x);
  __m128i cm = _mm_setzero_si128(), ck = _mm_setzero_si128(), ci = _mm_setzero_si128();
  for (int v = 0; v < nv; v++) {
    __m128i m =
        _mm_or_si128(_mm_castps_si128(_mm_cmpgt_ps(t->k[v], x)),
                     _mm_and_si128(_mm_castps_si128(_mm_cmpeq_ps(t->k[v], x)), _mm_cmpgt_epi32(t->i[v], xi)));
    __m128i k = _mm_castps_si128(t->k[v]), i = t->i[v];
    /* The same masks and entries moved up one rank. */
    __m128i sm = _mm_or_si128(_mm_slli_si128(m, 4), cm);
    __m128i sk = _mm_or_si128(_mm_slli_si128(k, 4), ck);
    __m128i si = _mm_or_si128(_mm_slli_si128(i, 4), ci);
    cm = _mm_srli_si128(m, 12);
    ck = _mm_srli_si128(k, 12);
    ci = _mm_srli_si128(i, 12);
    k = _mm_or_si128(_mm_and_si128(m, xk), _mm_andnot_si128(m, k));
    i = _mm_or_si128(_mm_and_si128(m, xi), _mm_andnot_si128(m, i));
    t->k[v] = _mm_castsi128_ps(_mm_or_si128(_mm_and_si128(sm, sk), _mm_andnot_si128(sm, k)));
    t->i[v] = _mm_or_si128(_mm_and_si128(sm, si), _mm_andnot_si128(sm, i));
  }
}

GRID_INLINE void topk_keys(const topk *t, const int nv, float *keys) {
  for (int v = 0; v < nv; v++)
    _mm_storeu_ps(keys + 4 * v, t->k[v]);
}

/* The largest float below f (f > 0): d2 < f is d2 <= below(f), and the
 * threshold can then shrink to an admitted distance, which ties must still pass
 * (a tie with a lower cell position wins). */
static inline float float_below(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  u--;
  memcpy(&f, &u, sizeof(f));
  return f;
}

#define GRID_RUN 64u /* candidates per distance pass */

typedef struct fast_query {
  const steer_grid *g;
  vec2 p;
  float thr;    /* admit d2 <= thr: below r2, then the k-th distance so far */
  float margin; /* m, slack for rounding in the row and chord bounds */
  uint32_t excl, k;
  topk top;
} fast_query;

/* Scans one row, clipped to the chord of the threshold circle; returns 0 when
 * the whole row lies beyond it (so do all rows further out). */
GRID_INLINE int fast_row_nv(fast_query *q, uint32_t row, const int nv) {
  const steer_grid *g = q->g;
  /* Distance from p to the row's band; the edge rows reach to infinity, since
   * points outside the bounds are clamped into them. */
  float y0 = g->min.y + (float)row * g->cell, y1 = y0 + g->cell;
  float dy = 0.0f;
  if (row > 0 && q->p.y < y0)
    dy = y0 - q->p.y;
  else if (row + 1 < g->rows && q->p.y > y1)
    dy = q->p.y - y1;
  dy = grid_maxf(dy - q->margin, 0.0f);
  if (dy * dy > q->thr)
    return 0;
  float half = sqrtf(q->thr - dy * dy) + q->margin;
  const uint32_t *rs = g->cell_start + (size_t)row * g->cols;
  uint32_t a = rs[grid_col(g, q->p.x - half)], end = rs[grid_col(g, q->p.x + half) + 1];
  const float *sx = g->sx, *sy = g->sy;
  const float px = q->p.x, py = q->p.y;
  float cd[GRID_RUN];
  uint32_t ck[GRID_RUN];
  float keys[4 * GRID_TOP_V];
  while (a < end) {
    uint32_t b = end - a > GRID_RUN ? a + GRID_RUN : end, m = 0;
    const float thr = q->thr;
    const uint32_t excl = q->excl;
    for (uint32_t k = a; k < b; k++) {
      float dx = sx[k] - px, ddy = sy[k] - py;
      float d2 = dx * dx + ddy * ddy;
      cd[m] = d2;
      ck[m] = k;
      m += (uint32_t)(d2 <= thr) & (uint32_t)(k != excl);
    }
    for (uint32_t i = 0; i < m; i++)
      topk_insert(&q->top, nv, cd[i], ck[i]);
    topk_keys(&q->top, nv, keys);
    if (keys[q->k - 1] < q->thr)
      q->thr = keys[q->k - 1];
    a = b;
  }
  return 1;
}

/* One copy per register count, so each inner loop is unrolled for it. */
static int fast_row2(fast_query *q, uint32_t row) { return fast_row_nv(q, row, 2); }
static int fast_row3(fast_query *q, uint32_t row) { return fast_row_nv(q, row, 3); }
static int fast_row4(fast_query *q, uint32_t row) { return fast_row_nv(q, row, 4); }

static inline int fast_row(fast_query *q, uint32_t row, const int nv) {
  return nv <= 2 ? fast_row2(q, row) : nv == 3 ? fast_row3(q, row) : fast_row4(q, row);
}

/* Scans rows from the query's row outward, admitting d2 <= q->thr. */
GRID_INLINE void fast_scan_nv(fast_query *q, float radius, const int nv) {
  const steer_grid *g = q->g;
  uint32_t r0 = grid_row(g, q->p.y - radius), r1 = grid_row(g, q->p.y + radius);
  uint32_t centre = grid_row(g, q->p.y);
  fast_row(q, centre, nv);
  int up = 1, down = 1;
  for (uint32_t t = 1; up || down; t++) {
    if (up)
      up = centre + t <= r1 && fast_row(q, centre + t, nv);
    if (down)
      down = centre >= r0 + t && fast_row(q, centre - t, nv);
  }
}

static void fast_scan2(fast_query *q, float radius) { fast_scan_nv(q, radius, 2); }
static void fast_scan3(fast_query *q, float radius) { fast_scan_nv(q, radius, 3); }
static void fast_scan4(fast_query *q, float radius) { fast_scan_nv(q, radius, 4); }

static void fast_scan(fast_query *q, float radius, int nv) {
  if (nv <= 2)
    fast_scan2(q, radius);
  else if (nv == 3)
    fast_scan3(q, radius);
  else
    fast_scan4(q, radius);
}

/* The query with a guessed bound, in one pass and without a running top-k:
 * every candidate of the box around the circle of squared radius thr (the
 * rows and columns it touches, one square root per query) that lies within
 * it is kept, then the survivors are ranked once by (d2, cell position) --
 * the same order as the insertion -- by counting, for each, the survivors
 * that sort before it (four comparisons at a time). Returns 1 with the k
 * nearest written to out (cell positions or dense indices) and out_d2, and
 * the k-th squared distance in *kth, when at least k survived; 0 when fewer
 * did (the caller widens) or more than BOX_CAP did (a crowded box: the
 * caller's running top-k is cheaper there). */
#define BOX_CAP 48u

static int box_rank(const steer_grid *g, float *sd, int32_t *sp, uint32_t m, uint32_t k, uint32_t *out,
                    float *out_d2, int want_pos, float *kth);

/* Fetches the box's rows (columns c0..c1 of rows r0..r1: positions and
 * items) all at once, before the query reads them, so their cache misses
 * overlap instead of coming one row after the other. */
static inline __attribute__((always_inline)) void box_prefetch(const steer_grid *g, uint32_t c0, uint32_t c1,
                                                               uint32_t r0, uint32_t r1) {
  for (uint32_t row = r0; row <= r1; row++) {
    const uint32_t *rs = g->cell_start + (size_t)row * g->cols;
    uint32_t a = rs[c0], end = rs[c1 + 1];
    if (a < end) {
      __builtin_prefetch(g->sx + a);
      __builtin_prefetch(g->sy + a);
      __builtin_prefetch(g->items + a);
      __builtin_prefetch(g->sx + end - 1);
      __builtin_prefetch(g->sy + end - 1);
      __builtin_prefetch(g->items + end - 1);
    }
  }
}

static int nearest_box(const steer_grid *g, vec2 p, float thr, float margin, uint32_t excl, uint32_t k,
                       uint32_t *out, float *out_d2, int want_pos, float *kth) {
  const float half = sqrtf(thr) + margin;
  /* Points outside the bounds are clamped into the edge rows and columns; the
   * box reaches such a row or column only when it covers the bounds' edge
   * there, so every point left out lies outside the box, beyond thr. */
  uint32_t c0 = grid_col(g, p.x - half), c1 = grid_col(g, p.x + half);
  uint32_t r0 = grid_row(g, p.y - half), r1 = grid_row(g, p.y + half);
  const float *sx = g->sx, *sy = g->sy;
  const __m128 px4 = _mm_set1_ps(p.x), py4 = _mm_set1_ps(p.y), thr4 = _mm_set1_ps(thr);
  /* Survivors: squared distances and cell positions. The compaction writes
   * every candidate of a block of four and advances past the survivors only,
   * so the buffers hold BOX_CAP survivors plus one block, and a multiple of
   * four after padding. */
  float sd[BOX_CAP + 8];
  int32_t sp[BOX_CAP + 8];
  uint32_t m = 0;
  /* The rows are fetched first, all of them, so their cache misses overlap
   * instead of coming one row after the other (a rebuilt kept list's box is
   * far from what the step has touched lately); items too, which the caller
   * reads at the survivors' positions. */
  box_prefetch(g, c0, c1, r0, r1);
  for (uint32_t row = r0; row <= r1; row++) {
    const uint32_t *rs = g->cell_start + (size_t)row * g->cols;
    uint32_t a = rs[c0], end = rs[c1 + 1];
    /* Blocks of four; the last one may read up to three slots past the row
     * (the arrays have GRID_PAD more), which its mask drops. */
    for (; a < end; a += 4) {
      if (m > BOX_CAP)
        return 0;
      __m128 dx = _mm_sub_ps(_mm_loadu_ps(sx + a), px4), dy = _mm_sub_ps(_mm_loadu_ps(sy + a), py4);
      __m128 d2 = _mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy));
      uint32_t pass = (uint32_t)_mm_movemask_ps(_mm_cmple_ps(d2, thr4));
      if (end - a < 4)
        pass &= (1u << (end - a)) - 1u;
      if (excl - a < 4)
        pass &= ~(1u << (excl - a));
      float lane[4];
      _mm_storeu_ps(lane, d2);
      for (uint32_t j = 0; j < 4; j++) {
        sd[m] = lane[j];
        sp[m] = (int32_t)(a + j);
        m += (pass >> j) & 1u;
      }
    }
  }
  if (m < k || m > BOX_CAP)
    return 0;
  return box_rank(g, sd, sp, m, k, out, out_d2, want_pos, kth);
}

/* Ranks the m survivors of a box (sd, sp: squared distances and cell
 * positions, with room for padding to a multiple of four) by (d2, cell
 * position) and writes the first k. Returns 1. */
static int box_rank(const steer_grid *g, float *sd, int32_t *sp, uint32_t m, uint32_t k, uint32_t *out,
                    float *out_d2, int want_pos, float *kth) {
  for (uint32_t j = m; j < ((m + 3) & ~3u); j++) { /* padding sorts after everyone */
    sd[j] = INFINITY;
    sp[j] = INT32_MAX;
  }
  /* First by d2 alone (two operations per four survivors instead of
   * eight): when no two survivors have the same d2 that is the (d2, cell
   * position) rank. Equal d2 give two survivors the same rank; then the full
   * comparison below ranks them all again, writing every slot anew. */
  uint64_t seen = 0;
  for (uint32_t i = 0; i < m; i++) {
    const __m128 di = _mm_set1_ps(sd[i]);
    __m128i before = _mm_setzero_si128();
    for (uint32_t j = 0; j < m; j += 4)
      before = _mm_sub_epi32(before, _mm_castps_si128(_mm_cmplt_ps(_mm_loadu_ps(sd + j), di)));
    before = _mm_add_epi32(before, _mm_shuffle_epi32(before, _MM_SHUFFLE(1, 0, 3, 2)));
    before = _mm_add_epi32(before, _mm_shuffle_epi32(before, _MM_SHUFFLE(2, 3, 0, 1)));
    uint32_t rank = (uint32_t)_mm_cvtsi128_si32(before);
    seen |= 1ull << rank;
    if (rank < k) {
      uint32_t pos = (uint32_t)sp[i];
      out[rank] = want_pos ? pos : g->items[pos];
      if (out_d2)
        out_d2[rank] = sd[i];
      if (rank == k - 1)
        *kth = sd[i];
    }
  }
  _Static_assert(BOX_CAP < 64, "the ranks seen fit a 64-bit mask");
  if (seen == (1ull << m) - 1u)
    return 1;
  for (uint32_t i = 0; i < m; i++) {
    const __m128 di = _mm_set1_ps(sd[i]);
    const __m128i pi = _mm_set1_epi32(sp[i]);
    __m128i before = _mm_setzero_si128();
    for (uint32_t j = 0; j < m; j += 4) {
      __m128 dj = _mm_loadu_ps(sd + j);
      __m128i pj = _mm_loadu_si128((const __m128i *)(const void *)(sp + j));
      __m128i lt =
          _mm_or_si128(_mm_castps_si128(_mm_cmplt_ps(dj, di)),
                       _mm_and_si128(_mm_castps_si128(_mm_cmpeq_ps(dj, di)), _mm_cmpgt_epi32(pi, pj)));
      before = _mm_sub_epi32(before, lt);
    }
    before = _mm_add_epi32(before, _mm_shuffle_epi32(before, _MM_SHUFFLE(1, 0, 3, 2)));
    before = _mm_add_epi32(before, _mm_shuffle_epi32(before, _MM_SHUFFLE(2, 3, 0, 1)));
    uint32_t rank = (uint32_t)_mm_cvtsi128_si32(before);
    if (rank < k) {
      uint32_t pos = (uint32_t)sp[i];
      out[rank] = want_pos ? pos : g->items[pos];
      if (out_d2)
        out_d2[rank] = sd[i];
      if (rank == k - 1)
        *kth = sd[i];
    }
  }
  return 1;
}

#if GRID_AVX2
/* nearest_box with eight lanes. The compaction moves the survivors of a
 * block of eight to the front with one permute (the lanes to keep, from the
 * mask with pdep/pext) instead of a store per candidate; up to
 * BOX_RANK_MAX survivors are ranked with the survivors in four registers and
 * every survivor compared against all of them at once (the counts of
 * survivors sorting before each accumulate in the lanes: no horizontal sums),
 * and placed by rank. The same survivors, ranks and output as nearest_box
 * (ties by cell position: a second pass with the full comparison when two
 * survivors have the same d2). */
#define BOX_RANK_MAX 32u

__attribute__((target("avx2,bmi2,popcnt"))) static int
nearest_box_avx2(const steer_grid *g, vec2 p, float thr, float margin, uint32_t excl, uint32_t k,
                 uint32_t *out, float *out_d2, int want_pos, float *kth) {
  const float half = sqrtf(thr) + margin;
  uint32_t c0 = grid_col(g, p.x - half), c1 = grid_col(g, p.x + half);
  uint32_t r0 = grid_row(g, p.y - half), r1 = grid_row(g, p.y + half);
  const float *sx = g->sx, *sy = g->sy;
  const __m256 px8 = _mm256_set1_ps(p.x), py8 = _mm256_set1_ps(p.y), thr8 = _mm256_set1_ps(thr);
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  /* BOX_CAP survivors plus one block, plus padding to BOX_RANK_MAX. */
  float sd[BOX_CAP + 16];
  int32_t sp[BOX_CAP + 16];
  uint32_t m = 0;
  box_prefetch(g, c0, c1, r0, r1); /* as nearest_box */
  for (uint32_t row = r0; row <= r1; row++) {
    const uint32_t *rs = g->cell_start + (size_t)row * g->cols;
    uint32_t a = rs[c0], end = rs[c1 + 1];
    /* The last block may read up to seven slots past the row (GRID_PAD). */
    for (; a < end; a += 8) {
      if (m > BOX_CAP)
        return 0;
      __m256 dx = _mm256_sub_ps(_mm256_loadu_ps(sx + a), px8),
             dy = _mm256_sub_ps(_mm256_loadu_ps(sy + a), py8);
      __m256 d2 = _mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy));
      uint32_t pass = (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(d2, thr8, _CMP_LE_OQ));
      if (end - a < 8)
        pass &= (1u << (end - a)) - 1u;
      if (excl - a < 8)
        pass &= ~(1u << (excl - a));
      /* the kept lanes' numbers, packed: one byte per lane kept */
      uint64_t lanes = _pext_u64(0x0706050403020100ull, _pdep_u64(pass, 0x0101010101010101ull) * 0xffu);
      __m256i idx = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)lanes));
      _mm256_storeu_ps(sd + m, _mm256_permutevar8x32_ps(d2, idx));
      _mm256_storeu_si256(
          (__m256i *)(void *)(sp + m),
          _mm256_permutevar8x32_epi32(_mm256_add_epi32(iota, _mm256_set1_epi32((int)a)), idx));
      m += (uint32_t)__builtin_popcount(pass);
    }
  }
  if (m < k || m > BOX_CAP)
    return 0;
  if (m > BOX_RANK_MAX)
    return box_rank(g, sd, sp, m, k, out, out_d2, want_pos, kth);
  for (uint32_t j = m; j < BOX_RANK_MAX; j++) { /* padding: never before a survivor */
    sd[j] = INFINITY;
    sp[j] = INT32_MAX;
  }
  const __m256 d0 = _mm256_loadu_ps(sd), d1 = _mm256_loadu_ps(sd + 8), d2 = _mm256_loadu_ps(sd + 16),
               d3 = _mm256_loadu_ps(sd + 24);
  __m256i n0 = _mm256_setzero_si256(), n1 = n0, n2 = n0, n3 = n0;
  /* First by d2 alone: with no two survivors at the same d2 that is the
   * (d2, cell position) rank. */
  for (uint32_t j = 0; j < m; j++) {
    const __m256 dj = _mm256_broadcast_ss(sd + j);
    n0 = _mm256_sub_epi32(n0, _mm256_castps_si256(_mm256_cmp_ps(dj, d0, _CMP_LT_OQ)));
    n1 = _mm256_sub_epi32(n1, _mm256_castps_si256(_mm256_cmp_ps(dj, d1, _CMP_LT_OQ)));
    n2 = _mm256_sub_epi32(n2, _mm256_castps_si256(_mm256_cmp_ps(dj, d2, _CMP_LT_OQ)));
    n3 = _mm256_sub_epi32(n3, _mm256_castps_si256(_mm256_cmp_ps(dj, d3, _CMP_LT_OQ)));
  }
  uint32_t rank[BOX_RANK_MAX], tp[BOX_RANK_MAX];
  float td[BOX_RANK_MAX];
  _mm256_storeu_si256((__m256i *)(void *)rank, n0);
  _mm256_storeu_si256((__m256i *)(void *)(rank + 8), n1);
  _mm256_storeu_si256((__m256i *)(void *)(rank + 16), n2);
  _mm256_storeu_si256((__m256i *)(void *)(rank + 24), n3);
  uint64_t seen = 0;
  for (uint32_t i = 0; i < m; i++) {
    seen |= 1ull << rank[i];
    tp[rank[i]] = (uint32_t)sp[i];
    td[rank[i]] = sd[i];
  }
  if (seen != (1ull << m) - 1u) { /* equal d2: ranked again by (d2, cell position) */
    const __m256i p0 = _mm256_loadu_si256((const __m256i *)(const void *)sp),
                  p1 = _mm256_loadu_si256((const __m256i *)(const void *)(sp + 8)),
                  p2 = _mm256_loadu_si256((const __m256i *)(const void *)(sp + 16)),
                  p3 = _mm256_loadu_si256((const __m256i *)(const void *)(sp + 24));
    n0 = n1 = n2 = n3 = _mm256_setzero_si256();
#define BOX_BEFORE(dv, pv)                                                                                   \
  _mm256_castps_si256(_mm256_or_ps(                                                                          \
      _mm256_cmp_ps(dj, dv, _CMP_LT_OQ),                                                                     \
      _mm256_and_ps(_mm256_cmp_ps(dj, dv, _CMP_EQ_OQ), _mm256_castsi256_ps(_mm256_cmpgt_epi32(pv, pj)))))
    for (uint32_t j = 0; j < m; j++) {
      const __m256 dj = _mm256_broadcast_ss(sd + j);
      const __m256i pj = _mm256_set1_epi32(sp[j]);
      n0 = _mm256_sub_epi32(n0, BOX_BEFORE(d0, p0));
      n1 = _mm256_sub_epi32(n1, BOX_BEFORE(d1, p1));
      n2 = _mm256_sub_epi32(n2, BOX_BEFORE(d2, p2));
      n3 = _mm256_sub_epi32(n3, BOX_BEFORE(d3, p3));
    }
#undef BOX_BEFORE
    _mm256_storeu_si256((__m256i *)(void *)rank, n0);
    _mm256_storeu_si256((__m256i *)(void *)(rank + 8), n1);
    _mm256_storeu_si256((__m256i *)(void *)(rank + 16), n2);
    _mm256_storeu_si256((__m256i *)(void *)(rank + 24), n3);
    for (uint32_t i = 0; i < m; i++) {
      tp[rank[i]] = (uint32_t)sp[i];
      td[rank[i]] = sd[i];
    }
  }
  for (uint32_t i = 0; i < k; i++) {
    out[i] = want_pos ? tp[i] : g->items[tp[i]];
    if (out_d2)
      out_d2[i] = td[i];
  }
  *kth = td[k - 1];
  return 1;
}
#endif /* GRID_AVX2 */

static void fast_reset(fast_query *q, float r2, float thr) {
  q->thr = thr;
  for (int v = 0; v < GRID_TOP_V; v++) {
    q->top.k[v] = _mm_set1_ps(r2);
    q->top.i[v] = _mm_set1_epi32(INT32_MAX);
  }
}

static uint32_t nearest_fast(const steer_grid *g, vec2 p, float radius, uint32_t excl, uint32_t *out,
                             float *out_d2, uint32_t max, float *hint, int want_pos) {
  float r2 = radius * radius;
  if (!(r2 > 0.0f))
    return 0; /* the radius squared underflows: nothing is strictly within */
  const int nv = max <= 8 ? 2 : (int)(max + 3) / 4;
  fast_query q;
  q.g = g;
  q.p = p;
  /* Rounding in the row bands, (x - min) * inv_cell and the chord is a few ulps
   * of the coordinates involved; the slack is far above that, and only makes a
   * row or chord a little wider than needed. */
  q.margin = 0.01f * g->cell + 1e-5f * (fabsf(p.x) + fabsf(p.y) + fabsf(g->min.x) + fabsf(g->min.y) + radius);
  q.excl = excl;
  q.k = max;
  float full = float_below(r2);
  if (hint && *hint > 0.0f && *hint < full) {
#if GRID_AVX2
    int boxed = steer_grid_avx2()
                    ? nearest_box_avx2(g, p, *hint, q.margin, excl, max, out, out_d2, want_pos, hint)
                    : nearest_box(g, p, *hint, q.margin, excl, max, out, out_d2, want_pos, hint);
#else
    int boxed = nearest_box(g, p, *hint, q.margin, excl, max, out, out_d2, want_pos, hint);
#endif
    if (boxed)
      return max;
  }
  /* topk_keys fills keys[0, 4 nv), which covers max; zeroed so gcc -O3 can see
   * that keys[max - 1] is set (64 bytes, once per query). */
  float keys[4 * GRID_TOP_V] = {0};
  /* A guessed bound first: when it holds k candidates, everything outside it is
   * farther than all of them (ties at the bound are admitted), so these are the
   * k nearest; otherwise the scan starts over with the whole radius. */
  int done = 0;
  if (hint && *hint > 0.0f && *hint < full) {
    fast_reset(&q, r2, *hint);
    fast_scan(&q, radius, nv);
    topk_keys(&q.top, nv, keys);
    done = keys[max - 1] < r2;
  }
  if (!done) {
    fast_reset(&q, r2, full);
    fast_scan(&q, radius, nv);
    topk_keys(&q.top, nv, keys);
  }
  uint32_t pos[4 * GRID_TOP_V];
  for (int v = 0; v < nv; v++)
    _mm_storeu_si128((__m128i *)(void *)(pos + 4 * v), q.top.i[v]);
  uint32_t n = 0;
  while (n < max && keys[n] < r2) {
    out[n] = want_pos ? pos[n] : g->items[pos[n]];
    if (out_d2)
      out_d2[n] = keys[n];
    n++;
  }
  if (hint)
    *hint = n == max ? keys[max - 1] : 0.0f;
  return n;
}

#endif /* GRID_SIMD */

static uint32_t nearest_any(const steer_grid *g, vec2 p, float radius, uint32_t exclude, uint32_t *out,
                            float *out_d2, uint32_t max, float *hint, int want_pos) {
  if (max == 0 || !(radius > 0.0f) || g->count == 0) {
    if (hint)
      *hint = 0.0f;
    return 0;
  }
  /* Exclusion by cell position saves a load per candidate. */
  uint32_t excl = exclude < g->count ? g->item_pos[exclude] : UINT32_MAX;
#if GRID_SIMD
  if (max <= STEER_GRID_FAST_K)
    return nearest_fast(g, p, radius, excl, out, out_d2, max, hint, want_pos);
#endif
  if (hint)
    *hint = 0.0f;
  return nearest_general(g, p, radius, excl, out, out_d2, max, want_pos);
}

uint32_t steer_grid_nearest_hint(const steer_grid *g, vec2 p, float radius, uint32_t exclude, uint32_t *out,
                                 float *out_d2, uint32_t max, float *hint) {
  return nearest_any(g, p, radius, exclude, out, out_d2, max, hint, 0);
}

uint32_t steer_grid_nearest_pos(const steer_grid *g, vec2 p, float radius, uint32_t exclude,
                                uint32_t *out_pos, uint32_t max, float *hint) {
  return nearest_any(g, p, radius, exclude, out_pos, NULL, max, hint, 1);
}

uint32_t steer_grid_nearest(const steer_grid *g, vec2 p, float radius, uint32_t exclude, uint32_t *out,
                            float *out_d2, uint32_t max) {
  return steer_grid_nearest_hint(g, p, radius, exclude, out, out_d2, max, NULL);
}

/* ---- kept candidate lists ------------------------------------------------ */

int steer_grid_lists_init(steer_grid_lists *L, uint32_t capacity) {
  memset(L, 0, sizeof(*L));
  L->capacity = capacity;
  L->epoch = 1;
  /* calloc: a world that never queries neighbours never touches these pages. */
  L->rec = calloc(capacity, sizeof(steer_grid_rec));
  L->e = calloc(capacity, sizeof(steer_grid_list));
  if (!L->rec || !L->e) {
    steer_grid_lists_free(L);
    return STEER_ENOMEM;
  }
  return STEER_OK;
}

void steer_grid_lists_free(steer_grid_lists *L) {
  free(L->rec);
  free(L->e);
  memset(L, 0, sizeof(*L));
}

static void lists_restart(steer_grid_lists *L) {
  if (++L->epoch == 0) { /* stamps of 2^32 builds ago could match again */
    L->epoch = 1;
    for (uint32_t i = 0; i < L->capacity; i++)
      L->e[i].stamp = 0;
  }
}

void steer_grid_lists_track_begin(steer_grid_lists *L, int restart) {
  if (!L->e)
    return;
  L->round++;
  L->stepping = !restart && L->primed;
  if (!L->stepping)
    lists_restart(L);
  L->step_bits = 0;
  L->step_bad = 0;
}

void steer_grid_lists_track_range(steer_grid_lists *L, const steer_grid *g, const float *px, const float *py,
                                  const float *r, uint32_t begin, uint32_t end) {
  if (!L->e)
    return;
  if (end > L->capacity)
    end = L->capacity;
  steer_grid_rec *rec = L->rec;
  if (!L->stepping) {
    for (uint32_t i = begin; i < end; i++) {
      rec[i].x = px[i];
      rec[i].y = py[i];
      rec[i].pos = g->item_pos[i];
      rec[i].r = r ? r[i] : 0.0f;
    }
    return;
  }
  /* The largest step since the last build, and the new records, in one
   * pass. */
  float m = 0.0f;
  int bad = 0;
  for (uint32_t i = begin; i < end; i++) {
    float dx = px[i] - rec[i].x, dy = py[i] - rec[i].y;
    float d2 = dx * dx + dy * dy;
    m = d2 > m ? d2 : m;
    bad |= !(d2 < INFINITY); /* NaN or overflow: no bound from this step */
    rec[i].x = px[i];
    rec[i].y = py[i];
    rec[i].pos = g->item_pos[i];
    rec[i].r = r ? r[i] : 0.0f;
  }
  /* Merged with the other ranges': m is a non-negative float (NaN never
   * wins the compare above), whose bits order like it. */
  uint32_t mb, cur = __atomic_load_n(&L->step_bits, __ATOMIC_RELAXED);
  memcpy(&mb, &m, sizeof(mb));
  while (mb > cur &&
         !__atomic_compare_exchange_n(&L->step_bits, &cur, mb, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  if (bad)
    __atomic_store_n(&L->step_bad, 1, __ATOMIC_RELAXED);
}

void steer_grid_lists_track_end(steer_grid_lists *L) {
  if (!L->e)
    return;
  if (L->stepping) {
    if (L->step_bad) {
      lists_restart(L);
    } else { /* the float square's rounding (a few ulps) is far below the factor */
      float m;
      memcpy(&m, &L->step_bits, sizeof(m));
      L->moved += sqrt((double)m) * (1.0 + 1e-5) + 1e-6;
    }
  }
  L->primed = 1;
}

void steer_grid_lists_track(steer_grid_lists *L, const steer_grid *g, const float *px, const float *py,
                            const float *r, uint32_t count, int restart) {
  steer_grid_lists_track_begin(L, restart);
  steer_grid_lists_track_range(L, g, px, py, r, 0, count);
  steer_grid_lists_track_end(L);
}

_Static_assert(STEER_GRID_LIST == 16u, "a key holds the slot in 4 bits; the re-rank works in blocks of four");

static inline float lists_key_d2(uint64_t key) {
  uint32_t u = (uint32_t)(key >> 32);
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

/* The plain query's guess: the last k-th distance widened by slack. */
static inline void kept_widen(float *hint, float slack) {
  if (hint && *hint > 0.0f) {
    float reach = sqrtf(*hint) + slack;
    *hint = reach * reach;
  }
}

/* The plain query's answer as dense indices, in out. */
static uint32_t kept_plain(const steer_grid *g, vec2 p, float radius, uint32_t self, uint32_t *out,
                           uint32_t max, float *hint, float slack) {
  kept_widen(hint, slack);
  uint32_t n = steer_grid_nearest_pos(g, p, radius, self, out, max, hint);
  for (uint32_t i = 0; i < n; i++)
    out[i] = g->items[out[i]];
  return n;
}

/* Sorts key[0, m) into the query's order where it matters: the first h
 * (last time's k nearest, in order) by insertion, then each of the rest
 * that sorts before the h-th takes its place (the h-th moves to its slot)
 * and is inserted; the rest stay a set in any order. The largest key so far
 * stays in a register: mostly one load and one compare per key. Returns the
 * lowest slot whose key changed. */
static uint32_t kept_sort(uint64_t *key, uint32_t m, uint32_t h) {
  uint32_t first = m;
  uint64_t top = key[0];
  for (uint32_t i = 1; i < h; i++) {
    uint64_t k = key[i];
    if (top <= k) {
      top = k;
      continue;
    }
    uint32_t at = i;
    do {
      key[at] = key[at - 1];
      at--;
    } while (at > 0 && key[at - 1] > k);
    key[at] = k;
    first = at < first ? at : first;
  }
  for (uint32_t i = h; i < m; i++) { /* h == k here, top == key[h - 1] */
    uint64_t k = key[i];
    if (k >= top)
      continue;
    key[i] = top; /* the h-th leaves the first h */
    uint32_t at = h - 1;
    while (at > 0 && key[at - 1] > k) {
      key[at] = key[at - 1];
      at--;
    }
    key[at] = k;
    top = key[h - 1];
    first = at < first ? at : first;
  }
  return first;
}

uint32_t steer_grid_nearest_kept_idx(const steer_grid *g, steer_grid_lists *L, uint32_t self, vec2 p,
                                     float radius, uint32_t max, float *hint, float slack, uint32_t *scratch,
                                     const uint32_t **out) {
  *out = scratch;
  if (max > STEER_GRID_LIST)
    max = STEER_GRID_LIST;
  if (!L->e || self >= L->capacity || self >= g->count || max == 0 || max > STEER_GRID_LIST_MAX_K ||
      !(radius > 0.0f) || g->capacity > (1u << 28)) /* the keys hold 28 bits of cell position */
    return kept_plain(g, p, radius, self, scratch, max, hint, slack);
  steer_grid_list *e = &L->e[self];
  const steer_grid_rec *rec = L->rec;
  const float r2 = radius * radius;
  /* How far the query point has moved since the build, bounded without a
   * square root (|x| + |y| >= the length; doubles: exact differences). */
  const double own = fabs((double)p.x - e->bx) + fabs((double)p.y - e->by);
  float guess = 0.0f; /* a squared distance holding STEER_GRID_LIST candidates now, if known */
  uint32_t n;
  if (e->stamp == L->epoch) {
    /* Re-rank the candidates by (d2, cell position), the query's order. The
     * list is in last time's order (the first k sorted, the rest a set), and
     * mostly still is: checking that costs a few compares. Otherwise one
     * 64-bit key per candidate: a non-negative float's bits order like the
     * float, so d2 above the cell position above the candidate's slot in the
     * list (4 bits: the slot says which candidate the key is, and never
     * decides, since positions differ). */
    const uint32_t m = e->n, head = m < max ? m : max;
    uint64_t key[STEER_GRID_LIST];
#if GRID_SIMD
    const __m128 px4 = _mm_set1_ps(p.x), py4 = _mm_set1_ps(p.y);
    for (uint32_t i = 0; i < STEER_GRID_LIST; i += 4) { /* slots past m hold valid indices (the build pads) */
      __m128 c0 = _mm_loadu_ps(&rec[e->item[i]].x), c1 = _mm_loadu_ps(&rec[e->item[i + 1]].x);
      __m128 c2 = _mm_loadu_ps(&rec[e->item[i + 2]].x), c3 = _mm_loadu_ps(&rec[e->item[i + 3]].x);
      _MM_TRANSPOSE4_PS(c0, c1, c2, c3);                         /* x, y, pos, r */
      __m128 dx = _mm_sub_ps(c0, px4), dy = _mm_sub_ps(c1, py4); /* as the query computes it */
      __m128i d2 = _mm_castps_si128(_mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy)));
      __m128i lo = _mm_or_si128(_mm_slli_epi32(_mm_castps_si128(c2), 4),
                                _mm_set_epi32((int)i + 3, (int)i + 2, (int)i + 1, (int)i));
      _mm_storeu_si128((__m128i *)(void *)(key + i), _mm_unpacklo_epi32(lo, d2));
      _mm_storeu_si128((__m128i *)(void *)(key + i + 2), _mm_unpackhi_epi32(lo, d2));
    }
#else
    for (uint32_t i = 0; i < m; i++) {
      steer_grid_rec c = rec[e->item[i]];
      float dx = c.x - p.x, dy = c.y - p.y; /* as the query computes it */
      float d2 = dx * dx + dy * dy;
      uint32_t u;
      memcpy(&u, &d2, sizeof(u));
      key[i] = (uint64_t)u << 32 | c.pos << 4 | i;
    }
#endif
    uint32_t first = kept_sort(key, m, head);
    n = 0; /* those inside the radius are a prefix (NaN sorts last and fails) */
    if (m >= max && lists_key_d2(key[max - 1]) < r2)
      n = max;
    else
      while (n < head && lists_key_d2(key[n]) < r2)
        n++;
    float kth = head ? lists_key_d2(key[head - 1]) : 0.0f;
    /* Everyone left out is now at least b = limit - moved - own away (with
     * a factor for rounding); it must be beyond the k-th candidate (then it
     * ranks after it whatever its cell) or, with fewer than k inside, beyond
     * the radius: t^2 < b^2 with t that distance. */
    const double free = (e->limit - L->moved) * (1.0 - 2e-5);
    const double t2 = n == max ? (double)kth : (double)r2;
    double b = free - own;
    if (!(b > 0.0 && t2 < b * b)) { /* the exact move (own bounds it by up to 1.41 times) */
      double ox = (double)p.x - e->bx, oy = (double)p.y - e->by;
      b = free - sqrt(ox * ox + oy * oy) * (1.0 + 1e-12);
    }
    if (b > 0.0 && t2 < b * b) {
      if (first < m) { /* this tick's order, kept for the next (slots before first are as they were) */
        uint32_t old[STEER_GRID_LIST];
        for (uint32_t i = first; i < m; i++)
          old[i] = e->item[i];
        for (uint32_t i = first; i < m; i++)
          e->item[i] = old[key[i] & 15u];
      }
      if (hint)
        *hint = n == max ? kth : 0.0f;
      *out = e->item;
      return n;
    }
    /* The candidates are still there: the rebuild's bound is the farthest
     * (the largest key's d2: the largest bits). */
    if (m == STEER_GRID_LIST) {
      uint64_t far = key[0];
      for (uint32_t i = 1; i < m; i++)
        far = key[i] > far ? key[i] : far;
      guess = lists_key_d2(far);
    }
  }
  /* No valid list. One that lasted under three rounds (agents too fast for
   * the margin, or the agent set changing every tick) is not rebuilt for a
   * while: the plain query is cheaper then. */
  if (e->born != 0 && L->round - e->born < 3) {
    e->retry = L->round + 16u;
    e->born = 0;
  }
  if ((int32_t)(e->retry - L->round) > 0) {
    e->stamp = 0;
    return kept_plain(g, p, radius, self, scratch, max, hint, slack);
  }
  /* Build: the LIST nearest within 1.25 radius, the first k of which inside
   * the radius are this tick's answer (the order is total, so the first k of
   * the LIST nearest are the k nearest). The last list's reach widened by
   * what can have closed since is a bound holding all its candidates. */
  const float rr = radius * 1.25f;
  float h = guess; /* 0 (none, or NaN) leaves the query to scan the radius */
  if (!(h > 0.0f))
    h = 0.0f;
  uint32_t cpos[STEER_GRID_LIST];
  float cd2[STEER_GRID_LIST];
  uint32_t m = nearest_any(g, p, rr, self, cpos, cd2, STEER_GRID_LIST, &h, 1);
  n = 0;
  while (n < max && n < m && cd2[n] < r2)
    n++;
  if (hint)
    *hint = n == max ? cd2[max - 1] : 0.0f;
  for (uint32_t i = 0; i < m; i++)
    e->item[i] = g->items[cpos[i]];
  for (uint32_t i = m; i < STEER_GRID_LIST; i++) /* padding the re-rank reads */
    e->item[i] = self;
  e->n = (uint8_t)m;
  /* Left out: (d2, pos) after the LIST-th, so d2 >= its d2; or, with fewer
   * found, d2 >= rr^2 (not strictly within rr). Shrunk for the float squares'
   * rounding. */
  float reach2 = m == STEER_GRID_LIST ? cd2[STEER_GRID_LIST - 1] : rr * rr;
  e->reach = (float)(sqrt((double)reach2) * (1.0 - 1e-5));
  e->bx = p.x;
  e->by = p.y;
  e->limit = (double)e->reach + L->moved - 1e-6;
  e->born = L->round;
  e->stamp = L->epoch;
  *out = e->item;
  return n;
}

uint32_t steer_grid_nearest_kept(const steer_grid *g, steer_grid_lists *L, uint32_t self, vec2 p,
                                 float radius, uint32_t *out_pos, vec2 *out_xy, float *out_r, uint32_t max,
                                 float *hint, float slack) {
  uint32_t n;
  if (max > STEER_GRID_LIST || !L->rec) { /* beyond the lists: the plain query */
    kept_widen(hint, slack);
    n = steer_grid_nearest_pos(g, p, radius, self, out_pos, max, hint);
    if (out_xy)
      for (uint32_t i = 0; i < n; i++) {
        out_xy[i] = v2(g->sx[out_pos[i]], g->sy[out_pos[i]]);
        out_r[i] = g->radii ? g->sr[out_pos[i]] : 0.0f;
      }
    return n;
  }
  uint32_t scratch[STEER_GRID_LIST];
  const uint32_t *nb;
  n = steer_grid_nearest_kept_idx(g, L, self, p, radius, max, hint, slack, scratch, &nb);
  for (uint32_t i = 0; i < n; i++) {
    const steer_grid_rec *c = &L->rec[nb[i]];
    out_pos[i] = c->pos;
    if (out_xy) {
      out_xy[i] = v2(c->x, c->y);
      out_r[i] = c->r;
    }
  }
  return n;
}

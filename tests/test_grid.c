/* test_grid.c: the neighbour grid against a brute-force scan.
 *
 * Every query is checked against the same distances computed over all points
 * (bit for bit: the build uses -ffp-contract=off), so the grid must find every
 * point strictly within the radius, whatever cell it was sorted into: points on
 * cell borders, outside the bounds (clamped into edge cells) and far away. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "grid.h"
#include "rng.h"
#include "world.h"

#define NMAX 2048u

typedef struct cand {
  float d2;
  uint32_t idx;
} cand;

static int cand_cmp(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->d2 != y->d2)
    return x->d2 < y->d2 ? -1 : 1;
  return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

/* The same float operations as the grid, over every point. */
static float dist2(float px, float py, vec2 p) {
  float dx = px - p.x, dy = py - p.y;
  return dx * dx + dy * dy;
}

/* Checks one query against brute force; the query is run with and without
 * out_d2 (there is no cap on max either way) and both must agree. Ties must
 * come out in cell order: the query for max <= STEER_GRID_FAST_K (its own code)
 * must return the prefix of the general query for more. */
static void check_query(const steer_grid *g, const float *px, const float *py, uint32_t n, vec2 p,
                        float radius, uint32_t exclude, uint32_t max) {
  static cand all[NMAX];
  static uint32_t out[NMAX], out2[NMAX];
  static float d2[NMAX];
  uint32_t m = 0;
  float r2 = radius * radius;
  for (uint32_t i = 0; i < n; i++) {
    if (i == exclude)
      continue;
    float d = dist2(px[i], py[i], p);
    if (d < r2) {
      all[m].d2 = d;
      all[m].idx = i;
      m++;
    }
  }
  qsort(all, m, sizeof(cand), cand_cmp);
  uint32_t want = m < max ? m : max;

  uint32_t got = steer_grid_nearest(g, p, radius, exclude, out, d2, max);
  ck_assert_msg(got == want, "p=(%g,%g) r=%g max=%u: got %u, brute force %u", (double)p.x, (double)p.y,
                (double)radius, max, got, want);
  static uint8_t seen[NMAX];
  memset(seen, 0, sizeof(seen));
  for (uint32_t i = 0; i < got; i++) {
    uint32_t idx = out[i];
    ck_assert_uint_lt(idx, n);
    ck_assert_uint_ne(idx, exclude);
    ck_assert_msg(!seen[idx], "index %u returned twice", idx);
    seen[idx] = 1;
    float d = dist2(px[idx], py[idx], p);
    ck_assert_msg(d == d2[i], "out_d2[%u] = %g, real %g", i, (double)d2[i], (double)d);
    ck_assert(d < r2);
    /* Nearest first, and the distances are exactly the brute-force prefix. */
    ck_assert_msg(d2[i] == all[i].d2, "rank %u: grid d2 %g, brute force %g", i, (double)d2[i],
                  (double)all[i].d2);
    if (i > 0)
      ck_assert(d2[i - 1] <= d2[i]);
  }
  uint32_t got2 = steer_grid_nearest(g, p, radius, exclude, out2, NULL, max);
  ck_assert_uint_eq(got2, got);
  ck_assert(memcmp(out, out2, got * sizeof(uint32_t)) == 0);
  /* A guessed bound never changes the answer: too tight, exact, a little
   * wider (as the world widens last tick's), loose, none. */
  float kth = m > 0 ? all[(want > 0 ? want : 1) - 1].d2 : 1.0f;
  float wide = sqrtf(kth) + 0.01f * radius;
  const float hints[] = {0.0f, 1e-6f, 0.5f * r2, kth, wide * wide, r2, 4.0f * r2};
  /* Both paths of the guessed-bound query: four lanes, and eight (AVX2)
   * where the processor has it. */
  const size_t nh = sizeof(hints) / sizeof(hints[0]);
  const int was = steer_grid_avx2();
  for (size_t h = 0; h < nh * (size_t)(1 + steer_grid_avx2_supported()); h++) {
    steer_grid_set_avx2(h >= nh);
    float hint = hints[h % nh];
    static float d2h[NMAX];
    got2 = steer_grid_nearest_hint(g, p, radius, exclude, out2, d2h, max, &hint);
    ck_assert_uint_eq(got2, got);
    ck_assert_msg(memcmp(out, out2, got * sizeof(uint32_t)) == 0, "hint %g changed the answer (avx2 %d)",
                  (double)hints[h % nh], steer_grid_avx2());
    ck_assert(memcmp(d2, d2h, got * sizeof(float)) == 0);
    if (max <= STEER_GRID_FAST_K)
      ck_assert_msg(hint == (got == max ? d2[max - 1] : 0.0f), "hint out %g", (double)hint);
  }
  steer_grid_set_avx2(was);
  if (max <= STEER_GRID_FAST_K) {
    uint32_t big = STEER_GRID_FAST_K + 1;
    got2 = steer_grid_nearest(g, p, radius, exclude, out2, NULL, big);
    ck_assert_uint_ge(got2, got);
    ck_assert_msg(memcmp(out, out2, got * sizeof(uint32_t)) == 0, "fast and general queries disagree");
  }
  /* The unsorted query (no exclusion): as many, distinct, all within; every one when max allows. */
  if (exclude == UINT32_MAX) {
    got2 = steer_grid_within(g, p, radius, out2, max);
    ck_assert_uint_eq(got2, want);
    memset(seen, 0, sizeof(seen));
    for (uint32_t i = 0; i < got2; i++) {
      ck_assert_uint_lt(out2[i], n);
      ck_assert_msg(!seen[out2[i]], "within: index %u returned twice", out2[i]);
      seen[out2[i]] = 1;
      ck_assert(dist2(px[out2[i]], py[out2[i]], p) < r2);
    }
    for (uint32_t i = 0; max >= m && i < m; i++)
      ck_assert_msg(seen[all[i].idx], "within: index %u missing", all[i].idx);
  }
}

/* A coordinate: mostly uniform over the bounds and a margin beyond them, some
 * exactly on a cell border, some on the bounds, some far outside. */
static float coord(steer_rng *r, float lo, float hi, float cell, float margin) {
  uint32_t k = steer_rng_next(r) % 10u;
  if (k < 5)
    return steer_rng_range(r, lo - margin, hi + margin);
  if (k < 8) {
    uint32_t cells = (uint32_t)((hi - lo) / cell) + 2u;
    return lo + (float)(steer_rng_next(r) % cells) * cell;
  }
  if (k == 8)
    return (steer_rng_next(r) & 1u) ? lo : hi;
  return (steer_rng_next(r) & 1u) ? lo - 1000.0f : hi + 1000.0f;
}

typedef struct grid_case {
  vec2 min, max;
  float cell;
} grid_case;

static const grid_case cases[] = {
    {{-50.0f, -30.0f}, {40.0f, 60.0f}, 8.0f}, {{-50.0f, -30.0f}, {40.0f, 60.0f}, 3.0f},
    {{0.0f, 0.0f}, {10.0f, 10.0f}, 0.7f},     {{-5.0f, -5.0f}, {5.0f, 5.0f}, 100.0f}, /* one cell */
    {{-100.0f, 0.0f}, {100.0f, 1.0f}, 1.0f}, /* a single row of cells */
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static const float radii_in_cells[] = {0.01f, 0.5f, 1.0f, 1.5f, 3.0f, 40.0f};
static const uint32_t maxes[] = {1, 3, 8, 9, 32, 300, NMAX};

START_TEST(test_nearest_brute_force) {
  /* _i: the seed */
  steer_rng r;
  steer_rng_seed(&r, 1000u + (uint64_t)_i);
  static float px[NMAX], py[NMAX];
  for (size_t c = 0; c < NCASES; c++) {
    const grid_case *gc = &cases[c];
    steer_grid g;
    ck_assert_int_eq(steer_grid_init(&g, gc->min, gc->max, gc->cell, NMAX), STEER_OK);
    const uint32_t sizes[] = {1, 7, 200, 1500};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
      uint32_t n = sizes[s];
      float margin = 2.0f * gc->cell;
      for (uint32_t i = 0; i < n; i++) {
        px[i] = coord(&r, gc->min.x, gc->max.x, gc->cell, margin);
        py[i] = coord(&r, gc->min.y, gc->max.y, gc->cell, margin);
      }
      steer_grid_build(&g, px, py, n);
      for (int q = 0; q < 40; q++) {
        vec2 p;
        if (q % 4 == 0 && n > 0) {
          uint32_t i = steer_rng_next(&r) % n; /* on top of a point */
          p = v2(px[i], py[i]);
        } else {
          p = v2(coord(&r, gc->min.x, gc->max.x, gc->cell, margin),
                 coord(&r, gc->min.y, gc->max.y, gc->cell, margin));
        }
        float radius =
            radii_in_cells[steer_rng_next(&r) % (sizeof(radii_in_cells) / sizeof(float))] * gc->cell;
        uint32_t max = maxes[steer_rng_next(&r) % (sizeof(maxes) / sizeof(maxes[0]))];
        uint32_t exclude = (q % 3 == 0) ? steer_rng_next(&r) % n : UINT32_MAX;
        check_query(&g, px, py, n, p, radius, exclude, max);
      }
    }
    steer_grid_free(&g);
  }
}
END_TEST

/* Points far outside the bounds sit in the edge cells; a query next to them,
 * also outside, must still find them. */
START_TEST(test_outside_bounds) {
  steer_grid g;
  ck_assert_int_eq(steer_grid_init(&g, v2(0.0f, 0.0f), v2(100.0f, 100.0f), 10.0f, 16), STEER_OK);
  float px[] = {-500.0f, 50.0f, 600.0f, 50.0f, 700.0f, -50.0f};
  float py[] = {50.0f, -500.0f, 50.0f, 650.0f, 700.0f, -50.0f};
  uint32_t n = 6;
  steer_grid_build(&g, px, py, n);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t out[4];
    vec2 p = v2(px[i] + 0.5f, py[i] - 0.5f);
    uint32_t got = steer_grid_nearest(&g, p, 1.0f, UINT32_MAX, out, NULL, 4);
    ck_assert_msg(got == 1 && out[0] == i, "point %u at (%g,%g) not found", i, (double)px[i], (double)py[i]);
    check_query(&g, px, py, n, p, 1.0f, UINT32_MAX, 4);
    check_query(&g, px, py, n, p, 2000.0f, UINT32_MAX, 8);
  }
  steer_grid_free(&g);
}
END_TEST

/* Radii far beyond the bounds (and infinite) cover every point. */
START_TEST(test_huge_radius) {
  steer_grid g;
  ck_assert_int_eq(steer_grid_init(&g, v2(-10.0f, -10.0f), v2(10.0f, 10.0f), 1.0f, 64), STEER_OK);
  float px[64], py[64];
  steer_rng r;
  steer_rng_seed(&r, 7);
  for (uint32_t i = 0; i < 64; i++) {
    px[i] = steer_rng_range(&r, -10.0f, 10.0f);
    py[i] = steer_rng_range(&r, -10.0f, 10.0f);
  }
  steer_grid_build(&g, px, py, 64);
  const float radii[] = {1e3f, 1e9f, 5e9f, 1e20f, 1e30f, INFINITY};
  for (size_t k = 0; k < sizeof(radii) / sizeof(float); k++) {
    uint32_t out[64];
    uint32_t got = steer_grid_nearest(&g, v2(0.0f, 0.0f), radii[k], UINT32_MAX, out, NULL, 64);
    ck_assert_msg(got == 64, "radius %g found %u of 64", (double)radii[k], got);
    if (isfinite(radii[k]) && radii[k] < 1e19f)
      check_query(&g, px, py, 64, v2(3.0f, -4.0f), radii[k], 5, 64);
  }
  steer_grid_free(&g);
}
END_TEST

START_TEST(test_exclude) {
  steer_grid g;
  ck_assert_int_eq(steer_grid_init(&g, v2(0.0f, 0.0f), v2(10.0f, 10.0f), 2.0f, 8), STEER_OK);
  float px[] = {5.0f, 5.5f, 7.0f};
  float py[] = {5.0f, 5.0f, 5.0f};
  steer_grid_build(&g, px, py, 3);
  uint32_t out[3];
  float d2[3];
  ck_assert_uint_eq(steer_grid_nearest(&g, v2(5.0f, 5.0f), 3.0f, UINT32_MAX, out, d2, 3), 3);
  ck_assert_uint_eq(out[0], 0);
  ck_assert_uint_eq(out[1], 1);
  ck_assert_uint_eq(out[2], 2);
  ck_assert_float_eq(d2[0], 0.0f);
  ck_assert_float_eq(d2[1], 0.25f);
  ck_assert_float_eq(d2[2], 4.0f);
  /* Excluding the agent itself leaves its neighbours, nearest first. */
  ck_assert_uint_eq(steer_grid_nearest(&g, v2(5.0f, 5.0f), 3.0f, 0, out, d2, 3), 2);
  ck_assert_uint_eq(out[0], 1);
  ck_assert_uint_eq(out[1], 2);
  ck_assert_uint_eq(steer_grid_nearest(&g, v2(5.0f, 5.0f), 3.0f, 1, out, NULL, 1), 1);
  ck_assert_uint_eq(out[0], 0);
  /* Strictly within: a point exactly at the radius is out. */
  ck_assert_uint_eq(steer_grid_nearest(&g, v2(5.0f, 5.0f), 2.0f, 0, out, NULL, 3), 1);
  ck_assert_uint_eq(out[0], 1);
  steer_grid_free(&g);
}
END_TEST

/* Equal distances come out in scan order (rows by y, then columns by x, then
 * index within a cell), the same on every call and after a rebuild. */
START_TEST(test_ties_deterministic) {
  steer_grid g;
  ck_assert_int_eq(steer_grid_init(&g, v2(0.0f, 0.0f), v2(20.0f, 20.0f), 1.0f, 32), STEER_OK);
  /* Four points at distance 2 from (10.5, 10.5), inserted in a shuffled order. */
  float px[] = {12.5f, 10.5f, 8.5f, 10.5f};
  float py[] = {10.5f, 12.5f, 10.5f, 8.5f};
  steer_grid_build(&g, px, py, 4);
  uint32_t out[4];
  const uint32_t expect[] = {3, 2, 0, 1}; /* (10.5,8.5) (8.5,10.5) (12.5,10.5) (10.5,12.5) */
  for (int rep = 0; rep < 3; rep++) {
    ck_assert_uint_eq(steer_grid_nearest(&g, v2(10.5f, 10.5f), 3.0f, UINT32_MAX, out, NULL, 4), 4);
    for (int i = 0; i < 4; i++)
      ck_assert_uint_eq(out[i], expect[i]);
    /* When the list is full the first ones in scan order win. */
    ck_assert_uint_eq(steer_grid_nearest(&g, v2(10.5f, 10.5f), 3.0f, UINT32_MAX, out, NULL, 2), 2);
    ck_assert_uint_eq(out[0], 3);
    ck_assert_uint_eq(out[1], 2);
    steer_grid_build(&g, px, py, 4);
  }

  /* Coincident points: index order, lowest indices kept. */
  float cx[10], cy[10];
  for (int i = 0; i < 10; i++) {
    cx[i] = 3.25f;
    cy[i] = 7.75f;
  }
  steer_grid_build(&g, cx, cy, 10);
  uint32_t o2[10];
  ck_assert_uint_eq(steer_grid_nearest(&g, v2(3.0f, 7.0f), 1.0f, 2, o2, NULL, 4), 4);
  const uint32_t e2[] = {0, 1, 3, 4};
  for (int i = 0; i < 4; i++)
    ck_assert_uint_eq(o2[i], e2[i]);
  steer_grid_free(&g);
}
END_TEST

START_TEST(test_empty_and_degenerate) {
  steer_grid g;
  ck_assert_int_eq(steer_grid_init(&g, v2(0.0f, 0.0f), v2(10.0f, 10.0f), 1.0f, 4), STEER_OK);
  uint32_t out[4];
  float d2[4];
  steer_grid_build(&g, NULL, NULL, 0);
  ck_assert_uint_eq(steer_grid_nearest(&g, v2(5.0f, 5.0f), 100.0f, UINT32_MAX, out, d2, 4), 0);
  float px[] = {5.0f}, py[] = {5.0f};
  steer_grid_build(&g, px, py, 1);
  ck_assert_uint_eq(steer_grid_nearest(&g, v2(5.0f, 5.0f), 1.0f, UINT32_MAX, out, d2, 4), 1);
  ck_assert_uint_eq(steer_grid_nearest(&g, v2(5.0f, 5.0f), 1.0f, UINT32_MAX, out, d2, 0), 0);
  ck_assert_uint_eq(steer_grid_nearest(&g, v2(5.0f, 5.0f), 0.0f, UINT32_MAX, out, d2, 4), 0);
  ck_assert_uint_eq(steer_grid_nearest(&g, v2(5.0f, 5.0f), -1.0f, UINT32_MAX, out, d2, 4), 0);
  ck_assert_uint_eq(steer_grid_nearest(&g, v2(5.0f, 5.0f), NAN, UINT32_MAX, out, d2, 4), 0);
  /* Back to empty after holding a point. */
  steer_grid_build(&g, px, py, 0);
  ck_assert_uint_eq(steer_grid_nearest(&g, v2(5.0f, 5.0f), 100.0f, UINT32_MAX, out, d2, 4), 0);
  steer_grid_free(&g);
  steer_grid_free(&g); /* freeing twice is harmless: free zeroes the grid */
}
END_TEST

START_TEST(test_init_validation) {
  steer_grid g;
  ck_assert_int_eq(steer_grid_init(&g, v2(0.0f, 0.0f), v2(10.0f, 10.0f), 0.0f, 4), STEER_EINVAL);
  ck_assert_int_eq(steer_grid_init(&g, v2(0.0f, 0.0f), v2(10.0f, 10.0f), -1.0f, 4), STEER_EINVAL);
  ck_assert_int_eq(steer_grid_init(&g, v2(0.0f, 0.0f), v2(10.0f, 10.0f), NAN, 4), STEER_EINVAL);
  ck_assert_int_eq(steer_grid_init(&g, v2(0.0f, 0.0f), v2(0.0f, 10.0f), 1.0f, 4), STEER_EINVAL);
  ck_assert_int_eq(steer_grid_init(&g, v2(0.0f, 0.0f), v2(10.0f, -1.0f), 1.0f, 4), STEER_EINVAL);
  ck_assert_int_eq(steer_grid_init(&g, v2(0.0f, 0.0f), v2(10.0f, 10.0f), 1.0f, 0), STEER_EINVAL);
  /* Tiny cells over huge bounds: the cell grows to respect the cell cap, and
   * queries stay exact. */
  ck_assert_int_eq(steer_grid_init(&g, v2(-1e5f, -1e5f), v2(1e5f, 1e5f), 0.01f, 256), STEER_OK);
  ck_assert_uint_le((uint64_t)g.cols * g.rows, STEER_GRID_MAX_CELLS);
  ck_assert(g.cell > 0.01f);
  steer_rng r;
  steer_rng_seed(&r, 3);
  float px[256], py[256];
  for (int i = 0; i < 256; i++) {
    px[i] = steer_rng_range(&r, -1e5f, 1e5f);
    py[i] = steer_rng_range(&r, -1e5f, 1e5f);
  }
  steer_grid_build(&g, px, py, 256);
  for (int q = 0; q < 50; q++) {
    vec2 p = steer_rng_point(&r, -1.1e5f, 1.1e5f, -1.1e5f, 1.1e5f);
    check_query(&g, px, py, 256, p, steer_rng_range(&r, 10.0f, 3e4f), UINT32_MAX, 8);
  }
  steer_grid_free(&g);
}
END_TEST

/* Moving every point and rebuilding (also with fewer points) forgets the old
 * positions entirely. */
START_TEST(test_rebuild_after_moves) {
  steer_grid g;
  ck_assert_int_eq(steer_grid_init(&g, v2(-20.0f, -20.0f), v2(20.0f, 20.0f), 2.5f, 400), STEER_OK);
  static float px[400], py[400];
  steer_rng r;
  steer_rng_seed(&r, 99);
  for (uint32_t i = 0; i < 400; i++) {
    px[i] = steer_rng_range(&r, -20.0f, 20.0f);
    py[i] = steer_rng_range(&r, -20.0f, 20.0f);
  }
  uint32_t n = 400;
  for (int round = 0; round < 30; round++) {
    steer_grid_build(&g, px, py, n);
    for (int q = 0; q < 10; q++) {
      vec2 p = steer_rng_point(&r, -22.0f, 22.0f, -22.0f, 22.0f);
      check_query(&g, px, py, n, p, steer_rng_range(&r, 0.5f, 8.0f), q == 0 ? 0 : UINT32_MAX, 32);
    }
    /* Move everyone a little (some far), sometimes drop points off the end. */
    for (uint32_t i = 0; i < n; i++) {
      px[i] += steer_rng_range(&r, -1.5f, 1.5f);
      py[i] += steer_rng_range(&r, -1.5f, 1.5f);
      if (steer_rng_next(&r) % 50u == 0)
        px[i] = -px[i];
    }
    if (round % 5 == 4)
      n -= 50;
  }
  /* Everything in one place after being spread out. */
  for (uint32_t i = 0; i < n; i++)
    px[i] = py[i] = 1.0f;
  steer_grid_build(&g, px, py, n);
  uint32_t out[8];
  ck_assert_uint_eq(steer_grid_nearest(&g, v2(1.0f, 1.0f), 0.1f, UINT32_MAX, out, NULL, 8), 8);
  ck_assert_uint_eq(steer_grid_nearest(&g, v2(15.0f, 15.0f), 5.0f, UINT32_MAX, out, NULL, 8), 0);
  steer_grid_free(&g);
}
END_TEST

/* A lattice: many exactly equal distances, around and away from the query
 * point, and in the same and different cells. The fast query (max <= 8) must
 * order ties the way the general one does, by cell position. */
START_TEST(test_ties_lattice) {
  static float px[NMAX], py[NMAX];
  const float cells[] = {1.0f, 2.5f, 8.0f};
  for (size_t c = 0; c < sizeof(cells) / sizeof(cells[0]); c++) {
    steer_grid g;
    ck_assert_int_eq(steer_grid_init(&g, v2(0.0f, 0.0f), v2(40.0f, 40.0f), cells[c], NMAX), STEER_OK);
    uint32_t n = 0;
    /* Shuffled insertion order, so dense order is not cell order. */
    for (uint32_t k = 0; k < 41 * 41; k++) {
      uint32_t i = (k * 577u) % (41u * 41u);
      px[n] = (float)(i % 41u);
      py[n] = (float)(i / 41u);
      n++;
    }
    steer_grid_build(&g, px, py, n);
    for (uint32_t q = 0; q < 60; q++) {
      vec2 p =
          v2((float)(q % 9) * 4.5f + (q % 2 ? 0.5f : 0.0f), (float)(q / 9) * 5.0f + (q % 3 ? 0.5f : 0.0f));
      for (uint32_t max = 1; max <= STEER_GRID_FAST_K; max++)
        check_query(&g, px, py, n, p, 1.0f + (float)(q % 5), q % 4 == 0 ? q : UINT32_MAX, max);
    }
    steer_grid_free(&g);
  }
}
END_TEST

/* A crowd: hundreds of points within a metre (and some coincident), so the
 * box around a guessed bound holds far more candidates than the query ranks
 * at once; the answers must still be the brute-force ones, ties in cell order. */
START_TEST(test_crowd) {
  static float px[NMAX], py[NMAX];
  steer_rng r;
  steer_rng_seed(&r, 77u);
  steer_grid g;
  ck_assert_int_eq(steer_grid_init(&g, v2(0.0f, 0.0f), v2(64.0f, 64.0f), 8.0f, NMAX), STEER_OK);
  uint32_t n = 0;
  for (; n < 400; n++) { /* a tight cluster across a cell corner */
    px[n] = 16.0f + steer_rng_range(&r, -0.5f, 0.5f);
    py[n] = 16.0f + steer_rng_range(&r, -0.5f, 0.5f);
  }
  for (; n < 460; n++) { /* coincident points */
    px[n] = 20.0f;
    py[n] = 20.0f;
  }
  for (; n < 1200; n++) { /* sparse background */
    px[n] = steer_rng_range(&r, 0.0f, 64.0f);
    py[n] = steer_rng_range(&r, 0.0f, 64.0f);
  }
  steer_grid_build(&g, px, py, n);
  for (uint32_t q = 0; q < 60; q++) {
    vec2 p = q % 3 == 0 ? v2(20.0f, 20.0f)
             : q % 3 == 1
                 ? v2(16.0f + steer_rng_range(&r, -1.0f, 1.0f), 16.0f + steer_rng_range(&r, -1.0f, 1.0f))
                 : steer_rng_point(&r, 0.0f, 64.0f, 0.0f, 64.0f);
    uint32_t exclude = q % 2 ? 400u + q : UINT32_MAX;
    for (uint32_t max = 1; max <= STEER_GRID_FAST_K; max += 3)
      check_query(&g, px, py, n, p, 2.0f + (float)(q % 7) * 3.0f, exclude, max);
  }
  steer_grid_free(&g);
}
END_TEST

/* The answer's indices, each below the agent count: returns n. */
static uint32_t nb_count_check(const uint32_t *nb, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    ck_assert_uint_lt(nb[i], 900u);
  return n;
}

/* The kept candidate lists against the plain query (itself checked against
 * brute force above) and brute force, over rounds of moving points: drifting
 * lattices with exact ties and coincident points, query points away from the
 * agent's grid position, points that jump across the field into a crowd,
 * points clamped in from outside the bounds, dense indices changed under a
 * restart, and k and radius changing between rounds. The lists must be
 * re-ranked most of the time (not just rebuilt), and give the same answer
 * bit for bit every time. */
START_TEST(test_kept_lists) {
  enum { N = 900 };
  static float px[N], py[N];
  static uint32_t a[STEER_GRID_LIST_MAX_K], b[STEER_GRID_LIST_MAX_K];
  static cand all[N];
  /* _i 0, 1: two point sets; 2, 3: the same without the AVX2 path (its
   * rebuilds through the four-lane guessed-bound query). */
  const int was = steer_grid_set_avx2(_i < 2);
  const int set = _i % 2;
  steer_rng r;
  steer_rng_seed(&r, 1234u + (uint64_t)set);
  steer_grid g;
  steer_grid_lists L, L2, L3; /* L2: the same lists through steer_grid_nearest_kept_idx; L3: its tracking */
  ck_assert_int_eq(steer_grid_init(&g, v2(0.0f, 0.0f), v2(60.0f, 60.0f), 2.5f, N), STEER_OK);
  ck_assert_int_eq(steer_grid_lists_init(&L, N), STEER_OK);
  ck_assert_int_eq(steer_grid_lists_init(&L2, N), STEER_OK);
  ck_assert_int_eq(steer_grid_lists_init(&L3, N), STEER_OK);
  for (uint32_t i = 0; i < N; i++) {
    px[i] = 1.0f + 2.0f * (float)(i % 30);
    py[i] = 1.0f + 2.0f * (float)(i / 30);
    if (set == 1) { /* jittered, with a crowd and coincident pairs */
      px[i] += steer_rng_range(&r, -0.6f, 0.6f);
      py[i] += steer_rng_range(&r, -0.6f, 0.6f);
      if (i % 9 == 0)
        px[i] = px[i - (i ? 1 : 0)], py[i] = py[i - (i ? 1 : 0)];
      if (i >= 800)
        px[i] = 30.0f + steer_rng_range(&r, -1.0f, 1.0f), py[i] = 30.0f + steer_rng_range(&r, -1.0f, 1.0f);
    }
  }
  static float rad[N];
  for (uint32_t i = 0; i < N; i++)
    rad[i] = 0.5f + 0.001f * (float)i;
  float hint_a[N] = {0}, hint_b[N] = {0}, hint_c[N] = {0};
  uint64_t queries = 0, reranked = 0;
  for (uint32_t round = 0; round < 120; round++) {
    int restart = 0;
    if (round % 23 == 22) { /* dense indices change: swap some points */
      for (uint32_t s2 = 0; s2 < 40; s2++) {
        uint32_t i = (uint32_t)(steer_rng_next(&r) % N), j = (uint32_t)(steer_rng_next(&r) % N);
        float t = px[i];
        px[i] = px[j];
        px[j] = t;
        t = py[i];
        py[i] = py[j];
        py[j] = t;
      }
      restart = 1;
    }
    steer_grid_build_payload(&g, px, py, NULL, NULL, rad, NULL, N);
    steer_grid_lists_track(&L, &g, px, py, NULL, N, restart);
    /* L2 tracked in ranges, out of order, as the world's threads do: the same
     * records, bound and epoch as one pass (L3, checked then dropped). */
    steer_grid_lists_track_begin(&L2, restart);
    uint32_t cut = 1u + (uint32_t)(steer_rng_next(&r) % (N - 1));
    steer_grid_lists_track_range(&L2, &g, px, py, rad, cut, N);
    steer_grid_lists_track_range(&L2, &g, px, py, rad, 0, cut / 3);
    steer_grid_lists_track_range(&L2, &g, px, py, rad, cut / 3, cut);
    steer_grid_lists_track_end(&L2);
    steer_grid_lists_track(&L3, &g, px, py, rad, N, restart);
    ck_assert(memcmp(L2.rec, L3.rec, N * sizeof(*L2.rec)) == 0);
    ck_assert(L2.moved == L3.moved && L2.epoch == L3.epoch && L2.round == L3.round);
    uint32_t k = round < 60 ? 8u : 1u + round % STEER_GRID_LIST_MAX_K;
    float radius = round < 60 ? 5.0f : 2.0f + (float)(round % 5);
    for (uint32_t d = 0; d < N; d++) {
      /* The query point is usually the agent's position, sometimes off it. */
      vec2 p = v2(px[d], py[d]);
      if (d % 17 == 0)
        p = v2(p.x + 0.25f * (float)(round % 4), p.y - 0.1f);
      float ha = hint_a[d], hb = hint_b[d];
      uint32_t na = steer_grid_nearest_kept(&g, &L, d, p, radius, a, NULL, NULL, k, &ha, 0.0f);
      uint32_t nb = steer_grid_nearest_pos(&g, p, radius, d, b, k, &hb);
      ck_assert_msg(na == nb, "round %u agent %u: kept %u, plain %u", round, d, na, nb);
      for (uint32_t i = 0; i < na; i++)
        ck_assert_msg(a[i] == b[i], "round %u agent %u rank %u: kept pos %u, plain %u", round, d, i, a[i],
                      b[i]);
      ck_assert(ha == hb);
      /* By index: the same agents (dense indices of the same cell positions),
       * with their records as the grid holds them. */
      uint32_t scratch[STEER_GRID_LIST];
      const uint32_t *nbi = NULL;
      float hc = hint_c[d];
      uint32_t nc = steer_grid_nearest_kept_idx(&g, &L2, d, p, radius, k, &hc, 0.0f, scratch, &nbi);
      ck_assert_msg(nc == nb_count_check(nbi, nc) && nc == na, "round %u agent %u: by index %u, kept %u",
                    round, d, nc, na);
      for (uint32_t i = 0; i < nc; i++) {
        const steer_grid_rec *c = &L2.rec[nbi[i]];
        ck_assert_msg(nbi[i] == g.items[b[i]], "round %u agent %u rank %u: index %u, plain %u", round, d, i,
                      nbi[i], g.items[b[i]]);
        ck_assert(c->pos == b[i] && c->x == g.sx[b[i]] && c->y == g.sy[b[i]] && c->r == g.sr[b[i]]);
      }
      ck_assert(hc == hb);
      hint_a[d] = ha;
      hint_b[d] = hb;
      hint_c[d] = hc;
      queries++;
      reranked += L.e[d].born != L.round;
      if (d % 50 == 0) { /* and brute force, by distance */
        uint32_t m = 0;
        float r2 = radius * radius;
        for (uint32_t i = 0; i < N; i++)
          if (i != d && dist2(px[i], py[i], p) < r2)
            all[m].d2 = dist2(px[i], py[i], p), all[m].idx = i, m++;
        qsort(all, m, sizeof(cand), cand_cmp);
        ck_assert_uint_eq(na, m < k ? m : k);
        for (uint32_t i = 0; i < na; i++)
          ck_assert(dist2(g.sx[a[i]], g.sy[a[i]], p) == all[i].d2);
      }
    }
    /* Move: a small drift for everyone (a ripple, so ranks change), now and
     * then a point jumping far into the crowd or out of the bounds. */
    for (uint32_t i = 0; i < N; i++) {
      px[i] += steer_rng_range(&r, -0.15f, 0.15f);
      py[i] += steer_rng_range(&r, -0.15f, 0.15f);
    }
    if (round % 7 == 3) {
      uint32_t j = (uint32_t)(steer_rng_next(&r) % N);
      px[j] = px[(j + N / 2) % N] + 0.3f;
      py[j] = py[(j + N / 2) % N];
    }
    if (round % 13 == 5)
      px[(round * 7u) % N] = -3.0f;
  }
  ck_assert_msg(reranked * 2 > queries, "lists re-ranked %llu of %llu queries", (unsigned long long)reranked,
                (unsigned long long)queries);
  steer_grid_lists_free(&L3);
  steer_grid_lists_free(&L2);
  steer_grid_lists_free(&L);
  steer_grid_set_avx2(was);
  steer_grid_free(&g);
}
END_TEST

static Suite *grid_suite(void) {
  Suite *s = suite_create("grid");
  TCase *tc = tcase_create("nearest");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_nearest_brute_force, 0, 4);
  tcase_add_test(tc, test_outside_bounds);
  tcase_add_test(tc, test_huge_radius);
  tcase_add_test(tc, test_exclude);
  tcase_add_test(tc, test_ties_deterministic);
  tcase_add_test(tc, test_ties_lattice);
  tcase_add_test(tc, test_crowd);
  tcase_add_test(tc, test_empty_and_degenerate);
  suite_add_tcase(s, tc);
  tc = tcase_create("build");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_init_validation);
  tcase_add_test(tc, test_rebuild_after_moves);
  tcase_add_loop_test(tc, test_kept_lists, 0, 4);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return check_run(grid_suite()); }

/* test_dense.c: separation and its blend four agents at a time (dense.h)
 * against the scalar functions, bit for bit.
 *
 * steer_separation_blend_x4 must give, for each of four agents, exactly
 * steer_blend({o, steer_separation(...)}, {1, weight}) -- the world's
 * dynamic_finish for an agent with separation blended in -- over ordinary
 * crowds and every edge the scalar code branches on: neighbours out of reach,
 * exactly at the reach, coincident with the agent (the push along the
 * heading), NaN and infinite positions, zero and negative reach, sums that
 * clip or whose square overflows, different neighbour counts per lane
 * (0..32), weights of 0 and above 1. Ordinary quads must take the vector path
 * (with SSE2), so the test is not the scalar code against itself. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check_run.h"
#include "dense.h"

/* The same bits, or both NaN: a NaN's sign and payload are not kept by the
 * compilers through arithmetic (GCC at -O3 folds the scalar code's negations
 * and subtractions so that a NaN comes out with the other sign), so where
 * the scalar code gives NaN the batch must give NaN, of any sign. */
static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)); }

static float pick(steer_rng *r, float lo, float hi, int edgy) {
  uint32_t k = steer_rng_next(r) % 64u;
  if (!edgy || k >= 10)
    return steer_rng_range(r, lo, hi);
  static const float edges[] = {0.0f, -0.0f, 1e-30f, -1e-40f, 1e19f, -3e38f, INFINITY, NAN, 0.5f, 4.0f};
  return edges[k];
}

static steer_output scalar_finish(const steer_state *s, const steer_limits *l, const steer_params *p, float w,
                                  const vec2 *nxy, const float *nrad, uint32_t n, steer_output o) {
  steer_output sep = steer_separation(s, l, p, nxy, nrad, (int)n);
  steer_output both[2] = {o, sep};
  float weights[2] = {1.0f, w};
  return steer_blend(both, weights, 2, l);
}

#define NMAX 32

static void run_quads(uint32_t seed, int rounds, int edgy_every, long *vector_lanes, long *ordinary) {
  steer_rng r;
  steer_rng_seed(&r, seed);
  for (int round = 0; round < rounds; round++) {
    int edgy = edgy_every > 0 && round % edgy_every == 0;
    steer_state st[4];
    steer_limits lim[4];
    steer_params par[4];
    vec2 nxy[4][NMAX];
    float nrad[4][NMAX];
    uint32_t n[4];
    float weight[4];
    steer_output o[4], out[4];
    const steer_state *sp[4];
    const steer_limits *lp[4];
    const steer_params *pp[4];
    const vec2 *xyp[4];
    const float *rp[4];
    int crowd = !edgy;
    for (int j = 0; j < 4; j++) {
      memset(&st[j], 0, sizeof st[j]);
      st[j].position = v2(pick(&r, -300.0f, 300.0f, edgy), pick(&r, -300.0f, 300.0f, edgy));
      st[j].orientation = pick(&r, -STEER_PI, STEER_PI, edgy);
      lim[j] = steer_default_limits();
      lim[j].radius = steer_rng_next(&r) % 16u == 0 ? 0.0f : steer_rng_range(&r, 0.2f, 2.0f);
      lim[j].max_acceleration = steer_rng_range(&r, 0.5f, 20.0f);
      lim[j].max_angular_acceleration = steer_rng_range(&r, 0.5f, 30.0f);
      par[j] = steer_default_params();
      par[j].separation_radius = steer_rng_next(&r) % 16u == 0 ? 0.0f : steer_rng_range(&r, 0.5f, 15.0f);
      if (edgy && steer_rng_next(&r) % 8u == 0)
        par[j].separation_radius = -lim[j].radius - 1.0f; /* no reach at all */
      uint32_t wk = steer_rng_next(&r) % 8u;
      weight[j] = wk == 0 ? 0.0f : wk == 1 ? 3.5f : steer_rng_range(&r, 0.1f, 1.0f);
      o[j].linear = v2(pick(&r, -25.0f, 25.0f, edgy), pick(&r, -25.0f, 25.0f, edgy));
      o[j].angular = pick(&r, -40.0f, 40.0f, edgy);
      /* Mostly eight neighbours, as a crowd has; sometimes any count. */
      n[j] = steer_rng_next(&r) % 4u == 0 ? steer_rng_next(&r) % (NMAX + 1) : 8u;
      float reach0 = par[j].separation_radius + lim[j].radius;
      for (uint32_t i = 0; i < n[j]; i++) {
        uint32_t kind = steer_rng_next(&r) % 32u;
        nrad[j][i] = steer_rng_next(&r) % 4u == 0 ? lim[j].radius : steer_rng_range(&r, 0.0f, 2.0f);
        float reach = reach0 + nrad[j][i];
        float a = steer_rng_range(&r, -STEER_PI, STEER_PI);
        float dist =
            steer_rng_range(&r, 0.01f, 1.3f) * (reach > 0.0f ? reach : 1.0f); /* not coincident by rounding */
        vec2 at = v2_add(st[j].position, v2(dist * cosf(a), dist * sinf(a)));
        if (kind == 0) /* exactly at the reach, along an axis */
          at = v2_add(st[j].position, v2(reach, 0.0f));
        else if (kind == 1 && edgy) /* coincident: pushed along the heading */
          at = st[j].position;
        else if (kind == 2 && edgy)
          at = v2(pick(&r, -1e30f, 1e30f, 1), pick(&r, -1e30f, 1e30f, 1));
        nxy[j][i] = at;
      }
      sp[j] = &st[j];
      lp[j] = &lim[j];
      pp[j] = &par[j];
      xyp[j] = nxy[j];
      rp[j] = nrad[j];
    }
    int done = steer_separation_blend_x4(sp, lp, pp, weight, xyp, rp, n, o, out);
    *vector_lanes += done;
    if (crowd) {
      (*ordinary)++;
#if defined(__SSE2__)
      ck_assert_int_eq(done, 4);
#endif
    }
    for (int j = 0; j < 4; j++) {
      steer_output want = scalar_finish(sp[j], lp[j], pp[j], weight[j], nxy[j], nrad[j], n[j], o[j]);
      ck_assert_msg(same_bits(out[j].linear.x, want.linear.x) && same_bits(out[j].linear.y, want.linear.y) &&
                        same_bits(out[j].angular, want.angular),
                    "seed %u round %d lane %d (n %u): batch (%a, %a, %a), scalar (%a, %a, %a)", seed, round,
                    j, n[j], (double)out[j].linear.x, (double)out[j].linear.y, (double)out[j].angular,
                    (double)want.linear.x, (double)want.linear.y, (double)want.angular);
    }
    /* The neighbours by index into records (the kept query's answer), with
     * the records scattered and other agents' records in between: the same
     * separation, bit for bit. */
    static steer_grid_rec rec[4 * NMAX + 7];
    uint32_t idx[4][NMAX];
    const uint32_t *nbp[4];
    memset(rec, 0x7f, sizeof rec);
    for (int j = 0; j < 4; j++) {
      for (uint32_t i = 0; i < n[j]; i++) {
        uint32_t at =
            (uint32_t)(((uint32_t)j * NMAX + i) * 7u + 3u) % (4 * NMAX + 7); /* 7 and 135: coprime */
        idx[j][i] = at;
        rec[at].x = nxy[j][i].x;
        rec[at].y = nxy[j][i].y;
        rec[at].pos = at;
        rec[at].r = nrad[j][i];
      }
      nbp[j] = idx[j];
    }
    steer_output sa[4], sb[4];
    int da = steer_separation_x4(sp, lp, pp, xyp, rp, n, sa);
    int db = steer_separation_x4_idx(sp, lp, pp, rec, nbp, n, sb);
    ck_assert_int_eq(da, db);
    for (int j = 0; j < 4; j++)
      ck_assert_msg(same_bits(sa[j].linear.x, sb[j].linear.x) && same_bits(sa[j].linear.y, sb[j].linear.y) &&
                        same_bits(sa[j].angular, sb[j].angular),
                    "seed %u round %d lane %d (n %u): by index (%a, %a), copied (%a, %a)", seed, round, j,
                    n[j], (double)sb[j].linear.x, (double)sb[j].linear.y, (double)sa[j].linear.x,
                    (double)sa[j].linear.y);
    /* In place (out = o), as the world calls it. */
    steer_output io[4];
    memcpy(io, o, sizeof io);
    steer_separation_blend_x4(sp, lp, pp, weight, xyp, rp, n, io, io);
    for (int j = 0; j < 4; j++)
      ck_assert(memcmp(&io[j], &out[j], sizeof io[j]) == 0);
  }
}

/* Both vector paths: four lanes (SSE2), and eight (AVX) where the processor
 * has it. */
START_TEST(test_separation_blend_x4_ordinary) {
  for (int avx = 0; avx <= steer_dense_avx_supported(); avx++) {
    int was = steer_dense_set_avx(avx);
    ck_assert_int_eq(steer_dense_avx(), avx);
    long lanes = 0, ordinary = 0;
    run_quads(13u + (uint32_t)avx, 30000, 0, &lanes, &ordinary);
    ck_assert_int_eq(ordinary, 30000);
#if defined(__SSE2__)
    ck_assert_int_eq(lanes, 4 * ordinary);
#endif
    steer_dense_set_avx(was);
  }
}
END_TEST

START_TEST(test_separation_blend_x4_edges) {
  for (int avx = 0; avx <= steer_dense_avx_supported(); avx++) {
    int was = steer_dense_set_avx(avx);
    long lanes = 0, ordinary = 0;
    run_quads(2026u + (uint32_t)avx, 60000, 2, &lanes, &ordinary);
    ck_assert_int_gt(ordinary, 20000);
#if defined(__SSE2__)
    /* The edge rounds must have sent some lanes to the scalar code, and the
     * ordinary ones none. */
    ck_assert_int_gt(lanes, 4 * ordinary);
    ck_assert_int_lt(lanes, 4 * 60000);
#endif
    steer_dense_set_avx(was);
  }
}
END_TEST

/* The same four agents in every lane (the world may pass one agent's state
 * only once per quad, but the kernel must not depend on that), and a quad
 * where one agent has no neighbours while the others have many. */
START_TEST(test_separation_blend_x4_shared_and_empty) {
  steer_state st = {0};
  st.position = v2(10.0f, -4.0f);
  st.orientation = 0.3f;
  steer_limits lim = steer_default_limits();
  lim.radius = 1.5f;
  steer_params par = steer_default_params();
  par.separation_radius = 12.0f;
  vec2 nxy[4][NMAX];
  float nrad[4][NMAX];
  for (int j = 0; j < 4; j++)
    for (int i = 0; i < NMAX; i++) {
      nxy[j][i] = v2(10.0f + 0.37f * (float)(i + 1) * (float)(j + 1), -4.0f + 0.21f * (float)i);
      nrad[j][i] = 1.5f;
    }
  uint32_t n[4] = {0, 32, 8, 3};
  const steer_state *sp[4] = {&st, &st, &st, &st};
  const steer_limits *lp[4] = {&lim, &lim, &lim, &lim};
  const steer_params *pp[4] = {&par, &par, &par, &par};
  const vec2 *xyp[4] = {nxy[0], nxy[1], nxy[2], nxy[3]};
  const float *rp[4] = {nrad[0], nrad[1], nrad[2], nrad[3]};
  float weight[4] = {1.0f, 1.0f, 0.5f, 2.0f};
  steer_output o[4], out[4];
  for (int j = 0; j < 4; j++) {
    o[j].linear = v2(1.0f, -2.0f);
    o[j].angular = 0.7f;
  }
  int done = steer_separation_blend_x4(sp, lp, pp, weight, xyp, rp, n, o, out);
#if defined(__SSE2__)
  ck_assert_int_eq(done, 4);
#else
  ck_assert_int_eq(done, 0);
#endif
  for (int j = 0; j < 4; j++) {
    steer_output want = scalar_finish(&st, &lim, &par, weight[j], nxy[j], nrad[j], n[j], o[j]);
    ck_assert(same_bits(out[j].linear.x, want.linear.x) && same_bits(out[j].linear.y, want.linear.y) &&
              same_bits(out[j].angular, want.angular));
  }
  /* No neighbours: the behaviour's output clipped, nothing added. */
  ck_assert(out[0].linear.x == 1.0f && out[0].linear.y == -2.0f);
  /* Many close neighbours on one side push the agent the other way. */
  ck_assert(out[1].linear.x < o[1].linear.x);
}
END_TEST

static Suite *dense_suite(void) {
  Suite *s = suite_create("dense");
  TCase *tc = tcase_create("separation_x4");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_separation_blend_x4_ordinary);
  tcase_add_test(tc, test_separation_blend_x4_edges);
  tcase_add_test(tc, test_separation_blend_x4_shared_and_empty);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return check_run(dense_suite()); }

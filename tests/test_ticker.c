/* test_ticker.c: the fixed-rate schedule: no drift, bounded catch-up, overruns. */
#include <check.h>
#include <stdlib.h>

#include "check_run.h"
#include "rng.h"
#include "ticker.h"

#define SEC 1000000000ull

START_TEST(deadlines_are_exact_multiples) {
  steerd_ticker t;
  steerd_ticker_init(&t, 30, 5 * SEC, 100);
  ck_assert_uint_eq(steerd_ticker_deadline(&t), 5 * SEC + SEC / 30);
  ck_assert_uint_eq(steerd_ticker_due(&t, 5 * SEC + SEC / 30 - 1), 0);
  ck_assert_uint_eq(steerd_ticker_due(&t, 5 * SEC + SEC / 30), 1);
  /* Tick 30 falls exactly one second after the start. */
  ck_assert_uint_eq(steerd_ticker_due(&t, 6 * SEC - 1), 28);
  ck_assert_uint_eq(steerd_ticker_due(&t, 6 * SEC), 1);
  ck_assert_uint_eq(t.ran, 30);
  ck_assert_uint_eq(steerd_ticker_wait_ns(&t, 6 * SEC), SEC / 30);
}
END_TEST

/* A timer that always fires late by up to 3 ms, for an hour of simulated time:
 * the count of ticks run equals elapsed * rate exactly, nothing skipped. */
START_TEST(no_drift_over_an_hour) {
  static const uint32_t rates[] = {30, 60, 7, 20};
  for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
    steerd_ticker t;
    steer_rng rng;
    steer_rng_seed(&rng, r + 1);
    uint64_t start = 123456789ull;
    steerd_ticker_init(&t, rates[r], start, 5);
    uint64_t now = start;
    uint64_t end = start + 3600ull * SEC;
    while (now < end) {
      now += steerd_ticker_wait_ns(&t, now) + (uint64_t)(steer_rng_float(&rng) * 3e6f);
      steerd_ticker_due(&t, now);
    }
    uint64_t expected = (now - start) * rates[r] / SEC;
    ck_assert_uint_eq(t.ran, expected);
    ck_assert_uint_eq(t.skipped, 0);
    ck_assert_uint_ge(t.ran, 3600ull * rates[r]);
  }
}
END_TEST

START_TEST(stall_is_caught_up_boundedly) {
  steerd_ticker t;
  steerd_ticker_init(&t, 30, 0, 5);
  ck_assert_uint_eq(steerd_ticker_due(&t, SEC), 5); /* 30 were due */
  ck_assert_uint_eq(t.skipped, 25);
  ck_assert_uint_eq(t.overruns, 1);
  /* The schedule resumes from now: the next tick is one period later, not 25. */
  ck_assert_uint_eq(steerd_ticker_due(&t, SEC + 1), 0);
  ck_assert_uint_eq(steerd_ticker_wait_ns(&t, SEC), SEC / 30);
  ck_assert_uint_eq(steerd_ticker_due(&t, SEC + SEC / 30), 1);
  ck_assert_uint_eq(t.overruns, 1);
}
END_TEST

START_TEST(late_by_two_ticks_runs_both) {
  steerd_ticker t;
  steerd_ticker_init(&t, 10, 0, 5);
  ck_assert_uint_eq(steerd_ticker_due(&t, SEC / 10 * 2 + 1), 2);
  ck_assert_uint_eq(t.overruns, 1);
  ck_assert_uint_eq(t.skipped, 0);
}
END_TEST

static Suite *ticker_suite(void) {
  Suite *s = suite_create("ticker");
  TCase *tc = check_tcase(s, "schedule", 60);
  tcase_add_test(tc, deadlines_are_exact_multiples);
  tcase_add_test(tc, no_drift_over_an_hour);
  tcase_add_test(tc, stall_is_caught_up_boundedly);
  tcase_add_test(tc, late_by_two_ticks_runs_both);
  return s;
}

int main(void) { return check_run(ticker_suite()); }

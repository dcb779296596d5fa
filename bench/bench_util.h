/* bench_util.h: what the benchmarks share to fill their tables: sorted
 * samples and medians, a clock in seconds, the machine's load average. */
#ifndef STEERD_BENCH_UTIL_H
#define STEERD_BENCH_UTIL_H

#include <stddef.h>
#include <time.h>

/* qsort's comparison for doubles, ascending. */
int bench_cmp_double(const void *a, const void *b);
/* The same for uint64_t. */
int bench_cmp_u64(const void *a, const void *b);

/* Sorts v[0..n) in place (n > 0) and returns its median: the middle value, or
 * the mean of the two middle ones when n is even. */
double bench_median(double *v, int n);

/* The clock clk (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID, ...) in seconds. */
double bench_now_s(clockid_t clk);

/* /proc/loadavg's line into out[size], without its newline; "?" when it
 * cannot be read. Other work on the machine skews every figure: tables show it. */
void bench_loadavg(char *out, size_t size);

#endif /* STEERD_BENCH_UTIL_H */

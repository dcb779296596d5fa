/* bench_util.c: see bench_util.h. */
#include "bench_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int bench_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double bench_now_s(clockid_t clk) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_loadavg(char *out, size_t size) {
  if (size < 2)
    return;
  strcpy(out, "?");
  FILE *la = fopen("/proc/loadavg", "r");
  if (!la)
    return;
  if (!fgets(out, (int)size, la))
    strcpy(out, "?");
  fclose(la);
  out[strcspn(out, "\n")] = 0;
}

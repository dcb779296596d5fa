/* log.c: see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static steerd_log_level min_level = STEERD_LOG_INFO;
static const char *const level_names[STEERD_LOG_LEVEL_COUNT] = {"debug", "info", "warn", "error"};

void steerd_log_set_level(steerd_log_level level) { min_level = level; }

int steerd_log_parse_level(const char *name) {
  for (int i = 0; i < STEERD_LOG_LEVEL_COUNT; i++)
    if (strcmp(name, level_names[i]) == 0)
      return i;
  return -1;
}

void steerd_log(steerd_log_level level, const char *fmt, ...) {
  if (level < min_level)
    return;
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  char line[1024];
  int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ", tm.tm_year + 1900,
                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L,
                   level_names[level]);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof(line))
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
  va_end(ap);
  /* One write per line so lines from a crash or a pipe never interleave. */
  fprintf(stderr, "%s\n", line);
  fflush(stderr);
}

/* log.c: see log.h. JSON lines are built with jansson, so any message text
 * (quotes, control bytes, invalid UTF-8 from a peer's name) comes out valid. */
#include "log.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOG_LINE_BYTES 1024

static steerd_log_level min_level = STEERD_LOG_INFO;
static steerd_log_format format = STEERD_LOG_TEXT;
static const char *const level_names[STEERD_LOG_LEVEL_COUNT] = {"debug", "info", "warn", "error"};
static const char *const format_names[STEERD_LOG_FORMAT_COUNT] = {"text", "json"};

void steerd_log_set_level(steerd_log_level level) { min_level = level; }
int steerd_log_enabled(steerd_log_level level) { return level >= min_level; }
void steerd_log_set_format(steerd_log_format f) { format = f; }

int steerd_log_parse_level(const char *name) {
  for (int i = 0; i < STEERD_LOG_LEVEL_COUNT; i++)
    if (strcmp(name, level_names[i]) == 0)
      return i;
  return -1;
}

int steerd_log_parse_format(const char *name) {
  for (int i = 0; i < STEERD_LOG_FORMAT_COUNT; i++)
    if (strcmp(name, format_names[i]) == 0)
      return i;
  return -1;
}

/* Bytes that are not valid UTF-8 become '?', which jansson would otherwise refuse. */
static void utf8_scrub(char *s) {
  unsigned char *p = (unsigned char *)s;
  while (*p) {
    int n = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3 : (*p & 0xF8) == 0xF0 ? 4 : 0;
    int ok = n > 0;
    for (int i = 1; ok && i < n; i++)
      ok = (p[i] & 0xC0) == 0x80;
    if (!ok) {
      *p++ = '?';
      continue;
    }
    p += n;
  }
}

static void write_text(const char *stamp, steerd_log_level level, const char *msg,
                       const steerd_log_field *fields, size_t count) {
  char line[LOG_LINE_BYTES + 256];
  int n = snprintf(line, sizeof line, "%s %-5s %s", stamp, level_names[level], msg);
  for (size_t i = 0; i < count && n > 0 && (size_t)n < sizeof line; i++) {
    const steerd_log_field *f = &fields[i];
    size_t room = sizeof line - (size_t)n;
    if (f->kind == STEERD_LOG_FIELD_INT)
      n += snprintf(line + n, room, " %s=%lld", f->key, (long long)f->i);
    else if (f->kind == STEERD_LOG_FIELD_REAL)
      n += snprintf(line + n, room, " %s=%g", f->key, f->d);
    else
      n += snprintf(line + n, room, " %s=%s", f->key, f->s ? f->s : "");
  }
  /* One write per line so lines from a crash or a pipe never interleave. */
  fprintf(stderr, "%s\n", line);
}

static void write_json(const char *stamp, steerd_log_level level, char *msg, const steerd_log_field *fields,
                       size_t count) {
  json_t *o = json_object();
  if (!o)
    return;
  utf8_scrub(msg);
  json_object_set_new(o, "time", json_string(stamp));
  json_object_set_new(o, "level", json_string(level_names[level]));
  json_object_set_new(o, "msg", json_string(msg));
  for (size_t i = 0; i < count; i++) {
    const steerd_log_field *f = &fields[i];
    json_t *v;
    if (f->kind == STEERD_LOG_FIELD_INT) {
      v = json_integer((json_int_t)f->i);
    } else if (f->kind == STEERD_LOG_FIELD_REAL) {
      v = json_real(f->d);
    } else {
      char s[LOG_LINE_BYTES];
      snprintf(s, sizeof s, "%s", f->s ? f->s : "");
      utf8_scrub(s);
      v = json_string(s);
    }
    if (v)
      json_object_set_new(o, f->key, v);
  }
  char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  if (text) {
    fprintf(stderr, "%s\n", text);
    free(text);
  }
  json_decref(o);
}

static void emit(steerd_log_level level, const steerd_log_field *fields, size_t count, const char *fmt,
                 va_list ap) {
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  char stamp[80];
  snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L);
  char msg[LOG_LINE_BYTES];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (format == STEERD_LOG_JSON)
    write_json(stamp, level, msg, fields, count);
  else
    write_text(stamp, level, msg, fields, count);
  fflush(stderr);
}

void steerd_log(steerd_log_level level, const char *fmt, ...) {
  if (level < min_level)
    return;
  va_list ap;
  va_start(ap, fmt);
  emit(level, NULL, 0, fmt, ap);
  va_end(ap);
}

void steerd_log_fields(steerd_log_level level, const steerd_log_field *fields, size_t count, const char *fmt,
                       ...) {
  if (level < min_level)
    return;
  va_list ap;
  va_start(ap, fmt);
  emit(level, fields, count, fmt, ap);
  va_end(ap);
}

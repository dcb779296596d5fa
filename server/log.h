/* log.h: one line per event, with UTC time and level, to stderr: plain text, or
 * one JSON object per line (--log-format json) for log collectors. */
#ifndef STEERD_LOG_H
#define STEERD_LOG_H

#include <stddef.h>
#include <stdint.h>

typedef enum steerd_log_level {
  STEERD_LOG_DEBUG = 0,
  STEERD_LOG_INFO,
  STEERD_LOG_WARN,
  STEERD_LOG_ERROR,
  STEERD_LOG_LEVEL_COUNT
} steerd_log_level;

typedef enum steerd_log_format {
  STEERD_LOG_TEXT = 0, /* 2026-11-25T18:00:00.000Z info  message key=value */
  STEERD_LOG_JSON,     /* {"time":"...","level":"info","msg":"message","key":value} */
  STEERD_LOG_FORMAT_COUNT
} steerd_log_format;

void steerd_log_set_level(steerd_log_level level);
/* 1 if a line of this level would be written. */
int steerd_log_enabled(steerd_log_level level);
/* "debug", "info", "warn", "error" -> level; -1 if unknown. */
int steerd_log_parse_level(const char *name);
void steerd_log_set_format(steerd_log_format format);
/* "text", "json" -> format; -1 if unknown. */
int steerd_log_parse_format(const char *name);

void steerd_log(steerd_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A structured field of a log line; keys name their unit (duration_ms, port). */
typedef enum steerd_log_kind {
  STEERD_LOG_FIELD_INT,
  STEERD_LOG_FIELD_REAL,
  STEERD_LOG_FIELD_STR
} steerd_log_kind;
typedef struct steerd_log_field {
  const char *key;
  steerd_log_kind kind;
  int64_t i;
  double d;
  const char *s;
} steerd_log_field;
#define LOG_FIELD_INT(k, v)  ((steerd_log_field){(k), STEERD_LOG_FIELD_INT, (int64_t)(v), 0.0, NULL})
#define LOG_FIELD_REAL(k, v) ((steerd_log_field){(k), STEERD_LOG_FIELD_REAL, 0, (double)(v), NULL})
#define LOG_FIELD_STR(k, v)  ((steerd_log_field){(k), STEERD_LOG_FIELD_STR, 0, 0.0, (v)})

/* The message, then the fields: " key=value" in text, members of the object in JSON. */
void steerd_log_fields(steerd_log_level level, const steerd_log_field *fields, size_t count, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));

#define LOG_DEBUG(...) steerd_log(STEERD_LOG_DEBUG, __VA_ARGS__)
#define LOG_INFO(...)  steerd_log(STEERD_LOG_INFO, __VA_ARGS__)
#define LOG_WARN(...)  steerd_log(STEERD_LOG_WARN, __VA_ARGS__)
#define LOG_ERROR(...) steerd_log(STEERD_LOG_ERROR, __VA_ARGS__)

#endif /* STEERD_LOG_H */

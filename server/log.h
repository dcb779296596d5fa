/* log.h: one line per event, with UTC time and level, to stderr. */
#ifndef STEERD_LOG_H
#define STEERD_LOG_H

typedef enum steerd_log_level {
  STEERD_LOG_DEBUG = 0,
  STEERD_LOG_INFO,
  STEERD_LOG_WARN,
  STEERD_LOG_ERROR,
  STEERD_LOG_LEVEL_COUNT
} steerd_log_level;

void steerd_log_set_level(steerd_log_level level);
/* "debug", "info", "warn", "error" -> level; -1 if unknown. */
int steerd_log_parse_level(const char *name);
void steerd_log(steerd_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LOG_DEBUG(...) steerd_log(STEERD_LOG_DEBUG, __VA_ARGS__)
#define LOG_INFO(...)  steerd_log(STEERD_LOG_INFO, __VA_ARGS__)
#define LOG_WARN(...)  steerd_log(STEERD_LOG_WARN, __VA_ARGS__)
#define LOG_ERROR(...) steerd_log(STEERD_LOG_ERROR, __VA_ARGS__)

#endif /* STEERD_LOG_H */

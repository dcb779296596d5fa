/* config.c: see config.h. One table drives flags, environment and --help. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

typedef enum opt_kind { OPT_STRING, OPT_PORT, OPT_U32, OPT_U64, OPT_BOOL, OPT_WORLD, OPT_LEVEL } opt_kind;

typedef struct option_def {
  const char *flag;
  const char *env;
  opt_kind kind;
  size_t offset;
  uint32_t min, max; /* OPT_U32 range */
  const char *help;
} option_def;

#define OFF(field) offsetof(steerd_config, field)

static const option_def options[] = {
    {"--bind", "STEERD_BIND", OPT_STRING, OFF(bind), 0, 0, "address to bind (127.0.0.1; 0.0.0.0 in the container)"},
    {"--port", "STEERD_PORT", OPT_PORT, OFF(port), 0, 0, "UDP port, 0 picks a free one (7777)"},
    {"--tick-rate", "STEERD_TICK_RATE", OPT_U32, OFF(tick_rate), 1, 1000, "simulation ticks per second (30)"},
    {"--snapshot-rate", "STEERD_SNAPSHOT_RATE", OPT_U32, OFF(snapshot_rate), 1, 1000,
     "snapshots per second, at most the tick rate (20)"},
    {"--max-clients", "STEERD_MAX_CLIENTS", OPT_U32, OFF(max_clients), 1, 4091, "connected clients at most (64)"},
    {"--max-agents", "STEERD_MAX_AGENTS", OPT_U32, OFF(max_agents), 1, 4194304, "agents in the world at most (10000)"},
    {"--world", "STEERD_WORLD", OPT_WORLD, 0, 0, 0, "world bounds in metres: minx,miny,maxx,maxy (-500,-500,500,500)"},
    {"--seed", "STEERD_SEED", OPT_U64, OFF(seed), 0, 0, "random seed of the world (1)"},
    {"--demo", "STEERD_DEMO", OPT_BOOL, OFF(demo), 0, 0, "start with the demo world: 1 or 0 (1); --no-demo = 0"},
    {"--client-timeout", "STEERD_CLIENT_TIMEOUT_MS", OPT_U32, OFF(client_timeout_ms), 100, 600000,
     "ms of silence before a client is dropped (5000)"},
    {"--max-catchup", "STEERD_MAX_CATCHUP", OPT_U32, OFF(max_catchup), 1, 1000,
     "ticks run back to back after a stall; the rest are skipped (5)"},
    {"--log-level", "STEERD_LOG_LEVEL", OPT_LEVEL, OFF(log_level), 0, 0, "debug, info, warn or error (info)"},
};
#define OPTION_COUNT (sizeof(options) / sizeof(options[0]))

void steerd_config_default(steerd_config *c) {
  memset(c, 0, sizeof(*c));
  strcpy(c->bind, "127.0.0.1");
  c->port = 7777;
  c->tick_rate = 30;
  c->snapshot_rate = 20;
  c->max_clients = 64;
  c->max_agents = 10000;
  c->world_min = v2(-500.0f, -500.0f);
  c->world_max = v2(500.0f, 500.0f);
  c->seed = 1;
  c->demo = 1;
  c->client_timeout_ms = 5000;
  c->max_catchup = 5;
  c->log_level = STEERD_LOG_INFO;
}

void steerd_config_usage(FILE *out) {
  fprintf(out, "usage: steerd [options]\n\n"
               "Authoritative movement server: a fixed-tick world of steered NPCs over ENet (UDP).\n"
               "Every option can also be set by its environment variable; flags win.\n\n");
  for (size_t i = 0; i < OPTION_COUNT; i++)
    fprintf(out, "  %-18s %-26s %s\n", options[i].flag, options[i].env, options[i].help);
  fprintf(out, "  %-18s %-26s %s\n", "--no-demo", "", "same as --demo 0");
  fprintf(out, "  %-18s %-26s %s\n", "-h, --help", "", "this text");
}

static int parse_u64(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  if (!*s || *s == '-')
    return -1;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno || *end)
    return -1;
  *out = v;
  return 0;
}

static int parse_world(const char *s, steerd_config *c) {
  float v[4];
  const char *p = s;
  for (int i = 0; i < 4; i++) {
    char *end;
    errno = 0;
    v[i] = strtof(p, &end);
    if (errno || end == p || !isfinite(v[i]) || (i < 3 && *end != ',') || (i == 3 && *end))
      return -1;
    p = end + 1;
  }
  if (!(v[2] > v[0]) || !(v[3] > v[1]))
    return -1;
  c->world_min = v2(v[0], v[1]);
  c->world_max = v2(v[2], v[3]);
  return 0;
}

static int apply(steerd_config *c, const option_def *o, const char *value) {
  char *base = (char *)c;
  uint64_t u;
  switch (o->kind) {
  case OPT_STRING:
    if (strlen(value) >= sizeof(c->bind) || !*value)
      return -1;
    strcpy(base + o->offset, value);
    return 0;
  case OPT_PORT:
    if (parse_u64(value, &u) || u > 65535)
      return -1;
    *(uint16_t *)(base + o->offset) = (uint16_t)u;
    return 0;
  case OPT_U32:
    if (parse_u64(value, &u) || u < o->min || u > o->max)
      return -1;
    *(uint32_t *)(base + o->offset) = (uint32_t)u;
    return 0;
  case OPT_U64:
    if (parse_u64(value, &u))
      return -1;
    *(uint64_t *)(base + o->offset) = u;
    return 0;
  case OPT_BOOL:
    if (strcmp(value, "1") == 0 || strcmp(value, "true") == 0 || strcmp(value, "on") == 0)
      *(int *)(base + o->offset) = 1;
    else if (strcmp(value, "0") == 0 || strcmp(value, "false") == 0 || strcmp(value, "off") == 0)
      *(int *)(base + o->offset) = 0;
    else
      return -1;
    return 0;
  case OPT_WORLD:
    return parse_world(value, c);
  case OPT_LEVEL: {
    int l = steerd_log_parse_level(value);
    if (l < 0)
      return -1;
    *(int *)(base + o->offset) = l;
    return 0;
  }
  }
  return -1;
}

int steerd_config_parse(steerd_config *c, int argc, char **argv, FILE *err) {
  for (size_t i = 0; i < OPTION_COUNT; i++) {
    const char *v = getenv(options[i].env);
    if (v && apply(c, &options[i], v) != 0) {
      fprintf(err, "steerd: bad value '%s' for %s (%s)\n", v, options[i].env, options[i].help);
      return -1;
    }
  }
  for (int a = 1; a < argc; a++) {
    const char *arg = argv[a];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      steerd_config_usage(stdout);
      return 1;
    }
    if (strcmp(arg, "--no-demo") == 0) {
      c->demo = 0;
      continue;
    }
    const option_def *o = NULL;
    const char *value = NULL;
    for (size_t i = 0; i < OPTION_COUNT && !o; i++) {
      size_t n = strlen(options[i].flag);
      if (strncmp(arg, options[i].flag, n) == 0 && (arg[n] == '\0' || arg[n] == '=')) {
        o = &options[i];
        value = arg[n] == '=' ? arg + n + 1 : NULL;
      }
    }
    if (!o) {
      fprintf(err, "steerd: unknown option '%s' (try --help)\n", arg);
      return -1;
    }
    if (!value) {
      if (o->kind == OPT_BOOL && (a + 1 >= argc || argv[a + 1][0] == '-')) {
        *(int *)((char *)c + o->offset) = 1; /* a bare boolean flag means on */
        continue;
      }
      if (a + 1 >= argc) {
        fprintf(err, "steerd: %s needs a value (%s)\n", o->flag, o->help);
        return -1;
      }
      value = argv[++a];
    }
    if (apply(c, o, value) != 0) {
      fprintf(err, "steerd: bad value '%s' for %s (%s)\n", value, o->flag, o->help);
      return -1;
    }
  }
  if (c->snapshot_rate > c->tick_rate) {
    fprintf(err, "steerd: the snapshot rate (%u) cannot exceed the tick rate (%u)\n", c->snapshot_rate,
            c->tick_rate);
    return -1;
  }
  return 0;
}

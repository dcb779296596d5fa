/* config.h: the server's settings, from defaults, environment and flags.
 *
 * Every flag has an environment variable (flags win). steerd_config_usage()
 * prints them all; the README and the Dockerfile rely on the names. */
#ifndef STEERD_CONFIG_H
#define STEERD_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "vec2.h"

typedef struct steerd_config {
  char bind[64];              /* address to bind (STEERD_BIND, 127.0.0.1) */
  uint16_t port;              /* UDP port, 0 = ephemeral (STEERD_PORT, 7777) */
  uint32_t tick_rate;         /* Hz (STEERD_TICK_RATE, 30) */
  uint32_t snapshot_rate;     /* Hz, <= tick_rate (STEERD_SNAPSHOT_RATE, 20) */
  uint32_t max_clients;       /* ENet peers (STEERD_MAX_CLIENTS, 64) */
  uint32_t max_agents;        /* world capacity (STEERD_MAX_AGENTS, 10000) */
  vec2 world_min, world_max;  /* m (STEERD_WORLD "minx,miny,maxx,maxy", -500..500) */
  uint64_t seed;              /* world random seed (STEERD_SEED, 1) */
  int demo;                   /* populate the demo world (STEERD_DEMO, 1) */
  uint32_t client_timeout_ms; /* a silent client is dropped after this (STEERD_CLIENT_TIMEOUT_MS, 5000) */
  uint32_t max_catchup;       /* ticks run at once after a stall (STEERD_MAX_CATCHUP, 5) */
  int log_level;              /* steerd_log_level (STEERD_LOG_LEVEL, info) */
} steerd_config;

void steerd_config_default(steerd_config *c);

/* Applies STEERD_* environment variables, then argv. Returns 0 to run, 1 when
 * --help was printed, or -1 after printing an error to err. */
int steerd_config_parse(steerd_config *c, int argc, char **argv, FILE *err);
void steerd_config_usage(FILE *out);

#endif /* STEERD_CONFIG_H */

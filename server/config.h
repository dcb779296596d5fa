/* config.h: the server's settings, from defaults, environment and flags.
 *
 * Every flag has an environment variable (flags win). steerd_config_usage()
 * prints them all; the README and the Dockerfile rely on the names. */
#ifndef STEERD_CONFIG_H
#define STEERD_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "auth.h"
#include "vec2.h"

/* What happens to a client's agents when it disconnects (--orphan-policy). */
typedef enum steerd_orphan_policy {
  STEERD_ORPHAN_KEEP = 0,    /* they stay, owned by the client's identity */
  STEERD_ORPHAN_DESPAWN = 1, /* despawned after orphan_grace_s unless the identity comes back */
  STEERD_ORPHAN_COUNT
} steerd_orphan_policy;

#define STEERD_PATH_BYTES        256   /* file paths in the config, NUL included */
#define STEERD_GARBAGE_WINDOW_MS 10000 /* malformed packets are counted per 10 s window */

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

  /* Security (PROTOCOL.md 4 and 14). */
  char secret_file[STEERD_PATH_BYTES];           /* first line is the secret (STEERD_SECRET_FILE, none) */
  char secret[STEERD_AUTH_MAX_SECRET_BYTES + 1]; /* from secret_file, else STEERD_SECRET */
  size_t secret_len;                             /* 0: no secret, clients are anonymous */
  int insecure;            /* allow anonymous clients off loopback (STEERD_INSECURE, 0) */
  int anonymous_role;      /* steerd_role of anonymous clients (STEERD_ANONYMOUS_ROLE; controller, but
                              steerd_config_parse makes it admin on loopback without a secret) */
  int anonymous_role_dev;  /* 1: anonymous_role is admin by that development default, not by request */
  int orphan_policy;       /* steerd_orphan_policy (STEERD_ORPHAN_POLICY, keep) */
  uint32_t orphan_grace_s; /* s before a gone client's agents are despawned (STEERD_ORPHAN_GRACE, 30) */
  uint32_t
      hello_timeout_ms; /* a peer without WELCOME is dropped after this (STEERD_HELLO_TIMEOUT_MS, 3000) */
  uint32_t max_pending; /* connections not yet WELCOMEd, beside max_clients (STEERD_MAX_PENDING, 16) */
  uint32_t
      client_queue_kb; /* reliable KB queued to one peer before it is dropped (STEERD_CLIENT_QUEUE_KB, 256) */
  uint32_t garbage_limit;     /* malformed packets per 10 s before ABUSE (STEERD_GARBAGE_LIMIT, 20) */
  uint32_t rate_limit;        /* commands per second per peer (STEERD_RATE_LIMIT, 50) */
  uint32_t rate_burst;        /* token bucket size (STEERD_RATE_BURST, 100) */
  uint32_t command_budget_us; /* loop CPU us per tick for commands (STEERD_COMMAND_BUDGET_US, 8000) */
  uint32_t command_queue;     /* commands waiting per peer before BUSY (STEERD_COMMAND_QUEUE, 256) */
  int command_spare;          /* commands also use the time before the next tick (STEERD_COMMAND_SPARE, 1) */
  uint32_t max_agents_per_client; /* agents one identity may own (STEERD_MAX_AGENTS_PER_CLIENT, 1000) */
  uint32_t max_path_points;       /* points of one path, <= 256 (STEERD_MAX_PATH_POINTS, 64) */

  /* Delta snapshots (PROTOCOL.md 7.6). */
  uint32_t dr_position_cm;   /* dead-reckoning position threshold, cm (STEERD_DR_POSITION_CM, 2) */
  uint32_t dr_angle_deg;     /* dead-reckoning angle threshold, degrees (STEERD_DR_ANGLE_DEG, 1) */
  uint32_t dr_refresh;       /* snapshots an agent's record may age (STEERD_DR_REFRESH, 20) */
  uint32_t snapshot_budget;  /* DELTA bytes per client per snapshot (STEERD_SNAPSHOT_BUDGET, 1200) */
  uint32_t client_rate_kbps; /* DELTA kbit/s per client on average, 0: none (STEERD_CLIENT_RATE_KBPS, 120) */
  uint32_t delta_pool;       /* records of all clients' remembered frames, 0 = sized from the limits
                                (STEERD_DELTA_POOL, 0) */
  uint32_t full_rate_kbps;   /* SNAPSHOT kbit/s per full-snapshot client on average, 0: none
                                (STEERD_FULL_RATE_KBPS, 48000) */
  uint32_t send_budget_kbps; /* snapshot payload kbit/s of all clients together, 0: none
                                (STEERD_SEND_BUDGET_KBPS, 200000) */
  uint32_t send_budget_us;   /* loop thread CPU us per snapshot round encoding and queueing it, 0: none
                                (STEERD_SEND_BUDGET_US, 15000) */

  /* Crash-safe world state (README "Keeping the world across restarts"). */
  char state_file[STEERD_PATH_BYTES]; /* checkpoint file, restored at start (STEERD_STATE, none) */
  char map_file[STEERD_PATH_BYTES];   /* JSON map loaded into a new world (STEERD_MAP, none) */
  int state_reset;                    /* ignore an existing state file (STEERD_STATE_RESET, 0) */
  uint32_t checkpoint_interval_s; /* s between checkpoints, 0 = only at shutdown (STEERD_CHECKPOINT_INTERVAL,
                                     10) */

  /* Operations: HTTP (metrics, health, the live view), logs, drain (README "Operations"). */
  char http_bind[64]; /* address of the HTTP port (STEERD_HTTP_BIND, 127.0.0.1) */
  int32_t http_port;  /* TCP port, 0 = off, STEERD_HTTP_PORT_AUTO = ephemeral (STEERD_HTTP_PORT, 7780) */
  uint32_t http_max_connections; /* open at once (STEERD_HTTP_MAX_CONNECTIONS, 128) */
  uint32_t http_max_per_address; /* open at once from one address (STEERD_HTTP_MAX_PER_ADDRESS, 32) */
  int log_format;                /* steerd_log_format (STEERD_LOG_FORMAT, text) */
  uint32_t drain_timeout_ms; /* SIGTERM: longest wait for clients to leave (STEERD_DRAIN_TIMEOUT_MS, 2000) */
  uint32_t drain_min_ms;     /* SIGTERM: shortest time the HTTP port answers (STEERD_DRAIN_MIN_MS, 1000) */
  uint32_t view_rate; /* Hz: snapshots a live view gets, at most the snapshot rate (STEERD_VIEW_RATE, 10) */

  /* Threads (README "Threads"). */
  uint32_t threads; /* threads of the steering pass, 0 = one per core (STEERD_THREADS, 0) */

  /* GOTO path planning (server/goto.h). */
  uint32_t plan_budget; /* search node expansions per tick, 0: by nav (STEERD_PLAN_BUDGET, 0) */
  /* Ticks a new radius class waits for its graph, 0: by the map's size (STEERD_PLAN_BUILD_DELAY, 0). */
  uint32_t plan_build_delay;
  int nav; /* steer_nav_kind: what GOTO plans on (STEERD_NAV, mesh) */
} steerd_config;

#define STEERD_HTTP_PORT_AUTO (-1) /* --http-port auto: the kernel picks a free port */

void steerd_config_default(steerd_config *c);

/* Applies STEERD_* environment variables, then argv. Returns 0 to run, 1 when
 * --help was printed, or -1 after printing an error to err. */
int steerd_config_parse(steerd_config *c, int argc, char **argv, FILE *err);
void steerd_config_usage(FILE *out);

/* Reads the secret: the first line of file when file is non-empty, else the
 * STEERD_SECRET environment variable. Returns 1 with the secret in out (NUL-
 * terminated, *len bytes), 0 when none is configured, or -1 after printing an
 * error to err (unreadable file, shorter than 16 or longer than 1024 bytes). */
int steerd_secret_load(const char *file, char *out, size_t cap, size_t *len, FILE *err);

/* 1 if the address names this machine only: a dotted IPv4 address in
 * 127.0.0.0/8, "localhost", "::1" (or "[::1]"), or an IPv4-mapped ::ffff:127.x.y.z. */
int steerd_address_is_loopback(const char *ip);

/* The IPv4 address to bind for --bind: an IPv4 address as given; a name
 * (localhost) as it resolves; the IPv6 loopback ::1 as 127.0.0.1 (ENet 1.3
 * speaks IPv4 only, and the IPv4 loopback is as private). Returns 0 with the
 * dotted address in out, or -1 with the reason in why (other IPv6 addresses,
 * names that do not resolve). */
int steerd_bind_resolve(const char *bind, char *out, size_t cap, char *why, size_t why_cap);

#endif /* STEERD_CONFIG_H */

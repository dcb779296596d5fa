/* config.c: see config.h. One table drives flags, environment and --help. */
#include "config.h"

#include "nav.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

typedef enum opt_kind {
  OPT_STRING,
  OPT_FILE,
  OPT_PORT,
  OPT_U32,
  OPT_U64,
  OPT_BOOL,
  OPT_WORLD,
  OPT_LEVEL,
  OPT_ROLE,
  OPT_ORPHAN,
  OPT_HTTP_PORT,
  OPT_LOG_FORMAT,
  OPT_NAV
} opt_kind;

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
    {"--bind", "STEERD_BIND", OPT_STRING, OFF(bind), 0, 0,
     "address to bind (127.0.0.1; 0.0.0.0 in the container)"},
    {"--port", "STEERD_PORT", OPT_PORT, OFF(port), 0, 0, "UDP port, 0 picks a free one (7777)"},
    {"--tick-rate", "STEERD_TICK_RATE", OPT_U32, OFF(tick_rate), 1, 1000, "simulation ticks per second (30)"},
    {"--snapshot-rate", "STEERD_SNAPSHOT_RATE", OPT_U32, OFF(snapshot_rate), 1, 1000,
     "snapshots per second, at most the tick rate (20)"},
    {"--max-clients", "STEERD_MAX_CLIENTS", OPT_U32, OFF(max_clients), 1, 4091,
     "connected clients at most (64)"},
    {"--max-agents", "STEERD_MAX_AGENTS", OPT_U32, OFF(max_agents), 1, 4194304,
     "agents in the world at most (10000)"},
    {"--world", "STEERD_WORLD", OPT_WORLD, 0, 0, 0,
     "world bounds in metres: minx,miny,maxx,maxy (-500,-500,500,500)"},
    {"--seed", "STEERD_SEED", OPT_U64, OFF(seed), 0, 0, "random seed of the world (1)"},
    {"--demo", "STEERD_DEMO", OPT_BOOL, OFF(demo), 0, 0,
     "start with the demo world: 1 or 0 (1); --no-demo = 0"},
    {"--client-timeout", "STEERD_CLIENT_TIMEOUT_MS", OPT_U32, OFF(client_timeout_ms), 100, 600000,
     "ms of silence before a client is dropped (5000)"},
    {"--max-catchup", "STEERD_MAX_CATCHUP", OPT_U32, OFF(max_catchup), 1, 1000,
     "ticks run back to back after a stall; the rest are skipped (5)"},
    {"--log-level", "STEERD_LOG_LEVEL", OPT_LEVEL, OFF(log_level), 0, 0, "debug, info, warn or error (info)"},
    {"--secret-file", "STEERD_SECRET_FILE", OPT_FILE, OFF(secret_file), 0, 0,
     "file whose first line is the token secret, 16+ bytes (else STEERD_SECRET)"},
    {"--insecure", "STEERD_INSECURE", OPT_BOOL, OFF(insecure), 0, 0,
     "allow anonymous clients on a non-loopback bind without a secret (0)"},
    {"--anonymous-role", "STEERD_ANONYMOUS_ROLE", OPT_ROLE, OFF(anonymous_role), 0, 0,
     "role of clients without a token when no secret is set: observer, controller, admin (admin while "
     "bound to loopback, else controller)"},
    {"--orphan-policy", "STEERD_ORPHAN_POLICY", OPT_ORPHAN, OFF(orphan_policy), 0, 0,
     "a disconnected client's agents: keep, or despawn after the grace (keep)"},
    {"--orphan-grace", "STEERD_ORPHAN_GRACE", OPT_U32, OFF(orphan_grace_s), 0, 86400,
     "seconds a despawn-policy client has to come back for its agents (30)"},
    {"--hello-timeout", "STEERD_HELLO_TIMEOUT_MS", OPT_U32, OFF(hello_timeout_ms), 100, 600000,
     "ms a connected peer has to be WELCOMEd before it is dropped (3000)"},
    {"--max-pending", "STEERD_MAX_PENDING", OPT_U32, OFF(max_pending), 1, 1024,
     "connections not yet WELCOMEd at once, beside --max-clients; the oldest idle one makes room (16)"},
    {"--client-queue-kb", "STEERD_CLIENT_QUEUE_KB", OPT_U32, OFF(client_queue_kb), 16, 1048576,
     "KB of replies and events queued to a peer that does not read them before it is dropped (256)"},
    {"--garbage-limit", "STEERD_GARBAGE_LIMIT", OPT_U32, OFF(garbage_limit), 1, 1000000,
     "malformed packets a peer may send per 10 s before it is dropped (20)"},
    {"--rate-limit", "STEERD_RATE_LIMIT", OPT_U32, OFF(rate_limit), 1, 1000000,
     "commands per second per peer; excess gets RATE_LIMITED (50)"},
    {"--rate-burst", "STEERD_RATE_BURST", OPT_U32, OFF(rate_burst), 1, 1000000,
     "commands a peer may send back to back (100)"},
    {"--command-budget-us", "STEERD_COMMAND_BUDGET_US", OPT_U32, OFF(command_budget_us), 1, 1000000,
     "loop thread us per tick that running clients' commands may take, shared by the clients waiting; "
     "the rest waits for the next tick (8000)"},
    {"--command-spare", "STEERD_COMMAND_SPARE", OPT_BOOL, OFF(command_spare), 0, 0,
     "commands past --command-budget-us also run in the loop's spare time before the next tick: 1 or 0 "
     "(1)"},
    {"--command-queue", "STEERD_COMMAND_QUEUE", OPT_U32, OFF(command_queue), 1, 65536,
     "commands one peer may have waiting to run; more get BUSY (256)"},
    {"--max-agents-per-client", "STEERD_MAX_AGENTS_PER_CLIENT", OPT_U32, OFF(max_agents_per_client), 1,
     4194304, "agents one client identity may own; QUOTA_EXCEEDED beyond (1000)"},
    {"--state", "STEERD_STATE", OPT_FILE, OFF(state_file), 0, 0,
     "checkpoint file: restored at start if present, written every interval and at shutdown (none)"},
    {"--map", "STEERD_MAP", OPT_FILE, OFF(map_file), 0, 0,
     "map file (walls, obstacles) for a new world: steerd JSON, a Moving AI grid (.map) or a Tiled map "
     "(.tmj); "
     "a restored world keeps its own (none)"},
    {"--state-reset", "STEERD_STATE_RESET", OPT_BOOL, OFF(state_reset), 0, 0,
     "start a new world even if the state file exists (it is overwritten at the next checkpoint)"},
    {"--checkpoint-interval", "STEERD_CHECKPOINT_INTERVAL", OPT_U32, OFF(checkpoint_interval_s), 0, 86400,
     "seconds between checkpoints; 0 = only at shutdown (10)"},
    {"--max-path-points", "STEERD_MAX_PATH_POINTS", OPT_U32, OFF(max_path_points), 1, 256,
     "points of one path, at most 256 (64)"},
    {"--dr-position-cm", "STEERD_DR_POSITION_CM", OPT_U32, OFF(dr_position_cm), 0, 100000,
     "delta snapshots: resend an agent when its extrapolation is off by more cm (2)"},
    {"--dr-angle-deg", "STEERD_DR_ANGLE_DEG", OPT_U32, OFF(dr_angle_deg), 0, 180,
     "delta snapshots: ... or by more degrees (1)"},
    {"--dr-refresh", "STEERD_DR_REFRESH", OPT_U32, OFF(dr_refresh), 1, 100000,
     "delta snapshots: ... or when not refreshed for this many snapshots (20)"},
    {"--snapshot-budget", "STEERD_SNAPSHOT_BUDGET", OPT_U32, OFF(snapshot_budget), 256, 1048576,
     "delta snapshots: bytes per client per snapshot, at least 256 (1200: one packet)"},
    {"--client-rate-kbps", "STEERD_CLIENT_RATE_KBPS", OPT_U32, OFF(client_rate_kbps), 0, 1000000,
     "delta snapshots: kbit/s of DELTA payload per client on average, 0 = no limit (120)"},
    {"--full-rate-kbps", "STEERD_FULL_RATE_KBPS", OPT_U32, OFF(full_rate_kbps), 0, 10000000,
     "full snapshots: kbit/s per client on average; a bigger snapshot goes whole, less often; 0 = no limit "
     "(48000)"},
    {"--send-budget-kbps", "STEERD_SEND_BUDGET_KBPS", OPT_U32, OFF(send_budget_kbps), 0, 100000000,
     "snapshots: kbit/s of all clients together; beyond it every client gets fewer snapshots, fairly; "
     "0 = no limit (200000)"},
    {"--send-budget-us", "STEERD_SEND_BUDGET_US", OPT_U32, OFF(send_budget_us), 0, 1000000,
     "snapshots: the loop thread's CPU time per snapshot round for encoding and queueing them, us; 0 = no "
     "limit (15000)"},
    {"--delta-pool", "STEERD_DELTA_POOL", OPT_U32, OFF(delta_pool), 0, 1u << 30,
     "delta snapshots: agent records of all clients' frames, the server-wide cap (64 B each, taken as "
     "needed); "
     "each client keeps its frames within a quota of 10 x --max-agents; 0 = every slot's reserve + quotas "
     "for "
     "a quarter of --max-clients (0)"},
    {"--http-bind", "STEERD_HTTP_BIND", OPT_STRING, OFF(http_bind), 0, 0,
     "address of the HTTP port: metrics, health, live view (127.0.0.1; 0.0.0.0 in the container)"},
    {"--http-port", "STEERD_HTTP_PORT", OPT_HTTP_PORT, OFF(http_port), 0, 0,
     "TCP port of /metrics, /healthz, /readyz and the live view; 0 = off, auto picks a free one (7780)"},
    {"--http-max-connections", "STEERD_HTTP_MAX_CONNECTIONS", OPT_U32, OFF(http_max_connections), 1, 65536,
     "open connections the HTTP port serves at once; more are answered 503 and closed (128)"},
    {"--http-max-per-address", "STEERD_HTTP_MAX_PER_ADDRESS", OPT_U32, OFF(http_max_per_address), 1, 65536,
     "open HTTP connections from one address; more are answered 503 and closed (32)"},
    {"--log-format", "STEERD_LOG_FORMAT", OPT_LOG_FORMAT, OFF(log_format), 0, 0,
     "text, or json: one JSON object per line (text)"},
    {"--drain-timeout", "STEERD_DRAIN_TIMEOUT_MS", OPT_U32, OFF(drain_timeout_ms), 0, 3600000,
     "ms SIGTERM waits for clients to hear the disconnect before exiting (2000)"},
    {"--drain-min", "STEERD_DRAIN_MIN_MS", OPT_U32, OFF(drain_min_ms), 0, 3600000,
     "ms the HTTP port answers after SIGTERM (/readyz 503), however soon the clients are gone; at most "
     "--drain-timeout (1000)"},
    {"--view-rate", "STEERD_VIEW_RATE", OPT_U32, OFF(view_rate), 1, 1000,
     "snapshots per second a live view gets, at most the snapshot rate (10)"},
    {"--threads", "STEERD_THREADS", OPT_U32, OFF(threads), 0, 256,
     "threads of the tick's steering pass and the delta snapshots' encoding; 0 = one per core, "
     "1 = the loop thread only (0)"},
    {"--plan-budget", "STEERD_PLAN_BUDGET", OPT_U32, OFF(plan_budget), 0, 10000000,
     "GOTO: search node expansions the plan queue may spend per tick; a mesh plan past it goes on in the "
     "next tick; 0 = by --nav: 32768 on meshes, 1024 on visibility graphs, about 10 ms of plans each (0)"},
    {"--plan-build-delay", "STEERD_PLAN_BUILD_DELAY", OPT_U32, OFF(plan_build_delay), 0, 1000000,
     "GOTO: ticks a radius class waits for its navigation graph, built meanwhile off the loop; 0 = by the "
     "map's size (0)"},
    {"--nav", "STEERD_NAV", OPT_NAV, OFF(nav), 0, 0,
     "GOTO plans on: mesh, a navigation mesh (built in ms on any level), or graph, a visibility graph (built "
     "in seconds to minutes on big levels; cheaper plans on open maps strewn with small obstacles) (mesh)"},
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
  c->anonymous_role = STEERD_ROLE_CONTROLLER;
  c->orphan_policy = STEERD_ORPHAN_KEEP;
  c->orphan_grace_s = 30;
  c->hello_timeout_ms = 3000;
  c->max_pending = 16;
  c->client_queue_kb = 256;
  c->checkpoint_interval_s = 10;
  c->garbage_limit = 20;
  c->rate_limit = 50;
  c->rate_burst = 100;
  c->command_budget_us = 8000;
  c->command_queue = 256;
  c->command_spare = 1;
  c->max_agents_per_client = 1000;
  c->max_path_points = 64;
  c->dr_position_cm = 2;
  c->dr_angle_deg = 1;
  c->dr_refresh = 20;
  c->snapshot_budget = 1200;
  c->client_rate_kbps = 120;
  c->full_rate_kbps = 48000;
  c->send_budget_kbps = 200000;
  c->send_budget_us = 15000;
  c->delta_pool = 0;
  strcpy(c->http_bind, "127.0.0.1");
  c->http_port = 7780;
  c->http_max_connections = 128;
  c->http_max_per_address = 32;
  c->log_format = STEERD_LOG_TEXT;
  c->drain_timeout_ms = 2000;
  c->drain_min_ms = 1000;
  c->view_rate = 10;
  c->plan_budget = 0;
}

void steerd_config_usage(FILE *out) {
  fprintf(out, "usage: steerd [options]\n\n"
               "Authoritative movement server: a fixed-tick world of steered NPCs over ENet (UDP).\n"
               "Every option can also be set by its environment variable; flags win.\n\n");
  for (size_t i = 0; i < OPTION_COUNT; i++)
    fprintf(out, "  %-24s %-29s %s\n", options[i].flag, options[i].env, options[i].help);
  fprintf(out, "  %-24s %-29s %s\n", "--no-demo", "", "same as --demo 0");
  fprintf(out, "  %-24s %-29s %s\n", "", "STEERD_SECRET",
          "the token secret itself, when no secret file is given");
  fprintf(out, "  %-24s %-29s %s\n", "-h, --help", "", "this text");
  fprintf(out, "  %-24s %-29s %s\n", "--version", "", "the version and the protocol version, alone");
  fprintf(out, "\nSecurity: with a secret, every HELLO must carry a token signed with it; make one with\n"
               "  steerd token --name NAME --role observer|controller|admin [--ttl SECONDS]\n"
               "Without a secret, clients are anonymous (--anonymous-role) and the server binds only a\n"
               "loopback address (127.0.0.0/8) unless --insecure is given. There anonymous clients are\n"
               "admins unless --anonymous-role says otherwise: a development server's clients command\n"
               "every agent and edit the map.\n");
}

static int ipv4_is_loopback(const char *ip) {
  unsigned a, b, c, d;
  char tail;
  return sscanf(ip, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4 && a == 127 && b < 256 && c < 256 && d < 256;
}

static int is_ipv6_loopback(const char *ip) {
  struct in6_addr a;
  char tmp[64];
  size_t n = strlen(ip);
  if (n >= sizeof tmp)
    return 0;
  if (n >= 2 && ip[0] == '[' && ip[n - 1] == ']') { /* [::1] */
    memcpy(tmp, ip + 1, n - 2);
    tmp[n - 2] = '\0';
  } else {
    memcpy(tmp, ip, n + 1);
  }
  if (inet_pton(AF_INET6, tmp, &a) != 1)
    return 0;
  if (IN6_IS_ADDR_LOOPBACK(&a))
    return 1;
  return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
}

int steerd_address_is_loopback(const char *ip) {
  return ipv4_is_loopback(ip) || strcmp(ip, "localhost") == 0 || is_ipv6_loopback(ip);
}

int steerd_bind_resolve(const char *bind, char *out, size_t cap, char *why, size_t why_cap) {
  struct in_addr v4;
  if (inet_pton(AF_INET, bind, &v4) == 1) {
    snprintf(out, cap, "%s", bind);
    return 0;
  }
  if (is_ipv6_loopback(bind)) {
    snprintf(out, cap, "127.0.0.1");
    return 0;
  }
  if (strchr(bind, ':')) {
    snprintf(why, why_cap,
             "'%s' is an IPv6 address: this server speaks IPv4 only (ENet 1.3); use 0.0.0.0 for every "
             "interface or 127.0.0.1 for this machine",
             bind);
    return -1;
  }
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  int rc = getaddrinfo(bind, NULL, &hints, &res);
  if (rc != 0 || !res) {
    snprintf(why, why_cap, "'%s' is neither an IPv4 address nor a name that resolves to one (%s)", bind,
             rc ? gai_strerror(rc) : "no address");
    return -1;
  }
  const struct sockaddr_in *sa = (const struct sockaddr_in *)res->ai_addr;
  const char *ok = inet_ntop(AF_INET, &sa->sin_addr, out, (socklen_t)cap);
  freeaddrinfo(res);
  if (!ok) {
    snprintf(why, why_cap, "cannot print the address of '%s'", bind);
    return -1;
  }
  return 0;
}

int steerd_secret_load(const char *file, char *out, size_t cap, size_t *len, FILE *err) {
  const char *source = "STEERD_SECRET";
  *len = 0;
  out[0] = '\0';
  if (file && *file) {
    FILE *f = fopen(file, "r");
    if (!f) {
      fprintf(err, "steerd: cannot read the secret file '%s': %s\n", file, strerror(errno));
      return -1;
    }
    /* One byte more than the cap shows a line that is too long. */
    char line[STEERD_AUTH_MAX_SECRET_BYTES + 2];
    if (!fgets(line, sizeof line, f))
      line[0] = '\0';
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    if (strlen(line) >= cap) {
      fprintf(err, "steerd: the secret in '%s' is longer than %d bytes\n", file,
              STEERD_AUTH_MAX_SECRET_BYTES);
      return -1;
    }
    strcpy(out, line);
    source = file;
  } else {
    const char *env = getenv("STEERD_SECRET");
    if (!env || !*env)
      return 0;
    if (strlen(env) >= cap) {
      fprintf(err, "steerd: STEERD_SECRET is longer than %d bytes\n", STEERD_AUTH_MAX_SECRET_BYTES);
      return -1;
    }
    strcpy(out, env);
  }
  *len = strlen(out);
  if (*len < STEERD_AUTH_MIN_SECRET_BYTES) {
    fprintf(err,
            "steerd: the secret from %s has %zu bytes; it needs at least %d (try: head -c 32 /dev/urandom | "
            "base64)\n",
            source, *len, STEERD_AUTH_MIN_SECRET_BYTES);
    return -1;
  }
  return 1;
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
  case OPT_FILE:
    if (strlen(value) >= STEERD_PATH_BYTES)
      return -1;
    strcpy(base + o->offset, value);
    return 0;
  case OPT_ROLE: {
    int r = steerd_role_parse(value);
    if (r < 0)
      return -1;
    *(int *)(base + o->offset) = r;
    return 0;
  }
  case OPT_ORPHAN:
    if (strcmp(value, "keep") == 0)
      *(int *)(base + o->offset) = STEERD_ORPHAN_KEEP;
    else if (strcmp(value, "despawn") == 0)
      *(int *)(base + o->offset) = STEERD_ORPHAN_DESPAWN;
    else
      return -1;
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
  case OPT_HTTP_PORT:
    if (strcmp(value, "auto") == 0) {
      *(int32_t *)(base + o->offset) = STEERD_HTTP_PORT_AUTO;
      return 0;
    }
    if (parse_u64(value, &u) || u > 65535)
      return -1;
    *(int32_t *)(base + o->offset) = (int32_t)u;
    return 0;
  case OPT_NAV: {
    int k =
        strcmp(value, "mesh") == 0 ? STEER_NAV_MESH : (strcmp(value, "graph") == 0 ? STEER_NAV_GRAPH : -1);
    if (k < 0)
      return -1;
    *(int *)(base + o->offset) = k;
    return 0;
  }
  case OPT_LOG_FORMAT: {
    int f = steerd_log_parse_format(value);
    if (f < 0)
      return -1;
    *(int *)(base + o->offset) = f;
    return 0;
  }
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

/* What an option accepts, for the message about a bad value. */
static const char *allowed_text(const option_def *o, char *buf, size_t cap) {
  switch (o->kind) {
  case OPT_U32:
    snprintf(buf, cap, "an integer from %u to %u", o->min, o->max);
    return buf;
  case OPT_U64:
    return "a whole number >= 0";
  case OPT_PORT:
    return "a port from 0 to 65535";
  case OPT_HTTP_PORT:
    return "a port from 0 to 65535, or auto";
  case OPT_BOOL:
    return "1, true, on, 0, false or off";
  case OPT_ROLE:
    return "observer, controller or admin";
  case OPT_ORPHAN:
    return "keep or despawn";
  case OPT_WORLD:
    return "minx,miny,maxx,maxy in metres, with maxx > minx and maxy > miny";
  case OPT_LEVEL:
    return "debug, info, warn or error";
  case OPT_LOG_FORMAT:
    return "text or json";
  case OPT_NAV:
    return "mesh or graph";
  case OPT_FILE:
    snprintf(buf, cap, "a path of fewer than %d bytes", STEERD_PATH_BYTES);
    return buf;
  default:
    snprintf(buf, cap, "a non-empty text of fewer than %zu bytes", sizeof(((steerd_config *)0)->bind));
    return buf;
  }
}

static void bad_value(FILE *err, const option_def *o, const char *name, const char *value) {
  char buf[96];
  fprintf(err, "steerd: bad value '%s' for %s: allowed is %s (%s)\n", value, name,
          allowed_text(o, buf, sizeof buf), o->help);
}

int steerd_config_parse(steerd_config *c, int argc, char **argv, FILE *err) {
  int role_given = 0;
  for (size_t i = 0; i < OPTION_COUNT; i++) {
    const char *v = getenv(options[i].env);
    if (v && apply(c, &options[i], v) != 0) {
      bad_value(err, &options[i], options[i].env, v);
      return -1;
    }
    role_given |= v != NULL && options[i].kind == OPT_ROLE;
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
      bad_value(err, o, o->flag, value);
      return -1;
    }
    role_given |= o->kind == OPT_ROLE;
  }
  if (steerd_secret_load(c->secret_file, c->secret, sizeof c->secret, &c->secret_len, err) < 0)
    return -1;
  /* A server only this machine can reach, without a secret, is a developer's: its anonymous
   * clients may command the demo's NPCs and edit the map, as the README's first commands do.
   * Anywhere else (or with a secret) the safer controller stays the default. */
  c->anonymous_role_dev = 0;
  if (!role_given && c->secret_len == 0 && steerd_address_is_loopback(c->bind)) {
    c->anonymous_role = STEERD_ROLE_ADMIN;
    c->anonymous_role_dev = 1;
  }
  if (c->snapshot_rate > c->tick_rate) {
    fprintf(err, "steerd: the snapshot rate (%u) cannot exceed the tick rate (%u)\n", c->snapshot_rate,
            c->tick_rate);
    return -1;
  }
  return 0;
}

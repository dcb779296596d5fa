/* steerd_client.c: steerd-client, a command-line client on the steerd_client
 * library: watch the world, send single commands, ping, and run load-test bots.
 * See usage() for every subcommand with an example. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "interp.h"
#include "randcmd.h"

/* Exit codes. */
#define EXIT_REPLY_ERROR 1 /* the server answered ERROR */
#define EXIT_USAGE       2
#define EXIT_CONNECTION  3 /* connect failed, timed out or dropped */

#define MAX_OPTS       32
#define BOT_MAX        256 /* bots in one process: one poll() set, modest memory */
#define BOT_AGENTS     4   /* agents each bot keeps alive */
#define BOT_MAX_AGENTS 16
#define BOT_PENDING    16 /* spawns in flight per bot */

typedef struct opt {
  const char *key; /* without "--" */
  const char *value;
} opt;

typedef struct args {
  const char *host;
  uint16_t port;
  const char *name;
  const char *token; /* --token, else STEERD_TOKEN; NULL: none */
  uint32_t timeout_ms;
  const char *cmd;
  const char *pos[4]; /* positional arguments after the subcommand */
  int npos;
  opt opts[MAX_OPTS];
  int nopts;
  int events_only;
  int interp; /* watch --interp */
  int delta;  /* --delta, else STEERD_DELTA: ask for delta snapshots (PROTOCOL.md 7.6) */
} args;

static volatile sig_atomic_t g_stop;

static void on_sigint(int sig) {
  (void)sig;
  g_stop = 1;
}

/* Help: the global part, then one section per command (also `COMMAND --help`). */
static const char usage_head[] =
    "usage: steerd-client [--host H] [--port P] [--name N] [--token T] [--timeout MS] [--delta]\n"
    "                     COMMAND [ARGS]\n"
    "\n"
    "Global options (before the command):\n"
    "  --host H       server address (STEERD_HOST, else 127.0.0.1)\n"
    "  --port P       server UDP port (STEERD_PORT, else 7777)\n"
    "  --name N       HELLO name (steerd-client); a token's name replaces it on the server\n"
    "  --token T      HELLO token from `steerd token` (STEERD_TOKEN); needed when the server has a\n"
    "                 secret, ignored by one without\n"
    "  --timeout MS   connect and reply timeout (3000)\n"
    "  --delta        ask for delta snapshots (STEERD_DELTA=1), on every connection (bots too): the\n"
    "                 client rebuilds each frame from the DELTA messages, so watch prints the same\n"
    "                 JSON as with full snapshots\n"
    "  --version      print the version and the protocol version, and exit\n"
    "\n"
    "Commands (steerd-client COMMAND --help shows one):\n";

typedef struct cmd_help {
  const char *name;
  const char *const opts[8]; /* the command's options, without "--" */
  const char *text;
} cmd_help;

static const cmd_help commands[] = {
    {"watch",
     {"seconds", "view", "rate", "interp", "events-only", NULL},
     "  watch [--seconds S] [--events-only] [--interp [--rate HZ]] [--view all|X,Y,R|follow:ID,R]\n"
     "      Print snapshots and events as JSON lines until S seconds pass (0: until Ctrl-C).\n"
     "      --interp: print interpolated states (render time = server time - delay) HZ times\n"
     "      a second (30) instead of the snapshots.\n"
     "      --view (needs --delta): send a VIEW after the WELCOME, so frames hold only the agents\n"
     "      in view: all (the whole world), a circle of R m around X,Y, or R m around agent ID.\n"
     "      The summary on stderr then adds the delta figures (bytes, frames rebuilt, dropped).\n"
     "      e.g. steerd-client watch --seconds 2\n"
     "           steerd-client --delta watch --seconds 2 --view 0,0,30\n"},
    {"spawn",
     {"model", "x", "y", "behaviour", "target", "target-agent", NULL},
     "  spawn --model M --x X --y Y [--behaviour K] [--target X,Y] [--target-agent ID]\n"
     "      Spawn an agent (model kinematic|dynamic|heading); prints the new id.\n"
     "      e.g. steerd-client spawn --model dynamic --x 0 --y 0 --behaviour arrive --target 20,10\n"},
    {"target",
     {"behaviour", "target", "target-agent", "target-agent2", "orientation", NULL},
     "  target ID --behaviour K [--target X,Y | --target-agent ID [--target-agent2 ID]] [--orientation R]\n"
     "      Set an agent's behaviour (none seek flee arrive align velocity_match face\n"
     "      look_where_going pursue evade interpose wander).\n"
     "      e.g. steerd-client target 4194305 --behaviour pursue --target-agent 4194306\n"},
    {"path",
     {"points", "radius", "mode", "cornering", NULL},
     "  path ID --points \"x,y;x,y;...\" [--radius R] [--mode once|loop|pingpong]\n"
     "       [--cornering none|arc|lazy]\n"
     "      Make an agent follow a path (radius 1 m, mode once, cornering none).\n"
     "      e.g. steerd-client path 4194305 --points \"0,0;20,0;20,20\" --mode loop\n"},
    {"goto",
     {"target", "target-agent", "node-radius", "cornering", "replan-distance", "wait", NULL},
     "  goto ID (--target X,Y | --target-agent ID) [--node-radius R] [--cornering none|arc|lazy]\n"
     "       [--replan-distance D] [--wait S]\n"
     "      Send an agent there by a route the server plans around the map (GOTO, PROTOCOL.md\n"
     "      5.6). --wait S: wait up to S seconds for the answer and print it (the planned or\n"
     "      unreachable event, then the route as JSON); exit 1 when it is unreachable.\n"
     "      e.g. steerd-client goto 4194305 --target 30,12.5 --wait 5\n"},
    {"despawn", {NULL}, "  despawn ID     e.g. steerd-client despawn 4194305\n"},
    {"map",
     {NULL},
     "  map\n"
     "      Print the server's map (PROTOCOL.md 17) as a map file (format steerd-map, version 1: what\n"
     "      --map FILE reads); its version and size go to stderr.  e.g. steerd-client map > level.json\n"},
    {"add-obstacle",
     {"id", "type", "center", "radius", "points", NULL},
     "  add-obstacle --id N --type circle --center X,Y --radius R\n"
     "  add-obstacle --id N --type polygon|wall --points \"x,y;x,y;...\"\n"
     "      Add an obstacle to the map (admins only); prints the map's new version and the agents\n"
     "      moved out of it.  e.g. steerd-client add-obstacle --id 100 --type wall --points \"10,6;10,8\"\n"},
    {"remove-obstacle",
     {NULL},
     "  remove-obstacle ID\n"
     "      Remove an obstacle from the map (admins only).  e.g. steerd-client remove-obstacle 100\n"},
    {"stop", {NULL}, "  stop ID        Behaviour none: come to rest.  e.g. steerd-client stop 4194305\n"},
    {"query", {NULL}, "  query ID       Print the agent as JSON.  e.g. steerd-client query 4194305\n"},
    {"params",
     {"set", NULL},
     "  params ID --set \"KEY=VALUE,KEY=VALUE,...\"\n"
     "      Change an agent's limits, parameters and tuning (SET_PARAMS, PROTOCOL.md 5.1, 5.2, 6.6):\n"
     "      max_speed max_acceleration max_rotation max_angular_acceleration radius, the behaviours'\n"
     "      time_to_target ... path_recover_strength, and avoid_weight avoid_horizon avoid_priority\n"
     "      wall_lookahead wall_margin stuck_time stuck_reaction (report|nudge|give_up). Keys not\n"
     "      named keep their values.  e.g. steerd-client params 4194305 --set "
     "\"max_speed=2,avoid_weight=1\"\n"},
    {"list",
     {"limit", NULL},
     "  list [--limit N]\n"
     "      The agents of one snapshot, by id: behaviour, owner (0: the server's) and position, one\n"
     "      QUERY each, for at most N of them (100, within the server's --rate-burst); the count\n"
     "      goes to stderr.  e.g. steerd-client list --limit 20\n"},
    {"ping",
     {"count", NULL},
     "  ping [--count N]\n"
     "      N PINGs (4), RTT of each and the median.  e.g. steerd-client ping --count 10\n"},
    {"shell",
     {NULL},
     "  shell\n"
     "      Commands from stdin, one a line, over one connection: only an agent's owner may\n"
     "      command it, and every other invocation is a new client. On a terminal it prompts\n"
     "      (steerd> ); `help` lists the commands, `help COMMAND` shows one, `quit` (or `exit`,\n"
     "      or end of input) leaves.\n"
     "      e.g. printf 'spawn --model dynamic --x 0 --y 0\\nping\\n' | steerd-client shell\n"},
    {"bots",
     {"seconds", "seed", "rate", NULL},
     "  bots N [--seconds S] [--seed K] [--rate HZ]\n"
     "      N connections issuing random valid commands at HZ (4) per bot for S seconds\n"
     "      (10), then a summary per bot; the bots despawn their agents before they leave.\n"
     "      A bot whose connection times out (--timeout) tries twice more.\n"
     "      e.g. steerd-client bots 20 --seconds 30 --seed 7\n"},
};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static const char usage_tail[] =
    "\n"
    "Exit status: 0 ok, 1 the server replied ERROR, 2 usage, 3 connection failed or lost.\n";

static const cmd_help *find_command(const char *name) {
  for (size_t i = 0; name != NULL && i < COMMAND_COUNT; i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

static void usage(FILE *f) {
  fputs(usage_head, f);
  for (size_t i = 0; i < COMMAND_COUNT; i++)
    fputs(commands[i].text, f);
  fputs(usage_tail, f);
}

/* One command's help: its section, and where the global options are. */
static void usage_command(FILE *f, const cmd_help *h) {
  fprintf(f,
          "usage: steerd-client [GLOBAL OPTIONS] %s ... (steerd-client --help lists the global options)\n\n",
          h->name);
  fputs(h->text, f);
}

/* "--a, --b, --c", or "none". */
static const char *option_list(const cmd_help *h, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; i < 8 && h->opts[i] != NULL; i++)
    n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s--%s", i ? ", " : "", h->opts[i]);
  return buf[0] ? buf : "none";
}

static int command_knows(const cmd_help *h, const char *key) {
  for (int i = 0; h != NULL && i < 8 && h->opts[i] != NULL; i++)
    if (strcmp(h->opts[i], key) == 0)
      return 1;
  return 0;
}

/* ---- Argument parsing ------------------------------------------------------ */

static int parse_u64(const char *s, uint64_t max, uint64_t *out) {
  if (s == NULL || *s == '\0' || *s == '-')
    return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v > max)
    return -1;
  *out = v;
  return 0;
}

static int parse_u32(const char *s, uint32_t *out) {
  uint64_t v;
  if (parse_u64(s, UINT32_MAX, &v) != 0)
    return -1;
  *out = (uint32_t)v;
  return 0;
}

static int parse_float(const char *s, float *out) {
  if (s == NULL || *s == '\0')
    return -1;
  char *end;
  errno = 0;
  float v = strtof(s, &end);
  if (errno != 0 || *end != '\0' || !isfinite(v))
    return -1;
  *out = v;
  return 0;
}

/* 1/true/on or 0/false/off ("" is off), as the server reads its boolean variables. */
static int parse_bool(const char *s, int *out) {
  if (strcmp(s, "1") == 0 || strcmp(s, "true") == 0 || strcmp(s, "on") == 0)
    *out = 1;
  else if (*s == '\0' || strcmp(s, "0") == 0 || strcmp(s, "false") == 0 || strcmp(s, "off") == 0)
    *out = 0;
  else
    return -1;
  return 0;
}

/* "X,Y" (whitespace allowed around the numbers). */
static int parse_xy(const char *s, vec2 *out) {
  char tmp[128];
  size_t n = strlen(s);
  if (n >= sizeof tmp)
    return -1;
  memcpy(tmp, s, n + 1);
  char *comma = strchr(tmp, ',');
  if (comma == NULL)
    return -1;
  *comma = '\0';
  char *xs = tmp, *ys = comma + 1;
  while (*xs == ' ')
    xs++;
  while (*ys == ' ')
    ys++;
  char *e = ys + strlen(ys);
  while (e > ys && e[-1] == ' ')
    *--e = '\0';
  e = xs + strlen(xs);
  while (e > xs && e[-1] == ' ')
    *--e = '\0';
  return parse_float(xs, &out->x) == 0 && parse_float(ys, &out->y) == 0 ? 0 : -1;
}

/* "x,y;x,y;..." into at most cap points. */
static int parse_points(const char *s, vec2 *pts, uint32_t cap, uint32_t *count) {
  uint32_t n = 0;
  while (*s != '\0') {
    const char *semi = strchr(s, ';');
    size_t len = semi != NULL ? (size_t)(semi - s) : strlen(s);
    char tmp[128];
    if (len >= sizeof tmp || n >= cap)
      return -1;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    if (parse_xy(tmp, &pts[n]) != 0)
      return -1;
    n++;
    s += len;
    if (*s == ';')
      s++;
  }
  *count = n;
  return n > 0 ? 0 : -1;
}

/* Index of the wire name in a proto_*_name table, or -1. */
static int find_name(const char *(*name_of)(uint32_t), uint32_t count, const char *s) {
  for (uint32_t i = 0; i < count; i++) {
    const char *n = name_of(i);
    if (n != NULL && strcmp(n, s) == 0)
      return (int)i;
  }
  return -1;
}

static const char global_options[] = "--host, --port, --name, --token, --timeout, --delta";

static int parse_args(int argc, char **argv, args *a) {
  memset(a, 0, sizeof *a);
  a->host = "127.0.0.1";
  a->port = 7777;
  a->name = "steerd-client";
  /* The server's variables too: the same values reach both. */
  const char *host_env = getenv("STEERD_HOST"), *port_env = getenv("STEERD_PORT");
  if (host_env != NULL && *host_env != '\0')
    a->host = host_env;
  if (port_env != NULL && *port_env != '\0') {
    uint64_t p;
    if (parse_u64(port_env, 65535, &p) != 0 || p == 0) {
      fprintf(stderr, "steerd-client: bad STEERD_PORT '%s': allowed is a port from 1 to 65535\n", port_env);
      return -1;
    }
    a->port = (uint16_t)p;
  }
  a->token = getenv("STEERD_TOKEN");
  a->timeout_ms = 3000;
  const char *delta_env = getenv("STEERD_DELTA");
  if (delta_env != NULL && parse_bool(delta_env, &a->delta) != 0) {
    fprintf(stderr, "steerd-client: bad STEERD_DELTA '%s' (1 or 0)\n", delta_env);
    return -1;
  }
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
      const cmd_help *h = find_command(a->cmd);
      if (h != NULL)
        usage_command(stdout, h);
      else
        usage(stdout);
      exit(0);
    }
    if (strcmp(s, "--version") == 0) {
      printf("steerd-client %s (protocol %d)\n", STEERD_VERSION, PROTO_VERSION);
      exit(0);
    }
    if (strcmp(s, "--interp") == 0) {
      a->interp = 1;
      continue;
    }
    if (strcmp(s, "--events-only") == 0) {
      a->events_only = 1;
      continue;
    }
    if (strcmp(s, "--delta") == 0) {
      a->delta = 1;
      continue;
    }
    if (strncmp(s, "--", 2) == 0) {
      const char *k = s + 2;
      int global = strcmp(k, "host") == 0 || strcmp(k, "port") == 0 || strcmp(k, "name") == 0 ||
                   strcmp(k, "token") == 0 || strcmp(k, "timeout") == 0;
      const cmd_help *h = find_command(a->cmd);
      if (!global && a->cmd == NULL) {
        fprintf(stderr,
                "steerd-client: unknown option %s (global options: %s; a command's options go after "
                "the command)\n",
                s, global_options);
        return -1;
      }
      if (!global && h != NULL && !command_knows(h, k)) {
        char list[160];
        fprintf(stderr,
                "steerd-client %s: unknown option %s (its options: %s; see steerd-client %s --help)\n",
                a->cmd, s, option_list(h, list, sizeof list), a->cmd);
        return -1;
      }
      if (i + 1 >= argc) {
        fprintf(stderr, "steerd-client: %s needs a value\n", s);
        return -1;
      }
      const char *v = argv[++i];
      if (strcmp(k, "host") == 0) {
        a->host = v;
      } else if (strcmp(k, "port") == 0) {
        uint64_t p;
        if (parse_u64(v, 65535, &p) != 0 || p == 0) {
          fprintf(stderr, "steerd-client: bad --port '%s': allowed is a port from 1 to 65535\n", v);
          return -1;
        }
        a->port = (uint16_t)p;
      } else if (strcmp(k, "name") == 0) {
        a->name = v;
      } else if (strcmp(k, "token") == 0) {
        a->token = v;
      } else if (strcmp(k, "timeout") == 0) {
        if (parse_u32(v, &a->timeout_ms) != 0) {
          fprintf(stderr, "steerd-client: bad --timeout '%s': allowed is milliseconds, 0 to 4294967295\n", v);
          return -1;
        }
      } else {
        if (a->nopts >= MAX_OPTS)
          return -1;
        a->opts[a->nopts].key = k;
        a->opts[a->nopts].value = v;
        a->nopts++;
      }
      continue;
    }
    if (s[0] == '-' && s[1] != '\0' && !(s[1] >= '0' && s[1] <= '9') && s[1] != '.') {
      fprintf(stderr, "steerd-client%s%s: unknown option %s (options take two dashes, e.g. --seconds)\n",
              a->cmd ? " " : "", a->cmd ? a->cmd : "", s);
      return -1;
    }
    if (a->cmd == NULL) {
      a->cmd = s;
      if (find_command(s) == NULL && strcmp(s, "help") != 0) {
        fprintf(stderr, "steerd-client: unknown command '%s' (commands:", s);
        for (size_t c = 0; c < COMMAND_COUNT; c++)
          fprintf(stderr, " %s", commands[c].name);
        fprintf(stderr, "; see --help)\n");
        return -1;
      }
    } else {
      if (a->npos >= 4) {
        fprintf(stderr, "steerd-client: too many arguments\n");
        return -1;
      }
      a->pos[a->npos++] = s;
    }
  }
  if (a->cmd == NULL) {
    usage(stderr);
    return -1;
  }
  return 0;
}

static const char *opt_get(const args *a, const char *key) {
  for (int i = a->nopts - 1; i >= 0; i--)
    if (strcmp(a->opts[i].key, key) == 0)
      return a->opts[i].value;
  return NULL;
}

/* Refuses options the subcommand does not know (a typo must not be ignored). */
static int check_opts(const args *a, const char *const *allowed, int npos_min, int npos_max) {
  for (int i = 0; i < a->nopts; i++) {
    int ok = 0;
    for (const char *const *k = allowed; *k != NULL; k++)
      if (strcmp(*k, a->opts[i].key) == 0)
        ok = 1;
    if (!ok) {
      fprintf(stderr, "steerd-client %s: unknown option --%s\n", a->cmd, a->opts[i].key);
      return -1;
    }
  }
  if (a->interp && (strcmp(a->cmd, "watch") != 0 || a->events_only)) {
    fprintf(stderr, "steerd-client %s: --interp is for watch, without --events-only\n", a->cmd);
    return -1;
  }
  if (a->events_only && strcmp(a->cmd, "watch") != 0) {
    fprintf(stderr, "steerd-client %s: --events-only is for watch\n", a->cmd);
    return -1;
  }
  if (a->npos < npos_min || a->npos > npos_max) {
    fprintf(stderr, "steerd-client %s: wrong number of arguments (see --help)\n", a->cmd);
    return -1;
  }
  return 0;
}

/* The names of a proto_*_name table, "a, b or c"; skip: an index left out (-1: none). */
static const char *name_list(const char *(*name_of)(uint32_t), uint32_t count, int skip, char *buf,
                             size_t cap) {
  size_t n = 0;
  uint32_t shown = 0, total = 0;
  for (uint32_t i = 0; i < count; i++)
    total += name_of(i) != NULL && (int)i != skip;
  buf[0] = '\0';
  for (uint32_t i = 0; i < count; i++) {
    const char *nm = name_of(i);
    if (nm == NULL || (int)i == skip)
      continue;
    shown++;
    const char *sep = shown == 1 ? "" : shown == total ? " or " : ", ";
    n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%s", sep, nm);
  }
  return buf;
}

/* What a value may be, by the name the commands use for it. */
static const char *allowed_for(const char *what, char *buf, size_t cap) {
  if (strcmp(what, "--model") == 0)
    return name_list(proto_model_name, STEER_MODEL_COUNT, -1, buf, cap);
  if (strcmp(what, "--behaviour") == 0)
    return name_list(proto_behaviour_name, STEER_BEHAVIOUR_COUNT, STEER_BEHAVIOUR_FOLLOW_PATH, buf, cap);
  if (strcmp(what, "--mode") == 0)
    return name_list(proto_path_mode_name, STEER_PATH_MODE_COUNT, -1, buf, cap);
  if (strcmp(what, "--cornering") == 0)
    return name_list(proto_cornering_name, STEER_CORNER_COUNT, -1, buf, cap);
  if (strcmp(what, "--x") == 0 || strcmp(what, "--y") == 0 || strcmp(what, "--orientation") == 0)
    return "a finite number";
  if (strcmp(what, "--target") == 0)
    return "X,Y (two numbers, metres)";
  if (strcmp(what, "--points") == 0)
    return "\"x,y;x,y;...\", 1 to 256 points";
  if (strcmp(what, "--radius") == 0 || strcmp(what, "--view radius") == 0)
    return "a number > 0 (metres)";
  if (strcmp(what, "--seconds") == 0)
    return "a number of seconds >= 0";
  if (strcmp(what, "--rate") == 0)
    return "a number from 1 to 1000 (per second)";
  if (strcmp(what, "--count") == 0)
    return "a whole number from 1 to 100000";
  if (strcmp(what, "--seed") == 0)
    return "a whole number >= 0";
  if (strstr(what, "--view") != NULL)
    return "all, X,Y,R or follow:ID,R";
  if (strstr(what, "agent") != NULL || strstr(what, "ID") != NULL)
    return "an agent id, a whole number from 1 to 4294967295";
  return NULL;
}

static int bad_value(const args *a, const char *what, const char *v) {
  char buf[200];
  const char *allowed = allowed_for(what, buf, sizeof buf);
  if (v == NULL)
    fprintf(stderr, "steerd-client %s: %s is required%s%s%s\n", a->cmd, what, allowed ? " (" : "",
            allowed ? allowed : "", allowed ? ")" : "");
  else
    fprintf(stderr, "steerd-client %s: bad %s '%s'%s%s\n", a->cmd, what, v, allowed ? ": allowed is " : "",
            allowed ? allowed : "");
  return EXIT_USAGE;
}

/* ---- Output --------------------------------------------------------------- */

static void print_num(FILE *f, const char *fmt, double v) {
  if (isfinite(v))
    fprintf(f, fmt, v);
  else
    fputs("null", f);
}

static void print_server_error(const proto_error_msg *e) {
  fprintf(stderr, "steerd-client: %s: %s", proto_error_name((int)e->code), e->message);
  if (e->has_field)
    fprintf(stderr, " (field %s)", e->field);
  fputc('\n', stderr);
}

/* Prints why a library call failed; returns the exit code for it. */
static int report(steerd_client *c, const char *what, int r, const proto_server_msg *reply) {
  if (r == STEERD_CLIENT_EREPLY) {
    if (reply != NULL && reply->type == PROTO_MSG_ERROR)
      print_server_error(&reply->error);
    else if (steerd_client_last_error(c) != NULL)
      print_server_error(steerd_client_last_error(c));
    return EXIT_REPLY_ERROR;
  }
  fprintf(stderr, "steerd-client: %s: %s: %s", what, steerd_client_error_name(r), steerd_client_strerror(r));
  if (r == STEERD_CLIENT_EDISCONNECTED)
    fprintf(stderr, " (reason %s)", proto_disconnect_name(steerd_client_disconnect_reason(c)));
  fputc('\n', stderr);
  return r == STEERD_CLIENT_EINVAL || r == STEERD_CLIENT_EENCODE ? EXIT_USAGE : EXIT_CONNECTION;
}

static void print_frame(void *user, const steerd_client_frame *f) {
  (void)user;
  printf("{\"type\":\"snapshot\",\"tick\":%llu,\"time_us\":%llu,\"agents\":[", (unsigned long long)f->tick,
         (unsigned long long)f->server_time_us);
  for (uint32_t i = 0; i < f->count; i++) {
    const proto_pose *p = &f->poses[i];
    printf("%s{\"id\":%lu,\"x\":", i ? "," : "", (unsigned long)p->id);
    print_num(stdout, "%.2f", p->x);
    fputs(",\"y\":", stdout);
    print_num(stdout, "%.2f", p->y);
    fputs(",\"theta\":", stdout);
    print_num(stdout, "%.4f", p->theta);
    fputs(",\"vx\":", stdout);
    print_num(stdout, "%.2f", p->vx);
    fputs(",\"vy\":", stdout);
    print_num(stdout, "%.2f", p->vy);
    fputc('}', stdout);
  }
  fputs("]}\n", stdout);
  fflush(stdout); /* one line per frame for whoever reads the pipe */
}

static void print_event(void *user, const proto_event *e) {
  (void)user;
  const char *name = proto_event_name(e->code);
  printf("{\"type\":\"event\",\"tick\":%llu,\"event\":", (unsigned long long)e->tick);
  if (name != NULL)
    printf("\"%s\"", name);
  else
    printf("%u", (unsigned)e->code);
  printf(",\"agent\":%lu,\"data\":%lu}\n", (unsigned long)e->agent, (unsigned long)e->data);
  fflush(stdout);
}

static void print_agent(const proto_agent_report *q) {
  const char *model = proto_model_name(q->model);
  const char *bhv = proto_behaviour_name(q->behaviour);
  printf("{\"type\":\"agent\",\"id\":%lu,\"tick\":%llu,\"model\":\"%s\",\"behaviour\":\"%s\",\"arrived\":%s,"
         "\"path_node\":",
         (unsigned long)q->agent, (unsigned long long)q->tick, model ? model : "?", bhv ? bhv : "?",
         q->arrived ? "true" : "false");
  if (q->path_node < 0)
    fputs("null", stdout);
  else
    printf("%ld", (long)q->path_node);
  const steer_state *s = &q->state;
  const double v[] = {s->position.x, s->position.y, s->orientation,
                      s->velocity.x, s->velocity.y, s->rotation};
  const char *const k[] = {"x", "y", "theta", "vx", "vy", "omega"};
  for (int i = 0; i < 6; i++) {
    printf(",\"%s\":", k[i]);
    print_num(stdout, "%.4f", v[i]);
  }
  const steer_limits *l = &q->limits;
  const double lv[PROTO_LIMIT_COUNT] = {l->max_speed, l->max_acceleration, l->max_rotation,
                                        l->max_angular_acceleration, l->radius};
  fputs(",\"limits\":{", stdout);
  for (uint32_t i = 0; i < PROTO_LIMIT_COUNT; i++) {
    const char *n = proto_limit_name(i);
    printf("%s\"%s\":", i ? "," : "", n ? n : "?");
    print_num(stdout, "%.4g", lv[i]);
  }
  printf("},\"owner\":%lu", (unsigned long)q->owner);
  if (q->has_tuning) {
    const proto_tuning *t = &q->tuning;
    const char *react = proto_stuck_reaction_name(t->stuck_reaction);
    fputs(",\"tuning\":{\"avoid_weight\":", stdout);
    print_num(stdout, "%.4g", t->avoid_weight);
    fputs(",\"avoid_horizon\":", stdout);
    print_num(stdout, "%.4g", t->avoid_horizon);
    printf(",\"avoid_priority\":%u,\"wall_lookahead\":", (unsigned)t->avoid_priority);
    print_num(stdout, "%.4g", t->wall_lookahead);
    fputs(",\"wall_margin\":", stdout);
    print_num(stdout, "%.4g", t->wall_margin);
    fputs(",\"stuck_time\":", stdout);
    print_num(stdout, "%.4g", t->stuck_time);
    printf(",\"stuck_reaction\":\"%s\"}", react ? react : "?");
  }
  if (q->has_goto) {
    const proto_goto_report *g = &q->go;
    const char *st = proto_goto_status_name(g->status), *why = proto_goto_reason_name(g->reason);
    printf(",\"goto\":{\"status\":\"%s\",\"reason\":\"%s\",", st ? st : "?", why ? why : "?");
    if (g->target_kind == STEER_TARGET_AGENT)
      printf("\"target_agent\":%lu", (unsigned long)g->target_agent);
    else
      printf("\"target\":[%.4f,%.4f]", (double)g->target.x, (double)g->target.y);
    if (g->queued)
      printf(",\"queue_position\":%lu", (unsigned long)g->queue_position);
    if (g->status == PROTO_GOTO_FOLLOWING) {
      printf(",\"goal\":[%.4f,%.4f],\"partial\":%s,\"route\":[", (double)g->goal.x, (double)g->goal.y,
             g->partial ? "true" : "false");
      for (uint32_t i = 0; i < g->route_count; i++)
        printf("%s[%.4f,%.4f]", i ? "," : "", (double)g->route[i].x, (double)g->route[i].y);
      fputs("]", stdout);
    }
    fputs("}", stdout);
  }
  fputs("}\n", stdout);
}

/* ---- GOTO's answer (goto --wait) ------------------------------------------------ */

/* The agent whose PLANNED or UNREACHABLE event `goto --wait` waits for. */
static struct {
  steer_id agent;
  int seen;
  proto_event ev;
} g_goto;

static void goto_on_event(void *user, const proto_event *e) {
  (void)user;
  if (g_goto.agent != 0 && !g_goto.seen && e->agent == g_goto.agent &&
      (e->code == PROTO_EVENT_PLANNED || e->code == PROTO_EVENT_UNREACHABLE)) {
    g_goto.ev = *e;
    g_goto.seen = 1;
  }
}

/* ---- Single-connection commands -------------------------------------------- */

/* The connection of a shell session: single commands reuse it, so agents spawned
 * earlier in the session stay theirs to command (only the owner may). */
static steerd_client *g_session;

static steerd_client *open_client(const args *a, const steerd_client_callbacks *cb, int *exit_code) {
  if (g_session != NULL)
    return g_session;
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = a->name;
  cfg.token = a->token;
  cfg.connect_timeout_ms = a->timeout_ms;
  cfg.snapshots = a->delta ? PROTO_SNAPSHOTS_DELTA : PROTO_SNAPSHOTS_FULL;
  cfg.max_agents = 0; /* sized by WELCOME's max_agents: watch holds any world the server can */
  /* map prints any map the server can hold: every point is a segment's, or
   * one more per obstacle (a wall's last, a circle's centre). */
  cfg.map_obstacles = STEER_MAP_MAX_OBSTACLES;
  cfg.map_points = STEER_MAP_MAX_SEGMENTS + STEER_MAP_MAX_OBSTACLES;
  if (cb != NULL)
    cfg.callbacks = *cb;
  steerd_client *c = steerd_client_create(&cfg);
  if (c == NULL) {
    fprintf(stderr, "steerd-client: cannot create the client (name longer than %d bytes?)\n",
            PROTO_MAX_NAME_BYTES);
    *exit_code = EXIT_USAGE;
    return NULL;
  }
  int r = steerd_client_connect(c, a->host, a->port);
  if (r < 0) {
    char what[300];
    snprintf(what, sizeof what, "connect %s:%u", a->host, (unsigned)a->port);
    *exit_code = report(c, what, r, NULL);
    if (r == STEERD_CLIENT_ETIMEDOUT)
      fprintf(stderr,
              "steerd-client: no answer from %s:%u (UDP) within %u ms: is steerd running there? Compare "
              "--host/--port (STEERD_HOST/STEERD_PORT) with the server's 'listening on' log line; a firewall "
              "dropping UDP looks the same\n",
              a->host, (unsigned)a->port, (unsigned)a->timeout_ms);
    steerd_client_destroy(c);
    return NULL;
  }
  return c;
}

static void close_client(steerd_client *c) {
  if (c == NULL || c == g_session)
    return;
  steerd_client_disconnect(c, 500);
  steerd_client_destroy(c);
}

/* Connects, sends one command, waits for its reply; prints errors. */
static int run_command(const args *a, const proto_command *cmd, proto_server_msg *reply) {
  int code = 0;
  steerd_client *c = open_client(a, NULL, &code);
  if (c == NULL)
    return code;
  int r = steerd_client_command_wait(c, cmd, a->timeout_ms, reply);
  if (r < 0)
    code = report(c, proto_msg_type_name(cmd->type), r, reply);
  close_client(c);
  return code;
}

static int parse_agent_id(const args *a, steer_id *id) {
  uint32_t v;
  if (parse_u32(a->pos[0], &v) != 0 || v == 0)
    return bad_value(a, "agent id", a->pos[0]);
  *id = v;
  return 0;
}

/* Fills the behaviour options shared by spawn and target. */
static int parse_behaviour(const args *a, proto_behaviour *b) {
  const char *k = opt_get(a, "behaviour");
  int kind = k != NULL ? find_name(proto_behaviour_name, STEER_BEHAVIOUR_COUNT, k) : -1;
  if (kind < 0 || kind == STEER_BEHAVIOUR_FOLLOW_PATH)
    return bad_value(a, "--behaviour", k);
  b->kind = (uint8_t)kind;
  const char *t = opt_get(a, "target");
  const char *ta = opt_get(a, "target-agent");
  const char *ta2 = opt_get(a, "target-agent2");
  const char *o = opt_get(a, "orientation");
  if (t != NULL && ta != NULL) {
    fprintf(stderr, "steerd-client %s: --target and --target-agent exclude each other\n", a->cmd);
    return EXIT_USAGE;
  }
  if (t != NULL) {
    if (parse_xy(t, &b->target) != 0)
      return bad_value(a, "--target", t);
    b->present |= PROTO_BHV_TARGET;
  }
  if (ta != NULL) {
    uint32_t id;
    if (parse_u32(ta, &id) != 0 || id == 0)
      return bad_value(a, "--target-agent", ta);
    b->target_agent = id;
    b->present |= PROTO_BHV_TARGET_AGENT;
  }
  if (ta2 != NULL) {
    uint32_t id;
    if (ta == NULL || parse_u32(ta2, &id) != 0 || id == 0)
      return bad_value(a, "--target-agent2 (needs --target-agent)", ta2);
    b->target_agent2 = id;
    b->present |= PROTO_BHV_TARGET_AGENT2;
  }
  if (o != NULL) {
    if (parse_float(o, &b->orientation) != 0)
      return bad_value(a, "--orientation", o);
    b->present |= PROTO_BHV_ORIENTATION;
  }
  return 0;
}

static int cmd_spawn(const args *a) {
  static const char *const allowed[] = {"model", "x", "y", "behaviour", "target", "target-agent", NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  static proto_command cmd; /* large (paths): not on the stack */
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SPAWN;
  proto_spawn *s = &cmd.spawn;
  const char *m = opt_get(a, "model");
  int model = m != NULL ? find_name(proto_model_name, STEER_MODEL_COUNT, m) : -1;
  if (model < 0)
    return bad_value(a, "--model", m);
  s->model = (uint8_t)model;
  if (parse_float(opt_get(a, "x"), &s->position.x) != 0)
    return bad_value(a, "--x", opt_get(a, "x"));
  if (parse_float(opt_get(a, "y"), &s->position.y) != 0)
    return bad_value(a, "--y", opt_get(a, "y"));
  if (opt_get(a, "behaviour") != NULL) {
    int r = parse_behaviour(a, &s->behaviour);
    if (r != 0)
      return r;
    s->present |= PROTO_SPAWN_BEHAVIOUR;
  } else if (opt_get(a, "target") != NULL || opt_get(a, "target-agent") != NULL) {
    fprintf(stderr, "steerd-client spawn: a target needs --behaviour\n");
    return EXIT_USAGE;
  }
  proto_server_msg reply;
  int code = run_command(a, &cmd, &reply);
  if (code == 0)
    printf("%lu\n", (unsigned long)reply.ack.agent);
  return code;
}

static int cmd_target(const args *a) {
  static const char *const allowed[] = {"behaviour",     "target",      "target-agent",
                                        "target-agent2", "orientation", NULL};
  if (check_opts(a, allowed, 1, 1) != 0)
    return EXIT_USAGE;
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SET_BEHAVIOUR;
  int r = parse_agent_id(a, &cmd.set_behaviour.agent);
  if (r == 0)
    r = parse_behaviour(a, &cmd.set_behaviour.behaviour);
  if (r != 0)
    return r;
  return run_command(a, &cmd, NULL);
}

static int cmd_path(const args *a) {
  static const char *const allowed[] = {"points", "radius", "mode", "cornering", NULL};
  if (check_opts(a, allowed, 1, 1) != 0)
    return EXIT_USAGE;
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SET_PATH;
  proto_set_path *sp = &cmd.set_path;
  int r = parse_agent_id(a, &sp->agent);
  if (r != 0)
    return r;
  const char *pts = opt_get(a, "points");
  if (pts == NULL || parse_points(pts, sp->path.points, PROTO_MAX_PATH_POINTS, &sp->path.count) != 0)
    return bad_value(a, "--points", pts);
  sp->path.radius = 1.0f;
  const char *rad = opt_get(a, "radius");
  if (rad != NULL && (parse_float(rad, &sp->path.radius) != 0 || !(sp->path.radius > 0.0f)))
    return bad_value(a, "--radius", rad);
  const char *mode = opt_get(a, "mode");
  int mi = mode != NULL ? find_name(proto_path_mode_name, STEER_PATH_MODE_COUNT, mode) : STEER_PATH_ONCE;
  if (mi < 0)
    return bad_value(a, "--mode", mode);
  sp->path.mode = (uint8_t)mi;
  const char *corner = opt_get(a, "cornering");
  int ci = corner != NULL ? find_name(proto_cornering_name, STEER_CORNER_COUNT, corner) : STEER_CORNER_NONE;
  if (ci < 0)
    return bad_value(a, "--cornering", corner);
  sp->path.cornering = (uint8_t)ci;
  return run_command(a, &cmd, NULL);
}

static int cmd_goto(const args *a) {
  static const char *const allowed[] = {"target",          "target-agent", "node-radius", "cornering",
                                        "replan-distance", "wait",         NULL};
  if (check_opts(a, allowed, 1, 1) != 0)
    return EXIT_USAGE;
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SET_BEHAVIOUR;
  proto_behaviour *b = &cmd.set_behaviour.behaviour;
  b->kind = PROTO_BEHAVIOUR_GOTO;
  int r = parse_agent_id(a, &cmd.set_behaviour.agent);
  if (r != 0)
    return r;
  const char *t = opt_get(a, "target"), *ta = opt_get(a, "target-agent");
  if ((t == NULL) == (ta == NULL)) {
    fprintf(stderr, "steerd-client goto: give one of --target X,Y and --target-agent ID\n");
    return EXIT_USAGE;
  }
  if (t != NULL) {
    if (parse_xy(t, &b->target) != 0)
      return bad_value(a, "--target", t);
    b->present |= PROTO_BHV_TARGET;
  } else {
    if (parse_u32(ta, &b->target_agent) != 0 || b->target_agent == 0)
      return bad_value(a, "--target-agent", ta);
    b->present |= PROTO_BHV_TARGET_AGENT;
  }
  const char *nr = opt_get(a, "node-radius"), *co = opt_get(a, "cornering"),
             *rd = opt_get(a, "replan-distance");
  if (nr != NULL) {
    if (parse_float(nr, &b->node_radius) != 0 || !(b->node_radius > 0.0f))
      return bad_value(a, "--node-radius", nr);
    b->present |= PROTO_BHV_NODE_RADIUS;
  }
  if (co != NULL) {
    int ci = find_name(proto_cornering_name, STEER_CORNER_COUNT, co);
    if (ci < 0)
      return bad_value(a, "--cornering", co);
    b->cornering = (uint8_t)ci;
    b->present |= PROTO_BHV_CORNERING;
  }
  if (rd != NULL) {
    if (parse_float(rd, &b->replan_distance) != 0 || !(b->replan_distance >= 0.0f))
      return bad_value(a, "--replan-distance", rd);
    b->present |= PROTO_BHV_REPLAN_DISTANCE;
  }
  float wait_s = 0.0f;
  const char *w = opt_get(a, "wait");
  if (w != NULL && (parse_float(w, &wait_s) != 0 || !(wait_s >= 0.0f && wait_s <= 3600.0f)))
    return bad_value(a, "--wait", w);
  int code = 0;
  steerd_client_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.on_event = goto_on_event;
  steerd_client *c = open_client(a, &cb, &code);
  if (c == NULL)
    return code;
  memset(&g_goto, 0, sizeof g_goto);
  g_goto.agent = cmd.set_behaviour.agent;
  proto_server_msg reply;
  r = steerd_client_command_wait(c, &cmd, a->timeout_ms, &reply);
  if (r < 0) {
    code = report(c, "goto", r, &reply);
  } else if (w != NULL) {
    uint64_t end = steerd_client_now_us() + (uint64_t)((double)wait_s * 1e6);
    while (!g_goto.seen && !g_stop && steerd_client_now_us() < end && r >= 0)
      r = steerd_client_service(c, 10);
    if (!g_goto.seen) {
      fprintf(stderr, "steerd-client goto: no answer for agent %lu within %g s\n",
              (unsigned long)g_goto.agent, (double)wait_s);
      code = r < 0 ? report(c, "goto", r, NULL) : EXIT_REPLY_ERROR;
    } else {
      print_event(NULL, &g_goto.ev);
      if (g_goto.ev.code == PROTO_EVENT_UNREACHABLE) {
        code = EXIT_REPLY_ERROR;
      } else {
        proto_command q;
        memset(&q, 0, sizeof q);
        q.type = PROTO_MSG_QUERY;
        q.query.agent = g_goto.agent;
        r = steerd_client_command_wait(c, &q, a->timeout_ms, &reply);
        if (r < 0)
          code = report(c, "query", r, &reply);
        else
          print_agent(&reply.ack.query);
      }
    }
  }
  g_goto.agent = 0;
  close_client(c);
  return code;
}

/* despawn, stop, query: one agent id. */
static int cmd_agent(const args *a, uint8_t type) {
  static const char *const allowed[] = {NULL};
  if (check_opts(a, allowed, 1, 1) != 0)
    return EXIT_USAGE;
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = type;
  int r = parse_agent_id(a, &cmd.query.agent); /* despawn, stop, query share proto_agent_cmd */
  if (r != 0)
    return r;
  proto_server_msg reply;
  int code = run_command(a, &cmd, &reply);
  if (code == 0 && type == PROTO_MSG_QUERY)
    print_agent(&reply.ack.query);
  return code;
}

/* ---- params ------------------------------------------------------------------------- */

/* The fields behind proto_param_name(i) (bit 1 << i of proto_params.present), in its order. */
static const size_t param_offsets[PROTO_PARAM_COUNT] = {
    offsetof(steer_params, time_to_target),       offsetof(steer_params, target_radius),
    offsetof(steer_params, slow_radius),          offsetof(steer_params, kinematic_time_to_target),
    offsetof(steer_params, align_target_radius),  offsetof(steer_params, align_slow_radius),
    offsetof(steer_params, align_time_to_target), offsetof(steer_params, max_prediction),
    offsetof(steer_params, panic_radius),         offsetof(steer_params, wander_offset),
    offsetof(steer_params, wander_radius),        offsetof(steer_params, wander_rate),
    offsetof(steer_params, separation_radius),    offsetof(steer_params, turn_trigger_distance),
    offsetof(steer_params, path_recover_strength)};
/* The fields behind proto_limit_name(i) (bit 1 << i of proto_limits.present). */
static const size_t limit_offsets[PROTO_LIMIT_COUNT] = {
    offsetof(steer_limits, max_speed), offsetof(steer_limits, max_acceleration),
    offsetof(steer_limits, max_rotation), offsetof(steer_limits, max_angular_acceleration),
    offsetof(steer_limits, radius)};

/* One KEY=VALUE of params --set into the command; -1 for a key or value it cannot take. */
static int params_key(proto_set_params *sp, const char *key, const char *value) {
  for (uint32_t i = 0; i < PROTO_LIMIT_COUNT; i++)
    if (strcmp(key, proto_limit_name(i)) == 0) {
      sp->limits.present |= 1u << i;
      return parse_float(value, (float *)((char *)&sp->limits.v + limit_offsets[i]));
    }
  for (uint32_t i = 0; i < PROTO_PARAM_COUNT; i++)
    if (strcmp(key, proto_param_name(i)) == 0) {
      sp->params.present |= 1u << i;
      return parse_float(value, (float *)((char *)&sp->params.v + param_offsets[i]));
    }
  proto_tuning *t = &sp->params.tuning;
  if (strcmp(key, "stuck_reaction") == 0) {
    int r = find_name(proto_stuck_reaction_name, STEER_STUCK_REACTION_COUNT, value);
    if (r < 0)
      return -1;
    t->stuck_reaction = (uint8_t)r;
    sp->params.present |= PROTO_PARAM_STUCK_REACTION;
    return 0;
  }
  if (strcmp(key, "avoid_priority") == 0) {
    uint32_t v;
    if (parse_u32(value, &v) != 0 || v > 255)
      return -1;
    t->avoid_priority = (uint8_t)v;
    sp->params.present |= PROTO_PARAM_AVOID_PRIORITY;
    return 0;
  }
  float *f = NULL;
  uint32_t bit = 0;
  if (strcmp(key, "avoid_weight") == 0)
    f = &t->avoid_weight, bit = PROTO_PARAM_AVOID_WEIGHT;
  else if (strcmp(key, "avoid_horizon") == 0)
    f = &t->avoid_horizon, bit = PROTO_PARAM_AVOID_HORIZON;
  else if (strcmp(key, "wall_lookahead") == 0)
    f = &t->wall_lookahead, bit = PROTO_PARAM_WALL_LOOKAHEAD;
  else if (strcmp(key, "wall_margin") == 0)
    f = &t->wall_margin, bit = PROTO_PARAM_WALL_MARGIN;
  else if (strcmp(key, "stuck_time") == 0)
    f = &t->stuck_time, bit = PROTO_PARAM_STUCK_TIME;
  if (f == NULL)
    return -1;
  sp->params.present |= bit;
  return parse_float(value, f);
}

static int cmd_params(const args *a) {
  static const char *const allowed[] = {"set", NULL};
  if (check_opts(a, allowed, 1, 1) != 0)
    return EXIT_USAGE;
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SET_PARAMS;
  int r = parse_agent_id(a, &cmd.set_params.agent);
  if (r != 0)
    return r;
  const char *set = opt_get(a, "set");
  if (set == NULL || *set == '\0') {
    fprintf(stderr,
            "steerd-client params: --set \"KEY=VALUE,...\" is required (see steerd-client params --help)\n");
    return EXIT_USAGE;
  }
  char buf[1024];
  if (strlen(set) >= sizeof buf)
    return bad_value(a, "--set (too long)", set);
  strcpy(buf, set);
  for (char *save = NULL, *item = strtok_r(buf, ",", &save); item != NULL;
       item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    if (eq != NULL)
      *eq = '\0';
    if (eq == NULL || params_key(&cmd.set_params, item, eq + 1) != 0) {
      fprintf(stderr,
              "steerd-client params: cannot set '%s'%s%s: a key is a limit, a parameter or a tuning key "
              "with a number (stuck_reaction: report, nudge or give_up); see steerd-client params --help\n",
              item, eq != NULL ? " to " : " (KEY=VALUE)", eq != NULL ? eq + 1 : "");
      return EXIT_USAGE;
    }
  }
  proto_server_msg reply;
  int code = run_command(a, &cmd, &reply);
  if (code == 0)
    printf("agent %lu: parameters set\n", (unsigned long)cmd.set_params.agent);
  return code;
}

/* ---- list --------------------------------------------------------------------------- */

/* The ids of the first complete snapshot `list` sees. */
static struct {
  steer_id *ids;
  uint32_t count;
  int seen, failed;
} g_list;

static void list_on_frame(void *user, const steerd_client_frame *f) {
  (void)user;
  if (g_list.seen)
    return;
  g_list.seen = 1;
  g_list.ids = f->count > 0 ? malloc(f->count * sizeof *g_list.ids) : NULL;
  if (f->count > 0 && g_list.ids == NULL) {
    g_list.failed = 1;
    return;
  }
  for (uint32_t i = 0; i < f->count; i++)
    g_list.ids[i] = f->poses[i].id;
  g_list.count = f->count;
}

static int compare_ids(const void *x, const void *y) {
  steer_id a = *(const steer_id *)x, b = *(const steer_id *)y;
  return (a > b) - (a < b);
}

static int cmd_list(const args *a) {
  static const char *const allowed[] = {"limit", NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  uint32_t limit = 100;
  const char *l = opt_get(a, "limit");
  if (l != NULL && (parse_u32(l, &limit) != 0 || limit == 0))
    return bad_value(a, "--limit", l);
  memset(&g_list, 0, sizeof g_list);
  steerd_client_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.on_snapshot_frame = list_on_frame;
  int code = 0;
  steerd_client *c = open_client(a, &cb, &code);
  if (c == NULL)
    return code;
  uint64_t end = steerd_client_now_us() + (uint64_t)a->timeout_ms * 1000u;
  int r = 0;
  while (!g_list.seen && !g_stop && r >= 0 && steerd_client_now_us() < end)
    r = steerd_client_service(c, 50);
  if (r < 0 || g_list.failed || !g_list.seen) {
    code = r < 0 ? report(c, "list", r, NULL) : EXIT_CONNECTION;
    if (r >= 0)
      fprintf(stderr, "steerd-client list: %s\n",
              g_list.failed ? "out of memory" : "no snapshot arrived within --timeout");
    free(g_list.ids);
    close_client(c);
    return code;
  }
  if (g_list.count > 1) /* ids is NULL for an empty world */
    qsort(g_list.ids, g_list.count, sizeof *g_list.ids, compare_ids);
  printf("%-10s %-18s %-8s %10s %10s\n", "id", "behaviour", "owner", "x", "y");
  uint32_t shown = 0, gone = 0;
  static proto_command cmd;
  for (uint32_t i = 0; i < g_list.count && shown < limit && !g_stop; i++) {
    memset(&cmd, 0, sizeof cmd);
    cmd.type = PROTO_MSG_QUERY;
    cmd.query.agent = g_list.ids[i];
    proto_server_msg reply;
    r = steerd_client_command_wait(c, &cmd, a->timeout_ms, &reply);
    if (r == STEERD_CLIENT_EREPLY && reply.type == PROTO_MSG_ERROR &&
        reply.error.code == PROTO_ERR_NO_SUCH_AGENT) {
      gone++; /* despawned since the snapshot */
      continue;
    }
    if (r < 0) {
      code = report(c, "QUERY", r, &reply);
      break;
    }
    const proto_agent_report *q = &reply.ack.query;
    const char *bhv = proto_behaviour_name(q->behaviour);
    printf("%-10lu %-18s %-8lu %10.2f %10.2f\n", (unsigned long)q->agent, bhv ? bhv : "?",
           (unsigned long)q->owner, (double)q->state.position.x, (double)q->state.position.y);
    shown++;
  }
  fflush(stdout);
  fprintf(stderr, "steerd-client list: %u agents in the snapshot, %u listed, %u despawned meanwhile%s\n",
          (unsigned)g_list.count, (unsigned)shown, (unsigned)gone,
          code == 0 && shown + gone < g_list.count ? " (--limit N lists more)" : "");
  free(g_list.ids);
  g_list.ids = NULL;
  close_client(c);
  return code;
}

/* ---- the map ---------------------------------------------------------------------- */

static void print_point(vec2 p) { printf("[%.9g, %.9g]", (double)p.x, (double)p.y); }

/* map: waits for the copy of the map to be current, prints it as a map file. */
static int cmd_map(const args *a) {
  static const char *const allowed[] = {NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  int code = 0;
  steerd_client *c = open_client(a, NULL, &code);
  if (c == NULL)
    return code;
  const steerd_mapcopy *m = steerd_client_map(c);
  uint64_t end = steerd_client_now_us() + (uint64_t)a->timeout_ms * 1000u;
  while (m != NULL && !steerd_mapcopy_current(m) && steerd_client_now_us() < end && !g_stop) {
    int r = steerd_client_service(c, 20);
    if (r < 0) {
      code = report(c, "MAP", r, NULL);
      close_client(c);
      return code;
    }
  }
  if (m == NULL || !steerd_mapcopy_current(m)) {
    steerd_client_stats st;
    steerd_client_get_stats(c, &st);
    fprintf(stderr, "steerd-client map: no complete map within %u ms (%llu parts received%s)\n",
            (unsigned)a->timeout_ms, (unsigned long long)st.map_parts,
            st.map_overflows ? ", larger than this client keeps" : "");
    close_client(c);
    return EXIT_CONNECTION;
  }
  printf("{\"format\": \"steerd-map\", \"version\": 1,\n \"obstacles\": [");
  for (uint32_t i = 0; i < steerd_mapcopy_count(m); i++) {
    proto_obstacle o = steerd_mapcopy_get(m, i);
    printf("%s\n   {\"id\": %lu, \"type\": \"%s\", ", i ? "," : "", (unsigned long)o.id,
           proto_obstacle_kind_name(o.kind));
    if (o.kind == STEER_OBSTACLE_CIRCLE) {
      printf("\"center\": ");
      print_point(o.points[0]);
      printf(", \"radius\": %.9g}", (double)o.radius);
      continue;
    }
    printf("\"points\": [");
    for (uint32_t k = 0; k < o.count; k++) {
      if (k)
        printf(", ");
      print_point(o.points[k]);
    }
    printf("]}");
  }
  printf("]}\n");
  fprintf(stderr, "steerd-client: map version %lu, %lu obstacles\n", (unsigned long)steerd_mapcopy_version(m),
          (unsigned long)steerd_mapcopy_count(m));
  close_client(c);
  return 0;
}

static int cmd_add_obstacle(const args *a) {
  static const char *const allowed[] = {"id", "type", "center", "radius", "points", NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_ADD_OBSTACLE;
  proto_add_obstacle *o = &cmd.add_obstacle;
  const char *id = opt_get(a, "id");
  if (id == NULL || parse_u32(id, &o->id) != 0 || o->id == 0)
    return bad_value(a, "--id", id);
  const char *t = opt_get(a, "type");
  int kind = t != NULL ? find_name(proto_obstacle_kind_name, STEER_OBSTACLE_KIND_COUNT, t) : -1;
  if (kind < 0)
    return bad_value(a, "--type", t);
  o->kind = (uint8_t)kind;
  if (kind == STEER_OBSTACLE_CIRCLE) {
    const char *c = opt_get(a, "center"), *r = opt_get(a, "radius");
    if (c == NULL || parse_xy(c, &o->points[0]) != 0)
      return bad_value(a, "--center", c);
    if (r == NULL || parse_float(r, &o->radius) != 0 || !(o->radius > 0.0f))
      return bad_value(a, "--radius", r);
    if (opt_get(a, "points") != NULL)
      return bad_value(a, "--points (not for a circle)", opt_get(a, "points"));
    o->count = 1;
  } else {
    const char *p = opt_get(a, "points");
    uint32_t least = kind == STEER_OBSTACLE_POLYGON ? 3u : 2u;
    if (p == NULL || parse_points(p, o->points, STEER_MAP_MAX_VERTICES, &o->count) != 0 || o->count < least)
      return bad_value(a, "--points", p);
    if (opt_get(a, "center") != NULL || opt_get(a, "radius") != NULL)
      return bad_value(a, "--center/--radius (only for a circle)", t);
  }
  proto_server_msg reply;
  int code = run_command(a, &cmd, &reply);
  if (code == 0)
    printf("obstacle %lu added: map version %lu, %lu agents moved out of it\n",
           (unsigned long)reply.ack.obstacle, (unsigned long)reply.ack.map_version,
           (unsigned long)reply.ack.moved);
  return code;
}

static int cmd_remove_obstacle(const args *a) {
  static const char *const allowed[] = {NULL};
  if (check_opts(a, allowed, 1, 1) != 0)
    return EXIT_USAGE;
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_REMOVE_OBSTACLE;
  if (parse_u32(a->pos[0], &cmd.remove_obstacle.id) != 0 || cmd.remove_obstacle.id == 0)
    return bad_value(a, "obstacle id", a->pos[0]);
  proto_server_msg reply;
  int code = run_command(a, &cmd, &reply);
  if (code == 0)
    printf("obstacle %lu removed: map version %lu\n", (unsigned long)reply.ack.obstacle,
           (unsigned long)reply.ack.map_version);
  return code;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

static int cmd_ping(const args *a) {
  static const char *const allowed[] = {"count", NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  uint32_t count = 4;
  const char *cs = opt_get(a, "count");
  if (cs != NULL && (parse_u32(cs, &count) != 0 || count == 0 || count > 100000))
    return bad_value(a, "--count", cs);
  uint64_t *rtts = calloc(count, sizeof *rtts);
  if (rtts == NULL)
    return EXIT_CONNECTION;
  int code = 0;
  steerd_client *c = open_client(a, NULL, &code);
  uint32_t got = 0;
  for (uint32_t i = 0; c != NULL && i < count && !g_stop; i++) {
    uint64_t sent = steerd_client_now_us();
    int r = steerd_client_ping(c, a->timeout_ms, &rtts[got]);
    if (r < 0) {
      code = report(c, "PING", r, NULL);
      break;
    }
    printf("ping %u: rtt %.3f ms\n", (unsigned)(i + 1), (double)rtts[got] / 1000.0);
    fflush(stdout);
    got++;
    /* Pace the pings 100 ms apart, still servicing the connection. */
    uint64_t next = sent + 100000u;
    for (uint64_t now = steerd_client_now_us(); i + 1 < count && now < next && !g_stop;
         now = steerd_client_now_us()) {
      r = steerd_client_service(c, (uint32_t)((next - now + 999u) / 1000u));
      if (r < 0)
        break;
    }
  }
  if (got > 0) {
    qsort(rtts, got, sizeof *rtts, cmp_u64);
    double median =
        got % 2 ? (double)rtts[got / 2] : ((double)rtts[got / 2 - 1] + (double)rtts[got / 2]) / 2.0;
    steerd_client_stats st;
    steerd_client_get_stats(c, &st);
    printf("median %.3f ms over %u pings (min %.3f, max %.3f, smoothed %.3f); clock offset %lld us\n",
           median / 1000.0, (unsigned)got, (double)rtts[0] / 1000.0, (double)rtts[got - 1] / 1000.0,
           st.rtt_smoothed_us / 1000.0, (long long)st.clock_offset_us);
  }
  close_client(c);
  free(rtts);
  return code;
}

/* ---- watch --------------------------------------------------------------- */

/* watch --view: "all", "X,Y,R" or "follow:ID,R" (R in metres, > 0). Checked
 * before connecting; --view needs --delta (full snapshots always hold every
 * agent, the server ACKs a VIEW and ignores it). Returns 0 or an exit code. */
static int parse_view(const args *a, proto_view *v, int *has_view) {
  const char *s = opt_get(a, "view");
  *has_view = s != NULL;
  memset(v, 0, sizeof *v);
  if (s == NULL)
    return 0;
  if (!a->delta) {
    fprintf(stderr,
            "steerd-client %s: --view needs --delta (or STEERD_DELTA=1): full snapshots always "
            "hold every agent\n",
            a->cmd);
    return EXIT_USAGE;
  }
  if (strcmp(s, "all") == 0) {
    v->kind = PROTO_VIEW_ALL;
    return 0;
  }
  char tmp[128];
  size_t n = strlen(s);
  if (n >= sizeof tmp)
    return bad_value(a, "--view", s);
  memcpy(tmp, s, n + 1);
  char *radius = strrchr(tmp, ',');
  if (radius == NULL)
    return bad_value(a, "--view (all, X,Y,R or follow:ID,R)", s);
  *radius++ = '\0';
  while (*radius == ' ')
    radius++;
  if (parse_float(radius, &v->radius) != 0 || !(v->radius > 0.0f))
    return bad_value(a, "--view radius", radius);
  if (strncmp(tmp, "follow:", 7) == 0) {
    uint32_t id;
    if (parse_u32(tmp + 7, &id) != 0 || id == 0)
      return bad_value(a, "--view agent id", tmp + 7);
    v->kind = PROTO_VIEW_FOLLOW;
    v->follow = id;
    return 0;
  }
  if (parse_xy(tmp, &v->centre) != 0)
    return bad_value(a, "--view (all, X,Y,R or follow:ID,R)", s);
  v->kind = PROTO_VIEW_CENTRE;
  return 0;
}

/* Sends the VIEW and waits for its ACK (frames arriving meanwhile go to the
 * callbacks). Returns 0 or an exit code. */
static int send_view(steerd_client *c, const args *a, const proto_view *v) {
  static proto_command cmd; /* large (paths): not on the stack */
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_VIEW;
  cmd.view = *v;
  proto_server_msg reply;
  int r = steerd_client_command_wait(c, &cmd, a->timeout_ms, &reply);
  return r < 0 ? report(c, "VIEW", r, &reply) : 0;
}

static void print_view(FILE *f, const proto_view *v) {
  if (v->kind == PROTO_VIEW_CENTRE)
    fprintf(f, "view %g m around (%g, %g)", (double)v->radius, (double)v->centre.x, (double)v->centre.y);
  else if (v->kind == PROTO_VIEW_FOLLOW)
    fprintf(f, "view %g m around agent %lu", (double)v->radius, (unsigned long)v->follow);
  else
    fputs("view all", f);
}

/* The delta figures of the summary (--delta only). */
static void print_delta_stats(const steerd_client *c) {
  steerd_client_stats st;
  steerd_client_get_stats(c, &st);
  fprintf(stderr,
          "steerd-client: delta: %llu bytes received (%llu in %llu DELTA parts, %.0f per frame); %llu frames "
          "rebuilt, %llu dropped without baseline, %llu bad; %llu acks sent\n",
          (unsigned long long)st.bytes_received, (unsigned long long)st.snapshot_bytes,
          (unsigned long long)st.snapshot_parts,
          st.frames_complete ? (double)st.snapshot_bytes / (double)st.frames_complete : 0.0,
          (unsigned long long)st.frames_complete, (unsigned long long)st.delta_no_base,
          (unsigned long long)st.delta_bad, (unsigned long long)st.delta_acks_sent);
}

/* watch --interp: the snapshots go through the interpolation buffer (interp.h)
 * and the interpolated states are printed at a fixed rate. */
static const char *const interp_mode_names[STEERD_INTERP_MODE_COUNT] = {"interpolate", "extrapolate",
                                                                        "hold_newest", "hold_oldest"};

static steerd_interp *g_interp; /* NULL until the WELCOME gives the snapshot rate */

static void interp_on_frame(void *user, const steerd_client_frame *f) {
  (void)user;
  if (g_interp != NULL)
    steerd_interp_push(g_interp, steerd_client_now_us(), f->tick, f->server_time_us, f->poses, f->count, 1);
}

static void interp_on_event(void *user, const proto_event *e) {
  if (g_interp != NULL && e->code == PROTO_EVENT_DESPAWNED)
    steerd_interp_despawn(g_interp, e->agent, e->tick);
  print_event(user, e);
}

static int cmd_watch_interp(const args *a) {
  static const char *const allowed[] = {"seconds", "rate", "view", NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  proto_view view;
  int has_view;
  int vr = parse_view(a, &view, &has_view);
  if (vr != 0)
    return vr;
  float seconds = 0.0f, rate = 30.0f;
  const char *ss = opt_get(a, "seconds");
  if (ss != NULL && (parse_float(ss, &seconds) != 0 || seconds < 0.0f))
    return bad_value(a, "--seconds", ss);
  const char *rs = opt_get(a, "rate");
  if (rs != NULL && (parse_float(rs, &rate) != 0 || rate < 1.0f || rate > 1000.0f))
    return bad_value(a, "--rate", rs);
  steerd_client_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.on_event = interp_on_event;
  cb.on_snapshot_frame = interp_on_frame;
  int code = 0;
  steerd_client *c = open_client(a, &cb, &code);
  if (c == NULL)
    return code;
  /* Before the buffer exists: it sees only frames of the new view (and a few
   * sent before the server applied it). */
  if (has_view && (code = send_view(c, a, &view)) != 0) {
    close_client(c);
    return code;
  }
  const proto_welcome *w = steerd_client_welcome(c);
  steerd_interp_config icfg = steerd_interp_default_config();
  icfg.max_agents = steerd_client_max_agents(c);
  if (w->snapshot_rate > 0)
    icfg.snapshot_interval_us = 1000000u / w->snapshot_rate;
  steerd_interp *it = steerd_interp_create(&icfg);
  if (it == NULL) {
    close_client(c);
    return EXIT_CONNECTION;
  }
  g_interp = it;
  int r;
  uint64_t period = (uint64_t)(1e6 / (double)rate);
  uint64_t start = steerd_client_now_us();
  uint64_t end = seconds > 0.0f ? start + (uint64_t)((double)seconds * 1e6) : UINT64_MAX;
  uint64_t next = start + period;
  while (!g_stop) {
    uint64_t now = steerd_client_now_us();
    if (now >= end)
      break;
    if (now >= next) {
      next = now - next > period ? now + period : next + period;
      int64_t render;
      if (steerd_interp_advance(it, now, &render) == 0) {
        steerd_interp_stats st;
        steerd_interp_get_stats(it, &st);
        printf("{\"type\":\"interp\",\"render_time_us\":%lld,\"delay_ms\":%.1f,\"agents\":[",
               (long long)render, st.delay_ms);
        for (uint32_t i = 0; i < steerd_interp_count(it); i++) {
          steerd_interp_state s;
          if (steerd_interp_sample(it, steerd_interp_id_at(it, i), &s) != 0)
            continue;
          printf("%s{\"id\":%lu,\"x\":", i ? "," : "", (unsigned long)s.id);
          print_num(stdout, "%.3f", s.x);
          fputs(",\"y\":", stdout);
          print_num(stdout, "%.3f", s.y);
          fputs(",\"theta\":", stdout);
          print_num(stdout, "%.4f", s.theta);
          fputs(",\"vx\":", stdout);
          print_num(stdout, "%.2f", s.vx);
          fputs(",\"vy\":", stdout);
          print_num(stdout, "%.2f", s.vy);
          printf(",\"mode\":\"%s\"}", interp_mode_names[s.mode]);
        }
        fputs("]}\n", stdout);
        fflush(stdout);
      }
      continue;
    }
    uint64_t wait = (next < end ? next : end) - now;
    r = steerd_client_service(c, (uint32_t)((wait + 999u) / 1000u));
    if (r < 0) {
      code = report(c, "watch", r, NULL);
      break;
    }
  }
  steerd_interp_stats st;
  steerd_interp_get_stats(it, &st);
  fprintf(stderr,
          "steerd-client: interp: frames %llu of %llu expected; jitter %.1f ms; delay %.1f ms; snapshot age "
          "mean %.1f max %.1f ms; underruns %llu (%.1f ms); extrapolated samples %llu, held %llu\n",
          (unsigned long long)st.frames, (unsigned long long)st.frames_expected, st.jitter_ms, st.delay_ms,
          st.age_mean_ms, st.age_max_ms, (unsigned long long)st.underruns, st.underrun_ms,
          (unsigned long long)st.samples[STEERD_INTERP_MODE_EXTRAPOLATE],
          (unsigned long long)st.samples[STEERD_INTERP_MODE_HOLD_NEWEST]);
  if (a->delta)
    print_delta_stats(c);
  if (code == 0)
    steerd_client_disconnect(c, 500);
  steerd_client_destroy(c);
  g_interp = NULL;
  steerd_interp_destroy(it);
  return code;
}

static int cmd_watch(const args *a) {
  if (a->interp)
    return cmd_watch_interp(a);
  static const char *const allowed[] = {"seconds", "view", NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  float seconds = 0.0f;
  const char *ss = opt_get(a, "seconds");
  if (ss != NULL && (parse_float(ss, &seconds) != 0 || seconds < 0.0f))
    return bad_value(a, "--seconds", ss);
  proto_view view;
  int has_view;
  int vr = parse_view(a, &view, &has_view);
  if (vr != 0)
    return vr;
  steerd_client_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.on_event = print_event;
  if (!a->events_only)
    cb.on_snapshot_frame = print_frame;
  int code = 0;
  steerd_client *c = open_client(a, &cb, &code);
  if (c == NULL)
    return code;
  const proto_welcome *w = steerd_client_welcome(c);
  fprintf(stderr, "steerd-client: client %lu, tick %lu Hz, snapshots %lu Hz (%s), world [%g,%g]..[%g,%g]",
          (unsigned long)w->client_id, (unsigned long)w->tick_rate, (unsigned long)w->snapshot_rate,
          a->delta ? "delta" : "full", (double)w->world_min.x, (double)w->world_min.y, (double)w->world_max.x,
          (double)w->world_max.y);
  if (has_view) {
    fputs(", ", stderr);
    print_view(stderr, &view);
  }
  fputc('\n', stderr);
  if (has_view && (code = send_view(c, a, &view)) != 0) {
    close_client(c);
    return code;
  }
  uint64_t end = seconds > 0.0f ? steerd_client_now_us() + (uint64_t)((double)seconds * 1e6) : UINT64_MAX;
  while (!g_stop) {
    uint64_t now = steerd_client_now_us();
    if (now >= end)
      break;
    uint64_t left_ms = (end - now + 999u) / 1000u;
    int r = steerd_client_service(c, left_ms < 200 ? (uint32_t)left_ms : 200);
    if (r < 0) {
      code = report(c, "watch", r, NULL);
      break;
    }
  }
  steerd_client_stats st;
  steerd_client_get_stats(c, &st);
  fprintf(stderr,
          "steerd-client: frames %llu complete, %llu incomplete (%llu overflow); %llu parts, %llu dropped; "
          "%llu events; %llu bad packets\n",
          (unsigned long long)st.frames_complete, (unsigned long long)st.frames_incomplete,
          (unsigned long long)st.frames_overflow, (unsigned long long)st.snapshot_parts,
          (unsigned long long)st.parts_dropped, (unsigned long long)st.events,
          (unsigned long long)st.bad_packets);
  if (a->delta)
    print_delta_stats(c);
  if (code == 0)
    steerd_client_disconnect(c, 500);
  steerd_client_destroy(c);
  return code;
}

/* ---- Bots ------------------------------------------------------------------ */

typedef struct bot {
  steerd_client *c;
  int index;
  int lost; /* connect failed or the server dropped us */
  uint64_t rng;
  uint64_t next_action_us;
  uint32_t n_agents;
  steer_id agents[BOT_MAX_AGENTS];
  uint8_t models[BOT_MAX_AGENTS];
  uint32_t n_pending;
  uint32_t pending_id[BOT_PENDING];
  uint8_t pending_model[BOT_PENDING];
  uint64_t sent;
  uint32_t tries;                               /* connection attempts (BOT_TRIES at most) */
  uint64_t errors_by_code[PROTO_ERR_COUNT + 1]; /* last slot: codes out of range */
  vec2 lo, hi;                                  /* m, where to put points */
} bot;

static uint64_t g_errors_printed;

static vec2 bot_point(bot *b) { return steerd_rand_point(&b->rng, b->lo, b->hi); }

/* Reports the bot's failure (the first few; a full server fails many alike). */
static void bot_lost(bot *b, const char *what, int r) {
  static int printed;
  b->lost = 1;
  if (printed++ < 10) {
    char buf[64];
    snprintf(buf, sizeof buf, "bot %d: %s", b->index, what);
    report(b->c, buf, r, NULL);
  }
}

/* Connection attempts per bot: a busy server (many bots at once, or an
 * unoptimised build) may let a handshake time out that the next one makes. */
#define BOT_TRIES 3

static void bot_on_reply(void *user, const proto_server_msg *m);

/* Starts (or starts again) bot b's connection: 0, or the client's error. */
static int bot_connect(bot *b, const args *a) {
  char name[32];
  snprintf(name, sizeof name, "%s-bot-%d", strlen(a->name) > 20 ? "steerd" : a->name, b->index);
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = name;
  cfg.token = a->token;
  cfg.connect_timeout_ms = a->timeout_ms;
  cfg.snapshots = a->delta ? PROTO_SNAPSHOTS_DELTA : PROTO_SNAPSHOTS_FULL;
  cfg.callbacks.on_reply = bot_on_reply;
  cfg.user = b;
  steerd_client_destroy(b->c);
  b->tries++;
  b->c = steerd_client_create(&cfg);
  return b->c != NULL ? steerd_client_connect_start(b->c, a->host, a->port) : STEERD_CLIENT_ENOMEM;
}

static void bot_on_reply(void *user, const proto_server_msg *m) {
  bot *b = user;
  if (m->type == PROTO_MSG_ERROR) {
    uint32_t code = m->error.code < PROTO_ERR_COUNT ? m->error.code : PROTO_ERR_COUNT;
    b->errors_by_code[code]++;
    if (g_errors_printed++ < 10) {
      fprintf(stderr, "bot %d: request %lu: ", b->index, (unsigned long)m->error.request_id);
      print_server_error(&m->error);
    }
    for (uint32_t i = 0; i < b->n_pending; i++)
      if (b->pending_id[i] == m->error.request_id)
        b->pending_id[i] = b->pending_id[--b->n_pending];
    return;
  }
  if (m->ack.command != PROTO_MSG_SPAWN)
    return;
  for (uint32_t i = 0; i < b->n_pending; i++) {
    if (b->pending_id[i] != m->ack.request_id)
      continue;
    if (b->n_agents < BOT_MAX_AGENTS) {
      b->agents[b->n_agents] = m->ack.agent;
      b->models[b->n_agents] = b->pending_model[i];
      b->n_agents++;
    }
    b->n_pending--;
    b->pending_id[i] = b->pending_id[b->n_pending];
    b->pending_model[i] = b->pending_model[b->n_pending];
    return;
  }
}

/* A behaviour for the bot's agent in slot self (UINT32_MAX: a spawn). The bot's
 * own agents are alive at the server when the command arrives: despawns go
 * down the same ordered channel. */
static void bot_behaviour(bot *b, uint32_t self, uint8_t model, proto_behaviour *out) {
  steerd_rand_behaviour(&b->rng, b->lo, b->hi, b->agents, b->n_agents, self, model, out);
}

static void bot_act(bot *b) {
  static proto_command cmd; /* one bot acts at a time; too large for the stack */
  memset(&cmd, 0, sizeof cmd);
  uint32_t id;
  if (b->n_agents + b->n_pending < BOT_AGENTS) {
    if (b->n_pending >= BOT_PENDING)
      return;
    cmd.type = PROTO_MSG_SPAWN;
    cmd.spawn.model = (uint8_t)steerd_rand_below(&b->rng, STEER_MODEL_COUNT);
    cmd.spawn.position = bot_point(b);
    bot_behaviour(b, UINT32_MAX, cmd.spawn.model, &cmd.spawn.behaviour);
    if (cmd.spawn.behaviour.present & PROTO_BHV_TARGET_AGENT) {
      cmd.spawn.behaviour.kind = STEER_BEHAVIOUR_WANDER; /* spawns get no agent targets */
      cmd.spawn.behaviour.present = 0;
    }
    cmd.spawn.present = PROTO_SPAWN_BEHAVIOUR;
    if (steerd_client_send(b->c, &cmd, &id) == 0) {
      b->sent++;
      b->pending_id[b->n_pending] = id;
      b->pending_model[b->n_pending] = cmd.spawn.model;
      b->n_pending++;
    }
    return;
  }
  if (b->n_agents == 0)
    return;
  uint32_t slot = steerd_rand_below(&b->rng, b->n_agents);
  steer_id agent = b->agents[slot];
  uint8_t model = b->models[slot];
  uint32_t pick = steerd_rand_below(&b->rng, 10);
  if (pick < 4) {
    cmd.type = PROTO_MSG_SET_BEHAVIOUR;
    cmd.set_behaviour.agent = agent;
    bot_behaviour(b, slot, model, &cmd.set_behaviour.behaviour);
  } else if (pick < 6) {
    cmd.type = PROTO_MSG_SET_PATH;
    cmd.set_path.agent = agent;
    steerd_rand_path(&b->rng, b->lo, b->hi, 6, model, &cmd.set_path.path);
  } else if (pick == 6) {
    cmd.type = PROTO_MSG_STOP;
    cmd.stop.agent = agent;
  } else if (pick == 7) {
    cmd.type = PROTO_MSG_QUERY;
    cmd.query.agent = agent;
  } else if (pick == 8) {
    cmd.type = PROTO_MSG_PING;
  } else {
    cmd.type = PROTO_MSG_DESPAWN;
    cmd.despawn.agent = agent;
    /* Forget it now, so nothing later targets it; a new one spawns next turn. */
    b->n_agents--;
    b->agents[slot] = b->agents[b->n_agents];
    b->models[slot] = b->models[b->n_agents];
  }
  if (steerd_client_send(b->c, &cmd, &id) == 0)
    b->sent++;
}

/* The bots leave the world as they found it: each despawns the agents it still owns (anonymous
 * owners never come back for them, so under --orphan-policy keep they would stay for good),
 * spawns still in flight included, and waits up to timeout_ms for every answer. */
static void bots_tidy(bot *bots, uint32_t n, uint32_t timeout_ms) {
  static proto_command cmd;
  uint64_t end = steerd_client_now_us() + (uint64_t)timeout_ms * 1000u;
  uint64_t despawned = 0;
  uint32_t waiting = 0;
  for (;;) {
    waiting = 0;
    for (uint32_t i = 0; i < n; i++) {
      bot *b = &bots[i];
      if (b->lost)
        continue;
      while (b->n_agents > 0) {
        memset(&cmd, 0, sizeof cmd);
        cmd.type = PROTO_MSG_DESPAWN;
        cmd.despawn.agent = b->agents[--b->n_agents];
        uint32_t id;
        if (steerd_client_send(b->c, &cmd, &id) == 0) {
          b->sent++;
          despawned++;
        }
      }
      if (steerd_client_service(b->c, 0) < 0) {
        b->lost = 1;
        continue;
      }
      steerd_client_stats st;
      memset(&st, 0, sizeof st);
      steerd_client_get_stats(b->c, &st);
      if (b->n_pending > 0 || b->n_agents > 0 || st.acks + st.errors < b->sent)
        waiting++;
    }
    if (waiting == 0 || g_stop || steerd_client_now_us() >= end)
      break;
    poll(NULL, 0, 5);
  }
  fprintf(stderr, "steerd-client bots: despawned the bots' %llu agents on the way out",
          (unsigned long long)despawned);
  if (waiting > 0)
    fprintf(stderr, " (%u bots still waited for answers after %u ms)", (unsigned)waiting,
            (unsigned)timeout_ms);
  fputc('\n', stderr);
}

static int cmd_bots(const args *a) {
  static const char *const allowed[] = {"seconds", "seed", "rate", NULL};
  if (check_opts(a, allowed, 1, 1) != 0)
    return EXIT_USAGE;
  uint32_t n;
  if (parse_u32(a->pos[0], &n) != 0 || n == 0 || n > BOT_MAX)
    return bad_value(a, "bot count (1..256)", a->pos[0]);
  float seconds = 10.0f, rate = 4.0f;
  uint64_t seed = 1;
  const char *ss = opt_get(a, "seconds"), *ks = opt_get(a, "seed"), *rs = opt_get(a, "rate");
  if (ss != NULL && (parse_float(ss, &seconds) != 0 || !(seconds > 0.0f) || seconds > 86400.0f))
    return bad_value(a, "--seconds", ss);
  if (ks != NULL && parse_u64(ks, UINT64_MAX, &seed) != 0)
    return bad_value(a, "--seed", ks);
  if (rs != NULL && (parse_float(rs, &rate) != 0 || !(rate > 0.0f) || rate > 1000.0f))
    return bad_value(a, "--rate", rs);

  bot *bots = calloc(n, sizeof *bots);
  struct pollfd *fds = calloc(n, sizeof *fds);
  if (bots == NULL || fds == NULL) {
    free(bots);
    free(fds);
    return EXIT_CONNECTION;
  }
  uint64_t period_us = (uint64_t)(1e6 / (double)rate);
  int lost = 0;
  uint64_t t0 = steerd_client_now_us();
  /* Connect every bot at once: a blocking connect per bot would leave the
   * connected ones unserviced long enough for the server to time them out. */
  for (uint32_t i = 0; i < n; i++) {
    bot *b = &bots[i];
    b->index = (int)i;
    b->rng = seed * 0x100000001B3ull + i;
    int r = bot_connect(b, a);
    if (r < 0) {
      bot_lost(b, "connect", r);
      lost++;
    }
  }
  for (int connecting = 1; connecting && !g_stop;) {
    connecting = 0;
    nfds_t nfds = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (bots[i].lost || steerd_client_get_state(bots[i].c) != STEERD_CLIENT_CONNECTING)
        continue;
      fds[nfds].fd = steerd_client_fd(bots[i].c);
      fds[nfds].events = POLLIN;
      fds[nfds].revents = 0;
      nfds++;
    }
    if (nfds == 0)
      break;
    if (poll(fds, nfds, 20) < 0 && errno != EINTR)
      break;
    for (uint32_t i = 0; i < n; i++) {
      bot *b = &bots[i];
      if (b->lost || steerd_client_get_state(b->c) != STEERD_CLIENT_CONNECTING)
        continue;
      int r = steerd_client_service(b->c, 0);
      if (r == STEERD_CLIENT_ETIMEDOUT && b->tries < BOT_TRIES)
        r = bot_connect(b, a); /* once more */
      if (r < 0) {
        bot_lost(b, "connect", r);
        lost++;
      } else if (steerd_client_get_state(b->c) == STEERD_CLIENT_CONNECTING) {
        connecting = 1;
      }
    }
  }
  for (uint32_t i = 0; i < n; i++) {
    bot *b = &bots[i];
    if (b->lost)
      continue;
    const proto_welcome *w = steerd_client_welcome(b->c);
    if (w == NULL) { /* interrupted while connecting */
      b->lost = 1;
      lost++;
      continue;
    }
    /* Keep points 10% inside the world bounds. */
    float mx = (w->world_max.x - w->world_min.x) * 0.1f, my = (w->world_max.y - w->world_min.y) * 0.1f;
    b->lo = (vec2){w->world_min.x + mx, w->world_min.y + my};
    b->hi = (vec2){w->world_max.x - mx, w->world_max.y - my};
    /* Spread the bots' first actions over one period. */
    b->next_action_us = steerd_client_now_us() + steerd_rand_below(&b->rng, (uint32_t)period_us + 1u);
  }

  uint64_t start = steerd_client_now_us();
  double connect_s = (double)(start - t0) / 1e6;
  uint64_t end = start + (uint64_t)((double)seconds * 1e6);
  for (uint64_t now = start; now < end && !g_stop; now = steerd_client_now_us()) {
    uint64_t wake = end;
    nfds_t nfds = 0;
    for (uint32_t i = 0; i < n; i++) {
      bot *b = &bots[i];
      if (b->lost)
        continue;
      if (now >= b->next_action_us) {
        bot_act(b);
        /* Jitter 0.5..1.5 periods so the bots do not fire in lockstep. */
        b->next_action_us = now + period_us / 2u + steerd_rand_below(&b->rng, (uint32_t)period_us + 1u);
      }
      if (b->next_action_us < wake)
        wake = b->next_action_us;
      fds[nfds].fd = steerd_client_fd(b->c);
      fds[nfds].events = POLLIN;
      fds[nfds].revents = 0;
      nfds++;
    }
    if (nfds == 0)
      break;
    /* ENet needs servicing for resends and acks even when nothing arrives:
     * wake at least every 20 ms. */
    now = steerd_client_now_us();
    uint64_t wait_ms = wake > now ? (wake - now + 999u) / 1000u : 0;
    if (wait_ms > 20)
      wait_ms = 20;
    if (poll(fds, nfds, (int)wait_ms) < 0 && errno != EINTR)
      break;
    for (uint32_t i = 0; i < n; i++) {
      bot *b = &bots[i];
      if (b->lost)
        continue;
      int r = steerd_client_service(b->c, 0);
      if (r < 0) {
        bot_lost(b, "service", r);
        lost++;
      }
    }
  }
  double elapsed = (double)(steerd_client_now_us() - start) / 1e6;

  /* Let the last replies arrive before counting. */
  for (uint32_t i = 0; i < n; i++)
    if (!bots[i].lost)
      steerd_client_service(bots[i].c, 0);

  printf("%-5s %8s %8s %8s %8s %10s %8s %12s\n", "bot", "sent", "acks", "errors", "frames", "incomplete",
         "pings", "mean_rtt_ms");
  uint64_t tot_sent = 0, tot_acks = 0, tot_err = 0, tot_frames = 0, tot_inc = 0, tot_pings = 0, tot_rtt = 0;
  uint64_t by_code[PROTO_ERR_COUNT + 1] = {0};
  for (uint32_t i = 0; i < n; i++) {
    bot *b = &bots[i];
    steerd_client_stats st;
    memset(&st, 0, sizeof st);
    steerd_client_get_stats(b->c, &st);
    double mean = st.pings ? (double)st.rtt_sum_us / (double)st.pings / 1000.0 : 0.0;
    printf("%-5u %8llu %8llu %8llu %8llu %10llu %8llu %12.3f%s\n", (unsigned)i, (unsigned long long)b->sent,
           (unsigned long long)st.acks, (unsigned long long)st.errors, (unsigned long long)st.frames_complete,
           (unsigned long long)st.frames_incomplete, (unsigned long long)st.pings, mean,
           b->lost ? "  LOST" : "");
    tot_sent += b->sent;
    tot_acks += st.acks;
    tot_err += st.errors;
    tot_frames += st.frames_complete;
    tot_inc += st.frames_incomplete;
    tot_pings += st.pings;
    tot_rtt += st.rtt_sum_us;
    for (uint32_t k = 0; k <= PROTO_ERR_COUNT; k++)
      by_code[k] += b->errors_by_code[k];
  }
  printf("%-5s %8llu %8llu %8llu %8llu %10llu %8llu %12.3f\n", "all", (unsigned long long)tot_sent,
         (unsigned long long)tot_acks, (unsigned long long)tot_err, (unsigned long long)tot_frames,
         (unsigned long long)tot_inc, (unsigned long long)tot_pings,
         tot_pings ? (double)tot_rtt / (double)tot_pings / 1000.0 : 0.0);
  printf("%u bots (connected in %.3f s), %.1f s, %.1f commands/s, %u lost\n", (unsigned)n, connect_s, elapsed,
         elapsed > 0 ? (double)tot_sent / elapsed : 0.0, (unsigned)lost);
  for (uint32_t k = 0; k <= PROTO_ERR_COUNT; k++)
    if (by_code[k] != 0)
      fprintf(stderr, "steerd-client: %llu x %s\n", (unsigned long long)by_code[k],
              k < PROTO_ERR_COUNT ? proto_error_name((int)k) : "UNKNOWN");

  bots_tidy(bots, n, a->timeout_ms);

  /* destroy disconnects at once (no wait for the server's confirmation): a
   * polite disconnect per bot would take up to its timeout each. */
  for (uint32_t i = 0; i < n; i++)
    steerd_client_destroy(bots[i].c);
  free(bots);
  free(fds);
  if (lost > 0)
    return EXIT_CONNECTION;
  return tot_err > 0 ? EXIT_REPLY_ERROR : 0;
}

/* ---- Shell and main ------------------------------------------------------ */

static int dispatch(const args *a);

/* Splits a line into words in place; "double quotes" group words (for --points). */
static int split_line(char *line, char **words, int max) {
  int n = 0;
  char *p = line;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
      p++;
    if (*p == '\0' || *p == '#')
      return n;
    if (n >= max)
      return -1;
    char *out = p;
    words[n++] = p;
    int quoted = 0;
    while (*p != '\0' && (quoted || (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r'))) {
      if (*p == '"')
        quoted = !quoted;
      else
        *out++ = *p;
      p++;
    }
    if (quoted)
      return -1;
    int end = *p == '\0';
    *out = '\0';
    if (end)
      return n;
    p++;
  }
}

/* Commands from stdin, one a line, over one connection. */
static int cmd_shell(const args *a) {
  static const char *const allowed[] = {NULL};
  if (check_opts(a, allowed, 0, 0) != 0)
    return EXIT_USAGE;
  int code = 0;
  steerd_client_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.on_event = goto_on_event; /* goto --wait in the session */
  g_session = open_client(a, &cb, &code);
  if (g_session == NULL)
    return code;
  int tty = isatty(STDIN_FILENO);
  fprintf(stderr, "steerd-client: connected as client %lu; commands from stdin%s\n",
          (unsigned long)steerd_client_welcome(g_session)->client_id,
          tty ? " (help lists them, quit leaves)" : "");
  char line[4096];
  for (;;) {
    if (tty) {
      fputs("steerd> ", stderr);
      fflush(stderr);
    }
    if (g_stop || fgets(line, sizeof line, stdin) == NULL)
      break;
    char *words[64];
    words[0] = "steerd-client";
    int n = split_line(line, words + 1, 63);
    if (n == 0)
      continue;
    if (strcmp(words[1], "quit") == 0 || strcmp(words[1], "exit") == 0)
      break;
    if (strcmp(words[1], "help") == 0) {
      const cmd_help *h = n > 1 ? find_command(words[2]) : NULL;
      if (h != NULL) {
        fputs(h->text, stdout);
      } else {
        if (n > 1)
          printf("no command '%s'; ", words[2]);
        printf("commands (watch, bots and shell are not available here):\n");
        for (size_t i = 0; i < COMMAND_COUNT; i++)
          if (strcmp(commands[i].name, "watch") != 0 && strcmp(commands[i].name, "bots") != 0 &&
              strcmp(commands[i].name, "shell") != 0)
            fputs(commands[i].text, stdout);
        printf("  help [COMMAND]   this text, or one command's\n  quit, exit       leave\n");
      }
      fflush(stdout);
      continue;
    }
    args sub;
    if (n < 0 || parse_args(n + 1, words, &sub) != 0) {
      fprintf(stderr, "steerd-client shell: cannot parse the line\n");
      code = code != 0 ? code : EXIT_USAGE;
      continue;
    }
    if (strcmp(sub.cmd, "watch") == 0 || strcmp(sub.cmd, "bots") == 0 || strcmp(sub.cmd, "shell") == 0 ||
        strcmp(sub.cmd, "list") == 0) {
      fprintf(stderr, "steerd-client shell: %s is not available in a shell\n", sub.cmd);
      code = code != 0 ? code : EXIT_USAGE;
      continue;
    }
    sub.timeout_ms = a->timeout_ms;
    int r = dispatch(&sub);
    fflush(stdout);
    if (r != 0 && (code == 0 || r == EXIT_CONNECTION))
      code = r;
    if (steerd_client_get_state(g_session) != STEERD_CLIENT_WELCOMED)
      break;                             /* the connection is gone */
    steerd_client_service(g_session, 0); /* drop what piled up meanwhile */
  }
  steerd_client *c = g_session;
  g_session = NULL;
  if (steerd_client_get_state(c) == STEERD_CLIENT_WELCOMED)
    steerd_client_disconnect(c, 500);
  steerd_client_destroy(c);
  return code;
}

int main(int argc, char **argv) {
  args a;
  if (parse_args(argc, argv, &a) != 0)
    return EXIT_USAGE;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  if (strcmp(a.cmd, "shell") == 0)
    return cmd_shell(&a);
  return dispatch(&a);
}

static int dispatch(const args *ap) {
  const args a = *ap;
  if (strcmp(a.cmd, "watch") == 0)
    return cmd_watch(&a);
  if (strcmp(a.cmd, "spawn") == 0)
    return cmd_spawn(&a);
  if (strcmp(a.cmd, "target") == 0)
    return cmd_target(&a);
  if (strcmp(a.cmd, "path") == 0)
    return cmd_path(&a);
  if (strcmp(a.cmd, "goto") == 0)
    return cmd_goto(&a);
  if (strcmp(a.cmd, "despawn") == 0)
    return cmd_agent(&a, PROTO_MSG_DESPAWN);
  if (strcmp(a.cmd, "stop") == 0)
    return cmd_agent(&a, PROTO_MSG_STOP);
  if (strcmp(a.cmd, "query") == 0)
    return cmd_agent(&a, PROTO_MSG_QUERY);
  if (strcmp(a.cmd, "list") == 0)
    return cmd_list(&a);
  if (strcmp(a.cmd, "params") == 0)
    return cmd_params(&a);
  if (strcmp(a.cmd, "ping") == 0)
    return cmd_ping(&a);
  if (strcmp(a.cmd, "map") == 0)
    return cmd_map(&a);
  if (strcmp(a.cmd, "add-obstacle") == 0)
    return cmd_add_obstacle(&a);
  if (strcmp(a.cmd, "remove-obstacle") == 0)
    return cmd_remove_obstacle(&a);
  if (strcmp(a.cmd, "bots") == 0)
    return cmd_bots(&a);
  if (strcmp(a.cmd, "help") == 0) {
    const cmd_help *h = a.npos > 0 ? find_command(a.pos[0]) : NULL;
    if (h != NULL)
      usage_command(stdout, h);
    else
      usage(stdout);
    return 0;
  }
  fprintf(stderr, "steerd-client: unknown command '%s' (see --help)\n", a.cmd);
  return EXIT_USAGE;
}

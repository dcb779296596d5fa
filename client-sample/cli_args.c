/* cli_args.c: steerd-client's help (one section per command) and the parsing
 * of its command line and options. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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

const cmd_help commands[] = {
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
     "      wall_lookahead wall_margin stuck_time stuck_reaction (report|nudge|give_up) arrival\n"
     "      (point|settle|pass). Keys not named keep their values.\n"
     "      e.g. steerd-client params 4194305 --set "
     "\"max_speed=2,avoid_weight=1\"\n"},
    {"list",
     {"limit", NULL},
     "  list [--limit N]\n"
     "      The agents of one snapshot, by id: behaviour, owner (0: the server's) and position, one\n"
     "      QUERY each, for at most N of them (100, within the server's --rate-burst); the count\n"
     "      goes to stderr.  e.g. steerd-client list --limit 20\n"},
    {"top",
     {"seconds", "interval", NULL},
     "  top [--seconds S] [--interval I]\n"
     "      A live summary every I seconds (1) until S seconds pass (0: until Ctrl-C): the tick,\n"
     "      the agents moving and at rest with their speeds, snapshots per second and their interval\n"
     "      (p50, max), bytes received per second, the PING round trip, events per second by kind,\n"
     "      and the last 5 agents STUCK or UNREACHABLE. On a terminal it redraws in place.\n"
     "      e.g. steerd-client top --seconds 10\n"},
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
     "      (10), then a summary per bot and the timings' p50, p90, p99 and max: command to\n"
     "      reply (ACK or ERROR) and the interval between snapshot frames; the bots despawn\n"
     "      their agents before they leave.\n"
     "      A bot whose connection times out (--timeout) tries twice more.\n"
     "      e.g. steerd-client bots 20 --seconds 30 --seed 7\n"},
};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])
const size_t command_count = COMMAND_COUNT;

static const char usage_tail[] =
    "\n"
    "Exit status: 0 ok, 1 the server replied ERROR, 2 usage, 3 connection failed or lost.\n";

const cmd_help *find_command(const char *name) {
  for (size_t i = 0; name != NULL && i < COMMAND_COUNT; i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

void usage(FILE *f) {
  fputs(usage_head, f);
  for (size_t i = 0; i < COMMAND_COUNT; i++)
    fputs(commands[i].text, f);
  fputs(usage_tail, f);
}

/* One command's help: its section, and where the global options are. */
void usage_command(FILE *f, const cmd_help *h) {
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

int parse_u64(const char *s, uint64_t max, uint64_t *out) {
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

int parse_u32(const char *s, uint32_t *out) {
  uint64_t v;
  if (parse_u64(s, UINT32_MAX, &v) != 0)
    return -1;
  *out = (uint32_t)v;
  return 0;
}

int parse_float(const char *s, float *out) {
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
int parse_xy(const char *s, proto_vec2 *out) {
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
int parse_points(const char *s, proto_vec2 *pts, uint32_t cap, uint32_t *count) {
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
int find_name(const char *(*name_of)(uint32_t), uint32_t count, const char *s) {
  for (uint32_t i = 0; i < count; i++) {
    const char *n = name_of(i);
    if (n != NULL && strcmp(n, s) == 0)
      return (int)i;
  }
  return -1;
}

static const char global_options[] = "--host, --port, --name, --token, --timeout, --delta";

int parse_args(int argc, char **argv, args *a) {
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

const char *opt_get(const args *a, const char *key) {
  for (int i = a->nopts - 1; i >= 0; i--)
    if (strcmp(a->opts[i].key, key) == 0)
      return a->opts[i].value;
  return NULL;
}

/* Refuses options the subcommand does not know (a typo must not be ignored). */
int check_opts(const args *a, const char *const *allowed, int npos_min, int npos_max) {
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
    return name_list(proto_model_name, PROTO_MODEL_COUNT, -1, buf, cap);
  if (strcmp(what, "--behaviour") == 0)
    return name_list(proto_behaviour_name, PROTO_BEHAVIOUR_COUNT, PROTO_BEHAVIOUR_FOLLOW_PATH, buf, cap);
  if (strcmp(what, "--mode") == 0)
    return name_list(proto_path_mode_name, PROTO_PATH_MODE_COUNT, -1, buf, cap);
  if (strcmp(what, "--cornering") == 0)
    return name_list(proto_cornering_name, PROTO_CORNER_COUNT, -1, buf, cap);
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

int opt_float(const args *a, const char *key, float lo, float hi, const char *what, float *out) {
  const char *v = opt_get(a, key);
  if (v != NULL && (parse_float(v, out) != 0 || !(*out >= lo && *out <= hi)))
    return bad_value(a, what, v);
  return 0;
}

int bad_value(const args *a, const char *what, const char *v) {
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

/* soak.c: soak and abuse benchmark of the real steerd binary on 127.0.0.1.
 *
 * Starts the server (with a secret file, so every client carries a token made
 * here with steerd_auth_issue; --anonymous for none) and runs, in this one
 * process, over one poll() set:
 *
 *   CLIENTS - 3 bots     each spawns its share of AGENTS, then issues mixed
 *                        valid commands at --rate Hz (set_behaviour, set_path,
 *                        set_params, stop, query, ping, view, despawn and
 *                        respawn); delta snapshots with a small VIEW (interest
 *                        management), or --bot-snapshots full;
 *   one garbage peer     raw ENet: random bytes, truncated msgpack, wrong types,
 *                        huge arrays, channel-1 junk, forged and expired tokens;
 *                        reconnects whenever the server drops it;
 *   one flooder          valid commands at --flood-rate, far above the limit;
 *   one observer         well behaved (delta snapshots of the whole world, or
 *                        --observer-snapshots full): complete frames per second.
 *
 * Every second: the server's VmRSS and CPU time, the observer's frames. At the
 * end: SIGTERM (the server must exit 0), its stats line, and a table. Exit 1 on
 * a crash, a nonzero exit, or an observer median below 90% of the snapshot rate.
 *
 * usage: soak [--seconds S] [--clients N] [--agents N] [options]  (--help) */
#include <enet/enet.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "auth.h"
#include "client.h"
#include "randcmd.h"
#include "steerd_proc.h"

#define ERR_SLOTS        (PROTO_ERR_COUNT + 1) /* the last: codes we do not know */
#define BOT_PENDING      16                    /* spawns in flight per bot */
#define BOT_BUCKET_RATE  40.0                  /* bots keep under the server's 50/s */
#define BOT_BUCKET_BURST 80.0
#define GARBAGE_BUF      24576
#define MAX_SECONDS      86400

/* ---- Options ----------------------------------------------------------- */

typedef struct options {
  const char *binary;
  const char *csv; /* per-second samples */
  uint32_t seconds, clients, agents;
  double rate;         /* commands per second per bot */
  double flood_rate;   /* commands per second of the flooder */
  double garbage_rate; /* garbage packets per second */
  double spawn_rate;   /* bot spawns per second, all bots together, while spawning */
  uint32_t tick_rate, snapshot_rate;
  uint32_t view_radius; /* m, bots' views at most this */
  int anonymous;
  int bot_full, observer_full; /* full snapshots instead of delta */
  uint64_t seed;
  uint32_t client_timeout_ms;
} options;

static void usage(FILE *f) {
  fputs("usage: soak [--seconds S] [--clients N] [--agents N] [options]\n"
        "\n"
        "Soak and abuse benchmark: the real steerd on 127.0.0.1, N-3 bots sharing AGENTS agents and\n"
        "issuing mixed valid commands, a garbage peer, a flooder and a well-behaved observer.\n"
        "\n"
        "  --seconds S              soak duration after spawning (600)\n"
        "  --clients N              clients in all, >= 4 (200)\n"
        "  --agents N               agents spawned by the bots (10000)\n"
        "  --rate HZ                commands per second per bot (3)\n"
        "  --flood-rate HZ          commands per second of the flooder (500)\n"
        "  --garbage-rate HZ        garbage packets per second (60)\n"
        "  --spawn-rate HZ          bot spawns per second, all together, before the soak (500)\n"
        "  --tick-rate HZ           server tick rate (30)\n"
        "  --snapshot-rate HZ       server snapshot rate (20)\n"
        "  --view-radius M          largest bot VIEW radius in metres (60)\n"
        "  --bot-snapshots full|delta       what bots receive (delta, with a VIEW)\n"
        "  --observer-snapshots full|delta  what the observer receives (delta, whole world)\n"
        "  --anonymous              no secret, anonymous clients (default: a secret and tokens)\n"
        "  --client-timeout MS      the server's --client-timeout (5000)\n"
        "  --seed K                 random seed (1)\n"
        "  --csv FILE               per-second samples: t_s,rss_kb,server_cpu_s,observer_frames,bot_agents\n"
        "  --binary PATH            the server binary (" STEERD_BINARY ")\n"
        "\n"
        "Exit status: 0 pass; 1 the server crashed, hung, exited nonzero, or the observer's median\n"
        "snapshot rate fell below 90% of the configured rate; 2 usage or setup error.\n",
        f);
}

static int parse_num(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi))
    return -1;
  *out = v;
  return 0;
}

static int parse_args(int argc, char **argv, options *o) {
  memset(o, 0, sizeof *o);
  o->binary = STEERD_BINARY;
  o->seconds = 600;
  o->clients = 200;
  o->agents = 10000;
  o->rate = 3.0;
  o->flood_rate = 500.0;
  o->garbage_rate = 60.0;
  o->spawn_rate = 500.0;
  o->tick_rate = 30;
  o->snapshot_rate = 20;
  o->view_radius = 60;
  o->seed = 1;
  o->client_timeout_ms = 5000;
  for (int i = 1; i < argc; i++) {
    const char *k = argv[i];
    if (!strcmp(k, "-h") || !strcmp(k, "--help")) {
      usage(stdout);
      exit(0);
    }
    if (!strcmp(k, "--anonymous")) {
      o->anonymous = 1;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "soak: %s needs a value (--help)\n", k);
      return -1;
    }
    const char *v = argv[++i];
    double d = 0;
    int bad = 0;
    if (!strcmp(k, "--binary"))
      o->binary = v;
    else if (!strcmp(k, "--csv"))
      o->csv = v;
    else if (!strcmp(k, "--seconds"))
      bad = parse_num(v, 1, MAX_SECONDS, &d) || !(o->seconds = (uint32_t)d);
    else if (!strcmp(k, "--clients"))
      bad = parse_num(v, 4, 4000, &d) || !(o->clients = (uint32_t)d);
    else if (!strcmp(k, "--agents"))
      bad = parse_num(v, 1, 1000000, &d) || !(o->agents = (uint32_t)d);
    else if (!strcmp(k, "--rate"))
      bad = parse_num(v, 0.01, 40, &o->rate);
    else if (!strcmp(k, "--flood-rate"))
      bad = parse_num(v, 1, 100000, &o->flood_rate);
    else if (!strcmp(k, "--spawn-rate"))
      bad = parse_num(v, 1, 1e6, &o->spawn_rate);
    else if (!strcmp(k, "--garbage-rate"))
      bad = parse_num(v, 0, 100000, &o->garbage_rate);
    else if (!strcmp(k, "--tick-rate"))
      bad = parse_num(v, 1, 1000, &d) || !(o->tick_rate = (uint32_t)d);
    else if (!strcmp(k, "--snapshot-rate"))
      bad = parse_num(v, 1, 1000, &d) || !(o->snapshot_rate = (uint32_t)d);
    else if (!strcmp(k, "--view-radius"))
      bad = parse_num(v, 1, 100000, &d) || !(o->view_radius = (uint32_t)d);
    else if (!strcmp(k, "--client-timeout"))
      bad = parse_num(v, 100, 600000, &d) || !(o->client_timeout_ms = (uint32_t)d);
    else if (!strcmp(k, "--seed"))
      bad = parse_num(v, 0, 1e15, &d) || ((o->seed = (uint64_t)d), 0);
    else if (!strcmp(k, "--bot-snapshots") || !strcmp(k, "--observer-snapshots")) {
      int full = !strcmp(v, "full");
      bad = !full && strcmp(v, "delta") != 0;
      if (k[2] == 'b')
        o->bot_full = full;
      else
        o->observer_full = full;
    } else {
      fprintf(stderr, "soak: unknown option %s (--help)\n", k);
      return -1;
    }
    if (bad) {
      fprintf(stderr, "soak: bad value for %s: %s\n", k, v);
      return -1;
    }
  }
  if (o->snapshot_rate > o->tick_rate) {
    fprintf(stderr, "soak: the snapshot rate must not exceed the tick rate\n");
    return -1;
  }
  return 0;
}

/* ---- Small helpers ------------------------------------------------------ */

static uint64_t now_us(void) { return steerd_client_now_us(); }

static long rss_kb(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) {
      kb = atol(line + 6);
      break;
    }
  fclose(f);
  return kb;
}

static double self_cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
         (double)ru.ru_stime.tv_usec / 1e6;
}

/* ---- Tallies of commands and replies ------------------------------------ */

typedef struct tally {
  uint64_t sent, acks, errors;
  uint64_t by_code[ERR_SLOTS];
  uint64_t send_failed; /* steerd_client_send refused locally */
} tally;

static void tally_reply(tally *t, const proto_server_msg *m) {
  if (m->type == PROTO_MSG_ACK) {
    t->acks++;
  } else if (m->type == PROTO_MSG_ERROR) {
    t->errors++;
    t->by_code[m->error.code < PROTO_ERR_COUNT ? m->error.code : PROTO_ERR_COUNT]++;
  }
}

/* ---- Actors on the client library --------------------------------------- */

typedef enum actor_kind { ACTOR_BOT, ACTOR_FLOODER, ACTOR_OBSERVER } actor_kind;

typedef struct actor {
  actor_kind kind;
  uint32_t index;
  char name[40];
  char token[STEERD_AUTH_MAX_TOKEN_BYTES + 1];
  steerd_client *c;
  int welcomed_seen; /* WELCOME handled (view sent, bounds known) */
  int down;          /* disconnected; reconnect at retry_us */
  uint64_t retry_us;
  uint32_t reconnects;
  uint32_t last_reason;
  uint64_t rng;
  tally *t;
  proto_vec2 lo, hi; /* points stay inside */
  /* Agents (bots, flooder). */
  proto_id *agents;
  uint8_t *models;
  uint32_t n_agents, cap_agents, target;
  uint32_t pending_id[BOT_PENDING];
  uint8_t pending_model[BOT_PENDING];
  uint32_t n_pending;
  uint64_t next_action_us;
  double bucket; /* client-side token bucket (bots) */
  uint64_t bucket_us;
  /* Observer. */
  uint64_t frames_this_second, frames_total, frame_agents_last, frame_agents_min;
  /* Client stats of previous connections, summed. */
  steerd_client_stats prev;
} actor;

typedef struct soak {
  options o;
  steerd_proc srv;
  const char *host;
  actor *bots;
  uint32_t n_bots;
  actor flooder, observer;
  tally bot_tally, flood_tally, obs_tally;
  uint64_t bot_spawns, bot_despawns, bot_views;
  uint32_t lost_total; /* well-behaved connections (bots, observer) the server dropped */
  uint32_t lost_by_reason[PROTO_DISCONNECT_COUNT + 1];
  int soaking;        /* mixed commands phase */
  double spawn_allow; /* spawns the bots may send now (paced while spawning) */
} soak;

static soak g; /* one per process */

static void add_stats(steerd_client_stats *sum, const steerd_client_stats *s) {
  sum->frames_complete += s->frames_complete;
  sum->frames_incomplete += s->frames_incomplete;
  sum->frames_overflow += s->frames_overflow;
  sum->bad_packets += s->bad_packets;
  sum->delta_no_base += s->delta_no_base;
  sum->delta_bad += s->delta_bad;
  sum->snapshot_parts += s->snapshot_parts;
  sum->snapshot_bytes += s->snapshot_bytes;
  sum->packets_received += s->packets_received;
  sum->bytes_received += s->bytes_received;
}

static void actor_stats(const actor *a, steerd_client_stats *out) {
  *out = a->prev;
  if (a->c) {
    steerd_client_stats s;
    memset(&s, 0, sizeof s);
    steerd_client_get_stats(a->c, &s);
    add_stats(out, &s);
  }
}

static void bot_forget_pending(actor *a, uint32_t id, int ok, proto_id agent) {
  for (uint32_t i = 0; i < a->n_pending; i++) {
    if (a->pending_id[i] != id)
      continue;
    if (ok && a->n_agents < a->cap_agents) {
      a->agents[a->n_agents] = agent;
      a->models[a->n_agents] = a->pending_model[i];
      a->n_agents++;
    }
    a->n_pending--;
    a->pending_id[i] = a->pending_id[a->n_pending];
    a->pending_model[i] = a->pending_model[a->n_pending];
    return;
  }
}

static void on_reply(void *user, const proto_server_msg *m) {
  actor *a = user;
  static int shown;
  tally_reply(a->t, m);
  if (m->type == PROTO_MSG_ERROR && a->kind == ACTOR_BOT && shown++ < 5)
    fprintf(stderr, "soak: %s: ERROR %s to request %u: %s (field %s)\n", a->name,
            proto_error_name((int)m->error.code), m->error.request_id, m->error.message,
            m->error.has_field ? m->error.field : "nil");
  if (m->type == PROTO_MSG_ACK && m->ack.command == PROTO_MSG_SPAWN)
    bot_forget_pending(a, m->ack.request_id, 1, m->ack.agent);
  else if (m->type == PROTO_MSG_ERROR)
    bot_forget_pending(a, m->error.request_id, 0, 0);
}

static void on_frame(void *user, const steerd_client_frame *f) {
  actor *a = user;
  a->frames_this_second++;
  a->frames_total++;
  a->frame_agents_last = f->count;
  if (a->frames_total == 1 || f->count < a->frame_agents_min)
    a->frame_agents_min = f->count;
}

static void on_disconnect(void *user, uint32_t reason) {
  actor *a = user;
  a->last_reason = reason;
}

static int actor_connect(actor *a) {
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = a->name;
  cfg.token = a->token[0] ? a->token : NULL;
  cfg.connect_timeout_ms = 10000;
  cfg.callbacks.on_reply = on_reply;
  cfg.callbacks.on_disconnect = on_disconnect;
  cfg.user = a;
  if (a->kind == ACTOR_OBSERVER) {
    cfg.callbacks.on_snapshot_frame = on_frame;
    cfg.max_agents = g.o.agents + 2048;
    cfg.snapshots = g.o.observer_full ? PROTO_SNAPSHOTS_FULL : PROTO_SNAPSHOTS_DELTA;
  } else if (a->kind == ACTOR_BOT && !g.o.bot_full) {
    cfg.max_agents = 4096; /* a small view; more is counted as an overflow */
    cfg.snapshots = PROTO_SNAPSHOTS_DELTA;
    cfg.delta_frames = 8; /* the newest acknowledged frame is a tick or two old on loopback */
  } else {
    cfg.max_agents = g.o.agents + 2048;
    cfg.snapshots = PROTO_SNAPSHOTS_FULL;
  }
  a->c = steerd_client_create(&cfg);
  if (!a->c)
    return -1;
  a->welcomed_seen = 0;
  a->down = 0;
  a->n_pending = 0;
  return steerd_client_connect_start(a->c, g.host, g.srv.port);
}

/* The connection ended: note why, keep the counters, reconnect soon (a token
 * of the same name owns the same agents again). */
static void actor_lost(actor *a, int rc) {
  steerd_client_stats s;
  memset(&s, 0, sizeof s);
  steerd_client_get_stats(a->c, &s);
  add_stats(&a->prev, &s);
  uint32_t reason = steerd_client_disconnect_reason(a->c);
  if (!reason)
    reason = a->last_reason;
  steerd_client_destroy(a->c);
  a->c = NULL;
  a->down = 1;
  a->retry_us = now_us() + 500000;
  a->reconnects++;
  if (a->kind != ACTOR_FLOODER) {
    g.lost_total++;
    g.lost_by_reason[reason < PROTO_DISCONNECT_COUNT ? reason : PROTO_DISCONNECT_COUNT]++;
  }
  fprintf(stderr, "soak: %s lost its connection (%s, disconnect reason %u %s); reconnecting\n", a->name,
          steerd_client_error_name(rc), reason, proto_disconnect_name(reason));
}

static int actor_send(actor *a, proto_command *cmd, uint32_t *id) {
  uint32_t rid = 0;
  int rc = steerd_client_send(a->c, cmd, &rid);
  if (rc != 0) {
    a->t->send_failed++;
    return rc;
  }
  a->t->sent++;
  if (id)
    *id = rid;
  return 0;
}

static proto_vec2 rand_point(actor *a) { return steerd_rand_point(&a->rng, a->lo, a->hi); }

/* A behaviour for the actor's agent in slot self (UINT32_MAX: a spawn), with
 * separation now and then for dynamic agents. */
static void rand_behaviour(actor *a, uint32_t self, uint8_t model, proto_behaviour *out) {
  steerd_rand_behaviour(&a->rng, a->lo, a->hi, a->agents, a->n_agents, self, model, out);
  if (model == PROTO_MODEL_DYNAMIC && steerd_rand_below(&a->rng, 4) == 0) {
    out->separation_weight = steerd_rand_range(&a->rng, 0.0f, 2.0f);
    out->max_neighbours = (uint8_t)(1 + steerd_rand_below(&a->rng, 16));
    out->combine = (uint8_t)steerd_rand_below(&a->rng, PROTO_COMBINE_COUNT);
    out->present |= PROTO_BHV_SEPARATION_WEIGHT | PROTO_BHV_MAX_NEIGHBOURS | PROTO_BHV_COMBINE;
  }
}

static proto_command g_cmd; /* one command at a time; too large for the stack */

static void send_view(actor *a) {
  memset(&g_cmd, 0, sizeof g_cmd);
  g_cmd.type = PROTO_MSG_VIEW;
  g_cmd.view.radius = steerd_rand_range(&a->rng, 10.0f, (float)g.o.view_radius);
  if (a->n_agents > 0 && steerd_rand_below(&a->rng, 2) == 0) {
    g_cmd.view.kind = PROTO_VIEW_FOLLOW;
    g_cmd.view.follow = a->agents[steerd_rand_below(&a->rng, a->n_agents)];
  } else {
    g_cmd.view.kind = PROTO_VIEW_CENTRE;
    g_cmd.view.centre = rand_point(a);
  }
  if (actor_send(a, &g_cmd, NULL) == 0)
    g.bot_views++;
}

static int bucket_take(actor *a, uint64_t now) {
  a->bucket += (double)(now - a->bucket_us) / 1e6 * BOT_BUCKET_RATE;
  a->bucket_us = now;
  if (a->bucket > BOT_BUCKET_BURST)
    a->bucket = BOT_BUCKET_BURST;
  if (a->bucket < 1.0)
    return 0;
  a->bucket -= 1.0;
  return 1;
}

static void send_spawn(actor *a) {
  memset(&g_cmd, 0, sizeof g_cmd);
  g_cmd.type = PROTO_MSG_SPAWN;
  g_cmd.spawn.model = (uint8_t)steerd_rand_below(&a->rng, PROTO_MODEL_COUNT);
  g_cmd.spawn.position = rand_point(a);
  g_cmd.spawn.orientation = steerd_rand_range(&a->rng, -3.1f, 3.1f);
  rand_behaviour(a, UINT32_MAX, g_cmd.spawn.model, &g_cmd.spawn.behaviour);
  g_cmd.spawn.present = PROTO_SPAWN_BEHAVIOUR | PROTO_SPAWN_ORIENTATION;
  uint32_t id;
  if (actor_send(a, &g_cmd, &id) == 0) {
    a->pending_id[a->n_pending] = id;
    a->pending_model[a->n_pending] = g_cmd.spawn.model;
    a->n_pending++;
    if (a->kind == ACTOR_BOT)
      g.bot_spawns++;
  }
}

static void rand_params(actor *a, proto_limits *l, proto_params *p) {
  if (steerd_rand_below(&a->rng, 2)) {
    l->present = PROTO_LIMIT_MAX_SPEED | PROTO_LIMIT_MAX_ACCELERATION | PROTO_LIMIT_RADIUS;
    l->v.max_speed = steerd_rand_range(&a->rng, 1.0f, 8.0f);
    l->v.max_acceleration = steerd_rand_range(&a->rng, 2.0f, 20.0f);
    l->v.radius = steerd_rand_range(&a->rng, 0.2f, 1.0f);
  }
  if (!l->present || steerd_rand_below(&a->rng, 2)) {
    p->present = PROTO_PARAM_TARGET_RADIUS | PROTO_PARAM_SLOW_RADIUS | PROTO_PARAM_WANDER_RATE |
                 PROTO_PARAM_SEPARATION_RADIUS | PROTO_PARAM_TURN_TRIGGER_DISTANCE;
    p->v.target_radius = steerd_rand_range(&a->rng, 0.2f, 1.0f);
    p->v.slow_radius = steerd_rand_range(&a->rng, 2.0f, 8.0f);
    p->v.wander_rate = steerd_rand_range(&a->rng, 0.5f, 6.0f);
    p->v.separation_radius = steerd_rand_range(&a->rng, 0.5f, 3.0f);
    p->v.turn_trigger_distance = steerd_rand_range(&a->rng, 1.0f, 8.0f);
  }
}

/* One mixed command of a bot. */
static void bot_act(actor *a, uint64_t now) {
  if (!bucket_take(a, now))
    return;
  if (a->n_agents + a->n_pending < a->target) {
    if (a->n_pending < BOT_PENDING && (g.soaking || g.spawn_allow >= 1.0)) {
      g.spawn_allow -= 1.0;
      send_spawn(a);
    }
    return;
  }
  if (!g.soaking || a->n_agents == 0)
    return;
  uint32_t slot = steerd_rand_below(&a->rng, a->n_agents);
  proto_id agent = a->agents[slot];
  uint8_t model = a->models[slot];
  uint32_t pick = steerd_rand_below(&a->rng, 100);
  memset(&g_cmd, 0, sizeof g_cmd);
  if (pick < 30) {
    g_cmd.type = PROTO_MSG_SET_BEHAVIOUR;
    g_cmd.set_behaviour.agent = agent;
    rand_behaviour(a, slot, model, &g_cmd.set_behaviour.behaviour);
  } else if (pick < 50) {
    g_cmd.type = PROTO_MSG_SET_PATH;
    g_cmd.set_path.agent = agent;
    steerd_rand_path(&a->rng, a->lo, a->hi, 11, model, &g_cmd.set_path.path);
  } else if (pick < 60) {
    g_cmd.type = PROTO_MSG_SET_PARAMS;
    g_cmd.set_params.agent = agent;
    rand_params(a, &g_cmd.set_params.limits, &g_cmd.set_params.params);
  } else if (pick < 67) {
    g_cmd.type = PROTO_MSG_STOP;
    g_cmd.stop.agent = agent;
  } else if (pick < 77) {
    g_cmd.type = PROTO_MSG_QUERY;
    g_cmd.query.agent = agent;
  } else if (pick < 84) {
    g_cmd.type = PROTO_MSG_PING;
  } else if (pick < 90) {
    if (!g.o.bot_full)
      send_view(a);
    return;
  } else {
    /* Churn: despawn now, forget it (nothing later targets it), respawn next turn. */
    g_cmd.type = PROTO_MSG_DESPAWN;
    g_cmd.despawn.agent = agent;
    a->n_agents--;
    a->agents[slot] = a->agents[a->n_agents];
    a->models[slot] = a->models[a->n_agents];
    g.bot_despawns++;
  }
  actor_send(a, &g_cmd, NULL);
}

/* Far above the rate limit: keeps getting RATE_LIMITED. */
static void flooder_act(actor *a) {
  if (a->n_agents + a->n_pending < a->target) {
    if (a->n_pending < BOT_PENDING)
      send_spawn(a);
    return;
  }
  memset(&g_cmd, 0, sizeof g_cmd);
  uint32_t pick = steerd_rand_below(&a->rng, 4);
  if (a->n_agents == 0 || pick == 3) {
    g_cmd.type = steerd_rand_below(&a->rng, 2) ? PROTO_MSG_PING : PROTO_MSG_QUERY;
    g_cmd.query.agent = a->n_agents ? a->agents[0] : 1;
    if (g_cmd.type == PROTO_MSG_PING)
      g_cmd.ping.client_time_us = 0;
  } else {
    uint32_t slot = steerd_rand_below(&a->rng, a->n_agents);
    g_cmd.type = PROTO_MSG_SET_BEHAVIOUR;
    g_cmd.set_behaviour.agent = a->agents[slot];
    g_cmd.set_behaviour.behaviour.kind = PROTO_BEHAVIOUR_SEEK;
    g_cmd.set_behaviour.behaviour.target = rand_point(a);
    g_cmd.set_behaviour.behaviour.present = PROTO_BHV_TARGET;
  }
  actor_send(a, &g_cmd, NULL);
}

/* ---- The garbage peer (raw ENet) ------------------------------------------ */

enum {
  G_RANDOM,     /* random bytes */
  G_TRUNCATED,  /* a valid command cut short */
  G_WRONG_TYPE, /* well-formed msgpack, wrong types / unknown type / missing fields */
  G_MUTATED,    /* a valid command with bytes flipped */
  G_HUGE,       /* huge arrays, maps, strings, nesting; oversize packets */
  G_CHANNEL1,   /* anything on channel 1 */
  G_KINDS
};
static const char *const g_kind_names[G_KINDS] = {"random",  "truncated", "wrong-type",
                                                  "mutated", "huge",      "channel-1"};

enum { HELLO_VALID, HELLO_FORGED, HELLO_EXPIRED, HELLO_NONE, HELLO_KINDS };
static const char *const hello_names[HELLO_KINDS] = {"valid", "forged", "expired", "none"};

typedef struct garbage {
  ENetHost *host;
  ENetPeer *peer;
  int state; /* 0 idle, 1 connecting, 2 connected */
  int hello;
  uint64_t retry_us, deadline_us, next_send_us;
  uint64_t rng;
  char token[HELLO_KINDS][STEERD_AUTH_MAX_TOKEN_BYTES + 1];
  uint64_t connects, connect_failures, sent, sent_by_kind[G_KINDS], hellos[HELLO_KINDS];
  uint64_t errors_received, welcomes;
  uint64_t disconnects[PROTO_DISCONNECT_COUNT + 1];
  uint8_t buf[GARBAGE_BUF];
} garbage;

static garbage gp;

/* The last garbage packets, for the report when the server stops serving. */
typedef struct recent {
  int kind, channel;
  size_t len;
  uint64_t at_us;
  uint8_t head[48];
} recent;
static recent g_recent[8];
static uint32_t g_recent_n;

static void garbage_start(garbage *p, uint64_t now) {
  if (!p->host) {
    p->host = enet_host_create(NULL, 1, PROTO_CHANNEL_COUNT, 0, 0);
    if (!p->host) {
      p->retry_us = now + 1000000;
      return;
    }
  }
  ENetAddress addr;
  enet_address_set_host_ip(&addr, g.host);
  addr.port = g.srv.port;
  p->peer = enet_host_connect(p->host, &addr, PROTO_CHANNEL_COUNT, PROTO_VERSION);
  if (!p->peer) {
    p->retry_us = now + 1000000;
    return;
  }
  p->state = 1;
  p->deadline_us = now + 5000000;
}

static size_t hex_bytes(uint8_t *out, const char *hex) {
  size_t n = 0;
  for (const char *s = hex; s[0] && s[1]; s += 2) {
    if (*s == ' ') {
      s--;
      continue;
    }
    unsigned v;
    sscanf(s, "%2x", &v);
    out[n++] = (uint8_t)v;
  }
  return n;
}

/* A valid command to cut or mutate (its agent does not exist: nothing applies). */

/* Every PARAMS key at a valid value (the server's defaults, PROTOCOL.md 5.2). */
static proto_param_values every_param(void) {
  proto_param_values v = {0.1f, 0.5f, 0.0f, 0.25f, 0.02f, 0.6f, 0.1f, 2.0f,
                          0.0f, 4.0f, 2.0f, 4.0f,  2.0f,  5.0f, 1.0f};
  return v;
}

static size_t valid_command(garbage *p, uint8_t *buf, size_t cap) {
  memset(&g_cmd, 0, sizeof g_cmd);
  g_cmd.request_id = 1 + steerd_rand_below(&p->rng, 1000000);
  uint32_t pick = steerd_rand_below(&p->rng, 3);
  if (pick == 0) {
    g_cmd.type = PROTO_MSG_SET_PATH;
    g_cmd.set_path.agent = 1 + steerd_rand_below(&p->rng, 100);
    g_cmd.set_path.path.count = 2 + steerd_rand_below(&p->rng, 30);
    for (uint32_t i = 0; i < g_cmd.set_path.path.count; i++)
      g_cmd.set_path.path.points[i] =
          (proto_vec2){steerd_rand_range(&p->rng, -400, 400), steerd_rand_range(&p->rng, -400, 400)};
    g_cmd.set_path.path.radius = 1.0f;
  } else if (pick == 1) {
    g_cmd.type = PROTO_MSG_SET_BEHAVIOUR;
    g_cmd.set_behaviour.agent = 1 + steerd_rand_below(&p->rng, 100);
    g_cmd.set_behaviour.behaviour.kind = PROTO_BEHAVIOUR_ARRIVE;
    g_cmd.set_behaviour.behaviour.target = (proto_vec2){1, 2};
    g_cmd.set_behaviour.behaviour.present = PROTO_BHV_TARGET;
    g_cmd.set_behaviour.behaviour.params.present = PROTO_PARAM_ALL;
    g_cmd.set_behaviour.behaviour.params.v = every_param();
  } else {
    g_cmd.type = PROTO_MSG_SET_PARAMS;
    g_cmd.set_params.agent = 1 + steerd_rand_below(&p->rng, 100);
    g_cmd.set_params.params.present = PROTO_PARAM_ALL;
    g_cmd.set_params.params.v = every_param();
  }
  return proto_encode_command(buf, cap, &g_cmd);
}

static size_t garbage_packet(garbage *p, int kind, uint8_t *buf) {
  static const char *const wrong[] = {
      "93 04 01 81 a5 6167656e74 a3 616263",           /* agent is a string */
      "93 02 02 80",                                   /* spawn without fields */
      "93 a5 737061776e 01 80",                        /* type is a string */
      "93 63 05 80",                                   /* unknown type 99 */
      "92 09 01",                                      /* too short */
      "81 01 02",                                      /* a map, not an array */
      "c0",                                            /* nil */
      "93 09 cf ffffffffffffffff 80",                  /* request id too large */
      "93 07 03 81 a5 6167656e74 cb 7ff8000000000000", /* agent NaN */
      "93 02 04 82 a5 6d6f64656c a7 64796e616d6963 a8 706f736974696f6e 92 cb 7ff0000000000000 00", /* inf */
      "93 02 04 82 a5 6d6f64656c a4 626f6174 a8 706f736974696f6e 92 00 00",  /* unknown model */
      "94 09 05 80 c0",                                                      /* trailing element */
      "93 09 06 80 00",                                                      /* trailing byte */
      "93 0b 07 80",                                                         /* SNAPSHOT_ACK on channel 0 */
      "93 04 08 82 a5 6167656e74 01 a5 6167656e74 02",                       /* duplicate key */
      "93 01 09 83 a7 76657273696f6e 01 a4 6e616d65 a1 78 a5 6578747261 c3", /* HELLO extra key */
  };
  size_t n = 0;
  switch (kind) {
  case G_RANDOM:
  default:
    n = 1 + steerd_rand_below(&p->rng, 600);
    for (size_t i = 0; i < n; i++)
      buf[i] = (uint8_t)steerd_rand_next(&p->rng);
    break;
  case G_TRUNCATED:
    n = valid_command(p, buf, GARBAGE_BUF);
    n = n > 1 ? 1 + steerd_rand_below(&p->rng, (uint32_t)n - 1) : 1;
    break;
  case G_WRONG_TYPE:
    n = hex_bytes(buf, wrong[steerd_rand_below(&p->rng, sizeof wrong / sizeof wrong[0])]);
    break;
  case G_MUTATED: {
    n = valid_command(p, buf, GARBAGE_BUF);
    uint32_t flips = 1 + steerd_rand_below(&p->rng, 4);
    for (uint32_t i = 0; i < flips && n; i++)
      buf[steerd_rand_below(&p->rng, (uint32_t)n)] ^= (uint8_t)(1u << steerd_rand_below(&p->rng, 8));
    break;
  }
  case G_HUGE: {
    uint32_t pick = steerd_rand_below(&p->rng, 7);
    if (pick == 0) { /* array32 claiming 4 billion elements */
      n = hex_bytes(buf, "dd ffffffff 09 01 80");
    } else if (pick == 1) { /* map32 claiming 4 billion entries as the body */
      n = hex_bytes(buf, "93 04 01 df ffffffff a5 6167656e74 01");
    } else if (pick == 2) { /* str32 of 4 GB */
      n = hex_bytes(buf, "93 01 01 81 a4 6e616d65 db ffffffff 6162");
    } else if (pick == 3) { /* nesting 12000 deep */
      n = 12000;
      memset(buf, 0x91, n);
      buf[n++] = 0x00;
    } else if (pick == 4) { /* SET_PATH with 1200 points (> 256) */
      n = hex_bytes(buf,
                    "93 05 0a 82 a5 6167656e74 01 a4 70617468 82 a6 726164697573 01 a6 706f696e7473 dc 04b0");
      for (int i = 0; i < 1200; i++) {
        buf[n++] = 0x92;
        buf[n++] = (uint8_t)(i & 0x7f);
        buf[n++] = 0x01;
      }
    } else if (pick == 5) { /* oversize: above PROTO_MAX_MESSAGE_BYTES */
      n = PROTO_MAX_MESSAGE_BYTES + 1 + steerd_rand_below(&p->rng, 4000);
      for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)steerd_rand_next(&p->rng);
      buf[0] = 0x93;
    } else { /* array16 of 65535 nils claimed, 3000 given */
      n = hex_bytes(buf, "dc ffff");
      memset(buf + n, 0xc0, 3000);
      n += 3000;
    }
    break;
  }
  }
  return n;
}

static void garbage_send(garbage *p) {
  int kind = (int)steerd_rand_below(&p->rng, G_KINDS);
  uint8_t channel = PROTO_CHANNEL_RELIABLE;
  size_t n;
  if (kind == G_CHANNEL1) {
    channel = PROTO_CHANNEL_SNAPSHOT;
    uint32_t pick = steerd_rand_below(&p->rng, 3);
    if (pick == 0) {
      proto_snapshot_ack a = {.tick = 1 + steerd_rand_below(&p->rng, 100000)};
      n = proto_encode_snapshot_ack(p->buf, sizeof p->buf, &a);
    } else if (pick == 1)
      n = valid_command(p, p->buf, sizeof p->buf);
    else
      n = garbage_packet(p, G_RANDOM, p->buf);
  } else {
    n = garbage_packet(p, kind, p->buf);
  }
  if (n == 0)
    return;
  ENetPacket *pk =
      enet_packet_create(p->buf, n, channel == PROTO_CHANNEL_RELIABLE ? ENET_PACKET_FLAG_RELIABLE : 0);
  recent *r = &g_recent[g_recent_n++ % 8];
  r->kind = kind;
  r->channel = channel;
  r->len = n;
  r->at_us = now_us();
  memcpy(r->head, p->buf, n < sizeof r->head ? n : sizeof r->head);
  if (pk && enet_peer_send(p->peer, channel, pk) == 0) {
    p->sent++;
    p->sent_by_kind[kind]++;
  } else if (pk) {
    enet_packet_destroy(pk);
  }
}

static void garbage_hello(garbage *p) {
  uint32_t r = steerd_rand_below(&p->rng, 100);
  p->hello = r < 70 ? HELLO_VALID : r < 80 ? HELLO_FORGED : r < 90 ? HELLO_EXPIRED : HELLO_NONE;
  if (g.o.anonymous && (p->hello == HELLO_FORGED || p->hello == HELLO_EXPIRED))
    p->hello = HELLO_VALID; /* no tokens to forge: the server checks none */
  p->hellos[p->hello]++;
  if (p->hello == HELLO_NONE)
    return;
  memset(&g_cmd, 0, sizeof g_cmd);
  g_cmd.type = PROTO_MSG_HELLO;
  g_cmd.request_id = 1;
  g_cmd.hello.version = PROTO_VERSION;
  snprintf(g_cmd.hello.name, sizeof g_cmd.hello.name, "soak-garbage");
  if (p->token[p->hello][0]) {
    g_cmd.hello.has_token = 1;
    snprintf(g_cmd.hello.token, sizeof g_cmd.hello.token, "%s", p->token[p->hello]);
  }
  size_t n = proto_encode_command(p->buf, sizeof p->buf, &g_cmd);
  ENetPacket *pk = enet_packet_create(p->buf, n, ENET_PACKET_FLAG_RELIABLE);
  if (pk && enet_peer_send(p->peer, PROTO_CHANNEL_RELIABLE, pk) != 0)
    enet_packet_destroy(pk);
}

static void garbage_step(garbage *p, uint64_t now, int active) {
  if (p->host) {
    ENetEvent ev;
    while (enet_host_service(p->host, &ev, 0) > 0) {
      if (ev.type == ENET_EVENT_TYPE_CONNECT) {
        p->state = 2;
        p->connects++;
        garbage_hello(p);
        p->next_send_us = now;
      } else if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
        uint32_t t = proto_message_type(ev.packet->data, ev.packet->dataLength);
        if (t == PROTO_MSG_ERROR)
          p->errors_received++;
        else if (t == PROTO_MSG_WELCOME)
          p->welcomes++;
        enet_packet_destroy(ev.packet);
      } else if (ev.type == ENET_EVENT_TYPE_DISCONNECT) {
        if (p->state == 2)
          p->disconnects[ev.data < PROTO_DISCONNECT_COUNT ? ev.data : PROTO_DISCONNECT_COUNT]++;
        else
          p->connect_failures++;
        p->state = 0;
        p->peer = NULL;
        p->retry_us = now + 20000;
      }
    }
  }
  if (!active)
    return;
  if (p->state == 0 && now >= p->retry_us)
    garbage_start(p, now);
  else if (p->state == 1 && now >= p->deadline_us) {
    enet_peer_reset(p->peer);
    p->peer = NULL;
    p->state = 0;
    p->connect_failures++;
    p->retry_us = now + 100000;
  }
  if (p->state == 2 && g.o.garbage_rate > 0) {
    uint64_t period = (uint64_t)(1e6 / g.o.garbage_rate);
    for (int k = 0; k < 20 && now >= p->next_send_us; k++) {
      garbage_send(p);
      p->next_send_us += period;
    }
    if (now >= p->next_send_us)
      p->next_send_us = now;
    enet_host_flush(p->host);
  }
}

/* ---- Server log ----------------------------------------------------------- */

typedef struct server_log {
  int have_stats;
  unsigned clients, agents;
  unsigned long long tick, overruns, skipped, slow, snapshots, commands, bad;
  double mean_step_us;
  unsigned long long disconnect_lines[PROTO_DISCONNECT_COUNT];
  unsigned long long errors, warnings, refused_full;
} server_log;

static void read_log(const char *path, server_log *l) {
  memset(l, 0, sizeof *l);
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  char line[2048];
  while (fgets(line, sizeof line, f)) {
    const char *s = strstr(line, "stats: ");
    if (s &&
        sscanf(s,
               "stats: %u clients, %u agents, tick %llu, %llu overruns, %llu skipped, %llu slow, mean step "
               "%lf us, %llu snapshots, %llu commands, %llu bad messages",
               &l->clients, &l->agents, &l->tick, &l->overruns, &l->skipped, &l->slow, &l->mean_step_us,
               &l->snapshots, &l->commands, &l->bad) == 10)
      l->have_stats = 1;
    if ((s = strstr(line, "disconnecting (")) != NULL)
      for (uint32_t r = 0; r < PROTO_DISCONNECT_COUNT; r++) {
        const char *name = proto_disconnect_name(r);
        size_t len = strlen(name);
        if (!strncmp(s + 15, name, len) && s[15 + len] == ')')
          l->disconnect_lines[r]++;
      }
    if (strstr(line, "server full"))
      l->refused_full++;
    if (strstr(line, "ERROR") || strstr(line, "error:"))
      l->errors++;
  }
  fclose(f);
}

static void print_log_tail(const char *path, int lines) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "tail -n %d '%s' >&2", lines, path);
  if (system(cmd) != 0)
    fprintf(stderr, "soak: cannot show %s\n", path);
}

/* ---- Setup ------------------------------------------------------------------ */

static int make_secret(char *path, size_t cap, char *secret, size_t scap) {
  uint64_t s = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
  size_t n = 0;
  for (; n < 40 && n + 1 < scap; n++)
    secret[n] = "abcdefghijklmnopqrstuvwxyz0123456789"[steerd_rand_below(&s, 36)];
  secret[n] = '\0';
  snprintf(path, cap, "/tmp/steerd-soak-secret-XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0)
    return -1;
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    return -1;
  }
  fprintf(f, "%s\n", secret);
  fclose(f);
  return 0;
}

static int issue(const steerd_auth *a, const char *name, int role, int64_t ttl, char *out) {
  steerd_token t;
  memset(&t, 0, sizeof t);
  snprintf(t.name, sizeof t.name, "%s", name);
  t.role = (steerd_role)role;
  uint64_t now = (uint64_t)time(NULL);
  t.issued_at = now - 60;
  t.expires_at = (uint64_t)((int64_t)now + ttl);
  return steerd_auth_issue(a, &t, out, STEERD_AUTH_MAX_TOKEN_BYTES + 1) > 0 ? 0 : -1;
}

/* ---- The loop ----------------------------------------------------------------- */

typedef struct sample {
  double t_s;
  long rss_kb;
  double cpu_s;
  uint64_t obs_frames;
  uint32_t agents;
} sample;

static FILE *g_csv;
static int g_died_status; /* wait status of a server that ended during the run */
static uint32_t g_zero_run, g_zero_max, g_dumped;

/* The server's threads' stacks (gdb), once: evidence when it stops serving. */
static void dump_stacks(const char *why) {
  if (g_dumped++ >= 3 || g.srv.pid <= 0)
    return;
  char cmd[512];
  fprintf(stderr, "soak: %s: the server's stacks (gdb):\n", why);
  snprintf(cmd, sizeof cmd,
           "cat /proc/%d/stat >&2; timeout 30 gdb -p %d -batch -ex 'thread apply all bt' 2>&1 | grep -E "
           "'^#|^Thread' >&2",
           (int)g.srv.pid, (int)g.srv.pid);
  if (system(cmd) != 0)
    fprintf(stderr, "soak: gdb failed\n");
  fprintf(stderr, "soak: the last garbage packets (oldest first):\n");
  for (uint32_t i = 0; i < 8; i++) {
    const recent *r = &g_recent[(g_recent_n + i) % 8];
    if (!r->len)
      continue;
    fprintf(stderr, "  %.3f s ago, %s, channel %d, %zu bytes:", (double)(now_us() - r->at_us) / 1e6,
            g_kind_names[r->kind], r->channel, r->len);
    for (size_t k = 0; k < r->len && k < sizeof r->head; k++)
      fprintf(stderr, " %02x", r->head[k]);
    fprintf(stderr, "\n");
  }
}

static struct pollfd *g_fds;
static uint32_t g_max_samples;
static actor **g_fd_actor;

static actor *actor_at(uint32_t i) { /* bots, then flooder, then observer */
  return i < g.n_bots ? &g.bots[i] : i == g.n_bots ? &g.flooder : &g.observer;
}

static uint32_t bot_agents(void) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < g.n_bots; i++)
    n += g.bots[i].n_agents;
  return n;
}

/* Reconnects the actors whose connection ended, once their retry time comes. */
static void reconnect_actors(uint64_t now) {
  uint32_t total = g.n_bots + 2;
  for (uint32_t i = 0; i < total; i++) {
    actor *a = actor_at(i);
    if (a->down && now >= a->retry_us && actor_connect(a) < 0)
      actor_lost(a, STEERD_CLIENT_ENET);
  }
}

static int service_one(actor *a) {
  if (!a->c)
    return 0;
  int r = steerd_client_service(a->c, 0);
  if (r < 0) {
    actor_lost(a, r);
    return r;
  }
  if (!a->welcomed_seen && steerd_client_get_state(a->c) == STEERD_CLIENT_WELCOMED) {
    const proto_welcome *w = steerd_client_welcome(a->c);
    float mx = (w->world_max.x - w->world_min.x) * 0.1f, my = (w->world_max.y - w->world_min.y) * 0.1f;
    a->lo = (proto_vec2){w->world_min.x + mx, w->world_min.y + my};
    a->hi = (proto_vec2){w->world_max.x - mx, w->world_max.y - my};
    a->welcomed_seen = 1;
    if (a->kind == ACTOR_BOT && !g.o.bot_full)
      send_view(a); /* before anything else: the whole world is not for 200 clients */
  }
  return 0;
}

/* Runs until until_us (or, with stop_when_spawned, until the bots hold their agents). */
static int run_loop(uint64_t until_us, int abuse, int stop_when_spawned, sample *samples, uint32_t *n_samples,
                    uint64_t t0_us, int *server_died) {
  uint32_t total = g.n_bots + 2;
  uint64_t next_all = 0, next_sample = t0_us + 1000000;
  uint64_t flood_sent_base = 0, flood_t0 = now_us();
  uint64_t period_us = (uint64_t)(1e6 / g.o.rate), last_us = now_us();
  for (uint64_t now = now_us(); now < until_us; now = now_us()) {
    if (stop_when_spawned && bot_agents() >= g.o.agents - g.o.agents / 1000)
      return 0;
    reconnect_actors(now);
    /* Act. */
    if (!g.soaking) {
      g.spawn_allow += (double)(now - last_us) / 1e6 * g.o.spawn_rate;
      if (g.spawn_allow > 100.0)
        g.spawn_allow = 100.0;
    }
    last_us = now;
    for (uint32_t i = 0; i < g.n_bots; i++) {
      actor *a = &g.bots[i];
      if (!a->c || !a->welcomed_seen)
        continue;
      if (!g.soaking) {
        bot_act(a, now);
      } else if (now >= a->next_action_us) {
        bot_act(a, now);
        a->next_action_us = now + period_us / 2u + steerd_rand_below(&a->rng, (uint32_t)period_us + 1u);
      }
    }
    if (abuse && g.flooder.c && g.flooder.welcomed_seen) {
      uint64_t due = (uint64_t)((double)(now - flood_t0) / 1e6 * g.o.flood_rate);
      for (int k = 0; k < 100 && flood_sent_base < due; k++, flood_sent_base++)
        flooder_act(&g.flooder);
      if (flood_sent_base < due)
        flood_sent_base = due; /* fell behind: do not burst to catch up */
    }
    garbage_step(&gp, now, abuse);
    /* Wait. */
    nfds_t n = 0;
    for (uint32_t i = 0; i < total; i++) {
      actor *a = actor_at(i);
      if (!a->c)
        continue;
      g_fds[n].fd = steerd_client_fd(a->c);
      g_fds[n].events = POLLIN;
      g_fds[n].revents = 0;
      g_fd_actor[n] = a;
      n++;
    }
    if (gp.host) {
      g_fds[n].fd = (int)gp.host->socket;
      g_fds[n].events = POLLIN;
      g_fds[n].revents = 0;
      g_fd_actor[n] = NULL;
      n++;
    }
    if (poll(g_fds, n, 2) < 0 && errno != EINTR)
      return -1;
    now = now_us();
    /* ENet needs servicing for acks and resends even when nothing arrives. */
    int all = now >= next_all;
    if (all)
      next_all = now + 10000;
    for (nfds_t k = 0; k < n; k++)
      if (g_fd_actor[k] && (all || (g_fds[k].revents & POLLIN)))
        service_one(g_fd_actor[k]);
    if (now >= next_sample) {
      int st;
      if (waitpid(g.srv.pid, &st, WNOHANG) == g.srv.pid) {
        *server_died = 1;
        g_died_status = st;
        g.srv.pid = 0;
        fprintf(stderr, "soak: the server died (wait status %d)\n", st);
        return -1;
      }
      next_sample += 1000000;
      if (next_sample < now)
        next_sample = now + 1000000; /* we stalled: a sample is still one second */
      uint64_t frames = g.observer.frames_this_second;
      g.observer.frames_this_second = 0;
      g_zero_run = frames == 0 && g.observer.frames_total > 0 ? g_zero_run + 1 : 0;
      if (samples && g_zero_run > g_zero_max)
        g_zero_max = g_zero_run;
      if (g_zero_run == 3 || g_zero_run == 10)
        dump_stacks(g_zero_run == 3 ? "the observer has had no frame for 3 s" : "... nor for 10 s");
      if (!samples || *n_samples >= g_max_samples)
        continue;
      sample *s = &samples[(*n_samples)++];
      s->t_s = (double)(now - t0_us) / 1e6;
      s->rss_kb = rss_kb(g.srv.pid);
      s->cpu_s = steerd_proc_cpu_seconds(&g.srv);
      s->obs_frames = frames;
      s->agents = bot_agents();
      if (g_csv)
        fprintf(g_csv, "%.1f,%ld,%.2f,%llu,%u\n", s->t_s, s->rss_kb, s->cpu_s,
                (unsigned long long)s->obs_frames, s->agents);
      if (*n_samples % 10 == 0)
        fprintf(stderr,
                "soak: t=%4.0fs rss %.1f MB, server cpu %.1f s, observer %llu frames/s, %u bot agents\n",
                s->t_s, (double)s->rss_kb / 1024.0, s->cpu_s, (unsigned long long)s->obs_frames, s->agents);
    }
  }
  return 0;
}

/* ---- Main ------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  if (parse_args(argc, argv, &g.o) != 0)
    return 2;
  signal(SIGPIPE, SIG_IGN);
  options *o = &g.o;
  g.host = "127.0.0.1";
  g.n_bots = o->clients - 3;
  uint32_t per_bot = o->agents / g.n_bots, extra = o->agents % g.n_bots;
  if (per_bot == 0 && extra == 0)
    per_bot = 1;
  if (enet_initialize() != 0) {
    fprintf(stderr, "soak: enet_initialize failed\n");
    return 2;
  }

  /* Secret and tokens. */
  char secret_path[64] = "", secret[64] = "";
  steerd_auth auth, other;
  if (!o->anonymous) {
    if (make_secret(secret_path, sizeof secret_path, secret, sizeof secret) != 0 ||
        steerd_auth_init(&auth, secret, strlen(secret)) != 0 ||
        steerd_auth_init(&other, "not the server's secret, so forged", 34) != 0) {
      fprintf(stderr, "soak: cannot make the secret\n");
      return 2;
    }
  }

  char max_clients[16], max_agents[16], per_client[16], tick[16], snap[16], timeout[16];
  uint32_t per_client_n = 2 * (per_bot + 1) + 64;
  if (per_client_n < 1000)
    per_client_n = 1000;
  snprintf(max_clients, sizeof max_clients, "%u", o->clients + 16);
  snprintf(max_agents, sizeof max_agents, "%u", o->agents + o->agents / 10 + 256);
  snprintf(per_client, sizeof per_client, "%u", per_client_n);
  snprintf(tick, sizeof tick, "%u", o->tick_rate);
  snprintf(snap, sizeof snap, "%u", o->snapshot_rate);
  snprintf(timeout, sizeof timeout, "%u", o->client_timeout_ms);
  const char *args[32] = {
      "--no-demo", "--max-clients", max_clients, "--max-agents",    max_agents, "--max-agents-per-client",
      per_client,  "--tick-rate",   tick,        "--snapshot-rate", snap,       "--client-timeout",
      timeout,     "--log-level",   "info"};
  int na = 15;
  if (!o->anonymous) {
    args[na++] = "--secret-file";
    args[na++] = secret_path;
  }
  args[na] = NULL;
  printf("soak: %s", o->binary);
  for (int i = 0; i < na; i++)
    printf(" %s", args[i]);
  printf("\n");
  fflush(stdout);
  if (steerd_proc_start(&g.srv, o->binary, args, 10000) != 0) {
    fprintf(stderr, "soak: cannot start %s\n", o->binary);
    if (g.srv.log_path[0])
      print_log_tail(g.srv.log_path, 20);
    if (secret_path[0])
      unlink(secret_path);
    return 2;
  }
  long rss_idle = rss_kb(g.srv.pid);
  if (o->csv && (g_csv = fopen(o->csv, "w")) != NULL)
    fprintf(g_csv, "t_s,rss_kb,server_cpu_s,observer_frames,bot_agents\n");

  /* Actors. */
  g.bots = calloc(g.n_bots, sizeof *g.bots);
  g_fds = calloc(g.n_bots + 8, sizeof *g_fds);
  g_fd_actor = calloc(g.n_bots + 8, sizeof *g_fd_actor);
  g_max_samples = o->seconds + 600;
  sample *samples = calloc(g_max_samples, sizeof *samples);
  if (!g.bots || !g_fds || !g_fd_actor || !samples)
    return 2;
  uint32_t total = g.n_bots + 2;
  int setup_failed = 0;
  for (uint32_t i = 0; i < total && !setup_failed; i++) {
    actor *a = actor_at(i);
    a->index = i;
    a->rng = o->seed * 0x100000001B3ull + i + 1;
    a->bucket = BOT_BUCKET_BURST;
    a->bucket_us = now_us();
    int role = STEERD_ROLE_CONTROLLER;
    if (i < g.n_bots) {
      a->kind = ACTOR_BOT;
      a->t = &g.bot_tally;
      a->target = per_bot + (i < extra ? 1 : 0);
      snprintf(a->name, sizeof a->name, "soak-bot-%u", i);
    } else if (a == &g.flooder) {
      a->kind = ACTOR_FLOODER;
      a->t = &g.flood_tally;
      a->target = 4;
      snprintf(a->name, sizeof a->name, "soak-flooder");
    } else {
      a->kind = ACTOR_OBSERVER;
      a->t = &g.obs_tally;
      role = STEERD_ROLE_OBSERVER;
      snprintf(a->name, sizeof a->name, "soak-observer");
    }
    a->cap_agents = a->target + 16;
    a->agents = calloc(a->cap_agents, sizeof *a->agents);
    a->models = calloc(a->cap_agents, sizeof *a->models);
    if (!a->agents || !a->models)
      setup_failed = 1;
    if (!o->anonymous && issue(&auth, a->name, role, 86400, a->token) != 0)
      setup_failed = 1;
    if (!setup_failed && actor_connect(a) < 0)
      actor_lost(a, STEERD_CLIENT_ENET);
  }
  gp.rng = o->seed * 7919u + 17u;
  if (!o->anonymous && (issue(&auth, "soak-garbage", STEERD_ROLE_CONTROLLER, 86400, gp.token[HELLO_VALID]) ||
                        issue(&other, "soak-garbage", STEERD_ROLE_ADMIN, 86400, gp.token[HELLO_FORGED]) ||
                        issue(&auth, "soak-garbage", STEERD_ROLE_CONTROLLER, -30, gp.token[HELLO_EXPIRED])))
    setup_failed = 1;
  if (setup_failed) {
    fprintf(stderr, "soak: setup failed\n");
    steerd_proc_stop(&g.srv, 5000);
    return 2;
  }

  /* Connect and spawn. */
  int died = 0;
  uint64_t t_setup = now_us();
  uint64_t spawn_limit = t_setup + 30000000ull + (uint64_t)(2e6 * o->agents / o->spawn_rate);
  run_loop(spawn_limit, 0, 1, NULL, NULL, t_setup, &died);
  double spawn_s = (double)(now_us() - t_setup) / 1e6;
  uint32_t spawned = bot_agents();
  fprintf(stderr, "soak: %u bot agents spawned in %.2f s; soaking for %u s\n", spawned, spawn_s, o->seconds);

  /* Soak. */
  g.soaking = 1;
  uint32_t n_samples = 0;
  uint64_t t0 = now_us();
  long rss_start = rss_kb(g.srv.pid);
  g.observer.frames_this_second = 0;
  double cpu_start = steerd_proc_cpu_seconds(&g.srv), self_start = self_cpu_seconds();
  run_loop(t0 + (uint64_t)o->seconds * 1000000ull, 1, 0, samples, &n_samples, t0, &died);
  double soak_s = (double)(now_us() - t0) / 1e6;
  double cpu_end = g.srv.pid ? steerd_proc_cpu_seconds(&g.srv) : -1, self_end = self_cpu_seconds();
  long rss_end = g.srv.pid ? rss_kb(g.srv.pid) : -1;

  /* Quiet second: the last replies arrive. */
  g.soaking = 0;
  if (!died)
    run_loop(now_us() + 1000000, 0, 0, NULL, NULL, t0, &died);
  for (uint32_t i = 0; i < g.n_bots; i++) /* not refills: the soak is over */
    g.bots[i].target = 0;

  /* Stop: SIGTERM, the server must exit 0. Keep servicing so it can say goodbye. */
  int status = g_died_status, exited = 0, hung = 0;
  double stop_s = 0;
  if (g.srv.pid > 0) {
    uint64_t ts = now_us();
    kill(g.srv.pid, SIGTERM);
    while (now_us() - ts < 20000000ull) {
      if (waitpid(g.srv.pid, &status, WNOHANG) == g.srv.pid) {
        exited = 1;
        break;
      }
      uint64_t n = now_us();
      for (uint32_t i = 0; i < total; i++)
        if (actor_at(i)->c)
          steerd_client_service(actor_at(i)->c, 0);
      garbage_step(&gp, n, 0);
      steerd_proc_sleep_ms(5);
    }
    stop_s = (double)(now_us() - ts) / 1e6;
    if (!exited) {
      dump_stacks("no exit 20 s after SIGTERM");
      kill(g.srv.pid, SIGKILL);
      waitpid(g.srv.pid, NULL, 0);
      hung = 1;
    }
  } else {
    exited = 1;
  }
  int crashed = exited && WIFSIGNALED(status);
  int exit_code = exited && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  char exit_text[128];
  if (hung)
    snprintf(exit_text, sizeof exit_text, "HUNG: no exit 20 s after SIGTERM, killed");
  else if (crashed)
    snprintf(exit_text, sizeof exit_text, "CRASHED: %s%s", strsignal(WTERMSIG(status)),
             died ? " during the run" : "");
  else
    snprintf(exit_text, sizeof exit_text, "%s%d%s", exit_code ? "EXIT " : "", exit_code,
             died ? " on its own during the run" : "");

  server_log lg;
  read_log(g.srv.log_path, &lg);

  /* Observer rate over whole seconds of the soak. */
  double *rates = calloc(n_samples + 1, sizeof *rates);
  double rmin = 0, rmed = 0, rmean = 0;
  uint32_t below = 0, nr = 0;
  long rss_max = rss_start;
  for (uint32_t i = 0; i < n_samples; i++) {
    if (samples[i].rss_kb > rss_max)
      rss_max = samples[i].rss_kb;
    rates[nr++] = (double)samples[i].obs_frames;
  }
  if (nr) {
    for (uint32_t i = 0; i < nr; i++) {
      rmean += rates[i];
      if (rates[i] < 0.9 * o->snapshot_rate)
        below++;
    }
    rmean /= nr;
    rmed = bench_median(rates, (int)nr);
    rmin = rates[0];
  }
  /* RSS after warm-up (a tenth of the run) and the slope over the second half. */
  long rss_warm = n_samples ? samples[n_samples / 10].rss_kb : rss_start;
  double slope = 0;
  if (n_samples >= 20) {
    uint32_t h = n_samples / 2;
    double sx = 0, sy = 0, sxx = 0, sxy = 0, m = n_samples - h;
    for (uint32_t i = h; i < n_samples; i++) {
      double x = samples[i].t_s / 60.0, y = (double)samples[i].rss_kb / 1024.0;
      sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    double den = m * sxx - sx * sx;
    slope = den != 0 ? (m * sxy - sx * sy) / den : 0;
  }

  steerd_client_stats bs, os;
  memset(&bs, 0, sizeof bs);
  for (uint32_t i = 0; i < g.n_bots; i++) {
    steerd_client_stats s;
    actor_stats(&g.bots[i], &s);
    add_stats(&bs, &s);
  }
  actor_stats(&g.observer, &os);

  /* ---- Table ---- */
  double mb = 1024.0;
  printf("\n## soak: %u s, %u clients (%u bots, garbage, flooder, observer), %u agents, %s\n", o->seconds,
         o->clients, g.n_bots, o->agents, o->anonymous ? "anonymous" : "tokens");
  printf("| measure | value |\n|---|---:|\n");
  printf("| duration (soak, after spawning) | %.1f s (spawn %.2f s) |\n", soak_s, spawn_s);
  printf("| clients / agents held by bots at start, end | %u / %u, %u |\n", o->clients, spawned,
         bot_agents());
  printf("| snapshots: bots / observer | %s, view radius <= %u m / %s, whole world |\n",
         o->bot_full ? "full" : "delta", o->view_radius, o->observer_full ? "full" : "delta");
  printf("| bot commands sent / acked / refused | %llu / %llu / %llu |\n",
         (unsigned long long)g.bot_tally.sent, (unsigned long long)g.bot_tally.acks,
         (unsigned long long)g.bot_tally.errors);
  printf("| bot spawns / despawns / views | %llu / %llu / %llu |\n", (unsigned long long)g.bot_spawns,
         (unsigned long long)g.bot_despawns, (unsigned long long)g.bot_views);
  for (uint32_t k = 0; k < ERR_SLOTS; k++)
    if (g.bot_tally.by_code[k])
      printf("| bot refusals %s | %llu |\n", k < PROTO_ERR_COUNT ? proto_error_name((int)k) : "UNKNOWN",
             (unsigned long long)g.bot_tally.by_code[k]);
  printf("| flooder commands sent / acked / refused | %llu / %llu / %llu (%.0f/s offered) |\n",
         (unsigned long long)g.flood_tally.sent, (unsigned long long)g.flood_tally.acks,
         (unsigned long long)g.flood_tally.errors, o->flood_rate);
  for (uint32_t k = 0; k < ERR_SLOTS; k++)
    if (g.flood_tally.by_code[k])
      printf("| flooder refusals %s | %llu |\n", k < PROTO_ERR_COUNT ? proto_error_name((int)k) : "UNKNOWN",
             (unsigned long long)g.flood_tally.by_code[k]);
  printf("| garbage packets sent | %llu (", (unsigned long long)gp.sent);
  for (int k = 0; k < G_KINDS; k++)
    printf("%s%s %llu", k ? ", " : "", g_kind_names[k], (unsigned long long)gp.sent_by_kind[k]);
  printf(") |\n");
  printf("| garbage connections / HELLOs | %llu (", (unsigned long long)gp.connects);
  for (int k = 0; k < HELLO_KINDS; k++)
    printf("%s%s %llu", k ? ", " : "", hello_names[k], (unsigned long long)gp.hellos[k]);
  printf("), %llu ERRORs received |\n", (unsigned long long)gp.errors_received);
  printf("| garbage peer disconnected by the server |");
  int any = 0;
  for (uint32_t r = 0; r <= PROTO_DISCONNECT_COUNT; r++)
    if (gp.disconnects[r]) {
      printf("%s %s %llu", any ? "," : "", r < PROTO_DISCONNECT_COUNT ? proto_disconnect_name(r) : "other",
             (unsigned long long)gp.disconnects[r]);
      any = 1;
    }
  printf("%s |\n", any ? "" : " none");
  printf("| abuse disconnects (server log) | %llu |\n",
         (unsigned long long)lg.disconnect_lines[PROTO_DISCONNECT_ABUSE]);
  printf("| auth-failed disconnects (server log) | %llu |\n",
         (unsigned long long)lg.disconnect_lines[PROTO_DISCONNECT_AUTH_FAILED]);
  printf("| well-behaved connections dropped (bots, observer) | %u |\n", g.lost_total);
  printf("| server RSS idle / start / after warm-up / max / end | %.1f / %.1f / %.1f / %.1f / %.1f MB |\n",
         rss_idle / mb, rss_start / mb, rss_warm / mb, rss_max / mb, rss_end / mb);
  printf("| RSS growth end - start | %+.1f MB (%+.1f%%) |\n", (rss_end - rss_start) / mb,
         rss_start > 0 ? 100.0 * (double)(rss_end - rss_start) / (double)rss_start : 0.0);
  printf("| RSS growth end - warm-up; slope, second half | %+.1f MB; %+.3f MB/min |\n",
         (rss_end - rss_warm) / mb, slope);
  if (lg.have_stats) {
    printf("| ticks / tick overruns / skipped ticks / slow ticks | %llu / %llu / %llu / %llu |\n", lg.tick,
           lg.overruns, lg.skipped, lg.slow);
    printf("| mean step | %.1f us |\n", lg.mean_step_us);
    printf("| server commands / bad messages (stats line) | %llu / %llu |\n", lg.commands, lg.bad);
  } else {
    printf("| tick overruns / skipped | no stats line in the log |\n");
  }
  printf("| observer frames/s min / median / mean (configured) | %.0f / %.1f / %.2f (%u) |\n", rmin, rmed,
         rmean, o->snapshot_rate);
  printf("| observer seconds below 90%% of the rate; longest run without a frame | %u of %u; %u s |\n", below,
         nr, g_zero_max);
  printf("| observer frames: complete / incomplete / no-baseline / bad; agents in last frame | %llu / %llu / "
         "%llu "
         "/ %llu; %llu |\n",
         (unsigned long long)os.frames_complete, (unsigned long long)os.frames_incomplete,
         (unsigned long long)os.delta_no_base, (unsigned long long)os.delta_bad,
         (unsigned long long)g.observer.frame_agents_last);
  printf("| bot frames: complete / incomplete / overflow; MB received | %llu / %llu / %llu; %.1f |\n",
         (unsigned long long)bs.frames_complete, (unsigned long long)bs.frames_incomplete,
         (unsigned long long)bs.frames_overflow, (double)bs.bytes_received / 1e6);
  printf("| server CPU | %.1f%% of a core |\n",
         soak_s > 0 && cpu_end >= 0 ? 100.0 * (cpu_end - cpu_start) / soak_s : -1.0);
  printf("| soak tool CPU | %.1f%% of a core |\n",
         soak_s > 0 ? 100.0 * (self_end - self_start) / soak_s : 0.0);
  printf("| server exit | %s (SIGTERM to exit %.2f s) |\n", exit_text, stop_s);

  int fail = 0;
  if (hung || crashed || died || exit_code != 0) {
    printf("FAIL: server exit: %s\n", exit_text);
    fail = 1;
  }
  if (g_csv)
    fclose(g_csv);
  if (rmed < 0.9 * o->snapshot_rate) {
    printf("FAIL: the observer's median snapshot rate %.1f/s is below 90%% of %u/s\n", rmed,
           o->snapshot_rate);
    fail = 1;
  }
  if (!fail)
    printf("PASS\n");
  if (fail) {
    fprintf(stderr, "soak: server log kept in %s; its end:\n", g.srv.log_path);
    print_log_tail(g.srv.log_path, 30);
  } else {
    unlink(g.srv.log_path);
  }
  if (secret_path[0])
    unlink(secret_path);
  for (uint32_t i = 0; i < total; i++)
    steerd_client_destroy(actor_at(i)->c);
  if (gp.host)
    enet_host_destroy(gp.host);
  free(rates);
  free(samples);
  return fail;
}

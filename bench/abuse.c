/* abuse.c: peers attacking the server, replayed against the real steerd on
 * 127.0.0.1, with a well-behaved observer measuring what they do to others.
 *
 *   build/bench/abuse ATTACK [options]      ATTACK: flood, halfopen, nohello, burst, bigworld,
 *                                           spawnburst
 *
 * The tool starts the server (--binary, the build's steerd by default, so the
 * same tool measures an older binary too), lets the observer (client library,
 * delta snapshots of the whole world) settle, runs the attack for --seconds
 * and prints one table row:
 *   observer frames/s min / median over the attack's whole seconds,
 *   ticks skipped (the server's own counter, from its stats line at SIGTERM),
 *   server VmRSS before / max / after (after: 2 s past the attack),
 *   tick p99.9 over the attack and the 2 s after: the world step and how late
 *   ticks began, as the upper bounds of /metrics' histogram buckets (a tick
 *   is due every 33 ms at 30 Hz; "late" is the loop's silence),
 *   fresh clients that connected (WELCOME) / tried, one try every second,
 *   well-behaved clients still connected at the end (burst, bigworld).
 *
 * Attacks (raw ENet unless said):
 *   flood     --peers N peers connect, say HELLO (--no-hello: not), then send
 *             PINGs at --rate per second each on channel 0 without ever
 *             reading their socket (unreliable packets, which need no
 *             acknowledgement: --reliable sends them reliably and reads once
 *             a second); each reconnects every --reconnect seconds.
 *   halfopen  --peers N ENet CONNECTs that are never completed, renewed every
 *             --reconnect seconds.
 *   nohello   --peers N peers connect and never say HELLO; each reconnects as
 *             soon as the server drops it.
 *   burst     --clients N whole-world clients (--full: full snapshots, else
 *             delta) connected, then one client spawns --agents agents in one
 *             burst (the server runs with limits that allow it).
 *   bigworld  a world of --agents N wanderers (from a state file made with
 *             the core: the server starts with them), then --clients N
 *             full-snapshot clients of the whole world connect while the
 *             observer (delta, a VIEW circle of --view-radius m, 0: the
 *             whole world) watches; the server runs with any --server-arg
 *             ARG given (e.g. --full-rate-kbps).
 *   spawnburst --spawners N clients (delta, whole world) each SPAWN their
 *             share of --agents at once and DESPAWN each agent as its SPAWN
 *             is ACKed, while --clients N idle full-snapshot clients of the
 *             whole world (in a child process, as for bigworld; --delta-idle: delta
 *             snapshots of the whole world instead) take
 *             snapshots; the server runs with --max-pending 256 so the burst
 *             can connect. The row adds the SPAWNs and DESPAWNs ACKed and
 *             when the last one was (ms after the burst began).
 *   mapflood  one admin client (anonymous on loopback) sends --edits N
 *             ADD_OBSTACLE (small circles on a grid, in an empty world),
 *             --inflight K unanswered at a time; the row adds the ACKs and
 *             their latency p50 / p99 / max.
 */
#define _GNU_SOURCE
#include <enet/enet.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "client.h"
#include "http_get.h"
#include "protocol.h"
#include "state_file.h"
#include "steerd_proc.h"

#define MAX_PEERS   256
#define MAX_CLIENTS 256
#define MAX_SECONDS 600

typedef struct opts {
  const char *attack;
  const char *binary;
  int peers, clients, seconds, rate, reconnect, agents, spawners, edits, inflight;
  int hello, reliable, full, delta_idle;
  const char *label;
  float view_radius;
  const char *server_args[16];
  int server_argc;
} opts;

static opts o;

/* ---- the server ---------------------------------------------------------- */

static steerd_proc srv;

static double rss_mb(void) {
  char path[64], line[256];
  snprintf(path, sizeof(path), "/proc/%d/status", (int)srv.pid);
  FILE *f = fopen(path, "r");
  double mb = -1.0;
  if (!f)
    return mb;
  while (fgets(line, sizeof(line), f))
    if (strncmp(line, "VmRSS:", 6) == 0)
      mb = atof(line + 6) / 1024.0;
  fclose(f);
  return mb;
}

static long log_bytes;

/* The cumulative buckets of one /metrics histogram, as many as it has (up
 * to MAX_BUCKETS), the last +Inf. */
#define MAX_BUCKETS 32
typedef struct histogram {
  int n;
  double le[MAX_BUCKETS];
  double count[MAX_BUCKETS];
} histogram;
typedef struct tick_times {
  histogram step, late;
} tick_times;

static void read_histogram(const char *body, const char *name, histogram *h) {
  memset(h, 0, sizeof *h);
  char prefix[96];
  int n = snprintf(prefix, sizeof prefix, "%s_bucket{le=\"", name);
  for (const char *p = strstr(body, prefix); p && h->n < MAX_BUCKETS; p = strstr(p + 1, prefix)) {
    const char *v = p + n;
    h->le[h->n] = strncmp(v, "+Inf", 4) == 0 ? INFINITY : strtod(v, NULL);
    const char *sp = strchr(v, ' ');
    h->count[h->n++] = sp ? strtod(sp + 1, NULL) : 0.0;
  }
}

/* 0 if /metrics did not answer. */
static int read_tick_times(tick_times *t) {
  static char body[1 << 17];
  if (http_get(srv.http_port, "/metrics", body, sizeof body, 5000) != 200)
    return 0;
  read_histogram(body, "steerd_tick_duration_seconds", &t->step);
  read_histogram(body, "steerd_tick_lateness_seconds", &t->late);
  return 1;
}

/* The p99.9 of what was observed between a and b: the upper bound of the
 * first bucket holding it, as text in ms. */
static const char *p999(const histogram *a, const histogram *b, char *out, size_t cap) {
  snprintf(out, cap, "?");
  if (a->n != b->n || b->n < 2 || !isinf(b->le[b->n - 1]))
    return out;
  double total = b->count[b->n - 1] - a->count[a->n - 1];
  if (!(total > 0.0))
    return out;
  for (int k = 0; k < b->n; k++)
    if (b->count[k] - a->count[k] >= 0.999 * total) {
      if (isinf(b->le[k]))
        snprintf(out, cap, "> %g", b->le[k - 1] * 1e3);
      else
        snprintf(out, cap, "≤ %g", b->le[k] * 1e3);
      break;
    }
  return out;
}

/* SIGTERM, wait, and the skipped ticks from the stats line of the log. */
static long stop_server(void) {
  kill(srv.pid, SIGTERM);
  for (int i = 0; i < 200; i++) {
    int st;
    if (waitpid(srv.pid, &st, WNOHANG) == srv.pid)
      break;
    if (i == 199) {
      kill(srv.pid, SIGKILL);
      waitpid(srv.pid, &st, 0);
    }
    steerd_proc_sleep_ms(50);
  }
  long skipped = -1;
  FILE *f = fopen(srv.log_path, "r");
  char line[2048];
  while (f && fgets(line, sizeof(line), f)) {
    char *p = strstr(line, " stats: ");
    char *q = p ? strstr(p, " skipped") : NULL;
    if (!q)
      continue;
    while (q > p && q[-1] >= '0' && q[-1] <= '9')
      q--;
    skipped = atol(q);
  }
  if (f)
    fclose(f);
  struct stat stt;
  log_bytes = stat(srv.log_path, &stt) == 0 ? (long)stt.st_size : -1;
  if (getenv("ABUSE_KEEP_LOG"))
    fprintf(stderr, "abuse: server log kept at %s\n", srv.log_path);
  else
    unlink(srv.log_path);
  return skipped;
}

/* ---- well-behaved clients ----------------------------------------------------- */

typedef struct watcher {
  steerd_client *c;
  uint64_t frames;
  int gone;
  uint32_t reason;
  /* spawnburst's spawners: replies counted, a DESPAWN sent for each SPAWN ACKed */
  uint32_t spawn_acks, despawn_acks, errors;
  uint64_t last_ack_ms;
  /* mapflood's admin: edits sent and ACKed, each one's send time and latency */
  uint32_t edits_sent, edit_acks;
  uint64_t *edit_sent_ms; /* by request_id, the ids being the client's own 1, 2, ... */
  uint64_t *edit_latency_ms;
} watcher;

static void send_edit(watcher *w);

static void on_reply(void *user, const proto_server_msg *m) {
  watcher *w = user;
  if (m->type == PROTO_MSG_ERROR) {
    if (w->edit_sent_ms && w->errors == 0)
      fprintf(stderr, "abuse: the first ERROR of the edits: %u %s (%s)\n", m->error.code, m->error.message,
              m->error.field);
    w->errors++;
    if (w->edit_sent_ms)
      send_edit(w); /* the flood goes on */
    return;
  }
  if (m->type != PROTO_MSG_ACK)
    return;
  w->last_ack_ms = steerd_proc_now_ms();
  if (m->ack.command == PROTO_MSG_ADD_OBSTACLE && w->edit_sent_ms &&
      m->ack.request_id <= (uint32_t)o.edits + 1u) {
    w->edit_latency_ms[w->edit_acks++] = w->last_ack_ms - w->edit_sent_ms[m->ack.request_id];
    send_edit(w);
  } else if (m->ack.command == PROTO_MSG_DESPAWN) {
    w->despawn_acks++;
  } else if (m->ack.command == PROTO_MSG_SPAWN) {
    w->spawn_acks++;
    proto_command d;
    memset(&d, 0, sizeof(d));
    d.type = PROTO_MSG_DESPAWN;
    d.despawn.agent = m->ack.agent;
    steerd_client_send(w->c, &d, NULL);
  }
}

static void on_frame(void *user, const steerd_client_frame *f) {
  (void)f;
  ((watcher *)user)->frames++;
}

static void on_gone(void *user, uint32_t reason) {
  watcher *w = user;
  w->gone = 1;
  w->reason = reason;
  fprintf(stderr, "abuse: a client was disconnected (reason %u) at %llu ms\n", reason,
          (unsigned long long)steerd_proc_now_ms());
}

static int watcher_start(watcher *w, const char *name, int delta, uint32_t max_agents) {
  memset(w, 0, sizeof(*w));
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = name;
  cfg.snapshots = delta ? PROTO_SNAPSHOTS_DELTA : PROTO_SNAPSHOTS_FULL;
  cfg.max_agents = max_agents;
  cfg.connect_timeout_ms = 5000;
  cfg.callbacks.on_snapshot_frame = on_frame;
  cfg.callbacks.on_disconnect = on_gone;
  cfg.callbacks.on_reply = on_reply;
  cfg.user = w;
  w->c = steerd_client_create(&cfg);
  return w->c ? steerd_client_connect_start(w->c, "127.0.0.1", srv.port) : -1;
}

static void watcher_service(watcher *w) {
  if (w->c && !w->gone && steerd_client_service(w->c, 0) < 0)
    w->gone = 1;
}

/* mapflood: the next ADD_OBSTACLE, a 0.2 m circle on a 1.2 m grid from the
 * corner of the default world (-50..50 m), while there are edits left to send. */
static void send_edit(watcher *w) {
  if (w->edits_sent >= (uint32_t)o.edits)
    return;
  proto_command cmd;
  memset(&cmd, 0, sizeof(cmd));
  cmd.type = PROTO_MSG_ADD_OBSTACLE;
  uint32_t k = w->edits_sent;
  cmd.add_obstacle.id = 1000000u + k;
  cmd.add_obstacle.kind = STEER_OBSTACLE_CIRCLE;
  cmd.add_obstacle.count = 1;
  cmd.add_obstacle.radius = 0.2f;
  cmd.add_obstacle.points[0] = proto_v2(-48.0f + 1.2f * (float)(k % 80u), -48.0f + 1.2f * (float)(k / 80u));
  uint32_t rid;
  if (steerd_client_send(w->c, &cmd, &rid) != 0 || rid > (uint32_t)o.edits + 1u)
    return;
  w->edit_sent_ms[rid] = steerd_proc_now_ms();
  w->edits_sent++;
}

/* ---- raw ENet attackers --------------------------------------------------- */

typedef struct attacker {
  ENetHost *host;
  ENetPeer *peer;
  int connected;
  uint64_t since_ms; /* connect time */
  uint32_t next_id;
} attacker;

static attacker att[MAX_PEERS];
static uint64_t sent_total, connects_total;

static void send_cmd(attacker *a, proto_command *cmd, int reliable) {
  uint8_t buf[2048];
  cmd->request_id = ++a->next_id;
  size_t n = proto_encode_command(buf, sizeof(buf), cmd);
  ENetPacket *p =
      enet_packet_create(buf, n, reliable ? ENET_PACKET_FLAG_RELIABLE : ENET_PACKET_FLAG_UNSEQUENCED);
  if (p && enet_peer_send(a->peer, 0, p) != 0)
    enet_packet_destroy(p);
  sent_total++;
}

static void attacker_close(attacker *a) {
  if (a->host)
    enet_host_destroy(a->host);
  memset(a, 0, sizeof(*a));
}

static int attacker_open(attacker *a) {
  attacker_close(a);
  a->host = enet_host_create(NULL, 1, 2, 0, 0);
  if (!a->host)
    return -1;
  ENetAddress addr;
  enet_address_set_host_ip(&addr, "127.0.0.1");
  addr.port = srv.port;
  a->peer = enet_host_connect(a->host, &addr, 2, PROTO_VERSION);
  a->since_ms = steerd_proc_now_ms();
  enet_host_flush(a->host);
  connects_total++;
  return a->peer ? 0 : -1;
}

/* Services the host (reads its socket); returns 1 once connected, -1 when dropped. */
static int attacker_pump(attacker *a) {
  ENetEvent ev;
  int r = 0;
  while (a->host && enet_host_service(a->host, &ev, 0) > 0) {
    if (ev.type == ENET_EVENT_TYPE_CONNECT) {
      a->connected = 1;
      r = 1;
    } else if (ev.type == ENET_EVENT_TYPE_DISCONNECT) {
      a->connected = 0;
      return -1;
    } else if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
      enet_packet_destroy(ev.packet);
    }
  }
  return r;
}

static void attacker_hello(attacker *a) {
  proto_command cmd;
  memset(&cmd, 0, sizeof(cmd));
  cmd.type = PROTO_MSG_HELLO;
  cmd.hello.version = PROTO_VERSION;
  snprintf(cmd.hello.name, sizeof(cmd.hello.name), "attacker");
  send_cmd(a, &cmd, 1);
  enet_host_flush(a->host);
}

/* Connects, waits for ENet's CONNECT (up to 2 s, servicing), says HELLO if asked. */
static int attacker_connect(attacker *a, int hello) {
  if (attacker_open(a) != 0)
    return -1;
  uint64_t end = steerd_proc_now_ms() + 2000;
  while (steerd_proc_now_ms() < end) {
    int r = attacker_pump(a);
    if (r == 1)
      break;
    if (r < 0)
      return -1;
    steerd_proc_sleep_ms(1);
  }
  if (!a->connected)
    return -1;
  if (hello)
    attacker_hello(a);
  return 0;
}

/* ---- measurement ------------------------------------------------------------ */

typedef struct probe {
  watcher w;
  int active;
  uint64_t started_ms;
} probe;

static void usage(void) {
  fprintf(
      stderr,
      "usage: abuse flood|halfopen|nohello|burst|bigworld|spawnburst|mapflood [--binary PATH] [--seconds S]\n"
      "       [--peers N] [--rate R] [--reconnect S] [--no-hello] [--reliable] [--clients N] [--agents N]\n"
      "       [--spawners N] [--delta-idle] [--edits N] [--inflight K]\n"
      "       [--full] [--label TEXT] [--view-radius M] [--server-arg ARG]...\n");
  exit(2);
}

static void parse(int argc, char **argv) {
  o.binary = STEERD_BINARY;
  o.peers = 1;
  o.clients = 0;
  o.seconds = 20;
  o.rate = 20000;
  o.reconnect = 7;
  o.agents = 10000;
  o.spawners = 100;
  o.edits = 5000;
  o.inflight = 50;
  o.hello = 1;
  o.label = "";
  if (argc < 2)
    usage();
  o.attack = argv[1];
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--binary") && v)
      o.binary = v, i++;
    else if (!strcmp(a, "--seconds") && v)
      o.seconds = atoi(v), i++;
    else if (!strcmp(a, "--peers") && v)
      o.peers = atoi(v), i++;
    else if (!strcmp(a, "--rate") && v)
      o.rate = atoi(v), i++;
    else if (!strcmp(a, "--reconnect") && v)
      o.reconnect = atoi(v), i++;
    else if (!strcmp(a, "--clients") && v)
      o.clients = atoi(v), i++;
    else if (!strcmp(a, "--agents") && v)
      o.agents = atoi(v), i++;
    else if (!strcmp(a, "--spawners") && v)
      o.spawners = atoi(v), i++;
    else if (!strcmp(a, "--edits") && v)
      o.edits = atoi(v), i++;
    else if (!strcmp(a, "--inflight") && v)
      o.inflight = atoi(v), i++;
    else if (!strcmp(a, "--label") && v)
      o.label = v, i++;
    else if (!strcmp(a, "--view-radius") && v)
      o.view_radius = (float)atof(v), i++;
    else if (!strcmp(a, "--server-arg") && v && o.server_argc < 15)
      o.server_args[o.server_argc++] = v, i++;
    else if (!strcmp(a, "--no-hello"))
      o.hello = 0;
    else if (!strcmp(a, "--reliable"))
      o.reliable = 1;
    else if (!strcmp(a, "--full"))
      o.full = 1;
    else if (!strcmp(a, "--delta-idle"))
      o.delta_idle = 1;
    else
      usage();
  }
  if (o.peers < 0 || o.peers > MAX_PEERS || o.clients < 0 || o.clients > MAX_CLIENTS || o.seconds < 1 ||
      o.seconds > MAX_SECONDS || o.rate < 1 || o.spawners < 1 || o.spawners > MAX_CLIENTS || o.edits < 1 ||
      o.inflight < 1)
    usage();
}

/* bigworld's and spawnburst's child: connects the full-snapshot (or
 * --delta-idle) clients, lets them settle for
 * 5 s, services them for the attack's seconds, and writes to fd how many were
 * up after settling, how many at the end and the complete snapshots they got
 * meanwhile; then services them 2 s more (the parent's tail). */
static int big_clients(watcher *cl, int fd) {
  for (int i = 0; i < o.clients; i++)
    watcher_start(&cl[i], "client", o.delta_idle, (uint32_t)o.agents + 1000);
  uint64_t t = steerd_proc_now_ms(), settle = t + 5000, end = settle + (uint64_t)o.seconds * 1000u,
           tail = end + 2000;
  int up = -1, still = 0;
  uint64_t frames0 = 0, frames = 0;
  while ((t = steerd_proc_now_ms()) < tail) {
    for (int i = 0; i < o.clients; i++)
      watcher_service(&cl[i]);
    if (up < 0 && t >= settle) {
      up = 0;
      for (int i = 0; i < o.clients; i++) {
        up += steerd_client_get_state(cl[i].c) == STEERD_CLIENT_WELCOMED;
        frames0 += cl[i].frames;
      }
    }
    if (fd >= 0 && t >= end) {
      for (int i = 0; i < o.clients; i++) {
        still += !cl[i].gone && steerd_client_get_state(cl[i].c) == STEERD_CLIENT_WELCOMED;
        frames += cl[i].frames;
      }
      dprintf(fd, "%d %d %llu\n", up, still, (unsigned long long)(frames - frames0));
      close(fd);
      fd = -1;
    }
    steerd_proc_sleep_ms(1);
  }
  return 0;
}

/* Spawns n wandering agents through one client (the server allows the burst);
 * with wait_acks, reads the replies (and keeps `also`, if any, serviced) as
 * it goes. */
static int spawn_agents(steerd_client *c, int n, int wait_acks, watcher *also) {
  proto_command cmd;
  memset(&cmd, 0, sizeof(cmd));
  cmd.type = PROTO_MSG_SPAWN;
  cmd.spawn.model = STEER_MODEL_KINEMATIC;
  cmd.spawn.present = PROTO_SPAWN_BEHAVIOUR;
  cmd.spawn.behaviour.kind = STEER_BEHAVIOUR_WANDER;
  int side = 1;
  while (side * side < n)
    side++;
  for (int i = 0; i < n; i++) {
    cmd.spawn.position.x = -450.0f + 900.0f * (float)(i % side) / (float)side;
    cmd.spawn.position.y = -450.0f + 900.0f * (float)(i / side) / (float)side;
    if (steerd_client_send(c, &cmd, NULL) != 0)
      return -1;
    if (wait_acks && i % 500 == 499) {
      steerd_client_service(c, 20);
      if (also)
        watcher_service(also);
    }
  }
  return 0;
}

/* spawnburst: spawner k's n agents, at once, on a grid of its own square of the world. */
static int spawn_share(steerd_client *c, int k, int n) {
  proto_command cmd;
  memset(&cmd, 0, sizeof(cmd));
  cmd.type = PROTO_MSG_SPAWN;
  cmd.spawn.model = STEER_MODEL_KINEMATIC;
  cmd.spawn.present = PROTO_SPAWN_BEHAVIOUR;
  cmd.spawn.behaviour.kind = STEER_BEHAVIOUR_WANDER;
  int cols = 1;
  while (cols * cols < o.spawners)
    cols++;
  int side = 1;
  while (side * side < n)
    side++;
  float cell = 900.0f / (float)cols;
  for (int i = 0; i < n; i++) {
    cmd.spawn.position.x = -450.0f + cell * ((float)(k % cols) + (float)(i % side) / (float)side);
    cmd.spawn.position.y = -450.0f + cell * ((float)(k / cols) + (float)(i / side) / (float)side);
    if (steerd_client_send(c, &cmd, NULL) != 0)
      return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  parse(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  int burst = !strcmp(o.attack, "burst"), sb = !strcmp(o.attack, "spawnburst"),
      mf = !strcmp(o.attack, "mapflood");
  int big = !strcmp(o.attack, "bigworld") || sb; /* sb: the idle clients live in a child too */
  int nsp = sb ? o.spawners : 0;
  char max_agents[32], max_clients[32];
  snprintf(max_agents, sizeof(max_agents), "%d", o.agents + 1000);
  snprintf(max_clients, sizeof(max_clients), "%d", o.clients + nsp + 32);
  const char *args_plain[26] = {"--no-demo", "--max-agents", "2000", "--http-port", "auto", NULL};
  if (mf) { /* the admin is anonymous; --server-arg: as an operator tunes it */
    int n = 5;
    args_plain[n++] = "--anonymous-role";
    args_plain[n++] = "admin";
    args_plain[n++] = "--rate-limit";
    args_plain[n++] = "1000000";
    args_plain[n++] = "--rate-burst";
    args_plain[n++] = "1000000";
    for (int i = 0; i < o.server_argc && n < 25; i++)
      args_plain[n++] = o.server_args[i];
    args_plain[n] = NULL;
  }
  const char *args_big[42] = {"--no-demo", "--max-agents",
                              max_agents,  "--max-clients",
                              max_clients, "--rate-limit",
                              "1000000",   "--rate-burst",
                              "1000000",   "--max-agents-per-client",
                              max_agents,  "--http-port",
                              "auto",      NULL};
  char state[] = "/tmp/steerd-abuse-state-XXXXXX";
  if (sb) { /* an empty world; the burst fills it */
    int n = 13;
    args_big[n++] = "--max-pending";
    args_big[n++] = "256";
    for (int i = 0; i < o.server_argc; i++)
      args_big[n++] = o.server_args[i];
    args_big[n] = NULL;
  } else if (big) { /* the world, made with the core: not measured */
    int fd = mkstemp(state);
    if (fd < 0 || (close(fd), steerd_test_write_state(state, (uint32_t)o.agents, 0, NULL)) != 0) {
      fprintf(stderr, "abuse: cannot write the state file %s\n", state);
      return 1;
    }
    int n = 13;
    args_big[n++] = "--state";
    args_big[n++] = state;
    args_big[n++] = "--checkpoint-interval";
    args_big[n++] = "0";
    for (int i = 0; i < o.server_argc; i++)
      args_big[n++] = o.server_args[i];
    args_big[n] = NULL;
  }
  int started = steerd_proc_start(&srv, o.binary, burst || big ? args_big : args_plain, 30000);
  if (big && !sb)
    unlink(state); /* the server has read it (and writes a new one at exit, removed below) */
  if (started != 0) {
    fprintf(stderr, "abuse: the server did not start\n");
    return 1;
  }
  if (enet_initialize() != 0)
    return 1;

  watcher obs, *cl = calloc(MAX_CLIENTS, sizeof(watcher));
  watcher_start(&obs, "observer", 1, (uint32_t)o.agents + 1000);
  watcher spawner;
  memset(&spawner, 0, sizeof(spawner));
  if (burst || (big && !sb) || mf)
    watcher_start(&spawner, mf ? "admin" : "spawner", 1, 16);
  if (mf) {
    spawner.edit_sent_ms = calloc((size_t)o.edits + 2u, sizeof(uint64_t));
    spawner.edit_latency_ms = calloc((size_t)o.edits + 2u, sizeof(uint64_t));
  }
  watcher *sp = calloc(MAX_CLIENTS, sizeof(watcher));
  for (int i = 0; i < nsp; i++)
    watcher_start(&sp[i], "spawner", 1, 16);
  uint64_t t0 = steerd_proc_now_ms();
  while (steerd_proc_now_ms() - t0 < 3000) {
    watcher_service(&obs);
    watcher_service(&spawner);
    for (int i = 0; i < nsp; i++)
      watcher_service(&sp[i]);
    steerd_proc_sleep_ms(2);
  }
  if (steerd_client_get_state(obs.c) != STEERD_CLIENT_WELCOMED) {
    fprintf(stderr, "abuse: the observer did not connect\n");
    stop_server();
    return 1;
  }
  if (big && !sb && o.view_radius > 0.0f) {
    proto_command v;
    memset(&v, 0, sizeof(v));
    v.type = PROTO_MSG_VIEW;
    v.view.kind = PROTO_VIEW_CENTRE;
    v.view.centre = proto_v2(0.0f, 0.0f);
    v.view.radius = o.view_radius;
    steerd_client_send(obs.c, &v, NULL);
  }
  /* bigworld: the full-snapshot clients live in a child process, so that
   * what they cost the server is measured, not what they cost this process. */
  int kid_pipe[2] = {-1, -1};
  pid_t kid = -1;
  if (big && o.clients > 0) {
    if (pipe(kid_pipe) != 0 || (kid = fork()) < 0) {
      fprintf(stderr, "abuse: cannot fork the clients' process\n");
      stop_server();
      unlink(state);
      return 1;
    }
    if (kid == 0) {
      close(kid_pipe[0]);
      _exit(big_clients(cl, kid_pipe[1]));
    }
    close(kid_pipe[1]);
  }
  if (burst || big) {
    for (int i = 0; i < (big ? 0 : o.clients); i++)
      watcher_start(&cl[i], "client", !(o.full || big), (uint32_t)o.agents + 1000);
    uint64_t e = steerd_proc_now_ms() + 5000;
    while (steerd_proc_now_ms() < e) {
      for (int i = 0; i < (big ? 0 : o.clients); i++)
        watcher_service(&cl[i]);
      for (int i = 0; i < nsp; i++)
        watcher_service(&sp[i]);
      watcher_service(&obs);
      watcher_service(&spawner);
      steerd_proc_sleep_ms(1);
    }
  }
  double rss_before = rss_mb(), rss_max = rss_before;
  tick_times ticks0, ticks1;
  int have_ticks = read_tick_times(&ticks0);
  int clients_up = 0;
  for (int i = 0; i < (big ? 0 : o.clients); i++)
    clients_up += steerd_client_get_state(cl[i].c) == STEERD_CLIENT_WELCOMED;

  /* The attack. */
  uint64_t per_second[MAX_SECONDS];
  memset(per_second, 0, sizeof(per_second));
  probe pr;
  memset(&pr, 0, sizeof(pr));
  int probes = 0, probes_ok = 0;
  int flood = !strcmp(o.attack, "flood"), half = !strcmp(o.attack, "halfopen"),
      nohello = !strcmp(o.attack, "nohello");
  if (!flood && !half && !nohello && !burst && !big && !mf)
    usage();
  int spawners_up = 0;
  for (int i = 0; i < nsp; i++)
    spawners_up += steerd_client_get_state(sp[i].c) == STEERD_CLIENT_WELCOMED;
  uint64_t start = steerd_proc_now_ms(), last_frames = obs.frames, last_read = start;
  double cpu0 = steerd_proc_cpu_seconds(&srv);
  int second = 0;
  double owed = 0.0;
  uint64_t last_send = start;
  if (burst)
    spawn_agents(spawner.c, o.agents, 0, NULL);
  for (int i = 0; i < nsp; i++)
    spawn_share(sp[i].c, i, o.agents / nsp + (i < o.agents % nsp));
  for (int i = 0; mf && i < o.inflight; i++)
    send_edit(&spawner);
  while (second < o.seconds) {
    uint64_t now = steerd_proc_now_ms();
    if (flood || half || nohello) {
      for (int i = 0; i < o.peers; i++) {
        attacker *a = &att[i];
        int renew = !a->host || (o.reconnect > 0 && now - a->since_ms >= (uint64_t)o.reconnect * 1000u);
        if (nohello && a->host && attacker_pump(a) < 0)
          renew = 1;
        if (renew) {
          if (half)
            attacker_open(a); /* CONNECT, never serviced: never completed */
          else
            attacker_connect(a, flood && o.hello);
        }
      }
    }
    if (flood) {
      owed += (double)(now - last_send) * o.rate / 1000.0;
      last_send = now;
      if (owed > o.rate / 10.0)
        owed = o.rate / 10.0;
      proto_command cmd;
      memset(&cmd, 0, sizeof(cmd));
      cmd.type = PROTO_MSG_PING;
      for (; owed >= 1.0; owed -= 1.0)
        for (int i = 0; i < o.peers; i++)
          if (att[i].connected)
            send_cmd(&att[i], &cmd, o.reliable);
      for (int i = 0; i < o.peers; i++)
        if (att[i].host)
          enet_host_flush(att[i].host);
      if (o.reliable && now - last_read >= 1000) { /* reads once a second */
        for (int i = 0; i < o.peers; i++)
          attacker_pump(&att[i]);
        last_read = now;
      }
    }
    watcher_service(&obs);
    watcher_service(&spawner);
    for (int i = 0; i < (big ? 0 : o.clients); i++)
      watcher_service(&cl[i]);
    for (int i = 0; i < nsp; i++)
      watcher_service(&sp[i]);
    /* One fresh client a second: does it get in? */
    if (!pr.active && now - start >= (uint64_t)probes * 1000u) {
      watcher_start(&pr.w, "probe", 1, 16);
      pr.active = 1;
      pr.started_ms = now;
      probes++;
    } else if (pr.active) {
      watcher_service(&pr.w);
      steerd_client_state st = steerd_client_get_state(pr.w.c);
      if (st == STEERD_CLIENT_WELCOMED || pr.w.gone || now - pr.started_ms > 5000) {
        probes_ok += st == STEERD_CLIENT_WELCOMED;
        steerd_client_destroy(pr.w.c);
        pr.active = 0;
      }
    }
    double r = rss_mb();
    if (r > rss_max)
      rss_max = r;
    if (now - start >= (uint64_t)(second + 1) * 1000u) {
      per_second[second++] = obs.frames - last_frames;
      last_frames = obs.frames;
    }
    usleep(flood ? 200 : 1000);
  }
  double cpu_attack = steerd_proc_cpu_seconds(&srv) - cpu0,
         wall_attack = (double)(steerd_proc_now_ms() - start) / 1000.0;
  for (int i = 0; i < o.peers; i++)
    attacker_close(&att[i]);
  if (pr.active) { /* the last try counts only if it got in */
    if (steerd_client_get_state(pr.w.c) == STEERD_CLIENT_WELCOMED)
      probes_ok++;
    else
      probes--;
    steerd_client_destroy(pr.w.c);
  }
  int still = 0;
  for (int i = 0; i < (big ? 0 : o.clients); i++) {
    still += !cl[i].gone && steerd_client_get_state(cl[i].c) == STEERD_CLIENT_WELCOMED;
  }
  if (kid > 0) { /* the child's counts: up after settling, up at the end, frames during the attack */
    unsigned long long frames = 0;
    FILE *f = fdopen(kid_pipe[0], "r");
    if (!f || fscanf(f, "%d %d %llu", &clients_up, &still, &frames) != 3)
      clients_up = still = -1;
    if (f)
      fclose(f);
    waitpid(kid, NULL, 0);
    fprintf(stderr, "abuse: the full-snapshot clients got %llu complete snapshots in %d s\n", frames,
            o.seconds);
  }
  uint64_t e = steerd_proc_now_ms() + 2000;
  while (steerd_proc_now_ms() < e) {
    watcher_service(&obs);
    for (int i = 0; i < nsp; i++)
      watcher_service(&sp[i]);
    for (int i = 0; i < (big ? 0 : o.clients); i++)
      watcher_service(&cl[i]);
    steerd_proc_sleep_ms(2);
  }
  double rss_after = rss_mb();
  have_ticks = have_ticks && read_tick_times(&ticks1);
  int obs_up = !obs.gone && steerd_client_get_state(obs.c) == STEERD_CLIENT_WELCOMED;
  long skipped = stop_server();
  if (big && !sb)
    unlink(state); /* the shutdown checkpoint */
  fprintf(stderr, "abuse: observer frames in each second:");
  for (int i = 0; i < o.seconds; i++)
    fprintf(stderr, " %llu", (unsigned long long)per_second[i]);
  fprintf(stderr, "\n");
  qsort(per_second, (size_t)o.seconds, sizeof(per_second[0]), bench_cmp_u64);
  steerd_client_welcome(obs.c);
  char step_txt[32] = "?", late_txt[32] = "?";
  if (have_ticks) {
    p999(&ticks0.step, &ticks1.step, step_txt, sizeof step_txt);
    p999(&ticks0.late, &ticks1.late, late_txt, sizeof late_txt);
  }
  printf("| attack | server | observer frames/s min / median | ticks skipped | tick p99.9 ms step / late | "
         "RSS MB before / max / after | fresh client connected | clients connected after | server log |\n");
  printf("|---|---|---|---:|---|---|---|---|---:|\n");
  char clients_txt[64] = "observer only";
  if (o.clients)
    snprintf(clients_txt, sizeof(clients_txt), "%d of %d", still, clients_up);
  printf("| %s %s | %s | %llu / %llu | %ld | %s / %s | %.1f / %.1f / %.1f | %d of %d | %s%s | %.1f KB |\n",
         o.attack, o.label, o.binary, (unsigned long long)per_second[0],
         (unsigned long long)per_second[o.seconds / 2], skipped, step_txt, late_txt, rss_before, rss_max,
         rss_after, probes_ok, probes, clients_txt, obs_up ? "" : " (observer dropped)",
         (double)log_bytes / 1024.0);
  printf("(attack packets sent %llu, connects %llu; server CPU during the attack %.0f %% of a core)\n",
         (unsigned long long)sent_total, (unsigned long long)connects_total,
         100.0 * cpu_attack / wall_attack);
  if (sb) {
    uint64_t spawned = 0, despawned = 0, errors = 0, last = 0;
    int sp_still = 0;
    for (int i = 0; i < nsp; i++) {
      spawned += sp[i].spawn_acks;
      despawned += sp[i].despawn_acks;
      errors += sp[i].errors;
      if (sp[i].last_ack_ms > last)
        last = sp[i].last_ack_ms;
      sp_still += !sp[i].gone && steerd_client_get_state(sp[i].c) == STEERD_CLIENT_WELCOMED;
    }
    printf("(spawnburst: %llu of %d SPAWNs and %llu DESPAWNs ACKed, %llu ERRORs, last ACK %lld ms after the "
           "burst began; spawners connected after %d of %d)\n",
           (unsigned long long)spawned, o.agents, (unsigned long long)despawned, (unsigned long long)errors,
           last ? (long long)(last - start) : -1LL, sp_still, spawners_up);
  }
  if (mf) {
    uint32_t n = spawner.edit_acks;
    qsort(spawner.edit_latency_ms, n, sizeof(uint64_t), bench_cmp_u64);
    printf("(mapflood: %u of %d ADD_OBSTACLEs ACKed, %u ERRORs, %d in flight; ACK latency ms p50 %llu / p99 "
           "%llu / "
           "max %llu; last ACK %lld ms after the flood began)\n",
           n, o.edits, spawner.errors, o.inflight,
           n ? (unsigned long long)spawner.edit_latency_ms[n / 2] : 0ull,
           n ? (unsigned long long)spawner.edit_latency_ms[(n * 99u) / 100u] : 0ull,
           n ? (unsigned long long)spawner.edit_latency_ms[n - 1] : 0ull,
           spawner.last_ack_ms ? (long long)(spawner.last_ack_ms - start) : -1LL);
    free(spawner.edit_sent_ms);
    free(spawner.edit_latency_ms);
  }
  for (int i = 0; i < nsp; i++)
    steerd_client_destroy(sp[i].c);
  free(sp);
  for (int i = 0; i < (big ? 0 : o.clients); i++)
    steerd_client_destroy(cl[i].c);
  steerd_client_destroy(obs.c);
  steerd_client_destroy(spawner.c);
  free(cl);
  enet_deinitialize();
  return 0;
}

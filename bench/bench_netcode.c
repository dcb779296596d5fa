/* bench_netcode.c: delta snapshots measured through the real server, the
 * client library and (for loss) the impairment proxy, on 127.0.0.1.
 *
 * A setup client spawns N agents in a square (a third patrolling loops, a
 * third wandering, a third pursuing another agent, as in the demo). Then:
 *
 *   quality   one delta client (view: everything) through steerd-impair at a
 *             given loss, and one full-snapshot client connected directly as
 *             the truth. For every tick the truth client got, the delta
 *             client's estimate is its newest complete frame at or before that
 *             tick, extrapolated with its velocity: mean and 99th-percentile
 *             position error; kbit/s and bytes per agent per snapshot.
 *   cpu       K delta clients viewing everything: server CPU per client per
 *             snapshot (CPU with them minus CPU without, over K x snapshots).
 *   capacity  C delta clients, each viewing a circle that holds about 100
 *             agents: server CPU share and the snapshot rate they get.
 *
 * usage: bench_netcode [--binary PATH] [--impair PATH] [--agents N] [--seconds S]
 *                      [--loss P] [--latency MS] [--jitter MS] [--cpu-clients K]
 *                      [--clients C] [--only quality|cpu|capacity] */
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"
#include "steerd_proc.h"

extern char **environ;

#define SNAPSHOT_RATE 20
#define MAX_FRAMES    2048

typedef struct frame_rec {
  uint64_t tick, time_us;
  uint32_t count;
  proto_pose *poses;
} frame_rec;

typedef struct history {
  frame_rec *frames;
  uint32_t n, cap, max_agents;
} history;

static void on_frame(void *user, const steerd_client_frame *f) {
  history *h = user;
  if (!h || h->n >= h->cap)
    return;
  frame_rec *r = &h->frames[h->n++];
  r->tick = f->tick;
  r->time_us = f->server_time_us;
  r->count = f->count < h->max_agents ? f->count : h->max_agents;
  memcpy(r->poses, f->poses, r->count * sizeof *f->poses);
}

static history *history_new(uint32_t cap, uint32_t agents) {
  history *h = calloc(1, sizeof *h);
  h->frames = calloc(cap, sizeof *h->frames);
  h->cap = cap;
  h->max_agents = agents;
  for (uint32_t i = 0; i < cap; i++)
    h->frames[i].poses = calloc(agents, sizeof(proto_pose));
  return h;
}

static void history_free(history *h) {
  for (uint32_t i = 0; i < h->cap; i++)
    free(h->frames[i].poses);
  free(h->frames);
  free(h);
}

static steerd_client *make_client(const char *name, int delta, uint32_t max_agents, history *h) {
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = name;
  cfg.max_agents = max_agents;
  cfg.snapshots = delta ? PROTO_SNAPSHOTS_DELTA : PROTO_SNAPSHOTS_FULL;
  cfg.callbacks.on_snapshot_frame = on_frame;
  cfg.user = h;
  cfg.connect_timeout_ms = 10000;
  return steerd_client_create(&cfg);
}

static int cmd_wait(steerd_client *c, proto_command *cmd, steer_id *agent) {
  proto_server_msg reply;
  int rc = steerd_client_command_wait(c, cmd, 5000, &reply);
  if (rc != 0) {
    fprintf(stderr, "bench_netcode: command %u failed: %s\n", cmd->type, steerd_client_strerror(rc));
    return -1;
  }
  if (agent)
    *agent = reply.ack.agent;
  return 0;
}

static double rnd01(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*s >> 11) / 9007199254740992.0;
}

/* N agents in a square of side `side` m: patrol loops, wanderers, pursuers. */
static int populate(uint16_t port, uint32_t n, float side) {
  steerd_client *c = make_client("setup", 0, 16, NULL);
  if (!c || steerd_client_connect(c, "127.0.0.1", port) != 0)
    return -1;
  uint64_t s = 12345;
  steer_id prev = 0;
  for (uint32_t i = 0; i < n; i++) {
    proto_command cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.type = PROTO_MSG_SPAWN;
    proto_spawn *sp = &cmd.spawn;
    sp->model = STEER_MODEL_DYNAMIC;
    sp->position = v2((float)(rnd01(&s) - 0.5) * side, (float)(rnd01(&s) - 0.5) * side);
    sp->present = PROTO_SPAWN_LIMITS | PROTO_SPAWN_BEHAVIOUR;
    sp->limits.present = PROTO_LIMIT_MAX_SPEED;
    sp->limits.v.max_speed = (float)(1.0 + 2.0 * rnd01(&s));
    sp->behaviour.kind = STEER_BEHAVIOUR_WANDER;
    uint32_t kind = i % 3;
    if (kind == 0) { /* patrol: a loop of 4 points around the spawn point */
      sp->present |= PROTO_SPAWN_PATH;
      proto_path *p = &sp->path;
      p->count = 4;
      p->radius = 1.0f;
      p->mode = STEER_PATH_LOOP;
      p->cornering = STEER_CORNER_NONE;
      float r = (float)(5.0 + 10.0 * rnd01(&s));
      for (uint32_t k = 0; k < 4; k++) {
        float x = sp->position.x + (k == 1 || k == 2 ? r : 0.0f), y = sp->position.y + (k >= 2 ? r : 0.0f);
        p->points[k] = v2(fminf(fmaxf(x, -side / 2), side / 2), fminf(fmaxf(y, -side / 2), side / 2));
      }
    } else if (kind == 2 && prev) { /* pursue the agent spawned before */
      sp->behaviour.kind = STEER_BEHAVIOUR_PURSUE;
      sp->behaviour.present = PROTO_BHV_TARGET_AGENT;
      sp->behaviour.target_agent = prev;
    }
    steer_id id;
    if (cmd_wait(c, &cmd, &id) != 0)
      return -1;
    prev = id;
  }
  steerd_client_disconnect(c, 1000);
  steerd_client_destroy(c);
  return 0;
}

static uint16_t free_udp_port(void) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  uint16_t port = 0;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

static pid_t start_proxy(const char *impair, uint16_t listen, uint16_t upstream, double loss,
                         uint32_t latency, uint32_t jitter) {
  char l[16], u[16], p[32], lat[16], jit[16];
  snprintf(l, sizeof l, "%u", listen);
  snprintf(u, sizeof u, "%u", upstream);
  snprintf(p, sizeof p, "%g", loss);
  snprintf(lat, sizeof lat, "%u", latency);
  snprintf(jit, sizeof jit, "%u", jitter);
  char *argv[] = {(char *)impair, "--listen", l,          "--upstream", u,         "--loss", p,
                  "--latency",    lat,        "--jitter", jit,          "--stats", "0",      NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", 0, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 0, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, impair, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    return -1;
  steerd_proc_sleep_ms(300);
  return pid;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int cmp_pose(const void *a, const void *b) {
  steer_id x = ((const proto_pose *)a)->id, y = ((const proto_pose *)b)->id;
  return x < y ? -1 : x > y;
}

/* ---- quality ---------------------------------------------------------------- */

static void quality(uint16_t port, const char *impair, uint32_t agents, uint32_t seconds, double loss,
                    uint32_t latency, uint32_t jitter) {
  uint32_t frames = seconds * SNAPSHOT_RATE + 200;
  history *truth = history_new(frames, agents + 64), *est = history_new(frames, agents + 64);
  steerd_client *tc = make_client("truth", 0, agents + 64, truth);
  steerd_client *dc = make_client("delta", 1, agents + 64, est);
  uint16_t via = port;
  pid_t proxy = -1;
  if (loss > 0 || latency > 0) {
    via = free_udp_port();
    proxy = start_proxy(impair, via, port, loss, latency, jitter);
    if (proxy < 0) {
      fprintf(stderr, "bench_netcode: cannot start %s\n", impair);
      return;
    }
  }
  if (steerd_client_connect(tc, "127.0.0.1", port) != 0 || steerd_client_connect(dc, "127.0.0.1", via) != 0) {
    fprintf(stderr, "bench_netcode: connect failed\n");
    return;
  }
  /* Warm up: the delta client learns every agent. */
  uint64_t end = steerd_proc_now_ms() + 3000;
  while (steerd_proc_now_ms() < end) {
    steerd_client_service(tc, 1);
    steerd_client_service(dc, 1);
  }
  truth->n = est->n = 0;
  steerd_client_stats s0;
  steerd_client_get_stats(dc, &s0);
  uint64_t t0 = steerd_proc_now_ms();
  end = t0 + (uint64_t)seconds * 1000u;
  while (steerd_proc_now_ms() < end) {
    steerd_client_service(tc, 1);
    steerd_client_service(dc, 1);
  }
  double secs = (double)(steerd_proc_now_ms() - t0) / 1000.0;
  steerd_client_stats s1;
  steerd_client_get_stats(dc, &s1);
  /* Errors: each truth tick against the newest delta frame at or before it. */
  for (uint32_t i = 0; i < est->n; i++)
    qsort(est->frames[i].poses, est->frames[i].count, sizeof(proto_pose), cmp_pose);
  size_t cap = (size_t)truth->n * (agents + 64), ne = 0, missing = 0;
  double *err = malloc(cap * sizeof *err), sum = 0;
  uint32_t j = 0;
  for (uint32_t i = 0; i < truth->n; i++) {
    const frame_rec *t = &truth->frames[i];
    while (j + 1 < est->n && est->frames[j + 1].tick <= t->tick)
      j++;
    if (est->n == 0 || est->frames[j].tick > t->tick)
      continue;
    const frame_rec *e = &est->frames[j];
    double dt = ((double)t->time_us - (double)e->time_us) / 1e6;
    for (uint32_t k = 0; k < t->count; k++) {
      proto_pose key = {.id = t->poses[k].id};
      const proto_pose *p = bsearch(&key, e->poses, e->count, sizeof *p, cmp_pose);
      if (!p) {
        missing++;
        continue;
      }
      double ex = p->x + p->vx * dt - t->poses[k].x, ey = p->y + p->vy * dt - t->poses[k].y;
      err[ne] = sqrt(ex * ex + ey * ey);
      sum += err[ne++];
    }
  }
  qsort(err, ne, sizeof *err, cmp_double);
  double bytes = (double)(s1.snapshot_bytes - s0.snapshot_bytes);
  double nframes = (double)(s1.frames_complete - s0.frames_complete);
  double snaps = secs * SNAPSHOT_RATE;
  printf("| %.0f %% | %u/%u ms | %.1f | %.2f | %.0f | %.2f | %.2f | %.2f | %zu |\n", loss * 100, latency,
         jitter, bytes * 8 / secs / 1000, bytes / snaps / agents, nframes / snaps * 100,
         ne ? sum / (double)ne * 100 : 0, ne ? err[(size_t)((double)ne * 0.99)] * 100 : 0,
         ne ? err[ne - 1] * 100 : 0, missing);
  fflush(stdout);
  free(err);
  steerd_client_destroy(tc);
  steerd_client_destroy(dc);
  if (proxy > 0) {
    kill(proxy, SIGTERM);
    waitpid(proxy, NULL, 0);
  }
  history_free(truth);
  history_free(est);
}

/* ---- CPU and capacity ---------------------------------------------------------- */

/* Runs `n` delta clients for `seconds` (views set by view_radius: 0 = all);
 * returns server CPU seconds used meanwhile and the frames they got. */
static double run_clients(const steerd_proc *srv, uint16_t port, uint32_t n, float side, float view_radius,
                          uint32_t seconds, uint64_t *frames_out, uint32_t max_agents) {
  steerd_client **cl = calloc(n, sizeof *cl);
  uint64_t s = 777;
  uint32_t ok = 0;
  for (uint32_t i = 0; i < n; i++) {
    cl[i] = make_client("load", 1, max_agents, NULL);
    if (!cl[i] || steerd_client_connect_start(cl[i], "127.0.0.1", port) != 0)
      continue;
  }
  uint64_t end = steerd_proc_now_ms() + 10000;
  while (steerd_proc_now_ms() < end) {
    ok = 0;
    for (uint32_t i = 0; i < n; i++) {
      steerd_client_service(cl[i], 0);
      ok += steerd_client_get_state(cl[i]) == STEERD_CLIENT_WELCOMED;
    }
    if (ok == n)
      break;
    steerd_proc_sleep_ms(1);
  }
  if (view_radius > 0)
    for (uint32_t i = 0; i < n; i++) {
      proto_command cmd;
      memset(&cmd, 0, sizeof cmd);
      cmd.type = PROTO_MSG_VIEW;
      cmd.view.kind = PROTO_VIEW_CENTRE;
      float half = side / 2 - view_radius;
      cmd.view.centre = v2((float)(rnd01(&s) * 2 - 1) * half, (float)(rnd01(&s) * 2 - 1) * half);
      cmd.view.radius = view_radius;
      steerd_client_send(cl[i], &cmd, NULL);
    }
  /* Settle (every client learns its agents), then measure. */
  end = steerd_proc_now_ms() + 3000;
  while (steerd_proc_now_ms() < end)
    for (uint32_t i = 0; i < n; i++)
      steerd_client_service(cl[i], 0);
  uint64_t f0 = 0, f1 = 0;
  steerd_client_stats st;
  for (uint32_t i = 0; i < n; i++) {
    steerd_client_get_stats(cl[i], &st);
    f0 += st.frames_complete;
  }
  double cpu0 = steerd_proc_cpu_seconds(srv);
  end = steerd_proc_now_ms() + (uint64_t)seconds * 1000u;
  while (steerd_proc_now_ms() < end)
    for (uint32_t i = 0; i < n; i++)
      steerd_client_service(cl[i], 0);
  double cpu1 = steerd_proc_cpu_seconds(srv);
  for (uint32_t i = 0; i < n; i++) {
    steerd_client_get_stats(cl[i], &st);
    f1 += st.frames_complete;
    steerd_client_destroy(cl[i]);
  }
  free(cl);
  *frames_out = f1 - f0;
  (void)ok;
  return cpu1 - cpu0;
}

int main(int argc, char **argv) {
  const char *binary = STEERD_BINARY, *impair = STEERD_IMPAIR, *only = "";
  uint32_t agents = 1000, seconds = 10, latency = 0, jitter = 0, cpu_clients = 20, clients = 1000;
  double loss = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--binary"))
      binary = argv[i + 1];
    else if (!strcmp(argv[i], "--impair"))
      impair = argv[i + 1];
    else if (!strcmp(argv[i], "--agents"))
      agents = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds"))
      seconds = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--loss"))
      loss = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--latency"))
      latency = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--jitter"))
      jitter = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--cpu-clients"))
      cpu_clients = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--clients"))
      clients = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--only"))
      only = argv[i + 1];
  }
  float side = sqrtf((float)agents / 0.025f); /* 0.025 agents per m^2 */
  float radius_100 = sqrtf(100.0f / (0.025f * 3.14159265f));
  char maxc[16];
  snprintf(maxc, sizeof maxc, "%u", clients + cpu_clients + 8);
  const char *args[] = {"--no-demo", "--rate-limit",    "1000000", "--rate-burst",
                        "1000000",   "--max-clients",   maxc,      "--client-timeout",
                        "10000",     "--hello-timeout", "20000",   NULL};
  steerd_proc srv;
  if (steerd_proc_start(&srv, binary, args, 5000) != 0) {
    fprintf(stderr, "bench_netcode: the server did not start\n");
    return 1;
  }
  if (populate(srv.port, agents, side) != 0)
    return 1;
  printf("%u agents (patrol, wander, pursue) in a %.0f m square, %d snapshots/s\n\n", agents, side,
         SNAPSHOT_RATE);
  if (!*only || !strcmp(only, "quality")) {
    printf(
        "| loss | latency/jitter | kbit/s | bytes/agent/snapshot | frames rebuilt %% | mean error cm | p99 "
        "cm | max cm | unknown agent-samples |\n|---|---|---|---|---|---|---|---|---|\n");
    if (loss >= 0) {
      quality(srv.port, impair, agents, seconds, loss, latency, jitter);
    } else {
      quality(srv.port, impair, agents, seconds, 0, 0, 0);
      quality(srv.port, impair, agents, seconds, 0.05, 0, 0);
      quality(srv.port, impair, agents, seconds, 0.05, 50, 10);
    }
  }
  if (!*only || !strcmp(only, "cpu")) {
    uint64_t frames;
    double base = run_clients(&srv, srv.port, 0, side, 0, seconds, &frames, 16);
    double cpu = run_clients(&srv, srv.port, cpu_clients, side, 0, seconds, &frames, agents + 64);
    printf(
        "\ncpu: %u clients viewing all %u agents: server CPU %.1f%% (idle world %.1f%%), %.1f us per client "
        "per snapshot, %.1f frames/s per client\n",
        cpu_clients, agents, cpu / seconds * 100, base / seconds * 100,
        (cpu - base) / ((double)cpu_clients * seconds * SNAPSHOT_RATE) * 1e6,
        (double)frames / cpu_clients / seconds);
  }
  if (!*only || !strcmp(only, "capacity")) {
    uint64_t frames;
    double base = run_clients(&srv, srv.port, 0, side, 0, seconds, &frames, 16);
    double cpu = run_clients(&srv, srv.port, clients, side, radius_100, seconds, &frames, 512);
    double per = (cpu - base) / ((double)clients * seconds * SNAPSHOT_RATE);
    printf("\ncapacity: %u clients, each viewing a %.1f m circle (~100 agents): server CPU %.1f%% of a core "
           "(idle "
           "world %.1f%%), %.1f us per client per snapshot, %.1f frames/s per client; one core would serve "
           "about "
           "%.0f such clients\n",
           clients, radius_100, cpu / seconds * 100, base / seconds * 100, per * 1e6,
           (double)frames / clients / seconds, (1.0 - base / seconds) / (per * SNAPSHOT_RATE));
  }
  steerd_proc_stop(&srv, 3000);
  return 0;
}

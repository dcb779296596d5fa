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
 *             agents, in W forked worker processes that sleep in epoll (the
 *             server pinned to the last CPU, the workers to the others, unless
 *             --pin 0): the server's CPU share (/proc), the frames each client
 *             rebuilt per second (median, 5th percentile), kbit/s per client,
 *             and UDP receive-buffer drops (server socket, client sockets);
 *             from the server's /metrics, the loop thread's time per snapshot
 *             for the delta clients (choosing, encoding on --threads, sending;
 *             from 1.5 s before the window to its end) and its share of one
 *             core's time between snapshots.
 *
 * --threads T is passed to the server (its steering pass and delta encoding
 * threads; not given: the server's default, one per core). With T > 1 and
 * pinning, only the client workers are pinned (to the CPUs but the last); the
 * server may use every CPU.
 *
 * usage: bench_netcode [--binary PATH] [--impair PATH] [--agents N] [--seconds S]
 *                      [--loss P] [--latency MS] [--jitter MS] [--cpu-clients K]
 *                      [--clients C] [--workers W] [--pin 0|1] [--threads T]
 *                      [--only quality|cpu|capacity] */
#define _GNU_SOURCE /* sched_setaffinity */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "client.h"
#include "http_get.h"
#include "interp.h"
#include "mixed_world.h"
#include "steerd_proc.h"
#include "udp_stats.h"

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
  steerd_interp *it; /* also interpolated (the quality run's delta client), or NULL */
} history;

static void on_frame(void *user, const steerd_client_frame *f) {
  history *h = user;
  if (h && h->it)
    steerd_interp_push(h->it, steerd_client_now_us(), f->tick, f->server_time_us, f->poses, f->count, 1);
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

static int cmd_wait(steerd_client *c, proto_command *cmd, proto_id *agent) {
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

/* N agents in a square of side `side` m: the benchmark's world (tests/support/mixed_world.h). */
static int populate(uint16_t port, uint32_t n, float side) {
  steerd_client *c = make_client("setup", 0, 16, NULL);
  if (!c || steerd_client_connect(c, "127.0.0.1", port) != 0)
    return -1;
  mixed_world m;
  mixed_world_init(&m, side, 12345);
  for (uint32_t i = 0; i < n; i++) {
    proto_command cmd;
    mixed_world_next(&m, &cmd);
    proto_id id;
    if (cmd_wait(c, &cmd, &id) != 0)
      return -1;
    mixed_world_spawned(&m, id);
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

static int cmp_pose(const void *a, const void *b) {
  proto_id x = ((const proto_pose *)a)->id, y = ((const proto_pose *)b)->id;
  return x < y ? -1 : x > y;
}

/* ---- quality ---------------------------------------------------------------- */

/* ---- no visible pop ------------------------------------------------------------- */

/* A rendered sample of an interpolated agent (60 Hz), linked to the same agent's sample in the previous
 * render. */
typedef struct render_rec {
  int64_t render_us;
  proto_id id;
  float x, y;
  size_t prev; /* 1 + index, 0: none */
} render_rec;

/* Agent id at server time t_us, linear between the truth frames around it. */
static int truth_at(const history *t, proto_id id, int64_t t_us, double *x, double *y) {
  uint32_t lo = 0, hi = t->n;
  while (lo < hi) { /* first frame with time > t_us */
    uint32_t mid = (lo + hi) / 2;
    if ((int64_t)t->frames[mid].time_us <= t_us)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0 || lo >= t->n)
    return -1;
  const frame_rec *a = &t->frames[lo - 1], *b = &t->frames[lo];
  proto_pose key = {.id = id};
  const proto_pose *pa = bsearch(&key, a->poses, a->count, sizeof key, cmp_pose);
  const proto_pose *pb = bsearch(&key, b->poses, b->count, sizeof key, cmp_pose);
  if (!pa || !pb || b->time_us <= a->time_us || b->time_us - a->time_us > 120000)
    return -1;
  double u = (double)(t_us - (int64_t)a->time_us) / (double)(b->time_us - a->time_us);
  *x = pa->x + u * (pb->x - pa->x);
  *y = pa->y + u * (pb->y - pa->y);
  return 0;
}

static void quality(uint16_t port, const char *impair, uint32_t agents, uint32_t seconds, double loss,
                    uint32_t latency, uint32_t jitter) {
  uint32_t frames = seconds * SNAPSHOT_RATE + 200;
  history *truth = history_new(frames, agents + 64), *est = history_new(frames, agents + 64);
  steerd_interp_config icfg = steerd_interp_default_config();
  icfg.max_agents = agents + 64;
  icfg.snapshot_interval_us = 1000000u / SNAPSHOT_RATE;
  est->it = steerd_interp_create(&icfg);
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
  /* Meanwhile a render loop at 60 Hz samples every agent the buffer holds. */
  size_t rcap = ((size_t)seconds * 60 + 120) * (agents + 64), nr = 0;
  render_rec *rr = malloc(rcap * sizeof *rr);
  size_t *last = calloc((size_t)agents + 64, sizeof *last);
  proto_id *last_id = calloc((size_t)agents + 64, sizeof *last_id);
  uint64_t next_render = steerd_client_now_us();
  while (steerd_proc_now_ms() < end) {
    steerd_client_service(tc, 1);
    steerd_client_service(dc, 1);
    uint64_t now = steerd_client_now_us();
    if (now < next_render)
      continue;
    next_render = now - next_render > 16667 ? now + 16667 : next_render + 16667;
    int64_t render;
    if (steerd_interp_advance(est->it, now, &render) != 0)
      continue;
    uint32_t n = steerd_interp_count(est->it);
    for (uint32_t i = 0; i < n && i < agents + 64 && nr < rcap; i++) {
      proto_id id = steerd_interp_id_at(est->it, i);
      steerd_interp_state st;
      if (steerd_interp_sample(est->it, id, &st) != 0)
        continue;
      uint32_t slot = id % (agents + 64); /* ids of one run are dense: a slot per agent, else no link */
      render_rec *r = &rr[nr++];
      r->render_us = render;
      r->id = id;
      r->x = (float)st.x;
      r->y = (float)st.y;
      r->prev = last[slot] && last_id[slot] == id && rr[last[slot] - 1].render_us < render ? last[slot] : 0;
      last[slot] = nr;
      last_id[slot] = id;
    }
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
  qsort(err, ne, sizeof *err, bench_cmp_double);
  /* No visible pop: each frame-to-frame jump of an interpolated agent moving at
   * least 2 cm per frame (1.2 m/s) against its true motion between the two
   * render times (the truth, linear between its frames). */
  for (uint32_t i = 0; i < truth->n; i++)
    qsort(truth->frames[i].poses, truth->frames[i].count, sizeof(proto_pose), cmp_pose);
  size_t pop_n = 0, pop_over = 0;
  double pop_max = 0;
  for (size_t i = 0; i < nr; i++) {
    if (!rr[i].prev)
      continue;
    const render_rec *a = &rr[rr[i].prev - 1], *b = &rr[i];
    double ax, ay, bx, by;
    if (truth_at(truth, b->id, a->render_us, &ax, &ay) != 0 ||
        truth_at(truth, b->id, b->render_us, &bx, &by) != 0)
      continue;
    double moved = hypot(bx - ax, by - ay), jump = hypot(b->x - a->x, b->y - a->y);
    if (moved < 0.02)
      continue;
    pop_n++;
    pop_over += jump > 2 * moved;
    if (jump / moved > pop_max)
      pop_max = jump / moved;
  }
  free(rr);
  free(last);
  free(last_id);
  double bytes = (double)(s1.snapshot_bytes - s0.snapshot_bytes);
  double nframes = (double)(s1.frames_complete - s0.frames_complete);
  double snaps = secs * SNAPSHOT_RATE;
  printf("| %.0f %% | %u/%u ms | %.1f | %.2f | %.0f | %.2f | %.2f | %.2f | %zu | %.2f | %.3f |\n", loss * 100,
         latency, jitter, bytes * 8 / secs / 1000, bytes / snaps / agents, nframes / snaps * 100,
         ne ? sum / (double)ne * 100 : 0, ne ? err[(size_t)((double)ne * 0.99)] * 100 : 0,
         ne ? err[ne - 1] * 100 : 0, missing, pop_max, pop_n ? (double)pop_over / (double)pop_n * 100 : 0);
  fflush(stdout);
  free(err);
  steerd_client_destroy(tc);
  steerd_client_destroy(dc);
  if (proxy > 0) {
    kill(proxy, SIGTERM);
    waitpid(proxy, NULL, 0);
  }
  steerd_interp_destroy(est->it);
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
      cmd.view.centre = proto_v2((float)(mixed_world_rnd01(&s) * 2 - 1) * half,
                                 (float)(mixed_world_rnd01(&s) * 2 - 1) * half);
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

/* ---- capacity ------------------------------------------------------------------ */

/* The clients run in forked worker processes, each with its own ENet hosts,
 * sleeping in epoll until a client's socket is readable (so the client side
 * costs only what it does and the server keeps a core of the 2); results come
 * back through pipes. A client keeps no frames: the library rebuilds each one
 * (and acknowledges it), the worker only counts them. */

typedef struct cap_client {
  uint16_t port; /* the client's UDP port */
  uint8_t welcomed;
  uint64_t frames, bytes, incomplete, no_base; /* over the window */
} cap_client;

typedef struct cap_worker {
  pid_t pid;
  int to, from; /* pipes: parent -> worker, worker -> parent */
  uint32_t first, n;
  cap_client *cl;
} cap_worker;

static int write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t k = write(fd, p, len);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

static int read_all(int fd, void *buf, size_t len) {
  char *p = buf;
  while (len > 0) {
    ssize_t k = read(fd, p, len);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

/* Services the clients whose sockets are readable until `until` (ms); every
 * client at least every 100 ms (ENet's pings, resends and timeouts). */
static void cap_pump(int ep, steerd_client **cl, uint32_t n, uint64_t until) {
  struct epoll_event evs[256];
  uint64_t sweep = steerd_proc_now_ms() + 100;
  for (uint64_t now = steerd_proc_now_ms(); now < until; now = steerd_proc_now_ms()) {
    uint64_t next = sweep < until ? sweep : until;
    int k = epoll_wait(ep, evs, 256, next > now ? (int)(next - now) : 0);
    for (int i = 0; i < k; i++)
      steerd_client_service(cl[evs[i].data.u32], 0);
    if (steerd_proc_now_ms() >= sweep) {
      for (uint32_t i = 0; i < n; i++)
        steerd_client_service(cl[i], 0);
      sweep = steerd_proc_now_ms() + 100;
    }
  }
}

/* The counters of the window: taken away at its start, added at its end. */
static void cap_stats(steerd_client *c, cap_client *r, int end) {
  steerd_client_stats st;
  memset(&st, 0, sizeof st);
  steerd_client_get_stats(c, &st);
  if (end) {
    r->frames += st.frames_complete, r->bytes += st.snapshot_bytes;
    r->incomplete += st.frames_incomplete, r->no_base += st.delta_no_base;
  } else {
    r->frames -= st.frames_complete, r->bytes -= st.snapshot_bytes;
    r->incomplete -= st.frames_incomplete, r->no_base -= st.delta_no_base;
  }
}

/* A worker: n clients (seeded views), connect, ready report, then the window
 * times from the parent, the results, and a last byte before disconnecting. */
static void cap_worker_run(const cap_worker *w, uint16_t port, float side, float radius) {
  steerd_client **cl = calloc(w->n, sizeof *cl);
  cap_client *res = calloc(w->n, sizeof *res);
  int ep = epoll_create1(0);
  uint64_t s = 777 + w->first;
  proto_vec2 *centre = calloc(w->n, sizeof *centre);
  uint8_t *viewed = calloc(w->n, 1);
  for (uint32_t i = 0; i < w->n; i++) {
    cl[i] = make_client("load", 1, 512, NULL);
    float half = side / 2 - radius;
    float x = (float)(mixed_world_rnd01(&s) * 2 - 1) * half;
    centre[i] = proto_v2(x, (float)(mixed_world_rnd01(&s) * 2 - 1) * half);
  }
  /* A few handshakes at a time (the server keeps --max-pending, 16, before
   * WELCOME): all at once, most timed out on a busy machine. */
  uint64_t end = steerd_proc_now_ms() + 90000;
  uint32_t started = 0;
  for (uint32_t ok = 0; ok < w->n && steerd_proc_now_ms() < end;) {
    ok = 0;
    uint32_t pending = 0;
    for (uint32_t i = 0; i < started; i++) {
      if (!cl[i])
        continue;
      steerd_client_service(cl[i], 0);
      int st = steerd_client_get_state(cl[i]);
      ok += st == STEERD_CLIENT_WELCOMED;
      if (st == STEERD_CLIENT_WELCOMED && !viewed[i]) {
        /* Its view at once: until then it would view (and be sent) the whole world. */
        proto_command cmd;
        memset(&cmd, 0, sizeof cmd);
        cmd.type = PROTO_MSG_VIEW;
        cmd.view.kind = PROTO_VIEW_CENTRE;
        cmd.view.centre = centre[i];
        cmd.view.radius = radius;
        steerd_client_send(cl[i], &cmd, NULL);
        viewed[i] = 1;
      }
      pending += st != STEERD_CLIENT_WELCOMED && st != STEERD_CLIENT_DISCONNECTED;
    }
    while (pending < 6 && started < w->n) {
      if (cl[started] && steerd_client_connect_start(cl[started], "127.0.0.1", port) == 0)
        pending++;
      started++;
    }
    if (started == w->n && pending == 0)
      break;
    steerd_proc_sleep_ms(1);
  }
  for (uint32_t i = 0; i < w->n; i++) {
    res[i].welcomed = steerd_client_get_state(cl[i]) == STEERD_CLIENT_WELCOMED;
    int fd = steerd_client_fd(cl[i]);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    if (fd >= 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
      res[i].port = ntohs(a.sin_port);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
    if (fd >= 0)
      epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }
  free(centre);
  free(viewed);
  uint64_t times[2] = {0, 0};
  if (write_all(w->from, res, w->n * sizeof *res) != 0)
    _exit(1);
  /* Keep the clients serviced while the others connect. */
  for (;;) {
    struct pollfd pf = {.fd = w->to, .events = POLLIN};
    if (poll(&pf, 1, 0) > 0)
      break;
    cap_pump(ep, cl, w->n, steerd_proc_now_ms() + 20);
  }
  if (read_all(w->to, times, sizeof times) != 0)
    _exit(1);
  cap_pump(ep, cl, w->n, times[0]);
  for (uint32_t i = 0; i < w->n; i++)
    cap_stats(cl[i], &res[i], 0);
  cap_pump(ep, cl, w->n, times[1]);
  for (uint32_t i = 0; i < w->n; i++)
    cap_stats(cl[i], &res[i], 1);
  char bye;
  if (write_all(w->from, res, w->n * sizeof *res) != 0 || read_all(w->to, &bye, 1) != 0)
    _exit(1);
  for (uint32_t i = 0; i < w->n; i++)
    steerd_client_destroy(cl[i]);
  _exit(0);
}

/* utime and stime of a process, in clock ticks. */
static int proc_ticks(pid_t pid, unsigned long *ut, unsigned long *st) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *rest = strrchr(buf, ')');
  return rest && sscanf(rest + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", ut, st) == 2 ? 0
                                                                                                      : -1;
}

/* Per-socket drops of 127.0.0.1 sockets (/proc/net/udp: the last field), by port. */
static void udp_socket_drops(uint64_t *by_port) {
  FILE *f = fopen("/proc/net/udp", "r");
  char line[512];
  memset(by_port, 0, 65536 * sizeof *by_port);
  if (!f)
    return;
  while (fgets(line, sizeof line, f)) {
    unsigned addr, port;
    if (sscanf(line, " %*u: %8x:%4x", &addr, &port) != 2 || addr != 0x0100007Fu)
      continue;
    size_t len = strlen(line);
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == ' '))
      line[--len] = '\0';
    const char *last = strrchr(line, ' ');
    if (last)
      by_port[port] += strtoull(last + 1, NULL, 10);
  }
  fclose(f);
}

static double pct(double *v, uint32_t n, double p) {
  if (n == 0)
    return 0;
  qsort(v, n, sizeof *v, bench_cmp_double);
  uint32_t i = (uint32_t)(p * (double)(n - 1) + 0.5);
  return v[i];
}

/* The server on the last CPU, the client workers on the others (so the server
 * has a core of its own); 0 when the machine has a single CPU. */
static int pin(pid_t pid, int server) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 2)
    return 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (long c = 0; c < n; c++)
    if (server < 0 || (c == n - 1) == (server == 1))
      CPU_SET((int)c, &set);
  return sched_setaffinity(pid, sizeof set, &set) == 0;
}

static double load1(void) {
  FILE *f = fopen("/proc/loadavg", "r");
  double l = -1;
  if (f) {
    if (fscanf(f, "%lf", &l) != 1)
      l = -1;
    fclose(f);
  }
  return l;
}

/* A sample's value in /metrics (the first line starting with name and a
 * space), or -1. */
static double metric(const char *body, const char *name) {
  size_t n = strlen(name);
  for (const char *p = body; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
    if (strncmp(p, name, n) == 0 && p[n] == ' ')
      return atof(p + n + 1);
  return -1;
}

/* The delta pass's seconds and the snapshots so far (-1 when /metrics fails). */
static int delta_pass(const steerd_proc *srv, double *seconds, double *snapshots) {
  static char body[65536];
  if (!srv->http_port || http_get(srv->http_port, "/metrics", body, sizeof body, 5000) != 200)
    return -1;
  *seconds = metric(body, "steerd_delta_snapshot_seconds_total");
  *snapshots = metric(body, "steerd_snapshots_total");
  return *seconds >= 0 && *snapshots >= 0 ? 0 : -1;
}

static void capacity(const steerd_proc *srv, uint32_t clients, uint32_t workers, int pinned, float side,
                     float radius, uint32_t seconds, uint32_t threads) {
  long tck = sysconf(_SC_CLK_TCK);
  /* The server alone (the bench sleeps). */
  unsigned long iu0, is0, iu1, is1;
  steerd_proc_sleep_ms(1000);
  uint64_t i0 = steerd_proc_now_ms();
  proc_ticks(srv->pid, &iu0, &is0);
  steerd_proc_sleep_ms(seconds * 1000u);
  proc_ticks(srv->pid, &iu1, &is1);
  double idle =
      (double)(iu1 + is1 - iu0 - is0) / (double)tck / ((double)(steerd_proc_now_ms() - i0) / 1000.0);
  if (workers < 1)
    workers = 1;
  if (workers > clients)
    workers = clients;
  cap_worker *w = calloc(workers, sizeof *w);
  int server_pinned = pinned && threads == 1 && pin(srv->pid, 1);
  pinned = pinned && (threads == 1 ? server_pinned : sysconf(_SC_NPROCESSORS_ONLN) >= 2);
  fflush(stdout);
  for (uint32_t k = 0; k < workers; k++) {
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0) {
      perror("bench_netcode: pipe");
      return;
    }
    w[k].first = (uint32_t)((uint64_t)clients * k / workers);
    w[k].n = (uint32_t)((uint64_t)clients * (k + 1) / workers) - w[k].first;
    w[k].cl = calloc(w[k].n, sizeof *w[k].cl);
    w[k].pid = fork();
    if (w[k].pid < 0) {
      perror("bench_netcode: fork");
      return;
    }
    if (w[k].pid == 0) {
      if (pinned)
        pin(0, 0);
      close(to[1]);
      close(from[0]);
      for (uint32_t j = 0; j < k; j++)
        close(w[j].to), close(w[j].from);
      w[k].to = to[0];
      w[k].from = from[1];
      cap_worker_run(&w[k], srv->port, side, radius);
    }
    close(to[0]);
    close(from[1]);
    w[k].to = to[1];
    w[k].from = from[0];
  }
  uint32_t welcomed = 0;
  for (uint32_t k = 0; k < workers; k++) {
    if (read_all(w[k].from, w[k].cl, w[k].n * sizeof *w[k].cl) != 0) {
      fprintf(stderr, "bench_netcode: worker %u failed\n", k);
      return;
    }
    for (uint32_t i = 0; i < w[k].n; i++)
      welcomed += w[k].cl[i].welcomed;
  }
  /* Settle 3 s (every client learns its agents), then the window. */
  uint64_t times[2];
  times[0] = steerd_proc_now_ms() + 3000;
  times[1] = times[0] + (uint64_t)seconds * 1000u;
  for (uint32_t k = 0; k < workers; k++)
    write_all(w[k].to, times, sizeof times);
  uint64_t *d0 = calloc(65536, sizeof *d0), *d1 = calloc(65536, sizeof *d1);
  double load_start = load1();
  /* /metrics may take a while on a busy machine: read it before the window
   * (the delta pass then counts from 1.5 s before it; a ratio per snapshot). */
  while (steerd_proc_now_ms() + 1500 < times[0])
    steerd_proc_sleep_ms(1);
  double dsec0 = 0, dsnap0 = 0, dsec1 = 0, dsnap1 = 0;
  int have_pass = delta_pass(srv, &dsec0, &dsnap0) == 0;
  while (steerd_proc_now_ms() < times[0])
    steerd_proc_sleep_ms(1);
  unsigned long u0, s0, u1, s1, wt0 = 0, wt1 = 0;
  for (uint32_t k = 0; k < workers; k++) {
    unsigned long a = 0, b = 0;
    proc_ticks(w[k].pid, &a, &b);
    wt0 += a + b;
  }
  proc_ticks(srv->pid, &u0, &s0);
  uint64_t rb0 = udp_rcvbuf_errors();
  udp_socket_drops(d0);
  uint64_t m0 = steerd_proc_now_ms();
  while (steerd_proc_now_ms() < times[1])
    steerd_proc_sleep_ms(1);
  proc_ticks(srv->pid, &u1, &s1);
  for (uint32_t k = 0; k < workers; k++) {
    unsigned long a = 0, b = 0;
    proc_ticks(w[k].pid, &a, &b);
    wt1 += a + b;
  }
  double secs = (double)(steerd_proc_now_ms() - m0) / 1000.0;
  have_pass = have_pass && delta_pass(srv, &dsec1, &dsnap1) == 0 && dsnap1 > dsnap0;
  uint64_t rb1 = udp_rcvbuf_errors();
  udp_socket_drops(d1);
  double load_end = load1();
  double *fps = calloc(clients, sizeof *fps), *kbps = calloc(clients, sizeof *kbps);
  uint64_t client_drops = 0, incomplete = 0, no_base = 0;
  uint32_t m = 0;
  for (uint32_t k = 0; k < workers; k++) {
    if (read_all(w[k].from, w[k].cl, w[k].n * sizeof *w[k].cl) != 0) {
      fprintf(stderr, "bench_netcode: worker %u failed\n", k);
      return;
    }
    for (uint32_t i = 0; i < w[k].n; i++) {
      const cap_client *r = &w[k].cl[i];
      /* Unconnected clients count as 0 frames/s. */
      fps[m] = (double)r->frames / secs;
      kbps[m++] = (double)r->bytes * 8 / secs / 1000;
      client_drops += d1[r->port] - d0[r->port];
      incomplete += r->incomplete;
      no_base += r->no_base;
    }
  }
  char bye = 0;
  for (uint32_t k = 0; k < workers; k++) {
    write_all(w[k].to, &bye, 1);
    waitpid(w[k].pid, NULL, 0);
    close(w[k].to);
    close(w[k].from);
    free(w[k].cl);
  }
  if (server_pinned)
    pin(srv->pid, -1);
  double user = (double)(u1 - u0) / (double)tck / secs, sys = (double)(s1 - s0) / (double)tck / secs;
  double frames = 0; /* client-frames per second */
  for (uint32_t i = 0; i < m; i++)
    frames += fps[i];
  double per = frames > 0 ? (user + sys - idle) / frames : 0; /* CPU s per client-frame */
  printf("\ncapacity: %u clients (%u connected) in %u worker processes%s, each viewing a %.1f m circle (~100 "
         "agents), %.1f s window; the clients used %.1f%% of a core; load average %.2f -> %.2f\n",
         clients, welcomed, workers,
         server_pinned ? " (pinned: server on the last CPU, clients on the others)"
         : pinned      ? " (clients pinned to the CPUs but the last; the server on any)"
                       : "",
         radius, secs, (double)(wt1 - wt0) / (double)tck / secs * 100, load_start, load_end);
  if (have_pass) {
    double per_snap = (dsec1 - dsec0) / (dsnap1 - dsnap0);
    printf("server --threads %u (0: one per core): delta pass on the loop thread %.2f ms per snapshot = "
           "%.1f%% of one core's time between snapshots (%d/s), %.1f us per client-frame; %.0f snapshots in "
           "the window\n",
           threads, per_snap * 1e3, per_snap * SNAPSHOT_RATE * 100, SNAPSHOT_RATE,
           frames > 0 ? (dsec1 - dsec0) / (frames * secs) * 1e6 : 0.0, dsnap1 - dsnap0);
  }
  printf(
      "| clients | server CPU %% of a core (user + sys) | idle world %% | us per client-frame | frames/s per "
      "client: median | p5 | mean | kbit/s per client (median) | frames incomplete / no baseline | UDP "
      "drops: server socket | client sockets | RcvbufErrors (system) |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  printf("| %u | %.1f (%.1f + %.1f) | %.1f | %.1f | %.1f | %.1f | %.2f | %.1f | %llu / %llu | %llu | %llu | "
         "%llu |\n",
         clients, (user + sys) * 100, user * 100, sys * 100, idle * 100, per * 1e6, pct(fps, m, 0.5),
         pct(fps, m, 0.05), m ? frames / m : 0, pct(kbps, m, 0.5), (unsigned long long)incomplete,
         (unsigned long long)no_base, (unsigned long long)(d1[srv->port] - d0[srv->port]),
         (unsigned long long)client_drops, (unsigned long long)(rb1 - rb0));
  if (per > 0)
    printf("at %.1f us per client-frame, one core would rebuild 20 frames/s for about %.0f such clients\n",
           per * 1e6, (1.0 - idle) / (per * SNAPSHOT_RATE));
  fflush(stdout);
  free(fps);
  free(kbps);
  free(d0);
  free(d1);
  free(w);
}

int main(int argc, char **argv) {
  const char *binary = STEERD_BINARY, *impair = STEERD_IMPAIR, *only = "";
  uint32_t agents = 1000, seconds = 10, latency = 0, jitter = 0, cpu_clients = 20, clients = 1000,
           workers = 2, threads = 0;
  int pinned = 1;
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
    else if (!strcmp(argv[i], "--pin"))
      pinned = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--workers"))
      workers = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--only"))
      only = argv[i + 1];
    else if (!strcmp(argv[i], "--threads"))
      threads = (uint32_t)atoi(argv[i + 1]);
  }
  float side = sqrtf((float)agents / 0.025f); /* 0.025 agents per m^2 */
  float radius_100 = sqrtf(100.0f / (0.025f * 3.14159265f));
  char maxc[16];
  snprintf(maxc, sizeof maxc, "%u", clients + cpu_clients + 8);
  char thr[16];
  snprintf(thr, sizeof thr, "%u", threads);
  const char *args[] = {"--no-demo", "--rate-limit",    "1000000", "--rate-burst",
                        "1000000",   "--max-clients",   maxc,      "--client-timeout",
                        "10000",     "--hello-timeout", "20000",   "--http-port",
                        "auto",      "--threads",       thr,       NULL};
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
        "cm | max cm | unknown agent-samples | largest pop (x true motion) | pops over 2 x %% |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n");
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
  if (!*only || !strcmp(only, "capacity"))
    capacity(&srv, clients, workers, pinned, side, radius_100, seconds, threads);
  steerd_proc_stop(&srv, 3000);
  return 0;
}

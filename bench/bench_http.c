/* bench_http.c: what the HTTP side costs the tick (BENCHMARKS.md "Live views
 * and scrapes").
 *
 * The real server on 127.0.0.1 with N agents (tests/support/mixed_world.h) and
 * one ENet client taking full snapshots. Windows of S seconds alternate:
 *   quiet   nothing on the HTTP port;
 *   views   10 live views (WebSockets, subprotocol steerd-view, HELLO and
 *           whole-world snapshots, read in a thread of this process) open all
 *           along, and a GET /metrics every second.
 * Per window, from the server's own /metrics (read at its edges): the mean
 * world step (steerd_tick_duration_seconds) and the server's CPU time per tick
 * (/proc: everything the process did: ENet, snapshots, views, HTTP), and what
 * the views received. Medians over the trials.
 *
 * --agents 0 runs the demo world instead; --radius R has each view send a VIEW
 * of the R m circle at the origin after its HELLO (the default: the whole world).
 *
 * usage: bench_http [--agents N] [--seconds S] [--trials T] [--views V] [--radius R] */
#include <libwebsockets.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "client.h"
#include "http_get.h"
#include "mixed_world.h"
#include "protocol.h"
#include "steerd_proc.h"

#define MAX_VIEWS 64

/* ---- the views, in their own thread with their own libwebsockets context ---- */

typedef struct views {
  uint16_t port;
  int count;
  double radius; /* 0: the whole world */
  volatile int stop;
  volatile uint64_t bytes, messages;
  int open;
  pthread_t thread;
} views;

static int view_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                         size_t len) {
  views *v = lws_context_user(lws_get_context(wsi));
  switch (reason) {
  case LWS_CALLBACK_CLIENT_ESTABLISHED:
    v->open++;
    lws_callback_on_writable(wsi);
    return 0;
  case LWS_CALLBACK_CLIENT_WRITEABLE: {
    /* HELLO, then (with a radius) a VIEW: one per writable callback. */
    int *sent = user;
    uint8_t buf[LWS_PRE + 256];
    proto_command cmd;
    memset(&cmd, 0, sizeof cmd);
    if (*sent == 0) {
      cmd.type = PROTO_MSG_HELLO;
      cmd.request_id = 1;
      cmd.hello.version = PROTO_VERSION;
      strcpy(cmd.hello.name, "bench-view");
    } else if (*sent == 1 && v->radius > 0) {
      cmd.type = PROTO_MSG_VIEW;
      cmd.request_id = 2;
      cmd.view.kind = PROTO_VIEW_CENTRE;
      cmd.view.centre = proto_v2(0.0f, 0.0f);
      cmd.view.radius = (float)v->radius;
    } else {
      return 0;
    }
    size_t n = proto_encode_command(buf + LWS_PRE, 256, &cmd);
    if (lws_write(wsi, buf + LWS_PRE, n, LWS_WRITE_BINARY) < (int)n)
      return -1;
    if (++*sent == 1)
      lws_callback_on_writable(wsi);
    return 0;
  }
  case LWS_CALLBACK_CLIENT_RECEIVE:
    v->bytes += len;
    if (lws_is_final_fragment(wsi))
      v->messages++;
    return 0;
  case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
    fprintf(stderr, "bench_http: a view did not connect: %s\n", in ? (const char *)in : "?");
    return 0;
  case LWS_CALLBACK_CLIENT_CLOSED:
    v->open--;
    return 0;
  default:
    return 0;
  }
}

static void *views_main(void *arg) {
  views *v = arg;
  static const struct lws_protocols protocols[] = {
      {"steerd-view", view_callback, sizeof(int), 65536, 0, NULL, 0}, {NULL, NULL, 0, 0, 0, NULL, 0}};
  struct lws_context *ctx = http_client_context(protocols, v);
  if (!ctx)
    return NULL;
  for (int i = 0; i < v->count; i++)
    http_client_connect(ctx, v->port, "/", "steerd-view", NULL);
  while (!v->stop)
    lws_service(ctx, 50);
  lws_context_destroy(ctx);
  return NULL;
}

/* ---- measuring ------------------------------------------------------------------ */

static char body[65536];

static double metric(const char *series) {
  size_t n = strlen(series);
  for (const char *line = body; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
    if (strncmp(line, series, n) == 0 && line[n] == ' ')
      return strtod(line + n + 1, NULL);
  return NAN;
}

typedef struct sample {
  double ticks, step_s, cpu_s;
} sample;

/* CPU time of the process in seconds, to the nanosecond (/proc/PID/schedstat;
 * /proc/PID/stat counts 10 ms ticks, too coarse for a few hundred ticks). */
static double cpu_seconds(const steerd_proc *srv) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/schedstat", (int)srv->pid);
  FILE *f = fopen(path, "r");
  unsigned long long ns = 0;
  if (!f)
    return NAN;
  if (fscanf(f, "%llu", &ns) != 1)
    ns = 0;
  fclose(f);
  return (double)ns / 1e9;
}

static int read_sample(const steerd_proc *srv, sample *s) {
  if (http_get(srv->http_port, "/metrics", body, sizeof body, 5000) != 200)
    return -1;
  s->ticks = metric("steerd_ticks_total");
  s->step_s = metric("steerd_tick_duration_seconds_sum");
  s->cpu_s = cpu_seconds(srv);
  return 0;
}

typedef struct result {
  double step_us;   /* mean world step */
  double cpu_us;    /* server CPU per tick */
  double view_kbps; /* received by all views */
  double view_msgs; /* messages per second, all views */
} result;

/* One window of `seconds`, scraping every second when scrape is set. */
static int window(const steerd_proc *srv, steerd_client *c, uint32_t seconds, int scrape, views *v,
                  result *out) {
  sample a, b;
  uint64_t vb0 = v ? v->bytes : 0, vm0 = v ? v->messages : 0;
  if (read_sample(srv, &a) != 0)
    return -1;
  uint64_t t0 = steerd_proc_now_ms(), next_scrape = t0 + 1000, end = t0 + seconds * 1000u;
  while (steerd_proc_now_ms() < end) {
    steerd_client_service(c, 5);
    if (scrape && steerd_proc_now_ms() >= next_scrape) {
      if (http_get(srv->http_port, "/metrics", NULL, 0, 5000) != 200)
        return -1;
      next_scrape += 1000;
    }
  }
  if (read_sample(srv, &b) != 0)
    return -1;
  double ticks = b.ticks - a.ticks, secs = (double)(steerd_proc_now_ms() - t0) / 1000.0;
  out->step_us = (b.step_s - a.step_s) / ticks * 1e6;
  out->cpu_us = (b.cpu_s - a.cpu_s) / ticks * 1e6;
  out->view_kbps = v ? (double)(v->bytes - vb0) * 8.0 / 1000.0 / secs : 0.0;
  out->view_msgs = v ? (double)(v->messages - vm0) / secs : 0.0;
  return 0;
}

int main(int argc, char **argv) {
  uint32_t agents = 2000, seconds = 10, trials = 3;
  int nviews = 10;
  double radius = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--agents"))
      agents = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds"))
      seconds = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--trials"))
      trials = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--views"))
      nviews = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--radius"))
      radius = atof(argv[i + 1]);
  }
  if (nviews < 1 || nviews > MAX_VIEWS || trials < 1 || trials > 20 || seconds < 1) {
    fprintf(stderr, "usage: bench_http [--agents N] [--seconds S] [--trials T] [--views 1..64]\n");
    return 2;
  }
  lws_set_log_level(LLL_ERR, NULL);
  char maxa[16];
  snprintf(maxa, sizeof maxa, "%u", agents + 16);
  const char *args[] = {agents ? "--no-demo" : "--demo",
                        "--rate-limit",
                        "1000000",
                        "--rate-burst",
                        "1000000",
                        "--max-agents",
                        agents ? maxa : "10000",
                        "--max-agents-per-client",
                        maxa,
                        "--http-port",
                        "auto",
                        NULL};
  steerd_proc srv;
  if (steerd_proc_start(&srv, STEERD_BINARY, args, 5000) != 0) {
    fprintf(stderr, "bench_http: the server did not start\n");
    return 1;
  }
  steerd_client_config cc = steerd_client_default_config();
  cc.name = "bench";
  cc.max_agents = agents + 16;
  steerd_client *c = steerd_client_create(&cc);
  if (!c || steerd_client_connect(c, "127.0.0.1", srv.port) != 0) {
    fprintf(stderr, "bench_http: cannot connect\n");
    return 1;
  }
  float side = sqrtf((float)agents / 0.025f);
  mixed_world m;
  mixed_world_init(&m, side, 12345);
  for (uint32_t i = 0; i < agents; i++) {
    proto_command cmd;
    mixed_world_next(&m, &cmd);
    proto_server_msg reply;
    int rc = steerd_client_command_wait(c, &cmd, 5000, &reply);
    if (rc != 0) {
      fprintf(stderr, "bench_http: spawn %u failed: %s\n", i, steerd_client_strerror(rc));
      return 1;
    }
    mixed_world_spawned(&m, reply.ack.agent);
  }
  if (agents)
    printf("%u agents (patrol, wander, pursue) in a %.0f m square", agents, side);
  else
    printf("the demo world");
  printf(", 30 ticks/s, 20 snapshots/s, one ENet client taking full snapshots; views of %s; %u windows of %u "
         "s each way\n\n",
         radius > 0 ? "a circle" : "the whole world", trials, seconds);
  double q_step[20], q_cpu[20], v_step[20], v_cpu[20], v_kbps[20], v_msgs[20];
  views v;
  memset(&v, 0, sizeof v);
  v.port = srv.http_port;
  v.count = nviews;
  v.radius = radius;
  for (uint32_t t = 0; t < trials; t++) {
    result q, r;
    if (window(&srv, c, seconds, 0, NULL, &q) != 0)
      return 1;
    v.stop = 0;
    pthread_create(&v.thread, NULL, views_main, &v);
    uint64_t deadline = steerd_proc_now_ms() + 5000;
    while (v.open < nviews && steerd_proc_now_ms() < deadline)
      steerd_client_service(c, 5);
    if (v.open < nviews) {
      fprintf(stderr, "bench_http: only %d of %d views opened\n", v.open, nviews);
      return 1;
    }
    if (window(&srv, c, seconds, 1, &v, &r) != 0)
      return 1;
    v.stop = 1;
    pthread_join(v.thread, NULL);
    q_step[t] = q.step_us, q_cpu[t] = q.cpu_us;
    v_step[t] = r.step_us, v_cpu[t] = r.cpu_us, v_kbps[t] = r.view_kbps, v_msgs[t] = r.view_msgs;
    fprintf(stderr, "trial %u: quiet step %.1f us cpu %.1f us/tick; views step %.1f us cpu %.1f us/tick\n",
            t + 1, q.step_us, q.cpu_us, r.step_us, r.cpu_us);
  }
  double qs = bench_median(q_step, (int)trials), qc = bench_median(q_cpu, (int)trials);
  double vs = bench_median(v_step, (int)trials), vc = bench_median(v_cpu, (int)trials);
  printf("| HTTP side | mean world step (us) | server CPU per tick (us) | views receive (kbit/s, all) | view "
         "messages/s (all) |\n|---|---|---|---|---|\n");
  printf("| nothing | %.1f | %.1f | | |\n", qs, qc);
  printf("| %d views + GET /metrics every second | %.1f | %.1f | %.0f | %.0f |\n", nviews, vs, vc,
         bench_median(v_kbps, (int)trials), bench_median(v_msgs, (int)trials));
  printf("| ratio | %.3f | %.3f | | |\n", vs / qs, vc / qc);
  steerd_client_destroy(c);
  steerd_proc_stop(&srv, 5000);
  return 0;
}

/* test_goto_wait.c: GOTO under load on the real server binary, over real ENet
 * on 127.0.0.1 (PROTOCOL.md 5.6, "Timing under load"): with a map whose graph
 * builds take seconds, the server listens before they end and answers PINGs
 * all along, while a tick waits for the start-up's graph and while it waits
 * for a new radius class's one (--plan-build-delay 1 makes both ticks wait),
 * and another client's command sent meanwhile is applied after that tick;
 * /readyz says 503 until the start-up's graphs exist while the ticks go on;
 * /metrics shows the planner's families after a few GOTOs; QUERY reports the
 * plan queue position of a queued request under a tiny --plan-budget. Each
 * test starts its own server. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "world.h"
#include "check_run.h"
#include "client.h"
#include "http_get.h"
#include "protocol.h"
#include "steerd_proc.h"
#include "wire_core.h"

#define BODY_BYTES 65536

static char body[BODY_BYTES];

/* ---- maps ------------------------------------------------------------------------------ */

/* The big map: BIG_N 40-gons on a grid in +-BIG_HALF m. A full graph build
 * of it takes seconds (1.5 to 2.5 s on a 2-core box, 270 of them in an
 * optimized build, 81 in an unoptimized one with sanitizers, which builds 30
 * times slower): a server that waited for one without servicing ENet would
 * miss every PING for that long. The server is the same build as the test. */
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
#define BIG_N    81
#define BIG_COLS 9 /* ceil(sqrt(BIG_N)) */
#else
#define BIG_N    270
#define BIG_COLS 17
#endif
#define BIG_SIDES 40
#define BIG_HALF  250.0
#define BIG_STEP  ((2.0 * BIG_HALF - 20.0) / BIG_COLS)

/* A free point of the big map: a corner between four cells of the grid. */
static vec2 big_free_point(int i, int j) {
  return v2((float)(-BIG_HALF + 10.0 + BIG_STEP * i), (float)(-BIG_HALF + 10.0 + BIG_STEP * j));
}

static char big_path[64], small_path[64];

static void write_big_map(void) {
  snprintf(big_path, sizeof big_path, "/tmp/steerd_goto_wait_big_%d.json", (int)getpid());
  FILE *f = fopen(big_path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("{\"format\": \"steerd-map\", \"version\": 1, \"obstacles\": [", f);
  for (int i = 0; i < BIG_N; i++) {
    double cx = -BIG_HALF + 10.0 + BIG_STEP * (i % BIG_COLS + 0.5);
    double cy = -BIG_HALF + 10.0 + BIG_STEP * (i / BIG_COLS + 0.5), r = BIG_STEP * 0.3;
    fprintf(f, "%s{\"id\": %d, \"type\": \"polygon\", \"points\": [", i ? "," : "", i + 1);
    for (int k = 0; k < BIG_SIDES; k++) {
      double a = 2.0 * 3.14159265358979323846 * k / BIG_SIDES;
      fprintf(f, "%s[%.3f, %.3f]", k ? "," : "", cx + r * cos(a), cy + r * sin(a));
    }
    fputs("]}", f);
  }
  fputs("]}", f);
  ck_assert_int_eq(fclose(f), 0);
}

/* Two rooms split by a wall along x = 0 with a door at y in [-1.5, 1.5]. */
static void write_small_map(void) {
  snprintf(small_path, sizeof small_path, "/tmp/steerd_goto_wait_small_%d.json", (int)getpid());
  FILE *f = fopen(small_path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("{\"format\": \"steerd-map\", \"version\": 1, \"obstacles\": ["
        "{\"id\": 1, \"type\": \"wall\", \"points\": [[0, -50], [0, -1.5]]},"
        "{\"id\": 2, \"type\": \"wall\", \"points\": [[0, 1.5], [0, 50]]}]}",
        f);
  ck_assert_int_eq(fclose(f), 0);
}

/* ---- a client that keeps every event ------------------------------------------------- */

typedef struct events {
  proto_event ev[4096];
  uint32_t count;
  proto_server_msg reply; /* the last reply not waited for */
  uint32_t replies;
  uint64_t reply_tick; /* the tick of the first PONG after it */
} events;

static void on_reply(void *user, const proto_server_msg *m) {
  events *x = user;
  x->reply = *m;
  x->replies++;
}

static void on_event(void *user, const proto_event *e) {
  events *x = user;
  if (x->count < sizeof x->ev / sizeof x->ev[0])
    x->ev[x->count++] = *e;
}

static steerd_client *connect_client(const steerd_proc *p, events *x) {
  memset(x, 0, sizeof *x);
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = "goto-wait";
  cfg.callbacks.on_event = on_event;
  cfg.callbacks.on_reply = on_reply;
  cfg.user = x;
  steerd_client *c = steerd_client_create(&cfg);
  ck_assert_ptr_nonnull(c);
  int rc = steerd_client_connect(c, "127.0.0.1", p->port);
  ck_assert_msg(rc == 0, "connect: %s", steerd_client_strerror(rc));
  return c;
}

static int has_event(const events *x, uint8_t code, steer_id agent) {
  for (uint32_t i = 0; i < x->count; i++)
    if (x->ev[i].code == code && x->ev[i].agent == agent)
      return 1;
  return 0;
}

static steer_id spawn(steerd_client *c, vec2 at, float radius) {
  proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SPAWN;
  cmd.spawn.model = STEER_MODEL_KINEMATIC;
  cmd.spawn.position = wire_of_vec2(at);
  cmd.spawn.present = PROTO_SPAWN_LIMITS;
  cmd.spawn.limits.present = PROTO_LIMIT_RADIUS | PROTO_LIMIT_MAX_SPEED;
  cmd.spawn.limits.v.radius = radius;
  cmd.spawn.limits.v.max_speed = 4.0f;
  proto_server_msg r;
  int rc = steerd_client_command_wait(c, &cmd, 30000, &r);
  ck_assert_msg(rc == 0, "spawn: %s", steerd_client_strerror(rc));
  return r.ack.agent;
}

static void go(steerd_client *c, steer_id agent, vec2 to) {
  proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SET_BEHAVIOUR;
  cmd.set_behaviour.agent = agent;
  cmd.set_behaviour.behaviour.kind = PROTO_BEHAVIOUR_GOTO;
  cmd.set_behaviour.behaviour.present = PROTO_BHV_TARGET;
  cmd.set_behaviour.behaviour.target = wire_of_vec2(to);
  int rc = steerd_client_command_wait(c, &cmd, 30000, NULL);
  ck_assert_msg(rc == 0, "goto: %s", steerd_client_strerror(rc));
}

static proto_agent_report query(steerd_client *c, steer_id agent) {
  proto_command q;
  memset(&q, 0, sizeof q);
  q.type = PROTO_MSG_QUERY;
  q.query.agent = agent;
  proto_server_msg r;
  ck_assert_int_eq(steerd_client_command_wait(c, &q, 5000, &r), 0);
  return r.ack.query;
}

/* ---- PINGs and what the log says ------------------------------------------------------- */

/* PING round trips, the longest and how many. */
typedef struct pings {
  uint64_t worst_us;
  uint32_t count, within_250ms;
} pings;

/* One PING; it must come back within a second: the server is never silent
 * for longer, whatever it waits for (the margin is for a loaded CI box). */
static void ping(steerd_client *c, pings *pg, const char *when) {
  uint64_t rtt = 0;
  int rc = steerd_client_ping(c, 1000, &rtt);
  ck_assert_msg(rc == 0, "no PONG within 1 s %s: %s", when, steerd_client_strerror(rc));
  pg->worst_us = rtt > pg->worst_us ? rtt : pg->worst_us;
  pg->count++;
  pg->within_250ms += rtt <= 250000u;
}

/* The last completed tick, by a PING. */
static uint64_t server_tick(steerd_client *c) {
  proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_PING;
  proto_server_msg r;
  ck_assert_int_eq(steerd_client_command_wait(c, &cmd, 30000, &r), 0);
  return r.ack.pong.tick;
}

/* The line number (from 1) of the first log line containing needle, 0 if none. */
static int log_line(const steerd_proc *p, const char *needle) {
  FILE *f = fopen(p->log_path, "r");
  ck_assert_ptr_nonnull(f);
  char line[4096];
  int n = 0, found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    n++;
    if (strstr(line, needle))
      found = n;
  }
  fclose(f);
  return found;
}

/* The longest wait for a graph the server logged ("waited N ms"), ms. */
static double longest_logged_wait_ms(const steerd_proc *p) {
  FILE *f = fopen(p->log_path, "r");
  ck_assert_ptr_nonnull(f);
  char line[4096];
  double worst = 0.0;
  while (fgets(line, sizeof line, f)) {
    const char *at = strstr(line, " waited ");
    if (at && strstr(line, "navigation graph")) {
      double ms = strtod(at + 8, NULL);
      worst = ms > worst ? ms : worst;
    }
  }
  fclose(f);
  return worst;
}

/* The value of the first sample line that starts with series (name and labels). */
static double metric(const char *text, const char *series) {
  size_t n = strlen(series);
  for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
    if (strncmp(line, series, n) == 0 && line[n] == ' ')
      return strtod(line + n + 1, NULL);
  ck_abort_msg("no series %s in /metrics", series);
  return 0;
}

/* ---- the tests ------------------------------------------------------------------------- */

/* The start-up's graph (the demo's agents) and a new radius class's graph,
 * each waited for by a tick (--plan-build-delay 1): PINGs come back all along. */
START_TEST(pings_answered_while_graphs_build) {
  write_big_map();
  steerd_proc p;
  const char *const args[] = {"--map", big_path,      "--world", "-250,-250,250,250", "--plan-build-delay",
                              "1",     "--http-port", "auto",    "--client-timeout",  "10000",
                              "--nav", "graph",       NULL};
  ck_assert_msg(steerd_proc_start(&p, STEERD_BINARY, args, 20000) == 0, "the server did not start");
  events x;
  uint64_t t0 = steerd_proc_now_ms();
  steerd_client *c = connect_client(&p, &x); /* HELLO is answered during the wait too */
  uint64_t connect_ms = steerd_proc_now_ms() - t0;
  ck_assert_msg(connect_ms < 1000, "WELCOME took %llu ms", (unsigned long long)connect_ms);
  pings pg = {0, 0, 0};

  /* The start-up: tick 1 waits for the demo's class graph, which is built
   * after the server listens. */
  uint64_t end = steerd_proc_now_ms() + 120000;
  while (!steerd_proc_log_contains(&p, "radius classes in use are built")) {
    ck_assert_msg(steerd_proc_now_ms() < end, "the start-up's graphs were not built within 120 s");
    ping(c, &pg, "during the start-up's graph build");
    steerd_proc_sleep_ms(20);
  }
  fprintf(stderr, "goto_wait: WELCOME in %llu ms, %u PINGs during the start-up's build, worst %.0f ms\n",
          (unsigned long long)connect_ms, pg.count, (double)pg.worst_us / 1e3);
  ck_assert_uint_ge(pg.count, 5); /* the server answered during the build, not only after it */
  int listening = log_line(&p, "listening on"), built = log_line(&p, "radius classes in use are built");
  ck_assert_msg(listening > 0 && listening < built, "the server listened (line %d) after the build (line %d)",
                listening, built);

  /* A new radius class (1.6 m: the 1.75 m class): its due tick is the next
   * one, which waits for its build. Meanwhile another client's SPAWN is kept,
   * and applied and answered after that tick: its ACK comes with the tick
   * that waited completed, never before. */
  events y;
  steerd_client *c2 = connect_client(&p, &y);
  steer_id a = spawn(c, big_free_point(1, 1), 1.6f);
  uint64_t before = server_tick(c);
  go(c, a, big_free_point(4, 3));
  end = steerd_proc_now_ms() + 120000;
  int sent = 0, round = 0;
  uint64_t spawn_tick = 0;
  while (!has_event(&x, PROTO_EVENT_PLANNED, a) || !y.replies) {
    ck_assert_msg(steerd_proc_now_ms() < end, "no PLANNED for the 1.75 m class within 120 s");
    ping(c, &pg, "during the new class's graph build");
    if (!sent && ++round == 5) { /* some 100 ms into the wait */
      proto_command sp;
      memset(&sp, 0, sizeof sp);
      sp.type = PROTO_MSG_SPAWN;
      sp.spawn.position = wire_of_vec2(big_free_point(2, 2));
      ck_assert_int_eq(steerd_client_send(c2, &sp, NULL), 0);
      sent = 1;
    }
    steerd_client_service(c2, 0);
    if (y.replies && !spawn_tick)
      spawn_tick = server_tick(c);
    steerd_proc_sleep_ms(20);
  }
  ck_assert_uint_eq(y.reply.type, PROTO_MSG_ACK);
  ck_assert_uint_ge(spawn_tick, before + 1); /* answered once the tick that waited was over */
  steerd_client_destroy(c2);
  /* The builds were long: a server deaf while waiting would have missed PINGs
   * for that long. */
  double waited = longest_logged_wait_ms(&p);
  fprintf(stderr, "goto_wait: %u PINGs, %u within 250 ms, worst %.0f ms; the longest wait %.0f ms\n",
          pg.count, pg.within_250ms, (double)pg.worst_us / 1e3, waited);
  ck_assert_msg(waited >= 1100.0,
                "the ticks waited only %.0f ms for the graphs: the map is too small to tell", waited);
  ck_assert_uint_ge(pg.count, 20);
  ck_assert_uint_ge(pg.within_250ms * 2, pg.count); /* most are prompt, not just under a second */

  ck_assert_int_eq(http_get(p.http_port, "/metrics", body, sizeof body, 5000), 200);
  ck_assert_double_ge(metric(body, "steerd_plan_waits_total"), 2);
  ck_assert_double_ge(metric(body, "steerd_plan_wait_seconds_total"), 1.1);
  ck_assert_double_ge(metric(body, "steerd_plan_wait_answered_total"), 1);
  ck_assert_double_ge(metric(body, "steerd_plan_wait_kept_packets_total"), 1);
  ck_assert_double_eq(metric(body, "steerd_plan_graph_loop_builds_total"), 0);
  ck_assert_int_eq(http_get(p.http_port, "/readyz", body, sizeof body, 5000), 200);
  steerd_client_destroy(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 10000), 0);
  unlink(big_path);
}
END_TEST

/* With the default delay the start-up's graph is built while the ticks run:
 * /readyz is 503 until it exists, the server answers all along. */
START_TEST(readyz_waits_for_start_up_graphs) {
  write_big_map();
  steerd_proc p;
  const char *const args[] = {"--map", big_path, "--world", "-250,-250,250,250", "--http-port", "auto",
                              "--nav", "graph",  NULL};
  ck_assert_msg(steerd_proc_start(&p, STEERD_BINARY, args, 20000) == 0, "the server did not start");
  events x;
  steerd_client *c = connect_client(&p, &x);
  uint64_t first = server_tick(c), last = first;
  int status = http_get(p.http_port, "/readyz", body, sizeof body, 30000);
  ck_assert_int_eq(status, 503);
  ck_assert_msg(strstr(body, "building the navigation graphs of") != NULL, "%s", body);
  /* A wait at the due tick (a build slower than the map's delay) would hold
   * the HTTP answer back, hence the long timeouts. */
  uint64_t end = steerd_proc_now_ms() + 120000;
  while ((status = http_get(p.http_port, "/readyz", body, sizeof body, 30000)) == 503) {
    ck_assert_msg(steerd_proc_now_ms() < end, "not ready within 120 s: %s", body);
    last = server_tick(c);
    steerd_proc_sleep_ms(50);
  }
  ck_assert_int_eq(status, 200);
  /* The ticks ran during the build (its due tick is about 231 ticks away). */
  ck_assert_uint_ge(last, first + 10);
  ck_assert_int_eq(http_get(p.http_port, "/metrics", body, sizeof body, 5000), 200);
  ck_assert_double_eq(metric(body, "steerd_ready"), 1);
  steerd_client_destroy(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 10000), 0);
  unlink(big_path);
}
END_TEST

/* A few GOTOs, then the planner's families in /metrics. */
START_TEST(metrics_show_the_planner) {
  write_small_map();
  steerd_proc p;
  const char *const args[] = {"--no-demo",     "--map",       small_path, "--world",
                              "-50,-50,50,50", "--http-port", "auto",     NULL};
  ck_assert_msg(steerd_proc_start(&p, STEERD_BINARY, args, 20000) == 0, "the server did not start");
  events x;
  steerd_client *c = connect_client(&p, &x);
  steer_id id[5];
  for (int i = 0; i < 5; i++) {
    id[i] = spawn(c, v2(-20.0f, -10.0f + 5.0f * (float)i), 0.5f);
    go(c, id[i], v2(20.0f, 10.0f));
  }
  uint64_t end = steerd_proc_now_ms() + 20000;
  for (int i = 0; i < 5; i++)
    while (!has_event(&x, PROTO_EVENT_PLANNED, id[i])) {
      ck_assert_msg(steerd_proc_now_ms() < end, "no PLANNED for agent %d", i);
      steerd_client_service(c, 5);
    }
  ck_assert_int_eq(http_get(p.http_port, "/metrics", body, sizeof body, 5000), 200);
  ck_assert_double_eq(metric(body, "steerd_plans_total{outcome=\"planned\"}"), 5);
  ck_assert_double_eq(metric(body, "steerd_plans_total{outcome=\"unreachable\"}"), 0);
  ck_assert_double_ge(metric(body, "steerd_plans_total{outcome=\"replanned\"}"), 0);
  double served = metric(body, "steerd_plan_duration_seconds_count");
  ck_assert_double_ge(served, 5);
  ck_assert_double_eq(metric(body, "steerd_plan_duration_seconds_bucket{le=\"+Inf\"}"), served);
  double sum = metric(body, "steerd_plan_duration_seconds_sum");
  ck_assert_msg(sum > 0.0 && sum < served * 0.1, "plan time %g s for %g plans", sum, served);
  ck_assert_double_le(metric(body, "steerd_plan_duration_seconds_bucket{le=\"0.1\"}"), served);
  ck_assert_double_eq(metric(body, "steerd_plan_agents"), 5);
  ck_assert_double_eq(metric(body, "steerd_plan_queue_length"), 0);
  ck_assert_double_eq(metric(body, "steerd_plan_graph_builds_total"), 1); /* the 0.5 m class */
  ck_assert_double_eq(metric(body, "steerd_plan_graph_loop_builds_total"), 0);
  ck_assert_double_eq(metric(body, "steerd_plan_waits_total"), 0);
  ck_assert_double_eq(metric(body, "steerd_plan_wait_seconds_total"), 0);
  steerd_client_destroy(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 10000), 0);
  unlink(small_path);
}
END_TEST

/* One plan per tick (--plan-budget 1 on visibility graphs, whose plans are
 * never cut in slices): a burst of GOTOs queues, and QUERY tells each queued
 * agent how many requests are ahead of it. */
START_TEST(query_reports_queue_position) {
  write_small_map();
  steerd_proc p;
  const char *const args[] = {"--no-demo",     "--map", small_path, "--world", "-50,-50,50,50",
                              "--plan-budget", "1",     "--nav",    "graph",   NULL};
  ck_assert_msg(steerd_proc_start(&p, STEERD_BINARY, args, 20000) == 0, "the server did not start");
  events x;
  steerd_client *c = connect_client(&p, &x);
  enum { N = 30 };
  steer_id id[N];
  for (int i = 0; i < N; i++)
    id[i] = spawn(c, v2(-30.0f + 2.0f * (float)(i % 10), -10.0f + 5.0f * (float)(i / 10)), 0.5f);
  for (int i = 0; i < N; i++)
    go(c, id[i], v2(20.0f, 10.0f));
  proto_agent_report last = query(c, id[N - 1]);
  ck_assert(last.has_goto);
  ck_assert_uint_eq(last.behaviour, PROTO_BEHAVIOUR_GOTO);
  ck_assert_uint_eq(last.go.status, PROTO_GOTO_QUEUED);
  ck_assert_msg(last.go.queued, "a queued agent's QUERY has no queue_position");
  ck_assert_uint_lt(last.go.queue_position, N);
  ck_assert_uint_gt(last.go.queue_position, 0); /* one plan per tick: the 29 before cannot all be served */
  /* The one ahead of it is one place nearer the head, if still queued. */
  proto_agent_report before = query(c, id[N - 2]);
  if (before.go.status == PROTO_GOTO_QUEUED) {
    ck_assert(before.go.queued);
    ck_assert_uint_lt(before.go.queue_position, last.go.queue_position + 1u);
  }
  /* It moves up as the ticks serve the queue, then leaves it. */
  steerd_proc_sleep_ms(150);
  proto_agent_report later = query(c, id[N - 1]);
  if (later.go.status == PROTO_GOTO_QUEUED)
    ck_assert_uint_lt(later.go.queue_position, last.go.queue_position);
  uint64_t end = steerd_proc_now_ms() + 20000;
  while (!has_event(&x, PROTO_EVENT_PLANNED, id[N - 1])) {
    ck_assert_msg(steerd_proc_now_ms() < end, "the last GOTO was never served");
    steerd_client_service(c, 5);
  }
  proto_agent_report done = query(c, id[N - 1]);
  ck_assert_uint_eq(done.go.status, PROTO_GOTO_FOLLOWING);
  ck_assert_msg(!done.go.queued, "a following agent with no replan waiting has a queue_position");
  steerd_client_destroy(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 10000), 0);
  unlink(small_path);
}
END_TEST

int main(void) {
  Suite *s = suite_create("goto_wait");
  TCase *tc = check_tcase(s, "server", 300);
  tcase_add_test(tc, metrics_show_the_planner);
  tcase_add_test(tc, query_reports_queue_position);
  /* The ones whose graph builds compute for seconds (tests/CMakeLists.txt). */
  TCase *build = check_tcase(s, "build", 300);
  tcase_add_test(build, pings_answered_while_graphs_build);
  tcase_add_test(build, readyz_waits_for_start_up_graphs);
  return check_run(s);
}

/* test_http.c: the HTTP port of the real server (http.c, metrics.c): probes,
 * /metrics checked by promtool and scraped by a real Prometheus server that
 * also answers every query of the compose file's Grafana dashboard, the
 * checkpoint that cannot be written, JSON logs, `steerd healthcheck`, and the
 * drain on SIGTERM (503 from /readyz all along, with or without clients).
 * Every server gets an ephemeral game port and an ephemeral HTTP port
 * (--http-port auto); every Prometheus a free port of its own. */
#include <arpa/inet.h>
#include <check.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_run.h"
#include "client.h"
#include "demo.h"
#include "http_get.h"
#include "map_json.h"
#include "metrics.h"
#include "persist.h"
#include "world.h"
#include "protocol.h"
#include "steerd_proc.h"

#define BODY_BYTES 65536

static char body[BODY_BYTES];

static void start(steerd_proc *p, const char *const *extra) {
  static const char *const base[] = {"--http-port", "auto", NULL};
  ck_assert_msg(steerd_proc_start_with(p, STEERD_BINARY, base, extra, 10000) == 0,
                "the server did not start within 10 s");
  ck_assert_uint_ne(p->http_port, 0);
  /* Ready once the demo's navigation meshes are built, a tick or two after it
   * listens: the tests below start from a ready server. */
  ck_assert_int_eq(http_wait_ready(p->http_port, 10000), 200);
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

static int run(const char *cmd) {
  int status = system(cmd);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int log_lines(const steerd_proc *p) {
  FILE *f = fopen(p->log_path, "r");
  ck_assert_ptr_nonnull(f);
  int n = 0, c;
  while ((c = fgetc(f)) != EOF)
    n += c == '\n';
  fclose(f);
  return n;
}

/* ---- probes ------------------------------------------------------------------------ */

START_TEST(test_probes_and_pages) {
  steerd_proc p;
  start(&p, NULL);
  ck_assert_int_eq(http_get(p.http_port, "/healthz", body, sizeof body, 5000), 200);
  ck_assert_str_eq(body, "ok\n");
  ck_assert_int_eq(http_wait_ready(p.http_port, 10000), 200);
  ck_assert_int_eq(http_get(p.http_port, "/readyz", body, sizeof body, 5000), 200);
  ck_assert_str_eq(body, "ready\n");
  ck_assert_int_eq(http_get(p.http_port, "/no-such-page", body, sizeof body, 5000), 404);
  /* The live view's page and scripts come from the server itself. */
  ck_assert_int_eq(http_get(p.http_port, "/", body, sizeof body, 5000), 200);
  ck_assert_ptr_nonnull(strstr(body, "<canvas id=\"world\">"));
  ck_assert_int_eq(http_get(p.http_port, "/view.js", body, sizeof body, 5000), 200);
  ck_assert_ptr_nonnull(strstr(body, "steerd-view"));
  ck_assert_int_eq(http_get(p.http_port, "/msgpack.js", body, sizeof body, 5000), 200);
  ck_assert_int_eq(http_get(p.http_port, "/api/agent?id=12345", body, sizeof body, 5000), 404);
  /* Probes are not logged at info: a line each every few seconds would drown the log. */
  int lines = log_lines(&p);
  for (int i = 0; i < 20; i++)
    ck_assert_int_eq(http_get(p.http_port, i % 2 ? "/healthz" : "/readyz", NULL, 0, 5000), 200);
  ck_assert_int_eq(log_lines(&p), lines);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

/* ---- the live view's API ---------------------------------------------------------- */

/* A dynamic agent at rest at (x, y), radius 0.5 m; separating from its
 * max_neighbours nearest within 2 m (+ both radii) when max_neighbours > 0. */
static proto_id spawn_at(steerd_client *c, float x, float y, uint8_t max_neighbours) {
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SPAWN;
  cmd.spawn.model = PROTO_MODEL_DYNAMIC;
  cmd.spawn.position = proto_v2(x, y);
  if (max_neighbours) {
    cmd.spawn.present = PROTO_SPAWN_BEHAVIOUR;
    proto_behaviour *b = &cmd.spawn.behaviour;
    b->present = PROTO_BHV_SEPARATION_WEIGHT | PROTO_BHV_MAX_NEIGHBOURS;
    b->separation_weight = 1.0f;
    b->max_neighbours = max_neighbours;
    b->params.present = PROTO_PARAM_SEPARATION_RADIUS;
    b->params.v.separation_radius = 2.0f;
  }
  proto_server_msg reply;
  int rc = steerd_client_command_wait(c, &cmd, 3000, &reply);
  ck_assert_msg(rc == 0, "SPAWN: %s", steerd_client_strerror(rc));
  return reply.ack.agent;
}

static json_t *get_json(uint16_t port, const char *path) {
  ck_assert_int_eq(http_get(port, path, body, sizeof body, 5000), 200);
  json_error_t err;
  json_t *j = json_loads(body, 0, &err);
  ck_assert_msg(j != NULL, "%s: %s", path, err.text);
  return j;
}

/* /api/agent names the agents a separating agent reads (its max_neighbours
 * nearest within separation_radius + its radius + the largest, nearest
 * first) and that reach; /api/routes answers the routes and targets of the
 * agents in a circle, and 400 without one. */
START_TEST(test_agent_neighbours_and_routes) {
  steerd_proc p;
  const char *const extra[] = {"--no-demo", NULL};
  start(&p, extra);
  steerd_client_config cfg = steerd_client_default_config();
  steerd_client *c = steerd_client_create(&cfg);
  ck_assert_ptr_nonnull(c);
  ck_assert_int_eq(steerd_client_connect(c, "127.0.0.1", p.port), 0);
  /* Reach 2 + 0.5 + 0.5 = 3 m: those at 1.2 and 2.4 m are in it, 3.6 and 10 m not. */
  proto_id a = spawn_at(c, 0.0f, 0.0f, 3), b1 = spawn_at(c, 1.2f, 0.0f, 0), b2 = spawn_at(c, 0.0f, -2.4f, 0);
  spawn_at(c, 3.6f, 0.0f, 0);
  proto_id far = spawn_at(c, 10.0f, 10.0f, 0);
  char path[128];
  snprintf(path, sizeof path, "/api/agent?id=%u", (unsigned)a);
  json_t *j = get_json(p.http_port, path);
  json_t *nb = json_object_get(j, "neighbours");
  ck_assert_uint_eq(json_array_size(nb), 2);
  ck_assert_int_eq(json_integer_value(json_array_get(nb, 0)), b1);
  ck_assert_int_eq(json_integer_value(json_array_get(nb, 1)), b2);
  ck_assert_double_eq_tol(json_real_value(json_object_get(j, "neighbour_reach_m")), 3.0, 1e-6);
  ck_assert_double_eq_tol(json_real_value(json_object_get(j, "separation_weight")), 1.0, 1e-6);
  ck_assert_double_eq_tol(json_real_value(json_object_get(j, "radius_m")), 0.5, 1e-6);
  ck_assert_str_eq(json_string_value(json_object_get(j, "owner_name")), "steerd-client"); /* its HELLO's */
  json_decref(j);
  /* One that neither separates nor avoids reads none. */
  snprintf(path, sizeof path, "/api/agent?id=%u", (unsigned)b1);
  j = get_json(p.http_port, path);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "neighbours")), 0);
  json_decref(j);
  /* A path and a point target: each in the routes of a circle round them, nearest first. */
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SET_PATH;
  cmd.set_path.agent = far;
  proto_path *pp = &cmd.set_path.path;
  pp->count = 3;
  pp->points[0] = proto_v2(10.0f, 10.0f);
  pp->points[1] = proto_v2(20.0f, 10.0f);
  pp->points[2] = proto_v2(20.0f, 20.0f);
  pp->radius = 1.0f;
  pp->mode = PROTO_PATH_LOOP;
  proto_server_msg reply;
  ck_assert_int_eq(steerd_client_command_wait(c, &cmd, 3000, &reply), 0);
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SET_BEHAVIOUR;
  cmd.set_behaviour.agent = b2;
  cmd.set_behaviour.behaviour.kind = PROTO_BEHAVIOUR_ARRIVE;
  cmd.set_behaviour.behaviour.present = PROTO_BHV_TARGET;
  cmd.set_behaviour.behaviour.target = proto_v2(-30.0f, 5.0f);
  ck_assert_int_eq(steerd_client_command_wait(c, &cmd, 3000, &reply), 0);
  j = get_json(p.http_port, "/api/routes?x=10&y=10&r=5");
  json_t *list = json_object_get(j, "agents");
  ck_assert_uint_eq(json_array_size(list), 1);
  json_t *e = json_array_get(list, 0);
  ck_assert_int_eq(json_integer_value(json_object_get(e, "id")), far);
  json_t *pts = json_object_get(e, "path_m");
  ck_assert_uint_eq(json_array_size(pts), 3);
  ck_assert_double_eq_tol(json_real_value(json_array_get(json_array_get(pts, 2), 1)), 20.0, 1e-6);
  ck_assert_str_eq(json_string_value(json_object_get(e, "path_mode")), "loop");
  ck_assert(json_is_true(json_object_get(j, "complete")));
  json_decref(j);
  j = get_json(p.http_port, "/api/routes?x=0&y=0&r=8");
  list = json_object_get(j, "agents");
  ck_assert_uint_eq(json_array_size(list), 4); /* all but the far one, nearest first */
  ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(list, 0), "id")), a);
  ck_assert_ptr_null(json_object_get(json_array_get(list, 0), "target_m"));
  for (size_t i = 0; i < 4; i++) {
    json_t *t = json_array_get(list, i);
    if (json_integer_value(json_object_get(t, "id")) != b2)
      continue;
    ck_assert_double_eq_tol(json_real_value(json_array_get(json_object_get(t, "target_m"), 0)), -30.0, 1e-6);
  }
  json_decref(j);
  /* Without a circle: 400, saying what it needs. */
  static const char *const bad[] = {"/api/routes", "/api/routes?x=0&y=0", "/api/routes?x=0&y=0&r=0",
                                    "/api/routes?x=a&y=0&r=5", "/api/routes?x=0&y=0&r=1e9"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(http_get(p.http_port, bad[i], body, sizeof body, 5000), 400);
    ck_assert_ptr_nonnull(strstr(body, "x=X&y=Y&r=R"));
  }
  steerd_client_disconnect(c, 500);
  steerd_client_destroy(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

START_TEST(test_healthcheck_command) {
  steerd_proc p;
  start(&p, NULL);
  ck_assert_int_eq(http_wait_ready(p.http_port, 10000), 200);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s healthcheck --http-port %u 2>/dev/null", STEERD_BINARY, p.http_port);
  ck_assert_int_eq(run(cmd), 0);
  snprintf(cmd, sizeof cmd, "%s healthcheck --ready --http-port %u 2>/dev/null", STEERD_BINARY, p.http_port);
  ck_assert_int_eq(run(cmd), 0);
  snprintf(cmd, sizeof cmd, "STEERD_HTTP_PORT=%u %s healthcheck --ready 2>/dev/null", p.http_port,
           STEERD_BINARY);
  ck_assert_int_eq(run(cmd), 0);
  uint16_t port = p.http_port;
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
  /* Nothing listens there now. */
  snprintf(cmd, sizeof cmd, "%s healthcheck --http-port %u 2>/dev/null", STEERD_BINARY, port);
  ck_assert_int_eq(run(cmd), 1);
  snprintf(cmd, sizeof cmd, "%s healthcheck --http-port nonsense 2>/dev/null", STEERD_BINARY);
  ck_assert_int_eq(run(cmd), 2);
}
END_TEST

START_TEST(test_port_in_use_refuses_to_start) {
  steerd_proc p;
  start(&p, NULL);
  char cmd[512], out[8192];
  snprintf(cmd, sizeof cmd, "%s --bind 127.0.0.1 --port 0 --http-port %u 2>&1", STEERD_BINARY, p.http_port);
  FILE *f = popen(cmd, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = '\0';
  int status = pclose(f);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "%s", out);
  ck_assert_ptr_nonnull(strstr(out, "cannot listen for HTTP on 127.0.0.1"));
  ck_assert_ptr_nonnull(strstr(out, "Address already in use"));
  ck_assert_int_eq(http_get(p.http_port, "/healthz", NULL, 0, 5000), 200); /* the first one is unharmed */
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

/* ---- metrics ------------------------------------------------------------------------ */

START_TEST(test_metrics_promtool_and_counts) {
  steerd_proc p;
  start(&p, NULL);
  /* Traffic to count: a welcomed client, a QUERY that fails, a PING that works. */
  steerd_client_config cc = steerd_client_default_config();
  cc.name = "metrics";
  steerd_client *c = steerd_client_create(&cc);
  ck_assert_int_eq(steerd_client_connect(c, "127.0.0.1", p.port), 0);
  proto_command q;
  memset(&q, 0, sizeof q);
  q.type = PROTO_MSG_QUERY;
  q.query.agent = 12345;
  ck_assert_int_eq(steerd_client_command_wait(c, &q, 3000, NULL), STEERD_CLIENT_EREPLY);
  ck_assert_int_eq(steerd_client_ping(c, 3000, NULL), 0);
  steerd_proc_sleep_ms(300); /* a few ticks: all of this can take less than one */

  ck_assert_int_eq(http_get(p.http_port, "/metrics", body, sizeof body, 5000), 200);
  char path[] = "/tmp/steerd-metrics-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, body, strlen(body)), (ssize_t)strlen(body));
  close(fd);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "promtool check metrics < %s", path);
  ck_assert_msg(run(cmd) == 0, "promtool check metrics found problems in:\n%s", body);
  unlink(path);

  ck_assert_double_eq(metric(body, "steerd_build_info{version=\"0.1.0\",protocol=\"1\"}"), 1);
  ck_assert_double_eq(metric(body, "steerd_clients{role=\"controller\"}"), 1);
  ck_assert_double_eq(metric(body, "steerd_clients{role=\"observer\"}"), 0);
  ck_assert_double_eq(metric(body, "steerd_commands_total{type=\"hello\",result=\"ok\"}"), 1);
  ck_assert_double_eq(metric(body, "steerd_commands_total{type=\"query\",result=\"error\"}"), 1);
  ck_assert_double_eq(metric(body, "steerd_commands_total{type=\"ping\",result=\"ok\"}"), 1);
  ck_assert_double_eq(metric(body, "steerd_errors_sent_total{code=\"no_such_agent\"}"), 1);
  ck_assert_double_eq(metric(body, "steerd_agents"),
                      STEERD_DEMO_AGENTS + STEERD_DEMO_GOTO); /* the demo world */
  ck_assert_double_eq(metric(body, "steerd_ready"), 1);
  double ticks = metric(body, "steerd_ticks_total");
  ck_assert_double_gt(ticks, 0);
  ck_assert_double_eq(metric(body, "steerd_tick_duration_seconds_count"), ticks);
  ck_assert_double_eq(metric(body, "steerd_tick_duration_seconds_bucket{le=\"+Inf\"}"), ticks);
  ck_assert_double_gt(metric(body, "steerd_snapshot_packets_sent_total{kind=\"full\"}"), 0);
  /* Every tick's lateness is counted; the loop's time is charged to what it did. */
  ck_assert_double_eq(metric(body, "steerd_tick_lateness_seconds_count"), ticks);
  ck_assert_double_eq(metric(body, "steerd_tick_lateness_seconds_bucket{le=\"+Inf\"}"), ticks);
  ck_assert_double_le(metric(body, "steerd_tick_lateness_seconds_bucket{le=\"0.0001\"}"), ticks);
  ck_assert_double_gt(metric(body, "steerd_loop_seconds_total{phase=\"step\"}"), 0);
  ck_assert_double_gt(metric(body, "steerd_loop_seconds_total{phase=\"commands\"}"), 0);
  ck_assert_double_gt(metric(body, "steerd_loop_seconds_total{phase=\"enet\"}"), 0);
  ck_assert_double_gt(metric(body, "steerd_loop_seconds_total{phase=\"send\"}"), 0);
  ck_assert_double_gt(metric(body, "steerd_loop_seconds_total{phase=\"http\"}"), 0); /* the probes' */
  double by_cause = 0;
  static const char *const causes[] = {"step", "commands", "enet", "send", "checkpoint", "http"};
  for (size_t i = 0; i < sizeof causes / sizeof causes[0]; i++) {
    char series[96];
    snprintf(series, sizeof series, "steerd_tick_overruns_by_cause_total{cause=\"%s\"}", causes[i]);
    by_cause += metric(body, series);
  }
  ck_assert_double_eq(by_cause, metric(body, "steerd_tick_overruns_total"));
  /* The worst tick period of the last ones: its phases add up to it, and it is no
   * more than all the loop's time so far. */
  double window = metric(body, "steerd_tick_window_ticks"),
         worst = metric(body, "steerd_tick_work_max_seconds");
  ck_assert_double_ge(window, 1);
  ck_assert_double_le(window, 512);
  ck_assert_double_le(window, ticks);
  ck_assert_double_gt(worst, 0);
  double parts = 0, loop = 0;
  for (size_t i = 0; i < sizeof causes / sizeof causes[0]; i++) {
    char series[96];
    snprintf(series, sizeof series, "steerd_tick_work_max_phase_seconds{phase=\"%s\"}", causes[i]);
    parts += metric(body, series);
    snprintf(series, sizeof series, "steerd_loop_seconds_total{phase=\"%s\"}", causes[i]);
    loop += metric(body, series);
  }
  ck_assert_double_eq_tol(parts, worst, 1e-5);
  ck_assert_double_le(worst, loop);
  /* Every series below is exported. */
  static const char *const names[] = {"steerd_tick_overruns_total ",
                                      "steerd_ticks_skipped_total ",
                                      "steerd_commands_rate_limited_total ",
                                      "steerd_malformed_packets_total ",
                                      "steerd_snapshot_sent_bytes_total{kind=\"delta\"} ",
                                      "steerd_delta_frames_without_baseline_total ",
                                      "steerd_snapshots_deferred_total{kind=\"full\",budget=\"server\"} ",
                                      "steerd_snapshots_deferred_total{kind=\"delta\",budget=\"server\"} ",
                                      "steerd_send_rounds_limited_total ",
                                      "steerd_events_lost_total ",
                                      "steerd_checkpoints_written_total ",
                                      "steerd_checkpoints_failed_total ",
                                      "steerd_checkpoint_last_success_age_seconds ",
                                      "steerd_connections_refused_total ",
                                      "steerd_peers_dropped_total{reason=\"queue_overflow\"} ",
                                      "steerd_plan_queue_length ",
                                      "steerd_plan_agents ",
                                      "steerd_plans_total{outcome=\"planned\"} ",
                                      "steerd_plan_duration_seconds_count ",
                                      "steerd_plan_graph_builds_total ",
                                      "steerd_plan_graph_loop_builds_total ",
                                      "steerd_plan_waits_total ",
                                      "steerd_plan_wait_seconds_total "};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    ck_assert_msg(strstr(body, names[i]) != NULL, "no %s in /metrics", names[i]);
  steerd_client_destroy(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

/* metrics.c alone: cumulative buckets, counts by type and code, and a buffer too small gives 0. */
START_TEST(test_metrics_render) {
  steerd_metrics_input in;
  memset(&in, 0, sizeof in);
  in.version = "9.9.9";
  in.stats.ticks = 10;
  in.stats.step_ns_total = 2500000; /* 2.5 ms */
  for (int b = 0; b < STEERD_TICK_BUCKETS; b++)
    in.stats.tick_seconds_bucket[b] = steerd_tick_bucket_bounds[b] >= 0.0005 ? 10 : 4;
  in.stats.commands_by_type[PROTO_MSG_SPAWN][1] = 3;
  in.stats.errors_by_code[PROTO_ERR_WORLD_FULL] = 3;
  in.stats.snapshot_packets = 50;
  in.stats.delta_packets = 20;
  in.clients_by_role[STEERD_ROLE_ADMIN] = 2;
  /* The planner's plan times come by bucket, and go out cumulative. */
  in.plan.plans = 7;
  in.plan.plan_time_bucket[0] = 2;
  in.plan.plan_time_bucket[3] = 4; /* one more above the last bound */
  in.plan.plan_ns = 1500000;
  in.plan.unreachable = 1;
  in.plan.planned = 6;
  in.plan.wait_ns = 2250000000ull;
  static char out[STEERD_METRICS_MAX_BYTES];
  size_t n = steerd_metrics_render(out, sizeof out, &in);
  ck_assert_uint_gt(n, 1000);
  ck_assert_uint_eq(strlen(out), n);
  ck_assert_double_eq(metric(out, "steerd_tick_duration_seconds_bucket{le=\"0.00025\"}"), 4);
  ck_assert_double_eq(metric(out, "steerd_tick_duration_seconds_bucket{le=\"0.0005\"}"), 10);
  ck_assert_double_eq(metric(out, "steerd_tick_duration_seconds_bucket{le=\"+Inf\"}"), 10);
  ck_assert_double_eq_tol(metric(out, "steerd_tick_duration_seconds_sum"), 0.0025, 1e-12);
  ck_assert_double_eq(metric(out, "steerd_commands_total{type=\"spawn\",result=\"error\"}"), 3);
  ck_assert_double_eq(metric(out, "steerd_errors_sent_total{code=\"world_full\"}"), 3);
  ck_assert_double_eq(metric(out, "steerd_snapshot_packets_sent_total{kind=\"full\"}"), 30);
  ck_assert_double_eq(metric(out, "steerd_snapshot_packets_sent_total{kind=\"delta\"}"), 20);
  ck_assert_double_eq(metric(out, "steerd_clients{role=\"admin\"}"), 2);
  ck_assert_double_eq(metric(out, "steerd_build_info{version=\"9.9.9\",protocol=\"1\"}"), 1);
  ck_assert_double_eq(metric(out, "steerd_plan_duration_seconds_bucket{le=\"1e-05\"}"), 2);
  ck_assert_double_eq(metric(out, "steerd_plan_duration_seconds_bucket{le=\"5e-05\"}"), 2);
  ck_assert_double_eq(metric(out, "steerd_plan_duration_seconds_bucket{le=\"0.0001\"}"), 6);
  ck_assert_double_eq(metric(out, "steerd_plan_duration_seconds_bucket{le=\"0.1\"}"), 6);
  ck_assert_double_eq(metric(out, "steerd_plan_duration_seconds_bucket{le=\"+Inf\"}"), 7);
  ck_assert_double_eq(metric(out, "steerd_plan_duration_seconds_count"), 7);
  ck_assert_double_eq_tol(metric(out, "steerd_plan_duration_seconds_sum"), 0.0015, 1e-12);
  ck_assert_double_eq(metric(out, "steerd_plans_total{outcome=\"planned\"}"), 6);
  ck_assert_double_eq(metric(out, "steerd_plans_total{outcome=\"unreachable\"}"), 1);
  ck_assert_double_eq_tol(metric(out, "steerd_plan_wait_seconds_total"), 2.25, 1e-9);
  ck_assert_uint_eq(steerd_metrics_render(out, n, &in), 0); /* one byte short for the NUL */
  ck_assert_uint_eq(steerd_metrics_render(out, 100, &in), 0);
}
END_TEST

/* A free TCP port on 127.0.0.1 for Prometheus (which takes no port 0). */
static uint16_t free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(s, (struct sockaddr *)&a, &len);
  close(s);
  return ntohs(a.sin_port);
}

/* Percent-encodes a PromQL expression for a query string. */
static void url_encode(const char *in, char *out, size_t cap) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = 0;
  for (; *in && n + 4 < cap; in++) {
    unsigned char ch = (unsigned char)*in;
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
        strchr("-_.~", ch)) {
      out[n++] = (char)ch;
    } else {
      out[n++] = '%';
      out[n++] = hex[ch >> 4];
      out[n++] = hex[ch & 15];
    }
  }
  ck_assert_msg(*in == '\0', "expression too long to encode");
  out[n] = '\0';
}

/* The number of series expr returns from the Prometheus on prom_port; fails
 * the test if Prometheus refuses the expression. */
static size_t prometheus_series(uint16_t prom_port, const char *expr) {
  char path[2048];
  strcpy(path, "/api/v1/query?query=");
  url_encode(expr, path + strlen(path), sizeof path - strlen(path));
  int status = http_get(prom_port, path, body, sizeof body, 5000);
  ck_assert_msg(status == 200 || status == 0 || status >= 500, "Prometheus refused \"%s\" (%d): %s", expr,
                status, body);
  if (status != 200)
    return 0;
  json_error_t err;
  json_t *root = json_loads(body, 0, &err);
  ck_assert_ptr_nonnull(root);
  ck_assert_str_eq(json_string_value(json_object_get(root, "status")), "success");
  size_t n = json_array_size(json_object_get(json_object_get(root, "data"), "result"));
  json_decref(root);
  return n;
}

/* The compose file's Grafana dashboard: every panel reads the provisioned
 * data source, and every query is valid PromQL that returns series from a
 * real Prometheus scraping a real server (a query naming a metric the server
 * does not export returns none). Rates need two scrapes, so each query gets
 * a few seconds. */
static void check_dashboard(uint16_t prom_port) {
  char path[512];
  snprintf(path, sizeof path, "%s/deploy/compose/grafana/provisioning/datasources/prometheus.yml",
           STEERD_SOURCE_DIR);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  size_t len = fread(body, 1, sizeof body - 1, f);
  body[len] = '\0';
  fclose(f);
  ck_assert_msg(strstr(body, "uid: steerd-prometheus") != NULL, "%s names no uid steerd-prometheus", path);
  snprintf(path, sizeof path, "%s/deploy/compose/grafana/dashboards/steerd.json", STEERD_SOURCE_DIR);
  json_error_t err;
  json_t *dash = json_load_file(path, 0, &err);
  ck_assert_msg(dash != NULL, "%s: line %d: %s", path, err.line, err.text);
  json_t *panels = json_object_get(dash, "panels");
  ck_assert_uint_ge(json_array_size(panels), 10);
  size_t queries = 0, i, j;
  json_t *panel, *target;
  json_array_foreach(panels, i, panel) {
    const char *title = json_string_value(json_object_get(panel, "title"));
    ck_assert_ptr_nonnull(title);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(panel, "datasource"), "uid")),
                     "steerd-prometheus");
    ck_assert_msg(json_array_size(json_object_get(panel, "targets")) > 0, "panel \"%s\" has no query", title);
    json_array_foreach(json_object_get(panel, "targets"), j, target) {
      const char *expr = json_string_value(json_object_get(target, "expr"));
      ck_assert_msg(expr != NULL, "panel \"%s\": a target without expr", title);
      size_t series = 0;
      uint64_t deadline = steerd_proc_now_ms() + 30000;
      while ((series = prometheus_series(prom_port, expr)) == 0 && steerd_proc_now_ms() < deadline)
        steerd_proc_sleep_ms(500);
      ck_assert_msg(series > 0, "panel \"%s\": \"%s\" returned no series", title, expr);
      queries++;
    }
  }
  ck_assert_uint_ge(queries, 20);
  json_decref(dash);
}

START_TEST(test_prometheus_scrapes) {
  steerd_proc p;
  start(&p, NULL);
  char dir[] = "/tmp/steerd-prom-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char cfg_path[256], log_path[256];
  snprintf(cfg_path, sizeof cfg_path, "%s/prometheus.yml", dir);
  snprintf(log_path, sizeof log_path, "%s/prometheus.log", dir);
  FILE *f = fopen(cfg_path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f,
          "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
          "scrape_configs:\n  - job_name: steerd\n    static_configs:\n      - targets: ['127.0.0.1:%u']\n",
          p.http_port);
  fclose(f);
  uint16_t prom_port = free_port();
  char listen[64], cfg_arg[300], data_arg[300];
  snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%u", prom_port);
  snprintf(cfg_arg, sizeof cfg_arg, "--config.file=%s", cfg_path);
  snprintf(data_arg, sizeof data_arg, "--storage.tsdb.path=%s/data", dir);
  pid_t prom = fork();
  ck_assert_int_ge(prom, 0);
  if (prom == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* a failed assertion ends the test process: Prometheus goes too */
    FILE *out = freopen(log_path, "w", stderr);
    (void)out;
    dup2(STDERR_FILENO, STDOUT_FILENO);
    execl("/usr/bin/prometheus", "prometheus", cfg_arg, data_arg, listen, (char *)NULL);
    _exit(127);
  }
  /* Prometheus scrapes every second; the series comes back through its query API. */
  int found = 0;
  uint64_t deadline = steerd_proc_now_ms() + 90000;
  while (!found && steerd_proc_now_ms() < deadline) {
    steerd_proc_sleep_ms(500);
    if (http_get(prom_port, "/api/v1/query?query=steerd_agents%7Bjob%3D%22steerd%22%7D", body, sizeof body,
                 5000) != 200)
      continue;
    json_error_t err;
    json_t *root = json_loads(body, 0, &err);
    json_t *result = json_object_get(json_object_get(root, "data"), "result");
    json_t *first = json_array_get(result, 0);
    json_t *value = json_array_get(json_object_get(first, "value"), 1);
    if (value && json_is_string(value)) {
      char want[16];
      snprintf(want, sizeof want, "%d", STEERD_DEMO_AGENTS + STEERD_DEMO_GOTO);
      ck_assert_str_eq(json_string_value(value), want);
      ck_assert_str_eq(json_string_value(json_object_get(json_object_get(first, "metric"), "__name__")),
                       "steerd_agents");
      found = 1;
    }
    json_decref(root);
  }
  if (found)
    check_dashboard(prom_port);
  kill(prom, SIGTERM);
  waitpid(prom, NULL, 0);
  ck_assert_msg(found, "Prometheus never returned steerd_agents (see %s)", log_path);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(run(cmd), 0);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

/* ---- state that cannot be saved ------------------------------------------------------ */

static int wait_ready(uint16_t port, int want, uint32_t timeout_ms) {
  uint64_t deadline = steerd_proc_now_ms() + timeout_ms;
  int status;
  while ((status = http_get(port, "/readyz", body, sizeof body, 5000)) != want &&
         steerd_proc_now_ms() < deadline)
    steerd_proc_sleep_ms(100);
  return status;
}

START_TEST(test_failing_checkpoint_is_visible) {
  char dir[] = "/tmp/steerd-ckpt-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char state[256];
  snprintf(state, sizeof state, "%s/world.state", dir);
  steerd_proc p;
  const char *extra[] = {"--state", state, "--checkpoint-interval", "1", NULL};
  start(&p, extra);
  uint64_t deadline = steerd_proc_now_ms() + 15000;
  while (access(state, F_OK) != 0 && steerd_proc_now_ms() < deadline)
    steerd_proc_sleep_ms(50);
  ck_assert_int_eq(access(state, F_OK), 0);
  ck_assert_int_eq(wait_ready(p.http_port, 200, 5000), 200);
  /* The volume goes away: the next checkpoints fail. */
  ck_assert_int_eq(unlink(state), 0);
  ck_assert_int_eq(rmdir(dir), 0);
  ck_assert_int_eq(wait_ready(p.http_port, 503, 15000), 503);
  ck_assert_ptr_nonnull(strstr(body, "checkpoint failed"));
  ck_assert_int_eq(http_get(p.http_port, "/healthz", NULL, 0, 5000), 200); /* alive all the same */
  ck_assert_int_eq(http_get(p.http_port, "/metrics", body, sizeof body, 5000), 200);
  ck_assert_double_ge(metric(body, "steerd_checkpoints_failed_total"), 1);
  ck_assert_double_eq(metric(body, "steerd_checkpoint_failing"), 1);
  ck_assert_double_eq(metric(body, "steerd_ready"), 0);
  ck_assert_double_ge(metric(body, "steerd_checkpoints_written_total"), 1);
  /* It comes back: ready again after the next good checkpoint. */
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  ck_assert_int_eq(wait_ready(p.http_port, 200, 15000), 200);
  ck_assert_int_eq(http_get(p.http_port, "/metrics", body, sizeof body, 5000), 200);
  ck_assert_double_eq(metric(body, "steerd_checkpoint_failing"), 0);
  ck_assert_double_lt(metric(body, "steerd_checkpoint_last_success_age_seconds"), 10);
  steerd_proc_stop(&p, 5000);
  unlink(state);
  rmdir(dir);
}
END_TEST

/* ---- the map ------------------------------------------------------------------------- */

/* A state file whose world has a circle, a square and a wall. */
static void write_map_state(const char *path) {
  steer_world_config wc = steer_default_world_config();
  wc.max_agents = 64;
  wc.min = v2(-100.0f, -100.0f);
  wc.max = v2(100.0f, 100.0f);
  steer_world *w = steer_world_create(&wc);
  ck_assert_ptr_nonnull(w);
  vec2 centre[1] = {v2(10.0f, 10.0f)};
  vec2 square[4] = {v2(-20.0f, -20.0f), v2(-10.0f, -20.0f), v2(-10.0f, -10.0f), v2(-20.0f, -10.0f)};
  vec2 wall[2] = {v2(30.0f, 0.0f), v2(30.0f, 20.0f)};
  steer_obstacle_desc circle = {STEER_OBSTACLE_CIRCLE, 1, centre, 3.0f};
  steer_obstacle_desc poly = {STEER_OBSTACLE_POLYGON, 4, square, 0.0f};
  steer_obstacle_desc line = {STEER_OBSTACLE_WALL, 2, wall, 0.0f};
  uint32_t moved;
  ck_assert_int_eq(steer_world_add_obstacle(w, 1, &circle, &moved), STEER_OK);
  ck_assert_int_eq(steer_world_add_obstacle(w, 2, &poly, &moved), STEER_OK);
  ck_assert_int_eq(steer_world_add_obstacle(w, 3, &line, &moved), STEER_OK);
  steerd_persist_server st;
  memset(&st, 0, sizeof st);
  st.next_client_id = 1;
  size_t world_len = steer_world_state_size(w), cap = steerd_persist_size(world_len, &st);
  uint8_t *buf = malloc(cap);
  ck_assert_ptr_nonnull(buf);
  ck_assert_int_eq(
      steer_world_save(w, buf + STEERD_PERSIST_WORLD_AT, cap - STEERD_PERSIST_WORLD_AT, &world_len),
      STEER_OK);
  size_t len = steerd_persist_encode(buf, cap, buf + STEERD_PERSIST_WORLD_AT, world_len, &st, 1);
  ck_assert_uint_gt(len, 0);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
  fclose(f);
  free(buf);
  steer_world_destroy(w);
}

/* The map's JSON as it was built with jansson (a tree, then json_dumps):
 * what steerd_map_json must write byte for byte. */
static char *map_json_by_jansson(const steer_map *m, vec2 lo, vec2 hi, const char *type) {
  static const char *const kinds[STEER_OBSTACLE_KIND_COUNT] = {"circle", "polygon", "wall"};
  json_t *o = json_object(), *list = json_array();
  if (type)
    json_object_set_new(o, "type", json_string(type));
  json_object_set_new(o, "version", json_integer(steer_map_version(m)));
  json_object_set_new(o, "bounds_m",
                      json_pack("[f,f,f,f]", (double)lo.x, (double)lo.y, (double)hi.x, (double)hi.y));
  for (uint32_t i = 0; i < steer_map_count(m); i++) {
    uint32_t id;
    steer_obstacle_desc d;
    ck_assert_int_eq(steer_map_get(m, i, &id, &d), STEER_OK);
    json_t *ob = json_object(), *pts = json_array();
    json_object_set_new(ob, "id", json_integer(id));
    json_object_set_new(ob, "kind", json_string(kinds[d.kind]));
    for (uint32_t k = 0; k < d.count; k++)
      json_array_append_new(pts, json_pack("[f,f]", (double)d.points[k].x, (double)d.points[k].y));
    json_object_set_new(ob, "points_m", pts);
    if (d.kind == STEER_OBSTACLE_CIRCLE)
      json_object_set_new(ob, "radius_m", json_real(d.radius));
    json_array_append_new(list, ob);
  }
  json_object_set_new(o, "obstacles", list);
  char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  return text;
}

/* The map's JSON is written directly, and is what jansson wrote: whole
 * numbers ("60.0"), 17 digits, exponents (1e-5, 1e20 written without '+' or
 * zeros), every kind; past a limit it stops and says so. */
START_TEST(test_map_json_as_jansson) {
  const vec2 lo = v2(-500.0f, -500.0f), hi = v2(500.0f, 500.0f);
  steer_map *m = steer_map_create(lo, hi, 4.0f);
  ck_assert_ptr_nonnull(m);
  size_t len = 99;
  char *empty = steerd_map_json(m, lo, hi, "map", 0, &len);
  ck_assert_str_eq(
      empty, "{\"type\":\"map\",\"version\":0,\"bounds_m\":[-500.0,-500.0,500.0,500.0],\"obstacles\":[]}");
  ck_assert_uint_eq(len, strlen(empty));
  free(empty);
  vec2 room[4] = {{60.0f, -40.0f}, {140.0f, -40.0f}, {140.0f, -39.0f}, {60.0f, -39.0f}};
  vec2 odd[5] = {
      {0.1f, 1e-5f}, {499.99997f, 1e-5f}, {499.99997f, 3.0e-3f}, {-1.0f / 3.0f, 7e-4f}, {-123.456f, 2.5e-8f}};
  vec2 wall[3] = {{-0.0f, 1e-20f}, {1e-6f, 250.0f}, {-499.5f, 250.0f}};
  vec2 c = v2(74.0f, 12.0f);
  steer_obstacle_desc o[4] = {{STEER_OBSTACLE_POLYGON, 4, room, 0.0f},
                              {STEER_OBSTACLE_POLYGON, 5, odd, 0.0f},
                              {STEER_OBSTACLE_WALL, 3, wall, 0.0f},
                              {STEER_OBSTACLE_CIRCLE, 1, &c, 1.0f / 7.0f}};
  for (uint32_t i = 0; i < 4; i++)
    ck_assert_int_eq(steer_map_add(m, i == 3 ? 4000000000u : i + 1u, &o[i]), STEER_OK);
  for (int typed = 0; typed < 2; typed++) {
    char *want = map_json_by_jansson(m, lo, hi, typed ? "map" : NULL);
    char *got = steerd_map_json(m, lo, hi, typed ? "map" : NULL, 0, &len);
    ck_assert_ptr_nonnull(want);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, want);
    ck_assert_uint_eq(len, strlen(want));
    /* Exactly its length fits a limit; a byte less is over it. */
    free(got);
    got = steerd_map_json(m, lo, hi, typed ? "map" : NULL, strlen(want), &len);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, want);
    free(got);
    ck_assert_ptr_null(steerd_map_json(m, lo, hi, typed ? "map" : NULL, strlen(want) - 1u, &len));
    ck_assert_uint_eq(len, strlen(want));
    free(want);
  }
  steer_map_destroy(m);
}
END_TEST

START_TEST(test_map_api) {
  char dir[] = "/tmp/steerd-map-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char state[256];
  snprintf(state, sizeof state, "%s/world.state", dir);
  write_map_state(state);
  steerd_proc p;
  const char *extra[] = {"--state", state, "--checkpoint-interval", "0", NULL};
  start(&p, extra);
  ck_assert_int_eq(http_get(p.http_port, "/api/map", body, sizeof body, 5000), 200);
  json_error_t err;
  json_t *m = json_loads(body, 0, &err);
  ck_assert_msg(m != NULL, "%s", body);
  json_t *obs = json_object_get(m, "obstacles");
  ck_assert_uint_eq(json_array_size(obs), 3);
  json_t *c = json_array_get(obs, 0);
  ck_assert_str_eq(json_string_value(json_object_get(c, "kind")), "circle");
  ck_assert_double_eq_tol(json_real_value(json_object_get(c, "radius_m")), 3.0, 1e-6);
  ck_assert_double_eq_tol(
      json_real_value(json_array_get(json_array_get(json_object_get(c, "points_m"), 0), 0)), 10.0, 1e-6);
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(obs, 1), "kind")), "polygon");
  ck_assert_uint_eq(json_array_size(json_object_get(json_array_get(obs, 1), "points_m")), 4);
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(obs, 2), "kind")), "wall");
  ck_assert_double_eq_tol(json_real_value(json_array_get(json_object_get(m, "bounds_m"), 2)), 100.0, 1e-6);
  json_decref(m);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
  unlink(state);
  rmdir(dir);
}
END_TEST

/* ---- logs ------------------------------------------------------------------------------ */

START_TEST(test_json_logs) {
  steerd_proc p;
  const char *extra[] = {"--log-format", "json", NULL};
  start(&p, extra);
  ck_assert_int_eq(http_get(p.http_port, "/healthz", NULL, 0, 5000), 200);
  FILE *f = fopen(p.log_path, "r");
  ck_assert_ptr_nonnull(f);
  char line[4096];
  int lines = 0, http_line = 0;
  while (fgets(line, sizeof line, f)) {
    json_error_t err;
    json_t *o = json_loads(line, 0, &err);
    ck_assert_msg(o && json_is_object(o), "not a JSON object: %s (%s)", line, err.text);
    ck_assert(json_is_string(json_object_get(o, "time")));
    ck_assert(json_is_string(json_object_get(o, "level")));
    ck_assert(json_is_string(json_object_get(o, "msg")));
    json_t *port = json_object_get(o, "http_port");
    if (port) {
      ck_assert_int_eq(json_integer_value(port), p.http_port);
      http_line = 1;
    }
    json_decref(o);
    lines++;
  }
  fclose(f);
  ck_assert_int_ge(lines, 3);
  ck_assert(http_line);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

/* ---- the drain ----------------------------------------------------------------------------- */

START_TEST(test_drain_on_sigterm) {
  char dir[] = "/tmp/steerd-drain-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char state[256];
  snprintf(state, sizeof state, "%s/world.state", dir);
  steerd_proc p;
  const char *extra[] = {"--state", state, "--checkpoint-interval", "0", "--drain-timeout", "4000", NULL};
  start(&p, extra);
  steerd_client_config cc = steerd_client_default_config();
  cc.name = "stays";
  steerd_client *stays = steerd_client_create(&cc);
  ck_assert_int_eq(steerd_client_connect(stays, "127.0.0.1", p.port), 0);
  ck_assert_int_eq(access(state, F_OK), -1); /* no interval checkpoints */

  uint64_t t0 = steerd_proc_now_ms();
  kill(p.pid, SIGTERM);
  /* The client is not serviced, so it cannot confirm the disconnect: the server
   * drains, not ready but alive, until it does or the drain times out. */
  ck_assert_int_eq(wait_ready(p.http_port, 503, 3000), 503);
  ck_assert_ptr_nonnull(strstr(body, "draining"));
  ck_assert_int_eq(http_get(p.http_port, "/healthz", NULL, 0, 3000), 200);
  /* The final checkpoint is written at once. */
  ck_assert_int_eq(access(state, F_OK), 0);
  /* A new client is refused. */
  cc.name = "late";
  steerd_client *late = steerd_client_create(&cc);
  ck_assert_int_eq(steerd_client_connect(late, "127.0.0.1", p.port), STEERD_CLIENT_EDISCONNECTED);
  ck_assert_uint_eq(steerd_client_disconnect_reason(late), PROTO_DISCONNECT_SHUTDOWN);
  steerd_client_destroy(late);
  /* The one that stayed hears why. */
  int rc = 0;
  for (int i = 0; i < 100 && rc >= 0; i++)
    rc = steerd_client_service(stays, 50);
  ck_assert_int_eq(rc, STEERD_CLIENT_EDISCONNECTED);
  ck_assert_uint_eq(steerd_client_disconnect_reason(stays), PROTO_DISCONNECT_SHUTDOWN);
  steerd_client_destroy(stays);
  /* And the process is gone within the drain timeout (and some slack for a busy machine). */
  int status = -1;
  while (waitpid(p.pid, &status, WNOHANG) == 0 && steerd_proc_now_ms() - t0 < 10000)
    steerd_proc_sleep_ms(20);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the server did not exit cleanly in 10 s");
  ck_assert(steerd_proc_log_contains(&p, "checkpoint (shutdown)"));
  p.pid = 0;
  steerd_proc_stop(&p, 1000);
  unlink(state);
  rmdir(dir);
}
END_TEST

/* No client to wait for: the drain still lasts --drain-min, and meanwhile /readyz
 * answers 503 (draining) and a live view's handshake 503, instead of the port
 * closing at once. */
START_TEST(test_readyz_503_right_after_sigterm) {
  steerd_proc p;
  const char *extra[] = {"--drain-min", "5000", "--drain-timeout", "20000", NULL};
  start(&p, extra);
  uint64_t t0 = steerd_proc_now_ms();
  kill(p.pid, SIGTERM);
  int status;
  while ((status = http_get(p.http_port, "/readyz", body, sizeof body, 5000)) == 200 &&
         steerd_proc_now_ms() - t0 < 5000)
    steerd_proc_sleep_ms(5);
  ck_assert_int_eq(status, 503);
  ck_assert_ptr_nonnull(strstr(body, "draining"));
  ck_assert_int_eq(http_get(p.http_port, "/healthz", NULL, 0, 3000), 200);
  ck_assert_int_eq(
      http_raw(p.http_port,
               "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Sec-WebSocket-Protocol: steerd-view\r\n\r\n",
               body, sizeof body, 5000, NULL),
      503);
  /* Then it exits 0 (within the drain timeout, and some slack for a busy machine). */
  int wstatus = -1;
  while (waitpid(p.pid, &wstatus, WNOHANG) == 0 && steerd_proc_now_ms() - t0 < 30000)
    steerd_proc_sleep_ms(20);
  ck_assert_msg(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0, "the server did not exit cleanly in 30 s");
  p.pid = 0;
  steerd_proc_stop(&p, 1000);
}
END_TEST

/* ---- connection limits ------------------------------------------------------------- */

/* A TCP connection to the HTTP port from source address `from` (127.0.0.x). */
static int connect_from(uint16_t port, const char *from) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, from, &src.sin_addr);
  inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&src, sizeof src), 0);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&dst, sizeof dst), 0);
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

/* Everything the server sends on fd until it closes it (or 5 s pass). */
static void read_all(int fd, char *out, size_t cap) {
  size_t n = 0;
  ssize_t r;
  while (n + 1 < cap && (r = recv(fd, out + n, cap - 1 - n, 0)) > 0)
    n += (size_t)r;
  out[n] = '\0';
}

/* A GET of /healthz on fd, answered 200. */
static void expect_served(int fd) {
  static const char get[] = "GET /healthz HTTP/1.1\r\nHost: steerd\r\n\r\n";
  ck_assert_int_eq(send(fd, get, sizeof get - 1, 0), (ssize_t)(sizeof get - 1));
  char buf[1024];
  ck_assert_int_gt(recv(fd, buf, sizeof buf, 0), 12);
  ck_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0);
}

static const char REFUSED_ADDRESS[] =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 63\r\n"
    "Retry-After: 1\r\nConnection: close\r\n\r\ntoo many HTTP connections from your address; retry in a "
    "second\n";
static const char REFUSED_FULL[] =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 55\r\n"
    "Retry-After: 1\r\nConnection: close\r\n\r\nevery HTTP connection slot is taken; retry in a second\n";

/* Connections past --http-max-per-address from one address, and past
 * --http-max-connections in all, are answered 503 with Retry-After and
 * closed, whether or not they sent a request; other addresses are served
 * until the port is full; a closed connection frees its slot; /metrics
 * counts the refusals. */
START_TEST(test_connection_limits) {
  steerd_proc p;
  static const char *const limits[] = {"--http-max-connections", "4", "--http-max-per-address", "2", NULL};
  start(&p, limits);
  /* Two idle connections from 127.0.0.1 take its slots (once the server has
   * accepted them: a GET on a third address waits for that). */
  int a1 = connect_from(p.http_port, "127.0.0.1"), a2 = connect_from(p.http_port, "127.0.0.1");
  int b = connect_from(p.http_port, "127.0.0.2");
  expect_served(b);
  static const char get[] = "GET /healthz HTTP/1.1\r\nHost: steerd\r\n\r\n";
  char buf[1024];
  /* A third from 127.0.0.1, with a request or without. */
  int a3 = connect_from(p.http_port, "127.0.0.1");
  read_all(a3, buf, sizeof buf);
  ck_assert_str_eq(buf, REFUSED_ADDRESS);
  close(a3);
  a3 = connect_from(p.http_port, "127.0.0.1");
  ck_assert_int_eq(send(a3, get, sizeof get - 1, 0), (ssize_t)(sizeof get - 1));
  read_all(a3, buf, sizeof buf);
  ck_assert_str_eq(buf, REFUSED_ADDRESS);
  close(a3);
  /* 127.0.0.3 takes the fourth slot; a fifth connection finds none. */
  int c = connect_from(p.http_port, "127.0.0.3");
  expect_served(c);
  int d = connect_from(p.http_port, "127.0.0.4");
  read_all(d, buf, sizeof buf);
  ck_assert_str_eq(buf, REFUSED_FULL);
  close(d);
  /* Closing frees a slot: 127.0.0.1 is served again. */
  close(a1);
  close(a2);
  close(b);
  close(c);
  /* The server notices the closes within a poll or two; until then a GET may
   * still find the port full, or count them open. */
  int got = 0;
  for (int i = 0; i < 100; i++) {
    got = http_get(p.http_port, "/metrics", body, sizeof body, 5000);
    if (got == 200 && metric(body, "steerd_http_connections") == 1) /* this GET's own */
      break;
    steerd_proc_sleep_ms(20);
  }
  ck_assert_int_eq(got, 200);
  ck_assert_double_eq(metric(body, "steerd_http_connections"), 1);
  ck_assert_double_eq(metric(body, "steerd_http_connections_refused_total{reason=\"address\"}"), 2);
  ck_assert_double_ge(metric(body, "steerd_http_connections_refused_total{reason=\"full\"}"), 1);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

static Suite *http_suite(void) {
  Suite *s = suite_create("http");
  TCase *tc = check_tcase(s, "http", 180);
  tcase_add_test(tc, test_probes_and_pages);
  tcase_add_test(tc, test_agent_neighbours_and_routes);
  tcase_add_test(tc, test_healthcheck_command);
  tcase_add_test(tc, test_port_in_use_refuses_to_start);
  tcase_add_test(tc, test_metrics_render);
  tcase_add_test(tc, test_metrics_promtool_and_counts);
  tcase_add_test(tc, test_prometheus_scrapes);
  tcase_add_test(tc, test_failing_checkpoint_is_visible);
  tcase_add_test(tc, test_json_logs);
  tcase_add_test(tc, test_map_json_as_jansson);
  tcase_add_test(tc, test_map_api);
  tcase_add_test(tc, test_drain_on_sigterm);
  tcase_add_test(tc, test_readyz_503_right_after_sigterm);
  tcase_add_test(tc, test_connection_limits);
  return s;
}

int main(void) { return check_run(http_suite()); }

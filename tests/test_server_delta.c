/* test_server_delta.c: delta snapshots through the real server and real ENet.
 *
 * The demo world runs in a steerd child process. A client taking full
 * snapshots and one taking delta snapshots (HELLO snapshots "delta") watch it
 * side by side: for every tick both received, every agent must be in both
 * frames at the same place within the dead-reckoning thresholds (plus the full
 * snapshot's own rounding). The delta client's SNAPSHOT_ACKs on channel 1 are
 * never answered. VIEW narrows what the delta client sees and widens it again;
 * following a missing agent is NO_SUCH_AGENT; a despawned agent leaves its
 * frames. EVENTs reach a delta client with a VIEW circle only for the agents
 * in it and its own. The steerd-client CLI, run as a child process with
 * --delta (and STEERD_DELTA=1), prints rebuilt frames of its --view. */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "world.h"
#include "check_run.h"
#include "child_run.h"
#include "client.h"
#include "protocol.h"
#include "steerd_proc.h"

#define RING      64
#define MAX_POSES 512
#define POS_TOL   (0.02 + 0.0071 + 1e-4) /* threshold + the full snapshot's rounding (m) */
#define ANGLE_TOL (3.14159265 / 180.0 + 1e-4)

typedef struct recorded {
  uint64_t tick;
  uint32_t count;
  proto_pose poses[MAX_POSES];
} recorded;

typedef struct recorder {
  steerd_client *client;
  recorded ring[RING];
  uint64_t frames;
  uint64_t errors;
} recorder;

static void on_frame(void *user, const steerd_client_frame *f) {
  recorder *r = user;
  recorded *slot = &r->ring[f->tick % RING];
  slot->tick = f->tick;
  slot->count = f->count < MAX_POSES ? f->count : MAX_POSES;
  memcpy(slot->poses, f->poses, slot->count * sizeof *f->poses);
  r->frames++;
}

static void on_reply(void *user, const proto_server_msg *m) {
  recorder *r = user;
  if (m->type == PROTO_MSG_ERROR)
    r->errors++;
}

static void connect_recorder(recorder *r, uint16_t port, int delta) {
  memset(r, 0, sizeof *r);
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = delta ? "delta" : "full";
  cfg.max_agents = 1024;
  cfg.snapshots = delta ? PROTO_SNAPSHOTS_DELTA : PROTO_SNAPSHOTS_FULL;
  cfg.callbacks.on_snapshot_frame = on_frame;
  cfg.callbacks.on_reply = on_reply;
  cfg.user = r;
  r->client = steerd_client_create(&cfg);
  ck_assert_ptr_nonnull(r->client);
  ck_assert_int_eq(steerd_client_connect(r->client, "127.0.0.1", port), 0);
}

static void pump(recorder *a, recorder *b, uint32_t ms) {
  uint64_t end = steerd_proc_now_ms() + ms;
  while (steerd_proc_now_ms() < end) {
    ck_assert_int_ge(steerd_client_service(a->client, 2), 0);
    ck_assert_int_ge(steerd_client_service(b->client, 2), 0);
  }
}

static const proto_pose *find_pose(const recorded *f, steer_id id) {
  for (uint32_t i = 0; i < f->count; i++)
    if (f->poses[i].id == id)
      return &f->poses[i];
  return NULL;
}

/* Compares every tick both have; returns how many ticks were compared. */
static uint32_t compare(const recorder *full, const recorder *delta, double *max_pos, double *max_ang) {
  uint32_t compared = 0;
  for (uint32_t i = 0; i < RING; i++) {
    const recorded *f = &full->ring[i], *d = &delta->ring[i];
    if (f->tick == 0 || f->tick != d->tick)
      continue;
    ck_assert_uint_eq(d->count, f->count);
    for (uint32_t k = 0; k < f->count; k++) {
      const proto_pose *p = find_pose(d, f->poses[k].id);
      ck_assert_msg(p != NULL, "tick %llu: agent %u missing from the delta frame",
                    (unsigned long long)f->tick, f->poses[k].id);
      double ex = p->x - f->poses[k].x, ey = p->y - f->poses[k].y;
      double e = sqrt(ex * ex + ey * ey);
      double a = fabs(remainder((double)p->theta - f->poses[k].theta, 2 * 3.14159265358979));
      *max_pos = e > *max_pos ? e : *max_pos;
      *max_ang = a > *max_ang ? a : *max_ang;
      ck_assert_msg(e <= POS_TOL, "tick %llu agent %u: %g m apart", (unsigned long long)f->tick, p->id, e);
      ck_assert_msg(a <= ANGLE_TOL, "tick %llu agent %u: %g rad apart", (unsigned long long)f->tick, p->id,
                    a);
    }
    compared++;
  }
  return compared;
}

static void clear(recorder *r) {
  for (uint32_t i = 0; i < RING; i++)
    r->ring[i].tick = 0;
}

static int send_view(recorder *r, const proto_view *v, proto_server_msg *reply) {
  proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_VIEW;
  cmd.view = *v;
  return steerd_client_command_wait(r->client, &cmd, 2000, reply);
}

START_TEST(test_delta_matches_full) {
  steerd_proc s;
  const char *args[] = {"--client-timeout", "2000", "--snapshot-budget", "4800", NULL};
  ck_assert_int_eq(steerd_proc_start(&s, STEERD_BINARY, args, 5000), 0);
  static recorder full, delta;
  connect_recorder(&full, s.port, 0);
  connect_recorder(&delta, s.port, 1);
  pump(&full, &delta, 1500); /* the delta client learns every agent */
  clear(&full);
  clear(&delta);
  pump(&full, &delta, 3000); /* 60 snapshots; a sanitizer build on a busy machine delivered 17 in 2 s */
  double max_pos = 0, max_ang = 0;
  uint32_t n = compare(&full, &delta, &max_pos, &max_ang);
  printf("delta vs full: %u ticks compared, max %.4f m, %.5f rad apart\n", n, max_pos, max_ang);
  ck_assert_uint_ge(n, 10);

  steerd_client_stats st;
  steerd_client_get_stats(delta.client, &st);
  /* Every rebuilt frame is acknowledged, however few a loaded machine delivers. */
  ck_assert_uint_ge(st.frames_complete, 10);
  ck_assert_uint_eq(st.delta_acks_sent, st.frames_complete);
  ck_assert_uint_eq(st.errors, 0); /* acks are never answered */
  ck_assert_uint_eq(delta.errors, 0);
  steerd_client_stats fs;
  steerd_client_get_stats(full.client, &fs);
  printf("bytes per frame: full %.0f, delta %.0f\n", (double)fs.snapshot_bytes / (double)fs.frames_complete,
         (double)st.snapshot_bytes / (double)st.frames_complete);
  ck_assert_uint_lt(st.snapshot_bytes / st.frames_complete, fs.snapshot_bytes / fs.frames_complete);

  /* A small view: only agents near its centre. */
  proto_server_msg reply;
  proto_view v = {PROTO_VIEW_CENTRE, proto_v2(0, 0), 0, 15.0f};
  ck_assert_int_eq(send_view(&delta, &v, &reply), 0);
  ck_assert_uint_eq(reply.ack.command, PROTO_MSG_VIEW);
  pump(&full, &delta, 500);
  clear(&full);
  clear(&delta);
  pump(&full, &delta, 1000);
  uint32_t checked = 0;
  for (uint32_t i = 0; i < RING; i++) {
    const recorded *f = &full.ring[i], *d = &delta.ring[i];
    if (f->tick == 0 || f->tick != d->tick)
      continue;
    uint32_t inside = 0;
    for (uint32_t k = 0; k < f->count; k++) {
      double r = hypot(f->poses[k].x, f->poses[k].y);
      const proto_pose *p = find_pose(d, f->poses[k].id);
      if (r < 14.9)
        ck_assert_msg(p != NULL, "agent %u at %.2f m is missing", f->poses[k].id, r);
      if (r > 15.1)
        ck_assert_msg(p == NULL, "agent %u at %.2f m is still there", f->poses[k].id, r);
      inside += r < 15.0;
    }
    ck_assert_uint_lt(d->count, f->count);
    checked++;
    (void)inside;
  }
  ck_assert_uint_gt(checked, 5);

  /* Following a missing agent: NO_SUCH_AGENT, field "follow". */
  proto_view bad = {PROTO_VIEW_FOLLOW, proto_v2(0, 0), 12345, 10.0f};
  ck_assert_int_eq(send_view(&delta, &bad, &reply), STEERD_CLIENT_EREPLY);
  ck_assert_uint_eq(reply.error.code, PROTO_ERR_NO_SUCH_AGENT);
  ck_assert_str_eq(reply.error.field, "follow");

  /* The whole world again, then an agent of ours comes and goes. */
  proto_view all = {PROTO_VIEW_ALL, proto_v2(0, 0), 0, 0};
  ck_assert_int_eq(send_view(&delta, &all, &reply), 0);
  proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SPAWN;
  cmd.spawn.model = STEER_MODEL_DYNAMIC;
  cmd.spawn.position = proto_v2(3, 4);
  ck_assert_int_eq(steerd_client_command_wait(delta.client, &cmd, 2000, &reply), 0);
  steer_id mine = reply.ack.agent;
  pump(&full, &delta, 1000);
  const recorded *last = &delta.ring[0];
  for (uint32_t i = 0; i < RING; i++)
    if (delta.ring[i].tick > last->tick)
      last = &delta.ring[i];
  const proto_pose *p = find_pose(last, mine);
  ck_assert_ptr_nonnull(p);
  ck_assert_float_eq_tol(p->x, 3.0f, 0.05f);
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_DESPAWN;
  cmd.despawn.agent = mine;
  ck_assert_int_eq(steerd_client_command_wait(delta.client, &cmd, 2000, &reply), 0);
  pump(&full, &delta, 500);
  for (uint32_t i = 0; i < RING; i++)
    if (delta.ring[i].tick > last->tick)
      last = &delta.ring[i];
  ck_assert_ptr_null(find_pose(last, mine));
  clear(&full);
  clear(&delta);
  pump(&full, &delta, 1000);
  ck_assert_uint_ge(compare(&full, &delta, &max_pos, &max_ang), 10);

  steerd_client_destroy(full.client);
  steerd_client_destroy(delta.client);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* ---- events follow the view ------------------------------------------------- */

#define MAX_EVENTS 64

typedef struct event_log {
  steerd_client *client;
  proto_event ev[MAX_EVENTS];
  uint32_t n;
} event_log;

static void log_event(void *user, const proto_event *e) {
  event_log *l = user;
  if (l->n < MAX_EVENTS)
    l->ev[l->n++] = *e;
}

static void connect_log(event_log *l, uint16_t port, int delta) {
  memset(l, 0, sizeof *l);
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = delta ? "watcher" : "other";
  cfg.snapshots = delta ? PROTO_SNAPSHOTS_DELTA : PROTO_SNAPSHOTS_FULL;
  cfg.callbacks.on_event = log_event;
  cfg.user = l;
  l->client = steerd_client_create(&cfg);
  ck_assert_ptr_nonnull(l->client);
  ck_assert_int_eq(steerd_client_connect(l->client, "127.0.0.1", port), 0);
}

static int has_event(const event_log *l, uint8_t code, steer_id agent) {
  for (uint32_t i = 0; i < l->n; i++)
    if (l->ev[i].code == code && l->ev[i].agent == agent)
      return 1;
  return 0;
}

/* An agent at (x, y) arriving at a point 2 m east; returns its id. */
static steer_id spawn_arriving(steerd_client *c, float x, float y) {
  proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SPAWN;
  cmd.spawn.model = STEER_MODEL_DYNAMIC;
  cmd.spawn.position = proto_v2(x, y);
  cmd.spawn.present = PROTO_SPAWN_BEHAVIOUR;
  cmd.spawn.behaviour.kind = STEER_BEHAVIOUR_ARRIVE;
  cmd.spawn.behaviour.present = PROTO_BHV_TARGET;
  cmd.spawn.behaviour.target = proto_v2(x + 2.0f, y);
  proto_server_msg reply;
  ck_assert_int_eq(steerd_client_command_wait(c, &cmd, 2000, &reply), 0);
  return reply.ack.agent;
}

static void despawn(steerd_client *c, steer_id id) {
  proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_DESPAWN;
  cmd.despawn.agent = id;
  proto_server_msg reply;
  ck_assert_int_eq(steerd_client_command_wait(c, &cmd, 2000, &reply), 0);
}

static void pump_logs(event_log *a, event_log *b, uint32_t ms) {
  uint64_t end = steerd_proc_now_ms() + ms;
  while (steerd_proc_now_ms() < end) {
    ck_assert_int_ge(steerd_client_service(a->client, 2), 0);
    ck_assert_int_ge(steerd_client_service(b->client, 2), 0);
  }
}

/* A delta client with a VIEW circle hears of the agents in it and of its own
 * only; a full-snapshot client hears of every agent. */
START_TEST(test_events_follow_view) {
  steerd_proc s;
  const char *args[] = {"--no-demo", NULL};
  ck_assert_int_eq(steerd_proc_start(&s, STEERD_BINARY, args, 5000), 0);
  static event_log watcher, other;
  connect_log(&watcher, s.port, 1);
  connect_log(&other, s.port, 0);
  proto_server_msg reply;
  proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_VIEW;
  cmd.view.kind = PROTO_VIEW_CENTRE;
  cmd.view.centre = proto_v2(50.0f, 50.0f);
  cmd.view.radius = 10.0f;
  ck_assert_int_eq(steerd_client_command_wait(watcher.client, &cmd, 2000, &reply), 0);
  pump_logs(&watcher, &other, 200); /* a snapshot: the view is in place */

  steer_id far = spawn_arriving(other.client, -50.0f, -50.0f);   /* another's, out of view */
  steer_id near = spawn_arriving(other.client, 50.0f, 50.0f);    /* another's, in view */
  steer_id mine = spawn_arriving(watcher.client, -50.0f, 50.0f); /* its own, out of view */
  pump_logs(&watcher, &other, 4000);                             /* all three arrive */
  despawn(other.client, near);
  despawn(other.client, far);
  pump_logs(&watcher, &other, 300);

  const steer_id agents[3] = {far, near, mine};
  for (int i = 0; i < 3; i++) {
    ck_assert_msg(has_event(&other, PROTO_EVENT_SPAWNED, agents[i]), "full client: SPAWNED %u", agents[i]);
    ck_assert_msg(has_event(&other, PROTO_EVENT_ARRIVED, agents[i]), "full client: ARRIVED %u", agents[i]);
  }
  ck_assert(has_event(&other, PROTO_EVENT_DESPAWNED, near) && has_event(&other, PROTO_EVENT_DESPAWNED, far));
  ck_assert(has_event(&watcher, PROTO_EVENT_SPAWNED, near) && has_event(&watcher, PROTO_EVENT_ARRIVED, near));
  ck_assert(has_event(&watcher, PROTO_EVENT_DESPAWNED, near));
  ck_assert(has_event(&watcher, PROTO_EVENT_SPAWNED, mine) && has_event(&watcher, PROTO_EVENT_ARRIVED, mine));
  ck_assert(!has_event(&watcher, PROTO_EVENT_SPAWNED, far) && !has_event(&watcher, PROTO_EVENT_ARRIVED, far));
  ck_assert(!has_event(&watcher, PROTO_EVENT_DESPAWNED, far));
  ck_assert_uint_eq(watcher.n, 5);

  steerd_client_destroy(watcher.client);
  steerd_client_destroy(other.client);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* ---- steerd-client --delta ------------------------------------------------- */

/* build/client-sample/steerd-client, next to build/server/steerd. */
static void client_binary(char *out, size_t cap) {
  ck_assert_int_eq(child_run_sibling(STEERD_BINARY, "client-sample/steerd-client", out, cap), 0);
  ck_assert_msg(access(out, X_OK) == 0, "%s is missing: build the steerd-client target", out);
}

typedef struct cli_run {
  int status; /* exit status, or -1: killed after the timeout */
  char out_path[64], err_path[64];
} cli_run;

/* Runs steerd-client with argv (argv[0] is replaced) and, besides this
 * process's environment without STEERD_DELTA and STEERD_TOKEN, the variable
 * env (may be NULL); stdout and stderr go to temporary files. Killed after
 * timeout_ms. */
static void run_cli(cli_run *r, char **argv, const char *env, uint32_t timeout_ms) {
  static char bin[1100];
  client_binary(bin, sizeof bin);
  argv[0] = bin;
  snprintf(r->out_path, sizeof r->out_path, "/tmp/steerd-cli-out-XXXXXX");
  snprintf(r->err_path, sizeof r->err_path, "/tmp/steerd-cli-err-XXXXXX");
  int out = mkstemp(r->out_path), err = mkstemp(r->err_path);
  ck_assert_int_ge(out, 0);
  ck_assert_int_ge(err, 0);
  static const char *const drop[] = {"STEERD_DELTA=", "STEERD_TOKEN=", NULL};
  const char *const add[] = {env, NULL}; /* env NULL: nothing added */
  char **envp = child_run_environ(drop, add);
  ck_assert_ptr_nonnull(envp);
  ck_assert_int_eq(child_run(bin, argv, envp, "/dev/null", out, err, timeout_ms, &r->status), 0);
  free(envp);
  close(out);
  close(err);
}

static void cli_done(cli_run *r) {
  unlink(r->out_path);
  unlink(r->err_path);
}

/* 1 if a line of the file contains needle. */
static int file_contains(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  char *line = NULL;
  size_t cap = 0;
  int found = 0;
  while (!found && getline(&line, &cap, f) >= 0)
    found = strstr(line, needle) != NULL;
  free(line);
  fclose(f);
  return found;
}

/* Lines of the file that begin with prefix and have at least one agent; the
 * largest distance of an agent from the origin in those after the first skip
 * goes to *max_r (may be NULL). */
static uint32_t count_lines(const char *path, const char *prefix, uint32_t skip, double *max_r) {
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  char *line = NULL;
  size_t cap = 0;
  uint32_t n = 0;
  while (getline(&line, &cap, f) >= 0) {
    if (strncmp(line, prefix, strlen(prefix)) != 0 || strstr(line, "\"agents\":[{") == NULL)
      continue;
    if (n++ < skip || max_r == NULL)
      continue;
    for (const char *p = strstr(line, "\"x\":"); p != NULL; p = strstr(p, "\"x\":")) {
      double x = strtod(p + 4, NULL);
      const char *q = strstr(p, "\"y\":");
      ck_assert_ptr_nonnull(q);
      double y = strtod(q + 4, NULL);
      double r = hypot(x, y);
      *max_r = r > *max_r ? r : *max_r;
      p = q;
    }
  }
  free(line);
  fclose(f);
  return n;
}

START_TEST(test_cli_delta_watch) {
  steerd_proc s;
  ck_assert_int_eq(steerd_proc_start(&s, STEERD_BINARY, NULL, 5000), 0);
  char port[16];
  snprintf(port, sizeof port, "%u", (unsigned)s.port);
  cli_run r;

  /* Delta snapshots of a 30 m view: 20 frames a second, only agents in view
   * (after the first few frames, which may predate the VIEW). Watched for 3 s
   * (60 frames): a sanitizer build on a busy machine delivered 17. */
  char *watch[] = {"",      "--delta",   "--host", "127.0.0.1", "--port", port,
                   "watch", "--seconds", "3",      "--view",    "0,0,30", NULL};
  run_cli(&r, watch, NULL, 8000);
  ck_assert_msg(r.status == 0, "steerd-client watch exited %d", r.status);
  double max_r = 0;
  uint32_t frames = count_lines(r.out_path, "{\"type\":\"snapshot\"", 5, &max_r);
  printf("steerd-client --delta watch: %u frames with agents, farthest agent %.2f m\n", frames, max_r);
  ck_assert_uint_ge(frames, 10);
  ck_assert_double_gt(max_r, 0.0);
  ck_assert_double_lt(max_r, 31.0); /* the demo has agents up to ~60 m away */
  ck_assert(file_contains(r.err_path, "(delta)"));
  ck_assert(file_contains(r.err_path, "frames rebuilt"));
  cli_done(&r);

  /* --view without delta snapshots: a usage error, before connecting. */
  char *bad[] = {"", "--port", port, "watch", "--seconds", "1", "--view", "0,0,30", NULL};
  run_cli(&r, bad, NULL, 5000);
  ck_assert_int_eq(r.status, 2);
  ck_assert(file_contains(r.err_path, "--view needs --delta"));
  cli_done(&r);

  /* STEERD_DELTA=1 and watch --interp: interpolated states of rebuilt frames. */
  char *interp[] = {"",         "--host",    "127.0.0.1", "--port", port,  "watch",
                    "--interp", "--seconds", "1",         "--view", "all", NULL};
  run_cli(&r, interp, "STEERD_DELTA=1", 6000);
  ck_assert_msg(r.status == 0, "steerd-client watch --interp exited %d", r.status);
  uint32_t samples = count_lines(r.out_path, "{\"type\":\"interp\"", 0, NULL);
  printf("STEERD_DELTA=1 steerd-client watch --interp: %u samples with agents\n", samples);
  ck_assert_uint_ge(samples, 10);
  ck_assert(file_contains(r.err_path, "frames rebuilt"));
  cli_done(&r);

  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

static Suite *server_delta_suite(void) {
  Suite *s = suite_create("server_delta");
  TCase *tc = check_tcase(s, "e2e", 120);
  tcase_add_test(tc, test_delta_matches_full);
  tcase_add_test(tc, test_events_follow_view);
  TCase *cli = check_tcase(s, "cli", 30);
  tcase_add_test(cli, test_cli_delta_watch);
  return s;
}

int main(void) {
  unsetenv("STEERD_SECRET");
  unsetenv("STEERD_SECRET_FILE");
  return check_run(server_delta_suite());
}

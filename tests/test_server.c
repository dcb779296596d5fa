/* test_server.c: the real server binary on 127.0.0.1, an ephemeral port, driven
 * over real ENet by the client library (and by raw ENet where a test needs a
 * client that misbehaves). Each test starts its own server. */
#include <check.h>
#include <enet/enet.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "world.h"
#include "auth.h"
#include "check_run.h"
#include "client.h"
#include "protocol.h"
#include "raw_peer.h"
#include "steerd_proc.h"

/* ---- the server process ---------------------------------------------------- */

typedef steerd_proc server_proc;

static uint64_t now_ms(void) { return steerd_proc_now_ms(); }

static int log_contains(const server_proc *s, const char *needle) {
  return steerd_proc_log_contains(s, needle);
}

/* Starts the server with a 1 s client timeout and extra flags. */
static void server_start(server_proc *s, const char *const *extra) {
  static const char *const base[] = {"--client-timeout", "1000", NULL};
  ck_assert_msg(steerd_proc_start_with(s, STEERD_BINARY, base, extra, 5000) == 0,
                "the server did not start listening within 5 s");
}

/* SIGTERM; the server must stop within 3 s. Returns the exit status. */
static int server_stop(server_proc *s) {
  int status = steerd_proc_stop(s, 3000);
  ck_assert_msg(status != -1, "the server did not stop within 3 s of SIGTERM");
  return status;
}

/* ---- a recording client ---------------------------------------------------------- */

#define MAX_EVENTS 256
#define HIST       16
#define MAX_TRACK  4096

typedef struct pose_sample {
  uint64_t tick;
  proto_pose pose;
} pose_sample;

typedef struct recorder {
  steerd_client *client;
  steer_id watch; /* agent whose poses are recorded */
  pose_sample track[MAX_TRACK];
  uint32_t track_count;
  proto_event events[MAX_EVENTS];
  uint32_t event_count;
  uint64_t frames;
  uint64_t span_from_us, span_to_us; /* frames of server times in (from, to] count in span_frames */
  uint64_t span_frames;
  uint64_t last_tick;
  uint64_t last_time_us;
  uint32_t last_count;
  uint32_t last_parts;
  /* the last HIST frames' first poses, for comparing clients */
  uint64_t hist_tick[HIST];
  uint32_t hist_count[HIST];
  proto_pose hist[HIST][64];
  uint32_t hist_next;
  /* one frame kept whole */
  int keep_next; /* keep the next frame whatever its tick */
  proto_pose kept[64];
  uint32_t kept_count;
  uint32_t disconnect_reason;
  int disconnected;
  uint32_t acks;                        /* replies seen by on_reply */
  uint32_t errors[PROTO_ERR_COUNT + 1]; /* by code; unknown codes at PROTO_ERR_COUNT */
} recorder;

static void on_frame(void *user, const steerd_client_frame *f) {
  recorder *r = user;
  r->frames++;
  if (f->server_time_us > r->span_from_us && f->server_time_us <= r->span_to_us)
    r->span_frames++;
  r->last_tick = f->tick;
  r->last_time_us = f->server_time_us;
  r->last_count = f->count;
  r->last_parts = f->part_count;
  uint32_t h = r->hist_next++ % HIST;
  r->hist_tick[h] = f->tick;
  r->hist_count[h] = f->count < 64 ? f->count : 64;
  memcpy(r->hist[h], f->poses, r->hist_count[h] * sizeof(proto_pose));
  if (r->keep_next) {
    r->keep_next = 0;
    r->kept_count = f->count < 64 ? f->count : 64;
    memcpy(r->kept, f->poses, r->kept_count * sizeof(proto_pose));
  }
  for (uint32_t i = 0; i < f->count && r->watch; i++)
    if (f->poses[i].id == r->watch && r->track_count < MAX_TRACK) {
      r->track[r->track_count].tick = f->tick;
      r->track[r->track_count].pose = f->poses[i];
      r->track_count++;
    }
}

static void on_event(void *user, const proto_event *e) {
  recorder *r = user;
  if (r->event_count < MAX_EVENTS)
    r->events[r->event_count++] = *e;
}

static void on_reply(void *user, const proto_server_msg *m) {
  recorder *r = user;
  if (m->type == PROTO_MSG_ACK)
    r->acks++;
  else if (m->type == PROTO_MSG_ERROR)
    r->errors[m->error.code < PROTO_ERR_COUNT ? m->error.code : PROTO_ERR_COUNT]++;
}

static void on_disconnect(void *user, uint32_t reason) {
  recorder *r = user;
  r->disconnected = 1;
  r->disconnect_reason = reason;
}

/* Connects with a token (NULL: none); returns steerd_client_connect's code. */
static int recorder_try_connect(recorder *r, const server_proc *s, const char *name, const char *token) {
  memset(r, 0, sizeof(*r));
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = name;
  cfg.token = token;
  cfg.max_agents = 2000;
  cfg.callbacks.on_snapshot_frame = on_frame;
  cfg.callbacks.on_event = on_event;
  cfg.callbacks.on_reply = on_reply;
  cfg.callbacks.on_disconnect = on_disconnect;
  cfg.user = r;
  r->client = steerd_client_create(&cfg);
  ck_assert_ptr_nonnull(r->client);
  return steerd_client_connect(r->client, "127.0.0.1", s->port);
}

static void recorder_connect(recorder *r, const server_proc *s, const char *name) {
  int rc = recorder_try_connect(r, s, name, NULL);
  ck_assert_msg(rc == 0, "connect: %s", steerd_client_strerror(rc));
}

/* ---- tokens ------------------------------------------------------------------ */

#define TEST_SECRET "steerd test secret, 32 bytes ok"

/* TEST_SECRET in a file for --secret-file, written by main() before the tests. */
static char secret_path[64];

/* A token signed with TEST_SECRET, valid for ttl seconds from now (negative: expired). */
static const char *make_token(char *out, size_t cap, const char *name, steerd_role role, long ttl) {
  steerd_auth a;
  ck_assert_int_eq(steerd_auth_init(&a, TEST_SECRET, strlen(TEST_SECRET)), 0);
  steerd_token t;
  memset(&t, 0, sizeof(t));
  snprintf(t.name, sizeof(t.name), "%s", name);
  t.role = role;
  t.issued_at = (uint64_t)time(NULL) - (ttl < 0 ? 7200 : 0);
  t.expires_at = (uint64_t)((long)time(NULL) + ttl);
  ck_assert_int_gt(steerd_auth_issue(&a, &t, out, cap), 0);
  return out;
}

/* Connects with a fresh token for name and role; asserts success. */
static void recorder_connect_as(recorder *r, const server_proc *s, const char *name, steerd_role role) {
  char token[STEERD_AUTH_MAX_TOKEN_BYTES + 1];
  make_token(token, sizeof(token), name, role, 3600);
  int rc = recorder_try_connect(r, s, name, token);
  ck_assert_msg(rc == 0, "connect as %s: %s", name, steerd_client_strerror(rc));
}

static void recorder_close(recorder *r) {
  steerd_client_disconnect(r->client, 500);
  steerd_client_destroy(r->client);
}

/* Services the client for ms milliseconds. */
static void pump(recorder *r, uint32_t ms) {
  uint64_t end = now_ms() + ms;
  while (now_ms() < end)
    steerd_client_service(r->client, 5);
}

/* Services the client until it has kept a frame (keep_next), or
 * for timeout_ms at most. */
static void pump_until_kept(recorder *r, uint32_t timeout_ms) {
  uint64_t end = now_ms() + timeout_ms;
  while (r->kept_count == 0 && now_ms() < end)
    steerd_client_service(r->client, 5);
}

/* Services the client until it has seen n more frames, or for timeout_ms at most. */
static void pump_frames(recorder *r, uint64_t n, uint32_t timeout_ms) {
  uint64_t end = now_ms() + timeout_ms, want = r->frames + n;
  while (r->frames < want && now_ms() < end)
    steerd_client_service(r->client, 5);
}

/* A client's rate counted by the server's clock: the frames stamped after the
 * last one seen now (span_start), against 20 Hz over the same span of server
 * time (span_check), so frames the test reads late count in full. */
static void span_start(recorder *r) {
  r->span_from_us = r->last_time_us;
  r->span_to_us = UINT64_MAX;
  r->span_frames = 0;
}

/* The frames a client gets over the next us of the server's clock (serviced
 * for timeout_ms at most). */
static uint64_t frames_over(recorder *r, uint64_t us, uint32_t timeout_ms) {
  r->span_from_us = r->last_time_us;
  r->span_to_us = r->last_time_us + us;
  r->span_frames = 0;
  uint64_t end = now_ms() + timeout_ms;
  while (r->last_time_us < r->span_to_us && now_ms() < end)
    steerd_client_service(r->client, 5);
  return r->span_frames;
}

static void span_check(const recorder *r, const char *who) {
  uint64_t us = r->last_time_us - r->span_from_us, want = us / 50000u;
  ck_assert_msg(r->span_frames + 2u >= want, "%s: %llu frames in %.2f s of the server's clock at 20 Hz", who,
                (unsigned long long)r->span_frames, (double)us / 1e6);
}

/* Services until an event of `code` for `agent` at index >= from arrives;
 * returns its index or -1. */
static int wait_event_from(recorder *r, uint32_t from, uint8_t code, steer_id agent, uint32_t timeout_ms) {
  uint64_t end = now_ms() + timeout_ms;
  uint32_t seen = from;
  while (now_ms() < end) {
    steerd_client_service(r->client, 5);
    for (; seen < r->event_count; seen++)
      if (r->events[seen].code == code && r->events[seen].agent == agent)
        return (int)seen;
  }
  return -1;
}

static int wait_event(recorder *r, uint8_t code, steer_id agent, uint32_t timeout_ms) {
  return wait_event_from(r, 0, code, agent, timeout_ms);
}

static proto_command command(uint8_t type) {
  proto_command c;
  memset(&c, 0, sizeof(c));
  c.type = type;
  return c;
}

/* Sends a command and expects an ACK; returns the ACK's agent. */
static steer_id expect_ack(recorder *r, const proto_command *c) {
  proto_server_msg reply;
  int rc = steerd_client_command_wait(r->client, c, 2000, &reply);
  ck_assert_msg(rc == 0, "command %u: %s (%s: %s)", c->type, steerd_client_strerror(rc),
                rc == STEERD_CLIENT_EREPLY ? proto_error_name((int)reply.error.code) : "-",
                rc == STEERD_CLIENT_EREPLY ? reply.error.message : "-");
  ck_assert_uint_eq(reply.type, PROTO_MSG_ACK);
  return reply.ack.agent;
}

/* Sends a command and expects an ERROR with the given code; returns it. */
static proto_error_msg expect_error(recorder *r, const proto_command *c, int code) {
  proto_server_msg reply;
  int rc = steerd_client_command_wait(r->client, c, 2000, &reply);
  ck_assert_int_eq(rc, STEERD_CLIENT_EREPLY);
  ck_assert_uint_eq(reply.type, PROTO_MSG_ERROR);
  ck_assert_msg((int)reply.error.code == code, "expected %s, got %s (%s)", proto_error_name(code),
                proto_error_name((int)reply.error.code), reply.error.message);
  return reply.error;
}

static steer_id spawn_dynamic(recorder *r, float x, float y) {
  proto_command c = command(PROTO_MSG_SPAWN);
  c.spawn.model = STEER_MODEL_DYNAMIC;
  c.spawn.position = proto_v2(x, y);
  return expect_ack(r, &c);
}

static const char *const quiet_world[] = {"--no-demo", NULL};

/* ---- tests -------------------------------------------------------------------------- */

START_TEST(ping_pong_path_reverses_in_events_and_snapshots) {
  server_proc s;
  server_start(&s, quiet_world);
  recorder r;
  recorder_connect(&r, &s, "pingpong");
  steer_id id = spawn_dynamic(&r, 0.0f, 0.0f);
  r.watch = id;
  proto_command c = command(PROTO_MSG_SET_PATH);
  c.set_path.agent = id;
  c.set_path.path.count = 2;
  c.set_path.path.points[0] = proto_v2(0.0f, 0.0f);
  c.set_path.path.points[1] = proto_v2(12.0f, 0.0f);
  c.set_path.path.radius = 1.0f;
  c.set_path.path.mode = STEER_PATH_PINGPONG;
  c.set_path.path.cornering = STEER_CORNER_NONE;
  expect_ack(&r, &c);

  int at = wait_event(&r, PROTO_EVENT_REVERSED, id, 15000);
  ck_assert_msg(at >= 0, "no REVERSED event within 15 s");
  ck_assert_uint_eq(r.events[at].data, 1); /* turned at the far end, node 1 */
  uint64_t reversed_tick = r.events[at].tick;
  pump(&r, 2500);
  /* Before the reversal it ran toward +x; well after it, toward -x. */
  int before = 0, after = 0;
  for (uint32_t i = 0; i < r.track_count; i++) {
    const pose_sample *p = &r.track[i];
    if (p->tick + 15 < reversed_tick && p->tick > reversed_tick - 60 && p->pose.vx > 0.5f)
      before++;
    if (p->tick > reversed_tick + 45 && p->pose.vx < -0.5f)
      after++;
    if (p->tick > reversed_tick + 45)
      ck_assert_msg(p->pose.vx < 0.0f, "tick %llu: vx %f after the reversal", (unsigned long long)p->tick,
                    p->pose.vx);
  }
  ck_assert_int_gt(before, 5);
  ck_assert_int_gt(after, 5);
  /* The next reversal is at the start. */
  int wp = wait_event_from(&r, (uint32_t)at + 1, PROTO_EVENT_REVERSED, id, 10000);
  ck_assert_int_ge(wp, 0);
  ck_assert_uint_eq(r.events[wp].data, 0);
  recorder_close(&r);
  ck_assert_int_eq(server_stop(&s), 0);
}
END_TEST

START_TEST(arrive_ends_at_rest_inside_the_radius) {
  server_proc s;
  server_start(&s, quiet_world);
  recorder r;
  recorder_connect(&r, &s, "arrive");
  steer_id id = spawn_dynamic(&r, -5.0f, -5.0f);
  r.watch = id;
  proto_command c = command(PROTO_MSG_SET_BEHAVIOUR);
  c.set_behaviour.agent = id;
  c.set_behaviour.behaviour.kind = STEER_BEHAVIOUR_ARRIVE;
  c.set_behaviour.behaviour.present = PROTO_BHV_TARGET;
  c.set_behaviour.behaviour.target = proto_v2(10.0f, 5.0f);
  expect_ack(&r, &c);
  ck_assert_msg(wait_event(&r, PROTO_EVENT_ARRIVED, id, 15000) >= 0, "no ARRIVED event within 15 s");
  uint32_t from = r.track_count;
  pump(&r, 2000);
  ck_assert_uint_gt(r.track_count, from + 8); /* 40 at 20 Hz, fewer on a loaded machine */
  const proto_pose *last = &r.track[r.track_count - 1].pose;
  float dist = hypotf(last->x - 10.0f, last->y - 5.0f);
  ck_assert_msg(dist < 0.5f, "ended %f m from the target", dist);
  ck_assert_msg(hypotf(last->vx, last->vy) < 0.02f, "still moving at %f m/s", hypotf(last->vx, last->vy));

  /* QUERY agrees with the snapshot. */
  c = command(PROTO_MSG_QUERY);
  c.query.agent = id;
  proto_server_msg reply;
  ck_assert_int_eq(steerd_client_command_wait(r.client, &c, 2000, &reply), 0);
  ck_assert_uint_eq(reply.ack.query.arrived, 1);
  ck_assert_float_eq_tol(reply.ack.query.state.position.x, last->x, 0.02f);
  recorder_close(&r);
  server_stop(&s);
}
END_TEST

START_TEST(two_clients_see_identical_snapshots) {
  server_proc s;
  server_start(&s, NULL); /* the demo world: everything moving */
  recorder a, b;
  recorder_connect(&a, &s, "a");
  recorder_connect(&b, &s, "b");
  /* Both serviced for a while; then a tick both have among their last frames
   * (the latest one) is compared pose for pose. */
  uint64_t end = now_ms() + 1000;
  while (now_ms() < end || a.frames < HIST || b.frames < HIST) {
    steerd_client_service(a.client, 2);
    steerd_client_service(b.client, 2);
    ck_assert_msg(now_ms() < end + 5000, "snapshots stopped: %llu and %llu frames",
                  (unsigned long long)a.frames, (unsigned long long)b.frames);
  }
  int ia = -1, ib = -1;
  for (int i = 0; i < HIST; i++)
    for (int j = 0; j < HIST; j++)
      if (a.hist_tick[i] == b.hist_tick[j] && (ia < 0 || a.hist_tick[i] > a.hist_tick[ia]))
        ia = i, ib = j;
  ck_assert_msg(ia >= 0, "no tick among the last %d frames of both", HIST);
  ck_assert_uint_gt(a.hist_count[ia], 10);
  ck_assert_uint_eq(a.hist_count[ia], b.hist_count[ib]);
  ck_assert_int_eq(memcmp(a.hist[ia], b.hist[ib], a.hist_count[ia] * sizeof(proto_pose)), 0);
  recorder_close(&a);
  recorder_close(&b);
  server_stop(&s);
}
END_TEST

/* A client that connects, spawns, then vanishes without a word (its host is
 * destroyed without a disconnect). */
static steer_id vanishing_client(uint16_t port) {
  steerd_raw_peer r;
  ck_assert_int_eq(steerd_raw_connect(&r, port, 3000), 0);
  proto_command c = command(PROTO_MSG_HELLO);
  c.hello.version = PROTO_VERSION;
  strcpy(c.hello.name, "ghost");
  ck_assert_uint_ne(steerd_raw_send(&r, &c, ENET_PACKET_FLAG_RELIABLE), 0);
  c = command(PROTO_MSG_SPAWN);
  c.spawn.model = STEER_MODEL_DYNAMIC;
  c.spawn.position = proto_v2(0.0f, 0.0f);
  c.spawn.present = PROTO_SPAWN_BEHAVIOUR;
  c.spawn.behaviour.kind = STEER_BEHAVIOUR_WANDER;
  uint32_t rid = steerd_raw_send(&r, &c, ENET_PACKET_FLAG_RELIABLE);
  ck_assert_uint_ne(rid, 0);
  proto_server_msg m;
  steer_id agent = 0;
  if (steerd_raw_wait_reply(&r, rid, 3000, NULL, NULL, &m) == 0 && m.type == PROTO_MSG_ACK)
    agent = m.ack.agent;
  steerd_raw_drop(&r); /* no disconnect is sent: the server only notices the silence */
  ck_assert_uint_ne(agent, 0);
  return agent;
}

START_TEST(vanished_client_times_out_and_its_agents_keep_moving) {
  server_proc s;
  server_start(&s, quiet_world);
  steer_id ghost_agent = vanishing_client(s.port);
  recorder r;
  recorder_connect(&r, &s, "observer");
  r.watch = ghost_agent;
  /* The server's timeout is 1 s here; give it 4. */
  uint64_t end = now_ms() + 4000;
  while (!log_contains(&s, "timed out") && now_ms() < end)
    pump(&r, 50);
  ck_assert_msg(log_contains(&s, "client 1 "), "no log line about the first client");
  ck_assert_msg(log_contains(&s, "timed out"), "the silent client was not timed out within 4 s");
  uint32_t from = r.track_count;
  pump(&r, 1000);
  ck_assert_uint_gt(r.track_count, from + 5); /* 20 at 20 Hz, fewer on a loaded machine */
  const proto_pose *a = &r.track[from].pose, *b = &r.track[r.track_count - 1].pose;
  ck_assert_msg(hypotf(b->x - a->x, b->y - a->y) > 0.5f, "the vanished client's agent stopped");
  recorder_close(&r);
  server_stop(&s);
}
END_TEST

/* Raw bytes on channel 0 through a second, misbehaving connection
 * (tests/support/raw_peer.h). */
typedef steerd_raw_peer raw_client;

static void raw_connect(raw_client *rc, uint16_t port) {
  ck_assert_msg(steerd_raw_connect(rc, port, 3000) == 0, "raw client could not connect");
}

typedef struct first_error {
  int got;
  proto_error_msg e;
} first_error;

static void on_raw_packet(void *user, uint8_t channel, const uint8_t *data, size_t len,
                          const proto_server_msg *m) {
  first_error *f = user;
  (void)channel, (void)data, (void)len;
  if (m && m->type == PROTO_MSG_ERROR && !f->got) {
    f->got = 1;
    f->e = m->error;
  }
}

/* Sends bytes and returns the next ERROR's code (0 if none within 2 s). */
static int raw_exchange(raw_client *rc, const void *data, size_t len, proto_error_msg *out) {
  ck_assert_int_eq(steerd_raw_send_bytes(rc, data, len, ENET_PACKET_FLAG_RELIABLE), 0);
  first_error f = {0};
  uint64_t end = now_ms() + 2000;
  while (!f.got && now_ms() < end)
    steerd_raw_pump(rc, 10, on_raw_packet, &f);
  if (f.got && out)
    *out = f.e;
  return f.got ? (int)f.e.code : 0;
}

/* HELLO (anonymous) and its WELCOME: before it, a peer gets one ERROR at most. */
static void raw_welcome(raw_client *rc) {
  proto_command c = command(PROTO_MSG_HELLO);
  c.hello.version = PROTO_VERSION;
  strcpy(c.hello.name, "raw");
  uint32_t rid = steerd_raw_send(rc, &c, ENET_PACKET_FLAG_RELIABLE);
  proto_server_msg m;
  ck_assert_msg(rid != 0 && steerd_raw_wait_reply(rc, rid, 3000, NULL, NULL, &m) == 0 &&
                    m.type == PROTO_MSG_WELCOME,
                "raw client got no WELCOME");
}

/* Services a raw client for ms; returns the disconnect reason, or -1. */
static int raw_wait_disconnect(raw_client *rc, uint32_t ms) {
  uint64_t end = now_ms() + ms;
  while (!rc->gone && now_ms() < end)
    steerd_raw_pump(rc, 5, NULL, NULL);
  return rc->gone ? (int)rc->reason : -1;
}

/* Packets of each flood per turn of the test's loop (a turn also services the
 * good client for up to 5 ms): some 3 000 a second of each. The unoptimised
 * build with sanitizers (the same as the server's) runs the server's handling
 * of each some 20 times slower, so it is flooded a quarter as hard: still
 * every refusal and drop below, at a load it can answer. */
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
#define FLOOD_BATCH 5
#else
#define FLOOD_BATCH 20
#endif

START_TEST(malformed_messages_get_errors_and_others_keep_full_rate) {
  server_proc s;
  server_start(&s, NULL);
  recorder good;
  recorder_connect(&good, &s, "good");
  raw_client bad;
  raw_connect(&bad, s.port);
  /* Before HELLO a peer gets one ERROR (test_abuse.c shows the rest). */
  static const uint8_t before_hello[] = {0x93, 0x08, 0x05, 0x81, 0xa5, 'a', 'g', 'e', 'n', 't', 0x01};
  ck_assert_int_eq(raw_exchange(&bad, before_hello, sizeof(before_hello), NULL), PROTO_ERR_NOT_WELCOMED);
  raw_welcome(&bad);

  proto_error_msg e;
  static const uint8_t garbage[] = {0xc1, 0x00, 0xff, 0x13};
  ck_assert_int_eq(raw_exchange(&bad, garbage, sizeof(garbage), &e), PROTO_ERR_BAD_MESSAGE);
  static const uint8_t not_array[] = {0x81, 0xa1, 'a', 0x01}; /* {"a": 1} */
  ck_assert_int_eq(raw_exchange(&bad, not_array, sizeof(not_array), NULL), PROTO_ERR_BAD_MESSAGE);
  static const uint8_t unknown_type[] = {0x93, 0x63, 0x07, 0x80}; /* [99, 7, {}] */
  ck_assert_int_eq(raw_exchange(&bad, unknown_type, sizeof(unknown_type), &e), PROTO_ERR_UNKNOWN_TYPE);
  ck_assert_uint_eq(e.request_id, 7);
  steerd_raw_drop(&bad);

  /* For two seconds: a welcomed peer floods valid commands (refused beyond its
   * rate) while peer after peer floods garbage until it is dropped; the good
   * client counts its frames meanwhile. */
  /* The good client's frames are counted by the server's clock over 2 s (40
   * snapshots at 20 Hz), so frames the test's own busy loop reads late still
   * count; first with no flood (the control, at the machine's load now), then
   * over the 2 s that follow the flood's start. */
  pump(&good, 100);
  /* Once the server has settled (an unoptimised build's start-up, with the
   * demo's mesh and its landmarks computed, can hold the first seconds'
   * snapshots back). */
  for (int i = 0; i < 10 && frames_over(&good, 1000000u, 3000) < 18u; i++)
    ;
  uint64_t control = frames_over(&good, 2000000u, 5000);
  recorder flooder;
  recorder_connect(&flooder, &s, "flooder");
  good.span_from_us = good.last_time_us;
  good.span_to_us = good.last_time_us + 2000000;
  uint64_t end = now_ms() + 2000;
  uint32_t garbage_sent = 0, dropped = 0, commands_sent = 0;
  raw_client g;
  int g_open = 0;
  while (now_ms() < end) {
    proto_command ping = command(PROTO_MSG_PING);
    for (int i = 0; i < FLOOD_BATCH; i++, commands_sent++)
      steerd_client_send(flooder.client, &ping, NULL);
    steerd_client_service(flooder.client, 0);
    if (!g_open) {
      raw_connect(&g, s.port);
      g_open = 1;
    }
    for (int i = 0; i < FLOOD_BATCH; i++, garbage_sent++)
      steerd_raw_send_bytes(&g, garbage, sizeof(garbage), ENET_PACKET_FLAG_RELIABLE);
    steerd_raw_pump(&g, 0, NULL, NULL);
    if (g.gone) {
      ck_assert_uint_eq(g.reason, PROTO_DISCONNECT_ABUSE);
      dropped++;
      steerd_raw_drop(&g);
      g_open = 0;
    }
    steerd_client_service(good.client, 5);
  }
  if (g_open)
    steerd_raw_drop(&g);
  /* 2 s of flood, then at most 1 s for the frames of its last moments: a server
   * that stalls for a second does not get there. */
  uint64_t drain_end = now_ms() + 1000;
  while (good.last_time_us < good.span_to_us && now_ms() < drain_end)
    steerd_client_service(good.client, 5);
  ck_assert_msg(good.last_time_us >= good.span_to_us,
                "the server's clock reached %.2f s of 2 s in 3 s of flood and drain",
                (double)(good.last_time_us - good.span_from_us) / 1e6);
  /* As many as without the flood, but for a few (a loaded machine's control
   * may itself fall short of 40). */
  ck_assert_msg(control >= 20, "good client got %llu frames in 2 s of the server's clock with no flood",
                (unsigned long long)control);
  ck_assert_msg(
      good.span_frames + 4u >= (control < 40u ? control : 40u),
      "good client got %llu frames of 2 s at 20 Hz (%llu with no flood) while %u garbage packets and %u "
      "commands flew",
      (unsigned long long)good.span_frames, (unsigned long long)control, garbage_sent, commands_sent);
  ck_assert_uint_gt(commands_sent, 1000);
  ck_assert_uint_ge(dropped, 3); /* garbage peers were dropped one after the other */
  pump(&flooder, 300);
  ck_assert_uint_gt(flooder.errors[PROTO_ERR_RATE_LIMITED], 500);
  ck_assert_uint_le(flooder.acks, 100 + 2 * 50 + 50); /* burst + 2 s at 50/s, with slack */
  ck_assert_int_eq(flooder.disconnected, 0);          /* refused, not dropped */
  /* And the server still answers. */
  uint64_t rtt;
  ck_assert_int_eq(steerd_client_ping(good.client, 2000, &rtt), 0);
  recorder_close(&flooder);
  recorder_close(&good);
  server_stop(&s);
}
END_TEST

START_TEST(garbage_beyond_the_limit_disconnects) {
  server_proc s;
  const char *const args[] = {"--no-demo", "--garbage-limit", "20", NULL};
  server_start(&s, args);
  raw_client bad;
  raw_connect(&bad, s.port);
  raw_welcome(&bad);
  static const uint8_t garbage[] = {0xc1};
  /* Twenty are tolerated (each gets its ERROR)... */
  for (int i = 0; i < 20; i++)
    ck_assert_int_eq(raw_exchange(&bad, garbage, sizeof(garbage), NULL), PROTO_ERR_BAD_MESSAGE);
  /* ...the 21st gets its ERROR and the disconnect. */
  ck_assert_int_eq(raw_exchange(&bad, garbage, sizeof(garbage), NULL), PROTO_ERR_BAD_MESSAGE);
  ck_assert_int_eq(raw_wait_disconnect(&bad, 2000), PROTO_DISCONNECT_ABUSE);
  steerd_raw_drop(&bad);
  /* Packets on channel 1 and oversized ones count too. */
  raw_connect(&bad, s.port);
  static uint8_t big[PROTO_MAX_MESSAGE_BYTES + 1];
  for (int i = 0; i < 10; i++)
    enet_peer_send(bad.peer, 1, enet_packet_create(garbage, sizeof(garbage), ENET_PACKET_FLAG_RELIABLE));
  for (int i = 0; i < 11; i++)
    enet_peer_send(bad.peer, 0, enet_packet_create(big, sizeof(big), ENET_PACKET_FLAG_RELIABLE));
  ck_assert_int_eq(raw_wait_disconnect(&bad, 3000), PROTO_DISCONNECT_ABUSE);
  steerd_raw_drop(&bad);
  ck_assert(log_contains(&s, "too many malformed packets"));
  server_stop(&s);
}
END_TEST

START_TEST(silent_peers_are_dropped_after_the_hello_timeout) {
  server_proc s;
  const char *const args[] = {"--no-demo", "--hello-timeout", "500", NULL};
  server_start(&s, args);
  raw_client quiet;
  raw_connect(&quiet, s.port);
  uint64_t t0 = now_ms();
  ck_assert_int_eq(raw_wait_disconnect(&quiet, 3000), PROTO_DISCONNECT_TIMEOUT);
  uint64_t waited = now_ms() - t0;
  ck_assert_msg(waited >= 400 && waited < 2000, "dropped after %llu ms", (unsigned long long)waited);
  steerd_raw_drop(&quiet);
  /* A peer that says HELLO in time stays well past it. */
  recorder r;
  recorder_connect(&r, &s, "prompt");
  pump(&r, 1200);
  ck_assert_int_eq(r.disconnected, 0);
  ck_assert_int_eq(steerd_client_ping(r.client, 2000, NULL), 0);
  recorder_close(&r);
  server_stop(&s);
}
END_TEST

START_TEST(commands_beyond_the_rate_are_refused) {
  server_proc s;
  const char *const args[] = {"--no-demo", "--rate-limit", "10", "--rate-burst", "5", NULL};
  server_start(&s, args);
  recorder r;
  recorder_connect(&r, &s, "eager"); /* HELLO took one token */
  steer_id a = spawn_dynamic(&r, 0.0f, 0.0f);
  /* 30 STOPs back to back: the bucket's 3 left, then nothing (a few more refill
   * while they travel). The refused ones are not applied: only ACKs count. */
  proto_command c = command(PROTO_MSG_STOP);
  c.stop.agent = a;
  for (int i = 0; i < 30; i++)
    ck_assert_int_eq(steerd_client_send(r.client, &c, NULL), 0);
  uint64_t end = now_ms() + 2000;
  while (r.acks + r.errors[PROTO_ERR_RATE_LIMITED] < 30 && now_ms() < end)
    steerd_client_service(r.client, 5);
  ck_assert_uint_eq(r.acks + r.errors[PROTO_ERR_RATE_LIMITED], 30);
  ck_assert_uint_ge(r.acks, 3);
  ck_assert_uint_le(r.acks, 6);
  /* The bucket refills at 10 per second. */
  pump(&r, 600);
  c = command(PROTO_MSG_QUERY);
  c.query.agent = a;
  ck_assert_uint_eq(expect_ack(&r, &c), a);
  recorder_close(&r);
  server_stop(&s);
}
END_TEST

/* HELLO with a token (NULL: none) over raw ENet; returns the ERROR's code (0
 * for none) and the disconnect reason that follows in *reason (-1: none). */
static int raw_hello(uint16_t port, const char *token, int *reason) {
  raw_client rc;
  raw_connect(&rc, port);
  proto_command c = command(PROTO_MSG_HELLO);
  c.request_id = 1;
  c.hello.version = PROTO_VERSION;
  strcpy(c.hello.name, "raw");
  if (token) {
    c.hello.has_token = 1;
    snprintf(c.hello.token, sizeof(c.hello.token), "%s", token);
  }
  uint8_t buf[2048];
  size_t n = proto_encode_command(buf, sizeof(buf), &c);
  ck_assert_uint_gt(n, 0);
  proto_error_msg e;
  int code = raw_exchange(&rc, buf, n, &e);
  if (code)
    ck_assert_str_eq(e.field, "token");
  *reason = raw_wait_disconnect(&rc, 2000);
  steerd_raw_drop(&rc);
  return code;
}

START_TEST(tokens_are_checked_at_hello) {
  server_proc s;
  const char *const args[] = {"--no-demo", "--secret-file", secret_path, NULL};
  server_start(&s, args);
  ck_assert(log_contains(&s, "authentication on"));
  char token[STEERD_AUTH_MAX_TOKEN_BYTES + 1];
  recorder r;
  /* No token. */
  ck_assert_int_eq(recorder_try_connect(&r, &s, "nobody", NULL), STEERD_CLIENT_EREPLY);
  ck_assert_uint_eq(steerd_client_last_error(r.client)->code, PROTO_ERR_UNAUTHORIZED);
  ck_assert_str_eq(steerd_client_last_error(r.client)->field, "token");
  steerd_client_destroy(r.client);
  int reason;
  ck_assert_int_eq(raw_hello(s.port, NULL, &reason), PROTO_ERR_UNAUTHORIZED);
  ck_assert_int_eq(reason, PROTO_DISCONNECT_AUTH_FAILED);
  /* Forged: signed with another secret. */
  steerd_auth other;
  ck_assert_int_eq(steerd_auth_init(&other, "not the server's secret at all", 30), 0);
  steerd_token t;
  memset(&t, 0, sizeof(t));
  strcpy(t.name, "mallory");
  t.role = STEERD_ROLE_ADMIN;
  t.expires_at = (uint64_t)time(NULL) + 3600;
  ck_assert_int_gt(steerd_auth_issue(&other, &t, token, sizeof(token)), 0);
  ck_assert_int_eq(recorder_try_connect(&r, &s, "mallory", token), STEERD_CLIENT_EREPLY);
  ck_assert_uint_eq(steerd_client_last_error(r.client)->code, PROTO_ERR_UNAUTHORIZED);
  steerd_client_destroy(r.client);
  ck_assert_int_eq(raw_hello(s.port, token, &reason), PROTO_ERR_UNAUTHORIZED);
  ck_assert_int_eq(reason, PROTO_DISCONNECT_AUTH_FAILED);
  /* Garbage. */
  ck_assert_int_eq(recorder_try_connect(&r, &s, "x", "stk1.not.atoken"), STEERD_CLIENT_EREPLY);
  ck_assert_uint_eq(steerd_client_last_error(r.client)->code, PROTO_ERR_UNAUTHORIZED);
  steerd_client_destroy(r.client);
  /* Expired an hour ago (replayed after expiry). */
  make_token(token, sizeof(token), "late", STEERD_ROLE_CONTROLLER, -3600);
  ck_assert_int_eq(recorder_try_connect(&r, &s, "late", token), STEERD_CLIENT_EREPLY);
  ck_assert_uint_eq(steerd_client_last_error(r.client)->code, PROTO_ERR_TOKEN_EXPIRED);
  steerd_client_destroy(r.client);
  ck_assert_int_eq(raw_hello(s.port, token, &reason), PROTO_ERR_TOKEN_EXPIRED);
  ck_assert_int_eq(reason, PROTO_DISCONNECT_AUTH_FAILED);
  /* A good one: the token's name is the client's, whatever HELLO's name says. */
  make_token(token, sizeof(token), "alice", STEERD_ROLE_CONTROLLER, 60);
  ck_assert_int_eq(recorder_try_connect(&r, &s, "not-alice", token), 0);
  ck_assert(log_contains(&s, "as 'alice' (token), role controller"));
  spawn_dynamic(&r, 0.0f, 0.0f);
  recorder_close(&r);
  server_stop(&s);
}
END_TEST

START_TEST(observers_command_nothing) {
  server_proc s;
  const char *const args[] = {"--secret-file", secret_path, NULL};
  server_start(&s, args);
  recorder o;
  recorder_connect_as(&o, &s, "watcher", STEERD_ROLE_OBSERVER);
  pump_frames(&o, 3, 5000);
  ck_assert_uint_gt(o.frames, 2); /* snapshots flow */
  o.keep_next = 1;
  pump_until_kept(&o, 5000);
  ck_assert_uint_gt(o.kept_count, 0);
  proto_command c = command(PROTO_MSG_SPAWN);
  c.spawn.model = STEER_MODEL_DYNAMIC;
  expect_error(&o, &c, PROTO_ERR_FORBIDDEN);
  c = command(PROTO_MSG_STOP);
  c.stop.agent = o.kept[0].id;
  expect_error(&o, &c, PROTO_ERR_FORBIDDEN);
  c = command(PROTO_MSG_QUERY);
  c.query.agent = o.kept[0].id;
  expect_ack(&o, &c);
  ck_assert_int_eq(steerd_client_ping(o.client, 2000, NULL), 0);
  recorder_close(&o);
  server_stop(&s);
}
END_TEST

START_TEST(anonymous_role_is_configurable) {
  server_proc s;
  const char *const args[] = {"--no-demo", "--anonymous-role", "observer", NULL};
  server_start(&s, args);
  ck_assert(log_contains(&s, "no secret configured"));
  recorder r;
  recorder_connect(&r, &s, "anon");
  proto_command c = command(PROTO_MSG_SPAWN);
  c.spawn.model = STEER_MODEL_DYNAMIC;
  expect_error(&r, &c, PROTO_ERR_FORBIDDEN);
  recorder_close(&r);
  server_stop(&s);
}
END_TEST

START_TEST(every_class_of_bad_input_gets_its_error) {
  server_proc s;
  const char *const args[] = {"--world", "-100,-100,100,100", "--max-path-points", "8", NULL};
  server_start(&s, args); /* the demo's agents move, so snapshots are full */
  recorder good, r;
  recorder_connect(&good, &s, "good");
  recorder_connect(&r, &s, "clumsy");
  steer_id a = spawn_dynamic(&r, 0.0f, 0.0f);
  proto_command slow = command(PROTO_MSG_SET_PARAMS); /* a ramp of 4 m, for a merge that fails */
  slow.set_params.agent = a;
  slow.set_params.params.present = PROTO_PARAM_SLOW_RADIUS;
  slow.set_params.params.v.slow_radius = 4.0f;
  expect_ack(&r, &slow);
  pump_frames(&good, 2, 5000);
  span_start(&good);
  struct {
    proto_command c;
    int code;
    const char *field;
  } cases[16];
  int n = 0;
  proto_command c;
#define CASE(code_, field_)                                                                                  \
  do {                                                                                                       \
    cases[n].c = c;                                                                                          \
    cases[n].code = code_;                                                                                   \
    cases[n].field = field_;                                                                                 \
    n++;                                                                                                     \
  } while (0)
  c = command(PROTO_MSG_SPAWN);
  c.spawn.model = STEER_MODEL_DYNAMIC;
  c.spawn.position = proto_v2(0.0f, 150.0f);
  CASE(PROTO_ERR_BAD_FIELD, "y"); /* outside the world */
  c.spawn.position = proto_v2(INFINITY, 0.0f);
  CASE(PROTO_ERR_BAD_FIELD, "x"); /* not finite */
  c.spawn.position = proto_v2(0.0f, 0.0f);
  c.spawn.present = PROTO_SPAWN_LIMITS;
  c.spawn.limits.present = PROTO_LIMIT_MAX_SPEED;
  c.spawn.limits.v.max_speed = 51.0f;
  CASE(PROTO_ERR_BAD_FIELD, "limits.max_speed"); /* outside its range */
  c.spawn.present = PROTO_SPAWN_VX;
  c.spawn.velocity.x = 80.0f;
  CASE(PROTO_ERR_BAD_FIELD, "vx");
  c.spawn.present = PROTO_SPAWN_BEHAVIOUR;
  c.spawn.behaviour.kind = STEER_BEHAVIOUR_SEEK;
  c.spawn.behaviour.present = PROTO_BHV_TARGET;
  c.spawn.behaviour.target = proto_v2(500.0f, 0.0f);
  CASE(PROTO_ERR_BAD_FIELD, "behaviour.target");
  c.spawn.behaviour.target = proto_v2(5.0f, 0.0f);
  c.spawn.behaviour.params.present = PROTO_PARAM_WANDER_RATE;
  c.spawn.behaviour.params.v.wander_rate = 1000.0f;
  CASE(PROTO_ERR_BAD_FIELD, "behaviour.params.wander_rate");
  c = command(PROTO_MSG_SET_PATH);
  c.set_path.agent = a;
  c.set_path.path.count = 9;
  c.set_path.path.radius = 1.0f;
  CASE(PROTO_ERR_BAD_FIELD, "points"); /* more than --max-path-points */
  c.set_path.path.count = 3;
  c.set_path.path.points[2] = proto_v2(0.0f, -101.0f);
  CASE(PROTO_ERR_BAD_FIELD, "points[2]");
  c.set_path.path.points[2] = proto_v2(0.0f, 0.0f);
  c.set_path.path.radius = 500.0f;
  CASE(PROTO_ERR_BAD_FIELD, "radius");
  /* Params that only fail once merged: refused before the path is touched. */
  c.set_path.path.radius = 1.0f;
  c.set_path.path.params.present = PROTO_PARAM_TARGET_RADIUS;
  c.set_path.path.params.v.target_radius = 10.0f; /* > the agent's slow_radius, 4 */
  CASE(PROTO_ERR_BAD_FIELD, "params");
  c = command(PROTO_MSG_SET_PARAMS);
  c.set_params.agent = a;
  c.set_params.params.present = PROTO_PARAM_TIME_TO_TARGET;
  c.set_params.params.v.time_to_target = 0.001f;
  CASE(PROTO_ERR_BAD_FIELD, "params.time_to_target");
  c.set_params.params.present = 0;
  c.set_params.limits.present = PROTO_LIMIT_RADIUS;
  c.set_params.limits.v.radius = 60.0f;
  CASE(PROTO_ERR_BAD_FIELD, "limits.radius");
#undef CASE
  for (int i = 0; i < n; i++) {
    proto_error_msg e = expect_error(&r, &cases[i].c, cases[i].code);
    ck_assert_msg(strcmp(e.field, cases[i].field) == 0, "case %d: field '%s', want '%s'", i, e.field,
                  cases[i].field);
  }
  /* The decoder's classes, as raw bytes on the same connection's server. */
  raw_client raw;
  raw_connect(&raw, s.port);
  proto_error_msg e;
  static const uint8_t hello_extra[] = {0x93, 0x01, 0x02, 0x83, 0xa7, 'v', 'e',  'r',  's', 'i', 'o', 'n',
                                        0x01, 0xa4, 'n',  'a',  'm',  'e', 0xa0, 0xa3, 'f', 'o', 'o', 0x01};
  ck_assert_int_eq(raw_exchange(&raw, hello_extra, sizeof(hello_extra), &e), PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "foo"); /* extra field */
  static const uint8_t hello_missing[] = {0x93, 0x01, 0x03, 0x81, 0xa4, 'n', 'a', 'm', 'e', 0xa0};
  ck_assert_int_eq(raw_exchange(&raw, hello_missing, sizeof(hello_missing), &e), PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "version"); /* missing field */
  static const uint8_t hello_type[] = {0x93, 0x01, 0x04, 0x82, 0xa7, 'v', 'e', 'r', 's', 'i',
                                       'o',  'n',  0xa1, '1',  0xa4, 'n', 'a', 'm', 'e', 0xa0};
  ck_assert_int_eq(raw_exchange(&raw, hello_type, sizeof(hello_type), &e), PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "version"); /* wrong type */
  raw_welcome(&raw);                    /* before WELCOME only HELLOs get every error */
  static const uint8_t unknown[] = {0x93, 0x30, 0x05, 0x80};
  ck_assert_int_eq(raw_exchange(&raw, unknown, sizeof(unknown), &e), PROTO_ERR_UNKNOWN_TYPE);
  ck_assert_str_eq(e.field, "type");
  steerd_raw_drop(&raw);
  /* The agent kept its behaviour: the refused SET_PATH left no path behind. */
  c = command(PROTO_MSG_QUERY);
  c.query.agent = a;
  proto_server_msg reply;
  ck_assert_int_eq(steerd_client_command_wait(r.client, &c, 2000, &reply), 0);
  ck_assert_uint_eq(reply.ack.query.behaviour, STEER_BEHAVIOUR_NONE);
  ck_assert_int_eq(reply.ack.query.path_node, -1);
  /* The other client kept its full rate throughout. */
  pump(&good, 500);
  span_check(&good, "good client");
  recorder_close(&r);
  recorder_close(&good);
  server_stop(&s);
}
END_TEST

START_TEST(agents_per_client_are_capped) {
  server_proc s;
  const char *const args[] = {"--no-demo", "--max-agents-per-client", "3", NULL};
  server_start(&s, args);
  recorder r, other;
  recorder_connect(&r, &s, "greedy");
  recorder_connect(&other, &s, "other");
  steer_id ids[3];
  for (int i = 0; i < 3; i++)
    ids[i] = spawn_dynamic(&r, (float)i, 0.0f);
  proto_command c = command(PROTO_MSG_SPAWN);
  c.spawn.model = STEER_MODEL_DYNAMIC;
  proto_error_msg e = expect_error(&r, &c, PROTO_ERR_QUOTA_EXCEEDED);
  ck_assert_int_eq(e.has_field, 0);
  spawn_dynamic(&other, 5.0f, 5.0f); /* a quota is per client */
  c = command(PROTO_MSG_DESPAWN);
  c.despawn.agent = ids[0];
  expect_ack(&r, &c);
  spawn_dynamic(&r, 9.0f, 0.0f); /* room again */
  recorder_close(&r);
  recorder_close(&other);
  server_stop(&s);
}
END_TEST

/* Waits for a DESPAWNED event of agent, servicing `also` too (may be NULL);
 * returns 1 if it came. */
static int saw_despawn(recorder *r, recorder *also, steer_id agent, uint32_t ms) {
  uint64_t end = now_ms() + ms;
  while (now_ms() < end) {
    if (also)
      steerd_client_service(also->client, 0);
    if (wait_event(r, PROTO_EVENT_DESPAWNED, agent, 5) >= 0)
      return 1;
  }
  return 0;
}

START_TEST(orphans_are_kept_by_default) {
  server_proc s;
  const char *const args[] = {"--no-demo", "--secret-file", secret_path, "--orphan-grace", "1", NULL};
  server_start(&s, args);
  recorder watch, a;
  recorder_connect_as(&watch, &s, "watch", STEERD_ROLE_OBSERVER);
  recorder_connect_as(&a, &s, "alice", STEERD_ROLE_CONTROLLER);
  uint32_t alice_id = steerd_client_welcome(a.client)->client_id;
  steer_id agent = spawn_dynamic(&a, 0.0f, 0.0f);
  recorder_close(&a);
  ck_assert_int_eq(saw_despawn(&watch, NULL, agent, 2000), 0);
  /* alice comes back: same client id, her agent again. */
  recorder_connect_as(&a, &s, "alice", STEERD_ROLE_CONTROLLER);
  ck_assert_uint_eq(steerd_client_welcome(a.client)->client_id, alice_id);
  proto_command c = command(PROTO_MSG_STOP);
  c.stop.agent = agent;
  expect_ack(&a, &c);
  recorder_close(&a);
  recorder_close(&watch);
  server_stop(&s);
}
END_TEST

START_TEST(orphans_despawn_after_the_grace) {
  server_proc s;
  const char *const args[] = {"--no-demo", "--secret-file",  secret_path, "--orphan-policy",
                              "despawn",   "--orphan-grace", "1",         NULL};
  server_start(&s, args);
  recorder watch, a, b;
  recorder_connect_as(&watch, &s, "watch", STEERD_ROLE_OBSERVER);
  /* alice leaves for good: her agents go after the grace. */
  recorder_connect_as(&a, &s, "alice", STEERD_ROLE_CONTROLLER);
  steer_id a1 = spawn_dynamic(&a, 0.0f, 0.0f), a2 = spawn_dynamic(&a, 1.0f, 0.0f);
  /* bob leaves and comes back in time: his stay, and he commands them again. */
  recorder_connect_as(&b, &s, "bob", STEERD_ROLE_CONTROLLER);
  steer_id b1 = spawn_dynamic(&b, 2.0f, 0.0f);
  uint64_t t0 = now_ms();
  recorder_close(&a);
  recorder_close(&b);
  pump(&watch, 300);
  recorder_connect_as(&b, &s, "bob", STEERD_ROLE_CONTROLLER);
  ck_assert_msg(saw_despawn(&watch, &b, a1, 3000), "alice's agent was not despawned");
  uint64_t waited = now_ms() - t0;
  ck_assert_msg(waited >= 900, "despawned after %llu ms, before the 1 s grace", (unsigned long long)waited);
  ck_assert(saw_despawn(&watch, &b, a2, 500));
  ck_assert_int_eq(saw_despawn(&watch, &b, b1, 1500), 0);
  proto_command c = command(PROTO_MSG_STOP);
  c.stop.agent = b1;
  expect_ack(&b, &c);
  ck_assert(log_contains(&s, "did not come back"));
  recorder_close(&b);
  recorder_close(&watch);
  server_stop(&s);
}
END_TEST

/* Runs the binary with a shell command line; returns its exit status and the
 * output (stdout and stderr) in out. */
static int run_binary(const char *cmdline, char *out, size_t cap) {
  char cmd[1024];
  snprintf(cmd, sizeof(cmd), "%s 2>&1", cmdline);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = '\0';
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(no_secret_off_loopback_needs_insecure) {
  /* Port 0 on 0.0.0.0 only to see the start or the refusal; no traffic is sent. */
  char out[8192], cmd[512];
  snprintf(cmd, sizeof(cmd),
           "env -u STEERD_SECRET -u STEERD_SECRET_FILE %s --bind 0.0.0.0 --port 0 --no-demo", STEERD_BINARY);
  ck_assert_int_eq(run_binary(cmd, out, sizeof(out)), 1);
  ck_assert_msg(strstr(out, "refusing to start") && strstr(out, "--insecure"), "output: %s", out);
  /* With --insecure it starts, and exits 0 on SIGTERM. (main() has unset
   * STEERD_SECRET and STEERD_SECRET_FILE.) Waiting for the line, not a fixed
   * time: a loaded machine may take seconds to start a sanitized build. */
  steerd_proc p;
  const char *const insecure[] = {"--bind", "0.0.0.0", "--no-demo", "--insecure", NULL};
  ck_assert_msg(steerd_proc_start(&p, STEERD_BINARY, insecure, 30000) == 0, "did not start with --insecure");
  ck_assert(steerd_proc_log_contains(&p, "INSECURE"));
  ck_assert_int_eq(steerd_proc_stop(&p, 10000), 0);
  /* With a secret it starts without --insecure. */
  const char *const secret[] = {"--bind", "0.0.0.0", "--no-demo", "--secret-file", secret_path, NULL};
  ck_assert_msg(steerd_proc_start(&p, STEERD_BINARY, secret, 30000) == 0, "did not start with a secret");
  ck_assert(steerd_proc_log_contains(&p, "authentication on"));
  ck_assert_int_eq(steerd_proc_stop(&p, 10000), 0);
  /* A short secret is refused. */
  snprintf(cmd, sizeof(cmd), "STEERD_SECRET=short %s --port 0 --no-demo", STEERD_BINARY);
  ck_assert_int_eq(run_binary(cmd, out, sizeof(out)), 2);
  ck_assert_msg(strstr(out, "at least 16"), "output: %s", out);
}
END_TEST

START_TEST(token_subcommand_issues_tokens) {
  char out[4096], cmd[512];
  snprintf(cmd, sizeof(cmd), "STEERD_SECRET='%s' %s token --name alice --role admin --ttl 60", TEST_SECRET,
           STEERD_BINARY);
  ck_assert_int_eq(run_binary(cmd, out, sizeof(out)), 0);
  out[strcspn(out, "\n")] = '\0';
  steerd_auth a;
  ck_assert_int_eq(steerd_auth_init(&a, TEST_SECRET, strlen(TEST_SECRET)), 0);
  steerd_token t;
  ck_assert_int_eq(steerd_auth_verify(&a, out, strlen(out), (uint64_t)time(NULL), &t), 0);
  ck_assert_str_eq(t.name, "alice");
  ck_assert_int_eq(t.role, STEERD_ROLE_ADMIN);
  ck_assert(t.expires_at >= (uint64_t)time(NULL) + 55 && t.expires_at <= (uint64_t)time(NULL) + 61);
  /* The secret file works the same way. */
  snprintf(cmd, sizeof(cmd), "env -u STEERD_SECRET %s token --name bob --secret-file %s", STEERD_BINARY,
           secret_path);
  ck_assert_int_eq(run_binary(cmd, out, sizeof(out)), 0);
  out[strcspn(out, "\n")] = '\0';
  ck_assert_int_eq(steerd_auth_verify(&a, out, strlen(out), (uint64_t)time(NULL), &t), 0);
  ck_assert_int_eq(t.role, STEERD_ROLE_CONTROLLER);
  /* Clear errors. */
  snprintf(cmd, sizeof(cmd), "env -u STEERD_SECRET -u STEERD_SECRET_FILE %s token --name x", STEERD_BINARY);
  ck_assert_int_eq(run_binary(cmd, out, sizeof(out)), 2);
  ck_assert_msg(strstr(out, "no secret configured"), "output: %s", out);
  snprintf(cmd, sizeof(cmd), "STEERD_SECRET='%s' %s token --name x --role king", TEST_SECRET, STEERD_BINARY);
  ck_assert_int_eq(run_binary(cmd, out, sizeof(out)), 2);
  snprintf(cmd, sizeof(cmd), "STEERD_SECRET='%s' %s token --role admin", TEST_SECRET, STEERD_BINARY);
  ck_assert_int_eq(run_binary(cmd, out, sizeof(out)), 2);
}
END_TEST

START_TEST(bad_commands_get_their_error_codes) {
  server_proc s;
  server_start(&s, quiet_world);
  recorder r;
  recorder_connect(&r, &s, "errors");
  steer_id a = spawn_dynamic(&r, 0.0f, 0.0f);

  proto_command c = command(PROTO_MSG_DESPAWN);
  c.despawn.agent = 12345;
  proto_error_msg e = expect_error(&r, &c, PROTO_ERR_NO_SUCH_AGENT);
  ck_assert_str_eq(e.field, "agent");

  c = command(PROTO_MSG_SPAWN);
  c.spawn.model = STEER_MODEL_DYNAMIC;
  c.spawn.position = proto_v2(9000.0f, 0.0f);
  e = expect_error(&r, &c, PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "x");

  c = command(PROTO_MSG_SET_BEHAVIOUR);
  c.set_behaviour.agent = a;
  c.set_behaviour.behaviour.kind = STEER_BEHAVIOUR_PURSUE;
  c.set_behaviour.behaviour.present = PROTO_BHV_TARGET_AGENT;
  c.set_behaviour.behaviour.target_agent = 999;
  expect_error(&r, &c, PROTO_ERR_BAD_TARGET);

  c = command(PROTO_MSG_SET_PATH);
  c.set_path.agent = a;
  c.set_path.path.count = 2;
  c.set_path.path.points[1] = proto_v2(5.0f, 0.0f);
  c.set_path.path.radius = 1.0f;
  c.set_path.path.cornering = STEER_CORNER_ARC; /* needs the heading model */
  expect_error(&r, &c, PROTO_ERR_MODEL_MISMATCH);

  c = command(PROTO_MSG_SET_PARAMS);
  c.set_params.agent = a;
  c.set_params.limits.present = PROTO_LIMIT_MAX_SPEED;
  c.set_params.limits.v.max_speed = -1.0f;
  expect_error(&r, &c, PROTO_ERR_BAD_FIELD);

  /* NaN never reaches the world: the encoder would write it, the decoder refuses. */
  c = command(PROTO_MSG_SPAWN);
  c.spawn.model = STEER_MODEL_DYNAMIC;
  c.spawn.position = proto_v2(NAN, 0.0f);
  e = expect_error(&r, &c, PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "x");

  /* After all that, the first agent is intact and the server answers. */
  c = command(PROTO_MSG_QUERY);
  c.query.agent = a;
  ck_assert_uint_eq(expect_ack(&r, &c), a);
  recorder_close(&r);
  server_stop(&s);
}
END_TEST

START_TEST(only_the_owner_commands_an_agent) {
  server_proc s;
  const char *const args[] = {"--secret-file", secret_path, NULL};
  server_start(&s, args); /* the demo world, with authentication */
  recorder a, b, admin;
  recorder_connect_as(&a, &s, "owner", STEERD_ROLE_CONTROLLER);
  recorder_connect_as(&b, &s, "other", STEERD_ROLE_CONTROLLER);
  recorder_connect_as(&admin, &s, "root", STEERD_ROLE_ADMIN);
  steer_id mine = spawn_dynamic(&a, 1.0f, 1.0f);
  proto_command c = command(PROTO_MSG_STOP);
  c.stop.agent = mine;
  proto_error_msg e = expect_error(&b, &c, PROTO_ERR_NOT_OWNER);
  ck_assert_str_eq(e.field, "agent");
  c = command(PROTO_MSG_DESPAWN);
  c.despawn.agent = mine;
  expect_error(&b, &c, PROTO_ERR_NOT_OWNER);
  /* Anyone may look, and the owner may act. */
  c = command(PROTO_MSG_QUERY);
  c.query.agent = mine;
  ck_assert_uint_eq(expect_ack(&b, &c), mine);
  c = command(PROTO_MSG_STOP);
  c.stop.agent = mine;
  ck_assert_uint_eq(expect_ack(&a, &c), mine);
  /* An admin commands anyone's agent. */
  c = command(PROTO_MSG_SET_BEHAVIOUR);
  c.set_behaviour.agent = mine;
  c.set_behaviour.behaviour.kind = STEER_BEHAVIOUR_WANDER;
  ck_assert_uint_eq(expect_ack(&admin, &c), mine);
  /* The demo's agents (owner 0) are the server's: only admins command them. */
  b.keep_next = 1;
  pump_until_kept(&b, 5000);
  ck_assert_uint_gt(b.kept_count, 0);
  c = command(PROTO_MSG_QUERY);
  c.query.agent = b.kept[0].id;
  proto_server_msg reply;
  ck_assert_int_eq(steerd_client_command_wait(b.client, &c, 2000, &reply), 0);
  ck_assert_uint_eq(reply.ack.query.owner, 0);
  c = command(PROTO_MSG_STOP);
  c.stop.agent = b.kept[0].id;
  expect_error(&b, &c, PROTO_ERR_NOT_OWNER);
  expect_ack(&admin, &c);
  c = command(PROTO_MSG_DESPAWN);
  c.despawn.agent = mine;
  expect_ack(&admin, &c);
  recorder_close(&a);
  recorder_close(&b);
  recorder_close(&admin);
  server_stop(&s);
}
END_TEST

/* The parts of one tick's snapshot as a raw client receives them. */
typedef struct split_parts {
  uint64_t tick;
  uint32_t agents, parts, part_count;
} split_parts;

static int split_whole(const split_parts *sp) { return sp->part_count != 0 && sp->parts >= sp->part_count; }

/* Every part within the budget, of the 500 agents; a new tick's part starts
 * the count again; nothing more once a tick is whole. */
static void on_snapshot_part(void *user, uint8_t channel, const uint8_t *data, size_t len,
                             const proto_server_msg *m) {
  split_parts *sp = user;
  (void)m;
  if (channel != PROTO_CHANNEL_SNAPSHOT || split_whole(sp))
    return;
  static proto_pose poses[PROTO_SNAPSHOT_PART_BYTES];
  proto_snapshot_header h;
  uint32_t count;
  ck_assert_int_eq(proto_decode_snapshot(data, len, &h, poses, NULL, PROTO_SNAPSHOT_PART_BYTES, &count, NULL),
                   0);
  ck_assert_uint_le(len, PROTO_SNAPSHOT_PART_BYTES);
  ck_assert_uint_eq(h.agent_total, 500);
  if (h.tick != sp->tick) { /* a new tick: count its parts from scratch */
    sp->tick = h.tick;
    sp->agents = sp->parts = 0;
    sp->part_count = h.part_count;
  }
  sp->agents += count;
  sp->parts++;
}

START_TEST(large_world_snapshots_split_under_the_mtu) {
  server_proc s;
  const char *const args[] = {"--no-demo", "--rate-limit",    "2000", "--rate-burst",
                              "1000",      "--command-queue", "1000", NULL};
  server_start(&s, args);
  recorder r;
  recorder_connect(&r, &s, "many");
  for (int i = 0; i < 500; i++) {
    proto_command c = command(PROTO_MSG_SPAWN);
    c.spawn.model = STEER_MODEL_KINEMATIC;
    c.spawn.position = proto_v2((float)(i % 25) * 4.0f - 50.0f, (float)(i / 25) * 4.0f - 40.0f);
    steerd_client_send(r.client, &c, NULL);
  }
  uint64_t end = now_ms() + 5000;
  while (r.last_count < 500 && now_ms() < end)
    steerd_client_service(r.client, 5);
  ck_assert_uint_eq(r.last_count, 500);
  ck_assert_uint_ge(r.last_parts, 2); /* 500 agents never fit one packet */
  /* Look at the raw packets: every part within the budget, one tick's parts
   * adding up to every agent. */
  raw_client raw;
  raw_connect(&raw, s.port);
  proto_command hello = command(PROTO_MSG_HELLO);
  hello.hello.version = PROTO_VERSION;
  strcpy(hello.hello.name, "raw");
  ck_assert_uint_ne(steerd_raw_send(&raw, &hello, ENET_PACKET_FLAG_RELIABLE), 0);
  split_parts sp = {0};
  end = now_ms() + 3000;
  while (now_ms() < end && !split_whole(&sp))
    steerd_raw_pump(&raw, 5, on_snapshot_part, &sp);
  ck_assert_uint_ge(sp.part_count, 2);
  ck_assert_uint_eq(sp.parts, sp.part_count);
  ck_assert_uint_eq(sp.agents, 500);
  steerd_raw_drop(&raw);
  recorder_close(&r);
  server_stop(&s);
}
END_TEST

START_TEST(sigterm_disconnects_clients_with_a_reason) {
  server_proc s;
  server_start(&s, NULL);
  recorder r;
  recorder_connect(&r, &s, "shutdown");
  pump(&r, 200);
  kill(s.pid, SIGTERM);
  uint64_t end = now_ms() + 3000;
  while (!r.disconnected && now_ms() < end)
    steerd_client_service(r.client, 10);
  ck_assert_msg(r.disconnected, "no disconnect within 3 s of SIGTERM");
  ck_assert_uint_eq(r.disconnect_reason, PROTO_DISCONNECT_SHUTDOWN);
  int status;
  ck_assert_int_eq(waitpid(s.pid, &status, 0), s.pid);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ck_assert(log_contains(&s, "shutting down"));
  unlink(s.log_path);
  steerd_client_destroy(r.client);
}
END_TEST

START_TEST(a_full_server_says_so) {
  server_proc s;
  const char *const args[] = {"--no-demo", "--max-clients", "1", NULL};
  server_start(&s, args);
  recorder a;
  recorder_connect(&a, &s, "first");
  steerd_client_config cfg = steerd_client_default_config();
  steerd_client *b = steerd_client_create(&cfg);
  ck_assert_int_eq(steerd_client_connect(b, "127.0.0.1", s.port), STEERD_CLIENT_EDISCONNECTED);
  ck_assert_uint_eq(steerd_client_disconnect_reason(b), PROTO_DISCONNECT_FULL);
  steerd_client_destroy(b);
  ck_assert_int_eq(steerd_client_ping(a.client, 2000, NULL), 0); /* the first is unaffected */
  recorder_close(&a);
  server_stop(&s);
}
END_TEST

START_TEST(help_lists_every_flag) {
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "%s --help", STEERD_BINARY);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  static char text[65536]; /* the whole text: a reader that stops early makes --help fail with EPIPE */
  size_t n = 0, got;
  while (n + 1 < sizeof(text) && (got = fread(text + n, 1, sizeof(text) - 1 - n, p)) > 0)
    n += got;
  text[n] = '\0';
  ck_assert_uint_lt(n + 1, sizeof(text));
  ck_assert_int_eq(pclose(p), 0);
  static const char *const flags[] = {"--bind",
                                      "STEERD_BIND",
                                      "--port",
                                      "--tick-rate",
                                      "--snapshot-rate",
                                      "--max-clients",
                                      "--max-agents",
                                      "--world",
                                      "--seed",
                                      "--demo",
                                      "--client-timeout",
                                      "--log-level",
                                      "--secret-file",
                                      "STEERD_SECRET",
                                      "--insecure",
                                      "--anonymous-role",
                                      "--orphan-policy",
                                      "--orphan-grace",
                                      "--hello-timeout",
                                      "--garbage-limit",
                                      "--rate-limit",
                                      "--rate-burst",
                                      "--command-budget-us",
                                      "--command-spare",
                                      "--command-queue",
                                      "--http-max-connections",
                                      "--http-max-per-address",
                                      "--max-agents-per-client",
                                      "--max-path-points",
                                      "steerd token"};
  for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
    ck_assert_msg(strstr(text, flags[i]) != NULL, "--help does not mention %s", flags[i]);
}
END_TEST

static Suite *server_suite(void) {
  Suite *s = suite_create("server");
  TCase *tc = check_tcase(s, "end to end", 60);
  tcase_add_test(tc, ping_pong_path_reverses_in_events_and_snapshots);
  tcase_add_test(tc, arrive_ends_at_rest_inside_the_radius);
  tcase_add_test(tc, two_clients_see_identical_snapshots);
  tcase_add_test(tc, vanished_client_times_out_and_its_agents_keep_moving);
  tcase_add_test(tc, malformed_messages_get_errors_and_others_keep_full_rate);
  tcase_add_test(tc, bad_commands_get_their_error_codes);
  tcase_add_test(tc, only_the_owner_commands_an_agent);
  tcase_add_test(tc, large_world_snapshots_split_under_the_mtu);
  tcase_add_test(tc, sigterm_disconnects_clients_with_a_reason);
  tcase_add_test(tc, a_full_server_says_so);
  tcase_add_test(tc, help_lists_every_flag);
  tcase_add_test(tc, garbage_beyond_the_limit_disconnects);
  tcase_add_test(tc, silent_peers_are_dropped_after_the_hello_timeout);
  tcase_add_test(tc, commands_beyond_the_rate_are_refused);
  tcase_add_test(tc, tokens_are_checked_at_hello);
  tcase_add_test(tc, observers_command_nothing);
  tcase_add_test(tc, anonymous_role_is_configurable);
  tcase_add_test(tc, every_class_of_bad_input_gets_its_error);
  tcase_add_test(tc, agents_per_client_are_capped);
  tcase_add_test(tc, orphans_are_kept_by_default);
  tcase_add_test(tc, orphans_despawn_after_the_grace);
  tcase_add_test(tc, no_secret_off_loopback_needs_insecure);
  tcase_add_test(tc, token_subcommand_issues_tokens);
  return s;
}

int main(void) {
  /* The tests choose the server's secret themselves. */
  unsetenv("STEERD_SECRET");
  unsetenv("STEERD_SECRET_FILE");
  strcpy(secret_path, "/tmp/steerd-secret-XXXXXX");
  int fd = mkstemp(secret_path);
  if (fd < 0 || write(fd, TEST_SECRET "\n", sizeof(TEST_SECRET)) != (ssize_t)sizeof(TEST_SECRET))
    return EXIT_FAILURE;
  close(fd);
  enet_initialize();
  int status = check_run(server_suite());
  enet_deinitialize();
  unlink(secret_path);
  return status;
}

/* test_protocol.c: the wire protocol's encoders, decoders and PROTOCOL.md.
 *
 * Exact bytes of a few messages, round trips of every message, every class of
 * bad input (with the expected code and field path), quantization, the snapshot
 * size bound, a mutation fuzz pass, and the hex examples of PROTOCOL.md checked
 * byte for byte against the encoder.
 *
 * Run with PROTO_PRINT_EXAMPLES=1 to print the examples in PROTOCOL.md's format. */
/* The reader's own header first: Check defines a macro named like its fail(). */
#include "wire_internal.h"

#include <check.h>
#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "mbuf.h"
#include "md_examples.h"
#include "protocol.h"
#include "wire_core.h"

#ifndef PROTOCOL_MD
#define PROTOCOL_MD "protocol/PROTOCOL.md"
#endif

#define ID1 4194305u /* generation 1, slot 1 */
#define ID2 4194306u

static uint8_t buf[PROTO_MAX_MESSAGE_BYTES + 64];
static uint8_t buf2[PROTO_MAX_MESSAGE_BYTES + 64];

/* ---- Example messages (the ones PROTOCOL.md shows) ------------------------- */

static proto_command cmd_hello(void) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = PROTO_MSG_HELLO;
  c.request_id = 1;
  c.hello.version = PROTO_VERSION;
  strcpy(c.hello.name, "godot-client");
  return c;
}

/* The HELLO of a server with a secret: the token is the one test_auth.c issues
 * for "godot-client", controller, under PROTOCOL.md's example secret. */
#define EXAMPLE_TOKEN                                                                                        \
  "stk1.lQGsZ29kb3QtY2xpZW50qmNvbnRyb2xsZXLOaVW5AM5pVarw.WyfI4-VbW9JIWLccNl0q-6pHhbq1RzHjjtskgQDm0Uw"

static proto_command cmd_hello_token(void) {
  proto_command c = cmd_hello();
  c.hello.has_token = 1;
  strcpy(c.hello.token, EXAMPLE_TOKEN);
  return c;
}

static proto_command cmd_spawn(void) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = PROTO_MSG_SPAWN;
  c.request_id = 2;
  c.spawn.model = STEER_MODEL_DYNAMIC;
  c.spawn.position = proto_v2(10.0f, -5.5f);
  c.spawn.present = PROTO_SPAWN_ORIENTATION | PROTO_SPAWN_LIMITS | PROTO_SPAWN_BEHAVIOUR;
  c.spawn.orientation = 1.5f;
  c.spawn.limits.present = PROTO_LIMIT_MAX_SPEED;
  c.spawn.limits.v.max_speed = 3.0f;
  c.spawn.behaviour.kind = STEER_BEHAVIOUR_ARRIVE;
  c.spawn.behaviour.present = PROTO_BHV_TARGET;
  c.spawn.behaviour.target = proto_v2(20.0f, 4.0f);
  c.spawn.behaviour.params.present = PROTO_PARAM_SLOW_RADIUS;
  c.spawn.behaviour.params.v.slow_radius = 3.0f;
  return c;
}

static proto_command cmd_agent(uint8_t type, uint32_t rid) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = type;
  c.request_id = rid;
  c.despawn.agent = ID1; /* despawn, stop and query share the layout */
  return c;
}

static proto_command cmd_set_behaviour(void) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = PROTO_MSG_SET_BEHAVIOUR;
  c.request_id = 4;
  c.set_behaviour.agent = ID1;
  c.set_behaviour.behaviour.kind = STEER_BEHAVIOUR_PURSUE;
  c.set_behaviour.behaviour.present = PROTO_BHV_TARGET_AGENT | PROTO_BHV_FACING;
  c.set_behaviour.behaviour.target_agent = ID2;
  c.set_behaviour.behaviour.facing = STEER_FACING_TARGET;
  return c;
}

static proto_command cmd_set_path(void) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = PROTO_MSG_SET_PATH;
  c.request_id = 5;
  c.set_path.agent = ID1;
  c.set_path.path.count = 3;
  c.set_path.path.points[0] = proto_v2(0.0f, 0.0f);
  c.set_path.path.points[1] = proto_v2(10.0f, 0.0f);
  c.set_path.path.points[2] = proto_v2(10.0f, 10.0f);
  c.set_path.path.radius = 1.0f;
  c.set_path.path.mode = STEER_PATH_PINGPONG;
  c.set_path.path.cornering = STEER_CORNER_NONE;
  return c;
}

static proto_command cmd_set_params(void) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = PROTO_MSG_SET_PARAMS;
  c.request_id = 6;
  c.set_params.agent = ID1;
  c.set_params.limits.present = PROTO_LIMIT_MAX_SPEED;
  c.set_params.limits.v.max_speed = 5.0f;
  c.set_params.params.present = PROTO_PARAM_TIME_TO_TARGET;
  c.set_params.params.v.time_to_target = 0.25f;
  return c;
}

static proto_command cmd_ping(void) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = PROTO_MSG_PING;
  c.request_id = 9;
  c.ping.client_time_us = 1700000000000000ull;
  return c;
}

static proto_welcome ex_welcome(void) {
  proto_welcome w;
  memset(&w, 0, sizeof w);
  w.request_id = 1;
  w.client_id = 3;
  w.tick_rate = 30;
  w.snapshot_rate = 15;
  w.world_min = proto_v2(-500.0f, -500.0f);
  w.world_max = proto_v2(500.0f, 500.0f);
  w.tick = 1234;
  w.server_time_us = 41133333;
  w.protocol = PROTO_VERSION;
  w.max_agents = 10000;
  return w;
}

static proto_ack ex_ack(uint8_t command, uint32_t rid) {
  proto_ack a;
  memset(&a, 0, sizeof a);
  a.request_id = rid;
  a.command = command;
  a.agent = ID1;
  if (command == PROTO_MSG_QUERY) {
    proto_agent_report *q = &a.query;
    q->agent = ID1;
    q->tick = 1235; /* the tick of the snapshot example, which shows the same state */
    q->model = STEER_MODEL_DYNAMIC;
    q->behaviour = STEER_BEHAVIOUR_FOLLOW_PATH;
    q->arrived = 0;
    q->path_node = 2;
    q->state.position = proto_v2(12.5f, -3.25f);
    q->state.orientation = 0.75f;
    q->state.velocity = proto_v2(1.5f, 0.5f);
    q->state.rotation = 0.0f;
    q->limits.max_speed = 3.0f;
    q->limits.max_acceleration = 10.0f;
    q->limits.max_rotation = 3.0f;
    q->limits.max_angular_acceleration = 12.0f;
    q->limits.radius = 0.5f;
    q->owner = 3;
    /* An avoider with stuck detection (the server always sends the tuning). */
    q->has_tuning = 1;
    q->tuning.avoid_weight = 1.0f;
    q->tuning.avoid_horizon = 3.0f;
    q->tuning.avoid_priority = 0;
    q->tuning.wall_lookahead = 1.0f;
    q->tuning.wall_margin = 0.25f;
    q->tuning.stuck_time = 5.0f;
    q->tuning.stuck_reaction = STEER_STUCK_REPORT;
  }
  if (command == PROTO_MSG_PING) {
    a.agent = 0;
    a.pong.client_time_us = 1700000000000000ull;
    a.pong.server_time_us = 41166666;
    a.pong.tick = 1235;
  }
  return a;
}

static const proto_pose ex_poses[2] = {{ID1, 12.5f, -3.25f, 0.75f, 1.5f, 0.5f},
                                       {ID2, -100.0f, 42.0f, -3.0f, 0.0f, 0.0f}};
static const proto_snapshot_header ex_snap = {1235, 41166666, 0, 1, 2};

static size_t enc_cmd(uint8_t *b, size_t cap, proto_command c) { return proto_encode_command(b, cap, &c); }

static size_t ex_hello(uint8_t *b, size_t cap) { return enc_cmd(b, cap, cmd_hello()); }
static size_t ex_hello_token(uint8_t *b, size_t cap) { return enc_cmd(b, cap, cmd_hello_token()); }
static size_t ex_spawn(uint8_t *b, size_t cap) { return enc_cmd(b, cap, cmd_spawn()); }
static size_t ex_despawn(uint8_t *b, size_t cap) { return enc_cmd(b, cap, cmd_agent(PROTO_MSG_DESPAWN, 3)); }
static size_t ex_set_behaviour(uint8_t *b, size_t cap) { return enc_cmd(b, cap, cmd_set_behaviour()); }
static size_t ex_set_path(uint8_t *b, size_t cap) { return enc_cmd(b, cap, cmd_set_path()); }
static size_t ex_set_params(uint8_t *b, size_t cap) { return enc_cmd(b, cap, cmd_set_params()); }
static size_t ex_stop(uint8_t *b, size_t cap) { return enc_cmd(b, cap, cmd_agent(PROTO_MSG_STOP, 7)); }
static size_t ex_query(uint8_t *b, size_t cap) { return enc_cmd(b, cap, cmd_agent(PROTO_MSG_QUERY, 8)); }
static size_t ex_ping(uint8_t *b, size_t cap) { return enc_cmd(b, cap, cmd_ping()); }
static size_t ex_welcome_enc(uint8_t *b, size_t cap) {
  proto_welcome w = ex_welcome();
  return proto_encode_welcome(b, cap, &w);
}
static size_t ex_ack_spawn(uint8_t *b, size_t cap) {
  proto_ack a = ex_ack(PROTO_MSG_SPAWN, 2);
  return proto_encode_ack(b, cap, &a);
}
static size_t ex_ack_query(uint8_t *b, size_t cap) {
  proto_ack a = ex_ack(PROTO_MSG_QUERY, 8);
  return proto_encode_ack(b, cap, &a);
}
static size_t ex_ack_ping(uint8_t *b, size_t cap) {
  proto_ack a = ex_ack(PROTO_MSG_PING, 9);
  return proto_encode_ack(b, cap, &a);
}
static size_t ex_ack_set_params_target_lost(uint8_t *b, size_t cap) {
  proto_ack a = ex_ack(PROTO_MSG_SET_PARAMS, 6);
  a.target_lost = 1;
  return proto_encode_ack(b, cap, &a);
}
static size_t ex_error(uint8_t *b, size_t cap) {
  return proto_encode_error(b, cap, 6, PROTO_ERR_BAD_FIELD, "must be > 0", "params.time_to_target");
}
/* What the server sends: NO_SUCH_AGENT names the agent field of the command... */
static size_t ex_error_agent(uint8_t *b, size_t cap) {
  return proto_encode_error(b, cap, 3, PROTO_ERR_NO_SUCH_AGENT, "no such agent", "agent");
}
/* ...and NOT_WELCOMED involves no field. */
static size_t ex_error_nil(uint8_t *b, size_t cap) {
  return proto_encode_error(b, cap, 2, PROTO_ERR_NOT_WELCOMED, "send HELLO first", NULL);
}
/* PROTOCOL.md 7.4: two events of one wake-up, none lost. */
static size_t ex_events(uint8_t *b, size_t cap) {
  proto_event e[2] = {{1240, PROTO_EVENT_WAYPOINT, 4194305, 2}, {1240, PROTO_EVENT_ARRIVED, 4194306, 0}};
  return proto_encode_events(b, cap, 0, e, 2);
}

static size_t ex_event(uint8_t *b, size_t cap) {
  proto_event e = {1240, PROTO_EVENT_WAYPOINT, ID1, 2};
  return proto_encode_event(b, cap, &e);
}
static size_t ex_snapshot(uint8_t *b, size_t cap) {
  return proto_encode_snapshot(b, cap, &ex_snap, ex_poses, 2);
}

static size_t ex_hello_delta(uint8_t *b, size_t cap) {
  proto_command c = cmd_hello();
  c.hello.has_snapshots = 1;
  c.hello.snapshots = PROTO_SNAPSHOTS_DELTA;
  return enc_cmd(b, cap, c);
}
static proto_command cmd_view(void) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = PROTO_MSG_VIEW;
  c.request_id = 10;
  c.view.kind = PROTO_VIEW_CENTRE;
  c.view.centre = proto_v2(12.5f, -3.25f);
  c.view.radius = 40.0f;
  return c;
}
static size_t ex_view(uint8_t *b, size_t cap) { return enc_cmd(b, cap, cmd_view()); }
static size_t ex_ack_view(uint8_t *b, size_t cap) {
  proto_ack a;
  memset(&a, 0, sizeof a);
  a.request_id = 10;
  a.command = PROTO_MSG_VIEW;
  return proto_encode_ack(b, cap, &a);
}
static size_t ex_snapshot_ack(uint8_t *b, size_t cap) {
  proto_snapshot_ack a = {.tick = 1237};
  return proto_encode_snapshot_ack(b, cap, &a);
}
static size_t ex_snapshot_ack_merged(uint8_t *b, size_t cap) {
  proto_snapshot_ack a = {.tick = 1237, .has_merged = 1, .merged_count = 2, .merged_step = {1, 3}};
  return proto_encode_snapshot_ack(b, cap, &a);
}

/* PROTOCOL.md 7.6's example: against the frame of tick 1235 (where agent ID1 is
 * as in the snapshot example), agent ID1 turned and sped up, ID2 left the view,
 * ID3 is new. */
#define ID3 4194307u
static const proto_delta_header ex_delta_h = {1237, 41233333, 1235, 0, 1};
static proto_record ex_delta_base(void) {
  proto_record r = proto_record_from_state(ID1, 12.5f, -3.25f, 0.75f, 1.5f, 0.5f, 0.0f, 41166666);
  return r;
}
static void ex_delta_entries(proto_delta_entry e[2]) {
  proto_record base = ex_delta_base();
  proto_record now = base;
  now.x = 1263, now.y = -322, now.theta = 7933, now.vx = 138, now.vy = 62, now.omega = 652;
  e[0] = proto_delta_diff(&base, &now, ex_delta_h.server_time_us);
  proto_record fresh = proto_record_from_state(ID3, 5.0f, -7.5f, 1.0f, 0.0f, 0.0f, 0.0f, 0);
  e[1] = proto_delta_diff(NULL, &fresh, ex_delta_h.server_time_us);
}
static size_t ex_delta(uint8_t *b, size_t cap) {
  proto_delta_entry e[2];
  const steer_id removed[1] = {ID2};
  ex_delta_entries(e);
  return proto_encode_delta(b, cap, &ex_delta_h, e, 2, removed, 1);
}

/* GOTO (PROTOCOL.md 5.3, 6.8, 7.4): a point target with a node radius... */
static proto_command cmd_set_behaviour_goto(void) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = PROTO_MSG_SET_BEHAVIOUR;
  c.request_id = 12;
  c.set_behaviour.agent = ID1;
  c.set_behaviour.behaviour.kind = PROTO_BEHAVIOUR_GOTO;
  c.set_behaviour.behaviour.present = PROTO_BHV_TARGET | PROTO_BHV_NODE_RADIUS;
  c.set_behaviour.behaviour.target = proto_v2(30.0f, 12.5f);
  c.set_behaviour.behaviour.node_radius = 0.75f;
  return c;
}
static size_t ex_set_behaviour_goto(uint8_t *b, size_t cap) {
  return enc_cmd(b, cap, cmd_set_behaviour_goto());
}
/* ... the QUERY of that agent once its route is planned: through the door's
 * corners (-0.75, 21.25) and (0.75, 21.25), then the target... */
static size_t ex_ack_query_goto(uint8_t *b, size_t cap) {
  proto_ack a = ex_ack(PROTO_MSG_QUERY, 13);
  proto_agent_report *q = &a.query;
  q->tick = 1250;
  q->behaviour = PROTO_BEHAVIOUR_GOTO;
  q->path_node = 0;
  q->state.position = proto_v2(-4.5f, 20.0f);
  q->state.orientation = 0.25f;
  q->state.velocity = proto_v2(2.75f, 0.75f);
  q->has_goto = 1;
  q->go.status = PROTO_GOTO_FOLLOWING;
  q->go.reason = PROTO_GOTO_NEW;
  q->go.target_kind = STEER_TARGET_POINT;
  q->go.target = proto_v2(30.0f, 12.5f);
  q->go.goal = proto_v2(30.0f, 12.5f);
  q->go.route_count = 3;
  q->go.route[0] = proto_v2(-0.75f, 21.25f);
  q->go.route[1] = proto_v2(0.75f, 21.25f);
  q->go.route[2] = proto_v2(30.0f, 12.5f);
  return proto_encode_ack(b, cap, &a);
}
/* ... its PLANNED event (a route of 43.12 m)... */
static size_t ex_event_planned(uint8_t *b, size_t cap) {
  proto_event e = {1241, PROTO_EVENT_PLANNED, ID1, 4312};
  return proto_encode_event(b, cap, &e);
}
/* ... a door closes: it is REPLANNED (51.27 m), and another agent's route has
 * no way left (UNREACHABLE, reason 1: the map changed)... */
static size_t ex_events_goto(uint8_t *b, size_t cap) {
  proto_event e[2] = {{1300, PROTO_EVENT_REPLANNED, ID1, 5127},
                      {1300, PROTO_EVENT_UNREACHABLE, ID2, PROTO_GOTO_MAP}};
  return proto_encode_events(b, cap, 0, e, 2);
}
/* ... and a target inside the map's geometry is refused. */
static size_t ex_error_goto_blocked(uint8_t *b, size_t cap) {
  return proto_encode_error(b, cap, 12, PROTO_ERR_BLOCKED, "the target is inside the map's geometry",
                            "behaviour.target");
}

static const steerd_example examples[] = {{"hello", ex_hello},
                                          {"hello_token", ex_hello_token},
                                          {"spawn", ex_spawn},
                                          {"despawn", ex_despawn},
                                          {"set_behaviour", ex_set_behaviour},
                                          {"set_path", ex_set_path},
                                          {"set_params", ex_set_params},
                                          {"stop", ex_stop},
                                          {"query", ex_query},
                                          {"ping", ex_ping},
                                          {"hello_delta", ex_hello_delta},
                                          {"view", ex_view},
                                          {"set_behaviour_goto", ex_set_behaviour_goto},
                                          {"welcome", ex_welcome_enc},
                                          {"ack_spawn", ex_ack_spawn},
                                          {"ack_query", ex_ack_query},
                                          {"ack_ping", ex_ack_ping},
                                          {"ack_set_params_target_lost", ex_ack_set_params_target_lost},
                                          {"error", ex_error},
                                          {"error_agent", ex_error_agent},
                                          {"error_nil", ex_error_nil},
                                          {"event", ex_event},
                                          {"snapshot", ex_snapshot},
                                          {"ack_view", ex_ack_view},
                                          {"ack_query_goto", ex_ack_query_goto},
                                          {"event_planned", ex_event_planned},
                                          {"error_goto_blocked", ex_error_goto_blocked},
                                          {"snapshot_ack", ex_snapshot_ack},
                                          {"snapshot_ack_merged", ex_snapshot_ack_merged},
                                          {"delta", ex_delta},
                                          {"events", ex_events},
                                          {"events_goto", ex_events_goto}};
#define EXAMPLE_COUNT    (sizeof examples / sizeof examples[0])
#define COMMAND_EXAMPLES 13 /* examples[0..12] are client commands, ... */
#define SERVER_EXAMPLES                                                                                      \
  (EXAMPLE_COUNT - 5) /* ... then server messages; the last five have their own decoders */

/* ---- Helpers ------------------------------------------------------------------ */

/* memmem is not POSIX. */
static uint8_t *find_bytes(uint8_t *hay, size_t n, const void *needle, size_t k) {
  for (size_t i = 0; k <= n && i <= n - k; i++)
    if (memcmp(hay + i, needle, k) == 0)
      return hay + i;
  return NULL;
}

static int decode_cmd_bytes(const void *b, size_t n, proto_command *c, proto_error_info *e) {
  return proto_decode_command(b, n, c, e);
}

static void expect_cmd_error(const void *b, size_t n, int code, const char *field) {
  static proto_command c;
  proto_error_info e;
  int rc = decode_cmd_bytes(b, n, &c, &e);
  ck_assert_msg(rc == -code && e.code == code, "expected %s (%s), got rc %d code %s field '%s' (%s)",
                proto_error_name(code), field, rc, proto_error_name(e.code), e.field, e.reason);
  if (field)
    ck_assert_str_eq(e.field, field);
  ck_assert_ptr_nonnull(e.reason);
}

static void expect_mb_error(mbuf *m, int code, const char *field) {
  expect_cmd_error(m->sb.data, m->sb.size, code, field);
  mb_free(m);
}

/* Encodes, decodes, re-encodes: the bytes must match (the encoder writes every
 * field the decoder reads, so this checks every field survives). */
static proto_command roundtrip_cmd(const proto_command *in) {
  static proto_command out;
  proto_error_info e;
  size_t n = proto_encode_command(buf, sizeof buf, in);
  ck_assert_msg(n > 0, "encode type %u", in->type);
  int rc = proto_decode_command(buf, n, &out, &e);
  ck_assert_msg(rc == 0, "decode type %u: %s %s (%s)", in->type, proto_error_name(e.code), e.field, e.reason);
  ck_assert_uint_eq(out.type, in->type);
  ck_assert_uint_eq(out.request_id, in->request_id);
  size_t n2 = proto_encode_command(buf2, sizeof buf2, &out);
  ck_assert_uint_eq(n2, n);
  ck_assert_mem_eq(buf, buf2, n);
  return out;
}

static proto_server_msg roundtrip_server(const proto_server_msg *in, proto_pose *poses, uint32_t cap) {
  proto_server_msg out;
  proto_error_info e;
  size_t n = proto_encode_server_msg(buf, sizeof buf, in);
  ck_assert_msg(n > 0, "encode type %u", in->type);
  int rc = proto_decode_server_msg(buf, n, &out, poses, cap, &e);
  ck_assert_msg(rc == 0, "decode type %u: %s %s (%s)", in->type, proto_error_name(e.code), e.field, e.reason);
  ck_assert_uint_eq(out.type, in->type);
  size_t n2 = proto_encode_server_msg(buf2, sizeof buf2, &out);
  ck_assert_uint_eq(n2, n);
  ck_assert_mem_eq(buf, buf2, n);
  return out;
}

static float angle_diff(float a, float b) {
  double d = fmod((double)a - (double)b, 2.0 * 3.14159265358979323846);
  if (d > 3.14159265358979323846)
    d -= 2.0 * 3.14159265358979323846;
  if (d < -3.14159265358979323846)
    d += 2.0 * 3.14159265358979323846;
  return (float)fabs(d);
}

/* ---- Exact bytes ----------------------------------------------------------------- */

START_TEST(test_exact_bytes) {
  /* [9, 9, {"client_time_us": 1700000000000000}] */
  static const uint8_t ping[] = {0x93, 0x09, 0x09, 0x81, 0xae, 'c',  'l',  'i', 'e', 'n',
                                 't',  '_',  't',  'i',  'm',  'e',  '_',  'u', 's', 0xcf,
                                 0x00, 0x06, 0x0a, 0x24, 0x18, 0x1e, 0x40, 0x00};
  size_t n = ex_ping(buf, sizeof buf);
  ck_assert_uint_eq(n, sizeof ping);
  ck_assert_mem_eq(buf, ping, n);

  /* [35, 1240, 1, 4194305, 2] */
  static const uint8_t event[] = {0x95, 0x23, 0xcd, 0x04, 0xd8, 0x01, 0xce, 0x00, 0x40, 0x00, 0x01, 0x02};
  n = ex_event(buf, sizeof buf);
  ck_assert_uint_eq(n, sizeof event);
  ck_assert_mem_eq(buf, event, n);

  /* [34, 3, 6, "no such agent", "agent"] */
  static const uint8_t err[] = {0x95, 0x22, 0x03, 0x06, 0xad, 'n', 'o',  ' ', 's', 'u', 'c', 'h',
                                ' ',  'a',  'g',  'e',  'n',  't', 0xa5, 'a', 'g', 'e', 'n', 't'};
  n = ex_error_agent(buf, sizeof buf);
  ck_assert_uint_eq(n, sizeof err);
  ck_assert_mem_eq(buf, err, n);

  /* [34, 2, 5, "send HELLO first", nil] */
  static const uint8_t err_nil[] = {0x95, 0x22, 0x02, 0x05, 0xb0, 's', 'e', 'n', 'd', ' ', 'H',
                                    'E',  'L',  'L',  'O',  ' ',  'f', 'i', 'r', 's', 't', 0xc0};
  n = ex_error_nil(buf, sizeof buf);
  ck_assert_uint_eq(n, sizeof err_nil);
  ck_assert_mem_eq(buf, err_nil, n);

  /* [3, 3, {"agent": 4194305}] */
  static const uint8_t despawn[] = {0x93, 0x03, 0x03, 0x81, 0xa5, 'a',  'g', 'e',
                                    'n',  't',  0xce, 0x00, 0x40, 0x00, 0x01};
  n = ex_despawn(buf, sizeof buf);
  ck_assert_uint_eq(n, sizeof despawn);
  ck_assert_mem_eq(buf, despawn, n);

  /* [36, 7, 8, 0, 1, 1, [4194305, 150, -250, 16384, -1, 0]]: x 1.5 m, y -2.5 m,
   * theta pi/2, vx -0.01 m/s */
  proto_snapshot_header h = {7, 8, 0, 1, 1};
  proto_pose p = {ID1, 1.5f, -2.5f, 1.5707964f, -0.01f, 0.0f};
  static const uint8_t snap[] = {0x97, 0x24, 0x07, 0x08, 0x00, 0x01, 0x01, 0x96, 0xce, 0x00, 0x40, 0x00,
                                 0x01, 0xcc, 0x96, 0xd1, 0xff, 0x06, 0xcd, 0x40, 0x00, 0xff, 0x00};
  n = proto_encode_snapshot(buf, sizeof buf, &h, &p, 1);
  ck_assert_uint_eq(n, sizeof snap);
  ck_assert_mem_eq(buf, snap, n);

  /* Floats go out as float32: [7, 7, {"agent": 1}] has no float; SPAWN x = 10.0 does. */
  n = ex_spawn(buf, sizeof buf);
  static const uint8_t x10[] = {0xa1, 'x', 0xca, 0x41, 0x20, 0x00, 0x00};
  ck_assert_ptr_nonnull(find_bytes(buf, n, x10, sizeof x10));
}
END_TEST

/* ---- Round trips ------------------------------------------------------------------- */

static proto_params all_params(void) {
  proto_params p;
  memset(&p, 0, sizeof p);
  p.present = PROTO_PARAM_ALL;
  float *f = &p.v.time_to_target;
  for (int i = 0; i < PROTO_PARAM_COUNT; i++)
    f[i] = 0.125f * (float)(i + 1);
  return p;
}

START_TEST(test_roundtrip_commands) {
  proto_command c = cmd_hello();
  proto_command o = roundtrip_cmd(&c);
  ck_assert_str_eq(o.hello.name, "godot-client");
  ck_assert_uint_eq(o.hello.version, 1);
  ck_assert_uint_eq(o.hello.has_token, 0);
  c = cmd_hello_token();
  o = roundtrip_cmd(&c);
  ck_assert_uint_eq(o.hello.has_token, 1);
  ck_assert_str_eq(o.hello.token, EXAMPLE_TOKEN);
  /* The longest token, and an empty one (sent, so present). */
  memset(c.hello.token, 'T', PROTO_MAX_TOKEN_BYTES);
  c.hello.token[PROTO_MAX_TOKEN_BYTES] = '\0';
  o = roundtrip_cmd(&c);
  ck_assert_uint_eq(strlen(o.hello.token), PROTO_MAX_TOKEN_BYTES);
  c.hello.token[0] = '\0';
  o = roundtrip_cmd(&c);
  ck_assert_uint_eq(o.hello.has_token, 1);
  ck_assert_str_eq(o.hello.token, "");

  /* SPAWN with every field. */
  c = cmd_spawn();
  c.spawn.present = PROTO_SPAWN_ORIENTATION | PROTO_SPAWN_VX | PROTO_SPAWN_VY | PROTO_SPAWN_LIMITS |
                    PROTO_SPAWN_BEHAVIOUR | PROTO_SPAWN_PATH;
  c.spawn.model = STEER_MODEL_HEADING;
  c.spawn.velocity = proto_v2(-1.25f, 2.5f);
  c.spawn.limits.present = PROTO_LIMIT_ALL;
  c.spawn.limits.v = (proto_limit_values){2.0f, 4.0f, 3.0f, 6.0f, 0.0f};
  c.spawn.behaviour.present = PROTO_BHV_TARGET | PROTO_BHV_ORIENTATION | PROTO_BHV_FACING |
                              PROTO_BHV_COMBINE | PROTO_BHV_SEPARATION_WEIGHT | PROTO_BHV_MAX_NEIGHBOURS;
  c.spawn.behaviour.kind = STEER_BEHAVIOUR_WANDER;
  c.spawn.behaviour.orientation = -3.0f;
  c.spawn.behaviour.facing = STEER_FACING_NONE;
  c.spawn.behaviour.combine = STEER_COMBINE_PRIORITY;
  c.spawn.behaviour.separation_weight = 1.5f;
  c.spawn.behaviour.max_neighbours = 255;
  c.spawn.behaviour.params = all_params();
  c.spawn.path.count = PROTO_MAX_PATH_POINTS;
  for (uint32_t i = 0; i < PROTO_MAX_PATH_POINTS; i++)
    c.spawn.path.points[i] = proto_v2((float)i * 0.5f, -(float)i);
  c.spawn.path.radius = 0.75f;
  c.spawn.path.mode = STEER_PATH_LOOP;
  c.spawn.path.cornering = STEER_CORNER_LAZY;
  c.spawn.path.params = all_params();
  o = roundtrip_cmd(&c);
  ck_assert_uint_eq(o.spawn.present, c.spawn.present);
  ck_assert_uint_eq(o.spawn.model, STEER_MODEL_HEADING);
  ck_assert(o.spawn.position.x == 10.0f && o.spawn.position.y == -5.5f);
  ck_assert(o.spawn.velocity.x == -1.25f && o.spawn.velocity.y == 2.5f);
  ck_assert(o.spawn.limits.v.max_angular_acceleration == 6.0f);
  ck_assert_uint_eq(o.spawn.behaviour.present, c.spawn.behaviour.present);
  ck_assert(o.spawn.behaviour.params.v.path_recover_strength == 0.125f * 15.0f);
  ck_assert_uint_eq(o.spawn.path.count, PROTO_MAX_PATH_POINTS);
  ck_assert(o.spawn.path.points[255].x == 127.5f && o.spawn.path.points[255].y == -255.0f);
  ck_assert_uint_eq(o.spawn.path.mode, STEER_PATH_LOOP);
  ck_assert_uint_eq(o.spawn.path.cornering, STEER_CORNER_LAZY);
  ck_assert_uint_eq(o.spawn.path.params.present, PROTO_PARAM_ALL);

  /* Minimal SPAWN: defaults are flagged absent. */
  c = cmd_spawn();
  c.spawn.present = 0;
  o = roundtrip_cmd(&c);
  ck_assert_uint_eq(o.spawn.present, 0);

  uint8_t agent_types[] = {PROTO_MSG_DESPAWN, PROTO_MSG_STOP, PROTO_MSG_QUERY};
  for (int i = 0; i < 3; i++) {
    c = cmd_agent(agent_types[i], 0xffffffffu);
    o = roundtrip_cmd(&c);
    ck_assert_uint_eq(o.despawn.agent, ID1);
    ck_assert_uint_eq(o.request_id, 0xffffffffu);
  }

  c = cmd_set_behaviour();
  c.set_behaviour.behaviour.kind = STEER_BEHAVIOUR_INTERPOSE;
  c.set_behaviour.behaviour.present |= PROTO_BHV_TARGET_AGENT2;
  c.set_behaviour.behaviour.target_agent2 = 77;
  o = roundtrip_cmd(&c);
  ck_assert_uint_eq(o.set_behaviour.behaviour.kind, STEER_BEHAVIOUR_INTERPOSE);
  ck_assert_uint_eq(o.set_behaviour.behaviour.target_agent, ID2);
  ck_assert_uint_eq(o.set_behaviour.behaviour.target_agent2, 77);

  c = cmd_set_path();
  c.set_path.path.params.present = PROTO_PARAM_TURN_TRIGGER_DISTANCE;
  c.set_path.path.params.v.turn_trigger_distance = 2.0f;
  o = roundtrip_cmd(&c);
  ck_assert_uint_eq(o.set_path.path.count, 3);
  ck_assert(o.set_path.path.points[2].y == 10.0f);

  c = cmd_set_params();
  c.set_params.limits.present = PROTO_LIMIT_ALL;
  c.set_params.limits.v = (proto_limit_values){1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  c.set_params.params = all_params();
  o = roundtrip_cmd(&c);
  ck_assert_uint_eq(o.set_params.limits.present, PROTO_LIMIT_ALL);
  ck_assert_uint_eq(o.set_params.params.present, PROTO_PARAM_ALL);
  c.set_params.limits.present = 0;
  c.set_params.params.present = 0;
  o = roundtrip_cmd(&c);
  ck_assert_uint_eq(o.set_params.limits.present | o.set_params.params.present, 0);

  c = cmd_ping();
  c.ping.client_time_us = UINT64_MAX;
  o = roundtrip_cmd(&c);
  ck_assert(o.ping.client_time_us == UINT64_MAX);
}
END_TEST

START_TEST(test_roundtrip_server) {
  proto_server_msg m, o;
  proto_pose poses[4];
  memset(&m, 0, sizeof m);
  m.type = PROTO_MSG_WELCOME;
  m.welcome = ex_welcome();
  o = roundtrip_server(&m, NULL, 0);
  ck_assert_uint_eq(o.welcome.client_id, 3);
  ck_assert(o.welcome.world_max.x == 500.0f);
  ck_assert(o.welcome.tick == 1234);
  ck_assert_uint_eq(o.welcome.max_agents, 10000);
  /* max_agents is optional: without it, the WELCOME of older servers, 0. */
  m.welcome.max_agents = 0;
  o = roundtrip_server(&m, NULL, 0);
  ck_assert_uint_eq(o.welcome.max_agents, 0);
  ck_assert_uint_eq(o.welcome.client_id, 3);
  m.welcome.max_agents = 10000;

  uint8_t acks[] = {PROTO_MSG_SPAWN,      PROTO_MSG_DESPAWN, PROTO_MSG_SET_BEHAVIOUR, PROTO_MSG_SET_PATH,
                    PROTO_MSG_SET_PARAMS, PROTO_MSG_STOP,    PROTO_MSG_QUERY,         PROTO_MSG_PING};
  for (int i = 0; i < 8; i++) {
    memset(&m, 0, sizeof m);
    m.type = PROTO_MSG_ACK;
    m.ack = ex_ack(acks[i], 40u + (uint32_t)i);
    o = roundtrip_server(&m, NULL, 0);
    ck_assert_uint_eq(o.ack.command, acks[i]);
    ck_assert_uint_eq(o.ack.request_id, 40u + (uint32_t)i);
  }
  memset(&m, 0, sizeof m);
  m.type = PROTO_MSG_ACK;
  m.ack = ex_ack(PROTO_MSG_QUERY, 8);
  m.ack.query.path_node = -1;
  m.ack.query.arrived = 1;
  o = roundtrip_server(&m, NULL, 0);
  ck_assert_int_eq(o.ack.query.path_node, -1);
  ck_assert_uint_eq(o.ack.query.arrived, 1);
  ck_assert_uint_eq(o.ack.query.behaviour, STEER_BEHAVIOUR_FOLLOW_PATH);
  ck_assert(o.ack.query.limits.max_angular_acceleration == 12.0f);
  ck_assert(o.ack.query.tick == 1235);
  m.ack.query.tick = UINT64_MAX;
  o = roundtrip_server(&m, NULL, 0);
  ck_assert(o.ack.query.tick == UINT64_MAX);

  memset(&m, 0, sizeof m);
  m.type = PROTO_MSG_ERROR;
  m.error.request_id = 5;
  m.error.code = PROTO_ERR_BAD_TARGET;
  strcpy(m.error.message, "target agent is not alive");
  strcpy(m.error.field, "behaviour.target_agent");
  m.error.has_field = 1;
  o = roundtrip_server(&m, NULL, 0);
  ck_assert_str_eq(o.error.field, "behaviour.target_agent");
  ck_assert_uint_eq(o.error.has_field, 1);
  m.error.has_field = 0;
  m.error.field[0] = '\0';
  o = roundtrip_server(&m, NULL, 0);
  ck_assert_uint_eq(o.error.has_field, 0);

  for (uint8_t code = 0; code < PROTO_EVENT_COUNT; code++) {
    memset(&m, 0, sizeof m);
    m.type = PROTO_MSG_EVENT;
    m.event = (proto_event){UINT64_MAX - code, code, ID2, 1000u * code};
    o = roundtrip_server(&m, NULL, 0);
    ck_assert_uint_eq(o.event.code, code);
    ck_assert(o.event.tick == UINT64_MAX - code);
  }

  memset(&m, 0, sizeof m);
  m.type = PROTO_MSG_SNAPSHOT;
  m.snapshot.header = ex_snap;
  m.snapshot.count = 2;
  m.snapshot.poses = ex_poses;
  o = roundtrip_server(&m, poses, 4);
  ck_assert_uint_eq(o.snapshot.count, 2);
  ck_assert_ptr_eq(o.snapshot.poses, poses);
  ck_assert_uint_eq(poses[1].id, ID2);
  ck_assert_float_eq_tol(poses[1].x, -100.0f, 1e-4f);
  ck_assert_float_eq_tol(poses[0].theta, 0.75f, 1e-4f);

  /* An empty part (a world with no agents). */
  m.snapshot.count = 0;
  m.snapshot.header.agent_total = 0;
  o = roundtrip_server(&m, NULL, 0);
  ck_assert_uint_eq(o.snapshot.count, 0);
}
END_TEST

START_TEST(test_apply) {
  proto_command c = cmd_spawn();
  steer_agent_desc d;
  memset(&d, 0, sizeof d);
  d.limits.max_speed = 9.0f;
  d.limits.radius = 0.5f;
  d.behaviour.params.slow_radius = 4.0f;
  d.behaviour.params.time_to_target = 0.1f;
  wire_apply_spawn(&c.spawn, &d);
  ck_assert_uint_eq(d.model, STEER_MODEL_DYNAMIC);
  ck_assert(d.state.position.x == 10.0f && d.state.orientation == 1.5f);
  ck_assert(d.limits.max_speed == 3.0f && d.limits.radius == 0.5f);
  ck_assert_uint_eq(d.behaviour.kind, STEER_BEHAVIOUR_ARRIVE);
  ck_assert_uint_eq(d.behaviour.target.kind, STEER_TARGET_POINT);
  ck_assert(d.behaviour.target.point.x == 20.0f);
  ck_assert(d.behaviour.params.slow_radius == 3.0f && d.behaviour.params.time_to_target == 0.1f);

  proto_command sb = cmd_set_behaviour();
  steer_behaviour b;
  memset(&b, 0, sizeof b);
  wire_apply_behaviour(&sb.set_behaviour.behaviour, &b);
  ck_assert_uint_eq(b.target.kind, STEER_TARGET_AGENT);
  ck_assert_uint_eq(b.target.agent, ID2);
  ck_assert_uint_eq(b.facing, STEER_FACING_TARGET);

  proto_behaviour align;
  memset(&align, 0, sizeof align);
  align.kind = STEER_BEHAVIOUR_ALIGN;
  align.present = PROTO_BHV_ORIENTATION;
  align.orientation = 1.0f;
  wire_apply_behaviour(&align, &b);
  ck_assert_uint_eq(b.target.kind, STEER_TARGET_POINT);
  ck_assert(b.target.orientation == 1.0f);

  ck_assert_int_eq(wire_error_of(STEER_ETARGET), PROTO_ERR_BAD_TARGET);
  ck_assert_int_eq(wire_error_of(STEER_ENOENT), PROTO_ERR_NO_SUCH_AGENT);
  ck_assert_int_eq(wire_error_of(-99), PROTO_ERR_INTERNAL);
  ck_assert_str_eq(proto_error_name(-PROTO_ERR_BAD_FIELD), "BAD_FIELD");
  ck_assert_str_eq(proto_error_name(PROTO_ERR_INTERNAL), "INTERNAL");
  ck_assert_str_eq(proto_error_name(999), "UNKNOWN");
  ck_assert_str_eq(proto_error_name(PROTO_ERR_FORBIDDEN), "FORBIDDEN");
  ck_assert_str_eq(proto_error_name(PROTO_ERR_UNAUTHORIZED), "UNAUTHORIZED");
  ck_assert_str_eq(proto_error_name(PROTO_ERR_TOKEN_EXPIRED), "TOKEN_EXPIRED");
  ck_assert_str_eq(proto_error_name(PROTO_ERR_QUOTA_EXCEEDED), "QUOTA_EXCEEDED");
  for (int code = 0; code < PROTO_ERR_COUNT; code++)
    ck_assert_str_ne(proto_error_text(code), "unknown error");
  ck_assert_str_eq(proto_disconnect_name(PROTO_DISCONNECT_AUTH_FAILED), "authentication failed");
  ck_assert_str_eq(proto_disconnect_name(PROTO_DISCONNECT_ABUSE), "protocol abuse");
  for (int i = 0; i < PROTO_ERR_COUNT; i++)
    ck_assert_ptr_nonnull(proto_error_text(i));
  ck_assert_str_eq(proto_behaviour_name(STEER_BEHAVIOUR_LOOK_WHERE_GOING), "look_where_going");
  ck_assert_ptr_null(proto_behaviour_name(STEER_BEHAVIOUR_COUNT));
  ck_assert_str_eq(proto_param_name(PROTO_PARAM_COUNT - 1), "path_recover_strength");
  ck_assert_str_eq(proto_msg_type_name(PROTO_MSG_SNAPSHOT), "SNAPSHOT");
}
END_TEST

/* ---- Bad input ------------------------------------------------------------------------ */

START_TEST(test_bad_framing) {
  static const uint8_t garbage[] = {0xc1};
  expect_cmd_error(garbage, 1, PROTO_ERR_BAD_MESSAGE, "");
  expect_cmd_error(garbage, 0, PROTO_ERR_BAD_MESSAGE, "");
  expect_cmd_error(NULL, 0, PROTO_ERR_BAD_MESSAGE, "");
  static const uint8_t text[] = "hello world";
  expect_cmd_error(text, sizeof text - 1, PROTO_ERR_BAD_MESSAGE, "");

  /* Not an array: a map, an integer. */
  static const uint8_t map[] = {0x81, 0xa1, 'a', 0x01};
  expect_cmd_error(map, sizeof map, PROTO_ERR_BAD_MESSAGE, "");
  static const uint8_t one[] = {0x01};
  expect_cmd_error(one, 1, PROTO_ERR_BAD_MESSAGE, "");
  static const uint8_t empty_array[] = {0x90};
  expect_cmd_error(empty_array, 1, PROTO_ERR_BAD_MESSAGE, "");

  /* Type not an integer, unknown type, server type sent to the server. */
  static const uint8_t strtype[] = {0x93, 0xa1, 'x', 0x01, 0x80};
  expect_cmd_error(strtype, sizeof strtype, PROTO_ERR_BAD_MESSAGE, "type");
  static const uint8_t unknown[] = {0x93, 0x63, 0x01, 0x80};
  expect_cmd_error(unknown, sizeof unknown, PROTO_ERR_UNKNOWN_TYPE, "type");
  static const uint8_t server[] = {0x93, 0x21, 0x01, 0x80};
  expect_cmd_error(server, sizeof server, PROTO_ERR_UNKNOWN_TYPE, "type");

  /* Wrong arity, bad request_id, body not a map. */
  static const uint8_t arity[] = {0x92, 0x09, 0x01};
  expect_cmd_error(arity, sizeof arity, PROTO_ERR_BAD_MESSAGE, "");
  static const uint8_t negid[] = {0x93, 0x09, 0xff, 0x80};
  expect_cmd_error(negid, sizeof negid, PROTO_ERR_BAD_MESSAGE, "request_id");
  static const uint8_t bigid[] = {0x93, 0x09, 0xcf, 0, 0, 0, 1, 0, 0, 0, 0, 0x80};
  expect_cmd_error(bigid, sizeof bigid, PROTO_ERR_BAD_MESSAGE, "request_id");
  static const uint8_t nobody[] = {0x93, 0x09, 0x01, 0x91, 0x01};
  expect_cmd_error(nobody, sizeof nobody, PROTO_ERR_BAD_MESSAGE, "body");

  /* Trailing bytes after a valid message. */
  size_t n = ex_ping(buf, sizeof buf);
  buf[n] = 0x00;
  expect_cmd_error(buf, n + 1, PROTO_ERR_BAD_MESSAGE, "");
  /* Two messages in one packet. */
  memcpy(buf + n, buf, n);
  expect_cmd_error(buf, 2 * n, PROTO_ERR_BAD_MESSAGE, "");

  /* Too large. */
  memset(buf, 0x90, PROTO_MAX_MESSAGE_BYTES + 1);
  expect_cmd_error(buf, PROTO_MAX_MESSAGE_BYTES + 1, PROTO_ERR_TOO_LARGE, "");

  /* The request id is reported when it was read. */
  proto_command c;
  proto_error_info e;
  static const uint8_t badbody[] = {0x93, 0x03, 0xcd, 0x12, 0x34, 0x80};
  ck_assert_int_eq(proto_decode_command(badbody, sizeof badbody, &c, &e), -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "agent");
  ck_assert_str_eq(e.reason, "missing");
  ck_assert_uint_eq(e.has_request_id, 1);
  ck_assert_uint_eq(e.request_id, 0x1234);
  ck_assert_uint_eq(e.type, PROTO_MSG_DESPAWN);
  ck_assert_int_eq(proto_decode_command(badbody, sizeof badbody, &c, NULL), -PROTO_ERR_BAD_FIELD);
}
END_TEST

/* The request_id echo rule (PROTOCOL.md 7.3): echoed whenever the packet (at
 * most 16384 bytes) starts as an array of 2 or more elements whose second
 * element is an unsigned integer <= UINT32_MAX; else 0. */
static void expect_rid(const void *b, size_t n, int code, int has, uint32_t rid) {
  static proto_command c;
  proto_error_info e;
  int rc = proto_decode_command(b, n, &c, &e);
  ck_assert_msg(rc == -code, "expected %s, got rc %d (%s, field '%s')", proto_error_name(code), rc,
                proto_error_name(e.code), e.field);
  ck_assert_msg(e.has_request_id == has && (!has || e.request_id == rid),
                "%s: has_request_id %u request_id %u, want %d %u", proto_error_name(code), e.has_request_id,
                e.request_id, has, rid);
}

START_TEST(test_request_id_echo) {
  /* Echoed: the element count is wrong... */
  static const uint8_t four[] = {0x94, 0x09, 0x05, 0x80, 0x01}; /* [9, 5, {}, 1] */
  expect_rid(four, sizeof four, PROTO_ERR_BAD_MESSAGE, 1, 5);
  static const uint8_t two[] = {0x92, 0x09, 0x05}; /* [9, 5] */
  expect_rid(two, sizeof two, PROTO_ERR_BAD_MESSAGE, 1, 5);
  static const uint8_t seventeen[] = {0xdc, 0x00, 0x11, 0x09, 0x05}; /* 17 elements, cut short */
  expect_rid(seventeen, sizeof seventeen, PROTO_ERR_BAD_MESSAGE, 1, 5);
  /* ...the packet ends right after the request_id or inside the body... */
  static const uint8_t cut[] = {0x93, 0x09, 0x05};
  expect_rid(cut, sizeof cut, PROTO_ERR_BAD_MESSAGE, 1, 5);
  static const uint8_t cut_body[] = {0x93, 0x09, 0xcd, 0x12, 0x34, 0x81, 0xa4, 'a'};
  expect_rid(cut_body, sizeof cut_body, PROTO_ERR_BAD_MESSAGE, 1, 0x1234);
  /* ...the type is not an integer, unknown, or a server type... */
  static const uint8_t strtype[] = {0x93, 0xa1, 'x', 0x05, 0x80};
  expect_rid(strtype, sizeof strtype, PROTO_ERR_BAD_MESSAGE, 1, 5);
  static const uint8_t arrtype[] = {0x93, 0x92, 0x01, 0x02, 0x05, 0x80};
  expect_rid(arrtype, sizeof arrtype, PROTO_ERR_BAD_MESSAGE, 1, 5);
  static const uint8_t zerotype[] = {0x93, 0x00, 0x05, 0x80};
  expect_rid(zerotype, sizeof zerotype, PROTO_ERR_BAD_MESSAGE, 1, 5);
  static const uint8_t unknown[] = {0x93, 0x63, 0x05, 0x80};
  expect_rid(unknown, sizeof unknown, PROTO_ERR_UNKNOWN_TYPE, 1, 5);
  static const uint8_t unknown4[] = {0x94, 0x63, 0x05, 0x80, 0x00};
  expect_rid(unknown4, sizeof unknown4, PROTO_ERR_UNKNOWN_TYPE, 1, 5);
  /* ...the body is not a map or has a bad field... */
  static const uint8_t nobody[] = {0x93, 0x09, 0x05, 0x91, 0x01};
  expect_rid(nobody, sizeof nobody, PROTO_ERR_BAD_MESSAGE, 1, 5);
  static const uint8_t badfield[] = {0x93, 0x03, 0x05, 0x80};
  expect_rid(badfield, sizeof badfield, PROTO_ERR_BAD_FIELD, 1, 5);
  /* ...trailing bytes; any integer encoding of the request_id counts. */
  size_t n = ex_ping(buf, sizeof buf);
  buf[n] = 0xc1;
  expect_rid(buf, n + 1, PROTO_ERR_BAD_MESSAGE, 1, 9);
  static const uint8_t int8id[] = {0x94, 0x09, 0xd0, 0x05, 0x80, 0x00};
  expect_rid(int8id, sizeof int8id, PROTO_ERR_BAD_MESSAGE, 1, 5);
  static const uint8_t maxid[] = {0x94, 0x09, 0xce, 0xff, 0xff, 0xff, 0xff, 0x80, 0x00};
  expect_rid(maxid, sizeof maxid, PROTO_ERR_BAD_MESSAGE, 1, UINT32_MAX);

  /* Not echoed: no second element, not an array, not a uint32. */
  static const uint8_t cut1[] = {0x93, 0x09};
  expect_rid(cut1, sizeof cut1, PROTO_ERR_BAD_MESSAGE, 0, 0);
  static const uint8_t one[] = {0x91, 0x09};
  expect_rid(one, sizeof one, PROTO_ERR_BAD_MESSAGE, 0, 0);
  static const uint8_t map[] = {0x82, 0x09, 0x05, 0x01, 0x80};
  expect_rid(map, sizeof map, PROTO_ERR_BAD_MESSAGE, 0, 0);
  static const uint8_t negid[] = {0x93, 0x09, 0xff, 0x80};
  expect_rid(negid, sizeof negid, PROTO_ERR_BAD_MESSAGE, 0, 0);
  static const uint8_t floatid[] = {0x93, 0x09, 0xca, 0x40, 0xa0, 0x00, 0x00, 0x80};
  expect_rid(floatid, sizeof floatid, PROTO_ERR_BAD_MESSAGE, 0, 0);
  static const uint8_t bigid[] = {0x93, 0x09, 0xcf, 0, 0, 0, 1, 0, 0, 0, 0, 0x80};
  expect_rid(bigid, sizeof bigid, PROTO_ERR_BAD_MESSAGE, 0, 0);
  static const uint8_t strid[] = {0x93, 0x09, 0xa1, '5', 0x80};
  expect_rid(strid, sizeof strid, PROTO_ERR_BAD_MESSAGE, 0, 0);
  static const uint8_t badfirst[] = {0x93, 0xc1, 0x05, 0x80};
  expect_rid(badfirst, sizeof badfirst, PROTO_ERR_BAD_MESSAGE, 0, 0);
  expect_rid(NULL, 0, PROTO_ERR_BAD_MESSAGE, 0, 0);
  /* Too large: not read at all, even when it starts well. */
  n = ex_ping(buf, sizeof buf);
  memset(buf + n, 0, PROTO_MAX_MESSAGE_BYTES + 1 - n);
  expect_rid(buf, PROTO_MAX_MESSAGE_BYTES + 1, PROTO_ERR_TOO_LARGE, 0, 0);
}
END_TEST

START_TEST(test_truncated) {
  /* Every proper prefix of every command example is BAD_MESSAGE. */
  for (size_t k = 0; k < COMMAND_EXAMPLES; k++) {
    size_t n = examples[k].fn(buf, sizeof buf);
    ck_assert_uint_gt(n, 0);
    for (size_t cut = 0; cut < n; cut++) {
      uint8_t *copy = malloc(cut ? cut : 1); /* exact size, so ASan sees any over-read */
      memcpy(copy, buf, cut);
      expect_cmd_error(copy, cut, PROTO_ERR_BAD_MESSAGE, NULL);
      free(copy);
    }
    uint8_t *copy = malloc(n);
    memcpy(copy, buf, n);
    proto_command c;
    ck_assert_int_eq(proto_decode_command(copy, n, &c, NULL), 0);
    free(copy);
  }
  /* Same for the server messages on the client side. */
  for (size_t k = COMMAND_EXAMPLES; k < SERVER_EXAMPLES; k++) {
    size_t n = examples[k].fn(buf, sizeof buf);
    for (size_t cut = 0; cut < n; cut++) {
      uint8_t *copy = malloc(cut ? cut : 1);
      memcpy(copy, buf, cut);
      proto_server_msg m;
      proto_pose poses[4];
      proto_error_info e;
      ck_assert_int_eq(proto_decode_server_msg(copy, cut, &m, poses, 4, &e), -PROTO_ERR_BAD_MESSAGE);
      free(copy);
    }
  }
}
END_TEST

START_TEST(test_bad_fields) {
  mbuf m;

  /* Wrong field type. */
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SPAWN, 1, 3);
  mb_str(&m, "model"), mb_str(&m, "dynamic");
  mb_str(&m, "x"), mb_str(&m, "ten");
  mb_str(&m, "y"), msgpack_pack_int(&m.pk, 0);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "x");

  /* Integers are accepted for floats, as are float64. */
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SPAWN, 1, 3);
  mb_str(&m, "model"), mb_str(&m, "kinematic");
  mb_str(&m, "x"), msgpack_pack_int(&m.pk, -7);
  mb_str(&m, "y"), msgpack_pack_double(&m.pk, 2.5);
  {
    proto_command c;
    proto_error_info e;
    ck_assert_int_eq(proto_decode_command((const uint8_t *)m.sb.data, m.sb.size, &c, &e), 0);
    ck_assert(c.spawn.position.x == -7.0f && c.spawn.position.y == 2.5f);
  }
  mb_free(&m);

  /* Missing required field. */
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SPAWN, 1, 2);
  mb_str(&m, "model"), mb_str(&m, "dynamic");
  mb_str(&m, "x"), msgpack_pack_int(&m.pk, 0);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "y");

  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SET_BEHAVIOUR, 1, 2);
  mb_str(&m, "agent"), msgpack_pack_int(&m.pk, 5);
  mb_str(&m, "behaviour"), msgpack_pack_map(&m.pk, 1);
  mb_str(&m, "target"), msgpack_pack_array(&m.pk, 2), msgpack_pack_int(&m.pk, 1), msgpack_pack_int(&m.pk, 1);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "behaviour.kind");

  /* NaN and infinities, as float32 and float64, deep inside. */
  const double bad[] = {NAN, INFINITY, -INFINITY, 1e300, 2e6};
  for (int i = 0; i < 5; i++)
    for (int as64 = 0; as64 < 2; as64++) {
      mb_init(&m);
      mb_cmd(&m, PROTO_MSG_SET_BEHAVIOUR, 1, 2);
      mb_str(&m, "agent"), msgpack_pack_int(&m.pk, 5);
      mb_str(&m, "behaviour"), msgpack_pack_map(&m.pk, 2);
      mb_str(&m, "kind"), mb_str(&m, "arrive");
      mb_str(&m, "params"), msgpack_pack_map(&m.pk, 1);
      mb_str(&m, "slow_radius");
      if (as64)
        msgpack_pack_double(&m.pk, bad[i]);
      else
        msgpack_pack_float(&m.pk, (float)bad[i]);
      expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "behaviour.params.slow_radius");
    }

  /* NaN inside a path point names the element. */
  {
    proto_command c = cmd_set_path();
    c.set_path.path.points[2].y = NAN;
    size_t n = proto_encode_command(buf, sizeof buf, &c);
    expect_cmd_error(buf, n, PROTO_ERR_BAD_FIELD, "points[2][1]");
  }

  /* Out of range: zero time_to_target, negative radius, zero max_speed. */
  {
    proto_command c = cmd_set_params();
    c.set_params.params.v.time_to_target = 0.0f;
    size_t n = proto_encode_command(buf, sizeof buf, &c);
    expect_cmd_error(buf, n, PROTO_ERR_BAD_FIELD, "params.time_to_target");
    c = cmd_set_params();
    c.set_params.limits.v.max_speed = -1.0f;
    n = proto_encode_command(buf, sizeof buf, &c);
    expect_cmd_error(buf, n, PROTO_ERR_BAD_FIELD, "limits.max_speed");
    c = cmd_set_path();
    c.set_path.path.radius = 0.0f;
    n = proto_encode_command(buf, sizeof buf, &c);
    expect_cmd_error(buf, n, PROTO_ERR_BAD_FIELD, "radius");
    c = cmd_spawn();
    c.spawn.behaviour.present |= PROTO_BHV_SEPARATION_WEIGHT;
    c.spawn.behaviour.separation_weight = -0.5f;
    n = proto_encode_command(buf, sizeof buf, &c);
    expect_cmd_error(buf, n, PROTO_ERR_BAD_FIELD, "behaviour.separation_weight");
  }

  /* Unknown enum strings. */
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SPAWN, 1, 3);
  mb_str(&m, "model"), mb_str(&m, "hover");
  mb_str(&m, "x"), msgpack_pack_int(&m.pk, 0);
  mb_str(&m, "y"), msgpack_pack_int(&m.pk, 0);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "model");

  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SET_BEHAVIOUR, 1, 2);
  mb_str(&m, "agent"), msgpack_pack_int(&m.pk, 5);
  mb_str(&m, "behaviour"), msgpack_pack_map(&m.pk, 2);
  mb_str(&m, "kind"), mb_str(&m, "seek");
  mb_str(&m, "facing"), mb_str(&m, "Target"); /* case matters */
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "behaviour.facing");

  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SET_BEHAVIOUR, 1, 2);
  mb_str(&m, "agent"), msgpack_pack_int(&m.pk, 5);
  mb_str(&m, "behaviour"), msgpack_pack_map(&m.pk, 1);
  mb_str(&m, "kind"), mb_str(&m, "follow_path");
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "behaviour.kind");

  {
    proto_command c = cmd_set_path();
    size_t n = proto_encode_command(buf, sizeof buf, &c);
    uint8_t *p = find_bytes(buf, n, "\xa8pingpong", 9);
    ck_assert_ptr_nonnull(p);
    memcpy(p + 1, "pingpang", 8);
    expect_cmd_error(buf, n, PROTO_ERR_BAD_FIELD, "mode");
  }

  /* Unknown and duplicate keys. */
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SET_PARAMS, 1, 2);
  mb_str(&m, "agent"), msgpack_pack_int(&m.pk, 5);
  mb_str(&m, "params"), msgpack_pack_map(&m.pk, 1);
  mb_str(&m, "slow_radus"), msgpack_pack_int(&m.pk, 2);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "params.slow_radus");

  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_STOP, 1, 2);
  mb_str(&m, "agent"), msgpack_pack_int(&m.pk, 5);
  mb_str(&m, "agent"), msgpack_pack_int(&m.pk, 6);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "agent");

  /* Non-string key; unprintable key bytes are sanitised in the field path. */
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_STOP, 1, 1);
  msgpack_pack_int(&m.pk, 1), msgpack_pack_int(&m.pk, 5);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "body");
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_STOP, 1, 1);
  msgpack_pack_str_with_body(&m.pk, "a\n\0\xff", 4), msgpack_pack_int(&m.pk, 5);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "a???");

  /* Integer fields: negative, too big, float. */
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_QUERY, 1, 1);
  mb_str(&m, "agent"), msgpack_pack_int(&m.pk, -1);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "agent");
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_QUERY, 1, 1);
  mb_str(&m, "agent"), msgpack_pack_uint64(&m.pk, 1ull << 32);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "agent");
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_QUERY, 1, 1);
  mb_str(&m, "agent"), msgpack_pack_double(&m.pk, 5.0);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "agent");
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SET_BEHAVIOUR, 1, 2);
  mb_str(&m, "agent"), msgpack_pack_int(&m.pk, 5);
  mb_str(&m, "behaviour"), msgpack_pack_map(&m.pk, 2);
  mb_str(&m, "kind"), mb_str(&m, "seek");
  mb_str(&m, "max_neighbours"), msgpack_pack_int(&m.pk, 256);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "behaviour.max_neighbours");

  /* Conflicting targets. */
  {
    proto_command c = cmd_spawn();
    c.spawn.behaviour.present |= PROTO_BHV_TARGET_AGENT;
    size_t n = proto_encode_command(buf, sizeof buf, &c);
    expect_cmd_error(buf, n, PROTO_ERR_BAD_FIELD, "behaviour.target_agent");
    c = cmd_set_behaviour();
    c.set_behaviour.behaviour.present = PROTO_BHV_TARGET_AGENT2;
    n = proto_encode_command(buf, sizeof buf, &c);
    expect_cmd_error(buf, n, PROTO_ERR_BAD_FIELD, "behaviour.target_agent2");
  }

  /* Target with three coordinates. */
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SET_BEHAVIOUR, 1, 2);
  mb_str(&m, "agent"), msgpack_pack_int(&m.pk, 5);
  mb_str(&m, "behaviour"), msgpack_pack_map(&m.pk, 2);
  mb_str(&m, "kind"), mb_str(&m, "seek");
  mb_str(&m, "target"), msgpack_pack_array(&m.pk, 3);
  msgpack_pack_int(&m.pk, 1), msgpack_pack_int(&m.pk, 2), msgpack_pack_int(&m.pk, 3);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "behaviour.target");

  /* HELLO name: too long, not UTF-8, embedded NUL. */
  {
    char name[PROTO_MAX_NAME_BYTES + 2];
    memset(name, 'n', sizeof name);
    mb_init(&m);
    mb_cmd(&m, PROTO_MSG_HELLO, 1, 2);
    mb_str(&m, "version"), msgpack_pack_int(&m.pk, 1);
    mb_str(&m, "name"), msgpack_pack_str_with_body(&m.pk, name, PROTO_MAX_NAME_BYTES + 1);
    expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "name");
    mb_init(&m);
    mb_cmd(&m, PROTO_MSG_HELLO, 1, 2);
    mb_str(&m, "version"), msgpack_pack_int(&m.pk, 1);
    mb_str(&m, "name"), msgpack_pack_str_with_body(&m.pk, name, PROTO_MAX_NAME_BYTES);
    {
      proto_command c;
      ck_assert_int_eq(proto_decode_command((const uint8_t *)m.sb.data, m.sb.size, &c, NULL), 0);
      ck_assert_uint_eq(strlen(c.hello.name), PROTO_MAX_NAME_BYTES);
    }
    mb_free(&m);
    const char *bad_names[] = {"\xc3", "\xc0\xaf", "\xed\xa0\x80", "a\0b"};
    size_t bad_len[] = {1, 2, 3, 3};
    for (int i = 0; i < 4; i++) {
      mb_init(&m);
      mb_cmd(&m, PROTO_MSG_HELLO, 1, 2);
      mb_str(&m, "version"), msgpack_pack_int(&m.pk, 1);
      mb_str(&m, "name"), msgpack_pack_str_with_body(&m.pk, bad_names[i], bad_len[i]);
      expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "name");
    }
    mb_init(&m);
    mb_cmd(&m, PROTO_MSG_HELLO, 1, 2);
    mb_str(&m, "version"), msgpack_pack_int(&m.pk, 1);
    mb_str(&m, "name"), msgpack_pack_bin_with_body(&m.pk, "bin", 3);
    expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "name");
    /* token: a str of at most 1024 printable ASCII bytes. */
    static char long_token[PROTO_MAX_TOKEN_BYTES + 1];
    memset(long_token, 'T', sizeof long_token);
    const char *bad_tokens[] = {long_token, "a b", "a\x01", "\xc3\xa9", "a\0b"};
    size_t bad_token_len[] = {PROTO_MAX_TOKEN_BYTES + 1, 3, 2, 2, 3};
    for (int i = 0; i < 5; i++) {
      mb_init(&m);
      mb_cmd(&m, PROTO_MSG_HELLO, 1, 3);
      mb_str(&m, "version"), msgpack_pack_int(&m.pk, 1);
      mb_str(&m, "name"), mb_str(&m, "n");
      mb_str(&m, "token"), msgpack_pack_str_with_body(&m.pk, bad_tokens[i], bad_token_len[i]);
      expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "token");
    }
    mb_init(&m);
    mb_cmd(&m, PROTO_MSG_HELLO, 1, 3);
    mb_str(&m, "version"), msgpack_pack_int(&m.pk, 1);
    mb_str(&m, "name"), mb_str(&m, "n");
    mb_str(&m, "token"), msgpack_pack_int(&m.pk, 7);
    expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "token");
  }
}
END_TEST

START_TEST(test_huge_sizes) {
  /* Too many path points. */
  mbuf m;
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SET_PATH, 1, 5);
  mb_str(&m, "agent"), msgpack_pack_int(&m.pk, 5);
  mb_str(&m, "points"), msgpack_pack_array(&m.pk, PROTO_MAX_PATH_POINTS + 1);
  for (int i = 0; i <= PROTO_MAX_PATH_POINTS; i++)
    msgpack_pack_array(&m.pk, 2), msgpack_pack_int(&m.pk, i), msgpack_pack_int(&m.pk, 0);
  mb_str(&m, "radius"), msgpack_pack_int(&m.pk, 1);
  mb_str(&m, "mode"), mb_str(&m, "once");
  mb_str(&m, "cornering"), mb_str(&m, "none");
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "points");

  /* No points. */
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SET_PATH, 1, 5);
  mb_str(&m, "agent"), msgpack_pack_int(&m.pk, 5);
  mb_str(&m, "points"), msgpack_pack_array(&m.pk, 0);
  mb_str(&m, "radius"), msgpack_pack_int(&m.pk, 1);
  mb_str(&m, "mode"), mb_str(&m, "once");
  mb_str(&m, "cornering"), mb_str(&m, "none");
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "points");

  /* Array / map / string headers that claim 4 G entries in a few bytes. */
  static const uint8_t big_array[] = {0x93, 0x05, 0x01, 0x82, 0xa5, 'a', 'g',  'e',  'n',  't',  0x05, 0xa6,
                                      'p',  'o',  'i',  'n',  't',  's', 0xdd, 0xff, 0xff, 0xff, 0xff};
  expect_cmd_error(big_array, sizeof big_array, PROTO_ERR_BAD_FIELD, "points");
  static const uint8_t big_map[] = {0x93, 0x07, 0x01, 0xdf, 0xff, 0xff, 0xff, 0xff};
  expect_cmd_error(big_map, sizeof big_map, PROTO_ERR_BAD_FIELD, "body");
  static const uint8_t big_str[] = {0x93, 0x01, 0x01, 0x81, 0xa4, 'n',  'a',
                                    'm',  'e',  0xdb, 0xff, 0xff, 0xff, 0xff};
  expect_cmd_error(big_str, sizeof big_str, PROTO_ERR_BAD_MESSAGE, "name");
  static const uint8_t big_key[] = {0x93, 0x01, 0x01, 0x81, 0xdb, 0x7f, 0xff, 0xff, 0xff};
  expect_cmd_error(big_key, sizeof big_key, PROTO_ERR_BAD_MESSAGE, "body");
  static const uint8_t big_top[] = {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01};
  expect_cmd_error(big_top, sizeof big_top, PROTO_ERR_BAD_MESSAGE, "");
  /* A long string of 1000 bytes as an enum. */
  {
    char s[1000];
    memset(s, 'a', sizeof s);
    mb_init(&m);
    mb_cmd(&m, PROTO_MSG_SPAWN, 1, 3);
    mb_str(&m, "model"), msgpack_pack_str_with_body(&m.pk, s, sizeof s);
    mb_str(&m, "x"), msgpack_pack_int(&m.pk, 0);
    mb_str(&m, "y"), msgpack_pack_int(&m.pk, 0);
    expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "model");
  }
  /* More than PROTO_MAX_MAP_ENTRIES in a map. */
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_STOP, 1, PROTO_MAX_MAP_ENTRIES + 1);
  for (int i = 0; i <= PROTO_MAX_MAP_ENTRIES; i++)
    mb_str(&m, "agent"), msgpack_pack_int(&m.pk, i);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "body");

  /* Server side: the snapshot decoder honours the caller's capacity. */
  proto_server_msg msg;
  proto_pose poses[1];
  proto_error_info e;
  size_t n = ex_snapshot(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_server_msg(buf, n, &msg, poses, 1, &e), -PROTO_ERR_TOO_LARGE);
  ck_assert_str_eq(e.field, "agents");
  ck_assert_int_eq(proto_decode_server_msg(buf, n, &msg, NULL, 0, &e), -PROTO_ERR_TOO_LARGE);
  static const uint8_t snap_big[] = {0x97, 0x24, 0x01, 0x01, 0x00, 0x01, 0xce, 0xff,
                                     0xff, 0xff, 0xff, 0xdd, 0xff, 0xff, 0xff, 0xfc};
  proto_pose many[64];
  ck_assert_int_eq(proto_decode_server_msg(snap_big, sizeof snap_big, &msg, many, 64, &e),
                   -PROTO_ERR_TOO_LARGE);
}
END_TEST

START_TEST(test_bad_server_msgs) {
  proto_server_msg msg;
  proto_pose poses[8];
  proto_pose_q q[8];
  proto_snapshot_header h;
  proto_error_info e;
  uint32_t count;

  /* Client command sent to a client. */
  size_t n = ex_ping(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_server_msg(buf, n, &msg, poses, 8, &e), -PROTO_ERR_UNKNOWN_TYPE);
  /* A welcome with an unknown key still decodes (forward compatible). */
  mbuf m;
  mb_init(&m);
  msgpack_pack_array(&m.pk, 3), msgpack_pack_int(&m.pk, 32), msgpack_pack_int(&m.pk, 1);
  msgpack_pack_map(&m.pk, 8);
  mb_str(&m, "client_id"), msgpack_pack_int(&m.pk, 3);
  mb_str(&m, "tick_rate"), msgpack_pack_int(&m.pk, 30);
  mb_str(&m, "snapshot_rate"), msgpack_pack_int(&m.pk, 15);
  mb_str(&m, "future"), msgpack_pack_array(&m.pk, 2), msgpack_pack_map(&m.pk, 1), msgpack_pack_nil(&m.pk),
      msgpack_pack_int(&m.pk, 1), msgpack_pack_true(&m.pk);
  mb_str(&m, "world"), msgpack_pack_array(&m.pk, 4);
  for (int i = 0; i < 4; i++)
    msgpack_pack_int(&m.pk, i);
  mb_str(&m, "tick"), msgpack_pack_int(&m.pk, 0);
  mb_str(&m, "server_time_us"), msgpack_pack_int(&m.pk, 0);
  mb_str(&m, "protocol"), msgpack_pack_int(&m.pk, 1);
  ck_assert_int_eq(proto_decode_server_msg((const uint8_t *)m.sb.data, m.sb.size, &msg, NULL, 0, &e), 0);
  ck_assert(msg.welcome.world_max.y == 3.0f);
  /* ... but a missing one does not. */
  m.sb.data[3] = (char)0x87; /* drop the last entry: now 7 entries, "protocol" is trailing */
  ck_assert_int_eq(proto_decode_server_msg((const uint8_t *)m.sb.data, m.sb.size, &msg, NULL, 0, &e),
                   -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "protocol");
  mb_free(&m);

  /* Snapshot: length not a multiple of 6, theta out of int16, bad parts. */
  static const uint8_t s5[] = {0x97, 0x24, 0x01, 0x01, 0x00, 0x01, 0x01, 0x95, 1, 2, 3, 4, 5};
  ck_assert_int_eq(proto_decode_snapshot(s5, sizeof s5, &h, poses, q, 8, &count, &e), -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "agents");
  static const uint8_t sth[] = {0x97, 0x24, 0x01, 0x01, 0x00, 0x01, 0x01, 0x96,
                                1,    2,    3,    0xcd, 0x80, 0x00, 5,    6};
  ck_assert_int_eq(proto_decode_snapshot(sth, sizeof sth, &h, poses, q, 8, &count, &e), -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "agents[3]");
  ck_assert_uint_eq(count, 0);
  static const uint8_t spart[] = {0x97, 0x24, 0x01, 0x01, 0x02, 0x02, 0x00, 0x90};
  ck_assert_int_eq(proto_decode_snapshot(spart, sizeof spart, &h, poses, q, 8, &count, &e),
                   -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "part_index");
  static const uint8_t stotal[] = {0x97, 0x24, 0x01, 0x01, 0x00, 0x01, 0x00, 0x96, 1, 2, 3, 4, 5, 6};
  ck_assert_int_eq(proto_decode_snapshot(stotal, sizeof stotal, &h, poses, q, 8, &count, &e),
                   -PROTO_ERR_BAD_FIELD);
  static const uint8_t sfloat[] = {0x97, 0x24, 0x01, 0x01, 0x00, 0x01, 0x01, 0x96, 1,
                                   0xca, 0,    0,    0,    0,    3,    4,    5,    6};
  ck_assert_int_eq(proto_decode_snapshot(sfloat, sizeof sfloat, &h, poses, q, 8, &count, &e),
                   -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "agents[1]");
  static const uint8_t sok[] = {0x97, 0x24, 0x01, 0x01, 0x00, 0x01, 0x01, 0x96, 1,
                                0xd0, 0x80, 3,    0xd1, 0x80, 0x00, 5,    6};
  ck_assert_int_eq(proto_decode_snapshot(sok, sizeof sok, &h, poses, q, 8, &count, &e), 0);
  ck_assert_uint_eq(count, 1);
  ck_assert_int_eq(q[0].x, -128);
  ck_assert_int_eq(q[0].theta, -32768);
  ck_assert_float_eq_tol(poses[0].theta, -3.14159265f, 1e-6f);
  ck_assert_float_eq_tol(poses[0].x, -1.28f, 1e-6f);
  /* Not a snapshot. */
  n = ex_event(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_snapshot(buf, n, &h, poses, q, 8, &count, &e), -PROTO_ERR_UNKNOWN_TYPE);

  /* Event code out of range; ACK of HELLO; error text too long. */
  static const uint8_t ev[] = {0x95, 0x23, 0x01, 0x7f, 0x01, 0x00}; /* 127: no event has it */
  ck_assert_int_eq(proto_decode_server_msg(ev, sizeof ev, &msg, NULL, 0, &e), -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "event_code");
  static const uint8_t ackh[] = {0x94, 0x21, 0x01, 0x01, 0x80};
  ck_assert_int_eq(proto_decode_server_msg(ackh, sizeof ackh, &msg, NULL, 0, &e), -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "command_type");
  char longtext[400];
  memset(longtext, 'e', sizeof longtext - 1);
  longtext[sizeof longtext - 1] = '\0';
  n = proto_encode_error(buf, sizeof buf, 1, PROTO_ERR_INTERNAL, longtext, longtext);
  ck_assert_uint_gt(n, 0);
  ck_assert_int_eq(proto_decode_server_msg(buf, n, &msg, NULL, 0, &e), 0);
  ck_assert_uint_eq(strlen(msg.error.message), PROTO_MAX_ERROR_TEXT_BYTES);
  ck_assert_uint_eq(strlen(msg.error.field), PROTO_MAX_FIELD_BYTES);
  /* Truncation never splits a UTF-8 sequence. */
  for (size_t i = 0; i + 2 < sizeof longtext; i += 2)
    memcpy(longtext + i, "\xc3\xa9", 2);
  n = proto_encode_error(buf, sizeof buf, 1, PROTO_ERR_INTERNAL, longtext, NULL);
  ck_assert_int_eq(proto_decode_server_msg(buf, n, &msg, NULL, 0, &e), 0);
  ck_assert_uint_eq(strlen(msg.error.message), PROTO_MAX_ERROR_TEXT_BYTES - 1);
}
END_TEST

/* ---- Encoders: overflow and bad enums ------------------------------------------------ */

START_TEST(test_encode_overflow) {
  for (size_t k = 0; k < EXAMPLE_COUNT; k++) {
    size_t n = examples[k].fn(buf, sizeof buf);
    ck_assert_uint_gt(n, 0);
    for (size_t cap = 0; cap < n; cap++) {
      memset(buf2, 0xAB, sizeof buf2);
      ck_assert_uint_eq(examples[k].fn(buf2, cap), 0);
      for (size_t i = cap; i < cap + 16; i++)
        ck_assert_uint_eq(buf2[i], 0xAB);
    }
    ck_assert_uint_eq(examples[k].fn(buf2, n), n);
    ck_assert_uint_eq(examples[k].fn(NULL, 100), 0);
  }
  proto_command c = cmd_spawn();
  c.spawn.model = STEER_MODEL_COUNT;
  ck_assert_uint_eq(proto_encode_command(buf, sizeof buf, &c), 0);
  c = cmd_set_behaviour();
  c.set_behaviour.behaviour.kind = STEER_BEHAVIOUR_FOLLOW_PATH;
  ck_assert_uint_eq(proto_encode_command(buf, sizeof buf, &c), 0);
  c = cmd_set_path();
  c.set_path.path.count = 0;
  ck_assert_uint_eq(proto_encode_command(buf, sizeof buf, &c), 0);
  c.set_path.path.count = PROTO_MAX_PATH_POINTS + 1;
  ck_assert_uint_eq(proto_encode_command(buf, sizeof buf, &c), 0);
  c.type = 31;
  ck_assert_uint_eq(proto_encode_command(buf, sizeof buf, &c), 0);
  proto_ack a = ex_ack(PROTO_MSG_HELLO, 1);
  ck_assert_uint_eq(proto_encode_ack(buf, sizeof buf, &a), 0);
  proto_event ev = {1, PROTO_EVENT_COUNT, 1, 0};
  ck_assert_uint_eq(proto_encode_event(buf, sizeof buf, &ev), 0);
}
END_TEST

/* ---- Quantization ---------------------------------------------------------------------- */

START_TEST(test_quantization) {
  const float pi = 3.14159265358979f;
  const float step = (float)(3.14159265358979323846 / 32768.0);
  ck_assert_int_eq(proto_quantize_cm(1.234f), 123);
  ck_assert_int_eq(proto_quantize_cm(-1.235f), -124); /* -1.2350000143 m */
  ck_assert_int_eq(proto_quantize_cm(0.0051f), 1);
  ck_assert_int_eq(proto_quantize_cm(0.0049f), 0);
  ck_assert_int_eq(proto_quantize_cm(-0.0051f), -1);
  ck_assert_int_eq(proto_quantize_cm(NAN), 0);
  ck_assert_int_eq(proto_quantize_cm(INFINITY), INT32_MAX);
  ck_assert_int_eq(proto_quantize_cm(-3e9f), INT32_MIN);
  ck_assert_int_eq(proto_quantize_angle(0.0f), 0);
  ck_assert_int_eq(proto_quantize_angle(pi), -32768);
  ck_assert_int_eq(proto_quantize_angle(-pi), -32768);
  ck_assert_int_eq(proto_quantize_angle(pi / 2), 16384);
  ck_assert_int_eq(proto_quantize_angle(-pi / 2), -16384);
  ck_assert_int_eq(proto_quantize_angle(pi - step), 32767);
  ck_assert_int_eq(proto_quantize_angle(pi - 0.4f * step), -32768);
  ck_assert_int_eq(proto_quantize_angle(-pi + 0.4f * step), -32768);
  ck_assert_int_eq(proto_quantize_angle(-pi + step), -32767);
  ck_assert_int_eq(proto_quantize_angle(3.0f * pi / 2), -16384); /* wrapped first */
  ck_assert_int_eq(proto_quantize_angle(NAN), 0);
  ck_assert_float_eq_tol(proto_dequantize_angle(-32768), -pi, 1e-6f);
  ck_assert_float_eq_tol(proto_dequantize_angle(32767), pi - step, 1e-6f);

  /* Round trips within half a step (plus float rounding). */
  uint64_t s = 12345;
  for (int i = 0; i < 200000; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    float u = (float)(s >> 40) / (float)(1u << 24); /* [0, 1) */
    float pos = (u - 0.5f) * 2000.0f;
    ck_assert(fabsf(proto_dequantize_cm(proto_quantize_cm(pos)) - pos) <= 0.005f + 1e-4f);
    float theta = (u - 0.5f) * 2.0f * pi;
    if (i % 3 == 0)
      theta = (i % 2 ? pi : -pi) + (u - 0.5f) * 1e-3f; /* near +-pi, either side */
    float back = proto_dequantize_angle(proto_quantize_angle(theta));
    ck_assert_msg(angle_diff(back, theta) <= 0.5f * step + 1e-6f, "theta %.9g -> %.9g", (double)theta,
                  (double)back);
    ck_assert(back >= -pi - 1e-6f && back < pi);
  }
  proto_pose p = {ID1, 123.456f, -0.004f, 2.0f, -7.891f, 0.0049f};
  proto_pose_q q = proto_quantize_pose(&p);
  ck_assert_int_eq(q.x, 12346);
  ck_assert_int_eq(q.y, 0);
  ck_assert_int_eq(q.vx, -789);
  ck_assert_int_eq(q.vy, 0);
  proto_pose b = proto_dequantize_pose(&q);
  ck_assert_uint_eq(b.id, ID1);
  ck_assert_float_eq_tol(b.theta, 2.0f, step);
}
END_TEST

/* ---- Snapshot capacity ------------------------------------------------------------------- */

START_TEST(test_snapshot_capacity) {
  static proto_pose worst[2000];
  static proto_pose back[2000];
  ck_assert_uint_eq(proto_snapshot_capacity(1200), 41);
  ck_assert_uint_eq(proto_snapshot_capacity(0), 0);
  ck_assert_uint_eq(
      proto_snapshot_capacity(PROTO_SNAPSHOT_HEADER_MAX_BYTES + PROTO_SNAPSHOT_AGENT_MAX_BYTES - 1), 0);
  for (int i = 0; i < 2000; i++)
    worst[i] = (proto_pose){UINT32_MAX - (uint32_t)i, i % 2 ? -3e7f : 3e7f, -3e7f, -3.0f, -1e9f, 1e9f};
  proto_snapshot_header h = {UINT64_MAX, UINT64_MAX, UINT32_MAX - 1, UINT32_MAX, UINT32_MAX};
  for (size_t bytes = 60; bytes <= sizeof buf; bytes += bytes < 2000 ? 1 : 997) {
    uint32_t cap = proto_snapshot_capacity(bytes);
    if (cap > 2000)
      cap = 2000;
    size_t n = proto_encode_snapshot(buf, bytes, &h, worst, cap);
    ck_assert_msg(n > 0 && n <= bytes, "bytes %zu cap %u n %zu", bytes, cap, n);
    if (bytes == PROTO_SNAPSHOT_PART_BYTES) {
      proto_error_info e;
      uint32_t count;
      proto_snapshot_header h2;
      ck_assert_int_eq(proto_decode_snapshot(buf, n, &h2, back, NULL, 2000, &count, &e), 0);
      ck_assert_uint_eq(count, cap);
      ck_assert_uint_eq(back[0].id, UINT32_MAX);
    }
  }
  /* Every agent costs at most the bound; the header too. */
  proto_snapshot_header h0 = h;
  size_t n0 = proto_encode_snapshot(buf, sizeof buf, &h0, worst, 0);
  ck_assert_uint_le(n0, PROTO_SNAPSHOT_HEADER_MAX_BYTES);
  size_t n1 = proto_encode_snapshot(buf, sizeof buf, &h0, worst, 1);
  ck_assert_uint_eq(n1 - n0, PROTO_SNAPSHOT_AGENT_MAX_BYTES);

  /* The view encoder writes the same bytes as the pose encoder. */
  steer_id ids[3] = {ID1, ID2, 9};
  float px[3] = {1, 2, 3}, py[3] = {-1, -2, -3}, vx[3] = {0.5f, 0, 0}, vy[3] = {0, 0.25f, 0},
        th[3] = {0, 1, -1};
  proto_pose_view v = {3, ids, px, py, vx, vy, th};
  proto_pose poses[2] = {{ID2, 2, -2, 1, 0, 0.25f}, {9, 3, -3, -1, 0, 0}};
  size_t a = proto_encode_snapshot(buf, sizeof buf, &ex_snap, poses, 2);
  size_t b = proto_encode_snapshot_view(buf2, sizeof buf2, &ex_snap, &v, NULL, 1, 2);
  ck_assert_uint_eq(a, b);
  ck_assert_mem_eq(buf, buf2, a);
  uint32_t idx[3] = {0, 2, 1};
  b = proto_encode_snapshot_view(buf2, sizeof buf2, &ex_snap, &v, idx, 1, 2);
  proto_pose swapped[2] = {poses[1], poses[0]};
  a = proto_encode_snapshot(buf, sizeof buf, &ex_snap, swapped, 2);
  ck_assert_uint_eq(a, b);
  ck_assert_mem_eq(buf, buf2, a);
  ck_assert_uint_eq(proto_encode_snapshot_view(buf2, sizeof buf2, &ex_snap, &v, NULL, 2, 2), 0);
  idx[2] = 7;
  ck_assert_uint_eq(proto_encode_snapshot_view(buf2, sizeof buf2, &ex_snap, &v, idx, 1, 2), 0);
}
END_TEST

/* ---- Mutation fuzz ------------------------------------------------------------------------- */

START_TEST(test_fuzz) {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  proto_command c;
  proto_server_msg m;
  static proto_pose poses[64];
  size_t ok = 0;
  for (int iter = 0; iter < 300000; iter++) {
    const steerd_example *ex = &examples[(size_t)iter % EXAMPLE_COUNT];
    size_t n = ex->fn(buf, sizeof buf);
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    int flips = 1 + (int)((s >> 60) & 3u);
    for (int f = 0; f < flips; f++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      size_t at = (size_t)(s >> 33) % n;
      switch ((s >> 20) & 3u) {
      case 0:
        buf[at] ^= (uint8_t)(1u << ((s >> 8) & 7u));
        break;
      case 1:
        buf[at] = (uint8_t)(s >> 12);
        break;
      case 2:
        n = at + 1; /* truncate */
        break;
      default:
        buf[at] = (uint8_t[]){0xc0, 0xc1, 0xca, 0xcb, 0xdc, 0xdd, 0xde, 0xdf}[(s >> 5) & 7u];
      }
    }
    uint8_t *copy = malloc(n);
    memcpy(copy, buf, n);
    proto_error_info e;
    int rc = proto_decode_command(copy, n, &c, &e);
    ck_assert(rc == 0 || (rc == -e.code && e.code > 0 && e.code < PROTO_ERR_COUNT && e.reason));
    ck_assert(strlen(e.field) <= PROTO_MAX_FIELD_BYTES);
    if (rc == 0) {
      ok++;
      /* Whatever decodes re-encodes and decodes again. */
      size_t n2 = proto_encode_command(buf2, sizeof buf2, &c);
      ck_assert_uint_gt(n2, 0);
      ck_assert_int_eq(proto_decode_command(buf2, n2, &c, &e), 0);
    }
    rc = proto_decode_server_msg(copy, n, &m, poses, 64, &e);
    ck_assert(rc == 0 || (rc == -e.code && e.code > 0 && e.code < PROTO_ERR_COUNT));
    if (rc == 0) {
      ok++;
      size_t n2 = proto_encode_server_msg(buf2, sizeof buf2, &m);
      ck_assert_uint_gt(n2, 0);
    }
    free(copy);
  }
  ck_assert_uint_gt(ok, 1000);
}
END_TEST

/* ---- GOTO (PROTOCOL.md 5.6, 6.8, 7.4) ------------------------------------------------------- */

/* [4, 1, {"agent": 1, "behaviour": {"kind": kind, key: value}}] with value a number or a string. */
static void goto_body(mbuf *m, const char *kind, const char *key, double num, const char *str) {
  mb_init(m);
  mb_cmd(m, PROTO_MSG_SET_BEHAVIOUR, 1, 2);
  mb_str(m, "agent");
  msgpack_pack_uint32(&m->pk, 1);
  mb_str(m, "behaviour");
  msgpack_pack_map(&m->pk, 3);
  mb_str(m, "kind");
  mb_str(m, kind);
  mb_str(m, "target");
  msgpack_pack_array(&m->pk, 2);
  msgpack_pack_double(&m->pk, 1.0);
  msgpack_pack_double(&m->pk, 2.0);
  mb_str(m, key);
  if (str)
    mb_str(m, str);
  else
    msgpack_pack_double(&m->pk, num);
}

START_TEST(test_goto_wire) {
  /* Every option round-trips; an agent target as well. */
  proto_command c = cmd_set_behaviour_goto();
  c.set_behaviour.behaviour.present |= PROTO_BHV_CORNERING | PROTO_BHV_REPLAN_DISTANCE | PROTO_BHV_FACING;
  c.set_behaviour.behaviour.cornering = STEER_CORNER_LAZY;
  c.set_behaviour.behaviour.replan_distance = 0.0f;
  c.set_behaviour.behaviour.facing = STEER_FACING_NONE;
  proto_command o = roundtrip_cmd(&c);
  const proto_behaviour *b = &o.set_behaviour.behaviour;
  ck_assert_uint_eq(b->kind, PROTO_BEHAVIOUR_GOTO);
  ck_assert(b->target.x == 30.0f && b->target.y == 12.5f && b->node_radius == 0.75f);
  ck_assert_uint_eq(b->cornering, STEER_CORNER_LAZY);
  ck_assert(b->replan_distance == 0.0f);
  ck_assert_str_eq(proto_behaviour_name(PROTO_BEHAVIOUR_GOTO), "goto");
  /* The encoder refuses what the decoder would. */
  c.set_behaviour.behaviour.present |= PROTO_BHV_ORIENTATION;
  ck_assert_uint_eq(proto_encode_command(buf, sizeof buf, &c), 0);
  c = cmd_set_behaviour();
  c.set_behaviour.behaviour.present |= PROTO_BHV_NODE_RADIUS;
  c.set_behaviour.behaviour.node_radius = 1.0f;
  ck_assert_uint_eq(proto_encode_command(buf, sizeof buf, &c), 0);

  /* Decoder rules: goto's keys only with goto, orientation and target_agent2 never with it. */
  mbuf m;
  goto_body(&m, "seek", "node_radius", 1.0, NULL);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "behaviour.node_radius");
  goto_body(&m, "arrive", "cornering", 0, "arc");
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "behaviour.cornering");
  goto_body(&m, "wander", "replan_distance", 1.0, NULL);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "behaviour.replan_distance");
  goto_body(&m, "goto", "orientation", 1.0, NULL);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "behaviour.orientation");
  goto_body(&m, "goto", "node_radius", 0.0, NULL);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "behaviour.node_radius");
  goto_body(&m, "goto", "replan_distance", -1.0, NULL);
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "behaviour.replan_distance");
  goto_body(&m, "goto", "cornering", 0, "sharp");
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "behaviour.cornering");
  goto_body(&m, "goto", "node_radius", 100.0, NULL);
  proto_command d;
  ck_assert_int_eq(proto_decode_command((const uint8_t *)m.sb.data, m.sb.size, &d, NULL), 0);
  ck_assert(d.set_behaviour.behaviour.node_radius == 100.0f);
  mb_free(&m);
  goto_body(&m, "goto", "target_agent", 5.0, NULL); /* target and target_agent */
  expect_mb_error(&m, PROTO_ERR_BAD_FIELD, "behaviour.target_agent");

  /* QUERY's goto map: following (the example), queued and unreachable round-trip. */
  proto_server_msg msg;
  proto_error_info e;
  size_t n = ex_ack_query_goto(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_server_msg(buf, n, &msg, NULL, 0, &e), 0);
  const proto_agent_report *q = &msg.ack.query;
  ck_assert_uint_eq(q->behaviour, PROTO_BEHAVIOUR_GOTO);
  ck_assert(q->has_goto);
  ck_assert_uint_eq(q->go.status, PROTO_GOTO_FOLLOWING);
  ck_assert_uint_eq(q->go.route_count, 3);
  ck_assert(q->go.route[0].x == -0.75f && q->go.route[1].y == 21.25f && q->go.goal.x == 30.0f);
  proto_server_msg in;
  memset(&in, 0, sizeof in);
  in.type = PROTO_MSG_ACK;
  in.ack = ex_ack(PROTO_MSG_QUERY, 14);
  in.ack.query.behaviour = PROTO_BEHAVIOUR_GOTO;
  in.ack.query.has_goto = 1;
  in.ack.query.go.status = PROTO_GOTO_QUEUED;
  in.ack.query.go.reason = PROTO_GOTO_TARGET_MOVED;
  in.ack.query.go.target_kind = STEER_TARGET_AGENT;
  in.ack.query.go.target_agent = ID2;
  proto_server_msg out = roundtrip_server(&in, NULL, 0);
  ck_assert(out.ack.query.has_goto);
  ck_assert_uint_eq(out.ack.query.go.status, PROTO_GOTO_QUEUED);
  ck_assert_uint_eq(out.ack.query.go.reason, PROTO_GOTO_TARGET_MOVED);
  ck_assert_uint_eq(out.ack.query.go.target_agent, ID2);
  ck_assert_uint_eq(out.ack.query.go.route_count, 0);
  in.ack.query.behaviour = STEER_BEHAVIOUR_NONE;
  in.ack.query.go.status = PROTO_GOTO_UNREACHABLE;
  out = roundtrip_server(&in, NULL, 0);
  ck_assert_uint_eq(out.ack.query.go.status, PROTO_GOTO_UNREACHABLE);
  /* Inconsistent reports are not encoded: a route while queued, none while following. */
  in.ack.query.go.route_count = 1;
  ck_assert_uint_eq(proto_encode_server_msg(buf, sizeof buf, &in), 0);
  in.ack.query.go.status = PROTO_GOTO_FOLLOWING;
  in.ack.query.go.route_count = 0;
  ck_assert_uint_eq(proto_encode_server_msg(buf, sizeof buf, &in), 0);
  /* No goto map: has_goto stays 0 (the plain QUERY example). */
  n = ex_ack_query(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_server_msg(buf, n, &msg, NULL, 0, &e), 0);
  ck_assert(!msg.ack.query.has_goto);

  /* The three events and their names. */
  ck_assert_str_eq(proto_event_name(PROTO_EVENT_PLANNED), "planned");
  ck_assert_str_eq(proto_event_name(PROTO_EVENT_REPLANNED), "replanned");
  ck_assert_str_eq(proto_event_name(PROTO_EVENT_UNREACHABLE), "unreachable");
  ck_assert_str_eq(proto_goto_reason_name(PROTO_GOTO_CONTINUE), "continue");
  ck_assert_ptr_null(proto_goto_status_name(0));
  n = ex_event_planned(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_server_msg(buf, n, &msg, NULL, 0, &e), 0);
  ck_assert_uint_eq(msg.event.code, PROTO_EVENT_PLANNED);
  ck_assert_uint_eq(msg.event.data, 4312);
}
END_TEST

/* ---- PROTOCOL.md examples ---------------------------------------------------------------- */

/* Removes the first `key` (a fixstr) and its value, `vlen` bytes, from the
 * message, and decrements the tuning map's count. */
static size_t drop_tuning_key(uint8_t *b, size_t n, const char *key, size_t vlen) {
  uint8_t k[32];
  size_t kl = strlen(key);
  k[0] = (uint8_t)(0xa0u | kl);
  memcpy(k + 1, key, kl);
  uint8_t *at = find_bytes(b, n, k, kl + 1);
  uint8_t *map = find_bytes(b, n, "\xa6tuning", 7);
  ck_assert(at && map);
  map[7]--; /* a fixmap */
  size_t cut = kl + 1 + vlen;
  memmove(at, at + cut, n - (size_t)(at - b) - cut);
  return n - cut;
}

/* QUERY's tuning from a server that predates `arrival` (seven keys) decodes,
 * arriving at the point; one without an earlier key is refused. */
START_TEST(test_tuning_without_arrival) {
  uint8_t old[1024];
  size_t n = ex_ack_query(buf, sizeof buf);
  memcpy(old, buf, n);
  size_t m = drop_tuning_key(old, n, "arrival", 6); /* "point": a5 + 5 */
  ck_assert_uint_eq(m, n - 14);
  proto_server_msg msg, now;
  proto_error_info e;
  ck_assert_int_eq(proto_decode_server_msg(buf, n, &now, NULL, 0, &e), 0);
  ck_assert_int_eq(proto_decode_server_msg(old, m, &msg, NULL, 0, &e), 0);
  ck_assert(msg.ack.query.has_tuning);
  ck_assert_uint_eq(msg.ack.query.tuning.arrival, STEER_ARRIVAL_POINT);
  const proto_tuning *t = &msg.ack.query.tuning, *u = &now.ack.query.tuning;
  ck_assert(t->avoid_weight == u->avoid_weight && t->avoid_horizon == u->avoid_horizon &&
            t->avoid_priority == u->avoid_priority && t->wall_lookahead == u->wall_lookahead &&
            t->wall_margin == u->wall_margin && t->stuck_time == u->stuck_time &&
            t->stuck_reaction == u->stuck_reaction);
  m = drop_tuning_key(old, m, "stuck_time", 5); /* a float32: ca + 4 */
  ck_assert_int_ne(proto_decode_server_msg(old, m, &msg, NULL, 0, &e), 0);
}
END_TEST

START_TEST(test_protocol_md_examples) {
  steerd_md_examples_check(PROTOCOL_MD, "example", examples, EXAMPLE_COUNT);
}
END_TEST

/* EVENTS (PROTOCOL.md 7.4): the example decodes back; cut short it never
 * does; an empty batch is valid only with lost > 0. */
START_TEST(test_events_round_trip) {
  uint8_t b[PROTO_MAX_MESSAGE_BYTES];
  proto_event got[PROTO_EVENTS_MAX];
  uint32_t lost, n;
  size_t len = ex_events(b, sizeof b);
  ck_assert_uint_gt(len, 0);
  ck_assert_int_eq(proto_decode_events(b, len, &lost, got, PROTO_EVENTS_MAX, &n, NULL), 0);
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(lost, 0);
  ck_assert_uint_eq(got[0].tick, 1240);
  ck_assert_uint_eq(got[0].code, PROTO_EVENT_WAYPOINT);
  ck_assert_uint_eq(got[0].agent, 4194305);
  ck_assert_uint_eq(got[0].data, 2);
  ck_assert_uint_eq(got[1].code, PROTO_EVENT_ARRIVED);
  ck_assert_uint_eq(got[1].agent, 4194306);
  for (size_t cut = 0; cut < len; cut++)
    ck_assert_int_ne(proto_decode_events(b, cut, &lost, got, PROTO_EVENTS_MAX, &n, NULL), 0);
  ck_assert_int_eq(proto_decode_events(b, len, &lost, got, 1, &n, NULL), -PROTO_ERR_TOO_LARGE);
  len = proto_encode_events(b, sizeof b, 7, NULL, 0);
  ck_assert_int_eq(proto_decode_events(b, len, &lost, got, PROTO_EVENTS_MAX, &n, NULL), 0);
  ck_assert_uint_eq(lost, 7);
  ck_assert_uint_eq(n, 0);
  len = proto_encode_events(b, sizeof b, 0, NULL, 0);
  ck_assert_int_ne(proto_decode_events(b, len, &lost, got, PROTO_EVENTS_MAX, &n, NULL), 0);
  proto_event bad = {1, PROTO_EVENT_COUNT, 1, 0};
  ck_assert_uint_eq(proto_encode_events(b, sizeof b, 0, &bad, 1), 0);
  static proto_event many[PROTO_EVENTS_MAX];
  for (uint32_t i = 0; i < PROTO_EVENTS_MAX; i++)
    many[i] = (proto_event){UINT64_MAX, PROTO_EVENT_DESPAWNED, UINT32_MAX, UINT32_MAX};
  len = proto_encode_events(b, sizeof b, UINT32_MAX, many, PROTO_EVENTS_MAX);
  ck_assert_uint_gt(len, 0);
  ck_assert_uint_le(len, PROTO_MAX_MESSAGE_BYTES);
  ck_assert_int_eq(proto_decode_events(b, len, &lost, got, PROTO_EVENTS_MAX, &n, NULL), 0);
  ck_assert_uint_eq(n, PROTO_EVENTS_MAX);
}
END_TEST

static void print_examples(void) { steerd_md_examples_print(stdout, "example", examples, EXAMPLE_COUNT); }

/* Greedy parts: what proto_snapshot_fit admits always encodes within the part
 * budget, whatever the values, and typical agents fill far more than the
 * worst-case capacity. */
START_TEST(test_snapshot_fit) {
  enum { N = 3000 };
  static steer_id ids[N];
  static float px[N], py[N], vx[N], vy[N], th[N];
  static const float scales[] = {0.0f, 1.0f, 300.0f, 1e4f, 3e7f};
  proto_snapshot_header h = {UINT64_MAX, UINT64_MAX, UINT32_MAX - 1, UINT32_MAX, UINT32_MAX};
  uint32_t seed = 12345;
  for (size_t sc = 0; sc < sizeof scales / sizeof scales[0]; sc++) {
    for (int i = 0; i < N; i++) {
      seed = seed * 1664525u + 1013904223u;
      float r = (float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f;
      ids[i] = (seed % 7 == 0) ? 5u : 4194305u + (uint32_t)i;
      px[i] = r * scales[sc];
      py[i] = -r * scales[sc] * 0.5f;
      vx[i] = r * 3.0f;
      vy[i] = (i % 3) ? 0.0f : r * scales[sc];
      th[i] = r * 3.14159f;
    }
    proto_pose_view v = {N, ids, px, py, vx, vy, th};
    uint32_t parts = 0;
    for (uint32_t first = 0; first < N; parts++) {
      uint32_t n = proto_snapshot_fit(&v, NULL, first, N - first, PROTO_SNAPSHOT_PART_BYTES);
      ck_assert_uint_ge(n, N - first < 41 ? N - first : 41);
      size_t len = proto_encode_snapshot_view(buf, PROTO_SNAPSHOT_PART_BYTES, &h, &v, NULL, first, n);
      ck_assert_msg(len > 0 && len <= PROTO_SNAPSHOT_PART_BYTES, "scale %g part at %u: %u agents, %zu bytes",
                    scales[sc], first, n, len);
      first += n;
    }
    if (scales[sc] <= 300.0f) /* typical worlds: ~60 agents a part, not 41 */
      ck_assert_uint_le(parts, N / 55 + 1);
  }
  proto_pose_view empty = {0, ids, px, py, vx, vy, th};
  ck_assert_uint_eq(proto_snapshot_fit(&empty, NULL, 0, 0, PROTO_SNAPSHOT_PART_BYTES), 0);
  ck_assert_uint_eq(proto_snapshot_fit(&empty, NULL, 0, 0, 10), 0);
}
END_TEST

/* ---- Delta snapshots, VIEW, SNAPSHOT_ACK ------------------------------------------------ */

START_TEST(test_delta_messages) {
  proto_delta_header h;
  proto_delta_entry e[8];
  steer_id rm[8];
  uint32_t n, nr;
  proto_error_info err;
  /* The example decodes to what it says, and applies to its baseline. */
  size_t len = ex_delta(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_delta(buf, len, &h, e, 8, &n, rm, 8, &nr, &err), 0);
  ck_assert_uint_eq(h.tick, 1237);
  ck_assert_uint_eq(h.baseline_tick, 1235);
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(nr, 1);
  ck_assert_uint_eq(rm[0], ID2);
  ck_assert_uint_eq(e[0].mask,
                    PROTO_DELTA_X | PROTO_DELTA_THETA | PROTO_DELTA_VX | PROTO_DELTA_VY | PROTO_DELTA_OMEGA);
  ck_assert_int_eq(e[0].v[0], 3);
  ck_assert_int_eq(e[0].v[2], 110);
  ck_assert_uint_eq(e[1].mask, PROTO_DELTA_ABSOLUTE | PROTO_DELTA_X | PROTO_DELTA_Y | PROTO_DELTA_THETA);
  proto_record base = ex_delta_base(), out;
  ck_assert_int_eq(proto_delta_apply(&base, &e[0], h.server_time_us, &out), 0);
  ck_assert_int_eq(out.x, 1263);
  ck_assert_int_eq(out.theta, 7933);
  ck_assert_int_eq(out.omega, 652);
  ck_assert_int_eq(proto_delta_apply(NULL, &e[1], h.server_time_us, &out), 0);
  ck_assert_int_eq(out.y, -750);
  /* Every prefix is refused; so is too small a capacity. */
  for (size_t cut = 0; cut < len; cut++) {
    uint8_t *copy = malloc(cut ? cut : 1);
    memcpy(copy, buf, cut);
    ck_assert_int_ne(proto_decode_delta(copy, cut, &h, e, 8, &n, rm, 8, &nr, &err), 0);
    ck_assert_uint_eq(n, 0);
    free(copy);
  }
  ck_assert_int_eq(proto_decode_delta(buf, len, &h, e, 1, &n, rm, 8, &nr, &err), -PROTO_ERR_TOO_LARGE);
  ck_assert_int_eq(proto_decode_delta(buf, len, &h, e, 8, &n, rm, 0, &nr, &err), -PROTO_ERR_TOO_LARGE);
  /* Bad contents, each with its field. */
  static const uint8_t zero_step[] = {0x98, 0x25, 0x02, 0x00, 0x01, 0x00, 0x01,
                                      0x94, 0x05, 0x00, 0x00, 0x00, 0x90};
  ck_assert_int_eq(proto_decode_delta(zero_step, sizeof zero_step, &h, e, 8, &n, rm, 8, &nr, &err),
                   -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(err.field, "changes[2]");
  static const uint8_t cut_short[] = {0x98, 0x25, 0x02, 0x00, 0x01, 0x00, 0x01, 0x93, 0x05, 0x03, 0x01, 0x90};
  ck_assert_int_eq(proto_decode_delta(cut_short, sizeof cut_short, &h, e, 8, &n, rm, 8, &nr, &err),
                   -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(err.field, "changes");
  static const uint8_t big_mask[] = {0x98, 0x25, 0x02, 0x00, 0x01, 0x00, 0x01, 0x92, 0x05, 0xcc, 0x80, 0x90};
  ck_assert_int_eq(proto_decode_delta(big_mask, sizeof big_mask, &h, e, 8, &n, rm, 8, &nr, &err),
                   -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(err.field, "changes[1]");
  static const uint8_t theta_big[] = {0x98, 0x25, 0x02, 0x00, 0x01, 0x00, 0x01,
                                      0x93, 0x05, 0x04, 0xcd, 0x80, 0x00, 0x90};
  ck_assert_int_eq(proto_decode_delta(theta_big, sizeof theta_big, &h, e, 8, &n, rm, 8, &nr, &err),
                   -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(err.field, "changes[2]");
  static const uint8_t base_late[] = {0x98, 0x25, 0x02, 0x00, 0x02, 0x00, 0x01, 0x90, 0x90};
  ck_assert_int_eq(proto_decode_delta(base_late, sizeof base_late, &h, e, 8, &n, rm, 8, &nr, &err),
                   -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(err.field, "baseline_tick");
  static const uint8_t rm_down[] = {0x98, 0x25, 0x02, 0x00, 0x01, 0x00, 0x01, 0x90, 0x92, 0x05, 0x00};
  ck_assert_int_eq(proto_decode_delta(rm_down, sizeof rm_down, &h, e, 8, &n, rm, 8, &nr, &err),
                   -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(err.field, "removed[1]");
  static const uint8_t part_bad[] = {0x98, 0x25, 0x02, 0x00, 0x01, 0x01, 0x01, 0x90, 0x90};
  ck_assert_int_eq(proto_decode_delta(part_bad, sizeof part_bad, &h, e, 8, &n, rm, 8, &nr, &err),
                   -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(err.field, "part_index");
  static const uint8_t ok_empty[] = {0x98, 0x25, 0x02, 0x00, 0x01, 0x00, 0x01, 0x90, 0x90};
  ck_assert_int_eq(proto_decode_delta(ok_empty, sizeof ok_empty, &h, NULL, 0, &n, NULL, 0, &nr, &err), 0);
  /* The encoder refuses ids out of order. */
  proto_delta_entry two[2];
  ex_delta_entries(two);
  proto_delta_entry swapped[2] = {two[1], two[0]};
  ck_assert_uint_eq(proto_encode_delta(buf, sizeof buf, &ex_delta_h, swapped, 2, NULL, 0), 0);
  /* Not for the other decoders, and they not for it. */
  proto_server_msg m;
  ck_assert_int_eq(proto_decode_server_msg(buf, ex_delta(buf, sizeof buf), &m, NULL, 0, &err),
                   -PROTO_ERR_UNKNOWN_TYPE);
  ck_assert_uint_eq(proto_message_type(buf, len), PROTO_MSG_DELTA);
  len = ex_snapshot(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_delta(buf, len, &h, e, 8, &n, rm, 8, &nr, &err), -PROTO_ERR_UNKNOWN_TYPE);

  /* SNAPSHOT_ACK, with and without the merge list. */
  proto_snapshot_ack a;
  len = ex_snapshot_ack(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_snapshot_ack(buf, len, &a, &err), 0);
  ck_assert_uint_eq(a.tick, 1237);
  ck_assert_uint_eq(a.has_merged, 0);
  size_t mlen = ex_snapshot_ack_merged(buf + 64, sizeof buf - 64);
  ck_assert_int_eq(proto_decode_snapshot_ack(buf + 64, mlen, &a, &err), 0);
  ck_assert(a.tick == 1237 && a.has_merged == 1 && a.merged_count == 2);
  ck_assert(a.merged_step[0] == 1 && a.merged_step[1] == 3);
  static const uint8_t ack_empty[] = {0x93, 0x0b, 0x05, 0x90};
  ck_assert_int_eq(proto_decode_snapshot_ack(ack_empty, sizeof ack_empty, &a, &err), 0);
  ck_assert(a.tick == 5 && a.has_merged == 1 && a.merged_count == 0);
  static const uint8_t ack0[] = {0x92, 0x0b, 0x00};
  ck_assert_int_eq(proto_decode_snapshot_ack(ack0, sizeof ack0, &a, &err), -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(err.field, "tick");
  static const uint8_t ack_notarray[] = {0x93, 0x0b, 0x01, 0x01};
  ck_assert_int_eq(proto_decode_snapshot_ack(ack_notarray, sizeof ack_notarray, &a, &err),
                   -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(err.field, "merged");
  static const uint8_t ack_order[] = {0x93, 0x0b, 0x05, 0x92, 0x02, 0x01}; /* steps must increase */
  ck_assert_int_eq(proto_decode_snapshot_ack(ack_order, sizeof ack_order, &a, &err), -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(err.field, "merged[1]");
  static const uint8_t ack_far[] = {0x93, 0x0b, 0x05, 0x91, 0x05}; /* a step back to tick 0 */
  ck_assert_int_eq(proto_decode_snapshot_ack(ack_far, sizeof ack_far, &a, &err), -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(err.field, "merged[0]");
  static const uint8_t ack4[] = {0x94, 0x0b, 0x05, 0x90, 0x00};
  ck_assert_int_eq(proto_decode_snapshot_ack(ack4, sizeof ack4, &a, &err), -PROTO_ERR_BAD_MESSAGE);
  ck_assert_uint_eq(a.tick, 0);
  /* The encoder refuses what the decoder would. */
  proto_snapshot_ack bad_ack = {.tick = 5, .has_merged = 1, .merged_count = 2, .merged_step = {2, 2}};
  ck_assert_uint_eq(proto_encode_snapshot_ack(buf, sizeof buf, &bad_ack), 0);
  bad_ack.merged_count = PROTO_ACK_MAX_MERGED + 1;
  ck_assert_uint_eq(proto_encode_snapshot_ack(buf, sizeof buf, &bad_ack), 0);
  len = ex_snapshot_ack(buf, sizeof buf);
  proto_command c;
  ck_assert_int_eq(proto_decode_command(buf, len, &c, &err), -PROTO_ERR_UNKNOWN_TYPE); /* not a command */

  /* VIEW: round trips and the rules of its keys. */
  proto_command v = cmd_view();
  len = proto_encode_command(buf, sizeof buf, &v);
  ck_assert_int_eq(proto_decode_command(buf, len, &c, &err), 0);
  ck_assert_uint_eq(c.view.kind, PROTO_VIEW_CENTRE);
  ck_assert(c.view.radius == 40.0f && c.view.centre.y == -3.25f);
  v.view.kind = PROTO_VIEW_FOLLOW;
  v.view.follow = ID1;
  len = proto_encode_command(buf, sizeof buf, &v);
  ck_assert_int_eq(proto_decode_command(buf, len, &c, &err), 0);
  ck_assert_uint_eq(c.view.follow, ID1);
  v.view.kind = PROTO_VIEW_ALL;
  len = proto_encode_command(buf, sizeof buf, &v);
  ck_assert_int_eq(proto_decode_command(buf, len, &c, &err), 0);
  ck_assert_uint_eq(c.view.kind, PROTO_VIEW_ALL);
  mbuf mb;
  mb_init(&mb);
  mb_cmd(&mb, PROTO_MSG_VIEW, 4, 0);
  expect_mb_error(&mb, PROTO_ERR_BAD_FIELD, "all");
  mb_init(&mb);
  mb_cmd(&mb, PROTO_MSG_VIEW, 4, 1);
  mb_str(&mb, "all"), msgpack_pack_false(&mb.pk);
  expect_mb_error(&mb, PROTO_ERR_BAD_FIELD, "all");
  mb_init(&mb);
  mb_cmd(&mb, PROTO_MSG_VIEW, 4, 1);
  mb_str(&mb, "follow"), msgpack_pack_int(&mb.pk, 5);
  expect_mb_error(&mb, PROTO_ERR_BAD_FIELD, "radius");
  mb_init(&mb);
  mb_cmd(&mb, PROTO_MSG_VIEW, 4, 2);
  mb_str(&mb, "all"), msgpack_pack_true(&mb.pk);
  mb_str(&mb, "radius"), msgpack_pack_int(&mb.pk, 5);
  expect_mb_error(&mb, PROTO_ERR_BAD_FIELD, "radius");
  mb_init(&mb);
  mb_cmd(&mb, PROTO_MSG_VIEW, 4, 3);
  mb_str(&mb, "follow"), msgpack_pack_int(&mb.pk, 5);
  mb_str(&mb, "centre"), msgpack_pack_array(&mb.pk, 2), msgpack_pack_int(&mb.pk, 1),
      msgpack_pack_int(&mb.pk, 2);
  mb_str(&mb, "radius"), msgpack_pack_int(&mb.pk, 5);
  expect_mb_error(&mb, PROTO_ERR_BAD_FIELD, "centre");
  mb_init(&mb);
  mb_cmd(&mb, PROTO_MSG_VIEW, 4, 2);
  mb_str(&mb, "follow"), msgpack_pack_int(&mb.pk, 5);
  mb_str(&mb, "radius"), msgpack_pack_int(&mb.pk, 0);
  expect_mb_error(&mb, PROTO_ERR_BAD_FIELD, "radius");
  /* HELLO snapshots: "full" and "delta" only. */
  mb_init(&mb);
  mb_cmd(&mb, PROTO_MSG_HELLO, 1, 3);
  mb_str(&mb, "version"), msgpack_pack_int(&mb.pk, 1);
  mb_str(&mb, "name"), mb_str(&mb, "x");
  mb_str(&mb, "snapshots"), mb_str(&mb, "Delta");
  expect_mb_error(&mb, PROTO_ERR_BAD_FIELD, "snapshots");
  len = ex_hello_delta(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_command(buf, len, &c, &err), 0);
  ck_assert(c.hello.has_snapshots && c.hello.snapshots == PROTO_SNAPSHOTS_DELTA);
  len = ex_hello(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_command(buf, len, &c, &err), 0);
  ck_assert(!c.hello.has_snapshots && c.hello.snapshots == PROTO_SNAPSHOTS_FULL);
}
END_TEST

/* The reader's every msgpack header (the spec's formats), from hand-made
 * bytes: the kind and value it gives and the bytes it consumes (a string's or
 * extension's payload included, an array's or map's elements not). */
START_TEST(test_reader_every_format) {
  static const struct {
    uint8_t bytes[12];
    size_t len;
    int kind;
    uint64_t u;
    int64_t i;
    double f;
  } cases[] = {
      {{0x05}, 1, MP_UINT, 5, 0, 0},
      {{0xfd}, 1, MP_INT, 0, -3, 0},
      {{0xcc, 0xc8}, 2, MP_UINT, 200, 0, 0},
      {{0xcd, 0xea, 0x60}, 3, MP_UINT, 60000, 0, 0},
      {{0xce, 0xee, 0x6b, 0x28, 0x00}, 5, MP_UINT, 4000000000u, 0, 0},
      {{0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0x05}, 9, MP_UINT, 0x8000000000000005ull, 0, 0},
      {{0xd0, 0x9c}, 2, MP_INT, 0, -100, 0},
      {{0xd0, 0x64}, 2, MP_UINT, 100, 0, 0},
      {{0xd1, 0x8a, 0xd0}, 3, MP_INT, 0, -30000, 0},
      {{0xd2, 0x88, 0xca, 0x6c, 0x00}, 5, MP_INT, 0, -2000000000, 0},
      {{0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}, 9, MP_INT, 0, INT64_MIN, 0},
      {{0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 9, MP_INT, 0, -1, 0},
      {{0xd3, 0, 0, 0, 0, 0, 0, 0x01, 0x00}, 9, MP_UINT, 256, 0, 0},
      {{0xca, 0x3f, 0xc0, 0x00, 0x00}, 5, MP_FLOAT, 0, 0, 1.5},
      {{0xcb, 0xc0, 0x02, 0, 0, 0, 0, 0, 0}, 9, MP_FLOAT, 0, 0, -2.25},
      {{0xa2, 'h', 'i'}, 3, MP_STR, 2, 0, 0},
      {{0xd9, 0x03, 'a', 'b', 'c'}, 5, MP_STR, 3, 0, 0},
      {{0xda, 0x00, 0x01, 'z'}, 4, MP_STR, 1, 0, 0},
      {{0xc4, 0x02, 0x01, 0x02}, 4, MP_BIN, 2, 0, 0},
      {{0xc5, 0x00, 0x01, 0xff}, 4, MP_BIN, 1, 0, 0},
      {{0x93}, 1, MP_ARRAY, 3, 0, 0},
      {{0xdc, 0x00, 0x14}, 3, MP_ARRAY, 20, 0, 0},
      {{0xdd, 0x00, 0x01, 0x00, 0x00}, 5, MP_ARRAY, 65536, 0, 0},
      {{0x82}, 1, MP_MAP, 2, 0, 0},
      {{0xde, 0x00, 0x14}, 3, MP_MAP, 20, 0, 0},
      {{0xc0}, 1, MP_NIL, 0, 0, 0},
      {{0xc3}, 1, MP_BOOL, 1, 0, 0},
      {{0xc2}, 1, MP_BOOL, 0, 0, 0},
      {{0xd4, 0x01, 0xaa}, 3, MP_EXT, 1, 0, 0},
      {{0xd6, 0x01, 1, 2, 3, 4}, 6, MP_EXT, 4, 0, 0},
      {{0xc7, 0x03, 0x07, 1, 2, 3}, 6, MP_EXT, 3, 0, 0},
      {{0xc8, 0x00, 0x02, 0x07, 1, 2}, 6, MP_EXT, 2, 0, 0},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    proto_error_info err;
    reader r;
    mp_val v;
    reader_init(&r, cases[k].bytes, cases[k].len, &err, true);
    ck_assert_msg(rd_val(&r, &v) == 0, "case %zu: not read", k);
    ck_assert_msg((int)v.kind == cases[k].kind, "case %zu: kind %d, not %d", k, (int)v.kind, cases[k].kind);
    ck_assert_msg(r.pos == cases[k].len, "case %zu: %zu bytes consumed, not %zu", k, r.pos, cases[k].len);
    if (v.kind == MP_INT)
      ck_assert_msg(v.i == cases[k].i, "case %zu: %lld", k, (long long)v.i);
    else if (v.kind == MP_FLOAT)
      ck_assert_msg(v.f == cases[k].f, "case %zu: %g", k, v.f);
    else
      ck_assert_msg(v.u == cases[k].u, "case %zu: %llu", k, (unsigned long long)v.u);
    /* One byte short: an error, never a read past the end. */
    if (v.kind != MP_ARRAY && v.kind != MP_MAP && cases[k].len > 1) {
      reader_init(&r, cases[k].bytes, cases[k].len - 1, &err, true);
      ck_assert_msg(rd_val(&r, &v) != 0, "case %zu: read from a truncated value", k);
    }
  }
  /* 0xc1 is never used. */
  static const uint8_t never[] = {0xc1};
  proto_error_info err;
  reader r;
  mp_val v;
  reader_init(&r, never, 1, &err, true);
  ck_assert_int_ne(rd_val(&r, &v), 0);
}
END_TEST

static Suite *protocol_suite(void) {
  Suite *s = suite_create("protocol");
  TCase *tc = check_tcase(s, "core", 60);
  tcase_add_test(tc, test_exact_bytes);
  tcase_add_test(tc, test_roundtrip_commands);
  tcase_add_test(tc, test_roundtrip_server);
  tcase_add_test(tc, test_apply);
  tcase_add_test(tc, test_bad_framing);
  tcase_add_test(tc, test_request_id_echo);
  tcase_add_test(tc, test_truncated);
  tcase_add_test(tc, test_events_round_trip);
  tcase_add_test(tc, test_bad_fields);
  tcase_add_test(tc, test_huge_sizes);
  tcase_add_test(tc, test_bad_server_msgs);
  tcase_add_test(tc, test_encode_overflow);
  tcase_add_test(tc, test_quantization);
  tcase_add_test(tc, test_snapshot_capacity);
  tcase_add_test(tc, test_snapshot_fit);
  tcase_add_test(tc, test_fuzz);
  tcase_add_test(tc, test_protocol_md_examples);
  tcase_add_test(tc, test_goto_wire);
  tcase_add_test(tc, test_tuning_without_arrival);
  tcase_add_test(tc, test_delta_messages);
  tcase_add_test(tc, test_reader_every_format);
  return s;
}

int main(void) {
  if (getenv("PROTO_PRINT_EXAMPLES")) {
    print_examples();
    return 0;
  }
  return check_run(protocol_suite());
}

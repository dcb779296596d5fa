/* test_server_gaps.c: the server's answers in the corners of PROTOCOL.md,
 * each pinned to what the document states.
 *
 * The real server on 127.0.0.1 (ephemeral port). A raw ENet client (no client
 * library: it sends HELLO as often as a test likes, never acknowledges a
 * DELTA, and decodes every part alone) and the client library where a plain
 * client will do. */
#include <check.h>
#include <enet/enet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world.h"
#include "check_run.h"
#include "client.h"
#include "protocol.h"
#include "raw_peer.h"
#include "steerd_proc.h"

/* ---- a raw client ---------------------------------------------------------------- */

#define RAW_MAX_IDS    1024
#define RAW_MAX_EVENTS 256

typedef struct raw {
  steerd_raw_peer net;
  uint32_t snapshots, deltas; /* packets received on channel 1, by type */
  uint32_t bad_parts;         /* parts that did not decode alone */
  uint32_t bad_ids;           /* decoded ids that name no agent of the test (see known) */
  uint32_t multi_part_frames; /* complete DELTA frames of more than one part */
  /* DELTA frames, rebuilt part by part (no acknowledgements: always baseline 0) */
  uint64_t fr_tick;
  uint32_t fr_parts, fr_seen;
  steer_id fr_ids[RAW_MAX_IDS];
  uint32_t fr_count;
  steer_id frame_ids[RAW_MAX_IDS]; /* the last complete frame */
  uint32_t frame_count;
  uint32_t frames;
  const steer_id *known; /* when not NULL: every id decoded must be one of these */
  uint32_t known_count;
  proto_event events[RAW_MAX_EVENTS];
  uint32_t event_count;
} raw;

static void raw_channel1(raw *r, const uint8_t *data, size_t len) {
  uint32_t type = proto_message_type(data, len);
  if (type == PROTO_MSG_SNAPSHOT) {
    r->snapshots++;
    return;
  }
  if (type != PROTO_MSG_DELTA)
    return;
  r->deltas++;
  static proto_delta_entry entries[RAW_MAX_IDS];
  static steer_id removed[RAW_MAX_IDS];
  proto_delta_header h;
  uint32_t n, nr;
  if (proto_decode_delta(data, len, &h, entries, RAW_MAX_IDS, &n, removed, RAW_MAX_IDS, &nr, NULL) != 0) {
    r->bad_parts++;
    return;
  }
  for (uint32_t i = 0; i < n && r->known; i++) {
    int found = 0;
    for (uint32_t k = 0; k < r->known_count && !found; k++)
      found = r->known[k] == entries[i].id;
    r->bad_ids += !found;
  }
  if (h.tick != r->fr_tick) {
    r->fr_tick = h.tick;
    r->fr_parts = h.part_count;
    r->fr_seen = 0;
    r->fr_count = 0;
  }
  if (h.part_index >= 32 || (r->fr_seen & (1u << h.part_index)))
    return;
  r->fr_seen |= 1u << h.part_index;
  for (uint32_t i = 0; i < n && r->fr_count < RAW_MAX_IDS; i++)
    if (entries[i].mask & PROTO_DELTA_ABSOLUTE) /* no baseline: every record is new */
      r->fr_ids[r->fr_count++] = entries[i].id;
  if (r->fr_parts <= 32 && r->fr_seen == (r->fr_parts == 32 ? 0xffffffffu : (1u << r->fr_parts) - 1u)) {
    memcpy(r->frame_ids, r->fr_ids, r->fr_count * sizeof *r->fr_ids);
    r->frame_count = r->fr_count;
    r->frames++;
    r->multi_part_frames += r->fr_parts > 1;
  }
}

/* Channel 1 to raw_channel1; the EVENTs kept. */
static void raw_packet(void *user, uint8_t channel, const uint8_t *data, size_t len,
                       const proto_server_msg *m) {
  raw *r = user;
  if (channel == PROTO_CHANNEL_SNAPSHOT)
    raw_channel1(r, data, len);
  else if (m && m->type == PROTO_MSG_EVENT && r->event_count < RAW_MAX_EVENTS)
    r->events[r->event_count++] = m->event;
}

/* Services up to ms; returns the reply (WELCOME, ACK or ERROR) to request_id in *out, or -1. */
static int raw_service(raw *r, uint32_t request_id, uint32_t ms, proto_server_msg *out) {
  return steerd_raw_wait_reply(&r->net, request_id, ms, raw_packet, r, out);
}

static void raw_connect(raw *r, uint16_t port) {
  memset(r, 0, sizeof *r);
  ck_assert_msg(steerd_raw_connect(&r->net, port, 3000) == 0, "no ENet connect within 3 s");
}

static void raw_close(raw *r) { steerd_raw_close(&r->net); }

/* Sends cmd (request_id set here) and waits for its reply. */
static proto_server_msg raw_command(raw *r, proto_command *cmd) {
  ck_assert_uint_ne(steerd_raw_send(&r->net, cmd, ENET_PACKET_FLAG_RELIABLE), 0);
  proto_server_msg m;
  ck_assert_msg(raw_service(r, cmd->request_id, 3000, &m) == 0, "no reply to command %u within 3 s",
                cmd->type);
  return m;
}

static proto_command command(uint8_t type) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = type;
  return c;
}

/* HELLO; snapshots: -1 leaves the key out, else PROTO_SNAPSHOTS_*. */
static void raw_hello(raw *r, int snapshots) {
  proto_command c = command(PROTO_MSG_HELLO);
  c.hello.version = PROTO_VERSION;
  strcpy(c.hello.name, "raw");
  if (snapshots >= 0) {
    c.hello.has_snapshots = 1;
    c.hello.snapshots = (uint8_t)snapshots;
  }
  proto_server_msg m = raw_command(r, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_WELCOME);
}

/* Services for ms, counting channel 1 from zero. */
static void raw_watch(raw *r, uint32_t ms) {
  r->snapshots = r->deltas = r->frames = 0;
  r->fr_tick = 0;
  proto_server_msg m;
  raw_service(r, 0xffffffffu, ms, &m);
}

static proto_command view_centre(float x, float y, float radius) {
  proto_command c = command(PROTO_MSG_VIEW);
  c.view.kind = PROTO_VIEW_CENTRE;
  c.view.centre = proto_v2(x, y);
  c.view.radius = radius;
  return c;
}

static steer_id raw_spawn_as(raw *r, float x, float y, int wander) {
  proto_command c = command(PROTO_MSG_SPAWN);
  c.spawn.model = STEER_MODEL_DYNAMIC;
  c.spawn.position = proto_v2(x, y);
  if (wander) { /* moving and turning: every field of a record is sent */
    c.spawn.present = PROTO_SPAWN_BEHAVIOUR | PROTO_SPAWN_ORIENTATION;
    c.spawn.orientation = 1.0f;
    c.spawn.behaviour.kind = STEER_BEHAVIOUR_WANDER;
  }
  proto_server_msg m = raw_command(r, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  return m.ack.agent;
}

static steer_id raw_spawn(raw *r, float x, float y) { return raw_spawn_as(r, x, y, 0); }

static int has_id(const steer_id *ids, uint32_t n, steer_id id) {
  for (uint32_t i = 0; i < n; i++)
    if (ids[i] == id)
      return 1;
  return 0;
}

static void server_start(steerd_proc *s, const char *const *extra) {
  static const char *const base[] = {"--no-demo", "--client-timeout", "3000", NULL};
  ck_assert_msg(steerd_proc_start_with(s, STEERD_BINARY, base, extra, 5000) == 0, "the server did not start");
}

/* ---- VIEW ---------------------------------------------------------------------- */

/* VIEW follow of an unknown or despawned agent: NO_SUCH_AGENT (field "follow")
 * for a full-snapshot client and for a delta client alike (a full client got
 * ACK {} before). */
START_TEST(view_follow_of_a_missing_agent_is_one_answer) {
  steerd_proc s;
  server_start(&s, NULL);
  raw full, delta;
  raw_connect(&full, s.port);
  raw_hello(&full, PROTO_SNAPSHOTS_FULL);
  raw_connect(&delta, s.port);
  raw_hello(&delta, PROTO_SNAPSHOTS_DELTA);
  steer_id gone = raw_spawn(&full, 1, 1);
  proto_command c = command(PROTO_MSG_DESPAWN);
  c.despawn.agent = gone;
  ck_assert_uint_eq(raw_command(&full, &c).type, PROTO_MSG_ACK);
  steer_id alive = raw_spawn(&full, 2, 2);
  const steer_id missing[] = {gone, 12345u};
  raw *both[] = {&full, &delta};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 2; i++) {
      proto_command v = command(PROTO_MSG_VIEW);
      v.view.kind = PROTO_VIEW_FOLLOW;
      v.view.follow = missing[i];
      v.view.radius = 10;
      proto_server_msg m = raw_command(both[k], &v);
      ck_assert_msg(m.type == PROTO_MSG_ERROR, "%s client: VIEW follow %u was answered %u",
                    k ? "delta" : "full", missing[i], m.type);
      ck_assert_uint_eq(m.error.code, PROTO_ERR_NO_SUCH_AGENT);
      ck_assert_str_eq(m.error.field, "follow");
      v.view.follow = alive;
      ck_assert_uint_eq(raw_command(both[k], &v).type, PROTO_MSG_ACK);
    }
  raw_close(&full);
  raw_close(&delta);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* A VIEW sent while taking full snapshots is checked and ACKed, then not kept:
 * a later HELLO asking for delta starts with the whole world. A repeated HELLO
 * without "snapshots" goes back to full snapshots; one asking for "delta" again
 * while on delta changes nothing (the view stays). */
START_TEST(view_and_snapshot_mode_across_hellos) {
  steerd_proc s;
  server_start(&s, NULL);
  raw r;
  raw_connect(&r, s.port);
  raw_hello(&r, PROTO_SNAPSHOTS_FULL);
  steer_id near = raw_spawn(&r, 0, 0), far = raw_spawn(&r, 100, 100);
  proto_command v = view_centre(0, 0, 10);
  ck_assert_uint_eq(raw_command(&r, &v).type, PROTO_MSG_ACK);
  raw_watch(&r, 300);
  ck_assert_uint_gt(r.snapshots, 0);
  ck_assert_uint_eq(r.deltas, 0);

  /* Switch to delta: the whole world, the earlier VIEW forgotten. */
  raw_hello(&r, PROTO_SNAPSHOTS_DELTA);
  raw_watch(&r, 400);
  ck_assert_uint_gt(r.frames, 0);
  ck_assert(has_id(r.frame_ids, r.frame_count, near));
  ck_assert(has_id(r.frame_ids, r.frame_count, far));

  /* A VIEW now narrows it; HELLO "delta" again keeps that view. */
  ck_assert_uint_eq(raw_command(&r, &v).type, PROTO_MSG_ACK);
  raw_hello(&r, PROTO_SNAPSHOTS_DELTA);
  raw_watch(&r, 400);
  ck_assert_uint_gt(r.frames, 0);
  ck_assert(has_id(r.frame_ids, r.frame_count, near));
  ck_assert(!has_id(r.frame_ids, r.frame_count, far));

  /* HELLO without "snapshots": full snapshots again (the default, not "keep"). */
  raw_hello(&r, -1);
  raw_watch(&r, 300); /* a DELTA already in flight may still arrive: count only after a pause */
  raw_watch(&r, 300);
  ck_assert_uint_gt(r.snapshots, 0);
  ck_assert_uint_eq(r.deltas, 0);
  raw_close(&r);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* SPAWNED reaches a delta client with a VIEW circle when the spawn position
 * lies strictly inside the circle (as of the latest snapshot), or when its
 * identity owns the agent. */
START_TEST(spawned_follows_the_view_circle) {
  steerd_proc s;
  server_start(&s, NULL);
  raw watcher, other;
  raw_connect(&watcher, s.port);
  raw_hello(&watcher, PROTO_SNAPSHOTS_DELTA);
  raw_connect(&other, s.port);
  raw_hello(&other, PROTO_SNAPSHOTS_FULL);
  proto_command v = view_centre(0, 0, 10);
  ck_assert_uint_eq(raw_command(&watcher, &v).type, PROTO_MSG_ACK);
  raw_watch(&watcher, 200);
  steer_id inside = raw_spawn(&other, 9.5f, 0), edge = raw_spawn(&other, 10, 0),
           outside = raw_spawn(&other, 50, 0);
  steer_id own = raw_spawn(&watcher, 60, 60);
  raw_watch(&watcher, 300);
  int seen_inside = 0, seen_edge = 0, seen_outside = 0, seen_own = 0;
  for (uint32_t i = 0; i < watcher.event_count; i++) {
    if (watcher.events[i].code != PROTO_EVENT_SPAWNED)
      continue;
    seen_inside += watcher.events[i].agent == inside;
    seen_edge += watcher.events[i].agent == edge;
    seen_outside += watcher.events[i].agent == outside;
    seen_own += watcher.events[i].agent == own;
  }
  ck_assert_int_eq(seen_inside, 1);
  ck_assert_int_eq(seen_edge, 0); /* strictly within */
  ck_assert_int_eq(seen_outside, 0);
  ck_assert_int_eq(seen_own, 1);
  raw_close(&watcher);
  raw_close(&other);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* ---- DELTA parts ------------------------------------------------------------------ */

/* Id differences restart from 0 in every part: each part of a frame of 150 new
 * agents (several parts) decodes alone into the real ids. */
START_TEST(delta_ids_restart_in_every_part) {
  enum { AGENTS = 150 };
  steerd_proc s;
  const char *const fast[] = {"--rate-limit",
                              "100000",
                              "--rate-burst",
                              "100000",
                              "--snapshot-budget",
                              "8000",
                              "--client-rate-kbps",
                              "0",
                              NULL};
  server_start(&s, fast);
  raw r;
  raw_connect(&r, s.port);
  raw_hello(&r, PROTO_SNAPSHOTS_FULL);
  static steer_id ids[AGENTS];
  for (int i = 0; i < AGENTS; i++)
    ids[i] = raw_spawn_as(&r, (float)(i % 15) * 4 - 30, (float)(i / 15) * 4 - 20, 1);
  r.known = ids;
  r.known_count = AGENTS;
  raw_watch(&r, 500); /* they get going */
  raw_hello(&r, PROTO_SNAPSHOTS_DELTA);
  raw_watch(&r, 600);
  ck_assert_uint_eq(r.bad_parts, 0);
  ck_assert_uint_eq(r.bad_ids, 0);
  printf("delta parts: %u packets, %u frames, %u multi-part, last frame %u agents\n", r.deltas, r.frames,
         r.multi_part_frames, r.frame_count);
  fflush(stdout);
  ck_assert_uint_gt(r.multi_part_frames, 0);
  ck_assert_uint_eq(r.frame_count, AGENTS);
  raw_close(&r);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* ---- error precedence ---------------------------------------------------------------- */

static int raw_error(raw *r, proto_command *c, const char *field) {
  proto_server_msg m = raw_command(r, c);
  ck_assert_uint_eq(m.type, PROTO_MSG_ERROR);
  if (field)
    ck_assert_str_eq(m.error.field, field);
  else
    ck_assert_str_eq(m.error.field, "");
  return (int)m.error.code;
}

/* A command that decodes is judged in this order (PROTOCOL.md section 8):
 * RATE_LIMITED, NOT_WELCOMED, FORBIDDEN, NO_SUCH_AGENT / NOT_OWNER, then the
 * command's own checks (ranges, targets, model, room). */
START_TEST(errors_of_a_decoded_command_come_in_order) {
  steerd_proc s;
  const char *const observer[] = {"--anonymous-role", "observer", NULL};
  server_start(&s, observer);
  raw r;
  raw_connect(&r, s.port);
  /* Before HELLO: NOT_WELCOMED even for a command that would fail its range check. */
  proto_command far = command(PROTO_MSG_SPAWN);
  far.spawn.model = STEER_MODEL_DYNAMIC;
  far.spawn.position = proto_v2(100000, 0);
  ck_assert_int_eq(raw_error(&r, &far, NULL), PROTO_ERR_NOT_WELCOMED);
  raw_hello(&r, PROTO_SNAPSHOTS_FULL);
  /* An observer: FORBIDDEN before NO_SUCH_AGENT and before the range check. */
  proto_command d = command(PROTO_MSG_DESPAWN);
  d.despawn.agent = 12345;
  ck_assert_int_eq(raw_error(&r, &d, NULL), PROTO_ERR_FORBIDDEN);
  ck_assert_int_eq(raw_error(&r, &far, NULL), PROTO_ERR_FORBIDDEN);
  raw_close(&r);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);

  server_start(&s, NULL);
  raw a, b;
  raw_connect(&a, s.port);
  raw_hello(&a, PROTO_SNAPSHOTS_FULL);
  raw_connect(&b, s.port);
  raw_hello(&b, PROTO_SNAPSHOTS_FULL);
  steer_id theirs = raw_spawn(&b, 0, 0);
  /* NOT_OWNER before the behaviour's own checks (an out-of-range target, a missing target). */
  proto_command sb = command(PROTO_MSG_SET_BEHAVIOUR);
  sb.set_behaviour.agent = theirs;
  sb.set_behaviour.behaviour.kind = STEER_BEHAVIOUR_SEEK;
  sb.set_behaviour.behaviour.present = PROTO_BHV_TARGET;
  sb.set_behaviour.behaviour.target = proto_v2(100000, 0);
  ck_assert_int_eq(raw_error(&a, &sb, "agent"), PROTO_ERR_NOT_OWNER);
  sb.set_behaviour.behaviour.present = 0;
  ck_assert_int_eq(raw_error(&a, &sb, "agent"), PROTO_ERR_NOT_OWNER);
  /* NO_SUCH_AGENT likewise. */
  sb.set_behaviour.agent = 12345;
  ck_assert_int_eq(raw_error(&a, &sb, "agent"), PROTO_ERR_NO_SUCH_AGENT);
  /* The owner gets the command's own error. */
  sb.set_behaviour.agent = theirs;
  ck_assert_int_eq(raw_error(&b, &sb, "behaviour.target_agent"), PROTO_ERR_BAD_TARGET);
  sb.set_behaviour.behaviour.present = PROTO_BHV_TARGET;
  ck_assert_int_eq(raw_error(&b, &sb, "behaviour.target"), PROTO_ERR_BAD_FIELD);
  raw_close(&a);
  raw_close(&b);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* Counts the BAD_FIELD errors to request 9 (the float agent id's). */
static void count_field_errors(void *user, uint8_t channel, const uint8_t *data, size_t len,
                               const proto_server_msg *m) {
  (void)channel;
  (void)data;
  (void)len;
  if (m && m->type == PROTO_MSG_ERROR && m->error.code == PROTO_ERR_BAD_FIELD && m->error.request_id == 9)
    (*(uint32_t *)user)++;
}

/* Only the decoder's errors count toward --garbage-limit: range checks and
 * other refusals of commands that decoded never do. */
START_TEST(only_malformed_packets_count_as_garbage) {
  steerd_proc s;
  const char *const strict[] = {"--garbage-limit", "3", NULL};
  server_start(&s, strict);
  raw r;
  raw_connect(&r, s.port);
  raw_hello(&r, PROTO_SNAPSHOTS_FULL);
  proto_command far = command(PROTO_MSG_SPAWN);
  far.spawn.model = STEER_MODEL_DYNAMIC;
  far.spawn.position = proto_v2(100000, 0); /* outside the world: BAD_FIELD from the range check */
  proto_command gone = command(PROTO_MSG_STOP);
  gone.stop.agent = 12345; /* NO_SUCH_AGENT */
  for (int i = 0; i < 10; i++) {
    ck_assert_int_eq(raw_error(&r, &far, "x"), PROTO_ERR_BAD_FIELD);
    ck_assert_int_eq(raw_error(&r, &gone, "agent"), PROTO_ERR_NO_SUCH_AGENT);
  }
  proto_command ping = command(PROTO_MSG_PING);
  ping.ping.client_time_us = 1;
  ck_assert_uint_eq(raw_command(&r, &ping).type, PROTO_MSG_ACK);
  /* The decoder's BAD_FIELD (a float agent id) counts: the 4th is over the limit of 3. */
  static const uint8_t bad[] = {0x93, 0x07, 0x09, 0x81, 0xa5, 'a', 'g', 'e', 'n', 't',
                                0xcb, 0x40, 0x14, 0,    0,    0,   0,   0,   0};
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(steerd_raw_send_bytes(&r.net, bad, sizeof bad, ENET_PACKET_FLAG_RELIABLE), 0);
  uint32_t field_errors = 0;
  uint64_t end = steerd_proc_now_ms() + 3000;
  while (!r.net.gone && steerd_proc_now_ms() < end)
    steerd_raw_pump(&r.net, 10, count_field_errors, &field_errors);
  ck_assert_uint_eq(field_errors, 4);
  ck_assert(r.net.gone);
  ck_assert_uint_eq(r.net.reason, PROTO_DISCONNECT_ABUSE);
  steerd_raw_drop(&r.net);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* SET_PARAMS on an agent whose target agent was despawned: applied (the limits
 * and params were valid), and the ACK says target_lost (was BAD_TARGET). */
START_TEST(set_params_with_a_lost_target_is_applied) {
  steerd_proc s;
  server_start(&s, NULL);
  raw r;
  raw_connect(&r, s.port);
  raw_hello(&r, PROTO_SNAPSHOTS_FULL);
  steer_id hunter = raw_spawn(&r, 0, 0), prey = raw_spawn(&r, 10, 0);
  proto_command sb = command(PROTO_MSG_SET_BEHAVIOUR);
  sb.set_behaviour.agent = hunter;
  sb.set_behaviour.behaviour.kind = STEER_BEHAVIOUR_PURSUE;
  sb.set_behaviour.behaviour.present = PROTO_BHV_TARGET_AGENT;
  sb.set_behaviour.behaviour.target_agent = prey;
  ck_assert_uint_eq(raw_command(&r, &sb).type, PROTO_MSG_ACK);
  proto_command sp = command(PROTO_MSG_SET_PARAMS);
  sp.set_params.agent = hunter;
  sp.set_params.limits.present = PROTO_LIMIT_MAX_SPEED;
  sp.set_params.limits.v.max_speed = 5.0f;
  proto_server_msg m = raw_command(&r, &sp);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  ck_assert_uint_eq(m.ack.target_lost, 0); /* its target is alive */
  proto_command d = command(PROTO_MSG_DESPAWN);
  d.despawn.agent = prey;
  ck_assert_uint_eq(raw_command(&r, &d).type, PROTO_MSG_ACK);
  sp.set_params.limits.v.max_speed = 7.0f;
  sp.set_params.params.present = PROTO_PARAM_TIME_TO_TARGET;
  sp.set_params.params.v.time_to_target = 0.25f;
  m = raw_command(&r, &sp);
  ck_assert_msg(m.type == PROTO_MSG_ACK, "SET_PARAMS answered %u (%s)", m.type,
                m.type == PROTO_MSG_ERROR ? proto_error_name((int)m.error.code) : "-");
  ck_assert_uint_eq(m.ack.agent, hunter);
  ck_assert_uint_eq(m.ack.target_lost, 1);
  proto_command q = command(PROTO_MSG_QUERY);
  q.query.agent = hunter;
  m = raw_command(&r, &q);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  ck_assert_float_eq(m.ack.query.limits.max_speed, 7.0f);
  ck_assert_uint_eq(m.ack.query.behaviour, STEER_BEHAVIOUR_PURSUE); /* kept, resting */
  raw_close(&r);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

static Suite *gaps_suite(void) {
  Suite *s = suite_create("server_gaps");
  TCase *tc = check_tcase(s, "gaps", 60);
  tcase_add_test(tc, view_follow_of_a_missing_agent_is_one_answer);
  tcase_add_test(tc, view_and_snapshot_mode_across_hellos);
  tcase_add_test(tc, spawned_follows_the_view_circle);
  tcase_add_test(tc, delta_ids_restart_in_every_part);
  tcase_add_test(tc, errors_of_a_decoded_command_come_in_order);
  tcase_add_test(tc, only_malformed_packets_count_as_garbage);
  tcase_add_test(tc, set_params_with_a_lost_target_is_applied);
  return s;
}

int main(void) {
  unsetenv("STEERD_SECRET");
  unsetenv("STEERD_SECRET_FILE");
  if (enet_initialize() != 0)
    return EXIT_FAILURE;
  int status = check_run(gaps_suite());
  enet_deinitialize();
  return status;
}

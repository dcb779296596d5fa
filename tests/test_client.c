/* test_client.c: the client library (client-sample/client.c) against a scripted
 * fake server: an ENet host on 127.0.0.1 in a second thread that answers HELLO
 * according to the client's name, replies to commands, and on STOP <n> plays
 * snapshot script n (parts, late parts, garbage) before the ACK. Everything it
 * sends goes down reliable channel 0, so a script has fully arrived when the
 * client has the STOP's ACK. */
#include <check.h>
#include <enet/enet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world.h"
#include "check_run.h"
#include "client.h"
#include "protocol.h"

#define FAKE_CLIENT_ID  7
#define FAKE_OFFSET_US  1000000u /* the fake server's clock runs 1 s ahead */
#define SCRIPT_KICK     50       /* STOP 50: disconnect the client with KICKED */
#define REPLY_TIMEOUT   2000     /* ms */
#define CLIENT_CAPACITY 200      /* agents per frame */

/* ---- the fake server --------------------------------------------------------- */

typedef struct fake {
  ENetHost *host;
  uint16_t port;
  pthread_t thread;
  atomic_int stop;
  uint8_t buf[PROTO_MAX_MESSAGE_BYTES];
} fake;

/* Not ck_assert: this runs outside the test's thread. */
static void fake_check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fake server: %s\n", what);
    abort();
  }
}

static void fake_send(ENetPeer *p, const void *data, size_t n) {
  fake_check(
      enet_peer_send(p, PROTO_CHANNEL_RELIABLE, enet_packet_create(data, n, ENET_PACKET_FLAG_RELIABLE)) == 0,
      "send");
}

/* One snapshot part whose agents have ids first_id.. and x = index in the frame. */
static void fake_snapshot(fake *f, ENetPeer *p, uint64_t tick, uint32_t part, uint32_t parts, uint32_t total,
                          uint32_t first_id, uint32_t count, size_t cut) {
  proto_snapshot_header h = {tick, tick * 1000u, part, parts, total};
  proto_pose poses[64];
  fake_check(count <= 64, "part too big");
  for (uint32_t i = 0; i < count; i++) {
    proto_pose q = {first_id + i, (float)(first_id + i), -1.0f, 0.5f, 1.0f, 2.0f};
    poses[i] = q;
  }
  size_t n = proto_encode_snapshot(f->buf, sizeof f->buf, &h, poses, count);
  fake_check(n > cut, "snapshot encode");
  fake_send(p, f->buf, n - cut);
}

static void fake_script(fake *f, ENetPeer *p, uint32_t script) {
  switch (script) {
  case 1: /* tick 10: 100 agents in three parts */
    fake_snapshot(f, p, 10, 0, 3, 100, 1, 41, 0);
    fake_snapshot(f, p, 10, 1, 3, 100, 42, 41, 0);
    fake_snapshot(f, p, 10, 2, 3, 100, 83, 18, 0);
    break;
  case 2: /* 20 never completes; 21 does; a late part of 20; 22 with a duplicate part */
    fake_snapshot(f, p, 20, 0, 3, 60, 1, 20, 0);
    fake_snapshot(f, p, 20, 1, 3, 60, 21, 20, 0);
    fake_snapshot(f, p, 21, 0, 1, 5, 1, 5, 0);
    fake_snapshot(f, p, 20, 2, 3, 60, 41, 20, 0);
    fake_snapshot(f, p, 22, 0, 2, 10, 1, 5, 0);
    fake_snapshot(f, p, 22, 0, 2, 10, 1, 5, 0);
    fake_snapshot(f, p, 22, 1, 2, 10, 6, 5, 0);
    break;
  case 3: { /* garbage, empty, truncated, a tick too big for the client, then an event */
    static const uint8_t garbage[] = {0xc1, 0xff, 0x00};
    fake_send(p, garbage, sizeof garbage);
    fake_send(p, garbage, 0);
    fake_snapshot(f, p, 30, 0, 1, 3, 1, 3, 3);
    fake_snapshot(f, p, 31, 0, 30, 1000, 1, 34, 0);
    fake_snapshot(f, p, 31, 1, 30, 1000, 35, 34, 0);
    proto_event e = {31, PROTO_EVENT_WAYPOINT, 77, 3};
    size_t n = proto_encode_event(f->buf, sizeof f->buf, &e);
    fake_check(n > 0, "event encode");
    fake_send(p, f->buf, n);
    break;
  }
  case 4: /* tick 40's second part disagrees about part_count */
    fake_snapshot(f, p, 40, 0, 2, 10, 1, 5, 0);
    fake_snapshot(f, p, 40, 1, 3, 10, 6, 5, 0);
    fake_snapshot(f, p, 41, 0, 1, 1, 1, 1, 0);
    break;
  default:
    break;
  }
}

static void fake_reply(fake *f, ENetPeer *p, const proto_command *cmd) {
  proto_ack a;
  memset(&a, 0, sizeof a);
  a.request_id = cmd->request_id;
  a.command = cmd->type;
  size_t n = 0;
  switch (cmd->type) {
  case PROTO_MSG_HELLO: {
    const char *name = cmd->hello.name;
    if (strcmp(name, "mute") == 0)
      return;
    if (strcmp(name, "full") == 0) {
      enet_peer_disconnect(p, PROTO_DISCONNECT_FULL);
      return;
    }
    if (strcmp(name, "reject") == 0) {
      n = proto_encode_error(f->buf, sizeof f->buf, cmd->request_id, PROTO_ERR_VERSION_MISMATCH, "go away",
                             "version");
      break;
    }
    proto_welcome w = {cmd->request_id,
                       FAKE_CLIENT_ID,
                       30,
                       20,
                       {-100.0f, -50.0f},
                       {100.0f, 50.0f},
                       5,
                       FAKE_OFFSET_US,
                       strcmp(name, "badproto") == 0 ? 99u : PROTO_VERSION,
                       0 /* max_agents: an older server's WELCOME */};
    n = proto_encode_welcome(f->buf, sizeof f->buf, &w);
    break;
  }
  case PROTO_MSG_SPAWN:
    a.agent = 42;
    n = proto_encode_ack(f->buf, sizeof f->buf, &a);
    break;
  case PROTO_MSG_QUERY:
    if (cmd->query.agent == 99) {
      n = proto_encode_error(f->buf, sizeof f->buf, cmd->request_id, PROTO_ERR_NO_SUCH_AGENT, "no such agent",
                             "agent");
      break;
    }
    a.agent = cmd->query.agent;
    a.query.agent = cmd->query.agent;
    a.query.model = STEER_MODEL_DYNAMIC;
    a.query.behaviour = STEER_BEHAVIOUR_SEEK;
    a.query.path_node = -1;
    a.query.state.position.x = 1.0f;
    a.query.state.position.y = 2.0f;
    a.query.limits = (proto_limit_values){3.0f, 6.0f, 4.0f, 16.0f, 0.5f};
    a.query.owner = FAKE_CLIENT_ID;
    n = proto_encode_ack(f->buf, sizeof f->buf, &a);
    break;
  case PROTO_MSG_PING:
    a.pong.client_time_us = cmd->ping.client_time_us;
    a.pong.server_time_us = cmd->ping.client_time_us + FAKE_OFFSET_US;
    a.pong.tick = 5;
    n = proto_encode_ack(f->buf, sizeof f->buf, &a);
    break;
  case PROTO_MSG_STOP:
    if (cmd->stop.agent == SCRIPT_KICK) {
      enet_peer_disconnect(p, PROTO_DISCONNECT_KICKED);
      return;
    }
    fake_script(f, p, cmd->stop.agent);
    a.agent = cmd->stop.agent;
    n = proto_encode_ack(f->buf, sizeof f->buf, &a);
    break;
  default:
    a.agent = cmd->despawn.agent; /* despawn, set_behaviour, set_path, set_params share the agent first */
    n = proto_encode_ack(f->buf, sizeof f->buf, &a);
    break;
  }
  fake_check(n > 0, "reply encode");
  fake_send(p, f->buf, n);
}

static void *fake_run(void *arg) {
  fake *f = arg;
  static _Thread_local proto_command cmd; /* large: not on the thread's stack */
  while (!atomic_load(&f->stop)) {
    ENetEvent ev;
    int r = enet_host_service(f->host, &ev, 5);
    fake_check(r >= 0, "service");
    if (r == 0 || ev.type != ENET_EVENT_TYPE_RECEIVE)
      continue;
    fake_check(ev.channelID == PROTO_CHANNEL_RELIABLE, "command on the snapshot channel");
    int d = proto_decode_command(ev.packet->data, ev.packet->dataLength, &cmd, NULL);
    enet_packet_destroy(ev.packet);
    fake_check(d == 0, "the client sent a command that does not decode");
    fake_reply(f, ev.peer, &cmd);
  }
  enet_host_flush(f->host);
  return NULL;
}

static void fake_start(fake *f) {
  memset(f, 0, sizeof *f);
  ck_assert_int_eq(enet_initialize(), 0);
  ENetAddress addr;
  ck_assert_int_eq(enet_address_set_host(&addr, "127.0.0.1"), 0);
  addr.port = 0;
  f->host = enet_host_create(&addr, 4, PROTO_CHANNEL_COUNT, 0, 0);
  ck_assert_ptr_nonnull(f->host);
  f->port = f->host->address.port; /* ENet reads the bound port back */
  ck_assert_uint_ne(f->port, 0);
  atomic_init(&f->stop, 0);
  ck_assert_int_eq(pthread_create(&f->thread, NULL, fake_run, f), 0);
}

static void fake_stop(fake *f) {
  atomic_store(&f->stop, 1);
  pthread_join(f->thread, NULL);
  enet_host_destroy(f->host);
}

/* ---- a recording client ------------------------------------------------------ */

typedef struct rec {
  uint32_t frames;
  uint64_t last_tick;
  uint32_t last_count;
  uint32_t last_parts;
  int frame_ok; /* ids consecutive from 1, x == id, velocities intact */
  uint32_t events;
  proto_event last_event;
  uint32_t replies;
  proto_server_msg last_reply;
  uint32_t disconnects;
  uint32_t reason;
  int reentry; /* what a nested service call returned */
  steerd_client *self;
} rec;

static void rec_frame(void *user, const steerd_client_frame *f) {
  rec *r = user;
  r->frames++;
  r->last_tick = f->tick;
  r->last_count = f->count;
  r->last_parts = f->part_count;
  r->frame_ok = f->server_time_us == f->tick * 1000u;
  for (uint32_t i = 0; i < f->count; i++) {
    const proto_pose *p = &f->poses[i];
    if (p->id != i + 1 || p->x != (float)(i + 1) || p->vx != 1.0f || p->vy != 2.0f)
      r->frame_ok = 0;
  }
}

static void rec_event(void *user, const proto_event *e) {
  rec *r = user;
  r->events++;
  r->last_event = *e;
}

static void rec_reply(void *user, const proto_server_msg *m) {
  rec *r = user;
  r->replies++;
  r->last_reply = *m;
  r->reentry = steerd_client_service(r->self, 0);
}

static void rec_disconnect(void *user, uint32_t reason) {
  rec *r = user;
  r->disconnects++;
  r->reason = reason;
}

static steerd_client *make_client(rec *r, const char *name, uint32_t timeout_ms) {
  memset(r, 0, sizeof *r);
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = name;
  cfg.max_agents = CLIENT_CAPACITY;
  cfg.connect_timeout_ms = timeout_ms;
  cfg.callbacks.on_snapshot_frame = rec_frame;
  cfg.callbacks.on_event = rec_event;
  cfg.callbacks.on_reply = rec_reply;
  cfg.callbacks.on_disconnect = rec_disconnect;
  cfg.user = r;
  steerd_client *c = steerd_client_create(&cfg);
  ck_assert_ptr_nonnull(c);
  r->self = c;
  return c;
}

static steerd_client *connect_client(fake *f, rec *r) {
  steerd_client *c = make_client(r, "tester", REPLY_TIMEOUT);
  ck_assert_int_eq(steerd_client_connect(c, "127.0.0.1", f->port), 0);
  return c;
}

static int agent_cmd(steerd_client *c, uint8_t type, steer_id agent, proto_server_msg *reply) {
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = type;
  cmd.query.agent = agent;
  return steerd_client_command_wait(c, &cmd, REPLY_TIMEOUT, reply);
}

/* ---- tests ------------------------------------------------------------------- */

START_TEST(handshake_fills_the_welcome) {
  fake f;
  fake_start(&f);
  rec r;
  steerd_client *c = make_client(&r, "tester", REPLY_TIMEOUT);
  ck_assert_ptr_null(steerd_client_welcome(c));
  ck_assert_int_eq(steerd_client_get_state(c), STEERD_CLIENT_IDLE);
  ck_assert_int_eq(steerd_client_connect(c, "127.0.0.1", f.port), 0);
  ck_assert_int_eq(steerd_client_get_state(c), STEERD_CLIENT_WELCOMED);
  const proto_welcome *w = steerd_client_welcome(c);
  ck_assert_ptr_nonnull(w);
  ck_assert_uint_eq(w->client_id, FAKE_CLIENT_ID);
  ck_assert_uint_eq(w->tick_rate, 30);
  ck_assert_uint_eq(w->snapshot_rate, 20);
  ck_assert_float_eq(w->world_min.x, -100.0f);
  ck_assert_float_eq(w->world_max.y, 50.0f);
  ck_assert_uint_eq(w->max_agents, 0);                 /* the fake is an older server: no max_agents */
  ck_assert_uint_eq(steerd_client_max_agents(c), 200); /* make_client's config */
  steerd_client_config cfg0 = steerd_client_default_config();
  cfg0.max_agents = 0; /* sized at WELCOME; without max_agents there, by the old default */
  cfg0.connect_timeout_ms = REPLY_TIMEOUT;
  steerd_client *c0 = steerd_client_create(&cfg0);
  ck_assert_ptr_nonnull(c0);
  ck_assert_int_eq(steerd_client_connect(c0, "127.0.0.1", f.port), 0);
  ck_assert_uint_eq(steerd_client_max_agents(c0), STEERD_CLIENT_DEFAULT_AGENTS);
  steerd_client_destroy(c0);
  ck_assert_int_eq(steerd_client_connect(c, "127.0.0.1", f.port), STEERD_CLIENT_EBUSY);
  steerd_client_stats st;
  steerd_client_get_stats(c, &st);
  ck_assert_uint_eq(st.commands_sent, 1);
  ck_assert_uint_eq(st.bad_packets, 0);
  ck_assert_int_eq(steerd_client_disconnect(c, 500), 0);
  ck_assert_int_eq(steerd_client_get_state(c), STEERD_CLIENT_DISCONNECTED);
  ck_assert_uint_eq(steerd_client_disconnect_reason(c), PROTO_DISCONNECT_NONE);
  ck_assert_ptr_nonnull(steerd_client_welcome(c)); /* kept */
  steerd_client_destroy(c);
  fake_stop(&f);
}
END_TEST

START_TEST(async_connect_is_carried_by_service) {
  fake f;
  fake_start(&f);
  rec r;
  steerd_client *c = make_client(&r, "tester", REPLY_TIMEOUT);
  ck_assert_int_eq(steerd_client_connect_start(c, "127.0.0.1", f.port), 0);
  ck_assert_int_eq(steerd_client_get_state(c), STEERD_CLIENT_CONNECTING);
  ck_assert_int_ge(steerd_client_fd(c), 0);
  uint64_t end = steerd_client_now_us() + 2000000u;
  while (steerd_client_get_state(c) == STEERD_CLIENT_CONNECTING && steerd_client_now_us() < end)
    ck_assert_int_ge(steerd_client_service(c, 50), 0);
  ck_assert_int_eq(steerd_client_get_state(c), STEERD_CLIENT_WELCOMED);
  steerd_client_destroy(c);
  fake_stop(&f);
}
END_TEST

START_TEST(connect_failures_are_reported) {
  fake f;
  fake_start(&f);
  rec r;
  steerd_client *c = make_client(&r, "reject", REPLY_TIMEOUT);
  ck_assert_int_eq(steerd_client_connect(c, "127.0.0.1", f.port), STEERD_CLIENT_EREPLY);
  ck_assert_ptr_nonnull(steerd_client_last_error(c));
  ck_assert_uint_eq(steerd_client_last_error(c)->code, PROTO_ERR_VERSION_MISMATCH);
  ck_assert_str_eq(steerd_client_last_error(c)->message, "go away");
  ck_assert_int_eq(steerd_client_get_state(c), STEERD_CLIENT_DISCONNECTED);
  ck_assert_int_eq(steerd_client_service(c, 0), STEERD_CLIENT_EREPLY);
  steerd_client_destroy(c);

  c = make_client(&r, "full", REPLY_TIMEOUT);
  ck_assert_int_eq(steerd_client_connect(c, "127.0.0.1", f.port), STEERD_CLIENT_EDISCONNECTED);
  ck_assert_uint_eq(steerd_client_disconnect_reason(c), PROTO_DISCONNECT_FULL);
  ck_assert_uint_eq(r.disconnects, 1);
  ck_assert_uint_eq(r.reason, PROTO_DISCONNECT_FULL);
  steerd_client_destroy(c);

  c = make_client(&r, "badproto", REPLY_TIMEOUT);
  ck_assert_int_eq(steerd_client_connect(c, "127.0.0.1", f.port), STEERD_CLIENT_EPROTOCOL);
  steerd_client_destroy(c);

  c = make_client(&r, "mute", 300);
  uint64_t t0 = steerd_client_now_us();
  ck_assert_int_eq(steerd_client_connect(c, "127.0.0.1", f.port), STEERD_CLIENT_ETIMEDOUT);
  uint64_t took = steerd_client_now_us() - t0;
  ck_assert_uint_ge(took, 290000u);
  ck_assert_uint_lt(took, 1000000u);
  steerd_client_destroy(c);

  fake_stop(&f);
}
END_TEST

START_TEST(commands_get_their_replies) {
  fake f;
  fake_start(&f);
  rec r;
  steerd_client *c = connect_client(&f, &r);
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_SPAWN;
  cmd.spawn.model = STEER_MODEL_DYNAMIC;
  proto_server_msg reply;
  ck_assert_int_eq(steerd_client_command_wait(c, &cmd, REPLY_TIMEOUT, &reply), 0);
  ck_assert_uint_eq(reply.type, PROTO_MSG_ACK);
  ck_assert_uint_eq(reply.ack.command, PROTO_MSG_SPAWN);
  ck_assert_uint_eq(reply.ack.agent, 42);
  ck_assert_uint_eq(r.replies, 0); /* the awaited reply is not also a callback */

  ck_assert_int_eq(agent_cmd(c, PROTO_MSG_QUERY, 5, &reply), 0);
  ck_assert_uint_eq(reply.ack.query.agent, 5);
  ck_assert_float_eq(reply.ack.query.state.position.y, 2.0f);
  ck_assert_int_eq(reply.ack.query.path_node, -1);

  ck_assert_int_eq(agent_cmd(c, PROTO_MSG_QUERY, 99, &reply), STEERD_CLIENT_EREPLY);
  ck_assert_uint_eq(reply.type, PROTO_MSG_ERROR);
  ck_assert_uint_eq(reply.error.code, PROTO_ERR_NO_SUCH_AGENT);
  ck_assert_str_eq(reply.error.field, "agent");

  /* Fire and forget: the reply comes to on_reply with the id send returned;
   * a nested service call from the callback is refused. */
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_DESPAWN;
  cmd.despawn.agent = 8;
  uint32_t id1 = 0, id2 = 0;
  ck_assert_int_eq(steerd_client_send(c, &cmd, &id1), 0);
  ck_assert_int_eq(steerd_client_send(c, &cmd, &id2), 0);
  ck_assert_uint_eq(id2, id1 + 1);
  uint64_t end = steerd_client_now_us() + 2000000u;
  while (r.replies < 2 && steerd_client_now_us() < end)
    ck_assert_int_ge(steerd_client_service(c, 50), 0);
  ck_assert_uint_eq(r.replies, 2);
  ck_assert_uint_eq(r.last_reply.ack.request_id, id2);
  ck_assert_uint_eq(r.last_reply.ack.command, PROTO_MSG_DESPAWN);
  ck_assert_int_eq(r.reentry, STEERD_CLIENT_EBUSY);

  steerd_client_stats st;
  steerd_client_get_stats(c, &st);
  ck_assert_uint_eq(st.commands_sent, 6); /* HELLO + 5 */
  ck_assert_uint_eq(st.acks, 4);
  ck_assert_uint_eq(st.errors, 1);
  steerd_client_destroy(c);
  fake_stop(&f);
}
END_TEST

START_TEST(ping_measures_rtt_and_clock_offset) {
  fake f;
  fake_start(&f);
  rec r;
  steerd_client *c = connect_client(&f, &r);
  for (int i = 0; i < 5; i++) {
    uint64_t rtt = 0;
    ck_assert_int_eq(steerd_client_ping(c, REPLY_TIMEOUT, &rtt), 0);
    ck_assert_uint_gt(rtt, 0);
    ck_assert_uint_lt(rtt, 500000u);
  }
  steerd_client_stats st;
  steerd_client_get_stats(c, &st);
  ck_assert_uint_eq(st.pings, 5);
  ck_assert_uint_le(st.rtt_min_us, st.rtt_last_us);
  ck_assert(st.rtt_smoothed_us > 0.0);
  /* The fake's clock is exactly 1 s ahead and answers at once: the estimate is
   * off by at most half the best round trip. */
  ck_assert_int_le(llabs(st.clock_offset_us - (int64_t)FAKE_OFFSET_US), (long long)st.rtt_min_us / 2 + 1);
  steerd_client_destroy(c);
  fake_stop(&f);
}
END_TEST

START_TEST(snapshot_parts_make_one_frame) {
  fake f;
  fake_start(&f);
  rec r;
  steerd_client *c = connect_client(&f, &r);
  ck_assert_int_eq(agent_cmd(c, PROTO_MSG_STOP, 1, NULL), 0);
  ck_assert_uint_eq(r.frames, 1);
  ck_assert_uint_eq(r.last_tick, 10);
  ck_assert_uint_eq(r.last_count, 100);
  ck_assert_uint_eq(r.last_parts, 3);
  ck_assert(r.frame_ok);
  steerd_client_stats st;
  steerd_client_get_stats(c, &st);
  ck_assert_uint_eq(st.snapshot_parts, 3);
  ck_assert_uint_eq(st.frames_complete, 1);
  ck_assert_uint_eq(st.frames_incomplete, 0);
  ck_assert_uint_eq(st.parts_dropped, 0);
  steerd_client_destroy(c);
  fake_stop(&f);
}
END_TEST

START_TEST(newer_tick_drops_unfinished_one) {
  fake f;
  fake_start(&f);
  rec r;
  steerd_client *c = connect_client(&f, &r);
  ck_assert_int_eq(agent_cmd(c, PROTO_MSG_STOP, 2, NULL), 0);
  ck_assert_uint_eq(r.frames, 2); /* 21 and 22 */
  ck_assert_uint_eq(r.last_tick, 22);
  ck_assert_uint_eq(r.last_count, 10);
  ck_assert(r.frame_ok);
  steerd_client_stats st;
  steerd_client_get_stats(c, &st);
  ck_assert_uint_eq(st.snapshot_parts, 7);
  ck_assert_uint_eq(st.frames_complete, 2);
  ck_assert_uint_eq(st.frames_incomplete, 1); /* 20 */
  ck_assert_uint_eq(st.parts_dropped, 2);     /* late part of 20, duplicate of 22 */
  steerd_client_destroy(c);
  fake_stop(&f);
}
END_TEST

START_TEST(bad_packets_are_counted_and_dropped) {
  fake f;
  fake_start(&f);
  rec r;
  steerd_client *c = connect_client(&f, &r);
  ck_assert_int_eq(agent_cmd(c, PROTO_MSG_STOP, 3, NULL), 0);
  ck_assert_uint_eq(r.frames, 0);
  steerd_client_stats st;
  steerd_client_get_stats(c, &st);
  ck_assert_uint_eq(st.bad_packets, 3); /* garbage, empty, truncated */
  ck_assert_uint_eq(st.frames_overflow, 1);
  ck_assert_uint_eq(st.frames_incomplete, 1);
  ck_assert_uint_eq(st.parts_dropped, 2);
  /* The connection still works and the event after the junk arrived. */
  ck_assert_uint_eq(r.events, 1);
  ck_assert_uint_eq(r.last_event.tick, 31);
  ck_assert_uint_eq(r.last_event.code, PROTO_EVENT_WAYPOINT);
  ck_assert_uint_eq(r.last_event.agent, 77);
  ck_assert_uint_eq(r.last_event.data, 3);
  /* Newer ticks still assemble (script 4 plays ticks 40 and 41). */
  ck_assert_int_eq(agent_cmd(c, PROTO_MSG_STOP, 4, NULL), 0);
  ck_assert_uint_eq(r.frames, 1);
  ck_assert_uint_eq(r.last_tick, 41);
  steerd_client_destroy(c);
  fake_stop(&f);
}
END_TEST

START_TEST(parts_that_disagree_abandon_the_frame) {
  fake f;
  fake_start(&f);
  rec r;
  steerd_client *c = connect_client(&f, &r);
  ck_assert_int_eq(agent_cmd(c, PROTO_MSG_STOP, 4, NULL), 0);
  ck_assert_uint_eq(r.frames, 1);
  ck_assert_uint_eq(r.last_tick, 41);
  steerd_client_stats st;
  steerd_client_get_stats(c, &st);
  ck_assert_uint_eq(st.frames_incomplete, 1);
  ck_assert_uint_eq(st.parts_dropped, 1);
  steerd_client_destroy(c);
  fake_stop(&f);
}
END_TEST

START_TEST(server_disconnect_ends_waits_and_service) {
  fake f;
  fake_start(&f);
  rec r;
  steerd_client *c = connect_client(&f, &r);
  ck_assert_int_eq(agent_cmd(c, PROTO_MSG_STOP, SCRIPT_KICK, NULL), STEERD_CLIENT_EDISCONNECTED);
  ck_assert_uint_eq(r.disconnects, 1);
  ck_assert_uint_eq(r.reason, PROTO_DISCONNECT_KICKED);
  ck_assert_uint_eq(steerd_client_disconnect_reason(c), PROTO_DISCONNECT_KICKED);
  ck_assert_int_eq(steerd_client_service(c, 0), STEERD_CLIENT_EDISCONNECTED);
  ck_assert_int_eq(agent_cmd(c, PROTO_MSG_QUERY, 1, NULL), STEERD_CLIENT_EDISCONNECTED);
  steerd_client_destroy(c);
  fake_stop(&f);
}
END_TEST

START_TEST(misuse_is_refused) {
  steerd_client_destroy(NULL);
  ck_assert_ptr_null(steerd_client_create(NULL));
  steerd_client_config cfg = steerd_client_default_config();
  cfg.max_agents = STEER_MAX_CAPACITY + 1u;
  ck_assert_ptr_null(steerd_client_create(&cfg));
  cfg.max_agents = 0; /* sized at WELCOME: nothing to hold before */
  steerd_client *sized_later = steerd_client_create(&cfg);
  ck_assert_ptr_nonnull(sized_later);
  ck_assert_uint_eq(steerd_client_max_agents(sized_later), 0);
  steerd_client_destroy(sized_later);
  cfg = steerd_client_default_config();
  char long_name[PROTO_MAX_NAME_BYTES + 2];
  memset(long_name, 'a', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  cfg.name = long_name;
  ck_assert_ptr_null(steerd_client_create(&cfg));

  rec r;
  steerd_client *c = make_client(&r, "tester", 100);
  static proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_PING;
  ck_assert_int_eq(steerd_client_send(c, &cmd, NULL), STEERD_CLIENT_ENOTCONN);
  ck_assert_int_eq(steerd_client_service(c, 0), STEERD_CLIENT_ENOTCONN);
  cmd.type = PROTO_MSG_HELLO;
  ck_assert_int_eq(steerd_client_send(c, &cmd, NULL), STEERD_CLIENT_EINVAL);
  ck_assert_int_eq(steerd_client_connect(c, "127.0.0.1", 0), STEERD_CLIENT_EINVAL);
  ck_assert_int_eq(steerd_client_disconnect(c, 0), STEERD_CLIENT_ENOTCONN);
  steerd_client_destroy(c);

  for (int code = 0; code > -STEERD_CLIENT_ERROR_COUNT; code--) {
    ck_assert_str_ne(steerd_client_error_name(code), "UNKNOWN");
    ck_assert_str_ne(steerd_client_strerror(code), "unknown error");
  }
  ck_assert_str_eq(steerd_client_error_name(STEERD_CLIENT_ETIMEDOUT), "ETIMEDOUT");
  ck_assert_str_eq(steerd_client_error_name(1), "UNKNOWN");
  ck_assert_str_eq(steerd_client_error_name(-STEERD_CLIENT_ERROR_COUNT), "UNKNOWN");
}
END_TEST

int main(void) {
  Suite *s = suite_create("client");
  TCase *tc = check_tcase(s, "fake server", 30);
  tcase_add_test(tc, handshake_fills_the_welcome);
  tcase_add_test(tc, async_connect_is_carried_by_service);
  tcase_add_test(tc, connect_failures_are_reported);
  tcase_add_test(tc, commands_get_their_replies);
  tcase_add_test(tc, ping_measures_rtt_and_clock_offset);
  tcase_add_test(tc, snapshot_parts_make_one_frame);
  tcase_add_test(tc, newer_tick_drops_unfinished_one);
  tcase_add_test(tc, bad_packets_are_counted_and_dropped);
  tcase_add_test(tc, parts_that_disagree_abandon_the_frame);
  tcase_add_test(tc, server_disconnect_ends_waits_and_service);
  tcase_add_test(tc, misuse_is_refused);
  return check_run(s);
}

/* test_server_threads.c: the real server encodes its delta clients' frames on
 * its pool of threads (--threads), and what a client receives is
 * the same with one thread and with two.
 *
 * Two steerd child processes, --threads 1 and --threads 2, start from copies
 * of one state file (a world of wandering agents, no demo, no commands: the
 * world at tick T is the same in both) and tick side by side. Each gets the
 * same raw ENet clients (no client library): delta snapshots, a VIEW each
 * (the whole world, circles of several sizes, one holding no agent), and no
 * SNAPSHOT_ACK ever, so every frame goes against nothing and its changes
 * depend only on the world at its tick and the client's view; no rate limit
 * (the byte bucket follows the wall clock), a budget of two packets. For
 * every tick both servers sent a client whole, the decoded parts (every
 * change and removal, field by field, in order; not the header's server time,
 * which is each process's own clock) must be the same. Frames against a
 * baseline are compared byte for byte across thread counts in
 * test_netcode_threads.c, with the same acknowledgements fed to each. */
#include <check.h>
#include <enet/enet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "protocol.h"
#include "raw_peer.h"
#include "state_file.h"
#include "steerd_proc.h"

#define AGENTS   1500u
#define CLIENTS  6u
#define RING     512u
#define MAX_IDS  2048u
#define WATCH_MS 5000u

typedef struct frame_rec {
  uint64_t tick;
  uint64_t hash; /* parts folded in part order */
  uint64_t part_hash[8];
  uint32_t parts, seen; /* part_count; bit per part received */
  uint32_t changes;
} frame_rec;

typedef struct raw {
  steerd_raw_peer peer;
  frame_rec ring[RING];
  uint32_t bad_parts;
  uint32_t with_baseline; /* parts against a baseline (none expected: no acks) */
  uint32_t want_rid;      /* the request whose reply is awaited, 0: none */
  int got;                /* it came, into reply */
  proto_server_msg reply;
} raw;

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static void on_delta(raw *r, const uint8_t *data, size_t len) {
  if (proto_message_type(data, len) != PROTO_MSG_DELTA)
    return;
  static proto_delta_entry e[MAX_IDS];
  static steer_id rem[MAX_IDS];
  proto_delta_header h;
  uint32_t n, nr;
  if (proto_decode_delta(data, len, &h, e, MAX_IDS, &n, rem, MAX_IDS, &nr, NULL) != 0 || h.part_count > 8) {
    r->bad_parts++;
    return;
  }
  r->with_baseline += h.baseline_tick != 0;
  frame_rec *f = &r->ring[h.tick % RING];
  if (f->tick != h.tick) {
    memset(f, 0, sizeof *f);
    f->tick = h.tick;
    f->parts = h.part_count;
  }
  uint64_t x = mix(mix(h.tick, h.baseline_tick), (uint64_t)h.part_index << 32 | h.part_count);
  for (uint32_t i = 0; i < n; i++) {
    x = mix(x, (uint64_t)e[i].id << 8 | e[i].mask);
    for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
      x = mix(x, (uint32_t)e[i].v[k]);
  }
  for (uint32_t i = 0; i < nr; i++)
    x = mix(x, 0x5555000000000000ull | rem[i]);
  f->part_hash[h.part_index] = x;
  f->seen |= 1u << h.part_index;
  f->changes += n;
  if (f->seen == (1u << f->parts) - 1u) {
    f->hash = 0;
    for (uint32_t p = 0; p < f->parts; p++)
      f->hash = mix(f->hash, f->part_hash[p]);
  }
}

static int frame_whole(const frame_rec *f) { return f->parts > 0 && f->seen == (1u << f->parts) - 1u; }

static uint32_t reply_id(const proto_server_msg *m) {
  return m->type == PROTO_MSG_WELCOME ? m->welcome.request_id
         : m->type == PROTO_MSG_ACK   ? m->ack.request_id
         : m->type == PROTO_MSG_ERROR ? m->error.request_id
                                      : 0;
}

static void on_packet(void *user, uint8_t channel, const uint8_t *data, size_t len,
                      const proto_server_msg *m) {
  raw *r = user;
  if (channel == PROTO_CHANNEL_SNAPSHOT) {
    on_delta(r, data, len);
  } else if (m && r->want_rid != 0 && reply_id(m) == r->want_rid) {
    r->reply = *m;
    r->got = 1;
  }
}

/* Services every client of both servers for up to ms (or until request_id's
 * reply reaches `want`). */
static int service(raw *cl, uint32_t count, uint32_t ms, raw *want, uint32_t request_id,
                   proto_server_msg *out) {
  if (want) {
    want->want_rid = request_id;
    want->got = 0;
  }
  uint64_t end = steerd_proc_now_ms() + ms;
  while (!(want && want->got) && steerd_proc_now_ms() < end) {
    int any = 0;
    for (uint32_t i = 0; i < count; i++)
      any |= steerd_raw_pump(&cl[i].peer, 0, on_packet, &cl[i]) > 0;
    if (!any)
      steerd_proc_sleep_ms(1);
  }
  if (!want)
    return -1;
  want->want_rid = 0;
  if (!want->got)
    return -1;
  *out = want->reply;
  return 0;
}

static void raw_connect(raw *r, uint16_t port) {
  memset(r, 0, sizeof *r);
  ck_assert_msg(steerd_raw_connect(&r->peer, port, 5000) == 0, "no ENet connect within 5 s");
}

static proto_server_msg raw_command(raw *all, uint32_t count, raw *r, proto_command *cmd) {
  uint32_t rid = steerd_raw_send(&r->peer, cmd, ENET_PACKET_FLAG_RELIABLE);
  ck_assert_uint_ne(rid, 0);
  proto_server_msg m;
  ck_assert_msg(service(all, count, 10000, r, rid, &m) == 0, "no reply to command %u within 10 s", cmd->type);
  return m;
}

/* Client i's view: the same in both servers. */
static proto_command view_of(uint32_t i, float half) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = PROTO_MSG_VIEW;
  c.view.kind = PROTO_VIEW_CENTRE;
  switch (i) {
  case 0:
    c.view.kind = PROTO_VIEW_ALL;
    break;
  case 1:
    c.view.centre = proto_v2(0.0f, 0.0f);
    c.view.radius = 20.0f;
    break;
  case 2:
    c.view.centre = proto_v2(-half * 0.5f, half * 0.3f);
    c.view.radius = 35.7f;
    break;
  case 3:
    c.view.centre = proto_v2(half * 0.6f, -half * 0.6f);
    c.view.radius = 60.0f;
    break;
  case 4:
    c.view.centre = proto_v2(half * 5.0f, half * 5.0f); /* far outside: nothing in view */
    c.view.radius = 10.0f;
    break;
  default:
    c.view.centre = proto_v2(half * 0.1f, -half * 0.2f);
    c.view.radius = 8.0f;
  }
  return c;
}

static char state_path[2][64];

static void start(steerd_proc *s, int k, const char *threads, float *half) {
  strcpy(state_path[k], "/tmp/steerd-test-threads-XXXXXX");
  int fd = mkstemp(state_path[k]);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ck_assert_int_eq(steerd_test_write_state(state_path[k], AGENTS, AGENTS + 100, half), 0);
  const char *args[] = {"--no-demo",   "--state",
                        state_path[k], "--checkpoint-interval",
                        "0",           "--max-agents",
                        "2000",        "--max-clients",
                        "16",          "--client-timeout",
                        "30000",       "--snapshot-rate",
                        "30",          "--client-rate-kbps",
                        "0",           "--snapshot-budget",
                        "2400",        "--threads",
                        threads,       NULL};
  int rc = steerd_proc_start(s, STEERD_BINARY, args, 20000);
  if (rc != 0)
    unlink(state_path[k]);
  ck_assert_msg(rc == 0, "the server with --threads %s did not start", threads);
}

START_TEST(test_same_frames_one_and_two_threads) {
  ck_assert_int_eq(enet_initialize(), 0);
  steerd_proc srv[2];
  float half = 0.0f;
  start(&srv[0], 0, "1", &half);
  start(&srv[1], 1, "2", &half);
  ck_assert(steerd_proc_log_contains(&srv[0], "steering pass on 1 thread"));
  ck_assert(steerd_proc_log_contains(&srv[1], "steering pass on 2 threads"));
  static raw cl[2 * CLIENTS]; /* cl[k * CLIENTS + i]: server k, client i */
  for (uint32_t k = 0; k < 2; k++)
    for (uint32_t i = 0; i < CLIENTS; i++) {
      raw *r = &cl[k * CLIENTS + i];
      raw_connect(r, srv[k].port);
      proto_command c;
      memset(&c, 0, sizeof c);
      c.type = PROTO_MSG_HELLO;
      c.hello.version = PROTO_VERSION;
      snprintf(c.hello.name, sizeof c.hello.name, "threads%u", i);
      c.hello.has_snapshots = 1;
      c.hello.snapshots = PROTO_SNAPSHOTS_DELTA;
      ck_assert_uint_eq(raw_command(cl, 2 * CLIENTS, r, &c).type, PROTO_MSG_WELCOME);
      proto_command v = view_of(i, half);
      ck_assert_uint_eq(raw_command(cl, 2 * CLIENTS, r, &v).type, PROTO_MSG_ACK);
    }
  /* The views are set (each server took them at its own tick): what was
   * encoded before, and is still on its way, is forgotten. */
  proto_server_msg none;
  service(cl, 2 * CLIENTS, 500, NULL, 0, &none);
  for (uint32_t j = 0; j < 2 * CLIENTS; j++)
    memset(cl[j].ring, 0, sizeof cl[j].ring);
  service(cl, 2 * CLIENTS, WATCH_MS, NULL, 0, &none);

  uint32_t compared[CLIENTS] = {0}, moving = 0;
  for (uint32_t i = 0; i < CLIENTS; i++) {
    const raw *a = &cl[i], *b = &cl[CLIENTS + i];
    ck_assert_uint_eq(a->bad_parts, 0);
    ck_assert_uint_eq(b->bad_parts, 0);
    ck_assert_uint_eq(a->with_baseline, 0);
    ck_assert_uint_eq(b->with_baseline, 0);
    uint64_t prev_hash = 0;
    for (uint32_t t = 0; t < RING; t++) {
      const frame_rec *fa = &a->ring[t], *fb = &b->ring[t];
      if (!frame_whole(fa) || !frame_whole(fb) || fa->tick != fb->tick)
        continue;
      ck_assert_msg(
          fa->parts == fb->parts && fa->hash == fb->hash,
          "client %u tick %llu: %u parts, %u changes with one thread; %u parts, %u changes with two", i,
          (unsigned long long)fa->tick, fa->parts, fa->changes, fb->parts, fb->changes);
      compared[i]++;
      if (i == 1 && prev_hash != 0 && fa->hash != prev_hash)
        moving++;
      if (i == 1)
        prev_hash = fa->hash;
      if (i == 0)
        ck_assert_uint_gt(fa->parts, 1); /* the whole world: more than a packet's worth */
      if (i == 4)
        ck_assert_uint_eq(fa->changes, 0); /* nothing in view */
      if (i == 1 || i == 2)
        ck_assert_uint_gt(fa->changes, 10);
    }
    /* Bounded, not timed: 5 s at 30 snapshots/s is 150 frames; a busy box
     * may lose a few or stall, but not most. */
    ck_assert_msg(compared[i] >= 20, "client %u: only %u ticks both servers sent whole", i, compared[i]);
  }
  ck_assert_uint_gt(moving, 10); /* the frames follow a moving world */
  for (uint32_t j = 0; j < 2 * CLIENTS; j++)
    steerd_raw_close(&cl[j].peer);
  for (int k = 0; k < 2; k++) {
    ck_assert_int_eq(steerd_proc_stop(&srv[k], 10000), 0);
    unlink(state_path[k]);
  }
  enet_deinitialize();
}
END_TEST

int main(void) {
  Suite *s = suite_create("server_threads");
  TCase *tc = check_tcase(s, "threads", 180);
  tcase_add_test(tc, test_same_frames_one_and_two_threads);
  return check_run(s);
}

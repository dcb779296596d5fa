/* test_netcode_threads.c: the clients' delta frames encoded on a pool of
 * threads (steerd_netcode_encode_batch) are byte for byte the frames
 * of one thread, and of the serial steerd_netcode_encode.
 *
 * One real world of wandering agents under random changes (spawns, despawns,
 * new behaviours); several netcode instances, one per way of encoding (serial
 * encode; batches on 1, 2 and 3 threads), each with the same clients: views of
 * the whole world (frames beyond a slot's reserve of chunks: left to the
 * calling thread), circles of several sizes, one following an agent, views
 * changed and clients stopped and started again at random, and the same
 * acknowledgements (with and without merge lists, some lost, some late) given
 * to every instance. Every part of every frame must be the same bytes in all,
 * and the stats the same. Other cases: frames of many parts (no rate, a large
 * budget), and a pool too small for the clients, so frames go as keyframes for
 * want of room (what the calling thread decides in slot order). */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "netcode.h"
#include "netcode_world.h"
#include "pool.h"
#include "protocol.h"
#include "world.h"
#include "wire_core.h"

#define DT       (1.0f / 30.0f)
#define TICK_US  33333ull
#define CAPACITY 3000u
#define HALF     150.0f
#define CLIENTS  24u
#define WAYS     4 /* serial encode; batch on 1, 2, 3 threads */

static steer_id ids[CAPACITY];
static netcode_world nw = {.half = HALF, .capacity = CAPACITY, .ids = ids};
static uint32_t rnd(void) { return netcode_world_rnd(&nw); }
static float rndf(float lo, float hi) { return netcode_world_rndf(&nw, lo, hi); }

static void random_change(steer_world *w) {
  uint32_t r = rnd() % 100;
  if (r < 30) {
    netcode_world_spawn_one(&nw, w);
  } else if (r < 55 && nw.nids > 0) {
    netcode_world_despawn_one(&nw, w);
  } else if (nw.nids > 0) {
    steer_behaviour b = steer_default_behaviour(STEER_BEHAVIOUR_SEEK);
    b.target.kind = STEER_TARGET_POINT;
    b.target.point = netcode_world_point(&nw);
    steer_world_set_behaviour(w, ids[rnd() % nw.nids], &b);
  }
}

/* The same view for a client in every instance. */
static proto_view rnd_view(uint32_t client) {
  proto_view v;
  memset(&v, 0, sizeof v);
  uint32_t kind = client % 6;
  if (kind == 0) {
    v.kind = PROTO_VIEW_ALL;
  } else if (kind == 5 && nw.nids > 0) {
    v.kind = PROTO_VIEW_FOLLOW;
    v.follow = ids[rnd() % nw.nids];
    v.radius = 25.0f;
  } else {
    v.kind = PROTO_VIEW_CENTRE;
    v.centre = wire_of_vec2(netcode_world_point(&nw));
    v.radius = kind == 1 ? 80.0f : rndf(10.0f, 40.0f);
  }
  return v;
}

typedef struct sent {
  uint64_t tick[STEERD_NETCODE_FRAMES * 4];
  uint32_t n;
} sent;

typedef struct run_cfg {
  uint32_t pool_records; /* 0: the default */
  uint32_t budget;       /* bytes per frame */
  uint32_t rate;         /* bytes per second, 0: none */
  uint32_t frames;
} run_cfg;

/* Runs every way in lockstep on one world; returns the frames compared. */
static uint64_t run(const run_cfg *rc, uint64_t seed, steerd_netcode_stats *out_stats) {
  nw.rng = seed;
  steer_world *w = netcode_world_create(&nw, 11);
  for (uint32_t i = 0; i < 2000; i++)
    netcode_world_spawn_one(&nw, w);

  steerd_netcode_config cfg = steerd_netcode_default_config();
  cfg.max_clients = CLIENTS;
  cfg.max_agents = CAPACITY;
  cfg.pool_records = rc->pool_records;
  cfg.budget_bytes = rc->budget;
  cfg.rate_bytes = rc->rate;
  steerd_netcode *nc[WAYS];
  steer_pool *pool[WAYS] = {NULL, NULL, steer_pool_create(2), steer_pool_create(3)};
  ck_assert_ptr_nonnull(pool[2]);
  ck_assert_ptr_nonnull(pool[3]);
  for (int k = 0; k < WAYS; k++) {
    nc[k] = steerd_netcode_create(&cfg);
    ck_assert_ptr_nonnull(nc[k]);
    ck_assert_int_eq(steerd_netcode_set_pool(nc[k], pool[k]), STEERD_NETCODE_OK);
  }
  static sent history[CLIENTS];
  memset(history, 0, sizeof history);
  int active[CLIENTS];
  for (uint32_t c = 0; c < CLIENTS; c++) {
    active[c] = 1;
    proto_view v = rnd_view(c);
    for (int k = 0; k < WAYS; k++) {
      ck_assert_int_eq(steerd_netcode_client_start(nc[k], c), STEERD_NETCODE_OK);
      ck_assert_int_eq(steerd_netcode_set_view(nc[k], c, &v, w), STEERD_NETCODE_OK);
    }
  }
  static uint8_t first[64 * 1024];
  uint64_t compared = 0;
  for (uint32_t f = 0; f < rc->frames; f++) {
    for (int i = 0; i < 40; i++)
      random_change(w);
    steer_world_step(w, DT);
    uint64_t tick = steer_world_tick(w), now = tick * TICK_US;
    /* Clients come and go, and change views, alike in every instance. */
    for (uint32_t c = 0; c < CLIENTS; c++) {
      uint32_t r = rnd() % 200;
      if (r == 0) {
        active[c] = !active[c];
        history[c].n = 0;
        for (int k = 0; k < WAYS; k++) {
          if (active[c])
            ck_assert_int_eq(steerd_netcode_client_start(nc[k], c), STEERD_NETCODE_OK);
          else
            steerd_netcode_client_stop(nc[k], c);
        }
      } else if (r < 4 && active[c]) {
        proto_view v = rnd_view(c);
        for (int k = 0; k < WAYS; k++)
          ck_assert_int_eq(steerd_netcode_set_view(nc[k], c, &v, w), STEERD_NETCODE_OK);
      }
    }
    uint32_t slots[CLIENTS], n = 0;
    for (uint32_t c = 0; c < CLIENTS; c++)
      if (active[c])
        slots[n++] = c;
    for (int k = 0; k < WAYS; k++) {
      steerd_netcode_begin(nc[k], w);
      if (k > 0)
        ck_assert_int_eq(steerd_netcode_encode_batch(nc[k], w, slots, n, tick, now), STEERD_NETCODE_OK);
    }
    for (uint32_t i = 0; i < n; i++) {
      uint32_t c = slots[i];
      steerd_netcode_out out[WAYS];
      for (int k = 0; k < WAYS; k++) {
        int e = k == 0 ? steerd_netcode_encode(nc[k], c, w, tick, now, &out[k])
                       : steerd_netcode_batch_result(nc[k], c, w, now, &out[k]);
        ck_assert_int_eq(e, STEERD_NETCODE_OK);
        if (k == 0) { /* the reference, copied: a later encode may reuse its scratch */
          size_t off = 0;
          for (uint32_t p = 0; p < out[0].part_count; p++) {
            ck_assert_uint_le(off + out[0].part_len[p], sizeof first);
            memcpy(first + off, out[0].part[p], out[0].part_len[p]);
            off += out[0].part_len[p];
          }
          continue;
        }
        ck_assert_msg(out[k].part_count == out[0].part_count, "frame %u client %u: %u parts, %u serially", f,
                      c, out[k].part_count, out[0].part_count);
        ck_assert_uint_eq(out[k].baseline_tick, out[0].baseline_tick);
        ck_assert_uint_eq(out[k].changes, out[0].changes);
        ck_assert_uint_eq(out[k].removed, out[0].removed);
        size_t off = 0;
        for (uint32_t p = 0; p < out[k].part_count; p++) {
          ck_assert_msg(out[k].part_len[p] == out[0].part_len[p] &&
                            memcmp(out[k].part[p], first + off, out[0].part_len[p]) == 0,
                        "frame %u client %u part %u: way %d differs", f, c, p, k);
          off += out[0].part_len[p];
        }
      }
      compared++;
      if (out[0].part_count > 0) {
        sent *h = &history[c];
        h->tick[h->n++ % (STEERD_NETCODE_FRAMES * 4)] = tick;
      }
      /* An ack of a frame sent 1..6 snapshots ago; one in five lost. */
      sent *h = &history[c];
      uint32_t back = 1 + rnd() % 6;
      if (h->n >= back && rnd() % 5 != 0) {
        proto_snapshot_ack a;
        memset(&a, 0, sizeof a);
        a.tick = h->tick[(h->n - back) % (STEERD_NETCODE_FRAMES * 4)];
        a.has_merged = c % 2; /* odd clients merge (with nothing merged in) */
        for (int k = 0; k < WAYS; k++)
          steerd_netcode_ack(nc[k], c, &a);
      }
    }
  }
  steerd_netcode_stats st[WAYS];
  for (int k = 0; k < WAYS; k++)
    steerd_netcode_get_stats(nc[k], &st[k]);
  for (int k = 1; k < WAYS; k++) {
    ck_assert_uint_eq(st[k].frames, st[0].frames);
    ck_assert_uint_eq(st[k].frames_full, st[0].frames_full);
    ck_assert_uint_eq(st[k].bytes, st[0].bytes);
    ck_assert_uint_eq(st[k].parts, st[0].parts);
    ck_assert_uint_eq(st[k].changes, st[0].changes);
    ck_assert_uint_eq(st[k].removed, st[0].removed);
    ck_assert_uint_eq(st[k].deferred, st[0].deferred);
    ck_assert_uint_eq(st[k].kept_in_flight, st[0].kept_in_flight);
    ck_assert_uint_eq(st[k].baselines_lost, st[0].baselines_lost);
    ck_assert_uint_eq(st[k].keyframes_for_room, st[0].keyframes_for_room);
    ck_assert_uint_eq(st[k].frames_unkept, st[0].frames_unkept);
    ck_assert_uint_eq(st[k].chunks_used, st[0].chunks_used);
    ck_assert_uint_eq(st[k].chunks_reused, st[0].chunks_reused);
  }
  *out_stats = st[2]; /* two threads */
  for (int k = 0; k < WAYS; k++) {
    steerd_netcode_destroy(nc[k]);
    steer_pool_destroy(pool[k]);
  }
  steer_world_destroy(w);
  return compared;
}

/* The default pool: frames of whole-world views go beyond the reserve (the
 * calling thread encodes them), the rest on the threads. */
START_TEST(test_batch_same_bytes) {
  run_cfg rc = {0, 1200, 15000, 120};
  steerd_netcode_stats st;
  uint64_t n = run(&rc, 0x853c49e6748fea9bull, &st);
  ck_assert_uint_gt(n, 100u * CLIENTS / 2u);
  ck_assert_uint_gt(st.batch_deferred, 0);             /* the whole-world views */
  ck_assert_uint_lt(st.batch_deferred, st.frames / 2); /* most went on the threads */
  ck_assert_uint_gt(st.frames_full, 0);
  ck_assert_uint_lt(st.frames_full, st.frames / 2); /* mostly deltas against baselines */
}
END_TEST

/* No rate and a large budget: frames of many parts. */
START_TEST(test_batch_same_bytes_large_frames) {
  run_cfg rc = {0, 20000, 0, 60};
  steerd_netcode_stats st;
  run(&rc, 0x2545f4914f6cdd1dull, &st);
  ck_assert_uint_gt(st.parts, st.frames); /* several parts per frame */
}
END_TEST

/* A pool far too small: keyframes for want of room, decided in slot order. */
START_TEST(test_batch_same_bytes_short_pool) {
  run_cfg rc = {CLIENTS * 2u * 1024u, 4000, 0, 80};
  steerd_netcode_stats st;
  run(&rc, 0x9e3779b97f4a7c15ull, &st);
  ck_assert_uint_gt(st.keyframes_for_room, 0);
}
END_TEST

/* Misuse: slots not ascending, or not started; a result not in the batch. */
START_TEST(test_batch_misuse) {
  steer_world_config wc = steer_default_world_config();
  wc.max_agents = 16;
  steer_world *w = steer_world_create(&wc);
  steerd_netcode_config cfg = steerd_netcode_default_config();
  cfg.max_clients = 4;
  cfg.max_agents = 16;
  steerd_netcode *nc = steerd_netcode_create(&cfg);
  ck_assert_ptr_nonnull(nc);
  ck_assert_int_eq(steerd_netcode_client_start(nc, 1), 0);
  ck_assert_int_eq(steerd_netcode_client_start(nc, 2), 0);
  steer_world_step(w, DT);
  steerd_netcode_begin(nc, w);
  uint32_t down[] = {2, 1}, unstarted[] = {0, 1}, out_of_range[] = {1, 9}, good[] = {1, 2};
  ck_assert_int_eq(steerd_netcode_encode_batch(nc, w, down, 2, 1, TICK_US), STEERD_NETCODE_EINVAL);
  ck_assert_int_eq(steerd_netcode_encode_batch(nc, w, unstarted, 2, 1, TICK_US), STEERD_NETCODE_EINVAL);
  ck_assert_int_eq(steerd_netcode_encode_batch(nc, w, out_of_range, 2, 1, TICK_US), STEERD_NETCODE_EINVAL);
  ck_assert_int_eq(steerd_netcode_encode_batch(nc, w, good, 2, 1, TICK_US), STEERD_NETCODE_OK);
  steerd_netcode_out out;
  ck_assert_int_eq(steerd_netcode_batch_result(nc, 0, w, TICK_US, &out), STEERD_NETCODE_EINVAL);
  ck_assert_int_eq(steerd_netcode_batch_result(nc, 1, w, TICK_US, &out), STEERD_NETCODE_OK);
  ck_assert_uint_eq(out.part_count, 1); /* an empty world: one empty part */
  ck_assert_int_eq(steerd_netcode_batch_result(nc, 1, w, TICK_US, &out), STEERD_NETCODE_EINVAL); /* once */
  ck_assert_int_eq(steerd_netcode_batch_result(nc, 2, w, TICK_US, &out), STEERD_NETCODE_OK);
  ck_assert_int_eq(steerd_netcode_batch_result(nc, 99, w, TICK_US, &out), STEERD_NETCODE_EINVAL);
  steerd_netcode_destroy(nc);
  steer_world_destroy(w);
}
END_TEST

int main(void) {
  Suite *s = suite_create("netcode_threads");
  TCase *tc = check_tcase(s, "batch", 300);
  tcase_add_test(tc, test_batch_same_bytes);
  tcase_add_test(tc, test_batch_same_bytes_large_frames);
  tcase_add_test(tc, test_batch_same_bytes_short_pool);
  tcase_add_test(tc, test_batch_misuse);
  return check_run(s);
}

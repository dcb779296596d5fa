/* bench_encode.c: the delta clients' frames of one snapshot encoded with 1
 * and 2 (or more) threads (steerd_netcode_encode_batch), in one
 * process, without the network: what the server's loop thread waits for
 * before it sends, and what the threads add up to.
 *
 * A world of N agents (a third wandering, a third seeking points, a third at
 * rest) at 0.025 agents per m^2, as in bench_netcode's capacity run; C
 * clients, each viewing a circle of 35.7 m at a random point (~100 agents),
 * acknowledging every frame at once (a fast link), a budget of 1200 bytes
 * and 15 000 bytes/s, the server's defaults. Per run and thread count, the
 * same world from the same seed: warm-up snapshots, then S measured ones;
 * each snapshot steps the world (not timed), then begin + encode_batch +
 * batch_result for every client (timed: wall clock, and the process's CPU
 * time). The hash of every byte of every frame must be the same for every
 * thread count. Runs interleave the thread counts; the table gives medians.
 *
 * usage: bench_encode [--clients C] [--agents N] [--snapshots S] [--runs R] [--threads T] */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "netcode.h"
#include "pool.h"
#include "world.h"

#define DT            (1.0f / 30.0f)
#define SNAPSHOT_RATE 20
#define WARMUP        30

static uint64_t rng;
static double rnd01(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}

typedef struct result {
  double wall, cpu, loop; /* seconds per snapshot: wall, CPU of all threads, CPU of the calling thread */
  uint64_t hash, frames, bytes, deferred;
} result;

static result run(uint32_t threads, uint32_t clients, uint32_t agents, uint32_t snapshots) {
  result res;
  memset(&res, 0, sizeof res);
  rng = 0x9e3779b97f4a7c15ull;
  float side = sqrtf((float)agents / 0.025f), half = side / 2;
  steer_world_config wc = steer_default_world_config();
  wc.max_agents = agents + 64;
  wc.min = v2(-half, -half);
  wc.max = v2(half, half);
  wc.seed = 5;
  steer_world *w = steer_world_create(&wc);
  for (uint32_t i = 0; i < agents; i++) {
    steer_agent_desc d = steer_default_agent_desc();
    d.model = STEER_MODEL_DYNAMIC;
    d.state.position = v2((float)(rnd01() * 2 - 1) * (half - 1), (float)(rnd01() * 2 - 1) * (half - 1));
    if (i % 3 == 0) {
      d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
    } else if (i % 3 == 1) {
      d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_SEEK);
      d.behaviour.target.kind = STEER_TARGET_POINT;
      d.behaviour.target.point = v2((float)(rnd01() * 2 - 1) * half, (float)(rnd01() * 2 - 1) * half);
    }
    steer_world_spawn(w, &d, 1, NULL);
  }
  steerd_netcode_config cfg = steerd_netcode_default_config();
  cfg.max_clients = clients;
  cfg.max_agents = agents + 64;
  steerd_netcode *nc = steerd_netcode_create(&cfg);
  steer_pool *pool = threads > 1 ? steer_pool_create(threads) : NULL;
  if (!w || !nc || (threads > 1 && !pool) || steerd_netcode_set_pool(nc, pool) != STEERD_NETCODE_OK) {
    fprintf(stderr, "bench_encode: out of memory\n");
    exit(1);
  }
  uint32_t *slots = calloc(clients, sizeof *slots);
  float radius = sqrtf(100.0f / (0.025f * 3.14159265f));
  for (uint32_t c = 0; c < clients; c++) {
    steerd_netcode_client_start(nc, c);
    proto_view v;
    memset(&v, 0, sizeof v);
    v.kind = PROTO_VIEW_CENTRE;
    v.centre =
        proto_v2((float)(rnd01() * 2 - 1) * (half - radius), (float)(rnd01() * 2 - 1) * (half - radius));
    v.radius = radius;
    steerd_netcode_set_view(nc, c, &v, w);
    slots[c] = c;
  }
  uint64_t h = 0xcbf29ce484222325ull;
  double wall = 0, cpu = 0, loop = 0;
  uint64_t tick_us = 0;
  for (uint32_t s = 0; s < WARMUP + snapshots; s++) {
    /* 30 ticks/s, 20 snapshots/s: a snapshot every 1.5 ticks. */
    steer_world_step(w, DT);
    if (s % 2 == 0)
      steer_world_step(w, DT);
    uint64_t tick = steer_world_tick(w);
    tick_us = tick * 33333u;
    double w0 = bench_now_s(CLOCK_MONOTONIC), c0 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID),
           l0 = bench_now_s(CLOCK_THREAD_CPUTIME_ID);
    steerd_netcode_begin(nc, w);
    steerd_netcode_encode_batch(nc, w, slots, clients, tick, tick_us);
    for (uint32_t c = 0; c < clients; c++) {
      steerd_netcode_out out;
      if (steerd_netcode_batch_result(nc, c, w, tick_us, &out) != STEERD_NETCODE_OK)
        continue;
      for (uint32_t p = 0; p < out.part_count; p++)
        for (size_t k = 0; k < out.part_len[p]; k++)
          h = (h ^ out.part[p][k]) * 0x100000001b3ull;
    }
    double w1 = bench_now_s(CLOCK_MONOTONIC), c1 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID),
           l1 = bench_now_s(CLOCK_THREAD_CPUTIME_ID);
    if (s >= WARMUP) {
      wall += w1 - w0;
      cpu += c1 - c0;
      loop += l1 - l0;
    }
    for (uint32_t c = 0; c < clients; c++) { /* every frame acknowledged at once */
      proto_snapshot_ack a;
      memset(&a, 0, sizeof a);
      a.tick = tick;
      a.has_merged = 1;
      steerd_netcode_ack(nc, c, &a);
    }
  }
  steerd_netcode_stats st;
  steerd_netcode_get_stats(nc, &st);
  res.wall = wall / snapshots;
  res.cpu = cpu / snapshots;
  res.loop = loop / snapshots;
  res.hash = h;
  res.frames = st.frames;
  res.bytes = st.bytes;
  res.deferred = st.batch_deferred;
  free(slots);
  steerd_netcode_destroy(nc);
  steer_pool_destroy(pool);
  steer_world_destroy(w);
  return res;
}

int main(int argc, char **argv) {
  uint32_t clients = 1000, agents = 1000, snapshots = 100, runs = 5, tmax = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--clients"))
      clients = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--agents"))
      agents = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--snapshots"))
      snapshots = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--runs"))
      runs = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads"))
      tmax = (uint32_t)atoi(argv[i + 1]);
    else {
      printf("usage: bench_encode [--clients C] [--agents N] [--snapshots S] [--runs R] [--threads T]\n");
      return 2;
    }
  }
  if (clients == 0 || agents == 0 || snapshots == 0 || runs == 0 || tmax == 0 || runs > 64 || tmax > 16)
    return 2;
  char load0[64];
  bench_loadavg(load0, sizeof load0);
  static double wall[17][64], cpu[17][64], loop[17][64];
  uint64_t hash[17] = {0};
  result last[17];
  for (uint32_t r = 0; r < runs; r++)
    for (uint32_t t = 1; t <= tmax; t++) {
      result x = run(t, clients, agents, snapshots);
      wall[t][r] = x.wall;
      cpu[t][r] = x.cpu;
      loop[t][r] = x.loop;
      if (r > 0 && x.hash != hash[t]) {
        fprintf(stderr, "bench_encode: %u threads gave another hash in run %u\n", t, r + 1);
        return 1;
      }
      hash[t] = x.hash;
      last[t] = x;
    }
  char load1[64];
  bench_loadavg(load1, sizeof load1);
  printf("%u clients viewing ~100 of %u agents each, %u snapshots per run after %d, %u runs (medians); "
         "load average before: %s; after: %s\n\n",
         clients, agents, snapshots, WARMUP, runs, load0, load1);
  printf("| threads | wall ms per snapshot | wall as a share of the %d ms between snapshots | CPU ms per "
         "snapshot: calling (loop) thread | share of one core | all threads | us of CPU per client-frame | "
         "speed-up (wall) | frames left to the loop thread | bytes hash "
         "|\n|---|---|---|---|---|---|---|---|---|---|\n",
         1000 / SNAPSHOT_RATE);
  double w1 = 0;
  for (uint32_t t = 1; t <= tmax; t++) {
    double mw = bench_median(wall[t], (int)runs), mc = bench_median(cpu[t], (int)runs),
           ml = bench_median(loop[t], (int)runs);
    if (t == 1)
      w1 = mw;
    printf("| %u | %.2f | %.1f %% | %.2f | %.1f %% | %.2f | %.2f | %.2fx | %llu | %016llx |\n", t, mw * 1e3,
           mw * SNAPSHOT_RATE * 100, ml * 1e3, ml * SNAPSHOT_RATE * 100, mc * 1e3, mc / clients * 1e6,
           w1 / mw, (unsigned long long)last[t].deferred, (unsigned long long)hash[t]);
  }
  for (uint32_t t = 2; t <= tmax; t++)
    if (hash[t] != hash[1]) {
      printf("\nthe bytes differ between 1 and %u threads\n", t);
      return 1;
    }
  return 0;
}

/* bench_client_api.c: what libsteerd-client's polling API costs a game per frame.
 *
 * The real server (--no-demo) on 127.0.0.1 with AGENTS wandering agents; one
 * client through the public API (the shared library, as a game links it) in
 * full or delta mode. After a warm-up, FRAMES "render frames" back to back, each:
 *
 *   steerdc_update(c, 0)                       the network (timed apart)
 *   steerdc_poll_states(c, 0, states, cap, &info)  every agent interpolated at render time
 *
 * and prints the per-call times of the poll (mean, median, p99) and per agent.
 * The C# figure (P/Invoke through the binding) comes from bench/csharp/BenchPoll.cs.
 *
 *   bench_client_api [AGENTS (1000)] [FRAMES (3000)] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <steerd/client.h>

#include "bench_util.h"
#include "steerd_proc.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The spawner takes delta snapshots of an empty corner: its socket is not flooded
 * with snapshots of the growing world while it waits for its replies. */
static int populate(steerdc_client *c, uint32_t agents) {
  uint64_t rng = 7;
  uint32_t last = 0;
  steerdc_view corner = {STEERDC_VIEW_CENTRE, 0, 450.0f, 450.0f, 1.0f};
  if (steerdc_set_view(c, &corner, &last) != 0 || steerdc_wait_reply(c, last, 10000, NULL) != 0)
    return -1;
  for (uint32_t i = 0; i < agents; i++) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    float x = (float)((rng >> 40) % 200) - 100.0f;
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    float y = (float)((rng >> 40) % 200) - 100.0f;
    steerdc_spawn_desc s;
    steerdc_spawn_init(&s, STEERDC_MODEL_DYNAMIC, x, y);
    s.present = STEERDC_SPAWN_BEHAVIOUR;
    steerdc_behaviour_init(&s.behaviour, STEERDC_BEHAVIOUR_WANDER);
    if (steerdc_spawn(c, &s, &last) != 0)
      return -1;
    if (i % 100 == 99 || i + 1 == agents) {
      steerdc_reply r;
      int rc = steerdc_wait_reply(c, last, 10000, &r);
      if (rc != 0) {
        steerdc_stats st;
        steerdc_get_stats(c, &st);
        fprintf(stderr,
                "bench_client_api: spawn %u (request %u): %s %s; sent %llu acks %llu errors %llu, state %u\n",
                i, last, steerdc_strerror(rc), rc == STEERDC_EREPLY ? r.message : "",
                (unsigned long long)st.commands_sent, (unsigned long long)st.acks,
                (unsigned long long)st.errors, steerdc_get_state(c));
        return -1;
      }
    }
  }
  return 0;
}

static void run(uint16_t port, uint32_t agents, uint32_t frames, uint32_t mode) {
  steerdc_config cfg;
  steerdc_config_init(&cfg);
  cfg.max_agents = agents + 64;
  cfg.snapshots = mode;
  steerdc_client *c = steerdc_create(&cfg);
  if (c == NULL || steerdc_connect(c, "127.0.0.1", port, "bench", NULL) != 0) {
    fprintf(stderr, "bench_client_api: connect failed\n");
    exit(1);
  }
  steerdc_agent_state *states = calloc(cfg.max_agents, sizeof *states);
  uint64_t *poll_ns = calloc(frames, sizeof *poll_ns), *update_ns = calloc(frames, sizeof *update_ns);
  steerdc_render_info info;
  uint64_t warm_end = steerdc_now_us() + 2000000u; /* every agent in the buffer, the delay settled */
  while (steerdc_now_us() < warm_end) {
    steerdc_update(c, 5);
    steerdc_poll_states(c, 0, states, cfg.max_agents, &info);
  }
  uint32_t got = 0;
  for (uint32_t f = 0; f < frames; f++) {
    uint64_t t0 = now_ns();
    steerdc_update(c, 0);
    uint64_t t1 = now_ns();
    int n = steerdc_poll_states(c, 0, states, cfg.max_agents, &info);
    uint64_t t2 = now_ns();
    update_ns[f] = t1 - t0;
    poll_ns[f] = t2 - t1;
    got = n > 0 ? (uint32_t)n : 0;
  }
  double sum = 0, usum = 0;
  for (uint32_t f = 0; f < frames; f++) {
    sum += (double)poll_ns[f];
    usum += (double)update_ns[f];
  }
  qsort(poll_ns, frames, sizeof *poll_ns, bench_cmp_u64);
  double mean = sum / frames;
  printf("| C        | %-5s | %6u | %6u | %8.1f | %8.1f | %8.1f | %7.1f | %9.1f |\n",
         mode == STEERDC_SNAPSHOTS_DELTA ? "delta" : "full", got, frames, mean / 1000.0,
         (double)poll_ns[frames / 2] / 1000.0, (double)poll_ns[frames * 99 / 100] / 1000.0,
         got ? (double)poll_ns[frames / 2] / got : 0.0, usum / frames / 1000.0);
  free(states);
  free(poll_ns);
  free(update_ns);
  steerdc_destroy(c);
}

int main(int argc, char **argv) {
  uint32_t agents = argc > 1 ? (uint32_t)atoi(argv[1]) : 1000;
  uint32_t frames = argc > 2 ? (uint32_t)atoi(argv[2]) : 3000;
  if (agents == 0 || frames == 0)
    return 2;
  steerd_proc p;
  const char *extra[] = {
      "--no-demo", "--rate-limit", "100000", "--rate-burst", "100000", "--max-agents-per-client", "100000",
      NULL};
  if (steerd_proc_start(&p, STEERD_BINARY, extra, 10000) != 0) {
    fprintf(stderr, "bench_client_api: the server did not start\n");
    return 1;
  }
  steerdc_config cfg;
  steerdc_config_init(&cfg);
  cfg.snapshots = STEERDC_SNAPSHOTS_DELTA;
  steerdc_client *spawner = steerdc_create(&cfg);
  if (spawner == NULL || steerdc_connect(spawner, "127.0.0.1", p.port, "spawner", NULL) != 0 ||
      populate(spawner, agents) != 0) {
    fprintf(stderr, "bench_client_api: populating failed\n");
    steerd_proc_stop(&p, 5000);
    return 1;
  }
  steerdc_disconnect(spawner, 1000); /* the agents stay: the server owns them on */
  steerdc_destroy(spawner);
  printf("libsteerd-client polling API, %u wandering agents, %u frames back to back after 2 s warm-up\n",
         agents, frames);
  printf("| caller   | mode  | agents | frames | poll mean us | median us | p99 us | ns/agent (median) | "
         "update mean us |\n");
  printf("|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  run(p.port, agents, frames, STEERDC_SNAPSHOTS_FULL);
  run(p.port, agents, frames, STEERDC_SNAPSHOTS_DELTA);
  steerd_proc_stop(&p, 5000);
  return 0;
}

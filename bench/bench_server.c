/* bench_server.c: the server measured through the real binary and the client
 * library, on 127.0.0.1.
 *
 * For each world size: one client spawns N wandering agents, then measures for
 * a window: snapshot bytes per agent, agents per snapshot packet, packets per
 * snapshot, bandwidth per client, server CPU; and the latency from sending a
 * command to the first snapshot that shows its effect (an agent at rest told to
 * seek: the first frame where it moves), against the bound of one tick plus
 * one snapshot interval.
 *
 * usage: bench_server [--binary PATH] [--max N] [--seconds S] [--trials T] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "client.h"
#include "steerd_proc.h"

#define TICK_RATE     30
#define SNAPSHOT_RATE 20

typedef struct probe {
  proto_id agent;
  int moving; /* the probe's last seen speed was above zero */
  uint64_t seen_tick;
} probe;

static void on_frame(void *user, const steerd_client_frame *f) {
  probe *p = user;
  for (uint32_t i = 0; i < f->count; i++)
    if (f->poses[i].id == p->agent) {
      p->moving = hypotf(f->poses[i].vx, f->poses[i].vy) > 0.0f;
      p->seen_tick = f->tick;
    }
}

static int command(steerd_client *c, proto_command *cmd, proto_id *agent) {
  proto_server_msg reply;
  int rc = steerd_client_command_wait(c, cmd, 5000, &reply);
  if (rc != 0) {
    fprintf(stderr, "bench_server: command %u failed: %s\n", cmd->type, steerd_client_strerror(rc));
    return -1;
  }
  if (agent)
    *agent = reply.ack.agent;
  return 0;
}

static void service_for(steerd_client *c, uint32_t ms) {
  uint64_t end = steerd_proc_now_ms() + ms;
  while (steerd_proc_now_ms() < end)
    steerd_client_service(c, 2);
}

static int run(const char *binary, uint32_t n, uint32_t seconds, int trials) {
  char max_agents[16];
  snprintf(max_agents, sizeof(max_agents), "%u", n + 16);
  const char *const args[] = {"--no-demo", "--max-agents", max_agents, NULL};
  steerd_proc srv;
  if (steerd_proc_start(&srv, binary, args, 5000) != 0) {
    fprintf(stderr, "bench_server: cannot start %s\n", binary);
    return -1;
  }
  probe pr;
  memset(&pr, 0, sizeof(pr));
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = "bench";
  cfg.max_agents = n + 16;
  cfg.callbacks.on_snapshot_frame = on_frame;
  cfg.user = &pr;
  steerd_client *c = steerd_client_create(&cfg);
  if (!c || steerd_client_connect(c, "127.0.0.1", srv.port) != 0) {
    fprintf(stderr, "bench_server: cannot connect\n");
    steerd_client_destroy(c);
    steerd_proc_stop(&srv, 3000);
    return -1;
  }
  /* N wanderers spread over a square, all moving. */
  uint32_t side = (uint32_t)ceil(sqrt((double)n));
  for (uint32_t i = 0; i < n; i++) {
    proto_command cmd;
    memset(&cmd, 0, sizeof(cmd));
    cmd.type = PROTO_MSG_SPAWN;
    cmd.spawn.model = PROTO_MODEL_KINEMATIC;
    cmd.spawn.position = proto_v2(-400.0f + 800.0f * (float)(i % side) / (float)side,
                                  -400.0f + 800.0f * (float)(i / side) / (float)side);
    cmd.spawn.present = PROTO_SPAWN_BEHAVIOUR;
    cmd.spawn.behaviour.kind = PROTO_BEHAVIOUR_WANDER;
    steerd_client_send(c, &cmd, NULL);
    if (i % 256 == 255)
      steerd_client_service(c, 0);
  }
  proto_command cmd;
  memset(&cmd, 0, sizeof(cmd));
  cmd.type = PROTO_MSG_SPAWN;
  cmd.spawn.model = PROTO_MODEL_DYNAMIC;
  cmd.spawn.position = proto_v2(0.0f, 0.0f);
  if (command(c, &cmd, &pr.agent) != 0)
    return -1;
  service_for(c, 1000);

  /* Bandwidth and packing over the window. */
  steerd_client_stats s0, s1;
  steerd_client_get_stats(c, &s0);
  double cpu0 = steerd_proc_cpu_seconds(&srv);
  uint64_t t0 = steerd_proc_now_ms();
  service_for(c, seconds * 1000u);
  double elapsed = (double)(steerd_proc_now_ms() - t0) / 1000.0;
  double cpu = steerd_proc_cpu_seconds(&srv) - cpu0;
  steerd_client_get_stats(c, &s1);
  uint64_t frames = s1.frames_complete - s0.frames_complete;
  uint64_t parts = s1.snapshot_parts - s0.snapshot_parts;
  uint64_t bytes = s1.snapshot_bytes - s0.snapshot_bytes;
  uint32_t agents = n + 1;

  /* Latency: from sending SET_BEHAVIOUR to an agent at rest to the first frame
   * where it moves. */
  double lat[256];
  int done = 0;
  for (int t = 0; t < trials && t < 256; t++) {
    memset(&cmd, 0, sizeof(cmd));
    cmd.type = PROTO_MSG_STOP;
    cmd.stop.agent = pr.agent;
    if (command(c, &cmd, NULL) != 0)
      break;
    uint64_t end = steerd_proc_now_ms() + 3000;
    while (pr.moving && steerd_proc_now_ms() < end)
      steerd_client_service(c, 1);
    /* Send at a random phase of the tick and snapshot schedules. */
    service_for(c, (uint32_t)(rand() % 50));
    memset(&cmd, 0, sizeof(cmd));
    cmd.type = PROTO_MSG_SET_BEHAVIOUR;
    cmd.set_behaviour.agent = pr.agent;
    cmd.set_behaviour.behaviour.kind = PROTO_BEHAVIOUR_SEEK;
    cmd.set_behaviour.behaviour.present = PROTO_BHV_TARGET;
    cmd.set_behaviour.behaviour.target = proto_v2((t % 2) ? 50.0f : -50.0f, 10.0f);
    uint64_t sent = steerd_client_now_us();
    steerd_client_send(c, &cmd, NULL);
    end = steerd_proc_now_ms() + 3000;
    while (!pr.moving && steerd_proc_now_ms() < end)
      steerd_client_service(c, 0);
    if (pr.moving)
      lat[done++] = (double)(steerd_client_now_us() - sent) / 1000.0;
  }
  qsort(lat, (size_t)done, sizeof(double), bench_cmp_double);
  double bound = 1000.0 / TICK_RATE + 1000.0 / SNAPSHOT_RATE;
  printf("| %6u | %7.1f | %6.1f | %7.1f | %8.0f | %6.1f | %6.2f | %6.2f | %6.2f | %5.1f |\n", agents,
         frames ? (double)bytes / (double)(frames * agents) : 0.0,
         parts ? (double)agents * frames / parts : 0.0, frames ? (double)parts / frames : 0.0,
         (double)bytes * 8.0 / 1000.0 / elapsed, 100.0 * cpu / elapsed, done ? lat[done / 2] : 0.0,
         done ? lat[(done * 95) / 100] : 0.0, done ? lat[done - 1] : 0.0, bound);
  fflush(stdout);
  steerd_client_disconnect(c, 500);
  steerd_client_destroy(c);
  steerd_proc_stop(&srv, 3000);
  return 0;
}

int main(int argc, char **argv) {
  const char *binary = STEERD_BINARY;
  uint32_t max_n = 10000, seconds = 5;
  int trials = 40;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--binary") == 0 && i + 1 < argc)
      binary = argv[++i];
    else if (strcmp(argv[i], "--max") == 0 && i + 1 < argc)
      max_n = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc)
      trials = atoi(argv[++i]);
    else {
      printf("usage: bench_server [--binary PATH] [--max N] [--seconds S] [--trials T]\n");
      return strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  srand(1);
  printf("steerd through ENet on 127.0.0.1: %d Hz ticks, %d Hz snapshots, one client, kinematic wanderers;\n"
         "window %u s; latency over %d trials (command sent -> first snapshot showing it)\n\n",
         TICK_RATE, SNAPSHOT_RATE, seconds, trials);
  printf(
      "| agents | bytes/agent | agents/packet | packets/snapshot | kbit/s | server CPU %% | latency p50 ms | "
      "p95 ms | max ms | bound ms |\n");
  printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  static const uint32_t sizes[] = {100, 1000, 10000};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
    if (sizes[i] <= max_n && run(binary, sizes[i], seconds, trials) != 0)
      return 1;
  return 0;
}

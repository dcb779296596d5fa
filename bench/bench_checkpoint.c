/* bench_checkpoint.c: what checkpoints cost a big world's tick, through the
 * real server binary on 127.0.0.1 (BENCHMARKS.md, "Abuse: state file and
 * checkpoints").
 *
 * Makes a state file of N wandering agents with the core (no client has to
 * spawn them), starts the server on it with a checkpoint every INTERVAL
 * seconds, and watches for SECONDS with an observer taking delta snapshots of
 * a 30 m view (small frames: the rate it sees is the server's, not the
 * link's). Then SIGTERM. Reported: checkpoints and their loop-thread time
 * (from the server's checkpoint lines; an older binary that writes on the
 * loop reports it all as "in ... ms"), write time, the ticks skipped and
 * overruns of the server's last stats line, and the observer's frames per
 * second (min / median over whole seconds).
 *
 * usage: bench_checkpoint [--binary PATH] [--agents N] [--seconds S] [--interval I] [--label TEXT]
 *        [--v1: a version 1 state file, for binaries from before version 2] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "client.h"
#include "state_file.h"
#include "steerd_proc.h"
#include "world.h"

#define MAX_SECONDS 600

typedef struct observer {
  uint64_t start_ms;
  uint32_t per_second[MAX_SECONDS + 1];
} observer;

static void on_frame(void *user, const steerd_client_frame *f) {
  observer *o = user;
  (void)f;
  uint64_t s = (steerd_proc_now_ms() - o->start_ms) / 1000u;
  if (s <= MAX_SECONDS)
    o->per_second[s]++;
}

int main(int argc, char **argv) {
  const char *binary = STEERD_BINARY, *label = "this build";
  uint32_t agents = 100000, seconds = 35, interval = 10;
  int v1 = 0;
  for (int i = 1; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--binary") == 0)
      binary = argv[++i];
    else if (i + 1 < argc && strcmp(argv[i], "--agents") == 0)
      agents = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (i + 1 < argc && strcmp(argv[i], "--seconds") == 0)
      seconds = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (i + 1 < argc && strcmp(argv[i], "--interval") == 0)
      interval = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (i + 1 < argc && strcmp(argv[i], "--label") == 0)
      label = argv[++i];
    else if (strcmp(argv[i], "--v1") == 0)
      v1 = 1;
    else {
      fprintf(stderr, "usage: bench_checkpoint [--binary PATH] [--agents N (100000)] [--seconds S (35)] "
                      "[--interval I (10)] [--label TEXT] [--v1]\n");
      return 2;
    }
  }
  if (agents == 0 || agents > STEER_MAX_CAPACITY || seconds < 2 || seconds > MAX_SECONDS || interval == 0) {
    fprintf(stderr, "bench_checkpoint: agents 1..%u, seconds 2..%u, interval >= 1\n", STEER_MAX_CAPACITY,
            MAX_SECONDS);
    return 2;
  }
  char state[] = "/tmp/steerd-bench-state-XXXXXX";
  int fd = mkstemp(state);
  if (fd < 0)
    return 1;
  close(fd);
  /* N wanderers spread over a square at about 10 m^2 each. */
  if ((v1 ? steerd_test_write_state_v1 : steerd_test_write_state)(state, agents, 0, NULL) != 0) {
    fprintf(stderr, "bench_checkpoint: cannot make a world of %u agents\n", agents);
    unlink(state);
    return 1;
  }
  char iv[16];
  snprintf(iv, sizeof(iv), "%u", interval);
  const char *const args[] = {"--no-demo", "--state", state, "--checkpoint-interval", iv, NULL};
  steerd_proc srv;
  if (steerd_proc_start(&srv, binary, args, 30000) != 0) {
    fprintf(stderr, "bench_checkpoint: cannot start %s\n", binary);
    unlink(state);
    return 1;
  }
  observer obs;
  memset(&obs, 0, sizeof(obs));
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = "observer";
  cfg.snapshots = PROTO_SNAPSHOTS_DELTA;
  cfg.max_agents = agents;
  cfg.callbacks.on_snapshot_frame = on_frame;
  cfg.user = &obs;
  steerd_client *c = steerd_client_create(&cfg);
  int rc = 1;
  char load[32] = "?";
  if (!c || steerd_client_connect(c, "127.0.0.1", srv.port) != 0) {
    fprintf(stderr, "bench_checkpoint: the observer cannot connect\n");
    goto out;
  }
  proto_command cmd;
  memset(&cmd, 0, sizeof(cmd));
  cmd.type = PROTO_MSG_VIEW;
  cmd.view.kind = PROTO_VIEW_CENTRE;
  cmd.view.centre = proto_v2(0.0f, 0.0f);
  cmd.view.radius = 30.0f;
  proto_server_msg reply;
  if (steerd_client_command_wait(c, &cmd, 5000, &reply) != 0) {
    fprintf(stderr, "bench_checkpoint: VIEW refused\n");
    goto out;
  }
  obs.start_ms = steerd_proc_now_ms();
  /* Other work on the machine skews every figure: the table shows the load average. */
  FILE *la = fopen("/proc/loadavg", "r");
  if (la && fscanf(la, "%31s", load) != 1)
    strcpy(load, "?");
  if (la)
    fclose(la);
  uint64_t end = obs.start_ms + (uint64_t)seconds * 1000u;
  while (steerd_proc_now_ms() < end)
    steerd_client_service(c, 5);
  rc = 0;
out:
  steerd_client_destroy(c);
  /* The last stats line comes at exit; the log goes with steerd_proc_stop, so read it first. */
  kill(srv.pid, SIGTERM);
  int status, reaped = 0;
  for (int i = 0; i < 3000 && !(reaped = waitpid(srv.pid, &status, WNOHANG) == srv.pid); i++)
    steerd_proc_sleep_ms(10);
  if (reaped)
    srv.pid = 0; /* else steerd_proc_stop below kills it */
  double loop_ms[64], write_ms[64], cpu_ms[64];
  int ck = 0, failed = 0;
  unsigned long long skipped = 0, overruns = 0, ticks = 0, bytes = 0;
  double step_max_ms = NAN; /* the server's longest step (an older binary does not say) */
  FILE *f = fopen(srv.log_path, "r");
  char line[1024];
  while (f && fgets(line, sizeof(line), f)) {
    const char *p;
    if (strstr(line, "checkpoint (interval) failed"))
      failed++;
    if ((p = strstr(line, "checkpoint (interval) at tick")) && ck < 64) {
      const char *b = strstr(p, " bytes");
      const char *q = b;
      while (q && q > p && q[-1] >= '0' && q[-1] <= '9')
        q--;
      if (q)
        bytes = strtoull(q, NULL, 10);
      double l = 0.0, wr = 0.0;
      const char *on = strstr(p, " ms on the loop (");
      double cpu = NAN;
      if (on && b &&
          sscanf(b, " bytes: %lf ms on the loop (%lf ms CPU), %lf ms writing", &l, &cpu, &wr) == 3) {
        loop_ms[ck] = l;
        cpu_ms[ck] = cpu;
        write_ms[ck++] = wr;
      } else if (b && sscanf(b, " bytes in %lf ms", &l) == 1) { /* a binary that writes on the loop */
        loop_ms[ck] = l;
        cpu_ms[ck] = NAN;
        write_ms[ck++] = NAN;
      }
    }
    if ((p = strstr(line, "stats: ")) && (p = strstr(p, "tick ")))
      sscanf(p, "tick %llu, %llu overruns, %llu skipped", &ticks, &overruns, &skipped);
    const char *l = strstr(line, "longest step ");
    if (l)
      sscanf(l, "longest step %lf", &step_max_ms);
  }
  if (f)
    fclose(f);
  steerd_proc_stop(&srv, 10000);
  unlink(state);
  if (rc != 0)
    return rc;

  double rates[MAX_SECONDS];
  uint32_t nr = 0;
  for (uint32_t s = 1; s + 1 < seconds && s < MAX_SECONDS; s++) /* whole seconds, not the first or last */
    rates[nr++] = obs.per_second[s];
  qsort(rates, nr, sizeof(double), bench_cmp_double);
  double lsorted[64];
  memcpy(lsorted, loop_ms, sizeof(double) * (size_t)ck);
  qsort(lsorted, (size_t)ck, sizeof(double), bench_cmp_double);
  double wmax = 0.0, csorted[64];
  memcpy(csorted, cpu_ms, sizeof(double) * (size_t)ck);
  qsort(csorted, (size_t)ck, sizeof(double), bench_cmp_double);
  for (int i = 0; i < ck; i++)
    if (write_ms[i] > wmax)
      wmax = write_ms[i];
  char ccol[48] = "-";
  if (ck && !isnan(csorted[0]))
    snprintf(ccol, sizeof(ccol), "%.1f / %.1f", csorted[0], csorted[ck - 1]);
  char wcol[32] = "on the loop";
  if (ck && !isnan(write_ms[0]))
    snprintf(wcol, sizeof(wcol), "%.1f", wmax);
  printf(
      "| binary | agents | file | checkpoints | loop ms per checkpoint (min / median / max) | of which CPU "
      "(min / max) | write ms, worker (max) | ticks | skipped | overruns | longest step ms | observer "
      "frames/s "
      "(min / median) | load avg |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  printf("| %s | %u | %.1f MB | %d (%d failed) | %.1f / %.1f / %.1f | %s | %s | %llu | %llu | %llu | %.1f | "
         "%.0f / "
         "%.0f | %s |\n",
         label, agents, (double)bytes / 1e6, ck, failed, ck ? lsorted[0] : 0.0, ck ? lsorted[ck / 2] : 0.0,
         ck ? lsorted[ck - 1] : 0.0, ccol, wcol, ticks, skipped, overruns, step_max_ms, nr ? rates[0] : 0.0,
         nr ? rates[nr / 2] : 0.0, load);
  return 0;
}

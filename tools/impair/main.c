/* main.c: steerd-impair, the impairment proxy as a command (see impair.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "impair.h"

static const char usage[] =
    "usage: steerd-impair --listen PORT --upstream PORT [options]\n"
    "\n"
    "A UDP relay on loopback that impairs the traffic through it, for testing the\n"
    "netcode: clients send to 127.0.0.1:LISTEN, the proxy forwards to\n"
    "127.0.0.1:UPSTREAM (one upstream socket per client address) and back.\n"
    "Only 127.0.0.1 is ever used.\n"
    "\n"
    "  --listen PORT         port to listen on, 0 picks a free one (required)\n"
    "  --upstream PORT       the server's port on 127.0.0.1 (required)\n"
    "\n"
    "Impairment, both directions (one-way: --latency 100 adds 200 ms to a round trip):\n"
    "  --loss P              probability a datagram is dropped, 0..1 (0)\n"
    "  --latency MS          fixed delay (0)\n"
    "  --jitter MS           random delay added to the latency; datagrams may overtake (0)\n"
    "  --jitter-dist D       uniform (in -MS..+MS) or normal (standard deviation MS) (uniform)\n"
    "  --dup P               probability a datagram is sent twice, 0..1 (0)\n"
    "  --reorder P           probability a datagram is held back --reorder-ms more, 0..1 (0)\n"
    "  --reorder-ms MS       how long a reordered datagram is held back (20)\n"
    "  --bandwidth B         cap in bytes per second, 0 = none (0)\n"
    "  --up-X, --down-X      any of the above for one direction only: up is client -> server,\n"
    "                        down is server -> client; they win over the two-way flag\n"
    "\n"
    "Other:\n"
    "  --seed N              random seed; the same seed drops the same datagrams (1)\n"
    "  --seconds S           stop after S seconds, 0 = run until SIGINT/SIGTERM (0)\n"
    "  --stats S             print the counters every S seconds, 0 = only on exit (5)\n"
    "  --max-clients N       client addresses at once (256)\n"
    "  --idle-timeout MS     forget a client silent this long (30000)\n"
    "  --max-queued N        delayed datagrams held per direction; more are dropped (4096)\n"
    "  -h, --help            this text\n"
    "  --version             the version, alone\n"
    "\n"
    "Example: a server on 7777 seen through 5% loss and 100 ms +- 20 ms each way,\n"
    "clients connecting to 127.0.0.1:7778:\n"
    "  steerd-impair --listen 7778 --upstream 7777 --loss 0.05 --latency 100 --jitter 20\n"
    "  steerd-client --port 7778 watch --seconds 10\n";

typedef struct app {
  uv_loop_t loop;
  steerd_impair *proxy;
  uv_signal_t sigint, sigterm;
  uv_timer_t stats_timer, stop_timer;
} app;

static int parse_double(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi))
    return -1;
  *out = v;
  return 0;
}

static int parse_u64(const char *s, uint64_t hi, uint64_t *out) {
  char *end;
  if (!s[0] || s[0] == '-')
    return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* Applies one link flag (name without the --, --up- or --down- prefix);
 * 1 if it was one, 0 if not, -1 on a bad value. */
static int link_flag(steerd_impair_link *l, const char *name, const char *value) {
  uint64_t u = 0;
  double d = 0;
  if (strcmp(name, "loss") == 0 || strcmp(name, "dup") == 0 || strcmp(name, "reorder") == 0) {
    if (parse_double(value, 0.0, 1.0, &d) != 0)
      return -1;
    if (name[0] == 'l')
      l->loss = d;
    else if (name[0] == 'd')
      l->duplicate = d;
    else
      l->reorder = d;
    return 1;
  }
  if (strcmp(name, "latency") == 0 || strcmp(name, "jitter") == 0 || strcmp(name, "reorder-ms") == 0) {
    if (parse_u64(value, 60000, &u) != 0)
      return -1;
    if (name[0] == 'l')
      l->latency_ms = (uint32_t)u;
    else if (name[0] == 'j')
      l->jitter_ms = (uint32_t)u;
    else
      l->reorder_ms = (uint32_t)u;
    return 1;
  }
  if (strcmp(name, "jitter-dist") == 0) {
    if (strcmp(value, "uniform") == 0)
      l->jitter_dist = STEERD_IMPAIR_JITTER_UNIFORM;
    else if (strcmp(value, "normal") == 0)
      l->jitter_dist = STEERD_IMPAIR_JITTER_NORMAL;
    else
      return -1;
    return 1;
  }
  if (strcmp(name, "bandwidth") == 0) {
    if (parse_u64(value, UINT64_MAX / 2, &u) != 0)
      return -1;
    l->bytes_per_second = u;
    return 1;
  }
  return 0;
}

typedef struct options {
  steerd_impair_config cfg;
  int have_listen, have_upstream;
  uint64_t seconds;
  uint64_t stats_every;
} options;

/* Two passes: two-way flags first, then the per-direction ones, so --up-loss
 * wins over --loss wherever it stands. Returns 0, 1 for --help, -1 on error. */
static int parse_args(int argc, char **argv, options *o) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
      return 1;
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 1; i < argc; i += 2) {
      const char *flag = argv[i];
      if (strncmp(flag, "--", 2) != 0) {
        fprintf(stderr, "steerd-impair: unexpected argument '%s'\n", flag);
        return -1;
      }
      if (i + 1 >= argc) {
        fprintf(stderr, "steerd-impair: %s needs a value\n", flag);
        return -1;
      }
      const char *name = flag + 2, *value = argv[i + 1];
      int dir = -1;
      if (strncmp(name, "up-", 3) == 0) {
        dir = STEERD_IMPAIR_UP;
        name += 3;
      } else if (strncmp(name, "down-", 5) == 0) {
        dir = STEERD_IMPAIR_DOWN;
        name += 5;
      }
      int r = 0;
      if (dir >= 0) {
        r = link_flag(&o->cfg.link[dir], name, value);
        if (r == 0)
          goto unknown;
        if (r < 0)
          goto bad;
        continue; /* applied in both passes: the second one wins */
      }
      steerd_impair_link probe = o->cfg.link[0];
      r = link_flag(&probe, name, value);
      if (r < 0)
        goto bad;
      if (r > 0) {
        if (pass == 0)
          for (int d = 0; d < STEERD_IMPAIR_DIR_COUNT; d++)
            link_flag(&o->cfg.link[d], name, value);
        continue;
      }
      if (pass == 1)
        continue;
      uint64_t u = 0;
      if (strcmp(name, "listen") == 0 || strcmp(name, "upstream") == 0) {
        if (parse_u64(value, 65535, &u) != 0)
          goto bad;
        if (name[0] == 'l') {
          o->cfg.listen_port = (uint16_t)u;
          o->have_listen = 1;
        } else {
          o->cfg.upstream_port = (uint16_t)u;
          o->have_upstream = 1;
        }
      } else if (strcmp(name, "seed") == 0) {
        if (parse_u64(value, UINT64_MAX, &o->cfg.seed) != 0)
          goto bad;
      } else if (strcmp(name, "seconds") == 0) {
        if (parse_u64(value, 1000000000u, &o->seconds) != 0)
          goto bad;
      } else if (strcmp(name, "stats") == 0) {
        if (parse_u64(value, 1000000u, &o->stats_every) != 0)
          goto bad;
      } else if (strcmp(name, "max-clients") == 0) {
        if (parse_u64(value, 65536, &u) != 0 || u == 0)
          goto bad;
        o->cfg.max_clients = (uint32_t)u;
      } else if (strcmp(name, "idle-timeout") == 0) {
        if (parse_u64(value, 86400000u, &u) != 0 || u == 0)
          goto bad;
        o->cfg.idle_timeout_ms = (uint32_t)u;
      } else if (strcmp(name, "max-queued") == 0) {
        if (parse_u64(value, 1u << 20, &u) != 0 || u == 0)
          goto bad;
        o->cfg.max_queued = (uint32_t)u;
      } else {
        goto unknown;
      }
      continue;
    unknown:
      fprintf(stderr, "steerd-impair: unknown option '%s' (see --help)\n", flag);
      return -1;
    bad:
      fprintf(stderr, "steerd-impair: bad value '%s' for %s\n", value, flag);
      return -1;
    }
  }
  if (!o->have_listen || !o->have_upstream) {
    fprintf(stderr, "steerd-impair: --listen and --upstream are required (see --help)\n");
    return -1;
  }
  return 0;
}

static void print_stats(const steerd_impair *p, const char *when) {
  steerd_impair_stats s;
  steerd_impair_get_stats(p, &s);
  static const char *const names[STEERD_IMPAIR_DIR_COUNT] = {"up", "down"};
  printf("impair %s: clients %u active, %llu created, %llu expired, %llu table-full, %llu refused\n", when,
         s.clients_active, (unsigned long long)s.clients_created, (unsigned long long)s.clients_expired,
         (unsigned long long)s.table_full, (unsigned long long)s.refused);
  for (int d = 0; d < STEERD_IMPAIR_DIR_COUNT; d++) {
    const steerd_impair_dir_stats *t = &s.dir[d];
    printf("  %-4s received %llu forwarded %llu dropped %llu duplicated %llu delayed %llu reordered %llu "
           "overflow %llu send-errors %llu queued %u bytes %llu/%llu\n",
           names[d], (unsigned long long)t->received, (unsigned long long)t->forwarded,
           (unsigned long long)t->dropped, (unsigned long long)t->duplicated, (unsigned long long)t->delayed,
           (unsigned long long)t->reordered, (unsigned long long)t->overflow,
           (unsigned long long)t->send_errors, s.queued[d], (unsigned long long)t->bytes_received,
           (unsigned long long)t->bytes_forwarded);
  }
  fflush(stdout);
}

static void on_stats(uv_timer_t *t) {
  app *a = t->data;
  print_stats(a->proxy, "counters");
}

static void stop(app *a) {
  steerd_impair_close(a->proxy);
  uv_handle_t *hs[] = {(uv_handle_t *)&a->sigint, (uv_handle_t *)&a->sigterm, (uv_handle_t *)&a->stats_timer,
                       (uv_handle_t *)&a->stop_timer};
  for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
    if (!uv_is_closing(hs[i]))
      uv_close(hs[i], NULL);
}

static void on_signal(uv_signal_t *s, int signum) {
  (void)signum;
  stop(s->data);
}

static void on_stop_timer(uv_timer_t *t) { stop(t->data); }

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("steerd-impair %s\n", STEERD_VERSION);
    return 0;
  }
  options o;
  memset(&o, 0, sizeof o);
  o.cfg = steerd_impair_default_config();
  o.stats_every = 5;
  int r = parse_args(argc, argv, &o);
  if (r > 0) {
    fputs(usage, stdout);
    return 0;
  }
  if (r < 0)
    return 2;

  app a;
  memset(&a, 0, sizeof a);
  if (uv_loop_init(&a.loop) != 0) {
    fprintf(stderr, "steerd-impair: uv_loop_init failed\n");
    return 1;
  }
  r = steerd_impair_create(&a.loop, &o.cfg, &a.proxy);
  if (r != 0) {
    fprintf(stderr, "steerd-impair: cannot listen on 127.0.0.1:%u -> 127.0.0.1:%u: %s\n", o.cfg.listen_port,
            o.cfg.upstream_port, steerd_impair_strerror(r));
    uv_loop_close(&a.loop);
    return 1;
  }
  uv_signal_init(&a.loop, &a.sigint);
  uv_signal_init(&a.loop, &a.sigterm);
  uv_timer_init(&a.loop, &a.stats_timer);
  uv_timer_init(&a.loop, &a.stop_timer);
  a.sigint.data = a.sigterm.data = a.stats_timer.data = a.stop_timer.data = &a;
  uv_signal_start(&a.sigint, on_signal, SIGINT);
  uv_signal_start(&a.sigterm, on_signal, SIGTERM);
  if (o.stats_every > 0)
    uv_timer_start(&a.stats_timer, on_stats, o.stats_every * 1000u, o.stats_every * 1000u);
  if (o.seconds > 0)
    uv_timer_start(&a.stop_timer, on_stop_timer, o.seconds * 1000u, 0);

  printf("impair listening on 127.0.0.1:%u -> 127.0.0.1:%u\n", steerd_impair_port(a.proxy),
         o.cfg.upstream_port);
  for (int d = 0; d < STEERD_IMPAIR_DIR_COUNT; d++) {
    const steerd_impair_link *l = &o.cfg.link[d];
    printf("  %-4s loss %.3f latency %u ms jitter %u ms (%s) dup %.3f reorder %.3f (+%u ms) bandwidth %llu "
           "B/s\n",
           d == STEERD_IMPAIR_UP ? "up" : "down", l->loss, l->latency_ms, l->jitter_ms,
           l->jitter_dist == STEERD_IMPAIR_JITTER_NORMAL ? "normal" : "uniform", l->duplicate, l->reorder,
           l->reorder_ms, (unsigned long long)l->bytes_per_second);
  }
  fflush(stdout);

  uv_run(&a.loop, UV_RUN_DEFAULT);
  print_stats(a.proxy, "final");
  steerd_impair_destroy(a.proxy);
  uv_loop_close(&a.loop);
  return 0;
}

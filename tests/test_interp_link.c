/* test_interp_link.c: the client's interpolated positions through a bad link.
 *
 * The real server (--no-demo) runs on 127.0.0.1 with AGENTS dynamic agents (a
 * third patrolling 4-point loops, a third wandering, a third pursuing another
 * agent, as in bench/bench_netcode.c). Two clients watch it:
 *
 *   truth   full snapshots, connected directly: records every snapshot (tick,
 *           server time, poses);
 *   viewer  delta snapshots, through the impairment proxy (tools/impair) at
 *           5 % loss both ways and 100 ms +- 20 ms (uniform) latency ONE WAY,
 *           in each direction: a round trip of 200 +- 40 ms. An
 *           earlier benchmark read "100 ms" as the round trip (50 +- 10 ms one
 *           way); one way is the harsher reading, so this test uses it.
 *           Every rebuilt frame goes into a steerd_interp buffer, as
 *           `steerd-client watch --interp` does, and the buffer is sampled at
 *           60 Hz like a game's render loop.
 *
 * The render time the buffer returns is in server time (estimated server time
 * minus the adaptive delay, the clock estimated by the buffer from the frames'
 * arrivals, as a real client would), so each interpolated sample is compared
 * with the truth at that same server time: linear between the two truth
 * snapshots around it. After a warm-up, over MEASURE_US: mean and 99th
 * percentile of the position error, the share of samples that had to be
 * extrapolated (or held), and how long any agent went missing.
 *
 * Only public APIs: client.h, interp.h, impair.h (the proxy runs in-process on
 * its own uv loop in a second thread, as in test_impair.c) and steerd_proc.h. */
#include <check.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world.h"
#include "check_run.h"
#include "client.h"
#include "impair.h"
#include "impair_runner.h"
#include "interp.h"
#include "mixed_world.h"
#include "steerd_proc.h"

/* The world. */
#define AGENTS  300
#define DENSITY 0.025 /* agents per m^2, as in bench_netcode: a 110 m square */

/* The link, per direction (one way). */
#define LINK_LOSS       0.05
#define LINK_LATENCY_MS 100
#define LINK_JITTER_MS  20
#define LINK_SEED       20240611u

/* The measurement. */
#define RENDER_HZ    60
#define WARMUP_US    2000000ll /* after the viewer's first frame: it learns every agent, the delay settles */
#define MEASURE_US   8000000ll
#define TRUTH_GAP_US 120000ll /* truth snapshots further apart than this do not bracket a sample */

/* The bounds. The promise: mean <= 5 cm and p99 <= 20 cm
 * at 5 % loss. Measured on a 2-core VM (RelWithDebInfo; ASan+UBSan alike):
 * with the netcode of commit 5b61b7c, 6+ runs: mean 1.56-1.62 cm, p99 5.7-5.9
 * cm, max 8.6-10.3 cm, 1.0-2.5 % of the samples extrapolated; with the delta
 * encoding changes made alongside this test, 12+ runs: mean 1.1-1.5 cm, p99
 * 3.6-4.5 cm, max 14-54 cm, 0.6-2.7 %. No agent was ever missing. The rebuilt
 * frames are about as far off the truth as the rendered samples: nearly all of
 * the error is the delta records' dead reckoning, not the buffer. The promise
 * alone misses real breakage (holding the older sample instead of
 * interpolating: mean 5.9-6.2 cm, p99 19-21 cm; sampling 16 ms away from the
 * render time: mean 3.6-3.7 cm), so a guard about 2x above the measured
 * figures backs it; it held with 2 and with 6 busy loops on the 2 cores (mean
 * <= 1.75 cm, p99 <= 6.3 cm) except once when the server itself stalled. No
 * render delay (render at the estimated server time) extrapolates 100 % of the
 * samples, a 50 ms delay 38 %. */
#define PROMISE_MEAN_M   0.05
#define PROMISE_P99_M    0.20
#define GUARD_MEAN_M     0.03
#define GUARD_P99_M      0.10
#define MAX_EXTRAPOLATED 0.08   /* share of samples past the newest frame (extrapolated or held) */
#define MAX_MISSING_US   250000 /* no agent missing from the buffer longer than this (local time) */
#define POP_MIN_MOTION_M 0.02   /* agents moving at least this per rendered frame (1.2 m/s at 60 Hz) */
#define POP_MAX_RATIO    2.0    /* largest frame-to-frame jump / true motion in that frame */
/* Through the link the buffer interpolates delta records, each up to the
 * dead-reckoning threshold (2 cm) off the truth: a slow agent's record
 * corrected from -2 to +2 cm between two frames jumps 4 cm more than it moved.
 * Measured, 9 runs: 23-76 of ~130 000 agent-frames (0.02-0.06 %) over 2 x,
 * nearly all while interpolating, up to 15 cm beyond 2 x (a lost frame's
 * correction). The full snapshots (no loss, no thresholds) stay under 1.1 x. */
#define POP_MAX_OVER_SHARE 0.001 /* through the link: agent-frames over 2 x */
#define POP_GUARD_DIRECT   1.35  /* full snapshots: measured 1.09 x; send-deadline times gave 1.6 x */

/* ---- the proxy in its own thread (tests/support/impair_runner.h) ------------------------ */

static void runner_start(impair_runner *r, const steerd_impair_config *cfg) {
  int rc = impair_runner_start(r, cfg);
  ck_assert_msg(rc == 0, "impair_runner_start: %s", steerd_impair_strerror(rc));
}

static void runner_stop(impair_runner *r) { ck_assert_int_eq(impair_runner_stop(r), 0); }

/* ---- the truth: every full snapshot ------------------------------------------------ */

typedef struct truth_frame {
  uint64_t tick;
  int64_t time_us;
  uint32_t count;
  proto_pose *poses; /* sorted by id */
} truth_frame;

typedef struct truth_log {
  truth_frame *frames;
  uint32_t n, cap, max_agents;
  int recording;
  uint64_t overflow;
  steerd_interp *it; /* the truth's frames, interpolated too */
} truth_log;

static int cmp_pose(const void *a, const void *b) {
  steer_id x = ((const proto_pose *)a)->id, y = ((const proto_pose *)b)->id;
  return x < y ? -1 : x > y;
}

static void truth_on_frame(void *user, const steerd_client_frame *f) {
  truth_log *t = user;
  if (!t->recording)
    return;
  if (t->it)
    ck_assert_int_eq(
        steerd_interp_push(t->it, steerd_client_now_us(), f->tick, f->server_time_us, f->poses, f->count, 1),
        0);
  if (t->n >= t->cap || f->count > t->max_agents) {
    t->overflow++;
    return;
  }
  truth_frame *r = &t->frames[t->n++];
  r->tick = f->tick;
  r->time_us = (int64_t)f->server_time_us;
  r->count = f->count;
  memcpy(r->poses, f->poses, f->count * sizeof *f->poses);
  qsort(r->poses, r->count, sizeof *r->poses, cmp_pose);
}

static const proto_pose *frame_find(const truth_frame *f, steer_id id) {
  proto_pose key;
  memset(&key, 0, sizeof key);
  key.id = id;
  return bsearch(&key, f->poses, f->count, sizeof key, cmp_pose);
}

/* The index of the last frame with time <= t_us, or -1. */
static long truth_before(const truth_log *t, int64_t t_us) {
  long lo = 0, hi = (long)t->n - 1, found = -1;
  while (lo <= hi) {
    long mid = (lo + hi) / 2;
    if (t->frames[mid].time_us <= t_us) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return found;
}

/* The frame of tick, or NULL. */
static const truth_frame *truth_tick(const truth_log *t, uint64_t tick) {
  long lo = 0, hi = (long)t->n - 1;
  while (lo <= hi) {
    long mid = (lo + hi) / 2;
    if (t->frames[mid].tick == tick)
      return &t->frames[mid];
    if (t->frames[mid].tick < tick)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return NULL;
}

/* Agent id at server time t_us, linear between the truth snapshots around it. */
static int truth_at(const truth_log *t, steer_id id, int64_t t_us, double *x, double *y) {
  long i = truth_before(t, t_us);
  if (i < 0 || (uint32_t)i + 1 >= t->n)
    return -1;
  const truth_frame *a = &t->frames[i], *b = &t->frames[i + 1];
  if (b->time_us - a->time_us > TRUTH_GAP_US || b->time_us <= a->time_us)
    return -1;
  const proto_pose *pa = frame_find(a, id), *pb = frame_find(b, id);
  if (!pa || !pb)
    return -1;
  double u = (double)(t_us - a->time_us) / (double)(b->time_us - a->time_us);
  *x = pa->x + u * (pb->x - pa->x);
  *y = pa->y + u * (pb->y - pa->y);
  return 0;
}

/* ---- the viewer: delta frames into the interpolation buffer -------------------------- */

typedef struct viewer {
  steerd_interp *it;
  const truth_log *truth;
  uint64_t first_frame_us; /* local time of the first rebuilt frame, 0 before */
  int measuring;
  /* The rebuilt frames themselves against the truth of the same tick (what the
   * buffer is given, before any interpolation): a diagnostic. */
  double frame_err_sum, frame_err_max;
  uint64_t frame_err_n, frames_compared;
} viewer;

static void viewer_on_frame(void *user, const steerd_client_frame *f) {
  viewer *v = user;
  if (v->it == NULL) /* before the WELCOME's snapshot rate configured the buffer */
    return;
  uint64_t now = steerd_client_now_us();
  if (v->first_frame_us == 0)
    v->first_frame_us = now;
  int rc = steerd_interp_push(v->it, now, f->tick, f->server_time_us, f->poses, f->count, 1);
  ck_assert_int_eq(rc, 0);
  if (!v->measuring)
    return;
  const truth_frame *t = truth_tick(v->truth, f->tick);
  if (!t)
    return;
  v->frames_compared++;
  for (uint32_t i = 0; i < f->count; i++) {
    const proto_pose *p = frame_find(t, f->poses[i].id);
    if (!p)
      continue;
    double e = hypot(f->poses[i].x - p->x, f->poses[i].y - p->y);
    v->frame_err_sum += e;
    v->frame_err_n++;
    if (e > v->frame_err_max)
      v->frame_err_max = e;
  }
}

static void viewer_on_event(void *user, const proto_event *e) {
  viewer *v = user;
  if (v->it != NULL && e->code == PROTO_EVENT_DESPAWNED)
    steerd_interp_despawn(v->it, e->agent, e->tick);
}

/* ---- setup ------------------------------------------------------------------------ */

static steerd_client *make_client(const char *name, int delta,
                                  void (*on_frame)(void *, const steerd_client_frame *),
                                  void (*on_event)(void *, const proto_event *), void *user) {
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = name;
  cfg.max_agents = AGENTS + 64;
  cfg.snapshots = delta ? PROTO_SNAPSHOTS_DELTA : PROTO_SNAPSHOTS_FULL;
  cfg.connect_timeout_ms = 10000;
  cfg.callbacks.on_snapshot_frame = on_frame;
  cfg.callbacks.on_event = on_event;
  cfg.user = user;
  steerd_client *c = steerd_client_create(&cfg);
  ck_assert_ptr_nonnull(c);
  return c;
}

/* AGENTS agents in a square of side `side` m: the benchmark's world (tests/support/mixed_world.h). */
static void populate(steerd_client *c, float side, steer_id *ids) {
  mixed_world m;
  mixed_world_init(&m, side, 12345);
  for (uint32_t i = 0; i < AGENTS; i++) {
    proto_command cmd;
    mixed_world_next(&m, &cmd);
    proto_server_msg reply;
    int rc = steerd_client_command_wait(c, &cmd, 5000, &reply);
    ck_assert_msg(rc == 0, "spawn %u: %s", i, steerd_client_strerror(rc));
    ids[i] = reply.ack.agent;
    mixed_world_spawned(&m, ids[i]);
  }
}

/* ---- statistics ------------------------------------------------------------------- */

typedef struct sample {
  int64_t render_us;
  steer_id id;
  float x, y;
  uint8_t mode;
  size_t prev; /* 1 + index of the same agent's sample in the previous render, 0: none */
} sample;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* No visible pop: each frame-to-frame jump of a rendered agent against what
 * the agent truly moved between the two render times (the truth, linear
 * between its snapshots), for agents moving at least POP_MIN_MOTION_M per frame. */
typedef struct pop_stats {
  double max_ratio, jump, moved;
  double max_excess; /* largest jump - 2 x moved */
  size_t frames, over;
} pop_stats;

static void pop_measure(const sample *samples, size_t ns, const truth_log *truth, pop_stats *out) {
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < ns; i++) {
    if (!samples[i].prev)
      continue;
    const sample *a = &samples[samples[i].prev - 1], *b = &samples[i];
    double ax, ay, bx, by;
    if (truth_at(truth, b->id, a->render_us, &ax, &ay) != 0 ||
        truth_at(truth, b->id, b->render_us, &bx, &by) != 0)
      continue;
    double moved = hypot(bx - ax, by - ay), jump = hypot(b->x - a->x, b->y - a->y);
    if (moved < POP_MIN_MOTION_M)
      continue;
    out->frames++;
    if (jump > POP_MAX_RATIO * moved)
      out->over++;
    if (jump - POP_MAX_RATIO * moved > out->max_excess)
      out->max_excess = jump - POP_MAX_RATIO * moved;
    if (jump / moved > out->max_ratio) {
      out->max_ratio = jump / moved;
      out->jump = jump;
      out->moved = moved;
    }
  }
}

/* One rendered sample of agent i into samples[*n], linked to the agent's sample of the previous render. */
static void keep_sample(sample *samples, size_t *n, size_t cap, size_t *last, int64_t render, steer_id id,
                        const steerd_interp_state *s) {
  ck_assert_uint_lt(*n, cap);
  sample *p = &samples[(*n)++];
  p->render_us = render;
  p->id = id;
  p->x = (float)s->x;
  p->y = (float)s->y;
  p->mode = (uint8_t)s->mode;
  p->prev = *last && samples[*last - 1].render_us < render ? *last : 0;
  *last = *n;
}

/* ---- the test ----------------------------------------------------------------------- */

START_TEST(interpolation_through_lossy_latent_link) {
  const char *const args[] = {"--no-demo", "--rate-limit",     "100000", "--rate-burst",
                              "100000",    "--client-timeout", "10000",  NULL};
  steerd_proc server;
  ck_assert_msg(steerd_proc_start(&server, STEERD_BINARY, args, 5000) == 0, "the server did not start");

  steerd_impair_config pc = steerd_impair_default_config();
  pc.upstream_port = server.port;
  pc.seed = LINK_SEED;
  for (int d = 0; d < STEERD_IMPAIR_DIR_COUNT; d++) {
    pc.link[d].loss = LINK_LOSS;
    pc.link[d].latency_ms = LINK_LATENCY_MS; /* one way: the round trip is twice this */
    pc.link[d].jitter_ms = LINK_JITTER_MS;
    pc.link[d].jitter_dist = STEERD_IMPAIR_JITTER_UNIFORM;
  }
  impair_runner proxy;
  runner_start(&proxy, &pc);

  /* The truth, directly; it also spawns the agents. */
  uint32_t frames_cap = (uint32_t)((WARMUP_US + MEASURE_US) / 1000000 + 4) * 20 + 64;
  truth_log truth;
  memset(&truth, 0, sizeof truth);
  truth.cap = frames_cap;
  truth.max_agents = AGENTS + 64;
  truth.frames = calloc(frames_cap, sizeof *truth.frames);
  ck_assert_ptr_nonnull(truth.frames);
  for (uint32_t i = 0; i < frames_cap; i++) {
    truth.frames[i].poses = calloc(truth.max_agents, sizeof(proto_pose));
    ck_assert_ptr_nonnull(truth.frames[i].poses);
  }
  steerd_client *tc = make_client("truth", 0, truth_on_frame, NULL, &truth);
  ck_assert_int_eq(steerd_client_connect(tc, "127.0.0.1", server.port), 0);
  static steer_id ids[AGENTS];
  uint64_t t_spawn = steerd_proc_now_ms();
  populate(tc, (float)sqrt(AGENTS / DENSITY), ids);
  t_spawn = steerd_proc_now_ms() - t_spawn;

  /* The viewer, through the proxy; its buffer is configured as watch --interp does. */
  viewer view;
  memset(&view, 0, sizeof view);
  view.truth = &truth;
  steerd_client *vc = make_client("viewer", 1, viewer_on_frame, viewer_on_event, &view);
  truth.recording = 1;
  uint64_t t_connect = steerd_proc_now_ms();
  int rc = steerd_client_connect(vc, "127.0.0.1", proxy.port);
  ck_assert_msg(rc == 0, "connect through the proxy: %s", steerd_client_strerror(rc));
  t_connect = steerd_proc_now_ms() - t_connect;
  const proto_welcome *w = steerd_client_welcome(vc);
  ck_assert_ptr_nonnull(w);
  steerd_interp_config icfg = steerd_interp_default_config();
  icfg.max_agents = AGENTS + 64;
  if (w->snapshot_rate > 0)
    icfg.snapshot_interval_us = 1000000u / w->snapshot_rate;
  view.it = steerd_interp_create(&icfg);
  ck_assert_ptr_nonnull(view.it);
  truth.it = steerd_interp_create(&icfg);
  ck_assert_ptr_nonnull(truth.it);

  /* The link is what it claims: a round trip of 2 x (100 +- 20) ms. */
  uint64_t rtt_us = 0;
  ck_assert_int_eq(steerd_client_ping(vc, 5000, &rtt_us), 0);
  ck_assert_uint_ge(rtt_us, 2 * (LINK_LATENCY_MS - LINK_JITTER_MS) * 1000u - 1000u);

  size_t cap = (size_t)(MEASURE_US * RENDER_HZ / 1000000 + 2 * RENDER_HZ) * AGENTS;
  sample *samples = malloc(cap * sizeof *samples);
  ck_assert_ptr_nonnull(samples);
  size_t ns = 0, missing = 0, renders = 0, hitches = 0;
  uint64_t last_render_now = 0;
  static uint64_t missing_since[AGENTS];
  static size_t last_sample[AGENTS], last_direct[AGENTS]; /* 1 + index of the agent's previous sample */
  memset(last_sample, 0, sizeof last_sample);
  memset(last_direct, 0, sizeof last_direct);
  sample *direct = malloc(cap * sizeof *direct);
  ck_assert_ptr_nonnull(direct);
  size_t nd = 0;
  memset(missing_since, 0, sizeof missing_since);
  uint64_t max_missing_us = 0;
  int64_t last_render = INT64_MIN;
  steerd_interp_stats st0;
  memset(&st0, 0, sizeof st0);

  const uint64_t period = 1000000u / RENDER_HZ;
  uint64_t next = steerd_client_now_us(), measure_from = 0, measure_to = UINT64_MAX;
  uint64_t give_up = next + 5000000u; /* the first frame must come within 5 s */
  for (;;) {
    ck_assert_int_ge(steerd_client_service(tc, 0), 0);
    ck_assert_int_ge(steerd_client_service(vc, 0), 0);
    uint64_t now = steerd_client_now_us();
    if (view.first_frame_us == 0) {
      ck_assert_msg(now < give_up, "no frame through the proxy in 5 s");
    } else if (measure_from == 0) {
      measure_from = view.first_frame_us + (uint64_t)WARMUP_US;
      measure_to = measure_from + (uint64_t)MEASURE_US;
    }
    if (now >= measure_to)
      break;
    if (now < next) {
      struct pollfd pfd[2] = {{steerd_client_fd(tc), POLLIN, 0}, {steerd_client_fd(vc), POLLIN, 0}};
      poll(pfd, 2, (int)((next - now + 999u) / 1000u));
      continue;
    }
    /* A rendered frame. */
    next = now - next > period ? now + period : next + period;
    /* This process descheduled for more than four frames (a loaded machine):
     * a game would show a hitch there whatever its buffer does, so no jump is
     * measured across it; the next frames are measured as usual. */
    if (last_render_now && now - last_render_now > 4 * period) {
      memset(last_sample, 0, sizeof last_sample);
      memset(last_direct, 0, sizeof last_direct);
      hitches++;
    }
    last_render_now = now;
    int64_t render;
    rc = steerd_interp_advance(view.it, now, &render);
    if (rc == STEERD_INTERP_ENODATA)
      continue;
    ck_assert_int_eq(rc, 0);
    ck_assert_int_ge(render, last_render); /* never backwards */
    last_render = render;
    if (measure_from == 0 || now < measure_from)
      continue;
    if (!view.measuring) {
      view.measuring = 1;
      steerd_interp_get_stats(view.it, &st0);
    }
    renders++;
    for (uint32_t i = 0; i < AGENTS; i++) {
      steerd_interp_state s;
      rc = steerd_interp_sample(view.it, ids[i], &s);
      if (rc == STEERD_INTERP_ENOENT) {
        last_sample[i] = 0;
        missing++;
        if (missing_since[i] == 0)
          missing_since[i] = now;
        if (now - missing_since[i] > max_missing_us)
          max_missing_us = now - missing_since[i];
        continue;
      }
      ck_assert_int_eq(rc, 0);
      missing_since[i] = 0;
      keep_sample(samples, &ns, cap, &last_sample[i], render, ids[i], &s);
    }
    /* The truth's own frames through a buffer of their own (no loss, no delta): the pop measure at 0 % loss.
     */
    int64_t render_direct;
    if (steerd_interp_advance(truth.it, now, &render_direct) == 0)
      for (uint32_t i = 0; i < AGENTS; i++) {
        steerd_interp_state s;
        if (steerd_interp_sample(truth.it, ids[i], &s) != 0) {
          last_direct[i] = 0;
          continue;
        }
        keep_sample(direct, &nd, cap, &last_direct[i], render_direct, ids[i], &s);
      }
  }
  steerd_interp_stats st;
  steerd_interp_get_stats(view.it, &st);
  steerd_client_stats vs, ts;
  steerd_client_get_stats(vc, &vs);
  steerd_client_get_stats(tc, &ts);
  steerd_client_destroy(vc);
  steerd_client_destroy(tc);
  runner_stop(&proxy);
  ck_assert_int_ne(steerd_proc_stop(&server, 3000), -1);

  /* Each sample against the truth at its render time. */
  double *err = malloc((ns ? ns : 1) * sizeof *err);
  ck_assert_ptr_nonnull(err);
  size_t ne = 0, no_truth = 0, by_mode[STEERD_INTERP_MODE_COUNT] = {0};
  double sum = 0, sum_mode[STEERD_INTERP_MODE_COUNT] = {0};
  for (size_t i = 0; i < ns; i++) {
    double x, y;
    if (truth_at(&truth, samples[i].id, samples[i].render_us, &x, &y) != 0) {
      no_truth++;
      continue;
    }
    double e = hypot(samples[i].x - x, samples[i].y - y);
    err[ne++] = e;
    sum += e;
    by_mode[samples[i].mode]++;
    sum_mode[samples[i].mode] += e;
  }
  qsort(err, ne, sizeof *err, cmp_double);
  double mean = ne ? sum / (double)ne : 0;
  double p99 = ne ? err[(size_t)floor(0.99 * (double)(ne - 1))] : 0;
  double max = ne ? err[ne - 1] : 0;
  size_t extrapolated = by_mode[STEERD_INTERP_MODE_EXTRAPOLATE] + by_mode[STEERD_INTERP_MODE_HOLD_NEWEST];
  double extra_share = ne ? (double)extrapolated / (double)ne : 1;
  pop_stats pop, pop_direct;
  pop_measure(samples, ns, &truth, &pop);
  pop_measure(direct, nd, &truth, &pop_direct);
  const steerd_impair_dir_stats *down = &proxy.stats.dir[STEERD_IMPAIR_DOWN];
  const steerd_impair_dir_stats *up = &proxy.stats.dir[STEERD_IMPAIR_UP];

  printf("interp through 5%% loss, %d +- %d ms one way (%d agents; spawned in %llu ms, connected in %llu ms, "
         "ping %.1f ms):\n",
         LINK_LATENCY_MS, LINK_JITTER_MS, AGENTS, (unsigned long long)t_spawn, (unsigned long long)t_connect,
         (double)rtt_us / 1000.0);
  printf("  position error over %.1f s, %zu renders, %zu samples: mean %.2f cm, p99 %.2f cm, max %.2f cm; "
         "extrapolated or held %.2f %% (interpolated mean %.2f cm, extrapolated mean %.2f cm)\n",
         (double)MEASURE_US / 1e6, renders, ne, mean * 100, p99 * 100, max * 100, extra_share * 100,
         by_mode[0] ? sum_mode[0] / (double)by_mode[0] * 100 : 0,
         by_mode[1] ? sum_mode[1] / (double)by_mode[1] * 100 : 0);
  printf("  no visible pop (agent-frames moving >= %.0f cm per frame): through the link, %zu frames, largest "
         "jump %.2f x the true motion (%.2f cm for %.2f cm), %zu over %.0f x; full snapshots directly, %zu "
         "frames, largest %.2f x (%.2f cm for %.2f cm), %zu over; largest excess over 2 x through the link "
         "%.2f cm\n",
         POP_MIN_MOTION_M * 100, pop.frames, pop.max_ratio, pop.jump * 100, pop.moved * 100, pop.over,
         POP_MAX_RATIO, pop_direct.frames, pop_direct.max_ratio, pop_direct.jump * 100,
         pop_direct.moved * 100, pop_direct.over, pop.max_excess * 100);
  printf("  renders more than four frames late (this process descheduled; no jump measured across): %zu\n",
         hitches);
  printf("  missing agent-samples %zu (longest %.0f ms), samples without truth %zu; rebuilt frames vs truth "
         "(same tick): %llu frames, mean %.2f cm, max %.2f cm\n",
         missing, (double)max_missing_us / 1000.0, no_truth, (unsigned long long)view.frames_compared,
         view.frame_err_n ? view.frame_err_sum / (double)view.frame_err_n * 100 : 0,
         view.frame_err_max * 100);
  printf(
      "  buffer: delay %.1f ms, jitter %.1f ms, frames %llu of %llu expected (%llu missed) while measuring, "
      "underruns %llu (%.0f ms), age mean %.1f ms\n",
      st.delay_ms, st.jitter_ms, (unsigned long long)(st.frames - st0.frames),
      (unsigned long long)(st.frames_expected - st0.frames_expected),
      (unsigned long long)(st.frames_missed - st0.frames_missed),
      (unsigned long long)(st.underruns - st0.underruns), st.underrun_ms - st0.underrun_ms, st.age_mean_ms);
  printf("  viewer: %llu frames rebuilt, %llu incomplete, %llu without baseline, %llu bad; truth: %u frames "
         "recorded, %llu incomplete; proxy dropped %llu of %llu down, %llu of %llu up\n",
         (unsigned long long)vs.frames_complete, (unsigned long long)vs.frames_incomplete,
         (unsigned long long)vs.delta_no_base, (unsigned long long)vs.delta_bad, truth.n,
         (unsigned long long)ts.frames_incomplete, (unsigned long long)down->dropped,
         (unsigned long long)down->received, (unsigned long long)up->dropped,
         (unsigned long long)up->received);
  fflush(stdout);

  /* The run was what it claims: the proxy lost about 5 % each way, the truth saw every snapshot. */
  ck_assert_uint_gt(down->received, 100);
  ck_assert_double_ge((double)down->dropped / (double)down->received, 0.02);
  ck_assert_double_le((double)down->dropped / (double)down->received, 0.10);
  ck_assert_uint_eq(truth.overflow, 0);
  ck_assert_uint_eq(vs.delta_bad, 0);
  /* Enough samples (a busy machine renders fewer frames), nearly all with a truth around them. */
  ck_assert_uint_ge(renders, (size_t)(MEASURE_US * RENDER_HZ / 1000000) * 3 / 4);
  ck_assert_uint_ge(ne, renders * AGENTS * 9 / 10);
  /* The promise, then the guard. */
  ck_assert_msg(mean <= PROMISE_MEAN_M, "mean error %.2f cm above the promised %.2f cm", mean * 100,
                PROMISE_MEAN_M * 100);
  ck_assert_msg(p99 <= PROMISE_P99_M, "p99 error %.2f cm above the promised %.2f cm", p99 * 100,
                PROMISE_P99_M * 100);
  ck_assert_msg(mean <= GUARD_MEAN_M, "mean error %.2f cm above the guard %.2f cm (measured 1.1-1.6 cm)",
                mean * 100, GUARD_MEAN_M * 100);
  ck_assert_msg(p99 <= GUARD_P99_M, "p99 error %.2f cm above the guard %.2f cm (measured 3.6-5.9 cm)",
                p99 * 100, GUARD_P99_M * 100);
  ck_assert_msg(extra_share <= MAX_EXTRAPOLATED, "%.2f %% of the samples extrapolated, above %.2f %%",
                extra_share * 100, MAX_EXTRAPOLATED * 100);
  ck_assert_uint_ge(pop_direct.frames, renders * AGENTS / 4);
  ck_assert_msg(pop_direct.max_ratio <= POP_MAX_RATIO, "full snapshots: a jump of %.2f x the true motion",
                pop_direct.max_ratio);
  ck_assert_msg(pop_direct.max_ratio <= POP_GUARD_DIRECT, "full snapshots: a jump of %.2f x the true motion",
                pop_direct.max_ratio);
  ck_assert_uint_ge(pop.frames, renders * AGENTS / 4);
  ck_assert_msg((double)pop.over <= POP_MAX_OVER_SHARE * (double)pop.frames,
                "%zu of %zu agent-frames jump over 2 x", pop.over, pop.frames);
  ck_assert_msg(max_missing_us <= MAX_MISSING_US, "an agent was missing for %.0f ms",
                (double)max_missing_us / 1000.0);

  free(err);
  free(samples);
  free(direct);
  steerd_interp_destroy(truth.it);
  for (uint32_t i = 0; i < frames_cap; i++)
    free(truth.frames[i].poses);
  free(truth.frames);
  steerd_interp_destroy(view.it);
}
END_TEST

static Suite *interp_link_suite(void) {
  Suite *s = suite_create("interp_link");
  TCase *tc = check_tcase(s, "e2e", 60);
  tcase_add_test(tc, interpolation_through_lossy_latent_link);
  return s;
}

int main(void) {
  unsetenv("STEERD_SECRET");
  unsetenv("STEERD_SECRET_FILE");
  return check_run(interp_link_suite());
}

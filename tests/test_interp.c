/* test_interp.c: the interpolation buffer (client-sample/interp.c).
 *
 * The accuracy tests replay synthetic truth (a circle, a straight line, a
 * ping-pong reversal, a turn across +-pi) as 20 Hz snapshots quantized like
 * the wire, delivered with 100 ms +- 20 ms latency and seeded loss, and render
 * at 60 Hz, comparing each rendered state with the truth at the render time. */
#include <check.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world.h"
#include "check_run.h"
#include "interp.h"

#define PI             3.14159265358979323846
#define TRUE_OFFSET_US 123456789ll /* local clock - server clock */
#define SNAP_US        50000ll     /* 20 Hz */
#define SIM_SECONDS    60
#define MAX_FRAMES     (SIM_SECONDS * 20 + 1)
#define MAX_RENDERS    (SIM_SECONDS * 60 + 1)
#define WARMUP_US      2000000ll
#define TURN_STEP_US   1000

enum { CASE_CIRCLE, CASE_LINE, CASE_REVERSAL, CASE_TURN, CASE_COUNT };
static const char *const case_names[CASE_COUNT] = {"circle", "line", "reversal", "turn across pi"};

/* ---- truth ------------------------------------------------------------------- */

typedef struct truth {
  double x, y, theta, vx, vy;
} truth;

static double wrap(double a) {
  a = fmod(a, 2 * PI);
  if (a > PI)
    a -= 2 * PI;
  else if (a <= -PI)
    a += 2 * PI;
  return a;
}

/* The turn case: heading pi + 1.2 sin(0.8 t) at 1.5 m/s, integrated on a 1 ms grid. */
static double turn_heading(double t) { return PI + 1.2 * sin(0.8 * t); }
static double turn_x[SIM_SECONDS * 1000 + 400], turn_y[SIM_SECONDS * 1000 + 400];
static int turn_ready;

static void turn_prepare(void) {
  if (turn_ready)
    return;
  size_t n = sizeof turn_x / sizeof turn_x[0];
  turn_x[0] = 30;
  turn_y[0] = 30;
  for (size_t i = 1; i < n; i++) {
    double mid = turn_heading(((double)i - 0.5) * 1e-3);
    turn_x[i] = turn_x[i - 1] + 1.5 * cos(mid) * 1e-3;
    turn_y[i] = turn_y[i - 1] + 1.5 * sin(mid) * 1e-3;
  }
  turn_ready = 1;
}

static truth truth_at(int c, double t) {
  truth r = {0, 0, 0, 0, 0};
  if (t < 0)
    t = 0;
  switch (c) {
  case CASE_CIRCLE: { /* radius 5 m at 2 m/s */
    double a = 0.4 * t;
    r.x = 10 + 5 * cos(a);
    r.y = -5 + 5 * sin(a);
    r.vx = -2 * sin(a);
    r.vy = 2 * cos(a);
    r.theta = wrap(a + PI / 2);
    break;
  }
  case CASE_LINE:
    r.x = -20 + 1.5 * t;
    r.y = 3 + 0.5 * t;
    r.vx = 1.5;
    r.vy = 0.5;
    r.theta = atan2(0.5, 1.5);
    break;
  case CASE_REVERSAL: { /* 0..10 m and back at 2 m/s, turning round on the spot */
    double p = fmod(t, 10.0);
    r.x = p < 5 ? 2 * p : 20 - 2 * p;
    r.vx = p < 5 ? 2 : -2;
    r.theta = p < 5 ? 0 : PI;
    break;
  }
  default: {
    double f = t * 1000.0;
    size_t i = (size_t)f;
    double u = f - (double)i;
    r.x = turn_x[i] + u * (turn_x[i + 1] - turn_x[i]);
    r.y = turn_y[i] + u * (turn_y[i + 1] - turn_y[i]);
    r.theta = wrap(turn_heading(t));
    r.vx = 1.5 * cos(r.theta);
    r.vy = 1.5 * sin(r.theta);
    break;
  }
  }
  return r;
}

/* Quantized as on the wire (PROTOCOL.md section 3). */
static proto_pose quantize(steer_id id, truth s) {
  proto_pose p;
  double q = round(s.theta * 32768.0 / PI);
  if (q >= 32768)
    q = -32768;
  p.id = id;
  p.x = (float)(round(s.x * 100) / 100);
  p.y = (float)(round(s.y * 100) / 100);
  p.theta = (float)(q * PI / 32768.0);
  p.vx = (float)(round(s.vx * 100) / 100);
  p.vy = (float)(round(s.vy * 100) / 100);
  return p;
}

/* ---- seeded RNG (splitmix64) ------------------------------------------------- */

static uint64_t rng_state;
static double rng_uniform(void) { /* [0, 1) */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- the simulation ---------------------------------------------------------- */

typedef struct sim_cfg {
  double loss;           /* probability a frame is lost */
  double jitter_ms;      /* latency 100 ms +- this, uniform */
  double jitter_ms_late; /* from switch_us on */
  int64_t switch_us;     /* server time */
  uint64_t seed;
} sim_cfg;

typedef struct sim_result {
  double mean[CASE_COUNT], p99[CASE_COUNT], max[CASE_COUNT]; /* m */
  double th_mean[CASE_COUNT], th_p99[CASE_COUNT];            /* rad */
  double delay_ms_at_switch;
  double max_delay_step_us;                /* per advance */
  double min_render_step, max_render_step; /* render us per local us */
  int render_backwards;
  long heap_change; /* mallinfo2 in-use bytes, during the run */
  steerd_interp_stats st;
} sim_result;

typedef struct packet {
  int64_t server_us, arrival_us;
  int64_t state_us; /* no_visible_pop: the true time of the state it carries */
} packet;

static packet packets[MAX_FRAMES];
static double errs[CASE_COUNT][MAX_RENDERS], th_errs[CASE_COUNT][MAX_RENDERS];

/* Packets in the order they arrive (an insertion sort: stable, so packets
 * arriving in the same microsecond keep the order they were sent in). */
static void sort_by_arrival(packet *p, size_t n) {
  for (size_t i = 1; i < n; i++)
    for (size_t k = i; k > 0 && p[k].arrival_us < p[k - 1].arrival_us; k--) {
      packet t = p[k];
      p[k] = p[k - 1];
      p[k - 1] = t;
    }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double mean_of(const double *v, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += v[i];
  return n ? s / (double)n : 0;
}

static double p99_of(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n ? v[(size_t)floor(0.99 * (double)(n - 1))] : 0;
}

static void run_sim(const sim_cfg *sc, sim_result *res) {
  turn_prepare();
  memset(res, 0, sizeof *res);
  rng_state = sc->seed;

  /* The snapshots that get through, in arrival order; a part older than one
   * already received is dropped, as ENet's sequenced channel does. */
  size_t np = 0;
  for (int64_t k = 0; k < MAX_FRAMES; k++) {
    int64_t st = k * SNAP_US;
    double j = st >= sc->switch_us ? sc->jitter_ms_late : sc->jitter_ms;
    double lat = 100.0 + (2 * rng_uniform() - 1) * j; /* ms */
    int lost = rng_uniform() < sc->loss;
    if (k == 0)
      lost = 0;
    if (lost)
      continue;
    packets[np].server_us = st;
    packets[np].arrival_us = st + TRUE_OFFSET_US + (int64_t)llround(lat * 1000.0);
    np++;
  }
  sort_by_arrival(packets, np);

  steerd_interp_config cfg = steerd_interp_default_config();
  cfg.max_agents = 16;
  steerd_interp *it = steerd_interp_create(&cfg);
  ck_assert_ptr_nonnull(it);

  struct mallinfo2 before = mallinfo2();
  size_t next = 0, n = 0;
  int64_t newest = -1, prev_render = 0, prev_local = 0;
  double prev_delay = 0;
  int have_prev = 0;
  res->min_render_step = 1e9;
  int64_t end_local = TRUE_OFFSET_US + (int64_t)SIM_SECONDS * 1000000 - 200000;
  for (int64_t f = 0;; f++) {
    int64_t local = TRUE_OFFSET_US + f * 1000000 / 60;
    if (local > end_local)
      break;
    for (; next < np && packets[next].arrival_us <= local; next++) {
      int64_t st = packets[next].server_us;
      if (st < newest)
        continue;
      newest = st;
      proto_pose poses[CASE_COUNT];
      for (int c = 0; c < CASE_COUNT; c++)
        poses[c] = quantize((steer_id)(c + 1), truth_at(c, (double)st * 1e-6));
      ck_assert_int_eq(steerd_interp_push(it, (uint64_t)packets[next].arrival_us, (uint64_t)(st / SNAP_US),
                                          (uint64_t)st, poses, CASE_COUNT, 1),
                       0);
    }
    int64_t render;
    int rc = steerd_interp_advance(it, (uint64_t)local, &render);
    if (rc == STEERD_INTERP_ENODATA)
      continue;
    ck_assert_int_eq(rc, 0);
    steerd_interp_stats st;
    steerd_interp_get_stats(it, &st);
    if (have_prev) {
      double dl = (double)(local - prev_local);
      double step = (double)(render - prev_render) / dl;
      if (render < prev_render)
        res->render_backwards = 1;
      if (step < res->min_render_step)
        res->min_render_step = step;
      if (step > res->max_render_step)
        res->max_render_step = step;
      double dd = fabs(st.delay_ms - prev_delay) * 1000.0;
      if (dd > res->max_delay_step_us)
        res->max_delay_step_us = dd;
    }
    if (render < sc->switch_us)
      res->delay_ms_at_switch = st.delay_ms;
    have_prev = 1;
    prev_render = render;
    prev_local = local;
    prev_delay = st.delay_ms;
    if (local - TRUE_OFFSET_US < WARMUP_US)
      continue;
    for (int c = 0; c < CASE_COUNT; c++) {
      steerd_interp_state s;
      ck_assert_int_eq(steerd_interp_sample(it, (steer_id)(c + 1), &s), 0);
      truth t = truth_at(c, (double)render * 1e-6);
      errs[c][n] = hypot(s.x - t.x, s.y - t.y);
      th_errs[c][n] = fabs(wrap(s.theta - t.theta));
    }
    n++;
  }
  struct mallinfo2 after = mallinfo2();
  res->heap_change = (long)after.uordblks - (long)before.uordblks;
  steerd_interp_get_stats(it, &res->st);
  steerd_interp_destroy(it);

  ck_assert_uint_gt(n, 1000);
  for (int c = 0; c < CASE_COUNT; c++) {
    res->mean[c] = mean_of(errs[c], n);
    res->th_mean[c] = mean_of(th_errs[c], n);
    res->p99[c] = p99_of(errs[c], n);
    res->max[c] = errs[c][n - 1];
    res->th_p99[c] = p99_of(th_errs[c], n);
  }
}

static void print_result(const char *label, const sim_result *r) {
  printf(
      "interp %s: delay %.1f ms, jitter %.1f ms, offset %.3f ms, frames %llu expected %llu missed %llu, "
      "age mean %.1f max %.1f ms, underruns %llu (%.1f ms), extrapolated samples %llu (%.1f ms), held %llu\n",
      label, r->st.delay_ms, r->st.jitter_ms, r->st.offset_ms - (double)TRUE_OFFSET_US / 1000.0,
      (unsigned long long)r->st.frames, (unsigned long long)r->st.frames_expected,
      (unsigned long long)r->st.frames_missed, r->st.age_mean_ms, r->st.age_max_ms,
      (unsigned long long)r->st.underruns, r->st.underrun_ms,
      (unsigned long long)r->st.samples[STEERD_INTERP_MODE_EXTRAPOLATE], r->st.extrapolated_ms,
      (unsigned long long)r->st.samples[STEERD_INTERP_MODE_HOLD_NEWEST]);
  for (int c = 0; c < CASE_COUNT; c++)
    printf("  %-15s position mean %6.2f cm  p99 %6.2f cm  max %6.2f cm   theta mean %.4f p99 %.4f rad\n",
           case_names[c], r->mean[c] * 100, r->p99[c] * 100, r->max[c] * 100, r->th_mean[c], r->th_p99[c]);
}

static void check_accuracy(const sim_result *r) {
  for (int c = 0; c < CASE_COUNT; c++) {
    if (c == CASE_REVERSAL) {
      /* A reversal inside a snapshot interval: the Hermite curve through the
       * two states (v = +2 and -2 m/s) misses the turning point by up to
       * 2.5 cm, and an extrapolation over a late frame runs on past it at
       * 2 m/s: a 40 ms overshoot is 8 cm out and 8 cm back, so 16 cm, and a
       * 100 ms gap (a lost frame) can cost 20 cm plus. Theta flips by pi
       * in one tick: only its mean is bounded. */
      ck_assert_double_le(r->mean[c], 0.05);
      ck_assert_double_le(r->p99[c], 0.30);
      ck_assert_double_le(r->th_mean[c], 0.1);
      continue;
    }
    ck_assert_double_le(r->mean[c], 0.05);
    ck_assert_double_le(r->p99[c], 0.20);
    /* What we measure is the wire's quantization (at most 0.71 cm): guard it. */
    ck_assert_double_le(r->mean[c], 0.01);
    ck_assert_double_le(r->p99[c], 0.02);
    ck_assert_double_le(r->th_mean[c], 0.01);
    ck_assert_double_le(r->th_p99[c], 0.05);
  }
  ck_assert(!r->render_backwards);
  /* The least-delayed snapshot came 80 ms (+ at most 40/100ths of the 40 ms spread) after it was sent. */
  ck_assert_double_le(fabs(r->st.offset_ms - ((double)TRUE_OFFSET_US / 1000.0 + 80.0)), 3.0);
  ck_assert_int_eq(r->heap_change, 0);
}

START_TEST(accuracy_without_loss) {
  sim_cfg sc = {0.0, 20.0, 20.0, INT64_MAX, 1};
  sim_result r;
  run_sim(&sc, &r);
  print_result("0% loss, 100 +- 20 ms", &r);
  check_accuracy(&r);
  ck_assert_uint_eq(r.st.frames_missed, 0);
  ck_assert_uint_eq(r.st.underruns, 0);
}
END_TEST

START_TEST(accuracy_with_loss) {
  for (uint64_t seed = 1; seed <= 3; seed++) {
    sim_cfg sc = {0.05, 20.0, 20.0, INT64_MAX, seed};
    sim_result r;
    run_sim(&sc, &r);
    char label[64];
    snprintf(label, sizeof label, "5%% loss, 100 +- 20 ms, seed %llu", (unsigned long long)seed);
    print_result(label, &r);
    check_accuracy(&r);
    /* Loss by the schedule: about 5 % of the frames. */
    double loss = (double)r.st.frames_missed / (double)r.st.frames_expected;
    ck_assert_double_ge(loss, 0.03);
    ck_assert_double_le(loss, 0.07);
  }
}
END_TEST

/* Jitter goes from +-5 ms to +-60 ms after 20 s: the delay grows from the
 * 100 ms floor, by at most delay_slew_up per local microsecond, and the render
 * clock never jumps or runs backwards. */
START_TEST(delay_adapts_to_jitter) {
  sim_cfg sc = {0.0, 5.0, 60.0, 20000000, 7};
  sim_result r;
  run_sim(&sc, &r);
  print_result("jitter 5 -> 60 ms at 20 s", &r);
  steerd_interp_config cfg = steerd_interp_default_config();
  ck_assert_double_eq_tol(r.delay_ms_at_switch, cfg.min_delay_us / 1000.0, 0.5);
  /* Target 3 x jitter + 50 ms; the RFC 3550 jitter of +-60 ms uniform is about 35 to 40 ms. */
  ck_assert_double_ge(r.st.delay_ms, 130.0);
  ck_assert_double_le(r.max_delay_step_us, cfg.delay_slew_up * 1e6 / 60 + 1);
  ck_assert(!r.render_backwards);
  ck_assert_double_ge(r.min_render_step, 1 - cfg.delay_slew_up - cfg.offset_slew - 0.001);
  ck_assert_double_le(r.max_render_step, 1 + cfg.delay_slew_down + cfg.offset_slew + 0.001);
  ck_assert_int_eq(r.heap_change, 0);
}
END_TEST

/* ---- no visible pop ------------------------------------------------------------ */

/* A server of 30 ticks and 20 snapshots per second (PROTOCOL.md section 7.5):
 * the snapshot of deadline j carries tick floor(1.5 j) and, as server_time_us,
 * that tick's time floor(T * 1e6 / 30) (section 3), and leaves right after the
 * tick ran. An NPC on a circle of radius 5 m at 3 m/s; rendered at 60 Hz after
 * 100 +- 20 ms of latency and seeded loss. "No visible pop": the largest jump of
 * the rendered NPC from one frame to the next is at most twice what the NPC
 * truly moved between the two render times. stamp_deadline: the snapshots say
 * their send deadline j * 50 000 us instead (what the server did before), with
 * the positions of the tick: the measure must see the difference. */
#define POP_TICK_RATE 30
#define POP_SPEED     3.0 /* m/s */
#define POP_RADIUS    5.0 /* m */

static void pop_truth(double t, double *x, double *y, double *vx, double *vy, double *theta) {
  double a = POP_SPEED / POP_RADIUS * t;
  *x = POP_RADIUS * cos(a);
  *y = POP_RADIUS * sin(a);
  *vx = -POP_SPEED * sin(a);
  *vy = POP_SPEED * cos(a);
  *theta = wrap(a + PI / 2);
}

typedef struct pop_result {
  double max_ratio;   /* largest jump / true motion over the measured frames */
  double max_jump_cm; /* largest jump */
  double true_cm;     /* true motion in that frame */
  uint64_t frames;
} pop_result;

static void run_pop(double loss, uint64_t seed, int stamp_deadline, pop_result *res) {
  memset(res, 0, sizeof *res);
  rng_state = seed;
  size_t np = 0;
  for (int64_t j = 1; j < MAX_FRAMES; j++) {
    int64_t deadline = j * SNAP_US;
    int64_t tick = j * POP_TICK_RATE / 20;
    int64_t tick_us = tick * 1000000 / POP_TICK_RATE;
    double lat = 100.0 + (2 * rng_uniform() - 1) * 20.0;
    int lost = j > 1 && rng_uniform() < loss;
    if (lost)
      continue;
    packets[np].server_us = stamp_deadline ? deadline : tick_us;
    packets[np].state_us = tick_us;
    /* sent right after the tick ran (before: at the deadline) */
    packets[np].arrival_us = packets[np].server_us + TRUE_OFFSET_US + (int64_t)llround(lat * 1000.0);
    np++;
  }
  sort_by_arrival(packets, np);

  steerd_interp_config cfg = steerd_interp_default_config();
  cfg.max_agents = 4;
  steerd_interp *it = steerd_interp_create(&cfg);
  ck_assert_ptr_nonnull(it);
  size_t next = 0;
  int64_t newest = -1;
  int have_prev = 0;
  double px = 0, py = 0, ptx = 0, pty = 0;
  int64_t end_local = TRUE_OFFSET_US + (int64_t)SIM_SECONDS * 1000000 - 200000;
  for (int64_t f = 0;; f++) {
    int64_t local = TRUE_OFFSET_US + f * 1000000 / 60;
    if (local > end_local)
      break;
    for (; next < np && packets[next].arrival_us <= local; next++) {
      int64_t st = packets[next].server_us;
      if (st <= newest)
        continue;
      newest = st;
      truth t;
      pop_truth((double)packets[next].state_us * 1e-6, &t.x, &t.y, &t.vx, &t.vy, &t.theta);
      proto_pose p = quantize(1, t);
      ck_assert_int_eq(steerd_interp_push(it, (uint64_t)packets[next].arrival_us, (uint64_t)st / 33333,
                                          (uint64_t)st, &p, 1, 1),
                       0);
    }
    int64_t render;
    int rc = steerd_interp_advance(it, (uint64_t)local, &render);
    if (rc == STEERD_INTERP_ENODATA)
      continue;
    steerd_interp_state s;
    ck_assert_int_eq(steerd_interp_sample(it, 1, &s), 0);
    double tx, ty, tvx, tvy, tth;
    pop_truth((double)render * 1e-6, &tx, &ty, &tvx, &tvy, &tth);
    if (have_prev && local - TRUE_OFFSET_US >= WARMUP_US) {
      double jump = hypot(s.x - px, s.y - py), moved = hypot(tx - ptx, ty - pty);
      res->frames++;
      if (moved > 0 && jump / moved > res->max_ratio) {
        res->max_ratio = jump / moved;
        res->max_jump_cm = jump * 100;
        res->true_cm = moved * 100;
      }
    }
    have_prev = 1;
    px = s.x;
    py = s.y;
    ptx = tx;
    pty = ty;
  }
  steerd_interp_destroy(it);
}

START_TEST(no_visible_pop) {
  static const double losses[] = {0.0, 0.05};
  for (size_t l = 0; l < 2; l++)
    for (uint64_t seed = 1; seed <= 3; seed++) {
      pop_result tick_time, deadline;
      run_pop(losses[l], seed, 0, &tick_time);
      run_pop(losses[l], seed, 1, &deadline);
      printf("pop %.0f %% loss, seed %llu: tick times: largest jump %.2f x the true motion (%.2f cm for %.2f "
             "cm); deadline times: %.2f x (%.2f cm for %.2f cm)\n",
             losses[l] * 100, (unsigned long long)seed, tick_time.max_ratio, tick_time.max_jump_cm,
             tick_time.true_cm, deadline.max_ratio, deadline.max_jump_cm, deadline.true_cm);
      ck_assert_uint_gt(tick_time.frames, 3000);
      /* The promise: a frame jumps at most 2x the true motion. The guard: measured 1.10-1.13 x;
       * the deadline stamps give 1.59-1.87 x (a 3 m/s NPC rendered at 2 and
       * 4 m/s by turns), which the promise alone would let through. */
      ck_assert_double_le(tick_time.max_ratio, 2.0);
      ck_assert_double_le(tick_time.max_ratio, 1.35);
      ck_assert_double_gt(deadline.max_ratio, 1.35);
    }
}
END_TEST

/* ---- small cases ------------------------------------------------------------- */

static proto_pose pose(steer_id id, double x, double y, double theta, double vx, double vy) {
  proto_pose p = {id, (float)x, (float)y, (float)theta, (float)vx, (float)vy};
  return p;
}

static steerd_interp *make(void) {
  steerd_interp_config cfg = steerd_interp_default_config();
  cfg.max_agents = 4;
  cfg.samples_per_agent = 8;
  steerd_interp *it = steerd_interp_create(&cfg);
  ck_assert_ptr_nonnull(it);
  return it;
}

/* Snapshots stop: extrapolation with the last velocity for 250 ms, then hold. */
START_TEST(extrapolation_is_bounded) {
  steerd_interp *it = make();
  int64_t render;
  for (int k = 0; k <= 20; k++) {
    proto_pose p = pose(1, 0.1 * k, 0, 0, 2.0, 0);
    uint64_t st = (uint64_t)k * 50000;
    ck_assert_int_eq(steerd_interp_push(it, st + 1000000, (uint64_t)k, st, &p, 1, 1), 0);
    ck_assert_int_eq(steerd_interp_advance(it, st + 1000000, &render), 0);
  }
  /* Newest sample: x = 2.0 at 1.0 s; render = server now - 100 ms. */
  steerd_interp_state s;
  ck_assert_int_eq(steerd_interp_sample_at(it, 1, 1000000 + 100000, &s), 0);
  ck_assert_int_eq(s.mode, STEERD_INTERP_MODE_EXTRAPOLATE);
  ck_assert_double_eq_tol(s.x, 2.0 + 2.0 * 0.1, 1e-5);
  ck_assert_int_eq(steerd_interp_sample_at(it, 1, 1000000 + 250000, &s), 0);
  ck_assert_double_eq_tol(s.x, 2.5, 1e-5);
  ck_assert_int_eq(steerd_interp_sample_at(it, 1, 1000000 + 900000, &s), 0);
  ck_assert_int_eq(s.mode, STEERD_INTERP_MODE_HOLD_NEWEST);
  ck_assert_double_eq_tol(s.x, 2.5, 1e-5);
  ck_assert_double_eq_tol(s.vx, 0, 1e-9);

  /* The same through the render clock: 1 s of local time with no snapshot. */
  uint64_t now = 2000000;
  double last_x = 0;
  for (int f = 0; f <= 60; f++, now += 1000000 / 60) {
    ck_assert_int_eq(steerd_interp_advance(it, now, &render), 0);
    ck_assert_int_eq(steerd_interp_sample(it, 1, &s), 0);
    ck_assert_double_le(s.x, 2.5 + 1e-5);
    ck_assert_double_ge(s.x, last_x - 1e-9);
    last_x = s.x;
  }
  ck_assert_int_eq(s.mode, STEERD_INTERP_MODE_HOLD_NEWEST);
  steerd_interp_stats st;
  steerd_interp_get_stats(it, &st);
  ck_assert_uint_eq(st.underruns, 1);
  ck_assert_uint_gt(st.samples[STEERD_INTERP_MODE_EXTRAPOLATE], 5);
  ck_assert_uint_gt(st.samples[STEERD_INTERP_MODE_HOLD_NEWEST], 30);
  ck_assert_double_gt(st.underrun_ms, 800);
  ck_assert_double_gt(st.age_max_ms, 900);
  /* Before the oldest sample: hold it. */
  ck_assert_int_eq(steerd_interp_sample_at(it, 1, 0, &s), 0);
  ck_assert_int_eq(s.mode, STEERD_INTERP_MODE_HOLD_OLDEST);
  ck_assert_double_eq_tol(s.x, 0.1 * (20 - 7), 1e-5); /* the ring keeps 8 samples */
  steerd_interp_destroy(it);
}
END_TEST

START_TEST(theta_takes_the_shorter_arc) {
  steerd_interp *it = make();
  proto_pose a = pose(1, 0, 0, 3.0, 0, 0), b = pose(1, 0, 0, -3.0, 0, 0);
  ck_assert_int_eq(steerd_interp_push(it, 100, 0, 0, &a, 1, 1), 0);
  ck_assert_int_eq(steerd_interp_push(it, 50100, 1, 50000, &b, 1, 1), 0);
  steerd_interp_state s;
  ck_assert_int_eq(steerd_interp_sample_at(it, 1, 25000, &s), 0);
  ck_assert_double_eq_tol(fabs(s.theta), PI, 1e-5); /* through pi, not 0 */
  ck_assert_int_eq(steerd_interp_sample_at(it, 1, 12500, &s), 0);
  ck_assert_double_eq_tol(s.theta, wrap(3.0 + (2 * PI - 6.0) / 4), 1e-5);
  steerd_interp_destroy(it);
}
END_TEST

START_TEST(hermite_uses_velocity_and_falls_back_to_linear) {
  steerd_interp *it = make();
  /* A reversal: the Hermite curve bulges past the chord towards the turning point. */
  proto_pose a = pose(1, 0, 0, 0, 2, 0), b = pose(1, 0, 0, 0, -2, 0);
  /* Velocities against the motion (x goes +5 cm in 50 ms while v says -1 m/s): linear. */
  proto_pose c = pose(2, 0, 0, 0, -1, 0), d = pose(2, 0.05, 0, 0, -1, 0);
  proto_pose f0[2] = {a, c}, f1[2] = {b, d};
  ck_assert_int_eq(steerd_interp_push(it, 100, 0, 0, f0, 2, 1), 0);
  ck_assert_int_eq(steerd_interp_push(it, 50100, 1, 50000, f1, 2, 1), 0);
  steerd_interp_state s;
  ck_assert_int_eq(steerd_interp_sample_at(it, 1, 25000, &s), 0);
  ck_assert_double_eq_tol(s.x, 0.05 * 2 * 0.25, 1e-6); /* h (h10 - h11) v at s = 1/2 */
  ck_assert_int_eq(steerd_interp_sample_at(it, 2, 25000, &s), 0);
  ck_assert_double_eq_tol(s.x, 0.025, 1e-6);
  ck_assert_double_eq_tol(s.vx, -1, 1e-6);
  steerd_interp_destroy(it);
}
END_TEST

START_TEST(agents_come_and_go) {
  steerd_interp *it = make(); /* 4 agents */
  proto_pose f[5] = {pose(10, 0, 0, 0, 0, 0), pose(11, 1, 0, 0, 0, 0), pose(12, 2, 0, 0, 0, 0),
                     pose(13, 3, 0, 0, 0, 0), pose(14, 4, 0, 0, 0, 0)};
  ck_assert_int_eq(steerd_interp_push(it, 1000, 1, 0, f, 5, 1), STEERD_INTERP_EFULL);
  ck_assert_uint_eq(steerd_interp_count(it), 4);
  steerd_interp_stats st;
  steerd_interp_get_stats(it, &st);
  ck_assert_uint_eq(st.agents_full, 1);

  /* A partial frame (one part) without agent 11: kept. */
  ck_assert_int_eq(steerd_interp_push(it, 51000, 2, 50000, f, 1, 0), 0);
  ck_assert_uint_eq(steerd_interp_count(it), 4);
  /* A complete frame without 11 at 100 ms: removed once the render time gets there. */
  proto_pose g[3] = {f[0], f[2], f[3]};
  ck_assert_int_eq(steerd_interp_push(it, 101000, 3, 100000, g, 3, 1), 0);
  ck_assert_uint_eq(steerd_interp_count(it), 4);
  int64_t render;
  ck_assert_int_eq(steerd_interp_advance(it, 101000, &render), 0);
  ck_assert_int_lt(render, 100000);
  ck_assert_uint_eq(steerd_interp_count(it), 4);
  steerd_interp_state s;
  ck_assert_int_eq(steerd_interp_sample(it, 11, &s), 0);
  ck_assert_int_eq(steerd_interp_advance(it, 300000, &render), 0);
  ck_assert_int_ge(render, 100000);
  ck_assert_uint_eq(steerd_interp_count(it), 3);
  ck_assert_int_eq(steerd_interp_sample(it, 11, &s), STEERD_INTERP_ENOENT);

  /* Despawned at tick 5: gone now, and a snapshot of tick 4 does not bring it back. */
  steerd_interp_despawn(it, 12, 5);
  ck_assert_uint_eq(steerd_interp_count(it), 2);
  ck_assert_int_eq(steerd_interp_push(it, 151000, 4, 150000, g, 3, 1), 0);
  ck_assert_uint_eq(steerd_interp_count(it), 2);
  ck_assert_int_eq(steerd_interp_sample_at(it, 12, 0, &s), STEERD_INTERP_ENOENT);
  /* Room again: agent 14 comes in. Every id is still found after the table shuffles. */
  ck_assert_int_eq(steerd_interp_push(it, 201000, 6, 200000, &f[4], 1, 0), 0);
  ck_assert_uint_eq(steerd_interp_count(it), 3);
  for (uint32_t i = 0; i < steerd_interp_count(it); i++)
    ck_assert_int_eq(steerd_interp_sample_at(it, steerd_interp_id_at(it, i), 0, &s), 0);
  steerd_interp_destroy(it);
}
END_TEST

/* Many ids through a small table: inserts and removals keep every lookup right. */
START_TEST(id_table_churn) {
  steerd_interp_config cfg = steerd_interp_default_config();
  cfg.max_agents = 64;
  cfg.samples_per_agent = 2;
  steerd_interp *it = steerd_interp_create(&cfg);
  ck_assert_ptr_nonnull(it);
  static uint8_t live[4096];
  memset(live, 0, sizeof live);
  rng_state = 99;
  uint32_t nlive = 0;
  for (int step = 0; step < 20000; step++) {
    steer_id id = 1 + (steer_id)(rng_uniform() * 4000);
    if (live[id]) {
      steerd_interp_despawn(it, id, 0);
      live[id] = 0;
      nlive--;
    } else if (nlive < 64) {
      proto_pose p = pose(id, 1, 2, 0, 0, 0);
      ck_assert_int_eq(steerd_interp_push(it, (uint64_t)step + 1, 1, 0, &p, 1, 0), 0);
      live[id] = 1;
      nlive++;
    }
    ck_assert_uint_eq(steerd_interp_count(it), nlive);
  }
  steerd_interp_state s;
  for (steer_id id = 1; id < 4001; id++)
    ck_assert_int_eq(steerd_interp_sample_at(it, id, 0, &s) == 0, live[id]);
  steerd_interp_destroy(it);
}
END_TEST

START_TEST(bad_input) {
  steerd_interp_config cfg = steerd_interp_default_config();
  cfg.samples_per_agent = 1;
  ck_assert_ptr_null(steerd_interp_create(&cfg));
  ck_assert_ptr_null(steerd_interp_create(NULL));
  steerd_interp_destroy(NULL);
  steerd_interp *it = make();
  int64_t r;
  ck_assert_int_eq(steerd_interp_advance(it, 5, &r), STEERD_INTERP_ENODATA);
  steerd_interp_state s;
  ck_assert_int_eq(steerd_interp_sample(it, 1, &s), STEERD_INTERP_ENODATA);
  proto_pose p = pose(1, NAN, 0, 0, 0, 0);
  ck_assert_int_eq(steerd_interp_push(it, 10, 1, 0, &p, 1, 0), 0);
  ck_assert_uint_eq(steerd_interp_count(it), 0);
  ck_assert_int_eq(steerd_interp_push(it, 10, 1, 0, NULL, 1, 0), STEERD_INTERP_EINVAL);
  ck_assert_str_eq(steerd_interp_strerror(STEERD_INTERP_ENOENT), "no such agent");
  steerd_interp_destroy(it);
}
END_TEST

static Suite *interp_suite(void) {
  Suite *s = suite_create("interp");
  TCase *tc = check_tcase(s, "interp", 60);
  tcase_add_test(tc, accuracy_without_loss);
  tcase_add_test(tc, accuracy_with_loss);
  tcase_add_test(tc, delay_adapts_to_jitter);
  tcase_add_test(tc, no_visible_pop);
  tcase_add_test(tc, extrapolation_is_bounded);
  tcase_add_test(tc, theta_takes_the_shorter_arc);
  tcase_add_test(tc, hermite_uses_velocity_and_falls_back_to_linear);
  tcase_add_test(tc, agents_come_and_go);
  tcase_add_test(tc, id_table_churn);
  tcase_add_test(tc, bad_input);
  return s;
}

int main(void) { return check_run(interp_suite()); }

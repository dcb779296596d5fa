/* bench_world.c: ns per agent-step of the movement core.
 *
 *   dense: N agents on a jittered 5 m grid (field side 5*ceil(sqrt N)), radius
 *          1.5 m, max_speed 2 m/s, dt 0.05 s; each arrives at a random goal and
 *          draws a new one on arrival; separation from at most 8 neighbours
 *          within 15 m. The scenario the crowd libraries are measured on.
 *   avoid: dense with predictive avoidance (time to collision, 10 neighbours
 *          within 15 m) instead of separation, and walls on: the field's four
 *          sides are wall polylines, so every move is swept against the map.
 *   obstacles: avoid plus 1 000 obstacles over the field (pillars, crates,
 *          L-shaped blocks and wall pieces); goals inside one are redrawn.
 *   floor: the least a dense step can cost (run_floor); not part of "all".
 *   mixed: a third patrolling (ping-pong paths, arc cornering, heading model), a
 *          third arriving at random goals, a third wandering; no neighbours.
 *
 * Each row: median (and min) over RUNS runs of STEPS steps after WARMUP steps.
 * --hash prints each world's state hash after its runs (to stderr), to check that
 * an optimisation left the simulation bit-identical.
 * --period P sets the avoid and obstacles agents' neighbour_period (1..16, 1).
 * --threads T splits the steering pass over T threads (pool.h; 1, the default,
 * is the one-thread path); the hashes must not change with T. Use wall time
 * with T > 1 (--cpu adds up every thread's time). --min N skips sizes below N.
 * usage: bench_world [dense|avoid|obstacles|mixed|floor|all] [--min N] [--max N] [--runs R] [--steps S]
 * [--period P]
 * --scalar turns the vector batches off (the reference path; same hashes).
 * --lanes4 keeps the lean batches (server/core/batch.c) at four lanes where
 * the processor has AVX for eight (same hashes).
 * --split prints (stderr) the CPU time of the loop thread and of the pool's
 * other threads over the timed runs, the serial part of the step derived from
 * them (what only the loop thread runs) and Amdahl's bound for two cores: the
 * scaling that does not need free cores to measure.
 *        [--threads T] [--scalar] [--cpu] [--hash] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grid.h"
#include "pool.h"
#include "world.h"
#include "world_internal.h" /* world_batch_set_avx (--lanes4) */

#define DT       0.05f
#define WARMUP   20
#define MAX_RUNS 32

static int print_hash;
static steer_pool *pool; /* --threads */

static int scalar_only;   /* --scalar: no vector batches (steer_world_set_simd) */
static int use_cpu_clock; /* --cpu: this process's CPU time, not wall time (a shared machine) */
static int print_split;   /* --split: CPU time of the loop thread against the pool's other threads */

static double clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(use_cpu_clock ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct scenario {
  steer_world *w;
  steer_rng rng;
  float side; /* m */
  uint64_t retargets;
} scenario;

static vec2 random_goal(scenario *s) { return steer_rng_point(&s->rng, 0.0f, s->side, 0.0f, s->side); }

static steer_world *make_world(uint32_t n, float side, uint32_t max_paths) {
  steer_world_config cfg = steer_default_world_config();
  cfg.max_agents = n;
  cfg.max_paths = max_paths;
  cfg.max_path_points = 8;
  cfg.max_events = n;
  cfg.min = v2(0.0f, 0.0f);
  cfg.max = v2(side, side);
  cfg.cell_size = 8.0f;
  cfg.seed = 42;
  return steer_world_create(&cfg);
}

static int setup_dense_kind(scenario *s, uint32_t n, int kind);
static int setup_dense(scenario *s, uint32_t n) { return setup_dense_kind(s, n, 0); }
static int setup_avoid(scenario *s, uint32_t n) { return setup_dense_kind(s, n, 1); }
static int setup_obstacles(scenario *s, uint32_t n) { return setup_dense_kind(s, n, 2); }
static int neighbour_period = 1;  /* --period: neighbour_period of the avoid and obstacles agents */
static int avoid_neighbours = 10; /* --neighbours: their max_neighbours */

/* 1 000 obstacles on a jittered grid over the field, added on top of the
 * agents (the world moves them out). */
static int add_obstacles(scenario *s) {
  uint32_t per = 32;
  float step = s->side / (float)per;
  uint32_t k = 0;
  for (uint32_t i = 0; i < per * per && k < 1000; i++) {
    float cx = step * ((float)(i % per) + 0.5f), cy = step * ((float)(i / per) + 0.5f);
    uint32_t id = 100 + k;
    float sz = fminf(2.0f, step * 0.2f);
    int rc;
    switch (k % 4) {
    case 0: {
      vec2 c = v2(cx, cy);
      steer_obstacle_desc o = {STEER_OBSTACLE_CIRCLE, 1, &c, sz * 0.6f};
      rc = steer_world_add_obstacle(s->w, id, &o, NULL);
      break;
    }
    case 1: {
      vec2 b[] = {{cx - sz, cy - sz * 0.5f},
                  {cx + sz, cy - sz * 0.5f},
                  {cx + sz, cy + sz * 0.5f},
                  {cx - sz, cy + sz * 0.5f}};
      steer_obstacle_desc o = {STEER_OBSTACLE_POLYGON, 4, b, 0.0f};
      rc = steer_world_add_obstacle(s->w, id, &o, NULL);
      break;
    }
    case 2: {
      vec2 l[] = {{cx - sz, cy - sz},        {cx + sz, cy - sz},
                  {cx + sz, cy - sz * 0.4f}, {cx - sz * 0.4f, cy - sz * 0.4f},
                  {cx - sz * 0.4f, cy + sz}, {cx - sz, cy + sz}};
      steer_obstacle_desc o = {STEER_OBSTACLE_POLYGON, 6, l, 0.0f};
      rc = steer_world_add_obstacle(s->w, id, &o, NULL);
      break;
    }
    default: {
      vec2 wl[] = {{cx - 2.0f * sz, cy}, {cx + 2.0f * sz, cy}};
      steer_obstacle_desc o = {STEER_OBSTACLE_WALL, 2, wl, 0.0f};
      rc = steer_world_add_obstacle(s->w, id, &o, NULL);
      break;
    }
    }
    if (rc != STEER_OK)
      return -1;
    k++;
  }
  return 0;
}

static int setup_dense_kind(scenario *s, uint32_t n, int kind) {
  uint32_t per_row = (uint32_t)ceil(sqrt((double)n));
  s->side = 5.0f * (float)per_row;
  s->w = make_world(n, s->side, 1);
  if (!s->w)
    return -1;
  steer_rng_seed(&s->rng, 7);
  steer_agent_desc d = steer_default_agent_desc();
  d.model = STEER_MODEL_DYNAMIC;
  d.limits.radius = 1.5f;
  d.limits.max_speed = 2.0f;
  d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_ARRIVE);
  d.behaviour.target.kind = STEER_TARGET_POINT;
  d.behaviour.separation_weight = 1.0f;
  d.behaviour.max_neighbours = 8;
  d.behaviour.params.separation_radius = 15.0f - 2.0f * d.limits.radius; /* query radius 15 m */
  if (kind > 0) {
    d.behaviour.separation_weight = 0.0f;
    d.behaviour.avoid_weight = 1.0f;
    d.behaviour.max_neighbours = (uint8_t)avoid_neighbours;
    d.behaviour.neighbour_period = (uint8_t)neighbour_period;
    vec2 sides[] = {{0, 0}, {s->side, 0}, {s->side, s->side}, {0, s->side}, {0, 0}};
    steer_obstacle_desc o = {STEER_OBSTACLE_WALL, 5, sides, 0.0f};
    if (steer_world_add_obstacle(s->w, 1, &o, NULL) != STEER_OK)
      return -1;
  }
  for (uint32_t i = 0; i < n; i++) {
    /* With walls the jitter keeps bodies 1.6 m or more from the sides. */
    float j = kind > 0 ? 0.9f : 1.0f;
    float x = 2.5f + 5.0f * (float)(i % per_row) + steer_rng_range(&s->rng, -j, j);
    float y = 2.5f + 5.0f * (float)(i / per_row) + steer_rng_range(&s->rng, -j, j);
    d.state.position = v2(x, y);
    d.behaviour.target.point = random_goal(s);
    if (steer_world_spawn(s->w, &d, 0, NULL) != STEER_OK)
      return -1;
  }
  if (kind == 2 && add_obstacles(s) != 0)
    return -1;
  return 0;
}

#define MIXED_PATHS 512

static int setup_mixed(scenario *s, uint32_t n) {
  uint32_t per_row = (uint32_t)ceil(sqrt((double)n));
  s->side = 5.0f * (float)per_row;
  s->w = make_world(n, s->side, MIXED_PATHS);
  if (!s->w)
    return -1;
  steer_rng_seed(&s->rng, 11);
  /* Shared patrol routes: zigzags of 5 points, 15-25 m legs. */
  int paths[MIXED_PATHS];
  vec2 starts[MIXED_PATHS], seconds[MIXED_PATHS];
  for (int p = 0; p < MIXED_PATHS; p++) {
    vec2 pts[5];
    vec2 c = steer_rng_point(&s->rng, 60.0f, s->side - 60.0f, 60.0f, s->side - 60.0f);
    if (s->side < 130.0f)
      c = v2(s->side * 0.5f, s->side * 0.5f);
    for (int k = 0; k < 5; k++)
      pts[k] = v2(c.x - 40.0f + 20.0f * (float)k, c.y + ((k & 1) ? 12.0f : -12.0f));
    for (int k = 0; k < 5; k++) {
      pts[k].x = steer_clampf(pts[k].x, 0.0f, s->side);
      pts[k].y = steer_clampf(pts[k].y, 0.0f, s->side);
    }
    paths[p] = steer_world_path_create(s->w, pts, 5, 1.0f, STEER_PATH_PINGPONG, STEER_CORNER_ARC);
    if (paths[p] < 0)
      return -1;
    starts[p] = pts[0];
    seconds[p] = pts[1];
  }
  for (uint32_t i = 0; i < n; i++) {
    steer_agent_desc d = steer_default_agent_desc();
    steer_id id;
    d.limits.max_speed = 2.0f;
    d.state.position = steer_rng_point(&s->rng, 0.0f, s->side, 0.0f, s->side);
    switch (i % 3) {
    case 0: {
      int p = (int)(i / 3) % MIXED_PATHS;
      d.model = STEER_MODEL_HEADING;
      d.limits.max_rotation = 6.0f;
      d.state.position = starts[p];
      d.state.orientation = steer_orientation_of(v2_sub(seconds[p], starts[p]));
      if (steer_world_spawn(s->w, &d, 0, &id) != STEER_OK ||
          steer_world_follow_path(s->w, id, paths[p]) != STEER_OK)
        return -1;
      break;
    }
    case 1:
      d.model = STEER_MODEL_DYNAMIC;
      d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_ARRIVE);
      d.behaviour.target.kind = STEER_TARGET_POINT;
      d.behaviour.target.point = random_goal(s);
      if (steer_world_spawn(s->w, &d, 0, NULL) != STEER_OK)
        return -1;
      break;
    default:
      d.model = STEER_MODEL_DYNAMIC;
      d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
      if (steer_world_spawn(s->w, &d, 0, NULL) != STEER_OK)
        return -1;
      break;
    }
  }
  for (int p = 0; p < MIXED_PATHS; p++)
    steer_world_path_release(s->w, paths[p]);
  return 0;
}

/* One step plus what a host does with its events: new goals on arrival. */
static void step(scenario *s) {
  steer_world_step(s->w, DT);
  uint32_t n;
  const steer_event *ev = steer_world_events(s->w, &n);
  for (uint32_t i = 0; i < n; i++) {
    if (ev[i].type != STEER_EVENT_ARRIVED)
      continue;
    steer_agent_info info;
    if (steer_world_get(s->w, ev[i].agent, &info) != STEER_OK)
      continue;
    do /* a goal inside an obstacle is refused: draw again */
      info.behaviour.target.point = random_goal(s);
    while (steer_world_set_behaviour(s->w, ev[i].agent, &info.behaviour) == STEER_EBLOCKED);
    s->retargets++;
  }
}

/* FNV-1a over the public view (ids, positions, velocities, orientations): the
 * same across versions of the core whose steer_world_hash covers more. */
static uint64_t view_hash(const steer_world *w) {
  steer_world_view v = steer_world_get_view(w);
  uint64_t h = 0xcbf29ce484222325ULL;
  const float *f[] = {v.px, v.py, v.vx, v.vy, v.theta, v.omega};
  for (uint32_t i = 0; i < v.count; i++) {
    uint32_t u[7];
    u[0] = v.id[i];
    for (int k = 0; k < 6; k++)
      memcpy(&u[k + 1], &f[k][i], sizeof(uint32_t));
    for (int k = 0; k < 7; k++)
      h = (h ^ u[k]) * 0x100000001b3ULL;
  }
  return h;
}

static void run(const char *name, uint32_t n, int (*setup)(scenario *, uint32_t), int runs, int steps) {
  scenario s;
  memset(&s, 0, sizeof(s));
  if (setup(&s, n) != 0) {
    fprintf(stderr, "bench_world: %s setup failed for N=%u\n", name, n);
    steer_world_destroy(s.w);
    exit(1);
  }
  steer_world_set_pool(s.w, pool);
  steer_world_set_simd(s.w, !scalar_only);
  for (int i = 0; i < WARMUP; i++)
    step(&s);
  double per_step[MAX_RUNS];
  steer_pool_measure(pool, print_split);
  double loop0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), all0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  for (int r = 0; r < runs; r++) {
    double t0 = now_ns();
    for (int i = 0; i < steps; i++)
      step(&s);
    per_step[r] = (now_ns() - t0) / steps;
  }
  double loop = clock_ns(CLOCK_THREAD_CPUTIME_ID) - loop0, all = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - all0;
  double in_pool = (double)steer_pool_caller_ns(pool);
  steer_pool_measure(pool, 0);
  qsort(per_step, (size_t)runs, sizeof(double), cmp_double);
  double median = per_step[runs / 2];
  printf("| %-8s | %9u | %14.1f | %14.1f | %10.3f | %9llu |\n", name, n, median / n, per_step[0] / n,
         median / 1e6, (unsigned long long)s.retargets);
  fflush(stdout);
  if (print_split) {
    /* The step's work splits into a serial part S, which the loop thread
     * runs outside the pool's runs (the events pass, the bookkeeping, the
     * host's retargeting), and a parallel part P, the runs, shared by the T
     * threads. S is measured directly (the pool adds up the loop thread's
     * CPU time inside its runs), so a busy machine does not blur it; P is
     * every thread's CPU time minus S. Amdahl's bound on two free cores is
     * (S + P) / (S + P/2). */
    uint32_t t = steer_pool_threads(pool);
    double per = (double)runs * steps * n, l = loop / per, o = (all - loop) / per;
    double serial = (loop - in_pool) / per, p = (all - (loop - in_pool)) / per;
    if (t == 1)
      fprintf(stderr, "%s %u: --split needs --threads 2 or more (one thread runs no pool)\n", name, n);
    else
      fprintf(
          stderr,
          "%s %u: CPU ns/agent-step with %u threads: loop thread %.1f (outside the pool %.1f), others %.1f; "
          "serial %.1f, parallel %.1f; serial fraction %.3f, Amdahl bound on 2 cores %.2fx\n",
          name, n, t, l, serial, o, serial, p, serial / (serial + p), (serial + p) / (serial + p / 2.0));
  }
  if (print_hash)
    fprintf(stderr, "%s %u: hash %016llx view %016llx after %llu ticks\n", name, n,
            (unsigned long long)steer_world_hash(s.w), (unsigned long long)view_hash(s.w),
            (unsigned long long)steer_world_tick(s.w));
  steer_world_destroy(s.w);
}

/* The floor: the least a dense step can cost. N agents placed as in
 * dense, moving at a constant velocity; per step only what any step must do:
 *   floor-io:  read and write the minimal per-agent state (position,
 *              velocity, orientation, rotation: 24 bytes in, 24 out);
 *   floor-knn: rebuild the grid and run the exact 8-nearest query within 15 m
 *              for every agent, seeded with its last k-th distance (the plain
 *              query: steer_grid_nearest_pos);
 *   floor-kept: the same through kept candidate lists
 *              (steer_grid_nearest_kept_idx, the path the world uses;
 *              the agents here only oscillate, so the lists hold: the
 *              re-rank's cost, few rebuilds);
 *   floor:     floor-io and floor-kept in one pass.
 * The dense step minus this is what steering, separation and the world's
 * bookkeeping cost. One thread. */
typedef struct floor_state {
  uint32_t n;
  float *px, *py, *vx, *vy, *th, *om, *hint;
  steer_grid g;
  steer_grid_lists lists; /* knn == 2: the kept candidate lists */
} floor_state;

static void floor_step(floor_state *f, int io, int knn) {
  if (knn) {
    steer_grid_build(&f->g, f->px, f->py, f->n);
    if (knn == 2)
      steer_grid_lists_track(&f->lists, &f->g, f->px, f->py, NULL, f->n, 0);
  }
  float sink = 0.0f;
  for (uint32_t i = 0; i < f->n; i++) {
    if (knn) {
      uint32_t pos[8];
      float h = f->hint[i];
      vec2 p = v2(f->px[i], f->py[i]);
      uint32_t k;
      if (knn == 2) { /* as the world queries: the answer as dense indices into the lists' records */
        uint32_t scratch[STEER_GRID_LIST];
        const uint32_t *nb;
        k = steer_grid_nearest_kept_idx(&f->g, &f->lists, i, p, 15.0f, 8, &h, 2.0f * 2.0f * DT, scratch, &nb);
        sink += k ? f->lists.rec[nb[k - 1]].x : 0.0f;
      } else {
        if (h > 0.0f) {
          float reach = sqrtf(h) + 2.0f * 2.0f * DT;
          h = reach * reach;
        }
        k = steer_grid_nearest_pos(&f->g, p, 15.0f, i, pos, 8, &h);
        sink += k ? f->g.sx[pos[k - 1]] : 0.0f;
      }
      f->hint[i] = h;
    }
    if (io) {
      float x = f->px[i], y = f->py[i], vx = f->vx[i], vy = f->vy[i];
      f->px[i] = x + vx * DT;
      f->py[i] = y + vy * DT;
      f->vx[i] = -vx;
      f->vy[i] = -vy;
      f->th[i] = f->th[i] + f->om[i] * DT;
      f->om[i] = -f->om[i];
    }
  }
  if (sink == 12345.0f) /* keeps the queries */
    fprintf(stderr, "-\n");
}

static void run_floor(uint32_t n, int runs, int steps) {
  floor_state f;
  memset(&f, 0, sizeof(f));
  f.n = n;
  uint32_t per_row = (uint32_t)ceil(sqrt((double)n));
  float side = 5.0f * (float)per_row;
  float **arr[] = {&f.px, &f.py, &f.vx, &f.vy, &f.th, &f.om, &f.hint};
  for (size_t a = 0; a < sizeof(arr) / sizeof(arr[0]); a++)
    if (!(*arr[a] = calloc(n, sizeof(float)))) {
      fprintf(stderr, "bench_world: floor: out of memory\n");
      exit(1);
    }
  if (steer_grid_init(&f.g, v2(0.0f, 0.0f), v2(side, side), 8.0f, n) != STEER_OK ||
      steer_grid_lists_init(&f.lists, n) != STEER_OK) {
    fprintf(stderr, "bench_world: floor: grid init failed\n");
    exit(1);
  }
  steer_rng rng;
  steer_rng_seed(&rng, 7);
  for (uint32_t i = 0; i < n; i++) {
    f.px[i] = 2.5f + 5.0f * (float)(i % per_row) + steer_rng_range(&rng, -1.0f, 1.0f);
    f.py[i] = 2.5f + 5.0f * (float)(i / per_row) + steer_rng_range(&rng, -1.0f, 1.0f);
    f.vx[i] = steer_rng_range(&rng, -1.4f, 1.4f); /* |v| <= 2 m/s, as the hint assumes */
    f.vy[i] = steer_rng_range(&rng, -1.4f, 1.4f);
    f.om[i] = steer_rng_range(&rng, -1.0f, 1.0f);
  }
  static const char *names[] = {"floor-io", "floor-knn", "floor-kept", "floor"};
  for (int kind = 0; kind < 4; kind++) {
    int io = kind == 0 || kind == 3, knn = kind == 1 ? 1 : kind >= 2 ? 2 : 0;
    for (int i = 0; i < WARMUP; i++)
      floor_step(&f, io, knn);
    double per_step[MAX_RUNS];
    for (int r = 0; r < runs; r++) {
      double t0 = now_ns();
      for (int i = 0; i < steps; i++)
        floor_step(&f, io, knn);
      per_step[r] = (now_ns() - t0) / steps;
    }
    qsort(per_step, (size_t)runs, sizeof(double), cmp_double);
    double median = per_step[runs / 2];
    printf("| %-8s | %9u | %14.1f | %14.1f | %10.3f | %9s |\n", names[kind], n, median / n, per_step[0] / n,
           median / 1e6, "-");
    fflush(stdout);
  }
  steer_grid_free(&f.g);
  steer_grid_lists_free(&f.lists);
  for (size_t a = 0; a < sizeof(arr) / sizeof(arr[0]); a++)
    free(*arr[a]);
}

int main(int argc, char **argv) {
  const char *which = "all";
  uint32_t min_n = 0, max_n = 1000000, threads = 1;
  int runs = 5, steps = 50;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--max") == 0 && i + 1 < argc)
      max_n = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--min") == 0 && i + 1 < argc)
      min_n = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
      steps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--neighbours") == 0 && i + 1 < argc)
      avoid_neighbours = atoi(argv[++i]);
    else if (strcmp(argv[i], "--period") == 0 && i + 1 < argc)
      neighbour_period = atoi(argv[++i]);
    else if (strcmp(argv[i], "--scalar") == 0)
      scalar_only = 1;
    else if (strcmp(argv[i], "--lanes4") == 0)
      world_batch_set_avx(0);
    else if (strcmp(argv[i], "--cpu") == 0)
      use_cpu_clock = 1;
    else if (strcmp(argv[i], "--hash") == 0)
      print_hash = 1;
    else if (strcmp(argv[i], "--split") == 0)
      print_split = 1;
    else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf(
          "usage: bench_world [dense|avoid|obstacles|mixed|floor|all] [--min N] [--max N] [--runs R] "
          "[--steps S] "
          "[--neighbours K] [--period P] [--threads T] [--scalar] [--lanes4] [--cpu] [--hash] [--split]\n");
      return 0;
    } else
      which = argv[i];
  }
  if (runs < 1 || runs > MAX_RUNS || steps < 1) {
    fprintf(stderr, "bench_world: runs must be 1..%d and steps >= 1\n", MAX_RUNS);
    return 2;
  }
  pool = steer_pool_create(threads);
  if (!pool) {
    fprintf(stderr, "bench_world: no pool of %u threads (1..%u)\n", threads, STEER_POOL_MAX_THREADS);
    return 2;
  }
  printf("movement core, %u thread%s, dt %.2f s; median (min) over %d runs of %d steps after %d warm-up\n\n",
         threads, threads == 1 ? "" : "s", DT, runs, steps, WARMUP);
  printf("| scenario | agents | ns/agent-step (median) | ns/agent-step (min) | ms/step | retargets |\n");
  printf("|---|---:|---:|---:|---:|---:|\n");
  static const uint32_t dense_n[] = {1000, 10000, 100000};
  static const uint32_t mixed_n[] = {1000, 10000, 100000, 1000000};
  /* dense and the floor at mixed's sizes, up to 1 000 000, so the three compare size for size */
  if (strcmp(which, "all") == 0 || strcmp(which, "dense") == 0)
    for (size_t i = 0; i < sizeof(mixed_n) / sizeof(mixed_n[0]); i++)
      if (mixed_n[i] >= min_n && mixed_n[i] <= max_n)
        run("dense", mixed_n[i], setup_dense, runs, steps);
  if (strcmp(which, "floor") == 0) /* not in "all": a reference, not a scenario */
    for (size_t i = 0; i < sizeof(mixed_n) / sizeof(mixed_n[0]); i++)
      if (mixed_n[i] >= min_n && mixed_n[i] <= max_n)
        run_floor(mixed_n[i], runs, steps);
  if (strcmp(which, "all") == 0 || strcmp(which, "avoid") == 0)
    for (size_t i = 0; i < sizeof(dense_n) / sizeof(dense_n[0]); i++)
      if (dense_n[i] >= min_n && dense_n[i] <= max_n)
        run("avoid", dense_n[i], setup_avoid, runs, steps);
  if (strcmp(which, "all") == 0 || strcmp(which, "obstacles") == 0)
    for (size_t i = 0; i < sizeof(dense_n) / sizeof(dense_n[0]); i++)
      if (dense_n[i] >= min_n && dense_n[i] <= max_n)
        run("obstacles", dense_n[i], setup_obstacles, runs, steps);
  if (strcmp(which, "all") == 0 || strcmp(which, "mixed") == 0)
    for (size_t i = 0; i < sizeof(mixed_n) / sizeof(mixed_n[0]); i++)
      if (mixed_n[i] >= min_n && mixed_n[i] <= max_n)
        run("mixed", mixed_n[i], setup_mixed, runs, steps);
  steer_pool_destroy(pool);
  return 0;
}

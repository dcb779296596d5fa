/* bench_nav: path planning (nav.h) on a 1 km x 1 km map of rooms, corridors
 * and pillars: graph build time and memory, the incremental update after
 * each of 25 admin changes (pillars added, moved, removed; a door closed and
 * opened), plans per second and p50/p99 plan time. Prints a table (figures in
 * BENCHMARKS.md, "Path planning").
 *   bench_nav [obstacles...]   (default 100 1000)
 *   bench_nav update [obstacles] [rounds]   build, then rounds x 25 updates alone
 *                               (wall-clock and CPU time; default 1000, 4)
 *   bench_nav polys [n] [k]     n k-gons (default 600 40-gons): build and update
 *                               on a map of many vertices
 *   bench_nav burst [obstacles] [budget] [warm]   10 000 GOTO in one tick on a world
 *                                            with that map (default 100, 4096); warm:
 *                                            the graphs built before the first tick
 *   bench_nav scen MAP.map SCEN.scen [radius] [limit]   a Moving AI grid map and
 *                               its problems (tools/mapgen, or movingai.com's):
 *                               the graph built for radius (0.25 m) over the
 *                               map's bounds, then every problem planned (at
 *                               most limit of them, spread evenly over the
 *                               file): build time, memory, plan CPU time,
 *                               route length against the grid's optimum, and
 *                               the routes checked against the grid itself
 * Environment: BENCH_NAV_PLANNER=NAME picks scen's planner (mesh, the
 * navigation mesh of navmesh.h that GOTO plans on, by default; graph, the
 * visibility graph of nav.h); BENCH_NAV_PLAIN=1 plans with
 * steer_nav_plan_plain (no taut pruning); BENCH_NAV_PROFILE=k runs the plans k more times first (for perf);
 * BENCH_NAV_VERBOSE=1 prints each update's time; scen: BENCH_NAV_LANDMARKS=k gives the mesh k landmarks
 * (STEER_MESH_LANDMARKS; 0: none), BENCH_NAV_EACH=1 prints a line per problem ("each", its index, optimal
 * length, nodes expanded, points, plan us, length: two runs' lines compare routes problem by problem). Plan
 * times are given by the wall clock and by the thread's CPU time (on a shared box the wall clock also counts
 * the time other processes held the core). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "map.h"
#include "map_file.h"
#include "nav.h"
#include "navmesh.h"
#include "planner.h"
#include "rng.h"
#include "world.h"

#define SIDE    1000.0f
#define PLANS   2000
#define CAP     256u
#define CHANGES 25

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU time of this thread: what a plan costs when the box is shared (the
 * wall clock also counts the time other processes had the core). */
static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef int (*add_fn)(void *ctx, uint32_t id, const steer_obstacle_desc *o);

static uint32_t add_wall(void *m, add_fn add, uint32_t id, vec2 a, vec2 b) {
  vec2 p[2] = {a, b};
  steer_obstacle_desc o = {STEER_OBSTACLE_WALL, 2, p, 0.0f};
  return add(m, id, &o) == 0;
}

static int add_to_map(void *ctx, uint32_t id, const steer_obstacle_desc *o) {
  return steer_map_add(ctx, id, o);
}

static int add_to_world(void *ctx, uint32_t id, const steer_obstacle_desc *o) {
  return steer_world_add_obstacle(ctx, id, o, NULL);
}

static void fill(void *ctx, add_fn add, uint32_t count, uint64_t seed);

static steer_map *make_map(uint32_t count, uint64_t seed) {
  steer_map *m = steer_map_create(v2(0.0f, 0.0f), v2(SIDE, SIDE), 8.0f);
  fill(m, add_to_map, count, seed);
  return m;
}

/* Rooms in a grid (10 x 10 of 100 m from 400 obstacles on, else 3 x 3), each
 * wall split by a 4 m door in its middle, then pillars (boxes and circles of
 * 0.5..3 m) until `count` obstacles. */
static void fill(void *m, add_fn add, uint32_t count, uint64_t seed) {
  steer_rng rng;
  steer_rng_seed(&rng, seed);
  uint32_t id = 1;
  uint32_t rooms = count >= 400 ? 10 : 3; /* rooms per side */
  float room = SIDE / (float)rooms;
  for (uint32_t i = 1; i < rooms && id + 4 <= count; i++)
    for (uint32_t j = 0; j < rooms && id + 4 <= count; j++) {
      float c = (float)i * room, y0 = (float)j * room, mid = y0 + room / 2.0f;
      id += add_wall(m, add, id, v2(c, y0), v2(c, mid - 2.0f));
      id += add_wall(m, add, id, v2(c, mid + 2.0f), v2(c, y0 + room));
      id += add_wall(m, add, id, v2(y0, c), v2(mid - 2.0f, c));
      id += add_wall(m, add, id, v2(mid + 2.0f, c), v2(y0 + room, c));
    }
  while (id <= count) {
    vec2 c = steer_rng_point(&rng, 10.0f, SIDE - 10.0f, 10.0f, SIDE - 10.0f);
    float s = steer_rng_range(&rng, 0.5f, 3.0f);
    steer_obstacle_desc o;
    vec2 p[4] = {v2(c.x - s, c.y - s), v2(c.x + s, c.y - s), v2(c.x + s, c.y + s), v2(c.x - s, c.y + s)};
    if (steer_rng_float(&rng) < 0.5f)
      o = (steer_obstacle_desc){STEER_OBSTACLE_CIRCLE, 1, &c, s};
    else
      o = (steer_obstacle_desc){STEER_OBSTACLE_POLYGON, 4, p, 0.0f};
    if (add(m, id, &o) == 0)
      id++;
  }
}

/* Admin change k of the series the tables measure (k % 5): a pillar appears
 * (id 100000), moves (removed and added elsewhere in one update), disappears;
 * the door in the middle of the first wall of rooms (fill's `count`) closes
 * (id 100001), opens. Each draws the pillar's centre from rng, whichever the
 * change. */
static void admin_change(steer_map *m, uint32_t count, steer_rng *rng, uint32_t k) {
  float room = SIDE / (float)(count >= 400 ? 10 : 3);
  vec2 door[2] = {v2(room, room / 2.0f - 2.0f), v2(room, room / 2.0f + 2.0f)};
  vec2 c = steer_rng_point(rng, 20.0f, SIDE - 20.0f, 20.0f, SIDE - 20.0f);
  steer_obstacle_desc pillar = {STEER_OBSTACLE_CIRCLE, 1, &c, 1.0f};
  steer_obstacle_desc wall = {STEER_OBSTACLE_WALL, 2, door, 0.0f};
  switch (k % 5) {
  case 0:
    steer_map_add(m, 100000, &pillar);
    break;
  case 1:
    steer_map_remove(m, 100000);
    steer_map_add(m, 100000, &pillar);
    break;
  case 2:
    steer_map_remove(m, 100000);
    break;
  case 3:
    steer_map_add(m, 100001, &wall);
    break;
  default:
    steer_map_remove(m, 100001);
    break;
  }
}

/* A plan's start and goal, both free for a body of radius r, drawn from rng
 * (a pair with a point in the geometry is drawn again). */
static void free_pair(const steer_map *m, float r, steer_rng *rng, vec2 *a, vec2 *b) {
  do {
    *a = steer_rng_point(rng, 5.0f, SIDE - 5.0f, 5.0f, SIDE - 5.0f);
    *b = steer_rng_point(rng, 5.0f, SIDE - 5.0f, 5.0f, SIDE - 5.0f);
  } while (!steer_map_free(m, *a, r, 0.0f) || !steer_map_free(m, *b, r, 0.0f));
}

/* 10 000 kinematic agents at random free points all GOTO random free points in
 * one tick; each tick runs planner update + world step (20 Hz). */
static int burst(uint32_t obstacles, uint32_t budget, int warm) {
  const uint32_t N = 10000;
  steer_world_config c = steer_default_world_config();
  c.max_agents = N;
  c.max_events = 3 * N;
  c.min = v2(0.0f, 0.0f);
  c.max = v2(SIDE, SIDE);
  steer_world *w = steer_world_create(&c);
  fill(w, add_to_world, obstacles, 1);
  steer_planner_config pc = steer_default_planner_config();
  pc.budget = budget;
  steer_planner *p = steer_planner_create(w, &pc);
  steer_rng rng;
  steer_rng_seed(&rng, 5);
  const steer_map *m = steer_world_map(w);
  for (uint32_t i = 0; i < N;) {
    steer_agent_desc d = steer_default_agent_desc();
    d.model = STEER_MODEL_KINEMATIC;
    d.limits.radius = 0.4f;
    d.state.position = steer_rng_point(&rng, 5.0f, SIDE - 5.0f, 5.0f, SIDE - 5.0f);
    steer_id id;
    if (steer_map_free(m, d.state.position, 0.5f, 0.0f) && steer_world_spawn(w, &d, 0, &id) == 0)
      i++;
  }
  /* warm: the graphs built before the first tick, as the server does at
   * start-up (steerd_goto_warm), so the first tick only plans. */
  double warm_ms = 0.0;
  int warmed = 0;
  if (warm) {
    double t0 = now_ms();
    warmed = steer_planner_warm(p, w);
    warm_ms = now_ms() - t0;
    if (warmed < 0)
      return 1;
  }
  steer_world_view v = steer_world_get_view(w);
  for (uint32_t i = 0; i < N; i++) {
    steer_goto g = steer_default_goto();
    do
      g.target.point = steer_rng_point(&rng, 5.0f, SIDE - 5.0f, 5.0f, SIDE - 5.0f);
    while (!steer_map_free(m, g.target.point, 0.5f, 0.0f));
    if (steer_planner_goto(p, w, v.id[i], &g) != 0)
      return 1;
  }
  double first = 0.0, worst = 0.0, sum = 0.0, worst_step = 0.0;
  uint32_t ticks = 0, answered = 0;
  while (steer_planner_get_stats(p).queued > 0) {
    double t0 = now_ms();
    steer_planner_update(p, w);
    double t1 = now_ms();
    steer_world_step(w, 0.05f);
    steer_planner_observe(p, w);
    double t2 = now_ms();
    uint32_t n;
    steer_planner_events(p, &n);
    answered += n;
    if (ticks == 0)
      first = t2 - t0;
    else if (t2 - t0 > worst)
      worst = t2 - t0;
    if (t2 - t1 > worst_step)
      worst_step = t2 - t1;
    sum += t1 - t0;
    ticks++;
  }
  steer_planner_stats st = steer_planner_get_stats(p);
  if (warm)
    printf("warm-up before the first tick (steer_planner_warm): %d graphs in %.1f ms\n", warmed, warm_ms);
  printf("| obstacles | budget (expansions/tick) | ticks to absorb | answered | unreachable | first tick "
         "(ms; incl. the graph build unless warmed) | "
         "max later tick (ms) | mean planning per tick (ms) | max step alone (ms) |\n");
  printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  printf("| %u | %u | %u | %u | %llu | %.1f | %.1f | %.2f | %.1f |\n", steer_map_count(m), budget, ticks,
         answered, (unsigned long long)st.unreachable, first, worst, sum / ticks, worst_step);
  steer_planner_destroy(p);
  steer_world_destroy(w);
  return 0;
}

/* A map of many vertices: n k-gons of radius 1.3 m on a 4 m grid (45 a row)
 * in a 200 m square, as test_server_map's large map (600 40-gons: 24 000
 * corners, every one a node). Full build, then updates after one k-gon is
 * added, moved and removed; wall-clock and this thread's CPU time. */
static void kgon(vec2 *p, uint32_t k, vec2 c) {
  for (uint32_t j = 0; j < k; j++) {
    double a = 2.0 * 3.141592653589793 * j / k;
    p[j] = v2(c.x + (float)(1.3 * cos(a)), c.y + (float)(1.3 * sin(a)));
  }
}

static int polys(uint32_t n, uint32_t k) {
  if (k < 3 || k > STEER_MAP_MAX_VERTICES)
    return 1;
  steer_map *m = steer_map_create(v2(-100.0f, -100.0f), v2(100.0f, 100.0f), 8.0f);
  vec2 p[STEER_MAP_MAX_VERTICES];
  steer_map_hold(m);
  for (uint32_t i = 0; i < n; i++) {
    kgon(p, k, v2(-90.0f + (float)(i % 45) * 4.0f, -90.0f + (float)(i / 45) * 4.0f));
    steer_obstacle_desc o = {STEER_OBSTACLE_POLYGON, k, p, 0.0f};
    if (steer_map_add(m, i + 1, &o) != 0)
      return 1;
  }
  if (steer_map_release(m) != 0)
    return 1;
  steer_nav *nav = steer_nav_create();
  double t0 = now_ms(), c0 = cpu_ms();
  if (steer_nav_build(nav, m, 0.5f, v2(-100.0f, -100.0f), v2(100.0f, 100.0f)) != 0)
    return 1;
  double build = now_ms() - t0, build_cpu = cpu_ms() - c0;
  double upd[3], upd_cpu[3];
  for (int c = 0; c < 3; c++) {
    /* a k-gon appears in a free spot of the last row, moves, disappears */
    kgon(p, k, v2(-90.0f + (float)(c == 0 ? 44 : 43) * 4.0f + 2.0f, 94.0f));
    steer_obstacle_desc o = {STEER_OBSTACLE_POLYGON, k, p, 0.0f};
    if (c > 0)
      steer_map_remove(m, 100000);
    if (c < 2)
      steer_map_add(m, 100000, &o);
    t0 = now_ms();
    c0 = cpu_ms();
    if (steer_nav_update(nav, m) != 0)
      return 1;
    upd[c] = now_ms() - t0;
    upd_cpu[c] = cpu_ms() - c0;
  }
  printf("| %u-gons | corners | nodes | edges | memory (KB) | full build (ms) | build CPU (ms) | update: add "
         "/ move / remove (ms) | CPU (ms) |\n",
         k);
  printf("|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
  printf("| %u | %u | %u | %u | %.0f | %.0f | %.0f | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f |\n", n, n * k,
         steer_nav_node_count(nav), steer_nav_edge_count(nav), (double)steer_nav_memory(nav) / 1024.0, build,
         build_cpu, upd[0], upd[1], upd[2], upd_cpu[0], upd_cpu[1], upd_cpu[2]);
  printf("graph hash %016llx\n", (unsigned long long)steer_nav_hash(nav));
  steer_nav_destroy(nav);
  steer_map_destroy(m);
  return 0;
}

/* The build and the incremental update alone on the rooms map of `count`
 * obstacles (radius 0.5 m): full build, then `rounds` x the 25 changes of the
 * main table, each followed by steer_nav_update; wall-clock and this thread's
 * CPU time (on a shared box the CPU time is the steadier figure). */
static int updates(uint32_t count, uint32_t rounds) {
  steer_map *m = make_map(count, 1);
  steer_nav *n = steer_nav_create();
  double t0 = now_ms(), c0 = cpu_ms();
  if (steer_nav_build(n, m, 0.5f, v2(0.0f, 0.0f), v2(SIDE, SIDE)) != 0)
    return 1;
  double build = now_ms() - t0, build_cpu = cpu_ms() - c0;
  steer_rng rng;
  steer_rng_seed(&rng, 99);
  uint32_t total = rounds * CHANGES;
  double *wall = malloc(total * sizeof *wall), *cpu = malloc(total * sizeof *cpu);
  if (!wall || !cpu)
    return 1;
  for (uint32_t k = 0; k < total; k++) {
    admin_change(m, count, &rng, k);
    t0 = now_ms();
    c0 = cpu_ms();
    if (steer_nav_update(n, m) != 0)
      return 1;
    wall[k] = now_ms() - t0;
    cpu[k] = cpu_ms() - c0;
  }
  qsort(wall, total, sizeof *wall, cmp_double);
  qsort(cpu, total, sizeof *cpu, cmp_double);
  printf("| obstacles | nodes | edges | full build (ms) | build CPU (ms) | updates | update median (ms) | "
         "max (ms) | CPU median (ms) | CPU max (ms) |\n");
  printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  printf("| %u | %u | %u | %.0f | %.0f | %u | %.2f | %.2f | %.2f | %.2f |\n", steer_map_count(m),
         steer_nav_node_count(n), steer_nav_edge_count(n), build, build_cpu, total, wall[total / 2],
         wall[total - 1], cpu[total / 2], cpu[total - 1]);
  printf("graph hash %016llx\n", (unsigned long long)steer_nav_hash(n));
  free(wall);
  free(cpu);
  steer_nav_destroy(n);
  steer_map_destroy(m);
  return 0;
}

/* ---- scen: Moving AI grid maps and their problems ------------------------ */

/* A planner as the scen mode drives it: built once for the map and a radius,
 * then asked for routes. Another planner (a navigation mesh) is one more
 * entry of `planners` below. plan returns 0, STEER_ENOENT (no route) or
 * another error; it writes the route's corners then `to` into out. */
typedef struct bench_route {
  uint32_t count;    /* points written to out */
  float length;      /* m, from `from` through the points */
  uint32_t expanded; /* search nodes expanded, if the planner counts them */
} bench_route;

typedef struct bench_planner {
  const char *name;
  void *(*build)(const steer_map *m, float r, vec2 lo, vec2 hi); /* NULL on failure */
  int (*plan)(void *p, const steer_map *m, vec2 from, vec2 to, vec2 *out, uint32_t cap, bench_route *res);
  size_t (*memory)(const void *p);
  void (*describe)(const void *p, char *buf, size_t len); /* its size, for the table */
  void (*destroy)(void *p);
} bench_planner;

static int graph_plain; /* BENCH_NAV_PLAIN, read once (not inside the timed plans) */

static void *graph_build(const steer_map *m, float r, vec2 lo, vec2 hi) {
  steer_nav *n = steer_nav_create();
  graph_plain = getenv("BENCH_NAV_PLAIN") != NULL;
  if (n && steer_nav_build(n, m, r, lo, hi) == 0)
    return n;
  steer_nav_destroy(n);
  return NULL;
}

static int graph_plan(void *p, const steer_map *m, vec2 from, vec2 to, vec2 *out, uint32_t cap,
                      bench_route *res) {
  steer_nav_result r = {0, 0.0f, 0};
  int rc = graph_plain ? steer_nav_plan_plain(p, m, from, to, out, cap, &r)
                       : steer_nav_plan(p, m, from, to, out, cap, &r);
  *res = (bench_route){r.count, r.length, r.expanded};
  return rc;
}

static size_t graph_memory(const void *p) { return steer_nav_memory(p); }

static void graph_describe(const void *p, char *buf, size_t len) {
  snprintf(buf, len, "%u nodes, %u edges", steer_nav_node_count(p), steer_nav_edge_count(p));
}

static void graph_destroy(void *p) { steer_nav_destroy(p); }

/* The mesh, then its landmarks (timed apart: the server attaches them later,
 * off the tick thread; BENCH_NAV_LANDMARKS=0 plans without). */
static void *mesh_build(const steer_map *m, float r, vec2 lo, vec2 hi) {
  steer_mesh *mesh = steer_mesh_build(m, r, lo, hi);
  const char *env = getenv("BENCH_NAV_LANDMARKS");
  uint32_t count = env ? (uint32_t)strtoul(env, NULL, 10) : STEER_MESH_LANDMARKS;
  if (mesh && count) {
    double c0 = cpu_ms();
    float *table;
    if (steer_mesh_landmarks(mesh, count, NULL, &table) == 0)
      steer_mesh_set_landmarks(mesh, table, count);
    printf("landmarks: %u, %.0f ms CPU\n", steer_mesh_landmark_count(mesh), cpu_ms() - c0);
  }
  return mesh;
}

static int mesh_plan(void *p, const steer_map *m, vec2 from, vec2 to, vec2 *out, uint32_t cap,
                     bench_route *res) {
  (void)m;
  steer_nav_result r = {0, 0.0f, 0};
  int rc = steer_mesh_plan(p, from, to, out, cap, &r);
  *res = (bench_route){r.count, r.length, r.expanded};
  return rc;
}

static size_t mesh_memory(const void *p) { return steer_mesh_memory(p); }

static void mesh_describe(const void *p, char *buf, size_t len) {
  snprintf(buf, len, "%u cells, %u vertices", steer_mesh_cell_count(p), steer_mesh_vertex_count(p));
}

static void mesh_destroy(void *p) { steer_mesh_destroy(p); }

static const bench_planner planners[] = {
    {"mesh", mesh_build, mesh_plan, mesh_memory, mesh_describe, mesh_destroy},
    {"graph", graph_build, graph_plan, graph_memory, graph_describe, graph_destroy},
};

typedef struct scen_problem {
  uint32_t sx, sy, gx, gy;
  double optimal;
} scen_problem;

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 1 << 20, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap)
      break;
    char *more = realloc(buf, 2 * cap + 1);
    if (!more) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = more;
    cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return NULL;
  }
  if (buf)
    buf[n] = '\0';
  *len = n;
  return buf;
}

/* "version 1", then bucket, map, width, height, sx, sy, gx, gy, optimal,
 * tab-separated; the problems into *out (allocated), their count returned,
 * or -1 with a message printed. */
static long read_scen(const char *path, uint32_t w, uint32_t h, scen_problem **out) {
  size_t len;
  char *text = read_all(path, &len);
  if (!text) {
    fprintf(stderr, "bench_nav: cannot read %s\n", path);
    return -1;
  }
  size_t cap = 1024, n = 0;
  scen_problem *p = malloc(cap * sizeof *p);
  long line = 0;
  char *save = NULL;
  for (char *l = strtok_r(text, "\n", &save); l && p; l = strtok_r(NULL, "\n", &save)) {
    line++;
    if (line == 1 && strncmp(l, "version", 7) == 0)
      continue;
    unsigned b, mw, mh, sx, sy, gx, gy;
    double opt;
    char name[512];
    if (sscanf(l, "%u\t%511[^\t]\t%u\t%u\t%u\t%u\t%u\t%u\t%lf", &b, name, &mw, &mh, &sx, &sy, &gx, &gy,
               &opt) != 9) {
      if (strspn(l, " \t\r") == strlen(l))
        continue;
      fprintf(stderr, "bench_nav: %s line %ld: not a problem line\n", path, line);
      free(p);
      free(text);
      return -1;
    }
    if (mw != w || mh != h || sx >= w || gx >= w || sy >= h || gy >= h) {
      fprintf(stderr, "bench_nav: %s line %ld: a problem of a %u x %u map or outside this %u x %u one\n",
              path, line, mw, mh, w, h);
      free(p);
      free(text);
      return -1;
    }
    if (n == cap) {
      scen_problem *more = realloc(p, 2 * cap * sizeof *p);
      if (!more)
        free(p);
      p = more;
      cap *= 2;
      if (!p)
        break;
    }
    p[n++] = (scen_problem){sx, sy, gx, gy, opt};
  }
  free(text);
  if (!p) {
    fprintf(stderr, "bench_nav: out of memory\n");
    return -1;
  }
  *out = p;
  return (long)n;
}

/* Distance from segment ab to the square [x, x+1] x [y, y+1]: 0 when they
 * meet, else the least of the ends' distances to the square and the
 * corners' distances to the segment (two disjoint convex sets are closest at
 * a vertex of one of them). */
static double point_square(double px, double py, double x, double y) {
  double dx = px < x ? x - px : px > x + 1.0 ? px - x - 1.0 : 0.0;
  double dy = py < y ? y - py : py > y + 1.0 ? py - y - 1.0 : 0.0;
  return sqrt(dx * dx + dy * dy);
}

static double point_segment(double px, double py, double ax, double ay, double bx, double by) {
  double dx = bx - ax, dy = by - ay, l2 = dx * dx + dy * dy;
  double t = l2 > 0.0 ? ((px - ax) * dx + (py - ay) * dy) / l2 : 0.0;
  t = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
  double qx = ax + t * dx - px, qy = ay + t * dy - py;
  return sqrt(qx * qx + qy * qy);
}

/* Whether ab meets the square (slab test on the segment's parameter). */
static int segment_meets_square(double ax, double ay, double bx, double by, double x, double y) {
  double t0 = 0.0, t1 = 1.0, d[2] = {bx - ax, by - ay}, a[2] = {ax, ay}, lo[2] = {x, y};
  for (int k = 0; k < 2; k++) {
    if (d[k] == 0.0) {
      if (a[k] < lo[k] || a[k] > lo[k] + 1.0)
        return 0;
      continue;
    }
    double u = (lo[k] - a[k]) / d[k], v = (lo[k] + 1.0 - a[k]) / d[k];
    if (u > v) {
      double t = u;
      u = v;
      v = t;
    }
    t0 = u > t0 ? u : t0;
    t1 = v < t1 ? v : t1;
    if (t0 > t1)
      return 0;
  }
  return 1;
}

static double segment_square(double ax, double ay, double bx, double by, double x, double y) {
  if (segment_meets_square(ax, ay, bx, by, x, y))
    return 0.0;
  double best = point_square(ax, ay, x, y), d = point_square(bx, by, x, y);
  best = d < best ? d : best;
  for (int c = 0; c < 4; c++) {
    d = point_segment(x + (c & 1), y + (c >> 1), ax, ay, bx, by);
    best = d < best ? d : best;
  }
  return best;
}

#define CLEAR_REACH 1 /* cells around the walk whose distance is measured: clearances cap at 1 m */

/* Walks the cells leg ab touches (a supercover walk: through a grid corner it
 * takes both cells beside it), counting the blocked ones, and lowers *clear
 * to the exact distance from the leg to every blocked cell within
 * CLEAR_REACH of the walk. Returns the blocked cells the leg touches. */
static uint32_t check_leg(const steerd_grid_map *g, vec2 a, vec2 b, double *clear) {
  double ax = a.x, ay = a.y, bx = b.x, by = b.y, dx = bx - ax, dy = by - ay;
  int64_t cx = (int64_t)floor(ax), cy = (int64_t)floor(ay);
  int sx = dx > 0.0 ? 1 : -1, sy = dy > 0.0 ? 1 : -1;
  double tx = dx > 0.0 ? ((double)cx + 1.0 - ax) / dx : dx < 0.0 ? (ax - (double)cx) / -dx : INFINITY;
  double ty = dy > 0.0 ? ((double)cy + 1.0 - ay) / dy : dy < 0.0 ? (ay - (double)cy) / -dy : INFINITY;
  double ddx = dx != 0.0 ? 1.0 / fabs(dx) : INFINITY, ddy = dy != 0.0 ? 1.0 / fabs(dy) : INFINITY;
  uint32_t hits = 0;
  for (;;) {
    int64_t visit[3][2] = {{cx, cy}, {cx + sx, cy}, {cx, cy + sy}};
    int nv = tx == ty && tx <= 1.0 ? 3 : 1; /* through a corner exactly: both cells beside it */
    for (int v = 0; v < nv; v++) {
      int64_t vx = visit[v][0], vy = visit[v][1];
      if (vx >= 0 && vy >= 0 && vx < g->width && vy < g->height && g->blocked[vy * g->width + vx])
        hits++;
      for (int64_t y = vy - CLEAR_REACH; y <= vy + CLEAR_REACH; y++)
        for (int64_t x = vx - CLEAR_REACH; x <= vx + CLEAR_REACH; x++)
          if (x >= 0 && y >= 0 && x < g->width && y < g->height && g->blocked[y * g->width + x]) {
            double d = segment_square(ax, ay, bx, by, (double)x, (double)y);
            *clear = d < *clear ? d : *clear;
          }
    }
    double t = tx < ty ? tx : ty;
    if (t > 1.0)
      break;
    if (tx <= ty) {
      cx += sx;
      tx += ddx;
    }
    if (ty <= t) {
      cy += sy;
      ty += ddy;
    }
  }
  return hits;
}

static int scen(const char *map_path, const char *scen_path, float r, long limit) {
  const char *which = getenv("BENCH_NAV_PLANNER") ? getenv("BENCH_NAV_PLANNER") : "mesh";
  const bench_planner *pl = NULL;
  for (size_t i = 0; i < sizeof planners / sizeof planners[0]; i++)
    if (strcmp(planners[i].name, which) == 0)
      pl = &planners[i];
  if (!pl) {
    fprintf(stderr, "bench_nav: no planner %s (BENCH_NAV_PLANNER)\n", which);
    return 1;
  }
  size_t len;
  char *text = read_all(map_path, &len), err[256];
  steerd_grid_map g;
  if (!text || steerd_grid_map_read(text, len, &g, err, sizeof err) != 0) {
    fprintf(stderr, "bench_nav: %s: %s\n", map_path, text ? err : "cannot read");
    return 1;
  }
  free(text);
  vec2 lo = v2(0.0f, 0.0f), hi = v2((float)g.width, (float)g.height);
  /* the index's cell as the server's default world (--map uses the world's) */
  steer_map *m = steer_map_create(lo, hi, steer_default_world_config().cell_size);
  if (!m || steerd_grid_map_add(&g, m, err, sizeof err) != 0) {
    fprintf(stderr, "bench_nav: %s: %s\n", map_path, m ? err : "out of memory");
    return 1;
  }
  scen_problem *all;
  long total = read_scen(scen_path, g.width, g.height, &all);
  if (total <= 0) {
    if (total == 0)
      fprintf(stderr, "bench_nav: %s has no problems\n", scen_path);
    return 1;
  }
  /* every k-th problem: the file is sorted by bucket, so its first problems
   * would all be short */
  long count = limit > 0 && limit < total ? limit : total;
  scen_problem *probs = malloc((size_t)count * sizeof *probs);
  if (!probs)
    return 1;
  for (long i = 0; i < count; i++)
    probs[i] = all[(size_t)((double)i * (double)total / (double)count)];
  free(all);

  double t0 = now_ms(), c0 = cpu_ms();
  void *p = pl->build(m, r, lo, hi);
  double build = now_ms() - t0, build_cpu = cpu_ms() - c0;
  if (!p) {
    fprintf(stderr, "bench_nav: the %s planner could not be built\n", pl->name);
    return 1;
  }
  char size[128];
  pl->describe(p, size, sizeof size);

  enum { ROUTE_CAP = 16384 };
  static vec2 pts[ROUTE_CAP];
  double *cpu = malloc((size_t)count * sizeof *cpu), *ratio = malloc((size_t)count * sizeof *ratio);
  double *least = malloc((size_t)count * sizeof *least);
  if (!cpu || !ratio || !least)
    return 1;
  bench_route res;
  /* one plan first, not counted: it fills the search's tables (nav.h) */
  pl->plan(p, m, v2((float)probs[0].sx + 0.5f, (float)probs[0].sy + 0.5f),
           v2((float)probs[0].gx + 0.5f, (float)probs[0].gy + 0.5f), pts, ROUTE_CAP, &res);
  long answered = 0, unreachable = 0, failed = 0, crossing = 0, narrow = 0;
  int first_fail = 0;
  double cpu_total = 0.0, edge = INFINITY, worst_clear = INFINITY;
  uint64_t expanded = 0, points = 0;
  for (long i = 0; i < count; i++) {
    const scen_problem *q = &probs[i];
    vec2 from = v2((float)q->sx + 0.5f, (float)q->sy + 0.5f),
         to = v2((float)q->gx + 0.5f, (float)q->gy + 0.5f);
    c0 = cpu_ms();
    int rc = pl->plan(p, m, from, to, pts, ROUTE_CAP, &res);
    cpu[i] = (cpu_ms() - c0) * 1e3;
    cpu_total += cpu[i];
    if (rc == STEER_ENOENT) {
      unreachable++;
      continue;
    }
    if (rc != 0) {
      if (!failed++)
        first_fail = rc;
      continue;
    }
    expanded += res.expanded;
    points += res.count;
    if (getenv("BENCH_NAV_EACH"))
      printf("each %ld %.1f %u %u %.0f %.6f\n", i, q->optimal, res.expanded, res.count, cpu[i], res.length);
    ratio[answered] = q->optimal > 0.0 ? res.length / q->optimal : 1.0;
    double clear = CLEAR_REACH;
    uint32_t through = 0;
    vec2 a = from;
    for (uint32_t k = 0; k < res.count; k++) {
      through += check_leg(&g, a, pts[k], &clear);
      double e = fmin(fmin(pts[k].x, hi.x - pts[k].x), fmin(pts[k].y, hi.y - pts[k].y));
      edge = e < edge ? e : edge;
      a = pts[k];
    }
    crossing += through > 0;
    narrow += clear < r;
    worst_clear = clear < worst_clear ? clear : worst_clear;
    least[answered++] = clear;
  }
  qsort(cpu, (size_t)count, sizeof *cpu, cmp_double);
  qsort(ratio, (size_t)answered, sizeof *ratio, cmp_double);
  qsort(least, (size_t)answered, sizeof *least, cmp_double);
  printf("map %s: %u x %u, %u rectangles; %ld of the %ld problems of %s%s; radius %.2f m; planner %s (%s)\n",
         map_path, g.width, g.height, steer_map_count(m), count, total, scen_path,
         count < total ? " (spread evenly over the file)" : "", (double)r, pl->name, size);
  printf(
      "| build (ms) | build CPU (ms) | memory (MB) | plans | answered | unreachable | failed | plan CPU p50 "
      "(us) | "
      "p99 (us) | max (us) | plans per CPU s | route / optimal: min | median | max | least clearance (m) | "
      "routes closer than r | routes through a blocked cell |\n");
  printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  printf("| %.0f | %.0f | %.1f | %ld | %ld | %ld | %ld | %.0f | %.0f | %.0f | %.0f | %.4f | %.4f | %.4f | "
         "%.4f | %ld | "
         "%ld |\n",
         build, build_cpu, (double)pl->memory(p) / (1024.0 * 1024.0), count, answered, unreachable, failed,
         cpu[count / 2], cpu[count * 99 / 100], cpu[count - 1],
         cpu_total > 0.0 ? (double)count / (cpu_total / 1e6) : 0.0, answered ? ratio[0] : 0.0,
         answered ? ratio[answered / 2] : 0.0, answered ? ratio[answered - 1] : 0.0,
         answered ? worst_clear : 0.0, narrow, crossing);
  printf("per route: median least clearance %.3f m (capped at %d m), least distance of a corner to the map's "
         "edge "
         "%.3f m, mean %.1f points, mean %.0f nodes expanded%s%s\n",
         answered ? least[answered / 2] : 0.0, CLEAR_REACH, answered ? edge : 0.0,
         answered ? (double)points / (double)answered : 0.0,
         answered ? (double)expanded / (double)answered : 0.0, failed ? "; first failure: " : "",
         failed ? steer_strerror(first_fail) : "");
  pl->destroy(p);
  free(cpu);
  free(ratio);
  free(least);
  free(probs);
  steer_map_destroy(m);
  steerd_grid_map_free(&g);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 3 && strcmp(argv[1], "scen") == 0)
    return scen(argv[2], argv[3], argc > 4 ? strtof(argv[4], NULL) : 0.25f,
                argc > 5 ? strtol(argv[5], NULL, 10) : 0);
  if (argc > 1 && strcmp(argv[1], "update") == 0)
    return updates(argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 1000,
                   argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 4);
  if (argc > 1 && strcmp(argv[1], "polys") == 0)
    return polys(argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 600,
                 argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 40);
  if (argc > 1 && strcmp(argv[1], "burst") == 0)
    return burst(argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 100,
                 argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 4096,
                 argc > 4 && strcmp(argv[4], "warm") == 0);
  uint32_t sizes[8] = {100, 1000};
  int nsizes = 2;
  if (argc > 1) {
    nsizes = 0;
    for (int i = 1; i < argc && nsizes < 8; i++)
      sizes[nsizes++] = (uint32_t)strtoul(argv[i], NULL, 10);
  }
  const float r = 0.5f;
  const int plain = getenv("BENCH_NAV_PLAIN") != NULL; /* every neighbour relaxed (steer_nav_plan_plain) */
  printf("| obstacles | nodes | edges | memory (KB) | full build (ms) | update per change: median (ms) | max "
         "(ms) | plans/s | p50 (us) | p99 (us) | CPU: plans/s | p50 (us) | p99 (us) | found | mean expanded "
         "| mean route (m) |\n");
  printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int s = 0; s < nsizes; s++) {
    steer_map *m = make_map(sizes[s], 1);
    steer_nav *n = steer_nav_create();
    double t0 = now_ms();
    if (steer_nav_build(n, m, r, v2(0.0f, 0.0f), v2(SIDE, SIDE)) != 0)
      return 1;
    double build = now_ms() - t0;
    /* Admin changes, each followed by steer_nav_update (what the planner's
     * cache does on the next plan). */
    steer_rng rng;
    steer_rng_seed(&rng, 99);
    static double upd[CHANGES];
    for (int k = 0; k < CHANGES; k++) {
      admin_change(m, sizes[s], &rng, (uint32_t)k);
      t0 = now_ms();
      if (steer_nav_update(n, m) != 0)
        return 1;
      upd[k] = now_ms() - t0;
      if (getenv("BENCH_NAV_VERBOSE"))
        fprintf(stderr, "change %d kind %d: %.2f ms\n", k, k % 5, upd[k]);
    }
    qsort(upd, CHANGES, sizeof upd[0], cmp_double);
    static vec2 pts[CAP];
    /* BENCH_NAV_PROFILE=k: k extra passes of the same plans before the
     * measured one (so a profiler sees plans, not the build). */
    const char *prof = getenv("BENCH_NAV_PROFILE");
    for (int pass = prof ? atoi(prof) : 0; pass > 0; pass--) {
      steer_rng pr = rng;
      for (int k = 0; k < PLANS; k++) {
        vec2 a, b;
        free_pair(m, r, &pr, &a, &b);
        steer_nav_result res;
        steer_nav_plan(n, m, a, b, pts, CAP, &res);
      }
    }
    static double times[PLANS], ctimes[PLANS];
    double ctotal = 0.0;
    int found = 0, done = 0;
    uint64_t expanded = 0;
    double total = 0.0, length = 0.0;
    while (done < PLANS) {
      vec2 a, b;
      free_pair(m, r, &rng, &a, &b);
      steer_nav_result res;
      double c0 = cpu_ms();
      t0 = now_ms();
      int rc = plain ? steer_nav_plan_plain(n, m, a, b, pts, CAP, &res)
                     : steer_nav_plan(n, m, a, b, pts, CAP, &res);
      double dt = now_ms() - t0;
      double ct = cpu_ms() - c0;
      ctimes[done] = ct;
      ctotal += ct;
      times[done++] = dt;
      total += dt;
      found += rc == 0;
      if (rc == 0)
        length += res.length;
      expanded += res.expanded;
    }
    qsort(times, PLANS, sizeof times[0], cmp_double);
    qsort(ctimes, PLANS, sizeof ctimes[0], cmp_double);
    printf("| %u | %u | %u | %.0f | %.1f | %.2f | %.2f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %d/%d | "
           "%.0f | %.3f |\n",
           steer_map_count(m), steer_nav_node_count(n), steer_nav_edge_count(n),
           (double)steer_nav_memory(n) / 1024.0, build, upd[CHANGES / 2], upd[CHANGES - 1],
           (double)PLANS / (total / 1e3), times[PLANS / 2] * 1e3, times[PLANS * 99 / 100] * 1e3,
           (double)PLANS / (ctotal / 1e3), ctimes[PLANS / 2] * 1e3, ctimes[PLANS * 99 / 100] * 1e3, found,
           PLANS, (double)expanded / PLANS, found ? length / found : 0.0);
    steer_nav_destroy(n);
    steer_map_destroy(m);
  }
  return 0;
}

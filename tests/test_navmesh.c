/* test_navmesh.c: planning on the navigation mesh (navmesh.h). Every leg of
 * every route keeps r + skin from every segment and circle of the map,
 * checked exactly here (segment-to-segment distances in doubles, independent
 * of the mesh) and by the map's own swept-disc test; a route exists whenever
 * the visibility graph (nav.h) finds one, and it is never longer than the
 * graph's exact shortest route by more than 0.5 % and 3 cm;
 * errors are reported (a goal in geometry, a closed-off goal, NaN, a short
 * buffer); a start pressed into the margin is snapped; the mesh and its routes
 * are the same bits on every build. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "check_run.h"
#include "map.h"
#include "nav.h"
#include "navmesh.h"
#include "rng.h"
#include "world.h"

#define CAP 512u

typedef struct dseg {
  double ax, ay, bx, by;
} dseg;

/* The map's geometry as segments and circles, for the independent check. */
typedef struct shapes {
  dseg seg[8192];
  uint32_t nseg;
  double cx[64], cy[64], cr[64];
  uint32_t ncirc;
  steer_map *m;
} shapes;

static void add_obstacle(shapes *s, uint32_t id, uint8_t kind, const vec2 *p, uint32_t n, float radius) {
  steer_obstacle_desc o = {kind, n, p, radius};
  ck_assert_int_eq(steer_map_add(s->m, id, &o), 0);
  if (kind == STEER_OBSTACLE_CIRCLE) {
    s->cx[s->ncirc] = p[0].x, s->cy[s->ncirc] = p[0].y, s->cr[s->ncirc++] = radius;
    return;
  }
  uint32_t segs = kind == STEER_OBSTACLE_POLYGON ? n : n - 1u;
  for (uint32_t i = 0; i < segs; i++) {
    ck_assert_uint_lt(s->nseg, 8192u);
    s->seg[s->nseg++] = (dseg){p[i].x, p[i].y, p[(i + 1u) % n].x, p[(i + 1u) % n].y};
  }
}

static double d2_point_seg(double px, double py, dseg s) {
  double dx = s.bx - s.ax, dy = s.by - s.ay, l2 = dx * dx + dy * dy;
  double t = l2 > 0.0 ? ((px - s.ax) * dx + (py - s.ay) * dy) / l2 : 0.0;
  t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
  double qx = s.ax + t * dx - px, qy = s.ay + t * dy - py;
  return qx * qx + qy * qy;
}

static double orient(double ax, double ay, double bx, double by, double cx, double cy) {
  return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
}

static double seg_seg(dseg p, dseg q) {
  double o1 = orient(p.ax, p.ay, p.bx, p.by, q.ax, q.ay), o2 = orient(p.ax, p.ay, p.bx, p.by, q.bx, q.by);
  double o3 = orient(q.ax, q.ay, q.bx, q.by, p.ax, p.ay), o4 = orient(q.ax, q.ay, q.bx, q.by, p.bx, p.by);
  if (((o1 > 0 && o2 < 0) || (o1 < 0 && o2 > 0)) && ((o3 > 0 && o4 < 0) || (o3 < 0 && o4 > 0)))
    return 0.0;
  double d = fmin(fmin(d2_point_seg(p.ax, p.ay, q), d2_point_seg(p.bx, p.by, q)),
                  fmin(d2_point_seg(q.ax, q.ay, p), d2_point_seg(q.bx, q.by, p)));
  return sqrt(d);
}

/* The least distance from the route's legs to the geometry; each leg also
 * passes the map's swept-disc test and no point is inside a solid. */
static double route_clearance(const shapes *s, vec2 from, const vec2 *pts, uint32_t count, float r) {
  double least = INFINITY;
  vec2 a = from;
  for (uint32_t i = 0; i < count; i++) {
    dseg leg = {a.x, a.y, pts[i].x, pts[i].y};
    for (uint32_t k = 0; k < s->nseg; k++)
      least = fmin(least, seg_seg(leg, s->seg[k]));
    for (uint32_t k = 0; k < s->ncirc; k++)
      least = fmin(least, sqrt(d2_point_seg(s->cx[k], s->cy[k], leg)) - s->cr[k]);
    ck_assert_msg(steer_nav_clear(s->m, a, pts[i], r), "leg %u (%g,%g)-(%g,%g) fails the map's cast", i, a.x,
                  a.y, pts[i].x, pts[i].y);
    ck_assert(!steer_map_inside(s->m, pts[i]));
    a = pts[i];
  }
  return least;
}

/* A W x W grid of unit cells, each blocked with probability density, merged
 * into horizontal runs. Returns the number of obstacles. */
static uint32_t grid_map(shapes *s, int w, double density, uint64_t seed, unsigned char *blocked) {
  steer_rng rng;
  steer_rng_seed(&rng, seed);
  for (int i = 0; i < w * w; i++)
    blocked[i] = steer_rng_float(&rng) < density;
  s->m = steer_map_create(v2(0.0f, 0.0f), v2((float)w, (float)w), 1.0f);
  ck_assert_ptr_nonnull(s->m);
  s->nseg = s->ncirc = 0;
  uint32_t id = 1;
  for (int y = 0; y < w; y++)
    for (int x = 0; x < w;) {
      if (!blocked[y * w + x]) {
        x++;
        continue;
      }
      int x0 = x;
      while (x < w && blocked[y * w + x])
        x++;
      vec2 p[4] = {v2((float)x0, (float)y), v2((float)x, (float)y), v2((float)x, (float)y + 1.0f),
                   v2((float)x0, (float)y + 1.0f)};
      add_obstacle(s, id++, STEER_OBSTACLE_POLYGON, p, 4, 0.0f);
    }
  return id - 1u;
}

static shapes S;

static int cell_of(steer_rng *rng, int w) {
  int c = (int)(steer_rng_float(rng) * (float)w);
  return c < w ? c : w - 1;
}

/* count past STEER_MESH_LANDMARKS_MAX gets that many. */
static void attach_count(steer_mesh *mesh, uint32_t count) {
  float *table;
  ck_assert_int_eq(steer_mesh_landmarks(mesh, count, NULL, &table), 0);
  steer_mesh_set_landmarks(mesh, table, count);
  ck_assert_uint_eq(steer_mesh_landmark_count(mesh),
                    count < STEER_MESH_LANDMARKS_MAX ? count : STEER_MESH_LANDMARKS_MAX);
}

static void attach_landmarks(steer_mesh *mesh) { attach_count(mesh, STEER_MESH_LANDMARKS); }

/* Random problems between free cell centres: the mesh against the visibility
 * graph's exact shortest route (steer_nav_plan_plain). */
static void compare_on(const shapes *s, int w, const unsigned char *blocked, float r, uint64_t seed,
                       int problems) {
  vec2 hi = v2((float)w, (float)w);
  steer_mesh *mesh = steer_mesh_build(s->m, r, v2(0.0f, 0.0f), hi);
  ck_assert_ptr_nonnull(mesh);
  attach_landmarks(mesh);
  steer_nav *nav = steer_nav_create();
  ck_assert_int_eq(steer_nav_build(nav, s->m, r, v2(0.0f, 0.0f), hi), 0);
  steer_rng rng;
  steer_rng_seed(&rng, seed);
  static vec2 a[CAP], b[CAP];
  int found = 0;
  for (int i = 0; i < problems; i++) {
    int sx, sy, gx, gy;
    do {
      sx = cell_of(&rng, w);
      sy = cell_of(&rng, w);
    } while (blocked[sy * w + sx]);
    do {
      gx = cell_of(&rng, w);
      gy = cell_of(&rng, w);
    } while (blocked[gy * w + gx]);
    vec2 from = v2((float)sx + 0.5f, (float)sy + 0.5f), to = v2((float)gx + 0.5f, (float)gy + 0.5f);
    if (!steer_map_free(s->m, from, r + STEER_MAP_SKIN, 0.0f))
      continue; /* a body cannot stand there */
    steer_nav_result rm, rg;
    int cm = steer_mesh_plan(mesh, from, to, a, CAP, &rm);
    int cg = steer_nav_plan_plain(nav, s->m, from, to, b, CAP, &rg);
    if (cg == STEER_EBLOCKED || cm == STEER_EBLOCKED)
      continue; /* the two inflations differ by their corner pieces: a goal on the edge */
    ck_assert_msg(cm == 0 || cg != 0, "problem %d (%g,%g)->(%g,%g): mesh %d, graph %d", i, from.x, from.y,
                  to.x, to.y, cm, cg);
    if (cm != 0)
      continue;
    found++;
    double clear = route_clearance(s, from, a, rm.count, r);
    ck_assert_msg(clear >= (double)r + (double)STEER_MAP_SKIN - 1e-4, "problem %d: clearance %g < %g", i,
                  clear, (double)r);
    /* The graph's legs may pass other corners at r + skin, the mesh keeps the
     * margin along the whole route: a few cm on a short route at most. */
    if (cg == 0)
      ck_assert_msg(rm.length <= rg.length * 1.005f + 0.03f, "problem %d: mesh %g, graph %g", i, rm.length,
                    rg.length);
    ck_assert_msg(rm.length >= v2_len(v2_sub(to, from)) - 1e-3f, "problem %d: shorter than the straight line",
                  i);
    ck_assert_float_eq(a[rm.count - 1u].x, to.x);
    ck_assert_float_eq(a[rm.count - 1u].y, to.y);
  }
  ck_assert_int_gt(found, problems / 2);
  steer_nav_destroy(nav);
  steer_mesh_destroy(mesh);
}

/* Plans with the landmarks' estimate and without: the same answer and
 * length for every problem (both exact), and fewer nodes expanded in all;
 * the second map asks for more landmarks than a mesh takes. */
START_TEST(test_landmarks_keep_plans_exact) {
  static unsigned char blocked[64 * 64];
  const double density[] = {0.2, 0.33};
  for (int k = 0; k < 2; k++) {
    grid_map(&S, 64, density[k], 40u + (uint64_t)k, blocked);
    steer_mesh *mesh = steer_mesh_build(S.m, 0.25f, v2(0, 0), v2(64, 64));
    ck_assert_ptr_nonnull(mesh);
    attach_count(mesh, k == 0 ? STEER_MESH_LANDMARKS : 4u * STEER_MESH_LANDMARKS_MAX);
    steer_rng rng;
    steer_rng_seed(&rng, 5u + (uint64_t)k);
    static vec2 a[CAP], b[CAP];
    uint64_t with = 0, without = 0;
    int found = 0;
    for (int i = 0; i < 300; i++) {
      vec2 from = v2((float)cell_of(&rng, 64) + 0.5f, (float)cell_of(&rng, 64) + 0.5f);
      vec2 to = v2((float)cell_of(&rng, 64) + 0.5f, (float)cell_of(&rng, 64) + 0.5f);
      steer_nav_result rl, rp;
      int cl = steer_mesh_plan_begin(mesh, from, to, 1);
      if (cl == 0) {
        steer_mesh_plan_run(mesh, UINT32_MAX, NULL);
        cl = steer_mesh_plan_result(mesh, a, CAP, &rl);
      }
      int cp = steer_mesh_plan_begin(mesh, from, to, 0);
      if (cp == 0) {
        steer_mesh_plan_run(mesh, UINT32_MAX, NULL);
        cp = steer_mesh_plan_result(mesh, b, CAP, &rp);
      }
      ck_assert_int_eq(cl, cp);
      if (cl != 0)
        continue;
      found++;
      ck_assert_msg(fabsf(rl.length - rp.length) <= 1e-4f * rp.length,
                    "problem %d: %g with landmarks, %g without", i, rl.length, rp.length);
      with += rl.expanded;
      without += rp.expanded;
    }
    ck_assert_int_gt(found, 100);
    ck_assert_uint_lt(with, without);
    /* Asked to stop, the computation gives nothing. */
    atomic_int stop;
    atomic_init(&stop, 1);
    float *table = (float *)&stop;
    ck_assert_int_eq(steer_mesh_landmarks(mesh, STEER_MESH_LANDMARKS, &stop, &table), 1);
    ck_assert_ptr_null(table);
    steer_mesh_destroy(mesh);
    steer_map_destroy(S.m);
  }
}
END_TEST

START_TEST(test_grid_maps_match_the_graph) {
  static unsigned char blocked[48 * 48];
  const float radii[] = {0.0f, 0.25f, 0.4f};
  for (int k = 0; k < 3; k++) {
    grid_map(&S, 48, 0.2, 100u + (uint64_t)k, blocked);
    compare_on(&S, 48, blocked, radii[k], 7u + (uint64_t)k, 150);
    steer_map_destroy(S.m);
  }
}
END_TEST

/* Circles, a concave room and walls (the shapes a JSON level has). */
START_TEST(test_mixed_shapes) {
  const int w = 40;
  static unsigned char blocked[40 * 40];
  for (int i = 0; i < w * w; i++)
    blocked[i] = 0;
  S.m = steer_map_create(v2(0.0f, 0.0f), v2((float)w, (float)w), 1.0f);
  S.nseg = S.ncirc = 0;
  vec2 u[8] = {v2(10, 10), v2(20, 10), v2(20, 20), v2(18, 20),
               v2(18, 12), v2(12, 12), v2(12, 20), v2(10, 20)};
  add_obstacle(&S, 1, STEER_OBSTACLE_POLYGON, u, 8, 0.0f); /* a U open to the north */
  vec2 c1 = v2(30, 30), c2 = v2(27.5f, 8.0f);
  add_obstacle(&S, 2, STEER_OBSTACLE_CIRCLE, &c1, 1, 3.0f);
  add_obstacle(&S, 3, STEER_OBSTACLE_CIRCLE, &c2, 1, 1.2f);
  vec2 wall[4] = {v2(2, 30), v2(15, 30), v2(15, 36), v2(25, 38)};
  add_obstacle(&S, 4, STEER_OBSTACLE_WALL, wall, 4, 0.0f);
  vec2 tri[3] = {v2(30, 14), v2(36, 16), v2(31, 22)};
  add_obstacle(&S, 5, STEER_OBSTACLE_POLYGON, tri, 3, 0.0f);
  /* cells under solids are not starts or goals */
  for (int y = 0; y < w; y++)
    for (int x = 0; x < w; x++)
      blocked[y * w + x] = steer_map_inside(S.m, v2((float)x + 0.5f, (float)y + 0.5f));
  compare_on(&S, w, blocked, 0.25f, 11u, 300);
  compare_on(&S, w, blocked, 0.75f, 12u, 300);
  steer_map_destroy(S.m);
}
END_TEST

START_TEST(test_errors_and_snapping) {
  S.m = steer_map_create(v2(0.0f, 0.0f), v2(20.0f, 20.0f), 1.0f);
  S.nseg = S.ncirc = 0;
  vec2 box[4] = {v2(5, 5), v2(15, 5), v2(15, 15), v2(5, 15)};
  add_obstacle(&S, 1, STEER_OBSTACLE_POLYGON, box, 4, 0.0f);
  vec2 ring[5] = {v2(1, 1), v2(4, 1), v2(4, 4), v2(1, 4), v2(1, 1.0f + 1e-3f)};
  add_obstacle(&S, 2, STEER_OBSTACLE_WALL, ring, 5, 0.0f); /* a closed pen, its gap too narrow */
  steer_mesh *mesh = steer_mesh_build(S.m, 0.25f, v2(0.0f, 0.0f), v2(20.0f, 20.0f));
  ck_assert_ptr_nonnull(mesh);
  vec2 out[CAP];
  steer_nav_result res;
  ck_assert_int_eq(steer_mesh_plan(mesh, v2(2, 18), v2(10, 10), out, CAP, &res), STEER_EBLOCKED);
  ck_assert_int_eq(steer_mesh_plan(mesh, v2(2, 18), v2(2.5f, 2.5f), out, CAP, &res), STEER_ENOENT);
  ck_assert_int_eq(steer_mesh_plan(mesh, v2(NAN, 18), v2(18, 18), out, CAP, &res), STEER_EINVAL);
  ck_assert_int_eq(steer_mesh_plan(mesh, v2(2, 10), v2(18, 10), out, 1, &res), STEER_EFULL);
  ck_assert_uint_eq(res.count, 5u); /* two corners of the box, each cut by an octagon's two, then the goal */
  ck_assert_int_eq(steer_mesh_plan(mesh, v2(2, 10), v2(18, 10), out, CAP, &res), 0);
  ck_assert_uint_eq(res.count, 5u);
  /* A start pressed against the box (r + skin away, inside the margin) starts
   * from the nearest free point. */
  vec2 pressed = v2(5.0f - 0.25f - STEER_MAP_SKIN, 10.0f);
  ck_assert(!steer_mesh_free(mesh, pressed));
  ck_assert_int_eq(steer_mesh_plan(mesh, pressed, v2(2, 18), out, CAP, &res), 0);
  ck_assert_uint_eq(res.count, 2u);
  ck_assert(steer_mesh_free(mesh, out[0]));
  ck_assert_float_le(v2_len(v2_sub(out[0], pressed)), STEER_MESH_MARGIN + 1e-3f);
  route_clearance(&S, pressed, out, res.count, 0.25f);
  steer_mesh_destroy(mesh);
  steer_map_destroy(S.m);
}
END_TEST

START_TEST(test_deterministic) {
  static unsigned char blocked[64 * 64];
  grid_map(&S, 64, 0.25, 5u, blocked);
  steer_mesh *a = steer_mesh_build(S.m, 0.25f, v2(0, 0), v2(64, 64));
  steer_mesh *b = steer_mesh_build(S.m, 0.25f, v2(0, 0), v2(64, 64));
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  ck_assert_uint_eq(steer_mesh_hash(a), steer_mesh_hash(b));
  ck_assert_uint_eq(steer_mesh_cell_count(a), steer_mesh_cell_count(b));
  ck_assert_uint_gt(steer_mesh_cell_count(a), 100u);
  steer_mesh *c = steer_mesh_build(S.m, 0.5f, v2(0, 0), v2(64, 64));
  ck_assert_uint_ne(steer_mesh_hash(a), steer_mesh_hash(c));
  vec2 pa[CAP], pb[CAP];
  steer_nav_result ra, rb;
  int ca = steer_mesh_plan(a, v2(0.5f, 0.5f), v2(63.5f, 63.5f), pa, CAP, &ra);
  int cb = steer_mesh_plan(b, v2(0.5f, 0.5f), v2(63.5f, 63.5f), pb, CAP, &rb);
  ck_assert_int_eq(ca, cb);
  ck_assert_uint_eq(ra.count, rb.count);
  for (uint32_t i = 0; ca == 0 && i < ra.count; i++) {
    ck_assert_float_eq(pa[i].x, pb[i].x);
    ck_assert_float_eq(pa[i].y, pb[i].y);
  }
  steer_mesh_destroy(a);
  steer_mesh_destroy(b);
  steer_mesh_destroy(c);
  steer_map_destroy(S.m);
}
END_TEST

/* Builds on threads of their own give the bits of a build on this one (the
 * server builds its radius classes concurrently). */
typedef struct build_job {
  const steer_map *m;
  float r;
  uint64_t hash;
} build_job;

static void *build_on_thread(void *arg) {
  build_job *j = arg;
  steer_mesh *mesh = steer_mesh_build(j->m, j->r, v2(0, 0), v2(64, 64));
  j->hash = mesh ? steer_mesh_hash(mesh) : 0;
  steer_mesh_destroy(mesh);
  return NULL;
}

/* A plan in slices of any size is the plan in one go; two parts of the free
 * space are no route at once; concurrent builds are deterministic. */
START_TEST(test_slices_parts_and_threads) {
  static unsigned char blocked[64 * 64];
  grid_map(&S, 64, 0.25, 9u, blocked);
  steer_mesh *mesh = steer_mesh_build(S.m, 0.25f, v2(0, 0), v2(64, 64));
  ck_assert_ptr_nonnull(mesh);
  attach_landmarks(mesh);
  vec2 whole[CAP], part[CAP];
  steer_nav_result rw, rp;
  vec2 from = v2(0.5f, 0.5f), to = v2(63.5f, 60.5f);
  for (int y = 0; y < 64 && blocked[(int)from.y * 64 + (int)from.x]; y++)
    from.y = (float)y + 0.5f;
  for (int y = 63; y >= 0 && blocked[(int)to.y * 64 + (int)to.x]; y--)
    to.y = (float)y + 0.5f;
  int cw = steer_mesh_plan(mesh, from, to, whole, CAP, &rw);
  ck_assert_int_eq(cw, 0);
  ck_assert_uint_gt(rw.expanded, 20u);
  const uint32_t sizes[] = {1u, 7u, 100u};
  for (int k = 0; k < 3; k++) {
    ck_assert_int_eq(steer_mesh_plan_start(mesh, from, to), 0);
    uint32_t slices = 0, spent, total = 0;
    while (!steer_mesh_plan_run(mesh, sizes[k], &spent)) {
      ck_assert_uint_eq(spent, sizes[k]);
      total += spent;
      slices++;
    }
    total += spent;
    ck_assert_uint_ge(slices, (rw.expanded - 1u) / sizes[k]);
    ck_assert_int_eq(steer_mesh_plan_result(mesh, part, CAP, &rp), 0);
    ck_assert_uint_eq(total, rw.expanded);
    ck_assert_uint_eq(rp.count, rw.count);
    ck_assert(rp.length == rw.length);
    for (uint32_t i = 0; i < rw.count; i++)
      ck_assert(part[i].x == whole[i].x && part[i].y == whole[i].y);
  }
  steer_mesh_destroy(mesh);
  /* A goal walled in: no route, answered without a search. */
  vec2 pen[4] = {v2(40, 40), v2(50, 40), v2(50, 50), v2(40, 50)};
  steer_map *m2 = steer_map_create(v2(0, 0), v2(64, 64), 1.0f);
  steer_obstacle_desc o = {STEER_OBSTACLE_WALL, 4, pen, 0.0f};
  ck_assert_int_eq(steer_map_add(m2, 1, &o), 0);
  vec2 closing[2] = {v2(40, 50), v2(40, 40)};
  steer_obstacle_desc o2 = {STEER_OBSTACLE_WALL, 2, closing, 0.0f};
  ck_assert_int_eq(steer_map_add(m2, 2, &o2), 0);
  steer_mesh *m2m = steer_mesh_build(m2, 0.25f, v2(0, 0), v2(64, 64));
  ck_assert_int_eq(steer_mesh_plan(m2m, v2(5, 5), v2(45, 45), whole, CAP, &rw), STEER_ENOENT);
  ck_assert_uint_eq(rw.expanded, 0u);
  steer_mesh_destroy(m2m);
  steer_map_destroy(m2);
  /* Four builds at once, each as the one made here. */
  build_job jobs[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    jobs[i] = (build_job){S.m, 0.25f * (float)i, 0};
    ck_assert_int_eq(pthread_create(&th[i], NULL, build_on_thread, &jobs[i]), 0);
  }
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(pthread_join(th[i], NULL), 0);
  for (int i = 0; i < 4; i++) {
    steer_mesh *one = steer_mesh_build(S.m, jobs[i].r, v2(0, 0), v2(64, 64));
    ck_assert_uint_eq(jobs[i].hash, steer_mesh_hash(one));
    steer_mesh_destroy(one);
  }
  steer_map_destroy(S.m);
}
END_TEST

int main(void) {
  Suite *s = suite_create("navmesh");
  TCase *tc = check_tcase(s, "navmesh", 120);
  tcase_add_test(tc, test_grid_maps_match_the_graph);
  tcase_add_test(tc, test_landmarks_keep_plans_exact);
  tcase_add_test(tc, test_mixed_shapes);
  tcase_add_test(tc, test_errors_and_snapping);
  tcase_add_test(tc, test_deterministic);
  tcase_add_test(tc, test_slices_parts_and_threads);
  return check_run(s);
}

/* nav_internal.h: what the two halves of the planner's graph share, not part
 * of the API: nav.c (A*, string pulling, the start's and goal's links, the
 * visibility walk) and nav_build.c (making the graph from a map, updating it
 * after map changes, the radius-class cache). The graph's layout and the
 * small geometric tests both use. */
#ifndef STEER_NAV_INTERNAL_H
#define STEER_NAV_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nav.h"
#include "navmesh.h"

#define NAV_PI          3.14159265358979f
#define NAV_PIECE       8.0f  /* m, steer_nav_clear casts a long segment in pieces this long */
#define NAV_COLLINEAR   1e-4f /* |sin| of a bend below this: no corner */
#define NAV_TANGENT     1e-4f /* m^2, tangent test slack */
#define NAV_TOUCH       1e-3f /* m, a body this close past r + skin touches a surface (as the map's cast) */
#define NAV_NEAR        0.01f /* m, slack on the reach of a change (float rounding) */
#define NAV_GRID_CELLS  128u  /* cells of the primitive grid along the longer side */
#define NAV_MIN_CELL    0.5f  /* m */
#define NAV_BLOCKERS    8u    /* primitives remembered per node while linking: tried first */
#define NAV_MAX_CHANGES 64u   /* obstacles changed at once beyond which a full build is cheaper */
#define NAV_FAR_SLACK   0.01f /* m, prim_stops's early answer for primitives clearly off the line */
#define NAV_NONE        UINT32_MAX
#define NAV_NEW         (UINT32_MAX - 1u) /* a candidate of an obstacle new to the graph */

typedef struct nav_node {
  vec2 p;       /* where the route turns */
  vec2 a, c;    /* neighbouring vertices of the corner, for the tangent test */
  uint8_t tang; /* 1: prune by tangency at this node */
} nav_node;

/* An obstacle of the map the graph was made from, and its candidates. */
typedef struct nav_group {
  uint32_t id;
  uint64_t shape;        /* hash of kind, points and radius */
  vec2 lo, hi;           /* m, its box */
  uint32_t first, count; /* into cand */
} nav_group;

typedef struct nav_box {
  vec2 lo, hi;
} nav_box;

/* A segment (rad 0) or a circle (a == b): what a body must keep R from. */
typedef struct nav_prim {
  vec2 a, b;
  vec2 lo, hi; /* box, rad included */
  float rad;
} nav_prim;

struct steer_nav {
  float r;
  vec2 lo, hi;
  uint32_t version;
  uint32_t built;

  nav_group *groups;
  uint32_t ngroups;
  nav_node *cand;
  uint32_t *cand_live; /* node index, or NAV_NONE */
  uint32_t ncand;

  nav_node *nodes;
  uint32_t nnodes;
  uint32_t *start; /* nnodes + 1, into adj */
  uint32_t *adj;   /* neighbour indices, ascending per node */
  float *adj_len;  /* m */
  uint32_t nadj;   /* directed edges */
  nav_box *reach;  /* per node: a box holding it and its neighbours (nav_build.c: what
                    * an update must look at; may be larger than needed, never smaller) */

  /* The map's primitives in a uniform grid over [lo, hi] (clamped), each
   * cell listing the primitives whose boxes touch it. */
  nav_prim *prims;
  uint32_t nprims;
  uint32_t *cell_start; /* cols * rows + 1 */
  uint32_t *cell_items;
  uint32_t cols, rows;
  float cell, inv_cell;
  uint32_t *pstamp; /* per primitive: query generation that tested it */
  uint32_t pgen;

  /* nav.c: the search's tables and scratch (nav_search_alloc). */
  struct nav_search *search;

  /* When set (steer_nav_build_mesh), the graph is this navigation mesh and
   * none of the above is built: plans and updates go to it. */
  struct steer_mesh *mesh;
};

static uint64_t mix(uint64_t h, uint32_t x) { return (h ^ x) * 0x100000001b3ULL; }
static inline uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* ---- small geometric tests (visibility, tangency) ---------------------------- */

static inline float minf(float a, float b) { return a < b ? a : b; }
static inline float maxf(float a, float b) { return a > b ? a : b; }

static inline vec2 closest_on(vec2 a, vec2 b, vec2 p) {
  vec2 ab = v2_sub(b, a);
  float l2 = v2_dot(ab, ab);
  if (!(l2 > 0.0f))
    return a;
  float t = v2_dot(v2_sub(p, a), ab) / l2;
  t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
  return v2_add(a, v2_scale(ab, t));
}

static float dist2_point_seg(vec2 p, vec2 a, vec2 b) { return v2_len2(v2_sub(p, closest_on(a, b, p))); }

static float orient(vec2 a, vec2 b, vec2 c) { return v2_cross(v2_sub(b, a), v2_sub(c, a)); }

/* Squared distance between segments pq and ab. */
static inline float dist2_seg_seg(vec2 p, vec2 q, vec2 a, vec2 b) {
  float d1 = orient(p, q, a), d2 = orient(p, q, b), d3 = orient(a, b, p), d4 = orient(a, b, q);
  if (((d1 > 0.0f && d2 < 0.0f) || (d1 < 0.0f && d2 > 0.0f)) &&
      ((d3 > 0.0f && d4 < 0.0f) || (d3 < 0.0f && d4 > 0.0f)))
    return 0.0f;
  float d = minf(dist2_point_seg(a, p, q), dist2_point_seg(b, p, q));
  return minf(d, minf(dist2_point_seg(p, a, b), dist2_point_seg(q, a, b)));
}

/* Whether primitive s stops a disc of radius R swept from p to q. As the map's
 * cast: a disc already touching s (within R + NAV_TOUCH) is stopped only when
 * it moves toward s (the distance along a line to a convex shape has no
 * second minimum, so it never comes closer than where it is); otherwise it is
 * stopped when the segment comes closer than R. */
static inline int prim_blocks(const nav_prim *s, vec2 p, vec2 q, float R) {
  if (s->lo.x - R > maxf(p.x, q.x) + NAV_TOUCH || s->hi.x + R < minf(p.x, q.x) - NAV_TOUCH ||
      s->lo.y - R > maxf(p.y, q.y) + NAV_TOUCH || s->hi.y + R < minf(p.y, q.y) - NAV_TOUCH)
    return 0;
  vec2 c = closest_on(s->a, s->b, p);
  vec2 d0 = v2_sub(p, c);
  float l2 = v2_len2(d0), touch = R + NAV_TOUCH + s->rad;
  if (l2 < touch * touch) {
    if (!(l2 > 0.0f))
      return 1;
    return v2_dot(v2_sub(q, p), d0) < 0.0f;
  }
  float reach = R + s->rad;
  return dist2_seg_seg(p, q, s->a, s->b) < reach * reach;
}

/* Whether segment pq properly crosses segment ab (four orientations). */
static inline int seg_cross(vec2 p, vec2 q, vec2 a, vec2 b) {
  float d1 = orient(p, q, a), d2 = orient(p, q, b);
  if (!((d1 > 0.0f && d2 < 0.0f) || (d1 < 0.0f && d2 > 0.0f)))
    return 0;
  float d3 = orient(a, b, p), d4 = orient(a, b, q);
  return (d3 > 0.0f && d4 < 0.0f) || (d3 < 0.0f && d4 > 0.0f);
}

/* Whether s stops a body between p and q. Read both ways: an agent's start or
 * goal may touch a wall (it is free for r, not for r + skin); leaving it, or
 * arriving at it, along a line that gets no closer elsewhere is a clear move.
 * A segment that crosses s is stopped at once (the cheap common case). */
static inline int prim_stops(const nav_prim *s, vec2 p, vec2 q, float R) {
  if (s->lo.x - R > maxf(p.x, q.x) + NAV_TOUCH || s->hi.x + R < minf(p.x, q.x) - NAV_TOUCH ||
      s->lo.y - R > maxf(p.y, q.y) + NAV_TOUCH || s->hi.y + R < minf(p.y, q.y) - NAV_TOUCH)
    return 0;
  if (s->rad == 0.0f && seg_cross(p, q, s->a, s->b))
    return 1;
  /* Both ends of s (its centre, for a circle) on one side of the line pq and
   * farther from it than R + rad + NAV_FAR_SLACK: nothing of s comes within
   * reach of the segment, nor touches its ends (the slack is far above the
   * float error of either test, so the answer is the full test's). */
  vec2 d = v2_sub(q, p);
  float o1 = v2_cross(d, v2_sub(s->a, p)), o2 = v2_cross(d, v2_sub(s->b, p));
  float m = R + s->rad + NAV_FAR_SLACK, mm = m * m * v2_len2(d);
  if (((o1 > 0.0f && o2 > 0.0f) || (o1 < 0.0f && o2 < 0.0f)) && o1 * o1 > mm && o2 * o2 > mm)
    return 0;
  return prim_blocks(s, p, q, R) && prim_blocks(s, q, p, R);
}

static inline uint32_t cell_of(float x, float lo, float inv, uint32_t n) {
  float f = (x - lo) * inv;
  if (!(f > 0.0f))
    return 0;
  if (f >= (float)n)
    return n - 1;
  return (uint32_t)f;
}

/* Whether the line from p through node q stays on one side of the corner
 * (tangent at q): a route that cuts into the corner is never shortest. */
static inline int tangent(const nav_node *q, vec2 p) {
  if (!q->tang)
    return 1;
  vec2 d = v2_sub(q->p, p);
  float s1 = v2_cross(d, v2_sub(q->a, q->p)), s2 = v2_cross(d, v2_sub(q->c, q->p));
  return !((s1 > NAV_TANGENT && s2 < -NAV_TANGENT) || (s1 < -NAV_TANGENT && s2 > NAV_TANGENT));
}

/* Primitives that blocked lately (walls, mostly): tried first by a series of
 * visibility tests from one place. */
typedef struct nav_recent {
  uint32_t k[NAV_BLOCKERS]; /* most recently useful first */
  uint32_t n;
} nav_recent;

/* Puts primitive k first (dropping the last when full), or moves entry i
 * (< n) first. */
static inline void recent_front(nav_recent *r, uint32_t k, uint32_t i) {
  if (i >= r->n && r->n < NAV_BLOCKERS)
    r->n++;
  if (i >= r->n)
    i = r->n - 1;
  memmove(r->k + 1, r->k, i * sizeof r->k[0]);
  r->k[0] = k;
}

/* nav.c: whether a disc of radius R travels from p to q clear of every
 * primitive of the graph's grid (*blocker: the one that stops it). */
int nav_vis_walk(steer_nav *n, vec2 p, vec2 q, float R, uint32_t *blocker);
/* nav.c: whether a body of the graph's radius travels between a and b (the
 * same answer whichever order); recent (may be NULL) is tried first. */
int nav_vis_pair(steer_nav *n, vec2 a, vec2 b, nav_recent *recent);
/* nav.c: the search's memory for a graph of t->nnodes nodes and t->nadj
 * directed edges (0 or STEER_ENOMEM; its tables are filled by the first
 * plan), its release (accepts none) and its size. */
int nav_search_alloc(steer_nav *t);
void nav_search_free(steer_nav *n);
size_t nav_search_memory(const steer_nav *n);
/* nav_build.c: releases everything a graph holds (the struct stays). */
void nav_free_graph(steer_nav *n);

#endif /* STEER_NAV_INTERNAL_H */

/* nav.c: the visibility graph over inflated corners, kept up to date with the
 * map incrementally, A* and string pulling (see nav.h for the choice and its
 * costs).
 *
 * Layout. Every obstacle of the map (a group, in map order) owns its candidate
 * corner nodes (all corners that lie inside the bounds); a candidate is live
 * (a graph node) when a body fits there. Live candidates in map order are the
 * graph's nodes; the edges join every pair of live nodes that are tangent at
 * both ends and see each other (vis_pair). The graph is therefore a function of
 * the map alone, and the incremental update (nav_make with the old graph)
 * produces the same arrays, bit for bit, as a build from scratch.
 *
 * Why incremental (and not a full build off the tick thread): the graph is a
 * local function of the geometry. Whether a node is free depends only on what
 * lies within r + skin of it, whether two nodes see each other only on what
 * lies within r + skin of the segment between them; adding geometry can only
 * take nodes and edges away, removing it can only give them back. So after a
 * change only the candidates near a changed obstacle's box, the old edges that
 * pass near an added obstacle, the pairs that pass near a removed obstacle and
 * the pairs with new nodes are evaluated again; the rest is copied. That keeps
 * a change to a few milliseconds on the tick thread, with no threads, no
 * stale graph in use and nothing that depends on timing. */
#include "nav.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "world.h" /* error codes */

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
  uint64_t shape; /* hash of kind, points and radius */
  vec2 lo, hi;    /* m, its box */
  uint32_t first, count; /* into cand */
} nav_group;

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
  uint32_t *start;  /* nnodes + 1, into adj */
  uint32_t *adj;    /* neighbour indices, ascending per node */
  float *adj_len;   /* m */
  uint32_t nadj;    /* directed edges */

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

  /* A* scratch (nnodes + 2: start, goal). */
  float *g;
  uint32_t *parent;
  uint32_t *seen; /* generation stamps */
  uint32_t *closed;
  uint32_t gen;
  struct heap_item {
    float f;
    uint32_t node;
  } *heap;
  uint32_t heap_cap;
  uint32_t *route; /* reversed node list */
};

steer_nav *steer_nav_create(void) {
  steer_nav *n = calloc(1, sizeof *n);
  return n;
}

static void nav_free_graph(steer_nav *n) {
  free(n->groups);
  free(n->cand);
  free(n->cand_live);
  free(n->nodes);
  free(n->start);
  free(n->adj);
  free(n->adj_len);
  free(n->prims);
  free(n->cell_start);
  free(n->cell_items);
  free(n->pstamp);
  free(n->g);
  free(n->parent);
  free(n->seen);
  free(n->closed);
  free(n->heap);
  free(n->route);
}

void steer_nav_destroy(steer_nav *n) {
  if (!n)
    return;
  nav_free_graph(n);
  free(n);
}

float steer_nav_radius(const steer_nav *n) { return n->r; }
uint32_t steer_nav_map_version(const steer_nav *n) { return n->version; }
uint32_t steer_nav_node_count(const steer_nav *n) { return n->nnodes; }
uint32_t steer_nav_edge_count(const steer_nav *n) { return n->nadj / 2; }
vec2 steer_nav_node(const steer_nav *n, uint32_t i) { return n->nodes[i].p; }

uint32_t steer_nav_neighbours(const steer_nav *n, uint32_t i, const uint32_t **out) {
  if (i >= n->nnodes) {
    *out = NULL;
    return 0;
  }
  *out = n->adj + n->start[i];
  return n->start[i + 1] - n->start[i];
}

size_t steer_nav_memory(const steer_nav *n) {
  size_t k = n->nnodes + 2u;
  return sizeof *n + (size_t)n->ngroups * sizeof(nav_group) + (size_t)n->ncand * (sizeof(nav_node) + sizeof(uint32_t)) +
         (size_t)n->nnodes * sizeof(nav_node) + (n->nnodes + 1u) * sizeof(uint32_t) +
         (size_t)n->nadj * (sizeof(uint32_t) + sizeof(float)) +
         (size_t)n->nprims * (sizeof(nav_prim) + sizeof(uint32_t)) +
         ((size_t)n->cols * n->rows + 1u) * sizeof(uint32_t) +
         (n->cell_start ? (size_t)n->cell_start[(size_t)n->cols * n->rows] * sizeof(uint32_t) : 0u) +
         k * (sizeof(float) + 4 * sizeof(uint32_t)) + (size_t)n->heap_cap * sizeof(struct heap_item);
}

static uint64_t mix(uint64_t h, uint32_t x) { return (h ^ x) * 0x100000001b3ULL; }
static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

uint64_t steer_nav_hash(const steer_nav *n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  h = mix(h, fbits(n->r));
  h = mix(h, n->nnodes);
  for (uint32_t i = 0; i < n->nnodes; i++) {
    h = mix(mix(h, fbits(n->nodes[i].p.x)), fbits(n->nodes[i].p.y));
    h = mix(h, n->start[i + 1] - n->start[i]);
    for (uint32_t k = n->start[i]; k < n->start[i + 1]; k++)
      h = mix(mix(h, n->adj[k]), fbits(n->adj_len[k]));
  }
  return h;
}

/* ---- visibility: the map's own rule (steer_map_cast) ------------------------- */

int steer_nav_clear(const steer_map *m, vec2 a, vec2 b, float r) {
  vec2 d = v2_sub(b, a);
  float len = v2_len(d);
  if (!(len > 0.0f))
    return 1;
  uint32_t pieces = (uint32_t)ceilf(len / NAV_PIECE);
  if (pieces == 0)
    pieces = 1;
  vec2 step = v2_scale(d, 1.0f / (float)pieces);
  for (uint32_t i = 0; i < pieces; i++) {
    vec2 p = v2_add(a, v2_scale(d, (float)i / (float)pieces));
    float t;
    vec2 nn;
    if (steer_map_cast(m, p, step, r, &t, &nn))
      return 0;
  }
  return 1;
}

/* ---- visibility: the graph's primitive grid ---------------------------------- */

static inline float minf(float a, float b) { return a < b ? a : b; }
static inline float maxf(float a, float b) { return a > b ? a : b; }

static vec2 closest_on(vec2 a, vec2 b, vec2 p) {
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
static float dist2_seg_seg(vec2 p, vec2 q, vec2 a, vec2 b) {
  float d1 = orient(p, q, a), d2 = orient(p, q, b), d3 = orient(a, b, p), d4 = orient(a, b, q);
  if (((d1 > 0.0f && d2 < 0.0f) || (d1 < 0.0f && d2 > 0.0f)) && ((d3 > 0.0f && d4 < 0.0f) || (d3 < 0.0f && d4 > 0.0f)))
    return 0.0f;
  float d = minf(dist2_point_seg(a, p, q), dist2_point_seg(b, p, q));
  return minf(d, minf(dist2_point_seg(p, a, b), dist2_point_seg(q, a, b)));
}

/* Whether primitive s stops a disc of radius R swept from p to q. As the map's
 * cast: a disc already touching s (within R + NAV_TOUCH) is stopped only when
 * it moves toward s (the distance along a line to a convex shape has no
 * second minimum, so it never comes closer than where it is); otherwise it is
 * stopped when the segment comes closer than R. */
static int prim_blocks(const nav_prim *s, vec2 p, vec2 q, float R) {
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
static int seg_cross(vec2 p, vec2 q, vec2 a, vec2 b) {
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
static int prim_stops(const nav_prim *s, vec2 p, vec2 q, float R) {
  if (s->lo.x - R > maxf(p.x, q.x) + NAV_TOUCH || s->hi.x + R < minf(p.x, q.x) - NAV_TOUCH ||
      s->lo.y - R > maxf(p.y, q.y) + NAV_TOUCH || s->hi.y + R < minf(p.y, q.y) - NAV_TOUCH)
    return 0;
  if (s->rad == 0.0f && seg_cross(p, q, s->a, s->b))
    return 1;
  return prim_blocks(s, p, q, R) && prim_blocks(s, q, p, R);
}

static uint32_t cell_of(float x, float lo, float inv, uint32_t n) {
  float f = (x - lo) * inv;
  if (!(f > 0.0f))
    return 0;
  if (f >= (float)n)
    return n - 1;
  return (uint32_t)f;
}

/* Whether a disc of radius R travels from p to q clear of every primitive:
 * the cells within reach of the segment are visited in strips across its
 * longer axis, from p's end (a blocked segment is usually blocked near where
 * it starts), each primitive tested once. *blocker gets the one that stops it. */
static int vis_walk(steer_nav *n, vec2 p, vec2 q, float R, uint32_t *blocker) {
  if (n->nprims == 0)
    return 1;
  if (++n->pgen == 0) {
    memset(n->pstamp, 0, (size_t)n->nprims * sizeof *n->pstamp);
    n->pgen = 1;
  }
  const float e = R + NAV_TOUCH + NAV_NEAR;
  const int major_x = fabsf(q.x - p.x) >= fabsf(q.y - p.y);
  const float pu = major_x ? p.x : p.y, qu = major_x ? q.x : q.y;
  const float pv = major_x ? p.y : p.x, qv = major_x ? q.y : q.x;
  const float ulo = major_x ? n->lo.x : n->lo.y, vlo = major_x ? n->lo.y : n->lo.x;
  const uint32_t nu = major_x ? n->cols : n->rows, nv = major_x ? n->rows : n->cols;
  const float umin = minf(pu, qu), umax = maxf(pu, qu);
  const float slope = qu != pu ? (qv - pv) / (qu - pu) : 0.0f;
  uint32_t c0 = cell_of(umin - e, ulo, n->inv_cell, nu), c1 = cell_of(umax + e, ulo, n->inv_cell, nu);
  int step = pu <= qu ? 1 : -1;
  uint32_t cu = step > 0 ? c0 : c1;
  for (;;) {
    /* The part of the segment within reach of this strip. */
    float x0 = ulo + (float)cu * n->cell - e, x1 = ulo + (float)(cu + 1u) * n->cell + e;
    x0 = maxf(x0, umin);
    x1 = minf(x1, umax);
    if (x0 > x1) /* only the reach of an end falls in the strip */
      x0 = x1 = x1 < umin + 0.5f * (umax - umin) ? umin : umax;
    float va = pv + (x0 - pu) * slope, vb = pv + (x1 - pu) * slope;
    uint32_t r0 = cell_of(minf(va, vb) - e, vlo, n->inv_cell, nv), r1 = cell_of(maxf(va, vb) + e, vlo, n->inv_cell, nv);
    for (uint32_t cv = r0; cv <= r1; cv++) {
      uint32_t cell = major_x ? cv * n->cols + cu : cu * n->cols + cv;
      for (uint32_t i = n->cell_start[cell]; i < n->cell_start[cell + 1]; i++) {
        uint32_t k = n->cell_items[i];
        if (n->pstamp[k] == n->pgen)
          continue;
        n->pstamp[k] = n->pgen;
        if (prim_stops(&n->prims[k], p, q, R)) {
          *blocker = k;
          return 0;
        }
      }
    }
    if (cu == (step > 0 ? c1 : c0))
      break;
    cu = (uint32_t)((int32_t)cu + step);
  }
  return 1;
}

/* Whether a body travels between a and b (graph nodes, or a plan's start or
 * goal). The direction is fixed by the points alone (the lower in x, then y,
 * first) so that the float answer is the same whatever order the pair is met
 * in. recent (may be NULL) holds primitives
 * that blocked lately; they are tried first and the blocker joins them. */
typedef struct nav_recent {
  uint32_t k[NAV_BLOCKERS]; /* most recently useful first */
  uint32_t n;
} nav_recent;

/* Puts primitive k first (dropping the last when full), or moves entry i
 * (< n) first. */
static void recent_front(nav_recent *r, uint32_t k, uint32_t i) {
  if (i >= r->n && r->n < NAV_BLOCKERS)
    r->n++;
  if (i >= r->n)
    i = r->n - 1;
  memmove(r->k + 1, r->k, i * sizeof r->k[0]);
  r->k[0] = k;
}

static int vis_pair(steer_nav *n, vec2 a, vec2 b, nav_recent *recent) {
  if (b.x < a.x || (b.x == a.x && b.y < a.y)) {
    vec2 t = a;
    a = b;
    b = t;
  }
  const float R = n->r + STEER_MAP_SKIN;
  if (recent)
    for (uint32_t i = 0; i < recent->n; i++)
      if (prim_stops(&n->prims[recent->k[i]], a, b, R)) {
        recent_front(recent, recent->k[i], i); /* the walls of a room stop most pairs */
        return 0;
      }
  uint32_t k;
  if (vis_walk(n, a, b, R, &k))
    return 1;
  if (recent)
    recent_front(recent, k, NAV_BLOCKERS);
  return 0;
}

/* ---- the primitive grid ------------------------------------------------------ */

static int prim_push(nav_prim **v, uint32_t *len, uint32_t *cap, vec2 a, vec2 b, float rad) {
  if (*len == *cap) {
    uint32_t c = *cap ? 2 * *cap : 256;
    nav_prim *x = realloc(*v, (size_t)c * sizeof *x);
    if (!x)
      return STEER_ENOMEM;
    *v = x;
    *cap = c;
  }
  nav_prim *s = &(*v)[(*len)++];
  s->a = a;
  s->b = b;
  s->rad = rad;
  s->lo = v2(minf(a.x, b.x) - rad, minf(a.y, b.y) - rad);
  s->hi = v2(maxf(a.x, b.x) + rad, maxf(a.y, b.y) + rad);
  return 0;
}

static int prims_of(nav_prim **v, uint32_t *len, uint32_t *cap, const steer_obstacle_desc *o) {
  if (o->kind == STEER_OBSTACLE_CIRCLE)
    return prim_push(v, len, cap, o->points[0], o->points[0], o->radius);
  int rc = 0;
  uint32_t segs = o->kind == STEER_OBSTACLE_POLYGON ? o->count : o->count - 1u;
  for (uint32_t i = 0; i < segs && rc == 0; i++)
    rc = prim_push(v, len, cap, o->points[i], o->points[(i + 1u) % o->count], 0.0f);
  return rc;
}

/* Grid over t's bounds of the primitives already in t->prims. */
static int grid_build(steer_nav *t) {
  float w = t->hi.x - t->lo.x, h = t->hi.y - t->lo.y;
  t->cell = maxf(maxf(w, h) / (float)NAV_GRID_CELLS, NAV_MIN_CELL);
  t->inv_cell = 1.0f / t->cell;
  t->cols = (uint32_t)ceilf(w * t->inv_cell);
  t->rows = (uint32_t)ceilf(h * t->inv_cell);
  if (t->cols == 0)
    t->cols = 1;
  if (t->rows == 0)
    t->rows = 1;
  size_t cells = (size_t)t->cols * t->rows;
  t->cell_start = calloc(cells + 1u, sizeof *t->cell_start);
  t->pstamp = calloc(t->nprims + 1u, sizeof *t->pstamp);
  if (!t->cell_start || !t->pstamp)
    return STEER_ENOMEM;
  size_t items = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t k = 0; k < t->nprims; k++) {
      const nav_prim *s = &t->prims[k];
      uint32_t a = cell_of(s->lo.x, t->lo.x, t->inv_cell, t->cols), b = cell_of(s->hi.x, t->lo.x, t->inv_cell, t->cols);
      uint32_t c = cell_of(s->lo.y, t->lo.y, t->inv_cell, t->rows), d = cell_of(s->hi.y, t->lo.y, t->inv_cell, t->rows);
      for (uint32_t y = c; y <= d; y++)
        for (uint32_t x = a; x <= b; x++) {
          size_t cell = (size_t)y * t->cols + x;
          if (pass == 0)
            t->cell_start[cell + 1]++;
          else
            t->cell_items[t->cell_start[cell]++] = k; /* cell_start used as a fill cursor, shifted back below */
        }
    }
    if (pass == 0) {
      for (size_t i = 0; i < cells; i++)
        t->cell_start[i + 1] += t->cell_start[i];
      items = t->cell_start[cells];
      t->cell_items = malloc((items + 1u) * sizeof *t->cell_items);
      if (!t->cell_items)
        return STEER_ENOMEM;
    }
  }
  /* The fill advanced each start to the next cell's start. */
  for (size_t i = cells; i > 0; i--)
    t->cell_start[i] = t->cell_start[i - 1];
  t->cell_start[0] = 0;
  (void)items;
  return 0;
}

/* ---- candidate nodes ---------------------------------------------------------- */

typedef struct node_list {
  nav_node *v;
  uint32_t n, cap;
} node_list;

typedef struct build_ctx {
  float r, ro; /* radius, node offset (r + skin + margin) */
  vec2 lo, hi;
  node_list *out;
} build_ctx;

static int push_node(const build_ctx *b, vec2 p, vec2 a, vec2 c, int tang) {
  /* Corners outside the reachable box could never be stood on: dropped for
   * good (whether a body fits is decided per map, in nav_make). */
  if (p.x < b->lo.x + b->r || p.x > b->hi.x - b->r || p.y < b->lo.y + b->r || p.y > b->hi.y - b->r)
    return 0;
  node_list *l = b->out;
  if (l->n == l->cap) {
    uint32_t cap = l->cap ? 2 * l->cap : 64;
    nav_node *x = realloc(l->v, (size_t)cap * sizeof *x);
    if (!x)
      return STEER_ENOMEM;
    l->v = x;
    l->cap = cap;
  }
  l->v[l->n++] = (nav_node){p, a, c, (uint8_t)tang};
  return 0;
}

/* A convex corner v turning by phi (rad, > 0) from outward normal n1, the
 * rotation's sense s (+1 counter-clockwise): the inflated corner is an arc of
 * radius ro, circumscribed by k = ceil(phi / 45 deg) straight pieces whose
 * vertices are the nodes (k = 1 is the mitre). A route round the arc is then at
 * most ro (1/cos(22.5 deg) - 1) ~ 8 % of ro off the round corner's. */
static int corner_nodes(const build_ctx *b, vec2 v, vec2 a, vec2 c, vec2 n1, float phi, float s, int tang) {
  uint32_t k = (uint32_t)ceilf(phi / (NAV_PI / 4.0f) - 1e-3f);
  if (k == 0)
    k = 1;
  float half = phi / (2.0f * (float)k);
  float R = b->ro / cosf(half);
  int rc = 0;
  for (uint32_t j = 0; j < k && rc == 0; j++) {
    float t = s * (2.0f * (float)j + 1.0f) * half;
    vec2 d = v2(n1.x * cosf(t) - n1.y * sinf(t), n1.x * sinf(t) + n1.y * cosf(t));
    rc = push_node(b, v2_add(v, v2_scale(d, R)), a, c, tang);
  }
  return rc;
}

static float turn_of(vec2 n1, vec2 n2) {
  float d = v2_dot(n1, n2);
  return acosf(d > 1.0f ? 1.0f : (d < -1.0f ? -1.0f : d));
}

static int obstacle_nodes(const build_ctx *b, const steer_obstacle_desc *o) {
  int rc = 0;
  if (o->kind == STEER_OBSTACLE_CIRCLE) {
    float R = (o->radius + b->ro) / cosf(NAV_PI / (float)STEER_NAV_CIRCLE_SIDES);
    for (uint32_t i = 0; i < STEER_NAV_CIRCLE_SIDES && rc == 0; i++) {
      float t = 2.0f * NAV_PI * ((float)i + 0.5f) / (float)STEER_NAV_CIRCLE_SIDES;
      vec2 p = v2_add(o->points[0], v2(R * cosf(t), R * sinf(t)));
      rc = push_node(b, p, p, p, 0);
    }
    return rc;
  }
  const vec2 *v = o->points;
  uint32_t cnt = o->count;
  if (o->kind == STEER_OBSTACLE_POLYGON) {
    float area = 0.0f;
    for (uint32_t i = 0, j = cnt - 1; i < cnt; j = i++)
      area += v2_cross(v[j], v[i]);
    float s = area > 0.0f ? 1.0f : -1.0f; /* counter-clockwise: outward normal is (e.y, -e.x) */
    for (uint32_t i = 0; i < cnt && rc == 0; i++) {
      vec2 pv = v[(i + cnt - 1) % cnt], nv = v[(i + 1) % cnt];
      vec2 e1 = v2_norm(v2_sub(v[i], pv)), e2 = v2_norm(v2_sub(nv, v[i]));
      if (s * v2_cross(e1, e2) <= NAV_COLLINEAR)
        continue; /* reflex or straight: never on a shortest route */
      vec2 n1 = v2_scale(v2(e1.y, -e1.x), s), n2 = v2_scale(v2(e2.y, -e2.x), s);
      rc = corner_nodes(b, v[i], pv, nv, n1, turn_of(n1, n2), v2_cross(n1, n2) >= 0.0f ? 1.0f : -1.0f, 1);
    }
    return rc;
  }
  /* A wall: both ends are capped by two nodes each; a bend gets a corner on
   * its convex side. */
  for (uint32_t i = 0; i < cnt && rc == 0; i++) {
    if (i == 0 || i == cnt - 1) {
      vec2 other = v[i == 0 ? 1 : cnt - 2];
      vec2 d = v2_norm(v2_sub(v[i], other));
      vec2 side = v2(-d.y, d.x); /* d is side turned clockwise */
      rc = corner_nodes(b, v[i], other, other, side, NAV_PI, -1.0f, 0);
      continue;
    }
    vec2 e1 = v2_norm(v2_sub(v[i], v[i - 1])), e2 = v2_norm(v2_sub(v[i + 1], v[i]));
    float turn = v2_cross(e1, e2);
    if (fabsf(turn) <= NAV_COLLINEAR)
      continue;
    float s = turn > 0.0f ? 1.0f : -1.0f; /* a left turn is convex on the right */
    vec2 n1 = v2_scale(v2(e1.y, -e1.x), s), n2 = v2_scale(v2(e2.y, -e2.x), s);
    rc = corner_nodes(b, v[i], v[i - 1], v[i + 1], n1, turn_of(n1, n2), v2_cross(n1, n2) >= 0.0f ? 1.0f : -1.0f, 1);
  }
  return rc;
}

/* Whether the line from p through node q stays on one side of the corner
 * (tangent at q): a route that cuts into the corner is never shortest. */
static int tangent(const nav_node *q, vec2 p) {
  if (!q->tang)
    return 1;
  vec2 d = v2_sub(q->p, p);
  float s1 = v2_cross(d, v2_sub(q->a, q->p)), s2 = v2_cross(d, v2_sub(q->c, q->p));
  return !((s1 > NAV_TANGENT && s2 < -NAV_TANGENT) || (s1 < -NAV_TANGENT && s2 > NAV_TANGENT));
}

static uint64_t shape_hash(const steer_obstacle_desc *o) {
  uint64_t h = 0xcbf29ce484222325ULL;
  h = mix(mix(mix(h, o->kind), o->count), fbits(o->radius));
  for (uint32_t i = 0; i < o->count; i++)
    h = mix(mix(h, fbits(o->points[i].x)), fbits(o->points[i].y));
  return h;
}

static void shape_box(const steer_obstacle_desc *o, vec2 *lo, vec2 *hi) {
  float e = o->kind == STEER_OBSTACLE_CIRCLE ? o->radius : 0.0f;
  *lo = v2(o->points[0].x - e, o->points[0].y - e);
  *hi = v2(o->points[0].x + e, o->points[0].y + e);
  for (uint32_t i = 1; i < o->count; i++) {
    *lo = v2(minf(lo->x, o->points[i].x), minf(lo->y, o->points[i].y));
    *hi = v2(maxf(hi->x, o->points[i].x), maxf(hi->y, o->points[i].y));
  }
}

/* ---- making the graph (from scratch or from the previous one) ----------------- */

typedef struct nav_edge {
  uint32_t a, b; /* a < b */
  float len;     /* m (|pa - pb| is the same bits both ways) */
} nav_edge;

typedef struct edge_list {
  nav_edge *v;
  uint32_t n, cap;
} edge_list;

static int edge_push(edge_list *e, uint32_t a, uint32_t b, float len) {
  if (e->n == e->cap) {
    uint32_t cap = e->cap ? 2 * e->cap : 256;
    nav_edge *x = realloc(e->v, (size_t)cap * sizeof *x);
    if (!x)
      return STEER_ENOMEM;
    e->v = x;
    e->cap = cap;
  }
  e->v[e->n++] = (nav_edge){a < b ? a : b, a < b ? b : a, len};
  return 0;
}

/* The boxes of the obstacles that changed, widened by what they can reach. */
typedef struct change_set {
  vec2 lo[NAV_MAX_CHANGES], hi[NAV_MAX_CHANGES];
  vec2 c[NAV_MAX_CHANGES]; /* centre */
  float rho2[NAV_MAX_CHANGES]; /* squared radius of the circle round the widened box */
  uint32_t n;
} change_set;

static void change_add(change_set *s, vec2 lo, vec2 hi, float reach) {
  uint32_t i = s->n++;
  s->lo[i] = v2(lo.x - reach, lo.y - reach);
  s->hi[i] = v2(hi.x + reach, hi.y + reach);
  s->c[i] = v2_scale(v2_add(s->lo[i], s->hi[i]), 0.5f);
  s->rho2[i] = v2_len2(v2_sub(s->hi[i], s->c[i]));
}

static int point_near(const change_set *s, vec2 p) {
  for (uint32_t i = 0; i < s->n; i++)
    if (p.x >= s->lo[i].x && p.x <= s->hi[i].x && p.y >= s->lo[i].y && p.y <= s->hi[i].y)
      return 1;
  return 0;
}

/* Whether segment pq meets one of the widened boxes (slab clipping). */
static int seg_near(const change_set *s, vec2 p, vec2 q) {
  vec2 d = v2_sub(q, p);
  vec2 blo = v2(minf(p.x, q.x), minf(p.y, q.y)), bhi = v2(maxf(p.x, q.x), maxf(p.y, q.y));
  for (uint32_t i = 0; i < s->n; i++) {
    if (blo.x > s->hi[i].x || bhi.x < s->lo[i].x || blo.y > s->hi[i].y || bhi.y < s->lo[i].y)
      continue;
    float t0 = 0.0f, t1 = 1.0f;
    int hit = 1;
    for (int ax = 0; ax < 2 && hit; ax++) {
      float o = ax ? p.y : p.x, dd = ax ? d.y : d.x;
      float lo = ax ? s->lo[i].y : s->lo[i].x, hi = ax ? s->hi[i].y : s->hi[i].x;
      if (dd == 0.0f) {
        hit = o >= lo && o <= hi;
        continue;
      }
      float a = (lo - o) / dd, b = (hi - o) / dd;
      if (a > b) {
        float t = a;
        a = b;
        b = t;
      }
      t0 = maxf(t0, a);
      t1 = minf(t1, b);
      hit = t0 <= t1;
    }
    if (hit)
      return 1;
  }
  return 0;
}

/* Per candidate of the new graph: where it came from. */
enum { CAND_NEW = 0, CAND_WAS_LIVE, CAND_WAS_DEAD };

static int old_edge(const steer_nav *o, uint32_t u, uint32_t v) {
  uint32_t lo = o->start[u], hi = o->start[u + 1];
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (o->adj[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < o->start[u + 1] && o->adj[lo] == v;
}

/* Whether every segment from p to the disc (c, sqrt(rho2)) crosses one
 * segment primitive: it then cuts both tangents from p to the (slightly
 * larger) disc, between p and the disc. Such a p sees nothing through the
 * disc. The primitive is looked for among those that shadowed lately
 * (walls), then as what stops the way from p to c. */
static int separates(const nav_prim *s, vec2 p, vec2 t1, vec2 t2, vec2 c, float rho2) {
  if (s->rad != 0.0f || !seg_cross(p, t1, s->a, s->b) || !seg_cross(p, t2, s->a, s->b))
    return 0;
  /* Where it crosses the two tangents: the chord between must miss the disc. */
  vec2 e = v2_sub(s->b, s->a);
  float den1 = v2_cross(v2_sub(t1, p), e), den2 = v2_cross(v2_sub(t2, p), e);
  if (den1 == 0.0f || den2 == 0.0f)
    return 0;
  vec2 a = v2_add(p, v2_scale(v2_sub(t1, p), v2_cross(v2_sub(s->a, p), e) / den1));
  vec2 b = v2_add(p, v2_scale(v2_sub(t2, p), v2_cross(v2_sub(s->a, p), e) / den2));
  return dist2_point_seg(c, a, b) > rho2;
}

static int shadowed(steer_nav *t, vec2 p, vec2 c, float rho2, nav_recent *walls) {
  const float rho = sqrtf(rho2) + NAV_NEAR;
  vec2 d = v2_sub(c, p);
  float d2 = v2_len2(d);
  if (d2 <= 4.0f * rho * rho)
    return 0;
  /* Tangent points of the disc rho seen from p. */
  float dl = sqrtf(d2), tl = sqrtf(d2 - rho * rho);
  float sn = rho / dl, cs = tl / dl;
  vec2 u = v2_scale(d, 1.0f / dl);
  vec2 r1 = v2(u.x * cs - u.y * sn, u.x * sn + u.y * cs), r2 = v2(u.x * cs + u.y * sn, -u.x * sn + u.y * cs);
  vec2 t1 = v2_add(p, v2_scale(r1, tl)), t2 = v2_add(p, v2_scale(r2, tl));
  const float rr = rho * rho;
  for (uint32_t i = 0; i < walls->n; i++)
    if (separates(&t->prims[walls->k[i]], p, t1, t2, c, rr)) {
      recent_front(walls, walls->k[i], i);
      return 1;
    }
  uint32_t k;
  if (vis_walk(t, p, c, t->r + STEER_MAP_SKIN, &k) || !separates(&t->prims[k], p, t1, t2, c, rr))
    return 0;
  recent_front(walls, k, NAV_BLOCKERS);
  return 1;
}

/* Makes t (zeroed) the graph of m for radius r in [lo, hi]; o, when not NULL,
 * is the graph of an earlier map for the same r and bounds, reused where the
 * map did not change. */
static int nav_make(steer_nav *t, steer_nav *o, const steer_map *m, float r, vec2 lo, vec2 hi) {
  t->r = r;
  t->lo = lo;
  t->hi = hi;
  const float R = r + STEER_MAP_SKIN;
  const float seg_reach = R + NAV_TOUCH + NAV_NEAR; /* covers what a node's freedom and a segment's sight depend on */
  uint32_t count = steer_map_count(m);
  uint32_t prim_cap = 0;
  int rc = 0;
  node_list cand = {0};
  uint8_t *state = NULL;
  uint32_t *prev = NULL, *old_to_new = NULL, *cand_prev = NULL, *gmatch = NULL, *vis_nodes = NULL;
  uint8_t *fresh = NULL;
  edge_list e = {0};
  static const change_set empty;
  change_set *added = malloc(sizeof *added), *removed = malloc(sizeof *removed);
  t->groups = malloc(((size_t)count + 1u) * sizeof *t->groups);
  if (!added || !removed || !t->groups) {
    rc = STEER_ENOMEM;
    goto done;
  }
  *added = empty;
  *removed = empty;

  /* Groups in map order; the old ones matched in order (a removal keeps the
   * order of the rest, an addition goes last), the rest are new. */
  gmatch = malloc(((size_t)count + 1u) * sizeof *gmatch);
  if (!gmatch) {
    rc = STEER_ENOMEM;
    goto done;
  }
  build_ctx b = {r, r + STEER_MAP_SKIN + STEER_NAV_MARGIN, lo, hi, &cand};
  uint32_t og = 0; /* next old group */
  for (uint32_t i = 0; i < count && rc == 0; i++) {
    uint32_t id;
    steer_obstacle_desc d;
    if (steer_map_get(m, i, &id, &d) != 0)
      continue;
    rc = prims_of(&t->prims, &t->nprims, &prim_cap, &d);
    nav_group *g = &t->groups[t->ngroups];
    g->id = id;
    g->shape = shape_hash(&d);
    shape_box(&d, &g->lo, &g->hi);
    g->first = cand.n;
    uint32_t match = NAV_NONE;
    while (o && og < o->ngroups && match == NAV_NONE) {
      const nav_group *x = &o->groups[og];
      if (x->id == g->id && x->shape == g->shape) {
        match = og;
      } else if (removed->n == NAV_MAX_CHANGES) {
        o = NULL; /* too many changes: from scratch */
      } else {
        change_add(removed, x->lo, x->hi, seg_reach);
      }
      og++;
    }
    if (rc == 0 && match != NAV_NONE) {
      const nav_group *x = &o->groups[match];
      for (uint32_t k = 0; k < x->count && rc == 0; k++) {
        const nav_node *nd = &o->cand[x->first + k];
        rc = push_node(&b, nd->p, nd->a, nd->c, nd->tang); /* in bounds: they were */
      }
    } else if (rc == 0) {
      if (o && added->n == NAV_MAX_CHANGES)
        o = NULL;
      else if (o)
        change_add(added, g->lo, g->hi, seg_reach);
      rc = obstacle_nodes(&b, &d);
    }
    g->count = cand.n - g->first;
    gmatch[t->ngroups++] = match;
  }
  while (rc == 0 && o && og < o->ngroups) {
    if (removed->n == NAV_MAX_CHANGES)
      o = NULL;
    else
      change_add(removed, o->groups[og].lo, o->groups[og].hi, seg_reach);
    og++;
  }
  if (rc != 0)
    goto done;
  /* Each candidate's old node index (NAV_NONE: was no node), or NAV_NEW. */
  cand_prev = malloc(((size_t)cand.n + 1u) * sizeof *cand_prev);
  if (!cand_prev) {
    rc = STEER_ENOMEM;
    goto done;
  }
  for (uint32_t gi = 0; gi < t->ngroups; gi++) {
    const nav_group *g = &t->groups[gi];
    for (uint32_t k = 0; k < g->count; k++)
      cand_prev[g->first + k] = o && gmatch[gi] != NAV_NONE ? o->cand_live[o->groups[gmatch[gi]].first + k] : NAV_NEW;
  }
  if (!o)
    added->n = removed->n = 0;
  rc = grid_build(t);
  if (rc != 0)
    goto done;

  /* Which candidates are nodes: new ones are tested; an old node only when
   * something was added near it, an old dead candidate only when something
   * was removed near it. */
  t->ncand = cand.n;
  t->cand = cand.v;
  cand.v = NULL;
  t->cand_live = malloc(((size_t)t->ncand + 1u) * sizeof *t->cand_live);
  state = malloc((size_t)t->ncand + 1u);
  if (!t->cand_live || !state) {
    rc = STEER_ENOMEM;
    goto done;
  }
  uint32_t live = 0;
  for (uint32_t k = 0; k < t->ncand; k++) {
    vec2 p = t->cand[k].p;
    uint32_t pv = cand_prev[k];
    int is;
    if (pv == NAV_NEW) {
      state[k] = CAND_NEW;
      is = steer_map_free(m, p, R, 0.0f);
    } else if (pv != NAV_NONE) {
      state[k] = CAND_WAS_LIVE;
      is = !point_near(added, p) || steer_map_free(m, p, R, 0.0f);
    } else {
      state[k] = CAND_WAS_DEAD;
      is = point_near(removed, p) && steer_map_free(m, p, R, 0.0f);
    }
    t->cand_live[k] = is ? live++ : NAV_NONE;
  }
  t->nnodes = live;
  t->nodes = malloc(((size_t)live + 1u) * sizeof *t->nodes);
  prev = malloc(((size_t)live + 1u) * sizeof *prev);
  fresh = malloc((size_t)live + 1u);
  old_to_new = o ? malloc(((size_t)o->nnodes + 1u) * sizeof *old_to_new) : NULL;
  if (!t->nodes || !prev || !fresh || (o && !old_to_new)) {
    rc = STEER_ENOMEM;
    goto done;
  }
  if (o)
    for (uint32_t i = 0; i < o->nnodes; i++)
      old_to_new[i] = NAV_NONE;
  for (uint32_t k = 0; k < t->ncand; k++) {
    uint32_t i = t->cand_live[k];
    if (i == NAV_NONE)
      continue;
    t->nodes[i] = t->cand[k];
    prev[i] = state[k] == CAND_WAS_LIVE ? cand_prev[k] : NAV_NONE;
    fresh[i] = prev[i] == NAV_NONE;
    if (prev[i] != NAV_NONE)
      old_to_new[prev[i]] = i;
  }

  /* Edges kept: both ends still nodes, and nothing added near the segment
   * (else it is tested again). */
  if (o)
    for (uint32_t u = 0; u < o->nnodes && rc == 0; u++) {
      uint32_t nu = old_to_new[u];
      if (nu == NAV_NONE)
        continue;
      for (uint32_t k = o->start[u]; k < o->start[u + 1] && rc == 0; k++) {
        uint32_t v = o->adj[k], nv;
        if (v < u || (nv = old_to_new[v]) == NAV_NONE)
          continue;
        vec2 a = t->nodes[nu].p, c = t->nodes[nv].p;
        if (added->n == 0 || !seg_near(added, a, c) || vis_pair(t, a, c, NULL))
          rc = edge_push(&e, nu, nv, o->adj_len[k]);
      }
    }
  if (o || removed->n > 0) {
    vis_nodes = malloc(((size_t)t->nnodes + 1u) * sizeof *vis_nodes);
    if (!vis_nodes) {
      rc = STEER_ENOMEM;
      goto done;
    }
  }
  /* Edges of the nodes of an added obstacle: only with the nodes from which
   * a disc round its nodes is not shadowed by one wall (fresh = 2: done). */
  for (uint32_t gi = 0; o && gi < t->ngroups && rc == 0; gi++) {
    const nav_group *g = &t->groups[gi];
    if (gmatch[gi] != NAV_NONE)
      continue;
    vec2 blo = v2(INFINITY, INFINITY), bhi = v2(-INFINITY, -INFINITY);
    uint32_t live_here = 0;
    for (uint32_t k = g->first; k < g->first + g->count; k++)
      if (t->cand_live[k] != NAV_NONE) {
        vec2 p = t->cand[k].p;
        blo = v2(minf(blo.x, p.x), minf(blo.y, p.y));
        bhi = v2(maxf(bhi.x, p.x), maxf(bhi.y, p.y));
        live_here++;
      }
    if (live_here == 0)
      continue;
    const vec2 c = v2_scale(v2_add(blo, bhi), 0.5f);
    float rho2 = 0.0f;
    for (uint32_t k = g->first; k < g->first + g->count; k++)
      if (t->cand_live[k] != NAV_NONE)
        rho2 = maxf(rho2, v2_len2(v2_sub(t->cand[k].p, c)));
    rho2 = (sqrtf(rho2) + NAV_NEAR) * (sqrtf(rho2) + NAV_NEAR);
    uint32_t nv = 0;
    nav_recent walls = {{0}, 0};
    for (uint32_t w = 0; w < t->nnodes; w++)
      if (!shadowed(t, t->nodes[w].p, c, rho2, &walls))
        vis_nodes[nv++] = w;
    for (uint32_t k = g->first; k < g->first + g->count && rc == 0; k++) {
      const uint32_t f = t->cand_live[k];
      if (f == NAV_NONE)
        continue;
      fresh[f] = 2;
      nav_recent recent = {{0}, 0};
      const nav_node *nf = &t->nodes[f];
      for (uint32_t x = 0; x < nv && rc == 0; x++) {
        const uint32_t w = vis_nodes[x];
        if (w == f || (fresh[w] && w > f))
          continue;
        const nav_node *nw = &t->nodes[w];
        if (!tangent(nf, nw->p) || !tangent(nw, nf->p))
          continue;
        if (vis_pair(t, nf->p, nw->p, &recent))
          rc = edge_push(&e, f, w, v2_len(v2_sub(nf->p, nw->p)));
      }
    }
  }
  /* Edges of the other new nodes (all of them from scratch; revived ones):
   * every other node, each pair once. */
  for (uint32_t f = 0; f < t->nnodes && rc == 0; f++) {
    if (fresh[f] != 1)
      continue;
    nav_recent recent = {{0}, 0};
    const nav_node *nf = &t->nodes[f];
    for (uint32_t w = 0; w < t->nnodes && rc == 0; w++) {
      if (w == f || (fresh[w] && w > f))
        continue;
      const nav_node *nw = &t->nodes[w];
      if (!tangent(nf, nw->p) || !tangent(nw, nf->p))
        continue;
      if (vis_pair(t, nf->p, nw->p, &recent))
        rc = edge_push(&e, f, w, v2_len(v2_sub(nf->p, nw->p)));
    }
  }
  /* Pairs of old nodes that may see each other now something is gone: those
   * whose segment passes near a removed obstacle and were not edges. Only
   * nodes from which the removed area is not hidden take part (shadowed). */
  for (uint32_t i = 0; i < removed->n && rc == 0; i++) {
    const vec2 c = removed->c[i];
    const float rho2 = removed->rho2[i];
    uint32_t nv = 0;
    nav_recent walls = {{0}, 0};
    for (uint32_t u = 0; u < t->nnodes; u++)
      if (!fresh[u] && !shadowed(t, t->nodes[u].p, c, rho2, &walls))
        vis_nodes[nv++] = u;
    for (uint32_t x = 0; x < nv && rc == 0; x++) {
      const uint32_t u = vis_nodes[x];
      const vec2 pu = t->nodes[u].p, cu = v2_sub(c, pu);
      const float du2 = v2_len2(cu);
      nav_recent recent = {{0}, 0};
      for (uint32_t y = x + 1; y < nv && rc == 0; y++) {
        const uint32_t v = vis_nodes[y];
        /* Distance from c to the segment pu-pv within rho. */
        vec2 w = v2_sub(t->nodes[v].p, pu);
        float l2 = v2_len2(w), dt = v2_dot(cu, w), cr = v2_cross(w, cu);
        int near = dt <= 0.0f ? du2 <= rho2 : (dt >= l2 ? v2_len2(v2_sub(c, t->nodes[v].p)) <= rho2 : cr * cr <= rho2 * l2);
        if (!near)
          continue;
        /* Met once per removed box it passes: the first such box takes it. */
        int earlier = 0;
        for (uint32_t j = 0; j < i && !earlier; j++) {
          vec2 cj = removed->c[j];
          vec2 cuj = v2_sub(cj, pu);
          float dtj = v2_dot(cuj, w), crj = v2_cross(w, cuj);
          earlier = dtj <= 0.0f ? v2_len2(cuj) <= removed->rho2[j]
                                : (dtj >= l2 ? v2_len2(v2_sub(cj, t->nodes[v].p)) <= removed->rho2[j]
                                             : crj * crj <= removed->rho2[j] * l2);
        }
        if (earlier || old_edge(o, prev[u], prev[v]))
          continue;
        const nav_node *nu = &t->nodes[u], *nw = &t->nodes[v];
        if (!tangent(nu, nw->p) || !tangent(nw, nu->p))
          continue;
        if (vis_pair(t, nu->p, nw->p, &recent))
          rc = edge_push(&e, u, v, v2_len(v2_sub(nu->p, nw->p)));
      }
    }
  }
  if (rc != 0)
    goto done;

  /* Adjacency, ascending per node. */
  uint32_t k2 = t->nnodes + 2u;
  t->nadj = 2 * e.n;
  t->start = calloc(t->nnodes + 1u, sizeof *t->start);
  t->adj = malloc(((size_t)t->nadj + 1u) * sizeof *t->adj);
  t->adj_len = malloc(((size_t)t->nadj + 1u) * sizeof *t->adj_len);
  t->g = malloc(k2 * sizeof *t->g);
  t->parent = malloc(k2 * sizeof *t->parent);
  t->seen = calloc(k2, sizeof *t->seen);
  t->closed = calloc(k2, sizeof *t->closed);
  t->route = malloc(k2 * sizeof *t->route);
  /* A node is pushed at most once per relaxation: every edge both ways, the
   * start's links, one goal link per node and one retry per start link. */
  t->heap_cap = t->nadj + 3u * k2 + 1u;
  t->heap = malloc((size_t)t->heap_cap * sizeof *t->heap);
  if (!t->start || !t->adj || !t->adj_len || !t->g || !t->parent || !t->seen || !t->closed || !t->route || !t->heap) {
    rc = STEER_ENOMEM;
    goto done;
  }
  for (uint32_t i = 0; i < e.n; i++) {
    t->start[e.v[i].a + 1]++;
    t->start[e.v[i].b + 1]++;
  }
  for (uint32_t i = 0; i < t->nnodes; i++)
    t->start[i + 1] += t->start[i];
  uint32_t *fill = t->route; /* scratch: next slot per node */
  memcpy(fill, t->start, t->nnodes * sizeof *fill);
  for (uint32_t i = 0; i < e.n; i++) {
    const nav_edge *x = &e.v[i];
    t->adj_len[fill[x->a]] = x->len;
    t->adj[fill[x->a]++] = x->b;
    t->adj_len[fill[x->b]] = x->len;
    t->adj[fill[x->b]++] = x->a;
  }
  for (uint32_t u = 0; u < t->nnodes; u++) {
    /* Mostly in order already (kept edges come sorted): insertion sort. */
    uint32_t *x = t->adj + t->start[u];
    float *l = t->adj_len + t->start[u];
    uint32_t len = t->start[u + 1] - t->start[u];
    for (uint32_t i = 1; i < len; i++) {
      uint32_t v = x[i], j = i;
      float lv = l[i];
      while (j > 0 && x[j - 1] > v) {
        x[j] = x[j - 1];
        l[j] = l[j - 1];
        j--;
      }
      x[j] = v;
      l[j] = lv;
    }
  }
  t->version = steer_map_version(m);
  t->built = 1;
done:
  free(cand.v);
  free(cand_prev);
  free(gmatch);
  free(vis_nodes);
  free(state);
  free(prev);
  free(fresh);
  free(old_to_new);
  free(e.v);
  free(added);
  free(removed);
  return rc;
}

int steer_nav_build(steer_nav *n, const steer_map *m, float r, vec2 lo, vec2 hi) {
  if (!n || !m || !isfinite(r) || r < 0.0f || !(lo.x < hi.x) || !(lo.y < hi.y))
    return STEER_EINVAL;
  steer_nav t;
  memset(&t, 0, sizeof t);
  int rc = nav_make(&t, NULL, m, r, lo, hi);
  if (rc != 0) {
    nav_free_graph(&t);
    return rc;
  }
  nav_free_graph(n);
  *n = t;
  return 0;
}

int steer_nav_update(steer_nav *n, const steer_map *m) {
  if (!n || !m || !n->built)
    return STEER_EINVAL;
  if (n->version == steer_map_version(m))
    return 0;
  steer_nav t;
  memset(&t, 0, sizeof t);
  int rc = nav_make(&t, n, m, n->r, n->lo, n->hi);
  if (rc != 0) {
    nav_free_graph(&t);
    return rc;
  }
  nav_free_graph(n);
  *n = t;
  return 0;
}
/* ---- A* ---------------------------------------------------------------------- */

static int heap_less(const struct heap_item *x, const struct heap_item *y) {
  return x->f < y->f || (x->f == y->f && x->node < y->node);
}

/* A 4-ary heap: half the depth of a binary one, and a node's children share
 * a cache line; pops dominate (the start's links are laid out at once). */
#define NAV_HEAP_K 4u

static void heap_push(steer_nav *n, uint32_t *size, float f, uint32_t node) {
  uint32_t i = (*size)++;
  struct heap_item x = {f, node};
  while (i > 0) {
    uint32_t p = (i - 1) / NAV_HEAP_K;
    if (!heap_less(&x, &n->heap[p]))
      break;
    n->heap[i] = n->heap[p];
    i = p;
  }
  n->heap[i] = x;
}

static void heap_down(steer_nav *n, uint32_t size, uint32_t i) {
  struct heap_item x = n->heap[i];
  for (;;) {
    uint32_t c = NAV_HEAP_K * i + 1, end = c + NAV_HEAP_K, s = NAV_NONE;
    if (end > size)
      end = size;
    const struct heap_item *best = &x;
    for (; c < end; c++)
      if (heap_less(&n->heap[c], best)) {
        best = &n->heap[c];
        s = c;
      }
    if (s == NAV_NONE)
      break;
    n->heap[i] = n->heap[s];
    i = s;
  }
  n->heap[i] = x;
}

static struct heap_item heap_pop(steer_nav *n, uint32_t *size) {
  struct heap_item top = n->heap[0];
  n->heap[0] = n->heap[--(*size)];
  heap_down(n, *size, 0);
  return top;
}

static vec2 node_pos(const steer_nav *n, uint32_t i, vec2 from, vec2 to) {
  return i < n->nnodes ? n->nodes[i].p : (i == n->nnodes ? from : to);
}

/* Relaxes the edge u -> v of length len. */
static void relax(steer_nav *n, uint32_t *hs, uint32_t u, uint32_t v, float len, vec2 from, vec2 to) {
  if (n->closed[v] == n->gen)
    return;
  float g = n->g[u] + len;
  if (n->seen[v] == n->gen && g >= n->g[v])
    return;
  n->seen[v] = n->gen;
  n->g[v] = g;
  n->parent[v] = u;
  if (*hs < n->heap_cap)
    heap_push(n, hs, g + v2_len(v2_sub(to, node_pos(n, v, from, to))), v);
}

int steer_nav_plan(steer_nav *n, const steer_map *m, vec2 from, vec2 to, vec2 *out, uint32_t cap,
                   steer_nav_result *res) {
  steer_nav_result dummy;
  if (!res)
    res = &dummy;
  memset(res, 0, sizeof *res);
  if (!n || !m || !n->built || n->version != steer_map_version(m) || !isfinite(from.x) || !isfinite(from.y) ||
      !isfinite(to.x) || !isfinite(to.y) || cap == 0 || !out)
    return STEER_EINVAL;
  const float r = n->r;
  if (steer_map_count(m) > 0 && !steer_map_free(m, to, r, 0.0f))
    return STEER_EBLOCKED;
  nav_recent near_from = {{0}, 0}, near_to = {{0}, 0}; /* what stops the start's and the goal's links */
  if (vis_pair(n, from, to, &near_from)) {
    out[0] = to;
    res->count = 1;
    res->length = v2_len(v2_sub(to, from));
    return 0;
  }
  const uint32_t S = n->nnodes, G = n->nnodes + 1;
  if (++n->gen == 0) { /* stamps wrapped: start over */
    memset(n->seen, 0, (S + 2) * sizeof *n->seen);
    memset(n->closed, 0, (S + 2) * sizeof *n->closed);
    n->gen = 1;
  }
  uint32_t hs = 0;
  n->seen[S] = n->gen;
  n->g[S] = 0.0f;
  n->parent[S] = S;
  n->closed[S] = n->gen;
  res->expanded++;
  /* The start links to every corner tangent to it (checked lazily, below):
   * laid out at once and heapified, cheaper than a push each. */
  for (uint32_t v = 0; v < S; v++)
    if (tangent(&n->nodes[v], from)) {
      float g = v2_len(v2_sub(n->nodes[v].p, from));
      n->seen[v] = n->gen;
      n->g[v] = g;
      n->parent[v] = S;
      n->heap[hs++] = (struct heap_item){g + v2_len(v2_sub(to, n->nodes[v].p)), v};
    }
  for (uint32_t i = hs / NAV_HEAP_K + 1u; i-- > 0;)
    if (i < hs)
      heap_down(n, hs, i);
  int found = 0;
  while (hs > 0) {
    struct heap_item it = heap_pop(n, &hs);
    uint32_t u = it.node;
    if (n->closed[u] == n->gen)
      continue;
    n->closed[u] = n->gen;
    if (u == G) {
      found = 1;
      break;
    }
    if (u < S && n->parent[u] == S && !vis_pair(n, from, n->nodes[u].p, &near_from)) {
      /* The start's links are checked lazily (as in Lazy Theta*): a corner
       * it does not see takes its best closed neighbour instead, or waits
       * for one. */
      n->closed[u] = 0;
      n->seen[u] = 0;
      float best = INFINITY;
      uint32_t bp = S;
      for (uint32_t k = n->start[u]; k < n->start[u + 1]; k++) {
        uint32_t v = n->adj[k];
        if (n->closed[v] == n->gen && n->g[v] + n->adj_len[k] < best) {
          best = n->g[v] + n->adj_len[k];
          bp = v;
        }
      }
      if (bp != S) {
        n->seen[u] = n->gen;
        n->g[u] = best;
        n->parent[u] = bp;
        if (hs < n->heap_cap)
          heap_push(n, &hs, best + v2_len(v2_sub(to, n->nodes[u].p)), u);
      }
      continue;
    }
    res->expanded++;
    for (uint32_t k = n->start[u]; k < n->start[u + 1]; k++)
      relax(n, &hs, u, n->adj[k], n->adj_len[k], from, to);
    if (n->closed[G] != n->gen && tangent(&n->nodes[u], to) && vis_pair(n, n->nodes[u].p, to, &near_to))
      relax(n, &hs, u, G, v2_len(v2_sub(to, n->nodes[u].p)), from, to);
  }
  if (!found)
    return STEER_ENOENT;
  /* The route back from the goal, then string pulling: a corner is dropped
   * whenever the body sees past it (A* over tangent corners is already taut
   * in exact geometry; this removes the slack of approximated corners). */
  uint32_t len = 0;
  for (uint32_t v = G; v != S; v = n->parent[v])
    n->route[len++] = v;
  uint32_t w = 0;
  vec2 cur = from;
  uint32_t i = len; /* route[len-1] is the first point after from */
  while (i > 0) {
    uint32_t j = i - 1; /* furthest visible among the next points */
    while (j > 0 && vis_pair(n, cur, node_pos(n, n->route[j - 1], from, to), NULL))
      j--;
    vec2 p = node_pos(n, n->route[j], from, to);
    if (w == cap)
      return STEER_EFULL;
    out[w++] = p;
    res->length += v2_len(v2_sub(p, cur));
    cur = p;
    i = j;
  }
  res->count = w;
  return 0;
}

/* ---- cache of graphs per radius class ------------------------------------------ */

struct steer_nav_cache {
  vec2 lo, hi;
  steer_nav *nav[STEER_NAV_CLASSES];
  uint64_t builds; /* full builds (steer_nav_build) so far */
};

float steer_nav_class_radius(float r) {
  float k = ceilf(r / STEER_NAV_CLASS - 1e-4f);
  return (k < 0.0f ? 0.0f : k) * STEER_NAV_CLASS;
}

steer_nav_cache *steer_nav_cache_create(vec2 lo, vec2 hi) {
  steer_nav_cache *c = calloc(1, sizeof *c);
  if (c) {
    c->lo = lo;
    c->hi = hi;
  }
  return c;
}

void steer_nav_cache_destroy(steer_nav_cache *c) {
  if (!c)
    return;
  for (uint32_t i = 0; i < STEER_NAV_CLASSES; i++)
    steer_nav_destroy(c->nav[i]);
  free(c);
}

steer_nav *steer_nav_cache_get(steer_nav_cache *c, const steer_map *m, float r) {
  if (!isfinite(r) || r < 0.0f)
    return NULL;
  float cr = steer_nav_class_radius(r);
  uint32_t k = (uint32_t)lrintf(cr / STEER_NAV_CLASS);
  if (k >= STEER_NAV_CLASSES)
    return NULL;
  if (!c->nav[k] && !(c->nav[k] = steer_nav_create()))
    return NULL;
  steer_nav *n = c->nav[k];
  if (n->built && n->r == cr) {
    if (steer_nav_update(n, m) != 0) /* no memory: try from scratch */
      n->built = 0;
  }
  if (!n->built || n->r != cr) {
    c->builds++;
    if (steer_nav_build(n, m, cr, c->lo, c->hi) != 0)
      return NULL;
  }
  return n;
}

int steer_nav_cache_has(const steer_nav_cache *c, float r) {
  if (!isfinite(r) || r < 0.0f)
    return 0;
  float cr = steer_nav_class_radius(r);
  uint32_t k = (uint32_t)lrintf(cr / STEER_NAV_CLASS);
  return k < STEER_NAV_CLASSES && c->nav[k] && c->nav[k]->built && c->nav[k]->r == cr;
}

uint64_t steer_nav_cache_builds(const steer_nav_cache *c) { return c->builds; }

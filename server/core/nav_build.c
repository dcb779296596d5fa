/* nav_build.c: the visibility graph over inflated corners, made from a map and
 * kept up to date with it incrementally, and the cache of graphs per radius
 * class (see nav.h for the choice and its costs; the search is in nav.c).
 *
 * Layout. Every obstacle of the map (a group, in map order) owns its candidate
 * corner nodes (all corners that lie inside the bounds); a candidate is live
 * (a graph node) when a body fits there. Live candidates in map order are the
 * graph's nodes; the edges join every pair of live nodes that are tangent at
 * both ends and see each other (nav_vis_pair). The graph is therefore a function of
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
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nav_internal.h"
#include "world.h" /* error codes */

void nav_free_graph(steer_nav *n) {
  steer_mesh_destroy(n->mesh);
  n->mesh = NULL;
  free(n->groups);
  free(n->cand);
  free(n->cand_live);
  free(n->nodes);
  free(n->start);
  free(n->adj);
  free(n->adj_len);
  free(n->reach);
  free(n->prims);
  free(n->cell_start);
  free(n->cell_items);
  free(n->pstamp);
  nav_search_free(n);
}

size_t steer_nav_memory(const steer_nav *n) {
  if (n->mesh)
    return sizeof *n + steer_mesh_memory(n->mesh);
  return sizeof *n + (size_t)n->ngroups * sizeof(nav_group) +
         (size_t)n->ncand * (sizeof(nav_node) + sizeof(uint32_t)) + (size_t)n->nnodes * sizeof(nav_node) +
         (n->nnodes + 1u) * sizeof(uint32_t) + (size_t)n->nadj * (sizeof(uint32_t) + sizeof(float)) +
         (size_t)n->nnodes * sizeof(nav_box) + (size_t)n->nprims * (sizeof(nav_prim) + sizeof(uint32_t)) +
         ((size_t)n->cols * n->rows + 1u) * sizeof(uint32_t) +
         (n->cell_start ? (size_t)n->cell_start[(size_t)n->cols * n->rows] * sizeof(uint32_t) : 0u) +
         nav_search_memory(n);
}

/* ---- the primitive grid ------------------------------------------------------ */

static int prim_push(nav_prim **v, uint32_t *len, uint32_t *cap, vec2 a, vec2 b, float rad) {
  if (*len == *cap) {
    if (*cap > UINT32_MAX / 2u)
      return STEER_ENOMEM; /* indexes are 32-bit: the doubling would wrap */
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
      uint32_t a = cell_of(s->lo.x, t->lo.x, t->inv_cell, t->cols),
               b = cell_of(s->hi.x, t->lo.x, t->inv_cell, t->cols);
      uint32_t c = cell_of(s->lo.y, t->lo.y, t->inv_cell, t->rows),
               d = cell_of(s->hi.y, t->lo.y, t->inv_cell, t->rows);
      for (uint32_t y = c; y <= d; y++)
        for (uint32_t x = a; x <= b; x++) {
          size_t cell = (size_t)y * t->cols + x;
          if (pass == 0)
            t->cell_start[cell + 1]++;
          else
            t->cell_items[t->cell_start[cell]++] =
                k; /* cell_start used as a fill cursor, shifted back below */
        }
    }
    if (pass == 0) {
      for (size_t i = 0; i < cells; i++) {
        items += t->cell_start[i + 1];
        if (items > UINT32_MAX - 1u)
          return STEER_ENOMEM; /* the cells' starts are 32-bit */
        t->cell_start[i + 1] += t->cell_start[i];
      }
      t->cell_items = malloc((items + 1u) * sizeof *t->cell_items);
      if (!t->cell_items)
        return STEER_ENOMEM;
    }
  }
  /* The fill advanced each start to the next cell's start. */
  for (size_t i = cells; i > 0; i--)
    t->cell_start[i] = t->cell_start[i - 1];
  t->cell_start[0] = 0;
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
    if (l->cap > NAV_NEW / 2u)
      return STEER_ENOMEM; /* node indexes stay below NAV_NEW */
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
    rc = corner_nodes(b, v[i], v[i - 1], v[i + 1], n1, turn_of(n1, n2),
                      v2_cross(n1, n2) >= 0.0f ? 1.0f : -1.0f, 1);
  }
  return rc;
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
    if (e->cap >= UINT32_MAX / 4u)
      return STEER_ENOMEM; /* both directions of every edge are counted in 32 bits (adj_make) */
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

/* The edges of new node f (of an update): with every node of list (all nodes
 * when list is NULL; n of them) but itself, each pair once (a fresh node w
 * above f links it when its own turn comes), tangent at both ends and in
 * sight. 0 or STEER_ENOMEM. */
static int link_new(steer_nav *t, edge_list *e, const uint8_t *fresh, uint32_t f, const uint32_t *list,
                    uint32_t n) {
  nav_recent recent = {{0}, 0};
  const nav_node *nf = &t->nodes[f];
  for (uint32_t x = 0; x < n; x++) {
    const uint32_t w = list ? list[x] : x;
    if (w == f || (fresh[w] && w > f))
      continue;
    const nav_node *nw = &t->nodes[w];
    if (!tangent(nf, nw->p) || !tangent(nw, nf->p))
      continue;
    if (nav_vis_pair(t, nf->p, nw->p, &recent)) {
      int rc = edge_push(e, f, w, v2_len(v2_sub(nf->p, nw->p)));
      if (rc != 0)
        return rc;
    }
  }
  return 0;
}

/* The boxes of the obstacles that changed, widened by what they can reach. */
typedef struct change_set {
  vec2 lo[NAV_MAX_CHANGES], hi[NAV_MAX_CHANGES];
  vec2 c[NAV_MAX_CHANGES];     /* centre */
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

/* Where v sits in u's sorted list of o, or would (the first entry not below v). */
static uint32_t old_pos(const steer_nav *o, uint32_t u, uint32_t v) {
  uint32_t lo = o->start[u], hi = o->start[u + 1];
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (o->adj[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int old_edge(const steer_nav *o, uint32_t u, uint32_t v) {
  uint32_t p = old_pos(o, u, v);
  return p < o->start[u + 1] && o->adj[p] == v;
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
  if (nav_vis_walk(t, p, c, t->r + STEER_MAP_SKIN, &k) || !separates(&t->prims[k], p, t1, t2, c, rr))
    return 0;
  recent_front(walls, k, NAV_BLOCKERS);
  return 1;
}

/* ---- nodes by bucket, and the shadow of a wall over a bucket -------------------- */

#define NAV_BUCKET_CELLS 4u    /* grid cells along a side of a node bucket */
#define NAV_SEP_MARGIN   0.05f /* m: a wall separates a box from a disc with this much to spare */

/* The graph's nodes in coarse buckets (row-major, ascending in each), with
 * the box of each bucket's nodes. */
typedef struct node_buckets {
  uint32_t cols, rows, n;
  float inv;
  uint32_t *start, *items;
  nav_box *box;
} node_buckets;

static void buckets_free(node_buckets *b) {
  free(b->start);
  free(b->items);
  free(b->box);
}

static int buckets_make(node_buckets *b, const steer_nav *t) {
  b->cols = (t->cols + NAV_BUCKET_CELLS - 1u) / NAV_BUCKET_CELLS;
  b->rows = (t->rows + NAV_BUCKET_CELLS - 1u) / NAV_BUCKET_CELLS;
  b->n = b->cols * b->rows;
  b->inv = t->inv_cell / (float)NAV_BUCKET_CELLS;
  b->start = calloc(b->n + 1u, sizeof *b->start);
  b->items = malloc(((size_t)t->nnodes + 1u) * sizeof *b->items);
  b->box = malloc(((size_t)b->n + 1u) * sizeof *b->box);
  if (!b->start || !b->items || !b->box)
    return STEER_ENOMEM;
  for (uint32_t i = 0; i < b->n; i++)
    b->box[i] = (nav_box){v2(INFINITY, INFINITY), v2(-INFINITY, -INFINITY)};
  for (uint32_t u = 0; u < t->nnodes; u++) {
    vec2 p = t->nodes[u].p;
    uint32_t k = cell_of(p.y, t->lo.y, b->inv, b->rows) * b->cols + cell_of(p.x, t->lo.x, b->inv, b->cols);
    b->start[k + 1]++;
    b->box[k].lo = v2(minf(b->box[k].lo.x, p.x), minf(b->box[k].lo.y, p.y));
    b->box[k].hi = v2(maxf(b->box[k].hi.x, p.x), maxf(b->box[k].hi.y, p.y));
  }
  for (uint32_t i = 0; i < b->n; i++)
    b->start[i + 1] += b->start[i];
  for (uint32_t u = 0; u < t->nnodes; u++) {
    vec2 p = t->nodes[u].p;
    uint32_t k = cell_of(p.y, t->lo.y, b->inv, b->rows) * b->cols + cell_of(p.x, t->lo.x, b->inv, b->cols);
    b->items[b->start[k]++] = u;
  }
  for (uint32_t i = b->n; i > 0; i--) /* the fill advanced each start to the next one's */
    b->start[i] = b->start[i - 1];
  b->start[0] = 0;
  return 0;
}

/* Whether segment primitive s separates the box [lo, hi] from the disc (c,
 * rho): both lie on opposite sides of its line, and every segment from the
 * box to the disc's square crosses the line inside s, all with
 * NAV_SEP_MARGIN to spare (so float rounding cannot matter). The segments
 * from a box to a square fill the hull of their 8 corners, whose cut with
 * the line is spanned by the cuts of the 16 corner-to-corner segments. */
static int separates_box(const nav_prim *s, vec2 lo, vec2 hi, vec2 c, float rho) {
  if (s->rad != 0.0f)
    return 0;
  vec2 e = v2_sub(s->b, s->a);
  float el = v2_len(e);
  if (!(el > 2.0f * NAV_SEP_MARGIN))
    return 0;
  vec2 u = v2_scale(e, 1.0f / el), n = v2(-u.y, u.x);
  const vec2 q[8] = {lo,
                     v2(hi.x, lo.y),
                     hi,
                     v2(lo.x, hi.y),
                     v2(c.x - rho, c.y - rho),
                     v2(c.x + rho, c.y - rho),
                     v2(c.x + rho, c.y + rho),
                     v2(c.x - rho, c.y + rho)};
  float sd[8], tt[8];
  for (int i = 0; i < 8; i++) {
    vec2 d = v2_sub(q[i], s->a);
    sd[i] = v2_dot(n, d);
    tt[i] = v2_dot(u, d);
  }
  float bmin = minf(minf(sd[0], sd[1]), minf(sd[2], sd[3])),
        bmax = maxf(maxf(sd[0], sd[1]), maxf(sd[2], sd[3]));
  float dmin = minf(minf(sd[4], sd[5]), minf(sd[6], sd[7])),
        dmax = maxf(maxf(sd[4], sd[5]), maxf(sd[6], sd[7]));
  if (!((bmin >= NAV_SEP_MARGIN && dmax <= -NAV_SEP_MARGIN) ||
        (bmax <= -NAV_SEP_MARGIN && dmin >= NAV_SEP_MARGIN)))
    return 0;
  for (int i = 0; i < 4; i++)
    for (int j = 4; j < 8; j++) {
      float x = tt[i] + (tt[j] - tt[i]) * (sd[i] / (sd[i] - sd[j]));
      if (!(x >= NAV_SEP_MARGIN && x <= el - NAV_SEP_MARGIN))
        return 0;
    }
  return 1;
}

/* Whether one wall separates the box from the disc (c, rho): one that did
 * lately, or what stops the way from the box's centre to c. */
static int box_shadowed(steer_nav *t, const nav_box *b, vec2 c, float rho, nav_recent *walls) {
  for (uint32_t i = 0; i < walls->n; i++)
    if (separates_box(&t->prims[walls->k[i]], b->lo, b->hi, c, rho)) {
      recent_front(walls, walls->k[i], i);
      return 1;
    }
  uint32_t k;
  vec2 m = v2_scale(v2_add(b->lo, b->hi), 0.5f);
  if (nav_vis_walk(t, m, c, t->r + STEER_MAP_SKIN, &k) || !separates_box(&t->prims[k], b->lo, b->hi, c, rho))
    return 0;
  recent_front(walls, k, NAV_BLOCKERS);
  return 1;
}

/* The nodes (but those with skip[u] set; skip may be NULL) from which the
 * disc (c, sqrt(rho2)) is not in the shadow of one wall, into out (bucket
 * by bucket: whole buckets in a shadow are passed over); returns how many.
 * Every node that sees a point of the disc is among them. */
static uint32_t unshadowed(steer_nav *t, const node_buckets *b, vec2 c, float rho2, const uint8_t *skip,
                           uint32_t *out) {
  nav_recent walls = {{0}, 0}, bwalls = {{0}, 0};
  const float rho = sqrtf(rho2) + NAV_NEAR;
  uint32_t nv = 0;
  for (uint32_t i = 0; i < b->n; i++) {
    const uint32_t s0 = b->start[i], s1 = b->start[i + 1];
    if (s0 == s1 || (s1 - s0 > 1u && box_shadowed(t, &b->box[i], c, rho, &bwalls)))
      continue;
    for (uint32_t k = s0; k < s1; k++) {
      const uint32_t u = b->items[k];
      if ((!skip || !skip[u]) && !shadowed(t, t->nodes[u].p, c, rho2, &walls))
        out[nv++] = u;
    }
  }
  return nv;
}

/* Whether the box [lo, hi] meets one of the widened boxes. */
static int box_near(const change_set *s, vec2 lo, vec2 hi) {
  for (uint32_t i = 0; i < s->n; i++)
    if (lo.x <= s->hi[i].x && hi.x >= s->lo[i].x && lo.y <= s->hi[i].y && hi.y >= s->lo[i].y)
      return 1;
  return 0;
}

static void box_add(nav_box *b, vec2 p) {
  b->lo = v2(minf(b->lo.x, p.x), minf(b->lo.y, p.y));
  b->hi = v2(maxf(b->hi.x, p.x), maxf(b->hi.y, p.y));
}

/* t's adjacency (start, adj, adj_len, nadj, reach) from its new edges e and,
 * when o is not NULL, o's edges: each node's old list renumbered (entries
 * marked in dead, and neighbours that are no longer nodes, dropped; still
 * ascending, since old_to_new keeps the order) merged with its new edges.
 * One pass over the lists, in order: an update copies the graph at memory
 * speed. The reach boxes of old nodes grow by their new edges (they stay
 * large enough when edges go). */
static int adj_make(steer_nav *t, const steer_nav *o, const edge_list *e, const uint32_t *old_to_new,
                    const uint32_t *prev, const uint32_t *dead) {
  const uint32_t nn = t->nnodes;
  const size_t cap = 2u * (size_t)e->n + (o ? o->nadj : 0u);
  if (cap > UINT32_MAX - 1u)
    return STEER_ENOMEM; /* start and nadj count directed edges in 32 bits */
  uint32_t *ns = calloc(nn + 2u, sizeof *ns), *cur = malloc((nn + 1u) * sizeof *cur);
  uint32_t *nv = malloc((2u * (size_t)e->n + 1u) * sizeof *nv);
  float *nl = malloc((2u * (size_t)e->n + 1u) * sizeof *nl);
  t->start = malloc((nn + 1u) * sizeof *t->start);
  t->reach = malloc((nn + 1u) * sizeof *t->reach);
  t->adj = malloc((cap + 1u) * sizeof *t->adj);
  t->adj_len = malloc((cap + 1u) * sizeof *t->adj_len);
  int rc = 0;
  if (!ns || !cur || !nv || !nl || !t->start || !t->reach || !t->adj || !t->adj_len) {
    rc = STEER_ENOMEM;
    goto out;
  }
  /* The new edges per node, ascending (insertion sort: a build pushes them
   * in order already, an update has few). */
  for (uint32_t i = 0; i < e->n; i++) {
    ns[e->v[i].a + 1]++;
    ns[e->v[i].b + 1]++;
  }
  for (uint32_t i = 0; i < nn; i++)
    ns[i + 1] += ns[i];
  memcpy(cur, ns, nn * sizeof *cur);
  for (uint32_t i = 0; i < e->n; i++) {
    const nav_edge *x = &e->v[i];
    nl[cur[x->a]] = x->len;
    nv[cur[x->a]++] = x->b;
    nl[cur[x->b]] = x->len;
    nv[cur[x->b]++] = x->a;
  }
  for (uint32_t u = 0; u < nn; u++)
    for (uint32_t i = ns[u] + 1u; i < ns[u + 1]; i++) {
      uint32_t v = nv[i], j = i;
      float lv = nl[i];
      while (j > ns[u] && nv[j - 1] > v) {
        nv[j] = nv[j - 1];
        nl[j] = nl[j - 1];
        j--;
      }
      nv[j] = v;
      nl[j] = lv;
    }
  uint32_t pos = 0;
  for (uint32_t u = 0; u < nn; u++) {
    t->start[u] = pos;
    const uint32_t ou = o ? prev[u] : NAV_NONE;
    nav_box box = ou != NAV_NONE ? o->reach[ou] : (nav_box){t->nodes[u].p, t->nodes[u].p};
    uint32_t i = ns[u];
    const uint32_t iend = ns[u + 1];
    if (ou != NAV_NONE)
      for (uint32_t k = o->start[ou]; k < o->start[ou + 1]; k++) {
        if (dead && (dead[k / 32u] >> (k % 32u)) & 1u)
          continue;
        const uint32_t v = old_to_new[o->adj[k]];
        if (v == NAV_NONE)
          continue;
        for (; i < iend && nv[i] < v; i++) {
          box_add(&box, t->nodes[nv[i]].p);
          t->adj_len[pos] = nl[i];
          t->adj[pos++] = nv[i];
        }
        t->adj_len[pos] = o->adj_len[k];
        t->adj[pos++] = v;
      }
    for (; i < iend; i++) {
      box_add(&box, t->nodes[nv[i]].p);
      t->adj_len[pos] = nl[i];
      t->adj[pos++] = nv[i];
    }
    t->reach[u] = box;
  }
  t->start[nn] = pos;
  t->nadj = pos;
out:
  free(ns);
  free(cur);
  free(nv);
  free(nl);
  return rc;
}

/* One build's scratch, shared by nav_make's stages. o, the graph reused, goes
 * NULL when the map changed too much for an update (a build from scratch). */
typedef struct nav_make_ctx {
  steer_nav *t, *o;
  const steer_map *m;
  float R;              /* r + skin: the free test of a node */
  float seg_reach;      /* covers what a node's freedom and a segment's sight depend on */
  node_list cand;       /* every obstacle's candidate nodes, in map order */
  uint32_t *gmatch;     /* per group: the old group it is, or NAV_NONE (new) */
  uint32_t *cand_prev;  /* per candidate: its old node, NAV_NONE (was no node) or NAV_NEW */
  uint8_t *state;       /* per candidate: CAND_* */
  uint32_t *prev;       /* per node: its old node, or NAV_NONE */
  uint8_t *fresh;       /* per node: 1 its edges are to be found, 2 found */
  uint32_t *old_to_new; /* per old node: its new one, or NAV_NONE */
  uint32_t *dead;       /* bits over o's directed edges: failed their test again */
  uint32_t *vis_nodes;
  node_buckets bk;
  edge_list e;
  change_set *added, *removed;
} nav_make_ctx;

/* Groups in map order with their candidates; the old ones matched in order
 * (a removal keeps the order of the rest, an addition goes last) and their
 * candidates copied, the rest made; what changed goes in added and removed. */
static int make_groups(nav_make_ctx *x, float r, vec2 lo, vec2 hi) {
  steer_nav *t = x->t;
  uint32_t count = steer_map_count(x->m), prim_cap = 0;
  int rc = 0;
  build_ctx b = {r, r + STEER_MAP_SKIN + STEER_NAV_MARGIN, lo, hi, &x->cand};
  uint32_t og = 0; /* next old group */
  for (uint32_t i = 0; i < count && rc == 0; i++) {
    uint32_t id;
    steer_obstacle_desc d;
    if (steer_map_get(x->m, i, &id, &d) != 0)
      continue;
    rc = prims_of(&t->prims, &t->nprims, &prim_cap, &d);
    nav_group *g = &t->groups[t->ngroups];
    g->id = id;
    g->shape = shape_hash(&d);
    shape_box(&d, &g->lo, &g->hi);
    g->first = x->cand.n;
    uint32_t match = NAV_NONE;
    while (x->o && og < x->o->ngroups && match == NAV_NONE) {
      const nav_group *old = &x->o->groups[og];
      if (old->id == g->id && old->shape == g->shape) {
        match = og;
      } else if (x->removed->n == NAV_MAX_CHANGES) {
        x->o = NULL; /* too many changes: from scratch */
      } else {
        change_add(x->removed, old->lo, old->hi, x->seg_reach);
      }
      og++;
    }
    if (rc == 0 && match != NAV_NONE) {
      const nav_group *old = &x->o->groups[match];
      for (uint32_t k = 0; k < old->count && rc == 0; k++) {
        const nav_node *nd = &x->o->cand[old->first + k];
        rc = push_node(&b, nd->p, nd->a, nd->c, nd->tang); /* in bounds: they were */
      }
    } else if (rc == 0) {
      if (x->o && x->added->n == NAV_MAX_CHANGES)
        x->o = NULL;
      else if (x->o)
        change_add(x->added, g->lo, g->hi, x->seg_reach);
      rc = obstacle_nodes(&b, &d);
    }
    g->count = x->cand.n - g->first;
    x->gmatch[t->ngroups++] = match;
  }
  while (rc == 0 && x->o && og < x->o->ngroups) {
    if (x->removed->n == NAV_MAX_CHANGES)
      x->o = NULL;
    else
      change_add(x->removed, x->o->groups[og].lo, x->o->groups[og].hi, x->seg_reach);
    og++;
  }
  if (rc != 0)
    return rc;
  /* Each candidate's old node index (NAV_NONE: was no node), or NAV_NEW. */
  x->cand_prev = malloc(((size_t)x->cand.n + 1u) * sizeof *x->cand_prev);
  if (!x->cand_prev)
    return STEER_ENOMEM;
  for (uint32_t gi = 0; gi < t->ngroups; gi++) {
    const nav_group *g = &t->groups[gi];
    for (uint32_t k = 0; k < g->count; k++)
      x->cand_prev[g->first + k] = x->o && x->gmatch[gi] != NAV_NONE
                                       ? x->o->cand_live[x->o->groups[x->gmatch[gi]].first + k]
                                       : NAV_NEW;
  }
  if (!x->o)
    x->added->n = x->removed->n = 0;
  return 0;
}

/* Which candidates are nodes: new ones are tested; an old node only when
 * something was added near it, an old dead candidate only when something was
 * removed near it. Then each node's old one (prev, old_to_new) and whether
 * its edges are to be found (fresh). */
static int make_nodes(nav_make_ctx *x) {
  steer_nav *t = x->t;
  const steer_nav *o = x->o;
  t->ncand = x->cand.n;
  t->cand = x->cand.v;
  x->cand.v = NULL;
  t->cand_live = malloc(((size_t)t->ncand + 1u) * sizeof *t->cand_live);
  x->state = malloc((size_t)t->ncand + 1u);
  if (!t->cand_live || !x->state)
    return STEER_ENOMEM;
  uint32_t live = 0;
  for (uint32_t k = 0; k < t->ncand; k++) {
    vec2 p = t->cand[k].p;
    uint32_t pv = x->cand_prev[k];
    int is;
    if (pv == NAV_NEW) {
      x->state[k] = CAND_NEW;
      is = steer_map_free(x->m, p, x->R, 0.0f);
    } else if (pv != NAV_NONE) {
      x->state[k] = CAND_WAS_LIVE;
      is = !point_near(x->added, p) || steer_map_free(x->m, p, x->R, 0.0f);
    } else {
      x->state[k] = CAND_WAS_DEAD;
      is = point_near(x->removed, p) && steer_map_free(x->m, p, x->R, 0.0f);
    }
    t->cand_live[k] = is ? live++ : NAV_NONE;
  }
  t->nnodes = live;
  t->nodes = malloc(((size_t)live + 1u) * sizeof *t->nodes);
  x->prev = malloc(((size_t)live + 1u) * sizeof *x->prev);
  x->fresh = malloc((size_t)live + 1u);
  x->old_to_new = o ? malloc(((size_t)o->nnodes + 1u) * sizeof *x->old_to_new) : NULL;
  if (!t->nodes || !x->prev || !x->fresh || (o && !x->old_to_new))
    return STEER_ENOMEM;
  if (o)
    for (uint32_t i = 0; i < o->nnodes; i++)
      x->old_to_new[i] = NAV_NONE;
  for (uint32_t k = 0; k < t->ncand; k++) {
    uint32_t i = t->cand_live[k];
    if (i == NAV_NONE)
      continue;
    t->nodes[i] = t->cand[k];
    x->prev[i] = x->state[k] == CAND_WAS_LIVE ? x->cand_prev[k] : NAV_NONE;
    x->fresh[i] = x->prev[i] == NAV_NONE;
    if (x->prev[i] != NAV_NONE)
      x->old_to_new[x->prev[i]] = i;
  }
  return 0;
}

/* Edges kept: both ends still nodes, and nothing added near the segment (else
 * it is tested again; the failed ones are marked dead, both ways). Only nodes
 * whose reach box meets an added box can have such an edge. */
static int mark_dead_edges(nav_make_ctx *x) {
  const steer_nav *o = x->o;
  if (!o || x->added->n == 0)
    return 0;
  x->dead = calloc(o->nadj / 32u + 1u, sizeof *x->dead);
  if (!x->dead)
    return STEER_ENOMEM;
  for (uint32_t u = 0; u < o->nnodes; u++) {
    uint32_t nu = x->old_to_new[u];
    if (nu == NAV_NONE || !box_near(x->added, o->reach[u].lo, o->reach[u].hi))
      continue;
    for (uint32_t k = o->start[u]; k < o->start[u + 1]; k++) {
      uint32_t v = o->adj[k], nv;
      if (v < u || (nv = x->old_to_new[v]) == NAV_NONE)
        continue;
      vec2 a = x->t->nodes[nu].p, c = x->t->nodes[nv].p;
      if (seg_near(x->added, a, c) && !nav_vis_pair(x->t, a, c, NULL)) {
        uint32_t back = old_pos(o, v, u);
        x->dead[k / 32u] |= 1u << (k % 32u);
        x->dead[back / 32u] |= 1u << (back % 32u);
      }
    }
  }
  return 0;
}

/* Edges of the nodes of an added obstacle: only with the nodes from which a
 * disc round its nodes is not shadowed by one wall (fresh = 2: done). Then the
 * edges of the other new nodes (all of them from scratch; revived ones): every
 * other node, each pair once. */
static int link_added(nav_make_ctx *x) {
  steer_nav *t = x->t;
  int rc = 0;
  for (uint32_t gi = 0; x->o && gi < t->ngroups && rc == 0; gi++) {
    const nav_group *g = &t->groups[gi];
    if (x->gmatch[gi] != NAV_NONE)
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
    const uint32_t nv = unshadowed(t, &x->bk, c, rho2, NULL, x->vis_nodes);
    for (uint32_t k = g->first; k < g->first + g->count && rc == 0; k++) {
      const uint32_t f = t->cand_live[k];
      if (f == NAV_NONE)
        continue;
      x->fresh[f] = 2;
      rc = link_new(t, &x->e, x->fresh, f, x->vis_nodes, nv);
    }
  }
  for (uint32_t f = 0; f < t->nnodes && rc == 0; f++) {
    if (x->fresh[f] == 1)
      rc = link_new(t, &x->e, x->fresh, f, NULL, t->nnodes);
  }
  return rc;
}

/* Whether the segment from pu to q (= pu + w) comes within sqrt(rho2) of c. */
static int seg_meets_disc(vec2 c, float rho2, vec2 pu, vec2 w, vec2 q) {
  vec2 cu = v2_sub(c, pu);
  float l2 = v2_len2(w), dt = v2_dot(cu, w), cr = v2_cross(w, cu);
  return dt <= 0.0f ? v2_len2(cu) <= rho2 : (dt >= l2 ? v2_len2(v2_sub(c, q)) <= rho2 : cr * cr <= rho2 * l2);
}

/* Pairs of old nodes that may see each other now something is gone: those
 * whose segment passes near a removed obstacle and were not edges. Only nodes
 * from which the removed area is not hidden take part (shadowed). */
static int link_revealed(nav_make_ctx *x) {
  steer_nav *t = x->t;
  const change_set *removed = x->removed;
  int rc = 0;
  for (uint32_t i = 0; i < removed->n && rc == 0; i++) {
    const vec2 c = removed->c[i];
    const float rho2 = removed->rho2[i];
    const uint32_t nv = unshadowed(t, &x->bk, c, rho2, x->fresh, x->vis_nodes);
    for (uint32_t a = 0; a < nv && rc == 0; a++) {
      const uint32_t u = x->vis_nodes[a];
      const vec2 pu = t->nodes[u].p;
      nav_recent recent = {{0}, 0};
      for (uint32_t b = a + 1; b < nv && rc == 0; b++) {
        const uint32_t v = x->vis_nodes[b];
        const vec2 pv = t->nodes[v].p, w = v2_sub(pv, pu);
        if (!seg_meets_disc(c, rho2, pu, w, pv))
          continue;
        /* Met once per removed box it passes: the first such box takes it. */
        int earlier = 0;
        for (uint32_t j = 0; j < i && !earlier; j++)
          earlier = seg_meets_disc(removed->c[j], removed->rho2[j], pu, w, pv);
        if (earlier || old_edge(x->o, x->prev[u], x->prev[v]))
          continue;
        const nav_node *nu = &t->nodes[u], *nw = &t->nodes[v];
        if (!tangent(nu, nw->p) || !tangent(nw, nu->p))
          continue;
        if (nav_vis_pair(t, nu->p, nw->p, &recent))
          rc = edge_push(&x->e, u, v, v2_len(v2_sub(nu->p, nw->p)));
      }
    }
  }
  return rc;
}

static void make_ctx_free(nav_make_ctx *x) {
  free(x->cand.v);
  free(x->cand_prev);
  free(x->gmatch);
  free(x->vis_nodes);
  free(x->state);
  free(x->prev);
  free(x->fresh);
  free(x->old_to_new);
  free(x->dead);
  buckets_free(&x->bk);
  free(x->e.v);
  free(x->added);
  free(x->removed);
}

/* Makes t (zeroed) the graph of m for radius r in [lo, hi]; o, when not NULL,
 * is the graph of an earlier map for the same r and bounds, reused where the
 * map did not change. */
static int nav_make(steer_nav *t, steer_nav *o, const steer_map *m, float r, vec2 lo, vec2 hi) {
  t->r = r;
  t->lo = lo;
  t->hi = hi;
  nav_make_ctx x = {.t = t, .o = o, .m = m, .R = r + STEER_MAP_SKIN};
  x.seg_reach = x.R + NAV_TOUCH + NAV_NEAR;
  uint32_t count = steer_map_count(m);
  static const change_set empty;
  x.added = malloc(sizeof *x.added);
  x.removed = malloc(sizeof *x.removed);
  x.gmatch = malloc(((size_t)count + 1u) * sizeof *x.gmatch);
  t->groups = malloc(((size_t)count + 1u) * sizeof *t->groups);
  int rc = !x.added || !x.removed || !x.gmatch || !t->groups ? STEER_ENOMEM : 0;
  if (rc == 0) {
    *x.added = empty;
    *x.removed = empty;
    rc = make_groups(&x, r, lo, hi);
  }
  if (rc == 0)
    rc = grid_build(t);
  if (rc == 0)
    rc = make_nodes(&x);
  if (rc == 0)
    rc = mark_dead_edges(&x);
  if (rc == 0 && (x.o || x.removed->n > 0)) {
    x.vis_nodes = malloc(((size_t)t->nnodes + 1u) * sizeof *x.vis_nodes);
    if (!x.vis_nodes || buckets_make(&x.bk, t) != 0)
      rc = STEER_ENOMEM;
  }
  if (rc == 0)
    rc = link_added(&x);
  if (rc == 0)
    rc = link_revealed(&x);
  /* Adjacency, ascending per node; then the search's scratch (nav.c). */
  if (rc == 0)
    rc = adj_make(t, x.o, &x.e, x.old_to_new, x.prev, x.dead);
  if (rc == 0 && nav_search_alloc(t) != 0)
    rc = STEER_ENOMEM;
  if (rc == 0) {
    t->version = steer_map_version(m);
    t->built = 1;
  }
  make_ctx_free(&x);
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

int steer_nav_build_mesh(steer_nav *n, const steer_map *m, float r, vec2 lo, vec2 hi) {
  if (!n || !m || !isfinite(r) || r < 0.0f || !(lo.x < hi.x) || !(lo.y < hi.y))
    return STEER_EINVAL;
  steer_mesh *mesh = steer_mesh_build(m, r, lo, hi);
  if (!mesh)
    return STEER_ENOMEM;
  nav_free_graph(n);
  memset(n, 0, sizeof *n);
  n->r = r;
  n->lo = lo;
  n->hi = hi;
  n->version = steer_map_version(m);
  n->built = 1;
  n->mesh = mesh;
  return 0;
}

int steer_nav_update(steer_nav *n, const steer_map *m) {
  if (!n || !m || !n->built)
    return STEER_EINVAL;
  if (n->version == steer_map_version(m))
    return 0;
  if (n->mesh)
    return steer_nav_build_mesh(n, m, n->r, n->lo, n->hi);
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

/* ---- cache of graphs per radius class ------------------------------------------ */

/* A class's first graph built on a thread of its own, from a copy of the map
 * taken when it started (the live map may change meanwhile: the finished
 * graph is then updated to it, which gives the same graph as a build of the
 * live map). */
typedef struct nav_job {
  pthread_t thread;
  steer_map *snap;
  steer_nav *out;
  float r;
  vec2 lo, hi;
  int kind; /* steer_nav_kind */
  int rc;
  /* Set by the thread when the build is over, so a caller can wait for it a
   * slice at a time (steer_nav_cache_wait) instead of in one pthread_join. */
  pthread_mutex_t mu;
  pthread_cond_t cv; /* on CLOCK_MONOTONIC */
  int done;
} nav_job;

/* A mesh class's landmarks computed on a thread of their own, for the mesh
 * the class has when it starts (only read by the thread: the class's plans go
 * on meanwhile); cancelled and joined before that mesh is replaced. */
typedef struct lm_job {
  pthread_t thread;
  steer_mesh *mesh;
  float *table;
  int rc;
  atomic_int cancel;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* on CLOCK_MONOTONIC */
  int done;
} lm_job;

struct steer_nav_cache {
  vec2 lo, hi;
  steer_nav *nav[STEER_NAV_CLASSES];
  nav_job *job[STEER_NAV_CLASSES];  /* a build running off the caller's thread */
  lm_job *lmjob[STEER_NAV_CLASSES]; /* landmarks being computed for the class's mesh */
  uint64_t builds;                  /* full builds (steer_nav_build) so far, on any thread */
  uint64_t sync_builds;             /* of which on the caller's thread (steer_nav_cache_get) */
  int kind;                         /* steer_nav_kind */
};

void steer_nav_cache_set_kind(steer_nav_cache *c, int kind) {
  if (kind >= 0 && kind < STEER_NAV_KIND_COUNT)
    c->kind = kind;
}

float steer_nav_class_radius(float r) {
  float k = ceilf(r / STEER_NAV_CLASS - 1e-4f);
  return (k < 0.0f ? 0.0f : k) * STEER_NAV_CLASS;
}

/* The class index of r, or STEER_NAV_CLASSES (none: not finite, < 0 or too wide). */
static uint32_t class_of(float r) {
  if (!isfinite(r) || r < 0.0f)
    return STEER_NAV_CLASSES;
  uint32_t k = (uint32_t)lrintf(steer_nav_class_radius(r) / STEER_NAV_CLASS);
  return k < STEER_NAV_CLASSES ? k : STEER_NAV_CLASSES;
}

steer_nav_cache *steer_nav_cache_create(vec2 lo, vec2 hi) {
  steer_nav_cache *c = calloc(1, sizeof *c);
  if (c) {
    c->lo = lo;
    c->hi = hi;
  }
  return c;
}

/* A job's mutex and its condition on the monotonic clock: 0, or -1 (nothing left to free). */
static int sync_init(pthread_mutex_t *mu, pthread_cond_t *cv) {
  pthread_condattr_t ca;
  if (pthread_condattr_init(&ca) != 0)
    return -1;
  int rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  if (rc == 0)
    rc = pthread_cond_init(cv, &ca);
  pthread_condattr_destroy(&ca);
  if (rc != 0)
    return -1;
  if (pthread_mutex_init(mu, NULL) != 0) {
    pthread_cond_destroy(cv);
    return -1;
  }
  return 0;
}

/* Marks a job done and wakes its waiters (on the job's thread). */
static void sync_done(pthread_mutex_t *mu, pthread_cond_t *cv, int *done) {
  pthread_mutex_lock(mu);
  *done = 1;
  pthread_cond_broadcast(cv);
  pthread_mutex_unlock(mu);
}

/* Waits up to timeout_ms for *done: whether it is set. */
static int sync_wait(pthread_mutex_t *mu, pthread_cond_t *cv, const int *done, uint32_t timeout_ms) {
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += (time_t)(timeout_ms / 1000u);
  until.tv_nsec += (long)(timeout_ms % 1000u) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(mu);
  while (!*done && timeout_ms > 0 && pthread_cond_timedwait(cv, mu, &until) == 0)
    ;
  int d = *done;
  pthread_mutex_unlock(mu);
  return d;
}

static void *job_run(void *arg) {
  nav_job *j = arg;
  j->rc = j->kind == STEER_NAV_GRAPH ? steer_nav_build(j->out, j->snap, j->r, j->lo, j->hi)
                                     : steer_nav_build_mesh(j->out, j->snap, j->r, j->lo, j->hi);
  sync_done(&j->mu, &j->cv, &j->done);
  return NULL;
}

static void job_free(nav_job *j) {
  pthread_mutex_destroy(&j->mu);
  pthread_cond_destroy(&j->cv);
  free(j);
}

static void *lm_run(void *arg) {
  lm_job *j = arg;
  j->rc = steer_mesh_landmarks(j->mesh, STEER_MESH_LANDMARKS, &j->cancel, &j->table);
  sync_done(&j->mu, &j->cv, &j->done);
  return NULL;
}

/* Joins class k's landmark job; attach: its table goes to the mesh (when it
 * made one), else the job is cancelled first and its work dropped. */
static void lm_join(steer_nav_cache *c, uint32_t k, int attach) {
  lm_job *j = c->lmjob[k];
  if (!j)
    return;
  if (!attach)
    atomic_store(&j->cancel, 1);
  pthread_join(j->thread, NULL);
  c->lmjob[k] = NULL;
  if (attach && j->rc == 0)
    steer_mesh_set_landmarks(j->mesh, j->table, STEER_MESH_LANDMARKS);
  else
    free(j->table);
  pthread_mutex_destroy(&j->mu);
  pthread_cond_destroy(&j->cv);
  free(j);
}

/* Waits for class k's job and takes its graph (when it built one). */
static void job_join(steer_nav_cache *c, uint32_t k) {
  nav_job *j = c->job[k];
  if (!j)
    return;
  pthread_join(j->thread, NULL);
  c->job[k] = NULL;
  if (j->rc == 0) {
    lm_join(c, k, 0); /* landmarks of the mesh replaced now */
    steer_nav_destroy(c->nav[k]);
    c->nav[k] = j->out;
  } else {
    steer_nav_destroy(j->out);
  }
  steer_map_destroy(j->snap);
  job_free(j);
}

void steer_nav_cache_destroy(steer_nav_cache *c) {
  if (!c)
    return;
  for (uint32_t i = 0; i < STEER_NAV_CLASSES; i++) {
    job_join(c, i);
    lm_join(c, i, 0);
    steer_nav_destroy(c->nav[i]);
  }
  free(c);
}

static int has_graph(const steer_nav_cache *c, uint32_t k) {
  return k < STEER_NAV_CLASSES && c->nav[k] && c->nav[k]->built && c->nav[k]->r == (float)k * STEER_NAV_CLASS;
}

steer_nav *steer_nav_cache_get(steer_nav_cache *c, const steer_map *m, float r) {
  uint32_t k = class_of(r);
  if (k >= STEER_NAV_CLASSES)
    return NULL;
  job_join(c, k); /* a build started off the thread: its graph, rather than another */
  float cr = steer_nav_class_radius(r);
  if (!c->nav[k] && !(c->nav[k] = steer_nav_create()))
    return NULL;
  steer_nav *n = c->nav[k];
  if (!n->built || n->r != cr || n->version != steer_map_version(m))
    lm_join(c, k, 0); /* the mesh is about to change */
  if (n->built && n->r == cr && n->mesh && n->version != steer_map_version(m)) {
    c->builds++; /* a mesh is brought to a map by a full build, here on the caller's thread */
    c->sync_builds++;
  }
  if (n->built && n->r == cr) {
    if (steer_nav_update(n, m) != 0) /* no memory: try from scratch */
      n->built = 0;
  }
  if (!n->built || n->r != cr) {
    c->builds++;
    c->sync_builds++;
    int rc = c->kind == STEER_NAV_GRAPH ? steer_nav_build(n, m, cr, c->lo, c->hi)
                                        : steer_nav_build_mesh(n, m, cr, c->lo, c->hi);
    if (rc != 0)
      return NULL;
  }
  return n;
}

/* A copy of m (same bounds, cell, obstacles in the same order, version). */
static steer_map *map_copy(const steer_map *m, vec2 lo, vec2 hi, float cell) {
  steer_map *x = steer_map_create(lo, hi, cell);
  if (!x)
    return NULL;
  steer_map_hold(x);
  int rc = 0;
  for (uint32_t i = 0; i < steer_map_count(m) && rc == 0; i++) {
    uint32_t id;
    steer_obstacle_desc d;
    rc = steer_map_get(m, i, &id, &d);
    if (rc == 0)
      rc = steer_map_add(x, id, &d);
  }
  if (steer_map_release(x) != 0 || rc != 0) {
    steer_map_destroy(x);
    return NULL;
  }
  steer_map_set_version(x, steer_map_version(m));
  return x;
}

static int start_job(steer_nav_cache *c, const steer_map *m, float r, float cell, uint32_t k);

int steer_nav_cache_start(steer_nav_cache *c, const steer_map *m, float r, float cell) {
  uint32_t k = class_of(r);
  if (k >= STEER_NAV_CLASSES)
    return STEER_EINVAL;
  if (c->job[k] || has_graph(c, k))
    return 0;
  return start_job(c, m, r, cell, k);
}

int steer_nav_cache_refresh(steer_nav_cache *c, const steer_map *m, float r, float cell) {
  uint32_t k = class_of(r);
  if (k >= STEER_NAV_CLASSES)
    return STEER_EINVAL;
  if (c->job[k] || (has_graph(c, k) && c->nav[k]->version == steer_map_version(m)))
    return 0;
  return start_job(c, m, r, cell, k);
}

uint32_t steer_nav_cache_version(const steer_nav_cache *c, float r) {
  uint32_t k = class_of(r);
  return has_graph(c, k) ? c->nav[k]->version : UINT32_MAX;
}

static int start_job(steer_nav_cache *c, const steer_map *m, float r, float cell, uint32_t k) {
  nav_job *j = calloc(1, sizeof *j);
  if (!j)
    return STEER_ENOMEM;
  if (sync_init(&j->mu, &j->cv) != 0) {
    free(j);
    return STEER_ENOMEM;
  }
  j->r = steer_nav_class_radius(r);
  j->kind = c->kind;
  j->lo = c->lo;
  j->hi = c->hi;
  j->snap = map_copy(m, c->lo, c->hi, cell);
  j->out = steer_nav_create();
  if (!j->snap || !j->out || pthread_create(&j->thread, NULL, job_run, j) != 0) {
    steer_map_destroy(j->snap);
    steer_nav_destroy(j->out);
    job_free(j);
    return STEER_ENOMEM;
  }
  c->job[k] = j;
  c->builds++;
  return 1;
}

int steer_nav_cache_pending(const steer_nav_cache *c, float r) {
  uint32_t k = class_of(r);
  return k < STEER_NAV_CLASSES && c->job[k] != NULL;
}

int steer_nav_cache_finish(steer_nav_cache *c, float r) {
  uint32_t k = class_of(r);
  if (k >= STEER_NAV_CLASSES)
    return 0;
  job_join(c, k);
  return has_graph(c, k);
}

int steer_nav_cache_wait(steer_nav_cache *c, float r, uint32_t timeout_ms) {
  uint32_t k = class_of(r);
  if (k >= STEER_NAV_CLASSES || !c->job[k])
    return 1;
  nav_job *j = c->job[k];
  int done = sync_wait(&j->mu, &j->cv, &j->done, timeout_ms);
  if (done)
    job_join(c, k); /* the thread has ended its build: this join is immediate */
  return done;
}

int steer_nav_cache_has(const steer_nav_cache *c, float r) { return has_graph(c, class_of(r)); }

uint64_t steer_nav_cache_builds(const steer_nav_cache *c) { return c->builds; }
uint64_t steer_nav_cache_sync_builds(const steer_nav_cache *c) { return c->sync_builds; }

/* ---- landmarks of the mesh classes ---------------------------------------------- */

static steer_mesh *class_mesh(const steer_nav_cache *c, uint32_t k) {
  return has_graph(c, k) ? c->nav[k]->mesh : NULL;
}

int steer_nav_cache_landmarks_start(steer_nav_cache *c, float r) {
  uint32_t k = class_of(r);
  steer_mesh *mesh = k < STEER_NAV_CLASSES && !c->job[k] ? class_mesh(c, k) : NULL;
  if (!mesh || c->lmjob[k] || steer_mesh_landmark_count(mesh))
    return 0;
  lm_job *j = calloc(1, sizeof *j);
  if (!j)
    return STEER_ENOMEM;
  if (sync_init(&j->mu, &j->cv) != 0) {
    free(j);
    return STEER_ENOMEM;
  }
  j->mesh = mesh;
  atomic_init(&j->cancel, 0);
  if (pthread_create(&j->thread, NULL, lm_run, j) != 0) {
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
    return STEER_ENOMEM;
  }
  c->lmjob[k] = j;
  return 1;
}

int steer_nav_cache_landmarks_wait(steer_nav_cache *c, float r, uint32_t timeout_ms) {
  uint32_t k = class_of(r);
  if (k >= STEER_NAV_CLASSES || !c->lmjob[k])
    return 1;
  lm_job *j = c->lmjob[k];
  if (!sync_wait(&j->mu, &j->cv, &j->done, timeout_ms))
    return 0;
  lm_join(c, k, 1); /* the thread is over: an immediate join */
  return 1;
}

int steer_nav_cache_landmarks(const steer_nav_cache *c, float r) {
  uint32_t k = class_of(r);
  if (k >= STEER_NAV_CLASSES)
    return 0;
  if (c->lmjob[k])
    return -1;
  steer_mesh *mesh = class_mesh(c, k);
  return mesh && steer_mesh_landmark_count(mesh) ? 1 : 0;
}

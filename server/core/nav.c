/* nav.c: the visibility graph over inflated corners, A* and string pulling
 * (see nav.h for the choice and its costs). */
#include "nav.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "world.h" /* error codes */

#define NAV_PI        3.14159265358979f
#define NAV_PIECE     8.0f  /* m, a long visibility check is cast in pieces this long */
#define NAV_COLLINEAR 1e-4f /* |sin| of a bend below this: no corner */
#define NAV_TANGENT   1e-4f /* m^2, tangent test slack */

typedef struct nav_node {
  vec2 p;       /* where the route turns */
  vec2 a, c;    /* neighbouring vertices of the corner, for the tangent test */
  uint8_t tang; /* 1: prune by tangency at this node */
} nav_node;

struct steer_nav {
  float r;
  uint32_t version;
  uint32_t built;

  nav_node *nodes;
  uint32_t nnodes, node_cap;
  uint32_t *start;  /* nnodes + 1, into adj */
  uint32_t *adj;    /* neighbour indices */
  float *adj_len;   /* m */
  uint32_t nadj;    /* directed edges */

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
  free(n->nodes);
  free(n->start);
  free(n->adj);
  free(n->adj_len);
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

size_t steer_nav_memory(const steer_nav *n) {
  size_t k = n->nnodes + 2u;
  return sizeof *n + (size_t)n->node_cap * sizeof(nav_node) + (n->nnodes + 1u) * sizeof(uint32_t) +
         (size_t)n->nadj * (sizeof(uint32_t) + sizeof(float)) +
         k * (sizeof(float) + 4 * sizeof(uint32_t)) + (size_t)n->heap_cap * sizeof(struct heap_item);
}

/* ---- visibility -------------------------------------------------------------- */

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

/* ---- nodes ------------------------------------------------------------------- */

typedef struct build_ctx {
  const steer_map *m;
  float r, ro; /* radius, node offset (r + skin + margin) */
  vec2 lo, hi;
} build_ctx;

static int push_node(steer_nav *n, const build_ctx *b, vec2 p, vec2 a, vec2 c, int tang) {
  /* Nodes outside the reachable box or not free for the body are dropped:
   * they could never be stood on. */
  if (p.x < b->lo.x + b->r || p.x > b->hi.x - b->r || p.y < b->lo.y + b->r || p.y > b->hi.y - b->r)
    return 0;
  if (!steer_map_free(b->m, p, b->r + STEER_MAP_SKIN, 0.0f))
    return 0;
  if (n->nnodes == n->node_cap) {
    uint32_t cap = n->node_cap ? 2 * n->node_cap : 64;
    nav_node *x = realloc(n->nodes, (size_t)cap * sizeof *x);
    if (!x)
      return STEER_ENOMEM;
    n->nodes = x;
    n->node_cap = cap;
  }
  n->nodes[n->nnodes++] = (nav_node){p, a, c, (uint8_t)tang};
  return 0;
}

/* A convex corner v turning by phi (rad, > 0) from outward normal n1, the
 * rotation's sense s (+1 counter-clockwise): the inflated corner is an arc of
 * radius ro, circumscribed by k = ceil(phi / 45 deg) straight pieces whose
 * vertices are the nodes (k = 1 is the mitre). A route round the arc is then at
 * most ro (1/cos(22.5 deg) - 1) ~ 8 % of ro off the round corner's. */
static int corner_nodes(steer_nav *n, const build_ctx *b, vec2 v, vec2 a, vec2 c, vec2 n1, float phi, float s,
                        int tang) {
  uint32_t k = (uint32_t)ceilf(phi / (NAV_PI / 4.0f) - 1e-3f);
  if (k == 0)
    k = 1;
  float half = phi / (2.0f * (float)k);
  float R = b->ro / cosf(half);
  int rc = 0;
  for (uint32_t j = 0; j < k && rc == 0; j++) {
    float t = s * (2.0f * (float)j + 1.0f) * half;
    vec2 d = v2(n1.x * cosf(t) - n1.y * sinf(t), n1.x * sinf(t) + n1.y * cosf(t));
    rc = push_node(n, b, v2_add(v, v2_scale(d, R)), a, c, tang);
  }
  return rc;
}

static float turn_of(vec2 n1, vec2 n2) {
  float d = v2_dot(n1, n2);
  return acosf(d > 1.0f ? 1.0f : (d < -1.0f ? -1.0f : d));
}

static int obstacle_nodes(steer_nav *n, const build_ctx *b, const steer_obstacle_desc *o) {
  int rc = 0;
  if (o->kind == STEER_OBSTACLE_CIRCLE) {
    float R = (o->radius + b->ro) / cosf(NAV_PI / (float)STEER_NAV_CIRCLE_SIDES);
    for (uint32_t i = 0; i < STEER_NAV_CIRCLE_SIDES && rc == 0; i++) {
      float t = 2.0f * NAV_PI * ((float)i + 0.5f) / (float)STEER_NAV_CIRCLE_SIDES;
      vec2 p = v2_add(o->points[0], v2(R * cosf(t), R * sinf(t)));
      rc = push_node(n, b, p, p, p, 0);
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
      rc = corner_nodes(n, b, v[i], pv, nv, n1, turn_of(n1, n2), v2_cross(n1, n2) >= 0.0f ? 1.0f : -1.0f, 1);
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
      rc = corner_nodes(n, b, v[i], other, other, side, NAV_PI, -1.0f, 0);
      continue;
    }
    vec2 e1 = v2_norm(v2_sub(v[i], v[i - 1])), e2 = v2_norm(v2_sub(v[i + 1], v[i]));
    float turn = v2_cross(e1, e2);
    if (fabsf(turn) <= NAV_COLLINEAR)
      continue;
    float s = turn > 0.0f ? 1.0f : -1.0f; /* a left turn is convex on the right */
    vec2 n1 = v2_scale(v2(e1.y, -e1.x), s), n2 = v2_scale(v2(e2.y, -e2.x), s);
    rc = corner_nodes(n, b, v[i], v[i - 1], v[i + 1], n1, turn_of(n1, n2), v2_cross(n1, n2) >= 0.0f ? 1.0f : -1.0f, 1);
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

/* ---- build ------------------------------------------------------------------- */

typedef struct edge_list {
  uint32_t *a, *b;
  uint32_t n, cap;
} edge_list;

static int edge_push(edge_list *e, uint32_t a, uint32_t b) {
  if (e->n == e->cap) {
    uint32_t cap = e->cap ? 2 * e->cap : 256;
    uint32_t *x = realloc(e->a, (size_t)cap * sizeof *x);
    if (!x)
      return STEER_ENOMEM;
    e->a = x;
    uint32_t *y = realloc(e->b, (size_t)cap * sizeof *y);
    if (!y)
      return STEER_ENOMEM;
    e->b = y;
    e->cap = cap;
  }
  e->a[e->n] = a;
  e->b[e->n] = b;
  e->n++;
  return 0;
}

int steer_nav_build(steer_nav *n, const steer_map *m, float r, vec2 lo, vec2 hi) {
  if (!n || !m || !isfinite(r) || r < 0.0f || !(lo.x < hi.x) || !(lo.y < hi.y))
    return STEER_EINVAL;
  steer_nav t;
  memset(&t, 0, sizeof t);
  build_ctx b = {m, r, r + STEER_MAP_SKIN + STEER_NAV_MARGIN, lo, hi};
  int rc = 0;
  uint32_t count = steer_map_count(m);
  for (uint32_t i = 0; i < count && rc == 0; i++) {
    uint32_t id;
    steer_obstacle_desc o;
    if (steer_map_get(m, i, &id, &o) == 0)
      rc = obstacle_nodes(&t, &b, &o);
  }
  edge_list e = {0};
  for (uint32_t i = 0; i < t.nnodes && rc == 0; i++)
    for (uint32_t j = i + 1; j < t.nnodes && rc == 0; j++) {
      if (!tangent(&t.nodes[i], t.nodes[j].p) || !tangent(&t.nodes[j], t.nodes[i].p))
        continue;
      if (steer_nav_clear(m, t.nodes[i].p, t.nodes[j].p, r))
        rc = edge_push(&e, i, j);
    }
  uint32_t k = t.nnodes + 2u;
  if (rc == 0) {
    t.nadj = 2 * e.n;
    t.start = calloc(t.nnodes + 1u, sizeof *t.start);
    t.adj = malloc(((size_t)t.nadj + 1u) * sizeof *t.adj);
    t.adj_len = malloc(((size_t)t.nadj + 1u) * sizeof *t.adj_len);
    t.g = malloc(k * sizeof *t.g);
    t.parent = malloc(k * sizeof *t.parent);
    t.seen = calloc(k, sizeof *t.seen);
    t.closed = calloc(k, sizeof *t.closed);
    t.route = malloc(k * sizeof *t.route);
    /* A node is pushed at most once per relaxation: every edge both ways, the
     * start's links, one goal link per node and one retry per start link. */
    t.heap_cap = t.nadj + 3u * k + 1u;
    t.heap = malloc((size_t)t.heap_cap * sizeof *t.heap);
    if (!t.start || !t.adj || !t.adj_len || !t.g || !t.parent || !t.seen || !t.closed || !t.route || !t.heap)
      rc = STEER_ENOMEM;
  }
  if (rc == 0) {
    /* Adjacency in node order (stable: edges were found in (i, j) order). */
    for (uint32_t i = 0; i < e.n; i++) {
      t.start[e.a[i] + 1]++;
      t.start[e.b[i] + 1]++;
    }
    for (uint32_t i = 0; i < t.nnodes; i++)
      t.start[i + 1] += t.start[i];
    uint32_t *fill = t.route; /* scratch: next slot per node */
    memcpy(fill, t.start, t.nnodes * sizeof *fill);
    for (uint32_t i = 0; i < e.n; i++) {
      uint32_t a = e.a[i], c = e.b[i];
      float len = v2_len(v2_sub(t.nodes[a].p, t.nodes[c].p));
      t.adj[fill[a]] = c;
      t.adj_len[fill[a]++] = len;
      t.adj[fill[c]] = a;
      t.adj_len[fill[c]++] = len;
    }
  }
  free(e.a);
  free(e.b);
  if (rc != 0) {
    nav_free_graph(&t);
    return rc;
  }
  nav_free_graph(n);
  t.r = r;
  t.version = steer_map_version(m);
  t.built = 1;
  *n = t;
  return 0;
}

/* ---- A* ---------------------------------------------------------------------- */

static int heap_less(const struct heap_item *x, const struct heap_item *y) {
  return x->f < y->f || (x->f == y->f && x->node < y->node);
}

static void heap_push(steer_nav *n, uint32_t *size, float f, uint32_t node) {
  uint32_t i = (*size)++;
  n->heap[i] = (struct heap_item){f, node};
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (!heap_less(&n->heap[i], &n->heap[p]))
      break;
    struct heap_item tmp = n->heap[i];
    n->heap[i] = n->heap[p];
    n->heap[p] = tmp;
    i = p;
  }
}

static struct heap_item heap_pop(steer_nav *n, uint32_t *size) {
  struct heap_item top = n->heap[0];
  n->heap[0] = n->heap[--(*size)];
  uint32_t i = 0;
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, s = i;
    if (l < *size && heap_less(&n->heap[l], &n->heap[s]))
      s = l;
    if (r < *size && heap_less(&n->heap[r], &n->heap[s]))
      s = r;
    if (s == i)
      break;
    struct heap_item tmp = n->heap[i];
    n->heap[i] = n->heap[s];
    n->heap[s] = tmp;
    i = s;
  }
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
  if (steer_nav_clear(m, from, to, r)) {
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
  heap_push(n, &hs, v2_len(v2_sub(to, from)), S);
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
    if (u < S && n->parent[u] == S && !steer_nav_clear(m, from, n->nodes[u].p, r)) {
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
    if (u == S) {
      for (uint32_t v = 0; v < S; v++)
        if (tangent(&n->nodes[v], from))
          relax(n, &hs, S, v, v2_len(v2_sub(n->nodes[v].p, from)), from, to);
      continue;
    }
    for (uint32_t k = n->start[u]; k < n->start[u + 1]; k++)
      relax(n, &hs, u, n->adj[k], n->adj_len[k], from, to);
    if (n->closed[G] != n->gen && tangent(&n->nodes[u], to) && steer_nav_clear(m, n->nodes[u].p, to, r))
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
    while (j > 0 && steer_nav_clear(m, cur, node_pos(n, n->route[j - 1], from, to), r))
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
  if (!n->built || n->version != steer_map_version(m) || n->r != cr)
    if (steer_nav_build(n, m, cr, c->lo, c->hi) != 0)
      return NULL;
  return n;
}

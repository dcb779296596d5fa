/* nav.c: the search side of the planner's graph: A* from a start to a goal
 * over the visibility graph (the start linked lazily to the corners it sees,
 * the goal tried from every expanded corner), string pulling, and the
 * visibility walk through the graph's primitive grid that both the search and
 * the build use (see nav.h for the choice of a visibility graph and its
 * costs, nav_build.c for how the graph is made and kept up to date). */
#include "nav.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nav_internal.h"
#include "world.h" /* error codes */

steer_nav *steer_nav_create(void) {
  steer_nav *n = calloc(1, sizeof *n);
  return n;
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

/* Whether a disc of radius R travels from p to q clear of every primitive:
 * the cells within reach of the segment are visited in strips across its
 * longer axis, from p's end (a blocked segment is usually blocked near where
 * it starts), each primitive tested once. *blocker gets the one that stops it. */
int nav_vis_walk(steer_nav *n, vec2 p, vec2 q, float R, uint32_t *blocker) {
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
int nav_vis_pair(steer_nav *n, vec2 a, vec2 b, nav_recent *recent) {
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
  if (nav_vis_walk(n, a, b, R, &k))
    return 1;
  if (recent)
    recent_front(recent, k, NAV_BLOCKERS);
  return 0;
}

/* ---- A* scratch ---------------------------------------------------------------- */

int nav_search_alloc(steer_nav *t) {
  uint32_t k2 = t->nnodes + 2u;
  t->g = malloc(k2 * sizeof *t->g);
  t->parent = malloc(k2 * sizeof *t->parent);
  t->seen = calloc(k2, sizeof *t->seen);
  t->closed = calloc(k2, sizeof *t->closed);
  t->route = malloc(k2 * sizeof *t->route);
  /* A node is pushed at most once per relaxation: every edge both ways, the
   * start's links, one goal link per node and one retry per start link. */
  t->heap_cap = t->nadj + 3u * k2 + 1u;
  t->heap = malloc((size_t)t->heap_cap * sizeof *t->heap);
  if (!t->g || !t->parent || !t->seen || !t->closed || !t->route || !t->heap)
    return STEER_ENOMEM;
  return 0;
}

void nav_search_free(steer_nav *n) {
  free(n->g);
  free(n->parent);
  free(n->seen);
  free(n->closed);
  free(n->heap);
  free(n->route);
}

size_t nav_search_memory(const steer_nav *n) {
  size_t k = n->nnodes + 2u;
  return k * (sizeof(float) + 4 * sizeof(uint32_t)) + (size_t)n->heap_cap * sizeof(struct heap_item);
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
  if (nav_vis_pair(n, from, to, &near_from)) {
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
    if (u < S && n->parent[u] == S && !nav_vis_pair(n, from, n->nodes[u].p, &near_from)) {
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
    if (n->closed[G] != n->gen && tangent(&n->nodes[u], to) && nav_vis_pair(n, n->nodes[u].p, to, &near_to))
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
    while (j > 0 && nav_vis_pair(n, cur, node_pos(n, n->route[j - 1], from, to), NULL))
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


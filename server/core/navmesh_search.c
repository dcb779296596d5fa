/* navmesh_search.c: the Polyanya search on the mesh (navmesh.h).
 *
 * A search node is an interval [l, r] of the edge through which it enters a
 * cell, seen from a root (the start, or a corner the route bends at), with g
 * the route's length to the root. Expanding it projects the interval through
 * the cell: the part of the cell's other edges between the rays root-r and
 * root-l is seen from the same root; the parts beyond a ray are seen only by
 * bending at the interval's end, so they get that end as their root, if it is
 * a corner. f = g + the shortest length from the root through the interval to
 * the goal (reflected across the interval's line when it lies on the root's
 * side), a lower bound, so the first route to the goal taken from the queue is
 * the shortest. A corner reached with a longer g than its best is not
 * expanded again (root-level pruning).
 *
 * Frames: a cell's vertices run counter-clockwise; a node entering cell c
 * through its edge k (from vertex k to vertex k + 1) has the root on the
 * edge's outer side, l toward vertex k and r toward vertex k + 1 (looking in
 * from the root, vertex k is on the left). A root on the entry edge's line is
 * a vertex of the cell, or on its side: the whole cell is in its sight. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "navmesh_internal.h"
#include "world.h"

#define NO_CELL    UINT32_MAX
#define NO_ROOT    UINT32_MAX
#define NO_NODE    UINT32_MAX
#define MAX_NODES  (1u << 22) /* a search past this many nodes gives up (STEER_ENOENT) */
#define GOAL_CELLS 16u
enum { SEARCH_IDLE = 0, SEARCH_RUNNING, SEARCH_DONE };
#define SNAP_END  1e-6 /* m, see successor */
#define PRUNE_EPS 1e-6 /* m, see successor */

typedef struct mroot {
  mpt p;
  double h;        /* a lower bound of the route's length from here to the goal (landmarks) */
  int32_t v;       /* vertex, MESH_NONE for the start */
  uint32_t parent; /* the root before it, NO_ROOT for the start */
} mroot;

typedef struct mnode {
  mpt l, r;
  double g, f;
  uint32_t root;
  uint32_t cell; /* NO_CELL: a route to the goal, g its whole length */
  uint16_t edge;
  uint8_t lv, rv; /* l is the entry edge's first vertex, r its second */
} mnode;

/* 16 bytes: ties of f, rare, look the node's g up. */
typedef struct hitem {
  double f;
  uint32_t seq, node;
} hitem;

struct mesh_search {
  mnode *nodes;
  uint32_t nn, cn;
  mroot *roots;
  uint32_t nr, cr;
  hitem *heap;
  uint32_t nh, ch, seq;
  uint32_t next;      /* a node to expand before the heap's top (settle), or NO_NODE */
  double *best;       /* per vertex: the shortest g it was a root with, this search */
  uint32_t *best_rec; /* and its root record */
  uint32_t *best_gen;
  uint32_t *goal_gen; /* per cell: whether it holds the goal, this search */
  uint32_t gen, nverts, ncells;
  /* The plan in progress (steer_mesh_plan_start .. _result). */
  int state, rc, snapped, found;
  vec2 from, to;
  uint64_t *open; /* (root, cell) pairs opened whole: seen_open */
  uint32_t nopen, copen;
  mpt goal;
  uint32_t expanded;
  /* The landmarks this plan uses (nlm 0: none; the table is the mesh's), and
   * the goal's route lengths from each, within [lm_lo, lm_hi] (-INFINITY /
   * INFINITY: unknown). */
  const float *lm;
  uint32_t nlm;
  double lm_lo[STEER_MESH_LANDMARKS_MAX], lm_hi[STEER_MESH_LANDMARKS_MAX];
  /* Per vertex: the shortest route to it seen so far, this search (an
   * interval's end in sight of its root, or a root): see successor. */
  double *vd;
  uint32_t *vd_gen;
  /* A search of the whole free space from a vertex (mesh_landmarks): no goal,
   * dead ends entered, walls' ends noted too. */
  int all;
};

void mesh_search_free(struct mesh_search *s) {
  if (!s)
    return;
  free(s->nodes);
  free(s->roots);
  free(s->heap);
  free(s->best);
  free(s->best_rec);
  free(s->best_gen);
  free(s->goal_gen);
  free(s->open);
  free(s->vd);
  free(s->vd_gen);
  free(s);
}

/* Plain comparisons (no NaN here): the libm calls are not inlined. */
static inline double dmax(double a, double b) { return a > b ? a : b; }
static inline double dmin(double a, double b) { return a < b ? a : b; }

static double dist(mpt a, mpt b) { return sqrt((b.x - a.x) * (b.x - a.x) + (b.y - a.y) * (b.y - a.y)); }

/* *slot's search, made for m on first use, ready for a new search. */
static struct mesh_search *search_reset(struct mesh_search **slot, const steer_mesh *m) {
  struct mesh_search *s = *slot;
  if (!s) {
    s = calloc(1, sizeof *s);
    if (!s)
      return NULL;
    s->best = malloc(((size_t)m->nverts + 1u) * sizeof *s->best);
    s->best_rec = malloc(((size_t)m->nverts + 1u) * sizeof *s->best_rec);
    s->best_gen = calloc((size_t)m->nverts + 1u, sizeof *s->best_gen);
    s->goal_gen = calloc((size_t)m->ncells + 1u, sizeof *s->goal_gen);
    s->vd = malloc(((size_t)m->nverts + 1u) * sizeof *s->vd);
    s->vd_gen = calloc((size_t)m->nverts + 1u, sizeof *s->vd_gen);
    if (!s->best || !s->best_rec || !s->best_gen || !s->goal_gen || !s->vd || !s->vd_gen) {
      mesh_search_free(s);
      return NULL;
    }
    s->nverts = m->nverts;
    s->ncells = m->ncells;
    *slot = s;
  }
  if (++s->gen == 0) { /* wrapped: every stamp is stale */
    memset(s->best_gen, 0, ((size_t)s->nverts + 1u) * sizeof *s->best_gen);
    memset(s->goal_gen, 0, ((size_t)s->ncells + 1u) * sizeof *s->goal_gen);
    memset(s->vd_gen, 0, ((size_t)s->nverts + 1u) * sizeof *s->vd_gen);
    s->gen = 1;
  }
  s->nn = s->nr = s->nh = s->seq = s->expanded = 0;
  s->next = NO_NODE;
  s->all = 0;
  s->nlm = 0;
  s->lm = NULL;
  if (s->nopen) {
    memset(s->open, 0xff, (size_t)s->copen * sizeof *s->open);
    s->nopen = 0;
  }
  return s;
}

/* ---- the open list: a binary heap by f, then the deeper node, then order ---- */

static int hless(const struct mesh_search *s, const hitem *a, const hitem *b) {
  if (a->f != b->f)
    return a->f < b->f;
  double ga = s->nodes[a->node].g, gb = s->nodes[b->node].g;
  if (ga != gb)
    return ga > gb;
  return a->seq < b->seq;
}

static int heap_push(struct mesh_search *s, uint32_t node) {
  if (!grow(&s->heap, &s->ch, s->nh + 1u, sizeof *s->heap))
    return 0;
  hitem it = {s->nodes[node].f, s->seq++, node};
  uint32_t i = s->nh++;
  while (i > 0) {
    uint32_t p = (i - 1u) / 2u;
    if (!hless(s, &it, &s->heap[p]))
      break;
    s->heap[i] = s->heap[p];
    i = p;
  }
  s->heap[i] = it;
  return 1;
}

static uint32_t heap_pop(struct mesh_search *s) {
  uint32_t top = s->heap[0].node;
  hitem last = s->heap[--s->nh];
  uint32_t i = 0;
  for (;;) {
    uint32_t c = 2u * i + 1u;
    if (c >= s->nh)
      break;
    if (c + 1u < s->nh && hless(s, &s->heap[c + 1u], &s->heap[c]))
      c++;
    if (!hless(s, &s->heap[c], &last))
      break;
    s->heap[i] = s->heap[c];
    i = c;
  }
  if (s->nh)
    s->heap[i] = last;
  return top;
}

/* ---- the estimate ------------------------------------------------------------- */

/* The distance from p to the segment [a, b]. */
static double seg_dist(mpt p, mpt a, mpt b) {
  double dx = b.x - a.x, dy = b.y - a.y, l2 = dx * dx + dy * dy;
  double t = l2 > 0.0 ? ((p.x - a.x) * dx + (p.y - a.y) * dy) / l2 : 0.0;
  t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
  return dist(p, (mpt){a.x + t * dx, a.y + t * dy});
}

/* The shortest length from root p through the segment [l, r] to the goal t. */
static double through(mpt p, mpt l, mpt r, mpt t) {
  double sp = mesh_orient(l, r, p), st = mesh_orient(l, r, t);
  if ((sp > 0.0 && st > 0.0) || (sp < 0.0 && st < 0.0)) { /* same side: mirror the goal */
    double dx = r.x - l.x, dy = r.y - l.y, l2 = dx * dx + dy * dy;
    if (l2 > 0.0) {
      double k = ((t.x - l.x) * dx + (t.y - l.y) * dy) / l2;
      mpt f = {l.x + k * dx, l.y + k * dy};
      t = (mpt){2.0 * f.x - t.x, 2.0 * f.y - t.y};
    }
  }
  double ol = mesh_orient(p, t, l), orr = mesh_orient(p, t, r);
  if ((ol <= 0.0 && orr >= 0.0) || (ol >= 0.0 && orr <= 0.0))
    return dist(p, t);
  return dmin(dist(p, l) + dist(l, t), dist(p, r) + dist(r, t));
}

/* A lower bound of the route's length from vertex v to the goal: for each
 * landmark L, |d(L, v) - d(L, goal)| at least (the triangle inequality of route
 * lengths), with the goal's d(L, goal) known within [lm_lo, lm_hi]. Less a
 * slack for the table's float rounding, so it never overestimates. */
static double landmark_bound(const struct mesh_search *s, int32_t v) {
  if (!s->nlm)
    return 0.0;
  const float *d = &s->lm[(size_t)v * s->nlm];
  double h = 0.0;
  for (uint32_t k = 0; k < s->nlm; k++)
    if (isfinite(d[k]))
      h = dmax(h, dmax(s->lm_lo[k] - (double)d[k], (double)d[k] - s->lm_hi[k]));
  return h > 0.0 ? dmax(0.0, h * (1.0 - 1e-6) - 1e-3) : 0.0;
}

/* A lower bound of the route's length from any point p of the edge [a, b]
 * (vertices va, vb, |ab| = len) to the goal: d(L, p) lies within
 * [max(d(L, a) - |ap|, d(L, b) - |bp|), min(d(L, a) + |ap|, d(L, b) + |bp|)],
 * whose ends are least tight where the two meet, so for every p
 * d(L, p) >= (d(L, a) + d(L, b) - len) / 2 and <= (d(L, a) + d(L, b) + len) / 2. */
static double landmark_edge(const struct mesh_search *s, uint32_t va, uint32_t vb, double len) {
  const float *da = &s->lm[(size_t)va * s->nlm], *db = &s->lm[(size_t)vb * s->nlm];
  double h = 0.0;
  for (uint32_t k = 0; k < s->nlm; k++) {
    double sum = (double)da[k] + (double)db[k];
    if (isfinite(sum))
      h = dmax(h, dmax(s->lm_lo[k] - 0.5 * (sum + len), 0.5 * (sum - len) - s->lm_hi[k]));
  }
  return h > 0.0 ? dmax(0.0, h * (1.0 - 1e-6) - 1e-3) : 0.0;
}

/* The goal's bounds from the vertices of its cell c (convex: each is in
 * straight sight): d(L, goal) <= d(L, v) + |v goal| for any of them, and
 * d(L, goal) >= min over them of d(L, v) - |v goal| (the route to the goal
 * enters c through an edge, whose ends are no farther from L than the entry
 * point plus the way along the edge). */
static void landmark_goal(struct mesh_search *s, const steer_mesh *m, uint32_t c) {
  const mesh_cell *mc = &m->cells[c];
  for (uint32_t k = 0; k < s->nlm; k++) {
    double lo = INFINITY, hi = INFINITY;
    int unknown = 0; /* a vertex the landmark does not reach: no lower bound */
    for (uint32_t j = 0; j < mc->count; j++) {
      uint32_t v = m->pv[mc->first + j];
      double d = (double)s->lm[(size_t)v * s->nlm + k], e = dist(m->verts[v], s->goal);
      unknown |= !isfinite(d);
      if (isfinite(d)) {
        lo = dmin(lo, d - e);
        hi = dmin(hi, d + e);
      }
    }
    s->lm_lo[k] = unknown || !isfinite(lo) ? -INFINITY : lo;
    s->lm_hi[k] = hi;
  }
}

/* ---- nodes -------------------------------------------------------------------- */

static double vdist(const struct mesh_search *s, uint32_t v) {
  return s->vd_gen[v] == s->gen ? s->vd[v] : INFINITY;
}

static void note(struct mesh_search *s, uint32_t v, double d) {
  if (s->vd_gen[v] != s->gen || d < s->vd[v]) {
    s->vd[v] = d;
    s->vd_gen[v] = s->gen;
  }
}

/* The root record for corner v reached with g: none when v was reached
 * shorter (root-level pruning: 0), the same record when as short (the cells
 * around v are then opened once, whichever interval ends at v), else a new
 * one. 1, 0, or -1 (no memory). */
static int add_root(struct mesh_search *s, const steer_mesh *m, int32_t v, uint32_t parent, double g,
                    uint32_t *out) {
  if (s->best_gen[v] == s->gen) {
    if (g > s->best[v] + MESH_EPS)
      return 0;
    if (g >= s->best[v] - MESH_EPS) {
      *out = s->best_rec[v];
      return 1;
    }
  }
  if (!grow(&s->roots, &s->cr, s->nr + 1u, sizeof *s->roots))
    return -1;
  note(s, (uint32_t)v, g);
  s->roots[s->nr] = (mroot){m->verts[v], landmark_bound(s, v), v, parent};
  s->best[v] = g;
  s->best_gen[v] = s->gen;
  s->best_rec[v] = s->nr;
  *out = s->nr++;
  return 1;
}

/* A new node, queued by settle once its expansion is done. */
static int push_node(struct mesh_search *s, const mnode *n) {
  if (s->nn >= MAX_NODES || !grow(&s->nodes, &s->cn, s->nn + 1u, sizeof *s->nodes))
    return 0;
  s->nodes[s->nn++] = *n;
  return 1;
}

/* Queues the nodes made since first (one expansion's). A lone successor that
 * the queue would give back next anyway (it comes before the top, ties
 * included) is kept aside as the next node instead: most expansions only carry
 * an interval on into the next cell, and this spares them the heap, with the
 * same nodes expanded in the same order. 1, or 0 on no memory. */
static int settle(struct mesh_search *s, uint32_t first) {
  if (s->nn == first + 1u && s->nodes[first].cell != NO_CELL) {
    hitem it = {s->nodes[first].f, s->seq, first};
    if (s->nh == 0 || hless(s, &it, &s->heap[0])) {
      s->next = first;
      return 1;
    }
  }
  for (uint32_t i = first; i < s->nn; i++)
    if (!heap_push(s, i))
      return 0;
  return 1;
}

/* The next node to expand (the one kept aside, else the queue's top): 1, or 0
 * when none is left. */
static int take(struct mesh_search *s, uint32_t *ni) {
  if (s->next != NO_NODE) {
    *ni = s->next;
    s->next = NO_NODE;
    return 1;
  }
  if (!s->nh)
    return 0;
  *ni = heap_pop(s);
  return 1;
}

/* Whether the part [t0, t1] of the edge from vertex va (a) to vb (b), |ab| =
 * len, seen from o with g, is dominated. A point e(t) = a + t (b - a) of the
 * edge is reached within min(vd(a) + t len, vd(b) + (1 - t) len) by routes
 * already seen (to an end, then along the edge). The root's excess
 * g + |o e(t)| over that is the larger of a function that never rises in t
 * and one that never falls, whose least over [t0, t1] is where their linear
 * parts meet (clamped to the part). If even there the root's way is longer,
 * nothing beyond the part is reached shorter through it. Strictly longer, so a
 * node on a shortest route is never dropped: the search stays exact. */
static int dominated(const struct mesh_search *s, uint32_t va, uint32_t vb, mpt a, mpt b, double len,
                     double t0, double t1, mpt o, double g) {
  double A = vdist(s, va), B = vdist(s, vb);
  if (A == INFINITY && B == INFINITY)
    return 0;
  double tc = A < INFINITY && B < INFINITY ? (B - A + len) / (2.0 * len) : (A < INFINITY ? 1.0 : 0.0);
  tc = tc < t0 ? t0 : (tc > t1 ? t1 : tc);
  mpt e = {a.x + tc * (b.x - a.x), a.y + tc * (b.y - a.y)};
  return g + dist(o, e) > dmin(A + tc * len, B + (1.0 - tc) * len) + PRUNE_EPS;
}

/* A node through edge j of cell c (from its vertex j at t = 0 to j + 1 at
 * t = 1), for the part [t0, t1], seen from root. */
static int successor(struct mesh_search *s, const steer_mesh *m, uint32_t c, uint32_t j, double t0, double t1,
                     uint32_t root, double g) {
  const mesh_cell *mc = &m->cells[c];
  uint32_t ei = mc->first + j;
  int32_t q = m->pn[ei];
  if (!s->all && (q < 0 || (m->ways[q] <= 1u && s->goal_gen[q] != s->gen)))
    return 1; /* a wall, or a dead end without the goal */
  uint32_t va = m->pv[ei], vb = m->pv[mc->first + (j + 1u) % mc->count];
  mpt a = m->verts[va], b = m->verts[vb];
  /* An end within SNAP_END of a vertex is the vertex: a ray that grazes a
   * corner must leave the corner as the interval's end, or the route could not
   * bend there. */
  double len = dist(a, b), snap = len > 0.0 ? SNAP_END / len : 1.0;
  t0 = t0 < snap ? 0.0 : t0;
  t1 = t1 > 1.0 - snap ? 1.0 : t1;
  if (!(t1 > t0))
    return 1;
  const mroot *o = &s->roots[root];
  if (t0 == 0.0) /* the ends in the root's sight */
    note(s, va, g + dist(o->p, a));
  if (t1 == 1.0)
    note(s, vb, g + dist(o->p, b));
  if (q < 0)
    return 1; /* a wall (only the whole search notes its ends) */
  mpt pa = t0 == 0.0 ? a : (mpt){a.x + t0 * (b.x - a.x), a.y + t0 * (b.y - a.y)};
  mpt pb = t1 == 1.0 ? b : (mpt){a.x + t1 * (b.x - a.x), a.y + t1 * (b.y - a.y)};
  if (dist(pa, pb) <= MESH_EPS)
    return 1;
  if (dominated(s, va, vb, a, b, len, t0, t1, o->p, g))
    return 1;
  double near = g + seg_dist(o->p, pb, pa);
  /* In q the edge runs from b to a: l is toward b, r toward a. */
  mnode n = {pb, pa, g, 0.0, root, (uint32_t)q, m->ptw[ei], t1 == 1.0, t0 == 0.0};
  if (s->all)
    n.f = near;
  else {
    n.f = g + dmax(through(o->p, pb, pa, s->goal), o->h);
    if (s->nlm)
      n.f = dmax(n.f, near + landmark_edge(s, va, vb, len));
  }
  return push_node(s, &n);
}

static int push_goal(struct mesh_search *s, uint32_t root, double g) {
  mnode n = {s->goal, s->goal, g + dist(s->roots[root].p, s->goal), 0.0, root, NO_CELL, 0, 0, 0};
  n.f = n.g;
  return push_node(s, &n);
}

/* The t in [0, 1] where the linear function from fa (t = 0) to fb (t = 1) is
 * >= 0: [*lo, *hi], empty when *lo > *hi. */
static void nonneg(double fa, double fb, double *lo, double *hi) {
  if (fa >= 0.0 && fb >= 0.0) {
    *lo = 0.0, *hi = 1.0;
  } else if (fa < 0.0 && fb < 0.0) {
    *lo = 1.0, *hi = 0.0;
  } else {
    double t = fa / (fa - fb);
    if (fa >= 0.0)
      *lo = 0.0, *hi = t;
    else
      *lo = t, *hi = 1.0;
  }
}

/* Whether (root, cell) was opened before in this search (and marks it): the
 * fan of cells around a root vertex would otherwise go round forever. */
static int seen_open(struct mesh_search *s, uint32_t root, uint32_t cell) {
  if (2u * (s->nopen + 1u) > s->copen) {
    uint32_t c = s->copen ? 2u * s->copen : 1024u;
    uint64_t *k = malloc((size_t)c * sizeof *k);
    if (!k)
      return -1;
    memset(k, 0xff, (size_t)c * sizeof *k);
    for (uint32_t i = 0; i < s->copen; i++)
      if (s->open[i] != UINT64_MAX)
        for (uint32_t h = (uint32_t)((s->open[i] * 0x9E3779B97F4A7C15ULL) >> 32) & (c - 1u);;
             h = (h + 1u) & (c - 1u))
          if (k[h] == UINT64_MAX) {
            k[h] = s->open[i];
            break;
          }
    free(s->open);
    s->open = k;
    s->copen = c;
  }
  uint64_t key = (uint64_t)root << 32 | cell;
  for (uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ULL) >> 32) & (s->copen - 1u);;
       h = (h + 1u) & (s->copen - 1u)) {
    if (s->open[h] == key)
      return 1;
    if (s->open[h] == UINT64_MAX) {
      s->open[h] = key;
      s->nopen++;
      return 0;
    }
  }
}

/* The whole cell is in the root's sight (the root is on the entry edge, or a
 * vertex of the cell). */
static int expand_open(struct mesh_search *s, const steer_mesh *m, const mnode *n) {
  int seen = seen_open(s, n->root, n->cell);
  if (seen)
    return seen > 0;
  const mesh_cell *mc = &m->cells[n->cell];
  if (s->goal_gen[n->cell] == s->gen && !push_goal(s, n->root, n->g))
    return 0;
  for (uint32_t j = 0; j < mc->count; j++)
    if (j != n->edge && !successor(s, m, n->cell, j, 0.0, 1.0, n->root, n->g))
      return 0;
  return 1;
}

static int expand(struct mesh_search *s, const steer_mesh *m, const mnode *n) {
  const mesh_cell *mc = &m->cells[n->cell];
  uint32_t cnt = mc->count, k = n->edge;
  mpt p = s->roots[n->root].p, L = n->l, R = n->r;
  double span = dist(L, R);
  double side = mesh_orient(L, R, p); /* < 0: the root is outside, as it should be */
  if (side > -MESH_EPS * (span > 0.0 ? span : 1.0)) {
    mpt a = m->verts[m->pv[mc->first + k]], b = m->verts[m->pv[mc->first + (k + 1u) % cnt]];
    double el = dist(a, b);
    double t = el > 0.0 ? ((p.x - a.x) * (b.x - a.x) + (p.y - a.y) * (b.y - a.y)) / (el * el) : 0.0;
    if (t >= -MESH_EPS && t <= 1.0 + MESH_EPS)
      return expand_open(s, m, n);
    /* On the edge's line beyond it (a route along a wall): the root sees the
     * cell edge-on, and the route can only bend at the interval's near end. */
    int near_l = dist(p, L) < dist(p, R);
    uint32_t v = m->pv[mc->first + (near_l ? k : (k + 1u) % cnt)];
    if (!(near_l ? n->lv : n->rv) || !m->corner[v])
      return 1;
    mnode bent = *n;
    bent.g = n->g + dist(p, near_l ? L : R);
    int rc = add_root(s, m, (int32_t)v, n->root, bent.g, &bent.root);
    return rc < 0 ? 0 : (rc == 0 ? 1 : expand_open(s, m, &bent));
  }
  uint32_t vl = m->pv[mc->first + k], vr = m->pv[mc->first + (k + 1u) % cnt];
  int turn_r = n->rv && m->corner[vr], turn_l = n->lv && m->corner[vl];
  uint32_t root_r = NO_ROOT, root_l = NO_ROOT;
  double g_r = n->g + dist(p, R), g_l = n->g + dist(p, L);
  if (turn_r) {
    int rc = add_root(s, m, (int32_t)vr, n->root, g_r, &root_r);
    if (rc < 0)
      return 0;
    if (rc == 0)
      root_r = NO_ROOT;
  }
  if (turn_l) {
    int rc = add_root(s, m, (int32_t)vl, n->root, g_l, &root_l);
    if (rc < 0)
      return 0;
    if (rc == 0)
      root_l = NO_ROOT;
  }
  if (s->goal_gen[n->cell] == s->gen) {
    mpt t = s->goal;
    double sr = mesh_orient(p, R, t), sl = mesh_orient(p, L, t);
    if (sr >= 0.0 && sl <= 0.0) {
      if (!push_goal(s, n->root, n->g))
        return 0;
    } else if (sr < 0.0 && root_r != NO_ROOT) {
      if (!push_goal(s, root_r, g_r))
        return 0;
    } else if (sl > 0.0 && root_l != NO_ROOT) {
      if (!push_goal(s, root_l, g_l))
        return 0;
    }
  }
  /* Each vertex's sides of the two rays, computed once: an edge's end is the
   * next edge's start. */
  uint32_t j = (k + 1u) % cnt;
  double ra = mesh_orient(p, R, m->verts[m->pv[mc->first + j]]);
  double la = -mesh_orient(p, L, m->verts[m->pv[mc->first + j]]);
  for (uint32_t d = 1; d < cnt; d++, j = j + 1u == cnt ? 0u : j + 1u) {
    mpt b = m->verts[m->pv[mc->first + (j + 1u == cnt ? 0u : j + 1u)]];
    double rb = mesh_orient(p, R, b), lb = -mesh_orient(p, L, b);
    double r0 = ra, l0 = la;
    ra = rb;
    la = lb;
    if (m->pn[mc->first + j] < 0 && !s->all)
      continue;
    double rlo, rhi, llo, lhi;
    nonneg(r0, rb, &rlo, &rhi); /* left of the right ray */
    nonneg(l0, lb, &llo, &lhi); /* right of the left ray */
    double lo = dmax(rlo, llo), hi = dmin(rhi, lhi);
    if (hi > lo && !successor(s, m, n->cell, j, lo, hi, n->root, n->g))
      return 0;
    if (root_r != NO_ROOT) { /* beyond the right ray: seen by bending at R */
      double a0 = 0.0, a1 = rlo <= rhi ? rlo : 1.0;
      if (rlo <= rhi && rlo == 0.0)
        a0 = rhi, a1 = 1.0; /* the ray leaves through this edge the other way (rounding) */
      if (a1 > a0 && !(rlo <= rhi && rlo == 0.0 && rhi == 1.0) &&
          !successor(s, m, n->cell, j, a0, a1, root_r, g_r))
        return 0;
    }
    if (root_l != NO_ROOT) { /* beyond the left ray: seen by bending at L */
      double a0 = llo <= lhi ? lhi : 0.0, a1 = 1.0;
      if (llo <= lhi && lhi == 1.0)
        a0 = 0.0, a1 = llo;
      if (a1 > a0 && !(llo <= lhi && llo == 0.0 && lhi == 1.0) &&
          !successor(s, m, n->cell, j, a0, a1, root_l, g_l))
        return 0;
    }
  }
  return 1;
}

/* Whether n's root was reached shorter since n was queued (root-level
 * pruning at the pop): n is not expanded. */
static int superseded(const struct mesh_search *s, const mnode *n) {
  int32_t rv = s->roots[n->root].v;
  return rv >= 0 && n->g > s->best[rv] + MESH_EPS;
}

/* Expands n and queues its successors: 1, or 0 on no memory. */
static int expand_node(struct mesh_search *s, const steer_mesh *m, const mnode *n) {
  uint32_t first = s->nn;
  return expand(s, m, n) && settle(s, first);
}

int steer_mesh_plan_start(steer_mesh *m, vec2 from, vec2 to) { return steer_mesh_plan_begin(m, from, to, 1); }

int steer_mesh_plan_begin(steer_mesh *m, vec2 from, vec2 to, int landmarks) {
  if (!m || !isfinite(from.x) || !isfinite(from.y) || !isfinite(to.x) || !isfinite(to.y))
    return STEER_EINVAL;
  struct mesh_search *s = search_reset(&m->search, m);
  if (!s)
    return STEER_ENOMEM;
  s->state = SEARCH_DONE;
  s->rc = STEER_ENOMEM;
  s->found = -1;
  s->from = from;
  s->to = to;
  mpt st = {from.x, from.y}, goal = {to.x, to.y};
  uint32_t gc[GOAL_CELLS];
  uint32_t ngc = mesh_locate_all(m, goal, gc, GOAL_CELLS);
  if (!ngc)
    return s->rc = STEER_EBLOCKED;
  int32_t sc = mesh_locate(m, st);
  s->snapped = 0;
  if (sc == MESH_NONE) {
    if (!mesh_nearest(m, st, (double)STEER_MESH_SNAP, &st, &sc))
      return s->rc = STEER_ENOENT;
    s->snapped = 1;
  }
  int joined = 0;
  for (uint32_t i = 0; i < ngc; i++)
    joined |= m->comp[gc[i]] == m->comp[sc];
  if (!joined)
    return s->rc = STEER_ENOENT; /* another part of the free space */
  s->goal = goal;
  for (uint32_t i = 0; i < ngc; i++)
    s->goal_gen[gc[i]] = s->gen;
  if (!grow(&s->roots, &s->cr, 1u, sizeof *s->roots))
    return STEER_ENOMEM;
  if (landmarks && m->nlm) {
    s->lm = m->lm_d;
    s->nlm = m->nlm;
    landmark_goal(s, m, gc[0]);
  }
  s->roots[0] = (mroot){st, 0.0, MESH_NONE, NO_ROOT};
  s->nr = 1;
  if (s->goal_gen[sc] == s->gen) {
    if (!push_goal(s, 0, 0.0))
      return STEER_ENOMEM;
  } else {
    const mesh_cell *mc = &m->cells[sc];
    for (uint32_t j = 0; j < mc->count; j++)
      if (!successor(s, m, (uint32_t)sc, j, 0.0, 1.0, 0, 0.0))
        return STEER_ENOMEM;
  }
  if (!settle(s, 0))
    return STEER_ENOMEM;
  s->state = SEARCH_RUNNING;
  return 0;
}

int steer_mesh_plan_run(steer_mesh *m, uint32_t budget, uint32_t *spent) {
  struct mesh_search *s = m ? m->search : NULL;
  uint32_t n0 = s ? s->expanded : 0;
  if (spent)
    *spent = 0;
  if (!s || s->state != SEARCH_RUNNING)
    return 1;
  uint32_t ni;
  while (s->expanded - n0 < budget && take(s, &ni)) {
    mnode n = s->nodes[ni];
    if (n.cell == NO_CELL) {
      s->found = (int)ni;
      break;
    }
    if (superseded(s, &n))
      continue;
    s->expanded++;
    if (!expand_node(s, m, &n)) {
      s->state = SEARCH_DONE;
      s->rc = s->nn >= MAX_NODES ? STEER_ENOENT : STEER_ENOMEM;
      break;
    }
  }
  if (spent)
    *spent = s->expanded - n0;
  if (s->state == SEARCH_RUNNING && (s->found >= 0 || (s->nh == 0 && s->next == NO_NODE))) {
    s->state = SEARCH_DONE;
    s->rc = s->found >= 0 ? 0 : STEER_ENOENT;
  }
  return s->state == SEARCH_DONE;
}

int steer_mesh_plan_result(steer_mesh *m, vec2 *out, uint32_t cap, steer_nav_result *res) {
  steer_nav_result r0 = {0, 0.0f, 0};
  if (res)
    *res = r0;
  struct mesh_search *s = m ? m->search : NULL;
  if (!s || s->state != SEARCH_DONE)
    return STEER_EINVAL;
  if (res)
    res->expanded = s->expanded;
  if (s->rc != 0)
    return s->rc;
  /* The roots back to the start, then forward into out. */
  const mnode *f = &s->nodes[s->found];
  mpt st = s->roots[0].p;
  uint32_t count = 1u + (s->snapped ? 1u : 0u);
  for (uint32_t r = f->root; r != 0; r = s->roots[r].parent)
    count++;
  if (res) {
    res->count = count;
    res->length = (float)(f->g + (s->snapped ? dist((mpt){s->from.x, s->from.y}, st) : 0.0));
  }
  if (count > cap)
    return STEER_EFULL;
  uint32_t i = count;
  out[--i] = s->to;
  for (uint32_t r = f->root; r != 0; r = s->roots[r].parent)
    out[--i] = v2((float)s->roots[r].p.x, (float)s->roots[r].p.y);
  if (s->snapped)
    out[--i] = v2((float)st.x, (float)st.y);
  return 0;
}

int steer_mesh_plan(steer_mesh *m, vec2 from, vec2 to, vec2 *out, uint32_t cap, steer_nav_result *res) {
  steer_nav_result r0 = {0, 0.0f, 0};
  if (res)
    *res = r0;
  int rc = steer_mesh_plan_start(m, from, to);
  if (rc != 0)
    return rc;
  steer_mesh_plan_run(m, UINT32_MAX, NULL);
  return steer_mesh_plan_result(m, out, cap, res);
}

/* ---- landmarks ------------------------------------------------------------------ */

/* Route lengths from vertex v0 to every vertex of its part of the free space,
 * into vd (INFINITY where not reached), with search s of its own (m is only
 * read: a served mesh's plans go on meanwhile): the search without a goal, run
 * until its queue is empty, noting each vertex where a root sees it (an
 * interval's end, walls' included) or bends at it. The shortest route to a
 * vertex ends with a straight leg from its last corner, which the search
 * follows as an interval of that corner's reaching the vertex, so the least
 * noted length is the route's. 1, 0 on no memory, -1 when cancelled. */
static int one_to_all(struct mesh_search **slot, const steer_mesh *m, uint32_t v0, double *vd,
                      const atomic_int *cancel) {
  struct mesh_search *s = search_reset(slot, m);
  if (!s)
    return 0;
  s->all = 1;
  uint32_t root;
  if (add_root(s, m, (int32_t)v0, NO_ROOT, 0.0, &root) < 0)
    return 0;
  uint32_t around[64];
  uint32_t n = mesh_locate_all(m, m->verts[v0], around, 64);
  int ok = 1;
  for (uint32_t i = 0; ok && i < n; i++) {
    mnode open = {m->verts[v0], m->verts[v0], 0.0, 0.0, root, around[i], UINT16_MAX, 0, 0};
    ok = expand_open(s, m, &open) > 0;
  }
  ok = ok && settle(s, 0);
  uint32_t ni, polls = 0;
  while (ok && take(s, &ni)) {
    if (cancel && ++polls % 4096u == 0 && atomic_load_explicit(cancel, memory_order_relaxed))
      return -1;
    mnode nd = s->nodes[ni];
    if (!superseded(s, &nd))
      ok = expand_node(s, m, &nd);
  }
  for (uint32_t v = 0; v < m->nverts; v++)
    vd[v] = vdist(s, v);
  return ok;
}

int steer_mesh_landmarks(const steer_mesh *m, uint32_t count, const atomic_int *cancel, float **out) {
  *out = NULL;
  count = count < STEER_MESH_LANDMARKS_MAX ? count : STEER_MESH_LANDMARKS_MAX;
  if (!count || !m->ncells)
    return 0;
  /* The largest part, by cells: the others (pockets the level encloses) plan
   * with the straight-line estimate alone. */
  uint32_t ncomp = 0;
  for (uint32_t c = 0; c < m->ncells; c++)
    ncomp = m->comp[c] + 1u > ncomp ? m->comp[c] + 1u : ncomp;
  uint32_t *size = calloc(ncomp, sizeof *size);
  double *vd = malloc((size_t)m->nverts * sizeof *vd), *mind = malloc((size_t)m->nverts * sizeof *mind);
  float *table = malloc((size_t)m->nverts * count * sizeof *table);
  struct mesh_search *s = NULL;
  int rc = size && vd && mind && table ? 1 : 0;
  uint32_t big = 0;
  for (uint32_t c = 0; rc > 0 && c < m->ncells; c++)
    if (++size[m->comp[c]] > size[big] || (size[m->comp[c]] == size[big] && m->comp[c] < big))
      big = m->comp[c];
  /* mind: the least length from a chosen landmark, -1 outside the part; the
   * first landmark is the part's vertex nearest the bounds' low corner, each
   * next one the vertex farthest from those chosen (ties: the lowest index). */
  uint32_t next = UINT32_MAX;
  double near = INFINITY;
  for (uint32_t v = 0; rc > 0 && v < m->nverts; v++)
    mind[v] = -1.0;
  for (uint32_t c = 0; rc > 0 && c < m->ncells; c++) {
    if (m->comp[c] != big)
      continue;
    const mesh_cell *mc = &m->cells[c];
    for (uint32_t j = 0; j < mc->count; j++) {
      uint32_t v = m->pv[mc->first + j];
      mind[v] = INFINITY;
      double d = dist(m->verts[v], m->lo);
      if (d < near || (d == near && v < next))
        near = d, next = v;
    }
  }
  for (uint32_t k = 0; rc > 0 && k < count; k++) {
    rc = cancel && atomic_load(cancel) ? -1 : one_to_all(&s, m, next, vd, cancel);
    double far = -1.0;
    for (uint32_t v = 0; rc > 0 && v < m->nverts; v++) {
      table[(size_t)v * count + k] = (float)vd[v];
      if (mind[v] < 0.0)
        continue;
      mind[v] = dmin(mind[v], vd[v]);
      if (isfinite(mind[v]) && mind[v] > far)
        far = mind[v], next = v;
    }
  }
  mesh_search_free(s);
  free(size);
  free(vd);
  free(mind);
  if (rc <= 0) {
    free(table);
    return rc < 0 ? 1 : STEER_ENOMEM;
  }
  *out = table;
  return 0;
}

void steer_mesh_set_landmarks(steer_mesh *m, float *table, uint32_t count) {
  free(m->lm_d);
  m->lm_d = table;
  m->nlm = table ? (count < STEER_MESH_LANDMARKS_MAX ? count : STEER_MESH_LANDMARKS_MAX) : 0u;
}

uint32_t steer_mesh_landmark_count(const steer_mesh *m) { return m->nlm; }

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
#include <stdlib.h>
#include <string.h>

#include "navmesh_internal.h"
#include "world.h"

#define NO_CELL    UINT32_MAX
#define NO_ROOT    UINT32_MAX
#define MAX_NODES  (1u << 22) /* a search past this many nodes gives up (STEER_ENOENT) */
#define GOAL_CELLS 16u
enum { SEARCH_IDLE = 0, SEARCH_RUNNING, SEARCH_DONE };
#define SNAP_END 1e-6 /* m, see successor */

typedef struct mroot {
  mpt p;
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

typedef struct hitem {
  double f, g;
  uint32_t seq, node;
} hitem;

struct mesh_search {
  mnode *nodes;
  uint32_t nn, cn;
  mroot *roots;
  uint32_t nr, cr;
  hitem *heap;
  uint32_t nh, ch, seq;
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
  free(s);
}

static double dist(mpt a, mpt b) { return sqrt((b.x - a.x) * (b.x - a.x) + (b.y - a.y) * (b.y - a.y)); }

static struct mesh_search *search_of(steer_mesh *m) {
  struct mesh_search *s = m->search;
  if (!s) {
    s = calloc(1, sizeof *s);
    if (!s)
      return NULL;
    s->best = malloc(((size_t)m->nverts + 1u) * sizeof *s->best);
    s->best_rec = malloc(((size_t)m->nverts + 1u) * sizeof *s->best_rec);
    s->best_gen = calloc((size_t)m->nverts + 1u, sizeof *s->best_gen);
    s->goal_gen = calloc((size_t)m->ncells + 1u, sizeof *s->goal_gen);
    if (!s->best || !s->best_rec || !s->best_gen || !s->goal_gen) {
      mesh_search_free(s);
      return NULL;
    }
    s->nverts = m->nverts;
    s->ncells = m->ncells;
    m->search = s;
  }
  if (++s->gen == 0) { /* wrapped: every stamp is stale */
    memset(s->best_gen, 0, ((size_t)s->nverts + 1u) * sizeof *s->best_gen);
    memset(s->goal_gen, 0, ((size_t)s->ncells + 1u) * sizeof *s->goal_gen);
    s->gen = 1;
  }
  s->nn = s->nr = s->nh = s->seq = s->expanded = 0;
  if (s->nopen) {
    memset(s->open, 0xff, (size_t)s->copen * sizeof *s->open);
    s->nopen = 0;
  }
  return s;
}

/* ---- the open list: a binary heap by f, then the deeper node, then order ---- */

static int hless(const hitem *a, const hitem *b) {
  if (a->f != b->f)
    return a->f < b->f;
  if (a->g != b->g)
    return a->g > b->g;
  return a->seq < b->seq;
}

static int heap_push(struct mesh_search *s, uint32_t node) {
  if (!grow(&s->heap, &s->ch, s->nh + 1u, sizeof *s->heap))
    return 0;
  hitem it = {s->nodes[node].f, s->nodes[node].g, s->seq++, node};
  uint32_t i = s->nh++;
  while (i > 0) {
    uint32_t p = (i - 1u) / 2u;
    if (!hless(&it, &s->heap[p]))
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
    if (c + 1u < s->nh && hless(&s->heap[c + 1u], &s->heap[c]))
      c++;
    if (!hless(&s->heap[c], &last))
      break;
    s->heap[i] = s->heap[c];
    i = c;
  }
  if (s->nh)
    s->heap[i] = last;
  return top;
}

/* ---- the estimate ------------------------------------------------------------- */

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
  return fmin(dist(p, l) + dist(l, t), dist(p, r) + dist(r, t));
}

/* ---- nodes -------------------------------------------------------------------- */

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
  s->roots[s->nr] = (mroot){m->verts[v], v, parent};
  s->best[v] = g;
  s->best_gen[v] = s->gen;
  s->best_rec[v] = s->nr;
  *out = s->nr++;
  return 1;
}

static int push_node(struct mesh_search *s, const mnode *n) {
  if (s->nn >= MAX_NODES || !grow(&s->nodes, &s->cn, s->nn + 1u, sizeof *s->nodes))
    return 0;
  s->nodes[s->nn] = *n;
  return heap_push(s, s->nn++);
}

/* A node through edge j of cell c (from its vertex j at t = 0 to j + 1 at
 * t = 1), for the part [t0, t1], seen from root. */
static int successor(struct mesh_search *s, const steer_mesh *m, uint32_t c, uint32_t j, double t0, double t1,
                     uint32_t root, double g) {
  const mesh_cell *mc = &m->cells[c];
  uint32_t ei = mc->first + j;
  int32_t q = m->pn[ei];
  if (q < 0 || (m->ways[q] <= 1u && s->goal_gen[q] != s->gen))
    return 1; /* a wall, or a dead end without the goal */
  mpt a = m->verts[m->pv[ei]], b = m->verts[m->pv[mc->first + (j + 1u) % mc->count]];
  /* An end within SNAP_END of a vertex is the vertex: a ray that grazes a
   * corner must leave the corner as the interval's end, or the route could not
   * bend there. */
  double len = dist(a, b), snap = len > 0.0 ? SNAP_END / len : 1.0;
  t0 = t0 < snap ? 0.0 : t0;
  t1 = t1 > 1.0 - snap ? 1.0 : t1;
  if (!(t1 > t0))
    return 1;
  mpt pa = t0 == 0.0 ? a : (mpt){a.x + t0 * (b.x - a.x), a.y + t0 * (b.y - a.y)};
  mpt pb = t1 == 1.0 ? b : (mpt){a.x + t1 * (b.x - a.x), a.y + t1 * (b.y - a.y)};
  if (dist(pa, pb) <= MESH_EPS)
    return 1;
  /* In q the edge runs from b to a: l is toward b, r toward a. */
  mnode n = {pb, pa, g, 0.0, root, (uint32_t)q, m->ptw[ei], t1 == 1.0, t0 == 0.0};
  n.f = g + through(s->roots[root].p, pb, pa, s->goal);
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
  for (uint32_t d = 1; d < cnt; d++) {
    uint32_t j = (k + d) % cnt;
    mpt a = m->verts[m->pv[mc->first + j]], b = m->verts[m->pv[mc->first + (j + 1u) % cnt]];
    if (m->pn[mc->first + j] < 0)
      continue;
    double rlo, rhi, llo, lhi;
    nonneg(mesh_orient(p, R, a), mesh_orient(p, R, b), &rlo, &rhi);   /* left of the right ray */
    nonneg(-mesh_orient(p, L, a), -mesh_orient(p, L, b), &llo, &lhi); /* right of the left ray */
    double lo = fmax(rlo, llo), hi = fmin(rhi, lhi);
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

int steer_mesh_plan_start(steer_mesh *m, vec2 from, vec2 to) {
  if (!m || !isfinite(from.x) || !isfinite(from.y) || !isfinite(to.x) || !isfinite(to.y))
    return STEER_EINVAL;
  struct mesh_search *s = search_of(m);
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
  s->roots[0] = (mroot){st, MESH_NONE, NO_ROOT};
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
  while (s->nh > 0 && s->expanded - n0 < budget) {
    uint32_t ni = heap_pop(s);
    mnode n = s->nodes[ni];
    if (n.cell == NO_CELL) {
      s->found = (int)ni;
      break;
    }
    int32_t rv = s->roots[n.root].v;
    if (rv >= 0 && n.g > s->best[rv] + MESH_EPS)
      continue;
    s->expanded++;
    if (!expand(s, m, &n)) {
      s->state = SEARCH_DONE;
      s->rc = s->nn >= MAX_NODES ? STEER_ENOENT : STEER_ENOMEM;
      break;
    }
  }
  if (spent)
    *spent = s->expanded - n0;
  if (s->state == SEARCH_RUNNING && (s->found >= 0 || s->nh == 0)) {
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

/* navmesh_build.c: the mesh of a map for one radius (navmesh.h): the inflated
 * convex pieces, the vertical sweep of each tile that cuts the uncovered space
 * into trapezoids, the stitching of the cells' sides into a conforming mesh,
 * the convex corners and the point-location buckets. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "navmesh_internal.h"
#include "world.h"

#define PI8       0.39269908169872414 /* pi / 8: the octagons' half-angle */
#define SIDE_BOT  0u
#define SIDE_RGT  1u
#define SIDE_TOP  2u
#define SIDE_LFT  3u
#define EDGE_BOT  UINT32_MAX /* the tile's bottom border in a slab's list */
#define EDGE_TOP  (UINT32_MAX - 1u)
#define THIN      1e-9 /* m, free intervals thinner than this are closed */
#define MERGE     1e-7 /* m, see tile_events */
#define MERGE_MAX 24u  /* vertices of a merged cell at most */

/* ---- pieces: the geometry inflated by R, as convex polygons ------------------ */

typedef struct piece {
  uint32_t first, count; /* into pts, counter-clockwise */
  double lox, loy, hix, hiy;
} piece;

typedef struct pieces {
  mpt *pts;
  uint32_t npts, cpts;
  piece *p;
  uint32_t n, cap;
  mpt *tmp; /* hull scratch */
  uint32_t ctmp;
} pieces;

static int cmp_pt(const void *a, const void *b) {
  const mpt *p = a, *q = b;
  if (p->x != q->x)
    return p->x < q->x ? -1 : 1;
  return (p->y > q->y) - (p->y < q->y);
}

/* Adds the convex hull of the points (counter-clockwise, no collinear
 * vertices) as a piece. */
static int add_hull(pieces *ps, mpt *in, uint32_t n) {
  qsort(in, n, sizeof *in, cmp_pt);
  if (!grow(&ps->pts, &ps->cpts, ps->npts + 2u * n + 2u, sizeof *ps->pts) ||
      !grow(&ps->p, &ps->cap, ps->n + 1u, sizeof *ps->p))
    return 0;
  mpt *h = ps->pts + ps->npts;
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++) { /* lower chain */
    while (k >= 2u && mesh_orient(h[k - 2u], h[k - 1u], in[i]) <= 0.0)
      k--;
    h[k++] = in[i];
  }
  for (uint32_t i = n - 1u, t = k + 1u; i-- > 0;) { /* upper chain */
    while (k >= t && mesh_orient(h[k - 2u], h[k - 1u], in[i]) <= 0.0)
      k--;
    h[k++] = in[i];
  }
  k--; /* the first point again */
  if (k < 3u)
    return 1;
  piece *pc = &ps->p[ps->n++];
  pc->first = ps->npts;
  pc->count = k;
  pc->lox = pc->loy = INFINITY;
  pc->hix = pc->hiy = -INFINITY;
  for (uint32_t i = 0; i < k; i++) {
    pc->lox = fmin(pc->lox, h[i].x), pc->hix = fmax(pc->hix, h[i].x);
    pc->loy = fmin(pc->loy, h[i].y), pc->hiy = fmax(pc->hiy, h[i].y);
  }
  ps->npts += k;
  return 1;
}

/* The hull of the octagons of radius R around each centre: an octagon's sides
 * are tangent to the circle of radius R, so the hull holds the centres'
 * polygon grown by R (a side per 45 degrees of turn). */
static int add_grown(pieces *ps, const mpt *c, uint32_t n, double R) {
  if (!grow(&ps->tmp, &ps->ctmp, 8u * n, sizeof *ps->tmp))
    return 0;
  double rho = R / cos(PI8);
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t k = 0; k < 8u; k++) {
      double a = PI8 + (double)k * 2.0 * PI8;
      ps->tmp[8u * i + k] = (mpt){c[i].x + rho * cos(a), c[i].y + rho * sin(a)};
    }
  return add_hull(ps, ps->tmp, 8u * n);
}

static int convex_ring(const mpt *p, uint32_t n) {
  int sign = 0;
  for (uint32_t i = 0; i < n; i++) {
    double o = mesh_orient(p[i], p[(i + 1u) % n], p[(i + 2u) % n]);
    int s = (o > 0.0) - (o < 0.0);
    if (s && sign && s != sign)
      return 0;
    if (s)
      sign = s;
  }
  return 1;
}

static int inside_tri(mpt a, mpt b, mpt c, mpt p) {
  return mesh_orient(a, b, p) >= 0.0 && mesh_orient(b, c, p) >= 0.0 && mesh_orient(c, a, p) >= 0.0;
}

/* A concave polygon's inside as triangles (ear clipping of the
 * counter-clockwise ring; the map checked that it is simple). */
static int add_ears(pieces *ps, mpt *ring, uint32_t n) {
  uint32_t idx[STEER_MAP_MAX_VERTICES];
  for (uint32_t i = 0; i < n; i++)
    idx[i] = i;
  uint32_t guard = 0;
  while (n > 3u && guard++ < 4u * STEER_MAP_MAX_VERTICES * STEER_MAP_MAX_VERTICES) {
    int cut = 0;
    for (uint32_t i = 0; i < n && !cut; i++) {
      mpt a = ring[idx[(i + n - 1u) % n]], b = ring[idx[i]], c = ring[idx[(i + 1u) % n]];
      if (mesh_orient(a, b, c) <= 0.0)
        continue;
      int ear = 1;
      for (uint32_t j = 0; j < n && ear; j++) {
        if (j == i || j == (i + 1u) % n || j == (i + n - 1u) % n)
          continue;
        if (inside_tri(a, b, c, ring[idx[j]]))
          ear = 0;
      }
      if (!ear)
        continue;
      mpt t[3] = {a, b, c};
      if (!add_hull(ps, t, 3))
        return 0;
      memmove(idx + i, idx + i + 1u, (n - i - 1u) * sizeof *idx);
      n--;
      cut = 1;
    }
    if (!cut) { /* a numerically degenerate rest: covered by its hull (more, never less) */
      mpt rest[STEER_MAP_MAX_VERTICES];
      for (uint32_t i = 0; i < n; i++)
        rest[i] = ring[idx[i]];
      return add_hull(ps, rest, n);
    }
  }
  if (n == 3u) {
    mpt t[3] = {ring[idx[0]], ring[idx[1]], ring[idx[2]]};
    if (!add_hull(ps, t, 3))
      return 0;
  }
  return 1;
}

static int add_obstacle(pieces *ps, const steer_obstacle_desc *o, double R) {
  mpt ring[STEER_MAP_MAX_VERTICES];
  uint32_t n = o->count;
  for (uint32_t i = 0; i < n; i++)
    ring[i] = (mpt){o->points[i].x, o->points[i].y};
  if (o->kind == STEER_OBSTACLE_CIRCLE)
    return add_grown(ps, ring, 1, (double)o->radius + R);
  if (o->kind == STEER_OBSTACLE_POLYGON && convex_ring(ring, n))
    return add_grown(ps, ring, n, R);
  if (o->kind == STEER_OBSTACLE_POLYGON) {
    double area = 0.0;
    for (uint32_t i = 0; i < n; i++)
      area += ring[i].x * ring[(i + 1u) % n].y - ring[(i + 1u) % n].x * ring[i].y;
    if (area < 0.0)
      for (uint32_t i = 0; i < n / 2u; i++) {
        mpt t = ring[i];
        ring[i] = ring[n - 1u - i];
        ring[n - 1u - i] = t;
      }
    if (!add_ears(ps, ring, n))
      return 0;
  }
  uint32_t segs = o->kind == STEER_OBSTACLE_POLYGON ? n : n - 1u;
  for (uint32_t i = 0; i < segs; i++) {
    mpt s[2] = {ring[i], ring[(i + 1u) % n]};
    if (!add_grown(ps, s, 2, R))
      return 0;
  }
  return 1;
}

/* ---- the sweep of one tile ---------------------------------------------------- */

typedef struct sedge {
  double x0, y0, x1, y1; /* x0 < x1 */
  int delta;             /* +1: crossing it upward enters a piece, -1: leaves it */
  uint32_t piece;
  uint32_t ov; /* first override + 1, 0: none */
} sedge;

typedef struct override {
  double x, y;
  uint32_t next; /* + 1 */
} override;

typedef struct ival {
  uint32_t b, t; /* the edges below and above (or a border) */
  double ybl, ytl, ybr, ytr;
  uint32_t cell;
} ival;

/* A cell's side on a line, and what the stitching makes of it. */
typedef struct side {
  uint32_t cell;
  double a, b; /* along the line, a < b */
} side;

typedef struct seg {
  uint32_t cell;
  uint8_t side;
  double a, b;
  int32_t nbr;
} seg;

typedef struct bcell { /* a cell while the mesh is assembled */
  double xl, ybl, ytl, xr, ybr, ytr;
  double ybot, ytop; /* the borders' y when bottom / top lie on one */
  uint8_t bot_border, top_border;
} bcell;

typedef struct tile_sides {
  side *s[4]; /* by SIDE_*: the tile's cells along its bottom, right, top and left borders */
  uint32_t n[4], cap[4];
} tile_sides;

typedef struct builder {
  const pieces *ps;
  double tx0, ty0, tx1, ty1;
  sedge *e;
  uint32_t ne, ce;
  override *ov;
  uint32_t nov, cov;
  double *xs;
  uint32_t nxs, cxs;
  uint32_t *order, *active;
  uint32_t co, ca;
  struct xkey *keys;
  uint32_t ckeys;
  double *key;
  uint32_t ckey;
  ival *cur, *next;
  uint32_t ccur, cnext;
  side *ending, *starting;
  uint32_t cend, cstart;

  bcell *cells;
  uint32_t ncells, ccells;
  seg *segs;
  uint32_t nsegs, csegs;
  int fail;
} builder;

static double edge_y(const builder *b, uint32_t e, double x) {
  if (e == EDGE_BOT)
    return b->ty0;
  if (e == EDGE_TOP)
    return b->ty1;
  const sedge *s = &b->e[e];
  for (uint32_t o = s->ov; o; o = b->ov[o - 1u].next)
    if (fabs(b->ov[o - 1u].x - x) <= MERGE)
      return b->ov[o - 1u].y;
  if (x <= s->x0)
    return s->y0;
  if (x >= s->x1)
    return s->y1;
  return s->y0 + (s->y1 - s->y0) * ((x - s->x0) / (s->x1 - s->x0));
}

static int add_override(builder *b, uint32_t e, double x, double y) {
  if (!grow(&b->ov, &b->cov, b->nov + 1u, sizeof *b->ov))
    return 0;
  b->ov[b->nov] = (override){x, y, b->e[e].ov};
  b->e[e].ov = ++b->nov;
  return 1;
}

static int add_x(builder *b, double x) {
  if (!grow(&b->xs, &b->cxs, b->nxs + 1u, sizeof *b->xs))
    return 0;
  b->xs[b->nxs++] = x;
  return 1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* An edge's left end, for sorting the tile's edges by it (ties by index: the
 * same order on every run and thread). */
typedef struct xkey {
  double x0;
  uint32_t e;
} xkey;

static int cmp_xkey(const void *a, const void *b) {
  const xkey *p = a, *q = b;
  if (p->x0 != q->x0)
    return p->x0 < q->x0 ? -1 : 1;
  return (p->e > q->e) - (p->e < q->e);
}

/* The tile's edges, and the x of every event inside it: vertices, crossings of
 * two pieces' edges, crossings of the tile's borders. */
static int tile_events(builder *b, const uint32_t *items, uint32_t nitems) {
  const pieces *ps = b->ps;
  b->ne = b->nov = b->nxs = 0;
  for (uint32_t i = 0; i < nitems; i++) {
    const piece *pc = &ps->p[items[i]];
    for (uint32_t k = 0; k < pc->count; k++) {
      mpt p = ps->pts[pc->first + k], q = ps->pts[pc->first + (k + 1u) % pc->count];
      if (p.x > b->tx0 && p.x < b->tx1 && !add_x(b, p.x))
        return 0;
      if (p.x == q.x || fmax(p.x, q.x) <= b->tx0 || fmin(p.x, q.x) >= b->tx1)
        continue;
      if (!grow(&b->e, &b->ce, b->ne + 1u, sizeof *b->e))
        return 0;
      sedge *s = &b->e[b->ne++];
      int right = q.x > p.x;
      *s = (sedge){right ? p.x : q.x,
                   right ? p.y : q.y,
                   right ? q.x : p.x,
                   right ? q.y : p.y,
                   right ? 1 : -1,
                   items[i],
                   0};
    }
  }
  if (!grow(&b->order, &b->co, b->ne + 1u, sizeof *b->order) ||
      !grow(&b->keys, &b->ckeys, b->ne + 1u, sizeof *b->keys))
    return 0;
  for (uint32_t i = 0; i < b->ne; i++)
    b->keys[i] = (xkey){b->e[i].x0, i};
  qsort(b->keys, b->ne, sizeof *b->keys, cmp_xkey);
  for (uint32_t i = 0; i < b->ne; i++)
    b->order[i] = b->keys[i].e;
  for (uint32_t i = 0; i < b->ne; i++) {
    uint32_t ei = b->order[i];
    const sedge s = b->e[ei];
    const double border[2] = {b->ty0, b->ty1};
    for (int k = 0; k < 2; k++) {
      double ty = border[k];
      if ((s.y0 < ty && s.y1 > ty) || (s.y0 > ty && s.y1 < ty)) {
        double x = s.x0 + (ty - s.y0) * ((s.x1 - s.x0) / (s.y1 - s.y0));
        if (x > b->tx0 && x < b->tx1 && x > s.x0 && x < s.x1 && (!add_x(b, x) || !add_override(b, ei, x, ty)))
          return 0;
      }
    }
    double ylo = fmin(s.y0, s.y1), yhi = fmax(s.y0, s.y1);
    if (yhi < b->ty0 || ylo > b->ty1)
      continue;
    for (uint32_t j = i + 1u; j < b->ne; j++) {
      uint32_t ej = b->order[j];
      const sedge t = b->e[ej];
      if (t.x0 >= s.x1)
        break;
      if (t.piece == s.piece || fmax(t.y0, t.y1) < ylo || fmin(t.y0, t.y1) > yhi)
        continue;
      double dax = s.x1 - s.x0, day = s.y1 - s.y0, dbx = t.x1 - t.x0, dby = t.y1 - t.y0;
      double den = dax * dby - day * dbx;
      if (den == 0.0)
        continue;
      double wx = t.x0 - s.x0, wy = t.y0 - s.y0;
      double ta = (wx * dby - wy * dbx) / den, tb = (wx * day - wy * dax) / den;
      if (!(ta > 0.0 && ta < 1.0 && tb > 0.0 && tb < 1.0))
        continue;
      double x = s.x0 + ta * dax, y = s.y0 + ta * day;
      if (!(x > b->tx0 && x < b->tx1 && x > s.x0 && x < s.x1 && x > t.x0 && x < t.x1) || y < b->ty0 ||
          y > b->ty1)
        continue;
      if (!add_x(b, x) || !add_override(b, ei, x, y) || !add_override(b, ej, x, y))
        return 0;
    }
  }
  if (!add_x(b, b->tx0) || !add_x(b, b->tx1))
    return 0;
  qsort(b->xs, b->nxs, sizeof *b->xs, cmp_double);
  /* Events closer than MERGE are one (the first; the tile's borders win): a
   * slab thinner than that would only make cells of no width. */
  uint32_t k = 0;
  for (uint32_t i = 0; i < b->nxs; i++) {
    double x = b->xs[i];
    if (x != b->tx1 && (x - b->tx0 <= MERGE || b->tx1 - x <= MERGE) && x != b->tx0)
      continue;
    if (k == 0 || x - b->xs[k - 1u] > MERGE)
      b->xs[k++] = x;
  }
  b->nxs = k;
  return 1;
}

static int push_seg(builder *b, uint32_t cell, uint8_t s, double lo, double hi, int32_t nbr) {
  if (!grow(&b->segs, &b->csegs, b->nsegs + 1u, sizeof *b->segs)) {
    b->fail = 1;
    return 0;
  }
  b->segs[b->nsegs++] = (seg){cell, s, lo, hi, nbr};
  return 1;
}

/* Joins the sides of two rows of cells along one line: lo's sides (facing +,
 * side slo) and hi's (facing -, side shi), each sorted and disjoint. Every
 * side is cut at the ends of the sides across it, and each piece gets the cell
 * across it, or none. */
static void stitch(builder *b, const side *lo, uint32_t nlo, uint8_t slo, const side *hi, uint32_t nhi,
                   uint8_t shi) {
  uint32_t i = 0, j = 0, bi = 0, bj = 0;
  double p = -INFINITY;
  for (;;) {
    /* The next breakpoint after p: the smallest end above p of either row. */
    while (bi < 2u * nlo && (bi & 1u ? lo[bi / 2u].b : lo[bi / 2u].a) <= p)
      bi++;
    while (bj < 2u * nhi && (bj & 1u ? hi[bj / 2u].b : hi[bj / 2u].a) <= p)
      bj++;
    double qi = bi < 2u * nlo ? (bi & 1u ? lo[bi / 2u].b : lo[bi / 2u].a) : INFINITY;
    double qj = bj < 2u * nhi ? (bj & 1u ? hi[bj / 2u].b : hi[bj / 2u].a) : INFINITY;
    double q = fmin(qi, qj);
    if (q == INFINITY)
      return;
    if (p > -INFINITY) {
      while (i < nlo && lo[i].b <= p)
        i++;
      while (j < nhi && hi[j].b <= p)
        j++;
      int in_lo = i < nlo && lo[i].a <= p && lo[i].b >= q;
      int in_hi = j < nhi && hi[j].a <= p && hi[j].b >= q;
      if (in_lo && !push_seg(b, lo[i].cell, slo, p, q, in_hi ? (int32_t)hi[j].cell : MESH_NONE))
        return;
      if (in_hi && !push_seg(b, hi[j].cell, shi, p, q, in_lo ? (int32_t)lo[i].cell : MESH_NONE))
        return;
    }
    p = q;
  }
}

static uint32_t new_cell(builder *b, double x, const ival *v, double ty0, double ty1) {
  if (!grow(&b->cells, &b->ccells, b->ncells + 1u, sizeof *b->cells)) {
    b->fail = 1;
    return 0;
  }
  bcell *c = &b->cells[b->ncells];
  memset(c, 0, sizeof *c);
  c->xl = x;
  c->ybl = v->ybl;
  c->ytl = v->ytl;
  c->bot_border = v->b == EDGE_BOT;
  c->top_border = v->t == EDGE_TOP;
  c->ybot = ty0;
  c->ytop = ty1;
  return b->ncells++;
}

static int push_side(side **s, uint32_t *n, uint32_t *cap, uint32_t cell, double a, double e) {
  if (!(e > a))
    return 1;
  if (!grow(s, cap, *n + 1u, sizeof **s))
    return 0;
  (*s)[(*n)++] = (side){cell, a, e};
  return 1;
}

/* Ends cell v at x: its right side, and its border sides for the stitching. */
static int close_cell(builder *b, const ival *v, double x, tile_sides *ts, side *ending, uint32_t *nend) {
  bcell *c = &b->cells[v->cell];
  c->xr = x;
  c->ybr = v->ybr;
  c->ytr = v->ytr;
  if (c->bot_border && !push_side(&ts->s[SIDE_BOT], &ts->n[SIDE_BOT], &ts->cap[SIDE_BOT], v->cell, c->xl, x))
    return 0;
  if (c->top_border && !push_side(&ts->s[SIDE_TOP], &ts->n[SIDE_TOP], &ts->cap[SIDE_TOP], v->cell, c->xl, x))
    return 0;
  if (v->ytr > v->ybr)
    ending[(*nend)++] = (side){v->cell, v->ybr, v->ytr};
  return 1;
}

/* The free intervals of the slab [xa, xb]: between the active edges sorted by
 * height at the slab's middle, where no piece covers and inside the tile. */
static uint32_t slab_intervals(builder *b, uint32_t na, double xa, double xb, ival *out) {
  double xm = 0.5 * (xa + xb);
  uint32_t n = 0, pos = 0, start = 0;
  int count = 0, inside = 0, bot = 0, top = 0;
  for (;;) {
    uint32_t item;
    if (!bot && (pos >= na || b->key[pos] > b->ty0))
      item = EDGE_BOT, bot = 1;
    else if (bot && !top && (pos >= na || b->key[pos] >= b->ty1))
      item = EDGE_TOP, top = 1;
    else if (pos < na)
      item = b->active[pos++];
    else
      break;
    int was = inside && count == 0;
    if (item == EDGE_BOT)
      inside = 1;
    else if (item == EDGE_TOP)
      inside = 0;
    else
      count += b->e[item].delta;
    int now = inside && count == 0;
    if (!was && now)
      start = item;
    if (was && !now && edge_y(b, item, xm) - edge_y(b, start, xm) > THIN) {
      ival *v = &out[n++];
      v->b = start;
      v->t = item;
      v->ybl = edge_y(b, start, xa);
      v->ytl = fmax(edge_y(b, item, xa), v->ybl);
      v->ybr = edge_y(b, start, xb);
      v->ytr = fmax(edge_y(b, item, xb), v->ybr);
    }
    if (top)
      break;
  }
  return n;
}

static void sort_active(builder *b, uint32_t na, double xm) {
  for (uint32_t k = 0; k < na; k++) {
    const sedge *s = &b->e[b->active[k]];
    b->key[k] = s->y0 + (s->y1 - s->y0) * ((xm - s->x0) / (s->x1 - s->x0));
  }
  for (uint32_t k = 1; k < na; k++) { /* nearly sorted from the last slab */
    uint32_t e = b->active[k];
    double y = b->key[k];
    uint32_t j = k;
    while (j > 0) {
      uint32_t f = b->active[j - 1u];
      double z = b->key[j - 1u];
      int before =
          z < y || (z == y && (b->e[f].delta > b->e[e].delta || (b->e[f].delta == b->e[e].delta && f < e)));
      if (before)
        break;
      b->active[j] = f;
      b->key[j] = z;
      j--;
    }
    b->active[j] = e;
    b->key[j] = y;
  }
}

static int sweep_tile(builder *b, const uint32_t *items, uint32_t nitems, tile_sides *ts) {
  if (!tile_events(b, items, nitems))
    return 0;
  uint32_t room = b->ne + 4u;
  if (!grow(&b->active, &b->ca, room, sizeof *b->active) || !grow(&b->key, &b->ckey, room, sizeof *b->key) ||
      !grow(&b->cur, &b->ccur, room, sizeof *b->cur) || !grow(&b->next, &b->cnext, room, sizeof *b->next) ||
      !grow(&b->ending, &b->cend, room, sizeof *b->ending) ||
      !grow(&b->starting, &b->cstart, room, sizeof *b->starting))
    return 0;
  uint32_t na = 0, oi = 0, ncur = 0;
  for (uint32_t s = 0; s + 1u < b->nxs; s++) {
    double xa = b->xs[s], xb = b->xs[s + 1u];
    uint32_t k = 0;
    /* An edge spans the slab when its ends are at or beyond the slab's, events
     * within MERGE being one. */
    for (uint32_t i = 0; i < na; i++)
      if (b->e[b->active[i]].x1 > xa + MERGE)
        b->active[k++] = b->active[i];
    na = k;
    for (; oi < b->ne && b->e[b->order[oi]].x0 <= xa + MERGE; oi++)
      if (b->e[b->order[oi]].x1 > xa + MERGE)
        b->active[na++] = b->order[oi];
    sort_active(b, na, 0.5 * (xa + xb));
    uint32_t nnext = slab_intervals(b, na, xa, xb, b->next);
    uint32_t nend = 0, nstart = 0, i = 0, j = 0;
    while (i < ncur || j < nnext) {
      if (i < ncur && j < nnext && b->cur[i].b == b->next[j].b && b->cur[i].t == b->next[j].t) {
        b->next[j++].cell = b->cur[i++].cell;
        continue;
      }
      if (i < ncur && (j >= nnext || b->cur[i].ytr <= b->next[j].ytl)) {
        if (!close_cell(b, &b->cur[i++], xa, ts, b->ending, &nend))
          return 0;
        continue;
      }
      ival *v = &b->next[j++];
      v->cell = new_cell(b, xa, v, b->ty0, b->ty1);
      if (b->fail)
        return 0;
      if (v->ytl > v->ybl)
        b->starting[nstart++] = (side){v->cell, v->ybl, v->ytl};
    }
    if (s == 0) {
      for (uint32_t q = 0; q < nstart; q++)
        if (!push_side(&ts->s[SIDE_LFT], &ts->n[SIDE_LFT], &ts->cap[SIDE_LFT], b->starting[q].cell,
                       b->starting[q].a, b->starting[q].b))
          return 0;
    } else {
      stitch(b, b->ending, nend, SIDE_RGT, b->starting, nstart, SIDE_LFT);
      if (b->fail)
        return 0;
    }
    ival *t = b->cur;
    b->cur = b->next;
    b->next = t;
    uint32_t tc = b->ccur;
    b->ccur = b->cnext;
    b->cnext = tc;
    ncur = nnext;
  }
  uint32_t nend = 0;
  for (uint32_t i = 0; i < ncur; i++)
    if (!close_cell(b, &b->cur[i], b->tx1, ts, b->ending, &nend))
      return 0;
  for (uint32_t q = 0; q < nend; q++)
    if (!push_side(&ts->s[SIDE_RGT], &ts->n[SIDE_RGT], &ts->cap[SIDE_RGT], b->ending[q].cell, b->ending[q].a,
                   b->ending[q].b))
      return 0;
  return 1;
}

/* ---- assembly: shared vertices, polygons, twins, corners, buckets ------------ */

typedef struct vhash {
  uint64_t *keys; /* x bits, y bits interleaved: 2 per slot */
  uint32_t *ids;
  uint32_t mask;
} vhash;

static uint64_t dbits(double d) {
  uint64_t u;
  if (d == 0.0)
    d = 0.0; /* -0 and 0 are one point */
  memcpy(&u, &d, sizeof u);
  return u;
}

static int vertex_id(steer_mesh *m, uint32_t *cap, vhash *h, mpt p, uint32_t *id) {
  uint64_t kx = dbits(p.x), ky = dbits(p.y);
  uint64_t hv = (kx * 0x9E3779B97F4A7C15ULL) ^ (ky + 0x632BE59BD9B4E019ULL + (kx << 6));
  hv ^= hv >> 29;
  for (uint32_t s = (uint32_t)hv & h->mask;; s = (s + 1u) & h->mask) {
    if (h->ids[s] == UINT32_MAX) {
      if (!grow(&m->verts, cap, m->nverts + 1u, sizeof *m->verts))
        return 0;
      h->keys[2u * s] = kx;
      h->keys[2u * s + 1u] = ky;
      h->ids[s] = m->nverts;
      m->verts[m->nverts] = p;
      *id = m->nverts++;
      return 1;
    }
    if (h->keys[2u * s] == kx && h->keys[2u * s + 1u] == ky) {
      *id = h->ids[s];
      return 1;
    }
  }
}

static int cmp_seg(const void *a, const void *b) {
  const seg *p = a, *q = b;
  if (p->side != q->side)
    return p->side < q->side ? -1 : 1;
  return (p->a > q->a) - (p->a < q->a);
}

typedef struct emit {
  mpt p;
  int32_t nbr;
} emit;

static int assemble(steer_mesh *m, builder *b) {
  uint32_t nc = b->ncells;
  uint32_t *first = calloc((size_t)nc + 1u, sizeof *first);
  seg *sorted = malloc(((size_t)b->nsegs + 1u) * sizeof *sorted);
  size_t slots = 16u;
  while (slots < 2u * ((size_t)b->nsegs + 4u * nc))
    slots *= 2u;
  vhash h = {malloc(2u * slots * sizeof(uint64_t)), malloc(slots * sizeof(uint32_t)), (uint32_t)(slots - 1u)};
  emit *em = NULL;
  int32_t *nb = NULL;
  uint32_t cem = 0, cverts = 0, cedges = 0, cnb = 0;
  int ok = first && sorted && h.keys && h.ids;
  m->cells = ok ? malloc(((size_t)nc + 1u) * sizeof *m->cells) : NULL;
  ok = ok && m->cells;
  if (ok) {
    memset(h.ids, 0xff, slots * sizeof(uint32_t));
    for (uint32_t i = 0; i < b->nsegs; i++)
      first[b->segs[i].cell + 1u]++;
    for (uint32_t c = 0; c < nc; c++)
      first[c + 1u] += first[c];
    uint32_t *fill = malloc(((size_t)nc + 1u) * sizeof *fill);
    ok = fill != NULL;
    if (ok) {
      memcpy(fill, first, (size_t)nc * sizeof *fill);
      for (uint32_t i = 0; i < b->nsegs; i++)
        sorted[fill[b->segs[i].cell]++] = b->segs[i];
      free(fill);
    }
  }
  m->ncells = 0;
  m->nedges = 0;
  for (uint32_t c = 0; ok && c < nc; c++) {
    const bcell *bc = &b->cells[c];
    seg *s = sorted + first[c];
    uint32_t ns = first[c + 1u] - first[c];
    qsort(s, ns, sizeof *s, cmp_seg);
    ok = grow(&em, &cem, ns + 4u, sizeof *em);
    if (!ok)
      break;
    uint32_t ne = 0, k = 0;
    if (bc->bot_border)
      for (; k < ns && s[k].side == SIDE_BOT; k++)
        em[ne++] = (emit){{s[k].a, bc->ybot}, s[k].nbr};
    else
      em[ne++] = (emit){{bc->xl, bc->ybl}, MESH_NONE};
    for (; k < ns && s[k].side == SIDE_RGT; k++)
      em[ne++] = (emit){{bc->xr, s[k].a}, s[k].nbr};
    uint32_t t0 = k;
    while (k < ns && s[k].side == SIDE_TOP)
      k++;
    if (bc->top_border)
      for (uint32_t q = k; q-- > t0;)
        em[ne++] = (emit){{s[q].b, bc->ytop}, s[q].nbr};
    else
      em[ne++] = (emit){{bc->xr, bc->ytr}, MESH_NONE};
    for (uint32_t q = ns; q-- > k;)
      em[ne++] = (emit){{bc->xl, s[q].b}, s[q].nbr};
    /* Shared vertices; a side of length 0 (two equal points) is dropped. */
    uint32_t base = m->nedges, cnt = 0;
    ok = grow(&m->pv, &cedges, base + ne, sizeof *m->pv) && grow(&nb, &cnb, base + ne, sizeof *nb);
    if (!ok)
      break;
    for (uint32_t q = 0; q < ne && ok; q++) {
      uint32_t id;
      ok = vertex_id(m, &cverts, &h, em[q].p, &id);
      if (ok && cnt > 0 && m->pv[base + cnt - 1u] == id) {
        em[cnt - 1u].nbr = em[q].nbr; /* the edge of length 0 goes; the next starts here */
        continue;
      }
      if (ok) {
        m->pv[base + cnt] = id;
        em[cnt].nbr = em[q].nbr;
        cnt++;
      }
    }
    while (ok && cnt > 1u && m->pv[base + cnt - 1u] == m->pv[base])
      cnt--;
    if (!ok)
      break;
    if (cnt > UINT16_MAX) { /* the twins' indices are 16-bit */
      ok = 0;
      break;
    }
    mesh_cell *mc = &m->cells[c];
    mc->first = base;
    mc->count = cnt >= 3u ? cnt : 0u;
    mc->lox = fmin(bc->xl, bc->xr);
    mc->hix = fmax(bc->xl, bc->xr);
    mc->loy = fmin(bc->ybl, bc->ybr);
    mc->hiy = fmax(bc->ytl, bc->ytr);
    for (uint32_t q = 0; q < mc->count; q++)
      nb[base + q] = em[q].nbr;
    m->nedges = base + mc->count;
    m->ncells = c + 1u;
  }
  if (ok) {
    m->pn = nb;
    nb = NULL;
    m->ptw = malloc(((size_t)m->nedges + 1u) * sizeof *m->ptw);
    ok = m->pn && m->ptw;
  }
  free(first);
  free(sorted);
  free(h.keys);
  free(h.ids);
  free(em);
  free(nb);
  return ok;
}

/* Each shared edge's index in the cell across; an edge whose twin is not there
 * (rounding left the two sides different) is treated as a wall on both sides. */
static void link_twins(steer_mesh *m) {
  for (uint32_t c = 0; c < m->ncells; c++) {
    const mesh_cell *mc = &m->cells[c];
    for (uint32_t k = 0; k < mc->count; k++) {
      uint32_t i = mc->first + k;
      m->ptw[i] = 0;
      int32_t q = m->pn[i];
      if (q < 0)
        continue;
      uint32_t u = m->pv[i], v = m->pv[mc->first + (k + 1u) % mc->count];
      const mesh_cell *qc = &m->cells[q];
      int found = 0;
      for (uint32_t j = 0; j < qc->count && !found; j++)
        if (m->pv[qc->first + j] == v && m->pv[qc->first + (j + 1u) % qc->count] == u &&
            m->pn[qc->first + j] == (int32_t)c) {
          m->ptw[i] = (uint16_t)j;
          found = 1;
        }
      if (!found)
        m->pn[i] = MESH_NONE;
    }
  }
  for (uint32_t c = 0; c < m->ncells; c++) { /* the other side of a dropped link */
    const mesh_cell *mc = &m->cells[c];
    for (uint32_t k = 0; k < mc->count; k++) {
      uint32_t i = mc->first + k;
      int32_t q = m->pn[i];
      if (q >= 0 && m->pn[m->cells[q].first + m->ptw[i]] != (int32_t)c)
        m->pn[i] = MESH_NONE;
    }
  }
}

/* A vertex is a corner where the free space around it spans more than a half
 * turn and it touches a wall: the convex corners routes bend around. */
static int mark_corners(steer_mesh *m) {
  double *angle = calloc((size_t)m->nverts + 1u, sizeof *angle);
  m->corner = calloc((size_t)m->nverts + 1u, 1);
  if (!angle || !m->corner) {
    free(angle);
    return 0;
  }
  for (uint32_t c = 0; c < m->ncells; c++) {
    const mesh_cell *mc = &m->cells[c];
    for (uint32_t k = 0; k < mc->count; k++) {
      uint32_t pi = m->pv[mc->first + (k + mc->count - 1u) % mc->count], vi = m->pv[mc->first + k],
               ni = m->pv[mc->first + (k + 1u) % mc->count];
      mpt p = m->verts[pi], v = m->verts[vi], n = m->verts[ni];
      double ax = n.x - v.x, ay = n.y - v.y, bx = p.x - v.x, by = p.y - v.y;
      double a = atan2(ax * by - ay * bx, ax * bx + ay * by);
      angle[vi] += a < -1.0 ? a + 2.0 * 3.14159265358979323846 : a; /* a straight side's -0 cross gives -pi */
      if (m->pn[mc->first + k] < 0) {                               /* the edge from v to n is a wall */
        m->corner[vi] |= 2u;
        m->corner[ni] |= 2u;
      }
    }
  }
  for (uint32_t v = 0; v < m->nverts; v++)
    m->corner[v] = (m->corner[v] & 2u) && angle[v] > 3.14159265358979323846 + 1e-6;
  free(angle);
  m->ways = calloc((size_t)m->ncells + 1u, 1);
  if (!m->ways)
    return 0;
  for (uint32_t c = 0; c < m->ncells; c++)
    for (uint32_t k = 0; k < m->cells[c].count; k++)
      if (m->pn[m->cells[c].first + k] >= 0 && m->ways[c] < 255u)
        m->ways[c]++;
  return 1;
}

static void bucket_range(const steer_mesh *m, double lo, double hi, double org, uint32_t n, uint32_t *a,
                         uint32_t *b) {
  double fa = floor((lo - org) / MESH_BUCKET), fb = floor((hi - org) / MESH_BUCKET);
  *a = fa < 0.0 ? 0u : (fa >= (double)n ? n - 1u : (uint32_t)fa);
  *b = fb < 0.0 ? 0u : (fb >= (double)n ? n - 1u : (uint32_t)fb);
  (void)m;
}

static int make_buckets(steer_mesh *m) {
  m->bcols = (uint32_t)ceil((m->hi.x - m->lo.x) / MESH_BUCKET);
  m->brows = (uint32_t)ceil((m->hi.y - m->lo.y) / MESH_BUCKET);
  if (m->bcols == 0)
    m->bcols = 1;
  if (m->brows == 0)
    m->brows = 1;
  size_t nb = (size_t)m->bcols * m->brows;
  m->bstart = calloc(nb + 1u, sizeof *m->bstart);
  if (!m->bstart)
    return 0;
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t c = 0; c < m->ncells; c++) {
      const mesh_cell *mc = &m->cells[c];
      if (!mc->count)
        continue;
      uint32_t x0, x1, y0, y1;
      bucket_range(m, mc->lox, mc->hix, m->lo.x, m->bcols, &x0, &x1);
      bucket_range(m, mc->loy, mc->hiy, m->lo.y, m->brows, &y0, &y1);
      for (uint32_t y = y0; y <= y1; y++)
        for (uint32_t x = x0; x <= x1; x++) {
          size_t bi = (size_t)y * m->bcols + x;
          if (pass == 0)
            m->bstart[bi + 1u]++;
          else
            m->bitems[m->bstart[bi]++] = c;
        }
    }
    if (pass == 0) {
      for (size_t i = 0; i < nb; i++)
        m->bstart[i + 1u] += m->bstart[i];
      m->bitems = malloc(((size_t)m->bstart[nb] + 1u) * sizeof *m->bitems);
      if (!m->bitems)
        return 0;
    }
  }
  for (size_t i = nb; i > 0; i--) /* the fill moved every start to the next one's */
    m->bstart[i] = m->bstart[i - 1u];
  m->bstart[0] = 0;
  return 1;
}

static int cell_holds(const steer_mesh *m, uint32_t c, mpt p) {
  const mesh_cell *mc = &m->cells[c];
  if (!mc->count || p.x < mc->lox - MESH_EPS || p.x > mc->hix + MESH_EPS || p.y < mc->loy - MESH_EPS ||
      p.y > mc->hiy + MESH_EPS)
    return 0;
  for (uint32_t k = 0; k < mc->count; k++) {
    mpt a = m->verts[m->pv[mc->first + k]], b = m->verts[m->pv[mc->first + (k + 1u) % mc->count]];
    double len = hypot(b.x - a.x, b.y - a.y);
    if (mesh_orient(a, b, p) < -MESH_EPS * len)
      return 0;
  }
  return 1;
}

uint32_t mesh_locate_all(const steer_mesh *m, mpt p, uint32_t *out, uint32_t cap) {
  if (!(p.x >= m->lo.x && p.x <= m->hi.x && p.y >= m->lo.y && p.y <= m->hi.y))
    return 0;
  uint32_t x, y, n = 0;
  bucket_range(m, p.x, p.x, m->lo.x, m->bcols, &x, &x);
  bucket_range(m, p.y, p.y, m->lo.y, m->brows, &y, &y);
  size_t bi = (size_t)y * m->bcols + x;
  for (uint32_t i = m->bstart[bi]; i < m->bstart[bi + 1u]; i++)
    if (cell_holds(m, m->bitems[i], p)) {
      if (n < cap)
        out[n] = m->bitems[i];
      n++;
    }
  return n < cap ? n : cap;
}

int32_t mesh_locate(const steer_mesh *m, mpt p) {
  uint32_t c;
  return mesh_locate_all(m, p, &c, 1) ? (int32_t)c : MESH_NONE;
}

int mesh_nearest(const steer_mesh *m, mpt p, double reach, mpt *out, int32_t *cell) {
  uint32_t x0, x1, y0, y1;
  bucket_range(m, p.x - reach, p.x + reach, m->lo.x, m->bcols, &x0, &x1);
  bucket_range(m, p.y - reach, p.y + reach, m->lo.y, m->brows, &y0, &y1);
  double best = reach * reach;
  int found = 0;
  for (uint32_t y = y0; y <= y1; y++)
    for (uint32_t x = x0; x <= x1; x++) {
      size_t bi = (size_t)y * m->bcols + x;
      for (uint32_t i = m->bstart[bi]; i < m->bstart[bi + 1u]; i++) {
        const mesh_cell *mc = &m->cells[m->bitems[i]];
        for (uint32_t k = 0; k < mc->count; k++) {
          mpt a = m->verts[m->pv[mc->first + k]], b = m->verts[m->pv[mc->first + (k + 1u) % mc->count]];
          double dx = b.x - a.x, dy = b.y - a.y, l2 = dx * dx + dy * dy;
          double t = l2 > 0.0 ? ((p.x - a.x) * dx + (p.y - a.y) * dy) / l2 : 0.0;
          t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
          mpt q = {a.x + t * dx, a.y + t * dy};
          double d2 = (q.x - p.x) * (q.x - p.x) + (q.y - p.y) * (q.y - p.y);
          if (d2 < best) {
            best = d2;
            *out = q;
            *cell = (int32_t)m->bitems[i];
            found = 1;
          }
        }
      }
    }
  if (!found)
    return 0;
  /* Into the cell a little, toward its centre, so that the point rounded to
   * floats is still inside. */
  const mesh_cell *mc = &m->cells[*cell];
  mpt c = {0.0, 0.0};
  for (uint32_t k = 0; k < mc->count; k++)
    c.x += m->verts[m->pv[mc->first + k]].x, c.y += m->verts[m->pv[mc->first + k]].y;
  c.x /= mc->count, c.y /= mc->count;
  double dx = c.x - out->x, dy = c.y - out->y, l = sqrt(dx * dx + dy * dy);
  for (double in = 1e-4; l > 0.0 && in <= 1e-2; in *= 10.0) {
    double t = in < l ? in / l : 0.5;
    mpt q = {(double)(float)(out->x + t * dx), (double)(float)(out->y + t * dy)};
    if (cell_holds(m, (uint32_t)*cell, q)) {
      *out = q;
      return 1;
    }
  }
  return 0;
}

/* ---- merging: fewer, larger convex cells --------------------------------------- */

/* Cells are joined across a shared edge while the union stays convex and
 * small (a search's cost is per cell it enters, and the sweep cuts the free
 * space at every vertex's x into thin slabs). Greedy in cell order, so the
 * result depends only on the map. */
typedef struct merger {
  steer_mesh *m;
  uint32_t *rep;
  uint32_t *off, *cnt; /* per cell: 0 (its list in m's arrays) or its pool offset + 1; its count */
  uint32_t *pool;
  int32_t *npool;
  uint32_t cpool, cnpool, npooled;
} merger;

static uint32_t rep_of(uint32_t *rep, uint32_t c) {
  while (rep[c] != c) {
    rep[c] = rep[rep[c]];
    c = rep[c];
  }
  return c;
}

static uint32_t *mverts(const merger *g, uint32_t c) {
  return g->off[c] ? g->pool + g->off[c] - 1u : g->m->pv + g->m->cells[c].first;
}
static int32_t *mnbrs(const merger *g, uint32_t c) {
  return g->off[c] ? g->npool + g->off[c] - 1u : g->m->pn + g->m->cells[c].first;
}

/* Joins cell a with the cell across its edge k when the union is convex: 1,
 * 0 (not joined) or -1 (no memory). */
static int try_merge(merger *g, uint32_t a, uint32_t k) {
  const steer_mesh *m = g->m;
  int32_t qn = mnbrs(g, a)[k];
  if (qn < 0)
    return 0;
  uint32_t b = rep_of(g->rep, (uint32_t)qn);
  uint32_t na = g->cnt[a], nb = g->cnt[b];
  if (b == a || na + nb - 2u > MERGE_MAX)
    return 0;
  const uint32_t *av = mverts(g, a), *bv = mverts(g, b);
  const int32_t *an = mnbrs(g, a), *bn = mnbrs(g, b);
  uint32_t u = av[k], w = av[(k + 1u) % na], j = UINT32_MAX;
  for (uint32_t i = 0; i < nb; i++) {
    int32_t x = bn[i];
    if (x >= 0 && rep_of(g->rep, (uint32_t)x) == a) {
      if (j != UINT32_MAX || bv[i] != w || bv[(i + 1u) % nb] != u)
        return 0; /* more than one shared edge, or not matching: leave them */
      j = i;
    }
  }
  if (j == UINT32_MAX)
    return 0;
  for (uint32_t i = 0; i < na; i++)
    if (i != k && an[i] >= 0 && rep_of(g->rep, (uint32_t)an[i]) == b)
      return 0;
  mpt pu = m->verts[u], pw = m->verts[w];
  if (mesh_orient(m->verts[av[(k + na - 1u) % na]], pu, m->verts[bv[(j + 2u) % nb]]) < 0.0 ||
      mesh_orient(m->verts[bv[(j + nb - 1u) % nb]], pw, m->verts[av[(k + 2u) % na]]) < 0.0)
    return 0;
  uint32_t cnt = na + nb - 2u, at = g->npooled;
  if (!grow(&g->pool, &g->cpool, at + cnt, sizeof *g->pool) ||
      !grow(&g->npool, &g->cnpool, at + cnt, sizeof *g->npool))
    return -1;
  av = mverts(g, a), bv = mverts(g, b), an = mnbrs(g, a), bn = mnbrs(g, b); /* the pools may have moved */
  uint32_t o = at;
  for (uint32_t i = 1; i < na; i++) { /* a from w round to u: its edges k+1 .. k-1 */
    uint32_t e = (k + i) % na;
    g->pool[o] = av[e];
    g->npool[o++] = an[e];
  }
  for (uint32_t i = 1; i < nb; i++) { /* then b from u round to w: its edges j+1 .. j-1 */
    uint32_t e = (j + i) % nb;
    g->pool[o] = bv[e];
    g->npool[o++] = bn[e];
  }
  g->off[a] = at + 1u;
  g->cnt[a] = cnt;
  g->npooled = at + cnt;
  g->cnt[b] = 0;
  g->rep[b] = a;
  return 1;
}

static int merge_cells(steer_mesh *m) {
  uint32_t nc = m->ncells;
  merger g = {m,
              malloc(((size_t)nc + 1u) * sizeof(uint32_t)),
              calloc((size_t)nc + 1u, sizeof(uint32_t)),
              malloc(((size_t)nc + 1u) * sizeof(uint32_t)),
              NULL,
              NULL,
              0,
              0,
              0};
  int ok = g.rep && g.off && g.cnt;
  for (uint32_t c = 0; ok && c < nc; c++) {
    g.rep[c] = c;
    g.cnt[c] = m->cells[c].count;
  }
  for (uint32_t a = 0; ok && a < nc; a++)
    for (uint32_t k = 0; g.rep[a] == a && k < g.cnt[a];) {
      int rc = try_merge(&g, a, k);
      ok = rc >= 0;
      k = rc > 0 ? 0 : k + 1u;
      if (!ok)
        break;
    }
  uint32_t *id = ok ? malloc(((size_t)nc + 1u) * sizeof *id) : NULL;
  uint32_t ne = 0, nn = 0;
  ok = ok && id;
  for (uint32_t c = 0; ok && c < nc; c++) {
    id[c] = g.rep[c] == c && g.cnt[c] ? nn++ : UINT32_MAX;
    if (id[c] != UINT32_MAX)
      ne += g.cnt[c];
  }
  mesh_cell *cells = ok ? malloc(((size_t)nn + 1u) * sizeof *cells) : NULL;
  uint32_t *pv = ok ? malloc(((size_t)ne + 1u) * sizeof *pv) : NULL;
  int32_t *pn = ok ? malloc(((size_t)ne + 1u) * sizeof *pn) : NULL;
  uint16_t *ptw = ok ? malloc(((size_t)ne + 1u) * sizeof *ptw) : NULL;
  ok = ok && cells && pv && pn && ptw;
  uint32_t e = 0;
  for (uint32_t c = 0; ok && c < nc; c++) {
    if (id[c] == UINT32_MAX)
      continue;
    mesh_cell *mc = &cells[id[c]];
    const uint32_t *cv = mverts(&g, c);
    const int32_t *cn = mnbrs(&g, c);
    mc->first = e;
    mc->count = g.cnt[c];
    mc->lox = mc->loy = INFINITY;
    mc->hix = mc->hiy = -INFINITY;
    for (uint32_t k = 0; k < g.cnt[c]; k++) {
      mpt p = m->verts[cv[k]];
      mc->lox = fmin(mc->lox, p.x), mc->hix = fmax(mc->hix, p.x);
      mc->loy = fmin(mc->loy, p.y), mc->hiy = fmax(mc->hiy, p.y);
      pv[e] = cv[k];
      pn[e++] = cn[k] < 0 ? MESH_NONE : (int32_t)id[rep_of(g.rep, (uint32_t)cn[k])];
    }
  }
  if (ok) {
    free(m->cells);
    free(m->pv);
    free(m->pn);
    free(m->ptw);
    m->cells = cells;
    m->pv = pv;
    m->pn = pn;
    m->ptw = ptw;
    m->ncells = nn;
    m->nedges = ne;
  } else {
    free(cells);
    free(pv);
    free(pn);
    free(ptw);
  }
  free(g.rep);
  free(g.off);
  free(g.cnt);
  free(g.pool);
  free(g.npool);
  free(id);
  return ok;
}

/* Connected parts of the free space: a plan between two is no route at once,
 * without a search through all of the start's part. */
static int label_components(steer_mesh *m) {
  m->comp = malloc(((size_t)m->ncells + 1u) * sizeof *m->comp);
  uint32_t *stack = malloc(((size_t)m->ncells + 1u) * sizeof *stack);
  if (!m->comp || !stack) {
    free(stack);
    return 0;
  }
  for (uint32_t c = 0; c < m->ncells; c++)
    m->comp[c] = UINT32_MAX;
  uint32_t next = 0;
  for (uint32_t c = 0; c < m->ncells; c++) {
    if (m->comp[c] != UINT32_MAX)
      continue;
    uint32_t top = 0;
    stack[top++] = c;
    m->comp[c] = next;
    while (top) {
      const mesh_cell *mc = &m->cells[stack[--top]];
      for (uint32_t k = 0; k < mc->count; k++) {
        int32_t q = m->pn[mc->first + k];
        if (q >= 0 && m->comp[q] == UINT32_MAX) {
          m->comp[q] = next;
          stack[top++] = (uint32_t)q;
        }
      }
    }
    next++;
  }
  free(stack);
  return 1;
}

/* ---- the build ----------------------------------------------------------------- */

static void free_builder(builder *b) {
  free(b->e);
  free(b->ov);
  free(b->xs);
  free(b->order);
  free(b->keys);
  free(b->active);
  free(b->key);
  free(b->cur);
  free(b->next);
  free(b->ending);
  free(b->starting);
  free(b->cells);
  free(b->segs);
}

static int sweep_all(steer_mesh *m, const pieces *ps, builder *b) {
  double T = (double)STEER_MESH_TILE;
  uint32_t ntx = (uint32_t)ceil((m->hi.x - m->lo.x) / T), nty = (uint32_t)ceil((m->hi.y - m->lo.y) / T);
  if (ntx == 0)
    ntx = 1;
  if (nty == 0)
    nty = 1;
  size_t nt = (size_t)ntx * nty;
  uint32_t *tstart = calloc(nt + 1u, sizeof *tstart), *titems = NULL;
  tile_sides *ts = calloc(nt, sizeof *ts);
  int ok = tstart && ts;
  for (int pass = 0; ok && pass < 2; pass++) {
    for (uint32_t i = 0; i < ps->n; i++) {
      const piece *pc = &ps->p[i];
      if (pc->hix <= m->lo.x || pc->lox >= m->hi.x || pc->hiy <= m->lo.y || pc->loy >= m->hi.y)
        continue;
      double fx0 = floor((pc->lox - m->lo.x) / T), fx1 = floor((pc->hix - m->lo.x) / T);
      double fy0 = floor((pc->loy - m->lo.y) / T), fy1 = floor((pc->hiy - m->lo.y) / T);
      uint32_t x0 = fx0 < 0 ? 0u : (uint32_t)fx0, x1 = fx1 >= ntx ? ntx - 1u : (uint32_t)fx1;
      uint32_t y0 = fy0 < 0 ? 0u : (uint32_t)fy0, y1 = fy1 >= nty ? nty - 1u : (uint32_t)fy1;
      for (uint32_t y = y0; y <= y1; y++)
        for (uint32_t x = x0; x <= x1; x++) {
          size_t t = (size_t)y * ntx + x;
          if (pass == 0)
            tstart[t + 1u]++;
          else
            titems[tstart[t]++] = i;
        }
    }
    if (pass == 0) {
      for (size_t t = 0; t < nt; t++)
        tstart[t + 1u] += tstart[t];
      titems = malloc(((size_t)tstart[nt] + 1u) * sizeof *titems);
      ok = titems != NULL;
    }
  }
  if (ok) {
    for (size_t t = nt; t > 0; t--)
      tstart[t] = tstart[t - 1u];
    tstart[0] = 0;
  }
  b->ps = ps;
  for (uint32_t y = 0; ok && y < nty; y++)
    for (uint32_t x = 0; ok && x < ntx; x++) {
      size_t t = (size_t)y * ntx + x;
      b->tx0 = m->lo.x + (double)x * T;
      b->tx1 = x + 1u == ntx ? m->hi.x : m->lo.x + (double)(x + 1u) * T;
      b->ty0 = m->lo.y + (double)y * T;
      b->ty1 = y + 1u == nty ? m->hi.y : m->lo.y + (double)(y + 1u) * T;
      ok = sweep_tile(b, titems + tstart[t], tstart[t + 1u] - tstart[t], &ts[t]);
    }
  /* The tiles' borders, the world's edges included (nothing across them). */
  for (uint32_t y = 0; ok && y < nty; y++)
    for (uint32_t x = 0; ok && x < ntx; x++) {
      const tile_sides *a = &ts[(size_t)y * ntx + x];
      if (x == 0)
        stitch(b, NULL, 0, SIDE_RGT, a->s[SIDE_LFT], a->n[SIDE_LFT], SIDE_LFT);
      const tile_sides *r = x + 1u < ntx ? &ts[(size_t)y * ntx + x + 1u] : NULL;
      stitch(b, a->s[SIDE_RGT], a->n[SIDE_RGT], SIDE_RGT, r ? r->s[SIDE_LFT] : NULL, r ? r->n[SIDE_LFT] : 0,
             SIDE_LFT);
      if (y == 0)
        stitch(b, NULL, 0, SIDE_TOP, a->s[SIDE_BOT], a->n[SIDE_BOT], SIDE_BOT);
      const tile_sides *u = y + 1u < nty ? &ts[(size_t)(y + 1u) * ntx + x] : NULL;
      stitch(b, a->s[SIDE_TOP], a->n[SIDE_TOP], SIDE_TOP, u ? u->s[SIDE_BOT] : NULL, u ? u->n[SIDE_BOT] : 0,
             SIDE_BOT);
      ok = !b->fail;
    }
  for (size_t t = 0; ts && t < nt; t++)
    for (int k = 0; k < 4; k++)
      free(ts[t].s[k]);
  free(ts);
  free(tstart);
  free(titems);
  return ok;
}

steer_mesh *steer_mesh_build(const steer_map *map, float r, vec2 lo, vec2 hi) {
  if (!map || !(r >= 0.0f) || !isfinite(r) || !(hi.x > lo.x) || !(hi.y > lo.y) || !isfinite(lo.x) ||
      !isfinite(lo.y) || !isfinite(hi.x) || !isfinite(hi.y))
    return NULL;
  steer_mesh *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->r = r;
  m->R = (double)r + (double)STEER_MAP_SKIN + (double)STEER_MESH_MARGIN;
  m->lo = (mpt){lo.x, lo.y};
  m->hi = (mpt){hi.x, hi.y};
  m->version = steer_map_version(map);
  pieces ps = {0};
  builder b = {0};
  int ok = 1;
  uint32_t n = steer_map_count(map);
  for (uint32_t i = 0; ok && i < n; i++) {
    uint32_t id;
    steer_obstacle_desc o;
    ok = steer_map_get(map, i, &id, &o) == 0 && add_obstacle(&ps, &o, m->R);
  }
  ok = ok && sweep_all(m, &ps, &b) && assemble(m, &b);
  free(ps.pts);
  free(ps.p);
  free(ps.tmp);
  free_builder(&b);
  if (ok) {
    link_twins(m);
    ok = merge_cells(m);
  }
  if (ok) {
    link_twins(m);
    ok = mark_corners(m) && make_buckets(m) && label_components(m);
  }
  if (!ok) {
    steer_mesh_destroy(m);
    return NULL;
  }
  return m;
}

void steer_mesh_destroy(steer_mesh *m) {
  if (!m)
    return;
  mesh_search_free(m->search);
  free(m->verts);
  free(m->corner);
  free(m->cells);
  free(m->pv);
  free(m->pn);
  free(m->ptw);
  free(m->ways);
  free(m->comp);
  free(m->bstart);
  free(m->bitems);
  free(m->lm_d);
  free(m);
}

float steer_mesh_radius(const steer_mesh *m) { return m->r; }
uint32_t steer_mesh_map_version(const steer_mesh *m) { return m->version; }
uint32_t steer_mesh_cell_count(const steer_mesh *m) { return m->ncells; }
uint32_t steer_mesh_vertex_count(const steer_mesh *m) { return m->nverts; }

size_t steer_mesh_memory(const steer_mesh *m) {
  size_t nb = (size_t)m->bcols * m->brows;
  return sizeof *m + (size_t)m->nverts * (sizeof *m->verts + 1u) +
         (size_t)m->ncells * (sizeof *m->cells + 1u + sizeof *m->comp) +
         (size_t)m->nedges * (sizeof *m->pv + sizeof *m->pn + sizeof *m->ptw) +
         (nb + 1u) * sizeof *m->bstart + (size_t)(nb ? m->bstart[nb] : 0u) * sizeof *m->bitems +
         (size_t)m->nverts * m->nlm * sizeof *m->lm_d;
}

uint64_t steer_mesh_hash(const steer_mesh *m) {
  uint64_t h = 0xcbf29ce484222325ULL;
  const uint64_t prime = 0x100000001b3ULL;
  h = (h ^ dbits(m->R)) * prime;
  for (uint32_t v = 0; v < m->nverts; v++)
    h = (((h ^ dbits(m->verts[v].x)) * prime) ^ dbits(m->verts[v].y)) * prime;
  for (uint32_t i = 0; i < m->nedges; i++)
    h = (((h ^ m->pv[i]) * prime) ^ (uint32_t)m->pn[i]) * prime;
  return h;
}

int steer_mesh_free(const steer_mesh *m, vec2 p) { return mesh_locate(m, (mpt){p.x, p.y}) != MESH_NONE; }

int steer_mesh_nearest(const steer_mesh *m, vec2 p, float reach, vec2 *out) {
  if (!isfinite(p.x) || !isfinite(p.y) || !(reach >= 0.0f) || !isfinite(reach))
    return STEER_ENOENT;
  if (steer_mesh_free(m, p)) {
    *out = p;
    return 0;
  }
  mpt q;
  int32_t c;
  if (!mesh_nearest(m, (mpt){p.x, p.y}, (double)reach, &q, &c))
    return STEER_ENOENT;
  *out = v2((float)q.x, (float)q.y);
  return 0;
}

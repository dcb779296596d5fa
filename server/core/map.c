/* map.c: obstacles, their primitives and the cell index; distance, cast and
 * move queries (see map.h).
 *
 * Primitives are numbered: segments 0..nseg-1, then circles with MAP_CIRCLE_BIT
 * set. A cell lists the primitives whose box touches it; a query over a box of
 * cells takes each primitive once, in the first cell of the box that the
 * primitive touches, so results do not depend on how many cells it spans. */
#include "map.h"

#include <stdlib.h>
#include <string.h>

#include "world.h" /* error codes */

#define MAP_CIRCLE_BIT  0x80000000u
#define MAP_SLOT_FREE   UINT32_MAX /* an empty slot of the id table */
#define MAP_CONTACT_EPS 1e-3f      /* m, within r + skin + this a body touches a surface */
#define MAP_LEG_SLACK   5e-4f      /* m, a leg may end this much inside r (float rounding) */
/* Primitives one query considers; more: the body stays (and the point counts
 * as taken). A map at its caps in a 512 m world holds some 250 segments per
 * 8 m cell (the world's default), and the box of a move shorter than a cell
 * touches up to 4 cells: 4 096 keep such maps clear of the fallback, for 16 KB
 * of stack per query. */
#define MAP_MAX_CAND  4096u
#define MAP_MOVE_LEGS 4

typedef struct map_obstacle {
  uint32_t id;
  uint8_t kind;
  uint32_t first, count; /* into pts */
  float radius;
} map_obstacle;

typedef struct map_seg {
  vec2 a, b;
} map_seg;

typedef struct map_circle {
  vec2 c;
  float r;
} map_circle;

typedef struct map_index {
  uint32_t *start; /* cells + 1 */
  uint32_t *items;
  uint32_t nitems, cap;
} map_index;

struct steer_map {
  vec2 min, max;
  float cell, inv_cell;
  uint32_t cols, rows;
  uint32_t version;

  map_obstacle *obs;
  uint32_t nobs, obs_cap;
  vec2 *pts;
  uint32_t npts, pts_cap;

  map_seg *segs;
  uint32_t nseg, seg_cap;
  map_circle *circs;
  uint32_t ncirc, circ_cap;
  uint32_t *prim_c0, *prim_r0; /* first cell column and row of each primitive (segs, then circles) */
  uint32_t prim_cap;
  uint32_t *polys; /* obstacle index of each polygon */
  uint32_t *poly_c0, *poly_r0;
  uint32_t npoly, poly_cap;

  map_index prims, areas;
  uint64_t *occ; /* a bit per cell with primitives, rows of occ_words words: most queries stop here */
  uint8_t *near; /* per cell: 1 when it or one of its 8 neighbours holds a primitive */
  uint32_t occ_words;

  /* Ids to obstacle indexes: open addressing (linear probing, at most half
   * full), each slot an index into obs or MAP_SLOT_FREE, so that finding an
   * id (every add checks that it is unused) costs the same at any map size. */
  uint32_t *slot;
  uint32_t slot_mask; /* slots - 1; 0 before the first add */

  uint32_t seg_total; /* segments of every obstacle (nseg lags it while held) */
  int held;           /* steer_map_hold: adds and removes leave the index to steer_map_release */
};

/* ---- helpers ---------------------------------------------------------------- */

/* libm's fminf/fmaxf are calls (NaN rules); the map's values are finite. */
static inline float minf(float a, float b) { return a < b ? a : b; }
static inline float maxf(float a, float b) { return a > b ? a : b; }

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap)
    return 0;
  uint32_t n = *cap ? *cap : 16;
  while (n < need)
    n *= 2;
  void *q = realloc(*p, (size_t)n * elem);
  if (!q)
    return -1;
  *p = q;
  *cap = n;
  return 0;
}

static vec2 closest_on_seg(vec2 a, vec2 b, vec2 p) {
  vec2 e = v2_sub(b, a);
  float l2 = v2_len2(e);
  float t = l2 > 0.0f ? v2_dot(v2_sub(p, a), e) / l2 : 0.0f;
  t = steer_clampf(t, 0.0f, 1.0f);
  return v2_add(a, v2_scale(e, t));
}

static float dist_point_seg(vec2 p, vec2 a, vec2 b) { return v2_len(v2_sub(p, closest_on_seg(a, b, p))); }

static float orient(vec2 a, vec2 b, vec2 c) { return v2_cross(v2_sub(b, a), v2_sub(c, a)); }

static int on_box(vec2 a, vec2 b, vec2 p) {
  return p.x >= minf(a.x, b.x) && p.x <= maxf(a.x, b.x) && p.y >= minf(a.y, b.y) && p.y <= maxf(a.y, b.y);
}

/* Whether segments ab and cd share a point (touching counts). */
static int segs_meet(vec2 a, vec2 b, vec2 c, vec2 d) {
  float o1 = orient(a, b, c), o2 = orient(a, b, d), o3 = orient(c, d, a), o4 = orient(c, d, b);
  if (((o1 > 0.0f && o2 < 0.0f) || (o1 < 0.0f && o2 > 0.0f)) &&
      ((o3 > 0.0f && o4 < 0.0f) || (o3 < 0.0f && o4 > 0.0f)))
    return 1;
  return (o1 == 0.0f && on_box(a, b, c)) || (o2 == 0.0f && on_box(a, b, d)) ||
         (o3 == 0.0f && on_box(c, d, a)) || (o4 == 0.0f && on_box(c, d, b));
}

static float dist_seg_seg(vec2 p, vec2 q, vec2 a, vec2 b) {
  if (segs_meet(p, q, a, b))
    return 0.0f;
  float d = dist_point_seg(p, a, b);
  d = minf(d, dist_point_seg(q, a, b));
  d = minf(d, dist_point_seg(a, p, q));
  return minf(d, dist_point_seg(b, p, q));
}

static uint32_t col_of(const steer_map *m, float x) {
  float f = (x - m->min.x) * m->inv_cell;
  if (!(f > 0.0f))
    return 0;
  return f >= (float)m->cols ? m->cols - 1 : (uint32_t)f;
}

static uint32_t row_of(const steer_map *m, float y) {
  float f = (y - m->min.y) * m->inv_cell;
  if (!(f > 0.0f))
    return 0;
  return f >= (float)m->rows ? m->rows - 1 : (uint32_t)f;
}

/* ---- the id table ------------------------------------------------------------ */

static uint32_t slot_home(uint32_t id, uint32_t mask) {
  uint32_t h = id * 0x9e3779b1u; /* Fibonacci hashing: ids given in sequence spread out */
  return (h ^ h >> 16) & mask;
}

static void slot_insert(steer_map *m, uint32_t index) {
  uint32_t i = slot_home(m->obs[index].id, m->slot_mask);
  while (m->slot[i] != MAP_SLOT_FREE)
    i = (i + 1u) & m->slot_mask;
  m->slot[i] = index;
}

/* Every obstacle's slot again (after a resize, or when indexes shifted). */
static void slots_fill(steer_map *m) {
  memset(m->slot, 0xff, ((size_t)m->slot_mask + 1u) * sizeof(uint32_t));
  for (uint32_t i = 0; i < m->nobs; i++)
    slot_insert(m, i);
}

/* Room for n obstacles with the table at most half full; 0 or -1 (no memory). */
static int slots_reserve(steer_map *m, uint32_t n) {
  size_t want = m->slot_mask ? (size_t)m->slot_mask + 1u : 32u;
  while (want < 2u * (size_t)n)
    want *= 2u;
  if (m->slot_mask && want == (size_t)m->slot_mask + 1u)
    return 0;
  uint32_t *q = malloc(want * sizeof(uint32_t));
  if (!q)
    return -1;
  free(m->slot);
  m->slot = q;
  m->slot_mask = (uint32_t)(want - 1u);
  slots_fill(m);
  return 0;
}

/* Drops the last obstacle's slot (backward shift: no tombstones, so a
 * search still ends at the first free slot). */
static void slot_drop_last(steer_map *m) {
  uint32_t last = m->nobs - 1u, mask = m->slot_mask;
  uint32_t i = slot_home(m->obs[last].id, mask);
  while (m->slot[i] != last)
    i = (i + 1u) & mask;
  for (uint32_t j = (i + 1u) & mask; m->slot[j] != MAP_SLOT_FREE; j = (j + 1u) & mask) {
    uint32_t home = slot_home(m->obs[m->slot[j]].id, mask);
    /* The entry at j may fill the hole at i unless its home lies in (i, j]. */
    if (((j - home) & mask) >= ((j - i) & mask)) {
      m->slot[i] = m->slot[j];
      i = j;
    }
  }
  m->slot[i] = MAP_SLOT_FREE;
}

/* ---- creation --------------------------------------------------------------- */

steer_map *steer_map_create(vec2 min, vec2 max, float cell) {
  if (!isfinite(min.x) || !isfinite(min.y) || !isfinite(max.x) || !isfinite(max.y) || !(max.x > min.x) ||
      !(max.y > min.y) || !isfinite(cell) || !(cell > 0.0f))
    return NULL;
  steer_map *m = calloc(1, sizeof(*m));
  if (!m)
    return NULL;
  m->min = min;
  m->max = max;
  double w = (double)max.x - min.x, h = (double)max.y - min.y, c = cell;
  while (ceil(w / c) * ceil(h / c) > (double)STEER_MAP_MAX_CELLS)
    c *= 1.5;
  m->cell = (float)c;
  m->inv_cell = 1.0f / m->cell;
  m->cols = (uint32_t)ceil(w / c);
  m->rows = (uint32_t)ceil(h / c);
  if (m->cols == 0)
    m->cols = 1;
  if (m->rows == 0)
    m->rows = 1;
  return m;
}

static void index_free(map_index *x) {
  free(x->start);
  free(x->items);
  memset(x, 0, sizeof(*x));
}

void steer_map_destroy(steer_map *m) {
  if (!m)
    return;
  free(m->obs);
  free(m->slot);
  free(m->pts);
  free(m->segs);
  free(m->circs);
  free(m->prim_c0);
  free(m->prim_r0);
  free(m->polys);
  free(m->poly_c0);
  free(m->poly_r0);
  index_free(&m->prims);
  index_free(&m->areas);
  free(m->occ);
  free(m->near);
  free(m);
}

/* ---- validation ------------------------------------------------------------- */

static int inside_bounds(const steer_map *m, vec2 p) {
  return p.x >= m->min.x && p.x <= m->max.x && p.y >= m->min.y && p.y <= m->max.y;
}

/* Why a polygon is not simple: crossing (or touching) edges first, then no
 * area (collinear points: a figure of eight's halves cancel, but it is told
 * by its crossing), then adjacent edges folding back onto each other. */
static int polygon_fault(const vec2 *p, uint32_t n, steer_map_fault *f) {
  for (uint32_t i = 0; i < n; i++) {
    vec2 a = p[i], b = p[(i + 1) % n];
    for (uint32_t j = i + 1; j < n; j++) {
      if (j == i + 1 || (i == 0 && j == n - 1))
        continue; /* adjacent edges share their vertex */
      if (segs_meet(a, b, p[j], p[(j + 1) % n])) {
        f->at = i;
        f->other = j;
        return f->rule = STEER_MAP_RULE_CROSSING;
      }
    }
  }
  double area = 0.0;
  for (uint32_t i = 0; i < n; i++) {
    vec2 a = p[i], b = p[(i + 1) % n];
    area += (double)a.x * b.y - (double)b.x * a.y;
  }
  if (fabs(area) * 0.5 < 1e-6)
    return f->rule = STEER_MAP_RULE_NO_AREA;
  for (uint32_t i = 0; i < n; i++) {
    vec2 a = p[(i + n - 1) % n], b = p[i], c = p[(i + 1) % n];
    if (orient(a, b, c) == 0.0f && v2_dot(v2_sub(a, b), v2_sub(c, b)) > 0.0f) {
      f->at = i;
      return f->rule = STEER_MAP_RULE_FOLD;
    }
  }
  return STEER_MAP_RULE_OK;
}

int steer_map_shape_fault(const steer_map *m, const steer_obstacle_desc *o, steer_map_fault *f) {
  memset(f, 0, sizeof(*f));
  if (!m || !o || o->kind >= STEER_OBSTACLE_KIND_COUNT || !o->points)
    return f->rule = STEER_MAP_RULE_MALFORMED;
  uint32_t n = o->count;
  uint32_t least = o->kind == STEER_OBSTACLE_CIRCLE ? 1u : o->kind == STEER_OBSTACLE_POLYGON ? 3u : 2u;
  uint32_t most = o->kind == STEER_OBSTACLE_CIRCLE ? 1u : STEER_MAP_MAX_VERTICES;
  if (n < least || n > most)
    return f->rule = STEER_MAP_RULE_MALFORMED;
  if (o->kind == STEER_OBSTACLE_CIRCLE && (!isfinite(o->radius) || !(o->radius >= STEER_MAP_MIN_EXTENT)))
    return f->rule = STEER_MAP_RULE_MALFORMED;
  for (uint32_t i = 0; i < n; i++) {
    f->at = i;
    if (!isfinite(o->points[i].x) || !isfinite(o->points[i].y))
      return f->rule = STEER_MAP_RULE_MALFORMED;
    if (!inside_bounds(m, o->points[i]))
      return f->rule = STEER_MAP_RULE_OUTSIDE;
  }
  f->at = 0;
  if (o->kind == STEER_OBSTACLE_CIRCLE) {
    vec2 c = o->points[0];
    float r = o->radius;
    if (c.x - r < m->min.x || c.x + r > m->max.x || c.y - r < m->min.y || c.y + r > m->max.y)
      return f->rule = STEER_MAP_RULE_REACHES_OUT;
    return STEER_MAP_RULE_OK;
  }
  uint32_t segs = o->kind == STEER_OBSTACLE_POLYGON ? n : n - 1;
  for (uint32_t i = 0; i < segs; i++) {
    if (!(v2_len(v2_sub(o->points[(i + 1) % n], o->points[i])) >= STEER_MAP_MIN_EXTENT)) {
      f->at = (i + 1) % n;
      f->other = i;
      return f->rule = STEER_MAP_RULE_SHORT_EDGE;
    }
  }
  return o->kind == STEER_OBSTACLE_POLYGON ? polygon_fault(o->points, n, f) : STEER_MAP_RULE_OK;
}

int steer_map_check(const steer_map *m, uint32_t id, const steer_obstacle_desc *o) {
  steer_map_fault f;
  if (!m || id == 0 || steer_map_shape_fault(m, o, &f) != STEER_MAP_RULE_OK)
    return STEER_EINVAL;
  if (o->kind != STEER_OBSTACLE_CIRCLE) {
    uint32_t segs = o->kind == STEER_OBSTACLE_POLYGON ? o->count : o->count - 1;
    if (m->seg_total + segs > STEER_MAP_MAX_SEGMENTS)
      return STEER_EFULL;
  }
  if (steer_map_find(m, id) >= 0)
    return STEER_EINVAL;
  if (m->nobs >= STEER_MAP_MAX_OBSTACLES)
    return STEER_EFULL;
  return STEER_OK;
}

/* ---- the index ---------------------------------------------------------------- */

static void prim_box(const steer_map *m, uint32_t prim, vec2 *lo, vec2 *hi) {
  if (prim & MAP_CIRCLE_BIT) {
    const map_circle *c = &m->circs[prim & ~MAP_CIRCLE_BIT];
    *lo = v2(c->c.x - c->r, c->c.y - c->r);
    *hi = v2(c->c.x + c->r, c->c.y + c->r);
  } else {
    const map_seg *s = &m->segs[prim];
    *lo = v2(minf(s->a.x, s->b.x), minf(s->a.y, s->b.y));
    *hi = v2(maxf(s->a.x, s->b.x), maxf(s->a.y, s->b.y));
  }
}

static void poly_box(const steer_map *m, uint32_t poly, vec2 *lo, vec2 *hi) {
  const map_obstacle *o = &m->obs[m->polys[poly]];
  const vec2 *p = m->pts + o->first;
  *lo = *hi = p[0];
  for (uint32_t i = 1; i < o->count; i++) {
    lo->x = minf(lo->x, p[i].x);
    lo->y = minf(lo->y, p[i].y);
    hi->x = maxf(hi->x, p[i].x);
    hi->y = maxf(hi->y, p[i].y);
  }
}

typedef void (*box_fn)(const steer_map *, uint32_t, vec2 *, vec2 *);

/* Counting sort of n items (ids from id_of) into the cells their boxes touch. */
static int index_build(steer_map *m, map_index *x, uint32_t n, uint32_t (*id_of)(const steer_map *, uint32_t),
                       box_fn box, uint32_t *c0, uint32_t *r0) {
  uint32_t cells = m->cols * m->rows;
  if (!x->start) {
    x->start = calloc((size_t)cells + 1, sizeof(uint32_t));
    if (!x->start)
      return -1;
  } else {
    memset(x->start, 0, ((size_t)cells + 1) * sizeof(uint32_t));
  }
  uint64_t total = 0;
  for (uint32_t i = 0; i < n; i++) {
    vec2 lo, hi;
    box(m, id_of(m, i), &lo, &hi);
    uint32_t a = col_of(m, lo.x), b = col_of(m, hi.x), c = row_of(m, lo.y), d = row_of(m, hi.y);
    c0[i] = a;
    r0[i] = c;
    for (uint32_t r = c; r <= d; r++)
      for (uint32_t k = a; k <= b; k++)
        x->start[r * m->cols + k + 1]++;
    total += (uint64_t)(b - a + 1) * (d - c + 1);
  }
  if (total > UINT32_MAX / 2 || grow((void **)&x->items, &x->cap, (uint32_t)total, sizeof(uint32_t)) != 0)
    return -1;
  for (uint32_t c = 0; c < cells; c++)
    x->start[c + 1] += x->start[c];
  /* Fill using start[c] as a cursor, then shift back. */
  for (uint32_t i = 0; i < n; i++) {
    uint32_t id = id_of(m, i);
    vec2 lo, hi;
    box(m, id, &lo, &hi);
    uint32_t a = col_of(m, lo.x), b = col_of(m, hi.x), c = row_of(m, lo.y), d = row_of(m, hi.y);
    for (uint32_t r = c; r <= d; r++)
      for (uint32_t k = a; k <= b; k++)
        x->items[x->start[r * m->cols + k]++] = id;
  }
  for (uint32_t c = cells; c > 0; c--)
    x->start[c] = x->start[c - 1];
  x->start[0] = 0;
  x->nitems = (uint32_t)total;
  return 0;
}

static uint32_t prim_id(const steer_map *m, uint32_t i) {
  return i < m->nseg ? i : (i - m->nseg) | MAP_CIRCLE_BIT;
}
static uint32_t poly_id(const steer_map *m, uint32_t i) {
  (void)m;
  return i;
}

/* Segments an obstacle adds: a polygon's edges close it, a wall's do not. */
static uint32_t obstacle_segments(const map_obstacle *o) {
  if (o->kind == STEER_OBSTACLE_CIRCLE)
    return 0;
  return o->kind == STEER_OBSTACLE_POLYGON ? o->count : o->count - 1;
}

/* Rebuilds primitives and both indexes from the obstacle list. */
static int rebuild(steer_map *m) {
  uint32_t nseg = 0, ncirc = 0, npoly = 0;
  for (uint32_t i = 0; i < m->nobs; i++) {
    const map_obstacle *o = &m->obs[i];
    ncirc += o->kind == STEER_OBSTACLE_CIRCLE;
    nseg += obstacle_segments(o);
    npoly += o->kind == STEER_OBSTACLE_POLYGON;
  }
  if (grow((void **)&m->segs, &m->seg_cap, nseg, sizeof(map_seg)) ||
      grow((void **)&m->circs, &m->circ_cap, ncirc, sizeof(map_circle)))
    return -1;
  uint32_t pc = m->prim_cap;
  if (grow((void **)&m->prim_c0, &pc, nseg + ncirc, sizeof(uint32_t)))
    return -1;
  pc = m->prim_cap;
  if (grow((void **)&m->prim_r0, &pc, nseg + ncirc, sizeof(uint32_t)))
    return -1;
  m->prim_cap = pc;
  uint32_t qc = m->poly_cap;
  if (grow((void **)&m->polys, &qc, npoly, sizeof(uint32_t)))
    return -1;
  qc = m->poly_cap;
  if (grow((void **)&m->poly_c0, &qc, npoly, sizeof(uint32_t)))
    return -1;
  qc = m->poly_cap;
  if (grow((void **)&m->poly_r0, &qc, npoly, sizeof(uint32_t)))
    return -1;
  m->poly_cap = qc;
  m->nseg = m->ncirc = m->npoly = 0;
  for (uint32_t i = 0; i < m->nobs; i++) {
    const map_obstacle *o = &m->obs[i];
    const vec2 *p = m->pts + o->first;
    if (o->kind == STEER_OBSTACLE_CIRCLE) {
      m->circs[m->ncirc].c = p[0];
      m->circs[m->ncirc++].r = o->radius;
      continue;
    }
    for (uint32_t k = 0, segs = obstacle_segments(o); k < segs; k++) {
      m->segs[m->nseg].a = p[k];
      m->segs[m->nseg++].b = p[(k + 1) % o->count];
    }
    if (o->kind == STEER_OBSTACLE_POLYGON)
      m->polys[m->npoly++] = i;
  }
  if (index_build(m, &m->prims, m->nseg + m->ncirc, prim_id, prim_box, m->prim_c0, m->prim_r0) ||
      index_build(m, &m->areas, m->npoly, poly_id, poly_box, m->poly_c0, m->poly_r0))
    return -1;
  if (!m->occ) {
    m->occ_words = (m->cols + 63u) / 64u;
    m->occ = calloc((size_t)m->occ_words * m->rows, sizeof(uint64_t));
    m->near = calloc((size_t)m->cols * m->rows, 1);
    if (!m->occ || !m->near)
      return -1;
  }
  memset(m->occ, 0, (size_t)m->occ_words * m->rows * sizeof(uint64_t));
  memset(m->near, 0, (size_t)m->cols * m->rows);
  for (uint32_t r = 0; r < m->rows; r++)
    for (uint32_t c = 0; c < m->cols; c++)
      if (m->prims.start[r * m->cols + c + 1] > m->prims.start[r * m->cols + c]) {
        m->occ[(size_t)r * m->occ_words + c / 64u] |= 1ull << (c % 64u);
        for (uint32_t y = r > 0 ? r - 1 : 0; y <= r + 1 && y < m->rows; y++)
          for (uint32_t x = c > 0 ? c - 1 : 0; x <= c + 1 && x < m->cols; x++)
            m->near[(size_t)y * m->cols + x] = 1;
      }
  return 0;
}

/* Whether the box [lo, hi] may hold geometry: a box no wider than a cell
 * around its centre lies in the centre cell's 3 x 3 block, which near
 * summarises in one byte. */
static inline int box_may_hit(const steer_map *m, vec2 lo, vec2 hi) {
  if (m->nobs == 0)
    return 0;
  if (hi.x - lo.x > 2.0f * m->cell || hi.y - lo.y > 2.0f * m->cell)
    return 1;
  return m->near[(size_t)row_of(m, 0.5f * (lo.y + hi.y)) * m->cols + col_of(m, 0.5f * (lo.x + hi.x))];
}

/* Whether any cell of row r in columns a..b holds a primitive. */
static int row_occupied(const steer_map *m, uint32_t r, uint32_t a, uint32_t b) {
  const uint64_t *row = m->occ + (size_t)r * m->occ_words;
  for (uint32_t wd = a / 64u; wd <= b / 64u; wd++) {
    uint64_t bits = row[wd];
    if (wd == a / 64u)
      bits &= ~0ull << (a % 64u);
    if (wd == b / 64u && b % 64u != 63u)
      bits &= (1ull << (b % 64u + 1u)) - 1u;
    if (bits)
      return 1;
  }
  return 0;
}

int steer_map_add(steer_map *m, uint32_t id, const steer_obstacle_desc *o) {
  int rc = steer_map_check(m, id, o);
  if (rc != STEER_OK)
    return rc;
  if (grow((void **)&m->obs, &m->obs_cap, m->nobs + 1, sizeof(map_obstacle)) ||
      grow((void **)&m->pts, &m->pts_cap, m->npts + o->count, sizeof(vec2)) || slots_reserve(m, m->nobs + 1))
    return STEER_ENOMEM;
  map_obstacle *e = &m->obs[m->nobs];
  e->id = id;
  e->kind = o->kind;
  e->first = m->npts;
  e->count = o->count;
  e->radius = o->kind == STEER_OBSTACLE_CIRCLE ? o->radius : 0.0f;
  memcpy(m->pts + m->npts, o->points, o->count * sizeof(vec2));
  slot_insert(m, m->nobs);
  m->nobs++;
  m->npts += o->count;
  m->seg_total += obstacle_segments(e);
  if (!m->held && rebuild(m) != 0) {
    slot_drop_last(m);
    m->nobs--;
    m->npts -= o->count;
    m->seg_total -= obstacle_segments(e);
    rebuild(m); /* shrinking needs no memory */
    return STEER_ENOMEM;
  }
  m->version++;
  return STEER_OK;
}

int steer_map_remove(steer_map *m, uint32_t id) {
  int32_t i = steer_map_find(m, id);
  if (i < 0)
    return STEER_ENOENT;
  map_obstacle o = m->obs[i];
  int last = (uint32_t)i == m->nobs - 1u;
  if (last)
    slot_drop_last(m); /* the common undo of an add: no index moves */
  m->seg_total -= obstacle_segments(&o);
  memmove(m->pts + o.first, m->pts + o.first + o.count, (m->npts - o.first - o.count) * sizeof(vec2));
  m->npts -= o.count;
  memmove(m->obs + i, m->obs + i + 1, (m->nobs - (uint32_t)i - 1) * sizeof(map_obstacle));
  m->nobs--;
  for (uint32_t k = (uint32_t)i; k < m->nobs; k++)
    m->obs[k].first -= o.count;
  if (!last)
    slots_fill(m); /* the indexes after i moved down: as costly as the moves above */
  if (!m->held)
    rebuild(m); /* fewer primitives: no allocation can fail */
  m->version++;
  return STEER_OK;
}

void steer_map_clear(steer_map *m) {
  if (m->nobs == 0)
    return;
  m->nobs = m->npts = m->seg_total = 0;
  slots_fill(m);
  if (!m->held)
    rebuild(m);
  m->version++;
}

void steer_map_hold(steer_map *m) { m->held = 1; }

int steer_map_release(steer_map *m) {
  m->held = 0;
  return rebuild(m) == 0 ? STEER_OK : STEER_ENOMEM;
}

uint32_t steer_map_count(const steer_map *m) { return m->nobs; }
void steer_map_bounds(const steer_map *m, vec2 *min, vec2 *max) {
  *min = m->min;
  *max = m->max;
}
uint32_t steer_map_segment_count(const steer_map *m) { return m->nseg; }
uint32_t steer_map_version(const steer_map *m) { return m->version; }
void steer_map_set_version(steer_map *m, uint32_t version) { m->version = version; }

int steer_map_get(const steer_map *m, uint32_t i, uint32_t *id, steer_obstacle_desc *out) {
  if (i >= m->nobs)
    return STEER_ENOENT;
  const map_obstacle *o = &m->obs[i];
  if (id)
    *id = o->id;
  out->kind = o->kind;
  out->count = o->count;
  out->points = m->pts + o->first;
  out->radius = o->radius;
  return STEER_OK;
}

int32_t steer_map_find(const steer_map *m, uint32_t id) {
  if (m->nobs == 0)
    return -1;
  for (uint32_t i = slot_home(id, m->slot_mask);; i = (i + 1u) & m->slot_mask) {
    uint32_t k = m->slot[i];
    if (k == MAP_SLOT_FREE)
      return -1;
    if (m->obs[k].id == id)
      return (int32_t)k;
  }
}

/* ---- queries ------------------------------------------------------------------ */

/* Primitives whose boxes touch [lo, hi], each once; -1 when more than cap. */
static int gather(const steer_map *m, vec2 lo, vec2 hi, uint32_t *out, uint32_t cap) {
  if (m->nobs == 0 || m->nseg + m->ncirc == 0 || !box_may_hit(m, lo, hi))
    return 0;
  uint32_t a = col_of(m, lo.x), b = col_of(m, hi.x), c = row_of(m, lo.y), d = row_of(m, hi.y);
  uint32_t n = 0;
  for (uint32_t r = c; r <= d; r++) {
    if (!row_occupied(m, r, a, b))
      continue;
    for (uint32_t k = a; k <= b; k++) {
      uint32_t cell = r * m->cols + k;
      for (uint32_t i = m->prims.start[cell]; i < m->prims.start[cell + 1]; i++) {
        uint32_t id = m->prims.items[i];
        uint32_t slot = id & MAP_CIRCLE_BIT ? m->nseg + (id & ~MAP_CIRCLE_BIT) : id;
        uint32_t pc = m->prim_c0[slot], pr = m->prim_r0[slot];
        /* Once: in the first cell of the box the primitive touches. */
        if ((pc > a ? pc : a) != k || (pr > c ? pr : c) != r)
          continue;
        if (n >= cap)
          return -1;
        out[n++] = id;
      }
    }
  }
  return (int)n;
}

static int point_in_polygon(const steer_map *m, uint32_t poly, vec2 p) {
  const map_obstacle *o = &m->obs[m->polys[poly]];
  const vec2 *v = m->pts + o->first;
  int in = 0;
  for (uint32_t i = 0, j = o->count - 1; i < o->count; j = i++) {
    if ((v[i].y > p.y) != (v[j].y > p.y)) {
      float x = v[j].x + (p.y - v[j].y) * (v[i].x - v[j].x) / (v[i].y - v[j].y);
      if (p.x < x)
        in = !in;
    }
  }
  return in;
}

/* The polygon containing p, or -1. */
static int32_t polygon_at(const steer_map *m, vec2 p) {
  if (m->npoly == 0)
    return -1;
  uint32_t cell = row_of(m, p.y) * m->cols + col_of(m, p.x);
  for (uint32_t i = m->areas.start[cell]; i < m->areas.start[cell + 1]; i++)
    if (point_in_polygon(m, m->areas.items[i], p))
      return (int32_t)m->areas.items[i];
  return -1;
}

int steer_map_inside(const steer_map *m, vec2 p) {
  if (m->nobs == 0)
    return 0;
  if (polygon_at(m, p) >= 0)
    return 1;
  uint32_t cand[MAP_MAX_CAND];
  int n = gather(m, p, p, cand, MAP_MAX_CAND);
  for (int i = 0; i < n; i++)
    if (cand[i] & MAP_CIRCLE_BIT) {
      const map_circle *c = &m->circs[cand[i] & ~MAP_CIRCLE_BIT];
      if (v2_len(v2_sub(p, c->c)) < c->r)
        return 1;
    }
  return n < 0;
}

/* Distance from p to primitive id, and the unit normal from it toward p. */
static float prim_dist(const steer_map *m, uint32_t id, vec2 p, vec2 *normal) {
  vec2 q, fallback;
  float extra = 0.0f;
  if (id & MAP_CIRCLE_BIT) {
    const map_circle *c = &m->circs[id & ~MAP_CIRCLE_BIT];
    q = c->c;
    extra = c->r;
    fallback = v2(1.0f, 0.0f);
  } else {
    const map_seg *s = &m->segs[id];
    q = closest_on_seg(s->a, s->b, p);
    vec2 e = v2_norm(v2_sub(s->b, s->a));
    fallback = v2(-e.y, e.x);
  }
  vec2 d = v2_sub(p, q);
  float l = v2_len(d);
  if (normal)
    *normal = l > 0.0f ? v2_scale(d, 1.0f / l) : fallback;
  return l - extra;
}

float steer_map_distance(const steer_map *m, vec2 p, float reach) {
  uint32_t cand[MAP_MAX_CAND];
  int n = gather(m, v2(p.x - reach, p.y - reach), v2(p.x + reach, p.y + reach), cand, MAP_MAX_CAND);
  float best = reach;
  if (n < 0)
    return 0.0f;
  for (int i = 0; i < n; i++)
    best = minf(best, prim_dist(m, cand[i], p, NULL));
  return best;
}

int steer_map_free(const steer_map *m, vec2 p, float r, float slack) {
  if (m->nobs == 0)
    return 1;
  if (polygon_at(m, p) >= 0)
    return 0;
  uint32_t cand[MAP_MAX_CAND];
  float reach = r + STEER_MAP_SKIN;
  int n = gather(m, v2(p.x - reach, p.y - reach), v2(p.x + reach, p.y + reach), cand, MAP_MAX_CAND);
  if (n < 0)
    return 0;
  for (int i = 0; i < n; i++)
    if (prim_dist(m, cand[i], p, NULL) < r - slack)
      return 0;
  return 1;
}

/* Pushes p out of the first thing a body of radius r overlaps; 0 when free. */
static int push_out(const steer_map *m, vec2 *p, float r) {
  float reach = r + 2.0f * STEER_MAP_SKIN; /* past r + skin, so the result counts as free */
  int32_t poly = polygon_at(m, *p);
  if (poly >= 0) {
    const map_obstacle *o = &m->obs[m->polys[poly]];
    const vec2 *v = m->pts + o->first;
    vec2 best = v[0];
    float bd = INFINITY;
    for (uint32_t i = 0; i < o->count; i++) {
      vec2 q = closest_on_seg(v[i], v[(i + 1) % o->count], *p);
      float d = v2_len(v2_sub(q, *p));
      if (d < bd) {
        bd = d;
        best = q;
      }
    }
    vec2 out = v2_norm(v2_sub(best, *p));
    if (bd == 0.0f) {
      /* On the edge: step outward past it, then retry. */
      out = v2(1.0f, 0.0f);
    }
    *p = v2_add(best, v2_scale(out, reach));
    return 1;
  }
  uint32_t cand[MAP_MAX_CAND];
  int n = gather(m, v2(p->x - reach, p->y - reach), v2(p->x + reach, p->y + reach), cand, MAP_MAX_CAND);
  for (int i = 0; i < n; i++) {
    vec2 nn;
    float d = prim_dist(m, cand[i], *p, &nn);
    if (d < reach) {
      *p = v2_add(*p, v2_scale(nn, reach - d));
      return 1;
    }
  }
  return n < 0;
}

static int in_box(vec2 p, vec2 lo, vec2 hi) {
  return p.x >= lo.x && p.x <= hi.x && p.y >= lo.y && p.y <= hi.y;
}

int steer_map_nearest_free(const steer_map *m, vec2 p, float r, float max_search, vec2 lo, vec2 hi,
                           vec2 *out) {
  if (steer_map_free(m, p, r, 0.0f) && in_box(p, lo, hi)) {
    *out = p;
    return STEER_OK;
  }
  float full = r + STEER_MAP_SKIN;
  vec2 q = p;
  for (int it = 0; it < 16; it++) {
    if (!push_out(m, &q, r))
      break;
    q = v2(steer_clampf(q.x, lo.x, hi.x), steer_clampf(q.y, lo.y, hi.y));
  }
  if (v2_len(v2_sub(q, p)) <= max_search && steer_map_free(m, q, full, 0.0f)) {
    *out = q;
    return STEER_OK;
  }
  float step = r > 0.25f ? r : 0.25f;
  for (uint32_t k = 1; (float)k * step <= max_search; k++) {
    uint32_t samples = 8u * k < 256u ? 8u * k : 256u;
    for (uint32_t i = 0; i < samples; i++) {
      float s, c;
      steer_sincos(STEER_TWO_PI * (float)i / (float)samples, &s, &c);
      vec2 t = v2(p.x + c * step * (float)k, p.y + s * step * (float)k);
      if (in_box(t, lo, hi) && steer_map_free(m, t, full, 0.0f)) {
        *out = t;
        return STEER_OK;
      }
    }
  }
  return STEER_ENOENT;
}

/* Time t in [0, 1] at which p + d t first comes within R of c (p outside), or
 * INFINITY. */
static float ray_circle(vec2 p, vec2 d, vec2 c, float R) {
  vec2 f = v2_sub(p, c);
  float A = v2_dot(d, d), B = v2_dot(f, d), C = v2_dot(f, f) - R * R;
  if (!(A > 0.0f) || B >= 0.0f || C <= 0.0f)
    return INFINITY;
  float disc = B * B - A * C;
  if (disc < 0.0f)
    return INFINITY;
  float t = C / (-B + sqrtf(disc));
  return t <= 1.0f ? t : INFINITY;
}

/* First contact of a disc R moving p -> p + d with primitive id. */
static float cast_prim(const steer_map *m, uint32_t id, vec2 p, vec2 d, float R, vec2 *n) {
  vec2 nn;
  float dist = prim_dist(m, id, p, &nn);
  if (dist < R + MAP_CONTACT_EPS) {
    /* Touching: moving into it is a contact now; moving away never meets it
     * (distance along a line to a convex shape has no second minimum). */
    if (v2_dot(d, nn) < 0.0f) {
      *n = nn;
      return 0.0f;
    }
    return INFINITY;
  }
  if (id & MAP_CIRCLE_BIT) {
    const map_circle *c = &m->circs[id & ~MAP_CIRCLE_BIT];
    float t = ray_circle(p, d, c->c, c->r + R);
    if (t < INFINITY)
      *n = v2_norm(v2_sub(v2_add(p, v2_scale(d, t)), c->c));
    return t;
  }
  const map_seg *s = &m->segs[id];
  float best = INFINITY;
  vec2 e = v2_sub(s->b, s->a);
  float len = v2_len(e);
  vec2 u = v2_scale(e, 1.0f / len);
  vec2 side = v2(-u.y, u.x);
  float s0 = v2_dot(v2_sub(p, s->a), side);
  if (s0 < 0.0f) {
    side = v2_scale(side, -1.0f);
    s0 = -s0;
  }
  float dn = v2_dot(d, side);
  if (dn < 0.0f && s0 >= R) {
    float t = (s0 - R) / -dn;
    if (t <= 1.0f) {
      float along = v2_dot(v2_sub(v2_add(p, v2_scale(d, t)), s->a), u);
      if (along >= 0.0f && along <= len) {
        best = t;
        *n = side;
      }
    }
  }
  float ta = ray_circle(p, d, s->a, R), tb = ray_circle(p, d, s->b, R);
  if (ta < best) {
    best = ta;
    *n = v2_norm(v2_sub(v2_add(p, v2_scale(d, ta)), s->a));
  }
  if (tb < best) {
    best = tb;
    *n = v2_norm(v2_sub(v2_add(p, v2_scale(d, tb)), s->b));
  }
  return best;
}

static int cast_list(const steer_map *m, const uint32_t *cand, int nc, vec2 p, vec2 d, float R, float *t,
                     vec2 *n) {
  float best = INFINITY;
  vec2 bn = v2(0.0f, 0.0f);
  /* The swept box, widened by the contact distance: primitives whose boxes
   * miss it cannot be met. */
  float reach = R + 2.0f * MAP_CONTACT_EPS;
  vec2 q = v2_add(p, d);
  vec2 lo = v2(minf(p.x, q.x) - reach, minf(p.y, q.y) - reach),
       hi = v2(maxf(p.x, q.x) + reach, maxf(p.y, q.y) + reach);
  for (int i = 0; i < nc; i++) {
    vec2 blo, bhi;
    prim_box(m, cand[i], &blo, &bhi);
    if (blo.x > hi.x || bhi.x < lo.x || blo.y > hi.y || bhi.y < lo.y)
      continue;
    vec2 nn = v2(0.0f, 0.0f); /* set by cast_prim whenever it returns a hit (gcc -O3 cannot tell) */
    float ti = cast_prim(m, cand[i], p, d, R, &nn);
    if (ti < best) {
      best = ti;
      bn = nn;
    }
  }
  if (best == INFINITY)
    return 0;
  *t = best;
  *n = bn;
  return 1;
}

int steer_map_cast(const steer_map *m, vec2 p, vec2 d, float r, float *t, vec2 *n) {
  if (m->nobs == 0)
    return 0;
  uint32_t cand[MAP_MAX_CAND];
  float reach = r + STEER_MAP_SKIN + MAP_CONTACT_EPS;
  vec2 q = v2_add(p, d);
  int nc = gather(m, v2(minf(p.x, q.x) - reach, minf(p.y, q.y) - reach),
                  v2(maxf(p.x, q.x) + reach, maxf(p.y, q.y) + reach), cand, MAP_MAX_CAND);
  if (nc < 0) {
    *t = 0.0f;
    *n = v2_scale(v2_norm(d), -1.0f);
    return 1;
  }
  return cast_list(m, cand, nc, p, d, r + STEER_MAP_SKIN, t, n);
}

/* Whether the disc r swept from a to b keeps r - slack from every candidate. */
static int leg_ok(const steer_map *m, const uint32_t *cand, int nc, vec2 a, vec2 b, float r) {
  float need = r - MAP_LEG_SLACK;
  float reach = r + MAP_CONTACT_EPS;
  vec2 lo = v2(minf(a.x, b.x) - reach, minf(a.y, b.y) - reach),
       hi = v2(maxf(a.x, b.x) + reach, maxf(a.y, b.y) + reach);
  for (int i = 0; i < nc; i++) {
    uint32_t id = cand[i];
    vec2 blo, bhi;
    prim_box(m, id, &blo, &bhi);
    if (blo.x > hi.x || bhi.x < lo.x || blo.y > hi.y || bhi.y < lo.y)
      continue; /* farther than r from the leg's box */
    float d;
    if (id & MAP_CIRCLE_BIT) {
      const map_circle *c = &m->circs[id & ~MAP_CIRCLE_BIT];
      d = dist_point_seg(c->c, a, b) - c->r;
    } else {
      d = dist_seg_seg(a, b, m->segs[id].a, m->segs[id].b);
    }
    if (d < need || d <= 0.0f) /* 0: the leg crosses it (matters for radius 0) */
      return 0;
  }
  return 1;
}

int steer_map_move(const steer_map *m, vec2 p0, vec2 *p1, float r, vec2 *v, vec2 lo, vec2 hi) {
  if (m->nobs == 0)
    return 0;
  vec2 rem = v2_sub(*p1, p0);
  float reach = v2_len(rem) + r + STEER_MAP_SKIN + MAP_CONTACT_EPS;
  uint32_t cand[MAP_MAX_CAND];
  int nc = gather(m, v2(p0.x - reach, p0.y - reach), v2(p0.x + reach, p0.y + reach), cand, MAP_MAX_CAND);
  if (nc == 0)
    return 0;
  if (nc < 0) { /* a crowd of geometry beyond the cap: stay (always free) */
    *p1 = p0;
    if (v)
      *v = v2(0.0f, 0.0f);
    return 1;
  }
  const float R = r + STEER_MAP_SKIN;
  vec2 cur = p0;
  int contacts = 0;
  for (int leg = 0; leg < MAP_MOVE_LEGS && v2_len2(rem) > 1e-14f; leg++) {
    float t = 1.0f;
    vec2 n = v2(0.0f, 0.0f);
    int hit = cast_list(m, cand, nc, cur, rem, R, &t, &n);
    vec2 next = v2_add(cur, v2_scale(rem, t));
    next = v2(steer_clampf(next.x, lo.x, hi.x), steer_clampf(next.y, lo.y, hi.y));
    if (!leg_ok(m, cand, nc, cur, next, r)) {
      contacts++;
      if (v)
        *v = v2(0.0f, 0.0f);
      break;
    }
    cur = next;
    if (!hit)
      break;
    contacts++;
    rem = v2_scale(rem, 1.0f - t);
    float rn = v2_dot(rem, n);
    if (rn < 0.0f)
      rem = v2_sub(rem, v2_scale(n, rn));
    if (v) {
      float vn = v2_dot(*v, n);
      if (vn < 0.0f)
        *v = v2_sub(*v, v2_scale(n, vn));
    }
  }
  *p1 = cur;
  return contacts;
}

/* ---- hashing ------------------------------------------------------------------ */

static uint64_t mix32(uint64_t h, uint32_t x) { return (h ^ x) * 0x100000001b3ULL; }
static uint64_t mixf(uint64_t h, float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return mix32(h, u);
}

uint64_t steer_map_hash(const steer_map *m, uint64_t h) {
  h = mix32(h, m->nobs);
  for (uint32_t i = 0; i < m->nobs; i++) {
    const map_obstacle *o = &m->obs[i];
    h = mix32(h, o->id);
    h = mix32(h, (uint32_t)o->kind | o->count << 8);
    h = mixf(h, o->radius);
    for (uint32_t k = 0; k < o->count; k++) {
      h = mixf(h, m->pts[o->first + k].x);
      h = mixf(h, m->pts[o->first + k].y);
    }
  }
  return h;
}

/* nav.c: the search side of the planner's graph: A* from a start to a goal
 * over the visibility graph (the start linked block by block to the corners
 * it sees, the goal tried from every expanded corner, taut successors only),
 * string pulling, and the
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
  if (n->mesh)
    return steer_mesh_hash(n->mesh);
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
    uint32_t r0 = cell_of(minf(va, vb) - e, vlo, n->inv_cell, nv),
             r1 = cell_of(maxf(va, vb) + e, vlo, n->inv_cell, nv);
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

/* ---- A* ------------------------------------------------------------------------
 *
 * What a plan cost on the map of 100 rooms (perf, bench_nav 1000) before this
 * search: ~370 expansions relaxing ~16 600 edges, and the start linked to
 * half the graph: a pass over every corner, a heap of ~3 000 links, ~530 of
 * them popped and ~510 of those found out of sight, each then scanning its
 * neighbours. Now:
 *
 * - The start's links in blocks: one heap entry per block of ~NAV_BLOCK_NODES
 *   corners stands for its links, keyed by a lower bound of their f (the
 *   distances from the start to the block's box and from the box to the
 *   goal); a block is opened only when its key comes up (the route's ellipse),
 *   skipped whole when a wall that stopped a link already hides its box, and
 *   its corners tangent to the start are checked in sight then, so a corner
 *   the start does not see never enters the heap.
 * - Taut successors: a shortest route bends only round an obstacle, toward
 *   it. So a corner u reached from p passes on only to the neighbours v for
 *   which p -> u -> v turns toward u's anchor (the corner's vertex, a circle's
 *   centre, a wall's end). A node's edges are kept sorted by direction (16-bit
 *   pseudo-angles beside 8-byte arcs: neighbour and length, made on the
 *   node's first expansion), so the allowed half-turn is one contiguous run
 *   found by a binary search and a pruned edge costs nothing at all:
 *   ~16 600 relaxations become ~6 300. In
 *   exact geometry this loses nothing; on the graph, whose corners are
 *   circumscribed, a route may turn away from u's obstacle where another
 *   obstacle's inflated edge clips the straight way (its own corners sit a
 *   few cm further out), and the pruned search then passes that corner
 *   instead: longer by about that offset (~1 cm; at most 0.1 % of a route in
 *   test_nav's comparisons, over routes of 10-90 m). The search runs again
 *   without pruning before it reports no route.
 * - Per-node state in two parts: the stamp and g (8 bytes, 8 nodes a cache
 *   line), all a relaxation reads when v is closed or the way in is no
 *   better (~70 % of them), and the position, h and parent (16 bytes) for
 *   the rest; prefetched a few arcs ahead, and the heap top's arcs (the
 *   likely next expansion) while the current one ends.
 * - An indexed 4-ary heap: an open node's better way in moves its entry up,
 *   so the heap holds only the open nodes and the unopened blocks (~1 700
 *   pushes a plan had left ~1 200 stale entries behind).
 *
 * Where a plan's time goes now (perf, bench_nav 1000, 368 expansions): the
 * relaxations, ~40 % (mostly cache misses on the arcs and the records), the
 * sight checks of the start's and the goal's links ~38 % (~680 a plan, ~90 %
 * settled by the few walls that stopped lately, ~67 walks), the heap ~10 %.
 * Fewer expansions need a heuristic that knows the walls, see below.
 *
 * Evaluated and not taken (git history of BENCHMARKS.md): landmarks (ALT). On the map of 100
 * rooms 8 landmarks cut expansions only 368 -> 306 (216 if the goal's
 * landmark distances were exact, 152 with 32 landmarks; a perfect heuristic
 * expands 21): with doors in every wall many routes are nearly as short as the
 * best, and a landmark bound is tight only along its own shortest paths. They
 * would cost 8 Dijkstras (~8 ms) after every map change and 1.6 MB. Nor
 * (2026-11-26, measured; git history of BENCHMARKS.md): a landmark per cell of the block
 * grid, the goal's cell's and its 8 neighbours' used (expansions 368 -> 242,
 * but 9 table reads per touched node and the goal's sight checks of its
 * cell's corners ate the gain: +5 % once every table was made, 2.5x slower
 * while they are made, a Dijkstra each); a table per goal cell of the
 * distance to the cell through the corners not hidden from it by one wall
 * (no gain: a wall piece of a room hides a 60 m cell from almost no corner,
 * 367 expansions); per-block culling of the goal's links by the walls that
 * stopped them (no measurable gain: the recent walls settle them already);
 * the goal's walls in the heuristic (the way round the ends of each of the
 * ~8 walls round the goal that hides it: 368 -> 334 expansions, slower by
 * the crossing tests per touched node).
 *
 * The tables (positions, anchors, edge directions, blocks) are a function of
 * the graph and its map alone, made again by the first plan after a build or
 * an update (those only mark them stale), so a route never depends on when
 * they were made. The heuristic is the straight line. */

#define NAV_BLOCK_NODES 24u /* mean corners per block of start links */
#define NAV_TAUT_MARGIN 40u /* pseudo-angle units (1/65536 turn, ~0.2 degrees at most) */

struct nav_arc {
  uint32_t v;
  float len; /* m */
};

struct heap_item {
  float f; /* m, key */
  uint32_t node;
};

typedef struct nav_search nav_search;

/* A node's search state, in two parts: what every relaxation reads (8
 * bytes: 8 nodes a cache line; ~70 % of the relaxations stop there, at a
 * closed node or a way in no better), and what only a taken one does. */
typedef struct nav_hot {
  uint32_t mark; /* plan generation * 4 + NAV_TOUCHED / NAV_OPEN / NAV_CLOSED */
  float g;       /* m, best known from the start */
} nav_hot;

typedef struct nav_state {
  vec2 p;  /* where the node is */
  float h; /* m, to the goal (straight line) */
  uint32_t parent;
} nav_state;

enum { NAV_TOUCHED = 0, NAV_OPEN = 1, NAV_CLOSED = 2 };

struct nav_search {
  uint32_t valid; /* the tables are of the graph (made by the first plan) */
  uint32_t gen;   /* plan generation, < 2^30 */
  uint32_t side;  /* cells of the block grid per side */
  nav_hot *hot;   /* nnodes + 2 (start, goal) */
  nav_state *st;  /* nnodes + 2 */
  vec2 *anchor;   /* nnodes: the obstacle point the node turns round */
  /* Per node, its edges sorted by direction (in place of adj's order, same
   * ranges): arc (the neighbour and the length) and dir (its direction,
   * pseudo-angle in 1/65536 turns); made on the node's first expansion. */
  struct nav_arc *arc;
  uint16_t *dir;
  uint8_t *dir_ok; /* nnodes: the node's arcs made */
  /* Blocks of nodes: the non-empty cells of the side x side grid over the
   * bounds; block b's nodes are bnodes[bfirst[b] .. bfirst[b + 1]). */
  uint32_t nblocks;
  uint32_t *bfirst; /* side * side + 1 */
  uint32_t *bnodes; /* nnodes */
  vec2 *bbox;       /* 2 per block: lo, hi of its nodes */
  struct heap_item *heap;
  uint32_t heap_cap;
  uint32_t *hpos;  /* nnodes + 2 + blocks: where an open node's (or a block's) entry is in heap */
  uint32_t *route; /* nnodes + 2: the reversed node list of a route */
  size_t bytes;
};

static uint32_t search_side(uint32_t nnodes) {
  uint32_t side = (uint32_t)lrintf(sqrtf((float)nnodes / (float)NAV_BLOCK_NODES));
  return side < 1u ? 1u : (side > 256u ? 256u : side);
}

/* ---- the search's memory ------------------------------------------------------------
 * Allocated with the graph (nav_make), sized by its nodes and edges; the
 * tables are filled by the first plan (search_refresh). */

int nav_search_alloc(steer_nav *t) {
  nav_search *s = calloc(1, sizeof *s);
  if (!s)
    return STEER_ENOMEM;
  t->search = s;
  const uint32_t N = t->nnodes;
  s->side = search_side(N);
  const size_t cells = (size_t)s->side * s->side;
  /* Pushes: one per improving relaxation (each directed edge once), the
   * start's and the goal's links, one per block. */
  /* Entries: one per open node (an improvement moves it), one per block. */
  s->heap_cap = N + 2u + (uint32_t)cells + 1u;
  s->st = calloc((size_t)N + 2u, sizeof *s->st);
  s->hot = calloc((size_t)N + 2u, sizeof *s->hot);
  s->anchor = malloc(((size_t)N + 1u) * sizeof *s->anchor);
  s->dir = malloc(((size_t)t->nadj + 1u) * sizeof *s->dir);
  s->arc = malloc(((size_t)t->nadj + 1u) * sizeof *s->arc);
  s->dir_ok = malloc((size_t)N + 1u);
  s->bfirst = malloc((cells + 1u) * sizeof *s->bfirst);
  s->bnodes = malloc(((size_t)N + 1u) * sizeof *s->bnodes);
  s->bbox = malloc((2u * cells) * sizeof *s->bbox);
  s->heap = malloc((size_t)s->heap_cap * sizeof *s->heap);
  s->hpos = malloc((size_t)s->heap_cap * sizeof *s->hpos);
  s->route = malloc(((size_t)N + 2u) * sizeof *s->route);
  if (!s->st || !s->hot || !s->anchor || !s->dir || !s->arc || !s->dir_ok || !s->bfirst || !s->bnodes ||
      !s->bbox || !s->heap || !s->hpos || !s->route)
    return STEER_ENOMEM;
  s->bytes = sizeof *s + ((size_t)N + 2u) * (sizeof(nav_state) + sizeof(nav_hot) + sizeof(uint32_t)) +
             (size_t)N * (sizeof(vec2) + sizeof(uint32_t) + 1u) +
             (size_t)t->nadj * (sizeof(uint16_t) + sizeof(struct nav_arc)) + (cells + 1u) * sizeof(uint32_t) +
             2u * cells * sizeof(vec2) + (size_t)s->heap_cap * (sizeof(struct heap_item) + sizeof(uint32_t));
  return 0;
}

void nav_search_free(steer_nav *n) {
  nav_search *s = n->search;
  if (!s)
    return;
  free(s->st);
  free(s->hot);
  free(s->anchor);
  free(s->dir);
  free(s->arc);
  free(s->dir_ok);
  free(s->bfirst);
  free(s->bnodes);
  free(s->bbox);
  free(s->heap);
  free(s->hpos);
  free(s->route);
  free(s);
  n->search = NULL;
}

size_t nav_search_memory(const steer_nav *n) { return n->search ? n->search->bytes : 0u; }

static int heap_less(const struct heap_item *x, const struct heap_item *y) {
  return x->f < y->f || (x->f == y->f && x->node < y->node);
}

/* A 4-ary heap: half the depth of a binary one, and a node's children share
 * a cache line. Indexed (pos: where each entry's node sits), so an open
 * node's better way in moves its entry up instead of adding another: the
 * heap holds the open nodes and the unopened blocks, nothing stale. The
 * order (f, then node) is total, so the pops are the same as with lazy
 * deletion. */
#define NAV_HEAP_K 4u

static inline void heap_up(struct heap_item *heap, uint32_t *pos, uint32_t i, struct heap_item x) {
  while (i > 0) {
    uint32_t p = (i - 1) / NAV_HEAP_K;
    if (!heap_less(&x, &heap[p]))
      break;
    heap[i] = heap[p];
    pos[heap[i].node] = i;
    i = p;
  }
  heap[i] = x;
  pos[x.node] = i;
}

static void heap_down(struct heap_item *heap, uint32_t *pos, uint32_t size, uint32_t i, struct heap_item x) {
  for (;;) {
    uint32_t c = NAV_HEAP_K * i + 1, end = c + NAV_HEAP_K, s = NAV_NONE;
    if (end > size)
      end = size;
    const struct heap_item *best = &x;
    for (; c < end; c++)
      if (heap_less(&heap[c], best)) {
        best = &heap[c];
        s = c;
      }
    if (s == NAV_NONE)
      break;
    heap[i] = heap[s];
    pos[heap[i].node] = i;
    i = s;
  }
  heap[i] = x;
  pos[x.node] = i;
}

static struct heap_item heap_pop(struct heap_item *heap, uint32_t *pos, uint32_t *size) {
  struct heap_item top = heap[0];
  if (--(*size) > 0)
    heap_down(heap, pos, *size, 0, heap[*size]);
  return top;
}

/* The point of obstacle o a node at p turns round: a circle's centre, else
 * the vertex nearest p (the node sits r + skin + margin off its corner). */
static vec2 anchor_of(const steer_obstacle_desc *o, vec2 p) {
  if (o->kind == STEER_OBSTACLE_CIRCLE)
    return o->points[0];
  vec2 best = o->points[0];
  float bd = v2_len2(v2_sub(best, p));
  for (uint32_t i = 1; i < o->count; i++) {
    float d = v2_len2(v2_sub(o->points[i], p));
    if (d < bd) {
      bd = d;
      best = o->points[i];
    }
  }
  return best;
}

/* Direction of d as a pseudo-angle (monotone in the angle, exact at the
 * quarter turns, so opposite directions differ by exactly half the circle),
 * in 1/16384 of a quarter turn: 0..65535 for a full turn. */
static uint16_t pseudo_angle(vec2 d) {
  float ax = fabsf(d.x), ay = fabsf(d.y), t = ax + ay > 0.0f ? ay / (ax + ay) : 0.0f; /* 0..1 in a quarter */
  float q = d.x >= 0.0f ? (d.y >= 0.0f ? t : 4.0f - t) : (d.y >= 0.0f ? 2.0f - t : 2.0f + t);
  return (uint16_t)((uint32_t)lrintf(q * 16384.0f) & 0xffffu);
}

/* Fills the tables for the graph (of map m): positions, anchors, edge
 * directions, blocks. A function of the graph and the map alone. */
static void search_refresh(steer_nav *n, const steer_map *m) {
  nav_search *s = n->search;
  const uint32_t N = n->nnodes, side = s->side, cells = side * side;
  const float bw = (n->hi.x - n->lo.x) / (float)side, bh = (n->hi.y - n->lo.y) / (float)side;
  s->gen = 0;
  for (uint32_t v = 0; v < N + 2u; v++) {
    s->st[v] = (nav_state){v < N ? n->nodes[v].p : v2(0.0f, 0.0f), 0.0f, 0u};
    s->hot[v] = (nav_hot){0u, 0.0f};
  }
  memset(s->dir_ok, 0, (size_t)N); /* directions: filled as nodes are first expanded */
  /* Anchors: every group is an obstacle of the map, in map order (found by
   * id should the order differ). */
  for (uint32_t gi = 0; gi < n->ngroups; gi++) {
    const nav_group *g = &n->groups[gi];
    steer_obstacle_desc o;
    uint32_t id = 0;
    int ok = steer_map_get(m, gi, &id, &o) == 0 && id == g->id;
    if (!ok) {
      int32_t at = steer_map_find(m, g->id);
      ok = at >= 0 && steer_map_get(m, (uint32_t)at, &id, &o) == 0;
    }
    for (uint32_t k = g->first; k < g->first + g->count; k++) {
      const uint32_t v = n->cand_live[k];
      if (v != NAV_NONE)
        s->anchor[v] = ok ? anchor_of(&o, s->st[v].p) : s->st[v].p; /* no anchor: never pruned */
    }
  }
  /* Nodes by cell (counting sort, node order within a cell; the cell kept in
   * mark meanwhile), then the non-empty cells compacted into blocks. */
  memset(s->bfirst, 0, ((size_t)cells + 1u) * sizeof *s->bfirst);
  for (uint32_t v = 0; v < N; v++) {
    vec2 p = s->st[v].p;
    float fx = (p.x - n->lo.x) / bw, fy = (p.y - n->lo.y) / bh;
    uint32_t x = fx > 0.0f ? (fx < (float)side ? (uint32_t)fx : side - 1u) : 0u;
    uint32_t y = fy > 0.0f ? (fy < (float)side ? (uint32_t)fy : side - 1u) : 0u;
    s->hot[v].mark = y * side + x;
    s->bfirst[s->hot[v].mark + 1]++;
  }
  for (uint32_t c = 0; c < cells; c++)
    s->bfirst[c + 1] += s->bfirst[c];
  for (uint32_t v = 0; v < N; v++)
    s->bnodes[s->bfirst[s->hot[v].mark]++] = v; /* advances each start to the next cell's */
  for (uint32_t c = cells; c > 0; c--)
    s->bfirst[c] = s->bfirst[c - 1];
  s->bfirst[0] = 0;
  uint32_t nb = 0;
  for (uint32_t c = 0; c < cells; c++) /* in place: writes stay at or before c */
    if (s->bfirst[c + 1] > s->bfirst[c])
      s->bfirst[nb++] = s->bfirst[c];
  s->bfirst[nb] = N;
  s->nblocks = nb;
  for (uint32_t b = 0; b < nb; b++) {
    vec2 lo = v2(INFINITY, INFINITY), hi = v2(-INFINITY, -INFINITY);
    for (uint32_t i = s->bfirst[b]; i < s->bfirst[b + 1]; i++) {
      vec2 p = s->st[s->bnodes[i]].p;
      lo = v2(minf(lo.x, p.x), minf(lo.y, p.y));
      hi = v2(maxf(hi.x, p.x), maxf(hi.y, p.y));
    }
    s->bbox[2 * b] = lo;
    s->bbox[2 * b + 1] = hi;
  }
  for (uint32_t v = 0; v < N; v++)
    s->hot[v].mark = 0;
  s->valid = 1;
}

/* Whether one of the segments that stopped p's links lately hides the whole
 * box [lo, hi] from p (the shadow of a segment is convex: it holds the box
 * when it holds its four corners). Nothing in it is in p's sight then. */
static int box_hidden(const steer_nav *n, const nav_recent *recent, vec2 p, vec2 lo, vec2 hi) {
  const vec2 c[4] = {lo, v2(hi.x, lo.y), hi, v2(lo.x, hi.y)};
  for (uint32_t i = 0; i < recent->n; i++) {
    const nav_prim *w = &n->prims[recent->k[i]];
    if (w->rad == 0.0f && seg_cross(p, c[0], w->a, w->b) && seg_cross(p, c[1], w->a, w->b) &&
        seg_cross(p, c[2], w->a, w->b) && seg_cross(p, c[3], w->a, w->b))
      return 1;
  }
  return 0;
}

static float box_dist(vec2 lo, vec2 hi, vec2 p) {
  float dx = maxf(maxf(lo.x - p.x, p.x - hi.x), 0.0f), dy = maxf(maxf(lo.y - p.y, p.y - hi.y), 0.0f);
  return sqrtf(dx * dx + dy * dy);
}

/* Node v's state for plan generation gen (touched now if not yet: the
 * goal's distance filled in). */
static inline nav_hot *touch(nav_search *s, uint32_t v, uint32_t gen, vec2 to) {
  nav_hot *y = &s->hot[v];
  if ((y->mark >> 2) != gen) {
    y->mark = gen << 2 | NAV_TOUCHED;
    s->st[v].h = v2_len(v2_sub(to, s->st[v].p));
  }
  return y;
}

/* Offers v the way in through parent at g: taken and queued if it improves. */
static inline void offer(nav_search *s, uint32_t *hs, uint32_t v, uint32_t parent, float g, uint32_t gen,
                         vec2 to) {
  nav_hot *y = &s->hot[v];
  uint32_t k = NAV_TOUCHED;
  if ((y->mark >> 2) == gen) {
    k = y->mark & 3u;
    if (k == NAV_CLOSED || (k == NAV_OPEN && g >= y->g))
      return; /* read the hot part alone */
  } else {
    s->st[v].h = v2_len(v2_sub(to, s->st[v].p));
  }
  nav_state *x = &s->st[v];
  y->g = g;
  x->parent = parent;
  const struct heap_item it = {g + x->h, v};
  if (k == NAV_OPEN) { /* in the heap: moves up */
    heap_up(s->heap, s->hpos, s->hpos[v], it);
    return;
  }
  y->mark = gen << 2 | NAV_OPEN;
  heap_up(s->heap, s->hpos, (*hs)++, it);
}

/* Makes node u's arcs: its edges sorted by direction (then neighbour). A
 * function of the graph alone. */
static void sort_arcs(const steer_nav *n, nav_search *s, uint32_t u) {
  const uint32_t k0 = n->start[u], k1 = n->start[u + 1];
  const vec2 pu = s->st[u].p;
  for (uint32_t k = k0; k < k1; k++) { /* insertion sort: a few tens of edges */
    const struct nav_arc x = {n->adj[k], n->adj_len[k]};
    const uint16_t d = pseudo_angle(v2_sub(s->st[x.v].p, pu));
    uint32_t j = k;
    while (j > k0 && (s->dir[j - 1] > d || (s->dir[j - 1] == d && s->arc[j - 1].v > x.v))) {
      s->dir[j] = s->dir[j - 1];
      s->arc[j] = s->arc[j - 1];
      j--;
    }
    s->dir[j] = d;
    s->arc[j] = x;
  }
  s->dir_ok[u] = 1;
}

/* One A* run (see above); 1 when the goal was reached (its parents lead
 * back to the start). */
static int search_run(steer_nav *n, nav_search *s, vec2 from, vec2 to, int taut, nav_recent *near_from,
                      nav_recent *near_to, uint32_t *expanded) {
  const uint32_t S = n->nnodes, G = n->nnodes + 1, B = n->nnodes + 2;
  if (++s->gen >= (1u << 30)) { /* stamps wrapped: start over */
    for (uint32_t v = 0; v < S + 2u; v++)
      s->hot[v].mark = 0;
    s->gen = 1;
  }
  const uint32_t gen = s->gen;
  s->st[S].p = from;
  s->st[G].p = to;
  struct heap_item *heap = s->heap;
  uint32_t hs = 0;
  nav_hot *ys = touch(s, S, gen, to);
  ys->mark = gen << 2 | NAV_CLOSED;
  ys->g = 0.0f;
  s->st[S].parent = S;
  touch(s, G, gen, to);
  s->st[G].h = 0.0f;
  (*expanded)++;
  /* The start's links: one entry per block, opened when its key comes up. */
  for (uint32_t b = 0; b < s->nblocks; b++) {
    const vec2 lo = s->bbox[2 * b], hi = s->bbox[2 * b + 1];
    heap[hs++] = (struct heap_item){box_dist(lo, hi, from) + box_dist(lo, hi, to) - 1e-3f, B + b};
  }
  for (uint32_t i = hs / NAV_HEAP_K + 1u; i-- > 0;)
    if (i < hs)
      heap_down(heap, s->hpos, hs, i, heap[i]);
  while (hs > 0) {
    const struct heap_item it = heap_pop(heap, s->hpos, &hs);
    const uint32_t u = it.node;
    if (u >= B) {
      /* A block of start links: every corner tangent to the start and in
       * its sight (walls that stopped lately tried first: most fail at
       * once). Checked here rather than when each comes up: a corner the
       * start does not see never enters the heap. */
      if (box_hidden(n, near_from, from, s->bbox[2 * (u - B)], s->bbox[2 * (u - B) + 1]))
        continue; /* wholly behind a wall that stopped a link already */
      for (uint32_t i = s->bfirst[u - B]; i < s->bfirst[u - B + 1]; i++) {
        const uint32_t v = s->bnodes[i];
        if (tangent(&n->nodes[v], from) && nav_vis_pair(n, from, s->st[v].p, near_from))
          offer(s, &hs, v, S, v2_len(v2_sub(s->st[v].p, from)), gen, to);
      }
      continue;
    }
    nav_state *xu = &s->st[u];
    s->hot[u].mark = gen << 2 | NAV_CLOSED;
    if (u == G)
      return 1;
    (*expanded)++;
    const float gu = s->hot[u].g;
    const vec2 pu = xu->p;
    /* Taut: the turn at u must go toward its anchor, so v must lie on the
     * anchor's side of the way in (its direction within half a turn of the
     * way in's, counter-clockwise when the anchor is on the left). Tested on
     * the edges' stored directions, with a margin of NAV_TAUT_MARGIN (about
     * 0.2 degrees) for the directions' rounding: nearly straight on or back
     * is never pruned. No pruning when the way in points at the anchor. */
    const vec2 din = v2_sub(pu, s->st[xu->parent].p);
    const vec2 da = v2_sub(s->anchor[u], pu);
    const float side = v2_cross(din, da);
    int prune = taut && side * side > 1e-4f * v2_len2(din) * v2_len2(da);
    const uint16_t base = (uint16_t)(pseudo_angle(din) + (side > 0.0f ? 0u : 32768u));
    const uint32_t k0 = n->start[u], deg = n->start[u + 1] - k0;
    if (!s->dir_ok[u]) /* once per graph: the same values whenever made */
      sort_arcs(n, s, u);
    /* Counter-clockwise from the way in (anchor left), or from its reverse
     * (anchor right): (0, 32768) from base is the allowed half, with the
     * margin on both sides: the arcs from the first at or after base -
     * margin, in direction order, while within the window. The others turn
     * away from the obstacle: never shortest. */
    uint32_t first = 0, count = deg;
    const uint16_t a = (uint16_t)(base - NAV_TAUT_MARGIN);
    if (prune) {
      uint32_t lo = 0, hi = deg; /* the first dir >= a (deg: none, so the first of all) */
      while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2u;
        if (s->dir[k0 + mid] < a)
          lo = mid + 1u;
        else
          hi = mid;
      }
      first = lo == deg ? 0u : lo;
    }
    const struct nav_arc *arc = s->arc + k0;
    const uint16_t *dir = s->dir + k0;
    for (uint32_t t = 0, i = first; t < count; t++, i = i + 1u == deg ? 0u : i + 1u) {
      if (prune && (uint16_t)(dir[i] - a) > 32768u + 2u * NAV_TAUT_MARGIN)
        break;
      const uint32_t ahead = i + 4u < deg ? i + 4u : i + 4u - deg;
      if (t + 4u < count)
        __builtin_prefetch(&s->hot[arc[ahead].v]);
      offer(s, &hs, arc[i].v, u, gu + arc[i].len, gen, to);
    }
    if (hs > 0 && heap[0].node < S && s->dir_ok[heap[0].node]) { /* most likely the next expanded */
      const uint32_t nx = n->start[heap[0].node];
      __builtin_prefetch(&s->dir[nx]);
      __builtin_prefetch(&s->arc[nx]);
      __builtin_prefetch(&s->arc[nx] + 8);
    }
    if ((s->hot[G].mark & 3u) != NAV_CLOSED && tangent(&n->nodes[u], to) && nav_vis_pair(n, pu, to, near_to))
      offer(s, &hs, G, u, gu + v2_len(v2_sub(to, pu)), gen, to);
  }
  return 0;
}

static vec2 node_pos(const steer_nav *n, uint32_t i, vec2 from, vec2 to) {
  return i < n->nnodes ? n->nodes[i].p : (i == n->nnodes ? from : to);
}

/* On the mesh: a goal the body fits at but within the mesh's margin of the
 * geometry is reached from the nearest point of the mesh (a step of mm). */
steer_mesh *steer_nav_mesh(steer_nav *n) { return n ? n->mesh : NULL; }

int steer_nav_mesh_goal(const steer_nav *n, const steer_map *m, vec2 to, vec2 *goal) {
  /* How far the mesh's grown shapes reach past r + skin: the margin, and at a
   * corner the octagon's vertices, R / cos(22.5 deg) from the geometry. */
  float R = n->r + STEER_MAP_SKIN + STEER_MESH_MARGIN;
  float reach = R * 0.0824f + STEER_MESH_MARGIN + STEER_MAP_SKIN;
  if (steer_mesh_nearest(n->mesh, to, reach, goal) != 0)
    return STEER_EBLOCKED;
  /* The step to `to` keeps r - skin from the geometry: `to` itself is only
   * known to keep r (a goal is free when nothing is closer than r, rounding
   * included), and the map's cast asks r + skin of the radius it is given. */
  float rr = n->r > 2.0f * STEER_MAP_SKIN ? n->r - 2.0f * STEER_MAP_SKIN : 0.0f;
  if ((goal->x != to.x || goal->y != to.y) && !steer_nav_clear(m, *goal, to, rr))
    return STEER_EBLOCKED;
  return 0;
}

static int mesh_plan(steer_nav *n, const steer_map *m, vec2 from, vec2 to, vec2 *out, uint32_t cap,
                     steer_nav_result *res) {
  vec2 goal;
  if (steer_nav_mesh_goal(n, m, to, &goal) != 0)
    return STEER_EBLOCKED;
  int extra = goal.x != to.x || goal.y != to.y;
  int rc = steer_mesh_plan(n->mesh, from, goal, out, extra ? cap - 1u : cap, res);
  if (rc == 0 && extra) {
    out[res->count++] = to;
    res->length += v2_len(v2_sub(to, goal));
  } else if (rc == STEER_EFULL && extra) {
    res->count++;
  }
  return rc;
}

static int nav_plan(steer_nav *n, const steer_map *m, vec2 from, vec2 to, vec2 *out, uint32_t cap,
                    steer_nav_result *res, int taut) {
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
  if (n->mesh)
    return mesh_plan(n, m, from, to, out, cap, res);
  nav_recent near_from = {{0}, 0}, near_to = {{0}, 0}; /* what stops the start's and the goal's links */
  if (nav_vis_pair(n, from, to, &near_from)) {
    out[0] = to;
    res->count = 1;
    res->length = v2_len(v2_sub(to, from));
    return 0;
  }
  nav_search *s = n->search;
  if (!s->valid)
    search_refresh(n, m);
  int found = search_run(n, s, from, to, taut, &near_from, &near_to, &res->expanded);
  if (!found && taut)
    found = search_run(n, s, from, to, 0, &near_from, &near_to, &res->expanded);
  if (!found)
    return STEER_ENOENT;
  /* The route back from the goal, then string pulling: a corner is dropped
   * whenever the body sees past it (A* over tangent corners is already taut
   * in exact geometry; this removes the slack of approximated corners). */
  const uint32_t S = n->nnodes, G = n->nnodes + 1;
  uint32_t len = 0;
  for (uint32_t v = G; v != S; v = s->st[v].parent)
    s->route[len++] = v;
  uint32_t w = 0;
  vec2 cur = from;
  uint32_t i = len; /* route[len-1] is the first point after from */
  while (i > 0) {
    uint32_t j = i - 1; /* furthest visible among the next points */
    while (j > 0 && nav_vis_pair(n, cur, node_pos(n, s->route[j - 1], from, to), NULL))
      j--;
    vec2 p = node_pos(n, s->route[j], from, to);
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

int steer_nav_plan(steer_nav *n, const steer_map *m, vec2 from, vec2 to, vec2 *out, uint32_t cap,
                   steer_nav_result *res) {
  return nav_plan(n, m, from, to, out, cap, res, 1);
}

int steer_nav_plan_plain(steer_nav *n, const steer_map *m, vec2 from, vec2 to, vec2 *out, uint32_t cap,
                         steer_nav_result *res) {
  return nav_plan(n, m, from, to, out, cap, res, 0);
}

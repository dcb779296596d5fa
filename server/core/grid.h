/* grid.h: a uniform grid over the world bounds, rebuilt from positions each tick.
 *
 * A counting sort puts every agent's dense index into its cell; positions are
 * copied in cell order so a neighbour scan reads contiguous memory. Used for
 * separation now and interest management later. Internal to the core. */
#ifndef STEER_GRID_H
#define STEER_GRID_H

#include <stdint.h>

#include "vec2.h"

typedef struct steer_grid {
  vec2 min;       /* m, world corner */
  float cell;     /* m, cell side */
  float inv_cell; /* 1/m */
  uint32_t cols, rows;
  uint32_t capacity;    /* agents */
  uint32_t count;       /* agents in the last build */
  uint32_t *cell_start; /* cols*rows + 1 offsets into items */
  uint32_t *items;      /* dense indices, in cell order */
  uint32_t *item_pos;   /* per dense index: its position in cell order (its cell during the build) */
  float *sx, *sy;       /* positions in cell order */
  /* What neighbour steering reads, in cell order too (steer_grid_build_payload),
   * so a query's results are read from the memory it has just scanned. */
  float *svx, *svy;  /* m/s, velocities */
  float *sr;         /* m, body radii */
  uint16_t *skey;    /* caller's per-agent tag */
} steer_grid;

#define STEER_GRID_MAX_CELLS (1u << 22)
#define STEER_GRID_FAST_K    16u

/* Sizes the grid for the bounds; the cell grows when the bounds would need more
 * than STEER_GRID_MAX_CELLS cells. Returns 0 or STEER_ENOMEM / STEER_EINVAL. */
int steer_grid_init(steer_grid *g, vec2 min, vec2 max, float cell, uint32_t capacity);
void steer_grid_free(steer_grid *g);

void steer_grid_build(steer_grid *g, const float *px, const float *py, uint32_t count);
/* The same, also copying radii (r may be NULL) and velocities and a tag per
 * agent (vx NULL: neither) into cell order. */
void steer_grid_build_payload(steer_grid *g, const float *px, const float *py, const float *vx, const float *vy,
                              const float *r, const uint16_t *key, uint32_t count);

/* Up to max nearest agents strictly within radius of p, nearest first, excluding
 * dense index `exclude` (UINT32_MAX for none). Equal squared distances are
 * ordered by position in cell order (rows by y, then columns by x, then dense
 * index within a cell), so the result is deterministic and does not depend on
 * the order cells are scanned in. out_d2 (may be NULL) gets squared distances.
 * There is no cap on max other than the agent count: out (and out_d2) must hold
 * max entries. For max <= STEER_GRID_FAST_K the query runs a branch-free path
 * (SSE2 where available) with the same results. */
uint32_t steer_grid_nearest(const steer_grid *g, vec2 p, float radius, uint32_t exclude, uint32_t *out,
                            float *out_d2, uint32_t max);

/* Dense indices of the points strictly within radius of p, in cell order (not
 * sorted by distance: cheaper than steer_grid_nearest when the order does not
 * matter), at most max; returns the number written. */
uint32_t steer_grid_within(const steer_grid *g, vec2 p, float radius, uint32_t *out, uint32_t max);

/* The same query with a guess: *hint (> 0) is a squared distance expected to
 * hold max candidates, e.g. the last tick's max-th distance widened by how far
 * agents can have moved since. The query first admits only candidates within
 * it; if it finds max there they are the answer (nothing outside is nearer),
 * else it scans the whole radius. The result never depends on the guess, only
 * the time does. On return *hint holds the max-th squared distance found, or 0
 * when fewer than max were found. hint may be NULL. */
uint32_t steer_grid_nearest_hint(const steer_grid *g, vec2 p, float radius, uint32_t exclude, uint32_t *out,
                                 float *out_d2, uint32_t max, float *hint);

/* steer_grid_nearest_hint giving positions in cell order (index sx, sy, the
 * payload, items) instead of dense indices. */
uint32_t steer_grid_nearest_pos(const steer_grid *g, vec2 p, float radius, uint32_t exclude, uint32_t *out_pos,
                                uint32_t max, float *hint);

#endif /* STEER_GRID_H */

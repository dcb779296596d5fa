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
  float *svx, *svy; /* m/s, velocities */
  float *sr;        /* m, body radii */
  uint16_t *skey;   /* caller's per-agent tag */
  uint8_t radii;    /* sr was filled by the last build */
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
void steer_grid_build_payload(steer_grid *g, const float *px, const float *py, const float *vx,
                              const float *vy, const float *r, const uint16_t *key, uint32_t count);

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

/* The AVX2 path of the guessed-bound query (nearest_box): whether the
 * processor has it (AVX2, BMI2, POPCNT), whether it is in use (by default
 * where supported), and a switch for tests and benchmarks (returns the
 * previous setting; on is ignored where unsupported). Both paths give the
 * same results. Not to be switched while queries run. */
int steer_grid_avx2_supported(void);
int steer_grid_avx2(void);
int steer_grid_set_avx2(int on);

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
uint32_t steer_grid_nearest_pos(const steer_grid *g, vec2 p, float radius, uint32_t exclude,
                                uint32_t *out_pos, uint32_t max, float *hint);

/* ---- kept candidate lists (Verlet lists) ----------------------------------
 *
 * An exact k-nearest query that re-ranks last time's candidates instead of
 * scanning the grid. When an agent's list is built (one query for its
 * STEER_GRID_LIST nearest within 1.25 radius), every agent left out was at
 * least `reach` away from the query point. Until the next build, no agent's
 * grid position moves more than `moved` (the sum over grid builds of the
 * largest step of any agent) and the query point moves `own`, so an agent left
 * out is still at least reach - own - moved away; when that is beyond this
 * tick's k-th candidate (or beyond the radius when fewer than k are inside),
 * nobody left out can be among the k nearest, and re-ranking the candidates by
 * (d2, cell position) gives exactly the query's result. Otherwise the list is
 * built again. A change of the agent set (steer_grid_lists_track's restart)
 * drops every list. The result never differs from steer_grid_nearest_pos. */
#define STEER_GRID_LIST       16u /* candidates kept per agent */
#define STEER_GRID_LIST_MAX_K 12u /* larger k: the plain query */

typedef struct steer_grid_list {
  uint32_t item[STEER_GRID_LIST]; /* dense indices, in last query's rank order */
  double limit;                   /* m, reach + the lists' `moved` when built, less a margin: everyone left
                                     out is at least limit - moved - own away, own the query point's move */
  float bx, by;                   /* m, the query point when built */
  float reach;                    /* m, lower bound on the distance then of everyone left out */
  uint32_t stamp;                 /* valid while == the lists' epoch */
  uint32_t born, retry;           /* round built; no build before round `retry` */
  uint8_t n;
} steer_grid_list;

/* Per agent, in dense order, what the grid holds for it since its last build:
 * one 16-byte load gives a candidate's position, cell position and radius. */
typedef struct steer_grid_rec {
  float x, y;   /* m, = sx, sy at pos */
  uint32_t pos; /* its position in cell order */
  float r;      /* m, = sr at pos */
} steer_grid_rec;

typedef struct steer_grid_lists {
  uint32_t capacity;
  uint32_t epoch;      /* >= 1 */
  uint32_t round;      /* grid builds tracked */
  double moved;        /* m, bound on any agent's grid movement, summed over builds */
  uint8_t primed;      /* rec holds the last build's positions of the same agents */
  uint8_t stepping;    /* the round being tracked measures the step (track_begin) */
  int step_bad;        /* this round: a step with no bound (NaN, overflow) */
  uint32_t step_bits;  /* this round: the largest step squared so far, as a float's bits */
  steer_grid_rec *rec; /* per agent */
  steer_grid_list *e;
} steer_grid_lists;

int steer_grid_lists_init(steer_grid_lists *L, uint32_t capacity);
void steer_grid_lists_free(steer_grid_lists *L);
/* After each build of g, with the positions (and radii, or NULL) it was built
 * on. restart: the agents or their dense indices changed since the last build
 * (spawn, despawn, load): every list is dropped. */
void steer_grid_lists_track(steer_grid_lists *L, const steer_grid *g, const float *px, const float *py,
                            const float *r, uint32_t count, int restart);
/* The same in three parts, so that several threads can write the records:
 * begin (one thread), then range for [begin, end) of the agents, from any
 * threads, every agent in exactly one range (ranges may run at the same
 * time), then end (one thread, after every range). The same result whatever
 * the split. */
void steer_grid_lists_track_begin(steer_grid_lists *L, int restart);
void steer_grid_lists_track_range(steer_grid_lists *L, const steer_grid *g, const float *px, const float *py,
                                  const float *r, uint32_t begin, uint32_t end);
void steer_grid_lists_track_end(steer_grid_lists *L);
/* steer_grid_nearest_pos(g, p, radius, self, out_pos, max, hint) for agent
 * self, through its kept list; writes only self's list. out_xy and out_r (both
 * or neither NULL) get the neighbours' positions and radii as the grid holds
 * them (sx, sy, sr at out_pos; radii only if the grid was built with them).
 * *hint (may be NULL) is the last answer's k-th squared distance (0: none),
 * which the plain query, when it runs, widens by slack (m) for its guess; on
 * return it holds this answer's, as steer_grid_nearest_hint leaves it. */
uint32_t steer_grid_nearest_kept(const steer_grid *g, steer_grid_lists *L, uint32_t self, vec2 p,
                                 float radius, uint32_t *out_pos, vec2 *out_xy, float *out_r, uint32_t max,
                                 float *hint, float slack);

/* steer_grid_nearest_kept giving dense indices: *out points at the n
 * nearest's (n returned), in the agent's kept list (valid until the next
 * query for the same agent, or the next build) or in scratch, which must hold
 * STEER_GRID_LIST entries. Their positions, cell positions and radii are
 * L->rec[index] (the lists track every build of g). max > STEER_GRID_LIST is
 * taken as STEER_GRID_LIST. The same answer and hint as
 * steer_grid_nearest_kept. */
uint32_t steer_grid_nearest_kept_idx(const steer_grid *g, steer_grid_lists *L, uint32_t self, vec2 p,
                                     float radius, uint32_t max, float *hint, float slack, uint32_t *scratch,
                                     const uint32_t **out);

#endif /* STEER_GRID_H */

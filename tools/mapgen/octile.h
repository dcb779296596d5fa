/* octile.h: the reference shortest paths of the Moving AI benchmarks on a grid
 * of cells: 8-connected, a straight move costs 1 and a diagonal sqrt 2, and a
 * diagonal move is allowed only when both cells beside it (the two orthogonal
 * neighbours it passes between) are free, so no route cuts a blocked corner.
 * A* with the octile distance as its heuristic (consistent, so the first time
 * the goal leaves the open list its length is optimal).
 *
 * A length is counted as s straight and d diagonal moves and given as
 * s + d * sqrt 2, so it does not depend on the order the moves were added:
 * the same route always prints the same digits. */
#ifndef STEERD_OCTILE_H
#define STEERD_OCTILE_H

#include <stdint.h>

#define OCTILE_SQRT2 1.4142135623730951

/* blocked[y * width + x]: nonzero for a blocked cell. */
typedef struct octile_grid {
  uint32_t width, height;
  const uint8_t *blocked;
} octile_grid;

/* The octile distance, a lower bound of the route between two cells dx and
 * dy apart: max + (sqrt 2 - 1) * min. */
double octile_distance(uint32_t dx, uint32_t dy);

/* A search's tables for grids of up to width x height cells, reused from one
 * search to the next (nothing is cleared between searches). NULL on no
 * memory. */
typedef struct octile_search octile_search;
octile_search *octile_search_create(uint32_t width, uint32_t height);
void octile_search_destroy(octile_search *s); /* accepts NULL */

/* The optimal length from cell (sx, sy) to (gx, gy), 0 when they are the
 * same cell, or -1 when either is blocked or outside the grid, or no route
 * joins them. *expanded (may be NULL) gets the cells taken off the open list. */
double octile_shortest(octile_search *s, const octile_grid *g, uint32_t sx, uint32_t sy, uint32_t gx,
                       uint32_t gy, uint32_t *expanded);

/* Labels the free cells by connected component (0, 1, ... in row-major order
 * of each component's first cell; blocked cells get UINT32_MAX) and returns
 * how many there are, or UINT32_MAX on no memory. Without corner cutting a
 * diagonal move needs both orthogonal cells free, so the components are the
 * 4-connected ones. */
uint32_t octile_components(const octile_grid *g, uint32_t *label);

#endif /* STEERD_OCTILE_H */

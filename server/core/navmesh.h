/* navmesh.h: path planning on a navigation mesh of the free space, for levels
 * of real size (tens of thousands of obstacles).
 *
 * The mesh: every obstacle is inflated by the body's radius plus the map's
 * skin and a margin (STEER_MESH_MARGIN), as convex pieces: a circle or a
 * polygon's corner becomes a circumscribed polygon with a side per 45 degrees
 * of turn at most, so the inflated shape holds the true one (a body on its
 * boundary keeps at least r + skin + margin from the geometry). Pieces may
 * overlap; what no piece covers is free. The free space is cut into convex
 * cells by a vertical sweep (trapezoids: a cell is bounded by one piece edge
 * below, one above and two vertical sides), tile by tile (each tile on its
 * own: the unit a local rebuild would redo; a map change rebuilds the mesh
 * whole today, off the tick thread, see planner.h). Cells on both sides of a
 * vertical side or a tile border are joined edge to edge (a side is split
 * where the cells across it change), so the mesh is conforming; cells are
 * then merged while their union stays convex, and labelled by the connected
 * part of the free space they are in.
 *
 * Why a sweep and not a library's triangulation: GEOS (geos_c 3.11) needs the
 * union of the inflated pieces first and took 6.5-8 s for the 35 000 pieces of
 * a 400 x 400 map of 33 % random blocks, and its constrained Delaunay
 * triangulation another 4-6 s, failing on about one tile in ten of that map;
 * the sweep counts coverage instead of computing the union, so overlapping
 * pieces need no boolean operation.
 *
 * Plans: the Polyanya search (Cui, Harabor, Grastien 2017): intervals of cell
 * edges seen from a root (the start, or an obstacle corner the route turns
 * at), expanded cell by cell with an admissible estimate, so the first route
 * to reach the goal is the shortest in the mesh's free space (exact, no
 * further preprocessing). Coordinates are doubles inside the mesh; the route's
 * points are rounded to floats, well within the margin.
 *
 * Determinism: cells and vertices come in tile order, the search breaks ties
 * by insertion order; the same map gives the same mesh and the same routes,
 * whatever thread builds it. */
#ifndef STEER_NAVMESH_H
#define STEER_NAVMESH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "map.h"
#include "nav.h"
#include "vec2.h"

#define STEER_MESH_TILE 16.0f /* m, side of a tile of the sweep */
/* m, beyond r + skin, as the visibility graph's corners: a fast body cutting a
 * corner of its route has that much room (a few cm: at most 8 % of r + skin
 * longer per corner), and a route's float points are far inside it. */
#define STEER_MESH_MARGIN 0.05f

typedef struct steer_mesh steer_mesh;

/* The mesh of map m for bodies of radius r (>= 0, finite) whose centres stay
 * inside [lo, hi] (as the world keeps them: the bounds are not walls). NULL on
 * bad arguments or no memory. */
steer_mesh *steer_mesh_build(const steer_map *m, float r, vec2 lo, vec2 hi);
void steer_mesh_destroy(steer_mesh *mesh); /* accepts NULL */

float steer_mesh_radius(const steer_mesh *mesh);
uint32_t steer_mesh_map_version(const steer_mesh *mesh);
uint32_t steer_mesh_cell_count(const steer_mesh *mesh);
uint32_t steer_mesh_vertex_count(const steer_mesh *mesh);
size_t steer_mesh_memory(const steer_mesh *mesh); /* bytes held */
/* Hash of the radius, the vertices and the cells (equal meshes, same hash). */
uint64_t steer_mesh_hash(const steer_mesh *mesh);

/* Whether p is in the mesh's free space (a body of the mesh's radius fits). */
int steer_mesh_free(const steer_mesh *mesh, vec2 p);
/* The free point nearest p within reach (p itself when free): 0 with *out
 * set, or STEER_ENOENT. */
int steer_mesh_nearest(const steer_mesh *mesh, vec2 p, float reach, vec2 *out);

/* The shortest route from `from` to `to` for the mesh's radius: its corners
 * then `to` written to out (at most cap points). Returns 0, or
 *   STEER_EBLOCKED  `to` is not in the free space;
 *   STEER_ENOENT    no route (or `from` is not in the free space either and
 *                   nothing free is within STEER_MESH_SNAP of it);
 *   STEER_EFULL     the route has more than cap points (res->count says how
 *                   many it has);
 *   STEER_EINVAL    not finite.
 * A `from` just outside the free space (an agent pressed against a wall by the
 * crowd) starts from the nearest free point within STEER_MESH_SNAP, which is
 * then the route's first point. */
#define STEER_MESH_SNAP 0.25f /* m */
int steer_mesh_plan(steer_mesh *mesh, vec2 from, vec2 to, vec2 *out, uint32_t cap, steer_nav_result *res);

/* The same plan in slices, for a caller with a budget per tick: start (0, or
 * steer_mesh_plan's error at once), then run until it returns 1 (each call
 * expands at most budget search nodes, *spent says how many), then result
 * (steer_mesh_plan's answer). One plan at a time per mesh; a new start, or a
 * plain steer_mesh_plan, drops the one in progress. The slices change nothing
 * of the answer: the same nodes are expanded in the same order. */
int steer_mesh_plan_start(steer_mesh *mesh, vec2 from, vec2 to);
int steer_mesh_plan_run(steer_mesh *mesh, uint32_t budget, uint32_t *spent);
int steer_mesh_plan_result(steer_mesh *mesh, vec2 *out, uint32_t cap, steer_nav_result *res);
/* steer_mesh_plan_start, with the mesh's landmarks (if it has them) or without
 * (landmarks 0): a caller that attaches them while plans run chooses which
 * plans use them, and the same plan begun again the same way expands the same
 * nodes. steer_mesh_plan_start and steer_mesh_plan use them when attached. */
int steer_mesh_plan_begin(steer_mesh *mesh, vec2 from, vec2 to, int landmarks);

/* Landmarks: vertices whose exact route lengths to every vertex are known, so
 * a plan's estimate also bounds the detours the level's walls force, not only
 * the straight line (the difference of two landmarks' lengths is a lower
 * bound: the ALT estimate of Goldberg and Harrelson, on the mesh). Plans stay
 * exact and expand fewer nodes: 2-3x fewer on the generated levels with eight.
 * Each costs a search of the whole free space, which is why they are computed
 * apart from the mesh, off the tick thread, and attached when due. */
#define STEER_MESH_LANDMARKS 8u
/* The most a mesh takes (a larger count is cut to it). */
#define STEER_MESH_LANDMARKS_MAX 32u
/* The table of count landmarks for mesh (chosen farthest-first in the largest
 * part of its free space), into *table (the caller owns it). The mesh is only
 * read: its plans may run meanwhile on another thread. When *cancel (may be
 * NULL) becomes non-zero the work stops soon. 0, 1 when cancelled, or
 * STEER_ENOMEM. */
int steer_mesh_landmarks(const steer_mesh *mesh, uint32_t count, const atomic_int *cancel, float **table);
/* Attaches a table of count landmarks to mesh, which owns it from then on
 * (NULL drops the mesh's; the table replaced is freed, so not while a plan
 * begun with it runs). */
void steer_mesh_set_landmarks(steer_mesh *mesh, float *table, uint32_t count);
uint32_t steer_mesh_landmark_count(const steer_mesh *mesh);

#endif /* STEER_NAVMESH_H */

/* navmesh_internal.h: what the mesh's two halves share, not part of the API:
 * navmesh_build.c (inflated pieces, the tiled sweep, stitching, point
 * location) and navmesh_search.c (the Polyanya search). */
#ifndef STEER_NAVMESH_INTERNAL_H
#define STEER_NAVMESH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "navmesh.h"

#define MESH_NONE   (-1)
#define MESH_EPS    1e-9 /* m, slack of the containment and orientation tests */
#define MESH_BUCKET 2.0  /* m, side of a point-location bucket */

typedef struct mpt {
  double x, y;
} mpt;

/* A convex cell of the free space: its vertices counter-clockwise, from
 * first in pv; edge k runs from pv[first + k] to pv[first + (k + 1) % count]
 * and has the cell pn[first + k] across it (MESH_NONE: geometry or the
 * bounds), where it is edge ptw[first + k]. */
typedef struct mesh_cell {
  uint32_t first, count;
  double lox, loy, hix, hiy; /* box */
} mesh_cell;

struct steer_mesh {
  float r;
  double R; /* r + skin + margin: how far the pieces reach beyond the geometry */
  mpt lo, hi;
  uint32_t version;

  mpt *verts;
  uint8_t *corner; /* 1: the free space turns convexly here (a route may bend) */
  uint32_t nverts;
  mesh_cell *cells;
  uint32_t ncells;
  uint32_t *pv;
  int32_t *pn;
  uint16_t *ptw;
  uint8_t *ways;  /* per cell: edges with a cell across (255: that many or more) */
  uint32_t *comp; /* per cell: its connected part of the free space */
  uint32_t nedges;

  /* Point location: a uniform grid of buckets, each listing the cells whose
   * boxes touch it. */
  uint32_t bcols, brows;
  uint32_t *bstart; /* bcols * brows + 1 */
  uint32_t *bitems;

  /* Landmarks (steer_mesh_set_landmarks): the exact route lengths from a few
   * vertices to every vertex, lm_d[v * nlm + k] (INFINITY: not reached from
   * landmark k), for the differential estimate of a plan. */
  uint32_t nlm;
  float *lm_d;

  struct mesh_search *search; /* navmesh_search.c, made by the first plan */
};

/* Grows the array *pp of *cap elements of size bytes to hold need (doubling,
 * from 64): 1, or 0 on no memory (the array is kept). */
static inline int grow(void *pp, uint32_t *cap, uint32_t need, size_t size) {
  void **p = pp;
  if (need <= *cap)
    return 1;
  uint32_t c = *cap ? *cap : 64u;
  while (c < need)
    c = c > UINT32_MAX / 2u ? need : c * 2u;
  void *q = realloc(*p, (size_t)c * size);
  if (!q)
    return 0;
  *p = q;
  *cap = c;
  return 1;
}

static inline double mesh_orient(mpt a, mpt b, mpt c) {
  return (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x);
}

/* The cell holding p (within MESH_EPS), MESH_NONE if none; with all set, every
 * such cell is written to out (at most cap) and their number returned. */
int32_t mesh_locate(const steer_mesh *m, mpt p);
uint32_t mesh_locate_all(const steer_mesh *m, mpt p, uint32_t *out, uint32_t cap);
/* The free point nearest p within reach (on a cell's boundary), or 0. */
int mesh_nearest(const steer_mesh *m, mpt p, double reach, mpt *out, int32_t *cell);

void mesh_search_free(struct mesh_search *s);

#endif /* STEER_NAVMESH_INTERNAL_H */

/* map.h: the static geometry of a world (circles, polygons, wall polylines) and
 * the local queries the tick makes against it.
 *
 * Obstacles carry a caller-chosen id (> 0) and are kept in the order they were
 * added (a removal keeps the order of the rest), so that two maps built by the
 * same calls answer every query with the same bits. Every obstacle becomes
 * primitives: a circle stays a circle, a polygon (convex or concave, simple,
 * either winding) becomes its closed ring of segments plus a solid interior, a
 * wall polyline becomes its open chain of segments (thickness 0). Primitives
 * are indexed in a uniform grid of cells over the world bounds (a cell lists
 * every segment and circle whose box touches it), rebuilt when the map
 * changes, so a query touches only the cells around it. Ids are found
 * through a hash table, so adding or finding one costs the same at any map
 * size. Memory grows when obstacles are added (an admin action), never during
 * a query or a tick: per obstacle 20 B and 8 to 16 B of id slots, 8 B per
 * point; per segment 24 B (a circle 20 B) and 4 B per cell it touches; per
 * polygon 12 B and 4 B per cell its box touches; each array up to twice that
 * while it grows; and 9 B per cell (its two list starts, the near byte).
 *
 * Distances: an agent of radius r at p is free when every segment and circle is
 * at least r away and p is inside no polygon or circle. The movement functions
 * keep a skin of STEER_MAP_SKIN on top of r so that float rounding never brings
 * a body closer than r. */
#ifndef STEER_MAP_H
#define STEER_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "vec2.h"

#define STEER_MAP_MAX_OBSTACLES 65536u   /* per map */
#define STEER_MAP_MAX_VERTICES  256u     /* per polygon or wall */
#define STEER_MAP_MAX_SEGMENTS  1048576u /* per map, all obstacles together */
#define STEER_MAP_MAX_CELLS     (1u << 20)
#define STEER_MAP_SKIN          2e-3f /* m, clearance kept on top of a body's radius */
#define STEER_MAP_MIN_EXTENT    1e-3f /* m, shortest segment, smallest circle radius */

typedef enum steer_obstacle_kind {
  STEER_OBSTACLE_CIRCLE = 0, /* points[0] = centre, radius */
  STEER_OBSTACLE_POLYGON,    /* 3..MAX_VERTICES points, closed, simple, solid */
  STEER_OBSTACLE_WALL,       /* 2..MAX_VERTICES points, open polyline, thickness 0 */
  STEER_OBSTACLE_KIND_COUNT
} steer_obstacle_kind;

/* What an obstacle is; points belong to the caller. */
typedef struct steer_obstacle_desc {
  uint8_t kind;       /* steer_obstacle_kind */
  uint32_t count;     /* points */
  const vec2 *points; /* m */
  float radius;       /* m, circle only */
} steer_obstacle_desc;

typedef struct steer_map steer_map;

/* An empty map over the bounds; cell is the index's cell side (grown when the
 * bounds would need more than STEER_MAP_MAX_CELLS). NULL on bad arguments or
 * no memory. */
steer_map *steer_map_create(vec2 min, vec2 max, float cell);
void steer_map_destroy(steer_map *m); /* accepts NULL */

/* Checks an obstacle without adding it: 0, or STEER_EINVAL (bad kind, count
 * outside its range, a coordinate or radius not finite, a part outside the
 * bounds, a segment shorter than STEER_MAP_MIN_EXTENT, a polygon with zero area
 * or crossing edges) or STEER_EFULL (the map's caps). */
int steer_map_check(const steer_map *m, uint32_t id, const steer_obstacle_desc *o);

/* The rule of shape a refused obstacle breaks, so that a map file's error or a
 * command's ERROR names it and the point it is at. */
typedef enum steer_map_rule {
  STEER_MAP_RULE_OK = 0,
  STEER_MAP_RULE_MALFORMED,   /* bad kind, number of points or radius, a number not finite */
  STEER_MAP_RULE_OUTSIDE,     /* points[at] (a circle's centre: at 0) outside the bounds */
  STEER_MAP_RULE_REACHES_OUT, /* a circle reaching outside the bounds */
  STEER_MAP_RULE_SHORT_EDGE,  /* the edge from points[other] to points[at] is under STEER_MAP_MIN_EXTENT */
  STEER_MAP_RULE_CROSSING,    /* the edges from points[at] and from points[other] cross or touch */
  STEER_MAP_RULE_NO_AREA,     /* a polygon of zero area (its points on a line) */
  STEER_MAP_RULE_FOLD,        /* the edges meeting at points[at] fold back onto each other */
  STEER_MAP_RULE_COUNT
} steer_map_rule;

typedef struct steer_map_fault {
  int rule;       /* steer_map_rule */
  uint32_t at;    /* the point the rule names */
  uint32_t other; /* SHORT_EDGE, CROSSING: the other point named */
} steer_map_fault;

/* The first rule of shape o breaks as an obstacle of m, checked in this order:
 * the form, every point inside the bounds (in order), a circle inside them,
 * every edge's length (in order), then a polygon's edges crossing, its area
 * and its edges folding back. steer_map_check refuses exactly the obstacles
 * this finds a rule for. Returns f->rule. */
int steer_map_shape_fault(const steer_map *m, const steer_obstacle_desc *o, steer_map_fault *f);
/* Adds (id must be > 0 and unused, else STEER_EINVAL) or removes (STEER_ENOENT). */
int steer_map_add(steer_map *m, uint32_t id, const steer_obstacle_desc *o);
int steer_map_remove(steer_map *m, uint32_t id);
void steer_map_clear(steer_map *m);
/* Loading many obstacles: between hold and release, add, remove and clear
 * only record the obstacles (checked as always) and the index is rebuilt once,
 * by release (each change otherwise rebuilds it: loading n obstacles one by one
 * costs n rebuilds). No query may run while the map is held. Release returns
 * 0, or STEER_ENOMEM (the index could not be built: the map is unusable until
 * a release succeeds). */
void steer_map_hold(steer_map *m);
int steer_map_release(steer_map *m);

uint32_t steer_map_count(const steer_map *m);
/* The bounds the map was created over. */
void steer_map_bounds(const steer_map *m, vec2 *min, vec2 *max);
uint32_t steer_map_segment_count(const steer_map *m);
/* The i-th obstacle in map order (0 <= i < count): its id and shape; points
 * stay valid until the map changes. */
int steer_map_get(const steer_map *m, uint32_t i, uint32_t *id, steer_obstacle_desc *out);
/* Index in map order of an id, or -1. */
int32_t steer_map_find(const steer_map *m, uint32_t id);
/* Bumped by every change (starts at 0). */
uint32_t steer_map_version(const steer_map *m);
/* Sets the version (a restored map continues its count). */
void steer_map_set_version(steer_map *m, uint32_t version);

/* Whether p is inside a polygon or circle obstacle (walls have no inside). */
int steer_map_inside(const steer_map *m, vec2 p);
/* Whether a body of radius r at p is free: nothing closer than r - slack, and
 * p inside nothing. */
int steer_map_free(const steer_map *m, vec2 p, float r, float slack);
/* Smallest distance from p to any segment or circle edge within reach (p's
 * inside is not considered); reach if nothing is nearer. */
float steer_map_distance(const steer_map *m, vec2 p, float reach);

/* A free point for a body of radius r near p (p itself when free): pushed out
 * of what it overlaps, else the first free point on rings around p. Returns 0
 * with *out set, or STEER_ENOENT when nothing free was found within
 * max_search metres. */
int steer_map_nearest_free(const steer_map *m, vec2 p, float r, float max_search, vec2 lo, vec2 hi,
                           vec2 *out);

/* Moves a body of radius r from p0 (free) toward *p1 (inside the bounds):
 * the motion is swept against the nearby geometry, stopped at the first
 * contact (r + skin) and the rest slides along the surface, up to 4 legs; every
 * leg is checked (its swept disc keeps r from everything) before it is taken,
 * so the result is free and no wall is crossed. *p1 gets the end point; v (may
 * be NULL) loses its component into each surface touched. Returns the number
 * of contacts (0: the motion was free). */
int steer_map_move(const steer_map *m, vec2 p0, vec2 *p1, float r, vec2 *v, vec2 lo, vec2 hi);

/* First contact of a disc of radius r moving from p by d (t in [0, 1] of d):
 * returns 1 with *t and the surface normal *n (pointing toward the disc), or 0
 * when the way is clear. */
int steer_map_cast(const steer_map *m, vec2 p, vec2 d, float r, float *t, vec2 *n);

/* Adds the map's geometry to a running hash (FNV-style, as steer_world_hash). */
uint64_t steer_map_hash(const steer_map *m, uint64_t h);

#endif /* STEER_MAP_H */

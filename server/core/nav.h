/* nav.h: path planning on the map: a visibility graph over the corners of the
 * geometry inflated by an agent's radius, A* over it, and a string-pulled
 * route of corners.
 *
 * Why a visibility graph and not a navmesh:
 * - Path quality: in the plane, the shortest route around polygons inflated
 *   by r runs from corner to corner of the inflated shapes; A* over the
 *   graph of mutually visible corners finds it (round inflated corners are
 *   circumscribed by a piece per 45 degrees of turn, costing at most 8 % of r
 *   per corner, a few cm), where a
 *   navmesh needs a funnel pass and still follows the triangulation's corridor.
 * - Radii: the graph is built for one radius (nodes pushed out by r, edges
 *   checked with a swept disc of r through the map's own cast), so a gap
 *   narrower than 2 r never gets an edge. Agents of different radii use one
 *   graph per radius class (steer_nav_cache rounds r up to a class, so a plan
 *   is valid, never narrower, for every radius of the class).
 * - Robustness: there is no triangulation to break on touching or overlapping
 *   obstacles, walls of thickness 0 or concave rooms; every edge is proved by
 *   a swept-disc test with the map's rule (keep r + STEER_MAP_SKIN from every
 *   segment and circle), against the graph's own grid of the map's
 *   primitives, so a planned segment is one the body can actually travel.
 * - Map changes: the graph is a local function of the geometry, so it is
 *   updated incrementally (steer_nav_update): only candidates near a changed
 *   obstacle, edges passing near an added one, pairs passing near a removed
 *   one and the links of new corners are evaluated again, and the result is
 *   the same, bit for bit, as a build from scratch. That is a few ms on the
 *   tick thread instead of a full O(n^2) build; no thread, so nothing depends
 *   on timing.
 * - Cost: nodes are O(corners) (convex corners only, one per 45 degrees of
 *   turn; 8 per circle; 4 per wall end); edges are O(n^2) in the worst case (open rooms) but pruned to pairs
 *   tangent at both ends, typically a few tens per node. Memory is
 *   nodes * 28 B + edges * 16 B (both directions stored) plus A* tables of
 *   ~nodes * 60 B and 20 B per edge (see below); for the updates every
 *   candidate corner (32 B), the map's primitives (36 B) and a 128 x 128
 *   grid of them are kept too. The build is O(n^2) cheap tangent tests plus
 *   one swept-disc test per surviving pair (settled by a crossing test
 *   against the walls that blocked lately, mostly); figures in
 *   BENCHMARKS.md, "Path planning".
 *
 * The start and the goal are not in the graph: the start connects to every
 * corner tangent to it and in its sight (found block by block as the search
 * reaches them), the goal is tried from every expanded corner (one cast
 * each), so a plan touches only what A* reaches. The search relaxes only taut
 * successors (nav.c: a route may pass a corner about a cm wide of the graph's
 * best). Its tables (a 24-byte record per node in two parts, a heap of 12 bytes per node,
 * 10 bytes per directed edge: its direction and a copy sorted by direction)
 * are allocated with the graph and filled by the first plan after a build or
 * an update.
 *
 * Determinism: nodes come in map order, edges in node order, A* breaks ties by
 * node index; the same map and calls give the same route bits.
 *
 * Memory is allocated by steer_nav_build (on map changes), never by a plan. */
#ifndef STEER_NAV_H
#define STEER_NAV_H

#include <stddef.h>
#include <stdint.h>

#include "map.h"
#include "vec2.h"

#define STEER_NAV_MARGIN       0.05f /* m, corner nodes sit this far beyond r + skin */
#define STEER_NAV_CIRCLE_SIDES 8u    /* nodes around a circle (a circumscribed octagon) */
#define STEER_NAV_CLASS        0.25f /* m, radius classes of steer_nav_cache */
#define STEER_NAV_CLASSES      8u    /* graphs one cache holds at once */

typedef struct steer_nav steer_nav;

/* An empty graph (no map yet). NULL on no memory. */
steer_nav *steer_nav_create(void);
void steer_nav_destroy(steer_nav *n); /* accepts NULL */

/* Builds the graph of map m for bodies of radius r (>= 0, finite) inside the
 * bounds [lo, hi]. 0, STEER_EINVAL or STEER_ENOMEM (the old graph is kept). */
int steer_nav_build(steer_nav *n, const steer_map *m, float r, vec2 lo, vec2 hi);
/* The same for the navigation mesh (navmesh.h) instead of the visibility
 * graph: what steer_nav_cache builds, for levels of any size (a build is
 * O(map), milliseconds where the graph's is seconds). steer_nav_plan then
 * plans on the mesh (a goal within the mesh's margin of the free space is
 * reached from the nearest free point), steer_nav_update rebuilds it. The
 * graph's own queries (nodes, neighbours) see an empty graph. */
int steer_nav_build_mesh(steer_nav *n, const steer_map *m, float r, vec2 lo, vec2 hi);
typedef struct steer_mesh steer_mesh; /* navmesh.h */
/* The mesh a steer_nav_build_mesh graph plans on (NULL for a visibility
 * graph), for plans in slices (navmesh.h steer_mesh_plan_start). */
steer_mesh *steer_nav_mesh(steer_nav *n);
/* Where a mesh plan to `to` ends: `to`, or the nearest point of the mesh when
 * `to` lies within its margin (steer_nav_plan then adds `to` as the last
 * point). 0, or STEER_EBLOCKED (not free for the graph's radius). */
int steer_nav_mesh_goal(const steer_nav *n, const steer_map *m, vec2 to, vec2 *goal);
/* Brings a built graph up to date with m (same radius and bounds), reusing
 * what the changes since the graph's map cannot affect; the result equals
 * steer_nav_build's. Obstacles are matched by id and shape in map order, so
 * m may also be another map (a restored one). More than 64 obstacles added or
 * removed at once: built from scratch. 0 (also when already current),
 * STEER_EINVAL (not built) or STEER_ENOMEM (the old graph is kept). */
int steer_nav_update(steer_nav *n, const steer_map *m);

float steer_nav_radius(const steer_nav *n);
uint32_t steer_nav_map_version(const steer_nav *n); /* of the map it was built from */
uint32_t steer_nav_node_count(const steer_nav *n);
uint32_t steer_nav_edge_count(const steer_nav *n); /* undirected */
size_t steer_nav_memory(const steer_nav *n);       /* bytes held */
vec2 steer_nav_node(const steer_nav *n, uint32_t i);
/* Node i's neighbours, ascending (*out valid until the graph changes). */
uint32_t steer_nav_neighbours(const steer_nav *n, uint32_t i, const uint32_t **out);
/* Hash of the radius, the nodes and the edges (two equal graphs, same hash). */
uint64_t steer_nav_hash(const steer_nav *n);

/* Whether a body of radius r can travel straight from a to b: the swept disc
 * keeps r + STEER_MAP_SKIN from every segment and circle (through the map's
 * cell index, in pieces so each query stays local). */
int steer_nav_clear(const steer_map *m, vec2 a, vec2 b, float r);

/* What a plan found. */
typedef struct steer_nav_result {
  uint32_t count;    /* route points written (from excluded, goal included) */
  float length;      /* m, from `from` through the points */
  uint32_t expanded; /* A* nodes expanded */
} steer_nav_result;

/* Plans the shortest route for the graph's radius from `from` to `to` (the map
 * must be the one built from, same version) and writes its corners then `to`
 * into out (at most cap points). Returns 0, or:
 *   STEER_EBLOCKED  `to` is not free for the radius (inside an obstacle or
 *                   closer than r to geometry); the rule is to refuse, the
 *                   caller may move it with steer_map_nearest_free first;
 *   STEER_ENOENT    no route (closed off, or every way narrower than 2 r);
 *   STEER_EFULL     the route has more than cap points;
 *   STEER_EINVAL    not finite, or the graph is not of this map's version.
 * `from` is taken as is (an agent's position, free by integration). */
int steer_nav_plan(steer_nav *n, const steer_map *m, vec2 from, vec2 to, vec2 *out, uint32_t cap,
                   steer_nav_result *res);

/* steer_nav_plan without the taut pruning (every neighbour relaxed): the
 * graph's exact shortest route, the reference tests and benchmarks compare
 * with. */
int steer_nav_plan_plain(steer_nav *n, const steer_map *m, vec2 from, vec2 to, vec2 *out, uint32_t cap,
                         steer_nav_result *res);

/* Graphs per radius class, built lazily on first use and updated
 * (steer_nav_update) when the map version changed. */
typedef struct steer_nav_cache steer_nav_cache;
steer_nav_cache *steer_nav_cache_create(vec2 lo, vec2 hi);
/* What the cache builds: navigation meshes (the default: a build is O(map),
 * milliseconds on levels of tens of thousands of obstacles) or visibility
 * graphs (builds O(corners^2), seconds to minutes on such levels, but plans
 * several times cheaper on open maps strewn with small obstacles). Set before
 * the first build. */
typedef enum steer_nav_kind { STEER_NAV_MESH = 0, STEER_NAV_GRAPH, STEER_NAV_KIND_COUNT } steer_nav_kind;
void steer_nav_cache_set_kind(steer_nav_cache *c, int kind);
void steer_nav_cache_destroy(steer_nav_cache *c); /* accepts NULL */
/* The graph for radius r, up to date with m (built now if needed: the only
 * costly call; NULL on no memory or a radius beyond the classes). */
steer_nav *steer_nav_cache_get(steer_nav_cache *c, const steer_map *m, float r);
/* Whether r's class has a graph built (then steer_nav_cache_get only updates
 * it to the map, a few ms at most, no full build). */
int steer_nav_cache_has(const steer_nav_cache *c, float r);
/* Full graph builds the cache has started since its creation (the costly
 * calls: a class's first use, or a rebuild after an update ran out of memory),
 * on any thread, and of them those made by steer_nav_cache_get on the
 * caller's thread. */
uint64_t steer_nav_cache_builds(const steer_nav_cache *c);
uint64_t steer_nav_cache_sync_builds(const steer_nav_cache *c);
/* Starts building r's class graph on a thread of its own from a copy of m
 * (taken now: m may change afterwards; cell is m's index cell, the world's
 * cell_size) unless the class has a graph or a build under way. 1 started,
 * 0 nothing to do, STEER_EINVAL (no class for r), STEER_ENOMEM (no memory or
 * no thread: steer_nav_cache_get then builds it). The copy costs O(obstacles)
 * on the caller's thread, the build none. */
int steer_nav_cache_start(steer_nav_cache *c, const steer_map *m, float r, float cell);
/* Starts building r's class graph anew off the thread, from a copy of m,
 * unless it is of m's version already or a build is under way (the graph in
 * use stays until steer_nav_cache_finish or _wait takes the new one): what a
 * map change does to a mesh class. 1 started, 0 nothing to do, or an error. */
int steer_nav_cache_refresh(steer_nav_cache *c, const steer_map *m, float r, float cell);
/* The map version of r's class graph, UINT32_MAX when it has none. */
uint32_t steer_nav_cache_version(const steer_nav_cache *c, float r);
/* Whether r's class has a build under way (started, not yet taken). */
int steer_nav_cache_pending(const steer_nav_cache *c, float r);
/* Waits for r's class build under way, if any, and takes its graph; then
 * whether the class has a graph (steer_nav_cache_get brings it up to date
 * with the live map: an update). Also done by steer_nav_cache_get. */
int steer_nav_cache_finish(steer_nav_cache *c, float r);
/* Waits up to timeout_ms (0: only looks) for r's class build under way; once
 * it is over (or when none is under way) takes its graph as
 * steer_nav_cache_finish does and returns 1, else 0 (still building). A long
 * wait made of such slices lets the caller do other work between them. */
int steer_nav_cache_wait(steer_nav_cache *c, float r, uint32_t timeout_ms);
/* Landmarks of r's mesh class (navmesh.h steer_mesh_landmarks), computed on a
 * thread of their own for the mesh the class has now, while its plans go on
 * without them; a job whose mesh is replaced first (a rebuild taken, an
 * update) is cancelled and dropped. start: 1 started, 0 nothing to do (no
 * mesh, a build under way, landmarks attached or being computed), or
 * STEER_ENOMEM. wait: as steer_nav_cache_wait, for that job; once it is over
 * its table is attached to the mesh (when it made one) and 1 returned.
 * steer_nav_cache_landmarks: 1 the class's mesh has them, -1 being computed,
 * else 0. */
int steer_nav_cache_landmarks_start(steer_nav_cache *c, float r);
int steer_nav_cache_landmarks_wait(steer_nav_cache *c, float r, uint32_t timeout_ms);
int steer_nav_cache_landmarks(const steer_nav_cache *c, float r);
/* The radius a body of radius r plans with (r rounded up to its class). */
float steer_nav_class_radius(float r);

#endif /* STEER_NAV_H */

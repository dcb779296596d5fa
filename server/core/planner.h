/* planner.h: GOTO, "go there and find the way": a queue of plan requests
 * served with a budget per tick, fairly, and the routes handed to the world's
 * path follower.
 *
 * A GOTO targets a point or an agent. It is planned on the map (nav.h) for the
 * agent's radius class, then followed as the agent's own once-path with its
 * cornering (the follower arrives at the last point without overshoot: the
 * dynamic model arrives on the last leg, the heading model slows to stop on it).
 * A route longer than the world's max_path_points is followed in parts, each
 * planned when the previous one ends.
 *
 * Replanning: when the map changed and the remaining route is no longer clear
 * for the body, when the target agent moved more than replan_distance from the
 * goal the route was planned to, when the agent reports STUCK, and when the
 * part of a long route ends. An agent given another behaviour (or despawned)
 * leaves GOTO.
 *
 * The queue: every agent is at most once in it (a new GOTO or a trigger while
 * queued only updates the request), served first come first served; each tick
 * serves requests until the budget (A* expansions, deterministic, unlike a
 * clock) is spent. On a mesh a plan that reaches the budget is suspended and
 * goes on in the next tick, first (the search's state stays in the class's
 * mesh; a map change meanwhile begins it again), so a tick spends the budget
 * and one plan's set-up at most; on a visibility graph a plan once started is
 * finished, so a tick overshoots the budget by at most one plan. Until its
 * plan is served an agent keeps doing what it did (a replanning agent keeps
 * following its old route); a plan that took several ticks goes back to where
 * it began first when the agent cannot go straight from where it is now.
 *
 * Results are events: PLANNED (first route), REPLANNED (with the reason),
 * UNREACHABLE (no route for the body's radius class, or the target agent is
 * gone or walled in: the agent stops, behaviour NONE, and stays out of GOTO
 * until a new one). A point target inside geometry is refused at once with
 * STEER_EBLOCKED (the world's rule for targets); an agent target standing
 * where a body of the planning radius does not fit is moved to the nearest
 * free point within 2 m, else UNREACHABLE.
 *
 * Graphs: one per radius class (nav.h steer_nav_cache). A class's first graph
 * is a full build (up to seconds on big maps), never made inside a tick. A
 * host may build the classes in use before the first tick (steer_planner_warm),
 * and those classes are served at once; a server that must answer its clients
 * meanwhile starts those builds on threads instead (steer_planner_warm_start),
 * and its classes then get due ticks as late ones do. A class that appears
 * later (the first GOTO of a new radius, or an agent's radius changed
 * mid-GOTO) gets a due tick, the tick of the request plus build_delay; its
 * graph is built meanwhile on a thread of its own (nav.h
 * steer_nav_cache_start, from a copy of the map), its requests wait in the
 * queue (an agent keeps doing what it did), and from the due tick on the class
 * is served. If the build is not done by then, that tick waits for it: when a
 * class is served depends only on the calls, never on how long the build takes,
 * so results are deterministic. The wait is made of slices of
 * STEER_PLANNER_WAIT_SLICE_MS with the host's hook called between them
 * (steer_planner_set_wait_hook), so the host keeps its connections alive; it
 * is counted in the statistics. The due ticks and the served classes are part
 * of the saved state. After a map change a built graph is updated
 * incrementally by the next plan of its class (a few ms). The graph is the
 * same, bit for bit, whenever and wherever it is built.
 *
 * Deterministic: the same calls on the same world give the same routes, events
 * and queue order. */
#ifndef STEER_PLANNER_H
#define STEER_PLANNER_H

#include <stdint.h>

#include "nav.h"
#include "world.h"

#define STEER_PLANNER_MAX_ROUTE                                                                              \
  1024u /* route points held at first; a longer route grows the buffer, followed in parts of max_path_points \
         */
#define STEER_PLANNER_SNAP   2.0f   /* m, how far an agent target or a start is moved to fit */
#define STEER_PLANNER_SAME_M 0.001f /* m: a replanned route this close to the one followed is the same */

typedef enum steer_plan_event_type {
  STEER_PLAN_PLANNED = 0,
  STEER_PLAN_REPLANNED,
  STEER_PLAN_UNREACHABLE,
  STEER_PLAN_EVENT_TYPE_COUNT
} steer_plan_event_type;

typedef enum steer_plan_reason {
  STEER_PLAN_NEW = 0,      /* a GOTO command */
  STEER_PLAN_MAP,          /* the map changed across the route */
  STEER_PLAN_TARGET_MOVED, /* the target agent moved beyond replan_distance */
  STEER_PLAN_STUCK,        /* the agent reported STUCK */
  STEER_PLAN_CONTINUE,     /* the followed part of a long route ended */
  STEER_PLAN_REASON_COUNT
} steer_plan_reason;

typedef struct steer_plan_event {
  uint64_t tick; /* world tick when served (before its step) */
  steer_id agent;
  uint8_t type;    /* steer_plan_event_type */
  uint8_t reason;  /* steer_plan_reason */
  uint32_t points; /* route points now followed (0: unreachable) */
  float length;    /* m, of the whole route from the agent (0: unreachable) */
} steer_plan_event;

typedef struct steer_goto {
  steer_target target;   /* STEER_TARGET_POINT or STEER_TARGET_AGENT */
  float node_radius;     /* m, a corner is passed within this (0.5), > 0 */
  uint8_t cornering;     /* steer_cornering, ARC/LAZY for the heading model only (NONE) */
  float replan_distance; /* m, target agent movement that replans (2) */
} steer_goto;

steer_goto steer_default_goto(void);

typedef struct steer_planner_config {
  /* Search node expansions per tick; 0 (the default): by nav,
   * STEER_PLANNER_MESH_BUDGET or STEER_PLANNER_GRAPH_BUDGET. An expansion of the visibility graph's A* tests
   * a corner's links, one of the mesh's search an interval across a cell, some 30 times cheaper:
   * STEER_PLANNER_GRAPH_BUDGET is as many milliseconds there (about 10 ms of plans per tick on the machine of
   * BENCHMARKS.md, either way). */
  uint32_t budget;
  /* Ticks a new radius class's plans wait for its graph, built meanwhile off
   * the tick thread; 0 (default): by the map's segments s. A mesh: 1 + s /
   * 8 192 (its build is O(s), about 1 ms per 1 000 segments): 1 tick for a
   * few thousand segments, 14 for 113 000 (a 400 x 400 grid of 33 % random
   * blocks, about 0.2 s of build). A visibility graph: 1 + s / 128 + s^2 /
   * 2^20 (the build's pairs grow as s^2): 37 ticks for 3 338 segments (1 000
   * obstacles of rooms and pillars, about 1 s of build), 737 for 24 000 (600
   * 40-gons, about 25 s), 1 for a few. A mesh's landmarks (navmesh.h), which
   * its plans use once they are computed (off the tick thread, the plans
   * going on without them meanwhile): 1 + s / 1 024 ticks after the mesh is
   * served, 30 at least (about 7-14 us a segment: 0.2 s for the 15 000
   * segments of a 512 x 512 level). Nonzero: that many ticks for both. */
  uint32_t build_delay;
  uint8_t nav; /* steer_nav_kind: what the classes plan on (STEER_NAV_MESH) */
} steer_planner_config;

#define STEER_PLANNER_MESH_BUDGET                32768u     /* see budget */
#define STEER_PLANNER_ROUTE_LIMIT                (1u << 20) /* route points a visibility graph's plan may take */
#define STEER_PLANNER_GRAPH_BUDGET               1024u      /* see budget */
#define STEER_PLANNER_MESH_SEGMENTS_PER_TICK     8192u      /* see build_delay */
#define STEER_PLANNER_LANDMARK_SEGMENTS_PER_TICK 1024u      /* see build_delay */
#define STEER_PLANNER_LANDMARK_TICKS             30u        /* see build_delay */
#define STEER_PLANNER_WARM_TICKS                 10u /* the start-up's classes' delay at least (steer_planner_warm_start) */
#define STEER_PLANNER_SEGMENTS_PER_TICK          128u       /* see build_delay */
#define STEER_PLANNER_SEGMENT_PAIRS_PER_TICK     (1u << 20) /* see build_delay */

steer_planner_config steer_default_planner_config(void);

typedef struct steer_planner steer_planner;

/* A planner for world w (sized by its capacity). NULL on bad config or memory. */
steer_planner *steer_planner_create(const steer_world *w, const steer_planner_config *cfg);
void steer_planner_destroy(steer_planner *p); /* accepts NULL */

/* Queues a GOTO for agent id. 0, or STEER_ENOENT (no such agent), STEER_EINVAL
 * (target kind, node_radius, replan_distance, cornering out of range),
 * STEER_EMODEL (the model cannot follow paths, or cornering does not suit it),
 * STEER_ETARGET (target agent missing or the agent itself), STEER_EBLOCKED
 * (target point inside geometry). */
int steer_planner_goto(steer_planner *p, const steer_world *w, steer_id id, const steer_goto *g);
/* The same checks without queuing anything: steer_planner_goto with the same
 * arguments then succeeds. */
int steer_planner_check(const steer_world *w, steer_id id, const steer_goto *g);
/* Leaves GOTO (the agent keeps following its current route). STEER_ENOENT if
 * it was not in GOTO. */
int steer_planner_cancel(steer_planner *p, steer_id id);

/* Before a step: drops agents that left GOTO, queues replans (map, target
 * moved), then serves the queue within the budget. */
void steer_planner_update(steer_planner *p, steer_world *w);
/* The map has just changed (optional: update finds any change itself, at the
 * start of the next tick): routes it blocked are queued for replanning now,
 * ahead of requests that come after the change. */
void steer_planner_map_changed(steer_planner *p, const steer_world *w);
/* After a step: reads its events (STUCK, PATH_FINISHED) and queues replans. */
void steer_planner_observe(steer_planner *p, const steer_world *w);

/* Agents in GOTO (status not NONE). */
uint32_t steer_planner_active(const steer_planner *p);
/* Whether the planner's state is the one of a new planner (nobody in GOTO,
 * nothing queued, no class served or waiting): nothing worth saving. */
int steer_planner_idle(const steer_planner *p);

/* Events of the last update; valid until the next update. */
const steer_plan_event *steer_planner_events(const steer_planner *p, uint32_t *count);

typedef enum steer_goto_status {
  STEER_GOTO_NONE = 0,    /* not in GOTO */
  STEER_GOTO_QUEUED,      /* waiting for its first plan */
  STEER_GOTO_FOLLOWING,   /* following a route (a replan may be queued) */
  STEER_GOTO_UNREACHABLE, /* last plan found no route */
  STEER_GOTO_STATUS_COUNT
} steer_goto_status;

/* The GOTO state of an agent: status and (when following) the goal planned to. */
steer_goto_status steer_planner_status(const steer_planner *p, steer_id id, vec2 *goal);

/* Everything the planner holds about one agent (steer_planner_get). */
typedef struct steer_goto_info {
  uint8_t status;  /* steer_goto_status */
  uint8_t queued;  /* a plan request is waiting */
  uint8_t reason;  /* steer_plan_reason of the last (or waiting) request */
  uint8_t partial; /* the followed route is the first part of a longer one */
  steer_goto g;    /* as requested */
  vec2 goal;       /* m, where the route ends (FOLLOWING) */
  int32_t path;    /* the world path the last plan set (-1: none) */
} steer_goto_info;

/* 0 with *out, or STEER_ENOENT when the agent is not in GOTO (its status NONE). */
int steer_planner_get(const steer_planner *p, steer_id id, steer_goto_info *out);

/* Upper bounds (s) of the plan time histogram's buckets (steer_planner_stats). */
#define STEER_PLANNER_TIME_BUCKETS 12
extern const double steer_planner_time_bounds[STEER_PLANNER_TIME_BUCKETS];

/* What the planner did, for the host's monitoring. The times are measured on
 * the monotonic clock and never read by a plan: they are not part of the
 * deterministic state (nor saved). */
typedef struct steer_planner_stats {
  uint32_t queued;        /* requests waiting */
  uint32_t last_served;   /* plans served by the last update */
  uint32_t last_expanded; /* A* expansions of the last update */
  uint64_t plans;         /* plans served since creation */
  uint64_t unreachable;   /* of which found no route */
  uint64_t planned;       /* of which a first route (PLANNED) */
  uint64_t replanned;     /* of which a new route (REPLANNED) */
  uint64_t kept;          /* of which the route the agent already followed: kept, no event */
  uint64_t plan_ns;       /* time the plans served took, in all */
  /* Plans by time: bucket b counts those above bound b - 1 and at most bound
   * b (not cumulative); those above the last bound are in none. */
  uint64_t plan_time_bucket[STEER_PLANNER_TIME_BUCKETS];
  uint64_t waits;            /* updates' waits for a graph build (or landmarks) still running (see above) */
  uint64_t wait_ns;          /* time they took, in all */
  uint32_t landmark_classes; /* mesh classes whose plans begin with landmarks now */
} steer_planner_stats;

steer_planner_stats steer_planner_get_stats(const steer_planner *p);

/* Builds the graph of the radius class of r for w's map now unless the class
 * has one (or r is wider than every class: nothing to build), and makes the
 * class served at once (unless restoring: steer_planner_restoring; or the
 * class already waits for its due tick). A class with a graph has it brought
 * up to date with the map. Outside ticks only (start-up, map load). 1 when it
 * built, 0 when nothing was built, STEER_EINVAL (r not finite or < 0),
 * STEER_ENOMEM. */
int steer_planner_warm_radius(steer_planner *p, const steer_world *w, float r);
/* steer_planner_warm_radius for every live agent's radius: the classes in
 * use. Not the default radius's class when no agent has it: a world with no
 * agents (a large map served for editing, never for GOTO) would pay a full
 * build for nothing; its first GOTO starts the build off the tick thread and
 * waits for its due tick (see above). The count of
 * graphs built, or STEER_EINVAL / STEER_ENOMEM (those built are kept). */
int steer_planner_warm(steer_planner *p, const steer_world *w);
/* steer_planner_warm's classes, built on threads of their own (nav.h
 * steer_nav_cache_start) instead of now, for a host that must answer its
 * clients during the builds. A class not served yet gets a due tick as a late
 * class does (the world's tick plus build_delay), unless restoring: when a
 * class is served then depends only on the calls and ticks, never on how long
 * its build takes. Due ticks rather than serving the classes at once (and
 * the first plan's tick waiting for the build): the ticks go on while the
 * builds run, only the GOTOs of those classes wait, and a tick waits only for
 * a build that outlasts its delay. The count of builds started, or
 * STEER_EINVAL, or STEER_ENOMEM when a build could not start (those started
 * go on; the others are built by their class's first plan). */
int steer_planner_warm_start(steer_planner *p, const steer_world *w);
/* How many of steer_planner_warm_start's classes still have their build
 * running (started by it, or by a GOTO before it); the graphs of those done
 * are taken now. */
uint32_t steer_planner_warming(steer_planner *p);

/* The host's hook, called between the slices of a wait for a graph build
 * (every STEER_PLANNER_WAIT_SLICE_MS, done 0) and once when it ends (done 1),
 * with the class radius and the time waited so far. It runs inside
 * steer_planner_update: it must not call the planner nor change the world. */
#define STEER_PLANNER_WAIT_SLICE_MS 5u
typedef void (*steer_planner_wait_fn)(void *ctx, float class_radius, uint64_t waited_ns, int done);
void steer_planner_set_wait_hook(steer_planner *p, steer_planner_wait_fn fn, void *ctx); /* fn NULL: none */

/* Where agent id's waiting request is in the plan queue: 0 with *pos, the
 * requests ahead of it (0: the first served by the next update; a request
 * whose class waits for its graph is passed over and goes back to the end),
 * or STEER_ENOENT (no request of id waits). O(queue). */
int steer_planner_queue_position(const steer_planner *p, steer_id id, uint32_t *pos);

/* Full graph builds since creation (nav.h steer_nav_cache_builds), and of
 * them those made by a plan, inside a tick (only when a build off the thread
 * could not start, or an update ran out of memory). */
uint64_t steer_planner_graph_builds(const steer_planner *p);
uint64_t steer_planner_tick_builds(const steer_planner *p);
/* Of the full builds, those made on the caller's thread (steer_planner_warm,
 * and the builds of steer_planner_tick_builds): nav.h steer_nav_cache_sync_builds. */
uint64_t steer_planner_sync_builds(const steer_planner *p);
/* The host restores a saved world: from now on warming builds graphs but no
 * longer makes their classes served at once (which classes are served, and
 * from when, is part of the saved state). Also set by steer_planner_load. */
void steer_planner_restoring(steer_planner *p);

/* ---- saving and loading ----------------------------------------------------
 *
 * The planner's state (every agent's GOTO record and the queue in its order)
 * as bytes, little-endian, format STEER_PLANNER_STATE_VERSION:
 *   "STPL", u32 version, u32 capacity (the world's), u32 n records, then n
 *   records by ascending slot: u32 id, u8 status, u8 reason, u8 partial,
 *   u8 target kind, f32 target x, y, u32 target agent, f32 node_radius,
 *   u8 cornering, f32 replan_distance, i32 path, u32 map version, f32 goal x, y
 *   (45 bytes); u32 m queued, m x u32 slots from the head of the queue; u8
 *   served radius classes (bit k: class k), u64 due tick per class (0 none,
 *   STEER_NAV_CLASSES of them; version 2 on: a version 1 state is read with
 *   every class served); per class (version 3 on) u32 map version at its first
 *   build, u32 map version of its mesh, u64 tick a rebuild is due (0 none),
 *   u32 map version of that rebuild; (version 4 on) u64 tick each class's
 *   landmarks are due (0 none), u8 classes whose plans use landmarks (bit k:
 *   class k); u8 1 when the queue's head has a plan in progress (version 3
 *   on), then its f32 start x, y, f32 goal x, y, f32 mesh goal x, y, f32 lead
 *   point x, y, u8 lead, u8 radius class, u32 expansions spent, u32 map
 *   version, u64 tick it began, u8 1 when it uses landmarks (version 4 on;
 *   51 bytes, 50 before); u64 FNV-1a of every byte before it.
 * Records are the agents in GOTO (status not NONE); the queue may name a slot
 * with no record (an agent that left GOTO while queued: it is skipped when
 * served). Not saved: the navigation graphs (a cache, rebuilt from the map on
 * the first plan that needs them, the same graph a live planner builds), the
 * last update's events, the statistics. The routes themselves are the agents'
 * paths, saved with the world. A planner loaded with the world it was saved
 * with continues exactly as the saved one would: same routes, events and
 * queue order, and steer_planner_hash equal. */

#define STEER_PLANNER_STATE_VERSION 4u

/* Exact bytes steer_planner_save writes now. */
size_t steer_planner_state_size(const steer_planner *p);
/* 0, or STEER_EINVAL when cap is short (*len, may be NULL, gets the bytes needed). */
int steer_planner_save(const steer_planner *p, uint8_t *buf, size_t cap, size_t *len);
/* Replaces p's state by the saved one (untrusted bytes: every count, slot,
 * enum and float is checked). 0, STEER_ECORRUPT (truncated, bad checksum,
 * inconsistent, or saved from a world of another capacity) or STEER_EVERSION
 * (an intact state of another format version); on error p is unchanged. */
int steer_planner_load(steer_planner *p, const uint8_t *buf, size_t len);
/* 64-bit hash of the same state (equal for equal saves). */
uint64_t steer_planner_hash(const steer_planner *p);

#endif /* STEER_PLANNER_H */

/* world.h: a fixed-capacity world of steered agents.
 *
 * Agents live in a dense list (arrays per field, swap-removed on despawn) behind
 * stable ids: an id holds a slot index and the slot's generation, so a stale id
 * never names a newer agent; a slot whose generation is used up is retired.
 * steer_world_step() runs in passes over all agents: rebuild the neighbour grid,
 * compute every agent's steering from the previous tick's state, integrate them
 * all, advance paths and emit events. A step allocates nothing and is
 * deterministic: the same seed and the same calls give bit-identical state. */
#ifndef STEER_WORLD_H
#define STEER_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include "map.h"
#include "path.h"
#include "steering.h"

typedef uint32_t steer_id; /* 0 is never an agent */

#define STEER_ID_INDEX_BITS 22u
#define STEER_ID_INDEX_MASK ((1u << STEER_ID_INDEX_BITS) - 1u)
#define STEER_MAX_CAPACITY  (1u << STEER_ID_INDEX_BITS) /* agents per world */
#define STEER_MAX_EVENTS    (3u * STEER_MAX_CAPACITY)   /* per step: a step emits at most 3 per agent */

/* Error codes: 0 is success, negatives are errors (see steer_strerror). */
typedef enum steer_error {
  STEER_OK = 0,
  STEER_EINVAL = -1,   /* an argument is out of range or not finite */
  STEER_ENOENT = -2,   /* no such agent (never existed or despawned) */
  STEER_EFULL = -3,    /* the world holds its maximum of agents or paths */
  STEER_EMODEL = -4,   /* the behaviour or cornering does not suit the movement model */
  STEER_ETARGET = -5,  /* the behaviour's target is missing or not a live agent */
  STEER_ENOMEM = -6,   /* creation failed to allocate */
  STEER_ECORRUPT = -7, /* state data corrupt or truncated (steer_world_load) */
  STEER_EVERSION = -8, /* state format version not supported (steer_world_load) */
  STEER_EBLOCKED = -9  /* a position, target or path point inside the map's geometry, or an
                          obstacle that would leave an agent nowhere free to go */
} steer_error;

const char *steer_strerror(int code);

typedef enum steer_model {
  STEER_MODEL_KINEMATIC = 0, /* velocity set directly (seed 003) */
  STEER_MODEL_DYNAMIC,       /* accelerations (seed 000, 001) */
  STEER_MODEL_HEADING,       /* forward along the heading, turn rate controlled (seed 004) */
  STEER_MODEL_COUNT
} steer_model;

typedef enum steer_behaviour_kind {
  STEER_BEHAVIOUR_NONE = 0,         /* come to rest and stay (every model) */
  STEER_BEHAVIOUR_SEEK,             /* target point or agent (every model) */
  STEER_BEHAVIOUR_FLEE,             /* target point or agent (kinematic, dynamic) */
  STEER_BEHAVIOUR_ARRIVE,           /* target point or agent (every model) */
  STEER_BEHAVIOUR_ALIGN,            /* target orientation, or an agent's (dynamic) */
  STEER_BEHAVIOUR_VELOCITY_MATCH,   /* target agent (dynamic) */
  STEER_BEHAVIOUR_FACE,             /* target point or agent (dynamic) */
  STEER_BEHAVIOUR_LOOK_WHERE_GOING, /* no target (dynamic) */
  STEER_BEHAVIOUR_PURSUE,           /* target agent (dynamic) */
  STEER_BEHAVIOUR_EVADE,            /* target agent (dynamic) */
  STEER_BEHAVIOUR_INTERPOSE,        /* two different target agents (dynamic) */
  STEER_BEHAVIOUR_WANDER,           /* no target (every model) */
  STEER_BEHAVIOUR_FOLLOW_PATH,      /* set with steer_world_set_path / follow_path */
  STEER_BEHAVIOUR_COUNT
} steer_behaviour_kind;

/* What a dynamic agent does with its orientation while its behaviour steers
 * only its velocity. */
typedef enum steer_facing {
  STEER_FACING_LOOK_WHERE_GOING = 0, /* default */
  STEER_FACING_NONE,                 /* stop rotating, keep the orientation */
  STEER_FACING_TARGET,               /* face the behaviour's target */
  STEER_FACING_COUNT
} steer_facing;

/* How separation from neighbours combines with the behaviour. */
typedef enum steer_combine {
  STEER_COMBINE_BLEND = 0, /* behaviour + separation_weight * separation, clipped */
  STEER_COMBINE_PRIORITY,  /* separation when it asks for anything, else the behaviour */
  STEER_COMBINE_COUNT
} steer_combine;

typedef enum steer_target_kind {
  STEER_TARGET_NONE = 0,
  STEER_TARGET_POINT, /* point (and orientation for align) */
  STEER_TARGET_AGENT, /* agent (and agent2 for interpose) */
  STEER_TARGET_KIND_COUNT
} steer_target_kind;

typedef struct steer_target {
  uint8_t kind;      /* steer_target_kind */
  vec2 point;        /* m */
  float orientation; /* rad, align's target when kind is POINT */
  steer_id agent;
  steer_id agent2; /* interpose only */
} steer_target;

/* What an agent does when it is found stuck (see steer_behaviour.stuck_time). */
typedef enum steer_stuck_reaction {
  STEER_STUCK_REPORT = 0, /* emit STUCK once per episode (again only after progress) */
  STEER_STUCK_NUDGE,      /* emit STUCK and push sideways (side from the agent's generator) */
  STEER_STUCK_GIVE_UP,    /* emit STUCK and stop (behaviour NONE) */
  STEER_STUCK_REACTION_COUNT
} steer_stuck_reaction;

/* When an arriving agent (arrive at a point, a "once" path's last node,
 * GOTO) is done (see steer_behaviour.arrival). */
typedef enum steer_arrival {
  STEER_ARRIVAL_POINT = 0, /* inside target_radius (arrive) or the path's radius of its last node */
  /* That, or touching (within STEER_SETTLE_GAP) an agent that is done at the
   * same goal (within the agent's own target or node radius), as an RTS
   * squad settles round its rally point. Done either way, the agent holds
   * where it is: it brakes, neither separating nor avoiding, and only bodies
   * pressing into it move it. Only avoiders (avoid_weight > 0, dynamic
   * model) settle by touch: the contact pass sees who touches whom. */
  STEER_ARRIVAL_SETTLE,
  /* Done inside the radius as POINT, but reached at full speed: the agent
   * seeks the point instead of braking for it (a client sending goal after
   * goal keeps it moving), and once done holds as SETTLE does, so it comes to
   * rest past the point (v^2 / 2a: 0.75 m at the default limits). Dynamic
   * model; the radius should be more than a tick's travel, or the agent
   * crosses it between two ticks and comes back. */
  STEER_ARRIVAL_PASS,
  STEER_ARRIVAL_COUNT
} steer_arrival;

#define STEER_SETTLE_GAP 0.05f /* m between two bodies that touch, for STEER_ARRIVAL_SETTLE */

typedef struct steer_behaviour {
  uint8_t kind;    /* steer_behaviour_kind */
  uint8_t facing;  /* steer_facing, dynamic model only */
  uint8_t combine; /* steer_combine */
  /* Separation considers at most this many nearest agents (8, capped at 32)
   * within separation_radius + own radius + the largest radius in the world
   * (the farthest any neighbour can push from); equal distances are ordered by
   * grid cell (rows by y, columns by x) and then dense index. */
  uint8_t max_neighbours;
  float separation_weight; /* 0 turns separation (and the neighbour query) off */
  steer_target target;
  steer_params params;
  /* Predictive avoidance of other agents (dynamic model; avoid.h): opt-in.
   * Neighbours are the same max_neighbours nearest within separation_radius +
   * own + largest radius as for separation (one query serves both). An
   * avoider keeps right of oncoming traffic (steer_avoid_lane), and after each
   * step a contact pass (contact.c) pushes overlapping avoiders apart, shared
   * by avoid_priority: bodies overlap by at most a few cm (test_avoid: 5 cm in
   * the circle swap and the doorway); they never press into geometry. */
  float avoid_weight;     /* 0 turns it off; the force is blended in with this weight (0) */
  float avoid_horizon;    /* s, collisions further ahead are ignored (3) */
  uint8_t avoid_priority; /* 0..255, higher takes a smaller share of each pair's avoidance (0) */
  /* Ticks between neighbour queries, 1..16 (1). Above 1 the agent keeps the
   * set of its nearest max_neighbours for that many ticks (each agent on its
   * own phase, from its slot) and reads their fresh positions and velocities
   * every tick; the set is dropped when any agent despawns. */
  uint8_t neighbour_period;
  /* Steering around the map's geometry (dynamic and kinematic models): a feeler
   * of lookahead seconds of the desired velocity. Bodies never enter geometry
   * whatever this is: the integration clips every move. */
  float wall_lookahead; /* s, 0 turns it off (1) */
  float wall_margin;    /* m, clearance the feeler keeps (0.25) */
  /* No progress toward the goal (target point or path node) by 0.1 m for
   * stuck_time seconds is a STUCK event (seek, arrive, pursue, follow path).
   * Unless the reaction is GIVE_UP, a path follower whose straight way to its
   * node is then blocked by the map (pushed back through a door after passing
   * its node) aims at the nearest of the 4 nodes before it that it can reach
   * in a straight line instead (a new episode, no nudge). */
  float stuck_time;       /* s, 0 turns detection off (0) */
  uint8_t stuck_reaction; /* steer_stuck_reaction (REPORT) */
  uint8_t arrival;        /* steer_arrival (POINT) */
} steer_behaviour;

/* A behaviour of the given kind with default parameters and no target. */
steer_behaviour steer_default_behaviour(steer_behaviour_kind kind);

typedef struct steer_agent_desc {
  uint8_t model; /* steer_model */
  steer_state state;
  steer_limits limits;
  steer_behaviour behaviour; /* FOLLOW_PATH is refused here: spawn, then set a path */
} steer_agent_desc;

steer_agent_desc steer_default_agent_desc(void);

/* Everything about one agent (what a query returns). */
typedef struct steer_agent_info {
  steer_id id;
  uint8_t model;
  uint8_t arrived;
  steer_state state;
  steer_limits limits;
  steer_behaviour behaviour;
  int32_t path; /* path handle, or -1 */
  steer_path_cursor cursor;
  uint32_t owner; /* opaque tag of the caller's (e.g. client id) */
} steer_agent_info;

typedef enum steer_event_type {
  STEER_EVENT_ARRIVED = 0,   /* entered target_radius of an arrive target (once per behaviour set);
                                a once path's end reports PATH_FINISHED instead */
  STEER_EVENT_WAYPOINT,      /* node = the node reached */
  STEER_EVENT_PATH_FINISHED, /* once path: last node reached */
  STEER_EVENT_REVERSED,      /* ping-pong: node = the end node it turned at */
  STEER_EVENT_STUCK,         /* no progress for stuck_time; node = the path node aimed at (0) */
  STEER_EVENT_TYPE_COUNT
} steer_event_type;

typedef struct steer_event {
  uint64_t tick; /* the tick during which it happened */
  steer_id agent;
  uint8_t type; /* steer_event_type */
  uint32_t node;
} steer_event;

/* What the world accepts (steer_world_create, _spawn, _set_limits,
 * _set_behaviour, _step); anything else is STEER_EINVAL, never a NaN or a
 * silent zero later. Wide enough for any game, narrow enough that no squared
 * length, prediction or division in a step leaves float range:
 *   world bounds and spawn positions     |x|, |y| <= STEER_MAX_COORD
 *   max_speed, max_acceleration,
 *   max_rotation, max_angular_acceleration in [STEER_MIN_RATE, STEER_MAX_RATE]
 *   radius                               in [0, STEER_MAX_DISTANCE]
 *   spawn velocity and rotation          finite (clipped to the limits)
 *   time_to_target, kinematic_time_to_target,
 *   align_time_to_target                 in [STEER_MIN_TIME, STEER_MAX_TIME]
 *   max_prediction                       in [0, STEER_MAX_TIME]
 *   slow_radius 0 or >= target_radius, panic_radius, wander_offset, wander_radius,
 *   separation_radius, turn_trigger_distance in [0, STEER_MAX_DISTANCE]
 *   align_target_radius <= align_slow_radius in [0, pi]
 *   wander_rate, path_recover_strength,
 *   separation_weight                    in [0, STEER_MAX_FACTOR]
 *   step dt                              in (0, STEER_MAX_DT]
 * The server's own ranges (PROTOCOL.md 5.5) lie well inside these. */
#define STEER_MAX_COORD    1e6f
#define STEER_MIN_RATE     1e-3f
#define STEER_MAX_RATE     1e4f
#define STEER_MIN_TIME     1e-3f
#define STEER_MAX_TIME     1e3f
#define STEER_MAX_DISTANCE 1e6f
#define STEER_MAX_FACTOR   1e4f
#define STEER_MAX_DT       1.0f

typedef struct steer_world_config {
  uint32_t max_agents;      /* capacity, <= STEER_MAX_CAPACITY (10000) */
  uint32_t max_paths;       /* path pool size (max_agents) */
  uint32_t max_path_points; /* points per path, <= STEER_PATH_MAX_POINTS (64) */
  uint32_t max_events;      /* events kept per step, <= STEER_MAX_EVENTS; more are dropped (4096) */
  vec2 min, max;            /* m, world bounds; agents are clamped inside (-500..500) */
  float cell_size;          /* m, neighbour grid cell (8) */
  uint64_t seed;            /* random seed (1) */
} steer_world_config;

steer_world_config steer_default_world_config(void);

typedef struct steer_world steer_world;

/* Returns NULL if the config is invalid or memory is short. */
steer_world *steer_world_create(const steer_world_config *cfg);
void steer_world_destroy(steer_world *w); /* accepts NULL */

int steer_world_spawn(steer_world *w, const steer_agent_desc *desc, uint32_t owner, steer_id *out_id);
int steer_world_despawn(steer_world *w, steer_id id);
int steer_world_set_behaviour(steer_world *w, steer_id id, const steer_behaviour *b);
int steer_world_set_limits(steer_world *w, steer_id id, const steer_limits *l);
/* Only the behaviour's parameters; everything else stays, its target
 * included, even a target agent that is gone (the agent then keeps resting as
 * its behaviour says, until given a new behaviour). Re-arms ARRIVED. */
int steer_world_set_params(steer_world *w, steer_id id, const steer_params *p);
/* Only the avoidance, wall feeler, stuck and arrival settings of src
 * (avoid_weight, avoid_horizon, avoid_priority, wall_lookahead, wall_margin,
 * stuck_time, stuck_reaction, arrival); the behaviour, its target and path
 * stay (a lost target agent too). Restarts stuck detection. */
int steer_world_set_tuning(steer_world *w, steer_id id, const steer_behaviour *src);
/* 1 if the agent's behaviour targets an agent (or, for interpose, two) of
 * which one is no longer alive; 0 otherwise or if there is no such agent. */
int steer_world_target_lost(const steer_world *w, steer_id id);
/* Behaviour NONE: come to rest. */
int steer_world_stop(steer_world *w, steer_id id);
int steer_world_get(const steer_world *w, steer_id id, steer_agent_info *out);
int steer_world_alive(const steer_world *w, steer_id id);

/* Paths live in a pool and are shared: a handle is >= 0. A path is freed when it
 * has been released and no agent follows it. */
int steer_world_path_create(steer_world *w, const vec2 *points, uint32_t count, float radius,
                            steer_path_mode mode, steer_cornering cornering);
int steer_world_path_release(steer_world *w, int path);
/* Start following a path from its node 0 (keeps the agent's other params). */
int steer_world_follow_path(steer_world *w, steer_id id, int path);
/* Create a path for one agent and follow it; the agent owns it. The agent's old
 * path is released first, so replacing an agent's own path succeeds even when the
 * pool is full; STEER_EFULL (and no change) only when the pool stays full. */
int steer_world_set_path(steer_world *w, steer_id id, const vec2 *points, uint32_t count, float radius,
                         steer_path_mode mode, steer_cornering cornering);
uint32_t steer_world_path_count(const steer_world *w);
/* The points and settings of a live path (e.g. an agent's info.path), valid
 * until the next mutation; STEER_EINVAL if the handle is not a live path. */
int steer_world_path_get(const steer_world *w, int path, steer_path *out);

void steer_world_step(steer_world *w, float dt);

/* Threads for the steering pass (pool.h): the pool is borrowed, not owned, and
 * must outlive its use by the world (or be replaced first; NULL: one thread).
 * The steering of an agent reads last tick's state and writes only its own
 * fields, and so does its integration (worlds over 2 048 agents), so the step
 * gives bit-identical results with any number of threads. Events and the grid
 * rebuild stay on the caller. */
struct steer_pool;
void steer_world_set_pool(steer_world *w, struct steer_pool *pool);

/* Vector batches in the steering pass (on by default where the build has
 * SSE2): agents of one kind steered four at a time (steering.h,
 * steer_arrive_look_x4). The results are bit-identical to the scalar path,
 * which on = 0 selects (the reference, for tests and benchmarks). */
void steer_world_set_simd(steer_world *w, int on);

/* Events of the last step; valid until the next step. */
const steer_event *steer_world_events(const steer_world *w, uint32_t *count);
uint64_t steer_world_events_dropped(const steer_world *w);

uint64_t steer_world_tick(const steer_world *w);
uint32_t steer_world_count(const steer_world *w);
uint32_t steer_world_capacity(const steer_world *w);
const steer_world_config *steer_world_get_config(const steer_world *w);

/* Read-only arrays over the dense list, valid until the next mutation. */
typedef struct steer_world_view {
  uint32_t count;
  const steer_id *id;
  const float *px, *py; /* m */
  const float *vx, *vy; /* m/s */
  const float *theta;   /* rad */
  const float *omega;   /* rad/s */
  const uint32_t *owner;
} steer_world_view;

steer_world_view steer_world_get_view(const steer_world *w);

/* Ids of agents strictly within radius of centre, nearest first, at most max (no
 * other cap: out holds max ids); returns the number written. Uses the agents'
 * current positions (after the last step and any spawns or despawns since);
 * equal distances are ordered as for separation. The neighbour grid is a cache
 * this may rebuild, so two queries on one world must not run concurrently. */
uint32_t steer_world_query_radius(const steer_world *w, vec2 centre, float radius, steer_id *out,
                                  uint32_t max);

/* The agents agent id's separation and avoidance read (steer_behaviour
 * max_neighbours): its nearest within separation_radius + its radius + the
 * largest radius, nearest first, at most max, for a developer's view of the
 * crowd; *reach (may be NULL) gets that distance. 0 when it neither separates
 * nor avoids; -1 when id is not alive. The step itself may read a set kept
 * from an earlier tick (neighbour_period). Rebuilds the grid cache as
 * steer_world_query_radius does. */
int steer_world_neighbours(const steer_world *w, steer_id id, steer_id *out, uint32_t max, float *reach);

/* The same agents in no particular order (the grid's cell order): cheaper. */
uint32_t steer_world_query_within(const steer_world *w, vec2 centre, float radius, steer_id *out,
                                  uint32_t max);

/* 64-bit hash of the whole simulation state: agents, paths, generators, tick, and
 * what decides the ids and path handles handed out next (slot generations, the
 * free-slot ring, the free-path stack). Two worlds with equal hashes behave the
 * same under the same calls. */
uint64_t steer_world_hash(const steer_world *w);

/* ---- the map (world_map.c) --------------------------------------------------
 *
 * The world's static geometry (map.h). Rules: a spawn position, a behaviour's
 * target point and a path's points must not lie inside a polygon or circle
 * (STEER_EBLOCKED), and a spawned body (or one grown by set_limits) must be
 * free of all geometry (STEER_EBLOCKED). After every step no body is closer
 * than its radius (minus 1 mm of float slack) to any geometry, and every
 * centre is inside the bounds. An obstacle added on top of agents moves each
 * of them to the nearest free point within 64 m (velocity zeroed); when one of
 * them has none the add is refused (STEER_EBLOCKED) and nothing changes, the
 * map's version included. */

int steer_world_add_obstacle(steer_world *w, uint32_t id, const steer_obstacle_desc *o, uint32_t *moved);
/* Adds every obstacle of src (in its order) as one change: the map's index is
 * built once, then the agents it lands on are moved as above. On an error
 * nothing changes and *failed is the index in src of the obstacle refused, or
 * steer_map_count(src) when none is to blame (an agent with nowhere to go:
 * STEER_EBLOCKED; STEER_ENOMEM). */
int steer_world_add_obstacles(steer_world *w, const steer_map *src, uint32_t *moved, uint32_t *failed);
int steer_world_remove_obstacle(steer_world *w, uint32_t id);
const steer_map *steer_world_map(const steer_world *w);
/* STUCK events emitted since creation (saved with the world). */
uint64_t steer_world_stuck_count(const steer_world *w);

/* ---- saving and loading (world_state.c) ----------------------------------
 *
 * A world's whole state as bytes in a fixed little-endian layout (format
 * version STEER_STATE_VERSION, described in world_state.c), ending in a 64-bit
 * checksum. Pure: the caller does the I/O. Caches (the neighbour grid, query
 * hints, the last step's events) are not saved; a loaded world rebuilds them
 * and continues bit-identically: same steer_world_hash, same results under the
 * same calls, same ids and path handles handed out next. */

#define STEER_STATE_VERSION 3u

/* Exact bytes steer_world_save writes for the world as it is now. */
size_t steer_world_state_size(const steer_world *w);

/* Writes the state into buf. *len (may be NULL) gets the bytes written, or the
 * bytes needed when cap is too small (then STEER_EINVAL and nothing useful in
 * buf). */
int steer_world_save(const steer_world *w, uint8_t *buf, size_t cap, size_t *len);

/* Creates a world from saved bytes, which are untrusted: every count, index,
 * enum and float is checked. Returns NULL with *err (may be NULL) set to
 * STEER_ECORRUPT (truncated, bad checksum, or inconsistent), STEER_EVERSION (an
 * intact state of another format version) or STEER_ENOMEM; never a half-made
 * world. The world's config (capacity, bounds, seed) is the saved one. */
steer_world *steer_world_load(const uint8_t *buf, size_t len, int *err);

#endif /* STEER_WORLD_H */

/* world_internal.h: the world's layout, shared by world.c (the store), world_tick.c (the
 * step) and world_state.c (save and load). Internal to the core: nothing outside
 * server/core includes it. The validity checks here are the ones the public API
 * applies to its arguments; loading a saved world applies the same ones. */
#ifndef STEER_WORLD_INTERNAL_H
#define STEER_WORLD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "grid.h"
#include "map.h"
#include "world.h"

#define GEN_MAX  ((1u << (32u - STEER_ID_INDEX_BITS)) - 1u) /* a slot retires after this */
#define NO_DENSE UINT32_MAX

/* One pool entry; its points live at pool_points + handle * max_path_points. */
typedef struct path_entry {
  uint32_t count;
  float radius;
  uint8_t mode, cornering;
  uint8_t in_use, released;
  uint32_t users; /* agents following it */
} path_entry;

/* What a steering pass decided for one agent; its meaning depends on the model:
 * dynamic (ax, ay, angular acc), kinematic (vx, vy, rotation), heading
 * (rotation, speed, unused). */
typedef struct command3 {
  float a, b, c;
} command3;

/* What the vector path's batches read of a batchable agent (world_batch_*,
 * batch.c), a cache of its limits and behaviour kept by world_batch_refresh:
 * the steering of a batch reads this record (48 bytes) instead of the
 * behaviour (120) and the limits. k[] by batch kind: arrive + look where
 * going: time_to_target, target_radius, slow_radius, align_target_radius,
 * align_slow_radius, align_time_to_target, target point x, y; wander:
 * wander_rate, wander_offset, wander_radius, align_target_radius,
 * align_slow_radius, align_time_to_target; heading path follower:
 * turn_trigger_distance. */
typedef struct world_batch_rec {
  float max_speed, max_acceleration, max_rotation, max_angular_acceleration;
  float k[8];
} world_batch_rec;

/* Batch kinds (w->bkind's low bits): a dynamic agent arriving at a point and
 * looking where it goes; a dynamic wanderer; a heading-model path follower;
 * BATCH_NONE for the rest (the scalar path). */
enum { BATCH_NONE = 0, BATCH_ARRIVE_LOOK, BATCH_WANDER, BATCH_PATH_HEADING };
#define BATCH_KIND_MASK 3u
/* Flags of w->bkind: the behaviour reads neighbours (separation or
 * avoidance); it watches for being stuck (stuck_time > 0). An agent of a
 * batch kind with neither is "lean": without a map, its whole step is the
 * batch's arithmetic (world_batch_lean). */
#define BATCH_NEIGHBOURS 4u
#define BATCH_STUCK      8u

/* What the events pass looks at for an agent (w->ekind, written by the vector
 * path's steering pass): everything (the scalar code, from the behaviour);
 * nothing (no path, no arrival to detect, no stuck detection); a path
 * follower's node (w->er: turn_trigger_distance); an arrival at a point
 * (w->ept, w->er: target_radius). */
enum { EV_GENERAL = 0, EV_NONE, EV_PATH, EV_ARRIVE };

/* world_state.c saves every field except the caches, which loading rebuilds:
 * radius, cmd, nhint, the grid and its flag, separating, max_radius and the
 * last step's events. A field added here must be saved there too (and the
 * format version raised), or restored worlds stop matching. */
struct steer_world {
  steer_world_config cfg;
  uint32_t count;
  uint64_t tick;
  steer_rng rng;

  /* dense, per agent */
  steer_id *id;
  uint32_t *owner;
  uint8_t *model;
  uint8_t *arrived;
  float *px, *py, *vx, *vy, *theta, *omega;
  float *wander; /* rad, wander orientation */
  steer_rng *arng;
  steer_limits *limits;
  float *radius; /* m, copy of limits[].radius: neighbours' radii, read by separation */
  steer_behaviour *behaviour;
  int32_t *path;
  steer_path_cursor *cursor;
  command3 *cmd; /* scratch written by the steering pass */
  /* Scratch written by the vector path's steering pass for the same step's
   * events pass (world_tick.c, pass_events), so that it need not read the
   * behaviours: what to look at (EV_*), and an arriving agent's target point
   * and radius, or a path follower's turn trigger distance (r). */
  uint8_t *ekind;
  vec2 *ept;
  float *er;
  float *nhint; /* m^2, last separation query's max-th distance squared (0: none); a guess, not state */
  /* Caches of model, behaviour and limits for the vector path (world_batch_rec
   * above), kept by world_batch_refresh wherever those change: the batch
   * kind and flags, and the record (valid when the kind is not BATCH_NONE). */
  uint8_t *bkind;
  world_batch_rec *brec;

  /* slots */
  uint32_t *slot_dense;
  uint16_t *slot_gen;
  uint32_t *free_ring; /* FIFO of free slots: reuse as late as possible */
  uint32_t free_head, free_count;

  /* paths */
  path_entry *paths;
  vec2 *path_points;
  uint32_t *path_free; /* stack of free handles */
  uint32_t path_free_count, path_live;

  steer_grid grid;
  uint8_t grid_stale;       /* not built on the current positions and dense list */
  uint32_t separating;      /* agents with separation on: the grid query runs for them */
  float max_radius;         /* m, largest body radius of any agent (widens separation queries) */
  uint8_t max_radius_stale; /* the agent with the largest radius left or shrank */

  steer_event *events;
  uint32_t event_count;
  uint64_t events_dropped;

  struct steer_pool *pool; /* borrowed (steer_world_set_pool): splits the steering pass; NULL: one thread */
  uint8_t scalar_only;     /* steer_world_set_simd(w, 0): no vector batches (the reference path) */

  /* the map and stuck detection (world_map.c), saved */
  steer_map *map;
  float *stuck_best;    /* m, per agent: nearest it has come to its goal this episode */
  float *stuck_timer;   /* s, per agent: time since it last made progress */
  uint8_t *stuck_flag;  /* per agent: STUCK reported in this episode */
  uint16_t *akey;       /* per agent, a cache: 0 no avoidance, else 1 + avoid_priority (the grid's tag) */
  uint32_t avoiding;    /* agents with avoid_weight > 0: the grid copies velocities for them */
  uint8_t map_live;     /* the map holds geometry (a cache of steer_map_count > 0) */
  uint32_t stuck_watch; /* agents with stuck_time > 0 (the tick reads no behaviour when 0) */
  /* Kept neighbour sets (neighbour_period > 1), saved: per agent up to
   * WORLD_NLIST dense indices, valid while nlist_stamp[d] == nepoch. */
  uint32_t *nlist; /* allocated when first needed */
  uint8_t *nlist_n;
  uint32_t *nlist_stamp;
  uint32_t nepoch;
  uint64_t stuck_count;
  /* Agents whose behaviour targets another agent (reads its state while
   * steering), a cache: with none the vector path integrates each block right
   * after steering it (world_tick.c, steer_range), since no agent then reads
   * another's position, velocity or orientation during the steering pass. */
  uint32_t readers;
  /* Kept candidate lists of the neighbour query (grid.h), a cache: not saved. */
  steer_grid_lists nbr;
  /* The contact pass (contact.c), a cache of one tick (never saved): each
   * avoider's contact candidates, noted in the steering pass and consumed by
   * the pass after integration; allocated when an agent first avoids. */
  uint32_t *ctc;      /* WORLD_CONTACT_MAX dense indices per agent */
  uint8_t *ctc_n;     /* per agent; all 0 between steps */
  uint8_t *ctc_moved; /* scratch per agent: the pass iteration (+ 1) it last moved in; all 0 between steps */
  uint32_t *ctc_act;  /* scratch: the agents with candidates */
  float *ctc_disp;    /* scratch: their displacements (x, y) */
};

static inline uint16_t avoid_key(const steer_behaviour *b) {
  return b->avoid_weight > 0.0f ? (uint16_t)(1u + b->avoid_priority) : 0u;
}

/* Whether an agent's behaviour reads another agent's live state (its target). */
static inline uint32_t reads_agents(const steer_behaviour *b) { return b->target.kind == STEER_TARGET_AGENT; }

/* Whether an agent's behaviour reads the neighbour grid. */
#define SEPARATION_MAX_NEIGHBOURS 32u /* max_neighbours' cap: the step's scratch arrays */

static inline int needs_neighbours(const steer_behaviour *b) {
  return b->separation_weight > 0.0f || b->avoid_weight > 0.0f;
}

/* Where agent d is going, when it arrives at a point: an arrive behaviour's
 * point target, or a "once" path's last node; and the radius it is done
 * within. 0 for the others. */
static inline int arrival_goal(const steer_world *w, uint32_t d, vec2 *goal, float *within) {
  const steer_behaviour *b = &w->behaviour[d];
  if (b->kind == STEER_BEHAVIOUR_ARRIVE && b->target.kind == STEER_TARGET_POINT) {
    *goal = b->target.point;
    *within = b->params.target_radius;
    return 1;
  }
  if (b->kind == STEER_BEHAVIOUR_FOLLOW_PATH && w->path[d] >= 0) {
    const path_entry *e = &w->paths[w->path[d]];
    if (e->mode != STEER_PATH_ONCE)
      return 0;
    *goal = w->path_points[(size_t)w->path[d] * w->cfg.max_path_points + e->count - 1u];
    *within = e->radius;
    return 1;
  }
  return 0;
}

/* Whether agent d, arriving at a point, is done (ARRIVED, or its path
 * finished). */
static inline int arrival_done(const steer_world *w, uint32_t d) {
  return w->behaviour[d].kind == STEER_BEHAVIOUR_FOLLOW_PATH ? w->cursor[d].finished : w->arrived[d];
}

/* An agent done under STEER_ARRIVAL_SETTLE or PASS holds where it is: it
 * brakes, neither separating nor avoiding, and only the contact pass moves it
 * (a squad packed round its point would otherwise keep pushing itself about,
 * and one that passed its point would turn back to it). */
static inline int world_holds(const steer_world *w, uint32_t d) {
  vec2 goal;
  float within;
  return w->behaviour[d].arrival != STEER_ARRIVAL_POINT && arrival_done(w, d) &&
         arrival_goal(w, d, &goal, &within);
}

/* ---- world_map.c: geometry, avoidance and stuck passes of the tick -------- */

/* Linear acceleration o of dynamic agent d turned by agent and wall avoidance;
 * pos/n are its neighbours (positions in the grid's cell order) when it has
 * queried them. */
vec2 world_avoid_dynamic(const steer_world *w, uint32_t d, const steer_state *s, vec2 o, const uint32_t *pos,
                         uint32_t n, float dt);
/* A kinematic agent's velocity turned away from walls. */
vec2 world_avoid_kinematic(const steer_world *w, uint32_t d, const steer_state *s, vec2 vel);
/* Clips agent d's move from p0 to s->position against the map. */
void world_collide(const steer_world *w, uint32_t d, vec2 p0, steer_state *s);
/* Stuck bookkeeping of agent d after it moved; may emit STUCK. */
void world_stuck(steer_world *w, uint32_t d, float dt);
/* Resets agent d's stuck episode (new goal). */
void world_stuck_reset(steer_world *w, uint32_t d);
/* STEER_EBLOCKED when a behaviour's target point is inside the geometry. */
int world_target_blocked(const steer_world *w, const steer_behaviour *b);
int world_points_blocked(const steer_world *w, const vec2 *points, uint32_t count);
/* Whether a body of radius r at p is free of the map (with 1 mm slack). */
int world_body_free(const steer_world *w, vec2 p, float r);
void world_emit(steer_world *w, steer_id agent, uint8_t type, uint32_t node);
/* Allocates the kept neighbour sets and the contact lists if b needs them (0
 * or STEER_ENOMEM). */
int world_nlist_need(steer_world *w, const steer_behaviour *b);

/* ---- batch.c: the vector path's lean batches ------------------------------ */

/* Recomputes agent d's w->bkind and w->brec from its model, behaviour and
 * limits; called wherever one of those changes (and for every agent when a
 * world is loaded). */
void world_batch_refresh(steer_world *w, uint32_t d);
/* The lanes one lean batch takes: 8 where the processor has AVX (checked
 * once at run time), else 4. world_batch_set_avx(0) forces the four lanes
 * (tests; returns the previous setting; 1 gives AVX only where supported). */
uint32_t world_batch_width(void);
int world_batch_avx_supported(void);
int world_batch_set_avx(int on);
/* Steers, integrates and prechecks the events of n (1..world_batch_width())
 * lean agents dd[] of batch kind `kind` (all with bkind == kind: no flags),
 * in a world without a map, as the scalar path would to the bit (the fused
 * step, steer_range). Returns a bit per lane it did; the others (outside the
 * vector path's exact range) are left untouched for the scalar path. */
unsigned world_batch_lean(steer_world *w, float dt, int kind, const uint32_t *dd, uint32_t n);
/* The end of a fused quad of dynamic agents dd[] of batch kind `kind`
 * (arrive + look, or wander) whose outputs o[] are final, in a world
 * without a map: steer_integrate_dynamic, integrate_store, events_mark and
 * events_precheck, as the scalar path to the bit. Returns a bit per agent
 * it did; the others (stuck detection, outside the exact range) are left
 * untouched. */
unsigned world_batch_finish_dynamic(steer_world *w, float dt, int kind, const uint32_t dd[4],
                                    const steer_output o[4]);

/* ---- contact.c: the contact pass after integration -------------------------- */

#define WORLD_CONTACT_MAX 6u /* contact candidates per agent */

struct steer_avoid_set; /* avoid.h */

/* Allocates the contact lists if b avoids (0 or STEER_ENOMEM); frees them. */
int world_contact_need(steer_world *w, const steer_behaviour *b);
void world_contact_free(steer_world *w);
/* Notes agent d's contact candidates among its n neighbours nb (pos: their
 * places in the grid's cell order), nearest first. */
void world_contact_note(const steer_world *w, uint32_t d, const struct steer_avoid_set *nb,
                        const uint32_t *pos, uint32_t n, float dt);
/* Pushes overlapping avoiders apart (after integration), clipped to the map. */
void world_contact(steer_world *w, float dt);

/* ---- validation (shared with loading) ----------------------------------- */

/* What steer_world_create accepts (max_paths 0 means max_agents). */
static inline int coord_ok(float v) { return isfinite(v) && v >= -STEER_MAX_COORD && v <= STEER_MAX_COORD; }

static inline int world_config_valid(const steer_world_config *cfg) {
  return cfg && cfg->max_agents > 0 && cfg->max_agents <= STEER_MAX_CAPACITY && cfg->max_path_points > 0 &&
         cfg->max_path_points <= STEER_PATH_MAX_POINTS && coord_ok(cfg->min.x) && coord_ok(cfg->min.y) &&
         coord_ok(cfg->max.x) && coord_ok(cfg->max.y) && cfg->max.x > cfg->min.x && cfg->max.y > cfg->min.y &&
         cfg->cell_size > 0.0f && isfinite(cfg->cell_size) && cfg->max_events <= STEER_MAX_EVENTS;
}

static inline int finite_all(const float *f, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(f[i]))
      return 0;
  return 1;
}

/* lo <= v <= hi, and not NaN (every comparison with NaN is false). */
static inline int in_range(float v, float lo, float hi) { return v >= lo && v <= hi; }

/* The ranges of world.h: finite and sane, so that no step produces a NaN. */
static inline int valid_limits(const steer_limits *l) {
  return in_range(l->max_speed, STEER_MIN_RATE, STEER_MAX_RATE) &&
         in_range(l->max_acceleration, STEER_MIN_RATE, STEER_MAX_RATE) &&
         in_range(l->max_rotation, STEER_MIN_RATE, STEER_MAX_RATE) &&
         in_range(l->max_angular_acceleration, STEER_MIN_RATE, STEER_MAX_RATE) &&
         in_range(l->radius, 0.0f, STEER_MAX_DISTANCE);
}

static inline int valid_params(const steer_params *p) {
  return in_range(p->time_to_target, STEER_MIN_TIME, STEER_MAX_TIME) &&
         in_range(p->kinematic_time_to_target, STEER_MIN_TIME, STEER_MAX_TIME) &&
         in_range(p->align_time_to_target, STEER_MIN_TIME, STEER_MAX_TIME) &&
         in_range(p->target_radius, 0.0f, STEER_MAX_DISTANCE) &&
         (p->slow_radius == 0.0f || in_range(p->slow_radius, p->target_radius, STEER_MAX_DISTANCE)) &&
         in_range(p->align_target_radius, 0.0f, STEER_PI) &&
         in_range(p->align_slow_radius, p->align_target_radius, STEER_PI) &&
         in_range(p->max_prediction, 0.0f, STEER_MAX_TIME) &&
         in_range(p->panic_radius, 0.0f, STEER_MAX_DISTANCE) &&
         in_range(p->wander_offset, 0.0f, STEER_MAX_DISTANCE) &&
         in_range(p->wander_radius, 0.0f, STEER_MAX_DISTANCE) &&
         in_range(p->wander_rate, 0.0f, STEER_MAX_FACTOR) &&
         in_range(p->separation_radius, 0.0f, STEER_MAX_DISTANCE) &&
         in_range(p->turn_trigger_distance, 0.0f, STEER_MAX_DISTANCE) &&
         in_range(p->path_recover_strength, 0.0f, STEER_MAX_FACTOR);
}

#define WORLD_NLIST 32u /* = the separation cap */

/* The avoidance, wall and stuck fields of a behaviour. */
static inline int valid_avoidance(const steer_behaviour *b) {
  /* The ranges of world.h: beyond them a step could produce a NaN. */
  return b->neighbour_period >= 1 && b->neighbour_period <= 16 &&
         in_range(b->avoid_weight, 0.0f, STEER_MAX_FACTOR) &&
         in_range(b->avoid_horizon, STEER_MIN_TIME, STEER_MAX_TIME) &&
         in_range(b->wall_lookahead, 0.0f, STEER_MAX_TIME) &&
         in_range(b->wall_margin, 0.0f, STEER_MAX_DISTANCE) &&
         in_range(b->stuck_time, 0.0f, STEER_MAX_TIME) && b->stuck_reaction < STEER_STUCK_REACTION_COUNT &&
         b->arrival < STEER_ARRIVAL_COUNT;
}

/* Which behaviours each model can run (bit per steer_behaviour_kind). */
static const uint32_t model_behaviours[STEER_MODEL_COUNT] = {
    [STEER_MODEL_KINEMATIC] = (1u << STEER_BEHAVIOUR_NONE) | (1u << STEER_BEHAVIOUR_SEEK) |
                              (1u << STEER_BEHAVIOUR_FLEE) | (1u << STEER_BEHAVIOUR_ARRIVE) |
                              (1u << STEER_BEHAVIOUR_WANDER) | (1u << STEER_BEHAVIOUR_FOLLOW_PATH),
    [STEER_MODEL_DYNAMIC] = (1u << STEER_BEHAVIOUR_COUNT) - 1u,
    [STEER_MODEL_HEADING] = (1u << STEER_BEHAVIOUR_NONE) | (1u << STEER_BEHAVIOUR_SEEK) |
                            (1u << STEER_BEHAVIOUR_ARRIVE) | (1u << STEER_BEHAVIOUR_WANDER) |
                            (1u << STEER_BEHAVIOUR_FOLLOW_PATH),
};

static inline int needs_agent_target(uint8_t kind) {
  return kind == STEER_BEHAVIOUR_PURSUE || kind == STEER_BEHAVIOUR_EVADE ||
         kind == STEER_BEHAVIOUR_VELOCITY_MATCH || kind == STEER_BEHAVIOUR_INTERPOSE;
}

static inline int needs_point_or_agent(uint8_t kind) {
  return kind == STEER_BEHAVIOUR_SEEK || kind == STEER_BEHAVIOUR_FLEE || kind == STEER_BEHAVIOUR_ARRIVE ||
         kind == STEER_BEHAVIOUR_FACE || kind == STEER_BEHAVIOUR_ALIGN;
}

/* The agent store's lookups, shared by world.c and world_tick.c. */
static inline uint32_t world_dense_of(const steer_world *w, steer_id id) {
  uint32_t slot = id & STEER_ID_INDEX_MASK;
  if (id == 0 || slot >= w->cfg.max_agents)
    return NO_DENSE;
  uint32_t d = w->slot_dense[slot];
  if (d == NO_DENSE || w->id[d] != id)
    return NO_DENSE;
  return d;
}

static inline steer_path world_path_view(const steer_world *w, int32_t h) {
  const path_entry *e = &w->paths[h];
  steer_path p;
  p.points = w->path_points + (size_t)h * w->cfg.max_path_points;
  p.count = e->count;
  p.radius = e->radius;
  p.mode = e->mode;
  p.cornering = e->cornering;
  return p;
}

static inline steer_state world_state_of(const steer_world *w, uint32_t d) {
  steer_state s;
  s.position = v2(w->px[d], w->py[d]);
  s.orientation = w->theta[d];
  s.velocity = v2(w->vx[d], w->vy[d]);
  s.rotation = w->omega[d];
  return s;
}

/* The neighbour grid and the kept candidate lists on the current positions
 * (threaded: from the step, the pool is free; queries between steps build it
 * on the calling thread). world_tick.c. */
void world_grid_rebuild(steer_world *w, int threaded);

#endif /* STEER_WORLD_INTERNAL_H */

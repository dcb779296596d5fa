/* demo.c: the demo world (see demo.h). */
#include "demo.h"

#include <string.h>

#include "map_file.h"

/* maps/demo.json, compiled in (server/embed_text.cmake). */
extern const char steerd_demo_level_json[];
extern const size_t steerd_demo_level_json_len;

#define DEMO_HALF_SIZE 50.0f /* m: the demo plays in a square around the origin */
#define CATCH_DISTANCE 1.5f  /* m: the tagger touches the runner */
#define TAGGER_SPEED   3.5f  /* m/s: a little faster than the runner, so catches happen */
#define RUNNER_SPEED   3.0f  /* m/s */
#define LEASH_OUT      55.0f /* m from the centre: a wanderer turns home */
#define LEASH_IN       25.0f /* m from the centre: it wanders again */

/* The crowds: where they gather on each side of the doorway, and their lanes. */
#define CROWD_WEST_X0  80.0f
#define CROWD_WEST_X1  96.0f
#define CROWD_EAST_X0  104.0f
#define CROWD_EAST_X1  120.0f
#define CROWD_Y0       -10.0f
#define CROWD_Y1       6.0f
#define CROWD_APPROACH 3.0f  /* m before and after the partition: the path's door points */
#define CROWD_LANE     0.75f /* m off the doorway's middle: each way keeps to its right */
#define CROWD_RADIUS   0.4f  /* m, a pedestrian */
#define CROWD_STUCK    15.0f /* s without progress is reported (they queue at the door) */
#define GOTO_EVERY     30u   /* updates between looks at the GOTO NPCs (1 s at 30 Hz) */
#define GOTO_THERE     1.0f  /* m from its spot: an NPC has arrived */

/* Where the GOTO NPCs go: spots in each room (one inside the U-shaped alcove)
 * and the corridor. */
static const vec2 goto_west[] = {{66, 26}, {80, -36}, {70, -8}, {94, 26}, {90, -30}};
static const vec2 goto_east[] = {{106, 26}, {134, 26}, {124, -23}, {136, -36}, {112, -30}};
static const vec2 goto_corridor = {100, 36};

static vec2 random_point(steerd_demo *d) {
  /* y drawn first: what gcc did with the two draws as arguments of one call,
   * whose order C leaves unspecified (clang drew x first: another demo world). */
  float y = steer_rng_range(&d->rng, d->min.y, d->max.y);
  float x = steer_rng_range(&d->rng, d->min.x, d->max.x);
  return v2(x, y);
}

static void group_begin(steerd_demo *d, const char *name) {
  if (d->group_count >= STEERD_DEMO_MAX_GROUPS)
    return;
  steerd_demo_group *g = &d->groups[d->group_count++];
  g->name = name;
  g->first = d->id_count;
  g->count = 0;
}

static int spawn_desc(steerd_demo *d, steer_world *w, const steer_agent_desc *desc, steer_id *out) {
  if (d->id_count >= sizeof(d->ids) / sizeof(d->ids[0]))
    return STEER_EFULL;
  steer_id id;
  int rc = steer_world_spawn(w, desc, STEERD_DEMO_OWNER, &id);
  if (rc != STEER_OK)
    return rc;
  d->ids[d->id_count++] = id;
  d->groups[d->group_count - 1].count++;
  if (out)
    *out = id;
  return STEER_OK;
}

static int spawn(steerd_demo *d, steer_world *w, steer_model model, vec2 at, float orientation,
                 const steer_behaviour *b, steer_id *out) {
  steer_agent_desc desc = steer_default_agent_desc();
  desc.model = (uint8_t)model;
  desc.state.position = at;
  desc.state.orientation = orientation;
  if (b)
    desc.behaviour = *b;
  return spawn_desc(d, w, &desc, out);
}

static steer_behaviour point_behaviour(steer_behaviour_kind kind, vec2 p) {
  steer_behaviour b = steer_default_behaviour(kind);
  b.target.kind = STEER_TARGET_POINT;
  b.target.point = p;
  return b;
}

static steer_behaviour agent_behaviour(steer_behaviour_kind kind, steer_id a, steer_id a2) {
  steer_behaviour b = steer_default_behaviour(kind);
  b.target.kind = STEER_TARGET_AGENT;
  b.target.agent = a;
  b.target.agent2 = a2;
  return b;
}

#define TRY(expr)                                                                                            \
  do {                                                                                                       \
    int rc_ = (expr);                                                                                        \
    if (rc_ != STEER_OK)                                                                                     \
      return rc_;                                                                                            \
  } while (0)

static void set_speed(steer_world *w, steer_id id, float max_speed) {
  steer_agent_info info;
  if (steer_world_get(w, id, &info) != STEER_OK)
    return;
  info.limits.max_speed = max_speed;
  steer_world_set_limits(w, id, &info.limits);
}

static int patrol(steerd_demo *d, steer_world *w, const char *name, const vec2 *pts, uint32_t n,
                  steer_path_mode mode, steer_cornering corner, steer_model model) {
  steer_id id;
  group_begin(d, name);
  vec2 dir = v2_sub(pts[1], pts[0]);
  TRY(spawn(d, w, model, pts[0], steer_orientation_of(dir), NULL, &id));
  return steer_world_set_path(w, id, pts, n, 1.0f, mode, corner);
}

int steerd_demo_in_level(vec2 p) {
  return p.x > STEERD_DEMO_LEVEL_MIN_X && p.x < STEERD_DEMO_LEVEL_MAX_X && p.y > STEERD_DEMO_LEVEL_MIN_Y &&
         p.y < STEERD_DEMO_LEVEL_MAX_Y;
}

/* A point where the crowd of the east room (east 1) or the west room gathers. */
static vec2 crowd_point(steerd_demo *d, int east) {
  float y = steer_rng_range(&d->rng, CROWD_Y0, CROWD_Y1);
  float x = east ? steer_rng_range(&d->rng, CROWD_EAST_X0, CROWD_EAST_X1)
                 : steer_rng_range(&d->rng, CROWD_WEST_X0, CROWD_WEST_X1);
  return v2(x, y);
}

/* Sends a crowd agent through the doorway to a point in the other room: on
 * its right-hand lane (eastward is -y, westward +y), so the two ways pass. */
static int crowd_cross(steerd_demo *d, steer_world *w, steer_id id, int to_east) {
  float lane = to_east ? -CROWD_LANE : CROWD_LANE;
  vec2 pts[3];
  pts[0] = v2(to_east ? STEERD_DEMO_DOOR_X0 - CROWD_APPROACH : STEERD_DEMO_DOOR_X1 + CROWD_APPROACH, lane);
  pts[1] = v2(to_east ? STEERD_DEMO_DOOR_X1 + CROWD_APPROACH : STEERD_DEMO_DOOR_X0 - CROWD_APPROACH, lane);
  pts[2] = crowd_point(d, to_east);
  return steer_world_set_path(w, id, pts, 3, 1.2f, STEER_PATH_ONCE, STEER_CORNER_NONE);
}

static int crowd(steerd_demo *d, steer_world *w, int east) {
  group_begin(d, east ? "crowd from the east room (avoid)" : "crowd from the west room (avoid)");
  for (int i = 0; i < STEERD_DEMO_CROWD; i++) {
    /* Five rows of four, 4 m apart, the front row 4 m from the partition. */
    float dx = 4.0f + 4.0f * (float)(i / 5), y = CROWD_Y0 + 2.0f + 3.5f * (float)(i % 5);
    vec2 at = v2(east ? STEERD_DEMO_DOOR_X1 + dx : STEERD_DEMO_DOOR_X0 - dx, y);
    steer_agent_desc a = steer_default_agent_desc();
    a.model = STEER_MODEL_DYNAMIC;
    a.state.position = at;
    a.state.orientation = east ? STEER_PI : 0.0f;
    a.limits.radius = CROWD_RADIUS;
    a.limits.max_speed = steer_rng_range(&d->rng, 1.2f, 1.8f);
    a.limits.max_acceleration = 4.0f;
    a.behaviour = point_behaviour(STEER_BEHAVIOUR_ARRIVE, at);
    a.behaviour.params.target_radius = 0.5f;
    a.behaviour.params.slow_radius = 2.0f;
    a.behaviour.params.separation_radius = 5.0f;
    a.behaviour.max_neighbours = 10;
    a.behaviour.avoid_weight = 1.0f;
    a.behaviour.avoid_horizon = 1.0f; /* a dense counterflow: fewer STUCK here than with the default 3 s */
    a.behaviour.stuck_time = CROWD_STUCK;
    a.behaviour.stuck_reaction = STEER_STUCK_REPORT;
    steer_id id;
    TRY(spawn_desc(d, w, &a, &id));
    TRY(crowd_cross(d, w, id, !east));
  }
  return STEER_OK;
}

/* The level and its crowds, when the world's bounds hold it. */
static int level(steerd_demo *d, steer_world *w) {
  const steer_world_config *c = steer_world_get_config(w);
  if (c->min.x > STEERD_DEMO_LEVEL_MIN_X || c->min.y > STEERD_DEMO_LEVEL_MIN_Y ||
      c->max.x < STEERD_DEMO_LEVEL_MAX_X || c->max.y < STEERD_DEMO_LEVEL_MAX_Y)
    return STEER_OK;
  char why[256];
  if (steerd_map_text_load(steerd_demo_level_json, steerd_demo_level_json_len, w, why, sizeof why) != 0)
    return STEER_EINVAL; /* the file is checked by test_demo; here the map was not empty */
  d->level = 1;
  TRY(crowd(d, w, 0));
  return crowd(d, w, 1);
}

void steerd_demo_resume(steerd_demo *d) {
  d->min = v2(-DEMO_HALF_SIZE, -DEMO_HALF_SIZE);
  d->max = v2(DEMO_HALF_SIZE, DEMO_HALF_SIZE);
}

int steerd_demo_create(steerd_demo *d, steer_world *w, uint64_t seed) {
  return steerd_demo_create_ex(d, w, seed, 0);
}

int steerd_demo_create_ex(steerd_demo *d, steer_world *w, uint64_t seed, unsigned flags) {
  memset(d, 0, sizeof(*d));
  steer_rng_seed(&d->rng, seed);
  steerd_demo_resume(d);

  /* Patrols: one per cornering mode, plus a dynamic and a kinematic one. */
  static const vec2 square[] = {{-40, -40}, {-10, -40}, {-10, -10}, {-40, -10}};
  static const vec2 zigzag[] = {{10, -45}, {25, -30}, {40, -45}, {45, -25}, {30, -15}};
  static const vec2 line[] = {{-45, 5}, {-25, 5}, {-25, 20}, {-45, 20}};
  static const vec2 triangle[] = {{10, 10}, {40, 10}, {25, 35}};
  static const vec2 diagonal[] = {{-45, 45}, {-5, 30}};
  TRY(patrol(d, w, "patrol ping-pong arc (heading)", zigzag, 5, STEER_PATH_PINGPONG, STEER_CORNER_ARC,
             STEER_MODEL_HEADING));
  TRY(patrol(d, w, "patrol loop arc (heading)", square, 4, STEER_PATH_LOOP, STEER_CORNER_ARC,
             STEER_MODEL_HEADING));
  TRY(patrol(d, w, "patrol loop lazy (heading)", line, 4, STEER_PATH_LOOP, STEER_CORNER_LAZY,
             STEER_MODEL_HEADING));
  TRY(patrol(d, w, "patrol ping-pong none (dynamic)", triangle, 3, STEER_PATH_PINGPONG, STEER_CORNER_NONE,
             STEER_MODEL_DYNAMIC));
  TRY(patrol(d, w, "patrol ping-pong none (kinematic)", diagonal, 2, STEER_PATH_PINGPONG, STEER_CORNER_NONE,
             STEER_MODEL_KINEMATIC));

  /* Tag: a pursuer and an evader that swap roles on a catch. */
  steer_behaviour none = steer_default_behaviour(STEER_BEHAVIOUR_NONE);
  group_begin(d, "pursue / evade (tag)");
  TRY(spawn(d, w, STEER_MODEL_DYNAMIC, v2(0, 40), 0.0f, &none, &d->tagger));
  TRY(spawn(d, w, STEER_MODEL_DYNAMIC, v2(20, 40), 0.0f, &none, &d->runner));
  set_speed(w, d->tagger, TAGGER_SPEED);
  set_speed(w, d->runner, RUNNER_SPEED);
  steer_behaviour b = agent_behaviour(STEER_BEHAVIOUR_PURSUE, d->runner, 0);
  TRY(steer_world_set_behaviour(w, d->tagger, &b));
  b = agent_behaviour(STEER_BEHAVIOUR_EVADE, d->tagger, 0);
  b.params.panic_radius = 12.0f;
  TRY(steer_world_set_behaviour(w, d->runner, &b));

  /* Wanderers in every model; two of them are the interposer's pair. */
  steer_behaviour wander = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
  steer_id wa, wb, wc;
  group_begin(d, "wander (dynamic)");
  TRY(spawn(d, w, STEER_MODEL_DYNAMIC, v2(-20, -25), 0.0f, &wander, &wa));
  TRY(spawn(d, w, STEER_MODEL_DYNAMIC, v2(20, -5), 1.0f, &wander, &wb));
  group_begin(d, "wander (kinematic)");
  TRY(spawn(d, w, STEER_MODEL_KINEMATIC, v2(0, -20), 2.0f, &wander, &wc));
  group_begin(d, "wander (heading)");
  steer_id wd;
  TRY(spawn(d, w, STEER_MODEL_HEADING, v2(-30, 30), -1.0f, &wander, &wd));
  d->wanderers[0] = wa;
  d->wanderers[1] = wb;
  d->wanderers[2] = wc;
  d->wanderers[3] = wd;
  d->wanderer_count = 4;

  group_begin(d, "interpose");
  b = agent_behaviour(STEER_BEHAVIOUR_INTERPOSE, wa, wb);
  TRY(spawn(d, w, STEER_MODEL_DYNAMIC, v2(0, 0), 0.0f, &b, NULL));

  /* Facing behaviours standing still: a turret, a mirror and a weathervane. */
  group_begin(d, "face / align / look-where-going");
  b = agent_behaviour(STEER_BEHAVIOUR_FACE, d->tagger, 0);
  TRY(spawn(d, w, STEER_MODEL_DYNAMIC, v2(0, 25), 0.0f, &b, NULL));
  b = agent_behaviour(STEER_BEHAVIOUR_ALIGN, wc, 0);
  TRY(spawn(d, w, STEER_MODEL_DYNAMIC, v2(5, 25), 0.0f, &b, NULL));
  b = agent_behaviour(STEER_BEHAVIOUR_VELOCITY_MATCH, wa, 0);
  TRY(spawn(d, w, STEER_MODEL_DYNAMIC, v2(-20, -20), 0.0f, &b, NULL));

  /* Seek and flee around a wanderer, kinematic and dynamic. */
  group_begin(d, "seek / flee");
  b = agent_behaviour(STEER_BEHAVIOUR_SEEK, wc, 0);
  TRY(spawn(d, w, STEER_MODEL_KINEMATIC, v2(-5, -30), 0.0f, &b, NULL));
  b = agent_behaviour(STEER_BEHAVIOUR_FLEE, wc, 0);
  b.params.panic_radius = 10.0f;
  TRY(spawn(d, w, STEER_MODEL_DYNAMIC, v2(5, -30), 0.0f, &b, NULL));
  b = agent_behaviour(STEER_BEHAVIOUR_SEEK, wb, 0);
  TRY(spawn(d, w, STEER_MODEL_HEADING, v2(30, 0), 0.0f, &b, NULL));

  /* Arrivals: a small crowd that arrives, with separation, at ever new goals. */
  group_begin(d, "arrive with separation (crowd)");
  for (int i = 0; i < 12; i++) {
    b = point_behaviour(STEER_BEHAVIOUR_ARRIVE, random_point(d));
    b.separation_weight = 1.0f;
    TRY(spawn(d, w,
              i % 4 == 0 ? STEER_MODEL_HEADING : (i % 4 == 1 ? STEER_MODEL_KINEMATIC : STEER_MODEL_DYNAMIC),
              random_point(d), 0.0f, &b, NULL));
  }
  return (flags & STEERD_DEMO_NO_LEVEL) ? STEER_OK : level(d, w);
}

static void retarget(steerd_demo *d, steer_world *w, steer_id id) {
  steer_agent_info info;
  if (steer_world_get(w, id, &info) != STEER_OK || info.owner != STEERD_DEMO_OWNER ||
      info.behaviour.kind != STEER_BEHAVIOUR_ARRIVE || info.behaviour.target.kind != STEER_TARGET_POINT)
    return;
  steer_behaviour b = info.behaviour;
  b.target.point = random_point(d);
  if (steer_world_set_behaviour(w, id, &b) == STEER_OK)
    d->retargets++;
}

/* Wanderers head home when they stray far, and wander again once back. */
static void leash(steerd_demo *d, steer_world *w) {
  for (uint32_t i = 0; i < d->wanderer_count; i++) {
    steer_agent_info info;
    if (steer_world_get(w, d->wanderers[i], &info) != STEER_OK)
      continue;
    float r = v2_len(info.state.position);
    steer_behaviour b = info.behaviour;
    if (b.kind == STEER_BEHAVIOUR_WANDER && r > LEASH_OUT) {
      b.kind = STEER_BEHAVIOUR_SEEK;
      b.target.kind = STEER_TARGET_POINT;
      b.target.point = v2(0.0f, 0.0f);
      steer_world_set_behaviour(w, info.id, &b);
    } else if (b.kind == STEER_BEHAVIOUR_SEEK && r < LEASH_IN) {
      b.kind = STEER_BEHAVIOUR_WANDER;
      b.target.kind = STEER_TARGET_NONE;
      steer_world_set_behaviour(w, info.id, &b);
    }
  }
}

/* A demo agent that finished its path in the level is a crowd agent: back
 * through the doorway. */
static void crowd_arrived(steerd_demo *d, steer_world *w, steer_id id) {
  steer_agent_info info;
  if (steer_world_get(w, id, &info) != STEER_OK || info.owner != STEERD_DEMO_OWNER ||
      !steerd_demo_in_level(info.state.position))
    return;
  if (d->planner && steer_planner_status(d->planner, id, NULL) != STEER_GOTO_NONE)
    return; /* a GOTO NPC: its planner's route ended */
  int in_east = info.state.position.x > STEERD_DEMO_DOOR_X1;
  d->crossings[in_east ? 0 : 1]++;
  crowd_cross(d, w, id, !in_east);
}

/* The side door, by the world's tick: closed from CLOSE_AT to OPEN_AT of each
 * period. Only in the demo's own level; a refused change is tried again on
 * the next update. */
static void side_door(steerd_demo *d, steer_world *w) {
  const steer_map *m = steer_world_map(w);
  if (!m || steer_map_find(m, STEERD_DEMO_PARTITION_ID) < 0)
    return;
  uint64_t phase = steer_world_tick(w) % STEERD_DEMO_DOOR_PERIOD;
  int closed = steer_map_find(m, STEERD_DEMO_SIDE_DOOR_ID) >= 0;
  int want_closed = phase >= STEERD_DEMO_DOOR_CLOSE_AT && phase < STEERD_DEMO_DOOR_OPEN_AT;
  if (closed == want_closed)
    return;
  static const vec2 gap[] = {{99, 18}, {101, 18}, {101, 21}, {99, 21}};
  steer_obstacle_desc door = {STEER_OBSTACLE_POLYGON, 4, gap, 0.0f};
  const steer_obstacle_desc *o = want_closed ? &door : NULL;
  int rc;
  if (d->edit_map)
    rc = d->edit_map(d->edit_ctx, w, STEERD_DEMO_SIDE_DOOR_ID, o);
  else
    rc = o ? steer_world_add_obstacle(w, STEERD_DEMO_SIDE_DOOR_ID, o, NULL)
           : steer_world_remove_obstacle(w, STEERD_DEMO_SIDE_DOOR_ID);
  if (rc == STEER_OK)
    d->door_changes++;
}

/* A GOTO NPC at p: to a spot in the other room, one time in four the corridor. */
static int goto_next(steerd_demo *d, steer_world *w, steer_id id, vec2 p) {
  steer_goto g = steer_default_goto();
  g.target.kind = STEER_TARGET_POINT;
  uint32_t pick = steer_rng_next(&d->rng) % 20u;
  const vec2 *spots = p.x < 0.5f * (STEERD_DEMO_DOOR_X0 + STEERD_DEMO_DOOR_X1) ? goto_east : goto_west;
  g.target.point = pick < 5 && p.y < 30.0f ? goto_corridor : spots[pick % 5];
  int rc = steer_planner_goto(d->planner, w, id, &g);
  if (rc == STEER_OK)
    d->goto_sent++;
  return rc;
}

/* Every GOTO_EVERY updates: the demo's agents in the level that are in GOTO
 * and have arrived, or were found unreachable, are sent on. */
static void goto_npcs(steerd_demo *d, steer_world *w) {
  if (!d->planner || steer_world_tick(w) % GOTO_EVERY != 0)
    return;
  steer_world_view v = steer_world_get_view(w);
  for (uint32_t i = 0; i < v.count; i++) {
    vec2 p = v2(v.px[i], v.py[i]);
    if (v.owner[i] != STEERD_DEMO_OWNER || !steerd_demo_in_level(p))
      continue;
    vec2 goal;
    steer_goto_status st = steer_planner_status(d->planner, v.id[i], &goal);
    if (st == STEER_GOTO_FOLLOWING && v2_len(v2_sub(p, goal)) < GOTO_THERE) {
      d->goto_arrived++;
      goto_next(d, w, v.id[i], p);
    } else if (st == STEER_GOTO_UNREACHABLE) {
      goto_next(d, w, v.id[i], p);
    }
  }
}

int steerd_demo_set_planner(steerd_demo *d, steer_world *w, steer_planner *p, int spawn) {
  d->planner = p;
  if (!p || !spawn || !d->level)
    return STEER_OK;
  group_begin(d, "goto between rooms (replans at the door)");
  for (uint32_t i = 0; i < STEERD_DEMO_GOTO; i++) {
    vec2 at = (i & 1) ? goto_east[i / 2] : goto_west[i / 2];
    steer_agent_desc a = steer_default_agent_desc();
    a.model = STEER_MODEL_DYNAMIC;
    a.state.position = at;
    a.limits.radius = CROWD_RADIUS;
    a.limits.max_speed = 2.0f;
    a.limits.max_acceleration = 4.0f;
    a.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_NONE);
    a.behaviour.params.separation_radius = 5.0f;
    a.behaviour.max_neighbours = 10;
    a.behaviour.avoid_weight = 1.0f;
    a.behaviour.avoid_horizon = 1.0f;
    a.behaviour.stuck_time = 5.0f; /* STUCK replans a GOTO */
    a.behaviour.stuck_reaction = STEER_STUCK_REPORT;
    steer_id id;
    TRY(spawn_desc(d, w, &a, &id));
    TRY(goto_next(d, w, id, at));
  }
  return STEER_OK;
}

void steerd_demo_update(steerd_demo *d, steer_world *w, const steer_event *events, uint32_t count) {
  side_door(d, w);
  goto_npcs(d, w);
  for (uint32_t i = 0; i < count; i++) {
    if (events[i].type == STEER_EVENT_ARRIVED)
      retarget(d, w, events[i].agent);
    else if (events[i].type == STEER_EVENT_PATH_FINISHED)
      crowd_arrived(d, w, events[i].agent);
    else if (events[i].type == STEER_EVENT_STUCK)
      d->stuck++;
  }
  leash(d, w);

  steer_agent_info t, r;
  if (steer_world_get(w, d->tagger, &t) != STEER_OK || steer_world_get(w, d->runner, &r) != STEER_OK)
    return;
  if (d->cooldown > 0) {
    /* The new tagger counts to three before it gives chase. */
    if (--d->cooldown == 0) {
      steer_behaviour b = t.behaviour;
      b.kind = STEER_BEHAVIOUR_PURSUE;
      b.target.kind = STEER_TARGET_AGENT;
      b.target.agent = d->runner;
      b.params.panic_radius = 0.0f;
      steer_world_set_behaviour(w, d->tagger, &b);
    }
    return;
  }
  if (v2_len(v2_sub(t.state.position, r.state.position)) > CATCH_DISTANCE)
    return;
  /* Caught: swap roles. */
  steer_id old = d->tagger;
  d->tagger = d->runner;
  d->runner = old;
  steer_world_stop(w, d->tagger);
  set_speed(w, d->tagger, TAGGER_SPEED);
  set_speed(w, d->runner, RUNNER_SPEED);
  steer_behaviour b = t.behaviour;
  b.kind = STEER_BEHAVIOUR_EVADE;
  b.target.agent = d->tagger;
  b.params.panic_radius = 12.0f;
  steer_world_set_behaviour(w, d->runner, &b);
  d->cooldown = STEERD_DEMO_TAG_COOLDOWN;
  d->swaps++;
}

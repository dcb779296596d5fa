/* demo.h: a demo world where NPCs exercise every behaviour of the core.
 *
 * Used by the server's default run and by the headless demo. The demo keeps its
 * world lively: arrivals get a new goal when they arrive, and the pursuer and the
 * evader swap roles when one catches the other.
 *
 * Beside those groups (within 50 m of the origin) stands a level, maps/demo.json
 * (compiled in): two rooms side by side, x 61..99 and 101..139, y -39..32, joined
 * by a 3 m doorway (y -1.5..1.5) in the 2 m partition at x 99..101, with a side
 * door (y 18..21), a corridor along the north wall (y 33..39) with a door into
 * each room, pillars, a crate, a concave L block, a U-shaped alcove and a low
 * wall. Two crowds (avoidance on) cross the doorway in both directions, each
 * agent to a random point in the other room and back, keeping to its right
 * (a lane each way). The crowd needs no state of its own: an agent of the demo
 * that finishes a path inside the level is sent through the doorway again, so
 * a restored world goes on the same. The side door closes (an obstacle is
 * added in its gap) for 20 s of every 40 s, by the world's tick, so whatever
 * plans routes through it has to replan.
 *
 * With a GOTO planner (steerd_demo_set_planner), six more NPCs go between the
 * rooms and the corridor with GOTO: each to a spot in the other room (one
 * time in four the corridor), and on to the next once there; the planner
 * finds the way (the doorway, the side door while it is open, or the
 * corridor), replans when the side door closes across a route, and an NPC
 * found UNREACHABLE is sent on again. They too need no state: the demo
 * finds them by the planner's state (kept in checkpoints by the server). */
#ifndef STEERD_DEMO_H
#define STEERD_DEMO_H

#include <stdint.h>

#include "planner.h"
#include "world.h"

#define STEERD_DEMO_OWNER        0u /* owner tag of the demo's agents (the server itself) */
#define STEERD_DEMO_MAX_GROUPS   24
#define STEERD_DEMO_MAX_AGENTS   192
#define STEERD_DEMO_TAG_COOLDOWN 90 /* updates (3 s at 30 Hz) */
#define STEERD_DEMO_CROWD        20 /* agents in each of the two crowds */
#define STEERD_DEMO_GOTO         6  /* NPCs going between the rooms with GOTO (with a planner) */
#define STEERD_DEMO_GROUP_AGENTS 30 /* agents of the groups round the origin */
/* Agents of the demo world with its level, without the GOTO NPCs (a client of
 * the default run sees STEERD_DEMO_AGENTS + STEERD_DEMO_GOTO: the server has a planner). */
#define STEERD_DEMO_AGENTS (STEERD_DEMO_GROUP_AGENTS + 2 * STEERD_DEMO_CROWD)

/* The level's box (maps/demo.json); the world's bounds must hold it. */
#define STEERD_DEMO_LEVEL_MIN_X 60.0f
#define STEERD_DEMO_LEVEL_MAX_X 140.0f
#define STEERD_DEMO_LEVEL_MIN_Y -40.0f
#define STEERD_DEMO_LEVEL_MAX_Y 40.0f
/* The doorway the crowds cross: the partition's faces and the opening. */
#define STEERD_DEMO_DOOR_X0 99.0f
#define STEERD_DEMO_DOOR_X1 101.0f
#define STEERD_DEMO_DOOR_Y0 -1.5f
#define STEERD_DEMO_DOOR_Y1 1.5f

/* The side door: obstacle STEERD_DEMO_SIDE_DOOR_ID fills the gap x 99..101,
 * y 18..21 while it is closed: from tick 300 to 900 of every 1200 (10 s to 30 s
 * of every 40 s at 30 Hz). */
#define STEERD_DEMO_SIDE_DOOR_ID  20u
#define STEERD_DEMO_DOOR_PERIOD   1200u /* updates */
#define STEERD_DEMO_DOOR_CLOSE_AT 300u
#define STEERD_DEMO_DOOR_OPEN_AT  900u
#define STEERD_DEMO_PARTITION_ID  14u /* an obstacle of the level: its map holds the level */

/* How the demo changes the map (the side door): add (o non-NULL) or remove
 * obstacle id; 0 or a steer_error. The server routes it through its own map
 * edits, so clients hear of it; NULL changes the world directly. */
typedef int (*steerd_demo_map_edit)(void *ctx, steer_world *w, uint32_t id, const steer_obstacle_desc *o);

/* steerd_demo_create_ex flags. */
#define STEERD_DEMO_NO_LEVEL 1u /* only the groups round the origin (another map is loaded) */

/* Agents the demo created, by what they show. */
typedef struct steerd_demo_group {
  const char *name;
  uint32_t first, count; /* range in steerd_demo.ids */
} steerd_demo_group;

typedef struct steerd_demo {
  steer_rng rng;
  vec2 min, max;     /* m, the demo's area */
  steer_id tagger;   /* currently pursuing */
  steer_id runner;   /* currently evading */
  uint32_t swaps;    /* times tagger and runner swapped */
  uint32_t cooldown; /* updates until the new tagger gives chase */
  uint32_t retargets;
  steer_id wanderers[8]; /* kept near the centre by a leash */
  uint32_t wanderer_count;
  steer_id ids[STEERD_DEMO_MAX_AGENTS];
  uint32_t id_count;
  steerd_demo_group groups[STEERD_DEMO_MAX_GROUPS];
  uint32_t group_count;
  /* Not kept in checkpoints (counted since this process started the demo): */
  int level;                     /* the level was built */
  uint32_t crossings[2];         /* crowd agents that arrived in the east room (0), the west room (1) */
  uint32_t stuck;                /* STUCK events of the demo's agents */
  uint32_t door_changes;         /* the side door closed or opened */
  uint32_t goto_sent;            /* GOTOs the demo gave its NPCs */
  uint32_t goto_arrived;         /* of which reached their spot */
  steer_planner *planner;        /* the host's GOTO planner (steerd_demo_set_planner), or NULL */
  steerd_demo_map_edit edit_map; /* set by the host after create or resume (NULL: the world directly) */
  void *edit_ctx;
} steerd_demo;

/* Populates w around the origin (needs bounds of at least +-60 m), and builds
 * the level with its crowds when the bounds hold it. Returns 0 or a
 * steer_error (the level's own, STEER_EBLOCKED or STEER_EINVAL, when the map
 * already holds something in its place). */
int steerd_demo_create(steerd_demo *d, steer_world *w, uint64_t seed);
/* The same with flags (STEERD_DEMO_NO_LEVEL). */
int steerd_demo_create_ex(steerd_demo *d, steer_world *w, uint64_t seed, unsigned flags);

/* Gives the demo the host's GOTO planner (the host serves it around each
 * step: steer_planner_update before, steer_planner_observe after). After a
 * create (spawn 1) it spawns the GOTO NPCs in the level and sends them off;
 * after a resume (spawn 0) the restored ones go on. 0 or a steer_error; no
 * level: nothing to do. */
int steerd_demo_set_planner(steerd_demo *d, steer_world *w, steer_planner *p, int spawn);

/* 1 when p is inside the level's box. */
int steerd_demo_in_level(vec2 p);

/* After the demo's state was restored from a checkpoint (rng, tagger, runner,
 * cooldown, wanderers): sets what is constant so updates go on. */
void steerd_demo_resume(steerd_demo *d);

/* Call after each step with the step's events. */
void steerd_demo_update(steerd_demo *d, steer_world *w, const steer_event *events, uint32_t count);

#endif /* STEERD_DEMO_H */

/* map_admin.h: runtime changes to the world's map (the admin commands
 * ADD_OBSTACLE and REMOVE_OBSTACLE, PROTOCOL.md 17.3) and the state of each
 * client's copy of the map (the MAP parts it is being sent).
 *
 * A change is checked whole before anything changes, every fault named by its
 * wire field: a point outside the world bounds ("points[3]", "center", a circle
 * reaching outside: "radius"), an edge or radius under 1 mm, a polygon that is
 * not simple or has no area ("points"), an id in use (OBSTACLE_EXISTS, "id"),
 * an unknown id (NO_SUCH_OBSTACLE, "id"), the map's caps (WORLD_FULL). Agents
 * an added obstacle covers are moved to the nearest free point (the core's rule,
 * world.h); when one of them has nowhere to go within 64 m the add is refused
 * (BLOCKED) and nothing changes. */
#ifndef STEERD_MAP_ADMIN_H
#define STEERD_MAP_ADMIN_H

#include <stdint.h>

#include "map.h"
#include "map_msg.h"
#include "validate.h"
#include "world.h"

typedef enum steerd_map_op { STEERD_MAP_ADD = 0, STEERD_MAP_REMOVE, STEERD_MAP_OP_COUNT } steerd_map_op;

/* One change: add obstacle (its id and shape) or remove obstacle.id. */
typedef struct steerd_map_edit {
  uint8_t op;              /* steerd_map_op */
  proto_obstacle obstacle; /* REMOVE: only id */
} steerd_map_edit;

typedef struct steerd_map_result {
  uint32_t version; /* the map's version after the change */
  uint32_t moved;   /* agents moved out of an added obstacle */
  int code;         /* on failure: the proto_error_code of the ERROR */
  steerd_check why; /* on failure: field ("" for nil) and message */
} steerd_map_result;

/* The checks of the module comment, without changing anything: 0, or -1 with
 * r->code and r->why. */
int steerd_map_edit_check(const steer_world *w, const steerd_map_edit *e, steerd_map_result *r);
/* Checks and applies e to w: 0 with r->version and r->moved, or -1 as above. */
int steerd_map_edit_apply(steer_world *w, const steerd_map_edit *e, steerd_map_result *r);

/* ---- clients' copies (MAP parts, PROTOCOL.md 17.1) --------------------------
 *
 * Each client slot is sent the map once after its WELCOME, in parts, paced by
 * the server so that the client's queue never grows past a budget; a client
 * whose parts are all out holds the map and is sent every MAP_CHANGED. When the
 * map changes while a client is being sent an older version, its parts start
 * again from part 0 of the new version (a client drops a collection that a new
 * version's part 0 interrupts). Part boundaries are computed once per version
 * and shared. */
typedef struct steerd_mapsync steerd_mapsync;

/* The i-th obstacle of a steer_map (ctx) in map order, for proto_map_fit and
 * proto_encode_map (e.g. the live view's own MAP messages). */
proto_obstacle steerd_map_at(const void *map, uint32_t i);

steerd_mapsync *steerd_mapsync_create(uint32_t slots);
void steerd_mapsync_destroy(steerd_mapsync *ms); /* accepts NULL */
/* The slot (a client just WELCOMEd, or one asking again) is to get the whole map. */
void steerd_mapsync_start(steerd_mapsync *ms, uint32_t slot);
/* 1 while the slot still has parts to receive; 0 when it holds the map (or never started). */
int steerd_mapsync_streaming(const steerd_mapsync *ms, uint32_t slot);
/* The next part for the slot, encoded into buf (cap >= PROTO_MAP_PART_BYTES):
 * its length, or 0 when the slot has nothing more to receive. */
size_t steerd_mapsync_next(steerd_mapsync *ms, uint32_t slot, const steer_map *m, uint8_t *buf, size_t cap);
/* The slot holds the map (every part sent) and gets MAP_CHANGED. */
int steerd_mapsync_synced(const steerd_mapsync *ms, uint32_t slot);
/* A synced slot was sent the MAP_CHANGED that brings it to version. */
void steerd_mapsync_advance(steerd_mapsync *ms, uint32_t slot, uint32_t version);
void steerd_mapsync_stop(steerd_mapsync *ms, uint32_t slot);

#endif /* STEERD_MAP_ADMIN_H */

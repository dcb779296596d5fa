/* map_msg.h: the world's map on the wire (PROTOCOL.md 17).
 *
 *   server -> client, channel 0 (reliable), after WELCOME and after a change:
 *     [39 MAP,         version, part_index, part_count, obstacle_total, [obstacle, ...]]
 *     [40 MAP_CHANGED, version, tick, [removed id, ...], [obstacle, ...]]
 *   client -> server, channel 0, admins only:
 *     [12 ADD_OBSTACLE,    request_id, obstacle]
 *     [13 REMOVE_OBSTACLE, request_id, {"id": id}]
 *
 *   obstacle: {"id": u32 >= 1, "type": "circle", "center": [x, y], "radius": r}
 *           | {"id": u32 >= 1, "type": "polygon" | "wall", "points": [[x, y], ...]}
 *
 * The same obstacle objects as the map file (PROTOCOL.md 16). Coordinates go
 * as float32, the server's own values: a client that applies every MAP and
 * MAP_CHANGED holds the server's geometry bit for bit, in the server's order
 * (a removal keeps the order of the rest, an addition goes last).
 *
 * A MAP is the whole map at `version`, cut into parts of whole obstacles, each
 * packet at most PROTO_MAP_PART_BYTES. MAP_CHANGED takes a client from
 * version - 1 to version: removals first, then additions. */
#ifndef PROTO_MAP_MSG_H
#define PROTO_MAP_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

#define PROTO_MAP_PART_BYTES       PROTO_MAX_MESSAGE_BYTES   /* a MAP packet never exceeds this */
#define PROTO_MAP_MAX_POINTS       PROTO_MAX_OBSTACLE_POINTS /* points of one polygon or wall */
#define PROTO_MAP_HEADER_MAX_BYTES 25 /* fixarray, type, version, index, count, total: 5 each; array16 */
/* The largest obstacle: a polygon of 256 points (fixmap, "id" u32, "type" "polygon", "points" array16, 256 x
 * 11). */
#define PROTO_MAP_OBSTACLE_MAX_BYTES 2848
#define PROTO_MAP_CHANGED_MAX                                                                                \
  4 /* removals, and additions, in one MAP_CHANGED (4 of the largest fit 16384 bytes) */

/* One obstacle: its id and shape; points belong to the caller (decoders point
 * them into the caller's pool). A circle has count 1 (its centre) and radius. */
typedef struct proto_obstacle {
  uint32_t id;              /* >= 1 */
  uint8_t kind;             /* proto_obstacle_kind */
  uint32_t count;           /* points */
  float radius;             /* m, circle only */
  const proto_vec2 *points; /* m */
} proto_obstacle;

typedef struct proto_map_header {
  uint32_t version;        /* the map's version (PROTOCOL.md 17: bumped by every change) */
  uint32_t part_index;     /* < part_count */
  uint32_t part_count;     /* >= 1 */
  uint32_t obstacle_total; /* obstacles in all parts together */
} proto_map_header;

typedef struct proto_map_changed {
  uint32_t version; /* the map's version after the change, >= 1 */
  uint64_t tick;    /* the last completed tick when it was applied: in force from tick + 1 */
  uint32_t removed_count;
  const uint32_t *removed; /* ids */
  uint32_t added_count;
  const proto_obstacle *added;
} proto_map_changed;

/* "circle", "polygon", "wall"; NULL if out of range. */
const char *proto_obstacle_kind_name(uint32_t kind);

/* Encoded size of one obstacle object; 0 when its kind or count is out of range. */
size_t proto_obstacle_size(const proto_obstacle *o);

/* Obstacles are read through a function (the server's map, a client's copy,
 * an array): the i-th obstacle in map order. */
typedef proto_obstacle (*proto_obstacle_at)(const void *ctx, uint32_t i);
proto_obstacle proto_obstacle_array_at(const void *array, uint32_t i); /* array: const proto_obstacle * */

/* How many obstacles, from index first of total, fit in one MAP packet of
 * part_bytes (header counted at its worst case): at least one whenever
 * part_bytes >= PROTO_MAP_HEADER_MAX_BYTES + PROTO_MAP_OBSTACLE_MAX_BYTES; 0
 * when first is the end. */
uint32_t proto_map_fit(proto_obstacle_at at, const void *ctx, uint32_t first, uint32_t total,
                       size_t part_bytes);

/* One MAP part: obstacles first..first+count. 0 when the buffer is too small
 * or an obstacle is invalid. */
size_t proto_encode_map(uint8_t *buf, size_t cap, const proto_map_header *h, proto_obstacle_at at,
                        const void *ctx, uint32_t first, uint32_t count);
size_t proto_encode_map_changed(uint8_t *buf, size_t cap, const proto_map_changed *c);

/* ---- Decoders (untrusted input; unknown keys of obstacle objects are skipped,
 * as in every server message) ------------------------------------------------ */

/* One MAP part: its obstacles into obs (cap of them), their points into the
 * pool points (point_cap; each obstacle's points follow the previous one's, a
 * circle's centre is its one point). Strict about the rest: part_index <
 * part_count, ids >= 1, shapes as in PROTOCOL.md 17.3. More obstacles or points
 * than there is room for is TOO_LARGE. On an error *count is 0. */
int proto_decode_map(const uint8_t *data, size_t len, proto_map_header *h, proto_obstacle *obs, uint32_t cap,
                     uint32_t *count, proto_vec2 *points, uint32_t point_cap, proto_error_info *err);
/* MAP_CHANGED: c->removed and c->added point at the caller's arrays. */
int proto_decode_map_changed(const uint8_t *data, size_t len, proto_map_changed *c,
                             uint32_t removed[PROTO_MAP_CHANGED_MAX],
                             proto_obstacle added[PROTO_MAP_CHANGED_MAX], proto_vec2 *points,
                             uint32_t point_cap, proto_error_info *err);

#endif /* PROTO_MAP_MSG_H */

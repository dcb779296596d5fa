/* map_json.h: the world's map as the JSON of GET /api/map and of the live
 * view's map message (PROTOCOL.md 15):
 *
 *   {"type": "map", "version": V, "bounds_m": [min_x, min_y, max_x, max_y],
 *    "obstacles": [{"id", "kind", "points_m": [[x, y], ...], "radius_m"}, ...]}
 *
 * Written straight into one buffer, compact, every number as jansson's
 * json_dumps writes it (17 significant digits, "60.0" for a whole one), so the
 * text is what building the document with jansson gave, without its per-value
 * allocations: about 40 bytes of text per point, where a jansson tree took
 * some 250 bytes per point (over 250 MB for a map at its caps, 1 048 576
 * segments) for a moment. */
#ifndef STEERD_MAP_JSON_H
#define STEERD_MAP_JSON_H

#include <stddef.h>

#include "map.h"

/* The JSON of m (NULL: an empty map at version 0) over the world bounds
 * [lo, hi]; type NULL leaves the "type" field out. A malloc'd, NUL-terminated
 * string of *len bytes (free() it); NULL when it would be longer than limit
 * bytes (limit 0: no limit; *len is then limit + 1, found without writing the
 * rest) or on no memory (*len 0). */
char *steerd_map_json(const steer_map *m, vec2 lo, vec2 hi, const char *type, size_t limit, size_t *len);

#endif /* STEERD_MAP_JSON_H */

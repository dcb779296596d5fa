/* map_file.h: the JSON map file (--map FILE / STEERD_MAP), format version 1.
 *
 *   {"format": "steerd-map", "version": 1,
 *    "obstacles": [
 *      {"id": 1, "type": "circle",  "center": [x, y], "radius": r},
 *      {"id": 2, "type": "polygon", "points": [[x, y], [x, y], [x, y], ...]},
 *      {"id": 3, "type": "wall",    "points": [[x, y], [x, y], ...]}]}
 *
 * Metres, world coordinates. ids are integers 1..4294967295, unique. A polygon
 * is closed (do not repeat its first point), simple, convex or concave, either
 * winding, 3..256 points, solid; a wall is an open polyline of 2..256 points
 * with thickness 0. Every point must lie inside the world bounds (a circle
 * entirely). Unknown fields are errors (a typo is not silently ignored).
 * protocol/PROTOCOL.md "Map file" is the normative description. */
#ifndef STEERD_MAP_FILE_H
#define STEERD_MAP_FILE_H

#include <stddef.h>

#include "map.h"
#include "world.h"

#define STEERD_MAP_FILE_VERSION 1
/* A larger file is refused. A map at its caps (65 536 obstacles, 1 114 112
 * points) written as steerd-client writes it, 9 significant digits, is
 * about 36 MiB. */
#define STEERD_MAP_FILE_MAX_BYTES (64u << 20)

/* Parses len bytes of JSON into m (which the caller created over the world's
 * bounds; obstacles are added in file order, each checked by steer_map_add).
 * Returns 0, or -1 with err holding what and where, e.g.
 * "obstacles[2].points[1]: not an [x, y] pair of finite numbers". On error m
 * may hold the obstacles before the bad one. */
int steerd_map_parse(const char *text, size_t len, steer_map *m, char *err, size_t errlen);

/* Reads path and adds its obstacles to w (agents in the way are moved, as for
 * an admin's add). Returns 0, or -1 with err naming the file, element and
 * field. */
int steerd_map_file_load(const char *path, steer_world *w, char *err, size_t errlen);

/* The same from len bytes of JSON in memory (the demo's compiled-in level);
 * err names the element and field, without a file name. */
int steerd_map_text_load(const char *text, size_t len, steer_world *w, char *err, size_t errlen);

#endif /* STEERD_MAP_FILE_H */

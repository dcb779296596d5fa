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
 * protocol/PROTOCOL.md "Map file" is the normative description.
 *
 * --map also reads Moving AI grid maps (movingai.com's benchmark format):
 *
 *   type octile
 *   height H
 *   width W
 *   map
 *   H rows of W cells: '.' and 'G' free; '@', 'O', 'T', 'S' and 'W' blocked
 *
 * told by their first line ("type octile"), whatever the file's name. Cell
 * (x, y) (column x, row y, as .scen files give them) covers [x, x+1] x
 * [y, y+1] metres. The blocked cells become axis-aligned rectangles (polygon
 * obstacles): each row's maximal runs of blocked cells, and runs with the
 * same x-span on consecutive rows merged into one rectangle; ids 1, 2, ... in
 * row-major order of their top-left cells. The world's bounds must contain
 * [0, W] x [0, H].
 *
 * And maps of the Tiled editor (mapeditor.org) in its JSON format (.tmj),
 * told by "type": "map" with a "layers" array (or the name .tmj):
 * orthogonal, not infinite, W x H tiles; a tile is 1 m, pixel (x, y) is
 * (x / tilewidth, y / tileheight) metres (y down the map, as in the editor
 * and in grid maps). Tile layers (CSV or uncompressed base64 data): cells
 * whose tile has the bool property "collision" true (in its tileset, embedded
 * or an external .tsj next to the map) are blocked, merged into rectangles
 * as a grid map's, ids from the map's "nextobjectid" on. Object layers: each
 * rectangle, polygon, polyline (a wall) and ellipse (a circle; one that is not
 * round an enclosing 16-gon), rotation included, is an obstacle with its Tiled
 * object id, unless it or its layer (or a group above) says "collision"
 * false; points, text and tile objects are not obstacles. Group layers are
 * read in order. */
#ifndef STEERD_MAP_FILE_H
#define STEERD_MAP_FILE_H

#include <stddef.h>
#include <stdint.h>

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

/* Whether len bytes are a Moving AI grid map: the first line is "type octile"
 * (trailing blanks and a CR aside). */
int steerd_map_is_movingai(const char *text, size_t len);

/* A Moving AI grid map's cells: blocked[y * width + x] is 1 for a blocked
 * cell, 0 for a free one. */
typedef struct steerd_grid_map {
  uint32_t width, height;
  uint8_t *blocked;
} steerd_grid_map;

#define STEERD_GRID_MAP_MAX_SIDE 8192u /* cells; a larger width or height is refused */

/* Reads the header and the rows into g (blocked allocated here; free with
 * steerd_grid_map_free). Returns 0, or -1 with err naming the line (and the
 * column for a bad cell), e.g. "line 7, column 12: 'x' is not a map cell (.
 * G free; @ O T S W blocked)"; g is then empty. */
int steerd_grid_map_read(const char *text, size_t len, steerd_grid_map *g, char *err, size_t errlen);
void steerd_grid_map_free(steerd_grid_map *g); /* accepts an empty one */

/* Adds g's blocked cells to m as rectangles (the rule above). Returns 0, or
 * -1 with err saying why: the bounds of m do not contain the map ("the map is
 * 512 x 512 m: start the server with bounds covering [0,512]x[0,512] (--world
 * 0,0,512,512)"), more rectangles than a map holds, an id already used. */
int steerd_grid_map_add(const steerd_grid_map *g, steer_map *m, char *err, size_t errlen);
/* The same with ids first_id, first_id + 1, ... */
int steerd_grid_map_add_from(const steerd_grid_map *g, steer_map *m, uint32_t first_id, char *err,
                             size_t errlen);

/* steerd_grid_map_read then steerd_grid_map_add: the Moving AI map in len
 * bytes into m (created by the caller over bounds containing the map). */
int steerd_map_parse_movingai(const char *text, size_t len, steer_map *m, char *err, size_t errlen);

/* The map readers' error: formats err (errlen bytes, when given) and returns -1. */
int steerd_map_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Whether len bytes are a Tiled JSON map ("type": "map", a "layers" array). */
int steerd_map_is_tiled(const char *text, size_t len);

/* The Tiled map in len bytes into m (the rule above); dir is where its
 * external tilesets are, NULL to refuse them. Returns 0, or -1 with err naming
 * the layer and object, e.g. "layer \"walls\", object 12 (polygon): edges that
 * cross or touch". */
int steerd_map_parse_tiled(const char *text, size_t len, const char *dir, steer_map *m, char *err,
                           size_t errlen);

/* Reads path and adds its obstacles to w (agents in the way are moved, as for
 * an admin's add): a Moving AI map when its content says so (or its name
 * ends in .map: then a wrong first line is reported as such), a Tiled map
 * likewise (.tmj), else steerd's JSON.
 * Returns 0, or -1 with err naming the file, element and field (line and
 * column for a grid map). */
int steerd_map_file_load(const char *path, steer_world *w, char *err, size_t errlen);

/* The same from len bytes in memory (the demo's compiled-in level), JSON or
 * a Moving AI map told by its content; err names the element and field,
 * without a file name. */
int steerd_map_text_load(const char *text, size_t len, steer_world *w, char *err, size_t errlen);

#endif /* STEERD_MAP_FILE_H */

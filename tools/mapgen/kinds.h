/* kinds.h: grid maps of the Moving AI benchmarks' synthetic kinds and their
 * problem lists (.scen), made deterministically from a seed.
 *
 *   maze    400 x 400: a perfect maze (randomized depth-first search) of
 *           corridors 4 cells wide between walls 1 cell thick
 *   rooms   400 x 400: rooms of 40 x 40 cells between walls 1 cell thick,
 *           joined by door openings of 2..5 cells (every room reachable)
 *   random  400 x 400: each cell blocked with probability 0.33
 *   mixed   512 x 512: a strategy-game level: forests, ridges, scattered blocks,
 *           open clearings, buildings of rooms and walled corridors
 *
 * The problems join random free cells of one connected component (the first
 * cell uniform over the free cells, the second uniform over its component),
 * each with its optimal octile length (octile.h), sorted by bucket
 * (length / 4, rounded down) as the benchmark's files are. */
#ifndef STEERD_MAPGEN_KINDS_H
#define STEERD_MAPGEN_KINDS_H

#include <stdint.h>
#include <stdio.h>

typedef enum mapgen_kind {
  MAPGEN_MAZE,
  MAPGEN_ROOMS,
  MAPGEN_RANDOM,
  MAPGEN_MIXED,
  MAPGEN_KIND_COUNT
} mapgen_kind;

const char *mapgen_kind_name(mapgen_kind k);
/* The kind named name, or -1. */
int mapgen_kind_parse(const char *name);

/* cells[y * width + x] is '.' (free), '@' (blocked) or 'T' (trees,
 * blocked); blocked[] is 1 for the blocked ones. */
typedef struct mapgen_map {
  uint32_t width, height;
  char *cells;
  uint8_t *blocked;
} mapgen_map;

/* Makes a map of kind k from seed (the same seed, the same cells). 0, or -1
 * on no memory or a bad kind. */
int mapgen_make(mapgen_kind k, uint64_t seed, mapgen_map *out);
void mapgen_free(mapgen_map *m); /* accepts an empty one */

typedef struct mapgen_problem {
  uint32_t bucket;
  uint32_t sx, sy, gx, gy;
  double optimal;
} mapgen_problem;

/* n problems on m from seed into out, sorted by bucket (problems of one
 * bucket in the order drawn). 0, or -1 on no memory or no component of two
 * cells. */
int mapgen_problems(const mapgen_map *m, uint64_t seed, uint32_t n, mapgen_problem *out);

/* The .map file ("type octile", height, width, "map", the rows) and the .scen
 * file ("version 1", then bucket, map name, width, height, start, goal,
 * optimal length with 8 decimals, tab-separated). 0, or -1 on a write error. */
int mapgen_write_map(FILE *f, const mapgen_map *m);
int mapgen_write_scen(FILE *f, const char *map_name, const mapgen_map *m, const mapgen_problem *p,
                      uint32_t n);

#endif /* STEERD_MAPGEN_KINDS_H */

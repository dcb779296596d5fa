/* kinds.c: the synthetic map kinds and their problems (see kinds.h). */
#include "kinds.h"

#include <stdlib.h>
#include <string.h>

#include "octile.h"

/* splitmix64: small, and the same numbers on every platform. */
typedef struct rng {
  uint64_t s;
} rng;

static uint64_t rng_next(rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static uint32_t rng_below(rng *r, uint32_t n) { return (uint32_t)(((rng_next(r) >> 32) * n) >> 32); }

/* Uniform in [0, 1). */
static double rng_unit(rng *r) { return (double)(rng_next(r) >> 11) * 0x1p-53; }

static const char *names[MAPGEN_KIND_COUNT] = {"maze", "rooms", "random", "mixed"};

const char *mapgen_kind_name(mapgen_kind k) { return (unsigned)k < MAPGEN_KIND_COUNT ? names[k] : "?"; }

int mapgen_kind_parse(const char *name) {
  for (int k = 0; k < MAPGEN_KIND_COUNT; k++)
    if (strcmp(name, names[k]) == 0)
      return k;
  return -1;
}

static void fill_rect(mapgen_map *m, int64_t x0, int64_t y0, int64_t x1, int64_t y1, char c) {
  x0 = x0 < 0 ? 0 : x0;
  y0 = y0 < 0 ? 0 : y0;
  x1 = x1 > m->width ? m->width : x1;
  y1 = y1 > m->height ? m->height : y1;
  for (int64_t y = y0; y < y1; y++)
    for (int64_t x = x0; x < x1; x++)
      m->cells[y * m->width + x] = c;
}

/* Maze cells of 4 x 4 at (5i, 5j), walls on the rows and columns 5k + 4. */
#define MAZE_CELLS 80u

static int make_maze(mapgen_map *m, rng *r) {
  const uint32_t n = MAZE_CELLS * MAZE_CELLS;
  uint8_t *seen = calloc(n, 1);
  uint32_t *stack = malloc(n * sizeof *stack);
  if (!seen || !stack) {
    free(seen);
    free(stack);
    return -1;
  }
  memset(m->cells, '@', (size_t)m->width * m->height);
  uint32_t top = 0, first = rng_below(r, n);
  stack[top++] = first;
  seen[first] = 1;
  fill_rect(m, 5 * (first % MAZE_CELLS), 5 * (first / MAZE_CELLS), 5 * (first % MAZE_CELLS) + 4,
            5 * (first / MAZE_CELLS) + 4, '.');
  while (top > 0) {
    uint32_t c = stack[top - 1], i = c % MAZE_CELLS, j = c / MAZE_CELLS, next[4], k = 0;
    if (i > 0 && !seen[c - 1])
      next[k++] = c - 1;
    if (i + 1 < MAZE_CELLS && !seen[c + 1])
      next[k++] = c + 1;
    if (j > 0 && !seen[c - MAZE_CELLS])
      next[k++] = c - MAZE_CELLS;
    if (j + 1 < MAZE_CELLS && !seen[c + MAZE_CELLS])
      next[k++] = c + MAZE_CELLS;
    if (k == 0) {
      top--;
      continue;
    }
    uint32_t d = next[rng_below(r, k)], di = d % MAZE_CELLS, dj = d / MAZE_CELLS;
    /* the cell, and the passage through the wall between: the wall cells of
     * the lower cell's side, 4 wide */
    fill_rect(m, 5 * di, 5 * dj, 5 * di + 4, 5 * dj + 4, '.');
    uint32_t li = i < di ? i : di, lj = j < dj ? j : dj;
    if (di != i)
      fill_rect(m, 5 * li + 4, 5 * lj, 5 * li + 5, 5 * lj + 4, '.');
    else
      fill_rect(m, 5 * li, 5 * lj + 4, 5 * li + 4, 5 * lj + 5, '.');
    seen[d] = 1;
    stack[top++] = d;
  }
  free(seen);
  free(stack);
  return 0;
}

/* Rooms of ROOM cells with a wall after each: walls on the rows and columns
 * 41k + 40 (the last room of a row is cut by the map's edge). */
#define ROOM 40u

/* A door of 2..5 cells in the wall between room (i, j) and its neighbour
 * east (east = 1) or south. */
static void room_door(mapgen_map *m, rng *r, uint32_t i, uint32_t j, int east) {
  uint32_t along0 = (east ? j : i) * (ROOM + 1), side = east ? m->height : m->width;
  uint32_t along1 = along0 + ROOM < side ? along0 + ROOM : side;
  uint32_t width = 2 + rng_below(r, 4);
  if (width > along1 - along0)
    width = along1 - along0;
  uint32_t at = along0 + rng_below(r, along1 - along0 - width + 1);
  uint32_t wall = (east ? i : j) * (ROOM + 1) + ROOM;
  if (east)
    fill_rect(m, wall, at, wall + 1, at + width, '.');
  else
    fill_rect(m, at, wall, at + width, wall + 1, '.');
}

static int make_rooms(mapgen_map *m, rng *r) {
  memset(m->cells, '.', (size_t)m->width * m->height);
  for (uint32_t k = ROOM; k < m->width; k += ROOM + 1)
    fill_rect(m, k, 0, k + 1, m->height, '@');
  for (uint32_t k = ROOM; k < m->height; k += ROOM + 1)
    fill_rect(m, 0, k, m->width, k + 1, '@');
  uint32_t cols = (m->width + ROOM) / (ROOM + 1), rows = (m->height + ROOM) / (ROOM + 1), n = cols * rows;
  /* A spanning tree of the rooms (randomized depth-first search) gets a door
   * in each of its walls, so every room is reachable; every other wall gets
   * one with probability 1/2, so there are loops. */
  uint8_t *seen = calloc(n, 1), *tree = calloc(2 * (size_t)n, 1); /* tree[2c + east] */
  uint32_t *stack = malloc(n * sizeof *stack);
  if (!seen || !tree || !stack) {
    free(seen);
    free(tree);
    free(stack);
    return -1;
  }
  uint32_t top = 0, first = rng_below(r, n);
  stack[top++] = first;
  seen[first] = 1;
  while (top > 0) {
    uint32_t c = stack[top - 1], i = c % cols, j = c / cols, next[4], k = 0;
    if (i > 0 && !seen[c - 1])
      next[k++] = c - 1;
    if (i + 1 < cols && !seen[c + 1])
      next[k++] = c + 1;
    if (j > 0 && !seen[c - cols])
      next[k++] = c - cols;
    if (j + 1 < rows && !seen[c + cols])
      next[k++] = c + cols;
    if (k == 0) {
      top--;
      continue;
    }
    uint32_t d = next[rng_below(r, k)];
    uint32_t lower = c < d ? c : d;
    tree[2 * (size_t)lower + (d % cols != i)] = 1;
    seen[d] = 1;
    stack[top++] = d;
  }
  for (uint32_t j = 0; j < rows; j++)
    for (uint32_t i = 0; i < cols; i++)
      for (int east = 1; east >= 0; east--) {
        if ((east && i + 1 == cols) || (!east && j + 1 == rows))
          continue;
        int open = tree[2 * (size_t)(j * cols + i) + east] || rng_below(r, 2) == 0;
        if (open)
          room_door(m, r, i, j, east);
      }
  free(seen);
  free(tree);
  free(stack);
  return 0;
}

static int make_random(mapgen_map *m, rng *r) {
  for (size_t i = 0; i < (size_t)m->width * m->height; i++)
    m->cells[i] = rng_unit(r) < 0.33 ? '@' : '.';
  return 0;
}

static void disc(mapgen_map *m, int64_t cx, int64_t cy, int64_t rad, char c) {
  for (int64_t y = cy - rad; y <= cy + rad; y++)
    for (int64_t x = cx - rad; x <= cx + rad; x++)
      if (x >= 0 && y >= 0 && x < m->width && y < m->height &&
          (x - cx) * (x - cx) + (y - cy) * (y - cy) <= rad * rad)
        m->cells[y * m->width + x] = c;
}

/* A building: nx x ny rooms of side s inside one wall 1 cell thick, a door of
 * 3 cells in every inner wall between two rooms and two on the outside. */
static void building(mapgen_map *m, rng *r, int64_t x0, int64_t y0, uint32_t nx, uint32_t ny, uint32_t s) {
  int64_t x1 = x0 + (int64_t)(nx * (s + 1) + 1), y1 = y0 + (int64_t)(ny * (s + 1) + 1);
  fill_rect(m, x0, y0, x1, y1, '@');
  for (uint32_t j = 0; j < ny; j++)
    for (uint32_t i = 0; i < nx; i++) {
      int64_t rx = x0 + 1 + i * (s + 1), ry = y0 + 1 + j * (s + 1);
      fill_rect(m, rx, ry, rx + s, ry + s, '.');
      int64_t at = 1 + rng_below(r, s - 4);
      if (i + 1 < nx)
        fill_rect(m, rx + s, ry + at, rx + s + 1, ry + at + 3, '.');
      at = 1 + rng_below(r, s - 4);
      if (j + 1 < ny)
        fill_rect(m, rx + at, ry + s, rx + at + 3, ry + s + 1, '.');
    }
  /* the entrances: one in the west or east wall, one in the north or south */
  int64_t at = y0 + 2 + rng_below(r, (uint32_t)(y1 - y0 - 6));
  int64_t wx = rng_below(r, 2) ? x0 : x1 - 1;
  fill_rect(m, wx, at, wx + 1, at + 3, '.');
  at = x0 + 2 + rng_below(r, (uint32_t)(x1 - x0 - 6));
  int64_t wy = rng_below(r, 2) ? y0 : y1 - 1;
  fill_rect(m, at, wy, at + 3, wy + 1, '.');
}

/* Forests (random walks of a disc brush, 'T'), ridges of rock, scattered
 * blocks, three open clearings, four buildings and six walled corridors with
 * gaps. */
static int make_mixed(mapgen_map *m, rng *r) {
  int64_t w = m->width, h = m->height;
  memset(m->cells, '.', (size_t)w * h);
  for (int f = 0; f < 60; f++) {
    int64_t x = rng_below(r, (uint32_t)w), y = rng_below(r, (uint32_t)h);
    uint32_t steps = 200 + rng_below(r, 600);
    for (uint32_t k = 0; k < steps; k++) {
      disc(m, x, y, 1 + rng_below(r, 3), 'T');
      x += (int64_t)rng_below(r, 3) - 1;
      y += (int64_t)rng_below(r, 3) - 1;
    }
  }
  /* ridges of rock: walks that keep their heading, turning a little */
  for (int k = 0; k < 30; k++) {
    int64_t x = rng_below(r, (uint32_t)w), y = rng_below(r, (uint32_t)h);
    int dir = (int)rng_below(r, 8);
    static const int dx[8] = {1, 1, 0, -1, -1, -1, 0, 1}, dy[8] = {0, 1, 1, 1, 0, -1, -1, -1};
    uint32_t steps = 60 + rng_below(r, 160);
    for (uint32_t t = 0; t < steps; t++) {
      disc(m, x, y, 1 + rng_below(r, 2), '@');
      if (rng_below(r, 6) == 0)
        dir = (dir + (rng_below(r, 2) ? 1 : 7)) % 8;
      x += dx[dir];
      y += dy[dir];
    }
  }
  for (int b = 0; b < 300; b++) {
    int64_t x = rng_below(r, (uint32_t)w), y = rng_below(r, (uint32_t)h);
    fill_rect(m, x, y, x + 1 + rng_below(r, 6), y + 1 + rng_below(r, 6), '@');
  }
  for (int c = 0; c < 3; c++)
    disc(m, 60 + rng_below(r, (uint32_t)w - 120), 60 + rng_below(r, (uint32_t)h - 120), 30 + rng_below(r, 21),
         '.');
  for (int b = 0; b < 4; b++) {
    uint32_t nx = 2 + rng_below(r, 3), ny = 2 + rng_below(r, 3), s = 12 + rng_below(r, 9);
    int64_t bw = nx * (s + 1) + 1, bh = ny * (s + 1) + 1;
    building(m, r, rng_below(r, (uint32_t)(w - bw)), rng_below(r, (uint32_t)(h - bh)), nx, ny, s);
  }
  for (int c = 0; c < 6; c++) {
    int vertical = (int)rng_below(r, 2);
    int64_t len = 60 + rng_below(r, 101), gap = 4 + rng_below(r, 5);
    int64_t along = rng_below(r, (uint32_t)((vertical ? h : w) - len));
    int64_t across = rng_below(r, (uint32_t)((vertical ? w : h) - gap - 2));
    for (int64_t k = 0; k < len; k++) {
      /* a wall cell on each side, but a 3-cell gap every 40 cells or so */
      int open = (k % 40) >= 37;
      char wall = open ? '.' : '@';
      int64_t a = along + k;
      for (int64_t t = 0; t < gap + 2; t++) {
        char cell = t == 0 || t == gap + 1 ? wall : '.';
        if (vertical)
          m->cells[a * w + across + t] = cell;
        else
          m->cells[(across + t) * w + a] = cell;
      }
    }
  }
  return 0;
}

int mapgen_make(mapgen_kind k, uint64_t seed, mapgen_map *out) {
  memset(out, 0, sizeof *out);
  if ((unsigned)k >= MAPGEN_KIND_COUNT)
    return -1;
  out->width = out->height = k == MAPGEN_MIXED ? 512 : 400;
  size_t n = (size_t)out->width * out->height;
  out->cells = malloc(n);
  out->blocked = malloc(n);
  if (!out->cells || !out->blocked) {
    mapgen_free(out);
    return -1;
  }
  /* one stream per kind, so a kind's map does not depend on the others */
  rng r = {seed * 0x100000001b3ull + (uint64_t)k};
  int rc = k == MAPGEN_MAZE     ? make_maze(out, &r)
           : k == MAPGEN_ROOMS  ? make_rooms(out, &r)
           : k == MAPGEN_RANDOM ? make_random(out, &r)
                                : make_mixed(out, &r);
  if (rc != 0) {
    mapgen_free(out);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    out->blocked[i] = out->cells[i] != '.';
  return 0;
}

void mapgen_free(mapgen_map *m) {
  free(m->cells);
  free(m->blocked);
  memset(m, 0, sizeof *m);
}

int mapgen_problems(const mapgen_map *m, uint64_t seed, uint32_t n, mapgen_problem *out) {
  octile_grid g = {m->width, m->height, m->blocked};
  uint32_t cells = m->width * m->height;
  uint32_t *label = malloc(cells * sizeof *label), *order = malloc(cells * sizeof *order);
  uint32_t *first = NULL, *size = NULL, *at = NULL, *freec = malloc(cells * sizeof *freec), buckets = 0;
  mapgen_problem *drawn = malloc((n ? n : 1) * sizeof *drawn);
  octile_search *s = octile_search_create(m->width, m->height);
  int rc = -1;
  uint32_t comps = label ? octile_components(&g, label) : UINT32_MAX;
  if (!label || !order || !freec || !drawn || !s || comps == UINT32_MAX)
    goto done;
  /* The free cells grouped by component (counting sort): a component's cells
   * are order[first[c] .. first[c] + size[c]). */
  first = calloc(comps + 1, sizeof *first);
  size = calloc(comps + 1, sizeof *size);
  if (!first || !size)
    goto done;
  uint32_t nfree = 0, biggest = 0;
  for (uint32_t i = 0; i < cells; i++)
    if (label[i] != UINT32_MAX) {
      size[label[i]]++;
      freec[nfree++] = i;
    }
  for (uint32_t c = 0; c < comps; c++) {
    first[c + 1] = first[c] + size[c];
    biggest = size[c] > biggest ? size[c] : biggest;
  }
  if (biggest < 2)
    goto done;
  for (uint32_t c = 0; c < comps; c++)
    size[c] = 0;
  for (uint32_t i = 0; i < nfree; i++) {
    uint32_t c = label[freec[i]];
    order[first[c] + size[c]++] = freec[i];
  }
  rng r = {seed ^ 0x5ce7a11d5ce7a11dull};
  for (uint32_t k = 0; k < n; k++) {
    uint32_t a, b, c;
    do { /* a start in a component of one cell is drawn again */
      a = freec[rng_below(&r, nfree)];
      c = label[a];
    } while (size[c] < 2);
    do
      b = order[first[c] + rng_below(&r, size[c])];
    while (b == a);
    double len = octile_shortest(s, &g, a % m->width, a / m->width, b % m->width, b / m->width, NULL);
    if (len < 0.0)
      goto done; /* cannot be: one component, no memory for the search */
    drawn[k] =
        (mapgen_problem){(uint32_t)(len / 4.0), a % m->width, a / m->width, b % m->width, b / m->width, len};
    buckets = drawn[k].bucket + 1 > buckets ? drawn[k].bucket + 1 : buckets;
  }
  /* by bucket, in drawn order within one (a counting sort, stable) */
  at = calloc(buckets + 1, sizeof *at);
  if (!at)
    goto done;
  for (uint32_t k = 0; k < n; k++)
    at[drawn[k].bucket + 1]++;
  for (uint32_t b = 0; b < buckets; b++)
    at[b + 1] += at[b];
  for (uint32_t k = 0; k < n; k++)
    out[at[drawn[k].bucket]++] = drawn[k];
  rc = 0;
done:
  free(label);
  free(order);
  free(first);
  free(size);
  free(freec);
  free(at);
  free(drawn);
  octile_search_destroy(s);
  return rc;
}

int mapgen_write_map(FILE *f, const mapgen_map *m) {
  fprintf(f, "type octile\nheight %u\nwidth %u\nmap\n", m->height, m->width);
  for (uint32_t y = 0; y < m->height; y++) {
    fwrite(m->cells + (size_t)y * m->width, 1, m->width, f);
    fputc('\n', f);
  }
  return ferror(f) ? -1 : 0;
}

int mapgen_write_scen(FILE *f, const char *map_name, const mapgen_map *m, const mapgen_problem *p,
                      uint32_t n) {
  fprintf(f, "version 1\n");
  for (uint32_t k = 0; k < n; k++)
    fprintf(f, "%u\t%s\t%u\t%u\t%u\t%u\t%u\t%u\t%.8f\n", p[k].bucket, map_name, m->width, m->height, p[k].sx,
            p[k].sy, p[k].gx, p[k].gy, p[k].optimal);
  return ferror(f) ? -1 : 0;
}

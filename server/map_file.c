/* map_file.c: the JSON map file, parsed with jansson, and Moving AI grid maps (see map_file.h);
 * which format a file is; Tiled maps are map_tiled.c. */
#include "map_file.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int steerd_map_fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* A finite number that fits a float. */
static int get_float(const json_t *v, float *out) {
  if (!json_is_number(v))
    return 0;
  double d = json_number_value(v);
  if (!isfinite(d) || fabs(d) > 3.0e38)
    return 0;
  *out = (float)d;
  return 1;
}

static int get_point(const json_t *v, vec2 *out) {
  return json_is_array(v) && json_array_size(v) == 2 && get_float(json_array_get(v, 0), &out->x) &&
         get_float(json_array_get(v, 1), &out->y);
}

static const char *kind_names[STEER_OBSTACLE_KIND_COUNT] = {"circle", "polygon", "wall"};

/* The rule of shape obstacle i breaks (steer_map_shape_fault), each with its
 * own message naming the point it is at. */
static int shape_error(const steer_map *m, const steer_obstacle_desc *d, const steer_map_fault *f, size_t i,
                       char *err, size_t errlen) {
  vec2 lo, hi;
  steer_map_bounds(m, &lo, &hi);
  int circle = d->kind == STEER_OBSTACLE_CIRCLE;
  vec2 p = d->points[f->at < d->count ? f->at : 0];
  switch (f->rule) {
  case STEER_MAP_RULE_OUTSIDE:
    if (circle)
      return steerd_map_fail(
          err, errlen, "obstacles[%zu].center: (%g, %g) is outside the world bounds (%g,%g)-(%g,%g)", i,
          (double)p.x, (double)p.y, (double)lo.x, (double)lo.y, (double)hi.x, (double)hi.y);
    return steerd_map_fail(
        err, errlen, "obstacles[%zu].points[%u]: (%g, %g) is outside the world bounds (%g,%g)-(%g,%g)", i,
        f->at, (double)p.x, (double)p.y, (double)lo.x, (double)lo.y, (double)hi.x, (double)hi.y);
  case STEER_MAP_RULE_REACHES_OUT:
    return steerd_map_fail(
        err, errlen, "obstacles[%zu].radius: the circle reaches outside the world bounds (%g,%g)-(%g,%g)", i,
        (double)lo.x, (double)lo.y, (double)hi.x, (double)hi.y);
  case STEER_MAP_RULE_SHORT_EDGE:
    return steerd_map_fail(err, errlen,
                           "obstacles[%zu].points[%u]: the edge from points[%u] is shorter than 1 mm", i,
                           f->at, f->other);
  case STEER_MAP_RULE_CROSSING:
    return steerd_map_fail(
        err, errlen, "obstacles[%zu].points: the edges from points[%u] and from points[%u] cross or touch", i,
        f->at, f->other);
  case STEER_MAP_RULE_NO_AREA:
    return steerd_map_fail(
        err, errlen, "obstacles[%zu].points: the polygon has zero area (less than 1 square millimetre)", i);
  case STEER_MAP_RULE_FOLD:
    return steerd_map_fail(err, errlen,
                           "obstacles[%zu].points[%u]: the edges meeting there fold back onto each other", i,
                           f->at);
  default:
    return steerd_map_fail(err, errlen, "obstacles[%zu]: not a valid %s", i, kind_names[d->kind]);
  }
}

/* One obstacle; i is its index in "obstacles", pts holds STEER_MAP_MAX_VERTICES. */
static int parse_obstacle(const json_t *o, size_t i, steer_map *m, vec2 *pts, char *err, size_t errlen) {
  if (!json_is_object(o))
    return steerd_map_fail(err, errlen, "obstacles[%zu]: not an object", i);
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)o, key, val) {
    if (strcmp(key, "id") && strcmp(key, "type") && strcmp(key, "center") && strcmp(key, "radius") &&
        strcmp(key, "points"))
      return steerd_map_fail(err, errlen,
                             "obstacles[%zu].%s: unknown field (id, type, center, radius, points)", i, key);
  }
  const json_t *id = json_object_get(o, "id");
  if (!json_is_integer(id) || json_integer_value(id) < 1 || json_integer_value(id) > 4294967295LL)
    return steerd_map_fail(err, errlen, "obstacles[%zu].id: missing or not an integer 1..4294967295", i);
  uint32_t oid = (uint32_t)json_integer_value(id);
  const char *type = json_string_value(json_object_get(o, "type"));
  int kind = -1;
  for (int k = 0; type && k < STEER_OBSTACLE_KIND_COUNT; k++)
    if (strcmp(type, kind_names[k]) == 0)
      kind = k;
  if (kind < 0)
    return steerd_map_fail(err, errlen, "obstacles[%zu].type: missing or not one of circle, polygon, wall",
                           i);
  steer_obstacle_desc d = {(uint8_t)kind, 0, pts, 0.0f};
  if (kind == STEER_OBSTACLE_CIRCLE) {
    if (json_object_get(o, "points"))
      return steerd_map_fail(err, errlen, "obstacles[%zu].points: a circle has center and radius", i);
    if (!get_point(json_object_get(o, "center"), &pts[0]))
      return steerd_map_fail(err, errlen,
                             "obstacles[%zu].center: missing or not an [x, y] pair of finite numbers", i);
    if (!get_float(json_object_get(o, "radius"), &d.radius) || !(d.radius >= STEER_MAP_MIN_EXTENT))
      return steerd_map_fail(err, errlen, "obstacles[%zu].radius: missing or not a number >= %g", i,
                             (double)STEER_MAP_MIN_EXTENT);
    d.count = 1;
  } else {
    if (json_object_get(o, "center") || json_object_get(o, "radius"))
      return steerd_map_fail(err, errlen, "obstacles[%zu]: a %s has points, not center or radius", i, type);
    const json_t *p = json_object_get(o, "points");
    size_t least = kind == STEER_OBSTACLE_POLYGON ? 3 : 2;
    if (!json_is_array(p) || json_array_size(p) < least || json_array_size(p) > STEER_MAP_MAX_VERTICES)
      return steerd_map_fail(err, errlen, "obstacles[%zu].points: missing or not an array of %zu..%u points",
                             i, least, STEER_MAP_MAX_VERTICES);
    d.count = (uint32_t)json_array_size(p);
    for (size_t k = 0; k < d.count; k++)
      if (!get_point(json_array_get(p, k), &pts[k]))
        return steerd_map_fail(err, errlen,
                               "obstacles[%zu].points[%zu]: not an [x, y] pair of finite numbers", i, k);
  }
  if (steer_map_find(m, oid) >= 0)
    return steerd_map_fail(err, errlen, "obstacles[%zu].id: %u is used by an earlier obstacle", i, oid);
  steer_map_fault f;
  if (steer_map_shape_fault(m, &d, &f) != STEER_MAP_RULE_OK)
    return shape_error(m, &d, &f, i, err, errlen);
  int rc = steer_map_add(m, oid, &d);
  if (rc == STEER_EFULL)
    return steerd_map_fail(err, errlen, "obstacles[%zu]: the map is full (%u obstacles, %u segments)", i,
                           STEER_MAP_MAX_OBSTACLES, STEER_MAP_MAX_SEGMENTS);
  if (rc == STEER_ENOMEM)
    return steerd_map_fail(err, errlen, "obstacles[%zu]: out of memory", i);
  if (rc != STEER_OK)
    return steerd_map_fail(err, errlen, "obstacles[%zu]: refused by the map (%s)", i, steer_strerror(rc));
  return 0;
}

int steerd_map_parse(const char *text, size_t len, steer_map *m, char *err, size_t errlen) {
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return steerd_map_fail(err, errlen, "line %d, column %d: %s", je.line, je.column, je.text);
  int rc = 0;
  vec2 *pts = malloc(STEER_MAP_MAX_VERTICES * sizeof(vec2));
  const char *key;
  json_t *val;
  if (!pts) {
    rc = steerd_map_fail(err, errlen, "out of memory");
    goto done;
  }
  if (!json_is_object(root)) {
    rc = steerd_map_fail(err, errlen, "the file is not a JSON object");
    goto done;
  }
  json_object_foreach(root, key, val) {
    if (strcmp(key, "format") && strcmp(key, "version") && strcmp(key, "obstacles")) {
      rc = steerd_map_fail(err, errlen, "%s: unknown field (format, version, obstacles)", key);
      goto done;
    }
  }
  const char *format = json_string_value(json_object_get(root, "format"));
  if (!format || strcmp(format, "steerd-map") != 0) {
    rc = steerd_map_fail(err, errlen, "format: missing or not \"steerd-map\"");
    goto done;
  }
  const json_t *ver = json_object_get(root, "version");
  if (!json_is_integer(ver)) {
    rc = steerd_map_fail(err, errlen, "version: missing or not an integer");
    goto done;
  }
  if (json_integer_value(ver) != STEERD_MAP_FILE_VERSION) {
    rc = steerd_map_fail(err, errlen, "version: %lld is not supported (this server reads %d)",
                         (long long)json_integer_value(ver), STEERD_MAP_FILE_VERSION);
    goto done;
  }
  const json_t *obs = json_object_get(root, "obstacles");
  if (!json_is_array(obs)) {
    rc = steerd_map_fail(err, errlen, "obstacles: missing or not an array");
    goto done;
  }
  steer_map_hold(m); /* one index build for the whole file */
  for (size_t i = 0; i < json_array_size(obs) && rc == 0; i++)
    rc = parse_obstacle(json_array_get(obs, i), i, m, pts, err, errlen);
  if (steer_map_release(m) != STEER_OK && rc == 0)
    rc = steerd_map_fail(err, errlen, "out of memory");
done:
  free(pts);
  json_decref(root);
  return rc;
}

/* What a map text is: steerd's JSON, a Moving AI grid or a Tiled map. */
enum { MAP_JSON = 0, MAP_GRID, MAP_TILED };

static int load_text(const char *text, size_t len, int kind, const char *dir, steer_world *w, char *err,
                     size_t errlen);

int steerd_map_file_load(const char *path, steer_world *w, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return steerd_map_fail(err, errlen, "map file %s: %s", path, strerror(errno));
  char *buf = malloc(STEERD_MAP_FILE_MAX_BYTES + 1u);
  size_t len = buf ? fread(buf, 1, STEERD_MAP_FILE_MAX_BYTES + 1u, f) : 0;
  int rd_err = ferror(f);
  fclose(f);
  if (!buf)
    return steerd_map_fail(err, errlen, "map file %s: out of memory", path);
  if (rd_err || len > STEERD_MAP_FILE_MAX_BYTES) {
    free(buf);
    return steerd_map_fail(err, errlen, "map file %s: %s", path,
                           rd_err ? "read error" : "larger than 64 MiB");
  }
  char why[256];
  size_t plen = strlen(path);
  int kind =
      steerd_map_is_movingai(buf, len) || (plen >= 4 && strcmp(path + plen - 4, ".map") == 0) ? MAP_GRID
      : steerd_map_is_tiled(buf, len) || (plen >= 4 && strcmp(path + plen - 4, ".tmj") == 0)  ? MAP_TILED
                                                                                              : MAP_JSON;
  /* A Tiled map's external tilesets are named relative to it. */
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (slash)
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path > 0 ? slash - path : 1), path);
  else
    snprintf(dir, sizeof dir, ".");
  int rc = load_text(buf, len, kind, dir, w, why, sizeof why);
  free(buf);
  return rc != 0 ? steerd_map_fail(err, errlen, "map file %s: %s", path, why) : 0;
}

int steerd_map_text_load(const char *text, size_t len, steer_world *w, char *err, size_t errlen) {
  int kind = steerd_map_is_movingai(text, len) ? MAP_GRID
             : steerd_map_is_tiled(text, len)  ? MAP_TILED
                                               : MAP_JSON;
  return load_text(text, len, kind, NULL, w, err, errlen);
}

/* kind: MAP_*; dir: where a Tiled map's external tilesets are (NULL: none). */
static int load_text(const char *text, size_t len, int kind, const char *dir, steer_world *w, char *err,
                     size_t errlen) {
  const steer_world_config *c = steer_world_get_config(w);
  steer_map *m = steer_map_create(c->min, c->max, c->cell_size);
  int grid = kind == MAP_GRID;
  int rc = !m                  ? steerd_map_fail(err, errlen, "out of memory")
           : grid              ? steerd_map_parse_movingai(text, len, m, err, errlen)
           : kind == MAP_TILED ? steerd_map_parse_tiled(text, len, dir, m, err, errlen)
                               : steerd_map_parse(text, len, m, err, errlen);
  if (rc != 0) {
    steer_map_destroy(m);
    return -1;
  }
  /* Into the world in file order: agents already there (a demo) are moved out. */
  uint32_t failed = 0, n = steer_map_count(m);
  int arc = steer_world_add_obstacles(w, m, NULL, &failed);
  steer_map_destroy(m);
  if (arc == STEER_OK)
    return 0;
  if (failed < n && kind == MAP_TILED)
    return steerd_map_fail(err, errlen, "obstacle %u of the map: %s", failed + 1, steer_strerror(arc));
  if (failed < n)
    return steerd_map_fail(err, errlen, grid ? "rectangle %u: %s" : "obstacles[%u]: %s",
                           grid ? failed + 1 : failed, steer_strerror(arc));
  return steerd_map_fail(err, errlen, "the map: %s", steer_strerror(arc));
}

/* ---- Moving AI grid maps -------------------------------------------------- */

/* The lines of a text, one at a time: its bytes without the '\n' and a CR
 * before it; no and n count from 1 for the messages. */
typedef struct line_reader {
  const char *p, *end;
  uint32_t no;
} line_reader;

static int next_line(line_reader *r, const char **line, size_t *n) {
  if (r->p >= r->end)
    return 0;
  const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
  const char *stop = nl ? nl : r->end;
  *line = r->p;
  *n = (size_t)(stop - r->p);
  if (*n && (*line)[*n - 1] == '\r')
    (*n)--;
  r->p = nl ? nl + 1 : r->end;
  r->no++;
  return 1;
}

/* The line without its trailing blanks. */
static size_t trimmed(const char *line, size_t n) {
  while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
    n--;
  return n;
}

static int line_is(const char *line, size_t n, const char *word) {
  return trimmed(line, n) == strlen(word) && memcmp(line, word, n < strlen(word) ? n : strlen(word)) == 0;
}

/* "KEY N" with N a decimal 1..STEERD_GRID_MAP_MAX_SIDE; 0 on anything else. */
static uint32_t header_number(const char *line, size_t n, const char *key) {
  size_t k = strlen(key), end = trimmed(line, n);
  if (end <= k || memcmp(line, key, k) != 0 || (line[k] != ' ' && line[k] != '\t'))
    return 0;
  size_t i = k;
  while (i < end && (line[i] == ' ' || line[i] == '\t'))
    i++;
  uint64_t v = 0;
  if (i == end)
    return 0;
  for (; i < end; i++) {
    if (line[i] < '0' || line[i] > '9')
      return 0;
    v = v * 10u + (uint64_t)(line[i] - '0');
    if (v > STEERD_GRID_MAP_MAX_SIDE)
      return 0;
  }
  return (uint32_t)v;
}

int steerd_map_is_movingai(const char *text, size_t len) {
  line_reader r = {text, text + len, 0};
  const char *line;
  size_t n;
  return text && next_line(&r, &line, &n) && line_is(line, n, "type octile");
}

/* 1 blocked, 0 free, -1 not a cell. */
static int cell_kind(unsigned char c) {
  if (c == '.' || c == 'G')
    return 0;
  if (c == '@' || c == 'O' || c == 'T' || c == 'S' || c == 'W')
    return 1;
  return -1;
}

void steerd_grid_map_free(steerd_grid_map *g) {
  if (!g)
    return;
  free(g->blocked);
  g->blocked = NULL;
  g->width = g->height = 0;
}

int steerd_grid_map_read(const char *text, size_t len, steerd_grid_map *g, char *err, size_t errlen) {
  g->width = g->height = 0;
  g->blocked = NULL;
  line_reader r = {text, text + len, 0};
  const char *line;
  size_t n;
  if (!text || !next_line(&r, &line, &n) || !line_is(line, n, "type octile"))
    return steerd_map_fail(err, errlen,
                           "line 1: not a Moving AI map (the first line is not \"type octile\")");
  uint32_t w = 0, h = 0;
  /* height and width, either order (the benchmark's files give height first) */
  for (int k = 0; k < 2; k++) {
    if (!next_line(&r, &line, &n))
      return steerd_map_fail(err, errlen, "line %u: the file ends in the header (height H, width W, map)",
                             r.no + 1);
    uint32_t v;
    if (!h && (v = header_number(line, n, "height")) != 0)
      h = v;
    else if (!w && (v = header_number(line, n, "width")) != 0)
      w = v;
    else
      return steerd_map_fail(err, errlen, "line %u: not \"%s N\" with N from 1 to %u", r.no,
                             h ? "width" : "height", STEERD_GRID_MAP_MAX_SIDE);
  }
  if (!next_line(&r, &line, &n))
    return steerd_map_fail(err, errlen, "line %u: the file ends before \"map\" (the line before the rows)",
                           r.no + 1);
  if (!line_is(line, n, "map"))
    return steerd_map_fail(err, errlen, "line %u: not \"map\" (the line before the rows)", r.no);
  uint8_t *cells = malloc((size_t)w * h);
  if (!cells)
    return steerd_map_fail(err, errlen, "out of memory for a %u x %u map", w, h);
  for (uint32_t y = 0; y < h; y++) {
    if (!next_line(&r, &line, &n)) {
      free(cells);
      return steerd_map_fail(err, errlen, "line %u: the file ends after %u of %u rows", r.no + 1, y, h);
    }
    size_t check = n < w ? n : w;
    for (size_t x = 0; x < check; x++) {
      int k = cell_kind((unsigned char)line[x]);
      if (k < 0) {
        unsigned char c = (unsigned char)line[x];
        free(cells);
        if (c >= 0x21 && c < 0x7f)
          return steerd_map_fail(err, errlen,
                                 "line %u, column %zu: '%c' is not a map cell (. G free; @ O T S W blocked)",
                                 r.no, x + 1, c);
        return steerd_map_fail(
            err, errlen, "line %u, column %zu: byte 0x%02x is not a map cell (. G free; @ O T S W blocked)",
            r.no, x + 1, c);
      }
      cells[(size_t)y * w + x] = (uint8_t)k;
    }
    if (n != w) {
      free(cells);
      return steerd_map_fail(err, errlen, "line %u: a row of %zu cells, the map is %u wide", r.no, n, w);
    }
  }
  while (next_line(&r, &line, &n))
    if (trimmed(line, n) != 0) {
      free(cells);
      return steerd_map_fail(err, errlen, "line %u: more rows than the map's height (%u)", r.no, h);
    }
  g->width = w;
  g->height = h;
  g->blocked = cells;
  return 0;
}

typedef struct grid_rect {
  uint32_t x0, y0, x1, y1; /* cells [x0, x1) x [y0, y1) */
} grid_rect;

int steerd_grid_map_add(const steerd_grid_map *g, steer_map *m, char *err, size_t errlen) {
  return steerd_grid_map_add_from(g, m, 1, err, errlen);
}

int steerd_grid_map_add_from(const steerd_grid_map *g, steer_map *m, uint32_t first_id, char *err,
                             size_t errlen) {
  uint32_t w = g->width, h = g->height;
  /* The bounds first: a map that would not fit is refused whole, with what
   * the world needs, not at its first rectangle outside. */
  vec2 corners[2] = {v2(0.0f, 0.0f), v2((float)w, (float)h)};
  steer_obstacle_desc probe = {STEER_OBSTACLE_WALL, 2, corners, 0.0f};
  uint32_t probe_id = 1;
  while (steer_map_find(m, probe_id) >= 0)
    probe_id++;
  if (steer_map_check(m, probe_id, &probe) == STEER_EINVAL)
    return steerd_map_fail(
        err, errlen,
        "the map is %u x %u m: start the server with bounds covering [0,%u]x[0,%u] (--world "
        "0,0,%u,%u)",
        w, h, w, h, w, h);
  /* Rectangles in the order of their top-left cells: a run of row y extends
   * the rectangle whose x-span it repeats from row y - 1 (open[x0] holds it,
   * one slot per first column), else starts a new one. */
  size_t cap = 1024, count = 0;
  grid_rect *rects = malloc(cap * sizeof *rects);
  uint32_t *open = malloc((size_t)w * sizeof *open);
  if (!rects || !open) {
    free(rects);
    free(open);
    return steerd_map_fail(err, errlen, "out of memory");
  }
  for (uint32_t x = 0; x < w; x++)
    open[x] = UINT32_MAX;
  for (uint32_t y = 0; y < h; y++) {
    const uint8_t *row = g->blocked + (size_t)y * w;
    for (uint32_t x = 0; x < w;) {
      if (!row[x]) {
        open[x++] = UINT32_MAX; /* no run starts here in this row */
        continue;
      }
      uint32_t x0 = x;
      while (x < w && row[x])
        x++;
      uint32_t r = open[x0];
      if (r != UINT32_MAX && rects[r].x1 == x && rects[r].y1 == y) {
        rects[r].y1 = y + 1;
      } else {
        if (count == cap) {
          grid_rect *more = realloc(rects, 2 * cap * sizeof *rects);
          if (!more) {
            free(rects);
            free(open);
            return steerd_map_fail(err, errlen, "out of memory");
          }
          rects = more;
          cap *= 2;
        }
        rects[count] = (grid_rect){x0, y, x, y + 1};
        r = (uint32_t)count++;
      }
      open[x0] = r;
      for (uint32_t k = x0 + 1; k < x; k++)
        open[k] = UINT32_MAX;
    }
  }
  free(open);
  if (steer_map_count(m) + count > STEER_MAP_MAX_OBSTACLES || count > UINT32_MAX - first_id) {
    free(rects);
    return steerd_map_fail(
        err, errlen, "the map's blocked cells make %zu rectangles, more than the %u obstacles a map holds",
        count, STEER_MAP_MAX_OBSTACLES);
  }
  int rc = 0;
  steer_map_hold(m); /* one index build for the whole map */
  for (size_t i = 0; i < count && rc == 0; i++) {
    const grid_rect *q = &rects[i];
    vec2 p[4] = {v2((float)q->x0, (float)q->y0), v2((float)q->x1, (float)q->y0),
                 v2((float)q->x1, (float)q->y1), v2((float)q->x0, (float)q->y1)};
    steer_obstacle_desc d = {STEER_OBSTACLE_POLYGON, 4, p, 0.0f};
    uint32_t id = first_id + (uint32_t)i;
    int arc = steer_map_add(m, id, &d);
    if (arc == STEER_EFULL)
      rc = steerd_map_fail(
          err, errlen, "rectangle %u (cells %u..%u x %u..%u): the map is full (%u obstacles, %u segments)",
          id, q->x0, q->x1 - 1, q->y0, q->y1 - 1, STEER_MAP_MAX_OBSTACLES, STEER_MAP_MAX_SEGMENTS);
    else if (arc == STEER_ENOMEM)
      rc = steerd_map_fail(err, errlen, "out of memory");
    else if (arc != STEER_OK)
      rc = steerd_map_fail(err, errlen,
                           "rectangle %u (cells %u..%u x %u..%u): id %u is used by another obstacle", id,
                           q->x0, q->x1 - 1, q->y0, q->y1 - 1, id);
  }
  if (steer_map_release(m) != STEER_OK && rc == 0)
    rc = steerd_map_fail(err, errlen, "out of memory");
  free(rects);
  return rc;
}

int steerd_map_parse_movingai(const char *text, size_t len, steer_map *m, char *err, size_t errlen) {
  steerd_grid_map g;
  if (steerd_grid_map_read(text, len, &g, err, errlen) != 0)
    return -1;
  int rc = steerd_grid_map_add(&g, m, err, errlen);
  steerd_grid_map_free(&g);
  return rc;
}

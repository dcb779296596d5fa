/* map_file.c: the JSON map file, parsed with jansson (see map_file.h). */
#include "map_file.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t errlen, const char *fmt, ...) {
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

/* One obstacle; i is its index in "obstacles", pts holds STEER_MAP_MAX_VERTICES. */
static int parse_obstacle(const json_t *o, size_t i, steer_map *m, vec2 *pts, char *err, size_t errlen) {
  if (!json_is_object(o))
    return fail(err, errlen, "obstacles[%zu]: not an object", i);
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)o, key, val) {
    if (strcmp(key, "id") && strcmp(key, "type") && strcmp(key, "center") && strcmp(key, "radius") &&
        strcmp(key, "points"))
      return fail(err, errlen, "obstacles[%zu].%s: unknown field (id, type, center, radius, points)", i, key);
  }
  const json_t *id = json_object_get(o, "id");
  if (!json_is_integer(id) || json_integer_value(id) < 1 || json_integer_value(id) > 4294967295LL)
    return fail(err, errlen, "obstacles[%zu].id: missing or not an integer 1..4294967295", i);
  uint32_t oid = (uint32_t)json_integer_value(id);
  const char *type = json_string_value(json_object_get(o, "type"));
  int kind = -1;
  for (int k = 0; type && k < STEER_OBSTACLE_KIND_COUNT; k++)
    if (strcmp(type, kind_names[k]) == 0)
      kind = k;
  if (kind < 0)
    return fail(err, errlen, "obstacles[%zu].type: missing or not one of circle, polygon, wall", i);
  steer_obstacle_desc d = {(uint8_t)kind, 0, pts, 0.0f};
  if (kind == STEER_OBSTACLE_CIRCLE) {
    if (json_object_get(o, "points"))
      return fail(err, errlen, "obstacles[%zu].points: a circle has center and radius", i);
    if (!get_point(json_object_get(o, "center"), &pts[0]))
      return fail(err, errlen, "obstacles[%zu].center: missing or not an [x, y] pair of finite numbers", i);
    if (!get_float(json_object_get(o, "radius"), &d.radius) || !(d.radius >= STEER_MAP_MIN_EXTENT))
      return fail(err, errlen, "obstacles[%zu].radius: missing or not a number >= %g", i,
                  (double)STEER_MAP_MIN_EXTENT);
    d.count = 1;
  } else {
    if (json_object_get(o, "center") || json_object_get(o, "radius"))
      return fail(err, errlen, "obstacles[%zu]: a %s has points, not center or radius", i, type);
    const json_t *p = json_object_get(o, "points");
    size_t least = kind == STEER_OBSTACLE_POLYGON ? 3 : 2;
    if (!json_is_array(p) || json_array_size(p) < least || json_array_size(p) > STEER_MAP_MAX_VERTICES)
      return fail(err, errlen, "obstacles[%zu].points: missing or not an array of %zu..%u points", i, least,
                  STEER_MAP_MAX_VERTICES);
    d.count = (uint32_t)json_array_size(p);
    for (size_t k = 0; k < d.count; k++)
      if (!get_point(json_array_get(p, k), &pts[k]))
        return fail(err, errlen, "obstacles[%zu].points[%zu]: not an [x, y] pair of finite numbers", i, k);
  }
  if (steer_map_find(m, oid) >= 0)
    return fail(err, errlen, "obstacles[%zu].id: %u is used by an earlier obstacle", i, oid);
  int rc = steer_map_add(m, oid, &d);
  if (rc == STEER_EFULL)
    return fail(err, errlen, "obstacles[%zu]: the map is full (%u obstacles, %u segments)", i,
                STEER_MAP_MAX_OBSTACLES, STEER_MAP_MAX_SEGMENTS);
  if (rc == STEER_ENOMEM)
    return fail(err, errlen, "obstacles[%zu]: out of memory", i);
  if (rc != STEER_OK)
    return fail(err, errlen,
                kind == STEER_OBSTACLE_CIRCLE
                    ? "obstacles[%zu].center: the circle is not inside the world bounds"
                    : "obstacles[%zu].points: a point outside the world bounds, an edge shorter than 1 mm, or "
                      "(polygon) zero area or crossing edges",
                i);
  return 0;
}

int steerd_map_parse(const char *text, size_t len, steer_map *m, char *err, size_t errlen) {
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return fail(err, errlen, "line %d, column %d: %s", je.line, je.column, je.text);
  int rc = 0;
  vec2 *pts = malloc(STEER_MAP_MAX_VERTICES * sizeof(vec2));
  const char *key;
  json_t *val;
  if (!pts) {
    rc = fail(err, errlen, "out of memory");
    goto done;
  }
  if (!json_is_object(root)) {
    rc = fail(err, errlen, "the file is not a JSON object");
    goto done;
  }
  json_object_foreach(root, key, val) {
    if (strcmp(key, "format") && strcmp(key, "version") && strcmp(key, "obstacles")) {
      rc = fail(err, errlen, "%s: unknown field (format, version, obstacles)", key);
      goto done;
    }
  }
  const char *format = json_string_value(json_object_get(root, "format"));
  if (!format || strcmp(format, "steerd-map") != 0) {
    rc = fail(err, errlen, "format: missing or not \"steerd-map\"");
    goto done;
  }
  const json_t *ver = json_object_get(root, "version");
  if (!json_is_integer(ver)) {
    rc = fail(err, errlen, "version: missing or not an integer");
    goto done;
  }
  if (json_integer_value(ver) != STEERD_MAP_FILE_VERSION) {
    rc = fail(err, errlen, "version: %lld is not supported (this server reads %d)",
              (long long)json_integer_value(ver), STEERD_MAP_FILE_VERSION);
    goto done;
  }
  const json_t *obs = json_object_get(root, "obstacles");
  if (!json_is_array(obs)) {
    rc = fail(err, errlen, "obstacles: missing or not an array");
    goto done;
  }
  steer_map_hold(m); /* one index build for the whole file */
  for (size_t i = 0; i < json_array_size(obs) && rc == 0; i++)
    rc = parse_obstacle(json_array_get(obs, i), i, m, pts, err, errlen);
  if (steer_map_release(m) != STEER_OK && rc == 0)
    rc = fail(err, errlen, "out of memory");
done:
  free(pts);
  json_decref(root);
  return rc;
}

int steerd_map_file_load(const char *path, steer_world *w, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return fail(err, errlen, "map file %s: %s", path, strerror(errno));
  char *buf = malloc(STEERD_MAP_FILE_MAX_BYTES + 1u);
  size_t len = buf ? fread(buf, 1, STEERD_MAP_FILE_MAX_BYTES + 1u, f) : 0;
  int rd_err = ferror(f);
  fclose(f);
  if (!buf)
    return fail(err, errlen, "map file %s: out of memory", path);
  if (rd_err || len > STEERD_MAP_FILE_MAX_BYTES) {
    free(buf);
    return fail(err, errlen, "map file %s: %s", path, rd_err ? "read error" : "larger than 64 MiB");
  }
  char why[256];
  int rc = steerd_map_text_load(buf, len, w, why, sizeof why);
  free(buf);
  return rc != 0 ? fail(err, errlen, "map file %s: %s", path, why) : 0;
}

int steerd_map_text_load(const char *text, size_t len, steer_world *w, char *err, size_t errlen) {
  const steer_world_config *c = steer_world_get_config(w);
  steer_map *m = steer_map_create(c->min, c->max, c->cell_size);
  int rc = m ? steerd_map_parse(text, len, m, err, errlen) : fail(err, errlen, "out of memory");
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
  if (failed < n)
    return fail(err, errlen, "obstacles[%u]: %s", failed, steer_strerror(arc));
  return fail(err, errlen, "the map: %s", steer_strerror(arc));
}

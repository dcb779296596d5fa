/* map_tiled.c: levels made in the Tiled map editor, read from its JSON map
 * format (.tmj; map_file.h has the rules, PROTOCOL.md "Tiled maps" the
 * normative text). Collision tiles become the same rectangles as a grid map's
 * blocked cells; objects become obstacles of their own kind and Tiled id. */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "map_file.h"

/* Tiled's flip and rotation bits in a tile layer's global tile ids. */
#define GID_FLAGS 0xF0000000u
/* Sides of the polygon an ellipse that is not a circle becomes: enclosing it
 * (a body kept off the polygon is kept off the ellipse) within its box (one
 * that touches the map's edge stays inside the map). */
#define ELLIPSE_SIDES 16u
/* An external tileset file larger than this is refused. */
#define TILESET_MAX_BYTES (16u << 20)

/* The value of the property named name in v's "properties" (Tiled's list of
 * {name, type, value}), or NULL. */
static const json_t *property(const json_t *v, const char *name) {
  const json_t *props = json_object_get(v, "properties");
  for (size_t i = 0; json_is_array(props) && i < json_array_size(props); i++) {
    const json_t *p = json_array_get(props, i);
    const char *n = json_string_value(json_object_get(p, "name"));
    if (n && strcmp(n, name) == 0)
      return json_object_get(p, "value");
  }
  return NULL;
}

/* 1 when v's "collision" property is true, 0 when false, -1 when it has none. */
static int collision(const json_t *v) {
  const json_t *c = property(v, "collision");
  return json_is_boolean(c) ? json_is_true(c) : -1;
}

/* A finite number that fits a float, in *out. */
static int number(const json_t *v, double *out) {
  if (!json_is_number(v))
    return 0;
  double d = json_number_value(v);
  if (!isfinite(d) || fabs(d) > 3.0e38)
    return 0;
  *out = d;
  return 1;
}

/* ---- tilesets: which global tile ids collide -------------------------------- */

typedef struct solid_set {
  uint8_t *solid; /* by global tile id (flags cleared) */
  uint32_t cap;   /* ids below it */
} solid_set;

static int mark_solid(solid_set *s, uint64_t gid) {
  if (gid >= GID_FLAGS)
    return 0;
  if (gid >= s->cap) {
    uint32_t cap = s->cap ? s->cap : 256u;
    while (cap <= gid)
      cap *= 2u;
    uint8_t *more = realloc(s->solid, cap);
    if (!more)
      return 0;
    memset(more + s->cap, 0, cap - s->cap);
    s->solid = more;
    s->cap = cap;
  }
  s->solid[gid] = 1;
  return 1;
}

/* An external tileset: dir/source read and parsed (the caller frees it). */
static json_t *load_tileset(const char *dir, const char *source, char *err, size_t errlen) {
  if (!dir) {
    steerd_map_fail(err, errlen,
                    "tileset \"%s\": an external tileset is read only from a map file (next to it)", source);
    return NULL;
  }
  char path[4096];
  if (source[0] == '/')
    snprintf(path, sizeof path, "%s", source);
  else
    snprintf(path, sizeof path, "%s/%s", dir, source);
  FILE *f = fopen(path, "rb");
  if (!f) {
    steerd_map_fail(err, errlen, "tileset %s: %s", path, strerror(errno));
    return NULL;
  }
  json_error_t je;
  json_t *t = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
  long size = ftell(f);
  fclose(f);
  if (!t) {
    steerd_map_fail(err, errlen, "tileset %s: line %d, column %d: %s", path, je.line, je.column, je.text);
    return NULL;
  }
  if (size > (long)TILESET_MAX_BYTES || !json_is_object(t)) {
    json_decref(t);
    steerd_map_fail(err, errlen, "tileset %s: not a Tiled JSON tileset", path);
    return NULL;
  }
  return t;
}

/* The collision tiles of every tileset of the map. */
static int read_tilesets(const json_t *root, const char *dir, solid_set *s, char *err, size_t errlen) {
  const json_t *sets = json_object_get(root, "tilesets");
  for (size_t i = 0; json_is_array(sets) && i < json_array_size(sets); i++) {
    const json_t *ts = json_array_get(sets, i);
    const json_t *first = json_object_get(ts, "firstgid");
    if (!json_is_integer(first) || json_integer_value(first) < 1 || json_integer_value(first) >= GID_FLAGS)
      return steerd_map_fail(err, errlen, "tilesets[%zu].firstgid: missing or not a tile id", i);
    json_t *ext = NULL;
    const char *source = json_string_value(json_object_get(ts, "source"));
    if (source) {
      if (!(ext = load_tileset(dir, source, err, errlen)))
        return -1;
      ts = ext;
    }
    const json_t *tiles = json_object_get(ts, "tiles");
    int rc = 0;
    for (size_t k = 0; rc == 0 && json_is_array(tiles) && k < json_array_size(tiles); k++) {
      const json_t *tile = json_array_get(tiles, k);
      const json_t *id = json_object_get(tile, "id");
      if (!json_is_integer(id) || json_integer_value(id) < 0)
        rc = steerd_map_fail(err, errlen, "tilesets[%zu].tiles[%zu].id: missing or not a tile index", i, k);
      else if (collision(tile) == 1 &&
               !mark_solid(s, (uint64_t)json_integer_value(first) + (uint64_t)json_integer_value(id)))
        rc = steerd_map_fail(err, errlen, "tilesets[%zu].tiles[%zu]: not a tile id this reader keeps", i, k);
    }
    json_decref(ext);
    if (rc != 0)
      return rc;
  }
  return 0;
}

/* ---- tile layers -------------------------------------------------------------- */

/* Decodes base64 (padded, libsodium's decoder) into a new buffer of *n bytes;
 * NULL when s is not base64 or memory is short. */
static uint8_t *b64_decode(const char *s, size_t len, size_t *n) {
  size_t cap = len / 4u * 3u + 1u;
  uint8_t *out = malloc(cap);
  if (out && sodium_base642bin(out, cap, s, len, NULL, n, NULL, sodium_base64_VARIANT_ORIGINAL) != 0) {
    free(out);
    return NULL;
  }
  return out;
}

/* Marks g's cells whose tile in layer l collides. */
static int read_tile_layer(const json_t *l, const char *name, const solid_set *s, steerd_grid_map *g,
                           char *err, size_t errlen) {
  const json_t *w = json_object_get(l, "width"), *h = json_object_get(l, "height");
  if (!json_is_integer(w) || !json_is_integer(h) || json_integer_value(w) != g->width ||
      json_integer_value(h) != g->height)
    return steerd_map_fail(err, errlen,
                           "layer \"%s\": a tile layer of another size than the map (%u x %u tiles)", name,
                           g->width, g->height);
  double ox = 0.0, oy = 0.0;
  number(json_object_get(l, "offsetx"), &ox);
  number(json_object_get(l, "offsety"), &oy);
  if (ox != 0.0 || oy != 0.0)
    return steerd_map_fail(
        err, errlen, "layer \"%s\": an offset tile layer (its tiles would not be the map's cells)", name);
  const char *compression = json_string_value(json_object_get(l, "compression"));
  if (compression && compression[0])
    return steerd_map_fail(
        err, errlen,
        "layer \"%s\": %s-compressed tile data is not read (in Tiled: Map > Map Properties > Tile "
        "Layer Format: CSV or Base64 (uncompressed))",
        name, compression);
  const json_t *data = json_object_get(l, "data");
  const char *b64 = json_string_value(data);
  size_t cells = (size_t)g->width * g->height, nbytes = 0;
  uint8_t *bytes = b64 ? b64_decode(b64, strlen(b64), &nbytes) : NULL;
  int rc = 0;
  if (b64 ? !bytes || nbytes != 4u * cells : !(json_is_array(data) && json_array_size(data) == cells))
    rc = steerd_map_fail(
        err, errlen, "layer \"%s\".data: not %zu tile ids (an array, or base64 of 32-bit ids)", name, cells);
  for (size_t i = 0; rc == 0 && i < cells; i++) {
    uint32_t gid;
    if (bytes) {
      const uint8_t *q = bytes + 4u * i; /* little-endian */
      gid = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
    } else {
      const json_t *v = json_array_get(data, i);
      if (!json_is_integer(v) || json_integer_value(v) < 0 ||
          json_integer_value(v) > (json_int_t)UINT32_MAX) {
        rc = steerd_map_fail(err, errlen, "layer \"%s\".data[%zu]: not a tile id", name, i);
        break;
      }
      gid = (uint32_t)json_integer_value(v);
    }
    gid &= ~GID_FLAGS;
    if (gid < s->cap && s->solid[gid])
      g->blocked[i] = 1;
  }
  free(bytes);
  return rc;
}

/* ---- objects ------------------------------------------------------------------ */

typedef struct tiled_ctx {
  steer_map *m;
  double tw, th; /* pixels of a tile: a metre */
  vec2 *pts;     /* STEER_MAP_MAX_VERTICES */
  uint32_t added;
} tiled_ctx;

/* (x, y) of the object's frame in pixels to metres: the object's own
 * rotation (degrees, clockwise as Tiled shows it, y down) about its origin
 * (ox, oy). */
static vec2 to_metres(const tiled_ctx *t, double ox, double oy, double rot, double x, double y) {
  double a = rot * 3.14159265358979323846 / 180.0, c = cos(a), s = sin(a);
  double px = ox + x * c - y * s, py = oy + x * s + y * c;
  return v2((float)(px / t->tw), (float)(py / t->th));
}

static const char *rule_text(int rule) {
  switch (rule) {
  case STEER_MAP_RULE_OUTSIDE:
    return "a point outside the world bounds";
  case STEER_MAP_RULE_REACHES_OUT:
    return "the circle reaches outside the world bounds";
  case STEER_MAP_RULE_SHORT_EDGE:
    return "an edge shorter than 1 mm";
  case STEER_MAP_RULE_CROSSING:
    return "edges that cross or touch";
  case STEER_MAP_RULE_NO_AREA:
    return "zero area";
  case STEER_MAP_RULE_FOLD:
    return "edges that fold back onto each other";
  default:
    return "not a valid shape";
  }
}

/* The points of a polygon or polyline object, relative to its origin. */
static int object_points(const tiled_ctx *t, const json_t *list, double ox, double oy, double rot,
                         uint32_t *count) {
  size_t n = json_array_size(list);
  if (n > STEER_MAP_MAX_VERTICES)
    return 0;
  for (size_t i = 0; i < n; i++) {
    const json_t *p = json_array_get(list, i);
    double x, y;
    if (!number(json_object_get(p, "x"), &x) || !number(json_object_get(p, "y"), &y))
      return 0;
    t->pts[i] = to_metres(t, ox, oy, rot, x, y);
  }
  *count = (uint32_t)n;
  return 1;
}

/* One object of layer name: an obstacle of its Tiled id, unless it is a
 * point, text or tile object, or says collision false. */
static int read_object(tiled_ctx *t, const json_t *o, const char *name, int layer_collision, char *err,
                       size_t errlen) {
  const json_t *idv = json_object_get(o, "id");
  if (!json_is_integer(idv) || json_integer_value(idv) < 1 ||
      json_integer_value(idv) > (json_int_t)UINT32_MAX)
    return steerd_map_fail(err, errlen, "layer \"%s\": an object without a Tiled id", name);
  uint32_t id = (uint32_t)json_integer_value(idv);
  int own = collision(o);
  if (own == 0 || (own < 0 && layer_collision == 0) || json_is_true(json_object_get(o, "point")) ||
      json_object_get(o, "text") || json_object_get(o, "gid"))
    return 0;
  double x = 0.0, y = 0.0, w = 0.0, h = 0.0, rot = 0.0;
  if (!number(json_object_get(o, "x"), &x) || !number(json_object_get(o, "y"), &y))
    return steerd_map_fail(err, errlen, "layer \"%s\", object %u: no x and y", name, id);
  number(json_object_get(o, "width"), &w);
  number(json_object_get(o, "height"), &h);
  number(json_object_get(o, "rotation"), &rot);
  steer_obstacle_desc d = {STEER_OBSTACLE_POLYGON, 0, t->pts, 0.0f};
  const json_t *poly = json_object_get(o, "polygon"), *line = json_object_get(o, "polyline");
  const char *what = "rectangle";
  if (json_is_array(poly) || json_is_array(line)) {
    what = poly ? "polygon" : "polyline";
    d.kind = poly ? STEER_OBSTACLE_POLYGON : STEER_OBSTACLE_WALL;
    if (!object_points(t, poly ? poly : line, x, y, rot, &d.count))
      return steerd_map_fail(err, errlen, "layer \"%s\", object %u (%s): not 2..%u points of finite x and y",
                             name, id, what, STEER_MAP_MAX_VERTICES);
  } else if (!(w > 0.0 && h > 0.0)) {
    return steerd_map_fail(err, errlen, "layer \"%s\", object %u: a shape of zero size", name, id);
  } else if (json_is_true(json_object_get(o, "ellipse"))) {
    what = "ellipse";
    if (w / t->tw == h / t->th) { /* a circle in metres */
      d.kind = STEER_OBSTACLE_CIRCLE;
      d.count = 1;
      t->pts[0] = to_metres(t, x, y, rot, w / 2.0, h / 2.0);
      d.radius = (float)(w / 2.0 / t->tw);
    } else {
      double grow = 1.0 / cos(3.14159265358979323846 / ELLIPSE_SIDES);
      for (uint32_t k = 0; k < ELLIPSE_SIDES; k++) {
        /* Vertices half a step off the axes: the sides through the axes'
         * ends touch the ellipse, so the polygon stays within its box. */
        double a = 2.0 * 3.14159265358979323846 * (k + 0.5) / ELLIPSE_SIDES;
        double ex = w / 2.0 * (1.0 + grow * cos(a)), ey = h / 2.0 * (1.0 + grow * sin(a));
        t->pts[k] =
            to_metres(t, x, y, rot, ex < 0.0 ? 0.0 : (ex > w ? w : ex), ey < 0.0 ? 0.0 : (ey > h ? h : ey));
      }
      d.count = ELLIPSE_SIDES;
    }
  } else {
    const double cx[4] = {0.0, w, w, 0.0}, cy[4] = {0.0, 0.0, h, h};
    for (uint32_t k = 0; k < 4; k++)
      t->pts[k] = to_metres(t, x, y, rot, cx[k], cy[k]);
    d.count = 4;
  }
  int rc = steer_map_add(t->m, id, &d);
  if (rc == STEER_OK) {
    t->added++;
    return 0;
  }
  if (rc == STEER_EFULL)
    return steerd_map_fail(err, errlen,
                           "layer \"%s\", object %u (%s): the map is full (%u obstacles, %u segments)", name,
                           id, what, STEER_MAP_MAX_OBSTACLES, STEER_MAP_MAX_SEGMENTS);
  if (rc == STEER_ENOMEM)
    return steerd_map_fail(err, errlen, "out of memory");
  steer_map_fault f;
  if (steer_map_shape_fault(t->m, &d, &f) != STEER_MAP_RULE_OK)
    return steerd_map_fail(err, errlen, "layer \"%s\", object %u (%s): %s", name, id, what,
                           rule_text(f.rule));
  return steerd_map_fail(err, errlen, "layer \"%s\", object %u (%s): id %u is used by another obstacle", name,
                         id, what, id);
}

/* The layers in order, group layers' own layers in theirs: tile layers into
 * g (pass 0), objects into the map (pass 1). */
static int walk_layers(tiled_ctx *t, const json_t *layers, int pass, const solid_set *s, steerd_grid_map *g,
                       int parent_collision, char *err, size_t errlen) {
  for (size_t i = 0; json_is_array(layers) && i < json_array_size(layers); i++) {
    const json_t *l = json_array_get(layers, i);
    const char *type = json_string_value(json_object_get(l, "type"));
    const char *name = json_string_value(json_object_get(l, "name"));
    name = name ? name : "";
    int lc = collision(l);
    lc = lc >= 0 ? lc : parent_collision;
    int rc = 0;
    if (!type)
      rc = steerd_map_fail(err, errlen, "layers[%zu]: no type", i);
    else if (strcmp(type, "group") == 0)
      rc = walk_layers(t, json_object_get(l, "layers"), pass, s, g, lc, err, errlen);
    else if (pass == 0 && strcmp(type, "tilelayer") == 0)
      rc = read_tile_layer(l, name, s, g, err, errlen);
    else if (pass == 1 && strcmp(type, "objectgroup") == 0) {
      const json_t *objs = json_object_get(l, "objects");
      for (size_t k = 0; rc == 0 && json_is_array(objs) && k < json_array_size(objs); k++)
        rc = read_object(t, json_array_get(objs, k), name, lc, err, errlen);
    }
    if (rc != 0)
      return rc;
  }
  return 0;
}

int steerd_map_is_tiled(const char *text, size_t len) {
  /* Parsed only when it may be one: steerd's own maps are read once. */
  if (!memmem(text, len, "\"layers\"", 8))
    return 0;
  json_t *root = json_loadb(text, len, 0, NULL);
  const char *type = json_string_value(json_object_get(root, "type"));
  int is = type && strcmp(type, "map") == 0 && json_is_array(json_object_get(root, "layers"));
  json_decref(root);
  return is;
}

/* The map's size in tiles, and the pixels of a tile. */
static int map_header(const json_t *root, uint32_t *w, uint32_t *h, double *tw, double *th, char *err,
                      size_t errlen) {
  const char *orient = json_string_value(json_object_get(root, "orientation"));
  if (orient && strcmp(orient, "orthogonal") != 0)
    return steerd_map_fail(err, errlen, "orientation: \"%s\"; only orthogonal Tiled maps are read", orient);
  if (json_is_true(json_object_get(root, "infinite")))
    return steerd_map_fail(err, errlen,
                           "infinite: an infinite Tiled map is not read (in Tiled: Map > Map Properties > "
                           "Infinite off)");
  const json_t *jw = json_object_get(root, "width"), *jh = json_object_get(root, "height");
  if (!json_is_integer(jw) || !json_is_integer(jh) || json_integer_value(jw) < 1 ||
      json_integer_value(jh) < 1 || json_integer_value(jw) > STEERD_GRID_MAP_MAX_SIDE ||
      json_integer_value(jh) > STEERD_GRID_MAP_MAX_SIDE)
    return steerd_map_fail(err, errlen, "width, height: missing, or not 1..%u tiles",
                           STEERD_GRID_MAP_MAX_SIDE);
  if (!number(json_object_get(root, "tilewidth"), tw) || !number(json_object_get(root, "tileheight"), th) ||
      !(*tw > 0.0) || !(*th > 0.0))
    return steerd_map_fail(err, errlen, "tilewidth, tileheight: missing or not positive");
  *w = (uint32_t)json_integer_value(jw);
  *h = (uint32_t)json_integer_value(jh);
  return 0;
}

int steerd_map_parse_tiled(const char *text, size_t len, const char *dir, steer_map *m, char *err,
                           size_t errlen) {
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return steerd_map_fail(err, errlen, "line %d, column %d: %s", je.line, je.column, je.text);
  solid_set solid = {NULL, 0};
  steerd_grid_map g = {0, 0, NULL};
  tiled_ctx t = {m, 0.0, 0.0, malloc(STEER_MAP_MAX_VERTICES * sizeof(vec2)), 0};
  int rc = map_header(root, &g.width, &g.height, &t.tw, &t.th, err, errlen);
  if (rc == 0 && (!t.pts || !(g.blocked = calloc((size_t)g.width * g.height, 1))))
    rc = steerd_map_fail(err, errlen, "out of memory");
  if (rc == 0)
    rc = read_tilesets(root, dir, &solid, err, errlen);
  if (rc == 0)
    rc = walk_layers(&t, json_object_get(root, "layers"), 0, &solid, &g, -1, err, errlen);
  /* Objects keep their Tiled ids (an admin removes the one the editor
   * shows); the tiles' rectangles follow, from the map's next object id. */
  uint32_t first = 1;
  const json_t *next = json_object_get(root, "nextobjectid");
  if (json_is_integer(next) && json_integer_value(next) > 1 &&
      json_integer_value(next) < (json_int_t)UINT32_MAX)
    first = (uint32_t)json_integer_value(next);
  if (rc == 0) {
    steer_map_hold(m); /* one index build for the whole map */
    rc = walk_layers(&t, json_object_get(root, "layers"), 1, &solid, &g, -1, err, errlen);
    if (steer_map_release(m) != STEER_OK && rc == 0)
      rc = steerd_map_fail(err, errlen, "out of memory");
  }
  int any = 0;
  for (size_t i = 0; rc == 0 && i < (size_t)g.width * g.height && !any; i++)
    any = g.blocked[i];
  if (rc == 0 && any)
    rc = steerd_grid_map_add_from(&g, m, first, err, errlen);
  free(t.pts);
  free(g.blocked);
  free(solid.solid);
  json_decref(root);
  return rc;
}

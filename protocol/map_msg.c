/* map_msg.c: the map messages (see map_msg.h), encoded and decoded with the
 * writer and the strict reader of wire.c. */
#include "map_msg.h"

#include <string.h>

#include "wire_internal.h"

static const char *const kind_names[PROTO_OBSTACLE_KIND_COUNT] = {"circle", "polygon", "wall"};

const char *proto_obstacle_kind_name(uint32_t kind) {
  return kind < PROTO_OBSTACLE_KIND_COUNT ? kind_names[kind] : NULL;
}

/* ---- encoding ------------------------------------------------------------ */

static void pack_cstr(msgpack_packer *pk, const char *str) {
  msgpack_pack_str_with_body(pk, str, strlen(str));
}

static void pack_point(msgpack_packer *pk, proto_vec2 p) {
  msgpack_pack_array(pk, 2);
  msgpack_pack_float(pk, p.x);
  msgpack_pack_float(pk, p.y);
}

static int obstacle_valid(const proto_obstacle *o) {
  if (o->id == 0 || o->kind >= PROTO_OBSTACLE_KIND_COUNT || (o->count && !o->points))
    return 0;
  if (o->kind == PROTO_OBSTACLE_CIRCLE)
    return o->count == 1;
  uint32_t least = o->kind == PROTO_OBSTACLE_POLYGON ? 3u : 2u;
  return o->count >= least && o->count <= PROTO_MAP_MAX_POINTS;
}

/* {"id", "type", "center", "radius"} or {"id", "type", "points"}: the map file's objects. */
static void pack_obstacle(msgpack_packer *pk, const proto_obstacle *o) {
  int circle = o->kind == PROTO_OBSTACLE_CIRCLE;
  msgpack_pack_map(pk, circle ? 4 : 3);
  pack_cstr(pk, "id");
  msgpack_pack_uint32(pk, o->id);
  pack_cstr(pk, "type");
  pack_cstr(pk, kind_names[o->kind]);
  if (circle) {
    pack_cstr(pk, "center");
    pack_point(pk, o->points[0]);
    pack_cstr(pk, "radius");
    msgpack_pack_float(pk, o->radius);
    return;
  }
  pack_cstr(pk, "points");
  msgpack_pack_array(pk, o->count);
  for (uint32_t i = 0; i < o->count; i++)
    pack_point(pk, o->points[i]);
}

size_t proto_obstacle_size(const proto_obstacle *o) {
  if (!obstacle_valid(o))
    return 0;
  uint8_t scratch[PROTO_MAP_OBSTACLE_MAX_BYTES];
  writer w;
  msgpack_packer pk;
  writer_init(&w, &pk, scratch, sizeof scratch);
  pack_obstacle(&pk, o);
  return writer_done(&w);
}

proto_obstacle proto_obstacle_array_at(const void *array, uint32_t i) {
  return ((const proto_obstacle *)array)[i];
}

uint32_t proto_map_fit(proto_obstacle_at at, const void *ctx, uint32_t first, uint32_t total,
                       size_t part_bytes) {
  if (part_bytes < PROTO_MAP_HEADER_MAX_BYTES)
    return 0;
  size_t room = part_bytes - PROTO_MAP_HEADER_MAX_BYTES;
  uint32_t n = 0;
  for (uint32_t i = first; i < total; i++, n++) {
    proto_obstacle o = at(ctx, i);
    size_t sz = proto_obstacle_size(&o);
    if (sz == 0 || sz > room)
      break;
    room -= sz;
  }
  return n;
}

size_t proto_encode_map(uint8_t *buf, size_t cap, const proto_map_header *h, proto_obstacle_at at,
                        const void *ctx, uint32_t first, uint32_t count) {
  if (!buf || h->part_count < 1 || h->part_index >= h->part_count)
    return 0;
  writer w;
  msgpack_packer pk;
  writer_init(&w, &pk, buf, cap);
  msgpack_pack_array(&pk, 6);
  msgpack_pack_uint8(&pk, PROTO_MSG_MAP);
  msgpack_pack_uint32(&pk, h->version);
  msgpack_pack_uint32(&pk, h->part_index);
  msgpack_pack_uint32(&pk, h->part_count);
  msgpack_pack_uint32(&pk, h->obstacle_total);
  msgpack_pack_array(&pk, count);
  for (uint32_t i = 0; i < count; i++) {
    proto_obstacle o = at(ctx, first + i);
    if (!obstacle_valid(&o))
      return 0;
    pack_obstacle(&pk, &o);
  }
  return writer_done(&w);
}

size_t proto_encode_map_changed(uint8_t *buf, size_t cap, const proto_map_changed *c) {
  if (!buf || c->version == 0 || c->removed_count > PROTO_MAP_CHANGED_MAX ||
      c->added_count > PROTO_MAP_CHANGED_MAX || (c->removed_count && !c->removed) ||
      (c->added_count && !c->added))
    return 0;
  writer w;
  msgpack_packer pk;
  writer_init(&w, &pk, buf, cap);
  msgpack_pack_array(&pk, 5);
  msgpack_pack_uint8(&pk, PROTO_MSG_MAP_CHANGED);
  msgpack_pack_uint32(&pk, c->version);
  msgpack_pack_uint64(&pk, c->tick);
  msgpack_pack_array(&pk, c->removed_count);
  for (uint32_t i = 0; i < c->removed_count; i++) {
    if (c->removed[i] == 0)
      return 0;
    msgpack_pack_uint32(&pk, c->removed[i]);
  }
  msgpack_pack_array(&pk, c->added_count);
  for (uint32_t i = 0; i < c->added_count; i++) {
    if (!obstacle_valid(&c->added[i]))
      return 0;
    pack_obstacle(&pk, &c->added[i]);
  }
  return writer_done(&w);
}

/* ADD_OBSTACLE's body is the obstacle itself; REMOVE_OBSTACLE's is {"id"}. */
int pack_obstacle_command(msgpack_packer *pk, const proto_command *cmd) {
  if (cmd->type == PROTO_MSG_REMOVE_OBSTACLE) {
    msgpack_pack_map(pk, 1);
    pack_ku(pk, "id", cmd->remove_obstacle.id);
    return 0;
  }
  const proto_add_obstacle *a = &cmd->add_obstacle;
  proto_obstacle o = {a->id, a->kind, a->count, a->radius, a->points};
  if (!obstacle_valid(&o))
    return -1;
  pack_obstacle(pk, &o);
  return 0;
}

/* ---- decoding ------------------------------------------------------------- */

enum { K_ID, K_TYPE, K_CENTER, K_RADIUS, K_POINTS, K_COUNT };
static const char *const obstacle_keys[K_COUNT] = {"id", "type", "center", "radius", "points"};

/* An obstacle being read: its points go to points[0..cap). */
typedef struct obstacle_rd {
  uint32_t id;
  uint8_t kind;
  float radius;
  proto_vec2 centre;
  proto_vec2 *points;
  uint32_t cap, count;
} obstacle_rd;

static int obstacle_fn(reader *r, int key, void *ctx) {
  obstacle_rd *o = ctx;
  switch (key) {
  case K_ID:
    if (rd_u32(r, &o->id))
      return -1;
    return o->id == 0 ? bad(r, "must be 1..4294967295") : 0;
  case K_TYPE:
    return rd_enum(r, kind_names, PROTO_OBSTACLE_KIND_COUNT, &o->kind);
  case K_CENTER:
    return rd_point(r, &o->centre);
  case K_RADIUS:
    return rd_float(r, NUM_POSITIVE, &o->radius);
  default: {
    uint32_t n;
    if (rd_array(r, 0, PROTO_MAP_MAX_POINTS, &n))
      return -1;
    if (n > o->cap)
      return fail(r, PROTO_ERR_TOO_LARGE, "more points than the decoder has room for");
    for (uint32_t i = 0; i < n; i++) {
      size_t old = path_push_index(r, i);
      int rc = rd_point(r, &o->points[i]);
      path_pop(r, old);
      if (rc)
        return -1;
    }
    o->count = n;
    return 0;
  }
  }
}

/* The keys a shape needs and refuses, checked once the map is read, in the
 * order of the table (PROTOCOL.md 17.3). */
static int rd_obstacle(reader *r, obstacle_rd *o, bool body) {
  uint32_t seen = 0, required = (1u << K_ID) | (1u << K_TYPE);
  o->count = 0;
  if (body ? rd_body(r, obstacle_keys, K_COUNT, required, obstacle_fn, o, &seen)
           : rd_map(r, obstacle_keys, K_COUNT, required, obstacle_fn, o, &seen))
    return -1;
  if (o->kind == PROTO_OBSTACLE_CIRCLE) {
    if (!(seen & (1u << K_CENTER)))
      return fail_at(r, "center", PROTO_ERR_BAD_FIELD, "missing");
    if (!(seen & (1u << K_RADIUS)))
      return fail_at(r, "radius", PROTO_ERR_BAD_FIELD, "missing");
    if (seen & (1u << K_POINTS))
      return fail_at(r, "points", PROTO_ERR_BAD_FIELD, "a circle has center and radius, not points");
    if (o->cap < 1)
      return fail(r, PROTO_ERR_TOO_LARGE, "more points than the decoder has room for");
    o->points[0] = o->centre;
    o->count = 1;
    return 0;
  }
  if (!(seen & (1u << K_POINTS)))
    return fail_at(r, "points", PROTO_ERR_BAD_FIELD, "missing");
  if (seen & (1u << K_CENTER))
    return fail_at(r, "center", PROTO_ERR_BAD_FIELD, "a polygon or wall has points, not center");
  if (seen & (1u << K_RADIUS))
    return fail_at(r, "radius", PROTO_ERR_BAD_FIELD, "a polygon or wall has points, not radius");
  if (o->count < (o->kind == PROTO_OBSTACLE_POLYGON ? 3u : 2u))
    return fail_at(r, "points", PROTO_ERR_BAD_FIELD,
                   o->kind == PROTO_OBSTACLE_POLYGON ? "a polygon has 3 to 256 points"
                                                     : "a wall has 2 to 256 points");
  o->radius = 0.0f;
  return 0;
}

int rd_add_obstacle(reader *r, proto_add_obstacle *a) {
  obstacle_rd o;
  memset(&o, 0, sizeof o);
  o.points = a->points;
  o.cap = PROTO_MAP_MAX_POINTS;
  if (rd_obstacle(r, &o, true))
    return -1;
  a->id = o.id;
  a->kind = o.kind;
  a->count = o.count;
  a->radius = o.radius;
  return 0;
}

static int remove_fn(reader *r, int key, void *ctx) {
  (void)key;
  uint32_t *id = ctx;
  if (rd_u32(r, id))
    return -1;
  return *id == 0 ? bad(r, "must be 1..4294967295") : 0;
}

int rd_remove_obstacle(reader *r, proto_remove_obstacle *o) {
  static const char *const keys[] = {"id"};
  o->id = 0;
  return rd_body(r, keys, 1, 1u, remove_fn, &o->id, NULL);
}

/* Obstacles of a server message into the caller's arrays; each one's points
 * go to the pool after the previous one's. */
static int rd_obstacles(reader *r, const char *name, uint32_t max, proto_obstacle *obs, uint32_t cap,
                        uint32_t *count, proto_vec2 *points, uint32_t point_cap) {
  size_t old = path_push(r, name);
  uint32_t n;
  int rc = rd_array(r, 0, max, &n);
  if (rc == 0 && n > cap)
    rc = fail(r, PROTO_ERR_TOO_LARGE, "more obstacles than the decoder has room for");
  uint32_t used = 0;
  for (uint32_t i = 0; rc == 0 && i < n; i++) {
    obstacle_rd o;
    memset(&o, 0, sizeof o);
    o.points = points ? points + used : NULL;
    o.cap = point_cap - used;
    size_t at = path_push_index(r, i);
    rc = rd_obstacle(r, &o, false);
    path_pop(r, at);
    if (rc == 0) {
      proto_obstacle *out = &obs[i];
      out->id = o.id;
      out->kind = o.kind;
      out->count = o.count;
      out->radius = o.radius;
      out->points = o.points;
      used += o.count;
    }
  }
  path_pop(r, old);
  *count = rc == 0 ? n : 0;
  return rc;
}

int proto_decode_map(const uint8_t *data, size_t len, proto_map_header *h, proto_obstacle *obs, uint32_t cap,
                     uint32_t *count, proto_vec2 *points, uint32_t point_cap, proto_error_info *err) {
  proto_error_info local;
  reader r;
  uint32_t n;
  uint64_t u[4];
  reader_init(&r, data, len, err ? err : &local, false);
  memset(h, 0, sizeof *h);
  *count = 0;
  int rc = rd_frame_expect(&r, PROTO_MSG_MAP, 6, 6, &n, "not a MAP");
  if (rc == 0)
    rc = rd_elem_uint(&r, "version", UINT32_MAX, &u[0]) ||
         rd_elem_uint(&r, "part_index", UINT32_MAX, &u[1]) ||
         rd_elem_uint(&r, "part_count", UINT32_MAX, &u[2]) ||
         rd_elem_uint(&r, "obstacle_total", UINT32_MAX, &u[3]);
  if (rc == 0 && (u[2] == 0 || u[1] >= u[2]))
    rc = fail_at(&r, "part_index", PROTO_ERR_BAD_FIELD, "not below part_count");
  if (rc == 0) {
    h->version = (uint32_t)u[0];
    h->part_index = (uint32_t)u[1];
    h->part_count = (uint32_t)u[2];
    h->obstacle_total = (uint32_t)u[3];
    rc = rd_obstacles(&r, "obstacles", UINT32_MAX, obs, cap, count, points, point_cap);
  }
  if (rc == 0 && *count > h->obstacle_total)
    rc = fail_at(&r, "obstacle_total", PROTO_ERR_BAD_FIELD, "fewer than the part holds");
  if (rc == 0)
    rc = rd_end(&r);
  if (rc != 0)
    *count = 0; /* nothing usable */
  return finish(&r, rc);
}

int proto_decode_map_changed(const uint8_t *data, size_t len, proto_map_changed *c,
                             uint32_t removed[PROTO_MAP_CHANGED_MAX],
                             proto_obstacle added[PROTO_MAP_CHANGED_MAX], proto_vec2 *points,
                             uint32_t point_cap, proto_error_info *err) {
  proto_error_info local;
  reader r;
  uint32_t n;
  uint64_t version = 0, tick = 0;
  reader_init(&r, data, len, err ? err : &local, false);
  memset(c, 0, sizeof *c);
  int rc = rd_frame_expect(&r, PROTO_MSG_MAP_CHANGED, 5, 5, &n, "not a MAP_CHANGED");
  if (rc == 0)
    rc = rd_elem_uint(&r, "version", UINT32_MAX, &version) || rd_elem_uint(&r, "tick", UINT64_MAX, &tick);
  if (rc == 0 && version == 0)
    rc = fail_at(&r, "version", PROTO_ERR_BAD_FIELD, "must be >= 1");
  if (rc == 0) {
    size_t old = path_push(&r, "removed");
    rc = rd_array(&r, 0, PROTO_MAP_CHANGED_MAX, &n);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
      size_t at = path_push_index(&r, i);
      rc = rd_u32(&r, &removed[i]);
      if (rc == 0 && removed[i] == 0)
        rc = bad(&r, "must be 1..4294967295");
      path_pop(&r, at);
    }
    path_pop(&r, old);
    c->removed_count = rc == 0 ? n : 0;
  }
  if (rc == 0)
    rc = rd_obstacles(&r, "added", PROTO_MAP_CHANGED_MAX, added, PROTO_MAP_CHANGED_MAX, &c->added_count,
                      points, point_cap);
  if (rc == 0)
    rc = rd_end(&r);
  if (rc != 0)
    c->removed_count = c->added_count = 0; /* nothing usable */
  c->version = (uint32_t)version;
  c->tick = tick;
  c->removed = removed;
  c->added = added;
  return finish(&r, rc);
}

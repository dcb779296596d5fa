/* map_msg.c: encoders of the map messages (see map_msg.h); msgpack-c's packer
 * into a fixed buffer, as protocol.c. */
#include "map_msg.h"

#include <msgpack.h>
#include <string.h>

static const char *const kind_names[STEER_OBSTACLE_KIND_COUNT] = {"circle", "polygon", "wall"};

const char *proto_obstacle_kind_name(uint32_t kind) {
  return kind < STEER_OBSTACLE_KIND_COUNT ? kind_names[kind] : NULL;
}

proto_obstacle proto_obstacle_of(uint32_t id, const steer_obstacle_desc *d) {
  proto_obstacle o;
  o.id = id;
  o.kind = d->kind;
  o.count = d->count;
  o.radius = d->radius;
  o.points = d->points;
  return o;
}

steer_obstacle_desc proto_obstacle_desc(const proto_obstacle *o) {
  steer_obstacle_desc d;
  d.kind = o->kind;
  d.count = o->count;
  d.points = o->points;
  d.radius = o->radius;
  return d;
}

/* ---- writing ------------------------------------------------------------- */

typedef struct writer {
  uint8_t *buf; /* NULL: only count */
  size_t cap, len;
  int overflowed;
} writer;

static int writer_write(void *data, const char *p, size_t n) {
  writer *w = data;
  if (w->overflowed || n > w->cap - w->len) {
    w->overflowed = 1;
    return -1;
  }
  if (w->buf)
    memcpy(w->buf + w->len, p, n);
  w->len += n;
  return 0;
}

static void writer_init(writer *w, msgpack_packer *pk, uint8_t *buf, size_t cap) {
  w->buf = buf;
  w->cap = cap;
  w->len = 0;
  w->overflowed = 0;
  msgpack_packer_init(pk, w, writer_write);
}

static size_t writer_done(const writer *w) { return w->overflowed ? 0 : w->len; }

static void pack_cstr(msgpack_packer *pk, const char *s) { msgpack_pack_str_with_body(pk, s, strlen(s)); }

static void pack_point(msgpack_packer *pk, vec2 p) {
  msgpack_pack_array(pk, 2);
  msgpack_pack_float(pk, p.x);
  msgpack_pack_float(pk, p.y);
}

static int obstacle_valid(const proto_obstacle *o) {
  if (o->id == 0 || o->kind >= STEER_OBSTACLE_KIND_COUNT || (o->count && !o->points))
    return 0;
  if (o->kind == STEER_OBSTACLE_CIRCLE)
    return o->count == 1;
  uint32_t least = o->kind == STEER_OBSTACLE_POLYGON ? 3u : 2u;
  return o->count >= least && o->count <= PROTO_MAP_MAX_POINTS;
}

/* {"id", "type", "center", "radius"} or {"id", "type", "points"}: the map file's objects. */
static void pack_obstacle(msgpack_packer *pk, const proto_obstacle *o) {
  int circle = o->kind == STEER_OBSTACLE_CIRCLE;
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
  writer w;
  msgpack_packer pk;
  writer_init(&w, &pk, NULL, SIZE_MAX);
  pack_obstacle(&pk, o);
  return writer_done(&w);
}

static proto_obstacle map_obstacle(const steer_map *m, uint32_t i) {
  uint32_t id = 0;
  steer_obstacle_desc d;
  memset(&d, 0, sizeof(d));
  steer_map_get(m, i, &id, &d);
  return proto_obstacle_of(id, &d);
}

uint32_t proto_map_fit(const steer_map *m, uint32_t first, size_t part_bytes) {
  uint32_t total = steer_map_count(m);
  if (part_bytes < PROTO_MAP_HEADER_MAX_BYTES)
    return 0;
  size_t room = part_bytes - PROTO_MAP_HEADER_MAX_BYTES;
  uint32_t n = 0;
  for (uint32_t i = first; i < total; i++, n++) {
    proto_obstacle o = map_obstacle(m, i);
    size_t sz = proto_obstacle_size(&o);
    if (sz == 0 || sz > room)
      break;
    room -= sz;
  }
  return n;
}

uint32_t proto_map_part_count(const steer_map *m, size_t part_bytes) {
  uint32_t total = steer_map_count(m), parts = 0;
  for (uint32_t first = 0; first < total || parts == 0; parts++) {
    uint32_t n = proto_map_fit(m, first, part_bytes);
    if (n == 0 && first < total)
      return 0; /* an obstacle that fits no part: part_bytes too small */
    first += n;
  }
  return parts;
}

static int header_valid(const proto_map_header *h) {
  return h->part_count >= 1 && h->part_index < h->part_count;
}

static void pack_map_header(msgpack_packer *pk, const proto_map_header *h, uint32_t count) {
  msgpack_pack_array(pk, 6);
  msgpack_pack_uint8(pk, PROTO_MSG_MAP);
  msgpack_pack_uint32(pk, h->version);
  msgpack_pack_uint32(pk, h->part_index);
  msgpack_pack_uint32(pk, h->part_count);
  msgpack_pack_uint32(pk, h->obstacle_total);
  msgpack_pack_array(pk, count);
}

size_t proto_encode_map(uint8_t *buf, size_t cap, const proto_map_header *h, const steer_map *m, uint32_t first,
                        uint32_t count) {
  if (!buf || !header_valid(h) || first > steer_map_count(m) || count > steer_map_count(m) - first)
    return 0;
  writer w;
  msgpack_packer pk;
  writer_init(&w, &pk, buf, cap);
  pack_map_header(&pk, h, count);
  for (uint32_t i = 0; i < count; i++) {
    proto_obstacle o = map_obstacle(m, first + i);
    if (!obstacle_valid(&o))
      return 0;
    pack_obstacle(&pk, &o);
  }
  return writer_done(&w);
}

size_t proto_encode_map_obstacles(uint8_t *buf, size_t cap, const proto_map_header *h, const proto_obstacle *obs,
                                  uint32_t count) {
  if (!buf || !header_valid(h) || (count && !obs))
    return 0;
  writer w;
  msgpack_packer pk;
  writer_init(&w, &pk, buf, cap);
  pack_map_header(&pk, h, count);
  for (uint32_t i = 0; i < count; i++) {
    if (!obstacle_valid(&obs[i]))
      return 0;
    pack_obstacle(&pk, &obs[i]);
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

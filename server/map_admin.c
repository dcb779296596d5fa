/* map_admin.c: see map_admin.h. */
#include "map_admin.h"
#include "wire_core.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- checking and applying a change ------------------------------------------ */

static int refuse(steerd_map_result *r, int code, const char *field, const char *fmt, ...) {
  r->code = code;
  snprintf(r->why.field, sizeof r->why.field, "%s", field ? field : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->why.message, sizeof r->why.message, fmt, ap);
  va_end(ap);
  return -1;
}

static int inside(const steer_world_config *c, vec2 p) {
  return isfinite(p.x) && isfinite(p.y) && p.x >= c->min.x && p.x <= c->max.x && p.y >= c->min.y &&
         p.y <= c->max.y;
}

/* The shape's own faults, field by field, before the map's geometry test. */
static int check_shape(const steer_world_config *c, const proto_obstacle *o, steerd_map_result *r) {
  char field[32];
  if (o->kind == STEER_OBSTACLE_CIRCLE) {
    if (o->count != 1 || !o->points)
      return refuse(r, PROTO_ERR_BAD_FIELD, "center", "a circle needs center and radius");
    vec2 p = wire_to_vec2(o->points[0]);
    if (!inside(c, p))
      return refuse(r, PROTO_ERR_BAD_FIELD, "center", "outside the world bounds (%g,%g)-(%g,%g)",
                    (double)c->min.x, (double)c->min.y, (double)c->max.x, (double)c->max.y);
    if (!isfinite(o->radius) || !(o->radius >= STEER_MAP_MIN_EXTENT))
      return refuse(r, PROTO_ERR_BAD_FIELD, "radius", "must be >= %g m", (double)STEER_MAP_MIN_EXTENT);
    if (p.x - o->radius < c->min.x || p.x + o->radius > c->max.x || p.y - o->radius < c->min.y ||
        p.y + o->radius > c->max.y)
      return refuse(r, PROTO_ERR_BAD_FIELD, "radius", "the circle reaches outside the world bounds");
    return 0;
  }
  if (o->kind != STEER_OBSTACLE_POLYGON && o->kind != STEER_OBSTACLE_WALL)
    return refuse(r, PROTO_ERR_BAD_FIELD, "type", "not one of circle, polygon, wall");
  uint32_t least = o->kind == STEER_OBSTACLE_POLYGON ? 3u : 2u;
  if (!o->points || o->count < least || o->count > STEER_MAP_MAX_VERTICES)
    return refuse(r, PROTO_ERR_BAD_FIELD, "points", "a %s has %u..%u points",
                  proto_obstacle_kind_name(o->kind), least, STEER_MAP_MAX_VERTICES);
  for (uint32_t i = 0; i < o->count; i++) {
    if (!inside(c, wire_to_vec2(o->points[i]))) {
      snprintf(field, sizeof field, "points[%u]", i);
      return refuse(r, PROTO_ERR_BAD_FIELD, field, "outside the world bounds (%g,%g)-(%g,%g)",
                    (double)c->min.x, (double)c->min.y, (double)c->max.x, (double)c->max.y);
    }
  }
  /* Edge i runs from points[i] to points[i + 1] (a polygon's last one closes the ring). */
  uint32_t edges = o->kind == STEER_OBSTACLE_POLYGON ? o->count : o->count - 1u;
  for (uint32_t i = 0; i < edges; i++) {
    uint32_t j = (i + 1u) % o->count;
    if (!(v2_len(v2_sub(wire_to_vec2(o->points[j]), wire_to_vec2(o->points[i]))) >= STEER_MAP_MIN_EXTENT)) {
      snprintf(field, sizeof field, "points[%u]", j);
      return refuse(r, PROTO_ERR_BAD_FIELD, field, "the edge from points[%u] is shorter than %g m", i,
                    (double)STEER_MAP_MIN_EXTENT);
    }
  }
  return 0;
}

int steerd_map_edit_check(const steer_world *w, const steerd_map_edit *e, steerd_map_result *r) {
  memset(r, 0, sizeof(*r));
  const steer_map *m = steer_world_map(w);
  r->version = steer_map_version(m);
  const proto_obstacle *o = &e->obstacle;
  if (e->op == STEERD_MAP_REMOVE) {
    if (o->id == 0 || steer_map_find(m, o->id) < 0)
      return refuse(r, PROTO_ERR_NO_SUCH_OBSTACLE, "id", "no obstacle has id %u", o->id);
    return 0;
  }
  if (e->op != STEERD_MAP_ADD)
    return refuse(r, PROTO_ERR_INTERNAL, NULL, "unknown map operation");
  if (o->id == 0)
    return refuse(r, PROTO_ERR_BAD_FIELD, "id", "must be 1..4294967295");
  if (check_shape(steer_world_get_config(w), o, r) != 0)
    return -1;
  if (steer_map_find(m, o->id) >= 0)
    return refuse(r, PROTO_ERR_OBSTACLE_EXISTS, "id", "obstacle %u exists: remove it first", o->id);
  vec2 pts[PROTO_MAX_OBSTACLE_POINTS];
  steer_obstacle_desc d = wire_obstacle_desc(o, pts);
  int rc = steer_map_check(m, o->id, &d);
  if (rc == STEER_EFULL)
    return refuse(r, PROTO_ERR_WORLD_FULL, NULL, "the map holds its maximum of %u obstacles or %u segments",
                  STEER_MAP_MAX_OBSTACLES, STEER_MAP_MAX_SEGMENTS);
  if (rc == STEER_OK)
    return 0;
  /* What is left after check_shape: a polygon that is not simple. */
  steer_map_fault f;
  steer_map_shape_fault(m, &d, &f);
  if (f.rule == STEER_MAP_RULE_CROSSING)
    return refuse(r, PROTO_ERR_BAD_FIELD, "points",
                  "the edges from points[%u] and from points[%u] cross or touch", f.at, f.other);
  if (f.rule == STEER_MAP_RULE_FOLD)
    return refuse(r, PROTO_ERR_BAD_FIELD, "points",
                  "the edges meeting at points[%u] fold back onto each other", f.at);
  return refuse(r, PROTO_ERR_BAD_FIELD, "points",
                "the polygon has zero area (less than 1 square millimetre)");
}

int steerd_map_edit_apply(steer_world *w, const steerd_map_edit *e, steerd_map_result *r) {
  if (steerd_map_edit_check(w, e, r) != 0)
    return -1;
  int rc;
  if (e->op == STEERD_MAP_REMOVE) {
    rc = steer_world_remove_obstacle(w, e->obstacle.id);
  } else {
    vec2 pts[PROTO_MAX_OBSTACLE_POINTS];
    steer_obstacle_desc d = wire_obstacle_desc(&e->obstacle, pts);
    rc = steer_world_add_obstacle(w, e->obstacle.id, &d, &r->moved);
  }
  if (rc == STEER_EBLOCKED)
    return refuse(r, PROTO_ERR_BLOCKED, NULL,
                  "an agent under the obstacle has no free place within 64 m to be moved to");
  if (rc != STEER_OK)
    return refuse(r, wire_error_of(rc), NULL, "%s", steer_strerror(rc));
  r->version = steer_map_version(steer_world_map(w));
  return 0;
}

/* ---- clients' copies ---------------------------------------------------------- */

typedef struct slot_state {
  uint8_t streaming; /* parts still to send */
  uint8_t synced;    /* every part of `version` sent: gets MAP_CHANGED */
  uint32_t version;  /* of the parts being sent */
  uint32_t next;     /* part to send next */
} slot_state;

struct steerd_mapsync {
  uint32_t slots;
  slot_state *slot;
  /* Part boundaries of the map at `parts_version` (first obstacle of each part,
   * and the end): computed when a part of a new version is first needed. */
  int parts_valid;
  uint32_t parts_version;
  uint32_t part_count;
  uint32_t *part_first; /* STEER_MAP_MAX_OBSTACLES + 2 */
};

steerd_mapsync *steerd_mapsync_create(uint32_t slots) {
  steerd_mapsync *ms = calloc(1, sizeof(*ms));
  if (!ms)
    return NULL;
  ms->slots = slots;
  ms->slot = calloc(slots ? slots : 1, sizeof(*ms->slot));
  ms->part_first = calloc(STEER_MAP_MAX_OBSTACLES + 2u, sizeof(*ms->part_first));
  if (!ms->slot || !ms->part_first) {
    steerd_mapsync_destroy(ms);
    return NULL;
  }
  return ms;
}

void steerd_mapsync_destroy(steerd_mapsync *ms) {
  if (!ms)
    return;
  free(ms->slot);
  free(ms->part_first);
  free(ms);
}

void steerd_mapsync_start(steerd_mapsync *ms, uint32_t slot) {
  if (slot >= ms->slots)
    return;
  slot_state *st = &ms->slot[slot];
  st->streaming = 1;
  st->synced = 0;
  st->next = 0;
  st->version = 0;
}

void steerd_mapsync_stop(steerd_mapsync *ms, uint32_t slot) {
  if (slot < ms->slots)
    memset(&ms->slot[slot], 0, sizeof(ms->slot[slot]));
}

int steerd_mapsync_streaming(const steerd_mapsync *ms, uint32_t slot) {
  return slot < ms->slots && ms->slot[slot].streaming;
}

int steerd_mapsync_synced(const steerd_mapsync *ms, uint32_t slot) {
  return slot < ms->slots && ms->slot[slot].synced;
}

void steerd_mapsync_advance(steerd_mapsync *ms, uint32_t slot, uint32_t version) {
  if (slot < ms->slots && ms->slot[slot].synced)
    ms->slot[slot].version = version;
}

proto_obstacle steerd_map_at(const void *ctx, uint32_t i) {
  uint32_t id = 0;
  steer_obstacle_desc d;
  memset(&d, 0, sizeof(d));
  steer_map_get(ctx, i, &id, &d);
  return wire_obstacle_of(id, &d);
}

/* Part boundaries of m as it is now. */
static void compute_parts(steerd_mapsync *ms, const steer_map *m) {
  uint32_t version = steer_map_version(m);
  if (ms->parts_valid && ms->parts_version == version)
    return;
  uint32_t total = steer_map_count(m), parts = 0;
  for (uint32_t first = 0; first < total || parts == 0;) {
    uint32_t n = proto_map_fit(steerd_map_at, m, first, total, PROTO_MAP_PART_BYTES);
    ms->part_first[parts++] = first;
    first += n ? n : 1; /* n is >= 1: the largest obstacle fits a part */
  }
  ms->part_first[parts] = total;
  ms->part_count = parts;
  ms->parts_version = version;
  ms->parts_valid = 1;
}

size_t steerd_mapsync_next(steerd_mapsync *ms, uint32_t slot, const steer_map *m, uint8_t *buf, size_t cap) {
  if (slot >= ms->slots)
    return 0;
  slot_state *st = &ms->slot[slot];
  uint32_t version = steer_map_version(m);
  if (st->synced && st->version == version)
    return 0;
  if (!st->streaming || st->version != version) {
    /* New, or the map changed under the parts being sent: from part 0 of this version. */
    st->streaming = 1;
    st->synced = 0;
    st->version = version;
    st->next = 0;
  }
  compute_parts(ms, m);
  proto_map_header h;
  h.version = version;
  h.part_index = st->next;
  h.part_count = ms->part_count;
  h.obstacle_total = steer_map_count(m);
  uint32_t first = ms->part_first[st->next];
  size_t n = proto_encode_map(buf, cap, &h, steerd_map_at, m, first, ms->part_first[st->next + 1u] - first);
  if (n == 0)
    return 0;
  if (++st->next == ms->part_count) {
    st->streaming = 0;
    st->synced = 1;
  }
  return n;
}

/* mapcopy.c: see mapcopy.h. Obstacles keep their points as an offset into one
 * pool, so a removal moves the later points down and nothing else changes. */
#include "mapcopy.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
  uint32_t id;
  uint8_t kind;
  float radius;
  uint32_t first, count; /* points[first..first+count) */
} entry;

struct steerd_mapcopy {
  uint32_t max_obstacles, max_points;
  entry *obs;
  proto_vec2 *points;
  uint32_t count, used; /* obstacles, points */
  uint32_t version;
  int current;
  /* The MAP being collected (into obs/points: the old copy is gone from its part 0 on). */
  int collecting;
  uint32_t c_version, c_parts, c_next, c_total;
};

steerd_mapcopy *steerd_mapcopy_create(uint32_t max_obstacles, uint32_t max_points) {
  steerd_mapcopy *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->max_obstacles = max_obstacles;
  m->max_points = max_points;
  m->obs = calloc(max_obstacles ? max_obstacles : 1, sizeof *m->obs);
  m->points = calloc(max_points ? max_points : 1, sizeof *m->points);
  if (!m->obs || !m->points) {
    steerd_mapcopy_destroy(m);
    return NULL;
  }
  return m;
}

void steerd_mapcopy_destroy(steerd_mapcopy *m) {
  if (!m)
    return;
  free(m->obs);
  free(m->points);
  free(m);
}

static int append(steerd_mapcopy *m, const proto_obstacle *o) {
  if (m->count >= m->max_obstacles || o->count > m->max_points - m->used)
    return -1;
  entry *e = &m->obs[m->count++];
  e->id = o->id;
  e->kind = o->kind;
  e->radius = o->radius;
  e->first = m->used;
  e->count = o->count;
  memcpy(m->points + m->used, o->points, o->count * sizeof *m->points);
  m->used += o->count;
  return 0;
}

static int remove_id(steerd_mapcopy *m, uint32_t id) {
  for (uint32_t i = 0; i < m->count; i++) {
    if (m->obs[i].id != id)
      continue;
    entry gone = m->obs[i];
    memmove(m->points + gone.first, m->points + gone.first + gone.count,
            (m->used - gone.first - gone.count) * sizeof *m->points);
    m->used -= gone.count;
    memmove(m->obs + i, m->obs + i + 1, (m->count - i - 1u) * sizeof *m->obs);
    m->count--;
    for (uint32_t k = i; k < m->count; k++)
      m->obs[k].first -= gone.count;
    return 0;
  }
  return -1;
}

steerd_mapcopy_result steerd_mapcopy_part(steerd_mapcopy *m, const proto_map_header *h,
                                          const proto_obstacle *obs, uint32_t count) {
  if (h->part_index == 0) {
    m->collecting = 1;
    m->current = 0;
    m->count = m->used = 0;
    m->c_version = h->version;
    m->c_parts = h->part_count;
    m->c_total = h->obstacle_total;
    m->c_next = 0;
  }
  if (!m->collecting || h->version != m->c_version || h->part_count != m->c_parts ||
      h->part_index != m->c_next || h->obstacle_total != m->c_total) {
    m->collecting = 0;
    return STEERD_MAPCOPY_BAD;
  }
  for (uint32_t i = 0; i < count; i++)
    if (append(m, &obs[i]) != 0) {
      m->collecting = 0;
      return STEERD_MAPCOPY_OVERFLOW;
    }
  if (++m->c_next < m->c_parts)
    return STEERD_MAPCOPY_PENDING;
  m->collecting = 0;
  if (m->count != m->c_total)
    return STEERD_MAPCOPY_BAD;
  m->version = h->version;
  m->current = 1;
  return STEERD_MAPCOPY_COMPLETE;
}

steerd_mapcopy_result steerd_mapcopy_changed(steerd_mapcopy *m, const proto_map_changed *c) {
  if (!m->current || c->version <= m->version)
    return STEERD_MAPCOPY_IGNORED; /* no map yet (its MAP is on its way), or old news */
  if (c->version != m->version + 1u) {
    m->current = 0;
    return STEERD_MAPCOPY_GAP;
  }
  for (uint32_t i = 0; i < c->removed_count; i++)
    if (remove_id(m, c->removed[i]) != 0) {
      m->current = 0;
      return STEERD_MAPCOPY_BAD;
    }
  for (uint32_t i = 0; i < c->added_count; i++)
    if (append(m, &c->added[i]) != 0) {
      m->current = 0;
      return STEERD_MAPCOPY_OVERFLOW;
    }
  m->version = c->version;
  return STEERD_MAPCOPY_CHANGED;
}

int steerd_mapcopy_current(const steerd_mapcopy *m) { return m->current; }
uint32_t steerd_mapcopy_version(const steerd_mapcopy *m) { return m->version; }
uint32_t steerd_mapcopy_count(const steerd_mapcopy *m) { return m->count; }

proto_obstacle steerd_mapcopy_get(const steerd_mapcopy *m, uint32_t i) {
  proto_obstacle o;
  memset(&o, 0, sizeof o);
  if (i >= m->count)
    return o;
  const entry *e = &m->obs[i];
  o.id = e->id;
  o.kind = e->kind;
  o.count = e->count;
  o.radius = e->radius;
  o.points = m->points + e->first;
  return o;
}

proto_obstacle steerd_mapcopy_at(const void *ctx, uint32_t i) { return steerd_mapcopy_get(ctx, i); }

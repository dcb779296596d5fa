/* world_state.c: a world's whole state as bytes, and a world made from them.
 *
 * Format version 3 (version 2 is read too: it has no arrival byte, and its
 * agents arrive at their point). Every field is written one by one,
 * little-endian (floats as their IEEE-754 bits, so -0, NaN payloads and all
 * round-trip exactly); there is no padding and no struct is copied raw.
 * Offsets in bytes:
 *
 *   header     0  char[4]  magic "STRD"
 *              4  u32      format version (3)
 *              8  u32      byte-order marker 0x01020304 (bytes 04 03 02 01)
 *             12  u32      reserved, 0
 *             16  u64      total size in bytes, checksum included
 *   config    24  u32 x 4  max_agents, max_paths (never 0), max_path_points, max_events
 *             40  f32 x 5  min.x, min.y, max.x, max.y, cell_size
 *             60  u64      seed
 *   world     68  u64 x 3  tick, world rng state, events dropped
 *             92  u32      count: live agents
 *   agents    96  count records of AGENT_RECORD bytes, in dense order (below)
 *   slots         u16 x max_agents  slot generations
 *                 u32 x max_agents  slot table: dense index, 0xFFFFFFFF when free
 *   free ring     u32 n, then n slots, the next to be reused first
 *   paths         u32 n live entries, then n entries by ascending handle:
 *                 u32 handle, u32 points, f32 radius, u8 mode, u8 cornering,
 *                 u8 released, u32 users, then points x (f32 x, f32 y)
 *   free stack    u32 n, then n handles bottom first (the last is handed out next)
 *   avoidance     count records of AVOID_RECORD bytes, in dense order (below)
 *                 u64 STUCK events so far
 *   map           u32 map version, u32 n obstacles, then n obstacles in map order:
 *                 u32 id, u8 kind, u32 points, f32 radius, points x (f32 x, f32 y)
 *   trailer       u64 checksum of every byte before it
 *
 * Agent record (173 bytes): u32 id, u32 owner, u8 model, u8 arrived,
 * f32 px py vx vy theta omega, f32 wander, u64 rng state, limits (f32
 * max_speed, max_acceleration, max_rotation, max_angular_acceleration, radius),
 * behaviour (u8 kind, facing, combine, max_neighbours, f32 separation_weight,
 * u8 target kind, f32 target x, y, orientation, u32 target agent, agent2,
 * f32 x 15 params in steer_params order), i32 path (-1: none), cursor (u32
 * node, i8 dir, u8 finished, f32 turn_time_left, turn_rate).
 *
 * Avoidance record (33 bytes plus the kept set): f32 avoid_weight,
 * avoid_horizon, u8 avoid_priority, u8 neighbour_period, f32 wall_lookahead,
 * wall_margin, stuck_time, u8 stuck_reaction, u8 arrival (not in version 2),
 * then the stuck state: f32 best distance, f32 timer, u8 reported; then the
 * kept neighbour set: u8 n (255: none), n x u32 dense indices.
 *
 * Checksum: an xxHash64-style hash (not compatible with XXH64), every step a
 * bijection of the running value, so a change confined to one aligned 8-byte
 * word always changes it; the length is mixed in. Any later format version
 * keeps the header's first 8 bytes and the trailer, so an intact file of an
 * unknown version is told apart (STEER_EVERSION) from a damaged one.
 *
 * Not saved, rebuilt on load: the neighbour grid, the per-agent query hints
 * (the grid query's result never depends on them), the steering scratch, the
 * largest radius, the separating count and the last step's events. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "world.h"
#include "world_internal.h"

#define STATE_MAGIC       "STRD"
#define STATE_BOM         0x01020304u
#define STATE_HEADER      24u
#define STATE_FIXED       96u /* header, config and world scalars */
#define STATE_TRAILER     8u
#define AGENT_RECORD      173u
#define AVOID_RECORD      34u /* with an empty kept set; one less in version 2 */
#define STATE_VERSION_OLD 2u  /* the earlier version still read */
#define OBSTACLE_FIXED    13u
#define PATH_ENTRY_FIXED  19u
#define PARAM_FLOATS      15u
#define LIMIT_FLOATS      5u

_Static_assert(sizeof(steer_params) == PARAM_FLOATS * sizeof(float),
               "steer_params changed: update the agent record and raise STEER_STATE_VERSION");
_Static_assert(sizeof(steer_limits) == LIMIT_FLOATS * sizeof(float),
               "steer_limits changed: update the agent record and raise STEER_STATE_VERSION");

/* ---- checksum ------------------------------------------------------------ */

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static uint64_t rotl64(uint64_t x, unsigned r) { return (x << r) | (x >> (64u - r)); }

static uint64_t round64(uint64_t acc, uint64_t word) { return rotl64(acc + word * P2, 31) * P1; }

static uint64_t state_checksum(const uint8_t *p, size_t n) {
  const uint8_t *end = p + n;
  uint64_t h = P5 + (uint64_t)n;
  if (n >= 32) {
    uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = 0 - P1;
    const uint8_t *limit = end - 32;
    do {
      v1 = round64(v1, steer_le64(p));
      v2 = round64(v2, steer_le64(p + 8));
      v3 = round64(v3, steer_le64(p + 16));
      v4 = round64(v4, steer_le64(p + 24));
      p += 32;
    } while (p <= limit);
    h = (h ^ round64(0, v1)) * P1 + P4;
    h = (h ^ round64(0, v2)) * P1 + P4;
    h = (h ^ round64(0, v3)) * P1 + P4;
    h = (h ^ round64(0, v4)) * P1 + P4;
  }
  for (; end - p >= 8; p += 8)
    h = rotl64(h ^ round64(0, steer_le64(p)), 27) * P1 + P4;
  for (; p < end; p++)
    h = rotl64(h ^ (*p * P5), 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

/* ---- writing ------------------------------------------------------------- */

static void put_agent(steer_wbuf *b, const steer_world *w, uint32_t d) {
  steer_put_u32(b, w->id[d]);
  steer_put_u32(b, w->owner[d]);
  steer_put_u8(b, w->model[d]);
  steer_put_u8(b, w->arrived[d]);
  steer_put_f32(b, w->px[d]);
  steer_put_f32(b, w->py[d]);
  steer_put_f32(b, w->vx[d]);
  steer_put_f32(b, w->vy[d]);
  steer_put_f32(b, w->theta[d]);
  steer_put_f32(b, w->omega[d]);
  steer_put_f32(b, w->wander[d]);
  steer_put_u64(b, w->arng[d].state);
  steer_put_f32s(b, (const float *)&w->limits[d], LIMIT_FLOATS);
  const steer_behaviour *bh = &w->behaviour[d];
  steer_put_u8(b, bh->kind);
  steer_put_u8(b, bh->facing);
  steer_put_u8(b, bh->combine);
  steer_put_u8(b, bh->max_neighbours);
  steer_put_f32(b, bh->separation_weight);
  steer_put_u8(b, bh->target.kind);
  steer_put_f32(b, bh->target.point.x);
  steer_put_f32(b, bh->target.point.y);
  steer_put_f32(b, bh->target.orientation);
  steer_put_u32(b, bh->target.agent);
  steer_put_u32(b, bh->target.agent2);
  steer_put_f32s(b, (const float *)&bh->params, PARAM_FLOATS);
  steer_put_u32(b, (uint32_t)w->path[d]);
  const steer_path_cursor *c = &w->cursor[d];
  steer_put_u32(b, c->node);
  steer_put_u8(b, (uint8_t)c->dir);
  steer_put_u8(b, c->finished);
  steer_put_f32(b, c->turn_time_left);
  steer_put_f32(b, c->turn_rate);
}

static void put_avoid(steer_wbuf *b, const steer_world *w, uint32_t d) {
  const steer_behaviour *bh = &w->behaviour[d];
  steer_put_f32(b, bh->avoid_weight);
  steer_put_f32(b, bh->avoid_horizon);
  steer_put_u8(b, bh->avoid_priority);
  steer_put_u8(b, bh->neighbour_period);
  steer_put_f32(b, bh->wall_lookahead);
  steer_put_f32(b, bh->wall_margin);
  steer_put_f32(b, bh->stuck_time);
  steer_put_u8(b, bh->stuck_reaction);
  steer_put_u8(b, bh->arrival);
  steer_put_f32(b, w->stuck_best[d]);
  steer_put_f32(b, w->stuck_timer[d]);
  steer_put_u8(b, w->stuck_flag[d]);
  if (w->nlist && w->nlist_stamp[d] == w->nepoch) {
    steer_put_u8(b, w->nlist_n[d]);
    for (uint32_t i = 0; i < w->nlist_n[d]; i++)
      steer_put_u32(b, w->nlist[(size_t)d * WORLD_NLIST + i]);
  } else {
    steer_put_u8(b, 0xFF);
  }
}

static void put_map(steer_wbuf *b, const steer_map *m) {
  steer_put_u32(b, steer_map_version(m));
  steer_put_u32(b, steer_map_count(m));
  for (uint32_t i = 0; i < steer_map_count(m); i++) {
    uint32_t id;
    steer_obstacle_desc o;
    steer_map_get(m, i, &id, &o);
    steer_put_u32(b, id);
    steer_put_u8(b, o.kind);
    steer_put_u32(b, o.count);
    steer_put_f32(b, o.radius);
    for (uint32_t k = 0; k < o.count; k++) {
      steer_put_f32(b, o.points[k].x);
      steer_put_f32(b, o.points[k].y);
    }
  }
}

size_t steer_world_state_size(const steer_world *w) {
  size_t n = STATE_FIXED + (size_t)w->count * AGENT_RECORD + (size_t)w->cfg.max_agents * 6u;
  n += 4u + (size_t)w->free_count * 4u;
  n += 4u;
  for (uint32_t h = 0; h < w->cfg.max_paths; h++)
    if (w->paths[h].in_use)
      n += PATH_ENTRY_FIXED + (size_t)w->paths[h].count * 8u;
  n += 4u + (size_t)w->path_free_count * 4u;
  n += (size_t)w->count * AVOID_RECORD + 8u + 8u;
  for (uint32_t d = 0; w->nlist && d < w->count; d++)
    if (w->nlist_stamp[d] == w->nepoch)
      n += (size_t)w->nlist_n[d] * 4u;
  const steer_map *m = w->map;
  for (uint32_t i = 0; i < steer_map_count(m); i++) {
    steer_obstacle_desc o;
    steer_map_get(m, i, NULL, &o);
    n += OBSTACLE_FIXED + (size_t)o.count * 8u;
  }
  return n + STATE_TRAILER;
}

int steer_world_save(const steer_world *w, uint8_t *buf, size_t cap, size_t *len) {
  if (!w)
    return STEER_EINVAL;
  size_t need = steer_world_state_size(w);
  if (len)
    *len = need;
  if (!buf || cap < need)
    return STEER_EINVAL;
  steer_wbuf b = steer_wbuf_make(buf, need);
  const steer_world_config *c = &w->cfg;
  steer_put_bytes(&b, STATE_MAGIC, 4);
  steer_put_u32(&b, STEER_STATE_VERSION);
  steer_put_u32(&b, STATE_BOM);
  steer_put_u32(&b, 0);
  steer_put_u64(&b, (uint64_t)need);
  steer_put_u32(&b, c->max_agents);
  steer_put_u32(&b, c->max_paths);
  steer_put_u32(&b, c->max_path_points);
  steer_put_u32(&b, c->max_events);
  steer_put_f32(&b, c->min.x);
  steer_put_f32(&b, c->min.y);
  steer_put_f32(&b, c->max.x);
  steer_put_f32(&b, c->max.y);
  steer_put_f32(&b, c->cell_size);
  steer_put_u64(&b, c->seed);
  steer_put_u64(&b, w->tick);
  steer_put_u64(&b, w->rng.state);
  steer_put_u64(&b, w->events_dropped);
  steer_put_u32(&b, w->count);
  for (uint32_t d = 0; d < w->count; d++)
    put_agent(&b, w, d);
  for (uint32_t s = 0; s < c->max_agents; s++)
    steer_put_u16(&b, w->slot_gen[s]);
  for (uint32_t s = 0; s < c->max_agents; s++)
    steer_put_u32(&b, w->slot_dense[s]);
  steer_put_u32(&b, w->free_count);
  for (uint32_t i = 0; i < w->free_count; i++)
    steer_put_u32(&b, w->free_ring[(w->free_head + i) % c->max_agents]);
  steer_put_u32(&b, w->path_live);
  for (uint32_t h = 0; h < c->max_paths; h++) {
    const path_entry *e = &w->paths[h];
    if (!e->in_use)
      continue;
    steer_put_u32(&b, h);
    steer_put_u32(&b, e->count);
    steer_put_f32(&b, e->radius);
    steer_put_u8(&b, e->mode);
    steer_put_u8(&b, e->cornering);
    steer_put_u8(&b, e->released);
    steer_put_u32(&b, e->users);
    steer_put_f32s(&b, (const float *)(w->path_points + (size_t)h * c->max_path_points),
                   2u * (size_t)e->count);
  }
  steer_put_u32(&b, w->path_free_count);
  for (uint32_t i = 0; i < w->path_free_count; i++)
    steer_put_u32(&b, w->path_free[i]);
  for (uint32_t d = 0; d < w->count; d++)
    put_avoid(&b, w, d);
  steer_put_u64(&b, w->stuck_count);
  put_map(&b, w->map);
  if (b.overflowed || b.pos != need - STATE_TRAILER)
    return STEER_EINVAL; /* not reached: state_size counts what is written */
  steer_put_u64(&b, state_checksum(buf, b.pos));
  return STEER_OK;
}

/* ---- reading ------------------------------------------------------------- */

static int inside(const steer_world_config *c, float x, float y) {
  return x >= c->min.x && x <= c->max.x && y >= c->min.y && y <= c->max.y;
}

/* The behaviour checks of steer_world_set_behaviour that hold for as long as
 * the behaviour is set: a target agent may have despawned since, so only its
 * kind is checked, not whether it lives. */
static int behaviour_ok(uint8_t model, const steer_behaviour *b) {
  if (b->kind >= STEER_BEHAVIOUR_COUNT || b->facing >= STEER_FACING_COUNT ||
      b->combine >= STEER_COMBINE_COUNT || b->target.kind >= STEER_TARGET_KIND_COUNT)
    return 0;
  if (!valid_params(&b->params) || !isfinite(b->separation_weight) || b->separation_weight < 0.0f)
    return 0;
  if (!(model_behaviours[model] & (1u << b->kind)))
    return 0;
  if (b->target.kind == STEER_TARGET_POINT &&
      (!isfinite(b->target.point.x) || !isfinite(b->target.point.y) || !isfinite(b->target.orientation)))
    return 0;
  if (needs_agent_target(b->kind) && b->target.kind != STEER_TARGET_AGENT)
    return 0;
  if (needs_point_or_agent(b->kind) && b->target.kind == STEER_TARGET_NONE)
    return 0;
  return 1;
}

/* Reads agent d and checks what can be checked without the rest of the file. */
static int get_agent(steer_rbuf *b, steer_world *w, uint32_t d) {
  w->id[d] = steer_get_u32(b);
  w->owner[d] = steer_get_u32(b);
  w->model[d] = steer_get_u8(b);
  w->arrived[d] = steer_get_u8(b);
  w->px[d] = steer_get_f32(b);
  w->py[d] = steer_get_f32(b);
  w->vx[d] = steer_get_f32(b);
  w->vy[d] = steer_get_f32(b);
  w->theta[d] = steer_get_f32(b);
  w->omega[d] = steer_get_f32(b);
  w->wander[d] = steer_get_f32(b);
  w->arng[d].state = steer_get_u64(b);
  steer_get_f32s(b, (float *)&w->limits[d], LIMIT_FLOATS);
  steer_behaviour *bh = &w->behaviour[d];
  memset(bh, 0, sizeof(*bh));
  bh->kind = steer_get_u8(b);
  bh->facing = steer_get_u8(b);
  bh->combine = steer_get_u8(b);
  bh->max_neighbours = steer_get_u8(b);
  bh->separation_weight = steer_get_f32(b);
  bh->target.kind = steer_get_u8(b);
  bh->target.point.x = steer_get_f32(b);
  bh->target.point.y = steer_get_f32(b);
  bh->target.orientation = steer_get_f32(b);
  bh->target.agent = steer_get_u32(b);
  bh->target.agent2 = steer_get_u32(b);
  steer_get_f32s(b, (float *)&bh->params, PARAM_FLOATS);
  w->path[d] = (int32_t)steer_get_u32(b);
  steer_path_cursor *c = &w->cursor[d];
  memset(c, 0, sizeof(*c));
  c->node = steer_get_u32(b);
  c->dir = (int8_t)steer_get_u8(b);
  c->finished = steer_get_u8(b);
  c->turn_time_left = steer_get_f32(b);
  c->turn_rate = steer_get_f32(b);
  if (b->bad)
    return 0;
  return w->model[d] < STEER_MODEL_COUNT && w->arrived[d] <= 1 && inside(&w->cfg, w->px[d], w->py[d]) &&
         isfinite(w->vx[d]) && isfinite(w->vy[d]) && isfinite(w->theta[d]) && isfinite(w->omega[d]) &&
         isfinite(w->wander[d]) && valid_limits(&w->limits[d]) && behaviour_ok(w->model[d], bh) &&
         w->path[d] >= -1 && (w->path[d] < 0 || (uint32_t)w->path[d] < w->cfg.max_paths) &&
         (w->path[d] >= 0) == (bh->kind == STEER_BEHAVIOUR_FOLLOW_PATH) && (c->dir == 1 || c->dir == -1) &&
         c->finished <= 1 && isfinite(c->turn_time_left) && isfinite(c->turn_rate);
}

/* Slots: every slot is exactly one of live (its agent's id names it with its
 * current generation), free (in the ring once) or retired (generations used
 * up). mark has max_agents zeroed entries. */
static int get_slots(steer_rbuf *b, steer_world *w, uint32_t *mark) {
  const uint32_t n = w->cfg.max_agents;
  for (uint32_t s = 0; s < n; s++) {
    w->slot_gen[s] = steer_get_u16(b);
    if (w->slot_gen[s] == 0 || w->slot_gen[s] > GEN_MAX)
      return 0;
  }
  for (uint32_t s = 0; s < n; s++) {
    w->slot_dense[s] = steer_get_u32(b);
    if (w->slot_dense[s] != NO_DENSE && w->slot_dense[s] >= w->count)
      return 0;
  }
  if (b->bad)
    return 0;
  for (uint32_t d = 0; d < w->count; d++) {
    uint32_t slot = w->id[d] & STEER_ID_INDEX_MASK;
    if (slot >= n || w->slot_dense[slot] != d || (w->id[d] >> STEER_ID_INDEX_BITS) != w->slot_gen[slot])
      return 0;
    mark[slot] = 1; /* distinct: slot_dense[slot] names one dense index */
  }
  for (uint32_t s = 0; s < n; s++)
    if (w->slot_dense[s] != NO_DENSE && !mark[s])
      return 0;
  uint32_t free_count = steer_get_u32(b);
  if (b->bad || free_count > n - w->count)
    return 0;
  for (uint32_t i = 0; i < free_count; i++) {
    uint32_t s = steer_get_u32(b);
    if (b->bad || s >= n || mark[s])
      return 0;
    mark[s] = 1;
    w->free_ring[i] = s;
  }
  w->free_head = 0;
  w->free_count = free_count;
  for (uint32_t s = 0; s < n; s++)
    if (!mark[s] && w->slot_gen[s] != GEN_MAX)
      return 0;
  return 1;
}

/* The pool, then each agent's path against it; users counts the agents per
 * handle (max_paths zeroed entries). */
static int get_paths(steer_rbuf *b, steer_world *w, uint32_t *users) {
  const steer_world_config *c = &w->cfg;
  uint32_t live = steer_get_u32(b);
  if (b->bad || live > c->max_paths)
    return 0;
  uint32_t next = 0; /* handles ascend: each appears once */
  for (uint32_t i = 0; i < live; i++) {
    uint32_t h = steer_get_u32(b);
    if (b->bad || h < next || h >= c->max_paths)
      return 0;
    next = h + 1;
    path_entry *e = &w->paths[h];
    e->count = steer_get_u32(b);
    e->radius = steer_get_f32(b);
    e->mode = steer_get_u8(b);
    e->cornering = steer_get_u8(b);
    e->released = steer_get_u8(b);
    e->users = steer_get_u32(b);
    e->in_use = 1;
    if (b->bad || e->count == 0 || e->count > c->max_path_points || !isfinite(e->radius) ||
        !(e->radius > 0.0f) || e->mode >= STEER_PATH_MODE_COUNT || e->cornering >= STEER_CORNER_COUNT ||
        e->released > 1 || (e->released && e->users == 0))
      return 0;
    vec2 *pts = w->path_points + (size_t)h * c->max_path_points;
    for (uint32_t k = 0; k < e->count; k++) {
      pts[k].x = steer_get_f32(b);
      pts[k].y = steer_get_f32(b);
      if (!inside(c, pts[k].x, pts[k].y))
        return 0;
    }
  }
  w->path_live = live;
  uint32_t nfree = steer_get_u32(b);
  if (b->bad || nfree != c->max_paths - live)
    return 0;
  for (uint32_t i = 0; i < nfree; i++) {
    uint32_t h = steer_get_u32(b);
    if (b->bad || h >= c->max_paths || w->paths[h].in_use || users[h])
      return 0;
    users[h] = 1; /* seen; distinct free handles fill the rest of the pool */
    w->path_free[i] = h;
  }
  w->path_free_count = nfree;
  memset(users, 0, (size_t)c->max_paths * sizeof(*users));
  for (uint32_t d = 0; d < w->count; d++) {
    int32_t h = w->path[d];
    if (h < 0)
      continue;
    const path_entry *e = &w->paths[h];
    if (!e->in_use || w->cursor[d].node >= e->count ||
        (e->cornering != STEER_CORNER_NONE && w->model[d] != STEER_MODEL_HEADING))
      return 0;
    users[h]++;
  }
  for (uint32_t h = 0; h < c->max_paths; h++)
    if (w->paths[h].in_use && w->paths[h].users != users[h])
      return 0;
  return 1;
}

/* The avoidance records (checked with the rest of each behaviour), the STUCK
 * count and the map, whose obstacles are checked as steer_map_add checks them;
 * then every agent must be free of it (with 1 mm of slack). */
static int get_avoid_and_map(steer_rbuf *b, steer_world *w, uint32_t format) {
  for (uint32_t d = 0; d < w->count; d++) {
    steer_behaviour *bh = &w->behaviour[d];
    bh->avoid_weight = steer_get_f32(b);
    bh->avoid_horizon = steer_get_f32(b);
    bh->avoid_priority = steer_get_u8(b);
    bh->neighbour_period = steer_get_u8(b);
    bh->wall_lookahead = steer_get_f32(b);
    bh->wall_margin = steer_get_f32(b);
    bh->stuck_time = steer_get_f32(b);
    bh->stuck_reaction = steer_get_u8(b);
    bh->arrival = format > STATE_VERSION_OLD ? steer_get_u8(b) : STEER_ARRIVAL_POINT;
    w->stuck_best[d] = steer_get_f32(b);
    w->stuck_timer[d] = steer_get_f32(b);
    w->stuck_flag[d] = steer_get_u8(b);
    if (b->bad || !valid_avoidance(bh) || !isfinite(w->stuck_best[d]) || !isfinite(w->stuck_timer[d]) ||
        w->stuck_flag[d] > 1)
      return 0;
    uint8_t kept = steer_get_u8(b);
    w->nlist_stamp[d] = 0;
    if (kept == 0xFF)
      continue;
    if (kept > WORLD_NLIST ||
        (!w->nlist && !(w->nlist = malloc((size_t)w->cfg.max_agents * WORLD_NLIST * sizeof(uint32_t)))))
      return 0;
    for (uint32_t i = 0; i < kept; i++) {
      uint32_t j = steer_get_u32(b);
      if (b->bad || j >= w->count || j == d)
        return 0;
      w->nlist[(size_t)d * WORLD_NLIST + i] = j;
    }
    w->nlist_n[d] = kept;
    w->nlist_stamp[d] = w->nepoch;
  }
  for (uint32_t d = 0; d < w->count; d++)
    if (world_nlist_need(w, &w->behaviour[d]) != STEER_OK)
      return 0;
  w->stuck_count = steer_get_u64(b);
  uint32_t version = steer_get_u32(b);
  uint32_t n = steer_get_u32(b);
  if (b->bad || n > STEER_MAP_MAX_OBSTACLES)
    return 0;
  vec2 *pts = malloc(STEER_MAP_MAX_VERTICES * sizeof(vec2));
  if (!pts)
    return 0;
  int ok = 1;
  steer_map_hold(w->map); /* one index build for the whole map */
  for (uint32_t i = 0; ok && i < n; i++) {
    uint32_t id = steer_get_u32(b);
    steer_obstacle_desc o;
    o.kind = steer_get_u8(b);
    o.count = steer_get_u32(b);
    o.radius = steer_get_f32(b);
    o.points = pts;
    /* Only a circle has a radius: the map keeps 0 for the others, and a file
     * that loads must save back byte for byte (fuzz/fuzz_state.c). */
    int stray_radius = o.kind != STEER_OBSTACLE_CIRCLE && (o.radius != 0.0f || signbit(o.radius));
    if (b->bad || stray_radius || o.count > STEER_MAP_MAX_VERTICES ||
        (size_t)o.count * 8u > b->len - b->pos) {
      ok = 0;
      break;
    }
    for (uint32_t k = 0; k < o.count; k++) {
      pts[k].x = steer_get_f32(b);
      pts[k].y = steer_get_f32(b);
    }
    ok = !b->bad && steer_map_add(w->map, id, &o) == STEER_OK;
  }
  free(pts);
  if (steer_map_release(w->map) != STEER_OK || !ok)
    return 0;
  steer_map_set_version(w->map, version);
  w->map_live = steer_map_count(w->map) > 0;
  for (uint32_t d = 0; d < w->count; d++)
    if (!steer_map_free(w->map, v2(w->px[d], w->py[d]), w->limits[d].radius, 1e-3f))
      return 0;
  return 1;
}

/* Checks the envelope: size, magic, checksum, then version (an intact file of
 * another version is EVERSION, a damaged one ECORRUPT), then the rest of the
 * header. */
static int check_envelope(const uint8_t *buf, size_t len, uint32_t *format) {
  if (!buf || len < STATE_FIXED + STATE_TRAILER || memcmp(buf, STATE_MAGIC, 4) != 0)
    return STEER_ECORRUPT;
  if (state_checksum(buf, len - STATE_TRAILER) != steer_le64(buf + len - STATE_TRAILER))
    return STEER_ECORRUPT;
  steer_rbuf b = steer_rbuf_make(buf, len);
  b.pos = 4;
  *format = steer_get_u32(&b);
  if (*format != STEER_STATE_VERSION && *format != STATE_VERSION_OLD)
    return STEER_EVERSION;
  if (steer_get_u32(&b) != STATE_BOM || steer_get_u32(&b) != 0 || steer_get_u64(&b) != (uint64_t)len)
    return STEER_ECORRUPT;
  return STEER_OK;
}

static int load(const uint8_t *buf, size_t len, steer_world **out) {
  uint32_t format = 0;
  int rc = check_envelope(buf, len, &format);
  if (rc != STEER_OK)
    return rc;
  steer_rbuf b = steer_rbuf_make(buf, len - STATE_TRAILER);
  b.pos = STATE_HEADER;
  steer_world_config cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.max_agents = steer_get_u32(&b);
  cfg.max_paths = steer_get_u32(&b);
  cfg.max_path_points = steer_get_u32(&b);
  cfg.max_events = steer_get_u32(&b);
  cfg.min.x = steer_get_f32(&b);
  cfg.min.y = steer_get_f32(&b);
  cfg.max.x = steer_get_f32(&b);
  cfg.max.y = steer_get_f32(&b);
  cfg.cell_size = steer_get_f32(&b);
  cfg.seed = steer_get_u64(&b);
  uint64_t tick = steer_get_u64(&b);
  uint64_t rng = steer_get_u64(&b);
  uint64_t dropped = steer_get_u64(&b);
  uint32_t count = steer_get_u32(&b);
  if (b.bad || !world_config_valid(&cfg) || cfg.max_paths == 0 || count > cfg.max_agents)
    return STEER_ECORRUPT;
  /* The sections sized by the config must fit in what is there, which bounds
   * what is allocated below by the input's size (every path handle takes at
   * least 4 bytes, live or free). */
  uint64_t least = (uint64_t)STATE_FIXED + (uint64_t)count * AGENT_RECORD + (uint64_t)cfg.max_agents * 6u +
                   12u + (uint64_t)cfg.max_paths * 4u +
                   (uint64_t)count * (AVOID_RECORD - (format == STATE_VERSION_OLD)) + 16u + STATE_TRAILER;
  if (least > (uint64_t)len)
    return STEER_ECORRUPT;

  steer_world *w = steer_world_create(&cfg);
  uint32_t scratch_n = cfg.max_agents > cfg.max_paths ? cfg.max_agents : cfg.max_paths;
  uint32_t *scratch = calloc(scratch_n, sizeof(*scratch));
  if (!w || !scratch) {
    steer_world_destroy(w);
    free(scratch);
    return STEER_ENOMEM;
  }
  w->tick = tick;
  w->rng.state = rng;
  w->events_dropped = dropped;
  w->count = count;
  int ok = 1;
  for (uint32_t d = 0; ok && d < count; d++)
    ok = get_agent(&b, w, d);
  ok = ok && get_slots(&b, w, scratch);
  if (ok)
    memset(scratch, 0, (size_t)scratch_n * sizeof(*scratch));
  ok = ok && get_paths(&b, w, scratch) && get_avoid_and_map(&b, w, format) && !b.bad && b.pos == b.len;
  free(scratch);
  if (!ok) {
    steer_world_destroy(w);
    return STEER_ECORRUPT;
  }
  /* The caches, as the world's own calls would have left them. */
  float max_radius = 0.0f;
  for (uint32_t d = 0; d < count; d++) {
    w->radius[d] = w->limits[d].radius;
    world_batch_refresh(w, d);
    max_radius = w->radius[d] > max_radius ? w->radius[d] : max_radius;
    w->separating += needs_neighbours(&w->behaviour[d]);
    w->akey[d] = avoid_key(&w->behaviour[d]);
    w->avoiding += w->akey[d] != 0;
    w->stuck_watch += w->behaviour[d].stuck_time > 0.0f;
    w->readers += reads_agents(&w->behaviour[d]);
  }
  w->max_radius = max_radius;
  w->max_radius_stale = 0;
  w->grid_stale = 1;
  w->event_count = 0;
  *out = w;
  return STEER_OK;
}

steer_world *steer_world_load(const uint8_t *buf, size_t len, int *err) {
  steer_world *w = NULL;
  int rc = load(buf, len, &w);
  if (err)
    *err = rc;
  return rc == STEER_OK ? w : NULL;
}

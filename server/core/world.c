/* world.c: the agent store (creation, spawn, despawn, the setters and
 * getters), the path pool, read access and the state hash; the step is
 * world_tick.c's.
 *
 * Layout: hot state as arrays per field over a dense list [0, count); a slot
 * table maps ids to dense indices. */
#include "world.h"

#include <stdlib.h>
#include <string.h>

#include "dense.h"
#include "grid.h"
#include "pool.h"
#include "simd.h"
#include "world_internal.h"

const char *steer_strerror(int code) {
  switch (code) {
  case STEER_OK:
    return "ok";
  case STEER_EINVAL:
    return "invalid argument";
  case STEER_ENOENT:
    return "no such agent";
  case STEER_EFULL:
    return "world full";
  case STEER_EMODEL:
    return "behaviour does not suit the movement model";
  case STEER_ETARGET:
    return "target missing or not a live agent";
  case STEER_ENOMEM:
    return "out of memory";
  case STEER_ECORRUPT:
    return "state data corrupt or truncated";
  case STEER_EVERSION:
    return "state format version not supported";
  case STEER_EBLOCKED:
    return "inside the map's geometry";
  default:
    return "unknown error";
  }
}

steer_world_config steer_default_world_config(void) {
  steer_world_config c;
  memset(&c, 0, sizeof(c));
  c.max_agents = 10000;
  c.max_paths = 0; /* 0: same as max_agents */
  c.max_path_points = 64;
  c.max_events = 4096;
  c.min = v2(-500.0f, -500.0f);
  c.max = v2(500.0f, 500.0f);
  c.cell_size = 8.0f;
  c.seed = 1;
  return c;
}

steer_behaviour steer_default_behaviour(steer_behaviour_kind kind) {
  steer_behaviour b;
  memset(&b, 0, sizeof(b));
  b.kind = (uint8_t)kind;
  b.facing = STEER_FACING_LOOK_WHERE_GOING;
  b.combine = STEER_COMBINE_BLEND;
  b.max_neighbours = 8;
  b.params = steer_default_params();
  b.avoid_horizon = 3.0f;
  b.neighbour_period = 1;
  b.wall_lookahead = 1.0f;
  b.wall_margin = 0.25f;
  return b;
}

steer_agent_desc steer_default_agent_desc(void) {
  steer_agent_desc d;
  memset(&d, 0, sizeof(d));
  d.model = STEER_MODEL_DYNAMIC;
  d.limits = steer_default_limits();
  d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_NONE);
  return d;
}

/* ---- validation ---------------------------------------------------------- */

static int inside_bounds(const steer_world *w, vec2 p) {
  return p.x >= w->cfg.min.x && p.x <= w->cfg.max.x && p.y >= w->cfg.min.y && p.y <= w->cfg.max.y;
}

static int check_behaviour(const steer_world *w, uint8_t model, const steer_behaviour *b, steer_id self) {
  if (b->kind >= STEER_BEHAVIOUR_COUNT || b->facing >= STEER_FACING_COUNT ||
      b->combine >= STEER_COMBINE_COUNT || b->target.kind >= STEER_TARGET_KIND_COUNT)
    return STEER_EINVAL;
  if (!valid_params(&b->params) || !in_range(b->separation_weight, 0.0f, STEER_MAX_FACTOR) ||
      !valid_avoidance(b))
    return STEER_EINVAL;
  if (!(model_behaviours[model] & (1u << b->kind)))
    return STEER_EMODEL;
  if (b->target.kind == STEER_TARGET_POINT &&
      (!isfinite(b->target.point.x) || !isfinite(b->target.point.y) || !isfinite(b->target.orientation)))
    return STEER_EINVAL;
  if (needs_agent_target(b->kind) && b->target.kind != STEER_TARGET_AGENT)
    return STEER_ETARGET;
  if (needs_point_or_agent(b->kind) && b->target.kind == STEER_TARGET_NONE)
    return STEER_ETARGET;
  if (world_target_blocked(w, b))
    return STEER_EBLOCKED;
  if (b->target.kind == STEER_TARGET_AGENT) {
    if (world_dense_of(w, b->target.agent) == NO_DENSE || b->target.agent == self)
      return STEER_ETARGET;
    /* Interpose needs two different agents: the midpoint of one is itself. */
    if (b->kind == STEER_BEHAVIOUR_INTERPOSE &&
        (world_dense_of(w, b->target.agent2) == NO_DENSE || b->target.agent2 == self ||
         b->target.agent2 == b->target.agent))
      return STEER_ETARGET;
  }
  return STEER_OK;
}

/* ---- creation ------------------------------------------------------------ */

#define ALLOC(field, n)                                                                                      \
  do {                                                                                                       \
    w->field = calloc((n), sizeof(*w->field));                                                               \
    if (!w->field)                                                                                           \
      goto fail;                                                                                             \
  } while (0)

steer_world *steer_world_create(const steer_world_config *cfg) {
  if (!world_config_valid(cfg))
    return NULL;
  steer_world *w = calloc(1, sizeof(*w));
  if (!w)
    return NULL;
  w->cfg = *cfg;
  if (w->cfg.max_paths == 0)
    w->cfg.max_paths = cfg->max_agents;
  uint32_t n = w->cfg.max_agents;
  ALLOC(id, n);
  ALLOC(owner, n);
  ALLOC(model, n);
  ALLOC(arrived, n);
  ALLOC(px, n);
  ALLOC(py, n);
  ALLOC(vx, n);
  ALLOC(vy, n);
  ALLOC(theta, n);
  ALLOC(omega, n);
  ALLOC(wander, n);
  ALLOC(arng, n);
  ALLOC(limits, n);
  ALLOC(radius, n);
  ALLOC(behaviour, n);
  ALLOC(path, n);
  ALLOC(cursor, n);
  ALLOC(cmd, n);
  ALLOC(ekind, n);
  ALLOC(ept, n);
  ALLOC(er, n);
  ALLOC(nhint, n);
  ALLOC(bkind, n);
  ALLOC(brec, n);
  ALLOC(slot_dense, n);
  ALLOC(slot_gen, n);
  ALLOC(free_ring, n);
  ALLOC(stuck_best, n);
  ALLOC(stuck_timer, n);
  ALLOC(stuck_flag, n);
  ALLOC(akey, n);
  ALLOC(nlist_n, n);
  ALLOC(nlist_stamp, n);
  w->nepoch = 1;
  ALLOC(paths, w->cfg.max_paths);
  ALLOC(path_points, (size_t)w->cfg.max_paths * w->cfg.max_path_points);
  ALLOC(path_free, w->cfg.max_paths);
  if (w->cfg.max_events > 0)
    ALLOC(events, w->cfg.max_events);
  for (uint32_t i = 0; i < n; i++) {
    w->slot_dense[i] = NO_DENSE;
    w->slot_gen[i] = 1;
    w->free_ring[i] = i;
  }
  w->free_count = n;
  for (uint32_t i = 0; i < w->cfg.max_paths; i++)
    w->path_free[i] = w->cfg.max_paths - 1 - i; /* pop order 0, 1, 2, ... */
  w->path_free_count = w->cfg.max_paths;
  if (steer_grid_init(&w->grid, cfg->min, cfg->max, cfg->cell_size, n) != STEER_OK)
    goto fail;
  if (steer_grid_lists_init(&w->nbr, n) != STEER_OK)
    goto fail;
  w->map = steer_map_create(cfg->min, cfg->max, cfg->cell_size);
  if (!w->map)
    goto fail;
  steer_rng_seed(&w->rng, cfg->seed);
  return w;
fail:
  steer_world_destroy(w);
  return NULL;
}

void steer_world_destroy(steer_world *w) {
  if (!w)
    return;
  free(w->id);
  free(w->owner);
  free(w->model);
  free(w->arrived);
  free(w->px);
  free(w->py);
  free(w->vx);
  free(w->vy);
  free(w->theta);
  free(w->omega);
  free(w->wander);
  free(w->arng);
  free(w->limits);
  free(w->radius);
  free(w->behaviour);
  free(w->path);
  free(w->cursor);
  free(w->cmd);
  free(w->ekind);
  free(w->ept);
  free(w->er);
  free(w->nhint);
  free(w->bkind);
  free(w->brec);
  free(w->slot_dense);
  free(w->slot_gen);
  free(w->free_ring);
  free(w->paths);
  free(w->path_points);
  free(w->path_free);
  free(w->events);
  free(w->stuck_best);
  free(w->stuck_timer);
  free(w->stuck_flag);
  free(w->akey);
  free(w->nlist);
  free(w->nlist_n);
  free(w->nlist_stamp);
  world_contact_free(w);
  steer_map_destroy(w->map);
  steer_grid_free(&w->grid);
  steer_grid_lists_free(&w->nbr);
  free(w);
}

/* ---- paths --------------------------------------------------------------- */

static int path_valid(const steer_world *w, int path) {
  return path >= 0 && (uint32_t)path < w->cfg.max_paths && w->paths[path].in_use;
}

static void path_free_if_unused(steer_world *w, int32_t path) {
  path_entry *e = &w->paths[path];
  if (e->in_use && e->released && e->users == 0) {
    memset(e, 0, sizeof(*e));
    w->path_free[w->path_free_count++] = (uint32_t)path;
    w->path_live--;
  }
}

static int path_args_valid(const steer_world *w, const vec2 *points, uint32_t count, float radius,
                           steer_path_mode mode, steer_cornering cornering) {
  if (!points || count == 0 || count > w->cfg.max_path_points || !isfinite(radius) || !(radius > 0.0f) ||
      (unsigned)mode >= STEER_PATH_MODE_COUNT || (unsigned)cornering >= STEER_CORNER_COUNT)
    return 0;
  for (uint32_t i = 0; i < count; i++)
    if (!isfinite(points[i].x) || !isfinite(points[i].y) || !inside_bounds(w, points[i]))
      return 0;
  return 1;
}

int steer_world_path_create(steer_world *w, const vec2 *points, uint32_t count, float radius,
                            steer_path_mode mode, steer_cornering cornering) {
  if (!path_args_valid(w, points, count, radius, mode, cornering))
    return STEER_EINVAL;
  if (world_points_blocked(w, points, count))
    return STEER_EBLOCKED;
  if (w->path_free_count == 0)
    return STEER_EFULL;
  uint32_t h = w->path_free[--w->path_free_count];
  path_entry *e = &w->paths[h];
  e->count = count;
  e->radius = radius;
  e->mode = (uint8_t)mode;
  e->cornering = (uint8_t)cornering;
  e->in_use = 1;
  e->released = 0;
  e->users = 0;
  memcpy(w->path_points + (size_t)h * w->cfg.max_path_points, points, count * sizeof(vec2));
  w->path_live++;
  return (int)h;
}

int steer_world_path_release(steer_world *w, int path) {
  if (!path_valid(w, path) || w->paths[path].released)
    return STEER_EINVAL;
  w->paths[path].released = 1;
  path_free_if_unused(w, path);
  return STEER_OK;
}

uint32_t steer_world_path_count(const steer_world *w) { return w->path_live; }

int steer_world_path_get(const steer_world *w, int path, steer_path *out) {
  if (!path_valid(w, path))
    return STEER_EINVAL;
  *out = world_path_view(w, path);
  return STEER_OK;
}

/* Drops the agent's path, if any (the behaviour is left to the caller). */
static void leave_path(steer_world *w, uint32_t d) {
  int32_t h = w->path[d];
  if (h < 0)
    return;
  w->path[d] = -1;
  w->paths[h].users--;
  path_free_if_unused(w, h);
}

int steer_world_follow_path(steer_world *w, steer_id id, int path) {
  uint32_t d = world_dense_of(w, id);
  if (d == NO_DENSE)
    return STEER_ENOENT;
  if (!path_valid(w, path))
    return STEER_EINVAL;
  const path_entry *e = &w->paths[path];
  if (!(model_behaviours[w->model[d]] & (1u << STEER_BEHAVIOUR_FOLLOW_PATH)) ||
      (e->cornering != STEER_CORNER_NONE && w->model[d] != STEER_MODEL_HEADING))
    return STEER_EMODEL;
  w->paths[path].users++; /* before leave_path, so re-following the same path keeps it alive */
  leave_path(w, d);
  w->path[d] = path;
  steer_path_cursor_init(&w->cursor[d]);
  world_stuck_reset(w, d);
  steer_behaviour *b = &w->behaviour[d];
  w->readers -= reads_agents(b);
  b->kind = STEER_BEHAVIOUR_FOLLOW_PATH;
  b->target.kind = STEER_TARGET_NONE;
  world_batch_refresh(w, d);
  w->arrived[d] = 0;
  return STEER_OK;
}

int steer_world_set_path(steer_world *w, steer_id id, const vec2 *points, uint32_t count, float radius,
                         steer_path_mode mode, steer_cornering cornering) {
  uint32_t d = world_dense_of(w, id);
  if (d == NO_DENSE)
    return STEER_ENOENT;
  if (cornering != STEER_CORNER_NONE && w->model[d] != STEER_MODEL_HEADING)
    return STEER_EMODEL;
  if (!path_args_valid(w, points, count, radius, mode, cornering))
    return STEER_EINVAL;
  if (world_points_blocked(w, points, count))
    return STEER_EBLOCKED;
  /* Release before create: when the agent is the last user of its old path,
   * leaving it frees the entry for the new one (the handle is reused), so
   * replacing a path works in a full pool. Refused without side effects when
   * the pool stays full. */
  int32_t old = w->path[d];
  int frees_old = old >= 0 && w->paths[old].released && w->paths[old].users == 1;
  if (w->path_free_count == 0 && !frees_old)
    return STEER_EFULL;
  leave_path(w, d);
  int h = steer_world_path_create(w, points, count, radius, mode, cornering);
  if (h < 0)
    return h; /* not reached: the arguments and the pool were checked */
  int rc = steer_world_follow_path(w, id, h);
  steer_world_path_release(w, h); /* the agent holds the only reference now */
  return rc;
}

/* ---- agents -------------------------------------------------------------- */

int steer_world_spawn(steer_world *w, const steer_agent_desc *desc, uint32_t owner, steer_id *out_id) {
  if (!desc || desc->model >= STEER_MODEL_COUNT || !valid_limits(&desc->limits))
    return STEER_EINVAL;
  const steer_state *s = &desc->state;
  if (!finite_all((const float *)s, sizeof(*s) / sizeof(float)) || !inside_bounds(w, s->position))
    return STEER_EINVAL;
  if (desc->behaviour.kind == STEER_BEHAVIOUR_FOLLOW_PATH)
    return STEER_EINVAL;
  int rc = check_behaviour(w, desc->model, &desc->behaviour, 0);
  if (rc != STEER_OK)
    return rc;
  if (!world_body_free(w, s->position, desc->limits.radius))
    return STEER_EBLOCKED;
  if (w->free_count == 0)
    return STEER_EFULL;
  if (world_nlist_need(w, &desc->behaviour) != STEER_OK)
    return STEER_ENOMEM;
  uint32_t slot = w->free_ring[w->free_head];
  w->free_head = (w->free_head + 1) % w->cfg.max_agents;
  w->free_count--;

  uint32_t d = w->count++;
  steer_id id = ((uint32_t)w->slot_gen[slot] << STEER_ID_INDEX_BITS) | slot;
  w->slot_dense[slot] = d;
  w->id[d] = id;
  w->owner[d] = owner;
  w->model[d] = desc->model;
  w->arrived[d] = 0;
  w->px[d] = s->position.x;
  w->py[d] = s->position.y;
  /* A heading-model agent moves along its heading: keep only that component. */
  vec2 v = s->velocity;
  if (desc->model == STEER_MODEL_HEADING)
    v = v2_scale(steer_heading(s->orientation), v2_dot(v, steer_heading(s->orientation)));
  v = v2_clip(v, desc->limits.max_speed);
  w->vx[d] = v.x;
  w->vy[d] = v.y;
  w->theta[d] = steer_wrap_angle(s->orientation);
  w->omega[d] = steer_clampf(s->rotation, -desc->limits.max_rotation, desc->limits.max_rotation);
  w->wander[d] = 0.0f;
  /* Each agent gets its own generator, seeded from the world's: wander stays
   * reproducible whatever order agents are stepped in. */
  uint64_t seed_hi = steer_rng_next(&w->rng); /* two statements: C leaves the order within one unspecified */
  uint64_t seed_lo = steer_rng_next(&w->rng);
  steer_rng_seed(&w->arng[d], (seed_hi << 32) | seed_lo);
  w->limits[d] = desc->limits;
  w->radius[d] = desc->limits.radius;
  if (desc->limits.radius > w->max_radius)
    w->max_radius = desc->limits.radius;
  w->behaviour[d] = desc->behaviour;
  w->path[d] = -1;
  steer_path_cursor_init(&w->cursor[d]);
  memset(&w->cmd[d], 0, sizeof(w->cmd[d]));
  w->nhint[d] = 0.0f;
  world_stuck_reset(w, d);
  w->akey[d] = avoid_key(&desc->behaviour);
  w->avoiding += w->akey[d] != 0;
  w->stuck_watch += desc->behaviour.stuck_time > 0.0f;
  w->readers += reads_agents(&desc->behaviour);
  w->nlist_stamp[d] = 0; /* no kept set */
  if (needs_neighbours(&desc->behaviour))
    w->separating++;
  world_batch_refresh(w, d);
  w->grid_stale = 1;
  if (out_id)
    *out_id = id;
  return STEER_OK;
}

/* Moves the last dense agent into hole d. */
static void dense_move(steer_world *w, uint32_t to, uint32_t from) {
  w->id[to] = w->id[from];
  w->owner[to] = w->owner[from];
  w->model[to] = w->model[from];
  w->arrived[to] = w->arrived[from];
  w->px[to] = w->px[from];
  w->py[to] = w->py[from];
  w->vx[to] = w->vx[from];
  w->vy[to] = w->vy[from];
  w->theta[to] = w->theta[from];
  w->omega[to] = w->omega[from];
  w->wander[to] = w->wander[from];
  w->arng[to] = w->arng[from];
  w->limits[to] = w->limits[from];
  w->radius[to] = w->radius[from];
  w->behaviour[to] = w->behaviour[from];
  w->path[to] = w->path[from];
  w->cursor[to] = w->cursor[from];
  w->cmd[to] = w->cmd[from];
  w->nhint[to] = w->nhint[from];
  w->bkind[to] = w->bkind[from];
  w->brec[to] = w->brec[from];
  w->stuck_best[to] = w->stuck_best[from];
  w->stuck_timer[to] = w->stuck_timer[from];
  w->stuck_flag[to] = w->stuck_flag[from];
  w->akey[to] = w->akey[from];
  w->nlist_n[to] = w->nlist_n[from];
  w->nlist_stamp[to] = w->nlist_stamp[from];
  if (w->nlist)
    memcpy(w->nlist + (size_t)to * WORLD_NLIST, w->nlist + (size_t)from * WORLD_NLIST,
           WORLD_NLIST * sizeof(uint32_t));
  w->slot_dense[w->id[to] & STEER_ID_INDEX_MASK] = to;
}

int steer_world_despawn(steer_world *w, steer_id id) {
  uint32_t d = world_dense_of(w, id);
  if (d == NO_DENSE)
    return STEER_ENOENT;
  leave_path(w, d);
  if (needs_neighbours(&w->behaviour[d]))
    w->separating--;
  w->avoiding -= w->akey[d] != 0;
  w->stuck_watch -= w->behaviour[d].stuck_time > 0.0f;
  w->readers -= reads_agents(&w->behaviour[d]);
  if (w->radius[d] >= w->max_radius)
    w->max_radius_stale = 1;
  uint32_t slot = id & STEER_ID_INDEX_MASK;
  uint32_t last = --w->count;
  if (++w->nepoch == 0) { /* dense indices move: every kept neighbour set is dropped */
    w->nepoch = 1;
    memset(w->nlist_stamp, 0, (size_t)w->cfg.max_agents * sizeof(*w->nlist_stamp));
  }
  if (d != last)
    dense_move(w, d, last);
  w->slot_dense[slot] = NO_DENSE;
  w->grid_stale = 1;
  if (w->slot_gen[slot] < GEN_MAX) {
    w->slot_gen[slot]++;
    uint32_t tail = (w->free_head + w->free_count) % w->cfg.max_agents;
    w->free_ring[tail] = slot;
    w->free_count++;
  } /* else: the slot's generations are used up; retire it rather than reuse an id */
  return STEER_OK;
}

int steer_world_alive(const steer_world *w, steer_id id) { return world_dense_of(w, id) != NO_DENSE; }

int steer_world_set_behaviour(steer_world *w, steer_id id, const steer_behaviour *b) {
  uint32_t d = world_dense_of(w, id);
  if (d == NO_DENSE)
    return STEER_ENOENT;
  if (!b)
    return STEER_EINVAL;
  if (b->kind == STEER_BEHAVIOUR_FOLLOW_PATH) {
    /* Only parameters change: the path itself is set with set_path. */
    if (w->path[d] < 0)
      return STEER_EINVAL;
  }
  int rc = check_behaviour(w, w->model[d], b, id);
  if (rc != STEER_OK)
    return rc;
  if (world_nlist_need(w, b) != STEER_OK)
    return STEER_ENOMEM;
  if (b->kind != STEER_BEHAVIOUR_FOLLOW_PATH)
    leave_path(w, d);
  w->separating -= needs_neighbours(&w->behaviour[d]);
  w->separating += needs_neighbours(b);
  w->stuck_watch -= w->behaviour[d].stuck_time > 0.0f;
  w->stuck_watch += b->stuck_time > 0.0f;
  w->readers -= reads_agents(&w->behaviour[d]);
  w->readers += reads_agents(b);
  w->behaviour[d] = *b;
  world_batch_refresh(w, d);
  w->arrived[d] = 0;
  world_stuck_reset(w, d);
  if (w->akey[d] != avoid_key(b)) {
    w->avoiding += (avoid_key(b) != 0) - (w->akey[d] != 0);
    w->akey[d] = avoid_key(b);
    w->grid_stale = 1; /* the grid holds a copy */
  }
  return STEER_OK;
}

int steer_world_set_params(steer_world *w, steer_id id, const steer_params *p) {
  uint32_t d = world_dense_of(w, id);
  if (d == NO_DENSE)
    return STEER_ENOENT;
  if (!p || !valid_params(p))
    return STEER_EINVAL;
  w->behaviour[d].params = *p;
  world_batch_refresh(w, d);
  w->arrived[d] = 0;
  world_stuck_reset(w, d);
  return STEER_OK;
}

int steer_world_set_tuning(steer_world *w, steer_id id, const steer_behaviour *src) {
  uint32_t d = world_dense_of(w, id);
  if (d == NO_DENSE)
    return STEER_ENOENT;
  if (!src)
    return STEER_EINVAL;
  steer_behaviour b = w->behaviour[d];
  b.avoid_weight = src->avoid_weight;
  b.avoid_horizon = src->avoid_horizon;
  b.avoid_priority = src->avoid_priority;
  b.wall_lookahead = src->wall_lookahead;
  b.wall_margin = src->wall_margin;
  b.stuck_time = src->stuck_time;
  b.stuck_reaction = src->stuck_reaction;
  b.arrival = src->arrival;
  if (!valid_avoidance(&b))
    return STEER_EINVAL;
  if (world_nlist_need(w, &b) != STEER_OK)
    return STEER_ENOMEM;
  w->separating -= needs_neighbours(&w->behaviour[d]);
  w->separating += needs_neighbours(&b);
  w->stuck_watch -= w->behaviour[d].stuck_time > 0.0f;
  w->stuck_watch += b.stuck_time > 0.0f;
  w->behaviour[d] = b;
  world_batch_refresh(w, d);
  world_stuck_reset(w, d);
  if (w->akey[d] != avoid_key(&b)) {
    w->avoiding += (avoid_key(&b) != 0) - (w->akey[d] != 0);
    w->akey[d] = avoid_key(&b);
    w->grid_stale = 1; /* the grid holds a copy */
  }
  return STEER_OK;
}

int steer_world_target_lost(const steer_world *w, steer_id id) {
  uint32_t d = world_dense_of(w, id);
  if (d == NO_DENSE || w->behaviour[d].target.kind != STEER_TARGET_AGENT)
    return 0;
  const steer_behaviour *b = &w->behaviour[d];
  return world_dense_of(w, b->target.agent) == NO_DENSE ||
         (b->kind == STEER_BEHAVIOUR_INTERPOSE && world_dense_of(w, b->target.agent2) == NO_DENSE);
}

int steer_world_set_limits(steer_world *w, steer_id id, const steer_limits *l) {
  uint32_t d = world_dense_of(w, id);
  if (d == NO_DENSE)
    return STEER_ENOENT;
  if (!l || !valid_limits(l))
    return STEER_EINVAL;
  if (l->radius > w->radius[d] && !world_body_free(w, v2(w->px[d], w->py[d]), l->radius))
    return STEER_EBLOCKED;
  if (l->radius > w->max_radius)
    w->max_radius = l->radius;
  else if (w->radius[d] >= w->max_radius && l->radius < w->radius[d])
    w->max_radius_stale = 1;
  w->limits[d] = *l;
  world_batch_refresh(w, d);
  if (w->radius[d] != l->radius)
    w->grid_stale = 1; /* the grid holds a copy */
  w->radius[d] = l->radius;
  return STEER_OK;
}

int steer_world_stop(steer_world *w, steer_id id) {
  uint32_t d = world_dense_of(w, id);
  if (d == NO_DENSE)
    return STEER_ENOENT;
  leave_path(w, d);
  w->readers -= reads_agents(&w->behaviour[d]);
  w->behaviour[d].kind = STEER_BEHAVIOUR_NONE;
  w->behaviour[d].target.kind = STEER_TARGET_NONE;
  world_batch_refresh(w, d);
  w->arrived[d] = 0;
  world_stuck_reset(w, d);
  return STEER_OK;
}

int steer_world_get(const steer_world *w, steer_id id, steer_agent_info *out) {
  uint32_t d = world_dense_of(w, id);
  if (d == NO_DENSE)
    return STEER_ENOENT;
  memset(out, 0, sizeof(*out));
  out->id = id;
  out->model = w->model[d];
  out->arrived = w->arrived[d];
  out->state = world_state_of(w, d);
  out->limits = w->limits[d];
  out->behaviour = w->behaviour[d];
  out->path = w->path[d];
  out->cursor = w->cursor[d];
  out->owner = w->owner[d];
  return STEER_OK;
}

/* ---- read access --------------------------------------------------------- */

const steer_event *steer_world_events(const steer_world *w, uint32_t *count) {
  *count = w->event_count;
  return w->events;
}

uint64_t steer_world_events_dropped(const steer_world *w) { return w->events_dropped; }
uint64_t steer_world_tick(const steer_world *w) { return w->tick; }
uint32_t steer_world_count(const steer_world *w) { return w->count; }
uint32_t steer_world_capacity(const steer_world *w) { return w->cfg.max_agents; }
const steer_world_config *steer_world_get_config(const steer_world *w) { return &w->cfg; }

steer_world_view steer_world_get_view(const steer_world *w) {
  steer_world_view v;
  v.count = w->count;
  v.id = w->id;
  v.px = w->px;
  v.py = w->py;
  v.vx = w->vx;
  v.vy = w->vy;
  v.theta = w->theta;
  v.omega = w->omega;
  v.owner = w->owner;
  return v;
}

uint32_t steer_world_query_radius(const steer_world *w, vec2 centre, float radius, steer_id *out,
                                  uint32_t max) {
  if (w->grid_stale) {
    /* The grid is a cache of the positions: build it on demand (so a query is
     * not thread-safe against another query on the same world). The world
     * itself is not const: every steer_world is created non-const. */
    world_grid_rebuild((steer_world *)w, 0);
  }
  uint32_t n = steer_grid_nearest(&w->grid, centre, radius, NO_DENSE, out, NULL, max);
  for (uint32_t i = 0; i < n; i++)
    out[i] = w->id[out[i]];
  return n;
}

int steer_world_neighbours(const steer_world *w, steer_id id, steer_id *out, uint32_t max, float *reach) {
  uint32_t d = world_dense_of(w, id);
  if (d == NO_DENSE)
    return -1;
  const steer_behaviour *b = &w->behaviour[d];
  float query = b->params.separation_radius + w->limits[d].radius + w->max_radius;
  if (reach)
    *reach = query;
  if (!needs_neighbours(b))
    return 0;
  uint32_t cap =
      b->max_neighbours < SEPARATION_MAX_NEIGHBOURS ? b->max_neighbours : SEPARATION_MAX_NEIGHBOURS;
  if (cap < max)
    max = cap;
  if (w->grid_stale)
    world_grid_rebuild((steer_world *)w, 0); /* as in steer_world_query_radius */
  uint32_t n = steer_grid_nearest(&w->grid, v2(w->px[d], w->py[d]), query, d, out, NULL, max);
  for (uint32_t i = 0; i < n; i++)
    out[i] = w->id[out[i]];
  return (int)n;
}

uint32_t steer_world_query_within(const steer_world *w, vec2 centre, float radius, steer_id *out,
                                  uint32_t max) {
  if (w->grid_stale)
    world_grid_rebuild((steer_world *)w, 0); /* as in steer_world_query_radius */
  uint32_t n = steer_grid_within(&w->grid, centre, radius, out, max);
  for (uint32_t i = 0; i < n; i++)
    out[i] = w->id[out[i]];
  return n;
}

/* ---- hashing ------------------------------------------------------------- */

/* FNV-1a style mixing over 32-bit words, finished with a 64-bit avalanche;
 * fields are hashed one by one so struct padding never leaks in. */
static uint64_t mix32(uint64_t h, uint32_t x) { return (h ^ x) * 0x100000001b3ULL; }
static uint64_t mix64(uint64_t h, uint64_t x) { return mix32(mix32(h, (uint32_t)x), (uint32_t)(x >> 32)); }
static uint64_t mixf(uint64_t h, float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return mix32(h, u);
}
static uint64_t mixfs(uint64_t h, const float *f, size_t n) {
  for (size_t i = 0; i < n; i++)
    h = mixf(h, f[i]);
  return h;
}

static uint64_t hash_behaviour(uint64_t h, const steer_behaviour *b) {
  h = mix32(h, (uint32_t)b->kind | (uint32_t)b->facing << 8 | (uint32_t)b->combine << 16 |
                   (uint32_t)b->max_neighbours << 24);
  h = mixf(h, b->separation_weight);
  h = mix32(h, b->target.kind);
  h = mixf(h, b->target.point.x);
  h = mixf(h, b->target.point.y);
  h = mixf(h, b->target.orientation);
  h = mix32(h, b->target.agent);
  h = mix32(h, b->target.agent2);
  h = mixfs(h, (const float *)&b->params, sizeof(b->params) / sizeof(float));
  h = mixf(h, b->avoid_weight);
  h = mixf(h, b->avoid_horizon);
  h = mixf(h, b->wall_lookahead);
  h = mixf(h, b->wall_margin);
  h = mixf(h, b->stuck_time);
  return mix32(h, (uint32_t)b->avoid_priority | (uint32_t)b->stuck_reaction << 8 |
                      (uint32_t)b->neighbour_period << 16 | (uint32_t)b->arrival << 24);
}

uint64_t steer_world_hash(const steer_world *w) {
  uint64_t h = 0xcbf29ce484222325ULL;
  h = mix64(h, w->tick);
  h = mix64(h, w->rng.state);
  h = mix32(h, w->count);
  for (uint32_t d = 0; d < w->count; d++) {
    h = mix32(h, w->id[d]);
    h = mix32(h, w->owner[d]);
    h = mix32(h, (uint32_t)w->model[d] | (uint32_t)w->arrived[d] << 8);
    h = mixf(h, w->px[d]);
    h = mixf(h, w->py[d]);
    h = mixf(h, w->vx[d]);
    h = mixf(h, w->vy[d]);
    h = mixf(h, w->theta[d]);
    h = mixf(h, w->omega[d]);
    h = mixf(h, w->wander[d]);
    h = mix64(h, w->arng[d].state);
    h = mixfs(h, (const float *)&w->limits[d], sizeof(steer_limits) / sizeof(float));
    h = hash_behaviour(h, &w->behaviour[d]);
    h = mix32(h, (uint32_t)w->path[d]);
    const steer_path_cursor *c = &w->cursor[d];
    h = mix32(h, c->node);
    h = mix32(h, (uint32_t)(uint8_t)c->dir | (uint32_t)c->finished << 8);
    h = mixf(h, c->turn_time_left);
    h = mixf(h, c->turn_rate);
    h = mixf(h, w->stuck_best[d]);
    h = mixf(h, w->stuck_timer[d]);
    h = mix32(h, w->stuck_flag[d]);
    if (w->nlist && w->nlist_stamp[d] == w->nepoch) {
      h = mix32(h, w->nlist_n[d]);
      for (uint32_t i = 0; i < w->nlist_n[d]; i++)
        h = mix32(h, w->nlist[(size_t)d * WORLD_NLIST + i]);
    } else {
      h = mix32(h, 0xFFu);
    }
  }
  h = mix64(h, w->stuck_count);
  h = steer_map_hash(w->map, h);
  for (uint32_t p = 0; p < w->cfg.max_paths; p++) {
    const path_entry *e = &w->paths[p];
    if (!e->in_use)
      continue;
    h = mix32(h, p);
    h = mix32(h, e->count);
    h = mixf(h, e->radius);
    h = mix32(h, (uint32_t)e->mode | (uint32_t)e->cornering << 8 | (uint32_t)e->released << 16);
    h = mix32(h, e->users);
    h = mixfs(h, (const float *)(w->path_points + (size_t)p * w->cfg.max_path_points), 2u * e->count);
  }
  /* What decides the next ids and handles: slot generations, the free-slot
   * ring in reuse order and the free-path stack. */
  for (uint32_t i = 0; i < w->cfg.max_agents; i++)
    h = mix32(h, w->slot_gen[i]);
  h = mix32(h, w->free_count);
  for (uint32_t i = 0; i < w->free_count; i++)
    h = mix32(h, w->free_ring[(w->free_head + i) % w->cfg.max_agents]);
  h = mix32(h, w->path_free_count);
  for (uint32_t i = 0; i < w->path_free_count; i++)
    h = mix32(h, w->path_free[i]);
  /* Final avalanche (splitmix64) so nearby states give unrelated hashes. */
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

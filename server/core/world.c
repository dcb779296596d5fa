/* world.c: the agent store, the path pool and the tick.
 *
 * Layout: hot state as arrays per field over a dense list [0, count); a slot
 * table maps ids to dense indices. steer_world_step() runs four passes over all
 * agents: grid, steering (reads only the previous tick's state, writes the
 * per-agent command scratch), integration, path/arrival bookkeeping. */
#include "world.h"

#include <stdlib.h>
#include <string.h>

#include "dense.h"
#include "grid.h"
#include "pool.h"
#include "simd.h"
#include "world_internal.h"

#define SEPARATION_MAX_NEIGHBOURS 32u

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

static uint32_t dense_of(const steer_world *w, steer_id id) {
  uint32_t slot = id & STEER_ID_INDEX_MASK;
  if (id == 0 || slot >= w->cfg.max_agents)
    return NO_DENSE;
  uint32_t d = w->slot_dense[slot];
  if (d == NO_DENSE || w->id[d] != id)
    return NO_DENSE;
  return d;
}

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
    if (dense_of(w, b->target.agent) == NO_DENSE || b->target.agent == self)
      return STEER_ETARGET;
    /* Interpose needs two different agents: the midpoint of one is itself. */
    if (b->kind == STEER_BEHAVIOUR_INTERPOSE &&
        (dense_of(w, b->target.agent2) == NO_DENSE || b->target.agent2 == self ||
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

static steer_path path_view(const steer_world *w, int32_t h) {
  const path_entry *e = &w->paths[h];
  steer_path p;
  p.points = w->path_points + (size_t)h * w->cfg.max_path_points;
  p.count = e->count;
  p.radius = e->radius;
  p.mode = e->mode;
  p.cornering = e->cornering;
  return p;
}

int steer_world_path_get(const steer_world *w, int path, steer_path *out) {
  if (!path_valid(w, path))
    return STEER_EINVAL;
  *out = path_view(w, path);
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
  uint32_t d = dense_of(w, id);
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
  uint32_t d = dense_of(w, id);
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
  uint32_t d = dense_of(w, id);
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

int steer_world_alive(const steer_world *w, steer_id id) { return dense_of(w, id) != NO_DENSE; }

int steer_world_set_behaviour(steer_world *w, steer_id id, const steer_behaviour *b) {
  uint32_t d = dense_of(w, id);
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
  uint32_t d = dense_of(w, id);
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
  uint32_t d = dense_of(w, id);
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
  uint32_t d = dense_of(w, id);
  if (d == NO_DENSE || w->behaviour[d].target.kind != STEER_TARGET_AGENT)
    return 0;
  const steer_behaviour *b = &w->behaviour[d];
  return dense_of(w, b->target.agent) == NO_DENSE ||
         (b->kind == STEER_BEHAVIOUR_INTERPOSE && dense_of(w, b->target.agent2) == NO_DENSE);
}

int steer_world_set_limits(steer_world *w, steer_id id, const steer_limits *l) {
  uint32_t d = dense_of(w, id);
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
  uint32_t d = dense_of(w, id);
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

static steer_state state_of(const steer_world *w, uint32_t d) {
  steer_state s;
  s.position = v2(w->px[d], w->py[d]);
  s.orientation = w->theta[d];
  s.velocity = v2(w->vx[d], w->vy[d]);
  s.rotation = w->omega[d];
  return s;
}

int steer_world_get(const steer_world *w, steer_id id, steer_agent_info *out) {
  uint32_t d = dense_of(w, id);
  if (d == NO_DENSE)
    return STEER_ENOENT;
  memset(out, 0, sizeof(*out));
  out->id = id;
  out->model = w->model[d];
  out->arrived = w->arrived[d];
  out->state = state_of(w, d);
  out->limits = w->limits[d];
  out->behaviour = w->behaviour[d];
  out->path = w->path[d];
  out->cursor = w->cursor[d];
  out->owner = w->owner[d];
  return STEER_OK;
}

/* ---- the tick ------------------------------------------------------------ */

void world_emit(steer_world *w, steer_id agent, uint8_t type, uint32_t node) {
  if (w->event_count >= w->cfg.max_events) {
    w->events_dropped++;
    return;
  }
  steer_event *e = &w->events[w->event_count++];
  e->tick = w->tick;
  e->agent = agent;
  e->type = type;
  e->node = node;
}

/* The point a behaviour aims at: its point, or its target agent's position. */
static int target_point(const steer_world *w, const steer_target *t, vec2 *out) {
  if (t->kind == STEER_TARGET_POINT) {
    *out = t->point;
    return 1;
  }
  if (t->kind == STEER_TARGET_AGENT) {
    uint32_t o = dense_of(w, t->agent);
    if (o == NO_DENSE)
      return 0;
    *out = v2(w->px[o], w->py[o]);
    return 1;
  }
  return 0;
}

static int target_state(const steer_world *w, steer_id id, steer_state *out) {
  uint32_t o = dense_of(w, id);
  if (o == NO_DENSE)
    return 0;
  *out = state_of(w, o);
  return 1;
}

/* Orientation for dynamic agents whose behaviour steers only the velocity. */
static float facing_angular(const steer_world *w, uint32_t d, const steer_state *s) {
  const steer_behaviour *b = &w->behaviour[d];
  const steer_limits *l = &w->limits[d];
  vec2 t;
  switch (b->facing) {
  case STEER_FACING_TARGET:
    if (target_point(w, &b->target, &t))
      return steer_face(s, l, &b->params, t).angular;
    return steer_brake(s, l, &b->params).angular;
  case STEER_FACING_NONE:
    return steer_brake(s, l, &b->params).angular;
  default:
    return steer_look_where_going(s, l, &b->params).angular;
  }
}

/* The nearest max_neighbours of agent d (positions in the grid's cell order,
 * where their positions, velocities and radii are copied), the ones
 * separation and avoidance read; xy and rad get their positions and radii. */
static uint32_t neighbours(steer_world *w, uint32_t d, const steer_state *s, float dt, uint32_t *pos,
                           vec2 *xy, float *rad) {
  const steer_behaviour *b = &w->behaviour[d];
  const steer_limits *l = &w->limits[d];
  uint32_t max =
      b->max_neighbours < SEPARATION_MAX_NEIGHBOURS ? b->max_neighbours : SEPARATION_MAX_NEIGHBOURS;
  /* steer_separation reaches separation_radius + own + neighbour radius; the
   * query reaches that for the largest neighbour there is, so the nearest
   * max_neighbours are taken among everyone who could push. */
  float query = b->params.separation_radius + l->radius + w->max_radius;
  /* Through the agent's kept candidate list (grid.h): the same result. The
   * plain query, when it runs, guesses the last query's max-th distance plus
   * what the pair can have closed since (both at this agent's top speed); a
   * wrong guess only costs a rescan. An agent that queries every few ticks
   * only (neighbour_period > 1) takes the plain query: its list would have to
   * last across several ticks' moves and is rebuilt too often to pay. */
  float hint = w->nhint[d];
  float slack = 2.0f * l->max_speed * dt;
  uint32_t n;
  if (b->neighbour_period <= 1) {
    n = steer_grid_nearest_kept(&w->grid, &w->nbr, d, s->position, query, pos, xy, rad, max, &hint, slack);
  } else {
    if (hint > 0.0f) {
      float reach = sqrtf(hint) + slack;
      hint = reach * reach;
    }
    n = steer_grid_nearest_pos(&w->grid, s->position, query, d, pos, max, &hint);
    for (uint32_t i = 0; i < n; i++) {
      xy[i] = v2(w->grid.sx[pos[i]], w->grid.sy[pos[i]]);
      rad[i] = w->grid.sr[pos[i]];
    }
  }
  w->nhint[d] = hint;
  if (b->neighbour_period > 1) {
    uint32_t *keep = w->nlist + (size_t)d * WORLD_NLIST;
    for (uint32_t i = 0; i < n; i++)
      keep[i] = w->grid.items[pos[i]];
    w->nlist_n[d] = (uint8_t)n;
    w->nlist_stamp[d] = w->nepoch;
  }
  return n;
}

/* The neighbours: queried, or the kept set between the agent's query ticks. */
static uint32_t neighbours_kept(steer_world *w, uint32_t d, const steer_state *s, float dt, uint32_t *pos,
                                vec2 *xy, float *rad) {
  const steer_behaviour *b = &w->behaviour[d];
  uint32_t period = b->neighbour_period;
  if (period <= 1 || w->nlist_stamp[d] != w->nepoch ||
      (w->tick + (w->id[d] & STEER_ID_INDEX_MASK)) % period == 0)
    return neighbours(w, d, s, dt, pos, xy, rad);
  const uint32_t *keep = w->nlist + (size_t)d * WORLD_NLIST;
  uint32_t n = w->nlist_n[d];
  for (uint32_t i = 0; i < n; i++) {
    uint32_t at = w->grid.item_pos[keep[i]];
    pos[i] = at;
    xy[i] = v2(w->grid.sx[at], w->grid.sy[at]);
    rad[i] = w->grid.sr[at];
  }
  return n;
}

static steer_output dynamic_finish(steer_world *w, uint32_t d, const steer_state *s, float dt,
                                   steer_output o);

static steer_output dynamic_steering(steer_world *w, uint32_t d, const steer_state *s, float dt) {
  const steer_behaviour *b = &w->behaviour[d];
  const steer_limits *l = &w->limits[d];
  const steer_params *p = &b->params;
  steer_output o = {{0.0f, 0.0f}, 0.0f};
  steer_state t1, t2;
  vec2 tp;
  int linear_only = 1; /* facing decides the angular part */
  switch (b->kind) {
  case STEER_BEHAVIOUR_SEEK:
  case STEER_BEHAVIOUR_FLEE:
  case STEER_BEHAVIOUR_ARRIVE:
    if (!target_point(w, &b->target, &tp))
      goto lost;
    o = b->kind == STEER_BEHAVIOUR_SEEK   ? steer_seek(s, l, p, tp)
        : b->kind == STEER_BEHAVIOUR_FLEE ? steer_flee(s, l, p, tp)
                                          : steer_arrive(s, l, p, tp);
    break;
  case STEER_BEHAVIOUR_VELOCITY_MATCH:
    if (!target_state(w, b->target.agent, &t1))
      goto lost;
    o = steer_velocity_match(s, l, p, t1.velocity);
    break;
  case STEER_BEHAVIOUR_PURSUE:
  case STEER_BEHAVIOUR_EVADE:
    if (!target_state(w, b->target.agent, &t1))
      goto lost;
    o = b->kind == STEER_BEHAVIOUR_PURSUE ? steer_pursue(s, l, p, &t1) : steer_evade(s, l, p, &t1);
    break;
  case STEER_BEHAVIOUR_INTERPOSE:
    if (!target_state(w, b->target.agent, &t1) || !target_state(w, b->target.agent2, &t2))
      goto lost;
    o = steer_interpose(s, l, p, &t1, &t2);
    break;
  case STEER_BEHAVIOUR_FOLLOW_PATH: {
    steer_path path = path_view(w, w->path[d]);
    o = steer_path_steer_dynamic(s, l, p, &path, &w->cursor[d]);
    break;
  }
  case STEER_BEHAVIOUR_ALIGN: {
    float target = b->target.orientation;
    if (b->target.kind == STEER_TARGET_AGENT) {
      if (!target_state(w, b->target.agent, &t1))
        goto lost;
      target = t1.orientation;
    }
    o = steer_align(s, l, p, target);
    o.linear = steer_brake(s, l, p).linear;
    linear_only = 0;
    break;
  }
  case STEER_BEHAVIOUR_FACE:
    if (!target_point(w, &b->target, &tp))
      goto lost;
    o = steer_face(s, l, p, tp);
    o.linear = steer_brake(s, l, p).linear;
    linear_only = 0;
    break;
  case STEER_BEHAVIOUR_LOOK_WHERE_GOING:
    o = steer_look_where_going(s, l, p);
    o.linear = steer_brake(s, l, p).linear;
    linear_only = 0;
    break;
  case STEER_BEHAVIOUR_WANDER:
    o = steer_wander(s, l, p, &w->wander[d], &w->arng[d], dt);
    linear_only = 0;
    break;
  default:
  lost: /* NONE, or a target that has gone: come to rest */
    o = steer_brake(s, l, p);
    linear_only = 0;
    break;
  }
  if (linear_only)
    o.angular = facing_angular(w, d, s);
  return dynamic_finish(w, d, s, dt, o);
}

/* What follows the behaviour: separation from the nearest neighbours and
 * avoidance, on top of the behaviour's output o. */
static steer_output dynamic_finish(steer_world *w, uint32_t d, const steer_state *s, float dt,
                                   steer_output o) {
  const steer_behaviour *b = &w->behaviour[d];
  const steer_limits *l = &w->limits[d];
  uint32_t idx[SEPARATION_MAX_NEIGHBOURS];
  vec2 nxy[SEPARATION_MAX_NEIGHBOURS];
  float nrad[SEPARATION_MAX_NEIGHBOURS];
  uint32_t nn = needs_neighbours(b) ? neighbours_kept(w, d, s, dt, idx, nxy, nrad) : 0;
  if (b->separation_weight > 0.0f) {
    steer_output sep = steer_separation(s, l, &b->params, nxy, nrad, (int)nn);
    if (b->combine == STEER_COMBINE_PRIORITY) {
      /* Separation steers the velocity only; the orientation stays the behaviour's. */
      steer_output groups[2] = {{sep.linear, 0.0f}, o};
      o.linear = steer_priority(groups, 2, 1e-3f).linear;
    } else {
      steer_output both[2] = {o, sep};
      float weights[2] = {1.0f, b->separation_weight};
      o = steer_blend(both, weights, 2, l);
    }
  }
  if (w->akey[d] || w->map_live) /* the compact tag, not the behaviour's far end */
    o.linear = world_avoid_dynamic(w, d, s, o.linear, idx, nn, dt);
  return o;
}

/* Whether dynamic_finish of agent d is the neighbour query, separation and
 * its blend only (no avoidance, no map, separation blended). */
static inline int finish_separation_only(const steer_world *w, uint32_t d) {
  const steer_behaviour *b = &w->behaviour[d];
  return !w->map_live && !w->akey[d] && b->separation_weight > 0.0f && b->combine != STEER_COMBINE_PRIORITY;
}

/* The neighbours of agent d as neighbours_kept finds them, as dense indices
 * (*nb; their records are w->nbr.rec[index]): straight from the kept list
 * when the agent queries every tick and wants few enough, otherwise through
 * neighbours_kept (scratch holds SEPARATION_MAX_NEIGHBOURS). */
static uint32_t neighbours_idx(steer_world *w, uint32_t d, const steer_state *s, float dt, uint32_t *scratch,
                               const uint32_t **nb) {
  const steer_behaviour *b = &w->behaviour[d];
  const steer_limits *l = &w->limits[d];
  uint32_t max =
      b->max_neighbours < SEPARATION_MAX_NEIGHBOURS ? b->max_neighbours : SEPARATION_MAX_NEIGHBOURS;
  if (b->neighbour_period <= 1 && max <= STEER_GRID_LIST_MAX_K) { /* as in neighbours() */
    float query = b->params.separation_radius + l->radius + w->max_radius;
    float hint = w->nhint[d];
    uint32_t n = steer_grid_nearest_kept_idx(&w->grid, &w->nbr, d, s->position, query, max, &hint,
                                             2.0f * l->max_speed * dt, scratch, nb);
    w->nhint[d] = hint;
    return n;
  }
  uint32_t pos[SEPARATION_MAX_NEIGHBOURS];
  vec2 xy[SEPARATION_MAX_NEIGHBOURS];
  float rad[SEPARATION_MAX_NEIGHBOURS];
  uint32_t n = neighbours_kept(w, d, s, dt, pos, xy, rad);
  for (uint32_t i = 0; i < n; i++)
    scratch[i] = w->grid.items[pos[i]];
  *nb = scratch;
  return n;
}

/* The first half of dynamic_finish for four such agents: the four neighbour
 * queries one after another, then their separation four agents at a time
 * (steer_separation_x4_idx, reading the neighbours where the queries left
 * them). It does not need the behaviour's output, so the caller runs it
 * first and the separation's square roots and divisions overlap the
 * behaviour's arithmetic; steer_blend_separation_x4 then gives bit for bit
 * what four dynamic_finish calls give. The queries write only their own
 * agent's hint and kept list, as there. */
static void separation_x4_of(steer_world *w, const uint32_t dd[4], const steer_state st[4], float dt,
                             steer_output sep[4], float weight[4]) {
  _Static_assert(SEPARATION_MAX_NEIGHBOURS <= STEER_SEPARATION_X4_MAX, "the separation's cap");
  _Static_assert(SEPARATION_MAX_NEIGHBOURS >= STEER_GRID_LIST, "scratch for the kept query");
  uint32_t scratch[4][SEPARATION_MAX_NEIGHBOURS];
  const uint32_t *nb[4];
  uint32_t nn[4];
  const steer_state *sp[4];
  const steer_limits *lp[4];
  const steer_params *pp[4];
  for (int j = 0; j < 4; j++) {
    nn[j] = neighbours_idx(w, dd[j], &st[j], dt, scratch[j], &nb[j]);
    sp[j] = &st[j];
    lp[j] = &w->limits[dd[j]];
    pp[j] = &w->behaviour[dd[j]].params;
    weight[j] = w->behaviour[dd[j]].separation_weight;
  }
  steer_separation_x4_idx(sp, lp, pp, w->nbr.rec, nb, nn, sep);
}

static steer_kinematic_output kinematic_steering(steer_world *w, uint32_t d, const steer_state *s) {
  const steer_behaviour *b = &w->behaviour[d];
  const steer_limits *l = &w->limits[d];
  steer_kinematic_output o = {{0.0f, 0.0f}, 0.0f};
  vec2 tp;
  switch (b->kind) {
  case STEER_BEHAVIOUR_SEEK:
  case STEER_BEHAVIOUR_FLEE:
  case STEER_BEHAVIOUR_ARRIVE:
    if (!target_point(w, &b->target, &tp))
      break;
    o = b->kind == STEER_BEHAVIOUR_SEEK   ? steer_kinematic_seek(s, l, tp)
        : b->kind == STEER_BEHAVIOUR_FLEE ? steer_kinematic_flee(s, l, tp)
                                          : steer_kinematic_arrive(s, l, &b->params, tp);
    break;
  case STEER_BEHAVIOUR_WANDER:
    o = steer_kinematic_wander(s, l, &w->arng[d]);
    break;
  case STEER_BEHAVIOUR_FOLLOW_PATH: {
    steer_path path = path_view(w, w->path[d]);
    o = steer_path_steer_kinematic(s, l, &b->params, &path, &w->cursor[d]);
    break;
  }
  default:
    break;
  }
  return o;
}

static steer_heading_output heading_steering(steer_world *w, uint32_t d, const steer_state *s) {
  const steer_behaviour *b = &w->behaviour[d];
  const steer_limits *l = &w->limits[d];
  steer_heading_output o = {0.0f, 0.0f};
  vec2 tp;
  switch (b->kind) {
  case STEER_BEHAVIOUR_SEEK:
  case STEER_BEHAVIOUR_ARRIVE: {
    if (!target_point(w, &b->target, &tp))
      break;
    float dist = v2_len(v2_sub(tp, s->position));
    o.speed = l->max_speed;
    if (b->kind == STEER_BEHAVIOUR_ARRIVE) {
      /* Brake along the way so the agent stops inside the target radius. */
      float to_go = dist - 0.5f * b->params.target_radius;
      float brake = to_go > 0.0f ? sqrtf(2.0f * l->max_acceleration * to_go) : 0.0f;
      o.speed = dist < b->params.target_radius ? 0.0f : (brake < o.speed ? brake : o.speed);
    }
    o.rotation = dist > 0.0f ? steer_heading_turn_toward(s, l, o.speed > 0.1f ? o.speed : 0.1f, tp) : 0.0f;
    break;
  }
  case STEER_BEHAVIOUR_WANDER:
    o.speed = l->max_speed;
    o.rotation = steer_rng_binomial(&w->arng[d]) * l->max_rotation;
    break;
  case STEER_BEHAVIOUR_FOLLOW_PATH: {
    steer_path path = path_view(w, w->path[d]);
    o = steer_path_steer_heading(s, l, &b->params, &path, &w->cursor[d]);
    break;
  }
  default:
    break;
  }
  return o;
}

/* Agents steered per block: the batches are formed within one. */
#define STEER_BLOCK 1024u

/* Agent d's batch kind (world_internal.h; steered four at a time by
 * steer_arrive_look_x4, steer_wander_x4, steer_path_steer_heading_x4, or
 * eight with its neighbours in a lean batch), from the cache
 * (world_batch_refresh). */
static inline int batch_kind(const steer_world *w, uint32_t d) { return w->bkind[d] & BATCH_KIND_MASK; }

static void integrate_store(steer_world *w, uint32_t d, steer_state *s);

static inline int path_quiet(const steer_world *w, uint32_t d);

/* Agent d's events scratch (EV_*) for an agent of batch kind `kind`, steered
 * this step by the vector path (in a quad or as a leftover). */
static inline void events_mark(steer_world *w, uint32_t d, int kind) {
  /* The quads and the scalar path have just read the behaviour: it is in
   * cache (the lean batches mark their own, from the record). */
  const steer_behaviour *b = &w->behaviour[d];
  if (kind == BATCH_NONE || (w->bkind[d] & BATCH_STUCK)) {
    w->ekind[d] = EV_GENERAL;
  } else if (kind == BATCH_PATH_HEADING) {
    w->ekind[d] = EV_PATH;
    w->er[d] = b->params.turn_trigger_distance;
  } else if (kind == BATCH_ARRIVE_LOOK && !w->arrived[d]) {
    w->ekind[d] = EV_ARRIVE;
    w->ept[d] = b->target.point;
    w->er[d] = b->params.target_radius;
  } else {
    w->ekind[d] = EV_NONE;
  }
}

/* The events pass's own first look at agent d, done where d was integrated
 * (on any thread: it reads only d's new state, its cursor and the paths, and
 * writes only d's scratch): an arrival that did not happen and a path node
 * that is out of reach become EV_NONE, so the events pass, which must run on
 * one thread (events are emitted in dense order), only walks the kind bytes
 * and handles the few agents with something to do, as before. */
static inline void events_precheck(steer_world *w, uint32_t d) {
  uint8_t k = w->ekind[d];
  if (k == EV_ARRIVE) {
    float r = w->er[d];
    if (!(v2_len2(v2_sub(w->ept[d], v2(w->px[d], w->py[d]))) < r * r))
      w->ekind[d] = EV_NONE;
  } else if (k == EV_PATH && path_quiet(w, d)) {
    w->ekind[d] = EV_NONE;
  }
}

/* Whether agent d's dynamic output goes to integration as it is: no
 * separation, no avoidance and no map, so dynamic_finish has nothing to add. */
static inline int finish_plain(const steer_world *w, uint32_t d) {
  return !w->map_live && !w->akey[d] && !needs_neighbours(&w->behaviour[d]);
}

/* Agent d's dynamic command, written to its scratch. */
static inline void put_dynamic(steer_world *w, uint32_t d, steer_output o) {
  command3 *c = &w->cmd[d];
  c->a = o.linear.x;
  c->b = o.linear.y;
  c->c = o.angular;
}

/* The batchable agents of [begin, end) (end - begin <= STEER_BLOCK), four of a
 * kind at a time; done[d - begin] says which were handled: 2, the command is
 * in the scratch; 3, integrated too (fused, see steer_range); 0, left to the
 * scalar path (a remainder of fewer than four). Each agent writes only its own
 * command (or state), wander angle, generator, query hint and kept neighbour
 * set, as in the scalar path. */
/* Steers (and, fused, integrates) four agents of one batch kind. */
static void batch_quad(steer_world *w, float dt, int kind, const uint32_t *dd, uint8_t *done, uint32_t begin,
                       int fused) {
  steer_state st[4];
  steer_state *sm[4] = {&st[0], &st[1], &st[2], &st[3]};
  const steer_state *sp[4] = {&st[0], &st[1], &st[2], &st[3]};
  const steer_limits *lp[4];
  const steer_params *pp[4];
  for (int j = 0; j < 4; j++) {
    st[j] = state_of(w, dd[j]);
    lp[j] = &w->limits[dd[j]];
    pp[j] = &w->behaviour[dd[j]].params;
  }
  if (kind == BATCH_PATH_HEADING) {
    steer_path pv[4];
    const steer_path *pvp[4];
    const steer_path_cursor *cp[4];
    steer_heading_output ho[4];
    for (int j = 0; j < 4; j++) {
      pv[j] = path_view(w, w->path[dd[j]]);
      pvp[j] = &pv[j];
      cp[j] = &w->cursor[dd[j]];
      events_mark(w, dd[j], kind);
    }
    steer_path_steer_heading_x4(sp, lp, pp, pvp, cp, ho);
    if (fused) {
      steer_integrate_heading_x4(sm, lp, ho, dt);
      for (int j = 0; j < 4; j++) {
        integrate_store(w, dd[j], &st[j]);
        events_precheck(w, dd[j]);
        done[dd[j] - begin] = 3;
      }
    } else {
      for (int j = 0; j < 4; j++) {
        command3 *c = &w->cmd[dd[j]];
        c->a = ho[j].rotation; /* as heading_steering's output is stored */
        c->b = ho[j].speed;
        c->c = 0.0f;
        done[dd[j] - begin] = 2;
      }
    }
    return;
  }
  /* Dynamic: arrive + look where going, or wander; separation first when
   * all four blend it and nothing else follows (separation_x4_of). */
  const int sep4 = finish_separation_only(w, dd[0]) && finish_separation_only(w, dd[1]) &&
                   finish_separation_only(w, dd[2]) && finish_separation_only(w, dd[3]);
  steer_output sep[4];
  float weight[4];
  if (sep4)
    separation_x4_of(w, dd, st, dt, sep, weight);
  steer_output o[4];
  if (kind == BATCH_ARRIVE_LOOK) {
    vec2 tp[4];
    for (int j = 0; j < 4; j++)
      tp[j] = w->behaviour[dd[j]].target.point;
    steer_arrive_look_x4(sp, lp, pp, tp, o);
  } else {
    float *wa[4];
    steer_rng *rng[4];
    for (int j = 0; j < 4; j++) {
      wa[j] = &w->wander[dd[j]];
      rng[j] = &w->arng[dd[j]];
    }
    steer_wander_x4(sp, lp, pp, wa, rng, dt, o);
  }
  if (sep4)
    steer_blend_separation_x4(o, sep, weight, lp, o);
  for (int j = 0; j < 4; j++) {
    uint32_t d = dd[j];
    if (!sep4 && !finish_plain(w, d))
      o[j] = dynamic_finish(w, d, &st[j], dt, o[j]);
  }
  if (fused) {
    /* Without a map, integration, store and the events' marks straight to
     * the world's arrays (batch.c); the rest as below. */
    unsigned did = w->map_live ? 0u : world_batch_finish_dynamic(w, dt, kind, dd, o);
    if (did != 0xfu) {
      steer_integrate_dynamic_x4(sm, lp, o, dt);
      for (int j = 0; j < 4; j++) {
        if (did & (1u << j))
          continue;
        events_mark(w, dd[j], kind);
        integrate_store(w, dd[j], &st[j]);
        events_precheck(w, dd[j]);
      }
    }
    for (int j = 0; j < 4; j++)
      done[dd[j] - begin] = 3;
  } else {
    for (int j = 0; j < 4; j++) {
      events_mark(w, dd[j], kind);
      put_dynamic(w, dd[j], o[j]);
      done[dd[j] - begin] = 2;
    }
  }
}

/* The batchable agents of [begin, end) (end - begin <= STEER_BLOCK), four of a
 * kind at a time, each quad as soon as it is complete (so its agents are
 * near each other in memory); done[d - begin] says which were handled: 2, the
 * command is in the scratch; 3, integrated too (fused, see steer_range); 0,
 * left to the scalar path (the block's last fewer than four of a kind). Each
 * agent writes only its own command (or state), wander angle, generator,
 * query hint, kept neighbour set and events scratch, as in the scalar path. */
#define BATCH_AHEAD 16u /* agents */

/* Hands the lean batch lean[0..n) of kind k to world_batch_lean and marks
 * the agents it did. */
static void lean_flush(steer_world *w, float dt, int k, const uint32_t *lean, uint32_t n, uint8_t *done,
                       uint32_t begin) {
  unsigned did = world_batch_lean(w, dt, k, lean, n);
  for (uint32_t j = 0; j < n; j++)
    if (did & (1u << j))
      done[lean[j] - begin] = 3;
}

/* The other batchable agents (not lean, or lean where lean batches do not
 * run): four of a kind at a time (batch_quad). */
static inline void quad_add(steer_world *w, float dt, uint32_t d, uint32_t end, uint32_t (*quad)[4],
                            uint32_t *nq, uint8_t *done, uint32_t begin, int fused) {
  int k = batch_kind(w, d);
  /* The behaviours (120 bytes each) are the quads' biggest stream: fetched
   * ahead, their misses overlap the quads' arithmetic. */
  if (d + BATCH_AHEAD < end) {
    __builtin_prefetch(&w->behaviour[d + BATCH_AHEAD]);
    __builtin_prefetch((const char *)&w->behaviour[d + BATCH_AHEAD] + 64);
    /* and the record (48 bytes: one or two lines), read by the quad's end
     * (world_batch_finish_dynamic) */
    __builtin_prefetch(&w->brec[d + BATCH_AHEAD]);
    __builtin_prefetch((const char *)&w->brec[d + BATCH_AHEAD] + sizeof(world_batch_rec) - 1);
  }
  quad[k][nq[k]++] = d;
  if (nq[k] == 4) {
    batch_quad(w, dt, k, quad[k], done, begin, fused);
    nq[k] = 0;
  }
}

/* Agents ahead of the scan whose records and states are fetched early (the
 * lean batches' streams). */
#define LEAN_AHEAD 64u

static void batch_block(steer_world *w, float dt, uint32_t begin, uint32_t end, uint8_t *done, int fused) {
  uint32_t quad[4][4], nq[4] = {0, 0, 0, 0};
  /* Lean agents (no neighbours, no stuck watch: world_internal.h) of a world
   * without a map, fused: a batch of world_batch_width() per kind, stepped
   * whole by batch.c; the block's last ones of a kind as a shorter batch. */
  uint32_t lean[4][8], nl[4] = {0, 0, 0, 0};
  const uint32_t width = world_batch_width();
  const int lean_ok = fused && !w->map_live;
  memset(done, 0, end - begin);
#if STEER_SIMD
  /* Sixteen kind bytes at a time: a bit per agent of each lean kind, and of
   * the other batchable ones. */
  for (uint32_t c0 = begin; c0 < end; c0 += 16u) {
    uint32_t m = end - c0 < 16u ? end - c0 : 16u;
    uint8_t kinds[16] = {0};
    memcpy(kinds, &w->bkind[c0], m);
    const __m128i kb = _mm_loadu_si128((const __m128i *)(const void *)kinds);
    const __m128i kind = _mm_and_si128(kb, _mm_set1_epi8((char)BATCH_KIND_MASK)); /* without the flags */
    unsigned batchable = 0xffffu & ~(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(kind, _mm_setzero_si128()));
    if (lean_ok) {
      if (c0 + LEAN_AHEAD + 16u <= w->count) { /* past the block too: the next one's start */
        const char *r = (const char *)&w->brec[c0 + LEAN_AHEAD];
        for (uint32_t off = 0; off < 16u * sizeof(world_batch_rec); off += 64u)
          __builtin_prefetch(r + off);
      }
      for (int k = BATCH_ARRIVE_LOOK; k <= BATCH_PATH_HEADING; k++) {
        unsigned bits = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(kb, _mm_set1_epi8((char)k)));
        batchable &= ~bits;
        uint32_t n = nl[k]; /* in a register, not through memory */
        while (bits) {
          uint32_t d = c0 + (uint32_t)__builtin_ctz(bits);
          bits &= bits - 1u;
          lean[k][n++] = d;
          if (n == width) {
            lean_flush(w, dt, k, lean[k], width, done, begin);
            n = 0;
          }
        }
        nl[k] = n;
      }
    }
    while (batchable) {
      uint32_t d = c0 + (uint32_t)__builtin_ctz(batchable);
      batchable &= batchable - 1u;
      quad_add(w, dt, d, end, quad, nq, done, begin, fused);
    }
  }
#else
  (void)lean_ok;
  for (uint32_t d = begin; d < end; d++)
    if (batch_kind(w, d) != BATCH_NONE)
      quad_add(w, dt, d, end, quad, nq, done, begin, fused);
#endif
  for (int k = 1; k < 4; k++)
    if (nl[k] > 0)
      lean_flush(w, dt, k, lean[k], nl[k], done, begin);
}

static void integrate_range(steer_world *w, float dt, uint32_t begin, uint32_t end, int precheck);

/* The first agent from d on (before stop) that the batches did not step and
 * integrate whole (done[] 3, fused), passing eight such agents at a time. */
static inline uint32_t skip_done(const uint8_t *done, uint32_t b0, uint32_t d, uint32_t stop) {
  while (d + 8u <= stop) {
    uint64_t d8;
    memcpy(&d8, &done[d - b0], sizeof(d8));
    if (d8 != 0x0303030303030303ULL)
      break;
    d += 8u;
  }
  return d;
}

/* Steers agents [begin, end): each reads last tick's state of anyone and writes
 * only its own command, query hint, kept neighbour set, wander angle, generator
 * and events scratch (and, fused, its own state), so ranges can run on
 * different threads.
 *
 * fused (the vector path, when no agent targets another: w->readers == 0):
 * each block of agents is integrated right after it is steered, while its
 * state is in cache; the integration pass then has nothing left to do. That
 * is the same as the two passes only because then nothing the steering pass
 * reads of other agents changes during it: separation and avoidance read the
 * grid's copies (built before the step), the map does not move. A change
 * that makes steering read another agent's live state must count it in
 * w->readers. */
static void steer_range(steer_world *w, float dt, uint32_t begin, uint32_t end, int fused) {
  uint8_t done[STEER_BLOCK];
  for (uint32_t b0 = begin; b0 < end; b0 += STEER_BLOCK) {
    uint32_t stop = end - b0 > STEER_BLOCK ? b0 + STEER_BLOCK : end;
    int vector = STEER_SIMD && !w->scalar_only;
    if (vector)
      batch_block(w, dt, b0, stop, done, fused);
    else
      memset(done, 0, sizeof(done));
    for (uint32_t d = b0; d < stop; d++) {
      d = skip_done(done, b0, d, stop); /* mostly all done by the batches */
      if (d >= stop)
        break;
      if (done[d - b0])
        continue;
      if (vector)
        events_mark(w, d, batch_kind(w, d));
      steer_state s = state_of(w, d);
      command3 *c = &w->cmd[d];
      switch (w->model[d]) {
      case STEER_MODEL_KINEMATIC: {
        steer_kinematic_output o = kinematic_steering(w, d, &s);
        if (w->map_live)
          o.velocity = world_avoid_kinematic(w, d, &s, o.velocity);
        c->a = o.velocity.x;
        c->b = o.velocity.y;
        c->c = o.rotation;
        break;
      }
      case STEER_MODEL_HEADING: {
        steer_heading_output o = heading_steering(w, d, &s);
        c->a = o.rotation;
        c->b = o.speed;
        c->c = 0.0f;
        break;
      }
      default: {
        steer_output o = dynamic_steering(w, d, &s, dt);
        c->a = o.linear.x;
        c->b = o.linear.y;
        c->c = o.angular;
        break;
      }
      }
    }
    if (fused) /* the agents the vector path did not integrate */
      for (uint32_t d = b0; d < stop; d++) {
        d = skip_done(done, b0, d, stop);
        if (d < stop && done[d - b0] != 3)
          integrate_range(w, dt, d, d + 1, 1);
      }
  }
}

typedef struct steer_job {
  steer_world *w;
  float dt;
  int fused;
} steer_job;

static void steer_chunk(void *ctx, uint32_t begin, uint32_t end) {
  const steer_job *j = ctx;
  steer_range(j->w, j->dt, begin, end, j->fused);
}

/* Agents per chunk handed to a thread: big enough that taking one costs
 * nothing next to steering it, small enough to even out the threads. */
#define STEER_CHUNK 256u

static void pass_steering(steer_world *w, float dt, int fused) {
  uint32_t threads = steer_pool_threads(w->pool);
  if (threads > 1 && w->count > STEER_CHUNK) {
    steer_job j = {w, dt, fused};
    /* Bigger worlds take chunks of up to one block: the vector path forms its
     * quads within a block, and leaves fewer agents to the scalar path the
     * bigger the block (at most three of a kind per block); at least eight
     * chunks per thread keep the threads even. Any split gives the same
     * results (steer_range). */
    uint32_t chunk = w->count / (threads * 8u) / 64u * 64u;
    chunk = chunk < STEER_CHUNK ? STEER_CHUNK : chunk > STEER_BLOCK ? STEER_BLOCK : chunk;
    steer_pool_run(w->pool, w->count, chunk, steer_chunk, &j);
  } else {
    steer_range(w, dt, 0, w->count, fused);
  }
}

void steer_world_set_pool(steer_world *w, struct steer_pool *pool) { w->pool = pool; }

void steer_world_set_simd(steer_world *w, int on) { w->scalar_only = !on; }

/* The end of agent d's integration: the world's edge, the map, the store. */
static void integrate_store(steer_world *w, uint32_t d, steer_state *s) {
  const vec2 lo = w->cfg.min, hi = w->cfg.max;
  /* The world's edge is a wall: stop the outward part of the velocity. */
  if (s->position.x < lo.x || s->position.x > hi.x) {
    s->position.x = steer_clampf(s->position.x, lo.x, hi.x);
    s->velocity.x = 0.0f;
  }
  if (s->position.y < lo.y || s->position.y > hi.y) {
    s->position.y = steer_clampf(s->position.y, lo.y, hi.y);
    s->velocity.y = 0.0f;
  }
  if (w->map_live)
    world_collide(w, d, v2(w->px[d], w->py[d]), s);
  w->px[d] = s->position.x;
  w->py[d] = s->position.y;
  w->vx[d] = s->velocity.x;
  w->vy[d] = s->velocity.y;
  w->theta[d] = s->orientation;
  w->omega[d] = s->rotation;
}

/* Integrates agents [begin, end): each reads its own command and state and the
 * map, and writes only its own state, so ranges can run on different threads
 * (after the steering pass: it reads everyone's state of the last tick). */
static void integrate_range(steer_world *w, float dt, uint32_t begin, uint32_t end, int precheck) {
  for (uint32_t d = begin; d < end; d++) {
    steer_state s = state_of(w, d);
    const command3 *c = &w->cmd[d];
    const steer_limits *l = &w->limits[d];
    switch (w->model[d]) {
    case STEER_MODEL_KINEMATIC: {
      steer_kinematic_output o = {{c->a, c->b}, c->c};
      steer_integrate_kinematic(&s, l, o, dt);
      break;
    }
    case STEER_MODEL_HEADING: {
      steer_heading_output o = {c->a, c->b};
      steer_integrate_heading(&s, l, o, dt);
      break;
    }
    default: {
      steer_output o = {{c->a, c->b}, c->c};
      steer_integrate_dynamic(&s, l, o, dt);
      break;
    }
    }
    integrate_store(w, d, &s);
    if (precheck)
      events_precheck(w, d);
  }
}

static void integrate_chunk(void *ctx, uint32_t begin, uint32_t end) {
  const steer_job *j = ctx;
  integrate_range(j->w, j->dt, begin, end, j->fused);
}

/* Integration is a few ns per agent without a map: waking the workers pays
 * only for bigger worlds and chunks. */
#define INTEGRATE_CHUNK 2048u

/* precheck: the vector path's steering pass left w->ekind (events_precheck). */
static void pass_integrate(steer_world *w, float dt, int precheck) {
  if (steer_pool_threads(w->pool) > 1 && w->count > INTEGRATE_CHUNK) {
    steer_job j = {w, dt, precheck}; /* .fused carries precheck here */
    steer_pool_run(w->pool, w->count, INTEGRATE_CHUNK, integrate_chunk, &j);
  } else {
    integrate_range(w, dt, 0, w->count, precheck);
  }
}

/* Whether agent d's path advance would do nothing this step (no event, no
 * cursor change), from the compact data alone: a finished path; or no arc
 * turn running, the node out of its radius and (arc cornering) further than
 * the turn trigger distance, beyond which try_arc never triggers. */
static inline int path_quiet(const steer_world *w, uint32_t d) {
  const steer_path_cursor *c = &w->cursor[d];
  if (c->finished)
    return 1;
  if (c->turn_time_left > 0.0f)
    return 0;
  int32_t h = w->path[d];
  const path_entry *e = &w->paths[h];
  uint32_t node = c->node < e->count ? c->node : e->count - 1u;
  vec2 pt = w->path_points[(size_t)h * w->cfg.max_path_points + node];
  float dist = v2_len(v2_sub(v2(w->px[d], w->py[d]), pt));
  return !(dist <= e->radius) && (e->cornering != STEER_CORNER_ARC || dist > w->er[d]);
}

/* Paths advance, arrivals and STUCK, in dense order. fast: the vector path
 * left each agent's EV_* in w->ekind (steer_range), so the behaviours are read
 * only for the agents it marked EV_GENERAL and those with something to do. */
static void pass_events(steer_world *w, float dt, int fast) {
  for (uint32_t d = 0; d < w->count; d++) {
    if (fast) {
      /* Most agents have nothing to do (events_precheck): skip eight at a time. */
      while (d + 8u <= w->count) {
        uint64_t k8;
        memcpy(&k8, &w->ekind[d], sizeof(k8));
        if (k8 != 0x0101010101010101ULL * EV_NONE)
          break;
        d += 8u;
      }
      if (d >= w->count)
        break;
      uint8_t k = w->ekind[d];
      if (k == EV_NONE || (k == EV_PATH && path_quiet(w, d)))
        continue;
      if (k == EV_ARRIVE) {
        float r = w->er[d];
        if (v2_len2(v2_sub(w->ept[d], v2(w->px[d], w->py[d]))) < r * r) {
          w->arrived[d] = 1;
          world_emit(w, w->id[d], STEER_EVENT_ARRIVED, 0);
        }
        continue;
      }
    }
    const steer_behaviour *b = &w->behaviour[d];
    if (b->kind == STEER_BEHAVIOUR_FOLLOW_PATH) {
      steer_state s = state_of(w, d);
      steer_path path = path_view(w, w->path[d]);
      uint32_t node = 0;
      unsigned ev = steer_path_advance(&path, &w->cursor[d], &s, &w->limits[d], &b->params, dt, &node);
      if (ev & STEER_PATH_EVENT_WAYPOINT) {
        world_emit(w, w->id[d], STEER_EVENT_WAYPOINT, node);
        world_stuck_reset(w, d);
      }
      if (ev & STEER_PATH_EVENT_REVERSED)
        world_emit(w, w->id[d], STEER_EVENT_REVERSED, node);
      if (ev & STEER_PATH_EVENT_FINISHED)
        world_emit(w, w->id[d], STEER_EVENT_PATH_FINISHED, node);
    } else if (b->kind == STEER_BEHAVIOUR_ARRIVE && !w->arrived[d]) {
      vec2 tp;
      if (target_point(w, &b->target, &tp) &&
          v2_len2(v2_sub(tp, v2(w->px[d], w->py[d]))) < b->params.target_radius * b->params.target_radius) {
        w->arrived[d] = 1;
        world_emit(w, w->id[d], STEER_EVENT_ARRIVED, 0);
      }
    }
    if (w->stuck_watch && w->behaviour[d].stuck_time > 0.0f)
      world_stuck(w, d, dt);
  }
}

static void track_chunk(void *ctx, uint32_t begin, uint32_t end) {
  steer_world *w = ctx;
  steer_grid_lists_track_range(&w->nbr, &w->grid, w->px, w->py, w->radius, begin, end);
}

/* Agents per chunk of the lists' tracking on the pool. */
#define TRACK_CHUNK 16384u

/* threaded: from the step (the pool is free); queries between steps track on
 * the calling thread. */
static void grid_rebuild(steer_world *w, int threaded) {
  /* Separation reads the radii copied in cell order; avoidance also the
   * velocities and tags. */
  steer_grid_build_payload(&w->grid, w->px, w->py, w->avoiding ? w->vx : NULL, w->vy, w->radius, w->akey,
                           w->count);
  /* A stale grid means the agents or their dense indices may have changed:
   * the kept candidate lists start over. The records are written by the
   * pool's threads (any split gives the same lists). */
  steer_grid_lists_track_begin(&w->nbr, w->grid_stale);
  if (threaded && steer_pool_threads(w->pool) > 1 && w->count > 2u * TRACK_CHUNK)
    steer_pool_run(w->pool, w->count, TRACK_CHUNK, track_chunk, w);
  else
    steer_grid_lists_track_range(&w->nbr, &w->grid, w->px, w->py, w->radius, 0, w->count);
  steer_grid_lists_track_end(&w->nbr);
  w->grid_stale = 0;
}

void steer_world_step(steer_world *w, float dt) {
  if (!(dt > 0.0f) || !(dt <= STEER_MAX_DT))
    return;
  w->tick++;
  w->event_count = 0;
  if (w->max_radius_stale) {
    float m = 0.0f;
    for (uint32_t d = 0; d < w->count; d++)
      m = w->radius[d] > m ? w->radius[d] : m;
    w->max_radius = m;
    w->max_radius_stale = 0;
  }
  /* The grid normally still holds this tick's starting positions, built at the
   * end of the last step; spawns and despawns since then invalidate it. Only
   * separation reads it during a step. */
  if (w->separating > 0 && w->grid_stale)
    grid_rebuild(w, 1);
  /* The vector path integrates each block as it steers it when no agent reads
   * another's live state (steer_range); the scalar path is the reference. */
  int fused = STEER_SIMD && !w->scalar_only && w->readers == 0;
  pass_steering(w, dt, fused);
  if (!fused)
    pass_integrate(w, dt, STEER_SIMD && !w->scalar_only);
  world_contact(w, dt);                              /* overlapping avoiders pushed apart (contact.c) */
  pass_events(w, dt, STEER_SIMD && !w->scalar_only); /* may change velocities (a stuck agent's nudge) */
  /* Rebuilt on the new positions for the next step; with nobody separating it is
   * left for steer_world_query_radius to build if it is asked. */
  if (w->separating > 0)
    grid_rebuild(w, 1);
  else
    w->grid_stale = 1;
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
    grid_rebuild((steer_world *)w, 0);
  }
  uint32_t n = steer_grid_nearest(&w->grid, centre, radius, NO_DENSE, out, NULL, max);
  for (uint32_t i = 0; i < n; i++)
    out[i] = w->id[out[i]];
  return n;
}

uint32_t steer_world_query_within(const steer_world *w, vec2 centre, float radius, steer_id *out,
                                  uint32_t max) {
  if (w->grid_stale)
    grid_rebuild((steer_world *)w, 0); /* as in steer_world_query_radius */
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
                      (uint32_t)b->neighbour_period << 16);
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

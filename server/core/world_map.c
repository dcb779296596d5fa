/* world_map.c: the world's map (obstacles added and removed by id, agents
 * moved out of a new obstacle), and the parts of the tick that read it or
 * other agents' predicted motion: agent and wall avoidance in the steering
 * pass, the clipped move in the integration pass, stuck detection after it. */
#include <stdlib.h>
#include <string.h>

#include "avoid.h"
#include "map.h"
#include "world.h"
#include "world_internal.h"

#define STUCK_PROGRESS  0.1f  /* m, getting this much nearer the goal is progress */
#define RELOCATE_SEARCH 64.0f /* m, how far an agent is moved out of a new obstacle */
#define BODY_FREE_SLACK 0.0f
#define AVOID_RESPONSE  0.5f /* s, an avoidance acceleration shifts the wanted velocity by this much of it */

/* ---- rules of placement -------------------------------------------------- */

int world_body_free(const steer_world *w, vec2 p, float r) {
  return !w->map_live || steer_map_free(w->map, p, r, BODY_FREE_SLACK);
}

int world_target_blocked(const steer_world *w, const steer_behaviour *b) {
  if (!w->map_live || b->target.kind != STEER_TARGET_POINT)
    return 0;
  if (b->kind != STEER_BEHAVIOUR_SEEK && b->kind != STEER_BEHAVIOUR_ARRIVE)
    return 0;
  return steer_map_inside(w->map, b->target.point);
}

int world_points_blocked(const steer_world *w, const vec2 *points, uint32_t count) {
  if (!w->map_live)
    return 0;
  for (uint32_t i = 0; i < count; i++)
    if (steer_map_inside(w->map, points[i]))
      return 1;
  return 0;
}

/* ---- obstacles ----------------------------------------------------------- */

const steer_map *steer_world_map(const steer_world *w) { return w->map; }
uint64_t steer_world_stuck_count(const steer_world *w) { return w->stuck_count; }

static void obstacle_box(const steer_obstacle_desc *o, vec2 *lo, vec2 *hi) {
  if (o->kind == STEER_OBSTACLE_CIRCLE) {
    *lo = v2(o->points[0].x - o->radius, o->points[0].y - o->radius);
    *hi = v2(o->points[0].x + o->radius, o->points[0].y + o->radius);
    return;
  }
  *lo = *hi = o->points[0];
  for (uint32_t i = 1; i < o->count; i++) {
    lo->x = fminf(lo->x, o->points[i].x);
    lo->y = fminf(lo->y, o->points[i].y);
    hi->x = fmaxf(hi->x, o->points[i].x);
    hi->y = fmaxf(hi->y, o->points[i].y);
  }
}

/* Moves the agents inside [lo, hi] (grown by their radius) that overlap the
 * map to the nearest free point: all of them, or none when one has nowhere to
 * go (STEER_EBLOCKED) or memory runs out (STEER_ENOMEM). */
static int relocate_agents(steer_world *w, vec2 lo, vec2 hi, uint32_t *moved) {
  uint32_t hits = 0, cap = 0;
  uint32_t *which = NULL;
  vec2 *to = NULL;
  int rc = STEER_OK;
  for (uint32_t d = 0; d < w->count && rc == STEER_OK; d++) {
    float r = w->radius[d] + STEER_MAP_SKIN;
    vec2 p = v2(w->px[d], w->py[d]);
    if (p.x < lo.x - r || p.x > hi.x + r || p.y < lo.y - r || p.y > hi.y + r)
      continue;
    if (steer_map_free(w->map, p, w->radius[d], 0.0f))
      continue;
    if (hits == cap) {
      cap = cap ? cap * 2 : 64;
      uint32_t *nw = realloc(which, cap * sizeof(*which));
      if (nw)
        which = nw;
      vec2 *nt = nw ? realloc(to, cap * sizeof(*to)) : NULL;
      if (nt)
        to = nt;
      if (!nw || !nt) {
        rc = STEER_ENOMEM;
        break;
      }
    }
    if (steer_map_nearest_free(w->map, p, w->radius[d], RELOCATE_SEARCH, w->cfg.min, w->cfg.max, &to[hits]) !=
        STEER_OK)
      rc = STEER_EBLOCKED;
    else
      which[hits++] = d;
  }
  for (uint32_t i = 0; rc == STEER_OK && i < hits; i++) {
    uint32_t d = which[i];
    w->px[d] = to[i].x;
    w->py[d] = to[i].y;
    w->vx[d] = 0.0f;
    w->vy[d] = 0.0f;
  }
  if (rc == STEER_OK && hits)
    w->grid_stale = 1;
  free(which);
  free(to);
  if (moved)
    *moved = rc == STEER_OK ? hits : 0;
  return rc;
}

int steer_world_add_obstacle(steer_world *w, uint32_t id, const steer_obstacle_desc *o, uint32_t *moved) {
  if (moved)
    *moved = 0;
  const uint32_t version = steer_map_version(w->map);
  int rc = steer_map_add(w->map, id, o);
  if (rc != STEER_OK)
    return rc;
  w->map_live = 1;
  vec2 lo, hi;
  obstacle_box(o, &lo, &hi);
  rc = relocate_agents(w, lo, hi, moved);
  if (rc != STEER_OK) {
    /* The add and its undo are no change: the map keeps its version, so
     * clients' copies (one MAP_CHANGED per version) see no gap. */
    steer_map_remove(w->map, id);
    steer_map_set_version(w->map, version);
    w->map_live = steer_map_count(w->map) > 0;
  }
  return rc;
}

int steer_world_add_obstacles(steer_world *w, const steer_map *src, uint32_t *moved, uint32_t *failed) {
  if (moved)
    *moved = 0;
  uint32_t n = steer_map_count(src), added = 0;
  const uint32_t version = steer_map_version(w->map);
  steer_obstacle_desc o;
  uint32_t id;
  int rc = STEER_OK;
  /* One index build for the lot (one per obstacle would be quadratic). */
  steer_map_hold(w->map);
  for (; added < n; added++) {
    steer_map_get(src, added, &id, &o);
    if ((rc = steer_map_add(w->map, id, &o)) != STEER_OK)
      break;
  }
  if (failed)
    *failed = added; /* n when no single obstacle is to blame */
  if (rc == STEER_OK)
    rc = steer_map_release(w->map);
  if (rc == STEER_OK) {
    w->map_live = steer_map_count(w->map) > 0;
    if ((rc = relocate_agents(w, w->cfg.min, w->cfg.max, moved)) == STEER_OK)
      return STEER_OK;
  }
  /* Back to the map before: the last added first, so that each removal
   * takes the map's last obstacle and moves none of the others. */
  steer_map_hold(w->map);
  for (uint32_t i = added; i-- > 0;) {
    steer_map_get(src, i, &id, &o);
    steer_map_remove(w->map, id);
  }
  steer_map_release(w->map); /* no more primitives than before: no allocation can fail */
  steer_map_set_version(w->map, version);
  w->map_live = steer_map_count(w->map) > 0;
  return rc;
}

int steer_world_remove_obstacle(steer_world *w, uint32_t id) {
  int rc = steer_map_remove(w->map, id);
  w->map_live = steer_map_count(w->map) > 0;
  return rc;
}

/* ---- steering ------------------------------------------------------------ */

vec2 world_avoid_dynamic(const steer_world *w, uint32_t d, const steer_state *s, vec2 o, const uint32_t *pos,
                         uint32_t n, float dt) {
  const steer_behaviour *b = &w->behaviour[d];
  const steer_limits *l = &w->limits[d];
  /* Avoidance works on the velocity the behaviour is heading for (what its
   * acceleration reaches in time_to_target), so the behaviour's controller
   * does not undo it; then the acceleration that reaches the result. */
  float ttt = b->params.time_to_target;
  vec2 want = v2_add(s->velocity, v2_scale(o, ttt));
  int changed = 0;
  if (b->avoid_weight > 0.0f && n > 0) {
    steer_avoid_set nb;
    if (n > STEER_AVOID_MAX)
      n = STEER_AVOID_MAX;
    const steer_grid *g = &w->grid;
    const uint16_t own = w->akey[d];
    for (uint32_t i = 0; i < n; i++) {
      uint32_t k = pos[i];
      nb.px[i] = g->sx[k];
      nb.py[i] = g->sy[k];
      nb.vx[i] = g->svx[k];
      nb.vy[i] = g->svy[k];
      nb.r[i] = g->sr[k];
      uint16_t key = g->skey[k];
      nb.share[i] =
          key == own ? 1.0f : steer_avoid_share(b->avoid_priority, key ? (uint8_t)(key - 1u) : 0u, key != 0);
      nb.tie[i] = 1.0f;
      if (nb.px[i] == s->position.x && nb.py[i] == s->position.y)
        nb.tie[i] = w->id[d] < w->id[g->items[k]] ? 1.0f : -1.0f; /* coincident: by id */
    }
    nb.count = (int)n;
    world_contact_note(w, d, &nb, pos, n, dt);
    if (world_holds(w, d)) /* noted for the contact pass, nothing more */
      return o;
    /* Keep right of oncoming traffic first, then avoid what is still predicted. */
    vec2 kept = steer_avoid_lane(s->position, want, l->radius, l->max_speed, &nb);
    changed |= kept.x != want.x || kept.y != want.y;
    want = kept;
    vec2 f =
        steer_avoid_agents(s->position, s->velocity, l->radius, l->max_acceleration, b->avoid_horizon, &nb);
    if (f.x != 0.0f || f.y != 0.0f) {
      want = v2_clip(v2_add(want, v2_scale(f, b->avoid_weight * AVOID_RESPONSE)), l->max_speed);
      changed = 1;
    }
  }
  if (b->wall_lookahead > 0.0f && w->map_live) {
    vec2 turned = steer_avoid_walls(w->map, s->position, l->radius, want, b->wall_lookahead, b->wall_margin);
    changed |= turned.x != want.x || turned.y != want.y;
    want = turned;
  }
  if (!changed)
    return o;
  return v2_clip(v2_scale(v2_sub(want, s->velocity), 1.0f / ttt), l->max_acceleration);
}

vec2 world_avoid_kinematic(const steer_world *w, uint32_t d, const steer_state *s, vec2 vel) {
  const steer_behaviour *b = &w->behaviour[d];
  if (!(b->wall_lookahead > 0.0f))
    return vel;
  return steer_avoid_walls(w->map, s->position, w->radius[d], vel, b->wall_lookahead, b->wall_margin);
}

/* ---- integration --------------------------------------------------------- */

void world_collide(const steer_world *w, uint32_t d, vec2 p0, steer_state *s) {
  vec2 p1 = s->position, v = s->velocity;
  if (steer_map_move(w->map, p0, &p1, w->radius[d], &v, w->cfg.min, w->cfg.max) > 0) {
    s->position = p1;
    s->velocity = v;
  }
}

/* ---- stuck detection ----------------------------------------------------- */

void world_stuck_reset(steer_world *w, uint32_t d) {
  w->stuck_best[d] = -1.0f; /* no distance yet */
  w->stuck_timer[d] = 0.0f;
  w->stuck_flag[d] = 0;
}

/* The point agent d is trying to reach, and how near counts as there. */
static int stuck_goal(const steer_world *w, uint32_t d, vec2 *goal, float *near, uint32_t *node) {
  const steer_behaviour *b = &w->behaviour[d];
  *node = 0;
  *near = b->params.target_radius;
  switch (b->kind) {
  case STEER_BEHAVIOUR_FOLLOW_PATH: {
    const steer_path_cursor *c = &w->cursor[d];
    int32_t h = w->path[d];
    if (h < 0 || c->finished)
      return 0;
    *goal = w->path_points[(size_t)h * w->cfg.max_path_points + c->node];
    *near = w->paths[h].radius;
    *node = c->node;
    return 1;
  }
  case STEER_BEHAVIOUR_SEEK:
  case STEER_BEHAVIOUR_ARRIVE:
  case STEER_BEHAVIOUR_PURSUE:
    if (w->arrived[d])
      return 0;
    if (b->target.kind == STEER_TARGET_POINT) {
      *goal = b->target.point;
      return 1;
    }
    if (b->target.kind == STEER_TARGET_AGENT) {
      uint32_t slot = b->target.agent & STEER_ID_INDEX_MASK;
      if (slot >= w->cfg.max_agents)
        return 0;
      uint32_t o = w->slot_dense[slot];
      if (o == NO_DENSE || w->id[o] != b->target.agent)
        return 0;
      *goal = v2(w->px[o], w->py[o]);
      return 1;
    }
    return 0;
  default:
    return 0;
  }
}

/* A path follower that reports STUCK while the geometry blocks the straight
 * way to the node it aims at (a crowd pushed it back through a door after it
 * passed the door's node, or a map change closed the leg) aims again at the
 * nearest earlier node it can reach in a straight line (a body of its radius
 * swept there touches nothing), searching back at most PATH_BACK_MAX nodes;
 * from there the path leads it round again. Returns whether it stepped back.
 * Only on STUCK, so a path that really runs through a wall still reports STUCK
 * every stuck_time. */
#define PATH_BACK_MAX 4u
static int stuck_path_back(steer_world *w, uint32_t d, vec2 p, vec2 goal) {
  if (!w->map_live || w->behaviour[d].kind != STEER_BEHAVIOUR_FOLLOW_PATH)
    return 0;
  const float r = w->radius[d];
  vec2 q = goal;
  if (steer_map_move(w->map, p, &q, r, NULL, w->cfg.min, w->cfg.max) == 0)
    return 0; /* the way is clear: stuck in a crowd, not behind a wall */
  int32_t h = w->path[d];
  const path_entry *e = &w->paths[h];
  steer_path path = {w->path_points + (size_t)h * w->cfg.max_path_points, e->count, e->radius, e->mode,
                     e->cornering};
  steer_path_cursor c = w->cursor[d];
  for (uint32_t k = 0; k < PATH_BACK_MAX; k++) {
    uint32_t prev = steer_path_prev_node(&path, &c);
    if (prev == c.node)
      return 0;
    c.node = prev;
    q = path.points[prev];
    if (steer_map_move(w->map, p, &q, r, NULL, w->cfg.min, w->cfg.max) == 0) {
      w->cursor[d].node = prev;
      w->cursor[d].turn_time_left = 0.0f;
      return 1;
    }
  }
  return 0;
}

void world_stuck(steer_world *w, uint32_t d, float dt) {
  const steer_behaviour *b = &w->behaviour[d];
  vec2 goal;
  float near;
  uint32_t node;
  if (!stuck_goal(w, d, &goal, &near, &node)) {
    world_stuck_reset(w, d);
    return;
  }
  vec2 p = v2(w->px[d], w->py[d]);
  float dist = v2_len(v2_sub(goal, p));
  if (dist <= near || w->stuck_best[d] < 0.0f || dist < w->stuck_best[d] - STUCK_PROGRESS) {
    w->stuck_best[d] = dist;
    w->stuck_timer[d] = 0.0f;
    w->stuck_flag[d] = 0;
    return;
  }
  w->stuck_timer[d] += dt;
  if (w->stuck_flag[d] || w->stuck_timer[d] < b->stuck_time)
    return;
  w->stuck_flag[d] = 1;
  w->stuck_count++;
  world_emit(w, w->id[d], STEER_EVENT_STUCK, node);
  if (b->stuck_reaction != STEER_STUCK_GIVE_UP && stuck_path_back(w, d, p, goal)) {
    world_stuck_reset(w, d); /* a new goal (instead of a nudge): a new episode */
    return;
  }
  switch (b->stuck_reaction) {
  case STEER_STUCK_NUDGE: {
    /* Sideways at half speed, the side from the agent's own generator; a new
     * episode starts from here. */
    vec2 to = v2_norm(v2_sub(goal, p));
    vec2 side = (steer_rng_next(&w->arng[d]) & 1u) ? v2(-to.y, to.x) : v2(to.y, -to.x);
    float max_speed = w->limits[d].max_speed;
    vec2 v = v2_clip(v2_add(v2(w->vx[d], w->vy[d]), v2_scale(side, 0.5f * max_speed)), max_speed);
    if (w->model[d] == STEER_MODEL_HEADING) {
      w->theta[d] = steer_orientation_of(side);
      v = v2_scale(side, v2_len(v));
    }
    w->vx[d] = v.x;
    w->vy[d] = v.y;
    w->stuck_best[d] = dist;
    w->stuck_timer[d] = 0.0f;
    w->stuck_flag[d] = 0;
    break;
  }
  case STEER_STUCK_GIVE_UP:
    steer_world_stop(w, w->id[d]);
    break;
  default:
    break;
  }
}

/* ---- kept neighbour sets ------------------------------------------------- */

int world_nlist_need(steer_world *w, const steer_behaviour *b) {
  if (world_contact_need(w, b) != STEER_OK)
    return STEER_ENOMEM;
  if (w->nlist || b->neighbour_period <= 1 || !needs_neighbours(b))
    return STEER_OK;
  w->nlist = malloc((size_t)w->cfg.max_agents * WORLD_NLIST * sizeof(uint32_t));
  return w->nlist ? STEER_OK : STEER_ENOMEM;
}

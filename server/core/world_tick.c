/* world_tick.c: steer_world_step, the tick as its passes over all agents: the grid,
 * steering (reads only the previous tick's state, writes the per-agent command
 * scratch; the vector path batches agents of one kind), integration, contact,
 * and the path/arrival bookkeeping that emits the events. */
#include <stdlib.h>
#include <string.h>

#include "dense.h"
#include "grid.h"
#include "pool.h"
#include "simd.h"
#include "world.h"
#include "world_internal.h"

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
    uint32_t o = world_dense_of(w, t->agent);
    if (o == NO_DENSE)
      return 0;
    *out = v2(w->px[o], w->py[o]);
    return 1;
  }
  return 0;
}

static int target_state(const steer_world *w, steer_id id, steer_state *out) {
  uint32_t o = world_dense_of(w, id);
  if (o == NO_DENSE)
    return 0;
  *out = world_state_of(w, o);
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
  if (world_holds(w, d))
    goto lost;
  switch (b->kind) {
  case STEER_BEHAVIOUR_SEEK:
  case STEER_BEHAVIOUR_FLEE:
  case STEER_BEHAVIOUR_ARRIVE:
    if (!target_point(w, &b->target, &tp))
      goto lost;
    if (b->kind == STEER_BEHAVIOUR_FLEE)
      o = steer_flee(s, l, p, tp);
    else if (b->kind == STEER_BEHAVIOUR_ARRIVE &&
             (b->arrival != STEER_ARRIVAL_PASS || b->target.kind != STEER_TARGET_POINT))
      o = steer_arrive(s, l, p, tp);
    else /* seek, and an arrival that passes through its point at speed */
      o = steer_seek(s, l, p, tp);
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
    steer_path path = world_path_view(w, w->path[d]);
    uint32_t node;
    if (b->arrival == STEER_ARRIVAL_PASS && steer_path_final_node(&path, &w->cursor[d], &node))
      o = steer_seek(s, l, p, path.points[node]); /* through the last node at speed */
    else
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
  lost: /* NONE, a target that has gone, or settled: come to rest */
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
  if (b->separation_weight > 0.0f && !world_holds(w, d)) {
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
    steer_path path = world_path_view(w, w->path[d]);
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
    steer_path path = world_path_view(w, w->path[d]);
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
    st[j] = world_state_of(w, dd[j]);
    lp[j] = &w->limits[dd[j]];
    pp[j] = &w->behaviour[dd[j]].params;
  }
  if (kind == BATCH_PATH_HEADING) {
    steer_path pv[4];
    const steer_path *pvp[4];
    const steer_path_cursor *cp[4];
    steer_heading_output ho[4];
    for (int j = 0; j < 4; j++) {
      pv[j] = world_path_view(w, w->path[dd[j]]);
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
      steer_state s = world_state_of(w, d);
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
    steer_state s = world_state_of(w, d);
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
      steer_state s = world_state_of(w, d);
      steer_path path = world_path_view(w, w->path[d]);
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
void world_grid_rebuild(steer_world *w, int threaded) {
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
    world_grid_rebuild(w, 1);
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
    world_grid_rebuild(w, 1);
  else
    w->grid_stale = 1;
}

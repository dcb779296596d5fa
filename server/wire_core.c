/* wire_core.c: see wire_core.h. */
#include "wire_core.h"

#include <stddef.h>
#include <string.h>

/* The wire's enums and the core's agree value by value: a reordering on
 * either side fails the build here instead of changing what a name means. */
#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " != " #b)
SAME(PROTO_MODEL_KINEMATIC, STEER_MODEL_KINEMATIC);
SAME(PROTO_MODEL_DYNAMIC, STEER_MODEL_DYNAMIC);
SAME(PROTO_MODEL_HEADING, STEER_MODEL_HEADING);
SAME(PROTO_MODEL_COUNT, STEER_MODEL_COUNT);
SAME(PROTO_BEHAVIOUR_NONE, STEER_BEHAVIOUR_NONE);
SAME(PROTO_BEHAVIOUR_SEEK, STEER_BEHAVIOUR_SEEK);
SAME(PROTO_BEHAVIOUR_FLEE, STEER_BEHAVIOUR_FLEE);
SAME(PROTO_BEHAVIOUR_ARRIVE, STEER_BEHAVIOUR_ARRIVE);
SAME(PROTO_BEHAVIOUR_ALIGN, STEER_BEHAVIOUR_ALIGN);
SAME(PROTO_BEHAVIOUR_VELOCITY_MATCH, STEER_BEHAVIOUR_VELOCITY_MATCH);
SAME(PROTO_BEHAVIOUR_FACE, STEER_BEHAVIOUR_FACE);
SAME(PROTO_BEHAVIOUR_LOOK_WHERE_GOING, STEER_BEHAVIOUR_LOOK_WHERE_GOING);
SAME(PROTO_BEHAVIOUR_PURSUE, STEER_BEHAVIOUR_PURSUE);
SAME(PROTO_BEHAVIOUR_EVADE, STEER_BEHAVIOUR_EVADE);
SAME(PROTO_BEHAVIOUR_INTERPOSE, STEER_BEHAVIOUR_INTERPOSE);
SAME(PROTO_BEHAVIOUR_WANDER, STEER_BEHAVIOUR_WANDER);
SAME(PROTO_BEHAVIOUR_FOLLOW_PATH, STEER_BEHAVIOUR_FOLLOW_PATH);
SAME(PROTO_BEHAVIOUR_COUNT, STEER_BEHAVIOUR_COUNT);
_Static_assert(PROTO_BEHAVIOUR_GOTO >= STEER_BEHAVIOUR_COUNT, "goto is a kind of the wire only");
SAME(PROTO_FACING_LOOK_WHERE_GOING, STEER_FACING_LOOK_WHERE_GOING);
SAME(PROTO_FACING_NONE, STEER_FACING_NONE);
SAME(PROTO_FACING_TARGET, STEER_FACING_TARGET);
SAME(PROTO_FACING_COUNT, STEER_FACING_COUNT);
SAME(PROTO_COMBINE_BLEND, STEER_COMBINE_BLEND);
SAME(PROTO_COMBINE_PRIORITY, STEER_COMBINE_PRIORITY);
SAME(PROTO_COMBINE_COUNT, STEER_COMBINE_COUNT);
SAME(PROTO_PATH_ONCE, STEER_PATH_ONCE);
SAME(PROTO_PATH_LOOP, STEER_PATH_LOOP);
SAME(PROTO_PATH_PINGPONG, STEER_PATH_PINGPONG);
SAME(PROTO_PATH_MODE_COUNT, STEER_PATH_MODE_COUNT);
SAME(PROTO_CORNER_NONE, STEER_CORNER_NONE);
SAME(PROTO_CORNER_ARC, STEER_CORNER_ARC);
SAME(PROTO_CORNER_LAZY, STEER_CORNER_LAZY);
SAME(PROTO_CORNER_COUNT, STEER_CORNER_COUNT);
SAME(PROTO_TARGET_NONE, STEER_TARGET_NONE);
SAME(PROTO_TARGET_POINT, STEER_TARGET_POINT);
SAME(PROTO_TARGET_AGENT, STEER_TARGET_AGENT);
SAME(PROTO_TARGET_KIND_COUNT, STEER_TARGET_KIND_COUNT);
SAME(PROTO_STUCK_REPORT, STEER_STUCK_REPORT);
SAME(PROTO_STUCK_NUDGE, STEER_STUCK_NUDGE);
SAME(PROTO_STUCK_GIVE_UP, STEER_STUCK_GIVE_UP);
SAME(PROTO_STUCK_REACTION_COUNT, STEER_STUCK_REACTION_COUNT);
SAME(PROTO_ARRIVAL_POINT, STEER_ARRIVAL_POINT);
SAME(PROTO_ARRIVAL_SETTLE, STEER_ARRIVAL_SETTLE);
SAME(PROTO_ARRIVAL_PASS, STEER_ARRIVAL_PASS);
SAME(PROTO_ARRIVAL_COUNT, STEER_ARRIVAL_COUNT);
SAME(PROTO_OBSTACLE_CIRCLE, STEER_OBSTACLE_CIRCLE);
SAME(PROTO_OBSTACLE_POLYGON, STEER_OBSTACLE_POLYGON);
SAME(PROTO_OBSTACLE_WALL, STEER_OBSTACLE_WALL);
SAME(PROTO_OBSTACLE_KIND_COUNT, STEER_OBSTACLE_KIND_COUNT);
SAME(PROTO_MAX_OBSTACLE_POINTS, STEER_MAP_MAX_VERTICES);
SAME(PROTO_MAX_AGENTS, STEER_MAX_CAPACITY);
SAME(PROTO_MAP_MAX_OBSTACLES, STEER_MAP_MAX_OBSTACLES);
SAME(PROTO_MAP_MAX_SEGMENTS, STEER_MAP_MAX_SEGMENTS);
SAME(PROTO_EVENT_ARRIVED, STEER_EVENT_ARRIVED);
SAME(PROTO_EVENT_WAYPOINT, STEER_EVENT_WAYPOINT);
SAME(PROTO_EVENT_PATH_FINISHED, STEER_EVENT_PATH_FINISHED);
SAME(PROTO_EVENT_REVERSED, STEER_EVENT_REVERSED);
_Static_assert(sizeof(proto_id) == sizeof(steer_id), "agent ids are the same width");
/* wire_obstacle_of hands the core's points to the encoders in place. */
_Static_assert(sizeof(proto_vec2) == sizeof(vec2) && offsetof(proto_vec2, x) == offsetof(vec2, x) &&
                   offsetof(proto_vec2, y) == offsetof(vec2, y),
               "a point has one layout");
#undef SAME

/* Field by field: the wire's structs name the core's fields alike. */
#define COPY_IF(bit, field)                                                                                  \
  do {                                                                                                       \
    if (src->present & (bit))                                                                                \
      dst->field = src->v.field;                                                                             \
  } while (0)

void wire_apply_limits(const proto_limits *src, steer_limits *dst) {
  COPY_IF(PROTO_LIMIT_MAX_SPEED, max_speed);
  COPY_IF(PROTO_LIMIT_MAX_ACCELERATION, max_acceleration);
  COPY_IF(PROTO_LIMIT_MAX_ROTATION, max_rotation);
  COPY_IF(PROTO_LIMIT_MAX_ANGULAR_ACCELERATION, max_angular_acceleration);
  COPY_IF(PROTO_LIMIT_RADIUS, radius);
}

void wire_apply_params(const proto_params *src, steer_params *dst) {
  COPY_IF(PROTO_PARAM_TIME_TO_TARGET, time_to_target);
  COPY_IF(PROTO_PARAM_TARGET_RADIUS, target_radius);
  COPY_IF(PROTO_PARAM_SLOW_RADIUS, slow_radius);
  COPY_IF(PROTO_PARAM_KINEMATIC_TIME_TO_TARGET, kinematic_time_to_target);
  COPY_IF(PROTO_PARAM_ALIGN_TARGET_RADIUS, align_target_radius);
  COPY_IF(PROTO_PARAM_ALIGN_SLOW_RADIUS, align_slow_radius);
  COPY_IF(PROTO_PARAM_ALIGN_TIME_TO_TARGET, align_time_to_target);
  COPY_IF(PROTO_PARAM_MAX_PREDICTION, max_prediction);
  COPY_IF(PROTO_PARAM_PANIC_RADIUS, panic_radius);
  COPY_IF(PROTO_PARAM_WANDER_OFFSET, wander_offset);
  COPY_IF(PROTO_PARAM_WANDER_RADIUS, wander_radius);
  COPY_IF(PROTO_PARAM_WANDER_RATE, wander_rate);
  COPY_IF(PROTO_PARAM_SEPARATION_RADIUS, separation_radius);
  COPY_IF(PROTO_PARAM_TURN_TRIGGER_DISTANCE, turn_trigger_distance);
  COPY_IF(PROTO_PARAM_PATH_RECOVER_STRENGTH, path_recover_strength);
}
#undef COPY_IF

void wire_apply_tuning(const proto_params *src, steer_behaviour *dst) {
  const proto_tuning *t = &src->tuning;
  if (src->present & PROTO_PARAM_AVOID_WEIGHT)
    dst->avoid_weight = t->avoid_weight;
  if (src->present & PROTO_PARAM_AVOID_HORIZON)
    dst->avoid_horizon = t->avoid_horizon;
  if (src->present & PROTO_PARAM_AVOID_PRIORITY)
    dst->avoid_priority = t->avoid_priority;
  if (src->present & PROTO_PARAM_WALL_LOOKAHEAD)
    dst->wall_lookahead = t->wall_lookahead;
  if (src->present & PROTO_PARAM_WALL_MARGIN)
    dst->wall_margin = t->wall_margin;
  if (src->present & PROTO_PARAM_STUCK_TIME)
    dst->stuck_time = t->stuck_time;
  if (src->present & PROTO_PARAM_STUCK_REACTION)
    dst->stuck_reaction = t->stuck_reaction;
  if (src->present & PROTO_PARAM_ARRIVAL)
    dst->arrival = t->arrival;
}

void wire_tuning_of(const steer_behaviour *b, proto_tuning *t) {
  t->avoid_weight = b->avoid_weight;
  t->avoid_horizon = b->avoid_horizon;
  t->avoid_priority = b->avoid_priority;
  t->wall_lookahead = b->wall_lookahead;
  t->wall_margin = b->wall_margin;
  t->stuck_time = b->stuck_time;
  t->stuck_reaction = b->stuck_reaction;
  t->arrival = b->arrival;
}

void wire_tuning_keep(const steer_behaviour *from, steer_behaviour *to) {
  proto_params keep;
  memset(&keep, 0, sizeof keep);
  keep.present = PROTO_PARAM_TUNING;
  wire_tuning_of(from, &keep.tuning);
  wire_apply_tuning(&keep, to);
}

void wire_apply_behaviour(const proto_behaviour *src, steer_behaviour *dst) {
  dst->kind = src->kind;
  if (src->present & PROTO_BHV_FACING)
    dst->facing = src->facing;
  if (src->present & PROTO_BHV_COMBINE)
    dst->combine = src->combine;
  if (src->present & PROTO_BHV_SEPARATION_WEIGHT)
    dst->separation_weight = src->separation_weight;
  if (src->present & PROTO_BHV_MAX_NEIGHBOURS)
    dst->max_neighbours = src->max_neighbours;
  memset(&dst->target, 0, sizeof dst->target);
  if (src->present & PROTO_BHV_TARGET_AGENT) {
    dst->target.kind = STEER_TARGET_AGENT;
    dst->target.agent = src->target_agent;
    if (src->present & PROTO_BHV_TARGET_AGENT2)
      dst->target.agent2 = src->target_agent2;
  } else if (src->present & (PROTO_BHV_TARGET | PROTO_BHV_ORIENTATION)) {
    dst->target.kind = STEER_TARGET_POINT;
    if (src->present & PROTO_BHV_TARGET)
      dst->target.point = wire_to_vec2(src->target);
  } else {
    dst->target.kind = STEER_TARGET_NONE;
  }
  if (src->present & PROTO_BHV_ORIENTATION)
    dst->target.orientation = src->orientation;
  wire_apply_params(&src->params, &dst->params);
  wire_apply_tuning(&src->params, dst);
}

void wire_apply_spawn(const proto_spawn *src, steer_agent_desc *dst) {
  dst->model = src->model;
  dst->state.position = wire_to_vec2(src->position);
  if (src->present & PROTO_SPAWN_ORIENTATION)
    dst->state.orientation = src->orientation;
  if (src->present & PROTO_SPAWN_VX)
    dst->state.velocity.x = src->velocity.x;
  if (src->present & PROTO_SPAWN_VY)
    dst->state.velocity.y = src->velocity.y;
  if (src->present & PROTO_SPAWN_LIMITS)
    wire_apply_limits(&src->limits, &dst->limits);
  if (src->present & PROTO_SPAWN_BEHAVIOUR)
    wire_apply_behaviour(&src->behaviour, &dst->behaviour);
}

proto_state wire_state_of(const steer_state *s) {
  proto_state o = {wire_of_vec2(s->position), s->orientation, wire_of_vec2(s->velocity), s->rotation};
  return o;
}

proto_limit_values wire_limits_of(const steer_limits *l) {
  proto_limit_values o = {l->max_speed, l->max_acceleration, l->max_rotation, l->max_angular_acceleration,
                          l->radius};
  return o;
}

int wire_error_of(int steer_err) {
  switch (steer_err) {
  case STEER_OK:
    return PROTO_OK;
  case STEER_EINVAL:
    return PROTO_ERR_BAD_FIELD;
  case STEER_ENOENT:
    return PROTO_ERR_NO_SUCH_AGENT;
  case STEER_EFULL:
    return PROTO_ERR_WORLD_FULL;
  case STEER_EMODEL:
    return PROTO_ERR_MODEL_MISMATCH;
  case STEER_ETARGET:
    return PROTO_ERR_BAD_TARGET;
  case STEER_EBLOCKED:
    return PROTO_ERR_BLOCKED;
  default:
    return PROTO_ERR_INTERNAL;
  }
}

proto_event wire_event_of(const steer_event *e) {
  proto_event out;
  out.tick = e->tick;
  out.code = e->type; /* 0..3 are the same codes */
  if (e->type == STEER_EVENT_STUCK)
    out.code = PROTO_EVENT_STUCK;
  out.agent = e->agent;
  out.data = e->node;
  if (e->type == STEER_EVENT_ARRIVED)
    out.data = 0;
  return out;
}

proto_pose_view wire_pose_view(const steer_world_view *v) {
  proto_pose_view o = {v->count, v->id, v->px, v->py, v->vx, v->vy, v->theta};
  return o;
}

proto_obstacle wire_obstacle_of(uint32_t id, const steer_obstacle_desc *d) {
  proto_obstacle o;
  o.id = id;
  o.kind = d->kind;
  o.count = d->count;
  o.radius = d->radius;
  o.points = (const proto_vec2 *)(const void *)d->points; /* may_alias: read in place */
  return o;
}

steer_obstacle_desc wire_obstacle_desc(const proto_obstacle *o, vec2 *points) {
  steer_obstacle_desc d;
  d.kind = o->kind;
  d.count = o->count <= PROTO_MAX_OBSTACLE_POINTS ? o->count : PROTO_MAX_OBSTACLE_POINTS;
  for (uint32_t i = 0; i < d.count; i++)
    points[i] = wire_to_vec2(o->points[i]);
  d.points = points;
  d.radius = o->radius;
  return d;
}

/* validate.c: see validate.h. */
#include "validate.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define PI_F 3.14159265f

const steerd_range steerd_limit_ranges[PROTO_LIMIT_COUNT] = {
    {"max_speed", 0.0f, 50.0f, 1, "m/s"},      {"max_acceleration", 0.0f, 500.0f, 1, "m/s^2"},
    {"max_rotation", 0.0f, 50.0f, 1, "rad/s"}, {"max_angular_acceleration", 0.0f, 500.0f, 1, "rad/s^2"},
    {"radius", 0.0f, 50.0f, 0, "m"},
};

const steerd_range steerd_param_ranges[PROTO_PARAM_COUNT] = {
    {"time_to_target", 0.01f, 10.0f, 0, "s"},       {"target_radius", 0.0f, 1000.0f, 0, "m"},
    {"slow_radius", 0.0f, 1000.0f, 0, "m"},         {"kinematic_time_to_target", 0.01f, 10.0f, 0, "s"},
    {"align_target_radius", 0.0f, PI_F, 0, "rad"},  {"align_slow_radius", 0.0f, PI_F, 0, "rad"},
    {"align_time_to_target", 0.01f, 10.0f, 0, "s"}, {"max_prediction", 0.0f, 60.0f, 0, "s"},
    {"panic_radius", 0.0f, 1000.0f, 0, "m"},        {"wander_offset", 0.0f, 100.0f, 0, "m"},
    {"wander_radius", 0.0f, 100.0f, 0, "m"},        {"wander_rate", 0.0f, 100.0f, 0, "rad/s"},
    {"separation_radius", 0.0f, 50.0f, 0, "m"},     {"turn_trigger_distance", 0.0f, 1000.0f, 0, "m"},
    {"path_recover_strength", 0.0f, 100.0f, 0, ""},
};

const steerd_range steerd_velocity_range = {"velocity", -50.0f, 50.0f, 0, "m/s"};
const steerd_range steerd_path_radius_range = {"radius", 0.0f, 100.0f, 1, "m"};
const steerd_range steerd_separation_weight_range = {"separation_weight", 0.0f, 100.0f, 0, ""};
const steerd_range steerd_node_radius_range = {"node_radius", 0.0f, 100.0f, 1, "m"};
const steerd_range steerd_replan_distance_range = {"replan_distance", 0.0f, 1000.0f, 0, "m"};

/* Offsets of the limits' and params' fields, in bit order. */
static const size_t limit_offsets[PROTO_LIMIT_COUNT] = {
    offsetof(proto_limit_values, max_speed), offsetof(proto_limit_values, max_acceleration),
    offsetof(proto_limit_values, max_rotation), offsetof(proto_limit_values, max_angular_acceleration),
    offsetof(proto_limit_values, radius)};

static const size_t param_offsets[PROTO_PARAM_COUNT] = {
    offsetof(proto_param_values, time_to_target),
    offsetof(proto_param_values, target_radius),
    offsetof(proto_param_values, slow_radius),
    offsetof(proto_param_values, kinematic_time_to_target),
    offsetof(proto_param_values, align_target_radius),
    offsetof(proto_param_values, align_slow_radius),
    offsetof(proto_param_values, align_time_to_target),
    offsetof(proto_param_values, max_prediction),
    offsetof(proto_param_values, panic_radius),
    offsetof(proto_param_values, wander_offset),
    offsetof(proto_param_values, wander_radius),
    offsetof(proto_param_values, wander_rate),
    offsetof(proto_param_values, separation_radius),
    offsetof(proto_param_values, turn_trigger_distance),
    offsetof(proto_param_values, path_recover_strength)};

static float float_at(const void *base, size_t offset) {
  float v;
  memcpy(&v, (const char *)base + offset, sizeof v);
  return v;
}

static int in_range(const steerd_range *r, float v) {
  return isfinite(v) && (r->min_open ? v > r->min : v >= r->min) && v <= r->max;
}

static int fail_range(const steerd_range *r, const char *prefix, const char *name, steerd_check *out) {
  snprintf(out->field, sizeof out->field, "%s%s", prefix, name);
  snprintf(out->message, sizeof out->message, "must be in %c%g, %g] %s", r->min_open ? '(' : '[',
           (double)r->min, (double)r->max, r->unit);
  return -1;
}

static int check_range(const steerd_range *r, float v, const char *prefix, const char *name,
                       steerd_check *out) {
  return in_range(r, v) ? 0 : fail_range(r, prefix, name, out);
}

static int inside(const steerd_bounds *w, proto_vec2 p) {
  return p.x >= w->min.x && p.x <= w->max.x && p.y >= w->min.y && p.y <= w->max.y;
}

int steerd_check_limits(const proto_limits *l, const char *prefix, steerd_check *out) {
  char p[24];
  snprintf(p, sizeof p, "%.20s%s", prefix, *prefix ? "." : "");
  for (uint32_t i = 0; i < PROTO_LIMIT_COUNT; i++)
    if ((l->present & (1u << i)) && check_range(&steerd_limit_ranges[i], float_at(&l->v, limit_offsets[i]), p,
                                                steerd_limit_ranges[i].name, out))
      return -1;
  return 0;
}

const steerd_range steerd_tuning_ranges[5] = {
    {"avoid_weight", 0.0f, 100.0f, 0, ""},   {"avoid_horizon", 0.05f, 10.0f, 0, "s"},
    {"wall_lookahead", 0.0f, 10.0f, 0, "s"}, {"wall_margin", 0.0f, 10.0f, 0, "m"},
    {"stuck_time", 0.0f, 600.0f, 0, "s"},
};

int steerd_check_params(const proto_params *pp, const char *prefix, steerd_check *out) {
  char p[24];
  snprintf(p, sizeof p, "%.20s%s", prefix, *prefix ? "." : "");
  for (uint32_t i = 0; i < PROTO_PARAM_COUNT; i++)
    if ((pp->present & (1u << i)) && check_range(&steerd_param_ranges[i], float_at(&pp->v, param_offsets[i]),
                                                 p, steerd_param_ranges[i].name, out))
      return -1;
  /* The tuning keys (avoid_priority, stuck_reaction and arrival: the decoder's range is the server's). */
  const proto_tuning *t = &pp->tuning;
  const struct {
    uint32_t bit;
    float v;
  } tv[5] = {{PROTO_PARAM_AVOID_WEIGHT, t->avoid_weight},
             {PROTO_PARAM_AVOID_HORIZON, t->avoid_horizon},
             {PROTO_PARAM_WALL_LOOKAHEAD, t->wall_lookahead},
             {PROTO_PARAM_WALL_MARGIN, t->wall_margin},
             {PROTO_PARAM_STUCK_TIME, t->stuck_time}};
  for (int i = 0; i < 5; i++)
    if ((pp->present & tv[i].bit) &&
        check_range(&steerd_tuning_ranges[i], tv[i].v, p, steerd_tuning_ranges[i].name, out))
      return -1;
  return 0;
}

int steerd_check_merged_params(const steer_params *p, const char *field, steerd_check *out) {
  const char *why = NULL;
  if (!(p->slow_radius == 0.0f || p->slow_radius >= p->target_radius))
    why = "slow_radius must be 0 or >= target_radius";
  else if (!(p->align_slow_radius >= p->align_target_radius))
    why = "align_slow_radius must be >= align_target_radius";
  if (!why)
    return 0;
  snprintf(out->field, sizeof out->field, "%s", field);
  snprintf(out->message, sizeof out->message, "%s (after merging with the agent's parameters)", why);
  return -1;
}

int steerd_check_behaviour(const proto_behaviour *b, const steerd_bounds *w, const char *prefix,
                           steerd_check *out) {
  char p[24];
  snprintf(p, sizeof p, "%.20s%s", prefix, *prefix ? "." : "");
  if ((b->present & PROTO_BHV_TARGET) && !inside(w, b->target)) {
    snprintf(out->field, sizeof out->field, "%starget", p);
    snprintf(out->message, sizeof out->message, "target outside the world bounds");
    return -1;
  }
  if ((b->present & PROTO_BHV_SEPARATION_WEIGHT) &&
      check_range(&steerd_separation_weight_range, b->separation_weight, p, "separation_weight", out))
    return -1;
  if ((b->present & PROTO_BHV_NODE_RADIUS) &&
      check_range(&steerd_node_radius_range, b->node_radius, p, "node_radius", out))
    return -1;
  if ((b->present & PROTO_BHV_REPLAN_DISTANCE) &&
      check_range(&steerd_replan_distance_range, b->replan_distance, p, "replan_distance", out))
    return -1;
  char pp[32];
  snprintf(pp, sizeof pp, "%sparams", p);
  return steerd_check_params(&b->params, pp, out);
}

int steerd_check_path(const proto_path *path, const steerd_bounds *w, const char *prefix, steerd_check *out) {
  char p[24];
  snprintf(p, sizeof p, "%.20s%s", prefix, *prefix ? "." : "");
  if (path->count > w->max_path_points) {
    snprintf(out->field, sizeof out->field, "%spoints", p);
    snprintf(out->message, sizeof out->message, "more than %u points", w->max_path_points);
    return -1;
  }
  for (uint32_t i = 0; i < path->count; i++)
    if (!inside(w, path->points[i])) {
      snprintf(out->field, sizeof out->field, "%spoints[%u]", p, i);
      snprintf(out->message, sizeof out->message, "path point outside the world bounds");
      return -1;
    }
  if (check_range(&steerd_path_radius_range, path->radius, p, "radius", out))
    return -1;
  char pp[32];
  snprintf(pp, sizeof pp, "%sparams", p);
  return steerd_check_params(&path->params, pp, out);
}

int steerd_check_spawn(const proto_spawn *s, const steerd_bounds *w, steerd_check *out) {
  if (!(s->position.x >= w->min.x && s->position.x <= w->max.x) ||
      !(s->position.y >= w->min.y && s->position.y <= w->max.y)) {
    int bad_x = !(s->position.x >= w->min.x && s->position.x <= w->max.x);
    snprintf(out->field, sizeof out->field, "%s", bad_x ? "x" : "y");
    snprintf(out->message, sizeof out->message, "position outside the world bounds");
    return -1;
  }
  if ((s->present & PROTO_SPAWN_VX) && check_range(&steerd_velocity_range, s->velocity.x, "", "vx", out))
    return -1;
  if ((s->present & PROTO_SPAWN_VY) && check_range(&steerd_velocity_range, s->velocity.y, "", "vy", out))
    return -1;
  if ((s->present & PROTO_SPAWN_LIMITS) && steerd_check_limits(&s->limits, "limits", out))
    return -1;
  if ((s->present & PROTO_SPAWN_BEHAVIOUR) && steerd_check_behaviour(&s->behaviour, w, "behaviour", out))
    return -1;
  if ((s->present & PROTO_SPAWN_PATH) && steerd_check_path(&s->path, w, "path", out))
    return -1;
  return 0;
}

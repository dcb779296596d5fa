/* validate.h: the server's range checks on decoded commands (pure).
 *
 * The decoder already refuses non-finite numbers, |v| > 1e6, negative radii and
 * the like; these checks add the server's own ranges (a table per field) and
 * the world bounds, and name the offending field as PROTOCOL.md 7.3 says
 * ("limits.max_speed", "path.points[3]", "behaviour.params.slow_radius"). They
 * run before a command changes anything, so a refused command has no effect. */
#ifndef STEERD_VALIDATE_H
#define STEERD_VALIDATE_H

#include <stdint.h>

#include "protocol.h"
#include "steering.h"

/* One number's allowed range: [min, max], or (min, max] when min_open. */
typedef struct steerd_range {
  const char *name; /* wire name */
  float min, max;
  uint8_t min_open;
  const char *unit;
} steerd_range;

/* Indexed like the PROTO_LIMIT_* and PROTO_PARAM_* bits. */
extern const steerd_range steerd_limit_ranges[PROTO_LIMIT_COUNT];
extern const steerd_range steerd_param_ranges[PROTO_PARAM_COUNT];
extern const steerd_range steerd_velocity_range;          /* SPAWN vx, vy */
extern const steerd_range steerd_path_radius_range;       /* PATH radius */
extern const steerd_range steerd_separation_weight_range; /* BEHAVIOUR separation_weight */
/* PARAMS avoid_weight, avoid_horizon, wall_lookahead, wall_margin, stuck_time. */
extern const steerd_range steerd_tuning_ranges[5];
extern const steerd_range steerd_node_radius_range;     /* BEHAVIOUR node_radius (goto) */
extern const steerd_range steerd_replan_distance_range; /* BEHAVIOUR replan_distance (goto) */

typedef struct steerd_bounds {
  proto_vec2 min, max;      /* world, m */
  uint32_t max_path_points; /* <= PROTO_MAX_PATH_POINTS */
} steerd_bounds;

/* Where a check failed: field path and a message for the ERROR. */
typedef struct steerd_check {
  char field[PROTO_MAX_FIELD_BYTES + 1];
  char message[128];
} steerd_check;

/* Each returns 0, or -1 with *out filled (the ERROR is BAD_FIELD). prefix is
 * the path of the map the values came in ("" for the body). */
int steerd_check_limits(const proto_limits *l, const char *prefix, steerd_check *out);
int steerd_check_params(const proto_params *p, const char *prefix, steerd_check *out);
/* The rules between parameters once merged into an agent's (slow_radius >=
 * target_radius, align_slow_radius >= align_target_radius); field names the map. */
int steerd_check_merged_params(const steer_params *p, const char *field, steerd_check *out);
int steerd_check_behaviour(const proto_behaviour *b, const steerd_bounds *w, const char *prefix,
                           steerd_check *out);
int steerd_check_path(const proto_path *p, const steerd_bounds *w, const char *prefix, steerd_check *out);
int steerd_check_spawn(const proto_spawn *s, const steerd_bounds *w, steerd_check *out);

#endif /* STEERD_VALIDATE_H */

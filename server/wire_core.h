/* wire_core.h: the one place the server converts between the wire's types
 * (protocol/protocol.h, map_msg.h) and the movement core's (server/core):
 * decoded commands applied to the core's structs, the core's agents, events,
 * errors and obstacles turned into what the encoders take. The two sides
 * number their enums alike; wire_core.c checks that value by value. */
#ifndef STEERD_WIRE_CORE_H
#define STEERD_WIRE_CORE_H

#include "map.h"
#include "map_msg.h"
#include "protocol.h"
#include "steering.h"
#include "vec2.h"
#include "world.h"

static inline vec2 wire_to_vec2(proto_vec2 p) { return v2(p.x, p.y); }
static inline proto_vec2 wire_of_vec2(vec2 v) { return proto_v2(v.x, v.y); }

/* Copies the present fields into dst. */
void wire_apply_limits(const proto_limits *src, steer_limits *dst);
void wire_apply_params(const proto_params *src, steer_params *dst);
/* Copies the present tuning keys (PROTO_PARAM_TUNING) into dst. */
void wire_apply_tuning(const proto_params *src, steer_behaviour *dst);
/* The agent's own keys of a behaviour (avoidance, the wall feeler, stuck
 * detection, arrival), and to's set to from's: a new behaviour keeps them
 * unless its params name them (PROTOCOL.md 5.2). */
void wire_tuning_of(const steer_behaviour *b, proto_tuning *t);
void wire_tuning_keep(const steer_behaviour *from, steer_behaviour *to);
/* dst should be steer_default_behaviour(src->kind); sets kind, the present
 * options, the target (AGENT if target_agent, else POINT if target or
 * orientation, else NONE) and the present params. */
void wire_apply_behaviour(const proto_behaviour *src, steer_behaviour *dst);
/* dst should be steer_default_agent_desc(); sets model, state, limits and
 * behaviour (if present). The path, if present, is for the server to set after
 * the spawn. */
void wire_apply_spawn(const proto_spawn *src, steer_agent_desc *dst);

/* A QUERY reply's state and limits. */
proto_state wire_state_of(const steer_state *s);
proto_limit_values wire_limits_of(const steer_limits *l);

/* The wire code of a core error (negative); STEER_OK -> PROTO_OK. */
int wire_error_of(int steer_err);
/* The wire event of a core event. */
proto_event wire_event_of(const steer_event *e);

/* The world's agents as the snapshot encoders read them, in place. */
proto_pose_view wire_pose_view(const steer_world_view *v);

/* An obstacle of the core as the map encoders read it: its points are the
 * core's, in place, valid while d's are. */
proto_obstacle wire_obstacle_of(uint32_t id, const steer_obstacle_desc *d);
/* A decoded obstacle for the core, its points copied into points (room for
 * PROTO_MAX_OBSTACLE_POINTS), which must outlive the result. */
steer_obstacle_desc wire_obstacle_desc(const proto_obstacle *o, vec2 *points);

#endif /* STEERD_WIRE_CORE_H */

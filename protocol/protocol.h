/* protocol.h: the steerd wire protocol as pure encode/decode functions.
 *
 * No I/O, no clock, no printing, no malloc: encoders write into a caller buffer,
 * decoders read untrusted bytes into caller structs. protocol/PROTOCOL.md is the
 * normative spec; this header mirrors it.
 *
 * Every ENet packet holds exactly one msgpack array:
 *
 *   client -> server, channel 0 (reliable):
 *     [type 1..9, request_id u32, {body: string keys}]
 *   server -> client, channel 0 (reliable):
 *     [32 WELCOME, request_id, {client_id, tick_rate, snapshot_rate, world, tick, server_time_us, protocol}]
 *     [33 ACK,     request_id, command_type, {body}]
 *     [34 ERROR,   request_id, code, message, field | nil]
 *     [35 EVENT,   tick, event_code, agent_id, data]
 *   server -> client, channel 1 (unreliable, sequenced):
 *     [36 SNAPSHOT, tick, server_time_us, part_index, part_count, agent_total,
 *                   [id, x, y, theta, vx, vy, id, x, ...]]    (cm, cm/s, theta * 32768/pi)
 *     [37 DELTA,    tick, server_time_us, baseline_tick, part_index, part_count,
 *                   [id+, mask, fields.., id+, mask, ...], [id+, id+, ...]]   (HELLO snapshots "delta")
 *   client -> server, channel 1 (unreliable, delta clients only):
 *     [11 SNAPSHOT_ACK, tick]                                     (no reply)
 *
 *   DELTA changes, per agent: the id as the difference from the previous id of
 *   the array (the first from 0), a mask (PROTO_DELTA_*), then the masked fields
 *   x, y, theta, vx, vy, omega in that order: differences from the baseline
 *   record predicted to the frame's time (x, y, theta) or from the baseline
 *   record (vx, vy, omega); absolute values when the mask has PROTO_DELTA_ABSOLUTE.
 *
 * Return conventions: encoders return the number of bytes written, 0 when the
 * buffer is too small or an enum is out of range. Decoders return 0, or minus a
 * proto_error_code with *err filled in (code, field path, reason). */
#ifndef PROTO_PROTOCOL_H
#define PROTO_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

/* ---- Wire types ----------------------------------------------------------
 *
 * The protocol owns its types: nothing here comes from the simulation. The
 * enums sent as names (PROTOCOL.md 5) number their names in the order of the
 * spec's tables; the server converts between these and its core's
 * (server/wire_core.c, which checks the two agree value by value). */

typedef uint32_t proto_id; /* an agent's id; 0 is never an agent */

/* A point or a velocity. The server hands its own arrays of the same layout
 * (two floats) to the encoders without copying, so GCC and clang are told a
 * proto_vec2 may alias them. */
#if defined(__GNUC__)
#define PROTO_MAY_ALIAS __attribute__((may_alias))
#else
#define PROTO_MAY_ALIAS
#endif
typedef struct PROTO_MAY_ALIAS proto_vec2 {
  float x, y;
} proto_vec2;

static inline proto_vec2 proto_v2(float x, float y) {
  proto_vec2 v = {x, y};
  return v;
}

typedef enum proto_model {
  PROTO_MODEL_KINEMATIC = 0,
  PROTO_MODEL_DYNAMIC,
  PROTO_MODEL_HEADING,
  PROTO_MODEL_COUNT
} proto_model;

typedef enum proto_behaviour_kind {
  PROTO_BEHAVIOUR_NONE = 0,
  PROTO_BEHAVIOUR_SEEK,
  PROTO_BEHAVIOUR_FLEE,
  PROTO_BEHAVIOUR_ARRIVE,
  PROTO_BEHAVIOUR_ALIGN,
  PROTO_BEHAVIOUR_VELOCITY_MATCH,
  PROTO_BEHAVIOUR_FACE,
  PROTO_BEHAVIOUR_LOOK_WHERE_GOING,
  PROTO_BEHAVIOUR_PURSUE,
  PROTO_BEHAVIOUR_EVADE,
  PROTO_BEHAVIOUR_INTERPOSE,
  PROTO_BEHAVIOUR_WANDER,
  PROTO_BEHAVIOUR_FOLLOW_PATH, /* reports only: a path is set with SET_PATH or SPAWN's path */
  PROTO_BEHAVIOUR_COUNT
} proto_behaviour_kind;

typedef enum proto_facing {
  PROTO_FACING_LOOK_WHERE_GOING = 0,
  PROTO_FACING_NONE,
  PROTO_FACING_TARGET,
  PROTO_FACING_COUNT
} proto_facing;

typedef enum proto_combine {
  PROTO_COMBINE_BLEND = 0,
  PROTO_COMBINE_PRIORITY,
  PROTO_COMBINE_COUNT
} proto_combine;

typedef enum proto_path_mode {
  PROTO_PATH_ONCE = 0,
  PROTO_PATH_LOOP,
  PROTO_PATH_PINGPONG,
  PROTO_PATH_MODE_COUNT
} proto_path_mode;

typedef enum proto_cornering {
  PROTO_CORNER_NONE = 0,
  PROTO_CORNER_ARC,
  PROTO_CORNER_LAZY,
  PROTO_CORNER_COUNT
} proto_cornering;

typedef enum proto_target_kind {
  PROTO_TARGET_NONE = 0,
  PROTO_TARGET_POINT,
  PROTO_TARGET_AGENT,
  PROTO_TARGET_KIND_COUNT
} proto_target_kind;

typedef enum proto_stuck_reaction {
  PROTO_STUCK_REPORT = 0,
  PROTO_STUCK_NUDGE,
  PROTO_STUCK_GIVE_UP,
  PROTO_STUCK_REACTION_COUNT
} proto_stuck_reaction;

typedef enum proto_arrival {
  PROTO_ARRIVAL_POINT = 0,
  PROTO_ARRIVAL_SETTLE,
  PROTO_ARRIVAL_PASS,
  PROTO_ARRIVAL_COUNT
} proto_arrival;

typedef enum proto_obstacle_kind {
  PROTO_OBSTACLE_CIRCLE = 0,
  PROTO_OBSTACLE_POLYGON,
  PROTO_OBSTACLE_WALL,
  PROTO_OBSTACLE_KIND_COUNT
} proto_obstacle_kind;

#define PROTO_PI_F                3.14159265358979323846f /* orientations are in (-PROTO_PI_F, PROTO_PI_F] */
#define PROTO_MAX_OBSTACLE_POINTS 256u                    /* points of one polygon or wall (PROTOCOL.md 17) */
#define PROTO_MAX_AGENTS          (1u << 22) /* the most agents a world holds: WELCOME max_agents <= this */
#define PROTO_MAP_MAX_OBSTACLES   65536u     /* obstacles of one map */
#define PROTO_MAP_MAX_SEGMENTS    1048576u   /* edges of one map's obstacles together */

/* ---- Constants ---------------------------------------------------------- */

#define PROTO_VERSION 1

#define PROTO_CHANNEL_RELIABLE 0 /* commands, replies, events: reliable, ordered */
#define PROTO_CHANNEL_SNAPSHOT 1 /* snapshots: unreliable, sequenced */
#define PROTO_CHANNEL_COUNT    2

#define PROTO_MAX_MESSAGE_BYTES    16384  /* larger packets are TOO_LARGE */
#define PROTO_SNAPSHOT_PART_BYTES  1200   /* a snapshot packet never exceeds this */
#define PROTO_MAX_PATH_POINTS      256    /* points of one SET_PATH / SPAWN path */
#define PROTO_MAX_NAME_BYTES       64     /* HELLO name, UTF-8 bytes */
#define PROTO_MAX_TOKEN_BYTES      1024   /* HELLO token, ASCII bytes */
#define PROTO_MAX_ERROR_TEXT_BYTES 255    /* ERROR message, UTF-8 bytes */
#define PROTO_MAX_FIELD_BYTES      63     /* ERROR field path, bytes */
#define PROTO_MAX_MAP_ENTRIES      32     /* any map on the wire */
#define PROTO_MAX_ABS_FLOAT        1.0e6f /* every float field: |v| <= this */

/* Snapshot size bounds (msgpack, worst case) used to split snapshots. */
#define PROTO_SNAPSHOT_HEADER_MAX_BYTES 40 /* array, type, tick, time, part, count, total, agents header */
#define PROTO_SNAPSHOT_AGENT_MAX_BYTES  28 /* id u32 5, x 5, y 5, theta 3, vx 5, vy 5 */

/* ---- Enumerations ------------------------------------------------------- */

typedef enum proto_msg_type {
  PROTO_MSG_HELLO = 1,
  PROTO_MSG_SPAWN = 2,
  PROTO_MSG_DESPAWN = 3,
  PROTO_MSG_SET_BEHAVIOUR = 4,
  PROTO_MSG_SET_PATH = 5,
  PROTO_MSG_SET_PARAMS = 6,
  PROTO_MSG_STOP = 7,
  PROTO_MSG_QUERY = 8,
  PROTO_MSG_PING = 9,
  PROTO_MSG_VIEW = 10,         /* what the client's delta snapshots cover */
  PROTO_MSG_SNAPSHOT_ACK = 11, /* channel 1, [11, tick], no request_id, no reply */
  PROTO_MSG_WELCOME = 32,
  PROTO_MSG_ACK = 33,
  PROTO_MSG_ERROR = 34,
  PROTO_MSG_EVENT = 35,
  PROTO_MSG_SNAPSHOT = 36,
  PROTO_MSG_DELTA = 37,  /* channel 1, to clients that said HELLO snapshots "delta" */
  PROTO_MSG_EVENTS = 38, /* channel 0: several EVENTs of one client's wake-up, and how many were lost */
  /* The map (map_msg.h, PROTOCOL.md 17). */
  PROTO_MSG_ADD_OBSTACLE = 12,    /* admin: add an obstacle to the map */
  PROTO_MSG_REMOVE_OBSTACLE = 13, /* admin: remove one by id */
  PROTO_MSG_MAP = 39,             /* channel 0: the whole map, in parts, after WELCOME */
  PROTO_MSG_MAP_CHANGED = 40      /* channel 0: one change of the map, to clients holding it */
} proto_msg_type;

/* Commands are 1..this but SNAPSHOT_ACK (11, channel 1), [type, request_id, body]. */
#define PROTO_MSG_LAST_COMMAND PROTO_MSG_REMOVE_OBSTACLE
#define PROTO_MSG_IS_COMMAND(t)                                                                              \
  ((t) >= PROTO_MSG_HELLO && (t) <= PROTO_MSG_LAST_COMMAND && (t) != PROTO_MSG_SNAPSHOT_ACK)

/* Wire error codes (positive on the wire; decoders return them negated). */
typedef enum proto_error_code {
  PROTO_OK = 0,
  PROTO_ERR_BAD_MESSAGE = 1,      /* not msgpack, not an array, bad framing, trailing bytes */
  PROTO_ERR_UNKNOWN_TYPE = 2,     /* message type not known (for this direction) */
  PROTO_ERR_BAD_FIELD = 3,        /* missing, wrong type, not finite, out of range, unknown enum/key */
  PROTO_ERR_VERSION_MISMATCH = 4, /* HELLO version != PROTO_VERSION */
  PROTO_ERR_NOT_WELCOMED = 5,     /* command before HELLO */
  PROTO_ERR_NO_SUCH_AGENT = 6,
  PROTO_ERR_WORLD_FULL = 7,
  PROTO_ERR_MODEL_MISMATCH = 8, /* behaviour / cornering does not suit the agent's model */
  PROTO_ERR_BAD_TARGET = 9,     /* behaviour target missing or not a live agent */
  PROTO_ERR_TOO_LARGE = 10,     /* message > PROTO_MAX_MESSAGE_BYTES; snapshot > capacity */
  PROTO_ERR_RATE_LIMITED = 11,  /* over the peer's command rate: not applied */
  PROTO_ERR_NOT_OWNER = 12,
  PROTO_ERR_INTERNAL = 13,
  PROTO_ERR_FORBIDDEN = 14,        /* the client's role may not send this command */
  PROTO_ERR_UNAUTHORIZED = 15,     /* HELLO token missing, forged or unreadable */
  PROTO_ERR_TOKEN_EXPIRED = 16,    /* HELLO token past its expiry */
  PROTO_ERR_QUOTA_EXCEEDED = 17,   /* the client owns its maximum of agents */
  PROTO_ERR_NO_SUCH_OBSTACLE = 18, /* REMOVE_OBSTACLE: no obstacle has this id */
  PROTO_ERR_OBSTACLE_EXISTS = 19,  /* ADD_OBSTACLE: the id is in use */
  PROTO_ERR_BLOCKED = 20,          /* a position, target or path point inside the map's geometry; an
                                      obstacle over an agent that has nowhere to go */
  PROTO_ERR_BUSY = 21,             /* the sender's queue of commands waiting to run is full: not queued */
  PROTO_ERR_COUNT
} proto_error_code;

/* ENet disconnect data. */
typedef enum proto_disconnect_reason {
  PROTO_DISCONNECT_NONE = 0,
  PROTO_DISCONNECT_SHUTDOWN = 1,
  PROTO_DISCONNECT_ABUSE = 2,
  PROTO_DISCONNECT_TIMEOUT = 3,
  PROTO_DISCONNECT_VERSION = 4,
  PROTO_DISCONNECT_FULL = 5,
  PROTO_DISCONNECT_KICKED = 6,
  PROTO_DISCONNECT_AUTH_FAILED = 7, /* HELLO token refused */
  PROTO_DISCONNECT_TOO_SLOW = 8,    /* more replies and events queued than the client read */
  PROTO_DISCONNECT_COUNT
} proto_disconnect_reason;

/* EVENT codes (PROTOCOL.md 7.4). */
typedef enum proto_event_code {
  PROTO_EVENT_ARRIVED = 0,       /* data 0 */
  PROTO_EVENT_WAYPOINT = 1,      /* data = node index reached */
  PROTO_EVENT_PATH_FINISHED = 2, /* data = last node index */
  PROTO_EVENT_REVERSED = 3,      /* data = node index it turned at */
  PROTO_EVENT_SPAWNED = 4,       /* data = owner client id */
  PROTO_EVENT_DESPAWNED = 5,     /* data 0 */
  PROTO_EVENT_STUCK = 6,         /* data = the path node aimed at (0 without a path) */
  PROTO_EVENT_PLANNED = 7,       /* GOTO: first route; data = its length in cm (saturated) */
  PROTO_EVENT_REPLANNED = 8,     /* GOTO: a new route; data = its length in cm (saturated) */
  PROTO_EVENT_UNREACHABLE = 9,   /* GOTO: no route; data = proto_goto_reason of the plan */
  PROTO_EVENT_COUNT
} proto_event_code;

/* ---- Decoded field groups ----------------------------------------------- */

/* Bits of proto_limits.present, in wire-name order. */
enum {
  PROTO_LIMIT_MAX_SPEED = 1u << 0,
  PROTO_LIMIT_MAX_ACCELERATION = 1u << 1,
  PROTO_LIMIT_MAX_ROTATION = 1u << 2,
  PROTO_LIMIT_MAX_ANGULAR_ACCELERATION = 1u << 3,
  PROTO_LIMIT_RADIUS = 1u << 4,
  PROTO_LIMIT_ALL = (1u << 5) - 1u
};
#define PROTO_LIMIT_COUNT 5

/* An agent's limits (PROTOCOL.md 5.1), in the order of the PROTO_LIMIT_* bits. */
typedef struct proto_limit_values {
  float max_speed;                /* m/s, > 0 */
  float max_acceleration;         /* m/s^2, > 0 */
  float max_rotation;             /* rad/s, > 0 */
  float max_angular_acceleration; /* rad/s^2, > 0 */
  float radius;                   /* m, > 0 */
} proto_limit_values;

/* Partial limits: only fields whose bit is set in present were sent. */
typedef struct proto_limits {
  uint32_t present; /* PROTO_LIMIT_* bits */
  proto_limit_values v;
} proto_limits;

/* Bits of proto_params.present, one per proto_param_values field, in struct order. */
enum {
  PROTO_PARAM_TIME_TO_TARGET = 1u << 0,
  PROTO_PARAM_TARGET_RADIUS = 1u << 1,
  PROTO_PARAM_SLOW_RADIUS = 1u << 2,
  PROTO_PARAM_KINEMATIC_TIME_TO_TARGET = 1u << 3,
  PROTO_PARAM_ALIGN_TARGET_RADIUS = 1u << 4,
  PROTO_PARAM_ALIGN_SLOW_RADIUS = 1u << 5,
  PROTO_PARAM_ALIGN_TIME_TO_TARGET = 1u << 6,
  PROTO_PARAM_MAX_PREDICTION = 1u << 7,
  PROTO_PARAM_PANIC_RADIUS = 1u << 8,
  PROTO_PARAM_WANDER_OFFSET = 1u << 9,
  PROTO_PARAM_WANDER_RADIUS = 1u << 10,
  PROTO_PARAM_WANDER_RATE = 1u << 11,
  PROTO_PARAM_SEPARATION_RADIUS = 1u << 12,
  PROTO_PARAM_TURN_TRIGGER_DISTANCE = 1u << 13,
  PROTO_PARAM_PATH_RECOVER_STRENGTH = 1u << 14,
  PROTO_PARAM_ALL = (1u << 15) - 1u
};
#define PROTO_PARAM_COUNT 15

/* PARAMS keys that belong to the agent rather than to its behaviour's
 * tunables: avoidance of other agents, the wall feeler, stuck detection and
 * arrival (PROTOCOL.md 5.2). Their bits follow the PROTO_PARAM_* ones in
 * proto_params.present. */
enum {
  PROTO_PARAM_AVOID_WEIGHT = 1u << 15,
  PROTO_PARAM_AVOID_HORIZON = 1u << 16,
  PROTO_PARAM_AVOID_PRIORITY = 1u << 17,
  PROTO_PARAM_WALL_LOOKAHEAD = 1u << 18,
  PROTO_PARAM_WALL_MARGIN = 1u << 19,
  PROTO_PARAM_STUCK_TIME = 1u << 20,
  PROTO_PARAM_STUCK_REACTION = 1u << 21,
  PROTO_PARAM_ARRIVAL = 1u << 22,
  PROTO_PARAM_TUNING = ((1u << 23) - 1u) & ~PROTO_PARAM_ALL
};
#define PROTO_TUNING_COUNT 8
#define PROTO_PARAM_KEYS   (PROTO_PARAM_ALL | PROTO_PARAM_TUNING) /* every PARAMS key */

typedef struct proto_tuning {
  float avoid_weight;     /* >= 0 */
  float avoid_horizon;    /* s, > 0 */
  uint8_t avoid_priority; /* 0..255 */
  float wall_lookahead;   /* s, >= 0 */
  float wall_margin;      /* m, >= 0 */
  float stuck_time;       /* s, >= 0 */
  uint8_t stuck_reaction; /* proto_stuck_reaction */
  uint8_t arrival;        /* proto_arrival */
} proto_tuning;

/* The behaviours' tunables (PROTOCOL.md 5.2), in the order of the
 * PROTO_PARAM_* bits. */
typedef struct proto_param_values {
  float time_to_target;
  float target_radius;
  float slow_radius;
  float kinematic_time_to_target;
  float align_target_radius;
  float align_slow_radius;
  float align_time_to_target;
  float max_prediction;
  float panic_radius;
  float wander_offset;
  float wander_radius;
  float wander_rate;
  float separation_radius;
  float turn_trigger_distance;
  float path_recover_strength;
} proto_param_values;

/* Partial params: only fields whose bit is set in present were sent. */
typedef struct proto_params {
  uint32_t present; /* PROTO_PARAM_* bits, then PROTO_PARAM_TUNING's */
  proto_param_values v;
  proto_tuning tuning;
} proto_params;

/* Bits of proto_behaviour.present. */
enum {
  PROTO_BHV_TARGET = 1u << 0,            /* target [x, y] */
  PROTO_BHV_TARGET_AGENT = 1u << 1,      /* target_agent */
  PROTO_BHV_TARGET_AGENT2 = 1u << 2,     /* target_agent2 (only with target_agent) */
  PROTO_BHV_ORIENTATION = 1u << 3,       /* orientation */
  PROTO_BHV_FACING = 1u << 4,            /* facing */
  PROTO_BHV_COMBINE = 1u << 5,           /* combine */
  PROTO_BHV_SEPARATION_WEIGHT = 1u << 6, /* separation_weight */
  PROTO_BHV_MAX_NEIGHBOURS = 1u << 7,    /* max_neighbours */
  PROTO_BHV_NODE_RADIUS = 1u << 8,       /* node_radius (goto only) */
  PROTO_BHV_CORNERING = 1u << 9,         /* cornering (goto only) */
  PROTO_BHV_REPLAN_DISTANCE = 1u << 10   /* replan_distance (goto only) */
};

/* "goto" (PROTOCOL.md 5.3, 5.6): a behaviour kind of the wire only. The
 * server plans a route on the map (server/core/planner.h) and the agent
 * follows it as its own once path; QUERY reports it. */
#define PROTO_BEHAVIOUR_GOTO 100u

typedef struct proto_behaviour {
  uint32_t present;        /* PROTO_BHV_* bits */
  uint8_t kind;            /* proto_behaviour_kind, never FOLLOW_PATH; or PROTO_BEHAVIOUR_GOTO */
  uint8_t facing;          /* proto_facing */
  uint8_t combine;         /* proto_combine */
  uint8_t max_neighbours;  /* 0..255 */
  float separation_weight; /* >= 0 */
  proto_vec2 target;       /* m */
  float orientation;       /* rad, wrapped into (-pi, pi] */
  proto_id target_agent;
  proto_id target_agent2;
  float node_radius;     /* m, > 0: goto's route corners are passed within this (0.5) */
  uint8_t cornering;     /* proto_cornering: goto's (none) */
  float replan_distance; /* m, >= 0: goto replans when its target agent moved this far (2) */
  proto_params params;
} proto_behaviour;

typedef struct proto_path {
  uint32_t count;    /* 1..PROTO_MAX_PATH_POINTS */
  float radius;      /* m, > 0 */
  uint8_t mode;      /* proto_path_mode */
  uint8_t cornering; /* proto_cornering */
  proto_params params;
  proto_vec2 points[PROTO_MAX_PATH_POINTS]; /* m */
} proto_path;

/* ---- Client -> server commands ------------------------------------------ */

/* HELLO "snapshots": what the client receives on channel 1. */
typedef enum proto_snapshot_mode {
  PROTO_SNAPSHOTS_FULL = 0,  /* SNAPSHOT: every agent, every time (the default) */
  PROTO_SNAPSHOTS_DELTA = 1, /* DELTA against acknowledged frames; the client sends SNAPSHOT_ACK */
  PROTO_SNAPSHOTS_COUNT
} proto_snapshot_mode;

typedef struct proto_hello {
  uint32_t version;
  uint8_t has_snapshots;                 /* "snapshots" sent */
  uint8_t snapshots;                     /* proto_snapshot_mode, FULL when not sent */
  char name[PROTO_MAX_NAME_BYTES + 1];   /* valid UTF-8, no NUL inside, NUL-terminated */
  uint8_t has_token;                     /* "token" sent (it may be "") */
  char token[PROTO_MAX_TOKEN_BYTES + 1]; /* printable ASCII, NUL-terminated */
} proto_hello;

/* Bits of proto_spawn.present. */
enum {
  PROTO_SPAWN_ORIENTATION = 1u << 0,
  PROTO_SPAWN_VX = 1u << 1,
  PROTO_SPAWN_VY = 1u << 2,
  PROTO_SPAWN_LIMITS = 1u << 3,
  PROTO_SPAWN_BEHAVIOUR = 1u << 4,
  PROTO_SPAWN_PATH = 1u << 5
};

typedef struct proto_spawn {
  uint32_t present;    /* PROTO_SPAWN_* bits */
  uint8_t model;       /* proto_model */
  proto_vec2 position; /* m (required) */
  float orientation;   /* rad, wrapped (0) */
  proto_vec2 velocity; /* m/s (0, 0) */
  proto_limits limits;
  proto_behaviour behaviour;
  proto_path path;
} proto_spawn;

/* DESPAWN, STOP, QUERY. */
typedef struct proto_agent_cmd {
  proto_id agent;
} proto_agent_cmd;

typedef struct proto_set_behaviour {
  proto_id agent;
  proto_behaviour behaviour;
} proto_set_behaviour;

typedef struct proto_set_path {
  proto_id agent;
  proto_path path;
} proto_set_path;

typedef struct proto_set_params {
  proto_id agent;
  proto_limits limits; /* limits.present == 0: not sent */
  proto_params params; /* params.present == 0: not sent */
} proto_set_params;

typedef struct proto_ping {
  uint64_t client_time_us;
} proto_ping;

/* VIEW: which agents the client's delta snapshots consider. */
typedef enum proto_view_kind {
  PROTO_VIEW_ALL = 0, /* {"all": true}: the whole world (the default) */
  PROTO_VIEW_CENTRE,  /* {"centre": [x, y], "radius": r} */
  PROTO_VIEW_FOLLOW,  /* {"follow": agent, "radius": r}: centred on the agent as it moves */
  PROTO_VIEW_KIND_COUNT
} proto_view_kind;

typedef struct proto_view {
  uint8_t kind;      /* proto_view_kind */
  proto_vec2 centre; /* m, CENTRE */
  proto_id follow;   /* FOLLOW */
  float radius;      /* m, > 0; CENTRE and FOLLOW */
} proto_view;

/* ADD_OBSTACLE: an obstacle as in the map (map_msg.h). */
typedef struct proto_add_obstacle {
  uint32_t id;    /* >= 1 */
  uint8_t kind;   /* proto_obstacle_kind */
  uint32_t count; /* points; a circle: 1, its centre */
  float radius;   /* m, circle only, > 0 */
  proto_vec2 points[PROTO_MAX_OBSTACLE_POINTS];
} proto_add_obstacle;

/* REMOVE_OBSTACLE. */
typedef struct proto_remove_obstacle {
  uint32_t id;
} proto_remove_obstacle;

typedef struct proto_command {
  uint8_t type; /* proto_msg_type, 1..9 */
  uint32_t request_id;
  union {
    proto_hello hello;
    proto_spawn spawn;
    proto_agent_cmd despawn;
    proto_set_behaviour set_behaviour;
    proto_set_path set_path;
    proto_set_params set_params;
    proto_agent_cmd stop;
    proto_agent_cmd query;
    proto_ping ping;
    proto_view view;
    proto_add_obstacle add_obstacle;
    proto_remove_obstacle remove_obstacle;
  };
} proto_command;

/* ---- Server -> client messages ------------------------------------------ */

typedef struct proto_welcome {
  uint32_t request_id; /* of the HELLO */
  uint32_t client_id;
  uint32_t tick_rate;              /* Hz */
  uint32_t snapshot_rate;          /* Hz */
  proto_vec2 world_min, world_max; /* m */
  uint64_t tick;                   /* last completed tick */
  uint64_t server_time_us;
  uint32_t protocol; /* PROTO_VERSION */
  uint32_t
      max_agents; /* the world's capacity (--max-agents): size buffers by it; 0: not sent (optional key) */
} proto_welcome;

/* GOTO in a QUERY reply (PROTOCOL.md 6.8); values mirror planner.h. */
typedef enum proto_goto_status {
  PROTO_GOTO_QUEUED = 1,      /* waiting for its first route */
  PROTO_GOTO_FOLLOWING = 2,   /* following a route */
  PROTO_GOTO_UNREACHABLE = 3, /* the last plan found no route: at rest, out of GOTO */
  PROTO_GOTO_STATUS_END
} proto_goto_status;

typedef enum proto_goto_reason {
  PROTO_GOTO_NEW = 0,          /* the GOTO command */
  PROTO_GOTO_MAP = 1,          /* the map changed across the route */
  PROTO_GOTO_TARGET_MOVED = 2, /* the target agent moved beyond replan_distance */
  PROTO_GOTO_STUCK = 3,        /* the agent was stuck */
  PROTO_GOTO_CONTINUE = 4,     /* the followed part of a long route ended */
  PROTO_GOTO_REASON_COUNT
} proto_goto_reason;

#define PROTO_MAX_ROUTE_POINTS PROTO_MAX_PATH_POINTS /* a route is followed in parts of --max-path-points */

typedef struct proto_goto_report {
  uint8_t status;                           /* proto_goto_status */
  uint8_t reason;                           /* proto_goto_reason of the last plan, or of the one waiting */
  uint8_t target_kind;                      /* PROTO_TARGET_POINT or PROTO_TARGET_AGENT */
  proto_vec2 target;                        /* m, POINT */
  proto_id target_agent;                    /* AGENT */
  uint8_t partial;                          /* FOLLOWING: the route is the first part of a longer one */
  proto_vec2 goal;                          /* m, FOLLOWING: where the route ends */
  uint32_t route_count;                     /* FOLLOWING: 1..PROTO_MAX_ROUTE_POINTS; else 0 */
  proto_vec2 route[PROTO_MAX_ROUTE_POINTS]; /* m, the corners then the goal */
  uint8_t queued;                           /* a plan request of the agent waits: queue_position is set */
  uint32_t queue_position;                  /* requests ahead of it in the plan queue (0: the next served) */
} proto_goto_report;

/* An agent's motion state in a QUERY reply. */
typedef struct proto_state {
  proto_vec2 position; /* m */
  float orientation;   /* rad, (-pi, pi] */
  proto_vec2 velocity; /* m/s */
  float rotation;      /* rad/s, counter-clockwise positive */
} proto_state;

/* Body of the ACK of a QUERY. */
typedef struct proto_agent_report {
  proto_id agent;
  uint64_t tick;     /* last completed tick: the state is the one after it */
  uint8_t model;     /* proto_model */
  uint8_t behaviour; /* proto_behaviour_kind (FOLLOW_PATH allowed), or PROTO_BEHAVIOUR_GOTO */
  uint8_t arrived;   /* 0 / 1 */
  int32_t path_node; /* -1: no path (nil on the wire) */
  proto_state state;
  proto_limit_values limits;
  uint32_t owner; /* client id, 0 = server */
  /* The agent's avoidance, wall feeler and stuck detection (PROTOCOL.md 6.8
   * "tuning": the seven tuning keys of 5.2); the server always sends it. */
  uint8_t has_tuning;
  proto_tuning tuning;
  uint8_t has_goto; /* the agent is in GOTO, or its last GOTO was unreachable: go is set */
  proto_goto_report go;
} proto_agent_report;

typedef struct proto_pong {
  uint64_t client_time_us; /* echoed */
  uint64_t server_time_us;
  uint64_t tick; /* last completed tick */
} proto_pong;

typedef struct proto_ack {
  uint32_t request_id;
  uint8_t command;          /* proto_msg_type acknowledged (2..10) */
  proto_id agent;           /* every command but PING and VIEW (their bodies have no agent) */
  proto_agent_report query; /* QUERY only (query.agent == agent) */
  proto_pong pong;          /* PING only */
  uint8_t target_lost;      /* SET_PARAMS only: applied, but the behaviour's target agent is gone */
  /* ADD_OBSTACLE and REMOVE_OBSTACLE: {obstacle, version[, moved]} */
  uint32_t obstacle;    /* its id */
  uint32_t map_version; /* the map's version after the change */
  uint32_t moved;       /* ADD_OBSTACLE: agents moved out of it */
} proto_ack;

typedef struct proto_error_msg {
  uint32_t request_id; /* 0 when the failing message's id could not be read */
  uint32_t code;       /* proto_error_code */
  char message[PROTO_MAX_ERROR_TEXT_BYTES + 1];
  char field[PROTO_MAX_FIELD_BYTES + 1]; /* "" when nil */
  uint8_t has_field;
} proto_error_msg;

typedef struct proto_event {
  uint64_t tick;
  uint8_t code; /* proto_event_code */
  proto_id agent;
  uint32_t data;
} proto_event;

typedef struct proto_snapshot_header {
  uint64_t tick;
  uint64_t server_time_us;
  uint32_t part_index;  /* < part_count */
  uint32_t part_count;  /* >= 1 */
  uint32_t agent_total; /* agents in all parts of this tick */
} proto_snapshot_header;

/* One agent of a snapshot, in SI units. */
typedef struct proto_pose {
  proto_id id;
  float x, y;   /* m */
  float theta;  /* rad */
  float vx, vy; /* m/s */
} proto_pose;

/* The same, as on the wire. */
typedef struct proto_pose_q {
  proto_id id;
  int32_t x, y;   /* cm */
  int16_t theta;  /* pi/32768 rad */
  int32_t vx, vy; /* cm/s */
} proto_pose_q;

typedef struct proto_snapshot {
  proto_snapshot_header header;
  uint32_t count;          /* agents in this part */
  const proto_pose *poses; /* encode: the poses; decode: the caller's array */
} proto_snapshot;

typedef struct proto_server_msg {
  uint8_t type; /* PROTO_MSG_WELCOME..PROTO_MSG_SNAPSHOT */
  union {
    proto_welcome welcome;
    proto_ack ack;
    proto_error_msg error;
    proto_event event;
    proto_snapshot snapshot;
  };
} proto_server_msg;

/* ---- Decode errors ------------------------------------------------------- */

typedef struct proto_error_info {
  int code;     /* proto_error_code, PROTO_OK on success */
  uint8_t type; /* message type if it was read, else 0 */
  /* Commands: set whenever the packet is at most PROTO_MAX_MESSAGE_BYTES and
   * starts as a msgpack array of 2 or more elements whose second element is an
   * unsigned integer <= UINT32_MAX, whatever the rest (PROTOCOL.md 7.3). */
  uint8_t has_request_id;
  uint32_t request_id; /* valid when has_request_id */
  const char *reason;  /* static text, e.g. "not finite", "missing" */
  /* Field path (PROTOCOL.md 7.3), e.g. "behaviour.params.slow_radius",
   * "path.points[3][1]", "type", "request_id", "body"; "" (nil on the wire) for
   * faults of the packet as a whole. */
  char field[PROTO_MAX_FIELD_BYTES + 1];
} proto_error_info;

/* "BAD_FIELD" etc.; accepts the code or its negation; "UNKNOWN" otherwise. */
const char *proto_error_name(int code);
/* One sentence describing the code. */
const char *proto_error_text(int code);
const char *proto_disconnect_name(uint32_t reason);
const char *proto_msg_type_name(uint32_t type); /* "HELLO", ...; NULL if unknown */

/* Wire names of the enums ("dynamic", "seek", "pingpong", ...); NULL if out of range. */
const char *proto_model_name(uint32_t model);
const char *proto_behaviour_name(uint32_t kind); /* includes "follow_path" (reports only) and "goto" */
const char *proto_facing_name(uint32_t facing);
const char *proto_combine_name(uint32_t combine);
const char *proto_path_mode_name(uint32_t mode);
const char *proto_cornering_name(uint32_t cornering);
const char *proto_event_name(uint32_t code);         /* "arrived", ... */
const char *proto_goto_status_name(uint32_t status); /* "queued", "following", "unreachable" */
const char *proto_goto_reason_name(uint32_t reason); /* "new", "map", "target_moved", "stuck", "continue" */
const char *proto_param_name(uint32_t index);        /* proto_param_values field, index < PROTO_PARAM_COUNT */
const char *proto_limit_name(uint32_t index);        /* proto_limit_values field, index < PROTO_LIMIT_COUNT */

/* "report", "nudge", "give_up"; NULL if out of range. */
const char *proto_stuck_reaction_name(uint32_t reaction);
const char *proto_arrival_name(uint32_t arrival);

/* ---- Encoders ------------------------------------------------------------ */

/* Any client command; only present optional fields are written. */
size_t proto_encode_command(uint8_t *buf, size_t cap, const proto_command *cmd);

size_t proto_encode_welcome(uint8_t *buf, size_t cap, const proto_welcome *w);
size_t proto_encode_ack(uint8_t *buf, size_t cap, const proto_ack *a);
/* message and field may be NULL ("" and nil); both are truncated to their caps. */
/* The request_id of a command packet as an ERROR names it (PROTOCOL.md 7.3):
 * 1 and *out when the packet has one, else 0. Reads no further. */
int proto_peek_request_id(const uint8_t *data, size_t len, uint32_t *out);
size_t proto_encode_error(uint8_t *buf, size_t cap, uint32_t request_id, int code, const char *message,
                          const char *field);
size_t proto_encode_event(uint8_t *buf, size_t cap, const proto_event *e);
size_t proto_encode_snapshot(uint8_t *buf, size_t cap, const proto_snapshot_header *h,
                             const proto_pose *poses, uint32_t count);
/* The agents of a snapshot as arrays (the server's agent store, read in
 * place): agent i is id[i] at (px[i], py[i]) facing theta[i], moving at
 * (vx[i], vy[i]). */
typedef struct proto_pose_view {
  uint32_t count;
  const proto_id *id;
  const float *px, *py; /* m */
  const float *vx, *vy; /* m/s */
  const float *theta;   /* rad */
} proto_pose_view;

/* Agents straight from a view: the indices indices[first..first+count) or,
 * when indices is NULL, first..first+count. */
size_t proto_encode_snapshot_view(uint8_t *buf, size_t cap, const proto_snapshot_header *h,
                                  const proto_pose_view *view, const uint32_t *indices, uint32_t first,
                                  uint32_t count);
/* Any server message (dispatch on msg->type). */
size_t proto_encode_server_msg(uint8_t *buf, size_t cap, const proto_server_msg *msg);

/* Agents that always fit in one snapshot packet of part_bytes bytes (worst-case
 * sizes); 0 if even the header does not fit. 41 for 1200 bytes. */
uint32_t proto_snapshot_capacity(size_t part_bytes);

/* How many agents, from position `first` of the view (through indices when not
 * NULL) and at most `available`, fit in one snapshot packet of part_bytes bytes
 * at their actual encoded sizes (header counted at its worst case). At least
 * one whenever part_bytes >= the worst-case header plus one worst-case agent. */
uint32_t proto_snapshot_fit(const proto_pose_view *view, const uint32_t *indices, uint32_t first,
                            uint32_t available, size_t part_bytes);

/* ---- Decoders (untrusted input) ------------------------------------------- */

/* Client -> server. Strict: unknown keys, duplicate keys and unknown enum strings
 * are BAD_FIELD. err may be NULL. */
int proto_decode_command(const uint8_t *data, size_t len, proto_command *out, proto_error_info *err);

/* Server -> client. Unknown keys are skipped (forward compatible). For a
 * SNAPSHOT, poses (capacity pose_cap, may be NULL when 0) receives the agents
 * and out->snapshot.poses points at it; more agents than pose_cap is TOO_LARGE. */
int proto_decode_server_msg(const uint8_t *data, size_t len, proto_server_msg *out, proto_pose *poses,
                            uint32_t pose_cap, proto_error_info *err);

/* SNAPSHOT only; poses and/or qposes (either may be NULL) receive the agents. */
int proto_decode_snapshot(const uint8_t *data, size_t len, proto_snapshot_header *h, proto_pose *poses,
                          proto_pose_q *qposes, uint32_t cap, uint32_t *count, proto_error_info *err);

/* ---- Quantization ----------------------------------------------------------- */

/* metres (or m/s) -> round(v * 100), saturated to int32; NaN -> 0. */
int32_t proto_quantize_cm(float v);
float proto_dequantize_cm(int32_t q);
/* rad -> round(wrap(theta) * 32768 / pi), 32768 -> -32768. NaN -> 0. */
int16_t proto_quantize_angle(float theta);
/* q * pi / 32768, in [-pi, pi). */
float proto_dequantize_angle(int16_t q);
proto_pose_q proto_quantize_pose(const proto_pose *p);
proto_pose proto_dequantize_pose(const proto_pose_q *q);

/* ---- Delta snapshots (PROTOCOL.md 7.6) ----------------------------------- */

/* Bits of a DELTA change's mask: which fields follow, in this order. */
enum {
  PROTO_DELTA_X = 1u << 0,
  PROTO_DELTA_Y = 1u << 1,
  PROTO_DELTA_THETA = 1u << 2,
  PROTO_DELTA_VX = 1u << 3,
  PROTO_DELTA_VY = 1u << 4,
  PROTO_DELTA_OMEGA = 1u << 5,
  PROTO_DELTA_FIELDS = (1u << 6) - 1u,
  PROTO_DELTA_ABSOLUTE = 1u << 6, /* masked fields are values, unmasked ones are 0 */
  PROTO_DELTA_MASK_ALL = (1u << 7) - 1u
};
#define PROTO_DELTA_FIELD_COUNT 6

/* Longest dead-reckoning horizon: records older than this predict as if this old. */
#define PROTO_DR_MAX_DT_US 60000000ull
/* Worst-case DELTA header: fixarray, type, tick, time, baseline, index, count,
 * and the two array headers. */
#define PROTO_DELTA_HEADER_MAX_BYTES 49
/* Worst-case change: id 5, mask 1, x 5, y 5, theta 3, vx 5, vy 5, omega 5. */
#define PROTO_DELTA_ENTRY_MAX_BYTES 34

/* An agent as a delta client knows it: quantized state and the server time it
 * refers to. The client predicts it forward (proto_record_predict). */
typedef struct proto_record {
  proto_id id;
  int32_t x, y;     /* cm */
  int32_t vx, vy;   /* cm/s */
  int32_t omega;    /* angular velocity, pi/4096 rad/s (proto_quantize_omega) */
  int16_t theta;    /* pi/32768 rad */
  uint64_t time_us; /* server time of the frame that last refreshed it */
} proto_record;

/* One change as on the wire (before the id difference). */
typedef struct proto_delta_entry {
  proto_id id;
  uint8_t mask;                       /* PROTO_DELTA_* */
  int32_t v[PROTO_DELTA_FIELD_COUNT]; /* x, y, theta, vx, vy, omega; 0 where not masked */
} proto_delta_entry;

typedef struct proto_delta_header {
  uint64_t tick;           /* >= 1 */
  uint64_t server_time_us; /* the frame's time: every change refers to it */
  uint64_t baseline_tick;  /* the frame the changes are against; 0: none (start from nothing) */
  uint32_t part_index;     /* < part_count */
  uint32_t part_count;     /* >= 1 */
} proto_delta_header;

/* rad/s -> round(omega * 4096 / pi), saturated to int32; NaN -> 0. */
int32_t proto_quantize_omega(float omega);
float proto_dequantize_omega(int32_t q);
/* The record of an agent's state at time_us (quantized as in PROTOCOL.md 3). */
proto_record proto_record_from_state(proto_id id, float x, float y, float theta, float vx, float vy,
                                     float omega, uint64_t time_us);
/* Dead reckoning in exact integer arithmetic, the same for server and client:
 * dt = clamp(t_us - time_us, 0, PROTO_DR_MAX_DT_US); x += round(vx * dt / 1e6),
 * y likewise, theta += round(omega * 8 * dt / 1e6) wrapped into int16;
 * velocities and time_us unchanged. x and y saturate at the int32 range. */
proto_record proto_record_predict(const proto_record *r, uint64_t t_us);
/* The change that turns base (NULL: none, an ABSOLUTE change) into now at
 * time_us; fields equal to the prediction are left out of the mask. */
proto_delta_entry proto_delta_diff(const proto_record *base, const proto_record *now, uint64_t time_us);
/* Applies a change: base is the baseline's record of e->id, NULL if it has
 * none. 0 with *out (time_us = the frame's time), or -1 when the change does
 * not apply (a non-absolute change without a base, or a value leaving its
 * range). */
int proto_delta_apply(const proto_record *base, const proto_delta_entry *e, uint64_t time_us,
                      proto_record *out);
/* The pose a record gives at its own time (SI units). */
proto_pose proto_record_pose(const proto_record *r);

/* Encoded size of a change whose id follows prev_id in its array. */
size_t proto_delta_entry_size(const proto_delta_entry *e, proto_id prev_id);
/* Encoded size of a removed id following prev_id. */
size_t proto_delta_removed_size(proto_id id, proto_id prev_id);

/* One DELTA part. entries and removed must each be in strictly increasing id
 * order (else 0). */
size_t proto_encode_delta(uint8_t *buf, size_t cap, const proto_delta_header *h,
                          const proto_delta_entry *entries, uint32_t count, const proto_id *removed,
                          uint32_t removed_count);
/* Strict: bad framing, a mask above PROTO_DELTA_MASK_ALL, a field out of its
 * range, ids not strictly increasing, a change cut short, part_index >=
 * part_count, tick 0 or baseline_tick >= tick are errors. More changes than cap
 * or removals than removed_cap is TOO_LARGE. entries / removed may be NULL when
 * their cap is 0. */
int proto_decode_delta(const uint8_t *data, size_t len, proto_delta_header *h, proto_delta_entry *entries,
                       uint32_t cap, uint32_t *count, proto_id *removed, uint32_t removed_cap,
                       uint32_t *removed_count, proto_error_info *err);

/* Frames a SNAPSHOT_ACK can name as merged (PROTOCOL.md 6.11): the ring's other frames. */
#define PROTO_ACK_MAX_MERGED 31

/* SNAPSHOT_ACK: the client rebuilt frame `tick`; with has_merged, it follows
 * the merge rule of PROTOCOL.md 7.6 and merged these frames into it, given as
 * steps back from tick (tick - merged tick), strictly increasing. */
typedef struct proto_snapshot_ack {
  uint64_t tick; /* >= 1 */
  uint8_t has_merged;
  uint32_t merged_count; /* <= PROTO_ACK_MAX_MERGED */
  uint64_t merged_step[PROTO_ACK_MAX_MERGED];
} proto_snapshot_ack;

/* [11, tick] without has_merged, else [11, tick, [steps]]. 0 when a's fields are out of range. */
size_t proto_encode_snapshot_ack(uint8_t *buf, size_t cap, const proto_snapshot_ack *a);
/* Strict: tick >= 1, at most PROTO_ACK_MAX_MERGED steps, each >= 1, < tick
 * and above the previous one; nothing else. */
int proto_decode_snapshot_ack(const uint8_t *data, size_t len, proto_snapshot_ack *a, proto_error_info *err);

/* ---- EVENTS (38), PROTOCOL.md 7.4 ----------------------------------------------------------
 *
 *     [38 EVENTS, lost, [tick, event_code, agent_id, data, tick, ...]]
 *
 * Several events for one client in one message, 4 integers each, in the order
 * they happened; lost: events for this client the server dropped since its
 * previous EVENT or EVENTS (the client was behind), 0 normally. */
#define PROTO_EVENTS_MAX 512 /* events in one EVENTS message: at most 21 bytes each, under 16384 */

/* 0 when an event's code is out of range, count > PROTO_EVENTS_MAX or buf is too small. */
size_t proto_encode_events(uint8_t *buf, size_t cap, uint32_t lost, const proto_event *events,
                           uint32_t count);
/* Strict: 1..PROTO_EVENTS_MAX events (0 only with lost > 0), codes in range.
 * TOO_LARGE when there are more than cap. */
int proto_decode_events(const uint8_t *data, size_t len, uint32_t *lost, proto_event *events, uint32_t cap,
                        uint32_t *count, proto_error_info *err);

/* The message type of a packet (its array's first element) without decoding
 * the rest; 0 when the packet does not start that way. */
uint32_t proto_message_type(const uint8_t *data, size_t len);

#endif /* PROTO_PROTOCOL_H */

/* steerd/client.h: libsteerd-client, the C client of the steerd movement server.
 *
 * The one public header of the library. It depends on nothing but <stdint.h>:
 * no protocol, ENet or server headers. Written for foreign callers (C#, C++,
 * engine plugins):
 *   - opaque handle: steerdc_client, made by steerdc_create, freed by steerdc_destroy;
 *   - plain structs of fixed-width fields (no pointers inside), arrays + counts;
 *   - errors are negative return values, steerdc_strerror() turns them into text;
 *   - no callbacks: the caller polls. Once per game frame:
 *
 *       steerdc_update(c, 0);                              network: never blocks with 0
 *       n = steerdc_poll_states(c, 0, states, cap, &info); agents interpolated at render time
 *       m = steerdc_poll_events(c, events, cap);           arrived, waypoint, spawned, ...
 *       k = steerdc_poll_replies(c, replies, cap);         ACK / ERROR of your commands
 *
 * Commands (spawn, set_behaviour, ...) return at once with a request id; their
 * reply comes later through steerdc_poll_replies(), or steerdc_wait_reply()
 * blocks for it. Snapshots (full or delta, chosen in the config) are
 * reassembled, delta frames rebuilt, merged and acknowledged inside the
 * library; every complete frame goes into an interpolation buffer with an
 * adaptive render delay, so the states steerdc_poll_states() returns are
 * smooth and can be drawn as they are.
 *
 * Units and axes (PROTOCOL.md 3): metres, seconds, radians; a 2D world with x to
 * the right and y up, angles counter-clockwise, heading theta along (cos, sin).
 * Engines (the README's "Getting started" has the details):
 *   Unity   (left-handed, y up):   position (x, 0, y), yaw degrees = 90 - theta * 180/pi
 *   Godot 4 (right-handed, y up):  3D position (x, 0, -y), rotation.y = theta - pi/2;
 *                                  2D position (x, -y), rotation = -theta
 *   Unreal  (left-handed, z up, cm): location (100 x, -100 y, 0), yaw degrees = -theta * 180/pi
 *
 * Threads: one client must be used from one thread at a time; the library
 * starts no threads and calls no code of yours. Different clients are
 * independent. All times are microseconds; "local" times are of
 * steerdc_now_us()'s monotonic clock, "server" times of the server's clock.
 *
 * ABI: the shared library's soname carries STEERDC_VERSION_MAJOR; a change
 * that breaks the ABI bumps it. Check steerdc_version() at start-up. */
#ifndef STEERD_CLIENT_PUBLIC_H
#define STEERD_CLIENT_PUBLIC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(STEERDC_SHARED)
#ifdef STEERDC_BUILDING
#define STEERDC_API __declspec(dllexport)
#else
#define STEERDC_API __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define STEERDC_API __attribute__((visibility("default")))
#else
#define STEERDC_API
#endif

#define STEERDC_VERSION_MAJOR 1
#define STEERDC_VERSION_MINOR 0
#define STEERDC_VERSION_PATCH 0
/* major << 16 | minor << 8 | patch */
#define STEERDC_VERSION ((STEERDC_VERSION_MAJOR << 16) | (STEERDC_VERSION_MINOR << 8) | STEERDC_VERSION_PATCH)

/* The library's STEERDC_VERSION (compare its major with the header's). */
STEERDC_API uint32_t steerdc_version(void);

/* ---- Errors ------------------------------------------------------------------------- */

typedef enum steerdc_error {
  STEERDC_OK = 0,
  STEERDC_EINVAL = -1,        /* bad argument or configuration */
  STEERDC_ENOMEM = -2,        /* out of memory */
  STEERDC_ENET = -3,          /* ENet could not create the host or the peer */
  STEERDC_ERESOLVE = -4,      /* host name did not resolve */
  STEERDC_ETIMEDOUT = -5,     /* no answer within the timeout */
  STEERDC_ENOTCONN = -6,      /* not connected (yet) */
  STEERDC_EDISCONNECTED = -7, /* the connection ended: steerdc_disconnect_reason() */
  STEERDC_EENCODE = -8,       /* the command did not encode (a value out of range, too many points) */
  STEERDC_ESEND = -9,         /* ENet refused the packet */
  STEERDC_EREPLY = -10,       /* the server answered ERROR: see the reply's error_code */
  STEERDC_EPROTOCOL = -11,    /* the server answered something unexpected */
  STEERDC_EBUSY = -12,        /* already connected or connecting */
  STEERDC_ENODATA = -13,      /* no snapshot yet: nothing to interpolate */
  STEERDC_ENOENT = -14,       /* no such agent in the buffer, or no such reply */
  STEERDC_ERROR_COUNT = 15
} steerdc_error;

/* One sentence for a steerdc_error; "unknown error" otherwise. Static storage. */
STEERDC_API const char *steerdc_strerror(int code);
/* "EINVAL", ...; "UNKNOWN" otherwise. */
STEERDC_API const char *steerdc_error_name(int code);
/* The server's ERROR codes (PROTOCOL.md 8), as in steerdc_reply.error_code:
 * "BAD_FIELD", ... and a sentence; "UNKNOWN" / "unknown error code" otherwise. */
STEERDC_API const char *steerdc_wire_error_name(uint32_t code);
STEERDC_API const char *steerdc_wire_error_text(uint32_t code);
/* Disconnect reasons (PROTOCOL.md 9): "shutdown", "abuse", ...; "unknown" otherwise. */
STEERDC_API const char *steerdc_disconnect_name(uint32_t reason);

/* ---- Enumerations (the wire's numbers, PROTOCOL.md 5) ------------------------------- */

enum { STEERDC_MODEL_KINEMATIC = 0, STEERDC_MODEL_DYNAMIC = 1, STEERDC_MODEL_HEADING = 2 };

enum {
  STEERDC_BEHAVIOUR_NONE = 0,
  STEERDC_BEHAVIOUR_SEEK = 1,
  STEERDC_BEHAVIOUR_FLEE = 2,
  STEERDC_BEHAVIOUR_ARRIVE = 3,
  STEERDC_BEHAVIOUR_ALIGN = 4,
  STEERDC_BEHAVIOUR_VELOCITY_MATCH = 5,
  STEERDC_BEHAVIOUR_FACE = 6,
  STEERDC_BEHAVIOUR_LOOK_WHERE_GOING = 7,
  STEERDC_BEHAVIOUR_PURSUE = 8,
  STEERDC_BEHAVIOUR_EVADE = 9,
  STEERDC_BEHAVIOUR_INTERPOSE = 10,
  STEERDC_BEHAVIOUR_WANDER = 11,
  STEERDC_BEHAVIOUR_FOLLOW_PATH = 12 /* in QUERY replies only: set a path with steerdc_set_path */
};

enum { STEERDC_FACING_LOOK_WHERE_GOING = 0, STEERDC_FACING_NONE = 1, STEERDC_FACING_TARGET = 2 };
enum { STEERDC_COMBINE_BLEND = 0, STEERDC_COMBINE_PRIORITY = 1 };
enum { STEERDC_PATH_ONCE = 0, STEERDC_PATH_LOOP = 1, STEERDC_PATH_PINGPONG = 2 };
enum { STEERDC_CORNER_NONE = 0, STEERDC_CORNER_ARC = 1, STEERDC_CORNER_LAZY = 2 };

enum {
  STEERDC_EVENT_ARRIVED = 0,       /* data 0 */
  STEERDC_EVENT_WAYPOINT = 1,      /* data = node index reached */
  STEERDC_EVENT_PATH_FINISHED = 2, /* data = last node index */
  STEERDC_EVENT_REVERSED = 3,      /* data = node index it turned at */
  STEERDC_EVENT_SPAWNED = 4,       /* data = owner client id */
  STEERDC_EVENT_DESPAWNED = 5,     /* data 0 */
  STEERDC_EVENT_STUCK = 6, /* data = the path node aimed at (0 without a path): no progress for stuck_time */
  STEERDC_EVENT_PLANNED = 7,    /* GOTO: the first route was planned; data = its length in cm */
  STEERDC_EVENT_REPLANNED = 8,  /* GOTO: a new route replaced the one followed; data = its length in cm */
  STEERDC_EVENT_UNREACHABLE = 9 /* GOTO: no route; data = the reason (PROTOCOL.md 7.4) */
};

/* Commands, as in steerdc_reply.command. */
enum {
  STEERDC_CMD_SPAWN = 2,
  STEERDC_CMD_DESPAWN = 3,
  STEERDC_CMD_SET_BEHAVIOUR = 4,
  STEERDC_CMD_SET_PATH = 5,
  STEERDC_CMD_SET_PARAMS = 6,
  STEERDC_CMD_STOP = 7,
  STEERDC_CMD_QUERY = 8,
  STEERDC_CMD_PING = 9,
  STEERDC_CMD_VIEW = 10,
  STEERDC_CMD_ADD_OBSTACLE = 12, /* admins: the map (PROTOCOL.md 17.3) */
  STEERDC_CMD_REMOVE_OBSTACLE = 13
};

enum { STEERDC_OBSTACLE_CIRCLE = 0, STEERDC_OBSTACLE_POLYGON = 1, STEERDC_OBSTACLE_WALL = 2 };

enum { STEERDC_SNAPSHOTS_FULL = 0, STEERDC_SNAPSHOTS_DELTA = 1 };

enum {
  STEERDC_STATE_IDLE = 0,       /* created, not connected */
  STEERDC_STATE_CONNECTING = 1, /* ENet handshake or HELLO under way */
  STEERDC_STATE_CONNECTED = 2,  /* WELCOME received: commands may be sent */
  STEERDC_STATE_DISCONNECTED = 3
};

/* ---- Plain structs -------------------------------------------------------------------- */

typedef struct steerdc_config {
  uint32_t max_agents;           /* agents per snapshot and in the buffer (10000) */
  uint32_t snapshots;            /* STEERDC_SNAPSHOTS_FULL (default) or _DELTA */
  uint32_t connect_timeout_ms;   /* ENet handshake + WELCOME (5000) */
  uint32_t ping_interval_ms;     /* automatic PING for the clock offset, 0 = never (1000) */
  uint32_t event_queue;          /* events kept until polled; older ones are dropped (4096) */
  uint32_t reply_queue;          /* replies kept until polled (1024) */
  uint32_t min_delay_us;         /* render delay floor (100000) */
  uint32_t max_delay_us;         /* render delay ceiling (1000000) */
  uint32_t max_extrapolation_us; /* past the newest snapshot, then hold (250000) */
  uint32_t samples_per_agent;    /* snapshots kept per agent, >= 2 (32) */
} steerdc_config;

/* Fills cfg with the defaults above. */
STEERDC_API void steerdc_config_init(steerdc_config *cfg);

/* Render modes of an interpolated state. */
enum {
  STEERDC_MODE_INTERPOLATE = 0, /* between two snapshots */
  STEERDC_MODE_EXTRAPOLATE = 1, /* past the newest snapshot, within max_extrapolation_us */
  STEERDC_MODE_HOLD_NEWEST = 2, /* past the newest beyond it: held */
  STEERDC_MODE_HOLD_OLDEST = 3  /* before the oldest: held */
};

/* An agent at the render time. 32 bytes. */
typedef struct steerdc_agent_state {
  uint32_t id;   /* agent id, non-zero */
  uint32_t mode; /* STEERDC_MODE_* */
  float x, y;    /* m */
  float theta;   /* rad, (-pi, pi] */
  float vx, vy;  /* m/s */
  float age_ms;  /* render time - newest snapshot used; < 0 while interpolating */
} steerdc_agent_state;

/* What a poll of states saw. */
typedef struct steerdc_render_info {
  int64_t render_time_us; /* server time the states are at */
  uint64_t newest_tick;   /* newest snapshot in the buffer */
  uint32_t agent_count;   /* agents in the buffer (more than were written when cap was short) */
  float delay_ms;         /* current render delay behind the estimated server time */
  float jitter_ms;        /* snapshot arrival jitter (RFC 3550) */
  uint32_t reserved;
} steerdc_render_info;

typedef struct steerdc_event {
  uint64_t tick;
  uint32_t code;  /* STEERDC_EVENT_* */
  uint32_t agent; /* agent id */
  uint32_t data;  /* see STEERDC_EVENT_* */
  uint32_t reserved;
} steerdc_event;

/* The ACK or ERROR of a command. */
typedef struct steerdc_reply {
  uint32_t request_id;
  uint32_t command;        /* STEERDC_CMD_*; 0 for an ERROR (the server does not say) */
  int32_t status;          /* 0: ACK; STEERDC_EREPLY: ERROR, see error_code */
  uint32_t error_code;     /* the server's code (steerdc_wire_error_name), 0 for an ACK */
  uint32_t agent;          /* ACK: the agent (a SPAWN's new id); 0 for PING and VIEW; the obstacle's id for
                              ADD_OBSTACLE and REMOVE_OBSTACLE */
  uint32_t owner;          /* QUERY: owner client id, 0 = server */
  uint64_t tick;           /* QUERY, PING: the server's last completed tick; ADD_OBSTACLE, REMOVE_OBSTACLE:
                              the map's version after the change */
  uint64_t server_time_us; /* PING: the server clock when it replied */
  uint64_t rtt_us;         /* PING: round trip measured here */
  /* QUERY: the agent's state after `tick`. */
  uint32_t model, behaviour, arrived;
  int32_t path_node; /* -1: no path */
  float x, y, orientation, vx, vy, rotation;
  float max_speed, max_acceleration, max_rotation, max_angular_acceleration, radius;
  uint32_t moved;    /* ADD_OBSTACLE: agents moved out of the new obstacle */
  char message[256]; /* ERROR: the server's text, UTF-8, NUL-terminated; "" for an ACK */
  char field[64];    /* ERROR: the offending field path ("behaviour.target"), "" if none */
} steerdc_reply;

/* Bits of steerdc_limits.present. */
enum {
  STEERDC_LIMIT_MAX_SPEED = 1u << 0,
  STEERDC_LIMIT_MAX_ACCELERATION = 1u << 1,
  STEERDC_LIMIT_MAX_ROTATION = 1u << 2,
  STEERDC_LIMIT_MAX_ANGULAR_ACCELERATION = 1u << 3,
  STEERDC_LIMIT_RADIUS = 1u << 4
};

typedef struct steerdc_limits {
  uint32_t present;               /* STEERDC_LIMIT_* bits: which fields to send */
  float max_speed;                /* m/s */
  float max_acceleration;         /* m/s^2 */
  float max_rotation;             /* rad/s */
  float max_angular_acceleration; /* rad/s^2 */
  float radius;                   /* m */
} steerdc_limits;

/* Indices of steerdc_params.value (PROTOCOL.md 5.2); bit i of present sends value[i]. */
enum {
  STEERDC_PARAM_TIME_TO_TARGET = 0,
  STEERDC_PARAM_TARGET_RADIUS,
  STEERDC_PARAM_SLOW_RADIUS,
  STEERDC_PARAM_KINEMATIC_TIME_TO_TARGET,
  STEERDC_PARAM_ALIGN_TARGET_RADIUS,
  STEERDC_PARAM_ALIGN_SLOW_RADIUS,
  STEERDC_PARAM_ALIGN_TIME_TO_TARGET,
  STEERDC_PARAM_MAX_PREDICTION,
  STEERDC_PARAM_PANIC_RADIUS,
  STEERDC_PARAM_WANDER_OFFSET,
  STEERDC_PARAM_WANDER_RADIUS,
  STEERDC_PARAM_WANDER_RATE,
  STEERDC_PARAM_SEPARATION_RADIUS,
  STEERDC_PARAM_TURN_TRIGGER_DISTANCE,
  STEERDC_PARAM_PATH_RECOVER_STRENGTH,
  STEERDC_PARAM_COUNT
};

typedef struct steerdc_params {
  uint32_t present;                 /* bit i: send value[i] */
  float value[STEERDC_PARAM_COUNT]; /* units in PROTOCOL.md 5.2 */
} steerdc_params;

/* Bits of steerdc_behaviour.present. */
enum {
  STEERDC_BHV_TARGET = 1u << 0,            /* target_x, target_y */
  STEERDC_BHV_TARGET_AGENT = 1u << 1,      /* target_agent */
  STEERDC_BHV_TARGET_AGENT2 = 1u << 2,     /* target_agent2 (interpose) */
  STEERDC_BHV_ORIENTATION = 1u << 3,       /* orientation (align) */
  STEERDC_BHV_FACING = 1u << 4,            /* facing */
  STEERDC_BHV_COMBINE = 1u << 5,           /* combine */
  STEERDC_BHV_SEPARATION_WEIGHT = 1u << 6, /* separation_weight */
  STEERDC_BHV_MAX_NEIGHBOURS = 1u << 7     /* max_neighbours */
};

typedef struct steerdc_behaviour {
  uint32_t kind;            /* STEERDC_BEHAVIOUR_* (not FOLLOW_PATH) */
  uint32_t present;         /* STEERDC_BHV_* bits */
  float target_x, target_y; /* m */
  float orientation;        /* rad */
  uint32_t target_agent, target_agent2;
  uint32_t facing;  /* STEERDC_FACING_* */
  uint32_t combine; /* STEERDC_COMBINE_* */
  uint32_t max_neighbours;
  float separation_weight;
  steerdc_params params;
} steerdc_behaviour;

/* Fills b with kind and nothing else present; then set the fields you need. */
STEERDC_API void steerdc_behaviour_init(steerdc_behaviour *b, uint32_t kind);

/* A path's options; the points themselves are an array of x, y pairs. */
typedef struct steerdc_path_options {
  float radius;       /* m, > 0: a node counts as reached within it */
  uint32_t mode;      /* STEERDC_PATH_* */
  uint32_t cornering; /* STEERDC_CORNER_* (arc and lazy: heading model only) */
  steerdc_params params;
} steerdc_path_options;

/* Bits of steerdc_spawn_desc.present. */
enum {
  STEERDC_SPAWN_ORIENTATION = 1u << 0,
  STEERDC_SPAWN_VELOCITY = 1u << 1,
  STEERDC_SPAWN_LIMITS = 1u << 2,
  STEERDC_SPAWN_BEHAVIOUR = 1u << 3
};

typedef struct steerdc_spawn_desc {
  uint32_t model;    /* STEERDC_MODEL_* */
  uint32_t present;  /* STEERDC_SPAWN_* bits */
  float x, y;        /* m, inside the world */
  float orientation; /* rad */
  float vx, vy;      /* m/s */
  steerdc_limits limits;
  steerdc_behaviour behaviour;
} steerdc_spawn_desc;

/* Fills s: model, position, nothing else present. */
STEERDC_API void steerdc_spawn_init(steerdc_spawn_desc *s, uint32_t model, float x, float y);

enum { STEERDC_VIEW_ALL = 0, STEERDC_VIEW_CENTRE = 1, STEERDC_VIEW_FOLLOW = 2 };

/* Which agents delta snapshots (and events) cover (PROTOCOL.md 6.10). */
typedef struct steerdc_view {
  uint32_t kind;            /* STEERDC_VIEW_* */
  uint32_t follow;          /* FOLLOW: agent id */
  float centre_x, centre_y; /* CENTRE: m */
  float radius;             /* CENTRE, FOLLOW: m, > 0 */
} steerdc_view;

/* What the WELCOME said. */
typedef struct steerdc_welcome {
  uint32_t client_id;
  uint32_t tick_rate;     /* Hz */
  uint32_t snapshot_rate; /* Hz */
  uint32_t protocol;
  float world_min_x, world_min_y, world_max_x, world_max_y; /* m */
  uint64_t tick;
  uint64_t server_time_us;
} steerdc_welcome;

typedef struct steerdc_stats {
  uint64_t packets_received, bytes_received;
  uint64_t bad_packets; /* undecodable or unexpected, dropped */
  uint64_t commands_sent;
  uint64_t acks, errors, events;
  uint64_t events_dropped;  /* the event queue was full */
  uint64_t replies_dropped; /* the reply queue was full */
  uint64_t snapshot_parts, snapshot_bytes;
  uint64_t frames_complete;   /* snapshots complete (full) or rebuilt (delta) */
  uint64_t frames_incomplete; /* dropped: a full frame's part missing, a delta without its baseline or
                                 that did not apply (delta frames left unfinished by a lost part are
                                 not counted here: see frames_missed) */
  uint64_t delta_acks_sent;
  uint64_t pings; /* PING round trips measured */
  uint64_t rtt_last_us, rtt_min_us;
  int64_t clock_offset_us;       /* server clock - local clock, from the lowest-RTT PING; 0 before */
  uint64_t interp_frames;        /* snapshots in the interpolation buffer */
  uint64_t underruns;            /* times the render time passed the newest snapshot */
  uint64_t samples_extrapolated; /* states extrapolated or held past the newest snapshot */
  uint64_t samples_total;        /* states returned */
  uint64_t frames_missed;        /* snapshots the server's schedule implies that never reached the buffer */
  float delay_ms, jitter_ms;     /* the buffer's render delay and jitter now */
} steerdc_stats;

/* ---- Life cycle ----------------------------------------------------------------------- */

typedef struct steerdc_client steerdc_client;

/* cfg NULL: the defaults. NULL on a bad config or when memory is short. */
STEERDC_API steerdc_client *steerdc_create(const steerdc_config *cfg);
/* Drops the connection at once if it is up. Accepts NULL. */
STEERDC_API void steerdc_destroy(steerdc_client *c);

/* Starts connecting to host:port (ENet, then HELLO with name and token) and
 * returns at once; steerdc_update() carries it on until steerdc_get_state()
 * says CONNECTED or DISCONNECTED (then steerdc_update returns why). name
 * (<= 64 bytes UTF-8) and token (from `steerd token`; NULL or "" for none) are
 * copied. A client connects once: to reconnect, create a new one. */
STEERDC_API int steerdc_connect_start(steerdc_client *c, const char *host, uint16_t port, const char *name,
                                      const char *token);
/* The same, blocking until the WELCOME (or the connect timeout). EREPLY when
 * the server refused the HELLO (steerdc_last_error has its code and text). */
STEERDC_API int steerdc_connect(steerdc_client *c, const char *host, uint16_t port, const char *name,
                                const char *token);
/* Polite disconnect: waits up to timeout_ms for the server to confirm. */
STEERDC_API int steerdc_disconnect(steerdc_client *c, uint32_t timeout_ms);

/* Sends and receives: waits up to timeout_ms for traffic (0: never blocks),
 * then handles everything ready: snapshots into the buffer, events and replies
 * into their queues, an automatic PING when due. Returns the number of network
 * events handled, or a negative error once the connection has ended. */
STEERDC_API int steerdc_update(steerdc_client *c, uint32_t timeout_ms);

STEERDC_API uint32_t steerdc_get_state(const steerdc_client *c); /* STEERDC_STATE_* */
/* 0 and *out after the WELCOME; ENOTCONN before. */
STEERDC_API int steerdc_get_welcome(const steerdc_client *c, steerdc_welcome *out);
/* PROTOCOL.md 9 reason of the last disconnect by the server, 0 if none. */
STEERDC_API uint32_t steerdc_disconnect_reason(const steerdc_client *c);
/* The last ERROR that failed a connect or a wait (the HELLO's, say): 0 and *out, ENOENT if none. */
STEERDC_API int steerdc_last_error(const steerdc_client *c, steerdc_reply *out);
STEERDC_API void steerdc_get_stats(const steerdc_client *c, steerdc_stats *out);

/* ---- Commands: each returns 0 and its request id (may be NULL), or an error ------------- */

STEERDC_API int steerdc_spawn(steerdc_client *c, const steerdc_spawn_desc *s, uint32_t *request_id);
/* SPAWN with a path to follow from the start: path_xy holds point_count x, y pairs. */
STEERDC_API int steerdc_spawn_with_path(steerdc_client *c, const steerdc_spawn_desc *s, const float *path_xy,
                                        uint32_t point_count, const steerdc_path_options *opts,
                                        uint32_t *request_id);
STEERDC_API int steerdc_despawn(steerdc_client *c, uint32_t agent, uint32_t *request_id);
STEERDC_API int steerdc_set_behaviour(steerdc_client *c, uint32_t agent, const steerdc_behaviour *b,
                                      uint32_t *request_id);
/* The shortest form of the commonest command: seek (or arrive at, ...) a point. */
STEERDC_API int steerdc_set_target(steerdc_client *c, uint32_t agent, uint32_t kind, float x, float y,
                                   uint32_t *request_id);
/* point_count (1..256) x, y pairs in path_xy; opts NULL: radius 1 m, once, no cornering. */
STEERDC_API int steerdc_set_path(steerdc_client *c, uint32_t agent, const float *path_xy,
                                 uint32_t point_count, const steerdc_path_options *opts,
                                 uint32_t *request_id);
/* Either may be NULL (or have present 0): not sent. */
STEERDC_API int steerdc_set_params(steerdc_client *c, uint32_t agent, const steerdc_limits *limits,
                                   const steerdc_params *params, uint32_t *request_id);
STEERDC_API int steerdc_stop(steerdc_client *c, uint32_t agent, uint32_t *request_id);
STEERDC_API int steerdc_query(steerdc_client *c, uint32_t agent, uint32_t *request_id);
/* A PING: its reply carries rtt_us and updates the clock offset. */
STEERDC_API int steerdc_ping(steerdc_client *c, uint32_t *request_id);
STEERDC_API int steerdc_set_view(steerdc_client *c, const steerdc_view *v, uint32_t *request_id);

/* ---- Polling ---------------------------------------------------------------------------- */

/* Moves the render clock to local time now_us (0: steerdc_now_us(); otherwise
 * never decreasing) and writes up to cap agents interpolated at the render
 * time into out (any order; stable while the set of agents is). Returns the
 * number written, or ENODATA before the first snapshot. info may be NULL. Call
 * once per rendered frame. */
STEERDC_API int steerdc_poll_states(steerdc_client *c, uint64_t now_us, steerdc_agent_state *out,
                                    uint32_t cap, steerdc_render_info *info);
/* One agent at the render time of the last poll_states: 0, or ENOENT / ENODATA. */
STEERDC_API int steerdc_get_agent(steerdc_client *c, uint32_t agent, steerdc_agent_state *out);

/* Moves up to cap queued events / replies into out, oldest first; returns how many. */
STEERDC_API int steerdc_poll_events(steerdc_client *c, steerdc_event *out, uint32_t cap);
STEERDC_API int steerdc_poll_replies(steerdc_client *c, steerdc_reply *out, uint32_t cap);
/* Updates until the reply to request_id is queued (up to timeout_ms), then takes
 * it out of the queue into *out (may be NULL): 0 for an ACK, EREPLY for an
 * ERROR, ETIMEDOUT, or the error that ended the connection. Other replies stay
 * queued. */
STEERDC_API int steerdc_wait_reply(steerdc_client *c, uint32_t request_id, uint32_t timeout_ms,
                                   steerdc_reply *out);

/* The newest complete snapshot as received, not interpolated (mode
 * INTERPOLATE, age 0): up to cap agents into out. Returns the number written
 * and its tick and server time (either pointer may be NULL), or ENODATA. */
STEERDC_API int steerdc_latest_frame(const steerdc_client *c, steerdc_agent_state *out, uint32_t cap,
                                     uint64_t *tick, uint64_t *server_time_us);

/* ---- Clocks ------------------------------------------------------------------------------ */

/* The local monotonic clock, microseconds. */
STEERDC_API uint64_t steerdc_now_us(void);

/* ---- The map (PROTOCOL.md 17) ---------------------------------------------------------
 * The client keeps a copy of the server's map, updated as steerdc_update() reads MAP and
 * MAP_CHANGED: the server's obstacles in its order, with its coordinates exactly. */

typedef struct steerdc_obstacle {
  uint32_t id;
  uint32_t kind;          /* STEERDC_OBSTACLE_* */
  uint32_t count;         /* points: 1 for a circle (its centre) */
  float radius;           /* m, circle only */
  const float *points_xy; /* count (x, y) pairs, m; valid until the next steerdc_update() */
} steerdc_obstacle;

/* The copy's version; *current (may be NULL) is 1 when the copy is complete and up to date. */
STEERDC_API uint32_t steerdc_map_version(const steerdc_client *c, int *current);
STEERDC_API uint32_t steerdc_map_count(const steerdc_client *c);
/* The index-th obstacle (0..count-1): 0, or STEERDC_EINVAL. */
STEERDC_API int steerdc_map_get(const steerdc_client *c, uint32_t index, steerdc_obstacle *out);
/* Admins: add an obstacle (a circle: one (x, y) pair and radius; a polygon 3..256 pairs, a wall
 * 2..256) or remove one by id. The ACK's agent is the id, tick the map's new version. */
STEERDC_API int steerdc_add_obstacle(steerdc_client *c, uint32_t id, uint32_t kind, const float *points_xy,
                                     uint32_t count, float radius, uint32_t *request_id);
STEERDC_API int steerdc_remove_obstacle(steerdc_client *c, uint32_t id, uint32_t *request_id);
/* Estimated server time now (local clock + the PING clock offset); 0 before the first PING. */
STEERDC_API uint64_t steerdc_server_time_us(const steerdc_client *c);

#ifdef __cplusplus
}
#endif

#endif /* STEERD_CLIENT_PUBLIC_H */

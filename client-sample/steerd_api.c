/* steerd_api.c: libsteerd-client's public API (include/steerd/client.h) over
 * the internal client (client.h), delta rebuild (delta.h) and interpolation
 * buffer (interp.h).
 *
 * The internal client delivers through callbacks; here they only copy into
 * storage the handle owns: complete frames go into the interpolation buffer
 * (and the latest-frame copy), events and replies into bounded FIFO rings that
 * the caller drains with the poll functions. So a foreign caller never sees a
 * callback, and nothing of the library runs outside its own calls.
 *
 * Everything is sized at create (queues, frame copy) or at the WELCOME (the
 * buffer, whose snapshot interval the WELCOME gives). Built with hidden
 * visibility: only the STEERDC_API functions leave the shared library. */
#define STEERDC_BUILDING 1
#include "steerd/client.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "interp.h"

/* The public numbers are the wire's: keep them in step with the internal ones. */
#define SAME(a, b) ((int)(a) == (int)(b))
/* The internal client's errors pass through unchanged. */
_Static_assert(SAME(STEERDC_EINVAL, STEERD_CLIENT_EINVAL) &&
                   SAME(STEERDC_ETIMEDOUT, STEERD_CLIENT_ETIMEDOUT) &&
                   SAME(STEERDC_EDISCONNECTED, STEERD_CLIENT_EDISCONNECTED) &&
                   SAME(STEERDC_EREPLY, STEERD_CLIENT_EREPLY) &&
                   SAME(STEERDC_EPROTOCOL, STEERD_CLIENT_EPROTOCOL) &&
                   SAME(STEERDC_EBUSY, STEERD_CLIENT_EBUSY),
               "steerdc_error mirrors steerd_client_error");
/* Every public number is the protocol's, value by value (the library passes
 * them through; a reordering there fails here, not in a game). Values a
 * newer protocol adds pass through as numbers (the fields are uint32_t). */
_Static_assert(SAME(STEERDC_MODEL_KINEMATIC, PROTO_MODEL_KINEMATIC) &&
                   SAME(STEERDC_MODEL_DYNAMIC, PROTO_MODEL_DYNAMIC) &&
                   SAME(STEERDC_MODEL_HEADING, PROTO_MODEL_HEADING),
               "models");
_Static_assert(SAME(STEERDC_BEHAVIOUR_NONE, PROTO_BEHAVIOUR_NONE) &&
                   SAME(STEERDC_BEHAVIOUR_SEEK, PROTO_BEHAVIOUR_SEEK) &&
                   SAME(STEERDC_BEHAVIOUR_FLEE, PROTO_BEHAVIOUR_FLEE) &&
                   SAME(STEERDC_BEHAVIOUR_ARRIVE, PROTO_BEHAVIOUR_ARRIVE) &&
                   SAME(STEERDC_BEHAVIOUR_ALIGN, PROTO_BEHAVIOUR_ALIGN) &&
                   SAME(STEERDC_BEHAVIOUR_VELOCITY_MATCH, PROTO_BEHAVIOUR_VELOCITY_MATCH) &&
                   SAME(STEERDC_BEHAVIOUR_FACE, PROTO_BEHAVIOUR_FACE) &&
                   SAME(STEERDC_BEHAVIOUR_LOOK_WHERE_GOING, PROTO_BEHAVIOUR_LOOK_WHERE_GOING) &&
                   SAME(STEERDC_BEHAVIOUR_PURSUE, PROTO_BEHAVIOUR_PURSUE) &&
                   SAME(STEERDC_BEHAVIOUR_EVADE, PROTO_BEHAVIOUR_EVADE) &&
                   SAME(STEERDC_BEHAVIOUR_INTERPOSE, PROTO_BEHAVIOUR_INTERPOSE) &&
                   SAME(STEERDC_BEHAVIOUR_WANDER, PROTO_BEHAVIOUR_WANDER) &&
                   SAME(STEERDC_BEHAVIOUR_FOLLOW_PATH, PROTO_BEHAVIOUR_FOLLOW_PATH),
               "behaviours");
_Static_assert(SAME(STEERDC_FACING_LOOK_WHERE_GOING, PROTO_FACING_LOOK_WHERE_GOING) &&
                   SAME(STEERDC_FACING_NONE, PROTO_FACING_NONE) &&
                   SAME(STEERDC_FACING_TARGET, PROTO_FACING_TARGET) &&
                   SAME(STEERDC_COMBINE_BLEND, PROTO_COMBINE_BLEND) &&
                   SAME(STEERDC_COMBINE_PRIORITY, PROTO_COMBINE_PRIORITY),
               "facing, combine");
_Static_assert(SAME(STEERDC_PATH_ONCE, PROTO_PATH_ONCE) && SAME(STEERDC_PATH_LOOP, PROTO_PATH_LOOP) &&
                   SAME(STEERDC_PATH_PINGPONG, PROTO_PATH_PINGPONG) &&
                   SAME(STEERDC_CORNER_NONE, PROTO_CORNER_NONE) &&
                   SAME(STEERDC_CORNER_ARC, PROTO_CORNER_ARC) && SAME(STEERDC_CORNER_LAZY, PROTO_CORNER_LAZY),
               "path modes, cornering");
_Static_assert(SAME(STEERDC_EVENT_ARRIVED, PROTO_EVENT_ARRIVED) &&
                   SAME(STEERDC_EVENT_WAYPOINT, PROTO_EVENT_WAYPOINT) &&
                   SAME(STEERDC_EVENT_PATH_FINISHED, PROTO_EVENT_PATH_FINISHED) &&
                   SAME(STEERDC_EVENT_REVERSED, PROTO_EVENT_REVERSED) &&
                   SAME(STEERDC_EVENT_SPAWNED, PROTO_EVENT_SPAWNED) &&
                   SAME(STEERDC_EVENT_DESPAWNED, PROTO_EVENT_DESPAWNED) &&
                   SAME(STEERDC_EVENT_STUCK, PROTO_EVENT_STUCK) &&
                   SAME(STEERDC_EVENT_PLANNED, PROTO_EVENT_PLANNED) &&
                   SAME(STEERDC_EVENT_REPLANNED, PROTO_EVENT_REPLANNED) &&
                   SAME(STEERDC_EVENT_UNREACHABLE, PROTO_EVENT_UNREACHABLE),
               "events");
_Static_assert(SAME(STEERDC_CMD_SPAWN, PROTO_MSG_SPAWN) && SAME(STEERDC_CMD_DESPAWN, PROTO_MSG_DESPAWN) &&
                   SAME(STEERDC_CMD_SET_BEHAVIOUR, PROTO_MSG_SET_BEHAVIOUR) &&
                   SAME(STEERDC_CMD_SET_PATH, PROTO_MSG_SET_PATH) &&
                   SAME(STEERDC_CMD_SET_PARAMS, PROTO_MSG_SET_PARAMS) &&
                   SAME(STEERDC_CMD_STOP, PROTO_MSG_STOP) && SAME(STEERDC_CMD_QUERY, PROTO_MSG_QUERY) &&
                   SAME(STEERDC_CMD_PING, PROTO_MSG_PING) && SAME(STEERDC_CMD_VIEW, PROTO_MSG_VIEW) &&
                   SAME(STEERDC_CMD_ADD_OBSTACLE, PROTO_MSG_ADD_OBSTACLE) &&
                   SAME(STEERDC_CMD_REMOVE_OBSTACLE, PROTO_MSG_REMOVE_OBSTACLE),
               "commands");
_Static_assert(SAME(STEERDC_OBSTACLE_CIRCLE, PROTO_OBSTACLE_CIRCLE) &&
                   SAME(STEERDC_OBSTACLE_POLYGON, PROTO_OBSTACLE_POLYGON) &&
                   SAME(STEERDC_OBSTACLE_WALL, PROTO_OBSTACLE_WALL),
               "obstacle kinds");
_Static_assert(sizeof(proto_vec2) == 2 * sizeof(float), "points are (x, y) float pairs");
_Static_assert(SAME(STEERDC_SNAPSHOTS_FULL, PROTO_SNAPSHOTS_FULL) &&
                   SAME(STEERDC_SNAPSHOTS_DELTA, PROTO_SNAPSHOTS_DELTA),
               "snapshot modes");
_Static_assert(SAME(STEERDC_VIEW_ALL, PROTO_VIEW_ALL) && SAME(STEERDC_VIEW_CENTRE, PROTO_VIEW_CENTRE) &&
                   SAME(STEERDC_VIEW_FOLLOW, PROTO_VIEW_FOLLOW),
               "views");
/* A parameter's index is its presence bit's. */
#define BIT(index, bit) ((1u << (index)) == (unsigned)(bit))
_Static_assert(SAME(STEERDC_PARAM_COUNT, PROTO_PARAM_COUNT) &&
                   BIT(STEERDC_PARAM_TIME_TO_TARGET, PROTO_PARAM_TIME_TO_TARGET) &&
                   BIT(STEERDC_PARAM_TARGET_RADIUS, PROTO_PARAM_TARGET_RADIUS) &&
                   BIT(STEERDC_PARAM_SLOW_RADIUS, PROTO_PARAM_SLOW_RADIUS) &&
                   BIT(STEERDC_PARAM_KINEMATIC_TIME_TO_TARGET, PROTO_PARAM_KINEMATIC_TIME_TO_TARGET) &&
                   BIT(STEERDC_PARAM_ALIGN_TARGET_RADIUS, PROTO_PARAM_ALIGN_TARGET_RADIUS) &&
                   BIT(STEERDC_PARAM_ALIGN_SLOW_RADIUS, PROTO_PARAM_ALIGN_SLOW_RADIUS) &&
                   BIT(STEERDC_PARAM_ALIGN_TIME_TO_TARGET, PROTO_PARAM_ALIGN_TIME_TO_TARGET) &&
                   BIT(STEERDC_PARAM_MAX_PREDICTION, PROTO_PARAM_MAX_PREDICTION) &&
                   BIT(STEERDC_PARAM_PANIC_RADIUS, PROTO_PARAM_PANIC_RADIUS) &&
                   BIT(STEERDC_PARAM_WANDER_OFFSET, PROTO_PARAM_WANDER_OFFSET) &&
                   BIT(STEERDC_PARAM_WANDER_RADIUS, PROTO_PARAM_WANDER_RADIUS) &&
                   BIT(STEERDC_PARAM_WANDER_RATE, PROTO_PARAM_WANDER_RATE) &&
                   BIT(STEERDC_PARAM_SEPARATION_RADIUS, PROTO_PARAM_SEPARATION_RADIUS) &&
                   BIT(STEERDC_PARAM_TURN_TRIGGER_DISTANCE, PROTO_PARAM_TURN_TRIGGER_DISTANCE) &&
                   BIT(STEERDC_PARAM_PATH_RECOVER_STRENGTH, PROTO_PARAM_PATH_RECOVER_STRENGTH),
               "params");
_Static_assert(SAME(STEERDC_LIMIT_MAX_SPEED, PROTO_LIMIT_MAX_SPEED) &&
                   SAME(STEERDC_LIMIT_MAX_ACCELERATION, PROTO_LIMIT_MAX_ACCELERATION) &&
                   SAME(STEERDC_LIMIT_MAX_ROTATION, PROTO_LIMIT_MAX_ROTATION) &&
                   SAME(STEERDC_LIMIT_MAX_ANGULAR_ACCELERATION, PROTO_LIMIT_MAX_ANGULAR_ACCELERATION) &&
                   SAME(STEERDC_LIMIT_RADIUS, PROTO_LIMIT_RADIUS),
               "limits");
_Static_assert(SAME(STEERDC_BHV_TARGET, PROTO_BHV_TARGET) &&
                   SAME(STEERDC_BHV_TARGET_AGENT, PROTO_BHV_TARGET_AGENT) &&
                   SAME(STEERDC_BHV_TARGET_AGENT2, PROTO_BHV_TARGET_AGENT2) &&
                   SAME(STEERDC_BHV_ORIENTATION, PROTO_BHV_ORIENTATION) &&
                   SAME(STEERDC_BHV_FACING, PROTO_BHV_FACING) &&
                   SAME(STEERDC_BHV_COMBINE, PROTO_BHV_COMBINE) &&
                   SAME(STEERDC_BHV_SEPARATION_WEIGHT, PROTO_BHV_SEPARATION_WEIGHT) &&
                   SAME(STEERDC_BHV_MAX_NEIGHBOURS, PROTO_BHV_MAX_NEIGHBOURS),
               "behaviour bits");
_Static_assert(SAME(STEERDC_MODE_HOLD_OLDEST, STEERD_INTERP_MODE_HOLD_OLDEST), "render modes");
_Static_assert(sizeof(steerdc_agent_state) == 32, "agent state layout is part of the ABI");
_Static_assert(sizeof(((steerdc_reply *)0)->message) == PROTO_MAX_ERROR_TEXT_BYTES + 1, "error text");
_Static_assert(sizeof(((steerdc_reply *)0)->field) == PROTO_MAX_FIELD_BYTES + 1, "error field");

#define API_PING_STALE_US 5000000u /* an automatic PING unanswered this long: send another */

struct steerdc_client {
  steerdc_config cfg;
  steerd_client *cl; /* from connect_start */
  steerd_interp *it; /* from the first frame after the WELCOME */
  int interp_failed; /* creating it failed: ENOMEM from the polls */
  uint64_t last_now_us;
  int has_render;
  int64_t render_us;

  steerdc_event *events; /* ring */
  uint32_t ev_head, ev_count;
  steerdc_reply *replies; /* ring */
  uint32_t rp_head, rp_count;

  proto_pose *latest; /* newest complete frame, max_agents */
  uint32_t latest_count;
  uint64_t latest_tick, latest_time_us;
  int has_latest;

  int ping_pending;
  uint32_t ping_id;
  uint64_t ping_sent_us;

  uint64_t events_dropped, replies_dropped, frames_pushed;
  uint64_t samples_total, samples_extrapolated;
  proto_command cmd; /* scratch: a path command is ~2 kB */
};

uint32_t steerdc_version(void) { return STEERDC_VERSION; }

/* ---- Errors ---------------------------------------------------------------------------- */

static const char *const api_error_names[STEERDC_ERROR_COUNT] = {
    "OK",      "EINVAL", "ENOMEM", "ENET",      "ERESOLVE", "ETIMEDOUT", "ENOTCONN", "EDISCONNECTED",
    "EENCODE", "ESEND",  "EREPLY", "EPROTOCOL", "EBUSY",    "ENODATA",   "ENOENT",
};

static const char *const api_error_texts[STEERDC_ERROR_COUNT] = {
    "success",
    "invalid argument",
    "out of memory",
    "ENet failure",
    "cannot resolve host",
    "timed out",
    "not connected",
    "disconnected",
    "command does not encode (a value out of range?)",
    "ENet refused the packet",
    "the server replied with an error",
    "unexpected reply from the server",
    "busy: already connected or connecting",
    "no snapshot yet",
    "no such agent or reply",
};

const char *steerdc_strerror(int code) {
  if (code > 0 || code <= -STEERDC_ERROR_COUNT)
    return "unknown error";
  return api_error_texts[-code];
}

const char *steerdc_error_name(int code) {
  if (code > 0 || code <= -STEERDC_ERROR_COUNT)
    return "UNKNOWN";
  return api_error_names[-code];
}

const char *steerdc_wire_error_name(uint32_t code) {
  return code == 0 || code >= PROTO_ERR_COUNT ? "UNKNOWN" : proto_error_name((int)code);
}

const char *steerdc_wire_error_text(uint32_t code) {
  return code == 0 || code >= PROTO_ERR_COUNT ? "unknown error code" : proto_error_text((int)code);
}

const char *steerdc_disconnect_name(uint32_t reason) { return proto_disconnect_name(reason); }

/* ---- Config and plain structs ---------------------------------------------------------- */

void steerdc_config_init(steerdc_config *cfg) {
  if (cfg == NULL)
    return;
  steerd_interp_config ic = steerd_interp_default_config();
  memset(cfg, 0, sizeof *cfg);
  cfg->max_agents = 10000;
  cfg->snapshots = STEERDC_SNAPSHOTS_FULL;
  cfg->connect_timeout_ms = 5000;
  cfg->ping_interval_ms = 1000;
  cfg->event_queue = 4096;
  cfg->reply_queue = 1024;
  cfg->min_delay_us = ic.min_delay_us;
  cfg->max_delay_us = ic.max_delay_us;
  cfg->max_extrapolation_us = ic.max_extrapolation_us;
  cfg->samples_per_agent = ic.samples_per_agent;
}

void steerdc_behaviour_init(steerdc_behaviour *b, uint32_t kind) {
  if (b == NULL)
    return;
  memset(b, 0, sizeof *b);
  b->kind = kind;
}

void steerdc_spawn_init(steerdc_spawn_desc *s, uint32_t model, float x, float y) {
  if (s == NULL)
    return;
  memset(s, 0, sizeof *s);
  s->model = model;
  s->x = x;
  s->y = y;
}

/* ---- Queues ---------------------------------------------------------------------------- */

static void event_push(steerdc_client *c, const steerdc_event *e) {
  uint32_t cap = c->cfg.event_queue;
  if (c->ev_count == cap) { /* full: the oldest goes */
    c->ev_head = (c->ev_head + 1) % cap;
    c->ev_count--;
    c->events_dropped++;
  }
  c->events[(c->ev_head + c->ev_count) % cap] = *e;
  c->ev_count++;
}

static void reply_push(steerdc_client *c, const steerdc_reply *r) {
  uint32_t cap = c->cfg.reply_queue;
  if (c->rp_count == cap) {
    c->rp_head = (c->rp_head + 1) % cap;
    c->rp_count--;
    c->replies_dropped++;
  }
  c->replies[(c->rp_head + c->rp_count) % cap] = *r;
  c->rp_count++;
}

/* Takes the i-th queued reply (0 = oldest) out of the ring. */
static void reply_take(steerdc_client *c, uint32_t i, steerdc_reply *out) {
  uint32_t cap = c->cfg.reply_queue;
  if (out != NULL)
    *out = c->replies[(c->rp_head + i) % cap];
  for (uint32_t k = i; k + 1 < c->rp_count; k++)
    c->replies[(c->rp_head + k) % cap] = c->replies[(c->rp_head + k + 1) % cap];
  c->rp_count--;
}

static void copy_text(char *dst, size_t cap, const char *src) {
  size_t n = strnlen(src, cap - 1);
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static void reply_from_error(steerdc_reply *r, const proto_error_msg *e) {
  memset(r, 0, sizeof *r);
  r->request_id = e->request_id;
  r->status = STEERDC_EREPLY;
  r->error_code = e->code;
  r->path_node = -1;
  copy_text(r->message, sizeof r->message, e->message);
  copy_text(r->field, sizeof r->field, e->field);
}

static void reply_from_ack(steerdc_reply *r, const proto_ack *a) {
  memset(r, 0, sizeof *r);
  r->request_id = a->request_id;
  r->command = a->command;
  r->agent = a->agent;
  r->path_node = -1;
  if (a->command == PROTO_MSG_PING) {
    uint64_t now = steerd_client_now_us();
    r->tick = a->pong.tick;
    r->server_time_us = a->pong.server_time_us;
    r->rtt_us = a->pong.client_time_us <= now ? now - a->pong.client_time_us : 0;
  } else if (a->command == PROTO_MSG_QUERY) {
    const proto_agent_report *q = &a->query;
    r->tick = q->tick;
    r->owner = q->owner;
    r->model = q->model;
    r->behaviour = q->behaviour;
    r->arrived = q->arrived;
    r->path_node = q->path_node;
    r->x = q->state.position.x;
    r->y = q->state.position.y;
    r->orientation = q->state.orientation;
    r->vx = q->state.velocity.x;
    r->vy = q->state.velocity.y;
    r->rotation = q->state.rotation;
    r->max_speed = q->limits.max_speed;
    r->max_acceleration = q->limits.max_acceleration;
    r->max_rotation = q->limits.max_rotation;
    r->max_angular_acceleration = q->limits.max_angular_acceleration;
    r->radius = q->limits.radius;
  } else if (a->command == PROTO_MSG_ADD_OBSTACLE || a->command == PROTO_MSG_REMOVE_OBSTACLE) {
    r->agent = a->obstacle;
    r->tick = a->map_version;
    r->moved = a->moved;
  }
}

/* ---- Callbacks of the internal client --------------------------------------------------- */

static int ensure_interp(steerdc_client *c) {
  if (c->it != NULL)
    return 0;
  if (c->interp_failed)
    return -1;
  const proto_welcome *w = steerd_client_welcome(c->cl);
  steerd_interp_config ic = steerd_interp_default_config();
  ic.max_agents = c->cfg.max_agents;
  ic.samples_per_agent = c->cfg.samples_per_agent;
  ic.min_delay_us = c->cfg.min_delay_us;
  ic.max_delay_us = c->cfg.max_delay_us;
  ic.max_extrapolation_us = c->cfg.max_extrapolation_us;
  if (w != NULL && w->snapshot_rate > 0)
    ic.snapshot_interval_us = 1000000u / w->snapshot_rate;
  if ((c->it = steerd_interp_create(&ic)) == NULL)
    c->interp_failed = 1;
  return c->it != NULL ? 0 : -1;
}

static void on_frame(void *user, const steerd_client_frame *f) {
  steerdc_client *c = user;
  uint32_t n = f->count < c->cfg.max_agents ? f->count : c->cfg.max_agents;
  memcpy(c->latest, f->poses, n * sizeof *f->poses);
  c->latest_count = n;
  c->latest_tick = f->tick;
  c->latest_time_us = f->server_time_us;
  c->has_latest = 1;
  if (ensure_interp(c) != 0)
    return;
  /* EFULL (more agents than max_agents) keeps the ones that fit. */
  steerd_interp_push(c->it, steerd_client_now_us(), f->tick, f->server_time_us, f->poses, n, 1);
  c->frames_pushed++;
}

static void on_event(void *user, const proto_event *e) {
  steerdc_client *c = user;
  if (e->code == PROTO_EVENT_DESPAWNED && c->it != NULL)
    steerd_interp_despawn(c->it, e->agent, e->tick);
  steerdc_event ev = {e->tick, e->code, e->agent, e->data, 0};
  event_push(c, &ev);
}

static void on_reply(void *user, const proto_server_msg *m) {
  steerdc_client *c = user;
  steerdc_reply r;
  if (m->type == PROTO_MSG_ACK) {
    if (c->ping_pending && m->ack.request_id == c->ping_id) {
      c->ping_pending = 0; /* our own PING: the internal client took its clock sample */
      return;
    }
    reply_from_ack(&r, &m->ack);
  } else {
    reply_from_error(&r, &m->error);
  }
  reply_push(c, &r);
}

/* ---- Life cycle ----------------------------------------------------------------------------- */

steerdc_client *steerdc_create(const steerdc_config *cfg) {
  steerdc_config def;
  if (cfg == NULL) {
    steerdc_config_init(&def);
    cfg = &def;
  }
  if (cfg->max_agents == 0 || cfg->max_agents > PROTO_MAX_AGENTS || cfg->snapshots >= PROTO_SNAPSHOTS_COUNT ||
      cfg->event_queue == 0 || cfg->reply_queue == 0 || cfg->samples_per_agent < 2 ||
      cfg->min_delay_us > cfg->max_delay_us || cfg->connect_timeout_ms == 0)
    return NULL;
  steerdc_client *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  c->cfg = *cfg;
  c->events = calloc(cfg->event_queue, sizeof *c->events);
  c->replies = calloc(cfg->reply_queue, sizeof *c->replies);
  c->latest = calloc(cfg->max_agents, sizeof *c->latest);
  if (c->events == NULL || c->replies == NULL || c->latest == NULL) {
    steerdc_destroy(c);
    return NULL;
  }
  return c;
}

void steerdc_destroy(steerdc_client *c) {
  if (c == NULL)
    return;
  steerd_client_destroy(c->cl);
  steerd_interp_destroy(c->it);
  free(c->events);
  free(c->replies);
  free(c->latest);
  free(c);
}

int steerdc_connect_start(steerdc_client *c, const char *host, uint16_t port, const char *name,
                          const char *token) {
  if (c == NULL || host == NULL || port == 0)
    return STEERDC_EINVAL;
  if (c->cl != NULL)
    return STEERDC_EBUSY;
  steerd_client_config cc = steerd_client_default_config();
  cc.name = name != NULL ? name : "libsteerd-client";
  cc.token = token;
  cc.max_agents = c->cfg.max_agents;
  cc.snapshots = (uint8_t)c->cfg.snapshots;
  cc.connect_timeout_ms = c->cfg.connect_timeout_ms;
  cc.callbacks.on_snapshot_frame = on_frame;
  cc.callbacks.on_event = on_event;
  cc.callbacks.on_reply = on_reply;
  cc.user = c;
  c->cl = steerd_client_create(&cc);
  if (c->cl == NULL)
    return STEERDC_EINVAL; /* a name or token too long (memory aside) */
  int r = steerd_client_connect_start(c->cl, host, port);
  if (r < 0) {
    steerd_client_destroy(c->cl);
    c->cl = NULL;
  }
  return r;
}

int steerdc_connect(steerdc_client *c, const char *host, uint16_t port, const char *name, const char *token) {
  int r = steerdc_connect_start(c, host, port, name, token);
  if (r < 0)
    return r;
  while (steerd_client_get_state(c->cl) == STEERD_CLIENT_CONNECTING) {
    r = steerd_client_service(c->cl, 50);
    if (r < 0)
      return r;
  }
  return steerd_client_get_state(c->cl) == STEERD_CLIENT_WELCOMED ? 0 : STEERDC_EDISCONNECTED;
}

int steerdc_disconnect(steerdc_client *c, uint32_t timeout_ms) {
  if (c == NULL)
    return STEERDC_EINVAL;
  if (c->cl == NULL)
    return STEERDC_ENOTCONN;
  return steerd_client_disconnect(c->cl, timeout_ms);
}

/* An automatic PING when the interval has passed since the last answer. */
static void maybe_ping(steerdc_client *c) {
  if (c->cfg.ping_interval_ms == 0 || steerd_client_get_state(c->cl) != STEERD_CLIENT_WELCOMED)
    return;
  uint64_t now = steerd_client_now_us();
  if (c->ping_pending && now - c->ping_sent_us < API_PING_STALE_US)
    return;
  if (c->ping_sent_us != 0 && now - c->ping_sent_us < (uint64_t)c->cfg.ping_interval_ms * 1000u)
    return;
  memset(&c->cmd, 0, sizeof c->cmd);
  c->cmd.type = PROTO_MSG_PING;
  if (steerd_client_send(c->cl, &c->cmd, &c->ping_id) == 0) {
    c->ping_pending = 1;
    c->ping_sent_us = now;
  }
}

int steerdc_update(steerdc_client *c, uint32_t timeout_ms) {
  if (c == NULL)
    return STEERDC_EINVAL;
  if (c->cl == NULL)
    return STEERDC_ENOTCONN;
  maybe_ping(c);
  int r = steerd_client_service(c->cl, timeout_ms);
  if (r >= 0)
    maybe_ping(c); /* the first right after the WELCOME */
  return r;
}

uint32_t steerdc_get_state(const steerdc_client *c) {
  if (c == NULL || c->cl == NULL)
    return STEERDC_STATE_IDLE;
  switch (steerd_client_get_state(c->cl)) {
  case STEERD_CLIENT_CONNECTING:
    return STEERDC_STATE_CONNECTING;
  case STEERD_CLIENT_WELCOMED:
    return STEERDC_STATE_CONNECTED;
  case STEERD_CLIENT_DISCONNECTED:
    return STEERDC_STATE_DISCONNECTED;
  case STEERD_CLIENT_IDLE:
  default:
    return STEERDC_STATE_IDLE;
  }
}

int steerdc_get_welcome(const steerdc_client *c, steerdc_welcome *out) {
  if (c == NULL || out == NULL)
    return STEERDC_EINVAL;
  const proto_welcome *w = c->cl != NULL ? steerd_client_welcome(c->cl) : NULL;
  if (w == NULL)
    return STEERDC_ENOTCONN;
  memset(out, 0, sizeof *out);
  out->client_id = w->client_id;
  out->tick_rate = w->tick_rate;
  out->snapshot_rate = w->snapshot_rate;
  out->protocol = w->protocol;
  out->world_min_x = w->world_min.x;
  out->world_min_y = w->world_min.y;
  out->world_max_x = w->world_max.x;
  out->world_max_y = w->world_max.y;
  out->tick = w->tick;
  out->server_time_us = w->server_time_us;
  return 0;
}

uint32_t steerdc_disconnect_reason(const steerdc_client *c) {
  return c != NULL && c->cl != NULL ? steerd_client_disconnect_reason(c->cl) : 0;
}

int steerdc_last_error(const steerdc_client *c, steerdc_reply *out) {
  if (c == NULL || out == NULL)
    return STEERDC_EINVAL;
  const proto_error_msg *e = c->cl != NULL ? steerd_client_last_error(c->cl) : NULL;
  if (e == NULL)
    return STEERDC_ENOENT;
  reply_from_error(out, e);
  return 0;
}

void steerdc_get_stats(const steerdc_client *c, steerdc_stats *out) {
  if (c == NULL || out == NULL)
    return;
  memset(out, 0, sizeof *out);
  out->events_dropped = c->events_dropped;
  out->replies_dropped = c->replies_dropped;
  out->interp_frames = c->frames_pushed;
  out->samples_total = c->samples_total;
  out->samples_extrapolated = c->samples_extrapolated;
  if (c->cl != NULL) {
    steerd_client_stats s;
    steerd_client_get_stats(c->cl, &s);
    out->packets_received = s.packets_received;
    out->bytes_received = s.bytes_received;
    out->bad_packets = s.bad_packets;
    out->commands_sent = s.commands_sent;
    out->acks = s.acks;
    out->errors = s.errors;
    out->events = s.events;
    out->snapshot_parts = s.snapshot_parts;
    out->snapshot_bytes = s.snapshot_bytes;
    out->frames_complete = s.frames_complete;
    out->frames_incomplete = s.frames_incomplete;
    out->delta_acks_sent = s.delta_acks_sent;
    out->pings = s.pings;
    out->rtt_last_us = s.rtt_last_us;
    out->rtt_min_us = s.rtt_min_us;
    out->clock_offset_us = s.clock_offset_us;
  }
  if (c->it != NULL) {
    steerd_interp_stats is;
    steerd_interp_get_stats(c->it, &is);
    out->underruns = is.underruns;
    out->frames_missed = is.frames_missed;
    out->delay_ms = (float)is.delay_ms;
    out->jitter_ms = (float)is.jitter_ms;
  }
}

/* ---- Commands ----------------------------------------------------------------------------- */

static const size_t param_offset[PROTO_PARAM_COUNT] = {
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
    offsetof(proto_param_values, path_recover_strength),
};

static void to_params(const steerdc_params *src, proto_params *dst) {
  memset(dst, 0, sizeof *dst);
  if (src == NULL)
    return;
  dst->present = src->present & PROTO_PARAM_ALL;
  for (uint32_t i = 0; i < PROTO_PARAM_COUNT; i++)
    if (dst->present & (1u << i))
      memcpy((char *)&dst->v + param_offset[i], &src->value[i], sizeof(float));
}

static void to_limits(const steerdc_limits *src, proto_limits *dst) {
  memset(dst, 0, sizeof *dst);
  if (src == NULL)
    return;
  dst->present = src->present & PROTO_LIMIT_ALL;
  dst->v.max_speed = src->max_speed;
  dst->v.max_acceleration = src->max_acceleration;
  dst->v.max_rotation = src->max_rotation;
  dst->v.max_angular_acceleration = src->max_angular_acceleration;
  dst->v.radius = src->radius;
}

/* Enums that do not fit their byte would wrap: refuse them here. */
static int to_behaviour(const steerdc_behaviour *src, proto_behaviour *dst) {
  memset(dst, 0, sizeof *dst);
  if (src->kind > UINT8_MAX || src->facing > UINT8_MAX || src->combine > UINT8_MAX ||
      src->max_neighbours > UINT8_MAX)
    return STEERDC_EINVAL;
  dst->present = src->present & 0xffu;
  dst->kind = (uint8_t)src->kind;
  dst->facing = (uint8_t)src->facing;
  dst->combine = (uint8_t)src->combine;
  dst->max_neighbours = (uint8_t)src->max_neighbours;
  dst->separation_weight = src->separation_weight;
  dst->target = proto_v2(src->target_x, src->target_y);
  dst->orientation = src->orientation;
  dst->target_agent = src->target_agent;
  dst->target_agent2 = src->target_agent2;
  to_params(&src->params, &dst->params);
  return 0;
}

static int to_path(const float *xy, uint32_t count, const steerdc_path_options *opts, proto_path *dst) {
  if (xy == NULL || count == 0 || count > PROTO_MAX_PATH_POINTS)
    return STEERDC_EINVAL;
  if (opts != NULL && (opts->mode > UINT8_MAX || opts->cornering > UINT8_MAX))
    return STEERDC_EINVAL;
  dst->count = count;
  dst->radius = opts != NULL ? opts->radius : 1.0f;
  dst->mode = opts != NULL ? (uint8_t)opts->mode : PROTO_PATH_ONCE;
  dst->cornering = opts != NULL ? (uint8_t)opts->cornering : PROTO_CORNER_NONE;
  to_params(opts != NULL ? &opts->params : NULL, &dst->params);
  for (uint32_t i = 0; i < count; i++)
    dst->points[i] = proto_v2(xy[2 * i], xy[2 * i + 1]);
  return 0;
}

static proto_command *cmd_start(steerdc_client *c, uint8_t type) {
  memset(&c->cmd, 0, sizeof c->cmd);
  c->cmd.type = type;
  return &c->cmd;
}

static int cmd_send(steerdc_client *c, uint32_t *request_id) {
  if (c->cl == NULL)
    return STEERDC_ENOTCONN;
  return steerd_client_send(c->cl, &c->cmd, request_id);
}

static int spawn_fill(steerdc_client *c, const steerdc_spawn_desc *s) {
  if (s->model > UINT8_MAX)
    return STEERDC_EINVAL;
  proto_spawn *sp = &cmd_start(c, PROTO_MSG_SPAWN)->spawn;
  sp->model = (uint8_t)s->model;
  sp->position = proto_v2(s->x, s->y);
  if (s->present & STEERDC_SPAWN_ORIENTATION) {
    sp->present |= PROTO_SPAWN_ORIENTATION;
    sp->orientation = s->orientation;
  }
  if (s->present & STEERDC_SPAWN_VELOCITY) {
    sp->present |= PROTO_SPAWN_VX | PROTO_SPAWN_VY;
    sp->velocity = proto_v2(s->vx, s->vy);
  }
  if (s->present & STEERDC_SPAWN_LIMITS) {
    sp->present |= PROTO_SPAWN_LIMITS;
    to_limits(&s->limits, &sp->limits);
  }
  if (s->present & STEERDC_SPAWN_BEHAVIOUR) {
    sp->present |= PROTO_SPAWN_BEHAVIOUR;
    if (to_behaviour(&s->behaviour, &sp->behaviour) != 0)
      return STEERDC_EINVAL;
  }
  return 0;
}

int steerdc_spawn(steerdc_client *c, const steerdc_spawn_desc *s, uint32_t *request_id) {
  if (c == NULL || s == NULL)
    return STEERDC_EINVAL;
  int r = spawn_fill(c, s);
  return r < 0 ? r : cmd_send(c, request_id);
}

int steerdc_spawn_with_path(steerdc_client *c, const steerdc_spawn_desc *s, const float *path_xy,
                            uint32_t point_count, const steerdc_path_options *opts, uint32_t *request_id) {
  if (c == NULL || s == NULL)
    return STEERDC_EINVAL;
  int r = spawn_fill(c, s);
  if (r < 0)
    return r;
  c->cmd.spawn.present |= PROTO_SPAWN_PATH;
  if ((r = to_path(path_xy, point_count, opts, &c->cmd.spawn.path)) < 0)
    return r;
  return cmd_send(c, request_id);
}

static int agent_cmd(steerdc_client *c, uint8_t type, uint32_t agent, uint32_t *request_id) {
  if (c == NULL)
    return STEERDC_EINVAL;
  proto_command *cmd = cmd_start(c, type);
  cmd->despawn.agent = agent; /* despawn, stop and query share proto_agent_cmd */
  cmd->stop.agent = agent;
  cmd->query.agent = agent;
  return cmd_send(c, request_id);
}

int steerdc_despawn(steerdc_client *c, uint32_t agent, uint32_t *request_id) {
  return agent_cmd(c, PROTO_MSG_DESPAWN, agent, request_id);
}

int steerdc_stop(steerdc_client *c, uint32_t agent, uint32_t *request_id) {
  return agent_cmd(c, PROTO_MSG_STOP, agent, request_id);
}

int steerdc_query(steerdc_client *c, uint32_t agent, uint32_t *request_id) {
  return agent_cmd(c, PROTO_MSG_QUERY, agent, request_id);
}

int steerdc_set_behaviour(steerdc_client *c, uint32_t agent, const steerdc_behaviour *b,
                          uint32_t *request_id) {
  if (c == NULL || b == NULL)
    return STEERDC_EINVAL;
  proto_command *cmd = cmd_start(c, PROTO_MSG_SET_BEHAVIOUR);
  cmd->set_behaviour.agent = agent;
  if (to_behaviour(b, &cmd->set_behaviour.behaviour) != 0)
    return STEERDC_EINVAL;
  return cmd_send(c, request_id);
}

int steerdc_set_target(steerdc_client *c, uint32_t agent, uint32_t kind, float x, float y,
                       uint32_t *request_id) {
  steerdc_behaviour b;
  steerdc_behaviour_init(&b, kind);
  b.present = STEERDC_BHV_TARGET;
  b.target_x = x;
  b.target_y = y;
  return steerdc_set_behaviour(c, agent, &b, request_id);
}

int steerdc_set_path(steerdc_client *c, uint32_t agent, const float *path_xy, uint32_t point_count,
                     const steerdc_path_options *opts, uint32_t *request_id) {
  if (c == NULL)
    return STEERDC_EINVAL;
  proto_command *cmd = cmd_start(c, PROTO_MSG_SET_PATH);
  cmd->set_path.agent = agent;
  int r = to_path(path_xy, point_count, opts, &cmd->set_path.path);
  return r < 0 ? r : cmd_send(c, request_id);
}

int steerdc_set_params(steerdc_client *c, uint32_t agent, const steerdc_limits *limits,
                       const steerdc_params *params, uint32_t *request_id) {
  if (c == NULL)
    return STEERDC_EINVAL;
  proto_command *cmd = cmd_start(c, PROTO_MSG_SET_PARAMS);
  cmd->set_params.agent = agent;
  to_limits(limits, &cmd->set_params.limits);
  to_params(params, &cmd->set_params.params);
  return cmd_send(c, request_id);
}

/* ---- the map ---------------------------------------------------------------------- */

uint32_t steerdc_map_version(const steerdc_client *c, int *current) {
  const steerd_mapcopy *m = c != NULL && c->cl != NULL ? steerd_client_map(c->cl) : NULL;
  if (current != NULL)
    *current = m != NULL && steerd_mapcopy_current(m);
  return m != NULL ? steerd_mapcopy_version(m) : 0;
}

uint32_t steerdc_map_count(const steerdc_client *c) {
  const steerd_mapcopy *m = c != NULL && c->cl != NULL ? steerd_client_map(c->cl) : NULL;
  return m != NULL ? steerd_mapcopy_count(m) : 0;
}

int steerdc_map_get(const steerdc_client *c, uint32_t index, steerdc_obstacle *out) {
  const steerd_mapcopy *m = c != NULL && c->cl != NULL ? steerd_client_map(c->cl) : NULL;
  if (m == NULL || out == NULL || index >= steerd_mapcopy_count(m))
    return STEERDC_EINVAL;
  proto_obstacle o = steerd_mapcopy_get(m, index);
  out->id = o.id;
  out->kind = o.kind;
  out->count = o.count;
  out->radius = o.radius;
  out->points_xy = &o.points[0].x; /* proto_vec2 is two floats: the points are x, y pairs */
  return 0;
}

int steerdc_add_obstacle(steerdc_client *c, uint32_t id, uint32_t kind, const float *points_xy,
                         uint32_t count, float radius, uint32_t *request_id) {
  if (c == NULL || points_xy == NULL || kind >= PROTO_OBSTACLE_KIND_COUNT || count == 0 ||
      count > PROTO_MAX_OBSTACLE_POINTS)
    return STEERDC_EINVAL;
  proto_add_obstacle *o = &cmd_start(c, PROTO_MSG_ADD_OBSTACLE)->add_obstacle;
  o->id = id;
  o->kind = (uint8_t)kind;
  o->count = count;
  o->radius = kind == PROTO_OBSTACLE_CIRCLE ? radius : 0.0f;
  for (uint32_t i = 0; i < count; i++)
    o->points[i] = proto_v2(points_xy[2 * i], points_xy[2 * i + 1]);
  return cmd_send(c, request_id);
}

int steerdc_remove_obstacle(steerdc_client *c, uint32_t id, uint32_t *request_id) {
  if (c == NULL)
    return STEERDC_EINVAL;
  cmd_start(c, PROTO_MSG_REMOVE_OBSTACLE)->remove_obstacle.id = id;
  return cmd_send(c, request_id);
}

int steerdc_ping(steerdc_client *c, uint32_t *request_id) {
  if (c == NULL)
    return STEERDC_EINVAL;
  cmd_start(c, PROTO_MSG_PING); /* the internal client stamps client_time_us */
  return cmd_send(c, request_id);
}

int steerdc_set_view(steerdc_client *c, const steerdc_view *v, uint32_t *request_id) {
  if (c == NULL || v == NULL || v->kind >= PROTO_VIEW_KIND_COUNT)
    return STEERDC_EINVAL;
  proto_view *pv = &cmd_start(c, PROTO_MSG_VIEW)->view;
  pv->kind = (uint8_t)v->kind;
  pv->centre = proto_v2(v->centre_x, v->centre_y);
  pv->follow = v->follow;
  pv->radius = v->radius;
  return cmd_send(c, request_id);
}

/* ---- Polling ------------------------------------------------------------------------------ */

static void state_out(const steerd_interp_state *s, steerdc_agent_state *o) {
  o->id = s->id;
  o->mode = (uint32_t)s->mode;
  o->x = (float)s->x;
  o->y = (float)s->y;
  o->theta = (float)s->theta;
  o->vx = (float)s->vx;
  o->vy = (float)s->vy;
  o->age_ms = (float)((double)s->age_us / 1000.0);
}

int steerdc_poll_states(steerdc_client *c, uint64_t now_us, steerdc_agent_state *out, uint32_t cap,
                        steerdc_render_info *info) {
  if (c == NULL || (out == NULL && cap > 0))
    return STEERDC_EINVAL;
  if (c->interp_failed)
    return STEERDC_ENOMEM;
  if (c->it == NULL)
    return STEERDC_ENODATA;
  if (now_us == 0)
    now_us = steerd_client_now_us();
  if (now_us < c->last_now_us)
    now_us = c->last_now_us; /* the buffer's clock never goes back */
  c->last_now_us = now_us;
  int64_t render = 0;
  if (steerd_interp_advance(c->it, now_us, &render) != 0)
    return STEERDC_ENODATA;
  c->has_render = 1;
  c->render_us = render;
  uint32_t total = steerd_interp_count(c->it), n = 0;
  for (uint32_t i = 0; i < total && n < cap; i++) {
    steerd_interp_state s;
    if (steerd_interp_sample(c->it, steerd_interp_id_at(c->it, i), &s) != 0)
      continue;
    state_out(&s, &out[n++]);
    if (s.mode != STEERD_INTERP_MODE_INTERPOLATE)
      c->samples_extrapolated++;
  }
  c->samples_total += n;
  if (info != NULL) {
    steerd_interp_stats st;
    steerd_interp_get_stats(c->it, &st);
    memset(info, 0, sizeof *info);
    info->render_time_us = render;
    info->newest_tick = c->latest_tick;
    info->agent_count = total;
    info->delay_ms = (float)st.delay_ms;
    info->jitter_ms = (float)st.jitter_ms;
  }
  return (int)n;
}

int steerdc_get_agent(steerdc_client *c, uint32_t agent, steerdc_agent_state *out) {
  if (c == NULL || out == NULL)
    return STEERDC_EINVAL;
  if (c->it == NULL || !c->has_render)
    return STEERDC_ENODATA;
  steerd_interp_state s;
  if (steerd_interp_sample_at(c->it, agent, c->render_us, &s) != 0)
    return STEERDC_ENOENT;
  state_out(&s, out);
  return 0;
}

int steerdc_poll_events(steerdc_client *c, steerdc_event *out, uint32_t cap) {
  if (c == NULL || (out == NULL && cap > 0))
    return STEERDC_EINVAL;
  uint32_t n = 0;
  while (n < cap && c->ev_count > 0) {
    out[n++] = c->events[c->ev_head];
    c->ev_head = (c->ev_head + 1) % c->cfg.event_queue;
    c->ev_count--;
  }
  return (int)n;
}

int steerdc_poll_replies(steerdc_client *c, steerdc_reply *out, uint32_t cap) {
  if (c == NULL || (out == NULL && cap > 0))
    return STEERDC_EINVAL;
  uint32_t n = 0;
  while (n < cap && c->rp_count > 0)
    reply_take(c, 0, &out[n++]);
  return (int)n;
}

int steerdc_wait_reply(steerdc_client *c, uint32_t request_id, uint32_t timeout_ms, steerdc_reply *out) {
  if (c == NULL || request_id == 0)
    return STEERDC_EINVAL;
  if (c->cl == NULL)
    return STEERDC_ENOTCONN;
  uint64_t deadline = steerd_client_now_us() + (uint64_t)timeout_ms * 1000u;
  for (;;) {
    for (uint32_t i = 0; i < c->rp_count; i++) {
      const steerdc_reply *r = &c->replies[(c->rp_head + i) % c->cfg.reply_queue];
      if (r->request_id == request_id) {
        int status = r->status;
        reply_take(c, i, out);
        return status;
      }
    }
    uint64_t now = steerd_client_now_us();
    if (now >= deadline)
      return STEERDC_ETIMEDOUT;
    uint64_t left_ms = (deadline - now + 999u) / 1000u;
    int r = steerdc_update(c, left_ms > 100 ? 100 : (uint32_t)left_ms);
    if (r < 0)
      return r;
  }
}

int steerdc_latest_frame(const steerdc_client *c, steerdc_agent_state *out, uint32_t cap, uint64_t *tick,
                         uint64_t *server_time_us) {
  if (c == NULL || (out == NULL && cap > 0))
    return STEERDC_EINVAL;
  if (!c->has_latest)
    return STEERDC_ENODATA;
  uint32_t n = c->latest_count < cap ? c->latest_count : cap;
  for (uint32_t i = 0; i < n; i++) {
    const proto_pose *p = &c->latest[i];
    steerdc_agent_state *o = &out[i];
    o->id = p->id;
    o->mode = STEERDC_MODE_INTERPOLATE;
    o->x = p->x;
    o->y = p->y;
    o->theta = p->theta;
    o->vx = p->vx;
    o->vy = p->vy;
    o->age_ms = 0.0f;
  }
  if (tick != NULL)
    *tick = c->latest_tick;
  if (server_time_us != NULL)
    *server_time_us = c->latest_time_us;
  return (int)n;
}

/* ---- Clocks ------------------------------------------------------------------------------- */

uint64_t steerdc_now_us(void) { return steerd_client_now_us(); }

uint64_t steerdc_server_time_us(const steerdc_client *c) {
  if (c == NULL || c->cl == NULL)
    return 0;
  steerd_client_stats s;
  steerd_client_get_stats(c->cl, &s);
  if (s.pings == 0)
    return 0;
  return (uint64_t)((int64_t)steerd_client_now_us() + s.clock_offset_us);
}

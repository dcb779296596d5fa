/* protocol.c: encoders (msgpack-c packer into a fixed buffer) and strict,
 * allocation-free decoders for the steerd wire protocol (PROTOCOL.md).
 *
 * Decoding uses a small pull reader over the bytes rather than msgpack-c's
 * unpacker: the unpacker allocates a zone per message and would size it from
 * untrusted array headers; the reader here allocates nothing, checks every length
 * against the bytes left, and walks the schema, so nesting is bounded by it. */
#include "protocol.h"

#include <math.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define PROTO_PI_D 3.14159265358979323846

/* ---- Names ---------------------------------------------------------------- */

static const char *const error_names[PROTO_ERR_COUNT] = {
    "OK",           "BAD_MESSAGE",   "UNKNOWN_TYPE",  "BAD_FIELD",      "VERSION_MISMATCH",
    "NOT_WELCOMED", "NO_SUCH_AGENT", "WORLD_FULL",    "MODEL_MISMATCH", "BAD_TARGET",
    "TOO_LARGE",    "RATE_LIMITED",  "NOT_OWNER",     "INTERNAL",       "FORBIDDEN",
    "UNAUTHORIZED", "TOKEN_EXPIRED", "QUOTA_EXCEEDED"};

static const char *const error_texts[PROTO_ERR_COUNT] = {
    "success",
    "the packet is not one well-formed msgpack array of the expected shape",
    "the message type is not known",
    "a field is missing, of the wrong type, not finite, out of range or an unknown name",
    "the protocol version is not supported",
    "a command was sent before HELLO was answered",
    "no such agent",
    "the world holds its maximum of agents or paths",
    "the behaviour or cornering does not suit the agent's movement model",
    "the behaviour's target is missing or not a live agent",
    "the message is too large",
    "too many commands: slow down",
    "the agent belongs to another client",
    "internal server error",
    "the client's role does not allow this command",
    "the HELLO token is missing, forged or unreadable",
    "the HELLO token has expired",
    "the client owns its maximum of agents"};

static const char *const disconnect_names[PROTO_DISCONNECT_COUNT] = {
    "none",   "server shutting down", "protocol abuse", "timeout", "version mismatch", "server full",
    "kicked", "authentication failed", "too slow"};

static const char *const model_names[STEER_MODEL_COUNT] = {"kinematic", "dynamic", "heading"};

static const char *const behaviour_names[STEER_BEHAVIOUR_COUNT] = {
    "none",   "seek",  "flee",      "arrive", "align",      "velocity_match", "face", "look_where_going",
    "pursue", "evade", "interpose", "wander", "follow_path"};

static const char *const facing_names[STEER_FACING_COUNT] = {"look_where_going", "none", "target"};
static const char *const combine_names[STEER_COMBINE_COUNT] = {"blend", "priority"};
static const char *const mode_names[STEER_PATH_MODE_COUNT] = {"once", "loop", "pingpong"};
static const char *const cornering_names[STEER_CORNER_COUNT] = {"none", "arc", "lazy"};
static const char *const snapshot_mode_names[PROTO_SNAPSHOTS_COUNT] = {"full", "delta"};
static const char *const event_names[PROTO_EVENT_COUNT] = {"arrived",  "waypoint", "path_finished",
                                                           "reversed", "spawned",  "despawned"};

/* Value constraints of float fields. */
enum { NUM_ANY = 0, NUM_NONNEG, NUM_POSITIVE };

typedef struct float_field {
  const char *name;
  size_t offset;
  int sign; /* NUM_* */
} float_field;

static const float_field param_fields[PROTO_PARAM_COUNT] = {
    {"time_to_target", offsetof(steer_params, time_to_target), NUM_POSITIVE},
    {"target_radius", offsetof(steer_params, target_radius), NUM_NONNEG},
    {"slow_radius", offsetof(steer_params, slow_radius), NUM_NONNEG},
    {"kinematic_time_to_target", offsetof(steer_params, kinematic_time_to_target), NUM_POSITIVE},
    {"align_target_radius", offsetof(steer_params, align_target_radius), NUM_NONNEG},
    {"align_slow_radius", offsetof(steer_params, align_slow_radius), NUM_NONNEG},
    {"align_time_to_target", offsetof(steer_params, align_time_to_target), NUM_POSITIVE},
    {"max_prediction", offsetof(steer_params, max_prediction), NUM_NONNEG},
    {"panic_radius", offsetof(steer_params, panic_radius), NUM_NONNEG},
    {"wander_offset", offsetof(steer_params, wander_offset), NUM_NONNEG},
    {"wander_radius", offsetof(steer_params, wander_radius), NUM_NONNEG},
    {"wander_rate", offsetof(steer_params, wander_rate), NUM_NONNEG},
    {"separation_radius", offsetof(steer_params, separation_radius), NUM_NONNEG},
    {"turn_trigger_distance", offsetof(steer_params, turn_trigger_distance), NUM_NONNEG},
    {"path_recover_strength", offsetof(steer_params, path_recover_strength), NUM_NONNEG}};

static const float_field limit_fields[PROTO_LIMIT_COUNT] = {
    {"max_speed", offsetof(steer_limits, max_speed), NUM_POSITIVE},
    {"max_acceleration", offsetof(steer_limits, max_acceleration), NUM_POSITIVE},
    {"max_rotation", offsetof(steer_limits, max_rotation), NUM_POSITIVE},
    {"max_angular_acceleration", offsetof(steer_limits, max_angular_acceleration), NUM_POSITIVE},
    {"radius", offsetof(steer_limits, radius), NUM_NONNEG}};

static float *field_ptr(void *base, size_t offset) { return (float *)(void *)((char *)base + offset); }
static float field_get(const void *base, size_t offset) {
  return *(const float *)(const void *)((const char *)base + offset);
}

static const char *name_of(const char *const *table, uint32_t count, uint32_t i) {
  return i < count ? table[i] : NULL;
}

static int64_t code_index(int code) { return code < 0 ? -(int64_t)code : (int64_t)code; }

const char *proto_error_name(int code) {
  int64_t i = code_index(code);
  return i < PROTO_ERR_COUNT ? error_names[i] : "UNKNOWN";
}

const char *proto_error_text(int code) {
  int64_t i = code_index(code);
  return i < PROTO_ERR_COUNT ? error_texts[i] : "unknown error";
}

int proto_error_from_steer(int steer_err) {
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
  default:
    return PROTO_ERR_INTERNAL;
  }
}

const char *proto_disconnect_name(uint32_t reason) {
  const char *n = name_of(disconnect_names, PROTO_DISCONNECT_COUNT, reason);
  return n ? n : "unknown";
}

const char *proto_msg_type_name(uint32_t type) {
  static const char *const client[] = {"HELLO",    "SPAWN",      "DESPAWN",     "SET_BEHAVIOUR",
                                       "SET_PATH", "SET_PARAMS", "STOP",        "QUERY",
                                       "PING",     "VIEW",       "SNAPSHOT_ACK"};
  static const char *const server[] = {"WELCOME", "ACK", "ERROR", "EVENT", "SNAPSHOT", "DELTA", "EVENTS"};
  if (type >= PROTO_MSG_HELLO && type <= PROTO_MSG_SNAPSHOT_ACK)
    return client[type - PROTO_MSG_HELLO];
  if (type >= PROTO_MSG_WELCOME && type <= PROTO_MSG_EVENTS)
    return server[type - PROTO_MSG_WELCOME];
  return NULL;
}

const char *proto_model_name(uint32_t model) { return name_of(model_names, STEER_MODEL_COUNT, model); }
const char *proto_behaviour_name(uint32_t kind) {
  return name_of(behaviour_names, STEER_BEHAVIOUR_COUNT, kind);
}
const char *proto_facing_name(uint32_t facing) { return name_of(facing_names, STEER_FACING_COUNT, facing); }
const char *proto_combine_name(uint32_t combine) {
  return name_of(combine_names, STEER_COMBINE_COUNT, combine);
}
const char *proto_path_mode_name(uint32_t mode) { return name_of(mode_names, STEER_PATH_MODE_COUNT, mode); }
const char *proto_cornering_name(uint32_t c) { return name_of(cornering_names, STEER_CORNER_COUNT, c); }
const char *proto_event_name(uint32_t code) { return name_of(event_names, PROTO_EVENT_COUNT, code); }
const char *proto_param_name(uint32_t i) { return i < PROTO_PARAM_COUNT ? param_fields[i].name : NULL; }
const char *proto_limit_name(uint32_t i) { return i < PROTO_LIMIT_COUNT ? limit_fields[i].name : NULL; }

/* ---- Apply -------------------------------------------------------------------- */

void proto_limits_apply(const proto_limits *src, steer_limits *dst) {
  for (uint32_t i = 0; i < PROTO_LIMIT_COUNT; i++)
    if (src->present & (1u << i))
      *field_ptr(dst, limit_fields[i].offset) = field_get(&src->v, limit_fields[i].offset);
}

void proto_params_apply(const proto_params *src, steer_params *dst) {
  for (uint32_t i = 0; i < PROTO_PARAM_COUNT; i++)
    if (src->present & (1u << i))
      *field_ptr(dst, param_fields[i].offset) = field_get(&src->v, param_fields[i].offset);
}

void proto_behaviour_apply(const proto_behaviour *src, steer_behaviour *dst) {
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
      dst->target.point = src->target;
  } else {
    dst->target.kind = STEER_TARGET_NONE;
  }
  if (src->present & PROTO_BHV_ORIENTATION)
    dst->target.orientation = src->orientation;
  proto_params_apply(&src->params, &dst->params);
}

void proto_spawn_apply(const proto_spawn *src, steer_agent_desc *dst) {
  dst->model = src->model;
  dst->state.position = src->position;
  if (src->present & PROTO_SPAWN_ORIENTATION)
    dst->state.orientation = src->orientation;
  if (src->present & PROTO_SPAWN_VX)
    dst->state.velocity.x = src->velocity.x;
  if (src->present & PROTO_SPAWN_VY)
    dst->state.velocity.y = src->velocity.y;
  if (src->present & PROTO_SPAWN_LIMITS)
    proto_limits_apply(&src->limits, &dst->limits);
  if (src->present & PROTO_SPAWN_BEHAVIOUR)
    proto_behaviour_apply(&src->behaviour, &dst->behaviour);
}

proto_event proto_event_from_steer(const steer_event *e) {
  proto_event out;
  out.tick = e->tick;
  out.code = e->type; /* 0..3 are the same codes */
  out.agent = e->agent;
  out.data = e->node;
  if (e->type == STEER_EVENT_ARRIVED)
    out.data = 0;
  return out;
}

/* ---- Quantization ----------------------------------------------------------- */

int32_t proto_quantize_cm(float v) {
  if (v != v)
    return 0;
  double q = round((double)v * 100.0);
  if (q >= 2147483647.0)
    return INT32_MAX;
  if (q <= -2147483648.0)
    return INT32_MIN;
  return (int32_t)q;
}

float proto_dequantize_cm(int32_t q) { return (float)((double)q / 100.0); }

int16_t proto_quantize_angle(float theta) {
  if (!isfinite(theta))
    return 0;
  double q = round((double)steer_wrap_angle(theta) * 32768.0 / PROTO_PI_D);
  if (q >= 32768.0)
    q -= 65536.0; /* +pi is the same heading as -pi */
  if (q < -32768.0)
    q = -32768.0;
  if (q > 32767.0)
    q = 32767.0;
  return (int16_t)q;
}

float proto_dequantize_angle(int16_t q) { return (float)((double)q * PROTO_PI_D / 32768.0); }

proto_pose_q proto_quantize_pose(const proto_pose *p) {
  proto_pose_q q;
  q.id = p->id;
  q.x = proto_quantize_cm(p->x);
  q.y = proto_quantize_cm(p->y);
  q.theta = proto_quantize_angle(p->theta);
  q.vx = proto_quantize_cm(p->vx);
  q.vy = proto_quantize_cm(p->vy);
  return q;
}

proto_pose proto_dequantize_pose(const proto_pose_q *q) {
  proto_pose p;
  p.id = q->id;
  p.x = proto_dequantize_cm(q->x);
  p.y = proto_dequantize_cm(q->y);
  p.theta = proto_dequantize_angle(q->theta);
  p.vx = proto_dequantize_cm(q->vx);
  p.vy = proto_dequantize_cm(q->vy);
  return p;
}

uint32_t proto_snapshot_capacity(size_t part_bytes) {
  if (part_bytes < PROTO_SNAPSHOT_HEADER_MAX_BYTES)
    return 0;
  size_t n = (part_bytes - PROTO_SNAPSHOT_HEADER_MAX_BYTES) / PROTO_SNAPSHOT_AGENT_MAX_BYTES;
  return n > UINT32_MAX / 6u ? UINT32_MAX / 6u : (uint32_t)n;
}

/* Sizes of msgpack's shortest integer forms, as msgpack-c's packers write them. */
static size_t mp_uint_size(uint64_t v) {
  return v < 128u ? 1 : v <= 0xffu ? 2 : v <= 0xffffu ? 3 : v <= 0xffffffffu ? 5 : 9;
}

static size_t mp_int_size(int64_t v) {
  if (v >= 0)
    return mp_uint_size((uint64_t)v);
  return v >= -32 ? 1 : v >= -128 ? 2 : v >= -32768 ? 3 : v >= INT32_MIN ? 5 : 9;
}

static size_t pose_q_size(const proto_pose_q *q) {
  return mp_uint_size(q->id) + mp_int_size(q->x) + mp_int_size(q->y) + mp_int_size(q->theta) +
         mp_int_size(q->vx) + mp_int_size(q->vy);
}

uint32_t proto_snapshot_fit(const steer_world_view *view, const uint32_t *indices, uint32_t first,
                            uint32_t available, size_t part_bytes) {
  if (part_bytes < PROTO_SNAPSHOT_HEADER_MAX_BYTES)
    return 0;
  size_t budget = part_bytes - PROTO_SNAPSHOT_HEADER_MAX_BYTES, used = 0;
  uint32_t n = 0;
  for (; n < available && n < UINT32_MAX / 6u; n++) {
    uint32_t k = indices ? indices[first + n] : first + n;
    if (k >= view->count)
      break;
    proto_pose p = {view->id[k], view->px[k], view->py[k], view->theta[k], view->vx[k], view->vy[k]};
    proto_pose_q q = proto_quantize_pose(&p);
    size_t sz = pose_q_size(&q);
    if (used + sz > budget)
      break;
    used += sz;
  }
  return n;
}

/* ---- Encoding --------------------------------------------------------------- */

typedef struct writer {
  uint8_t *buf;
  size_t cap, len;
  int overflowed;
} writer;

static int writer_write(void *data, const char *p, size_t n) {
  writer *w = data;
  if (w->overflowed || n > w->cap - w->len) {
    w->overflowed = 1;
    return -1;
  }
  memcpy(w->buf + w->len, p, n);
  w->len += n;
  return 0;
}

static void writer_init(writer *w, msgpack_packer *pk, uint8_t *buf, size_t cap) {
  w->buf = buf;
  w->cap = buf ? cap : 0;
  w->len = 0;
  w->overflowed = 0;
  msgpack_packer_init(pk, w, writer_write);
}

static size_t writer_done(const writer *w) { return w->overflowed ? 0 : w->len; }

static void pack_cstr(msgpack_packer *pk, const char *s) { msgpack_pack_str_with_body(pk, s, strlen(s)); }

static void pack_key(msgpack_packer *pk, const char *key) { pack_cstr(pk, key); }

static void pack_kf(msgpack_packer *pk, const char *key, float v) {
  pack_key(pk, key);
  msgpack_pack_float(pk, v);
}

static void pack_ku(msgpack_packer *pk, const char *key, uint64_t v) {
  pack_key(pk, key);
  msgpack_pack_uint64(pk, v);
}

static void pack_ks(msgpack_packer *pk, const char *key, const char *v) {
  pack_key(pk, key);
  pack_cstr(pk, v);
}

static unsigned popcount32(uint32_t v) {
  unsigned n = 0;
  for (; v; v &= v - 1u)
    n++;
  return n;
}

static void pack_fields(msgpack_packer *pk, const float_field *fields, uint32_t count, uint32_t present,
                        const void *base) {
  present &= (1u << count) - 1u;
  msgpack_pack_map(pk, popcount32(present));
  for (uint32_t i = 0; i < count; i++)
    if (present & (1u << i))
      pack_kf(pk, fields[i].name, field_get(base, fields[i].offset));
}

static void pack_limits(msgpack_packer *pk, const proto_limits *l) {
  pack_fields(pk, limit_fields, PROTO_LIMIT_COUNT, l->present, &l->v);
}

static void pack_params(msgpack_packer *pk, const proto_params *p) {
  pack_fields(pk, param_fields, PROTO_PARAM_COUNT, p->present, &p->v);
}

static void pack_point(msgpack_packer *pk, vec2 p) {
  msgpack_pack_array(pk, 2);
  msgpack_pack_float(pk, p.x);
  msgpack_pack_float(pk, p.y);
}

static bool behaviour_valid(const proto_behaviour *b) {
  if (b->kind >= STEER_BEHAVIOUR_FOLLOW_PATH)
    return false;
  if ((b->present & PROTO_BHV_FACING) && b->facing >= STEER_FACING_COUNT)
    return false;
  if ((b->present & PROTO_BHV_COMBINE) && b->combine >= STEER_COMBINE_COUNT)
    return false;
  return true;
}

static void pack_behaviour(msgpack_packer *pk, const proto_behaviour *b) {
  uint32_t opt = PROTO_BHV_TARGET | PROTO_BHV_TARGET_AGENT | PROTO_BHV_TARGET_AGENT2 | PROTO_BHV_ORIENTATION |
                 PROTO_BHV_FACING | PROTO_BHV_COMBINE | PROTO_BHV_SEPARATION_WEIGHT |
                 PROTO_BHV_MAX_NEIGHBOURS;
  uint32_t p = b->present & opt;
  msgpack_pack_map(pk, 1u + popcount32(p) + (b->params.present & PROTO_PARAM_ALL ? 1u : 0u));
  pack_ks(pk, "kind", behaviour_names[b->kind]);
  if (p & PROTO_BHV_TARGET) {
    pack_key(pk, "target");
    pack_point(pk, b->target);
  }
  if (p & PROTO_BHV_TARGET_AGENT)
    pack_ku(pk, "target_agent", b->target_agent);
  if (p & PROTO_BHV_TARGET_AGENT2)
    pack_ku(pk, "target_agent2", b->target_agent2);
  if (p & PROTO_BHV_ORIENTATION)
    pack_kf(pk, "orientation", b->orientation);
  if (p & PROTO_BHV_FACING)
    pack_ks(pk, "facing", facing_names[b->facing]);
  if (p & PROTO_BHV_COMBINE)
    pack_ks(pk, "combine", combine_names[b->combine]);
  if (p & PROTO_BHV_SEPARATION_WEIGHT)
    pack_kf(pk, "separation_weight", b->separation_weight);
  if (p & PROTO_BHV_MAX_NEIGHBOURS)
    pack_ku(pk, "max_neighbours", b->max_neighbours);
  if (b->params.present & PROTO_PARAM_ALL) {
    pack_key(pk, "params");
    pack_params(pk, &b->params);
  }
}

static bool path_valid(const proto_path *p) {
  return p->count >= 1 && p->count <= PROTO_MAX_PATH_POINTS && p->mode < STEER_PATH_MODE_COUNT &&
         p->cornering < STEER_CORNER_COUNT;
}

/* The path's keys (4 or 5 entries), without the map header. */
static void pack_path_fields(msgpack_packer *pk, const proto_path *p) {
  pack_key(pk, "points");
  msgpack_pack_array(pk, p->count);
  for (uint32_t i = 0; i < p->count; i++)
    pack_point(pk, p->points[i]);
  pack_kf(pk, "radius", p->radius);
  pack_ks(pk, "mode", mode_names[p->mode]);
  pack_ks(pk, "cornering", cornering_names[p->cornering]);
  if (p->params.present & PROTO_PARAM_ALL) {
    pack_key(pk, "params");
    pack_params(pk, &p->params);
  }
}

static uint32_t path_field_count(const proto_path *p) {
  return 4u + (p->params.present & PROTO_PARAM_ALL ? 1u : 0u);
}

size_t proto_encode_command(uint8_t *buf, size_t cap, const proto_command *cmd) {
  writer w;
  msgpack_packer pk;
  writer_init(&w, &pk, buf, cap);
  msgpack_pack_array(&pk, 3);
  msgpack_pack_uint8(&pk, cmd->type);
  msgpack_pack_uint32(&pk, cmd->request_id);
  switch (cmd->type) {
  case PROTO_MSG_HELLO: {
    size_t n = strnlen(cmd->hello.name, sizeof cmd->hello.name);
    size_t tn = strnlen(cmd->hello.token, sizeof cmd->hello.token);
    if (n > PROTO_MAX_NAME_BYTES || tn > PROTO_MAX_TOKEN_BYTES ||
        (cmd->hello.has_snapshots && cmd->hello.snapshots >= PROTO_SNAPSHOTS_COUNT))
      return 0;
    msgpack_pack_map(&pk, 2u + (cmd->hello.has_token ? 1u : 0u) + (cmd->hello.has_snapshots ? 1u : 0u));
    pack_ku(&pk, "version", cmd->hello.version);
    pack_key(&pk, "name");
    msgpack_pack_str_with_body(&pk, cmd->hello.name, n);
    if (cmd->hello.has_token) {
      pack_key(&pk, "token");
      msgpack_pack_str_with_body(&pk, cmd->hello.token, tn);
    }
    if (cmd->hello.has_snapshots)
      pack_ks(&pk, "snapshots", snapshot_mode_names[cmd->hello.snapshots]);
    break;
  }
  case PROTO_MSG_SPAWN: {
    const proto_spawn *s = &cmd->spawn;
    uint32_t opt = s->present & (PROTO_SPAWN_ORIENTATION | PROTO_SPAWN_VX | PROTO_SPAWN_VY |
                                 PROTO_SPAWN_LIMITS | PROTO_SPAWN_BEHAVIOUR | PROTO_SPAWN_PATH);
    if (s->model >= STEER_MODEL_COUNT)
      return 0;
    if ((opt & PROTO_SPAWN_BEHAVIOUR) && !behaviour_valid(&s->behaviour))
      return 0;
    if ((opt & PROTO_SPAWN_PATH) && !path_valid(&s->path))
      return 0;
    msgpack_pack_map(&pk, 3u + popcount32(opt));
    pack_ks(&pk, "model", model_names[s->model]);
    pack_kf(&pk, "x", s->position.x);
    pack_kf(&pk, "y", s->position.y);
    if (opt & PROTO_SPAWN_ORIENTATION)
      pack_kf(&pk, "orientation", s->orientation);
    if (opt & PROTO_SPAWN_VX)
      pack_kf(&pk, "vx", s->velocity.x);
    if (opt & PROTO_SPAWN_VY)
      pack_kf(&pk, "vy", s->velocity.y);
    if (opt & PROTO_SPAWN_LIMITS) {
      pack_key(&pk, "limits");
      pack_limits(&pk, &s->limits);
    }
    if (opt & PROTO_SPAWN_BEHAVIOUR) {
      pack_key(&pk, "behaviour");
      pack_behaviour(&pk, &s->behaviour);
    }
    if (opt & PROTO_SPAWN_PATH) {
      pack_key(&pk, "path");
      msgpack_pack_map(&pk, path_field_count(&s->path));
      pack_path_fields(&pk, &s->path);
    }
    break;
  }
  case PROTO_MSG_DESPAWN:
  case PROTO_MSG_STOP:
  case PROTO_MSG_QUERY:
    msgpack_pack_map(&pk, 1);
    pack_ku(&pk, "agent",
            cmd->type == PROTO_MSG_DESPAWN ? cmd->despawn.agent
            : cmd->type == PROTO_MSG_STOP  ? cmd->stop.agent
                                           : cmd->query.agent);
    break;
  case PROTO_MSG_SET_BEHAVIOUR:
    if (!behaviour_valid(&cmd->set_behaviour.behaviour))
      return 0;
    msgpack_pack_map(&pk, 2);
    pack_ku(&pk, "agent", cmd->set_behaviour.agent);
    pack_key(&pk, "behaviour");
    pack_behaviour(&pk, &cmd->set_behaviour.behaviour);
    break;
  case PROTO_MSG_SET_PATH:
    if (!path_valid(&cmd->set_path.path))
      return 0;
    msgpack_pack_map(&pk, 1u + path_field_count(&cmd->set_path.path));
    pack_ku(&pk, "agent", cmd->set_path.agent);
    pack_path_fields(&pk, &cmd->set_path.path);
    break;
  case PROTO_MSG_SET_PARAMS: {
    const proto_set_params *s = &cmd->set_params;
    bool has_l = (s->limits.present & PROTO_LIMIT_ALL) != 0,
         has_p = (s->params.present & PROTO_PARAM_ALL) != 0;
    msgpack_pack_map(&pk, 1u + (has_l ? 1u : 0u) + (has_p ? 1u : 0u));
    pack_ku(&pk, "agent", s->agent);
    if (has_l) {
      pack_key(&pk, "limits");
      pack_limits(&pk, &s->limits);
    }
    if (has_p) {
      pack_key(&pk, "params");
      pack_params(&pk, &s->params);
    }
    break;
  }
  case PROTO_MSG_PING:
    msgpack_pack_map(&pk, 1);
    pack_ku(&pk, "client_time_us", cmd->ping.client_time_us);
    break;
  case PROTO_MSG_VIEW: {
    const proto_view *v = &cmd->view;
    if (v->kind == PROTO_VIEW_ALL) {
      msgpack_pack_map(&pk, 1);
      pack_key(&pk, "all");
      msgpack_pack_true(&pk);
    } else if (v->kind == PROTO_VIEW_CENTRE) {
      msgpack_pack_map(&pk, 2);
      pack_key(&pk, "centre");
      pack_point(&pk, v->centre);
      pack_kf(&pk, "radius", v->radius);
    } else if (v->kind == PROTO_VIEW_FOLLOW) {
      msgpack_pack_map(&pk, 2);
      pack_ku(&pk, "follow", v->follow);
      pack_kf(&pk, "radius", v->radius);
    } else {
      return 0;
    }
    break;
  }
  default:
    return 0;
  }
  return writer_done(&w);
}

size_t proto_encode_welcome(uint8_t *buf, size_t cap, const proto_welcome *m) {
  writer w;
  msgpack_packer pk;
  writer_init(&w, &pk, buf, cap);
  msgpack_pack_array(&pk, 3);
  msgpack_pack_uint8(&pk, PROTO_MSG_WELCOME);
  msgpack_pack_uint32(&pk, m->request_id);
  msgpack_pack_map(&pk, 7);
  pack_ku(&pk, "client_id", m->client_id);
  pack_ku(&pk, "tick_rate", m->tick_rate);
  pack_ku(&pk, "snapshot_rate", m->snapshot_rate);
  pack_key(&pk, "world");
  msgpack_pack_array(&pk, 4);
  msgpack_pack_float(&pk, m->world_min.x);
  msgpack_pack_float(&pk, m->world_min.y);
  msgpack_pack_float(&pk, m->world_max.x);
  msgpack_pack_float(&pk, m->world_max.y);
  pack_ku(&pk, "tick", m->tick);
  pack_ku(&pk, "server_time_us", m->server_time_us);
  pack_ku(&pk, "protocol", m->protocol);
  return writer_done(&w);
}

size_t proto_encode_ack(uint8_t *buf, size_t cap, const proto_ack *a) {
  writer w;
  msgpack_packer pk;
  writer_init(&w, &pk, buf, cap);
  msgpack_pack_array(&pk, 4);
  msgpack_pack_uint8(&pk, PROTO_MSG_ACK);
  msgpack_pack_uint32(&pk, a->request_id);
  msgpack_pack_uint8(&pk, a->command);
  switch (a->command) {
  case PROTO_MSG_SPAWN:
  case PROTO_MSG_DESPAWN:
  case PROTO_MSG_SET_BEHAVIOUR:
  case PROTO_MSG_SET_PATH:
  case PROTO_MSG_SET_PARAMS:
  case PROTO_MSG_STOP:
    if (a->command == PROTO_MSG_SET_PARAMS && a->target_lost) {
      msgpack_pack_map(&pk, 2);
      pack_ku(&pk, "agent", a->agent);
      pack_key(&pk, "target_lost");
      msgpack_pack_true(&pk);
      break;
    }
    msgpack_pack_map(&pk, 1);
    pack_ku(&pk, "agent", a->agent);
    break;
  case PROTO_MSG_QUERY: {
    const proto_agent_report *q = &a->query;
    if (q->model >= STEER_MODEL_COUNT || q->behaviour >= STEER_BEHAVIOUR_COUNT)
      return 0;
    msgpack_pack_map(&pk, 14);
    pack_ku(&pk, "agent", a->agent);
    pack_ku(&pk, "tick", q->tick);
    pack_ks(&pk, "model", model_names[q->model]);
    pack_kf(&pk, "x", q->state.position.x);
    pack_kf(&pk, "y", q->state.position.y);
    pack_kf(&pk, "orientation", q->state.orientation);
    pack_kf(&pk, "vx", q->state.velocity.x);
    pack_kf(&pk, "vy", q->state.velocity.y);
    pack_kf(&pk, "rotation", q->state.rotation);
    pack_ks(&pk, "behaviour", behaviour_names[q->behaviour]);
    pack_key(&pk, "arrived");
    if (q->arrived)
      msgpack_pack_true(&pk);
    else
      msgpack_pack_false(&pk);
    pack_key(&pk, "path_node");
    if (q->path_node < 0)
      msgpack_pack_nil(&pk);
    else
      msgpack_pack_uint32(&pk, (uint32_t)q->path_node);
    pack_key(&pk, "limits");
    {
      proto_limits l = {PROTO_LIMIT_ALL, q->limits};
      pack_limits(&pk, &l);
    }
    pack_ku(&pk, "owner", q->owner);
    break;
  }
  case PROTO_MSG_PING:
    msgpack_pack_map(&pk, 3);
    pack_ku(&pk, "client_time_us", a->pong.client_time_us);
    pack_ku(&pk, "server_time_us", a->pong.server_time_us);
    pack_ku(&pk, "tick", a->pong.tick);
    break;
  case PROTO_MSG_VIEW:
    msgpack_pack_map(&pk, 0);
    break;
  default:
    return 0;
  }
  return writer_done(&w);
}

/* Length of s cut to at most max bytes, not inside a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t max) {
  size_t n = strnlen(s, max + 1);
  if (n <= max)
    return n;
  n = max;
  while (n > 0 && ((unsigned char)s[n] & 0xC0u) == 0x80u)
    n--;
  return n;
}

static size_t encode_error(uint8_t *buf, size_t cap, uint32_t request_id, uint32_t code, const char *message,
                           const char *field) {
  writer w;
  msgpack_packer pk;
  writer_init(&w, &pk, buf, cap);
  if (!message)
    message = "";
  msgpack_pack_array(&pk, 5);
  msgpack_pack_uint8(&pk, PROTO_MSG_ERROR);
  msgpack_pack_uint32(&pk, request_id);
  msgpack_pack_uint32(&pk, code);
  msgpack_pack_str_with_body(&pk, message, utf8_cut(message, PROTO_MAX_ERROR_TEXT_BYTES));
  if (field)
    msgpack_pack_str_with_body(&pk, field, utf8_cut(field, PROTO_MAX_FIELD_BYTES));
  else
    msgpack_pack_nil(&pk);
  return writer_done(&w);
}

size_t proto_encode_error(uint8_t *buf, size_t cap, uint32_t request_id, int code, const char *message,
                          const char *field) {
  return encode_error(buf, cap, request_id, (uint32_t)code_index(code), message, field);
}

size_t proto_encode_event(uint8_t *buf, size_t cap, const proto_event *e) {
  writer w;
  msgpack_packer pk;
  if (e->code >= PROTO_EVENT_COUNT)
    return 0;
  writer_init(&w, &pk, buf, cap);
  msgpack_pack_array(&pk, 5);
  msgpack_pack_uint8(&pk, PROTO_MSG_EVENT);
  msgpack_pack_uint64(&pk, e->tick);
  msgpack_pack_uint8(&pk, e->code);
  msgpack_pack_uint32(&pk, e->agent);
  msgpack_pack_uint32(&pk, e->data);
  return writer_done(&w);
}

static void pack_snapshot_header(msgpack_packer *pk, const proto_snapshot_header *h, uint32_t count) {
  msgpack_pack_array(pk, 7);
  msgpack_pack_uint8(pk, PROTO_MSG_SNAPSHOT);
  msgpack_pack_uint64(pk, h->tick);
  msgpack_pack_uint64(pk, h->server_time_us);
  msgpack_pack_uint32(pk, h->part_index);
  msgpack_pack_uint32(pk, h->part_count);
  msgpack_pack_uint32(pk, h->agent_total);
  msgpack_pack_array(pk, (size_t)count * 6u);
}

static void pack_pose(msgpack_packer *pk, const proto_pose *p) {
  proto_pose_q q = proto_quantize_pose(p);
  msgpack_pack_uint32(pk, q.id);
  msgpack_pack_int32(pk, q.x);
  msgpack_pack_int32(pk, q.y);
  msgpack_pack_int16(pk, q.theta);
  msgpack_pack_int32(pk, q.vx);
  msgpack_pack_int32(pk, q.vy);
}

size_t proto_encode_snapshot(uint8_t *buf, size_t cap, const proto_snapshot_header *h,
                             const proto_pose *poses, uint32_t count) {
  writer w;
  msgpack_packer pk;
  if (count > UINT32_MAX / 6u || (count > 0 && !poses))
    return 0;
  writer_init(&w, &pk, buf, cap);
  pack_snapshot_header(&pk, h, count);
  for (uint32_t i = 0; i < count && !w.overflowed; i++)
    pack_pose(&pk, &poses[i]);
  return writer_done(&w);
}

size_t proto_encode_snapshot_view(uint8_t *buf, size_t cap, const proto_snapshot_header *h,
                                  const steer_world_view *view, const uint32_t *indices, uint32_t first,
                                  uint32_t count) {
  writer w;
  msgpack_packer pk;
  if (count > UINT32_MAX / 6u)
    return 0;
  if (!indices && (first > view->count || count > view->count - first))
    return 0;
  writer_init(&w, &pk, buf, cap);
  pack_snapshot_header(&pk, h, count);
  for (uint32_t i = 0; i < count && !w.overflowed; i++) {
    uint32_t k = indices ? indices[first + i] : first + i;
    if (k >= view->count)
      return 0;
    proto_pose p = {view->id[k], view->px[k], view->py[k], view->theta[k], view->vx[k], view->vy[k]};
    pack_pose(&pk, &p);
  }
  return writer_done(&w);
}

size_t proto_encode_server_msg(uint8_t *buf, size_t cap, const proto_server_msg *m) {
  switch (m->type) {
  case PROTO_MSG_WELCOME:
    return proto_encode_welcome(buf, cap, &m->welcome);
  case PROTO_MSG_ACK:
    return proto_encode_ack(buf, cap, &m->ack);
  case PROTO_MSG_ERROR:
    return encode_error(buf, cap, m->error.request_id, m->error.code, m->error.message,
                        m->error.has_field ? m->error.field : NULL);
  case PROTO_MSG_EVENT:
    return proto_encode_event(buf, cap, &m->event);
  case PROTO_MSG_SNAPSHOT:
    return proto_encode_snapshot(buf, cap, &m->snapshot.header, m->snapshot.poses, m->snapshot.count);
  default:
    return 0;
  }
}

/* ---- Decoding: the reader ----------------------------------------------------- */

typedef enum mp_kind {
  MP_NIL,
  MP_BOOL,
  MP_UINT,
  MP_INT,
  MP_FLOAT,
  MP_STR,
  MP_BIN,
  MP_ARRAY,
  MP_MAP,
  MP_EXT
} mp_kind;

typedef struct mp_val {
  mp_kind kind;
  uint64_t u;       /* MP_UINT value, MP_BOOL, or count / length */
  int64_t i;        /* MP_INT value (< 0) */
  double f;         /* MP_FLOAT */
  const uint8_t *s; /* MP_STR / MP_BIN bytes */
} mp_val;

#define PATH_CAP 96

typedef struct reader {
  const uint8_t *p;
  size_t len, pos;
  proto_error_info *err;
  bool strict; /* unknown keys are errors (client -> server) */
  size_t path_len;
  char path[PATH_CAP];
} reader;

static int fail(reader *r, int code, const char *reason) {
  if (r->err->code == PROTO_OK) {
    r->err->code = code;
    r->err->reason = reason;
    size_t n = r->path_len < PROTO_MAX_FIELD_BYTES ? r->path_len : PROTO_MAX_FIELD_BYTES;
    memcpy(r->err->field, r->path, n);
    r->err->field[n] = '\0';
  }
  return -1;
}

/* Path segments: push returns the old length to restore. */
static size_t path_push_bytes(reader *r, const char *s, size_t n, bool dot) {
  size_t old = r->path_len;
  size_t room = PATH_CAP - 1 - r->path_len;
  if (dot && r->path_len > 0 && room > 0) {
    r->path[r->path_len++] = '.';
    room--;
  }
  if (n > room)
    n = room;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    r->path[r->path_len++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?'; /* keys come from the wire */
  }
  r->path[r->path_len] = '\0';
  return old;
}

static size_t path_push(reader *r, const char *name) { return path_push_bytes(r, name, strlen(name), true); }

static size_t path_push_index(reader *r, uint32_t i) {
  char tmp[16];
  size_t n = 0;
  char digits[12];
  size_t d = 0;
  do {
    digits[d++] = "0123456789"[i % 10u];
    i /= 10u;
  } while (i);
  tmp[n++] = '[';
  while (d)
    tmp[n++] = digits[--d];
  tmp[n++] = ']';
  return path_push_bytes(r, tmp, n, false);
}

static void path_pop(reader *r, size_t old) {
  r->path_len = old;
  r->path[old] = '\0';
}

/* fail() with the path extended by field for the error; -1. */
static int fail_at(reader *r, const char *field, int code, const char *reason) {
  size_t old = path_push(r, field);
  fail(r, code, reason);
  path_pop(r, old);
  return -1;
}

static int need(reader *r, size_t n) {
  if (n > r->len - r->pos)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "truncated");
  return 0;
}

static uint64_t be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = (v << 8) | p[i];
  return v;
}

/* Reads one value's header; strings and binaries are consumed whole, arrays and
 * maps leave their elements to the caller. */
static int rd_val(reader *r, mp_val *v) {
  if (need(r, 1))
    return -1;
  uint8_t b = r->p[r->pos++];
  int n = 0;
  memset(v, 0, sizeof *v);
  if (b <= 0x7f) {
    v->kind = MP_UINT;
    v->u = b;
    return 0;
  }
  if (b >= 0xe0) {
    v->kind = MP_INT;
    v->i = (int64_t)b - 256; /* negative fixint: 0xe0..0xff is -32..-1 */
    return 0;
  }
  if ((b & 0xf0) == 0x80) {
    v->kind = MP_MAP;
    v->u = b & 0x0fu;
    return 0;
  }
  if ((b & 0xf0) == 0x90) {
    v->kind = MP_ARRAY;
    v->u = b & 0x0fu;
    return 0;
  }
  if ((b & 0xe0) == 0xa0) {
    v->kind = MP_STR;
    v->u = b & 0x1fu;
    goto body;
  }
  switch (b) {
  case 0xc0:
    v->kind = MP_NIL;
    return 0;
  case 0xc2:
  case 0xc3:
    v->kind = MP_BOOL;
    v->u = b == 0xc3;
    return 0;
  case 0xcc:
  case 0xcd:
  case 0xce:
  case 0xcf:
    n = 1 << (b - 0xcc);
    if (need(r, (size_t)n))
      return -1;
    v->kind = MP_UINT;
    v->u = be(r->p + r->pos, n);
    r->pos += (size_t)n;
    return 0;
  case 0xd0:
  case 0xd1:
  case 0xd2:
  case 0xd3: {
    n = 1 << (b - 0xd0);
    if (need(r, (size_t)n))
      return -1;
    uint64_t raw = be(r->p + r->pos, n);
    r->pos += (size_t)n;
    int64_t s;
    if (n == 8) {
      s = raw >= (1ull << 63) ? -(int64_t)(~raw) - 1 : (int64_t)raw;
    } else {
      uint64_t sign = 1ull << (8 * n - 1);
      s = (raw & sign) ? (int64_t)raw - (int64_t)(sign << 1) : (int64_t)raw;
    }
    if (s >= 0) {
      v->kind = MP_UINT;
      v->u = (uint64_t)s;
    } else {
      v->kind = MP_INT;
      v->i = s;
    }
    return 0;
  }
  case 0xca: {
    if (need(r, 4))
      return -1;
    uint32_t bits = (uint32_t)be(r->p + r->pos, 4);
    float f;
    memcpy(&f, &bits, 4);
    r->pos += 4;
    v->kind = MP_FLOAT;
    v->f = f;
    return 0;
  }
  case 0xcb: {
    if (need(r, 8))
      return -1;
    uint64_t bits = be(r->p + r->pos, 8);
    double d;
    memcpy(&d, &bits, 8);
    r->pos += 8;
    v->kind = MP_FLOAT;
    v->f = d;
    return 0;
  }
  case 0xd9:
  case 0xda:
  case 0xdb:
    n = 1 << (b - 0xd9);
    v->kind = MP_STR;
    goto sized;
  case 0xc4:
  case 0xc5:
  case 0xc6:
    n = 1 << (b - 0xc4);
    v->kind = MP_BIN;
    goto sized;
  case 0xdc:
  case 0xdd:
  case 0xde:
  case 0xdf:
    n = (b & 1u) ? 4 : 2;
    if (need(r, (size_t)n))
      return -1;
    v->kind = b <= 0xdd ? MP_ARRAY : MP_MAP;
    v->u = be(r->p + r->pos, n);
    r->pos += (size_t)n;
    return 0;
  case 0xd4:
  case 0xd5:
  case 0xd6:
  case 0xd7:
  case 0xd8: /* fixext: type byte + 1..16 bytes */
    v->kind = MP_EXT;
    v->u = (uint64_t)1 << (b - 0xd4);
    if (need(r, 1 + (size_t)v->u))
      return -1;
    r->pos += 1 + (size_t)v->u;
    return 0;
  case 0xc7:
  case 0xc8:
  case 0xc9:
    n = 1 << (b - 0xc7);
    if (need(r, (size_t)n))
      return -1;
    v->kind = MP_EXT;
    v->u = be(r->p + r->pos, n);
    r->pos += (size_t)n;
    if (need(r, 1) || need(r, 1 + (size_t)v->u))
      return -1;
    r->pos += 1 + (size_t)v->u;
    return 0;
  default: /* 0xc1 is never used */
    return fail(r, PROTO_ERR_BAD_MESSAGE, "invalid msgpack byte");
  }
sized:
  if (need(r, (size_t)n))
    return -1;
  v->u = be(r->p + r->pos, n);
  r->pos += (size_t)n;
body:
  if (need(r, (size_t)v->u))
    return -1;
  v->s = r->p + r->pos;
  r->pos += (size_t)v->u;
  return 0;
}

/* Skips one whole value without recursion. */
static int rd_skip(reader *r) {
  uint64_t left = 1;
  while (left > 0) {
    mp_val v;
    if (rd_val(r, &v))
      return -1;
    left--;
    if (v.kind == MP_ARRAY)
      left += v.u;
    else if (v.kind == MP_MAP)
      left += 2 * v.u;
    if (left > r->len - r->pos) /* every value takes at least one byte */
      return fail(r, PROTO_ERR_BAD_MESSAGE, "truncated");
  }
  return 0;
}

static int bad(reader *r, const char *reason) { return fail(r, PROTO_ERR_BAD_FIELD, reason); }

/* The rd_* readers set their outputs on every path, failures included: fail()
 * is not inlined everywhere, so the compiler cannot tell that it returns -1,
 * and a caller's local would look unset on a "successful" failure (gcc -O3
 * -Wmaybe-uninitialized). */
static int rd_uint(reader *r, uint64_t max, uint64_t *out) {
  mp_val v;
  *out = 0;
  if (rd_val(r, &v))
    return -1;
  if (v.kind == MP_INT)
    return bad(r, "out of range");
  if (v.kind != MP_UINT)
    return bad(r, "expected an integer");
  if (v.u > max)
    return bad(r, "out of range");
  *out = v.u;
  return 0;
}

static int rd_u32(reader *r, uint32_t *out) {
  uint64_t u;
  if (rd_uint(r, UINT32_MAX, &u))
    return -1;
  *out = (uint32_t)u;
  return 0;
}

static int rd_u64(reader *r, uint64_t *out) { return rd_uint(r, UINT64_MAX, out); }

static int rd_int(reader *r, int64_t min, int64_t max, int64_t *out) {
  mp_val v;
  *out = 0;
  if (rd_val(r, &v))
    return -1;
  if (v.kind == MP_UINT) {
    if (v.u > (uint64_t)max)
      return bad(r, "out of range");
    *out = (int64_t)v.u;
    return 0;
  }
  if (v.kind != MP_INT)
    return bad(r, "expected an integer");
  if (v.i < min)
    return bad(r, "out of range");
  *out = v.i;
  return 0;
}

static int rd_number(reader *r, int sign, double *out);

static int rd_float(reader *r, int sign, float *out) {
  double d;
  *out = 0.0f;
  if (rd_number(r, sign, &d))
    return -1;
  float f = (float)d;
  if (sign == NUM_POSITIVE && !(f > 0.0f))
    return bad(r, "must be > 0");
  *out = f;
  return 0;
}

/* A number as sent (integer, float32 or float64), checked as rd_float does, in double. */
static int rd_number(reader *r, int sign, double *out) {
  mp_val v;
  double d;
  *out = 0.0;
  if (rd_val(r, &v))
    return -1;
  if (v.kind == MP_UINT)
    d = (double)v.u;
  else if (v.kind == MP_INT)
    d = (double)v.i;
  else if (v.kind == MP_FLOAT)
    d = v.f;
  else
    return bad(r, "expected a number");
  if (!isfinite(d))
    return bad(r, "not finite");
  if (fabs(d) > (double)PROTO_MAX_ABS_FLOAT)
    return bad(r, "out of range");
  if (sign == NUM_NONNEG && d < 0.0)
    return bad(r, "must be >= 0");
  if (sign == NUM_POSITIVE && !(d > 0.0))
    return bad(r, "must be > 0");
  *out = d;
  return 0;
}

/* Reduced from the value as sent (a float64 keeps its digits), in double. */
static int rd_angle(reader *r, float *out) {
  double a;
  if (rd_number(r, NUM_ANY, &a))
    return -1;
  *out = steer_wrap_angle_d(a);
  return 0;
}

static int rd_bool(reader *r, uint8_t *out) {
  mp_val v;
  if (rd_val(r, &v))
    return -1;
  if (v.kind != MP_BOOL)
    return bad(r, "expected a boolean");
  *out = (uint8_t)v.u;
  return 0;
}

static int rd_str(reader *r, size_t max, const uint8_t **s, size_t *n) {
  mp_val v;
  *s = NULL;
  *n = 0;
  if (rd_val(r, &v))
    return -1;
  if (v.kind != MP_STR)
    return bad(r, "expected a string");
  if (v.u > max)
    return bad(r, "string too long");
  *s = v.s;
  *n = (size_t)v.u;
  return 0;
}

/* Index of the string in names[0..count), or an error. */
static int rd_enum(reader *r, const char *const *names, uint32_t count, uint8_t *out) {
  const uint8_t *s;
  size_t n;
  if (rd_str(r, 32, &s, &n))
    return -1;
  for (uint32_t i = 0; i < count; i++)
    if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0) {
      *out = (uint8_t)i;
      return 0;
    }
  return bad(r, "unknown value");
}

static int rd_array(reader *r, uint32_t min, uint32_t max, uint32_t *count) {
  mp_val v;
  *count = 0;
  if (rd_val(r, &v))
    return -1;
  if (v.kind != MP_ARRAY)
    return bad(r, "expected an array");
  if (v.u < min)
    return bad(r, "too few elements");
  if (v.u > max)
    return bad(r, "too many elements");
  *count = (uint32_t)v.u;
  return 0;
}

static int rd_point(reader *r, vec2 *out) {
  uint32_t n;
  if (rd_array(r, 2, 2, &n))
    return -1;
  size_t old = path_push_index(r, 0);
  int rc = rd_float(r, NUM_ANY, &out->x);
  path_pop(r, old);
  if (rc)
    return -1;
  old = path_push_index(r, 1);
  rc = rd_float(r, NUM_ANY, &out->y);
  path_pop(r, old);
  return rc;
}

static bool utf8_valid(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    size_t k;
    uint32_t cp;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      k = 1;
      cp = c & 0x1fu;
    } else if ((c & 0xf0) == 0xe0) {
      k = 2;
      cp = c & 0x0fu;
    } else if ((c & 0xf8) == 0xf0) {
      k = 3;
      cp = c & 0x07u;
    } else {
      return false;
    }
    if (k > n - i - 1)
      return false;
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xc0) != 0x80)
        return false;
      cp = (cp << 6) | (s[i + j] & 0x3fu);
    }
    if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += k + 1;
  }
  return true;
}

/* Walks a map of string keys: fn(r, key index, ctx) reads each known key's value
 * (the path already names it). Unknown keys: errors when strict, else skipped.
 * Duplicates are errors. Missing keys of required are errors. */
typedef int (*field_fn)(reader *r, int key, void *ctx);

static int rd_map(reader *r, const char *const *keys, int nkeys, uint32_t required, field_fn fn, void *ctx,
                  uint32_t *seen_out) {
  mp_val v;
  uint32_t seen = 0;
  if (rd_val(r, &v))
    return -1;
  if (v.kind != MP_MAP)
    return bad(r, "expected a map");
  if (v.u > PROTO_MAX_MAP_ENTRIES)
    return bad(r, "too many entries");
  for (uint32_t e = 0; e < (uint32_t)v.u; e++) {
    mp_val k;
    if (rd_val(r, &k))
      return -1;
    if (k.kind != MP_STR)
      return bad(r, "key not a string");
    int idx = -1;
    for (int i = 0; i < nkeys; i++)
      if (strlen(keys[i]) == k.u && memcmp(keys[i], k.s, (size_t)k.u) == 0) {
        idx = i;
        break;
      }
    size_t old = path_push_bytes(r, (const char *)k.s, k.u > 32 ? 32 : (size_t)k.u, true);
    int rc;
    if (idx < 0)
      rc = r->strict ? bad(r, "unknown key") : rd_skip(r);
    else if (seen & (1u << idx))
      rc = bad(r, "duplicate key");
    else {
      seen |= 1u << idx;
      rc = fn(r, idx, ctx);
    }
    path_pop(r, old);
    if (rc)
      return -1;
  }
  uint32_t missing = required & ~seen;
  if (missing) {
    int i = 0;
    while (!(missing & (1u << i)))
      i++;
    return fail_at(r, keys[i], PROTO_ERR_BAD_FIELD, "missing");
  }
  if (seen_out)
    *seen_out = seen;
  return 0;
}

/* Reads a map of optional float fields (limits, params). */
typedef struct fields_ctx {
  const float_field *fields;
  void *base;
} fields_ctx;

static int fields_fn(reader *r, int key, void *ctx) {
  fields_ctx *c = ctx;
  return rd_float(r, c->fields[key].sign, field_ptr(c->base, c->fields[key].offset));
}

static int rd_fields(reader *r, const float_field *fields, int count, void *base, uint32_t *present) {
  const char *names[PROTO_PARAM_COUNT];
  fields_ctx c = {fields, base};
  for (int i = 0; i < count; i++)
    names[i] = fields[i].name;
  return rd_map(r, names, count, 0, fields_fn, &c, present);
}

static int rd_limits(reader *r, proto_limits *l) {
  memset(l, 0, sizeof *l);
  return rd_fields(r, limit_fields, PROTO_LIMIT_COUNT, &l->v, &l->present);
}

static int rd_params(reader *r, proto_params *p) {
  memset(p, 0, sizeof *p);
  return rd_fields(r, param_fields, PROTO_PARAM_COUNT, &p->v, &p->present);
}

/* ---- Decoding: command bodies ---------------------------------------------------- */

static const char *const behaviour_keys[] = {"kind",           "target", "target_agent", "target_agent2",
                                             "orientation",    "facing", "combine",      "separation_weight",
                                             "max_neighbours", "params"};
enum {
  BK_KIND,
  BK_TARGET,
  BK_AGENT,
  BK_AGENT2,
  BK_ORIENT,
  BK_FACING,
  BK_COMBINE,
  BK_SEPW,
  BK_MAXN,
  BK_PARAMS
};

static int behaviour_fn(reader *r, int key, void *ctx) {
  proto_behaviour *b = ctx;
  uint64_t u;
  switch (key) {
  case BK_KIND: {
    const uint8_t *s;
    size_t n;
    size_t save = r->pos;
    if (rd_str(r, 32, &s, &n))
      return -1;
    if (n == 11 && memcmp(s, "follow_path", 11) == 0)
      return bad(r, "follow_path is set with SET_PATH");
    r->pos = save;
    return rd_enum(r, behaviour_names, STEER_BEHAVIOUR_FOLLOW_PATH, &b->kind);
  }
  case BK_TARGET:
    b->present |= PROTO_BHV_TARGET;
    return rd_point(r, &b->target);
  case BK_AGENT:
    b->present |= PROTO_BHV_TARGET_AGENT;
    return rd_u32(r, &b->target_agent);
  case BK_AGENT2:
    b->present |= PROTO_BHV_TARGET_AGENT2;
    return rd_u32(r, &b->target_agent2);
  case BK_ORIENT:
    b->present |= PROTO_BHV_ORIENTATION;
    return rd_angle(r, &b->orientation);
  case BK_FACING:
    b->present |= PROTO_BHV_FACING;
    return rd_enum(r, facing_names, STEER_FACING_COUNT, &b->facing);
  case BK_COMBINE:
    b->present |= PROTO_BHV_COMBINE;
    return rd_enum(r, combine_names, STEER_COMBINE_COUNT, &b->combine);
  case BK_SEPW:
    b->present |= PROTO_BHV_SEPARATION_WEIGHT;
    return rd_float(r, NUM_NONNEG, &b->separation_weight);
  case BK_MAXN:
    b->present |= PROTO_BHV_MAX_NEIGHBOURS;
    if (rd_uint(r, 255, &u))
      return -1;
    b->max_neighbours = (uint8_t)u;
    return 0;
  default:
    return rd_params(r, &b->params);
  }
}

static int rd_behaviour(reader *r, proto_behaviour *b) {
  memset(b, 0, sizeof *b);
  if (rd_map(r, behaviour_keys, 10, 1u << BK_KIND, behaviour_fn, b, NULL))
    return -1;
  if ((b->present & PROTO_BHV_TARGET) && (b->present & PROTO_BHV_TARGET_AGENT)) {
    return fail_at(r, "target_agent", PROTO_ERR_BAD_FIELD, "conflicts with target");
  }
  if ((b->present & PROTO_BHV_TARGET_AGENT2) && !(b->present & PROTO_BHV_TARGET_AGENT)) {
    return fail_at(r, "target_agent2", PROTO_ERR_BAD_FIELD, "needs target_agent");
  }
  return 0;
}

/* Path keys; SET_PATH prepends "agent". */
static const char *const path_keys[] = {"points", "radius", "mode", "cornering", "params"};
static const char *const set_path_keys[] = {"agent", "points", "radius", "mode", "cornering", "params"};
#define PATH_REQUIRED 0xfu /* points, radius, mode, cornering */

static int path_field(reader *r, int key, proto_path *p) {
  switch (key) {
  case 0: {
    uint32_t n;
    if (rd_array(r, 1, PROTO_MAX_PATH_POINTS, &n))
      return -1;
    for (uint32_t i = 0; i < n; i++) {
      size_t old = path_push_index(r, i);
      int rc = rd_point(r, &p->points[i]);
      path_pop(r, old);
      if (rc)
        return -1;
    }
    p->count = n;
    return 0;
  }
  case 1:
    return rd_float(r, NUM_POSITIVE, &p->radius);
  case 2:
    return rd_enum(r, mode_names, STEER_PATH_MODE_COUNT, &p->mode);
  case 3:
    return rd_enum(r, cornering_names, STEER_CORNER_COUNT, &p->cornering);
  default:
    return rd_params(r, &p->params);
  }
}

static int path_fn(reader *r, int key, void *ctx) { return path_field(r, key, ctx); }

static int rd_path(reader *r, proto_path *p) {
  memset(p, 0, offsetof(proto_path, points));
  return rd_map(r, path_keys, 5, PATH_REQUIRED, path_fn, p, NULL);
}

static int set_path_fn(reader *r, int key, void *ctx) {
  proto_set_path *s = ctx;
  if (key == 0)
    return rd_u32(r, &s->agent);
  return path_field(r, key - 1, &s->path);
}

static int hello_fn(reader *r, int key, void *ctx) {
  proto_hello *h = ctx;
  if (key == 0)
    return rd_u32(r, &h->version);
  if (key == 3) {
    h->has_snapshots = 1;
    return rd_enum(r, snapshot_mode_names, PROTO_SNAPSHOTS_COUNT, &h->snapshots);
  }
  const uint8_t *s;
  size_t n;
  if (key == 2) {
    if (rd_str(r, PROTO_MAX_TOKEN_BYTES, &s, &n))
      return -1;
    for (size_t i = 0; i < n; i++)
      if (s[i] < 0x21 || s[i] > 0x7e)
        return bad(r, "not printable ASCII");
    memcpy(h->token, s, n);
    h->token[n] = '\0';
    h->has_token = 1;
    return 0;
  }
  if (rd_str(r, PROTO_MAX_NAME_BYTES, &s, &n))
    return -1;
  if (memchr(s, 0, n) || !utf8_valid(s, n))
    return bad(r, "not valid UTF-8 text");
  memcpy(h->name, s, n);
  h->name[n] = '\0';
  return 0;
}

static const char *const spawn_keys[] = {"model", "x",      "y",         "orientation", "vx",
                                         "vy",    "limits", "behaviour", "path"};

static int spawn_fn(reader *r, int key, void *ctx) {
  proto_spawn *s = ctx;
  switch (key) {
  case 0:
    return rd_enum(r, model_names, STEER_MODEL_COUNT, &s->model);
  case 1:
    return rd_float(r, NUM_ANY, &s->position.x);
  case 2:
    return rd_float(r, NUM_ANY, &s->position.y);
  case 3:
    s->present |= PROTO_SPAWN_ORIENTATION;
    return rd_angle(r, &s->orientation);
  case 4:
    s->present |= PROTO_SPAWN_VX;
    return rd_float(r, NUM_ANY, &s->velocity.x);
  case 5:
    s->present |= PROTO_SPAWN_VY;
    return rd_float(r, NUM_ANY, &s->velocity.y);
  case 6:
    s->present |= PROTO_SPAWN_LIMITS;
    return rd_limits(r, &s->limits);
  case 7:
    s->present |= PROTO_SPAWN_BEHAVIOUR;
    return rd_behaviour(r, &s->behaviour);
  default:
    s->present |= PROTO_SPAWN_PATH;
    return rd_path(r, &s->path);
  }
}

static int agent_fn(reader *r, int key, void *ctx) {
  (void)key;
  return rd_u32(r, ctx);
}

static int set_behaviour_fn(reader *r, int key, void *ctx) {
  proto_set_behaviour *s = ctx;
  return key == 0 ? rd_u32(r, &s->agent) : rd_behaviour(r, &s->behaviour);
}

static int set_params_fn(reader *r, int key, void *ctx) {
  proto_set_params *s = ctx;
  if (key == 0)
    return rd_u32(r, &s->agent);
  return key == 1 ? rd_limits(r, &s->limits) : rd_params(r, &s->params);
}

static int ping_fn(reader *r, int key, void *ctx) {
  proto_ping *p = ctx;
  (void)key;
  return rd_u64(r, &p->client_time_us);
}

/* VIEW keys: all, centre, follow, radius; view_check then judges the combination. */
static int view_fn(reader *r, int key, void *ctx) {
  proto_view *v = ctx;
  switch (key) {
  case 0: {
    uint8_t all;
    if (rd_bool(r, &all))
      return -1;
    if (!all)
      return bad(r, "must be true");
    v->kind = PROTO_VIEW_ALL;
    return 0;
  }
  case 1:
    v->kind = PROTO_VIEW_CENTRE;
    return rd_point(r, &v->centre);
  case 2:
    v->kind = PROTO_VIEW_FOLLOW;
    return rd_u32(r, &v->follow);
  default:
    return rd_float(r, NUM_POSITIVE, &v->radius);
  }
}

/* Exactly one of all, centre, follow; radius with centre or follow, never with all. */
static int view_check(reader *r, proto_view *v, uint32_t seen) {
  uint32_t which = seen & 7u;
  const char *field = NULL, *why = NULL;
  if (which == 0) {
    field = "all";
    why = "one of all, centre, follow is required";
  } else if (which != 1u && which != 2u && which != 4u) {
    field = (which & 1u) ? "all" : "centre";
    why = "only one of all, centre, follow";
  } else if (which == 1u && (seen & 8u)) {
    field = "radius";
    why = "not with all";
  } else if (which != 1u && !(seen & 8u)) {
    field = "radius";
    why = "missing";
  }
  if (!field)
    return 0;
  (void)v;
  return fail_at(r, field, PROTO_ERR_BAD_FIELD, why);
}

static void reader_init(reader *r, const uint8_t *data, size_t len, proto_error_info *err, bool strict) {
  memset(err, 0, sizeof *err);
  err->reason = "";
  r->p = data;
  r->len = data ? len : 0;
  r->pos = 0;
  r->err = err;
  r->strict = strict;
  r->path_len = 0;
  r->path[0] = '\0';
}

/* Top level: size, array header, type. Returns the array length in *n. */
static int rd_frame(reader *r, uint32_t *n, uint64_t *type) {
  mp_val v;
  if (r->len > PROTO_MAX_MESSAGE_BYTES)
    return fail(r, PROTO_ERR_TOO_LARGE, "message too large");
  if (r->len == 0)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "empty");
  if (rd_val(r, &v))
    return -1;
  if (v.kind != MP_ARRAY)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "not an array");
  if (v.u < 1 || v.u > 16)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "bad array length");
  *n = (uint32_t)v.u;
  size_t old = path_push(r, "type");
  if (rd_val(r, &v))
    return -1;
  if (v.kind != MP_UINT || v.u == 0)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "type is not a positive integer");
  path_pop(r, old);
  *type = v.u;
  return 0;
}

static int rd_frame_u32(reader *r, const char *name, uint32_t *out) {
  size_t old = path_push(r, name);
  uint64_t u;
  mp_val v;
  if (rd_val(r, &v))
    return -1;
  if (v.kind != MP_UINT || v.u > UINT32_MAX)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "expected an unsigned 32-bit integer");
  u = v.u;
  path_pop(r, old);
  *out = (uint32_t)u;
  return 0;
}

static int rd_end(reader *r) {
  if (r->pos != r->len)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "trailing bytes");
  return 0;
}

static int finish(reader *r, int rc) {
  if (rc == 0)
    return 0;
  if (r->err->code == PROTO_OK) /* cannot happen; keep the contract */
    fail(r, PROTO_ERR_INTERNAL, "decoder error");
  return -r->err->code;
}

/* The body map: framing errors name "body"; field errors are relative to it. */
static int rd_body(reader *r, const char *const *keys, int nkeys, uint32_t required, field_fn fn, void *ctx,
                   uint32_t *seen) {
  if (need(r, 1)) { /* cut right after the request_id: the body is what was being read */
    if (r->err->field[0] == '\0')
      memcpy(r->err->field, "body", sizeof "body");
    return -1;
  }
  uint8_t b = r->p[r->pos];
  if (!((b & 0xf0) == 0x80 || b == 0xde || b == 0xdf)) {
    return fail_at(r, "body", PROTO_ERR_BAD_MESSAGE, "body is not a map");
  }
  if (rd_map(r, keys, nkeys, required, fn, ctx, seen) == 0)
    return 0;
  /* Faults of the body map itself (too many entries, a key that is not a
   * string, the packet ending between entries) name it. */
  if (r->err->field[0] == '\0')
    memcpy(r->err->field, "body", sizeof "body");
  return -1;
}

static int decode_command(reader *r, proto_command *out) {
  static const char *const hello_keys[] = {"version", "name", "token", "snapshots"};
  static const char *const agent_keys[] = {"agent"};
  static const char *const set_behaviour_keys[] = {"agent", "behaviour"};
  static const char *const set_params_keys[] = {"agent", "limits", "params"};
  static const char *const ping_keys[] = {"client_time_us"};
  uint32_t n;
  uint64_t type;
  if (rd_frame(r, &n, &type))
    return -1;
  int known = type >= PROTO_MSG_HELLO && type <= PROTO_MSG_LAST_COMMAND;
  if (!known && n != 3) {
    return fail_at(r, "type", PROTO_ERR_UNKNOWN_TYPE, "unknown message type");
  }
  if (n != 3)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "expected [type, request_id, body]");
  if (rd_frame_u32(r, "request_id", &out->request_id))
    return -1;
  /* Read before judging the type, so even an unknown command's error names
   * the request it answers. */
  r->err->has_request_id = 1;
  r->err->request_id = out->request_id;
  if (!known) {
    return fail_at(r, "type", PROTO_ERR_UNKNOWN_TYPE, "unknown message type");
  }
  r->err->type = (uint8_t)type;
  out->type = (uint8_t)type;
  switch (type) {
  case PROTO_MSG_HELLO:
    memset(&out->hello, 0, sizeof out->hello);
    return rd_body(r, hello_keys, 4, 3u, hello_fn, &out->hello, NULL);
  case PROTO_MSG_SPAWN: {
    proto_spawn *s = &out->spawn;
    s->present = 0;
    s->model = 0;
    s->position = v2(0.0f, 0.0f);
    s->orientation = 0.0f;
    s->velocity = v2(0.0f, 0.0f);
    memset(&s->limits, 0, sizeof s->limits);
    memset(&s->behaviour, 0, sizeof s->behaviour);
    memset(&s->path, 0, offsetof(proto_path, points));
    return rd_body(r, spawn_keys, 9, 7u, spawn_fn, s, NULL);
  }
  case PROTO_MSG_DESPAWN:
  case PROTO_MSG_STOP:
  case PROTO_MSG_QUERY:
    memset(&out->despawn, 0, sizeof out->despawn);
    return rd_body(r, agent_keys, 1, 1u, agent_fn, &out->despawn.agent, NULL);
  case PROTO_MSG_SET_BEHAVIOUR:
    memset(&out->set_behaviour, 0, sizeof out->set_behaviour);
    return rd_body(r, set_behaviour_keys, 2, 3u, set_behaviour_fn, &out->set_behaviour, NULL);
  case PROTO_MSG_SET_PATH:
    out->set_path.agent = 0;
    memset(&out->set_path.path, 0, offsetof(proto_path, points));
    return rd_body(r, set_path_keys, 6, 1u | (PATH_REQUIRED << 1), set_path_fn, &out->set_path, NULL);
  case PROTO_MSG_SET_PARAMS:
    memset(&out->set_params, 0, sizeof out->set_params);
    return rd_body(r, set_params_keys, 3, 1u, set_params_fn, &out->set_params, NULL);
  case PROTO_MSG_PING:
    memset(&out->ping, 0, sizeof out->ping);
    return rd_body(r, ping_keys, 1, 1u, ping_fn, &out->ping, NULL);
  default: {
    static const char *const view_keys[] = {"all", "centre", "follow", "radius"};
    uint32_t seen = 0;
    memset(&out->view, 0, sizeof out->view);
    if (rd_body(r, view_keys, 4, 0u, view_fn, &out->view, &seen))
      return -1;
    return view_check(r, &out->view, seen);
  }
  }
}

/* The request_id echo rule (PROTOCOL.md 7.3): a packet of at most
 * PROTO_MAX_MESSAGE_BYTES that starts as a msgpack array of 2 or more elements
 * whose second element is an unsigned integer <= UINT32_MAX has its request_id
 * read, whatever its first element and whatever follows (wrong element count,
 * bad body, truncation after the request_id, trailing bytes). */
static int peek_request_id(const uint8_t *data, size_t len, uint32_t *out) {
  proto_error_info scratch;
  reader r;
  mp_val v;
  if (len > PROTO_MAX_MESSAGE_BYTES)
    return 0;
  reader_init(&r, data, len, &scratch, true);
  if (rd_val(&r, &v) || v.kind != MP_ARRAY || v.u < 2)
    return 0;
  if (rd_skip(&r) || rd_val(&r, &v) || v.kind != MP_UINT || v.u > UINT32_MAX)
    return 0;
  *out = (uint32_t)v.u;
  return 1;
}

int proto_decode_command(const uint8_t *data, size_t len, proto_command *out, proto_error_info *err) {
  proto_error_info local;
  reader r;
  reader_init(&r, data, len, err ? err : &local, true);
  int rc = decode_command(&r, out);
  if (rc == 0)
    rc = rd_end(&r);
  rc = finish(&r, rc);
  if (rc != 0 && !r.err->has_request_id && peek_request_id(r.p, r.len, &r.err->request_id))
    r.err->has_request_id = 1;
  return rc;
}

/* ---- Decoding: server messages ----------------------------------------------------- */

static const char *const welcome_keys[] = {"client_id", "tick",           "tick_rate", "snapshot_rate",
                                           "world",     "server_time_us", "protocol"};

static int welcome_fn(reader *r, int key, void *ctx) {
  proto_welcome *w = ctx;
  switch (key) {
  case 0:
    return rd_u32(r, &w->client_id);
  case 1:
    return rd_u64(r, &w->tick);
  case 2:
    return rd_u32(r, &w->tick_rate);
  case 3:
    return rd_u32(r, &w->snapshot_rate);
  case 4: {
    uint32_t n;
    float *f[4] = {&w->world_min.x, &w->world_min.y, &w->world_max.x, &w->world_max.y};
    if (rd_array(r, 4, 4, &n))
      return -1;
    for (uint32_t i = 0; i < 4; i++) {
      size_t old = path_push_index(r, i);
      int rc = rd_float(r, NUM_ANY, f[i]);
      path_pop(r, old);
      if (rc)
        return -1;
    }
    return 0;
  }
  case 5:
    return rd_u64(r, &w->server_time_us);
  default:
    return rd_u32(r, &w->protocol);
  }
}

static const char *const query_keys[] = {"agent",       "tick",      "model",  "x",        "y",
                                         "orientation", "vx",        "vy",     "rotation", "behaviour",
                                         "arrived",     "path_node", "limits", "owner"};
#define QUERY_KEY_COUNT 14

static int query_fn(reader *r, int key, void *ctx) {
  proto_agent_report *q = ctx;
  switch (key) {
  case 0:
    return rd_u32(r, &q->agent);
  case 1:
    return rd_u64(r, &q->tick);
  case 2:
    return rd_enum(r, model_names, STEER_MODEL_COUNT, &q->model);
  case 3:
    return rd_float(r, NUM_ANY, &q->state.position.x);
  case 4:
    return rd_float(r, NUM_ANY, &q->state.position.y);
  case 5:
    return rd_angle(r, &q->state.orientation);
  case 6:
    return rd_float(r, NUM_ANY, &q->state.velocity.x);
  case 7:
    return rd_float(r, NUM_ANY, &q->state.velocity.y);
  case 8:
    return rd_float(r, NUM_ANY, &q->state.rotation);
  case 9:
    return rd_enum(r, behaviour_names, STEER_BEHAVIOUR_COUNT, &q->behaviour);
  case 10:
    return rd_bool(r, &q->arrived);
  case 11: {
    if (need(r, 1))
      return -1;
    if (r->p[r->pos] == 0xc0) {
      r->pos++;
      q->path_node = -1;
      return 0;
    }
    uint64_t u;
    if (rd_uint(r, INT32_MAX, &u))
      return -1;
    q->path_node = (int32_t)u;
    return 0;
  }
  case 12: {
    proto_limits l;
    if (rd_limits(r, &l))
      return -1;
    if (l.present != PROTO_LIMIT_ALL)
      return bad(r, "missing a limit");
    q->limits = l.v;
    return 0;
  }
  default:
    return rd_u32(r, &q->owner);
  }
}

static int pong_fn(reader *r, int key, void *ctx) {
  proto_pong *p = ctx;
  return rd_u64(r, key == 0 ? &p->client_time_us : key == 1 ? &p->server_time_us : &p->tick);
}

/* A top-level array element, named for errors. */
static int rd_elem_uint(reader *r, const char *name, uint64_t max, uint64_t *out) {
  size_t old = path_push(r, name);
  int rc = rd_uint(r, max, out);
  path_pop(r, old);
  return rc;
}

/* SET_PARAMS ACK: {agent, target_lost (optional, true)}. */
static const char *const set_params_ack_keys[] = {"agent", "target_lost"};

static int set_params_ack_fn(reader *r, int key, void *ctx) {
  proto_ack *a = ctx;
  if (key == 0)
    return rd_u32(r, &a->agent);
  return rd_bool(r, &a->target_lost);
}

static int decode_ack(reader *r, proto_ack *a) {
  static const char *const agent_keys[] = {"agent"};
  static const char *const pong_keys[] = {"client_time_us", "server_time_us", "tick"};
  uint64_t u;
  memset(a, 0, sizeof *a);
  a->query.path_node = -1;
  if (rd_frame_u32(r, "request_id", &a->request_id))
    return -1;
  r->err->has_request_id = 1;
  r->err->request_id = a->request_id;
  if (rd_elem_uint(r, "command_type", 255, &u))
    return -1;
  if (u < PROTO_MSG_SPAWN || u > PROTO_MSG_LAST_COMMAND) {
    return fail_at(r, "command_type", PROTO_ERR_BAD_FIELD, "unknown value");
  }
  a->command = (uint8_t)u;
  switch (u) {
  case PROTO_MSG_QUERY:
    if (rd_body(r, query_keys, QUERY_KEY_COUNT, (1u << QUERY_KEY_COUNT) - 1u, query_fn, &a->query, NULL))
      return -1;
    a->agent = a->query.agent;
    return 0;
  case PROTO_MSG_PING:
    return rd_body(r, pong_keys, 3, 7u, pong_fn, &a->pong, NULL);
  case PROTO_MSG_VIEW:
    return rd_body(r, NULL, 0, 0u, agent_fn, NULL, NULL);
  case PROTO_MSG_SET_PARAMS:
    return rd_body(r, set_params_ack_keys, 2, 1u, set_params_ack_fn, a, NULL);
  default:
    return rd_body(r, agent_keys, 1, 1u, agent_fn, &a->agent, NULL);
  }
}

static int rd_elem_text(reader *r, const char *name, size_t max, char *out, bool nil_ok, uint8_t *has) {
  size_t old = path_push(r, name);
  int rc = 0;
  if (nil_ok && r->pos < r->len && r->p[r->pos] == 0xc0) {
    r->pos++;
    out[0] = '\0';
    *has = 0;
  } else {
    const uint8_t *s;
    size_t n;
    rc = rd_str(r, max, &s, &n);
    if (rc == 0) {
      memcpy(out, s, n);
      out[n] = '\0';
      if (has)
        *has = 1;
    }
  }
  path_pop(r, old);
  return rc;
}

/* part_index, part_count of a SNAPSHOT or DELTA part: index < count. */
static int rd_part(reader *r, uint32_t *index, uint32_t *count) {
  uint64_t i, c;
  if (rd_elem_uint(r, "part_index", UINT32_MAX, &i) || rd_elem_uint(r, "part_count", UINT32_MAX, &c))
    return -1;
  if (c == 0 || i >= c)
    return fail_at(r, "part_index", PROTO_ERR_BAD_FIELD, "part_index must be < part_count");
  *index = (uint32_t)i;
  *count = (uint32_t)c;
  return 0;
}

static int decode_snapshot_body(reader *r, proto_snapshot_header *h, proto_pose *poses, proto_pose_q *qposes,
                                uint32_t cap, uint32_t *count) {
  uint64_t u;
  uint32_t n;
  memset(h, 0, sizeof *h);
  *count = 0;
  if (rd_elem_uint(r, "tick", UINT64_MAX, &h->tick) ||
      rd_elem_uint(r, "server_time_us", UINT64_MAX, &h->server_time_us))
    return -1;
  if (rd_part(r, &h->part_index, &h->part_count))
    return -1;
  if (rd_elem_uint(r, "agent_total", UINT32_MAX, &u))
    return -1;
  h->agent_total = (uint32_t)u;
  size_t old = path_push(r, "agents");
  if (rd_array(r, 0, UINT32_MAX, &n))
    return -1;
  if (n % 6u != 0)
    return bad(r, "length not a multiple of 6");
  n /= 6u;
  if (n > h->agent_total)
    return bad(r, "more agents than agent_total");
  if (n > cap)
    return fail(r, PROTO_ERR_TOO_LARGE, "more agents than the caller's capacity");
  if ((size_t)n * 6u > r->len - r->pos)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "truncated");
  for (uint32_t i = 0; i < n; i++) {
    int64_t v[6];
    static const int64_t lo[6] = {0, INT32_MIN, INT32_MIN, INT16_MIN, INT32_MIN, INT32_MIN};
    static const int64_t hi[6] = {UINT32_MAX, INT32_MAX, INT32_MAX, INT16_MAX, INT32_MAX, INT32_MAX};
    for (int k = 0; k < 6; k++) {
      size_t o2 = path_push_index(r, i * 6u + (uint32_t)k);
      int rc = rd_int(r, lo[k], hi[k], &v[k]);
      path_pop(r, o2);
      if (rc)
        return -1;
    }
    proto_pose_q q = {(steer_id)v[0], (int32_t)v[1], (int32_t)v[2],
                      (int16_t)v[3],  (int32_t)v[4], (int32_t)v[5]};
    if (qposes)
      qposes[i] = q;
    if (poses)
      poses[i] = proto_dequantize_pose(&q);
  }
  path_pop(r, old);
  *count = n;
  return 0;
}

static int decode_server(reader *r, proto_server_msg *out, proto_pose *poses, uint32_t pose_cap) {
  uint32_t n;
  uint64_t type, u;
  static const uint32_t arity[] = {3, 4, 5, 5, 7};
  if (rd_frame(r, &n, &type))
    return -1;
  if (type < PROTO_MSG_WELCOME || type > PROTO_MSG_SNAPSHOT) {
    return fail_at(r, "type", PROTO_ERR_UNKNOWN_TYPE, "unknown message type");
  }
  r->err->type = (uint8_t)type;
  out->type = (uint8_t)type;
  if (n != arity[type - PROTO_MSG_WELCOME])
    return fail(r, PROTO_ERR_BAD_MESSAGE, "wrong number of elements");
  switch (type) {
  case PROTO_MSG_WELCOME:
    memset(&out->welcome, 0, sizeof out->welcome);
    if (rd_frame_u32(r, "request_id", &out->welcome.request_id))
      return -1;
    r->err->has_request_id = 1;
    r->err->request_id = out->welcome.request_id;
    return rd_body(r, welcome_keys, 7, 0x7fu, welcome_fn, &out->welcome, NULL);
  case PROTO_MSG_ACK:
    return decode_ack(r, &out->ack);
  case PROTO_MSG_ERROR: {
    proto_error_msg *e = &out->error;
    memset(e, 0, sizeof *e);
    if (rd_frame_u32(r, "request_id", &e->request_id))
      return -1;
    r->err->has_request_id = 1;
    r->err->request_id = e->request_id;
    if (rd_elem_uint(r, "code", UINT32_MAX, &u))
      return -1;
    e->code = (uint32_t)u;
    if (rd_elem_text(r, "message", PROTO_MAX_ERROR_TEXT_BYTES, e->message, false, NULL))
      return -1;
    return rd_elem_text(r, "field", PROTO_MAX_FIELD_BYTES, e->field, true, &e->has_field);
  }
  case PROTO_MSG_EVENT: {
    proto_event *e = &out->event;
    memset(e, 0, sizeof *e);
    if (rd_elem_uint(r, "tick", UINT64_MAX, &e->tick))
      return -1;
    if (rd_elem_uint(r, "event_code", PROTO_EVENT_COUNT - 1, &u))
      return -1;
    e->code = (uint8_t)u;
    if (rd_elem_uint(r, "agent_id", UINT32_MAX, &u))
      return -1;
    e->agent = (steer_id)u;
    if (rd_elem_uint(r, "data", UINT32_MAX, &u))
      return -1;
    e->data = (uint32_t)u;
    return 0;
  }
  default:
    out->snapshot.poses = poses;
    return decode_snapshot_body(r, &out->snapshot.header, poses, NULL, poses ? pose_cap : 0,
                                &out->snapshot.count);
  }
}

int proto_decode_server_msg(const uint8_t *data, size_t len, proto_server_msg *out, proto_pose *poses,
                            uint32_t pose_cap, proto_error_info *err) {
  proto_error_info local;
  reader r;
  reader_init(&r, data, len, err ? err : &local, false);
  int rc = decode_server(&r, out, poses, pose_cap);
  if (rc == 0)
    rc = rd_end(&r);
  return finish(&r, rc);
}

/* The frame of a message that must be of one type with min..max elements
 * (their count in *n): UNKNOWN_TYPE (field "type") for another type,
 * BAD_MESSAGE for another count. */
static int rd_frame_expect(reader *r, uint8_t want, uint32_t min, uint32_t max, uint32_t *n,
                           const char *what) {
  uint64_t type;
  if (rd_frame(r, n, &type))
    return -1;
  if (type != want)
    return fail_at(r, "type", PROTO_ERR_UNKNOWN_TYPE, what);
  r->err->type = want;
  if (*n < min || *n > max)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "wrong number of elements");
  return 0;
}

int proto_decode_snapshot(const uint8_t *data, size_t len, proto_snapshot_header *h, proto_pose *poses,
                          proto_pose_q *qposes, uint32_t cap, uint32_t *count, proto_error_info *err) {
  proto_error_info local;
  reader r;
  reader_init(&r, data, len, err ? err : &local, false);
  *count = 0;
  uint32_t n;
  int rc = rd_frame_expect(&r, PROTO_MSG_SNAPSHOT, 7, 7, &n, "not a snapshot");
  if (rc == 0)
    rc = decode_snapshot_body(&r, h, poses, qposes, (poses || qposes) ? cap : 0, count);
  if (rc == 0)
    rc = rd_end(&r);
  if (rc)
    *count = 0;
  return finish(&r, rc);
}

/* ---- Delta snapshots --------------------------------------------------------------- */

int32_t proto_quantize_omega(float omega) {
  if (omega != omega)
    return 0;
  double q = round((double)omega * 4096.0 / PROTO_PI_D);
  if (q >= 2147483647.0)
    return INT32_MAX;
  if (q <= -2147483648.0)
    return INT32_MIN;
  return (int32_t)q;
}

float proto_dequantize_omega(int32_t q) { return (float)((double)q * PROTO_PI_D / 4096.0); }

proto_record proto_record_from_state(steer_id id, float x, float y, float theta, float vx, float vy,
                                     float omega, uint64_t time_us) {
  proto_record r;
  memset(&r, 0, sizeof r);
  r.id = id;
  r.x = proto_quantize_cm(x);
  r.y = proto_quantize_cm(y);
  r.theta = proto_quantize_angle(theta);
  r.vx = proto_quantize_cm(vx);
  r.vy = proto_quantize_cm(vy);
  r.omega = proto_quantize_omega(omega);
  r.time_us = time_us;
  return r;
}

/* round(a / b), halves away from zero; b > 0. */
static int64_t div_round(int64_t a, int64_t b) { return a >= 0 ? (a + b / 2) / b : -((-a + b / 2) / b); }

static int32_t sat32(int64_t v) { return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v; }

/* Into [-32768, 32767], modulo 65536 (a whole turn). */
static int16_t wrap16(int64_t v) {
  int64_t m = ((v % 65536) + 65536) % 65536;
  return (int16_t)(m >= 32768 ? m - 65536 : m);
}

proto_record proto_record_predict(const proto_record *r, uint64_t t_us) {
  proto_record p = *r;
  uint64_t dt = t_us > r->time_us ? t_us - r->time_us : 0;
  if (dt > PROTO_DR_MAX_DT_US)
    dt = PROTO_DR_MAX_DT_US;
  p.x = sat32((int64_t)r->x + div_round((int64_t)r->vx * (int64_t)dt, 1000000));
  p.y = sat32((int64_t)r->y + div_round((int64_t)r->vy * (int64_t)dt, 1000000));
  p.theta = wrap16((int64_t)r->theta + div_round((int64_t)r->omega * 8 * (int64_t)dt, 1000000));
  return p;
}

proto_delta_entry proto_delta_diff(const proto_record *base, const proto_record *now, uint64_t time_us) {
  proto_delta_entry e;
  int64_t d[PROTO_DELTA_FIELD_COUNT];
  memset(&e, 0, sizeof e);
  e.id = now->id;
  if (base) {
    proto_record p = proto_record_predict(base, time_us);
    d[0] = (int64_t)now->x - p.x;
    d[1] = (int64_t)now->y - p.y;
    d[2] = wrap16((int64_t)now->theta - p.theta);
    d[3] = (int64_t)now->vx - base->vx;
    d[4] = (int64_t)now->vy - base->vy;
    d[5] = (int64_t)now->omega - base->omega;
    int fits = 1;
    for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
      fits &= d[k] >= INT32_MIN && d[k] <= INT32_MAX;
    if (fits) {
      for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
        if (d[k] != 0) {
          e.mask |= (uint8_t)(1u << k);
          e.v[k] = (int32_t)d[k];
        }
      return e;
    }
  }
  /* No base (or a difference beyond int32, which no sane world makes): absolute. */
  d[0] = now->x, d[1] = now->y, d[2] = now->theta, d[3] = now->vx, d[4] = now->vy, d[5] = now->omega;
  e.mask = PROTO_DELTA_ABSOLUTE;
  for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
    if (d[k] != 0) {
      e.mask |= (uint8_t)(1u << k);
      e.v[k] = (int32_t)d[k];
    }
  return e;
}

int proto_delta_apply(const proto_record *base, const proto_delta_entry *e, uint64_t time_us,
                      proto_record *out) {
  int64_t v[PROTO_DELTA_FIELD_COUNT];
  for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
    v[k] = (e->mask & (1u << k)) ? e->v[k] : 0;
  if (e->mask & PROTO_DELTA_ABSOLUTE) {
    if (v[2] < INT16_MIN || v[2] > INT16_MAX)
      return -1;
  } else {
    if (!base || base->id != e->id)
      return -1;
    proto_record p = proto_record_predict(base, time_us);
    v[0] += p.x;
    v[1] += p.y;
    v[2] = wrap16(v[2] + p.theta);
    v[3] += base->vx;
    v[4] += base->vy;
    v[5] += base->omega;
  }
  for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
    if (v[k] < INT32_MIN || v[k] > INT32_MAX)
      return -1;
  memset(out, 0, sizeof *out);
  out->id = e->id;
  out->x = (int32_t)v[0];
  out->y = (int32_t)v[1];
  out->theta = (int16_t)v[2];
  out->vx = (int32_t)v[3];
  out->vy = (int32_t)v[4];
  out->omega = (int32_t)v[5];
  out->time_us = time_us;
  return 0;
}

proto_pose proto_record_pose(const proto_record *r) {
  proto_pose p;
  p.id = r->id;
  p.x = proto_dequantize_cm(r->x);
  p.y = proto_dequantize_cm(r->y);
  p.theta = proto_dequantize_angle(r->theta);
  p.vx = proto_dequantize_cm(r->vx);
  p.vy = proto_dequantize_cm(r->vy);
  return p;
}

size_t proto_delta_entry_size(const proto_delta_entry *e, steer_id prev_id) {
  size_t n = mp_uint_size((uint64_t)e->id - prev_id) + 1;
  for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
    if (e->mask & (1u << k))
      n += mp_int_size(e->v[k]);
  return n;
}

size_t proto_delta_removed_size(steer_id id, steer_id prev_id) {
  return mp_uint_size((uint64_t)id - prev_id);
}

static uint32_t entry_field_count(const proto_delta_entry *e) {
  return 2u + (uint32_t)popcount32(e->mask & PROTO_DELTA_FIELDS);
}

size_t proto_encode_delta(uint8_t *buf, size_t cap, const proto_delta_header *h,
                          const proto_delta_entry *entries, uint32_t count, const steer_id *removed,
                          uint32_t removed_count) {
  writer w;
  msgpack_packer pk;
  uint64_t elems = 0;
  if ((count > 0 && !entries) || (removed_count > 0 && !removed))
    return 0;
  for (uint32_t i = 0; i < count; i++) {
    if (entries[i].id <= (i ? entries[i - 1].id : 0) || entries[i].mask > PROTO_DELTA_MASK_ALL)
      return 0;
    if ((entries[i].mask & PROTO_DELTA_THETA) && (entries[i].v[2] < INT16_MIN || entries[i].v[2] > INT16_MAX))
      return 0;
    elems += entry_field_count(&entries[i]);
  }
  for (uint32_t i = 0; i < removed_count; i++)
    if (removed[i] <= (i ? removed[i - 1] : 0))
      return 0;
  if (elems > UINT32_MAX)
    return 0;
  writer_init(&w, &pk, buf, cap);
  msgpack_pack_array(&pk, 8);
  msgpack_pack_uint8(&pk, PROTO_MSG_DELTA);
  msgpack_pack_uint64(&pk, h->tick);
  msgpack_pack_uint64(&pk, h->server_time_us);
  msgpack_pack_uint64(&pk, h->baseline_tick);
  msgpack_pack_uint32(&pk, h->part_index);
  msgpack_pack_uint32(&pk, h->part_count);
  msgpack_pack_array(&pk, (size_t)elems);
  steer_id prev = 0;
  for (uint32_t i = 0; i < count && !w.overflowed; i++) {
    const proto_delta_entry *e = &entries[i];
    msgpack_pack_uint32(&pk, e->id - prev);
    prev = e->id;
    msgpack_pack_uint8(&pk, e->mask);
    for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
      if (e->mask & (1u << k))
        msgpack_pack_int32(&pk, e->v[k]);
  }
  msgpack_pack_array(&pk, removed_count);
  prev = 0;
  for (uint32_t i = 0; i < removed_count && !w.overflowed; i++) {
    msgpack_pack_uint32(&pk, removed[i] - prev);
    prev = removed[i];
  }
  return writer_done(&w);
}

/* An element of a flat array: its path is name[i]. */
static int rd_flat_int(reader *r, uint32_t i, int64_t min, int64_t max, int64_t *out) {
  size_t old = path_push_index(r, i);
  int rc = rd_int(r, min, max, out);
  path_pop(r, old);
  return rc;
}

/* An id difference: > 0, and the running id stays <= UINT32_MAX. */
static int rd_id_step(reader *r, uint32_t i, steer_id *id) {
  int64_t d;
  if (rd_flat_int(r, i, 1, UINT32_MAX, &d))
    return -1;
  if (d < 1 || (uint64_t)*id + (uint64_t)d > UINT32_MAX) {
    size_t old = path_push_index(r, i);
    bad(r, d < 1 ? "ids must increase" : "id out of range");
    path_pop(r, old);
    return -1;
  }
  *id += (steer_id)d;
  return 0;
}

static int decode_delta_body(reader *r, proto_delta_header *h, proto_delta_entry *entries, uint32_t cap,
                             uint32_t *count, steer_id *removed, uint32_t removed_cap,
                             uint32_t *removed_count) {
  uint32_t n;
  memset(h, 0, sizeof *h);
  if (rd_elem_uint(r, "tick", UINT64_MAX, &h->tick) ||
      rd_elem_uint(r, "server_time_us", UINT64_MAX, &h->server_time_us) ||
      rd_elem_uint(r, "baseline_tick", UINT64_MAX, &h->baseline_tick))
    return -1;
  if (h->tick == 0)
    return fail_at(r, "tick", PROTO_ERR_BAD_FIELD, "must be >= 1");
  if (h->baseline_tick >= h->tick)
    return fail_at(r, "baseline_tick", PROTO_ERR_BAD_FIELD, "must be < tick");
  if (rd_part(r, &h->part_index, &h->part_count))
    return -1;
  size_t old = path_push(r, "changes");
  if (rd_array(r, 0, UINT32_MAX, &n))
    return -1;
  if (n > r->len - r->pos) /* every element takes at least one byte */
    return fail(r, PROTO_ERR_BAD_MESSAGE, "truncated");
  steer_id id = 0;
  uint32_t i = 0, c = 0;
  while (i < n) {
    if (n - i < 2)
      return bad(r, "change cut short");
    proto_delta_entry e;
    int64_t m;
    memset(&e, 0, sizeof e);
    if (rd_id_step(r, i, &id) || rd_flat_int(r, i + 1, 0, PROTO_DELTA_MASK_ALL, &m))
      return -1;
    i += 2;
    e.id = id;
    e.mask = (uint8_t)m;
    for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++) {
      if (!(e.mask & (1u << k)))
        continue;
      if (i >= n)
        return bad(r, "change cut short");
      int64_t v;
      if (rd_flat_int(r, i, k == 2 ? INT16_MIN : INT32_MIN, k == 2 ? INT16_MAX : INT32_MAX, &v))
        return -1;
      e.v[k] = (int32_t)v;
      i++;
    }
    if (c >= cap)
      return fail(r, PROTO_ERR_TOO_LARGE, "more changes than the caller's capacity");
    entries[c++] = e;
  }
  path_pop(r, old);
  old = path_push(r, "removed");
  if (rd_array(r, 0, UINT32_MAX, &n))
    return -1;
  if (n > removed_cap)
    return fail(r, PROTO_ERR_TOO_LARGE, "more removals than the caller's capacity");
  if (n > r->len - r->pos)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "truncated");
  id = 0;
  for (i = 0; i < n; i++) {
    if (rd_id_step(r, i, &id))
      return -1;
    removed[i] = id;
  }
  path_pop(r, old);
  *count = c;
  *removed_count = n;
  return 0;
}

int proto_decode_delta(const uint8_t *data, size_t len, proto_delta_header *h, proto_delta_entry *entries,
                       uint32_t cap, uint32_t *count, steer_id *removed, uint32_t removed_cap,
                       uint32_t *removed_count, proto_error_info *err) {
  proto_error_info local;
  reader r;
  reader_init(&r, data, len, err ? err : &local, false);
  *count = 0;
  *removed_count = 0;
  uint32_t n;
  int rc = rd_frame_expect(&r, PROTO_MSG_DELTA, 8, 8, &n, "not a delta");
  if (rc == 0)
    rc = decode_delta_body(&r, h, entries, entries ? cap : 0, count, removed, removed ? removed_cap : 0,
                           removed_count);
  if (rc == 0)
    rc = rd_end(&r);
  if (rc) {
    *count = 0;
    *removed_count = 0;
  }
  return finish(&r, rc);
}

static int snapshot_ack_valid(const proto_snapshot_ack *a) {
  if (a->tick == 0 || (a->has_merged && a->merged_count > PROTO_ACK_MAX_MERGED))
    return 0;
  for (uint32_t i = 0; a->has_merged && i < a->merged_count; i++)
    if (a->merged_step[i] == 0 || a->merged_step[i] >= a->tick ||
        (i > 0 && a->merged_step[i] <= a->merged_step[i - 1]))
      return 0;
  return 1;
}

size_t proto_encode_snapshot_ack(uint8_t *buf, size_t cap, const proto_snapshot_ack *a) {
  if (!snapshot_ack_valid(a))
    return 0;
  writer w;
  msgpack_packer pk;
  writer_init(&w, &pk, buf, cap);
  msgpack_pack_array(&pk, a->has_merged ? 3 : 2);
  msgpack_pack_uint8(&pk, PROTO_MSG_SNAPSHOT_ACK);
  msgpack_pack_uint64(&pk, a->tick);
  if (a->has_merged) {
    msgpack_pack_array(&pk, a->merged_count);
    for (uint32_t i = 0; i < a->merged_count; i++)
      msgpack_pack_uint64(&pk, a->merged_step[i]);
  }
  return writer_done(&w);
}

int proto_decode_snapshot_ack(const uint8_t *data, size_t len, proto_snapshot_ack *a, proto_error_info *err) {
  proto_error_info local;
  reader r;
  reader_init(&r, data, len, err ? err : &local, true);
  memset(a, 0, sizeof *a);
  proto_snapshot_ack v;
  memset(&v, 0, sizeof v);
  uint32_t n = 0;
  int rc = rd_frame_expect(&r, PROTO_MSG_SNAPSHOT_ACK, 2, 3, &n, "not a snapshot ack");
  if (rc == 0)
    rc = rd_elem_uint(&r, "tick", UINT64_MAX, &v.tick);
  if (rc == 0 && v.tick == 0) {
    rc = fail_at(&r, "tick", PROTO_ERR_BAD_FIELD, "must be >= 1");
  }
  if (rc == 0 && n == 3) {
    size_t old = path_push(&r, "merged");
    v.has_merged = 1;
    rc = rd_array(&r, 0, PROTO_ACK_MAX_MERGED, &v.merged_count);
    for (uint32_t i = 0; rc == 0 && i < v.merged_count; i++) {
      size_t o2 = path_push_index(&r, i);
      rc = rd_uint(&r, v.tick - 1, &v.merged_step[i]);
      if (rc == 0 && (v.merged_step[i] == 0 || (i > 0 && v.merged_step[i] <= v.merged_step[i - 1])))
        rc = bad(&r, "steps must be >= 1 and increase");
      path_pop(&r, o2);
    }
    path_pop(&r, old);
  }
  if (rc == 0)
    rc = rd_end(&r);
  if (rc == 0)
    *a = v;
  return finish(&r, rc);
}

uint32_t proto_message_type(const uint8_t *data, size_t len) {
  proto_error_info scratch;
  reader r;
  mp_val v;
  reader_init(&r, data, len, &scratch, false);
  if (rd_val(&r, &v) || v.kind != MP_ARRAY || v.u < 1 || rd_val(&r, &v) || v.kind != MP_UINT ||
      v.u > UINT32_MAX)
    return 0;
  return (uint32_t)v.u;
}

/* ---- EVENTS (PROTOCOL.md 7.4) ------------------------------------------------------- */

size_t proto_encode_events(uint8_t *buf, size_t cap, uint32_t lost, const proto_event *events, uint32_t count) {
  writer w;
  msgpack_packer pk;
  if (count > PROTO_EVENTS_MAX || (count > 0 && !events))
    return 0;
  for (uint32_t i = 0; i < count; i++)
    if (events[i].code >= PROTO_EVENT_COUNT)
      return 0;
  writer_init(&w, &pk, buf, cap);
  msgpack_pack_array(&pk, 3);
  msgpack_pack_uint8(&pk, PROTO_MSG_EVENTS);
  msgpack_pack_uint32(&pk, lost);
  msgpack_pack_array(&pk, (size_t)count * 4u);
  for (uint32_t i = 0; i < count && !w.overflowed; i++) {
    msgpack_pack_uint64(&pk, events[i].tick);
    msgpack_pack_uint8(&pk, events[i].code);
    msgpack_pack_uint32(&pk, events[i].agent);
    msgpack_pack_uint32(&pk, events[i].data);
  }
  return writer_done(&w);
}

int proto_decode_events(const uint8_t *data, size_t len, uint32_t *lost, proto_event *events, uint32_t cap,
                        uint32_t *count, proto_error_info *err) {
  proto_error_info local;
  reader r;
  reader_init(&r, data, len, err ? err : &local, false);
  *count = 0;
  *lost = 0;
  uint32_t n;
  uint64_t u;
  int rc = rd_frame_expect(&r, PROTO_MSG_EVENTS, 3, 3, &n, "not EVENTS");
  if (rc == 0)
    rc = rd_elem_uint(&r, "lost", UINT32_MAX, &u);
  if (rc == 0) {
    *lost = (uint32_t)u;
    size_t old = path_push(&r, "events");
    rc = rd_array(&r, 0, PROTO_EVENTS_MAX * 4u, &n);
    if (rc == 0 && n % 4u != 0)
      rc = bad(&r, "length not a multiple of 4");
    if (rc == 0 && n == 0 && *lost == 0)
      rc = bad(&r, "no events and none lost");
    if (rc == 0 && n / 4u > cap)
      rc = fail(&r, PROTO_ERR_TOO_LARGE, "more events than the caller's capacity");
    static const uint64_t hi[4] = {UINT64_MAX, PROTO_EVENT_COUNT - 1, UINT32_MAX, UINT32_MAX};
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
      size_t o2 = path_push_index(&r, i);
      rc = rd_uint(&r, hi[i % 4u], &u);
      path_pop(&r, o2);
      if (rc)
        break;
      proto_event *e = &events[i / 4u];
      switch (i % 4u) {
      case 0:
        e->tick = u;
        break;
      case 1:
        e->code = (uint8_t)u;
        break;
      case 2:
        e->agent = (steer_id)u;
        break;
      default:
        e->data = (uint32_t)u;
        break;
      }
    }
    if (rc == 0)
      path_pop(&r, old);
  }
  if (rc == 0)
    rc = rd_end(&r);
  if (rc == 0)
    *count = n / 4u;
  return finish(&r, rc);
}

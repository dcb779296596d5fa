/* names.c: the names the wire uses for codes and enum values (error codes,
 * disconnect reasons, models, behaviours, ...), their proto_*_name functions,
 * and the float fields of LIMITS and PARAMS with their value constraints. */
#include "wire_internal.h"

#include <stddef.h>

/* ---- Names ---------------------------------------------------------------- */

static const char *const error_names[PROTO_ERR_COUNT] = {
    "OK",           "BAD_MESSAGE",   "UNKNOWN_TYPE",   "BAD_FIELD",        "VERSION_MISMATCH",
    "NOT_WELCOMED", "NO_SUCH_AGENT", "WORLD_FULL",     "MODEL_MISMATCH",   "BAD_TARGET",
    "TOO_LARGE",    "RATE_LIMITED",  "NOT_OWNER",      "INTERNAL",         "FORBIDDEN",
    "UNAUTHORIZED", "TOKEN_EXPIRED", "QUOTA_EXCEEDED", "NO_SUCH_OBSTACLE", "OBSTACLE_EXISTS",
    "BLOCKED",      "BUSY"};

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
    "the client owns its maximum of agents",
    "no obstacle has this id",
    "an obstacle with this id exists",
    "inside the map's geometry, or an obstacle over an agent that has nowhere to go",
    "too many commands waiting to run: retry once earlier ones are answered"};

static const char *const disconnect_names[PROTO_DISCONNECT_COUNT] = {
    "none",   "server shutting down",  "protocol abuse", "timeout", "version mismatch", "server full",
    "kicked", "authentication failed", "too slow"};

const char *const model_names[PROTO_MODEL_COUNT] = {"kinematic", "dynamic", "heading"};

const char *const behaviour_names[PROTO_BEHAVIOUR_COUNT] = {
    "none",   "seek",  "flee",      "arrive", "align",      "velocity_match", "face", "look_where_going",
    "pursue", "evade", "interpose", "wander", "follow_path"};

const char *const facing_names[PROTO_FACING_COUNT] = {"look_where_going", "none", "target"};
const char *const combine_names[PROTO_COMBINE_COUNT] = {"blend", "priority"};
const char *const mode_names[PROTO_PATH_MODE_COUNT] = {"once", "loop", "pingpong"};
const char *const cornering_names[PROTO_CORNER_COUNT] = {"none", "arc", "lazy"};
const char *const snapshot_mode_names[PROTO_SNAPSHOTS_COUNT] = {"full", "delta"};
const char *const stuck_reaction_names[PROTO_STUCK_REACTION_COUNT] = {"report", "nudge", "give_up"};
const char *const arrival_names[PROTO_ARRIVAL_COUNT] = {"point", "settle", "pass"};
static const char *const event_names[PROTO_EVENT_COUNT] = {
    "arrived",   "waypoint", "path_finished", "reversed",  "spawned",
    "despawned", "stuck",    "planned",       "replanned", "unreachable"};
const char *const goto_status_names[PROTO_GOTO_STATUS_END] = {"none", "queued", "following", "unreachable"};
const char *const goto_reason_names[PROTO_GOTO_REASON_COUNT] = {"new", "map", "target_moved", "stuck",
                                                                "continue"};

const float_field param_fields[PROTO_PARAM_COUNT] = {
    {"time_to_target", offsetof(proto_param_values, time_to_target), NUM_POSITIVE},
    {"target_radius", offsetof(proto_param_values, target_radius), NUM_NONNEG},
    {"slow_radius", offsetof(proto_param_values, slow_radius), NUM_NONNEG},
    {"kinematic_time_to_target", offsetof(proto_param_values, kinematic_time_to_target), NUM_POSITIVE},
    {"align_target_radius", offsetof(proto_param_values, align_target_radius), NUM_NONNEG},
    {"align_slow_radius", offsetof(proto_param_values, align_slow_radius), NUM_NONNEG},
    {"align_time_to_target", offsetof(proto_param_values, align_time_to_target), NUM_POSITIVE},
    {"max_prediction", offsetof(proto_param_values, max_prediction), NUM_NONNEG},
    {"panic_radius", offsetof(proto_param_values, panic_radius), NUM_NONNEG},
    {"wander_offset", offsetof(proto_param_values, wander_offset), NUM_NONNEG},
    {"wander_radius", offsetof(proto_param_values, wander_radius), NUM_NONNEG},
    {"wander_rate", offsetof(proto_param_values, wander_rate), NUM_NONNEG},
    {"separation_radius", offsetof(proto_param_values, separation_radius), NUM_NONNEG},
    {"turn_trigger_distance", offsetof(proto_param_values, turn_trigger_distance), NUM_NONNEG},
    {"path_recover_strength", offsetof(proto_param_values, path_recover_strength), NUM_NONNEG}};

const float_field limit_fields[PROTO_LIMIT_COUNT] = {
    {"max_speed", offsetof(proto_limit_values, max_speed), NUM_POSITIVE},
    {"max_acceleration", offsetof(proto_limit_values, max_acceleration), NUM_POSITIVE},
    {"max_rotation", offsetof(proto_limit_values, max_rotation), NUM_POSITIVE},
    {"max_angular_acceleration", offsetof(proto_limit_values, max_angular_acceleration), NUM_POSITIVE},
    {"radius", offsetof(proto_limit_values, radius), NUM_NONNEG}};

static const char *name_of(const char *const *table, uint32_t count, uint32_t i) {
  return i < count ? table[i] : NULL;
}

int64_t code_index(int code) { return code < 0 ? -(int64_t)code : (int64_t)code; }

const char *proto_error_name(int code) {
  int64_t i = code_index(code);
  return i < PROTO_ERR_COUNT ? error_names[i] : "UNKNOWN";
}

const char *proto_error_text(int code) {
  int64_t i = code_index(code);
  return i < PROTO_ERR_COUNT ? error_texts[i] : "unknown error";
}

const char *proto_disconnect_name(uint32_t reason) {
  const char *n = name_of(disconnect_names, PROTO_DISCONNECT_COUNT, reason);
  return n ? n : "unknown";
}

const char *proto_msg_type_name(uint32_t type) {
  static const char *const client[] = {
      "HELLO", "SPAWN", "DESPAWN", "SET_BEHAVIOUR", "SET_PATH",     "SET_PARAMS",     "STOP",
      "QUERY", "PING",  "VIEW",    "SNAPSHOT_ACK",  "ADD_OBSTACLE", "REMOVE_OBSTACLE"};
  static const char *const server[] = {"WELCOME", "ACK",    "ERROR", "EVENT",      "SNAPSHOT",
                                       "DELTA",   "EVENTS", "MAP",   "MAP_CHANGED"};
  if (type >= PROTO_MSG_HELLO && type <= PROTO_MSG_REMOVE_OBSTACLE)
    return client[type - PROTO_MSG_HELLO];
  if (type >= PROTO_MSG_WELCOME && type <= PROTO_MSG_MAP_CHANGED)
    return server[type - PROTO_MSG_WELCOME];
  return NULL;
}

const char *proto_model_name(uint32_t model) { return name_of(model_names, PROTO_MODEL_COUNT, model); }
const char *proto_behaviour_name(uint32_t kind) {
  return kind == PROTO_BEHAVIOUR_GOTO ? "goto" : name_of(behaviour_names, PROTO_BEHAVIOUR_COUNT, kind);
}
const char *proto_goto_status_name(uint32_t s) {
  return s == 0 ? NULL : name_of(goto_status_names, PROTO_GOTO_STATUS_END, s);
}
const char *proto_goto_reason_name(uint32_t r) {
  return name_of(goto_reason_names, PROTO_GOTO_REASON_COUNT, r);
}
const char *proto_facing_name(uint32_t facing) { return name_of(facing_names, PROTO_FACING_COUNT, facing); }
const char *proto_combine_name(uint32_t combine) {
  return name_of(combine_names, PROTO_COMBINE_COUNT, combine);
}
const char *proto_path_mode_name(uint32_t mode) { return name_of(mode_names, PROTO_PATH_MODE_COUNT, mode); }
const char *proto_cornering_name(uint32_t c) { return name_of(cornering_names, PROTO_CORNER_COUNT, c); }
const char *proto_stuck_reaction_name(uint32_t r) {
  return name_of(stuck_reaction_names, PROTO_STUCK_REACTION_COUNT, r);
}

const char *proto_arrival_name(uint32_t a) { return name_of(arrival_names, PROTO_ARRIVAL_COUNT, a); }
const char *proto_event_name(uint32_t code) { return name_of(event_names, PROTO_EVENT_COUNT, code); }
const char *proto_param_name(uint32_t i) { return i < PROTO_PARAM_COUNT ? param_fields[i].name : NULL; }
const char *proto_limit_name(uint32_t i) { return i < PROTO_LIMIT_COUNT ? limit_fields[i].name : NULL; }

/* server_msgs.c: server -> client messages other than snapshots: WELCOME, ACK,
 * ERROR, EVENT and EVENTS, encoded and decoded, and proto_encode_server_msg /
 * proto_decode_server_msg over them (and SNAPSHOT). */
#include "wire_internal.h"

#include <string.h>

/* ---- Encoding ---------------------------------------------------------------- */

size_t proto_encode_welcome(uint8_t *buf, size_t cap, const proto_welcome *m) {
  writer w;
  msgpack_packer pk;
  writer_init(&w, &pk, buf, cap);
  msgpack_pack_array(&pk, 3);
  msgpack_pack_uint8(&pk, PROTO_MSG_WELCOME);
  msgpack_pack_uint32(&pk, m->request_id);
  msgpack_pack_map(&pk, m->max_agents ? 8 : 7);
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
  if (m->max_agents) /* optional: a client that does not know it ignores it (§2) */
    pack_ku(&pk, "max_agents", m->max_agents);
  return writer_done(&w);
}

static bool goto_report_valid(const proto_goto_report *g) {
  if (g->status == 0 || g->status >= PROTO_GOTO_STATUS_END || g->reason >= PROTO_GOTO_REASON_COUNT ||
      (g->target_kind != PROTO_TARGET_POINT && g->target_kind != PROTO_TARGET_AGENT) || g->partial > 1)
    return false;
  if (g->queued > 1 || (g->queued && g->status == PROTO_GOTO_UNREACHABLE))
    return false;
  if (g->status == PROTO_GOTO_FOLLOWING)
    return g->route_count >= 1 && g->route_count <= PROTO_MAX_ROUTE_POINTS;
  return g->route_count == 0;
}

static void pack_point2(msgpack_packer *pk, proto_vec2 p) {
  msgpack_pack_array(pk, 2);
  msgpack_pack_float(pk, p.x);
  msgpack_pack_float(pk, p.y);
}

/* "goto": {status, reason, target | target_agent, while following goal,
 * partial, route, and while a request waits queue_position}. */
static void pack_goto_report(msgpack_packer *pk, const proto_goto_report *g) {
  int following = g->status == PROTO_GOTO_FOLLOWING;
  pack_key(pk, "goto");
  msgpack_pack_map(pk, (following ? 6u : 3u) + (g->queued ? 1u : 0u));
  pack_ks(pk, "status", goto_status_names[g->status]);
  pack_ks(pk, "reason", goto_reason_names[g->reason]);
  if (g->target_kind == PROTO_TARGET_POINT) {
    pack_key(pk, "target");
    pack_point2(pk, g->target);
  } else {
    pack_ku(pk, "target_agent", g->target_agent);
  }
  if (g->queued)
    pack_ku(pk, "queue_position", g->queue_position);
  if (!following)
    return;
  pack_key(pk, "goal");
  pack_point2(pk, g->goal);
  pack_key(pk, "partial");
  if (g->partial)
    msgpack_pack_true(pk);
  else
    msgpack_pack_false(pk);
  pack_key(pk, "route");
  msgpack_pack_array(pk, g->route_count);
  for (uint32_t i = 0; i < g->route_count; i++)
    pack_point2(pk, g->route[i]);
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
    if (q->model >= PROTO_MODEL_COUNT ||
        (q->behaviour >= PROTO_BEHAVIOUR_COUNT && q->behaviour != PROTO_BEHAVIOUR_GOTO) ||
        (q->has_goto && !goto_report_valid(&q->go)))
      return 0;
    if (q->has_tuning &&
        (q->tuning.stuck_reaction >= PROTO_STUCK_REACTION_COUNT || q->tuning.arrival >= PROTO_ARRIVAL_COUNT))
      return 0;
    msgpack_pack_map(&pk, 14u + (q->has_tuning ? 1u : 0u) + (q->has_goto ? 1u : 0u));
    pack_ku(&pk, "agent", a->agent);
    pack_ku(&pk, "tick", q->tick);
    pack_ks(&pk, "model", model_names[q->model]);
    pack_kf(&pk, "x", q->state.position.x);
    pack_kf(&pk, "y", q->state.position.y);
    pack_kf(&pk, "orientation", q->state.orientation);
    pack_kf(&pk, "vx", q->state.velocity.x);
    pack_kf(&pk, "vy", q->state.velocity.y);
    pack_kf(&pk, "rotation", q->state.rotation);
    pack_ks(&pk, "behaviour", proto_behaviour_name(q->behaviour));
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
    if (q->has_tuning) {
      pack_key(&pk, "tuning");
      pack_tuning(&pk, &q->tuning);
    }
    if (q->has_goto)
      pack_goto_report(&pk, &q->go);
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
  case PROTO_MSG_ADD_OBSTACLE:
  case PROTO_MSG_REMOVE_OBSTACLE:
    msgpack_pack_map(&pk, a->command == PROTO_MSG_ADD_OBSTACLE ? 3 : 2);
    pack_ku(&pk, "obstacle", a->obstacle);
    pack_ku(&pk, "version", a->map_version);
    if (a->command == PROTO_MSG_ADD_OBSTACLE)
      pack_ku(&pk, "moved", a->moved);
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

/* ---- Decoding: server messages ----------------------------------------------------- */

static const char *const welcome_keys[] = {"client_id", "tick",           "tick_rate", "snapshot_rate",
                                           "world",     "server_time_us", "protocol",  "max_agents"};

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
  case 6:
    return rd_u32(r, &w->protocol);
  default:
    return rd_u32(r, &w->max_agents);
  }
}

static const char *const query_keys[] = {"agent",  "tick",  "model",    "x",         "y",       "orientation",
                                         "vx",     "vy",    "rotation", "behaviour", "arrived", "path_node",
                                         "limits", "owner", "goto",     "tuning"};
#define QUERY_KEY_COUNT    16
#define QUERY_KEY_REQUIRED ((1u << 14) - 1u) /* all but "goto" and "tuning" */

/* QUERY's "goto" map (PROTOCOL.md 6.8). */
static const char *const goto_keys[] = {"status", "reason",  "target", "target_agent",
                                        "goal",   "partial", "route",  "queue_position"};
enum { GK_STATUS, GK_REASON, GK_TARGET, GK_AGENT, GK_GOAL, GK_PARTIAL, GK_ROUTE, GK_QUEUE, GK_COUNT };

static int goto_fn(reader *r, int key, void *ctx) {
  proto_goto_report *g = ctx;
  switch (key) {
  case GK_STATUS:
    if (rd_enum(r, goto_status_names, PROTO_GOTO_STATUS_END, &g->status))
      return -1;
    return g->status == 0 ? bad(r, "unknown value") : 0;
  case GK_REASON:
    return rd_enum(r, goto_reason_names, PROTO_GOTO_REASON_COUNT, &g->reason);
  case GK_TARGET:
    g->target_kind = PROTO_TARGET_POINT;
    return rd_point(r, &g->target);
  case GK_AGENT:
    g->target_kind = PROTO_TARGET_AGENT;
    return rd_u32(r, &g->target_agent);
  case GK_GOAL:
    return rd_point(r, &g->goal);
  case GK_PARTIAL:
    return rd_bool(r, &g->partial);
  case GK_QUEUE:
    g->queued = 1;
    return rd_u32(r, &g->queue_position);
  default: {
    if (rd_array(r, 1, PROTO_MAX_ROUTE_POINTS, &g->route_count))
      return -1;
    for (uint32_t i = 0; i < g->route_count; i++) {
      size_t old = path_push_index(r, i);
      if (rd_point(r, &g->route[i]))
        return -1;
      path_pop(r, old);
    }
    return 0;
  }
  }
}

static int rd_goto_report(reader *r, proto_goto_report *g) {
  uint32_t seen = 0;
  memset(g, 0, sizeof *g);
  if (rd_map(r, goto_keys, GK_COUNT, (1u << GK_STATUS) | (1u << GK_REASON), goto_fn, g, &seen))
    return -1;
  int targets = ((seen >> GK_TARGET) & 1u) + ((seen >> GK_AGENT) & 1u);
  if (targets != 1)
    return fail_at(r, "target", PROTO_ERR_BAD_FIELD, "one of target and target_agent");
  const uint32_t route = (1u << GK_GOAL) | (1u << GK_PARTIAL) | (1u << GK_ROUTE);
  if (g->status == PROTO_GOTO_FOLLOWING && (seen & route) != route)
    return fail_at(r,
                   (seen & (1u << GK_GOAL)) == 0      ? "goal"
                   : (seen & (1u << GK_PARTIAL)) == 0 ? "partial"
                                                      : "route",
                   PROTO_ERR_BAD_FIELD, "missing");
  if (g->status != PROTO_GOTO_FOLLOWING && (seen & route) != 0)
    return fail_at(r, "route", PROTO_ERR_BAD_FIELD, "only while following");
  return 0;
}

static int query_fn(reader *r, int key, void *ctx) {
  proto_agent_report *q = ctx;
  switch (key) {
  case 0:
    return rd_u32(r, &q->agent);
  case 1:
    return rd_u64(r, &q->tick);
  case 2:
    return rd_enum(r, model_names, PROTO_MODEL_COUNT, &q->model);
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
  case 9: {
    const uint8_t *s;
    size_t n, save = r->pos;
    if (rd_str(r, 32, &s, &n))
      return -1;
    if (n == 4 && memcmp(s, "goto", 4) == 0) {
      q->behaviour = PROTO_BEHAVIOUR_GOTO;
      return 0;
    }
    r->pos = save;
    return rd_enum(r, behaviour_names, PROTO_BEHAVIOUR_COUNT, &q->behaviour);
  }
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
  case 13:
    return rd_u32(r, &q->owner);
  case 14:
    q->has_goto = 1;
    return rd_goto_report(r, &q->go);
  default:
    q->has_tuning = 1;
    return rd_tuning(r, &q->tuning);
  }
}

static int pong_fn(reader *r, int key, void *ctx) {
  proto_pong *p = ctx;
  return rd_u64(r, key == 0 ? &p->client_time_us : key == 1 ? &p->server_time_us : &p->tick);
}

/* SET_PARAMS ACK: {agent, target_lost (optional, true)}. */
static const char *const set_params_ack_keys[] = {"agent", "target_lost"};

static int set_params_ack_fn(reader *r, int key, void *ctx) {
  proto_ack *a = ctx;
  if (key == 0)
    return rd_u32(r, &a->agent);
  return rd_bool(r, &a->target_lost);
}

/* ADD_OBSTACLE / REMOVE_OBSTACLE ACK: {obstacle, version, moved (ADD only)}. */
static const char *const map_ack_keys[] = {"obstacle", "version", "moved"};

static int map_ack_fn(reader *r, int key, void *ctx) {
  proto_ack *a = ctx;
  return rd_u32(r, key == 0 ? &a->obstacle : key == 1 ? &a->map_version : &a->moved);
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
  if (u < PROTO_MSG_SPAWN || !PROTO_MSG_IS_COMMAND(u)) {
    return fail_at(r, "command_type", PROTO_ERR_BAD_FIELD, "unknown value");
  }
  a->command = (uint8_t)u;
  switch (u) {
  case PROTO_MSG_QUERY:
    if (rd_body(r, query_keys, QUERY_KEY_COUNT, QUERY_KEY_REQUIRED, query_fn, &a->query, NULL))
      return -1;
    a->agent = a->query.agent;
    return 0;
  case PROTO_MSG_PING:
    return rd_body(r, pong_keys, 3, 7u, pong_fn, &a->pong, NULL);
  case PROTO_MSG_VIEW:
    return rd_body(r, NULL, 0, 0u, agent_fn, NULL, NULL);
  case PROTO_MSG_SET_PARAMS:
    return rd_body(r, set_params_ack_keys, 2, 1u, set_params_ack_fn, a, NULL);
  case PROTO_MSG_ADD_OBSTACLE:
  case PROTO_MSG_REMOVE_OBSTACLE:
    return rd_body(r, map_ack_keys, u == PROTO_MSG_ADD_OBSTACLE ? 3 : 2,
                   u == PROTO_MSG_ADD_OBSTACLE ? 7u : 3u, map_ack_fn, a, NULL);
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
    return rd_body(r, welcome_keys, 8, 0x7fu, welcome_fn, &out->welcome, NULL);
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
    e->agent = (proto_id)u;
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

/* ---- EVENTS (PROTOCOL.md 7.4) ------------------------------------------------------- */

size_t proto_encode_events(uint8_t *buf, size_t cap, uint32_t lost, const proto_event *events,
                           uint32_t count) {
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
        e->agent = (proto_id)u;
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

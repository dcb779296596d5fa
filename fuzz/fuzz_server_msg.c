/* fuzz_server_msg.c: libFuzzer target for proto_decode_server_msg, the
 * client's decoder of every server -> client message (WELCOME, ACK, ERROR,
 * EVENT, SNAPSHOT).
 *
 * Each input is one packet, decoded with a pose buffer of FUZZ_POSE_CAP, with
 * an exactly sized small one and with none; the three must agree. On success
 * the message must respect the spec's constraints and survive a write -> read
 * round trip through proto_encode_server_msg (equal fields, same bytes when
 * written again). */
#include "fuzz_common.h"

#define FUZZ_POSE_CAP  4096 /* more than a 16 KiB packet can hold (6 bytes per agent at least) */
#define FUZZ_SMALL_CAP 3
#define FUZZ_OUT_BYTES (8 * PROTO_MAX_MESSAGE_BYTES)

static proto_pose poses_a[FUZZ_POSE_CAP];
static proto_pose poses_rt[FUZZ_POSE_CAP];
static uint8_t enc1[FUZZ_OUT_BYTES];
static uint8_t enc2[FUZZ_OUT_BYTES];

static bool same_float(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static bool limits_ok(const proto_limit_values *l) {
  return fuzz_number_ok(l->max_speed) && l->max_speed > 0.0f && fuzz_number_ok(l->max_acceleration) &&
         l->max_acceleration > 0.0f && fuzz_number_ok(l->max_rotation) && l->max_rotation > 0.0f &&
         fuzz_number_ok(l->max_angular_acceleration) && l->max_angular_acceleration > 0.0f &&
         fuzz_number_ok(l->radius) && l->radius >= 0.0f;
}

static void check_poses(const proto_snapshot *s) {
  for (uint32_t i = 0; i < s->count; i++) {
    const proto_pose *p = &s->poses[i];
    FUZZ_CHECK(isfinite(p->x) && isfinite(p->y) && isfinite(p->vx) && isfinite(p->vy));
    FUZZ_CHECK(p->theta >= -PROTO_PI_F && p->theta < PROTO_PI_F); /* [-pi, pi) (PROTOCOL.md 3) */
  }
}

static void check_msg(const proto_server_msg *m, uint32_t cap) {
  switch (m->type) {
  case PROTO_MSG_WELCOME: {
    const proto_welcome *w = &m->welcome;
    FUZZ_CHECK(fuzz_number_ok(w->world_min.x) && fuzz_number_ok(w->world_min.y));
    FUZZ_CHECK(fuzz_number_ok(w->world_max.x) && fuzz_number_ok(w->world_max.y));
    break;
  }
  case PROTO_MSG_ACK: {
    const proto_ack *a = &m->ack;
    FUZZ_CHECK(a->command >= PROTO_MSG_SPAWN && PROTO_MSG_IS_COMMAND(a->command));
    if (a->command == PROTO_MSG_QUERY) {
      const proto_agent_report *q = &a->query;
      FUZZ_CHECK(q->agent == a->agent);
      FUZZ_CHECK(q->model < PROTO_MODEL_COUNT &&
                 (q->behaviour < PROTO_BEHAVIOUR_COUNT || q->behaviour == PROTO_BEHAVIOUR_GOTO));
      if (q->has_goto) {
        const proto_goto_report *g = &q->go;
        FUZZ_CHECK(g->status >= PROTO_GOTO_QUEUED && g->status < PROTO_GOTO_STATUS_END);
        FUZZ_CHECK(g->reason < PROTO_GOTO_REASON_COUNT && g->partial <= 1);
        FUZZ_CHECK(g->target_kind == PROTO_TARGET_POINT || g->target_kind == PROTO_TARGET_AGENT);
        FUZZ_CHECK(g->status == PROTO_GOTO_FOLLOWING
                       ? g->route_count >= 1 && g->route_count <= PROTO_MAX_ROUTE_POINTS
                       : g->route_count == 0);
        for (uint32_t i = 0; i < g->route_count; i++)
          FUZZ_CHECK(fuzz_number_ok(g->route[i].x) && fuzz_number_ok(g->route[i].y));
      }
      FUZZ_CHECK(q->arrived <= 1 && q->path_node >= -1);
      FUZZ_CHECK(fuzz_number_ok(q->state.position.x) && fuzz_number_ok(q->state.position.y));
      FUZZ_CHECK(fuzz_number_ok(q->state.velocity.x) && fuzz_number_ok(q->state.velocity.y));
      FUZZ_CHECK(fuzz_number_ok(q->state.rotation) && fuzz_angle_ok(q->state.orientation));
      FUZZ_CHECK(limits_ok(&q->limits));
      if (q->has_tuning) {
        const proto_tuning *t = &q->tuning;
        FUZZ_CHECK(fuzz_number_ok(t->avoid_weight) && t->avoid_weight >= 0.0f);
        FUZZ_CHECK(fuzz_number_ok(t->avoid_horizon) && t->avoid_horizon > 0.0f);
        FUZZ_CHECK(fuzz_number_ok(t->wall_lookahead) && t->wall_lookahead >= 0.0f);
        FUZZ_CHECK(fuzz_number_ok(t->wall_margin) && t->wall_margin >= 0.0f);
        FUZZ_CHECK(fuzz_number_ok(t->stuck_time) && t->stuck_time >= 0.0f);
        FUZZ_CHECK(t->stuck_reaction < PROTO_STUCK_REACTION_COUNT);
      }
    }
    break;
  }
  case PROTO_MSG_ERROR: {
    const proto_error_msg *e = &m->error;
    FUZZ_CHECK(fuzz_cstr_ok(e->message, sizeof e->message));
    FUZZ_CHECK(fuzz_cstr_ok(e->field, sizeof e->field));
    FUZZ_CHECK(e->has_field <= 1);
    if (!e->has_field)
      FUZZ_CHECK(e->field[0] == '\0');
    break;
  }
  case PROTO_MSG_EVENT:
    FUZZ_CHECK(m->event.code < PROTO_EVENT_COUNT);
    break;
  case PROTO_MSG_SNAPSHOT: {
    const proto_snapshot *s = &m->snapshot;
    FUZZ_CHECK(s->count <= cap && s->count <= s->header.agent_total);
    FUZZ_CHECK(s->header.part_count >= 1 && s->header.part_index < s->header.part_count);
    FUZZ_CHECK(s->count == 0 || s->poses != NULL);
    check_poses(s);
    break;
  }
  default:
    FUZZ_CHECK(!"unknown type decoded");
  }
}

static bool eq_snapshot(const proto_snapshot *a, const proto_snapshot *b) {
  if (memcmp(&a->header, &b->header, sizeof a->header) != 0 || a->count != b->count)
    return false;
  for (uint32_t i = 0; i < a->count; i++) {
    const proto_pose *x = &a->poses[i], *y = &b->poses[i];
    if (x->id != y->id || !same_float(x->x, y->x) || !same_float(x->y, y->y) ||
        !same_float(x->theta, y->theta) || !same_float(x->vx, y->vx) || !same_float(x->vy, y->vy))
      return false;
  }
  return true;
}

static bool same_point(proto_vec2 a, proto_vec2 b) { return same_float(a.x, b.x) && same_float(a.y, b.y); }

static bool same_tuning(const proto_tuning *a, const proto_tuning *b) {
  return same_float(a->avoid_weight, b->avoid_weight) && same_float(a->avoid_horizon, b->avoid_horizon) &&
         a->avoid_priority == b->avoid_priority && same_float(a->wall_lookahead, b->wall_lookahead) &&
         same_float(a->wall_margin, b->wall_margin) && same_float(a->stuck_time, b->stuck_time) &&
         a->stuck_reaction == b->stuck_reaction;
}

static bool same_goto(const proto_goto_report *a, const proto_goto_report *b) {
  if (a->status != b->status || a->reason != b->reason || a->target_kind != b->target_kind ||
      a->partial != b->partial || a->route_count != b->route_count)
    return false;
  if (a->target_kind == PROTO_TARGET_POINT ? !same_point(a->target, b->target)
                                           : a->target_agent != b->target_agent)
    return false;
  if (a->route_count && !same_point(a->goal, b->goal))
    return false;
  for (uint32_t i = 0; i < a->route_count; i++)
    if (!same_point(a->route[i], b->route[i]))
      return false;
  return true;
}

static bool eq_msg(const proto_server_msg *a, const proto_server_msg *b) {
  if (a->type != b->type)
    return false;
  switch (a->type) {
  case PROTO_MSG_WELCOME: {
    const proto_welcome *x = &a->welcome, *y = &b->welcome;
    return x->request_id == y->request_id && x->client_id == y->client_id && x->tick_rate == y->tick_rate &&
           x->snapshot_rate == y->snapshot_rate && same_float(x->world_min.x, y->world_min.x) &&
           same_float(x->world_min.y, y->world_min.y) && same_float(x->world_max.x, y->world_max.x) &&
           same_float(x->world_max.y, y->world_max.y) && x->tick == y->tick &&
           x->server_time_us == y->server_time_us && x->protocol == y->protocol &&
           x->max_agents == y->max_agents;
  }
  case PROTO_MSG_ACK: {
    const proto_ack *x = &a->ack, *y = &b->ack;
    if (x->request_id != y->request_id || x->command != y->command)
      return false;
    if (x->command == PROTO_MSG_PING)
      return x->pong.client_time_us == y->pong.client_time_us &&
             x->pong.server_time_us == y->pong.server_time_us && x->pong.tick == y->pong.tick;
    if (x->agent != y->agent || x->obstacle != y->obstacle || x->map_version != y->map_version ||
        x->moved != y->moved)
      return false;
    if (x->command != PROTO_MSG_QUERY)
      return true;
    const proto_agent_report *p = &x->query, *q = &y->query;
    return p->agent == q->agent && p->tick == q->tick && p->model == q->model &&
           p->behaviour == q->behaviour && p->arrived == q->arrived && p->path_node == q->path_node &&
           p->owner == q->owner && same_float(p->state.position.x, q->state.position.x) &&
           same_float(p->state.position.y, q->state.position.y) &&
           same_float(p->state.orientation, q->state.orientation) &&
           same_float(p->state.velocity.x, q->state.velocity.x) &&
           same_float(p->state.velocity.y, q->state.velocity.y) &&
           same_float(p->state.rotation, q->state.rotation) &&
           memcmp(&p->limits, &q->limits, sizeof p->limits) == 0 && p->has_goto == q->has_goto &&
           (!p->has_goto || same_goto(&p->go, &q->go)) && p->has_tuning == q->has_tuning &&
           (!p->has_tuning || same_tuning(&p->tuning, &q->tuning));
  }
  case PROTO_MSG_ERROR: {
    const proto_error_msg *x = &a->error, *y = &b->error;
    return x->request_id == y->request_id && x->code == y->code && strcmp(x->message, y->message) == 0 &&
           x->has_field == y->has_field && strcmp(x->field, y->field) == 0;
  }
  case PROTO_MSG_EVENT:
    return a->event.tick == b->event.tick && a->event.code == b->event.code &&
           a->event.agent == b->event.agent && a->event.data == b->event.data;
  default:
    return eq_snapshot(&a->snapshot, &b->snapshot);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  proto_server_msg m, m_small, m_none, rt;
  proto_error_info err, err_small, err_none;

  memset(&m, 0, sizeof m);
  int rc = proto_decode_server_msg(data, size, &m, poses_a, FUZZ_POSE_CAP, &err);

  /* An exactly sized small buffer (ASan sees any write past it) and no buffer. */
  proto_pose *small = malloc(FUZZ_SMALL_CAP * sizeof *small);
  FUZZ_CHECK(small != NULL);
  memset(&m_small, 0xa5, sizeof m_small);
  int rc_small = proto_decode_server_msg(data, size, &m_small, small, FUZZ_SMALL_CAP, &err_small);
  memset(&m_none, 0xa5, sizeof m_none);
  int rc_none = proto_decode_server_msg(data, size, &m_none, NULL, 0, &err_none);
  FUZZ_CHECK(proto_decode_server_msg(data, size, &m_none, NULL, 0, NULL) == rc_none);

  if (rc != 0) {
    fuzz_check_error(rc, &err);
    FUZZ_CHECK(err.type == 0 || (err.type >= PROTO_MSG_WELCOME && err.type <= PROTO_MSG_SNAPSHOT));
    /* TOO_LARGE: the packet, or a SNAPSHOT whose agents array claims more
     * agents than the caller's capacity (checked before the bytes are). */
    if (size > PROTO_MAX_MESSAGE_BYTES)
      FUZZ_CHECK(err.code == PROTO_ERR_TOO_LARGE && err.field[0] == '\0');
    else if (err.code == PROTO_ERR_TOO_LARGE)
      FUZZ_CHECK(err.type == PROTO_MSG_SNAPSHOT && strcmp(err.field, "agents") == 0);
    /* A smaller buffer can only fail earlier, with TOO_LARGE. */
    fuzz_check_error(rc_small, &err_small);
    fuzz_check_error(rc_none, &err_none);
    FUZZ_CHECK(rc_small == rc || rc_small == -PROTO_ERR_TOO_LARGE);
    FUZZ_CHECK(rc_none == rc || rc_none == -PROTO_ERR_TOO_LARGE);
    free(small);
    return 0;
  }

  fuzz_check_ok(rc, &err);
  FUZZ_CHECK(m.type >= PROTO_MSG_WELCOME && m.type <= PROTO_MSG_SNAPSHOT && err.type == m.type);
  check_msg(&m, FUZZ_POSE_CAP);
  if (m.type == PROTO_MSG_SNAPSHOT) {
    FUZZ_CHECK(m.snapshot.poses == poses_a);
    FUZZ_CHECK(rc_small == (m.snapshot.count <= FUZZ_SMALL_CAP ? 0 : -PROTO_ERR_TOO_LARGE));
    FUZZ_CHECK(rc_none == (m.snapshot.count == 0 ? 0 : -PROTO_ERR_TOO_LARGE));
    if (rc_small == 0) {
      check_msg(&m_small, FUZZ_SMALL_CAP);
      FUZZ_CHECK(eq_msg(&m, &m_small));
    }
  } else {
    FUZZ_CHECK(rc_small == 0 && rc_none == 0);
    FUZZ_CHECK(eq_msg(&m, &m_small) && eq_msg(&m, &m_none));
  }
  free(small);

  /* Write -> read round trip. */
  size_t n1 = proto_encode_server_msg(enc1, sizeof enc1, &m);
  FUZZ_CHECK(n1 > 0);
  FUZZ_CHECK(proto_encode_server_msg(enc2, n1 - 1, &m) == 0);
  if (m.type == PROTO_MSG_SNAPSHOT) /* worst-case sizes the server splits by (protocol.h) */
    FUZZ_CHECK(n1 <=
               PROTO_SNAPSHOT_HEADER_MAX_BYTES + (size_t)m.snapshot.count * PROTO_SNAPSHOT_AGENT_MAX_BYTES);
  memset(&rt, 0x5a, sizeof rt);
  rc = proto_decode_server_msg(enc1, n1, &rt, poses_rt, FUZZ_POSE_CAP, &err);
  if (rc != 0)
    fprintf(stderr, "round trip: %s at '%s' (%s)\n", proto_error_name(rc), err.field, err.reason);
  FUZZ_CHECK(rc == 0);
  check_msg(&rt, FUZZ_POSE_CAP);
  FUZZ_CHECK(eq_msg(&m, &rt));
  size_t n2 = proto_encode_server_msg(enc2, sizeof enc2, &rt);
  FUZZ_CHECK(n2 == n1 && memcmp(enc1, enc2, n1) == 0);
  return 0;
}

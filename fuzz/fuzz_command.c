/* fuzz_command.c: libFuzzer target for proto_decode_command, the server's
 * decoder of every client -> server message.
 *
 * Each input is one packet. On failure the error report must follow
 * PROTOCOL.md 7.3 (a known code, a printable NUL-terminated field, the
 * request_id echo rule checked against an independent reading of the bytes).
 * On success the decoded command must respect the spec's constraints, decode
 * the same into a zeroed and into a garbage-filled struct, and survive a
 * write -> read round trip: proto_encode_command, decode again, equal present
 * fields, and re-encoding gives the same bytes. */
#include "fuzz_common.h"
#include "wire_core.h"

#define FUZZ_OUT_BYTES (2 * PROTO_MAX_MESSAGE_BYTES)

static uint8_t enc1[FUZZ_OUT_BYTES];
static uint8_t enc2[FUZZ_OUT_BYTES];
static proto_command cmd_a, cmd_b, cmd_rt;

_Static_assert(sizeof(steer_limits) == PROTO_LIMIT_COUNT * sizeof(float), "steer_limits is floats");
_Static_assert(sizeof(steer_params) == PROTO_PARAM_COUNT * sizeof(float), "steer_params is floats");

static bool same_float(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* ---- Invariants of a decoded command -------------------------------------- */

static void check_limits(const proto_limits *l) {
  float f[PROTO_LIMIT_COUNT];
  memcpy(f, &l->v, sizeof f);
  FUZZ_CHECK((l->present & ~(uint32_t)PROTO_LIMIT_ALL) == 0);
  for (uint32_t i = 0; i < PROTO_LIMIT_COUNT; i++) {
    if (!(l->present & (1u << i)))
      continue;
    FUZZ_CHECK(fuzz_number_ok(f[i]));
    /* radius >= 0; the four maxima > 0 (PROTOCOL.md 5.1). */
    FUZZ_CHECK((1u << i) == PROTO_LIMIT_RADIUS ? f[i] >= 0.0f : f[i] > 0.0f);
  }
}

static void check_params(const proto_params *p) {
  const uint32_t positive =
      PROTO_PARAM_TIME_TO_TARGET | PROTO_PARAM_KINEMATIC_TIME_TO_TARGET | PROTO_PARAM_ALIGN_TIME_TO_TARGET;
  float f[PROTO_PARAM_COUNT];
  memcpy(f, &p->v, sizeof f);
  FUZZ_CHECK((p->present & ~(uint32_t)PROTO_PARAM_KEYS) == 0);
  for (uint32_t i = 0; i < PROTO_PARAM_COUNT; i++) {
    if (!(p->present & (1u << i)))
      continue;
    FUZZ_CHECK(fuzz_number_ok(f[i]));
    FUZZ_CHECK((positive & (1u << i)) ? f[i] > 0.0f : f[i] >= 0.0f);
  }
  const proto_tuning *t = &p->tuning;
  if (p->present & PROTO_PARAM_AVOID_WEIGHT)
    FUZZ_CHECK(fuzz_number_ok(t->avoid_weight) && t->avoid_weight >= 0.0f);
  if (p->present & PROTO_PARAM_AVOID_HORIZON)
    FUZZ_CHECK(fuzz_number_ok(t->avoid_horizon) && t->avoid_horizon > 0.0f);
  if (p->present & PROTO_PARAM_WALL_LOOKAHEAD)
    FUZZ_CHECK(fuzz_number_ok(t->wall_lookahead) && t->wall_lookahead >= 0.0f);
  if (p->present & PROTO_PARAM_WALL_MARGIN)
    FUZZ_CHECK(fuzz_number_ok(t->wall_margin) && t->wall_margin >= 0.0f);
  if (p->present & PROTO_PARAM_STUCK_TIME)
    FUZZ_CHECK(fuzz_number_ok(t->stuck_time) && t->stuck_time >= 0.0f);
  if (p->present & PROTO_PARAM_STUCK_REACTION)
    FUZZ_CHECK(t->stuck_reaction < STEER_STUCK_REACTION_COUNT);
}

/* ADD_OBSTACLE: a shape the map messages can carry (PROTOCOL.md 17.3). */
static void check_obstacle(const proto_add_obstacle *o) {
  FUZZ_CHECK(o->id >= 1 && o->kind < STEER_OBSTACLE_KIND_COUNT);
  if (o->kind == STEER_OBSTACLE_CIRCLE)
    FUZZ_CHECK(o->count == 1 && fuzz_number_ok(o->radius) && o->radius > 0.0f);
  else
    FUZZ_CHECK(o->count >= (o->kind == STEER_OBSTACLE_POLYGON ? 3u : 2u) &&
               o->count <= STEER_MAP_MAX_VERTICES && o->radius == 0.0f);
  for (uint32_t i = 0; i < o->count && i < STEER_MAP_MAX_VERTICES; i++)
    FUZZ_CHECK(fuzz_number_ok(o->points[i].x) && fuzz_number_ok(o->points[i].y));
}

static void check_behaviour(const proto_behaviour *b) {
  FUZZ_CHECK((b->present & ~0x7ffu) == 0);
  const uint32_t go = PROTO_BHV_NODE_RADIUS | PROTO_BHV_CORNERING | PROTO_BHV_REPLAN_DISTANCE;
  if (b->kind == PROTO_BEHAVIOUR_GOTO) {
    FUZZ_CHECK(!(b->present & (PROTO_BHV_TARGET_AGENT2 | PROTO_BHV_ORIENTATION)));
    if (b->present & PROTO_BHV_NODE_RADIUS)
      FUZZ_CHECK(fuzz_number_ok(b->node_radius) && b->node_radius > 0.0f);
    if (b->present & PROTO_BHV_CORNERING)
      FUZZ_CHECK(b->cornering < STEER_CORNER_COUNT);
    if (b->present & PROTO_BHV_REPLAN_DISTANCE)
      FUZZ_CHECK(fuzz_number_ok(b->replan_distance) && b->replan_distance >= 0.0f);
  } else {
    FUZZ_CHECK(b->kind < STEER_BEHAVIOUR_FOLLOW_PATH);
    FUZZ_CHECK((b->present & go) == 0);
  }
  if (b->present & PROTO_BHV_FACING)
    FUZZ_CHECK(b->facing < STEER_FACING_COUNT);
  if (b->present & PROTO_BHV_COMBINE)
    FUZZ_CHECK(b->combine < STEER_COMBINE_COUNT);
  if (b->present & PROTO_BHV_SEPARATION_WEIGHT)
    FUZZ_CHECK(fuzz_number_ok(b->separation_weight) && b->separation_weight >= 0.0f);
  if (b->present & PROTO_BHV_TARGET)
    FUZZ_CHECK(fuzz_number_ok(b->target.x) && fuzz_number_ok(b->target.y));
  if (b->present & PROTO_BHV_ORIENTATION)
    FUZZ_CHECK(fuzz_angle_ok(b->orientation));
  FUZZ_CHECK(!((b->present & PROTO_BHV_TARGET) && (b->present & PROTO_BHV_TARGET_AGENT)));
  if (b->present & PROTO_BHV_TARGET_AGENT2)
    FUZZ_CHECK(b->present & PROTO_BHV_TARGET_AGENT);
  check_params(&b->params);
}

static void check_path(const proto_path *p) {
  FUZZ_CHECK(p->count >= 1 && p->count <= PROTO_MAX_PATH_POINTS);
  FUZZ_CHECK(fuzz_number_ok(p->radius) && p->radius > 0.0f);
  FUZZ_CHECK(p->mode < STEER_PATH_MODE_COUNT);
  FUZZ_CHECK(p->cornering < STEER_CORNER_COUNT);
  for (uint32_t i = 0; i < p->count; i++)
    FUZZ_CHECK(fuzz_number_ok(p->points[i].x) && fuzz_number_ok(p->points[i].y));
  check_params(&p->params);
}

static void check_command(const proto_command *c) {
  FUZZ_CHECK(PROTO_MSG_IS_COMMAND(c->type));
  switch (c->type) {
  case PROTO_MSG_ADD_OBSTACLE:
    check_obstacle(&c->add_obstacle);
    break;
  case PROTO_MSG_REMOVE_OBSTACLE:
    FUZZ_CHECK(c->remove_obstacle.id >= 1);
    break;
  case PROTO_MSG_HELLO: {
    FUZZ_CHECK(fuzz_cstr_ok(c->hello.name, sizeof c->hello.name));
    FUZZ_CHECK(strlen(c->hello.name) <= PROTO_MAX_NAME_BYTES);
#ifdef PROTO_MAX_TOKEN_BYTES
    FUZZ_CHECK(c->hello.has_token <= 1 && fuzz_cstr_ok(c->hello.token, sizeof c->hello.token));
    FUZZ_CHECK(strlen(c->hello.token) <= PROTO_MAX_TOKEN_BYTES);
    if (!c->hello.has_token)
      FUZZ_CHECK(c->hello.token[0] == '\0');
    for (const char *t = c->hello.token; *t; t++)
      FUZZ_CHECK(*t >= 0x21 && *t <= 0x7e); /* printable ASCII, no space */
#endif
    FUZZ_CHECK(c->hello.has_snapshots <= 1 && c->hello.snapshots < PROTO_SNAPSHOTS_COUNT);
    if (!c->hello.has_snapshots)
      FUZZ_CHECK(c->hello.snapshots == PROTO_SNAPSHOTS_FULL);
    break;
  }
  case PROTO_MSG_VIEW:
    FUZZ_CHECK(c->view.kind < PROTO_VIEW_KIND_COUNT);
    if (c->view.kind == PROTO_VIEW_CENTRE)
      FUZZ_CHECK(fuzz_number_ok(c->view.centre.x) && fuzz_number_ok(c->view.centre.y));
    if (c->view.kind != PROTO_VIEW_ALL)
      FUZZ_CHECK(fuzz_number_ok(c->view.radius) && c->view.radius > 0.0f);
    break;
  case PROTO_MSG_SPAWN: {
    const proto_spawn *s = &c->spawn;
    FUZZ_CHECK((s->present & ~0x3fu) == 0);
    FUZZ_CHECK(s->model < STEER_MODEL_COUNT);
    FUZZ_CHECK(fuzz_number_ok(s->position.x) && fuzz_number_ok(s->position.y));
    if (s->present & PROTO_SPAWN_ORIENTATION)
      FUZZ_CHECK(fuzz_angle_ok(s->orientation));
    if (s->present & PROTO_SPAWN_VX)
      FUZZ_CHECK(fuzz_number_ok(s->velocity.x));
    if (s->present & PROTO_SPAWN_VY)
      FUZZ_CHECK(fuzz_number_ok(s->velocity.y));
    if (s->present & PROTO_SPAWN_LIMITS)
      check_limits(&s->limits);
    if (s->present & PROTO_SPAWN_BEHAVIOUR)
      check_behaviour(&s->behaviour);
    if (s->present & PROTO_SPAWN_PATH)
      check_path(&s->path);
    break;
  }
  case PROTO_MSG_SET_BEHAVIOUR:
    check_behaviour(&c->set_behaviour.behaviour);
    break;
  case PROTO_MSG_SET_PATH:
    check_path(&c->set_path.path);
    break;
  case PROTO_MSG_SET_PARAMS:
    check_limits(&c->set_params.limits);
    check_params(&c->set_params.params);
    break;
  default: /* DESPAWN, STOP, QUERY, PING: any uint32 / uint64 */
    break;
  }
}

/* ---- Equality of the present fields ----------------------------------------- */

static bool eq_limits(const proto_limits *a, const proto_limits *b) {
  float fa[PROTO_LIMIT_COUNT], fb[PROTO_LIMIT_COUNT];
  memcpy(fa, &a->v, sizeof fa);
  memcpy(fb, &b->v, sizeof fb);
  if (a->present != b->present)
    return false;
  for (uint32_t i = 0; i < PROTO_LIMIT_COUNT; i++)
    if ((a->present & (1u << i)) && !same_float(fa[i], fb[i]))
      return false;
  return true;
}

static bool eq_params(const proto_params *a, const proto_params *b) {
  float fa[PROTO_PARAM_COUNT], fb[PROTO_PARAM_COUNT];
  memcpy(fa, &a->v, sizeof fa);
  memcpy(fb, &b->v, sizeof fb);
  if (a->present != b->present)
    return false;
  for (uint32_t i = 0; i < PROTO_PARAM_COUNT; i++)
    if ((a->present & (1u << i)) && !same_float(fa[i], fb[i]))
      return false;
  const proto_tuning *x = &a->tuning, *y = &b->tuning;
  uint32_t p = a->present;
  return !((p & PROTO_PARAM_AVOID_WEIGHT) && !same_float(x->avoid_weight, y->avoid_weight)) &&
         !((p & PROTO_PARAM_AVOID_HORIZON) && !same_float(x->avoid_horizon, y->avoid_horizon)) &&
         !((p & PROTO_PARAM_AVOID_PRIORITY) && x->avoid_priority != y->avoid_priority) &&
         !((p & PROTO_PARAM_WALL_LOOKAHEAD) && !same_float(x->wall_lookahead, y->wall_lookahead)) &&
         !((p & PROTO_PARAM_WALL_MARGIN) && !same_float(x->wall_margin, y->wall_margin)) &&
         !((p & PROTO_PARAM_STUCK_TIME) && !same_float(x->stuck_time, y->stuck_time)) &&
         !((p & PROTO_PARAM_STUCK_REACTION) && x->stuck_reaction != y->stuck_reaction);
}

static bool eq_behaviour(const proto_behaviour *a, const proto_behaviour *b) {
  uint32_t p = a->present;
  if (p != b->present || a->kind != b->kind || !eq_params(&a->params, &b->params))
    return false;
  if ((p & PROTO_BHV_TARGET) &&
      !(same_float(a->target.x, b->target.x) && same_float(a->target.y, b->target.y)))
    return false;
  if ((p & PROTO_BHV_TARGET_AGENT) && a->target_agent != b->target_agent)
    return false;
  if ((p & PROTO_BHV_TARGET_AGENT2) && a->target_agent2 != b->target_agent2)
    return false;
  if ((p & PROTO_BHV_ORIENTATION) && !same_float(a->orientation, b->orientation))
    return false;
  if ((p & PROTO_BHV_FACING) && a->facing != b->facing)
    return false;
  if ((p & PROTO_BHV_COMBINE) && a->combine != b->combine)
    return false;
  if ((p & PROTO_BHV_SEPARATION_WEIGHT) && !same_float(a->separation_weight, b->separation_weight))
    return false;
  if ((p & PROTO_BHV_MAX_NEIGHBOURS) && a->max_neighbours != b->max_neighbours)
    return false;
  if ((p & PROTO_BHV_NODE_RADIUS) && !same_float(a->node_radius, b->node_radius))
    return false;
  if ((p & PROTO_BHV_CORNERING) && a->cornering != b->cornering)
    return false;
  if ((p & PROTO_BHV_REPLAN_DISTANCE) && !same_float(a->replan_distance, b->replan_distance))
    return false;
  return true;
}

static bool eq_path(const proto_path *a, const proto_path *b) {
  if (a->count != b->count || !same_float(a->radius, b->radius) || a->mode != b->mode ||
      a->cornering != b->cornering || !eq_params(&a->params, &b->params))
    return false;
  for (uint32_t i = 0; i < a->count && i < PROTO_MAX_PATH_POINTS; i++)
    if (!same_float(a->points[i].x, b->points[i].x) || !same_float(a->points[i].y, b->points[i].y))
      return false;
  return true;
}

static bool eq_command(const proto_command *a, const proto_command *b) {
  if (a->type != b->type || a->request_id != b->request_id)
    return false;
  switch (a->type) {
  case PROTO_MSG_HELLO:
    if (a->hello.version != b->hello.version || strcmp(a->hello.name, b->hello.name) != 0)
      return false;
#ifdef PROTO_MAX_TOKEN_BYTES
    if (a->hello.has_token != b->hello.has_token || strcmp(a->hello.token, b->hello.token) != 0)
      return false;
#endif
    return a->hello.has_snapshots == b->hello.has_snapshots && a->hello.snapshots == b->hello.snapshots;
  case PROTO_MSG_VIEW:
    if (a->view.kind != b->view.kind)
      return false;
    if (a->view.kind == PROTO_VIEW_CENTRE)
      return same_float(a->view.centre.x, b->view.centre.x) &&
             same_float(a->view.centre.y, b->view.centre.y) && same_float(a->view.radius, b->view.radius);
    if (a->view.kind == PROTO_VIEW_FOLLOW)
      return a->view.follow == b->view.follow && same_float(a->view.radius, b->view.radius);
    return true;
  case PROTO_MSG_SPAWN: {
    const proto_spawn *x = &a->spawn, *y = &b->spawn;
    uint32_t p = x->present;
    if (p != y->present || x->model != y->model || !same_float(x->position.x, y->position.x) ||
        !same_float(x->position.y, y->position.y))
      return false;
    if ((p & PROTO_SPAWN_ORIENTATION) && !same_float(x->orientation, y->orientation))
      return false;
    if ((p & PROTO_SPAWN_VX) && !same_float(x->velocity.x, y->velocity.x))
      return false;
    if ((p & PROTO_SPAWN_VY) && !same_float(x->velocity.y, y->velocity.y))
      return false;
    if ((p & PROTO_SPAWN_LIMITS) && !eq_limits(&x->limits, &y->limits))
      return false;
    if ((p & PROTO_SPAWN_BEHAVIOUR) && !eq_behaviour(&x->behaviour, &y->behaviour))
      return false;
    if ((p & PROTO_SPAWN_PATH) && !eq_path(&x->path, &y->path))
      return false;
    return true;
  }
  case PROTO_MSG_DESPAWN:
  case PROTO_MSG_STOP:
  case PROTO_MSG_QUERY:
    return a->despawn.agent == b->despawn.agent;
  case PROTO_MSG_SET_BEHAVIOUR:
    return a->set_behaviour.agent == b->set_behaviour.agent &&
           eq_behaviour(&a->set_behaviour.behaviour, &b->set_behaviour.behaviour);
  case PROTO_MSG_SET_PATH:
    return a->set_path.agent == b->set_path.agent && eq_path(&a->set_path.path, &b->set_path.path);
  case PROTO_MSG_SET_PARAMS:
    return a->set_params.agent == b->set_params.agent &&
           eq_limits(&a->set_params.limits, &b->set_params.limits) &&
           eq_params(&a->set_params.params, &b->set_params.params);
  case PROTO_MSG_ADD_OBSTACLE: {
    const proto_add_obstacle *x = &a->add_obstacle, *y = &b->add_obstacle;
    if (x->id != y->id || x->kind != y->kind || x->count != y->count || !same_float(x->radius, y->radius))
      return false;
    for (uint32_t i = 0; i < x->count && i < STEER_MAP_MAX_VERTICES; i++)
      if (!same_float(x->points[i].x, y->points[i].x) || !same_float(x->points[i].y, y->points[i].y))
        return false;
    return true;
  }
  case PROTO_MSG_REMOVE_OBSTACLE:
    return a->remove_obstacle.id == b->remove_obstacle.id;
  default:
    return a->ping.client_time_us == b->ping.client_time_us;
  }
}

/* ---- The target ------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  proto_error_info err, err_b;
  uint32_t want_id = 0;
  bool want_has_id;

  memset(&cmd_a, 0, sizeof cmd_a);
  int rc = proto_decode_command(data, size, &cmd_a, &err);

  /* The same bytes into a garbage-filled struct: the result must not depend
   * on what the caller's struct held. */
  memset(&cmd_b, 0xa5, sizeof cmd_b);
  int rc_b = proto_decode_command(data, size, &cmd_b, &err_b);
  FUZZ_CHECK(rc_b == rc);
  FUZZ_CHECK(err_b.code == err.code && strcmp(err_b.field, err.field) == 0);

  /* err may be NULL. */
  FUZZ_CHECK(proto_decode_command(data, size, &cmd_b, NULL) == rc);

  want_has_id = fuzz_expected_request_id(data, size, &want_id);
  if (rc != 0) {
    fuzz_check_error(rc, &err);
    FUZZ_CHECK(err.type == 0 || PROTO_MSG_IS_COMMAND(err.type));
    if (size > PROTO_MAX_MESSAGE_BYTES)
      FUZZ_CHECK(err.code == PROTO_ERR_TOO_LARGE && err.field[0] == '\0');
    else
      FUZZ_CHECK(err.code != PROTO_ERR_TOO_LARGE);
    /* PROTOCOL.md 7.3: the request_id is echoed iff the packet starts right. */
    FUZZ_CHECK(err.has_request_id == (want_has_id ? 1 : 0));
    if (want_has_id)
      FUZZ_CHECK(err.request_id == want_id);
    return 0;
  }

  fuzz_check_ok(rc, &err);
  FUZZ_CHECK(want_has_id && want_id == cmd_a.request_id);
  FUZZ_CHECK(err.has_request_id && err.request_id == cmd_a.request_id);
  FUZZ_CHECK(err.type == cmd_a.type);
  check_command(&cmd_a);
  FUZZ_CHECK(eq_command(&cmd_a, &cmd_b));

  /* Write -> read round trip. Every decodable command re-encodes within the
   * packet limit (the schema bounds every map and array). */
  size_t n1 = proto_encode_command(enc1, sizeof enc1, &cmd_a);
  FUZZ_CHECK(n1 > 0 && n1 <= PROTO_MAX_MESSAGE_BYTES);
  /* A buffer one byte short is refused, not overrun. */
  FUZZ_CHECK(proto_encode_command(enc2, n1 - 1, &cmd_a) == 0);
  memset(&cmd_rt, 0x5a, sizeof cmd_rt);
  rc = proto_decode_command(enc1, n1, &cmd_rt, &err);
  if (rc != 0)
    fprintf(stderr, "round trip: %s at '%s' (%s)\n", proto_error_name(rc), err.field, err.reason);
  FUZZ_CHECK(rc == 0);
  check_command(&cmd_rt);
  FUZZ_CHECK(eq_command(&cmd_a, &cmd_rt));
  size_t n2 = proto_encode_command(enc2, sizeof enc2, &cmd_rt);
  FUZZ_CHECK(n2 == n1 && memcmp(enc1, enc2, n1) == 0);

  /* The apply helpers on what a client can send. */
  if (cmd_a.type == PROTO_MSG_SPAWN) {
    steer_agent_desc d = steer_default_agent_desc();
    wire_apply_spawn(&cmd_a.spawn, &d);
    FUZZ_CHECK(d.model == cmd_a.spawn.model);
  } else if (cmd_a.type == PROTO_MSG_SET_BEHAVIOUR) {
    steer_behaviour b = steer_default_behaviour((steer_behaviour_kind)cmd_a.set_behaviour.behaviour.kind);
    wire_apply_behaviour(&cmd_a.set_behaviour.behaviour, &b);
    FUZZ_CHECK(b.kind == cmd_a.set_behaviour.behaviour.kind);
  }
  return 0;
}

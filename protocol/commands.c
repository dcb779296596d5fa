/* commands.c: client -> server commands (HELLO, SPAWN, DESPAWN, SET_BEHAVIOUR,
 * SET_PATH, SET_PARAMS, STOP, QUERY, PING, VIEW, SNAPSHOT_ACK), encoded and
 * decoded, with the objects they carry (LIMITS, PARAMS, BEHAVIOUR, PATH). */
#include "wire_internal.h"

#include <string.h>

static float *field_ptr(void *base, size_t offset) { return (float *)(void *)((char *)base + offset); }
static float field_get(const void *base, size_t offset) {
  return *(const float *)(const void *)((const char *)base + offset);
}

/* ---- Encoding ---------------------------------------------------------------- */

static void pack_fields(msgpack_packer *pk, const float_field *fields, uint32_t count, uint32_t present,
                        const void *base) {
  present &= (1u << count) - 1u;
  msgpack_pack_map(pk, popcount32(present));
  for (uint32_t i = 0; i < count; i++)
    if (present & (1u << i))
      pack_kf(pk, fields[i].name, field_get(base, fields[i].offset));
}

void pack_limits(msgpack_packer *pk, const proto_limits *l) {
  pack_fields(pk, limit_fields, PROTO_LIMIT_COUNT, l->present, &l->v);
}

static void pack_params(msgpack_packer *pk, const proto_params *p) {
  uint32_t present = p->present & PROTO_PARAM_KEYS;
  msgpack_pack_map(pk, popcount32(present));
  for (uint32_t i = 0; i < PROTO_PARAM_COUNT; i++)
    if (present & (1u << i))
      pack_kf(pk, param_fields[i].name, field_get(&p->v, param_fields[i].offset));
  const proto_tuning *t = &p->tuning;
  if (present & PROTO_PARAM_AVOID_WEIGHT)
    pack_kf(pk, "avoid_weight", t->avoid_weight);
  if (present & PROTO_PARAM_AVOID_HORIZON)
    pack_kf(pk, "avoid_horizon", t->avoid_horizon);
  if (present & PROTO_PARAM_AVOID_PRIORITY)
    pack_ku(pk, "avoid_priority", t->avoid_priority);
  if (present & PROTO_PARAM_WALL_LOOKAHEAD)
    pack_kf(pk, "wall_lookahead", t->wall_lookahead);
  if (present & PROTO_PARAM_WALL_MARGIN)
    pack_kf(pk, "wall_margin", t->wall_margin);
  if (present & PROTO_PARAM_STUCK_TIME)
    pack_kf(pk, "stuck_time", t->stuck_time);
  if (present & PROTO_PARAM_STUCK_REACTION)
    pack_ks(pk, "stuck_reaction",
            stuck_reaction_names[t->stuck_reaction < PROTO_STUCK_REACTION_COUNT ? t->stuck_reaction : 0]);
  if (present & PROTO_PARAM_ARRIVAL)
    pack_ks(pk, "arrival", arrival_names[t->arrival < PROTO_ARRIVAL_COUNT ? t->arrival : 0]);
}

static void pack_point(msgpack_packer *pk, proto_vec2 p) {
  msgpack_pack_array(pk, 2);
  msgpack_pack_float(pk, p.x);
  msgpack_pack_float(pk, p.y);
}

static bool behaviour_valid(const proto_behaviour *b) {
  const uint32_t go = PROTO_BHV_NODE_RADIUS | PROTO_BHV_CORNERING | PROTO_BHV_REPLAN_DISTANCE;
  if (b->kind == PROTO_BEHAVIOUR_GOTO) {
    if (b->present & (PROTO_BHV_TARGET_AGENT2 | PROTO_BHV_ORIENTATION))
      return false;
    if ((b->present & PROTO_BHV_CORNERING) && b->cornering >= PROTO_CORNER_COUNT)
      return false;
  } else if (b->kind >= PROTO_BEHAVIOUR_FOLLOW_PATH || (b->present & go)) {
    return false;
  }
  if ((b->present & PROTO_BHV_FACING) && b->facing >= PROTO_FACING_COUNT)
    return false;
  if ((b->present & PROTO_BHV_COMBINE) && b->combine >= PROTO_COMBINE_COUNT)
    return false;
  return true;
}

static void pack_behaviour(msgpack_packer *pk, const proto_behaviour *b) {
  uint32_t opt = PROTO_BHV_TARGET | PROTO_BHV_TARGET_AGENT | PROTO_BHV_TARGET_AGENT2 | PROTO_BHV_ORIENTATION |
                 PROTO_BHV_FACING | PROTO_BHV_COMBINE | PROTO_BHV_SEPARATION_WEIGHT |
                 PROTO_BHV_MAX_NEIGHBOURS | PROTO_BHV_NODE_RADIUS | PROTO_BHV_CORNERING |
                 PROTO_BHV_REPLAN_DISTANCE;
  uint32_t p = b->present & opt;
  msgpack_pack_map(pk, 1u + popcount32(p) + (b->params.present & PROTO_PARAM_KEYS ? 1u : 0u));
  pack_ks(pk, "kind", proto_behaviour_name(b->kind));
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
  if (p & PROTO_BHV_NODE_RADIUS)
    pack_kf(pk, "node_radius", b->node_radius);
  if (p & PROTO_BHV_CORNERING)
    pack_ks(pk, "cornering", cornering_names[b->cornering]);
  if (p & PROTO_BHV_REPLAN_DISTANCE)
    pack_kf(pk, "replan_distance", b->replan_distance);
  if (b->params.present & PROTO_PARAM_KEYS) {
    pack_key(pk, "params");
    pack_params(pk, &b->params);
  }
}

static bool path_valid(const proto_path *p) {
  return p->count >= 1 && p->count <= PROTO_MAX_PATH_POINTS && p->mode < PROTO_PATH_MODE_COUNT &&
         p->cornering < PROTO_CORNER_COUNT;
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
  if (p->params.present & PROTO_PARAM_KEYS) {
    pack_key(pk, "params");
    pack_params(pk, &p->params);
  }
}

static uint32_t path_field_count(const proto_path *p) {
  return 4u + (p->params.present & PROTO_PARAM_KEYS ? 1u : 0u);
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
    if (s->model >= PROTO_MODEL_COUNT)
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
         has_p = (s->params.present & PROTO_PARAM_KEYS) != 0;
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
  case PROTO_MSG_ADD_OBSTACLE:
  case PROTO_MSG_REMOVE_OBSTACLE:
    if (pack_obstacle_command(&pk, cmd) != 0)
      return 0;
    break;
  default:
    return 0;
  }
  return writer_done(&w);
}

/* ---- Decoding: text, limits and params -------------------------------------------- */

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

int rd_limits(reader *r, proto_limits *l) {
  memset(l, 0, sizeof *l);
  return rd_fields(r, limit_fields, PROTO_LIMIT_COUNT, &l->v, &l->present);
}

/* PARAMS: the float fields of proto_param_values, then the tuning keys. */
#define PARAM_KEY_COUNT (PROTO_PARAM_COUNT + PROTO_TUNING_COUNT)

static int params_fn(reader *r, int key, void *ctx) {
  proto_params *p = ctx;
  if (key < PROTO_PARAM_COUNT)
    return rd_float(r, param_fields[key].sign, field_ptr(&p->v, param_fields[key].offset));
  proto_tuning *t = &p->tuning;
  uint64_t u;
  switch (key - PROTO_PARAM_COUNT) {
  case 0:
    return rd_float(r, NUM_NONNEG, &t->avoid_weight);
  case 1:
    return rd_float(r, NUM_POSITIVE, &t->avoid_horizon);
  case 2:
    if (rd_uint(r, 255, &u))
      return -1;
    t->avoid_priority = (uint8_t)u;
    return 0;
  case 3:
    return rd_float(r, NUM_NONNEG, &t->wall_lookahead);
  case 4:
    return rd_float(r, NUM_NONNEG, &t->wall_margin);
  case 5:
    return rd_float(r, NUM_NONNEG, &t->stuck_time);
  case 6:
    return rd_enum(r, stuck_reaction_names, PROTO_STUCK_REACTION_COUNT, &t->stuck_reaction);
  default:
    return rd_enum(r, arrival_names, PROTO_ARRIVAL_COUNT, &t->arrival);
  }
}

/* The keys in bit order: param_fields' names, then the tuning keys. */
static const char *const param_keys[PARAM_KEY_COUNT] = {"time_to_target",
                                                        "target_radius",
                                                        "slow_radius",
                                                        "kinematic_time_to_target",
                                                        "align_target_radius",
                                                        "align_slow_radius",
                                                        "align_time_to_target",
                                                        "max_prediction",
                                                        "panic_radius",
                                                        "wander_offset",
                                                        "wander_radius",
                                                        "wander_rate",
                                                        "separation_radius",
                                                        "turn_trigger_distance",
                                                        "path_recover_strength",
                                                        "avoid_weight",
                                                        "avoid_horizon",
                                                        "avoid_priority",
                                                        "wall_lookahead",
                                                        "wall_margin",
                                                        "stuck_time",
                                                        "stuck_reaction",
                                                        "arrival"};

static int rd_params(reader *r, proto_params *p) {
  memset(p, 0, sizeof *p);
  return rd_map(r, param_keys, PARAM_KEY_COUNT, 0, params_fn, p, &p->present);
}

void pack_tuning(msgpack_packer *pk, const proto_tuning *t) {
  proto_params p;
  memset(&p, 0, sizeof p);
  p.present = PROTO_PARAM_TUNING;
  p.tuning = *t;
  pack_params(pk, &p);
}

/* Only the tuning keys, every one but arrival (a server that predates it
 * does not send it: POINT), a key of the other params unknown here. */
static int tuning_fn(reader *r, int key, void *ctx) { return params_fn(r, key + PROTO_PARAM_COUNT, ctx); }

int rd_tuning(reader *r, proto_tuning *t) {
  proto_params p;
  uint32_t seen = 0;
  memset(&p, 0, sizeof p);
  const uint32_t required = (1u << (PROTO_TUNING_COUNT - 1)) - 1u;
  if (rd_map(r, param_keys + PROTO_PARAM_COUNT, PROTO_TUNING_COUNT, required, tuning_fn, &p, &seen))
    return -1;
  *t = p.tuning;
  return 0;
}

/* ---- Decoding: command bodies ---------------------------------------------------- */

static const char *const behaviour_keys[] = {"kind",           "target", "target_agent", "target_agent2",
                                             "orientation",    "facing", "combine",      "separation_weight",
                                             "max_neighbours", "params", "node_radius",  "cornering",
                                             "replan_distance"};
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
  BK_PARAMS,
  BK_NODE_RADIUS,
  BK_CORNERING,
  BK_REPLAN,
  BK_COUNT
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
    if (n == 4 && memcmp(s, "goto", 4) == 0) {
      b->kind = PROTO_BEHAVIOUR_GOTO;
      return 0;
    }
    r->pos = save;
    return rd_enum(r, behaviour_names, PROTO_BEHAVIOUR_FOLLOW_PATH, &b->kind);
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
    return rd_enum(r, facing_names, PROTO_FACING_COUNT, &b->facing);
  case BK_COMBINE:
    b->present |= PROTO_BHV_COMBINE;
    return rd_enum(r, combine_names, PROTO_COMBINE_COUNT, &b->combine);
  case BK_SEPW:
    b->present |= PROTO_BHV_SEPARATION_WEIGHT;
    return rd_float(r, NUM_NONNEG, &b->separation_weight);
  case BK_MAXN:
    b->present |= PROTO_BHV_MAX_NEIGHBOURS;
    if (rd_uint(r, 255, &u))
      return -1;
    b->max_neighbours = (uint8_t)u;
    return 0;
  case BK_NODE_RADIUS:
    b->present |= PROTO_BHV_NODE_RADIUS;
    return rd_float(r, NUM_POSITIVE, &b->node_radius);
  case BK_CORNERING:
    b->present |= PROTO_BHV_CORNERING;
    return rd_enum(r, cornering_names, PROTO_CORNER_COUNT, &b->cornering);
  case BK_REPLAN:
    b->present |= PROTO_BHV_REPLAN_DISTANCE;
    return rd_float(r, NUM_NONNEG, &b->replan_distance);
  default:
    return rd_params(r, &b->params);
  }
}

static int rd_behaviour(reader *r, proto_behaviour *b) {
  memset(b, 0, sizeof *b);
  if (rd_map(r, behaviour_keys, BK_COUNT, 1u << BK_KIND, behaviour_fn, b, NULL))
    return -1;
  if ((b->present & PROTO_BHV_TARGET) && (b->present & PROTO_BHV_TARGET_AGENT)) {
    return fail_at(r, "target_agent", PROTO_ERR_BAD_FIELD, "conflicts with target");
  }
  if ((b->present & PROTO_BHV_TARGET_AGENT2) && !(b->present & PROTO_BHV_TARGET_AGENT)) {
    return fail_at(r, "target_agent2", PROTO_ERR_BAD_FIELD, "needs target_agent");
  }
  /* goto's own keys, and the keys goto has no use for (PROTOCOL.md 5.3). */
  if (b->kind != PROTO_BEHAVIOUR_GOTO) {
    if (b->present & PROTO_BHV_NODE_RADIUS)
      return fail_at(r, "node_radius", PROTO_ERR_BAD_FIELD, "only with kind goto");
    if (b->present & PROTO_BHV_CORNERING)
      return fail_at(r, "cornering", PROTO_ERR_BAD_FIELD, "only with kind goto");
    if (b->present & PROTO_BHV_REPLAN_DISTANCE)
      return fail_at(r, "replan_distance", PROTO_ERR_BAD_FIELD, "only with kind goto");
  } else {
    if (b->present & PROTO_BHV_TARGET_AGENT2)
      return fail_at(r, "target_agent2", PROTO_ERR_BAD_FIELD, "not with kind goto");
    if (b->present & PROTO_BHV_ORIENTATION)
      return fail_at(r, "orientation", PROTO_ERR_BAD_FIELD, "not with kind goto");
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
    return rd_enum(r, mode_names, PROTO_PATH_MODE_COUNT, &p->mode);
  case 3:
    return rd_enum(r, cornering_names, PROTO_CORNER_COUNT, &p->cornering);
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
    return rd_enum(r, model_names, PROTO_MODEL_COUNT, &s->model);
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

int agent_fn(reader *r, int key, void *ctx) {
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
  int known = PROTO_MSG_IS_COMMAND(type);
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
    s->position = proto_v2(0.0f, 0.0f);
    s->orientation = 0.0f;
    s->velocity = proto_v2(0.0f, 0.0f);
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
  case PROTO_MSG_ADD_OBSTACLE:
    return rd_add_obstacle(r, &out->add_obstacle);
  case PROTO_MSG_REMOVE_OBSTACLE:
    return rd_remove_obstacle(r, &out->remove_obstacle);
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
int proto_peek_request_id(const uint8_t *data, size_t len, uint32_t *out) {
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
  if (rc != 0 && !r.err->has_request_id && proto_peek_request_id(r.p, r.len, &r.err->request_id))
    r.err->has_request_id = 1;
  return rc;
}

/* ---- SNAPSHOT_ACK (delta snapshots' acknowledgement) ---------------------------- */

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

/* server_commands.c: each command's handling (PROTOCOL.md 6), the map's edits and streams,
 * and the clients' inboxes run by the command scheduler within the tick's budget. */
#include "server_internal.h"
#include "wire_core.h"

/* ---- commands ------------------------------------------------------------ */

/* An ERROR's code, text and field (NULL: nil) kept for whoever answers: -1. */
static int fail(proto_error_msg *err, int code, const char *message, const char *field) {
  memset(err, 0, sizeof *err);
  err->code = (uint32_t)code;
  snprintf(err->message, sizeof err->message, "%s", message);
  err->has_field = field != NULL;
  snprintf(err->field, sizeof err->field, "%s", field ? field : "");
  return -1;
}

/* A world error as a wire error; `field` names what the command got wrong. */
static int fail_world(proto_error_msg *err, int rc, const char *field) {
  int code = wire_error_of(rc);
  return fail(err, code, steer_strerror(rc),
              code == PROTO_ERR_WORLD_FULL ? NULL
              : rc == STEER_ENOENT         ? "agent"
                                           : field);
}

/* The ACK, or the ERROR of a command that failed (rc -1). */
static void answer(steerd_server *s, client *c, uint32_t request_id, int rc, const proto_ack *ack,
                   const proto_error_msg *err) {
  if (rc == 0)
    send_ack(s, c, ack);
  else
    send_error(s, c, request_id, (int)err->code, err->message, err->has_field ? err->field : NULL);
}

static void send_world_error(steerd_server *s, client *c, uint32_t request_id, int rc, const char *field) {
  proto_error_msg err;
  answer(s, c, request_id, fail_world(&err, rc, field), NULL, &err);
}

static void send_check_error(steerd_server *s, client *c, uint32_t request_id, const steerd_check *chk) {
  send_error(s, c, request_id, PROTO_ERR_BAD_FIELD, chk->message, chk->field);
}

/* Asks the peer to go once what is queued for it (the last ERROR) has left;
 * whatever it sends meanwhile is ignored. */
static void drop_client(steerd_server *s, client *c, uint32_t reason, const char *why) {
  if (c->closing)
    return;
  c->closing = 1;
  PEER_LOG(s, STEERD_LOG_WARN, "client %u (%s): disconnecting (%s): %s", c->id, c->addr,
           proto_disconnect_name(reason), why);
  enet_peer_disconnect_later(c->peer, reason);
}

/* A malformed packet: counted per 10 s window; over the limit the peer goes. */
static void count_garbage(steerd_server *s, client *c) {
  uint64_t now = uv_hrtime();
  c->bad_messages++;
  s->stats.bad_messages++;
  if (c->garbage_count == 0 ||
      now - c->garbage_window_ns >= (uint64_t)STEERD_GARBAGE_WINDOW_MS * 1000000ull) {
    c->garbage_window_ns = now;
    c->garbage_count = 0;
  }
  if (++c->garbage_count > s->cfg.garbage_limit) {
    s->stats.abuse_disconnects++;
    drop_client(s, c, PROTO_DISCONNECT_ABUSE, "too many malformed packets");
  }
}

/* Token bucket: rate_limit per second, rate_burst deep. 1 if the command may run. */
static int take_token(steerd_server *s, client *c) {
  uint64_t now = uv_hrtime();
  c->tokens += (double)(now - c->bucket_ns) * 1e-9 * (double)s->cfg.rate_limit;
  if (c->tokens > (double)s->cfg.rate_burst)
    c->tokens = (double)s->cfg.rate_burst;
  c->bucket_ns = now;
  if (c->tokens < 1.0)
    return 0;
  c->tokens -= 1.0;
  return 1;
}

static int apply_path(steerd_server *s, steer_id id, const proto_path *p) {
  vec2 points[PROTO_MAX_PATH_POINTS];
  for (uint32_t i = 0; i < p->count && i < PROTO_MAX_PATH_POINTS; i++)
    points[i] = wire_to_vec2(p->points[i]);
  int rc = steer_world_set_path(s->world, id, points, p->count, p->radius, (steer_path_mode)p->mode,
                                (steer_cornering)p->cornering);
  if (rc != STEER_OK || !p->params.present)
    return rc;
  steer_agent_info info;
  steer_world_get(s->world, id, &info);
  wire_apply_params(&p->params, &info.behaviour.params);
  wire_apply_tuning(&p->params, &info.behaviour);
  return steer_world_set_behaviour(s->world, id, &info.behaviour);
}

/* The field a BLOCKED path names: its first point inside the map's geometry,
 * e.g. "points[2]" (prefix "path." in a SPAWN). */
static const char *blocked_point(const steerd_server *s, const proto_path *p, const char *prefix, char *buf,
                                 size_t cap) {
  uint32_t i = 0;
  while (i < p->count && !steer_map_inside(steer_world_map(s->world), wire_to_vec2(p->points[i])))
    i++;
  if (i < p->count)
    snprintf(buf, cap, "%spoints[%u]", prefix, i);
  else
    snprintf(buf, cap, "%spoints", prefix);
  return buf;
}

/* Observers command nothing; controllers their own agents; admins every agent. */
static int may_command(steerd_server *s, client *c, uint32_t request_id, steer_id agent) {
  steer_agent_info info;
  int rc = steer_world_get(s->world, agent, &info);
  if (rc != STEER_OK) {
    send_world_error(s, c, request_id, rc, "agent");
    return 0;
  }
  if (c->role != STEERD_ROLE_ADMIN && info.owner != c->owner->id) {
    send_error(s, c, request_id, PROTO_ERR_NOT_OWNER,
               info.owner == STEERD_DEMO_OWNER ? "the agent belongs to the server: only admins command it"
                                               : "the agent belongs to another client",
               "agent");
    return 0;
  }
  return 1;
}

/* ---- the map (map_admin.h, PROTOCOL.md 17) ------------------------------------ */

/* The MAP parts c still has to receive, as many as its queue allows: parts go
 * while less than half of event_backlog is queued to it, so a large map never
 * makes it look behind (its events would be dropped) nor overflow its queue;
 * the rest follows at later wake-ups as it reads. */
static void send_map_parts(steerd_server *s, client *c) {
  uint32_t slot = (uint32_t)(c - s->clients);
  size_t budget = s->event_backlog / 2u;
  while (c->peer && !c->closing && !c->overflowed && steerd_mapsync_streaming(s->mapsync, slot)) {
    if (c->queued > budget && (c->queued = steerd_guard_peer_queued(c->peer)) > budget)
      return;
    size_t n = steerd_mapsync_next(s->mapsync, slot, steer_world_map(s->world), s->out, sizeof(s->out));
    if (n == 0)
      return;
    ENetPacket *p = enet_packet_create(s->out, n, ENET_PACKET_FLAG_RELIABLE);
    if (!p || client_queue(s, c, PROTO_CHANNEL_RELIABLE, p) != 0) {
      if (p)
        enet_packet_destroy(p);
      return;
    }
    s->stats.map_parts_sent++;
    s->stats.map_bytes_sent += n;
  }
}

void send_map_streams(steerd_server *s) {
  for (uint32_t i = 0; i < s->cfg.max_clients; i++)
    if (s->clients[i].peer && s->clients[i].welcomed && steerd_mapsync_streaming(s->mapsync, i))
      send_map_parts(s, &s->clients[i]);
}

/* Everything that follows a change of the map: every client holding the map
 * gets MAP_CHANGED (one packet shared by all), those still receiving an older
 * version start again from part 0 of this one (send_map_parts). Reactions to
 * map changes (replanning routes) belong here. */
static void map_changed(steerd_server *s, const steerd_map_edit *e, const steerd_map_result *r) {
  proto_map_changed mc;
  memset(&mc, 0, sizeof(mc));
  mc.version = r->version;
  mc.tick = steer_world_tick(s->world);
  if (e->op == STEERD_MAP_REMOVE) {
    mc.removed_count = 1;
    mc.removed = &e->obstacle.id;
  } else {
    mc.added_count = 1;
    mc.added = &e->obstacle;
  }
  size_t n = proto_encode_map_changed(s->out, sizeof(s->out), &mc);
  ENetPacket *p = n ? enet_packet_create(s->out, n, ENET_PACKET_FLAG_RELIABLE) : NULL;
  for (uint32_t i = 0; p && i < s->cfg.max_clients; i++) {
    client *c = &s->clients[i];
    if (!c->peer || !c->welcomed || c->closing || !steerd_mapsync_synced(s->mapsync, i))
      continue;
    if (client_queue(s, c, PROTO_CHANNEL_RELIABLE, p) == 0) {
      steerd_mapsync_advance(s->mapsync, i, r->version);
      s->stats.map_changed_sent++;
    }
  }
  if (p && p->referenceCount == 0)
    enet_packet_destroy(p);
  s->stats.map_changes++;
  steerd_goto_map_changed(s->planner, s->world); /* routes across the change replan */
  send_map_streams(s);
  if (e->op == STEERD_MAP_ADD)
    LOG_INFO("map version %u: obstacle %u (%s) added, %u agents moved out of it", r->version, e->obstacle.id,
             proto_obstacle_kind_name(e->obstacle.kind), r->moved);
  else
    LOG_INFO("map version %u: obstacle %u removed", r->version, e->obstacle.id);
}

int steerd_server_map_edit(steerd_server *s, const steerd_map_edit *e, steerd_map_result *r) {
  if (steerd_map_edit_apply(s->world, e, r) != 0)
    return -1;
  map_changed(s, e, r);
  return 0;
}

/* The demo's side door (demo.h steerd_demo_map_edit): an edit like an admin's,
 * so clients get MAP_CHANGED. */
int demo_map_edit(void *ctx, steer_world *w, uint32_t id, const steer_obstacle_desc *o) {
  (void)w;
  steerd_map_edit e;
  memset(&e, 0, sizeof(e));
  e.op = o ? STEERD_MAP_ADD : STEERD_MAP_REMOVE;
  e.obstacle = o ? wire_obstacle_of(id, o) : (proto_obstacle){.id = id};
  steerd_map_result r;
  return steerd_server_map_edit(ctx, &e, &r) == 0 ? STEER_OK : STEER_EINVAL;
}

/* ADD_OBSTACLE or REMOVE_OBSTACLE applied to the world, its ACK's fields
 * set (0), or the ERROR (-1); map_changed tells the clients. */
static int apply_map_command(steerd_server *s, const proto_command *cmd, steerd_map_edit *edit,
                             steerd_map_result *result, proto_ack *ack, proto_error_msg *err) {
  steerd_map_edit e;
  memset(&e, 0, sizeof(e));
  if (cmd->type == PROTO_MSG_ADD_OBSTACLE) {
    const proto_add_obstacle *a = &cmd->add_obstacle;
    e.op = STEERD_MAP_ADD;
    e.obstacle.id = a->id;
    e.obstacle.kind = a->kind;
    e.obstacle.count = a->count;
    e.obstacle.radius = a->radius;
    e.obstacle.points = a->points;
  } else {
    e.op = STEERD_MAP_REMOVE;
    e.obstacle.id = cmd->remove_obstacle.id;
  }
  steerd_map_result r;
  if (steerd_map_edit_apply(s->world, &e, &r) != 0)
    return fail(err, r.code, r.why.message, r.why.field[0] ? r.why.field : NULL);
  ack->obstacle = e.obstacle.id;
  ack->map_version = r.version;
  ack->moved = r.moved;
  *edit = e;
  *result = r;
  return 0;
}

/* ADD_OBSTACLE, REMOVE_OBSTACLE: admins only; the ACK goes before the MAP_CHANGED. */
static void cmd_map_edit(steerd_server *s, client *c, const proto_command *cmd, proto_ack *ack) {
  if (c->role != STEERD_ROLE_ADMIN) {
    send_error(s, c, cmd->request_id, PROTO_ERR_FORBIDDEN, "only admins change the map", NULL);
    return;
  }
  steerd_map_edit e;
  steerd_map_result r;
  proto_error_msg err;
  int rc = apply_map_command(s, cmd, &e, &r, ack, &err);
  answer(s, c, cmd->request_id, rc, ack, &err);
  if (rc == 0)
    map_changed(s, &e, &r);
}

/* Who the HELLO says it is: 0 with *role and *named set, or -1 after the
 * ERROR and the disconnect. */
static int authenticate(steerd_server *s, client *c, const proto_command *cmd, int *role, int *named,
                        char *name) {
  const proto_hello *h = &cmd->hello;
  if (!s->auth_on) {
    if (h->has_token)
      LOG_DEBUG("client %u: token ignored: no secret is configured", c->id);
    *role = s->cfg.anonymous_role;
    *named = 0;
    snprintf(name, PROTO_MAX_NAME_BYTES + 1, "%s", h->name);
    return 0;
  }
  steerd_token t;
  int rc = h->has_token ? steerd_auth_verify(&s->auth, h->token, strlen(h->token), (uint64_t)time(NULL), &t)
                        : STEERD_AUTH_EMALFORMED;
  if (rc != STEERD_AUTH_OK) {
    int code = rc == STEERD_AUTH_EEXPIRED ? PROTO_ERR_TOKEN_EXPIRED : PROTO_ERR_UNAUTHORIZED;
    const char *why = !h->has_token ? "this server needs a token in HELLO" : steerd_auth_strerror(rc);
    s->stats.auth_failures++;
    send_error(s, c, cmd->request_id, code, why, "token");
    drop_client(s, c, PROTO_DISCONNECT_AUTH_FAILED, why);
    return -1;
  }
  if (c->welcomed && (!c->owner->named || strcmp(c->owner->name, t.name) != 0)) {
    send_error(s, c, cmd->request_id, PROTO_ERR_BAD_FIELD, "a connection cannot change its identity",
               "token");
    return -1;
  }
  *role = (int)t.role;
  *named = 1;
  memcpy(name, t.name, sizeof(t.name));
  return 0;
}

static void cmd_hello(steerd_server *s, client *c, const proto_command *cmd) {
  if (cmd->hello.version != PROTO_VERSION) {
    send_error(s, c, cmd->request_id, PROTO_ERR_VERSION_MISMATCH, "this server speaks protocol version 1",
               "version");
    c->closing = 1;
    enet_peer_disconnect_later(c->peer, PROTO_DISCONNECT_VERSION);
    return;
  }
  int role, named;
  char name[PROTO_MAX_NAME_BYTES + 1];
  if (authenticate(s, c, cmd, &role, &named, name) != 0)
    return;
  if (!c->welcomed) {
    client *w = admit(s, c);
    if (!w) {
      s->stats.refused_full++;
      c->closing = 1;
      PEER_LOG(s, STEERD_LOG_WARN, "client %u (%s): refused at HELLO: server full (%u clients)", c->id,
               c->addr, s->cfg.max_clients);
      enet_peer_disconnect(c->peer, PROTO_DISCONNECT_FULL);
      return;
    }
    c = w;
    owner_rec *o = named ? owner_by_name(s, name) : NULL;
    if (o && o->orphaned_ns) {
      o->orphaned_ns = 0;
      s->orphans_pending--;
      LOG_INFO("owner %u (%s) is back in time: its %u agents stay", o->id, o->name, o->agents);
    }
    if (!o)
      o = owner_new(s, c->id, name, named);
    if (!o) {
      send_error(s, c, cmd->request_id, PROTO_ERR_INTERNAL, "no room for another client", NULL);
      return;
    }
    o->connections++;
    c->owner = o;
    LOG_INFO("client %u (%s) says hello as '%s'%s, role %s, client id %u", c->id, c->addr, name,
             named ? " (token)" : " (anonymous)", steerd_role_name(role), o->id);
  }
  int was_welcomed = c->welcomed;
  c->welcomed = 1;
  c->role = role; /* a fresh token may change the role of the same name */
  int delta = cmd->hello.has_snapshots && cmd->hello.snapshots == PROTO_SNAPSHOTS_DELTA;
  uint32_t slot = (uint32_t)(c - s->clients);
  if (delta && !c->delta) {
    steerd_netcode_client_start(s->netcode, slot);
    s->delta_clients++;
  } else if (!delta && c->delta) {
    steerd_netcode_client_stop(s->netcode, slot);
    s->delta_clients--;
  }
  if (!delta && (c->delta || !was_welcomed))
    steerd_bytebucket_init(&c->full_rate); /* the first full snapshot goes at once */
  c->delta = delta;
  memcpy(c->name, name, sizeof(c->name));
  const steer_world_config *wc = steer_world_get_config(s->world);
  proto_welcome w;
  memset(&w, 0, sizeof(w));
  w.request_id = cmd->request_id;
  w.client_id = c->owner->id;
  w.tick_rate = s->cfg.tick_rate;
  w.snapshot_rate = s->cfg.snapshot_rate;
  w.world_min = wire_of_vec2(wc->min);
  w.world_max = wire_of_vec2(wc->max);
  w.tick = steer_world_tick(s->world);
  w.server_time_us = server_time_us(s);
  w.protocol = PROTO_VERSION;
  w.max_agents = steer_world_capacity(s->world); /* clients size their buffers by it */
  send_reliable(s, c, proto_encode_welcome(s->out, sizeof(s->out), &w));
  /* The map follows the WELCOME (every HELLO's: a client that lost track asks again). */
  steerd_mapsync_start(s->mapsync, slot);
  send_map_parts(s, c);
}

static void cmd_spawn(steerd_server *s, client *c, const proto_command *cmd, proto_ack *ack) {
  const proto_spawn *sp = &cmd->spawn;
  steerd_check chk;
  if (steerd_check_spawn(sp, &s->bounds, &chk) != 0) {
    send_check_error(s, c, cmd->request_id, &chk);
    return;
  }
  steer_agent_desc desc = steer_default_agent_desc();
  wire_apply_spawn(sp, &desc);
  int go = (sp->present & PROTO_SPAWN_BEHAVIOUR) && sp->behaviour.kind == PROTO_BEHAVIOUR_GOTO;
  if (go && (sp->present & PROTO_SPAWN_PATH)) {
    send_error(s, c, cmd->request_id, PROTO_ERR_BAD_FIELD,
               "a goto behaviour plans its own path: no path with it", "path");
    return;
  }
  if (go)
    steerd_goto_spawn_desc(&desc); /* at rest until its route is served */
  if (sp->present & PROTO_SPAWN_PATH) {
    /* The path's params merge into the behaviour's: check them before spawning. */
    steer_params merged = desc.behaviour.params;
    wire_apply_params(&sp->path.params, &merged);
    if (steerd_check_merged_params(&merged, "path", &chk) != 0) {
      send_check_error(s, c, cmd->request_id, &chk);
      return;
    }
  }
  if (c->owner->agents >= s->cfg.max_agents_per_client) {
    char text[96];
    snprintf(text, sizeof(text), "you own %u agents, the most this server allows a client",
             s->cfg.max_agents_per_client);
    send_error(s, c, cmd->request_id, PROTO_ERR_QUOTA_EXCEEDED, text, NULL);
    return;
  }
  steer_id id;
  int rc = steer_world_spawn(s->world, &desc, c->owner->id, &id);
  if (rc == STEER_EBLOCKED) /* the body in the map's geometry, else the behaviour's target point */
    send_world_error(s, c, cmd->request_id, rc,
                     steer_map_free(steer_world_map(s->world), desc.state.position, desc.limits.radius, 0.0f)
                         ? "behaviour.target"
                         : "x");
  if (rc == STEER_EBLOCKED)
    return;
  if (rc != STEER_OK) {
    send_world_error(s, c, cmd->request_id, rc,
                     (sp->present & PROTO_SPAWN_BEHAVIOUR) ? "behaviour" : "limits");
    return;
  }
  if (sp->present & PROTO_SPAWN_PATH) {
    rc = apply_path(s, id, &sp->path);
    if (rc != STEER_OK) {
      steer_world_despawn(s->world, id); /* all or nothing */
      char field[32];
      send_world_error(s, c, cmd->request_id, rc,
                       rc == STEER_EMODEL     ? "path.cornering"
                       : rc == STEER_EBLOCKED ? blocked_point(s, &sp->path, "path.", field, sizeof field)
                                              : "path");
      return;
    }
  }
  steerd_goto_refusal why;
  if (go && steerd_goto_start(s->planner, s->world, id, &sp->behaviour, &why) != 0) {
    steer_world_despawn(s->world, id); /* all or nothing */
    send_error(s, c, cmd->request_id, why.code, why.message, why.field);
    return;
  }
  c->owner->agents++;
  ack->agent = id;
  send_ack(s, c, ack);
  steer_agent_info info;
  vec2 pos = steer_world_get(s->world, id, &info) == STEER_OK ? info.state.position : v2(0.0f, 0.0f);
  agent_event(s, PROTO_EVENT_SPAWNED, id, c->owner->id, pos, c->owner->id);
}

static void cmd_set_path(steerd_server *s, client *c, const proto_command *cmd, proto_ack *ack) {
  const proto_set_path *sp = &cmd->set_path;
  steerd_check chk;
  if (steerd_check_path(&sp->path, &s->bounds, "", &chk) != 0) {
    send_check_error(s, c, cmd->request_id, &chk);
    return;
  }
  /* Refuse params that would fail once merged before the path changes anything. */
  steer_agent_info info;
  int rc = steer_world_get(s->world, sp->agent, &info);
  if (rc != STEER_OK) {
    send_world_error(s, c, cmd->request_id, rc, "agent");
    return;
  }
  wire_apply_params(&sp->path.params, &info.behaviour.params);
  if (steerd_check_merged_params(&info.behaviour.params, "params", &chk) != 0) {
    send_check_error(s, c, cmd->request_id, &chk);
    return;
  }
  ack->agent = sp->agent;
  rc = apply_path(s, sp->agent, &sp->path);
  if (rc != STEER_OK) {
    char field[32];
    send_world_error(s, c, cmd->request_id, rc,
                     rc == STEER_EMODEL     ? "cornering"
                     : rc == STEER_EBLOCKED ? blocked_point(s, &sp->path, "", field, sizeof field)
                                            : "params");
    return;
  }
  steerd_goto_forget(s->planner, sp->agent);
  send_ack(s, c, ack);
}

static void cmd_set_params(steerd_server *s, client *c, const proto_command *cmd, proto_ack *ack) {
  const proto_set_params *sp = &cmd->set_params;
  steerd_check chk;
  if (steerd_check_limits(&sp->limits, "limits", &chk) != 0 ||
      steerd_check_params(&sp->params, "params", &chk) != 0) {
    send_check_error(s, c, cmd->request_id, &chk);
    return;
  }
  steer_agent_info info;
  int rc = steer_world_get(s->world, sp->agent, &info);
  if (rc != STEER_OK) {
    send_world_error(s, c, cmd->request_id, rc, "agent");
    return;
  }
  steer_limits limits = info.limits;
  steer_behaviour b = info.behaviour;
  wire_apply_limits(&sp->limits, &limits);
  wire_apply_params(&sp->params, &b.params);
  if (steerd_check_merged_params(&b.params, "params", &chk) != 0) {
    send_check_error(s, c, cmd->request_id, &chk);
    return;
  }
  /* Both or neither: limits first, undone if the params are refused. Only the
   * params change, so a target agent that is gone does not refuse them: the
   * ACK says so instead (target_lost, PROTOCOL.md 6.6). */
  rc = steer_world_set_limits(s->world, sp->agent, &limits);
  if (rc != STEER_OK) {
    send_world_error(s, c, cmd->request_id, rc, rc == STEER_EBLOCKED ? "limits.radius" : "limits");
    return;
  }
  rc = steer_world_set_params(s->world, sp->agent, &b.params);
  if (rc == STEER_OK && (sp->params.present & PROTO_PARAM_TUNING)) {
    wire_apply_tuning(&sp->params, &b);
    rc = steer_world_set_tuning(s->world, sp->agent, &b);
    if (rc != STEER_OK)
      steer_world_set_params(s->world, sp->agent, &info.behaviour.params);
  }
  if (rc != STEER_OK) {
    steer_world_set_limits(s->world, sp->agent, &info.limits);
    send_world_error(s, c, cmd->request_id, rc, "params");
    return;
  }
  ack->target_lost = (uint8_t)steer_world_target_lost(s->world, sp->agent);
  send_ack(s, c, ack);
}

int steerd_server_agent_report(const steerd_server *s, steer_id id, proto_agent_report *r) {
  steer_agent_info info;
  int rc = steer_world_get(s->world, id, &info);
  if (rc != STEER_OK)
    return rc;
  r->agent = info.id;
  r->tick = steer_world_tick(s->world); /* the state after the last completed tick */
  r->model = info.model;
  r->behaviour = info.behaviour.kind;
  r->arrived = info.arrived != 0;
  r->path_node = info.path >= 0 ? (int32_t)info.cursor.node : -1;
  r->state = wire_state_of(&info.state);
  r->limits = wire_limits_of(&info.limits);
  r->owner = info.owner;
  r->has_tuning = 1; /* the agent's avoidance, wall feeler, stuck detection and arrival (PROTOCOL.md 6.8) */
  wire_tuning_of(&info.behaviour, &r->tuning);
  steerd_goto_report(s->planner, s->world, r);
  return STEER_OK;
}

static void cmd_query(steerd_server *s, client *c, const proto_command *cmd, proto_ack *ack) {
  int rc = steerd_server_agent_report(s, cmd->query.agent, &ack->query);
  if (rc != STEER_OK) {
    send_world_error(s, c, cmd->request_id, rc, "agent");
    return;
  }
  send_ack(s, c, ack);
}

/* VIEW: what this client's delta snapshots cover; full snapshots ignore it. */
static void cmd_view(steerd_server *s, client *c, const proto_command *cmd, proto_ack *ack) {
  if (!c->delta) {
    /* Checked like a delta client's (one answer for both), then not kept: a
     * later switch to delta starts with the whole world (PROTOCOL.md §6.10). */
    steer_agent_info info;
    if (cmd->view.kind == PROTO_VIEW_FOLLOW &&
        steer_world_get(s->world, cmd->view.follow, &info) != STEER_OK) {
      send_error(s, c, cmd->request_id, PROTO_ERR_NO_SUCH_AGENT, steer_strerror(STEER_ENOENT), "follow");
      return;
    }
    send_ack(s, c, ack);
    return;
  }
  int rc = steerd_netcode_set_view(s->netcode, (uint32_t)(c - s->clients), &cmd->view, s->world);
  if (rc == STEERD_NETCODE_ENOENT) {
    send_error(s, c, cmd->request_id, PROTO_ERR_NO_SUCH_AGENT, steer_strerror(STEER_ENOENT), "follow");
    return;
  }
  if (rc != STEERD_NETCODE_OK) {
    send_error(s, c, cmd->request_id, PROTO_ERR_INTERNAL, "cannot set the view", NULL);
    return;
  }
  send_ack(s, c, ack);
}

/* SET_BEHAVIOUR of an agent the sender may command: applied, ack->agent set
 * (0), or the ERROR (-1). GOTO goes to the planner. */
static int set_behaviour(steerd_server *s, const proto_command *cmd, proto_ack *ack, proto_error_msg *err) {
  steerd_check chk;
  const proto_behaviour *pb = &cmd->set_behaviour.behaviour;
  ack->agent = cmd->set_behaviour.agent;
  if (steerd_check_behaviour(pb, &s->bounds, "behaviour", &chk) != 0)
    return fail(err, PROTO_ERR_BAD_FIELD, chk.message, chk.field);
  if (pb->kind == PROTO_BEHAVIOUR_GOTO) {
    steerd_goto_refusal why;
    if (steerd_goto_set(s->planner, s->world, ack->agent, pb, &why) != 0)
      return fail(err, why.code, why.message, why.field);
    return 0;
  }
  steer_behaviour b = steer_default_behaviour((steer_behaviour_kind)pb->kind);
  steer_agent_info was;
  if (steer_world_get(s->world, ack->agent, &was) == STEER_OK) {
    /* Avoidance, the wall feeler, stuck detection and arrival are the agent's, kept
     * across behaviours unless the new one's params name them (PROTOCOL.md 5.2). */
    wire_tuning_keep(&was.behaviour, &b);
  }
  wire_apply_behaviour(pb, &b);
  int rc = steer_world_set_behaviour(s->world, ack->agent, &b);
  if (rc != STEER_OK)
    return fail_world(err, rc,
                      rc == STEER_ETARGET    ? "behaviour.target_agent"
                      : rc == STEER_EMODEL   ? "behaviour.kind"
                      : rc == STEER_EBLOCKED ? "behaviour.target"
                                             : "behaviour");
  steerd_goto_forget(s->planner, ack->agent);
  return 0;
}

int steerd_server_admin_command(steerd_server *s, const proto_command *cmd, proto_ack *ack,
                                proto_error_msg *err) {
  memset(ack, 0, sizeof *ack);
  ack->request_id = cmd->request_id;
  ack->command = cmd->type;
  s->stats.commands++;
  if (cmd->type == PROTO_MSG_SET_BEHAVIOUR) {
    if (!steer_world_alive(s->world, cmd->set_behaviour.agent))
      return fail_world(err, STEER_ENOENT, "agent");
    return set_behaviour(s, cmd, ack, err);
  }
  if (cmd->type != PROTO_MSG_ADD_OBSTACLE && cmd->type != PROTO_MSG_REMOVE_OBSTACLE)
    return fail(err, PROTO_ERR_FORBIDDEN,
                "the live view sends SET_BEHAVIOUR, ADD_OBSTACLE and REMOVE_OBSTACLE", NULL);
  steerd_map_edit e;
  steerd_map_result r;
  if (apply_map_command(s, cmd, &e, &r, ack, err) != 0)
    return -1;
  map_changed(s, &e, &r);
  return 0;
}

static void handle_command(steerd_server *s, client *c, const proto_command *cmd) {
  s->stats.commands++;
  c->commands++;
  if (!take_token(s, c)) {
    c->rate_limited++;
    s->stats.rate_limited++;
    /* Every refusal is answered (PROTOCOL.md 4: one reply per command, which
     * clients wait for): what a flooder makes the server queue is bounded by
     * client_queue(), the work by the per-wake-up budget of service_enet(). */
    send_error(s, c, cmd->request_id, PROTO_ERR_RATE_LIMITED, "too many commands: this one was not applied",
               NULL);
    return;
  }
  if (cmd->type == PROTO_MSG_HELLO) {
    cmd_hello(s, c, cmd);
    return;
  }
  if (!c->welcomed) {
    /* Answered once (send_error), and malformed: a peer that keeps sending
     * commands without HELLO goes after --garbage-limit of them. */
    send_error(s, c, cmd->request_id, PROTO_ERR_NOT_WELCOMED, "send HELLO first", NULL);
    count_garbage(s, c);
    return;
  }
  if (c->role == STEERD_ROLE_OBSERVER && cmd->type != PROTO_MSG_QUERY && cmd->type != PROTO_MSG_PING &&
      cmd->type != PROTO_MSG_VIEW) {
    send_error(s, c, cmd->request_id, PROTO_ERR_FORBIDDEN, "observers may only QUERY, PING and VIEW", NULL);
    return;
  }
  proto_ack ack;
  memset(&ack, 0, sizeof(ack));
  ack.request_id = cmd->request_id;
  ack.command = cmd->type;
  /* Commands that change an agent name it in the same place. */
  steer_id target = cmd->type == PROTO_MSG_DESPAWN         ? cmd->despawn.agent
                    : cmd->type == PROTO_MSG_SET_BEHAVIOUR ? cmd->set_behaviour.agent
                    : cmd->type == PROTO_MSG_SET_PATH      ? cmd->set_path.agent
                    : cmd->type == PROTO_MSG_SET_PARAMS    ? cmd->set_params.agent
                    : cmd->type == PROTO_MSG_STOP          ? cmd->stop.agent
                                                           : 0;
  if (target && !may_command(s, c, cmd->request_id, target))
    return;
  int rc;
  switch (cmd->type) {
  case PROTO_MSG_SPAWN:
    cmd_spawn(s, c, cmd, &ack);
    return;
  case PROTO_MSG_DESPAWN: {
    steer_agent_info info;
    ack.agent = cmd->despawn.agent;
    rc = steer_world_get(s->world, ack.agent, &info);
    if (rc == STEER_OK)
      rc = steer_world_despawn(s->world, ack.agent);
    if (rc != STEER_OK)
      break;
    steerd_goto_forget(s->planner, ack.agent);
    owner_agent_gone(s, info.owner, c);
    send_ack(s, c, &ack);
    agent_event(s, PROTO_EVENT_DESPAWNED, cmd->despawn.agent, 0, info.state.position, info.owner);
    return;
  }
  case PROTO_MSG_SET_BEHAVIOUR: {
    proto_error_msg err;
    answer(s, c, cmd->request_id, set_behaviour(s, cmd, &ack, &err), &ack, &err);
    return;
  }
  case PROTO_MSG_SET_PATH:
    cmd_set_path(s, c, cmd, &ack);
    return;
  case PROTO_MSG_SET_PARAMS:
    ack.agent = cmd->set_params.agent;
    cmd_set_params(s, c, cmd, &ack);
    return;
  case PROTO_MSG_STOP:
    ack.agent = cmd->stop.agent;
    rc = steer_world_stop(s->world, ack.agent);
    if (rc == STEER_OK)
      steerd_goto_forget(s->planner, ack.agent);
    break;
  case PROTO_MSG_QUERY:
    ack.agent = cmd->query.agent;
    cmd_query(s, c, cmd, &ack);
    return;
  case PROTO_MSG_VIEW:
    cmd_view(s, c, cmd, &ack);
    return;
  case PROTO_MSG_ADD_OBSTACLE:
  case PROTO_MSG_REMOVE_OBSTACLE:
    cmd_map_edit(s, c, cmd, &ack);
    return;
  case PROTO_MSG_PING:
    ack.pong.client_time_us = cmd->ping.client_time_us;
    ack.pong.server_time_us = server_time_us(s);
    ack.pong.tick = steer_world_tick(s->world);
    send_ack(s, c, &ack);
    return;
  default:
    send_error(s, c, cmd->request_id, PROTO_ERR_UNKNOWN_TYPE, "unknown command", NULL);
    return;
  }
  if (rc != STEER_OK)
    send_world_error(s, c, cmd->request_id, rc, "agent");
  else
    send_ack(s, c, &ack);
}

void handle_packet(steerd_server *s, client *c, const ENetPacket *p, uint8_t channel) {
  if (c->closing || c->overflowed)
    return;
  if (channel != PROTO_CHANNEL_RELIABLE) {
    proto_snapshot_ack ack;
    if (proto_decode_snapshot_ack(p->data, p->dataLength, &ack, NULL) == 0) {
      /* Never answered; a full-snapshot client's acks mean nothing and are dropped. */
      if (c->welcomed && c->delta)
        steerd_netcode_ack(s->netcode, (uint32_t)(c - s->clients), &ack);
      return;
    }
    send_error(s, c, 0, PROTO_ERR_BAD_MESSAGE, "commands go on channel 0", NULL);
    count_garbage(s, c);
    return;
  }
  if (!(p->flags & ENET_PACKET_FLAG_RELIABLE)) {
    /* Commands are reliable (PROTOCOL.md 1): an unreliable one could be lost
     * with its reply, and costs the sender no acknowledgement. */
    send_error(s, c, 0, PROTO_ERR_BAD_MESSAGE, "commands must be sent reliably on channel 0", NULL);
    count_garbage(s, c);
    return;
  }
  if (p->dataLength > PROTO_MAX_MESSAGE_BYTES) {
    send_error(s, c, 0, PROTO_ERR_TOO_LARGE, "message larger than 16384 bytes", NULL);
    count_garbage(s, c);
    return;
  }
  proto_error_info err;
  int rc = proto_decode_command(p->data, p->dataLength, &s->cmd, &err);
  if (rc != 0) {
    char text[PROTO_MAX_ERROR_TEXT_BYTES + 1];
    snprintf(text, sizeof(text), "%s%s%s", proto_error_text(err.code), err.reason ? ": " : "",
             err.reason ? err.reason : "");
    if (err.type == PROTO_MSG_HELLO)
      c->errors_unwelcomed = 0; /* a HELLO gets its answer, even before WELCOME (send_error) */
    send_error(s, c, err.has_request_id ? err.request_id : 0, err.code, text,
               err.field[0] ? err.field : NULL);
    count_garbage(s, c);
    return;
  }
  /* The result by type for /metrics: answered with an ERROR or not. */
  uint64_t errors_before = s->stats.errors_sent;
  handle_command(s, c, &s->cmd);
  if (s->cmd.type <= PROTO_MSG_LAST_COMMAND)
    s->stats.commands_by_type[s->cmd.type][s->stats.errors_sent != errors_before]++;
}

/* A command its sender's inbox has no room for (--command-queue,
 * CMDQ_MAX_BYTES): answered BUSY at once, with its request_id. */
static void refuse_busy(steerd_server *s, client *c, const ENetPacket *p) {
  uint32_t id = 0;
  proto_peek_request_id(p->data, p->dataLength, &id);
  s->stats.commands_busy++;
  char text[PROTO_MAX_ERROR_TEXT_BYTES + 1];
  snprintf(text, sizeof text,
           "busy: %u of your commands wait to run (about %.1f ms of work); this one was not queued: send it "
           "again once earlier ones are answered",
           c->inbox.count, (double)c->inbox.count * (double)c->inbox.cost_ns / 1e6);
  send_error(s, c, id, PROTO_ERR_BUSY, text, NULL);
}

/* What a peer sends: a command joins its inbox, run by run_commands. Handled
 * at once: a packet on channel 1 (SNAPSHOT_ACK, never answered but for a
 * fault), one too large to read, and what a peer not yet WELCOMEd sends (its
 * HELLO frees the pending slot that a burst of connections needs; before
 * WELCOME nothing else runs, and --garbage-limit bounds the rest) unless it
 * has packets waiting already; while a tick waits (in_wait), every packet
 * waits for the tick's end. Takes p. */
void receive_packet(steerd_server *s, client *c, ENetPacket *p, uint8_t channel, int in_wait) {
  int now = (channel != PROTO_CHANNEL_RELIABLE || (is_pending(s, c) && !c->inbox.count)) && !in_wait;
  if (now || p->dataLength > PROTO_MAX_MESSAGE_BYTES) {
    handle_packet(s, c, p, channel);
    enet_packet_destroy(p);
    return;
  }
  if (c->closing || c->overflowed) {
    enet_packet_destroy(p);
    return;
  }
  if (steerd_cmdq_push(&c->inbox, p, channel, uv_hrtime(), s->cfg.command_queue, CMDQ_MAX_BYTES) == 0)
    return;
  refuse_busy(s, c, p);
  enet_packet_destroy(p);
}

static steerd_cmdq *inbox_at(void *ctx, uint32_t slot) {
  client *c = client_at(ctx, slot);
  return c->peer ? &c->inbox : NULL;
}

static void run_queued(void *ctx, uint32_t slot, const ENetPacket *p, uint8_t channel) {
  steerd_server *s = ctx;
  client *c = client_at(s, slot);
  if (c->peer && !s->stopping)
    handle_packet(s, c, p, channel);
  reap_overflowed(s);
}

/* Runs the clients' waiting commands, fairly (command_queue.h), within what
 * is left of the tick's --command-budget-us or, with --command-spare, the
 * time until the next tick or snapshot is due (less a reserve), whichever is
 * longer, in slices with ENet serviced between them; the rest waits.
 * Returns 1 when commands are left waiting. */
int run_commands(steerd_server *s) {
  int left = 0;
  for (int slices = 0; !s->stopping; slices++) {
    uint64_t allow = s->cmd_budget_left_ns;
    if (s->cfg.command_spare) {
      uint64_t now = uv_hrtime(), spare = steerd_ticker_wait_ns(&s->ticks, now),
               snap = steerd_ticker_wait_ns(&s->snapshots, now);
      if (snap < spare)
        spare = snap;
      spare = spare > CMD_SPARE_RESERVE_NS ? spare - CMD_SPARE_RESERVE_NS : 0;
      if (spare > allow)
        allow = spare;
    }
    if (!allow) {
      left = commands_waiting(s) > 0;
      break;
    }
    if (slices > 0) /* between slices, what came meanwhile joins the inboxes (and the replies go out) */
      service_enet(s);
    uint64_t spent = steerd_cmdq_run(&s->cmdsched, client_slots(s), inbox_at, run_queued, s,
                                     allow < CMD_SLICE_NS ? allow : CMD_SLICE_NS, CMDQ_QUANTUM_NS, &left);
    s->cmd_budget_left_ns = spent >= s->cmd_budget_left_ns ? 0 : s->cmd_budget_left_ns - spent;
    s->stats.command_ns_total += spent;
    charge(s, STEERD_PHASE_COMMANDS, spent);
    if (!left)
      break;
  }
  if (left && !s->cmd_budget_left_ns && !s->cmd_budget_spent) {
    s->cmd_budget_spent = 1;
    s->stats.command_budget_exhausted++;
  }
  return left;
}

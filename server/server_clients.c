/* server_clients.c: replies, events and their bounds per client; the owners of agents;
 * admission of connections to the pending and WELCOMEd slots. */
#include "server_internal.h"

/* ---- sending ------------------------------------------------------------- */

/* Queues a packet to c, bounding what a peer may have queued. A
 * peer that sends commands and does not read its socket would otherwise make
 * the server keep every reply, and ENet walks a peer's whole outgoing queue on
 * every send pass, so the cost grows with the square of the backlog: 25-50 MB
 * and ticks stalled for seconds at 977dc2c. As with Redis's client output
 * buffer limits, the reliable bytes queued and not yet acknowledged are capped
 * (--client-queue-kb); past the cap nothing more is queued to the peer and
 * reap_overflowed() drops it with reason 8 at the next safe point (not here:
 * callers go on using c). c->queued is an upper bound (the last measure plus
 * what was queued since), so ENet's queues are walked only when the bound
 * passes the cap by an eighth: one walk per cap/8 bytes queued at most.
 * Unreliable packets (snapshots) leave at the next flush and are not counted. */
int client_queue(steerd_server *s, client *c, uint8_t channel, ENetPacket *p) {
  if (c->overflowed) {
    s->stats.queue_dropped++;
    return -1;
  }
  if (enet_peer_send(c->peer, channel, p) != 0)
    return -1;
  if (!(p->flags & ENET_PACKET_FLAG_RELIABLE))
    return 0;
  c->queued += p->dataLength + STEERD_GUARD_COMMAND_OVERHEAD;
  if (c->queued > s->queue_cap + s->queue_cap / 8) {
    c->queued = steerd_guard_peer_queued(c->peer);
    if (c->queued > s->queue_cap) {
      c->overflowed = 1;
      s->stats.queue_overflows++;
    }
  }
  return 0;
}

static void flush_client_events(steerd_server *s, client *c);

void send_reliable(steerd_server *s, client *c, size_t len) {
  if (len == 0)
    return;
  flush_client_events(s, c); /* events it is owed go before the reply, as they happened */
  ENetPacket *p = enet_packet_create(s->out, len, ENET_PACKET_FLAG_RELIABLE);
  if (p && client_queue(s, c, PROTO_CHANNEL_RELIABLE, p) != 0)
    enet_packet_destroy(p);
}

/* Before WELCOME a peer gets one ERROR: a peer that never says
 * HELLO cannot make the server answer each of its packets. HELLO's own
 * refusals (version, token) always go out: each ends the connection; so does
 * the answer to a malformed HELLO (handle_packet), and all of those count
 * toward --garbage-limit. */
void send_error(steerd_server *s, client *c, uint32_t request_id, int code, const char *message,
                const char *field) {
  if (!c->welcomed && c->errors_unwelcomed++ > 0 && code != PROTO_ERR_VERSION_MISMATCH &&
      code != PROTO_ERR_UNAUTHORIZED && code != PROTO_ERR_TOKEN_EXPIRED) {
    s->stats.errors_suppressed++;
    return;
  }
  size_t n = proto_encode_error(s->out, sizeof(s->out), request_id, code, message, field);
  send_reliable(s, c, n);
  s->stats.errors_sent++;
  if (code > 0 && code < PROTO_ERR_COUNT)
    s->stats.errors_by_code[code]++;
  LOG_DEBUG("client %u: error %s (%s%s%s)", c->id, proto_error_name(code), message, field ? ", field " : "",
            field ? field : "");
}

void send_ack(steerd_server *s, client *c, const proto_ack *ack) {
  send_reliable(s, c, proto_encode_ack(s->out, sizeof(s->out), ack));
}

/* 1 when c has more queued than event_share: it is behind, and its
 * events are dropped, not queued. The bound is measured when it says the
 * client may be behind, at most once per pass over ENet's events (or timer
 * wake-up): the measure walks ENet's whole outgoing queue, snapshot parts
 * included, and a burst of events to clients that are behind would
 * otherwise walk it once per event per client (81 % of the loop in a burst
 * of 10 000 spawns to 200 clients). Within a pass only acknowledgements
 * lower the true figure, so a client found behind stays behind, and its
 * events dropped, until the next pass. */
static int client_behind(steerd_server *s, client *c) {
  if (c->queued <= s->event_share)
    return 0;
  if (c->measured_pass != s->service_pass) {
    c->queued = steerd_guard_peer_queued(c->peer);
    c->measured_pass = s->service_pass;
  }
  return c->queued > s->event_share;
}

/* Sends c's waiting events as one message: EVENT when there is one and none
 * was lost (what clients always got), else EVENTS with the count lost. */
static void flush_client_events(steerd_server *s, client *c) {
  if (c->ev_count == 0 && c->ev_lost == 0)
    return;
  if (!c->peer || c->closing || c->overflowed) {
    c->ev_count = c->ev_lost = 0;
    return;
  }
  if (client_behind(s, c)) {
    c->ev_lost += c->ev_count;
    s->stats.events_lost += c->ev_count;
    c->ev_count = 0;
    return; /* the count goes with the next message it is not behind for */
  }
  const proto_event *ev = &s->events[(size_t)(c - s->clients) * CLIENT_EVENTS];
  size_t n = c->ev_count == 1 && c->ev_lost == 0
                 ? proto_encode_event(s->ev_out, sizeof(s->ev_out), ev)
                 : proto_encode_events(s->ev_out, sizeof(s->ev_out), c->ev_lost, ev, c->ev_count);
  c->ev_count = c->ev_lost = 0;
  if (n == 0)
    return;
  ENetPacket *p = enet_packet_create(s->ev_out, n, ENET_PACKET_FLAG_RELIABLE);
  if (p && client_queue(s, c, PROTO_CHANNEL_RELIABLE, p) != 0)
    enet_packet_destroy(p);
  s->stats.event_messages++;
}

/* Every client's waiting events: once per wake-up, after the ticks and after
 * each pass over what ENet received. */
void flush_events(steerd_server *s) {
  for (uint32_t i = 0; i < s->cfg.max_clients; i++)
    if (s->clients[i].ev_count || s->clients[i].ev_lost)
      flush_client_events(s, &s->clients[i]);
}

/* An event about an agent at pos owned by owner, for the clients it concerns
 * (PROTOCOL.md 7.4): every client, except that a delta client with a VIEW
 * circle gets it only when pos is in its view or the agent is its own. It
 * waits in each client's slot (flush_events()). */
void send_event(steerd_server *s, const proto_event *e, vec2 pos, uint32_t owner) {
  if (e->code >= PROTO_EVENT_COUNT)
    return;
  for (uint32_t i = 0; i < s->cfg.max_clients; i++) {
    client *c = &s->clients[i];
    if (!c->peer || !c->welcomed || c->closing || c->overflowed)
      continue;
    if (c->delta && !(owner != 0 && c->owner && c->owner->id == owner) &&
        !steerd_netcode_sees(s->netcode, i, pos))
      continue;
    if (c->ev_count == CLIENT_EVENTS)
      flush_client_events(s, c);
    if (c->ev_count == CLIENT_EVENTS || (c->ev_count == 0 && c->ev_lost > 0 && client_behind(s, c))) {
      c->ev_lost++; /* still behind: counted, not kept */
      s->stats.events_lost++;
      continue;
    }
    s->events[(size_t)i * CLIENT_EVENTS + c->ev_count++] = *e;
  }
  if (s->observer.on_event)
    s->observer.on_event(s->observer.arg, e, pos);
}

/* SPAWNED or DESPAWNED, from a command: the agent was at pos. */
void agent_event(steerd_server *s, uint8_t code, steer_id agent, uint32_t data, vec2 pos, uint32_t owner) {
  proto_event e;
  e.tick = steer_world_tick(s->world);
  e.code = code;
  e.agent = agent;
  e.data = data;
  send_event(s, &e, pos, owner);
}

/* ---- owners ----------------------------------------------------------------- */

static owner_rec *owner_by_id(steerd_server *s, uint32_t id) {
  for (uint32_t i = 0; id && i < s->owner_cap; i++)
    if (s->owners[i].id == id)
      return &s->owners[i];
  return NULL;
}

const char *steerd_server_owner_name(const steerd_server *s, uint32_t owner) {
  const owner_rec *o = owner_by_id((steerd_server *)s, owner);
  return o ? o->name : NULL;
}

owner_rec *owner_by_name(steerd_server *s, const char *name) {
  for (uint32_t i = 0; i < s->owner_cap; i++)
    if (s->owners[i].id && s->owners[i].named && strcmp(s->owners[i].name, name) == 0)
      return &s->owners[i];
  return NULL;
}

owner_rec *owner_new(steerd_server *s, uint32_t id, const char *name, int named) {
  for (uint32_t i = 0; i < s->owner_cap; i++) {
    owner_rec *o = &s->owners[i];
    if (o->id)
      continue;
    memset(o, 0, sizeof(*o));
    o->id = id;
    o->named = named;
    snprintf(o->name, sizeof(o->name), "%s", name);
    return o;
  }
  return NULL; /* cannot happen: records <= clients + agents */
}

static void owner_release_if_idle(steerd_server *s, owner_rec *o) {
  if (o->connections == 0 && o->agents == 0) {
    if (o->orphaned_ns)
      s->orphans_pending--;
    memset(o, 0, sizeof(*o));
  }
}

/* An agent is gone: its owner's count drops. */
void owner_agent_gone(steerd_server *s, uint32_t owner_id, const client *by) {
  owner_rec *o = by && by->owner && by->owner->id == owner_id ? by->owner : owner_by_id(s, owner_id);
  if (!o)
    return; /* the server's own (owner 0) */
  if (o->agents)
    o->agents--;
  owner_release_if_idle(s, o);
}

/* A welcomed connection leaves its identity. */
static void owner_detach(steerd_server *s, client *c) {
  owner_rec *o = c->owner;
  c->owner = NULL;
  if (!o || --o->connections > 0)
    return;
  if (o->agents > 0 && s->cfg.orphan_policy == STEERD_ORPHAN_DESPAWN) {
    o->orphaned_ns = uv_hrtime();
    s->orphans_pending++;
    LOG_INFO("owner %u (%s): %u agents despawn in %u s unless it comes back", o->id, o->name, o->agents,
             s->cfg.orphan_grace_s);
    return;
  }
  owner_release_if_idle(s, o);
}

/* Despawns the agents of identities whose grace has run out. */
void despawn_orphans(steerd_server *s, uint64_t now) {
  if (s->orphans_pending == 0)
    return;
  uint64_t grace = (uint64_t)s->cfg.orphan_grace_s * 1000000000ull;
  for (uint32_t i = 0; i < s->owner_cap; i++) {
    owner_rec *o = &s->owners[i];
    if (!o->id || !o->orphaned_ns || o->connections > 0 || now - o->orphaned_ns < grace)
      continue;
    steer_world_view view = steer_world_get_view(s->world);
    uint32_t n = 0;
    for (uint32_t k = 0; k < view.count; k++)
      if (view.owner[k] == o->id)
        s->scratch_ids[n++] = view.id[k];
    for (uint32_t k = 0; k < n; k++) {
      steer_agent_info info;
      if (steer_world_get(s->world, s->scratch_ids[k], &info) == STEER_OK &&
          steer_world_despawn(s->world, s->scratch_ids[k]) == STEER_OK)
        agent_event(s, PROTO_EVENT_DESPAWNED, s->scratch_ids[k], 0, info.state.position, o->id);
    }
    LOG_INFO("owner %u (%s) did not come back within %u s: despawned its %u agents", o->id, o->name,
             s->cfg.orphan_grace_s, n);
    o->agents = 0;
    owner_release_if_idle(s, o);
  }
}

/* ---- admission --------------------------------------------------------------- */

/* Connections live in two pools: max_pending slots until WELCOME, then one of
 * max_clients slots. Peers that never authenticate can hold only the small
 * pending pool, never the slots of clients that did, and not even that one
 * for long: the hello timeout is short, and a new connection evicts the
 * oldest idle pending one when the pool is full (SYN-flood style: the newest
 * handshakes are the ones worth keeping, as a real client says HELLO at once). */

/* Frees c's slot: its identity, its netcode slot, its peer link. */
void client_release(steerd_server *s, client *c) {
  steerd_cmdq_clear(&c->inbox);
  owner_detach(s, c);
  if (!is_pending(s, c))
    steerd_mapsync_stop(s->mapsync, (uint32_t)(c - s->clients));
  if (c->delta) {
    steerd_netcode_client_stop(s->netcode, (uint32_t)(c - s->clients));
    s->delta_clients--;
  }
  if (is_pending(s, c))
    s->stats.pending--;
  c->peer->data = NULL;
  c->peer = NULL;
  s->stats.clients--;
}

/* Drops c at once (ENet tells the peer the reason without waiting for its
 * acknowledgement, and frees everything queued to it): for peers that do not
 * read what they are sent, or that only hold a slot. */
void client_kill(steerd_server *s, client *c, uint32_t reason, const char *why) {
  PEER_LOG(s, STEERD_LOG_WARN, "client %u (%s): dropped (%s): %s", c->id, c->addr,
           proto_disconnect_name(reason), why);
  enet_peer_disconnect_now(c->peer, reason);
  client_release(s, c);
}

/* Drops the peers whose send queue overflowed (client_queue()). Called where
 * no caller holds a client pointer. */
void reap_overflowed(steerd_server *s) {
  if (s->stats.queue_overflows == s->queue_overflows_reaped)
    return;
  s->queue_overflows_reaped = s->stats.queue_overflows;
  char why[96];
  snprintf(why, sizeof(why), "more than %u KB of replies and events queued and not read",
           s->cfg.client_queue_kb);
  for (uint32_t i = 0; i < s->cfg.max_clients; i++)
    if (s->clients[i].peer && s->clients[i].overflowed)
      client_kill(s, &s->clients[i], PROTO_DISCONNECT_TOO_SLOW, why);
  for (uint32_t i = 0; i < s->cfg.max_pending; i++)
    if (s->pending[i].peer && s->pending[i].overflowed)
      client_kill(s, &s->pending[i], PROTO_DISCONNECT_TOO_SLOW, why);
}

/* A pending slot for a new connection: a free one, else the slot of a pending
 * peer that goes to make room. Never one with packets not yet read (its HELLO
 * is in: a client that says HELLO at once, as ours do in the datagram that
 * completes the handshake, is never evicted); among the others, the closing
 * ones first, then the oldest, preferring those older than
 * PENDING_MIN_AGE_NS (whose HELLO would have come by now on most links).
 * NULL only when every pending peer has a packet waiting. */
client *pending_slot(steerd_server *s, uint64_t now) {
  client *victim = NULL;
  int victim_rank = 0;
  for (uint32_t i = 0; i < s->cfg.max_pending; i++) {
    client *c = &s->pending[i];
    if (!c->peer)
      return c;
    if (c->inbox.count || !enet_list_empty(&c->peer->dispatchedCommands) ||
        (c->peer->flags & ENET_PEER_FLAG_NEEDS_DISPATCH))
      continue;
    int rank = c->closing ? 3 : now - c->connected_ns >= PENDING_MIN_AGE_NS ? 2 : 1;
    if (!victim || rank > victim_rank || (rank == victim_rank && c->connected_ns < victim->connected_ns)) {
      victim = c;
      victim_rank = rank;
    }
  }
  if (!victim)
    return NULL;
  s->stats.pending_evicted++;
  client_kill(s, victim, PROTO_DISCONNECT_TIMEOUT, "no HELLO yet and a new connection needs the slot");
  return victim;
}

/* Moves a pending client that has just authenticated into a client slot;
 * returns its new place, or NULL when every slot is taken. */
client *admit(steerd_server *s, client *c) {
  if (!is_pending(s, c))
    return c;
  for (uint32_t i = 0; i < s->cfg.max_clients; i++) {
    client *w = &s->clients[i];
    if (w->peer)
      continue;
    *w = *c;
    w->peer->data = w;
    memset(c, 0, sizeof(*c));
    s->stats.pending--;
    return w;
  }
  return NULL;
}

/* server.c: see server.h. Sections: clients, sending, commands, tick, ENet, lifecycle. */
#include "server.h"

#include <enet/enet.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "demo.h"
#include "goto.h"
#include "guard.h"
#include "log.h"
#include "map_admin.h"
#include "map_file.h"
#include "netcode.h"
#include "protocol.h"
#include "ticker.h"
#include "checkpoint.h"
#include "command_queue.h"
#include "persist.h"
#include "validate.h"
#include "world.h"
#include "pool.h"

#define STATS_INTERVAL_NS 60000000000ull
#define SPARE_PEERS       4
#define SOCKET_BUFFER     (4 * 1024 * 1024) /* SO_RCVBUF/SO_SNDBUF asked for; the kernel caps them (rmem_max) */
#define MAX_ENET_PEERS    4095              /* ENET_PROTOCOL_MAXIMUM_PEER_ID */

/* Work per wake-up: one pass of ENet events stops after this many
 * events, or once a tick is due, so a flood of packets cannot keep the loop
 * from its timer. What is left stays in the socket (and ENet's queues) for the
 * next pass, after the tick has run. */
#define SERVICE_MAX_EVENTS 2048
/* A pending (not yet WELCOMEd) peer younger than this is evicted to make room
 * only when no older one can be: its HELLO may be on its way. */
#define PENDING_MIN_AGE_NS 100000000ull
/* A half-open ENet handshake (CONNECT, no acknowledgement) is reset after this
 * (ENet itself would keep it up to 30 s); a real one takes a round trip. */
#define HANDSHAKE_TIMEOUT_NS 2000000000ull
/* Refusals and drops of peers are logged at most LOG_BURST lines per window
 * (PROTOCOL.md 4, Abuse): a flood costs a few lines and a count. */
#define LOG_WINDOW_NS 10000000000ull
/* Events per client per message: a client's events wait in its
 * slot and go as one EVENTS message per wake-up (or sooner when CLIENT_EVENTS
 * are waiting, or before a reply to it, so the order of replies and events
 * stays as it was). A client with more than its event_share bytes queued is
 * behind: its events are dropped and counted (EVENTS "lost"), and it learns
 * the current state from the snapshots, not from a backlog. The share is
 * event_backlog, or with many clients EVENTS_IN_FLIGHT split evenly, but at
 * least EVENTS_SHARE_MIN (one full EVENTS message): every reliable fragment
 * in flight comes back as an acknowledgement, and with 200 clients 64 KB
 * behind each, a burst of spawns overflows the server's socket buffer with
 * them, and every client's commands and pings are lost with them. */
#define CLIENT_EVENTS    256
#define EVENTS_IN_FLIGHT (1024u * 1024u)
#define EVENTS_SHARE_MIN (4u * 1024u)
#define LOG_BURST        20

/* A client's commands waiting to run (command_queue.h): at most
 * --command-queue of them and CMDQ_MAX_BYTES of packets. */
#define CMDQ_MAX_BYTES (1024u * 1024u)
/* What one visit of the command scheduler grants a client. */
#define CMDQ_QUANTUM_NS 250000u
/* Commands run in the spare time before the next tick or snapshot
 * (--command-spare) stop this long before it. */
#define CMD_SPARE_RESERVE_NS 2000000u
/* Commands run in slices of at most this, with ENet serviced between them:
 * a backlog does not keep the other clients' packets (and their replies)
 * waiting in the socket. */
#define CMD_SLICE_NS 2000000u

/* An identity that owns agents: a token's name (it outlives its connections, so
 * a client that reconnects owns its agents again), or one anonymous connection.
 * A record lives while it has a connection or an agent. */
typedef struct owner_rec {
  uint32_t id; /* client id in WELCOME and as agent owner; 0: record free */
  char name[PROTO_MAX_NAME_BYTES + 1];
  int named;            /* from a token: the same name finds the record again */
  uint32_t agents;      /* live agents it owns */
  uint32_t connections; /* welcomed connections using it */
  uint64_t orphaned_ns; /* despawn policy: when its last connection left; 0 otherwise */
} owner_rec;

typedef struct client {
  ENetPeer *peer; /* NULL: slot free */
  uint32_t id;    /* connection id, for logs; never reused while the server runs */
  int welcomed;
  int closing;      /* disconnect requested: its packets are ignored */
  int role;         /* steerd_role, from WELCOME on */
  owner_rec *owner; /* from WELCOME on */
  char name[PROTO_MAX_NAME_BYTES + 1];
  char addr[64];
  uint64_t connected_ns;
  uint64_t commands, bad_messages, rate_limited;
  int delta;                  /* HELLO snapshots "delta": DELTA instead of SNAPSHOT (netcode slot = index) */
  uint64_t garbage_window_ns; /* start of the current 10 s window */
  uint32_t garbage_count;     /* malformed packets in it */
  double tokens;              /* rate limit bucket, commands */
  uint64_t bucket_ns;         /* last refill */
  uint32_t last_rx_ms;        /* ENet's time of the peer's last datagram, copied every tick (ENet clears
                                 it before reporting a disconnect): a timeout follows a long silence */
  /* Bounded replies (client_queue(), send_error()). */
  size_t queued;               /* reliable bytes queued to the peer: an upper bound, exact after a measure */
  int overflowed;              /* over --client-queue-kb: nothing more is queued; it is dropped soon */
  uint32_t errors_unwelcomed;  /* ERRORs sent before WELCOME: only the first goes out */
  uint32_t ev_count;           /* events waiting in its slot of s->events (flush_events()) */
  uint32_t ev_lost;            /* events dropped since its last EVENT/EVENTS: it was behind */
  uint64_t measured_pass;      /* s->service_pass when queued was last measured for client_behind() */
  steerd_bytebucket full_rate; /* full snapshots: --full-rate-kbps (send_snapshot()) */
  int full_due;                /* takes this snapshot */
  steerd_cmdq inbox;           /* its commands not run yet, in the order they came (run_commands()) */
  uint64_t served_round;       /* the snapshot round that last sent it a snapshot (0: none yet) */
  uint32_t delta_bytes_est;    /* bytes of its last DELTA frame: what its next one is reckoned to cost */
  int send_take;               /* a delta client this round serves */
} client;

/* A client due a snapshot in a round, for the server-wide send budget (choose_round()). */
typedef struct send_cand {
  double cost;     /* share of the round's budget it would take */
  uint64_t served; /* its served_round */
  uint32_t slot;
} send_cand;

struct steerd_server {
  steerd_config cfg;
  uv_loop_t *loop;
  ENetHost *host;
  uv_poll_t poll;
  uv_timer_t timer;
  int handles_open;

  steer_world *world;
  steer_pool *pool;       /* --threads: the steering pass's workers (NULL: the loop thread only) */
  uint32_t *delta_slots;  /* a snapshot's delta clients, for steerd_netcode_encode_batch (max_clients) */
  steer_planner *planner; /* GOTO (goto.h): served in every tick before the step */
  uint8_t *plan_ckpt;     /* the planner's bytes for a checkpoint (goto.h) */
  size_t plan_ckpt_cap;
  steerd_demo demo;
  int demo_on;
  int demo_resumed;  /* the demo came from the state file (its group list is not kept there) */
  int no_state_file; /* --state names no file yet: a new world */
  char bind_ip[64];  /* the IPv4 address bound (steerd_bind_resolve of --bind) */
  float dt;          /* s */

  steerd_ticker ticks, snapshots;
  uint64_t tick_time_us;   /* the last completed tick's time: its schedule slot on the server clock */
  steerd_netcode *netcode; /* delta snapshots, per client slot */
  uint32_t delta_clients;  /* welcomed clients taking delta snapshots */
  uint64_t start_ns, next_stats_ns;
  int stopping;
  uint64_t stop_deadline_ns;
  uint64_t stop_earliest_ns; /* the drain lasts at least until then (--drain-min, with HTTP on) */

  client *clients;                 /* max_clients WELCOMEd slots (the netcode's slot = index) */
  client *pending;                 /* max_pending slots of connections not yet WELCOMEd */
  uint64_t *handshake_ns;          /* per ENet peer: when its half-open handshake was first seen */
  size_t queue_cap;                /* bytes: client_queue_kb */
  uint64_t queue_overflows_reaped; /* stats.queue_overflows when reap_overflowed() last looked */
  steerd_loglimit peer_log;        /* refusals and drops of peers */
  uint32_t next_client_id;

  int auth_on; /* a secret is configured: every HELLO needs a token */
  steerd_auth auth;
  steerd_bounds bounds;
  owner_rec *owners; /* max_clients + max_agents records */
  uint32_t owner_cap;
  uint32_t orphans_pending; /* records waiting for their grace to end */
  steer_id *scratch_ids;    /* max_agents: agents to despawn */

  uint64_t next_checkpoint_ns; /* 0: checkpoints off (no --state) */
  const char *ckpt_requested;  /* a checkpoint asked for (SIGHUP), made when none is in flight */
  steerd_checkpointer *ckpt;   /* writes the state file on a worker thread; NULL without --state */
  uint8_t *restored;           /* the state file's image, until the owners are restored */
  size_t restored_len;
  steerd_persist_owner *ckpt_owners; /* owner_cap */

  proto_command cmd;           /* decode scratch (large: holds path points) */
  uint32_t *part_first;        /* snapshot part boundaries, max_agents + 2 */
  ENetPacket **full_parts;     /* a full snapshot's parts, shared by its clients, max_agents + 1 */
  send_cand *send_cands;       /* max_clients: a round's clients (choose_round()) */
  uint64_t send_round;         /* snapshot rounds so far */
  uint64_t full_ns_per_part;   /* reckoned loop thread CPU ns to queue one full part to one client */
  uint64_t delta_ns_per_frame; /* reckoned loop thread CPU ns of one DELTA frame, encoding included */
  uint8_t out[PROTO_MAX_MESSAGE_BYTES];    /* encode scratch */
  uint8_t ev_out[PROTO_MAX_MESSAGE_BYTES]; /* encode scratch of EVENTS (flushed while out holds a reply) */
  proto_event *events;                     /* max_clients x CLIENT_EVENTS: events waiting per client slot */
  size_t event_backlog;                    /* bytes: a client with more queued is behind (queue_cap / 4) */
  uint64_t service_pass;                   /* passes over ENet's events and timer wake-ups so far */
  size_t event_share;                      /* bytes: a client with more queued is behind (client_behind()) */
  steerd_server_stats stats;
  steerd_server_observer observer; /* the live view */
  uint64_t last_tick_ns;
  steerd_mapsync *mapsync; /* per client slot: the MAP parts it is being sent (map_admin.h) */

  steerd_cmdsched cmdsched;              /* runs the clients' inboxes (run_commands()) */
  uint64_t cmd_budget_left_ns;           /* of --command-budget-us, until the next tick */
  int cmd_budget_spent;                  /* this tick's budget ran out with commands waiting (counted once) */
  uint64_t phase_ns[STEERD_LOOP_PHASES]; /* the loop's time by phase since the last tick ran */
  uint32_t warming;         /* the start-up's graph builds still running (steer_planner_warm_start) */
  uint64_t warm_start_ns;   /* when they started */
  steerd_loglimit wait_log; /* ticks' long waits for a graph */
};

static uint64_t server_time_us(const steerd_server *s) { return (uv_hrtime() - s->start_ns) / 1000u; }

static void charge(steerd_server *s, steerd_loop_phase phase, uint64_t ns) {
  s->phase_ns[phase] += ns;
  s->stats.loop_phase_ns[phase] += ns;
}

void steerd_server_charge_http(steerd_server *s, uint64_t ns) { charge(s, STEERD_PHASE_HTTP, ns); }

/* A tick found others due with it (an overrun): the phase that took most of
 * the loop since the last tick is its cause. */
static void charge_overrun(steerd_server *s) {
  int worst = 0;
  for (int p = 1; p < STEERD_LOOP_PHASES; p++)
    if (s->phase_ns[p] > s->phase_ns[worst])
      worst = p;
  s->stats.overruns_by_phase[worst]++;
}

/* A line about one peer's refusal or drop, through the server's log limiter
 * (at most LOG_BURST per LOG_WINDOW_NS; the next line allowed says how many
 * were suppressed). fmt must take at least one argument. */
#define PEER_LOG(s, level, fmt, ...)                                                                         \
  do {                                                                                                       \
    uint64_t sup_ = 0;                                                                                       \
    if (steerd_loglimit_allow(&(s)->peer_log, uv_hrtime(), &sup_)) {                                         \
      if (sup_)                                                                                              \
        steerd_log(level, fmt " (%llu similar lines suppressed before this one)", __VA_ARGS__,               \
                   (unsigned long long)sup_);                                                                \
      else                                                                                                   \
        steerd_log(level, fmt, __VA_ARGS__);                                                                 \
    }                                                                                                        \
  } while (0)

/* ---- sending ------------------------------------------------------------- */

/* CPU time of the calling thread (ns). */
static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void send_bytes(ENetPeer *peer, uint8_t channel, const uint8_t *data, size_t len, uint32_t flags) {
  ENetPacket *p = enet_packet_create(data, len, flags);
  if (p && enet_peer_send(peer, channel, p) != 0)
    enet_packet_destroy(p);
}

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
static int client_queue(steerd_server *s, client *c, uint8_t channel, ENetPacket *p) {
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

static void send_reliable(steerd_server *s, client *c, size_t len) {
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
static void send_error(steerd_server *s, client *c, uint32_t request_id, int code, const char *message,
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

static void send_ack(steerd_server *s, client *c, const proto_ack *ack) {
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
static void flush_events(steerd_server *s) {
  for (uint32_t i = 0; i < s->cfg.max_clients; i++)
    if (s->clients[i].ev_count || s->clients[i].ev_lost)
      flush_client_events(s, &s->clients[i]);
}

/* An event about an agent at pos owned by owner, for the clients it concerns
 * (PROTOCOL.md 7.4): every client, except that a delta client with a VIEW
 * circle gets it only when pos is in its view or the agent is its own. It
 * waits in each client's slot (flush_events()). */
static void send_event(steerd_server *s, const proto_event *e, vec2 pos, uint32_t owner) {
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
static void agent_event(steerd_server *s, uint8_t code, steer_id agent, uint32_t data, vec2 pos,
                        uint32_t owner) {
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

static owner_rec *owner_by_name(steerd_server *s, const char *name) {
  for (uint32_t i = 0; i < s->owner_cap; i++)
    if (s->owners[i].id && s->owners[i].named && strcmp(s->owners[i].name, name) == 0)
      return &s->owners[i];
  return NULL;
}

static owner_rec *owner_new(steerd_server *s, uint32_t id, const char *name, int named) {
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
static void owner_agent_gone(steerd_server *s, uint32_t owner_id, const client *by) {
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
static void despawn_orphans(steerd_server *s, uint64_t now) {
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

static int is_pending(const steerd_server *s, const client *c) {
  return c >= s->pending && c < s->pending + s->cfg.max_pending;
}

/* Frees c's slot: its identity, its netcode slot, its peer link. */
static void client_release(steerd_server *s, client *c) {
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
static void client_kill(steerd_server *s, client *c, uint32_t reason, const char *why) {
  PEER_LOG(s, STEERD_LOG_WARN, "client %u (%s): dropped (%s): %s", c->id, c->addr,
           proto_disconnect_name(reason), why);
  enet_peer_disconnect_now(c->peer, reason);
  client_release(s, c);
}

/* Drops the peers whose send queue overflowed (client_queue()). Called where
 * no caller holds a client pointer. */
static void reap_overflowed(steerd_server *s) {
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
static client *pending_slot(steerd_server *s, uint64_t now) {
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
static client *admit(steerd_server *s, client *c) {
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

/* ---- commands ------------------------------------------------------------ */

/* A world error as a wire error; `field` names what the command got wrong. */
static void send_world_error(steerd_server *s, client *c, uint32_t request_id, int rc, const char *field) {
  int code = proto_error_from_steer(rc);
  const char *name = rc == STEER_ENOENT ? "agent" : field;
  send_error(s, c, request_id, code, steer_strerror(rc), code == PROTO_ERR_WORLD_FULL ? NULL : name);
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
  int rc = steer_world_set_path(s->world, id, p->points, p->count, p->radius, (steer_path_mode)p->mode,
                                (steer_cornering)p->cornering);
  if (rc != STEER_OK || !p->params.present)
    return rc;
  steer_agent_info info;
  steer_world_get(s->world, id, &info);
  proto_params_apply(&p->params, &info.behaviour.params);
  proto_tuning_apply(&p->params, &info.behaviour);
  return steer_world_set_behaviour(s->world, id, &info.behaviour);
}

/* The field a BLOCKED path names: its first point inside the map's geometry,
 * e.g. "points[2]" (prefix "path." in a SPAWN). */
static const char *blocked_point(const steerd_server *s, const proto_path *p, const char *prefix, char *buf,
                                 size_t cap) {
  uint32_t i = 0;
  while (i < p->count && !steer_map_inside(steer_world_map(s->world), p->points[i]))
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

static void send_map_streams(steerd_server *s) {
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
static int demo_map_edit(void *ctx, steer_world *w, uint32_t id, const steer_obstacle_desc *o) {
  (void)w;
  steerd_map_edit e;
  memset(&e, 0, sizeof(e));
  e.op = o ? STEERD_MAP_ADD : STEERD_MAP_REMOVE;
  e.obstacle = o ? proto_obstacle_of(id, o) : (proto_obstacle){.id = id};
  steerd_map_result r;
  return steerd_server_map_edit(ctx, &e, &r) == 0 ? STEER_OK : STEER_EINVAL;
}

/* ADD_OBSTACLE, REMOVE_OBSTACLE: admins only; the ACK goes before the MAP_CHANGED. */
static void cmd_map_edit(steerd_server *s, client *c, const proto_command *cmd, proto_ack *ack) {
  if (c->role != STEERD_ROLE_ADMIN) {
    send_error(s, c, cmd->request_id, PROTO_ERR_FORBIDDEN, "only admins change the map", NULL);
    return;
  }
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
  if (steerd_map_edit_apply(s->world, &e, &r) != 0) {
    send_error(s, c, cmd->request_id, r.code, r.why.message, r.why.field[0] ? r.why.field : NULL);
    return;
  }
  ack->obstacle = e.obstacle.id;
  ack->map_version = r.version;
  ack->moved = r.moved;
  send_ack(s, c, ack);
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
  w.world_min = wc->min;
  w.world_max = wc->max;
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
  proto_spawn_apply(sp, &desc);
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
    proto_params_apply(&sp->path.params, &merged);
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
  proto_params_apply(&sp->path.params, &info.behaviour.params);
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
  proto_limits_apply(&sp->limits, &limits);
  proto_params_apply(&sp->params, &b.params);
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
    proto_tuning_apply(&sp->params, &b);
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
  r->arrived = info.arrived;
  r->path_node = info.path >= 0 ? (int32_t)info.cursor.node : -1;
  r->state = info.state;
  r->limits = info.limits;
  r->owner = info.owner;
  r->has_tuning = 1; /* the agent's avoidance, wall feeler and stuck detection (PROTOCOL.md 6.8) */
  r->tuning.avoid_weight = info.behaviour.avoid_weight;
  r->tuning.avoid_horizon = info.behaviour.avoid_horizon;
  r->tuning.avoid_priority = info.behaviour.avoid_priority;
  r->tuning.wall_lookahead = info.behaviour.wall_lookahead;
  r->tuning.wall_margin = info.behaviour.wall_margin;
  r->tuning.stuck_time = info.behaviour.stuck_time;
  r->tuning.stuck_reaction = info.behaviour.stuck_reaction;
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
    steerd_check chk;
    ack.agent = cmd->set_behaviour.agent;
    if (steerd_check_behaviour(&cmd->set_behaviour.behaviour, &s->bounds, "behaviour", &chk) != 0) {
      send_check_error(s, c, cmd->request_id, &chk);
      return;
    }
    if (cmd->set_behaviour.behaviour.kind == PROTO_BEHAVIOUR_GOTO) {
      steerd_goto_refusal why;
      if (steerd_goto_set(s->planner, s->world, ack.agent, &cmd->set_behaviour.behaviour, &why) != 0)
        send_error(s, c, cmd->request_id, why.code, why.message, why.field);
      else
        send_ack(s, c, &ack);
      return;
    }
    steer_behaviour b = steer_default_behaviour((steer_behaviour_kind)cmd->set_behaviour.behaviour.kind);
    steer_agent_info was;
    if (steer_world_get(s->world, ack.agent, &was) == STEER_OK) {
      /* Avoidance, the wall feeler and stuck detection are the agent's, kept
       * across behaviours unless the new one's params name them (PROTOCOL.md 5.2). */
      proto_params keep;
      memset(&keep, 0, sizeof keep);
      keep.present = PROTO_PARAM_TUNING;
      keep.tuning.avoid_weight = was.behaviour.avoid_weight;
      keep.tuning.avoid_horizon = was.behaviour.avoid_horizon;
      keep.tuning.avoid_priority = was.behaviour.avoid_priority;
      keep.tuning.wall_lookahead = was.behaviour.wall_lookahead;
      keep.tuning.wall_margin = was.behaviour.wall_margin;
      keep.tuning.stuck_time = was.behaviour.stuck_time;
      keep.tuning.stuck_reaction = was.behaviour.stuck_reaction;
      proto_tuning_apply(&keep, &b);
    }
    proto_behaviour_apply(&cmd->set_behaviour.behaviour, &b);
    rc = steer_world_set_behaviour(s->world, ack.agent, &b);
    if (rc != STEER_OK) {
      send_world_error(s, c, cmd->request_id, rc,
                       rc == STEER_ETARGET    ? "behaviour.target_agent"
                       : rc == STEER_EMODEL   ? "behaviour.kind"
                       : rc == STEER_EBLOCKED ? "behaviour.target"
                                              : "behaviour");
      return;
    }
    steerd_goto_forget(s->planner, ack.agent);
    send_ack(s, c, &ack);
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

static void handle_packet(steerd_server *s, client *c, const ENetPacket *p, uint8_t channel) {
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

static int service_enet(steerd_server *s);

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
static void receive_packet(steerd_server *s, client *c, ENetPacket *p, uint8_t channel, int in_wait) {
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

/* Client slots for the command scheduler: the WELCOMEd ones, then the pending. */
static uint32_t client_slots(const steerd_server *s) { return s->cfg.max_clients + s->cfg.max_pending; }

static client *client_at(const steerd_server *s, uint32_t slot) {
  return slot < s->cfg.max_clients ? &s->clients[slot] : &s->pending[slot - s->cfg.max_clients];
}

/* Commands waiting in every inbox. */
static uint32_t commands_waiting(const steerd_server *s) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < client_slots(s); i++) {
    const client *c = client_at(s, i);
    n += c->peer ? c->inbox.count : 0u;
  }
  return n;
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
static int run_commands(steerd_server *s) {
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

/* ---- the tick ------------------------------------------------------------ */

static void run_tick(steerd_server *s) {
  uint64_t t0 = uv_hrtime();
  steerd_goto_before_step(s->planner, s->world); /* plans are part of the tick's time */
  steer_world_step(s->world, s->dt);
  steerd_goto_after_step(s->planner, s->world);
  uint64_t spent = uv_hrtime() - t0;
  charge(s, STEERD_PHASE_STEP, spent);
  s->stats.step_ns_total += spent;
  if (spent > s->stats.step_ns_max)
    s->stats.step_ns_max = spent;
  for (int b = 0; b < STEERD_TICK_BUCKETS; b++)
    if ((double)spent <= steerd_tick_bucket_bounds[b] * 1e9)
      s->stats.tick_seconds_bucket[b]++;
  if (spent > 1000000000ull / s->cfg.tick_rate)
    s->stats.slow_ticks++;
  s->stats.ticks++;
  uint32_t n;
  const steer_plan_event *pe = steer_planner_events(s->planner, &n); /* served before the step */
  for (uint32_t i = 0; i < n; i++) {
    proto_event e = steerd_goto_event(&pe[i]);
    steer_agent_info info;
    if (steer_world_get(s->world, pe[i].agent, &info) == STEER_OK)
      send_event(s, &e, info.state.position, info.owner);
  }
  const steer_event *ev = steer_world_events(s->world, &n);
  for (uint32_t i = 0; i < n; i++) {
    proto_event e = proto_event_from_steer(&ev[i]);
    steer_agent_info info;
    if (steer_world_get(s->world, ev[i].agent, &info) == STEER_OK)
      send_event(s, &e, info.state.position, info.owner);
  }
  if (s->demo_on)
    steerd_demo_update(&s->demo, s->world, ev, n);
}

/* The DELTA frames of the delta clients this round serves (send_take),
 * as unreliable packets on channel 1. */
static void send_deltas(steerd_server *s, uint64_t tick, uint64_t time_us) {
  uint64_t t0 = uv_hrtime(), cpu0 = thread_cpu_ns();
  /* Encoded on the pool's threads by ranges of clients; sent from here, in
   * client order (ENet is the loop thread's). */
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->cfg.max_clients; i++)
    if (s->clients[i].send_take)
      s->delta_slots[n++] = i;
  if (n == 0)
    return;
  steerd_netcode_begin(s->netcode, s->world);
  if (steerd_netcode_encode_batch(s->netcode, s->world, s->delta_slots, n, tick, time_us) !=
      STEERD_NETCODE_OK)
    n = 0;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i = s->delta_slots[k];
    client *c = &s->clients[i];
    c->send_take = 0;
    steerd_netcode_out out;
    if (steerd_netcode_batch_result(s->netcode, i, s->world, time_us, &out) != STEERD_NETCODE_OK)
      continue;
    uint32_t bytes = 0;
    for (uint32_t p = 0; p < out.part_count; p++) {
      send_bytes(c->peer, PROTO_CHANNEL_SNAPSHOT, out.part[p], out.part_len[p], 0);
      s->stats.snapshot_packets++;
      s->stats.snapshot_bytes += out.part_len[p];
      s->stats.delta_bytes += out.part_len[p];
      s->stats.delta_packets++;
      bytes += (uint32_t)out.part_len[p];
    }
    c->delta_bytes_est = bytes;
    s->stats.delta_frames++;
  }
  for (uint32_t i = 0; i < s->cfg.max_clients; i++)
    s->clients[i].send_take = 0;
  s->stats.delta_ns_total += uv_hrtime() - t0;
  if (n) /* the loop thread's own share of the batch: it runs one of the pool's ranges */
    s->delta_ns_per_frame = (3u * s->delta_ns_per_frame + (thread_cpu_ns() - cpu0) / n) / 4u;
}

/* The full-snapshot clients this snapshot goes to: each has a byte
 * bucket of --full-rate-kbps (credit capped at one snapshot interval's share),
 * and a client in debt skips snapshots until it has paid for the last one.
 * A snapshot always goes whole, so a client of a big world gets complete
 * snapshots, less often (PROTOCOL.md 7.5 allows any tick to lack one), and its
 * bytes and the loop thread's work for it (ENet sends, and the encoding when
 * no other full client is due) are bounded by the rate, not by the world.
 * Returns how many are due. */
static uint32_t full_clients_due(steerd_server *s, uint64_t time_us) {
  uint64_t rate = (uint64_t)s->cfg.full_rate_kbps * 1000u / 8u;
  uint64_t cap = rate / (s->cfg.snapshot_rate ? s->cfg.snapshot_rate : 1u);
  uint32_t due = 0;
  for (uint32_t i = 0; i < s->cfg.max_clients; i++) {
    client *c = &s->clients[i];
    c->full_due = c->peer && c->welcomed && !c->delta && !c->closing;
    if (c->full_due && rate && !steerd_bytebucket_ready(&c->full_rate, time_us, rate, cap)) {
      c->full_due = 0;
      s->stats.full_deferred++;
    }
    due += (uint32_t)c->full_due;
  }
  return due;
}

/* Every agent, in as many packets as it takes (s->full_parts, shared by the
 * clients they go to); each packet is filled to the part budget by the
 * agents' actual sizes, stays under the MTU and names its part, so a lost
 * part loses only its own agents. Returns the parts; *total their bytes. */
static uint32_t encode_full(steerd_server *s, uint64_t tick, uint64_t *total) {
  steer_world_view view = steer_world_get_view(s->world);
  uint32_t parts = 0;
  for (uint32_t first = 0; first < view.count || parts == 0;) {
    uint32_t n = proto_snapshot_fit(&view, NULL, first, view.count - first, PROTO_SNAPSHOT_PART_BYTES);
    s->part_first[parts++] = first;
    first += n ? n : 1;
  }
  s->part_first[parts] = view.count;
  proto_snapshot_header h;
  h.tick = tick;
  h.server_time_us = s->tick_time_us; /* the simulation time of the tick, not the send time (§7.5) */
  h.part_count = parts;
  h.agent_total = view.count;
  uint32_t made = 0;
  *total = 0;
  for (uint32_t part = 0; part < parts; part++) {
    uint32_t first = s->part_first[part];
    h.part_index = part;
    size_t len = proto_encode_snapshot_view(s->out, PROTO_SNAPSHOT_PART_BYTES, &h, &view, NULL, first,
                                            s->part_first[part + 1] - first);
    if (len == 0) {
      LOG_ERROR("snapshot part %u of tick %llu does not fit %d bytes", part, (unsigned long long)h.tick,
                PROTO_SNAPSHOT_PART_BYTES);
      continue;
    }
    ENetPacket *p = enet_packet_create(s->out, len, 0);
    if (!p)
      continue;
    s->full_parts[made++] = p;
    *total += len;
  }
  return made;
}

static int cmp_cost(const void *a, const void *b) {
  const send_cand *x = a, *y = b;
  if (x->cost != y->cost)
    return x->cost < y->cost ? -1 : 1;
  return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static int cmp_served(const void *a, const void *b) {
  const send_cand *x = a, *y = b;
  if (x->served != y->served)
    return x->served < y->served ? -1 : 1;
  return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Which clients this round serves, within the server-wide budget
 * (--send-budget-kbps over the round's interval, --send-budget-us of the
 * loop thread's CPU time: CPU, not wall time, so that a busy machine
 * descheduling the loop does not cut the rounds). Each due client's cost is
 * the larger of its bytes and its reckoned CPU time, as shares of the round's budget (a full snapshot's own
 * encoding, spent already, comes off the budget first). Max-min fair: clients costing no more than an even
 * split of what is left are all served (cheapest first, each leaving the rest more to split); the others are
 * served least recently served first while the budget lasts, and the first of them always, so every client is
 * served in turn however small the budget. A client not served keeps its place and goes before those served
 * since. Clears full_due and sets send_take accordingly. */
static void choose_round(steerd_server *s, uint32_t parts, uint64_t full_bytes, uint64_t encode_ns) {
  double bytes_budget = (double)s->cfg.send_budget_kbps * 125.0 / (double)s->cfg.snapshot_rate;
  double ns_budget = (double)s->cfg.send_budget_us * 1000.0;
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->cfg.max_clients; i++) {
    client *c = &s->clients[i];
    c->send_take = 0;
    int delta = c->peer && c->welcomed && c->delta && !c->closing;
    if (!c->full_due && !delta)
      continue;
    double bytes = c->full_due ? (double)full_bytes
                               : (double)(c->delta_bytes_est ? c->delta_bytes_est : s->cfg.snapshot_budget);
    double ns = c->full_due ? (double)parts * (double)s->full_ns_per_part : (double)s->delta_ns_per_frame;
    double cost = 0.0;
    if (bytes_budget > 0.0)
      cost = bytes / bytes_budget;
    if (ns_budget > 0.0 && ns / ns_budget > cost)
      cost = ns / ns_budget;
    s->send_cands[n++] = (send_cand){cost, c->served_round, i};
  }
  double left = 1.0 - (ns_budget > 0.0 ? (double)encode_ns / ns_budget : 0.0);
  uint32_t k = 0;
  if (bytes_budget <= 0.0 && ns_budget <= 0.0) {
    k = n;
  } else {
    qsort(s->send_cands, n, sizeof(*s->send_cands), cmp_cost);
    for (; k < n && s->send_cands[k].cost <= left / (double)(n - k); k++)
      left -= s->send_cands[k].cost;
    qsort(s->send_cands + k, n - k, sizeof(*s->send_cands), cmp_served);
    for (uint32_t first = k; k < n && (k == first || s->send_cands[k].cost <= left); k++)
      left -= s->send_cands[k].cost;
  }
  if (k < n)
    s->stats.send_rounds_limited++;
  for (uint32_t j = 0; j < n; j++) {
    client *c = &s->clients[s->send_cands[j].slot];
    if (j < k) {
      c->served_round = s->send_round;
      c->send_take = !c->full_due;
    } else if (c->full_due) {
      c->full_due = 0;
      s->stats.full_budget_deferred++;
    } else {
      s->stats.delta_budget_deferred++;
    }
  }
}

/* One snapshot round: the full snapshot encoded once for the full clients
 * due, then the clients the budget allows (choose_round()) get theirs. */
static void send_snapshot(steerd_server *s) {
  uint64_t tick = steer_world_tick(s->world);
  uint64_t t0 = thread_cpu_ns(), total = 0;
  s->send_round++;
  uint32_t parts = full_clients_due(s, s->tick_time_us) ? encode_full(s, tick, &total) : 0;
  uint64_t t1 = thread_cpu_ns();
  choose_round(s, parts, total, t1 - t0);
  uint32_t served = 0;
  for (uint32_t i = 0; i < s->cfg.max_clients; i++) {
    client *c = &s->clients[i];
    if (!c->full_due)
      continue;
    for (uint32_t p = 0; p < parts; p++)
      enet_peer_send(c->peer, PROTO_CHANNEL_SNAPSHOT, s->full_parts[p]);
    steerd_bytebucket_charge(&c->full_rate, total);
    s->stats.full_sent++;
    s->stats.snapshot_bytes += total;
    served++;
  }
  for (uint32_t p = 0; p < parts; p++)
    if (s->full_parts[p]->referenceCount == 0)
      enet_packet_destroy(s->full_parts[p]);
  if (served) {
    s->stats.snapshot_packets += parts;
    uint64_t per = (thread_cpu_ns() - t1) / ((uint64_t)served * (parts ? parts : 1u));
    s->full_ns_per_part = (3u * s->full_ns_per_part + per) / 4u;
  }
  send_deltas(s, tick, s->tick_time_us);
  s->stats.snapshots++;
  if (s->observer.on_snapshot)
    s->observer.on_snapshot(s->observer.arg);
}

static void log_stats(steerd_server *s) {
  steerd_server_stats *st = &s->stats;
  LOG_INFO(
      "stats: %u clients, %u agents, tick %llu, %llu overruns, %llu skipped, %llu slow, mean step %.1f us, "
      "longest step %.1f ms, %llu snapshots, %llu commands, %llu bad messages",
      st->clients, steer_world_count(s->world), (unsigned long long)steer_world_tick(s->world),
      (unsigned long long)st->overruns, (unsigned long long)st->ticks_skipped,
      (unsigned long long)st->slow_ticks, st->ticks ? (double)st->step_ns_total / st->ticks / 1000.0 : 0.0,
      (double)st->step_ns_max / 1e6, (unsigned long long)st->snapshots, (unsigned long long)st->commands,
      (unsigned long long)st->bad_messages);
  if (st->queue_overflows || st->errors_suppressed || st->pending_evicted || st->handshakes_reset ||
      st->refused_full || st->service_cut || s->peer_log.total_suppressed || st->events_lost)
    LOG_INFO("abuse stats: %llu peers dropped for a full send queue, %llu errors not sent, %llu pending "
             "connections evicted, %llu half-open handshakes reset, %llu connections refused (full), %llu "
             "service passes cut short, %llu log lines suppressed, %llu events dropped for clients behind",
             (unsigned long long)st->queue_overflows, (unsigned long long)st->errors_suppressed,
             (unsigned long long)st->pending_evicted, (unsigned long long)st->handshakes_reset,
             (unsigned long long)st->refused_full, (unsigned long long)st->service_cut,
             (unsigned long long)s->peer_log.total_suppressed, (unsigned long long)st->events_lost);
  if (st->send_rounds_limited)
    LOG_INFO("send budget stats: %llu snapshot rounds cut short, %llu full snapshots and %llu delta frames "
             "deferred to a later round (--send-budget-kbps, --send-budget-us); reckoned costs: %.1f us per "
             "delta frame, %.2f us per full part and client",
             (unsigned long long)st->send_rounds_limited, (unsigned long long)st->full_budget_deferred,
             (unsigned long long)st->delta_budget_deferred, (double)s->delta_ns_per_frame / 1000.0,
             (double)s->full_ns_per_part / 1000.0);
  if (st->commands_busy || st->command_budget_exhausted)
    LOG_INFO("command stats: %llu run, %llu refused BUSY (--command-queue), %llu ticks out of "
             "--command-budget-us with commands waiting, longest wait %.1f ms",
             (unsigned long long)s->cmdsched.run, (unsigned long long)st->commands_busy,
             (unsigned long long)st->command_budget_exhausted, (double)s->cmdsched.wait_ns_max / 1e6);
  if (st->full_deferred)
    LOG_INFO("full snapshot stats: %llu sent, %llu deferred by --full-rate-kbps",
             (unsigned long long)st->full_sent, (unsigned long long)st->full_deferred);
  steerd_netcode_stats ns;
  steerd_netcode_get_stats(s->netcode, &ns);
  if (ns.frames > 0) /* many frames without a baseline while clients stay: --delta-pool too small? */
    LOG_INFO(
        "delta stats: %llu frames (%llu without a baseline), %llu bytes, %llu changes, %llu deferred, "
        "%llu kept thanks to frames in flight, %llu acknowledged frames no longer known; record pool: %u "
        "chunks of 64 KB in use (%u at most), %llu reused by their client, %llu keyframes and %llu frames "
        "not sent for want of room",
        (unsigned long long)ns.frames, (unsigned long long)ns.frames_full, (unsigned long long)ns.bytes,
        (unsigned long long)ns.changes, (unsigned long long)ns.deferred,
        (unsigned long long)ns.kept_in_flight, (unsigned long long)ns.baselines_lost, ns.chunks_used,
        ns.chunks_max, (unsigned long long)ns.chunks_reused, (unsigned long long)ns.keyframes_for_room,
        (unsigned long long)ns.frames_unkept);
}

static void close_handles(steerd_server *s);

/* Peers that have not been WELCOMEd within the hello timeout go. */
static void drop_late_hellos(steerd_server *s, uint64_t now) {
  uint64_t limit = (uint64_t)s->cfg.hello_timeout_ms * 1000000ull;
  for (uint32_t i = 0; i < s->cfg.max_pending; i++) {
    client *c = &s->pending[i];
    if (!c->peer || now - c->connected_ns <= limit)
      continue;
    if (!c->closing) { /* told reliably, as ENet's disconnect is acknowledged */
      s->stats.hello_timeouts++;
      c->closing = 1;
      PEER_LOG(s, STEERD_LOG_WARN, "client %u (%s): no WELCOME within %u ms: disconnecting (timeout)", c->id,
               c->addr, s->cfg.hello_timeout_ms);
      enet_peer_disconnect(c->peer, PROTO_DISCONNECT_TIMEOUT);
    } else if (now - c->connected_ns > 2 * limit) { /* it does not even acknowledge: the slot is freed now */
      client_kill(s, c, PROTO_DISCONNECT_TIMEOUT, "no WELCOME, and no answer to the disconnect");
    }
  }
  uint64_t handshake = limit < HANDSHAKE_TIMEOUT_NS ? limit : HANDSHAKE_TIMEOUT_NS;
  uint32_t reset = steerd_guard_reap_handshakes(s->host, s->handshake_ns, now, handshake, s->cfg.max_pending);
  if (reset) {
    s->stats.handshakes_reset += reset;
    PEER_LOG(s, STEERD_LOG_WARN, "reset %u half-open ENet handshakes (too old, or more than %u at once)",
             reset, s->cfg.max_pending);
  }
}

/* ---- checkpoints ------------------------------------------------------------ */

/* A checkpoint's image in the checkpointer's buffer: the world and the
 * server's records (st) as steerd_persist_encode lays them out; detail gets
 * the log line's end. Its length, or 0 with a reason in err. Runs on the loop,
 * or in a forked writer on its copy of the loop's memory. */
typedef struct image_job {
  steerd_server *s;
  steerd_persist_server *st;
} image_job;

static size_t make_image(void *ctx, steerd_checkpointer *ck, char *detail, size_t detail_cap, char *err,
                         size_t errcap) {
  const image_job *job = ctx;
  steerd_server *s = job->s;
  size_t world_len = steer_world_state_size(s->world), len = 0;
  size_t cap = steerd_persist_size(world_len, job->st);
  uint8_t *buf = steerd_checkpointer_buffer(ck, cap);
  uint8_t *world = buf ? buf + STEERD_PERSIST_WORLD_AT : NULL;
  if (!buf || steer_world_save(s->world, world, cap - STEERD_PERSIST_WORLD_AT, &world_len) != STEER_OK ||
      (len = steerd_persist_encode(buf, cap, world, world_len, job->st, 0)) == 0) {
    snprintf(err, errcap, "out of memory for the image");
    return 0;
  }
  int dn = snprintf(detail, detail_cap, "at tick %llu: %u agents, state hash %016llx",
                    (unsigned long long)steer_world_tick(s->world), steer_world_count(s->world),
                    (unsigned long long)steer_world_hash(s->world));
  if (job->st->planner_len && dn > 0 && (size_t)dn < detail_cap)
    snprintf(detail + dn, detail_cap - (size_t)dn, ", GOTO hash %016llx",
             (unsigned long long)steer_planner_hash(s->planner));
  return len;
}

/* The world and who owns what, written atomically to the state file. The
 * interval's and SIGHUP's checkpoints fork a writer that makes the image,
 * checksums, writes, fsyncs and renames (the loop pays for the planner's
 * records and the fork); where no process can be started, the loop makes the
 * image and a worker thread writes it, and at shutdown (now) all of it runs
 * on this thread after any write in flight. A failed checkpoint is logged and
 * counted and the previous file is intact. STEERD_CHECKPOINT_EBUSY: one is
 * still being written (try again later). */
static int checkpoint(steerd_server *s, const char *why, int now) {
  if (!s->ckpt)
    return 0;
  if (now)
    steerd_checkpointer_wait(s->ckpt);
  else if (steerd_checkpointer_busy(s->ckpt))
    return STEERD_CHECKPOINT_EBUSY;
  uint64_t t0 = uv_hrtime(), cpu0 = thread_cpu_ns();
  steerd_persist_server st;
  memset(&st, 0, sizeof(st));
  st.next_client_id = s->next_client_id;
  st.owners = s->ckpt_owners;
  for (uint32_t i = 0; i < s->owner_cap; i++) {
    const owner_rec *o = &s->owners[i];
    if (!o->id || o->agents == 0)
      continue;
    steerd_persist_owner *po = &st.owners[st.owner_count++];
    po->id = o->id;
    po->named = (uint8_t)o->named;
    snprintf(po->name, sizeof(po->name), "%s", o->name);
    po->agents = o->agents;
  }
  st.demo_on = s->demo_on;
  st.demo = s->demo;
  if (steerd_goto_save(s->planner, &s->plan_ckpt, &s->plan_ckpt_cap, &st) != STEER_OK) {
    steerd_checkpointer_failed(s->ckpt, why, "out of memory for the planner's state");
    return STEERD_CHECKPOINT_ENOMEM;
  }
  image_job job = {s, &st};
  uint64_t tick = steer_world_tick(s->world);
  if (!now) {
    int rc = steerd_checkpointer_fork(s->ckpt, make_image, &job, steerd_persist_seal, why, tick,
                                      uv_hrtime() - t0, thread_cpu_ns() - cpu0);
    if (rc != STEERD_CHECKPOINT_EAGAIN)
      return rc;
  }
  char detail[192], err[64];
  size_t len = make_image(&job, s->ckpt, detail, sizeof detail, err, sizeof err);
  if (len == 0) {
    steerd_checkpointer_failed(s->ckpt, why, err);
    return STEERD_CHECKPOINT_ENOMEM;
  }
  uint64_t loop_ns = uv_hrtime() - t0, cpu_ns = thread_cpu_ns() - cpu0;
  if (now)
    return steerd_checkpointer_write_now(s->ckpt, len, steerd_persist_seal, why, detail, tick, loop_ns,
                                         cpu_ns);
  return steerd_checkpointer_submit(s->ckpt, len, steerd_persist_seal, why, detail, tick, loop_ns, cpu_ns);
}

/* The world of the state file, or NULL with *fresh set when there is none to
 * restore (no file yet, or --state-reset), or NULL after logging why the file
 * cannot be used: the server then refuses to start rather than start empty. */
static steer_world *restore(steerd_server *s, steerd_persist_server *st, int *fresh) {
  const steerd_config *cfg = &s->cfg;
  *fresh = 0;
  uint8_t *data = NULL;
  size_t len = 0;
  char err[256];
  int rc = steerd_checkpoint_read(cfg->state_file, &data, &len, err, sizeof(err));
  if (rc == STEERD_CHECKPOINT_ENOENT) {
    s->no_state_file = 1; /* logged once the server is sure to start */
    *fresh = 1;
    return NULL;
  }
  if (rc != STEERD_CHECKPOINT_OK) {
    LOG_ERROR("cannot read the state file: %s", err);
    return NULL;
  }
  if (cfg->state_reset) {
    LOG_WARN(
        "--state-reset: ignoring the state file %s (%zu bytes); it is overwritten at the next checkpoint",
        cfg->state_file, len);
    free(data);
    *fresh = 1;
    return NULL;
  }
  const uint8_t *world_bytes = NULL;
  size_t world_len = 0;
  steer_world *w = NULL;
  rc = steerd_persist_decode(data, len, &world_bytes, &world_len, st);
  if (rc == STEER_OK)
    w = steer_world_load(world_bytes, world_len, &rc);
  /* The image stays for restore_owners. */
  s->restored = data;
  s->restored_len = len;
  if (!w) {
    LOG_ERROR("the state file %s cannot be restored: %s. Refusing to start with an empty world; "
              "fix or move the file, or start with --state-reset to discard it",
              cfg->state_file, steer_strerror(rc));
    return NULL;
  }
  return w;
}

/* Owner records and the demo from the state file's server part. */
static int restore_owners(steerd_server *s, const steerd_persist_server *head) {
  steerd_persist_server st;
  memset(&st, 0, sizeof(st));
  st.owners = s->ckpt_owners;
  st.owner_cap = s->owner_cap;
  size_t world_len;
  const uint8_t *world_bytes;
  /* The second pass over the same image: now there is room for the owners. */
  if (steerd_persist_decode(s->restored, s->restored_len, &world_bytes, &world_len, &st) != STEER_OK ||
      st.owner_count != head->owner_count || st.owner_count > s->owner_cap) {
    LOG_ERROR("the state file %s lists more owners than the world can hold", s->cfg.state_file);
    return -1;
  }
  uint64_t now = uv_hrtime();
  for (uint32_t i = 0; i < st.owner_count; i++) {
    const steerd_persist_owner *po = &st.owners[i];
    owner_rec *o = owner_new(s, po->id, po->name, po->named);
    if (!o)
      return -1;
    o->agents = po->agents;
    if (s->cfg.orphan_policy == STEERD_ORPHAN_DESPAWN) {
      o->orphaned_ns = now; /* the grace starts again at the restart */
      s->orphans_pending++;
    }
  }
  if (st.next_client_id > s->next_client_id)
    s->next_client_id = st.next_client_id;
  if (st.demo_on) {
    s->demo = st.demo;
    steerd_demo_resume(&s->demo);
    s->demo.edit_map = demo_map_edit;
    s->demo.edit_ctx = s;
    s->demo_on = 1;
    s->demo_resumed = 1;
  }
  int rc = steerd_goto_restore(s->planner, &st);
  if (rc != STEER_OK) {
    LOG_ERROR("the state file %s cannot be restored: its GOTO planner state: %s", s->cfg.state_file,
              steer_strerror(rc));
    return -1;
  }
  if (st.planner_len)
    LOG_INFO("restored GOTO: %u agents, %u plan requests waiting, GOTO hash %016llx",
             steer_planner_active(s->planner), steer_planner_get_stats(s->planner).queued,
             (unsigned long long)steer_planner_hash(s->planner));
  if (s->demo_on) /* the demo's GOTO NPCs go on with the restored planner */
    steerd_demo_set_planner(&s->demo, s->world, s->planner, 0);
  return 0;
}

/* A snapshot deadline's snapshot carries the last tick due at or before the
 * deadline (§7.5). It goes out in the same callback that ran that tick, before
 * any command is read, so it is exactly the state after that step (§4): when
 * the tick just run is the last one due by the next deadline (the tick after it
 * falls later), the snapshot goes now, early, and that deadline is consumed. */
static int snapshot_due(steerd_server *s, uint64_t now, uint32_t ran) {
  uint64_t deadline = steerd_ticker_deadline(&s->snapshots);
  if (ran && now < deadline && steerd_ticker_deadline(&s->ticks) > deadline)
    now = deadline;
  if (steerd_ticker_due(&s->snapshots, now) == 0)
    return 0;
  /* A deadline with no step since the previous one cannot come while
   * snapshot_rate <= tick_rate; if it did, commands may have changed the world
   * since the last step, and a snapshot then would not be a tick's state. */
  return ran != 0;
}

static void on_timer(uv_timer_t *t) {
  steerd_server *s = t->data;
  uint64_t now = uv_hrtime();
  if (s->stopping) {
    service_enet(s);
    if ((s->stats.clients == 0 && now >= s->stop_earliest_ns) || now >= s->stop_deadline_ns) {
      close_handles(s);
      return;
    }
    uv_timer_start(&s->timer, on_timer, 10, 0);
    return;
  }
  s->last_tick_ns = now;
  s->service_pass++;
  uint32_t welcomed = s->stats.clients - s->stats.pending;
  s->event_share = EVENTS_IN_FLIGHT / (welcomed ? welcomed : 1u);
  if (s->event_share > s->event_backlog)
    s->event_share = s->event_backlog;
  if (s->event_share < EVENTS_SHARE_MIN)
    s->event_share = EVENTS_SHARE_MIN;
  if (s->warming)
    steerd_server_warming(s);
  drop_late_hellos(s, now);
  despawn_orphans(s, now);
  for (uint32_t i = 0; i < s->cfg.max_clients; i++)
    if (s->clients[i].peer)
      s->clients[i].last_rx_ms = s->clients[i].peer->lastReceiveTime;
  for (uint32_t i = 0; i < s->cfg.max_pending; i++)
    if (s->pending[i].peer)
      s->pending[i].last_rx_ms = s->pending[i].peer->lastReceiveTime;
  uint64_t overruns = s->ticks.overruns;
  uint32_t due = steerd_ticker_due(&s->ticks, now);
  if (s->ticks.overruns != overruns)
    charge_overrun(s);
  if (due)
    memset(s->phase_ns, 0, sizeof s->phase_ns);
  for (uint32_t i = 0; i < due; i++) {
    /* After a stall the steps run in the last `due` slots consumed (the skipped ones come first). */
    uint64_t slot = s->ticks.index - (due - 1u - i), slot_ns = steerd_ticker_slot_ns(&s->ticks, slot);
    s->tick_time_us = (slot_ns - s->start_ns) / 1000u;
    uint64_t late = uv_hrtime() - slot_ns;
    s->stats.tick_late_ns_total += late;
    for (int b = 0; b < STEERD_TICK_BUCKETS; b++)
      if ((double)late <= steerd_tick_bucket_bounds[b] * 1e9)
        s->stats.tick_late_bucket[b]++;
    run_tick(s);
  }
  if (due) {
    s->cmd_budget_left_ns = (uint64_t)s->cfg.command_budget_us * 1000u;
    s->cmd_budget_spent = 0;
  }
  uint64_t t_send = uv_hrtime();
  if (snapshot_due(s, now, due))
    send_snapshot(s);
  s->stats.overruns = s->ticks.overruns;
  s->stats.ticks_skipped = s->ticks.skipped;
  flush_events(s);
  send_map_streams(s);
  charge(s, STEERD_PHASE_SEND, uv_hrtime() - t_send);
  reap_overflowed(s);
  int more = service_enet(s); /* timeouts and resends, then everything queued goes out */
  run_commands(s);
  flush_events(s);
  reap_overflowed(s);
  enet_host_flush(s->host);
  if (now >= s->next_stats_ns) {
    if (s->next_stats_ns)
      log_stats(s);
    s->next_stats_ns = now + STATS_INTERVAL_NS;
  }
  uint64_t t_ckpt = uv_hrtime();
  steerd_checkpointer_poll(s->ckpt);
  if (s->ckpt_requested && checkpoint(s, s->ckpt_requested, 0) != STEERD_CHECKPOINT_EBUSY)
    s->ckpt_requested = NULL;
  /* One in flight still: the interval's checkpoint follows as soon as it is done. */
  if (s->next_checkpoint_ns && now >= s->next_checkpoint_ns &&
      checkpoint(s, "interval", 0) != STEERD_CHECKPOINT_EBUSY)
    s->next_checkpoint_ns = now + (uint64_t)s->cfg.checkpoint_interval_s * 1000000000ull;
  charge(s, STEERD_PHASE_CHECKPOINT, uv_hrtime() - t_ckpt);
  /* Sleep until the sooner deadline, rounded up to libuv's millisecond timer;
   * deadlines are absolute, so the rounding never accumulates. */
  now = uv_hrtime();
  uint64_t wait = steerd_ticker_wait_ns(&s->ticks, now);
  uint64_t wait_snap = steerd_ticker_wait_ns(&s->snapshots, now);
  if (wait_snap < wait)
    wait = wait_snap;
  if (more)
    wait = 0; /* events left over: come back right after the loop has polled */
  uv_timer_start(&s->timer, on_timer, (wait + 999999u) / 1000000u, 0);
}

/* ---- ENet ---------------------------------------------------------------- */

static client *client_of(ENetPeer *peer) { return peer->data; }

static void on_connect(steerd_server *s, ENetEvent *ev) {
  ENetPeer *peer = ev->peer;
  char host[48];
  if (enet_address_get_host_ip(&peer->address, host, sizeof(host)) != 0)
    strcpy(host, "?");
  if (s->stopping) {
    enet_peer_disconnect(peer, PROTO_DISCONNECT_SHUTDOWN);
    return;
  }
  if (ev->data != PROTO_VERSION || peer->channelCount < PROTO_CHANNEL_COUNT) {
    PEER_LOG(s, STEERD_LOG_WARN, "refused %s:%u: protocol %u with %u channels (want %d with %d)", host,
             peer->address.port, ev->data, (unsigned)peer->channelCount, PROTO_VERSION, PROTO_CHANNEL_COUNT);
    enet_peer_disconnect(peer, PROTO_DISCONNECT_VERSION);
    return;
  }
  uint32_t free_slots = 0;
  for (uint32_t i = 0; i < s->cfg.max_clients && !free_slots; i++)
    free_slots += s->clients[i].peer == NULL;
  client *c = free_slots ? pending_slot(s, uv_hrtime()) : NULL;
  if (!c) {
    s->stats.refused_full++;
    PEER_LOG(s, STEERD_LOG_WARN, "refused %s:%u: server full (%u clients, %u connections waiting for HELLO)",
             host, peer->address.port, s->cfg.max_clients, s->cfg.max_pending);
    enet_peer_disconnect(peer, PROTO_DISCONNECT_FULL);
    return;
  }
  memset(c, 0, sizeof(*c));
  c->peer = peer;
  c->id = s->next_client_id++;
  c->connected_ns = uv_hrtime();
  c->bucket_ns = c->connected_ns;
  c->tokens = (double)s->cfg.rate_burst;
  snprintf(c->addr, sizeof(c->addr), "%s:%u", host, peer->address.port);
  peer->data = c;
  enet_peer_timeout(peer, 0, s->cfg.client_timeout_ms, s->cfg.client_timeout_ms);
  /* No ENet packet throttle (deceleration 0; the peer is told too): it drops
   * unreliable packets, snapshots and deltas, when the round trip grows, which
   * here means the server was busy rather than the link congested; the delta
   * byte budget bounds what a client gets. */
  enet_peer_throttle_configure(peer, ENET_PEER_PACKET_THROTTLE_INTERVAL,
                               ENET_PEER_PACKET_THROTTLE_ACCELERATION, 0);
  s->stats.clients++;
  s->stats.pending++;
  LOG_DEBUG("client %u connected from %s", c->id, c->addr); /* INFO at WELCOME: "says hello" */
}

static void on_disconnect(steerd_server *s, ENetEvent *ev) {
  client *c = client_of(ev->peer);
  if (!c)
    return; /* refused before it became a client */
  /* ENet reports a timeout and a goodbye with data 0 alike; a timeout comes
   * after --client-timeout of silence, a goodbye right after its datagram.
   * Peers that never said HELLO go through the log limiter. */
  char how[64];
  uint32_t silent = c->last_rx_ms ? enet_time_get() - c->last_rx_ms : 0;
  if (ev->data == 0 && c->last_rx_ms && silent >= s->cfg.client_timeout_ms / 4u * 3u)
    snprintf(how, sizeof how, "timed out (silent for %u ms)", silent);
  else
    snprintf(how, sizeof how, "disconnected (reason %u)", ev->data);
  if (c->welcomed)
    LOG_INFO("client %u (%s) %s after %llu commands, %llu bad messages, %llu rate limited", c->id, c->addr,
             how, (unsigned long long)c->commands, (unsigned long long)c->bad_messages,
             (unsigned long long)c->rate_limited);
  else
    PEER_LOG(s, STEERD_LOG_INFO, "client %u (%s) %s without WELCOME after %llu packets", c->id, c->addr, how,
             (unsigned long long)(c->commands + c->bad_messages));
  client_release(s, c);
}

/* Handles what ENet has received, at most SERVICE_MAX_EVENTS events and no
 * longer than until a tick is due (a flood would otherwise keep this loop
 * going for seconds while no tick runs). Returns 1 when it stopped early. */
static int service_pass(steerd_server *s) {
  ENetEvent ev;
  int rc;
  uint32_t n = 0;
  s->service_pass++;
  while ((rc = enet_host_service(s->host, &ev, 0)) > 0) {
    switch (ev.type) {
    case ENET_EVENT_TYPE_CONNECT:
      on_connect(s, &ev);
      break;
    case ENET_EVENT_TYPE_DISCONNECT:
      on_disconnect(s, &ev);
      break;
    case ENET_EVENT_TYPE_RECEIVE: {
      client *c = client_of(ev.peer);
      if (c && !s->stopping)
        receive_packet(s, c, ev.packet, ev.channelID, 0);
      else
        enet_packet_destroy(ev.packet);
      reap_overflowed(s);
      break;
    }
    default:
      break;
    }
    if (++n >= SERVICE_MAX_EVENTS ||
        (n % 64 == 0 && !s->stopping && steerd_ticker_wait_ns(&s->ticks, uv_hrtime()) == 0)) {
      s->stats.service_cut++;
      return 1;
    }
  }
  if (rc < 0)
    LOG_WARN("enet_host_service failed");
  return 0;
}

static int service_enet(steerd_server *s) {
  uint64_t t0 = uv_hrtime();
  int more = service_pass(s);
  charge(s, STEERD_PHASE_ENET, uv_hrtime() - t0);
  return more;
}

static void on_readable(uv_poll_t *p, int status, int events) {
  (void)events;
  steerd_server *s = p->data;
  if (status < 0) {
    LOG_WARN("socket poll: %s", uv_strerror(status));
    return;
  }
  service_enet(s);
  run_commands(s);
  flush_events(s); /* SPAWNED and DESPAWNED of the commands just handled */
  reap_overflowed(s);
  enet_host_flush(s->host);
}

/* A PING or a HELLO (their type as the positive fixint the wire's encoders
 * write) on the command channel: answered even while a tick waits, as
 * neither changes the world and both report the last completed tick. */
static int answered_in_waits(const ENetPacket *p, uint8_t channel) {
  return channel == PROTO_CHANNEL_RELIABLE && (p->flags & ENET_PACKET_FLAG_RELIABLE) && p->dataLength >= 2 &&
         p->data[0] == 0x93 && (p->data[1] == PROTO_MSG_PING || p->data[1] == PROTO_MSG_HELLO);
}

/* Between the slices of a tick's wait for a navigation graph (planner.h): the
 * ENet host is serviced so that no client sees the server go silent: ENet
 * upkeep (acknowledgements, its pings, resends), connections and
 * disconnections (they change no agent), and PINGs and HELLOs answered at
 * once. Every other packet joins its client's inbox, run after the tick in
 * the order it came (run_commands): commands change the world only between
 * ticks, never inside one, so the tick's results are those of a tick that
 * did not wait. A PING or HELLO whose client has commands waiting waits too:
 * replies go in the order of the commands (PROTOCOL.md 10). */
static void plan_wait_service(steerd_server *s) {
  ENetEvent ev;
  uint32_t n = 0;
  while (n++ < SERVICE_MAX_EVENTS && enet_host_service(s->host, &ev, 0) > 0) {
    switch (ev.type) {
    case ENET_EVENT_TYPE_CONNECT:
      on_connect(s, &ev);
      break;
    case ENET_EVENT_TYPE_DISCONNECT:
      on_disconnect(s, &ev);
      break;
    case ENET_EVENT_TYPE_RECEIVE: {
      client *c = client_of(ev.peer);
      if (c && !s->stopping && !c->inbox.count && answered_in_waits(ev.packet, ev.channelID)) {
        handle_packet(s, c, ev.packet, ev.channelID);
        s->stats.wait_answered++;
        enet_packet_destroy(ev.packet);
      } else if (c && !s->stopping) {
        s->stats.wait_kept++;
        receive_packet(s, c, ev.packet, ev.channelID, 1);
      } else {
        enet_packet_destroy(ev.packet);
      }
      reap_overflowed(s);
      break;
    }
    default:
      break;
    }
  }
  enet_host_flush(s->host);
}

/* The planner's wait hook: ENet between the slices, and a wait longer than a
 * tick period logged when it ends, so an operator can tell a busy server from
 * a stuck one (the count and the time are in /metrics). */
static void on_plan_wait(void *ctx, float class_radius, uint64_t waited_ns, int done) {
  steerd_server *s = ctx;
  if (!done) {
    plan_wait_service(s);
    return;
  }
  if (waited_ns <= 1000000000ull / s->cfg.tick_rate)
    return;
  uint64_t sup = 0;
  if (steerd_loglimit_allow(&s->wait_log, uv_hrtime(), &sup))
    LOG_WARN("GOTO: tick %llu waited %.0f ms for the navigation graph of the %.2f m radius class (its build "
             "outlasted the class's due tick; ENet serviced meanwhile, %llu similar lines suppressed before "
             "this one)",
             (unsigned long long)steer_world_tick(s->world), (double)waited_ns / 1e6, (double)class_radius,
             (unsigned long long)sup);
}

/* ---- lifecycle ----------------------------------------------------------- */

/* The steering pass's worker threads (--threads; 0: one per core). One thread
 * needs no pool: the step runs on the loop thread as it always has. */
static int start_threads(steerd_server *s) {
  uint32_t n = s->cfg.threads ? s->cfg.threads : steer_pool_cores();
  if (n > 1) {
    s->pool = steer_pool_create(n);
    if (!s->pool) {
      LOG_ERROR("cannot start %u threads for the steering pass", n);
      return -1;
    }
    steer_world_set_pool(s->world, s->pool);
  }
  /* The delta clients' frames are encoded on the same threads (netcode.h). */
  s->delta_slots = calloc(s->cfg.max_clients, sizeof(*s->delta_slots));
  if (!s->delta_slots || steerd_netcode_set_pool(s->netcode, s->pool) != STEERD_NETCODE_OK) {
    LOG_ERROR("out of memory for encoding snapshots on %u threads", n);
    return -1;
  }
  LOG_INFO("steering pass on %u thread%s (and the delta snapshots' encoding)", n, n == 1 ? "" : "s");
  return 0;
}

steerd_server *steerd_server_create(uv_loop_t *loop, const steerd_config *cfg) {
  steerd_server *s = calloc(1, sizeof(*s));
  if (!s) {
    LOG_ERROR("out of memory");
    return NULL;
  }
  s->cfg = *cfg;
  s->loop = loop;
  s->dt = 1.0f / (float)cfg->tick_rate;
  s->next_client_id = 1;

  /* The world: restored from the state file, or new (and then, maybe, the demo). */
  steerd_persist_server st;
  memset(&st, 0, sizeof(st));
  int fresh = 1;
  if (cfg->state_file[0]) {
    /* A path that could never be checkpointed stops the server now. */
    char err[512];
    unsigned stale = 0;
    if (steerd_checkpoint_prepare(cfg->state_file, s->cfg.state_file, sizeof(s->cfg.state_file), &stale, err,
                                  sizeof(err)) != STEERD_CHECKPOINT_OK) {
      LOG_ERROR("refusing to start: %s (--state)", err);
      steerd_server_destroy(s);
      return NULL;
    }
    if (stale)
      LOG_WARN("removed %u temporary file%s of interrupted checkpoints next to %s", stale,
               stale == 1 ? "" : "s", s->cfg.state_file);
    if (strcmp(cfg->state_file, s->cfg.state_file) != 0)
      LOG_INFO("the state file %s is a link to %s: checkpoints replace %s", cfg->state_file,
               s->cfg.state_file, s->cfg.state_file);
    cfg = &s->cfg;
    s->ckpt = steerd_checkpointer_create(loop, cfg->state_file);
    if (!s->ckpt) {
      LOG_ERROR("out of memory");
      steerd_server_destroy(s);
      return NULL;
    }
    s->world = restore(s, &st, &fresh);
    if (!s->world && !fresh) {
      steerd_server_destroy(s);
      return NULL;
    }
  }
  if (s->world) {
    /* The file's world keeps its own capacity and bounds; flags that differ lose. */
    const steer_world_config *wc = steer_world_get_config(s->world);
    if (wc->max_agents != cfg->max_agents || wc->min.x != cfg->world_min.x || wc->min.y != cfg->world_min.y ||
        wc->max.x != cfg->world_max.x || wc->max.y != cfg->world_max.y)
      LOG_WARN("the state file's world (%u agents, bounds (%g,%g)-(%g,%g)) overrides the flags",
               wc->max_agents, wc->min.x, wc->min.y, wc->max.x, wc->max.y);
    s->cfg.max_agents = wc->max_agents;
    s->cfg.world_min = wc->min;
    s->cfg.world_max = wc->max;
    cfg = &s->cfg;
  } else {
    steer_world_config wc = steer_default_world_config();
    wc.max_agents = cfg->max_agents;
    wc.min = cfg->world_min;
    wc.max = cfg->world_max;
    wc.seed = cfg->seed;
    wc.max_path_points = cfg->max_path_points;
    s->world = steer_world_create(&wc);
  }
  s->clients = calloc(cfg->max_clients, sizeof(*s->clients));
  s->pending = calloc(cfg->max_pending, sizeof(*s->pending));
  s->queue_cap = (size_t)cfg->client_queue_kb * 1024u;
  s->event_backlog = s->queue_cap / 4u;
  s->event_share = s->event_backlog;
  s->events = calloc((size_t)cfg->max_clients * CLIENT_EVENTS, sizeof(*s->events));
  steerd_loglimit_init(&s->peer_log, LOG_WINDOW_NS, LOG_BURST);
  steerd_loglimit_init(&s->wait_log, LOG_WINDOW_NS, LOG_BURST);
  s->part_first = calloc((size_t)cfg->max_agents + 2, sizeof(*s->part_first));
  s->full_parts = calloc((size_t)cfg->max_agents + 1, sizeof(*s->full_parts));
  s->send_cands = calloc(cfg->max_clients, sizeof(*s->send_cands));
  s->owner_cap = cfg->max_clients + cfg->max_agents;
  s->owners = calloc(s->owner_cap, sizeof(*s->owners));
  s->ckpt_owners = calloc(s->owner_cap, sizeof(*s->ckpt_owners));
  s->scratch_ids = calloc(cfg->max_agents, sizeof(*s->scratch_ids));
  s->bounds.min = cfg->world_min;
  s->bounds.max = cfg->world_max;
  s->bounds.max_path_points = cfg->max_path_points;
  steerd_netcode_config nc = steerd_netcode_default_config();
  nc.max_clients = cfg->max_clients;
  nc.max_agents = cfg->max_agents;
  nc.pool_records = cfg->delta_pool;
  nc.dr_position_m = (float)cfg->dr_position_cm / 100.0f;
  nc.dr_angle_rad = (float)cfg->dr_angle_deg * (STEER_PI / 180.0f);
  nc.dr_refresh = cfg->dr_refresh;
  nc.budget_bytes = cfg->snapshot_budget;
  nc.rate_bytes = (uint32_t)((uint64_t)cfg->client_rate_kbps * 1000u / 8u);
  s->netcode = steerd_netcode_create(&nc);
  s->mapsync = steerd_mapsync_create(cfg->max_clients);
  if (!s->mapsync || !s->clients || !s->pending || !s->events || !s->part_first || !s->owners ||
      !s->full_parts || !s->send_cands || !s->ckpt_owners || !s->scratch_ids || !s->world || !s->netcode) {
    LOG_ERROR("cannot create a world of %u agents in bounds (%g,%g)-(%g,%g)", cfg->max_agents,
              cfg->world_min.x, cfg->world_min.y, cfg->world_max.x, cfg->world_max.y);
    steerd_server_destroy(s);
    return NULL;
  }
  if (start_threads(s) != 0) {
    steerd_server_destroy(s);
    return NULL;
  }
  s->planner = steerd_goto_create(s->world, cfg->plan_budget, cfg->plan_build_delay, cfg->nav);
  if (!s->planner) {
    LOG_ERROR("out of memory for the path planner");
    steerd_server_destroy(s);
    return NULL;
  }
  steer_planner_set_wait_hook(s->planner, on_plan_wait, s);
  if (!fresh && restore_owners(s, &st) != 0) {
    steerd_server_destroy(s);
    return NULL;
  }
  free(s->restored);
  s->restored = NULL;
  if (fresh && cfg->demo) {
    /* The demo's own level unless another map is loaded. */
    int rc =
        steerd_demo_create_ex(&s->demo, s->world, cfg->seed, cfg->map_file[0] ? STEERD_DEMO_NO_LEVEL : 0);
    if (rc == STEER_OK) /* its GOTO NPCs, served by the server's planner */
      rc = steerd_demo_set_planner(&s->demo, s->world, s->planner, 1);
    s->demo.edit_map = demo_map_edit;
    s->demo.edit_ctx = s;
    if (rc != STEER_OK) {
      LOG_ERROR("cannot build the demo world: %s (it needs bounds of +-60 m and 100 agents)",
                steer_strerror(rc));
      steerd_server_destroy(s);
      return NULL;
    }
    s->demo_on = 1;
  }
  if (fresh && cfg->map_file[0]) {
    char why[512];
    if (steerd_map_file_load(cfg->map_file, s->world, why, sizeof why) != 0) {
      LOG_ERROR("%s", why);
      steerd_server_destroy(s);
      return NULL;
    }
    LOG_INFO("map %s: %u obstacles, %u segments", cfg->map_file, steer_map_count(steer_world_map(s->world)),
             steer_map_segment_count(steer_world_map(s->world)));
  } else if (cfg->map_file[0]) {
    LOG_INFO("map %s not loaded: the restored world keeps its own map (%u obstacles)", cfg->map_file,
             steer_map_count(steer_world_map(s->world)));
  }
  if (cfg->state_file[0]) {
    s->next_checkpoint_ns =
        cfg->checkpoint_interval_s ? uv_hrtime() + (uint64_t)cfg->checkpoint_interval_s * 1000000000ull : 0;
    if (!fresh)
      LOG_INFO("restored %s at tick %llu: %u agents, %u owners, state hash %016llx%s", cfg->state_file,
               (unsigned long long)steer_world_tick(s->world), steer_world_count(s->world), st.owner_count,
               (unsigned long long)steer_world_hash(s->world), s->demo_on ? ", demo resumed" : "");
  }

  /* The address to bind: --bind as given, a name as it resolves, ::1 as 127.0.0.1. */
  char why[192];
  if (steerd_bind_resolve(cfg->bind, s->bind_ip, sizeof s->bind_ip, why, sizeof why) != 0) {
    LOG_ERROR("bad bind address: %s", why);
    steerd_server_destroy(s);
    return NULL;
  }
  if (strcmp(s->bind_ip, cfg->bind) != 0)
    LOG_INFO("--bind %s: binding %s", cfg->bind, s->bind_ip);

  /* Who may connect: with a secret, holders of its tokens; without one,
   * anyone who can reach the address, so only loopback unless told. */
  if (cfg->secret_len > 0) {
    if (steerd_auth_init(&s->auth, cfg->secret, cfg->secret_len) != STEERD_AUTH_OK) {
      LOG_ERROR("cannot use the secret: %s", steerd_auth_strerror(STEERD_AUTH_ESECRET));
      steerd_server_destroy(s);
      return NULL;
    }
    s->auth_on = 1;
    LOG_INFO("authentication on: every HELLO needs a token signed with the secret (steerd token --help)");
  } else if (steerd_address_is_loopback(s->bind_ip)) {
    LOG_WARN("no secret configured (STEERD_SECRET, --secret-file): anonymous clients are allowed, as %s%s, "
             "because the server is bound to the loopback address %s only",
             steerd_role_name(cfg->anonymous_role),
             cfg->anonymous_role_dev ? " (the loopback development default; --anonymous-role controller "
                                       "limits them to their own agents)"
                                     : "",
             cfg->bind);
  } else if (cfg->insecure) {
    LOG_WARN(
        "INSECURE: no secret configured and bound to %s: anyone who can reach it connects anonymously as "
        "%s (--insecure)",
        cfg->bind, steerd_role_name(cfg->anonymous_role));
  } else {
    LOG_ERROR(
        "refusing to start: bound to %s without a secret, anyone could command the world. Set "
        "STEERD_SECRET (or --secret-file FILE) and give clients tokens (steerd token), or pass --insecure "
        "(STEERD_INSECURE=1) to allow anonymous clients anyway",
        cfg->bind);
    steerd_server_destroy(s);
    return NULL;
  }

  if (enet_initialize() != 0) {
    LOG_ERROR("enet_initialize failed");
    steerd_server_destroy(s);
    return NULL;
  }
  ENetAddress addr;
  if (enet_address_set_host_ip(&addr, s->bind_ip) != 0) {
    LOG_ERROR("bad bind address '%s' (want an IPv4 address such as 127.0.0.1 or 0.0.0.0)", s->bind_ip);
    steerd_server_destroy(s);
    return NULL;
  }
  addr.port = cfg->port;
  /* ENet peers for the client slots, the pending ones, and a few beyond, so a
   * client over the limit hears "server full" instead of waiting for a connect
   * that never comes. Half-open handshakes use these peers too: they are reset
   * after HANDSHAKE_TIMEOUT_NS and beyond max_pending (drop_late_hellos). */
  size_t peers = (size_t)cfg->max_clients + cfg->max_pending + SPARE_PEERS;
  if (peers > MAX_ENET_PEERS)
    peers = MAX_ENET_PEERS;
  s->handshake_ns = calloc(peers, sizeof(*s->handshake_ns));
  s->host = s->handshake_ns ? enet_host_create(&addr, peers, PROTO_CHANNEL_COUNT, 0, 0) : NULL;
  if (!s->host) {
    LOG_ERROR("cannot bind %s:%u (in use, or not an address of this machine)", s->bind_ip, cfg->port);
    steerd_server_destroy(s);
    return NULL;
  }
  /* ENet asks for 256 KB each way. At 1 000 delta clients ~40 000 datagrams a
   * second arrive (SNAPSHOT_ACKs, ENet acknowledgements) and none is read
   * while a snapshot is encoded (~50 ms): 256 KB overflowed, and the lost acks
   * became resends and stale baselines. A snapshot's burst out (a packet or
   * two per client) fits the send buffer as well. */
  enet_socket_set_option(s->host->socket, ENET_SOCKOPT_RCVBUF, SOCKET_BUFFER);
  enet_socket_set_option(s->host->socket, ENET_SOCKOPT_SNDBUF, SOCKET_BUFFER);
  ENetAddress bound;
  if (enet_socket_get_address(s->host->socket, &bound) == 0)
    s->host->address.port = bound.port;
  {
    uint64_t pool, quota, reserve;
    size_t rec;
    steerd_netcode_get_memory(s->netcode, &pool, &quota, &reserve, &rec);
    LOG_INFO(
        "delta snapshots: record pool %llu records (%.1f MB at most, used as needed), per client a quota of "
        "%llu (%.1f MB) and a reserve of %llu",
        (unsigned long long)pool, (double)pool * (double)rec / 1048576.0, (unsigned long long)quota,
        (double)quota * (double)rec / 1048576.0, (unsigned long long)reserve);
  }
  LOG_INFO("listening on %s:%u (udp), tick %u Hz, snapshots %u Hz, %u clients, %u agents max, demo %s",
           s->bind_ip, s->host->address.port, cfg->tick_rate, cfg->snapshot_rate, cfg->max_clients,
           cfg->max_agents, s->demo_on ? "on" : "off");
  if (s->no_state_file)
    LOG_INFO("no state file %s yet: a new world, first checkpoint in %u s", cfg->state_file,
             cfg->checkpoint_interval_s);
  if (s->demo_on && !s->demo_resumed)
    LOG_INFO("demo world: %u agents in %u groups%s", s->demo.id_count, s->demo.group_count,
             s->demo.level ? ", its level (maps/demo.json) beside them" : "");
  else if (s->demo_on)
    LOG_INFO("demo world resumed from the state file: %u agents in the world (its groups are not kept there)",
             steer_world_count(s->world));
  return s;
}

int steerd_server_start(steerd_server *s) {
  /* The GOTO graphs of the radius classes in use, on threads of their own
   * once the server listens, so a big map never keeps it deaf for seconds;
   * /readyz waits for them (steerd_server_warming). */
  s->warm_start_ns = uv_hrtime();
  s->warming = steerd_goto_warm(s->planner, s->world);
  s->start_ns = uv_hrtime();
  steerd_ticker_init(&s->ticks, s->cfg.tick_rate, s->start_ns, s->cfg.max_catchup);
  steerd_ticker_init(&s->snapshots, s->cfg.snapshot_rate, s->start_ns, 1);
  int rc = uv_poll_init_socket(s->loop, &s->poll, s->host->socket);
  if (rc == 0) {
    s->poll.data = s;
    rc = uv_poll_start(&s->poll, UV_READABLE, on_readable);
  }
  if (rc != 0) {
    LOG_ERROR("cannot watch the socket: %s", uv_strerror(rc));
    return rc;
  }
  uv_timer_init(s->loop, &s->timer);
  s->timer.data = s;
  s->handles_open = 2;
  return uv_timer_start(&s->timer, on_timer, 1000u / s->cfg.tick_rate, 0);
}

void steerd_server_shutdown(steerd_server *s, uint32_t reason) {
  if (s->stopping)
    return;
  s->stopping = 1;
  checkpoint(s, "shutdown", 1);
  /* Clients get --drain-timeout to hear the disconnect; the loop ends sooner
   * when they have all gone. */
  s->stop_deadline_ns = uv_hrtime() + (uint64_t)s->cfg.drain_timeout_ms * 1000000ull;
  /* With the HTTP port on, probes and load balancers see /readyz answer 503
   * for --drain-min, however soon the clients have gone. */
  s->stop_earliest_ns = uv_hrtime() + (s->cfg.http_port ? (uint64_t)s->cfg.drain_min_ms * 1000000ull : 0u);
  LOG_INFO("shutting down: disconnecting %u clients (%s)", s->stats.clients, proto_disconnect_name(reason));
  for (uint32_t i = 0; i < s->cfg.max_clients; i++)
    if (s->clients[i].peer)
      enet_peer_disconnect(s->clients[i].peer, reason);
  for (uint32_t i = 0; i < s->cfg.max_pending; i++)
    if (s->pending[i].peer)
      enet_peer_disconnect(s->pending[i].peer, reason);
  enet_host_flush(s->host);
  if (s->handles_open)
    uv_timer_start(&s->timer, on_timer, 10, 0);
}

static void on_closed(uv_handle_t *h) {
  steerd_server *s = h->data;
  s->handles_open--;
}

static void close_handles(steerd_server *s) {
  log_stats(s);
  if (s->observer.on_stopped)
    s->observer.on_stopped(s->observer.arg);
  uv_timer_stop(&s->timer);
  uv_poll_stop(&s->poll);
  uv_close((uv_handle_t *)&s->timer, on_closed);
  uv_close((uv_handle_t *)&s->poll, on_closed);
}

void steerd_server_destroy(steerd_server *s) {
  if (!s)
    return;
  for (uint32_t i = 0; s->clients && s->pending && i < client_slots(s); i++)
    steerd_cmdq_clear(&client_at(s, i)->inbox);
  if (s->host) {
    enet_host_destroy(s->host);
    enet_deinitialize();
  }
  steer_planner_destroy(s->planner);
  free(s->plan_ckpt);
  steer_world_destroy(s->world);
  steer_pool_destroy(s->pool); /* after the world that borrowed it */
  steerd_netcode_destroy(s->netcode);
  steerd_mapsync_destroy(s->mapsync);
  free(s->clients);
  free(s->delta_slots);
  free(s->pending);
  free(s->events);
  free(s->handshake_ns);
  free(s->part_first);
  free(s->full_parts);
  free(s->send_cands);
  free(s->owners);
  free(s->scratch_ids);
  steerd_checkpointer_destroy(s->ckpt);
  free(s->restored);
  free(s->ckpt_owners);
  sodium_memzero(s->cfg.secret, sizeof(s->cfg.secret));
  sodium_memzero(&s->auth, sizeof(s->auth));
  free(s);
}

uint16_t steerd_server_port(const steerd_server *s) { return s->host ? s->host->address.port : 0; }

void steerd_server_get_stats(const steerd_server *s, steerd_server_stats *out) {
  *out = s->stats;
  const steer_map *m = steer_world_map(s->world);
  out->stuck_events = steer_world_stuck_count(s->world);
  out->map_obstacles = steer_map_count(m);
  out->map_version = steer_map_version(m);
  out->commands_run = s->cmdsched.run;
  out->command_wait_ns_total = s->cmdsched.wait_ns_sum;
  out->command_wait_ns_max = s->cmdsched.wait_ns_max;
  out->commands_queued = commands_waiting(s);
}

void steerd_server_checkpoint_stats(const steerd_server *s, steerd_checkpoint_stats *out) {
  if (s->ckpt)
    steerd_checkpointer_stats(s->ckpt, out);
  else
    memset(out, 0, sizeof(*out));
}

void steerd_server_checkpoint(steerd_server *s, const char *why) {
  if (!s->ckpt) {
    LOG_WARN("%s: no checkpoint, the server has no state file (--state)", why);
    return;
  }
  if (s->stopping)
    return; /* the shutdown checkpoint is being made */
  s->ckpt_requested = why;
  if (checkpoint(s, why, 0) == STEERD_CHECKPOINT_EBUSY)
    LOG_INFO("%s: a checkpoint is being written; another follows when it is done", why);
  else
    s->ckpt_requested = NULL;
}

/* ---- for the HTTP side ----------------------------------------------------- */

void steerd_server_get_health(const steerd_server *s, steerd_server_health *out) {
  out->bound = s->host != NULL && s->handles_open > 0;
  out->restored = s->world != NULL && s->start_ns != 0;
  out->draining = s->stopping;
  out->last_tick_ns = s->last_tick_ns ? s->last_tick_ns : s->start_ns;
  out->tick_period_ns = 1000000000ull / s->cfg.tick_rate;
}

void steerd_server_clients_by_role(const steerd_server *s, uint32_t out[STEERD_ROLE_COUNT + 1]) {
  memset(out, 0, sizeof(uint32_t) * (STEERD_ROLE_COUNT + 1));
  for (uint32_t i = 0; i < s->cfg.max_clients; i++) {
    const client *c = &s->clients[i];
    if (!c->peer)
      continue;
    if (c->welcomed && c->role >= 0 && c->role < STEERD_ROLE_COUNT)
      out[c->role]++;
    else
      out[STEERD_ROLE_COUNT]++;
  }
  out[STEERD_ROLE_COUNT] += s->stats.pending; /* the pending pool */
}

const steer_world *steerd_server_world(const steerd_server *s) { return s->world; }
const steer_planner *steerd_server_planner(const steerd_server *s) { return s->planner; }

uint32_t steerd_server_warming(steerd_server *s) {
  if (!s->warming)
    return 0;
  s->warming = steer_planner_warming(s->planner);
  if (!s->warming)
    LOG_INFO("GOTO: the navigation graphs of the radius classes in use are built (%.0f ms, off the loop)",
             (double)(uv_hrtime() - s->warm_start_ns) / 1e6);
  return s->warming;
}
const steerd_config *steerd_server_config(const steerd_server *s) { return &s->cfg; }
uint64_t steerd_server_time_us(const steerd_server *s) { return server_time_us(s); }

void steerd_server_delta_frames(const steerd_server *s, uint64_t *frames, uint64_t *without_baseline) {
  steerd_netcode_stats ns;
  steerd_netcode_get_stats(s->netcode, &ns);
  *frames = ns.frames;
  *without_baseline = ns.frames_full;
}

void steerd_server_set_observer(steerd_server *s, const steerd_server_observer *o) {
  if (o)
    s->observer = *o;
  else
    memset(&s->observer, 0, sizeof(s->observer));
}

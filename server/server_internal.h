/* server_internal.h: what the server's own files share, not installed. server.c runs the
 * loop (ticks, ENet, checkpoints, lifecycle); server_clients.c sends to clients and keeps owners
 * and admission; server_commands.c decodes, queues and runs the commands; server_snapshots.c
 * sends the snapshot rounds within the send budget. */
#ifndef STEERD_SERVER_INTERNAL_H
#define STEERD_SERVER_INTERNAL_H

#include "server.h"

#include <enet/enet.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
  steerd_tick_work tick_log[STEERD_TICK_LOG]; /* a ring of the last periods' phase_ns */
  uint64_t tick_logged;                       /* periods put in it so far */
  uint32_t warming;         /* the start-up's graph builds still running (steer_planner_warm_start) */
  uint64_t warm_start_ns;   /* when they started */
  steerd_loglimit wait_log; /* ticks' long waits for a graph */
};

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

/* ---- small helpers --------------------------------------------------------- */

static inline uint64_t server_time_us(const steerd_server *s) { return (uv_hrtime() - s->start_ns) / 1000u; }

static inline void charge(steerd_server *s, steerd_loop_phase phase, uint64_t ns) {
  s->phase_ns[phase] += ns;
  s->stats.loop_phase_ns[phase] += ns;
}

/* CPU time of the calling thread (ns). */
static inline uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void send_bytes(ENetPeer *peer, uint8_t channel, const uint8_t *data, size_t len,
                              uint32_t flags) {
  ENetPacket *p = enet_packet_create(data, len, flags);
  if (p && enet_peer_send(peer, channel, p) != 0)
    enet_packet_destroy(p);
}

static inline int is_pending(const steerd_server *s, const client *c) {
  return c >= s->pending && c < s->pending + s->cfg.max_pending;
}

/* Client slots for the command scheduler: the WELCOMEd ones, then the pending. */
static inline uint32_t client_slots(const steerd_server *s) {
  return s->cfg.max_clients + s->cfg.max_pending;
}

static inline client *client_at(const steerd_server *s, uint32_t slot) {
  return slot < s->cfg.max_clients ? &s->clients[slot] : &s->pending[slot - s->cfg.max_clients];
}

/* Commands waiting in every inbox. */
static inline uint32_t commands_waiting(const steerd_server *s) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < client_slots(s); i++) {
    const client *c = client_at(s, i);
    n += c->peer ? c->inbox.count : 0u;
  }
  return n;
}

/* server_clients.c */
int client_queue(steerd_server *s, client *c, uint8_t channel, ENetPacket *p);
void send_reliable(steerd_server *s, client *c, size_t len);
void send_error(steerd_server *s, client *c, uint32_t request_id, int code, const char *message,
                const char *field);
void send_ack(steerd_server *s, client *c, const proto_ack *ack);
void flush_events(steerd_server *s);
void send_event(steerd_server *s, const proto_event *e, vec2 pos, uint32_t owner);
void agent_event(steerd_server *s, uint8_t code, steer_id agent, uint32_t data, vec2 pos, uint32_t owner);
owner_rec *owner_by_name(steerd_server *s, const char *name);
owner_rec *owner_new(steerd_server *s, uint32_t id, const char *name, int named);
void owner_agent_gone(steerd_server *s, uint32_t owner_id, const client *by);
void despawn_orphans(steerd_server *s, uint64_t now);
void client_release(steerd_server *s, client *c);
void client_kill(steerd_server *s, client *c, uint32_t reason, const char *why);
void reap_overflowed(steerd_server *s);
client *pending_slot(steerd_server *s, uint64_t now);
client *admit(steerd_server *s, client *c);

/* server_commands.c */
void send_map_streams(steerd_server *s);
int demo_map_edit(void *ctx, steer_world *w, uint32_t id, const steer_obstacle_desc *o);
void handle_packet(steerd_server *s, client *c, const ENetPacket *p, uint8_t channel);
void receive_packet(steerd_server *s, client *c, ENetPacket *p, uint8_t channel, int in_wait);
int run_commands(steerd_server *s);

/* server_snapshots.c */
void send_snapshot(steerd_server *s);

/* server.c */
int service_enet(steerd_server *s);

#endif /* STEERD_SERVER_INTERNAL_H */

/* server.h: the authoritative server: a libuv loop that owns an ENet host and a
 * world, steps the world at a fixed tick and sends snapshots at its own rate.
 *
 * Per timer wake-up: run the ticks that are due (commands already applied as
 * they arrived), send their events, send a snapshot when one is due, service
 * ENet (timeouts, resends) and flush. The ENet socket is watched with uv_poll, so
 * commands are handled as soon as they arrive; nothing busy-waits or sleeps. */
#ifndef STEERD_SERVER_H
#define STEERD_SERVER_H

#include <stdint.h>
#include <uv.h>

#include "auth.h"
#include "checkpoint.h"
#include "config.h"
#include "planner.h"
#include "protocol.h"
#include "world.h"

typedef struct steerd_server steerd_server;

/* Upper bounds of the tick duration histogram, seconds (defined in metrics.c, which prints them). */
#define STEERD_TICK_BUCKETS 12
extern const double steerd_tick_bucket_bounds[STEERD_TICK_BUCKETS];

/* What the loop thread does, for the time it spends and the stalls it causes
 * (steerd_server_stats loop_phase_ns, overruns_by_phase). */
typedef enum steerd_loop_phase {
  STEERD_PHASE_STEP = 0,   /* the world's step, GOTO's plans and the tick's events */
  STEERD_PHASE_COMMANDS,   /* running the clients' commands */
  STEERD_PHASE_ENET,       /* ENet: receiving, connects, resends, acknowledgements */
  STEERD_PHASE_SEND,       /* snapshots (the live views' included), events, map streams */
  STEERD_PHASE_CHECKPOINT, /* making or forking checkpoints */
  STEERD_PHASE_HTTP,       /* answering the HTTP port's requests and WebSocket messages */
  STEERD_LOOP_PHASES
} steerd_loop_phase;

/* "step", "commands", ... (metrics labels; metrics.c). */
const char *steerd_loop_phase_name(int phase);

/* The loop's work in one tick's period, by phase: from the start of the
 * tick's step to the start of the next tick's (a stall's ticks run together
 * and share one entry, under the last of them). The live view graphs them. */
#define STEERD_TICK_LOG 512 /* periods kept: 17 s at 30 Hz, longer than a scrape interval of 15 s */
typedef struct steerd_tick_work {
  uint64_t tick;                   /* the world's tick number, as in snapshots */
  uint32_t us[STEERD_LOOP_PHASES]; /* microseconds of each phase */
} steerd_tick_work;

typedef struct steerd_server_stats {
  uint64_t ticks;         /* world steps run */
  uint64_t ticks_skipped; /* steps dropped after stalls */
  uint64_t overruns;      /* wake-ups that found more than one tick due */
  uint64_t slow_ticks;    /* steps that took longer than a tick period */
  uint64_t snapshots;     /* snapshots sent (each may be several packets) */
  uint64_t snapshot_packets;
  uint64_t snapshot_bytes; /* payload bytes, per copy sent */
  uint64_t commands;       /* commands handled */
  uint64_t errors_sent;
  uint64_t bad_messages;      /* undecodable messages received */
  uint64_t rate_limited;      /* commands refused with RATE_LIMITED */
  uint64_t auth_failures;     /* HELLOs refused for their token */
  uint64_t abuse_disconnects; /* peers dropped for malformed packets */
  uint64_t hello_timeouts;    /* peers dropped for not saying HELLO in time */
  uint64_t step_ns_total;     /* time spent in world steps */
  uint64_t step_ns_max;       /* the longest world step */
  uint64_t delta_frames;      /* DELTA frames encoded (one per delta client per snapshot) */
  uint64_t delta_bytes;       /* their payload bytes */
  uint64_t delta_ns_total;    /* time spent choosing and encoding them, sending included */
  /* Abuse: what the limits on each peer (guard.h) did. */
  uint64_t queue_overflows;   /* peers dropped (reason 8) for more than --client-queue-kb queued */
  uint64_t queue_dropped;     /* packets not queued to such a peer before it went */
  uint64_t errors_suppressed; /* ERRORs not sent: all but the first before WELCOME */
  uint64_t pending_evicted;   /* pending connections dropped to make room for a new one */
  uint64_t handshakes_reset;  /* half-open ENet handshakes reset */
  uint64_t refused_full;      /* connections refused: no client or pending slot */
  uint64_t service_cut;       /* ENet passes stopped by the per-wake-up budget */
  uint64_t event_messages; /* EVENT and EVENTS messages sent (one per client per wake-up at most, mostly) */
  uint64_t events_lost;    /* events dropped for clients that were behind (EVENTS "lost") */
  uint32_t clients;        /* connected now, pending included */
  uint32_t pending;        /* connected, not yet WELCOMEd */

  /* For /metrics (metrics.c): by kind, so the totals above stay as they were. */
  uint64_t delta_packets;         /* DELTA packets sent */
  uint64_t full_sent;             /* full snapshots sent, one per client */
  uint64_t full_deferred;         /* ... not sent to a client in debt (--full-rate-kbps) */
  uint64_t full_budget_deferred;  /* ... not sent for the server-wide budget (--send-budget-*) */
  uint64_t delta_budget_deferred; /* DELTA frames not sent for the server-wide budget */
  uint64_t send_rounds_limited;   /* snapshot rounds the server-wide budget cut short */
  uint64_t commands_by_type[PROTO_MSG_LAST_COMMAND + 1][2]; /* [type][0 ok, 1 answered with ERROR] */
  uint64_t errors_by_code[PROTO_ERR_COUNT];                 /* ERRORs sent, by code */
  uint64_t tick_seconds_bucket[STEERD_TICK_BUCKETS];        /* steps that took <= bucket bound */

  /* The map (PROTOCOL.md 17). */
  uint64_t stuck_events;   /* STUCK events of the world since it was created (saved with it) */
  uint32_t map_obstacles;  /* obstacles in the map now */
  uint32_t map_version;    /* the map's version now */
  uint64_t map_changes;    /* admin changes applied (ADD_OBSTACLE, REMOVE_OBSTACLE, steerd_server_map_edit) */
  uint64_t map_parts_sent; /* MAP packets sent */
  uint64_t map_bytes_sent; /* their payload bytes */
  uint64_t map_changed_sent; /* MAP_CHANGED packets queued, one per client per change */
  uint64_t wait_answered;    /* PINGs and HELLOs answered while a tick waited for a navigation graph */
  uint64_t wait_kept;        /* packets received then, left in their clients' inboxes for after the tick */

  /* Commands waiting to run (command_queue.h, --command-budget-us, --command-queue). */
  uint64_t commands_busy;            /* commands refused BUSY: their sender's inbox was full */
  uint64_t command_budget_exhausted; /* ticks whose command budget ran out with commands waiting */
  uint64_t command_ns_total;         /* loop time spent running commands */
  uint64_t commands_run;             /* commands taken from the inboxes and run */
  uint64_t command_wait_ns_total;    /* their time in the inboxes */
  uint64_t command_wait_ns_max;      /* the longest of those */
  uint32_t commands_queued;          /* commands waiting now */

  /* The loop thread's time by phase; each overrun charged to the phase that
   * took the most of the loop since the tick before it; how late ticks start. */
  uint64_t loop_phase_ns[STEERD_LOOP_PHASES];
  uint64_t overruns_by_phase[STEERD_LOOP_PHASES];
  uint64_t tick_late_bucket[STEERD_TICK_BUCKETS]; /* ticks started within bucket bound of their slot */
  uint64_t tick_late_ns_total;
} steerd_server_stats;

/* Binds the ENet host and builds the world; logs "listening on ADDR:PORT".
 * Returns NULL after logging why. */
steerd_server *steerd_server_create(uv_loop_t *loop, const steerd_config *cfg);
/* Starts watching the socket and the tick timer. */
int steerd_server_start(steerd_server *s);
/* Disconnects every client with the reason code (proto_disconnect_reason), gives
 * them a moment to hear it, then closes the server's handles so the loop ends. */
void steerd_server_shutdown(steerd_server *s, uint32_t reason);
/* After the loop has ended. Accepts NULL. */
void steerd_server_destroy(steerd_server *s);

uint16_t steerd_server_port(const steerd_server *s);

/* ---- for the HTTP side (http.c, http_view.c, metrics.c) --------------------
 * Everything runs on the server's loop, between ticks: the world and the
 * counters are read in place, never concurrently with a step. */

/* What liveness and readiness are decided from. */
typedef struct steerd_server_health {
  int bound;             /* the ENet host is bound and the loop watches it */
  int restored;          /* the world is restored (or new) and running */
  int draining;          /* SIGTERM: no new HELLOs; the loop ends soon */
  uint64_t last_tick_ns; /* uv_hrtime() of the last timer wake-up that ran the ticks due */
  uint64_t tick_period_ns;
} steerd_server_health;
void steerd_server_get_health(const steerd_server *s, steerd_server_health *out);

/* Connected clients by role; [STEERD_ROLE_COUNT] holds those not yet WELCOMEd. */
void steerd_server_clients_by_role(const steerd_server *s, uint32_t out[STEERD_ROLE_COUNT + 1]);
const steer_world *steerd_server_world(const steerd_server *s);
const steer_planner *steerd_server_planner(const steerd_server *s); /* GOTO's, for /metrics */
/* The start-up's navigation graph builds still running (they start with
 * steerd_server_start, on threads of their own); the graphs of those done
 * are taken now, and the last one's end is logged. */
uint32_t steerd_server_warming(steerd_server *s);
const steerd_config *steerd_server_config(const steerd_server *s);
/* The name owner's HELLO (or its token) gave, NULL for no such owner (0 is
 * the server's own). */
const char *steerd_server_owner_name(const steerd_server *s, uint32_t owner);
uint64_t steerd_server_time_us(const steerd_server *s); /* as in snapshots */
/* The kept periods of ticks after `after`, oldest first, at most max of the
 * newest of them, into out. Their count. */
uint32_t steerd_server_tick_log(const steerd_server *s, uint64_t after, steerd_tick_work *out, uint32_t max);
/* The kept period with the most work, into *worst; how many are kept. */
uint32_t steerd_server_tick_work_max(const steerd_server *s, steerd_tick_work *worst);
/* QUERY's reply for agent id (PROTOCOL.md 6.8: state, limits, owner, tuning
 * and the GOTO report), the same for ENet clients and the live view. Returns
 * steer_world_get's result; r is filled only on STEER_OK. */
int steerd_server_agent_report(const steerd_server *s, steer_id id, proto_agent_report *r);
/* An admin's SET_BEHAVIOUR (any agent), ADD_OBSTACLE or REMOVE_OBSTACLE from
 * the live view, run as for an ENet admin: applied with *ack filled (0), or
 * the ERROR's code, text and field in *err (-1); anything else is FORBIDDEN.
 * A map edit's MAP_CHANGED goes to the ENet clients. */
int steerd_server_admin_command(steerd_server *s, const proto_command *cmd, proto_ack *ack,
                                proto_error_msg *err);
/* Frames the delta encoder sent without an acknowledged baseline (and all of them). */
void steerd_server_delta_frames(const steerd_server *s, uint64_t *frames, uint64_t *without_baseline);

/* Whoever else watches the world (the live view): told of every EVENT the
 * clients get (with the agent's position) and of every snapshot the clients
 * get, after they got it. Either may be NULL. */
typedef struct steerd_server_observer {
  void (*on_event)(void *arg, const proto_event *e, vec2 pos);
  void (*on_snapshot)(void *arg);
  void (*on_stopped)(void *arg); /* the server's handles are closed: the rest may close now */
  void *arg;
} steerd_server_observer;
void steerd_server_set_observer(steerd_server *s, const steerd_server_observer *o);
void steerd_server_get_stats(const steerd_server *s, steerd_server_stats *out);

/* Applies one change to the world's map as an admin command does (map_admin.h
 * says what is checked) and tells the clients (MAP_CHANGED). 0, or -1 with
 * r->code and r->why. Every runtime change of the map goes through here, so
 * this is where reactions to map changes hook in. */
struct steerd_map_edit;
struct steerd_map_result;
int steerd_server_map_edit(steerd_server *s, const struct steerd_map_edit *e, struct steerd_map_result *r);

/* Charges ns of the loop thread's time to the HTTP phase (http.c, per callback). */
void steerd_server_charge_http(steerd_server *s, uint64_t ns);

/* Checkpoint counters (server/checkpoint.h); all zero without --state. */
void steerd_server_checkpoint_stats(const steerd_server *s, steerd_checkpoint_stats *out);

/* A checkpoint now, written by a forked writer (SIGHUP); why names it in the
 * log. With one in flight, the next follows when it is done. */
void steerd_server_checkpoint(steerd_server *s, const char *why);

#endif /* STEERD_SERVER_H */

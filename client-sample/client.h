/* client.h: steerd_client, a small blocking-or-polling client of the steerd server.
 *
 * One steerd_client owns one ENet host with one peer (2 channels, connect data
 * PROTO_VERSION). It speaks the wire protocol of protocol/protocol.h:
 *
 *   steerd_client_connect()       ENet connect, HELLO, wait for WELCOME
 *   steerd_client_send()          any command, request id assigned here
 *   steerd_client_command_wait()  send, then service until its ACK or ERROR
 *   steerd_client_service()       wait up to timeout_ms, dispatch to callbacks
 *
 * Snapshots arrive as parts (one tick split over part_count packets); the
 * client reassembles the parts of a tick into one frame and hands complete
 * frames to on_snapshot_frame. An unfinished tick is dropped (and counted) as
 * soon as a part of a newer tick arrives. With config.snapshots = DELTA the
 * client asks for delta snapshots (PROTOCOL.md 7.6): it rebuilds each complete
 * frame from its baseline (delta.h), acknowledges it (SNAPSHOT_ACK) and hands
 * it to on_snapshot_frame exactly like a full one: every agent in view, dead
 * reckoned to the frame's time. Packets the server should not have
 * sent are counted in stats.bad_packets and dropped.
 *
 * Everything is sized at create (frame capacity); nothing allocates after that.
 * Not thread-safe: use one client from one thread. Callbacks may call
 * steerd_client_send() but not service/wait/connect/destroy. */
#ifndef STEERD_CLIENT_H
#define STEERD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "map_msg.h"
#include "mapcopy.h"
#include "protocol.h"

/* Error codes: 0 is success, negatives are errors (see steerd_client_strerror). */
typedef enum steerd_client_error {
  STEERD_CLIENT_OK = 0,
  STEERD_CLIENT_EINVAL = -1,        /* bad argument or configuration */
  STEERD_CLIENT_ENOMEM = -2,        /* create failed to allocate */
  STEERD_CLIENT_ENET = -3,          /* ENet could not create the host or the peer */
  STEERD_CLIENT_ERESOLVE = -4,      /* host name did not resolve */
  STEERD_CLIENT_ETIMEDOUT = -5,     /* no answer within the timeout */
  STEERD_CLIENT_ENOTCONN = -6,      /* not connected yet */
  STEERD_CLIENT_EDISCONNECTED = -7, /* the connection ended (see disconnect_reason) */
  STEERD_CLIENT_EENCODE = -8,       /* the command did not encode (enum out of range, too large) */
  STEERD_CLIENT_ESEND = -9,         /* ENet refused the packet */
  STEERD_CLIENT_EREPLY = -10,       /* the server answered ERROR (see the reply / last_error) */
  STEERD_CLIENT_EPROTOCOL = -11,    /* the server answered something unexpected */
  STEERD_CLIENT_EBUSY = -12,        /* called from a callback, or already connected */
  STEERD_CLIENT_ERROR_COUNT = 13
} steerd_client_error;

const char *steerd_client_strerror(int code);
/* "ETIMEDOUT" etc.; "UNKNOWN" for codes not listed. */
const char *steerd_client_error_name(int code);

/* One tick's complete snapshot; valid only during the callback. */
typedef struct steerd_client_frame {
  uint64_t tick;
  uint64_t server_time_us;
  uint32_t part_count;
  uint32_t count; /* poses, == the parts' agent_total */
  const proto_pose *poses;
} steerd_client_frame;

typedef struct steerd_client steerd_client;

typedef struct steerd_client_callbacks {
  void (*on_snapshot_frame)(void *user, const steerd_client_frame *frame);
  void (*on_event)(void *user, const proto_event *event);
  /* msg->type is PROTO_MSG_ACK or PROTO_MSG_ERROR. Not called for the reply a
   * blocking call (command_wait, ping, connect) was waiting for. */
  void (*on_reply)(void *user, const proto_server_msg *msg);
  /* The ENet connection ended (not called when a connect times out). reason:
   * ENet disconnect data, normally a proto_disconnect_reason; 0 when we
   * disconnected ourselves or the link timed out. */
  void (*on_disconnect)(void *user, uint32_t reason);
  /* The copy of the server's map became current (change NULL: a whole MAP
   * arrived) or changed (the MAP_CHANGED applied). See mapcopy.h. */
  void (*on_map)(void *user, const steerd_mapcopy *map, const proto_map_changed *change);
} steerd_client_callbacks;

#define STEERD_CLIENT_DEFAULT_AGENTS 10000u /* frame capacity when neither config nor WELCOME says */

typedef struct steerd_client_config {
  const char *name;            /* HELLO name, <= PROTO_MAX_NAME_BYTES; copied at create ("steerd-client") */
  const char *token;           /* HELLO token from `steerd token`, <= PROTO_MAX_TOKEN_BYTES; copied at
                                  create; NULL or "": none (anonymous, loopback servers without a secret) */
  uint32_t max_agents;         /* frame capacity, agents per tick (STEERD_CLIENT_DEFAULT_AGENTS); 0: sized at
                                  WELCOME by the server's max_agents (PROTOCOL.md 7.1; 10000 if it does not say):
                                  the buffers are then allocated on connect, and snapshot parts that arrive
                                  before WELCOME are dropped */
  uint8_t snapshots;           /* proto_snapshot_mode: FULL (the default) or DELTA */
  uint32_t delta_frames;       /* DELTA: frames kept as baselines (STEERD_DELTA_DEFAULT_FRAMES) */
  uint32_t connect_timeout_ms; /* ENet connect + WELCOME (3000) */
  uint32_t map_obstacles;      /* the copy of the map: obstacles (4096; 0: no copy is kept) */
  uint32_t map_points;         /* and their points together (65536) */
  steerd_client_callbacks callbacks; /* any may be NULL */
  void *user;                        /* passed to every callback */
} steerd_client_config;

typedef struct steerd_client_stats {
  uint64_t packets_received; /* every ENet packet from the server */
  uint64_t bytes_received;
  uint64_t bad_packets;   /* undecodable or unexpected, dropped */
  uint64_t commands_sent; /* including HELLO */
  uint64_t acks;
  uint64_t errors; /* ERROR replies */
  uint64_t events;
  uint64_t snapshot_parts;          /* snapshot packets that decoded */
  uint64_t snapshot_bytes;          /* their payload bytes */
  uint64_t snapshot_part_max_bytes; /* the largest one */
  uint64_t parts_dropped;           /* of an old or abandoned tick, duplicates, inconsistent headers */
  uint64_t frames_complete;         /* delivered to on_snapshot_frame */
  uint64_t frames_incomplete;       /* abandoned: a newer tick started first, or a part did not fit */
  uint64_t frames_overflow;         /* agent_total above max_agents (counted as incomplete too) */
  uint64_t pings;                   /* PING ACKs with a usable RTT */
  uint64_t rtt_last_us;
  uint64_t rtt_min_us;
  uint64_t rtt_sum_us;      /* mean = rtt_sum_us / pings */
  double rtt_smoothed_us;   /* EWMA, gain 1/8 (RFC 6298 SRTT) */
  int64_t clock_offset_us;  /* server_time_us - client clock, from the lowest-RTT ping */
  uint32_t enet_rtt_ms;     /* ENet's own round-trip estimate */
  uint64_t delta_acks_sent; /* SNAPSHOT_ACKs sent (one per rebuilt frame) */
  uint64_t delta_no_base;   /* DELTA frames dropped: baseline not held */
  uint64_t delta_bad;       /* DELTA frames dropped: they did not apply */
  uint64_t events_lost;     /* events the server dropped because we were behind (EVENTS "lost") */
  uint64_t map_parts;       /* MAP packets that decoded */
  uint64_t map_changes;     /* MAP_CHANGED messages that decoded */
  uint64_t map_gaps;        /* MAP_CHANGED beyond the next version: the copy stopped being current */
  uint64_t map_overflows;   /* maps larger than map_obstacles / map_points: not kept */
} steerd_client_stats;

typedef enum steerd_client_state {
  STEERD_CLIENT_IDLE = 0,     /* created, not connected */
  STEERD_CLIENT_CONNECTING,   /* ENet handshake or HELLO under way */
  STEERD_CLIENT_WELCOMED,     /* HELLO answered: commands may be sent */
  STEERD_CLIENT_DISCONNECTED, /* the connection ended; create a new client to reconnect */
  STEERD_CLIENT_STATE_COUNT
} steerd_client_state;

steerd_client_config steerd_client_default_config(void);

/* NULL on a bad config or when memory is short. */
steerd_client *steerd_client_create(const steerd_client_config *cfg);
/* Drops the connection at once (disconnect_now) if still up. Accepts NULL. */
void steerd_client_destroy(steerd_client *c);

/* ENet connect to host:port, HELLO, wait for WELCOME; timeout from the config.
 * On an ERROR reply returns EREPLY (see steerd_client_last_error); when the
 * server refuses the connection, EDISCONNECTED (see disconnect_reason). A
 * client connects once: after a failure, create a new one. */
int steerd_client_connect(steerd_client *c, const char *host, uint16_t port);
/* The same without waiting: steerd_client_service() carries the handshake on
 * (state CONNECTING, then WELCOMED) and returns the failure code if it fails,
 * so many clients can connect at once. */
int steerd_client_connect_start(steerd_client *c, const char *host, uint16_t port);
/* Polite disconnect: waits up to timeout_ms for the server to confirm. */
int steerd_client_disconnect(steerd_client *c, uint32_t timeout_ms);

/* Sends cmd (SPAWN .. VIEW) with the next request id (cmd->request_id is ignored) and returns
 * the id in *request_id (may be NULL). For PING, client_time_us is set to the
 * client clock. HELLO is refused (connect sends it). */
int steerd_client_send(steerd_client *c, const proto_command *cmd, uint32_t *request_id);

/* Sends cmd and services the connection until its reply arrives, dispatching
 * everything else to the callbacks. 0 on ACK, EREPLY on ERROR; reply (may be
 * NULL) receives either. */
int steerd_client_command_wait(steerd_client *c, const proto_command *cmd, uint32_t timeout_ms,
                               proto_server_msg *reply);

/* PING round trip; *rtt_us (may be NULL) receives this ping's RTT. */
int steerd_client_ping(steerd_client *c, uint32_t timeout_ms, uint64_t *rtt_us);

/* Waits up to timeout_ms for traffic, then drains what is ready; returns the
 * number of ENet events handled, or a negative error once the connection has
 * ended (EDISCONNECTED, or why the connect failed: ETIMEDOUT, EREPLY, ...). */
int steerd_client_service(steerd_client *c, uint32_t timeout_ms);

/* The UDP socket, to wait on many clients at once with poll(). */
int steerd_client_fd(const steerd_client *c);

steerd_client_state steerd_client_get_state(const steerd_client *c);
/* NULL before the WELCOME; kept after a disconnect. */
const proto_welcome *steerd_client_welcome(const steerd_client *c);
/* Agents a frame can hold: config.max_agents, or what WELCOME sized it to (0 before). */
uint32_t steerd_client_max_agents(const steerd_client *c);
/* Copies the counters (and refreshes enet_rtt_ms). */
void steerd_client_get_stats(const steerd_client *c, steerd_client_stats *out);
/* The copy of the server's map (mapcopy.h); NULL when none is kept. */
const steerd_mapcopy *steerd_client_map(const steerd_client *c);
/* ENet disconnect data of the last disconnect (proto_disconnect_reason), 0 if none. */
uint32_t steerd_client_disconnect_reason(const steerd_client *c);
/* The last ERROR a blocking call received; NULL if none. */
const proto_error_msg *steerd_client_last_error(const steerd_client *c);
/* Client clock (monotonic), microseconds. */
uint64_t steerd_client_now_us(void);

#endif /* STEERD_CLIENT_H */

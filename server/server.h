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

#include "checkpoint.h"
#include "config.h"

typedef struct steerd_server steerd_server;

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
  uint64_t delta_frames;      /* DELTA frames encoded (one per delta client per snapshot) */
  uint64_t delta_bytes;       /* their payload bytes */
  uint64_t delta_ns_total;    /* time spent choosing and encoding them, sending included */
  uint32_t clients;           /* connected now */
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
void steerd_server_get_stats(const steerd_server *s, steerd_server_stats *out);

/* Checkpoint counters (server/checkpoint.h); all zero without --state. */
void steerd_server_checkpoint_stats(const steerd_server *s, steerd_checkpoint_stats *out);

#endif /* STEERD_SERVER_H */

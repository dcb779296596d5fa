/* guard.h: what keeps one peer from hurting the others.
 *
 * - The bytes a peer has queued to it and not yet acknowledged, measured in
 *   ENet's own queues, so the server can drop a peer that does not read its
 *   socket before its backlog costs memory and time (ENet walks a peer's whole
 *   outgoing queue on every send pass: an unbounded queue is quadratic work).
 * - Half-open ENet handshakes (CONNECT received, never acknowledged), which
 *   hold ENet peers for up to 30 s, are reset after a short timeout and beyond
 *   a count.
 * - A log limiter, so that a flood of refusals costs a few lines, not one
 *   line per refusal.
 * - A byte bucket, so that one client's full snapshots of a big world cannot
 *   take the loop thread's time and the link from the others. */
#ifndef STEERD_GUARD_H
#define STEERD_GUARD_H

#include <enet/enet.h>
#include <stddef.h>
#include <stdint.h>

/* Memory a queued ENet command costs besides its payload. */
#define STEERD_GUARD_COMMAND_OVERHEAD ((size_t)sizeof(ENetOutgoingCommand))

/* Reliable bytes queued to the peer (payload plus STEERD_GUARD_COMMAND_OVERHEAD
 * per command) that it has not acknowledged: waiting to be sent, and sent but
 * not acknowledged. Unreliable packets (snapshots) leave at the next flush and
 * are not counted. O(commands queued). */
size_t steerd_guard_peer_queued(const ENetPeer *peer);

/* Peers in the handshake (ENet states CONNECTING .. CONNECTION_SUCCEEDED): a
 * CONNECT was received and the peer has not completed it. seen_ns has one
 * entry per host peer (host->peerCount), zeroed at start: when each handshake
 * was first seen. Resets (silently, as ENet would on its own much later)
 * handshakes older than timeout_ns, then the oldest beyond max_open. Returns
 * how many it reset. */
uint32_t steerd_guard_reap_handshakes(ENetHost *host, uint64_t *seen_ns, uint64_t now_ns, uint64_t timeout_ns,
                                      uint32_t max_open);

/* At most `burst` lines per window; the first line allowed after a window with
 * suppressed lines learns how many were suppressed. */
typedef struct steerd_loglimit {
  uint64_t window_ns;  /* window length */
  uint32_t burst;      /* lines per window */
  uint64_t start_ns;   /* current window */
  uint32_t lines;      /* allowed in it */
  uint64_t suppressed; /* not logged since the last line that reported them */
  uint64_t total_suppressed;
} steerd_loglimit;

void steerd_loglimit_init(steerd_loglimit *l, uint64_t window_ns, uint32_t burst);
/* 1 if a line may be logged now; *suppressed (may be NULL) then receives the
 * lines suppressed since the last one logged (and the count restarts). */
int steerd_loglimit_allow(steerd_loglimit *l, uint64_t now_ns, uint64_t *suppressed);

/* A token bucket of bytes that may go into debt: a whole message (a full
 * snapshot, all its parts) goes when the bucket is not in debt, and its bytes
 * are charged after. So the average is at most rate_bytes per second whatever
 * a message's size, and a message larger than a second's worth still goes,
 * only less often. Credit is capped at cap_bytes, so a quiet spell does not
 * buy a burst. Times in microseconds on any monotonic clock. */
typedef struct steerd_bytebucket {
  double tokens;    /* bytes: may go negative (debt) */
  uint64_t time_us; /* last refill; 0: never */
} steerd_bytebucket;

void steerd_bytebucket_init(steerd_bytebucket *b);
/* Refills for the time since the last call; 1 when a message may go now. */
int steerd_bytebucket_ready(steerd_bytebucket *b, uint64_t now_us, uint64_t rate_bytes, uint64_t cap_bytes);
void steerd_bytebucket_charge(steerd_bytebucket *b, uint64_t bytes);

#endif /* STEERD_GUARD_H */

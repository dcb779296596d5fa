/* guard.h: what keeps one peer from hurting the others (issue 15).
 *
 * - The bytes a peer has queued to it and not yet acknowledged, measured in
 *   ENet's own queues, so the server can drop a peer that does not read its
 *   socket before its backlog costs memory and time (ENet walks a peer's whole
 *   outgoing queue on every send pass: an unbounded queue is quadratic work).
 * - Half-open ENet handshakes (CONNECT received, never acknowledged), which
 *   hold ENet peers for up to 30 s, are reset after a short timeout and beyond
 *   a count.
 * - A log limiter, so that a flood of refusals costs a few lines, not one
 *   line per refusal. */
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
  uint64_t window_ns;   /* window length */
  uint32_t burst;       /* lines per window */
  uint64_t start_ns;    /* current window */
  uint32_t lines;       /* allowed in it */
  uint64_t suppressed;  /* not logged since the last line that reported them */
  uint64_t total_suppressed;
} steerd_loglimit;

void steerd_loglimit_init(steerd_loglimit *l, uint64_t window_ns, uint32_t burst);
/* 1 if a line may be logged now; *suppressed (may be NULL) then receives the
 * lines suppressed since the last one logged (and the count restarts). */
int steerd_loglimit_allow(steerd_loglimit *l, uint64_t now_ns, uint64_t *suppressed);

#endif /* STEERD_GUARD_H */

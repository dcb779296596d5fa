/* guard.c: see guard.h. */
#include "guard.h"

static size_t queued_in(const ENetList *list, int reliable_only) {
  size_t bytes = 0;
  for (ENetListIterator it = enet_list_begin(list); it != enet_list_end(list); it = enet_list_next(it)) {
    const ENetOutgoingCommand *oc = (const ENetOutgoingCommand *)it;
    if (reliable_only && !(oc->command.header.command & ENET_PROTOCOL_COMMAND_FLAG_ACKNOWLEDGE))
      continue;
    bytes += STEERD_GUARD_COMMAND_OVERHEAD + oc->fragmentLength;
  }
  return bytes;
}

size_t steerd_guard_peer_queued(const ENetPeer *peer) {
  /* enet_list_* take non-const lists; they only read here. */
  ENetPeer *p = (ENetPeer *)peer;
  return queued_in(&p->outgoingCommands, 1) + queued_in(&p->sentReliableCommands, 0);
}

static int in_handshake(const ENetPeer *p) {
  return p->state >= ENET_PEER_STATE_CONNECTING && p->state <= ENET_PEER_STATE_CONNECTION_SUCCEEDED;
}

uint32_t steerd_guard_reap_handshakes(ENetHost *host, uint64_t *seen_ns, uint64_t now_ns, uint64_t timeout_ns,
                                      uint32_t max_open) {
  uint32_t reset = 0, open = 0;
  for (size_t i = 0; i < host->peerCount; i++) {
    ENetPeer *p = &host->peers[i];
    if (!in_handshake(p)) {
      seen_ns[i] = 0;
      continue;
    }
    if (seen_ns[i] == 0)
      seen_ns[i] = now_ns;
    if (now_ns - seen_ns[i] >= timeout_ns) {
      enet_peer_reset(p);
      seen_ns[i] = 0;
      reset++;
      continue;
    }
    open++;
  }
  /* Over the count: the oldest go (a legitimate handshake completes within a
   * round trip, so it is the newest that are worth keeping). */
  while (open > max_open) {
    size_t oldest = host->peerCount;
    for (size_t i = 0; i < host->peerCount; i++)
      if (seen_ns[i] && in_handshake(&host->peers[i]) &&
          (oldest == host->peerCount || seen_ns[i] < seen_ns[oldest]))
        oldest = i;
    if (oldest == host->peerCount)
      break;
    enet_peer_reset(&host->peers[oldest]);
    seen_ns[oldest] = 0;
    reset++;
    open--;
  }
  return reset;
}

void steerd_loglimit_init(steerd_loglimit *l, uint64_t window_ns, uint32_t burst) {
  l->window_ns = window_ns;
  l->burst = burst;
  l->start_ns = 0;
  l->lines = 0;
  l->suppressed = 0;
  l->total_suppressed = 0;
}

int steerd_loglimit_allow(steerd_loglimit *l, uint64_t now_ns, uint64_t *suppressed) {
  if (l->start_ns == 0 || now_ns - l->start_ns >= l->window_ns) {
    l->start_ns = now_ns;
    l->lines = 0;
  }
  if (l->lines >= l->burst) {
    l->suppressed++;
    l->total_suppressed++;
    return 0;
  }
  l->lines++;
  if (suppressed)
    *suppressed = l->suppressed;
  l->suppressed = 0;
  return 1;
}

void steerd_bytebucket_init(steerd_bytebucket *b) {
  b->tokens = 0.0;
  b->time_us = 0;
}

int steerd_bytebucket_ready(steerd_bytebucket *b, uint64_t now_us, uint64_t rate_bytes, uint64_t cap_bytes) {
  if (b->time_us != 0 && now_us > b->time_us)
    b->tokens += (double)rate_bytes * (double)(now_us - b->time_us) / 1e6;
  if (b->time_us == 0 || now_us > b->time_us)
    b->time_us = now_us;
  if (b->tokens > (double)cap_bytes)
    b->tokens = (double)cap_bytes;
  return b->tokens >= 0.0;
}

void steerd_bytebucket_charge(steerd_bytebucket *b, uint64_t bytes) { b->tokens -= (double)bytes; }

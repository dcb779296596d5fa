/* raw_peer.h: a raw ENet peer for the integration tests, without the client
 * library: it sends what a test builds (HELLO as often as it likes, commands on
 * any flags), reads every packet as it comes and hands it to the test, and can
 * vanish without a word (an attacker's half-open handshake). The server runs on
 * 127.0.0.1 (steerd_proc.h). */
#ifndef STEERD_RAW_PEER_H
#define STEERD_RAW_PEER_H

#include <enet/enet.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

typedef struct steerd_raw_peer {
  ENetHost *host; /* NULL when closed */
  ENetPeer *peer;
  uint32_t next_request_id; /* the last one sent */
  int connected;            /* the ENet connection is up */
  int gone;                 /* the server disconnected it ... */
  uint32_t reason;          /* ... with this PROTO_DISCONNECT_* */
} steerd_raw_peer;

/* Called for every packet received: its channel and bytes and, for a message
 * on the reliable channel that decodes as a server message by itself (no
 * poses), that message; m is NULL for anything else. The bytes are valid only
 * during the call. */
typedef void (*steerd_raw_packet_fn)(void *user, uint8_t channel, const uint8_t *data, size_t len,
                                     const proto_server_msg *m);

/* Sends an ENet CONNECT to 127.0.0.1:port (flushed at once) and returns
 * without waiting for the answer: 0, or -1 (nothing is left open). */
int steerd_raw_open(steerd_raw_peer *r, uint16_t port);

/* steerd_raw_open, then services until the connection is up: 0, or -1 after
 * timeout_ms (the peer is closed). */
int steerd_raw_connect(steerd_raw_peer *r, uint16_t port, uint32_t timeout_ms);

/* Disconnects at once (a DISCONNECT is sent) and frees the host. */
void steerd_raw_close(steerd_raw_peer *r);

/* Frees the host without a word to the server: the peer just vanishes. */
void steerd_raw_drop(steerd_raw_peer *r);

/* Sets cmd->request_id to the next one, encodes cmd and sends it on the
 * reliable channel with ENet flags (ENET_PACKET_FLAG_RELIABLE or 0). Returns
 * the request id, or 0 when it did not encode or could not be queued. */
uint32_t steerd_raw_send(steerd_raw_peer *r, proto_command *cmd, uint32_t flags);

/* Sends n bytes as they are (a malformed command, say) on the reliable
 * channel with ENet flags: 0, or -1 when they could not be queued. */
int steerd_raw_send_bytes(steerd_raw_peer *r, const void *data, size_t n, uint32_t flags);

/* Handles what has arrived, waiting up to wait_ms for the first event only:
 * CONNECT and DISCONNECT set connected, gone and reason; every packet goes to
 * fn (may be NULL). Returns the number of events handled. */
int steerd_raw_pump(steerd_raw_peer *r, uint32_t wait_ms, steerd_raw_packet_fn fn, void *user);

/* Services for up to timeout_ms, every packet to fn (may be NULL), until the
 * reply (WELCOME, ACK or ERROR) to request_id comes: 0 with it in *out, or -1.
 * request_id 0 waits out the whole time. */
int steerd_raw_wait_reply(steerd_raw_peer *r, uint32_t request_id, uint32_t timeout_ms,
                          steerd_raw_packet_fn fn, void *user, proto_server_msg *out);

#endif

/* raw_peer.c: see raw_peer.h. */
#include "raw_peer.h"

#include <string.h>

#include "steerd_proc.h"

int steerd_raw_open(steerd_raw_peer *r, uint16_t port) {
  memset(r, 0, sizeof *r);
  r->host = enet_host_create(NULL, 1, PROTO_CHANNEL_COUNT, 0, 0);
  if (!r->host)
    return -1;
  ENetAddress addr;
  enet_address_set_host_ip(&addr, "127.0.0.1");
  addr.port = port;
  r->peer = enet_host_connect(r->host, &addr, PROTO_CHANNEL_COUNT, PROTO_VERSION);
  if (!r->peer) {
    steerd_raw_drop(r);
    return -1;
  }
  enet_host_flush(r->host);
  return 0;
}

int steerd_raw_connect(steerd_raw_peer *r, uint16_t port, uint32_t timeout_ms) {
  if (steerd_raw_open(r, port) != 0)
    return -1;
  uint64_t end = steerd_proc_now_ms() + timeout_ms;
  while (!r->connected && !r->gone && steerd_proc_now_ms() < end)
    steerd_raw_pump(r, 10, NULL, NULL);
  if (r->connected)
    return 0;
  steerd_raw_drop(r);
  return -1;
}

void steerd_raw_close(steerd_raw_peer *r) {
  if (r->host && r->peer)
    enet_peer_disconnect_now(r->peer, 0);
  steerd_raw_drop(r);
}

void steerd_raw_drop(steerd_raw_peer *r) {
  if (r->host)
    enet_host_destroy(r->host);
  r->host = NULL;
  r->peer = NULL;
  r->connected = 0;
}

int steerd_raw_send_bytes(steerd_raw_peer *r, const void *data, size_t n, uint32_t flags) {
  if (!r->peer)
    return -1;
  ENetPacket *p = enet_packet_create(data, n, flags);
  if (!p)
    return -1;
  if (enet_peer_send(r->peer, PROTO_CHANNEL_RELIABLE, p) != 0) {
    enet_packet_destroy(p);
    return -1;
  }
  return 0;
}

uint32_t steerd_raw_send(steerd_raw_peer *r, proto_command *cmd, uint32_t flags) {
  static uint8_t buf[PROTO_MAX_MESSAGE_BYTES]; /* tests are single-threaded */
  cmd->request_id = ++r->next_request_id;
  size_t n = proto_encode_command(buf, sizeof buf, cmd);
  return n > 0 && steerd_raw_send_bytes(r, buf, n, flags) == 0 ? cmd->request_id : 0;
}

/* One event: connect and disconnect noted, a packet handed on (and decoded
 * into *m, *decoded set, when it is a server message on the reliable channel). */
static void handle(steerd_raw_peer *r, ENetEvent *ev, steerd_raw_packet_fn fn, void *user,
                   proto_server_msg *m, int *decoded) {
  *decoded = 0;
  if (ev->type == ENET_EVENT_TYPE_CONNECT) {
    r->connected = 1;
  } else if (ev->type == ENET_EVENT_TYPE_DISCONNECT) {
    r->connected = 0;
    r->gone = 1;
    r->reason = ev->data;
  } else if (ev->type == ENET_EVENT_TYPE_RECEIVE) {
    const uint8_t *data = ev->packet->data;
    size_t len = ev->packet->dataLength;
    *decoded =
        ev->channelID == PROTO_CHANNEL_RELIABLE && proto_decode_server_msg(data, len, m, NULL, 0, NULL) == 0;
    if (fn)
      fn(user, ev->channelID, data, len, *decoded ? m : NULL);
    enet_packet_destroy(ev->packet);
  }
}

int steerd_raw_pump(steerd_raw_peer *r, uint32_t wait_ms, steerd_raw_packet_fn fn, void *user) {
  int n = 0, decoded;
  ENetEvent ev;
  proto_server_msg m;
  while (r->host && enet_host_service(r->host, &ev, wait_ms) > 0) {
    wait_ms = 0;
    handle(r, &ev, fn, user, &m, &decoded);
    n++;
  }
  return n;
}

static uint32_t reply_id(const proto_server_msg *m) {
  return m->type == PROTO_MSG_WELCOME ? m->welcome.request_id
         : m->type == PROTO_MSG_ACK   ? m->ack.request_id
         : m->type == PROTO_MSG_ERROR ? m->error.request_id
                                      : 0;
}

int steerd_raw_wait_reply(steerd_raw_peer *r, uint32_t request_id, uint32_t timeout_ms,
                          steerd_raw_packet_fn fn, void *user, proto_server_msg *out) {
  uint64_t end = steerd_proc_now_ms() + timeout_ms;
  ENetEvent ev;
  proto_server_msg m;
  int decoded;
  while (r->host && steerd_proc_now_ms() < end) {
    if (enet_host_service(r->host, &ev, 2) <= 0)
      continue;
    handle(r, &ev, fn, user, &m, &decoded);
    if (decoded && request_id != 0 && reply_id(&m) == request_id) {
      *out = m;
      return 0;
    }
  }
  return -1;
}

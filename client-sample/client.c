/* client.c: the steerd client library (see client.h).
 *
 * Every wait is a loop around pump(), which blocks in enet_host_service() for at
 * most the time left before the caller's deadline and then drains whatever else
 * ENet has ready. Received packets are decoded with the protocol library into
 * scratch storage inside the client; nothing allocates after create except the
 * ENet packets ENet itself needs. */
#include "client.h"

#include "delta.h"
#include "mapcopy.h"

#include <enet/enet.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A part never holds more agents than fit in one message: each pose takes at
 * least 6 msgpack bytes (six positive fixints). */
#define CLIENT_MAX_PART_POSES (PROTO_MAX_MESSAGE_BYTES / 6u + 1u)
/* Events handled per pump before returning, so a flood cannot hold a caller
 * past its deadline for long. */
#define CLIENT_DRAIN_MAX 4096
/* A MAP part's obstacles and points, at most: an obstacle takes at least 40
 * bytes, a point 11 (a circle's centre comes with more than that). */
#define CLIENT_MAP_PART_OBSTACLES (PROTO_MAP_PART_BYTES / 40u + 1u)
#define CLIENT_MAP_PART_POINTS    (PROTO_MAP_PART_BYTES / 10u + 1u)
/* PING echoes older than this are not believed. */
#define CLIENT_RTT_MAX_US 60000000ull

struct steerd_client {
  steerd_client_config cfg;
  char name[PROTO_MAX_NAME_BYTES + 1];
  char token[PROTO_MAX_TOKEN_BYTES + 1]; /* "" : none */
  ENetHost *host;
  ENetPeer *peer;
  steerd_client_state state;
  int hello_sent; /* ENet connected and HELLO sent */
  uint32_t hello_id;
  uint64_t connect_deadline_us;
  int connect_error;    /* why the connection attempt or the connection ended, 0 if it did not */
  int local_disconnect; /* we asked to disconnect: the reason stays 0 */
  int in_dispatch;      /* inside a callback: no re-entrant waits */
  uint32_t next_request_id;
  uint32_t disconnect_reason;
  int has_welcome;
  proto_welcome welcome;
  int has_last_error;
  proto_error_msg last_error;
  steerd_client_stats stats;

  /* The one blocking call in progress. */
  int wait_active;
  uint32_t wait_id;
  int wait_done;
  proto_server_msg wait_msg;

  /* Snapshot reassembly: the tick being assembled. */
  int fr_active;
  uint64_t fr_tick;
  uint64_t fr_time_us;
  uint32_t fr_part_count;
  uint32_t fr_total;
  uint32_t fr_parts_seen;
  uint32_t fr_count;
  int has_done_tick;
  uint64_t done_tick; /* newest tick delivered or abandoned; older parts are late */
  proto_pose *frame;  /* max_agents */
  uint32_t frame_cap;
  uint8_t *part_seen; /* bitmap of max_parts bits */
  uint32_t max_parts;
  int size_from_welcome; /* config.max_agents 0: frame, part_seen and delta are sized at WELCOME */

  steerd_delta *delta;     /* config.snapshots == DELTA */
  steerd_mapcopy *map;     /* the server's map (MAP, MAP_CHANGED); NULL when config.map_obstacles is 0 */
  proto_obstacle *map_obs; /* scratch of one MAP part: CLIENT_MAP_PART_OBSTACLES */
  proto_vec2 *map_points;  /* CLIENT_MAP_PART_POINTS */

  /* Scratch. */
  proto_pose *part_poses; /* CLIENT_MAX_PART_POSES */
  proto_server_msg msg;
  proto_event events[PROTO_EVENTS_MAX]; /* of one EVENTS message */
  proto_command cmd;
  uint8_t buf[PROTO_MAX_MESSAGE_BYTES];
};

/* ENet wants initialize/deinitialize around its use; they are no-ops on POSIX,
 * so a plain counter is enough (the library is single-threaded anyway). */
static int enet_users;

static const char *const error_names[STEERD_CLIENT_ERROR_COUNT] = {
    "OK",      "EINVAL", "ENOMEM", "ENET",      "ERESOLVE", "ETIMEDOUT", "ENOTCONN", "EDISCONNECTED",
    "EENCODE", "ESEND",  "EREPLY", "EPROTOCOL", "EBUSY",
};

static const char *const error_texts[STEERD_CLIENT_ERROR_COUNT] = {
    "success",
    "invalid argument",
    "out of memory",
    "ENet failure",
    "cannot resolve host",
    "timed out",
    "not connected",
    "disconnected",
    "command does not encode",
    "ENet refused the packet",
    "server replied with an error",
    "unexpected reply from the server",
    "busy (called from a callback, or already connected)",
};

const char *steerd_client_error_name(int code) {
  if (code > 0 || code <= -STEERD_CLIENT_ERROR_COUNT)
    return "UNKNOWN";
  return error_names[-code];
}

const char *steerd_client_strerror(int code) {
  if (code > 0 || code <= -STEERD_CLIENT_ERROR_COUNT)
    return "unknown error";
  return error_texts[-code];
}

uint64_t steerd_client_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Milliseconds left before deadline, rounded up so a wait never ends early. */
static uint32_t ms_until(uint64_t deadline_us) {
  uint64_t now = steerd_client_now_us();
  if (now >= deadline_us)
    return 0;
  uint64_t ms = (deadline_us - now + 999u) / 1000u;
  return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

steerd_client_config steerd_client_default_config(void) {
  steerd_client_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.name = "steerd-client";
  cfg.max_agents = STEERD_CLIENT_DEFAULT_AGENTS;
  cfg.connect_timeout_ms = 3000;
  cfg.map_obstacles = 4096;
  cfg.map_points = 65536;
  return cfg;
}

/* The snapshot buffers for worlds of up to n agents: at create, or at WELCOME
 * (config.max_agents 0) by the server's max_agents, replacing smaller ones. */
static int size_buffers(steerd_client *c, uint32_t n) {
  if (c->frame != NULL && c->frame_cap == n)
    return 0;
  proto_pose *frame = calloc(n, sizeof *frame);
  /* Empty parts are legal, so the part count is bounded by agents + 1. */
  uint8_t *seen = calloc(((size_t)n + 1u + 7u) / 8u, 1);
  steerd_delta *delta = NULL;
  if (frame != NULL && seen != NULL && c->cfg.snapshots == PROTO_SNAPSHOTS_DELTA) {
    steerd_delta_config dc = steerd_delta_default_config();
    dc.max_agents = n;
    if (c->cfg.delta_frames)
      dc.frames = c->cfg.delta_frames;
    delta = steerd_delta_create(&dc);
  }
  if (frame == NULL || seen == NULL || (c->cfg.snapshots == PROTO_SNAPSHOTS_DELTA && delta == NULL)) {
    free(frame);
    free(seen);
    steerd_delta_destroy(delta);
    return STEERD_CLIENT_ENOMEM;
  }
  free(c->frame);
  free(c->part_seen);
  steerd_delta_destroy(c->delta);
  c->frame = frame;
  c->frame_cap = n;
  c->part_seen = seen;
  c->max_parts = n + 1u;
  c->delta = delta;
  c->fr_active = 0;
  return 0;
}

steerd_client *steerd_client_create(const steerd_client_config *cfg) {
  if (cfg == NULL || cfg->max_agents > PROTO_MAX_AGENTS || cfg->snapshots >= PROTO_SNAPSHOTS_COUNT)
    return NULL;
  const char *name = cfg->name != NULL ? cfg->name : "";
  size_t name_len = strlen(name);
  if (name_len > PROTO_MAX_NAME_BYTES)
    return NULL;
  const char *token = cfg->token != NULL ? cfg->token : "";
  size_t token_len = strlen(token);
  if (token_len > PROTO_MAX_TOKEN_BYTES)
    return NULL;

  steerd_client *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  c->cfg = *cfg;
  memcpy(c->name, name, name_len + 1);
  c->cfg.name = c->name; /* the caller's string need not outlive create */
  memcpy(c->token, token, token_len + 1);
  c->cfg.token = c->token;
  c->next_request_id = 1;
  c->size_from_welcome = cfg->max_agents == 0;
  c->part_poses = calloc(CLIENT_MAX_PART_POSES, sizeof *c->part_poses);
  if (c->part_poses == NULL || (!c->size_from_welcome && size_buffers(c, cfg->max_agents) != 0))
    goto fail;
  c->map_obs = calloc(CLIENT_MAP_PART_OBSTACLES, sizeof *c->map_obs);
  c->map_points = calloc(CLIENT_MAP_PART_POINTS, sizeof *c->map_points);
  if (c->map_obs == NULL || c->map_points == NULL)
    goto fail;
  if (cfg->map_obstacles && (c->map = steerd_mapcopy_create(cfg->map_obstacles, cfg->map_points)) == NULL)
    goto fail;

  if (enet_users == 0 && enet_initialize() != 0)
    goto fail;
  enet_users++;
  c->host = enet_host_create(NULL, 1, PROTO_CHANNEL_COUNT, 0, 0);
  if (c->host == NULL) {
    steerd_client_destroy(c);
    return NULL;
  }
  return c;

fail:
  steerd_delta_destroy(c->delta);
  steerd_mapcopy_destroy(c->map);
  free(c->map_obs);
  free(c->map_points);
  free(c->frame);
  free(c->part_seen);
  free(c->part_poses);
  free(c);
  return NULL;
}

void steerd_client_destroy(steerd_client *c) {
  if (c == NULL)
    return;
  if (c->peer != NULL)
    enet_peer_disconnect_now(c->peer, PROTO_DISCONNECT_NONE);
  if (c->host != NULL)
    enet_host_destroy(c->host);
  steerd_delta_destroy(c->delta);
  steerd_mapcopy_destroy(c->map);
  free(c->map_obs);
  free(c->map_points);
  free(c->frame);
  free(c->part_seen);
  free(c->part_poses);
  free(c);
  if (--enet_users == 0)
    enet_deinitialize();
}

static int send_command(steerd_client *c, const proto_command *cmd, uint32_t *request_id);

/* Ends a connection attempt (or the connection) from our side. */
static void connect_fail(steerd_client *c, int code) {
  if (c->peer != NULL) {
    enet_peer_disconnect_now(c->peer, PROTO_DISCONNECT_NONE);
    c->peer = NULL;
  }
  c->state = STEERD_CLIENT_DISCONNECTED;
  c->connect_error = code;
}

static void send_hello(steerd_client *c) {
  proto_command *hello = &c->cmd;
  memset(hello, 0, sizeof *hello);
  hello->type = PROTO_MSG_HELLO;
  hello->hello.version = PROTO_VERSION;
  memcpy(hello->hello.name, c->name, sizeof c->name);
  if (c->token[0] != '\0') {
    hello->hello.has_token = 1;
    memcpy(hello->hello.token, c->token, sizeof c->token);
  }
  if (c->cfg.snapshots == PROTO_SNAPSHOTS_DELTA) {
    hello->hello.has_snapshots = 1;
    hello->hello.snapshots = PROTO_SNAPSHOTS_DELTA;
  }
  int r = send_command(c, hello, &c->hello_id);
  if (r < 0)
    connect_fail(c, r);
  else
    c->hello_sent = 1;
}

/* ---- Receiving ------------------------------------------------------------ */

static void frame_abandon(steerd_client *c) {
  c->stats.frames_incomplete++;
  c->fr_active = 0;
  c->has_done_tick = 1;
  c->done_tick = c->fr_tick;
}

static void frame_start(steerd_client *c, const proto_snapshot_header *h) {
  c->fr_active = 1;
  c->fr_tick = h->tick;
  c->fr_time_us = h->server_time_us;
  c->fr_part_count = h->part_count;
  c->fr_total = h->agent_total;
  c->fr_parts_seen = 0;
  c->fr_count = 0;
  if (h->part_count <= c->max_parts)
    memset(c->part_seen, 0, (h->part_count + 7u) / 8u);
}

static void frame_deliver(steerd_client *c) {
  c->stats.frames_complete++;
  c->fr_active = 0;
  c->has_done_tick = 1;
  c->done_tick = c->fr_tick;
  if (c->cfg.callbacks.on_snapshot_frame != NULL) {
    steerd_client_frame f = {c->fr_tick, c->fr_time_us, c->fr_part_count, c->fr_count, c->frame};
    c->in_dispatch = 1;
    c->cfg.callbacks.on_snapshot_frame(c->cfg.user, &f);
    c->in_dispatch = 0;
  }
}

/* One snapshot part: add it to its tick's frame, deliver the frame when every
 * part is in. Parts travel unreliable+sequenced, so a newer tick means the
 * older one's missing parts are lost for good. */
static void handle_snapshot(steerd_client *c, const proto_snapshot *s) {
  const proto_snapshot_header *h = &s->header;
  if (h->part_count == 0 || h->part_index >= h->part_count || s->count > h->agent_total) {
    c->stats.bad_packets++;
    return;
  }
  c->stats.snapshot_parts++;
  if (c->frame == NULL) {
    c->stats.parts_dropped++; /* before WELCOME sized the buffers */
    return;
  }
  if ((c->has_done_tick && h->tick <= c->done_tick) || (c->fr_active && h->tick < c->fr_tick)) {
    c->stats.parts_dropped++; /* late part of a finished or abandoned tick */
    return;
  }
  if (!c->fr_active || h->tick > c->fr_tick) {
    if (c->fr_active)
      frame_abandon(c);
    frame_start(c, h);
    if (h->agent_total > c->frame_cap || h->part_count > c->max_parts) {
      c->stats.frames_overflow++;
      c->stats.parts_dropped++;
      frame_abandon(c);
      return;
    }
  }
  if (h->part_count != c->fr_part_count || h->agent_total != c->fr_total ||
      c->fr_count + s->count > c->fr_total) {
    c->stats.parts_dropped++; /* parts disagree: the frame cannot be trusted */
    frame_abandon(c);
    return;
  }
  uint8_t bit = (uint8_t)(1u << (h->part_index & 7u));
  if (c->part_seen[h->part_index / 8u] & bit) {
    c->stats.parts_dropped++; /* duplicate */
    return;
  }
  c->part_seen[h->part_index / 8u] |= bit;
  if (s->count > 0)
    memcpy(c->frame + c->fr_count, s->poses, s->count * sizeof *s->poses);
  c->fr_count += s->count;
  c->fr_parts_seen++;
  if (c->fr_parts_seen == c->fr_part_count) {
    if (c->fr_count == c->fr_total)
      frame_deliver(c);
    else
      frame_abandon(c);
  }
}

static void update_rtt(steerd_client *c, const proto_pong *pong) {
  uint64_t now = steerd_client_now_us();
  if (pong->client_time_us == 0 || pong->client_time_us > now ||
      now - pong->client_time_us > CLIENT_RTT_MAX_US)
    return; /* not an echo of our clock */
  uint64_t rtt = now - pong->client_time_us;
  steerd_client_stats *st = &c->stats;
  st->rtt_last_us = rtt;
  st->rtt_sum_us += rtt;
  st->rtt_smoothed_us =
      st->pings == 0 ? (double)rtt : st->rtt_smoothed_us + ((double)rtt - st->rtt_smoothed_us) / 8.0;
  if (st->pings == 0 || rtt <= st->rtt_min_us) {
    /* The lowest-RTT sample bounds the offset error best: assume the server
     * read its clock halfway through the round trip. */
    st->rtt_min_us = rtt;
    st->clock_offset_us = (int64_t)pong->server_time_us - (int64_t)(pong->client_time_us + rtt / 2u);
  }
  st->pings++;
}

static void handle_reply(steerd_client *c, const proto_server_msg *m) {
  uint32_t id;
  if (m->type == PROTO_MSG_ACK) {
    c->stats.acks++;
    id = m->ack.request_id;
    if (m->ack.command == PROTO_MSG_PING)
      update_rtt(c, &m->ack.pong);
  } else {
    c->stats.errors++;
    id = m->error.request_id;
    if (c->state == STEERD_CLIENT_CONNECTING && c->hello_sent && id == c->hello_id) {
      c->last_error = m->error;
      c->has_last_error = 1;
      connect_fail(c, STEERD_CLIENT_EREPLY); /* e.g. VERSION_MISMATCH */
      return;
    }
  }
  if (c->wait_active && !c->wait_done && id == c->wait_id) {
    c->wait_msg = *m;
    c->wait_done = 1;
    if (m->type == PROTO_MSG_ERROR) {
      c->last_error = m->error;
      c->has_last_error = 1;
    }
    return;
  }
  if (c->cfg.callbacks.on_reply != NULL) {
    c->in_dispatch = 1;
    c->cfg.callbacks.on_reply(c->cfg.user, m);
    c->in_dispatch = 0;
  }
}

/* One DELTA part: a frame that completes is acknowledged, then delivered like a
 * full one (every agent in view, dead reckoned to the frame's time). */
static void handle_delta(steerd_client *c, const uint8_t *data, size_t len) {
  if (c->cfg.snapshots != PROTO_SNAPSHOTS_DELTA) {
    c->stats.bad_packets++; /* we did not ask for deltas */
    return;
  }
  if (c->delta == NULL) {
    c->stats.parts_dropped++; /* before WELCOME sized the buffers: unacknowledged, the server resends */
    return;
  }
  uint64_t tick = 0;
  int r = steerd_delta_receive(c->delta, data, len, &tick);
  if (r == STEERD_DELTA_EDECODE) {
    c->stats.bad_packets++;
    return;
  }
  c->stats.snapshot_bytes += len;
  if (len > c->stats.snapshot_part_max_bytes)
    c->stats.snapshot_part_max_bytes = len;
  c->stats.snapshot_parts++;
  if (r == STEERD_DELTA_ELATE)
    c->stats.parts_dropped++;
  if (r == STEERD_DELTA_ENOBASE)
    c->stats.delta_no_base++;
  if (r == STEERD_DELTA_EBADFRAME || r == STEERD_DELTA_EOVERFLOW)
    c->stats.delta_bad++;
  if (r < 0 && r != STEERD_DELTA_ELATE)
    c->stats.frames_incomplete++;
  if (r != 1)
    return;
  uint8_t ack[16 + 9 * PROTO_ACK_MAX_MERGED];
  size_t n = proto_encode_snapshot_ack(ack, sizeof ack, steerd_delta_ack(c->delta));
  ENetPacket *p = c->peer != NULL && n > 0 ? enet_packet_create(ack, n, 0) : NULL;
  if (p != NULL && enet_peer_send(c->peer, PROTO_CHANNEL_SNAPSHOT, p) != 0)
    enet_packet_destroy(p);
  else if (p != NULL) {
    c->stats.delta_acks_sent++;
    enet_host_flush(c->host);
  }
  uint64_t time_us = 0;
  steerd_delta_frame(c->delta, NULL, NULL, &time_us);
  uint32_t count = steerd_delta_poses(c->delta, c->frame, c->frame_cap);
  c->stats.frames_complete++;
  c->has_done_tick = 1;
  c->done_tick = tick;
  if (c->cfg.callbacks.on_snapshot_frame != NULL) {
    steerd_client_frame f = {tick, time_us, 1, count, c->frame};
    c->in_dispatch = 1;
    c->cfg.callbacks.on_snapshot_frame(c->cfg.user, &f);
    c->in_dispatch = 0;
  }
}

static void deliver_event(steerd_client *c, const proto_event *e) {
  c->stats.events++;
  if (c->cfg.callbacks.on_event != NULL) {
    c->in_dispatch = 1;
    c->cfg.callbacks.on_event(c->cfg.user, e);
    c->in_dispatch = 0;
  }
}

/* EVENTS: each event as if it came alone; `lost` events the server dropped
 * (we were behind) are counted: the snapshots tell what they would have. */
static void handle_events(steerd_client *c, const uint8_t *data, size_t len) {
  uint32_t lost, n;
  if (len > PROTO_MAX_MESSAGE_BYTES ||
      proto_decode_events(data, len, &lost, c->events, PROTO_EVENTS_MAX, &n, NULL) != 0) {
    c->stats.bad_packets++;
    return;
  }
  c->stats.events_lost += lost;
  for (uint32_t i = 0; i < n && c->state != STEERD_CLIENT_DISCONNECTED; i++)
    deliver_event(c, &c->events[i]);
}

/* MAP and MAP_CHANGED (PROTOCOL.md 17): into the copy of the map, if kept. */
static void handle_map(steerd_client *c, uint32_t type, const uint8_t *data, size_t len) {
  steerd_mapcopy_result res;
  proto_map_changed mc;
  uint32_t removed[PROTO_MAP_CHANGED_MAX]; /* mc.removed points here until on_map returns */
  if (type == PROTO_MSG_MAP) {
    proto_map_header h;
    uint32_t n;
    if (proto_decode_map(data, len, &h, c->map_obs, CLIENT_MAP_PART_OBSTACLES, &n, c->map_points,
                         CLIENT_MAP_PART_POINTS, NULL) != 0) {
      c->stats.bad_packets++;
      return;
    }
    c->stats.map_parts++;
    if (c->map == NULL)
      return;
    res = steerd_mapcopy_part(c->map, &h, c->map_obs, n);
  } else {
    if (proto_decode_map_changed(data, len, &mc, removed, c->map_obs, c->map_points, CLIENT_MAP_PART_POINTS,
                                 NULL) != 0) {
      c->stats.bad_packets++;
      return;
    }
    c->stats.map_changes++;
    if (c->map == NULL)
      return;
    res = steerd_mapcopy_changed(c->map, &mc);
  }
  if (res == STEERD_MAPCOPY_GAP)
    c->stats.map_gaps++;
  else if (res == STEERD_MAPCOPY_OVERFLOW)
    c->stats.map_overflows++;
  else if (res == STEERD_MAPCOPY_BAD)
    c->stats.bad_packets++;
  if ((res == STEERD_MAPCOPY_COMPLETE || res == STEERD_MAPCOPY_CHANGED) && c->cfg.callbacks.on_map != NULL) {
    c->in_dispatch = 1;
    c->cfg.callbacks.on_map(c->cfg.user, c->map, res == STEERD_MAPCOPY_CHANGED ? &mc : NULL);
    c->in_dispatch = 0;
  }
}

static void handle_packet(steerd_client *c, const uint8_t *data, size_t len) {
  c->stats.packets_received++;
  c->stats.bytes_received += len;
  uint32_t type = proto_message_type(data, len);
  if (type == PROTO_MSG_MAP || type == PROTO_MSG_MAP_CHANGED) {
    handle_map(c, type, data, len);
    return;
  }
  if (proto_message_type(data, len) == PROTO_MSG_DELTA) {
    handle_delta(c, data, len);
    return;
  }
  if (proto_message_type(data, len) == PROTO_MSG_EVENTS) {
    handle_events(c, data, len);
    return;
  }
  proto_server_msg *m = &c->msg;
  if (len > PROTO_MAX_MESSAGE_BYTES ||
      proto_decode_server_msg(data, len, m, c->part_poses, CLIENT_MAX_PART_POSES, NULL) != 0) {
    c->stats.bad_packets++;
    return;
  }
  switch (m->type) {
  case PROTO_MSG_WELCOME:
    if (c->state != STEERD_CLIENT_CONNECTING || !c->hello_sent) {
      c->stats.bad_packets++; /* unasked-for WELCOME */
      return;
    }
    if (m->welcome.protocol != PROTO_VERSION) {
      connect_fail(c, STEERD_CLIENT_EPROTOCOL);
      return;
    }
    if (c->size_from_welcome) {
      uint32_t n = m->welcome.max_agents ? m->welcome.max_agents : STEERD_CLIENT_DEFAULT_AGENTS;
      if (n > PROTO_MAX_AGENTS)
        n = PROTO_MAX_AGENTS;
      if (size_buffers(c, n) != 0) {
        connect_fail(c, STEERD_CLIENT_ENOMEM);
        return;
      }
    }
    c->welcome = m->welcome;
    c->has_welcome = 1;
    c->state = STEERD_CLIENT_WELCOMED;
    return;
  case PROTO_MSG_ACK:
  case PROTO_MSG_ERROR:
    handle_reply(c, m);
    return;
  case PROTO_MSG_EVENT:
    deliver_event(c, &m->event);
    return;
  case PROTO_MSG_SNAPSHOT:
    c->stats.snapshot_bytes += len;
    if (len > c->stats.snapshot_part_max_bytes)
      c->stats.snapshot_part_max_bytes = len;
    handle_snapshot(c, &m->snapshot);
    return;
  default:
    c->stats.bad_packets++;
    return;
  }
}

static void handle_disconnect(steerd_client *c, uint32_t data) {
  c->peer = NULL; /* ENet has reset it */
  if (c->state == STEERD_CLIENT_CONNECTING)
    c->connect_error = STEERD_CLIENT_EDISCONNECTED; /* refused: full, wrong version, ... */
  c->state = STEERD_CLIENT_DISCONNECTED;
  c->disconnect_reason = c->local_disconnect ? PROTO_DISCONNECT_NONE : data;
  if (c->cfg.callbacks.on_disconnect != NULL) {
    c->in_dispatch = 1;
    c->cfg.callbacks.on_disconnect(c->cfg.user, c->disconnect_reason);
    c->in_dispatch = 0;
  }
}

/* Returns 1 if the event was a message or a state change, 0 if not. */
static int handle_event(steerd_client *c, ENetEvent *ev) {
  switch (ev->type) {
  case ENET_EVENT_TYPE_CONNECT:
    if (ev->peer == c->peer && c->state == STEERD_CLIENT_CONNECTING && !c->hello_sent)
      send_hello(c);
    return 1;
  case ENET_EVENT_TYPE_DISCONNECT:
    if (ev->peer == c->peer)
      handle_disconnect(c, ev->data);
    return 1;
  case ENET_EVENT_TYPE_RECEIVE:
    handle_packet(c, ev->packet->data, ev->packet->dataLength);
    enet_packet_destroy(ev->packet);
    return 1;
  case ENET_EVENT_TYPE_NONE:
  default:
    return 0;
  }
}

/* Blocks up to timeout_ms for the first event, then drains the ready ones. */
static int pump(steerd_client *c, uint32_t timeout_ms) {
  ENetEvent ev;
  int handled = 0;
  int r = enet_host_service(c->host, &ev, timeout_ms);
  while (r > 0) {
    handled += handle_event(c, &ev);
    if (handled >= CLIENT_DRAIN_MAX || c->state == STEERD_CLIENT_DISCONNECTED)
      break;
    r = enet_host_service(c->host, &ev, 0);
  }
  return r < 0 ? STEERD_CLIENT_ENET : handled;
}

/* Pumps until *flag is set, the connection ends or the deadline passes. */
static int wait_for(steerd_client *c, uint64_t deadline_us, const int *flag) {
  for (;;) {
    if (*flag)
      return 0;
    if (c->state == STEERD_CLIENT_DISCONNECTED)
      return STEERD_CLIENT_EDISCONNECTED;
    uint32_t left = ms_until(deadline_us);
    if (left == 0)
      return STEERD_CLIENT_ETIMEDOUT;
    int r = pump(c, left);
    if (r < 0)
      return r;
  }
}

/* ---- Sending -------------------------------------------------------------- */

static int send_command(steerd_client *c, const proto_command *cmd, uint32_t *request_id) {
  if (cmd != &c->cmd)
    memcpy(&c->cmd, cmd, sizeof c->cmd);
  c->cmd.request_id = c->next_request_id++;
  if (c->next_request_id == 0)
    c->next_request_id = 1; /* 0 means "unknown" in ERROR */
  if (c->cmd.type == PROTO_MSG_PING)
    c->cmd.ping.client_time_us = steerd_client_now_us();
  size_t n = proto_encode_command(c->buf, sizeof c->buf, &c->cmd);
  if (n == 0)
    return STEERD_CLIENT_EENCODE;
  ENetPacket *p = enet_packet_create(c->buf, n, ENET_PACKET_FLAG_RELIABLE);
  if (p == NULL)
    return STEERD_CLIENT_ENOMEM;
  if (enet_peer_send(c->peer, PROTO_CHANNEL_RELIABLE, p) != 0) {
    enet_packet_destroy(p);
    return STEERD_CLIENT_ESEND;
  }
  enet_host_flush(c->host); /* commands go out now, not at the next service */
  c->stats.commands_sent++;
  if (request_id != NULL)
    *request_id = c->cmd.request_id;
  return 0;
}

static int state_error(const steerd_client *c) {
  if (c->state == STEERD_CLIENT_DISCONNECTED)
    return STEERD_CLIENT_EDISCONNECTED;
  if (c->state != STEERD_CLIENT_WELCOMED)
    return STEERD_CLIENT_ENOTCONN;
  return 0;
}

int steerd_client_send(steerd_client *c, const proto_command *cmd, uint32_t *request_id) {
  if (c == NULL || cmd == NULL || cmd->type == PROTO_MSG_HELLO || !PROTO_MSG_IS_COMMAND(cmd->type))
    return STEERD_CLIENT_EINVAL;
  int r = state_error(c);
  if (r < 0)
    return r;
  return send_command(c, cmd, request_id);
}

int steerd_client_command_wait(steerd_client *c, const proto_command *cmd, uint32_t timeout_ms,
                               proto_server_msg *reply) {
  if (c == NULL)
    return STEERD_CLIENT_EINVAL;
  if (c->in_dispatch || c->wait_active)
    return STEERD_CLIENT_EBUSY;
  uint64_t deadline = steerd_client_now_us() + (uint64_t)timeout_ms * 1000u;
  uint32_t id;
  int r = steerd_client_send(c, cmd, &id);
  if (r < 0)
    return r;
  c->wait_active = 1;
  c->wait_done = 0;
  c->wait_id = id;
  r = wait_for(c, deadline, &c->wait_done);
  c->wait_active = 0;
  if (r < 0)
    return r;
  if (reply != NULL)
    *reply = c->wait_msg;
  return c->wait_msg.type == PROTO_MSG_ERROR ? STEERD_CLIENT_EREPLY : 0;
}

int steerd_client_ping(steerd_client *c, uint32_t timeout_ms, uint64_t *rtt_us) {
  if (c == NULL)
    return STEERD_CLIENT_EINVAL;
  proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_PING;
  proto_server_msg reply;
  int r = steerd_client_command_wait(c, &cmd, timeout_ms, &reply);
  if (r < 0)
    return r;
  if (reply.ack.command != PROTO_MSG_PING)
    return STEERD_CLIENT_EPROTOCOL;
  if (rtt_us != NULL) {
    uint64_t now = steerd_client_now_us();
    uint64_t sent = reply.ack.pong.client_time_us;
    *rtt_us = sent <= now ? now - sent : 0;
  }
  return 0;
}

/* ---- Connection ----------------------------------------------------------- */

int steerd_client_connect_start(steerd_client *c, const char *host, uint16_t port) {
  if (c == NULL || host == NULL || port == 0)
    return STEERD_CLIENT_EINVAL;
  if (c->in_dispatch || c->state != STEERD_CLIENT_IDLE)
    return STEERD_CLIENT_EBUSY;
  ENetAddress addr;
  if (enet_address_set_host(&addr, host) != 0)
    return STEERD_CLIENT_ERESOLVE;
  addr.port = port;
  c->peer = enet_host_connect(c->host, &addr, PROTO_CHANNEL_COUNT, PROTO_VERSION);
  if (c->peer == NULL)
    return STEERD_CLIENT_ENET;
  c->connect_deadline_us = steerd_client_now_us() + (uint64_t)c->cfg.connect_timeout_ms * 1000u;
  c->state = STEERD_CLIENT_CONNECTING;
  return 0;
}

/* The connect deadline passed: give up (one connection per client). */
static void check_connect_deadline(steerd_client *c) {
  if (c->state == STEERD_CLIENT_CONNECTING && steerd_client_now_us() >= c->connect_deadline_us)
    connect_fail(c, STEERD_CLIENT_ETIMEDOUT);
}

static int ended_error(const steerd_client *c) {
  return c->connect_error != 0 ? c->connect_error : STEERD_CLIENT_EDISCONNECTED;
}

int steerd_client_connect(steerd_client *c, const char *host, uint16_t port) {
  int r = steerd_client_connect_start(c, host, port);
  if (r < 0)
    return r;
  while (c->state == STEERD_CLIENT_CONNECTING) {
    uint32_t left = ms_until(c->connect_deadline_us);
    r = left > 0 ? pump(c, left) : 0;
    if (r < 0)
      connect_fail(c, r);
    check_connect_deadline(c);
  }
  return c->state == STEERD_CLIENT_WELCOMED ? 0 : ended_error(c);
}

int steerd_client_disconnect(steerd_client *c, uint32_t timeout_ms) {
  if (c == NULL)
    return STEERD_CLIENT_EINVAL;
  if (c->in_dispatch)
    return STEERD_CLIENT_EBUSY;
  if (c->state != STEERD_CLIENT_WELCOMED || c->peer == NULL)
    return state_error(c) == 0 ? STEERD_CLIENT_ENOTCONN : state_error(c);
  uint64_t deadline = steerd_client_now_us() + (uint64_t)timeout_ms * 1000u;
  c->local_disconnect = 1;
  enet_peer_disconnect(c->peer, PROTO_DISCONNECT_NONE);
  int never = 0;
  int r = wait_for(c, deadline, &never);
  if (r == STEERD_CLIENT_EDISCONNECTED)
    return 0;
  if (c->peer != NULL) {
    enet_peer_reset(c->peer); /* the server did not confirm in time */
    c->peer = NULL;
  }
  c->state = STEERD_CLIENT_DISCONNECTED;
  return r == STEERD_CLIENT_ETIMEDOUT ? 0 : r;
}

int steerd_client_service(steerd_client *c, uint32_t timeout_ms) {
  if (c == NULL)
    return STEERD_CLIENT_EINVAL;
  if (c->in_dispatch)
    return STEERD_CLIENT_EBUSY;
  if (c->state == STEERD_CLIENT_IDLE)
    return STEERD_CLIENT_ENOTCONN;
  if (c->state == STEERD_CLIENT_DISCONNECTED)
    return ended_error(c);
  if (c->state == STEERD_CLIENT_CONNECTING) {
    uint32_t left = ms_until(c->connect_deadline_us);
    if (timeout_ms > left)
      timeout_ms = left;
  }
  int r = pump(c, timeout_ms);
  if (r < 0 && c->state == STEERD_CLIENT_CONNECTING)
    connect_fail(c, r);
  check_connect_deadline(c);
  if (c->state == STEERD_CLIENT_DISCONNECTED)
    return ended_error(c);
  return r;
}

/* ---- Getters -------------------------------------------------------------- */

int steerd_client_fd(const steerd_client *c) {
  return c != NULL && c->host != NULL ? (int)c->host->socket : -1;
}

steerd_client_state steerd_client_get_state(const steerd_client *c) {
  return c != NULL ? c->state : STEERD_CLIENT_DISCONNECTED;
}

const proto_welcome *steerd_client_welcome(const steerd_client *c) {
  return c != NULL && c->has_welcome ? &c->welcome : NULL;
}

uint32_t steerd_client_max_agents(const steerd_client *c) { return c->frame != NULL ? c->frame_cap : 0; }

void steerd_client_get_stats(const steerd_client *c, steerd_client_stats *out) {
  if (c == NULL || out == NULL)
    return;
  *out = c->stats;
  out->enet_rtt_ms = c->peer != NULL ? c->peer->roundTripTime : 0;
}

const steerd_mapcopy *steerd_client_map(const steerd_client *c) { return c->map; }

uint32_t steerd_client_disconnect_reason(const steerd_client *c) {
  return c != NULL ? c->disconnect_reason : 0;
}

const proto_error_msg *steerd_client_last_error(const steerd_client *c) {
  return c != NULL && c->has_last_error ? &c->last_error : NULL;
}

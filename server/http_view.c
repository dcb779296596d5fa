/* http_view.c: the live view's WebSocket (subprotocol "steerd-view").
 *
 * A browser speaks the game protocol over it, one msgpack message per binary
 * WebSocket message (PROTOCOL.md 15): HELLO (with an observer token when the
 * server has a secret), then VIEW, QUERY and PING; the server answers with
 * WELCOME, ACK and ERROR, sends the EVENTs of agents in the view, and sends a
 * SNAPSHOT of the agents in the view each time the game clients get one, with
 * the same encoder and the same part size. The view is read-only: commands
 * that change the world are FORBIDDEN.
 *
 * A snapshot's parts are up to 16384 bytes here (the ENet ones 1200: no MTU
 * over TCP), and the whole-world frame is encoded once per snapshot for every
 * view that shows the whole world.
 *
 * The map goes to each view as one text (JSON) message: after WELCOME, and
 * again whole (encoded once for all views) at the first snapshot after any
 * change, so the page draws the walls under the agents without asking. A map
 * too large for a message names /api/map instead.
 *
 * Each view has a queue of messages on their way out; libwebsockets writes one
 * per writable callback. A view whose previous snapshot is still queued skips
 * the next (a slow browser sees fewer frames and never slows the tick); a view
 * whose queue overflows with replies is closed. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "http_internal.h"
#include "wire_core.h"
#include "log.h"

#define VIEW_QUEUE_BYTES (1024 * 1024) /* a 10 000-agent snapshot is ~300 KB */
/* Before each queued message: its kind byte and u32 length, in the LWS_PRE
 * bytes libwebsockets may write its framing into, so it is sent in place. */
#define VIEW_MSG_HEADER       LWS_PRE
#define VIEW_GARBAGE_LIMIT    20          /* undecodable messages before the view is closed */
#define VIEW_ID_BASE          0x80000000u /* WELCOME client_id of views: never an agent owner */
#define VIEW_PART_BYTES       PROTO_MAX_MESSAGE_BYTES
#define VIEW_MAP_MAX_BYTES    (VIEW_QUEUE_BYTES / 2) /* a larger map message names /api/map instead */
#define VIEW_MARKS_PER_SECOND 20                     /* STUCK and UNREACHABLE of agents not inspected */
#define VIEW_EDITS_PER_SECOND 20                     /* an admin view's commands: a person's clicks */
/* The agents message: once a second, at most VIEW_AGENTS_MAX agents of at
 * most VIEW_AGENT_JSON bytes each (`,[id,radius,"velocity_match",owner]`),
 * so it and a snapshot fit a view's queue together. */
#define VIEW_AGENTS_PERIOD_US 1000000u
#define VIEW_AGENTS_MAX       4000u
#define VIEW_AGENT_JSON       64u
#define VIEW_AGENTS_BYTES     ((size_t)VIEW_AGENTS_MAX * VIEW_AGENT_JSON + 128u)

/* The ticks message: at most VIEW_TICKS_MAX periods (the newest; as many
 * as the page graphs), each at most 7 numbers of at most 20 digits and
 * their separators. */
#define VIEW_TICKS_MAX   128u
#define VIEW_TICKS_BYTES (160u + VIEW_TICKS_MAX * (3u + 7u * 21u))

/* MSG_TEXT: a reply sent as a text frame (the map's, the agents' and the ticks' JSON). */
enum { MSG_REPLY = 0, MSG_SNAPSHOT = 1, MSG_TEXT = 2 };

/* What a view was given in the loop's current second, of a per-second limit. */
typedef struct view_allowance {
  uint64_t second;
  uint32_t used;
} view_allowance;

/* 1 (and counted) while a's second has room under limit; a new second starts at 0. */
static int per_second(view_allowance *a, uint64_t second, uint32_t limit) {
  if (second != a->second) {
    a->second = second;
    a->used = 0;
  }
  if (a->used >= limit)
    return 0;
  a->used++;
  return 1;
}

struct http_view {
  struct lws *wsi; /* NULL: slot free */
  uint32_t id;
  int welcomed;
  int closing;    /* close once the queue is written (after an ERROR that ends the session) */
  int close_sent; /* the close frame is out: waiting for the peer's */
  proto_view view;
  steer_id inspected;   /* the agent of the last QUERY: its EVENTs come to the view */
  view_allowance marks; /* STUCK and UNREACHABLE EVENTs of other agents sent this second */
  uint32_t garbage;
  uint8_t *queue; /* VIEW_QUEUE_BYTES */
  size_t head, tail;
  uint32_t snapshot_msgs; /* snapshot parts still queued */
  uint8_t *rx;            /* PROTO_MAX_MESSAGE_BYTES: a message arriving in fragments */
  size_t rx_len;
  int rx_too_large;
  int map_sent; /* the map message of map_version is queued */
  uint32_t map_version;
  uint64_t agents_due_us; /* server time of its next agents message (0: with the next snapshot) */
  uint64_t ticks_sent;    /* the last tick whose period a ticks message carried */
  int role;               /* steerd_role: an admin view may send the admin's commands */
  view_allowance edits;   /* admin commands run this second */
};

static uint32_t next_view_id = VIEW_ID_BASE + 1;

int steerd_http_views_init(steerd_http_views *v, const steerd_config *cfg, uint32_t max_agents) {
  memset(v, 0, sizeof(*v));
  v->slots = calloc(STEERD_HTTP_MAX_VIEWS, sizeof(*v->slots));
  v->indices = calloc(max_agents ? max_agents : 1, sizeof(*v->indices));
  v->part_first = calloc((size_t)max_agents + 2, sizeof(*v->part_first));
  v->scratch = malloc(LWS_PRE + PROTO_MAX_MESSAGE_BYTES);
  v->part_len = calloc((size_t)max_agents + 2, sizeof(*v->part_len));
  /* Every agent at its largest, and a header per part (a part holds >= 500 agents). */
  v->frame_cap = (size_t)max_agents * PROTO_SNAPSHOT_AGENT_MAX_BYTES +
                 ((size_t)max_agents / 500 + 2) * PROTO_SNAPSHOT_HEADER_MAX_BYTES;
  v->frame = malloc(v->frame_cap);
  v->frame_tick = UINT64_MAX;
  v->agents_text = malloc(VIEW_AGENTS_BYTES);
  v->agents_tick = UINT64_MAX;
  if (!v->agents_text || !v->slots || !v->indices || !v->part_first || !v->scratch || !v->part_len ||
      !v->frame)
    return -1;
  if (cfg->secret_len > 0) {
    if (steerd_auth_init(&v->auth, cfg->secret, cfg->secret_len) != STEERD_AUTH_OK)
      return -1;
    v->auth_on = 1;
  }
  return 0;
}

void steerd_http_views_free(steerd_http_views *v) {
  if (v->slots)
    for (uint32_t i = 0; i < STEERD_HTTP_MAX_VIEWS; i++) {
      free(v->slots[i].queue);
      free(v->slots[i].rx);
    }
  free(v->slots);
  free(v->indices);
  free(v->part_first);
  free(v->scratch);
  free(v->part_len);
  free(v->frame);
  free(v->map_text);
  free(v->agents_text);
  memset(v, 0, sizeof(*v));
}

/* ---- the queue ------------------------------------------------------------------ */

/* Room for a message of up to max bytes at the tail, or NULL. */
static uint8_t *q_reserve(http_view *v, size_t max) {
  if (v->tail + VIEW_MSG_HEADER + max > VIEW_QUEUE_BYTES && v->head > 0) {
    memmove(v->queue, v->queue + v->head, v->tail - v->head);
    v->tail -= v->head;
    v->head = 0;
  }
  if (v->tail + VIEW_MSG_HEADER + max > VIEW_QUEUE_BYTES)
    return NULL;
  return v->queue + v->tail + VIEW_MSG_HEADER;
}

static void q_commit(http_view *v, size_t len, int kind) {
  uint8_t *hdr = v->queue + v->tail;
  uint32_t n = (uint32_t)len;
  hdr[0] = (uint8_t)kind;
  memcpy(hdr + 1, &n, 4);
  v->tail += VIEW_MSG_HEADER + len;
  if (kind == MSG_SNAPSHOT)
    v->snapshot_msgs++;
  lws_callback_on_writable(v->wsi);
}

/* A reply (WELCOME, ACK, ERROR, EVENT) encoded by encode into the queue; a view
 * that cannot take it is too far behind and is closed. */
static void q_reply(http_view *v, const uint8_t *msg, size_t len) {
  if (len == 0)
    return;
  uint8_t *at = q_reserve(v, len);
  if (!at) {
    LOG_WARN("view %u: too far behind (%d bytes queued): closing it", v->id, VIEW_QUEUE_BYTES);
    v->closing = 1;
    lws_callback_on_writable(v->wsi);
    return;
  }
  memcpy(at, msg, len);
  q_commit(v, len, MSG_REPLY);
}

static void send_error(steerd_http *h, http_view *v, uint32_t request_id, int code, const char *message,
                       const char *field) {
  uint8_t *buf = h->views.scratch + LWS_PRE;
  q_reply(v, buf, proto_encode_error(buf, PROTO_MAX_MESSAGE_BYTES, request_id, code, message, field));
}

static void send_ack(steerd_http *h, http_view *v, const proto_ack *ack) {
  uint8_t *buf = h->views.scratch + LWS_PRE;
  q_reply(v, buf, proto_encode_ack(buf, PROTO_MAX_MESSAGE_BYTES, ack));
}

/* ---- the map ------------------------------------------------------------------------ */

static uint32_t map_version_now(const steerd_http *h) {
  const steer_map *m = steer_world_map(steerd_server_world(h->server));
  return m ? steer_map_version(m) : 0;
}

/* The map message of the current version into the view's queue (the JSON made
 * once per version). A view whose queue cannot take it now gets it later. */
static void send_map(steerd_http *h, http_view *v) {
  steerd_http_views *vs = &h->views;
  uint32_t version = map_version_now(h);
  if (!vs->map_text || vs->map_version != version) {
    free(vs->map_text);
    /* A map over the limit is found as soon as the text passes it, without
     * writing the rest of a map that may hold a million points. */
    vs->map_text = steerd_http_map_json(h, "map", VIEW_MAP_MAX_BYTES, &vs->map_len);
    if (!vs->map_text && vs->map_len > VIEW_MAP_MAX_BYTES) {
      vs->map_text = malloc(96);
      if (vs->map_text)
        vs->map_len = (size_t)snprintf(vs->map_text, 96,
                                       "{\"type\":\"map\",\"version\":%u,\"href\":\"/api/map\"}", version);
    }
    if (!vs->map_text)
      return;
    vs->map_version = version;
  }
  uint8_t *at = q_reserve(v, vs->map_len);
  if (!at)
    return;
  memcpy(at, vs->map_text, vs->map_len);
  q_commit(v, vs->map_len, MSG_TEXT);
  v->map_sent = 1;
  v->map_version = version;
  vs->maps_sent++;
}

/* ---- what a view sees ------------------------------------------------------------ */

/* The centre and radius of the view; 0 for the whole world; -1 when the agent
 * it follows is gone. */
static int view_circle(const steerd_http *h, const http_view *v, vec2 *centre, float *radius) {
  if (v->view.kind == PROTO_VIEW_ALL)
    return 0;
  *radius = v->view.radius;
  if (v->view.kind == PROTO_VIEW_CENTRE) {
    *centre = wire_to_vec2(v->view.centre);
    return 1;
  }
  steer_agent_info info;
  if (steer_world_get(steerd_server_world(h->server), v->view.follow, &info) != STEER_OK)
    return -1;
  *centre = info.state.position;
  return 1;
}

/* The SNAPSHOT of the agents idx[0..n) (all of the view when idx is NULL), in
 * parts of at most VIEW_PART_BYTES, into vs->frame. */
static void encode_frame(steerd_http_views *vs, const steer_world_view *wv, const uint32_t *idx, uint32_t n,
                         uint64_t tick, uint64_t time_us) {
  proto_pose_view pv = wire_pose_view(wv);
  uint32_t parts = 0;
  for (uint32_t first = 0; first < n || parts == 0;) {
    uint32_t fit = proto_snapshot_fit(&pv, idx, first, n - first, VIEW_PART_BYTES);
    vs->part_first[parts++] = first;
    first += fit ? fit : 1;
  }
  vs->part_first[parts] = n;
  proto_snapshot_header hd = {tick, time_us, 0, parts, n};
  size_t at = 0;
  vs->frame_parts = 0;
  for (uint32_t p = 0; p < parts; p++) {
    hd.part_index = p;
    uint32_t first = vs->part_first[p];
    size_t cap = vs->frame_cap - at < VIEW_PART_BYTES ? vs->frame_cap - at : VIEW_PART_BYTES;
    size_t len =
        proto_encode_snapshot_view(vs->frame + at, cap, &hd, &pv, idx, first, vs->part_first[p + 1] - first);
    if (len == 0)
      break; /* cannot happen with frame_cap's bound; the view then gets a short frame */
    vs->part_len[vs->frame_parts++] = (uint32_t)len;
    at += len;
  }
}

/* The agents message (PROTOCOL.md 15) of the agents idx[0..n) (all of the
 * view when idx is NULL) into vs->agents_text: what the snapshots do not
 * carry and a developer needs to tell agents apart (body radius, behaviour,
 * owner), at most VIEW_AGENTS_MAX of them. Its length. */
static size_t encode_agents(steerd_http *h, const steer_world_view *wv, const uint32_t *idx, uint32_t n,
                            uint64_t tick) {
  steerd_http_views *vs = &h->views;
  const steer_world *w = steerd_server_world(h->server);
  const steer_planner *pl = steerd_server_planner(h->server);
  uint32_t take = n < VIEW_AGENTS_MAX ? n : VIEW_AGENTS_MAX;
  char *t = vs->agents_text;
  size_t at = (size_t)snprintf(t, VIEW_AGENTS_BYTES,
                               "{\"type\":\"agents\",\"tick\":%llu,\"complete\":%s,\"agents\":[",
                               (unsigned long long)tick, take == n ? "true" : "false");
  const char *sep = "";
  for (uint32_t k = 0; k < take && at + VIEW_AGENT_JSON + 8u <= VIEW_AGENTS_BYTES; k++) {
    steer_id id = wv->id[idx ? idx[k] : k];
    steer_agent_info info;
    steer_goto_info gi;
    if (steer_world_get(w, id, &info) != STEER_OK)
      continue;
    /* As QUERY names it (steerd_goto_report): GOTO until unreachable or off its route. */
    int in_goto = steer_planner_get(pl, id, &gi) == STEER_OK && gi.status != STEER_GOTO_UNREACHABLE &&
                  !(gi.status == STEER_GOTO_FOLLOWING && info.path != gi.path);
    uint32_t kind = in_goto ? PROTO_BEHAVIOUR_GOTO : info.behaviour.kind;
    const char *name = proto_behaviour_name(kind);
    at += (size_t)snprintf(t + at, VIEW_AGENTS_BYTES - at, "%s[%u,%.2f,\"%s\",%u]", sep, id,
                           (double)info.limits.radius, name ? name : "none", info.owner);
    sep = ",";
  }
  at += (size_t)snprintf(t + at, VIEW_AGENTS_BYTES - at, "]}");
  return at;
}

/* The ticks message (PROTOCOL.md 15): the loop's work in each tick's period
 * since the last one sent to v, for the view's graph. */
static void queue_ticks(steerd_http *h, http_view *v) {
  steerd_tick_work log[VIEW_TICKS_MAX];
  uint32_t n = steerd_server_tick_log(h->server, v->ticks_sent, log, VIEW_TICKS_MAX);
  char *t = n ? (char *)q_reserve(v, VIEW_TICKS_BYTES) : NULL;
  if (!t)
    return; /* nothing new, or a full queue: these come with the next one */
  size_t at = (size_t)snprintf(t, VIEW_TICKS_BYTES, "{\"type\":\"ticks\",\"interval_ms\":%.3f,\"phases\":[",
                               1000.0 / h->cfg->tick_rate);
  for (int p = 0; p < STEERD_LOOP_PHASES; p++)
    at +=
        (size_t)snprintf(t + at, VIEW_TICKS_BYTES - at, "%s\"%s\"", p ? "," : "", steerd_loop_phase_name(p));
  at += (size_t)snprintf(t + at, VIEW_TICKS_BYTES - at, "],\"ticks\":[");
  for (uint32_t i = 0; i < n; i++) {
    at += (size_t)snprintf(t + at, VIEW_TICKS_BYTES - at, "%s[%llu", i ? "," : "",
                           (unsigned long long)log[i].tick);
    for (int p = 0; p < STEERD_LOOP_PHASES; p++)
      at += (size_t)snprintf(t + at, VIEW_TICKS_BYTES - at, ",%u", log[i].us[p]);
    at += (size_t)snprintf(t + at, VIEW_TICKS_BYTES - at, "]");
  }
  at += (size_t)snprintf(t + at, VIEW_TICKS_BYTES - at, "]}");
  q_commit(v, at, MSG_TEXT);
  v->ticks_sent = log[n - 1].tick;
}

/* The agents message into v's queue when it is due (once every
 * VIEW_AGENTS_PERIOD_US, and with the first snapshot of a new VIEW), before
 * the snapshot it goes with; the ticks message before it. */
static void queue_agents(steerd_http *h, http_view *v, const steer_world_view *wv, const uint32_t *idx,
                         uint32_t n, uint64_t tick, uint64_t time_us) {
  steerd_http_views *vs = &h->views;
  if (v->snapshot_msgs > 0 || time_us < v->agents_due_us || !vs->agents_text)
    return;
  size_t len;
  if (idx == NULL) { /* the whole world's: encoded once a tick for every view that takes it */
    if (vs->agents_tick != tick) {
      vs->agents_len = encode_agents(h, wv, NULL, n, tick);
      vs->agents_tick = tick;
    }
    len = vs->agents_len;
  } else {
    vs->agents_tick = UINT64_MAX;
    len = encode_agents(h, wv, idx, n, tick);
  }
  queue_ticks(h, v); /* first: the agents message stays right before its snapshot */
  uint8_t *dst = q_reserve(v, len);
  if (!dst)
    return; /* a full queue: tried again with the next snapshot */
  memcpy(dst, vs->agents_text, len);
  q_commit(v, len, MSG_TEXT);
  v->agents_due_us = time_us + VIEW_AGENTS_PERIOD_US;
}

/* The frame in vs->frame into the view's queue, unless its previous one is still there. */
static void queue_frame(steerd_http_views *vs, http_view *v) {
  if (v->snapshot_msgs > 0) {
    vs->skipped++;
    return;
  }
  size_t at = 0;
  for (uint32_t p = 0; p < vs->frame_parts; p++) {
    uint8_t *dst = q_reserve(v, vs->part_len[p]);
    if (!dst) {
      vs->skipped++;
      return;
    }
    memcpy(dst, vs->frame + at, vs->part_len[p]);
    q_commit(v, vs->part_len[p], MSG_SNAPSHOT);
    vs->bytes += vs->part_len[p];
    at += vs->part_len[p];
  }
  vs->frames++;
}

/* A view of a circle: its own frame of the agents strictly within it. */
static void view_snapshot(steerd_http *h, http_view *v, const steer_world_view *wv, uint64_t tick,
                          uint64_t time_us) {
  steerd_http_views *vs = &h->views;
  if (v->snapshot_msgs > 0) {
    vs->skipped++;
    return;
  }
  vec2 c;
  float r;
  int k = view_circle(h, v, &c, &r);
  uint32_t n = 0;
  for (uint32_t i = 0; k > 0 && i < wv->count; i++) {
    float dx = wv->px[i] - c.x, dy = wv->py[i] - c.y;
    if (dx * dx + dy * dy < r * r)
      vs->indices[n++] = i;
  }
  queue_agents(h, v, wv, vs->indices, n, tick, time_us);
  vs->frame_tick = UINT64_MAX;
  encode_frame(vs, wv, vs->indices, n, tick, time_us);
  queue_frame(vs, v);
}

void steerd_http_views_snapshot(steerd_http *h) {
  steerd_http_views *vs = &h->views;
  if (vs->open == 0)
    return;
  const steer_world *w = steerd_server_world(h->server);
  uint64_t tick = steer_world_tick(w), time_us = steerd_server_time_us(h->server);
  /* At --view-rate: a browser draws between snapshots by their velocities. The
   * half period of slack keeps a rate equal to the snapshot rate exact. */
  uint64_t period_us = 1000000u / h->cfg->view_rate;
  if (time_us + period_us / 2 < vs->next_frame_us)
    return;
  vs->next_frame_us =
      vs->next_frame_us + period_us > time_us ? vs->next_frame_us + period_us : time_us + period_us;
  /* A changed map first, so the walls are drawn with the agents that meet them. */
  uint32_t version = map_version_now(h);
  for (uint32_t i = 0; i < STEERD_HTTP_MAX_VIEWS; i++) {
    http_view *v = &vs->slots[i];
    if (v->wsi && v->welcomed && !v->closing && (!v->map_sent || v->map_version != version))
      send_map(h, v);
  }
  steer_world_view wv = steer_world_get_view(w);
  /* The whole-world views first, sharing one encoding; then each circle. */
  for (uint32_t i = 0; i < STEERD_HTTP_MAX_VIEWS; i++) {
    http_view *v = &vs->slots[i];
    if (!v->wsi || !v->welcomed || v->closing || v->view.kind != PROTO_VIEW_ALL)
      continue;
    if (vs->frame_tick != tick && v->snapshot_msgs == 0) {
      encode_frame(vs, &wv, NULL, wv.count, tick, time_us);
      vs->frame_tick = tick;
    }
    queue_agents(h, v, &wv, NULL, wv.count, tick, time_us);
    queue_frame(vs, v);
  }
  for (uint32_t i = 0; i < STEERD_HTTP_MAX_VIEWS; i++) {
    http_view *v = &vs->slots[i];
    if (v->wsi && v->welcomed && !v->closing && v->view.kind != PROTO_VIEW_ALL)
      view_snapshot(h, v, &wv, tick, time_us);
  }
}

/* The agents a developer must see at once, whichever is inspected: those
 * STUCK or UNREACHABLE. */
static int is_mark(uint8_t code) { return code == PROTO_EVENT_STUCK || code == PROTO_EVENT_UNREACHABLE; }

/* Whether a STUCK or UNREACHABLE at pos goes to view v: in its view (a
 * followed agent's view takes them all), and at most VIEW_MARKS_PER_SECOND a
 * second, so a jammed crowd's storm of STUCK costs a view a bounded share. */
static int wants_mark(steerd_http *h, http_view *v, vec2 pos) {
  if (v->view.kind == PROTO_VIEW_CENTRE &&
      v2_len2(v2_sub(pos, wire_to_vec2(v->view.centre))) > v->view.radius * v->view.radius)
    return 0;
  return per_second(&v->marks, uv_now(h->loop) / 1000, VIEW_MARKS_PER_SECOND);
}

/* The inspected agent's events, and the STUCK and UNREACHABLE of every agent
 * in view: every event of every agent would take a whole-world view of a busy
 * world a WebSocket message each. */
void steerd_http_views_event(steerd_http *h, const proto_event *e, vec2 pos) {
  if (h->views.open == 0)
    return;
  uint8_t *buf = h->views.scratch + LWS_PRE;
  size_t len = 0;
  for (uint32_t i = 0; i < STEERD_HTTP_MAX_VIEWS; i++) {
    http_view *v = &h->views.slots[i];
    if (!v->wsi || !v->welcomed || v->closing)
      continue;
    if (v->inspected != e->agent && !(is_mark(e->code) && wants_mark(h, v, pos)))
      continue;
    if (len == 0 && (len = proto_encode_event(buf, PROTO_MAX_MESSAGE_BYTES, e)) == 0)
      return;
    q_reply(v, buf, len);
  }
}

/* ---- commands --------------------------------------------------------------------- */

/* Without a secret a view has the anonymous clients' role, but the admin's
 * only from a loopback peer: the HTTP port may listen wider than the game's. */
static int view_anonymous_role(const steerd_http *h, const http_view *v) {
  int role = h->cfg->anonymous_role;
  struct sockaddr_in sa;
  socklen_t len = sizeof sa;
  if (role == STEERD_ROLE_ADMIN &&
      (getpeername(lws_get_socket_fd(v->wsi), (struct sockaddr *)&sa, &len) != 0 ||
       sa.sin_family != AF_INET || (ntohl(sa.sin_addr.s_addr) >> 24) != 127))
    role = STEERD_ROLE_CONTROLLER;
  return role;
}

/* An admin's command (PROTOCOL.md 15): as on ENet, at most
 * VIEW_EDITS_PER_SECOND a second (RATE_LIMITED past that). */
static void cmd_admin(steerd_http *h, http_view *v, const proto_command *cmd) {
  if (v->role != STEERD_ROLE_ADMIN) {
    send_error(h, v, cmd->request_id, PROTO_ERR_FORBIDDEN,
               "only an admin's view sends SET_BEHAVIOUR, ADD_OBSTACLE and REMOVE_OBSTACLE", NULL);
    return;
  }
  if (!per_second(&v->edits, uv_now(h->loop) / 1000, VIEW_EDITS_PER_SECOND)) {
    send_error(h, v, cmd->request_id, PROTO_ERR_RATE_LIMITED, "too many commands: this one was not applied",
               NULL);
    return;
  }
  proto_ack ack;
  proto_error_msg err;
  int rc = steerd_server_admin_command(h->server, cmd, &ack, &err);
  if (rc == 0)
    send_ack(h, v, &ack);
  else
    send_error(h, v, cmd->request_id, (int)err.code, err.message, err.has_field ? err.field : NULL);
}

static void cmd_hello(steerd_http *h, http_view *v, const proto_command *cmd) {
  const proto_hello *hello = &cmd->hello;
  if (hello->version != PROTO_VERSION) {
    send_error(h, v, cmd->request_id, PROTO_ERR_VERSION_MISMATCH, "this server speaks protocol version 1",
               "version");
    v->closing = 1;
    return;
  }
  if (hello->has_snapshots && hello->snapshots != PROTO_SNAPSHOTS_FULL) {
    send_error(h, v, cmd->request_id, PROTO_ERR_BAD_FIELD, "the live view sends full snapshots", "snapshots");
    return;
  }
  v->role = view_anonymous_role(h, v);
  if (h->views.auth_on) {
    steerd_token t;
    int rc = hello->has_token ? steerd_auth_verify(&h->views.auth, hello->token, strlen(hello->token),
                                                   (uint64_t)time(NULL), &t)
                              : STEERD_AUTH_EMALFORMED;
    if (rc != STEERD_AUTH_OK) {
      const char *why = !hello->has_token ? "this server needs a token in HELLO" : steerd_auth_strerror(rc);
      send_error(h, v, cmd->request_id,
                 rc == STEERD_AUTH_EEXPIRED ? PROTO_ERR_TOKEN_EXPIRED : PROTO_ERR_UNAUTHORIZED, why, "token");
      LOG_INFO("view %u: HELLO refused: %s", v->id, why);
      v->closing = 1;
      return;
    }
    v->role = (int)t.role;
  }
  const steer_world *w = steerd_server_world(h->server);
  const steer_world_config *wc = steer_world_get_config(w);
  proto_welcome wel;
  memset(&wel, 0, sizeof wel);
  wel.request_id = cmd->request_id;
  wel.client_id = v->id;
  wel.tick_rate = h->cfg->tick_rate;
  wel.snapshot_rate = h->cfg->snapshot_rate;
  wel.world_min = wire_of_vec2(wc->min);
  wel.world_max = wire_of_vec2(wc->max);
  wel.tick = steer_world_tick(w);
  wel.server_time_us = steerd_server_time_us(h->server);
  wel.protocol = PROTO_VERSION;
  uint8_t *buf = h->views.scratch + LWS_PRE;
  q_reply(v, buf, proto_encode_welcome(buf, PROTO_MAX_MESSAGE_BYTES, &wel));
  v->welcomed = 1;
  char session[64];
  int n =
      snprintf(session, sizeof session, "{\"type\":\"session\",\"role\":\"%s\"}", steerd_role_name(v->role));
  uint8_t *dst = q_reserve(v, (size_t)n);
  if (dst) {
    memcpy(dst, session, (size_t)n);
    q_commit(v, (size_t)n, MSG_TEXT);
  }
  send_map(h, v);
}

static void cmd_query(steerd_http *h, http_view *v, const proto_command *cmd, proto_ack *ack) {
  if (steerd_server_agent_report(h->server, cmd->query.agent, &ack->query) != STEER_OK) {
    send_error(h, v, cmd->request_id, PROTO_ERR_NO_SUCH_AGENT, steer_strerror(STEER_ENOENT), "agent");
    return;
  }
  send_ack(h, v, ack);
}

static void handle_command(steerd_http *h, http_view *v, const proto_command *cmd) {
  if (cmd->type == PROTO_MSG_HELLO) {
    cmd_hello(h, v, cmd);
    return;
  }
  if (!v->welcomed) {
    send_error(h, v, cmd->request_id, PROTO_ERR_NOT_WELCOMED, "say HELLO first", NULL);
    return;
  }
  proto_ack ack;
  memset(&ack, 0, sizeof ack);
  ack.request_id = cmd->request_id;
  ack.command = cmd->type;
  switch (cmd->type) {
  case PROTO_MSG_VIEW:
    if (cmd->view.kind == PROTO_VIEW_FOLLOW &&
        !steer_world_alive(steerd_server_world(h->server), cmd->view.follow)) {
      send_error(h, v, cmd->request_id, PROTO_ERR_NO_SUCH_AGENT, steer_strerror(STEER_ENOENT), "follow");
      return;
    }
    v->view = cmd->view;
    v->agents_due_us = 0; /* the new view's agents come with its first snapshot */
    send_ack(h, v, &ack);
    return;
  case PROTO_MSG_QUERY:
    ack.agent = cmd->query.agent;
    v->inspected = cmd->query.agent;
    cmd_query(h, v, cmd, &ack);
    return;
  case PROTO_MSG_PING:
    ack.pong.client_time_us = cmd->ping.client_time_us;
    ack.pong.server_time_us = steerd_server_time_us(h->server);
    ack.pong.tick = steer_world_tick(steerd_server_world(h->server));
    send_ack(h, v, &ack);
    return;
  case PROTO_MSG_SET_BEHAVIOUR:
  case PROTO_MSG_ADD_OBSTACLE:
  case PROTO_MSG_REMOVE_OBSTACLE:
    cmd_admin(h, v, cmd);
    return;
  default:
    send_error(h, v, cmd->request_id, PROTO_ERR_FORBIDDEN,
               "the live view sends VIEW, QUERY and PING (and an admin's SET_BEHAVIOUR, ADD_OBSTACLE and "
               "REMOVE_OBSTACLE)",
               NULL);
    return;
  }
}

/* A malformed message (ERROR already queued): at VIEW_GARBAGE_LIMIT the view
 * is closed with status 1008 once its queue, that ERROR included, is out. */
static void count_garbage(http_view *v) {
  if (++v->garbage < VIEW_GARBAGE_LIMIT || v->closing)
    return;
  LOG_WARN("view %u: %u malformed messages: closing it", v->id, v->garbage);
  v->closing = 1;
  lws_callback_on_writable(v->wsi);
}

static void on_message(steerd_http *h, http_view *v, const uint8_t *data, size_t len) {
  proto_error_info err;
  int rc = proto_decode_command(data, len, &h->views.cmd, &err);
  if (rc == 0 && h->views.cmd.type == PROTO_MSG_SNAPSHOT_ACK)
    return; /* a delta client's habit; full snapshots need no acks */
  if (rc != 0) {
    char text[PROTO_MAX_ERROR_TEXT_BYTES + 1];
    snprintf(text, sizeof text, "%s%s%s", proto_error_text(err.code), err.reason ? ": " : "",
             err.reason ? err.reason : "");
    send_error(h, v, err.has_request_id ? err.request_id : 0, err.code, text,
               err.field[0] ? err.field : NULL);
    count_garbage(v);
    return;
  }
  handle_command(h, v, &h->views.cmd);
}

/* Fragments of one message are joined; a message over PROTO_MAX_MESSAGE_BYTES
 * is TOO_LARGE, as on ENet. */
static void on_receive(steerd_http *h, http_view *v, struct lws *wsi, const uint8_t *in, size_t len) {
  if (lws_is_first_fragment(wsi)) {
    v->rx_len = 0;
    v->rx_too_large = 0;
  }
  if (!v->rx_too_large && v->rx_len + len <= PROTO_MAX_MESSAGE_BYTES) {
    memcpy(v->rx + v->rx_len, in, len);
    v->rx_len += len;
  } else {
    v->rx_too_large = 1;
  }
  if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi) > 0)
    return;
  if (v->rx_too_large) {
    send_error(h, v, 0, PROTO_ERR_TOO_LARGE, "message larger than 16384 bytes", NULL);
    count_garbage(v);
    return;
  }
  if (!lws_frame_is_binary(wsi)) {
    send_error(h, v, 0, PROTO_ERR_BAD_MESSAGE, "messages are binary (msgpack)", NULL);
    count_garbage(v);
    return;
  }
  on_message(h, v, v->rx, v->rx_len);
}

/* One queued message out; 1 when the view should close now. */
static int on_writable(http_view *v, struct lws *wsi) {
  if (v->head == v->tail)
    return v->closing;
  uint8_t *hdr = v->queue + v->head, *buf = hdr + VIEW_MSG_HEADER;
  uint32_t len;
  memcpy(&len, hdr + 1, 4);
  if (hdr[0] == MSG_SNAPSHOT)
    v->snapshot_msgs--;
  v->head += VIEW_MSG_HEADER + len;
  if (v->head == v->tail)
    v->head = v->tail = 0;
  if (lws_write(wsi, buf, len, hdr[0] == MSG_TEXT ? LWS_WRITE_TEXT : LWS_WRITE_BINARY) < (int)len)
    return 1;
  if (v->head != v->tail || v->closing)
    lws_callback_on_writable(wsi);
  return 0;
}

/* Closes a view that is done with status 1008 (policy violation). A writable
 * callback that returns -1 drops the socket without a close frame, so the
 * close is left to the view's timer: from there libwebsockets sends the close
 * frame with the reason and ends the connection on the peer's answer (or
 * after its own timeout). */
static void close_view(http_view *v, struct lws *wsi) {
  if (v->close_sent)
    return;
  v->close_sent = 1;
  lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, NULL, 0);
  lws_set_timer_usecs(wsi, 1);
}

int steerd_http_view_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                              size_t len) {
  steerd_http *h = lws_context_user(lws_get_context(wsi));
  http_view **slot = user;
  http_view *v = slot ? *slot : NULL;
  switch (reason) {
  case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
    /* Refused at the handshake: the server is draining or the views are full. */
    return h->closing || h->views.open >= STEERD_HTTP_MAX_VIEWS;
  case LWS_CALLBACK_ESTABLISHED: {
    for (uint32_t i = 0; i < STEERD_HTTP_MAX_VIEWS && !v; i++)
      if (!h->views.slots[i].wsi)
        v = &h->views.slots[i];
    if (!v)
      return -1;
    uint8_t *queue = v->queue ? v->queue : malloc(VIEW_QUEUE_BYTES);
    uint8_t *rx = v->rx ? v->rx : malloc(PROTO_MAX_MESSAGE_BYTES);
    memset(v, 0, sizeof(*v));
    v->queue = queue;
    v->rx = rx;
    if (!queue || !rx)
      return -1;
    v->wsi = wsi;
    v->id = next_view_id++;
    v->view.kind = PROTO_VIEW_ALL;
    *slot = v;
    h->views.open++;
    char addr[64];
    lws_get_peer_simple(wsi, addr, sizeof addr);
    LOG_INFO("view %u opened from %s", v->id, addr);
    return 0;
  }
  case LWS_CALLBACK_RECEIVE:
    if (v && !v->closing)
      on_receive(h, v, wsi, in, len);
    return 0;
  case LWS_CALLBACK_SERVER_WRITEABLE:
    if (v && on_writable(v, wsi))
      close_view(v, wsi);
    return 0;
  case LWS_CALLBACK_TIMER:
    return v && v->close_sent ? -1 : 0;
  case LWS_CALLBACK_CLOSED:
    if (v && v->wsi) {
      LOG_INFO("view %u closed", v->id);
      v->wsi = NULL;
      h->views.open--;
      *slot = NULL;
    }
    return 0;
  default:
    return 0;
  }
}

/* http_internal.h: what http.c, http_view.c and http_agones.c share. */
#ifndef STEERD_HTTP_INTERNAL_H
#define STEERD_HTTP_INTERNAL_H

#include <libwebsockets.h>
#include <stdint.h>
#include <uv.h>

#include "auth.h"
#include "http.h"
#include "protocol.h"
#include "server.h"

#define STEERD_HTTP_VIEW_PROTOCOL "steerd-view"
#define STEERD_HTTP_MAX_VIEWS     32
#define STEERD_HTTP_STALL_NS      5000000000ull /* /healthz fails when no tick ran for this long */

/* ---- the live view (http_view.c) ---- */
typedef struct http_view http_view;
typedef struct steerd_http_views {
  http_view *slots; /* STEERD_HTTP_MAX_VIEWS */
  uint32_t open;
  uint32_t *indices;    /* max_agents: the agents one view sees */
  uint32_t *part_first; /* max_agents + 2: snapshot part boundaries */
  uint8_t *scratch;     /* LWS_PRE + PROTO_MAX_MESSAGE_BYTES: one message on its way out */
  uint8_t *frame;       /* frame_cap: one snapshot's parts, encoded once for every view that sees them */
  size_t frame_cap;
  uint32_t *part_len;   /* max_agents + 2: their lengths */
  uint32_t frame_parts; /* parts of the frame in `frame` */
  uint64_t frame_tick;  /* the whole-world frame of this tick is in `frame` (UINT64_MAX: none) */
  proto_command cmd;    /* decode scratch */
  int auth_on;
  steerd_auth auth;
  uint64_t next_frame_us; /* server time of the views' next snapshot (--view-rate) */
  uint64_t frames, skipped, bytes;
  char *map_text; /* the map message (JSON) of map_version, encoded once for every view */
  size_t map_len;
  uint32_t map_version;
  uint64_t maps_sent;
  char *agents_text;    /* VIEW_AGENTS_BYTES: an agents message (http_view.c) */
  size_t agents_len;    /* of the whole world's, when agents_tick is its tick */
  uint64_t agents_tick; /* UINT64_MAX: the text is not the whole world's */
} steerd_http_views;

int steerd_http_views_init(steerd_http_views *v, const steerd_config *cfg, uint32_t max_agents);
void steerd_http_views_free(steerd_http_views *v);
int steerd_http_view_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                              size_t len);
void steerd_http_views_snapshot(steerd_http *h);
void steerd_http_views_event(steerd_http *h, const proto_event *e, vec2 pos);

/* ---- the Agones SDK client (http_agones.c) ---- */
typedef struct steerd_http_agones {
  int on;        /* AGONES_SDK_HTTP_PORT is set */
  uint16_t port; /* the SDK sidecar's REST port on 127.0.0.1 */
  uv_timer_t health_timer;
  int timer_open;
  int shutdown_sent, shutdown_done;
  uint32_t in_flight; /* requests not finished yet */
  uint64_t ok, failed;
} steerd_http_agones;

int steerd_http_agones_init(steerd_http *h);
void steerd_http_agones_ready(steerd_http *h);
/* Sends Shutdown; steerd_http_agones_done() answers 1 once it has finished. */
void steerd_http_agones_shutdown(steerd_http *h);
int steerd_http_agones_done(const steerd_http *h);
void steerd_http_agones_close(steerd_http *h);
int steerd_http_agones_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                                size_t len);

struct steerd_http {
  uv_loop_t *loop;
  steerd_server *server;
  const steerd_config *cfg;
  struct lws_context *ctx;
  struct lws_vhost *vhost;
  uint16_t port;
  int closing;
  double start_unix_s;
  uint64_t requests;
  uv_timer_t closer; /* lws_context_destroy runs from the loop, never inside a callback */
  int closer_open;
  steerd_http_views views;
  steerd_http_agones agones;
  /* Open connections, counted per peer address (--http-max-connections,
   * --http-max-per-address); those over a limit are answered 503 and closed. */
  struct http_addr_count {
    uint32_t ip; /* IPv4, network order */
    uint32_t open;
  } * addrs; /* --http-max-connections entries */
  uint32_t conns;
  uint64_t refused_full, refused_address;
};

/* The world's map as JSON (GET /api/map, and the view's map message with
 * type "map"; type NULL: no type field): version, bounds_m, obstacles. A
 * malloc'd string of *len bytes (free() it), or NULL: longer than limit (0:
 * no limit; *len > limit) or no memory (*len 0), as steerd_map_json. */
char *steerd_http_map_json(const steerd_http *h, const char *type, size_t limit, size_t *len);
/* /api/map, /api/agent and /api/routes (http_api.c): the status with *body
 * (malloc'd JSON, or a text saying why) and *len; 0 when uri is none of them. */
int steerd_http_api(steerd_http *h, struct lws *wsi, const char *uri, char **body, size_t *len);

/* 1 when /healthz passes; why gets the reason otherwise. */
int steerd_http_live(const steerd_http *h, char *why, size_t cap);
int steerd_http_ready(const steerd_http *h, char *why, size_t cap);

/* The compiled-in files of server/web/ (web_assets.c, generated). */
typedef struct steerd_web_asset {
  const char *path; /* "/", "/view.js" */
  const char *content_type;
  const unsigned char *data;
  size_t len;
} steerd_web_asset;
extern const steerd_web_asset steerd_web_assets[];
extern const size_t steerd_web_asset_count;

#endif /* STEERD_HTTP_INTERNAL_H */

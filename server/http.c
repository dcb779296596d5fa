/* http.c: see http.h. Sections: probes and metrics, requests (the JSON API is
 * http_api.c), lifecycle, the healthcheck client. */
#include "http_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"

#ifndef STEERD_VERSION
#define STEERD_VERSION "unknown"
#endif

#define HTTP_CHUNK_BYTES 4096
/* RFC 6455 4.4: a version the server does not speak; libwebsockets has no name for it. */
#define STEERD_HTTP_UPGRADE_REQUIRED 426u

/* One HTTP request's answer, written out a chunk per writable callback. */
typedef struct http_req {
  char *body; /* malloc'd */
  size_t len, sent;
} http_req;

static double wall_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- probes and metrics ------------------------------------------------------ */

int steerd_http_live(const steerd_http *h, char *why, size_t cap) {
  steerd_server_health hl;
  steerd_server_get_health(h->server, &hl);
  uint64_t now = uv_hrtime();
  if (hl.last_tick_ns && now > hl.last_tick_ns && now - hl.last_tick_ns > STEERD_HTTP_STALL_NS) {
    snprintf(why, cap, "stalled: no tick for %.1f s\n", (double)(now - hl.last_tick_ns) / 1e9);
    return 0;
  }
  snprintf(why, cap, "ok\n");
  return 1;
}

int steerd_http_ready(const steerd_http *h, char *why, size_t cap) {
  steerd_server_health hl;
  steerd_server_get_health(h->server, &hl);
  steerd_checkpoint_stats ck;
  steerd_server_checkpoint_stats(h->server, &ck);
  size_t n = 0;
  why[0] = '\0';
  if (!hl.bound)
    n += (size_t)snprintf(why + n, cap - n, "not bound\n");
  if (n < cap && !hl.restored)
    n += (size_t)snprintf(why + n, cap - n, "world not restored\n");
  if (n < cap && (hl.draining || h->closing))
    n += (size_t)snprintf(why + n, cap - n, "draining\n");
  if (n < cap && ck.failing)
    n += (size_t)snprintf(why + n, cap - n, "the last checkpoint failed: the state is not being saved\n");
  /* The server answers during the start-up's graph builds; it is ready once
   * the graphs of the radius classes in use exist, as when it built them
   * before it listened. */
  uint32_t warming = steerd_server_warming(h->server);
  if (n < cap && warming)
    n += (size_t)snprintf(why + n, cap - n, "building the navigation graphs of %u radius classes in use\n",
                          warming);
  if (n < cap && !steerd_http_live(h, why + n, cap - n))
    n = strlen(why);
  if (n == 0) {
    snprintf(why, cap, "ready\n");
    return 1;
  }
  return 0;
}

static size_t render_metrics(steerd_http *h, char *buf, size_t cap) {
  steerd_metrics_input in;
  memset(&in, 0, sizeof in);
  steerd_server_get_stats(h->server, &in.stats);
  const steer_world *w = steerd_server_world(h->server);
  in.agents = steer_world_count(w);
  in.agents_max = steer_world_capacity(w);
  steerd_server_clients_by_role(h->server, in.clients_by_role);
  steerd_server_delta_frames(h->server, &in.delta_frames, &in.delta_frames_without_baseline);
  steerd_server_checkpoint_stats(h->server, &in.checkpoints);
  in.start_time_unix_s = h->start_unix_s;
  in.now_unix_s = wall_seconds();
  char why[256];
  in.ready = steerd_http_ready(h, why, sizeof why);
  in.views = h->views.open;
  in.view_frames = h->views.frames;
  in.view_frames_skipped = h->views.skipped;
  in.view_bytes = h->views.bytes;
  in.http_requests = h->requests;
  in.http_connections = h->conns;
  in.http_refused_full = h->refused_full;
  in.http_refused_address = h->refused_address;
  in.version = STEERD_VERSION;
  steerd_tick_work worst;
  in.ticks_in_window = steerd_server_tick_work_max(h->server, &worst);
  memcpy(in.tick_work_max_us, worst.us, sizeof in.tick_work_max_us);
  const steer_planner *pl = steerd_server_planner(h->server);
  in.plan = steer_planner_get_stats(pl);
  in.plan_agents = steer_planner_active(pl);
  in.plan_builds = steer_planner_graph_builds(pl);
  in.plan_loop_builds = steer_planner_sync_builds(pl);
  return steerd_metrics_render(buf, cap, &in);
}

/* ---- requests ------------------------------------------------------------------- */

static int respond(struct lws *wsi, http_req *req, unsigned status, const char *type, char *body,
                   size_t len) {
  uint8_t buf[LWS_PRE + 1024];
  uint8_t *start = buf + LWS_PRE, *p = start, *end = buf + sizeof buf - 1;
  req->body = body;
  req->len = body ? len : 0;
  req->sent = 0;
  if (lws_add_http_common_headers(wsi, status, type, req->len, &p, end) ||
      lws_add_http_header_by_name(
          wsi, (const unsigned char *)"cache-control:", (const unsigned char *)"no-store", 8, &p, end) ||
      lws_finalize_write_http_header(wsi, start, &p, end))
    return 1;
  lws_callback_on_writable(wsi);
  return 0;
}

static int respond_text(struct lws *wsi, http_req *req, unsigned status, const char *text) {
  char *body = strdup(text);
  return respond(wsi, req, status, "text/plain; charset=utf-8", body, body ? strlen(body) : 0);
}

static int on_http(steerd_http *h, struct lws *wsi, http_req *req, const char *uri) {
  h->requests++;
  if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) <= 0)
    return respond_text(wsi, req, HTTP_STATUS_METHOD_NOT_ALLOWED, "only GET\n");
  char why[512];
  if (strcmp(uri, "/healthz") == 0 || strcmp(uri, "/readyz") == 0) {
    int ok = uri[1] == 'h' ? steerd_http_live(h, why, sizeof why) : steerd_http_ready(h, why, sizeof why);
    /* Probes come every few seconds: not a line each at info. */
    LOG_DEBUG("http %s: %s", uri, ok ? "200" : "503");
    return respond_text(wsi, req, ok ? HTTP_STATUS_OK : HTTP_STATUS_SERVICE_UNAVAILABLE, why);
  }
  if (strcmp(uri, "/metrics") == 0) {
    char *body = malloc(STEERD_METRICS_MAX_BYTES);
    size_t len = body ? render_metrics(h, body, STEERD_METRICS_MAX_BYTES) : 0;
    if (len == 0) {
      free(body);
      return respond_text(wsi, req, HTTP_STATUS_INTERNAL_SERVER_ERROR, "metrics do not fit\n");
    }
    return respond(wsi, req, HTTP_STATUS_OK, "text/plain; version=0.0.4; charset=utf-8", body, len);
  }
  char *json = NULL;
  size_t json_len = 0;
  int status = steerd_http_api(h, wsi, uri, &json, &json_len);
  if (status)
    return respond(wsi, req, (unsigned)status,
                   status == HTTP_STATUS_OK ? "application/json" : "text/plain; charset=utf-8", json,
                   json_len);
  for (size_t i = 0; i < steerd_web_asset_count; i++) {
    const steerd_web_asset *a = &steerd_web_assets[i];
    if (strcmp(uri, a->path) == 0) {
      char *body = malloc(a->len);
      if (body)
        memcpy(body, a->data, a->len);
      return respond(wsi, req, HTTP_STATUS_OK, a->content_type, body, body ? a->len : 0);
    }
  }
  return respond_text(wsi, req, HTTP_STATUS_NOT_FOUND, "not found\n");
}

static int on_http_writable(struct lws *wsi, http_req *req) {
  uint8_t buf[LWS_PRE + HTTP_CHUNK_BYTES];
  size_t n = req->len - req->sent;
  if (n > HTTP_CHUNK_BYTES)
    n = HTTP_CHUNK_BYTES;
  int final = req->sent + n == req->len;
  if (n)
    memcpy(buf + LWS_PRE, req->body + req->sent, n);
  if (lws_write(wsi, buf + LWS_PRE, n, final ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) != (int)n)
    return 1;
  req->sent += n;
  if (!final) {
    lws_callback_on_writable(wsi);
    return 0;
  }
  free(req->body);
  req->body = NULL;
  return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* ---- the live view's handshake ---------------------------------------------------- */

/* A Sec-WebSocket-Key is the base64 of 16 bytes (RFC 6455 4.1): 22 digits and "==". */
static int ws_key_valid(struct lws *wsi) {
  char key[64];
  if (lws_hdr_total_length(wsi, WSI_TOKEN_KEY) != 24 ||
      lws_hdr_copy(wsi, key, sizeof key, WSI_TOKEN_KEY) != 24)
    return 0;
  static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 22; i++)
    if (!key[i] || !strchr(digits, key[i]))
      return 0;
  return key[22] == '=' && key[23] == '=';
}

/* Whether the Sec-WebSocket-Protocol list offers the live view's subprotocol. */
static int ws_offers_view(struct lws *wsi) {
  char list[256];
  if (lws_hdr_total_length(wsi, WSI_TOKEN_PROTOCOL) <= 0 ||
      lws_hdr_copy(wsi, list, sizeof list, WSI_TOKEN_PROTOCOL) <= 0)
    return 0;
  for (char *save = NULL, *tok = strtok_r(list, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save))
    if (strcmp(tok, STEERD_HTTP_VIEW_PROTOCOL) == 0)
      return 1;
  return 0;
}

/* The refusal of a WebSocket handshake, written whole: a text body saying why
 * (426 also names the version this server speaks). 1, as CONFIRM_UPGRADE wants
 * it after a response; -1 when it cannot be written (the connection goes). */
static int refuse_upgrade(struct lws *wsi, unsigned status, const char *why) {
  uint8_t buf[LWS_PRE + 1024];
  uint8_t *start = buf + LWS_PRE, *p = start, *end = buf + sizeof buf - 1;
  size_t len = strlen(why);
  if (lws_add_http_common_headers(wsi, status, "text/plain; charset=utf-8", len, &p, end) ||
      (status == STEERD_HTTP_UPGRADE_REQUIRED &&
       lws_add_http_header_by_name(
           wsi, (const unsigned char *)"sec-websocket-version:", (const unsigned char *)"13", 2, &p, end)) ||
      lws_finalize_write_http_header(wsi, start, &p, end))
    return -1;
  memcpy(start, why, len);
  return lws_write(wsi, start, len, LWS_WRITE_HTTP_FINAL) == (int)len ? 1 : -1;
}

/* A WebSocket handshake to the live view, judged before libwebsockets answers
 * it (PROTOCOL.md 15), in this order: the path, the version, the key, the
 * subprotocol, then room (draining, or every view slot taken). 0 lets it on. */
static int confirm_upgrade(steerd_http *h, struct lws *wsi, const char *upgrade) {
  if (!upgrade || strcasecmp(upgrade, "websocket") != 0)
    return refuse_upgrade(wsi, HTTP_STATUS_BAD_REQUEST, "only WebSocket upgrades\n");
  char uri[64] = "";
  if (lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI) <= 0 || strcmp(uri, "/") != 0)
    return refuse_upgrade(wsi, HTTP_STATUS_NOT_FOUND, "the live view's WebSocket is at /\n");
  char version[8] = "";
  if (lws_hdr_copy(wsi, version, sizeof version, WSI_TOKEN_VERSION) <= 0 || strcmp(version, "13") != 0)
    return refuse_upgrade(wsi, STEERD_HTTP_UPGRADE_REQUIRED, "this server speaks WebSocket version 13\n");
  if (!ws_key_valid(wsi))
    return refuse_upgrade(wsi, HTTP_STATUS_BAD_REQUEST, "Sec-WebSocket-Key is not the base64 of 16 bytes\n");
  if (!ws_offers_view(wsi))
    return refuse_upgrade(wsi, HTTP_STATUS_BAD_REQUEST, "the subprotocol steerd-view is required\n");
  if (h->closing)
    return refuse_upgrade(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE, "draining\n");
  if (h->views.open >= STEERD_HTTP_MAX_VIEWS)
    return refuse_upgrade(wsi, HTTP_STATUS_SERVICE_UNAVAILABLE, "every live view slot is taken\n");
  return 0;
}

/* ---- connection limits ---------------------------------------------------------- */

/* The opaque user data of a counted connection: its address, tagged. */
#define COUNTED_TAG (1ull << 32)

static struct http_addr_count *addr_entry(steerd_http *h, uint32_t ip, int add) {
  struct http_addr_count *free_slot = NULL;
  for (uint32_t i = 0; i < h->cfg->http_max_connections; i++) {
    if (h->addrs[i].open && h->addrs[i].ip == ip)
      return &h->addrs[i];
    if (!h->addrs[i].open && !free_slot)
      free_slot = &h->addrs[i];
  }
  if (add && free_slot)
    free_slot->ip = ip;
  return add ? free_slot : NULL;
}

/* Answers an accepted connection 503 and lets libwebsockets close it: what
 * the peer has sent so far is read first, so that the close is a FIN the
 * peer reads the answer before, not a reset that loses it. */
static int refuse_connection(int fd, const char *why) {
  char msg[320];
  int body = (int)strlen(why);
  int n = snprintf(msg, sizeof msg,
                   "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                   "Content-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s",
                   body, why);
  if (n > 0 && (size_t)n < sizeof msg && send(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) == n) {
    shutdown(fd, SHUT_WR);
    char sink[4096];
    for (int i = 0; i < 16 && recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
      ;
  }
  return 1;
}

/* Before libwebsockets takes an accepted socket: the limits. */
static int filter_connection(steerd_http *h, const struct lws_filter_network_conn_args *a) {
  if (a->cli_addr.ss_family != AF_INET)
    return 0;
  uint32_t ip = ((const struct sockaddr_in *)&a->cli_addr)->sin_addr.s_addr;
  if (h->conns >= h->cfg->http_max_connections) {
    h->refused_full++;
    return refuse_connection(a->accept_fd, "every HTTP connection slot is taken; retry in a second\n");
  }
  const struct http_addr_count *e = addr_entry(h, ip, 0);
  if (e && e->open >= h->cfg->http_max_per_address) {
    h->refused_address++;
    return refuse_connection(a->accept_fd,
                             "too many HTTP connections from your address; retry in a second\n");
  }
  return 0;
}

/* An accepted connection is counted from its creation to its destruction. */
static void count_connection(steerd_http *h, struct lws *wsi) {
  struct sockaddr_in sa;
  socklen_t len = sizeof sa;
  if (getpeername(lws_get_socket_fd(wsi), (struct sockaddr *)&sa, &len) != 0 || sa.sin_family != AF_INET)
    return;
  struct http_addr_count *e = addr_entry(h, sa.sin_addr.s_addr, 1);
  if (!e)
    return; /* a table as large as the connection cap never runs out */
  e->open++;
  h->conns++;
  lws_set_opaque_user_data(wsi, (void *)(uintptr_t)(COUNTED_TAG | sa.sin_addr.s_addr));
}

static void uncount_connection(steerd_http *h, struct lws *wsi) {
  uint64_t tag = (uint64_t)(uintptr_t)lws_get_opaque_user_data(wsi);
  if (!(tag & COUNTED_TAG))
    return;
  lws_set_opaque_user_data(wsi, NULL);
  struct http_addr_count *e = addr_entry(h, (uint32_t)tag, 0);
  if (e && e->open)
    e->open--;
  if (h->conns)
    h->conns--;
}

static int http_serve(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
  steerd_http *h = lws_context_user(lws_get_context(wsi));
  http_req *req = user;
  switch (reason) {
  case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
    return filter_connection(h, user);
  case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
    count_connection(h, wsi);
    break;
  case LWS_CALLBACK_WSI_DESTROY:
    uncount_connection(h, wsi);
    break;
  case LWS_CALLBACK_HTTP:
    return on_http(h, wsi, req, in ? (const char *)in : "/");
  case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
    return confirm_upgrade(h, wsi, in);
  case LWS_CALLBACK_HTTP_WRITEABLE:
    return req && req->body ? on_http_writable(wsi, req) : 0;
  case LWS_CALLBACK_CLOSED_HTTP:
  case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
    if (req) {
      free(req->body);
      req->body = NULL;
    }
    break;
  default:
    break;
  }
  return lws_callback_http_dummy(wsi, reason, user, in, len);
}

/* Every callback's time is the loop's HTTP phase (steerd_server_charge_http). */
static int charged(struct lws *wsi, uint64_t t0, int rc) {
  steerd_http *h = lws_context_user(lws_get_context(wsi));
  if (h && h->server)
    steerd_server_charge_http(h->server, uv_hrtime() - t0);
  return rc;
}

static int http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                         size_t len) {
  uint64_t t0 = uv_hrtime();
  return charged(wsi, t0, http_serve(wsi, reason, user, in, len));
}

static int view_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                         size_t len) {
  uint64_t t0 = uv_hrtime();
  return charged(wsi, t0, steerd_http_view_callback(wsi, reason, user, in, len));
}

static const struct lws_protocols protocols[] = {
    {"http", http_callback, sizeof(http_req), 0, 0, NULL, 0},
    {STEERD_HTTP_VIEW_PROTOCOL, view_callback, sizeof(void *), PROTO_MAX_MESSAGE_BYTES, 0, NULL, 0},
    {"steerd-agones", steerd_http_agones_callback, 0, 0, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}};

/* ---- lifecycle ------------------------------------------------------------------- */

static void lws_log(int level, const char *line) {
  char text[512];
  snprintf(text, sizeof text, "%s", line);
  text[strcspn(text, "\r\n")] = '\0';
  if (level & LLL_ERR)
    LOG_ERROR("http: %s", text);
  else
    LOG_WARN("http: %s", text);
}

/* Whether bind:port can be listened on, tried before libwebsockets is: its
 * context, failing to bind on a foreign loop, leaves libuv handles behind that
 * crash the loop. 0, or -errno. */
static int try_bind(const char *bind_ip, int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, bind_ip, &a.sin_addr) != 1)
    return -EINVAL;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -errno;
  int one = 1, rc = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0)
    rc = -errno;
  close(fd);
  return rc;
}

static void on_event(void *arg, const proto_event *e, vec2 pos) { steerd_http_views_event(arg, e, pos); }
static void on_snapshot(void *arg) { steerd_http_views_snapshot(arg); }

static void on_closer_closed(uv_handle_t *handle) {
  steerd_http *h = handle->data;
  h->closer_open = 0;
}

/* Waits for the Agones Shutdown call (at most a few tries), then lets go of
 * libwebsockets: it closes its own handles and the loop can end. */
static void on_closer(uv_timer_t *t) {
  steerd_http *h = t->data;
  if (!steerd_http_agones_done(h) && t->repeat) {
    if (uv_timer_get_repeat(t) < 2000) {
      uv_timer_set_repeat(t, uv_timer_get_repeat(t) + 50);
      return;
    }
    LOG_WARN("agones: no answer to Shutdown; exiting anyway");
  }
  uv_timer_stop(t);
  uv_close((uv_handle_t *)t, on_closer_closed);
  steerd_http_agones_close(h);
  if (h->ctx)
    lws_context_destroy(h->ctx);
}

static void on_stopped(void *arg) {
  steerd_http *h = arg;
  steerd_http_agones_shutdown(h);
  steerd_http_close(h);
}

steerd_http *steerd_http_create(uv_loop_t *loop, steerd_server *server, const steerd_config *cfg) {
  steerd_http *h = calloc(1, sizeof(*h));
  if (!h) {
    LOG_ERROR("out of memory");
    return NULL;
  }
  h->loop = loop;
  h->server = server;
  h->cfg = steerd_server_config(server);
  h->start_unix_s = wall_seconds();
  h->addrs = calloc(h->cfg->http_max_connections, sizeof *h->addrs);
  if (!h->addrs ||
      steerd_http_views_init(&h->views, h->cfg, steer_world_capacity(steerd_server_world(server))) != 0 ||
      steerd_http_agones_init(h) != 0) {
    LOG_ERROR("cannot set up the HTTP port");
    steerd_http_destroy(h);
    return NULL;
  }
  if (cfg->http_port != 0) {
    int rc = try_bind(cfg->http_bind, cfg->http_port == STEERD_HTTP_PORT_AUTO ? 0 : cfg->http_port);
    if (rc != 0) {
      LOG_ERROR("cannot listen for HTTP on %s:%d: %s (--http-bind takes an IPv4 address of this machine; "
                "--http-port 0 turns HTTP off, auto picks a free port)",
                cfg->http_bind, cfg->http_port == STEERD_HTTP_PORT_AUTO ? 0 : cfg->http_port, strerror(-rc));
      steerd_http_destroy(h);
      return NULL;
    }
  }
  lws_set_log_level(LLL_ERR | LLL_WARN, lws_log);
  struct lws_context_creation_info info;
  memset(&info, 0, sizeof info);
  void *loops[1] = {loop};
  info.options = LWS_SERVER_OPTION_LIBUV | LWS_SERVER_OPTION_DISABLE_IPV6 | LWS_SERVER_OPTION_VALIDATE_UTF8;
  info.foreign_loops = loops;
  info.protocols = protocols;
  info.user = h;
  info.port = cfg->http_port == 0                       ? CONTEXT_PORT_NO_LISTEN
              : cfg->http_port == STEERD_HTTP_PORT_AUTO ? 0
                                                        : cfg->http_port;
  info.iface = cfg->http_bind;
  info.vhost_name = "steerd";
  info.timeout_secs = 10;
  info.pcontext = &h->ctx; /* NULLed by libwebsockets once the context is wholly destroyed */
  info.keepalive_timeout = 30;
  h->ctx = lws_create_context(&info);
  if (!h->ctx) {
    LOG_ERROR("cannot listen for HTTP on %s:%d (in use, or not an address of this machine)", cfg->http_bind,
              cfg->http_port == STEERD_HTTP_PORT_AUTO ? 0 : cfg->http_port);
    steerd_http_destroy(h);
    return NULL;
  }
  h->vhost = lws_get_vhost_by_name(h->ctx, "steerd");
  if (cfg->http_port != 0) {
    int port = h->vhost ? lws_get_vhost_listen_port(h->vhost) : -1;
    if (port <= 0) {
      LOG_ERROR("cannot listen for HTTP on %s", cfg->http_bind);
      steerd_http_destroy(h);
      return NULL;
    }
    h->port = (uint16_t)port;
    steerd_log_field f[] = {LOG_FIELD_STR("http_bind", cfg->http_bind), LOG_FIELD_INT("http_port", port)};
    steerd_log_fields(STEERD_LOG_INFO, f, 2, "http on %s:%d: /metrics /healthz /readyz, the live view at /",
                      cfg->http_bind, port);
  }
  uv_timer_init(loop, &h->closer);
  h->closer.data = h;
  h->closer_open = 1;
  steerd_server_observer o = {on_event, on_snapshot, on_stopped, h};
  steerd_server_set_observer(server, &o);
  steerd_http_agones_ready(h);
  return h;
}

uint16_t steerd_http_port(const steerd_http *h) { return h ? h->port : 0; }

void steerd_http_draining(steerd_http *h) {
  if (h)
    h->closing = 1;
}

void steerd_http_close(steerd_http *h) {
  if (!h || !h->closer_open || uv_is_active((uv_handle_t *)&h->closer))
    return;
  h->closing = 1;
  steerd_server_set_observer(h->server, NULL);
  uv_timer_start(&h->closer, on_closer, 0, steerd_http_agones_done(h) ? 0 : 50);
}

void steerd_http_destroy(steerd_http *h) {
  if (!h)
    return;
  /* With a foreign loop the context's last stage waits for another call once
   * its handles have closed (and, should any be left, a turn of the loop). */
  for (int i = 0; h->ctx && i < 3; i++) {
    lws_context_destroy(h->ctx);
    uv_run(h->loop, UV_RUN_DEFAULT);
  }
  steerd_http_views_free(&h->views);
  free(h->addrs);
  free(h);
}

/* ---- the healthcheck client ------------------------------------------------------ */

typedef struct check_state {
  int status; /* HTTP status, 0 before the answer */
  int done;
  char body[256];
  size_t body_len;
  char error[160];
} check_state;

static int check_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                          size_t len) {
  check_state *st = lws_context_user(lws_get_context(wsi));
  (void)user;
  switch (reason) {
  case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
    snprintf(st->error, sizeof st->error, "%s", in ? (const char *)in : "connection failed");
    st->done = 1;
    break;
  case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP:
    st->status = (int)lws_http_client_http_response(wsi);
    break;
  case LWS_CALLBACK_RECEIVE_CLIENT_HTTP_READ: {
    size_t room = sizeof st->body - 1 - st->body_len;
    size_t n = len < room ? len : room;
    memcpy(st->body + st->body_len, in, n);
    st->body_len += n;
    st->body[st->body_len] = '\0';
    break;
  }
  case LWS_CALLBACK_RECEIVE_CLIENT_HTTP: {
    char buf[LWS_PRE + 1024];
    char *p = buf + LWS_PRE;
    int n = (int)sizeof buf - LWS_PRE;
    if (lws_http_client_read(wsi, &p, &n) < 0)
      return -1;
    return 0;
  }
  case LWS_CALLBACK_COMPLETED_CLIENT_HTTP:
  case LWS_CALLBACK_CLOSED_CLIENT_HTTP:
    st->done = 1;
    break;
  default:
    break;
  }
  return lws_callback_http_dummy(wsi, reason, user, in, len);
}

int steerd_http_check(uint16_t port, int ready, uint32_t timeout_ms) {
  static const struct lws_protocols check_protocols[] = {{"http", check_callback, 0, 0, 0, NULL, 0},
                                                         {NULL, NULL, 0, 0, 0, NULL, 0}};
  check_state st;
  memset(&st, 0, sizeof st);
  lws_set_log_level(LLL_ERR, lws_log);
  struct lws_context_creation_info info;
  memset(&info, 0, sizeof info);
  info.port = CONTEXT_PORT_NO_LISTEN;
  info.protocols = check_protocols;
  info.user = &st;
  info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
  struct lws_context *ctx = lws_create_context(&info);
  if (!ctx) {
    fprintf(stderr, "steerd healthcheck: cannot start the HTTP client\n");
    return 1;
  }
  const char *path = ready ? "/readyz" : "/healthz";
  struct lws_client_connect_info ci;
  memset(&ci, 0, sizeof ci);
  ci.context = ctx;
  ci.address = "127.0.0.1";
  ci.port = port;
  ci.path = path;
  ci.host = "127.0.0.1";
  ci.origin = "127.0.0.1";
  ci.method = "GET";
  ci.protocol = "http";
  struct lws *wsi = lws_client_connect_via_info(&ci);
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (wsi && !st.done) {
    lws_service(ctx, 50);
    clock_gettime(CLOCK_MONOTONIC, &now);
    double ms = (double)(now.tv_sec - t0.tv_sec) * 1e3 + (double)(now.tv_nsec - t0.tv_nsec) / 1e6;
    if (ms > timeout_ms) {
      snprintf(st.error, sizeof st.error, "no answer within %u ms", timeout_ms);
      break;
    }
  }
  lws_context_destroy(ctx);
  if (st.status == HTTP_STATUS_OK)
    return 0;
  if (st.status)
    fprintf(stderr, "steerd healthcheck: %s answered %d: %s", path, st.status, st.body);
  else
    fprintf(stderr, "steerd healthcheck: 127.0.0.1:%u%s: %s\n", port, path,
            st.error[0] ? st.error : "connection failed");
  return 1;
}

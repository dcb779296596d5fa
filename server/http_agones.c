/* http_agones.c: the Agones game server SDK over its REST API.
 *
 * Under Agones, a sidecar in the pod serves the SDK on 127.0.0.1 at the port
 * in AGONES_SDK_HTTP_PORT. steerd, on its own loop through libwebsockets'
 * client: POST /ready once bound and restored, POST /health every
 * AGONES_HEALTH_INTERVAL_MS while /healthz would pass, POST /shutdown after
 * the drain (README "Scaling out"). Each body is "{}". Failures are logged and
 * counted; the server runs on (the sidecar restarting is not our failure). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http_internal.h"
#include "log.h"

#define AGONES_HEALTH_INTERVAL_MS 2000
#define AGONES_MAX_IN_FLIGHT      8

typedef struct agones_req {
  int used;
  const char *path; /* "/ready", "/health", "/shutdown" */
  int status;       /* HTTP status, 0 before the answer */
  int finished;
} agones_req;

static agones_req reqs[AGONES_MAX_IN_FLIGHT];

static void finish(steerd_http *h, agones_req *r, const char *error) {
  if (r->finished)
    return;
  r->finished = 1;
  h->agones.in_flight--;
  int ok = !error && r->status >= 200 && r->status < 300;
  if (ok) {
    h->agones.ok++;
    if (strcmp(r->path, "/health") == 0)
      LOG_DEBUG("agones: %s answered %d", r->path, r->status);
    else
      LOG_INFO("agones: %s answered %d", r->path, r->status);
  } else {
    h->agones.failed++;
    if (error)
      LOG_WARN("agones: POST %s failed: %s", r->path, error);
    else
      LOG_WARN("agones: POST %s answered %d", r->path, r->status);
  }
  if (strcmp(r->path, "/shutdown") == 0)
    h->agones.shutdown_done = 1;
}

static void post(steerd_http *h, const char *path) {
  if (!h->agones.on || !h->ctx)
    return;
  agones_req *r = NULL;
  for (int i = 0; i < AGONES_MAX_IN_FLIGHT && !r; i++)
    if (!reqs[i].used)
      r = &reqs[i];
  if (!r) {
    LOG_WARN("agones: %d requests still open: %s not sent", AGONES_MAX_IN_FLIGHT, path);
    if (strcmp(path, "/shutdown") == 0)
      h->agones.shutdown_done = 1;
    return;
  }
  memset(r, 0, sizeof(*r));
  r->used = 1;
  r->path = path;
  h->agones.in_flight++;
  struct lws_client_connect_info ci;
  memset(&ci, 0, sizeof ci);
  ci.context = h->ctx;
  ci.address = "127.0.0.1";
  ci.port = h->agones.port;
  ci.path = path;
  ci.host = "127.0.0.1";
  ci.origin = "127.0.0.1";
  ci.method = "POST";
  ci.protocol = "steerd-agones";
  ci.userdata = r;
  if (!lws_client_connect_via_info(&ci)) {
    finish(h, r, "cannot connect");
    r->used = 0;
  }
}

static void on_health(uv_timer_t *t) {
  steerd_http *h = t->data;
  char why[256];
  if (!h->closing && h->agones.in_flight < AGONES_MAX_IN_FLIGHT / 2 && steerd_http_live(h, why, sizeof why))
    post(h, "/health");
}

int steerd_http_agones_init(steerd_http *h) {
  const char *port = getenv("AGONES_SDK_HTTP_PORT");
  if (!port || !*port)
    return 0;
  char *end;
  errno = 0;
  unsigned long p = strtoul(port, &end, 10);
  if (errno || *end || p == 0 || p > 65535) {
    LOG_ERROR("AGONES_SDK_HTTP_PORT is '%s', not a port", port);
    return -1;
  }
  h->agones.on = 1;
  h->agones.port = (uint16_t)p;
  return 0;
}

void steerd_http_agones_ready(steerd_http *h) {
  if (!h->agones.on)
    return;
  LOG_INFO("agones: SDK on 127.0.0.1:%u: Ready now, Health every %d ms, Shutdown after the drain",
           h->agones.port, AGONES_HEALTH_INTERVAL_MS);
  post(h, "/ready");
  uv_timer_init(h->loop, &h->agones.health_timer);
  h->agones.health_timer.data = h;
  h->agones.timer_open = 1;
  uv_timer_start(&h->agones.health_timer, on_health, AGONES_HEALTH_INTERVAL_MS, AGONES_HEALTH_INTERVAL_MS);
}

void steerd_http_agones_shutdown(steerd_http *h) {
  if (!h->agones.on || h->agones.shutdown_sent)
    return;
  h->agones.shutdown_sent = 1;
  if (h->agones.timer_open)
    uv_timer_stop(&h->agones.health_timer);
  post(h, "/shutdown");
}

int steerd_http_agones_done(const steerd_http *h) {
  return !h->agones.on || !h->agones.shutdown_sent || h->agones.shutdown_done;
}

void steerd_http_agones_close(steerd_http *h) {
  if (h->agones.timer_open) {
    h->agones.timer_open = 0;
    uv_close((uv_handle_t *)&h->agones.health_timer, NULL);
  }
}

int steerd_http_agones_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                                size_t len) {
  steerd_http *h = lws_context_user(lws_get_context(wsi));
  agones_req *r = user;
  switch (reason) {
  case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
    if (r) {
      finish(h, r, in ? (const char *)in : "connection failed");
      r->used = 0;
    }
    return 0;
  case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER: {
    unsigned char **p = in, *end = (*p) + len;
    if (lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE,
                                     (const unsigned char *)"application/json", 16, p, end) ||
        lws_add_http_header_content_length(wsi, 2, p, end))
      return -1;
    lws_client_http_body_pending(wsi, 1);
    lws_callback_on_writable(wsi);
    return 0;
  }
  case LWS_CALLBACK_CLIENT_HTTP_WRITEABLE: {
    uint8_t buf[LWS_PRE + 2];
    memcpy(buf + LWS_PRE, "{}", 2);
    lws_client_http_body_pending(wsi, 0);
    return lws_write(wsi, buf + LWS_PRE, 2, LWS_WRITE_HTTP_FINAL) != 2 ? -1 : 0;
  }
  case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP:
    if (r)
      r->status = (int)lws_http_client_http_response(wsi);
    return 0;
  case LWS_CALLBACK_RECEIVE_CLIENT_HTTP: {
    char buf[LWS_PRE + 1024];
    char *p = buf + LWS_PRE;
    int n = (int)sizeof buf - LWS_PRE;
    return lws_http_client_read(wsi, &p, &n) < 0 ? -1 : 0;
  }
  case LWS_CALLBACK_COMPLETED_CLIENT_HTTP:
    if (r)
      finish(h, r, NULL);
    return 0;
  case LWS_CALLBACK_CLOSED_CLIENT_HTTP:
    if (r) {
      finish(h, r, r->status ? NULL : "closed before an answer");
      r->used = 0;
    }
    return 0;
  default:
    return lws_callback_http_dummy(wsi, reason, user, in, len);
  }
}

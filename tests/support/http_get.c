/* http_get.c: see http_get.h. */
#include "http_get.h"

#include <libwebsockets.h>
#include <string.h>
#include <time.h>

typedef struct get_state {
  int status, done;
  char *body;
  size_t cap, len;
} get_state;

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
  get_state *st = lws_context_user(lws_get_context(wsi));
  switch (reason) {
  case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
    st->done = 1;
    break;
  case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP:
    st->status = (int)lws_http_client_http_response(wsi);
    break;
  case LWS_CALLBACK_RECEIVE_CLIENT_HTTP_READ:
    if (st->body && st->cap > 0) {
      size_t room = st->cap - 1 - st->len, n = len < room ? len : room;
      memcpy(st->body + st->len, in, n);
      st->len += n;
      st->body[st->len] = '\0';
    }
    break;
  case LWS_CALLBACK_RECEIVE_CLIENT_HTTP: {
    char buf[LWS_PRE + 4096];
    char *p = buf + LWS_PRE;
    int n = (int)sizeof buf - LWS_PRE;
    return lws_http_client_read(wsi, &p, &n) < 0 ? -1 : 0;
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

struct lws_context *http_client_context(const struct lws_protocols *protocols, void *user) {
  struct lws_context_creation_info info;
  memset(&info, 0, sizeof info);
  info.port = CONTEXT_PORT_NO_LISTEN;
  info.protocols = protocols;
  info.user = user;
  info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
  return lws_create_context(&info);
}

struct lws *http_client_connect(struct lws_context *ctx, uint16_t port, const char *path,
                                const char *protocol, const char *method) {
  struct lws_client_connect_info ci;
  memset(&ci, 0, sizeof ci);
  ci.context = ctx;
  ci.address = "127.0.0.1";
  ci.port = port;
  ci.path = path;
  ci.host = "127.0.0.1";
  ci.origin = "127.0.0.1";
  ci.method = method;
  ci.protocol = protocol;
  return lws_client_connect_via_info(&ci);
}

int http_get(uint16_t port, const char *path, char *body, size_t cap, uint32_t timeout_ms) {
  static const struct lws_protocols protocols[] = {{"http", callback, 0, 0, 0, NULL, 0},
                                                   {NULL, NULL, 0, 0, 0, NULL, 0}};
  get_state st = {0, 0, body, cap, 0};
  if (body && cap)
    body[0] = '\0';
  lws_set_log_level(LLL_ERR, NULL);
  struct lws_context *ctx = http_client_context(protocols, &st);
  if (!ctx)
    return 0;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (http_client_connect(ctx, port, path, "http", "GET")) {
    while (!st.done) {
      lws_service(ctx, 50);
      clock_gettime(CLOCK_MONOTONIC, &now);
      if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > (long)timeout_ms) {
        st.status = 0;
        break;
      }
    }
  }
  lws_context_destroy(ctx);
  return st.status;
}

int http_wait_ready(uint16_t port, uint32_t timeout_ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int status = http_get(port, "/readyz", NULL, 0, timeout_ms);
    clock_gettime(CLOCK_MONOTONIC, &t);
    double ms = (double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) / 1e6;
    if (status == 200 || ms >= (double)timeout_ms)
      return status;
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
}

/* http_get.c: see http_get.h. */
#include "http_get.h"

#include <arpa/inet.h>
#include <libwebsockets.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

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

int http_raw(uint16_t port, const char *request, char *head, size_t cap, uint32_t timeout_ms, int *keep) {
  char buf[4096];
  size_t len = 0;
  int status = 0;
  if (head && cap)
    head[0] = '\0';
  if (keep)
    *keep = -1;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return 0;
  struct timeval tv = {(time_t)(timeout_ms / 1000u), (suseconds_t)(timeout_ms % 1000u) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  size_t n = strlen(request);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 || send(fd, request, n, 0) != (ssize_t)n) {
    close(fd);
    return 0;
  }
  /* The head only: up to the blank line (each recv waits at most timeout_ms). */
  while (len < sizeof buf - 1) {
    ssize_t got = recv(fd, buf + len, sizeof buf - 1 - len, 0);
    if (got <= 0)
      break;
    len += (size_t)got;
    buf[len] = '\0';
    if (strstr(buf, "\r\n\r\n"))
      break;
  }
  buf[len] = '\0';
  if (strncmp(buf, "HTTP/1.", 7) == 0 && len > 12)
    status = atoi(buf + 9);
  if (head && cap)
    snprintf(head, cap, "%s", buf);
  if (keep && status == 101)
    *keep = fd;
  else
    close(fd);
  return status;
}

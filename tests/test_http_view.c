/* test_http_view.c: the live view's WebSocket (http_view.c, PROTOCOL.md 15)
 * against the real server, with a WebSocket client made of libwebsockets in
 * this process: the session (HELLO first, WELCOME), VIEW filtering the
 * snapshots, QUERY, the inspected agent's EVENTs, read-only (FORBIDDEN),
 * malformed input (text, garbage, too large) answered with the exact error
 * codes and the server unharmed, the 20th closing the view with status 1008,
 * handshakes refused with their HTTP status (written by hand: a client library
 * sends none of them), tokens when a secret is set, and the map as
 * a text (JSON) message after WELCOME and again after each change (the demo's
 * side door). */
#include <check.h>
#include <jansson.h>
#include <libwebsockets.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "check_run.h"
#include "demo.h"
#include "http_get.h"
#include "protocol.h"
#include "steerd_proc.h"
#include "wire_core.h"

/* ---- a blocking WebSocket client --------------------------------------------------- */

#define WS_MAX_MSGS 4096

typedef struct ws_msg {
  uint8_t *data;
  size_t len;
  int text; /* a text frame (the map's JSON) */
} ws_msg;

typedef struct ws_client {
  struct lws_context *ctx;
  struct lws *wsi;
  int established, closed, failed;
  int close_status; /* of the server's close frame; 0: none came */
  ws_msg inbox[WS_MAX_MSGS];
  uint32_t head, tail;
  uint8_t rx[1 << 17];
  size_t rx_len;
  uint8_t out[LWS_PRE + 65536];
  size_t out_len;
  int out_binary, out_pending;
} ws_client;

static int ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
  ws_client *c = lws_context_user(lws_get_context(wsi));
  (void)user;
  switch (reason) {
  case LWS_CALLBACK_CLIENT_ESTABLISHED:
    c->established = 1;
    break;
  case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
    c->failed = 1;
    break;
  case LWS_CALLBACK_CLIENT_CLOSED:
    c->closed = 1;
    break;
  case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
    if (len >= 2)
      c->close_status = ((const uint8_t *)in)[0] << 8 | ((const uint8_t *)in)[1];
    break;
  case LWS_CALLBACK_CLIENT_RECEIVE:
    if (c->rx_len + len <= sizeof c->rx) {
      memcpy(c->rx + c->rx_len, in, len);
      c->rx_len += len;
    }
    if (lws_is_final_fragment(wsi) && c->tail - c->head < WS_MAX_MSGS) {
      ws_msg *m = &c->inbox[c->tail++ % WS_MAX_MSGS];
      m->data = malloc(c->rx_len);
      memcpy(m->data, c->rx, c->rx_len);
      m->len = c->rx_len;
      m->text = !lws_frame_is_binary(wsi);
      c->rx_len = 0;
    }
    break;
  case LWS_CALLBACK_CLIENT_WRITEABLE:
    if (c->out_pending) {
      c->out_pending = 0;
      lws_write(wsi, c->out + LWS_PRE, c->out_len, c->out_binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
    }
    break;
  default:
    break;
  }
  return 0;
}

/* Services the connection for at most about 20 ms. lws_service's own timeout is
 * ignored by libwebsockets 4: with nothing to read it waits for its next
 * internal timer (about 30 s, a whole test case's worth when no message is
 * due), so once the connection is up a wsi timer bounds each wait. */
static void ws_service(ws_client *c) {
  if (c->established && !c->closed)
    lws_set_timer_usecs(c->wsi, 20000);
  lws_service(c->ctx, 0);
}

static ws_client *ws_open(uint16_t port) {
  static const struct lws_protocols protocols[] = {{"steerd-view", ws_callback, 0, 1 << 17, 0, NULL, 0},
                                                   {NULL, NULL, 0, 0, 0, NULL, 0}};
  ws_client *c = calloc(1, sizeof *c);
  lws_set_log_level(LLL_ERR, NULL);
  c->ctx = http_client_context(protocols, c);
  ck_assert_ptr_nonnull(c->ctx);
  c->wsi = http_client_connect(c->ctx, port, "/", "steerd-view", NULL);
  uint64_t deadline = steerd_proc_now_ms() + 5000;
  while (!c->established && !c->failed && steerd_proc_now_ms() < deadline)
    ws_service(c);
  ck_assert_msg(c->established, "the WebSocket did not open");
  return c;
}

static void ws_close(ws_client *c) {
  lws_context_destroy(c->ctx);
  while (c->head != c->tail)
    free(c->inbox[c->head++ % WS_MAX_MSGS].data);
  free(c);
}

static void ws_send_raw(ws_client *c, const void *data, size_t len, int binary) {
  memcpy(c->out + LWS_PRE, data, len);
  c->out_len = len;
  c->out_binary = binary;
  c->out_pending = 1;
  lws_callback_on_writable(c->wsi);
  uint64_t deadline = steerd_proc_now_ms() + 3000;
  while (c->out_pending && steerd_proc_now_ms() < deadline)
    ws_service(c);
  ck_assert(!c->out_pending);
}

static void ws_send(ws_client *c, const proto_command *cmd) {
  uint8_t buf[4096];
  size_t n = proto_encode_command(buf, sizeof buf, cmd);
  ck_assert_uint_gt(n, 0);
  ws_send_raw(c, buf, n, 1);
}

/* The next message of one of the types wanted (others are dropped), decoded
 * into *m (poses into poses); 0 when none came within timeout_ms. */
static proto_pose poses[10000];
static int ws_next(ws_client *c, proto_server_msg *m, uint32_t type_mask, uint32_t timeout_ms) {
  uint64_t deadline = steerd_proc_now_ms() + timeout_ms;
  for (;;) {
    while (c->head != c->tail) {
      ws_msg *msg = &c->inbox[c->head++ % WS_MAX_MSGS];
      if (msg->text) { /* a map message: ws_next_map reads those */
        free(msg->data);
        continue;
      }
      proto_error_info err;
      int rc = proto_decode_server_msg(msg->data, msg->len, m, poses, 10000, &err);
      free(msg->data);
      ck_assert_msg(rc == 0, "the server sent an undecodable message (%s)", proto_error_name(err.code));
      if (type_mask & (1u << (m->type - 32)))
        return 1;
    }
    if (c->closed || steerd_proc_now_ms() >= deadline)
      return 0;
    ws_service(c);
  }
}

#define WANT(t) (1u << ((t)-32))

/* A VIEW of the circle of radius r round at (request 8), and its ACK. */
static void view_circle(ws_client *c, proto_server_msg *m, vec2 at, float r) {
  proto_command v;
  memset(&v, 0, sizeof v);
  v.type = PROTO_MSG_VIEW;
  v.request_id = 8;
  v.view.kind = PROTO_VIEW_CENTRE;
  v.view.centre = wire_of_vec2(at);
  v.view.radius = r;
  ws_send(c, &v);
  ck_assert(ws_next(c, m, WANT(PROTO_MSG_ACK), 3000));
  ck_assert_uint_eq(m->ack.request_id, 8);
  ck_assert_uint_eq(m->ack.command, PROTO_MSG_VIEW);
}

/* The next text message of the given type (others are dropped), parsed: every
 * text message must be JSON with a type. NULL when none came within timeout_ms. */
static json_t *ws_next_text(ws_client *c, const char *type, uint32_t timeout_ms) {
  uint64_t deadline = steerd_proc_now_ms() + timeout_ms;
  for (;;) {
    while (c->head != c->tail) {
      ws_msg *msg = &c->inbox[c->head++ % WS_MAX_MSGS];
      json_t *j = NULL;
      if (msg->text) {
        json_error_t err;
        j = json_loadb((const char *)msg->data, msg->len, 0, &err);
        ck_assert_msg(j != NULL, "a text message that is not JSON: %s", err.text);
        const char *t = json_string_value(json_object_get(j, "type"));
        ck_assert_ptr_nonnull(t);
        if (strcmp(t, type) != 0) {
          json_decref(j);
          j = NULL;
        }
      }
      free(msg->data);
      if (j)
        return j;
    }
    if (c->closed || steerd_proc_now_ms() >= deadline)
      return NULL;
    ws_service(c);
  }
}

static json_t *ws_next_map(ws_client *c, uint32_t timeout_ms) { return ws_next_text(c, "map", timeout_ms); }

/* The session message after the WELCOME: the view's role. */
static void expect_role(ws_client *c, const char *role) {
  json_t *sm = ws_next_text(c, "session", 3000);
  ck_assert_ptr_nonnull(sm);
  ck_assert_str_eq(json_string_value(json_object_get(sm, "role")), role);
  json_decref(sm);
}

/* 1 when the map message holds obstacle id. */
static int map_has(const json_t *map, uint32_t id) {
  const json_t *obs = json_object_get(map, "obstacles");
  for (size_t i = 0; i < json_array_size(obs); i++)
    if (json_integer_value(json_object_get(json_array_get(obs, i), "id")) == (json_int_t)id)
      return 1;
  return 0;
}

static proto_command hello(const char *token) {
  proto_command cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.type = PROTO_MSG_HELLO;
  cmd.request_id = 1;
  cmd.hello.version = PROTO_VERSION;
  strcpy(cmd.hello.name, "test-view");
  if (token) {
    cmd.hello.has_token = 1;
    snprintf(cmd.hello.token, sizeof cmd.hello.token, "%s", token);
  }
  return cmd;
}

/* A view on port that said HELLO (no token) and got its WELCOME, into *m. */
static ws_client *welcomed_view(uint16_t port, proto_server_msg *m) {
  ws_client *c = ws_open(port);
  proto_command h = hello(NULL);
  ws_send(c, &h);
  ck_assert(ws_next(c, m, WANT(PROTO_MSG_WELCOME), 3000));
  return c;
}

static void start(steerd_proc *p, const char *const *extra) {
  static const char *const base[] = {"--http-port", "auto", NULL};
  ck_assert_int_eq(steerd_proc_start_with(p, STEERD_BINARY, base, extra, 10000), 0);
}

/* ---- tests ----------------------------------------------------------------------------- */

START_TEST(test_session_view_query) {
  steerd_proc p;
  start(&p, NULL);
  ws_client *c = ws_open(p.http_port);
  proto_server_msg m;
  /* Before HELLO: NOT_WELCOMED, request id echoed. */
  proto_command q;
  memset(&q, 0, sizeof q);
  q.type = PROTO_MSG_QUERY;
  q.request_id = 7;
  q.query.agent = 1;
  ws_send(c, &q);
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_ERROR), 3000));
  ck_assert_uint_eq(m.error.code, PROTO_ERR_NOT_WELCOMED);
  ck_assert_uint_eq(m.error.request_id, 7);
  /* HELLO: WELCOME with a view id, never an agent owner's. */
  proto_command h = hello(NULL);
  ws_send(c, &h);
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_WELCOME), 3000));
  ck_assert_uint_ge(m.welcome.client_id, 0x80000000u);
  ck_assert_uint_eq(m.welcome.protocol, PROTO_VERSION);
  /* Whole-world snapshots: the demo's agents. */
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_SNAPSHOT), 3000));
  ck_assert_uint_eq(m.snapshot.header.agent_total, STEERD_DEMO_AGENTS + STEERD_DEMO_GOTO);
  steer_id some = poses[0].id;
  vec2 at = v2(poses[0].x, poses[0].y);
  /* A VIEW of a 5 m circle where one agent was: fewer agents, all strictly within it (the
   * filter and the encoding read the same positions; 2 cm of slack for the quantization). */
  view_circle(c, &m, at, 5.0f);
  int filtered = 0;
  for (int i = 0; i < 10 && !filtered; i++) {
    ck_assert(ws_next(c, &m, WANT(PROTO_MSG_SNAPSHOT), 3000));
    if (m.snapshot.header.agent_total < STEERD_DEMO_AGENTS + STEERD_DEMO_GOTO) {
      filtered = 1;
      for (uint32_t k = 0; k < m.snapshot.count; k++)
        ck_assert_float_lt(hypotf(poses[k].x - at.x, poses[k].y - at.y), 5.0f + 0.02f);
    }
  }
  ck_assert(filtered);
  /* QUERY: the agent's report; its EVENTs follow from now on. */
  q.request_id = 9;
  q.query.agent = some;
  ws_send(c, &q);
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_ACK), 3000));
  ck_assert_uint_eq(m.ack.command, PROTO_MSG_QUERY);
  ck_assert_uint_eq(m.ack.query.agent, some);
  q.request_id = 10;
  q.query.agent = 12345;
  ws_send(c, &q);
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_ERROR), 3000));
  ck_assert_uint_eq(m.error.code, PROTO_ERR_NO_SUCH_AGENT);
  ck_assert_uint_eq(m.error.request_id, 10);
  ws_close(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

START_TEST(test_read_only_and_malformed) {
  steerd_proc p;
  start(&p, NULL);
  ws_client *c = ws_open(p.http_port);
  proto_server_msg m;
  proto_command h = hello(NULL);
  ws_send(c, &h);
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_WELCOME), 3000));
  /* Commands that change the world: FORBIDDEN. */
  proto_command s;
  memset(&s, 0, sizeof s);
  s.type = PROTO_MSG_STOP;
  s.request_id = 21;
  s.stop.agent = 1;
  ws_send(c, &s);
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_ERROR), 3000));
  ck_assert_uint_eq(m.error.code, PROTO_ERR_FORBIDDEN);
  ck_assert_uint_eq(m.error.request_id, 21);
  /* Not msgpack: BAD_MESSAGE. A text message: BAD_MESSAGE. Too large: TOO_LARGE. */
  static const uint8_t junk[] = {0xc1, 0xff, 0x00};
  ws_send_raw(c, junk, sizeof junk, 1);
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_ERROR), 3000));
  ck_assert_uint_eq(m.error.code, PROTO_ERR_BAD_MESSAGE);
  ws_send_raw(c, "[1,2,3]", 7, 0);
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_ERROR), 3000));
  ck_assert_uint_eq(m.error.code, PROTO_ERR_BAD_MESSAGE);
  static uint8_t big[20000];
  memset(big, 0x90, sizeof big);
  ws_send_raw(c, big, sizeof big, 1);
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_ERROR), 3000));
  ck_assert_uint_eq(m.error.code, PROTO_ERR_TOO_LARGE);
  /* Still served, and so is everything else. */
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_SNAPSHOT), 3000));
  ck_assert_int_eq(http_get(p.http_port, "/healthz", NULL, 0, 3000), 200);
  /* 20 malformed messages (the 3 above count): the 20th's ERROR, then a close frame
   * with status 1008 (policy violation); the server runs on. */
  for (int i = 0; i < 17 && !c->closed; i++)
    ws_send_raw(c, junk, sizeof junk, 1);
  uint64_t deadline = steerd_proc_now_ms() + 5000;
  while (!c->closed && steerd_proc_now_ms() < deadline)
    ws_service(c);
  ck_assert(c->closed);
  ck_assert_int_eq(c->close_status, 1008);
  ws_close(c);
  /* Text messages count the same. */
  c = ws_open(p.http_port);
  for (int i = 0; i < 20 && !c->closed; i++)
    ws_send_raw(c, "[9,1,{}]", 8, 0);
  deadline = steerd_proc_now_ms() + 5000;
  while (!c->closed && steerd_proc_now_ms() < deadline)
    ws_service(c);
  ck_assert(c->closed);
  ck_assert_int_eq(c->close_status, 1008);
  int errors = 0;
  while (ws_next(c, &m, WANT(PROTO_MSG_ERROR), 0))
    errors++;
  ck_assert_int_eq(errors, 20);
  ws_close(c);
  ck_assert_int_eq(http_wait_ready(p.http_port, 10000), 200);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

/* A handshake by hand: GET path with the given version, key and subprotocol
 * headers (NULL: the header is left out); the status, the head into head. */
static int handshake(uint16_t port, const char *path, const char *version, const char *key,
                     const char *protocol, char *head, size_t cap, int *keep) {
  char req[1024];
  int n =
      snprintf(req, sizeof req,
               "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n", path);
  if (version)
    n += snprintf(req + n, sizeof req - (size_t)n, "Sec-WebSocket-Version: %s\r\n", version);
  if (key)
    n += snprintf(req + n, sizeof req - (size_t)n, "Sec-WebSocket-Key: %s\r\n", key);
  if (protocol)
    n += snprintf(req + n, sizeof req - (size_t)n, "Sec-WebSocket-Protocol: %s\r\n", protocol);
  snprintf(req + n, sizeof req - (size_t)n, "\r\n");
  return http_raw(port, req, head, cap, 5000, keep);
}

/* 1 when the head has the header line (names compared without case). */
static int head_has(const char *head, const char *name, const char *value) {
  char want[256];
  snprintf(want, sizeof want, "\r\n%s: %s\r\n", name, value);
  size_t n = strlen(want);
  for (const char *p = head; *p; p++)
    if (strncasecmp(p, want, n) == 0)
      return 1;
  return 0;
}

#define KEY "dGhlIHNhbXBsZSBub25jZQ=="

/* The handshake is refused as PROTOCOL.md 15 says: 404 off /, 426 (naming version
 * 13) for another version, 400 for a bad or missing key and without the
 * subprotocol, 503 when every view slot is taken. */
START_TEST(test_handshake_refusals) {
  steerd_proc p;
  start(&p, NULL);
  char head[4096];
  ck_assert_int_eq(handshake(p.http_port, "/", "13", KEY, "steerd-view", head, sizeof head, NULL), 101);
  ck_assert_msg(head_has(head, "Sec-WebSocket-Protocol", "steerd-view"), "%s", head);
  ck_assert_msg(head_has(head, "Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "%s", head);
  ck_assert_int_eq(handshake(p.http_port, "/", "13", KEY, "chat, steerd-view", head, sizeof head, NULL), 101);
  ck_assert_msg(head_has(head, "Sec-WebSocket-Protocol", "steerd-view"), "%s", head);
  ck_assert_int_eq(handshake(p.http_port, "/", "13", KEY, NULL, head, sizeof head, NULL), 400);
  ck_assert_int_eq(handshake(p.http_port, "/", "13", KEY, "chat", head, sizeof head, NULL), 400);
  ck_assert_int_eq(handshake(p.http_port, "/", "13", KEY, "steerd-agones", head, sizeof head, NULL), 400);
  ck_assert_int_eq(handshake(p.http_port, "/", "99", KEY, "steerd-view", head, sizeof head, NULL), 426);
  ck_assert_msg(head_has(head, "Sec-WebSocket-Version", "13"), "%s", head);
  ck_assert_int_eq(handshake(p.http_port, "/", NULL, KEY, "steerd-view", head, sizeof head, NULL), 426);
  ck_assert_int_eq(handshake(p.http_port, "/", "13", "!!!", "steerd-view", head, sizeof head, NULL), 400);
  ck_assert_int_eq(
      handshake(p.http_port, "/", "13", "dGhlIHNhbXBsZSBub25jZQ", "steerd-view", head, sizeof head, NULL),
      400);
  ck_assert_int_eq(handshake(p.http_port, "/", "13", NULL, "steerd-view", head, sizeof head, NULL), 400);
  ck_assert_int_eq(handshake(p.http_port, "/other", "13", KEY, "steerd-view", head, sizeof head, NULL), 404);
  /* 32 views open: the next is 503 until one closes. */
  int open_fd[32];
  for (int i = 0; i < 32; i++) {
    ck_assert_int_eq(handshake(p.http_port, "/", "13", KEY, "steerd-view", head, sizeof head, &open_fd[i]),
                     101);
    ck_assert_int_ge(open_fd[i], 0);
  }
  ck_assert_int_eq(handshake(p.http_port, "/", "13", KEY, "steerd-view", head, sizeof head, NULL), 503);
  close(open_fd[0]);
  int status = 0;
  uint64_t deadline = steerd_proc_now_ms() + 10000;
  while ((status = handshake(p.http_port, "/", "13", KEY, "steerd-view", head, sizeof head, &open_fd[0])) !=
             101 &&
         steerd_proc_now_ms() < deadline)
    steerd_proc_sleep_ms(20);
  ck_assert_int_eq(status, 101);
  for (int i = 0; i < 32; i++)
    close(open_fd[i]);
  /* The server is unharmed. */
  ck_assert_int_eq(http_get(p.http_port, "/healthz", NULL, 0, 3000), 200);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

START_TEST(test_token_required_with_a_secret) {
  setenv("STEERD_SECRET", "view-test-secret-0123456789abcdef", 1);
  steerd_proc p;
  start(&p, NULL);
  char cmd[512], token[1100] = "";
  snprintf(cmd, sizeof cmd, "%s token --name viewer --role observer", STEERD_BINARY);
  FILE *f = popen(cmd, "r");
  ck_assert_ptr_nonnull(fgets(token, sizeof token, f));
  pclose(f);
  unsetenv("STEERD_SECRET");
  token[strcspn(token, "\n")] = '\0';
  proto_server_msg m;
  /* No token: UNAUTHORIZED, then the server closes the WebSocket. */
  ws_client *c = ws_open(p.http_port);
  proto_command h = hello(NULL);
  ws_send(c, &h);
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_ERROR), 3000));
  ck_assert_uint_eq(m.error.code, PROTO_ERR_UNAUTHORIZED);
  ck_assert_str_eq(m.error.field, "token");
  ck_assert(!ws_next(c, &m, WANT(PROTO_MSG_SNAPSHOT), 3000));
  ck_assert(c->closed);
  ws_close(c);
  /* The API wants it too. */
  ck_assert_int_eq(http_get(p.http_port, "/api/map", NULL, 0, 3000), 401);
  char path[1300];
  snprintf(path, sizeof path, "/api/map?token=%s", token);
  ck_assert_int_eq(http_get(p.http_port, path, NULL, 0, 3000), 200);
  /* With it: WELCOME and snapshots. */
  c = ws_open(p.http_port);
  h = hello(token);
  ws_send(c, &h);
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_WELCOME), 3000));
  expect_role(c, "observer");
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_SNAPSHOT), 3000));
  ws_close(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

/* A map whose message would pass half the view's queue (524 288 bytes; here
 * 12 000 circles, about 700 KB) comes as an href to /api/map, which answers
 * it whole. */
START_TEST(test_big_map_names_api_map) {
  const uint32_t n = 12000;
  char path[64];
  snprintf(path, sizeof path, "/tmp/steerd-view-map-%d.json", (int)getpid());
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("{\"format\": \"steerd-map\", \"version\": 1, \"obstacles\": [", f);
  for (uint32_t i = 0; i < n; i++)
    fprintf(f, "%s{\"id\": %u, \"type\": \"circle\", \"center\": [%d.1, %d.3], \"radius\": 0.35}",
            i ? "," : "", i + 1u, -250 + 4 * (int)(i % 120u), -250 + 4 * (int)(i / 120u));
  fputs("]}", f);
  fclose(f);
  steerd_proc p;
  const char *const extra[] = {"--no-demo", "--world", "-256,-256,256,256", "--map", path, NULL};
  start(&p, extra);
  proto_server_msg m;
  ws_client *c = welcomed_view(p.http_port, &m);
  json_t *first = ws_next_map(c, 3000);
  ck_assert_ptr_nonnull(first);
  ck_assert_str_eq(json_string_value(json_object_get(first, "href")), "/api/map");
  ck_assert_int_eq(json_integer_value(json_object_get(first, "version")), n);
  ck_assert_ptr_null(json_object_get(first, "obstacles"));
  json_decref(first);
  ws_close(c);
  static char body[2u << 20];
  ck_assert_int_eq(http_get(p.http_port, "/api/map", body, sizeof body, 5000), 200);
  ck_assert_uint_gt(strlen(body), 524288u);
  json_error_t err;
  json_t *api = json_loads(body, 0, &err);
  ck_assert_msg(api != NULL, "%s", err.text);
  json_t *obs = json_object_get(api, "obstacles");
  ck_assert_uint_eq(json_array_size(obs), n);
  ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(obs, n - 1u), "id")), n);
  ck_assert_double_eq_tol(json_real_value(json_object_get(json_array_get(obs, 0), "radius_m")), 0.35, 1e-6);
  json_decref(api);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
  unlink(path);
}
END_TEST

START_TEST(test_map_after_welcome_and_changes) {
  steerd_proc p;
  /* At 120 ticks a second (4 times the default) the demo's door changes, due by
   * tick, come 4 times as fast in wall time; each is sent the same. */
  const char *const fast[] = {"--tick-rate", "120", NULL};
  start(&p, fast);
  ws_client *c = ws_open(p.http_port);
  /* No map before WELCOME. */
  ck_assert_ptr_null(ws_next_map(c, 500));
  proto_command h = hello(NULL);
  ws_send(c, &h);
  proto_server_msg m;
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_WELCOME), 3000));
  /* The WELCOME is followed by the map: the demo's level, as /api/map has it. */
  json_t *first = ws_next_map(c, 3000);
  ck_assert_ptr_nonnull(first);
  size_t n = json_array_size(json_object_get(first, "obstacles"));
  ck_assert_uint_ge(n, 24);
  ck_assert(map_has(first, STEERD_DEMO_PARTITION_ID));
  json_t *bounds = json_object_get(first, "bounds_m");
  ck_assert_uint_eq(json_array_size(bounds), 4);
  ck_assert_double_eq(json_real_value(json_array_get(bounds, 0)), -500.0);
  const json_t *o = json_array_get(json_object_get(first, "obstacles"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(o, "kind")), "polygon");
  ck_assert_uint_ge(json_array_size(json_object_get(o, "points_m")), 3);
  char body[65536];
  ck_assert_int_eq(http_get(p.http_port, "/api/map", body, sizeof body, 3000), 200);
  json_error_t err;
  json_t *api = json_loads(body, 0, &err);
  ck_assert_ptr_nonnull(api);
  if (json_integer_value(json_object_get(api, "version")) ==
      json_integer_value(json_object_get(first, "version")))
    ck_assert(json_equal(json_object_get(api, "obstacles"), json_object_get(first, "obstacles")));
  json_decref(api);
  /* The demo's side door closes and opens (at ticks 300 and 900 of every 1200:
   * 20 s apart at 30 Hz, 5 s here): each change brings the whole map again, one
   * version on, with the door or without it. */
  json_int_t version = json_integer_value(json_object_get(first, "version"));
  int door = map_has(first, STEERD_DEMO_SIDE_DOOR_ID);
  for (int k = 0; k < 2; k++) {
    json_t *next = ws_next_map(c, 45000);
    ck_assert_msg(next != NULL, "no map message after version %lld", (long long)version);
    ck_assert_int_gt(json_integer_value(json_object_get(next, "version")), version);
    ck_assert_int_eq(map_has(next, STEERD_DEMO_SIDE_DOOR_ID), !door);
    ck_assert_uint_eq(json_array_size(json_object_get(next, "obstacles")), door ? n - 1 : n + 1);
    n = json_array_size(json_object_get(next, "obstacles"));
    version = json_integer_value(json_object_get(next, "version"));
    door = !door;
    json_decref(next);
  }
  /* Snapshots went on meanwhile. */
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_SNAPSHOT), 3000));
  json_decref(first);
  ws_close(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

/* The next agents message and the SNAPSHOT right after it (other binary
 * messages between are dropped; no other text may come between): 0 when none
 * came within timeout_ms. */
static int ws_next_agents(ws_client *c, json_t **agents, proto_server_msg *m, uint32_t timeout_ms) {
  *agents = ws_next_text(c, "agents", timeout_ms);
  if (!*agents)
    return 0;
  uint64_t deadline = steerd_proc_now_ms() + timeout_ms;
  for (;;) {
    while (c->head != c->tail) {
      ws_msg *msg = &c->inbox[c->head++ % WS_MAX_MSGS];
      ck_assert_msg(!msg->text, "a text message between the agents message and its snapshot");
      proto_error_info err;
      int rc = proto_decode_server_msg(msg->data, msg->len, m, poses, 10000, &err);
      free(msg->data);
      ck_assert_int_eq(rc, 0);
      if (m->type == PROTO_MSG_SNAPSHOT)
        return 1;
    }
    if (c->closed || steerd_proc_now_ms() >= deadline)
      return 0;
    ws_service(c);
  }
}

/* The agents message lists the snapshot's agents in its order (one part: the
 * demo's 16 KB), each with the radius, behaviour and owner QUERY reports. */
static void check_agents(ws_client *c, const json_t *agents, const proto_server_msg *m) {
  ck_assert_int_eq(json_integer_value(json_object_get(agents, "tick")), (json_int_t)m->snapshot.header.tick);
  ck_assert(json_is_true(json_object_get(agents, "complete")));
  const json_t *list = json_object_get(agents, "agents");
  ck_assert_uint_eq(m->snapshot.header.part_count, 1);
  ck_assert_uint_eq(json_array_size(list), m->snapshot.count);
  for (uint32_t k = 0; k < m->snapshot.count; k++)
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(list, k), 0)), (json_int_t)poses[k].id);
  /* The first agent against its QUERY (the demo's NPCs change behaviour only on their own schedule). */
  const json_t *a = json_array_get(list, 0);
  proto_command q;
  memset(&q, 0, sizeof q);
  q.type = PROTO_MSG_QUERY;
  q.request_id = 99;
  q.query.agent = (steer_id)json_integer_value(json_array_get(a, 0));
  ws_send(c, &q);
  proto_server_msg r;
  ck_assert(ws_next(c, &r, WANT(PROTO_MSG_ACK), 3000));
  ck_assert_uint_eq(r.ack.request_id, 99);
  const proto_agent_report *rep = &r.ack.query;
  ck_assert_double_eq_tol(json_real_value(json_array_get(a, 1)), (double)rep->limits.radius, 0.005);
  ck_assert_str_eq(json_string_value(json_array_get(a, 2)), proto_behaviour_name(rep->behaviour));
  ck_assert_int_eq(json_integer_value(json_array_get(a, 3)), (json_int_t)rep->owner);
}

START_TEST(test_agents_message) {
  steerd_proc p;
  start(&p, NULL);
  proto_server_msg m;
  ws_client *c = welcomed_view(p.http_port, &m);
  /* With the first snapshot: every agent of the world. */
  json_t *agents;
  ck_assert(ws_next_agents(c, &agents, &m, 3000));
  ck_assert_uint_eq(m.snapshot.header.agent_total, STEERD_DEMO_AGENTS + STEERD_DEMO_GOTO);
  check_agents(c, agents, &m);
  json_decref(agents);
  /* About once a second after: not with every snapshot (10 a second). */
  uint64_t t0 = steerd_proc_now_ms();
  ck_assert(ws_next_agents(c, &agents, &m, 3000));
  uint64_t gap = steerd_proc_now_ms() - t0;
  ck_assert_msg(gap >= 500 && gap <= 2500, "the next agents message after %llu ms", (unsigned long long)gap);
  json_decref(agents);
  /* A VIEW of a 20 m circle: its first snapshot comes with the agents of that circle. */
  vec2 at = v2(poses[0].x, poses[0].y);
  view_circle(c, &m, at, 20.0f);
  t0 = steerd_proc_now_ms();
  ck_assert(ws_next_agents(c, &agents, &m, 3000));
  ck_assert_uint_le(steerd_proc_now_ms() - t0, 400);
  ck_assert_uint_lt(m.snapshot.header.agent_total, STEERD_DEMO_AGENTS + STEERD_DEMO_GOTO);
  for (uint32_t k = 0; k < m.snapshot.count; k++)
    ck_assert_float_lt(hypotf(poses[k].x - at.x, poses[k].y - at.y), 20.0f + 0.02f);
  check_agents(c, agents, &m);
  json_decref(agents);
  ws_close(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

/* A command of an admin's view and its reply (ws_next's). */
static void admin_send(ws_client *c, proto_server_msg *m, const proto_command *cmd) {
  ws_send(c, cmd);
  ck_assert(ws_next(c, m, WANT(PROTO_MSG_ACK) | WANT(PROTO_MSG_ERROR), 3000));
  ck_assert_uint_eq(m->type == PROTO_MSG_ACK ? m->ack.request_id : m->error.request_id, cmd->request_id);
}

static proto_command circle_at(uint32_t request_id, uint32_t id, float x, float y) {
  proto_command a;
  memset(&a, 0, sizeof a);
  a.type = PROTO_MSG_ADD_OBSTACLE;
  a.request_id = request_id;
  a.add_obstacle.id = id;
  a.add_obstacle.kind = PROTO_OBSTACLE_CIRCLE;
  a.add_obstacle.count = 1;
  a.add_obstacle.points[0] = proto_v2(x, y);
  a.add_obstacle.radius = 1.0f;
  return a;
}

/* Anonymous admins (--anonymous-role admin, or the loopback development
 * default) on loopback: the view sends GOTOs and edits the map as an ENet
 * admin would, each answered, the map message following; errors as on ENet;
 * at most 20 a second. A view of another role: FORBIDDEN, nothing changed. */
START_TEST(test_admin_view_commands) {
  steerd_proc p;
  const char *const admin[] = {"--anonymous-role", "admin", NULL};
  start(&p, admin);
  proto_server_msg m;
  ws_client *c = welcomed_view(p.http_port, &m);
  expect_role(c, "admin");
  ck_assert(ws_next(c, &m, WANT(PROTO_MSG_SNAPSHOT), 3000));
  proto_id agent = poses[0].id;
  /* A circle added: ACKed with the map's new version, then the map message has it. */
  proto_command add = circle_at(31, 900, -200.0f, 200.0f);
  admin_send(c, &m, &add);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  ck_assert_uint_eq(m.ack.obstacle, 900);
  uint32_t version = m.ack.map_version;
  json_t *map = ws_next_map(c, 3000);
  ck_assert_ptr_nonnull(map);
  ck_assert_uint_ge(json_integer_value(json_object_get(map, "version")), version);
  ck_assert(map_has(map, 900));
  json_decref(map);
  /* Again: OBSTACLE_EXISTS, field "id", as on ENet. */
  add.request_id = 32;
  admin_send(c, &m, &add);
  ck_assert_uint_eq(m.type, PROTO_MSG_ERROR);
  ck_assert_uint_eq(m.error.code, PROTO_ERR_OBSTACLE_EXISTS);
  ck_assert_str_eq(m.error.field, "id");
  /* Removed: the next map has it no more. */
  proto_command rm;
  memset(&rm, 0, sizeof rm);
  rm.type = PROTO_MSG_REMOVE_OBSTACLE;
  rm.request_id = 33;
  rm.remove_obstacle.id = 900;
  admin_send(c, &m, &rm);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  ck_assert_uint_gt(m.ack.map_version, version);
  map = ws_next_map(c, 3000);
  ck_assert_ptr_nonnull(map);
  ck_assert(!map_has(map, 900));
  json_decref(map);
  /* A GOTO for one of the server's NPCs: ACKed, and QUERY says goto. */
  proto_command go;
  memset(&go, 0, sizeof go);
  go.type = PROTO_MSG_SET_BEHAVIOUR;
  go.request_id = 34;
  go.set_behaviour.agent = agent;
  go.set_behaviour.behaviour.kind = PROTO_BEHAVIOUR_GOTO;
  go.set_behaviour.behaviour.present = PROTO_BHV_TARGET;
  go.set_behaviour.behaviour.target = proto_v2(30.0f, 12.5f);
  admin_send(c, &m, &go);
  ck_assert_msg(m.type == PROTO_MSG_ACK, "GOTO: error %u %s", m.error.code, m.error.message);
  ck_assert_uint_eq(m.ack.agent, agent);
  proto_command q;
  memset(&q, 0, sizeof q);
  q.type = PROTO_MSG_QUERY;
  q.request_id = 35;
  q.query.agent = agent;
  admin_send(c, &m, &q);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  ck_assert_uint_eq(m.ack.query.behaviour, PROTO_BEHAVIOUR_GOTO);
  /* No such agent: NO_SUCH_AGENT, field "agent". */
  go.request_id = 36;
  go.set_behaviour.agent = 77;
  admin_send(c, &m, &go);
  ck_assert_uint_eq(m.type, PROTO_MSG_ERROR);
  ck_assert_uint_eq(m.error.code, PROTO_ERR_NO_SUCH_AGENT);
  ck_assert_str_eq(m.error.field, "agent");
  /* 45 sent at once, then their replies: no more than 20 a second are run (the
   * commands above count), the rest RATE_LIMITED, each answered in order. */
  for (uint32_t i = 0; i < 45; i++) {
    rm.request_id = 100 + i;
    rm.remove_obstacle.id = 5000 + i;
    ws_send(c, &rm);
  }
  uint32_t limited = 0, missing = 0;
  for (uint32_t i = 0; i < 45; i++) {
    ck_assert(ws_next(c, &m, WANT(PROTO_MSG_ERROR), 3000));
    ck_assert_uint_eq(m.error.request_id, 100 + i);
    limited += m.error.code == PROTO_ERR_RATE_LIMITED;
    missing += m.error.code == PROTO_ERR_NO_SUCH_OBSTACLE;
  }
  ck_assert_uint_eq(limited + missing, 45);
  ck_assert_uint_le(missing, 40); /* the 45 arrive within two seconds of server time */
  ck_assert_uint_ge(missing, 1);
  ws_close(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
  /* A controller's view (--anonymous-role controller): FORBIDDEN, the map unchanged. */
  start(&p, NULL);
  c = welcomed_view(p.http_port, &m);
  expect_role(c, "controller");
  add.request_id = 41;
  admin_send(c, &m, &add);
  ck_assert_uint_eq(m.type, PROTO_MSG_ERROR);
  ck_assert_uint_eq(m.error.code, PROTO_ERR_FORBIDDEN);
  ck_assert(!m.error.has_field);
  char body[65536];
  ck_assert_int_eq(http_get(p.http_port, "/api/map", body, sizeof body, 3000), 200);
  ck_assert_ptr_null(strstr(body, "\"id\":900,"));
  ws_close(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

/* The next message of c, text or binary, within timeout_ms; NULL when none
 * came (the caller frees its data). */
static ws_msg *ws_take(ws_client *c, uint32_t timeout_ms) {
  uint64_t deadline = steerd_proc_now_ms() + timeout_ms;
  while (c->head == c->tail && !c->closed && steerd_proc_now_ms() < deadline)
    ws_service(c);
  return c->head != c->tail ? &c->inbox[c->head++ % WS_MAX_MSGS] : NULL;
}

/* The loop's work per tick: a ticks message right before each agents
 * message, naming the phases, at the tick interval, each tick once and in
 * order across messages, ending before the agents message's tick. */
START_TEST(test_ticks_message) {
  static const char *const phases[] = {"step", "commands", "enet", "send", "checkpoint", "http"};
  steerd_proc p;
  start(&p, NULL);
  proto_server_msg m;
  ws_client *c = welcomed_view(p.http_port, &m);
  double interval_ms = 1000.0 / m.welcome.tick_rate;
  uint64_t last = 0;
  for (int k = 0; k < 3; k++) {
    json_t *t = ws_next_text(c, "ticks", 3000);
    ck_assert_ptr_nonnull(t);
    ck_assert_double_eq_tol(json_number_value(json_object_get(t, "interval_ms")), interval_ms, 0.0006);
    json_t *names = json_object_get(t, "phases"), *ticks = json_object_get(t, "ticks");
    ck_assert_uint_eq(json_array_size(names), 6);
    for (size_t i = 0; i < 6; i++)
      ck_assert_str_eq(json_string_value(json_array_get(names, i)), phases[i]);
    size_t n = json_array_size(ticks);
    ck_assert_uint_ge(n, 1);
    ck_assert_uint_le(n, 128);
    uint64_t first = 0, step_us = 0;
    for (size_t i = 0; i < n; i++) {
      json_t *e = json_array_get(ticks, i);
      ck_assert_uint_eq(json_array_size(e), 7);
      for (size_t j = 0; j < 7; j++)
        ck_assert_msg(json_is_integer(json_array_get(e, j)) && json_integer_value(json_array_get(e, j)) >= 0,
                      "entry %zu, field %zu: not a count", i, j);
      uint64_t tick = (uint64_t)json_integer_value(json_array_get(e, 0));
      ck_assert_msg(tick > last, "tick %llu after %llu", (unsigned long long)tick, (unsigned long long)last);
      if (i == 0)
        first = tick;
      last = tick;
      step_us += (uint64_t)json_integer_value(json_array_get(e, 1));
    }
    /* Each tick's own entry, but for ticks a stall ran together. */
    ck_assert_uint_ge(n, (last - first + 1) / 2);
    ck_assert_uint_gt(step_us, 0);
    json_decref(t);
    /* The agents message comes next, of the tick whose step has not ended yet. */
    ws_msg *next = ws_take(c, 3000);
    ck_assert_ptr_nonnull(next);
    ck_assert_msg(next->text, "a binary message between the ticks message and the agents message");
    json_t *agents = json_loadb((const char *)next->data, next->len, 0, NULL);
    free(next->data);
    ck_assert_ptr_nonnull(agents);
    ck_assert_str_eq(json_string_value(json_object_get(agents, "type")), "agents");
    ck_assert_uint_gt((uint64_t)json_integer_value(json_object_get(agents, "tick")), last);
    json_decref(agents);
  }
  ws_close(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("http_view");
  TCase *tc = check_tcase(s, "view", 120);
  tcase_add_test(tc, test_session_view_query);
  tcase_add_test(tc, test_read_only_and_malformed);
  tcase_add_test(tc, test_handshake_refusals);
  tcase_add_test(tc, test_token_required_with_a_secret);
  tcase_add_test(tc, test_map_after_welcome_and_changes);
  tcase_add_test(tc, test_agents_message);
  tcase_add_test(tc, test_ticks_message);
  tcase_add_test(tc, test_admin_view_commands);
  tcase_add_test(tc, test_big_map_names_api_map);
  return check_run(s);
}

/* http_get.h: a blocking HTTP GET on 127.0.0.1 for tests, with libwebsockets'
 * client (the same library the server uses), and the client context and
 * connection it is made of, for the tests' and benchmarks' own WebSocket
 * clients (live views); and a request written by hand, for the handshakes a
 * client library refuses to send. */
#ifndef STEERD_HTTP_GET_H
#define STEERD_HTTP_GET_H

#include <stddef.h>
#include <stdint.h>

struct lws;
struct lws_context;
struct lws_protocols;

/* GET path from 127.0.0.1:port. Returns the HTTP status (0 when no answer came
 * within timeout_ms); the body, NUL-terminated and cut at cap - 1 bytes, goes
 * to body (may be NULL). */
int http_get(uint16_t port, const char *path, char *body, size_t cap, uint32_t timeout_ms);

/* GETs /readyz until it answers 200 or timeout_ms pass (a server is ready once
 * the navigation meshes of the radius classes in use are built, a tick or
 * two after it listens). Returns the last status. */
int http_wait_ready(uint16_t port, uint32_t timeout_ms);

/* A client context (no listening socket, IPv4) for protocols, with user as its
 * user data (lws_context_user). NULL on failure. */
struct lws_context *http_client_context(const struct lws_protocols *protocols, void *user);

/* Starts a connection to 127.0.0.1:port for path over protocol: a WebSocket
 * subprotocol (method NULL) or plain HTTP ("http", method "GET"). The wsi, or
 * NULL when it could not start. */
struct lws *http_client_connect(struct lws_context *ctx, uint16_t port, const char *path,
                                const char *protocol, const char *method);

/* Sends request, bytes as given, to 127.0.0.1:port and reads the head of the
 * response (status line and headers). Returns its HTTP status, 0 when none
 * came (refused, closed, or nothing within timeout_ms per read); head (may be
 * NULL) gets the head, NUL-terminated. With keep, a connection that switched
 * protocols (101) stays open and *keep is its socket (close() it), else *keep
 * is -1. */
int http_raw(uint16_t port, const char *request, char *head, size_t cap, uint32_t timeout_ms, int *keep);

#endif /* STEERD_HTTP_GET_H */

/* http.h: the server's HTTP port, on the server's own libuv loop.
 *
 * libwebsockets (Debian's libwebsockets17 with its libuv event library) runs
 * on the loop that ticks the world (LWS_SERVER_OPTION_LIBUV with a foreign
 * loop): no thread, no locks; a request is answered between ticks. It serves
 *   GET /metrics   the Prometheus text format (metrics.c)
 *   GET /healthz   liveness: 200 while the loop turns and ticks are not stalled
 *   GET /readyz    readiness: 200 when bound, restored, not draining and the
 *                  last checkpoint did not fail; 503 with the reasons otherwise
 *   GET /          the live view (server/web/, compiled in), and its WebSocket
 *                  (subprotocol "steerd-view", http_view.c)
 *   GET /api/agent?id=N   one agent's path and target as JSON, for the view
 *   GET /api/map   the map's obstacles as JSON, for the view
 * and, when AGONES_SDK_HTTP_PORT is set, calls the Agones SDK (http_agones.c). */
#ifndef STEERD_HTTP_H
#define STEERD_HTTP_H

#include <stdint.h>
#include <uv.h>

#include "server.h"

typedef struct steerd_http steerd_http;

/* Binds cfg->http_bind:http_port (when http_port != 0) and logs
 * "http on ADDR:PORT"; with http_port 0 only the Agones client runs, if asked
 * for. Returns NULL after logging why. */
steerd_http *steerd_http_create(uv_loop_t *loop, steerd_server *server, const steerd_config *cfg);
uint16_t steerd_http_port(const steerd_http *h); /* 0 when not listening */
/* The server is draining: /readyz fails from now on. */
void steerd_http_draining(steerd_http *h);
/* Closes the views and the listener; libwebsockets closes its handles on the
 * loop, which ends once they are closed. Accepts NULL. */
void steerd_http_close(steerd_http *h);
/* After the loop has ended. Accepts NULL. */
void steerd_http_destroy(steerd_http *h);

/* `steerd healthcheck`: GET /healthz (or /readyz) of 127.0.0.1:port; 0 when it
 * answers 200 within timeout_ms, 1 otherwise (why goes to stderr). */
int steerd_http_check(uint16_t port, int ready, uint32_t timeout_ms);

#endif /* STEERD_HTTP_H */

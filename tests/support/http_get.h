/* http_get.h: a blocking HTTP GET on 127.0.0.1 for tests, with libwebsockets'
 * client (the same library the server uses; no HTTP written by hand). */
#ifndef STEERD_HTTP_GET_H
#define STEERD_HTTP_GET_H

#include <stddef.h>
#include <stdint.h>

/* GET path from 127.0.0.1:port. Returns the HTTP status (0 when no answer came
 * within timeout_ms); the body, NUL-terminated and cut at cap - 1 bytes, goes
 * to body (may be NULL). */
int http_get(uint16_t port, const char *path, char *body, size_t cap, uint32_t timeout_ms);

#endif /* STEERD_HTTP_GET_H */

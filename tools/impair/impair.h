/* impair.h: steerd_impair, a UDP relay on loopback that impairs the traffic
 * through it (loss, latency, jitter, duplication, reordering, a bandwidth cap),
 * for tests and benchmarks of the netcode.
 *
 *   client --(up)--> 127.0.0.1:listen_port  [proxy]  --(up)--> 127.0.0.1:upstream_port
 *   client <-(down)- 127.0.0.1:listen_port  [proxy]  <-(down)- 127.0.0.1:upstream_port
 *
 * Each distinct client address gets its own upstream socket (bound to
 * 127.0.0.1, an ephemeral port), so the server sees one peer per client and
 * several clients can share one proxy. The table of clients is bounded
 * (max_clients); an entry idle for idle_timeout_ms is closed.
 *
 * Per datagram and direction, in this order: loss (dropped, never queued);
 * bandwidth (serialised at bytes_per_second behind the datagrams before it);
 * delay = latency + jitter (uniform in [-jitter, +jitter] or normal with
 * standard deviation jitter, clamped at 0, so datagrams can overtake each
 * other); with probability reorder, held back reorder_ms more; with
 * probability duplicate, a second copy with its own jitter. A datagram with
 * no delay at all goes out at once; the others wait in a bounded min-heap
 * (max_queued per direction; a full heap drops and counts) served by one
 * uv_timer.
 *
 * Every datagram draws the same seven numbers from its direction's random
 * stream (xoshiro256**, seeded from config.seed), whatever the settings, so a
 * seed gives the same loss pattern with or without jitter or duplication.
 *
 * Only the local machine: both addresses must be numeric IPv4 in 127.0.0.0/8
 * (anything else is refused with ENOTLOOPBACK), and datagrams from a
 * non-loopback source are dropped and counted.
 *
 * Runs on a caller-provided uv_loop_t. Not thread-safe, except
 * steerd_impair_request_stop(). Nothing allocates after create. */
#ifndef STEERD_IMPAIR_H
#define STEERD_IMPAIR_H

#include <stdint.h>

#include <uv.h>

/* Error codes: 0 is success, negatives are errors (see steerd_impair_strerror). */
typedef enum steerd_impair_error {
  STEERD_IMPAIR_OK = 0,
  STEERD_IMPAIR_EINVAL = -1,       /* bad argument or configuration */
  STEERD_IMPAIR_ENOMEM = -2,       /* create failed to allocate */
  STEERD_IMPAIR_ENOTLOOPBACK = -3, /* an address outside 127.0.0.0/8 (or not numeric IPv4) */
  STEERD_IMPAIR_EBIND = -4,        /* the listen address could not be bound (port in use?) */
  STEERD_IMPAIR_EUV = -5,          /* another libuv call failed */
  STEERD_IMPAIR_ERROR_COUNT = 6
} steerd_impair_error;

const char *steerd_impair_strerror(int code);

typedef enum steerd_impair_dir {
  STEERD_IMPAIR_UP = 0, /* client -> server */
  STEERD_IMPAIR_DOWN,   /* server -> client */
  STEERD_IMPAIR_DIR_COUNT
} steerd_impair_dir;

typedef enum steerd_impair_jitter {
  STEERD_IMPAIR_JITTER_UNIFORM = 0, /* uniform in [-jitter_ms, +jitter_ms] */
  STEERD_IMPAIR_JITTER_NORMAL,      /* normal, standard deviation jitter_ms, cut at 4 sigma */
  STEERD_IMPAIR_JITTER_COUNT
} steerd_impair_jitter;

/* The impairment of one direction. All zero: a clean link. */
typedef struct steerd_impair_link {
  double loss;                      /* probability a datagram is dropped, 0..1 */
  uint32_t latency_ms;              /* fixed one-way delay, ms (<= 60000) */
  uint32_t jitter_ms;               /* ms (<= 60000), see jitter_dist */
  steerd_impair_jitter jitter_dist; /* uniform */
  double duplicate;                 /* probability a datagram is sent twice, 0..1 */
  double reorder;                   /* probability a datagram is held back reorder_ms more, 0..1 */
  uint32_t reorder_ms;              /* ms (20, <= 60000) */
  uint64_t bytes_per_second;        /* bandwidth cap, bytes/s; 0 = none */
} steerd_impair_link;

typedef struct steerd_impair_config {
  const char *listen_host;   /* numeric IPv4 in 127.0.0.0/8 ("127.0.0.1"); copied at create */
  uint16_t listen_port;      /* 0 = ephemeral, see steerd_impair_port() (0) */
  const char *upstream_host; /* numeric IPv4 in 127.0.0.0/8 ("127.0.0.1"); copied at create */
  uint16_t upstream_port;    /* the server's port; required, no default */
  steerd_impair_link link[STEERD_IMPAIR_DIR_COUNT]; /* by steerd_impair_dir (clean) */
  uint64_t seed;                                    /* random streams (1) */
  uint32_t max_clients;                             /* distinct client addresses at once, 1..65536 (256) */
  uint32_t idle_timeout_ms; /* a client silent both ways this long is forgotten (30000) */
  uint32_t max_queued;      /* delayed datagrams held per direction, 1..1048576 (4096) */
  uint32_t max_datagram;    /* bytes of one delayed datagram, 64..65507 (2048); larger ones are
                               dropped as overflow unless they go out at once */
} steerd_impair_config;

typedef struct steerd_impair_dir_stats {
  uint64_t received;    /* datagrams in */
  uint64_t forwarded;   /* datagrams out, duplicates included */
  uint64_t dropped;     /* lost on purpose (loss) */
  uint64_t duplicated;  /* extra copies made */
  uint64_t delayed;     /* datagrams (and copies) that waited in the heap */
  uint64_t reordered;   /* held back reorder_ms */
  uint64_t overflow;    /* dropped: heap full or larger than max_datagram */
  uint64_t send_errors; /* dropped: the send failed or the client entry was gone */
  uint64_t bytes_received;
  uint64_t bytes_forwarded;
} steerd_impair_dir_stats;

typedef struct steerd_impair_stats {
  steerd_impair_dir_stats dir[STEERD_IMPAIR_DIR_COUNT];
  uint64_t clients_created;
  uint64_t clients_expired;
  uint64_t table_full; /* datagrams from a new client dropped: max_clients reached */
  uint64_t refused;    /* datagrams from a non-loopback source, dropped */
  uint64_t truncated;  /* datagrams larger than the receive buffer, dropped */
  uint32_t clients_active;
  uint32_t queued[STEERD_IMPAIR_DIR_COUNT]; /* waiting in the heap now */
} steerd_impair_stats;

typedef struct steerd_impair steerd_impair;

steerd_impair_config steerd_impair_default_config(void);

/* Validates cfg, allocates everything, binds listen_host:listen_port and
 * starts relaying on loop (the relay runs whenever the loop runs). On success
 * *out receives the proxy and 0 is returned; otherwise a negative code and
 * *out is NULL. Call on the loop's thread, or before the loop runs. */
int steerd_impair_create(uv_loop_t *loop, const steerd_impair_config *cfg, steerd_impair **out);

/* The bound listen port (the ephemeral one when listen_port was 0). */
uint16_t steerd_impair_port(const steerd_impair *p);

/* Stops relaying and closes every handle; datagrams still queued are dropped
 * (not counted). The loop finishes the closes on its next run, after which it
 * has nothing of the proxy's left. Idempotent. Call on the loop's thread. */
void steerd_impair_close(steerd_impair *p);

/* steerd_impair_close() from any thread (or a signal handler): wakes the loop
 * with a uv_async_t that closes the proxy. Only before the proxy has been
 * closed some other way; calls after the first do nothing. */
void steerd_impair_request_stop(steerd_impair *p);

/* 1 once every handle is closed (the loop may return). */
int steerd_impair_closed(const steerd_impair *p);

/* Frees the proxy. If its handles are not all closed yet, closes them and
 * runs the loop (UV_RUN_NOWAIT) until they are, so do not call it from inside
 * the loop's callbacks unless steerd_impair_closed() is 1. Accepts NULL. */
void steerd_impair_destroy(steerd_impair *p);

/* Copies the counters. On the loop's thread, or after the loop returned. */
void steerd_impair_get_stats(const steerd_impair *p, steerd_impair_stats *out);

/* 1 if host is a numeric IPv4 address in 127.0.0.0/8. */
int steerd_impair_is_loopback(const char *host);

#endif /* STEERD_IMPAIR_H */

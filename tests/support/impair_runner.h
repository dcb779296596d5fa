/* impair_runner.h: the impairment proxy (tools/impair) on its own libuv loop in
 * a thread of the test process, so a test can run clients meanwhile. */
#ifndef IMPAIR_RUNNER_H
#define IMPAIR_RUNNER_H

#include <pthread.h>
#include <stdint.h>
#include <uv.h>

#include "impair.h"

typedef struct impair_runner {
  uv_loop_t loop;
  steerd_impair *proxy;
  uint16_t port; /* the proxy's: clients connect here */
  pthread_t thread;
  steerd_impair_stats stats; /* after impair_runner_stop */
} impair_runner;

/* Creates the proxy and starts its thread. 0, or a steerd_impair error (see
 * steerd_impair_strerror; STEERD_IMPAIR_EUV when the loop or thread cannot start). */
int impair_runner_start(impair_runner *r, const steerd_impair_config *cfg);

/* Stops the proxy, joins the thread, keeps the final stats in r->stats and
 * frees everything. 0 when the proxy closed cleanly, else -1. */
int impair_runner_stop(impair_runner *r);

#endif /* IMPAIR_RUNNER_H */

/* impair_runner.c: see impair_runner.h. */
#include "impair_runner.h"

#include <string.h>

static void *runner_main(void *arg) {
  impair_runner *r = arg;
  uv_run(&r->loop, UV_RUN_DEFAULT);
  return NULL;
}

int impair_runner_start(impair_runner *r, const steerd_impair_config *cfg) {
  memset(r, 0, sizeof *r);
  if (uv_loop_init(&r->loop) != 0)
    return STEERD_IMPAIR_EUV;
  int rc = steerd_impair_create(&r->loop, cfg, &r->proxy);
  if (rc != 0) {
    uv_loop_close(&r->loop);
    return rc;
  }
  r->port = steerd_impair_port(r->proxy);
  if (r->port == 0 || pthread_create(&r->thread, NULL, runner_main, r) != 0) {
    steerd_impair_request_stop(r->proxy);
    uv_run(&r->loop, UV_RUN_DEFAULT);
    steerd_impair_destroy(r->proxy);
    uv_loop_close(&r->loop);
    return STEERD_IMPAIR_EUV;
  }
  return 0;
}

int impair_runner_stop(impair_runner *r) {
  steerd_impair_request_stop(r->proxy);
  pthread_join(r->thread, NULL);
  int ok = steerd_impair_closed(r->proxy);
  steerd_impair_get_stats(r->proxy, &r->stats);
  steerd_impair_destroy(r->proxy);
  ok &= uv_loop_close(&r->loop) == 0;
  return ok ? 0 : -1;
}

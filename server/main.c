/* main.c: steerd, the authoritative movement server. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "config.h"
#include "log.h"
#include "protocol.h"
#include "server.h"

typedef struct signals {
  uv_signal_t sigint, sigterm;
  steerd_server *server;
} signals;

static void on_signal(uv_signal_t *h, int signum) {
  signals *sig = h->data;
  LOG_INFO("received %s", signum == SIGINT ? "SIGINT" : "SIGTERM");
  steerd_server_shutdown(sig->server, PROTO_DISCONNECT_SHUTDOWN);
  /* The signal handles must close too, or the loop would never end. */
  uv_close((uv_handle_t *)&sig->sigint, NULL);
  uv_close((uv_handle_t *)&sig->sigterm, NULL);
}

int main(int argc, char **argv) {
  steerd_config cfg;
  steerd_config_default(&cfg);
  int rc = steerd_config_parse(&cfg, argc, argv, stderr);
  if (rc != 0)
    return rc > 0 ? 0 : 2;
  steerd_log_set_level((steerd_log_level)cfg.log_level);
  signal(SIGPIPE, SIG_IGN);

  uv_loop_t *loop = uv_default_loop();
  steerd_server *server = steerd_server_create(loop, &cfg);
  if (!server)
    return 1;
  if (steerd_server_start(server) != 0) {
    steerd_server_destroy(server);
    return 1;
  }
  signals sig;
  memset(&sig, 0, sizeof(sig));
  sig.server = server;
  uv_signal_init(loop, &sig.sigint);
  uv_signal_init(loop, &sig.sigterm);
  sig.sigint.data = sig.sigterm.data = &sig;
  uv_signal_start(&sig.sigint, on_signal, SIGINT);
  uv_signal_start(&sig.sigterm, on_signal, SIGTERM);

  uv_run(loop, UV_RUN_DEFAULT);
  LOG_INFO("stopped");
  steerd_server_destroy(server);
  uv_loop_close(loop);
  return 0;
}

/* main.c: steerd, the authoritative movement server, and `steerd token`, which
 * issues the tokens its HELLOs carry. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "auth.h"
#include "config.h"
#include "http.h"
#include "log.h"
#include "protocol.h"
#include "server.h"

typedef struct signals {
  uv_signal_t sigint, sigterm, sighup;
  steerd_server *server;
  steerd_http *http;
} signals;

static void signals_close(signals *sig) {
  uv_close((uv_handle_t *)&sig->sigint, NULL);
  uv_close((uv_handle_t *)&sig->sigterm, NULL);
  uv_close((uv_handle_t *)&sig->sighup, NULL);
}

/* SIGHUP: a checkpoint now, and the server goes on (a closed terminal or an
 * operator's `kill -HUP` must not cost the world). */
static void on_sighup(uv_signal_t *h, int signum) {
  signals *sig = h->data;
  (void)signum;
  LOG_INFO("received SIGHUP: checkpoint now, the server keeps running");
  steerd_server_checkpoint(sig->server, "SIGHUP");
}

/* The drain: /readyz fails at once, HELLOs are refused, clients hear SHUTDOWN,
 * the final checkpoint is written, and the loop ends when the clients are gone
 * or after --drain-timeout; then Agones hears Shutdown and the HTTP port closes. */
static void on_signal(uv_signal_t *h, int signum) {
  signals *sig = h->data;
  LOG_INFO("received %s: draining", signum == SIGINT ? "SIGINT" : "SIGTERM");
  steerd_http_draining(sig->http);
  steerd_server_shutdown(sig->server, PROTO_DISCONNECT_SHUTDOWN);
  /* The signal handles must close too, or the loop would never end. */
  signals_close(sig);
}

#define TOKEN_DEFAULT_TTL 3600u
#define TOKEN_MAX_TTL     (10u * 366u * 86400u)

static void token_usage(FILE *out) {
  fprintf(out,
          "usage: steerd token --name NAME [--role ROLE] [--ttl SECONDS] [--secret-file FILE]\n\n"
          "Prints a token for a client's HELLO on stdout, signed with the server's secret: the\n"
          "first line of --secret-file FILE (or STEERD_SECRET_FILE), else STEERD_SECRET.\n\n"
          "  --name NAME          the client's identity, 1..64 bytes; it owns the agents it spawns\n"
          "  --role ROLE          observer, controller or admin (controller)\n"
          "  --ttl SECONDS        lifetime from now, 1..%u (%u)\n"
          "  --secret-file FILE   where the secret is\n\n"
          "example: STEERD_SECRET=... steerd token --name alice --role controller --ttl 3600\n",
          TOKEN_MAX_TTL, TOKEN_DEFAULT_TTL);
}

/* `steerd token ...`: argv[0] is "token". Exit status 0, or 2 on a usage error. */
static int token_main(int argc, char **argv) {
  const char *name = NULL, *role_name = "controller";
  const char *secret_file = getenv("STEERD_SECRET_FILE");
  unsigned long long ttl = TOKEN_DEFAULT_TTL;
  for (int a = 1; a < argc; a++) {
    const char *arg = argv[a];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      token_usage(stdout);
      return 0;
    }
    if (a + 1 >= argc) {
      fprintf(stderr, "steerd token: %s needs a value (try steerd token --help)\n", arg);
      return 2;
    }
    const char *value = argv[++a];
    if (strcmp(arg, "--name") == 0) {
      name = value;
    } else if (strcmp(arg, "--role") == 0) {
      role_name = value;
    } else if (strcmp(arg, "--secret-file") == 0) {
      secret_file = value;
    } else if (strcmp(arg, "--ttl") == 0) {
      char *end;
      errno = 0;
      ttl = strtoull(value, &end, 10);
      if (errno || *end || value[0] == '-' || ttl == 0 || ttl > TOKEN_MAX_TTL) {
        fprintf(stderr, "steerd token: --ttl wants seconds in 1..%u, not '%s'\n", TOKEN_MAX_TTL, value);
        return 2;
      }
    } else {
      fprintf(stderr, "steerd token: unknown option '%s' (try steerd token --help)\n", arg);
      return 2;
    }
  }
  if (!name || !*name || strlen(name) > STEERD_AUTH_MAX_NAME_BYTES) {
    fprintf(stderr, "steerd token: --name NAME (1..%d bytes) is required\n", STEERD_AUTH_MAX_NAME_BYTES);
    return 2;
  }
  int role = steerd_role_parse(role_name);
  if (role < 0) {
    fprintf(stderr, "steerd token: --role is observer, controller or admin, not '%s'\n", role_name);
    return 2;
  }
  static char secret[STEERD_AUTH_MAX_SECRET_BYTES + 1];
  size_t secret_len;
  int rc = steerd_secret_load(secret_file, secret, sizeof secret, &secret_len, stderr);
  if (rc < 0)
    return 2;
  if (rc == 0) {
    fprintf(stderr, "steerd token: no secret configured: set STEERD_SECRET (16+ bytes) or pass --secret-file "
                    "FILE, the same as the server's\n");
    return 2;
  }
  steerd_auth auth;
  if (steerd_auth_init(&auth, secret, secret_len) != STEERD_AUTH_OK) {
    fprintf(stderr, "steerd token: %s\n", steerd_auth_strerror(STEERD_AUTH_ESECRET));
    return 2;
  }
  steerd_token t;
  memset(&t, 0, sizeof t);
  strcpy(t.name, name);
  t.role = (steerd_role)role;
  t.issued_at = (uint64_t)time(NULL);
  t.expires_at = t.issued_at + ttl;
  char token[STEERD_AUTH_MAX_TOKEN_BYTES + 1];
  rc = steerd_auth_issue(&auth, &t, token, sizeof token);
  if (rc < 0) {
    fprintf(stderr, "steerd token: the name must be valid UTF-8 without NUL\n");
    return 2;
  }
  printf("%s\n", token);
  return 0;
}

/* `steerd healthcheck [--ready] [--http-port PORT]`: what the Dockerfile's
 * HEALTHCHECK runs (no curl in the image). Exit 0 healthy, 1 not, 2 usage. */
static int healthcheck_main(int argc, char **argv) {
  int ready = 0;
  unsigned long port = 7780;
  const char *env = getenv("STEERD_HTTP_PORT");
  const char *port_text = env && *env ? env : NULL;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--ready") == 0) {
      ready = 1;
    } else if (strcmp(argv[a], "--http-port") == 0 && a + 1 < argc) {
      port_text = argv[++a];
    } else {
      fprintf(stderr,
              "usage: steerd healthcheck [--ready] [--http-port PORT]\n\n"
              "GET /healthz (liveness) or, with --ready, /readyz of 127.0.0.1:PORT (STEERD_HTTP_PORT,\n"
              "7780). Exit status 0 when it answers 200, 1 otherwise.\n");
      return strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0 ? 0 : 2;
    }
  }
  if (port_text) {
    char *end;
    errno = 0;
    port = strtoul(port_text, &end, 10);
    if (errno || *end || port == 0 || port > 65535) {
      fprintf(stderr, "steerd healthcheck: the HTTP port is '%s'; it needs one in 1..65535\n", port_text);
      return 2;
    }
  }
  return steerd_http_check((uint16_t)port, ready, 3000);
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
    printf("steerd %s (protocol %d)\n", STEERD_VERSION, PROTO_VERSION);
    return 0;
  }
  if (argc >= 2 && strcmp(argv[1], "token") == 0)
    return token_main(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "healthcheck") == 0)
    return healthcheck_main(argc - 1, argv + 1);
  steerd_config cfg;
  steerd_config_default(&cfg);
  int rc = steerd_config_parse(&cfg, argc, argv, stderr);
  if (rc != 0)
    return rc > 0 ? 0 : 2;
  steerd_log_set_level((steerd_log_level)cfg.log_level);
  steerd_log_set_format((steerd_log_format)cfg.log_format);
  signal(SIGPIPE, SIG_IGN);
  /* Past a file size limit (ulimit -f) a write fails with EFBIG, which the
   * checkpoint reports, instead of SIGXFSZ killing the server. */
  signal(SIGXFSZ, SIG_IGN);

  uv_loop_t *loop = uv_default_loop();
  steerd_server *server = steerd_server_create(loop, &cfg);
  if (!server)
    return 1;
  steerd_http *http = NULL;
  const char *agones = getenv("AGONES_SDK_HTTP_PORT");
  if (cfg.http_port != 0 || (agones && *agones)) {
    http = steerd_http_create(loop, server, &cfg);
    if (!http) {
      uv_run(loop, UV_RUN_DEFAULT); /* lets libwebsockets close what it opened */
      steerd_server_destroy(server);
      return 1;
    }
  }
  /* The handlers are in place before the "listening" line: whoever starts the
   * server may signal it as soon as it reads that line (tests and supervisors do),
   * and a signal before then would take its default action and lose the state. */
  signals sig;
  memset(&sig, 0, sizeof(sig));
  sig.server = server;
  sig.http = http;
  uv_signal_init(loop, &sig.sigint);
  uv_signal_init(loop, &sig.sigterm);
  uv_signal_init(loop, &sig.sighup);
  sig.sigint.data = sig.sigterm.data = sig.sighup.data = &sig;
  uv_signal_start(&sig.sigint, on_signal, SIGINT);
  uv_signal_start(&sig.sigterm, on_signal, SIGTERM);
  uv_signal_start(&sig.sighup, on_sighup, SIGHUP);
  if (steerd_server_start(server) != 0) {
    signals_close(&sig);
    steerd_http_close(http);
    uv_run(loop, UV_RUN_DEFAULT);
    steerd_http_destroy(http);
    steerd_server_destroy(server);
    return 1;
  }

  uv_run(loop, UV_RUN_DEFAULT);
  /* The shutdown checkpoint was the last one: if it failed, whatever changed
   * since the last good one is lost, and the exit status says so. */
  steerd_checkpoint_stats ckpt;
  steerd_server_checkpoint_stats(server, &ckpt);
  int status = 0;
  if (ckpt.enabled && ckpt.failing) {
    if (ckpt.written)
      LOG_ERROR("stopped, but the last checkpoint failed: the state file holds tick %llu (exit status 1)",
                (unsigned long long)ckpt.last_ok_tick);
    else
      LOG_ERROR("stopped, but the last checkpoint failed and none succeeded since the start (exit status 1)");
    status = 1;
  } else {
    LOG_INFO("stopped");
  }
  steerd_http_destroy(http);
  steerd_server_destroy(server);
  uv_loop_close(loop);
  return status;
}

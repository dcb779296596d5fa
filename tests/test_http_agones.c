/* test_http_agones.c: the Agones SDK calls (http_agones.c) of the real server,
 * against agones_sdk_stand_in: a stand-in for the Agones SDK sidecar written
 * here, an HTTP server (libwebsockets) in a child process that answers 200 to
 * every POST and records "POST /path body" lines in a file. Not the real SDK
 * server, and no Kubernetes: this checks what steerd sends and when. */
#include <check.h>
#include <libwebsockets.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_run.h"
#include "steerd_proc.h"

/* ---- agones_sdk_stand_in ------------------------------------------------------- */

typedef struct stand_in_req {
  char path[64];
  char body[64];
  size_t body_len;
} stand_in_req;

static FILE *stand_in_log;

static int stand_in_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                             size_t len) {
  stand_in_req *r = user;
  switch (reason) {
  case LWS_CALLBACK_HTTP:
    snprintf(r->path, sizeof r->path, "%s", (const char *)in);
    r->body_len = 0;
    if (lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) <= 0) {
      fprintf(stand_in_log, "NOT-POST %s\n", r->path);
      fflush(stand_in_log);
      lws_return_http_status(wsi, HTTP_STATUS_METHOD_NOT_ALLOWED, NULL);
      return -1;
    }
    return 0;
  case LWS_CALLBACK_HTTP_BODY: {
    size_t room = sizeof r->body - 1 - r->body_len, n = len < room ? len : room;
    memcpy(r->body + r->body_len, in, n);
    r->body_len += n;
    r->body[r->body_len] = '\0';
    return 0;
  }
  case LWS_CALLBACK_HTTP_BODY_COMPLETION: {
    fprintf(stand_in_log, "POST %s %s\n", r->path, r->body);
    fflush(stand_in_log);
    uint8_t buf[LWS_PRE + 256], *start = buf + LWS_PRE, *p = start, *end = buf + sizeof buf - 1;
    if (lws_add_http_common_headers(wsi, HTTP_STATUS_OK, "application/json", 2, &p, end) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
      return 1;
    lws_callback_on_writable(wsi);
    return 0;
  }
  case LWS_CALLBACK_HTTP_WRITEABLE: {
    uint8_t buf[LWS_PRE + 2];
    memcpy(buf + LWS_PRE, "{}", 2);
    if (lws_write(wsi, buf + LWS_PRE, 2, LWS_WRITE_HTTP_FINAL) != 2)
      return 1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
  }
  default:
    return lws_callback_http_dummy(wsi, reason, user, in, len);
  }
}

/* Forks the stand-in; returns its pid and its port in *port. */
static pid_t stand_in_start(const char *log_path, uint16_t *port) {
  int pipefd[2];
  ck_assert_int_eq(pipe(pipefd), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(pipefd[0]);
    stand_in_log = fopen(log_path, "w");
    static const struct lws_protocols protocols[] = {
        {"http", stand_in_callback, sizeof(stand_in_req), 0, 0, NULL, 0}, {NULL, NULL, 0, 0, 0, NULL, 0}};
    lws_set_log_level(LLL_ERR, NULL);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = 0;
    info.iface = "127.0.0.1";
    info.protocols = protocols;
    info.vhost_name = "agones_sdk_stand_in";
    info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
    struct lws_context *ctx = lws_create_context(&info);
    int p = ctx ? lws_get_vhost_listen_port(lws_get_vhost_by_name(ctx, "agones_sdk_stand_in")) : 0;
    uint16_t p16 = (uint16_t)(p > 0 ? p : 0);
    if (write(pipefd[1], &p16, sizeof p16) != sizeof p16 || !p16)
      _exit(1);
    close(pipefd[1]);
    for (;;)
      lws_service(ctx, 100);
  }
  close(pipefd[1]);
  ck_assert_int_eq(read(pipefd[0], port, sizeof *port), (ssize_t)sizeof *port);
  close(pipefd[0]);
  ck_assert_uint_ne(*port, 0);
  return pid;
}

/* The recorded lines, in order, joined by '|'. */
static void recorded(const char *log_path, char *out, size_t cap) {
  out[0] = '\0';
  FILE *f = fopen(log_path, "r");
  if (!f)
    return;
  char line[256];
  size_t n = 0;
  while (fgets(line, sizeof line, f) && n < cap) {
    line[strcspn(line, "\n")] = '\0';
    n += (size_t)snprintf(out + n, cap - n, "%s|", line);
  }
  fclose(f);
}

static int count(const char *text, const char *needle) {
  int k = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
    k++;
  return k;
}

START_TEST(test_ready_health_shutdown) {
  char log_path[] = "/tmp/steerd-agones-XXXXXX";
  int fd = mkstemp(log_path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  uint16_t sdk_port;
  pid_t stand_in = stand_in_start(log_path, &sdk_port);
  char port_text[16];
  snprintf(port_text, sizeof port_text, "%u", sdk_port);
  setenv("AGONES_SDK_HTTP_PORT", port_text, 1);
  steerd_proc p;
  const char *extra[] = {"--http-port", "auto", NULL};
  ck_assert_int_eq(steerd_proc_start(&p, STEERD_BINARY, extra, 10000), 0);
  unsetenv("AGONES_SDK_HTTP_PORT");

  /* Ready at once, then Health every 2 s. */
  char text[4096];
  uint64_t deadline = steerd_proc_now_ms() + 30000;
  do {
    steerd_proc_sleep_ms(200);
    recorded(log_path, text, sizeof text);
  } while (count(text, "POST /health {}") < 2 && steerd_proc_now_ms() < deadline);
  ck_assert_msg(strncmp(text, "POST /ready {}|", 15) == 0, "recorded: %s", text);
  ck_assert_int_eq(count(text, "POST /ready"), 1);
  ck_assert_int_ge(count(text, "POST /health {}"), 2);
  ck_assert_int_eq(count(text, "shutdown"), 0);

  /* SIGTERM: the drain, then Shutdown, then the exit. */
  ck_assert_int_eq(steerd_proc_stop(&p, 10000), 0);
  recorded(log_path, text, sizeof text);
  ck_assert_int_eq(count(text, "POST /shutdown {}"), 1);
  size_t len = strlen(text);
  ck_assert_msg(len > 18 && strcmp(text + len - 18, "POST /shutdown {}|") == 0, "recorded: %s", text);
  ck_assert_int_eq(count(text, "NOT-POST"), 0);

  kill(stand_in, SIGKILL);
  waitpid(stand_in, NULL, 0);
  unlink(log_path);
}
END_TEST

/* The sidecar is not there: steerd runs on, logs the failures, and still exits cleanly. */
START_TEST(test_sdk_missing) {
  setenv("AGONES_SDK_HTTP_PORT", "1", 1);
  steerd_proc p;
  ck_assert_int_eq(steerd_proc_start(&p, STEERD_BINARY, NULL, 10000), 0);
  unsetenv("AGONES_SDK_HTTP_PORT");
  uint64_t deadline = steerd_proc_now_ms() + 10000;
  while (!steerd_proc_log_contains(&p, "agones: POST /ready failed") && steerd_proc_now_ms() < deadline)
    steerd_proc_sleep_ms(50);
  ck_assert(steerd_proc_log_contains(&p, "agones: POST /ready failed"));
  ck_assert_int_eq(steerd_proc_stop(&p, 10000), 0);
}
END_TEST

START_TEST(test_bad_port_refused) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "AGONES_SDK_HTTP_PORT=seventy %s --bind 127.0.0.1 --port 0 --http-port 0 2>&1",
           STEERD_BINARY);
  FILE *f = popen(cmd, "r");
  ck_assert_ptr_nonnull(f);
  char out[8192];
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = '\0';
  int status = pclose(f);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1);
  ck_assert_ptr_nonnull(strstr(out, "AGONES_SDK_HTTP_PORT is 'seventy', not a port"));
}
END_TEST

int main(void) {
  Suite *s = suite_create("http_agones");
  TCase *tc = check_tcase(s, "agones", 120);
  tcase_add_test(tc, test_ready_health_shutdown);
  tcase_add_test(tc, test_sdk_missing);
  tcase_add_test(tc, test_bad_port_refused);
  return check_run(s);
}

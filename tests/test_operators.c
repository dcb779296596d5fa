/* test_operators.c: what an operator sees, so that none of it surprises them:
 *
 *   - every loopback address is loopback for --bind (localhost, ::1);
 *   - a bad option value says what is allowed;
 *   - anonymous clients are admins only on loopback without a secret, unless told otherwise;
 *   - every program prints the project's version with --version;
 *   - "no state file" is logged only by a server that goes on to start;
 *   - a restored demo world is not logged as "0 groups";
 *   - a client leaving says whether it disconnected or timed out;
 *   - steerd-client honours STEERD_HOST/STEERD_PORT, names unknown flags, has
 *     per-command --help, says what a bad value may be, hints on a timeout,
 *     and its shell prompts (on a terminal), helps and quits; query prints the
 *     agent with its tuning (avoidance and stuck detection); list prints the agents
 *     with behaviour, owner and position; params sets limits, parameters and tuning;
 *     bots despawn their agents when they leave.
 *
 * The real binaries as child processes on 127.0.0.1. */
#define _GNU_SOURCE /* posix_openpt, ptsname */
#include <check.h>
#include <enet/enet.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_run.h"
#include "child_run.h"
#include "client.h"
#include "config.h"
#include "demo.h"
#include "protocol.h"
#include "raw_peer.h"
#include "steerd_proc.h"

extern char **environ;

/* ---- running a binary ---------------------------------------------------------------- */

typedef struct run_result {
  int status; /* exit status, or -1: killed after the timeout */
  char out[8192], err[8192];
} run_result;

/* The binary next to build/server/steerd: "server/steerd" or "client-sample/steerd-client". */
static void binary(const char *rel, char *out, size_t cap) {
  ck_assert_int_eq(child_run_sibling(STEERD_BINARY, rel, out, cap), 0);
  ck_assert_msg(access(out, X_OK) == 0, "%s is missing", out);
}

/* Runs rel with argv (argv[0] replaced), this environment without STEERD_*
 * plus env (NULL-terminated, may be NULL), stdin from the text input (NULL:
 * /dev/null); killed after timeout_ms. */
static void run(run_result *r, const char *rel, char **argv, const char *const *env, const char *input,
                uint32_t timeout_ms) {
  static char bin[1100];
  binary(rel, bin, sizeof bin);
  argv[0] = bin;
  char in_path[] = "/tmp/steerd-op-in-XXXXXX";
  int in = mkstemp(in_path);
  ck_assert(in >= 0);
  if (input)
    ck_assert_int_eq(write(in, input, strlen(input)), (ssize_t)strlen(input));
  close(in);
  static const char *const drop[] = {"STEERD_", NULL};
  char **envp = child_run_environ(drop, env);
  ck_assert_ptr_nonnull(envp);
  ck_assert_int_eq(child_run_capture(bin, argv, envp, in_path, timeout_ms, &r->status, r->out, sizeof r->out,
                                     r->err, sizeof r->err),
                   0);
  free(envp);
  unlink(in_path);
}

static void server_start(steerd_proc *s, const char *const *extra) {
  ck_assert_msg(steerd_proc_start(s, STEERD_BINARY, extra, 5000) == 0, "the server did not start");
}

/* ---- --bind ------------------------------------------------------------------------------ */

START_TEST(every_loopback_address_is_loopback) {
  static const char *const loop[] = {"127.0.0.1", "127.1.2.3", "localhost",
                                     "::1",       "[::1]",     "::ffff:127.0.0.1"};
  static const char *const not_loop[] = {"0.0.0.0", "10.0.0.1", "128.0.0.1",
                                         "::",      "fe80::1",  "localhost.evil"};
  for (size_t i = 0; i < sizeof loop / sizeof loop[0]; i++)
    ck_assert_msg(steerd_address_is_loopback(loop[i]), "%s", loop[i]);
  for (size_t i = 0; i < sizeof not_loop / sizeof not_loop[0]; i++)
    ck_assert_msg(!steerd_address_is_loopback(not_loop[i]), "%s", not_loop[i]);
  char ip[64], why[200];
  ck_assert_int_eq(steerd_bind_resolve("localhost", ip, sizeof ip, why, sizeof why), 0);
  ck_assert(steerd_address_is_loopback(ip));
  ck_assert_int_eq(steerd_bind_resolve("::1", ip, sizeof ip, why, sizeof why), 0);
  ck_assert_str_eq(ip, "127.0.0.1");
  ck_assert_int_eq(steerd_bind_resolve("0.0.0.0", ip, sizeof ip, why, sizeof why), 0);
  ck_assert_str_eq(ip, "0.0.0.0");
  ck_assert_int_eq(steerd_bind_resolve("fe80::1", ip, sizeof ip, why, sizeof why), -1);
  ck_assert_ptr_nonnull(strstr(why, "IPv4 only"));

  /* The server, without a secret, starts on both and takes a client. */
  static const char *const names[] = {"localhost", "::1"};
  for (int i = 0; i < 2; i++) {
    const char *const extra[] = {"--no-demo", "--bind", names[i], NULL};
    steerd_proc s;
    server_start(&s, extra);
    ck_assert(steerd_proc_log_contains(&s, "anonymous clients are allowed"));
    steerd_client_config cfg = steerd_client_default_config();
    steerd_client *c = steerd_client_create(&cfg);
    ck_assert_int_eq(steerd_client_connect(c, "127.0.0.1", s.port), 0);
    steerd_client_destroy(c);
    ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
  }
}
END_TEST

/* ---- bad values ------------------------------------------------------------------------------ */

START_TEST(a_bad_value_says_what_is_allowed) {
  static const struct {
    const char *flag, *value, *expect;
  } cases[] = {
      {"--tick-rate", "0", "allowed is an integer from 1 to"},
      {"--orphan-policy", "sometimes", "allowed is keep or despawn"},
      {"--anonymous-role", "boss", "allowed is observer, controller or admin"},
      {"--port", "70000", "allowed is a port from 0 to 65535"},
      {"--world", "1,1,0,0", "maxx > minx"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    steerd_config c;
    steerd_config_default(&c);
    char *buf = NULL;
    size_t len = 0;
    FILE *err = open_memstream(&buf, &len);
    char *argv[] = {"steerd", (char *)cases[i].flag, (char *)cases[i].value, NULL};
    ck_assert_int_ne(steerd_config_parse(&c, 3, argv, err), 0);
    fclose(err);
    ck_assert_msg(strstr(buf, cases[i].expect) != NULL, "%s %s: %s", cases[i].flag, cases[i].value, buf);
    ck_assert_ptr_nonnull(strstr(buf, cases[i].value));
    free(buf);
  }
}
END_TEST

/* ---- the anonymous role ------------------------------------------------------------------ */

/* The role steerd_config_parse gives anonymous clients for argv (NULL-terminated, argv[0]
 * included); *dev is 1 when it is the loopback development default. */
static int parsed_role(char **argv, int *dev) {
  int argc = 0;
  while (argv[argc])
    argc++;
  steerd_config c;
  steerd_config_default(&c);
  ck_assert_int_eq(steerd_config_parse(&c, argc, argv, stderr), 0);
  *dev = c.anonymous_role_dev;
  return c.anonymous_role;
}

START_TEST(anonymous_clients_are_admins_only_on_loopback_without_a_secret) {
  int dev;
  char *plain[] = {"steerd", NULL};
  ck_assert_int_eq(parsed_role(plain, &dev), STEERD_ROLE_ADMIN);
  ck_assert_int_eq(dev, 1);
  char *localhost[] = {"steerd", "--bind", "localhost", NULL};
  ck_assert_int_eq(parsed_role(localhost, &dev), STEERD_ROLE_ADMIN);
  /* Asked for, the role is what was asked, by flag or by environment. */
  char *asked[] = {"steerd", "--anonymous-role", "controller", NULL};
  ck_assert_int_eq(parsed_role(asked, &dev), STEERD_ROLE_CONTROLLER);
  ck_assert_int_eq(dev, 0);
  ck_assert_int_eq(setenv("STEERD_ANONYMOUS_ROLE", "observer", 1), 0);
  ck_assert_int_eq(parsed_role(plain, &dev), STEERD_ROLE_OBSERVER);
  ck_assert_int_eq(dev, 0);
  ck_assert_int_eq(unsetenv("STEERD_ANONYMOUS_ROLE"), 0);
  /* Reachable from elsewhere, or with a secret, anonymous clients stay controllers. */
  char *everywhere[] = {"steerd", "--bind", "0.0.0.0", "--insecure", NULL};
  ck_assert_int_eq(parsed_role(everywhere, &dev), STEERD_ROLE_CONTROLLER);
  ck_assert_int_eq(dev, 0);
  ck_assert_int_eq(setenv("STEERD_SECRET", "a secret of more than sixteen bytes", 1), 0);
  ck_assert_int_eq(parsed_role(plain, &dev), STEERD_ROLE_CONTROLLER);
  ck_assert_int_eq(dev, 0);
  ck_assert_int_eq(unsetenv("STEERD_SECRET"), 0);
}
END_TEST

/* ---- --version ---------------------------------------------------------------------------- */

START_TEST(every_program_prints_its_version) {
  static const struct {
    const char *rel, *expect;
  } programs[] = {
      {"server/steerd", "steerd " STEERD_PROJECT_VERSION " (protocol 1)\n"},
      {"client-sample/steerd-client", "steerd-client " STEERD_PROJECT_VERSION " (protocol 1)\n"},
      {"server/steerd-demo", "steerd-demo " STEERD_PROJECT_VERSION "\n"},
      {"tools/mapgen/mapgen", "mapgen " STEERD_PROJECT_VERSION "\n"},
      {"tools/impair/steerd-impair", "steerd-impair " STEERD_PROJECT_VERSION "\n"},
  };
  for (size_t i = 0; i < sizeof programs / sizeof programs[0]; i++) {
    run_result r;
    char *argv[] = {"", "--version", NULL};
    run(&r, programs[i].rel, argv, NULL, NULL, 10000);
    ck_assert_msg(r.status == 0, "%s --version: status %d, %s", programs[i].rel, r.status, r.err);
    ck_assert_str_eq(r.out, programs[i].expect);
    ck_assert_str_eq(r.err, "");
  }
}
END_TEST

/* ---- state file and restore ---------------------------------------------------------------- */

START_TEST(no_state_file_line_only_when_the_server_starts) {
  char state[] = "/tmp/steerd-op-state-XXXXXX";
  int fd = mkstemp(state);
  ck_assert_int_ge(fd, 0);
  close(fd);
  unlink(state); /* a path with no file yet */
  /* Refused (0.0.0.0 without a secret): the refusal, and no word of a new world. */
  run_result r;
  char *refuse[] = {"", "--bind", "0.0.0.0", "--port", "0", "--state", state, NULL};
  run(&r, "server/steerd", refuse, NULL, NULL, 5000);
  ck_assert_int_ne(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.err, "refusing to start"));
  ck_assert_msg(strstr(r.err, "no state file") == NULL, "%s", r.err);

  /* Started, with the demo: the line is there; after a restart the restored
   * demo is not "0 groups". */
  const char *const extra[] = {"--state", state, NULL};
  steerd_proc s;
  server_start(&s, extra);
  ck_assert(steerd_proc_log_contains(&s, "no state file"));
  ck_assert(steerd_proc_log_contains(&s, "demo world: "));
  ck_assert_int_eq(steerd_proc_stop(&s, 5000), 0); /* writes the shutdown checkpoint */
  server_start(&s, extra);
  ck_assert(steerd_proc_log_contains(&s, "restored"));
  ck_assert(!steerd_proc_log_contains(&s, "in 0 groups"));
  ck_assert(steerd_proc_log_contains(&s, "demo world resumed"));
  ck_assert(!steerd_proc_log_contains(&s, "no state file"));
  ck_assert_int_ne(steerd_proc_stop(&s, 5000), -1);
  unlink(state);
}
END_TEST

/* ---- disconnected or timed out --------------------------------------------------------------- */

START_TEST(a_disconnect_and_a_timeout_are_told_apart) {
  const char *const extra[] = {"--no-demo", "--client-timeout", "1000", NULL};
  steerd_proc s;
  server_start(&s, extra);
  /* One says goodbye. */
  steerd_client_config cfg = steerd_client_default_config();
  steerd_client *c = steerd_client_create(&cfg);
  ck_assert_int_eq(steerd_client_connect(c, "127.0.0.1", s.port), 0);
  steerd_client_disconnect(c, 1000);
  steerd_client_destroy(c);
  /* One falls silent (its host is destroyed without a word). */
  ck_assert_int_eq(enet_initialize(), 0);
  steerd_raw_peer p;
  ck_assert_int_eq(steerd_raw_connect(&p, s.port, 3000), 0);
  uint64_t end = steerd_proc_now_ms() + 300; /* acknowledge the connection, then fall silent */
  while (steerd_proc_now_ms() < end)
    steerd_raw_pump(&p, 10, NULL, NULL);
  steerd_raw_drop(&p);
  enet_deinitialize();
  end = steerd_proc_now_ms() + 8000;
  while (!steerd_proc_log_contains(&s, "timed out (silent for") && steerd_proc_now_ms() < end)
    steerd_proc_sleep_ms(100);
  ck_assert(steerd_proc_log_contains(&s, "client 1 (127.0.0.1"));
  ck_assert(steerd_proc_log_contains(&s, "disconnected (reason 0)"));
  ck_assert(steerd_proc_log_contains(&s, "timed out (silent for"));
  ck_assert(!steerd_proc_log_contains(&s, "disconnected or timed out"));
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* ---- steerd-client ----------------------------------------------------------------------------- */

#define CLI "client-sample/steerd-client"

START_TEST(client_cli_names_what_is_wrong) {
  run_result r;
  /* An unknown flag, before or after the command: named, in one line. */
  char *a1[] = {"", "--verbose", "watch", NULL};
  run(&r, CLI, a1, NULL, NULL, 5000);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "unknown option --verbose"));
  ck_assert_ptr_null(strstr(r.err, "usage:"));
  char *a2[] = {"", "watch", "--frobnicate", NULL};
  run(&r, CLI, a2, NULL, NULL, 5000);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "unknown option --frobnicate"));
  ck_assert_ptr_nonnull(strstr(r.err, "--seconds"));
  /* A command's --help is that command's. */
  char *a3[] = {"", "spawn", "--help", NULL};
  run(&r, CLI, a3, NULL, NULL, 5000);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "spawn --model M"));
  ck_assert_ptr_null(strstr(r.out, "bots N"));
  char *a4[] = {"", "--help", NULL};
  run(&r, CLI, a4, NULL, NULL, 5000);
  ck_assert_ptr_nonnull(strstr(r.out, "bots N"));
  /* Bad or missing values say what is allowed. */
  char *a5[] = {"", "spawn", "--model", "car", "--x", "0", "--y", "0", NULL};
  run(&r, CLI, a5, NULL, NULL, 5000);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "kinematic, dynamic or heading"));
  char *a6[] = {"", "spawn", "--x", "0", "--y", "0", NULL};
  run(&r, CLI, a6, NULL, NULL, 5000);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(r.err, "--model is required"));
  /* Nobody there: the timeout comes with a hint, naming STEERD_PORT's port. */
  const char *const env[] = {"STEERD_PORT=9", NULL};
  char *a7[] = {"", "--timeout", "300", "ping", "--count", "1", NULL};
  run(&r, CLI, a7, env, NULL, 5000);
  ck_assert_int_eq(r.status, 3);
  ck_assert_ptr_nonnull(strstr(r.err, "127.0.0.1:9"));
  ck_assert_ptr_nonnull(strstr(r.err, "is steerd running there?"));
}
END_TEST

START_TEST(client_cli_environment_and_shell) {
  steerd_proc s;
  const char *const extra[] = {"--no-demo", NULL};
  server_start(&s, extra);
  char port[32];
  snprintf(port, sizeof port, "STEERD_PORT=%u", (unsigned)s.port);
  const char *const env[] = {port, "STEERD_HOST=127.0.0.1", NULL};
  run_result r;
  char *ping[] = {"", "ping", "--count", "1", NULL};
  run(&r, CLI, ping, env, NULL, 8000);
  ck_assert_msg(r.status == 0, "ping via STEERD_PORT: %s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "median"));
  /* The shell: help, a command, quit (what follows quit is not run). */
  char *shell[] = {"", "shell", NULL};
  run(&r, CLI, shell, env, "help\nhelp spawn\nping --count 1\nquit\nping --count 1\n", 8000);
  ck_assert_msg(r.status == 0, "shell: %s", r.err);
  ck_assert_ptr_nonnull(strstr(r.out, "quit, exit"));
  ck_assert_ptr_nonnull(strstr(r.out, "spawn --model M"));
  const char *first = strstr(r.out, "over 1 pings");
  ck_assert_ptr_nonnull(first);
  ck_assert_ptr_null(strstr(first + 1, "over 1 pings")); /* one ping: the second came after quit */
  /* query prints the agent with its tuning (PROTOCOL.md 6.8): the 5.2 defaults here. The first
   * agent of a fresh world is 4194304 (slot 0, generation 1 << 22), as spawn prints. */
  run(&r, CLI, shell, env, "spawn --model dynamic --x 1 --y 2\nquery 4194304\nquit\n", 8000);
  ck_assert_msg(r.status == 0, "spawn and query: %s", r.err);
  ck_assert_msg(strstr(r.out, "4194304\n") != NULL, "spawn printed: %s", r.out);
  ck_assert_msg(strstr(r.out, "\"tuning\":{\"avoid_weight\":0,\"avoid_horizon\":3,\"avoid_priority\":0,"
                              "\"wall_lookahead\":1,\"wall_margin\":0.25,\"stuck_time\":0,"
                              "\"stuck_reaction\":\"report\",\"arrival\":\"point\"}") != NULL,
                "query printed: %s", r.out);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* On a terminal the shell prompts. */
START_TEST(client_shell_prompts_on_a_terminal) {
  steerd_proc s;
  const char *const extra[] = {"--no-demo", NULL};
  server_start(&s, extra);
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  ck_assert_int_ge(master, 0);
  ck_assert_int_eq(grantpt(master), 0);
  ck_assert_int_eq(unlockpt(master), 0);
  const char *slave_name = ptsname(master);
  ck_assert_ptr_nonnull(slave_name);
  static char bin[1100];
  binary(CLI, bin, sizeof bin);
  char port[16];
  snprintf(port, sizeof port, "%u", (unsigned)s.port);
  char *argv[] = {bin, "--port", port, "shell", NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, slave_name, O_RDWR, 0);
  posix_spawn_file_actions_adddup2(&fa, 0, 1);
  posix_spawn_file_actions_adddup2(&fa, 0, 2);
  pid_t pid;
  ck_assert_int_eq(posix_spawn(&pid, bin, &fa, NULL, argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  char seen[4096];
  size_t n = 0;
  int sent_quit = 0;
  uint64_t end = steerd_proc_now_ms() + 8000;
  int st = 0;
  pid_t w = 0;
  fcntl(master, F_SETFL, O_NONBLOCK);
  while (steerd_proc_now_ms() < end && (w = waitpid(pid, &st, WNOHANG)) == 0) {
    ssize_t k = read(master, seen + n, sizeof seen - 1 - n);
    if (k > 0)
      n += (size_t)k;
    seen[n] = '\0';
    if (!sent_quit && strstr(seen, "steerd> ")) {
      ck_assert_int_eq(write(master, "quit\n", 5), 5);
      sent_quit = 1;
    }
    steerd_proc_sleep_ms(10);
  }
  if (w == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
  }
  close(master);
  ck_assert_msg(sent_quit, "no prompt: %s", seen);
  ck_assert_msg(w == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the shell did not quit: %s", seen);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* list: the agents of a snapshot by id, with their behaviour, owner and position. */
START_TEST(client_cli_lists_agents) {
  steerd_proc s;
  const char *const extra[] = {"--no-demo", NULL};
  server_start(&s, extra);
  char port[32];
  snprintf(port, sizeof port, "STEERD_PORT=%u", (unsigned)s.port);
  const char *const env[] = {port, NULL};
  run_result r;
  char *shell[] = {"", "shell", NULL};
  run(&r, CLI, shell, env,
      "spawn --model dynamic --x 1 --y 2\nspawn --model dynamic --x -3.5 --y 4\n"
      "spawn --model dynamic --x 0 --y 0 --behaviour wander\nlist\n",
      8000);
  ck_assert_msg(r.status == 2, "shell: %d %s", r.status, r.err);
  ck_assert_msg(strstr(r.err, "list is not available in a shell") != NULL, "%s", r.err);
  /* Agents outlive their anonymous owner (client 1) under --orphan-policy keep. */
  char *list[] = {"", "list", NULL};
  run(&r, CLI, list, env, NULL, 8000);
  ck_assert_msg(r.status == 0, "list: %s", r.err);
  const char *head = "id         behaviour          owner             x          y\n"
                     "4194304    none               1              1.00       2.00\n"
                     "4194305    none               1             -3.50       4.00\n"
                     "4194306    wander             1    ";
  ck_assert_msg(strncmp(r.out, head, strlen(head)) == 0, "list printed: %s", r.out);
  ck_assert_str_eq(r.err, "steerd-client list: 3 agents in the snapshot, 3 listed, 0 despawned meanwhile\n");
  char *two[] = {"", "list", "--limit", "2", NULL};
  run(&r, CLI, two, env, NULL, 8000);
  ck_assert_msg(r.status == 0, "list --limit 2: %s", r.err);
  ck_assert_str_eq(r.out, "id         behaviour          owner             x          y\n"
                          "4194304    none               1              1.00       2.00\n"
                          "4194305    none               1             -3.50       4.00\n");
  ck_assert_str_eq(r.err, "steerd-client list: 3 agents in the snapshot, 2 listed, 0 despawned meanwhile "
                          "(--limit N lists more)\n");
  char *bad[] = {"", "list", "--limit", "0", NULL};
  run(&r, CLI, bad, env, NULL, 8000);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "bad --limit '0'") != NULL, "%s", r.err);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* params: SET_PARAMS from KEY=VALUE pairs; what it cannot send, and what the server refuses. */
START_TEST(client_cli_sets_params) {
  steerd_proc s;
  const char *const extra[] = {"--no-demo", NULL};
  server_start(&s, extra);
  char port[32];
  snprintf(port, sizeof port, "STEERD_PORT=%u", (unsigned)s.port);
  const char *const env[] = {port, NULL};
  run_result r;
  char *shell[] = {"", "shell", NULL};
  run(&r, CLI, shell, env,
      "spawn --model dynamic --x 1 --y 2\n"
      "params 4194304 --set "
      "\"max_speed=2,avoid_weight=1.5,avoid_priority=3,stuck_reaction=nudge,arrival=settle\"\n"
      "query 4194304\n",
      8000);
  ck_assert_msg(r.status == 0, "shell: %s", r.err);
  ck_assert_msg(strstr(r.out, "agent 4194304: parameters set\n") != NULL, "%s", r.out);
  ck_assert_msg(strstr(r.out, "\"max_speed\":2,") != NULL, "%s", r.out);
  ck_assert_msg(strstr(r.out, "\"avoid_weight\":1.5,") != NULL, "%s", r.out);
  ck_assert_msg(strstr(r.out, "\"avoid_priority\":3,") != NULL, "%s", r.out);
  ck_assert_msg(strstr(r.out, "\"stuck_reaction\":\"nudge\",\"arrival\":\"settle\"") != NULL, "%s", r.out);
  /* A key it does not know, or a pair without a value: usage, nothing sent. */
  char *unknown[] = {"", "params", "4194304", "--set", "speed=1", NULL};
  run(&r, CLI, unknown, env, NULL, 8000);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "cannot set 'speed' to 1") != NULL, "%s", r.err);
  char *novalue[] = {"", "params", "4194304", "--set", "max_speed", NULL};
  run(&r, CLI, novalue, env, NULL, 8000);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "cannot set 'max_speed' (KEY=VALUE)") != NULL, "%s", r.err);
  char *badname[] = {"", "params", "4194304", "--set", "arrival=land", NULL};
  run(&r, CLI, badname, env, NULL, 8000);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "cannot set 'arrival' to land") != NULL, "%s", r.err);
  /* A value out of range is the server's to refuse, with the field. */
  run(&r, CLI, shell, env, "spawn --model dynamic --x 0 --y 0\nparams 4194305 --set max_speed=-1\n", 8000);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(r.err, "BAD_FIELD") != NULL && strstr(r.err, "(field limits.max_speed)") != NULL, "%s",
                r.err);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* bots: a load run leaves the world as it found it (anonymous owners never come back, so
 * agents left behind would stay for good under --orphan-policy keep). */
START_TEST(client_cli_bots_leave_no_agents) {
  steerd_proc s;
  const char *const extra[] = {"--no-demo", NULL};
  server_start(&s, extra);
  char port[32];
  snprintf(port, sizeof port, "STEERD_PORT=%u", (unsigned)s.port);
  const char *const env[] = {port, NULL};
  run_result r;
  char *bots[] = {"", "bots", "3", "--seconds", "1", NULL};
  run(&r, CLI, bots, env, NULL, 30000);
  ck_assert_msg(r.status == 0, "bots: %s", r.err);
  ck_assert_msg(strstr(r.err, "steerd-client bots: despawned the bots' ") != NULL, "%s", r.err);
  /* The timings: every reply timed, percentiles in order; frames come at the
   * snapshot rate (20 Hz over a 30 Hz tick: 33 and 67 ms apart), slower on a
   * loaded machine, which may also hand a bot two at once. */
  unsigned sent = 0, acks = 0, errors = 0, replies = 0, intervals = 0;
  double rp[4], ip[4];
  const char *all = strstr(r.out, "\nall ");
  ck_assert_msg(all != NULL && sscanf(all, "\nall %u %u %u", &sent, &acks, &errors) == 3 && sent > 0, "%s",
                r.out);
  const char *rl = strstr(r.out, "command to reply"), *il = strstr(r.out, "snapshot interval");
  ck_assert_msg(rl != NULL && sscanf(rl, "command to reply %u %lf %lf %lf %lf", &replies, &rp[0], &rp[1],
                                     &rp[2], &rp[3]) == 5,
                "%s", r.out);
  ck_assert_msg(il != NULL && sscanf(il, "snapshot interval %u %lf %lf %lf %lf", &intervals, &ip[0], &ip[1],
                                     &ip[2], &ip[3]) == 5,
                "%s", r.out);
  ck_assert_uint_eq(replies, acks + errors); /* the replies so far, each timed */
  ck_assert_uint_gt(intervals, 3);
  for (int k = 0; k < 3; k++) {
    ck_assert(rp[k] <= rp[k + 1]);
    ck_assert(ip[k] <= ip[k + 1]);
  }
  ck_assert(rp[0] > 0.0);
  ck_assert_msg(ip[3] >= 30.0 && ip[0] < 1000.0, "snapshot interval p50 %.3f ms, max %.3f", ip[0], ip[3]);
  ck_assert_msg(strstr(r.err, "still waited") == NULL, "%s", r.err);
  char *list[] = {"", "list", NULL};
  run(&r, CLI, list, env, NULL, 8000);
  ck_assert_msg(r.status == 0, "list: %s", r.err);
  ck_assert_str_eq(r.err, "steerd-client list: 0 agents in the snapshot, 0 listed, 0 despawned meanwhile\n");
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* The summary after b's in top's output (a blank line between), or NULL. */
static const char *next_summary(const char *b) {
  const char *n = strstr(b, "\n\ntick ");
  return n ? n + 2 : NULL;
}

/* top: a summary a second of the demo world: ticks advancing at the
 * server's rate, every agent either moving or at rest, snapshots at about
 * their rate, the path followers' WAYPOINTs counted, a round trip. */
START_TEST(client_cli_top_summarises) {
  steerd_proc s;
  server_start(&s, NULL);
  char port[32];
  snprintf(port, sizeof port, "STEERD_PORT=%u", (unsigned)s.port);
  const char *const env[] = {port, NULL};
  run_result r;
  char *bad[] = {"", "top", "--interval", "0", NULL};
  run(&r, CLI, bad, env, NULL, 8000);
  ck_assert_int_eq(r.status, 2);
  ck_assert_msg(strstr(r.err, "--interval (0.1 to 3600 s)") != NULL, "%s", r.err);
  char *top[] = {"", "top", "--seconds", "3.4", NULL};
  run(&r, CLI, top, env, NULL, 20000);
  ck_assert_msg(r.status == 0, "top: %s", r.err);
  unsigned blocks = 0;
  unsigned long long tick = 0, last_tick = 0;
  double waypoints = 0.0;
  for (const char *b = r.out; b != NULL; b = next_summary(b)) {
    unsigned hz = 0, agents = 0, moving = 0, resting = 0;
    double server_s = 0, rtt = 0, mean = 0, max = 0, rate = 0, wp = 0;
    ck_assert_msg(
        sscanf(b,
               "tick %llu · %u Hz · server time %lf s · rtt %lf ms\nagents %u: %u moving, %u at rest · "
               "speed mean %lf m/s, max %lf m/s\nsnapshots %lf/s",
               &tick, &hz, &server_s, &rtt, &agents, &moving, &resting, &mean, &max, &rate) == 10,
        "summary %u: %s", blocks, b);
    const char *ev = strstr(b, "events/s arrived ");
    ck_assert_msg(ev != NULL && (ev = strstr(ev, ", waypoint ")) != NULL &&
                      sscanf(ev, ", waypoint %lf", &wp) == 1,
                  "%s", b);
    ck_assert_msg(strstr(b, "\nstuck or unreachable lately: ") != NULL, "%s", b);
    ck_assert_uint_eq(hz, 30);
    ck_assert_msg(tick > last_tick, "tick %llu after %llu", tick, last_tick);
    ck_assert_uint_eq(agents, STEERD_DEMO_AGENTS + STEERD_DEMO_GOTO);
    ck_assert_uint_eq(moving + resting, agents);
    ck_assert_msg(rtt > 0.0 && max <= 50.0 && mean <= max, "rtt %.3f, speed mean %.2f, max %.2f", rtt, mean,
                  max);
    ck_assert_msg(rate > 2.0 && rate <= 30.0, "snapshots %.1f a second", rate);
    waypoints += wp;
    last_tick = tick;
    blocks++;
  }
  ck_assert_msg(blocks >= 2 && blocks <= 4, "%u summaries in 3.4 s: %s", blocks, r.out);
  ck_assert_msg(waypoints > 0.0, "no WAYPOINT counted: %s", r.out);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

static Suite *operators_suite(void) {
  Suite *s = suite_create("operators");
  TCase *tc = check_tcase(s, "operators", 60);
  tcase_add_test(tc, every_loopback_address_is_loopback);
  tcase_add_test(tc, a_bad_value_says_what_is_allowed);
  tcase_add_test(tc, anonymous_clients_are_admins_only_on_loopback_without_a_secret);
  tcase_add_test(tc, every_program_prints_its_version);
  tcase_add_test(tc, no_state_file_line_only_when_the_server_starts);
  tcase_add_test(tc, a_disconnect_and_a_timeout_are_told_apart);
  tcase_add_test(tc, client_cli_names_what_is_wrong);
  tcase_add_test(tc, client_cli_environment_and_shell);
  tcase_add_test(tc, client_cli_lists_agents);
  tcase_add_test(tc, client_cli_sets_params);
  tcase_add_test(tc, client_cli_bots_leave_no_agents);
  tcase_add_test(tc, client_cli_top_summarises);
  tcase_add_test(tc, client_shell_prompts_on_a_terminal);
  return s;
}

int main(void) {
  unsetenv("STEERD_SECRET");
  unsetenv("STEERD_SECRET_FILE");
  return check_run(operators_suite());
}

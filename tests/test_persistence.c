/* test_persistence.c: the world survives the server's death. The real server
 * on 127.0.0.1 writes checkpoints to a state file; it is killed with SIGKILL
 * and restarted with --state, and must restore every agent of the last
 * checkpoint with the same state hash; broken files stop it with a clear
 * error; --state-reset starts afresh. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "check_run.h"
#include "client.h"
#include "persist.h"
#include "protocol.h"
#include "steerd_proc.h"

#define SECRET "persistence test secret, long enough"

static char state_path[64];
static char secret_path[64];

static void setup(void) {
  strcpy(state_path, "/tmp/steerd-state-XXXXXX");
  int fd = mkstemp(state_path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  unlink(state_path); /* the server creates it */
  strcpy(secret_path, "/tmp/steerd-secret-XXXXXX");
  fd = mkstemp(secret_path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, SECRET "\n", strlen(SECRET) + 1), (ssize_t)strlen(SECRET) + 1);
  close(fd);
}

static void teardown(void) {
  unlink(state_path);
  unlink(secret_path);
}

/* The last log line containing needle, copied into out; 0 if none. */
static int last_line(const steerd_proc *p, const char *needle, char *out, size_t cap) {
  FILE *f = fopen(p->log_path, "r");
  char line[1024];
  int found = 0;
  while (f && fgets(line, sizeof(line), f))
    if (strstr(line, needle)) {
      snprintf(out, cap, "%s", line);
      found = 1;
    }
  if (f)
    fclose(f);
  return found;
}

/* "tick T: N agents, state hash H" from a checkpoint or restore line. */
typedef struct world_mark {
  unsigned long long tick, hash;
  unsigned agents;
} world_mark;

static world_mark parse_mark(const char *line) {
  world_mark m = {0, 0, 0};
  const char *t = strstr(line, "tick ");
  const char *h = strstr(line, "state hash ");
  ck_assert_ptr_nonnull(t);
  ck_assert_ptr_nonnull(h);
  ck_assert_int_eq(sscanf(t, "tick %llu: %u agents", &m.tick, &m.agents), 2);
  ck_assert_int_eq(sscanf(h, "state hash %llx", &m.hash), 1);
  return m;
}

static void start(steerd_proc *p, int demo, const char *extra) {
  const char *args[16] = {"--state",       state_path,  "--checkpoint-interval",      "1",
                          "--secret-file", secret_path, demo ? "--demo" : "--no-demo"};
  int n = 7;
  if (extra)
    args[n++] = extra;
  args[n] = NULL;
  ck_assert_msg(steerd_proc_start(p, STEERD_BINARY, args, 5000) == 0, "server did not start");
}

/* Starts a server that is expected to refuse; returns 1 if it exited nonzero
 * having logged needle. */
static int refuses(const char *needle, const char *extra) {
  steerd_proc p;
  const char *args[8] = {"--state", state_path, "--secret-file", secret_path, "--no-demo", extra, NULL};
  int rc = steerd_proc_start(&p, STEERD_BINARY, args, 3000);
  int ok = rc != 0 && steerd_proc_log_contains(&p, needle);
  if (rc == 0)
    steerd_proc_stop(&p, 10000);
  else
    unlink(p.log_path);
  return ok;
}

static steerd_client *connect_as(uint16_t port, const char *name, steerd_role role) {
  steerd_auth a;
  ck_assert_int_eq(steerd_auth_init(&a, SECRET, strlen(SECRET)), 0);
  steerd_token t;
  memset(&t, 0, sizeof(t));
  snprintf(t.name, sizeof(t.name), "%s", name);
  t.role = role;
  t.issued_at = (uint64_t)time(NULL);
  t.expires_at = t.issued_at + 3600;
  static char token[STEERD_AUTH_MAX_TOKEN_BYTES + 1];
  ck_assert_int_gt(steerd_auth_issue(&a, &t, token, sizeof(token)), 0);
  steerd_client_config cfg = steerd_client_default_config();
  cfg.name = name;
  cfg.token = token;
  steerd_client *c = steerd_client_create(&cfg);
  ck_assert_ptr_nonnull(c);
  ck_assert_int_eq(steerd_client_connect(c, "127.0.0.1", port), 0);
  return c;
}

static proto_command command(uint8_t type) {
  proto_command c;
  memset(&c, 0, sizeof(c));
  c.type = type;
  return c;
}

static int request(steerd_client *c, proto_command *cmd, proto_server_msg *reply) {
  proto_server_msg local;
  return steerd_client_command_wait(c, cmd, 3000, reply ? reply : &local);
}

/* Spawns a patroller and a wanderer for the client; returns the patroller. */
static steer_id populate(steerd_client *c, float y) {
  proto_command cmd = command(PROTO_MSG_SPAWN);
  cmd.spawn.model = STEER_MODEL_HEADING;
  cmd.spawn.position = proto_v2(0.0f, y);
  cmd.spawn.present = PROTO_SPAWN_PATH;
  cmd.spawn.path.count = 3;
  cmd.spawn.path.points[0] = proto_v2(0.0f, y);
  cmd.spawn.path.points[1] = proto_v2(20.0f, y);
  cmd.spawn.path.points[2] = proto_v2(20.0f, y + 15.0f);
  cmd.spawn.path.radius = 1.0f;
  cmd.spawn.path.mode = STEER_PATH_PINGPONG;
  cmd.spawn.path.cornering = STEER_CORNER_ARC;
  proto_server_msg reply;
  ck_assert_int_eq(request(c, &cmd, &reply), 0);
  steer_id patroller = reply.ack.agent;
  cmd = command(PROTO_MSG_SPAWN);
  cmd.spawn.model = STEER_MODEL_DYNAMIC;
  cmd.spawn.position = proto_v2(-10.0f, y);
  cmd.spawn.present = PROTO_SPAWN_BEHAVIOUR;
  cmd.spawn.behaviour.kind = STEER_BEHAVIOUR_WANDER;
  ck_assert_int_eq(request(c, &cmd, NULL), 0);
  return patroller;
}

static void wait_for_log(const steerd_proc *p, const char *needle, uint32_t timeout_ms) {
  uint64_t end = steerd_proc_now_ms() + timeout_ms;
  while (!steerd_proc_log_contains(p, needle) && steerd_proc_now_ms() < end)
    steerd_proc_sleep_ms(20);
  ck_assert_msg(steerd_proc_log_contains(p, needle), "no log line with '%s'", needle);
}

START_TEST(sigkill_then_restore_gives_the_same_world) {
  steerd_proc p;
  start(&p, 0, NULL);
  steerd_client *alice = connect_as(p.port, "alice", STEERD_ROLE_CONTROLLER);
  steer_id mine = populate(alice, 0.0f);
  steerd_client *bob = connect_as(p.port, "bob", STEERD_ROLE_CONTROLLER);
  populate(bob, 30.0f);
  /* Wait until a checkpoint has seen all four agents, then die without warning. */
  char line[1024];
  world_mark saved = {0, 0, 0};
  uint64_t end = steerd_proc_now_ms() + 5000;
  while (saved.agents < 4 && steerd_proc_now_ms() < end) {
    steerd_client_service(alice, 50);
    steerd_client_service(bob, 0);
    if (last_line(&p, "checkpoint (interval)", line, sizeof(line)))
      saved = parse_mark(line);
  }
  ck_assert_uint_eq(saved.agents, 4);
  kill(p.pid, SIGKILL);
  waitpid(p.pid, NULL, 0);
  unlink(p.log_path);
  steerd_client_destroy(alice);
  steerd_client_destroy(bob);
  /* The restart names the same tick, agents and hash as the last checkpoint. */
  steerd_proc q;
  start(&q, 0, NULL);
  ck_assert(last_line(&q, "restored", line, sizeof(line)));
  world_mark restored = parse_mark(line);
  ck_assert_uint_eq(restored.tick, saved.tick);
  ck_assert_uint_eq(restored.agents, saved.agents);
  ck_assert_uint_eq(restored.hash, saved.hash);
  /* Owners come back by name: alice commands her agent, bob may not. */
  alice = connect_as(q.port, "alice", STEERD_ROLE_CONTROLLER);
  bob = connect_as(q.port, "bob", STEERD_ROLE_CONTROLLER);
  proto_command cmd = command(PROTO_MSG_QUERY);
  cmd.query.agent = mine;
  proto_server_msg reply;
  ck_assert_int_eq(request(alice, &cmd, &reply), 0);
  ck_assert_uint_ge(reply.ack.query.tick, saved.tick);
  cmd = command(PROTO_MSG_STOP);
  cmd.stop.agent = mine;
  ck_assert_int_eq(request(bob, &cmd, &reply), STEERD_CLIENT_EREPLY);
  ck_assert_uint_eq(reply.error.code, PROTO_ERR_NOT_OWNER);
  ck_assert_int_eq(request(alice, &cmd, NULL), 0);
  /* New agents get new ids and new clients new client ids. */
  proto_command sp = command(PROTO_MSG_SPAWN);
  sp.spawn.model = STEER_MODEL_KINEMATIC;
  ck_assert_int_eq(request(alice, &sp, &reply), 0);
  ck_assert_uint_ne(reply.ack.agent, mine);
  steerd_client_destroy(alice);
  steerd_client_destroy(bob);
  ck_assert_int_eq(steerd_proc_stop(&q, 10000), 0);
}
END_TEST

START_TEST(sigterm_writes_a_checkpoint_and_the_demo_resumes) {
  steerd_proc p;
  start(&p, 1, NULL);
  steerd_proc_sleep_ms(300);
  ck_assert_int_eq(steerd_proc_stop(&p, 10000) >= 0, 1);
  /* steerd_proc_stop removed the log: start again and compare with the file's world. */
  steerd_proc q;
  start(&q, 1, NULL);
  char line[1024];
  ck_assert(last_line(&q, "restored", line, sizeof(line)));
  ck_assert_ptr_nonnull(strstr(line, "demo resumed"));
  world_mark m = parse_mark(line);
  ck_assert_uint_ge(m.agents, 20);
  ck_assert_uint_gt(m.tick, 0);
  /* The restored demo is not populated twice. */
  wait_for_log(&q, "checkpoint (interval)", 3000);
  ck_assert(last_line(&q, "checkpoint (interval)", line, sizeof(line)));
  ck_assert_uint_eq(parse_mark(line).agents, m.agents);
  steerd_proc_stop(&q, 10000);
}
END_TEST

static void read_state(const char *path, uint8_t **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  ck_assert_int_gt(n, 0);
  fseek(f, 0, SEEK_SET);
  *data = malloc((size_t)n);
  ck_assert_ptr_nonnull(*data);
  ck_assert_uint_eq(fread(*data, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
}

static void write_state(const uint8_t *data, size_t len) {
  FILE *f = fopen(state_path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  fclose(f);
}

static void flip_byte(long at) {
  FILE *f = fopen(state_path, "r+b");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fseek(f, at, at < 0 ? SEEK_END : SEEK_SET), 0);
  int c = fgetc(f);
  ck_assert_int_ne(c, EOF);
  ck_assert_int_eq(fseek(f, -1, SEEK_CUR), 0);
  fputc(c ^ 0x40, f);
  fclose(f);
}

START_TEST(broken_state_files_stop_the_server) {
  steerd_proc p;
  start(&p, 1, NULL);
  steerd_proc_stop(&p, 10000); /* writes the shutdown checkpoint */
  FILE *f = fopen(state_path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fclose(f);
  ck_assert_int_gt(size, 1000);
  char backup[80];
  snprintf(backup, sizeof(backup), "%s.good", state_path);
  char cmd[256];
  snprintf(cmd, sizeof(cmd), "cp %s %s", state_path, backup);
  ck_assert_int_eq(system(cmd), 0);

  /* Any flipped byte, the version word's included, is corruption (the file
   * checksum is checked before the version). */
  static const long spots[] = {0, 4, 5, 10, 200, 1000, -100, -12, -3};
  for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++) {
    snprintf(cmd, sizeof(cmd), "cp %s %s", backup, state_path);
    ck_assert_int_eq(system(cmd), 0);
    flip_byte(spots[i]);
    ck_assert_msg(refuses("cannot be restored: state data corrupt", NULL),
                  "a flipped byte at %ld was not refused as corrupt", spots[i]);
  }
  /* An intact file of another version is told apart. */
  uint8_t *img = NULL;
  size_t img_len = 0;
  read_state(backup, &img, &img_len);
  img[4] = STEERD_PERSIST_VERSION + 1;
  steerd_persist_seal(img, img_len);
  write_state(img, img_len);
  ck_assert(refuses("cannot be restored: state format version not supported", NULL));
  free(img);
  ck_assert_int_eq(truncate(state_path, size / 2), 0);
  ck_assert(refuses("cannot be restored", NULL));
  /* --state-reset discards it on purpose. */
  start(&p, 0, "--state-reset");
  ck_assert(steerd_proc_log_contains(&p, "--state-reset: ignoring the state file"));
  steerd_proc_stop(&p, 10000);
  unlink(backup);
}
END_TEST

/* Starts the server on the state file with --no-demo and extra (NULL-ended). */
static void start_with(steerd_proc *p, const char *state, const char *const *extra) {
  const char *args[24] = {"--state", state, "--secret-file", secret_path, "--no-demo"};
  int n = 5;
  for (int i = 0; extra && extra[i] && n < 23; i++)
    args[n++] = extra[i];
  args[n] = NULL;
  ck_assert_msg(steerd_proc_start(p, STEERD_BINARY, args, 5000) == 0, "server did not start");
}

/* SIGTERM and the exit status, keeping the log for the caller (who unlinks it). */
static int stop_keep_log(steerd_proc *p) {
  kill(p->pid, SIGTERM);
  int status = -1;
  uint64_t end = steerd_proc_now_ms() + 10000;
  while (steerd_proc_now_ms() < end && waitpid(p->pid, &status, WNOHANG) != p->pid)
    steerd_proc_sleep_ms(10);
  ck_assert_msg(WIFEXITED(status), "the server did not exit by itself after SIGTERM");
  return WEXITSTATUS(status);
}

/* Restarts on the state file; the number of agents it restored. */
static unsigned restored_agents(void) {
  steerd_proc q;
  start_with(&q, state_path, NULL);
  char line[1024];
  ck_assert_msg(last_line(&q, "restored", line, sizeof(line)), "nothing restored");
  unsigned agents = parse_mark(line).agents;
  ck_assert_int_eq(steerd_proc_stop(&q, 10000), 0);
  return agents;
}

/* SIGHUP writes a checkpoint and the server goes on: agents spawned since
 * the start survive a SIGKILL right after it. */
START_TEST(sighup_checkpoints_and_the_server_goes_on) {
  steerd_proc p;
  static const char *const only_at_exit[] = {"--checkpoint-interval", "0", NULL};
  start_with(&p, state_path, only_at_exit);
  steerd_client *alice = connect_as(p.port, "alice", STEERD_ROLE_CONTROLLER);
  populate(alice, 0.0f);
  populate(alice, 20.0f);
  ck_assert_int_eq(access(state_path, F_OK), -1); /* no checkpoint yet */
  kill(p.pid, SIGHUP);
  wait_for_log(&p, "checkpoint (SIGHUP) at tick", 5000);
  char line[1024];
  ck_assert(last_line(&p, "checkpoint (SIGHUP)", line, sizeof(line)));
  ck_assert_uint_eq(parse_mark(line).agents, 4);
  /* Still serving. */
  proto_command cmd = command(PROTO_MSG_PING);
  ck_assert_int_eq(request(alice, &cmd, NULL), 0);
  ck_assert_int_eq(kill(p.pid, 0), 0);
  kill(p.pid, SIGKILL);
  waitpid(p.pid, NULL, 0);
  unlink(p.log_path);
  steerd_client_destroy(alice);
  ck_assert_uint_eq(restored_agents(), 4);
}
END_TEST

/* The state file's directory disappears under a running server: the
 * shutdown checkpoint fails, and the exit status says so. */
START_TEST(a_failed_shutdown_checkpoint_exits_nonzero) {
  char dir[64], gone[80], state[96];
  strcpy(dir, "/tmp/steerd-statedir-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(state, sizeof(state), "%s/world.state", dir);
  snprintf(gone, sizeof(gone), "%s.gone", dir);
  steerd_proc p;
  start_with(&p, state, NULL);
  steerd_client *alice = connect_as(p.port, "alice", STEERD_ROLE_CONTROLLER);
  populate(alice, 0.0f);
  ck_assert_int_eq(rename(dir, gone), 0);
  ck_assert_int_eq(stop_keep_log(&p), 1);
  ck_assert(steerd_proc_log_contains(&p, "checkpoint (shutdown) failed"));
  ck_assert(steerd_proc_log_contains(&p, "the last checkpoint failed"));
  unlink(p.log_path);
  steerd_client_destroy(alice);
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", gone);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Past `ulimit -f` a checkpoint fails with EFBIG, logged, the server keeps
 * running (SIGXFSZ is ignored) and exits 1 after a failed last checkpoint. */
START_TEST(a_file_size_limit_is_reported_not_fatal) {
  struct rlimit old, lim;
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
  lim = old;
  lim.rlim_cur = 128 * 1024; /* the log stays far below; 50 000 slots alone take 300 KB */
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
  steerd_proc p;
  static const char *const big[] = {"--checkpoint-interval", "1", "--max-agents", "50000", NULL};
  start_with(&p, state_path, big);
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
  wait_for_log(&p, "checkpoint (interval) failed", 5000);
  ck_assert(steerd_proc_log_contains(&p, "File too large"));
  steerd_proc_sleep_ms(1200);
  ck_assert_int_eq(kill(p.pid, 0), 0);
  ck_assert(steerd_proc_log_contains(&p, "(2 failed so far)"));
  ck_assert_int_eq(stop_keep_log(&p), 1);
  ck_assert(steerd_proc_log_contains(&p, "checkpoint (shutdown) failed"));
  unlink(p.log_path);
  ck_assert_int_eq(access(state_path, F_OK), -1); /* nothing half-written either */
}
END_TEST

/* Paths that could never hold a checkpoint stop the server at start. */
START_TEST(unusable_state_paths_stop_the_server) {
  /* A missing directory. */
  char missing[96];
  snprintf(missing, sizeof(missing), "%s.nodir/world.state", state_path);
  steerd_proc p;
  const char *args[8] = {"--state", missing, "--secret-file", secret_path, "--no-demo", NULL};
  ck_assert_int_ne(steerd_proc_start(&p, STEERD_BINARY, args, 3000), 0);
  ck_assert(steerd_proc_log_contains(&p, "refusing to start: the directory of the state file"));
  ck_assert(steerd_proc_log_contains(&p, "No such file or directory"));
  unlink(p.log_path);
  /* A dangling symbolic link. */
  char target[96];
  snprintf(target, sizeof(target), "%s.target", state_path);
  ck_assert_int_eq(symlink(target, state_path), 0);
  ck_assert(refuses("which does not exist", NULL));
  /* A link to a good file is followed, and the file behind it is replaced. */
  steerd_proc q;
  start_with(&q, target, NULL);
  ck_assert_int_eq(steerd_proc_stop(&q, 10000), 0);
  start_with(&q, state_path, NULL);
  ck_assert(steerd_proc_log_contains(&q, "restored"));
  ck_assert(steerd_proc_log_contains(&q, "checkpoints replace"));
  ck_assert_int_eq(steerd_proc_stop(&q, 10000), 0);
  struct stat st;
  ck_assert_int_eq(lstat(state_path, &st), 0);
  ck_assert(S_ISLNK(st.st_mode));
  unlink(state_path);
  unlink(target);
  /* A FIFO (it used to hang the start without a word) and a directory. */
  ck_assert_int_eq(mkfifo(state_path, 0600), 0);
  uint64_t t0 = steerd_proc_now_ms();
  ck_assert(refuses("is a FIFO, not a regular file", NULL));
  ck_assert_uint_lt(steerd_proc_now_ms() - t0, 3000);
  unlink(state_path);
  ck_assert_int_eq(mkdir(state_path, 0700), 0);
  ck_assert(refuses("is a directory, not a regular file", NULL));
  rmdir(state_path);
}
END_TEST

/* Temporary files that SIGKILLs during checkpoints left are removed at start;
 * other files are not touched. */
START_TEST(stale_temporary_files_are_removed_at_start) {
  char stale[2][96], keep[96];
  for (int i = 0; i < 2; i++) {
    snprintf(stale[i], sizeof(stale[i]), "%s.tmp.XXXXXX", state_path);
    int fd = mkstemp(stale[i]);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "half a checkpoint", 17), 17);
    close(fd);
  }
  snprintf(keep, sizeof(keep), "%s.tmp.keep-me", state_path);
  FILE *f = fopen(keep, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  steerd_proc p;
  start_with(&p, state_path, NULL);
  ck_assert(steerd_proc_log_contains(&p, "removed 2 temporary files of interrupted checkpoints"));
  ck_assert_int_eq(access(stale[0], F_OK), -1);
  ck_assert_int_eq(access(stale[1], F_OK), -1);
  ck_assert_int_eq(access(keep, F_OK), 0);
  ck_assert_int_eq(steerd_proc_stop(&p, 10000), 0);
  unlink(keep);
}
END_TEST

/* Files of version 1 (no file checksum) are still read. */
START_TEST(version_1_files_are_still_read) {
  steerd_proc p;
  start_with(&p, state_path, NULL);
  steerd_client *alice = connect_as(p.port, "alice", STEERD_ROLE_CONTROLLER);
  populate(alice, 0.0f);
  steerd_client_destroy(alice);
  ck_assert_int_eq(steerd_proc_stop(&p, 10000), 0);
  uint8_t *img;
  size_t len;
  read_state(state_path, &img, &len);
  img[4] = 1; /* version 1 is version 2 without the trailing file checksum */
  write_state(img, len - 8);
  free(img);
  ck_assert_uint_eq(restored_agents(), 2);
  /* ... and saved back as the current version without a planner part. */
  read_state(state_path, &img, &len);
  ck_assert_uint_eq(img[4], 2); /* no agent in GOTO: version 2 (persist.h) */
  free(img);
}
END_TEST

int main(void) {
  Suite *s = suite_create("persistence");
  TCase *tc = check_tcase(s, "state file", 120);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, sigkill_then_restore_gives_the_same_world);
  tcase_add_test(tc, sigterm_writes_a_checkpoint_and_the_demo_resumes);
  tcase_add_test(tc, broken_state_files_stop_the_server);
  tcase_add_test(tc, sighup_checkpoints_and_the_server_goes_on);
  tcase_add_test(tc, a_failed_shutdown_checkpoint_exits_nonzero);
  tcase_add_test(tc, a_file_size_limit_is_reported_not_fatal);
  tcase_add_test(tc, unusable_state_paths_stop_the_server);
  tcase_add_test(tc, stale_temporary_files_are_removed_at_start);
  tcase_add_test(tc, version_1_files_are_still_read);
  return check_run(s);
}

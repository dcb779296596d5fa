/* test_checkpoint.c: atomic state files.
 *
 * Round trips, the missing-file code, and failures that must leave the old
 * file as it was and no temporary file behind: a directory that does not
 * exist, a target that is a directory (rename fails), and a write cut short by
 * RLIMIT_FSIZE (deterministic even as root, which ignores permissions). */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_run.h"
#include "checkpoint.h"

static char dir[64];

static void make_dir(void) {
  strcpy(dir, "/tmp/steerd-checkpoint-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* Removes the test directory (one level of files and empty directories). */
static void remove_dir(void) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  char p[512];
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
    if (unlink(p) != 0)
      rmdir(p);
  }
  closedir(d);
  rmdir(dir);
}

/* Entries in the test directory whose name contains part. */
static int entries_with(const char *part) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    n += strstr(e->d_name, part) != NULL;
  closedir(d);
  return n;
}

static void path_in(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", dir, name); }

static void assert_contents(const char *path, const uint8_t *want, size_t len) {
  uint8_t *data = NULL;
  size_t n = 0;
  char err[256];
  ck_assert_int_eq(steerd_checkpoint_read(path, &data, &n, err, sizeof(err)), STEERD_CHECKPOINT_OK);
  ck_assert_ptr_nonnull(data);
  ck_assert_uint_eq(n, len);
  if (len > 0)
    ck_assert_mem_eq(data, want, len);
  free(data);
}

static uint8_t *pattern(size_t len, uint8_t seed) {
  uint8_t *p = malloc(len ? len : 1);
  for (size_t i = 0; i < len; i++)
    p[i] = (uint8_t)(i * 31u + seed);
  return p;
}

START_TEST(test_round_trip) {
  make_dir();
  char path[256], err[256];
  path_in(path, sizeof(path), "state.bin");
  uint8_t *a = pattern(100000, 1), *b = pattern(777, 9);
  ck_assert_int_eq(steerd_checkpoint_write(path, a, 100000, err, sizeof(err)), STEERD_CHECKPOINT_OK);
  assert_contents(path, a, 100000);
  /* Replacing it. */
  ck_assert_int_eq(steerd_checkpoint_write(path, b, 777, err, sizeof(err)), STEERD_CHECKPOINT_OK);
  assert_contents(path, b, 777);
  /* Empty contents. */
  ck_assert_int_eq(steerd_checkpoint_write(path, NULL, 0, err, sizeof(err)), STEERD_CHECKPOINT_OK);
  assert_contents(path, NULL, 0);
  ck_assert_int_eq(entries_with(".tmp"), 0);
  ck_assert_int_eq(entries_with("state.bin"), 1);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_uint_eq(st.st_mode & 0777, 0600);
  /* A relative path (directory ".") works too. */
  char cwd[512];
  ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
  ck_assert_int_eq(chdir(dir), 0);
  ck_assert_int_eq(steerd_checkpoint_write("rel.bin", b, 777, err, sizeof(err)), STEERD_CHECKPOINT_OK);
  ck_assert_int_eq(chdir(cwd), 0);
  path_in(path, sizeof(path), "rel.bin");
  assert_contents(path, b, 777);
  free(a);
  free(b);
  remove_dir();
}
END_TEST

START_TEST(test_missing_and_unreadable) {
  make_dir();
  char path[256], err[256];
  uint8_t *data = (uint8_t *)1;
  size_t n = 5;
  path_in(path, sizeof(path), "nothing.bin");
  ck_assert_int_eq(steerd_checkpoint_read(path, &data, &n, err, sizeof(err)), STEERD_CHECKPOINT_ENOENT);
  ck_assert_ptr_null(data);
  ck_assert_uint_eq(n, 0);
  ck_assert_ptr_nonnull(strstr(err, path));
  /* A directory is not a state file. */
  ck_assert_int_eq(steerd_checkpoint_read(dir, &data, &n, err, sizeof(err)), STEERD_CHECKPOINT_EIO);
  ck_assert_ptr_null(data);
  /* A file in a directory that is a file: not "missing" but an error. */
  path_in(path, sizeof(path), "plain");
  ck_assert_int_eq(steerd_checkpoint_write(path, (const uint8_t *)"x", 1, err, sizeof(err)), 0);
  path_in(path, sizeof(path), "plain/state.bin");
  ck_assert_int_eq(steerd_checkpoint_read(path, &data, &n, err, sizeof(err)), STEERD_CHECKPOINT_EIO);
  /* Bad arguments; err may be NULL. */
  ck_assert_int_eq(steerd_checkpoint_read(NULL, &data, &n, NULL, 0), STEERD_CHECKPOINT_EINVAL);
  ck_assert_int_eq(steerd_checkpoint_read("", &data, &n, err, sizeof(err)), STEERD_CHECKPOINT_EINVAL);
  ck_assert_int_eq(steerd_checkpoint_write(NULL, NULL, 0, NULL, 0), STEERD_CHECKPOINT_EINVAL);
  ck_assert_int_eq(steerd_checkpoint_write(path, NULL, 3, err, sizeof(err)), STEERD_CHECKPOINT_EINVAL);
  ck_assert_str_eq(steerd_checkpoint_strerror(STEERD_CHECKPOINT_ENOENT), "no such file");
  remove_dir();
}
END_TEST

/* Failed writes leave the old file and no temporary behind. */
START_TEST(test_failed_write_keeps_old) {
  make_dir();
  char path[256], err[256];
  uint8_t *old = pattern(5000, 3), *neu = pattern(9000, 4);
  /* A directory that does not exist. */
  path_in(path, sizeof(path), "no/such/dir/state.bin");
  ck_assert_int_eq(steerd_checkpoint_write(path, neu, 9000, err, sizeof(err)), STEERD_CHECKPOINT_EIO);
  ck_assert_ptr_nonnull(strstr(err, "no/such/dir"));
  /* The target is a directory with something in it: the rename fails. */
  path_in(path, sizeof(path), "taken");
  ck_assert_int_eq(mkdir(path, 0700), 0);
  path_in(path, sizeof(path), "taken/inside");
  ck_assert_int_eq(steerd_checkpoint_write(path, old, 10, err, sizeof(err)), STEERD_CHECKPOINT_OK);
  path_in(path, sizeof(path), "taken");
  ck_assert_int_eq(steerd_checkpoint_write(path, neu, 9000, err, sizeof(err)), STEERD_CHECKPOINT_EIO);
  ck_assert_ptr_nonnull(strstr(err, "rename"));
  ck_assert_int_eq(entries_with(".tmp"), 0);
  path_in(path, sizeof(path), "taken/inside");
  assert_contents(path, old, 10);
  remove(path);
  path_in(path, sizeof(path), "taken");
  rmdir(path);

  /* A write cut short: a file size limit below the new contents, in a child
   * so the limit does not outlive the test. */
  path_in(path, sizeof(path), "state.bin");
  ck_assert_int_eq(steerd_checkpoint_write(path, old, 5000, err, sizeof(err)), STEERD_CHECKPOINT_OK);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN); /* the write then fails with EFBIG instead */
    struct rlimit rl = {6000, 6000};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
      _exit(10);
    int rc = steerd_checkpoint_write(path, neu, 9000, err, sizeof(err));
    _exit(rc == STEERD_CHECKPOINT_EIO && strstr(err, "write") != NULL ? 0 : 11);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status));
  ck_assert_int_eq(WEXITSTATUS(status), 0);
  assert_contents(path, old, 5000);
  ck_assert_int_eq(entries_with(".tmp"), 0);
  ck_assert_int_eq(entries_with("state.bin"), 1);
  free(old);
  free(neu);
  remove_dir();
}
END_TEST

/* The counters /metrics and /readyz read: a failure sets failing, a good
 * checkpoint clears it and stamps the wall clock. */
START_TEST(test_stats_counters) {
  steerd_checkpoint_stats st;
  memset(&st, 0, sizeof(st));
  steerd_checkpoint_stats_failed(&st);
  ck_assert_uint_eq(st.failed, 1);
  ck_assert_uint_eq(st.written, 0);
  ck_assert_uint_eq(st.failing, 1);
  ck_assert_uint_eq(st.last_ok_unix_ms, 0);
  uint64_t before = (uint64_t)time(NULL) * 1000u;
  steerd_checkpoint_stats_ok(&st, 42, 1234);
  uint64_t after = ((uint64_t)time(NULL) + 1) * 1000u;
  ck_assert_uint_eq(st.written, 1);
  ck_assert_uint_eq(st.failed, 1);
  ck_assert_uint_eq(st.failing, 0);
  ck_assert_uint_eq(st.last_ok_tick, 42);
  ck_assert_uint_eq(st.last_bytes, 1234);
  ck_assert_uint_ge(st.last_ok_unix_ms, before);
  ck_assert_uint_le(st.last_ok_unix_ms, after);
  steerd_checkpoint_stats_failed(&st);
  ck_assert_uint_eq(st.failing, 1);
  ck_assert_uint_eq(st.last_ok_tick, 42); /* the last good one is still the last good one */
}
END_TEST

static Suite *checkpoint_suite(void) {
  Suite *s = suite_create("checkpoint");
  TCase *tc = check_tcase(s, "files", 120);
  tcase_add_test(tc, test_round_trip);
  tcase_add_test(tc, test_missing_and_unreadable);
  tcase_add_test(tc, test_failed_write_keeps_old);
  tcase_add_test(tc, test_stats_counters);
  return s;
}

int main(void) { return check_run(checkpoint_suite()); }

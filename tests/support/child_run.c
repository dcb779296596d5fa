/* child_run.c: see child_run.h. */
#include "child_run.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "steerd_proc.h"

extern char **environ;

int child_run_sibling(const char *server_binary, const char *rel, char *out, size_t cap) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", server_binary);
  for (int i = 0; i < 2; i++) { /* strip "/steerd", then "/server" */
    char *slash = strrchr(dir, '/');
    if (!slash)
      return -1;
    *slash = '\0';
  }
  snprintf(out, cap, "%s/%s", dir, rel);
  return 0;
}

int child_run(const char *bin, char *const *argv, char *const *envp, const char *in_path, int out_fd,
              int err_fd, uint32_t timeout_ms, int *status) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, in_path, O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
  pid_t pid;
  int rc = posix_spawn(&pid, bin, &fa, NULL, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  *status = -1;
  if (rc != 0)
    return rc;
  uint64_t end = steerd_proc_now_ms() + timeout_ms;
  int st = 0;
  pid_t w;
  while ((w = waitpid(pid, &st, WNOHANG)) == 0 && steerd_proc_now_ms() < end)
    steerd_proc_sleep_ms(20);
  if (w == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
  } else {
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  return 0;
}

/* Reads the file into buf[cap] (NUL-terminated, empty if unreadable) and removes it. */
static void slurp(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
  buf[n] = '\0';
  if (f)
    fclose(f);
  unlink(path);
}

int child_run_capture(const char *bin, char *const *argv, char *const *envp, const char *in_path,
                      uint32_t timeout_ms, int *status, char *out, size_t out_cap, char *err,
                      size_t err_cap) {
  char out_path[] = "/tmp/steerd-run-out-XXXXXX", err_path[] = "/tmp/steerd-run-err-XXXXXX";
  *status = -1;
  int out_fd = mkstemp(out_path);
  if (out_fd < 0)
    return -1;
  int err_fd = mkstemp(err_path);
  if (err_fd < 0) {
    close(out_fd);
    unlink(out_path);
    return -1;
  }
  int rc = child_run(bin, argv, envp, in_path, out_fd, err_fd, timeout_ms, status);
  close(out_fd);
  close(err_fd);
  slurp(out_path, out, out_cap);
  slurp(err_path, err, err_cap);
  return rc;
}

static int dropped(const char *var, const char *const *drop) {
  for (size_t i = 0; drop && drop[i]; i++)
    if (strncmp(var, drop[i], strlen(drop[i])) == 0)
      return 1;
  return 0;
}

char **child_run_environ(const char *const *drop, const char *const *add) {
  size_t n = 0, extra = 0;
  while (environ[n] != NULL)
    n++;
  while (add && add[extra] != NULL)
    extra++;
  char **envp = calloc(n + extra + 1, sizeof *envp);
  if (!envp)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!dropped(environ[i], drop))
      envp[k++] = environ[i];
  for (size_t i = 0; i < extra; i++)
    envp[k++] = (char *)add[i];
  envp[k] = NULL;
  return envp;
}

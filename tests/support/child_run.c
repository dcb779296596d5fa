/* child_run.c: see child_run.h. */
#include "child_run.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "steerd_proc.h"

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

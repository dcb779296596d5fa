/* steerd_proc.c: see steerd_proc.h. */
#include "steerd_proc.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

uint64_t steerd_proc_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void steerd_proc_sleep_ms(uint32_t ms) {
  struct timespec ts = {ms / 1000u, (long)(ms % 1000u) * 1000000L};
  nanosleep(&ts, NULL);
}

/* On stderr: how a server that never listened ended, and its log. */
static void report_early_exit(const steerd_proc *p, int status) {
  if (WIFSIGNALED(status))
    fprintf(stderr, "steerd died of signal %d before listening; its log (%s):\n", WTERMSIG(status),
            p->log_path);
  else
    fprintf(stderr, "steerd exited with %d before listening; its log (%s):\n", WEXITSTATUS(status),
            p->log_path);
  FILE *f = fopen(p->log_path, "r");
  char line[1024];
  while (f && fgets(line, sizeof(line), f))
    fputs(line, stderr);
  if (f)
    fclose(f);
}

int steerd_proc_log_contains(const steerd_proc *p, const char *needle) {
  FILE *f = fopen(p->log_path, "r");
  if (!f)
    return 0;
  char line[1024];
  int found = 0;
  while (!found && fgets(line, sizeof(line), f))
    found = strstr(line, needle) != NULL;
  fclose(f);
  return found;
}

/* The port of the first log line with marker followed by "address:port"
 * (the address as the server prints it: what --bind resolved to). */
static uint16_t find_port(const steerd_proc *p, const char *marker) {
  FILE *f = fopen(p->log_path, "r");
  if (!f)
    return 0;
  char line[1024];
  uint16_t port = 0;
  while (!port && fgets(line, sizeof(line), f)) {
    const char *at = strstr(line, marker);
    if (!at)
      continue;
    at += strlen(marker);
    const char *colon = NULL;
    for (const char *c = at; *c && *c != ' ' && *c != '\n'; c++)
      if (*c == ':' && c[1] >= '0' && c[1] <= '9')
        colon = c; /* the last ':' before digits: "127.0.0.1:4000:" gives 4000 */
    if (colon)
      port = (uint16_t)atoi(colon + 1);
  }
  fclose(f);
  return port;
}

int steerd_proc_start(steerd_proc *p, const char *binary, const char *const *extra, uint32_t timeout_ms) {
  memset(p, 0, sizeof(*p));
  strcpy(p->log_path, "/tmp/steerd-proc-XXXXXX");
  int fd = mkstemp(p->log_path);
  if (fd < 0)
    return -1;
  /* Controllers, as on a server with tokens, unless a test asks for another role: the loopback
   * development default (admin) would hide every ownership and role check. */
  const char *argv[48] = {binary,        "--bind", "127.0.0.1",        "--port",    "0",
                          "--http-port", "0",      "--anonymous-role", "controller"};
  int argc = 9, http = 0;
  for (int i = 0; extra && extra[i] && argc < 47; i++) {
    if (strcmp(extra[i], "--http-port") == 0 && extra[i + 1])
      http = strcmp(extra[i + 1], "0") != 0;
    argv[argc++] = extra[i];
  }
  argv[argc] = NULL;
  p->pid = fork();
  if (p->pid < 0) {
    close(fd);
    return -1;
  }
  if (p->pid == 0) {
    dup2(fd, STDERR_FILENO);
    dup2(fd, STDOUT_FILENO);
    execv(binary, (char *const *)argv);
    _exit(127);
  }
  close(fd);
  uint64_t deadline = steerd_proc_now_ms() + timeout_ms;
  while (!(p->port = find_port(p, "listening on ")) || (http && !(p->http_port = find_port(p, "http on ")))) {
    if (steerd_proc_now_ms() >= deadline)
      break;
    int status = 0;
    if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
      p->pid = 0; /* exited before listening: printed, so a test that expected it to start shows why */
      report_early_exit(p, status);
      return -1;
    }
    steerd_proc_sleep_ms(10);
  }
  if (!p->port || (http && !p->http_port)) {
    kill(p->pid, SIGKILL);
    waitpid(p->pid, NULL, 0);
    return -1;
  }
  return 0;
}

int steerd_proc_start_with(steerd_proc *p, const char *binary, const char *const *base,
                           const char *const *extra, uint32_t timeout_ms) {
  const char *args[40];
  int n = 0;
  for (int i = 0; base && base[i] && n < 39; i++)
    args[n++] = base[i];
  for (int i = 0; extra && extra[i] && n < 39; i++)
    args[n++] = extra[i];
  args[n] = NULL;
  return steerd_proc_start(p, binary, args, timeout_ms);
}

int steerd_proc_stop(steerd_proc *p, uint32_t timeout_ms) {
  int status = -1;
  if (p->pid > 0) {
    kill(p->pid, SIGTERM);
    uint64_t deadline = steerd_proc_now_ms() + timeout_ms;
    int done = 0;
    while (!done && steerd_proc_now_ms() < deadline) {
      done = waitpid(p->pid, &status, WNOHANG) == p->pid;
      if (!done)
        steerd_proc_sleep_ms(10);
    }
    if (!done) {
      kill(p->pid, SIGKILL);
      waitpid(p->pid, NULL, 0);
      status = -1;
    }
  }
  unlink(p->log_path);
  return status;
}

double steerd_proc_cpu_seconds(const steerd_proc *p) {
  char path[64], buf[1024];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)p->pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1.0;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* Fields after the parenthesised command name: state is field 3, utime 14, stime 15. */
  const char *rest = strrchr(buf, ')');
  if (!rest)
    return -1.0;
  unsigned long utime = 0, stime = 0;
  if (sscanf(rest + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
    return -1.0;
  return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

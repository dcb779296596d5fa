/* child_run.h: run one of the build's binaries (steerd, steerd-client) as a
 * child process with a chosen environment and redirections, and wait for it
 * with a timeout. For tests that check what an operator sees: exit status,
 * stdout, stderr. No Check in here: callers assert on the results. */
#ifndef STEERD_CHILD_RUN_H
#define STEERD_CHILD_RUN_H

#include <stddef.h>
#include <stdint.h>

/* rel next to the build's server/ folder: server_binary (build/server/steerd)
 * without its last two parts, then "/" rel ("client-sample/steerd-client" gives
 * build/client-sample/steerd-client). Returns 0, or -1 if server_binary has
 * fewer than two parts. */
int child_run_sibling(const char *server_binary, const char *rel, char *out, size_t cap);

/* Runs bin with argv and envp (both NULL-terminated), stdin from in_path,
 * stdout into out_fd and stderr into err_fd, then waits up to timeout_ms for it
 * to exit and kills it (SIGKILL) if it has not. *status is its exit status, or
 * -1 when it was killed or died of a signal. Returns posix_spawn's result: 0,
 * or an error number when nothing ran (*status is then -1). */
int child_run(const char *bin, char *const *argv, char *const *envp, const char *in_path, int out_fd,
              int err_fd, uint32_t timeout_ms, int *status);

/* child_run with stdout and stderr captured: each goes to a temporary file
 * that is read into out[out_cap] and err[err_cap] (NUL-terminated, cut short
 * if longer) and removed. Returns 0, -1 when no temporary file could be made,
 * or child_run's error number (*status -1 then). */
int child_run_capture(const char *bin, char *const *argv, char *const *envp, const char *in_path,
                      uint32_t timeout_ms, int *status, char *out, size_t out_cap, char *err, size_t err_cap);

/* This process's environment for a child: every variable but those whose
 * "NAME=value" starts with one of drop (NULL-terminated; may be NULL), then
 * the entries of add (NULL-terminated; may be NULL). The strings are not
 * copied; free() the array. NULL when out of memory. */
char **child_run_environ(const char *const *drop, const char *const *add);

#endif /* STEERD_CHILD_RUN_H */

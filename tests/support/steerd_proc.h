/* steerd_proc.h: run the real steerd binary as a child process on 127.0.0.1
 * with an ephemeral port, for integration tests and benchmarks. Its log goes
 * to a temporary file that the caller can search. */
#ifndef STEERD_PROC_H
#define STEERD_PROC_H

#include <stdint.h>
#include <sys/types.h>

typedef struct steerd_proc {
  pid_t pid;
  uint16_t port;
  uint16_t http_port; /* 0 unless extra asked for one ("--http-port", "auto") */
  char log_path[64];
} steerd_proc;

/* Starts `binary --bind 127.0.0.1 --port 0 --http-port 0 --anonymous-role controller <extra...>` (extra is
 * NULL-terminated, may be NULL; a later flag wins, so "--http-port", "auto"
 * opens an ephemeral HTTP port: parallel tests never share a fixed one) and
 * waits up to timeout_ms for its "listening on <address>:<port>" line (and its
 * "http on" line when HTTP is on; the address is what --bind resolved to).
 * Returns 0, or -1 (the child is killed). */
int steerd_proc_start(steerd_proc *p, const char *binary, const char *const *extra, uint32_t timeout_ms);

/* steerd_proc_start with the flags of base, then those of extra (each
 * NULL-terminated, may be NULL; a later flag wins): a test's usual flags and
 * one case's own. */
int steerd_proc_start_with(steerd_proc *p, const char *binary, const char *const *base,
                           const char *const *extra, uint32_t timeout_ms);

/* SIGTERM, then SIGKILL after timeout_ms; removes the log. Returns the wait
 * status, or -1 if the process had to be killed. */
int steerd_proc_stop(steerd_proc *p, uint32_t timeout_ms);

/* 1 if a line of the log contains needle. */
int steerd_proc_log_contains(const steerd_proc *p, const char *needle);

/* CPU time (user + system) the process has used, in seconds; -1 if unknown. */
double steerd_proc_cpu_seconds(const steerd_proc *p);

/* Monotonic clock in milliseconds, and a sleep. */
uint64_t steerd_proc_now_ms(void);
void steerd_proc_sleep_ms(uint32_t ms);

#endif /* STEERD_PROC_H */

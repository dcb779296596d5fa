/* checkpoint.c: atomic replace (temp file, fsync, rename, fsync directory),
 * whole-file read, start-up checks of the path, and the checkpointer that
 * writes from a forked process or on a libuv worker thread. */
#define _XOPEN_SOURCE 700 /* realpath */
#define _GNU_SOURCE       /* pipe2 */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

const char *steerd_checkpoint_strerror(int code) {
  switch (code) {
  case STEERD_CHECKPOINT_OK:
    return "ok";
  case STEERD_CHECKPOINT_EINVAL:
    return "invalid argument";
  case STEERD_CHECKPOINT_ENOENT:
    return "no such file";
  case STEERD_CHECKPOINT_EIO:
    return "i/o error";
  case STEERD_CHECKPOINT_ENOMEM:
    return "out of memory";
  case STEERD_CHECKPOINT_EBUSY:
    return "a checkpoint is being written";
  case STEERD_CHECKPOINT_EAGAIN:
    return "cannot start a checkpoint process";
  default:
    return "unknown error";
  }
}

static void set_err(char *err, size_t errcap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errcap, const char *fmt, ...) {
  if (!err || errcap == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errcap, fmt, ap);
  va_end(ap);
}

/* Writes all of data, resuming after short writes and signals. */
static int write_all(int fd, const uint8_t *data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

static const char *file_kind(mode_t m) {
  if (S_ISDIR(m))
    return "a directory";
  if (S_ISFIFO(m))
    return "a FIFO";
  if (S_ISSOCK(m))
    return "a socket";
  if (S_ISCHR(m) || S_ISBLK(m))
    return "a device";
  return "not a regular file";
}

/* The directory part of path ("." when there is none; "/" for "/name"). */
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 1;
  if (slash && n == 0)
    n = 1;
  char *d = malloc(n + 1);
  if (!d)
    return NULL;
  memcpy(d, slash ? path : ".", n);
  d[n] = '\0';
  return d;
}

int steerd_checkpoint_write(const char *path, const uint8_t *data, size_t len, char *err, size_t errcap) {
  set_err(err, errcap, "ok");
  if (!path || !*path || (!data && len > 0)) {
    set_err(err, errcap, "checkpoint write: invalid arguments");
    return STEERD_CHECKPOINT_EINVAL;
  }
  static const char suffix[] = ".tmp.XXXXXX";
  size_t plen = strlen(path);
  char *tmp = malloc(plen + sizeof(suffix));
  char *dir = dir_of(path);
  if (!tmp || !dir) {
    free(tmp);
    free(dir);
    set_err(err, errcap, "checkpoint write %s: out of memory", path);
    return STEERD_CHECKPOINT_ENOMEM;
  }
  memcpy(tmp, path, plen);
  memcpy(tmp + plen, suffix, sizeof(suffix));
  int rc = STEERD_CHECKPOINT_EIO;
  int fd = mkstemp(tmp);
  if (fd < 0) {
    set_err(err, errcap, "create temporary file %s: %s", tmp, strerror(errno));
    goto out;
  }
  if (write_all(fd, data, len) != 0) {
    set_err(err, errcap, "write %s: %s", tmp, strerror(errno));
    goto unlink_tmp;
  }
  if (fsync(fd) != 0) {
    set_err(err, errcap, "fsync %s: %s", tmp, strerror(errno));
    goto unlink_tmp;
  }
  int closed = close(fd);
  fd = -1;
  if (closed != 0) {
    set_err(err, errcap, "close %s: %s", tmp, strerror(errno));
    goto unlink_tmp;
  }
  if (rename(tmp, path) != 0) {
    set_err(err, errcap, "rename %s to %s: %s", tmp, path, strerror(errno));
    goto unlink_tmp;
  }
  /* The rename is durable once the directory entry is on disk. */
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  if (dfd < 0) {
    set_err(err, errcap, "open directory %s: %s", dir, strerror(errno));
    goto out;
  }
  if (fsync(dfd) != 0) {
    set_err(err, errcap, "fsync directory %s: %s", dir, strerror(errno));
    close(dfd);
    goto out;
  }
  close(dfd);
  rc = STEERD_CHECKPOINT_OK;
  goto out;
unlink_tmp:
  if (fd >= 0)
    close(fd);
  unlink(tmp);
out:
  free(tmp);
  free(dir);
  return rc;
}

int steerd_checkpoint_read(const char *path, uint8_t **data, size_t *len, char *err, size_t errcap) {
  set_err(err, errcap, "ok");
  if (data)
    *data = NULL;
  if (len)
    *len = 0;
  if (!path || !*path || !data || !len) {
    set_err(err, errcap, "checkpoint read: invalid arguments");
    return STEERD_CHECKPOINT_EINVAL;
  }
  /* O_NONBLOCK: a FIFO at the path must not hang the start (it is refused below). */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int e = errno;
    set_err(err, errcap, "open %s: %s", path, strerror(e));
    return e == ENOENT ? STEERD_CHECKPOINT_ENOENT : STEERD_CHECKPOINT_EIO;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    set_err(err, errcap, "stat %s: %s", path, strerror(errno));
    close(fd);
    return STEERD_CHECKPOINT_EIO;
  }
  if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uintmax_t)st.st_size > (uintmax_t)(SIZE_MAX - 1)) {
    set_err(err, errcap, "read %s: %s", path,
            S_ISREG(st.st_mode) ? "too large to read" : "not a regular file");
    close(fd);
    return STEERD_CHECKPOINT_EIO;
  }
  size_t size = (size_t)st.st_size;
  uint8_t *buf = malloc(size > 0 ? size : 1);
  if (!buf) {
    set_err(err, errcap, "read %s: out of memory for %zu bytes", path, size);
    close(fd);
    return STEERD_CHECKPOINT_ENOMEM;
  }
  /* Read one byte past the size to see the file end where fstat said. */
  size_t got = 0;
  for (;;) {
    uint8_t extra;
    ssize_t n = got < size ? read(fd, buf + got, size - got) : read(fd, &extra, 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      set_err(err, errcap, "read %s: %s", path, strerror(errno));
      break;
    }
    if (n == 0 && got == size) {
      close(fd);
      *data = buf;
      *len = size;
      return STEERD_CHECKPOINT_OK;
    }
    if (n == 0 || got == size) {
      set_err(err, errcap, "read %s: the file changed size while being read", path);
      break;
    }
    got += (size_t)n;
  }
  free(buf);
  close(fd);
  return STEERD_CHECKPOINT_EIO;
}

void steerd_checkpoint_stats_ok(steerd_checkpoint_stats *st, uint64_t tick, size_t bytes) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  st->written++;
  st->failing = 0;
  st->last_ok_unix_ms = (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
  st->last_ok_tick = tick;
  st->last_bytes = bytes;
}

void steerd_checkpoint_stats_failed(steerd_checkpoint_stats *st) {
  st->failed++;
  st->failing = 1;
}

/* ---- start-up checks ------------------------------------------------------ */

static const char tmp_suffix[] = ".tmp.XXXXXX";

/* Removes <base>.tmp.XXXXXX entries of dir (what mkstemp makes for base). */
static unsigned remove_stale(const char *dir, const char *base) {
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  size_t blen = strlen(base), slen = sizeof(tmp_suffix) - 1;
  unsigned removed = 0;
  int dfd = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    const char *n = e->d_name;
    if (strlen(n) != blen + slen || memcmp(n, base, blen) != 0 || memcmp(n + blen, tmp_suffix, 5) != 0)
      continue;
    struct stat st;
    if (fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && unlinkat(dfd, n, 0) == 0)
      removed++;
  }
  closedir(d);
  return removed;
}

int steerd_checkpoint_prepare(const char *path, char *resolved, size_t cap, unsigned *stale_removed,
                              char *err, size_t errcap) {
  set_err(err, errcap, "ok");
  if (stale_removed)
    *stale_removed = 0;
  if (!path || !*path || !resolved || cap == 0) {
    set_err(err, errcap, "state file: invalid arguments");
    return STEERD_CHECKPOINT_EINVAL;
  }
  if (strlen(path) >= cap) {
    set_err(err, errcap, "state file %s: path too long", path);
    return STEERD_CHECKPOINT_EINVAL;
  }
  snprintf(resolved, cap, "%s", path);
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = readlink(path, target, sizeof(target) - 1);
    target[n > 0 ? n : 0] = '\0';
    char *real = realpath(path, NULL);
    if (!real) {
      set_err(err, errcap, "state file %s is a symbolic link to %s, which %s", path, target,
              errno == ENOENT ? "does not exist" : strerror(errno));
      return STEERD_CHECKPOINT_EIO;
    }
    int fits = strlen(real) < cap;
    if (fits)
      snprintf(resolved, cap, "%s", real);
    free(real);
    if (!fits) {
      set_err(err, errcap, "state file %s: the link's target path is too long", path);
      return STEERD_CHECKPOINT_EIO;
    }
  }
  if (stat(resolved, &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      set_err(err, errcap, "state file %s is %s, not a regular file", resolved, file_kind(st.st_mode));
      return STEERD_CHECKPOINT_EIO;
    }
  } else if (errno != ENOENT) {
    set_err(err, errcap, "state file %s: %s", resolved, strerror(errno));
    return STEERD_CHECKPOINT_EIO;
  }
  char *dir = dir_of(resolved);
  if (!dir) {
    set_err(err, errcap, "state file %s: out of memory", resolved);
    return STEERD_CHECKPOINT_ENOMEM;
  }
  int rc = STEERD_CHECKPOINT_EIO;
  if (stat(dir, &st) != 0) {
    set_err(err, errcap, "the directory of the state file, %s: %s", dir, strerror(errno));
    goto out;
  }
  if (!S_ISDIR(st.st_mode)) {
    set_err(err, errcap, "the directory of the state file, %s, is not a directory", dir);
    goto out;
  }
  const char *slash = strrchr(resolved, '/');
  unsigned removed = remove_stale(dir, slash ? slash + 1 : resolved);
  if (stale_removed)
    *stale_removed = removed;
  /* The first checkpoint must be able to create its temporary file. */
  size_t plen = strlen(resolved);
  char *probe = malloc(plen + sizeof(tmp_suffix));
  if (!probe) {
    set_err(err, errcap, "state file %s: out of memory", resolved);
    rc = STEERD_CHECKPOINT_ENOMEM;
    goto out;
  }
  memcpy(probe, resolved, plen);
  memcpy(probe + plen, tmp_suffix, sizeof(tmp_suffix));
  int fd = mkstemp(probe);
  if (fd < 0) {
    set_err(err, errcap, "cannot create files in %s (for checkpoints of %s): %s", dir, resolved,
            strerror(errno));
  } else {
    close(fd);
    unlink(probe);
    rc = STEERD_CHECKPOINT_OK;
  }
  free(probe);
out:
  free(dir);
  return rc;
}

/* ---- the checkpointer ------------------------------------------------------ */

/* A forked writer's nice value: on a machine short of cores the loop's
 * ticks win over the checkpoint's encoding. */
#define CHILD_NICE 5

struct steerd_checkpointer {
  uv_loop_t *loop;
  char *path;
  uint8_t *buf;
  size_t cap;
  steerd_checkpoint_stats stats;

  /* The job in flight. The loop sets it up before queueing and reads the
   * result only after the worker has cleared running under the lock. */
  uv_work_t work;
  uv_mutex_t lock;
  uv_cond_t done;
  int queued;  /* loop: queued, its after-callback not yet run */
  int running; /* under lock: the worker has not finished */
  int pending; /* loop: a finished job not yet logged and counted */
  size_t len;
  steerd_checkpoint_seal_fn seal;
  const char *why;
  char detail[192];
  uint64_t tick, loop_ns, loop_cpu_ns, write_ns;
  int rc;
  char err[320];

  /* A forked writer (steerd_checkpointer_fork): its pid (0: none) and the
   * read end of the pipe its result comes back on. */
  pid_t child;
  int child_fd;
};

/* What a forked writer sends back, in one write (under PIPE_BUF, so it
 * arrives whole or not at all). */
typedef struct fork_result {
  int rc;
  uint64_t len, write_ns;
  char detail[192];
  char err[320];
} fork_result;

steerd_checkpointer *steerd_checkpointer_create(uv_loop_t *loop, const char *path) {
  steerd_checkpointer *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->path = strdup(path);
  if (!c->path || uv_mutex_init(&c->lock) != 0) {
    free(c->path);
    free(c);
    return NULL;
  }
  if (uv_cond_init(&c->done) != 0) {
    uv_mutex_destroy(&c->lock);
    free(c->path);
    free(c);
    return NULL;
  }
  c->loop = loop;
  c->child_fd = -1;
  c->stats.enabled = 1;
  c->work.data = c;
  return c;
}

/* queued: the work request is still libuv's; pending: the buffer is the
 * worker's, or a forked writer has not reported. */
int steerd_checkpointer_busy(const steerd_checkpointer *c) { return c->queued || c->pending; }

uint8_t *steerd_checkpointer_buffer(steerd_checkpointer *c, size_t len) {
  if (c->pending) /* a write in flight (pending clears only after the worker is done) */
    return NULL;
  if (len > c->cap) {
    uint8_t *p = realloc(c->buf, len);
    if (!p)
      return NULL;
    c->buf = p;
    c->cap = len;
  }
  return c->buf;
}

/* The write itself: on the worker, or on the loop for write_now. */
static void run_job(steerd_checkpointer *c) {
  uint64_t t0 = uv_hrtime();
  if (c->seal)
    c->seal(c->buf, c->len);
  c->rc = steerd_checkpoint_write(c->path, c->buf, c->len, c->err, sizeof(c->err));
  c->write_ns = uv_hrtime() - t0;
}

/* Logs and counts a finished job (loop thread). */
static void finish_job(steerd_checkpointer *c) {
  if (!c->pending)
    return;
  c->pending = 0;
  c->stats.in_flight = 0;
  c->stats.last_loop_us = (uint32_t)(c->loop_ns / 1000u);
  c->stats.last_loop_cpu_us = (uint32_t)(c->loop_cpu_ns / 1000u);
  c->stats.last_write_us = (uint32_t)(c->write_ns / 1000u);
  if (c->rc != STEERD_CHECKPOINT_OK) {
    steerd_checkpoint_stats_failed(&c->stats);
    LOG_ERROR("checkpoint (%s) failed: %s; the previous state file is kept (%llu failed so far)", c->why,
              c->err, (unsigned long long)c->stats.failed);
    return;
  }
  steerd_checkpoint_stats_ok(&c->stats, c->tick, c->len);
  LOG_INFO("checkpoint (%s) %s, %zu bytes: %.1f ms on the loop (%.1f ms CPU), %.1f ms writing", c->why,
           c->detail, c->len, (double)c->loop_ns / 1e6, (double)c->loop_cpu_ns / 1e6,
           (double)c->write_ns / 1e6);
}

static void on_work(uv_work_t *w) {
  steerd_checkpointer *c = w->data;
  run_job(c);
  uv_mutex_lock(&c->lock);
  c->running = 0;
  uv_cond_signal(&c->done);
  uv_mutex_unlock(&c->lock);
}

static void on_work_done(uv_work_t *w, int status) {
  steerd_checkpointer *c = w->data;
  (void)status; /* never cancelled */
  c->queued = 0;
  finish_job(c);
}

/* Takes a forked writer's result: block 0 returns at once when the writer
 * has not sent it yet. The writer exits right after sending, so the wait for
 * its exit is short. */
static void reap_child(steerd_checkpointer *c, int block) {
  if (!c->child)
    return;
  fork_result r;
  ssize_t n;
  if (!block) {
    struct pollfd pfd = {c->child_fd, POLLIN, 0};
    if (poll(&pfd, 1, 0) <= 0)
      return;
  }
  do
    n = read(c->child_fd, &r, sizeof r);
  while (n < 0 && errno == EINTR);
  int status = 0;
  while (waitpid(c->child, &status, 0) < 0 && errno == EINTR)
    ;
  close(c->child_fd);
  c->child = 0;
  c->child_fd = -1;
  if (n == (ssize_t)sizeof r) {
    c->rc = r.rc;
    c->len = (size_t)r.len;
    c->write_ns = r.write_ns;
    memcpy(c->detail, r.detail, sizeof c->detail);
    c->detail[sizeof c->detail - 1] = '\0';
    memcpy(c->err, r.err, sizeof c->err);
    c->err[sizeof c->err - 1] = '\0';
  } else {
    c->rc = STEERD_CHECKPOINT_EIO;
    if (WIFSIGNALED(status))
      snprintf(c->err, sizeof c->err, "the checkpoint process was killed by signal %d", WTERMSIG(status));
    else
      snprintf(c->err, sizeof c->err, "the checkpoint process exited (status %d) without a result",
               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  finish_job(c);
}

void steerd_checkpointer_poll(steerd_checkpointer *c) {
  if (c)
    reap_child(c, 0);
}

void steerd_checkpointer_wait(steerd_checkpointer *c) {
  if (!c)
    return;
  reap_child(c, 1);
  uv_mutex_lock(&c->lock);
  while (c->running)
    uv_cond_wait(&c->done, &c->lock);
  uv_mutex_unlock(&c->lock);
  finish_job(c);
}

static void set_job(steerd_checkpointer *c, size_t len, steerd_checkpoint_seal_fn seal, const char *why,
                    const char *detail, uint64_t tick, uint64_t loop_ns, uint64_t loop_cpu_ns) {
  c->len = len;
  c->seal = seal;
  c->why = why;
  snprintf(c->detail, sizeof(c->detail), "%s", detail ? detail : "");
  c->tick = tick;
  c->loop_ns = loop_ns;
  c->loop_cpu_ns = loop_cpu_ns;
  c->rc = STEERD_CHECKPOINT_EIO;
  snprintf(c->err, sizeof(c->err), "not written");
  c->pending = 1;
  c->stats.in_flight = 1;
}

int steerd_checkpointer_submit(steerd_checkpointer *c, size_t len, steerd_checkpoint_seal_fn seal,
                               const char *why, const char *detail, uint64_t tick, uint64_t loop_ns,
                               uint64_t loop_cpu_ns) {
  if (steerd_checkpointer_busy(c))
    return STEERD_CHECKPOINT_EBUSY;
  if (len > c->cap)
    return STEERD_CHECKPOINT_EINVAL;
  set_job(c, len, seal, why, detail, tick, loop_ns, loop_cpu_ns);
  c->running = 1; /* no worker runs now: no lock needed */
  c->queued = 1;
  int rc = uv_queue_work(c->loop, &c->work, on_work, on_work_done);
  if (rc != 0) {
    c->queued = c->running = 0;
    snprintf(c->err, sizeof(c->err), "cannot queue the write: %s", uv_strerror(rc));
    finish_job(c);
    return STEERD_CHECKPOINT_EIO;
  }
  return STEERD_CHECKPOINT_OK;
}

/* The forked writer: makes the image from its copy of the parent's memory,
 * seals and writes it, sends the result and exits without running the
 * parent's exit handlers or flushing its stdio. */
static void __attribute__((noreturn))
run_child(steerd_checkpointer *c, int fd, pid_t parent, steerd_checkpoint_image_fn make, void *ctx) {
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* a writer never outlives its server */
  if (getppid() != parent)          /* it went before the line above took effect */
    _exit(1);
  /* The copies of the server's sockets go at once: a connection the server
   * closes meanwhile is closed, not held open by this process. */
  if (fd > 3)
    close_range(3, (unsigned)fd - 1u, 0);
  close_range((unsigned)fd + 1u, ~0u, 0);
  setpriority(PRIO_PROCESS, 0, CHILD_NICE); /* the ticks come first where cores are short */
  fork_result r;
  memset(&r, 0, sizeof r);
  r.rc = STEERD_CHECKPOINT_ENOMEM;
  c->pending = 0; /* the buffer is this process's own copy */
  uint64_t t0 = uv_hrtime();
  size_t len = make(ctx, c, r.detail, sizeof r.detail, r.err, sizeof r.err);
  if (len > 0) {
    c->len = len;
    run_job(c);
    r.rc = c->rc;
    r.len = len;
    memcpy(r.err, c->err, sizeof r.err);
  }
  r.write_ns = uv_hrtime() - t0; /* the writer's whole time: making the image too */
  ssize_t n;
  do
    n = write(fd, &r, sizeof r);
  while (n < 0 && errno == EINTR);
  _exit(n == (ssize_t)sizeof r ? 0 : 1);
}

int steerd_checkpointer_fork(steerd_checkpointer *c, steerd_checkpoint_image_fn make, void *ctx,
                             steerd_checkpoint_seal_fn seal, const char *why, uint64_t tick, uint64_t loop_ns,
                             uint64_t loop_cpu_ns) {
  if (steerd_checkpointer_busy(c))
    return STEERD_CHECKPOINT_EBUSY;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    c->stats.fork_failed++;
    LOG_WARN("checkpoint (%s): no pipe for its writer (%s): the image is made on the loop", why,
             strerror(errno));
    return STEERD_CHECKPOINT_EAGAIN;
  }
  set_job(c, 0, seal, why, NULL, tick, loop_ns, loop_cpu_ns);
  uint64_t t0 = uv_hrtime();
  pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    close(fds[0]);
    run_child(c, fds[1], parent, make, ctx);
  }
  close(fds[1]);
  if (pid < 0) {
    int e = errno;
    close(fds[0]);
    c->pending = 0;
    c->stats.in_flight = 0;
    c->stats.fork_failed++;
    LOG_WARN("checkpoint (%s): cannot fork its writer (%s): the image is made on the loop", why, strerror(e));
    return STEERD_CHECKPOINT_EAGAIN;
  }
  /* fork is a system call: its time is the loop thread's CPU time too. */
  uint64_t forked = uv_hrtime() - t0;
  c->loop_ns += forked;
  c->loop_cpu_ns += forked;
  c->child = pid;
  c->child_fd = fds[0];
  return STEERD_CHECKPOINT_OK;
}

int steerd_checkpointer_write_now(steerd_checkpointer *c, size_t len, steerd_checkpoint_seal_fn seal,
                                  const char *why, const char *detail, uint64_t tick, uint64_t loop_ns,
                                  uint64_t loop_cpu_ns) {
  steerd_checkpointer_wait(c);
  if (c->pending || len > c->cap)
    return STEERD_CHECKPOINT_EINVAL;
  set_job(c, len, seal, why, detail, tick, loop_ns, loop_cpu_ns);
  run_job(c);
  int rc = c->rc;
  finish_job(c);
  return rc;
}

void steerd_checkpointer_failed(steerd_checkpointer *c, const char *why, const char *reason) {
  steerd_checkpoint_stats_failed(&c->stats);
  LOG_ERROR("checkpoint (%s) failed: %s; the previous state file is kept (%llu failed so far)", why, reason,
            (unsigned long long)c->stats.failed);
}

void steerd_checkpointer_stats(const steerd_checkpointer *c, steerd_checkpoint_stats *out) {
  *out = c->stats;
}

void steerd_checkpointer_destroy(steerd_checkpointer *c) {
  if (!c)
    return;
  steerd_checkpointer_wait(c);
  /* The after-callback must run before the memory goes (normally it has:
   * the loop ends only when no work is queued). */
  while (c->queued)
    uv_run(c->loop, UV_RUN_ONCE);
  uv_cond_destroy(&c->done);
  uv_mutex_destroy(&c->lock);
  free(c->buf);
  free(c->path);
  free(c);
}

/* checkpoint.c: atomic replace (temp file, fsync, rename, fsync directory) and
 * whole-file read. */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
  int fd = open(path, O_RDONLY);
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
    set_err(err, errcap, "read %s: not a regular file of a readable size", path);
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

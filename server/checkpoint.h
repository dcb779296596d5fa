/* checkpoint.h: a state file written atomically and read back whole.
 *
 * Writing goes to a temporary file in the target's directory, which is written
 * in full and fsynced, renamed over the target, and then the directory is
 * fsynced: after a crash the target holds either the old bytes or the new ones,
 * never a mix, and no temporary file is left behind by a failed write. The
 * bytes are opaque here (steer_world_save makes them). The file functions
 * print nothing: errors are return codes plus a message in the caller's
 * buffer. The checkpointer (below) writes on a libuv worker thread and logs
 * each result. */
#ifndef STEERD_CHECKPOINT_H
#define STEERD_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

typedef enum steerd_checkpoint_error {
  STEERD_CHECKPOINT_OK = 0,
  STEERD_CHECKPOINT_EINVAL = -1, /* NULL or empty arguments */
  STEERD_CHECKPOINT_ENOENT = -2, /* read: the file does not exist */
  STEERD_CHECKPOINT_EIO = -3,    /* a system call failed, or not a regular file (see err) */
  STEERD_CHECKPOINT_ENOMEM = -4, /* no memory (read: for the contents) */
  STEERD_CHECKPOINT_EBUSY = -5,  /* a checkpoint is being written */
  STEERD_CHECKPOINT_EAGAIN = -6  /* fork: no process could be started (the caller writes another way) */
} steerd_checkpoint_error;

const char *steerd_checkpoint_strerror(int code);

/* Replaces path with data[0, len) atomically (the new file is mode 0600). On
 * failure the old file, if any, is untouched. err (errcap bytes, may be NULL)
 * gets a one-line reason naming the call and the file. */
int steerd_checkpoint_write(const char *path, const uint8_t *data, size_t len, char *err, size_t errcap);

/* Start-up checks of a state file path, so that a path that could never be
 * checkpointed stops the server at start instead of failing in silence later:
 * the path is a regular file or nothing; a symbolic link is followed (resolved
 * gets the target's path, which then is what is read and replaced) unless it
 * dangles; the directory exists and a file can be created in it. Temporary
 * files of interrupted writes (<path>.tmp.XXXXXX) are removed; *stale_removed
 * (may be NULL) counts them. resolved (cap bytes) gets the path to use.
 * Returns 0 or STEERD_CHECKPOINT_EIO / EINVAL with a reason in err. */
int steerd_checkpoint_prepare(const char *path, char *resolved, size_t cap, unsigned *stale_removed,
                              char *err, size_t errcap);

/* Reads the whole of path into a malloc'd buffer (*data, *len; the caller
 * frees it; an empty file gives a non-NULL buffer and len 0). A missing file
 * is STEERD_CHECKPOINT_ENOENT, any other failure STEERD_CHECKPOINT_EIO or
 * STEERD_CHECKPOINT_ENOMEM, with *data NULL. */
int steerd_checkpoint_read(const char *path, uint8_t **data, size_t *len, char *err, size_t errcap);

/* What the checkpoints have done since start, for /metrics and /readyz
 * (steerd_server_checkpoint_stats). Kept and read on the loop thread. */
typedef struct steerd_checkpoint_stats {
  uint8_t enabled;           /* a state file is configured (--state) */
  uint8_t failing;           /* the last checkpoint failed; a good one clears it */
  uint8_t in_flight;         /* a checkpoint is being written */
  uint64_t written;          /* checkpoints renamed into place */
  uint64_t failed;           /* checkpoints that failed (the previous file is kept) */
  uint64_t last_ok_unix_ms;  /* wall clock of the last good checkpoint; 0: none since start */
  uint64_t last_ok_tick;     /* the world tick it holds */
  uint64_t last_bytes;       /* its size in bytes */
  uint32_t last_loop_us;     /* loop-thread time of the last checkpoint (us) */
  uint32_t last_loop_cpu_us; /* of which the loop thread was on a CPU (us) */
  uint32_t last_write_us;    /* write, fsync and rename of the last checkpoint (us) */
  uint64_t fork_failed;      /* checkpoints whose writer could not be forked (made on the loop instead) */
} steerd_checkpoint_stats;

/* A state file's writer: one checkpoint at a time, made, sealed and written
 * by a forked process (the loop pays for the fork), or made on the loop and
 * written (the optional seal, then steerd_checkpoint_write) on a libuv
 * worker thread. Results are logged and counted on the loop thread. */
typedef struct steerd_checkpointer steerd_checkpointer;

/* Runs on the worker before the write, e.g. to checksum the image. */
typedef void (*steerd_checkpoint_seal_fn)(uint8_t *image, size_t len);

/* path: what steerd_checkpoint_prepare resolved. NULL if out of memory. */
steerd_checkpointer *steerd_checkpointer_create(uv_loop_t *loop, const char *path);

/* Waits for a write in flight (and its result). Accepts NULL. */
void steerd_checkpointer_destroy(steerd_checkpointer *c);

/* 1 while a write is in flight (its buffer is then not to be touched). */
int steerd_checkpointer_busy(const steerd_checkpointer *c);

/* Blocks until a write in flight is done, then logs and counts it. */
void steerd_checkpointer_wait(steerd_checkpointer *c);

/* The buffer for the next image, at least len bytes (grown as needed); NULL
 * while a write is in flight or when out of memory. */
uint8_t *steerd_checkpointer_buffer(steerd_checkpointer *c, size_t len);

/* Writes the first len bytes of the buffer on a worker thread. why names the
 * trigger ("interval", "shutdown", "SIGHUP"; a string that lives on), detail
 * ends the log line ("at tick T: N agents, ..."), tick is the image's tick and
 * loop_ns the time spent making it (loop_cpu_ns: the loop thread's CPU time
 * of it, which contention for the cores does not inflate). 0, or
 * STEERD_CHECKPOINT_EBUSY. */
int steerd_checkpointer_submit(steerd_checkpointer *c, size_t len, steerd_checkpoint_seal_fn seal,
                               const char *why, const char *detail, uint64_t tick, uint64_t loop_ns,
                               uint64_t loop_cpu_ns);

/* Makes a checkpoint's image in a forked writer: fills the checkpointer's
 * buffer (steerd_checkpointer_buffer) and detail (the log line's end, as for
 * submit); returns the image's length, or 0 with a reason in err. */
typedef size_t (*steerd_checkpoint_image_fn)(void *ctx, steerd_checkpointer *c, char *detail,
                                             size_t detail_cap, char *err, size_t errcap);

/* Forks a writer that makes the image (make, from its copy-on-write copy of
 * this process's memory as it is now), seals and writes it, and reports back:
 * the calling thread pays for the fork only, and the pages the kernel copies
 * when this process next writes them. loop_ns and loop_cpu_ns are the
 * caller's time before the call; the fork's is added. The result is logged
 * and counted by steerd_checkpointer_poll (or wait). 0, EBUSY, or EAGAIN when
 * no process could be started (nothing was done). */
int steerd_checkpointer_fork(steerd_checkpointer *c, steerd_checkpoint_image_fn make, void *ctx,
                             steerd_checkpoint_seal_fn seal, const char *why, uint64_t tick, uint64_t loop_ns,
                             uint64_t loop_cpu_ns);

/* Takes a forked writer's result if it is in, without waiting (loop thread,
 * e.g. once a tick). */
void steerd_checkpointer_poll(steerd_checkpointer *c);

/* The same on the calling thread, after any write in flight: the result. */
int steerd_checkpointer_write_now(steerd_checkpointer *c, size_t len, steerd_checkpoint_seal_fn seal,
                                  const char *why, const char *detail, uint64_t tick, uint64_t loop_ns,
                                  uint64_t loop_cpu_ns);

/* Logs and counts a checkpoint whose image could not be made. */
void steerd_checkpointer_failed(steerd_checkpointer *c, const char *why, const char *reason);

/* The counters so far (enabled is set). */
void steerd_checkpointer_stats(const steerd_checkpointer *c, steerd_checkpoint_stats *out);

/* Counts a checkpoint that was renamed into place (clears failing). */
void steerd_checkpoint_stats_ok(steerd_checkpoint_stats *st, uint64_t tick, size_t bytes);

/* Counts a failed checkpoint (sets failing). */
void steerd_checkpoint_stats_failed(steerd_checkpoint_stats *st);

#endif /* STEERD_CHECKPOINT_H */

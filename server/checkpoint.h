/* checkpoint.h: a state file written atomically and read back whole.
 *
 * Writing goes to a temporary file in the target's directory, which is written
 * in full and fsynced, renamed over the target, and then the directory is
 * fsynced: after a crash the target holds either the old bytes or the new ones,
 * never a mix, and no temporary file is left behind by a failed write. The
 * bytes are opaque here (steer_world_save makes them). Prints nothing: errors
 * are return codes plus a message in the caller's buffer. */
#ifndef STEERD_CHECKPOINT_H
#define STEERD_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

typedef enum steerd_checkpoint_error {
  STEERD_CHECKPOINT_OK = 0,
  STEERD_CHECKPOINT_EINVAL = -1, /* NULL or empty arguments */
  STEERD_CHECKPOINT_ENOENT = -2, /* read: the file does not exist */
  STEERD_CHECKPOINT_EIO = -3,    /* a system call failed, or not a regular file (see err) */
  STEERD_CHECKPOINT_ENOMEM = -4  /* no memory (read: for the contents) */
} steerd_checkpoint_error;

const char *steerd_checkpoint_strerror(int code);

/* Replaces path with data[0, len) atomically (the new file is mode 0600). On
 * failure the old file, if any, is untouched. err (errcap bytes, may be NULL)
 * gets a one-line reason naming the call and the file. */
int steerd_checkpoint_write(const char *path, const uint8_t *data, size_t len, char *err, size_t errcap);

/* Reads the whole of path into a malloc'd buffer (*data, *len; the caller
 * frees it; an empty file gives a non-NULL buffer and len 0). A missing file
 * is STEERD_CHECKPOINT_ENOENT, any other failure STEERD_CHECKPOINT_EIO or
 * STEERD_CHECKPOINT_ENOMEM, with *data NULL. */
int steerd_checkpoint_read(const char *path, uint8_t **data, size_t *len, char *err, size_t errcap);

/* What the checkpoints have done since start, for /metrics and /readyz
 * (steerd_server_checkpoint_stats). Kept and read on the loop thread. */
typedef struct steerd_checkpoint_stats {
  uint8_t enabled;          /* a state file is configured (--state) */
  uint8_t failing;          /* the last checkpoint failed; a good one clears it */
  uint8_t in_flight;        /* a checkpoint is being written */
  uint64_t written;         /* checkpoints renamed into place */
  uint64_t failed;          /* checkpoints that failed (the previous file is kept) */
  uint64_t last_ok_unix_ms; /* wall clock of the last good checkpoint; 0: none since start */
  uint64_t last_ok_tick;    /* the world tick it holds */
  uint64_t last_bytes;      /* its size in bytes */
  uint32_t last_loop_us;    /* loop-thread time of the last checkpoint (us) */
  uint32_t last_write_us;   /* write, fsync and rename of the last checkpoint (us) */
} steerd_checkpoint_stats;

/* Counts a checkpoint that was renamed into place (clears failing). */
void steerd_checkpoint_stats_ok(steerd_checkpoint_stats *st, uint64_t tick, size_t bytes);

/* Counts a failed checkpoint (sets failing). */
void steerd_checkpoint_stats_failed(steerd_checkpoint_stats *st);

#endif /* STEERD_CHECKPOINT_H */

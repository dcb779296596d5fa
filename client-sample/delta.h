/* delta.h: steerd_delta, the client side of delta snapshots (PROTOCOL.md 7.6).
 *
 * Pure: no I/O, no clock. Feed it every DELTA packet; it gathers the parts of a
 * tick, and once all have arrived rebuilds the frame from its baseline (a frame
 * it rebuilt earlier, kept in a ring) and the changes and removals:
 *
 *   steerd_delta_receive()   one DELTA packet; 1 when it completed a frame:
 *                            acknowledge it with steerd_delta_ack()
 *   steerd_delta_frame()     the newest complete frame's records
 *   steerd_delta_poses()     the same as poses at the frame's time (dead reckoned)
 *
 * A part of an older tick than the one being gathered, or of a tick already
 * complete, is late and dropped; a part of a newer tick abandons the unfinished
 * one. A frame whose baseline the ring no longer holds (or never held) cannot be
 * rebuilt: it is dropped and not acknowledged, and the server falls back to an
 * older acknowledged frame or to none.
 *
 * Merging (PROTOCOL.md 7.6): a frame is rebuilt from its baseline with the
 * changes and removals of every frame rebuilt since that baseline applied
 * first, so a change the server sent once counts as soon as it arrives, not
 * only once the server learns it arrived; the acknowledgement lists those
 * frames so that the server knows exactly what the client holds.
 *
 * Everything is sized at create; nothing allocates after that. */
#ifndef STEERD_DELTA_H
#define STEERD_DELTA_H

#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

#define STEERD_DELTA_DEFAULT_FRAMES 32 /* >= the server's ring (STEERD_NETCODE_FRAMES) */

typedef enum steerd_delta_error {
  STEERD_DELTA_OK = 0,
  STEERD_DELTA_EINVAL = -1,    /* bad argument or configuration */
  STEERD_DELTA_ENOMEM = -2,    /* create failed to allocate */
  STEERD_DELTA_EDECODE = -3,   /* not a valid DELTA packet */
  STEERD_DELTA_ELATE = -4,     /* part of a finished, abandoned or older tick, or a duplicate */
  STEERD_DELTA_ENOBASE = -5,   /* the frame's baseline is not held: frame dropped */
  STEERD_DELTA_EBADFRAME = -6, /* parts disagree, or a change does not apply: frame dropped */
  STEERD_DELTA_EOVERFLOW = -7, /* more agents than max_agents: frame dropped */
  STEERD_DELTA_ERROR_COUNT = 8
} steerd_delta_error;

const char *steerd_delta_strerror(int code);

typedef struct steerd_delta_config {
  uint32_t max_agents; /* agents in view at most (10000); frames hold up to twice as many */
  uint32_t frames;     /* complete frames kept as possible baselines (32; <= 32 when merging) */
  int merge;           /* follow the merge rule and say so in acks (1); 0: the rule without merging */
} steerd_delta_config;

steerd_delta_config steerd_delta_default_config(void);

typedef struct steerd_delta_stats {
  uint64_t parts;            /* DELTA packets that decoded */
  uint64_t bad_packets;      /* that did not */
  uint64_t late_parts;       /* ELATE */
  uint64_t frames_complete;  /* rebuilt */
  uint64_t frames_abandoned; /* a newer tick came before all parts */
  uint64_t frames_no_base;   /* ENOBASE */
  uint64_t frames_bad;       /* EBADFRAME, EOVERFLOW */
  uint64_t frames_full;      /* complete frames that had no baseline */
  uint64_t frames_merged;    /* frames in flight merged into later ones */
  uint64_t changes, absolute, removed;
} steerd_delta_stats;

typedef struct steerd_delta steerd_delta;

steerd_delta *steerd_delta_create(const steerd_delta_config *cfg);
void steerd_delta_destroy(steerd_delta *d); /* accepts NULL */
/* Forgets every frame (a new connection). */
void steerd_delta_reset(steerd_delta *d);

/* One DELTA packet. Returns 1 and *tick (may be NULL) when it completed a
 * frame, 0 when the tick needs more parts, or a negative steerd_delta_error
 * when the packet (or the frame it completed) was dropped. */
int steerd_delta_receive(steerd_delta *d, const uint8_t *data, size_t len, uint64_t *tick);

/* The SNAPSHOT_ACK for the newest complete frame (tick and, when merging, the
 * frames merged into it); NULL before the first. */
const proto_snapshot_ack *steerd_delta_ack(const steerd_delta *d);

/* The newest complete frame: records sorted by id, each as last refreshed
 * (time_us is its refresh time, not the frame's). NULL before the first. */
const proto_record *steerd_delta_frame(const steerd_delta *d, uint32_t *count, uint64_t *tick,
                                       uint64_t *server_time_us);
/* The newest complete frame's agents predicted to its server time
 * (proto_record_predict), at most cap; returns the number written. */
uint32_t steerd_delta_poses(const steerd_delta *d, proto_pose *out, uint32_t cap);

void steerd_delta_get_stats(const steerd_delta *d, steerd_delta_stats *out);

#endif /* STEERD_DELTA_H */

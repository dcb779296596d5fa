/* netcode.h: per-client delta snapshots (PROTOCOL.md 7.6), pure: no sockets, no clock.
 *
 * For each client that asked for delta snapshots, the server keeps a ring of the
 * frames it sent (ioquake3's sv_snapshot.c). A frame is a list of entries: a
 * record (proto_record) for each agent the client will hold once it has the
 * frame, and a tombstone for each agent it removed or that a frame in flight
 * removed. Every entry is an "op" of the frame that first wrote it (its seq),
 * copied into later frames while it is the agent's newest op. A new frame is
 * encoded against the newest frame the client has acknowledged that is still
 * in the ring (the baseline), or against nothing.
 *
 *   steerd_netcode_begin()        once per snapshot: index the world's agents
 *   steerd_netcode_encode()       per client: choose, encode, remember the frame
 *   steerd_netcode_ack()          a SNAPSHOT_ACK arrived (with its merge list)
 *   steerd_netcode_set_view()     a VIEW command
 *   steerd_netcode_encode_batch() per snapshot, instead of encode: every
 *                                 client's frame on the pool's threads, then
 *   steerd_netcode_batch_result() per client, in slot order
 *
 * Merging. A client that merges (its acks carry lists) rebuilds a frame from
 * its baseline plus the ops of the frames it rebuilt since then (in flight when
 * the server encoded it). So the server treats the previous frame's entries
 * newer than the baseline as what the client will hold if those frames arrive,
 * and sends a change once rather than until a frame holding it is acknowledged.
 * When the ack of a frame arrives with the list of frames merged into it, the
 * server can say exactly what the client holds: when that frame becomes the
 * baseline it is "resolved" — each entry from a frame the client did not merge
 * falls back along its chain of superseded ops (nc_rec.prev) to one it did, or
 * to the previous baseline's record.
 *
 * Choosing: every agent in the client's view (the whole world, a circle, or a
 * circle following an agent; the world's neighbour grid answers the circle) is
 * compared with the record the client holds (or will hold once the frames in
 * flight arrive) predicted to the frame's time (proto_record_predict). Agents
 * within dr_position_m and dr_angle_rad of the truth whose record is younger
 * than dr_refresh frames cost nothing. The others (and agents new to the
 * client) are candidates, sent by priority = importance x staleness
 * (importance falls from 1 at the view's centre to 0.5 at its edge; staleness
 * = age / dr_refresh + position error / threshold + angle error / threshold /
 * 10; agents new to the client come first, nearest first) until the frame's
 * budget is used: budget_bytes, or less when the client's average rate
 * (rate_bytes, a token bucket holding one budget) allows less. The rest wait
 * and their staleness keeps growing. A change is a difference from the
 * baseline's record and carries the true state, but theta keeps the
 * baseline's prediction when within half the angle threshold, and omega the
 * baseline's when off by less than half the threshold per 100 ms (fewer
 * bytes). Agents the client may hold that left the view or the world are
 * removed; removals always go, before any change.
 *
 * Memory. Frames' entries live in one pool of records, the
 * server-wide cap (pool_records), handed out in chunks of 1024 records
 * (64 KB). Each client writes its frames into its own ring of at most
 * client_records records (its quota, whole chunks), backed by pool chunks
 * taken as its ring advances and given back once no frame can need them (older
 * than its baseline, the baseline's own baseline and the frames in flight).
 * So a client's baselines are overwritten only by its own frames, never by
 * another client's: a client past its quota wraps its own ring, and the
 * baseline it overwrote is no baseline any more: its next frame goes against
 * nothing (a keyframe), never against a lost baseline. Each client slot is
 * guaranteed a reserve of chunks (what a client viewing 512 agents keeps);
 * beyond it a client borrows from the rest of the pool only while the pool
 * still holds every other slot's reserve, and when it cannot, it reuses its
 * own oldest chunk. A frame that cannot be kept even so goes as a keyframe
 * (against nothing: it holds only what it sends), and only if even that
 * cannot be kept, not at all (frames_unkept). The pool is allocated at create and its pages are touched
 * only as chunks are used, so memory grows with what clients actually hold.
 *
 * Threads. A batch encodes the frames of many clients split over
 * a pool of threads by ranges of client slots, each range with its own
 * scratch and output (sized by set_pool). A client's frame depends only on
 * its own state, the world and its own chunks, so which range or thread
 * encodes it changes nothing. What clients share is done on the calling
 * thread in slot order: giving back stale chunks (before the ranges), and a
 * frame that needs a chunk beyond its slot's reserve (the shared rest of the
 * pool: which client gets it first matters), or the keyframe the pool being
 * short leads to, or more output room than its range has: such a frame is
 * left undone by its range and encoded by batch_result, in slot order. Each
 * slot's reserve is its own chunks (the first max_clients * reserve of the
 * pool), so taking from it touches nothing another client reads. The bytes
 * of every frame are the same whatever the number of threads.
 *
 * Everything is sized at create (and set_pool); nothing allocates after that. */
#ifndef STEERD_NETCODE_H
#define STEERD_NETCODE_H

#include <stddef.h>
#include <stdint.h>

#include "pool.h"
#include "protocol.h"
#include "world.h"

#define STEERD_NETCODE_FRAMES     32  /* frames remembered per client */
#define STEERD_NETCODE_MIN_BUDGET 256 /* bytes: the least budget_bytes */

typedef enum steerd_netcode_error {
  STEERD_NETCODE_OK = 0,
  STEERD_NETCODE_EINVAL = -1, /* bad argument or configuration */
  STEERD_NETCODE_ENOMEM = -2,
  STEERD_NETCODE_ENOENT = -3 /* no such agent (VIEW follow) */
} steerd_netcode_error;

typedef struct steerd_netcode_config {
  uint32_t max_clients;    /* client slots (64) */
  uint32_t max_agents;     /* world capacity: agents in view at most (10000) */
  uint32_t pool_records;   /* records of all clients' frames, the server-wide cap (0: every slot's reserve,
                              max_clients * 16 * min(max_agents, 512), plus a quota for a quarter of the
                              slots, at most 1 GiB unless one quota is more) */
  uint32_t client_records; /* records one client's frames may hold, its quota (0: 10 * max_agents, ten frames
                              of the whole world: a baseline ~0.5 s old at 20 Hz; at least two of its largest
                              frames, 2 * 3 * max_agents) */
  float dr_position_m;     /* dead-reckoning position threshold, m (0.02) */
  float dr_angle_rad;      /* dead-reckoning angle threshold, rad (1 degree) */
  uint32_t dr_refresh;     /* an agent's record is refreshed at least every this many frames (20) */
  uint32_t budget_bytes;   /* bytes of DELTA parts per client per snapshot, >= 256 (1200) */
  uint32_t rate_bytes;     /* bytes per second per client on average, 0: no limit (15000: 120 kbit/s) */
} steerd_netcode_config;

steerd_netcode_config steerd_netcode_default_config(void);

typedef struct steerd_netcode_stats {
  uint64_t frames;             /* frames encoded */
  uint64_t frames_full;        /* ... against no baseline */
  uint64_t parts;              /* DELTA packets */
  uint64_t bytes;              /* their payload bytes */
  uint64_t changes;            /* changes sent (absolute ones included) */
  uint64_t absolute;           /* changes for agents new to the client */
  uint64_t removed;            /* removals sent */
  uint64_t candidates;         /* agents that needed sending */
  uint64_t deferred;           /* candidates left out by the budget */
  uint64_t in_view;            /* agents in view, summed over frames */
  uint64_t acks;               /* acknowledgements of frames still in the ring */
  uint64_t acks_unknown;       /* of frames not (or no longer) in the ring */
  uint64_t kept_in_flight;     /* agents not sent because a frame in flight carries a good record */
  uint64_t baselines_lost;     /* acknowledged frames that could no longer be resolved */
  uint32_t max_age;            /* most frames any in-view agent's record went without a refresh */
  uint32_t chunks_used;        /* pool chunks held by clients now */
  uint32_t chunks_max;         /* ... at most */
  uint64_t chunks_reused;      /* a client's own oldest chunk taken when the pool was short */
  uint64_t keyframes_for_room; /* frames sent against nothing: the pool could not keep a delta */
  uint64_t frames_unkept;      /* frames not sent: no room to keep even a keyframe */
  uint64_t batch_deferred; /* frames a batch's range left to the calling thread (batch_result encoded them) */
} steerd_netcode_stats;

/* The encoded parts of one frame; valid until the next encode. */
typedef struct steerd_netcode_out {
  uint32_t part_count;
  const uint8_t *const *part; /* part_count pointers */
  const size_t *part_len;     /* part_count lengths, each <= PROTO_SNAPSHOT_PART_BYTES */
  uint64_t baseline_tick;     /* 0: against nothing */
  uint32_t in_view;
  uint32_t changes, removed, deferred;
} steerd_netcode_out;

typedef struct steerd_netcode steerd_netcode;

/* NULL on a bad config or when memory is short. */
steerd_netcode *steerd_netcode_create(const steerd_netcode_config *cfg);
void steerd_netcode_destroy(steerd_netcode *nc); /* accepts NULL */
const steerd_netcode_config *steerd_netcode_get_config(const steerd_netcode *nc);

/* Slot starts delta snapshots from scratch: no frames, view = the whole world. */
int steerd_netcode_client_start(steerd_netcode *nc, uint32_t slot);
/* Slot stops (disconnect, or back to full snapshots). */
void steerd_netcode_client_stop(steerd_netcode *nc, uint32_t slot);
int steerd_netcode_client_active(const steerd_netcode *nc, uint32_t slot);

/* VIEW. FOLLOW needs a live agent (ENOENT otherwise); once it is gone the view
 * stays where it last was. */
int steerd_netcode_set_view(steerd_netcode *nc, uint32_t slot, const proto_view *view, const steer_world *w);

/* Whether slot's view takes in a point (a VIEW of everything, or within the
 * circle as of the last snapshot); 1 for a slot without delta snapshots. For
 * EVENTs (PROTOCOL.md 7.4). */
int steerd_netcode_sees(const steerd_netcode *nc, uint32_t slot, vec2 pos);

/* SNAPSHOT_ACK: the client holds the complete frame of a->tick, having merged
 * the frames a lists. The first ack tells whether the client merges (its acks
 * carry lists). Acks of unknown frames are ignored; of a frame acknowledged
 * before, only the first counts. */
void steerd_netcode_ack(steerd_netcode *nc, uint32_t slot, const proto_snapshot_ack *a);

/* Once per snapshot, before the encodes: indexes the world's agents. The world
 * must not change until the last encode of this snapshot. */
void steerd_netcode_begin(steerd_netcode *nc, const steer_world *w);

/* The frame of tick (>= 1, above the slot's previous frame; else 0 parts) at
 * server time time_us for one client: chooses, encodes into out (scratch
 * inside nc) and remembers it. Returns STEERD_NETCODE_OK or an error. */
int steerd_netcode_encode(steerd_netcode *nc, uint32_t slot, const steer_world *w, uint64_t tick,
                          uint64_t time_us, steerd_netcode_out *out);

/* The threads batches run on (NULL or one thread: the calling thread only):
 * allocates a scratch and an output area per thread. Not during a batch; the
 * pool must outlive nc or be replaced first. ENOMEM leaves no batch possible
 * until a later call succeeds. */
int steerd_netcode_set_pool(steerd_netcode *nc, steer_pool *pool);

/* Instead of steerd_netcode_encode for each client: encodes the frames of
 * tick at time_us for slots[0..n) (ascending, each started), split over the
 * pool's threads by ranges of slots, after steerd_netcode_begin. The world
 * must not change until the last batch_result. EINVAL on bad slots. */
int steerd_netcode_encode_batch(steerd_netcode *nc, const steer_world *w, const uint32_t *slots, uint32_t n,
                                uint64_t tick, uint64_t time_us);
/* The frame of a slot of the last batch, once (as steerd_netcode_encode would
 * return it: valid until the next batch_result, encode or batch). Must be
 * called for the batch's slots in ascending order: a frame the batch left to
 * the calling thread is encoded here, and those take what clients share in
 * slot order. EINVAL for a slot not in the batch (or asked twice). */
int steerd_netcode_batch_result(steerd_netcode *nc, uint32_t slot, const steer_world *w, uint64_t time_us,
                                steerd_netcode_out *out);

/* The records of slot's newest frame as the client holds it if every frame in
 * flight arrives (for tests); NULL when none. */
const proto_record *steerd_netcode_last_frame(steerd_netcode *nc, uint32_t slot, uint32_t *count,
                                              uint64_t *tick);
/* The records of the frame of a->tick as a client holds it that rebuilt it
 * merging the frames a lists (for tests; does not count as an ack); NULL when
 * unknown or no longer known. */
const proto_record *steerd_netcode_held_frame(steerd_netcode *nc, uint32_t slot, const proto_snapshot_ack *a,
                                              uint32_t *count);

void steerd_netcode_get_stats(const steerd_netcode *nc, steerd_netcode_stats *out);

/* The memory model's sizes: the pool (records, the server-wide cap), a
 * client's quota and reserve (records), and the bytes of one record. */
void steerd_netcode_get_memory(const steerd_netcode *nc, uint64_t *pool_records, uint64_t *client_records,
                               uint64_t *reserve_records, size_t *record_bytes);

#endif /* STEERD_NETCODE_H */

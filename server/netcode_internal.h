/* netcode_internal.h: what the delta encoder's files share (netcode.c: the
 * clients, their record pools, views, acks and batches; netcode_encode.c: one
 * frame's choice, layout and encoding): the records, frames and scratch, and
 * the small helpers over them. */
#ifndef STEERD_NETCODE_INTERNAL_H
#define STEERD_NETCODE_INTERNAL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "netcode.h"
#include "wire_core.h"

#define NEW_STALENESS 1.0e6f /* agents new to the client go first, nearest first */
#define PART_PAYLOAD  (PROTO_SNAPSHOT_PART_BYTES - PROTO_DELTA_HEADER_MAX_BYTES)
#define ID_COST_GUESS 2u /* bytes of a typical id difference, for choosing before the layout */
#define NO_INDEX      UINT32_MAX
#define NO_SEQ        UINT32_MAX
#define NO_POS        UINT64_MAX
#define NO_CHUNK      UINT32_MAX
#define REC_TOMB      1u
/* The record pool is handed out in chunks of this many records (64 KB). */
#define CHUNK 1024u
/* A frame's entries, at most: an entry per agent in view and a removal per
 * agent of the baseline or in flight; beyond that the frame goes without a
 * baseline. In max_agents. */
#define FRAME_CAP_FACTOR 3u
/* Bytes a frame may always use, whatever the rate: a header and a few changes. */
#define MIN_FRAME_BUDGET 128u
/* In the priority, an angle error counts a tenth as much as a position error
 * of as many thresholds: under a full budget the bytes go where positions
 * drift. With the angle fields kept in encode (below), bench_netcode at 5 %
 * loss and 50 +- 10 ms: mean error -30 %, p99 -37 %. */
#define ANGLE_WEIGHT 0.1f

/* An entry of a frame: a record (an agent the client holds) or a tombstone (an
 * agent a frame in flight removed). Each is an "op" of the frame that wrote it
 * first (seq), copied into later frames while it is the agent's newest op. */
typedef struct nc_rec {
  proto_record r; /* time_us: the op's server time; all 0 in a tombstone but id */
  uint32_t seq;   /* client frame number of the op */
  uint16_t flags; /* REC_TOMB */
  uint16_t unused;
  uint64_t orig; /* pool position where frame seq wrote it */
  uint64_t prev; /* of an original: the original of the in-flight op it superseded, or NO_POS */
} nc_rec;

typedef struct nc_frame {
  uint64_t tick, time_us;
  uint64_t first; /* pool position of its first entry */
  uint32_t count; /* entries: records and tombstones */
  uint32_t seq;
  uint32_t base_seq; /* its baseline's seq, or NO_SEQ */
  uint32_t merged;   /* from the ack: bit i set when the client merged frame seq - 1 - i */
  uint8_t acked, resolved;
} nc_frame;

typedef struct nc_client {
  int active;
  int merges; /* its acks carry merge lists: it follows PROTOCOL.md 7.6's merge rule (assumed until the first
                 ack) */
  int format_known;
  proto_view view;
  vec2 centre; /* m: where the view is now (follow moves it) */
  nc_frame frames[STEERD_NETCODE_FRAMES];
  uint32_t seq; /* frames sent; frame s lives in frames[s % STEERD_NETCODE_FRAMES] */
  uint64_t last_tick;
  int has_ack;
  uint64_t acked_tick;
  uint32_t
      min_base_seq; /* older frames are no baseline (a frame without one could not carry the ops in flight) */
  double tokens;    /* bytes the rate allows now (rate_bytes; at most budget_bytes) */
  uint64_t rate_time_us; /* when tokens was last topped up */
  /* Its own ring of records: positions count up from 0; virtual chunk v of it
   * lives in the pool chunk chunk[v % chunks_per_client] while that chunk's
   * owner is this client and its chunk_v is v. */
  uint64_t head;         /* next position */
  uint32_t reserve_free; /* its reserve chunks not in use (its stack in nc->reserve_free) */
  uint32_t last_view;    /* agents in view in its last frame (a batch's ranges follow it) */
} nc_client;

/* An agent that needs sending. */
typedef struct nc_cand {
  float score;
  uint32_t base; /* baseline entry index, or NO_INDEX: the diff is absolute */
  uint32_t opt;  /* the entry the client holds if every frame in flight arrives, or NO_INDEX */
  int opt_prev;  /* opt is in the previous frame (an op in flight), else in the baseline */
  uint32_t size; /* estimated encoded bytes */
  proto_record now;
  proto_delta_entry e;
} nc_cand;

/* Agent slot -> entry index of one frame, valid when stamp == epoch. */
typedef struct nc_index {
  uint32_t *stamp, *idx;
  uint32_t *coll; /* == epoch: two entries share the slot (find scans) */
  uint32_t epoch;
  uint32_t after; /* what index_frame was given */
  int records_only;
} nc_index;

/* Scratch of one encode at a time: the serial encodes' own, and one per range
 * of clients of a batch (steerd_netcode_encode_batch), each used by one thread
 * at a time. All sized at create (or set_pool); nothing allocates after. */
typedef struct nc_scratch {
  nc_index base_ix, prev_ix; /* the baseline's records; the previous frame's ops in flight */
  uint32_t *view_stamp;      /* by slot: in view this encode */
  steer_id *view_id;
  uint32_t *sent_stamp; /* by slot: sent in this frame */
  uint32_t enc_epoch;
  uint32_t *in_view; /* dense indices */
  steer_id *qids;
  nc_cand *cands;
  uint64_t *order;           /* candidates by priority when sorted: order_key() */
  uint64_t *keys, *keys_tmp; /* sort_keys() scratch */
  proto_delta_entry *sel;    /* chosen changes, by id */
  steer_id *removed;
  nc_rec *recs; /* the new frame, or a frame being resolved */
  /* The agents' records at the snapshot's time, made once per snapshot (per scratch). */
  proto_record *now_rec; /* by dense index */
  uint32_t *now_stamp;   /* == now_epoch: now_rec is made */
  uint32_t now_epoch;
  uint64_t now_begin; /* nc->begins when now_epoch was set */
  uint64_t now_time_us;
  /* Encoded parts: a serial encode writes from the start each time; a range
   * of a batch appends its clients' frames one after another. */
  uint8_t *out;
  size_t out_cap, out_off;
  const uint8_t **part_ptr;
  size_t *part_len;
  uint32_t parts_cap, parts_off;
  uint32_t *part_nrem, *part_nsel; /* the frame being laid out: max_parts */
  /* A range of a batch: no operation on state shared between clients (the
   * pool's shared chunks, nc->stats); what it cannot do alone is deferred. */
  int batch;
  steerd_netcode_stats stats; /* a range's sums, added to nc->stats after the batch */
  uint32_t reserve_taken;     /* reserve chunks a range took */
} nc_scratch;

/* A batch client's result (steerd_netcode_batch_result). */
enum { NC_BATCH_NONE = 0, NC_BATCH_DONE, NC_BATCH_DEFER, NC_BATCH_ERROR };

struct steerd_netcode {
  steerd_netcode_config cfg;
  nc_client *clients;

  nc_rec *pool;
  uint64_t pool_cap;          /* records: chunk_count * CHUNK */
  uint32_t chunk_count;       /* pool chunks */
  uint32_t chunks_per_client; /* a client's ring: its quota */
  uint32_t reserve_chunks;    /* chunks each client slot may always have: its own, the first
                                 max_clients * reserve_chunks of the pool */
  uint32_t *chunk_tab;        /* max_clients x chunks_per_client: pool chunk or NO_CHUNK */
  uint32_t *chunk_owner;      /* by pool chunk: client slot, or NO_CHUNK when free */
  uint64_t *chunk_v;          /* by pool chunk: the owner's virtual chunk it holds */
  uint32_t *free_chunks;      /* stack of free shared pool chunks (beyond the reserves) */
  uint32_t free_count;
  uint32_t *reserve_free;      /* by slot, a stack of reserve_chunks: its free reserve chunks */
  uint64_t reserve_free_total; /* free reserve chunks of all slots */

  /* Per snapshot: slot -> dense index of the world's agents. */
  steer_world_view view;
  uint32_t *slot_dense, *slot_stamp;
  uint32_t snap_epoch;
  uint64_t begins; /* steerd_netcode_begin calls */

  nc_scratch *x0;  /* serial encodes */
  nc_scratch **xs; /* a batch's ranges: one per thread of the pool */
  uint32_t xs_count;
  steer_pool *tpool; /* the batch's threads (NULL: the calling thread) */
  /* The batch: per client slot. */
  uint8_t *bstate;          /* NC_BATCH_* */
  int *brc;                 /* its error */
  steerd_netcode_out *bout; /* a done frame: its parts in its range's scratch */
  uint64_t btick;
  uint32_t *bounds;   /* xs_count + 1 */
  proto_record *last; /* steerd_netcode_last_frame's copy */
  uint32_t recs_cap;
  uint32_t max_parts;

  steerd_netcode_stats stats;
};

/* Maps the chunks of positions [c->head, c->head + count) of c's ring: the
 * chunk its ring slot already holds (its own older records, given up), else
 * a free one, else (the pool is short) its own chunk with the oldest records
 * outside that range. Only c's records are ever overwritten. -1 when c has
 * nothing to give (the frame cannot be kept, so it is not sent). In a batch's
 * range only c's own reserve may be taken: NC_DEFER (nothing changed) when
 * that is not enough. */
#define NC_DEFER (-100)

/* ---- records, frames, indexes ---------------------------------------------------- */

static inline nc_rec rec_from_proto(const proto_record *r, uint32_t seq) {
  nc_rec n;
  memset(&n, 0, sizeof n);
  n.r = *r;
  n.seq = seq;
  n.prev = NO_POS;
  return n;
}

static inline nc_rec tombstone(steer_id id, uint32_t seq, uint64_t prev) {
  nc_rec n;
  memset(&n, 0, sizeof n);
  n.r.id = id;
  n.flags = REC_TOMB;
  n.seq = seq;
  n.prev = prev;
  return n;
}

static inline uint32_t slot_of(const steerd_netcode *nc, const nc_client *c) {
  return (uint32_t)(c - nc->clients);
}

static inline uint32_t *chunk_slot(const steerd_netcode *nc, const nc_client *c, uint64_t v) {
  return &nc->chunk_tab[(size_t)slot_of(nc, c) * nc->chunks_per_client + v % nc->chunks_per_client];
}

/* The record at position pos of c's ring (mapped: see pool_holds). */
static inline nc_rec *pool_at(const steerd_netcode *nc, const nc_client *c, uint64_t pos) {
  uint32_t k = *chunk_slot(nc, c, pos / CHUNK);
  return &nc->pool[(size_t)k * CHUNK + pos % CHUNK];
}

/* The entry at pos of c's ring is still there: written, and its chunk not
 * given up or reused since. Only c's own frames ever write into c's chunks. */
static inline int pool_holds(const steerd_netcode *nc, const nc_client *c, uint64_t pos) {
  if (pos >= c->head)
    return 0;
  uint32_t k = *chunk_slot(nc, c, pos / CHUNK);
  return k != NO_CHUNK && nc->chunk_owner[k] == slot_of(nc, c) && nc->chunk_v[k] == pos / CHUNK;
}

static inline int frame_intact(const steerd_netcode *nc, const nc_client *c, const nc_frame *f) {
  if (f->count == 0)
    return c->head - f->first <= (uint64_t)nc->chunks_per_client * CHUNK;
  for (uint64_t v = f->first / CHUNK; v <= (f->first + f->count - 1) / CHUNK; v++)
    if (!pool_holds(nc, c, v * CHUNK > f->first ? v * CHUNK : f->first))
      return 0;
  return 1;
}

/* Frame of tick among the client's last STEERD_NETCODE_FRAMES, or NULL. */
static inline nc_frame *find_frame(nc_client *c, uint64_t tick) {
  uint32_t n = c->seq < STEERD_NETCODE_FRAMES ? c->seq : STEERD_NETCODE_FRAMES;
  for (uint32_t i = 1; i <= n; i++) {
    nc_frame *f = &c->frames[(c->seq - i) % STEERD_NETCODE_FRAMES];
    if (f->tick == tick)
      return f;
    if (f->tick < tick)
      break; /* ticks only grow */
  }
  return NULL;
}

static inline nc_frame *frame_by_seq(nc_client *c, uint32_t seq) {
  if (seq == NO_SEQ || seq >= c->seq || c->seq - seq > STEERD_NETCODE_FRAMES)
    return NULL;
  return &c->frames[seq % STEERD_NETCODE_FRAMES];
}

static inline int was_merged(const nc_frame *f, uint32_t seq) {
  uint32_t i = f->seq - 1u - seq;
  return seq < f->seq && i < 32u && ((f->merged >> i) & 1u);
}

/* Indexes frame f's entries with seq > after (records only when records_only).
 * Two entries of one slot (an old generation's tombstone and a new agent):
 * the record wins. */
static inline int index_wants(const nc_index *ix, const nc_rec *r) {
  return (ix->after == NO_SEQ || r->seq > ix->after) && !(ix->records_only && (r->flags & REC_TOMB));
}

/* Indexes frame f's entries with seq > after (records only when records_only);
 * returns how many. */
static inline uint32_t index_frame(steerd_netcode *nc, const nc_client *c, nc_index *ix, const nc_frame *f,
                                   uint32_t after, int records_only) {
  if (++ix->epoch == 0) {
    memset(ix->stamp, 0, nc->cfg.max_agents * sizeof *ix->stamp);
    memset(ix->coll, 0, nc->cfg.max_agents * sizeof *ix->coll);
    ix->epoch = 1;
  }
  ix->after = after;
  ix->records_only = records_only;
  uint32_t n = 0;
  for (uint32_t i = 0; f && i < f->count; i++) {
    const nc_rec *r = pool_at(nc, c, f->first + i);
    uint32_t s = r->r.id & STEER_ID_INDEX_MASK;
    if (!index_wants(ix, r) || s >= nc->cfg.max_agents)
      continue;
    if (ix->stamp[s] == ix->epoch)
      ix->coll[s] = ix->epoch; /* an old generation's tombstone and a new agent */
    ix->stamp[s] = ix->epoch;
    ix->idx[s] = i;
    n++;
  }
  return n;
}

/* Index of id's entry in f, or NO_INDEX. */
static inline uint32_t index_find(const steerd_netcode *nc, const nc_client *c, const nc_index *ix,
                                  const nc_frame *f, steer_id id) {
  uint32_t s = id & STEER_ID_INDEX_MASK;
  if (!f || s >= nc->cfg.max_agents || ix->stamp[s] != ix->epoch)
    return NO_INDEX;
  if (pool_at(nc, c, f->first + ix->idx[s])->r.id == id)
    return ix->idx[s];
  for (uint32_t i = 0; ix->coll[s] == ix->epoch && i < f->count; i++) {
    const nc_rec *r = pool_at(nc, c, f->first + i);
    if (r->r.id == id && index_wants(ix, r))
      return i;
  }
  return NO_INDEX;
}

/* netcode.c */
int nc_chunks_map(steerd_netcode *nc, nc_scratch *x, nc_client *c, uint64_t count);
void nc_chunks_release_stale(steerd_netcode *nc, nc_client *c);
int nc_resolve(steerd_netcode *nc, nc_scratch *sx, nc_client *c, const nc_frame *f, nc_rec *out);

/* netcode_encode.c */
int nc_encode_frame(steerd_netcode *nc, nc_scratch *x, uint32_t slot, const steer_world *w, uint64_t tick,
                    uint64_t time_us, steerd_netcode_out *out, int keyframe, steerd_netcode_stats *st);
int nc_in_view(const steerd_netcode *nc, const nc_scratch *x, steer_id id);
uint32_t nc_layout(const steerd_netcode *nc, nc_scratch *x, uint32_t nrem, uint32_t nsel, size_t *payload);

#endif /* STEERD_NETCODE_INTERNAL_H */

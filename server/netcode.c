/* netcode.c: see netcode.h. Sections: records and frames, lifecycle, view,
 * acks, choosing, layout and encoding. */
#include "netcode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- records, frames, indexes ---------------------------------------------------- */

static nc_rec rec_from_proto(const proto_record *r, uint32_t seq) {
  nc_rec n;
  memset(&n, 0, sizeof n);
  n.r = *r;
  n.seq = seq;
  n.prev = NO_POS;
  return n;
}

static nc_rec tombstone(steer_id id, uint32_t seq, uint64_t prev) {
  nc_rec n;
  memset(&n, 0, sizeof n);
  n.r.id = id;
  n.flags = REC_TOMB;
  n.seq = seq;
  n.prev = prev;
  return n;
}

static uint32_t slot_of(const steerd_netcode *nc, const nc_client *c) { return (uint32_t)(c - nc->clients); }

static uint32_t *chunk_slot(const steerd_netcode *nc, const nc_client *c, uint64_t v) {
  return &nc->chunk_tab[(size_t)slot_of(nc, c) * nc->chunks_per_client + v % nc->chunks_per_client];
}

/* The record at position pos of c's ring (mapped: see pool_holds). */
static nc_rec *pool_at(const steerd_netcode *nc, const nc_client *c, uint64_t pos) {
  uint32_t k = *chunk_slot(nc, c, pos / CHUNK);
  return &nc->pool[(size_t)k * CHUNK + pos % CHUNK];
}

/* The entry at pos of c's ring is still there: written, and its chunk not
 * given up or reused since. Only c's own frames ever write into c's chunks. */
static int pool_holds(const steerd_netcode *nc, const nc_client *c, uint64_t pos) {
  if (pos >= c->head)
    return 0;
  uint32_t k = *chunk_slot(nc, c, pos / CHUNK);
  return k != NO_CHUNK && nc->chunk_owner[k] == slot_of(nc, c) && nc->chunk_v[k] == pos / CHUNK;
}

static int frame_intact(const steerd_netcode *nc, const nc_client *c, const nc_frame *f) {
  if (f->count == 0)
    return c->head - f->first <= (uint64_t)nc->chunks_per_client * CHUNK;
  for (uint64_t v = f->first / CHUNK; v <= (f->first + f->count - 1) / CHUNK; v++)
    if (!pool_holds(nc, c, v * CHUNK > f->first ? v * CHUNK : f->first))
      return 0;
  return 1;
}

/* Frame of tick among the client's last STEERD_NETCODE_FRAMES, or NULL. */
static nc_frame *find_frame(nc_client *c, uint64_t tick) {
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

static nc_frame *frame_by_seq(nc_client *c, uint32_t seq) {
  if (seq == NO_SEQ || seq >= c->seq || c->seq - seq > STEERD_NETCODE_FRAMES)
    return NULL;
  return &c->frames[seq % STEERD_NETCODE_FRAMES];
}

static int was_merged(const nc_frame *f, uint32_t seq) {
  uint32_t i = f->seq - 1u - seq;
  return seq < f->seq && i < 32u && ((f->merged >> i) & 1u);
}

/* Indexes frame f's entries with seq > after (records only when records_only).
 * Two entries of one slot (an old generation's tombstone and a new agent):
 * the record wins. */
static int index_wants(const nc_index *ix, const nc_rec *r) {
  return (ix->after == NO_SEQ || r->seq > ix->after) && !(ix->records_only && (r->flags & REC_TOMB));
}

/* Indexes frame f's entries with seq > after (records only when records_only);
 * returns how many. */
static uint32_t index_frame(steerd_netcode *nc, const nc_client *c, nc_index *ix, const nc_frame *f,
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
static uint32_t index_find(const steerd_netcode *nc, const nc_client *c, const nc_index *ix,
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

/* ---- lifecycle ------------------------------------------------------------------ */

steerd_netcode_config steerd_netcode_default_config(void) {
  steerd_netcode_config c;
  memset(&c, 0, sizeof c);
  c.max_clients = 64;
  c.max_agents = 10000;
  c.dr_position_m = 0.02f;
  c.dr_angle_rad = (float)(3.14159265358979323846 / 180.0);
  c.dr_refresh = 20;
  c.budget_bytes = PROTO_SNAPSHOT_PART_BYTES;
  c.rate_bytes = 15000; /* 120 kbit/s */
  return c;
}

const steerd_netcode_config *steerd_netcode_get_config(const steerd_netcode *nc) { return &nc->cfg; }

static void scratch_destroy(nc_scratch *x) {
  if (!x)
    return;
  free(x->now_rec);
  free(x->now_stamp);
  free(x->base_ix.stamp);
  free(x->base_ix.idx);
  free(x->base_ix.coll);
  free(x->prev_ix.coll);
  free(x->prev_ix.stamp);
  free(x->prev_ix.idx);
  free(x->view_stamp);
  free(x->view_id);
  free(x->sent_stamp);
  free(x->in_view);
  free(x->qids);
  free(x->cands);
  free(x->order);
  free(x->keys);
  free(x->keys_tmp);
  free(x->sel);
  free(x->removed);
  free(x->recs);
  free(x->out);
  free(x->part_ptr);
  free(x->part_len);
  free(x->part_nrem);
  free(x->part_nsel);
  free(x);
}

/* Scratch for one encode at a time; out_cap bytes and parts_cap parts of
 * output (at least a frame of max_parts). NULL when memory is short. */
static nc_scratch *scratch_create(const steerd_netcode *nc, size_t out_cap, uint32_t parts_cap) {
  nc_scratch *x = calloc(1, sizeof *x);
  if (!x)
    return NULL;
  size_t n = nc->cfg.max_agents;
  x->out_cap = out_cap;
  x->parts_cap = parts_cap;
  x->now_rec = calloc(n, sizeof *x->now_rec);
  x->now_stamp = calloc(n, sizeof *x->now_stamp);
  x->base_ix.stamp = calloc(n, sizeof(uint32_t));
  x->base_ix.idx = calloc(n, sizeof(uint32_t));
  x->prev_ix.stamp = calloc(n, sizeof(uint32_t));
  x->prev_ix.idx = calloc(n, sizeof(uint32_t));
  x->base_ix.coll = calloc(n, sizeof(uint32_t));
  x->prev_ix.coll = calloc(n, sizeof(uint32_t));
  x->view_stamp = calloc(n, sizeof *x->view_stamp);
  x->view_id = calloc(n, sizeof *x->view_id);
  x->sent_stamp = calloc(n, sizeof *x->sent_stamp);
  x->in_view = calloc(n, sizeof *x->in_view);
  x->qids = calloc(n, sizeof *x->qids);
  x->cands = calloc(n, sizeof *x->cands);
  x->order = calloc(n, sizeof *x->order);
  x->keys = calloc(nc->recs_cap, sizeof *x->keys);
  x->keys_tmp = calloc(nc->recs_cap, sizeof *x->keys_tmp);
  x->sel = calloc(n, sizeof *x->sel);
  x->removed = calloc(nc->recs_cap, sizeof *x->removed);
  x->recs = calloc(nc->recs_cap, sizeof *x->recs);
  x->out = malloc(x->out_cap);
  x->part_ptr = calloc(parts_cap, sizeof *x->part_ptr);
  x->part_len = calloc(parts_cap, sizeof *x->part_len);
  x->part_nrem = calloc(nc->max_parts, sizeof *x->part_nrem);
  x->part_nsel = calloc(nc->max_parts, sizeof *x->part_nsel);
  if (!x->now_rec || !x->now_stamp || !x->base_ix.stamp || !x->base_ix.idx || !x->prev_ix.stamp ||
      !x->prev_ix.idx || !x->base_ix.coll || !x->prev_ix.coll || !x->view_stamp || !x->view_id ||
      !x->sent_stamp || !x->in_view || !x->qids || !x->cands || !x->order || !x->keys || !x->keys_tmp ||
      !x->sel || !x->removed || !x->recs || !x->out || !x->part_ptr || !x->part_len || !x->part_nrem ||
      !x->part_nsel) {
    scratch_destroy(x);
    return NULL;
  }
  return x;
}

static void batch_scratch_free(steerd_netcode *nc) {
  for (uint32_t i = 0; i < nc->xs_count; i++)
    scratch_destroy(nc->xs[i]);
  free(nc->xs);
  free(nc->bounds);
  nc->xs = NULL;
  nc->bounds = NULL;
  nc->xs_count = 0;
}

void steerd_netcode_destroy(steerd_netcode *nc) {
  if (!nc)
    return;
  free(nc->clients);
  free(nc->pool);
  free(nc->chunk_tab);
  free(nc->chunk_owner);
  free(nc->chunk_v);
  free(nc->free_chunks);
  free(nc->reserve_free);
  free(nc->slot_dense);
  free(nc->slot_stamp);
  free(nc->last);
  free(nc->bstate);
  free(nc->brc);
  free(nc->bout);
  scratch_destroy(nc->x0);
  batch_scratch_free(nc);
  free(nc);
}

steerd_netcode *steerd_netcode_create(const steerd_netcode_config *cfg) {
  if (!cfg || cfg->max_clients == 0 || cfg->max_agents == 0 || cfg->max_agents > STEER_MAX_CAPACITY ||
      cfg->budget_bytes < STEERD_NETCODE_MIN_BUDGET || cfg->dr_refresh == 0 ||
      !(cfg->dr_position_m >= 0.0f) || !(cfg->dr_angle_rad >= 0.0f) || !isfinite(cfg->dr_position_m) ||
      !isfinite(cfg->dr_angle_rad))
    return NULL;
  steerd_netcode *nc = calloc(1, sizeof *nc);
  if (!nc)
    return NULL;
  nc->cfg = *cfg;
  size_t n = cfg->max_agents;
  /* A frame holds at most: a record or tombstone per agent in view, and a
   * removal per agent of the baseline or in flight (FRAME_CAP_FACTOR x
   * max_agents; beyond that the frame goes without a baseline). */
  nc->recs_cap = (uint32_t)(n * FRAME_CAP_FACTOR);
  /* The memory model (netcode.h): each client's quota, a ring of whole
   * chunks that holds at least two of its largest frames; a reserve per slot
   * (what a client viewing 512 agents uses); the pool, the server-wide cap. */
  uint64_t quota = cfg->client_records ? cfg->client_records : (uint64_t)n * 10u;
  uint64_t qc = (quota + CHUNK - 1) / CHUNK, qc_min = ((uint64_t)nc->recs_cap * 2u + CHUNK - 1) / CHUNK + 1u;
  if (qc < qc_min)
    qc = qc_min;
  uint64_t view_max = cfg->max_agents < 512u ? cfg->max_agents : 512u;
  uint64_t rc = (16u * view_max + CHUNK - 1) / CHUNK;
  if (rc > qc)
    rc = qc;
  uint64_t pc = cfg->pool_records ? ((uint64_t)cfg->pool_records + CHUNK - 1) / CHUNK
                                  : (uint64_t)cfg->max_clients * rc + ((cfg->max_clients + 3u) / 4u) * qc;
  if (!cfg->pool_records && pc > (1u << 30) / (CHUNK * sizeof(nc_rec)))
    pc = (1u << 30) / (CHUNK * sizeof(nc_rec)); /* by default at most 1 GiB, whatever the world */
  if (pc < qc)
    pc = qc; /* at least one client's whole quota */
  if (pc > UINT32_MAX / CHUNK)
    pc = UINT32_MAX / CHUNK;
  if ((uint64_t)cfg->max_clients * rc > pc)
    rc = pc / cfg->max_clients; /* a small pool: smaller reserves */
  nc->chunks_per_client = (uint32_t)qc;
  nc->reserve_chunks = (uint32_t)rc;
  nc->chunk_count = (uint32_t)pc;
  nc->pool_cap = pc * CHUNK;
  nc->cfg.pool_records = (uint32_t)nc->pool_cap;
  nc->cfg.client_records = (uint32_t)(qc * CHUNK);
  /* Removals and changes of one frame can never need more than this many parts. */
  nc->max_parts =
      (uint32_t)(((uint64_t)nc->recs_cap * (PROTO_DELTA_ENTRY_MAX_BYTES + 5u) + cfg->budget_bytes) /
                     PART_PAYLOAD +
                 2u);
  nc->clients = calloc(cfg->max_clients, sizeof *nc->clients);
  nc->pool = calloc(nc->pool_cap, sizeof *nc->pool); /* untouched pages cost no memory until used */
  nc->chunk_tab = malloc((size_t)cfg->max_clients * nc->chunks_per_client * sizeof *nc->chunk_tab);
  nc->chunk_owner = malloc((size_t)nc->chunk_count * sizeof *nc->chunk_owner);
  nc->chunk_v = calloc(nc->chunk_count, sizeof *nc->chunk_v);
  nc->free_chunks = malloc((size_t)nc->chunk_count * sizeof *nc->free_chunks);
  nc->reserve_free = malloc(((size_t)cfg->max_clients * rc + 1u) * sizeof *nc->reserve_free);
  if (nc->chunk_tab && nc->chunk_owner && nc->free_chunks && nc->reserve_free) {
    for (size_t i = 0; i < (size_t)cfg->max_clients * nc->chunks_per_client; i++)
      nc->chunk_tab[i] = NO_CHUNK;
    for (uint32_t i = 0; i < nc->chunk_count; i++)
      nc->chunk_owner[i] = NO_CHUNK;
    /* Slot s's reserve: chunks s * rc .. s * rc + rc - 1, the lowest on top of its stack. */
    for (uint32_t s = 0; s < cfg->max_clients; s++) {
      for (uint32_t j = 0; j < rc; j++)
        nc->reserve_free[(size_t)s * rc + j] = (uint32_t)((uint64_t)s * rc + rc - 1u - j);
      nc->clients[s].reserve_free = (uint32_t)rc;
    }
    nc->reserve_free_total = (uint64_t)cfg->max_clients * rc;
    /* The rest is shared, the lowest on top. */
    uint32_t first_shared = (uint32_t)((uint64_t)cfg->max_clients * rc);
    nc->free_count = nc->chunk_count - first_shared;
    for (uint32_t i = 0; i < nc->free_count; i++)
      nc->free_chunks[i] = nc->chunk_count - 1u - i;
  }
  nc->slot_dense = calloc(n, sizeof *nc->slot_dense);
  nc->slot_stamp = calloc(n, sizeof *nc->slot_stamp);
  nc->last = calloc(nc->recs_cap, sizeof *nc->last);
  nc->bstate = calloc(cfg->max_clients, sizeof *nc->bstate);
  nc->brc = calloc(cfg->max_clients, sizeof *nc->brc);
  nc->bout = calloc(cfg->max_clients, sizeof *nc->bout);
  nc->x0 = scratch_create(nc, (size_t)nc->max_parts * PROTO_SNAPSHOT_PART_BYTES, nc->max_parts);
  if (!nc->clients || !nc->pool || !nc->chunk_tab || !nc->chunk_owner || !nc->chunk_v || !nc->free_chunks ||
      !nc->reserve_free || !nc->slot_dense || !nc->slot_stamp || !nc->last || !nc->bstate || !nc->brc ||
      !nc->bout || !nc->x0 || steerd_netcode_set_pool(nc, NULL) != STEERD_NETCODE_OK) {
    steerd_netcode_destroy(nc);
    return NULL;
  }
  return nc;
}

int steerd_netcode_set_pool(steerd_netcode *nc, steer_pool *pool) {
  uint32_t t = steer_pool_threads(pool);
  batch_scratch_free(nc);
  nc->tpool = NULL;
  nc->xs = calloc(t, sizeof *nc->xs);
  nc->bounds = calloc(t + 1u, sizeof *nc->bounds);
  if (!nc->xs || !nc->bounds)
    return STEERD_NETCODE_ENOMEM;
  /* A range's output: its share of the clients' frames of a full budget
   * (twice: ranges follow the clients' views, not their count), at least one
   * frame as large as any can be; frames beyond it are encoded on the calling
   * thread (steerd_netcode_batch_result). */
  uint64_t per_client = (uint64_t)nc->cfg.budget_bytes + 2u * PROTO_SNAPSHOT_PART_BYTES;
  uint64_t clients = ((uint64_t)nc->cfg.max_clients * 2u + t - 1u) / t;
  if (clients > nc->cfg.max_clients)
    clients = nc->cfg.max_clients;
  uint64_t bytes = clients * per_client + (uint64_t)nc->max_parts * PROTO_SNAPSHOT_PART_BYTES;
  uint64_t parts = clients * (per_client / PROTO_SNAPSHOT_PART_BYTES + 1u) + nc->max_parts;
  if (parts > UINT32_MAX)
    parts = UINT32_MAX;
  for (uint32_t i = 0; i < t; i++) {
    nc->xs[i] = scratch_create(nc, (size_t)bytes, (uint32_t)parts);
    if (!nc->xs[i]) {
      nc->xs_count = i;
      batch_scratch_free(nc);
      return STEERD_NETCODE_ENOMEM;
    }
    nc->xs[i]->batch = 1;
  }
  nc->xs_count = t;
  nc->tpool = pool;
  return STEERD_NETCODE_OK;
}

/* ---- the pool's chunks -------------------------------------------------------------- */

static void chunk_stats(steerd_netcode *nc) {
  nc->stats.chunks_used = (uint32_t)(nc->chunk_count - nc->free_count - nc->reserve_free_total);
  if (nc->stats.chunks_used > nc->stats.chunks_max)
    nc->stats.chunks_max = nc->stats.chunks_used;
}

/* Not in a batch's ranges (the shared stack). */
static void chunk_give_back(steerd_netcode *nc, nc_client *c, uint32_t *entry) {
  uint32_t k = *entry;
  nc->chunk_owner[k] = NO_CHUNK;
  if ((uint64_t)k < (uint64_t)nc->cfg.max_clients * nc->reserve_chunks) {
    nc->reserve_free[(size_t)slot_of(nc, c) * nc->reserve_chunks + c->reserve_free++] = k; /* its own */
    nc->reserve_free_total++;
  } else {
    nc->free_chunks[nc->free_count++] = k;
  }
  *entry = NO_CHUNK;
}

/* A free chunk for c: one of its own reserve, else (not in a batch's range)
 * one of the shared rest of the pool. NO_CHUNK otherwise. */
static uint32_t chunk_take(steerd_netcode *nc, nc_scratch *x, nc_client *c) {
  uint32_t k;
  if (c->reserve_free > 0) {
    k = nc->reserve_free[(size_t)slot_of(nc, c) * nc->reserve_chunks + --c->reserve_free];
    if (x->batch)
      x->reserve_taken++; /* counted in after the batch */
    else
      nc->reserve_free_total--;
  } else if (!x->batch && nc->free_count > 0) {
    k = nc->free_chunks[--nc->free_count];
  } else {
    return NO_CHUNK;
  }
  nc->chunk_owner[k] = slot_of(nc, c);
  if (!x->batch)
    chunk_stats(nc);
  return k;
}

static void chunks_release_all(steerd_netcode *nc, nc_client *c) {
  uint32_t *tab = &nc->chunk_tab[(size_t)slot_of(nc, c) * nc->chunks_per_client];
  for (uint32_t i = 0; i < nc->chunks_per_client; i++)
    if (tab[i] != NO_CHUNK)
      chunk_give_back(nc, c, &tab[i]);
  chunk_stats(nc);
}

/* Gives back c's chunks that hold only records no frame can need any more:
 * older than the newest acknowledged frame (the baseline; older frames never
 * become one again), its own baseline (to resolve it), and the frames since
 * (in flight: one may be acknowledged next) and their baselines. */
static void chunks_release_stale(steerd_netcode *nc, nc_client *c) {
  const nc_frame *acked = c->has_ack ? find_frame(c, c->acked_tick) : NULL;
  uint64_t live = c->head;
  uint32_t n = c->seq < STEERD_NETCODE_FRAMES ? c->seq : STEERD_NETCODE_FRAMES;
  for (uint32_t i = 1; i <= n; i++) {
    const nc_frame *f = &c->frames[(c->seq - i) % STEERD_NETCODE_FRAMES];
    if (acked && f->seq < acked->seq)
      break;
    if (f->first < live)
      live = f->first;
    const nc_frame *bb = frame_by_seq(c, f->base_seq);
    if (bb && bb->first < live)
      live = bb->first;
  }
  uint32_t *tab = &nc->chunk_tab[(size_t)slot_of(nc, c) * nc->chunks_per_client];
  for (uint32_t i = 0; i < nc->chunks_per_client; i++)
    if (tab[i] != NO_CHUNK && nc->chunk_v[tab[i]] < live / CHUNK)
      chunk_give_back(nc, c, &tab[i]);
  chunk_stats(nc);
}

/* Maps the chunks of positions [c->head, c->head + count) of c's ring: the
 * chunk its ring slot already holds (its own older records, given up), else
 * a free one, else (the pool is short) its own chunk with the oldest records
 * outside that range. Only c's records are ever overwritten. -1 when c has
 * nothing to give (the frame cannot be kept, so it is not sent). In a batch's
 * range only c's own reserve may be taken: NC_DEFER (nothing changed) when
 * that is not enough. */
#define NC_DEFER (-100)
static int chunks_map(steerd_netcode *nc, nc_scratch *x, nc_client *c, uint64_t count) {
  if (count == 0)
    return 0;
  const uint32_t qc = nc->chunks_per_client;
  uint64_t v0 = c->head / CHUNK, v1 = (c->head + count - 1) / CHUNK;
  if (v1 - v0 + 1 > qc)
    return x->batch ? NC_DEFER : -1;
  uint32_t *tab = &nc->chunk_tab[(size_t)slot_of(nc, c) * qc];
  if (x->batch) {
    uint32_t need = 0;
    for (uint64_t v = v0; v <= v1; v++)
      need += tab[v % qc] == NO_CHUNK;
    if (need > c->reserve_free)
      return NC_DEFER;
  }
  for (uint64_t v = v0; v <= v1; v++) {
    uint32_t *e = &tab[v % qc];
    if (*e == NO_CHUNK && (*e = chunk_take(nc, x, c)) == NO_CHUNK) {
      uint32_t best = qc;
      for (uint32_t t = 0; t < qc; t++) {
        uint32_t off = (t + qc - (uint32_t)(v0 % qc)) % qc; /* t's place in the range, if < v1 - v0 + 1 */
        if (tab[t] != NO_CHUNK && off > v1 - v0 &&
            (best == qc || nc->chunk_v[tab[t]] < nc->chunk_v[tab[best]]))
          best = t;
      }
      if (best == qc)
        return -1;
      *e = tab[best];
      tab[best] = NO_CHUNK;
      nc->stats.chunks_reused++;
    }
    nc->chunk_v[*e] = v;
  }
  return 0;
}

int steerd_netcode_client_start(steerd_netcode *nc, uint32_t slot) {
  if (slot >= nc->cfg.max_clients)
    return STEERD_NETCODE_EINVAL;
  nc_client *c = &nc->clients[slot];
  chunks_release_all(nc, c);
  memset(c, 0, sizeof *c);
  c->reserve_free = nc->reserve_chunks; /* all given back */
  c->active = 1;
  c->merges = 1; /* until its first ack says otherwise */
  c->tokens = nc->cfg.budget_bytes;
  c->view.kind = PROTO_VIEW_ALL;
  return STEERD_NETCODE_OK;
}

void steerd_netcode_client_stop(steerd_netcode *nc, uint32_t slot) {
  if (slot < nc->cfg.max_clients) {
    chunks_release_all(nc, &nc->clients[slot]);
    memset(&nc->clients[slot], 0, sizeof nc->clients[slot]);
    nc->clients[slot].reserve_free = nc->reserve_chunks; /* all given back */
  }
}

int steerd_netcode_client_active(const steerd_netcode *nc, uint32_t slot) {
  return slot < nc->cfg.max_clients && nc->clients[slot].active;
}

/* ---- view and acks ------------------------------------------------------------ */

static int find_agent(const steer_world *w, steer_id id, vec2 *pos) {
  steer_agent_info info;
  if (steer_world_get(w, id, &info) != STEER_OK)
    return 0;
  *pos = info.state.position;
  return 1;
}

int steerd_netcode_set_view(steerd_netcode *nc, uint32_t slot, const proto_view *view, const steer_world *w) {
  if (slot >= nc->cfg.max_clients || !nc->clients[slot].active || view->kind >= PROTO_VIEW_KIND_COUNT ||
      (view->kind != PROTO_VIEW_ALL && !(view->radius > 0.0f)))
    return STEERD_NETCODE_EINVAL;
  nc_client *c = &nc->clients[slot];
  vec2 centre = view->centre;
  if (view->kind == PROTO_VIEW_FOLLOW && !find_agent(w, view->follow, &centre))
    return STEERD_NETCODE_ENOENT;
  c->view = *view;
  c->centre = centre;
  return STEERD_NETCODE_OK;
}

int steerd_netcode_sees(const steerd_netcode *nc, uint32_t slot, vec2 pos) {
  if (slot >= nc->cfg.max_clients || !nc->clients[slot].active)
    return 1;
  const nc_client *c = &nc->clients[slot];
  if (c->view.kind == PROTO_VIEW_ALL)
    return 1;
  float dx = pos.x - c->centre.x, dy = pos.y - c->centre.y;
  return dx * dx + dy * dy < c->view.radius * c->view.radius;
}

/* The ack's merge list as frame f's mask: frames in flight between its baseline and it. */
static uint32_t merged_mask(nc_client *c, const nc_frame *f, const proto_snapshot_ack *a) {
  uint32_t mask = 0;
  for (uint32_t i = 0; c->merges && a->has_merged && i < a->merged_count; i++) {
    const nc_frame *m = a->merged_step[i] < a->tick ? find_frame(c, a->tick - a->merged_step[i]) : NULL;
    if (m && f->base_seq != NO_SEQ && m->seq > f->base_seq && m->seq < f->seq && f->seq - 1u - m->seq < 32u)
      mask |= 1u << (f->seq - 1u - m->seq);
  }
  return mask;
}

void steerd_netcode_ack(steerd_netcode *nc, uint32_t slot, const proto_snapshot_ack *a) {
  if (slot >= nc->cfg.max_clients || !nc->clients[slot].active)
    return;
  nc_client *c = &nc->clients[slot];
  nc_frame *f = find_frame(c, a->tick);
  if (!f) {
    nc->stats.acks_unknown++;
    return;
  }
  nc->stats.acks++;
  if (!c->format_known) {
    /* The first ack tells. Until then every frame went without a baseline and
     * carried the ops before it, as a client that merges needs; for one that
     * does not, they are entries it does not hold, and no frame relies on them. */
    c->format_known = 1;
    c->merges = a->has_merged;
  }
  if (!f->acked) {
    f->acked = 1;
    f->merged = merged_mask(c, f, a);
  }
  if (!c->has_ack || a->tick > c->acked_tick) {
    c->has_ack = 1;
    c->acked_tick = a->tick;
  }
}

/* ---- resolving: what the client holds ------------------------------------------ */

/* The client's entries of frame f, given which frames in flight it merged
 * (f->merged), into out (f->count entries): an entry that is an op of a frame
 * the client did not merge falls back to the op it superseded, down to the
 * baseline's record (or nothing: a tombstone). -1 when that cannot be known any
 * more (the baseline or an op was overwritten). Uses base_ix. */
static int resolve(steerd_netcode *nc, nc_scratch *sx, nc_client *c, const nc_frame *f, nc_rec *out) {
  const nc_frame *bb = frame_by_seq(c, f->base_seq);
  if (f->base_seq != NO_SEQ && (!bb || !bb->resolved || !frame_intact(nc, c, bb)))
    return -1;
  if (!frame_intact(nc, c, f))
    return -1;
  if (bb)
    index_frame(nc, c, &sx->base_ix, bb, NO_SEQ, 1);
  for (uint32_t i = 0; i < f->count; i++) {
    const nc_rec *x = pool_at(nc, c, f->first + i);
    if (!bb) {
      /* Without a baseline the client holds this frame's own records only;
       * the entries carried for later frames are not held. */
      out[i] = x->seq == f->seq ? *x : tombstone(x->r.id, f->seq, NO_POS);
      continue;
    }
    if (x->seq == f->seq || x->seq <= bb->seq) {
      out[i] = *x;
      continue;
    }
    steer_id id = x->r.id;
    while (x && x->seq > bb->seq && x->seq < f->seq && !was_merged(f, x->seq)) {
      /* An op written before the end of the baseline is no newer than the
       * baseline (frames are written in seq order), so the baseline's own
       * record stands for it: it need not be read, and its chunk may have
       * been given back already (chunks_release_stale keeps nothing older
       * than a baseline). */
      if (x->prev == NO_POS || x->prev < bb->first + bb->count) {
        x = NULL;
        break;
      }
      if (!pool_holds(nc, c, x->prev))
        return -1;
      x = pool_at(nc, c, x->prev);
    }
    if (x && x->seq > bb->seq) {
      out[i] = *x;
      continue;
    }
    uint32_t k = index_find(nc, c, &sx->base_ix, bb, id);
    out[i] = k != NO_INDEX ? *pool_at(nc, c, bb->first + k) : tombstone(id, bb->seq, NO_POS);
  }
  return 0;
}

/* ---- choosing --------------------------------------------------------------------- */

void steerd_netcode_begin(steerd_netcode *nc, const steer_world *w) {
  nc->view = steer_world_get_view(w);
  nc->begins++; /* a new world state: records made again */
  if (++nc->snap_epoch == 0) {
    memset(nc->slot_stamp, 0, nc->cfg.max_agents * sizeof *nc->slot_stamp);
    nc->snap_epoch = 1;
  }
  for (uint32_t k = 0; k < nc->view.count; k++) {
    uint32_t s = nc->view.id[k] & STEER_ID_INDEX_MASK;
    if (s < nc->cfg.max_agents) {
      nc->slot_dense[s] = k;
      nc->slot_stamp[s] = nc->snap_epoch;
    }
  }
}

/* Agent k's record at time_us; made once per snapshot for every client of
 * one scratch. */
static proto_record record_now(const steerd_netcode *nc, nc_scratch *x, uint32_t k, uint64_t time_us) {
  if (x->now_begin != nc->begins || x->now_epoch == 0 || time_us != x->now_time_us) {
    if (++x->now_epoch == 0) {
      memset(x->now_stamp, 0, nc->cfg.max_agents * sizeof *x->now_stamp);
      x->now_epoch = 1;
    }
    x->now_time_us = time_us;
    x->now_begin = nc->begins;
  }
  if (x->now_stamp[k] != x->now_epoch) {
    const steer_world_view *v = &nc->view;
    x->now_rec[k] = proto_record_from_state(v->id[k], v->px[k], v->py[k], v->theta[k], v->vx[k], v->vy[k],
                                            v->omega[k], time_us);
    x->now_stamp[k] = x->now_epoch;
  }
  return x->now_rec[k];
}

static uint32_t dense_of(const steerd_netcode *nc, steer_id id) {
  uint32_t s = id & STEER_ID_INDEX_MASK;
  if (s >= nc->cfg.max_agents || nc->slot_stamp[s] != nc->snap_epoch)
    return NO_INDEX;
  uint32_t k = nc->slot_dense[s];
  return k < nc->view.count && nc->view.id[k] == id ? k : NO_INDEX;
}

/* Agents in view as dense indices; *all set when it is the whole world (then
 * in_view is not filled). */
static uint32_t gather_view(const steerd_netcode *nc, nc_scratch *x, nc_client *c, const steer_world *w,
                            int *all) {
  *all = c->view.kind == PROTO_VIEW_ALL;
  if (*all)
    return nc->view.count;
  if (c->view.kind == PROTO_VIEW_FOLLOW) {
    uint32_t k = dense_of(nc, c->view.follow);
    if (k != NO_INDEX)
      c->centre = v2(nc->view.px[k], nc->view.py[k]);
  }
  uint32_t m = steer_world_query_within(w, c->centre, c->view.radius, x->qids, nc->cfg.max_agents);
  uint32_t n = 0;
  for (uint32_t i = 0; i < m; i++) {
    uint32_t k = dense_of(nc, x->qids[i]);
    if (k != NO_INDEX)
      x->in_view[n++] = k;
  }
  return n;
}

/* Sorting without allocating (qsort may), on 64-bit keys: insertion for a
 * few, else least significant digit first, a byte at a time, skipping the
 * bytes every key shares. tmp holds n keys. */
static void sort_keys(uint64_t *a, uint32_t n, uint64_t *tmp) {
  if (n <= 48) {
    for (uint32_t i = 1; i < n; i++) {
      uint64_t x = a[i];
      uint32_t j = i;
      for (; j > 0 && a[j - 1] > x; j--)
        a[j] = a[j - 1];
      a[j] = x;
    }
    return;
  }
  uint64_t *src = a, *dst = tmp;
  for (uint32_t shift = 0; shift < 64; shift += 8) {
    uint32_t count[256] = {0};
    for (uint32_t i = 0; i < n; i++)
      count[(src[i] >> shift) & 0xffu]++;
    if (count[(src[0] >> shift) & 0xffu] == n)
      continue; /* every key has this byte */
    uint32_t sum = 0;
    for (uint32_t d = 0; d < 256; d++) {
      uint32_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (uint32_t i = 0; i < n; i++)
      dst[count[(src[i] >> shift) & 0xffu]++] = src[i];
    uint64_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != a)
    memcpy(a, src, n * sizeof *a);
}

/* Highest score first (scores are >= 0, so their bits order as they do);
 * equal scores by candidate index, so the order is deterministic. */
static uint64_t order_key(float score, uint32_t cand) {
  uint32_t bits;
  memcpy(&bits, &score, sizeof bits);
  return (uint64_t)(~bits) << 32 | cand;
}

static uint32_t key_low(uint64_t key) { return (uint32_t)key; }

/* Sorts ids ascending. */
static void sort_ids(nc_scratch *x, steer_id *ids, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    x->keys[i] = ids[i];
  sort_keys(x->keys, n, x->keys_tmp);
  for (uint32_t i = 0; i < n; i++)
    ids[i] = (steer_id)x->keys[i];
}

/* ---- layout and encoding ------------------------------------------------------------ */

/* Splits removals then changes over parts of at most PROTO_SNAPSHOT_PART_BYTES
 * (worst-case header); returns the part count. Every part holds at least one
 * item, except the single part of an empty frame. */
static uint32_t layout(const steerd_netcode *nc, nc_scratch *x, uint32_t nrem, uint32_t nsel,
                       size_t *payload) {
  uint32_t parts = 0, r = 0, e = 0;
  *payload = 0;
  do {
    size_t used = 0;
    uint32_t r0 = r, e0 = e;
    steer_id prev = 0;
    while (r < nrem) {
      size_t sz = proto_delta_removed_size(x->removed[r], prev);
      if (used + sz > PART_PAYLOAD && r > r0)
        break;
      used += sz;
      prev = x->removed[r++];
    }
    prev = 0;
    while (e < nsel && r == nrem) {
      size_t sz = proto_delta_entry_size(&x->sel[e], prev);
      if (used + sz > PART_PAYLOAD && (e > e0 || r > r0))
        break;
      used += sz;
      prev = x->sel[e++].id;
    }
    x->part_nrem[parts] = r - r0;
    x->part_nsel[parts] = e - e0;
    *payload += used;
    parts++;
  } while ((r < nrem || e < nsel) && parts < nc->max_parts);
  return parts;
}

/* Encodes the parts after what x holds already (a batch's earlier frames);
 * NC_DEFER when they may not fit (only a batch's range is ever short). */
static int encode_parts(nc_scratch *x, const proto_delta_header *h0, uint32_t parts, steerd_netcode_out *out,
                        size_t *total) {
  size_t off = x->out_off;
  uint32_t r = 0, e = 0;
  *total = 0;
  if (parts > x->parts_cap - x->parts_off ||
      (size_t)parts * PROTO_SNAPSHOT_PART_BYTES > x->out_cap - x->out_off)
    return NC_DEFER;
  const uint8_t **part_ptr = x->part_ptr + x->parts_off;
  size_t *part_len = x->part_len + x->parts_off;
  for (uint32_t p = 0; p < parts; p++) {
    proto_delta_header h = *h0;
    h.part_index = p;
    h.part_count = parts;
    size_t len = proto_encode_delta(x->out + off, PROTO_SNAPSHOT_PART_BYTES, &h, x->sel + e, x->part_nsel[p],
                                    x->removed + r, x->part_nrem[p]);
    if (len == 0)
      return STEERD_NETCODE_EINVAL; /* cannot happen: the layout used worst-case sizes */
    part_ptr[p] = x->out + off;
    part_len[p] = len;
    off += len;
    r += x->part_nrem[p];
    e += x->part_nsel[p];
  }
  *total = off - x->out_off;
  out->part_count = parts;
  out->part = part_ptr;
  out->part_len = part_len;
  return STEERD_NETCODE_OK;
}

static int in_view(const steerd_netcode *nc, const nc_scratch *x, steer_id id) {
  uint32_t s = id & STEER_ID_INDEX_MASK;
  return s < nc->cfg.max_agents && x->view_stamp[s] == x->enc_epoch && x->view_id[s] == id;
}

/* In view and sent in this frame. */
static int sent_now(const steerd_netcode *nc, const nc_scratch *x, steer_id id) {
  return in_view(nc, x, id) && x->sent_stamp[id & STEER_ID_INDEX_MASK] == x->enc_epoch;
}

/* A frame in flight (prev, indexed in prev_ix) removes id. */
static int removal_in_flight(const steerd_netcode *nc, const nc_scratch *x, const nc_client *c,
                             const nc_frame *prev, steer_id id) {
  uint32_t pi = index_find(nc, c, &x->prev_ix, prev, id);
  return pi != NO_INDEX && (pool_at(nc, c, prev->first + pi)->flags & REC_TOMB);
}

/* The newest acknowledged frame's seq (no baseline is older), or NO_SEQ. */
static uint32_t acked_seq(nc_client *c) {
  const nc_frame *acked = c->has_ack ? find_frame(c, c->acked_tick) : NULL;
  return acked ? acked->seq : NO_SEQ;
}

/* The baseline for slot's next frame, resolved; NULL: none usable. */
static nc_frame *choose_baseline(steerd_netcode *nc, nc_scratch *x, nc_client *c, steerd_netcode_stats *st) {
  nc_frame *base = c->has_ack ? find_frame(c, c->acked_tick) : NULL;
  if (!base || !frame_intact(nc, c, base) || base->seq < c->min_base_seq)
    return NULL;
  if (!base->resolved) {
    if (base->count > nc->recs_cap || resolve(nc, x, c, base, x->recs) != 0) {
      st->baselines_lost++;
      return NULL;
    }
    for (uint32_t i = 0; i < base->count; i++)
      *pool_at(nc, c, base->first + i) = x->recs[i];
    base->resolved = 1;
  }
  return base;
}

/* One frame's encoding in progress: what encode_frame's stages share. */
typedef struct nc_enc {
  steerd_netcode *nc;
  nc_scratch *x;
  nc_client *c;
  const steer_world_view *v;
  uint64_t tick, time_us;
  int all;        /* the client views the whole world: in_view is not used */
  uint32_t nview; /* agents in view */
  nc_frame *base; /* the baseline, or NULL (the frame is absolute) */
  nc_frame *prev; /* the previous frame, whose ops are in flight, or NULL */
  uint32_t bseq;  /* base's seq, or NO_SEQ */
  uint32_t nrec, ncand, max_age, kept_in_flight, nrem, nsel, nabs, parts;
  size_t cand_bytes, rem_bytes, total;
  int sorted; /* x->order is sorted by priority */
} nc_enc;

/* Baseline: the newest acknowledged frame, as the client holds it. Ops in
 * flight: for a client that merges, the previous frame's entries newer than
 * the baseline (each agent's newest op since the baseline). */
static void enc_baseline(nc_enc *e, int keyframe, steerd_netcode_stats *st) {
  steerd_netcode *nc = e->nc;
  nc_scratch *x = e->x;
  nc_client *c = e->c;
  nc_frame *base = keyframe ? NULL : choose_baseline(nc, x, c, st);
  nc_frame *prev = c->merges && !keyframe ? frame_by_seq(c, c->seq - 1u) : NULL;
  if (prev == base || (prev && !frame_intact(nc, c, prev)))
    prev = NULL;
  if (keyframe)
    c->min_base_seq = c->seq; /* no frame before it carries what it did not */
  /* Ops in flight, each agent's newest: the previous frame's entries newer
   * than the baseline. A frame without a baseline carries them too (those
   * newer than the newest acknowledged frame: later baselines are no older),
   * as a client that merges it into a later frame holds them. The new frame
   * holds at most an entry per agent in view, per baseline record and per op
   * in flight. */
  uint32_t nbase = base ? index_frame(nc, c, &x->base_ix, base, NO_SEQ, 1) : 0;
  uint32_t nflight = prev ? index_frame(nc, c, &x->prev_ix, prev, base ? base->seq : acked_seq(c), 0) : 0;
  uint64_t bound = (uint64_t)e->nview + nbase + nflight;
  if (base && (bound > nc->recs_cap ||
               c->head + bound - base->first / CHUNK * CHUNK > (uint64_t)nc->chunks_per_client * CHUNK)) {
    base = NULL; /* the new frame could overwrite the baseline, or not fit: start afresh */
    nflight = prev ? index_frame(nc, c, &x->prev_ix, prev, acked_seq(c), 0) : 0;
  }
  if (!base && prev && (uint64_t)e->nview + nflight > nc->recs_cap) {
    prev = NULL; /* cannot carry them: no frame before this one is a baseline any more */
    c->min_base_seq = c->seq;
  }
  e->base = base;
  e->prev = prev;
  e->bseq = base ? base->seq : NO_SEQ;
  if (++x->enc_epoch == 0) {
    memset(x->view_stamp, 0, nc->cfg.max_agents * sizeof *x->view_stamp);
    memset(x->sent_stamp, 0, nc->cfg.max_agents * sizeof *x->sent_stamp);
    x->enc_epoch = 1;
  }
}

/* Every agent in view: kept as the client holds it, or a candidate. */
static void enc_candidates(nc_enc *e) {
  steerd_netcode *nc = e->nc;
  nc_scratch *x = e->x;
  nc_client *c = e->c;
  const steer_world_view *v = e->v;
  const nc_frame *base = e->base, *prev = e->prev;
  const float th_pos = nc->cfg.dr_position_m > 1e-6f ? nc->cfg.dr_position_m : 1e-6f;
  const float th_ang = nc->cfg.dr_angle_rad > 1e-7f ? nc->cfg.dr_angle_rad : 1e-7f;
  const float refresh = (float)nc->cfg.dr_refresh;
  for (uint32_t i = 0; i < e->nview; i++) {
    uint32_t k = e->all ? i : x->in_view[i];
    steer_id id = v->id[k];
    uint32_t s = id & STEER_ID_INDEX_MASK;
    x->view_stamp[s] = x->enc_epoch;
    x->view_id[s] = id;
    proto_record now = record_now(nc, x, k, e->time_us);
    float importance = 1.0f;
    if (!e->all) {
      float dx = v->px[k] - c->centre.x, dy = v->py[k] - c->centre.y;
      float d = sqrtf(dx * dx + dy * dy) / c->view.radius;
      importance = 1.0f - 0.5f * (d < 1.0f ? d : 1.0f);
    }
    uint32_t bi = index_find(nc, c, &x->base_ix, base, id);
    uint32_t pi = index_find(nc, c, &x->prev_ix, prev, id);
    const nc_rec *b = bi != NO_INDEX ? pool_at(nc, c, base->first + bi) : NULL;
    /* What the client holds (without a baseline: nothing, whatever is in flight). */
    const nc_rec *o = pi != NO_INDEX && base ? pool_at(nc, c, prev->first + pi) : b;
    nc_cand *cd = &x->cands[e->ncand];
    cd->base = bi;
    cd->opt = pi != NO_INDEX ? pi : bi;
    cd->opt_prev = pi != NO_INDEX;
    const proto_record *br = b ? &b->r : NULL;
    proto_record pb; /* b predicted to the frame's time */
    int have_pb = 0;
    if (o && !(o->flags & REC_TOMB)) {
      proto_record p = proto_record_predict(&o->r, e->time_us);
      if (o == b) {
        pb = p;
        have_pb = 1;
      }
      float ex = proto_dequantize_cm(p.x) - v->px[k], ey = proto_dequantize_cm(p.y) - v->py[k];
      float err_pos = sqrtf(ex * ex + ey * ey);
      float err_ang = fabsf(steer_wrap_angle(proto_dequantize_angle(p.theta) - v->theta[k]));
      uint32_t age = c->seq - o->seq;
      if (err_pos <= nc->cfg.dr_position_m && err_ang <= nc->cfg.dr_angle_rad && age < nc->cfg.dr_refresh) {
        x->recs[e->nrec++] = *o;
        e->kept_in_flight += o != b;
        if (age > e->max_age)
          e->max_age = age;
        continue;
      }
      cd->score = importance * ((float)age / refresh + err_pos / th_pos + ANGLE_WEIGHT * err_ang / th_ang);
    } else {
      cd->score = importance * NEW_STALENESS;
    }
    if (b) {
      /* A change goes for its position; its angle fields keep the baseline's
       * prediction when that is well within the threshold (no bytes): theta
       * within half of it, omega off by less than half of it per 100 ms. */
      if (!have_pb)
        pb = proto_record_predict(br, e->time_us);
      if (fabsf(steer_wrap_angle(proto_dequantize_angle(pb.theta) - v->theta[k])) <= 0.5f * th_ang)
        now.theta = pb.theta;
      if (fabsf(proto_dequantize_omega(now.omega) - proto_dequantize_omega(br->omega)) * 0.1f <=
          0.5f * th_ang)
        now.omega = br->omega;
    }
    cd->e = proto_delta_diff(br, &now, e->time_us);
    cd->now = now;
    cd->size = (uint32_t)(proto_delta_entry_size(&cd->e, id) - 1u + ID_COST_GUESS); /* id - id costs 1 */
    e->cand_bytes += cd->size;
    x->order[e->ncand] = order_key(cd->score, e->ncand);
    e->ncand++;
  }
}

/* Removals: agents the client may hold (the baseline's, or added in flight)
 * that are no longer in view or in the world, unless a frame in flight
 * already removes them (that tombstone is carried into the new frame; if its
 * frame is lost, the baseline resolved from the next ack still holds the
 * agent, and the removal goes again). */
static void enc_removals(nc_enc *e) {
  steerd_netcode *nc = e->nc;
  nc_scratch *x = e->x;
  nc_client *c = e->c;
  const nc_frame *base = e->base, *prev = e->prev;
  for (uint32_t i = 0; base && i < base->count; i++) {
    const nc_rec *r = pool_at(nc, c, base->first + i);
    if (!(r->flags & REC_TOMB) && !in_view(nc, x, r->r.id) && !removal_in_flight(nc, x, c, prev, r->r.id))
      x->removed[e->nrem++] = r->r.id;
  }
  for (uint32_t i = 0; base && prev && i < prev->count; i++) {
    const nc_rec *r = pool_at(nc, c, prev->first + i);
    if (r->seq > e->bseq && !(r->flags & REC_TOMB) && !in_view(nc, x, r->r.id) &&
        index_find(nc, c, &x->base_ix, base, r->r.id) == NO_INDEX)
      x->removed[e->nrem++] = r->r.id;
  }
  sort_ids(x, x->removed, e->nrem);
  for (uint32_t i = 0; i < e->nrem; i++)
    e->rem_bytes += proto_delta_removed_size(x->removed[i], i ? x->removed[i - 1] : 0);
}

/* This frame's budget: budget_bytes, or what the rate allows (a token bucket
 * holding at most budget_bytes, so a quiet spell allows one full frame, not a
 * burst). */
static size_t enc_budget(const steerd_netcode *nc, nc_client *c, uint64_t time_us) {
  size_t budget = nc->cfg.budget_bytes;
  if (nc->cfg.rate_bytes) {
    if (c->rate_time_us != 0 && time_us > c->rate_time_us)
      c->tokens += (double)nc->cfg.rate_bytes * (double)(time_us - c->rate_time_us) / 1e6;
    c->rate_time_us = time_us;
    if (c->tokens > (double)nc->cfg.budget_bytes)
      c->tokens = (double)nc->cfg.budget_bytes;
    budget = c->tokens < (double)MIN_FRAME_BUDGET ? MIN_FRAME_BUDGET : (size_t)c->tokens;
  }
  return budget;
}

/* Chooses the changes by priority within the budget (removals always go),
 * then lays them out by their real sizes and encodes the parts into out,
 * dropping the least urgent until within the budget and its part count (or
 * the parts the removals alone need). */
static int enc_choose(nc_enc *e, size_t budget, const proto_delta_header *h, steerd_netcode_out *out) {
  steerd_netcode *nc = e->nc;
  nc_scratch *x = e->x;
  uint32_t budget_parts = (uint32_t)((budget + PROTO_SNAPSHOT_PART_BYTES - 1) / PROTO_SNAPSHOT_PART_BYTES);
  size_t payload_budget = budget - (size_t)budget_parts * PROTO_DELTA_HEADER_MAX_BYTES;
  size_t room = payload_budget > e->rem_bytes ? payload_budget - e->rem_bytes : 0;
  if (e->cand_bytes <= room) {
    e->nsel = e->ncand;
  } else {
    sort_keys(x->order, e->ncand, x->keys_tmp);
    e->sorted = 1;
    size_t used = 0;
    for (uint32_t i = 0; i < e->ncand; i++) {
      uint32_t j = key_low(x->order[i]);
      if (used + x->cands[j].size > room)
        break;
      used += x->cands[j].size;
      e->nsel++;
    }
  }
  size_t rem_payload;
  uint32_t max_parts = layout(nc, x, e->nrem, 0, &rem_payload);
  if (max_parts < budget_parts)
    max_parts = budget_parts;
  for (;;) {
    for (uint32_t i = 0; i < e->nsel; i++) { /* by id */
      uint32_t j = key_low(x->order[i]);
      x->keys[i] = (uint64_t)x->cands[j].e.id << 32 | j;
    }
    sort_keys(x->keys, e->nsel, x->keys_tmp);
    for (uint32_t i = 0; i < e->nsel; i++)
      x->sel[i] = x->cands[key_low(x->keys[i])].e;
    size_t payload;
    e->parts = layout(nc, x, e->nrem, e->nsel, &payload);
    int rc = encode_parts(x, h, e->parts, out, &e->total);
    if (rc != STEERD_NETCODE_OK)
      return rc;
    if ((e->total <= budget && e->parts <= max_parts) || e->nsel == 0)
      return STEERD_NETCODE_OK;
    if (!e->sorted) {
      sort_keys(x->order, e->ncand, x->keys_tmp);
      e->sorted = 1;
    }
    /* Over the bytes: drop about the excess; over only the part count (total
     * within the budget): drop at least one, or this loop would never end. */
    size_t avg = payload / (e->nrem + e->nsel) + 1;
    size_t excess = e->total > budget ? e->total - budget : 0;
    size_t drop = excess / avg + 1;
    e->nsel = drop >= e->nsel ? 0 : e->nsel - (uint32_t)drop;
  }
}

/* The new frame's records: kept entries, the chosen changes and the removals
 * (new ops of this frame, each superseding the op in flight it replaces), and
 * what the client holds of the candidates that wait; then copied into the
 * client's pool. 0, NC_DEFER or STEERD_NETCODE_ENOMEM. */
static int enc_records(nc_enc *e) {
  steerd_netcode *nc = e->nc;
  nc_scratch *x = e->x;
  nc_client *c = e->c;
  const nc_frame *base = e->base, *prev = e->prev;
  for (uint32_t i = 0; i < e->ncand; i++) {
    const nc_cand *cd = &x->cands[key_low(x->order[i])];
    const nc_rec *o = cd->opt == NO_INDEX ? NULL
                      : cd->opt_prev      ? pool_at(nc, c, prev->first + cd->opt)
                      : base              ? pool_at(nc, c, base->first + cd->opt)
                                          : NULL;
    if (i < e->nsel) {
      nc_rec r = rec_from_proto(&cd->now, c->seq);
      x->sent_stamp[cd->now.id & STEER_ID_INDEX_MASK] = x->enc_epoch;
      r.prev = cd->opt_prev ? pool_at(nc, c, prev->first + cd->opt)->orig : NO_POS;
      x->recs[e->nrec++] = r;
      e->nabs += cd->base == NO_INDEX;
    } else if (o && base) {
      x->recs[e->nrec++] = *o;
      if (!(o->flags & REC_TOMB) && c->seq - o->seq > e->max_age)
        e->max_age = c->seq - o->seq;
    }
  }
  if (!base) /* carried: every op in flight this frame did not replace */
    for (uint32_t i = 0; prev && i < prev->count; i++) {
      const nc_rec *r = pool_at(nc, c, prev->first + i);
      if (index_wants(&x->prev_ix, r) && !sent_now(nc, x, r->r.id))
        x->recs[e->nrec++] = *r;
    }
  for (uint32_t i = 0; base && prev && i < prev->count; i++) { /* removals in flight */
    const nc_rec *r = pool_at(nc, c, prev->first + i);
    if (r->seq > e->bseq && (r->flags & REC_TOMB) && !in_view(nc, x, r->r.id))
      x->recs[e->nrec++] = *r;
  }
  for (uint32_t i = 0; i < e->nrem; i++) {
    uint32_t pi = index_find(nc, c, &x->prev_ix, prev, x->removed[i]);
    x->recs[e->nrec++] =
        tombstone(x->removed[i], c->seq, pi != NO_INDEX ? pool_at(nc, c, prev->first + pi)->orig : NO_POS);
  }
  int mrc = chunks_map(nc, x, c, e->nrec);
  if (mrc != 0)
    return mrc == NC_DEFER ? NC_DEFER : STEERD_NETCODE_ENOMEM;
  for (uint32_t i = 0; i < e->nrec; i++) {
    nc_rec *r = pool_at(nc, c, c->head + i);
    *r = x->recs[i];
    if (r->seq == c->seq)
      r->orig = c->head + i;
  }
  return 0;
}

/* The frame sent: the rate's debt, the frame's record in the client's ring,
 * what out reports and the statistics. */
static void enc_commit(const nc_enc *e, uint64_t baseline_tick, steerd_netcode_out *out,
                       steerd_netcode_stats *st) {
  const steerd_netcode *nc = e->nc;
  nc_client *c = e->c;
  if (nc->cfg.rate_bytes) {
    c->tokens -= (double)e->total; /* removals beyond the budget are a debt */
    if (c->tokens < -(double)nc->cfg.budget_bytes)
      c->tokens = -(double)nc->cfg.budget_bytes;
  }
  nc_frame *f = &c->frames[c->seq % STEERD_NETCODE_FRAMES];
  memset(f, 0, sizeof *f);
  f->tick = e->tick;
  f->time_us = e->time_us;
  f->first = c->head;
  f->count = e->nrec;
  f->seq = c->seq;
  f->base_seq = e->bseq;
  f->resolved = e->prev == NULL; /* nothing in flight: the client holds exactly this */
  c->head += e->nrec;
  c->seq++;
  c->last_tick = e->tick;
  c->last_view = e->nview;

  out->baseline_tick = baseline_tick;
  out->in_view = e->nview;
  out->changes = e->nsel;
  out->removed = e->nrem;
  out->deferred = e->ncand - e->nsel;
  st->frames++;
  st->frames_full += e->base == NULL;
  st->parts += e->parts;
  st->bytes += e->total;
  st->changes += e->nsel;
  st->absolute += e->nabs;
  st->removed += e->nrem;
  st->candidates += e->ncand;
  st->deferred += e->ncand - e->nsel;
  st->in_view += e->nview;
  st->kept_in_flight += e->kept_in_flight;
  if (e->max_age > st->max_age)
    st->max_age = e->max_age;
}

/* One frame; keyframe: against nothing and carrying no ops in flight (the
 * smallest frame to keep: only what it sends). */
static int encode_frame(steerd_netcode *nc, nc_scratch *x, uint32_t slot, const steer_world *w, uint64_t tick,
                        uint64_t time_us, steerd_netcode_out *out, int keyframe, steerd_netcode_stats *st) {
  memset(out, 0, sizeof *out);
  if (slot >= nc->cfg.max_clients || !nc->clients[slot].active ||
      steer_world_capacity(w) > nc->cfg.max_agents)
    return STEERD_NETCODE_EINVAL;
  nc_client *c = &nc->clients[slot];
  if (tick == 0 || tick <= c->last_tick)
    return STEERD_NETCODE_OK; /* nothing new: no frame */
  if (!x->batch)
    chunks_release_stale(nc, c); /* a batch did it before its ranges */
  nc_enc e = {.nc = nc, .x = x, .c = c, .v = &nc->view, .tick = tick, .time_us = time_us};
  e.nview = gather_view(nc, x, c, w, &e.all);
  enc_baseline(&e, keyframe, st);
  enc_candidates(&e);
  enc_removals(&e);
  size_t budget = enc_budget(nc, c, time_us);
  proto_delta_header h = {tick, time_us, e.base ? e.base->tick : 0, 0, 1};
  int rc = enc_choose(&e, budget, &h, out);
  if (rc != STEERD_NETCODE_OK)
    return rc;
  rc = enc_records(&e);
  if (rc != 0) {
    memset(out, 0, sizeof *out); /* not sent: the client would rely on a frame the server cannot remember */
    return rc;
  }
  enc_commit(&e, h.baseline_tick, out, st);
  return STEERD_NETCODE_OK;
}

int steerd_netcode_encode(steerd_netcode *nc, uint32_t slot, const steer_world *w, uint64_t tick,
                          uint64_t time_us, steerd_netcode_out *out) {
  nc_scratch *x = nc->x0;
  int rc = encode_frame(nc, x, slot, w, tick, time_us, out, 0, &nc->stats);
  if (rc != STEERD_NETCODE_ENOMEM)
    return rc;
  /* The pool cannot keep the frame (the client is beyond its reserve and the
   * pool is short): a keyframe, which holds only what it sends, fits what the
   * client has. It learns the world again from there, as far as it can. */
  nc->stats.keyframes_for_room++;
  rc = encode_frame(nc, x, slot, w, tick, time_us, out, 1, &nc->stats);
  if (rc == STEERD_NETCODE_ENOMEM)
    nc->stats.frames_unkept++;
  return rc;
}

/* ---- a batch: the clients' frames on the pool's threads ------------------------------ */

typedef struct nc_batch {
  steerd_netcode *nc;
  const steer_world *w;
  const uint32_t *slots;
  const uint32_t *bounds; /* range r: slots[bounds[r] .. bounds[r + 1]) */
  uint64_t tick, time_us;
} nc_batch;

static void stats_add(steerd_netcode_stats *a, const steerd_netcode_stats *b) {
  a->frames += b->frames;
  a->frames_full += b->frames_full;
  a->parts += b->parts;
  a->bytes += b->bytes;
  a->changes += b->changes;
  a->absolute += b->absolute;
  a->removed += b->removed;
  a->candidates += b->candidates;
  a->deferred += b->deferred;
  a->in_view += b->in_view;
  a->kept_in_flight += b->kept_in_flight;
  a->baselines_lost += b->baselines_lost;
  if (b->max_age > a->max_age)
    a->max_age = b->max_age;
}

/* Ranges [begin, end) of a batch, each on its own scratch: every client's
 * frame into that scratch's output, one after another. A frame that needs
 * what is shared between clients (a chunk beyond the client's reserve, the
 * pool being short) or more output room is left for the calling thread
 * (NC_BATCH_DEFER) with nothing of it kept: every step before that point
 * either changes nothing or does what doing it again does. */
static void batch_range(void *ctx, uint32_t begin, uint32_t end) {
  const nc_batch *b = ctx;
  steerd_netcode *nc = b->nc;
  for (uint32_t r = begin; r < end; r++) {
    nc_scratch *x = nc->xs[r];
    for (uint32_t i = b->bounds[r]; i < b->bounds[r + 1]; i++) {
      uint32_t slot = b->slots[i];
      steerd_netcode_stats st;
      memset(&st, 0, sizeof st);
      steerd_netcode_out *out = &nc->bout[slot];
      int rc = encode_frame(nc, x, slot, b->w, b->tick, b->time_us, out, 0, &st);
      if (rc == STEERD_NETCODE_OK) {
        nc->bstate[slot] = NC_BATCH_DONE;
        for (uint32_t p = 0; p < out->part_count; p++)
          x->out_off += out->part_len[p];
        x->parts_off += out->part_count;
        stats_add(&x->stats, &st);
      } else if (rc == NC_DEFER || rc == STEERD_NETCODE_ENOMEM) {
        nc->bstate[slot] = NC_BATCH_DEFER;
      } else {
        nc->bstate[slot] = NC_BATCH_ERROR;
        nc->brc[slot] = rc;
      }
    }
  }
}

int steerd_netcode_encode_batch(steerd_netcode *nc, const steer_world *w, const uint32_t *slots, uint32_t n,
                                uint64_t tick, uint64_t time_us) {
  const uint32_t R = nc->xs_count;
  for (uint32_t i = 0; i < nc->cfg.max_clients; i++)
    nc->bstate[i] = NC_BATCH_NONE;
  nc->btick = tick;
  if (steer_world_capacity(w) > nc->cfg.max_agents)
    return STEERD_NETCODE_EINVAL;
  for (uint32_t i = 0; i < n; i++)
    if (slots[i] >= nc->cfg.max_clients || !nc->clients[slots[i]].active ||
        (i > 0 && slots[i] <= slots[i - 1]))
      return STEERD_NETCODE_EINVAL;
  if (n == 0)
    return STEERD_NETCODE_OK;
  /* On the calling thread, in slot order, what is shared between clients:
   * the chunks no frame needs any more go back (to the slot's reserve or the
   * shared rest); the neighbour grid is made current (the views' queries then
   * only read it). */
  for (uint32_t i = 0; i < n; i++)
    chunks_release_stale(nc, &nc->clients[slots[i]]);
  chunk_stats(nc);
  steer_world_query_within(w, v2(0.0f, 0.0f), 0.0f, nc->x0->qids, 0);
  /* Ranges of about equal work: a client costs about the agents in its view
   * (its last frame's); which range encodes a client changes nothing in it. */
  uint64_t total = 0;
  for (uint32_t i = 0; i < n; i++)
    total += 16u + nc->clients[slots[i]].last_view;
  uint32_t *bounds = nc->bounds;
  uint64_t acc = 0;
  uint32_t r = 1;
  bounds[0] = 0;
  for (uint32_t i = 0; i < n && r < R; i++) {
    acc += 16u + nc->clients[slots[i]].last_view;
    while (r < R && acc * R >= total * r)
      bounds[r++] = i + 1;
  }
  while (r <= R)
    bounds[r++] = n;
  for (uint32_t k = 0; k < R; k++) {
    nc_scratch *x = nc->xs[k];
    x->out_off = 0;
    x->parts_off = 0;
    x->reserve_taken = 0;
    memset(&x->stats, 0, sizeof x->stats);
  }
  nc_batch b = {nc, w, slots, bounds, tick, time_us};
  steer_pool_run(nc->tpool, R, 1, batch_range, &b);
  for (uint32_t k = 0; k < R; k++) { /* the ranges' sums */
    stats_add(&nc->stats, &nc->xs[k]->stats);
    nc->reserve_free_total -= nc->xs[k]->reserve_taken;
  }
  chunk_stats(nc);
  return STEERD_NETCODE_OK;
}

int steerd_netcode_batch_result(steerd_netcode *nc, uint32_t slot, const steer_world *w, uint64_t time_us,
                                steerd_netcode_out *out) {
  memset(out, 0, sizeof *out);
  if (slot >= nc->cfg.max_clients)
    return STEERD_NETCODE_EINVAL;
  uint8_t state = nc->bstate[slot];
  nc->bstate[slot] = NC_BATCH_NONE; /* once */
  switch (state) {
  case NC_BATCH_DONE:
    *out = nc->bout[slot];
    return STEERD_NETCODE_OK;
  case NC_BATCH_DEFER:
    nc->stats.batch_deferred++;
    return steerd_netcode_encode(nc, slot, w, nc->btick, time_us, out);
  case NC_BATCH_ERROR:
    return nc->brc[slot];
  default:
    return STEERD_NETCODE_EINVAL;
  }
}

/* Records (not tombstones) of entries e[0..n) as proto records into nc->last. */
static const proto_record *records_out(steerd_netcode *nc, const nc_rec *e, uint32_t n, uint32_t *count) {
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!(e[i].flags & REC_TOMB))
      nc->last[m++] = e[i].r;
  *count = m;
  return nc->last;
}

const proto_record *steerd_netcode_last_frame(steerd_netcode *nc, uint32_t slot, uint32_t *count,
                                              uint64_t *tick) {
  if (slot >= nc->cfg.max_clients || !nc->clients[slot].active || nc->clients[slot].seq == 0)
    return NULL;
  nc_client *c = &nc->clients[slot];
  nc_scratch *x = nc->x0;
  const nc_frame *f = &c->frames[(c->seq - 1) % STEERD_NETCODE_FRAMES];
  if (!frame_intact(nc, c, f))
    return NULL;
  uint32_t n = 0;
  for (uint32_t i = 0; i < f->count; i++) {
    const nc_rec *r = pool_at(nc, c, f->first + i);
    if (f->base_seq != NO_SEQ || r->seq == f->seq) /* a frame without a baseline: its own records */
      x->recs[n++] = *r;
  }
  *tick = f->tick;
  return records_out(nc, x->recs, n, count);
}

const proto_record *steerd_netcode_held_frame(steerd_netcode *nc, uint32_t slot, const proto_snapshot_ack *a,
                                              uint32_t *count) {
  if (slot >= nc->cfg.max_clients || !nc->clients[slot].active)
    return NULL;
  nc_client *c = &nc->clients[slot];
  nc_frame *f = find_frame(c, a->tick);
  if (!f)
    return NULL;
  nc_scratch *x = nc->x0;
  nc_frame tmp = *f;
  tmp.merged = merged_mask(c, f, a);
  if (tmp.count > nc->recs_cap || !frame_intact(nc, c, f))
    return NULL;
  if (f->resolved) { /* already as the client holds it */
    for (uint32_t i = 0; i < f->count; i++)
      x->recs[i] = *pool_at(nc, c, f->first + i);
  } else if (resolve(nc, x, c, &tmp, x->recs) != 0) {
    return NULL;
  }
  return records_out(nc, x->recs, tmp.count, count);
}

void steerd_netcode_get_stats(const steerd_netcode *nc, steerd_netcode_stats *out) { *out = nc->stats; }

void steerd_netcode_get_memory(const steerd_netcode *nc, uint64_t *pool_records, uint64_t *client_records,
                               uint64_t *reserve_records, size_t *record_bytes) {
  *pool_records = nc->pool_cap;
  *client_records = (uint64_t)nc->chunks_per_client * CHUNK;
  *reserve_records = (uint64_t)nc->reserve_chunks * CHUNK;
  *record_bytes = sizeof(nc_rec);
}

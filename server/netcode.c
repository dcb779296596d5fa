/* netcode.c: see netcode.h. Sections: lifecycle, the pool's chunks, view and
 * acks, resolving, batches; one frame's encoding is netcode_encode.c. */
#include "netcode_internal.h"

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
void nc_chunks_release_stale(steerd_netcode *nc, nc_client *c) {
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

int nc_chunks_map(steerd_netcode *nc, nc_scratch *x, nc_client *c, uint64_t count) {
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
  vec2 centre = wire_to_vec2(view->centre);
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
int nc_resolve(steerd_netcode *nc, nc_scratch *sx, nc_client *c, const nc_frame *f, nc_rec *out) {
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
      int rc = nc_encode_frame(nc, x, slot, b->w, b->tick, b->time_us, out, 0, &st);
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
    nc_chunks_release_stale(nc, &nc->clients[slots[i]]);
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
  } else if (nc_resolve(nc, x, c, &tmp, x->recs) != 0) {
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

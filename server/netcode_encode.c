/* netcode_encode.c: one delta frame for one client (netcode.h): which agents
 * in view change, by priority within the client's budget, against which
 * baseline, laid out into snapshot parts and encoded. */
#include "netcode_internal.h"

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
uint32_t nc_layout(const steerd_netcode *nc, nc_scratch *x, uint32_t nrem, uint32_t nsel, size_t *payload) {
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

int nc_in_view(const steerd_netcode *nc, const nc_scratch *x, steer_id id) {
  uint32_t s = id & STEER_ID_INDEX_MASK;
  return s < nc->cfg.max_agents && x->view_stamp[s] == x->enc_epoch && x->view_id[s] == id;
}

/* In view and sent in this frame. */
static int sent_now(const steerd_netcode *nc, const nc_scratch *x, steer_id id) {
  return nc_in_view(nc, x, id) && x->sent_stamp[id & STEER_ID_INDEX_MASK] == x->enc_epoch;
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
    if (base->count > nc->recs_cap || nc_resolve(nc, x, c, base, x->recs) != 0) {
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
    if (!(r->flags & REC_TOMB) && !nc_in_view(nc, x, r->r.id) && !removal_in_flight(nc, x, c, prev, r->r.id))
      x->removed[e->nrem++] = r->r.id;
  }
  for (uint32_t i = 0; base && prev && i < prev->count; i++) {
    const nc_rec *r = pool_at(nc, c, prev->first + i);
    if (r->seq > e->bseq && !(r->flags & REC_TOMB) && !nc_in_view(nc, x, r->r.id) &&
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
  uint32_t max_parts = nc_layout(nc, x, e->nrem, 0, &rem_payload);
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
    e->parts = nc_layout(nc, x, e->nrem, e->nsel, &payload);
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
    if (r->seq > e->bseq && (r->flags & REC_TOMB) && !nc_in_view(nc, x, r->r.id))
      x->recs[e->nrec++] = *r;
  }
  for (uint32_t i = 0; i < e->nrem; i++) {
    uint32_t pi = index_find(nc, c, &x->prev_ix, prev, x->removed[i]);
    x->recs[e->nrec++] =
        tombstone(x->removed[i], c->seq, pi != NO_INDEX ? pool_at(nc, c, prev->first + pi)->orig : NO_POS);
  }
  int mrc = nc_chunks_map(nc, x, c, e->nrec);
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
int nc_encode_frame(steerd_netcode *nc, nc_scratch *x, uint32_t slot, const steer_world *w, uint64_t tick,
                    uint64_t time_us, steerd_netcode_out *out, int keyframe, steerd_netcode_stats *st) {
  memset(out, 0, sizeof *out);
  if (slot >= nc->cfg.max_clients || !nc->clients[slot].active ||
      steer_world_capacity(w) > nc->cfg.max_agents)
    return STEERD_NETCODE_EINVAL;
  nc_client *c = &nc->clients[slot];
  if (tick == 0 || tick <= c->last_tick)
    return STEERD_NETCODE_OK; /* nothing new: no frame */
  if (!x->batch)
    nc_chunks_release_stale(nc, c); /* a batch did it before its ranges */
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
  int rc = nc_encode_frame(nc, x, slot, w, tick, time_us, out, 0, &nc->stats);
  if (rc != STEERD_NETCODE_ENOMEM)
    return rc;
  /* The pool cannot keep the frame (the client is beyond its reserve and the
   * pool is short): a keyframe, which holds only what it sends, fits what the
   * client has. It learns the world again from there, as far as it can. */
  nc->stats.keyframes_for_room++;
  rc = nc_encode_frame(nc, x, slot, w, tick, time_us, out, 1, &nc->stats);
  if (rc == STEERD_NETCODE_ENOMEM)
    nc->stats.frames_unkept++;
  return rc;
}

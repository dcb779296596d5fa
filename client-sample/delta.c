/* delta.c: see delta.h. */
#include "delta.h"

#include <stdlib.h>
#include <string.h>

/* DELTA parts never exceed PROTO_SNAPSHOT_PART_BYTES, and every element takes
 * at least one byte. */
#define PART_CAP PROTO_SNAPSHOT_PART_BYTES

typedef struct delta_frame {
  uint64_t tick, time_us, baseline_tick;
  uint32_t count;
  proto_record *rec; /* cap, sorted by id; time_us == the frame's: a change of this frame */
  uint32_t nremoved;
  proto_id *removed; /* cap, sorted: this frame's removals */
} delta_frame;

struct steerd_delta {
  steerd_delta_config cfg;
  /* Records a frame may hold, changes and removals one tick may carry: twice
   * max_agents, as the agents of frames in flight that the server is about to
   * remove are held meanwhile. */
  uint32_t cap;
  delta_frame *buf; /* frames + 1 buffers: the ring plus the one being built */
  uint32_t *ring;   /* buffer index of the i-th newest frame, i < held */
  uint32_t held;
  uint32_t spare; /* buffer the next frame is built in */

  /* The tick being gathered. */
  int active;
  proto_delta_header cur;
  uint32_t parts_seen;
  uint8_t *part_seen; /* bitmap, max_parts bits */
  uint32_t max_parts;
  proto_delta_entry *changes; /* cap */
  uint32_t nchanges;
  proto_id *removed; /* cap */
  uint32_t nremoved;
  int overflow;
  int has_done;
  uint64_t done_tick; /* newest tick finished or abandoned */

  proto_record *work[2];  /* cap each: the baseline with merged frames applied */
  proto_record *applied;  /* cap: the frame's changes applied */
  proto_snapshot_ack ack; /* for the newest frame */

  proto_delta_entry *part_changes; /* PART_CAP */
  proto_id *part_removed;          /* PART_CAP */
  steerd_delta_stats stats;
};

static const char *const error_texts[STEERD_DELTA_ERROR_COUNT] = {
    "success",
    "invalid argument",
    "out of memory",
    "not a valid DELTA packet",
    "late or duplicate part",
    "baseline frame not held",
    "frame does not apply to its baseline",
    "more agents than max_agents",
};

const char *steerd_delta_strerror(int code) {
  if (code > 0 || code <= -STEERD_DELTA_ERROR_COUNT)
    return "unknown error";
  return error_texts[-code];
}

steerd_delta_config steerd_delta_default_config(void) {
  steerd_delta_config c = {10000, STEERD_DELTA_DEFAULT_FRAMES, 1};
  return c;
}

void steerd_delta_destroy(steerd_delta *d) {
  if (!d)
    return;
  if (d->buf)
    for (uint32_t i = 0; i <= d->cfg.frames; i++) {
      free(d->buf[i].rec);
      free(d->buf[i].removed);
    }
  free(d->work[0]);
  free(d->work[1]);
  free(d->applied);
  free(d->buf);
  free(d->ring);
  free(d->part_seen);
  free(d->changes);
  free(d->removed);
  free(d->part_changes);
  free(d->part_removed);
  free(d);
}

steerd_delta *steerd_delta_create(const steerd_delta_config *cfg) {
  if (!cfg || cfg->max_agents == 0 || cfg->max_agents > PROTO_MAX_AGENTS || cfg->frames == 0 ||
      cfg->frames > 1024 || (cfg->merge && cfg->frames > PROTO_ACK_MAX_MERGED + 1u))
    return NULL;
  steerd_delta *d = calloc(1, sizeof *d);
  if (!d)
    return NULL;
  d->cfg = *cfg;
  d->cap = cfg->max_agents * 2u;
  d->max_parts = d->cap * 2u + 1u; /* every part holds a change or a removal, or is the only one */
  d->buf = calloc((size_t)cfg->frames + 1u, sizeof *d->buf);
  d->ring = calloc(cfg->frames, sizeof *d->ring);
  d->part_seen = calloc((d->max_parts + 7u) / 8u, 1);
  d->changes = calloc(d->cap, sizeof *d->changes);
  d->removed = calloc(d->cap, sizeof *d->removed);
  d->part_changes = calloc(PART_CAP, sizeof *d->part_changes);
  d->part_removed = calloc(PART_CAP, sizeof *d->part_removed);
  d->work[0] = calloc(d->cap, sizeof *d->work[0]);
  d->work[1] = calloc(d->cap, sizeof *d->work[1]);
  d->applied = calloc(d->cap, sizeof *d->applied);
  if (!d->buf || !d->ring || !d->part_seen || !d->changes || !d->removed || !d->part_changes ||
      !d->part_removed || !d->work[0] || !d->work[1] || !d->applied) {
    steerd_delta_destroy(d);
    return NULL;
  }
  for (uint32_t i = 0; i <= cfg->frames; i++)
    if (!(d->buf[i].rec = calloc(d->cap, sizeof *d->buf[i].rec)) ||
        !(d->buf[i].removed = calloc(d->cap, sizeof *d->buf[i].removed))) {
      steerd_delta_destroy(d);
      return NULL;
    }
  steerd_delta_reset(d);
  return d;
}

void steerd_delta_reset(steerd_delta *d) {
  d->held = 0;
  d->spare = d->cfg.frames;
  d->active = 0;
  d->has_done = 0;
  d->done_tick = 0;
}

static const delta_frame *find_frame(const steerd_delta *d, uint64_t tick) {
  for (uint32_t i = 0; i < d->held; i++)
    if (d->buf[d->ring[i]].tick == tick)
      return &d->buf[d->ring[i]];
  return NULL;
}

static void finish_tick(steerd_delta *d) {
  d->active = 0;
  d->has_done = 1;
  d->done_tick = d->cur.tick;
}

static int cmp_change(const void *a, const void *b) {
  proto_id x = ((const proto_delta_entry *)a)->id, y = ((const proto_delta_entry *)b)->id;
  return x < y ? -1 : x > y;
}

static int cmp_id(const void *a, const void *b) {
  proto_id x = *(const proto_id *)a, y = *(const proto_id *)b;
  return x < y ? -1 : x > y;
}

/* Sorted by id with no id twice: 1, else 0 (parts of one tick may come in any
 * id order relative to each other; the server sends them ascending). */
static int sort_changes(proto_delta_entry *e, uint32_t n) {
  for (uint32_t i = 1; i < n; i++)
    if (e[i].id <= e[i - 1].id) {
      qsort(e, n, sizeof *e, cmp_change);
      break;
    }
  for (uint32_t i = 1; i < n; i++)
    if (e[i].id == e[i - 1].id)
      return 0;
  return 1;
}

static int sort_removed(proto_id *r, uint32_t n) {
  for (uint32_t i = 1; i < n; i++)
    if (r[i] <= r[i - 1]) {
      qsort(r, n, sizeof *r, cmp_id);
      break;
    }
  for (uint32_t i = 1; i < n; i++)
    if (r[i] == r[i - 1])
      return 0;
  return 1;
}

/* dst = src without the ids of rem (sorted), with the records of up (sorted)
 * put in. up is taken only where keep(up) holds; all when frame_time is 0.
 * Returns the count, or UINT32_MAX past cap. */
static uint32_t apply_ops(const proto_record *src, uint32_t ns, const proto_id *rem, uint32_t nr,
                          const proto_record *up, uint32_t nu, uint64_t frame_time, proto_record *dst,
                          uint32_t cap) {
  uint32_t i = 0, j = 0, k = 0, n = 0;
  for (;;) {
    while (k < nu && frame_time != 0 && up[k].time_us != frame_time)
      k++;
    if (i >= ns && k >= nu)
      return n;
    if (n >= cap)
      return UINT32_MAX;
    if (k < nu && (i >= ns || up[k].id <= src[i].id)) {
      if (i < ns && up[k].id == src[i].id)
        i++;
      dst[n++] = up[k++];
      continue;
    }
    while (j < nr && rem[j] < src[i].id)
      j++;
    if (!(j < nr && rem[j] == src[i].id))
      dst[n++] = src[i];
    i++;
  }
}

static const proto_record *find_record(const proto_record *rec, uint32_t n, proto_id id) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (rec[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && rec[lo].id == id ? &rec[lo] : NULL;
}

static int is_removed(const proto_id *rem, uint32_t n, proto_id id) {
  return bsearch(&id, rem, n, sizeof *rem, cmp_id) != NULL;
}

/* The baseline, then (when merging) the changes and removals of every frame
 * rebuilt since it, oldest first, then this frame's removals and changes
 * (changes relative to the baseline's records): PROTOCOL.md 7.6. Into the
 * spare buffer. */
static int rebuild(steerd_delta *d) {
  const delta_frame *base = NULL;
  if (d->cur.baseline_tick != 0 && !(base = find_frame(d, d->cur.baseline_tick)))
    return STEERD_DELTA_ENOBASE;
  if (d->overflow)
    return STEERD_DELTA_EOVERFLOW;
  if (!sort_changes(d->changes, d->nchanges) || !sort_removed(d->removed, d->nremoved))
    return STEERD_DELTA_EBADFRAME;
  const uint64_t t = d->cur.server_time_us;
  const uint32_t cap = d->cap;
  proto_snapshot_ack ack; /* d->ack once the frame is rebuilt */
  memset(&ack, 0, sizeof ack);
  ack.tick = d->cur.tick;
  ack.has_merged = (uint8_t)(d->cfg.merge != 0);

  /* The baseline with the frames in flight merged. */
  const proto_record *cur = base ? base->rec : NULL;
  uint32_t ncur = base ? base->count : 0, w = 0;
  for (uint32_t i = d->held; base && d->cfg.merge && i-- > 0;) {
    const delta_frame *m = &d->buf[d->ring[i]];
    if (m->tick <= base->tick)
      continue;
    ncur = apply_ops(cur, ncur, m->removed, m->nremoved, m->rec, m->count, m->time_us, d->work[w], cap);
    if (ncur == UINT32_MAX)
      return STEERD_DELTA_EOVERFLOW;
    cur = d->work[w];
    w ^= 1u;
    ack.merged_step[ack.merged_count++] = d->cur.tick - m->tick;
  }
  /* merged_step was filled oldest first: steps must increase. */
  for (uint32_t a = 0, b = ack.merged_count; b > a + 1; a++, b--) {
    uint64_t x = ack.merged_step[a];
    ack.merged_step[a] = ack.merged_step[b - 1];
    ack.merged_step[b - 1] = x;
  }

  /* This frame's changes, each on the baseline's record (none if this frame removes it). */
  for (uint32_t m = 0; m < d->nchanges; m++) {
    const proto_delta_entry *e = &d->changes[m];
    const proto_record *from = base ? find_record(base->rec, base->count, e->id) : NULL;
    if (from && is_removed(d->removed, d->nremoved, e->id))
      from = NULL;
    if (proto_delta_apply(from, e, t, &d->applied[m]) != 0)
      return STEERD_DELTA_EBADFRAME;
  }
  delta_frame *f = &d->buf[d->spare];
  uint32_t n = apply_ops(cur, ncur, d->removed, d->nremoved, d->applied, d->nchanges, 0, f->rec, cap);
  if (n == UINT32_MAX)
    return STEERD_DELTA_EOVERFLOW;
  d->ack = ack;
  f->tick = d->cur.tick;
  f->time_us = t;
  f->baseline_tick = d->cur.baseline_tick;
  f->count = n;
  f->nremoved = d->nremoved;
  memcpy(f->removed, d->removed, d->nremoved * sizeof *f->removed);
  /* Into the ring as the newest; the oldest (if the ring is full) becomes spare. */
  uint32_t freed = d->held == d->cfg.frames ? d->ring[d->held - 1] : d->cfg.frames + 1u;
  if (d->held < d->cfg.frames)
    d->held++;
  memmove(d->ring + 1, d->ring, (d->held - 1) * sizeof *d->ring);
  d->ring[0] = d->spare;
  if (freed <= d->cfg.frames) {
    d->spare = freed;
  } else {
    /* Not full yet: the next unused buffer. */
    uint8_t used[1025] = {0};
    for (uint32_t k = 0; k < d->held; k++)
      used[d->ring[k]] = 1;
    for (uint32_t k = 0; k <= d->cfg.frames; k++)
      if (!used[k]) {
        d->spare = k;
        break;
      }
  }
  d->stats.frames_complete++;
  d->stats.frames_full += base == NULL;
  d->stats.frames_merged += ack.merged_count;
  d->stats.changes += d->nchanges;
  d->stats.removed += d->nremoved;
  for (uint32_t k = 0; k < d->nchanges; k++)
    d->stats.absolute += (d->changes[k].mask & PROTO_DELTA_ABSOLUTE) != 0;
  return 1;
}

int steerd_delta_receive(steerd_delta *d, const uint8_t *data, size_t len, uint64_t *tick) {
  if (!d || (!data && len))
    return STEERD_DELTA_EINVAL;
  proto_delta_header h;
  uint32_t nc, nr;
  if (len > PROTO_SNAPSHOT_PART_BYTES || proto_decode_delta(data, len, &h, d->part_changes, PART_CAP, &nc,
                                                            d->part_removed, PART_CAP, &nr, NULL) != 0) {
    d->stats.bad_packets++;
    return STEERD_DELTA_EDECODE;
  }
  d->stats.parts++;
  if ((d->has_done && h.tick <= d->done_tick) || (d->active && h.tick < d->cur.tick)) {
    d->stats.late_parts++;
    return STEERD_DELTA_ELATE;
  }
  if (!d->active || h.tick > d->cur.tick) {
    if (d->active) {
      d->stats.frames_abandoned++;
      finish_tick(d);
    }
    d->active = 1;
    d->cur = h;
    d->parts_seen = 0;
    d->nchanges = d->nremoved = 0;
    d->overflow = 0;
    if (h.part_count > d->max_parts) {
      finish_tick(d);
      d->stats.frames_bad++;
      return STEERD_DELTA_EOVERFLOW;
    }
    memset(d->part_seen, 0, (h.part_count + 7u) / 8u);
  }
  if (h.part_count != d->cur.part_count || h.server_time_us != d->cur.server_time_us ||
      h.baseline_tick != d->cur.baseline_tick) {
    finish_tick(d);
    d->stats.frames_bad++;
    return STEERD_DELTA_EBADFRAME;
  }
  uint8_t bit = (uint8_t)(1u << (h.part_index & 7u));
  if (d->part_seen[h.part_index / 8u] & bit) {
    d->stats.late_parts++;
    return STEERD_DELTA_ELATE;
  }
  d->part_seen[h.part_index / 8u] |= bit;
  if (nc > d->cap - d->nchanges || nr > d->cap - d->nremoved) {
    d->overflow = 1;
  } else {
    memcpy(d->changes + d->nchanges, d->part_changes, nc * sizeof *d->changes);
    memcpy(d->removed + d->nremoved, d->part_removed, nr * sizeof *d->removed);
    d->nchanges += nc;
    d->nremoved += nr;
  }
  if (++d->parts_seen < d->cur.part_count)
    return 0;
  finish_tick(d);
  int rc = rebuild(d);
  if (rc == STEERD_DELTA_ENOBASE)
    d->stats.frames_no_base++;
  else if (rc < 0)
    d->stats.frames_bad++;
  if (rc == 1 && tick)
    *tick = h.tick;
  return rc;
}

const proto_record *steerd_delta_frame(const steerd_delta *d, uint32_t *count, uint64_t *tick,
                                       uint64_t *server_time_us) {
  if (!d || d->held == 0)
    return NULL;
  const delta_frame *f = &d->buf[d->ring[0]];
  if (count)
    *count = f->count;
  if (tick)
    *tick = f->tick;
  if (server_time_us)
    *server_time_us = f->time_us;
  return f->rec;
}

uint32_t steerd_delta_poses(const steerd_delta *d, proto_pose *out, uint32_t cap) {
  if (!d || d->held == 0)
    return 0;
  const delta_frame *f = &d->buf[d->ring[0]];
  uint32_t n = f->count < cap ? f->count : cap;
  for (uint32_t i = 0; i < n; i++) {
    proto_record p = proto_record_predict(&f->rec[i], f->time_us);
    out[i] = proto_record_pose(&p);
  }
  return n;
}

void steerd_delta_get_stats(const steerd_delta *d, steerd_delta_stats *out) { *out = d->stats; }

const proto_snapshot_ack *steerd_delta_ack(const steerd_delta *d) {
  return d && d->held > 0 ? &d->ack : NULL;
}

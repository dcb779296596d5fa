/* delta.c: see delta.h. */
#include "delta.h"

#include <stdlib.h>
#include <string.h>

/* DELTA parts never exceed PROTO_SNAPSHOT_PART_BYTES, and every element takes
 * at least one byte. */
#define PART_CAP PROTO_SNAPSHOT_PART_BYTES

typedef struct delta_frame {
  uint64_t tick, time_us;
  uint32_t count;
  proto_record *rec; /* max_agents, sorted by id */
} delta_frame;

struct steerd_delta {
  steerd_delta_config cfg;
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
  proto_delta_entry *changes; /* max_agents */
  uint32_t nchanges;
  steer_id *removed; /* max_agents */
  uint32_t nremoved;
  int overflow;
  int has_done;
  uint64_t done_tick; /* newest tick finished or abandoned */

  proto_delta_entry *part_changes; /* PART_CAP */
  steer_id *part_removed;          /* PART_CAP */
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
  steerd_delta_config c = {10000, STEERD_DELTA_DEFAULT_FRAMES};
  return c;
}

void steerd_delta_destroy(steerd_delta *d) {
  if (!d)
    return;
  if (d->buf)
    for (uint32_t i = 0; i <= d->cfg.frames; i++)
      free(d->buf[i].rec);
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
  if (!cfg || cfg->max_agents == 0 || cfg->max_agents > STEER_MAX_CAPACITY || cfg->frames == 0 ||
      cfg->frames > 1024)
    return NULL;
  steerd_delta *d = calloc(1, sizeof *d);
  if (!d)
    return NULL;
  d->cfg = *cfg;
  d->max_parts = cfg->max_agents * 2u + 1u; /* every part holds a change or a removal, or is the only one */
  d->buf = calloc((size_t)cfg->frames + 1u, sizeof *d->buf);
  d->ring = calloc(cfg->frames, sizeof *d->ring);
  d->part_seen = calloc((d->max_parts + 7u) / 8u, 1);
  d->changes = calloc(cfg->max_agents, sizeof *d->changes);
  d->removed = calloc(cfg->max_agents, sizeof *d->removed);
  d->part_changes = calloc(PART_CAP, sizeof *d->part_changes);
  d->part_removed = calloc(PART_CAP, sizeof *d->part_removed);
  if (!d->buf || !d->ring || !d->part_seen || !d->changes || !d->removed || !d->part_changes ||
      !d->part_removed) {
    steerd_delta_destroy(d);
    return NULL;
  }
  for (uint32_t i = 0; i <= cfg->frames; i++)
    if (!(d->buf[i].rec = calloc(cfg->max_agents, sizeof *d->buf[i].rec))) {
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
  steer_id x = ((const proto_delta_entry *)a)->id, y = ((const proto_delta_entry *)b)->id;
  return x < y ? -1 : x > y;
}

static int cmp_id(const void *a, const void *b) {
  steer_id x = *(const steer_id *)a, y = *(const steer_id *)b;
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

static int sort_removed(steer_id *r, uint32_t n) {
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

/* Baseline minus removals, with the changes applied, into the spare buffer. */
static int rebuild(steerd_delta *d) {
  const delta_frame *base = NULL;
  if (d->cur.baseline_tick != 0 && !(base = find_frame(d, d->cur.baseline_tick)))
    return STEERD_DELTA_ENOBASE;
  if (d->overflow)
    return STEERD_DELTA_EOVERFLOW;
  if (!sort_changes(d->changes, d->nchanges) || !sort_removed(d->removed, d->nremoved))
    return STEERD_DELTA_EBADFRAME;
  delta_frame *f = &d->buf[d->spare];
  uint32_t nb = base ? base->count : 0, i = 0, j = 0, m = 0, n = 0;
  const uint64_t t = d->cur.server_time_us;
  while (i < nb || m < d->nchanges) {
    const proto_record *b = i < nb ? &base->rec[i] : NULL;
    const proto_delta_entry *e = m < d->nchanges ? &d->changes[m] : NULL;
    if (b) {
      while (j < d->nremoved && d->removed[j] < b->id)
        j++;
    }
    int gone = b && j < d->nremoved && d->removed[j] == b->id;
    if (n >= d->cfg.max_agents)
      return STEERD_DELTA_EOVERFLOW;
    if (e && (!b || e->id <= b->id)) {
      const proto_record *from = b && e->id == b->id && !gone ? b : NULL;
      if (proto_delta_apply(from, e, t, &f->rec[n]) != 0)
        return STEERD_DELTA_EBADFRAME;
      n++;
      m++;
      if (b && e->id == b->id)
        i++;
      continue;
    }
    if (!gone)
      f->rec[n++] = *b;
    i++;
  }
  f->tick = d->cur.tick;
  f->time_us = t;
  f->count = n;
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
  if (nc > d->cfg.max_agents - d->nchanges || nr > d->cfg.max_agents - d->nremoved) {
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

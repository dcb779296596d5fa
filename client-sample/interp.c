/* interp.c: the interpolation buffer (see interp.h). */
#include "interp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define INTERP_PI     3.14159265358979323846
#define INTERP_TWO_PI 6.28318530717958647692
#define NO_GONE       INT64_MAX

typedef struct interp_sample {
  int64_t t_us; /* server time */
  uint64_t tick;
  float x, y;   /* m */
  float theta;  /* rad */
  float vx, vy; /* m/s */
} interp_sample;

struct steerd_interp {
  steerd_interp_config cfg;
  size_t bytes;

  /* Agents: per-slot arrays, a dense list of live slots, a free list. */
  uint32_t count;
  uint32_t *dense;     /* live slots */
  uint32_t *dense_pos; /* slot -> index in dense */
  proto_id *ids;
  uint32_t *head;         /* newest sample's index in the slot's ring */
  uint32_t *len;          /* samples in the ring */
  int64_t *gone_us;       /* server time after which the agent is removed; NO_GONE */
  uint64_t *seen;         /* last complete frame that named the agent */
  interp_sample *samples; /* slot * samples_per_agent */
  uint32_t *free_slots;
  uint32_t free_count;
  uint32_t pending_gone;

  /* id -> slot + 1 (0: empty), linear probing with backward-shift deletion. */
  uint32_t *table;
  uint32_t table_mask;

  /* Recent despawns, a ring. */
  proto_id *dsp_id;
  uint64_t *dsp_tick;
  uint32_t dsp_next, dsp_count;

  /* Clock: arrival - server time of recent frames, a ring. */
  int64_t *win;
  uint32_t win_next, win_count;
  int have_frame;
  uint64_t frame_seq;
  uint64_t last_tick;
  int64_t last_server_us, first_server_us;
  int64_t last_arrival_us;
  int64_t offset_target_us; /* window minimum */
  double jitter_us;

  /* Render clock. */
  int have_render;
  int64_t last_now_us;
  double offset_us;
  double delay_us;
  int64_t render_us;

  steerd_interp_stats st;
  double age_sum_ms;
};

const char *steerd_interp_strerror(int code) {
  switch (code) {
  case STEERD_INTERP_OK:
    return "success";
  case STEERD_INTERP_EINVAL:
    return "invalid argument or configuration";
  case STEERD_INTERP_ENOMEM:
    return "out of memory";
  case STEERD_INTERP_ENODATA:
    return "no snapshot yet";
  case STEERD_INTERP_ENOENT:
    return "no such agent";
  case STEERD_INTERP_EFULL:
    return "agent capacity reached";
  default:
    return "unknown error";
  }
}

steerd_interp_config steerd_interp_default_config(void) {
  steerd_interp_config c;
  memset(&c, 0, sizeof c);
  c.max_agents = 1024;
  c.samples_per_agent = 32;
  c.clock_window = 100;
  c.despawn_memory = 64;
  c.snapshot_interval_us = 50000;
  c.min_delay_us = 100000;
  c.max_delay_us = 1000000;
  c.max_extrapolation_us = 250000;
  c.jitter_k = 3.0;
  c.delay_slew_up = 0.1;
  c.delay_slew_down = 0.02;
  c.offset_slew = 0.02;
  c.offset_reset_us = 1000000;
  c.hermite_max_mismatch = 3.0;
  return c;
}

static int config_ok(const steerd_interp_config *c) {
  return c->max_agents >= 1 && c->max_agents <= (1u << 26) && c->samples_per_agent >= 2 &&
         c->samples_per_agent <= 4096 && c->clock_window >= 1 && c->clock_window <= 100000 &&
         c->despawn_memory <= 1000000 && c->snapshot_interval_us >= 1 && c->min_delay_us <= c->max_delay_us &&
         isfinite(c->jitter_k) && c->jitter_k >= 0 && isfinite(c->delay_slew_up) && c->delay_slew_up >= 0 &&
         c->delay_slew_up < 1 && isfinite(c->delay_slew_down) && c->delay_slew_down >= 0 &&
         c->delay_slew_down < 1 && isfinite(c->offset_slew) && c->offset_slew >= 0 && c->offset_slew < 1 &&
         c->delay_slew_up + c->offset_slew < 1 && isfinite(c->hermite_max_mismatch) &&
         c->hermite_max_mismatch >= 0;
}

static void *take(steerd_interp *it, size_t n, size_t size, int *failed) {
  void *p = calloc(n ? n : 1, size);
  if (!p)
    *failed = 1;
  it->bytes += (n ? n : 1) * size;
  return p;
}

steerd_interp *steerd_interp_create(const steerd_interp_config *cfg) {
  if (!cfg || !config_ok(cfg))
    return NULL;
  steerd_interp *it = calloc(1, sizeof *it);
  if (!it)
    return NULL;
  it->cfg = *cfg;
  it->bytes = sizeof *it;
  uint32_t n = cfg->max_agents;
  uint32_t tsize = 16;
  while (tsize < 2 * n)
    tsize <<= 1;
  int failed = 0;
  it->dense = take(it, n, sizeof *it->dense, &failed);
  it->dense_pos = take(it, n, sizeof *it->dense_pos, &failed);
  it->ids = take(it, n, sizeof *it->ids, &failed);
  it->head = take(it, n, sizeof *it->head, &failed);
  it->len = take(it, n, sizeof *it->len, &failed);
  it->gone_us = take(it, n, sizeof *it->gone_us, &failed);
  it->seen = take(it, n, sizeof *it->seen, &failed);
  it->samples = take(it, (size_t)n * cfg->samples_per_agent, sizeof *it->samples, &failed);
  it->free_slots = take(it, n, sizeof *it->free_slots, &failed);
  it->table = take(it, tsize, sizeof *it->table, &failed);
  it->dsp_id = take(it, cfg->despawn_memory, sizeof *it->dsp_id, &failed);
  it->dsp_tick = take(it, cfg->despawn_memory, sizeof *it->dsp_tick, &failed);
  it->win = take(it, cfg->clock_window, sizeof *it->win, &failed);
  it->table_mask = tsize - 1;
  if (failed) {
    steerd_interp_destroy(it);
    return NULL;
  }
  steerd_interp_reset(it);
  return it;
}

void steerd_interp_destroy(steerd_interp *it) {
  if (!it)
    return;
  free(it->dense);
  free(it->dense_pos);
  free(it->ids);
  free(it->head);
  free(it->len);
  free(it->gone_us);
  free(it->seen);
  free(it->samples);
  free(it->free_slots);
  free(it->table);
  free(it->dsp_id);
  free(it->dsp_tick);
  free(it->win);
  free(it);
}

size_t steerd_interp_memory_bytes(const steerd_interp *it) { return it ? it->bytes : 0; }

void steerd_interp_reset(steerd_interp *it) {
  if (!it)
    return;
  uint32_t n = it->cfg.max_agents;
  it->count = 0;
  it->free_count = n;
  for (uint32_t i = 0; i < n; i++) {
    it->free_slots[i] = n - 1 - i; /* slot 0 is taken first */
    it->len[i] = 0;
    it->gone_us[i] = NO_GONE;
  }
  memset(it->table, 0, (size_t)(it->table_mask + 1) * sizeof *it->table);
  it->pending_gone = 0;
  it->dsp_next = it->dsp_count = 0;
  it->win_next = it->win_count = 0;
  it->have_frame = 0;
  it->frame_seq = 0;
  it->jitter_us = 0;
  it->have_render = 0;
  it->render_us = 0;
  memset(&it->st, 0, sizeof it->st);
  it->age_sum_ms = 0;
}

/* ---- id table ---------------------------------------------------------------- */

static uint32_t id_hash(proto_id id) {
  uint32_t h = id;
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

/* Table position of id, or of the empty cell where it would go. */
static uint32_t table_find(const steerd_interp *it, proto_id id) {
  uint32_t i = id_hash(id) & it->table_mask;
  while (it->table[i] && it->ids[it->table[i] - 1] != id)
    i = (i + 1) & it->table_mask;
  return i;
}

static int find_slot(const steerd_interp *it, proto_id id) {
  uint32_t e = it->table[table_find(it, id)];
  return e ? (int)(e - 1) : -1;
}

static void table_remove(steerd_interp *it, uint32_t i) {
  uint32_t mask = it->table_mask;
  it->table[i] = 0;
  uint32_t j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (!it->table[j])
      return;
    uint32_t k = id_hash(it->ids[it->table[j] - 1]) & mask;
    /* The entry at j may stay when its home k lies cyclically in (i, j]. */
    if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
      continue;
    it->table[i] = it->table[j];
    it->table[j] = 0;
    i = j;
  }
}

static int add_agent(steerd_interp *it, proto_id id, uint32_t pos) {
  if (!it->free_count)
    return -1;
  uint32_t s = it->free_slots[--it->free_count];
  it->ids[s] = id;
  it->len[s] = 0;
  it->head[s] = 0;
  it->gone_us[s] = NO_GONE;
  it->seen[s] = 0;
  it->dense_pos[s] = it->count;
  it->dense[it->count++] = s;
  it->table[pos] = s + 1;
  it->st.agents_added++;
  return (int)s;
}

static void remove_slot(steerd_interp *it, uint32_t s) {
  table_remove(it, table_find(it, it->ids[s]));
  uint32_t p = it->dense_pos[s];
  uint32_t last = it->dense[--it->count];
  it->dense[p] = last;
  it->dense_pos[last] = p;
  if (it->gone_us[s] != NO_GONE)
    it->pending_gone--;
  it->gone_us[s] = NO_GONE;
  it->len[s] = 0;
  it->free_slots[it->free_count++] = s;
  it->st.agents_removed++;
}

static int despawned(const steerd_interp *it, proto_id id, uint64_t tick) {
  for (uint32_t i = 0; i < it->dsp_count; i++)
    if (it->dsp_id[i] == id && it->dsp_tick[i] >= tick)
      return 1;
  return 0;
}

/* ---- input ------------------------------------------------------------------- */

static void clock_sample(steerd_interp *it, int64_t arrival, int64_t server) {
  int64_t transit = arrival - server;
  if (it->have_frame) {
    double d = (double)(arrival - it->last_arrival_us) - (double)(server - it->last_server_us);
    it->jitter_us += (fabs(d) - it->jitter_us) / 16.0; /* RFC 3550 section 6.4.1 */
  }
  it->win[it->win_next] = transit;
  it->win_next = (it->win_next + 1) % it->cfg.clock_window;
  if (it->win_count < it->cfg.clock_window)
    it->win_count++;
  int64_t m = it->win[0];
  for (uint32_t i = 1; i < it->win_count; i++)
    if (it->win[i] < m)
      m = it->win[i];
  it->offset_target_us = m;
}

static void store(steerd_interp *it, uint32_t s, const proto_pose *p, uint64_t tick, int64_t t) {
  uint32_t cap = it->cfg.samples_per_agent;
  interp_sample *ring = it->samples + (size_t)s * cap;
  if (it->len[s]) {
    interp_sample *newest = &ring[it->head[s]];
    if (t < newest->t_us) {
      it->st.stale_entries++;
      return;
    }
    if (t > newest->t_us) {
      it->head[s] = (it->head[s] + 1) % cap;
      if (it->len[s] < cap)
        it->len[s]++;
    }
  } else {
    it->head[s] = 0;
    it->len[s] = 1;
  }
  interp_sample *q = &ring[it->head[s]];
  q->t_us = t;
  q->tick = tick;
  q->x = p->x;
  q->y = p->y;
  q->theta = p->theta;
  q->vx = p->vx;
  q->vy = p->vy;
}

int steerd_interp_push(steerd_interp *it, uint64_t arrival_us, uint64_t tick, uint64_t server_time_us,
                       const proto_pose *poses, uint32_t count, int complete) {
  if (!it || (count && !poses) || server_time_us > (uint64_t)INT64_MAX || arrival_us > (uint64_t)INT64_MAX)
    return STEERD_INTERP_EINVAL;
  int64_t t = (int64_t)server_time_us;
  int64_t arrival = (int64_t)arrival_us;
  int new_frame = !it->have_frame || tick != it->last_tick || t != it->last_server_us;
  if (new_frame) {
    if (it->have_frame && t < it->last_server_us)
      return STEERD_INTERP_EINVAL; /* channel 1 is sequenced: cannot happen */
    clock_sample(it, arrival, t);
    if (!it->have_frame)
      it->first_server_us = t;
    it->have_frame = 1;
    it->last_tick = tick;
    it->last_server_us = t;
    it->last_arrival_us = arrival;
    it->st.frames++;
  }
  uint64_t seq = ++it->frame_seq;
  int rc = STEERD_INTERP_OK;
  for (uint32_t i = 0; i < count; i++) {
    const proto_pose *p = &poses[i];
    if (!p->id || !isfinite(p->x) || !isfinite(p->y) || !isfinite(p->theta) || !isfinite(p->vx) ||
        !isfinite(p->vy))
      continue;
    uint32_t pos = table_find(it, p->id);
    int s = it->table[pos] ? (int)it->table[pos] - 1 : -1;
    if (s < 0) {
      if (it->dsp_count && despawned(it, p->id, tick)) {
        it->st.stale_entries++;
        continue;
      }
      s = add_agent(it, p->id, pos);
      if (s < 0) {
        it->st.agents_full++;
        rc = STEERD_INTERP_EFULL;
        continue;
      }
    }
    if (it->gone_us[s] != NO_GONE) {
      it->gone_us[s] = NO_GONE;
      it->pending_gone--;
    }
    it->seen[s] = seq;
    store(it, (uint32_t)s, p, tick, t);
  }
  if (complete) {
    /* Absent from the whole world: gone once the render time reaches this frame. */
    for (uint32_t i = 0; i < it->count; i++) {
      uint32_t s = it->dense[i];
      if (it->seen[s] != seq && it->gone_us[s] == NO_GONE) {
        it->gone_us[s] = t;
        it->pending_gone++;
      }
    }
  }
  return rc;
}

void steerd_interp_despawn(steerd_interp *it, proto_id id, uint64_t tick) {
  if (!it || !id)
    return;
  int s = find_slot(it, id);
  if (s >= 0)
    remove_slot(it, (uint32_t)s);
  if (!it->cfg.despawn_memory)
    return;
  it->dsp_id[it->dsp_next] = id;
  it->dsp_tick[it->dsp_next] = tick;
  it->dsp_next = (it->dsp_next + 1) % it->cfg.despawn_memory;
  if (it->dsp_count < it->cfg.despawn_memory)
    it->dsp_count++;
}

void steerd_interp_note_lost_parts(steerd_interp *it, uint64_t parts) {
  if (it)
    it->st.parts_lost += parts;
}

/* ---- render clock ------------------------------------------------------------ */

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

static double delay_target(const steerd_interp *it) {
  double d = it->cfg.jitter_k * it->jitter_us + (double)it->cfg.snapshot_interval_us;
  if (d < it->cfg.min_delay_us)
    d = it->cfg.min_delay_us;
  return clampd(d, it->cfg.min_delay_us, it->cfg.max_delay_us);
}

int steerd_interp_advance(steerd_interp *it, uint64_t now_us, int64_t *render_us) {
  if (!it || now_us > (uint64_t)INT64_MAX)
    return STEERD_INTERP_EINVAL;
  if (!it->have_frame)
    return STEERD_INTERP_ENODATA;
  int64_t now = (int64_t)now_us;
  double target = delay_target(it);
  double otarget = (double)it->offset_target_us;
  int jumped = 0;
  if (!it->have_render) {
    it->offset_us = otarget;
    it->delay_us = target;
    jumped = 1;
  } else {
    double dt = now > it->last_now_us ? (double)(now - it->last_now_us) : 0.0;
    double e = otarget - it->offset_us;
    if (fabs(e) > it->cfg.offset_reset_us) {
      it->offset_us = otarget; /* the server restarted or a clock stepped: start over */
      jumped = 1;
    } else {
      it->offset_us += clampd(e, -it->cfg.offset_slew * dt, it->cfg.offset_slew * dt);
    }
    it->delay_us += clampd(target - it->delay_us, -it->cfg.delay_slew_down * dt, it->cfg.delay_slew_up * dt);
  }
  if (now > it->last_now_us || !it->have_render)
    it->last_now_us = now;
  double server_now = (double)now - it->offset_us;
  int64_t r = (int64_t)floor(server_now - it->delay_us + 0.5);
  if (!jumped && r < it->render_us)
    r = it->render_us; /* never backwards */
  double dt_render = it->have_render ? (double)(r - it->render_us) : 0.0;
  int was_under = it->have_render && it->st.margin_ms < 0;
  it->render_us = r;
  it->have_render = 1;

  /* Statistics. */
  steerd_interp_stats *st = &it->st;
  st->advances++;
  st->jitter_ms = it->jitter_us / 1000.0;
  st->offset_ms = it->offset_us / 1000.0;
  st->delay_ms = it->delay_us / 1000.0;
  st->delay_target_ms = target / 1000.0;
  st->age_ms = (server_now - (double)it->last_server_us) / 1000.0;
  it->age_sum_ms += st->age_ms;
  st->age_mean_ms = it->age_sum_ms / (double)st->advances;
  if (st->age_ms > st->age_max_ms)
    st->age_max_ms = st->age_ms;
  st->margin_ms = (double)(it->last_server_us - r) / 1000.0;
  if (st->margin_ms < 0) {
    st->underrun_advances++;
    if (!was_under)
      st->underruns++;
    else
      st->underrun_ms += dt_render / 1000.0;
  }

  /* Agents that left the world, once the render time has reached their last frame. */
  if (it->pending_gone) {
    for (uint32_t i = 0; i < it->count;) {
      uint32_t s = it->dense[i];
      if (it->gone_us[s] <= r)
        remove_slot(it, s); /* moves the last dense entry to i */
      else
        i++;
    }
  }
  if (render_us)
    *render_us = r;
  return STEERD_INTERP_OK;
}

/* ---- sampling ---------------------------------------------------------------- */

/* Into (-pi, pi]. */
static double wrap_angle(double a) {
  a = fmod(a, INTERP_TWO_PI);
  if (a > INTERP_PI)
    a -= INTERP_TWO_PI;
  else if (a <= -INTERP_PI)
    a += INTERP_TWO_PI;
  return a;
}

static void set_from(steerd_interp_state *o, const interp_sample *q) {
  o->x = q->x;
  o->y = q->y;
  o->theta = wrap_angle(q->theta);
  o->vx = q->vx;
  o->vy = q->vy;
}

static void interpolate(const steerd_interp *it, const interp_sample *a, const interp_sample *b, int64_t t,
                        steerd_interp_state *o) {
  double h = (double)(b->t_us - a->t_us) * 1e-6; /* s, > 0 */
  double s = (double)(t - a->t_us) * 1e-6 / h;
  double cx = ((double)b->x - a->x) / h, cy = ((double)b->y - a->y) / h; /* chord velocity */
  double mis = hypot(a->vx - cx, a->vy - cy) + hypot(b->vx - cx, b->vy - cy);
  double scale = fmax(hypot(cx, cy), fmax(hypot(a->vx, a->vy), hypot(b->vx, b->vy)));
  if (mis > it->cfg.hermite_max_mismatch * scale) {
    /* The velocities contradict the motion (a teleport, a push): straight line. */
    o->x = a->x + s * ((double)b->x - a->x);
    o->y = a->y + s * ((double)b->y - a->y);
    o->vx = a->vx + s * ((double)b->vx - a->vx);
    o->vy = a->vy + s * ((double)b->vy - a->vy);
  } else {
    double s2 = s * s, s3 = s2 * s;
    double h00 = 2 * s3 - 3 * s2 + 1, h10 = s3 - 2 * s2 + s, h01 = -2 * s3 + 3 * s2, h11 = s3 - s2;
    double d00 = 6 * s2 - 6 * s, d10 = 3 * s2 - 4 * s + 1, d01 = -6 * s2 + 6 * s, d11 = 3 * s2 - 2 * s;
    o->x = h00 * a->x + h10 * h * a->vx + h01 * b->x + h11 * h * b->vx;
    o->y = h00 * a->y + h10 * h * a->vy + h01 * b->y + h11 * h * b->vy;
    o->vx = (d00 * a->x + d01 * b->x) / h + d10 * a->vx + d11 * b->vx;
    o->vy = (d00 * a->y + d01 * b->y) / h + d10 * a->vy + d11 * b->vy;
  }
  o->theta = wrap_angle(a->theta + s * wrap_angle((double)b->theta - a->theta));
}

/* The state at t; *extrap_us receives the extrapolated time (0 unless extrapolating). */
static void sample_slot(const steerd_interp *it, uint32_t slot, int64_t t, steerd_interp_state *o,
                        int64_t *extrap_us) {
  uint32_t cap = it->cfg.samples_per_agent;
  const interp_sample *ring = it->samples + (size_t)slot * cap;
  uint32_t n = it->len[slot], hd = it->head[slot];
  const interp_sample *newest = &ring[hd];
  const interp_sample *oldest = &ring[(hd + cap - (n - 1)) % cap];
  o->id = it->ids[slot];
  o->age_us = t - newest->t_us;
  *extrap_us = 0;
  if (t >= newest->t_us) {
    set_from(o, newest);
    int64_t dt = t - newest->t_us;
    if (dt == 0) {
      o->mode = STEERD_INTERP_MODE_INTERPOLATE;
      return;
    }
    int64_t e = dt;
    o->mode = STEERD_INTERP_MODE_EXTRAPOLATE;
    if (dt > (int64_t)it->cfg.max_extrapolation_us) {
      e = it->cfg.max_extrapolation_us;
      o->mode = STEERD_INTERP_MODE_HOLD_NEWEST;
    }
    double es = (double)e * 1e-6;
    o->x += o->vx * es;
    o->y += o->vy * es;
    if (n >= 2) {
      /* Turn rate from the last two samples (snapshots carry no angular velocity). */
      const interp_sample *prev = &ring[(hd + cap - 1) % cap];
      double h = (double)(newest->t_us - prev->t_us) * 1e-6;
      double w = wrap_angle((double)newest->theta - prev->theta) / h;
      o->theta = wrap_angle(o->theta + w * es);
    }
    if (o->mode == STEERD_INTERP_MODE_HOLD_NEWEST)
      o->vx = o->vy = 0; /* held still */
    *extrap_us = e;
    return;
  }
  if (t < oldest->t_us) {
    set_from(o, oldest);
    o->mode = STEERD_INTERP_MODE_HOLD_OLDEST;
    return;
  }
  /* oldest <= t < newest: scan back from the newest (the render time is usually near it). */
  uint32_t i = hd;
  for (;;) {
    uint32_t p = (i + cap - 1) % cap;
    if (ring[p].t_us <= t) {
      interpolate(it, &ring[p], &ring[i], t, o);
      o->mode = STEERD_INTERP_MODE_INTERPOLATE;
      return;
    }
    i = p;
  }
}

int steerd_interp_sample_at(const steerd_interp *it, proto_id id, int64_t t_us, steerd_interp_state *out) {
  if (!it || !out)
    return STEERD_INTERP_EINVAL;
  int s = find_slot(it, id);
  if (s < 0 || !it->len[s])
    return STEERD_INTERP_ENOENT;
  int64_t e;
  sample_slot(it, (uint32_t)s, t_us, out, &e);
  return STEERD_INTERP_OK;
}

int steerd_interp_sample(steerd_interp *it, proto_id id, steerd_interp_state *out) {
  if (!it || !out)
    return STEERD_INTERP_EINVAL;
  if (!it->have_render)
    return STEERD_INTERP_ENODATA;
  int s = find_slot(it, id);
  if (s < 0 || !it->len[s])
    return STEERD_INTERP_ENOENT;
  int64_t e;
  sample_slot(it, (uint32_t)s, it->render_us, out, &e);
  it->st.samples[out->mode]++;
  it->st.extrapolated_ms += (double)e / 1000.0;
  return STEERD_INTERP_OK;
}

uint32_t steerd_interp_count(const steerd_interp *it) { return it ? it->count : 0; }

proto_id steerd_interp_id_at(const steerd_interp *it, uint32_t i) {
  return it && i < it->count ? it->ids[it->dense[i]] : 0;
}

void steerd_interp_get_stats(const steerd_interp *it, steerd_interp_stats *out) {
  if (!it || !out)
    return;
  *out = it->st;
  out->jitter_ms = it->jitter_us / 1000.0;
  if (it->have_frame) {
    double span = (double)(it->last_server_us - it->first_server_us) / (double)it->cfg.snapshot_interval_us;
    out->frames_expected = (uint64_t)floor(span + 0.5) + 1;
    out->frames_missed = out->frames_expected > out->frames ? out->frames_expected - out->frames : 0;
  }
}

/* snapshots.c: SNAPSHOT and DELTA: pose quantization, how many agents fit a
 * part, full snapshots encoded and decoded, and delta snapshots (dead-reckoned
 * records, diffs against a baseline, their encoding and decoding). */
#include "wire_internal.h"

#include <math.h>
#include <string.h>

#define PROTO_PI_D 3.14159265358979323846

/* ---- Quantization ----------------------------------------------------------- */

/* round(scaled), saturated to int32; NaN -> 0. */
static int32_t round_sat32(double scaled) {
  if (scaled != scaled)
    return 0;
  double q = round(scaled);
  if (q >= 2147483647.0)
    return INT32_MAX;
  if (q <= -2147483648.0)
    return INT32_MIN;
  return (int32_t)q;
}

int32_t proto_quantize_cm(float v) { return round_sat32((double)v * 100.0); }

float proto_dequantize_cm(int32_t q) { return (float)((double)q / 100.0); }

int16_t proto_quantize_angle(float theta) {
  if (!isfinite(theta))
    return 0;
  double q = round((double)proto_wrap_angle(theta) * 32768.0 / PROTO_PI_D);
  if (q >= 32768.0)
    q -= 65536.0; /* +pi is the same heading as -pi */
  if (q < -32768.0)
    q = -32768.0;
  if (q > 32767.0)
    q = 32767.0;
  return (int16_t)q;
}

float proto_dequantize_angle(int16_t q) { return (float)((double)q * PROTO_PI_D / 32768.0); }

proto_pose_q proto_quantize_pose(const proto_pose *p) {
  proto_pose_q q;
  q.id = p->id;
  q.x = proto_quantize_cm(p->x);
  q.y = proto_quantize_cm(p->y);
  q.theta = proto_quantize_angle(p->theta);
  q.vx = proto_quantize_cm(p->vx);
  q.vy = proto_quantize_cm(p->vy);
  return q;
}

proto_pose proto_dequantize_pose(const proto_pose_q *q) {
  proto_pose p;
  p.id = q->id;
  p.x = proto_dequantize_cm(q->x);
  p.y = proto_dequantize_cm(q->y);
  p.theta = proto_dequantize_angle(q->theta);
  p.vx = proto_dequantize_cm(q->vx);
  p.vy = proto_dequantize_cm(q->vy);
  return p;
}

uint32_t proto_snapshot_capacity(size_t part_bytes) {
  if (part_bytes < PROTO_SNAPSHOT_HEADER_MAX_BYTES)
    return 0;
  size_t n = (part_bytes - PROTO_SNAPSHOT_HEADER_MAX_BYTES) / PROTO_SNAPSHOT_AGENT_MAX_BYTES;
  return n > UINT32_MAX / 6u ? UINT32_MAX / 6u : (uint32_t)n;
}

/* Sizes of msgpack's shortest integer forms, as msgpack-c's packers write them. */
static size_t mp_uint_size(uint64_t v) {
  return v < 128u ? 1 : v <= 0xffu ? 2 : v <= 0xffffu ? 3 : v <= 0xffffffffu ? 5 : 9;
}

static size_t mp_int_size(int64_t v) {
  if (v >= 0)
    return mp_uint_size((uint64_t)v);
  return v >= -32 ? 1 : v >= -128 ? 2 : v >= -32768 ? 3 : v >= INT32_MIN ? 5 : 9;
}

static size_t pose_q_size(const proto_pose_q *q) {
  return mp_uint_size(q->id) + mp_int_size(q->x) + mp_int_size(q->y) + mp_int_size(q->theta) +
         mp_int_size(q->vx) + mp_int_size(q->vy);
}

uint32_t proto_snapshot_fit(const proto_pose_view *view, const uint32_t *indices, uint32_t first,
                            uint32_t available, size_t part_bytes) {
  if (part_bytes < PROTO_SNAPSHOT_HEADER_MAX_BYTES)
    return 0;
  size_t budget = part_bytes - PROTO_SNAPSHOT_HEADER_MAX_BYTES, used = 0;
  uint32_t n = 0;
  for (; n < available && n < UINT32_MAX / 6u; n++) {
    uint32_t k = indices ? indices[first + n] : first + n;
    if (k >= view->count)
      break;
    proto_pose p = {view->id[k], view->px[k], view->py[k], view->theta[k], view->vx[k], view->vy[k]};
    proto_pose_q q = proto_quantize_pose(&p);
    size_t sz = pose_q_size(&q);
    if (used + sz > budget)
      break;
    used += sz;
  }
  return n;
}

/* ---- SNAPSHOT: encoding and decoding ---------------------------------------------- */

static void pack_snapshot_header(msgpack_packer *pk, const proto_snapshot_header *h, uint32_t count) {
  msgpack_pack_array(pk, 7);
  msgpack_pack_uint8(pk, PROTO_MSG_SNAPSHOT);
  msgpack_pack_uint64(pk, h->tick);
  msgpack_pack_uint64(pk, h->server_time_us);
  msgpack_pack_uint32(pk, h->part_index);
  msgpack_pack_uint32(pk, h->part_count);
  msgpack_pack_uint32(pk, h->agent_total);
  msgpack_pack_array(pk, (size_t)count * 6u);
}

static void pack_pose(msgpack_packer *pk, const proto_pose *p) {
  proto_pose_q q = proto_quantize_pose(p);
  msgpack_pack_uint32(pk, q.id);
  msgpack_pack_int32(pk, q.x);
  msgpack_pack_int32(pk, q.y);
  msgpack_pack_int16(pk, q.theta);
  msgpack_pack_int32(pk, q.vx);
  msgpack_pack_int32(pk, q.vy);
}

size_t proto_encode_snapshot(uint8_t *buf, size_t cap, const proto_snapshot_header *h,
                             const proto_pose *poses, uint32_t count) {
  writer w;
  msgpack_packer pk;
  if (count > UINT32_MAX / 6u || (count > 0 && !poses))
    return 0;
  writer_init(&w, &pk, buf, cap);
  pack_snapshot_header(&pk, h, count);
  for (uint32_t i = 0; i < count && !w.overflowed; i++)
    pack_pose(&pk, &poses[i]);
  return writer_done(&w);
}

size_t proto_encode_snapshot_view(uint8_t *buf, size_t cap, const proto_snapshot_header *h,
                                  const proto_pose_view *view, const uint32_t *indices, uint32_t first,
                                  uint32_t count) {
  writer w;
  msgpack_packer pk;
  if (count > UINT32_MAX / 6u)
    return 0;
  if (!indices && (first > view->count || count > view->count - first))
    return 0;
  writer_init(&w, &pk, buf, cap);
  pack_snapshot_header(&pk, h, count);
  for (uint32_t i = 0; i < count && !w.overflowed; i++) {
    uint32_t k = indices ? indices[first + i] : first + i;
    if (k >= view->count)
      return 0;
    proto_pose p = {view->id[k], view->px[k], view->py[k], view->theta[k], view->vx[k], view->vy[k]};
    pack_pose(&pk, &p);
  }
  return writer_done(&w);
}

/* part_index, part_count of a SNAPSHOT or DELTA part: index < count. */
static int rd_part(reader *r, uint32_t *index, uint32_t *count) {
  uint64_t i, c;
  if (rd_elem_uint(r, "part_index", UINT32_MAX, &i) || rd_elem_uint(r, "part_count", UINT32_MAX, &c))
    return -1;
  if (c == 0 || i >= c)
    return fail_at(r, "part_index", PROTO_ERR_BAD_FIELD, "part_index must be < part_count");
  *index = (uint32_t)i;
  *count = (uint32_t)c;
  return 0;
}

int decode_snapshot_body(reader *r, proto_snapshot_header *h, proto_pose *poses, proto_pose_q *qposes,
                         uint32_t cap, uint32_t *count) {
  uint64_t u;
  uint32_t n;
  memset(h, 0, sizeof *h);
  *count = 0;
  if (rd_elem_uint(r, "tick", UINT64_MAX, &h->tick) ||
      rd_elem_uint(r, "server_time_us", UINT64_MAX, &h->server_time_us))
    return -1;
  if (rd_part(r, &h->part_index, &h->part_count))
    return -1;
  if (rd_elem_uint(r, "agent_total", UINT32_MAX, &u))
    return -1;
  h->agent_total = (uint32_t)u;
  size_t old = path_push(r, "agents");
  if (rd_array(r, 0, UINT32_MAX, &n))
    return -1;
  if (n % 6u != 0)
    return bad(r, "length not a multiple of 6");
  n /= 6u;
  if (n > h->agent_total)
    return bad(r, "more agents than agent_total");
  if (n > cap)
    return fail(r, PROTO_ERR_TOO_LARGE, "more agents than the caller's capacity");
  if ((size_t)n * 6u > r->len - r->pos)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "truncated");
  for (uint32_t i = 0; i < n; i++) {
    int64_t v[6];
    static const int64_t lo[6] = {0, INT32_MIN, INT32_MIN, INT16_MIN, INT32_MIN, INT32_MIN};
    static const int64_t hi[6] = {UINT32_MAX, INT32_MAX, INT32_MAX, INT16_MAX, INT32_MAX, INT32_MAX};
    for (int k = 0; k < 6; k++) {
      size_t o2 = path_push_index(r, i * 6u + (uint32_t)k);
      int rc = rd_int(r, lo[k], hi[k], &v[k]);
      path_pop(r, o2);
      if (rc)
        return -1;
    }
    proto_pose_q q = {(proto_id)v[0], (int32_t)v[1], (int32_t)v[2],
                      (int16_t)v[3],  (int32_t)v[4], (int32_t)v[5]};
    if (qposes)
      qposes[i] = q;
    if (poses)
      poses[i] = proto_dequantize_pose(&q);
  }
  path_pop(r, old);
  *count = n;
  return 0;
}

int proto_decode_snapshot(const uint8_t *data, size_t len, proto_snapshot_header *h, proto_pose *poses,
                          proto_pose_q *qposes, uint32_t cap, uint32_t *count, proto_error_info *err) {
  proto_error_info local;
  reader r;
  reader_init(&r, data, len, err ? err : &local, false);
  *count = 0;
  uint32_t n;
  int rc = rd_frame_expect(&r, PROTO_MSG_SNAPSHOT, 7, 7, &n, "not a snapshot");
  if (rc == 0)
    rc = decode_snapshot_body(&r, h, poses, qposes, (poses || qposes) ? cap : 0, count);
  if (rc == 0)
    rc = rd_end(&r);
  if (rc)
    *count = 0;
  return finish(&r, rc);
}

/* ---- Delta snapshots --------------------------------------------------------------- */

int32_t proto_quantize_omega(float omega) { return round_sat32((double)omega * 4096.0 / PROTO_PI_D); }

float proto_dequantize_omega(int32_t q) { return (float)((double)q * PROTO_PI_D / 4096.0); }

proto_record proto_record_from_state(proto_id id, float x, float y, float theta, float vx, float vy,
                                     float omega, uint64_t time_us) {
  proto_record r;
  memset(&r, 0, sizeof r);
  r.id = id;
  r.x = proto_quantize_cm(x);
  r.y = proto_quantize_cm(y);
  r.theta = proto_quantize_angle(theta);
  r.vx = proto_quantize_cm(vx);
  r.vy = proto_quantize_cm(vy);
  r.omega = proto_quantize_omega(omega);
  r.time_us = time_us;
  return r;
}

/* round(a / b), halves away from zero; b > 0. */
static int64_t div_round(int64_t a, int64_t b) { return a >= 0 ? (a + b / 2) / b : -((-a + b / 2) / b); }

static int32_t sat32(int64_t v) { return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v; }

/* Into [-32768, 32767], modulo 65536 (a whole turn). */
static int16_t wrap16(int64_t v) {
  int64_t m = ((v % 65536) + 65536) % 65536;
  return (int16_t)(m >= 32768 ? m - 65536 : m);
}

proto_record proto_record_predict(const proto_record *r, uint64_t t_us) {
  proto_record p = *r;
  uint64_t dt = t_us > r->time_us ? t_us - r->time_us : 0;
  if (dt > PROTO_DR_MAX_DT_US)
    dt = PROTO_DR_MAX_DT_US;
  p.x = sat32((int64_t)r->x + div_round((int64_t)r->vx * (int64_t)dt, 1000000));
  p.y = sat32((int64_t)r->y + div_round((int64_t)r->vy * (int64_t)dt, 1000000));
  p.theta = wrap16((int64_t)r->theta + div_round((int64_t)r->omega * 8 * (int64_t)dt, 1000000));
  return p;
}

proto_delta_entry proto_delta_diff(const proto_record *base, const proto_record *now, uint64_t time_us) {
  proto_delta_entry e;
  int64_t d[PROTO_DELTA_FIELD_COUNT];
  memset(&e, 0, sizeof e);
  e.id = now->id;
  if (base) {
    proto_record p = proto_record_predict(base, time_us);
    d[0] = (int64_t)now->x - p.x;
    d[1] = (int64_t)now->y - p.y;
    d[2] = wrap16((int64_t)now->theta - p.theta);
    d[3] = (int64_t)now->vx - base->vx;
    d[4] = (int64_t)now->vy - base->vy;
    d[5] = (int64_t)now->omega - base->omega;
    int fits = 1;
    for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
      fits &= d[k] >= INT32_MIN && d[k] <= INT32_MAX;
    if (fits) {
      for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
        if (d[k] != 0) {
          e.mask |= (uint8_t)(1u << k);
          e.v[k] = (int32_t)d[k];
        }
      return e;
    }
  }
  /* No base (or a difference beyond int32, which no sane world makes): absolute. */
  d[0] = now->x, d[1] = now->y, d[2] = now->theta, d[3] = now->vx, d[4] = now->vy, d[5] = now->omega;
  e.mask = PROTO_DELTA_ABSOLUTE;
  for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
    if (d[k] != 0) {
      e.mask |= (uint8_t)(1u << k);
      e.v[k] = (int32_t)d[k];
    }
  return e;
}

int proto_delta_apply(const proto_record *base, const proto_delta_entry *e, uint64_t time_us,
                      proto_record *out) {
  int64_t v[PROTO_DELTA_FIELD_COUNT];
  for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
    v[k] = (e->mask & (1u << k)) ? e->v[k] : 0;
  if (e->mask & PROTO_DELTA_ABSOLUTE) {
    if (v[2] < INT16_MIN || v[2] > INT16_MAX)
      return -1;
  } else {
    if (!base || base->id != e->id)
      return -1;
    proto_record p = proto_record_predict(base, time_us);
    v[0] += p.x;
    v[1] += p.y;
    v[2] = wrap16(v[2] + p.theta);
    v[3] += base->vx;
    v[4] += base->vy;
    v[5] += base->omega;
  }
  for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
    if (v[k] < INT32_MIN || v[k] > INT32_MAX)
      return -1;
  memset(out, 0, sizeof *out);
  out->id = e->id;
  out->x = (int32_t)v[0];
  out->y = (int32_t)v[1];
  out->theta = (int16_t)v[2];
  out->vx = (int32_t)v[3];
  out->vy = (int32_t)v[4];
  out->omega = (int32_t)v[5];
  out->time_us = time_us;
  return 0;
}

proto_pose proto_record_pose(const proto_record *r) {
  const proto_pose_q q = {.id = r->id, .x = r->x, .y = r->y, .theta = r->theta, .vx = r->vx, .vy = r->vy};
  return proto_dequantize_pose(&q);
}

size_t proto_delta_entry_size(const proto_delta_entry *e, proto_id prev_id) {
  size_t n = mp_uint_size((uint64_t)e->id - prev_id) + 1;
  for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
    if (e->mask & (1u << k))
      n += mp_int_size(e->v[k]);
  return n;
}

size_t proto_delta_removed_size(proto_id id, proto_id prev_id) {
  return mp_uint_size((uint64_t)id - prev_id);
}

static uint32_t entry_field_count(const proto_delta_entry *e) {
  return 2u + (uint32_t)popcount32(e->mask & PROTO_DELTA_FIELDS);
}

size_t proto_encode_delta(uint8_t *buf, size_t cap, const proto_delta_header *h,
                          const proto_delta_entry *entries, uint32_t count, const proto_id *removed,
                          uint32_t removed_count) {
  writer w;
  msgpack_packer pk;
  uint64_t elems = 0;
  if ((count > 0 && !entries) || (removed_count > 0 && !removed))
    return 0;
  for (uint32_t i = 0; i < count; i++) {
    if (entries[i].id <= (i ? entries[i - 1].id : 0) || entries[i].mask > PROTO_DELTA_MASK_ALL)
      return 0;
    if ((entries[i].mask & PROTO_DELTA_THETA) && (entries[i].v[2] < INT16_MIN || entries[i].v[2] > INT16_MAX))
      return 0;
    elems += entry_field_count(&entries[i]);
  }
  for (uint32_t i = 0; i < removed_count; i++)
    if (removed[i] <= (i ? removed[i - 1] : 0))
      return 0;
  if (elems > UINT32_MAX)
    return 0;
  writer_init(&w, &pk, buf, cap);
  msgpack_pack_array(&pk, 8);
  msgpack_pack_uint8(&pk, PROTO_MSG_DELTA);
  msgpack_pack_uint64(&pk, h->tick);
  msgpack_pack_uint64(&pk, h->server_time_us);
  msgpack_pack_uint64(&pk, h->baseline_tick);
  msgpack_pack_uint32(&pk, h->part_index);
  msgpack_pack_uint32(&pk, h->part_count);
  msgpack_pack_array(&pk, (size_t)elems);
  proto_id prev = 0;
  for (uint32_t i = 0; i < count && !w.overflowed; i++) {
    const proto_delta_entry *e = &entries[i];
    msgpack_pack_uint32(&pk, e->id - prev);
    prev = e->id;
    msgpack_pack_uint8(&pk, e->mask);
    for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
      if (e->mask & (1u << k))
        msgpack_pack_int32(&pk, e->v[k]);
  }
  msgpack_pack_array(&pk, removed_count);
  prev = 0;
  for (uint32_t i = 0; i < removed_count && !w.overflowed; i++) {
    msgpack_pack_uint32(&pk, removed[i] - prev);
    prev = removed[i];
  }
  return writer_done(&w);
}

/* An element of a flat array: its path is name[i]. */
static int rd_flat_int(reader *r, uint32_t i, int64_t min, int64_t max, int64_t *out) {
  size_t old = path_push_index(r, i);
  int rc = rd_int(r, min, max, out);
  path_pop(r, old);
  return rc;
}

/* An id difference: > 0, and the running id stays <= UINT32_MAX. */
static int rd_id_step(reader *r, uint32_t i, proto_id *id) {
  int64_t d;
  if (rd_flat_int(r, i, 1, UINT32_MAX, &d))
    return -1;
  if (d < 1 || (uint64_t)*id + (uint64_t)d > UINT32_MAX) {
    size_t old = path_push_index(r, i);
    bad(r, d < 1 ? "ids must increase" : "id out of range");
    path_pop(r, old);
    return -1;
  }
  *id += (proto_id)d;
  return 0;
}

static int decode_delta_body(reader *r, proto_delta_header *h, proto_delta_entry *entries, uint32_t cap,
                             uint32_t *count, proto_id *removed, uint32_t removed_cap,
                             uint32_t *removed_count) {
  uint32_t n;
  memset(h, 0, sizeof *h);
  if (rd_elem_uint(r, "tick", UINT64_MAX, &h->tick) ||
      rd_elem_uint(r, "server_time_us", UINT64_MAX, &h->server_time_us) ||
      rd_elem_uint(r, "baseline_tick", UINT64_MAX, &h->baseline_tick))
    return -1;
  if (h->tick == 0)
    return fail_at(r, "tick", PROTO_ERR_BAD_FIELD, "must be >= 1");
  if (h->baseline_tick >= h->tick)
    return fail_at(r, "baseline_tick", PROTO_ERR_BAD_FIELD, "must be < tick");
  if (rd_part(r, &h->part_index, &h->part_count))
    return -1;
  size_t old = path_push(r, "changes");
  if (rd_array(r, 0, UINT32_MAX, &n))
    return -1;
  if (n > r->len - r->pos) /* every element takes at least one byte */
    return fail(r, PROTO_ERR_BAD_MESSAGE, "truncated");
  proto_id id = 0;
  uint32_t i = 0, c = 0;
  while (i < n) {
    if (n - i < 2)
      return bad(r, "change cut short");
    proto_delta_entry e;
    int64_t m;
    memset(&e, 0, sizeof e);
    if (rd_id_step(r, i, &id) || rd_flat_int(r, i + 1, 0, PROTO_DELTA_MASK_ALL, &m))
      return -1;
    i += 2;
    e.id = id;
    e.mask = (uint8_t)m;
    for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++) {
      if (!(e.mask & (1u << k)))
        continue;
      if (i >= n)
        return bad(r, "change cut short");
      int64_t v;
      if (rd_flat_int(r, i, k == 2 ? INT16_MIN : INT32_MIN, k == 2 ? INT16_MAX : INT32_MAX, &v))
        return -1;
      e.v[k] = (int32_t)v;
      i++;
    }
    if (c >= cap)
      return fail(r, PROTO_ERR_TOO_LARGE, "more changes than the caller's capacity");
    entries[c++] = e;
  }
  path_pop(r, old);
  old = path_push(r, "removed");
  if (rd_array(r, 0, UINT32_MAX, &n))
    return -1;
  if (n > removed_cap)
    return fail(r, PROTO_ERR_TOO_LARGE, "more removals than the caller's capacity");
  if (n > r->len - r->pos)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "truncated");
  id = 0;
  for (i = 0; i < n; i++) {
    if (rd_id_step(r, i, &id))
      return -1;
    removed[i] = id;
  }
  path_pop(r, old);
  *count = c;
  *removed_count = n;
  return 0;
}

int proto_decode_delta(const uint8_t *data, size_t len, proto_delta_header *h, proto_delta_entry *entries,
                       uint32_t cap, uint32_t *count, proto_id *removed, uint32_t removed_cap,
                       uint32_t *removed_count, proto_error_info *err) {
  proto_error_info local;
  reader r;
  reader_init(&r, data, len, err ? err : &local, false);
  *count = 0;
  *removed_count = 0;
  uint32_t n;
  int rc = rd_frame_expect(&r, PROTO_MSG_DELTA, 8, 8, &n, "not a delta");
  if (rc == 0)
    rc = decode_delta_body(&r, h, entries, entries ? cap : 0, count, removed, removed ? removed_cap : 0,
                           removed_count);
  if (rc == 0)
    rc = rd_end(&r);
  if (rc) {
    *count = 0;
    *removed_count = 0;
  }
  return finish(&r, rc);
}

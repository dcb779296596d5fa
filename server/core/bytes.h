/* bytes.h: bounds-checked little-endian writing and reading, and the FNV-1a hash: the one copy
 * shared by the saved-state formats (world_state.c, planner.c) and the checkpoint file
 * (server/persist.c).
 *
 * A writer never passes its buffer: a write that would sets `overflowed` and writes nothing
 * more. A writer without a buffer (p NULL) only counts the bytes (and hashes them, with
 * `hashing` set), so the same code sizes, hashes and writes a format. A reader never reads
 * past its length: a read that would sets `bad` and returns zeros from then on; callers also
 * set `bad` on an invalid value, and check it once after a group of reads. Integers are
 * little-endian, floats their IEEE-754 bits, whatever the host. */
#ifndef STEER_BYTES_H
#define STEER_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define STEER_FNV1A_OFFSET 0xcbf29ce484222325ull
#define STEER_FNV1A_PRIME  0x100000001b3ull

/* FNV-1a of n bytes, continuing from h (STEER_FNV1A_OFFSET to start). */
static inline uint64_t steer_fnv1a(uint64_t h, const void *src, size_t n) {
  const uint8_t *p = src;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * STEER_FNV1A_PRIME;
  return h;
}

static inline uint64_t steer_le64(const uint8_t *p) {
  return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
         (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

/* ---- writing ------------------------------------------------------------- */

typedef struct steer_wbuf {
  uint8_t *p; /* NULL: count (and hash) only */
  size_t cap, pos;
  int overflowed; /* a write would have passed cap */
  int hashing;    /* keep h */
  uint64_t h;     /* FNV-1a of every byte put */
} steer_wbuf;

static inline steer_wbuf steer_wbuf_make(uint8_t *p, size_t cap) {
  steer_wbuf b = {p, cap, 0, 0, 0, STEER_FNV1A_OFFSET};
  return b;
}

static inline void steer_put_bytes(steer_wbuf *b, const void *src, size_t n) {
  if (b->hashing)
    b->h = steer_fnv1a(b->h, src, n);
  if (!b->p) {
    b->pos += n;
    return;
  }
  if (b->overflowed || n > b->cap - b->pos) {
    b->overflowed = 1;
    return;
  }
  memcpy(b->p + b->pos, src, n);
  b->pos += n;
}

static inline void steer_put_u8(steer_wbuf *b, uint8_t v) { steer_put_bytes(b, &v, 1); }

static inline void steer_put_u16(steer_wbuf *b, uint16_t v) {
  uint8_t t[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  steer_put_bytes(b, t, 2);
}

static inline void steer_put_u32(steer_wbuf *b, uint32_t v) {
  uint8_t t[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  steer_put_bytes(b, t, 4);
}

static inline void steer_put_u64(steer_wbuf *b, uint64_t v) {
  steer_put_u32(b, (uint32_t)v);
  steer_put_u32(b, (uint32_t)(v >> 32));
}

static inline void steer_put_f32(steer_wbuf *b, float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  steer_put_u32(b, u);
}

static inline void steer_put_f32s(steer_wbuf *b, const float *f, size_t n) {
  for (size_t i = 0; i < n; i++)
    steer_put_f32(b, f[i]);
}

/* ---- reading ------------------------------------------------------------- */

typedef struct steer_rbuf {
  const uint8_t *p;
  size_t len, pos;
  int bad; /* a read passed the end, or a value was invalid */
} steer_rbuf;

static inline steer_rbuf steer_rbuf_make(const uint8_t *p, size_t len) {
  steer_rbuf b = {p, len, 0, 0};
  return b;
}

/* Bytes not read yet. */
static inline size_t steer_rbuf_left(const steer_rbuf *b) { return b->bad ? 0 : b->len - b->pos; }

/* The next n bytes, or NULL (and bad set) when fewer are left. */
static inline const uint8_t *steer_take(steer_rbuf *b, size_t n) {
  if (b->bad || n > b->len - b->pos) {
    b->bad = 1;
    return NULL;
  }
  const uint8_t *q = b->p + b->pos;
  b->pos += n;
  return q;
}

static inline uint8_t steer_get_u8(steer_rbuf *b) {
  const uint8_t *q = steer_take(b, 1);
  return q ? q[0] : 0;
}

static inline uint16_t steer_get_u16(steer_rbuf *b) {
  const uint8_t *q = steer_take(b, 2);
  return q ? (uint16_t)(q[0] | q[1] << 8) : 0;
}

static inline uint32_t steer_get_u32(steer_rbuf *b) {
  const uint8_t *q = steer_take(b, 4);
  return q ? (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24 : 0;
}

static inline uint64_t steer_get_u64(steer_rbuf *b) {
  uint64_t lo = steer_get_u32(b);
  return lo | (uint64_t)steer_get_u32(b) << 32;
}

static inline float steer_get_f32(steer_rbuf *b) {
  uint32_t u = steer_get_u32(b);
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

static inline void steer_get_f32s(steer_rbuf *b, float *f, size_t n) {
  for (size_t i = 0; i < n; i++)
    f[i] = steer_get_f32(b);
}

#endif

/* fuzz_common.h: the protocol's checks shared by the decoders' libFuzzer
 * targets of fuzz/ (FUZZ_CHECK and the entry point: fuzz_check.h). */
#ifndef STEERD_FUZZ_COMMON_H
#define STEERD_FUZZ_COMMON_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "protocol.h"

/* Every "number" field of the protocol (PROTOCOL.md 2): finite, |v| <= 1e6. */
static inline bool fuzz_number_ok(float v) { return isfinite(v) && fabsf(v) <= PROTO_MAX_ABS_FLOAT; }

/* An orientation the decoders wrapped: (-pi, pi] (PROTOCOL.md 3). */
static inline bool fuzz_angle_ok(float a) { return isfinite(a) && a > -PROTO_PI_F && a <= PROTO_PI_F; }

/* A C string that ends within its array. */
static inline bool fuzz_cstr_ok(const char *s, size_t cap) { return memchr(s, '\0', cap) != NULL; }

/* Decoder error report: the return value is -code, the code one the decoders
 * can produce, the reason set, the field a NUL-terminated path of printable
 * ASCII (PROTOCOL.md 7.3). */
static inline void fuzz_check_error(int rc, const proto_error_info *e) {
  FUZZ_CHECK(rc < 0);
  FUZZ_CHECK(rc == -e->code);
  FUZZ_CHECK(e->code == PROTO_ERR_BAD_MESSAGE || e->code == PROTO_ERR_UNKNOWN_TYPE ||
             e->code == PROTO_ERR_BAD_FIELD || e->code == PROTO_ERR_TOO_LARGE);
  FUZZ_CHECK(e->reason != NULL && e->reason[0] != '\0');
  FUZZ_CHECK(fuzz_cstr_ok(e->field, sizeof e->field));
  for (const char *c = e->field; *c; c++)
    FUZZ_CHECK(*c >= 0x20 && *c < 0x7f);
}

static inline void fuzz_check_ok(int rc, const proto_error_info *e) {
  FUZZ_CHECK(rc == 0);
  FUZZ_CHECK(e->code == PROTO_OK);
  FUZZ_CHECK(e->field[0] == '\0');
}

/* ---- An independent reading of PROTOCOL.md 7.3's request_id rule ----------- */

/* Skips one complete msgpack value at d[*pos..n) without recursion; false if it
 * is cut short or holds the never-used byte 0xc1. */
static inline bool fuzz_mp_skip(const uint8_t *d, size_t n, size_t *pos) {
  uint64_t left = 1;
  size_t p = *pos;
  while (left > 0) {
    if (p >= n)
      return false;
    uint8_t b = d[p++];
    uint64_t body = 0, items = 0;
    size_t hdr = 0;
    left--;
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
      /* single byte */
    } else if ((b & 0xf0) == 0x80) {
      items = 2u * (b & 0x0fu);
    } else if ((b & 0xf0) == 0x90) {
      items = b & 0x0fu;
    } else if ((b & 0xe0) == 0xa0) {
      body = b & 0x1fu;
    } else if (b >= 0xcc && b <= 0xcf) {
      body = 1u << (b - 0xcc);
    } else if (b >= 0xd0 && b <= 0xd3) {
      body = 1u << (b - 0xd0);
    } else if (b == 0xca || b == 0xcb) {
      body = b == 0xca ? 4 : 8;
    } else if (b >= 0xd4 && b <= 0xd8) {
      body = 1u + (1u << (b - 0xd4));
    } else if ((b >= 0xd9 && b <= 0xdb) || (b >= 0xc4 && b <= 0xc6) || (b >= 0xc7 && b <= 0xc9) ||
               (b >= 0xdc && b <= 0xdf)) {
      hdr = b >= 0xd9 && b <= 0xdb   ? (size_t)1 << (b - 0xd9)
            : b >= 0xc4 && b <= 0xc6 ? (size_t)1 << (b - 0xc4)
            : b >= 0xc7 && b <= 0xc9 ? (size_t)1 << (b - 0xc7)
            : (b & 1u)               ? 4
                                     : 2;
      if (hdr > n - p)
        return false;
      uint64_t v = 0;
      for (size_t i = 0; i < hdr; i++)
        v = (v << 8) | d[p + i];
      p += hdr;
      if (b >= 0xdc)
        items = (b >= 0xde ? 2u : 1u) * v;
      else
        body = v + (b >= 0xc7 && b <= 0xc9 ? 1u : 0u); /* ext: type byte */
    } else {
      return false; /* 0xc1 */
    }
    if (body > n - p)
      return false;
    p += (size_t)body;
    left += items;
    if (left > n - p) /* cannot be complete: each value takes >= 1 byte */
      return false;
  }
  *pos = p;
  return true;
}

/* 1 and the id when the packet starts as an array of >= 2 elements whose first
 * is a complete value and whose second is an integer in 0..UINT32_MAX. */
static inline bool fuzz_expected_request_id(const uint8_t *d, size_t n, uint32_t *id) {
  size_t p = 0;
  uint64_t count;
  if (n == 0 || n > PROTO_MAX_MESSAGE_BYTES)
    return false;
  uint8_t b = d[p++];
  if ((b & 0xf0) == 0x90) {
    count = b & 0x0fu;
  } else if (b == 0xdc || b == 0xdd) {
    size_t h = b == 0xdc ? 2 : 4;
    if (h > n - p)
      return false;
    count = 0;
    for (size_t i = 0; i < h; i++)
      count = (count << 8) | d[p + i];
    p += h;
  } else {
    return false;
  }
  if (count < 2 || !fuzz_mp_skip(d, n, &p) || p >= n)
    return false;
  b = d[p++];
  uint64_t v;
  size_t w;
  if (b <= 0x7f) {
    *id = b;
    return true;
  }
  if (b >= 0xcc && b <= 0xcf)
    w = (size_t)1 << (b - 0xcc);
  else if (b >= 0xd0 && b <= 0xd3)
    w = (size_t)1 << (b - 0xd0);
  else
    return false;
  if (w > n - p)
    return false;
  v = 0;
  for (size_t i = 0; i < w; i++)
    v = (v << 8) | d[p + i];
  if (b >= 0xd0 && (d[p] & 0x80u)) /* signed and negative */
    return false;
  if (v > UINT32_MAX)
    return false;
  *id = (uint32_t)v;
  return true;
}

#endif /* STEERD_FUZZ_COMMON_H */

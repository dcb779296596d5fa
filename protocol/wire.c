/* wire.c: the msgpack primitives every message is built from: a writer that
 * packs (msgpack-c's packer) into a fixed buffer, and a strict, allocation-free
 * pull reader with its rd_* field readers and the message framing.
 *
 * Decoding uses a small pull reader over the bytes rather than msgpack-c's
 * unpacker: the unpacker allocates a zone per message and would size it from
 * untrusted array headers; the reader here allocates nothing, checks every length
 * against the bytes left, and walks the schema, so nesting is bounded by it. */
#include "wire_internal.h"

#include <math.h>
#include <string.h>

/* ---- Encoding --------------------------------------------------------------- */

static int writer_write(void *data, const char *p, size_t n) {
  writer *w = data;
  if (w->overflowed || n > w->cap - w->len) {
    w->overflowed = 1;
    return -1;
  }
  memcpy(w->buf + w->len, p, n);
  w->len += n;
  return 0;
}

void writer_init(writer *w, msgpack_packer *pk, uint8_t *buf, size_t cap) {
  w->buf = buf;
  w->cap = buf ? cap : 0;
  w->len = 0;
  w->overflowed = 0;
  msgpack_packer_init(pk, w, writer_write);
}

size_t writer_done(const writer *w) { return w->overflowed ? 0 : w->len; }

static void pack_cstr(msgpack_packer *pk, const char *s) { msgpack_pack_str_with_body(pk, s, strlen(s)); }

void pack_key(msgpack_packer *pk, const char *key) { pack_cstr(pk, key); }

void pack_kf(msgpack_packer *pk, const char *key, float v) {
  pack_key(pk, key);
  msgpack_pack_float(pk, v);
}

void pack_ku(msgpack_packer *pk, const char *key, uint64_t v) {
  pack_key(pk, key);
  msgpack_pack_uint64(pk, v);
}

void pack_ks(msgpack_packer *pk, const char *key, const char *v) {
  pack_key(pk, key);
  pack_cstr(pk, v);
}

unsigned popcount32(uint32_t v) {
  unsigned n = 0;
  for (; v; v &= v - 1u)
    n++;
  return n;
}

/* ---- Decoding: the reader ----------------------------------------------------- */

int fail(reader *r, int code, const char *reason) {
  if (r->err->code == PROTO_OK) {
    r->err->code = code;
    r->err->reason = reason;
    size_t n = r->path_len < PROTO_MAX_FIELD_BYTES ? r->path_len : PROTO_MAX_FIELD_BYTES;
    memcpy(r->err->field, r->path, n);
    r->err->field[n] = '\0';
  }
  return -1;
}

/* Path segments: push returns the old length to restore. */
static size_t path_push_bytes(reader *r, const char *s, size_t n, bool dot) {
  size_t old = r->path_len;
  size_t room = PATH_CAP - 1 - r->path_len;
  if (dot && r->path_len > 0 && room > 0) {
    r->path[r->path_len++] = '.';
    room--;
  }
  if (n > room)
    n = room;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    r->path[r->path_len++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?'; /* keys come from the wire */
  }
  r->path[r->path_len] = '\0';
  return old;
}

size_t path_push(reader *r, const char *name) { return path_push_bytes(r, name, strlen(name), true); }

size_t path_push_index(reader *r, uint32_t i) {
  char tmp[16];
  size_t n = 0;
  char digits[12];
  size_t d = 0;
  do {
    digits[d++] = "0123456789"[i % 10u];
    i /= 10u;
  } while (i);
  tmp[n++] = '[';
  while (d)
    tmp[n++] = digits[--d];
  tmp[n++] = ']';
  return path_push_bytes(r, tmp, n, false);
}

void path_pop(reader *r, size_t old) {
  r->path_len = old;
  r->path[old] = '\0';
}

/* fail() with the path extended by field for the error; -1. */
int fail_at(reader *r, const char *field, int code, const char *reason) {
  size_t old = path_push(r, field);
  fail(r, code, reason);
  path_pop(r, old);
  return -1;
}

int need(reader *r, size_t n) {
  if (n > r->len - r->pos)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "truncated");
  return 0;
}

static uint64_t be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = (v << 8) | p[i];
  return v;
}

/* A signed integer of n bytes (int 8..64): MP_UINT when it is not negative. */
static int rd_intn(reader *r, mp_val *v, int n) {
  if (need(r, (size_t)n))
    return -1;
  uint64_t raw = be(r->p + r->pos, n);
  r->pos += (size_t)n;
  int64_t s;
  if (n == 8) {
    s = raw >= (1ull << 63) ? -(int64_t)(~raw) - 1 : (int64_t)raw;
  } else {
    uint64_t sign = 1ull << (8 * n - 1);
    s = (raw & sign) ? (int64_t)raw - (int64_t)(sign << 1) : (int64_t)raw;
  }
  if (s >= 0) {
    v->kind = MP_UINT;
    v->u = (uint64_t)s;
  } else {
    v->kind = MP_INT;
    v->i = s;
  }
  return 0;
}

/* A float 32 (n = 4) or float 64 (n = 8). */
static int rd_floatn(reader *r, mp_val *v, int n) {
  if (need(r, (size_t)n))
    return -1;
  v->kind = MP_FLOAT;
  if (n == 4) {
    uint32_t bits = (uint32_t)be(r->p + r->pos, 4);
    float f;
    memcpy(&f, &bits, 4);
    v->f = f;
  } else {
    uint64_t bits = be(r->p + r->pos, 8);
    double d;
    memcpy(&d, &bits, 8);
    v->f = d;
  }
  r->pos += (size_t)n;
  return 0;
}

/* An extension (header byte b: fixext 1..16, or ext 8/16/32 with its size),
 * skipped whole: type byte and data; v->u is the data's size. */
static int rd_ext(reader *r, mp_val *v, uint8_t b) {
  v->kind = MP_EXT;
  if (b >= 0xd4 && b <= 0xd8) {
    v->u = (uint64_t)1 << (b - 0xd4);
  } else {
    int n = 1 << (b - 0xc7);
    if (need(r, (size_t)n))
      return -1;
    v->u = be(r->p + r->pos, n);
    r->pos += (size_t)n;
  }
  if (need(r, 1) || need(r, 1 + (size_t)v->u))
    return -1;
  r->pos += 1 + (size_t)v->u;
  return 0;
}

/* Reads one value's header; strings and binaries are consumed whole, arrays and
 * maps leave their elements to the caller. */
int rd_val(reader *r, mp_val *v) {
  if (need(r, 1))
    return -1;
  uint8_t b = r->p[r->pos++];
  int n = 0;
  memset(v, 0, sizeof *v);
  if (b <= 0x7f) {
    v->kind = MP_UINT;
    v->u = b;
    return 0;
  }
  if (b >= 0xe0) {
    v->kind = MP_INT;
    v->i = (int64_t)b - 256; /* negative fixint: 0xe0..0xff is -32..-1 */
    return 0;
  }
  if ((b & 0xf0) == 0x80) {
    v->kind = MP_MAP;
    v->u = b & 0x0fu;
    return 0;
  }
  if ((b & 0xf0) == 0x90) {
    v->kind = MP_ARRAY;
    v->u = b & 0x0fu;
    return 0;
  }
  if ((b & 0xe0) == 0xa0) {
    v->kind = MP_STR;
    v->u = b & 0x1fu;
    goto body;
  }
  switch (b) {
  case 0xc0:
    v->kind = MP_NIL;
    return 0;
  case 0xc2:
  case 0xc3:
    v->kind = MP_BOOL;
    v->u = b == 0xc3;
    return 0;
  case 0xcc:
  case 0xcd:
  case 0xce:
  case 0xcf:
    n = 1 << (b - 0xcc);
    if (need(r, (size_t)n))
      return -1;
    v->kind = MP_UINT;
    v->u = be(r->p + r->pos, n);
    r->pos += (size_t)n;
    return 0;
  case 0xd0:
  case 0xd1:
  case 0xd2:
  case 0xd3:
    return rd_intn(r, v, 1 << (b - 0xd0));
  case 0xca:
  case 0xcb:
    return rd_floatn(r, v, b == 0xca ? 4 : 8);
  case 0xd9:
  case 0xda:
  case 0xdb:
    n = 1 << (b - 0xd9);
    v->kind = MP_STR;
    goto sized;
  case 0xc4:
  case 0xc5:
  case 0xc6:
    n = 1 << (b - 0xc4);
    v->kind = MP_BIN;
    goto sized;
  case 0xdc:
  case 0xdd:
  case 0xde:
  case 0xdf:
    n = (b & 1u) ? 4 : 2;
    if (need(r, (size_t)n))
      return -1;
    v->kind = b <= 0xdd ? MP_ARRAY : MP_MAP;
    v->u = be(r->p + r->pos, n);
    r->pos += (size_t)n;
    return 0;
  case 0xd4:
  case 0xd5:
  case 0xd6:
  case 0xd7:
  case 0xd8:
  case 0xc7:
  case 0xc8:
  case 0xc9:
    return rd_ext(r, v, b);
  default: /* 0xc1 is never used */
    return fail(r, PROTO_ERR_BAD_MESSAGE, "invalid msgpack byte");
  }
sized:
  if (need(r, (size_t)n))
    return -1;
  v->u = be(r->p + r->pos, n);
  r->pos += (size_t)n;
body:
  if (need(r, (size_t)v->u))
    return -1;
  v->s = r->p + r->pos;
  r->pos += (size_t)v->u;
  return 0;
}

/* Skips one whole value without recursion. */
int rd_skip(reader *r) {
  uint64_t left = 1;
  while (left > 0) {
    mp_val v;
    if (rd_val(r, &v))
      return -1;
    left--;
    if (v.kind == MP_ARRAY)
      left += v.u;
    else if (v.kind == MP_MAP)
      left += 2 * v.u;
    if (left > r->len - r->pos) /* every value takes at least one byte */
      return fail(r, PROTO_ERR_BAD_MESSAGE, "truncated");
  }
  return 0;
}

int bad(reader *r, const char *reason) { return fail(r, PROTO_ERR_BAD_FIELD, reason); }

/* The rd_* readers set their outputs on every path, failures included: fail()
 * is not inlined everywhere, so the compiler cannot tell that it returns -1,
 * and a caller's local would look unset on a "successful" failure (gcc -O3
 * -Wmaybe-uninitialized). */
int rd_uint(reader *r, uint64_t max, uint64_t *out) {
  mp_val v;
  *out = 0;
  if (rd_val(r, &v))
    return -1;
  if (v.kind == MP_INT)
    return bad(r, "out of range");
  if (v.kind != MP_UINT)
    return bad(r, "expected an integer");
  if (v.u > max)
    return bad(r, "out of range");
  *out = v.u;
  return 0;
}

int rd_u32(reader *r, uint32_t *out) {
  uint64_t u;
  if (rd_uint(r, UINT32_MAX, &u))
    return -1;
  *out = (uint32_t)u;
  return 0;
}

int rd_u64(reader *r, uint64_t *out) { return rd_uint(r, UINT64_MAX, out); }

int rd_int(reader *r, int64_t min, int64_t max, int64_t *out) {
  mp_val v;
  *out = 0;
  if (rd_val(r, &v))
    return -1;
  if (v.kind == MP_UINT) {
    if (v.u > (uint64_t)max)
      return bad(r, "out of range");
    *out = (int64_t)v.u;
    return 0;
  }
  if (v.kind != MP_INT)
    return bad(r, "expected an integer");
  if (v.i < min)
    return bad(r, "out of range");
  *out = v.i;
  return 0;
}

static int rd_number(reader *r, int sign, double *out);

int rd_float(reader *r, int sign, float *out) {
  double d;
  *out = 0.0f;
  if (rd_number(r, sign, &d))
    return -1;
  float f = (float)d;
  if (sign == NUM_POSITIVE && !(f > 0.0f))
    return bad(r, "must be > 0");
  *out = f;
  return 0;
}

/* A number as sent (integer, float32 or float64), checked as rd_float does, in double. */
static int rd_number(reader *r, int sign, double *out) {
  mp_val v;
  double d;
  *out = 0.0;
  if (rd_val(r, &v))
    return -1;
  if (v.kind == MP_UINT)
    d = (double)v.u;
  else if (v.kind == MP_INT)
    d = (double)v.i;
  else if (v.kind == MP_FLOAT)
    d = v.f;
  else
    return bad(r, "expected a number");
  if (!isfinite(d))
    return bad(r, "not finite");
  if (fabs(d) > (double)PROTO_MAX_ABS_FLOAT)
    return bad(r, "out of range");
  if (sign == NUM_NONNEG && d < 0.0)
    return bad(r, "must be >= 0");
  if (sign == NUM_POSITIVE && !(d > 0.0))
    return bad(r, "must be > 0");
  *out = d;
  return 0;
}

/* Reduced from the value as sent (a float64 keeps its digits), in double. */
int rd_angle(reader *r, float *out) {
  double a;
  if (rd_number(r, NUM_ANY, &a))
    return -1;
  *out = proto_wrap_angle_d(a);
  return 0;
}

int rd_bool(reader *r, uint8_t *out) {
  mp_val v;
  if (rd_val(r, &v))
    return -1;
  if (v.kind != MP_BOOL)
    return bad(r, "expected a boolean");
  *out = (uint8_t)v.u;
  return 0;
}

int rd_str(reader *r, size_t max, const uint8_t **s, size_t *n) {
  mp_val v;
  *s = NULL;
  *n = 0;
  if (rd_val(r, &v))
    return -1;
  if (v.kind != MP_STR)
    return bad(r, "expected a string");
  if (v.u > max)
    return bad(r, "string too long");
  *s = v.s;
  *n = (size_t)v.u;
  return 0;
}

/* Index of the string in names[0..count), or an error. */
int rd_enum(reader *r, const char *const *names, uint32_t count, uint8_t *out) {
  const uint8_t *s;
  size_t n;
  if (rd_str(r, 32, &s, &n))
    return -1;
  for (uint32_t i = 0; i < count; i++)
    if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0) {
      *out = (uint8_t)i;
      return 0;
    }
  return bad(r, "unknown value");
}

int rd_array(reader *r, uint32_t min, uint32_t max, uint32_t *count) {
  mp_val v;
  *count = 0;
  if (rd_val(r, &v))
    return -1;
  if (v.kind != MP_ARRAY)
    return bad(r, "expected an array");
  if (v.u < min)
    return bad(r, "too few elements");
  if (v.u > max)
    return bad(r, "too many elements");
  *count = (uint32_t)v.u;
  return 0;
}

int rd_point(reader *r, proto_vec2 *out) {
  uint32_t n;
  if (rd_array(r, 2, 2, &n))
    return -1;
  size_t old = path_push_index(r, 0);
  int rc = rd_float(r, NUM_ANY, &out->x);
  path_pop(r, old);
  if (rc)
    return -1;
  old = path_push_index(r, 1);
  rc = rd_float(r, NUM_ANY, &out->y);
  path_pop(r, old);
  return rc;
}

/* Walks a map of string keys: fn(r, key index, ctx) reads each known key's value
 * (the path already names it). Unknown keys: errors when strict, else skipped.
 * Duplicates are errors. Missing keys of required are errors. */
int rd_map(reader *r, const char *const *keys, int nkeys, uint32_t required, field_fn fn, void *ctx,
           uint32_t *seen_out) {
  mp_val v;
  uint32_t seen = 0;
  if (rd_val(r, &v))
    return -1;
  if (v.kind != MP_MAP)
    return bad(r, "expected a map");
  if (v.u > PROTO_MAX_MAP_ENTRIES)
    return bad(r, "too many entries");
  for (uint32_t e = 0; e < (uint32_t)v.u; e++) {
    mp_val k;
    if (rd_val(r, &k))
      return -1;
    if (k.kind != MP_STR)
      return bad(r, "key not a string");
    int idx = -1;
    for (int i = 0; i < nkeys; i++)
      if (strlen(keys[i]) == k.u && memcmp(keys[i], k.s, (size_t)k.u) == 0) {
        idx = i;
        break;
      }
    size_t old = path_push_bytes(r, (const char *)k.s, k.u > 32 ? 32 : (size_t)k.u, true);
    int rc;
    if (idx < 0)
      rc = r->strict ? bad(r, "unknown key") : rd_skip(r);
    else if (seen & (1u << idx))
      rc = bad(r, "duplicate key");
    else {
      seen |= 1u << idx;
      rc = fn(r, idx, ctx);
    }
    path_pop(r, old);
    if (rc)
      return -1;
  }
  uint32_t missing = required & ~seen;
  if (missing) {
    int i = 0;
    while (!(missing & (1u << i)))
      i++;
    return fail_at(r, keys[i], PROTO_ERR_BAD_FIELD, "missing");
  }
  if (seen_out)
    *seen_out = seen;
  return 0;
}

void reader_init(reader *r, const uint8_t *data, size_t len, proto_error_info *err, bool strict) {
  memset(err, 0, sizeof *err);
  err->reason = "";
  r->p = data;
  r->len = data ? len : 0;
  r->pos = 0;
  r->err = err;
  r->strict = strict;
  r->path_len = 0;
  r->path[0] = '\0';
}

/* Top level: size, array header, type. Returns the array length in *n. */
int rd_frame(reader *r, uint32_t *n, uint64_t *type) {
  mp_val v;
  if (r->len > PROTO_MAX_MESSAGE_BYTES)
    return fail(r, PROTO_ERR_TOO_LARGE, "message too large");
  if (r->len == 0)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "empty");
  if (rd_val(r, &v))
    return -1;
  if (v.kind != MP_ARRAY)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "not an array");
  if (v.u < 1 || v.u > 16)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "bad array length");
  *n = (uint32_t)v.u;
  size_t old = path_push(r, "type");
  if (rd_val(r, &v))
    return -1;
  if (v.kind != MP_UINT || v.u == 0)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "type is not a positive integer");
  path_pop(r, old);
  *type = v.u;
  return 0;
}

int rd_frame_u32(reader *r, const char *name, uint32_t *out) {
  size_t old = path_push(r, name);
  uint64_t u;
  mp_val v;
  if (rd_val(r, &v))
    return -1;
  if (v.kind != MP_UINT || v.u > UINT32_MAX)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "expected an unsigned 32-bit integer");
  u = v.u;
  path_pop(r, old);
  *out = (uint32_t)u;
  return 0;
}

int rd_end(reader *r) {
  if (r->pos != r->len)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "trailing bytes");
  return 0;
}

int finish(reader *r, int rc) {
  if (rc == 0)
    return 0;
  if (r->err->code == PROTO_OK) /* cannot happen; keep the contract */
    fail(r, PROTO_ERR_INTERNAL, "decoder error");
  return -r->err->code;
}

/* The body map: framing errors name "body"; field errors are relative to it. */
int rd_body(reader *r, const char *const *keys, int nkeys, uint32_t required, field_fn fn, void *ctx,
            uint32_t *seen) {
  if (need(r, 1)) { /* cut right after the request_id: the body is what was being read */
    if (r->err->field[0] == '\0')
      memcpy(r->err->field, "body", sizeof "body");
    return -1;
  }
  uint8_t b = r->p[r->pos];
  if (!((b & 0xf0) == 0x80 || b == 0xde || b == 0xdf)) {
    return fail_at(r, "body", PROTO_ERR_BAD_MESSAGE, "body is not a map");
  }
  if (rd_map(r, keys, nkeys, required, fn, ctx, seen) == 0)
    return 0;
  /* Faults of the body map itself (too many entries, a key that is not a
   * string, the packet ending between entries) name it. */
  if (r->err->field[0] == '\0')
    memcpy(r->err->field, "body", sizeof "body");
  return -1;
}

/* A top-level array element, named for errors. */
int rd_elem_uint(reader *r, const char *name, uint64_t max, uint64_t *out) {
  size_t old = path_push(r, name);
  int rc = rd_uint(r, max, out);
  path_pop(r, old);
  return rc;
}

/* The frame of a message that must be of one type with min..max elements
 * (their count in *n): UNKNOWN_TYPE (field "type") for another type,
 * BAD_MESSAGE for another count. */
int rd_frame_expect(reader *r, uint8_t want, uint32_t min, uint32_t max, uint32_t *n, const char *what) {
  uint64_t type;
  if (rd_frame(r, n, &type))
    return -1;
  if (type != want)
    return fail_at(r, "type", PROTO_ERR_UNKNOWN_TYPE, what);
  r->err->type = want;
  if (*n < min || *n > max)
    return fail(r, PROTO_ERR_BAD_MESSAGE, "wrong number of elements");
  return 0;
}

uint32_t proto_message_type(const uint8_t *data, size_t len) {
  proto_error_info scratch;
  reader r;
  mp_val v;
  reader_init(&r, data, len, &scratch, false);
  if (rd_val(&r, &v) || v.kind != MP_ARRAY || v.u < 1 || rd_val(&r, &v) || v.kind != MP_UINT ||
      v.u > UINT32_MAX)
    return 0;
  return (uint32_t)v.u;
}

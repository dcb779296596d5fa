/* persist.c: see persist.h. */
#include "persist.h"

#include <string.h>

#include "world.h"

#define HEADER_BYTES  24u
#define TRAILER_BYTES 8u
#define VERSION_1     1u
#define VERSION_2     2u

_Static_assert(HEADER_BYTES == STEERD_PERSIST_WORLD_AT, "the world follows the header");

typedef struct wr {
  uint8_t *p, *end;
  int ok;
} wr;

static void put(wr *w, const void *src, size_t n) {
  if (!w->ok || (size_t)(w->end - w->p) < n) {
    w->ok = 0;
    return;
  }
  memcpy(w->p, src, n);
  w->p += n;
}

static void put_u8(wr *w, uint8_t v) { put(w, &v, 1); }

static void put_u32(wr *w, uint32_t v) {
  uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  put(w, b, 4);
}

static void put_u64(wr *w, uint64_t v) {
  put_u32(w, (uint32_t)v);
  put_u32(w, (uint32_t)(v >> 32));
}

typedef struct rd {
  const uint8_t *p, *end;
  int ok;
} rd;

static const uint8_t *take(rd *r, size_t n) {
  if (!r->ok || (size_t)(r->end - r->p) < n) {
    r->ok = 0;
    return NULL;
  }
  const uint8_t *at = r->p;
  r->p += n;
  return at;
}

static uint8_t get_u8(rd *r) {
  const uint8_t *b = take(r, 1);
  return b ? b[0] : 0;
}

static uint32_t get_u32(rd *r) {
  const uint8_t *b = take(r, 4);
  return b ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24 : 0;
}

static uint64_t get_u64(rd *r) {
  uint64_t lo = get_u32(r);
  return lo | (uint64_t)get_u32(r) << 32;
}

static uint64_t fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* FNV-1a taking 8 bytes a step: each step is a bijection of the running value
 * and of the word, so a change confined to one word always shows. 8 times
 * fewer multiplications than bytewise FNV-1a (18 MB in a few ms). */
static uint64_t file_checksum(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)n;
  size_t i = 0;
  for (; n - i >= 8; i += 8)
    h = (h ^ le64(p + i)) * 0x100000001b3ull;
  for (; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static size_t name_len(const steerd_persist_owner *o) {
  size_t n = strnlen(o->name, STEERD_PERSIST_NAME_BYTES);
  return n;
}

static size_t server_bytes(const steerd_persist_server *st) {
  size_t n = 8;
  for (uint32_t i = 0; i < st->owner_count; i++)
    n += 4 + 1 + 1 + name_len(&st->owners[i]) + 4;
  n += 1;
  if (st->demo_on)
    n += 8 + 5 * 4 + 4 + 8 * 4;
  if (st->planner_len)
    n += 4 + st->planner_len;
  return n;
}

size_t steerd_persist_size(size_t world_len, const steerd_persist_server *st) {
  return HEADER_BYTES + world_len + server_bytes(st) + 8 + TRAILER_BYTES;
}

void steerd_persist_seal(uint8_t *buf, size_t len) {
  uint64_t h = file_checksum(buf, len - TRAILER_BYTES);
  for (int i = 0; i < 8; i++)
    buf[len - TRAILER_BYTES + (size_t)i] = (uint8_t)(h >> (8 * i));
}

size_t steerd_persist_encode(uint8_t *buf, size_t cap, const uint8_t *world, size_t world_len,
                             const steerd_persist_server *st, int seal) {
  wr w = {buf, buf + cap, 1};
  size_t sb = server_bytes(st);
  put(&w, "SDCK", 4);
  put_u32(&w, st->planner_len ? STEERD_PERSIST_VERSION : VERSION_2);
  put_u64(&w, world_len);
  put_u64(&w, sb);
  if (world == w.p && (size_t)(w.end - w.p) >= world_len) /* already in place */
    w.p += world_len;
  else
    put(&w, world, world_len);
  uint8_t *server_start = w.p;
  put_u32(&w, st->next_client_id);
  put_u32(&w, st->owner_count);
  for (uint32_t i = 0; i < st->owner_count; i++) {
    const steerd_persist_owner *o = &st->owners[i];
    size_t n = name_len(o);
    put_u32(&w, o->id);
    put_u8(&w, o->named);
    put_u8(&w, (uint8_t)n);
    put(&w, o->name, n);
    put_u32(&w, o->agents);
  }
  put_u8(&w, st->demo_on ? 1 : 0);
  if (st->demo_on) {
    const steerd_demo *d = &st->demo;
    put_u64(&w, d->rng.state);
    put_u32(&w, d->tagger);
    put_u32(&w, d->runner);
    put_u32(&w, d->swaps);
    put_u32(&w, d->cooldown);
    put_u32(&w, d->retargets);
    put_u32(&w, d->wanderer_count);
    for (int i = 0; i < 8; i++)
      put_u32(&w, d->wanderers[i]);
  }
  if (st->planner_len) {
    put_u32(&w, (uint32_t)st->planner_len);
    put(&w, st->planner, st->planner_len);
  }
  if (!w.ok || (size_t)(w.p - server_start) != sb)
    return 0;
  put_u64(&w, fnv1a(server_start, sb));
  put_u64(&w, 0); /* the file checksum */
  if (!w.ok)
    return 0;
  size_t len = (size_t)(w.p - buf);
  if (seal)
    steerd_persist_seal(buf, len);
  return len;
}

int steerd_persist_decode(const uint8_t *buf, size_t len, const uint8_t **world, size_t *world_len,
                          steerd_persist_server *st) {
  if (!buf || len < HEADER_BYTES || memcmp(buf, "SDCK", 4) != 0)
    return STEER_ECORRUPT;
  /* The checksum first: only an intact file's version word is believed. */
  size_t trailer = TRAILER_BYTES;
  if (len < HEADER_BYTES + 8 + TRAILER_BYTES ||
      file_checksum(buf, len - TRAILER_BYTES) != le64(buf + len - TRAILER_BYTES)) {
    if ((uint32_t)le64(buf + 4) != VERSION_1) /* the u32 version word */
      return STEER_ECORRUPT;
    trailer = 0; /* version 1 had no file checksum; its parts have their own */
  }
  rd r = {buf + 4, buf + len - trailer, 1};
  uint32_t version = get_u32(&r);
  if (trailer && version != VERSION_2 && version != STEERD_PERSIST_VERSION)
    return STEER_EVERSION;
  uint64_t wl = get_u64(&r), sl = get_u64(&r);
  if (!r.ok || wl > len || sl > len || HEADER_BYTES + wl + sl + 8 + trailer != len)
    return STEER_ECORRUPT;
  *world = take(&r, (size_t)wl);
  *world_len = (size_t)wl;
  const uint8_t *server = r.p;
  rd s = {server, server + sl, 1};
  r.p += sl;
  if (get_u64(&r) != fnv1a(server, (size_t)sl) || !r.ok)
    return STEER_ECORRUPT;

  st->next_client_id = get_u32(&s);
  uint32_t owners = get_u32(&s);
  if (!s.ok || (st->owners && owners > st->owner_cap))
    return STEER_ECORRUPT;
  st->owner_count = owners;
  for (uint32_t i = 0; i < owners; i++) {
    steerd_persist_owner scratch, *o = st->owners ? &st->owners[i] : &scratch;
    memset(o, 0, sizeof(*o));
    o->id = get_u32(&s);
    o->named = get_u8(&s);
    uint8_t n = get_u8(&s);
    const uint8_t *name = n <= STEERD_PERSIST_NAME_BYTES ? take(&s, n) : NULL;
    if (!name || o->id == 0 || o->named > 1 || memchr(name, 0, n))
      return STEER_ECORRUPT;
    memcpy(o->name, name, n);
    o->agents = get_u32(&s);
  }
  memset(&st->demo, 0, sizeof(st->demo));
  st->demo_on = get_u8(&s);
  if (st->demo_on > 1)
    return STEER_ECORRUPT;
  if (st->demo_on) {
    steerd_demo *d = &st->demo;
    d->rng.state = get_u64(&s);
    d->tagger = get_u32(&s);
    d->runner = get_u32(&s);
    d->swaps = get_u32(&s);
    d->cooldown = get_u32(&s);
    d->retargets = get_u32(&s);
    d->wanderer_count = get_u32(&s);
    for (int i = 0; i < 8; i++)
      d->wanderers[i] = get_u32(&s);
    if (d->wanderer_count > 8)
      return STEER_ECORRUPT;
  }
  st->planner = NULL;
  st->planner_len = 0;
  if (version == STEERD_PERSIST_VERSION) {
    uint32_t n = get_u32(&s);
    st->planner = n ? take(&s, n) : NULL;
    if (!st->planner) /* a version 3 file always has its planner part */
      return STEER_ECORRUPT;
    st->planner_len = n;
  }
  if (!s.ok || s.p != s.end || st->next_client_id == 0)
    return STEER_ECORRUPT;
  return STEER_OK;
}

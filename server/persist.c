/* persist.c: see persist.h. */
#include "persist.h"

#include <string.h>

#include "bytes.h"
#include "world.h"

#define HEADER_BYTES  24u
#define TRAILER_BYTES 8u
#define VERSION_1     1u
#define VERSION_2     2u

_Static_assert(HEADER_BYTES == STEERD_PERSIST_WORLD_AT, "the world follows the header");

/* FNV-1a taking 8 bytes a step: each step is a bijection of the running value
 * and of the word, so a change confined to one word always shows. 8 times
 * fewer multiplications than bytewise FNV-1a (18 MB in a few ms). */
static uint64_t file_checksum(const uint8_t *p, size_t n) {
  uint64_t h = STEER_FNV1A_OFFSET ^ (uint64_t)n;
  size_t i = 0;
  for (; n - i >= 8; i += 8)
    h = (h ^ steer_le64(p + i)) * STEER_FNV1A_PRIME;
  for (; i < n; i++)
    h = (h ^ p[i]) * STEER_FNV1A_PRIME;
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
  if (!buf)
    return 0;
  steer_wbuf w = steer_wbuf_make(buf, cap);
  size_t sb = server_bytes(st);
  steer_put_bytes(&w, "SDCK", 4);
  steer_put_u32(&w, st->planner_len ? STEERD_PERSIST_VERSION : VERSION_2);
  steer_put_u64(&w, world_len);
  steer_put_u64(&w, sb);
  if (world == buf + w.pos && w.cap - w.pos >= world_len) /* already in place */
    w.pos += world_len;
  else
    steer_put_bytes(&w, world, world_len);
  size_t server_start = w.pos;
  steer_put_u32(&w, st->next_client_id);
  steer_put_u32(&w, st->owner_count);
  for (uint32_t i = 0; i < st->owner_count; i++) {
    const steerd_persist_owner *o = &st->owners[i];
    size_t n = name_len(o);
    steer_put_u32(&w, o->id);
    steer_put_u8(&w, o->named);
    steer_put_u8(&w, (uint8_t)n);
    steer_put_bytes(&w, o->name, n);
    steer_put_u32(&w, o->agents);
  }
  steer_put_u8(&w, st->demo_on ? 1 : 0);
  if (st->demo_on) {
    const steerd_demo *d = &st->demo;
    steer_put_u64(&w, d->rng.state);
    steer_put_u32(&w, d->tagger);
    steer_put_u32(&w, d->runner);
    steer_put_u32(&w, d->swaps);
    steer_put_u32(&w, d->cooldown);
    steer_put_u32(&w, d->retargets);
    steer_put_u32(&w, d->wanderer_count);
    for (int i = 0; i < 8; i++)
      steer_put_u32(&w, d->wanderers[i]);
  }
  if (st->planner_len) {
    steer_put_u32(&w, (uint32_t)st->planner_len);
    steer_put_bytes(&w, st->planner, st->planner_len);
  }
  if (w.overflowed || w.pos - server_start != sb)
    return 0;
  steer_put_u64(&w, steer_fnv1a(STEER_FNV1A_OFFSET, buf + server_start, sb));
  steer_put_u64(&w, 0); /* the file checksum */
  if (w.overflowed)
    return 0;
  size_t len = w.pos;
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
      file_checksum(buf, len - TRAILER_BYTES) != steer_le64(buf + len - TRAILER_BYTES)) {
    if ((uint32_t)steer_le64(buf + 4) != VERSION_1) /* the u32 version word */
      return STEER_ECORRUPT;
    trailer = 0; /* version 1 had no file checksum; its parts have their own */
  }
  steer_rbuf r = steer_rbuf_make(buf, len - trailer);
  r.pos = 4;
  uint32_t version = steer_get_u32(&r);
  if (trailer && version != VERSION_2 && version != STEERD_PERSIST_VERSION)
    return STEER_EVERSION;
  uint64_t wl = steer_get_u64(&r), sl = steer_get_u64(&r);
  if (r.bad || wl > len || sl > len || HEADER_BYTES + wl + sl + 8 + trailer != len)
    return STEER_ECORRUPT;
  *world = steer_take(&r, (size_t)wl);
  *world_len = (size_t)wl;
  const uint8_t *server = steer_take(&r, (size_t)sl);
  steer_rbuf s = steer_rbuf_make(server, (size_t)sl);
  if (steer_get_u64(&r) != steer_fnv1a(STEER_FNV1A_OFFSET, server, (size_t)sl) || r.bad)
    return STEER_ECORRUPT;

  st->next_client_id = steer_get_u32(&s);
  uint32_t owners = steer_get_u32(&s);
  if (s.bad || (st->owners && owners > st->owner_cap))
    return STEER_ECORRUPT;
  st->owner_count = owners;
  for (uint32_t i = 0; i < owners; i++) {
    steerd_persist_owner scratch, *o = st->owners ? &st->owners[i] : &scratch;
    memset(o, 0, sizeof(*o));
    o->id = steer_get_u32(&s);
    o->named = steer_get_u8(&s);
    uint8_t n = steer_get_u8(&s);
    const uint8_t *name = n <= STEERD_PERSIST_NAME_BYTES ? steer_take(&s, n) : NULL;
    if (!name || o->id == 0 || o->named > 1 || memchr(name, 0, n))
      return STEER_ECORRUPT;
    memcpy(o->name, name, n);
    o->agents = steer_get_u32(&s);
  }
  memset(&st->demo, 0, sizeof(st->demo));
  st->demo_on = steer_get_u8(&s);
  if (st->demo_on > 1)
    return STEER_ECORRUPT;
  if (st->demo_on) {
    steerd_demo *d = &st->demo;
    d->rng.state = steer_get_u64(&s);
    d->tagger = steer_get_u32(&s);
    d->runner = steer_get_u32(&s);
    d->swaps = steer_get_u32(&s);
    d->cooldown = steer_get_u32(&s);
    d->retargets = steer_get_u32(&s);
    d->wanderer_count = steer_get_u32(&s);
    for (int i = 0; i < 8; i++)
      d->wanderers[i] = steer_get_u32(&s);
    if (d->wanderer_count > 8)
      return STEER_ECORRUPT;
  }
  st->planner = NULL;
  st->planner_len = 0;
  if (version == STEERD_PERSIST_VERSION) {
    uint32_t n = steer_get_u32(&s);
    st->planner = n ? steer_take(&s, n) : NULL;
    if (!st->planner) /* a version 3 file always has its planner part */
      return STEER_ECORRUPT;
    st->planner_len = n;
  }
  if (s.bad || s.pos != s.len || st->next_client_id == 0)
    return STEER_ECORRUPT;
  return STEER_OK;
}

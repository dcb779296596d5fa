/* fuzz_state.c: libFuzzer target for the state-file loader: the server's
 * restore path, steerd_persist_decode then steer_world_load (server/persist.h,
 * server/core/world.h).
 *
 * Each input is a state file. It is decoded as it is, and then again with its
 * checksums repaired (the core's trailer of the world bytes, the FNV-1a of the
 * server bytes, the file checksum) so that mutations reach the parsers
 * instead of stopping at a checksum. A file that loads must save back byte for
 * byte: the world's bytes from steer_world_save, the whole file from
 * steerd_persist_encode (a version 1 file: all but its version word and the
 * file checksum it lacks); the loaded world must take a step; a decode with
 * room for the owners must agree with the counting one. Errors are only
 * STEER_ECORRUPT and STEER_EVERSION, and a file whose checksum was broken is
 * never "version not supported". A version 3 file's planner part must load
 * onto the loaded world or be refused (STEER_ECORRUPT, STEER_EVERSION), save
 * back byte for byte when it loads, and the planner must serve a tick. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "persist.h"
#include "planner.h"
#include "world.h"

/* The core's checksum is file-local to world_state.c: the target compiles it
 * here instead of linking it, to repair world trailers. */
#include "world_state.c"

#define HEADER  STEERD_PERSIST_WORLD_AT
#define TRAILER 8u

static uint64_t rd64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static void wr64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* FNV-1a 64 of the server bytes (persist.h), written independently. */
static uint64_t fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/* Repairs what it can find of a version 2 layout; returns 1 if it did. */
static int repair(uint8_t *buf, size_t len) {
  if (len < HEADER + 8 + TRAILER || memcmp(buf, "SDCK", 4) != 0)
    return 0;
  uint64_t wl = rd64(buf + 8), sl = rd64(buf + 16);
  if (wl > len || sl > len || HEADER + wl + sl + 8 + TRAILER != len)
    return 0;
  uint8_t *world = buf + HEADER, *server = world + wl;
  if (wl >= STATE_TRAILER)
    wr64(world + wl - STATE_TRAILER, state_checksum(world, (size_t)wl - STATE_TRAILER));
  wr64(server + sl, fnv1a(server, (size_t)sl));
  steerd_persist_seal(buf, len);
  return 1;
}

/* Loads the image; if it loads, checks the round trip. Returns the error. */
static int load_and_check(const uint8_t *buf, size_t len) {
  const uint8_t *world_bytes = NULL;
  size_t world_len = 0;
  steerd_persist_server head;
  memset(&head, 0, sizeof(head));
  int rc = steerd_persist_decode(buf, len, &world_bytes, &world_len, &head);
  FUZZ_CHECK(rc == STEER_OK || rc == STEER_ECORRUPT || rc == STEER_EVERSION);
  if (rc != STEER_OK)
    return rc;
  FUZZ_CHECK(world_bytes >= buf && world_len <= len && (size_t)(world_bytes - buf) + world_len <= len);
  FUZZ_CHECK(head.next_client_id != 0 && head.demo_on <= 1);
  /* The second pass, with room for the owners: the same answer. */
  steerd_persist_server st;
  memset(&st, 0, sizeof(st));
  st.owner_cap = head.owner_count;
  st.owners = calloc(head.owner_count ? head.owner_count : 1, sizeof(*st.owners));
  FUZZ_CHECK(st.owners != NULL);
  const uint8_t *wb2;
  size_t wl2;
  FUZZ_CHECK(steerd_persist_decode(buf, len, &wb2, &wl2, &st) == STEER_OK);
  FUZZ_CHECK(wb2 == world_bytes && wl2 == world_len && st.owner_count == head.owner_count);
  FUZZ_CHECK(st.next_client_id == head.next_client_id && st.demo_on == head.demo_on);
  FUZZ_CHECK(memcmp(&st.demo, &head.demo, sizeof(st.demo)) == 0);
  for (uint32_t i = 0; i < st.owner_count; i++)
    FUZZ_CHECK(st.owners[i].id != 0 && st.owners[i].named <= 1 &&
               memchr(st.owners[i].name, 0, sizeof(st.owners[i].name)) != NULL);

  int err = 0;
  steer_world *w = steer_world_load(world_bytes, world_len, &err);
  if (!w) {
    FUZZ_CHECK(err == STEER_ECORRUPT || err == STEER_EVERSION || err == STEER_ENOMEM);
    free(st.owners);
    return err;
  }
  /* The world saves back byte for byte, and so does the file; a world of
   * the older format still read saves as the current one, which loads as
   * the same world. */
  uint32_t format = (uint32_t)world_bytes[4] | (uint32_t)world_bytes[5] << 8 |
                    (uint32_t)world_bytes[6] << 16 | (uint32_t)world_bytes[7] << 24;
  int older = format != STEER_STATE_VERSION;
  size_t n = steer_world_state_size(w);
  FUZZ_CHECK(older || n == world_len);
  size_t cap = steerd_persist_size(n, &st);
  uint8_t *out = malloc(cap);
  FUZZ_CHECK(out != NULL);
  size_t saved = 0;
  FUZZ_CHECK(steer_world_save(w, out + HEADER, cap - HEADER, &saved) == STEER_OK && saved == n);
  if (older) {
    steer_world *again = steer_world_load(out + HEADER, n, NULL);
    FUZZ_CHECK(again != NULL && steer_world_hash(again) == steer_world_hash(w));
    steer_world_destroy(again);
  } else {
    FUZZ_CHECK(memcmp(out + HEADER, world_bytes, n) == 0);
  }
  size_t flen = steerd_persist_encode(out, cap, out + HEADER, n, &st, 1);
  FUZZ_CHECK(flen == cap);
  int v1 = (uint32_t)rd64(buf + 4) == 1u; /* the version word */
  if (!older && !v1) {                    /* (an older world is longer now: compared above) */
    FUZZ_CHECK(flen == len && memcmp(out, buf, len) == 0);
  } else if (!older) {
    FUZZ_CHECK(flen == len + TRAILER);
    FUZZ_CHECK(memcmp(out, buf, 4) == 0 && memcmp(out + 8, buf + 8, len - 8) == 0);
  }
  /* The planner part (version 3) loads onto the world or is refused; once
   * loaded it saves back byte for byte and serves its queue. */
  steer_planner_config pc = steer_default_planner_config();
  steer_planner *p = steer_planner_create(w, &pc);
  FUZZ_CHECK(p != NULL);
  if (st.planner_len) {
    int prc = steer_planner_load(p, st.planner, st.planner_len);
    FUZZ_CHECK(prc == STEER_OK || prc == STEER_ECORRUPT || prc == STEER_EVERSION || prc == STEER_ENOMEM);
    if (prc == STEER_OK) {
      /* The current version saves back byte for byte; an older one (version 1,
       * without the radius classes' state) saves as the current version, and
       * that in turn loads and saves back byte for byte. */
      uint32_t pver = (uint32_t)st.planner[4] | (uint32_t)st.planner[5] << 8 | (uint32_t)st.planner[6] << 16 |
                      (uint32_t)st.planner[7] << 24;
      size_t pn = steer_planner_state_size(p);
      uint8_t *pb = malloc(pn);
      FUZZ_CHECK(pb != NULL);
      FUZZ_CHECK(steer_planner_save(p, pb, pn, NULL) == STEER_OK);
      if (pver == STEER_PLANNER_STATE_VERSION) {
        FUZZ_CHECK(pn == st.planner_len && memcmp(pb, st.planner, pn) == 0);
      } else {
        steer_planner *q = steer_planner_create(w, &pc);
        FUZZ_CHECK(q != NULL);
        FUZZ_CHECK(steer_planner_load(q, pb, pn) == STEER_OK && steer_planner_state_size(q) == pn);
        uint8_t *qb = malloc(pn);
        FUZZ_CHECK(qb != NULL);
        FUZZ_CHECK(steer_planner_save(q, qb, pn, NULL) == STEER_OK && memcmp(qb, pb, pn) == 0);
        free(qb);
        steer_planner_destroy(q);
      }
      free(pb);
    }
  }
  /* And it runs. */
  uint64_t tick = steer_world_tick(w);
  steer_planner_update(p, w);
  steer_world_step(w, 1.0f / 30.0f);
  steer_planner_observe(p, w);
  FUZZ_CHECK(steer_world_tick(w) == tick + 1);
  steer_planner_destroy(p);
  free(out);
  steer_world_destroy(w);
  free(st.owners);
  return STEER_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  load_and_check(data, size);
  uint8_t *buf = malloc(size ? size : 1);
  FUZZ_CHECK(buf != NULL);
  memcpy(buf, data, size);
  if (repair(buf, size)) {
    load_and_check(buf, size);
    /* A broken file checksum is corruption, whatever the version word says. */
    buf[size - 1] ^= 0x5a;
    int rc = load_and_check(buf, size);
    FUZZ_CHECK(rc != STEER_EVERSION);
  }
  free(buf);
  return 0;
}

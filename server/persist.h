/* persist.h: what a checkpoint file holds beyond the world: who owns which
 * agents (so a client that comes back after a restart owns them again) and the
 * demo's own state (so the demo goes on as if nothing happened).
 *
 * File layout, version 2 (all little-endian):
 *   "SDCK", u32 version (2), u64 world bytes W, u64 server bytes S,
 *   W bytes of steer_world_save() (checksummed by the core),
 *   S bytes of server state, u64 FNV-1a of the S bytes,
 *   u64 file checksum: FNV-1a over the 8-byte words (then the tail bytes) of
 *   everything before it, the length mixed in.
 * The file checksum is checked before any field is trusted, the version
 * included: a damaged file is STEER_ECORRUPT, and only an intact file of
 * another version is STEER_EVERSION (later versions keep the magic, the
 * version word and the trailing checksum). Version 1 is version 2 without the
 * file checksum; it is still read (then the version word is only trusted as
 * 1, any other value with a bad file checksum is corruption).
 * Server state: u32 next_client_id, u32 owners, per owner {u32 id, u8 named,
 * u8 name length, name bytes, u32 agents}, u8 demo on, and if on {u64 rng,
 * u32 tagger, runner, swaps, cooldown, retargets, u32 wanderers, 8 x u32}.
 * Version 3 is version 2 with the GOTO planner's state after the demo part:
 * u32 P (> 0), then P bytes of steer_planner_save() (checked by
 * steer_planner_load). A server with no agent in GOTO and no plan waiting
 * writes version 2. The world inside has its own format word
 * (STEER_STATE_VERSION, world_state.c).
 * Pure: no I/O (server/checkpoint.c reads and writes files). */
#ifndef STEERD_PERSIST_H
#define STEERD_PERSIST_H

#include <stddef.h>
#include <stdint.h>

#include "demo.h"

#define STEERD_PERSIST_VERSION    3u  /* written only with a planner part (else 2) */
#define STEERD_PERSIST_WORLD_AT   24u /* offset of the world bytes in the file */
#define STEERD_PERSIST_NAME_BYTES 64

typedef struct steerd_persist_owner {
  uint32_t id;
  uint8_t named; /* a token's name: the same name owns these agents again */
  char name[STEERD_PERSIST_NAME_BYTES + 1];
  uint32_t agents;
} steerd_persist_owner;

typedef struct steerd_persist_server {
  uint32_t next_client_id;
  uint32_t owner_count;
  steerd_persist_owner *owners; /* encode: the owners; decode: the caller's array, or NULL
                                   to learn owner_count first */
  uint32_t owner_cap;           /* decode: its capacity */
  int demo_on;
  steerd_demo demo; /* decode fills the fields listed above; the rest is zero */
  /* The GOTO planner's state (version 3); 0 bytes: none (version 2). Decode
   * points into the image. */
  const uint8_t *planner;
  size_t planner_len;
} steerd_persist_server;

/* Bytes steerd_persist_encode will write. */
size_t steerd_persist_size(size_t world_len, const steerd_persist_server *st);

/* Writes the file image into buf (cap bytes); returns the length or 0 if short.
 * world may already sit at buf + STEERD_PERSIST_WORLD_AT (steer_world_save
 * straight into the file buffer): it is then not copied. With seal 0 the file
 * checksum is left for steerd_persist_seal (it can run on another thread). */
size_t steerd_persist_encode(uint8_t *buf, size_t cap, const uint8_t *world, size_t world_len,
                             const steerd_persist_server *st, int seal);

/* Writes the file checksum into the last 8 bytes of an image of len bytes. */
void steerd_persist_seal(uint8_t *buf, size_t len);

/* Splits a file image: *world points into buf. Returns 0, or STEER_ECORRUPT /
 * STEER_EVERSION (the world bytes are checked by steer_world_load, not here). */
int steerd_persist_decode(const uint8_t *buf, size_t len, const uint8_t **world, size_t *world_len,
                          steerd_persist_server *st);

#endif /* STEERD_PERSIST_H */

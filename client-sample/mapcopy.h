/* mapcopy.h: a client's copy of the server's map, kept in sync from MAP and
 * MAP_CHANGED (PROTOCOL.md 17.2): the obstacles in the server's order, with
 * the server's float32 coordinates, so the copy is the server's map bit for bit.
 *
 * MAP parts of one version are collected in order (channel 0 is reliable and
 * ordered); part 0 of any version starts a collection afresh (the server
 * restarts its parts when the map changes under them). Once every part is in,
 * the copy holds that version; MAP_CHANGED of version + 1 is applied (removals,
 * then additions at the end), an older version is ignored, a newer one is a gap:
 * the copy stops being current until the next complete MAP (a client asks for
 * one by sending HELLO again).
 *
 * Sized at create (obstacles and points); a map that does not fit is counted
 * and not held. Nothing allocates after create. */
#ifndef STEERD_MAPCOPY_H
#define STEERD_MAPCOPY_H

#include <stdint.h>

#include "map_msg.h"

typedef struct steerd_mapcopy steerd_mapcopy;

typedef enum steerd_mapcopy_result {
  STEERD_MAPCOPY_PENDING = 0, /* a MAP part taken; more to come */
  STEERD_MAPCOPY_COMPLETE,    /* the last part of a MAP: the copy is current */
  STEERD_MAPCOPY_CHANGED,     /* a MAP_CHANGED applied */
  STEERD_MAPCOPY_IGNORED,     /* an old MAP_CHANGED, or MAP_CHANGED while no map is held */
  STEERD_MAPCOPY_GAP,         /* a MAP_CHANGED beyond the next version: not current any more */
  STEERD_MAPCOPY_OVERFLOW,    /* more obstacles or points than the copy was sized for */
  STEERD_MAPCOPY_BAD          /* a part out of order or inconsistent with its collection */
} steerd_mapcopy_result;

steerd_mapcopy *steerd_mapcopy_create(uint32_t max_obstacles, uint32_t max_points);
void steerd_mapcopy_destroy(steerd_mapcopy *m); /* accepts NULL */

/* One decoded MAP part (obs[0..count)) or MAP_CHANGED. */
steerd_mapcopy_result steerd_mapcopy_part(steerd_mapcopy *m, const proto_map_header *h,
                                          const proto_obstacle *obs, uint32_t count);
steerd_mapcopy_result steerd_mapcopy_changed(steerd_mapcopy *m, const proto_map_changed *c);

/* 1 when the copy is a complete map at steerd_mapcopy_version(). */
int steerd_mapcopy_current(const steerd_mapcopy *m);
uint32_t steerd_mapcopy_version(const steerd_mapcopy *m);
uint32_t steerd_mapcopy_count(const steerd_mapcopy *m);
/* The i-th obstacle in the server's order; its points stay valid until the copy changes. */
proto_obstacle steerd_mapcopy_get(const steerd_mapcopy *m, uint32_t i);
/* For proto_encode_map and the like: ctx is the copy. */
proto_obstacle steerd_mapcopy_at(const void *ctx, uint32_t i);

#endif /* STEERD_MAPCOPY_H */

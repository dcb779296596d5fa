/* demo.h: a demo world where NPCs exercise every behaviour of the core.
 *
 * Used by the server's default run and by the headless demo. The demo keeps its
 * world lively: arrivals get a new goal when they arrive, and the pursuer and the
 * evader swap roles when one catches the other. */
#ifndef STEERD_DEMO_H
#define STEERD_DEMO_H

#include <stdint.h>

#include "world.h"

#define STEERD_DEMO_OWNER        0u /* owner tag of the demo's agents (the server itself) */
#define STEERD_DEMO_MAX_GROUPS   16
#define STEERD_DEMO_TAG_COOLDOWN 90 /* updates (3 s at 30 Hz) */

/* Agents the demo created, by what they show. */
typedef struct steerd_demo_group {
  const char *name;
  uint32_t first, count; /* range in steerd_demo.ids */
} steerd_demo_group;

typedef struct steerd_demo {
  steer_rng rng;
  vec2 min, max;     /* m, the demo's area */
  steer_id tagger;   /* currently pursuing */
  steer_id runner;   /* currently evading */
  uint32_t swaps;    /* times tagger and runner swapped */
  uint32_t cooldown; /* updates until the new tagger gives chase */
  uint32_t retargets;
  steer_id wanderers[8]; /* kept near the centre by a leash */
  uint32_t wanderer_count;
  steer_id ids[128];
  uint32_t id_count;
  steerd_demo_group groups[STEERD_DEMO_MAX_GROUPS];
  uint32_t group_count;
} steerd_demo;

/* Populates w around the origin (needs bounds of at least +-60 m). Returns 0 or a
 * steer_error. */
int steerd_demo_create(steerd_demo *d, steer_world *w, uint64_t seed);

/* After the demo's state was restored from a checkpoint (rng, tagger, runner,
 * cooldown, wanderers): sets what is constant so updates go on. */
void steerd_demo_resume(steerd_demo *d);

/* Call after each step with the step's events. */
void steerd_demo_update(steerd_demo *d, steer_world *w, const steer_event *events, uint32_t count);

#endif /* STEERD_DEMO_H */

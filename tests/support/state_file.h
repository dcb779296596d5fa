/* state_file.h: a state file of a big world made with the core, so a test or
 * benchmark starts the real server (--state) with N agents at once instead of
 * spawning them one command at a time (100 000 SPAWNs take a minute or more
 * on a busy 2-core box). */
#ifndef STATE_FILE_H
#define STATE_FILE_H

#include <stdint.h>

#include "world.h"

/* Writes to path a world of n wandering kinematic agents on a grid, about
 * 10 m^2 each, in a square centred on the origin whose half side goes to
 * *half_m (may be NULL), stepped once; the world holds up to capacity agents
 * (0: n; a restored world keeps its own). 0, or -1 on failure. */
int steerd_test_write_state(const char *path, uint32_t n, uint32_t capacity, float *half_m);

/* The same world as a file of version 1 (no file checksum): what servers from
 * before version 2 read. */
int steerd_test_write_state_v1(const char *path, uint32_t n, uint32_t capacity, float *half_m);

/* A copy of w through its state bytes (save, then load), as a checkpoint
 * restores it; NULL on failure. */
steer_world *steerd_test_copy_world(const steer_world *w);

#endif /* STATE_FILE_H */

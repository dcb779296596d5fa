/* world_fixture.c: see world_fixture.h. */
#include "world_fixture.h"

#include <check.h>

#include "crowd_scenes.h"

steer_world *make_world(uint32_t max_agents, float half, uint64_t seed) {
  steer_world *w = crowd_world(max_agents, half, seed);
  ck_assert_ptr_nonnull(w);
  return w;
}

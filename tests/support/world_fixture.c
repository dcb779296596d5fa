/* world_fixture.c: see world_fixture.h. */
#include "world_fixture.h"

#include <check.h>

steer_world *make_world(uint32_t max_agents, float half, uint64_t seed) {
  steer_world_config c = steer_default_world_config();
  c.max_agents = max_agents;
  c.max_events = 3 * max_agents;
  c.min = v2(-half, -half);
  c.max = v2(half, half);
  c.cell_size = 4.0f;
  c.seed = seed;
  steer_world *w = steer_world_create(&c);
  ck_assert_ptr_nonnull(w);
  return w;
}

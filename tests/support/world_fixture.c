/* world_fixture.c: see world_fixture.h. */
#include "world_fixture.h"

#include <check.h>

#include "crowd_scenes.h"

steer_world *make_world(uint32_t max_agents, float half, uint64_t seed) {
  steer_world *w = crowd_world(max_agents, half, seed);
  ck_assert_ptr_nonnull(w);
  return w;
}

float worst_overlap(const steer_world *w, int *outside) {
  const steer_world_config *c = steer_world_get_config(w);
  steer_world_view v = steer_world_get_view(w);
  *outside = 0;
  for (uint32_t i = 0; i < v.count; i++)
    if (v.px[i] < c->min.x || v.px[i] > c->max.x || v.py[i] < c->min.y || v.py[i] > c->max.y)
      *outside = 1;
  return crowd_deepest(w);
}

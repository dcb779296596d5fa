/* netcode_world.c: see netcode_world.h. */
#include "netcode_world.h"

#include <check.h>

steer_world *netcode_world_create(netcode_world *nw, uint64_t world_seed) {
  steer_world_config wc = steer_default_world_config();
  wc.max_agents = nw->capacity;
  wc.min = v2(-nw->half, -nw->half);
  wc.max = v2(nw->half, nw->half);
  wc.seed = world_seed;
  steer_world *w = steer_world_create(&wc);
  ck_assert_ptr_nonnull(w);
  nw->nids = 0;
  return w;
}

uint32_t netcode_world_rnd(netcode_world *nw) {
  nw->rng ^= nw->rng << 13;
  nw->rng ^= nw->rng >> 7;
  nw->rng ^= nw->rng << 17;
  return (uint32_t)(nw->rng >> 16);
}

float netcode_world_rndf(netcode_world *nw, float lo, float hi) {
  return lo + (hi - lo) * (float)(netcode_world_rnd(nw) & 0xffffff) / 16777216.0f;
}

vec2 netcode_world_point(netcode_world *nw) {
  /* One expression, as the tests had it: the compiler picks which draw comes first. */
  return v2(netcode_world_rndf(nw, -nw->half + 1, nw->half - 1),
            netcode_world_rndf(nw, -nw->half + 1, nw->half - 1));
}

void netcode_world_spawn_one(netcode_world *nw, steer_world *w) {
  if (nw->nids >= nw->capacity - 1)
    return;
  steer_agent_desc d = steer_default_agent_desc();
  d.model = (uint8_t)(netcode_world_rnd(nw) % STEER_MODEL_COUNT);
  d.state.position = netcode_world_point(nw);
  d.state.orientation = netcode_world_rndf(nw, -3.1f, 3.1f);
  d.limits.max_speed = netcode_world_rndf(nw, 0.5f, 4.0f);
  d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
  steer_id id;
  if (steer_world_spawn(w, &d, 1, &id) == STEER_OK)
    nw->ids[nw->nids++] = id;
}

void netcode_world_despawn_one(netcode_world *nw, steer_world *w) {
  if (nw->nids == 0)
    return;
  uint32_t i = netcode_world_rnd(nw) % nw->nids;
  ck_assert_int_eq(steer_world_despawn(w, nw->ids[i]), STEER_OK);
  nw->ids[i] = nw->ids[--nw->nids];
}

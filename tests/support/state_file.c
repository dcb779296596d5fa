/* state_file.c: see state_file.h. */
#include "state_file.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "persist.h"
#include "world.h"

static int write_state(const char *path, uint32_t n, uint32_t capacity, float *half_m, int v1) {
  steer_world_config wc = steer_default_world_config();
  float half = (float)ceil(sqrt((double)n * 10.0) / 2.0) + 10.0f;
  wc.max_agents = capacity > n ? capacity : n ? n : 1;
  wc.min = v2(-half, -half);
  wc.max = v2(half, half);
  steer_world *w = steer_world_create(&wc);
  if (!w)
    return -1;
  uint32_t side = (uint32_t)ceil(sqrt((double)n));
  float step = side ? 2.0f * (half - 10.0f) / (float)side : 0.0f;
  for (uint32_t i = 0; i < n; i++) {
    steer_agent_desc d = steer_default_agent_desc();
    d.model = STEER_MODEL_KINEMATIC;
    d.state.position = v2(-half + 10.0f + step * (float)(i % side), -half + 10.0f + step * (float)(i / side));
    d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
    if (steer_world_spawn(w, &d, 0, NULL) != STEER_OK) {
      steer_world_destroy(w);
      return -1;
    }
  }
  steer_world_step(w, 1.0f / 30.0f);
  size_t world_len = steer_world_state_size(w);
  steerd_persist_server st;
  memset(&st, 0, sizeof(st));
  st.next_client_id = 1;
  size_t cap = steerd_persist_size(world_len, &st);
  uint8_t *buf = malloc(cap);
  size_t len = 0;
  int rc = -1;
  char err[256];
  if (buf &&
      steer_world_save(w, buf + STEERD_PERSIST_WORLD_AT, cap - STEERD_PERSIST_WORLD_AT, &world_len) == 0 &&
      (len = steerd_persist_encode(buf, cap, buf + STEERD_PERSIST_WORLD_AT, world_len, &st, 1)) > 0 &&
      (!v1 || (buf[4] = 1, len -= 8, 1)) && /* version 1: no file checksum */
      steerd_checkpoint_write(path, buf, len, err, sizeof(err)) == STEERD_CHECKPOINT_OK)
    rc = 0;
  free(buf);
  steer_world_destroy(w);
  if (rc == 0 && half_m)
    *half_m = half;
  return rc;
}

int steerd_test_write_state(const char *path, uint32_t n, uint32_t capacity, float *half_m) {
  return write_state(path, n, capacity, half_m, 0);
}

int steerd_test_write_state_v1(const char *path, uint32_t n, uint32_t capacity, float *half_m) {
  return write_state(path, n, capacity, half_m, 1);
}

steer_world *steerd_test_copy_world(const steer_world *w) {
  size_t len = steer_world_state_size(w);
  uint8_t *buf = malloc(len);
  steer_world *c =
      buf && steer_world_save(w, buf, len, NULL) == STEER_OK ? steer_world_load(buf, len, NULL) : NULL;
  free(buf);
  return c;
}

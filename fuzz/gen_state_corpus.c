/* gen_state_corpus.c: writes the seed corpus of fuzz_state (state files) into
 * the directory given, default fuzz/corpus/fuzz_state:
 *   seed_empty       a world without agents, no owners
 *   seed_mixed       agents of every model and behaviour, paths (shared and
 *                    owned), despawned slots (free ring, free path stack),
 *                    obstacles of each kind,
 *                    named and anonymous owners, some steps taken
 *   seed_demo        the demo world with the demo's state on
 *   seed_v1          seed_mixed as a version 1 file (no file checksum)
 *   seed_goto        two rooms and a door, agents in GOTO (point and agent
 *                    targets, followed routes, plans still queued, one left
 *                    GOTO while queued): a version 3 file with a planner part
 * Every file is small (under fuzz.sh's -max_len of 16384 bytes). Built with
 * the fuzz targets: build-fuzz/fuzz/gen_state_corpus [DIR]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"
#include "persist.h"
#include "planner.h"
#include "world.h"

static int write_file(const char *dir, const char *name, const uint8_t *data, size_t len) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, len, f) != len) {
    fprintf(stderr, "gen_state_corpus: cannot write %s\n", path);
    if (f)
      fclose(f);
    return -1;
  }
  fclose(f);
  printf("%s: %zu bytes\n", path, len);
  return 0;
}

/* The file image of w and st (version 2, 3 with a planner part, or 1 when v1). */
static int save(const char *dir, const char *name, const steer_world *w, const steerd_persist_server *st,
                int v1) {
  size_t wl = steer_world_state_size(w);
  size_t cap = steerd_persist_size(wl, st);
  uint8_t *buf = malloc(cap);
  size_t len = 0;
  int rc = -1;
  if (buf &&
      steer_world_save(w, buf + STEERD_PERSIST_WORLD_AT, cap - STEERD_PERSIST_WORLD_AT, &wl) == STEER_OK &&
      (len = steerd_persist_encode(buf, cap, buf + STEERD_PERSIST_WORLD_AT, wl, st, 1)) > 0) {
    if (v1) {
      buf[4] = 1; /* version 1 is version 2 without the file checksum */
      len -= 8;
    }
    rc = write_file(dir, name, buf, len);
  }
  free(buf);
  return rc;
}

static steer_world *small_world(uint32_t max_agents, float half) {
  steer_world_config wc = steer_default_world_config();
  wc.max_agents = max_agents;
  wc.max_path_points = 8;
  wc.min = v2(-half, -half);
  wc.max = v2(half, half);
  wc.seed = 7;
  return steer_world_create(&wc);
}

static int mixed(const char *dir) {
  steer_world *w = small_world(16, 50.0f);
  if (!w)
    return -1;
  steer_id ids[12];
  for (uint32_t i = 0; i < 12; i++) {
    steer_agent_desc d = steer_default_agent_desc();
    d.model = (uint8_t)(i % STEER_MODEL_COUNT);
    d.state.position = v2(-20.0f + 4.0f * (float)i, (float)(i % 3) * 5.0f);
    d.state.orientation = 0.3f * (float)i;
    uint32_t kind = i % STEER_BEHAVIOUR_FOLLOW_PATH;
    d.behaviour = steer_default_behaviour((steer_behaviour_kind)kind);
    d.behaviour.target.kind = i > 0 ? STEER_TARGET_AGENT : STEER_TARGET_POINT;
    d.behaviour.target.agent = i > 0 ? ids[i - 1] : 0;
    d.behaviour.target.point = v2(10.0f, -10.0f);
    if (steer_world_spawn(w, &d, i % 3, &ids[i]) != STEER_OK) {
      /* a behaviour that wants a target it cannot have here: plain */
      d.behaviour = steer_default_behaviour(STEER_BEHAVIOUR_WANDER);
      int rc = steer_world_spawn(w, &d, i % 3, &ids[i]);
      if (rc != STEER_OK) {
        fprintf(stderr, "gen_state_corpus: spawn %u: %s\n", i, steer_strerror(rc));
        return -1;
      }
    }
  }
  const vec2 pts[4] = {{0.0f, 0.0f}, {10.0f, 0.0f}, {10.0f, 10.0f}, {0.0f, 10.0f}};
  int shared = steer_world_path_create(w, pts, 4, 1.0f, STEER_PATH_LOOP, STEER_CORNER_ARC);
  int r1 = shared < 0 ? shared : steer_world_follow_path(w, ids[2], shared);
  int r2 = shared < 0 ? shared : steer_world_follow_path(w, ids[5], shared);
  int r3 = steer_world_set_path(w, ids[0], pts, 3, 0.5f, STEER_PATH_PINGPONG, STEER_CORNER_NONE);
  if (r1 != STEER_OK || r2 != STEER_OK || r3 != STEER_OK) {
    fprintf(stderr, "gen_state_corpus: paths: %s, %s, %s\n", steer_strerror(r1), steer_strerror(r2),
            steer_strerror(r3));
    return -1;
  }
  int gone = steer_world_path_create(w, pts, 2, 1.0f, STEER_PATH_ONCE, STEER_CORNER_NONE);
  if (gone >= 0)
    steer_world_path_release(w, gone);
  /* A map: a wall, a circle, a square (seeds for the map part of the world bytes). */
  const vec2 wall[2] = {{-40.0f, 30.0f}, {-20.0f, 30.0f}};
  const vec2 square[4] = {{30.0f, 30.0f}, {40.0f, 30.0f}, {40.0f, 40.0f}, {30.0f, 40.0f}};
  const vec2 centre[1] = {{-35.0f, -35.0f}};
  steer_obstacle_desc obs[3] = {{STEER_OBSTACLE_WALL, 2, wall, 0.0f},
                                {STEER_OBSTACLE_CIRCLE, 1, centre, 3.0f},
                                {STEER_OBSTACLE_POLYGON, 4, square, 0.0f}};
  for (uint32_t i = 0; i < 3; i++) {
    int rc = steer_world_add_obstacle(w, 10 + i, &obs[i], NULL);
    if (rc != STEER_OK) {
      fprintf(stderr, "gen_state_corpus: obstacle %u: %s\n", i, steer_strerror(rc));
      return -1;
    }
  }
  steer_world_despawn(w, ids[8]);
  steer_world_despawn(w, ids[9]);
  for (int i = 0; i < 20; i++)
    steer_world_step(w, 1.0f / 30.0f);
  steerd_persist_owner owners[3];
  memset(owners, 0, sizeof(owners));
  owners[0] = (steerd_persist_owner){.id = 1, .named = 1, .name = "alice", .agents = 4};
  owners[1] = (steerd_persist_owner){.id = 2, .named = 0, .name = "", .agents = 3};
  owners[2] = (steerd_persist_owner){.id = 7,
                                     .named = 1,
                                     .name = "b\xc3\xa9"
                                             "atrice",
                                     .agents = 3};
  steerd_persist_server st;
  memset(&st, 0, sizeof(st));
  st.next_client_id = 9;
  st.owner_count = 3;
  st.owners = owners;
  int rc = save(dir, "seed_mixed", w, &st, 0) | save(dir, "seed_v1", w, &st, 1);
  steer_world_destroy(w);
  return rc;
}

static int with_goto(const char *dir) {
  steer_world *w = small_world(16, 30.0f);
  if (!w)
    return -1;
  const vec2 lower[2] = {{0.0f, -30.0f}, {0.0f, -1.5f}}, upper[2] = {{0.0f, 1.5f}, {0.0f, 30.0f}};
  steer_obstacle_desc walls[2] = {{STEER_OBSTACLE_WALL, 2, lower, 0.0f},
                                  {STEER_OBSTACLE_WALL, 2, upper, 0.0f}};
  for (uint32_t i = 0; i < 2; i++)
    if (steer_world_add_obstacle(w, 1 + i, &walls[i], NULL) != STEER_OK)
      return -1;
  steer_planner_config pc = steer_default_planner_config();
  pc.budget = 2; /* a plan or two per tick: some still wait when saved */
  steer_planner *p = steer_planner_create(w, &pc);
  if (!p)
    return -1;
  steer_id ids[8];
  for (uint32_t i = 0; i < 8; i++) {
    steer_agent_desc d = steer_default_agent_desc();
    d.model = (uint8_t)(i % STEER_MODEL_COUNT);
    d.state.position = v2(-20.0f + (float)(i % 4) * 3.0f, -10.0f + (float)(i / 4) * 12.0f);
    d.limits.radius = 0.4f;
    if (steer_world_spawn(w, &d, 1, &ids[i]) != STEER_OK)
      return -1;
  }
  for (uint32_t i = 0; i < 8; i++) {
    steer_goto g = steer_default_goto();
    g.target.point = v2(15.0f, -12.0f + 3.0f * (float)i);
    if (i == 5) {
      g.target.kind = STEER_TARGET_AGENT;
      g.target.agent = ids[1];
    }
    if (i % STEER_MODEL_COUNT == STEER_MODEL_HEADING)
      g.cornering = STEER_CORNER_LAZY;
    if (steer_planner_goto(p, w, ids[i], &g) != STEER_OK)
      return -1;
  }
  for (int t = 0; t < 3; t++) {
    steer_planner_update(p, w);
    steer_world_step(w, 1.0f / 30.0f);
    steer_planner_observe(p, w);
  }
  steer_planner_cancel(p, ids[7]);
  size_t pl = steer_planner_state_size(p);
  uint8_t *pb = malloc(pl);
  if (!pb || steer_planner_save(p, pb, pl, NULL) != STEER_OK)
    return -1;
  steerd_persist_owner owner = {.id = 1, .named = 1, .name = "npc", .agents = 8};
  steerd_persist_server st;
  memset(&st, 0, sizeof(st));
  st.next_client_id = 2;
  st.owner_count = 1;
  st.owners = &owner;
  st.planner = pb;
  st.planner_len = pl;
  int rc = save(dir, "seed_goto", w, &st, 0);
  free(pb);
  steer_planner_destroy(p);
  steer_world_destroy(w);
  return rc;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "fuzz/corpus/fuzz_state";
  steerd_persist_server st;
  memset(&st, 0, sizeof(st));
  st.next_client_id = 1;
  steer_world *w = small_world(4, 10.0f);
  if (!w || save(dir, "seed_empty", w, &st, 0) != 0)
    return 1;
  steer_world_destroy(w);
  if (mixed(dir) != 0)
    return 1;
  w = small_world(64, 64.0f);
  steerd_persist_server demo;
  memset(&demo, 0, sizeof(demo));
  demo.next_client_id = 3;
  if (!w || steerd_demo_create(&demo.demo, w, 42) != STEER_OK)
    return 1;
  demo.demo_on = 1;
  for (int i = 0; i < 10; i++) {
    steer_world_step(w, 1.0f / 30.0f);
    uint32_t n;
    const steer_event *ev = steer_world_events(w, &n);
    steerd_demo_update(&demo.demo, w, ev, n);
  }
  if (save(dir, "seed_demo", w, &demo, 0) != 0)
    return 1;
  steer_world_destroy(w);
  return with_goto(dir) != 0;
}

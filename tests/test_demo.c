/* test_demo.c: the demo world (server/demo.c) and its level (maps/demo.json).
 *
 * The level file as shipped loads (from the file, as a level designer would
 * pass it to --map, and compiled in, the same obstacles); its doorway lets a
 * crowd agent through on either lane and its partition does not. Run headless
 * for several simulated minutes, the demo keeps every body out of the geometry
 * and every centre inside the bounds after every step; both crowds keep
 * crossing the doorway in both directions in every minute (no deadlock), with
 * few STUCK reports (no storm); the run is deterministic, and a world restored
 * from a checkpoint with only the demo state the server keeps goes on bit for
 * bit (the crowds need no state of their own). The side door closes and opens
 * on its schedule (the map changes, the gap is blocked, then free), and in the
 * real server a game client holding the map (MAP) hears of it as MAP_CHANGED
 * like an admin's change. A world too small for the level
 * gets the groups without it. Bounds are in ticks and counts, never wall time. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "client.h"
#include "demo.h"
#include "map.h"
#include "map_file.h"
#include "state_file.h"
#include "steerd_proc.h"
#include "world.h"
#include "world_fixture.h"

#define RATE   30u
#define DT     (1.0f / (float)RATE)
#define SLACK  1e-3f /* m: the geometry guarantee's float slack (PROTOCOL.md 16) */
#define MINUTE (60u * RATE)

static steer_world *demo_world(steerd_demo *d, unsigned flags) {
  steer_world_config cfg = steer_default_world_config();
  steer_world *w = steer_world_create(&cfg);
  ck_assert_ptr_nonnull(w);
  ck_assert_int_eq(steerd_demo_create_ex(d, w, cfg.seed, flags), STEER_OK);
  return w;
}

static void step(steerd_demo *d, steer_world *w) {
  steer_world_step(w, DT);
  uint32_t n;
  const steer_event *ev = steer_world_events(w, &n);
  steerd_demo_update(d, w, ev, n);
}

/* ---- the level ------------------------------------------------------------------ */

START_TEST(test_level_file_loads) {
  steerd_demo d;
  steer_world *built = demo_world(&d, 0);
  ck_assert(d.level);
  /* The shipped file, through the same loader as --map, into an empty world. */
  steer_world_config cfg = steer_default_world_config();
  steer_world *w = steer_world_create(&cfg);
  char err[256] = "";
  ck_assert_msg(steerd_map_file_load(STEERD_SOURCE_DIR "/maps/demo.json", w, err, sizeof err) == 0, "%s",
                err);
  const steer_map *a = steer_world_map(w), *b = steer_world_map(built);
  ck_assert_uint_eq(steer_map_count(a), steer_map_count(b));
  ck_assert_uint_ge(steer_map_count(a), 20);
  ck_assert_uint_eq(steer_map_hash(a, 0), steer_map_hash(b, 0));
  /* Every kind is there: walls as polygons, pillars, a concave block, a polyline. */
  uint32_t kinds[STEER_OBSTACLE_KIND_COUNT] = {0};
  for (uint32_t i = 0; i < steer_map_count(a); i++) {
    uint32_t id;
    steer_obstacle_desc o;
    ck_assert_int_eq(steer_map_get(a, i, &id, &o), STEER_OK);
    kinds[o.kind]++;
  }
  ck_assert_uint_ge(kinds[STEER_OBSTACLE_CIRCLE], 4);
  ck_assert_uint_ge(kinds[STEER_OBSTACLE_POLYGON], 10);
  ck_assert_uint_ge(kinds[STEER_OBSTACLE_WALL], 1);
  /* The doorway: a 0.4 m body fits on either lane and in the middle, not past its jambs. */
  float mid = 0.5f * (STEERD_DEMO_DOOR_X0 + STEERD_DEMO_DOOR_X1);
  ck_assert(steer_map_free(a, v2(mid, 0.0f), 0.4f, 0.0f));
  ck_assert(steer_map_free(a, v2(mid, 0.75f), 0.4f, 0.0f));
  ck_assert(steer_map_free(a, v2(mid, -0.75f), 0.4f, 0.0f));
  ck_assert(!steer_map_free(a, v2(mid, STEERD_DEMO_DOOR_Y1 - 0.3f), 0.4f, 0.0f));
  /* The partition elsewhere is solid: crossing it away from the doors is blocked. */
  vec2 p = v2(STEERD_DEMO_DOOR_X0 - 2.0f, -10.0f), q = v2(STEERD_DEMO_DOOR_X1 + 2.0f, -10.0f), vel = v2(1, 0);
  steer_map_move(a, p, &q, 0.4f, &vel, cfg.min, cfg.max);
  ck_assert_float_lt(q.x, STEERD_DEMO_DOOR_X0);
  steer_world_destroy(w);
  steer_world_destroy(built);
}
END_TEST

START_TEST(test_no_level_when_it_does_not_fit) {
  /* Bounds of +-100 m cannot hold the level (x up to 140 m): the groups only. */
  steer_world_config cfg = steer_default_world_config();
  cfg.min = v2(-100, -100);
  cfg.max = v2(100, 100);
  steer_world *w = steer_world_create(&cfg);
  steerd_demo d;
  ck_assert_int_eq(steerd_demo_create(&d, w, 1), STEER_OK);
  ck_assert(!d.level);
  ck_assert_uint_eq(steer_map_count(steer_world_map(w)), 0);
  ck_assert_uint_eq(steer_world_count(w), STEERD_DEMO_GROUP_AGENTS);
  steer_world_destroy(w);
  /* And without it on request (the server loads another --map). */
  steer_world *v = demo_world(&d, STEERD_DEMO_NO_LEVEL);
  ck_assert(!d.level);
  ck_assert_uint_eq(steer_map_count(steer_world_map(v)), 0);
  ck_assert_uint_eq(steer_world_count(v), STEERD_DEMO_GROUP_AGENTS);
  steer_world_destroy(v);
}
END_TEST

START_TEST(test_side_door_closes_and_opens) {
  steerd_demo d;
  steer_world *w = demo_world(&d, 0);
  const steer_map *m = steer_world_map(w);
  vec2 gap = v2(100.0f, 19.5f);
  uint32_t v0 = steer_map_version(m);
  for (uint32_t t = 1; t <= 2 * STEERD_DEMO_DOOR_PERIOD; t++) {
    step(&d, w);
    uint32_t phase = t % STEERD_DEMO_DOOR_PERIOD;
    int closed = phase >= STEERD_DEMO_DOOR_CLOSE_AT && phase < STEERD_DEMO_DOOR_OPEN_AT;
    ck_assert_msg((steer_map_find(m, STEERD_DEMO_SIDE_DOOR_ID) >= 0) == closed, "tick %u", t);
    /* Closed, nothing passes the gap; open, a body fits through it. */
    ck_assert_int_eq(steer_map_free(m, gap, 0.4f, 0.0f), !closed);
  }
  ck_assert_uint_eq(d.door_changes, 4);
  ck_assert_uint_eq(steer_map_version(m), v0 + 4);
  /* The level's own obstacles are unchanged. */
  ck_assert_int_ge(steer_map_find(m, STEERD_DEMO_PARTITION_ID), 0);
  steer_world_destroy(w);
  /* A world without the level has no door to close. */
  steer_world *v = demo_world(&d, STEERD_DEMO_NO_LEVEL);
  for (uint32_t t = 1; t <= STEERD_DEMO_DOOR_PERIOD; t++)
    step(&d, v);
  ck_assert_uint_eq(d.door_changes, 0);
  ck_assert_uint_eq(steer_map_count(steer_world_map(v)), 0);
  steer_world_destroy(v);
}
END_TEST

/* ---- the crowds ------------------------------------------------------------------- */

START_TEST(test_crowds_cross_both_ways) {
  steerd_demo d;
  steer_world *w = demo_world(&d, 0);
  ck_assert_uint_eq(steer_world_count(w), STEERD_DEMO_AGENTS);
  const uint32_t minutes = 5;
  uint32_t last[2] = {0, 0}, last_stuck = 0;
  for (uint32_t t = 1; t <= minutes * MINUTE; t++) {
    step(&d, w);
    int outside;
    float o = worst_overlap(w, &outside);
    ck_assert_msg(o <= SLACK, "tick %u: a body is %.4f m into the geometry", t, (double)o);
    ck_assert_msg(!outside, "tick %u: a centre left the bounds", t);
    if (t % MINUTE == 0) {
      /* Every minute, each way: at least a crowd's worth through the doorway
       * (about 50 is usual). None: a deadlock. */
      uint32_t we = d.crossings[0] - last[0], ew = d.crossings[1] - last[1], st = d.stuck - last_stuck;
      fprintf(stderr, "minute %u: %u west to east, %u east to west, %u STUCK\n", t / MINUTE, we, ew, st);
      ck_assert_msg(we >= STEERD_DEMO_CROWD && ew >= STEERD_DEMO_CROWD, "minute %u: %u and %u crossings",
                    t / MINUTE, we, ew);
      /* A STUCK report is an agent waiting 15 s at the door; a storm would be most of a crowd. */
      ck_assert_msg(st <= STEERD_DEMO_CROWD / 2, "minute %u: %u STUCK", t / MINUTE, st);
      last[0] = d.crossings[0];
      last[1] = d.crossings[1];
      last_stuck = d.stuck;
    }
  }
  /* The side door closed at ticks 300, 1500, ..., 8700 and opened at 900, ..., 8100. */
  ck_assert_uint_eq(d.door_changes, 15);
  steer_world_destroy(w);
}
END_TEST

START_TEST(test_deterministic_and_restored) {
  steerd_demo a, b;
  steer_world *wa = demo_world(&a, 0), *wb = demo_world(&b, 0);
  for (uint32_t t = 0; t < 40 * RATE; t++) {
    step(&a, wa);
    step(&b, wb);
  }
  ck_assert_uint_eq(steer_world_hash(wa), steer_world_hash(wb));
  /* A checkpoint: the world, and the demo fields server/persist.c keeps. */
  steer_world *wc = steerd_test_copy_world(wa);
  ck_assert_ptr_nonnull(wc);
  steerd_demo c;
  memset(&c, 0, sizeof c);
  c.rng = a.rng;
  c.tagger = a.tagger;
  c.runner = a.runner;
  c.swaps = a.swaps;
  c.cooldown = a.cooldown;
  c.retargets = a.retargets;
  c.wanderer_count = a.wanderer_count;
  memcpy(c.wanderers, a.wanderers, sizeof c.wanderers);
  steerd_demo_resume(&c);
  uint32_t before = a.crossings[0] + a.crossings[1];
  for (uint32_t t = 0; t < 60 * RATE; t++) {
    step(&a, wa);
    step(&c, wc);
  }
  ck_assert_uint_gt(a.crossings[0] + a.crossings[1], before); /* the crowds went on */
  ck_assert_uint_eq(c.crossings[0] + c.crossings[1], a.crossings[0] + a.crossings[1] - before);
  ck_assert_uint_eq(steer_world_hash(wa), steer_world_hash(wc));
  steer_world_destroy(wa);
  steer_world_destroy(wb);
  steer_world_destroy(wc);
}
END_TEST

/* ---- GOTO between the rooms ---------------------------------------------------------- */

START_TEST(test_goto_npcs_go_between_rooms) {
  steerd_demo d;
  steer_world *w = demo_world(&d, 0);
  steer_planner_config pc = steer_default_planner_config();
  steer_planner *p = steer_planner_create(w, &pc);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(steerd_demo_set_planner(&d, w, p, 1), STEER_OK);
  ck_assert_uint_eq(steer_world_count(w), STEERD_DEMO_AGENTS + STEERD_DEMO_GOTO);
  uint32_t map_replans = 0, unreachable = 0, rooms_seen[2] = {0, 0};
  for (uint32_t t = 1; t <= 5 * MINUTE; t++) {
    steer_planner_update(p, w);
    uint32_t n;
    const steer_plan_event *pe = steer_planner_events(p, &n);
    for (uint32_t e = 0; e < n; e++) {
      map_replans += pe[e].type == STEER_PLAN_REPLANNED && pe[e].reason == STEER_PLAN_MAP;
      unreachable += pe[e].type == STEER_PLAN_UNREACHABLE;
    }
    step(&d, w);
    steer_planner_observe(p, w);
    int outside;
    float o = worst_overlap(w, &outside);
    ck_assert_msg(o <= SLACK && !outside, "tick %u: a body is %.4f m into the geometry", t, (double)o);
    /* Which rooms the GOTO NPCs were in (their GOTO state tells them apart). */
    steer_world_view v = steer_world_get_view(w);
    for (uint32_t i = 0; i < v.count; i++)
      if (steer_planner_status(p, v.id[i], NULL) != STEER_GOTO_NONE)
        rooms_seen[v.px[i] > STEERD_DEMO_DOOR_X1]++;
  }
  fprintf(stderr, "goto: %u sent, %u arrived, %u replans for the map, %u unreachable\n", d.goto_sent,
          d.goto_arrived, map_replans, unreachable);
  /* Each NPC reaches a spot in the other room and is sent on, again and again. */
  ck_assert_uint_ge(d.goto_arrived, 2 * STEERD_DEMO_GOTO);
  ck_assert_uint_eq(d.goto_sent, d.goto_arrived + STEERD_DEMO_GOTO);
  ck_assert(rooms_seen[0] > 0 && rooms_seen[1] > 0);
  /* The corridor is always open: nothing is ever unreachable. The side door
   * closed across routes (with this seed 4 times in 5 minutes): they replanned. */
  ck_assert_uint_eq(unreachable, 0);
  ck_assert_uint_ge(map_replans, 1);
  steer_planner_destroy(p);
  steer_world_destroy(w);
}
END_TEST

/* ---- in the server ------------------------------------------------------------------ */

typedef struct map_seen {
  uint32_t complete, changes;
  int door_added, door_removed;
  uint32_t version;
} map_seen;

static void on_map(void *user, const steerd_mapcopy *map, const proto_map_changed *change) {
  map_seen *s = user;
  s->version = steerd_mapcopy_version(map);
  if (!change) {
    s->complete++;
    return;
  }
  s->changes++;
  for (uint32_t i = 0; i < change->added_count; i++)
    s->door_added += change->added[i].id == STEERD_DEMO_SIDE_DOOR_ID;
  for (uint32_t i = 0; i < change->removed_count; i++)
    s->door_removed += change->removed[i] == STEERD_DEMO_SIDE_DOOR_ID;
}

START_TEST(test_server_sends_the_level_and_the_door) {
  steerd_proc p;
  /* At 120 ticks a second (4 times the default) the door's schedule, in ticks,
   * passes in a quarter of the wall time; what a client hears of it is the same. */
  const char *const args[] = {"--tick-rate", "120", NULL};
  ck_assert_int_eq(steerd_proc_start(&p, STEERD_BINARY, args, 10000), 0);
  ck_assert(steerd_proc_log_contains(&p, "its level (maps/demo.json)"));
  map_seen seen;
  memset(&seen, 0, sizeof seen);
  steerd_client_config cfg = steerd_client_default_config();
  cfg.callbacks.on_map = on_map;
  cfg.user = &seen;
  steerd_client *c = steerd_client_create(&cfg);
  ck_assert_ptr_nonnull(c);
  ck_assert_int_eq(steerd_client_connect(c, "127.0.0.1", p.port), STEERD_CLIENT_OK);
  uint64_t deadline = steerd_proc_now_ms() + 5000;
  while (seen.complete == 0 && steerd_proc_now_ms() < deadline)
    steerd_client_service(c, 20);
  ck_assert_uint_eq(seen.complete, 1);
  const steerd_mapcopy *m = steerd_client_map(c);
  ck_assert(steerd_mapcopy_current(m));
  ck_assert_uint_ge(steerd_mapcopy_count(m), 24);
  /* The side door closes at tick 300 and opens at tick 900 of every 1200 (10 s
   * and 30 s of every 40 s at 30 Hz, 2.5 s and 7.5 s here): both changes arrive
   * as MAP_CHANGED, one version each. */
  uint32_t v0 = seen.version;
  deadline = steerd_proc_now_ms() + 60000;
  while ((!seen.door_added || !seen.door_removed) && steerd_proc_now_ms() < deadline)
    steerd_client_service(c, 20);
  ck_assert_msg(seen.door_added && seen.door_removed, "door closed %d, opened %d (map changes %u)",
                seen.door_added, seen.door_removed, seen.changes);
  ck_assert_uint_eq(seen.complete, 1); /* kept in sync by MAP_CHANGED alone */
  ck_assert_uint_eq(seen.version, v0 + seen.changes);
  ck_assert(steerd_mapcopy_current(m));
  steerd_client_destroy(c);
  ck_assert_int_eq(steerd_proc_stop(&p, 5000), 0);
}
END_TEST

static Suite *demo_suite(void) {
  Suite *s = suite_create("demo");
  TCase *l = check_tcase(s, "level", 120);
  tcase_add_test(l, test_level_file_loads);
  tcase_add_test(l, test_no_level_when_it_does_not_fit);
  tcase_add_test(l, test_side_door_closes_and_opens);
  TCase *c = check_tcase(s, "crowds", 300);
  tcase_add_test(c, test_crowds_cross_both_ways);
  tcase_add_test(c, test_deterministic_and_restored);
  TCase *g = check_tcase(s, "goto", 300);
  tcase_add_test(g, test_goto_npcs_go_between_rooms);
  TCase *v = check_tcase(s, "server", 120);
  tcase_add_test(v, test_server_sends_the_level_and_the_door);
  return s;
}

int main(void) { return check_run(demo_suite()); }

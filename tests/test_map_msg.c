/* test_map_msg.c: the map messages (protocol/map_msg.h), the client's copy of
 * the map (client-sample/mapcopy.h) and the server's checks of map changes
 * (server/map_admin.h), without a network.
 *
 * The hex examples of PROTOCOL.md 17 (markers "<!-- map-example: NAME -->")
 * are produced by the encoders here and compared byte for byte. Run with
 * PROTO_PRINT_EXAMPLES=1 to print them in PROTOCOL.md's format. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "map_admin.h"
#include "map_msg.h"
#include "mapcopy.h"
#include "md_examples.h"
#include "protocol.h"
#include "wire_core.h"

static uint8_t buf[PROTO_MAX_MESSAGE_BYTES + 64];
static uint8_t buf2[PROTO_MAX_MESSAGE_BYTES + 64];

/* ---- the examples ------------------------------------------------------------------ */

static const proto_vec2 ex_centre[1] = {{10.0f, 10.0f}};
static const proto_vec2 ex_room[4] = {{0.0f, 0.0f}, {10.0f, 0.0f}, {10.0f, 8.0f}, {0.0f, 8.0f}};
static const proto_vec2 ex_door[2] = {{10.0f, 3.0f}, {10.0f, 6.0f}};

static proto_obstacle ex_obstacles(int i) {
  proto_obstacle o[3] = {{1, STEER_OBSTACLE_CIRCLE, 1, 2.0f, ex_centre},
                         {7, STEER_OBSTACLE_POLYGON, 4, 0.0f, ex_room},
                         {3, STEER_OBSTACLE_WALL, 2, 0.0f, ex_door}};
  return o[i];
}

static proto_obstacle ex_at(const void *ctx, uint32_t i) {
  (void)ctx;
  return ex_obstacles((int)i);
}

/* [39, 5, 0, 1, 3, [circle 1, polygon 7, wall 3]] */
static size_t ex_map(uint8_t *b, size_t cap) {
  proto_map_header h = {5, 0, 1, 3};
  return proto_encode_map(b, cap, &h, ex_at, NULL, 0, 3);
}

/* [40, 6, 1240, [], [the door, id 12]] */
static size_t ex_map_changed_added(uint8_t *b, size_t cap) {
  static const proto_vec2 door[2] = {{10.0f, 6.0f}, {10.0f, 8.0f}};
  proto_obstacle added = {12, STEER_OBSTACLE_WALL, 2, 0.0f, door};
  proto_map_changed c = {6, 1240, 0, NULL, 1, &added};
  return proto_encode_map_changed(b, cap, &c);
}

/* [40, 7, 1300, [12], []] */
static size_t ex_map_changed_removed(uint8_t *b, size_t cap) {
  static const uint32_t removed[1] = {12};
  proto_map_changed c = {7, 1300, 1, removed, 0, NULL};
  return proto_encode_map_changed(b, cap, &c);
}

static proto_command cmd_add_door(void) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = PROTO_MSG_ADD_OBSTACLE;
  c.request_id = 12;
  c.add_obstacle.id = 12;
  c.add_obstacle.kind = STEER_OBSTACLE_WALL;
  c.add_obstacle.count = 2;
  c.add_obstacle.points[0] = proto_v2(10.0f, 6.0f);
  c.add_obstacle.points[1] = proto_v2(10.0f, 8.0f);
  return c;
}

static size_t ex_add_obstacle(uint8_t *b, size_t cap) {
  proto_command c = cmd_add_door();
  return proto_encode_command(b, cap, &c);
}

static size_t ex_add_circle(uint8_t *b, size_t cap) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = PROTO_MSG_ADD_OBSTACLE;
  c.request_id = 14;
  c.add_obstacle.id = 20;
  c.add_obstacle.kind = STEER_OBSTACLE_CIRCLE;
  c.add_obstacle.count = 1;
  c.add_obstacle.points[0] = proto_v2(-3.5f, 4.0f);
  c.add_obstacle.radius = 0.75f;
  return proto_encode_command(b, cap, &c);
}

static size_t ex_remove_obstacle(uint8_t *b, size_t cap) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = PROTO_MSG_REMOVE_OBSTACLE;
  c.request_id = 13;
  c.remove_obstacle.id = 12;
  return proto_encode_command(b, cap, &c);
}

static size_t ex_ack_add_obstacle(uint8_t *b, size_t cap) {
  proto_ack a;
  memset(&a, 0, sizeof a);
  a.request_id = 12;
  a.command = PROTO_MSG_ADD_OBSTACLE;
  a.obstacle = 12;
  a.map_version = 6;
  a.moved = 2;
  return proto_encode_ack(b, cap, &a);
}

static size_t ex_ack_remove_obstacle(uint8_t *b, size_t cap) {
  proto_ack a;
  memset(&a, 0, sizeof a);
  a.request_id = 13;
  a.command = PROTO_MSG_REMOVE_OBSTACLE;
  a.obstacle = 12;
  a.map_version = 7;
  return proto_encode_ack(b, cap, &a);
}

static size_t ex_error_obstacle_exists(uint8_t *b, size_t cap) {
  return proto_encode_error(b, cap, 12, PROTO_ERR_OBSTACLE_EXISTS, "obstacle 12 exists: remove it first",
                            "id");
}

static size_t ex_event_stuck(uint8_t *b, size_t cap) {
  proto_event e = {1250, PROTO_EVENT_STUCK, 4194305u, 3};
  return proto_encode_event(b, cap, &e);
}

static size_t ex_set_params_avoid(uint8_t *b, size_t cap);

static const steerd_example examples[] = {{"map", ex_map},
                                          {"map_changed_added", ex_map_changed_added},
                                          {"map_changed_removed", ex_map_changed_removed},
                                          {"add_obstacle", ex_add_obstacle},
                                          {"add_obstacle_circle", ex_add_circle},
                                          {"remove_obstacle", ex_remove_obstacle},
                                          {"ack_add_obstacle", ex_ack_add_obstacle},
                                          {"ack_remove_obstacle", ex_ack_remove_obstacle},
                                          {"error_obstacle_exists", ex_error_obstacle_exists},
                                          {"event_stuck", ex_event_stuck},
                                          {"set_params_avoid", ex_set_params_avoid}};
#define EXAMPLE_COUNT (sizeof examples / sizeof examples[0])

static size_t ex_set_params_avoid(uint8_t *b, size_t cap) {
  proto_command c;
  memset(&c, 0, sizeof c);
  c.type = PROTO_MSG_SET_PARAMS;
  c.request_id = 15;
  c.set_params.agent = 4194305u;
  c.set_params.params.present = PROTO_PARAM_AVOID_WEIGHT | PROTO_PARAM_AVOID_PRIORITY |
                                PROTO_PARAM_STUCK_TIME | PROTO_PARAM_STUCK_REACTION;
  c.set_params.params.tuning.avoid_weight = 1.0f;
  c.set_params.params.tuning.avoid_priority = 200;
  c.set_params.params.tuning.stuck_time = 2.0f;
  c.set_params.params.tuning.stuck_reaction = STEER_STUCK_NUDGE;
  return proto_encode_command(b, cap, &c);
}

START_TEST(protocol_md_map_examples) {
  steerd_md_examples_check(PROTOCOL_MD, "map-example", examples, EXAMPLE_COUNT);
}
END_TEST

/* ---- round trips and the decoders' refusals -------------------------------------------- */

static proto_obstacle obs[64];
static proto_vec2 pts[4096];

START_TEST(map_round_trip) {
  size_t n = ex_map(buf, sizeof buf);
  proto_map_header h;
  uint32_t count;
  ck_assert_int_eq(proto_decode_map(buf, n, &h, obs, 64, &count, pts, 4096, NULL), 0);
  ck_assert_uint_eq(h.version, 5);
  ck_assert_uint_eq(h.part_count, 1);
  ck_assert_uint_eq(h.obstacle_total, 3);
  ck_assert_uint_eq(count, 3);
  for (int i = 0; i < 3; i++) {
    proto_obstacle want = ex_obstacles(i);
    ck_assert_uint_eq(obs[i].id, want.id);
    ck_assert_uint_eq(obs[i].kind, want.kind);
    ck_assert_uint_eq(obs[i].count, want.count);
    ck_assert_mem_eq(obs[i].points, want.points, want.count * sizeof(vec2));
    ck_assert_float_eq(obs[i].radius, want.radius);
  }
  /* Re-encoded from what was decoded: the same bytes. */
  ck_assert_uint_eq(proto_encode_map(buf2, sizeof buf2, &h, proto_obstacle_array_at, obs, 0, count), n);
  ck_assert_mem_eq(buf, buf2, n);
  /* No room for the points, or the obstacles: TOO_LARGE; cut short anywhere: an error. */
  proto_error_info e;
  ck_assert_int_eq(proto_decode_map(buf, n, &h, obs, 64, &count, pts, 5, &e), -PROTO_ERR_TOO_LARGE);
  ck_assert_int_eq(proto_decode_map(buf, n, &h, obs, 2, &count, pts, 4096, &e), -PROTO_ERR_TOO_LARGE);
  for (size_t cut = 0; cut < n; cut++)
    ck_assert_int_lt(proto_decode_map(buf, cut, &h, obs, 64, &count, pts, 4096, NULL), 0);
  /* Every encoder refuses a buffer one byte short. */
  for (size_t k = 0; k < EXAMPLE_COUNT; k++) {
    size_t full = examples[k].fn(buf, sizeof buf);
    ck_assert_uint_gt(full, 0);
    ck_assert_uint_eq(examples[k].fn(buf2, full - 1), 0);
  }
}
END_TEST

START_TEST(map_changed_round_trip) {
  uint32_t removed[PROTO_MAP_CHANGED_MAX];
  proto_obstacle added[PROTO_MAP_CHANGED_MAX];
  proto_map_changed c;
  size_t n = ex_map_changed_added(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_map_changed(buf, n, &c, removed, added, pts, 4096, NULL), 0);
  ck_assert_uint_eq(c.version, 6);
  ck_assert_uint_eq(c.tick, 1240);
  ck_assert_uint_eq(c.removed_count, 0);
  ck_assert_uint_eq(c.added_count, 1);
  ck_assert_uint_eq(c.added[0].id, 12);
  ck_assert_float_eq(c.added[0].points[1].y, 8.0f);
  ck_assert_uint_eq(proto_encode_map_changed(buf2, sizeof buf2, &c), n);
  ck_assert_mem_eq(buf, buf2, n);
  n = ex_map_changed_removed(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_map_changed(buf, n, &c, removed, added, pts, 4096, NULL), 0);
  ck_assert_uint_eq(c.removed_count, 1);
  ck_assert_uint_eq(c.removed[0], 12);
  /* Version 0 and removed id 0 are refused by the encoder and the decoder. */
  c.version = 0;
  ck_assert_uint_eq(proto_encode_map_changed(buf2, sizeof buf2, &c), 0);
  static const uint8_t v0[] = {0x95, 0x28, 0x00, 0x01, 0x90, 0x90};
  proto_error_info e;
  ck_assert_int_eq(proto_decode_map_changed(v0, sizeof v0, &c, removed, added, pts, 4096, &e),
                   -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "version");
  static const uint8_t id0[] = {0x95, 0x28, 0x01, 0x01, 0x91, 0x00, 0x90};
  ck_assert_int_eq(proto_decode_map_changed(id0, sizeof id0, &c, removed, added, pts, 4096, &e),
                   -PROTO_ERR_BAD_FIELD);
  ck_assert_str_eq(e.field, "removed[0]");
}
END_TEST

START_TEST(obstacle_commands_round_trip) {
  proto_command c;
  proto_error_info e;
  size_t n = ex_add_obstacle(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_command(buf, n, &c, &e), 0);
  ck_assert_uint_eq(c.type, PROTO_MSG_ADD_OBSTACLE);
  ck_assert_uint_eq(c.add_obstacle.id, 12);
  ck_assert_uint_eq(c.add_obstacle.kind, STEER_OBSTACLE_WALL);
  ck_assert_uint_eq(c.add_obstacle.count, 2);
  ck_assert_float_eq(c.add_obstacle.points[0].y, 6.0f);
  n = ex_add_circle(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_command(buf, n, &c, &e), 0);
  ck_assert_uint_eq(c.add_obstacle.kind, STEER_OBSTACLE_CIRCLE);
  ck_assert_uint_eq(c.add_obstacle.count, 1);
  ck_assert_float_eq(c.add_obstacle.points[0].x, -3.5f);
  ck_assert_float_eq(c.add_obstacle.radius, 0.75f);
  ck_assert_uint_eq(proto_encode_command(buf2, sizeof buf2, &c), n);
  ck_assert_mem_eq(buf, buf2, n);
  n = ex_remove_obstacle(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_command(buf, n, &c, &e), 0);
  ck_assert_uint_eq(c.remove_obstacle.id, 12);
  /* ACKs decode as the client library reads them. */
  proto_server_msg m;
  n = ex_ack_add_obstacle(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_server_msg(buf, n, &m, NULL, 0, &e), 0);
  ck_assert_uint_eq(m.ack.obstacle, 12);
  ck_assert_uint_eq(m.ack.map_version, 6);
  ck_assert_uint_eq(m.ack.moved, 2);
  n = ex_ack_remove_obstacle(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_server_msg(buf, n, &m, NULL, 0, &e), 0);
  ck_assert_uint_eq(m.ack.command, PROTO_MSG_REMOVE_OBSTACLE);
  ck_assert_uint_eq(m.ack.map_version, 7);
  n = ex_event_stuck(buf, sizeof buf);
  ck_assert_int_eq(proto_decode_server_msg(buf, n, &m, NULL, 0, &e), 0);
  ck_assert_uint_eq(m.event.code, PROTO_EVENT_STUCK);
  ck_assert_str_eq(proto_event_name(PROTO_EVENT_STUCK), "stuck");
  ck_assert_str_eq(proto_error_name(PROTO_ERR_BLOCKED), "BLOCKED");
  ck_assert_int_eq(wire_error_of(STEER_EBLOCKED), PROTO_ERR_BLOCKED);
  /* The core's STUCK becomes the wire's. */
  steer_event se = {1250, 4194305u, STEER_EVENT_STUCK, 3};
  proto_event pe = wire_event_of(&se);
  ck_assert_uint_eq(pe.code, PROTO_EVENT_STUCK);
  ck_assert_uint_eq(pe.data, 3);
  /* SNAPSHOT_ACK is still no channel 0 command. */
  static const uint8_t sa[] = {0x93, 0x0b, 0x05, 0x80};
  ck_assert_int_eq(proto_decode_command(sa, sizeof sa, &c, &e), -PROTO_ERR_UNKNOWN_TYPE);
}
END_TEST

/* ---- the client's copy -------------------------------------------------------------- */

START_TEST(mapcopy_follows_parts_and_changes) {
  steerd_mapcopy *m = steerd_mapcopy_create(8, 64);
  ck_assert_ptr_nonnull(m);
  proto_obstacle three[3] = {ex_obstacles(0), ex_obstacles(1), ex_obstacles(2)};
  /* Two parts: the first alone is pending, the map is current only after both. */
  proto_map_header h = {5, 0, 2, 3};
  ck_assert_int_eq(steerd_mapcopy_part(m, &h, three, 2), STEERD_MAPCOPY_PENDING);
  ck_assert_int_eq(steerd_mapcopy_current(m), 0);
  h.part_index = 1;
  ck_assert_int_eq(steerd_mapcopy_part(m, &h, three + 2, 1), STEERD_MAPCOPY_COMPLETE);
  ck_assert_int_eq(steerd_mapcopy_current(m), 1);
  ck_assert_uint_eq(steerd_mapcopy_version(m), 5);
  /* Remove the polygon (its points leave the pool), add a wall: order as the server's. */
  uint32_t gone = 7;
  static const proto_vec2 w[2] = {{1.0f, 1.0f}, {2.0f, 2.0f}};
  proto_obstacle add = {9, STEER_OBSTACLE_WALL, 2, 0.0f, w};
  proto_map_changed c = {6, 10, 1, &gone, 1, &add};
  ck_assert_int_eq(steerd_mapcopy_changed(m, &c), STEERD_MAPCOPY_CHANGED);
  ck_assert_uint_eq(steerd_mapcopy_count(m), 3);
  ck_assert_uint_eq(steerd_mapcopy_get(m, 0).id, 1);
  ck_assert_uint_eq(steerd_mapcopy_get(m, 1).id, 3);
  ck_assert_mem_eq(steerd_mapcopy_get(m, 1).points, ex_door, sizeof ex_door);
  ck_assert_uint_eq(steerd_mapcopy_get(m, 2).id, 9);
  ck_assert_mem_eq(steerd_mapcopy_get(m, 2).points, w, sizeof w);
  /* Old news is ignored; a gap makes the copy stale until a new MAP. */
  ck_assert_int_eq(steerd_mapcopy_changed(m, &c), STEERD_MAPCOPY_IGNORED);
  c.version = 8;
  ck_assert_int_eq(steerd_mapcopy_changed(m, &c), STEERD_MAPCOPY_GAP);
  ck_assert_int_eq(steerd_mapcopy_current(m), 0);
  /* A part 0 of a newer version interrupts a collection; a part out of order is refused. */
  h = (proto_map_header){9, 0, 2, 3};
  ck_assert_int_eq(steerd_mapcopy_part(m, &h, three, 1), STEERD_MAPCOPY_PENDING);
  h = (proto_map_header){10, 0, 1, 3};
  ck_assert_int_eq(steerd_mapcopy_part(m, &h, three, 3), STEERD_MAPCOPY_COMPLETE);
  ck_assert_uint_eq(steerd_mapcopy_version(m), 10);
  h = (proto_map_header){11, 1, 2, 3};
  ck_assert_int_eq(steerd_mapcopy_part(m, &h, three, 1), STEERD_MAPCOPY_BAD);
  /* Too big for the copy. */
  steerd_mapcopy *small = steerd_mapcopy_create(2, 64);
  h = (proto_map_header){1, 0, 1, 3};
  ck_assert_int_eq(steerd_mapcopy_part(small, &h, three, 3), STEERD_MAPCOPY_OVERFLOW);
  ck_assert_int_eq(steerd_mapcopy_current(small), 0);
  steerd_mapcopy_destroy(small);
  steerd_mapcopy_destroy(m);
}
END_TEST

/* ---- the server's checks -------------------------------------------------------------- */

static steer_world *small_world(void) {
  steer_world_config wc = steer_default_world_config();
  wc.max_agents = 64;
  wc.min = v2(-50.0f, -50.0f);
  wc.max = v2(50.0f, 50.0f);
  return steer_world_create(&wc);
}

static steerd_map_edit edit_add(uint32_t id, uint8_t kind, const proto_vec2 *p, uint32_t n, float radius) {
  steerd_map_edit e;
  memset(&e, 0, sizeof e);
  e.op = STEERD_MAP_ADD;
  e.obstacle = (proto_obstacle){id, kind, n, radius, p};
  return e;
}

START_TEST(map_edit_checks_name_the_field) {
  steer_world *w = small_world();
  steerd_map_result r;
  proto_vec2 c[1] = {{0.0f, 0.0f}};
  steerd_map_edit e = edit_add(1, STEER_OBSTACLE_CIRCLE, c, 1, 2.0f);
  ck_assert_int_eq(steerd_map_edit_apply(w, &e, &r), 0);
  ck_assert_uint_eq(r.version, 1);
  ck_assert_int_eq(steerd_map_edit_apply(w, &e, &r), -1);
  ck_assert_int_eq(r.code, PROTO_ERR_OBSTACLE_EXISTS);
  ck_assert_str_eq(r.why.field, "id");
  struct {
    uint8_t kind;
    proto_vec2 p[4];
    uint32_t n;
    float radius;
    int code;
    const char *field;
  } bad[] = {
      {STEER_OBSTACLE_CIRCLE, {{60.0f, 0.0f}}, 1, 1.0f, PROTO_ERR_BAD_FIELD, "center"},
      {STEER_OBSTACLE_CIRCLE, {{49.5f, 0.0f}}, 1, 1.0f, PROTO_ERR_BAD_FIELD, "radius"},
      {STEER_OBSTACLE_CIRCLE, {{NAN, 0.0f}}, 1, 1.0f, PROTO_ERR_BAD_FIELD, "center"},
      {STEER_OBSTACLE_CIRCLE, {{5.0f, 0.0f}}, 1, 0.0001f, PROTO_ERR_BAD_FIELD, "radius"},
      {STEER_OBSTACLE_WALL, {{0.0f, 0.0f}, {0.0f, 51.0f}}, 2, 0.0f, PROTO_ERR_BAD_FIELD, "points[1]"},
      {STEER_OBSTACLE_WALL, {{0.0f, 5.0f}, {0.0f, 5.0f}}, 2, 0.0f, PROTO_ERR_BAD_FIELD, "points[1]"},
      {STEER_OBSTACLE_POLYGON,
       {{0.0f, 5.0f}, {1.0f, 5.0f}, {2.0f, 5.0f}},
       3,
       0.0f,
       PROTO_ERR_BAD_FIELD,
       "points"},
      {STEER_OBSTACLE_POLYGON,
       {{10.0f, 10.0f}, {20.0f, 20.0f}, {20.0f, 10.0f}, {10.0f, 20.0f}},
       4,
       0.0f,
       PROTO_ERR_BAD_FIELD,
       "points"},
      {STEER_OBSTACLE_POLYGON, {{10.0f, 10.0f}, {20.0f, 20.0f}}, 2, 0.0f, PROTO_ERR_BAD_FIELD, "points"},
      {STEER_OBSTACLE_KIND_COUNT, {{10.0f, 10.0f}}, 1, 0.0f, PROTO_ERR_BAD_FIELD, "type"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    e = edit_add(2, bad[i].kind, bad[i].p, bad[i].n, bad[i].radius);
    ck_assert_int_eq(steerd_map_edit_apply(w, &e, &r), -1);
    ck_assert_msg(r.code == bad[i].code, "case %zu: code %d", i, r.code);
    ck_assert_msg(strcmp(r.why.field, bad[i].field) == 0, "case %zu: field %s, wanted %s", i, r.why.field,
                  bad[i].field);
  }
  e.op = STEERD_MAP_REMOVE;
  e.obstacle.id = 99;
  ck_assert_int_eq(steerd_map_edit_apply(w, &e, &r), -1);
  ck_assert_int_eq(r.code, PROTO_ERR_NO_SUCH_OBSTACLE);
  ck_assert_uint_eq(steer_map_version(steer_world_map(w)), 1); /* nothing of that changed the map */
  e.obstacle.id = 1;
  ck_assert_int_eq(steerd_map_edit_apply(w, &e, &r), 0);
  ck_assert_uint_eq(r.version, 2);
  steer_world_destroy(w);
}
END_TEST

/* An obstacle over an agent moves it; one over an agent walled in with no
 * free place within reach is BLOCKED and changes nothing. */
START_TEST(map_edit_moves_or_refuses) {
  steer_world *w = small_world();
  steer_agent_desc d = steer_default_agent_desc();
  d.state.position = v2(0.0f, 0.0f);
  steer_id id;
  ck_assert_int_eq(steer_world_spawn(w, &d, 0, &id), STEER_OK);
  proto_vec2 box[4] = {{-1.0f, -1.0f}, {1.0f, -1.0f}, {1.0f, 1.0f}, {-1.0f, 1.0f}};
  steerd_map_edit e = edit_add(1, STEER_OBSTACLE_POLYGON, box, 4, 0.0f);
  steerd_map_result r;
  ck_assert_int_eq(steerd_map_edit_apply(w, &e, &r), 0);
  ck_assert_uint_eq(r.moved, 1);
  steer_agent_info info;
  ck_assert_int_eq(steer_world_get(w, id, &info), STEER_OK);
  ck_assert(steer_map_free(steer_world_map(w), info.state.position, info.limits.radius, 1e-3f));
  /* The whole world covered: nowhere to go. */
  proto_vec2 all[4] = {{-50.0f, -50.0f}, {50.0f, -50.0f}, {50.0f, 50.0f}, {-50.0f, 50.0f}};
  e = edit_add(2, STEER_OBSTACLE_POLYGON, all, 4, 0.0f);
  ck_assert_int_eq(steerd_map_edit_apply(w, &e, &r), -1);
  ck_assert_int_eq(r.code, PROTO_ERR_BLOCKED);
  ck_assert_uint_eq(steer_map_count(steer_world_map(w)), 1);
  steer_world_destroy(w);
}
END_TEST

/* ---- maps of real size ------------------------------------------------------------------ */

#define BIG_HALF 256.0f

/* n obstacles over [-BIG_HALF, BIG_HALF]^2, 2 m apart, in rows of 250: a
 * 1 x 1 m square, a circle or a wall of three points in turn; ids 1..n. */
static steer_map *big_map(uint32_t n) {
  steer_map *m = steer_map_create(v2(-BIG_HALF, -BIG_HALF), v2(BIG_HALF, BIG_HALF), 1.0f);
  ck_assert_ptr_nonnull(m);
  steer_map_hold(m);
  for (uint32_t i = 0; i < n; i++) {
    float x = -255.0f + 2.0f * (float)(i % 250u), y = -255.0f + 2.0f * (float)(i / 250u);
    vec2 p[4] = {{x, y}, {x + 1.0f, y}, {x + 1.0f, y + 1.0f}, {x, y + 1.0f}};
    steer_obstacle_desc o = {STEER_OBSTACLE_POLYGON, 4, p, 0.0f};
    if (i % 3u == 1u)
      o = (steer_obstacle_desc){STEER_OBSTACLE_CIRCLE, 1, p, 0.5f};
    else if (i % 3u == 2u)
      o = (steer_obstacle_desc){STEER_OBSTACLE_WALL, 3, p, 0.0f};
    ck_assert_int_eq(steer_map_add(m, i + 1u, &o), STEER_OK);
  }
  ck_assert_int_eq(steer_map_release(m), STEER_OK);
  return m;
}

static steer_world *big_world(void) {
  steer_world_config wc = steer_default_world_config();
  wc.max_agents = 16;
  wc.min = v2(-BIG_HALF, -BIG_HALF);
  wc.max = v2(BIG_HALF, BIG_HALF);
  return steer_world_create(&wc);
}

static proto_obstacle part_obs[1024];
static proto_vec2 part_pts[8192];

/* A map of 30 000 obstacles (about twice the old cap) goes out in parts of at
 * most PROTO_MAP_PART_BYTES; a client's copy of them, put back into a map,
 * has the server map's hash. */
START_TEST(map_of_30000_in_parts) {
  const uint32_t n = 30000;
  steer_map *m = big_map(n);
  steerd_mapsync *ms = steerd_mapsync_create(1);
  steerd_mapcopy *copy = steerd_mapcopy_create(STEER_MAP_MAX_OBSTACLES, 4u * n);
  ck_assert_ptr_nonnull(ms);
  ck_assert_ptr_nonnull(copy);
  steerd_mapsync_start(ms, 0);
  uint32_t parts = 0, seen = 0;
  steerd_mapcopy_result res = STEERD_MAPCOPY_PENDING;
  size_t len;
  while ((len = steerd_mapsync_next(ms, 0, m, buf, sizeof buf)) > 0) {
    ck_assert_uint_le(len, PROTO_MAP_PART_BYTES);
    proto_map_header h;
    uint32_t count;
    ck_assert_int_eq(proto_decode_map(buf, len, &h, part_obs, 1024, &count, part_pts, 8192, NULL), 0);
    ck_assert_uint_eq(h.part_index, parts);
    ck_assert_uint_eq(h.obstacle_total, n);
    ck_assert_uint_eq(h.version, steer_map_version(m));
    ck_assert_uint_gt(count, 0);
    ck_assert_uint_eq(part_obs[0].id, seen + 1u); /* in map order, each once */
    seen += count;
    res = steerd_mapcopy_part(copy, &h, part_obs, count);
    ck_assert_int_eq(res,
                     h.part_index + 1u == h.part_count ? STEERD_MAPCOPY_COMPLETE : STEERD_MAPCOPY_PENDING);
    parts++;
  }
  ck_assert_int_eq(res, STEERD_MAPCOPY_COMPLETE);
  ck_assert_int_eq(steerd_mapsync_synced(ms, 0), 1);
  ck_assert_uint_gt(parts, 50);
  ck_assert_uint_eq(seen, n);
  ck_assert_uint_eq(steerd_mapcopy_count(copy), n);
  steer_map *back = steer_map_create(v2(-BIG_HALF, -BIG_HALF), v2(BIG_HALF, BIG_HALF), 1.0f);
  ck_assert_ptr_nonnull(back);
  steer_map_hold(back);
  for (uint32_t i = 0; i < n; i++) {
    proto_obstacle o = steerd_mapcopy_get(copy, i);
    vec2 dp[PROTO_MAX_OBSTACLE_POINTS];
    steer_obstacle_desc d = wire_obstacle_desc(&o, dp);
    ck_assert_int_eq(steer_map_add(back, o.id, &d), STEER_OK);
  }
  ck_assert_int_eq(steer_map_release(back), STEER_OK);
  ck_assert_uint_eq(steer_map_hash(back, 0), steer_map_hash(m, 0));
  steer_map_destroy(back);
  steerd_mapcopy_destroy(copy);
  steerd_mapsync_destroy(ms);
  steer_map_destroy(m);
}
END_TEST

/* A world's map takes STEER_MAP_MAX_OBSTACLES (65 536) through a bulk load;
 * an admin's next add is WORLD_FULL, naming the caps, and changes nothing. */
START_TEST(map_edit_at_the_cap_is_world_full) {
  ck_assert_uint_ge(STEER_MAP_MAX_OBSTACLES, 65536u);
  steer_world *w = big_world();
  ck_assert_ptr_nonnull(w);
  steer_map *src = steer_map_create(v2(-BIG_HALF, -BIG_HALF), v2(BIG_HALF, BIG_HALF), 4.0f);
  ck_assert_ptr_nonnull(src);
  steer_map_hold(src);
  for (uint32_t i = 0; i < STEER_MAP_MAX_OBSTACLES; i++) {
    vec2 c = v2(-255.0f + 2.0f * (float)(i % 256u), -255.0f + 2.0f * (float)(i / 256u) * 0.99f);
    steer_obstacle_desc o = {STEER_OBSTACLE_CIRCLE, 1, &c, 0.25f};
    ck_assert_int_eq(steer_map_add(src, i + 1u, &o), STEER_OK);
  }
  ck_assert_int_eq(steer_map_release(src), STEER_OK);
  ck_assert_int_eq(steer_world_add_obstacles(w, src, NULL, NULL), STEER_OK);
  ck_assert_uint_eq(steer_map_count(steer_world_map(w)), STEER_MAP_MAX_OBSTACLES);
  proto_vec2 c[1] = {{0.0f, 255.0f}};
  steerd_map_edit e = edit_add(STEER_MAP_MAX_OBSTACLES + 1u, STEER_OBSTACLE_CIRCLE, c, 1, 0.5f);
  steerd_map_result r;
  uint32_t version = steer_map_version(steer_world_map(w));
  ck_assert_int_eq(steerd_map_edit_apply(w, &e, &r), -1);
  ck_assert_int_eq(r.code, PROTO_ERR_WORLD_FULL);
  ck_assert_ptr_nonnull(strstr(r.why.message, "65536 obstacles"));
  ck_assert_ptr_nonnull(strstr(r.why.message, "1048576 segments"));
  ck_assert_uint_eq(steer_map_version(steer_world_map(w)), version);
  /* A removal makes room for it. */
  e.op = STEERD_MAP_REMOVE;
  e.obstacle.id = 40000;
  ck_assert_int_eq(steerd_map_edit_apply(w, &e, &r), 0);
  e = edit_add(STEER_MAP_MAX_OBSTACLES + 1u, STEER_OBSTACLE_CIRCLE, c, 1, 0.5f);
  ck_assert_int_eq(steerd_map_edit_apply(w, &e, &r), 0);
  ck_assert_uint_eq(steer_map_count(steer_world_map(w)), STEER_MAP_MAX_OBSTACLES);
  steer_map_destroy(src);
  steer_world_destroy(w);
}
END_TEST

static Suite *map_msg_suite(void) {
  Suite *s = suite_create("map_msg");
  TCase *tc = check_tcase(s, "core", 60);
  tcase_add_test(tc, protocol_md_map_examples);
  tcase_add_test(tc, map_round_trip);
  tcase_add_test(tc, map_changed_round_trip);
  tcase_add_test(tc, obstacle_commands_round_trip);
  tcase_add_test(tc, mapcopy_follows_parts_and_changes);
  tcase_add_test(tc, map_edit_checks_name_the_field);
  tcase_add_test(tc, map_edit_moves_or_refuses);
  TCase *big = check_tcase(s, "big", 60);
  tcase_add_test(big, map_of_30000_in_parts);
  tcase_add_test(big, map_edit_at_the_cap_is_world_full);
  return s;
}

int main(void) {
  if (getenv("PROTO_PRINT_EXAMPLES")) {
    steerd_md_examples_print(stdout, "map-example", examples, EXAMPLE_COUNT);
    return EXIT_SUCCESS;
  }
  return check_run(map_msg_suite());
}

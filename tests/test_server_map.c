/* test_server_map.c: the map over the wire (PROTOCOL.md 17), the real server on
 * 127.0.0.1 (ephemeral port) and raw ENet clients that decode every message
 * with the protocol library and keep a copy of the map (mapcopy.h).
 *
 * A client receives the map after WELCOME, split into parts under the packet
 * limit when large, and MAP_CHANGED after every admin change; its copy stays
 * equal to what a client connecting afterwards receives, bit for bit. Non-admins
 * are refused; every bad map command gets its error and the server goes on
 * serving; an obstacle added on top of agents leaves none of them overlapping
 * geometry, and one refused (BLOCKED) leaves the version as it was; a path
 * point inside geometry is named by its index; a checkpoint and restore keep
 * the map, its version and the hash. */
#include <check.h>
#include <enet/enet.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_run.h"
#include "child_run.h"
#include "http_get.h"
#include "map.h"
#include "map_file.h"
#include "map_msg.h"
#include "mapcopy.h"
#include "protocol.h"
#include "wire_core.h"
#include "raw_peer.h"
#include "steerd_proc.h"

/* ---- a raw client that keeps the map ------------------------------------------- */

typedef struct raw {
  steerd_raw_peer net;
  steerd_mapcopy *map;
  uint32_t map_parts, map_changed, map_complete, map_bad;
  size_t map_part_max_bytes;
  uint32_t last_change_version;
  uint32_t saw_welcome_before_map; /* 1: the first MAP came after a WELCOME */
  int welcomed;
  proto_event events[256];
  uint32_t event_count;
  proto_map_header parts[512]; /* the MAP headers received, in order */
  uint32_t part_log;
} raw;

static proto_obstacle part_obs[1024];
static proto_vec2 part_points[4096];

static void raw_map_packet(raw *r, const uint8_t *data, size_t len) {
  uint32_t type = proto_message_type(data, len);
  if (len > r->map_part_max_bytes)
    r->map_part_max_bytes = len;
  if (type == PROTO_MSG_MAP) {
    proto_map_header h;
    uint32_t n;
    if (proto_decode_map(data, len, &h, part_obs, 1024, &n, part_points, 4096, NULL) != 0) {
      r->map_bad++;
      return;
    }
    if (r->map_parts++ == 0)
      r->saw_welcome_before_map = (uint32_t)r->welcomed;
    if (r->part_log < sizeof r->parts / sizeof r->parts[0])
      r->parts[r->part_log++] = h;
    steerd_mapcopy_result res = steerd_mapcopy_part(r->map, &h, part_obs, n);
    r->map_bad += res != STEERD_MAPCOPY_PENDING && res != STEERD_MAPCOPY_COMPLETE;
    r->map_complete += res == STEERD_MAPCOPY_COMPLETE;
    return;
  }
  proto_map_changed c;
  uint32_t removed[PROTO_MAP_CHANGED_MAX];
  if (proto_decode_map_changed(data, len, &c, removed, part_obs, part_points, 4096, NULL) != 0) {
    r->map_bad++;
    return;
  }
  r->map_changed++;
  r->last_change_version = c.version;
  r->map_bad += steerd_mapcopy_changed(r->map, &c) != STEERD_MAPCOPY_CHANGED;
}

/* MAP and MAP_CHANGED to raw_map_packet; EVENTs kept, WELCOME noted. */
static void raw_packet(void *user, uint8_t channel, const uint8_t *data, size_t len,
                       const proto_server_msg *m) {
  raw *r = user;
  if (channel != PROTO_CHANNEL_RELIABLE)
    return;
  uint32_t type = proto_message_type(data, len);
  if (type == PROTO_MSG_MAP || type == PROTO_MSG_MAP_CHANGED) {
    raw_map_packet(r, data, len);
    return;
  }
  if (m && m->type == PROTO_MSG_EVENT && r->event_count < 256)
    r->events[r->event_count++] = m->event;
  if (m && m->type == PROTO_MSG_WELCOME)
    r->welcomed = 1;
}

/* Services up to ms; the reply to request_id (0: none wanted) goes to *out. */
static int raw_service(raw *r, uint32_t request_id, uint32_t ms, proto_server_msg *out) {
  return steerd_raw_wait_reply(&r->net, request_id, ms, raw_packet, r, out);
}

static void raw_connect(raw *r, uint16_t port) {
  memset(r, 0, sizeof *r);
  r->map = steerd_mapcopy_create(STEER_MAP_MAX_OBSTACLES, 262144);
  ck_assert_ptr_nonnull(r->map);
  ck_assert_msg(steerd_raw_connect(&r->net, port, 5000) == 0, "no ENet connect within 5 s");
}

static void raw_close(raw *r) {
  steerd_raw_close(&r->net);
  steerd_mapcopy_destroy(r->map);
}

static uint32_t raw_send(raw *r, proto_command *cmd) {
  uint32_t rid = steerd_raw_send(&r->net, cmd, ENET_PACKET_FLAG_RELIABLE);
  ck_assert_uint_ne(rid, 0);
  return rid;
}

static proto_server_msg raw_command(raw *r, proto_command *cmd) {
  uint32_t rid = raw_send(r, cmd);
  proto_server_msg m;
  ck_assert_msg(raw_service(r, rid, 5000, &m) == 0, "no reply to command %u within 5 s", cmd->type);
  return m;
}

static proto_command command(uint8_t type) {
  static proto_command c; /* large (points): not on the stack of every caller */
  memset(&c, 0, sizeof c);
  c.type = type;
  return c;
}

static void raw_hello(raw *r) {
  proto_command c = command(PROTO_MSG_HELLO);
  c.hello.version = PROTO_VERSION;
  strcpy(c.hello.name, "map");
  proto_server_msg m = raw_command(r, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_WELCOME);
}

/* Services until the copy is current at version (or the timeout). */
static void raw_wait_map(raw *r, uint32_t version, uint32_t ms) {
  uint64_t end = steerd_proc_now_ms() + ms;
  proto_server_msg m;
  while (steerd_proc_now_ms() < end &&
         !(steerd_mapcopy_current(r->map) && steerd_mapcopy_version(r->map) == version))
    raw_service(r, 0, 20, &m);
  ck_assert_msg(steerd_mapcopy_current(r->map), "no complete map within %u ms (%u parts)", ms, r->map_parts);
  ck_assert_uint_eq(steerd_mapcopy_version(r->map), version);
}

static proto_command add_circle(uint32_t id, float x, float y, float radius) {
  proto_command c = command(PROTO_MSG_ADD_OBSTACLE);
  c.add_obstacle.id = id;
  c.add_obstacle.kind = STEER_OBSTACLE_CIRCLE;
  c.add_obstacle.count = 1;
  c.add_obstacle.points[0] = proto_v2(x, y);
  c.add_obstacle.radius = radius;
  return c;
}

static proto_command add_poly(uint32_t id, uint8_t kind, const vec2 *pts, uint32_t n) {
  proto_command c = command(PROTO_MSG_ADD_OBSTACLE);
  c.add_obstacle.id = id;
  c.add_obstacle.kind = kind;
  c.add_obstacle.count = n;
  memcpy(c.add_obstacle.points, pts, n * sizeof *pts);
  return c;
}

static proto_command remove_obstacle(uint32_t id) {
  proto_command c = command(PROTO_MSG_REMOVE_OBSTACLE);
  c.remove_obstacle.id = id;
  return c;
}

/* Two copies hold the same obstacles in the same order with the same bits. */
static void assert_same_map(const steerd_mapcopy *a, const steerd_mapcopy *b) {
  ck_assert_uint_eq(steerd_mapcopy_version(a), steerd_mapcopy_version(b));
  ck_assert_uint_eq(steerd_mapcopy_count(a), steerd_mapcopy_count(b));
  for (uint32_t i = 0; i < steerd_mapcopy_count(a); i++) {
    proto_obstacle x = steerd_mapcopy_get(a, i), y = steerd_mapcopy_get(b, i);
    ck_assert_uint_eq(x.id, y.id);
    ck_assert_uint_eq(x.kind, y.kind);
    ck_assert_uint_eq(x.count, y.count);
    ck_assert_mem_eq(&x.radius, &y.radius, sizeof x.radius);
    ck_assert_mem_eq(x.points, y.points, x.count * sizeof *x.points);
  }
}

static char map_path[64];

static void write_map(const char *json) {
  snprintf(map_path, sizeof map_path, "/tmp/steerd-map-test-%d.json", (int)getpid());
  FILE *f = fopen(map_path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(json, f);
  fclose(f);
}

static const char *const LEVEL =
    "{\"format\": \"steerd-map\", \"version\": 1, \"obstacles\": ["
    "{\"id\": 1, \"type\": \"circle\", \"center\": [10, 10], \"radius\": 2},"
    "{\"id\": 7, \"type\": \"polygon\", \"points\": [[0,0],[10,0],[10,10],[8,10],[8,2],[2,2],[2,10],[0,10]]},"
    "{\"id\": 3, \"type\": \"wall\", \"points\": [[-50,-20],[50,-20],[50,-40]]}]}";

static void server_start(steerd_proc *s, const char *const *extra) {
  static const char *const base[] = {"--no-demo", "--client-timeout",  "4000",
                                     "--world",   "-100,-100,100,100", NULL};
  ck_assert_msg(steerd_proc_start_with(s, STEERD_BINARY, base, extra, 30000) == 0,
                "the server did not start");
}

/* ---- the map at connect and after changes ------------------------------------------ */

START_TEST(map_at_welcome_and_after_every_change) {
  write_map(LEVEL);
  steerd_proc s;
  const char *extra[] = {"--map", map_path, "--anonymous-role", "admin", NULL};
  server_start(&s, extra);
  raw a, b;
  raw_connect(&a, s.port);
  raw_hello(&a);
  raw_wait_map(&a, 3, 5000); /* three obstacles loaded from the file: version 3 */
  ck_assert_uint_eq(a.saw_welcome_before_map, 1);
  ck_assert_uint_eq(a.map_parts, 1);
  ck_assert_uint_eq(steerd_mapcopy_count(a.map), 3);
  proto_obstacle o = steerd_mapcopy_get(a.map, 1);
  ck_assert_uint_eq(o.id, 7);
  ck_assert_uint_eq(o.kind, STEER_OBSTACLE_POLYGON);
  ck_assert_uint_eq(o.count, 8);
  ck_assert_float_eq(o.points[4].x, 8.0f);
  o = steerd_mapcopy_get(a.map, 0);
  ck_assert_uint_eq(o.kind, STEER_OBSTACLE_CIRCLE);
  ck_assert_float_eq(o.radius, 2.0f);
  raw_connect(&b, s.port);
  raw_hello(&b);
  raw_wait_map(&b, 3, 5000);

  /* A door closes: both clients get MAP_CHANGED, after the admin's ACK. */
  vec2 door[] = {{30.0f, 0.0f}, {30.0f, 3.0f}};
  proto_command c = add_poly(42, STEER_OBSTACLE_WALL, door, 2);
  proto_server_msg m = raw_command(&a, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  ck_assert_uint_eq(m.ack.command, PROTO_MSG_ADD_OBSTACLE);
  ck_assert_uint_eq(m.ack.obstacle, 42);
  ck_assert_uint_eq(m.ack.map_version, 4);
  ck_assert_uint_eq(m.ack.moved, 0);
  ck_assert_uint_eq(a.map_changed, 0); /* the ACK came first */
  raw_wait_map(&a, 4, 3000);
  raw_wait_map(&b, 4, 3000);
  ck_assert_uint_eq(steerd_mapcopy_count(b.map), 4);
  ck_assert_uint_eq(steerd_mapcopy_get(b.map, 3).id, 42);

  /* The polygon goes (order of the rest kept), a circle comes. */
  c = remove_obstacle(7);
  m = raw_command(&a, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  ck_assert_uint_eq(m.ack.command, PROTO_MSG_REMOVE_OBSTACLE);
  ck_assert_uint_eq(m.ack.obstacle, 7);
  ck_assert_uint_eq(m.ack.map_version, 5);
  c = add_circle(9, -30.0f, 40.5f, 1.25f);
  m = raw_command(&a, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  raw_wait_map(&a, 6, 3000);
  raw_wait_map(&b, 6, 3000);
  ck_assert_uint_eq(a.map_changed, 3);
  ck_assert_uint_eq(b.map_changed, 3);
  ck_assert_uint_eq(a.map_bad + b.map_bad, 0);

  /* A client connecting now receives exactly what the others built by changes. */
  raw late;
  raw_connect(&late, s.port);
  raw_hello(&late);
  raw_wait_map(&late, 6, 5000);
  assert_same_map(a.map, late.map);
  assert_same_map(b.map, late.map);
  ck_assert_uint_eq(steerd_mapcopy_get(late.map, 0).id, 1);
  ck_assert_uint_eq(steerd_mapcopy_get(late.map, 1).id, 3);
  ck_assert_uint_eq(steerd_mapcopy_get(late.map, 2).id, 42);
  ck_assert_uint_eq(steerd_mapcopy_get(late.map, 3).id, 9);

  /* A repeated HELLO sends the whole map again (how a client that lost track resyncs). */
  uint32_t parts = b.map_parts;
  raw_hello(&b);
  uint64_t end = steerd_proc_now_ms() + 3000;
  while (b.map_parts == parts && steerd_proc_now_ms() < end)
    raw_service(&b, 0, 20, &m);
  ck_assert_uint_gt(b.map_parts, parts);
  raw_wait_map(&b, 6, 3000);
  assert_same_map(b.map, late.map);

  raw_close(&late);
  raw_close(&b);
  raw_close(&a);
  ck_assert(steerd_proc_log_contains(&s, "map version 4: obstacle 42 (wall) added"));
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
  unlink(map_path);
}
END_TEST

/* An empty world still gets a MAP: version 0, one empty part. */
START_TEST(empty_map_is_one_empty_part) {
  steerd_proc s;
  server_start(&s, NULL);
  raw a;
  raw_connect(&a, s.port);
  raw_hello(&a);
  raw_wait_map(&a, 0, 5000);
  ck_assert_uint_eq(a.map_parts, 1);
  ck_assert_uint_eq(steerd_mapcopy_count(a.map), 0);
  raw_close(&a);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* 600 polygons of 40 points (about 270 KB of map): many parts, none over the
 * packet limit, every obstacle once, in order; a change while a client is being
 * sent the parts restarts them at the new version. (Not more: at the default
 * --client-queue-kb the parts go about 32 KB a tick, a second per megabyte.) */
START_TEST(large_map_in_parts) {
  size_t cap = 4u << 20;
  char *json = malloc(cap);
  ck_assert_ptr_nonnull(json);
  size_t len = (size_t)snprintf(json, cap, "{\"format\": \"steerd-map\", \"version\": 1, \"obstacles\": [");
  for (int i = 0; i < 600; i++) {
    float cx = -90.0f + (float)(i % 45) * 4.0f, cy = -90.0f + (float)(i / 45) * 4.0f;
    len += (size_t)snprintf(json + len, cap - len, "%s{\"id\": %d, \"type\": \"polygon\", \"points\": [",
                            i ? "," : "", i + 1);
    for (int k = 0; k < 40; k++) {
      double a = 2.0 * 3.141592653589793 * k / 40.0;
      len += (size_t)snprintf(json + len, cap - len, "%s[%.4f, %.4f]", k ? "," : "", cx + 1.3 * cos(a),
                              cy + 1.3 * sin(a));
    }
    len += (size_t)snprintf(json + len, cap - len, "]}");
  }
  snprintf(json + len, cap - len, "]}");
  write_map(json);
  free(json);
  steerd_proc s;
  const char *extra[] = {"--map", map_path, "--anonymous-role", "admin", NULL};
  server_start(&s, extra);
  raw a;
  raw_connect(&a, s.port);
  raw_hello(&a);
  raw_wait_map(&a, 600, 20000);
  ck_assert_uint_gt(a.map_parts, 10);
  ck_assert_uint_le(a.map_part_max_bytes, PROTO_MAP_PART_BYTES);
  ck_assert_uint_eq(steerd_mapcopy_count(a.map), 600);
  for (uint32_t i = 0; i < 600; i++)
    ck_assert_uint_eq(steerd_mapcopy_get(a.map, i).id, i + 1);

  /* b says HELLO and, before its parts are all out, the map changes: b ends
   * with the new version, complete, equal to a's (which got MAP_CHANGED). */
  raw b;
  raw_connect(&b, s.port);
  proto_command h = command(PROTO_MSG_HELLO);
  h.hello.version = PROTO_VERSION;
  strcpy(h.hello.name, "late");
  raw_send(&b, &h);
  uint64_t end = steerd_proc_now_ms() + 5000;
  proto_server_msg x;
  while (b.map_parts == 0 && steerd_proc_now_ms() < end)
    raw_service(&b, 0, 1, &x);
  ck_assert_uint_ge(b.map_parts, 1);
  proto_command c = remove_obstacle(300);
  proto_server_msg m = raw_command(&a, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  raw_wait_map(&a, 601, 5000);
  raw_wait_map(&b, 601, 20000);
  ck_assert_uint_eq(b.map_bad + a.map_bad, 0);
  assert_same_map(a.map, b.map);
  ck_assert_uint_eq(steerd_mapcopy_count(b.map), 599);
  /* b, not reading meanwhile, had only some of version 600's parts queued (its queue's
   * budget is smaller than the map): it got those, 0..k in order, then version 601 whole
   * from part 0, and no MAP_CHANGED. */
  ck_assert_uint_gt(b.map_parts, a.map_parts);
  ck_assert_uint_eq(b.map_changed, 0);
  uint32_t k = 0;
  while (k < b.part_log && b.parts[k].version == 600) {
    ck_assert_uint_eq(b.parts[k].part_index, k);
    k++;
  }
  ck_assert_uint_ge(k, 1);
  ck_assert_uint_lt(k, b.parts[0].part_count);
  for (uint32_t i = k; i < b.part_log; i++) {
    ck_assert_uint_eq(b.parts[i].version, 601);
    ck_assert_uint_eq(b.parts[i].part_index, i - k);
  }
  ck_assert_uint_eq(b.part_log - k, b.parts[b.part_log - 1].part_count);
  raw_close(&b);
  raw_close(&a);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
  unlink(map_path);
}
END_TEST

/* ---- who may change the map, and bad commands ------------------------------------ */

START_TEST(only_admins_change_the_map) {
  steerd_proc s;
  server_start(&s, NULL); /* anonymous clients are controllers */
  raw a;
  raw_connect(&a, s.port);
  raw_hello(&a);
  proto_command c = add_circle(1, 0.0f, 0.0f, 1.0f);
  proto_server_msg m = raw_command(&a, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_ERROR);
  ck_assert_uint_eq(m.error.code, PROTO_ERR_FORBIDDEN);
  ck_assert_uint_eq(m.error.has_field, 0);
  c = remove_obstacle(1);
  m = raw_command(&a, &c);
  ck_assert_uint_eq(m.error.code, PROTO_ERR_FORBIDDEN);
  raw_wait_map(&a, 0, 3000); /* nothing changed */
  ck_assert_uint_eq(a.map_changed, 0);
  raw_close(&a);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* Sends raw bytes as one command and returns the reply. */
static proto_server_msg raw_bytes(raw *r, const uint8_t *data, size_t n, uint32_t rid) {
  ck_assert_int_eq(steerd_raw_send_bytes(&r->net, data, n, ENET_PACKET_FLAG_RELIABLE), 0);
  proto_server_msg m;
  ck_assert_msg(raw_service(r, rid, 5000, &m) == 0, "no reply to request %u", rid);
  return m;
}

static proto_server_msg expect_error(raw *r, proto_command *c, uint32_t code, const char *field) {
  proto_server_msg m = raw_command(r, c);
  ck_assert_msg(m.type == PROTO_MSG_ERROR, "command accepted; wanted error %u on %s", code,
                field ? field : "nil");
  ck_assert_msg(m.error.code == code, "error %u (%s, field %s), wanted %u on %s", m.error.code,
                m.error.message, m.error.field, code, field ? field : "nil");
  if (field)
    ck_assert_str_eq(m.error.field, field);
  else
    ck_assert_uint_eq(m.error.has_field, 0);
  return m;
}

START_TEST(every_bad_map_command_gets_its_error) {
  steerd_proc s;
  const char *extra[] = {"--anonymous-role", "admin", NULL};
  server_start(&s, extra); /* world +-100 m */
  raw a, other;
  raw_connect(&a, s.port);
  raw_hello(&a);
  raw_connect(&other, s.port);
  raw_hello(&other);
  raw_wait_map(&other, 0, 3000);

  proto_command c = add_circle(5, 0.0f, 0.0f, 1.0f);
  proto_server_msg m = raw_command(&a, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  /* Duplicate id; unknown id; id 0. */
  c = add_circle(5, 20.0f, 20.0f, 1.0f);
  expect_error(&a, &c, PROTO_ERR_OBSTACLE_EXISTS, "id");
  c = remove_obstacle(6);
  expect_error(&a, &c, PROTO_ERR_NO_SUCH_OBSTACLE, "id");
  /* Outside the bounds: a point, a centre, a circle reaching out. */
  vec2 out[] = {{0.0f, 0.0f}, {150.0f, 0.0f}};
  c = add_poly(8, STEER_OBSTACLE_WALL, out, 2);
  expect_error(&a, &c, PROTO_ERR_BAD_FIELD, "points[1]");
  c = add_circle(8, 120.0f, 0.0f, 1.0f);
  expect_error(&a, &c, PROTO_ERR_BAD_FIELD, "center");
  c = add_circle(8, 99.5f, 0.0f, 1.0f);
  expect_error(&a, &c, PROTO_ERR_BAD_FIELD, "radius");
  c = add_circle(8, 10.0f, 0.0f, 0.0005f); /* under 1 mm */
  expect_error(&a, &c, PROTO_ERR_BAD_FIELD, "radius");
  /* Degenerate polygons: collinear (no area), crossing edges (a bow tie); an edge under 1 mm. */
  vec2 line[] = {{0.0f, 10.0f}, {5.0f, 10.0f}, {10.0f, 10.0f}};
  c = add_poly(8, STEER_OBSTACLE_POLYGON, line, 3);
  m = expect_error(&a, &c, PROTO_ERR_BAD_FIELD, "points");
  ck_assert_str_eq(m.error.message, "the polygon has zero area (less than 1 square millimetre)");
  vec2 bow[] = {{0.0f, 20.0f}, {10.0f, 30.0f}, {10.0f, 20.0f}, {0.0f, 30.0f}};
  c = add_poly(8, STEER_OBSTACLE_POLYGON, bow, 4);
  m = expect_error(&a, &c, PROTO_ERR_BAD_FIELD, "points");
  ck_assert_str_eq(m.error.message, "the edges from points[0] and from points[2] cross or touch");
  vec2 tiny[] = {{0.0f, 40.0f}, {0.0002f, 40.0f}, {5.0f, 45.0f}};
  c = add_poly(8, STEER_OBSTACLE_POLYGON, tiny, 3);
  expect_error(&a, &c, PROTO_ERR_BAD_FIELD, "points[1]");
  /* The decoder's faults: too few points, id 0, a circle without radius, non-finite,
   * more than 256 points, an unknown type, an unknown key, points for a circle. */
  {
    /* The encoder refuses these, so they are written by hand. */
    /* [12, 899, {"id": 8, "type": "wall", "points": [[0, 0]]}]: one point */
    static const uint8_t one[] = {0x93, 0x0c, 0xcd, 0x03, 0x83, 0x83, 0xa2, 'i',  'd', 0x08, 0xa4,
                                  't',  'y',  'p',  'e',  0xa4, 'w',  'a',  'l',  'l', 0xa6, 'p',
                                  'o',  'i',  'n',  't',  's',  0x91, 0x92, 0x00, 0x00};
    m = raw_bytes(&a, one, sizeof one, 899);
    ck_assert_uint_eq(m.error.code, PROTO_ERR_BAD_FIELD);
    ck_assert_str_eq(m.error.field, "points");
    /* [13, 900, {"id": 0}] */
    static const uint8_t id0[] = {0x93, 0x0d, 0xcd, 0x03, 0x84, 0x81, 0xa2, 'i', 'd', 0x00};
    m = raw_bytes(&a, id0, sizeof id0, 900);
    ck_assert_uint_eq(m.error.code, PROTO_ERR_BAD_FIELD);
    ck_assert_str_eq(m.error.field, "id");
    /* [12, 901, {"id": 8, "type": "circle", "center": [0, 0]}] */
    static const uint8_t noradius[] = {0x93, 0x0c, 0xcd, 0x03, 0x85, 0x83, 0xa2, 'i',  'd',  0x08, 0xa4,
                                       't',  'y',  'p',  'e',  0xa6, 'c',  'i',  'r',  'c',  'l',  'e',
                                       0xa6, 'c',  'e',  'n',  't',  'e',  'r',  0x92, 0x00, 0x00};
    m = raw_bytes(&a, noradius, sizeof noradius, 901);
    ck_assert_uint_eq(m.error.code, PROTO_ERR_BAD_FIELD);
    ck_assert_str_eq(m.error.field, "radius");
    /* [12, 902, {"id": 8, "type": "circle", "center": [NaN, 0], "radius": 1}] */
    static const uint8_t nan[] = {0x93, 0x0c, 0xcd, 0x03, 0x86, 0x84, 0xa2, 'i',  'd',  0x08, 0xa4,
                                  't',  'y',  'p',  'e',  0xa6, 'c',  'i',  'r',  'c',  'l',  'e',
                                  0xa6, 'c',  'e',  'n',  't',  'e',  'r',  0x92, 0xca, 0x7f, 0xc0,
                                  0x00, 0x00, 0x00, 0xa6, 'r',  'a',  'd',  'i',  'u',  's',  0x01};
    m = raw_bytes(&a, nan, sizeof nan, 902);
    ck_assert_uint_eq(m.error.code, PROTO_ERR_BAD_FIELD);
    ck_assert_str_eq(m.error.field, "center[0]");
    /* [12, 903, {"id": 8, "type": "hexagon"}] */
    static const uint8_t type[] = {0x93, 0x0c, 0xcd, 0x03, 0x87, 0x82, 0xa2, 'i', 'd', 0x08, 0xa4, 't',
                                   'y',  'p',  'e',  0xa7, 'h',  'e',  'x',  'a', 'g', 'o',  'n'};
    m = raw_bytes(&a, type, sizeof type, 903);
    ck_assert_uint_eq(m.error.code, PROTO_ERR_BAD_FIELD);
    ck_assert_str_eq(m.error.field, "type");
    /* [12, 904, {"id": 8, "type": "circle", "centre": [0, 0]}]: a typo */
    static const uint8_t typo[] = {0x93, 0x0c, 0xcd, 0x03, 0x88, 0x83, 0xa2, 'i',  'd',  0x08, 0xa4,
                                   't',  'y',  'p',  'e',  0xa6, 'c',  'i',  'r',  'c',  'l',  'e',
                                   0xa6, 'c',  'e',  'n',  't',  'r',  'e',  0x92, 0x00, 0x00};
    m = raw_bytes(&a, typo, sizeof typo, 904);
    ck_assert_uint_eq(m.error.code, PROTO_ERR_BAD_FIELD);
    ck_assert_str_eq(m.error.field, "centre");
  }
  {
    /* 257 points: built by hand, the encoder refuses it. */
    static uint8_t big[8192];
    size_t n = 0;
    const uint8_t head[] = {0x93, 0x0c, 0xcd, 0x03, 0x89, 0x83, 0xa2, 'i',  'd',  0x08,
                            0xa4, 't',  'y',  'p',  'e',  0xa4, 'w',  'a',  'l',  'l',
                            0xa6, 'p',  'o',  'i',  'n',  't',  's',  0xdc, 0x01, 0x01};
    memcpy(big, head, sizeof head);
    n = sizeof head;
    for (int i = 0; i < 257; i++) {
      big[n++] = 0x92;
      big[n++] = (uint8_t)(i % 100);
      big[n++] = 0x00;
    }
    m = raw_bytes(&a, big, n, 905);
    ck_assert_uint_eq(m.error.code, PROTO_ERR_BAD_FIELD);
    ck_assert_str_eq(m.error.field, "points");
  }
  /* A circle given points: hand-written too ([12, 906, {"id": 8, "type": "circle", "points": [[0,0]]}]). */
  {
    static const uint8_t cp[] = {0x93, 0x0c, 0xcd, 0x03, 0x8a, 0x83, 0xa2, 'i',  'd',  0x08, 0xa4,
                                 't',  'y',  'p',  'e',  0xa6, 'c',  'i',  'r',  'c',  'l',  'e',
                                 0xa6, 'p',  'o',  'i',  'n',  't',  's',  0x91, 0x92, 0x00, 0x00};
    m = raw_bytes(&a, cp, sizeof cp, 906);
    ck_assert_uint_eq(m.error.code, PROTO_ERR_BAD_FIELD);
    ck_assert_str_eq(m.error.field, "center");
    /* [12, 907, {"id": 8, "type": "circle", "center": [0, 0], "radius": 1, "points": [[0, 0]]}]:
     * a whole circle, and points besides */
    static const uint8_t cpp[] = {0x93, 0x0c, 0xcd, 0x03, 0x8b, 0x85, 0xa2, 'i', 'd',  0x08, 0xa4, 't', 'y',
                                  'p',  'e',  0xa6, 'c',  'i',  'r',  'c',  'l', 'e',  0xa6, 'c',  'e', 'n',
                                  't',  'e',  'r',  0x92, 0x00, 0x00, 0xa6, 'r', 'a',  'd',  'i',  'u', 's',
                                  0x01, 0xa6, 'p',  'o',  'i',  'n',  't',  's', 0x91, 0x92, 0x00, 0x00};
    m = raw_bytes(&a, cpp, sizeof cpp, 907);
    ck_assert_uint_eq(m.error.code, PROTO_ERR_BAD_FIELD);
    ck_assert_str_eq(m.error.field, "points");
    /* [12, 908, {"id": 8, "type": "polygon", "points": [[0, 0], [1, 0], [0, 1]], "center": [0, 0]}] */
    static const uint8_t pc[] = {0x93, 0x0c, 0xcd, 0x03, 0x8c, 0x84, 0xa2, 'i',  'd',  0x08, 0xa4, 't',  'y',
                                 'p',  'e',  0xa7, 'p',  'o',  'l',  'y',  'g',  'o',  'n',  0xa6, 'p',  'o',
                                 'i',  'n',  't',  's',  0x93, 0x92, 0x00, 0x00, 0x92, 0x01, 0x00, 0x92, 0x00,
                                 0x01, 0xa6, 'c',  'e',  'n',  't',  'e',  'r',  0x92, 0x00, 0x00};
    m = raw_bytes(&a, pc, sizeof pc, 908);
    ck_assert_uint_eq(m.error.code, PROTO_ERR_BAD_FIELD);
    ck_assert_str_eq(m.error.field, "center");
  }

  /* Nothing of that changed the map; the server serves everyone. */
  raw_wait_map(&a, 1, 3000);
  raw_wait_map(&other, 1, 3000);
  ck_assert_uint_eq(steerd_mapcopy_count(other.map), 1);
  proto_command p = command(PROTO_MSG_PING);
  m = raw_command(&other, &p);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  c = remove_obstacle(5);
  m = raw_command(&a, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  raw_wait_map(&other, 2, 3000);
  ck_assert_uint_eq(steerd_mapcopy_count(other.map), 0);
  raw_close(&other);
  raw_close(&a);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* ---- agents under a new obstacle -------------------------------------------------- */

static steer_id spawn_at(raw *r, float x, float y) {
  proto_command c = command(PROTO_MSG_SPAWN);
  c.spawn.model = STEER_MODEL_DYNAMIC;
  c.spawn.position = proto_v2(x, y);
  c.spawn.present = PROTO_SPAWN_BEHAVIOUR;
  c.spawn.behaviour.kind = STEER_BEHAVIOUR_WANDER;
  proto_server_msg m = raw_command(r, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  return m.ack.agent;
}

/* Every agent's body is clear of the copy's geometry (1 mm of float slack). */
static void assert_all_free(raw *r, const steer_id *ids, uint32_t n, const steer_map *m) {
  for (uint32_t i = 0; i < n; i++) {
    proto_command q = command(PROTO_MSG_QUERY);
    q.query.agent = ids[i];
    proto_server_msg a = raw_command(r, &q);
    ck_assert_uint_eq(a.type, PROTO_MSG_ACK);
    vec2 p = wire_to_vec2(a.ack.query.state.position);
    ck_assert_msg(steer_map_free(m, p, a.ack.query.limits.radius, 1e-3f),
                  "agent %u at (%g, %g) overlaps geometry", ids[i], (double)p.x, (double)p.y);
  }
}

START_TEST(obstacle_on_agents_moves_them_out) {
  steerd_proc s;
  const char *extra[] = {"--anonymous-role", "admin", "--rate-limit", "10000", "--rate-burst", "10000", NULL};
  server_start(&s, extra);
  raw a;
  raw_connect(&a, s.port);
  raw_hello(&a);
  steer_id ids[40];
  uint32_t n = 0;
  for (int i = 0; i < 6; i++)
    for (int k = 0; k < 6; k++)
      ids[n++] = spawn_at(&a, -5.0f + 2.0f * (float)i, -5.0f + 2.0f * (float)k);
  /* A crate lands on most of them, a wall cuts through the rest. */
  vec2 crate[] = {{-4.0f, -4.0f}, {4.0f, -4.0f}, {4.0f, 4.0f}, {-4.0f, 4.0f}};
  proto_command c = add_poly(1, STEER_OBSTACLE_POLYGON, crate, 4);
  proto_server_msg m = raw_command(&a, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  ck_assert_uint_ge(m.ack.moved, 16); /* the 4 x 4 inside, and those touching its edges */
  vec2 wall[] = {{-10.0f, 5.0f}, {10.0f, 5.2f}};
  c = add_poly(2, STEER_OBSTACLE_WALL, wall, 2);
  m = raw_command(&a, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  ck_assert_uint_ge(m.ack.moved, 1);
  raw_wait_map(&a, 2, 3000);
  /* The copy as a core map, to measure against. */
  steer_map *mm = steer_map_create(v2(-100.0f, -100.0f), v2(100.0f, 100.0f), 8.0f);
  for (uint32_t i = 0; i < steerd_mapcopy_count(a.map); i++) {
    proto_obstacle o = steerd_mapcopy_get(a.map, i);
    vec2 dp[PROTO_MAX_OBSTACLE_POINTS];
    steer_obstacle_desc d = wire_obstacle_desc(&o, dp);
    ck_assert_int_eq(steer_map_add(mm, o.id, &d), STEER_OK);
  }
  assert_all_free(&a, ids, n, mm);
  /* And while they wander for a while. */
  for (int round = 0; round < 3; round++) {
    proto_server_msg x;
    raw_service(&a, 0, 300, &x);
    assert_all_free(&a, ids, n, mm);
  }
  steer_map_destroy(mm);
  raw_close(&a);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* A path point inside a polygon or circle: BLOCKED naming the first such point,
 * "points[i]" for SET_PATH and "path.points[i]" for SPAWN; nothing changes. */
START_TEST(path_point_inside_geometry_is_named) {
  write_map(LEVEL); /* a circle at (10, 10) r 2; the U, x 0..2 its left arm */
  steerd_proc s;
  const char *extra[] = {"--map", map_path, NULL};
  server_start(&s, extra);
  raw a;
  raw_connect(&a, s.port);
  raw_hello(&a);
  steer_id id = spawn_at(&a, 50.0f, 50.0f);
  proto_command c = command(PROTO_MSG_SET_PATH);
  c.set_path.agent = id;
  c.set_path.path.count = 4;
  c.set_path.path.radius = 1.0f;
  c.set_path.path.mode = STEER_PATH_ONCE;
  c.set_path.path.cornering = STEER_CORNER_NONE;
  c.set_path.path.points[0] = proto_v2(40.0f, 40.0f);
  c.set_path.path.points[1] = proto_v2(30.0f, 30.0f);
  c.set_path.path.points[2] = proto_v2(10.0f, 10.5f); /* in the circle */
  c.set_path.path.points[3] = proto_v2(1.0f, 5.0f);   /* in the U */
  expect_error(&a, &c, PROTO_ERR_BLOCKED, "points[2]");
  proto_command q = command(PROTO_MSG_QUERY);
  q.query.agent = id;
  proto_server_msg m = raw_command(&a, &q);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  ck_assert_uint_eq(m.ack.query.behaviour, STEER_BEHAVIOUR_WANDER); /* kept */
  c = command(PROTO_MSG_SPAWN);
  c.spawn.model = STEER_MODEL_DYNAMIC;
  c.spawn.position = proto_v2(-50.0f, 50.0f);
  c.spawn.present = PROTO_SPAWN_PATH;
  c.spawn.path.count = 3;
  c.spawn.path.radius = 1.0f;
  c.spawn.path.mode = STEER_PATH_LOOP;
  c.spawn.path.cornering = STEER_CORNER_NONE;
  c.spawn.path.points[0] = proto_v2(-40.0f, 40.0f);
  c.spawn.path.points[1] = proto_v2(1.0f, 5.0f); /* in the U */
  c.spawn.path.points[2] = proto_v2(-45.0f, 45.0f);
  expect_error(&a, &c, PROTO_ERR_BLOCKED, "path.points[1]");
  raw_close(&a);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
  unlink(map_path);
}
END_TEST

/* ---- STUCK on the wire and in /metrics ---------------------------------------------- */

/* The value of a metric line "name value" in a Prometheus exposition, or -1. */
static double metric(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *p = text; (p = strstr(p, name)) != NULL; p += n)
    if ((p == text || p[-1] == '\n') && p[n] == ' ')
      return strtod(p + n + 1, NULL);
  return -1.0;
}

/* An add refused with BLOCKED changes nothing, the map's version included: the
 * next change is one version on, every client's copy follows it without a gap,
 * and /metrics and /api/map report the same version. */
START_TEST(blocked_add_keeps_the_version) {
  steerd_proc s;
  const char *extra[] = {"--anonymous-role", "admin", "--http-port", "auto", NULL};
  server_start(&s, extra); /* world +-100 m */
  raw a, other;
  raw_connect(&a, s.port);
  raw_hello(&a);
  raw_connect(&other, s.port);
  raw_hello(&other);
  raw_wait_map(&other, 0, 3000);
  proto_command c = add_circle(5, 50.0f, 50.0f, 1.0f);
  ck_assert_uint_eq(raw_command(&a, &c).type, PROTO_MSG_ACK);
  spawn_at(&a, 0.0f, 0.0f);
  /* A crate of 180 x 180 m over the agent: the nearest free place is 90 m away. */
  vec2 crate[] = {{-90.0f, -90.0f}, {90.0f, -90.0f}, {90.0f, 90.0f}, {-90.0f, 90.0f}};
  c = add_poly(6, STEER_OBSTACLE_POLYGON, crate, 4);
  expect_error(&a, &c, PROTO_ERR_BLOCKED, NULL);
  c = remove_obstacle(5);
  proto_server_msg m = raw_command(&a, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  ck_assert_uint_eq(m.ack.map_version, 2);
  raw_wait_map(&other, 2, 3000);
  raw_wait_map(&a, 2, 3000);
  ck_assert_uint_eq(other.map_changed, 2); /* versions 1 and 2, nothing skipped */
  ck_assert_uint_eq(other.last_change_version, 2);
  ck_assert_uint_eq(other.map_bad + a.map_bad, 0);
  ck_assert_uint_eq(steerd_mapcopy_count(other.map), 0);
  static char body[65536];
  ck_assert_int_eq(http_get(s.http_port, "/metrics", body, sizeof body, 5000), 200);
  ck_assert_int_eq((int)metric(body, "steerd_map_version"), 2);
  ck_assert_int_eq((int)metric(body, "steerd_map_changes_total"), 2);
  ck_assert_int_eq(http_get(s.http_port, "/api/map", body, sizeof body, 5000), 200);
  ck_assert_msg(strstr(body, "\"version\":2,") != NULL, "%s", body);
  raw_close(&other);
  raw_close(&a);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
}
END_TEST

/* A seeker opted in to stuck detection through PARAMS walks into a dead end:
 * STUCK (event 6, data 0) reaches the clients, /metrics counts it, and counts
 * the map's obstacles, version and changes. */
START_TEST(stuck_event_and_metrics) {
  write_map(LEVEL); /* obstacle 7 is a U open toward +y: x 2..8 inside, y 2..10 */
  steerd_proc s;
  const char *extra[] = {"--map", map_path, "--anonymous-role", "admin", "--http-port", "auto", NULL};
  server_start(&s, extra);
  raw a;
  raw_connect(&a, s.port);
  raw_hello(&a);
  proto_command c = remove_obstacle(1); /* the circle at (10, 10) */
  ck_assert_uint_eq(raw_command(&a, &c).type, PROTO_MSG_ACK);
  c = command(PROTO_MSG_SPAWN);
  c.spawn.model = STEER_MODEL_DYNAMIC;
  c.spawn.position = proto_v2(5.0f, 8.0f); /* inside the U, its goal beyond the bottom wall */
  c.spawn.present = PROTO_SPAWN_BEHAVIOUR;
  c.spawn.behaviour.kind = STEER_BEHAVIOUR_SEEK;
  c.spawn.behaviour.present = PROTO_BHV_TARGET;
  c.spawn.behaviour.target = proto_v2(5.0f, -10.0f);
  c.spawn.behaviour.params.present = PROTO_PARAM_STUCK_TIME | PROTO_PARAM_WALL_LOOKAHEAD;
  c.spawn.behaviour.params.tuning.stuck_time = 0.5f;
  c.spawn.behaviour.params.tuning.wall_lookahead = 0.0f;
  proto_server_msg m = raw_command(&a, &c);
  ck_assert_uint_eq(m.type, PROTO_MSG_ACK);
  steer_id seeker = m.ack.agent;
  int stuck = 0;
  uint64_t end = steerd_proc_now_ms() + 10000;
  while (!stuck && steerd_proc_now_ms() < end) {
    raw_service(&a, 0, 20, &m);
    for (uint32_t i = 0; i < a.event_count; i++)
      stuck |= a.events[i].code == PROTO_EVENT_STUCK && a.events[i].agent == seeker && a.events[i].data == 0;
  }
  ck_assert_msg(stuck, "no STUCK event within 10 s");
  static char body[65536];
  ck_assert_int_eq(http_get(s.http_port, "/metrics", body, sizeof body, 5000), 200);
  ck_assert_msg(metric(body, "steerd_agents_stuck_total") >= 1.0, "%s", body);
  ck_assert_int_eq((int)metric(body, "steerd_map_obstacles"), 2);
  ck_assert_int_eq((int)metric(body, "steerd_map_version"), 4);
  ck_assert_int_eq((int)metric(body, "steerd_map_changes_total"), 1);
  ck_assert_int_ge((int)metric(body, "steerd_map_parts_sent_total"), 1);
  ck_assert_int_eq((int)metric(body, "steerd_map_changed_sent_total"), 1);
  raw_close(&a);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
  unlink(map_path);
}
END_TEST

/* ---- checkpoint and restore --------------------------------------------------------- */

static unsigned long long logged_hash(const steerd_proc *s, const char *after) {
  FILE *f = fopen(s->log_path, "r");
  ck_assert_ptr_nonnull(f);
  char line[1024];
  unsigned long long h = 0;
  while (fgets(line, sizeof line, f)) {
    char *p = strstr(line, after);
    char *q = p ? strstr(p, "state hash ") : NULL;
    if (q)
      h = strtoull(q + strlen("state hash "), NULL, 16);
  }
  fclose(f);
  return h;
}

START_TEST(checkpoint_keeps_the_map) {
  char state[64];
  snprintf(state, sizeof state, "/tmp/steerd-map-state-%d.bin", (int)getpid());
  unlink(state);
  write_map(LEVEL);
  steerd_proc s;
  const char *extra[] = {"--map", map_path, "--anonymous-role", "admin", "--state", state, NULL};
  server_start(&s, extra);
  raw a;
  raw_connect(&a, s.port);
  raw_hello(&a);
  proto_command c = remove_obstacle(1);
  ck_assert_uint_eq(raw_command(&a, &c).type, PROTO_MSG_ACK);
  c = add_circle(77, 40.0f, -40.0f, 3.5f);
  ck_assert_uint_eq(raw_command(&a, &c).type, PROTO_MSG_ACK);
  raw_wait_map(&a, 5, 3000);
  raw_close(&a);
  /* SIGTERM writes the checkpoint; the server exits 0 and its log gives the hash. */
  kill(s.pid, SIGTERM);
  int status = -1;
  uint64_t end = steerd_proc_now_ms() + 10000;
  while (waitpid(s.pid, &status, WNOHANG) == 0 && steerd_proc_now_ms() < end)
    steerd_proc_sleep_ms(20);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the server did not exit 0 (status %d)",
                status);
  unsigned long long saved = logged_hash(&s, "checkpoint (shutdown)");
  ck_assert_uint_ne(saved, 0);
  unlink(s.log_path);
  /* The copy kept in the first run is gone with it; the second run restores. */
  steerd_proc s2;
  server_start(&s2, extra);
  raw b;
  raw_connect(&b, s2.port);
  raw_hello(&b);
  raw_wait_map(&b, 5, 5000);
  ck_assert_uint_eq(steerd_mapcopy_count(b.map), 3);
  ck_assert_uint_eq(steerd_mapcopy_get(b.map, 0).id, 7);
  ck_assert_uint_eq(steerd_mapcopy_get(b.map, 2).id, 77);
  ck_assert_float_eq(steerd_mapcopy_get(b.map, 2).radius, 3.5f);
  ck_assert(steerd_proc_log_contains(&s2, "the restored world keeps its own map (3 obstacles)"));
  unsigned long long restored = logged_hash(&s2, "restored");
  ck_assert_uint_eq(restored, saved); /* the same world, map included */
  raw_close(&b);
  ck_assert_int_eq(steerd_proc_stop(&s2, 5000), 0);
  unlink(state);
  unlink(map_path);
}
END_TEST

/* The hash of a copy's map, put back into a map over the bounds (the order
 * and bits of a copy are the server's, so this is the server map's hash). */
static uint64_t copy_hash(const steerd_mapcopy *copy, vec2 lo, vec2 hi) {
  steer_map *m = steer_map_create(lo, hi, 1.0f);
  ck_assert_ptr_nonnull(m);
  steer_map_hold(m);
  for (uint32_t i = 0; i < steerd_mapcopy_count(copy); i++) {
    proto_obstacle o = steerd_mapcopy_get(copy, i);
    vec2 dp[PROTO_MAX_OBSTACLE_POINTS];
    steer_obstacle_desc d = wire_obstacle_desc(&o, dp);
    ck_assert_int_eq(steer_map_add(m, o.id, &d), STEER_OK);
  }
  ck_assert_int_eq(steer_map_release(m), STEER_OK);
  uint64_t h = steer_map_hash(m, 0);
  steer_map_destroy(m);
  return h;
}

/* A level of real size: 30 000 obstacles (squares, circles, walls; more than
 * the old cap of 16 384) in a 512 x 512 m world reach a client in parts that
 * rebuild the server's map, hash for hash; a checkpoint keeps all of them. */
START_TEST(map_of_30000_reaches_a_client_and_survives_a_checkpoint) {
  const uint32_t n = 30000;
  size_t cap = 8u << 20;
  char *json = malloc(cap);
  ck_assert_ptr_nonnull(json);
  size_t len = (size_t)snprintf(json, cap, "{\"format\": \"steerd-map\", \"version\": 1, \"obstacles\": [");
  for (uint32_t i = 0; i < n; i++) {
    int x = -255 + 2 * (int)(i % 250u), y = -255 + 2 * (int)(i / 250u);
    const char *sep = i ? "," : "";
    if (i % 3u == 0u)
      len += (size_t)snprintf(
          json + len, cap - len,
          "%s{\"id\": %u, \"type\": \"polygon\", \"points\": [[%d,%d],[%d.5,%d],[%d.5,%d.5],[%d,%d.5]]}", sep,
          i + 1u, x, y, x, y, x, y, x, y);
    else if (i % 3u == 1u)
      len +=
          (size_t)snprintf(json + len, cap - len,
                           "%s{\"id\": %u, \"type\": \"circle\", \"center\": [%d.25,%d.25], \"radius\": 0.3}",
                           sep, i + 1u, x, y);
    else
      len += (size_t)snprintf(json + len, cap - len,
                              "%s{\"id\": %u, \"type\": \"wall\", \"points\": [[%d,%d],[%d.75,%d.1]]}", sep,
                              i + 1u, x, y, x, y);
    ck_assert_uint_lt(len, cap);
  }
  len += (size_t)snprintf(json + len, cap - len, "]}");
  /* What the server makes of the file: the hash every copy must have. */
  const vec2 lo = v2(-256.0f, -256.0f), hi = v2(256.0f, 256.0f);
  steer_map *want = steer_map_create(lo, hi, 1.0f);
  char err[256];
  ck_assert_msg(steerd_map_parse(json, len, want, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(steer_map_count(want), n);
  const uint64_t want_hash = steer_map_hash(want, 0);
  steer_map_destroy(want);
  write_map(json);
  free(json);

  char state[64];
  snprintf(state, sizeof state, "/tmp/steerd-map-big-%d.bin", (int)getpid());
  unlink(state);
  static const char *const base[] = {"--no-demo", "--client-timeout",  "4000",
                                     "--world",   "-256,-256,256,256", NULL};
  /* Parts go while the client's queue is under an eighth of --client-queue-kb,
   * topped up at every tick: 4 MB lets 512 KB go per tick instead of 32 KB,
   * so the 2 MB of MAP take a few ticks rather than a second and a half. */
  const char *extra[] = {
      "--map", map_path, "--anonymous-role", "admin", "--state", state, "--client-queue-kb", "4096", NULL};
  steerd_proc s;
  ck_assert_msg(steerd_proc_start_with(&s, STEERD_BINARY, base, extra, 30000) == 0,
                "the server did not start");
  raw a;
  raw_connect(&a, s.port);
  raw_hello(&a);
  raw_wait_map(&a, n, 20000);
  ck_assert_uint_eq(a.map_bad, 0);
  ck_assert_uint_gt(a.map_parts, 50);
  ck_assert_uint_le(a.map_part_max_bytes, PROTO_MAP_PART_BYTES);
  ck_assert_uint_eq(steerd_mapcopy_count(a.map), n);
  ck_assert_uint_eq(copy_hash(a.map, lo, hi), want_hash);
  raw_close(&a);
  kill(s.pid, SIGTERM);
  int status = -1;
  uint64_t end = steerd_proc_now_ms() + 10000;
  while (waitpid(s.pid, &status, WNOHANG) == 0 && steerd_proc_now_ms() < end)
    steerd_proc_sleep_ms(20);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the server did not exit 0 (status %d)",
                status);
  unsigned long long saved = logged_hash(&s, "checkpoint (shutdown)");
  ck_assert_uint_ne(saved, 0);
  unlink(s.log_path);

  /* Restored from the state file (the map file is not read again). */
  unlink(map_path);
  steerd_proc s2;
  const char *again[] = {"--anonymous-role", "admin", "--state", state, "--client-queue-kb", "4096", NULL};
  ck_assert_msg(steerd_proc_start_with(&s2, STEERD_BINARY, base, again, 30000) == 0,
                "the server did not restart");
  ck_assert_uint_eq(logged_hash(&s2, "restored"), saved);
  raw b;
  raw_connect(&b, s2.port);
  raw_hello(&b);
  raw_wait_map(&b, n, 20000);
  ck_assert_uint_eq(b.map_bad, 0);
  ck_assert_uint_eq(copy_hash(b.map, lo, hi), want_hash);
  raw_close(&b);
  ck_assert_int_eq(steerd_proc_stop(&s2, 5000), 0);
  unlink(state);
}
END_TEST

/* ---- steerd-client ----------------------------------------------------------------------- */

typedef struct cli_result {
  int status;
  char out[65536], err[4096];
} cli_result;

/* steerd-client --port PORT args... (NULL-terminated). */
static void cli(cli_result *r, uint16_t port, const char *const *args) {
  static char bin[1100];
  ck_assert_int_eq(child_run_sibling(STEERD_BINARY, "client-sample/steerd-client", bin, sizeof bin), 0);
  char portstr[16];
  snprintf(portstr, sizeof portstr, "%u", (unsigned)port);
  char *argv[16] = {bin, "--port", portstr};
  int n = 3;
  for (int i = 0; args[i] && n < 15; i++)
    argv[n++] = (char *)args[i];
  argv[n] = NULL;
  char *envp[] = {"PATH=/usr/bin:/bin", NULL};
  ck_assert_int_eq(child_run_capture(bin, argv, envp, "/dev/null", 10000, &r->status, r->out, sizeof r->out,
                                     r->err, sizeof r->err),
                   0);
}

/* steerd-client adds and removes obstacles and prints the map as a map file
 * that a server loads back to the same map. */
START_TEST(steerd_client_prints_and_edits_the_map) {
  write_map(LEVEL);
  steerd_proc s;
  const char *extra[] = {"--map", map_path, "--anonymous-role", "admin", NULL};
  server_start(&s, extra);
  cli_result r;
  const char *add[] = {"add-obstacle", "--id", "12", "--type", "wall", "--points", "10,6;10,8.25", NULL};
  cli(&r, s.port, add);
  ck_assert_msg(r.status == 0, "add-obstacle: %s", r.err);
  ck_assert_str_eq(r.out, "obstacle 12 added: map version 4, 0 agents moved out of it\n");
  const char *circle[] = {"add-obstacle", "--id",   "13",       "--type", "circle",
                          "--center",     "-3.5,4", "--radius", "0.75",   NULL};
  cli(&r, s.port, circle);
  ck_assert_int_eq(r.status, 0);
  const char *rm[] = {"remove-obstacle", "1", NULL};
  cli(&r, s.port, rm);
  ck_assert_str_eq(r.out, "obstacle 1 removed: map version 6\n");
  cli(&r, s.port, rm); /* again: the server's error, exit 1 */
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(r.err, "NO_SUCH_OBSTACLE") != NULL, "%s", r.err);
  const char *map[] = {"map", NULL};
  cli(&r, s.port, map);
  ck_assert_int_eq(r.status, 0);
  ck_assert_msg(strstr(r.err, "map version 6, 4 obstacles") != NULL, "%s", r.err);
  ck_assert_msg(strstr(r.out, "{\"id\": 12, \"type\": \"wall\", \"points\": [[10, 6], [10, 8.25]]}") != NULL,
                "%s", r.out);
  ck_assert_msg(
      strstr(r.out, "{\"id\": 13, \"type\": \"circle\", \"center\": [-3.5, 4], \"radius\": 0.75}") != NULL,
      "%s", r.out);
  ck_assert_int_ne(steerd_proc_stop(&s, 3000), -1);
  /* What it printed is a map file: a server loads it, and sends the same obstacles. */
  write_map(r.out);
  steerd_proc s2;
  server_start(&s2, extra);
  ck_assert(steerd_proc_log_contains(&s2, ": 4 obstacles"));
  raw a;
  raw_connect(&a, s2.port);
  raw_hello(&a);
  raw_wait_map(&a, 4, 5000);
  ck_assert_uint_eq(steerd_mapcopy_get(a.map, 0).id, 7);
  ck_assert_uint_eq(steerd_mapcopy_get(a.map, 3).id, 13);
  ck_assert_float_eq(steerd_mapcopy_get(a.map, 2).points[1].y, 8.25f);
  raw_close(&a);
  ck_assert_int_ne(steerd_proc_stop(&s2, 3000), -1);
  unlink(map_path);
}
END_TEST

static Suite *map_suite(void) {
  Suite *s = suite_create("server_map");
  TCase *tc = check_tcase(s, "map", 120);
  tcase_add_test(tc, map_at_welcome_and_after_every_change);
  tcase_add_test(tc, empty_map_is_one_empty_part);
  tcase_add_test(tc, large_map_in_parts);
  tcase_add_test(tc, only_admins_change_the_map);
  tcase_add_test(tc, every_bad_map_command_gets_its_error);
  tcase_add_test(tc, obstacle_on_agents_moves_them_out);
  tcase_add_test(tc, blocked_add_keeps_the_version);
  tcase_add_test(tc, path_point_inside_geometry_is_named);
  tcase_add_test(tc, checkpoint_keeps_the_map);
  tcase_add_test(tc, steerd_client_prints_and_edits_the_map);
  tcase_add_test(tc, stuck_event_and_metrics);
  TCase *big = check_tcase(s, "big", 60);
  tcase_add_test(big, map_of_30000_reaches_a_client_and_survives_a_checkpoint);
  return s;
}

int main(void) {
  unsetenv("STEERD_SECRET");
  unsetenv("STEERD_SECRET_FILE");
  unsetenv("STEERD_MAP");
  if (enet_initialize() != 0)
    return EXIT_FAILURE;
  int status = check_run(map_suite());
  enet_deinitialize();
  return status;
}

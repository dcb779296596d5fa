/* fuzz_map_msg.c: libFuzzer target for proto_decode_map and
 * proto_decode_map_changed (the client's side of PROTOCOL.md 17).
 *
 * Each input is one packet. Both decoders run with large and small buffers,
 * which must agree (the same answer or TOO_LARGE); a decoded MAP part must hold
 * obstacles of valid shapes (ids >= 1, a circle's one point and radius > 0,
 * 3..256 polygon and 2..256 wall points, finite numbers), part_index <
 * part_count, no more obstacles than obstacle_total; re-encoding it gives bytes
 * that decode to the same part and re-encode to the same bytes. MAP_CHANGED
 * likewise. The ADD_OBSTACLE and REMOVE_OBSTACLE bodies are fuzz_command's. */
#include "fuzz_common.h"

#include "map_msg.h"

#define FUZZ_OBS    1024
#define FUZZ_POINTS 8192

static proto_obstacle obs_a[FUZZ_OBS], obs_b[FUZZ_OBS];
static proto_vec2 pts_a[FUZZ_POINTS], pts_b[FUZZ_POINTS];
static uint8_t enc1[2 * PROTO_MAX_MESSAGE_BYTES], enc2[2 * PROTO_MAX_MESSAGE_BYTES];

static void check_obstacle(const proto_obstacle *o) {
  FUZZ_CHECK(o->id >= 1 && o->kind < PROTO_OBSTACLE_KIND_COUNT);
  if (o->kind == PROTO_OBSTACLE_CIRCLE)
    FUZZ_CHECK(o->count == 1 && fuzz_number_ok(o->radius) && o->radius > 0.0f);
  else
    FUZZ_CHECK(o->count >= (o->kind == PROTO_OBSTACLE_POLYGON ? 3u : 2u) &&
               o->count <= PROTO_MAP_MAX_POINTS && o->radius == 0.0f);
  for (uint32_t i = 0; i < o->count; i++)
    FUZZ_CHECK(fuzz_number_ok(o->points[i].x) && fuzz_number_ok(o->points[i].y));
  FUZZ_CHECK(proto_obstacle_size(o) > 0 && proto_obstacle_size(o) <= PROTO_MAP_OBSTACLE_MAX_BYTES);
}

static int same_obstacle(const proto_obstacle *a, const proto_obstacle *b) {
  return a->id == b->id && a->kind == b->kind && a->count == b->count &&
         memcmp(&a->radius, &b->radius, sizeof a->radius) == 0 &&
         memcmp(a->points, b->points, a->count * sizeof *a->points) == 0;
}

static void fuzz_map(const uint8_t *data, size_t size) {
  proto_map_header h, h2;
  proto_error_info err;
  uint32_t n = 7, n2;
  int rc = proto_decode_map(data, size, &h, obs_a, FUZZ_OBS, &n, pts_a, FUZZ_POINTS, &err);
  if (rc != 0) {
    fuzz_check_error(rc, &err);
    FUZZ_CHECK(n == 0);
  } else {
    fuzz_check_ok(rc, &err);
    FUZZ_CHECK(h.part_count >= 1 && h.part_index < h.part_count && n <= h.obstacle_total);
    for (uint32_t i = 0; i < n; i++)
      check_obstacle(&obs_a[i]);
    size_t len = proto_encode_map(enc1, sizeof enc1, &h, proto_obstacle_array_at, obs_a, 0, n);
    FUZZ_CHECK(len > 0); /* not <= size: numbers sent as small integers come back as float32 */
    FUZZ_CHECK(proto_decode_map(enc1, len, &h2, obs_b, FUZZ_OBS, &n2, pts_b, FUZZ_POINTS, NULL) == 0);
    FUZZ_CHECK(memcmp(&h, &h2, sizeof h) == 0 && n2 == n);
    for (uint32_t i = 0; i < n; i++)
      FUZZ_CHECK(same_obstacle(&obs_a[i], &obs_b[i]));
    size_t len2 = proto_encode_map(enc2, sizeof enc2, &h2, proto_obstacle_array_at, obs_b, 0, n2);
    FUZZ_CHECK(len2 == len && memcmp(enc1, enc2, len) == 0);
  }
  /* Small buffers: the same answer or TOO_LARGE. */
  int rc_s = proto_decode_map(data, size, &h2, obs_b, 2, &n2, pts_b, 8, NULL);
  if (rc == 0)
    FUZZ_CHECK(rc_s == 0 || rc_s == -PROTO_ERR_TOO_LARGE);
  else
    FUZZ_CHECK(rc_s != 0);
}

static void fuzz_map_changed(const uint8_t *data, size_t size) {
  uint32_t removed_a[PROTO_MAP_CHANGED_MAX], removed_b[PROTO_MAP_CHANGED_MAX];
  proto_map_changed c, c2;
  proto_error_info err;
  int rc = proto_decode_map_changed(data, size, &c, removed_a, obs_a, pts_a, FUZZ_POINTS, &err);
  if (rc != 0) {
    fuzz_check_error(rc, &err);
    return;
  }
  fuzz_check_ok(rc, &err);
  FUZZ_CHECK(c.version >= 1 && c.removed_count <= PROTO_MAP_CHANGED_MAX &&
             c.added_count <= PROTO_MAP_CHANGED_MAX);
  for (uint32_t i = 0; i < c.removed_count; i++)
    FUZZ_CHECK(c.removed[i] >= 1);
  for (uint32_t i = 0; i < c.added_count; i++)
    check_obstacle(&c.added[i]);
  size_t len = proto_encode_map_changed(enc1, sizeof enc1, &c);
  FUZZ_CHECK(len > 0);
  FUZZ_CHECK(proto_decode_map_changed(enc1, len, &c2, removed_b, obs_b, pts_b, FUZZ_POINTS, NULL) == 0);
  FUZZ_CHECK(c2.version == c.version && c2.tick == c.tick && c2.removed_count == c.removed_count &&
             c2.added_count == c.added_count);
  FUZZ_CHECK(memcmp(c.removed, c2.removed, c.removed_count * sizeof *c.removed) == 0);
  for (uint32_t i = 0; i < c.added_count; i++)
    FUZZ_CHECK(same_obstacle(&c.added[i], &c2.added[i]));
  size_t len2 = proto_encode_map_changed(enc2, sizeof enc2, &c2);
  FUZZ_CHECK(len2 == len && memcmp(enc1, enc2, len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_map(data, size);
  fuzz_map_changed(data, size);
  return 0;
}

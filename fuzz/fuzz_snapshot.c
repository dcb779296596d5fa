/* fuzz_snapshot.c: libFuzzer target for proto_decode_snapshot, the client's
 * fast path for channel 1, with both output forms (poses in SI units and the
 * quantized qposes as on the wire).
 *
 * Each input is one packet. The decoder is run with both outputs, with either
 * one, with none and with a small exactly sized buffer; the runs must agree,
 * poses must be the dequantized qposes, and proto_decode_server_msg must give
 * the same answer for anything that is a SNAPSHOT. On success the part is
 * re-encoded (proto_encode_snapshot), must fit the worst-case size bounds the
 * server splits by, and must decode to the same header and agents. */
#include "fuzz_common.h"

#define FUZZ_CAP       4096 /* more than a 16 KiB packet can hold */
#define FUZZ_SMALL_CAP 2
#define FUZZ_OUT_BYTES (8 * PROTO_MAX_MESSAGE_BYTES)
/* |q| up to this (cm, cm/s) survives q -> float metres -> q exactly. */
#define FUZZ_EXACT_CM 10000000

static proto_pose poses_a[FUZZ_CAP], poses_b[FUZZ_CAP], poses_rt[FUZZ_CAP], poses_srv[FUZZ_CAP];
static proto_pose_q qposes_a[FUZZ_CAP], qposes_c[FUZZ_CAP], qposes_rt[FUZZ_CAP];
static uint8_t enc1[FUZZ_OUT_BYTES];
static uint8_t enc2[FUZZ_OUT_BYTES];

static bool same_pose(const proto_pose *x, const proto_pose *y) {
  return x->id == y->id && memcmp(&x->x, &y->x, sizeof x->x) == 0 && memcmp(&x->y, &y->y, sizeof x->y) == 0 &&
         memcmp(&x->theta, &y->theta, sizeof x->theta) == 0 && memcmp(&x->vx, &y->vx, sizeof x->vx) == 0 &&
         memcmp(&x->vy, &y->vy, sizeof x->vy) == 0;
}

static bool same_q(const proto_pose_q *x, const proto_pose_q *y) {
  return x->id == y->id && x->x == y->x && x->y == y->y && x->theta == y->theta && x->vx == y->vx &&
         x->vy == y->vy;
}

static bool cm_exact(int32_t q) { return q >= -FUZZ_EXACT_CM && q <= FUZZ_EXACT_CM; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  proto_snapshot_header h, h2;
  proto_error_info err, err2;
  uint32_t count = 12345, count2 = 12345;

  int rc = proto_decode_snapshot(data, size, &h, poses_a, qposes_a, FUZZ_CAP, &count, &err);
  if (rc != 0) {
    fuzz_check_error(rc, &err);
    FUZZ_CHECK(count == 0);
    FUZZ_CHECK(err.type == 0 || err.type == PROTO_MSG_SNAPSHOT);
    /* TOO_LARGE: the packet, or a SNAPSHOT whose agents array claims more
     * agents than the caller's capacity (checked before the bytes are). */
    if (size > PROTO_MAX_MESSAGE_BYTES)
      FUZZ_CHECK(err.code == PROTO_ERR_TOO_LARGE && err.field[0] == '\0');
    else if (err.code == PROTO_ERR_TOO_LARGE)
      FUZZ_CHECK(err.type == PROTO_MSG_SNAPSHOT && strcmp(err.field, "agents") == 0);
  } else {
    fuzz_check_ok(rc, &err);
    FUZZ_CHECK(err.type == PROTO_MSG_SNAPSHOT);
    FUZZ_CHECK(count <= FUZZ_CAP && count <= h.agent_total);
    FUZZ_CHECK(h.part_count >= 1 && h.part_index < h.part_count);
    for (uint32_t i = 0; i < count; i++) {
      proto_pose p = proto_dequantize_pose(&qposes_a[i]);
      FUZZ_CHECK(same_pose(&p, &poses_a[i]));
      FUZZ_CHECK(isfinite(p.x) && isfinite(p.y) && isfinite(p.vx) && isfinite(p.vy));
      FUZZ_CHECK(p.theta >= -PROTO_PI_F && p.theta < PROTO_PI_F);
    }
  }

  /* poses only, qposes only: same answer. */
  int rc_b = proto_decode_snapshot(data, size, &h2, poses_b, NULL, FUZZ_CAP, &count2, NULL);
  FUZZ_CHECK(rc_b == rc && count2 == count);
  if (rc == 0) {
    FUZZ_CHECK(memcmp(&h, &h2, sizeof h) == 0);
    for (uint32_t i = 0; i < count; i++)
      FUZZ_CHECK(same_pose(&poses_a[i], &poses_b[i]));
  }
  int rc_c = proto_decode_snapshot(data, size, &h2, NULL, qposes_c, FUZZ_CAP, &count2, &err2);
  FUZZ_CHECK(rc_c == rc && count2 == count && err2.code == err.code && strcmp(err2.field, err.field) == 0);
  if (rc == 0)
    for (uint32_t i = 0; i < count; i++)
      FUZZ_CHECK(same_q(&qposes_a[i], &qposes_c[i]));

  /* No output: capacity 0, so only an empty part decodes. */
  int rc_none = proto_decode_snapshot(data, size, &h2, NULL, NULL, FUZZ_CAP, &count2, &err2);
  if (rc == 0)
    FUZZ_CHECK(rc_none == (count == 0 ? 0 : -PROTO_ERR_TOO_LARGE));
  else
    FUZZ_CHECK(rc_none == rc || rc_none == -PROTO_ERR_TOO_LARGE);

  /* A small, exactly sized buffer: ASan sees any write past it. */
  proto_pose *sp = malloc(FUZZ_SMALL_CAP * sizeof *sp);
  proto_pose_q *sq = malloc(FUZZ_SMALL_CAP * sizeof *sq);
  FUZZ_CHECK(sp && sq);
  int rc_small = proto_decode_snapshot(data, size, &h2, sp, sq, FUZZ_SMALL_CAP, &count2, &err2);
  if (rc == 0) {
    FUZZ_CHECK(rc_small == (count <= FUZZ_SMALL_CAP ? 0 : -PROTO_ERR_TOO_LARGE));
    for (uint32_t i = 0; rc_small == 0 && i < count; i++)
      FUZZ_CHECK(same_pose(&sp[i], &poses_a[i]) && same_q(&sq[i], &qposes_a[i]));
  } else {
    FUZZ_CHECK(rc_small == rc || rc_small == -PROTO_ERR_TOO_LARGE);
  }
  free(sp);
  free(sq);

  /* The general decoder agrees on anything that is (or decodes as) a SNAPSHOT. */
  if (rc == 0 || err.type == PROTO_MSG_SNAPSHOT) {
    proto_server_msg m;
    int rc_srv = proto_decode_server_msg(data, size, &m, poses_srv, FUZZ_CAP, &err2);
    FUZZ_CHECK(rc_srv == rc && strcmp(err2.field, err.field) == 0);
    if (rc == 0) {
      FUZZ_CHECK(m.type == PROTO_MSG_SNAPSHOT && m.snapshot.count == count);
      FUZZ_CHECK(memcmp(&m.snapshot.header, &h, sizeof h) == 0);
      for (uint32_t i = 0; i < count; i++)
        FUZZ_CHECK(same_pose(&poses_srv[i], &poses_a[i]));
    }
  }
  if (rc != 0)
    return 0;

  /* Write -> read round trip. */
  size_t n1 = proto_encode_snapshot(enc1, sizeof enc1, &h, poses_a, count);
  FUZZ_CHECK(n1 > 0);
  FUZZ_CHECK(n1 <= PROTO_SNAPSHOT_HEADER_MAX_BYTES + (size_t)count * PROTO_SNAPSHOT_AGENT_MAX_BYTES);
  FUZZ_CHECK(proto_encode_snapshot(enc2, n1 - 1, &h, poses_a, count) == 0);
  if (n1 > PROTO_MAX_MESSAGE_BYTES)
    return 0;
  rc = proto_decode_snapshot(enc1, n1, &h2, poses_rt, qposes_rt, FUZZ_CAP, &count2, &err2);
  if (rc != 0)
    fprintf(stderr, "round trip: %s at '%s' (%s)\n", proto_error_name(rc), err2.field, err2.reason);
  FUZZ_CHECK(rc == 0 && count2 == count && memcmp(&h, &h2, sizeof h) == 0);
  for (uint32_t i = 0; i < count; i++) {
    const proto_pose_q *a = &qposes_a[i], *b = &qposes_rt[i];
    /* Every wire value within +-100 km (+-100 km/s) and every angle comes back
     * exactly; beyond, float metres cannot hold centimetres, but the decoded
     * poses are a fixed point of the round trip. */
    FUZZ_CHECK(a->id == b->id && a->theta == b->theta);
    FUZZ_CHECK(!cm_exact(a->x) || a->x == b->x);
    FUZZ_CHECK(!cm_exact(a->y) || a->y == b->y);
    FUZZ_CHECK(!cm_exact(a->vx) || a->vx == b->vx);
    FUZZ_CHECK(!cm_exact(a->vy) || a->vy == b->vy);
    FUZZ_CHECK(same_pose(&poses_a[i], &poses_rt[i]));
  }
  size_t n2 = proto_encode_snapshot(enc2, sizeof enc2, &h2, poses_rt, count2);
  FUZZ_CHECK(n2 == n1 && memcmp(enc1, enc2, n1) == 0);
  return 0;
}

/* fuzz_delta.c: libFuzzer target for proto_decode_delta (the delta client's
 * channel 1) and proto_decode_snapshot_ack (the server's channel 1).
 *
 * Each input is one packet. The DELTA decoder runs with large, small and no
 * buffers, which must agree; a decoded part must hold strictly increasing ids,
 * masks and fields in range, re-encode (proto_encode_delta) to bytes that
 * decode to the same part, and every change must apply to a made-up base
 * record or, when absolute, to none, as proto_delta_apply promises. The
 * SNAPSHOT_ACK decoder must accept exactly [11, tick >= 1]. */
#include "fuzz_common.h"

#define FUZZ_CAP 2048

static proto_delta_entry ent_a[FUZZ_CAP], ent_b[FUZZ_CAP];
static proto_id rem_a[FUZZ_CAP], rem_b[FUZZ_CAP];
static uint8_t enc[4 * PROTO_MAX_MESSAGE_BYTES];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  proto_delta_header h, h2;
  proto_error_info err, err2;
  uint32_t n = 7, nr = 7, n2, nr2;
  int rc = proto_decode_delta(data, size, &h, ent_a, FUZZ_CAP, &n, rem_a, FUZZ_CAP, &nr, &err);
  if (rc != 0) {
    fuzz_check_error(rc, &err);
    FUZZ_CHECK(n == 0 && nr == 0);
  } else {
    fuzz_check_ok(rc, &err);
    FUZZ_CHECK(err.type == PROTO_MSG_DELTA);
    FUZZ_CHECK(h.tick >= 1 && h.baseline_tick < h.tick && h.part_index < h.part_count);
    for (uint32_t i = 0; i < n; i++) {
      FUZZ_CHECK(ent_a[i].id > (i ? ent_a[i - 1].id : 0));
      FUZZ_CHECK(ent_a[i].mask <= PROTO_DELTA_MASK_ALL);
      for (int k = 0; k < PROTO_DELTA_FIELD_COUNT; k++)
        if (!(ent_a[i].mask & (1u << k)))
          FUZZ_CHECK(ent_a[i].v[k] == 0);
      FUZZ_CHECK(ent_a[i].v[2] >= INT16_MIN && ent_a[i].v[2] <= INT16_MAX);
      proto_record base, out;
      memset(&base, 0, sizeof base);
      base.id = ent_a[i].id;
      base.vx = 100;
      base.omega = -5;
      int ra = proto_delta_apply(&base, &ent_a[i], h.server_time_us, &out);
      if (ra == 0)
        FUZZ_CHECK(out.id == ent_a[i].id && out.time_us == h.server_time_us);
      int rn = proto_delta_apply(NULL, &ent_a[i], h.server_time_us, &out);
      FUZZ_CHECK(rn == ((ent_a[i].mask & PROTO_DELTA_ABSOLUTE) ? 0 : -1));
    }
    for (uint32_t i = 0; i < nr; i++)
      FUZZ_CHECK(rem_a[i] > (i ? rem_a[i - 1] : 0));
    /* Re-encode and decode again: the same part. */
    size_t len = proto_encode_delta(enc, sizeof enc, &h, ent_a, n, rem_a, nr);
    FUZZ_CHECK(len > 0 && len <= size);
    FUZZ_CHECK(proto_decode_delta(enc, len, &h2, ent_b, FUZZ_CAP, &n2, rem_b, FUZZ_CAP, &nr2, NULL) == 0);
    FUZZ_CHECK(memcmp(&h, &h2, sizeof h) == 0 && n2 == n && nr2 == nr);
    FUZZ_CHECK(memcmp(ent_a, ent_b, n * sizeof *ent_a) == 0 && memcmp(rem_a, rem_b, nr * sizeof *rem_a) == 0);
    size_t est = PROTO_DELTA_HEADER_MAX_BYTES;
    for (uint32_t i = 0; i < n; i++)
      est += proto_delta_entry_size(&ent_a[i], i ? ent_a[i - 1].id : 0);
    for (uint32_t i = 0; i < nr; i++)
      est += proto_delta_removed_size(rem_a[i], i ? rem_a[i - 1] : 0);
    FUZZ_CHECK(len <= est);
  }
  /* Smaller capacities: the same answer or TOO_LARGE; none: only empty arrays decode. */
  int rc_s = proto_decode_delta(data, size, &h2, ent_b, 3, &n2, rem_b, 3, &nr2, &err2);
  if (rc == 0)
    FUZZ_CHECK(rc_s == 0 ? (n <= 3 && nr <= 3) : rc_s == -PROTO_ERR_TOO_LARGE);
  else
    FUZZ_CHECK(rc_s != 0);
  int rc_n = proto_decode_delta(data, size, &h2, NULL, 0, &n2, NULL, 0, &nr2, NULL);
  if (rc_n == 0)
    FUZZ_CHECK(rc == 0 && n == 0 && nr == 0);

  /* SNAPSHOT_ACK. */
  proto_snapshot_ack ack, ack2;
  memset(&ack, 0x5a, sizeof ack);
  int ra = proto_decode_snapshot_ack(data, size, &ack, &err);
  if (ra != 0) {
    fuzz_check_error(ra, &err);
    FUZZ_CHECK(ack.tick == 0 && ack.merged_count == 0);
  } else {
    FUZZ_CHECK(ack.tick >= 1 && ack.merged_count <= PROTO_ACK_MAX_MERGED);
    for (uint32_t i = 0; i < ack.merged_count; i++)
      FUZZ_CHECK(ack.merged_step[i] >= 1 && ack.merged_step[i] < ack.tick &&
                 (i == 0 || ack.merged_step[i] > ack.merged_step[i - 1]));
    size_t len = proto_encode_snapshot_ack(enc, sizeof enc, &ack);
    FUZZ_CHECK(len > 0 && len <= size && proto_decode_snapshot_ack(enc, len, &ack2, NULL) == 0 &&
               ack2.tick == ack.tick && ack2.has_merged == ack.has_merged &&
               ack2.merged_count == ack.merged_count &&
               memcmp(ack2.merged_step, ack.merged_step, ack.merged_count * sizeof *ack.merged_step) == 0);
  }
  FUZZ_CHECK(proto_message_type(data, size) <= UINT32_MAX);
  return 0;
}

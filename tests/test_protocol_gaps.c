/* test_protocol_gaps.c: the decoder's behaviour in the corners of PROTOCOL.md,
 * each pinned to what the document states, and the
 * precision of angle reduction (section 3, "Orientation range"). */
#include <check.h>
#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "mbuf.h"
#include "protocol.h"
#include "vec2.h"

/* The exact reduction into (-pi, pi], in long double. */
static double exact_wrap(double a) {
  long double two_pi = 6.283185307179586476925286766559L, pi = two_pi / 2;
  long double r = fmodl((long double)a + pi, two_pi);
  if (r <= 0)
    r += two_pi;
  return (double)(r - pi);
}

/* The float nearest the exact reduction: within half a float ulp near pi (1.2e-7) plus rounding. */
#define WRAP_TOL 2.5e-7

/* SPAWN {model, x, y, orientation: a} with a sent as a float64 (or float32), decoded. */
static float spawn_orientation(double a, int as_float32) {
  mbuf m;
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SPAWN, 7, 4);
  mb_str(&m, "model"), mb_str(&m, "dynamic");
  mb_str(&m, "x"), msgpack_pack_int(&m.pk, 0);
  mb_str(&m, "y"), msgpack_pack_int(&m.pk, 0);
  mb_str(&m, "orientation");
  if (as_float32)
    msgpack_pack_float(&m.pk, (float)a);
  else
    msgpack_pack_double(&m.pk, a);
  static proto_command c;
  proto_error_info e;
  int rc = proto_decode_command((const uint8_t *)m.sb.data, m.sb.size, &c, &e);
  mb_free(&m);
  ck_assert_msg(rc == 0, "orientation %g: %s %s", a, proto_error_name(e.code), e.field);
  return c.spawn.orientation;
}

/* Large orientations keep their precision: 1e6 rad came back 0.044 rad off. */
START_TEST(large_orientations_reduce_exactly) {
  static const double angles[] = {1e6, -1e6, 1e4, 123456.789, -999999.5, 7.0, -7.0, 3.2, -3.2, 1e6 - 0.1};
  for (size_t i = 0; i < sizeof angles / sizeof angles[0]; i++) {
    double a = angles[i];
    float got = spawn_orientation(a, 0);
    ck_assert_msg(fabs((double)got - exact_wrap(a)) <= WRAP_TOL, "float64 %.3f -> %.9f, exact %.9f", a,
                  (double)got, exact_wrap(a));
    ck_assert(got > -STEER_PI && got <= STEER_PI);
    /* The same value as a float32 on the wire is reduced from that float32. */
    got = spawn_orientation(a, 1);
    double sent = (double)(float)a;
    ck_assert_msg(fabs((double)got - exact_wrap(sent)) <= WRAP_TOL, "float32 %.3f -> %.9f, exact %.9f", sent,
                  (double)got, exact_wrap(sent));
  }
  /* An integer too. */
  mbuf m;
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SPAWN, 7, 4);
  mb_str(&m, "model"), mb_str(&m, "dynamic");
  mb_str(&m, "x"), msgpack_pack_int(&m.pk, 0);
  mb_str(&m, "y"), msgpack_pack_int(&m.pk, 0);
  mb_str(&m, "orientation"), msgpack_pack_int(&m.pk, -1000000);
  static proto_command c;
  ck_assert_int_eq(proto_decode_command((const uint8_t *)m.sb.data, m.sb.size, &c, NULL), 0);
  mb_free(&m);
  ck_assert_double_le(fabs((double)c.spawn.orientation - exact_wrap(-1e6)), WRAP_TOL);
}
END_TEST

/* The core's reduction (every float angle the world is given): random floats
 * up to 1e6 in magnitude, and the edges of the range. */
START_TEST(core_wrap_is_exact) {
  uint64_t s = 0x2545f4914f6cdd1dull;
  double worst = 0;
  for (int i = 0; i < 200000; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    double u = (double)(s >> 11) / 9007199254740992.0;
    float a = (float)((2 * u - 1) * pow(10.0, 6.0 * (double)((s >> 3) % 1000) / 1000.0));
    float w = steer_wrap_angle(a);
    ck_assert(w > -STEER_PI && w <= STEER_PI);
    double e = fabs((double)w - exact_wrap((double)a));
    if (e > 3.0) /* the same heading either side of the +-pi seam */
      e = fabs(e - 6.283185307179586);
    if (e > worst)
      worst = e;
  }
  printf("core wrap: worst error %.3g rad over 200000 angles up to 1e6\n", worst);
  ck_assert_double_le(worst, WRAP_TOL);
  ck_assert(steer_wrap_angle(STEER_PI) == STEER_PI);
  /* The float -STEER_PI lies 8.7e-8 below -pi: it is the heading pi - 8.7e-8. */
  ck_assert_double_le(fabs((double)steer_wrap_angle(-STEER_PI) - exact_wrap((double)-STEER_PI)), WRAP_TOL);
  ck_assert(steer_wrap_angle(0.5f) == 0.5f);
  ck_assert_double_le(fabs((double)steer_wrap_angle(1e6f) - exact_wrap(1e6)), WRAP_TOL);
}
END_TEST

/* Decodes the packet in m (then frees it) and checks the error's code, request_id and field (NULL: nil). */
static void expect(mbuf *m, int code, uint32_t request_id, const char *field) {
  static proto_command c;
  proto_error_info e;
  int rc = proto_decode_command((const uint8_t *)m->sb.data, m->sb.size, &c, &e);
  mb_free(m);
  ck_assert_msg(rc == -code, "expected %s, got rc %d (%s, field '%s', %s)", proto_error_name(code), rc,
                proto_error_name(e.code), e.field, e.reason);
  ck_assert_uint_eq(e.has_request_id ? e.request_id : 0, request_id);
  ck_assert_str_eq(e.field, field ? field : "");
}

static void expect_bytes(const uint8_t *b, size_t n, int code, uint32_t request_id, const char *field) {
  mbuf m;
  mb_init(&m);
  msgpack_sbuffer_write(&m.sb, (const char *)b, n);
  expect(&m, code, request_id, field);
}

/* A packet cut right after the request_id: BAD_MESSAGE naming "body" (the
 * value being read), like one cut inside the body. */
START_TEST(cut_after_the_request_id_names_body) {
  static const uint8_t cut[] = {0x93, 0x09, 0x05};
  expect_bytes(cut, sizeof cut, PROTO_ERR_BAD_MESSAGE, 5, "body");
  static const uint8_t cut_in_body[] = {0x93, 0x09, 0x05, 0x81};
  expect_bytes(cut_in_body, sizeof cut_in_body, PROTO_ERR_BAD_MESSAGE, 5, "body");
  static const uint8_t cut_after_type[] = {0x93, 0x09};
  expect_bytes(cut_after_type, sizeof cut_after_type, PROTO_ERR_BAD_MESSAGE, 0, "request_id");
  static const uint8_t cut_at_start[] = {0x93};
  expect_bytes(cut_at_start, sizeof cut_at_start, PROTO_ERR_BAD_MESSAGE, 0, "type");
}
END_TEST

/* VIEW with two or three of all/centre/follow: no key wins; BAD_FIELD names
 * the first present in the order all, centre, follow, whatever the map order. */
START_TEST(view_with_two_kinds_names_the_first_in_table_order) {
  static const char *const keys[3] = {"all", "centre", "follow"};
  for (unsigned set = 3; set < 8; set++) {
    if (set == 4)
      continue; /* one key */
    for (int reversed = 0; reversed < 2; reversed++) {
      mbuf m;
      mb_init(&m);
      unsigned n = (unsigned)__builtin_popcount(set);
      mb_cmd(&m, PROTO_MSG_VIEW, 9, n + ((set & 1u) ? 0u : 1u));
      for (int k = 0; k < 3; k++) {
        int i = reversed ? 2 - k : k;
        if (!(set & (1u << i)))
          continue;
        mb_str(&m, keys[i]);
        if (i == 0)
          msgpack_pack_true(&m.pk);
        else if (i == 1)
          msgpack_pack_array(&m.pk, 2), msgpack_pack_int(&m.pk, 1), msgpack_pack_int(&m.pk, 2);
        else
          msgpack_pack_uint32(&m.pk, 4194305u);
      }
      if (!(set & 1u))
        mb_str(&m, "radius"), msgpack_pack_int(&m.pk, 5);
      expect(&m, PROTO_ERR_BAD_FIELD, 9, (set & 1u) ? "all" : "centre");
    }
  }
}
END_TEST

/* SET_BEHAVIOUR body {agent: 5, behaviour: {kind: k, <the keys named>}}. */
static void behaviour_with(mbuf *m, const char *kind, int target, int target_agent, int target_agent2,
                           int agent_first) {
  mb_init(m);
  mb_cmd(m, PROTO_MSG_SET_BEHAVIOUR, 6, 2);
  mb_str(m, "agent"), msgpack_pack_int(&m->pk, 5);
  mb_str(m, "behaviour");
  msgpack_pack_map(&m->pk, (uint32_t)(1 + target + target_agent + target_agent2));
  mb_str(m, "kind"), mb_str(m, kind);
  if (target_agent && agent_first)
    mb_str(m, "target_agent"), msgpack_pack_int(&m->pk, 7);
  if (target)
    mb_str(m, "target"), msgpack_pack_array(&m->pk, 2), msgpack_pack_int(&m->pk, 1),
        msgpack_pack_int(&m->pk, 1);
  if (target_agent && !agent_first)
    mb_str(m, "target_agent"), msgpack_pack_int(&m->pk, 7);
  if (target_agent2)
    mb_str(m, "target_agent2"), msgpack_pack_int(&m->pk, 8);
}

/* target with target_agent: BAD_FIELD "behaviour.target_agent" in either
 * order; target_agent2 without target_agent: BAD_FIELD "behaviour.target_agent2". */
START_TEST(target_conflicts_name_their_field) {
  mbuf m;
  behaviour_with(&m, "seek", 1, 1, 0, 0);
  expect(&m, PROTO_ERR_BAD_FIELD, 6, "behaviour.target_agent");
  behaviour_with(&m, "seek", 1, 1, 0, 1);
  expect(&m, PROTO_ERR_BAD_FIELD, 6, "behaviour.target_agent");
  behaviour_with(&m, "interpose", 0, 0, 1, 0);
  expect(&m, PROTO_ERR_BAD_FIELD, 6, "behaviour.target_agent2");
  behaviour_with(&m, "interpose", 1, 0, 1, 0);
  expect(&m, PROTO_ERR_BAD_FIELD, 6, "behaviour.target_agent2");
}
END_TEST

/* The decoder's precedence (PROTOCOL.md section 8): it reads front to back and
 * reports the first fault it meets, with these rules for the frame. */
START_TEST(decoder_faults_come_in_order) {
  mbuf m;
  /* A type that is no command: UNKNOWN_TYPE whatever the element count, once the request_id reads. */
  mb_init(&m);
  msgpack_pack_array(&m.pk, 4), msgpack_pack_int(&m.pk, 99), msgpack_pack_int(&m.pk, 6),
      msgpack_pack_map(&m.pk, 0), msgpack_pack_int(&m.pk, 1);
  expect(&m, PROTO_ERR_UNKNOWN_TYPE, 6, "type");
  mb_init(&m);
  msgpack_pack_array(&m.pk, 3), msgpack_pack_int(&m.pk, 99), msgpack_pack_int(&m.pk, -1),
      msgpack_pack_map(&m.pk, 0);
  expect(&m, PROTO_ERR_BAD_MESSAGE, 0, "request_id");
  /* A command type with the wrong element count: BAD_MESSAGE nil, before its request_id is judged. */
  mb_init(&m);
  msgpack_pack_array(&m.pk, 4), msgpack_pack_int(&m.pk, 9), msgpack_pack_int(&m.pk, 6),
      msgpack_pack_map(&m.pk, 0), msgpack_pack_int(&m.pk, 1);
  expect(&m, PROTO_ERR_BAD_MESSAGE, 6, NULL);
  /* In the body, the first fault in the order sent: an unknown key before a bad value. */
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_DESPAWN, 6, 2);
  mb_str(&m, "agnt"), msgpack_pack_int(&m.pk, 5);
  mb_str(&m, "agent"), msgpack_pack_double(&m.pk, 5.0);
  expect(&m, PROTO_ERR_BAD_FIELD, 6, "agnt");
  /* A bad value anywhere before a missing key (missing keys are judged at the map's end, in table order). */
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SPAWN, 6, 2);
  mb_str(&m, "y"), msgpack_pack_int(&m.pk, 1);
  mb_str(&m, "x"), mb_str(&m, "one");
  expect(&m, PROTO_ERR_BAD_FIELD, 6, "x");
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_SPAWN, 6, 1);
  mb_str(&m, "y"), msgpack_pack_int(&m.pk, 1);
  expect(&m, PROTO_ERR_BAD_FIELD, 6, "model");
  /* Trailing bytes come last: a bad field in the body wins. */
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_DESPAWN, 6, 1);
  mb_str(&m, "agent"), msgpack_pack_double(&m.pk, 5.0);
  msgpack_pack_int(&m.pk, 1);
  expect(&m, PROTO_ERR_BAD_FIELD, 6, "agent");
  mb_init(&m);
  mb_cmd(&m, PROTO_MSG_DESPAWN, 6, 1);
  mb_str(&m, "agent"), msgpack_pack_int(&m.pk, 5);
  msgpack_pack_int(&m.pk, 1);
  expect(&m, PROTO_ERR_BAD_MESSAGE, 6, NULL);
}
END_TEST

static Suite *gaps_suite(void) {
  Suite *s = suite_create("protocol_gaps");
  TCase *tc = check_tcase(s, "gaps", 60);
  tcase_add_test(tc, large_orientations_reduce_exactly);
  tcase_add_test(tc, core_wrap_is_exact);
  tcase_add_test(tc, cut_after_the_request_id_names_body);
  tcase_add_test(tc, view_with_two_kinds_names_the_first_in_table_order);
  tcase_add_test(tc, target_conflicts_name_their_field);
  tcase_add_test(tc, decoder_faults_come_in_order);
  return s;
}

int main(void) { return check_run(gaps_suite()); }

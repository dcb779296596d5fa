/* test_auth.c: tokens (server/auth.c): issue and verify with an injected clock,
 * and every way a token can be wrong. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "check_run.h"

#define SECRET "an example secret, not for production"
#define NOW    1767222000ull

/* The token PROTOCOL.md shows (section 4.1): the payload
 * [1, "godot-client", "controller", 1767225600, 1767222000] under SECRET. */
#define EXAMPLE_TOKEN                                                                                        \
  "stk1.lQGsZ29kb3QtY2xpZW50qmNvbnRyb2xsZXLOaVW5AM5pVarw.WyfI4-VbW9JIWLccNl0q-6pHhbq1RzHjjtskgQDm0Uw"

static steerd_auth key(const char *secret) {
  steerd_auth a;
  ck_assert_int_eq(steerd_auth_init(&a, secret, strlen(secret)), STEERD_AUTH_OK);
  return a;
}

static steerd_token token(const char *name, steerd_role role, uint64_t expires_at) {
  steerd_token t;
  memset(&t, 0, sizeof t);
  strcpy(t.name, name);
  t.role = role;
  t.expires_at = expires_at;
  t.issued_at = NOW;
  return t;
}

static int verify(const steerd_auth *a, const char *text, uint64_t now, steerd_token *out) {
  return steerd_auth_verify(a, text, strlen(text), now, out);
}

START_TEST(test_issue_and_verify) {
  steerd_auth a = key(SECRET);
  for (int role = 0; role < STEERD_ROLE_COUNT; role++) {
    steerd_token t = token("alice", (steerd_role)role, NOW + 3600), got;
    char text[STEERD_AUTH_MAX_TOKEN_BYTES + 1];
    int n = steerd_auth_issue(&a, &t, text, sizeof text);
    ck_assert_int_gt(n, 0);
    ck_assert_uint_eq(strlen(text), (size_t)n);
    ck_assert(strncmp(text, STEERD_AUTH_PREFIX, strlen(STEERD_AUTH_PREFIX)) == 0);
    ck_assert_int_eq(verify(&a, text, NOW, &got), STEERD_AUTH_OK);
    ck_assert_str_eq(got.name, "alice");
    ck_assert_int_eq(got.role, role);
    ck_assert_uint_eq(got.expires_at, NOW + 3600);
    ck_assert_uint_eq(got.issued_at, NOW);
  }
  /* A long UTF-8 name and large times round-trip too. */
  steerd_token t = token("", STEERD_ROLE_ADMIN, UINT64_MAX), got;
  memset(t.name, 'x', STEERD_AUTH_MAX_NAME_BYTES - 2);
  memcpy(t.name + STEERD_AUTH_MAX_NAME_BYTES - 2, "\xc3\xa9", 3);
  char text[STEERD_AUTH_MAX_TOKEN_BYTES + 1];
  ck_assert_int_gt(steerd_auth_issue(&a, &t, text, sizeof text), 0);
  ck_assert_int_eq(verify(&a, text, NOW, &got), STEERD_AUTH_OK);
  ck_assert_str_eq(got.name, t.name);
}
END_TEST

START_TEST(test_protocol_md_example) {
  steerd_auth a = key(SECRET);
  steerd_token t = token("godot-client", STEERD_ROLE_CONTROLLER, 1767225600), got;
  char text[STEERD_AUTH_MAX_TOKEN_BYTES + 1];
  ck_assert_int_gt(steerd_auth_issue(&a, &t, text, sizeof text), 0);
  ck_assert_str_eq(text, EXAMPLE_TOKEN);
  ck_assert_int_eq(verify(&a, EXAMPLE_TOKEN, NOW, &got), STEERD_AUTH_OK);
}
END_TEST

START_TEST(test_expiry) {
  steerd_auth a = key(SECRET);
  steerd_token t = token("bob", STEERD_ROLE_CONTROLLER, NOW + 10), got;
  char text[STEERD_AUTH_MAX_TOKEN_BYTES + 1];
  ck_assert_int_gt(steerd_auth_issue(&a, &t, text, sizeof text), 0);
  ck_assert_int_eq(verify(&a, text, NOW, &got), STEERD_AUTH_OK);
  ck_assert_int_eq(verify(&a, text, NOW + 9, &got), STEERD_AUTH_OK); /* not yet expired */
  ck_assert_int_eq(verify(&a, text, NOW + 10, &got), STEERD_AUTH_EEXPIRED);
  ck_assert_str_eq(got.name, "bob"); /* still read, for the log */
  ck_assert_int_eq(verify(&a, text, NOW + 1000000, NULL), STEERD_AUTH_EEXPIRED);
}
END_TEST

START_TEST(test_forged_and_tampered) {
  steerd_auth a = key(SECRET), other = key("another secret of enough bytes");
  steerd_token t = token("carol", STEERD_ROLE_CONTROLLER, NOW + 3600);
  char text[STEERD_AUTH_MAX_TOKEN_BYTES + 1], forged[STEERD_AUTH_MAX_TOKEN_BYTES + 1];
  ck_assert_int_gt(steerd_auth_issue(&a, &t, text, sizeof text), 0);

  /* Signed with another secret. */
  ck_assert_int_eq(verify(&other, text, NOW, NULL), STEERD_AUTH_EFORGED);

  /* A signature character changed (mid-signature, so the base64 stays canonical). */
  strcpy(forged, text);
  char *mac = strrchr(forged, '.') + 1;
  mac[10] = mac[10] == 'A' ? 'B' : 'A';
  ck_assert_int_eq(verify(&a, forged, NOW, NULL), STEERD_AUTH_EFORGED);

  /* A payload character changed. */
  strcpy(forged, text);
  forged[8] = forged[8] == 'A' ? 'B' : 'A';
  ck_assert_int_eq(verify(&a, forged, NOW, NULL), STEERD_AUTH_EFORGED);

  /* Privilege escalation: an admin payload made elsewhere with the controller's signature. */
  char admin[STEERD_AUTH_MAX_TOKEN_BYTES + 1];
  steerd_token up = token("carol", STEERD_ROLE_ADMIN, NOW + 3600);
  ck_assert_int_gt(steerd_auth_issue(&other, &up, admin, sizeof admin), 0);
  *strrchr(admin, '.') = '\0';
  snprintf(forged, sizeof forged, "%s%s", admin, strrchr(text, '.'));
  ck_assert_int_eq(verify(&a, forged, NOW, NULL), STEERD_AUTH_EFORGED);

  /* Extending the expiry the same way. */
  steerd_token later = token("carol", STEERD_ROLE_CONTROLLER, NOW + 999999);
  ck_assert_int_gt(steerd_auth_issue(&other, &later, admin, sizeof admin), 0);
  *strrchr(admin, '.') = '\0';
  snprintf(forged, sizeof forged, "%s%s", admin, strrchr(text, '.'));
  ck_assert_int_eq(verify(&a, forged, NOW, NULL), STEERD_AUTH_EFORGED);

  /* A truncated signature is not a signature. */
  strcpy(forged, text);
  forged[strlen(forged) - 4] = '\0';
  ck_assert_int_eq(verify(&a, forged, NOW, NULL), STEERD_AUTH_EMALFORMED);
}
END_TEST

START_TEST(test_garbage) {
  steerd_auth a = key(SECRET);
  static const char *const junk[] = {
      "",
      "stk1",
      "stk1.",
      "stk1..",
      "stk1.a.",
      "stk1..b",
      "stk1.a.b",
      "stk2.lQGsZ29kb3QtY2xpZW50qmNvbnRyb2xsZXLOaVW5AM5pVarw.WyfI4-VbW9JIWLccNl0q-6pHhbq1RzHjjtskgQDm0Uw",
      "stk1.lQGsZ29kb3QtY2xpZW50qmNvbnRyb2xsZXLOaVW5AM5pVarw.WyfI4-VbW9JIWLccNl0q-6pHhbq1RzHjjtskgQDm0Uw.x",
      "stk1.lQGsZ29kb3QtY2xpZW50qmNvbnRyb2xsZXLOaVW5AM5pVarw=.WyfI4-VbW9JIWLccNl0q-6pHhbq1RzHjjtskgQDm0Uw",
      "stk1.lQGs+29kb3QtY2xpZW50qmNvbnRyb2xsZXLOaVW5AM5pVarw.WyfI4-VbW9JIWLccNl0q-6pHhbq1RzHjjtskgQDm0Uw",
      "stk1.!!!!.????",
      "Bearer abc",
      "eyJhbGciOiJIUzI1NiJ9.e30.ZRrHA1JJJW8opsbCGfG_HACGpVUMN_a9IV7pAx_Zmeo"};
  for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
    steerd_token got;
    ck_assert_msg(verify(&a, junk[i], NOW, &got) == STEERD_AUTH_EMALFORMED, "junk %zu accepted or misjudged",
                  i);
  }
  /* Random bytes, NULs included. */
  uint8_t bytes[300];
  srand(7);
  for (int k = 0; k < 2000; k++) {
    size_t n = (size_t)(rand() % (int)sizeof bytes);
    for (size_t i = 0; i < n; i++)
      bytes[i] = (uint8_t)rand();
    if (n >= 5 && k % 2)
      memcpy(bytes, "stk1.", 5);
    int rc = steerd_auth_verify(&a, (const char *)bytes, n, NOW, NULL);
    ck_assert(rc == STEERD_AUTH_EMALFORMED || rc == STEERD_AUTH_EFORGED);
  }
  ck_assert_int_eq(steerd_auth_verify(&a, NULL, 0, NOW, NULL), STEERD_AUTH_EMALFORMED);
}
END_TEST

START_TEST(test_overlong) {
  steerd_auth a = key(SECRET);
  static char text[4096];
  /* A valid token followed by padding to just over the limit. */
  strcpy(text, EXAMPLE_TOKEN);
  size_t n = strlen(text);
  memset(text + n, 'A', STEERD_AUTH_MAX_TOKEN_BYTES + 1 - n);
  text[STEERD_AUTH_MAX_TOKEN_BYTES + 1] = '\0';
  ck_assert_int_eq(verify(&a, text, NOW, NULL), STEERD_AUTH_EMALFORMED);
  memset(text, 'A', sizeof text - 1);
  text[sizeof text - 1] = '\0';
  memcpy(text, "stk1.", 5);
  text[2000] = '.';
  ck_assert_int_eq(verify(&a, text, NOW, NULL), STEERD_AUTH_EMALFORMED);
  /* A payload part longer than any payload (but under the token limit). */
  memset(text, 'A', 900);
  memcpy(text, "stk1.", 5);
  text[800] = '.';
  text[900] = '\0';
  ck_assert_int_eq(verify(&a, text, NOW, NULL), STEERD_AUTH_EMALFORMED);
}
END_TEST

START_TEST(test_bad_arguments) {
  steerd_auth a;
  ck_assert_int_eq(steerd_auth_init(&a, "short", 5), STEERD_AUTH_ESECRET);
  ck_assert_int_eq(steerd_auth_init(&a, "0123456789abcde", 15), STEERD_AUTH_ESECRET);
  ck_assert_int_eq(steerd_auth_init(&a, "0123456789abcdef", 16), STEERD_AUTH_OK);
  ck_assert_int_eq(steerd_auth_init(&a, NULL, 0), STEERD_AUTH_ESECRET);
  a = key(SECRET);
  char text[STEERD_AUTH_MAX_TOKEN_BYTES + 1];
  steerd_token t = token("", STEERD_ROLE_ADMIN, NOW);
  ck_assert_int_eq(steerd_auth_issue(&a, &t, text, sizeof text), STEERD_AUTH_EINVAL); /* empty name */
  t = token("x", STEERD_ROLE_COUNT, NOW);
  ck_assert_int_eq(steerd_auth_issue(&a, &t, text, sizeof text), STEERD_AUTH_EINVAL);
  t = token("x", STEERD_ROLE_ADMIN, NOW);
  ck_assert_int_eq(steerd_auth_issue(&a, &t, text, 20), STEERD_AUTH_EINVAL); /* no room */
  t = token("\xc3", STEERD_ROLE_ADMIN, NOW);
  ck_assert_int_eq(steerd_auth_issue(&a, &t, text, sizeof text), STEERD_AUTH_EINVAL); /* not UTF-8 */
}
END_TEST

START_TEST(test_roles) {
  ck_assert_int_eq(steerd_role_parse("observer"), STEERD_ROLE_OBSERVER);
  ck_assert_int_eq(steerd_role_parse("controller"), STEERD_ROLE_CONTROLLER);
  ck_assert_int_eq(steerd_role_parse("admin"), STEERD_ROLE_ADMIN);
  ck_assert_int_eq(steerd_role_parse("Admin"), -1);
  ck_assert_int_eq(steerd_role_parse(""), -1);
  ck_assert_int_eq(steerd_role_parse(NULL), -1);
  ck_assert_str_eq(steerd_role_name(STEERD_ROLE_ADMIN), "admin");
  ck_assert_ptr_null(steerd_role_name(STEERD_ROLE_COUNT));
  ck_assert_ptr_null(steerd_role_name(-1));
  for (int e = 0; e > -STEERD_AUTH_ERROR_COUNT; e--)
    ck_assert_str_ne(steerd_auth_strerror(e), "unknown error");
  ck_assert_str_eq(steerd_auth_strerror(-99), "unknown error");
}
END_TEST

static Suite *auth_suite(void) {
  Suite *s = suite_create("auth");
  TCase *tc = check_tcase(s, "tokens", 60);
  tcase_add_test(tc, test_issue_and_verify);
  tcase_add_test(tc, test_protocol_md_example);
  tcase_add_test(tc, test_expiry);
  tcase_add_test(tc, test_forged_and_tampered);
  tcase_add_test(tc, test_garbage);
  tcase_add_test(tc, test_overlong);
  tcase_add_test(tc, test_bad_arguments);
  tcase_add_test(tc, test_roles);
  return s;
}

int main(void) { return check_run(auth_suite()); }

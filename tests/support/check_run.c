/* check_run.c: see check_run.h. */
#include "check_run.h"

#include <stdlib.h>

int check_run(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

TCase *check_tcase(Suite *s, const char *name, double timeout_s) {
  TCase *tc = tcase_create(name);
  tcase_set_timeout(tc, timeout_s);
  suite_add_tcase(s, tc);
  return tc;
}

/* check_run.h: the main() of a Check test: runs a suite and turns the result
 * into the process's exit status; and its test cases. */
#ifndef STEERD_CHECK_RUN_H
#define STEERD_CHECK_RUN_H

#include <check.h>

/* Runs every test of s (CK_NORMAL output; CK_RUN_CASE, CK_FORK and the like
 * from the environment, as Check reads them), frees it, and returns
 * EXIT_SUCCESS when none failed, EXIT_FAILURE otherwise. */
int check_run(Suite *s);

/* A new test case of s named name, with a timeout of timeout_s seconds. */
TCase *check_tcase(Suite *s, const char *name, double timeout_s);

#endif /* STEERD_CHECK_RUN_H */

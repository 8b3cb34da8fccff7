/*
 * check_main.c - the runner shared by every test binary.
 *
 * Each module's tests live in tests/check_<module>.c and export
 * `Suite *<module>_suite(void)`. The Makefile compiles this file once per
 * module with -DCHECK_SUITE=<module>_suite, so each module links into its
 * own binary (build/tests/check_<module>) with only the archives it may
 * depend on: a wrong dependency fails at link time, and a crash in one
 * module's tests cannot hide another's results.
 *
 * Check's fork mode stays on, so one crashing test fails alone; set
 * CK_FORK=no to run under gdb or valgrind.
 */
#include <check.h>
#include <stdlib.h>

#ifndef CHECK_SUITE
#error "compile with -DCHECK_SUITE=<module>_suite"
#endif

Suite *CHECK_SUITE(void);

int main(void)
{
  SRunner *sr = srunner_create(CHECK_SUITE());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/*
 * check_cli.h - what the files of the cli suite (tests/check_cli*.c)
 * share: the arenactl binary they run, and the functions that add the
 * cases of check_cli_output.c and check_cli_text.c.
 */
#ifndef ARENA_CHECK_CLI_H
#define ARENA_CHECK_CLI_H

#include <check.h>

/* The arenactl binary the tests run: $ARENACTL (borrowed). A test that
 * finds it unset fails (tests/run.sh and the Makefile set it from
 * BUILD). */
const char *cli_test_arenactl(void);

/* check_cli_output.c: how arenactl writes files (-o). */
void cli_add_output(Suite *s);

/* check_cli_text.c: how arenactl prints strings from files and the
 * daemon. */
void cli_add_text(Suite *s);

#endif /* ARENA_CHECK_CLI_H */

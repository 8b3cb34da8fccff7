/*
 * check_deploy.h - what the parts of the deploy suite share: where the
 * binaries are, the helpers that run a program and stop a daemon
 * (defined in check_deploy.c), and the function each part exports to add
 * its test cases (defined in check_deploy_<part>.c).
 */
#ifndef ARENA_CHECK_DEPLOY_H
#define ARENA_CHECK_DEPLOY_H

#include <check.h>

#include "daemon_harness.h"

/* The Makefile passes its BUILD (where the binaries are) as DEPLOY_BUILD
 * and its SANFLAGS as DEPLOY_SANFLAGS to every part of the suite. */
#ifndef DEPLOY_BUILD
#error "DEPLOY_BUILD is not defined: build the deploy suite with make, which passes BUILD"
#endif
#ifndef DEPLOY_SANFLAGS
#define DEPLOY_SANFLAGS ""
#endif

/* Runs argv with stdout and stderr captured into *out (owned, free()).
 * Returns the exit status, or -1 when it could not run or was killed. */
int cdp_run_capture(char *const argv[], char **out);

/* Sends SIGTERM to h's daemon and returns its exit status (asserting a
 * clean exit is up to the caller); prints the daemon's log when it did
 * not exit with 0. */
int cdp_stop_daemon(struct harness *h);

/* Adds the test case "static" (check_deploy_static.c). */
void cdp_add_static_tests(Suite *s);

#endif /* ARENA_CHECK_DEPLOY_H */

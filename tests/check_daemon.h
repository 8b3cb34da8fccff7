/*
 * check_daemon.h - what the daemon test files (tests/check_daemon*.c)
 * share: reply checks, and the functions that add the tests of
 * check_daemon_evict.c, check_daemon_uses.c, check_daemon_reload.c,
 * check_daemon_faults.c, check_daemon_hotcache.c,
 * check_daemon_share.c, check_daemon_status.c, check_daemon_restart.c,
 * check_daemon_lockout.c, check_daemon_config.c, check_daemon_ack.c,
 * check_daemon_background.c and check_daemon_bundles.c to the daemon
 * suite.
 */
#ifndef ARENA_CHECK_DAEMON_H
#define ARENA_CHECK_DAEMON_H

#include <check.h>
#include <stdint.h>

#include "daemon_harness.h"

/* Asserts that r is an OK PlanReply to request rid whose offsets verify
 * against g under the default options. */
void cd_check_plan_reply(const Arenad__V1__Response *r,
                         const struct hn_graph *g, uint64_t rid);
/* Plans g under model hash `hash` (best, alignment 64) on a new
 * connection and checks the reply as above. Returns whether the daemon
 * said it came from its cache. */
int cd_plan(const struct harness *h, const struct hn_graph *g,
            const char *hash, uint64_t rid);

/* Sends one Plan of g (model hash `hash`, alignment 64, default effort)
 * on a new connection and returns the reply (NULL on a timeout); the
 * caller frees it. */
Arenad__V1__Response *cd_plan_once(const struct harness *h,
                                   const struct hn_graph *g, const char *hash,
                                   uint64_t rid);

/* Waits for h's daemon to exit and asserts exit status 0. */
void cd_assert_exits_0(struct harness *h);

/* check_daemon_evict.c */
void cd_add_evict_tests(TCase *tc);
/* check_daemon_effort.c */
void cd_add_effort_tests(TCase *tc);
/* check_daemon_uses.c */
void cd_add_uses_tests(TCase *tc);
/* check_daemon_reload.c */
void cd_add_reload_tests(TCase *tc);
/* check_daemon_faults.c: against $ARENAD_FAULTS (BUILD/tests/arenad-faults) */
void cd_add_faults_tests(TCase *tc);
/* check_daemon_hotcache.c: unit tests of daemon/hotcache.c */
void cd_add_hotcache_tests(TCase *tc);
/* check_daemon_share.c: in-place sharing through the daemon */
void cd_add_share_tests(TCase *tc);
/* check_daemon_status.c: the documented status of malformed requests */
void cd_add_status_tests(TCase *tc);
/* check_daemon_restart.c: restarts at once after SIGKILL under load */
void cd_add_restart_tests(TCase *tc);
/* check_daemon_lockout.c: room for new clients (connection limits) */
void cd_add_lockout_tests(TCase *tc);
/* check_daemon_unread.c: replies a peer does not read */
void cd_add_unread_tests(TCase *tc);
/* check_daemon_config.c: what the configuration file refuses */
void cd_add_config_tests(TCase *tc);
/* check_daemon_ack.c: Accepted for work taken on, when asked */
void cd_add_ack_tests(TCase *tc);

/* check_daemon_bundles.c */
void cd_add_bundles_tests(TCase *tc);

/* check_daemon_background.c */
void cd_add_improve_tests(TCase *tc);
void cd_add_window_tests(TCase *tc);

#endif

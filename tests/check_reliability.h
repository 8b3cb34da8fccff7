/*
 * check_reliability.h - what the parts of the reliability suite share.
 *
 * The suite is tests/check_reliability.c plus one
 * tests/check_reliability_<subject>.c per subject. This header declares
 * the figures every test reports (struct figs), graphs whose plans can be
 * verified (struct vgraph), the requests the tests send, the daemon
 * set-up, and the function of each part that adds its tests to the
 * suite's one TCase. The rel_ helpers are defined in check_reliability.c;
 * helpers that one part alone uses stay static in that part.
 */
#ifndef ARENA_CHECK_RELIABILITY_H
#define ARENA_CHECK_RELIABILITY_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon_harness.h"
#include "digest.h"
#include "planner.h"

/* uid and gid of nobody: an unprivileged daemon or client */
#define NOBODY 65534

/* ---- scale, time, figures ----------------------------------------------- */

/* Whether ARENA_RELIABILITY=full asks for the large counts. */
int rel_full_mode(void);
/* Whether ARENA_REL_ONLY names another test: this one then returns at
 * once. */
int rel_skipped(const char *test);
/* ci, or full under ARENA_RELIABILITY=full. */
unsigned rel_scaled(unsigned ci, unsigned full);
/* CLOCK_MONOTONIC in milliseconds. */
double rel_now_ms(void);
/* Sleeps ms milliseconds, through signals. */
void rel_sleep_ms(int ms);

/* What one test contributes to the summary. */
struct figs {
  uint64_t bad_inputs; /* hostile inputs or peers thrown at the daemon */
  uint64_t crashes;    /* daemon kills survived (restart + checks) */
  uint64_t requests;   /* requests answered correctly */
  uint64_t failures;   /* requests that failed when they should not */
  uint64_t wrong;      /* plans that failed verification at the client */
  uint64_t lost;       /* acknowledged plans missing after a restart */
  long peak_rss_kib;   /* largest daemon RSS seen */
};

/* Prints the figures and appends them to the figures file that the
 * summary test reads. extra is a free-form "key=value ..." note, or NULL. */
void rel_figs_report(const char *test, const struct figs *f,
                     const char *extra);
/* Whether the running daemon was built with AddressSanitizer: memory
 * figures are then reported but not asserted. */
int rel_daemon_sanitized(const struct harness *h);
/* Raises f->peak_rss_kib to the daemon's RSS if that is larger. */
void rel_rss_peak(struct figs *f, const struct harness *h);

/* ---- graphs that can be checked ----------------------------------------- */

/* A graph, the options it is planned with, its digests and model hash. */
struct vgraph {
  struct hn_graph g;
  struct planner_options o;
  uint8_t gd[PLANNER_DIGEST_LEN];
  char hash[64];
};

/* A random graph of n tensors from seed, planned with algo, sent under
 * model hash hash. */
void rel_vgraph_make(struct vgraph *v, size_t n, uint64_t seed, int algo,
                     const char *hash);
void rel_vgraph_free(struct vgraph *v);
/* Checks a PlanReply against v: 0 for a right plan, 1 for a plan that is
 * wrong for v (digest or verification). */
int rel_reply_wrong(const Arenad__V1__PlanReply *pr, const struct vgraph *v);
/* Classifies a reply to a Plan request: 0 verified plan, 1 wrong plan,
 * -1 no plan (error status, EOF or timeout). */
int rel_classify(const Arenad__V1__Response *r, const struct vgraph *v);

/* ---- requests ----------------------------------------------------------- */

/* Each sends one request with id rid on fd and returns 0 or -1. */
int rel_send_plan(int fd, uint64_t rid, const struct vgraph *v);
/* Lookup by model hash, and by graph digest unless digest is NULL. */
int rel_send_lookup(int fd, uint64_t rid, const char *hash,
                    const uint8_t *digest);
/* Evict every plan stored under a model hash. */
int rel_send_evict_model(int fd, uint64_t rid, const char *hash);
int rel_send_ping(int fd, uint64_t rid, const void *payload, size_t len);

/* Whether a Ping on a new connection gets its Pong. */
int rel_ping_ok(const struct harness *h);
/* Plans v on a new connection and counts the outcome in f: a verified
 * plan is a request, a wrong one is counted, anything else is a failure. */
void rel_expect_plan(const struct harness *h, const struct vgraph *v,
                     struct figs *f);
/* Looks v up by hash and digest; returns 1 when a stored plan came back
 * and was right for v, 0 for NOT_FOUND or another clean error (in
 * *status), and counts a wrong plan in f. */
int rel_lookup_once(const struct harness *h, const struct vgraph *v,
                    struct figs *f, Arenad__V1__Status *status);

/* ---- daemon set-up ------------------------------------------------------ */

/* Rewrites the harness config: db (NULL = the harness default), log level
 * info, and extra ini text (may be NULL). */
void rel_write_conf(struct harness *h, const char *db, const char *extra);
/* hn_init, then rel_write_conf. */
void rel_setup(struct harness *h, const char *db, const char *extra);
/* Like hn_start, but the daemon runs as uid/gid (others than ours need
 * root) with its working directory in cwd (NULL: unchanged), and is
 * killed when the test process ends. 0 or -1. */
int rel_start_as(struct harness *h, uid_t uid, gid_t gid, const char *cwd);
/* rel_start_as with our own ids. */
int rel_start(struct harness *h);
/* The absolute path of the arenactl binary the tests run: $ARENACTL,
 * which tests/run.sh and the Makefile set from BUILD. Fails the test
 * when it is unset or names no file (static buffer). */
const char *rel_arenactl(void);
/* SIGKILLs the daemon, if running, and reaps it. */
void rel_kill9(struct harness *h);
/* Stats from the daemon, asserted OK; *keep is the response to free with
 * wire_free_response. */
Arenad__V1__StatsReply *rel_stats_of(const struct harness *h,
                                     Arenad__V1__Response **keep);

/* ---- files and processes ------------------------------------------------ */

/* Counts directory entries whose name starts with prefix. */
int rel_count_prefix(const char *dir, const char *prefix);
/* Removes a database file and its -wal and -shm files. */
void rel_unlink_db(const char *db);
/* A zeroed MAP_SHARED block that forked clients write their results into
 * (munmap it). */
void *rel_shared_new(size_t len);
/* Reaps a child: its exit status, 128 + the signal that ended it, or -1. */
int rel_wait_child(pid_t pid);

/* ---- the parts, in the suite's order ------------------------------------ */

/* check_reliability_database.c: crash, disk_full, tamper */
void reliability_add_database(TCase *tc);
/* check_reliability_fallback.c: fallback, unusable */
void reliability_add_fallback(TCase *tc);
/* check_reliability_hostile.c: flood, lockout, slow, unread, abusive */
void reliability_add_hostile(TCase *tc);
/* check_reliability_isolation.c: poison, bundle, access */
void reliability_add_isolation(TCase *tc);
/* check_reliability_soak.c: soak */
void reliability_add_soak(TCase *tc);
/* check_reliability_output.c: symlink */
void reliability_add_output(TCase *tc);

#endif

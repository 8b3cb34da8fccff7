/*
 * check_client.h - what the client test files (tests/check_client*.c)
 * share.
 *
 * Declares the test graph and model key, the fake daemon (its modes, its
 * state ct_fk, ct_fake_start() and the ct_setup()/ct_teardown() fixture
 * of every test case), the client helpers built on them, and the
 * functions that add the tests of check_client_fake.c and
 * check_client_cli.c to a TCase. The ct_ names are defined in
 * check_client_harness.c.
 */
#ifndef ARENA_CHECK_CLIENT_H
#define ARENA_CHECK_CLIENT_H

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "client_int.h"

/* ---- the test graph ----------------------------------------------------- */

/* Ids deliberately out of order, lifetimes overlapping. */
#define CT_TG_N ((size_t)5)
extern const struct planner_tensor ct_tg[CT_TG_N];
extern const struct planner_graph ct_graph; /* ct_tg, all CT_TG_N */
/* An 8-byte model hash and one input of shape 1x3x224x224. */
extern const struct arenad_model_key ct_key;

/* The tensors of g sorted by id (canonical order); owned, free(). */
struct planner_tensor *ct_sorted_copy(const struct planner_graph *g);

/* ---- the fake daemon ---------------------------------------------------- */

enum ct_mode {
  M_GOOD,          /* correct plans (cached, planning_us 777), pongs */
  M_ONE_THEN_CLOSE, /* one correct reply, then close the connection */
  M_WRONG_PLAN,    /* all offsets 0: overlapping tensors */
  M_OTHER_DIGEST,  /* a correct plan labelled with another graph digest */
  M_SHORT_PLAN,    /* one offset too few */
  M_REFUSE,        /* on connect: one reply with id 0 and `status`, close */
  M_STATUS,        /* answer each request with `status` and a message */
  M_SILENT,        /* read requests, never answer */
  M_CLOSE_MID,     /* send half a reply, then close */
  M_CLOSE_NOREPLY, /* read the request, close without a word */
  M_GARBAGE,       /* a frame that is not a Response */
  M_ZERO_FRAME,    /* a zero-length frame */
  M_STALE_FIRST,   /* a reply with a wrong id before the right one */
  M_NO_BODY,       /* status OK but no plan in it */
  M_LOOKUP,        /* lookups: a decoy plan, then the matching one */
  M_LOOKUP_DECOY,  /* lookups: only plans for other graphs */
  M_LOOKUP_WRONG,  /* lookups: the matching digests, overlapping offsets */
  M_SHARE_ANYWAY,  /* correct plans, but in-place sharing always on */
  M_ACK_SLOW,      /* Accepted (when asked), then after delay_ms as M_GOOD */
  M_SLOW,          /* as a daemon before Accepted: delay_ms, then M_GOOD */
  M_ACK_SILENT,    /* Accepted (when asked), then never a reply */
  M_NO_READ,       /* accept the connection, never read from it */
  M_OLD_OFFSETS,   /* plans with the offsets and arena size of the
                      connection's first plan, labelled with the digests
                      of each request: a daemon that lies */
  M_TAMPER_LATER,  /* the first plan correct; in every later one the
                      second tensor moved onto the first (arena size made
                      to match), so that the two overlap */
  M_POISON,        /* plans that verify but put tensor i at i * 2^30:
                      an arena of gigabytes, as a poisoned cache entry */
  M_POISON_ONCE,   /* M_POISON until the connection reports a plan
                      unusable, then correct plans */
};

#define CT_MAX_CONNS 8

struct ct_fake {
  char *dir;                     /* temp dir, owned */
  char path[600];                /* socket path */
  int lfd;                       /* listening socket */
  pthread_t th;                  /* server thread */
  enum ct_mode modes[CT_MAX_CONNS]; /* one per accepted connection, in order */
  int n_modes;                   /* connections to serve */
  Arenad__V1__Status status;     /* for M_REFUSE and M_STATUS */
  _Atomic int stop;              /* set by the test to end the thread */
  _Atomic int conns;             /* connections accepted */
  _Atomic int requests;          /* requests read */
  _Atomic int closed;            /* connections closed by the fake */
  _Atomic int lookup_digest_len; /* graph_digest filter of the last lookup */
  _Atomic int last_version;      /* protocol_version of the last request */
  _Atomic int last_want_ack;     /* want_ack of the last request */
  int delay_ms;                  /* for M_ACK_SLOW and M_SLOW */
  int n_export;                  /* entries the fake exports (ct_bundle,
                                    cycling past CT_MAX_ENTRIES) */
  _Atomic int export_requests;   /* Export requests read */
  _Atomic int export_filter;     /* of the last: 1 model hash, 2 key, 0 none */
  uint8_t *preload;              /* the last Preload, packed; owned */
  _Atomic size_t preload_len;    /* its bytes; set after preload */
  _Atomic uint64_t last_id;      /* request_id of the last request */
  _Atomic int last_hash_len;     /* model hash of the last Plan: length */
  _Atomic int last_hash_tail;    /* ... and its last byte */
  _Atomic int64_t last_dims_sum; /* sum of all its input dims */
  int conn_plans;                /* Plan requests answered on the current
                                    connection (the fake's thread only) */
  int conn_reported;             /* an unusable report came on the current
                                    connection (the fake's thread only) */
  _Atomic int unusable_reports;  /* Evict requests reporting a plan */
  _Atomic uint64_t unusable_arena;  /* ... the last one's arena_bytes */
  _Atomic uint64_t unusable_usable; /* ... and its usable_bytes */
  _Atomic int unusable_digests_ok;  /* ... its digests and key were those
                                       of the test graph and key */
  int unusable_keep;             /* 1: answer reports evicted 0 (kept) */
  Arenad__V1__Status unusable_status; /* not OK: answer reports with it,
                                         as a daemon that predates them */
  struct planner_plan first;     /* M_OLD_OFFSETS: the connection's first
                                    plan (the fake's thread only) */
};

/* The fake of the current test; ct_setup() resets it. */
extern struct ct_fake ct_fk;

/* Starts the fake with one mode per expected connection. */
void ct_fake_start(int n, const enum ct_mode *modes);
void ct_fake_start1(enum ct_mode m);

/* The checked fixture of every test case: a fresh temp dir holding the
 * socket path, and the fake (if started) stopped afterwards. */
void ct_setup(void);
void ct_teardown(void);

/* ---- bundle entries ----------------------------------------------------- */

#define CT_MAX_ENTRIES 8

/* Up to CT_MAX_ENTRIES bundle entries, each the test graph with its
 * planner plan; entry k is stored under the 1-byte model hash 0xb0 + k
 * and claims effort 10 * k. */
struct ct_bundle {
  Arenad__V1__BundleEntry *ptrs[CT_MAX_ENTRIES]; /* n, into e */
  Arenad__V1__BundleEntry e[CT_MAX_ENTRIES];
  Arenad__V1__Plan req[CT_MAX_ENTRIES];          /* owned columns */
  Arenad__V1__PlanOptions opts[CT_MAX_ENTRIES];
  Arenad__V1__PlanReply reply[CT_MAX_ENTRIES];   /* borrow plan.offsets */
  uint8_t hash[CT_MAX_ENTRIES];
  struct planner_plan plan;
  uint8_t gd[32], od[32];                        /* graph, options digests */
  size_t n;
};

/* Builds n entries into *b; free with ct_bundle_cleanup. */
void ct_bundle_init(struct ct_bundle *b, size_t n);
void ct_bundle_cleanup(struct ct_bundle *b);

/* ---- helpers ------------------------------------------------------------ */

/* A client of the fake's socket, with the given fallback and request
 * timeout. */
arenad_client_t *ct_open_client(int fallback, uint32_t timeout_ms);

/* The plan the planner makes for the test graph with default options. */
void ct_local_plan(struct planner_plan *p);

/* Checks that r holds a valid plan of the test graph. */
void ct_assert_good_result(const struct arenad_client_result *r);
/* Checks that r holds no plan. */
void ct_assert_empty_result(const struct arenad_client_result *r);

/* Runs one plan call against the fake; returns its code. */
int ct_plan_once(int fallback, uint32_t timeout_ms,
                 struct arenad_client_result *r, char *msg, size_t cap);

/* ---- the test cases in other files -------------------------------------- */

/* Adds the tests of the "fake-daemon" case (check_client_fake.c). */
void client_add_fake_daemon(TCase *tc);
/* Adds the tests of the "arenactl" case (check_client_cli.c). */
void client_add_arenactl(TCase *tc);
/* Adds the tests of the "share" case (check_client_share.c). */
void client_add_share(TCase *tc);
/* Adds the tests of the "timeouts" case (check_client_timeouts.c). */
void client_add_timeouts(TCase *tc);
/* Adds the tests of the "bundle" case (check_client_bundle.c). */
void client_add_bundle(TCase *tc);
/* Adds the tests of the "memo" case (check_client_memo.c). */
void client_add_memo(TCase *tc);
/* Adds the tests of the "unusable" case (check_client_unusable.c). */
void client_add_unusable(TCase *tc);

#endif

/*
 * check_storage.h - what the parts of the storage suite share.
 *
 * Declares the per-test paths of the "cache" and "recovery" fixtures,
 * the helpers the parts of the suite have in common (log collection,
 * opening the cache, random graphs and their plans, keys, put and get
 * with checks, raw sqlite access, a fleet of eight planned graphs) and
 * the function each part exports to add its tests to a test case. All
 * are defined in check_storage.c except the adders, which live in
 * check_storage_<part>.c. Every helper fails the running test through
 * ck_assert when something it does not expect happens.
 */
#ifndef ARENA_CHECK_STORAGE_H
#define ARENA_CHECK_STORAGE_H

#include <check.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "storage.h"

/* ---- fixture ------------------------------------------------------------ */

/* The fresh temporary directory of the running test and the cache file
 * in it (<dir>/plans.db). Valid between the fixture's setup and
 * teardown. */
const char *st_tmpdir(void);
const char *st_dbpath(void);

/* ---- helpers ------------------------------------------------------------ */

/* Collects what the library logs. */
struct st_logbook {
  int n_warn;         /* STORAGE_LOG_WARN lines */
  int n_info;         /* STORAGE_LOG_INFO lines */
  int n_error;        /* STORAGE_LOG_ERROR lines */
  char last[1024];    /* last line */
  char last_warn[1024]; /* last STORAGE_LOG_WARN line */
};

/* A storage_options.log callback; ctx is a struct st_logbook. Also
 * prints each line to stderr when $STORAGE_TEST_LOG is set. */
void st_log_cb(void *ctx, enum storage_log_level lv, const char *msg);

/* Opens the cache at st_dbpath() with options o (NULL: the defaults). */
storage_t *st_open_with(const struct storage_options *o);

/* A random graph with ids 0..n-1 in ascending order; free(). */
struct planner_tensor *st_make_tensors(size_t n, uint64_t seed);

/* Options for algorithm a, with the exact-search effort cut to 1. */
void st_opts(struct planner_options *o, enum planner_algo a);

/* Plans g with algorithm a into p (planner_plan_cleanup() it). */
void st_plan_ok(const struct planner_graph *g, enum planner_algo a,
                struct planner_plan *p);

/* A key with model hash "model-<m>" and one input of shape [1, s, s, 3]. */
struct st_tkey {
  char hash[32];           /* model hash bytes */
  uint32_t ranks[1];       /* one input */
  int64_t dims[4];         /* its dims */
  struct storage_key k;    /* points into the above */
};

void st_key_init(struct st_tkey *t, unsigned m, int64_t s);

/* storage_get_stats(), which must succeed. */
void st_stats_of(storage_t *st, struct storage_stats *s);

/* Puts plan p of graph g under key k with default best options; the put
 * must succeed. Returns what it did. */
enum storage_put_result st_put_ok(storage_t *st, const struct st_tkey *k,
                                  const struct planner_graph *g,
                                  const struct planner_plan *p);

/* storage_get() of graph g under key k with default best options. */
int st_get_rc(storage_t *st, const struct st_tkey *k,
              const struct planner_graph *g, struct planner_plan *out);

/* A raw sqlite connection to the file at path (5 s busy timeout). */
sqlite3 *st_raw_open(const char *path);
/* Runs SQL that returns nothing. */
void st_raw_exec(sqlite3 *db, const char *sql);
/* The first column of the first row of a query. */
int64_t st_raw_int(sqlite3 *db, const char *sql);

/* Creates the frozen version 1 schema in db, stamped as version 1, and
 * inserts a v1 row for plan p of graph g under key k with default best
 * options (returns its accounted bytes). check_storage_sqlite.c. */
void st_v1_create(sqlite3 *db);
uint64_t st_v1_insert(sqlite3 *db, const struct st_tkey *k,
                      const struct planner_graph *g,
                      const struct planner_plan *p, int64_t last_used,
                      int64_t hits);

/* Eight graphs, each planned with the best algorithm, under the keys
 * model-0..7 (shape [1, 8, 8, 3]). */
struct st_fleet {
  struct planner_tensor *t[8]; /* graphs 0..7 */
  struct planner_graph g[8];   /* views */
  struct planner_plan p[8];    /* their plans */
  struct st_tkey k[8];         /* keys model-0..7 */
};

/* Builds a fleet of graphs of n tensors; st_fleet_cleanup() frees it. */
void st_fleet_init(struct st_fleet *f, size_t n);
void st_fleet_cleanup(struct st_fleet *f);
/* Whether plan i of the fleet is in the cache under its key. */
int st_has(storage_t *st, struct st_fleet *f, int i);

/* ---- the parts of the suite --------------------------------------------- */

/* Each adds its part's tests to tc, in the suite's order. */
void storage_add_codec(TCase *tc);   /* check_storage_codec.c, "codec" */
void storage_add_plans(TCase *tc);   /* check_storage_plans.c, "cache" */
void storage_add_entries(TCase *tc); /* check_storage_entries.c, "cache" */
void storage_add_sqlite(TCase *tc);  /* check_storage_sqlite.c, "cache" */
void storage_add_share(TCase *tc);   /* check_storage_share.c, "cache" */
void storage_add_corrupt(TCase *tc); /* check_storage_corrupt.c, "recovery" */
void storage_add_stress(TCase *tc);  /* check_storage_stress.c, "recovery" */
void storage_add_v3(TCase *tc);      /* check_storage_v3.c, "v3" */
void storage_add_place(TCase *tc);   /* check_storage_place.c, "v3" */
void storage_add_trust(TCase *tc);   /* check_storage_trust.c, "trust" */

#endif

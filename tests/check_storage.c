/*
 * check_storage.c - tests for storage/: the sqlite plan cache.
 *
 * Builds the suite from its parts and holds what they share: the
 * fixture (a fresh temporary directory per test) and the helpers
 * declared in check_storage.h. The tests are in the parts, each adding
 * its own to a test case in order:
 *   codec:    check_storage_codec.c   - the shape, offsets, canonical
 *                                       order and checksum codecs alone
 *   cache:    check_storage_plans.c   - round trips of small and
 *                                       100,000-tensor plans, the key,
 *                                       bad arguments, upgrades
 *             check_storage_entries.c - LRU eviction under both caps,
 *                                       lookup, list, explicit eviction,
 *                                       stats and batched hit updates
 *             check_storage_sqlite.c  - sqlite settings, a busy writer,
 *                                       the v1 -> v2 migration
 *             check_storage_share.c   - plans that share bytes in place:
 *                                       round trips, format 1 kept for
 *                                       the others, bad sharing heads
 *   recovery: check_storage_corrupt.c - corrupt values and bad files
 *             check_storage_stress.c  - crash safety under SIGKILL, one
 *                                       writer with four reader threads
 *   v3:       check_storage_v3.c      - schema v3: graph and options
 *                                       blobs, migration from v2,
 *                                       generations, efforts, pending
 *                                       work, export and preload
 *             check_storage_place.c   - schema v4: placement records
 *                                       beside plans (attach, lookup
 *                                       with graphs, export, preload)
 *   trust:    check_storage_trust.c   - the largest arena a stored plan
 *                                       may claim, on every path in and
 *                                       out; the new file's mode and
 *                                       schema
 */
#include <check.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_storage.h"
#include "storage.h"
#include "testutil.h"

/* ---- fixture ------------------------------------------------------------ */

static char *tmpdir;     /* fresh per test */
static char dbpath[512]; /* tmpdir/plans.db */

static void setup(void)
{
  tmpdir = tu_mkdtemp();
  ck_assert_ptr_nonnull(tmpdir);
  snprintf(dbpath, sizeof dbpath, "%s/plans.db", tmpdir);
}

static void teardown(void)
{
  tu_rm_rf(tmpdir);
  free(tmpdir);
  tmpdir = NULL;
}

const char *st_tmpdir(void)
{
  return tmpdir;
}

const char *st_dbpath(void)
{
  return dbpath;
}

/* ---- helpers shared by the parts ---------------------------------------- */

/* Collects what the library logs into a struct st_logbook. */
void st_log_cb(void *ctx, enum storage_log_level lv, const char *msg)
{
  struct st_logbook *lb = ctx;
  if (lv == STORAGE_LOG_WARN) {
    lb->n_warn++;
    snprintf(lb->last_warn, sizeof lb->last_warn, "%s", msg);
  }
  else if (lv == STORAGE_LOG_INFO)
    lb->n_info++;
  else
    lb->n_error++;
  snprintf(lb->last, sizeof lb->last, "%s", msg);
  if (getenv("STORAGE_TEST_LOG"))
    fprintf(stderr, "log %d: %s\n", (int)lv, msg);
}

storage_t *st_open_with(const struct storage_options *o)
{
  storage_t *st = NULL;
  char err[ARENA_ERR_LEN] = "";
  int rc = storage_open(dbpath, o, &st, err);
  ck_assert_msg(rc == 0, "storage_open: %s (%s)", arena_err_name(rc), err);
  ck_assert_ptr_nonnull(st);
  return st;
}

/* A random graph with ids 0..n-1 in ascending order; free(). */
struct planner_tensor *st_make_tensors(size_t n, uint64_t seed)
{
  struct planner_tensor *t = calloc(n, sizeof *t);
  ck_assert_ptr_nonnull(t);
  uint64_t s = seed * 7919 + 1;
  int64_t span = (int64_t)(n / 4 + 8);
  for (size_t i = 0; i < n; i++) {
    t[i].id = (uint32_t)i;
    t[i].size = tu_rand_range(&s, 0, 9) == 0 ? 0 : tu_rand_range(&s, 1, 4096);
    t[i].first = (int64_t)tu_rand_range(&s, 0, (uint64_t)span);
    t[i].last = t[i].first + (int64_t)tu_rand_range(&s, 0, 12);
    t[i].align = 0;
    t[i].pinned = PLANNER_NOT_PINNED;
    t[i].alias = 0;
    t[i].has_alias = 0;
  }
  return t;
}

/* Options for algorithm a. The exact-search effort is cut to 1 (about a
 * millisecond): it is not part of the cache key, and the default would
 * dominate the run. */
void st_opts(struct planner_options *o, enum planner_algo a)
{
  planner_options_init(o);
  o->algo = a;
  o->effort = 1;
}

void st_plan_ok(const struct planner_graph *g, enum planner_algo a,
                struct planner_plan *p)
{
  struct planner_options o;
  char err[ARENA_ERR_LEN];
  st_opts(&o, a);
  planner_plan_init(p);
  int rc = planner_run(g, &o, p, err);
  ck_assert_msg(rc == 0, "planner_run: %s", err);
}

void st_key_init(struct st_tkey *t, unsigned m, int64_t s)
{
  memset(t, 0, sizeof *t);
  snprintf(t->hash, sizeof t->hash, "model-%u", m);
  t->ranks[0] = 4;
  t->dims[0] = 1;
  t->dims[1] = s;
  t->dims[2] = s;
  t->dims[3] = 3;
  t->k.model_hash = (const uint8_t *)t->hash;
  t->k.model_hash_len = strlen(t->hash);
  t->k.ranks = t->ranks;
  t->k.n_inputs = 1;
  t->k.dims = t->dims;
}

void st_stats_of(storage_t *st, struct storage_stats *s)
{
  ck_assert_int_eq(storage_get_stats(st, s), 0);
}

/* Puts plan p of graph g under key k with default best options. */
enum storage_put_result st_put_ok(storage_t *st, const struct st_tkey *k,
                                  const struct planner_graph *g,
                                  const struct planner_plan *p)
{
  struct planner_options o;
  enum storage_put_result res = 0;
  st_opts(&o, PLANNER_ALGO_BEST);
  int rc = storage_put(st, &k->k, g, &o, p, 1234, &res);
  ck_assert_msg(rc == 0, "put: %s: %s", arena_err_name(rc),
                storage_errmsg(st));
  return res;
}

int st_get_rc(storage_t *st, const struct st_tkey *k,
              const struct planner_graph *g, struct planner_plan *out)
{
  struct planner_options o;
  st_opts(&o, PLANNER_ALGO_BEST);
  return storage_get(st, &k->k, g, &o, out, NULL);
}

/* Opens a raw sqlite connection to the cache file. */
sqlite3 *st_raw_open(const char *path)
{
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  return db;
}

void st_raw_exec(sqlite3 *db, const char *sql)
{
  char *msg = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
  ck_assert_msg(rc == SQLITE_OK, "%s: %s", sql, msg ? msg : "?");
  sqlite3_free(msg);
}

int64_t st_raw_int(sqlite3 *db, const char *sql)
{
  sqlite3_stmt *s = NULL;
  ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
  int64_t v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return v;
}

/* A fleet of eight planned graphs under the keys model-0..7. */
void st_fleet_init(struct st_fleet *f, size_t n)
{
  for (int i = 0; i < 8; i++) {
    f->t[i] = st_make_tensors(n, 100 + (uint64_t)i);
    f->g[i].tensors = f->t[i];
    f->g[i].n_tensors = n;
    st_plan_ok(&f->g[i], PLANNER_ALGO_BEST, &f->p[i]);
    st_key_init(&f->k[i], (unsigned)i, 8);
  }
}

void st_fleet_cleanup(struct st_fleet *f)
{
  for (int i = 0; i < 8; i++) {
    planner_plan_cleanup(&f->p[i]);
    free(f->t[i]);
  }
}

int st_has(storage_t *st, struct st_fleet *f, int i)
{
  struct planner_plan q;
  planner_plan_init(&q);
  int rc = st_get_rc(st, &f->k[i], &f->g[i], &q);
  ck_assert(rc == 0 || rc == ARENA_ENOENT);
  planner_plan_cleanup(&q);
  return rc == 0;
}

/* ---- the suite ---------------------------------------------------------- */

Suite *storage_suite(void)
{
  Suite *s = suite_create("storage");
  TCase *tc = tcase_create("codec");
  storage_add_codec(tc);
  suite_add_tcase(s, tc);

  tc = tcase_create("cache");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  storage_add_plans(tc);
  storage_add_entries(tc);
  storage_add_sqlite(tc);
  storage_add_share(tc);
  suite_add_tcase(s, tc);

  tc = tcase_create("recovery");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  storage_add_corrupt(tc);
  storage_add_stress(tc);
  suite_add_tcase(s, tc);

  tc = tcase_create("v3");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  storage_add_v3(tc);
  storage_add_place(tc);
  suite_add_tcase(s, tc);

  tc = tcase_create("trust");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  storage_add_trust(tc);
  suite_add_tcase(s, tc);
  return s;
}

/*
 * check_storage_sqlite.c - the last tests of the storage suite's "cache"
 * test case: the cache file as sqlite sees it. The settings storage_open
 * applies (application id, schema version, WAL), another connection
 * holding the write lock past the busy timeout, and the migration of a
 * version 1 file (built here from the frozen v1 schema) through version 2
 * to the current one (check_storage_v3.c tests what version 3 adds).
 */
#include <check.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_storage.h"
#include "digest.h"
#include "storage.h"
#include "storage_int.h"

/* ---- sqlite settings and a busy writer ---------------------------------- */

START_TEST(sqlite_settings)
{
  storage_t *st = st_open_with(NULL);
  sqlite3 *db = st_raw_open(st_dbpath());
  ck_assert_int_eq(st_raw_int(db, "PRAGMA application_id"), STORAGE__APP_ID);
  ck_assert_int_eq(st_raw_int(db, "PRAGMA user_version"),
                   STORAGE__SCHEMA_VERSION);
  sqlite3_stmt *s;
  ck_assert_int_eq(
      sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
  ck_assert_str_eq((const char *)sqlite3_column_text(s, 0), "wal");
  sqlite3_finalize(s);
  sqlite3_close(db);
  storage_close(st);
}
END_TEST

/* Another connection holding the write lock past the busy timeout makes
 * writes fail with ARENA_EBUSY and change nothing, while reads go on (WAL);
 * pending uses survive a failed flush and are written later. */
START_TEST(busy_writer)
{
  struct st_fleet f;
  st_fleet_init(&f, 20);
  struct storage_options o;
  storage_options_init(&o);
  o.busy_timeout_ms = 50;
  o.touch_batch = 1000;
  storage_t *st = st_open_with(&o);
  st_put_ok(st, &f.k[0], &f.g[0], &f.p[0]);
  struct planner_plan q;
  planner_plan_init(&q);
  ck_assert_int_eq(st_get_rc(st, &f.k[0], &f.g[0], &q), 0); /* pending use */

  sqlite3 *db = st_raw_open(st_dbpath());
  st_raw_exec(db, "BEGIN IMMEDIATE");
  struct planner_options po;
  st_opts(&po, PLANNER_ALGO_BEST);
  ck_assert_int_eq(storage_put(st, &f.k[1].k, &f.g[1], &po, &f.p[1], 0, NULL),
                   ARENA_EBUSY);
  ck_assert_str_ne(storage_errmsg(st), "");
  ck_assert_int_eq(storage_flush(st), ARENA_EBUSY);
  ck_assert_int_eq(st_get_rc(st, &f.k[0], &f.g[0], &q), 0); /* reads work */
  st_raw_exec(db, "ROLLBACK");

  ck_assert(!st_has(st, &f, 1));
  ck_assert_int_eq(storage_flush(st), 0);
  ck_assert_str_eq(storage_errmsg(st), "");
  ck_assert_int_eq(st_raw_int(db, "SELECT hits FROM plans"), 2);
  ck_assert_int_eq(st_raw_int(db, "SELECT misses FROM stats"), 1);
  st_put_ok(st, &f.k[1], &f.g[1], &f.p[1]);
  sqlite3_close(db);
  storage_close(st);
  planner_plan_cleanup(&q);
  st_fleet_cleanup(&f);
}
END_TEST

/* ---- migration ---------------------------------------------------------- */

/* The version 1 schema exactly as released, frozen here on purpose: the
 * test must keep building v1 files even when schema.c moves on. */
static const char v1_sql[] =
    "CREATE TABLE plans (id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " model_hash BLOB NOT NULL, shape BLOB NOT NULL,"
    " graph_digest BLOB NOT NULL, options_digest BLOB NOT NULL,"
    " n_tensors INTEGER NOT NULL, offsets BLOB NOT NULL,"
    " arena_bytes INTEGER NOT NULL, lower_bound INTEGER NOT NULL,"
    " naive_bytes INTEGER NOT NULL, proven_optimal INTEGER NOT NULL,"
    " algo INTEGER NOT NULL, fit INTEGER NOT NULL, bound INTEGER NOT NULL,"
    " plan_us INTEGER NOT NULL, created_ms INTEGER NOT NULL,"
    " last_used_ms INTEGER NOT NULL, hits INTEGER NOT NULL DEFAULT 0,"
    " checksum BLOB NOT NULL);"
    "CREATE UNIQUE INDEX plans_key"
    " ON plans(model_hash, shape, graph_digest, options_digest);"
    "CREATE INDEX plans_last_used ON plans(last_used_ms);"
    "PRAGMA application_id = 1095910734;" /* 0x4152454e */
    "PRAGMA user_version = 1;";

void st_v1_create(sqlite3 *db)
{
  st_raw_exec(db, v1_sql);
}

/* Inserts a v1 row for plan p of graph g under key k. Returns its
 * accounted bytes. */
uint64_t st_v1_insert(sqlite3 *db, const struct st_tkey *k,
                          const struct planner_graph *g,
                          const struct planner_plan *p, int64_t last_used,
                          int64_t hits)
{
  uint8_t *shape = NULL, *blob = NULL;
  size_t cap = 0, shape_len, blob_len;
  uint8_t gd[32], od[32], sum[32];
  struct planner_options o;
  st_opts(&o, PLANNER_ALGO_BEST);
  ck_assert_int_eq(storage__shape_encode(&k->k, &shape, &cap, &shape_len), 0);
  ck_assert_int_eq(planner_graph_digest(g, gd), 0);
  planner_options_digest(&o, od);
  ck_assert_int_eq(
      storage__offsets_encode(p->offsets, p->n_offsets, NULL, NULL, &blob,
                              &blob_len),
      0);
  struct storage__row r = {
      .model_hash = k->k.model_hash, .model_hash_len = k->k.model_hash_len,
      .shape = shape, .shape_len = shape_len, .graph_digest = gd,
      .options_digest = od, .n_tensors = p->n_offsets, .offsets = blob,
      .offsets_len = blob_len, .arena_bytes = p->arena_bytes,
      .lower_bound = p->lower_bound_bytes, .naive_bytes = p->naive_bytes,
      .proven_optimal = (uint32_t)p->proven_optimal, .algo = p->algo,
      .fit = p->fit, .bound = p->bound, .plan_us = 5, .created_ms = 1000};
  storage__checksum(&r, sum);
  sqlite3_stmt *s;
  ck_assert_int_eq(
      sqlite3_prepare_v2(
          db,
          "INSERT INTO plans (model_hash, shape, graph_digest,"
          " options_digest, n_tensors, offsets, arena_bytes, lower_bound,"
          " naive_bytes, proven_optimal, algo, fit, bound, plan_us,"
          " created_ms, last_used_ms, hits, checksum) VALUES (?, ?, ?, ?, ?,"
          " ?, ?, ?, ?, ?, ?, ?, ?, 5, 1000, ?, ?, ?)",
          -1, &s, NULL),
      SQLITE_OK);
  sqlite3_bind_blob(s, 1, r.model_hash, (int)r.model_hash_len, NULL);
  sqlite3_bind_blob(s, 2, shape, (int)shape_len, NULL);
  sqlite3_bind_blob(s, 3, gd, 32, NULL);
  sqlite3_bind_blob(s, 4, od, 32, NULL);
  sqlite3_bind_int64(s, 5, (int64_t)r.n_tensors);
  sqlite3_bind_blob(s, 6, blob, (int)blob_len, NULL);
  sqlite3_bind_int64(s, 7, (int64_t)r.arena_bytes);
  sqlite3_bind_int64(s, 8, (int64_t)r.lower_bound);
  sqlite3_bind_int64(s, 9, (int64_t)r.naive_bytes);
  sqlite3_bind_int64(s, 10, r.proven_optimal);
  sqlite3_bind_int64(s, 11, r.algo);
  sqlite3_bind_int64(s, 12, r.fit);
  sqlite3_bind_int64(s, 13, r.bound);
  sqlite3_bind_int64(s, 14, last_used);
  sqlite3_bind_int64(s, 15, hits);
  sqlite3_bind_blob(s, 16, sum, 32, NULL);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_DONE);
  sqlite3_finalize(s);
  uint64_t bytes = storage__entry_bytes(&r);
  free(shape);
  free(blob);
  return bytes;
}

START_TEST(migrate_from_v1)
{
  struct st_fleet f;
  st_fleet_init(&f, 25);
  sqlite3 *db = st_raw_open(st_dbpath());
  st_v1_create(db);
  /* Last use: plan 0 newest, plan 1 oldest, plan 2 in between. */
  uint64_t bytes = st_v1_insert(db, &f.k[0], &f.g[0], &f.p[0], 3000, 2);
  bytes += st_v1_insert(db, &f.k[1], &f.g[1], &f.p[1], 1000, 5);
  bytes += st_v1_insert(db, &f.k[2], &f.g[2], &f.p[2], 2000, 0);
  sqlite3_close(db);

  struct st_logbook lb = {0};
  struct storage_options o;
  storage_options_init(&o);
  o.max_entries = 3;
  o.log = st_log_cb;
  o.log_ctx = &lb;
  storage_t *st = st_open_with(&o);
  /* v1 -> v2 -> v3 -> v4, one line each. */
  ck_assert_msg(lb.n_info == 3, "%d info lines, last: %s", lb.n_info,
                lb.last);
  ck_assert_ptr_nonnull(strstr(lb.last, "v3 to v4"));
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 3);
  ck_assert_uint_eq(s.bytes, bytes);
  ck_assert_uint_eq(s.hits, 7);

  /* Plans survive and verify; the LRU order follows the v1 last-use
   * times: the next put evicts plan 1. */
  ck_assert(st_has(st, &f, 2));
  ck_assert(st_has(st, &f, 0));
  ck_assert_int_eq(storage_flush(st), 0);
  st_put_ok(st, &f.k[3], &f.g[3], &f.p[3]);
  ck_assert(!st_has(st, &f, 1));
  ck_assert(st_has(st, &f, 3));
  storage_close(st);

  db = st_raw_open(st_dbpath());
  ck_assert_int_eq(st_raw_int(db, "PRAGMA user_version"),
                   STORAGE__SCHEMA_VERSION);
  ck_assert_int_eq(st_raw_int(db, "SELECT count(*) FROM sqlite_schema WHERE "
                                  "name = 'plans_last_used'"),
                   0);
  sqlite3_close(db);

  /* Opening again does not migrate again. */
  lb.n_info = 0;
  st = st_open_with(&o);
  ck_assert_int_eq(lb.n_info, 0);
  storage_close(st);
  st_fleet_cleanup(&f);
}
END_TEST

/* ---- adding the tests --------------------------------------------------- */

void storage_add_sqlite(TCase *tc)
{
  tcase_add_test(tc, sqlite_settings);
  tcase_add_test(tc, busy_writer);
  tcase_add_test(tc, migrate_from_v1);
}

/*
 * check_storage_v3.c - the storage suite's "v3" test case: what schema
 * version 3 adds. The graph, options and entry-key codecs alone; the
 * migration of a version 2 file (built here from the frozen v1 and v2
 * scripts); generations, efforts and the improve_done flag through
 * storage_put_effort and storage_note_tried; storage_pending's order and
 * exclusions; storage_export's round trip and filters; storage_preload's
 * all-or-nothing rule; and a damaged graph blob found as corrupt.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_storage.h"
#include "digest.h"
#include "storage.h"
#include "storage_int.h"

/* ---- helpers ------------------------------------------------------------ */

/* Asserts that two tensors agree on every field the graph digest covers
 * (alias only where has_alias is set). */
static void same_tensor(const struct planner_tensor *a,
                        const struct planner_tensor *b)
{
  ck_assert_uint_eq(a->id, b->id);
  ck_assert_uint_eq(a->size, b->size);
  ck_assert_int_eq(a->first, b->first);
  ck_assert_int_eq(a->last, b->last);
  ck_assert_uint_eq(a->align, b->align);
  ck_assert_int_eq(a->pinned, b->pinned);
  ck_assert_uint_eq(a->has_alias != 0, b->has_alias != 0);
  if (a->has_alias)
    ck_assert_uint_eq(a->alias, b->alias);
}

/* Plans g with the naive algorithm: a plan larger than best's. */
static void plan_naive(const struct planner_graph *g, struct planner_plan *p)
{
  st_plan_ok(g, PLANNER_ALGO_NAIVE, p);
}

/* storage_put_effort with default best options, which must succeed. */
static enum storage_put_result put_effort_ok(storage_t *st,
                                             const struct st_tkey *k,
                                             const struct planner_graph *g,
                                             const struct planner_plan *p,
                                             uint32_t effort, int done)
{
  struct planner_options o;
  enum storage_put_result res = 0;
  st_opts(&o, PLANNER_ALGO_BEST);
  int rc = storage_put_effort(st, &k->k, g, &o, p, 7, effort, done, &res);
  ck_assert_msg(rc == 0, "put_effort: %s: %s", arena_err_name(rc),
                storage_errmsg(st));
  return res;
}

/* The stored bookkeeping of graph g under k (a get that must hit). */
static struct storage_info info_of(storage_t *st, const struct st_tkey *k,
                                   const struct planner_graph *g,
                                   struct planner_plan *out)
{
  struct planner_options o;
  struct storage_info info;
  st_opts(&o, PLANNER_ALGO_BEST);
  ck_assert_int_eq(storage_get(st, &k->k, g, &o, out, &info), 0);
  return info;
}

/* The entry key the daemon's List hands out for (k, digests), built
 * byte by byte from its documented layout. Returns its length. */
static size_t entry_key(const struct st_tkey *k, const uint8_t *gd,
                        const uint8_t *od, uint8_t *out)
{
  size_t at = 0;
  out[at++] = (uint8_t)k->k.model_hash_len;
  memcpy(out + at, k->k.model_hash, k->k.model_hash_len);
  at += k->k.model_hash_len;
  out[at++] = (uint8_t)k->k.n_inputs;
  out[at++] = (uint8_t)(k->k.n_inputs >> 8);
  size_t n_dims = 0;
  for (size_t i = 0; i < k->k.n_inputs; i++) {
    out[at++] = (uint8_t)k->k.ranks[i];
    n_dims += k->k.ranks[i];
  }
  for (size_t i = 0; i < n_dims; i++)
    for (int b = 0; b < 8; b++)
      out[at++] = (uint8_t)((uint64_t)k->k.dims[i] >> (8 * b));
  memcpy(out + at, gd, 32);
  memcpy(out + at + 32, od, 32);
  return at + 64;
}

/* Removes the graph columns of every row whose model hash is hash, as a
 * row migrated from v2 has none (improve_done is left alone, so only the
 * missing graph can keep the row out of storage_pending). */
static void drop_graph(const char *hash)
{
  sqlite3 *db = st_raw_open(st_dbpath());
  char sql[160];
  snprintf(sql, sizeof sql,
           "UPDATE plans SET graph = NULL, opts = NULL, graph_sum = NULL"
           " WHERE model_hash = CAST('%s' AS BLOB)",
           hash);
  st_raw_exec(db, sql);
  sqlite3_close(db);
}

/* ---- codecs ------------------------------------------------------------- */

START_TEST(v3_codec_graph)
{
  struct planner_tensor t[4] = {
      {.id = 3, .size = 0, .first = 0, .last = 0, .pinned = -1},
      {.id = 9, .size = UINT64_MAX, .first = -5, .last = INT64_MAX - 1,
       .align = 1ull << 32, .pinned = 4096},
      {.id = 10, .size = 64, .first = 7, .last = 3, .pinned = -1,
       .has_alias = 1, .alias = 9},
      {.id = UINT32_MAX, .size = 1, .first = INT64_MIN, .last = INT64_MAX,
       .pinned = -1, .alias = 77 /* ignored: has_alias is 0 */},
  };
  struct planner_graph g = {t, 4};
  uint8_t *blob;
  size_t len;
  ck_assert_int_eq(storage__graph_encode(&g, NULL, &blob, &len), 0);
  ck_assert_uint_eq(blob[0], STORAGE__GRAPH_FORMAT);
  struct planner_tensor *back;
  ck_assert_int_eq(storage__graph_decode(blob, len, 4, &back), 0);
  for (int i = 0; i < 4; i++)
    same_tensor(&t[i], &back[i]);
  ck_assert_uint_eq(back[3].alias, 0);
  free(back);

  /* The count must match; truncation, trailing bytes, unknown flags and
   * an unknown format are corrupt. */
  ck_assert_int_eq(storage__graph_decode(blob, len, 3, &back),
                   ARENA_ECORRUPT);
  ck_assert_ptr_null(back);
  ck_assert_int_eq(storage__graph_decode(blob, len - 1, 4, &back),
                   ARENA_ECORRUPT);
  uint8_t *longer = malloc(len + 1);
  memcpy(longer, blob, len);
  longer[len] = 0;
  ck_assert_int_eq(storage__graph_decode(longer, len + 1, 4, &back),
                   ARENA_ECORRUPT);
  memcpy(longer, blob, len);
  longer[2] |= 0x40; /* the first tensor's flags byte */
  ck_assert_int_eq(storage__graph_decode(longer, len, 4, &back),
                   ARENA_ECORRUPT);
  memcpy(longer, blob, len);
  longer[0] = 9;
  ck_assert_int_eq(storage__graph_decode(longer, len, 4, &back),
                   ARENA_ECORRUPT);
  free(longer);
  free(blob);

  /* A permutation writes the tensors in its order; ids that descend
   * (never canonical) do not decode, as a gap cannot be negative. */
  size_t perm[4] = {3, 2, 1, 0};
  ck_assert_int_eq(storage__graph_encode(&g, perm, &blob, &len), 0);
  ck_assert_int_eq(storage__graph_decode(blob, len, 4, &back),
                   ARENA_ECORRUPT);
  free(blob);
}
END_TEST

START_TEST(v3_codec_opts_and_key)
{
  struct planner_options o, back;
  planner_options_init(&o);
  o.algo = PLANNER_ALGO_EXACT;
  o.alignment = 1ull << 40;
  o.capacity = 123456789;
  o.in_place = 0;
  o.effort = 99; /* not stored */
  uint8_t blob[STORAGE__OPTS_MAX];
  size_t len = storage__opts_encode(&o, blob);
  ck_assert_int_eq(storage__opts_decode(blob, len, &back), 0);
  ck_assert_int_eq(back.algo, PLANNER_ALGO_EXACT);
  ck_assert_uint_eq(back.alignment, 1ull << 40);
  ck_assert_uint_eq(back.capacity, 123456789);
  ck_assert_int_eq(back.in_place, 0);
  ck_assert_uint_eq(back.effort, 0);
  ck_assert_int_eq(storage__opts_decode(blob, len - 1, &back),
                   ARENA_ECORRUPT);
  blob[1] = PLANNER_ALGO__COUNT;
  ck_assert_int_eq(storage__opts_decode(blob, len, &back), ARENA_ECORRUPT);

  struct st_tkey k;
  st_key_init(&k, 4, 16);
  uint8_t gd[32], od[32], buf[256];
  memset(gd, 0xaa, 32);
  memset(od, 0x55, 32);
  size_t n = entry_key(&k, gd, od, buf);
  struct storage__entry_key ek;
  ck_assert_int_eq(storage__entry_key_decode(buf, n, &ek), 0);
  ck_assert_uint_eq(ek.hash_len, strlen("model-4"));
  ck_assert_mem_eq(ek.hash, "model-4", ek.hash_len);
  ck_assert_uint_eq(ek.n_inputs, 1);
  ck_assert_uint_eq(ek.ranks[0], 4);
  ck_assert_int_eq(ek.dims[1], 16);
  ck_assert_mem_eq(ek.graph_digest, gd, 32);
  ck_assert_mem_eq(ek.options_digest, od, 32);
  storage__entry_key_cleanup(&ek);
  ck_assert_int_eq(storage__entry_key_decode(buf, n - 1, &ek), ARENA_EINVAL);
  storage__entry_key_cleanup(&ek);
  buf[0] = 0;
  ck_assert_int_eq(storage__entry_key_decode(buf, n, &ek), ARENA_EINVAL);
  storage__entry_key_cleanup(&ek);
}
END_TEST

/* ---- migration from v2 -------------------------------------------------- */

/* The version 2 migration exactly as released, frozen here on purpose so
 * that the test keeps building v2 files when schema.c moves on. */
static const char v2_sql[] =
    "ALTER TABLE plans ADD COLUMN use_seq INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE plans ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;"
    "UPDATE plans SET bytes = 128 + length(model_hash) + length(shape)"
    " + length(graph_digest) + length(options_digest) + length(offsets)"
    " + length(checksum);"
    "UPDATE plans SET use_seq = r.rn FROM"
    " (SELECT id, row_number() OVER (ORDER BY last_used_ms, id) AS rn"
    "  FROM plans) AS r WHERE plans.id = r.id;"
    "DROP INDEX plans_last_used;"
    "CREATE INDEX plans_lru ON plans(use_seq);"
    "CREATE INDEX plans_created ON plans(created_ms);"
    "CREATE TABLE stats ("
    " id INTEGER PRIMARY KEY CHECK (id = 1),"
    " entries INTEGER NOT NULL, bytes INTEGER NOT NULL,"
    " hits INTEGER NOT NULL, misses INTEGER NOT NULL,"
    " evictions INTEGER NOT NULL, removed INTEGER NOT NULL,"
    " corrupt INTEGER NOT NULL);"
    "INSERT INTO stats SELECT 1, count(*), coalesce(sum(bytes), 0),"
    " coalesce(sum(hits), 0), 0, 0, 0, 0 FROM plans;"
    "CREATE TRIGGER plans_ai AFTER INSERT ON plans BEGIN"
    " UPDATE stats SET entries = entries + 1, bytes = bytes + new.bytes"
    " WHERE id = 1; END;"
    "CREATE TRIGGER plans_ad AFTER DELETE ON plans BEGIN"
    " UPDATE stats SET entries = entries - 1, bytes = bytes - old.bytes"
    " WHERE id = 1; END;"
    "CREATE TRIGGER plans_au AFTER UPDATE OF bytes ON plans BEGIN"
    " UPDATE stats SET bytes = bytes - old.bytes + new.bytes"
    " WHERE id = 1; END;"
    "PRAGMA user_version = 2;";

START_TEST(v3_migrate_from_v2)
{
  struct st_fleet f;
  st_fleet_init(&f, 30);
  struct planner_plan naive;
  plan_naive(&f.g[1], &naive);
  ck_assert_uint_gt(naive.arena_bytes, f.p[1].arena_bytes);
  sqlite3 *db = st_raw_open(st_dbpath());
  st_v1_create(db);
  uint64_t bytes = st_v1_insert(db, &f.k[0], &f.g[0], &f.p[0], 1000, 3);
  bytes += st_v1_insert(db, &f.k[1], &f.g[1], &naive, 2000, 0);
  st_raw_exec(db, v2_sql);
  sqlite3_close(db);

  struct st_logbook lb = {0};
  struct storage_options o;
  storage_options_init(&o);
  o.log = st_log_cb;
  o.log_ctx = &lb;
  storage_t *st = st_open_with(&o);
  /* one line per step: v2 to v3, then v3 to v4 */
  ck_assert_msg(lb.n_info == 2, "%d info lines, last: %s", lb.n_info,
                lb.last);
  ck_assert_ptr_nonnull(strstr(lb.last, "v3 to v4"));
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 2);
  ck_assert_uint_eq(s.bytes, bytes); /* no graph, no more bytes */

  /* Old plans are served, known to have no graph, and want no work. */
  struct planner_plan q;
  planner_plan_init(&q);
  struct storage_info in = info_of(st, &f.k[0], &f.g[0], &q);
  ck_assert_uint_eq(q.arena_bytes, f.p[0].arena_bytes);
  ck_assert_uint_eq(in.generation, 0);
  ck_assert_int_eq(in.has_graph, 0);
  ck_assert_int_eq(in.improve_done, 1);
  ck_assert_uint_eq(in.effort, 0);
  ck_assert_uint_eq(in.effort_tried, 0);
  struct storage_record *r = NULL;
  size_t n = 9, without = 0;
  ck_assert_int_eq(storage_pending(st, 10, 0, &r, &n), 0);
  ck_assert_uint_eq(n, 0);
  struct storage_export_query eq = {.limit = 10};
  ck_assert_int_eq(storage_export(st, &eq, &r, &n, &without), 0);
  ck_assert_uint_eq(n, 0);
  ck_assert_ptr_null(r);
  ck_assert_uint_eq(without, 2);
  struct storage_list_query lq = {.limit = 10};
  ck_assert_int_eq(storage_list(st, &lq, &r, &n), 0);
  ck_assert_uint_eq(n, 2);
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_eq(r[i].info.has_graph, 0);
    ck_assert_uint_eq(r[i].info.generation, 0);
  }
  storage_records_free(r, n);

  /* A smaller plan replaces an old one: generation 2 (the unknown
   * history counts as one plan), with its graph, exportable. */
  ck_assert_int_eq(put_effort_ok(st, &f.k[1], &f.g[1], &f.p[1], 6, 0),
                   STORAGE_PUT_UPGRADED);
  in = info_of(st, &f.k[1], &f.g[1], &q);
  ck_assert_uint_eq(in.generation, 2);
  ck_assert_int_eq(in.has_graph, 1);
  ck_assert_uint_eq(in.effort, 6);
  ck_assert_int_eq(storage_export(st, &eq, &r, &n, &without), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(without, 1);
  ck_assert_mem_eq(r[0].model_hash, "model-1", 7);
  storage_records_free(r, n);
  storage_close(st);

  db = st_raw_open(st_dbpath());
  ck_assert_int_eq(st_raw_int(db, "PRAGMA user_version"),
                   STORAGE__SCHEMA_VERSION);
  ck_assert_int_eq(st_raw_int(db, "SELECT count(*) FROM sqlite_schema"
                                  " WHERE name = 'plans_pending'"),
                   1);
  sqlite3_close(db);
  planner_plan_cleanup(&q);
  planner_plan_cleanup(&naive);
  st_fleet_cleanup(&f);
}
END_TEST

/* ---- generations and efforts -------------------------------------------- */

START_TEST(v3_generation_and_effort)
{
  struct st_fleet f;
  st_fleet_init(&f, 40);
  struct planner_plan naive, q;
  plan_naive(&f.g[0], &naive);
  planner_plan_init(&q);
  ck_assert_uint_gt(naive.arena_bytes, f.p[0].arena_bytes);
  ck_assert_int_eq(naive.proven_optimal, 0);
  storage_t *st = st_open_with(NULL);

  ck_assert_int_eq(put_effort_ok(st, &f.k[0], &f.g[0], &naive, 3, 0),
                   STORAGE_PUT_INSERTED);
  struct storage_info in = info_of(st, &f.k[0], &f.g[0], &q);
  ck_assert_uint_eq(in.generation, 1);
  ck_assert_uint_eq(in.effort, 3);
  ck_assert_uint_eq(in.effort_tried, 3);
  ck_assert_int_eq(in.improve_done, 0);
  ck_assert_int_eq(in.has_graph, 1);

  /* The same plan again: kept, generation unchanged, the tried effort
   * rises. */
  ck_assert_int_eq(put_effort_ok(st, &f.k[0], &f.g[0], &naive, 5, 0),
                   STORAGE_PUT_KEPT);
  in = info_of(st, &f.k[0], &f.g[0], &q);
  ck_assert_uint_eq(in.generation, 1);
  ck_assert_uint_eq(in.effort, 3);
  ck_assert_uint_eq(in.effort_tried, 5);
  ck_assert_uint_eq(q.arena_bytes, naive.arena_bytes);

  /* A smaller plan at a lower effort: generation 2, its own effort, the
   * tried effort stays the highest, done as asked. */
  ck_assert_int_eq(put_effort_ok(st, &f.k[0], &f.g[0], &f.p[0], 2, 1),
                   STORAGE_PUT_UPGRADED);
  in = info_of(st, &f.k[0], &f.g[0], &q);
  ck_assert_uint_eq(in.generation, 2);
  ck_assert_uint_eq(in.effort, 2);
  ck_assert_uint_eq(in.effort_tried, 5);
  ck_assert_int_eq(in.improve_done, 1);
  ck_assert_uint_eq(q.arena_bytes, f.p[0].arena_bytes);

  /* A larger plan with done 0 is kept and does not clear done. */
  ck_assert_int_eq(put_effort_ok(st, &f.k[0], &f.g[0], &naive, 1, 0),
                   STORAGE_PUT_KEPT);
  in = info_of(st, &f.k[0], &f.g[0], &q);
  ck_assert_uint_eq(in.generation, 2);
  ck_assert_int_eq(in.improve_done, 1);
  ck_assert_uint_eq(in.effort_tried, 5);

  /* storage_put is put_effort with effort 0 and done 0. */
  ck_assert_int_eq(st_put_ok(st, &f.k[1], &f.g[1], &f.p[1]),
                   STORAGE_PUT_INSERTED);
  in = info_of(st, &f.k[1], &f.g[1], &q);
  ck_assert_uint_eq(in.generation, 1);
  ck_assert_uint_eq(in.effort, 0);
  ck_assert_int_eq(in.improve_done, f.p[1].proven_optimal ? 1 : 0);
  ck_assert_int_eq(in.has_graph, 1);
  storage_close(st);

  /* The accounted bytes include both blobs and their checksum. */
  sqlite3 *db = st_raw_open(st_dbpath());
  ck_assert_int_eq(
      st_raw_int(db, "SELECT count(*) FROM plans WHERE bytes <> 128"
                     " + length(model_hash) + length(shape) + 64"
                     " + length(offsets) + 32 + length(graph)"
                     " + length(opts) + 32"),
      0);
  ck_assert_int_eq(st_raw_int(db, "SELECT count(*) FROM plans"
                                  " WHERE graph IS NULL OR opts IS NULL"),
                   0);
  ck_assert_int_eq(st_raw_int(db, "SELECT (SELECT bytes FROM stats) ="
                                  " (SELECT sum(bytes) FROM plans)"),
                   1);
  sqlite3_close(db);
  planner_plan_cleanup(&q);
  planner_plan_cleanup(&naive);
  st_fleet_cleanup(&f);
}
END_TEST

START_TEST(v3_note_tried)
{
  struct st_fleet f;
  st_fleet_init(&f, 20);
  struct planner_options o;
  uint8_t gd[32], od[32];
  st_opts(&o, PLANNER_ALGO_BEST);
  ck_assert_int_eq(planner_graph_digest(&f.g[0], gd), 0);
  planner_options_digest(&o, od);
  storage_t *st = st_open_with(NULL);

  /* A key not stored: nothing changes, nothing is created. */
  ck_assert_int_eq(storage_note_tried(st, &f.k[0].k, gd, od, 9, 1), 0);
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 0);
  ck_assert_int_eq(storage_note_tried(st, &f.k[0].k, NULL, od, 9, 1),
                   ARENA_EINVAL);
  struct st_tkey bad = f.k[0];
  bad.k.model_hash_len = 0;
  ck_assert_int_eq(storage_note_tried(st, &bad.k, gd, od, 9, 1),
                   ARENA_EINVAL);

  struct planner_plan naive, q;
  plan_naive(&f.g[0], &naive);
  planner_plan_init(&q);
  ck_assert_int_eq(naive.proven_optimal, 0);
  put_effort_ok(st, &f.k[0], &f.g[0], &naive, 2, 0);
  put_effort_ok(st, &f.k[1], &f.g[1], &f.p[1], 2, 0);
  ck_assert_int_eq(storage_note_tried(st, &f.k[0].k, gd, od, 9, 0), 0);
  struct storage_info in = info_of(st, &f.k[0], &f.g[0], &q);
  ck_assert_uint_eq(in.effort_tried, 9);
  ck_assert_uint_eq(in.effort, 2);
  ck_assert_int_eq(in.improve_done, 0);
  ck_assert_int_eq(storage_note_tried(st, &f.k[0].k, gd, od, 4, 1), 0);
  in = info_of(st, &f.k[0], &f.g[0], &q);
  ck_assert_uint_eq(in.effort_tried, 9); /* never lowered */
  ck_assert_int_eq(in.improve_done, 1);
  ck_assert_int_eq(storage_note_tried(st, &f.k[0].k, gd, od, 1, 0), 0);
  in = info_of(st, &f.k[0], &f.g[0], &q);
  ck_assert_int_eq(in.improve_done, 1); /* never cleared */
  ck_assert_uint_eq(in.generation, 1);
  ck_assert_uint_eq(q.arena_bytes, naive.arena_bytes);
  /* The other plan is untouched. */
  in = info_of(st, &f.k[1], &f.g[1], &q);
  ck_assert_uint_eq(in.effort_tried, 2);
  storage_close(st);
  planner_plan_cleanup(&q);
  planner_plan_cleanup(&naive);
  st_fleet_cleanup(&f);
}
END_TEST

/* ---- pending ------------------------------------------------------------ */

START_TEST(v3_pending)
{
  struct st_fleet f;
  st_fleet_init(&f, 24);
  struct planner_plan naive[8], q;
  planner_plan_init(&q);
  storage_t *st = st_open_with(NULL);
  for (int i = 0; i < 6; i++) {
    plan_naive(&f.g[i], &naive[i]);
    ck_assert_int_eq(naive[i].proven_optimal, 0);
    put_effort_ok(st, &f.k[i], &f.g[i], &naive[i], 1, i == 1);
  }
  drop_graph("model-2"); /* graphless: wants work, but cannot get it */
  /* Hits: plan 3 three times, plan 0 once; 4 and 5 none, 5 newer. */
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(st_get_rc(st, &f.k[3], &f.g[3], &q), 0);
  ck_assert_int_eq(st_get_rc(st, &f.k[0], &f.g[0], &q), 0);

  struct storage_record *r = NULL;
  size_t n = 0;
  ck_assert_int_eq(storage_pending(st, 10, 0, &r, &n), 0); /* flushes */
  ck_assert_uint_eq(n, 4);
  static const char *const want[4] = {"model-3", "model-0", "model-5",
                                      "model-4"};
  for (size_t i = 0; i < n; i++) {
    ck_assert_uint_eq(r[i].model_hash_len, 7);
    ck_assert_mem_eq(r[i].model_hash, want[i], 7);
    int m = r[i].model_hash[6] - '0';
    ck_assert_int_eq(r[i].info.improve_done, 0);
    ck_assert_int_eq(r[i].info.has_graph, 1);
    ck_assert_uint_eq(r[i].graph.n_tensors, 24);
    ck_assert_ptr_nonnull(r[i].plan.offsets);
    for (size_t t = 0; t < 24; t++) {
      same_tensor(&r[i].graph.tensors[t], &f.t[m][t]);
      ck_assert_uint_eq(r[i].plan.offsets[t], naive[m].offsets[t]);
    }
    ck_assert_int_eq(r[i].opts.algo, PLANNER_ALGO_BEST);
    ck_assert_uint_eq(r[i].opts.alignment, PLANNER_DEFAULT_ALIGNMENT);
    ck_assert_int_eq(r[i].opts.in_place, 1);
  }
  storage_records_free(r, n);
  ck_assert_int_eq(storage_pending(st, 1, 0, &r, &n), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_mem_eq(r[0].model_hash, "model-3", 7);
  storage_records_free(r, n);
  /* A cap on tensors leaves larger graphs out, and only them. */
  ck_assert_int_eq(storage_pending(st, 10, 23, &r, &n), 0);
  ck_assert_uint_eq(n, 0);
  ck_assert_int_eq(storage_pending(st, 10, 24, &r, &n), 0);
  ck_assert_uint_eq(n, 4);
  storage_records_free(r, n);
  ck_assert_int_eq(storage_pending(st, 0, 0, &r, &n), ARENA_EINVAL);
  ck_assert_ptr_null(r);
  ck_assert_int_eq(storage_pending(st, STORAGE_LIST_MAX + 1, 0, &r, &n),
                   ARENA_EINVAL);
  storage_close(st);
  planner_plan_cleanup(&q);
  for (int i = 0; i < 6; i++)
    planner_plan_cleanup(&naive[i]);
  st_fleet_cleanup(&f);
}
END_TEST

/* ---- export ------------------------------------------------------------- */

/* A graph listed out of id order, with per-tensor alignment, a pinned
 * tensor and a legal in-place pair: every field the codec stores. */
static struct planner_tensor *odd_graph(size_t *n)
{
  size_t m = 30;
  struct planner_tensor *t = st_make_tensors(m + 3, 77);
  for (size_t i = 0; i < m; i++) {
    t[i].id = (uint32_t)(1000 - 7 * i); /* descending, with gaps */
    if (i % 5 == 0)
      t[i].align = 256;
  }
  /* in [0, 3] and out [3, 5], same size: out may reuse in's bytes. */
  t[m] = (struct planner_tensor){.id = 5, .size = 512, .first = 0,
                                 .last = 3, .pinned = PLANNER_NOT_PINNED};
  t[m + 1] = (struct planner_tensor){.id = 6, .size = 512, .first = 3,
                                     .last = 5, .pinned = PLANNER_NOT_PINNED,
                                     .alias = 5, .has_alias = 1};
  t[m + 2] = (struct planner_tensor){.id = 2, .size = 128, .first = 1,
                                     .last = 2, .pinned = 1 << 20};
  *n = m + 3;
  return t;
}

START_TEST(v3_export_round_trip)
{
  size_t n_t;
  struct planner_tensor *t = odd_graph(&n_t);
  struct planner_graph g = {t, n_t};
  struct planner_options o;
  struct planner_plan p;
  char err[ARENA_ERR_LEN];
  st_opts(&o, PLANNER_ALGO_GREEDY_SIZE);
  o.alignment = 32;
  o.capacity = 1 << 24;
  planner_plan_init(&p);
  ck_assert_msg(planner_run(&g, &o, &p, err) == 0, "%s", err);
  struct st_tkey k;
  st_key_init(&k, 9, 8);
  storage_t *st = st_open_with(NULL);
  ck_assert_int_eq(storage_put_effort(st, &k.k, &g, &o, &p, 5, 12, 0, NULL),
                   0);

  struct storage_export_query q = {.limit = 100};
  struct storage_record *r = NULL;
  size_t n = 0, without = 7;
  ck_assert_int_eq(storage_export(st, &q, &r, &n, &without), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(without, 0);
  uint8_t gd[32], od[32], gd2[32], od2[32];
  ck_assert_int_eq(planner_graph_digest(&g, gd), 0);
  planner_options_digest(&o, od);
  ck_assert_int_eq(planner_graph_digest(&r[0].graph, gd2), 0);
  planner_options_digest(&r[0].opts, od2);
  ck_assert_mem_eq(gd, gd2, 32);
  ck_assert_mem_eq(od, od2, 32);
  ck_assert_mem_eq(r[0].graph_digest, gd, 32);
  ck_assert_mem_eq(r[0].options_digest, od, 32);
  ck_assert_int_eq(r[0].opts.algo, PLANNER_ALGO_GREEDY_SIZE);
  ck_assert_uint_eq(r[0].opts.alignment, 32);
  ck_assert_uint_eq(r[0].opts.capacity, 1 << 24);
  ck_assert_int_eq(r[0].opts.in_place, 1);
  ck_assert_uint_eq(r[0].info.effort, 12);
  ck_assert_int_eq(planner_verify(&r[0].graph, &r[0].opts, &r[0].plan, err),
                   0);
  /* Canonical order: ascending ids; each offset is its tensor's. */
  for (size_t i = 0; i < n_t; i++) {
    if (i)
      ck_assert_uint_lt(r[0].graph.tensors[i - 1].id,
                        r[0].graph.tensors[i].id);
    size_t j = 0;
    while (t[j].id != r[0].graph.tensors[i].id)
      j++;
    same_tensor(&r[0].graph.tensors[i], &t[j]);
    ck_assert_uint_eq(r[0].plan.offsets[i], p.offsets[j]);
  }
  ck_assert_uint_eq(r[0].plan.arena_bytes, p.arena_bytes);
  ck_assert_uint_eq(r[0].plan.n_shared, p.n_shared);
  storage_records_free(r, n);

  /* A bad query. */
  q.limit = 0;
  ck_assert_int_eq(storage_export(st, &q, &r, &n, NULL), ARENA_EINVAL);
  storage_close(st);
  planner_plan_cleanup(&p);
  free(t);
}
END_TEST

START_TEST(v3_export_filters)
{
  struct st_fleet f;
  st_fleet_init(&f, 20);
  storage_t *st = st_open_with(NULL);
  /* model-0 twice (two shapes), model-1 once, model-2 without graph. */
  struct st_tkey k0b;
  st_key_init(&k0b, 0, 16);
  st_put_ok(st, &f.k[0], &f.g[0], &f.p[0]);
  st_put_ok(st, &k0b, &f.g[1], &f.p[1]);
  st_put_ok(st, &f.k[1], &f.g[2], &f.p[2]);
  st_put_ok(st, &f.k[2], &f.g[3], &f.p[3]);
  drop_graph("model-2");

  struct storage_record *r = NULL;
  size_t n = 0, without = 0;
  struct storage_export_query q = {.limit = 10};
  ck_assert_int_eq(storage_export(st, &q, &r, &n, &without), 0);
  ck_assert_uint_eq(n, 3);
  ck_assert_uint_eq(without, 1);
  storage_records_free(r, n);

  q.model_hash = (const uint8_t *)"model-0";
  q.model_hash_len = 7;
  ck_assert_int_eq(storage_export(st, &q, &r, &n, &without), 0);
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(without, 0);
  ck_assert_int_eq(r[0].dims[1], 8); /* oldest first */
  ck_assert_int_eq(r[1].dims[1], 16);
  storage_records_free(r, n);
  q.offset = 1;
  q.limit = 1;
  ck_assert_int_eq(storage_export(st, &q, &r, &n, NULL), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_int_eq(r[0].dims[1], 16);
  storage_records_free(r, n);

  /* One plan by the List key. */
  struct planner_options o;
  uint8_t gd[32], od[32], key[256];
  st_opts(&o, PLANNER_ALGO_BEST);
  ck_assert_int_eq(planner_graph_digest(&f.g[1], gd), 0);
  planner_options_digest(&o, od);
  size_t key_len = entry_key(&k0b, gd, od, key);
  struct storage_export_query kq = {.key = key, .key_len = key_len,
                                    .limit = 10};
  ck_assert_int_eq(storage_export(st, &kq, &r, &n, &without), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_int_eq(r[0].dims[1], 16);
  ck_assert_mem_eq(r[0].graph_digest, gd, 32);
  storage_records_free(r, n);
  /* ... with a model filter that disagrees: nothing. */
  kq.model_hash = (const uint8_t *)"model-1";
  kq.model_hash_len = 7;
  ck_assert_int_eq(storage_export(st, &kq, &r, &n, &without), 0);
  ck_assert_uint_eq(n, 0);
  ck_assert_uint_eq(without, 0);
  kq.model_hash = NULL;
  /* ... the key of a graphless plan: counted, not returned. */
  ck_assert_int_eq(planner_graph_digest(&f.g[3], gd), 0);
  kq.key_len = entry_key(&f.k[2], gd, od, key);
  ck_assert_int_eq(storage_export(st, &kq, &r, &n, &without), 0);
  ck_assert_uint_eq(n, 0);
  ck_assert_uint_eq(without, 1);
  /* ... a malformed key. */
  kq.key_len -= 1;
  ck_assert_int_eq(storage_export(st, &kq, &r, &n, &without), ARENA_EINVAL);
  ck_assert_str_ne(storage_errmsg(st), "");
  storage_close(st);
  st_fleet_cleanup(&f);
}
END_TEST

/* ---- preload ------------------------------------------------------------ */

static void entry_of(struct storage_preload_entry *e, const struct st_tkey *k,
                     const struct planner_graph *g,
                     const struct planner_options *o,
                     const struct planner_plan *p, uint32_t effort)
{
  e->key = k->k;
  e->graph = g;
  e->opts = o;
  e->plan = p;
  e->effort = effort;
  e->done = 0;
  e->placement = NULL;
  e->placement_len = 0;
}

START_TEST(v3_preload_all_or_nothing)
{
  struct st_fleet f;
  st_fleet_init(&f, 20);
  struct planner_options o;
  st_opts(&o, PLANNER_ALGO_BEST);
  storage_t *st = st_open_with(NULL);
  st_put_ok(st, &f.k[0], &f.g[0], &f.p[0]);
  st_put_ok(st, &f.k[1], &f.g[1], &f.p[1]);

  /* Entry 2 overlaps every tensor at offset 0. */
  struct planner_plan bad = f.p[4];
  bad.offsets = calloc(20, sizeof *bad.offsets);
  uint64_t top = 0;
  for (int i = 0; i < 20; i++)
    top = f.t[4][i].size > top ? f.t[4][i].size : top;
  bad.arena_bytes = top;
  struct storage_preload_entry e[4];
  entry_of(&e[0], &f.k[2], &f.g[2], &o, &f.p[2], 1);
  entry_of(&e[1], &f.k[3], &f.g[3], &o, &f.p[3], 1);
  entry_of(&e[2], &f.k[4], &f.g[4], &o, &bad, 1);
  entry_of(&e[3], &f.k[5], &f.g[5], &o, &f.p[5], 1);
  size_t stored = 9, kept = 9, at = 99;
  ck_assert_int_eq(storage_preload(st, e, 4, &stored, &kept, &at),
                   ARENA_EVERIFY);
  ck_assert_uint_eq(at, 2);
  ck_assert_uint_eq(stored, 0);
  ck_assert_ptr_nonnull(strstr(storage_errmsg(st), "entry 2"));
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 2);
  ck_assert(!st_has(st, &f, 2));
  ck_assert(!st_has(st, &f, 3));
  ck_assert(!st_has(st, &f, 5));

  /* A bad key is caught the same way. */
  struct st_tkey nokey = f.k[6];
  nokey.k.model_hash_len = 0;
  entry_of(&e[2], &nokey, &f.g[6], &o, &f.p[6], 1);
  ck_assert_int_eq(storage_preload(st, e, 3, NULL, NULL, &at), ARENA_EINVAL);
  ck_assert_uint_eq(at, 2);
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 2);

  /* Without the bad entry every plan is stored, as generation 1 with
   * its graph and effort. */
  entry_of(&e[2], &f.k[4], &f.g[4], &o, &f.p[4], 8);
  ck_assert_int_eq(storage_preload(st, e, 4, &stored, &kept, &at), 0);
  ck_assert_uint_eq(stored, 4);
  ck_assert_uint_eq(kept, 0);
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 6);
  struct planner_plan q;
  planner_plan_init(&q);
  struct storage_info in = info_of(st, &f.k[4], &f.g[4], &q);
  ck_assert_uint_eq(in.generation, 1);
  ck_assert_uint_eq(in.effort, 8);
  ck_assert_int_eq(in.has_graph, 1);
  ck_assert_uint_eq(q.arena_bytes, f.p[4].arena_bytes);
  ck_assert_int_eq(storage_preload(st, e, 0, &stored, &kept, NULL), 0);
  ck_assert_uint_eq(stored, 0);
  storage_close(st);
  planner_plan_cleanup(&q);
  free(bad.offsets);
  st_fleet_cleanup(&f);
}
END_TEST

START_TEST(v3_preload_keeps_smaller)
{
  struct st_fleet f;
  st_fleet_init(&f, 30);
  struct planner_options o;
  struct planner_plan naive0, naive1, q;
  st_opts(&o, PLANNER_ALGO_BEST);
  plan_naive(&f.g[0], &naive0);
  plan_naive(&f.g[1], &naive1);
  planner_plan_init(&q);
  ck_assert_uint_gt(naive0.arena_bytes, f.p[0].arena_bytes);
  ck_assert_uint_gt(naive1.arena_bytes, f.p[1].arena_bytes);
  struct storage_options so;
  storage_options_init(&so);
  so.max_entries = 2;
  storage_t *st = st_open_with(&so);
  st_put_ok(st, &f.k[0], &f.g[0], &f.p[0]);    /* smaller stored */
  st_put_ok(st, &f.k[1], &f.g[1], &naive1);    /* larger stored */

  struct storage_preload_entry e[2];
  entry_of(&e[0], &f.k[0], &f.g[0], &o, &naive0, 4);
  entry_of(&e[1], &f.k[1], &f.g[1], &o, &f.p[1], 4);
  size_t stored = 0, kept = 0;
  ck_assert_int_eq(storage_preload(st, e, 2, &stored, &kept, NULL), 0);
  ck_assert_uint_eq(stored, 1);
  ck_assert_uint_eq(kept, 1);
  struct storage_info in = info_of(st, &f.k[0], &f.g[0], &q);
  ck_assert_uint_eq(q.arena_bytes, f.p[0].arena_bytes);
  ck_assert_uint_eq(in.generation, 1);
  ck_assert_uint_eq(in.effort_tried, 4);
  in = info_of(st, &f.k[1], &f.g[1], &q);
  ck_assert_uint_eq(q.arena_bytes, f.p[1].arena_bytes);
  ck_assert_uint_eq(in.generation, 2);

  /* Evicts to the caps after: a third plan pushes out the least recently
   * used one. */
  entry_of(&e[0], &f.k[2], &f.g[2], &o, &f.p[2], 0);
  ck_assert_int_eq(storage_preload(st, e, 1, &stored, &kept, NULL), 0);
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 2);
  ck_assert_uint_eq(s.evictions, 1);
  ck_assert(st_has(st, &f, 2));
  storage_close(st);
  planner_plan_cleanup(&q);
  planner_plan_cleanup(&naive0);
  planner_plan_cleanup(&naive1);
  st_fleet_cleanup(&f);
}
END_TEST

/* ---- a damaged graph ---------------------------------------------------- */

START_TEST(v3_damaged_graph)
{
  struct st_fleet f;
  st_fleet_init(&f, 20);
  struct st_logbook lb = {0};
  struct storage_options so;
  storage_options_init(&so);
  so.log = st_log_cb;
  so.log_ctx = &lb;
  storage_t *st = st_open_with(&so);
  st_put_ok(st, &f.k[0], &f.g[0], &f.p[0]);
  st_put_ok(st, &f.k[1], &f.g[1], &f.p[1]);

  /* Flip one byte in the middle of plan 0's graph blob. */
  sqlite3 *db = st_raw_open(st_dbpath());
  sqlite3_stmt *s;
  ck_assert_int_eq(sqlite3_prepare_v2(db,
                                      "SELECT graph FROM plans WHERE"
                                      " model_hash = CAST('model-0' AS BLOB)",
                                      -1, &s, NULL),
                   SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
  int len = sqlite3_column_bytes(s, 0);
  ck_assert_int_gt(len, 20);
  uint8_t *blob = malloc((size_t)len);
  memcpy(blob, sqlite3_column_blob(s, 0), (size_t)len);
  sqlite3_finalize(s);
  blob[len / 2] ^= 0x01;
  ck_assert_int_eq(sqlite3_prepare_v2(db,
                                      "UPDATE plans SET graph = ? WHERE"
                                      " model_hash = CAST('model-0' AS BLOB)",
                                      -1, &s, NULL),
                   SQLITE_OK);
  sqlite3_bind_blob(s, 1, blob, len, SQLITE_STATIC);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_DONE);
  sqlite3_finalize(s);
  sqlite3_close(db);
  free(blob);

  /* A get reads no graph: the plan itself is intact and still served. */
  ck_assert(st_has(st, &f, 0));
  struct storage_record *r = NULL;
  size_t n = 0;
  struct storage_export_query q = {.limit = 10};
  ck_assert_int_eq(storage_export(st, &q, &r, &n, NULL), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_mem_eq(r[0].model_hash, "model-1", 7);
  storage_records_free(r, n);
  ck_assert_int_eq(lb.n_warn, 1);
  ck_assert_ptr_nonnull(strstr(lb.last_warn, "deleted plan"));
  struct storage_stats ss;
  st_stats_of(st, &ss);
  ck_assert_uint_eq(ss.corrupt_dropped, 1);
  ck_assert_uint_eq(ss.entries, 1);
  ck_assert(!st_has(st, &f, 0));

  /* A graph moved to another row fails too: its checksum covers the
   * row's own. */
  st_put_ok(st, &f.k[2], &f.g[2], &f.p[2]);
  db = st_raw_open(st_dbpath());
  st_raw_exec(db, "UPDATE plans SET graph_sum = (SELECT graph_sum FROM plans"
                  " WHERE model_hash = CAST('model-1' AS BLOB)),"
                  " graph = (SELECT graph FROM plans"
                  " WHERE model_hash = CAST('model-1' AS BLOB)),"
                  " opts = (SELECT opts FROM plans"
                  " WHERE model_hash = CAST('model-1' AS BLOB))"
                  " WHERE model_hash = CAST('model-2' AS BLOB)");
  sqlite3_close(db);
  ck_assert_int_eq(storage_export(st, &q, &r, &n, NULL), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_mem_eq(r[0].model_hash, "model-1", 7);
  storage_records_free(r, n);
  st_stats_of(st, &ss);
  ck_assert_uint_eq(ss.corrupt_dropped, 2);
  ck_assert_uint_eq(ss.entries, 1);
  storage_close(st);
  st_fleet_cleanup(&f);
}
END_TEST

/* ---- adding the tests --------------------------------------------------- */

void storage_add_v3(TCase *tc)
{
  tcase_add_test(tc, v3_codec_graph);
  tcase_add_test(tc, v3_codec_opts_and_key);
  tcase_add_test(tc, v3_migrate_from_v2);
  tcase_add_test(tc, v3_generation_and_effort);
  tcase_add_test(tc, v3_note_tried);
  tcase_add_test(tc, v3_pending);
  tcase_add_test(tc, v3_export_round_trip);
  tcase_add_test(tc, v3_export_filters);
  tcase_add_test(tc, v3_preload_all_or_nothing);
  tcase_add_test(tc, v3_preload_keeps_smaller);
  tcase_add_test(tc, v3_damaged_graph);
}

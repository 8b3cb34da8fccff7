/*
 * check_storage_trust.c - what the plan cache refuses to take on faith
 * and how it creates its file ("trust" test case of the storage suite):
 *
 *  - the largest arena a stored plan may claim (storage__arena_cap):
 *    every planner algorithm stays within it on random graphs with pins,
 *    alignments of their own and zero-size tensors, and it is the naive
 *    algorithm's arena plus the padding naive leaves off its last tensor;
 *  - a plan above it is refused by put and by preload (nothing stored),
 *    and a stored one written by hand is dropped when it is read back by
 *    get, export or pending;
 *  - a new database file (and its -wal and -shm) is created 0600 under
 *    any umask, and at the current schema in one step.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_storage.h"
#include "storage_int.h"
#include "testutil.h"

/* ---- the arena cap ------------------------------------------------------ */

/* A random graph of n tensors with ids 0..n-1 (ascending when sorted,
 * else shuffled): some empty, some pinned at aligned offsets above each
 * other, some with an alignment of their own. free(). */
static struct planner_tensor *rich_graph(size_t n, uint64_t seed, int sorted,
                                         int own_align)
{
  struct planner_tensor *t = calloc(n, sizeof *t);
  ck_assert_ptr_nonnull(t);
  uint64_t s = seed * 104729 + 7, pin_at = 0;
  for (size_t i = 0; i < n; i++) {
    t[i].id = (uint32_t)i;
    t[i].size = tu_rand_range(&s, 0, 7) == 0 ? 0 : tu_rand_range(&s, 1, 300);
    t[i].first = (int64_t)tu_rand_range(&s, 0, n / 3 + 2);
    t[i].last = t[i].first + (int64_t)tu_rand_range(&s, 0, 5);
    t[i].align = own_align && tu_rand_range(&s, 0, 4) == 0
                     ? (uint64_t)1 << tu_rand_range(&s, 0, 8)
                     : 0;
    t[i].pinned = PLANNER_NOT_PINNED;
    if (t[i].size && tu_rand_range(&s, 0, 11) == 0) {
      pin_at = (pin_at + 255) & ~(uint64_t)255; /* aligned for anyone */
      t[i].pinned = (int64_t)pin_at;
      pin_at += t[i].size;
    }
  }
  for (size_t i = n; !sorted && i > 1; i--) {
    size_t j = (size_t)tu_rand_range(&s, 0, i - 1);
    struct planner_tensor x = t[i - 1];
    t[i - 1] = t[j];
    t[j] = x;
  }
  return t;
}

/* Every algorithm's plan stays within the cap, whatever the alignments,
 * pins and graph order. */
START_TEST(trust_cap_bounds_every_algorithm)
{
  static const uint64_t aligns[] = {1, 4, 64};
  for (uint64_t seed = 1; seed <= 40; seed++) {
    size_t n = 2 + (size_t)(seed * 7 % 60);
    struct planner_tensor *t = rich_graph(n, seed, seed % 2, 1);
    struct planner_graph g = {t, n};
    for (size_t ai = 0; ai < 3; ai++)
      for (int a = 0; a < PLANNER_ALGO__COUNT; a++) {
        struct planner_options o;
        struct planner_plan p;
        char err[ARENA_ERR_LEN] = "";
        st_opts(&o, (enum planner_algo)a);
        o.alignment = aligns[ai];
        planner_plan_init(&p);
        ck_assert_msg(planner_run(&g, &o, &p, err) == 0, "%s", err);
        uint64_t cap = storage__arena_cap(&g, &o);
        ck_assert_msg(p.arena_bytes <= cap,
                      "seed %llu align %llu %s: arena %llu above cap %llu",
                      (unsigned long long)seed,
                      (unsigned long long)aligns[ai], planner_algo_name(o.algo),
                      (unsigned long long)p.arena_bytes,
                      (unsigned long long)cap);
        planner_plan_cleanup(&p);
      }
    free(t);
  }
}
END_TEST

/* With one alignment for every tensor, the cap is the naive algorithm's
 * arena plus the padding naive leaves off the last tensor it places (the
 * free tensor of the highest id): the reference the cap is built on. */
START_TEST(trust_cap_is_naive_plus_last_padding)
{
  static const uint64_t aligns[] = {1, 8, 64};
  for (uint64_t seed = 1; seed <= 60; seed++) {
    size_t n = 1 + (size_t)(seed * 13 % 80);
    struct planner_tensor *t = rich_graph(n, seed, seed % 3 != 0, 0);
    struct planner_graph g = {t, n};
    for (size_t ai = 0; ai < 3; ai++) {
      struct planner_options o;
      struct planner_plan p;
      char err[ARENA_ERR_LEN] = "";
      st_opts(&o, PLANNER_ALGO_NAIVE);
      o.alignment = aligns[ai];
      planner_plan_init(&p);
      ck_assert_msg(planner_run(&g, &o, &p, err) == 0, "%s", err);
      const struct planner_tensor *last = NULL;
      for (size_t i = 0; i < n; i++)
        if (t[i].size && t[i].pinned == PLANNER_NOT_PINNED &&
            (!last || t[i].id > last->id))
          last = &t[i];
      uint64_t a = aligns[ai];
      uint64_t pad = last ? ((last->size + a - 1) / a * a) - last->size : 0;
      uint64_t cap = storage__arena_cap(&g, &o);
      if (last) /* naive starts its free tensors above the pins */
        ck_assert_uint_eq(cap, p.arena_bytes + pad);
      else /* pins alone: their top, rounded up */
        ck_assert_uint_eq(cap, (p.arena_bytes + a - 1) / a * a);
      planner_plan_cleanup(&p);
    }
    free(t);
  }
}
END_TEST

/* Two tensors live together, sizes 2 and 65, at alignment 64: naive
 * stacks them in id order to 129 bytes, tflm-greedy puts the larger
 * first, to 130. The cap (64 + 128 = 192) must admit both: a cap at
 * naive's own arena would refuse a plan the daemon itself makes. */
START_TEST(trust_cap_admits_greedy_above_naive)
{
  struct planner_tensor t[2] = {
      {0, 2, 0, 0, 0, PLANNER_NOT_PINNED, 0, 0},
      {1, 65, 0, 0, 0, PLANNER_NOT_PINNED, 0, 0},
  };
  struct planner_graph g = {t, 2};
  struct planner_options o;
  struct planner_plan naive, greedy;
  st_opts(&o, PLANNER_ALGO_NAIVE);
  planner_plan_init(&naive);
  planner_plan_init(&greedy);
  ck_assert_int_eq(planner_run(&g, &o, &naive, NULL), 0);
  o.algo = PLANNER_ALGO_TFLM_GREEDY;
  ck_assert_int_eq(planner_run(&g, &o, &greedy, NULL), 0);
  ck_assert_uint_eq(naive.arena_bytes, 129);
  ck_assert_uint_eq(greedy.arena_bytes, 130);
  ck_assert_uint_eq(storage__arena_cap(&g, &o), 192);
  struct st_tkey k;
  st_key_init(&k, 1, 8);
  storage_t *st = st_open_with(NULL);
  ck_assert_int_eq(storage_put(st, &k.k, &g, &o, &greedy, 1, NULL), 0);
  struct planner_plan q;
  planner_plan_init(&q);
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, NULL), 0);
  ck_assert_uint_eq(q.arena_bytes, 130);
  storage_close(st);
  planner_plan_cleanup(&q);
  planner_plan_cleanup(&naive);
  planner_plan_cleanup(&greedy);
}
END_TEST

/* ---- plans above the cap ------------------------------------------------ */

/* The poisoned bundle's plan: a 55 KB graph of two tensors that live
 * together, the second placed at 2^30 instead of above the first. It
 * passes planner_verify (aligned, no overlap). */
struct poison {
  struct planner_tensor t[2];
  struct planner_graph g;
  struct planner_options o;
  struct planner_plan good, bad;
  uint64_t off_good[2], off_bad[2];
};

static void poison_init(struct poison *x)
{
  memset(x, 0, sizeof *x);
  x->t[0] = (struct planner_tensor){0, 28000, 0, 2, 0, PLANNER_NOT_PINNED,
                                    0, 0};
  x->t[1] = (struct planner_tensor){1, 27000, 1, 3, 0, PLANNER_NOT_PINNED,
                                    0, 0};
  x->g = (struct planner_graph){x->t, 2};
  st_opts(&x->o, PLANNER_ALGO_BEST);
  planner_plan_init(&x->good);
  ck_assert_int_eq(planner_run(&x->g, &x->o, &x->good, NULL), 0);
  x->bad = x->good;
  x->bad.offsets = x->off_bad;
  x->off_bad[0] = 0;
  x->off_bad[1] = 1ull << 30;
  x->bad.arena_bytes = (1ull << 30) + 27000;
  x->bad.proven_optimal = 0;
  ck_assert_int_eq(planner_verify(&x->g, &x->o, &x->bad, NULL), 0);
}

static void poison_cleanup(struct poison *x)
{
  planner_plan_cleanup(&x->good);
}

START_TEST(trust_put_refuses_inflated_plan)
{
  struct poison x;
  poison_init(&x);
  struct st_tkey k;
  st_key_init(&k, 3, 8);
  storage_t *st = st_open_with(NULL);
  enum storage_put_result res = 0;
  ck_assert_int_eq(storage_put_effort(st, &k.k, &x.g, &x.o, &x.bad, 1,
                                      4000000000u, 1, &res),
                   ARENA_EVERIFY);
  ck_assert_ptr_nonnull(strstr(storage_errmsg(st), "1073768824 bytes"));
  ck_assert_ptr_nonnull(strstr(storage_errmsg(st), "every tensor"));
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 0);
  /* The plan the planner makes goes in as before. */
  ck_assert_int_eq(storage_put(st, &k.k, &x.g, &x.o, &x.good, 1, &res), 0);
  ck_assert_int_eq(res, STORAGE_PUT_INSERTED);
  storage_close(st);
  poison_cleanup(&x);
}
END_TEST

START_TEST(trust_preload_refuses_inflated_plan)
{
  struct poison x;
  poison_init(&x);
  struct st_tkey k0, k1;
  st_key_init(&k0, 4, 8);
  st_key_init(&k1, 5, 8);
  storage_t *st = st_open_with(NULL);
  struct storage_preload_entry e[2] = {
      {k0.k, &x.g, &x.o, &x.good, 10, 0, NULL, 0},
      {k1.k, &x.g, &x.o, &x.bad, 10, 0, NULL, 0},
  };
  size_t stored = 9, kept = 9, bad = 9;
  ck_assert_int_eq(storage_preload(st, e, 2, &stored, &kept, &bad),
                   ARENA_EVERIFY);
  ck_assert_uint_eq(bad, 1);
  ck_assert_ptr_nonnull(strstr(storage_errmsg(st), "entry 1"));
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 0);
  storage_close(st);
  poison_cleanup(&x);
}
END_TEST

/* A preload in batches is all or nothing over every batch, and names
 * a bad entry by its index over the whole preload. */
START_TEST(trust_preload_in_batches)
{
  struct st_fleet f;
  st_fleet_init(&f, 20);
  struct poison x;
  poison_init(&x);
  struct planner_options o;
  st_opts(&o, PLANNER_ALGO_BEST);
  struct storage_preload_entry e[8];
  for (int i = 0; i < 8; i++)
    e[i] = (struct storage_preload_entry){f.k[i].k, &f.g[i], &o, &f.p[i],
                                          2, 0, NULL, 0};
  storage_t *st = st_open_with(NULL);
  size_t stored = 9, kept = 9, bad = 9;
  ck_assert_int_eq(storage_preload_begin(st), 0);
  ck_assert_int_eq(storage_preload_begin(st), ARENA_EINVAL);
  ck_assert_int_eq(storage_preload_add(st, e, 3, &bad), 0);
  ck_assert_int_eq(storage_preload_add(st, e + 3, 3, &bad), 0);
  /* the second entry of the third batch, the 8th in all, is inflated */
  struct st_tkey kp;
  st_key_init(&kp, 9, 8);
  struct storage_preload_entry last[2] = {
      e[6], {kp.k, &x.g, &x.o, &x.bad, 2, 0, NULL, 0}};
  ck_assert_int_eq(storage_preload_add(st, last, 2, &bad), ARENA_EVERIFY);
  ck_assert_uint_eq(bad, 7);
  ck_assert_ptr_nonnull(strstr(storage_errmsg(st), "entry 7"));
  /* the failure ended the preload: nothing stored, nothing open */
  ck_assert_int_eq(storage_preload_commit(st, &stored, &kept), ARENA_EINVAL);
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 0);
  /* an aborted preload stores nothing either */
  ck_assert_int_eq(storage_preload_begin(st), 0);
  ck_assert_int_eq(storage_preload_add(st, e, 4, &bad), 0);
  storage_preload_abort(st);
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 0);
  /* and one that ends well stores every batch */
  ck_assert_int_eq(storage_preload_begin(st), 0);
  for (int b = 0; b < 4; b++)
    ck_assert_int_eq(storage_preload_add(st, e + 2 * b, 2, &bad), 0);
  ck_assert_int_eq(storage_preload_commit(st, &stored, &kept), 0);
  ck_assert_uint_eq(stored, 8);
  ck_assert_uint_eq(kept, 0);
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 8);
  for (int i = 0; i < 8; i++)
    ck_assert(st_has(st, &f, i));
  storage_close(st);
  poison_cleanup(&x);
  st_fleet_cleanup(&f);
}
END_TEST

/* Rewrites the stored row of key k in place as if by hand: the offsets
 * and arena of plan p, with both checksums recomputed, so that only the
 * claim itself is wrong. */
static void tamper_row(const struct st_tkey *k, const struct planner_plan *p)
{
  sqlite3 *db = st_raw_open(st_dbpath());
  sqlite3_stmt *s;
  ck_assert_int_eq(
      sqlite3_prepare_v2(
          db,
          "SELECT id, shape, graph_digest, options_digest, lower_bound,"
          " naive_bytes, proven_optimal, algo, fit, bound, plan_us,"
          " created_ms, graph, opts, effort FROM plans WHERE model_hash = ?",
          -1, &s, NULL),
      SQLITE_OK);
  sqlite3_bind_blob(s, 1, k->k.model_hash, (int)k->k.model_hash_len, NULL);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
  uint8_t *blob;
  size_t blob_len;
  ck_assert_int_eq(storage__offsets_encode(p->offsets, p->n_offsets, NULL,
                                           NULL, &blob, &blob_len),
                   0);
  struct storage__row r = {
      .model_hash = k->k.model_hash,
      .model_hash_len = k->k.model_hash_len,
      .shape = sqlite3_column_blob(s, 1),
      .shape_len = (size_t)sqlite3_column_bytes(s, 1),
      .graph_digest = sqlite3_column_blob(s, 2),
      .options_digest = sqlite3_column_blob(s, 3),
      .n_tensors = p->n_offsets,
      .offsets = blob,
      .offsets_len = blob_len,
      .arena_bytes = p->arena_bytes,
      .lower_bound = (uint64_t)sqlite3_column_int64(s, 4),
      .naive_bytes = (uint64_t)sqlite3_column_int64(s, 5),
      .proven_optimal = 0,
      .algo = (uint32_t)sqlite3_column_int64(s, 7),
      .fit = (uint32_t)sqlite3_column_int64(s, 8),
      .bound = (uint32_t)sqlite3_column_int64(s, 9),
      .plan_us = (uint64_t)sqlite3_column_int64(s, 10),
      .created_ms = sqlite3_column_int64(s, 11)};
  struct storage__graph_row x = {
      sqlite3_column_blob(s, 12), (size_t)sqlite3_column_bytes(s, 12),
      sqlite3_column_blob(s, 13), (size_t)sqlite3_column_bytes(s, 13),
      (uint32_t)sqlite3_column_int64(s, 14)};
  uint8_t sum[PLANNER_DIGEST_LEN], gsum[PLANNER_DIGEST_LEN];
  storage__checksum(&r, sum);
  storage__graph_checksum(sum, &x, gsum);
  int64_t id = sqlite3_column_int64(s, 0);
  sqlite3_stmt *u;
  ck_assert_int_eq(
      sqlite3_prepare_v2(db,
                         "UPDATE plans SET offsets = ?, arena_bytes = ?,"
                         " proven_optimal = 0, improve_done = 1,"
                         " checksum = ?, graph_sum = ? WHERE id = ?",
                         -1, &u, NULL),
      SQLITE_OK);
  sqlite3_bind_blob(u, 1, blob, (int)blob_len, NULL);
  sqlite3_bind_int64(u, 2, (sqlite3_int64)p->arena_bytes);
  sqlite3_bind_blob(u, 3, sum, PLANNER_DIGEST_LEN, NULL);
  sqlite3_bind_blob(u, 4, gsum, PLANNER_DIGEST_LEN, NULL);
  sqlite3_bind_int64(u, 5, id);
  ck_assert_int_eq(sqlite3_step(u), SQLITE_DONE);
  sqlite3_finalize(u);
  sqlite3_finalize(s);
  sqlite3_close(db);
  free(blob);
}

/* A database changed by hand: the row's checksums hold, its plan
 * verifies, only its arena is absurd. Every read that has the graph
 * drops it as corrupt: get, export and pending. */
START_TEST(trust_read_back_drops_tampered_plan)
{
  struct poison x;
  poison_init(&x);
  struct st_tkey k;
  st_key_init(&k, 6, 8);
  storage_t *st = st_open_with(NULL);
  ck_assert_int_eq(storage_put(st, &k.k, &x.g, &x.o, &x.good, 1, NULL), 0);
  storage_close(st);

  /* get */
  tamper_row(&k, &x.bad);
  struct st_logbook lb = {0};
  struct storage_options so;
  storage_options_init(&so);
  so.log = st_log_cb;
  so.log_ctx = &lb;
  st = st_open_with(&so);
  struct planner_plan q;
  planner_plan_init(&q);
  ck_assert_int_eq(storage_get(st, &k.k, &x.g, &x.o, &q, NULL), ARENA_ENOENT);
  ck_assert_ptr_nonnull(strstr(storage_errmsg(st), "every tensor"));
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 0);
  ck_assert_uint_eq(s.corrupt_dropped, 1);

  /* export */
  ck_assert_int_eq(storage_put(st, &k.k, &x.g, &x.o, &x.good, 1, NULL), 0);
  storage_close(st);
  tamper_row(&k, &x.bad);
  st = st_open_with(&so);
  struct storage_export_query eq = {NULL, 0, NULL, 0, 0, 10};
  struct storage_record *r = NULL;
  size_t n = 9;
  ck_assert_int_eq(storage_export(st, &eq, &r, &n, NULL), 0);
  ck_assert_uint_eq(n, 0);
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 0);
  ck_assert_uint_eq(s.corrupt_dropped, 2);

  /* pending: the row wants work again, as a row changed by hand may */
  ck_assert_int_eq(storage_put(st, &k.k, &x.g, &x.o, &x.good, 1, NULL), 0);
  storage_close(st);
  tamper_row(&k, &x.bad);
  sqlite3 *db = st_raw_open(st_dbpath());
  st_raw_exec(db, "UPDATE plans SET improve_done = 0");
  sqlite3_close(db);
  st = st_open_with(&so);
  ck_assert_int_eq(storage_pending(st, 10, 0, &r, &n), 0);
  ck_assert_uint_eq(n, 0);
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 0);
  ck_assert_uint_eq(s.corrupt_dropped, 3);
  storage_close(st);
  planner_plan_cleanup(&q);
  poison_cleanup(&x);
}
END_TEST

/* ---- the file ----------------------------------------------------------- */

static unsigned mode_of(const char *path)
{
  struct stat sb;
  ck_assert_msg(stat(path, &sb) == 0, "%s missing", path);
  return (unsigned)(sb.st_mode & 07777);
}

/* Under umask 0, which would leave sqlite's 0644 as it is, the database
 * and its -wal and -shm files are readable by their owner alone. */
START_TEST(trust_new_file_is_private)
{
  mode_t old = umask(0);
  storage_t *st = st_open_with(NULL);
  struct poison x;
  poison_init(&x);
  struct st_tkey k;
  st_key_init(&k, 7, 8);
  ck_assert_int_eq(storage_put(st, &k.k, &x.g, &x.o, &x.good, 1, NULL), 0);
  char wal[600], shm[600];
  snprintf(wal, sizeof wal, "%s-wal", st_dbpath());
  snprintf(shm, sizeof shm, "%s-shm", st_dbpath());
  ck_assert_uint_eq(mode_of(st_dbpath()), 0600);
  ck_assert_uint_eq(mode_of(wal), 0600);
  ck_assert_uint_eq(mode_of(shm), 0600);
  storage_close(st);
  /* A file an older arenad left readable by others loses those bits,
   * and only those, when it is opened; logged. */
  ck_assert_int_eq(chmod(st_dbpath(), 0644), 0);
  struct st_logbook lb = {0};
  struct storage_options so;
  storage_options_init(&so);
  so.log = st_log_cb;
  so.log_ctx = &lb;
  st = st_open_with(&so);
  ck_assert_uint_eq(mode_of(st_dbpath()), 0600);
  ck_assert_int_eq(lb.n_warn, 1);
  ck_assert_ptr_nonnull(strstr(lb.last_warn, "readable by others"));
  struct planner_plan q;
  planner_plan_init(&q);
  ck_assert_int_eq(storage_get(st, &k.k, &x.g, &x.o, &q, NULL), 0);
  storage_close(st);
  planner_plan_cleanup(&q);
  umask(old);
  poison_cleanup(&x);
}
END_TEST

/* A new database is created at the current schema in one step: one log
 * line, no migrations; and it has what a migrated one has (the v1 -> v3
 * migration itself is tested in the cache case). */
START_TEST(trust_new_file_at_current_schema)
{
  struct st_logbook lb = {0};
  struct storage_options so;
  storage_options_init(&so);
  so.log = st_log_cb;
  so.log_ctx = &lb;
  storage_t *st = st_open_with(&so);
  storage_close(st);
  ck_assert_int_eq(lb.n_info, 1);
  char want[64];
  snprintf(want, sizeof want, "created plan cache schema v%d",
           STORAGE__SCHEMA_VERSION);
  ck_assert_str_eq(lb.last, want);
  sqlite3 *db = st_raw_open(st_dbpath());
  ck_assert_int_eq(st_raw_int(db, "PRAGMA user_version"),
                   STORAGE__SCHEMA_VERSION);
  ck_assert_int_eq(st_raw_int(db, "SELECT count(*) FROM pragma_table_info"
                                  "('plans') WHERE name IN ('use_seq',"
                                  " 'bytes', 'graph', 'improve_done')"),
                   4);
  ck_assert_int_eq(st_raw_int(db, "SELECT count(*) FROM sqlite_schema WHERE"
                                  " name IN ('plans_lru', 'plans_pending',"
                                  " 'plans_ai', 'plans_ad', 'plans_au',"
                                  " 'stats')"),
                   6);
  sqlite3_close(db);
  /* Opened again: nothing to create or migrate. */
  lb.n_info = 0;
  st = st_open_with(&so);
  storage_close(st);
  ck_assert_int_eq(lb.n_info, 0);
}
END_TEST

void storage_add_trust(TCase *tc)
{
  tcase_add_test(tc, trust_cap_bounds_every_algorithm);
  tcase_add_test(tc, trust_cap_is_naive_plus_last_padding);
  tcase_add_test(tc, trust_cap_admits_greedy_above_naive);
  tcase_add_test(tc, trust_put_refuses_inflated_plan);
  tcase_add_test(tc, trust_preload_refuses_inflated_plan);
  tcase_add_test(tc, trust_preload_in_batches);
  tcase_add_test(tc, trust_read_back_drops_tampered_plan);
  tcase_add_test(tc, trust_new_file_is_private);
  tcase_add_test(tc, trust_new_file_at_current_schema);
}

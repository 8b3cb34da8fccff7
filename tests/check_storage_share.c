/*
 * check_storage_share.c - plans that share bytes in place, in the "cache"
 * test case of the storage suite: a shared plan comes back from get,
 * lookup and list with its pair count and unshared bound and verifies
 * again against its graph, in any tensor order; plans that share nothing
 * keep offsets format 1, byte for byte what older code wrote and reads;
 * a sharing head that is damaged under a valid checksum is dropped as
 * corrupt.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "check_storage.h"
#include "storage_int.h"

enum { CHAIN_N = 7 };

/* Two chains of in-place pairs, one after the other, and a tensor live
 * throughout; ids descend so that graph order is not canonical. */
static void chain_graph(struct planner_tensor *t)
{
  for (size_t i = 0; i < CHAIN_N; i++) {
    t[i].id = (uint32_t)(100 - i);
    t[i].size = 1000;
    t[i].first = (int64_t)(i < 3 ? i : i + 1); /* 0 1 2, then 4 5 6 */
    t[i].last = t[i].first + 1;
    t[i].align = 0;
    t[i].pinned = PLANNER_NOT_PINNED;
    t[i].alias = t[i].id + 1; /* the tensor before it */
    t[i].has_alias = i > 0 && i != 3;
  }
  t[6].size = 300;
  t[6].first = 0;
  t[6].last = CHAIN_N + 1;
  t[6].has_alias = 0;
}

static void plan_shared(const struct planner_graph *g, struct planner_plan *p)
{
  st_plan_ok(g, PLANNER_ALGO_BEST, p);
  ck_assert_uint_gt(p->n_shared, 0);
  ck_assert_uint_gt(p->lower_bound_unshared_bytes, p->lower_bound_bytes);
}

/* The format byte of the only row's offsets blob. */
static int64_t stored_format(void)
{
  sqlite3 *db = st_raw_open(st_dbpath());
  int64_t f = st_raw_int(db, "SELECT unicode(CAST(substr(offsets, 1, 1) AS "
                             "TEXT)) FROM plans");
  sqlite3_close(db);
  return f;
}

START_TEST(share_round_trip)
{
  struct planner_tensor t[CHAIN_N], rev[CHAIN_N];
  chain_graph(t);
  struct planner_graph g = {t, CHAIN_N};
  struct planner_plan p, q;
  plan_shared(&g, &p);
  struct st_tkey k;
  st_key_init(&k, 1, 8);
  storage_t *st = st_open_with(NULL);
  ck_assert_int_eq(st_put_ok(st, &k, &g, &p), STORAGE_PUT_INSERTED);
  ck_assert_int_eq(stored_format(), STORAGE__OFFSETS_FORMAT_SHARED);

  /* get, with the tensors listed the other way round */
  for (size_t i = 0; i < CHAIN_N; i++)
    rev[i] = t[CHAIN_N - 1 - i];
  struct planner_graph rg = {rev, CHAIN_N};
  planner_plan_init(&q);
  ck_assert_int_eq(st_get_rc(st, &k, &rg, &q), 0);
  ck_assert_uint_eq(q.n_shared, p.n_shared);
  ck_assert_uint_eq(q.lower_bound_unshared_bytes,
                    p.lower_bound_unshared_bytes);
  ck_assert_uint_eq(q.lower_bound_bytes, p.lower_bound_bytes);
  ck_assert_uint_eq(q.arena_bytes, p.arena_bytes);
  for (size_t i = 0; i < CHAIN_N; i++)
    ck_assert_uint_eq(q.offsets[i], p.offsets[CHAIN_N - 1 - i]);
  struct planner_options o;
  st_opts(&o, PLANNER_ALGO_BEST);
  ck_assert_int_eq(planner_verify(&rg, &o, &q, NULL), 0);
  planner_plan_cleanup(&q);

  /* lookup reads the whole blob, list only its head */
  struct storage_record *r;
  size_t n;
  ck_assert_int_eq(storage_lookup(st, &k.k, &r, &n), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(r[0].plan.n_shared, p.n_shared);
  ck_assert_uint_eq(r[0].plan.lower_bound_unshared_bytes,
                    p.lower_bound_unshared_bytes);
  storage_records_free(r, n);
  struct storage_list_query lq = {NULL, 0, STORAGE_ORDER_NEWEST, 0, 10};
  ck_assert_int_eq(storage_list(st, &lq, &r, &n), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_ptr_null(r[0].plan.offsets);
  ck_assert_uint_eq(r[0].plan.n_shared, p.n_shared);
  ck_assert_uint_eq(r[0].plan.lower_bound_unshared_bytes,
                    p.lower_bound_unshared_bytes);
  storage_records_free(r, n);
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.corrupt_dropped, 0);
  storage_close(st);
  planner_plan_cleanup(&p);
}
END_TEST

/* A plan that shares nothing is stored as before sharing existed, and
 * such a row reads back with no pair and its own bound. */
START_TEST(share_none_keeps_format_1)
{
  struct planner_tensor t[CHAIN_N];
  chain_graph(t);
  for (size_t i = 0; i < CHAIN_N; i++)
    t[i].has_alias = 0;
  struct planner_graph g = {t, CHAIN_N};
  struct planner_plan p, q;
  st_plan_ok(&g, PLANNER_ALGO_BEST, &p);
  ck_assert_uint_eq(p.n_shared, 0);
  struct st_tkey k;
  st_key_init(&k, 2, 8);
  storage_t *st = st_open_with(NULL);
  st_put_ok(st, &k, &g, &p);
  ck_assert_int_eq(stored_format(), STORAGE__OFFSETS_FORMAT);
  planner_plan_init(&q);
  ck_assert_int_eq(st_get_rc(st, &k, &g, &q), 0);
  ck_assert_uint_eq(q.n_shared, 0);
  ck_assert_uint_eq(q.lower_bound_unshared_bytes, q.lower_bound_bytes);
  ck_assert_mem_eq(q.offsets, p.offsets, CHAIN_N * sizeof *p.offsets);
  struct storage_record *r;
  size_t n;
  struct storage_list_query lq = {NULL, 0, STORAGE_ORDER_NEWEST, 0, 10};
  ck_assert_int_eq(storage_list(st, &lq, &r, &n), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(r[0].plan.n_shared, 0);
  ck_assert_uint_eq(r[0].plan.lower_bound_unshared_bytes,
                    p.lower_bound_bytes);
  storage_records_free(r, n);
  storage_close(st);
  planner_plan_cleanup(&p);
  planner_plan_cleanup(&q);
}
END_TEST

/* Replaces the only row's offsets blob with b and recomputes its
 * checksum, as a writer with a bug would: only the decoder can then tell
 * that the row is bad. */
static void rewrite_offsets(const uint8_t *b, size_t len)
{
  sqlite3 *db = st_raw_open(st_dbpath());
  sqlite3_stmt *s;
  ck_assert_int_eq(
      sqlite3_prepare_v2(db,
                         "SELECT model_hash, shape, graph_digest,"
                         " options_digest, n_tensors, arena_bytes,"
                         " lower_bound, naive_bytes, proven_optimal, algo,"
                         " fit, bound, plan_us, created_ms FROM plans",
                         -1, &s, NULL),
      SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
  struct storage__row r = {
      .model_hash = sqlite3_column_blob(s, 0),
      .model_hash_len = (size_t)sqlite3_column_bytes(s, 0),
      .shape = sqlite3_column_blob(s, 1),
      .shape_len = (size_t)sqlite3_column_bytes(s, 1),
      .graph_digest = sqlite3_column_blob(s, 2),
      .options_digest = sqlite3_column_blob(s, 3),
      .n_tensors = (uint64_t)sqlite3_column_int64(s, 4),
      .offsets = b,
      .offsets_len = len,
      .arena_bytes = (uint64_t)sqlite3_column_int64(s, 5),
      .lower_bound = (uint64_t)sqlite3_column_int64(s, 6),
      .naive_bytes = (uint64_t)sqlite3_column_int64(s, 7),
      .proven_optimal = (uint32_t)sqlite3_column_int64(s, 8),
      .algo = (uint32_t)sqlite3_column_int64(s, 9),
      .fit = (uint32_t)sqlite3_column_int64(s, 10),
      .bound = (uint32_t)sqlite3_column_int64(s, 11),
      .plan_us = (uint64_t)sqlite3_column_int64(s, 12),
      .created_ms = sqlite3_column_int64(s, 13),
  };
  uint8_t sum[PLANNER_DIGEST_LEN];
  storage__checksum(&r, sum);
  sqlite3_finalize(s);
  ck_assert_int_eq(sqlite3_prepare_v2(db,
                                      "UPDATE plans SET offsets = ?1,"
                                      " checksum = ?2",
                                      -1, &s, NULL),
                   SQLITE_OK);
  sqlite3_bind_blob(s, 1, b, (int)len, SQLITE_STATIC);
  sqlite3_bind_blob(s, 2, sum, PLANNER_DIGEST_LEN, SQLITE_STATIC);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_DONE);
  sqlite3_finalize(s);
  sqlite3_close(db);
}

/* A damaged sharing head (more pairs than the plan can have, a head cut
 * short, an unknown format) under a valid checksum: get, lookup and list
 * each drop the row as corrupt and never serve it. */
START_TEST(share_bad_head_is_corrupt)
{
  struct planner_tensor t[CHAIN_N];
  chain_graph(t);
  struct planner_graph g = {t, CHAIN_N};
  struct planner_plan p, q;
  plan_shared(&g, &p);
  size_t *perm;
  ck_assert_int_eq(storage__canonical_perm(&g, &perm), 0);
  struct st_tkey k;
  st_key_init(&k, 3, 8);
  for (int how = 0; how < 3; how++) {
    storage_t *st = st_open_with(NULL);
    st_put_ok(st, &k, &g, &p);
    struct storage__share sh = {CHAIN_N, p.lower_bound_unshared_bytes};
    uint8_t *b;
    size_t len;
    ck_assert_int_eq(storage__offsets_encode(p.offsets, CHAIN_N, perm, &sh,
                                             &b, &len),
                     0);
    if (how == 1)
      len = 3; /* the head ends inside the unshared bound */
    if (how == 2)
      b[0] = 3;
    rewrite_offsets(b, len);
    free(b);
    struct storage_record *r = NULL;
    size_t n = 9;
    if (how == 0) {
      planner_plan_init(&q);
      ck_assert_int_eq(st_get_rc(st, &k, &g, &q), ARENA_ENOENT);
      ck_assert_ptr_null(q.offsets);
    } else if (how == 1) {
      ck_assert_int_eq(storage_lookup(st, &k.k, &r, &n), 0);
    } else {
      struct storage_list_query lq = {NULL, 0, STORAGE_ORDER_NEWEST, 0, 10};
      ck_assert_int_eq(storage_list(st, &lq, &r, &n), 0);
    }
    if (how)
      ck_assert_uint_eq(n, 0);
    struct storage_stats s;
    st_stats_of(st, &s);
    ck_assert_msg(s.corrupt_dropped == (uint64_t)how + 1, /* one a case */
                  "case %d: %llu dropped", how,
                  (unsigned long long)s.corrupt_dropped);
    ck_assert_uint_eq(s.entries, 0);
    storage_close(st);
  }
  free(perm);
  planner_plan_cleanup(&p);
}
END_TEST

void storage_add_share(TCase *tc)
{
  tcase_add_test(tc, share_round_trip);
  tcase_add_test(tc, share_none_keeps_format_1);
  tcase_add_test(tc, share_bad_head_is_corrupt);
}

/*
 * check_storage_plans.c - the first tests of the storage suite's "cache"
 * test case: putting plans and getting them back. Round trips of a
 * 1-tensor and a 100,000-tensor plan (also through a second handle),
 * empty graphs, the same graph listed in another tensor order, keys that
 * differ in graph, shape or options, bad arguments to put, get and open,
 * and the rules for replacing a stored plan with a better one.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_storage.h"
#include "storage.h"
#include "testutil.h"

/* ---- round trips -------------------------------------------------------- */

static void round_trip(size_t n, enum planner_algo a)
{
  struct planner_tensor *t = st_make_tensors(n, n);
  struct planner_graph g = {t, n};
  struct planner_plan p, q;
  struct st_tkey k;
  struct storage_info info;
  struct planner_options o;
  st_plan_ok(&g, a, &p);
  st_key_init(&k, 1, 224);
  st_opts(&o, PLANNER_ALGO_BEST);

  storage_t *st = st_open_with(NULL);
  ck_assert_int_eq(st_put_ok(st, &k, &g, &p), STORAGE_PUT_INSERTED);
  planner_plan_init(&q);
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, &info), 0);
  ck_assert_str_eq(storage_errmsg(st), "");
  ck_assert_uint_eq(q.n_offsets, n);
  ck_assert_mem_eq(q.offsets, p.offsets, n * sizeof *p.offsets);
  ck_assert_uint_eq(q.arena_bytes, p.arena_bytes);
  ck_assert_uint_eq(q.lower_bound_bytes, p.lower_bound_bytes);
  ck_assert_uint_eq(q.naive_bytes, p.naive_bytes);
  ck_assert_int_eq(q.algo, p.algo);
  ck_assert_int_eq(q.proven_optimal, p.proven_optimal);
  ck_assert_uint_eq(info.plan_us, 1234);
  ck_assert_uint_eq(info.n_tensors, n);
  ck_assert_int_ge(info.created_ms, 1600000000000ll);
  storage_close(st);

  /* A second handle (as after a restart) gets the same plan. */
  st = st_open_with(NULL);
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, NULL), 0);
  ck_assert_mem_eq(q.offsets, p.offsets, n * sizeof *p.offsets);
  storage_close(st);
  planner_plan_cleanup(&p);
  planner_plan_cleanup(&q);
  free(t);
}

START_TEST(round_trip_1)
{
  round_trip(1, PLANNER_ALGO_BEST);
}
END_TEST

START_TEST(round_trip_100k)
{
  round_trip(100000, PLANNER_ALGO_GREEDY_SIZE);
}
END_TEST

/* A plan near 2^63 (offsets 0 and 2^62, arena 2^63 - 256) goes through
 * sqlite's signed 64-bit integers and back unchanged, in get and in
 * list. */
START_TEST(round_trip_near_2_63)
{
  struct planner_tensor t[2] = {
      {0, 1ull << 62, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
      {1, (1ull << 62) - 256, 1, 2, 0, PLANNER_NOT_PINNED, 0, 0},
  };
  struct planner_graph g = {t, 2};
  struct planner_plan p, q;
  struct st_tkey k;
  st_plan_ok(&g, PLANNER_ALGO_NAIVE, &p);
  ck_assert_uint_eq(p.arena_bytes, (1ull << 63) - 256);
  st_key_init(&k, 9, 8);
  storage_t *st = st_open_with(NULL);
  ck_assert_int_eq(st_put_ok(st, &k, &g, &p), STORAGE_PUT_INSERTED);
  storage_close(st);
  st = st_open_with(NULL);
  planner_plan_init(&q);
  ck_assert_int_eq(st_get_rc(st, &k, &g, &q), 0);
  ck_assert_uint_eq(q.arena_bytes, p.arena_bytes);
  ck_assert_uint_eq(q.lower_bound_bytes, p.lower_bound_bytes);
  ck_assert_uint_eq(q.naive_bytes, p.naive_bytes);
  ck_assert_mem_eq(q.offsets, p.offsets, 2 * sizeof *p.offsets);
  struct storage_list_query lq = {NULL, 0, STORAGE_ORDER_NEWEST, 0, 10};
  struct storage_record *recs = NULL;
  size_t n = 0;
  ck_assert_int_eq(storage_list(st, &lq, &recs, &n), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(recs[0].plan.arena_bytes, p.arena_bytes);
  storage_records_free(recs, n);
  storage_close(st);
  planner_plan_cleanup(&p);
  planner_plan_cleanup(&q);
}
END_TEST

/* The planner rejects empty graphs, so the cache never holds one: a put
 * of 0 tensors fails with the planner's ARENA_EEMPTY and writes nothing,
 * and a get of 0 tensors is ARENA_EINVAL. 1 tensor is the smallest plan. */
START_TEST(empty_graph_rejected)
{
  struct planner_tensor one = {.id = 0, .size = 8, .pinned = -1};
  struct planner_graph g = {&one, 0};
  struct planner_plan p;
  struct planner_options o;
  struct st_tkey k;
  struct storage_stats s;
  uint64_t zero = 0;
  planner_plan_init(&p);
  p.offsets = &zero;
  st_opts(&o, PLANNER_ALGO_BEST);
  st_key_init(&k, 1, 1);
  storage_t *st = st_open_with(NULL);
  ck_assert_int_eq(storage_put(st, &k.k, &g, &o, &p, 0, NULL), ARENA_EEMPTY);
  ck_assert_str_ne(storage_errmsg(st), "");
  p.offsets = NULL;
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &p, NULL), ARENA_EINVAL);
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 0);
  storage_close(st);
}
END_TEST

/* The same graph listed in another order gets offsets in its own order. */
START_TEST(tensor_order_independent)
{
  size_t n = 300;
  struct planner_tensor *t = st_make_tensors(n, 5), *u = malloc(n * sizeof *u);
  struct planner_graph g = {t, n}, h = {u, n};
  struct planner_plan p, q;
  struct st_tkey k;
  uint64_t s = 99;
  memcpy(u, t, n * sizeof *t);
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = (size_t)tu_rand_range(&s, 0, i);
    struct planner_tensor x = u[i];
    u[i] = u[j];
    u[j] = x;
  }
  st_plan_ok(&g, PLANNER_ALGO_BEST, &p);
  st_key_init(&k, 1, 2);
  storage_t *st = st_open_with(NULL);
  st_put_ok(st, &k, &g, &p);
  planner_plan_init(&q);
  ck_assert_int_eq(st_get_rc(st, &k, &h, &q), 0);
  for (size_t i = 0; i < n; i++)
    ck_assert_uint_eq(q.offsets[i], p.offsets[u[i].id]);

  /* Put in shuffled order, get in id order: same answer. */
  struct st_tkey k2;
  st_key_init(&k2, 2, 2);
  st_put_ok(st, &k2, &h, &q);
  struct planner_plan r;
  planner_plan_init(&r);
  ck_assert_int_eq(st_get_rc(st, &k2, &g, &r), 0);
  ck_assert_mem_eq(r.offsets, p.offsets, n * sizeof *p.offsets);
  storage_close(st);
  planner_plan_cleanup(&p);
  planner_plan_cleanup(&q);
  planner_plan_cleanup(&r);
  free(t);
  free(u);
}
END_TEST

/* Different graphs or options under one model hash never share plans. */
START_TEST(key_isolation)
{
  struct planner_tensor *t = st_make_tensors(50, 1),
                        *u = st_make_tensors(50, 2);
  struct planner_graph g = {t, 50}, h = {u, 50};
  struct planner_plan p, q;
  struct planner_options o;
  struct st_tkey k, k_shape;
  st_key_init(&k, 1, 10);
  st_key_init(&k_shape, 1, 11);
  st_plan_ok(&g, PLANNER_ALGO_BEST, &p);
  storage_t *st = st_open_with(NULL);
  st_put_ok(st, &k, &g, &p);
  planner_plan_init(&q);
  ck_assert_int_eq(st_get_rc(st, &k, &h, &q), ARENA_ENOENT); /* other graph */
  ck_assert_ptr_null(q.offsets);
  ck_assert_int_eq(st_get_rc(st, &k_shape, &g, &q), ARENA_ENOENT);
  st_opts(&o, PLANNER_ALGO_BEST);
  o.alignment = 128;
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, NULL), ARENA_ENOENT);
  st_opts(&o, PLANNER_ALGO_BEST);
  o.capacity = 1 << 30;
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, NULL), ARENA_ENOENT);
  st_opts(&o, PLANNER_ALGO_NAIVE);
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, NULL), ARENA_ENOENT);
  /* The effort is not part of the key. */
  st_opts(&o, PLANNER_ALGO_BEST);
  o.effort = 7;
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, NULL), 0);
  storage_close(st);
  planner_plan_cleanup(&p);
  planner_plan_cleanup(&q);
  free(t);
  free(u);
}
END_TEST

START_TEST(bad_arguments)
{
  struct planner_tensor *t = st_make_tensors(5, 1);
  struct planner_graph g = {t, 5};
  struct planner_plan p;
  struct planner_options o;
  struct st_tkey k;
  st_plan_ok(&g, PLANNER_ALGO_BEST, &p);
  st_opts(&o, PLANNER_ALGO_BEST);
  st_key_init(&k, 1, 1);
  storage_t *st = st_open_with(NULL);
  k.k.model_hash_len = 0;
  ck_assert_int_eq(storage_put(st, &k.k, &g, &o, &p, 0, NULL), ARENA_EINVAL);
  k.k.model_hash_len = STORAGE_MODEL_HASH_MAX + 1;
  struct planner_plan q;
  planner_plan_init(&q);
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, NULL), ARENA_EINVAL);
  ck_assert_ptr_null(q.offsets); /* out is empty on failure */
  k.dims[1] = -3;
  k.k.model_hash_len = 3;
  ck_assert_int_eq(storage_put(st, &k.k, &g, &o, &p, 0, NULL), ARENA_EINVAL);

  storage_t *bad = (storage_t *)1;
  char err[ARENA_ERR_LEN];
  char path[600];
  snprintf(path, sizeof path, "%s/no/such/dir/x.db", st_tmpdir());
  ck_assert_int_ne(storage_open(path, NULL, &bad, err), 0);
  ck_assert_ptr_null(bad);
  ck_assert_int_eq(storage_open("", NULL, &bad, NULL), ARENA_EINVAL);
  storage_close(NULL);
  storage_close(st);
  planner_plan_cleanup(&p);
  free(t);
}
END_TEST

/* ---- upgrades ----------------------------------------------------------- */

START_TEST(upgrade_rules)
{
  size_t n = 200;
  struct planner_tensor *t = st_make_tensors(n, 3);
  struct planner_graph g = {t, n};
  struct planner_plan naive, best, q;
  struct st_tkey k;
  struct storage_stats s;
  st_plan_ok(&g, PLANNER_ALGO_NAIVE, &naive);
  st_plan_ok(&g, PLANNER_ALGO_BEST, &best);
  ck_assert_uint_lt(best.arena_bytes, naive.arena_bytes);
  st_key_init(&k, 1, 1);
  storage_t *st = st_open_with(NULL);

  ck_assert_int_eq(st_put_ok(st, &k, &g, &naive), STORAGE_PUT_INSERTED);
  ck_assert_int_eq(st_put_ok(st, &k, &g, &best), STORAGE_PUT_UPGRADED);
  ck_assert_int_eq(st_put_ok(st, &k, &g, &naive), STORAGE_PUT_KEPT);
  ck_assert_int_eq(st_put_ok(st, &k, &g, &best), STORAGE_PUT_KEPT);
  planner_plan_init(&q);
  ck_assert_int_eq(st_get_rc(st, &k, &g, &q), 0);
  ck_assert_uint_eq(q.arena_bytes, best.arena_bytes);
  ck_assert_mem_eq(q.offsets, best.offsets, n * sizeof *q.offsets);

  /* Same arena, now proven optimal: upgrade; the reverse: kept. */
  struct planner_plan proven = best;
  best.proven_optimal = 0;
  proven.proven_optimal = 1;
  struct st_tkey k2;
  st_key_init(&k2, 2, 1);
  ck_assert_int_eq(st_put_ok(st, &k2, &g, &best), STORAGE_PUT_INSERTED);
  ck_assert_int_eq(st_put_ok(st, &k2, &g, &best), STORAGE_PUT_KEPT);
  ck_assert_int_eq(st_put_ok(st, &k2, &g, &proven), STORAGE_PUT_UPGRADED);
  ck_assert_int_eq(st_put_ok(st, &k2, &g, &best), STORAGE_PUT_KEPT);
  ck_assert_int_eq(st_get_rc(st, &k2, &g, &q), 0);
  ck_assert_int_eq(q.proven_optimal, 1);

  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 2);

  /* An invalid plan is rejected before anything is written. */
  struct planner_plan broken = best;
  uint64_t *offs = malloc(n * sizeof *offs);
  memcpy(offs, best.offsets, n * sizeof *offs);
  for (size_t i = 0; i < n; i++)
    offs[i] = 0; /* everything at 0 overlaps */
  broken.offsets = offs;
  broken.arena_bytes = 1;
  struct planner_options o;
  st_opts(&o, PLANNER_ALGO_BEST);
  struct st_tkey k3;
  st_key_init(&k3, 3, 1);
  ck_assert_int_eq(storage_put(st, &k3.k, &g, &o, &broken, 0, NULL),
                   ARENA_EVERIFY);
  ck_assert_ptr_nonnull(strstr(storage_errmsg(st), "plan rejected"));
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 2);
  free(offs);

  storage_close(st);
  best.proven_optimal = proven.proven_optimal; /* one offsets array */
  planner_plan_cleanup(&naive);
  planner_plan_cleanup(&best);
  planner_plan_cleanup(&q);
  free(t);
}
END_TEST

/* ---- adding the tests --------------------------------------------------- */

void storage_add_plans(TCase *tc)
{
  tcase_add_test(tc, round_trip_1);
  tcase_add_test(tc, round_trip_100k);
  tcase_add_test(tc, round_trip_near_2_63);
  tcase_add_test(tc, empty_graph_rejected);
  tcase_add_test(tc, tensor_order_independent);
  tcase_add_test(tc, key_isolation);
  tcase_add_test(tc, bad_arguments);
  tcase_add_test(tc, upgrade_rules);
}

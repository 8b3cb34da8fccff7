/*
 * check_storage_entries.c - tests of the storage suite's "cache" test
 * case about the set of stored entries: LRU eviction under the entry cap
 * and the byte cap, lookup by model and shape, listing with orders and
 * paging, explicit eviction of a key, a model or everything, and the
 * stats with hit counts that are batched in memory before they are
 * written, and uses counted outside storage added in one transaction.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "check_storage.h"
#include "digest.h"
#include "storage.h"

/* ---- eviction and caps -------------------------------------------------- */

START_TEST(evict_lru_entries)
{
  struct st_fleet f;
  struct storage_options o;
  struct storage_stats s;
  st_fleet_init(&f, 40);
  storage_options_init(&o);
  o.max_entries = 3;
  o.touch_batch = 1000; /* uses stay pending until the next put */
  storage_t *st = st_open_with(&o);
  st_put_ok(st, &f.k[0], &f.g[0], &f.p[0]);
  st_put_ok(st, &f.k[1], &f.g[1], &f.p[1]);
  st_put_ok(st, &f.k[2], &f.g[2], &f.p[2]);
  ck_assert(st_has(st, &f, 0)); /* 0 is now the most recent */
  st_put_ok(st, &f.k[3], &f.g[3], &f.p[3]); /* evicts 1 */
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 3);
  ck_assert_uint_eq(s.evictions, 1);
  st_put_ok(st, &f.k[4], &f.g[4], &f.p[4]); /* evicts 2 */
  ck_assert(!st_has(st, &f, 1));
  ck_assert(!st_has(st, &f, 2));
  ck_assert(st_has(st, &f, 3));
  ck_assert(st_has(st, &f, 0));
  ck_assert(st_has(st, &f, 4));
  st_put_ok(st, &f.k[5], &f.g[5], &f.p[5]); /* evicts 3, the least recent */
  ck_assert(!st_has(st, &f, 3));
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 3);
  ck_assert_uint_eq(s.evictions, 3);
  /* A put that only keeps the stored plan still refreshes nothing and
   * evicts nothing. */
  ck_assert_int_eq(st_put_ok(st, &f.k[5], &f.g[5], &f.p[5]), STORAGE_PUT_KEPT);
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.evictions, 3);
  storage_close(st);
  st_fleet_cleanup(&f);
}
END_TEST

START_TEST(evict_lru_bytes)
{
  struct st_fleet f;
  struct storage_options o;
  struct storage_stats s;
  st_fleet_init(&f, 40);
  storage_t *st = st_open_with(NULL);
  st_put_ok(st, &f.k[0], &f.g[0], &f.p[0]);
  st_stats_of(st, &s);
  uint64_t one = s.bytes; /* accounted bytes of one plan, about the same
                             for every plan of the fleet */
  ck_assert_uint_gt(one, 128);
  storage_close(st);
  ck_assert_int_eq(unlink(st_dbpath()), 0);

  storage_options_init(&o);
  o.max_bytes = one * 3 + one / 2;
  st = st_open_with(&o);
  for (int i = 0; i < 6; i++) {
    st_put_ok(st, &f.k[i], &f.g[i], &f.p[i]);
    st_stats_of(st, &s);
    ck_assert_uint_le(s.bytes, o.max_bytes);
  }
  ck_assert_uint_eq(s.entries, 3);
  ck_assert_uint_eq(s.evictions, 3);
  ck_assert(!st_has(st, &f, 0));
  ck_assert(!st_has(st, &f, 2));
  ck_assert(st_has(st, &f, 3));
  ck_assert(st_has(st, &f, 5));
  storage_close(st);

  /* A plan that alone exceeds the cap is refused. */
  o.max_bytes = one / 2;
  st = st_open_with(&o);
  struct planner_options po;
  st_opts(&po, PLANNER_ALGO_BEST);
  ck_assert_int_eq(storage_put(st, &f.k[6].k, &f.g[6], &po, &f.p[6], 0, NULL),
                   ARENA_ETOOBIG);
  ck_assert(!st_has(st, &f, 6));
  storage_close(st);
  st_fleet_cleanup(&f);
}
END_TEST

/* ---- lookup, list, evict, stats ---------------------------------------- */

START_TEST(lookup_by_model_and_shape)
{
  struct st_fleet f;
  st_fleet_init(&f, 30);
  storage_t *st = st_open_with(NULL);
  struct st_tkey m, other_shape, other_model;
  st_key_init(&m, 77, 8);
  st_key_init(&other_shape, 77, 9);
  st_key_init(&other_model, 78, 8);
  for (int i = 0; i < 3; i++)
    st_put_ok(st, &m, &f.g[i], &f.p[i]);
  st_put_ok(st, &other_shape, &f.g[3], &f.p[3]);
  st_put_ok(st, &other_model, &f.g[4], &f.p[4]);

  struct storage_record *r;
  size_t n;
  ck_assert_int_eq(storage_lookup(st, &m.k, &r, &n), 0);
  ck_assert_uint_eq(n, 3);
  int seen[3] = {0, 0, 0};
  for (size_t j = 0; j < n; j++) {
    ck_assert_uint_eq(r[j].model_hash_len, strlen(m.hash));
    ck_assert_mem_eq(r[j].model_hash, m.hash, strlen(m.hash));
    ck_assert_uint_eq(r[j].n_inputs, 1);
    ck_assert_uint_eq(r[j].ranks[0], 4);
    ck_assert_int_eq(r[j].dims[1], 8);
    for (int i = 0; i < 3; i++) {
      uint8_t gd[PLANNER_DIGEST_LEN];
      ck_assert_int_eq(planner_graph_digest(&f.g[i], gd), 0);
      if (memcmp(gd, r[j].graph_digest, sizeof gd) == 0) {
        seen[i]++;
        /* Ids are ascending, so canonical order is graph order. */
        ck_assert_mem_eq(r[j].plan.offsets, f.p[i].offsets,
                         30 * sizeof(uint64_t));
        ck_assert_uint_eq(r[j].plan.arena_bytes, f.p[i].arena_bytes);
      }
    }
  }
  ck_assert(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
  storage_records_free(r, n);

  ck_assert_int_eq(storage_lookup(st, &other_shape.k, &r, &n), 0);
  ck_assert_uint_eq(n, 1);
  storage_records_free(r, n);
  struct st_tkey none;
  st_key_init(&none, 79, 8);
  ck_assert_int_eq(storage_lookup(st, &none.k, &r, &n), 0);
  ck_assert_uint_eq(n, 0);
  ck_assert_ptr_null(r);
  storage_close(st);
  st_fleet_cleanup(&f);
}
END_TEST

START_TEST(list_and_evict)
{
  struct st_fleet f;
  st_fleet_init(&f, 20);
  struct storage_options o;
  storage_options_init(&o);
  o.touch_batch = 1000;
  storage_t *st = st_open_with(&o);
  struct st_tkey a, b;
  st_key_init(&a, 1, 8);
  st_key_init(&b, 2, 8);
  for (int i = 0; i < 5; i++)
    st_put_ok(st, &a, &f.g[i], &f.p[i]);
  for (int i = 5; i < 8; i++)
    st_put_ok(st, &b, &f.g[i], &f.p[i]);
  /* Hits: graph 6 three times, graph 2 twice. */
  struct planner_plan q;
  planner_plan_init(&q);
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(st_get_rc(st, &b, &f.g[6], &q), 0);
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(st_get_rc(st, &a, &f.g[2], &q), 0);

  struct storage_list_query lq = {NULL, 0, STORAGE_ORDER_MOST_USED, 0, 2};
  struct storage_record *r;
  size_t n;
  uint8_t gd[PLANNER_DIGEST_LEN];
  ck_assert_int_eq(storage_list(st, &lq, &r, &n), 0);
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(r[0].info.hits, 3);
  ck_assert_uint_eq(r[1].info.hits, 2);
  ck_assert_ptr_null(r[0].plan.offsets);
  ck_assert_uint_eq(r[0].plan.n_offsets, 20);
  planner_graph_digest(&f.g[6], gd);
  ck_assert_mem_eq(r[0].graph_digest, gd, sizeof gd);
  ck_assert_int_ge(r[0].info.last_used_ms, r[0].info.created_ms);
  storage_records_free(r, n);

  /* Paging through one model's plans, newest first. */
  lq.model_hash = (const uint8_t *)a.hash;
  lq.model_hash_len = strlen(a.hash);
  lq.order = STORAGE_ORDER_NEWEST;
  size_t total = 0;
  for (lq.offset = 0;; lq.offset += 2) {
    ck_assert_int_eq(storage_list(st, &lq, &r, &n), 0);
    for (size_t j = 0; j < n; j++) {
      ck_assert_mem_eq(r[j].model_hash, a.hash, strlen(a.hash));
      if (j > 0)
        ck_assert_int_ge(r[j - 1].info.created_ms, r[j].info.created_ms);
    }
    storage_records_free(r, n);
    total += n;
    if (n < 2)
      break;
  }
  ck_assert_uint_eq(total, 5);
  lq.limit = 0;
  ck_assert_int_eq(storage_list(st, &lq, &r, &n), ARENA_EINVAL);

  /* Evict one key, then one model, then everything. */
  uint64_t removed;
  uint8_t od[PLANNER_DIGEST_LEN];
  struct planner_options po;
  st_opts(&po, PLANNER_ALGO_BEST);
  planner_options_digest(&po, od);
  planner_graph_digest(&f.g[0], gd);
  ck_assert_int_eq(storage_evict(st, &a.k, gd, od, &removed), 0);
  ck_assert_uint_eq(removed, 1);
  ck_assert_int_eq(storage_evict(st, &a.k, gd, od, &removed), 0);
  ck_assert_uint_eq(removed, 0);
  ck_assert_int_eq(st_get_rc(st, &a, &f.g[0], &q), ARENA_ENOENT);
  ck_assert_int_eq(storage_evict_model(st, (const uint8_t *)a.hash,
                                       strlen(a.hash), &removed),
                   0);
  ck_assert_uint_eq(removed, 4);
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 3);
  ck_assert_uint_eq(s.removed, 5);
  ck_assert_int_eq(storage_evict_all(st, &removed), 0);
  ck_assert_uint_eq(removed, 3);
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 0);
  ck_assert_uint_eq(s.bytes, 0);
  ck_assert_uint_eq(s.removed, 8);
  ck_assert_uint_eq(s.evictions, 0);
  ck_assert_int_eq(storage_evict_model(st, NULL, 0, &removed), ARENA_EINVAL);

  planner_plan_cleanup(&q);
  storage_close(st);
  st_fleet_cleanup(&f);
}
END_TEST

/* Hits are counted in memory and written in one transaction per batch:
 * the database does not change until the batch fills. */
START_TEST(stats_and_batched_touches)
{
  struct st_fleet f;
  st_fleet_init(&f, 20);
  struct storage_options o;
  storage_options_init(&o);
  o.touch_batch = 4;
  storage_t *st = st_open_with(&o);
  st_put_ok(st, &f.k[0], &f.g[0], &f.p[0]);
  st_put_ok(st, &f.k[1], &f.g[1], &f.p[1]);
  sqlite3 *db = st_raw_open(st_dbpath());
  struct planner_plan q;
  planner_plan_init(&q);
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(st_get_rc(st, &f.k[0], &f.g[0], &q), 0);
  ck_assert_int_eq(st_get_rc(st, &f.k[2], &f.g[2], &q), ARENA_ENOENT);
  ck_assert_int_eq(st_raw_int(db, "SELECT sum(hits) FROM plans"), 0);
  ck_assert_int_eq(st_raw_int(db, "SELECT hits + misses FROM stats"), 0);
  struct storage_stats s;
  st_stats_of(st, &s); /* includes what is pending */
  ck_assert_uint_eq(s.hits, 3);
  ck_assert_uint_eq(s.misses, 1);
  ck_assert_uint_eq(s.entries, 2);
  ck_assert_uint_gt(s.file_bytes, 0);
  ck_assert_int_eq(st_get_rc(st, &f.k[1], &f.g[1], &q), 0); /* 4th: flush */
  ck_assert_int_eq(st_raw_int(db, "SELECT sum(hits) FROM plans"), 4);
  ck_assert_int_eq(st_raw_int(db, "SELECT hits FROM stats"), 4);
  ck_assert_int_eq(st_raw_int(db, "SELECT misses FROM stats"), 1);

  ck_assert_int_eq(st_get_rc(st, &f.k[1], &f.g[1], &q), 0);
  ck_assert_int_eq(storage_flush(st), 0);
  ck_assert_int_eq(st_raw_int(db, "SELECT hits FROM plans WHERE hits = 2"), 2);
  ck_assert_int_eq(st_get_rc(st, &f.k[1], &f.g[1], &q), 0);
  storage_close(st); /* close flushes too */
  ck_assert_int_eq(st_raw_int(db, "SELECT hits FROM stats"), 6);
  ck_assert_int_eq(st_raw_int(db, "SELECT max(hits) FROM plans"), 3);

  st = st_open_with(&o);
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.hits, 6);
  ck_assert_uint_eq(s.misses, 1);
  ck_assert_uint_eq(s.bytes,
                    (uint64_t)st_raw_int(db, "SELECT sum(bytes) FROM plans"));
  ck_assert_int_eq(storage_vacuum(st), 0);
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 2);
  ck_assert_int_eq(st_get_rc(st, &f.k[1], &f.g[1], &q), 0);
  storage_close(st);
  sqlite3_close(db);
  planner_plan_cleanup(&q);
  st_fleet_cleanup(&f);
}
END_TEST

/* Fills u with a use of plan i of the fleet: count uses at time when. */
static void fleet_use(struct st_fleet *f, int i, uint64_t count, int64_t when,
                      uint8_t gd[PLANNER_DIGEST_LEN],
                      uint8_t od[PLANNER_DIGEST_LEN], struct storage_use *u)
{
  struct planner_options o;
  st_opts(&o, PLANNER_ALGO_BEST);
  ck_assert_int_eq(planner_graph_digest(&f->g[i], gd), 0);
  planner_options_digest(&o, od);
  u->key = f->k[i].k;
  u->graph_digest = gd;
  u->options_digest = od;
  u->count = count;
  u->last_used_ms = when;
}

/* Uses counted elsewhere (the daemon's in-memory cache) reach the hit
 * counts, the last-use times and the LRU order in one transaction. */
START_TEST(added_uses)
{
  struct st_fleet f;
  st_fleet_init(&f, 20);
  struct storage_options o;
  storage_options_init(&o);
  o.max_entries = 3;
  storage_t *st = st_open_with(&o);
  for (int i = 0; i < 3; i++)
    st_put_ok(st, &f.k[i], &f.g[i], &f.p[i]);
  sqlite3 *db = st_raw_open(st_dbpath());
  uint8_t gd[3][PLANNER_DIGEST_LEN], od[3][PLANNER_DIGEST_LEN];
  struct storage_use u[3];
  fleet_use(&f, 2, 2, 4102444800000, gd[0], od[0], &u[0]);
  fleet_use(&f, 0, 25, 4102444800001, gd[1], od[1], &u[1]);
  fleet_use(&f, 5, 7, 4102444800002, gd[2], od[2], &u[2]); /* not stored */
  uint64_t applied = 99;
  ck_assert_int_eq(storage_add_uses(st, u, 3, &applied), 0);
  ck_assert_uint_eq(applied, 2);
  ck_assert_int_eq(st_raw_int(db, "SELECT hits FROM plans WHERE "
                                  "model_hash = CAST('model-0' AS BLOB)"),
                   25);
  ck_assert_int_eq(st_raw_int(db, "SELECT last_used_ms FROM plans WHERE "
                                  "model_hash = CAST('model-0' AS BLOB)"),
                   4102444800001);
  ck_assert_int_eq(st_raw_int(db, "SELECT sum(hits) FROM plans"), 27);
  ck_assert_int_eq(st_raw_int(db, "SELECT hits FROM stats"), 0);

  /* most used first */
  struct storage_list_query q = {NULL, 0, STORAGE_ORDER_MOST_USED, 0, 10};
  struct storage_record *r;
  size_t n;
  ck_assert_int_eq(storage_list(st, &q, &r, &n), 0);
  ck_assert_uint_eq(n, 3);
  ck_assert_str_eq((const char *)r[0].model_hash, "model-0");
  ck_assert_uint_eq(r[0].info.hits, 25);
  ck_assert_uint_eq(r[1].info.hits, 2);
  storage_records_free(r, n);

  /* 1 was stored after 0 but never used: it is the one a new plan
   * pushes out, then 2 (used before 0) */
  st_put_ok(st, &f.k[3], &f.g[3], &f.p[3]);
  ck_assert(!st_has(st, &f, 1));
  ck_assert(st_has(st, &f, 0));
  st_put_ok(st, &f.k[4], &f.g[4], &f.p[4]);
  ck_assert(st_has(st, &f, 0));
  ck_assert(!st_has(st, &f, 2));

  /* a bad key writes nothing, not even the good uses before it */
  ck_assert_int_eq(storage_flush(st), 0);
  int64_t before = st_raw_int(db, "SELECT sum(hits) FROM plans");
  u[1].key.model_hash_len = 0;
  ck_assert_int_eq(storage_add_uses(st, u, 2, &applied), ARENA_EINVAL);
  ck_assert_uint_eq(applied, 0);
  ck_assert_int_eq(st_raw_int(db, "SELECT sum(hits) FROM plans"), before);
  ck_assert_int_eq(storage_add_uses(st, NULL, 0, NULL), 0);
  storage_close(st);
  sqlite3_close(db);
  st_fleet_cleanup(&f);
}
END_TEST

/* ---- adding the tests --------------------------------------------------- */

void storage_add_entries(TCase *tc)
{
  tcase_add_test(tc, evict_lru_entries);
  tcase_add_test(tc, evict_lru_bytes);
  tcase_add_test(tc, lookup_by_model_and_shape);
  tcase_add_test(tc, list_and_evict);
  tcase_add_test(tc, stats_and_batched_touches);
  tcase_add_test(tc, added_uses);
}

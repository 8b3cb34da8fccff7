/*
 * check_storage_place.c - the "place" part of check_storage: placement
 * records beside stored plans (schema v4): storage_attach,
 * storage_lookup_graphs, and the record carried by export and preload.
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

/* A stored plan: graph g (owned tensors), options o and plan p under key
 * k, put with storage_put_effort. */
struct placed {
  struct planner_tensor *t;
  struct planner_graph g;
  struct planner_options o;
  struct planner_plan p;
  struct st_tkey k;
  uint8_t gd[PLANNER_DIGEST_LEN], od[PLANNER_DIGEST_LEN];
};

static void placed_put(storage_t *st, struct placed *x, unsigned model,
                       uint64_t seed)
{
  x->t = st_make_tensors(40, seed);
  x->g = (struct planner_graph){x->t, 40};
  st_opts(&x->o, PLANNER_ALGO_NAIVE);
  planner_plan_init(&x->p);
  char err[ARENA_ERR_LEN];
  ck_assert_msg(planner_run(&x->g, &x->o, &x->p, err) == 0, "%s", err);
  st_key_init(&x->k, model, 8);
  ck_assert_int_eq(storage_put_effort(st, &x->k.k, &x->g, &x->o, &x->p, 5,
                                      0, 1, NULL), 0);
  ck_assert_int_eq(planner_graph_digest(&x->g, x->gd), 0);
  planner_options_digest(&x->o, x->od);
}

static void placed_cleanup(struct placed *x)
{
  planner_plan_cleanup(&x->p);
  free(x->t);
}

/* The accounted bytes of the cache. */
static uint64_t cache_bytes(storage_t *st)
{
  struct storage_stats s;
  st_stats_of(st, &s);
  return s.bytes;
}

START_TEST(place_attach_and_lookup)
{
  storage_t *st = st_open_with(NULL);
  struct placed x;
  placed_put(st, &x, 1, 3);
  struct storage_record *r = NULL;
  size_t n = 9;
  /* stored without a record: served with none */
  ck_assert_int_eq(storage_lookup_graphs(st, &x.k.k, &r, &n), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_ptr_null(r[0].placement);
  storage_records_free(r, n);

  uint64_t before = cache_bytes(st);
  const uint8_t rec[] = "placement record one";
  ck_assert_int_eq(storage_attach(st, &x.k.k, x.gd, x.od, rec, sizeof rec),
                   0);
  ck_assert_uint_eq(cache_bytes(st), before + sizeof rec);
  ck_assert_int_eq(storage_lookup_graphs(st, &x.k.k, &r, &n), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(r[0].placement_len, sizeof rec);
  ck_assert_mem_eq(r[0].placement, rec, sizeof rec);
  /* the graph and the plan come with it, the plan verified against it */
  ck_assert_uint_eq(r[0].graph.n_tensors, 40);
  ck_assert_uint_eq(r[0].plan.arena_bytes, x.p.arena_bytes);
  uint8_t gd[PLANNER_DIGEST_LEN];
  ck_assert_int_eq(planner_graph_digest(&r[0].graph, gd), 0);
  ck_assert_mem_eq(gd, x.gd, PLANNER_DIGEST_LEN);
  ck_assert_int_eq(planner_verify(&r[0].graph, &r[0].opts, &r[0].plan,
                                  NULL), 0);
  storage_records_free(r, n);

  /* a second record replaces the first, and its bytes */
  const uint8_t two[] = "two";
  ck_assert_int_eq(storage_attach(st, &x.k.k, x.gd, x.od, two, sizeof two),
                   0);
  ck_assert_uint_eq(cache_bytes(st), before + sizeof two);
  ck_assert_int_eq(storage_lookup_graphs(st, &x.k.k, &r, &n), 0);
  ck_assert_uint_eq(r[0].placement_len, sizeof two);
  ck_assert_mem_eq(r[0].placement, two, sizeof two);
  storage_records_free(r, n);

  /* the plain lookup still has no graph and no record */
  ck_assert_int_eq(storage_lookup(st, &x.k.k, &r, &n), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_ptr_null(r[0].placement);
  ck_assert_uint_eq(r[0].graph.n_tensors, 0);
  storage_records_free(r, n);
  storage_close(st);
  placed_cleanup(&x);
}
END_TEST

START_TEST(place_attach_refuses)
{
  storage_t *st = st_open_with(NULL);
  struct placed x;
  placed_put(st, &x, 2, 4);
  uint8_t big[STORAGE_PLACEMENT_MAX + 1];
  memset(big, 7, sizeof big);
  uint8_t other[PLANNER_DIGEST_LEN];
  memcpy(other, x.gd, sizeof other);
  other[0] ^= 1;
  ck_assert_int_eq(storage_attach(st, &x.k.k, other, x.od, big, 8),
                   ARENA_ENOENT);
  ck_assert_int_eq(storage_attach(st, &x.k.k, x.gd, x.od, big, 0),
                   ARENA_EINVAL);
  ck_assert_int_eq(storage_attach(st, &x.k.k, x.gd, x.od, big, sizeof big),
                   ARENA_EINVAL);
  ck_assert_int_eq(storage_attach(st, &x.k.k, x.gd, x.od, NULL, 8),
                   ARENA_EINVAL);
  ck_assert_int_eq(storage_attach(st, &x.k.k, x.gd, x.od, big,
                                  STORAGE_PLACEMENT_MAX), 0);
  /* another shape is another key */
  struct st_tkey k2;
  st_key_init(&k2, 2, 16);
  ck_assert_int_eq(storage_attach(st, &k2.k, x.gd, x.od, big, 8),
                   ARENA_ENOENT);
  struct storage_record *r = NULL;
  size_t n = 0;
  ck_assert_int_eq(storage_lookup_graphs(st, &k2.k, &r, &n), 0);
  ck_assert_uint_eq(n, 0);
  storage_close(st);
  placed_cleanup(&x);
}
END_TEST

/* A smaller plan replacing the stored one keeps the record (same graph),
 * and export carries it. */
START_TEST(place_kept_by_upgrade_and_export)
{
  storage_t *st = st_open_with(NULL);
  struct placed x;
  placed_put(st, &x, 3, 5);
  const uint8_t rec[] = "kept";
  ck_assert_int_eq(storage_attach(st, &x.k.k, x.gd, x.od, rec, sizeof rec),
                   0);
  struct planner_plan q;
  planner_plan_init(&q);
  struct planner_options o = x.o;
  o.algo = PLANNER_ALGO_GREEDY_SIZE;
  char err[ARENA_ERR_LEN];
  ck_assert_msg(planner_run(&x.g, &o, &q, err) == 0, "%s", err);
  ck_assert_uint_lt(q.arena_bytes, x.p.arena_bytes);
  enum storage_put_result res = 0;
  /* stored under x's options (the digest of the key), q's offsets */
  ck_assert_int_eq(storage_put_effort(st, &x.k.k, &x.g, &x.o, &q, 5, 0, 1,
                                      &res), 0);
  ck_assert_int_eq(res, STORAGE_PUT_UPGRADED);
  struct storage_record *r = NULL;
  size_t n = 0;
  ck_assert_int_eq(storage_lookup_graphs(st, &x.k.k, &r, &n), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(r[0].plan.arena_bytes, q.arena_bytes);
  ck_assert_uint_eq(r[0].placement_len, sizeof rec);
  storage_records_free(r, n);

  struct storage_export_query eq = {.limit = 10};
  ck_assert_int_eq(storage_export(st, &eq, &r, &n, NULL), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(r[0].placement_len, sizeof rec);
  ck_assert_mem_eq(r[0].placement, rec, sizeof rec);
  storage_records_free(r, n);
  storage_close(st);
  planner_plan_cleanup(&q);
  placed_cleanup(&x);
}
END_TEST

/* A preloaded entry's record is stored with it; a record over the limit
 * fails the preload and stores nothing. */
START_TEST(place_preload)
{
  storage_t *st = st_open_with(NULL);
  struct placed x;
  x.t = st_make_tensors(30, 8);
  x.g = (struct planner_graph){x.t, 30};
  st_opts(&x.o, PLANNER_ALGO_NAIVE);
  planner_plan_init(&x.p);
  char err[ARENA_ERR_LEN];
  ck_assert_msg(planner_run(&x.g, &x.o, &x.p, err) == 0, "%s", err);
  st_key_init(&x.k, 4, 8);
  static uint8_t big[STORAGE_PLACEMENT_MAX + 1];
  struct storage_preload_entry e = {x.k.k, &x.g, &x.o, &x.p, 0, 1, big,
                                    sizeof big};
  size_t stored = 0, kept = 0, bad = 9;
  ck_assert_int_ne(storage_preload(st, &e, 1, &stored, &kept, &bad), 0);
  ck_assert_uint_eq(bad, 0);
  struct storage_record *r = NULL;
  size_t n = 0;
  ck_assert_int_eq(storage_lookup_graphs(st, &x.k.k, &r, &n), 0);
  ck_assert_uint_eq(n, 0);

  const uint8_t rec[] = "from a bundle";
  e.placement = rec;
  e.placement_len = sizeof rec;
  ck_assert_int_eq(storage_preload(st, &e, 1, &stored, &kept, &bad), 0);
  ck_assert_uint_eq(stored, 1);
  ck_assert_int_eq(storage_lookup_graphs(st, &x.k.k, &r, &n), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_uint_eq(r[0].placement_len, sizeof rec);
  ck_assert_mem_eq(r[0].placement, rec, sizeof rec);
  storage_records_free(r, n);
  storage_close(st);
  placed_cleanup(&x);
}
END_TEST

/* A file of schema v3 is migrated to v4: its plans keep their graph and
 * take a record. */
START_TEST(place_migrate_from_v3)
{
  storage_t *st = st_open_with(NULL);
  struct placed x;
  placed_put(st, &x, 5, 6);
  storage_close(st);
  sqlite3 *db = st_raw_open(st_dbpath());
  st_raw_exec(db, "ALTER TABLE plans DROP COLUMN placement;"
                  "PRAGMA user_version = 3;");
  sqlite3_close(db);
  st = st_open_with(NULL);
  db = st_raw_open(st_dbpath());
  ck_assert_int_eq(st_raw_int(db, "PRAGMA user_version"),
                   STORAGE__SCHEMA_VERSION);
  sqlite3_close(db);
  const uint8_t rec[] = "after migration";
  ck_assert_int_eq(storage_attach(st, &x.k.k, x.gd, x.od, rec, sizeof rec),
                   0);
  struct storage_record *r = NULL;
  size_t n = 0;
  ck_assert_int_eq(storage_lookup_graphs(st, &x.k.k, &r, &n), 0);
  ck_assert_uint_eq(n, 1);
  ck_assert_mem_eq(r[0].placement, rec, sizeof rec);
  storage_records_free(r, n);
  storage_close(st);
  placed_cleanup(&x);
}
END_TEST

void storage_add_place(TCase *tc)
{
  tcase_add_test(tc, place_attach_and_lookup);
  tcase_add_test(tc, place_attach_refuses);
  tcase_add_test(tc, place_kept_by_upgrade_and_export);
  tcase_add_test(tc, place_preload);
  tcase_add_test(tc, place_migrate_from_v3);
}

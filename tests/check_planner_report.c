/*
 * check_planner_report.c - what a plan reports besides its offsets:
 * planner_naive_arena() gives exactly the arena of planner_run() with the
 * naive algorithm (pins, own alignments, in-place pairs on and off, bad
 * graphs alike), load_bound_bytes is planner_lower_bound()'s, and the
 * timing fields are phases of plan_us that add up to no more than it.
 * Also the load bound computed without the time index (naive's): the
 * same as the index gives.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_planner.h"
#include "planner.h"
#include "planner_int.h"
#include "testutil.h"

/* A random graph with some pins, own alignments and declared pairs, some
 * of them legal, some not (then the graph may fail validation, which
 * both sides must report alike). */
static size_t report_graph(uint64_t *rs, struct planner_tensor *t,
                           size_t cap)
{
  size_t n = cp_random_graph(rs, (enum cp_shape)tu_rand_range(rs, 0, 2), t,
                             cap);
  for (size_t i = 0; i < n; i++) {
    if (tu_rand_range(rs, 0, 9) == 0)
      t[i].pinned = (int64_t)(tu_rand_range(rs, 0, 8) << 12);
    if (tu_rand_range(rs, 0, 2) == 0) {
      size_t k = (size_t)tu_rand_range(rs, 0, n - 1);
      if (k == i || !t[k].size)
        continue;
      if (tu_rand_range(rs, 0, 3)) { /* most of them legal */
        t[i].first = t[k].last;
        if (t[i].last < t[i].first)
          t[i].last = t[i].first + (int64_t)tu_rand_range(rs, 0, 2);
        t[i].size = t[k].size;
        t[i].pinned = PLANNER_NOT_PINNED;
      }
      t[i].alias = t[k].id;
      t[i].has_alias = 1;
    }
  }
  return n;
}

START_TEST(test_naive_arena_is_runs)
{
  uint64_t rs = 0xa7e4aull;
  enum { CAP = 40 };
  struct planner_tensor t[CAP];
  int planned = 0, refused = 0, shared = 0;
  for (int r = 0; r < 3000; r++) {
    size_t n = report_graph(&rs, t, CAP);
    struct planner_graph g = {t, n};
    struct planner_options o, no;
    planner_options_init(&o);
    o.alignment = (uint64_t)1 << tu_rand_range(&rs, 0, 7);
    o.in_place = (int)tu_rand_range(&rs, 0, 1);
    o.algo = (enum planner_algo)tu_rand_range(&rs, 0, PLANNER_ALGO__COUNT - 1);
    o.capacity = tu_rand_range(&rs, 0, 1) ? 4096 : 0;
    o.effort = 1;
    no = o;
    no.algo = PLANNER_ALGO_NAIVE;
    no.capacity = 0;
    struct planner_plan p;
    planner_plan_init(&p);
    char e1[ARENA_ERR_LEN] = "", e2[ARENA_ERR_LEN] = "";
    int want = planner_run(&g, &no, &p, e1);
    uint64_t bytes = 12345;
    int got = planner_naive_arena(&g, &o, &bytes, e2);
    ck_assert_int_eq(got, want);
    if (want) {
      ck_assert_str_eq(e2, e1);
      ck_assert_uint_eq(bytes, 0);
      refused++;
    } else {
      ck_assert_uint_eq(bytes, p.arena_bytes);
      planned++;
      shared += p.n_shared > 0;
    }
    planner_plan_cleanup(&p);
  }
  /* the rounds reach every kind of answer */
  ck_assert_int_gt(planned, 1000);
  ck_assert_int_gt(refused, 50);
  ck_assert_int_gt(shared, 100);
}
END_TEST

START_TEST(test_load_bound_and_times)
{
  uint64_t rs = 0xb0b0ull;
  enum { CAP = 40 };
  struct planner_tensor t[CAP];
  int checked = 0;
  for (int r = 0; r < 1500; r++) {
    size_t n = report_graph(&rs, t, CAP);
    struct planner_graph g = {t, n};
    struct planner_options o;
    planner_options_init(&o);
    o.alignment = (uint64_t)1 << tu_rand_range(&rs, 0, 7);
    o.in_place = (int)tu_rand_range(&rs, 0, 1);
    o.algo = (enum planner_algo)tu_rand_range(&rs, 0, PLANNER_ALGO__COUNT - 1);
    o.effort = 1;
    struct planner_plan p;
    planner_plan_init(&p);
    if (planner_run(&g, &o, &p, NULL) != 0)
      continue;
    uint64_t lb = 0;
    ck_assert_int_eq(planner_lower_bound(&g, &o, &lb), 0);
    ck_assert_uint_eq(p.load_bound_bytes, lb);
    /* the phases are disjoint parts of plan_us */
    uint64_t sum = p.validate_us + p.index_us + p.heuristics_us +
                   p.search_us + p.verify_us;
    ck_assert_uint_le(sum, p.plan_us);
    planner_plan_cleanup(&p);
    checked++;
  }
  ck_assert_int_gt(checked, 1000);
}
END_TEST

/* planner__direct_load_bound() gives the bound of the time index, on
 * short timelines; a long one it leaves to the index, and
 * planner_lower_bound() still gives the index's bound there. */
START_TEST(test_direct_load_bound)
{
  uint64_t rs = 0xd14ec7ull;
  enum { CAP = 60 };
  struct planner_tensor t[CAP];
  int direct = 0, left = 0;
  for (int r = 0; r < 6000; r++) {
    size_t n = cp_random_graph(&rs, (enum cp_shape)(r % CP_SHAPE__N), t, CAP);
    uint64_t stretch = r % 3 == 0 ? tu_rand_range(&rs, 1, 400) : 1;
    for (size_t i = 0; i < n; i++) { /* longer timelines, some too long */
      t[i].first *= (int64_t)stretch;
      t[i].last *= (int64_t)stretch;
      if (tu_rand_range(&rs, 0, 5) == 0)
        t[i].size = ((uint64_t)1 << tu_rand_range(&rs, 0, 40)) +
                    tu_rand_range(&rs, 0, 3);
    }
    struct planner_graph g = {t, n};
    struct planner_options o;
    planner_options_init(&o);
    o.alignment = (uint64_t)1 << tu_rand_range(&rs, 0, r % 5 ? 8 : 32);
    ck_assert_int_eq(planner_validate(&g, &o, NULL), 0);
    struct planner__prob p;
    ck_assert_int_eq(planner__prob_init(&p, &g, &o), 0);
    uint64_t lb = 7;
    int rc = planner__direct_load_bound(&p, &lb);
    if (rc == 0) {
      ck_assert_uint_eq(lb, p.lb);
      direct++;
    } else {
      ck_assert_int_eq(rc, 1);
      ck_assert_uint_eq(lb, 0);
      left++;
    }
    uint64_t pub = 0;
    ck_assert_int_eq(planner_lower_bound(&g, &o, &pub), 0);
    ck_assert_uint_eq(pub, p.lb);
    planner__prob_cleanup(&p);
  }
  ck_assert_int_gt(direct, 4000);
  ck_assert_int_gt(left, 100);
}
END_TEST

void cp_add_report_tests(Suite *s)
{
  TCase *tc = tcase_create("report");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_naive_arena_is_runs);
  tcase_add_test(tc, test_load_bound_and_times);
  tcase_add_test(tc, test_direct_load_bound);
  suite_add_tcase(s, tc);
}

/*
 * check_planner_best.c - how `best` picks its plan: exactly the plan of
 * the heuristic with the smallest arena, ties to the earlier one in
 * best's order, however many of the heuristics it drops on the way; and
 * the test by which it skips tflite-bestfit when greedy-size's order is
 * also tflite-bestfit's.
 */
#include <check.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "best.h"
#include "check_planner.h"
#include "planner.h"
#include "heuristics.h"
#include "planner_int.h"
#include "testutil.h"

/* best's heuristics, in its order: ties go to the earlier. */
static const enum planner_algo order[] = {
    PLANNER_ALGO_TFLM_GREEDY, PLANNER_ALGO_GREEDY_SIZE,
    PLANNER_ALGO_TFLITE_BESTFIT, PLANNER_ALGO_GREEDY_BREADTH};
#define N_ORDER (sizeof order / sizeof *order)

/* The graphs of these tests: the property graphs, or, every third
 * round, many copies of one in disjoint spans of time (so that best
 * runs its heuristics in many steps, on threads when asked), with ties
 * of size across copies. Returns the tensor count. */
static size_t best_graph(uint64_t *rs, int round, struct planner_tensor *t,
                         size_t cap)
{
  size_t n = cp_random_graph(rs, (enum cp_shape)(round % CP_SHAPE__N), t, 40);
  if (round % 3 != 2)
    return n;
  size_t m = n;
  for (uint32_t c = 1; m + n <= cap; c++)
    for (size_t i = 0; i < n; i++, m++) {
      t[m] = t[i];
      t[m].id = t[i].id + c * 1000u;
      t[m].first += (int64_t)c * 200;
      t[m].last += (int64_t)c * 200;
    }
  return m;
}

/* Plans g with heuristic a. */
static void plan_one(const struct planner_graph *g, enum planner_algo a,
                     uint64_t al, uint32_t threads, struct planner_plan *p)
{
  struct planner_options o;
  char err[ARENA_ERR_LEN];
  planner_options_init(&o);
  o.algo = a;
  o.alignment = al;
  o.threads = threads;
  planner_plan_init(p);
  ck_assert_msg(planner_run(g, &o, p, err) == 0, "%s: %s",
                planner_algo_name(a), err);
}

/* The plan of best's heuristics on g, before any search: its offsets
 * into p (allocated here), its arena and its heuristic in p->algo. */
static void plan_best_heuristics(const struct planner_graph *g, uint64_t al,
                                 uint32_t threads, struct planner_plan *p)
{
  struct planner_options o;
  struct planner__prob pr;
  planner_options_init(&o);
  o.alignment = al;
  o.threads = threads;
  planner_plan_init(p);
  ck_assert_int_eq(planner__prob_init(&pr, g, &o), 0);
  p->n_offsets = g->n_tensors;
  p->offsets = calloc(g->n_tensors, sizeof *p->offsets);
  ck_assert_ptr_nonnull(p->offsets);
  ck_assert_int_eq(planner__best(&pr, p->offsets, &p->algo), 0);
  p->arena_bytes = planner__arena_of(&pr, p->offsets);
  planner__prob_cleanup(&pr);
}

/* best's plan is the first smallest of its heuristics', offset for
 * offset, on one thread and on two. */
START_TEST(test_best_first_smallest)
{
  enum { CAP = 6000 };
  static struct planner_tensor t[CAP];
  uint64_t rs = 0xbe57;
  int won[N_ORDER] = {0};
  for (int r = 0; r < 600; r++) {
    struct planner_graph g = {t, best_graph(&rs, r, t, CAP)};
    uint64_t al = 1u << tu_rand_range(&rs, 0, 6);
    struct planner_plan h[N_ORDER];
    size_t win = 0;
    for (size_t k = 0; k < N_ORDER; k++) {
      plan_one(&g, order[k], al, 0, &h[k]);
      if (h[k].arena_bytes < h[win].arena_bytes)
        win = k;
    }
    won[win]++;
    for (uint32_t threads = 1; threads <= 2; threads++) {
      struct planner_plan b;
      plan_best_heuristics(&g, al, threads, &b);
      ck_assert_msg(b.algo == order[win], "round %d: best chose %s, not %s",
                    r, planner_algo_name(b.algo),
                    planner_algo_name(order[win]));
      ck_assert_uint_eq(b.arena_bytes, h[win].arena_bytes);
      ck_assert_msg(memcmp(b.offsets, h[win].offsets,
                           g.n_tensors * sizeof *b.offsets) == 0,
                    "round %d: offsets differ from %s's", r,
                    planner_algo_name(order[win]));
      planner_plan_cleanup(&b);
    }
    for (size_t k = 0; k < N_ORDER; k++)
      planner_plan_cleanup(&h[k]);
  }
  for (size_t k = 0; k < N_ORDER; k++) /* each heuristic won some */
    ck_assert_int_gt(won[k], 0);
}
END_TEST

/* Whether planner__tflite_same_order() accepts greedy-size's order of g
 * at global alignment al. */
static int same_order(const struct planner_graph *g, uint64_t al)
{
  struct planner_options o;
  struct planner__prob p;
  struct planner__task *task;
  planner_options_init(&o);
  o.alignment = al;
  ck_assert_int_eq(planner__prob_init(&p, g, &o), 0);
  ck_assert_int_eq(planner__task_new(&p, PLANNER_ALGO_GREEDY_SIZE, &task), 0);
  size_t m;
  const uint32_t *v = planner__task_order(task, &m);
  int same = planner__tflite_same_order(&p, v, m);
  planner__task_free(task);
  planner__prob_cleanup(&p);
  return same;
}

/* Whenever the test accepts greedy-size's order, tflite-bestfit's plan
 * is greedy-size's; both answers occur, and tflite-bestfit's plan is
 * then another on some graphs. */
START_TEST(test_tflite_same_order)
{
  enum { CAP = 2000 };
  static struct planner_tensor t[CAP];
  uint64_t rs = 0x7f11e;
  int yes = 0, no = 0, differ = 0;
  for (int r = 0; r < 3000; r++) {
    struct planner_graph g = {t, best_graph(&rs, r, t, CAP)};
    uint64_t al = 1u << tu_rand_range(&rs, 0, 3);
    if (r % 4 == 0) /* ids against row order: many ties break otherwise */
      for (size_t i = 0; i < g.n_tensors; i++)
        t[i].id = (uint32_t)(g.n_tensors - i);
    int same = same_order(&g, al);
    struct planner_plan a, b;
    plan_one(&g, PLANNER_ALGO_GREEDY_SIZE, al, 0, &a);
    plan_one(&g, PLANNER_ALGO_TFLITE_BESTFIT, al, 0, &b);
    int equal = memcmp(a.offsets, b.offsets,
                       g.n_tensors * sizeof *a.offsets) == 0;
    ck_assert_msg(!same || equal, "round %d: same order, other plans", r);
    yes += same;
    no += !same;
    differ += !equal;
    planner_plan_cleanup(&a);
    planner_plan_cleanup(&b);
  }
  ck_assert_int_gt(yes, 100);
  ck_assert_int_gt(no, 100);
  ck_assert_int_gt(differ, 10);
}
END_TEST

/* The test on hand-made orders: whole-graph tensors must come first and
 * by id; equal sizes by first operator, then id. */
START_TEST(test_tflite_same_order_cases)
{
  /* rows 0..3: 0 and 3 live through the whole graph (operators 0..9) */
  struct planner_tensor t[4] = {
      {5, 100, 0, 9, 0, PLANNER_NOT_PINNED, 0, 0},
      {1, 50, 2, 3, 0, PLANNER_NOT_PINNED, 0, 0},
      {2, 50, 1, 4, 0, PLANNER_NOT_PINNED, 0, 0},
      {7, 80, 0, 9, 0, PLANNER_NOT_PINNED, 0, 0},
  };
  struct planner_graph g = {t, 4};
  /* greedy-size: 0 (100), 3 (80), 1 (50), 2 (50); TFLite: 0, 3 by id,
   * then 2 before 1 (first operator 1 before 2) */
  ck_assert_int_eq(same_order(&g, 1), 0);
  t[2].first = 3; /* now 1 (first 2) before 2 (first 3): the same */
  ck_assert_int_eq(same_order(&g, 1), 1);
  t[3].id = 4; /* whole tensors by id: 4 before 5, but greedy-size has */
  ck_assert_int_eq(same_order(&g, 1), 0); /* 5 (larger) first */
  t[3].id = 7;
  t[3].size = 40; /* a whole tensor after sized ones: TFLite takes it */
  ck_assert_int_eq(same_order(&g, 1), 0); /* first */
}
END_TEST

void cp_add_best_tests(Suite *s)
{
  TCase *tc = tcase_create("best");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_best_first_smallest);
  tcase_add_test(tc, test_tflite_same_order);
  tcase_add_test(tc, test_tflite_same_order_cases);
  suite_add_tcase(s, tc);
}

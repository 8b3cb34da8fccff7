/*
 * check_exact_window.c - the exact planner suite's cases of
 * planner_improve_window() (planner.h, WINDOWED IMPROVEMENT): one step of
 * improvement of a large plan that re-plans a window around its peak.
 */
#include <stdlib.h>
#include <string.h>

#include "check_exact.h"
#include "tracegen.h"

/* A trace of the shape with about n tensors and its naive plan. */
static struct planner_tensor *naive_trace(enum tracegen_shape shape, size_t n,
                                          uint64_t seed, size_t *n_out,
                                          struct planner_plan *p)
{
  struct planner_tensor *t = tracegen_make(shape, n, seed, n_out);
  ck_assert_ptr_nonnull(t);
  struct planner_options o;
  planner_options_init(&o);
  o.algo = PLANNER_ALGO_NAIVE;
  struct planner_graph g = {t, *n_out};
  char err[ARENA_ERR_LEN];
  planner_plan_init(p);
  ck_assert_int_eq(planner_run(&g, &o, p, err), 0);
  return t;
}

/* Steps of at most 2000 tensors on naive plans of both shapes of 3*10^4
 * tensors: each step that says better returns a strictly smaller plan
 * that planner_verify() accepts, never one larger; the same step twice
 * gives the same offsets; ten steps take the IOPDDL-like plan lower. */
START_TEST(test_window_steps)
{
  for (int shape = 0; shape < 2; shape++) {
    size_t n;
    struct planner_plan p;
    struct planner_tensor *t = naive_trace((enum tracegen_shape)shape, 30000,
                                           11, &n, &p);
    struct planner_graph g = {t, n};
    struct planner_options o;
    planner_options_init(&o);
    uint64_t start = p.arena_bytes;
    int gains = 0;
    char err[ARENA_ERR_LEN];
    for (int step = 0; step < 10; step++) {
      struct planner_plan q, r;
      planner_plan_init(&q);
      planner_plan_init(&r);
      int better = 0, again = 0;
      ck_assert_int_eq(planner_improve_window(&g, &o, &p, 2000, &q, &better,
                                              err), 0);
      ck_assert_int_eq(planner_improve_window(&g, &o, &p, 2000, &r, &again,
                                              err), 0);
      ck_assert_int_eq(better, again);
      if (better) {
        ck_assert_uint_lt(q.arena_bytes, p.arena_bytes);
        ck_assert_uint_eq(q.n_offsets, n);
        ck_assert_int_eq(memcmp(q.offsets, r.offsets, n * sizeof *q.offsets),
                         0);
        ck_assert_msg(planner_verify(&g, &o, &q, err) == 0, "%s", err);
        planner_plan_cleanup(&p);
        p = q;
        planner_plan_init(&q);
        gains++;
      }
      planner_plan_cleanup(&q);
      planner_plan_cleanup(&r);
    }
    if (shape == TRACEGEN_IOPDDL)
      ck_assert_msg(gains > 0 && p.arena_bytes < start,
                    "no step improved the naive plan (%llu bytes)",
                    (unsigned long long)start);
    planner_plan_cleanup(&p);
    free(t);
  }
}
END_TEST

/* Bad arguments are ARENA_EINVAL; a graph with in-place pairs under
 * sharing is left alone (better 0). */
START_TEST(test_window_arguments)
{
  struct planner_tensor t[3];
  ce_set(&t[0], 0, 64, 0, 1);
  ce_set(&t[1], 1, 64, 1, 2);
  ce_set(&t[2], 2, 64, 2, 3);
  struct planner_graph g = {t, 3};
  struct planner_options o;
  planner_options_init(&o);
  struct planner_plan p, q;
  planner_plan_init(&q);
  ce_run_ok(t, 3, &o, &p);
  int better = 7;
  char err[ARENA_ERR_LEN];
  ck_assert_int_eq(planner_improve_window(&g, &o, &p, 1, &q, &better, err),
                   ARENA_EINVAL);
  ck_assert_int_eq(better, 0);
  ck_assert_int_eq(planner_improve_window(NULL, &o, &p, 16, &q, &better, err),
                   ARENA_EINVAL);
  struct planner_plan short_plan = p;
  short_plan.n_offsets = 2;
  ck_assert_int_eq(planner_improve_window(&g, &o, &short_plan, 16, &q,
                                          &better, err), ARENA_EINVAL);
  t[1].has_alias = 1;
  t[1].alias = 0;
  o.in_place = 1;
  better = 7;
  ck_assert_int_eq(planner_improve_window(&g, &o, &p, 16, &q, &better, err),
                   0);
  ck_assert_int_eq(better, 0);
  planner_plan_cleanup(&p);
  planner_plan_cleanup(&q);
}
END_TEST

void ce_add_window_tests(Suite *s)
{
  TCase *tc = tcase_create("window");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_window_steps);
  tcase_add_test(tc, test_window_arguments);
  suite_add_tcase(s, tc);
}

/*
 * check_exact_joint.c - the joint re-plan of the high-load stretch of
 * planner/improve_joint.c, a part of the exact planner's suite (test
 * case "joint"): from greedy-size's plan of a generated trace it returns
 * a lower plan that verifies, the same offsets every time and when every
 * poll sleeps; a stop callback cancels it with the plan unchanged; a
 * plan with a pinned tensor, or already near the bound, is left alone;
 * and it takes `best` within 1.001 x LB on the XLA-like trace of 20 000
 * tensors that the other passes leave at 1.00245.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_exact.h"
#include "improve.h"

/* Runs planner__joint() on a copy of plan offs (arena *arena) of problem
 * p with stop as the stop callback; returns its code, the plan it leaves
 * in out and its arena in *arena. */
static int joint_copy(struct planner__prob *p, const uint64_t *offs,
                      uint64_t *out, uint64_t *arena, planner_stop_cb stop,
                      void *ctx)
{
  struct planner_options o;
  const struct planner_options *keep = ce_with_stop(p, &o, stop, ctx);
  memcpy(out, offs, p->n * sizeof *out);
  int rc = planner__joint(p, out, arena);
  p->o = keep;
  return rc;
}

START_TEST(test_joint_lowers_greedy)
{
  /* The XLA-like trace of 20 000 tensors (seed 1) planned by
   * greedy-size, 2.2% above its load bound: the joint re-plan ends
   * strictly below that plan with a plan that verifies, with the same
   * offsets again and when every poll sleeps. A stop callback that
   * fires cancels it with the plan unchanged. */
  size_t n;
  struct ce_built B;
  uint64_t *offs;
  struct planner_tensor *t = ce_xla_trace(20000, 1, &n, &offs, 3);
  uint64_t heur = ce_greedy_problem(&B, t, n, offs);
  ck_assert_uint_gt(heur, B.p.lb + B.p.lb / 1000);
  uint64_t *a = offs + n, *b = offs + 2 * n, arena = heur, again = heur;
  ck_assert_int_eq(joint_copy(&B.p, offs, b, &again, ce_stop_now, NULL),
                   ARENA_ECANCELED);
  ck_assert_uint_eq(again, heur);
  ck_assert_int_eq(memcmp(offs, b, n * sizeof *b), 0);
  ck_assert_int_eq(joint_copy(&B.p, offs, a, &arena, NULL, NULL), 0);
  again = heur;
  ck_assert_int_eq(joint_copy(&B.p, offs, b, &again, NULL, NULL), 0);
  ck_assert_uint_eq(again, arena);
  ck_assert_int_eq(memcmp(a, b, n * sizeof *a), 0);
  int polls = 0;
  again = heur;
  ck_assert_int_eq(joint_copy(&B.p, offs, b, &again, ce_slow_poll, &polls),
                   0);
  ck_assert_uint_eq(again, arena);
  ck_assert_int_eq(memcmp(a, b, n * sizeof *a), 0);
  ck_assert_int_gt(polls, 0);
  ce_check_below_and_free(&B, a, arena, heur, t, offs);
}
END_TEST

START_TEST(test_joint_leaves_plan)
{
  /* The same trace with one tensor pinned where greedy-size put it: the
   * pass does not run and leaves the plan as it is; nor does it on a
   * plan within 1.001 x LB (the load bound taken as the arena less a
   * two-thousandth of it). */
  size_t n;
  struct ce_built B;
  uint64_t *offs, heur;
  struct planner_tensor *t = ce_squeeze_setup(&B, &n, &offs, &heur);
  uint64_t *a = offs + n, arena = heur;
  planner__prob_cleanup(&B.p);
  t[0].pinned = (int64_t)offs[0];
  ck_assert_int_eq(planner__prob_init(&B.p, &B.g, &B.o), 0);
  ck_assert_int_eq(joint_copy(&B.p, offs, a, &arena, NULL, NULL), 0);
  ck_assert_uint_eq(arena, heur);
  ck_assert_int_eq(memcmp(offs, a, n * sizeof *a), 0);
  planner__prob_cleanup(&B.p);
  t[0].pinned = PLANNER_NOT_PINNED;
  ck_assert_int_eq(planner__prob_init(&B.p, &B.g, &B.o), 0);
  B.p.lb = heur - heur / 2000;
  ck_assert_int_eq(joint_copy(&B.p, offs, a, &arena, NULL, NULL), 0);
  ck_assert_uint_eq(arena, heur);
  ck_assert_int_eq(memcmp(offs, a, n * sizeof *a), 0);
  planner__prob_cleanup(&B.p);
  free(t);
  free(offs);
}
END_TEST

START_TEST(test_joint_meets_target)
{
  /* The XLA-like trace of 20 000 tensors (seed 1), which `best` left at
   * 1.00245 x LB at the default effort before the joint re-plan: now
   * within 1.001 x LB, with a plan that verifies. */
  size_t n;
  uint64_t *offs;
  struct planner_tensor *t = ce_xla_trace(20000, 1, &n, &offs, 1);
  struct planner_options o;
  struct planner_plan a;
  ce_opts(&o, 1, 0, PLANNER_DEFAULT_EFFORT);
  o.algo = PLANNER_ALGO_BEST;
  planner_plan_init(&a);
  ce_run_ok(t, n, &o, &a);
  ck_assert_uint_le(a.arena_bytes,
                    a.lower_bound_bytes + a.lower_bound_bytes / 1000);
  planner_plan_cleanup(&a);
  free(t);
  free(offs);
}
END_TEST

void ce_add_joint_tests(Suite *s)
{
  TCase *tc = tcase_create("joint");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_joint_lowers_greedy);
  tcase_add_test(tc, test_joint_leaves_plan);
  tcase_add_test(tc, test_joint_meets_target);
  suite_add_tcase(s, tc);
}

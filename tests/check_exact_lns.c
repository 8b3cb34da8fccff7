/*
 * check_exact_lns.c - the ruin and recreate of planner/improve_lns.c, a
 * part of the exact planner's suite (test case "lns"): it lowers a
 * spoiled plan and a plan the squeeze leaves, every plan verifies, the
 * plan is the same when every poll sleeps, a stop callback cancels it
 * with the plan unchanged, offsets aligned to 64 bytes stay aligned, and
 * the runner-up's search takes `best` lower on a trace of 40 000 tensors;
 * and the checks it shares with the joint re-plan's case
 * (check_exact_joint.c): a pass cancelled, repeated and slowed down, and
 * `best` on a generated trace.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_exact.h"
#include "improve.h"
#include "tracegen.h"

int ce_pass_copy(int (*pass)(const struct planner__prob *, uint64_t *,
                             uint64_t *),
                 struct planner__prob *p, const uint64_t *offs,
                 uint64_t *out, uint64_t *arena, planner_stop_cb stop,
                 void *ctx)
{
  struct planner_options o;
  const struct planner_options *keep = ce_with_stop(p, &o, stop, ctx);
  memcpy(out, offs, p->n * sizeof *out);
  int rc = pass(p, out, arena);
  p->o = keep;
  return rc;
}

uint64_t ce_check_pass_repeats(int (*pass)(const struct planner__prob *,
                                           uint64_t *, uint64_t *),
                               struct planner__prob *p, const uint64_t *offs,
                               uint64_t given, uint64_t *a, uint64_t *b)
{
  size_t n = p->n;
  /* Cancelled at its first poll: ARENA_ECANCELED, the plan unchanged. */
  uint64_t arena = given, again = given;
  ck_assert_int_eq(ce_pass_copy(pass, p, offs, b, &again, ce_stop_now, NULL),
                   ARENA_ECANCELED);
  ck_assert_uint_eq(again, given);
  ck_assert_int_eq(memcmp(offs, b, n * sizeof *b), 0);
  ck_assert_int_eq(ce_pass_copy(pass, p, offs, a, &arena, NULL, NULL), 0);
  int polls = 0;
  again = given;
  ck_assert_int_eq(
      ce_pass_copy(pass, p, offs, b, &again, ce_slow_poll, &polls), 0);
  ck_assert_uint_eq(again, arena);
  ck_assert_int_eq(memcmp(a, b, n * sizeof *a), 0);
  ck_assert_int_gt(polls, 0);
  return arena;
}

/* Spoils greedy-size's plan offs (arena heur) of trace t: the first
 * short-lived tensor of more than 1000 bytes after operator 1000 goes
 * to the top, which it alone reaches. Returns the spoiled arena. */
static uint64_t spoil(const struct planner_tensor *t, size_t n, uint64_t *offs,
                      uint64_t heur)
{
  size_t j = n;
  for (size_t i = 0; i < n && j == n; i++)
    if (t[i].size > 1000 && t[i].last - t[i].first < 10 && t[i].first > 1000)
      j = i;
  ck_assert_uint_lt(j, n);
  offs[j] = planner__align_up(heur, 64);
  return offs[j] + t[j].size;
}

START_TEST(test_lns_lowers_spoiled)
{
  /* An XLA-like trace of 10 000 tensors planned by greedy-size, spoiled
   * by one short-lived tensor moved to the top. Ruin and recreate must
   * end strictly below the spoiled arena with a plan that verifies, the
   * same when every poll sleeps; a stop callback that fires cancels it
   * with the plan unchanged. */
  size_t n;
  struct ce_built B;
  uint64_t *offs, heur;
  struct planner_tensor *t = ce_squeeze_setup(&B, &n, &offs, &heur);
  uint64_t spoiled = spoil(t, n, offs, heur), *a = offs + n;
  uint64_t arena =
      ce_check_pass_repeats(planner__lns, &B.p, offs, spoiled, a, offs + 2 * n);
  ce_check_below_and_free(&B, a, arena, spoiled, t, offs);
}
END_TEST

START_TEST(test_lns_aligned)
{
  /* The same trace with every offset aligned to 64 bytes, spoiled the
   * same way: strictly below the spoiled arena, every placement aligned
   * (the plan verifies). */
  size_t n;
  struct ce_built B;
  uint64_t *offs, heur;
  struct planner_tensor *t = ce_squeeze_setup(&B, &n, &offs, &heur);
  heur = ce_greedy_aligned(&B, 64, offs);
  uint64_t spoiled = spoil(t, n, offs, heur), arena = spoiled, *a = offs + n;
  ck_assert_int_eq(ce_pass_copy(planner__lns, &B.p, offs, a, &arena, NULL, NULL), 0);
  ce_check_below_and_free(&B, a, arena, spoiled, t, offs);
}
END_TEST

START_TEST(test_lns_after_squeeze)
{
  /* An XLA-like trace of 20 000 tensors (seed 4) whose best staircase
   * plan the squeeze does not lower at all within the default effort:
   * ruin and recreate, which keeps sideways moves, ends strictly below
   * the plan the squeeze leaves, with a plan that verifies. */
  size_t n;
  struct ce_built B;
  uint64_t *offs;
  struct planner_tensor *t = ce_xla_trace(20000, 4, &n, &offs, 1);
  uint64_t arena = ce_greedy_problem(&B, t, n, offs), work = 0;
  ck_assert_int_eq(planner__stair(&B.p, offs, &arena), 0);
  uint64_t limit = (uint64_t)PLANNER_DEFAULT_EFFORT * 400000;
  ck_assert_int_eq(planner__squeeze(&B.p, offs, &arena, limit, &work), 0);
  uint64_t squeezed = arena;
  ck_assert_uint_gt(squeezed, B.p.lb);
  ck_assert_int_eq(planner__lns(&B.p, offs, &arena), 0);
  ce_check_below_and_free(&B, offs, arena, squeezed, t, offs);
}
END_TEST

START_TEST(test_lns_runner_up)
{
  /* An XLA-like trace of 40 000 tensors (seed 5) whose best plan stays
   * 0.65% above the load bound after the squeeze and ruin and recreate:
   * ruin and recreate on the staircase trials' runner-up takes `best` at
   * the default effort below 1.005 x LB, with a plan that verifies. */
  uint64_t lb, arena = ce_best_on_trace(40000, 5, &lb);
  ck_assert_uint_lt(arena, lb + lb / 200);
}
END_TEST

uint64_t ce_best_on_trace(size_t size, uint64_t seed, uint64_t *lb)
{
  return ce_best_on_shape(TRACEGEN_IOPDDL, size, seed, lb);
}

uint64_t ce_best_on_shape(int shape, size_t size, uint64_t seed, uint64_t *lb)
{
  size_t n;
  struct planner_tensor *t =
      tracegen_make((enum tracegen_shape)shape, size, seed, &n);
  ck_assert_ptr_nonnull(t);
  struct planner_options o;
  struct planner_plan a;
  ce_opts(&o, 1, 0, PLANNER_DEFAULT_EFFORT);
  o.algo = PLANNER_ALGO_BEST;
  planner_plan_init(&a);
  ce_run_ok(t, n, &o, &a);
  uint64_t arena = a.arena_bytes;
  *lb = a.lower_bound_bytes;
  planner_plan_cleanup(&a);
  free(t);
  return arena;
}

void ce_add_lns_tests(Suite *s)
{
  TCase *tc = tcase_create("lns");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_lns_lowers_spoiled);
  tcase_add_test(tc, test_lns_aligned);
  tcase_add_test(tc, test_lns_after_squeeze);
  tcase_add_test(tc, test_lns_runner_up);
  suite_add_tcase(s, tc);
}

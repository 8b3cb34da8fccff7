/*
 * check_exact_squeeze.c - the squeeze of the windowed re-planning
 * (planner/search/improve_squeeze.c) on spoiled plans of a generated
 * trace, and its region step (planner/search/improve_region.c); with the
 * helpers that set up greedy-size's plan of a trace, which the other
 * parts of the exact planner's suite use too. Its tests belong to the
 * test case "large" of check_exact_large.c.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_exact.h"
#include "heuristics.h"
#include "improve.h"
#include "improve_int.h"
#include "tracegen.h"

/* B's problem for trace t of n tensors (alignment 1, effort 100) and
 * greedy-size's plan of it in offs; returns that plan's arena. */
uint64_t ce_greedy_problem(struct ce_built *B, const struct planner_tensor *t,
                           size_t n, uint64_t *offs)
{
  B->g.tensors = t;
  B->g.n_tensors = n;
  ce_opts(&B->o, 1, 0, 100);
  ck_assert_int_eq(planner__prob_init(&B->p, &B->g, &B->o), 0);
  ck_assert_int_eq(planner__heuristic(&B->p, PLANNER_ALGO_GREEDY_SIZE, offs),
                   0);
  return planner__arena_of(&B->p, offs);
}

uint64_t ce_greedy_aligned(struct ce_built *B, uint64_t alignment,
                           uint64_t *offs)
{
  planner__prob_cleanup(&B->p);
  ce_opts(&B->o, alignment, 0, 100);
  ck_assert_int_eq(planner__prob_init(&B->p, &B->g, &B->o), 0);
  ck_assert_int_eq(planner__heuristic(&B->p, PLANNER_ALGO_GREEDY_SIZE, offs),
                   0);
  return planner__arena_of(&B->p, offs);
}

/* Asserts that offs is a valid plan of B's graph with arena arena. */
void ce_check_verifies(const struct ce_built *B, uint64_t *offs,
                       uint64_t arena)
{
  ck_assert_uint_eq(arena, planner__arena_of(&B->p, offs));
  struct planner_plan q;
  planner_plan_init(&q);
  q.offsets = offs;
  q.n_offsets = B->g.n_tensors;
  q.arena_bytes = arena;
  char err[ARENA_ERR_LEN];
  ck_assert_msg(planner_verify(&B->g, &B->o, &q, err) == 0, "%s", err);
}

/* Asserts that plan p of B's graph, of arena arena, is valid and below
 * above; then frees B's problem, the trace t and offs. */
void ce_check_below_and_free(struct ce_built *B, uint64_t *p, uint64_t arena,
                             uint64_t above, struct planner_tensor *t,
                             uint64_t *offs)
{
  ck_assert_uint_lt(arena, above);
  ce_check_verifies(B, p, arena);
  planner__prob_cleanup(&B->p);
  free(t);
  free(offs);
}

int ce_stop_now(void *ctx)
{
  (void)ctx;
  return 1;
}

/* Points p at options o, a copy of p's with stop as the stop callback;
 * returns the options p had. */
const struct planner_options *
ce_with_stop(struct planner__prob *p, struct planner_options *o,
             planner_stop_cb stop, void *ctx)
{
  const struct planner_options *keep = p->o;
  *o = *keep;
  o->stop = stop;
  o->stop_ctx = ctx;
  p->o = o;
  return keep;
}

/* Runs planner__squeeze() on a copy of plan offs (arena *arena) of the
 * problem p within limit units, with stop as the stop callback; returns
 * its code, the new plan in out and its arena in *arena. */
static int squeeze_copy(struct planner__prob *p, const uint64_t *offs,
                        uint64_t *out, uint64_t *arena, uint64_t limit,
                        planner_stop_cb stop, void *ctx)
{
  struct planner_options o;
  const struct planner_options *keep = ce_with_stop(p, &o, stop, ctx);
  memcpy(out, offs, p->n * sizeof *out);
  uint64_t work = 0;
  int rc = planner__squeeze(p, out, arena, limit, &work);
  p->o = keep;
  ck_assert_uint_le(work, limit);
  return rc;
}

/* The XLA-like trace of 10 000 tensors of the squeeze tests (*n of
 * them, returned), B's problem of it and greedy-size's plan in *offs
 * (room for three plans, freed by the caller), its arena in *heur. */
struct planner_tensor *ce_squeeze_setup(struct ce_built *B, size_t *n,
                                        uint64_t **offs, uint64_t *heur)
{
  struct planner_tensor *t = tracegen_make(TRACEGEN_IOPDDL, 10000, 1, n);
  ck_assert_ptr_nonnull(t);
  *offs = malloc(3 * *n * sizeof **offs);
  ck_assert_ptr_nonnull(*offs);
  *heur = ce_greedy_problem(B, t, *n, *offs);
  return t;
}

/* Squeezes the spoiled plan offs (arena spoiled) of B's problem into
 * the second plan of offs and again into the third with a stop callback
 * that sleeps on every poll:
 * asserts that it ends strictly below spoiled, never above heur, with a
 * plan that verifies, the same both times. */
static void check_squeezed(struct ce_built *B, uint64_t *offs,
                           uint64_t spoiled, uint64_t heur)
{
  uint64_t *a = offs + B->g.n_tensors, *b = offs + 2 * B->g.n_tensors;
  uint64_t arena = spoiled, limit = 100ull * 400000;
  ck_assert_int_eq(squeeze_copy(&B->p, offs, a, &arena, limit, NULL, NULL),
                   0);
  ck_assert_uint_lt(arena, spoiled);
  ck_assert_uint_le(arena, heur);
  ce_check_verifies(B, a, arena);
  int polls = 0;
  uint64_t again = spoiled;
  ck_assert_int_eq(squeeze_copy(&B->p, offs, b, &again, limit, ce_slow_poll,
                                &polls), 0);
  ck_assert_uint_eq(again, arena);
  ck_assert_int_eq(memcmp(a, b, B->g.n_tensors * sizeof *a), 0);
  ck_assert_int_gt(polls, 0);
}

START_TEST(test_squeeze_lowers_top)
{
  /* An XLA-like trace of 10 000 tensors planned by greedy-size, then
   * spoiled: one short-lived tensor moved to the top of the arena, a valid
   * plan whose top it alone reaches. The squeeze re-plans the window
   * around it and must end strictly below the spoiled arena (and never
   * above greedy-size's), with a plan that verifies, the same on every
   * run and when every poll sleeps; a stop callback that fires cancels
   * it and leaves the plan as it was. */
  size_t n;
  struct ce_built B;
  uint64_t *offs, heur;
  struct planner_tensor *t = ce_squeeze_setup(&B, &n, &offs, &heur);
  size_t j = n;
  for (size_t i = 0; i < n; i++)
    if (t[i].size > 1000 && t[i].last - t[i].first < 10 &&
        t[i].first > 1000) {
      j = i;
      break;
    }
  ck_assert_uint_lt(j, n);
  offs[j] = heur;
  uint64_t spoiled = heur + t[j].size;
  check_squeezed(&B, offs, spoiled, heur);
  /* Cancelled at its first poll: ARENA_ECANCELED, the plan unchanged. */
  uint64_t again = spoiled, *b = offs + 2 * n;
  ck_assert_int_eq(squeeze_copy(&B.p, offs, b, &again, 100ull * 400000,
                                ce_stop_now, NULL), ARENA_ECANCELED);
  ck_assert_uint_eq(again, spoiled);
  ck_assert_int_eq(memcmp(offs, b, n * sizeof *b), 0);
  planner__prob_cleanup(&B.p);
  free(t);
  free(offs);
}
END_TEST

START_TEST(test_squeeze_ejects)
{
  /* The same trace, spoiled otherwise: a long-lived tensor moved to the
   * top of the arena, and a short-lived one that lives in the middle of
   * its lifetime moved into the slot it left. No gap along the long
   * tensor's lifetime lets it down past the windows at its ends; the
   * ejection moves it back over the short one, which then goes to the
   * lowest offset where it fits. The squeeze must end strictly below the
   * spoiled arena, never above greedy-size's, with a plan that verifies,
   * the same when every poll sleeps. */
  size_t n;
  struct ce_built B;
  uint64_t *offs, heur;
  struct planner_tensor *t = ce_squeeze_setup(&B, &n, &offs, &heur);
  size_t j = n, s = n;
  for (size_t i = 0; i < n && j == n; i++)
    if (t[i].size > 1000 && t[i].last - t[i].first > 6000)
      j = i;
  ck_assert_uint_lt(j, n);
  uint32_t third = (t[j].last - t[j].first) / 3;
  for (size_t i = 0; i < n && s == n; i++)
    if (t[i].size > 0 && t[i].size <= t[j].size &&
        t[i].last - t[i].first < 10 && t[i].first > t[j].first + third &&
        t[i].last < t[j].last - third)
      s = i;
  ck_assert_uint_lt(s, n);
  offs[s] = offs[j];
  offs[j] = heur;
  check_squeezed(&B, offs, heur + t[j].size, heur);
  planner__prob_cleanup(&B.p);
  free(t);
  free(offs);
}
END_TEST

/* Runs the squeeze's region step once on plan offs (arena top) of
 * problem p within limit units, with stop as the stop callback; the plan
 * it leaves goes to out, *better tells whether it ended below top.
 * Returns its code. */
static int region_once(struct planner__prob *p, const uint64_t *offs,
                       uint64_t *out, uint64_t top, int *better,
                       planner_stop_cb stop, void *ctx)
{
  struct planner_options o;
  const struct planner_options *keep = ce_with_stop(p, &o, stop, ctx);
  uint64_t limit = 100ull * 400000;
  struct imp I;
  int rc = improve__start(&I, p, 0, limit);
  memcpy(out, offs, p->n * sizeof *out);
  for (uint32_t k = 0; !rc && k < I.m; k++)
    I.off[k] = offs[I.gi[k]];
  *better = 0;
  if (!rc)
    rc = improve__region_step(&I, top, better);
  for (uint32_t k = 0; k < I.m; k++)
    out[I.gi[k]] = I.off[k];
  ck_assert_uint_le(I.work, limit);
  improve__free(&I);
  p->o = keep;
  return rc;
}

START_TEST(test_region_step)
{
  /* The same trace's staircase plan, whose top is reached by small
   * tensors that live thousands of operators. The region step re-packs
   * a band of memory below the top, joined to a deeper window of time,
   * with everything else fixed: it must end strictly below the
   * staircase plan with a plan that verifies, the same when every poll
   * sleeps; a stop callback that fires cancels it with the plan
   * unchanged. The same with every offset aligned to 64 bytes. */
  size_t n;
  struct ce_built B;
  uint64_t *offs, heur;
  struct planner_tensor *t = ce_squeeze_setup(&B, &n, &offs, &heur);
  uint64_t stair = heur, *a = offs + n, *b = offs + 2 * n;
  ck_assert_int_eq(planner__stair(&B.p, offs, &stair), 0);
  ck_assert_uint_lt(stair, heur);
  int better, polls = 0;
  ck_assert_int_eq(region_once(&B.p, offs, a, stair, &better, NULL, NULL),
                   0);
  ck_assert_int_eq(better, 1);
  uint64_t arena = planner__arena_of(&B.p, a);
  ck_assert_uint_lt(arena, stair);
  ce_check_verifies(&B, a, arena);
  ck_assert_int_eq(region_once(&B.p, offs, b, stair, &better, ce_slow_poll,
                               &polls), 0);
  ck_assert_int_eq(better, 1);
  ck_assert_int_eq(memcmp(a, b, n * sizeof *a), 0);
  ck_assert_int_gt(polls, 0);
  ck_assert_int_eq(region_once(&B.p, offs, b, stair, &better, ce_stop_now,
                               NULL), ARENA_ECANCELED);
  ck_assert_int_eq(memcmp(offs, b, n * sizeof *b), 0);
  /* With every offset aligned to 64 bytes: still strictly below, every
   * placement aligned (the plan verifies). */
  stair = ce_greedy_aligned(&B, 64, offs);
  ck_assert_int_eq(planner__stair(&B.p, offs, &stair), 0);
  ck_assert_int_eq(region_once(&B.p, offs, a, stair, &better, NULL, NULL),
                   0);
  ck_assert_int_eq(better, 1);
  arena = planner__arena_of(&B.p, a);
  ce_check_below_and_free(&B, a, arena, stair, t, offs);
}
END_TEST

void ce_add_squeeze_tests(TCase *tc)
{
  tcase_add_test(tc, test_squeeze_lowers_top);
  tcase_add_test(tc, test_squeeze_ejects);
  tcase_add_test(tc, test_region_step);
}

/*
 * improve_joint.c - the joint re-plan of the high-load stretch: the
 * stretch of time where the load comes near the load bound is packed on
 * its own, as one window, at a target just above the bound, and the rest
 * of the plan is then built around it window by window.
 *
 * The windowed re-planning (improve.c) packs its peak window of a few
 * hundred spans nearly perfectly, but on the XLA-like traces the load
 * stays within a percent of the bound for a thousand operators or more,
 * and the seams between its windows there cost a few tenths of a percent
 * that neither the squeeze nor ruin and recreate win back. Cut to that
 * stretch (a relaxation), the tensors pack within 1.001 times the bound,
 * and the load outside it leaves room for the rest.
 *
 * DESIGN
 *  The stretch is the spans from the first to the last whose load is at
 *  least level = LB - LB / div (the span of the highest load when no
 *  span reaches it), div the first of level_divs (1/200 of the bound
 *  below it); one of fewer than JOINT_MIN_SPANS spans is left alone.
 *  It is planned as one window, in the manner of the peak window of
 *  improve.c: the tensors live through all of it are stacked
 *  at the bottom in the staircase (latest last use first), which the
 *  window sees as one fixed block, and the other tensors live in it, cut
 *  to it, are planned by tflm-greedy (the search explores the same
 *  nodes from any plan that does not fit, so one heuristic is tried, for
 *  the chance that it fits) and then by the exact
 *  search in capacity mode (improve__plan_window() with I->fit) at the
 *  target LB + LB / JOINT_TARGET_DIV, with all of the budget. Stacked,
 *  the tensors that live through the stretch leave the search only the
 *  rest (a third to two thirds of the stretch's tensors on the XLA-like
 *  traces), and one block in their place, not hundreds of pinned
 *  obstacles, keeps each of its placements cheap; asked whether the
 *  window fits the target, the search finds such a plan at a fraction of
 *  what minimisation, which tries the bound first, spends. When the
 *  staircase holds less than LB - LB / JOINT_STAIR_DIV, what is left is
 *  more than the search packs within the budget (on the SOMAS-like
 *  traces the staircase holds about half the bound), the staircase is
 *  undone and the next, higher level of level_divs cuts a shorter
 *  stretch, whose staircase holds more (on somas-60000 seed 4, 58 % of
 *  the bound at 1/200 below it, 92 % at 1/1000); when no level's
 *  staircase is high enough, or the window does not fit, the pass stops
 *  and the plan stands.
 *  Every tensor live in the stretch is then committed, over its whole
 *  life, and the rest is planned in two windows: the tensors that start
 *  after the stretch, then those that end before it, each among the
 *  committed tensors it meets as obstacles cut to it, by the window's
 *  heuristics in turn, tflm-greedy first, until one fits the target
 *  (then the exact search with a share of the budget, as in improve.c).
 *  A heuristic that sees all of one side at once fits it where windows
 *  of a few hundred spans, committed one after another, leave no hole
 *  next to the stretch for a large tensor just outside it.
 *
 *  Validity. The stretch's window holds every tensor live in it (the
 *  staircase as a fixed block below all the others). Every other tensor
 *  starts after the stretch or ends before it, so it lies in one of the
 *  two side windows, with every committed tensor it meets in time as an
 *  obstacle; tensors of the two sides never meet. planner_run() verifies
 *  the plan as usual, and it replaces the given one only when its arena
 *  is lower.
 *
 *  Effort. Like ruin and recreate, the pass has a budget of its own,
 *  JOINT_UNITS_PER_TENSOR work units per sized tensor, not a share of
 *  the effort (which the squeeze has spent by then); the windows count
 *  their work as in improve.c, and the pass is abandoned, the plan as it
 *  was, when the next window would pass the budget or a window's arena
 *  reaches the given one: deterministic, no clock.
 */
#include "improve.h"
#include "improve_int.h"

#include <stdlib.h>

#include "exact_int.h"

/* Work units per sized tensor the pass may do. */
#define JOINT_UNITS_PER_TENSOR 4000u
/* The stretch: load at least LB - LB / div, for the divisors in turn
 * while the stretch's staircase is too low (JOINT_STAIR_DIV): a higher
 * level cuts a shorter stretch, whose staircase holds more of the bound
 * (docs/exact.md). */
static const uint32_t level_divs[] = {200u, 1000u, 2000u};
#define N_LEVELS (sizeof level_divs / sizeof *level_divs)
/* plan_stretch(): the staircase is too low for the search. */
#define JOINT_LOW 2
/* The window of the stretch aims at LB + LB / JOINT_TARGET_DIV. */
#define JOINT_TARGET_DIV 1000u
/* A stretch of fewer spans is left alone: it fits in the passes' peak
 * window (200 spans on either side of the most loaded one), which plans
 * it as one window already. */
#define JOINT_MIN_SPANS 200u
/* The stretch is searched only when its staircase reaches at least
 * LB - LB / JOINT_STAIR_DIV: else the search is left with more than it
 * packs within the budget (docs/exact.md). */
#define JOINT_STAIR_DIV 4u

/* The first and last span whose load is at least level, into *a and *b
 * (both the span of the highest load when none reaches it). Returns 0 or
 * ARENA_ENOMEM. */
static int stretch(struct imp *I, uint64_t level, uint32_t *a, uint32_t *b)
{
  uint64_t *d = calloc((size_t)I->S + 1, sizeof *d);
  if (!d)
    return ARENA_ENOMEM;
  for (uint32_t k = 0; k < I->m; k++) {
    uint64_t s = I->p->t[I->gi[k]].size;
    d[I->slo[k]] += s;
    d[I->shi[k] + 1] -= s; /* wraps; the running sum does not */
  }
  uint64_t l = 0, most = 0;
  uint32_t at = 0;
  *a = NONE;
  *b = 0;
  for (uint32_t s = 0; s < I->S; s++) {
    l += d[s];
    if (l >= level) {
      *a = *a == NONE ? s : *a;
      *b = s;
    }
    if (l > most) {
      most = l;
      at = s;
    }
  }
  if (*a == NONE)
    *a = *b = at;
  free(d);
  I->work += I->m + I->S;
  return 0;
}

/* Plans the stretch [a, b] of I at the target, into I->off, and commits
 * every tensor live in it. Returns 0, JOINT_LOW (the staircase holds too
 * little of the load bound for the search; it is undone), 1 (no fit, or
 * the budget), or an error. */
static int plan_stretch(struct imp *I, uint32_t a, uint32_t b,
                        uint64_t target)
{
  int rc = improve__staircase(I, a, b);
  if (rc)
    return rc;
  uint64_t stair = 0;
  for (uint32_t q = 0; q < I->nact; q++) {
    uint32_t k = I->act[q];
    uint64_t e = I->off[k] + I->p->t[I->gi[k]].size;
    stair = e > stair ? e : stair;
  }
  I->work += I->nact;
  if (stair < I->p->lb - I->p->lb / JOINT_STAIR_DIV) {
    /* Too much left for the search: the staircase is undone. */
    for (uint32_t q = 0; q < I->nact; q++)
      I->done[I->act[q]] = 0;
    I->nact = 0;
    return JOINT_LOW;
  }
  uint32_t ns = improve__window(I, a, b);
  I->cap = target;
  I->fit = 1;
  I->first = PLANNER_ALGO_TFLM_GREEDY; /* the cheapest start */
  rc = improve__plan_window(I, ns);
  I->first = PLANNER_ALGO_BEST;
  I->fit = 0;
  if (rc)
    return rc;
  if (I->cap > target)
    return 1;
  uint64_t top = I->p->lb;
  for (uint32_t j = 0; j < ns; j++) {
    uint32_t k = I->wk[j];
    uint64_t e = I->wt[j].size;
    if (k != NONE) {
      I->off[k] = I->wbest[j];
      I->done[k] = 1;
      I->act[I->nact++] = k;
      e += I->wbest[j];
    } else {
      e += (uint64_t)I->wt[j].pinned;
    }
    top = e > top ? e : top;
  }
  I->work += ns;
  /* The sides aim at the target: once there, the first heuristic that
   * fits it ends the side's planning. */
  I->cap = target > top ? target : top;
  return 0;
}

/* Plans the uncommitted tensors of I that live in spans [a, b], all of
 * them there, among the committed ones live there as obstacles cut to
 * [a, b], by the heuristics of a window (improve__plan_window()), and
 * commits them when the arena stays below I->given. Returns 0
 * (committed), 1 (not below, or the budget; nothing committed) or an
 * error. */
static int plan_side(struct imp *I, uint32_t a, uint32_t b)
{
  I->nact = 0;
  for (uint32_t k = 0; k < I->m; k++)
    if (I->done[k] && I->slo[k] <= b && I->shi[k] >= a)
      I->act[I->nact++] = k;
  I->work += I->m;
  uint32_t ns = improve__window(I, a, b);
  I->first = PLANNER_ALGO_TFLM_GREEDY;
  int rc = improve__plan_window(I, ns);
  I->first = PLANNER_ALGO_BEST;
  if (rc)
    return rc;
  for (uint32_t j = 0; j < ns; j++) {
    uint32_t k = I->wk[j];
    if (k != NONE) {
      I->off[k] = I->wbest[j];
      I->done[k] = 1;
    }
  }
  I->work += ns;
  return 0;
}

int planner__joint(const struct planner__prob *p, uint64_t *offsets,
                   uint64_t *arena)
{
  uint64_t target = p->lb + p->lb / JOINT_TARGET_DIV;
  if (p->n_pinned || *arena <= target)
    return 0;
  struct imp I;
  uint64_t m = 0;
  for (size_t i = 0; i < p->n; i++)
    m += p->t[i].size != 0;
  int rc = improve__start(&I, p, 0, JOINT_UNITS_PER_TENSOR * m);
  I.given = *arena;
  uint32_t a = 0, b = 0;
  for (unsigned q = 0; q < N_LEVELS && !rc; q++) {
    rc = stretch(&I, p->lb - p->lb / level_divs[q], &a, &b);
    if (!rc && b - a + 1 < JOINT_MIN_SPANS)
      rc = 1;
    if (!rc)
      rc = plan_stretch(&I, a, b, target);
    if (rc == JOINT_LOW)
      rc = q + 1 < N_LEVELS ? 0 : 1;
    else
      break;
  }
  /* The tensors after the stretch, then those before it. */
  if (!rc && b + 1 < I.S)
    rc = plan_side(&I, b + 1, I.S - 1);
  if (!rc && a > 0)
    rc = plan_side(&I, 0, a - 1);
  if (!rc)
    improve__keep(&I, offsets, arena);
  improve__free(&I);
  return rc == 1 ? 0 : rc;
}

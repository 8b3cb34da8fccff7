/*
 * search.c - the search's orchestrator: what `best` runs after its
 * heuristics when their arena is above the lower bound, in order, each
 * step with a budget in work units and each handing back a valid plan no
 * worse than the one it got.
 *
 * What it is for: planner__exact() (search.h) is the only entry of
 * planner/search/. On graphs of IMPROVE_MIN_TENSORS free tensors or more
 * it first runs the improvement passes (improve()), then, on every graph,
 * the exact search (planner__exact_within(), exact.c). Nothing below
 * calls back into this file: the passes and the exact search are
 * services it calls.
 * What it may use: planner/core/, planner/heuristics/ and the files of
 * this folder. docs/exact.md explains the method.
 *
 * FILES
 *  search.c            this orchestrator and the effort's conversion
 *  improve.c           windowed re-planning and the helpers every pass
 *                      shares (improve_int.h)
 *  improve_stair.c     staircase plans
 *  improve_squeeze.c   the squeeze (with improve_region.c)
 *  improve_lns.c       ruin and recreate
 *  improve_joint.c     the joint re-plan of the high-load stretch
 *  exact.c             the exact search's drivers (exact_int.h lists the
 *                      exact_*.c files of its setup and search)
 *
 * ORDER OF THE PASSES (improve())
 *  Windowed passes. Up to three passes (improve.c) run in turn, each
 *  with the whole of what is left of the effort, with (ahead, step) =
 *  (200, 100), (200, 50) and (400, 100) spans, until the arena meets the
 *  load bound or the effort cannot pay for another pass. Each builds its
 *  plan from scratch. When a pass stopped at its peak window (improve.c:
 *  the window could not be planned below the arena), the next pass, if
 *  it has the same `ahead` and so the same peak window, retries it with
 *  a larger share of the effort.
 *
 *  Before the passes, the staircase plans (improve_stair.c, not counted
 *  in work units) may lower the arena the passes have to beat. When one
 *  of them did, or at least one pass ran, and the arena is still above
 *  the load bound, the squeeze (improve_squeeze.c) repairs the plan where
 *  its top is reached, with what is left of the effort. If effort is
 *  still left then (the squeeze stopped because no step lowered the
 *  top), it squeezes the staircase trials' runner-up, the best plan among
 *  the others they saw, with the rest, which replaces the plan when it
 *  ends lower: how far the squeeze gets depends much on the plan it
 *  starts from. Last, while the arena is still above the load bound,
 *  ruin and recreate (improve_lns.c), with a fixed budget of its own,
 *  takes the sideways moves that the squeeze's strict descent cannot:
 *  on the plan, then on the runner-up (as the squeeze left it), which
 *  replaces the plan when it ends lower. Then, while the arena is still
 *  above 1.001 times the load bound, the joint re-plan of the stretch of
 *  high load (improve_joint.c, a budget of its own too) packs that
 *  stretch as one window at that target and plans the rest around it;
 *  it runs even when no pass ran and the staircase plans did not help,
 *  since it does not draw on the effort.
 *
 *  Then the exact search, with what is left of the effort: minimisation.
 *  With a capacity, first the capacity question (the passes while the
 *  plan is above it, then the exact search in capacity mode); unless it
 *  finds a plan that meets the bound, the minimisation then runs as
 *  without a capacity, with the effort again, and the smaller plan is
 *  kept (decide()), so that a capacity never makes the plan larger.
 */
#include "search.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "improve.h"

/* Work units per effort unit (EFFORT in planner.h). A unit is one step of
 * the setup's or the search's inner loops: a tensor scanned for the next
 * candidate, a section or neighbour updated by a placement, a tensor
 * collected or sorted by the stacking check, an entry of a setup sort or
 * sweep. On a 2-core x86-64 machine the setup and the search run at 410
 * to 960 units per microsecond, so an effort unit is nominally about a
 * millisecond (0.4 to 1 ms measured; docs/exact.md). The rate is one
 * constant for every build: a sanitizer build explores exactly the same
 * tree as a release build, only more slowly. */
#define EXACT_UNITS_PER_EFFORT 400000u

/* Graphs with fewer sized free tensors are left to the exact search,
 * which does better on them within the same effort. */
#define IMPROVE_MIN_TENSORS 4096u
/* The passes, in order: spans a window reaches ahead of the committed
 * part, and spans committed per window. Small windows are easier for the
 * exact search, larger ones leave fewer seams; which does better depends
 * on the trace (docs/exact.md, "Windowed re-planning"). */
static const struct {
  uint32_t ahead, step;
} passes[] = {{200, 100}, {200, 50}, {400, 100}};
#define N_PASSES (sizeof passes / sizeof *passes)
/* Work units per sized tensor that the effort must leave for a pass to
 * start, so that the default effort affords a pass on graphs of up to
 * 20 000 tensors (docs/exact.md). A pass that the effort stops half way
 * is dropped, its work wasted, so one that cannot come near its end
 * should not start. */
#define IMPROVE_UNITS_PER_TENSOR 800u

/* Microseconds since t0, for search_us only. */
static uint64_t elapsed_us(const struct timespec *t0)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)(t.tv_sec - t0->tv_sec) * 1000000u +
         (uint64_t)((t.tv_nsec - t0->tv_nsec) / 1000);
}

/* Re-plans p with the improvement passes, in the order of ORDER OF THE
 * PASSES above, and keeps the new plan when its arena is below *arena,
 * the arena of offsets. offsets (graph order) is borrowed and always
 * holds a valid plan: it is only replaced by a whole better plan. Runs
 * only when p has at least IMPROVE_MIN_TENSORS sized free tensors; the
 * windowed passes and the squeeze draw on what is left of work_limit
 * (adding the units done to *work, never past work_limit), the others
 * have budgets of their own. Returns 0 (with *arena updated), ARENA_ENOMEM
 * (offsets unchanged) or ARENA_ECANCELED (the stop callback fired;
 * offsets unchanged). */
static int improve(const struct planner__prob *p, uint64_t *offsets,
                   uint64_t *arena, uint64_t work_limit, uint64_t *work)
{
  uint64_t m = 0, nfree = 0;
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].size) {
      m++;
      nfree += p->t[i].pinned == PLANNER_NOT_PINNED;
    }
  if (nfree < IMPROVE_MIN_TENSORS)
    return 0;
  /* The staircase plans first: they are not counted in work units. */
  uint64_t given = *arena, alt_arena = UINT64_MAX;
  uint64_t *alt = malloc(p->n * sizeof *alt);
  if (!alt)
    return ARENA_ENOMEM;
  int rc = planner__stair_keep(p, offsets, arena, alt, &alt_arena);
  int ran = *arena < given;
  uint64_t need = (uint64_t)IMPROVE_UNITS_PER_TENSOR * m;
  int missed = 0;
  for (unsigned q = 0; q < N_PASSES && !rc && *arena > p->lb; q++) {
    uint64_t left = *work < work_limit ? work_limit - *work : 0;
    if (left < need)
      break;
    ran = 1;
    int retry = missed && passes[q].ahead == passes[q - 1].ahead;
    rc = planner__windows(p, offsets, arena, work_limit, work,
                          passes[q].ahead, passes[q].step, retry, &missed);
  }
  if (!rc && ran && *arena > p->lb)
    rc = planner__squeeze(p, offsets, arena, work_limit, work);
  /* The runner-up, with what the squeeze left. */
  if (!rc && ran && *arena > p->lb && alt_arena != UINT64_MAX &&
      *work < work_limit) {
    rc = planner__squeeze(p, alt, &alt_arena, work_limit, work);
    if (!rc && alt_arena < *arena) {
      memcpy(offsets, alt, p->n * sizeof *offsets);
      *arena = alt_arena;
    }
  }
  /* Ruin and recreate, with a budget of its own, on the plan and then
   * on the runner-up, which replaces it when it ends lower. */
  if (!rc && ran && *arena > p->lb)
    rc = planner__lns(p, offsets, arena);
  if (!rc && ran && *arena > p->lb && alt_arena != UINT64_MAX) {
    rc = planner__lns(p, alt, &alt_arena);
    if (!rc && alt_arena < *arena) {
      memcpy(offsets, alt, p->n * sizeof *offsets);
      *arena = alt_arena;
    }
  }
  /* The joint re-plan of the stretch, with a budget of its own; it runs
   * only while the arena is above 1.001 x LB, and also when the effort
   * afforded no pass (graphs of 60 000 tensors at the default effort),
   * as it does not draw on the effort. */
  if (!rc)
    rc = planner__joint(p, offsets, arena);
  free(alt);
  return rc;
}

/* The minimisation: improve() and then the exact search, from the plan
 * in offsets (res), with a budget of limit work units; exactly what
 * planning without a capacity runs, as p's options are read without it.
 * Returns as planner__exact_within(). */
static int minimise(const struct planner__prob *p, uint64_t *offsets,
                    struct planner_plan *res, uint64_t limit)
{
  struct planner_options mo = *p->o;
  struct planner__prob mp = *p; /* the same problem, without capacity */
  uint64_t work = 0;
  mo.capacity = 0;
  mp.o = &mo;
  int rc = 0;
  if (res->arena_bytes > res->lower_bound_bytes)
    rc = improve(&mp, offsets, &res->arena_bytes, limit, &work);
  if (!rc)
    rc = planner__exact_within(&mp, offsets, res, 0, limit, &work);
  /* A plan at the bound is optimal also when the passes found it and
   * the search did not run (its setup was not paid for). */
  if (!rc)
    res->proven_optimal = res->arena_bytes <= res->lower_bound_bytes;
  return rc;
}

/* The capacity question, with up to twice the effort (limit work units
 * each way), from the heuristics' plan in offsets (res). First the
 * capacity search: the improvement passes while the plan is above the
 * capacity, then the exact search in capacity mode, which finds a plan
 * within it, proves that none exists, or runs out. A plan it finds that
 * meets the bound is optimal, and ends the question. Otherwise the
 * minimisation runs as well, from the heuristics' plan and exactly as
 * planning without the capacity does, and the smaller of the two plans is
 * kept, the minimisation's on a tie: so the plan is never larger than
 * planning without the capacity gives, and the shortfall of one that
 * does not fit is the best plan's. The bound is the larger one proven;
 * fit and optimality are judged on the plan kept. Returns as
 * planner__exact_within(). */
static int decide(const struct planner__prob *p, uint64_t *offsets,
                  struct planner_plan *res, uint64_t limit)
{
  uint64_t cap = p->o->capacity, work = 0;
  uint64_t *fit_off = malloc(p->n * sizeof *fit_off);
  if (!fit_off)
    return ARENA_ENOMEM;
  memcpy(fit_off, offsets, p->n * sizeof *fit_off);
  struct planner_plan c = *res; /* the figures only: its offsets stay
                                   res's, and are never touched */
  int rc = 0;
  if (c.arena_bytes > c.lower_bound_bytes && c.arena_bytes > cap)
    rc = improve(p, fit_off, &c.arena_bytes, limit, &work);
  if (!rc)
    rc = planner__exact_within(p, fit_off, &c, 0, limit, &work);
  int found = !rc && c.fit == PLANNER_FIT_YES;
  if (!rc && !(found && c.arena_bytes <= c.lower_bound_bytes)) {
    struct planner_plan m = *res; /* the same: figures only */
    m.nodes_explored = 0;
    rc = minimise(p, offsets, &m, limit);
    if (!rc) {
      found = found && c.arena_bytes < m.arena_bytes;
      c.nodes_explored += m.nodes_explored;
      if (!found)
        c.arena_bytes = m.arena_bytes;
      if (m.lower_bound_bytes > c.lower_bound_bytes) {
        c.lower_bound_bytes = m.lower_bound_bytes;
        c.bound = m.bound;
      }
    }
  }
  if (!rc) {
    if (found)
      memcpy(offsets, fit_off, p->n * sizeof *offsets);
    res->arena_bytes = c.arena_bytes;
    res->lower_bound_bytes = c.lower_bound_bytes;
    res->bound = c.bound;
    res->nodes_explored = c.nodes_explored;
    res->proven_optimal = c.arena_bytes <= c.lower_bound_bytes;
    res->fit = c.arena_bytes <= cap            ? PLANNER_FIT_YES
               : c.lower_bound_bytes > cap ? PLANNER_FIT_NO
                                           : PLANNER_FIT_UNKNOWN;
  }
  free(fit_off);
  return rc;
}

int planner__exact(const struct planner__prob *p, uint64_t *offsets,
                   struct planner_plan *res)
{
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const struct planner_options *o = p->o;
  uint64_t effort = o->effort ? o->effort : PLANNER_DEFAULT_EFFORT;
  uint64_t limit = effort * EXACT_UNITS_PER_EFFORT;
  int rc = o->capacity ? decide(p, offsets, res, limit)
                       : minimise(p, offsets, res, limit);
  res->search_us = elapsed_us(&t0);
  return rc;
}

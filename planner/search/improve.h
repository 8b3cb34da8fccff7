/*
 * improve.h - the improvement passes of planner/search/, as the
 * orchestrator (search.c) calls them, and the exact search with an
 * explicit budget, as the passes call it.
 *
 * Included only by search.c, exact.c and improve*.c (and the tests of
 * the passes). The passes never call search.c. Both count their work in the
 * exact planner's work units (docs/exact.md, "Effort"), so that one
 * effort bounds them together and no clock is ever read.
 */
#ifndef ARENA_IMPROVE_H
#define ARENA_IMPROVE_H

#include <stdint.h>

#include "planner_int.h"

/* improve.c. One windowed pass (docs/exact.md, "Windowed re-planning"):
 * a whole new plan of p, built window by window outward from its most
 * loaded point, with windows reaching `ahead` spans beyond the committed
 * part and committing `step` spans each; kept in offsets (graph order,
 * borrowed, always a valid plan) only when its arena is below *arena,
 * the arena of offsets. The caller (search.c) checked that p has enough
 * free tensors and the effort enough units. Adds the units done to
 * *work, never past work_limit; a pass the effort stops half way is
 * dropped. Sets *peak_missed to 1 when the pass stopped at its peak
 * window, which it could not plan below *arena, to 0 otherwise; a pass
 * with the same `ahead` has the same peak window, and should then run
 * with retry = 1: its peak window's exact search gets a larger share of
 * what is left. Returns 0 (with *arena updated), ARENA_ENOMEM or
 * ARENA_ECANCELED (offsets unchanged in both cases). */
int planner__windows(const struct planner__prob *p, uint64_t *offsets,
                     uint64_t *arena, uint64_t work_limit, uint64_t *work,
                     uint32_t ahead, uint32_t step, int retry,
                     int *peak_missed);

/* improve_squeeze.c. Lowers the top of the valid plan offsets (arena
 * *arena) by re-packing regions of memory below its top and re-planning
 * windows of time around the tensor that reaches it (docs/exact.md,
 * "Squeeze"); search.c runs it after the
 * windowed passes. offsets is only ever replaced by a whole valid plan with a
 * lower arena. Adds the units done to *work, never past work_limit.
 * Returns 0 (with *arena updated), ARENA_ENOMEM or ARENA_ECANCELED
 * (offsets unchanged in both cases). */
int planner__squeeze(const struct planner__prob *p, uint64_t *offsets,
                     uint64_t *arena, uint64_t work_limit, uint64_t *work);

/* improve_lns.c. Ruin and recreate (docs/exact.md, "Ruin and
 * recreate"): repeatedly frees a region of the valid plan offsets (arena
 * *arena) around a tensor near its top and places its tensors anew in a
 * perturbed order, keeping the result when no tensor passes the top and
 * the bytes above a level below it do not grow. offsets (graph order) is
 * borrowed and only ever replaced by a whole valid plan with a lower
 * arena. Does at most 500 work units per sized tensor, a fixed budget of
 * its own, not counted in the effort. search.c runs it last,
 * on its plan and then on the staircase trials' runner-up.
 * Returns 0 (with *arena updated), ARENA_ENOMEM or ARENA_ECANCELED (the
 * stop callback fired; offsets unchanged in both cases). */
int planner__lns(const struct planner__prob *p, uint64_t *offsets,
                 uint64_t *arena);

/* improve_joint.c. The joint re-plan of the high-load stretch
 * (docs/exact.md, "Joint re-plan of the stretch"): the spans where the
 * load is near the load bound packed as one window at a target just
 * above it (1.001 x LB), by the exact search in capacity mode, and the
 * rest planned around it in two windows, the tensors after the stretch
 * and those before it. Runs only when *arena (the arena of the valid
 * plan offsets, graph order, borrowed) is above that target and no
 * tensor is pinned; search.c runs it last. offsets is only ever
 * replaced by a whole valid plan with a lower arena. Has a budget of its
 * own (4000 work units per sized tensor), not counted in the effort.
 * Returns 0 (with *arena updated), ARENA_ENOMEM or ARENA_ECANCELED
 * (offsets unchanged in both cases). */
int planner__joint(const struct planner__prob *p, uint64_t *offsets,
                   uint64_t *arena);

/* improve_stair.c. The staircase plans (docs/exact.md, "Staircase
 * plans"): stacks of tensors that meet at one point in time at the
 * bottom, tflm-greedy around them; the best replaces offsets (arena
 * *arena) when its arena is lower. Does nothing when the graph has pinned
 * tensors or the tensors of its first point in time hold less than half
 * the load bound. Not counted in work units, like `best`'s heuristics.
 * Returns 0, ARENA_ENOMEM or ARENA_ECANCELED; offsets always holds a
 * valid plan no worse than the one given. */
int planner__stair(const struct planner__prob *p, uint64_t *offsets,
                   uint64_t *arena);

/* planner__stair() that also keeps the runner-up, the plan of lowest
 * arena among the given one and the staircase plans that did not end in
 * offsets, in runner (room for p->n offsets, caller-owned) with its arena
 * in *runner_arena, when that is below the *runner_arena given; runner
 * may be NULL (planner__stair()). */
int planner__stair_keep(const struct planner__prob *p, uint64_t *offsets,
                        uint64_t *arena, uint64_t *runner,
                        uint64_t *runner_arena);

/* exact.c. planner__exact() with an explicit budget: the search may do
 * work_limit - *work more units and adds what it did to *work; it never
 * runs the windowed re-planning itself. Minimisation also stops once the
 * arena is at most goal (0: only at a proven optimum). Same contract
 * otherwise. */
int planner__exact_within(const struct planner__prob *p, uint64_t *offsets,
                          struct planner_plan *res, uint64_t goal,
                          uint64_t work_limit, uint64_t *work);

#endif /* ARENA_IMPROVE_H */

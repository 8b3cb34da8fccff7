/*
 * search.h - planner/search/: the search that follows the heuristics of
 * `best`, as the rest of the planner sees it.
 *
 * What it is for: given the best heuristic plan, find a smaller one (or
 * answer a capacity question) within a budget of work units, never
 * reading a clock, so that plans depend on the input and options alone.
 * search.c is the orchestrator: it runs the improvement passes of large
 * graphs (improve*.c) and then the exact search (exact*.c), in that order;
 * the passes and the exact search never call back up into it.
 * docs/exact.md describes the method; search.c's comment lists the files.
 * What it may use: planner/core/, planner/heuristics/ and libc. Used only
 * by planner/run/. Not installed; tests may include it.
 */
#ifndef ARENA_SEARCH_H
#define ARENA_SEARCH_H

#include <stdint.h>

#include "planner_int.h"

/* The search (search.c).
 * On entry offsets[] holds a valid plan (the best heuristic's) and
 * res->arena_bytes its arena; res->lower_bound_bytes holds the load bound.
 * On return offsets[] holds the best plan found and res->arena_bytes its
 * arena; res->proven_optimal, res->fit, res->lower_bound_bytes (which a
 * finished search may raise), res->bound, res->nodes_explored and
 * res->search_us are set. Honours o->capacity, o->effort (0 means
 * PLANNER_DEFAULT_EFFORT; see EFFORT in planner.h) and o->stop, and reads
 * no clock except to report search_us. Never leaves offsets[] invalid.
 * With a capacity, the capacity search runs first; unless it finds a
 * plan that meets the bound, the minimisation runs too, exactly as
 * without a capacity (up to the effort again), and the smaller plan is
 * kept, the minimisation's on a tie. So a capacity never makes the arena
 * larger, and res->fit is judged on the plan returned.
 * Returns 0, ARENA_ENOMEM or ARENA_ECANCELED. */
int planner__exact(const struct planner__prob *p, uint64_t *offsets,
                   struct planner_plan *res);

#endif /* ARENA_SEARCH_H */

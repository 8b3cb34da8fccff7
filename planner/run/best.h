/*
 * best.h - planner/run/'s internal interface: the heuristic race of
 * `best` (best.c), used by planner_run() (run.c).
 */
#ifndef ARENA_BEST_H
#define ARENA_BEST_H

#include "planner_int.h"

/* Runs every heuristic of `best` on p, on up to p->o->threads threads,
 * and writes the first smallest plan into off (p->n offsets, the
 * caller's) and its heuristic into *used. Returns 0, ARENA_ENOMEM or
 * ARENA_ECANCELED. */
int planner__best(const struct planner__prob *p, uint64_t *off,
                  enum planner_algo *used);

#endif /* ARENA_BEST_H */

/*
 * planner_int.h - internal interface between the files of planner/.
 *
 * Part of planner/core/, which uses only libc: every other folder of
 * planner/ may include it, never the other way round. Not installed and not
 * included outside planner/ (tests may include it to reach internals).
 * Cross-file functions use the planner__ prefix. The heuristics have their
 * own interface (heuristics/heuristics.h), and so has the search
 * (search/search.h).
 *
 * A "problem" is a graph that passed planner_validate(), plus the
 * effective alignment of every tensor (max of the global and the tensor's
 * own). All algorithms work on it and write offsets in graph order.
 */
#ifndef ARENA_PLANNER_INT_H
#define ARENA_PLANNER_INT_H

#include <stdint.h>
#include <stddef.h>

#include "planner.h"

struct tindex; /* tindex.h */

struct planner__prob {
  const struct planner_tensor *t; /* n validated tensors, borrowed */
  size_t n;                       /* tensor count, >= 1 */
  uint64_t *align;                /* n effective alignments, owned */
  struct tindex *x;               /* the time index (tindex.h), owned;
                                     read-only once built */
  uint64_t lb;                    /* load lower bound, bytes */
  uint64_t naive;                 /* sum of sizes, bytes */
  int n_pinned;                   /* how many tensors are pinned */
  const struct planner_options *o;/* borrowed options */
};

/* Builds a problem from a validated graph: alignments, time index, load
 * bound. Returns 0 or ARENA_ENOMEM (then p owns nothing). Free with
 * planner__prob_cleanup(). */
int planner__prob_init(struct planner__prob *p, const struct planner_graph *g,
                       const struct planner_options *o);
void planner__prob_cleanup(struct planner__prob *p);

/* Frees the time index of p (p->x becomes NULL) for the exact search,
 * which does not use it; everything that needs it has run by then. */
void planner__prob_drop_index(struct planner__prob *p);

/* Formats a message into err (may be NULL) and returns code (helpers.c). */
int planner__errf(char *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The effective alignment of t under o: max(o->alignment, t->align)
 * (helpers.c). */
uint64_t planner__eff_align(const struct planner_tensor *t,
                            const struct planner_options *o);

/* Looks for two tensors among subset[0..m) (non-empty ones) that overlap
 * in both time and memory at the given offsets. by_first is subset
 * sorted stably by first (borrowed), or NULL to have it sorted here.
 * Returns 1 and sets *a, *b to the first such pair in time order, 0 when
 * there is none, or ARENA_ENOMEM. O(m log m). */
int planner__find_overlap(const struct planner_tensor *t,
                          const uint64_t *offsets, const uint32_t *subset,
                          const uint32_t *by_first, size_t m, uint32_t *a,
                          uint32_t *b);

/* planner_verify() of a graph and options that passed planner_validate()
 * (planner_run() validates them once, before planning). by_first is
 * the rows of the non-empty tensors by (first, row), as the time index's
 * row_of lists them (borrowed), or NULL to have them sorted; one that is
 * not that order is ignored. */
int planner__verify_valid(const struct planner_graph *g,
                          const struct planner_options *o,
                          const struct planner_plan *p,
                          const uint32_t *by_first, char *err);

/* Rounds v up to a multiple of a (a power of two). The caller guarantees
 * by validation that the result fits in 64 bits. */
static inline uint64_t planner__align_up(uint64_t v, uint64_t a)
{
  return (v + a - 1) & ~(a - 1);
}

#endif /* ARENA_PLANNER_INT_H */

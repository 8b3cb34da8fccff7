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
 *
 * VALIDATION ONCE. A graph is validated once per call of a public entry
 * point that takes untrusted input (planner_validate(), planner_run(),
 * planner_verify()); nothing below it validates that graph again. An
 * internal function that takes a graph and trusts it says so in its
 * comment with the words "g is valid under o: planner_validate() returned
 * 0" (for g and o of that same call): it checks none of what validation
 * checks, and a graph that breaks the contract is a programmer error, not
 * an input error. planner_lower_bound() is public but makes the same
 * demand of its caller (planner.h). planner_run() keeps what validation
 * learned about the aliases (planner__validate()) for sharing and for the
 * verifier.
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

/* Builds a problem from g and o (both borrowed; they must outlive p):
 * alignments, time index, load bound. g is valid under o:
 * planner_validate() returned 0. Returns 0 or ARENA_ENOMEM (then p owns
 * nothing). Free with planner__prob_cleanup(). */
int planner__prob_init(struct planner__prob *p, const struct planner_graph *g,
                       const struct planner_options *o);
void planner__prob_cleanup(struct planner__prob *p);

/* planner__prob_init() without the time index and the load bound
 * (p->x NULL, p->lb 0), for an algorithm that needs neither (naive).
 * Same returns; free with planner__prob_cleanup(). */
int planner__prob_init_bare(struct planner__prob *p,
                            const struct planner_graph *g,
                            const struct planner_options *o);

/* planner__prob_init() without the time index (p->x NULL) but with the
 * load bound, the same as the index gives, computed without it when the
 * timeline is short (planner__direct_load_bound()): for naive, which
 * needs only the bound. Same returns; free with planner__prob_cleanup(). */
int planner__prob_init_bound(struct planner__prob *p,
                             const struct planner_graph *g,
                             const struct planner_options *o);

/* The load bound of p (its alignments set) into *lb without an index,
 * over the operators 0 .. max(last) (at most 2 n + 1024 of them).
 * Returns 0, 1 when the timeline is longer (*lb 0, nothing done), or
 * ARENA_ENOMEM. */
int planner__direct_load_bound(const struct planner__prob *p, uint64_t *lb);

/* Frees the time index of p (p->x becomes NULL) for the exact search,
 * which does not use it; everything that needs it has run by then. */
void planner__prob_drop_index(struct planner__prob *p);

/* planner_validate() that also hands back what it learned of the
 * aliases: when g declares one and validation passes, *in_row (may be
 * NULL: then nothing is handed back) is set to the row each tensor's
 * alias names, or PLANNER__NO_ROW (alias.h), as planner__alias_rows()
 * returns it; owned by the caller, free with free(). *in_row is NULL when
 * g declares no alias and on every failure. Returns what
 * planner_validate() returns, with the same message in err (may be
 * NULL). */
int planner__validate(const struct planner_graph *g,
                      const struct planner_options *o, char *err,
                      uint32_t **in_row);

/* Whether two pinned non-empty tensors of g collide in time and memory:
 * planner_validate()'s check of the pins on its own, for a graph derived
 * from a valid one in a way nothing else of validation can fail (the
 * joined graph of run/share.c). g has unique ids and valid rows. Returns
 * 0, ARENA_EPINNED (described in err, which may be NULL) or ARENA_ENOMEM.
 * O(m log m) for m pinned tensors. */
int planner__check_pins(const struct planner_graph *g, char *err);

/* Formats a message into err (may be NULL) and returns code (helpers.c). */
int planner__errf(char *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Arrays from this many bytes get the huge-page hint below. */
#define PLANNER_HUGE_MIN ((size_t)4 << 20)

/* A hint (Linux; elsewhere nothing) that the 2 MiB pages wholly inside
 * the bytes at p, an array of at least PLANNER_HUGE_MIN bytes just
 * allocated, be backed by huge pages when first written: each first
 * write of a page costs a page fault, 512 times fewer in huge pages.
 * Changes no byte and no result; pages already written stay as they
 * are (helpers.c). */
void planner__advise_huge(void *p, size_t bytes);

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

/* planner_verify() without the validation: g is valid under o:
 * planner_validate() returned 0 (planner_run() validates them once,
 * before planning). by_first is the rows of the non-empty tensors by
 * (first, row), as the time index's row_of lists them (borrowed), or NULL
 * to have them sorted; one that is not that order is ignored. in_row is
 * what planner__validate() handed back for g (borrowed), or NULL to
 * resolve the aliases here when the check needs them. */
int planner__verify_valid(const struct planner_graph *g,
                          const struct planner_options *o,
                          const struct planner_plan *p,
                          const uint32_t *by_first, const uint32_t *in_row,
                          char *err);

/* Rounds v up to a multiple of a (a power of two). The caller guarantees
 * by validation that the result fits in 64 bits. */
static inline uint64_t planner__align_up(uint64_t v, uint64_t a)
{
  return (v + a - 1) & ~(a - 1);
}

#endif /* ARENA_PLANNER_INT_H */

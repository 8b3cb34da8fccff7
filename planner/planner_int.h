/*
 * planner_int.h - internal interface between the files of planner/.
 *
 * Not installed and not included outside planner/ (tests may include it to
 * reach internals). Cross-file functions use the planner__ prefix.
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

/* Formats a message into err (may be NULL) and returns code. */
int planner__errf(char *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The effective alignment of t under o: max(o->alignment, t->align). */
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

/* Runs one heuristic (NAIVE, TFLM_GREEDY, TFLITE_BESTFIT, GREEDY_SIZE or
 * GREEDY_BREADTH) and writes n offsets into offsets (caller-allocated).
 * Pinned tensors are placed first, at their offsets. Deterministic.
 * Builds its own time index; polls o->stop. Returns 0, ARENA_EINVAL for
 * another algo, ARENA_ENOMEM or ARENA_ECANCELED. */
int planner__heuristic(const struct planner__prob *p, enum planner_algo a,
                       uint64_t *offsets);

struct tindex_span; /* tindex.h */

/* One run of a heuristic that can be advanced a few placements at a time
 * (heuristics.c), so that `best` can run several on one problem, on one
 * thread or several, and drop those that can no longer win. */
struct planner__task;

/* Placements per planner__task_step() between two polls of the stop
 * callback. */
#define PLANNER_TASK_STEP 1024

/* Starts heuristic a (TFLM_GREEDY, TFLITE_BESTFIT, GREEDY_SIZE or
 * GREEDY_BREADTH) on p, which it only reads (so several tasks may run at
 * once on one problem): builds its visiting order and places the pinned
 * tensors. Returns 0 and a new task in *out (free with
 * planner__task_free()), or ARENA_EINVAL or ARENA_ENOMEM with *out NULL. */
int planner__task_new(const struct planner__prob *p, enum planner_algo a,
                      struct planner__task **out);

/* Places the next n tensors of t's order (fewer when fewer are left).
 * Returns 0 or ARENA_ENOMEM (t keeps the placements made). */
int planner__task_step(struct planner__task *t, size_t n);

/* 1 once every tensor of t is placed. */
int planner__task_done(const struct planner__task *t);

/* The largest end of any tensor placed so far (pinned ones included): a
 * lower bound of t's arena, and its arena once done. */
uint64_t planner__task_top(const struct planner__task *t);

/* t's placements by rank of the time index p->x (p->x->m entries; end 0
 * for a tensor not placed yet), owned by t. */
const struct tindex_span *planner__task_pos(const struct planner__task *t);

/* t's visiting order: *n ranks, owned by t. */
const uint32_t *planner__task_order(const struct planner__task *t,
                                    size_t *n);

/* Frees t. Accepts NULL. */
void planner__task_free(struct planner__task *t);

/* 1 when order (m ranks, all free tensors of p) is also tflite-bestfit's
 * visiting order, else 0. greedy-size and tflite-bestfit take the same
 * gaps, so when greedy-size's order passes, both give the same plan. */
int planner__tflite_same_order(const struct planner__prob *p,
                               const uint32_t *order, size_t m);

/* Converts placements by rank (pos) into n offsets in graph order. */
void planner__offsets_of(const struct planner__prob *p,
                         const struct tindex_span *pos, uint64_t *offsets);

struct planner__radix; /* planner_sort.h */

/* Writes greedy-breadth's visiting order of the free tensors (non-empty,
 * not pinned), as ranks of the time index p->x, into order (p->x->m
 * entries of room) and their count into *m; key (p->x->m entries) and
 * rs (borrowed) are scratch. Returns 0 or ARENA_ENOMEM. */
int planner__breadth_order(const struct planner__prob *p, uint32_t *order,
                           uint64_t *key, struct planner__radix *rs,
                           size_t *m);

/* Returns max(offset + size) over the non-empty tensors. */
uint64_t planner__arena_of(const struct planner__prob *p,
                           const uint64_t *offsets);

/* The exact search (exact.c).
 * On entry offsets[] holds a valid plan (the best heuristic's) and
 * res->arena_bytes its arena; res->lower_bound_bytes holds the load bound.
 * On return offsets[] holds the best plan found and res->arena_bytes its
 * arena; res->proven_optimal, res->fit, res->lower_bound_bytes (which a
 * finished search may raise), res->bound, res->nodes_explored and
 * res->search_us are set. Honours o->capacity, o->effort (0 means
 * PLANNER_DEFAULT_EFFORT; see EFFORT in planner.h) and o->stop, and reads
 * no clock except to report search_us. Never leaves offsets[] invalid.
 * Returns 0, ARENA_ENOMEM or ARENA_ECANCELED. */
int planner__exact(const struct planner__prob *p, uint64_t *offsets,
                   struct planner_plan *res);

#endif /* ARENA_PLANNER_INT_H */

/*
 * heuristics.h - planner/heuristics/: the greedy planners, as the rest of
 * the planner sees them.
 *
 * What it is for: one heuristic run on a problem (planner__heuristic()),
 * or the same run a few placements at a time (struct planner__task), so
 * that `best` (run/best.c) can race several. The files: heuristics.c (the
 * five planners and the tasks), breadth.c (greedy-breadth's order),
 * tunion.c (unions of placed bytes that placements read).
 * What it may use: planner/core/ (the problem, the time index, the radix
 * sort) and libc. Used by planner/search/ and planner/run/; it calls
 * neither. Not installed; tests may include it.
 *
 * Ownership: a problem is borrowed and only read (several tasks may run
 * at once on one problem); offsets arrays are the caller's; a task owns
 * its state until planner__task_free().
 */
#ifndef ARENA_HEURISTICS_H
#define ARENA_HEURISTICS_H

#include <stddef.h>
#include <stdint.h>

#include "planner_int.h"

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

#endif /* ARENA_HEURISTICS_H */

/*
 * alias.h - in-place sharing inside planner/ (internal): which declared
 * aliases name which rows, which pairs a plan may take, and the pairs a
 * plan took. planner.h's IN-PLACE SHARING gives the rules; alias.c keeps
 * them in one place for the planner (run/) and the verifier (verify.c).
 *
 * Part of planner/core/ (libc only). Arrays passed in are borrowed;
 * arrays returned are owned by the caller, who frees them with free().
 */
#ifndef ARENA_ALIAS_H
#define ARENA_ALIAS_H

#include <stddef.h>
#include <stdint.h>

#include "planner.h"

#define PLANNER__NO_ROW UINT32_MAX /* a row with no (taken) alias */

/* Whether any tensor of g declares an alias. O(n). */
int planner__has_aliases(const struct planner_graph *g);

/* Resolves every declared alias of g to a row: sets *in_row to a new
 * array of n entries, the row of the tensor each tensor names, or
 * PLANNER__NO_ROW. Returns 0, ARENA_EINVAL (an alias names the tensor
 * itself or an id that is not in the graph; described in err) or
 * ARENA_ENOMEM. g must have unique ids. */
int planner__alias_rows(const struct planner_graph *g, uint32_t **in_row,
                        char *err);

/* The pairs a planner takes: rows in graph order, each pair legal
 * (planner_alias_check), each input reused at most once, and the pins
 * and alignments of a whole chain agreeing. Fills group[i] (n entries,
 * caller-allocated) with the index of the chain holding row i, numbered
 * by first row, and sets *n_groups and *n_taken (pairs). Returns 0 or
 * ARENA_ENOMEM. */
int planner__alias_groups(const struct planner_graph *g,
                          const struct planner_options *o,
                          const uint32_t *in_row, uint32_t *group,
                          size_t *n_groups, size_t *n_taken);

/* The pairs a plan took: declared legal pairs of non-empty tensors at
 * one offset. Fills root[i] (n entries, caller-allocated) with the first
 * row of the chain holding row i (row i itself when it shares with
 * nothing) and sets *n_taken. Returns 0, ARENA_EVERIFY when two outputs
 * took one input's bytes (described in err) or ARENA_ENOMEM. */
int planner__alias_taken(const struct planner_graph *g,
                         const struct planner_options *o,
                         const uint32_t *in_row, const uint64_t *offsets,
                         uint32_t *root, size_t *n_taken, char *err);

#endif

/*
 * planner_sort.h - stable index sorting for planner/ (internal).
 */
#ifndef ARENA_PLANNER_SORT_H
#define ARENA_PLANNER_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Returns <0, 0 or >0 as index a sorts before, with or after index b. */
typedef int (*planner__cmp_fn)(uint32_t a, uint32_t b, const void *ctx);

/* Stable sort of idx[0..n) by cmp. Returns 0, or -1 when out of memory
 * (idx is then unchanged or partially sorted, but still a permutation). */
int planner__sort_idx(uint32_t *idx, size_t n, planner__cmp_fn cmp,
                      const void *ctx);

/* Returns an owned array 0, 1, ..., n-1 (free()), or NULL on OOM. */
uint32_t *planner__iota(size_t n);

#endif

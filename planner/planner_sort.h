/*
 * planner_sort.h - sorting for planner/ (internal).
 *
 * Two sorts, both stable, so that every order (and with it every plan) is
 * deterministic:
 *  - planner__sort_idx(): a merge sort of indexes by a comparison
 *    function, for orders that are not a single integer key;
 *  - planner__radix_sort(): an LSD radix sort of (key, value) pairs by a
 *    64-bit key, linear in n, for the large orders of the heuristics, the
 *    time index, the lower bound and the verifier. Callers that need
 *    several keys sort by the least significant key first (stability
 *    keeps the earlier order among equal keys).
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

/* Scratch space of planner__radix_sort(), grown on demand and reused
 * across calls: zero-initialise, release with planner__radix_cleanup(). */
struct planner__radix {
  uint64_t *key; /* cap entries */
  uint32_t *val; /* cap entries */
  size_t cap;    /* entries of room */
};

/* Sorts the pairs (key[k], val[k]), k < n, by key ascending; equal keys
 * keep their order. val may be NULL to sort keys alone. Passes over
 * 11-bit digits that are equal in every key are skipped, so small keys
 * cost few passes. s is borrowed scratch. Returns 0, or -1 when out of
 * memory (the arrays are then unchanged). */
int planner__radix_sort(uint64_t *key, uint32_t *val, size_t n,
                        struct planner__radix *s);

/* Frees the scratch space and leaves s empty. Accepts an empty s. */
void planner__radix_cleanup(struct planner__radix *s);

#endif

/*
 * planner_sort.h - stable sorting for planner/ (internal).
 *
 * planner__radix_sort() is an LSD radix sort of (key, value) pairs by a
 * 64-bit key, linear in n, for the orders of the heuristics, the time
 * index, the lower bound and the verifier. Input already in order costs
 * one read; input in order but for a few late keys (at most one in 16,
 * as graphs whose rows come in time order have) sorts those apart and
 * merges them in. Callers that need several keys
 * sort by the least significant key first (stability keeps the earlier
 * order among equal keys), or pack them into one key.
 */
#ifndef ARENA_PLANNER_SORT_H
#define ARENA_PLANNER_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Scratch space of planner__radix_sort(), grown on demand and reused
 * across calls: zero-initialise, release with planner__radix_cleanup(). */
struct planner__radix {
  uint64_t *key; /* cap entries */
  uint32_t *val; /* cap entries */
  size_t cap;    /* entries of room */
  int borrowed;  /* key and val are the caller's (planner__radix_borrow):
                    never grown or freed */
};

/* Scratch in the caller's memory mem (bytes long, 8-byte aligned), for
 * sorts of at most bytes / 12 pairs; a larger sort fails (-1). Release
 * with planner__radix_cleanup(), which leaves mem alone. */
struct planner__radix planner__radix_borrow(void *mem, size_t bytes);

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

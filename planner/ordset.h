/*
 * ordset.h - an ordered set of tensor indexes (internal to planner/).
 *
 * A treap whose nodes are tensor indexes 0..n-1, ordered by (key, index)
 * and augmented with the maximum `aux` value of every subtree. Two uses:
 *  - key = offset: ordered neighbours in memory, for the verifier;
 *  - key = first op, aux = last op: an interval tree of lifetimes, for
 *    "which placed tensors overlap [f, l] in time?" in the heuristics.
 * Priorities come from a hash of the index, so shapes are deterministic.
 * Operations are O(log n) expected; the recursion depth is the tree
 * height, about 2 ln n (~30 for a million tensors).
 */
#ifndef ARENA_ORDSET_H
#define ARENA_ORDSET_H

#include <stddef.h>
#include <stdint.h>

#define ORDSET_NIL UINT32_MAX

struct ordset {
  uint32_t *left;   /* n child links, ORDSET_NIL when absent */
  uint32_t *right;  /* n child links */
  int64_t *key;     /* n keys, set by ordset_insert */
  int64_t *aux;     /* n payloads, set by ordset_insert */
  int64_t *maxaux;  /* n subtree maxima of aux */
  uint32_t root;    /* ORDSET_NIL when empty */
  size_t n;         /* capacity in indexes */
};

/* Allocates a set able to hold indexes 0..n-1. Returns 0 or -1 on OOM
 * (then s is empty and ordset_cleanup() is still safe). */
int ordset_init(struct ordset *s, size_t n);
void ordset_cleanup(struct ordset *s);

/* Inserts index i (not already present) with the given key and aux. */
void ordset_insert(struct ordset *s, uint32_t i, int64_t key, int64_t aux);

/* Removes index i, which must be present. */
void ordset_remove(struct ordset *s, uint32_t i);

/* Neighbours of present index i in (key, index) order, or ORDSET_NIL. */
uint32_t ordset_prev(const struct ordset *s, uint32_t i);
uint32_t ordset_next(const struct ordset *s, uint32_t i);

/* Calls fn(i, ctx) for every present i with key <= hi and aux >= lo,
 * i.e. every interval [key, aux] that meets [lo, hi], in key order. */
void ordset_overlapping(const struct ordset *s, int64_t lo, int64_t hi,
                        void (*fn)(uint32_t i, void *ctx), void *ctx);

#endif

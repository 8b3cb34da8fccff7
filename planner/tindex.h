/*
 * tindex.h - a time index of placed tensors (internal to planner/): which
 * placed tensors overlap the lifetime [f, l]?
 *
 * A tensor [a, b] overlaps [f, l] iff it is live at f (a <= f <= b) or it
 * starts inside (f, l]. The two cases are disjoint, so each answer is
 * reported once:
 *  - live at f: a segment tree over the compressed timeline stores each
 *    tensor in the O(log T) nodes that exactly cover its lifetime; the
 *    nodes on the path from leaf f to the root hold exactly the tensors
 *    live at f;
 *  - starts in (f, l]: per-leaf lists of tensors by start, under a tree of
 *    counts that lets the walk skip empty subtrees.
 * A query costs O(log T + k log T) at worst and O(log T + k) typically,
 * whatever the other tensors' lifetimes, unlike a key-ordered interval
 * tree, which degrades when long-lived tensors are scattered through it.
 */
#ifndef ARENA_TINDEX_H
#define ARENA_TINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "planner.h"

struct tindex {
  int64_t *coord;     /* sorted distinct lifetime ends, n_coord */
  size_t n_coord;
  size_t size;        /* leaves: power of two >= n_coord */
  uint32_t *fi, *li;  /* per tensor: leaf of first and of last */
  int32_t *node_head; /* 2*size: first cover entry of each node, -1 */
  uint32_t *ent_t;    /* cover entries: tensor */
  int32_t *ent_next;  /* cover entries: next in node, -1 */
  size_t n_ent, cap_ent;
  int32_t *start_head; /* size: first tensor starting at a leaf, -1 */
  int32_t *start_next; /* per tensor: next starting at the same leaf */
  uint32_t *count;     /* 2*size: tensors starting below each node */
  uint64_t *soff, *send; /* per inserted tensor: its offset and end */
};

/* A placed tensor's bytes: [off, end). */
struct tindex_span {
  uint64_t off;
  uint64_t end;
};

/* Builds an empty index for the tensors t[0..n) (their lifetimes are
 * read now; nothing is inserted). Returns 0 or -1 on OOM (then cleanup
 * is still safe). */
int tindex_init(struct tindex *x, const struct planner_tensor *t, size_t n);
void tindex_cleanup(struct tindex *x);

/* Inserts tensor i, placed at bytes [off, end). Returns 0 or -1 on OOM. */
int tindex_insert(struct tindex *x, uint32_t i, uint64_t off, uint64_t end);

/* Writes the spans of every inserted tensor overlapping tensor i's
 * lifetime (i itself included if inserted) into out, which has room for
 * every tensor, and returns how many. Order unspecified. */
size_t tindex_collect(const struct tindex *x, uint32_t i,
                      struct tindex_span *out);

#endif

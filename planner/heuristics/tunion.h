/*
 * tunion.h - a heuristic's unions of placed bytes over the time index
 * (internal to planner/), and the overlap query that reads them.
 *
 * Where a tensor can go depends only on the union of the bytes of the
 * placed tensors it overlaps, not on which tensor holds which byte. So
 * where a query (tindex.h, "Overlap query") would read many tensors, it
 * reads unions of their placed bytes instead, each kept as sorted
 * disjoint pieces, which dense packing keeps to a few.
 *
 * DESIGN
 *  The tensors covering the query's first span s0 are the near ones
 *  (tindex.h, "Near tensors"), read rank by rank, and those on the path
 *  of leaf s0 of the index's tree:
 *   - node unions: a node whose list holds TINDEX_UNION or more tensors
 *     (long-lived ones, weights) keeps their union, read instead of them;
 *   - group unions: the nodes (s + S) >> gshift of the index (about
 *     TINDEX_GROUPS of them, each over a stretch of time) each keep the
 *     union of every tensor listed in it or in one of its ancestors, so
 *     a query reads one union for the upper part of its path, whose
 *     nodes hold the long-lived tensors: one list instead of a dozen
 *     whose pieces interleave.
 *  The tensors starting inside the lifetime are one range of ranks:
 *   - block unions: each block of TUNION_BLOCK ranks keeps its union (at
 *     most TUNION_BLOCK_PIECES pieces, else the block gives it up and is
 *     read rank by rank); a long range takes its whole blocks by their
 *     unions and the two partial blocks at its ends rank by rank;
 *   - the block tree: once ranges of TUNION_TREE_MIN whole blocks or
 *     more have read many blocks one by one (more than TUNION_TREE_RATIO
 *     times as many as placements made), a segment tree over the blocks
 *     (bottom-up layout, leaves the blocks) keeps the union of each of
 *     its nodes' ranges, so such a range reads O(log) unions instead of
 *     one per block. Shorter ranges still read block by block. The tree
 *     catches up only when such a range reads it: it merges the
 *     placements made since, or, when they are as many as blocks, is
 *     recomputed from the blocks, so a tree no query reads any more
 *     costs nothing.
 *  Every kind is built from the placements so far when a query first
 *  needs it, and kept up to date from then on. Group and tree unions
 *  have no fixed size: they live in one pool, where a list that outgrows
 *  its slots moves to the end with twice the room.
 *
 * Memory: blocks 4 bytes a tensor; node unions 16 bytes per listed
 * tensor of the nodes that keep one; group and tree unions 16 bytes a
 * piece, at most twice that with the room of growing lists; the tree's
 * pending placements 4 bytes a block.
 */
#ifndef ARENA_TUNION_H
#define ARENA_TUNION_H

#include <stddef.h>
#include <stdint.h>

#include "tindex.h"

#define TUNION_BLOCK 64        /* ranks per block union */
#define TUNION_BLOCK_PIECES 16 /* pieces a block union may have */
#define TUNION_GAVE_UP UINT64_MAX /* n_block[] of a block whose union
                                     would need more */
#define TUNION_LONG 256 /* ranks in a query range worth the block unions */
#define TUNION_TREE_MIN 16 /* whole blocks in a range worth the tree */
#define TUNION_TREE_RATIO 4 /* blocks read one by one per placement that
                                make the block tree worth its upkeep */

#define TUNION_RUN 16 /* pieces of a union a query returns as a run */

/* A union in the pool: pieces [at, at + n) of room cap. */
struct tunion_list {
  uint64_t at;  /* first slot in the pool */
  uint32_t n;   /* pieces */
  uint32_t cap; /* slots */
};

/* A heuristic's unions of placed bytes (see DESIGN). Zero-initialise;
 * each kind is built when a query first needs it. */
struct tunion {
  struct tindex_span *block; /* TUNION_BLOCK_PIECES slots per block: the
                                pieces of block b from b times that; NULL
                                until built */
  uint64_t *n_block;         /* pieces in each block, or TUNION_GAVE_UP */
  struct tindex_span *node;  /* x->n_uslots: node v's union in slots
                                [uoff[v], uoff[v + 1]): slot 0's off is
                                the count, the pieces follow; NULL until
                                built */
  struct tunion_list *group; /* x->n_groups group unions; NULL until
                                built */
  struct tunion_list *tree;  /* nb (blocks) lists: the union of tree node
                                v in [1, nb); NULL until built */
  struct tindex_spans pool;  /* slots of group and tree lists: pool.n
                                handed out of pool.cap */
  uint32_t *pend;            /* placements since a query last read the
                                tree (n_pend of cap_pend) */
  size_t n_pend, cap_pend;
  uint64_t block_reads;      /* whole blocks read one by one so far */
  uint64_t added;            /* placements recorded */
};

/* A sorted run of pieces a query found: (*base)[at .. at + n), where
 * *base is storage of the unions that may move while the query runs. */
struct tunion_run {
  struct tindex_span *const *base; /* borrowed from the unions */
  size_t at;                       /* first piece */
  size_t n;                        /* pieces */
};

/* A growable list of runs. Zero-initialise; free(v) when done. */
struct tunion_runs {
  struct tunion_run *v; /* cap entries */
  size_t n;             /* entries used */
  size_t cap;           /* entries of room */
};

/* tunion_reserve() when v has to grow. */
int tunion_grow(struct tindex_spans *v, size_t more);

/* Makes room in v for `more` entries past v->n (growing by doubling).
 * Returns 0, or -1 when out of memory (v unchanged). */
static inline int tunion_reserve(struct tindex_spans *v, size_t more)
{
  return v->n + more <= v->cap ? 0 : tunion_grow(v, more);
}

/* Frees what u owns and leaves it unbuilt. */
void tunion_cleanup(struct tunion *u);

/* Records that rank r now holds bytes [off, end) in the unions of u that
 * are built. Returns 0, or -1 when out of memory (u is then unusable:
 * clean it up). */
int tunion_add(const struct tindex *x, struct tunion *u, uint32_t r,
               uint64_t off, uint64_t end);

/* Prefetches what recording rank r's placement (tunion_add) will read of
 * u: its block's union. Touches only caches, never changes a result.
 * Always inlined: GCC takes a function that only prefetches for one
 * without side effects and drops its calls. */
static inline __attribute__((always_inline)) void
tunion_prefetch(const struct tunion *u, uint32_t r)
{
  if (!u->block)
    return;
  const char *v = (const char *)(u->block + (size_t)(r / TUNION_BLOCK) *
                                                TUNION_BLOCK_PIECES);
  __builtin_prefetch(&u->n_block[r / TUNION_BLOCK]);
  for (size_t b = 0; b < TUNION_BLOCK_PIECES * sizeof *u->block; b += 64)
    __builtin_prefetch(v + b);
}

/* Finds byte ranges whose union is the union of the bytes of every
 * placed tensor (pos[q].end != 0) that overlaps rank r in time (r itself
 * included only if placed): each tensor's own bytes, or the pieces of a
 * union that covers it. Ranges come in out, in no particular order, and
 * in runs, each sorted by offset (a group union, and the other unions of
 * TUNION_RUN pieces or more, read in place: valid until u next
 * changes). pos (m entries) is
 * borrowed and must agree with u, whose unions are built from pos when
 * first needed. Returns 0, or -1 when out of memory (out and runs keep
 * their old room). */
int tunion_collect(const struct tindex *x, const struct tindex_span *pos,
                   struct tunion *u, uint32_t r, struct tindex_spans *out,
                   struct tunion_runs *runs);

#endif

/*
 * tindex.h - the time index of a problem (internal to planner/): which
 * tensors overlap a lifetime, and which are live in a span of time?
 *
 * The index is built once per problem from its non-empty tensors and is
 * read-only afterwards, so several heuristics (on several threads) share
 * one. What changes while a heuristic runs, where each tensor was put,
 * lives in that heuristic's own array of struct tindex_span.
 *
 * DESIGN
 *  Timeline. The sorted distinct values of first and last + 1 over the
 *  non-empty tensors cut time into n_spans elementary spans; the set of
 *  live tensors is constant inside one. A tensor covers the spans
 *  [s0, s1), and two tensors overlap in time iff their span ranges meet.
 *  Operator numbers may thus be sparse and huge.
 *
 *  Ranks. The non-empty tensors are numbered by (first, graph row): rank
 *  r. Everything per tensor is stored by rank, so tensors close in time
 *  are close in memory, and the tensors that start in a range of spans
 *  are one contiguous range of ranks (leaf[].after).
 *
 *  Live at a span. A segment tree over the spans (bottom-up layout with
 *  leaves n_spans .. 2 n_spans - 1, any n_spans) stores each tensor in
 *  the O(log S) nodes that exactly cover [s0, s1); the nodes on the path
 *  from leaf s to the root hold exactly the tensors that cover s, each
 *  once. Node lists are one array (CSR), each list in rank order, and
 *  leaf[s].mask has bit j set when node (s + n_spans) >> j has a list, so
 *  a walk reads only the nodes that hold something.
 *
 *  Near tensors. Most tensors of real graphs live a few spans, and a
 *  query would find them in many short lists all over the tree. A
 *  tensor of at most TINDEX_NEAR spans, none of which has more than
 *  TINDEX_NEAR_RANKS ranks starting in the TINDEX_NEAR spans up to it,
 *  is near: it is in no node list, and near_s1[r] holds its s1 (0 for
 *  every other tensor). A near tensor that lives in span s starts in
 *  the last TINDEX_NEAR spans up to s, so it is among the ranks
 *  tindex_near_lo(s) .. leaf[s].after - 1 (at most TINDEX_NEAR_RANKS of
 *  them; else no near tensor lives in s). Of those, leaf[s].near is the
 *  first that is near and lives in s, so a query reads the ranks
 *  leaf[s].near .. leaf[s].after - 1 in one run (about half the window
 *  on random graphs), keeping those with near_s1 above s.
 *
 *  Overlap query for a tensor [s0, s1): the tensors covering s0 (the path
 *  of leaf s0, and the near ones among the ranks before leaf[s0].after)
 *  plus the tensors starting in (s0, s1) (ranks leaf[s0].after ..
 *  leaf[s1 - 1].after). The sets are disjoint. Placed or not, each is
 *  read once, so a query costs O(log S + k) for the k tensors that
 *  overlap, plus at most TINDEX_NEAR_RANKS near candidates, with mostly
 *  sequential reads.
 *
 *  Unions. What a query returns depends only on the union of the placed
 *  bytes of the tensors it finds, so a heuristic reads unions of placed
 *  bytes where there would be many tensors (tunion.h). The index
 *  provides their geometry: slots for the nodes with long lists, and the
 *  groups, the nodes (s + S) >> gshift at the height where about
 *  TINDEX_GROUPS of them cover the timeline.
 *
 * Memory: 25 bytes per non-empty tensor, 4 per node list entry (none
 * for a near tensor, O(log S) for another), 20 per span (at most two
 * spans per tensor; 28 when some node keeps a union), and 4 per graph
 * row. A heuristic adds its placements (16 bytes a tensor), its
 * order (4) and its unions (tunion.h).
 */
#ifndef ARENA_TINDEX_H
#define ARENA_TINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "planner_int.h"

#define TINDEX_NONE UINT32_MAX /* rank_of[] of an empty tensor */
#define TINDEX_MIXED 255u      /* one_align when alignments differ */

/* A non-empty tensor, by rank. */
struct tindex_item {
  uint64_t size; /* bytes, > 0 */
  uint32_t s0;   /* first span it covers */
  uint32_t s1;   /* one past the last span it covers, > s0 */
};

/* What a query reads about its first span s, in one place. */
struct tindex_leaf {
  uint32_t mask;  /* bit j: node (s + n_spans) >> j has a list */
  uint32_t after; /* first rank with s0 > s */
  uint32_t near;  /* first rank of a near tensor live in s, or after
                     when none is (see "Near tensors") */
};

struct tindex {
  size_t n;                  /* graph rows */
  size_t m;                  /* non-empty tensors (ranks) */
  size_t n_spans;            /* elementary spans, S; 0 iff m == 0 */
  uint32_t *rank_of;         /* n: rank of each row, or TINDEX_NONE */
  uint32_t *row_of;          /* m: row of each rank */
  struct tindex_item *item;  /* m: by rank */
  uint8_t *align_log2;       /* m: log2 of the effective alignment */
  unsigned one_align;        /* log2 of the effective alignment of every
                                rank when they all have the same one (no
                                read of align_log2 needed), else
                                TINDEX_MIXED */
  struct tindex_leaf *leaf;  /* S: per span */
  uint32_t *node_beg;        /* 2 S + 1: node v's list is ent[node_beg[v]
                                .. node_beg[v + 1]); v in [1, 2 S) */
  uint32_t *ent;             /* node lists: ranks, each list ascending */
  uint32_t *near_s1;         /* m: s1 of a near tensor, else 0 (see
                                "Near tensors") */
  uint32_t *uoff;            /* 2 S + 1: slots of node v's union are
                                [uoff[v], uoff[v + 1]): its list length
                                plus one when that is TINDEX_UNION or
                                more, else none; NULL if no node has one */
  size_t n_uslots;           /* uoff[2 S] */
  unsigned gshift;           /* path nodes (s + S) >> j with j >= gshift
                                are read through their group's union;
                                32: there are no groups */
  size_t g_lo, g_hi;         /* the groups: nodes g_lo .. g_hi, that is
                                (s + S) >> gshift for every span s */
  size_t n_groups;           /* g_hi - g_lo + 1, or 0 */
};

/* A tensor's bytes: [off, end). In a heuristic's placement array (one
 * per rank) end == 0 means "not placed yet": every indexed tensor has a
 * size, so a placed one ends above 0. */
struct tindex_span {
  uint64_t off;
  uint64_t end;
};

/* A growable list of spans. Zero-initialise; free(v) when done. */
struct tindex_spans {
  struct tindex_span *v; /* cap entries */
  size_t n;              /* entries used */
  size_t cap;            /* entries of room */
};

#define TINDEX_NEAR 16 /* spans a near tensor covers at most */
#define TINDEX_NEAR_RANKS 64 /* ranks a query reads for near tensors at
                                most */
#define TINDEX_UNION 32  /* tensors in a node list worth a node union */
#define TINDEX_GROUPS 64 /* groups at most */
#define TINDEX_GROUP_SPANS 32 /* spans a group covers at least */

/* Builds the index of problem p (borrowed only during the call). Returns
 * 0 or ARENA_ENOMEM; on failure x is left empty (cleanup is still safe).
 * O(n + m log S) time. */
int tindex_init(struct tindex *x, const struct planner__prob *p);

/* Frees what x owns and leaves it empty. Accepts an empty x. */
void tindex_cleanup(struct tindex *x);

/* Hands x->row_of (the rows of the non-empty tensors by (first, row)) to
 * the caller, who frees it; x keeps everything else and its cleanup no
 * longer frees row_of. NULL for an empty x. */
uint32_t *tindex_take_row_of(struct tindex *x);

/* log2 of the effective alignment of rank r. */
static inline unsigned tindex_align_log2(const struct tindex *x, uint32_t r)
{
  return x->one_align != TINDEX_MIXED ? x->one_align : x->align_log2[r];
}

/* The first rank that may be near (see near_s1) and live in span s: no
 * near tensor that starts before it lives in s. */
static inline size_t tindex_near_lo(const struct tindex *x, uint32_t s)
{
  return s >= TINDEX_NEAR ? x->leaf[s - TINDEX_NEAR].after : 0;
}

/* The node that path bit j of leaf s stands for (see leaf[].mask). */
static inline size_t tindex_path_node(const struct tindex *x, uint32_t s,
                                      unsigned j)
{
  return ((size_t)s + x->n_spans) >> j;
}

/* How many entries of each node list stage 4 of tindex_prefetch()
 * fetches the placements of. */
#define TINDEX_PREFETCH_LIST 8

/* Prefetches, in stage order, what tunion_collect() of rank r will read,
 * so that a caller who knows its next queries can issue each stage a few
 * queries before the next: 0 the item and alignment; 1 its first and
 * last leaves; 2 the offsets of its path's node lists, its near
 * tensors' placements and its first range placement; 3 the node lists;
 * 4 the placements of their first entries. A stage
 * reads what the one before fetched. Touches only caches, never changes
 * a result. */
#define TINDEX_PREFETCH_STAGES 5
void tindex_prefetch(const struct tindex *x, const struct tindex_span *pos,
                     uint32_t r, unsigned stage);

/* Computes the load lower bound (LOWER BOUND in planner.h) at global
 * alignment g_al: the largest, over spans, of the live sizes rounded up
 * to g_al minus the largest rounding slack among them. Every span's live
 * set is one of the bound's operators' (or, for a span that starts where
 * a lifetime ends, a subset of the span before it, with a smaller bound),
 * so the value is exactly the bound. O(m log S). Returns 0 and sets *lb,
 * or ARENA_ENOMEM. */
int tindex_load_bound(const struct tindex *x, uint64_t g_al, uint64_t *lb);

#endif

/*
 * exact_stream_int.h - the state of the exact planner's search for large
 * components, shared by exact_stream.c (the structures, placements and
 * the search) and exact_stream_setup.c (its memory and its set-up).
 *
 * Included only by those two files. The state is owned by the ctx it
 * hangs from (X->stream): exact__stream_init() sizes and fills it,
 * exact__stream_free() releases it; every pointer in it either owns one
 * of its arrays (freed there) or borrows the ctx's.
 */
#ifndef ARENA_EXACT_STREAM_INT_H
#define ARENA_EXACT_STREAM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "exact_int.h"

/* Work units of changing one candidate's key: a treap erase and insert,
 * each about 2 log2 m nodes with their splits and merges, and a walk up
 * the tree of minima. Measured against exact_search.c's units, so that an
 * effort unit stays within the nominal millisecond (docs/exact.md). */
#define KEY_UNITS(T) (8 * (uint64_t)(T)->lgm)

struct slv {
  uint64_t ex;    /* entry key: offset ... */
  int64_t er;     /* ... and rank, -1 at the root */
  uint64_t kpos;  /* key of the last candidate tried: offset ... */
  int64_t krank;  /* ... and rank */
  uint64_t t1;    /* min pos + size over the unplaced, on entry */
  uint64_t x;     /* offset of the tensor placed from this level */
  uint32_t c;     /* that tensor */
  uint32_t mark;  /* pos trail length before that placement */
  int how;        /* how to undo it (P_*) */
};

/* How a placement is undone: how far place() got, and for a pool
 * member's placement that set every other unplaced tensor to one key
 * (place_flat()), whether the old keys are on the trail. */
enum { P_NONE, P_SECTIONS, P_TRAIL, P_RECOMPUTE, P_FLAT_TRAIL,
       P_FLAT_RECOMPUTE };

/* The state of one search; allocated for the largest stream component
 * and rebuilt at every call. Indexes are local to the component. */
struct exact_stream {
  uint32_t mcap, pcap, ecap;  /* room: tensors, leaves, cover entries */
  /* The component being searched. */
  const struct ctx *X;
  uint32_t a, m, S, P;        /* first global tensor, tensors, sections, leaves */
  const uint64_t *size, *align;
  const uint32_t *slo, *shi;
  const uint32_t *rank, *twin;
  uint64_t cap;
  /* Section tree, 2P nodes, leaves at P + s. */
  uint64_t *tag, *sub, *add, *mr, *fr;
  uint64_t *ttag;             /* trail of old tags */
  uint32_t ttn, ttcap;
  /* Per tensor. */
  uint64_t *pos;
  unsigned char *placed;
  uint32_t *nxt, *prv;        /* unplaced tensors in index order, sentinel m */
  uint32_t *bys;              /* S + 1: first index with slo >= s */
  uint32_t *tnext;            /* the tensor whose twin is this one, or NONE */
  /* Cover lists: entries of tensor q at [toff[q], toff[q + 1]); node v's
   * sentinel is entry E + v; circular and doubly linked. */
  uint32_t *toff, *et, *enx, *epv;
  uint32_t E;
  /* Treap of the available unplaced tensors: links, priority and the
   * rank of its key, in one node a tensor (its pos is pos[]). */
  struct trn {
    uint32_t l, r, tp, rank;
  } *tn;
  uint32_t root;
  /* min pos + size over the unplaced tensors, Pm leaves. */
  uint32_t Pm;
  uint64_t *tmin;
  /* Trail of the pos values a placement raised, to undo them without
   * recomputing; a placement that finds it full is undone by
   * recomputing its neighbours instead. */
  uint32_t *pti;
  uint64_t *ptv;
  uint32_t ptn, ptcap;
  struct slv *lv;
  uint32_t unplaced;
  uint32_t lgS, lgm;          /* ceil log2 of P and Pm, for the work count */
  /* The pool: tensors live in every section, with one alignment and no
   * pinned obstacles, all at pos pool_pos(); kept out of the treap, the
   * minima, the lists and the cover lists. Slots in rank order (by_r)
   * and in size order (by_z); bits: the available ones by rank slot, the
   * unplaced ones by size slot, each with a summary word per 64 words. */
  uint32_t *slot_r, *slot_z;  /* per tensor, NONE when not in the pool;
                                 slot_r owns the block of these six */
  uint32_t *by_r, *by_z;      /* slot -> tensor */
  uint64_t *bits_r, *sum_r, *bits_z, *sum_z; /* bits_r owns the block */
  uint32_t np, pn, nw, ns;    /* members, unplaced, words, summary words */
  uint64_t palign;            /* their alignment */
  uint64_t ualign;            /* the one alignment of the other tensors, or
                                 0 (see place_flat()) */
  uint32_t *by_rank;          /* rank -> tensor */
  uint32_t *stk;              /* scratch: the treap's right spine */
};

/* Words of a bit set of n bits. */
static inline size_t bit_words(size_t n)
{
  return n / 64 + 1;
}

/* Whether tensor q of the component is in the pool. */
static inline int in_pool(const struct exact_stream *T, uint32_t q)
{
  return T->slot_r[q] != NONE;
}

/* The larger of a and b. */
static inline uint64_t exact__umax(uint64_t a, uint64_t b)
{
  return a > b ? a : b;
}

/* Recomputes section tree node v from its children. */
static inline void exact__sec_pull(struct exact_stream *T, uint32_t v)
{
  if (v >= T->P) {
    /* A leaf: add holds its rem (rem0 less the bytes placed). */
    T->sub[v] = T->tag[v];
    T->mr[v] = T->add[v];
    T->fr[v] = v - T->P < T->S ? T->tag[v] + T->add[v] : 0;
    return;
  }
  uint32_t l = 2 * v, r = l + 1;
  uint64_t m = exact__umax(T->mr[l], T->mr[r]);
  T->sub[v] = exact__umax(T->tag[v], exact__umax(T->sub[l], T->sub[r]));
  T->mr[v] = T->add[v] + m;
  T->fr[v] = T->add[v] +
             exact__umax(T->tag[v] + m, exact__umax(T->fr[l], T->fr[r]));
}

/* The canonical nodes of sections [lo, hi] of the tree, at most 2 log2 P
 * of them, into nodes; returns how many. */
static inline uint32_t exact__sec_nodes(const struct exact_stream *T,
                                        uint32_t lo, uint32_t hi,
                                        uint32_t *nodes)
{
  uint32_t l = lo + T->P, r = hi + T->P + 1, n = 0;
  while (l < r) {
    if (l & 1)
      nodes[n++] = l++;
    if (r & 1)
      nodes[n++] = --r;
    l >>= 1;
    r >>= 1;
  }
  return n;
}

/* exact_stream.c. Fills the treap, the minima and the pool's bits from
 * pos and placed; returns the work units. */
uint64_t exact__cand_build(struct exact_stream *T);

/* exact_stream_setup.c. Builds X->stream for component c within cap
 * (growing it when it is too small, adding the set-up's units to
 * X->work), all but its candidates, which the caller then builds with
 * exact__cand_build(). Returns 0, ARENA_ENOMEM, or R_INFEAS when some tensor or
 * section cannot fit at all. */
int exact__stream_init(struct ctx *X, uint32_t c, uint64_t cap);

#endif /* ARENA_EXACT_STREAM_INT_H */

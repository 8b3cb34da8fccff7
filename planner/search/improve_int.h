/*
 * improve_int.h - the state and window planning shared by the windowed
 * re-planning (improve.c), the squeeze of its result (improve_squeeze.c),
 * the squeeze's region step (improve_region.c), ruin and recreate
 * (improve_lns.c), which places its regions with the region step's
 * placement, and the joint re-plan of the stretch (improve_joint.c).
 *
 * Included only by those files and the test of the region step.
 * Everything counts in the exact planner's work units (docs/exact.md,
 * "Effort").
 */
#ifndef ARENA_IMPROVE_INT_H
#define ARENA_IMPROVE_INT_H

#include <stdint.h>

#include "planner_int.h"

/* A committed tensor seen as an obstacle of a window: its cut lifetime
 * and its bytes. */
struct obst {
  uint32_t lo, hi;  /* spans, cut to the window */
  uint64_t off, top; /* bytes [off, top) */
};

/* The state of one pass (or of one squeeze). Sized tensors (free or
 * pinned) are numbered 0 .. m-1 in graph order; everything per tensor is
 * by that number. */
struct imp {
  const struct planner__prob *p;
  uint32_t m;            /* sized tensors */
  uint32_t *gi;          /* m: graph index */
  uint32_t *slo, *shi;   /* m: span range, inclusive */
  uint32_t S;            /* spans */
  uint64_t *off;         /* m: offsets of committed tensors (squeeze: all) */
  unsigned char *done;   /* m: 1 once committed (pinned ones from start);
                            squeeze: 1 while free in its window */
  uint32_t *act;         /* committed tensors that may meet the sweep */
  uint32_t nact;
  uint32_t *order;       /* m: scratch, a sweep's tensors in order */
  /* One window's problem, room for m tensors and m obstacles. */
  struct planner_tensor *wt; /* the window's graph */
  uint32_t *wk;          /* its tensors' numbers (NONE for obstacles) */
  uint64_t *woff, *wbest;/* offsets of a run, and of the best run */
  struct obst *ob;
  uint32_t ahead, step;  /* this pass's window: spans ahead, committed */
  uint64_t cap;          /* arena the windows aim at, bytes */
  uint64_t given;        /* arena of the plan the pass would replace */
  uint64_t work, limit;  /* work units done and allowed */
  int retry;             /* 1: the pass before had the same peak
                            window and missed it (planner__windows()) */
  int peak;              /* 1 while the peak window is planned on a
                            retry: its exact search takes a larger share
                            of what is left (IMPROVE_RETRY_SHARE) */
  int peak_missed;       /* 1: the peak window ended at or above given,
                            and the pass stopped there */
  int seeded;            /* 1: wbest holds a valid plan of the window,
                            the incumbent of its planning */
  int fit;               /* 1: a window's exact search asks whether it
                            fits cap (capacity mode) with all that is
                            left of limit; 0: it minimises with a
                            share of it */
  enum planner_algo first; /* the window heuristic tried first, then the
                            others in their order; PLANNER_ALGO_BEST (0):
                            greedy-breadth, greedy-size, tflite-bestfit,
                            tflm-greedy */
};

/* Fills *I for problem p with work units done and allowed: numbers the
 * sized tensors (I->gi), gives them their spans and allocates every
 * array. Returns 0 or ARENA_ENOMEM; release *I with improve__free()
 * either way. */
int improve__start(struct imp *I, const struct planner__prob *p,
                   uint64_t work, uint64_t limit);

/* Frees what *I owns. */
void improve__free(struct imp *I);

/* The sized tensor with the highest top by I->off (the first of equals),
 * its top in *top (0 with no sized tensor); a unit per tensor. */
uint32_t improve__top_tensor(struct imp *I, uint64_t *top);

/* Appends the tensors listed in I->act that are live in spans [a, b] to
 * the window's graph as pinned obstacles at their I->off, cut to the
 * window, merged where they touch in memory with the same cut lifetime;
 * *ns is the window's tensor count. */
void improve__obstacles(struct imp *I, uint32_t a, uint32_t b, uint32_t *ns);

/* qsort() and bsearch() order of uint64_t values, ascending. */
int improve__cmp_u64(const void *a, const void *b);

/* qsort() order of keys of three uint64_t words, lexicographic. */
int improve__cmp_key3(const void *a, const void *b);

/* The span where the bytes of the sized tensors from offset base up are
 * most (the first of equals), by their offsets in I->off; with base 0 it
 * reads no offset and gives the span of the highest load. Returns NONE
 * when out of memory. */
uint32_t improve__fullest_span(struct imp *I, uint64_t base);

/* Appends the obstacles I->ob[0 .. no-1], their spans counted from span
 * a, to the window's graph as pinned tensors, merged where they touch in
 * memory with the same cut lifetime; *ns is the window's tensor count. */
void improve__emit_obstacles(struct imp *I, uint32_t no, uint32_t a,
                             uint32_t *ns);

/* Appends sized tensor k to the window's graph as a free tensor cut to
 * spans [a, b]. */
void improve__add_free(struct imp *I, uint32_t k, uint32_t a, uint32_t b,
                       uint32_t *ns);

/* Fills the window's graph for spans [a, b]: the committed tensors of
 * I->act live in it as obstacles (improve__obstacles()), then every
 * uncommitted tensor live in it as a free one cut to it. Returns the
 * window's tensor count. */
uint32_t improve__window(struct imp *I, uint32_t a, uint32_t b);

/* Plans the window's graph of ns tensors within I->cap if it can, into
 * I->wbest (starting from it when I->seeded); raises I->cap to the arena
 * found when it cannot. The heuristics run in turn (from I->first) until
 * one fits cap; the exact search, when they all miss it,
 * minimises down to cap with a share of what is left of the effort (a
 * larger one with I->peak, a retried peak window), or with I->fit asks
 * whether the window fits cap with all of it. Returns 0; 1 when the
 * effort would be passed or when cap has reached I->given; ARENA_ENOMEM
 * or ARENA_ECANCELED. */
int improve__plan_window(struct imp *I, uint32_t ns);

/* Stacks the uncommitted tensors live through all of spans [a, b] at the
 * bottom, from offset 0 up, latest last use first (ties: earlier start,
 * then tensor order), and commits them there (a staircase: as they end,
 * the space they leave is always on top of the stack). For a window that
 * no committed tensor meets. Returns 0 or ARENA_ENOMEM. */
int improve__staircase(struct imp *I, uint32_t a, uint32_t b);

/* Copies the whole plan of I->off into offsets (graph order) when its
 * arena is below *arena, which it then becomes. */
void improve__keep(struct imp *I, uint64_t *offsets, uint64_t *arena);

/* improve_region.c. The squeeze's region step on the plan of I->off,
 * whose arena is top: re-packs regions of a band of memory below top and
 * a deeper window of time (docs/exact.md, "Squeeze") until one ends
 * below top, which is then kept (*better = 1). Returns 0, 1 (the effort
 * is spent), ARENA_ENOMEM or ARENA_ECANCELED; I->off always holds a
 * valid plan. */
int improve__region_step(struct imp *I, uint64_t top, int *better);

/* A region of a plan (improve_region.c): spans [a, b] from offset wbase
 * up, every other span from base up. */
struct region {
  uint32_t a, b;
  uint64_t base, wbase;
};

/* An entry of a region: a fixed piece or a free tensor, its spans and
 * bytes [off, top). */
struct rent {
  uint32_t lo, hi;
  uint64_t off, top;
};

/* A region's working state: its entries (the nfix fixed ones first),
 * the free tensors' numbers and alignments, and scratch. Owned by
 * whoever improve__rstate_init()ed it, released with
 * improve__rstate_free(). */
struct rstate {
  struct rent *e;
  uint32_t nfix, nfree;
  const uint32_t *fk;    /* nfree: the free tensors' numbers (I->order) */
  uint64_t *al;          /* nfree: their alignments */
  uint32_t *fixed;       /* nfix: fixed entries by offset */
  uint32_t *list;        /* nfix + nfree: entries placed, by offset */
  uint64_t *key;         /* 3 * max(nfix, nfree) + 3: sort keys */
  uint32_t *ord;         /* nfree: an order, by free index */
  uint64_t *best;        /* nfree: offsets of the best order */
  uint64_t *bkey;        /* 2 * nfree: breadth keys, or NULL until made */
};

/* Lists region R's free tensors (the unpinned ones at or above its lower
 * edge at every span of their lives) in I->order (*nf), and its fixed
 * pieces (every other tensor's part inside it) and floors in I->ob
 * (*no). Returns 0, or 1 when the pieces would not fit in I->ob (the
 * region is then not to be planned). Counts a unit per tensor.
 * improve__region_collect_in() looks only at the nc tensors cand
 * (ascending; borrowed), which must hold every tensor that ends above
 * the region's lowest edge, with the same result and count. */
int improve__region_collect_in(struct imp *I, const struct region *R,
                               const uint32_t *cand, uint32_t nc,
                               uint32_t *nf, uint32_t *no);
int improve__region_collect(struct imp *I, const struct region *R,
                            uint32_t *nf, uint32_t *no);

/* Builds X for the region whose fixed pieces and floors are the ns
 * pinned tensors of the window's graph (I->wt) and whose free tensors
 * are I->order[0 .. nf-1] (borrowed: X->fk points there). Returns 0 or
 * ARENA_ENOMEM (release X with improve__rstate_free() either way). */
int improve__rstate_init(struct rstate *X, struct imp *I, uint32_t ns,
                         uint32_t nf);

/* Frees what X owns. */
void improve__rstate_free(struct rstate *X);

/* Places the free entries of X, in the order X->ord, among the fixed
 * ones by first fit (best = 0: the lowest offset where each misses every
 * entry it meets in time) or best fit (best = 1: the smallest gap that
 * holds it). Returns the arena of the region, UINT64_MAX when an entry
 * reached given (the order is dropped), or 0 when the next placement
 * could pass the effort. The entries' offsets are those of the run. */
uint64_t improve__place_order(struct rstate *X, struct imp *I,
                              uint64_t given, int best);

#endif /* ARENA_IMPROVE_INT_H */

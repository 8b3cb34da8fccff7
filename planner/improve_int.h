/*
 * improve_int.h - the state and window planning shared by the windowed
 * re-planning (improve.c), the squeeze of its result (improve_squeeze.c)
 * and the squeeze's region step (improve_region.c).
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
  int seeded;            /* 1: wbest holds a valid plan of the window,
                            the incumbent of its planning */
};

/* Fills *I for problem p with work units done and allowed: numbers the
 * sized tensors (I->gi), gives them their spans and allocates every
 * array. Returns 0 or ARENA_ENOMEM; release *I with improve__free()
 * either way. */
int improve__start(struct imp *I, const struct planner__prob *p,
                   uint64_t work, uint64_t limit);

/* Frees what *I owns. */
void improve__free(struct imp *I);

/* Appends the tensors listed in I->act that are live in spans [a, b] to
 * the window's graph as pinned obstacles at their I->off, cut to the
 * window, merged where they touch in memory with the same cut lifetime;
 * *ns is the window's tensor count. */
void improve__obstacles(struct imp *I, uint32_t a, uint32_t b, uint32_t *ns);

/* qsort() and bsearch() order of uint64_t values, ascending. */
int improve__cmp_u64(const void *a, const void *b);

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

/* Plans the window's graph of ns tensors within I->cap if it can, into
 * I->wbest (starting from it when I->seeded); raises I->cap to the arena
 * found when it cannot. Returns 0; 1 when the effort would be passed or
 * when cap has reached I->given; ARENA_ENOMEM or ARENA_ECANCELED. */
int improve__plan_window(struct imp *I, uint32_t ns);

/* improve_region.c. The squeeze's region step on the plan of I->off,
 * whose arena is top: re-packs regions of a band of memory below top and
 * a deeper window of time (docs/exact.md, "Squeeze") until one ends
 * below top, which is then kept (*better = 1). Returns 0, 1 (the effort
 * is spent), ARENA_ENOMEM or ARENA_ECANCELED; I->off always holds a
 * valid plan. */
int improve__region_step(struct imp *I, uint64_t top, int *better);

#endif /* ARENA_IMPROVE_INT_H */

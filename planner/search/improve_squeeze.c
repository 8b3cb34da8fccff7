/*
 * improve_squeeze.c - the squeeze: lowers the top of a whole plan by
 * re-planning windows of time around the tensor that reaches it.
 *
 * The windowed re-planning (improve.c) builds its plan window by window,
 * and where a window cannot meet its target the whole arena rises to
 * that window's top, though the window around that point may well pack
 * lower once its neighbours are fixed. The squeeze takes such a plan as
 * it is and repairs it where its top is reached.
 *
 * DESIGN
 *  Repeatedly: t is the sized tensor with the highest top (the first of
 *  equals); if it is pinned or its top is the load bound, stop. First
 *  the region step (improve_region.c): bands of memory below the top
 *  along all of time, each joined to a deeper window of time, re-packed
 *  with everything else fixed. When no region ends below the top, for
 *  each width W of 200, 400 and 800 spans in turn:
 *   - when t lives in fewer than W - 50 spans, the window is the W spans
 *     centred on t's lifetime; its free tensors are the unpinned ones
 *     that live only inside it, and every other tensor live in it is a
 *     fixed obstacle at its offset, cut to the window. The window is
 *     planned (improve__plan_window()) from its current plan, which is
 *     valid, at a target one byte below t's top: the heuristics, then
 *     the exact search from the best plan so far.
 *   - otherwise (t lives longer), for windows of W spans centred on t's
 *     first and on its last span: t moves to the lowest offset at which
 *     it misses every tensor it meets in time but the window's free
 *     ones, if that lowers it, and the window's free tensors are planned
 *     anew with t as one more obstacle.
 *  When no window plans below t's top, the ejection: t moves to the
 *  lowest offset at which it misses every tensor it meets in time but
 *  the short ones (unpinned, living at most 200 spans), and the short
 *  ones it then overlaps (at most 64) are evicted and placed in turn,
 *  by first span, each at the lowest offset where it fits; kept only
 *  when each ends below t's old top, else the plan is restored and the
 *  next offset above is tried (4 trials at most).
 *  The first step that ends below t's top is kept and the loop goes on;
 *  when none does, the squeeze stops.
 *
 *  Validity. A region's free tensors are placed among its fixed pieces
 *  (improve_region.c). A window's free tensors meet, inside it, only each other
 *  and its obstacles, so its plan keeps the whole plan valid; a moved t
 *  misses every tensor it meets but the window's free ones, which are
 *  planned around it. An ejected t misses all but the evicted tensors,
 *  and each of those is placed where it misses every tensor it meets
 *  but the evicted ones not yet placed. Every kept step lowers the window's top below t's,
 *  so the plan never gets worse, and planner_run() verifies it as usual.
 *
 *  Effort. Everything counts in work units (a region as in
 *  improve_region.c, a window as in improve.c, a scan of the tensors as
 *  one unit each), the stop callback is polled once a region, once a
 *  window and once an ejection trial, and a region or window that would
 *  pass the effort ends the squeeze with the plan as it is:
 *  deterministic, no clock.
 */
#include "improve.h"
#include "improve_int.h"

#include <stdlib.h>
#include <string.h>

#include "exact_int.h"

/* Window widths, in spans, tried in turn around the top tensor. */
static const uint32_t sq_widths[] = {200, 400, 800};
#define N_SQ_WIDTHS (sizeof sq_widths / sizeof *sq_widths)
/* Spans a window reaches at least beyond the lifetime of the tensor it is
 * centred on; a tensor that leaves less in a window is moved instead. */
#define SQ_MARGIN 50u
/* The ejection: tensors that live at most EJ_SHORT spans may be
 * evicted. */
#define EJ_SHORT 200u
/* At most this many tensors are evicted. */
#define EJ_MAX_EVICT 64u
/* Offsets tried for the ejected tensor, lowest first. */
#define EJ_TRIES 4u

static int cmp_u64pair(const void *a, const void *b)
{
  const uint64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The lowest offset from ymin at which tensor kt fits among the tensors
 * it meets in time that are not marked in I->done, or UINT64_MAX when
 * out of memory. */
static uint64_t lowest_gap(struct imp *I, uint32_t kt, uint64_t ymin)
{
  uint32_t n = 0;
  uint64_t *iv = malloc(2 * ((size_t)I->m + 1) * sizeof *iv);
  if (!iv)
    return UINT64_MAX;
  for (uint32_t k = 0; k < I->m; k++) {
    if (k == kt || I->done[k] || I->slo[k] > I->shi[kt] ||
        I->shi[k] < I->slo[kt])
      continue;
    iv[2 * n] = I->off[k];
    iv[2 * n + 1] = I->off[k] + I->p->t[I->gi[k]].size;
    n++;
  }
  qsort(iv, n, 2 * sizeof *iv, cmp_u64pair);
  I->work += I->m + exact__sort_units(n);
  uint64_t size = I->p->t[I->gi[kt]].size, al = I->p->align[I->gi[kt]];
  uint64_t y = planner__align_up(ymin, al);
  for (uint32_t q = 0; q < n && iv[2 * q] < y + size; q++)
    if (iv[2 * q + 1] > y)
      y = planner__align_up(iv[2 * q + 1], al);
  free(iv);
  return y;
}

/* Re-plans the window [a, b]: its free tensors are the unpinned ones
 * that live only inside it, every other tensor live in it is an
 * obstacle. With kt != NONE (a tensor that lives beyond the window),
 * kt first moves to the lowest offset where it misses every tensor but
 * the window's free ones. Keeps the result when its arena is below top.
 * Returns 0 (*better set), 1 (effort) or an error. */
static int squeeze_window(struct imp *I, uint32_t a, uint32_t b, uint64_t top,
                          uint32_t kt, int *better)
{
  uint32_t nf = 0, ns = 0;
  *better = 0;
  for (uint32_t k = 0; k < I->m; k++) {
    if (k == kt || I->slo[k] > b || I->shi[k] < a)
      continue;
    if (I->slo[k] >= a && I->shi[k] <= b &&
        I->p->t[I->gi[k]].pinned == PLANNER_NOT_PINNED) {
      I->order[nf++] = k;
      I->done[k] = 1;
    }
  }
  I->work += I->m;
  uint64_t old = 0;
  if (kt != NONE) {
    uint64_t y = lowest_gap(I, kt, 0);
    old = I->off[kt];
    if (y == UINT64_MAX || y + I->p->t[I->gi[kt]].size >= top ||
        y >= old) {
      for (uint32_t q = 0; q < nf; q++)
        I->done[I->order[q]] = 0;
      return y == UINT64_MAX ? ARENA_ENOMEM : 0;
    }
    I->off[kt] = y;
  }
  I->nact = 0;
  for (uint32_t k = 0; k < I->m; k++)
    if (!I->done[k] && I->slo[k] <= b && I->shi[k] >= a)
      I->act[I->nact++] = k;
  for (uint32_t q = 0; q < nf; q++)
    I->done[I->order[q]] = 0;
  improve__obstacles(I, a, b, &ns);
  for (uint32_t q = 0; q < nf; q++)
    improve__add_free(I, I->order[q], a, b, &ns);
  for (uint32_t j = 0; j < ns; j++)
    I->wbest[j] = I->wk[j] == NONE ? (uint64_t)I->wt[j].pinned
                                   : I->off[I->wk[j]];
  I->seeded = kt == NONE;
  I->cap = top - 1;
  I->given = top;
  int rc = improve__plan_window(I, ns);
  if (rc < 0)
    return rc;
  *better = rc == 0;
  if (*better)
    for (uint32_t j = 0; j < ns; j++)
      if (I->wk[j] != NONE)
        I->off[I->wk[j]] = I->wbest[j];
  if (!*better && kt != NONE)
    I->off[kt] = old;
  return I->work >= I->limit;
}

/* Places the evicted tensors ev[0 .. ne-1] (those of I->done), in turn,
 * each at the lowest offset at which it misses every tensor it meets in
 * time but the evicted ones not yet placed. Returns 1 when each ends
 * below top, else 0 (the offsets of those placed are then changed). */
static int first_fit(struct imp *I, const uint64_t *ev, uint32_t ne,
                     uint64_t top)
{
  for (uint32_t q = 0; q < ne; q++)
    I->done[ev[q]] = 1;
  int ok = 1;
  for (uint32_t q = 0; q < ne && ok; q++) {
    uint32_t k = (uint32_t)ev[q];
    uint64_t y = lowest_gap(I, k, 0);
    ok = y != UINT64_MAX && y + I->p->t[I->gi[k]].size < top;
    I->off[k] = y;
    I->done[k] = 0;
  }
  for (uint32_t q = 0; q < ne; q++)
    I->done[ev[q]] = 0;
  return ok;
}

/* One trial of the ejection of tensor kt (whose top is top): kt moves to
 * the lowest offset from *ymin at which it misses every tensor it meets
 * in time but the short ones (unpinned, living at most EJ_SHORT spans);
 * the short tensors it then overlaps in memory (at most EJ_MAX_EVICT)
 * are evicted and placed by first_fit(). Kept only when each of them
 * ends below top; else the plan is restored. *ymin becomes the next
 * offset to try, or UINT64_MAX when kt cannot go lower. Returns 0
 * (*better set), 1 (effort), ARENA_ENOMEM or ARENA_ECANCELED. */
static int eject_at(struct imp *I, uint32_t kt, uint64_t top, uint64_t *ymin,
                    int *better)
{
  uint64_t size = I->p->t[I->gi[kt]].size;
  for (uint32_t k = 0; k < I->m; k++)
    I->done[k] = k != kt && I->slo[k] <= I->shi[kt] &&
                 I->shi[k] >= I->slo[kt] && I->shi[k] - I->slo[k] < EJ_SHORT &&
                 I->p->t[I->gi[k]].pinned == PLANNER_NOT_PINNED;
  I->work += I->m;
  uint64_t y = lowest_gap(I, kt, *ymin);
  if (y == UINT64_MAX) {
    memset(I->done, 0, I->m);
    return ARENA_ENOMEM;
  }
  if (y + size >= top || y >= I->off[kt]) {
    memset(I->done, 0, I->m);
    *ymin = UINT64_MAX;
    return 0;
  }
  *ymin = y + size;
  /* The evicted tensors, by first span. */
  uint32_t ne = 0;
  for (uint32_t k = 0; k < I->m; k++)
    if (I->done[k] && I->off[k] < y + size &&
        I->off[k] + I->p->t[I->gi[k]].size > y)
      I->order[ne++] = k;
  memset(I->done, 0, I->m);
  I->work += I->m;
  if (ne > EJ_MAX_EVICT)
    return 0;
  if (I->work + (uint64_t)(ne + 2) * I->m > I->limit)
    return 1;
  const struct planner_options *o = I->p->o;
  if (o->stop && o->stop(o->stop_ctx))
    return ARENA_ECANCELED; /* polled once a trial, like once a window */
  uint64_t *keep = malloc(((size_t)I->m + 1) * sizeof *keep);
  uint64_t *ev = malloc(((size_t)ne + 1) * sizeof *ev);
  if (!keep || !ev) {
    free(keep);
    free(ev);
    return ARENA_ENOMEM;
  }
  for (uint32_t q = 0; q < ne; q++)
    ev[q] = (uint64_t)I->slo[I->order[q]] << 32 | I->order[q];
  qsort(ev, ne, sizeof *ev, improve__cmp_u64);
  for (uint32_t q = 0; q < ne; q++)
    ev[q] = (uint32_t)ev[q];
  memcpy(keep, I->off, I->m * sizeof *keep);
  I->work += I->m + exact__sort_units(ne);
  I->off[kt] = y;
  *better = first_fit(I, ev, ne, top);
  if (!*better)
    memcpy(I->off, keep, I->m * sizeof *keep);
  free(keep);
  free(ev);
  return 0;
}

/* The ejection of tensor kt: up to EJ_TRIES trials, from the lowest
 * offset up, until one is kept (*better = 1). Returns 0, 1 or an error. */
static int eject(struct imp *I, uint32_t kt, uint64_t top, int *better)
{
  uint64_t ymin = 0;
  int rc = 0;
  *better = 0;
  for (unsigned t = 0; t < EJ_TRIES && !rc && !*better && ymin != UINT64_MAX;
       t++)
    rc = eject_at(I, kt, top, &ymin, better);
  return rc;
}

/* One step: the windows around tensor kt, whose top is top, in turn
 * until one plans below top (*better = 1). Returns 0, 1 (effort) or an
 * error. */
static int squeeze_step(struct imp *I, uint32_t kt, uint64_t top,
                        int *better)
{
  uint32_t len = I->shi[kt] - I->slo[kt] + 1;
  int rc = improve__region_step(I, top, better);
  for (unsigned w = 0; w < N_SQ_WIDTHS && !rc && !*better; w++) {
    uint32_t W = sq_widths[w];
    if (len + SQ_MARGIN <= W) {
      uint32_t pad = (W - len) / 2;
      uint32_t a = I->slo[kt] > pad ? I->slo[kt] - pad : 0;
      uint32_t b = a + W - 1 < I->S ? a + W - 1 : I->S - 1;
      rc = squeeze_window(I, a, b, top, NONE, better);
      continue;
    }
    /* A long tensor: around its start, then around its end. */
    for (int e = 0; e < 2 && !rc && !*better; e++) {
      uint32_t c = e ? I->shi[kt] : I->slo[kt];
      uint32_t a = c > W / 2 ? c - W / 2 : 0;
      uint32_t b = a + W - 1 < I->S ? a + W - 1 : I->S - 1;
      rc = squeeze_window(I, a, b, top, kt, better);
    }
  }
  if (!rc && !*better)
    rc = eject(I, kt, top, better);
  return rc;
}

int planner__squeeze(const struct planner__prob *p, uint64_t *offsets,
                     uint64_t *arena, uint64_t work_limit, uint64_t *work)
{
  struct imp I;
  int rc = improve__start(&I, p, *work, work_limit);
  for (uint32_t k = 0; !rc && k < I.m; k++)
    I.off[k] = offsets[I.gi[k]];
  uint64_t top = *arena;
  int better = 1;
  while (!rc && better) {
    uint32_t kt = improve__top_tensor(&I, &top);
    if (top <= p->lb || p->t[I.gi[kt]].pinned != PLANNER_NOT_PINNED)
      break;
    rc = squeeze_step(&I, kt, top, &better);
  }
  if (rc >= 0) {
    improve__top_tensor(&I, &top);
    if (top < *arena) {
      for (uint32_t k = 0; k < I.m; k++)
        offsets[I.gi[k]] = I.off[k];
      *arena = top;
    }
  }
  *work = I.work > work_limit ? work_limit : I.work;
  improve__free(&I);
  return rc == 1 ? 0 : rc;
}

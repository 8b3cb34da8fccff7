/*
 * improve_region.c - the squeeze's region step: re-packs a region of the
 * plan, a band of memory below its top along all of time joined to a
 * deeper window of time, with everything outside the region fixed.
 *
 * On the XLA-like traces the tensors that reach the top of a plan are
 * small and live for thousands of operators, so no window of time holds
 * them, and the bytes they would need lie along their whole lives; what
 * keeps them up is how the tensors just below them are packed over all
 * of time near the most loaded point. A band of memory holds them with
 * their neighbours below, whatever their lifetimes, and a deeper window
 * around the band's fullest point in time frees the short tensors whose
 * gaps are there.
 *
 * DESIGN
 *  Let top be the plan's arena and E = top - LB. For window widths W of
 *  800 and then 400 spans, and for depths D = E, 2E, 4E, ..., 64E in turn
 *  (while D < top), the region is:
 *   - every span from offset top - D up (the band), except
 *   - the W spans centred on the span where the tensors' bytes from
 *     top - D up are most (the first of equals), from offset top - 8 D up
 *     (0 when that is below 0).
 *  Its free tensors are the unpinned ones that lie wholly inside it (at
 *  or above the region's lower edge at every span of their lives); every
 *  other tensor's part inside it is a fixed piece, and the region's lower
 *  edge is a fixed floor. The free tensors are placed anew among the
 *  fixed pieces, one at a time, each where it misses every piece and
 *  every tensor placed before it that it meets in time, in six runs:
 *  best fit (the smallest gap that holds it, the lowest of equals; above
 *  them all when none does) by breadth (the spans where the region holds
 *  the most bytes first, as greedy-breadth: each tensor ranked by the
 *  most bytes live at one span of its life, then by the first such span,
 *  then size descending) and by size descending; first fit (the lowest
 *  offset its alignment allows) by size descending, by length of life
 *  descending, by area (size x life) descending and by current offset
 *  ascending. Ties keep tensor order; a run is dropped as soon as a
 *  tensor would reach the lowest arena found so far. The lowest arena of
 *  the runs is kept when it is below top, and the squeeze goes on from
 *  the new plan; else the next region is tried.
 *
 *  Validity. A free tensor lies wholly inside the region, which holds no
 *  byte of a tensor outside it but the fixed pieces; each is placed where
 *  it misses every piece and every free tensor it meets in time, all of
 *  them inside the region. planner_run() verifies the plan as usual.
 *
 *  Effort. The runs keep the pieces and placed tensors sorted by offset
 *  and scan them from the bottom; every entry scanned or moved is a work
 *  unit, like each tensor of the scans that build the region and find its
 *  fullest span, and sorts count as usual. The step takes at most half
 *  of what is left of the effort (RG_SHARE), leaving the rest to the
 *  squeeze's windows and ejection. The stop callback is polled once a
 *  region, and the step stops with the plan as it is as soon as the next
 *  scan or placement could pass its share: deterministic, no clock.
 */
#include "improve_int.h"

#include <stdlib.h>
#include <string.h>

#include "exact_int.h"

/* Spans of the deeper window of a region, tried in turn. */
static const uint32_t rg_widths[] = {800, 400};
#define N_RG_WIDTHS (sizeof rg_widths / sizeof *rg_widths)
/* The window reaches this many times deeper than the band. */
#define RG_WDEPTH 8u
/* Share of what is left of the effort that one region step may take, as
 * a divisor: the rest stays for the squeeze's windows and ejection. */
#define RG_SHARE 2u
/* Depths tried, as powers of two times the excess over the load bound. */
#define RG_DEPTHS 7u
/* Orders of the runs (see DESIGN). */
enum { ORD_SIZE, ORD_BREADTH, ORD_LIFE, ORD_AREA, ORD_OFFSET };
/* The runs of a region: an order, and best fit (1) or first fit (0). */
static const struct {
  int order, best;
} runs[] = {{ORD_BREADTH, 1}, {ORD_SIZE, 1}, {ORD_SIZE, 0},
            {ORD_LIFE, 0},    {ORD_AREA, 0}, {ORD_OFFSET, 0}};
#define N_RUNS (sizeof runs / sizeof *runs)

/* The segments of spans of region R: first span, last span and lower
 * edge of each; returns their count (at most 3). */
static unsigned segments(const struct imp *I, const struct region *R,
                         uint32_t lo[3], uint32_t hi[3], uint64_t edge[3])
{
  unsigned g = 0;
  if (R->a > 0) {
    lo[g] = 0;
    hi[g] = R->a - 1;
    edge[g++] = R->base;
  }
  lo[g] = R->a;
  hi[g] = R->b;
  edge[g++] = R->wbase;
  if (R->b + 1 < I->S) {
    lo[g] = R->b + 1;
    hi[g] = I->S - 1;
    edge[g++] = R->base;
  }
  return g;
}

int improve__region_collect(struct imp *I, const struct region *R, uint32_t *nf,
                   uint32_t *no)
{
  return improve__region_collect_in(I, R, NULL, I->m, nf, no);
}

int improve__region_collect_in(struct imp *I, const struct region *R,
                               const uint32_t *cand, uint32_t nc,
                               uint32_t *nf, uint32_t *no)
{
  uint32_t lo[3], hi[3];
  uint64_t edge[3];
  unsigned ng = segments(I, R, lo, hi, edge);
  *nf = *no = 0;
  I->work += I->m;
  for (uint32_t j = 0; j < nc; j++) {
    uint32_t k = cand ? cand[j] : j;
    uint64_t e = I->off[k] + I->p->t[I->gi[k]].size, emax = 0;
    uint64_t emin = UINT64_MAX;
    for (unsigned g = 0; g < ng; g++)
      if (lo[g] <= I->shi[k] && hi[g] >= I->slo[k]) {
        emax = edge[g] > emax ? edge[g] : emax;
        emin = edge[g] < emin ? edge[g] : emin;
      }
    if (e <= emin)
      continue; /* wholly below the region */
    if (I->off[k] >= emax &&
        I->p->t[I->gi[k]].pinned == PLANNER_NOT_PINNED) {
      I->order[(*nf)++] = k;
      continue;
    }
    for (unsigned g = 0; g < ng; g++) {
      if (lo[g] > I->shi[k] || hi[g] < I->slo[k] || e <= edge[g])
        continue;
      if (*no + 2 * ng > I->m)
        return 1;
      struct obst *o = &I->ob[(*no)++];
      o->lo = I->slo[k] > lo[g] ? I->slo[k] : lo[g];
      o->hi = I->shi[k] < hi[g] ? I->shi[k] : hi[g];
      o->off = I->off[k] > edge[g] ? I->off[k] : edge[g];
      o->top = e;
    }
  }
  for (unsigned g = 0; g < ng; g++)
    if (edge[g]) {
      struct obst *o = &I->ob[(*no)++];
      o->lo = lo[g];
      o->hi = hi[g];
      o->off = 0;
      o->top = edge[g];
    }
  return 0;
}

int improve__cmp_key3(const void *x, const void *y)
{
  const uint64_t *a = x, *b = y;
  for (int q = 0; q < 3; q++)
    if (a[q] != b[q])
      return a[q] < b[q] ? -1 : 1;
  return 0;
}

/* The entry v of the u sorted distinct ends pt (it is there). */
static uint64_t *find_end(uint64_t *pt, uint32_t u, uint64_t v)
{
  return bsearch(&v, pt, u, sizeof *pt, improve__cmp_u64);
}

/* The breadth keys of the free entries into X->bkey: for each, the most
 * bytes of the region live at one span of its life, and the first span
 * where that is reached (greedy-breadth visits the spans by breadth,
 * most first, and places their tensors there). Returns 0, 1 (effort) or
 * ARENA_ENOMEM. */
static int breadth_keys(struct rstate *X, struct imp *I)
{
  uint32_t n = X->nfix + X->nfree, u = 0;
  /* Sorting the 2 n ends, and the 2 n + nfree binary searches among
   * them. */
  uint64_t units = 2 * (uint64_t)n + exact__sort_units(2 * (uint64_t)n) +
                   exact__sort_units(3 * (uint64_t)n);
  if (I->work + units > I->limit)
    return 1;
  uint64_t *pt = malloc((2 * (size_t)n + 1) * sizeof *pt);
  int64_t *b = calloc(2 * (size_t)n + 1, sizeof *b);
  X->bkey = malloc((2 * (size_t)X->nfree + 1) * sizeof *X->bkey);
  if (!pt || !b || !X->bkey) {
    free(pt);
    free(b);
    return ARENA_ENOMEM;
  }
  for (uint32_t j = 0; j < n; j++) {
    pt[2 * j] = X->e[j].lo;
    pt[2 * j + 1] = (uint64_t)X->e[j].hi + 1;
  }
  qsort(pt, 2 * (size_t)n, sizeof *pt, improve__cmp_u64);
  for (uint32_t q = 0; q < 2 * n; q++)
    if (u == 0 || pt[q] != pt[u - 1])
      pt[u++] = pt[q];
  /* b[s]: bytes live in [pt[s], pt[s + 1]). */
  for (uint32_t j = 0; j < n; j++) {
    const struct rent *t = &X->e[j];
    uint64_t *s0 = find_end(pt, u, t->lo);
    uint64_t *s1 = find_end(pt, u, (uint64_t)t->hi + 1);
    b[s0 - pt] += (int64_t)(t->top - t->off);
    b[s1 - pt] -= (int64_t)(t->top - t->off);
  }
  for (uint32_t s = 1; s < u; s++)
    b[s] += b[s - 1];
  I->work += units;
  int rc = 0;
  for (uint32_t j = 0; j < X->nfree && !rc; j++) {
    const struct rent *t = &X->e[X->nfix + j];
    if (I->work + u > I->limit) {
      rc = 1;
      break;
    }
    uint64_t *s0 = find_end(pt, u, t->lo);
    uint64_t most = 0, at = 0;
    for (uint32_t s = (uint32_t)(s0 - pt); s < u && pt[s] <= t->hi; s++) {
      if ((uint64_t)b[s] > most) {
        most = (uint64_t)b[s];
        at = s;
      }
      I->work++;
    }
    X->bkey[2 * j] = UINT64_MAX - most;
    X->bkey[2 * j + 1] = at;
  }
  free(pt);
  free(b);
  return rc;
}

/* Free entry j of order v as a sort key of three words, the last its
 * index (so that ties keep tensor order). */
static void order_key(const struct rstate *X, const struct imp *I, int v,
                      uint32_t j, uint64_t key[3])
{
  const struct rent *t = &X->e[X->nfix + j];
  uint64_t size = t->top - t->off, life = (uint64_t)(t->hi - t->lo) + 1;
  uint64_t k0 = 0, k1 = 0;
  switch (v) {
  case ORD_SIZE:
    k0 = UINT64_MAX - size;
    k1 = UINT64_MAX - life;
    break;
  case ORD_LIFE:
    k0 = UINT64_MAX - life;
    k1 = UINT64_MAX - size;
    break;
  case ORD_BREADTH:
    /* Then the first such span, then size descending (sizes of 2^32 - 1
     * bytes and more tie). */
    k0 = X->bkey[2 * j];
    k1 = X->bkey[2 * j + 1] << 32 |
         (UINT32_MAX - (size < UINT32_MAX ? size : UINT32_MAX));
    break;
  case ORD_AREA:
    k0 = UINT64_MAX - (size <= UINT64_MAX / life ? size * life : UINT64_MAX);
    k1 = UINT64_MAX - size;
    break;
  default:
    k0 = I->off[X->fk[j]];
    break;
  }
  key[0] = k0;
  key[1] = k1;
  key[2] = j;
}

/* Fills X->ord with order v of the free entries. Returns 0, 1 (effort)
 * or ARENA_ENOMEM. */
static int make_order(struct rstate *X, struct imp *I, int v)
{
  int rc = v == ORD_BREADTH && !X->bkey ? breadth_keys(X, I) : 0;
  if (rc)
    return rc;
  if (I->work + X->nfree + exact__sort_units(X->nfree) > I->limit)
    return 1;
  for (uint32_t j = 0; j < X->nfree; j++)
    order_key(X, I, v, j, &X->key[3 * (size_t)j]);
  qsort(X->key, X->nfree, 3 * sizeof *X->key, improve__cmp_key3);
  for (uint32_t j = 0; j < X->nfree; j++)
    X->ord[j] = (uint32_t)X->key[3 * (size_t)j + 2];
  I->work += X->nfree + exact__sort_units(X->nfree);
  return 0;
}

/* The offset for entry t of size bytes (alignment al) among the n
 * entries of X->list: first fit (the lowest where it misses every entry
 * it meets in time) or best fit (the start of the smallest gap between
 * them that holds it, the lowest of equals; above them all when none
 * does). Adds the entries scanned to *scanned. */
static uint64_t fit(const struct rstate *X, const struct rent *t,
                    uint64_t size, uint64_t al, uint32_t n, int best,
                    uint64_t *scanned)
{
  uint64_t y = 0, at = UINT64_MAX, gap = UINT64_MAX;
  uint32_t q = 0;
  for (; q < n; q++) {
    const struct rent *u = &X->e[X->list[q]];
    if (u->lo > t->hi || u->hi < t->lo)
      continue;
    uint64_t ya = planner__align_up(y, al);
    if (!best && u->off >= ya + size)
      break;
    if (best && u->off >= ya + size && u->off - y < gap) {
      gap = u->off - y;
      at = ya;
    }
    if (u->top > y)
      y = u->top;
  }
  *scanned += q;
  return at != UINT64_MAX ? at : planner__align_up(y, al);
}

/* Places entry x (size bytes, alignment al) by fit() among the n entries
 * of X->list and inserts it there by offset. Returns its top. */
static uint64_t place(struct rstate *X, struct imp *I, uint32_t x,
                      uint64_t size, uint64_t al, uint32_t n, int best)
{
  struct rent *t = &X->e[x];
  uint64_t units = 1;
  t->off = fit(X, t, size, al, n, best, &units);
  t->top = t->off + size;
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (X->e[X->list[mid]].off <= t->off)
      lo = mid + 1;
    else
      hi = mid;
    units++;
  }
  memmove(&X->list[lo + 1], &X->list[lo], (n - lo) * sizeof *X->list);
  X->list[lo] = x;
  I->work += units + (n - lo);
  return t->top;
}

uint64_t improve__place_order(struct rstate *X, struct imp *I, uint64_t given,
                            int best)
{
  uint32_t n = X->nfix;
  memcpy(X->list, X->fixed, n * sizeof *X->list);
  uint64_t arena = 0;
  for (uint32_t q = 0; q < X->nfree; q++) {
    /* at most: n entries scanned, n moved, 33 halvings of the insertion
     * point's binary search and the placement itself */
    if (I->work + 2 * (uint64_t)n + 34 > I->limit)
      return 0;
    uint32_t j = X->ord[q], x = X->nfix + j;
    uint64_t size = I->p->t[I->gi[X->fk[j]]].size;
    uint64_t e = place(X, I, x, size, X->al[j], n++, best);
    if (e >= given)
      return UINT64_MAX;
    arena = e > arena ? e : arena;
  }
  for (uint32_t f = 0; f < X->nfix; f++)
    arena = X->e[f].top > arena ? X->e[f].top : arena;
  return arena;
}

void improve__rstate_free(struct rstate *X)
{
  free(X->e);
  free(X->al);
  free(X->fixed);
  free(X->list);
  free(X->key);
  free(X->ord);
  free(X->best);
  free(X->bkey);
}

int improve__rstate_init(struct rstate *X, struct imp *I, uint32_t ns,
                       uint32_t nf)
{
  memset(X, 0, sizeof *X);
  size_t n1 = (size_t)ns + nf + 1, f1 = (size_t)nf + 1;
  X->e = malloc(n1 * sizeof *X->e);
  X->al = malloc(f1 * sizeof *X->al);
  X->fixed = malloc(((size_t)ns + 1) * sizeof *X->fixed);
  X->list = malloc(n1 * sizeof *X->list);
  X->key = malloc(3 * (n1 > f1 ? n1 : f1) * sizeof *X->key);
  X->ord = malloc(f1 * sizeof *X->ord);
  X->best = malloc(f1 * sizeof *X->best);
  if (!X->e || !X->al || !X->fixed || !X->list || !X->key || !X->ord ||
      !X->best)
    return ARENA_ENOMEM;
  X->nfix = ns;
  X->nfree = nf;
  X->fk = I->order;
  for (uint32_t j = 0; j < ns; j++) {
    const struct planner_tensor *t = &I->wt[j];
    X->e[j].lo = (uint32_t)t->first;
    X->e[j].hi = (uint32_t)t->last;
    X->e[j].off = (uint64_t)t->pinned;
    X->e[j].top = (uint64_t)t->pinned + t->size;
    X->key[3 * (size_t)j] = X->e[j].off;
    X->key[3 * (size_t)j + 1] = 0;
    X->key[3 * (size_t)j + 2] = j;
  }
  qsort(X->key, ns, 3 * sizeof *X->key, improve__cmp_key3);
  for (uint32_t j = 0; j < ns; j++)
    X->fixed[j] = (uint32_t)X->key[3 * (size_t)j + 2];
  for (uint32_t j = 0; j < nf; j++) {
    uint32_t k = I->order[j];
    struct rent *t = &X->e[ns + j];
    t->lo = I->slo[k];
    t->hi = I->shi[k];
    t->off = I->off[k];
    t->top = t->off + I->p->t[I->gi[k]].size;
    X->al[j] = I->p->align[I->gi[k]];
  }
  I->work += ns + nf + exact__sort_units(ns);
  return 0;
}

/* Re-packs region R of the plan whose arena is top (see DESIGN). Returns
 * 0 (*better set), 1 (effort) or an error. */
static int replan_region(struct imp *I, const struct region *R, uint64_t top,
                         int *better)
{
  uint32_t nf, no, ns = 0;
  *better = 0;
  if (improve__region_collect(I, R, &nf, &no) || nf == 0)
    return 0;
  if (I->work + 2 * exact__sort_units(no) + no + 2 * (uint64_t)nf >
      I->limit)
    return 1;
  improve__emit_obstacles(I, no, 0, &ns);
  struct rstate X;
  int rc = improve__rstate_init(&X, I, ns, nf);
  uint64_t lowest = top;
  for (unsigned v = 0; !rc && v < N_RUNS; v++) {
    if ((rc = make_order(&X, I, runs[v].order)) != 0)
      break;
    uint64_t a = improve__place_order(&X, I, lowest, runs[v].best);
    if (a == 0)
      rc = 1;
    else if (a < lowest) {
      lowest = a;
      for (uint32_t j = 0; j < nf; j++)
        X.best[j] = X.e[ns + j].off;
    }
  }
  if (rc >= 0 && lowest < top) {
    for (uint32_t j = 0; j < nf; j++)
      I->off[I->order[j]] = X.best[j];
    I->work += nf;
    *better = 1;
  }
  improve__rstate_free(&X);
  return rc;
}

/* One region: depth bytes of band below top, the window of width spans
 * around its fullest span. Returns 0 (*better set), 1 (effort) or an
 * error. */
static int one_region(struct imp *I, uint64_t top, uint64_t depth,
                      uint32_t width, int *better)
{
  if (I->work + 2 * (uint64_t)I->m + I->S > I->limit)
    return 1;
  const struct planner_options *o = I->p->o;
  if (o->stop && o->stop(o->stop_ctx))
    return ARENA_ECANCELED; /* polled once a region, like once a window */
  struct region R;
  R.base = top - depth;
  uint32_t c = improve__fullest_span(I, R.base);
  if (c == NONE)
    return ARENA_ENOMEM;
  R.a = c > width / 2 ? c - width / 2 : 0;
  R.b = R.a + width - 1 < I->S ? R.a + width - 1 : I->S - 1;
  R.wbase = depth < top / RG_WDEPTH ? top - RG_WDEPTH * depth : 0;
  return replan_region(I, &R, top, better);
}

int improve__region_step(struct imp *I, uint64_t top, int *better)
{
  uint64_t excess = top - I->p->lb, limit = I->limit;
  int rc = 0;
  *better = 0;
  if (I->work >= limit)
    return 1;
  I->limit = I->work + (limit - I->work) / RG_SHARE;
  for (unsigned w = 0; w < N_RG_WIDTHS && !rc && !*better; w++)
    for (unsigned d = 0; d < RG_DEPTHS && !rc && !*better; d++) {
      uint64_t depth = excess << d;
      if (depth >= top || depth >> d != excess)
        break;
      rc = one_region(I, top, depth, rg_widths[w], better);
    }
  I->limit = limit;
  return rc == 1 && I->work < limit ? 0 : rc;
}

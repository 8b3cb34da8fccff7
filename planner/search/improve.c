/*
 * improve.c - windowed re-planning of large graphs: a whole new plan,
 * built window by window outward from the most loaded point in time, each
 * window planned on its own with its lifetimes cut to it and the tensors
 * already placed as fixed obstacles.
 *
 * The exact search cannot finish one descent through a component of tens
 * of thousands of tensors within a usual effort (docs/exact.md), and the
 * heuristics see the whole graph at once, so their early choices leave
 * gaps that tensors met much later cannot use. A window of a few hundred
 * points in time is small enough for the heuristics (and, where they
 * fail, the exact search) to pack it nearly perfectly.
 *
 * One such pass is planner__windows() (improve.h); search.c decides when
 * it runs and with which windows, and runs the other passes around it.
 * This file also holds the helpers every pass shares (improve_int.h).
 *
 * DESIGN
 *  Time is cut into spans at every first and last + 1 of a sized tensor.
 *  Let p be the span of the highest load. The peak window holds the spans
 *  within `ahead` spans of p, with every tensor live in it cut to it. Its
 *  tensors live through the whole window come first, stacked at the
 *  bottom in order of their true last use, latest first (a staircase: as
 *  they end after the window, the space they leave is always on top of
 *  the stack, next to the tensors still to come). The rest of the window
 *  is planned (see below), and the tensors live within `step` spans of p
 *  are committed: their offsets are final.
 *
 *  Then a sweep to the right: the next window starts at the first span not
 *  yet covered and reaches `ahead` spans further; its free tensors
 *  are those that start in it (all of them are uncommitted), cut to the
 *  window, and its obstacles are the committed tensors live in it, cut to
 *  it and merged where they are adjacent in memory with the same cut
 *  lifetime. After it is planned, the tensors that start in its first
 *  `step` spans are committed. Then the same sweep to the left, with
 *  time reversed (tensors that end in the window). Every tensor lies in
 *  exactly one of the three parts (live near p, starting after, ending
 *  before), so every tensor is committed once.
 *
 *  Validity. Two tensors that overlap in time are separated in memory in
 *  the window that commits the later of them: in the right sweep the
 *  later one starts inside that window and the earlier one is live at that
 *  start, so both are in it (one free, one an obstacle) and their cut
 *  lifetimes still meet; the left sweep is the mirror image, and two
 *  tensors committed by one window are both free in it. Tensors of the
 *  left and right sweeps never meet in time. So the plan is valid, and
 *  planner_run() verifies it like every plan.
 *
 *  Planning a window. Every window aims at cap, which starts at the load
 *  bound of the graph. The four heuristics run on the window in turn
 *  until one fits cap; if none does and the effort allows, the exact
 *  search looks for a plan within cap from the best of them (capacity
 *  mode). If that fails too, the best plan found is kept and cap rises to
 *  its arena, so that later windows aim no lower than what is already
 *  committed.
 *
 *  The new plan replaces the given one only when its arena is lower, so
 *  the pass never makes a plan worse. It is deterministic: it depends on
 *  the graph, the options and the effort only; the work of every window
 *  is counted in the exact planner's work units (the heuristics by the
 *  size of the window), and the pass is abandoned, leaving the plan as it
 *  was, when the next window would pass the effort.
 */
#include "improve.h"
#include "improve_int.h"

#include <stdlib.h>
#include <string.h>

#include "exact_int.h"
#include "heuristics.h"
#include "planner_sort.h"

/* Work units per tensor and log2 of the window for one heuristic run on
 * a window (index and placement), set so that the pass runs at about the
 * exact search's rate of units per second (docs/exact.md): with 4 it ran
 * at 120 to 250 units per microsecond, against the search's 400 to 960. */
#define IMPROVE_HEUR_UNITS 8u
/* Share of what is left of the effort that one window's exact search may
 * take, as a divisor. */
#define IMPROVE_EXACT_SHARE 16u
/* The same for the peak window, the first window of a pass, when the
 * pass before had the same peak window and could not plan it below the
 * arena: the peak window decides a pass (when it misses the bound, the
 * cap rises at the most loaded point and no later window can bring the
 * arena below it), and with a sixteenth again the retry would only
 * repeat the miss with less effort. A quarter gives it four times what
 * the first try had, and the first try stays cheap where no effort
 * makes the peak window fit (docs/exact.md, "Windowed re-planning"). */
#define IMPROVE_RETRY_SHARE 4u


/* The heuristics tried on a window, in turn, until one fits cap. */
static const enum planner_algo win_algos[] = {
    PLANNER_ALGO_GREEDY_BREADTH,
    PLANNER_ALGO_GREEDY_SIZE,
    PLANNER_ALGO_TFLITE_BESTFIT,
    PLANNER_ALGO_TFLM_GREEDY,
};
#define N_WIN_ALGOS (sizeof win_algos / sizeof *win_algos)

/* The a-th heuristic tried on a window: I->first when it is set, then
 * the others in the order of win_algos. */
static enum planner_algo win_algo(const struct imp *I, unsigned a)
{
  if (I->first == PLANNER_ALGO_BEST)
    return win_algos[a];
  if (a == 0)
    return I->first;
  for (unsigned q = 0, k = 0; q < N_WIN_ALGOS; q++)
    if (win_algos[q] != I->first && ++k == a)
      return win_algos[q];
  return win_algos[a]; /* not reached while first is one of them */
}

uint32_t improve__top_tensor(struct imp *I, uint64_t *top)
{
  uint32_t at = 0;
  *top = 0;
  for (uint32_t k = 0; k < I->m; k++) {
    uint64_t e = I->off[k] + I->p->t[I->gi[k]].size;
    if (e > *top) {
      *top = e;
      at = k;
    }
  }
  I->work += I->m;
  return at;
}

void improve__free(struct imp *I)
{
  free(I->gi); free(I->slo); free(I->shi); free(I->off); free(I->done);
  free(I->act); free(I->order); free(I->wt); free(I->wk); free(I->woff);
  free(I->wbest); free(I->ob);
}

/* Spans of every sized tensor. Returns 0 or ARENA_ENOMEM. */
static int build_spans(struct imp *I)
{
  const struct planner__prob *p = I->p;
  uint32_t m = I->m;
  uint64_t *pt = malloc((2 * (size_t)m + 1) * sizeof *pt);
  if (!pt)
    return ARENA_ENOMEM;
  for (uint32_t k = 0; k < m; k++) {
    pt[2 * k] = (uint64_t)p->t[I->gi[k]].first;
    pt[2 * k + 1] = (uint64_t)p->t[I->gi[k]].last + 1;
  }
  uint32_t u = exact__sections(pt, m, I->slo, I->shi);
  free(pt);
  if (m && !u)
    return ARENA_ENOMEM;
  I->S = u - 1;
  I->work += 2 * (uint64_t)m + 2 * exact__sort_units(m);
  return 0;
}

uint32_t improve__fullest_span(struct imp *I, uint64_t base)
{
  int64_t *d = calloc((size_t)I->S + 1, sizeof *d);
  if (!d)
    return NONE;
  for (uint32_t k = 0; k < I->m; k++) {
    uint64_t part = I->p->t[I->gi[k]].size;
    if (base) {
      uint64_t e = I->off[k] + part;
      if (e <= base)
        continue;
      part = e - (I->off[k] > base ? I->off[k] : base);
    }
    d[I->slo[k]] += (int64_t)part;
    d[I->shi[k] + 1] -= (int64_t)part;
  }
  int64_t l = 0, most = -1;
  uint32_t at = 0;
  for (uint32_t s = 0; s < I->S; s++) {
    l += d[s];
    if (l > most) {
      most = l;
      at = s;
    }
  }
  free(d);
  I->work += I->m + I->S;
  return at;
}

int improve__cmp_u64(const void *a, const void *b)
{
  const uint64_t *x = a, *y = b;
  return *x < *y ? -1 : *x > *y;
}

static int cmp_obst(const void *a, const void *b)
{
  const struct obst *x = a, *y = b;
  if (x->lo != y->lo)
    return x->lo < y->lo ? -1 : 1;
  if (x->hi != y->hi)
    return x->hi < y->hi ? -1 : 1;
  return x->off < y->off ? -1 : x->off > y->off;
}

/* Appends the committed tensors live in [a, b] to the window's graph as
 * pinned obstacles, cut to the window; those with the same cut lifetime
 * that touch in memory become one. *ns is the window's tensor count. */
void improve__obstacles(struct imp *I, uint32_t a, uint32_t b, uint32_t *ns)
{
  uint32_t no = 0;
  for (uint32_t q = 0; q < I->nact; q++) {
    uint32_t k = I->act[q];
    if (I->slo[k] > b || I->shi[k] < a)
      continue;
    struct obst *o = &I->ob[no++];
    o->lo = I->slo[k] > a ? I->slo[k] : a;
    o->hi = I->shi[k] < b ? I->shi[k] : b;
    o->off = I->off[k];
    o->top = o->off + I->p->t[I->gi[k]].size;
  }
  I->work += I->nact;
  improve__emit_obstacles(I, no, a, ns);
}

/* Appends the obstacles I->ob[0 .. no-1] (spans from a) to the window's
 * graph as pinned tensors, merged where they touch in memory with the
 * same cut lifetime; *ns is the window's tensor count. */
void improve__emit_obstacles(struct imp *I, uint32_t no, uint32_t a,
                             uint32_t *ns)
{
  qsort(I->ob, no, sizeof *I->ob, cmp_obst);
  I->work += exact__sort_units(no);
  for (uint32_t q = 0; q < no;) {
    uint32_t e = q + 1;
    uint64_t top = I->ob[q].top;
    while (e < no && I->ob[e].lo == I->ob[q].lo &&
           I->ob[e].hi == I->ob[q].hi && I->ob[e].off == top)
      top = I->ob[e++].top;
    struct planner_tensor *t = &I->wt[*ns];
    t->id = *ns;
    t->size = top - I->ob[q].off;
    t->first = I->ob[q].lo - a;
    t->last = I->ob[q].hi - a;
    t->align = 0;
    t->pinned = (int64_t)I->ob[q].off;
    t->alias = 0;
    t->has_alias = 0;
    I->wk[(*ns)++] = NONE;
    q = e;
  }
}

/* Appends sized tensor k to the window's graph as a free tensor cut to
 * [a, b]. */
void improve__add_free(struct imp *I, uint32_t k, uint32_t a, uint32_t b,
                       uint32_t *ns)
{
  const struct planner_tensor *g = &I->p->t[I->gi[k]];
  struct planner_tensor *t = &I->wt[*ns];
  t->id = *ns;
  t->size = g->size;
  t->first = (I->slo[k] > a ? I->slo[k] : a) - a;
  t->last = (I->shi[k] < b ? I->shi[k] : b) - a;
  t->align = g->align;
  t->pinned = PLANNER_NOT_PINNED;
  t->alias = 0;
  t->has_alias = 0;
  I->wk[(*ns)++] = k;
}

uint32_t improve__window(struct imp *I, uint32_t a, uint32_t b)
{
  uint32_t ns = 0;
  improve__obstacles(I, a, b, &ns);
  for (uint32_t k = 0; k < I->m; k++)
    if (!I->done[k] && I->slo[k] <= b && I->shi[k] >= a)
      improve__add_free(I, k, a, b, &ns);
  I->work += I->m;
  return ns;
}

/* Units that planning a window of ns tensors may take before its exact
 * search: the index and every heuristic. */
static uint64_t window_units(uint32_t ns)
{
  return (1 + N_WIN_ALGOS) * IMPROVE_HEUR_UNITS * exact__sort_units(ns);
}

/* Plans the window's graph of ns tensors (its free ones and obstacles)
 * within I->cap if it can, into I->wbest; raises I->cap to the arena
 * found when it cannot. Returns 0; 1 when the effort would be passed
 * (nothing planned) or when cap has reached the arena of the given plan
 * (the pass can no longer beat it); ARENA_ENOMEM or ARENA_ECANCELED. */
int improve__plan_window(struct imp *I, uint32_t ns)
{
  if (I->work + window_units(ns) > I->limit)
    return 1;
  const struct planner_options *o = I->p->o;
  if (o->stop && o->stop(o->stop_ctx))
    return ARENA_ECANCELED; /* polled once a window, like the search */
  struct planner_options wo = *o;
  wo.capacity = 0;
  wo.threads = 1;
  struct planner_graph g = {I->wt, ns};
  struct planner__prob wp;
  int rc = planner__prob_init(&wp, &g, &wo);
  if (rc)
    return rc;
  I->work += IMPROVE_HEUR_UNITS * exact__sort_units(ns);
  uint64_t best = I->seeded ? planner__arena_of(&wp, I->wbest) : UINT64_MAX;
  /* Asked whether the window fits cap, the search explores the same
   * nodes from any plan that does not: one heuristic (I->first) is
   * tried, for the chance that it fits. */
  unsigned na = I->fit ? 1 : N_WIN_ALGOS;
  for (unsigned a = 0; a < na && best > I->cap; a++) {
    rc = planner__heuristic(&wp, win_algo(I, a), I->woff);
    I->work += IMPROVE_HEUR_UNITS * exact__sort_units(ns);
    if (rc)
      break;
    uint64_t arena = planner__arena_of(&wp, I->woff);
    if (arena < best) {
      best = arena;
      memcpy(I->wbest, I->woff, ns * sizeof *I->wbest);
    }
  }
  if (!rc && best > I->cap && best > wp.lb) {
    /* The exact search from the best heuristic plan, minimising until it
     * fits cap. */
    struct planner_plan r;
    planner_plan_init(&r);
    r.arena_bytes = best;
    r.lower_bound_bytes = wp.lb;
    uint64_t left = I->limit - I->work;
    uint64_t lim = I->work + left / (I->peak ? IMPROVE_RETRY_SHARE
                                             : IMPROVE_EXACT_SHARE);
    if (I->fit) {
      lim = I->limit;
      wo.capacity = I->cap; /* read by the search only */
    }
    planner__prob_drop_index(&wp);
    rc = planner__exact_within(&wp, I->wbest, &r, I->fit ? 0 : I->cap, lim,
                               &I->work);
    if (!rc)
      best = r.arena_bytes;
  }
  planner__prob_cleanup(&wp);
  if (rc)
    return rc;
  if (best > I->cap)
    I->cap = best;
  /* A target no lower than the given arena: the pass stops here, leaving
   * the rest of the effort to the next pass and the search. */
  return I->cap >= I->given;
}

/* Commits the free tensors of the window's graph for which keep() holds,
 * with the offsets of I->wbest. */
static void commit(struct imp *I, uint32_t ns, uint32_t lo, uint32_t hi,
                   int by_last)
{
  for (uint32_t j = 0; j < ns; j++) {
    uint32_t k = I->wk[j];
    if (k == NONE)
      continue;
    uint32_t s = by_last ? I->shi[k] : I->slo[k];
    if (s < lo || s > hi)
      continue;
    I->off[k] = I->wbest[j];
    I->done[k] = 1;
    I->act[I->nact++] = k;
  }
  I->work += ns;
}

/* Drops from the active list the committed tensors that end before span
 * a (right sweep) or start after span b (left sweep). */
static void prune_active(struct imp *I, uint32_t a, uint32_t b)
{
  uint32_t w = 0;
  for (uint32_t q = 0; q < I->nact; q++) {
    uint32_t k = I->act[q];
    if (I->shi[k] >= a && I->slo[k] <= b)
      I->act[w++] = k;
  }
  I->work += I->nact;
  I->nact = w;
}

int improve__staircase(struct imp *I, uint32_t a, uint32_t b)
{
  uint32_t n = 0;
  for (uint32_t k = 0; k < I->m; k++)
    if (!I->done[k] && I->slo[k] <= a && I->shi[k] >= b)
      I->order[n++] = k;
  uint64_t *key = malloc(((size_t)n + 1) * sizeof *key);
  struct planner__radix rs = {0};
  if (!key)
    return ARENA_ENOMEM;
  /* Stable sorts, least significant key first: start ascending, then
   * last use descending. */
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t q = 0; q < n; q++) {
      uint32_t k = I->order[q];
      key[q] = pass ? (uint64_t)(UINT32_MAX - I->shi[k]) : I->slo[k];
    }
    if (planner__radix_sort(key, I->order, n, &rs)) {
      free(key);
      planner__radix_cleanup(&rs);
      return ARENA_ENOMEM;
    }
  }
  free(key);
  planner__radix_cleanup(&rs);
  uint64_t base = 0;
  for (uint32_t q = 0; q < n; q++) {
    uint32_t k = I->order[q];
    uint64_t y = planner__align_up(base, I->p->align[I->gi[k]]);
    I->off[k] = y;
    I->done[k] = 1;
    I->act[I->nact++] = k;
    base = y + I->p->t[I->gi[k]].size;
  }
  I->work += 2 * (uint64_t)n + I->m;
  return 0;
}

/* The peak window around span c: the staircase (when no pinned tensor is
 * live in it), the rest planned, and the tensors live within
 * I->step of c committed. Returns 0, 1 (effort), or an error. */
static int peak_window(struct imp *I, uint32_t c)
{
  uint32_t a = c > I->ahead ? c - I->ahead : 0;
  uint32_t b = c + I->ahead < I->S ? c + I->ahead : I->S - 1;
  int pinned = 0;
  for (uint32_t q = 0; q < I->nact; q++) {
    uint32_t k = I->act[q];
    pinned |= I->slo[k] <= b && I->shi[k] >= a;
  }
  int rc = pinned ? 0 : improve__staircase(I, a, b);
  if (rc)
    return rc;
  uint32_t ns = improve__window(I, a, b);
  I->peak = I->retry;
  rc = improve__plan_window(I, ns);
  I->peak = 0;
  I->peak_missed = rc == 1 && I->cap >= I->given;
  if (rc)
    return rc;
  uint32_t clo = c > I->step ? c - I->step : 0;
  uint32_t chi = c + I->step < I->S ? c + I->step : I->S - 1;
  for (uint32_t j = 0; j < ns; j++) {
    uint32_t k = I->wk[j];
    if (k == NONE || I->slo[k] > chi || I->shi[k] < clo)
      continue;
    I->off[k] = I->wbest[j];
    I->done[k] = 1;
    I->act[I->nact++] = k;
  }
  return 0;
}

/* Sorts the uncommitted tensors that start after span r (right, by start
 * ascending) or end before span r (left, by end descending) into
 * I->order; returns their count, or NONE when out of memory. */
static uint32_t sweep_order(struct imp *I, uint32_t r, int left)
{
  uint32_t n = 0;
  for (uint32_t k = 0; k < I->m; k++)
    if (!I->done[k] && (left ? I->shi[k] < r : I->slo[k] > r))
      I->order[n++] = k;
  uint64_t *key = malloc(((size_t)n + 1) * sizeof *key);
  struct planner__radix rs = {0};
  if (!key)
    return NONE;
  for (uint32_t q = 0; q < n; q++) {
    uint32_t k = I->order[q];
    key[q] = left ? (uint64_t)(UINT32_MAX - I->shi[k]) : I->slo[k];
  }
  int rc = planner__radix_sort(key, I->order, n, &rs);
  free(key);
  planner__radix_cleanup(&rs);
  I->work += I->m + 2 * (uint64_t)n;
  return rc ? NONE : n;
}

/* One sweep, right (left = 0) or left of the committed part around the
 * peak, which ends at span r (right) or starts at span r (left). Returns
 * 0, 1 (effort), or an error. */
static int sweep(struct imp *I, uint32_t r, int left)
{
  uint32_t n = sweep_order(I, r, left);
  if (n == NONE)
    return ARENA_ENOMEM;
  uint32_t q = 0;
  while (q < n) {
    /* The window: spans [a, b], starting next to the committed part. */
    uint32_t k0 = I->order[q];
    uint32_t edge = left ? I->shi[k0] : I->slo[k0];
    uint32_t a, b;
    if (left) {
      b = edge;
      a = b > I->ahead ? b - I->ahead : 0;
      prune_active(I, 0, b);
    } else {
      a = edge;
      b = a + I->ahead < I->S ? a + I->ahead : I->S - 1;
      prune_active(I, a, UINT32_MAX);
    }
    uint32_t ns = 0;
    improve__obstacles(I, a, b, &ns);
    uint32_t e = q;
    for (; e < n; e++) {
      uint32_t k = I->order[e];
      if (left ? I->shi[k] < a : I->slo[k] > b)
        break;
      improve__add_free(I, k, a, b, &ns);
    }
    int rc = improve__plan_window(I, ns);
    if (rc)
      return rc;
    /* Commit the first I->step spans, or all when the window reaches
     * the end of time. */
    uint32_t lo, hi;
    if (left) {
      hi = b;
      lo = a == 0 ? 0 : (b >= I->step - 1 ? b - (I->step - 1) : 0);
    } else {
      lo = a;
      hi = b == I->S - 1 ? b : a + I->step - 1;
    }
    commit(I, ns, lo, hi, left);
    while (q < n && I->done[I->order[q]])
      q++;
  }
  return 0;
}

int improve__start(struct imp *I, const struct planner__prob *p,
                   uint64_t work, uint64_t limit)
{
  memset(I, 0, sizeof *I);
  I->p = p;
  for (size_t i = 0; i < p->n; i++)
    I->m += p->t[i].size != 0;
  I->work = work;
  I->limit = limit;
  size_t m1 = (size_t)I->m + 1;
  I->gi = malloc(m1 * sizeof *I->gi);
  I->slo = malloc(m1 * sizeof *I->slo);
  I->shi = malloc(m1 * sizeof *I->shi);
  I->off = malloc(m1 * sizeof *I->off);
  I->done = calloc(m1, 1);
  I->act = malloc(m1 * sizeof *I->act);
  I->order = malloc(m1 * sizeof *I->order);
  I->wt = malloc(2 * m1 * sizeof *I->wt);
  I->wk = malloc(2 * m1 * sizeof *I->wk);
  I->woff = malloc(2 * m1 * sizeof *I->woff);
  I->wbest = malloc(2 * m1 * sizeof *I->wbest);
  I->ob = malloc(m1 * sizeof *I->ob);
  if (!I->gi || !I->slo || !I->shi || !I->off || !I->done || !I->act ||
      !I->order || !I->wt || !I->wk || !I->woff || !I->wbest || !I->ob)
    return ARENA_ENOMEM;
  for (size_t i = 0, k = 0; i < p->n; i++)
    if (p->t[i].size)
      I->gi[k++] = (uint32_t)i;
  return build_spans(I);
}

void improve__keep(struct imp *I, uint64_t *offsets, uint64_t *arena)
{
  uint64_t top = 0;
  for (uint32_t k = 0; k < I->m; k++) {
    uint64_t e = I->off[k] + I->p->t[I->gi[k]].size;
    if (e > top)
      top = e;
  }
  if (top < *arena) {
    for (uint32_t k = 0; k < I->m; k++)
      offsets[I->gi[k]] = I->off[k];
    *arena = top;
  }
}

int planner__windows(const struct planner__prob *p, uint64_t *offsets,
                     uint64_t *arena, uint64_t work_limit, uint64_t *work,
                     uint32_t ahead, uint32_t step, int retry,
                     int *peak_missed)
{
  struct imp I;
  int rc = improve__start(&I, p, *work, work_limit);
  I.retry = retry;
  I.ahead = ahead;
  I.step = step;
  I.cap = p->lb;
  I.given = *arena;
  for (uint32_t k = 0; !rc && k < I.m; k++) {
    size_t i = I.gi[k];
    if (p->t[i].pinned != PLANNER_NOT_PINNED) {
      I.off[k] = (uint64_t)p->t[i].pinned;
      I.done[k] = 1;
      I.act[I.nact++] = (uint32_t)k;
      if (I.off[k] + p->t[i].size > I.cap)
        I.cap = I.off[k] + p->t[i].size;
    }
  }
  uint32_t c = NONE;
  if (!rc && (c = improve__fullest_span(&I, 0)) == NONE)
    rc = ARENA_ENOMEM;
  if (!rc)
    rc = peak_window(&I, c);
  /* The sweeps start from the committed part around the peak; each keeps
   * its own active list of committed tensors, all of them at first. */
  uint32_t nact0 = I.nact;
  uint32_t *act0 = NULL;
  if (!rc && !(act0 = malloc(((size_t)nact0 + 1) * sizeof *act0)))
    rc = ARENA_ENOMEM;
  if (!rc) {
    memcpy(act0, I.act, nact0 * sizeof *act0);
    uint32_t chi = c + step < I.S ? c + step : I.S - 1;
    rc = sweep(&I, chi, 0);
  }
  if (!rc) {
    memcpy(I.act, act0, nact0 * sizeof *act0);
    I.nact = nact0;
    uint32_t clo = c > step ? c - step : 0;
    rc = sweep(&I, clo, 1);
  }
  free(act0);
  *peak_missed = I.peak_missed;
  if (rc == 0)
    improve__keep(&I, offsets, arena);
  *work = I.work > work_limit ? work_limit : I.work;
  improve__free(&I);
  return rc == 1 ? 0 : rc;
}

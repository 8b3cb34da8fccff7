/*
 * improve_stair.c - the staircase plans of a large graph: a set of tensors
 * that all meet at one point in time stacked at the bottom in a fixed
 * order (for one stack, with more tensors each at its lowest fit above
 * it), and tflm-greedy on everything else around them.
 *
 * Compiler traces of XLA programs load their parameters at the start and
 * drop each after its last use, spread over the program; the heuristics
 * of `best` mix them with the activations, and what each parameter
 * leaves when it ends is a gap that later tensors rarely fill.
 *
 * DESIGN
 *  Let f be the earliest first use of a sized tensor, and P the tensors
 *  whose first use is f. The staircase plans apply when P holds at least
 *  half the load bound in bytes and no tensor is pinned. Three stacks are
 *  tried in turn, each from offset 0, each tensor at the next offset its
 *  alignment allows (a stack of tensors that all meet in time is always
 *  valid):
 *   0. P, latest last use first: the top of the stack at any time is the
 *      bytes of the tensors of P still live, so the space each leaves
 *      when it ends lies on top of the stack, next to the free space;
 *   1. the tensors live at the first point of highest load, those of P
 *      first (latest last use first), then the others by first use,
 *      earliest first (ties: latest last use first): the stack is the
 *      peak's load exactly, the space of the activations not yet started
 *      lies on top of it before the peak;
 *   2. the same tensors, all latest last use first; then the tensors of
 *      P not live at the peak, latest last use first, each at the lowest
 *      offset its alignment allows where it misses every tensor placed
 *      before it that it meets in time (valid by construction): the
 *      parameters that end before the peak drop into the room of the
 *      activations not yet started instead of being left to tflm-greedy
 *      (skipped, the stack alone tried, when their count times the
 *      count of all these tensors passes STAIR_MAX_FIT).
 *  The stacked tensors are pinned there and tflm-greedy, which of the
 *  four heuristics did best above such stacks on the generated traces
 *  (docs/exact.md, "Staircase plans"), plans the rest around them. Which
 *  stack wins depends on the trace, so each is tried; a plan replaces the
 *  given one only when its arena is lower, and the trials stop once the
 *  arena meets the load bound, or when the next would take the tensors
 *  planned by these runs past STAIR_MAX_PLANNED (time: each run is a
 *  whole tflm-greedy). Ties keep graph order throughout. On request the
 *  runner-up is kept too: the plan of lowest arena among those that were
 *  tried or replaced but did not end in offsets (the given plan
 *  included), for the squeeze, which may lower one plan much more than
 *  another (search.c, improve()).
 *
 *  Like the four heuristics of `best`, the staircase plans are not
 *  counted in the effort's work units; they run only on the graphs that
 *  the windowed re-planning would consider (search.c, improve()) and read
 *  no clock. The stop callback is polled before each.
 */
#include "improve.h"

#include <stdlib.h>
#include <string.h>

#include "heuristics.h"
#include "planner_sort.h"

/* Stacks tried, in order (see DESIGN). */
enum { STACK_FIRST, STACK_PEAK_BY_FIRST, STACK_PEAK_BY_LAST, N_STACKS };
/* Tensors that the stacks' tflm-greedy runs may plan in all: a stack is
 * tried only while its run keeps the total within this, so that the
 * plans stay a fraction of a second on graphs of 60 000 tensors (about
 * 3 us per tensor and run there, docs/exact.md). */
#define STAIR_MAX_PLANNED (1u << 17)
/* Stack 2's lowest fits may scan at most this many placed tensors in all
 * (tensors fitted times tensors placed), a few ms here. */
#define STAIR_MAX_FIT (1u << 24)

/* The first point of highest load among the sized tensors, or -1 when out
 * of memory. */
static int64_t peak_point(const struct planner__prob *p)
{
  size_t n = p->n, e = 0;
  uint64_t *key = malloc((2 * n + 1) * sizeof *key);
  uint32_t *val = malloc((2 * n + 1) * sizeof *val);
  struct planner__radix rs = {0};
  int64_t at = -1;
  if (key && val) {
    /* Ends sort before starts at the same time: key 2t for the end at
     * t (last + 1), 2t + 1 for a start at t. */
    for (size_t i = 0; i < n; i++) {
      if (!p->t[i].size)
        continue;
      key[e] = 2 * (uint64_t)p->t[i].first + 1;
      val[e++] = (uint32_t)i;
      key[e] = 2 * ((uint64_t)p->t[i].last + 1);
      val[e++] = (uint32_t)i;
    }
    if (!planner__radix_sort(key, val, e, &rs)) {
      uint64_t load = 0, best = 0;
      for (size_t q = 0; q < e; q++) {
        uint64_t s = p->t[val[q]].size;
        load = key[q] & 1 ? load + s : load - s;
        if (load > best) {
          best = load;
          at = (int64_t)(key[q] >> 1);
        }
      }
    }
  }
  planner__radix_cleanup(&rs);
  free(key);
  free(val);
  return at;
}

/* The tensors of stack v in stacking order into idx (room for p->n);
 * returns their count (0 when out of memory), of which the first *nstack
 * are stacked and the others fitted above them. f is the earliest first
 * use, peak the peak point, key scratch for p->n entries. */
static size_t stack_order(const struct planner__prob *p, int v, int64_t f,
                          int64_t peak, uint32_t *idx, uint64_t *key,
                          size_t *nstack)
{
  size_t k = 0, tail = 0;
  for (size_t i = 0; i < p->n; i++) {
    const struct planner_tensor *t = &p->t[i];
    int at_peak = t->first <= peak && t->last >= peak;
    if (t->size && (v == STACK_FIRST ? t->first == f : at_peak))
      idx[k++] = (uint32_t)i;
    else if (t->size && v == STACK_PEAK_BY_LAST && t->first == f)
      tail++;
  }
  *nstack = k;
  if (tail && (uint64_t)tail * (k + tail) <= STAIR_MAX_FIT)
    for (size_t i = 0; i < p->n; i++) {
      const struct planner_tensor *t = &p->t[i];
      if (t->size && t->first == f && (t->first > peak || t->last < peak))
        idx[k++] = (uint32_t)i;
    }
  struct planner__radix rs = {0};
  int rc = 0;
  /* Least significant key first (the sort is stable): last use
   * descending (for STACK_PEAK_BY_LAST this keeps the tensors of P that
   * end before the peak after the stack, which all end at or after it);
   * then, for STACK_PEAK_BY_FIRST, first use ascending with
   * the tensors of P (first use f) before all others. */
  for (size_t q = 0; q < k; q++)
    key[q] = (uint64_t)INT64_MAX - (uint64_t)p->t[idx[q]].last;
  rc = planner__radix_sort(key, idx, k, &rs);
  if (!rc && v == STACK_PEAK_BY_FIRST) {
    for (size_t q = 0; q < k; q++)
      key[q] = p->t[idx[q]].first == f ? 0 : (uint64_t)p->t[idx[q]].first;
    rc = planner__radix_sort(key, idx, k, &rs);
  }
  planner__radix_cleanup(&rs);
  return rc ? 0 : k;
}

/* The earliest first use of a sized tensor, or -1 when the staircase
 * plans do not apply (a pinned tensor, or the tensors of that first use
 * below half the load bound). */
static int64_t first_point(const struct planner__prob *p)
{
  int64_t f = INT64_MAX;
  for (size_t i = 0; i < p->n; i++) {
    if (p->t[i].pinned != PLANNER_NOT_PINNED)
      return -1;
    if (p->t[i].size && p->t[i].first < f)
      f = p->t[i].first;
  }
  uint64_t bytes = 0;
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].size && p->t[i].first == f)
      bytes += p->t[i].size;
  return f != INT64_MAX && 2 * bytes >= p->lb ? f : -1;
}

static int cmp_iv(const void *a, const void *b)
{
  const uint64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The lowest offset, aligned for tensor idx[q], at which it misses each
 * of idx[0 .. q-1] (placed in t[].pinned) that it meets in time; iv is
 * scratch for 2q entries. */
static uint64_t lowest_fit(const struct planner__prob *p,
                           const struct planner_tensor *t, const uint32_t *idx,
                           size_t q, uint64_t *iv)
{
  const struct planner_tensor *x = &p->t[idx[q]];
  size_t n = 0;
  for (size_t r = 0; r < q; r++) {
    const struct planner_tensor *y = &p->t[idx[r]];
    if (y->first > x->last || y->last < x->first)
      continue;
    iv[2 * n] = (uint64_t)t[idx[r]].pinned;
    iv[2 * n + 1] = iv[2 * n] + y->size;
    n++;
  }
  qsort(iv, n, 2 * sizeof *iv, cmp_iv);
  uint64_t al = p->align[idx[q]], y = 0;
  for (size_t r = 0; r < n && iv[2 * r] < y + x->size; r++)
    if (iv[2 * r + 1] > y)
      y = planner__align_up(iv[2 * r + 1], al);
  return y;
}

/* Plans with the k tensors idx pinned, the first ns as a stack and each
 * other at its lowest fit above those before it, tflm-greedy around
 * them, into off; t is a scratch copy of the graph's tensors. Returns 0
 * with *arena_out, or an error. */
static int plan_stacked(const struct planner__prob *p, const uint32_t *idx,
                        size_t k, size_t ns, struct planner_tensor *t,
                        uint64_t *off, uint64_t *arena_out)
{
  memcpy(t, p->t, p->n * sizeof *t);
  uint64_t base = 0;
  for (size_t q = 0; q < ns; q++) {
    base = planner__align_up(base, p->align[idx[q]]);
    t[idx[q]].pinned = (int64_t)base;
    base += t[idx[q]].size;
  }
  uint64_t *iv = k > ns ? malloc(2 * k * sizeof *iv) : NULL;
  if (k > ns && !iv)
    return ARENA_ENOMEM;
  for (size_t q = ns; q < k; q++)
    t[idx[q]].pinned = (int64_t)lowest_fit(p, t, idx, q, iv);
  free(iv);
  struct planner_options so = *p->o;
  so.capacity = 0;
  so.threads = 1;
  struct planner_graph g = {t, p->n};
  struct planner__prob sp;
  int rc = planner__prob_init(&sp, &g, &so);
  if (rc)
    return rc;
  rc = planner__heuristic(&sp, PLANNER_ALGO_TFLM_GREEDY, off);
  if (!rc)
    *arena_out = planner__arena_of(&sp, off);
  planner__prob_cleanup(&sp);
  return rc;
}

int planner__stair(const struct planner__prob *p, uint64_t *offsets,
                   uint64_t *arena)
{
  return planner__stair_keep(p, offsets, arena, NULL, NULL);
}

/* Keeps plan x of arena a in runner (arena *ra) when it is lower. */
static void keep_runner(size_t n, const uint64_t *x, uint64_t a,
                        uint64_t *runner, uint64_t *ra)
{
  if (runner && a < *ra) {
    memcpy(runner, x, n * sizeof *runner);
    *ra = a;
  }
}

int planner__stair_keep(const struct planner__prob *p, uint64_t *offsets,
                        uint64_t *arena, uint64_t *runner,
                        uint64_t *runner_arena)
{
  int64_t f = first_point(p);
  if (f < 0 || *arena <= p->lb)
    return 0;
  const struct planner_options *o = p->o;
  struct planner_tensor *t = malloc(p->n * sizeof *t);
  uint32_t *idx = malloc(p->n * sizeof *idx);
  uint64_t *off = malloc(p->n * sizeof *off);
  uint64_t *key = malloc(p->n * sizeof *key);
  int64_t peak = t && idx && off && key ? peak_point(p) : -1;
  int rc = peak < 0 ? ARENA_ENOMEM : 0;
  for (int v = 0; !rc && v < N_STACKS && *arena > p->lb &&
                  (uint64_t)(v + 1) * p->n <= STAIR_MAX_PLANNED;
       v++) {
    if (o->stop && o->stop(o->stop_ctx)) {
      rc = ARENA_ECANCELED;
      break;
    }
    size_t ns = 0, k = stack_order(p, v, f, peak, idx, key, &ns);
    uint64_t a = UINT64_MAX;
    rc = k ? plan_stacked(p, idx, k, ns, t, off, &a) : ARENA_ENOMEM;
    if (!rc && a < *arena) {
      keep_runner(p->n, offsets, *arena, runner, runner_arena);
      memcpy(offsets, off, p->n * sizeof *offsets);
      *arena = a;
    } else if (!rc) {
      keep_runner(p->n, off, a, runner, runner_arena);
    }
  }
  free(t);
  free(idx);
  free(off);
  free(key);
  return rc;
}

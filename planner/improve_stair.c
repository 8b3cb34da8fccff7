/*
 * improve_stair.c - the staircase plan of a large graph: the tensors live
 * at its first point in time stacked at the bottom, latest last use
 * first, and tflm-greedy on everything else above them.
 *
 * Compiler traces of XLA programs load their parameters at the start and
 * drop each after its last use, spread over the program; the heuristics
 * of `best` mix them with the activations, and what each parameter
 * leaves when it ends is a gap that later tensors rarely fill.
 *
 * DESIGN
 *  Let f be the earliest first use of a sized tensor. The tensors whose
 *  first use is f all meet at f, so any stacking of them is valid. They
 *  are stacked from offset 0 in order of last use, latest first (ties:
 *  graph order), each at the next offset its alignment allows. The top
 *  of the stack at any time is then the bytes of those still live (plus
 *  padding): the space each leaves when it ends is on top of the stack,
 *  next to the free space above. The stacked tensors are pinned there and
 *  tflm-greedy, which of the four heuristics did best above such a stack
 *  on the generated traces (docs/exact.md, "Staircase plan"), plans the
 *  rest around them. The plan replaces the given one only when its arena
 *  is lower.
 *
 *  It applies only to graphs without pinned tensors whose stacked bytes
 *  are at least half the load bound (otherwise the stack is not what
 *  shapes the plan, and the run would cost a heuristic for nothing). It
 *  costs, in work units, what a window of the whole graph costs in
 *  improve.c for the index and one heuristic, polls the stop callback
 *  once, and reads no clock.
 */
#include "improve.h"
#include "improve_int.h"

#include <stdlib.h>
#include <string.h>

#include "exact_int.h"
#include "planner_sort.h"

/* The tensors the staircase stacks, in stacking order, into idx (room
 * for p->n); returns their count, or 0 when the staircase does not apply
 * or is out of memory. */
static size_t stack_order(const struct planner__prob *p, uint32_t *idx)
{
  int64_t f = INT64_MAX;
  uint64_t bytes = 0;
  for (size_t i = 0; i < p->n; i++) {
    if (p->t[i].pinned != PLANNER_NOT_PINNED)
      return 0;
    if (p->t[i].size && p->t[i].first < f)
      f = p->t[i].first;
  }
  size_t k = 0;
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].size && p->t[i].first == f) {
      idx[k++] = (uint32_t)i;
      bytes += p->t[i].size;
    }
  if (2 * bytes < p->lb)
    return 0;
  /* Last use descending; the radix sort is stable, so ties keep graph
   * order. */
  uint64_t *key = malloc((k + 1) * sizeof *key);
  struct planner__radix rs = {0};
  int rc = key ? 0 : ARENA_ENOMEM;
  for (size_t q = 0; !rc && q < k; q++)
    key[q] = (uint64_t)INT64_MAX - (uint64_t)p->t[idx[q]].last;
  if (!rc)
    rc = planner__radix_sort(key, idx, k, &rs);
  planner__radix_cleanup(&rs);
  free(key);
  return rc ? 0 : k;
}

size_t improve__stack(const struct planner__prob *p, uint32_t *idx,
                      uint64_t *off)
{
  size_t k = stack_order(p, idx);
  uint64_t base = 0;
  for (size_t q = 0; q < k; q++) {
    base = planner__align_up(base, p->align[idx[q]]);
    off[q] = base;
    base += p->t[idx[q]].size;
  }
  return k;
}

uint64_t planner__stair_units(const struct planner__prob *p)
{
  return 2 * (uint64_t)IMPROVE_HEUR_UNITS * exact__sort_units(p->n);
}

int planner__stair(const struct planner__prob *p, uint64_t *offsets,
                   uint64_t *arena, uint64_t work_limit, uint64_t *work)
{
  uint64_t units = planner__stair_units(p);
  if (*work + units > work_limit)
    return 0;
  const struct planner_options *o = p->o;
  if (o->stop && o->stop(o->stop_ctx))
    return ARENA_ECANCELED;
  struct planner_tensor *t = malloc(p->n * sizeof *t);
  uint32_t *idx = malloc(p->n * sizeof *idx);
  uint64_t *off = malloc(p->n * sizeof *off);
  int rc = t && idx && off ? 0 : ARENA_ENOMEM;
  size_t k = rc ? 0 : improve__stack(p, idx, off);
  if (k) {
    memcpy(t, p->t, p->n * sizeof *t);
    for (size_t q = 0; q < k; q++)
      t[idx[q]].pinned = (int64_t)off[q];
    struct planner_options so = *o;
    so.capacity = 0;
    so.threads = 1;
    struct planner_graph g = {t, p->n};
    struct planner__prob sp;
    rc = planner__prob_init(&sp, &g, &so);
    if (!rc) {
      rc = planner__heuristic(&sp, PLANNER_ALGO_TFLM_GREEDY, off);
      uint64_t a = rc ? UINT64_MAX : planner__arena_of(&sp, off);
      if (a < *arena) {
        memcpy(offsets, off, p->n * sizeof *offsets);
        *arena = a;
      }
      planner__prob_cleanup(&sp);
    }
    *work += units;
  }
  free(t);
  free(idx);
  free(off);
  return rc;
}

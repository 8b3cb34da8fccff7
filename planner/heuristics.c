/*
 * heuristics.c - the greedy planners: naive, tflm-greedy, tflite-bestfit,
 * greedy-size and greedy-breadth.
 *
 * DESIGN: every greedy planner is "visit the tensors in some order; put
 * each one into a gap between the already placed tensors that overlap it
 * in time, or on top of them". The planners differ only in the order and
 * in which gap they take (the lowest that fits, or the tightest). Placed
 * tensors live in a time index (tindex.h), so finding the k placed tensors
 * that overlap a lifetime costs about O(log n + k), and a placement
 * O(k log k). Pinned tensors
 * are placed first, at their offsets; zero-size tensors get offset 0.
 *
 * Tie-breaks (all deterministic):
 *  - tflm-greedy:    size descending, ties to the later graph row first,
 *                    first (lowest) gap that fits.
 *  - tflite-bestfit: tensors live from operator 0 to the graph's last
 *                    operator first, by id; then size descending, ties by
 *                    first op, then id; tightest gap, lowest on ties.
 *  - greedy-size:    size descending, ties to the earlier graph row;
 *                    tightest gap, lowest on ties.
 *  - greedy-breadth: operator spans by live bytes descending (ties to the
 *                    earlier span); within a span its unplaced tensors by
 *                    size descending, ties to the earlier row; tightest gap.
 *  - naive:          id order, bump allocation above any pinned tensor.
 */
#include "planner_int.h"
#include "planner_sort.h"
#include "tindex.h"

#include <stdlib.h>
#include <string.h>

enum fit_mode { FIT_FIRST, FIT_BEST };


struct placer {
  const struct planner__prob *p;
  uint64_t *off;       /* output offsets, graph order */
  struct tindex live;  /* placed tensors by lifetime */
  struct tindex_span *spans;  /* scratch: overlapping placed tensors */
  struct tindex_span *tmp;    /* scratch for sorting spans */
  size_t n_spans;      /* entries used in spans */
};

static inline int cmp_span(const void *a, const void *b)
{
  const struct tindex_span *x = a, *y = b;
  if (x->off != y->off)
    return x->off < y->off ? -1 : 1;
  return (x->end > y->end) - (x->end < y->end);
}

/* Stable LSD radix sort by off, 11 bits a pass, skipping passes above the
 * largest offset. For the long lists of long-lived tensors. */
static void radix_spans(struct tindex_span *s, struct tindex_span *tmp, size_t n)
{
  uint64_t maxoff = 0;
  for (size_t i = 0; i < n; i++)
    maxoff |= s[i].off;
  struct tindex_span *src = s, *dst = tmp;
  for (unsigned shift = 0; shift < 64 && (maxoff >> shift); shift += 11) {
    size_t count[2048 + 1] = {0};
    for (size_t i = 0; i < n; i++)
      count[((src[i].off >> shift) & 2047) + 1]++;
    for (size_t d = 0; d < 2048; d++)
      count[d + 1] += count[d];
    for (size_t i = 0; i < n; i++)
      dst[count[(src[i].off >> shift) & 2047]++] = src[i];
    struct tindex_span *t = src;
    src = dst;
    dst = t;
  }
  if (src != s)
    memcpy(s, src, n * sizeof *s);
}

/* Sorts by off (ties in any order: the gap scan only uses the running
 * maximum of the ends, so the chosen offset does not depend on it):
 * insertion sort for the short lists typical of real graphs, radix sort
 * beyond. */
static void sort_spans(struct tindex_span *s, struct tindex_span *tmp, size_t n)
{
  if (n > 64) {
    radix_spans(s, tmp, n);
    return;
  }
  for (size_t i = 1; i < n; i++) {
    struct tindex_span v = s[i];
    size_t j = i;
    while (j > 0 && cmp_span(&v, &s[j - 1]) < 0) {
      s[j] = s[j - 1];
      j--;
    }
    s[j] = v;
  }
}

/* Chooses the offset for tensor i among the placed tensors. */
static uint64_t choose_offset(struct placer *pl, uint32_t i, enum fit_mode m)
{
  const struct planner_tensor *t = &pl->p->t[i];
  uint64_t a = pl->p->align[i];
  pl->n_spans = tindex_collect(&pl->live, i, pl->spans);
  sort_spans(pl->spans, pl->tmp, pl->n_spans);
  uint64_t cur = 0, best = 0, best_slack = UINT64_MAX;
  for (size_t k = 0; k < pl->n_spans; k++) {
    uint64_t start = planner__align_up(cur, a);
    if (start + t->size <= pl->spans[k].off) {
      uint64_t slack = pl->spans[k].off - start - t->size;
      if (m == FIT_FIRST)
        return start;
      if (slack < best_slack) {
        best = start;
        best_slack = slack;
        if (slack == 0)
          return best;
      }
    }
    if (pl->spans[k].end > cur)
      cur = pl->spans[k].end;
  }
  return best_slack != UINT64_MAX ? best : planner__align_up(cur, a);
}

static int place(struct placer *pl, uint32_t i, uint64_t off)
{
  pl->off[i] = off;
  return tindex_insert(&pl->live, i, off, off + pl->p->t[i].size)
             ? ARENA_ENOMEM
             : 0;
}

static void placer_cleanup(struct placer *pl)
{
  tindex_cleanup(&pl->live);
  free(pl->spans);
  free(pl->tmp);
}

static int placer_init(struct placer *pl, const struct planner__prob *p,
                       uint64_t *off)
{
  pl->p = p;
  pl->off = off;
  pl->n_spans = 0;
  pl->spans = malloc(p->n * sizeof *pl->spans);
  pl->tmp = malloc(p->n * sizeof *pl->tmp);
  if (!pl->spans || !pl->tmp) {
    free(pl->spans);
    free(pl->tmp);
    return ARENA_ENOMEM;
  }
  if (tindex_init(&pl->live, p->t, p->n)) {
    tindex_cleanup(&pl->live);
    free(pl->spans);
    free(pl->tmp);
    return ARENA_ENOMEM;
  }
  for (size_t i = 0; i < p->n; i++) {
    off[i] = 0;
    if (p->t[i].pinned != PLANNER_NOT_PINNED) {
      off[i] = (uint64_t)p->t[i].pinned;
      if (p->t[i].size && place(pl, (uint32_t)i, off[i])) {
        placer_cleanup(pl);
        return ARENA_ENOMEM;
      }
    }
  }
  return 0;
}

static int stopped(const struct planner__prob *p, size_t k)
{
  return (k & 1023) == 0 && p->o->stop && p->o->stop(p->o->stop_ctx);
}

/* Places order[0..m) one by one. */
static int place_all(const struct planner__prob *p, const uint32_t *order,
                     size_t m, enum fit_mode mode, uint64_t *off)
{
  struct placer pl;
  if (placer_init(&pl, p, off))
    return ARENA_ENOMEM;
  int rc = 0;
  for (size_t k = 0; k < m; k++) {
    if (stopped(p, k)) {
      rc = ARENA_ECANCELED;
      break;
    }
    if (place(&pl, order[k], choose_offset(&pl, order[k], mode))) {
      rc = ARENA_ENOMEM;
      break;
    }
  }
  placer_cleanup(&pl);
  return rc;
}

/* ---- orders ------------------------------------------------------------ */

static int free_tensor(const struct planner__prob *p, uint32_t i)
{
  return p->t[i].size != 0 && p->t[i].pinned == PLANNER_NOT_PINNED;
}

/* Returns the owned list of tensors to place (non-empty, not pinned). */
static uint32_t *free_list(const struct planner__prob *p, size_t *m)
{
  uint32_t *v = malloc(p->n * sizeof *v);
  *m = 0;
  if (v)
    for (size_t i = 0; i < p->n; i++)
      if (free_tensor(p, (uint32_t)i))
        v[(*m)++] = (uint32_t)i;
  return v;
}

static int cmp3(uint64_t a, uint64_t b)
{
  return (a > b) - (a < b);
}

static int ord_tflm(uint32_t a, uint32_t b, const void *ctx)
{
  const struct planner__prob *p = ctx;
  int c = cmp3(p->t[b].size, p->t[a].size);
  return c ? c : cmp3(b, a);
}

static int ord_size(uint32_t a, uint32_t b, const void *ctx)
{
  const struct planner__prob *p = ctx;
  int c = cmp3(p->t[b].size, p->t[a].size);
  return c ? c : cmp3(a, b);
}

struct tflite_ctx {
  const struct planner__prob *p;
  int64_t end_op; /* the graph's last operator */
};

static int tflite_pinned_first(const struct tflite_ctx *c, uint32_t i)
{
  return c->p->t[i].first == 0 && c->p->t[i].last == c->end_op;
}

static int ord_tflite(uint32_t a, uint32_t b, const void *ctx)
{
  const struct tflite_ctx *c = ctx;
  const struct planner_tensor *x = &c->p->t[a], *y = &c->p->t[b];
  int pa = tflite_pinned_first(c, a), pb = tflite_pinned_first(c, b);
  if (pa != pb)
    return pb - pa;
  if (pa)
    return cmp3(x->id, y->id);
  int k = cmp3(y->size, x->size);
  if (!k)
    k = cmp3((uint64_t)x->first, (uint64_t)y->first);
  return k ? k : cmp3(x->id, y->id);
}

static int sort_or_oom(uint32_t *v, size_t m, planner__cmp_fn f,
                       const void *ctx)
{
  return planner__sort_idx(v, m, f, ctx) ? ARENA_ENOMEM : 0;
}

static int run_sorted(const struct planner__prob *p, planner__cmp_fn f,
                      const void *ctx, enum fit_mode mode, uint64_t *off)
{
  size_t m;
  uint32_t *v = free_list(p, &m);
  if (!v)
    return ARENA_ENOMEM;
  int rc = sort_or_oom(v, m, f, ctx);
  if (!rc)
    rc = place_all(p, v, m, mode, off);
  free(v);
  return rc;
}

static int run_tflite(const struct planner__prob *p, uint64_t *off)
{
  struct tflite_ctx c = {p, 0};
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].last > c.end_op)
      c.end_op = p->t[i].last;
  return run_sorted(p, ord_tflite, &c, FIT_BEST, off);
}

static int ord_id(uint32_t a, uint32_t b, const void *ctx)
{
  const struct planner__prob *p = ctx;
  return cmp3(p->t[a].id, p->t[b].id);
}

static int run_naive(const struct planner__prob *p, uint64_t *off)
{
  size_t m;
  uint32_t *v = free_list(p, &m);
  if (!v)
    return ARENA_ENOMEM;
  int rc = sort_or_oom(v, m, ord_id, p);
  uint64_t top = 0;
  for (size_t i = 0; i < p->n; i++) {
    int pin = p->t[i].pinned != PLANNER_NOT_PINNED;
    off[i] = pin ? (uint64_t)p->t[i].pinned : 0;
    if (pin && p->t[i].size && off[i] + p->t[i].size > top)
      top = off[i] + p->t[i].size;
  }
  for (size_t k = 0; !rc && k < m; k++) {
    off[v[k]] = planner__align_up(top, p->align[v[k]]);
    top = off[v[k]] + p->t[v[k]].size;
  }
  free(v);
  return rc;
}

static int run_breadth(const struct planner__prob *p, uint64_t *off)
{
  uint32_t *v = malloc(p->n * sizeof *v);
  size_t m = 0;
  int rc = v ? planner__breadth_order(p, v, &m) : ARENA_ENOMEM;
  if (!rc)
    rc = place_all(p, v, m, FIT_BEST, off);
  free(v);
  return rc;
}

int planner__heuristic(const struct planner__prob *p, enum planner_algo a,
                       uint64_t *offsets)
{
  switch (a) {
  case PLANNER_ALGO_NAIVE:
    return run_naive(p, offsets);
  case PLANNER_ALGO_TFLM_GREEDY:
    return run_sorted(p, ord_tflm, p, FIT_FIRST, offsets);
  case PLANNER_ALGO_TFLITE_BESTFIT:
    return run_tflite(p, offsets);
  case PLANNER_ALGO_GREEDY_SIZE:
    return run_sorted(p, ord_size, p, FIT_BEST, offsets);
  case PLANNER_ALGO_GREEDY_BREADTH:
    return run_breadth(p, offsets);
  default:
    return ARENA_EINVAL;
  }
}

uint64_t planner__arena_of(const struct planner__prob *p,
                           const uint64_t *offsets)
{
  uint64_t top = 0;
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].size && offsets[i] + p->t[i].size > top)
      top = offsets[i] + p->t[i].size;
  return top;
}

/*
 * breadth.c - the visiting order of the greedy-breadth planner.
 *
 * Operator indexes can be sparse and huge (MiniMalloc's run to 2^20), so
 * the timeline is cut into spans between consecutive lifetime boundaries;
 * the set of live tensors, and so the live bytes ("breadth"), is constant
 * within a span. Spans are visited widest first. At each span, its still
 * unvisited tensors are taken largest first. An interval tree of the
 * unvisited tensors answers "who is live at time t and not yet visited",
 * so each tensor is reported once: O(n log n) overall.
 */
#include "ordset.h"
#include "planner_int.h"
#include "planner_sort.h"

#include <stdlib.h>

struct bctx {
  const struct planner__prob *p;
  const int64_t *coord;  /* sorted distinct span starts */
  const uint64_t *width; /* live bytes per span */
  uint32_t *hits;        /* scratch for one stabbing query */
  size_t n_hits;
};

static int cmp_i64(const void *a, const void *b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Index of the first coord >= v. */
static size_t lower(const int64_t *c, size_t n, int64_t v)
{
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int by_width(uint32_t a, uint32_t b, const void *ctx)
{
  const struct bctx *c = ctx;
  if (c->width[a] != c->width[b])
    return c->width[a] > c->width[b] ? -1 : 1;
  return (a > b) - (a < b);
}

static int by_size(uint32_t a, uint32_t b, const void *ctx)
{
  const struct bctx *c = ctx;
  uint64_t x = c->p->t[a].size, y = c->p->t[b].size;
  if (x != y)
    return x > y ? -1 : 1;
  return (a > b) - (a < b);
}

static void hit(uint32_t i, void *ctx)
{
  struct bctx *c = ctx;
  c->hits[c->n_hits++] = i;
}

/* Builds the sorted distinct boundaries; returns their count. */
static size_t boundaries(const struct planner__prob *p, int64_t *coord)
{
  size_t k = 0;
  for (size_t i = 0; i < p->n; i++) {
    if (!p->t[i].size)
      continue;
    coord[k++] = p->t[i].first;
    coord[k++] = p->t[i].last + 1;
  }
  qsort(coord, k, sizeof *coord, cmp_i64);
  size_t u = 0;
  for (size_t i = 0; i < k; i++)
    if (u == 0 || coord[u - 1] != coord[i])
      coord[u++] = coord[i];
  return u;
}

static void widths(const struct planner__prob *p, const int64_t *coord,
                   size_t nc, uint64_t *width)
{
  for (size_t k = 0; k < nc; k++)
    width[k] = 0;
  for (size_t i = 0; i < p->n; i++) {
    if (!p->t[i].size)
      continue;
    width[lower(coord, nc, p->t[i].first)] += p->t[i].size;
    width[lower(coord, nc, p->t[i].last + 1)] -= p->t[i].size;
  }
  for (size_t k = 1; k < nc; k++)
    width[k] += width[k - 1];
}

static int visit_spans(struct bctx *c, struct ordset *todo, uint32_t *spans,
                       size_t ns, uint32_t *order, size_t *m)
{
  for (size_t s = 0; s < ns; s++) {
    c->n_hits = 0;
    int64_t t = c->coord[spans[s]];
    ordset_overlapping(todo, t, t, hit, c);
    if (planner__sort_idx(c->hits, c->n_hits, by_size, c))
      return ARENA_ENOMEM;
    for (size_t k = 0; k < c->n_hits; k++) {
      ordset_remove(todo, c->hits[k]);
      order[(*m)++] = c->hits[k];
    }
  }
  return 0;
}

int planner__breadth_order(const struct planner__prob *p, uint32_t *order,
                           size_t *m)
{
  *m = 0;
  int64_t *coord = malloc((2 * p->n + 1) * sizeof *coord);
  uint64_t *width = malloc((2 * p->n + 1) * sizeof *width);
  uint32_t *hits = malloc((p->n + 1) * sizeof *hits);
  struct ordset todo = {0};
  int rc = ARENA_ENOMEM;
  if (!coord || !width || !hits || ordset_init(&todo, p->n))
    goto out;
  size_t nc = boundaries(p, coord);
  widths(p, coord, nc, width);
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].size && p->t[i].pinned == PLANNER_NOT_PINNED)
      ordset_insert(&todo, (uint32_t)i, p->t[i].first, p->t[i].last);
  /* The last boundary starts no span; the others do. */
  size_t ns = nc ? nc - 1 : 0;
  uint32_t *spans = planner__iota(ns);
  struct bctx c = {p, coord, width, hits, 0};
  if (spans && !planner__sort_idx(spans, ns, by_width, &c))
    rc = visit_spans(&c, &todo, spans, ns, order, m);
  free(spans);
out:
  ordset_cleanup(&todo);
  free(coord);
  free(width);
  free(hits);
  return rc;
}

/*
 * breadth.c - the visiting order of the greedy-breadth planner.
 *
 * Operator indexes can be sparse and huge (MiniMalloc's run to 2^20), so
 * the timeline is the time index's: spans between consecutive lifetime
 * boundaries, inside which the set of live tensors, and so the live bytes
 * ("breadth"), is constant. Spans are visited widest first. At each span,
 * its still unvisited tensors are taken largest first.
 *
 * A tensor is taken at the first visited span it is live in, so the
 * order is a sort: by that visit, then size descending, then row. The
 * visit is the smallest visit number over the spans [s0, s1), read from
 * a segment tree over the spans (each node holds the earliest visit of
 * its range) on the index's canonical cover of the lifetime: O(log S)
 * a tensor, then one radix sort of both keys packed into 64 bits (two
 * when sizes are too wide), linear, reading and writing contiguous
 * arrays.
 */
#include "heuristics.h"
#include "planner_sort.h"
#include "tindex.h"

#include <stdlib.h>
#include <string.h>

struct bctx {
  const struct planner__prob *p;
  const struct tindex *x;
  struct planner__radix rs;  /* radix scratch */
};

/* Live bytes of every span: a difference array over [s0, s1). */
static void widths(const struct tindex *x, uint64_t *width)
{
  memset(width, 0, (x->n_spans + 1) * sizeof *width);
  for (size_t r = 0; r < x->m; r++) {
    width[x->item[r].s0] += x->item[r].size;
    width[x->item[r].s1] -= x->item[r].size;
  }
  for (size_t s = 1; s < x->n_spans; s++)
    width[s] += width[s - 1];
}

/* The earliest visit among the spans [s0, s1): the smallest value of
 * tree[] (a bottom-up segment tree of each node's earliest visit) over
 * the canonical cover of the range. */
static uint32_t first_visit(const struct tindex *x, const uint32_t *tree,
                            const struct tindex_item *it)
{
  size_t lo = it->s0 + x->n_spans, hi = it->s1 + x->n_spans;
  uint32_t q = UINT32_MAX;
  for (; lo < hi; lo >>= 1, hi >>= 1) {
    if ((lo & 1) && tree[lo++] < q)
      q = tree[lo - 1];
    if ((hi & 1) && tree[--hi] < q)
      q = tree[hi];
  }
  return q;
}

static unsigned bits_of(uint64_t v)
{
  return v ? 64 - (unsigned)__builtin_clzll(v) : 0;
}

/* The spans by width descending, ties to the earlier span, into spans. */
static int span_order(struct bctx *c, uint32_t *spans)
{
  const struct tindex *x = c->x;
  uint64_t *width = malloc((x->n_spans + 1) * sizeof *width);
  if (!width)
    return ARENA_ENOMEM;
  widths(x, width);
  for (size_t s = 0; s < x->n_spans; s++) {
    width[s] = ~width[s];
    spans[s] = (uint32_t)s;
  }
  int rc = planner__radix_sort(width, spans, x->n_spans, &c->rs);
  free(width);
  return rc ? ARENA_ENOMEM : 0;
}

/* Lists the free tensors (ranks into order, count *m) in row order
 * with their keys: the visit of the first visited span each is live in
 * and the size descending packed into one, when they fit in 64 bits
 * (returns 1), else the size alone (returns 0). */
static int visit_keys(const struct bctx *c, const uint32_t *tree,
                      uint32_t *order, uint64_t *key, size_t *m)
{
  const struct planner__prob *p = c->p;
  const struct tindex *x = c->x;
  uint64_t smax = 0;
  size_t k = 0;
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].size && p->t[i].pinned == PLANNER_NOT_PINNED) {
      order[k++] = x->rank_of[i];
      if (p->t[i].size > smax)
        smax = p->t[i].size;
    }
  *m = k;
  unsigned w = bits_of(smax);
  int packed = w + bits_of(x->n_spans) <= 64;
  for (size_t j = 0; j < k; j++) {
    const struct tindex_item *it = &x->item[order[j]];
    key[j] = packed ? (uint64_t)first_visit(x, tree, it) << w | (smax - it->size)
                    : ~it->size;
  }
  return packed;
}

/* The order is a stable sort of the free tensors, which come in row
 * order: by (visit, size descending) packed into one key, or by size
 * and then by visit. The tree over the spans goes before the sort when
 * the keys are packed, so that it never adds to the sort's memory. */
int planner__breadth_order(const struct planner__prob *p, uint32_t *order,
                           uint64_t *key, struct planner__radix *rs,
                           size_t *m)
{
  const struct tindex *x = p->x;
  size_t S = x->n_spans;
  *m = 0;
  if (!S)
    return 0;
  struct bctx c = {p, x, {0}};
  uint32_t *spans = malloc(S * sizeof *spans);
  uint32_t *tree = malloc(2 * S * sizeof *tree);
  int rc = spans && tree ? span_order(&c, spans) : ARENA_ENOMEM;
  planner__radix_cleanup(&c.rs);
  int packed = 0;
  if (!rc) {
    for (size_t k = 0; k < S; k++) /* leaves: each span's visit */
      tree[S + spans[k]] = (uint32_t)k;
    for (size_t v = S - 1; v >= 1; v--)
      tree[v] = tree[2 * v] < tree[2 * v + 1] ? tree[2 * v] : tree[2 * v + 1];
    packed = visit_keys(&c, tree, order, key, m);
  }
  free(spans);
  if (packed) {
    free(tree);
    tree = NULL;
  }
  if (!rc && planner__radix_sort(key, order, *m, rs))
    rc = ARENA_ENOMEM;
  for (size_t j = 0; !rc && !packed && j < *m; j++)
    key[j] = first_visit(x, tree, &x->item[order[j]]);
  if (!rc && !packed && planner__radix_sort(key, order, *m, rs))
    rc = ARENA_ENOMEM;
  free(tree);
  return rc;
}

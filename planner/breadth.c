/*
 * breadth.c - the visiting order of the greedy-breadth planner.
 *
 * Operator indexes can be sparse and huge (MiniMalloc's run to 2^20), so
 * the timeline is the time index's: spans between consecutive lifetime
 * boundaries, inside which the set of live tensors, and so the live bytes
 * ("breadth"), is constant. Spans are visited widest first. At each span,
 * its still unvisited tensors are taken largest first.
 *
 * The tensors live in span s are the lists of the index's segment-tree
 * nodes on the path of leaf s. Every tensor in such a list is live in s,
 * so the visit of s takes all of them, and a list read once never yields
 * anything again: it is marked consumed and skipped from then on. Each
 * list is thus read once, and the order costs O(n log S) overall, plus
 * the sorts (radix, linear).
 */
#include "planner_int.h"
#include "planner_sort.h"
#include "tindex.h"

#include <stdlib.h>
#include <string.h>

struct bctx {
  const struct planner__prob *p;
  const struct tindex *x;
  uint8_t *visited;          /* m: 1 once a rank is in the order or pinned */
  uint8_t *consumed;         /* 2 S: 1 once a node's list has been taken */
  uint64_t *key;             /* m: sort keys of one span's hits */
  uint32_t *hits;            /* m: one span's unvisited tensors (ranks) */
  int narrow;                /* every size is below 2^32 */
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

/* Collects the unvisited tensors live in span s into c->hits. */
static size_t take_span(struct bctx *c, uint32_t s)
{
  const struct tindex *x = c->x;
  size_t h = 0;
  for (uint32_t bits = x->leaf[s].mask; bits; bits &= bits - 1) {
    size_t v = tindex_path_node(x, s, (unsigned)__builtin_ctz(bits));
    if (c->consumed[v])
      continue;
    c->consumed[v] = 1;
    for (uint32_t e = x->node_beg[v]; e < x->node_beg[v + 1]; e++) {
      uint32_t r = x->ent[e];
      if (!c->visited[r]) {
        c->visited[r] = 1;
        c->hits[h++] = r;
      }
    }
  }
  return h;
}

/* Sorts hits[0..h) by size descending, ties to the earlier row: in one
 * sort of (size, row) packed into one key when sizes fit in 32 bits,
 * else by row, then stably by size. */
static int sort_hits(struct bctx *c, size_t h)
{
  const struct tindex *x = c->x;
  for (size_t k = 0; k < h; k++)
    c->key[k] = c->narrow ? (uint64_t)(UINT32_MAX - x->item[c->hits[k]].size)
                                    << 32 |
                                x->row_of[c->hits[k]]
                          : x->row_of[c->hits[k]];
  if (planner__radix_sort(c->key, c->hits, h, &c->rs))
    return ARENA_ENOMEM;
  if (c->narrow)
    return 0;
  for (size_t k = 0; k < h; k++)
    c->key[k] = ~x->item[c->hits[k]].size;
  return planner__radix_sort(c->key, c->hits, h, &c->rs) ? ARENA_ENOMEM : 0;
}

static int visit_spans(struct bctx *c, const uint32_t *spans, uint32_t *order,
                       size_t *m)
{
  for (size_t k = 0; k < c->x->n_spans; k++) {
    size_t h = take_span(c, spans[k]);
    if (sort_hits(c, h))
      return ARENA_ENOMEM;
    memcpy(order + *m, c->hits, h * sizeof *order);
    *m += h;
  }
  return 0;
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

int planner__breadth_order(const struct planner__prob *p, uint32_t *order,
                           size_t *m)
{
  const struct tindex *x = p->x;
  *m = 0;
  size_t mm = x->m ? x->m : 1;
  struct bctx c = {p, x, NULL, NULL, NULL, NULL, 0, {0}};
  uint32_t *spans = malloc((x->n_spans ? x->n_spans : 1) * sizeof *spans);
  c.visited = malloc(mm);
  c.consumed = calloc(2 * x->n_spans + 1, 1);
  c.key = malloc(mm * sizeof *c.key);
  c.hits = malloc(mm * sizeof *c.hits);
  int rc = ARENA_ENOMEM;
  if (spans && c.visited && c.consumed && c.key && c.hits) {
    c.narrow = 1;
    for (size_t r = 0; r < x->m; r++) { /* pinned tensors are never visited */
      c.visited[r] = p->t[x->row_of[r]].pinned != PLANNER_NOT_PINNED;
      c.narrow &= x->item[r].size <= UINT32_MAX;
    }
    rc = span_order(&c, spans);
  }
  if (!rc)
    rc = visit_spans(&c, spans, order, m);
  planner__radix_cleanup(&c.rs);
  free(spans);
  free(c.visited);
  free(c.consumed);
  free(c.key);
  free(c.hits);
  return rc;
}

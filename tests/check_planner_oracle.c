/*
 * check_planner_oracle.c - every heuristic against a brute-force
 * reference.
 *
 * The reference is written from the contract (the table in
 * docs/planner.md and the tie-breaks atop planner/heuristics.c), not from
 * the implementation: it builds each order with an insertion sort by
 * comparison, and places each tensor by scanning every tensor placed so
 * far, O(n^2) per graph, with no index at all. planner_run() must give
 * the same offsets, byte for byte, on graphs made to hit size ties, ids
 * out of row order, pins, alignments, sparse and huge operator numbers,
 * whole-graph lifetimes and long lifetimes, sizes beyond 32 bits, and on
 * graphs large enough to take the planner's long-list and radix-sort
 * paths.
 */
#include <check.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "check_planner.h"
#include "planner.h"
#include "testutil.h"

#define ORACLE_BIG 3000 /* tensors in the large graphs */

/* The reference's view of one graph. */
struct rctx {
  const struct planner_tensor *t;
  size_t n;
  uint64_t galign;  /* the global alignment */
  int64_t end_op;   /* the graph's last operator */
  const uint64_t *width; /* greedy-breadth: live bytes per span */
};

typedef int (*before_fn)(const struct rctx *c, size_t a, size_t b);

static int is_free(const struct planner_tensor *t)
{
  return t->size != 0 && t->pinned == PLANNER_NOT_PINNED;
}

static int overlap(const struct planner_tensor *a,
                   const struct planner_tensor *b)
{
  return !(a->last < b->first || b->last < a->first);
}

static uint64_t up(uint64_t v, uint64_t a)
{
  return (v + a - 1) / a * a;
}

static uint64_t align_of(const struct rctx *c, size_t i)
{
  return c->t[i].align > c->galign ? c->t[i].align : c->galign;
}

/* Stable insertion sort of v[0..m) by "a goes strictly before b". */
static void isort(size_t *v, size_t m, before_fn before, const struct rctx *c)
{
  for (size_t i = 1; i < m; i++)
    for (size_t j = i; j > 0 && before(c, v[j], v[j - 1]); j--) {
      size_t x = v[j];
      v[j] = v[j - 1];
      v[j - 1] = x;
    }
}

static int tflm_before(const struct rctx *c, size_t a, size_t b)
{
  uint64_t x = c->t[a].size, y = c->t[b].size;
  return x > y || (x == y && a > b);
}

static int size_before(const struct rctx *c, size_t a, size_t b)
{
  uint64_t x = c->t[a].size, y = c->t[b].size;
  return x > y || (x == y && a < b);
}

static int whole(const struct rctx *c, size_t i)
{
  return c->t[i].first == 0 && c->t[i].last == c->end_op;
}

static int tflite_before(const struct rctx *c, size_t a, size_t b)
{
  const struct planner_tensor *x = &c->t[a], *y = &c->t[b];
  if (whole(c, a) != whole(c, b))
    return whole(c, a);
  if (whole(c, a))
    return x->id < y->id;
  if (x->size != y->size)
    return x->size > y->size;
  if (x->first != y->first)
    return x->first < y->first;
  return x->id < y->id;
}

static int id_before(const struct rctx *c, size_t a, size_t b)
{
  return c->t[a].id < c->t[b].id;
}

static int span_before(const struct rctx *c, size_t a, size_t b)
{
  return c->width[a] > c->width[b]; /* ties keep the earlier span */
}

/* The free tensors, sorted by before. Returns how many. */
static size_t free_sorted(const struct rctx *c, before_fn before, size_t *v)
{
  size_t m = 0;
  for (size_t i = 0; i < c->n; i++)
    if (is_free(&c->t[i]))
      v[m++] = i;
  isort(v, m, before, c);
  return m;
}

static int cmp_i64(const void *a, const void *b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* greedy-breadth's order: spans between lifetime boundaries, widest
 * first; in each, its unvisited free tensors by size. */
static size_t breadth_order(struct rctx *c, size_t *v)
{
  int64_t *bnd = malloc((2 * c->n + 1) * sizeof *bnd);
  size_t nb = 0;
  for (size_t i = 0; i < c->n; i++)
    if (c->t[i].size) {
      bnd[nb++] = c->t[i].first;
      bnd[nb++] = c->t[i].last + 1;
    }
  qsort(bnd, nb, sizeof *bnd, cmp_i64);
  size_t u = 0;
  for (size_t k = 0; k < nb; k++)
    if (u == 0 || bnd[u - 1] != bnd[k])
      bnd[u++] = bnd[k];
  size_t ns = u ? u - 1 : 0;
  uint64_t *width = calloc(ns + 1, sizeof *width);
  size_t *spans = malloc((ns + 1) * sizeof *spans);
  char *seen = calloc(c->n, 1);
  for (size_t s = 0; s < ns; s++) {
    spans[s] = s;
    for (size_t i = 0; i < c->n; i++)
      if (c->t[i].size && c->t[i].first <= bnd[s] && bnd[s] <= c->t[i].last)
        width[s] += c->t[i].size;
  }
  c->width = width;
  isort(spans, ns, span_before, c);
  size_t m = 0;
  for (size_t k = 0; k < ns; k++) {
    size_t from = m;
    for (size_t i = 0; i < c->n; i++)
      if (is_free(&c->t[i]) && !seen[i] && c->t[i].first <= bnd[spans[k]] &&
          bnd[spans[k]] <= c->t[i].last) {
        seen[i] = 1;
        v[m++] = i;
      }
    isort(v + from, m - from, size_before, c);
  }
  free(bnd);
  free(width);
  free(spans);
  free(seen);
  return m;
}

struct placed {
  uint64_t off, end;
};

static int cmp_placed(const void *a, const void *b)
{
  uint64_t x = ((const struct placed *)a)->off;
  uint64_t y = ((const struct placed *)b)->off;
  return (x > y) - (x < y);
}

/* Places order[0..m) after the pinned tensors: into the lowest gap that
 * fits (first_fit) or the tightest, lowest on ties; else on top. */
static void place(const struct rctx *c, const size_t *order, size_t m,
                  int first_fit, uint64_t *off)
{
  char *done = calloc(c->n, 1);
  struct placed *nb = malloc((c->n + 1) * sizeof *nb);
  for (size_t i = 0; i < c->n; i++) {
    off[i] = c->t[i].pinned == PLANNER_NOT_PINNED ? 0
                                                  : (uint64_t)c->t[i].pinned;
    done[i] = c->t[i].size && c->t[i].pinned != PLANNER_NOT_PINNED;
  }
  for (size_t k = 0; k < m; k++) {
    size_t i = order[k], q = 0;
    for (size_t j = 0; j < c->n; j++)
      if (done[j] && overlap(&c->t[i], &c->t[j]))
        nb[q++] = (struct placed){off[j], off[j] + c->t[j].size};
    qsort(nb, q, sizeof *nb, cmp_placed);
    uint64_t a = align_of(c, i), size = c->t[i].size;
    uint64_t cur = 0, best = UINT64_MAX, slack = UINT64_MAX;
    for (size_t p = 0; p < q; p++) {
      uint64_t s = up(cur, a);
      if (s + size <= nb[p].off && nb[p].off - s - size < slack) {
        best = s;
        slack = nb[p].off - s - size;
        if (first_fit || slack == 0)
          break;
      }
      if (nb[p].end > cur)
        cur = nb[p].end;
    }
    off[i] = best != UINT64_MAX ? best : up(cur, a);
    done[i] = 1;
  }
  free(done);
  free(nb);
}

/* naive: bump allocation in id order above the highest pinned tensor. */
static void naive(const struct rctx *c, uint64_t *off)
{
  size_t *v = malloc((c->n + 1) * sizeof *v);
  uint64_t top = 0;
  for (size_t i = 0; i < c->n; i++) {
    const struct planner_tensor *t = &c->t[i];
    off[i] = t->pinned == PLANNER_NOT_PINNED ? 0 : (uint64_t)t->pinned;
    if (t->size && t->pinned != PLANNER_NOT_PINNED &&
        off[i] + t->size > top)
      top = off[i] + t->size;
  }
  size_t m = free_sorted(c, id_before, v);
  for (size_t k = 0; k < m; k++) {
    off[v[k]] = up(top, align_of(c, v[k]));
    top = off[v[k]] + c->t[v[k]].size;
  }
  free(v);
}

/* The reference plan of algorithm a into off. */
static void reference(const struct planner_tensor *t, size_t n,
                      uint64_t galign, enum planner_algo a, uint64_t *off)
{
  struct rctx c = {t, n, galign, 0, NULL};
  for (size_t i = 0; i < n; i++)
    if (t[i].last > c.end_op)
      c.end_op = t[i].last;
  size_t *v = malloc((n + 1) * sizeof *v);
  size_t m;
  switch (a) {
  case PLANNER_ALGO_NAIVE:
    naive(&c, off);
    break;
  case PLANNER_ALGO_TFLM_GREEDY:
    m = free_sorted(&c, tflm_before, v);
    place(&c, v, m, 1, off);
    break;
  case PLANNER_ALGO_TFLITE_BESTFIT:
    m = free_sorted(&c, tflite_before, v);
    place(&c, v, m, 0, off);
    break;
  case PLANNER_ALGO_GREEDY_SIZE:
    m = free_sorted(&c, size_before, v);
    place(&c, v, m, 0, off);
    break;
  default:
    m = breadth_order(&c, v);
    place(&c, v, m, 0, off);
    break;
  }
  free(v);
}

/* A graph made for the oracle: see the file comment. */
static size_t oracle_graph(uint64_t *rs, struct planner_tensor *t,
                           size_t cap)
{
  size_t n = (size_t)tu_rand_range(rs, 1, cap);
  int64_t ops = (int64_t)tu_rand_range(rs, 1, 3 + n / 2);
  int ties = tu_rand_range(rs, 0, 1) == 0;     /* few distinct sizes */
  int reverse = tu_rand_range(rs, 0, 1) == 0;  /* ids against row order */
  int sparse = tu_rand_range(rs, 0, 3) == 0;   /* huge operator numbers */
  int pins = tu_rand_range(rs, 0, 3) == 0;
  for (size_t i = 0; i < n; i++) {
    struct planner_tensor *x = &t[i];
    x->id = (uint32_t)((reverse ? n - i : i) * 5 + tu_rand_range(rs, 0, 4));
    uint64_t kind = tu_rand_range(rs, 0, 9);
    x->size = kind == 0 ? 0
              : ties    ? 64 * tu_rand_range(rs, 1, 4)
                        : tu_rand_range(rs, 1, 5000);
    x->align = tu_rand_range(rs, 0, 7) == 0 ? 1u << tu_rand_range(rs, 0, 8)
                                            : 0;
    uint64_t life = tu_rand_range(rs, 0, 9);
    x->first = (int64_t)tu_rand_range(rs, 0, (uint64_t)ops);
    x->last = x->first + (int64_t)(life == 0 ? tu_rand_range(rs, 0, (uint64_t)ops)
                                             : tu_rand_range(rs, 0, 3));
    if (life == 1) { /* the whole graph */
      x->first = 0;
      x->last = 2 * ops;
    }
    if (sparse) {
      x->first = x->first * 1000003 + 7;
      x->last = x->last * 1000003 + 7 + (int64_t)tu_rand_range(rs, 0, 1);
    }
    x->pinned = pins && x->size && i % 7 == 3
                    ? (int64_t)(1u << 20) * (int64_t)(i + 1)
                    : PLANNER_NOT_PINNED;
    x->alias = 0;
    x->has_alias = 0;
  }
  return n;
}

static const enum planner_algo heuristics[] = {
    PLANNER_ALGO_NAIVE,        PLANNER_ALGO_TFLM_GREEDY,
    PLANNER_ALGO_TFLITE_BESTFIT, PLANNER_ALGO_GREEDY_SIZE,
    PLANNER_ALGO_GREEDY_BREADTH,
};

/* Plans graph t with every heuristic and compares with the reference. */
static void check_graph(const struct planner_tensor *t, size_t n,
                        uint64_t galign, int round)
{
  uint64_t *want = malloc((n + 1) * sizeof *want);
  char err[ARENA_ERR_LEN];
  for (size_t k = 0; k < sizeof heuristics / sizeof *heuristics; k++) {
    struct planner_graph g = {t, n};
    struct planner_options o;
    planner_options_init(&o);
    o.algo = heuristics[k];
    o.alignment = galign;
    struct planner_plan p;
    planner_plan_init(&p);
    ck_assert_msg(planner_run(&g, &o, &p, err) == 0, "round %d: %s", round,
                  err);
    reference(t, n, galign, heuristics[k], want);
    for (size_t i = 0; i < n; i++)
      ck_assert_msg(p.offsets[i] == want[i],
                    "round %d, %s, %zu tensors: tensor %zu at %" PRIu64
                    ", reference %" PRIu64,
                    round, planner_algo_name(heuristics[k]), n, i,
                    p.offsets[i], want[i]);
    planner_plan_cleanup(&p);
  }
  free(want);
}

START_TEST(test_oracle_small)
{
  struct planner_tensor t[80];
  uint64_t rs = 0x0ac1e;
  for (int r = 0; r < 3000; r++) {
    size_t n = oracle_graph(&rs, t, 80);
    check_graph(t, n, 1u << tu_rand_range(&rs, 0, 6), r);
  }
}
END_TEST

/* Sizes and pinned offsets beyond 32 bits (the small graphs scaled by
 * 2^33): the planners' paths for narrow sizes are not taken. */
START_TEST(test_oracle_wide)
{
  struct planner_tensor t[80];
  uint64_t rs = 0x3164;
  for (int r = 0; r < 1000; r++) {
    size_t n = oracle_graph(&rs, t, 80);
    for (size_t i = 0; i < n; i++) {
      t[i].size <<= 33;
      if (t[i].pinned != PLANNER_NOT_PINNED)
        t[i].pinned *= (int64_t)1 << 33;
    }
    check_graph(t, n, 1u << tu_rand_range(&rs, 0, 6), r);
  }
}
END_TEST

/* One size of 2^62 among small ones: greedy-breadth's keys (first
 * visit, size) no longer fit in one 64-bit word together, and it sorts
 * twice. */
START_TEST(test_oracle_huge)
{
  struct planner_tensor t[80];
  uint64_t rs = 0x4e6e;
  int planned = 0;
  for (int r = 0; r < 1000; r++) {
    size_t n = oracle_graph(&rs, t, 80), i = 0;
    while (i < n && (!t[i].size || t[i].pinned != PLANNER_NOT_PINNED))
      i++;
    if (i == n)
      continue;
    t[i].size = (uint64_t)1 << 62;
    check_graph(t, n, 1u << tu_rand_range(&rs, 0, 6), r);
    planned++;
  }
  ck_assert_int_gt(planned, 500);
}
END_TEST

/* Long lists of overlapping tensors (more than 64: radix-sorted gaps)
 * and orders of thousands (radix-sorted orders). */
START_TEST(test_oracle_large)
{
  struct planner_tensor *t = malloc(ORACLE_BIG * sizeof *t);
  uint64_t rs = 0xb16;
  for (int r = 0; r < 8; r++) {
    size_t n = oracle_graph(&rs, t, ORACLE_BIG);
    check_graph(t, n, r % 2 ? 64 : 1, r);
  }
  free(t);
}
END_TEST

/* Graphs shaped like compilers' traces, with timelines long enough for
 * the group unions and enough long-lived tensors for the block tree:
 * most tensors live a few operators, some hundreds to thousands, a few
 * the whole graph; sizes odd and varied, some equal. */
START_TEST(test_oracle_traces)
{
  enum { N = 9000 };
  struct planner_tensor *t = malloc(N * sizeof *t);
  uint64_t rs = 0x7ace;
  for (int r = 0; r < 2; r++) {
    int64_t ops = N / 2;
    for (size_t i = 0; i < N; i++) {
      int64_t f = (int64_t)(i / 2);
      uint64_t kind = tu_rand_range(&rs, 0, 99);
      int64_t len = kind < 15   ? (int64_t)tu_rand_range(&rs, 100, (uint64_t)ops)
                    : kind < 17 ? ops
                                : (int64_t)tu_rand_range(&rs, 0, 5);
      if (kind >= 15 && kind < 17)
        f = 0;
      t[i] = (struct planner_tensor){
          (uint32_t)(r ? N - i : i),
          kind % 5 == 0 ? 4096 : 2 * tu_rand_range(&rs, 0, 50000) + 1, f,
          f + len, 0, PLANNER_NOT_PINNED, 0, 0};
    }
    check_graph(t, N, r ? 64 : 1, r);
  }
  free(t);
}
END_TEST

void cp_add_oracle_tests(Suite *s)
{
  TCase *tc = tcase_create("oracle");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_oracle_small);
  tcase_add_test(tc, test_oracle_wide);
  tcase_add_test(tc, test_oracle_huge);
  tcase_add_test(tc, test_oracle_large);
  tcase_add_test(tc, test_oracle_traces);
  suite_add_tcase(s, tc);
}

/*
 * heuristics.c - the greedy planners: naive, tflm-greedy, tflite-bestfit,
 * greedy-size and greedy-breadth.
 *
 * DESIGN: every greedy planner is "visit the tensors in some order; put
 * each one into a gap between the already placed tensors that overlap it
 * in time, or on top of them". The planners differ only in the order and
 * in which gap they take (the lowest that fits, or the tightest). The
 * problem's time index (tindex.h) lists the bytes of the placed tensors
 * that overlap a lifetime in O(log S + k) for k overlapping tensors,
 * reading mostly contiguous memory, and reads unions of them where
 * there would be many; each placement then sorts what it got by offset
 * and scans the gaps, which depend only on the union: the sorted unions
 * but the longest are merged with the rest, and the scan walks the
 * result and the longest union together, as if merged, stopping at the
 * first fit (or a best fit without slack). Pinned tensors are
 * placed first, at their offsets; zero-size tensors get offset 0. Orders
 * are built with radix sorts, and a heuristic allocates O(1) blocks
 * however many tensors it places (its scratch lists grow by doubling).
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
#include "heuristics.h"
#include "planner_sort.h"
#include "tindex.h"
#include "tunion.h"

#include <stdlib.h>
#include <string.h>

enum fit_mode { FIT_FIRST, FIT_BEST };

/* One heuristic's working state. */
struct placer {
  const struct planner__prob *p;
  const struct tindex *x;
  struct tindex_span *pos;     /* x->m placements by rank */
  uint64_t top;                /* largest end placed so far */
  struct tunion unions;        /* unions of placed bytes, see tunion.h */
  struct tindex_spans spans;   /* scratch: overlapping placed bytes */
  struct tunion_runs runs;     /* scratch: sorted runs of them */
  struct tindex_spans tmp;     /* scratch for sorting spans */
  struct tindex_spans merged;  /* scratch: spans and runs merged */
};

/* LSD radix sort by off over the bits that differ between offsets only:
 * 8-bit digits for lists of a few hundred (cheap buckets), 11-bit ones
 * beyond (fewer passes). For the long lists of long-lived tensors. */
static void radix_spans(struct tindex_span *s, struct tindex_span *tmp,
                        size_t n)
{
  uint64_t any = 0, all = UINT64_MAX;
  for (size_t i = 0; i < n; i++) {
    any |= s[i].off;
    all &= s[i].off;
  }
  uint64_t differ = any ^ all;
  unsigned width = n < 4096 ? 8 : 11;
  uint64_t mask = ((uint64_t)1 << width) - 1;
  struct tindex_span *src = s, *dst = tmp;
  for (unsigned shift = differ ? (unsigned)__builtin_ctzll(differ) : 64;
       shift < 64 && (differ >> shift); shift += width) {
    if (!((differ >> shift) & mask))
      continue;
    size_t count[2048 + 1];
    memset(count, 0, (mask + 2) * sizeof *count);
    for (size_t i = 0; i < n; i++)
      count[((src[i].off >> shift) & mask) + 1]++;
    for (size_t d = 0; d < mask + 1; d++)
      count[d + 1] += count[d];
    for (size_t i = 0; i < n; i++)
      dst[count[(src[i].off >> shift) & mask]++] = src[i];
    struct tindex_span *t = src;
    src = dst;
    dst = t;
  }
  if (src != s)
    memcpy(s, src, n * sizeof *s);
}

/* Orders two keys without a branch. */
static inline void order2(uint64_t *a, uint64_t *b)
{
  uint64_t x = *a, y = *b;
  *a = x < y ? x : y;
  *b = x < y ? y : x;
}

#define FEW 16 /* spans sorted by a sorting network at most */
#define FEW_BITS 4 /* bits of a span's index among FEW */

/* Batcher's odd-even merge sort of 16 keys: its first 5 comparators sort
 * keys 0 .. 3, its first 19 keys 0 .. 7. */
static const unsigned char batcher16[63][2] = {
    {0, 1},   {2, 3},   {0, 2},   {1, 3},   {1, 2},   {4, 5},   {6, 7},
    {4, 6},   {5, 7},   {5, 6},   {0, 4},   {2, 6},   {2, 4},   {1, 5},
    {3, 7},   {3, 5},   {1, 2},   {3, 4},   {5, 6},   {8, 9},   {10, 11},
    {8, 10},  {9, 11},  {9, 10},  {12, 13}, {14, 15}, {12, 14}, {13, 15},
    {13, 14}, {8, 12},  {10, 14}, {10, 12}, {9, 13},  {11, 15}, {11, 13},
    {9, 10},  {11, 12}, {13, 14}, {0, 8},   {4, 12},  {4, 8},   {2, 10},
    {6, 14},  {6, 10},  {2, 4},   {6, 8},   {10, 12}, {1, 9},   {5, 13},
    {5, 9},   {3, 11},  {7, 15},  {7, 11},  {3, 5},   {7, 9},   {11, 13},
    {1, 2},   {3, 4},   {5, 6},   {7, 8},   {9, 10},  {11, 12}, {13, 14}};

/* The first c comparators of batcher16 on k, unrolled where c is a
 * constant, so that the keys stay in registers. */
static inline void network(uint64_t *k, size_t c)
{
#pragma GCC unroll 63
  for (size_t i = 0; i < c; i++)
    order2(&k[batcher16[i][0]], &k[batcher16[i][1]]);
}

/* Sorts s[0..n), 2 < n <= FEW, by off into out, by a sorting network of
 * keys that pack each offset with the span's index: no branch on the
 * data, where insertion sort's comparisons are coin tosses. Returns 0,
 * or -1 (nothing done) when an offset is too large to pack. */
static int sort_few(const struct tindex_span *s, size_t n,
                    struct tindex_span *out)
{
  uint64_t k[FEW], any = 0;
  for (size_t i = 0; i < FEW; i++)
    k[i] = UINT64_MAX; /* past n: sorts last */
  for (size_t i = 0; i < n; i++) {
    any |= s[i].off;
    k[i] = s[i].off << FEW_BITS | i;
  }
  if (any >> (64 - FEW_BITS))
    return -1;
  if (n <= 4)
    network(k, 5);
  else if (n <= 8)
    network(k, 19);
  else
    network(k, 63);
  for (size_t i = 0; i < n; i++)
    out[i] = s[k[i] & (FEW - 1)];
  return 0;
}

/* Sorts pl->spans by off (ties in any order: the gap scan only uses the
 * running maximum of the ends, so the chosen offset does not depend on
 * it): a sorting network for a few, insertion sort for the short lists
 * typical of real graphs, radix sort beyond. Returns 0 or -1 on OOM. */
static int sort_spans(struct placer *pl)
{
  struct tindex_span *s = pl->spans.v;
  size_t n = pl->spans.n;
  if (n > 2 && n <= FEW) {
    if (tunion_reserve(&pl->tmp, n))
      return -1;
    if (!sort_few(s, n, pl->tmp.v)) { /* the sorted list becomes spans */
      struct tindex_spans t = pl->spans;
      pl->spans = pl->tmp;
      pl->spans.n = n;
      pl->tmp = t;
      pl->tmp.n = 0; /* scratch: its room only */
      return 0;
    }
  }
  if (n > 64) {
    if (tunion_reserve(&pl->tmp, n))
      return -1;
    radix_spans(s, pl->tmp.v, n);
    return 0;
  }
  for (size_t i = 1; i < n; i++) {
    struct tindex_span v = s[i];
    size_t j = i;
    for (; j > 0 && v.off < s[j - 1].off; j--)
      s[j] = s[j - 1];
    s[j] = v;
  }
  return 0;
}


/* x when c is 1, y when c is 0, without a branch. */
static inline uint64_t pick64(uint64_t c, uint64_t x, uint64_t y)
{
  return y ^ ((x ^ y) & (0 - c));
}

/* The next of two sorted lists in merged order, a[*i] or b[*j] (both
 * there), and steps past it. Branch-free: which list comes next is a coin
 * toss when pieces interleave. */
static inline const struct tindex_span *
next_of(const struct tindex_span *a, size_t *i, const struct tindex_span *b,
        size_t *j)
{
  uint64_t ta = a[*i].off <= b[*j].off;
  const struct tindex_span *s = (const struct tindex_span *)(uintptr_t)
      pick64(ta, (uintptr_t)&a[*i], (uintptr_t)&b[*j]);
  *i += (size_t)ta;
  *j += (size_t)(1 - ta);
  return s;
}

/* The piece being built by merge2() takes s: out[n] gets the piece, and
 * n advances past it unless s meets it and grows it instead. */
static inline size_t grow(struct tindex_span *out, size_t n,
                          struct tindex_span *c, const struct tindex_span *s)
{
  uint64_t join = s->off <= c->end;
  out[n] = *c;
  c->off = pick64(join, c->off, s->off);
  c->end = pick64(join, pick64(s->end > c->end, s->end, c->end), s->end);
  return n + (size_t)(1 - join);
}

/* Writes the union of the sorted pieces a[0..na) and b[0..nb) (each
 * sorted by offset) into out (room na + nb) as sorted disjoint pieces;
 * returns their count. Branch-free in the loop, where which input comes
 * next, and whether it meets the piece being built, are coin tosses
 * when pieces interleave: the piece being built stays in registers and
 * is written at every step, where the next one overwrites it unless it
 * is complete. */
static size_t merge2(const struct tindex_span *a, size_t na,
                     const struct tindex_span *b, size_t nb,
                     struct tindex_span *out)
{
  if (!na || !nb) { /* one list: just join its touching pieces */
    const struct tindex_span *t = na ? a : b;
    size_t nt = na ? na : nb, n = 0;
    if (!nt)
      return 0;
    struct tindex_span c = t[0];
    for (size_t k = 1; k < nt; k++)
      n = grow(out, n, &c, &t[k]);
    out[n] = c;
    return n + 1;
  }
  size_t i = 0, j = 0, n = 0;
  struct tindex_span c = a[0].off <= b[0].off ? a[i++] : b[j++];
  while (i < na && j < nb)
    n = grow(out, n, &c, next_of(a, &i, b, &j));
  const struct tindex_span *t = i < na ? a + i : b + j; /* one tail */
  size_t nt = i < na ? na - i : nb - j;
  for (size_t k = 0; k < nt; k++)
    n = grow(out, n, &c, &t[k]);
  out[n] = c;
  return n + 1;
}

/* Merges pl->spans (sorted) and the first n_runs of pl->runs, two at a
 * time, into sorted disjoint pieces: the union of them all. Sets *sp and
 * *n to them (in pl->spans, pl->merged or pl->tmp, or a run read in
 * place). Returns 0 or -1 on OOM. */
static int merge_runs(struct placer *pl, size_t n_runs,
                      const struct tindex_span **sp, size_t *n)
{
  size_t total = pl->spans.n;
  for (size_t i = 0; i < n_runs; i++)
    total += pl->runs.v[i].n;
  if (tunion_reserve(&pl->merged, total) ||
      tunion_reserve(&pl->tmp, total))
    return -1;
  const struct tindex_span *acc = pl->spans.v;
  size_t n_acc = pl->spans.n;
  struct tindex_spans *dst = &pl->merged, *other = &pl->tmp;
  for (size_t i = 0; i < n_runs; i++) {
    const struct tunion_run *r = &pl->runs.v[i];
    const struct tindex_span *v = *r->base + r->at;
    if (n_acc == 0) { /* a run alone is read in place */
      acc = v;
      n_acc = r->n;
      continue;
    }
    n_acc = merge2(acc, n_acc, v, r->n, dst->v);
    acc = dst->v;
    struct tindex_spans *t = dst;
    dst = other;
    other = t;
  }
  *sp = acc;
  *n = n_acc;
  return 0;
}

/* The gap scan of one placement: the placed bytes it overlaps come in
 * offset order (ties in any order, touching or overlapping ones apart
 * or joined: only the running maximum of their ends matters), and each
 * gap below the next is a candidate. */
struct scan {
  uint64_t size, a;       /* the tensor's size and alignment */
  uint64_t cur;           /* the highest end so far */
  uint64_t best, slack;   /* best candidate and its slack so far */
};

static void scan_init(struct scan *c, const struct placer *pl, uint32_t r)
{
  c->size = pl->x->item[r].size;
  c->a = (uint64_t)1 << tindex_align_log2(pl->x, r);
  c->cur = c->best = 0;
  c->slack = UINT64_MAX;
}

/* Takes the placed bytes s; returns 1 when the choice is made (the first
 * fit, or a best fit without slack): c->best then holds it. Branch-free
 * but for that exit, which is rare: whether a gap fits, and whether it
 * is the tightest so far, are coin tosses when pieces interleave. The
 * running values (highest end, least slack) each take one compare and
 * one conditional move a gap, the chain that bounds the scan's speed. */
static inline int scan_take(struct scan *c, const struct tindex_span *s,
                            enum fit_mode m)
{
  uint64_t start = planner__align_up(c->cur, c->a);
  uint64_t fits = start + c->size <= s->off;
  c->cur = s->end > c->cur ? s->end : c->cur;
  if (m == FIT_FIRST) { /* the first fit ends the scan */
    c->best = start;
    return (int)fits;
  }
  /* the gap's slack, or UINT64_MAX when it does not fit (slacks are
   * below 2^63): the running minimum is one compare a gap */
  uint64_t slack = (s->off - start - c->size) | (fits - 1);
  uint64_t better = slack < c->slack;
  c->best = pick64(better, start, c->best);
  c->slack = better ? slack : c->slack;
  return c->slack == 0;
}

/* The chosen offset once every placed byte was taken. */
static uint64_t scan_end(const struct scan *c)
{
  return c->slack != UINT64_MAX ? c->best : planner__align_up(c->cur, c->a);
}

/* Chooses the offset for rank r among the placed bytes it overlaps: the
 * union of a[0..na) and b[0..nb), each sorted by offset, scanned in one
 * pass as if merged. m is a constant where this is inlined. */
static inline uint64_t scan2(struct scan *c, enum fit_mode m,
                             const struct tindex_span *a, size_t na,
                             const struct tindex_span *b, size_t nb)
{
  size_t i = 0, j = 0;
  while (i < na && j < nb)
    if (scan_take(c, next_of(a, &i, b, &j), m))
      return c->best;
  size_t nt = i < na ? na - i : nb - j; /* one tail */
  const struct tindex_span *t = !nt ? NULL : i < na ? a + i : b + j;
  for (size_t k = 0; k < nt; k++)
    if (scan_take(c, &t[k], m))
      return c->best;
  return scan_end(c);
}

static uint64_t choose_offset(const struct placer *pl, uint32_t r,
                              enum fit_mode m, const struct tindex_span *a,
                              size_t na, const struct tindex_span *b,
                              size_t nb)
{
  struct scan c;
  scan_init(&c, pl, r);
  return m == FIT_FIRST ? scan2(&c, FIT_FIRST, a, na, b, nb)
                        : scan2(&c, FIT_BEST, a, na, b, nb);
}

/* Puts rank r at off. Returns 0 or ARENA_ENOMEM. */
static int place(struct placer *pl, uint32_t r, uint64_t off)
{
  pl->pos[r].off = off;
  pl->pos[r].end = off + pl->x->item[r].size;
  if (pl->pos[r].end > pl->top)
    pl->top = pl->pos[r].end;
  return tunion_add(pl->x, &pl->unions, r, off, pl->pos[r].end)
             ? ARENA_ENOMEM
             : 0;
}

/* Places the pinned tensors and marks every other one unplaced. Returns
 * 0 or ARENA_ENOMEM. */
static int place_pins(struct placer *pl)
{
  const struct tindex *x = pl->x;
  memset(pl->pos, 0, x->m * sizeof *pl->pos);
  int rc = 0;
  for (size_t r = 0; r < x->m && !rc && pl->p->n_pinned; r++) {
    const struct planner_tensor *t = &pl->p->t[x->row_of[r]];
    if (t->pinned != PLANNER_NOT_PINNED)
      rc = place(pl, (uint32_t)r, (uint64_t)t->pinned);
  }
  return rc;
}

/* Swaps the longest of the runs to the end, where the scan reads it in
 * place instead of copying it in a merge (their union is the same in
 * any order). */
static void longest_last(struct tunion_runs *rs)
{
  size_t l = rs->n - 1;
  for (size_t i = 0; i + 1 < rs->n; i++)
    if (rs->v[i].n > rs->v[l].n)
      l = i;
  struct tunion_run t = rs->v[l];
  rs->v[l] = rs->v[rs->n - 1];
  rs->v[rs->n - 1] = t;
}

/* How many placements ahead each prefetch stage runs (tindex_prefetch):
 * the order is known in advance, so the index's scattered reads for a
 * placement are in cache by the time it is made. Below PREFETCH_ALL
 * ranks most of the index stays in the caches, and the later stages,
 * which repeat part of the query's work, cost more than they save. */
static const unsigned ahead[TINDEX_PREFETCH_STAGES] = {20, 16, 12, 8, 4};
#define PREFETCH_ALL 200000 /* ranks from which every stage runs */
#define PREFETCH_SOME 2     /* stages that run below */

/* One heuristic's run: its order and its placements so far. */
struct planner__task {
  struct placer pl;    /* placements (pl.pos owned) and their unions */
  enum fit_mode mode;  /* which gap a tensor takes */
  uint32_t *order;     /* n_order ranks: the visiting order, owned */
  size_t n_order;      /* free tensors to place */
  size_t next;         /* order[0 .. next) are placed */
};

int planner__task_step(struct planner__task *t, size_t n)
{
  struct placer *pl = &t->pl;
  const struct tindex *x = pl->x;
  const uint32_t *order = t->order;
  size_t m = t->n_order, end = n < m - t->next ? t->next + n : m;
  unsigned stages = x->m >= PREFETCH_ALL ? TINDEX_PREFETCH_STAGES
                                         : PREFETCH_SOME;
  for (size_t k = t->next; k < end; k++) {
    for (unsigned s = 0; s < stages; s++)
      if (k + ahead[s] < m)
        tindex_prefetch(x, pl->pos, order[k + ahead[s]], s);
    if (k + ahead[0] < m) /* the unions the placement will update */
      tunion_prefetch(&pl->unions, order[k + ahead[0]]);
    if (tunion_collect(x, pl->pos, &pl->unions, order[k], &pl->spans,
                       &pl->runs) ||
        sort_spans(pl))
      return ARENA_ENOMEM;
    const struct tindex_span *sp = pl->spans.v, *last = NULL;
    size_t n_sp = pl->spans.n, n_last = 0;
    if (pl->runs.n) { /* the longest run is scanned along, not merged */
      longest_last(&pl->runs);
      const struct tunion_run *l = &pl->runs.v[pl->runs.n - 1];
      last = *l->base + l->at;
      n_last = l->n;
      if (pl->runs.n > 1 && merge_runs(pl, pl->runs.n - 1, &sp, &n_sp))
        return ARENA_ENOMEM;
    }
    if (place(pl, order[k],
              choose_offset(pl, order[k], t->mode, sp, n_sp, last, n_last)))
      return ARENA_ENOMEM;
    t->next = k + 1;
  }
  return 0;
}

int planner__task_done(const struct planner__task *t)
{
  return t->next == t->n_order;
}

uint64_t planner__task_top(const struct planner__task *t)
{
  return t->pl.top;
}

const struct tindex_span *planner__task_pos(const struct planner__task *t)
{
  return t->pl.pos;
}

const uint32_t *planner__task_order(const struct planner__task *t,
                                    size_t *n)
{
  *n = t->n_order;
  return t->order;
}

void planner__task_free(struct planner__task *t)
{
  if (!t)
    return;
  tunion_cleanup(&t->pl.unions);
  free(t->pl.spans.v);
  free(t->pl.runs.v);
  free(t->pl.tmp.v);
  free(t->pl.merged.v);
  free(t->pl.pos);
  free(t->order);
  free(t);
}

/* ---- orders ------------------------------------------------------------ */

static int free_tensor(const struct planner_tensor *t)
{
  return t->size != 0 && t->pinned == PLANNER_NOT_PINNED;
}

/* An order under construction: ranks with their sort keys. */
struct order {
  uint64_t *key;             /* m sort keys */
  uint32_t *rank;            /* m ranks: the order */
  size_t m;                  /* entries used */
  struct planner__radix rs;  /* radix scratch */
};

static int order_init(struct order *v, size_t n)
{
  memset(v, 0, sizeof *v);
  v->key = malloc((n ? n : 1) * sizeof *v->key);
  v->rank = malloc((n ? n : 1) * sizeof *v->rank);
  planner__advise_huge(v->key, n * sizeof *v->key);
  planner__advise_huge(v->rank, n * sizeof *v->rank);
  return v->key && v->rank ? 0 : ARENA_ENOMEM;
}

static void order_cleanup(struct order *v)
{
  free(v->key);
  free(v->rank);
  planner__radix_cleanup(&v->rs);
}

/* Sorts entries [lo, lo + k) by key, stably. */
static int order_sort(struct order *v, size_t lo, size_t k)
{
  return planner__radix_sort(v->key + lo, v->rank + lo, k, &v->rs)
             ? ARENA_ENOMEM
             : 0;
}

/* Replaces the keys of [lo, m) by the descending-size key of their rank. */
static void key_size_desc(struct order *v, const struct tindex *x, size_t lo)
{
  for (size_t k = lo; k < v->m; k++)
    v->key[k] = ~x->item[v->rank[k]].size;
}

/* The free tensors by size descending, ties to the earlier row, or to
 * the later row with later_first. */
static int order_size(const struct planner__prob *p, int later_first,
                      struct order *v)
{
  const struct tindex *x = p->x;
  for (size_t k = 0; k < p->n; k++) {
    size_t i = later_first ? p->n - 1 - k : k;
    if (free_tensor(&p->t[i]))
      v->rank[v->m++] = x->rank_of[i];
  }
  key_size_desc(v, x, 0);
  return order_sort(v, 0, v->m);
}

/* The last operator of any tensor of p: TFLite's end of the graph. */
static int64_t end_op_of(const struct planner__prob *p)
{
  int64_t end_op = 0;
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].last > end_op)
      end_op = p->t[i].last;
  return end_op;
}

/* Whether the ids ascend with the graph rows. */
static int ids_ascend(const struct planner__prob *p)
{
  for (size_t i = 1; i < p->n; i++)
    if (p->t[i - 1].id >= p->t[i].id)
      return 0;
  return 1;
}

/* TFLite's order: tensors live through the whole graph first, by id;
 * then size descending, ties by first operator, then id. When ids ascend
 * with the rows, (first, id) is the order of the ranks, (first, row):
 * the rest is taken in rank order instead of sorted by (first, id). */
static int order_tflite(const struct planner__prob *p, struct order *v)
{
  const struct tindex *x = p->x;
  int64_t end_op = end_op_of(p);
  int by_rank = ids_ascend(p);
  size_t n_whole = 0;
  for (int whole = 1; whole >= 0; whole--) {
    int ranks = !whole && by_rank;
    for (size_t k = 0; k < (ranks ? x->m : p->n); k++) {
      size_t i = ranks ? x->row_of[k] : k;
      const struct planner_tensor *t = &p->t[i];
      if (free_tensor(t) && (t->first == 0 && t->last == end_op) == whole) {
        uint32_t r = x->rank_of[i];
        /* s0 orders like first; the id breaks the remaining ties */
        v->key[v->m] = whole ? t->id : (uint64_t)x->item[r].s0 << 32 | t->id;
        v->rank[v->m++] = r;
      }
    }
    if (whole)
      n_whole = v->m;
  }
  int rc = order_sort(v, 0, n_whole);
  if (!rc && !by_rank)
    rc = order_sort(v, n_whole, v->m - n_whole);
  key_size_desc(v, x, n_whole);
  return rc ? rc : order_sort(v, n_whole, v->m - n_whole);
}

int planner__tflite_same_order(const struct planner__prob *p,
                               const uint32_t *order, size_t m)
{
  const struct tindex *x = p->x;
  int64_t end_op = end_op_of(p);
  const struct planner_tensor *u = NULL; /* the tensor before */
  int u_whole = 1; /* so far every tensor lived through the whole graph */
  for (size_t k = 0; k < m; k++) {
    const struct planner_tensor *t = &p->t[x->row_of[order[k]]];
    int whole = t->first == 0 && t->last == end_op;
    if (whole && !u_whole)
      return 0; /* TFLite takes the whole-graph tensors first */
    if (u && (whole ? u->id > t->id
                    : !u_whole && u->size == t->size &&
                          (u->first > t->first ||
                           (u->first == t->first && u->id > t->id))))
      return 0; /* TFLite breaks this tie the other way */
    u = t;
    u_whole = whole;
  }
  return 1;
}

/* The order of heuristic a (not naive) into v. */
static int order_of(const struct planner__prob *p, enum planner_algo a,
                    struct order *v)
{
  switch (a) {
  case PLANNER_ALGO_TFLM_GREEDY:
    return order_size(p, 1, v);
  case PLANNER_ALGO_GREEDY_SIZE:
    return order_size(p, 0, v);
  case PLANNER_ALGO_TFLITE_BESTFIT:
    return order_tflite(p, v);
  case PLANNER_ALGO_GREEDY_BREADTH:
    return planner__breadth_order(p, v->rank, v->key, &v->rs, &v->m);
  default:
    return ARENA_EINVAL;
  }
}

int planner__task_new(const struct planner__prob *p, enum planner_algo a,
                      struct planner__task **out)
{
  struct order v;
  memset(&v, 0, sizeof v);
  *out = NULL;
  if (a != PLANNER_ALGO_TFLM_GREEDY && a != PLANNER_ALGO_TFLITE_BESTFIT &&
      a != PLANNER_ALGO_GREEDY_SIZE && a != PLANNER_ALGO_GREEDY_BREADTH)
    return ARENA_EINVAL;
  struct planner__task *t = calloc(1, sizeof *t);
  if (!t)
    return ARENA_ENOMEM;
  size_t room = (p->x->m ? p->x->m : 1) * sizeof *t->pl.pos;
  t->pl.pos = malloc(room);
  planner__advise_huge(t->pl.pos, room);
  int rc = t->pl.pos ? order_init(&v, p->x->m) : ARENA_ENOMEM;
  if (!rc) { /* the placements' room is the sorts' scratch till then */
    v.rs = planner__radix_borrow(t->pl.pos, room);
    rc = order_of(p, a, &v);
  }
  free(v.key); /* keys are done with: placing needs the memory */
  planner__radix_cleanup(&v.rs);
  t->order = v.rank;
  t->n_order = v.m;
  t->mode = a == PLANNER_ALGO_TFLM_GREEDY ? FIT_FIRST : FIT_BEST;
  t->pl.p = p;
  t->pl.x = p->x;
  if (!rc)
    rc = place_pins(&t->pl);
  if (rc) {
    planner__task_free(t);
    return rc;
  }
  *out = t;
  return 0;
}

void planner__offsets_of(const struct planner__prob *p,
                         const struct tindex_span *pos, uint64_t *offsets)
{
  const struct tindex *x = p->x;
  for (size_t i = 0; i < p->n; i++) {
    uint32_t r = x->rank_of[i];
    offsets[i] = r != TINDEX_NONE ? pos[r].off
                 : p->t[i].pinned != PLANNER_NOT_PINNED
                     ? (uint64_t)p->t[i].pinned
                     : 0;
  }
}

/* ---- naive --------------------------------------------------------------- */

static int run_naive(const struct planner__prob *p, uint64_t *off)
{
  struct order v;
  int rc = order_init(&v, p->n);
  uint64_t top = 0;
  for (size_t i = 0; i < p->n && !rc; i++) {
    const struct planner_tensor *t = &p->t[i];
    int pin = t->pinned != PLANNER_NOT_PINNED;
    off[i] = pin ? (uint64_t)t->pinned : 0;
    if (pin && t->size && off[i] + t->size > top)
      top = off[i] + t->size;
    if (free_tensor(t)) {
      v.key[v.m] = t->id;
      v.rank[v.m++] = (uint32_t)i; /* rows here: naive needs no index */
    }
  }
  if (!rc)
    rc = order_sort(&v, 0, v.m);
  for (size_t k = 0; !rc && k < v.m; k++) {
    uint32_t i = v.rank[k];
    off[i] = planner__align_up(top, p->align[i]);
    top = off[i] + p->t[i].size;
  }
  order_cleanup(&v);
  return rc;
}

static int poll_stop(const struct planner_options *o)
{
  return o->stop && o->stop(o->stop_ctx);
}

int planner__heuristic(const struct planner__prob *p, enum planner_algo a,
                       uint64_t *offsets)
{
  if (a == PLANNER_ALGO_NAIVE)
    return run_naive(p, offsets);
  struct planner__task *t;
  int rc = planner__task_new(p, a, &t);
  while (!rc && !planner__task_done(t))
    rc = poll_stop(p->o) ? ARENA_ECANCELED
                         : planner__task_step(t, PLANNER_TASK_STEP);
  if (!rc)
    planner__offsets_of(p, planner__task_pos(t), offsets);
  planner__task_free(t);
  return rc;
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

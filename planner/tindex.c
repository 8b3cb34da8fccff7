/*
 * tindex.c - the time index of a problem (see tindex.h): ranks, spans,
 * a static segment tree of lifetimes, and the overlap query.
 *
 * Building costs two radix sorts (by first and by last + 1), one merge of
 * the two sorted lists into spans, and two walks over each tensor's
 * canonical cover (count, then fill). No allocation depends on the shape
 * of the graph beyond the entry count that the counting walk measures.
 */
#include "tindex.h"
#include "planner_sort.h"

#include <stdlib.h>
#include <string.h>

void tindex_cleanup(struct tindex *x)
{
  free(x->rank_of);
  free(x->row_of);
  free(x->item);
  free(x->align_log2);
  free(x->start_at);
  free(x->node_beg);
  free(x->ent);
  free(x->path_mask);
  memset(x, 0, sizeof *x);
}

static unsigned log2_of(uint64_t a)
{
  unsigned k = 0;
  while (a > 1) {
    a >>= 1;
    k++;
  }
  return k;
}

/* Numbers the non-empty tensors by (first, row) into row_of and rank_of,
 * and fills item[].size and align_log2. key (m entries) is scratch and
 * returns the sorted firsts. */
static int number_ranks(struct tindex *x, const struct planner__prob *p,
                        uint64_t *key, struct planner__radix *rs)
{
  size_t k = 0;
  for (size_t i = 0; i < p->n; i++) {
    x->rank_of[i] = TINDEX_NONE;
    if (p->t[i].size) {
      key[k] = (uint64_t)p->t[i].first;
      x->row_of[k++] = (uint32_t)i;
    }
  }
  if (planner__radix_sort(key, x->row_of, x->m, rs))
    return -1;
  for (size_t r = 0; r < x->m; r++) {
    uint32_t i = x->row_of[r];
    x->rank_of[i] = (uint32_t)r;
    x->item[r].size = p->t[i].size;
    x->align_log2[r] = (uint8_t)log2_of(p->align[i]);
  }
  return 0;
}

/* Merges the sorted firsts (by rank) and the sorted ends (last + 1, with
 * their ranks) into distinct boundaries, setting s0 and s1 of every rank.
 * Returns the number of spans. */
static size_t make_spans(struct tindex *x, const uint64_t *first,
                         const uint64_t *end, const uint32_t *end_rank)
{
  size_t m = x->m, i = 0, j = 0, u = 0;
  while (i < m || j < m) {
    uint64_t c = i < m && (j == m || first[i] <= end[j]) ? first[i] : end[j];
    for (; i < m && first[i] == c; i++)
      x->item[i].s0 = (uint32_t)u;
    for (; j < m && end[j] == c; j++)
      x->item[end_rank[j]].s1 = (uint32_t)u;
    u++;
  }
  return u ? u - 1 : 0;
}

/* Counts rank r in every node of its canonical cover of [s0, s1). */
static void count_cover(struct tindex *x, size_t r)
{
  size_t lo = x->item[r].s0 + x->n_spans, hi = x->item[r].s1 + x->n_spans;
  for (; lo < hi; lo >>= 1, hi >>= 1) {
    if (lo & 1)
      x->node_beg[lo++]++;
    if (hi & 1)
      x->node_beg[--hi]++;
  }
}

/* Puts rank r into every node of its cover, filling lists from the back. */
static void fill_cover(struct tindex *x, size_t r)
{
  size_t lo = x->item[r].s0 + x->n_spans, hi = x->item[r].s1 + x->n_spans;
  for (; lo < hi; lo >>= 1, hi >>= 1) {
    if (lo & 1)
      x->ent[--x->node_beg[lo++]] = (uint32_t)r;
    if (hi & 1)
      x->ent[--x->node_beg[--hi]] = (uint32_t)r;
  }
}

/* Builds the node lists: count, inclusive prefix sums, then fill in
 * reverse rank order so that each list ends up ascending. */
static int make_tree(struct tindex *x)
{
  size_t nodes = 2 * x->n_spans;
  x->node_beg = calloc(nodes + 1, sizeof *x->node_beg);
  if (!x->node_beg)
    return -1;
  for (size_t r = 0; r < x->m; r++)
    count_cover(x, r);
  for (size_t v = 1; v <= nodes; v++)
    x->node_beg[v] += x->node_beg[v - 1];
  x->ent = malloc((x->node_beg[nodes] ? x->node_beg[nodes] : 1) *
                  sizeof *x->ent);
  if (!x->ent)
    return -1;
  for (size_t r = x->m; r-- > 0;)
    fill_cover(x, r);
  return 0;
}

/* path_mask[s]: bit j when node (s + S) >> j has a list. pm[v] holds the
 * same for the internal node v, built top-down (a parent has a smaller
 * index than its children). */
static int make_masks(struct tindex *x)
{
  size_t S = x->n_spans;
  uint32_t *pm = malloc((S ? S : 1) * sizeof *pm);
  x->path_mask = malloc((S ? S : 1) * sizeof *x->path_mask);
  if (!pm || !x->path_mask) {
    free(pm);
    return -1;
  }
  pm[0] = 0;
  for (size_t v = 1; v < 2 * S; v++) {
    uint32_t bit = x->node_beg[v + 1] != x->node_beg[v];
    uint32_t m = (pm[v >> 1] << 1) | bit;
    if (v < S)
      pm[v] = m;
    else
      x->path_mask[v - S] = m;
  }
  free(pm);
  return 0;
}

static int make_start_at(struct tindex *x)
{
  size_t S = x->n_spans;
  x->start_at = malloc((S + 1) * sizeof *x->start_at);
  if (!x->start_at)
    return -1;
  size_t r = 0;
  for (size_t s = 0; s <= S; s++) {
    while (r < x->m && x->item[r].s0 < s)
      r++;
    x->start_at[s] = (uint32_t)r;
  }
  return 0;
}

static int build(struct tindex *x, const struct planner__prob *p)
{
  size_t m = 0;
  for (size_t i = 0; i < p->n; i++)
    m += p->t[i].size != 0;
  x->n = p->n;
  x->m = m;
  size_t mm = m ? m : 1;
  struct planner__radix rs = {0};
  uint64_t *first = malloc(mm * sizeof *first);
  uint64_t *end = malloc(mm * sizeof *end);
  uint32_t *end_rank = malloc(mm * sizeof *end_rank);
  x->rank_of = malloc((p->n ? p->n : 1) * sizeof *x->rank_of);
  x->row_of = malloc(mm * sizeof *x->row_of);
  x->item = malloc(mm * sizeof *x->item);
  x->align_log2 = malloc(mm);
  int rc = -1;
  if (!first || !end || !end_rank || !x->rank_of || !x->row_of ||
      !x->item || !x->align_log2 || number_ranks(x, p, first, &rs))
    goto out;
  for (size_t r = 0; r < m; r++) {
    end[r] = (uint64_t)p->t[x->row_of[r]].last + 1;
    end_rank[r] = (uint32_t)r;
  }
  if (planner__radix_sort(end, end_rank, m, &rs))
    goto out;
  x->n_spans = make_spans(x, first, end, end_rank);
  rc = make_start_at(x) || make_tree(x) || make_masks(x) ? -1 : 0;
out:
  planner__radix_cleanup(&rs);
  free(first);
  free(end);
  free(end_rank);
  return rc;
}

int tindex_init(struct tindex *x, const struct planner__prob *p)
{
  memset(x, 0, sizeof *x);
  if (build(x, p)) {
    tindex_cleanup(x);
    return ARENA_ENOMEM;
  }
  return 0;
}

static int reserve(struct tindex_spans *out, size_t more)
{
  if (out->n + more <= out->cap)
    return 0;
  size_t cap = out->cap ? out->cap : 256;
  while (cap < out->n + more)
    cap *= 2;
  struct tindex_span *v = realloc(out->v, cap * sizeof *v);
  if (!v)
    return -1;
  out->v = v;
  out->cap = cap;
  return 0;
}

/* Appends the placed ones among ranks ids[0..k) (or, with ids NULL, the
 * ranks lo .. lo + k). Branch-free: every span is written, and counted
 * only when placed. */
static void take(struct tindex_spans *out, const struct tindex_span *pos,
                 const uint32_t *ids, size_t lo, size_t k)
{
  struct tindex_span *o = out->v;
  size_t n = out->n;
  for (size_t q = 0; q < k; q++) {
    const struct tindex_span *s = &pos[ids ? ids[q] : lo + q];
    o[n] = *s;
    n += s->end != 0;
  }
  out->n = n;
}

/* ---- unions of placed bytes per block ----------------------------------- */

void tindex_blocks_cleanup(struct tindex_blocks *b)
{
  free(b->piece);
  free(b->n);
  b->piece = NULL;
  b->n = NULL;
}

/* Merges [off, end) into the sorted disjoint pieces v[0..*n), which have
 * room for one more. */
static void union_add(struct tindex_span *v, uint32_t *n, uint64_t off,
                      uint64_t end)
{
  uint32_t i = 0, j;
  while (i < *n && v[i].end < off) /* pieces wholly below, not touching */
    i++;
  for (j = i; j < *n && v[j].off <= end; j++) { /* pieces it meets */
    if (v[j].off < off)
      off = v[j].off;
    if (v[j].end > end)
      end = v[j].end;
  }
  if (j == i) { /* meets none: insert at i */
    memmove(v + i + 1, v + i, (*n - i) * sizeof *v);
    (*n)++;
  } else if (j > i + 1) { /* merges v[i..j): one piece remains */
    memmove(v + i + 1, v + j, (*n - j) * sizeof *v);
    *n -= j - i - 1;
  }
  v[i].off = off;
  v[i].end = end;
}

void tindex_blocks_add(struct tindex_blocks *b, uint32_t r, uint64_t off,
                       uint64_t end)
{
  if (!b->piece)
    return;
  size_t k = r / TINDEX_BLOCK;
  union_add(b->piece + k * TINDEX_BLOCK, &b->n[k], off, end);
}

static int blocks_build(const struct tindex *x, const struct tindex_span *pos,
                        struct tindex_blocks *b)
{
  size_t nb = (x->m + TINDEX_BLOCK - 1) / TINDEX_BLOCK;
  b->piece = malloc((x->m ? x->m : 1) * sizeof *b->piece);
  b->n = calloc(nb ? nb : 1, sizeof *b->n);
  if (!b->piece || !b->n) {
    tindex_blocks_cleanup(b);
    return -1;
  }
  for (size_t r = 0; r < x->m; r++)
    if (pos[r].end)
      tindex_blocks_add(b, (uint32_t)r, pos[r].off, pos[r].end);
  return 0;
}

/* ---- the overlap query --------------------------------------------------- */

/* Appends the placed ones among ranks [lo, hi). */
static int take_range(struct tindex_spans *out, const struct tindex_span *pos,
                      size_t lo, size_t hi)
{
  if (hi <= lo)
    return 0;
  if (reserve(out, hi - lo))
    return -1;
  take(out, pos, NULL, lo, hi - lo);
  return 0;
}

/* The ranks [lo, hi) of a long query: whole blocks by their pieces, the
 * partial blocks at both ends rank by rank. */
static int take_blocks(const struct tindex *x, const struct tindex_span *pos,
                       struct tindex_blocks *b, size_t lo, size_t hi,
                       struct tindex_spans *out)
{
  if (!b->piece && blocks_build(x, pos, b))
    return -1;
  size_t k0 = (lo + TINDEX_BLOCK - 1) / TINDEX_BLOCK, k1 = hi / TINDEX_BLOCK;
  if (take_range(out, pos, lo, k0 * TINDEX_BLOCK) ||
      take_range(out, pos, k1 * TINDEX_BLOCK, hi))
    return -1;
  for (size_t k = k0; k < k1; k++) {
    if (reserve(out, b->n[k]))
      return -1;
    memcpy(out->v + out->n, b->piece + k * TINDEX_BLOCK,
           b->n[k] * sizeof *out->v);
    out->n += b->n[k];
  }
  return 0;
}

int tindex_collect(const struct tindex *x, const struct tindex_span *pos,
                   struct tindex_blocks *b, uint32_t r,
                   struct tindex_spans *out)
{
  const struct tindex_item *it = &x->item[r];
  out->n = 0;
  for (uint32_t bits = x->path_mask[it->s0]; bits; bits &= bits - 1) {
    size_t v = tindex_path_node(x, it->s0, (unsigned)__builtin_ctz(bits));
    uint32_t lo = x->node_beg[v], hi = x->node_beg[v + 1];
    if (reserve(out, hi - lo))
      return -1;
    take(out, pos, x->ent + lo, 0, hi - lo);
  }
  size_t lo = x->start_at[it->s0 + 1], hi = x->start_at[it->s1];
  if (hi - lo >= TINDEX_LONG)
    return take_blocks(x, pos, b, lo, hi, out);
  return take_range(out, pos, lo, hi);
}

/* ---- prefetching -------------------------------------------------------- */

void tindex_prefetch(const struct tindex *x, const struct tindex_span *pos,
                     uint32_t r, unsigned stage)
{
  const struct tindex_item *it = &x->item[r];
  if (stage == 0) {
    __builtin_prefetch(it);
    return;
  }
  if (stage == 1) {
    __builtin_prefetch(&x->path_mask[it->s0]);
    __builtin_prefetch(&x->start_at[it->s0 + 1]);
    return;
  }
  uint32_t bits = x->path_mask[it->s0];
  if (stage == 2)
    __builtin_prefetch(&pos[x->start_at[it->s0 + 1]]);
  for (; bits; bits &= bits - 1) {
    size_t v = tindex_path_node(x, it->s0, (unsigned)__builtin_ctz(bits));
    if (stage == 2) {
      __builtin_prefetch(&x->node_beg[v]);
      continue;
    }
    uint32_t b = x->node_beg[v], e = x->node_beg[v + 1];
    if (stage == 3)
      __builtin_prefetch(&x->ent[b]);
    else
      for (uint32_t k = b; k < e && k < b + TINDEX_PREFETCH_LIST; k++)
        __builtin_prefetch(&pos[x->ent[k]]);
  }
}

/* ---- the load bound ----------------------------------------------------- */

/* Largest slack (padding to g_al) among the tensors of each node's list,
 * then, top-down, among those of the node and all its ancestors: for a
 * leaf, among every tensor live in its span. */
static void path_slack(const struct tindex *x, uint64_t g_al, uint32_t *down)
{
  size_t nodes = 2 * x->n_spans;
  down[0] = 0;
  for (size_t v = 1; v < nodes; v++) {
    uint32_t m = down[v >> 1];
    for (uint32_t e = x->node_beg[v]; e < x->node_beg[v + 1]; e++) {
      uint64_t size = x->item[x->ent[e]].size;
      uint32_t slack = (uint32_t)(planner__align_up(size, g_al) - size);
      if (slack > m)
        m = slack;
    }
    down[v] = m;
  }
}

int tindex_load_bound(const struct tindex *x, uint64_t g_al, uint64_t *lb)
{
  size_t S = x->n_spans;
  uint64_t *live = malloc((S + 1) * sizeof *live);
  uint32_t *down = g_al > 1 ? malloc((2 * S + 1) * sizeof *down) : NULL;
  *lb = 0;
  if (!live || (g_al > 1 && !down)) {
    free(live);
    free(down);
    return ARENA_ENOMEM;
  }
  memset(live, 0, (S + 1) * sizeof *live);
  for (size_t r = 0; r < x->m; r++) {
    uint64_t rounded = planner__align_up(x->item[r].size, g_al);
    live[x->item[r].s0] += rounded;
    live[x->item[r].s1] -= rounded;
  }
  if (down)
    path_slack(x, g_al, down);
  uint64_t sum = 0;
  for (size_t s = 0; s < S; s++) {
    sum += live[s];
    uint64_t here = sum - (down ? down[S + s] : 0);
    if (here > *lb)
      *lb = here;
  }
  free(live);
  free(down);
  return 0;
}

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
  free(x->node_beg);
  free(x->ent);
  free(x->uoff);
  free(x->leaf);
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

/* leaf[s].mask: bit j when node (s + S) >> j has a list. pm[v] holds
 * the same for the internal node v, built top-down (a parent has a
 * smaller index than its children). leaf[s].after: the first rank that
 * starts after span s. */
static int make_leaves(struct tindex *x)
{
  size_t S = x->n_spans;
  uint32_t *pm = malloc((S ? S : 1) * sizeof *pm);
  x->leaf = malloc((S ? S : 1) * sizeof *x->leaf);
  if (!pm || !x->leaf) {
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
      x->leaf[v - S].mask = m;
  }
  free(pm);
  size_t r = 0;
  for (size_t s = 0; s < S; s++) {
    while (r < x->m && x->item[r].s0 <= s)
      r++;
    x->leaf[s].after = (uint32_t)r;
  }
  return 0;
}

/* Slots for the unions of the nodes with long lists (see Unions). */
static int make_union_slots(struct tindex *x)
{
  size_t nodes = 2 * x->n_spans, total = 0;
  for (size_t v = 1; v < nodes; v++)
    if (x->node_beg[v + 1] - x->node_beg[v] >= TINDEX_UNION)
      total += x->node_beg[v + 1] - x->node_beg[v] + 1;
  if (total == 0)
    return 0;
  x->uoff = malloc((nodes + 1) * sizeof *x->uoff);
  if (!x->uoff)
    return -1;
  uint32_t at = 0;
  x->uoff[0] = 0;
  for (size_t v = 0; v < nodes; v++) {
    uint32_t len = v ? x->node_beg[v + 1] - x->node_beg[v] : 0;
    x->uoff[v] = at;
    if (len >= TINDEX_UNION)
      at += len + 1;
  }
  x->uoff[nodes] = at;
  x->n_uslots = at;
  return 0;
}

/* Ranks and spans: two sorts and a merge; their scratch is freed before
 * the tree is built, so that it never adds to the tree's memory. */
static int number_and_span(struct tindex *x, const struct planner__prob *p)
{
  size_t mm = x->m ? x->m : 1;
  struct planner__radix rs = {0};
  uint64_t *first = malloc(mm * sizeof *first);
  uint64_t *end = malloc(mm * sizeof *end);
  uint32_t *end_rank = malloc(mm * sizeof *end_rank);
  int rc = -1;
  if (!first || !end || !end_rank || number_ranks(x, p, first, &rs))
    goto out;
  for (size_t r = 0; r < x->m; r++) {
    end[r] = (uint64_t)p->t[x->row_of[r]].last + 1;
    end_rank[r] = (uint32_t)r;
  }
  if (planner__radix_sort(end, end_rank, x->m, &rs))
    goto out;
  x->n_spans = make_spans(x, first, end, end_rank);
  rc = 0;
out:
  planner__radix_cleanup(&rs);
  free(first);
  free(end);
  free(end_rank);
  return rc;
}

static int build(struct tindex *x, const struct planner__prob *p)
{
  size_t m = 0;
  for (size_t i = 0; i < p->n; i++)
    m += p->t[i].size != 0;
  x->n = p->n;
  x->m = m;
  size_t mm = m ? m : 1;
  x->rank_of = malloc((p->n ? p->n : 1) * sizeof *x->rank_of);
  x->row_of = malloc(mm * sizeof *x->row_of);
  x->item = malloc(mm * sizeof *x->item);
  x->align_log2 = malloc(mm);
  if (!x->rank_of || !x->row_of || !x->item || !x->align_log2 ||
      number_and_span(x, p))
    return -1;
  return make_tree(x) || make_leaves(x) || make_union_slots(x) ? -1 : 0;
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

/* ---- unions of placed bytes --------------------------------------------- */

void tindex_unions_cleanup(struct tindex_unions *u)
{
  free(u->block);
  free(u->n_block);
  free(u->node);
  memset(u, 0, sizeof *u);
}

/* Merges [off, end) into the sorted disjoint pieces v[0..*n), which have
 * room for one more. */
static void union_add(struct tindex_span *v, uint64_t *n, uint64_t off,
                      uint64_t end)
{
  size_t i = 0, j, k = (size_t)*n;
  while (i < k && v[i].end < off) /* pieces wholly below, not touching */
    i++;
  for (j = i; j < k && v[j].off <= end; j++) { /* pieces it meets */
    if (v[j].off < off)
      off = v[j].off;
    if (v[j].end > end)
      end = v[j].end;
  }
  if (j == i) { /* meets none: insert at i */
    memmove(v + i + 1, v + i, (k - i) * sizeof *v);
    (*n)++;
  } else if (j > i + 1) { /* merges v[i..j): one piece remains */
    memmove(v + i + 1, v + j, (k - j) * sizeof *v);
    *n -= j - i - 1;
  }
  v[i].off = off;
  v[i].end = end;
}

/* Merges [off, end) into block k's union; a union that would need more
 * than TINDEX_BLOCK_PIECES pieces is given up (the block is then read
 * rank by rank). */
static void block_add(struct tindex_unions *u, size_t k, uint64_t off,
                      uint64_t end)
{
  struct tindex_span *v = u->block + k * TINDEX_BLOCK_PIECES;
  uint64_t *n = &u->n_block[k];
  if (*n == TINDEX_BLOCK_GAVE_UP)
    return;
  if (*n < TINDEX_BLOCK_PIECES) {
    union_add(v, n, off, end);
    return;
  }
  struct tindex_span one[TINDEX_BLOCK_PIECES + 1]; /* a full union: merge */
  memcpy(one, v, sizeof *v * TINDEX_BLOCK_PIECES); /* into a copy first */
  union_add(one, n, off, end);
  if (*n > TINDEX_BLOCK_PIECES)
    *n = TINDEX_BLOCK_GAVE_UP;
  else
    memcpy(v, one, sizeof *v * (size_t)*n);
}

static int has_union(const struct tindex *x, size_t v)
{
  return x->uoff && x->uoff[v + 1] != x->uoff[v];
}

static void node_add(const struct tindex *x, struct tindex_unions *u,
                     size_t v, uint64_t off, uint64_t end)
{
  if (has_union(x, v))
    union_add(u->node + x->uoff[v] + 1, &u->node[x->uoff[v]].off, off, end);
}

void tindex_unions_add(const struct tindex *x, struct tindex_unions *u,
                       uint32_t r, uint64_t off, uint64_t end)
{
  if (u->block)
    block_add(u, r / TINDEX_BLOCK, off, end);
  if (!u->node)
    return;
  size_t lo = x->item[r].s0 + x->n_spans, hi = x->item[r].s1 + x->n_spans;
  for (; lo < hi; lo >>= 1, hi >>= 1) { /* r's cover, as in count_cover */
    if (lo & 1)
      node_add(x, u, lo++, off, end);
    if (hi & 1)
      node_add(x, u, --hi, off, end);
  }
}

static int blocks_build(const struct tindex *x, const struct tindex_span *pos,
                        struct tindex_unions *u)
{
  size_t nb = (x->m + TINDEX_BLOCK - 1) / TINDEX_BLOCK;
  u->block = malloc((nb ? nb : 1) * TINDEX_BLOCK_PIECES * sizeof *u->block);
  u->n_block = calloc(nb ? nb : 1, sizeof *u->n_block);
  if (!u->block || !u->n_block) { /* stays unbuilt */
    free(u->block);
    free(u->n_block);
    u->block = NULL;
    u->n_block = NULL;
    return -1;
  }
  for (size_t r = 0; r < x->m; r++)
    if (pos[r].end)
      block_add(u, r / TINDEX_BLOCK, pos[r].off, pos[r].end);
  return 0;
}

static int nodes_build(const struct tindex *x, const struct tindex_span *pos,
                       struct tindex_unions *u)
{
  u->node = malloc(x->n_uslots * sizeof *u->node);
  if (!u->node)
    return -1;
  for (size_t v = 1; v < 2 * x->n_spans; v++) {
    if (!has_union(x, v))
      continue;
    u->node[x->uoff[v]].off = 0;
    for (uint32_t e = x->node_beg[v]; e < x->node_beg[v + 1]; e++)
      if (pos[x->ent[e]].end)
        node_add(x, u, v, pos[x->ent[e]].off, pos[x->ent[e]].end);
  }
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

/* Appends n pieces. */
static int take_pieces(struct tindex_spans *out, const struct tindex_span *v,
                       size_t n)
{
  if (n == 0) /* out->v may still be NULL */
    return 0;
  if (reserve(out, n))
    return -1;
  memcpy(out->v + out->n, v, n * sizeof *v);
  out->n += n;
  return 0;
}

/* The ranks [lo, hi) of a long query: whole blocks by their unions (or
 * rank by rank where a block gave its union up), the partial blocks at
 * both ends rank by rank. */
static int take_blocks(const struct tindex *x, const struct tindex_span *pos,
                       struct tindex_unions *u, size_t lo, size_t hi,
                       struct tindex_spans *out)
{
  if (!u->block && blocks_build(x, pos, u))
    return -1;
  size_t k0 = (lo + TINDEX_BLOCK - 1) / TINDEX_BLOCK, k1 = hi / TINDEX_BLOCK;
  if (take_range(out, pos, lo, k0 * TINDEX_BLOCK) ||
      take_range(out, pos, k1 * TINDEX_BLOCK, hi))
    return -1;
  for (size_t k = k0; k < k1; k++)
    if (u->n_block[k] == TINDEX_BLOCK_GAVE_UP
            ? take_range(out, pos, k * TINDEX_BLOCK, (k + 1) * TINDEX_BLOCK)
            : take_pieces(out, u->block + k * TINDEX_BLOCK_PIECES,
                          (size_t)u->n_block[k]))
      return -1;
  return 0;
}

/* Node v of a query's path: its union, or its placed tensors. */
static int take_node(const struct tindex *x, const struct tindex_span *pos,
                     struct tindex_unions *u, size_t v,
                     struct tindex_spans *out)
{
  if (has_union(x, v)) {
    if (!u->node && nodes_build(x, pos, u))
      return -1;
    const struct tindex_span *h = u->node + x->uoff[v];
    return take_pieces(out, h + 1, (size_t)h->off);
  }
  uint32_t lo = x->node_beg[v], hi = x->node_beg[v + 1];
  if (reserve(out, hi - lo))
    return -1;
  take(out, pos, x->ent + lo, 0, hi - lo);
  return 0;
}

int tindex_collect(const struct tindex *x, const struct tindex_span *pos,
                   struct tindex_unions *u, uint32_t r,
                   struct tindex_spans *out)
{
  const struct tindex_item *it = &x->item[r];
  out->n = 0;
  for (uint32_t bits = x->leaf[it->s0].mask; bits; bits &= bits - 1)
    if (take_node(x, pos, u,
                  tindex_path_node(x, it->s0, (unsigned)__builtin_ctz(bits)),
                  out))
      return -1;
  size_t lo = x->leaf[it->s0].after, hi = x->leaf[it->s1 - 1].after;
  if (hi - lo >= TINDEX_LONG)
    return take_blocks(x, pos, u, lo, hi, out);
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
    __builtin_prefetch(&x->leaf[it->s0]);
    __builtin_prefetch(&x->leaf[it->s1 - 1]);
    return;
  }
  uint32_t bits = x->leaf[it->s0].mask;
  if (stage == 2)
    __builtin_prefetch(&pos[x->leaf[it->s0].after]);
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

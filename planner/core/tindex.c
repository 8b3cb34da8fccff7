/*
 * tindex.c - the time index of a problem (see tindex.h): ranks, spans,
 * a static segment tree of lifetimes, and the overlap query.
 *
 * Building costs two radix sorts (by first and by last + 1) and one merge
 * of the two sorted lists into spans (or, on a timeline of at most twice
 * as many operators as tensors, the sort by first and a table over the
 * operator numbers), and two walks over each tensor's canonical cover
 * (count, then fill). No allocation depends on the shape
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
  free(x->near_s1);
  free(x->uoff);
  free(x->leaf);
  memset(x, 0, sizeof *x);
}

/* log2 of a power of two. */
static unsigned log2_of(uint64_t a)
{
  return (unsigned)__builtin_ctzll(a);
}

/* Numbers the non-empty tensors by (first, row) into row_of and rank_of.
 * key (m entries) is scratch and returns the sorted firsts. */
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
  for (size_t r = 0; r < x->m; r++)
    x->rank_of[x->row_of[r]] = (uint32_t)r;
  return 0;
}

/* item[].size, align_log2 and one_align of every rank. */
static void fill_items(struct tindex *x, const struct planner__prob *p)
{
  unsigned any = 0, all = TINDEX_MIXED;
  for (size_t r = 0; r < x->m; r++) {
    uint32_t i = x->row_of[r];
    unsigned a = log2_of(p->align[i]);
    x->item[r].size = p->t[i].size;
    x->align_log2[r] = (uint8_t)a;
    any |= a;
    all &= a;
  }
  x->one_align = x->m && any == all ? any : TINDEX_MIXED;
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

/* make_spans() without sorting the ends, for timelines no longer than
 * the room of the sorted ends (2 m entries of 4 bytes, in end's place):
 * a table over operator numbers marks every first and last + 1, a
 * prefix count turns the marks into boundary numbers, and each rank
 * reads its two. Returns 0 when the timeline is too long (nothing
 * usable done), else 1 with s0, s1 and n_spans set as make_spans()
 * sets them. */
static int direct_spans(struct tindex *x, const struct planner__prob *p,
                        const uint64_t *first, uint32_t *table, size_t room)
{
  size_t m = x->m;
  uint64_t top = 0;
  for (size_t r = 0; r < m; r++) { /* the ends, in s1 until numbered */
    uint64_t e = (uint64_t)p->t[x->row_of[r]].last + 1;
    top = e > top ? e : top;
    x->item[r].s1 = (uint32_t)e;
  }
  if (m == 0 || top >= room)
    return 0;
  memset(table, 0, (top + 1) * sizeof *table);
  for (size_t r = 0; r < m; r++) {
    table[first[r]] = 1;
    table[x->item[r].s1] = 1;
  }
  uint32_t u = 0;
  for (size_t v = 0; v <= top; v++) {
    uint32_t c = table[v];
    table[v] = u;
    u += c;
  }
  for (size_t r = 0; r < m; r++) {
    x->item[r].s0 = table[first[r]];
    x->item[r].s1 = table[x->item[r].s1];
  }
  x->n_spans = u - 1;
  return 1;
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
    if (!x->near_s1[r])
      count_cover(x, r);
  for (size_t v = 1; v <= nodes; v++)
    x->node_beg[v] += x->node_beg[v - 1];
  x->ent = malloc((x->node_beg[nodes] ? x->node_beg[nodes] : 1) *
                  sizeof *x->ent);
  if (!x->ent)
    return -1;
  planner__advise_huge(x->ent, x->node_beg[nodes] * sizeof *x->ent);
  for (size_t r = x->m; r-- > 0;)
    if (!x->near_s1[r])
      fill_cover(x, r);
  return 0;
}

/* leaf[s].after: the first rank that starts after span s. */
static int make_after(struct tindex *x)
{
  size_t S = x->n_spans;
  x->leaf = malloc((S ? S : 1) * sizeof *x->leaf);
  if (!x->leaf)
    return -1;
  size_t r = 0;
  for (size_t s = 0; s < S; s++) {
    while (r < x->m && x->item[r].s0 <= s)
      r++;
    x->leaf[s].after = (uint32_t)r;
  }
  return 0;
}

/* Which tensors are near (see near_s1): those of at most TINDEX_NEAR
 * spans whose every span has at most TINDEX_NEAR_RANKS ranks between
 * near_lo() and the ranks that start after it; then leaf[].near. */
static int make_near(struct tindex *x)
{
  size_t S = x->n_spans;
  uint32_t *bad = malloc((S + 1) * sizeof *bad);
  x->near_s1 = malloc((x->m ? x->m : 1) * sizeof *x->near_s1);
  if (!bad || !x->near_s1) {
    free(bad);
    return -1;
  }
  /* bad[s]: the spans below s with too many ranks, so a lifetime
   * [s0, s1) has none iff bad[s1] == bad[s0] */
  bad[0] = 0;
  for (uint32_t s = 0; s < S; s++)
    bad[s + 1] = bad[s] + (x->leaf[s].after - tindex_near_lo(x, s) >
                           TINDEX_NEAR_RANKS);
  for (size_t r = 0; r < x->m; r++) {
    uint32_t s0 = x->item[r].s0, s1 = x->item[r].s1;
    x->near_s1[r] = s1 - s0 <= TINDEX_NEAR && bad[s1] == bad[s0] ? s1 : 0;
  }
  free(bad);
  for (uint32_t s = 0; s < S; s++)
    x->leaf[s].near = x->leaf[s].after;
  /* by rank, that is by s0: the spans below hi have their first near
   * tensor, so each span is written once */
  uint32_t hi = 0;
  for (size_t r = 0; r < x->m; r++)
    if (x->near_s1[r] > hi) {
      for (uint32_t s = x->item[r].s0 > hi ? x->item[r].s0 : hi;
           s < x->near_s1[r]; s++)
        x->leaf[s].near = (uint32_t)r;
      hi = x->near_s1[r];
    }
  return 0;
}

/* leaf[s].mask: bit j when node (s + S) >> j has a list. pm[v] holds
 * the same for the internal node v, built top-down (a parent has a
 * smaller index than its children). */
static int make_masks(struct tindex *x)
{
  size_t S = x->n_spans;
  uint32_t *pm = malloc((S ? S : 1) * sizeof *pm);
  if (!pm)
    return -1;
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

/* The groups: the lowest height at which at most TINDEX_GROUPS nodes
 * cover the timeline, none for a timeline too short to have groups of
 * TINDEX_GROUP_SPANS spans. */
static void make_groups(struct tindex *x)
{
  size_t S = x->n_spans;
  x->gshift = 32;
  x->n_groups = 0;
  if (S < 2 * TINDEX_GROUPS * TINDEX_GROUP_SPANS)
    return;
  unsigned j = 0;
  while (((2 * S - 1) >> j) - (S >> j) + 1 > TINDEX_GROUPS)
    j++;
  x->gshift = j;
  x->g_lo = S >> j;
  x->g_hi = (2 * S - 1) >> j;
  x->n_groups = x->g_hi - x->g_lo + 1;
}

/* The scratch of the index's build: sorted firsts, sorted ends and the
 * ranks of the ends. */
struct build_tmp {
  uint64_t *first, *end;
  uint32_t *end_rank;
};

/* Ranks and spans: two sorts and a merge. The sorts run in the room of
 * item[], which is filled only after them: memory a run touches anyway
 * instead of fresh pages of its own. */
static int number_and_span(struct tindex *x, const struct planner__prob *p,
                           const struct build_tmp *b)
{
  struct planner__radix rs = planner__radix_borrow(
      x->item, (x->m ? x->m : 1) * sizeof *x->item);
  int rc = -1;
  if (number_ranks(x, p, b->first, &rs))
    goto out;
  if (direct_spans(x, p, b->first, (uint32_t *)(void *)b->end,
                   2 * (x->m ? x->m : 1))) {
    fill_items(x, p);
    rc = 0;
    goto out;
  }
  for (size_t r = 0; r < x->m; r++) {
    b->end[r] = (uint64_t)p->t[x->row_of[r]].last + 1;
    b->end_rank[r] = (uint32_t)r;
  }
  if (planner__radix_sort(b->end, b->end_rank, x->m, &rs))
    goto out;
  fill_items(x, p);
  x->n_spans = make_spans(x, b->first, b->end, b->end_rank);
  rc = 0;
out:
  planner__radix_cleanup(&rs);
  return rc;
}

/* The scratch is freed only once the index is built: below the index's
 * own arrays, its room is reused by what a run allocates next (the load
 * bound, a heuristic's state) instead of going back to the system and
 * being faulted in again, and the index's build never holds more than a
 * heuristic's run does after it. */
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
  struct build_tmp b = {malloc(mm * sizeof *b.first),
                        malloc(mm * sizeof *b.end),
                        malloc(mm * sizeof *b.end_rank)};
  planner__advise_huge(x->rank_of, (p->n ? p->n : 1) * sizeof *x->rank_of);
  planner__advise_huge(x->row_of, mm * sizeof *x->row_of);
  planner__advise_huge(x->item, mm * sizeof *x->item);
  int rc = -1;
  if (x->rank_of && x->row_of && x->item && x->align_log2 && b.first &&
      b.end && b.end_rank && !number_and_span(x, p, &b) && !make_after(x) &&
      !make_near(x) && !make_tree(x) && !make_masks(x) &&
      !make_union_slots(x)) {
    make_groups(x);
    rc = 0;
  }
  free(b.first);
  free(b.end);
  free(b.end_rank);
  return rc;
}

uint32_t *tindex_take_row_of(struct tindex *x)
{
  uint32_t *v = x->row_of;
  x->row_of = NULL;
  return v;
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

/* ---- prefetching -------------------------------------------------------- */

void tindex_prefetch(const struct tindex *x, const struct tindex_span *pos,
                     uint32_t r, unsigned stage)
{
  const struct tindex_item *it = &x->item[r];
  if (stage == 0) {
    __builtin_prefetch(it);
    if (x->one_align == TINDEX_MIXED)
      __builtin_prefetch(&x->align_log2[r]);
    return;
  }
  if (stage == 1) {
    __builtin_prefetch(&x->leaf[it->s0]);
    __builtin_prefetch(&x->leaf[it->s1 - 1]);
    return;
  }
  uint32_t bits = x->leaf[it->s0].mask;
  if (stage == 2) {
    size_t lo = x->leaf[it->s0].after;
    for (size_t q = x->leaf[it->s0].near; q < lo; q += 64 / sizeof *pos) {
      __builtin_prefetch(&pos[q]); /* the near tensors' lines */
      __builtin_prefetch(&x->near_s1[q]);
    }
    __builtin_prefetch(&pos[lo]);
  }
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
  if (down) {
    path_slack(x, g_al, down);
    for (size_t r = 0; r < x->m; r++) /* near tensors are in no list */
      for (uint32_t s = x->item[r].s0; s < x->near_s1[r]; s++) {
        uint64_t size = x->item[r].size;
        uint32_t slack = (uint32_t)(planner__align_up(size, g_al) - size);
        if (slack > down[S + s])
          down[S + s] = slack;
      }
  }
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

/*
 * tunion.c - a heuristic's unions of placed bytes (node, group, block and
 * block-tree unions) and the overlap query that reads them (see
 * tunion.h).
 */
#include "tunion.h"

#include <stdlib.h>
#include <string.h>

void tunion_cleanup(struct tunion *u)
{
  free(u->block);
  free(u->n_block);
  free(u->node);
  free(u->group);
  free(u->tree);
  free(u->pool.v);
  free(u->pend);
  memset(u, 0, sizeof *u);
}

/* ---- sorted unions ------------------------------------------------------ */

/* Merges [off, end) into the sorted disjoint pieces v[0..*n), which have
 * room for one more. */
static void union_add(struct tindex_span *v, uint64_t *n, uint64_t off,
                      uint64_t end)
{
  size_t i = 0, j = 0, k = (size_t)*n, h = k;
  if (k <= TUNION_BLOCK_PIECES) { /* short: count, without a branch */
    for (size_t q = 0; q < k; q++) {
      i += v[q].end < off; /* wholly below, not touching */
      j += v[q].off <= end; /* below or meeting it */
    }
    if (j > i) { /* meets v[i..j): ends and offsets ascend */
      off = v[i].off < off ? v[i].off : off;
      end = v[j - 1].end > end ? v[j - 1].end : end;
    }
  } else {
    while (i < h) { /* the first piece not wholly below, not touching */
      size_t mid = i + (h - i) / 2;
      if (v[mid].end < off)
        i = mid + 1;
      else
        h = mid;
    }
    for (j = i; j < k && v[j].off <= end; j++) { /* pieces it meets */
      if (v[j].off < off)
        off = v[j].off;
      if (v[j].end > end)
        end = v[j].end;
    }
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

/* Writes the union of the sorted disjoint pieces a[0..na) and b[0..nb)
 * into out (room na + nb) and returns its count. */
static size_t merge_pieces(const struct tindex_span *a, size_t na,
                           const struct tindex_span *b, size_t nb,
                           struct tindex_span *out)
{
  size_t i = 0, j = 0, n = 0;
  while (i < na || j < nb) {
    struct tindex_span s =
        j == nb || (i < na && a[i].off <= b[j].off) ? a[i++] : b[j++];
    if (n && s.off <= out[n - 1].end) {
      if (s.end > out[n - 1].end)
        out[n - 1].end = s.end;
    } else {
      out[n++] = s;
    }
  }
  return n;
}

int tunion_grow(struct tindex_spans *v, size_t more)
{
  size_t cap = v->cap ? v->cap : 256;
  while (cap < v->n + more)
    cap *= 2;
  struct tindex_span *p = realloc(v->v, cap * sizeof *p);
  if (!p)
    return -1;
  v->v = p;
  v->cap = cap;
  return 0;
}

/* Merges [off, end) into the pooled union l, moving it to twice the room
 * at the end of the pool when it is full. Returns 0 or -1. */
static int list_add(struct tunion *u, struct tunion_list *l, uint64_t off,
                    uint64_t end)
{
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * (size_t)l->cap : 4;
    if (cap > UINT32_MAX || tunion_reserve(&u->pool, cap))
      return -1;
    memcpy(u->pool.v + u->pool.n, u->pool.v + l->at,
           l->n * sizeof *u->pool.v);
    l->at = u->pool.n;
    l->cap = (uint32_t)cap;
    u->pool.n += cap;
  }
  uint64_t n = l->n;
  union_add(u->pool.v + l->at, &n, off, end);
  l->n = (uint32_t)n;
  return 0;
}

/* ---- blocks and node unions --------------------------------------------- */

/* Merges [off, end) into block k's union; a union that would need more
 * than TUNION_BLOCK_PIECES pieces is given up (the block is then read
 * rank by rank). */
static void block_add(struct tunion *u, size_t k, uint64_t off, uint64_t end)
{
  struct tindex_span *v = u->block + k * TUNION_BLOCK_PIECES;
  uint64_t *n = &u->n_block[k];
  if (*n == TUNION_GAVE_UP)
    return;
  if (*n < TUNION_BLOCK_PIECES) {
    union_add(v, n, off, end);
    return;
  }
  struct tindex_span one[TUNION_BLOCK_PIECES + 1]; /* a full union: merge */
  memcpy(one, v, sizeof *v * TUNION_BLOCK_PIECES); /* into a copy first */
  union_add(one, n, off, end);
  if (*n > TUNION_BLOCK_PIECES)
    *n = TUNION_GAVE_UP;
  else
    memcpy(v, one, sizeof *v * (size_t)*n);
}

static int has_union(const struct tindex *x, size_t v)
{
  return x->uoff && x->uoff[v + 1] != x->uoff[v];
}

static void node_add(const struct tindex *x, struct tunion *u, size_t v,
                     uint64_t off, uint64_t end)
{
  if (has_union(x, v))
    union_add(u->node + x->uoff[v] + 1, &u->node[x->uoff[v]].off, off, end);
}

/* ---- group unions -------------------------------------------------------*/

/* Merges [off, end), listed in node v, into the unions of the groups v
 * is an ancestor of (or is): those among its descendants (v << j) ..
 * ((v + 1) << j) - 1 that are groups. */
static int group_add(const struct tindex *x, struct tunion *u, size_t v,
                     uint64_t off, uint64_t end)
{
  for (unsigned j = 0; (v << j) <= x->g_hi; j++) {
    size_t a = v << j, b = ((v + 1) << j) - 1;
    if (a < x->g_lo)
      a = x->g_lo;
    if (b > x->g_hi)
      b = x->g_hi;
    for (size_t g = a; g <= b; g++)
      if (list_add(u, &u->group[g - x->g_lo], off, end))
        return -1;
  }
  return 0;
}

enum { ADD_NODES = 1, ADD_GROUPS = 2 };

/* Merges [off, end) into the node (kinds & ADD_NODES) and group
 * (kinds & ADD_GROUPS) unions of the nodes of rank r's cover. */
static int cover_add(const struct tindex *x, struct tunion *u, uint32_t r,
                     uint64_t off, uint64_t end, int kinds)
{
  size_t lo = x->item[r].s0 + x->n_spans, hi = x->item[r].s1 + x->n_spans;
  if (x->near_s1[r])
    return 0; /* in no node list */
  for (; lo < hi; lo >>= 1, hi >>= 1) { /* as tindex's count_cover */
    size_t v[2], k = 0;
    if (lo & 1)
      v[k++] = lo++;
    if (hi & 1)
      v[k++] = --hi;
    for (size_t i = 0; i < k; i++) {
      if (kinds & ADD_NODES)
        node_add(x, u, v[i], off, end);
      if ((kinds & ADD_GROUPS) && v[i] <= x->g_hi &&
          group_add(x, u, v[i], off, end))
        return -1;
    }
  }
  return 0;
}

/* ---- the block tree -----------------------------------------------------*/

static size_t n_blocks(const struct tindex *x)
{
  return (x->m + TUNION_BLOCK - 1) / TUNION_BLOCK;
}

/* Block k's placed bytes as sorted disjoint pieces into buf (room
 * TUNION_BLOCK): its union, or, for a block that gave it up, the union of
 * its placed ranks. Returns the count. */
static size_t leaf_pieces(const struct tindex *x, const struct tindex_span *pos,
                          const struct tunion *u, size_t k,
                          struct tindex_span *buf)
{
  uint64_t n = u->n_block[k];
  if (n != TUNION_GAVE_UP) {
    memcpy(buf, u->block + k * TUNION_BLOCK_PIECES, (size_t)n * sizeof *buf);
    return (size_t)n;
  }
  size_t r1 = (k + 1) * TUNION_BLOCK < x->m ? (k + 1) * TUNION_BLOCK : x->m;
  n = 0;
  for (size_t r = k * TUNION_BLOCK; r < r1; r++)
    if (pos[r].end)
      union_add(buf, &n, pos[r].off, pos[r].end);
  return (size_t)n;
}

/* (Re)computes the union of every node of the tree over the blocks from
 * its two children, bottom-up: in a list's own slots when they have the
 * room, else in new ones at the end of the pool. */
static int tree_fill(const struct tindex *x, const struct tindex_span *pos,
                     struct tunion *u)
{
  size_t nb = n_blocks(x);
  struct tindex_span leaf[2][TUNION_BLOCK];
  for (size_t v = nb - 1; v >= 1; v--) {
    size_t n[2];
    for (int i = 0; i < 2; i++) {
      size_t c = 2 * v + (size_t)i;
      n[i] = c >= nb ? leaf_pieces(x, pos, u, c - nb, leaf[i]) : u->tree[c].n;
    }
    struct tunion_list *l = &u->tree[v];
    if (n[0] + n[1] == 0) {
      l->n = 0;
      continue;
    }
    if (tunion_reserve(&u->pool, n[0] + n[1]))
      return -1;
    const struct tindex_span *s[2];
    for (int i = 0; i < 2; i++) { /* after the pool may have moved */
      size_t c = 2 * v + (size_t)i;
      s[i] = c >= nb ? leaf[i] : u->pool.v + u->tree[c].at;
    }
    struct tindex_span *end = u->pool.v + u->pool.n; /* merged there */
    size_t k = merge_pieces(s[0], n[0], s[1], n[1], end);
    if (k <= l->cap) {
      memcpy(u->pool.v + l->at, end, k * sizeof *end);
    } else {
      l->at = u->pool.n;
      l->cap = (uint32_t)(n[0] + n[1]);
      u->pool.n += n[0] + n[1];
    }
    l->n = (uint32_t)k;
  }
  u->n_pend = 0;
  return 0;
}

/* Brings the tree up to date with the placements recorded since a query
 * last read it: each merged into the nodes above its block, or, when
 * there are as many as blocks, every node recomputed. */
static int tree_update(const struct tindex *x, const struct tindex_span *pos,
                       struct tunion *u)
{
  size_t nb = n_blocks(x);
  if (u->n_pend >= nb)
    return tree_fill(x, pos, u);
  for (size_t i = 0; i < u->n_pend; i++) {
    uint32_t r = u->pend[i];
    for (size_t v = (nb + r / TUNION_BLOCK) >> 1; v >= 1; v >>= 1)
      if (list_add(u, &u->tree[v], pos[r].off, pos[r].end))
        return -1;
  }
  u->n_pend = 0;
  return 0;
}

/* Notes that rank r was placed, for tree_update(); past as many as
 * blocks, only that there were that many. */
static int tree_note(const struct tindex *x, struct tunion *u, uint32_t r)
{
  if (u->n_pend >= n_blocks(x))
    return 0;
  if (u->n_pend == u->cap_pend) {
    size_t cap = u->cap_pend ? 2 * u->cap_pend : 256;
    uint32_t *v = realloc(u->pend, cap * sizeof *v);
    if (!v)
      return -1;
    u->pend = v;
    u->cap_pend = cap;
  }
  u->pend[u->n_pend++] = r;
  return 0;
}

/* Whether long ranges have read enough blocks one by one to make the
 * block tree worth keeping up. */
static int wants_tree(const struct tindex *x, const struct tunion *u)
{
  size_t nb = n_blocks(x);
  return nb >= 4 && u->block_reads > TUNION_TREE_RATIO * (u->added + nb);
}

/* ---- recording placements --------------------------------------------- */

int tunion_add(const struct tindex *x, struct tunion *u, uint32_t r,
               uint64_t off, uint64_t end)
{
  u->added++;
  if (u->block)
    block_add(u, r / TUNION_BLOCK, off, end);
  if (u->tree && tree_note(x, u, r))
    return -1;
  int kinds = (u->node ? ADD_NODES : 0) | (u->group ? ADD_GROUPS : 0);
  return kinds ? cover_add(x, u, r, off, end, kinds) : 0;
}

static int blocks_build(const struct tindex *x, const struct tindex_span *pos,
                        struct tunion *u)
{
  size_t nb = n_blocks(x);
  u->block = malloc((nb ? nb : 1) * TUNION_BLOCK_PIECES * sizeof *u->block);
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
      block_add(u, r / TUNION_BLOCK, pos[r].off, pos[r].end);
  return 0;
}

static int nodes_build(const struct tindex *x, const struct tindex_span *pos,
                       struct tunion *u)
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

static int groups_build(const struct tindex *x, const struct tindex_span *pos,
                        struct tunion *u)
{
  u->group = calloc(x->n_groups, sizeof *u->group);
  if (!u->group)
    return -1;
  for (uint32_t r = 0; r < x->m; r++)
    if (pos[r].end &&
        cover_add(x, u, r, pos[r].off, pos[r].end, ADD_GROUPS))
      return -1;
  return 0;
}

/* ---- the overlap query --------------------------------------------------- */


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

/* Appends the placed ones among ranks [lo, hi). */
static int take_range(struct tindex_spans *out, const struct tindex_span *pos,
                      size_t lo, size_t hi)
{
  if (hi <= lo)
    return 0;
  if (tunion_reserve(out, hi - lo))
    return -1;
  take(out, pos, NULL, lo, hi - lo);
  return 0;
}

/* Appends the placed ones among ranks [lo, hi) whose near_s1 is above
 * s: the near tensors that live in span s. Branch-free, as take_range. */
static int take_near(struct tindex_spans *out, const struct tindex_span *pos,
                     const uint32_t *near_s1, uint32_t s, size_t lo,
                     size_t hi)
{
  if (hi <= lo)
    return 0;
  if (tunion_reserve(out, hi - lo))
    return -1;
  struct tindex_span *o = out->v;
  size_t n = out->n;
  for (size_t q = lo; q < hi; q++) {
    o[n] = pos[q];
    n += (pos[q].end != 0) & (near_s1[q] > s);
  }
  out->n = n;
  return 0;
}

/* Where a query's ranges go: loose ones and sorted runs. */
struct sink {
  struct tindex_spans *out;
  struct tunion_runs *runs;
};

/* Takes the n sorted pieces (*base)[at ..]: as a run when there are
 * min_run or more, else copied among the loose ranges. */
static int take_pieces(struct sink *k, struct tindex_span *const *base,
                       size_t at, size_t n, size_t min_run)
{
  if (n == 0) /* the storage may still be NULL */
    return 0;
  if (n < min_run) {
    if (tunion_reserve(k->out, n))
      return -1;
    memcpy(k->out->v + k->out->n, *base + at, n * sizeof **base);
    k->out->n += n;
    return 0;
  }
  struct tunion_runs *rs = k->runs;
  if (rs->n == rs->cap) {
    size_t cap = rs->cap ? 2 * rs->cap : 16;
    struct tunion_run *v = realloc(rs->v, cap * sizeof *v);
    if (!v)
      return -1;
    rs->v = v;
    rs->cap = cap;
  }
  rs->v[rs->n++] = (struct tunion_run){base, at, n};
  return 0;
}

/* Block k: its union, or its ranks where it gave the union up. */
static int take_leaf(const struct tindex_span *pos, const struct tunion *u,
                     size_t k, struct sink *out)
{
  return u->n_block[k] == TUNION_GAVE_UP
             ? take_range(out->out, pos, k * TUNION_BLOCK,
                          (k + 1) * TUNION_BLOCK)
             : take_pieces(out, &u->block, k * TUNION_BLOCK_PIECES,
                           (size_t)u->n_block[k], TUNION_RUN);
}

/* The whole blocks [k0, k1): by the tree's unions once it is kept, else
 * block by block (which counts towards keeping it). */
static int take_whole_blocks(const struct tindex *x,
                             const struct tindex_span *pos, struct tunion *u,
                             size_t k0, size_t k1, struct sink *out)
{
  int few = k1 - k0 < TUNION_TREE_MIN; /* the tree would save little */
  if (!few && !u->tree && wants_tree(x, u)) {
    u->tree = calloc(n_blocks(x), sizeof *u->tree);
    if (!u->tree || tree_fill(x, pos, u))
      return -1;
  } else if (!few && u->tree && u->n_pend && tree_update(x, pos, u)) {
    return -1;
  }
  if (few || !u->tree) {
    u->block_reads += few ? 0 : k1 - k0;
    for (size_t k = k0; k < k1; k++)
      if (take_leaf(pos, u, k, out))
        return -1;
    return 0;
  }
  size_t nb = n_blocks(x), lo = k0 + nb, hi = k1 + nb;
  for (; lo < hi; lo >>= 1, hi >>= 1) { /* canonical nodes, bottom-up */
    size_t v[2], k = 0;
    if (lo & 1)
      v[k++] = lo++;
    if (hi & 1)
      v[k++] = --hi;
    for (size_t i = 0; i < k; i++)
      if (v[i] >= nb ? take_leaf(pos, u, v[i] - nb, out)
                     : take_pieces(out, &u->pool.v, u->tree[v[i]].at,
                                   u->tree[v[i]].n, TUNION_RUN))
        return -1;
  }
  return 0;
}

/* The ranks [lo, hi) of a long query: whole blocks by their unions, the
 * partial blocks at both ends rank by rank. */
static int take_blocks(const struct tindex *x, const struct tindex_span *pos,
                       struct tunion *u, size_t lo, size_t hi,
                       struct sink *out)
{
  if (!u->block && blocks_build(x, pos, u))
    return -1;
  size_t k0 = (lo + TUNION_BLOCK - 1) / TUNION_BLOCK, k1 = hi / TUNION_BLOCK;
  if (take_range(out->out, pos, lo, k0 * TUNION_BLOCK) ||
      take_range(out->out, pos, k1 * TUNION_BLOCK, hi))
    return -1;
  return take_whole_blocks(x, pos, u, k0, k1, out);
}

/* Node v of a query's path: its union, or its placed tensors. */
static int take_node(const struct tindex *x, const struct tindex_span *pos,
                     struct tunion *u, size_t v, struct sink *out)
{
  if (has_union(x, v)) {
    if (!u->node && nodes_build(x, pos, u))
      return -1;
    return take_pieces(out, &u->node, x->uoff[v] + 1,
                       (size_t)u->node[x->uoff[v]].off, TUNION_RUN);
  }
  uint32_t lo = x->node_beg[v], hi = x->node_beg[v + 1];
  if (tunion_reserve(out->out, hi - lo))
    return -1;
  take(out->out, pos, x->ent + lo, 0, hi - lo);
  return 0;
}

/* Group g's union: every tensor listed in g or above it, always as a
 * run (read in place, and scanned along or merged, never sorted: most
 * loose ranges would land among its pieces, which an insertion sort
 * would shift each time). */
static int take_group(const struct tindex *x, const struct tindex_span *pos,
                      struct tunion *u, size_t g, struct sink *out)
{
  if (!u->group && groups_build(x, pos, u))
    return -1;
  const struct tunion_list *l = &u->group[g - x->g_lo];
  return take_pieces(out, &u->pool.v, l->at, l->n, 1);
}

int tunion_collect(const struct tindex *x, const struct tindex_span *pos,
                   struct tunion *u, uint32_t r, struct tindex_spans *out,
                   struct tunion_runs *runs)
{
  const struct tindex_item *it = &x->item[r];
  uint32_t mask = x->leaf[it->s0].mask, below = mask;
  struct sink k = {out, runs};
  if (x->gshift < 32)
    below &= ((uint32_t)1 << x->gshift) - 1;
  out->n = 0;
  runs->n = 0;
  if (below != mask && take_group(x, pos, u,
                                  tindex_path_node(x, it->s0, x->gshift), &k))
    return -1;
  for (uint32_t bits = below; bits; bits &= bits - 1)
    if (take_node(x, pos, u,
                  tindex_path_node(x, it->s0, (unsigned)__builtin_ctz(bits)),
                  &k))
      return -1;
  size_t lo = x->leaf[it->s0].after, hi = x->leaf[it->s1 - 1].after;
  if (take_near(out, pos, x->near_s1, it->s0, x->leaf[it->s0].near, lo))
    return -1;
  if (hi - lo >= TUNION_LONG)
    return take_blocks(x, pos, u, lo, hi, &k);
  return take_range(out, pos, lo, hi);
}

/*
 * exact_stream.c - the exact planner's search for large components, in
 * memory linear in the component: no table of overlap pairs and no list
 * of the tensors live in each section.
 *
 * It walks the same canonical placements as exact_search.c (see the
 * DESIGN comment of exact.c): tensors go, in increasing (offset, rank)
 * order, to pos, the lowest aligned offset above the placed tensors they
 * meet in time that misses the pinned obstacles; dominance (a candidate
 * must start below min pos + size over the unplaced tensors), the fit of
 * every neighbour, section capacity and twins prune as there. It keeps
 * no dead-end table, does not split into groups and leaves out the
 * stacking and lowest-section rules, which cost time proportional to the
 * tensors live in a section; every rule it applies is one the minimal
 * canonical plan obeys, so an exhausted search is still a proof.
 *
 * DESIGN
 *  Sections live in a segment tree without propagation. Each node holds
 *  tag, the highest top of the placed tensors stored at it (a placement
 *  stores its top at the O(log S) nodes that cover its sections), and
 *  add, the bytes removed from rem there; sub, mr and fr are the largest
 *  floor, rem and floor + rem below it, so that the floor of a section is
 *  the largest tag on its path and the two capacity checks read the root:
 *  fr <= cap, and x + mr <= cap for the last offset x. A placement
 *  changes O(log S) nodes; undoing it restores their tags from a trail
 *  and adds the bytes back.
 *
 *  The neighbours of a placed tensor (the unplaced tensors it meets in
 *  time) are found without stored pairs: those that start in its range of
 *  sections are a run of the first-use order, walked on a list of the
 *  unplaced tensors; those live at its first section that started before
 *  are in the cover lists of a second segment tree over the sections,
 *  from which placed tensors are unlinked. Both lists unlink and relink
 *  in the order of the depth-first search (dancing links), so an undo is
 *  exact. A placement raises the pos of its neighbours; an undo
 *  recomputes them from the floors, so no trail of pos values is needed.
 *
 *  The unplaced tensors that may be placed next (twins wait for theirs)
 *  sit in a treap keyed by (pos, rank): the next candidate of a level is
 *  the successor of the last key tried. A second tree over the tensors
 *  gives min pos + size for dominance.
 *
 *  The pool. Tensors live in every section of the component (with one
 *  alignment, and no pinned obstacles) meet every placement and all sit
 *  at one pos, the highest floor aligned, read at the root. They stay
 *  out of the treap, the minima and both lists; bit sets over their rank
 *  order (the available ones) and their size order (the unplaced ones)
 *  give the next candidate among them, their least end for dominance
 *  and their largest size for their fit. A placement of one of them
 *  raises every unplaced tensor to its top; when the others share the
 *  pool's alignment they then all have one pos, so place_flat() sets
 *  their pos and rebuilds the treap from rank order in linear time
 *  instead of changing every key. The search explores exactly the nodes
 *  it explored without the pool, at a fraction of the units.
 *
 *  Cost: a placement or an undo costs O((k + 1) log n) for its k
 *  neighbours outside the pool, a flat one O(n); memory is about 104
 *  bytes per tensor (a treap node holds its key's rank), 24 more for
 *  the pool's slots, the rank order and a
 *  spine, plus 12 per cover entry (at most 2 log2 S a tensor, a few on
 *  average) plus 80 per section (docs/exact.md gives the figures). Every
 *  step is counted in work units, like exact_search.c's.
 *
 *  The state (exact_stream_int.h) is sized, freed and set up for a
 *  component in exact_stream_setup.c; this file holds its structures,
 *  the placements and their undo, and the search.
 */
#include "exact_stream_int.h"

#include <string.h>

static uint64_t umax(uint64_t a, uint64_t b)
{
  return a > b ? a : b;
}

/* ---- bit sets with a summary ------------------------------------------- */

static void bit_set(uint64_t *w, uint64_t *sum, uint32_t i)
{
  w[i >> 6] |= 1ull << (i & 63);
  sum[i >> 12] |= 1ull << ((i >> 6) & 63);
}

static void bit_clear(uint64_t *w, uint64_t *sum, uint32_t i)
{
  w[i >> 6] &= ~(1ull << (i & 63));
  if (!w[i >> 6])
    sum[i >> 12] &= ~(1ull << ((i >> 6) & 63));
}

/* The first set bit at or above i among nw words (ns summary words), or
 * NONE; adds the words read to *work. */
static uint32_t bit_next(const uint64_t *w, const uint64_t *sum,
                         uint32_t nw, uint32_t ns, uint32_t i,
                         uint64_t *work)
{
  uint32_t wi = i >> 6;
  *work += 2;
  if (wi >= nw)
    return NONE;
  uint64_t x = w[wi] & (~0ull << (i & 63));
  if (x)
    return wi * 64 + (uint32_t)__builtin_ctzll(x);
  wi++;
  uint32_t si = wi >> 6;
  if (si >= ns)
    return NONE;
  uint64_t y = sum[si] & (~0ull << (wi & 63));
  while (!y) {
    (*work)++;
    if (++si >= ns)
      return NONE;
    y = sum[si];
  }
  wi = si * 64 + (uint32_t)__builtin_ctzll(y);
  return wi * 64 + (uint32_t)__builtin_ctzll(w[wi]);
}

/* The last set bit, or NONE; adds the words read to *work. */
static uint32_t bit_last(const uint64_t *w, const uint64_t *sum,
                         uint32_t ns, uint64_t *work)
{
  *work += 2;
  for (uint32_t si = ns; si-- > 0;) {
    if (sum[si]) {
      uint32_t wi = si * 64 + 63 - (uint32_t)__builtin_clzll(sum[si]);
      return wi * 64 + 63 - (uint32_t)__builtin_clzll(w[wi]);
    }
    (*work)++;
  }
  return NONE;
}

/* ---- the section tree --------------------------------------------------- */

static void sec_fix_paths(struct exact_stream *T, uint32_t lo, uint32_t hi)
{
  for (uint32_t v = (lo + T->P) >> 1; v; v >>= 1)
    exact__sec_pull(T, v);
  for (uint32_t v = (hi + T->P) >> 1; v; v >>= 1)
    exact__sec_pull(T, v);
}

/* Places a tensor of `size` bytes with top `top` on sections [lo, hi]. */
static void sec_place(struct exact_stream *T, uint32_t lo, uint32_t hi,
                      uint64_t top, uint64_t size)
{
  uint32_t nodes[64], n = exact__sec_nodes(T, lo, hi, nodes);
  for (uint32_t k = 0; k < n; k++) {
    uint32_t v = nodes[k];
    T->ttag[T->ttn++] = T->tag[v];
    T->tag[v] = top; /* above every floor there: pos was their maximum */
    T->add[v] -= size;
    exact__sec_pull(T, v);
  }
  sec_fix_paths(T, lo, hi);
}

static void sec_unplace(struct exact_stream *T, uint32_t lo, uint32_t hi,
                        uint64_t size)
{
  uint32_t nodes[64], n = exact__sec_nodes(T, lo, hi, nodes);
  for (uint32_t k = n; k-- > 0;) {
    uint32_t v = nodes[k];
    T->tag[v] = T->ttag[--T->ttn];
    T->add[v] += size;
    exact__sec_pull(T, v);
  }
  sec_fix_paths(T, lo, hi);
}

/* The highest floor over sections [lo, hi]. */
static uint64_t sec_floor(const struct exact_stream *T, uint32_t lo,
                          uint32_t hi)
{
  uint64_t res = 0;
  uint32_t l = lo + T->P, r = hi + T->P + 1;
  while (l < r) {
    if (l & 1)
      res = umax(res, T->sub[l++]);
    if (r & 1)
      res = umax(res, T->sub[--r]);
    l >>= 1;
    r >>= 1;
  }
  for (uint32_t v = (lo + T->P) >> 1; v; v >>= 1)
    res = umax(res, T->tag[v]);
  for (uint32_t v = (hi + T->P) >> 1; v; v >>= 1)
    res = umax(res, T->tag[v]);
  return res;
}

/* ---- the treap of candidates -------------------------------------------- */

/* Whether tensor t's key is below (pos, rank). */
static int key_below(const struct exact_stream *T, uint32_t t, uint64_t pos,
                     uint32_t rank)
{
  return T->pos[t] < pos || (T->pos[t] == pos && T->tn[t].rank < rank);
}

/* The treap's updates walk down from the root without recursion, each
 * through the link it will rewrite: a placement changes the keys of
 * hundreds of neighbours, and these walks are most of its time. They
 * build the same trees as the recursive split and merge. */

/* Inserts q (not in the treap) into the treap. */
static void tr_insert(struct exact_stream *T, uint32_t q)
{
  struct trn *n = T->tn;
  uint64_t qp = T->pos[q];
  uint32_t qr = T->rank[q], qt = n[q].tp, *link = &T->root;
  n[q].rank = qr;
  while (*link != NONE && qt <= n[*link].tp)
    link = key_below(T, *link, qp, qr) ? &n[*link].r : &n[*link].l;
  /* Split the subtree at *link into the keys below q's and the others. */
  uint32_t t = *link, *l = &n[q].l, *r = &n[q].r;
  while (t != NONE) {
    if (key_below(T, t, qp, qr)) {
      *l = t;
      l = &n[t].r;
      t = n[t].r;
    } else {
      *r = t;
      r = &n[t].l;
      t = n[t].l;
    }
  }
  *l = *r = NONE;
  *link = q;
}

/* Erases q (in the treap, at its current key) from the treap. */
static void tr_erase(struct exact_stream *T, uint32_t q)
{
  struct trn *n = T->tn;
  uint64_t qp = T->pos[q];
  uint32_t qr = n[q].rank, *link = &T->root;
  while (*link != q)
    link = key_below(T, *link, qp, qr) ? &n[*link].r : &n[*link].l;
  /* Merge its subtrees in its place. */
  uint32_t a = n[q].l, b = n[q].r;
  while (a != NONE && b != NONE) {
    if (n[a].tp > n[b].tp) {
      *link = a;
      link = &n[a].r;
      a = n[a].r;
    } else {
      *link = b;
      link = &n[b].l;
      b = n[b].l;
    }
  }
  *link = a != NONE ? a : b;
}

/* The available tensor of the treap with the least key above (kpos,
 * krank). */
static uint32_t tr_next(const struct exact_stream *T, uint64_t kpos,
                        int64_t krank)
{
  uint32_t t = T->root, best = NONE;
  while (t != NONE) {
    int above = T->pos[t] > kpos ||
                (T->pos[t] == kpos && (int64_t)T->tn[t].rank > krank);
    if (above) {
      best = t;
      t = T->tn[t].l;
    } else {
      t = T->tn[t].r;
    }
  }
  return best;
}

/* ---- per-tensor bookkeeping --------------------------------------------- */

static int avail(const struct exact_stream *T, uint32_t q)
{
  return T->twin[q] == NONE || T->placed[T->twin[q]];
}

/* The pos of every pool member: the highest floor, aligned. */
static uint64_t pool_pos(const struct exact_stream *T)
{
  return planner__align_up(T->sub[1], T->palign);
}

/* The unplaced pool member of the least (first) or the largest size. */
static uint32_t pool_smallest(const struct exact_stream *T, uint64_t *work)
{
  uint32_t z = bit_next(T->bits_z, T->sum_z, T->nw, T->ns, 0, work);
  return T->by_z[z];
}

static uint32_t pool_largest(const struct exact_stream *T, uint64_t *work)
{
  return T->by_z[bit_last(T->bits_z, T->sum_z, T->ns, work)];
}

/* min pos + size over the unplaced tensors. */
static uint64_t min_end(const struct exact_stream *T, uint64_t *work)
{
  uint64_t t1 = T->tmin[1];
  if (T->pn) {
    uint64_t e = pool_pos(T) + T->size[pool_smallest(T, work)];
    if (e < t1)
      t1 = e;
  }
  return t1;
}

static void tmin_set(struct exact_stream *T, uint32_t q, uint64_t v)
{
  uint32_t i = T->Pm + q;
  T->tmin[i] = v;
  for (i >>= 1; i; i >>= 1) {
    uint64_t a = T->tmin[2 * i], b = T->tmin[2 * i + 1];
    uint64_t m = a < b ? a : b;
    if (T->tmin[i] == m)
      break; /* the minima above are unchanged too */
    T->tmin[i] = m;
  }
}

/* Sets pos[q] = v (q unplaced), keeping the treap and tmin in step.
 * Returns the work units. */
static uint64_t set_pos(struct exact_stream *T, uint32_t q, uint64_t v)
{
  int in = avail(T, q);
  if (in)
    tr_erase(T, q);
  T->pos[q] = v;
  if (in)
    tr_insert(T, q);
  tmin_set(T, q, v + T->size[q]);
  return KEY_UNITS(T);
}

/* Tensor q becomes a candidate (on), or stops being one. */
static void cand_mark(struct exact_stream *T, uint32_t q, int on)
{
  if (in_pool(T, q)) {
    if (on)
      bit_set(T->bits_r, T->sum_r, T->slot_r[q]);
    else
      bit_clear(T->bits_r, T->sum_r, T->slot_r[q]);
  } else {
    if (on)
      tr_insert(T, q);
    else
      tr_erase(T, q);
  }
}

/* The available tensor with the least key above (kpos, krank), from the
 * treap or the pool (whose members all sit at pool_pos()); sets the pos
 * of a pool member returned. */
static uint32_t next_cand(struct exact_stream *T, uint64_t kpos,
                          int64_t krank, uint64_t *work)
{
  uint32_t b = tr_next(T, kpos, krank);
  *work += 4 + T->lgm;
  if (!T->np)
    return b;
  uint64_t fp = pool_pos(T);
  if (fp < kpos || (b != NONE && T->pos[b] < fp))
    return b;
  uint32_t lo = 0, hi = T->np;
  if (fp == kpos) {
    /* The first slot of a rank above krank. */
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if ((int64_t)T->rank[T->by_r[mid]] <= krank)
        lo = mid + 1;
      else
        hi = mid;
      (*work)++;
    }
  }
  uint32_t sl = bit_next(T->bits_r, T->sum_r, T->nw, T->ns, lo, work);
  if (sl == NONE)
    return b;
  uint32_t q = T->by_r[sl];
  if (b != NONE && T->pos[b] == fp && T->rank[b] < T->rank[q])
    return b;
  T->pos[q] = fp;
  return q;
}

/* The canonical offset of unplaced q under the current floors. */
static uint64_t pos_of(const struct exact_stream *T, uint32_t q)
{
  uint64_t y = sec_floor(T, T->slo[q], T->shi[q]);
  y = planner__align_up(y, T->align[q]);
  return T->X->npins ? exact__fixpin(T->X, T->a + q, y) : y;
}

/* Unplaced tensor q (at pos[q]) joins the minima or the pool, and the
 * candidates when available. */
static void enter(struct exact_stream *T, uint32_t q)
{
  if (in_pool(T, q)) {
    bit_set(T->bits_z, T->sum_z, T->slot_z[q]);
    T->pn++;
  } else {
    tmin_set(T, q, T->pos[q] + T->size[q]);
  }
  if (avail(T, q))
    cand_mark(T, q, 1);
}

/* Fills the treap, the minima and the pool's bits from pos and placed:
 * every unplaced tensor is in the minima or the pool, every available
 * one a candidate. Returns the work units. */
uint64_t exact__cand_build(struct exact_stream *T)
{
  T->root = NONE;
  for (uint32_t i = 0; i < 2 * T->Pm; i++)
    T->tmin[i] = UINT64_MAX;
  memset(T->bits_r, 0, T->nw * sizeof *T->bits_r);
  memset(T->bits_z, 0, T->nw * sizeof *T->bits_z);
  memset(T->sum_r, 0, T->ns * sizeof *T->sum_r);
  memset(T->sum_z, 0, T->ns * sizeof *T->sum_z);
  T->pn = 0;
  for (uint32_t q = 0; q < T->m; q++)
    if (!T->placed[q])
      enter(T, q);
  return 2 * (uint64_t)T->Pm + (uint64_t)T->m * (4 + 2 * (uint64_t)T->lgm);
}

/* Sets the pos of every unplaced tensor outside the pool from the
 * floors. Returns the work units. */
static uint64_t recompute_all(struct exact_stream *T)
{
  for (uint32_t q = 0; q < T->m; q++)
    if (!T->placed[q] && !in_pool(T, q))
      T->pos[q] = pos_of(T, q);
  return (uint64_t)T->m * (2 + 2 * (uint64_t)T->lgS);
}

static void unlink_q(struct exact_stream *T, uint32_t q)
{
  T->placed[q] = 1;
  T->unplaced--;
  if (in_pool(T, q))
    return; /* never in the lists */
  T->nxt[T->prv[q]] = T->nxt[q];
  T->prv[T->nxt[q]] = T->prv[q];
  for (uint32_t e = T->toff[q]; e < T->toff[q + 1]; e++) {
    T->enx[T->epv[e]] = T->enx[e];
    T->epv[T->enx[e]] = T->epv[e];
  }
}

static void relink_q(struct exact_stream *T, uint32_t q)
{
  T->placed[q] = 0;
  T->unplaced++;
  if (in_pool(T, q))
    return;
  for (uint32_t e = T->toff[q + 1]; e-- > T->toff[q];) {
    T->enx[T->epv[e]] = e;
    T->epv[T->enx[e]] = e;
  }
  T->nxt[T->prv[q]] = q;
  T->prv[T->nxt[q]] = q;
}

/* Calls the body for every unplaced tensor b outside the pool that meets
 * tensor c in time (c itself is placed, so never among them), counting
 * the steps in *w. The pool's members are in neither list; the run of
 * those starting in range may begin at one (its nxt skips the pool). */
#define FOR_NEIGHBOURS(T, c, b, w, body)                                     \
  do {                                                                       \
    uint32_t s0_ = (T)->slo[c], s1_ = (T)->shi[c];                           \
    for (uint32_t v_ = (T)->P + s0_; v_; v_ >>= 1) {                         \
      uint32_t h_ = (T)->E + v_;                                             \
      (w)++;                                                                 \
      for (uint32_t e_ = (T)->enx[h_]; e_ != h_; e_ = (T)->enx[e_]) {        \
        uint32_t b = (T)->et[e_];                                            \
        (w)++;                                                               \
        if ((T)->slo[b] >= s0_)                                              \
          continue; /* found below, among those starting in range */         \
        body;                                                                \
      }                                                                      \
    }                                                                        \
    uint32_t b_ = (T)->bys[s0_], end_ = (T)->bys[s1_ + 1];                   \
    while (b_ < (T)->m && ((T)->placed[b_] || in_pool(T, b_)))               \
      b_ = (T)->nxt[b_];                                                     \
    for (; b_ < end_; b_ = (T)->nxt[b_]) {                                   \
      uint32_t b = b_;                                                       \
      (w)++;                                                                 \
      body;                                                                  \
    }                                                                        \
  } while (0)

/* Rebuilds the treap and the minima when every available tensor outside
 * the pool has the same pos, so that rank order is key order: the treap
 * as a Cartesian tree of that order (linear), the minima bottom up. */
static void flat_rebuild(struct exact_stream *T, uint64_t *work)
{
  uint32_t sp = 0;
  for (uint32_t r = 0; r < T->m; r++) {
    uint32_t q = T->by_rank[r], last = NONE;
    if (T->placed[q] || in_pool(T, q) || !avail(T, q))
      continue;
    while (sp && T->tn[T->stk[sp - 1]].tp < T->tn[q].tp)
      last = T->stk[--sp];
    T->tn[q].l = last;
    T->tn[q].r = NONE;
    T->tn[q].rank = T->rank[q];
    if (sp)
      T->tn[T->stk[sp - 1]].r = q;
    T->stk[sp++] = q;
  }
  T->root = sp ? T->stk[0] : NONE;
  for (uint32_t q = 0; q < T->Pm; q++)
    T->tmin[T->Pm + q] = q < T->m && !T->placed[q] && !in_pool(T, q)
                             ? T->pos[q] + T->size[q]
                             : UINT64_MAX;
  for (uint32_t i = T->Pm; i-- > 1;) {
    uint64_t a = T->tmin[2 * i], b = T->tmin[2 * i + 1];
    T->tmin[i] = a < b ? a : b;
  }
  *work += 3 * (uint64_t)T->m + 2 * (uint64_t)T->Pm;
}

/* The rest of place() for a pool member with top `top` when the tensors
 * outside the pool share one alignment (no pins). It meets every
 * unplaced tensor, and every one sat at most at the highest floor,
 * below top: so each now sits at top aligned, one key for all. Instead
 * of changing each key in the treap (a descent through a component of
 * long-lived tensors would pay that for every pair), the fit is checked
 * first, then the keys are set and the treap rebuilt in rank order. */
static int place_flat(struct exact_stream *T, uint64_t top, int *how,
                      uint32_t *mark_out, uint64_t *work)
{
  uint64_t np = planner__align_up(top, T->ualign), w = 0;
  uint32_t m = T->m;
  for (uint32_t b = T->nxt[m]; b != m; b = T->nxt[b], w++)
    if (np + T->size[b] > T->cap) {
      *work += w;
      return 0;
    }
  *how = P_FLAT_TRAIL;
  *mark_out = T->ptn;
  for (uint32_t b = T->nxt[m]; b != m; b = T->nxt[b], w++) {
    if (T->pos[b] == np)
      continue;
    if (T->ptn < T->ptcap) {
      T->pti[T->ptn] = b;
      T->ptv[T->ptn++] = T->pos[b];
    } else {
      *how = P_FLAT_RECOMPUTE;
    }
    T->pos[b] = np;
  }
  if (*how == P_FLAT_RECOMPUTE)
    T->ptn = *mark_out;
  *work += 2 * w;
  flat_rebuild(T, work);
  return 1;
}

/* Places c at pos[c]. Returns 1 when every check passed, 0 when one
 * failed. Either way the caller undoes it with unplace(c, *how). */
static int place(struct exact_stream *T, uint32_t c, int *how,
                 uint32_t *mark_out, uint64_t *work)
{
  uint64_t x = T->pos[c], top = x + T->size[c], cap = T->cap, w = 0;
  if (avail(T, c))
    cand_mark(T, c, 0);
  if (in_pool(T, c)) {
    bit_clear(T->bits_z, T->sum_z, T->slot_z[c]);
    T->pn--;
  } else {
    tmin_set(T, c, UINT64_MAX);
  }
  unlink_q(T, c);
  if (T->tnext[c] != NONE)
    cand_mark(T, T->tnext[c], 1);
  sec_place(T, T->slo[c], T->shi[c], top, T->size[c]);
  *work += 16 + 4 * (uint64_t)T->lgS;
  *how = P_SECTIONS;
  *mark_out = T->ptn;
  if (T->fr[1] > cap || x + T->mr[1] > cap)
    return 0;
  /* The fit of the pool's members, all neighbours of c, at once. */
  if (T->pn && pool_pos(T) + T->size[pool_largest(T, work)] > cap)
    return 0;
  if (in_pool(T, c) && T->ualign)
    return place_flat(T, top, how, mark_out, work);
  int ok = 1;
  uint32_t mark = T->ptn;
  *how = P_TRAIL;
  FOR_NEIGHBOURS(T, c, b, w, {
    uint64_t np = planner__align_up(top, T->align[b]);
    if (np > T->pos[b]) {
      if (T->X->npins)
        np = exact__fixpin(T->X, T->a + b, np);
      if (*how == P_TRAIL && T->ptn < T->ptcap) {
        T->pti[T->ptn] = b;
        T->ptv[T->ptn++] = T->pos[b];
      } else {
        *how = P_RECOMPUTE;
      }
      *work += set_pos(T, b, np);
      if (np + T->size[b] > cap)
        ok = 0;
    }
  });
  if (*how == P_RECOMPUTE)
    T->ptn = mark;
  *mark_out = mark;
  *work += w;
  return ok;
}

/* The end of an undo of c's placement: the candidates, the lists and
 * the minima or the pool. */
static void unplace_rest(struct exact_stream *T, uint32_t c)
{
  if (T->tnext[c] != NONE)
    cand_mark(T, T->tnext[c], 0);
  relink_q(T, c);
  enter(T, c);
}

static void unplace(struct exact_stream *T, uint32_t c, int how,
                    uint32_t mark, uint64_t *work)
{
  uint64_t w = 0;
  sec_unplace(T, T->slo[c], T->shi[c], T->size[c]);
  if (how == P_FLAT_TRAIL || how == P_FLAT_RECOMPUTE) {
    /* The old keys back, then the candidates anew (exact__cand_build()). */
    *work += 16 + 4 * (uint64_t)T->lgS + 2 * (uint64_t)(T->ptn - mark);
    while (T->ptn > mark) {
      T->ptn--;
      T->pos[T->pti[T->ptn]] = T->ptv[T->ptn];
    }
    relink_q(T, c);
    if (how == P_FLAT_RECOMPUTE)
      *work += recompute_all(T);
    *work += exact__cand_build(T);
    return;
  }
  if (how == P_TRAIL) {
    while (T->ptn > mark) {
      T->ptn--;
      *work += set_pos(T, T->pti[T->ptn], T->ptv[T->ptn]);
    }
  } else if (how == P_RECOMPUTE) {
    /* c is still unlinked, so it is not among its neighbours; its twin
     * successor is still a candidate, as set_pos() expects. */
    FOR_NEIGHBOURS(T, c, b, w, {
      uint64_t np = pos_of(T, b);
      if (np != T->pos[b])
        *work += set_pos(T, b, np);
    });
  }
  unplace_rest(T, c);
  *work += 16 + 4 * (uint64_t)T->lgS + w * (1 + 2 * (uint64_t)T->lgS);
}

/* ---- the search --------------------------------------------------------- */

/* A plan from a dead end: from the d levels placed, places every other
 * tensor at its canonical offset in key order, whatever the capacity,
 * and keeps the result as component c's plan when its arena is below the
 * current one; then undoes those placements. A completion costs about
 * what a descent does, so the effort is checked at every placement: one
 * that reaches it is abandoned, nothing kept, and the search's next poll
 * ends the search (else one completion ran up to 108 M units past the
 * limit; docs/exact.md, "Effort"). Canonical placements never
 * overlap, so the plan is valid. The undo takes back the sections and
 * the lists placement by placement but the keys in one go: every
 * unplaced tensor's pos from the floors, then the candidates, the minima
 * and the pool anew (exact__cand_build()), which costs O(m log m) where undoing
 * each placement would cost as much as the placements did. */
static void complete(struct ctx *X, uint32_t c, struct exact_stream *T,
                     uint32_t d)
{
  struct slv *lv = T->lv;
  uint64_t cap = T->cap, arena = 0;
  uint32_t ptn = T->ptn;
  T->cap = UINT64_MAX;
  uint32_t k = d;
  while (T->unplaced > 0 && X->work < X->work_limit) {
    uint32_t b = next_cand(T, 0, -1, &X->work);
    lv[k].c = b;
    lv[k].x = T->pos[b];
    place(T, b, &lv[k].how, &lv[k].mark, &X->work);
    k++;
  }
  for (uint32_t q = 0; q < k; q++)
    arena = umax(arena, lv[q].x + T->size[lv[q].c]);
  if (T->unplaced == 0 && arena < X->carena[c]) {
    for (uint32_t q = 0; q < k; q++)
      X->offsets[X->gi[T->a + lv[q].c]] = lv[q].x;
    X->carena[c] = arena;
  }
  X->work += (uint64_t)(k - d) * (16 + 4 * (uint64_t)T->lgS);
  while (k > d) {
    uint32_t q = lv[--k].c;
    sec_unplace(T, T->slo[q], T->shi[q], T->size[q]);
    relink_q(T, q);
  }
  T->ptn = ptn;
  X->work += recompute_all(T) + exact__cand_build(T);
  T->cap = cap;
}

int exact__stream_search(struct ctx *X, uint32_t c, uint64_t cap,
                         uint64_t limit)
{
  int rc = exact__poll_stop(X);
  if (rc != R_FOUND)
    return rc;
  if ((rc = exact__stream_init(X, c, cap)) != 0)
    return rc == ARENA_ENOMEM ? R_GIVEUP : rc; /* no room: heuristic plan */
  X->work += exact__cand_build(X->stream); /* the candidates, all tensors */
  if ((rc = exact__poll_stop(X)) != R_FOUND)
    return rc;
  struct exact_stream *T = X->stream;
  /* A descent places every tensor once: let every search complete one
   * on top of the driver's node limit. */
  limit = limit > UINT64_MAX - 2 * (uint64_t)T->m ? UINT64_MAX
                                                   : limit + 2 * (uint64_t)T->m;
  struct slv *lv = T->lv;
  uint32_t d = 0, done_at = 0;
  uint64_t nodes = 0, next_poll = X->work + EXACT_STREAM_POLL;
  lv[0].ex = 0;
  lv[0].er = -1;
  int entering = 1;
  for (;;) {
    struct slv *L = &lv[d];
    if (entering) {
      entering = 0;
      if (T->unplaced == 0) {
        for (uint32_t k = 0; k < d; k++)
          X->out[lv[k].c] = lv[k].x;
        rc = R_FOUND;
        break;
      }
      L->kpos = L->ex;
      L->krank = L->er;
      L->t1 = min_end(T, &X->work);
    }
    uint32_t b = next_cand(T, L->kpos, L->krank, &X->work);
    if (b == NONE || T->pos[b] >= L->t1) {
      if (d == 0) {
        rc = R_INFEAS;
        break;
      }
      /* A dead end deeper than any met so far (by m/16): a plan from
       * it may still beat the incumbent. */
      if (d >= done_at + T->m / 16 + 1) {
        complete(X, c, T, d);
        done_at = d;
        if ((rc = exact__poll_stop(X)) != R_FOUND)
          break;
      }
      d--;
      unplace(T, lv[d].c, lv[d].how, lv[d].mark, &X->work);
      continue;
    }
    L->kpos = T->pos[b];
    L->krank = (int64_t)T->rank[b];
    if (++nodes > limit) {
      rc = R_LIMIT;
      break;
    }
    if (X->work >= next_poll) {
      next_poll = X->work + EXACT_STREAM_POLL;
      if ((rc = exact__poll_stop(X)) != R_FOUND)
        break;
    }
    uint64_t x = T->pos[b];
    if (x + T->size[b] > cap)
      continue;
    int how;
    uint32_t mark;
    if (!place(T, b, &how, &mark, &X->work)) {
      unplace(T, b, how, mark, &X->work);
      continue;
    }
    L->how = how;
    L->mark = mark;
    L->c = b;
    L->x = x;
    d++;
    lv[d].ex = x;
    lv[d].er = (int64_t)T->rank[b];
    entering = 1;
  }
  X->nodes += nodes;
  return rc;
}

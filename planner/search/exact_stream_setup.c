/*
 * exact_stream_setup.c - memory and set-up of the exact planner's search
 * for large components (exact_stream.c): sizing and freeing its state,
 * the pool of tensors live in every section, the cover lists, and the
 * state of a component before its search.
 *
 * Everything here runs once per search call, in time and memory linear
 * in the component (a heap sort of the pool aside), and counts its work
 * in X->work like the search does.
 */
#include "exact_stream_int.h"

#include <stdlib.h>
#include <string.h>

static uint32_t ilog2c(uint32_t v)
{
  uint32_t k = 0;
  while ((1u << k) < v)
    k++;
  return k;
}

void exact__stream_free(struct ctx *X)
{
  struct exact_stream *T = X->stream;
  if (!T)
    return;
  free(T->tag); free(T->sub); free(T->add); free(T->mr); free(T->fr);
  free(T->ttag); free(T->pos); free(T->placed); free(T->nxt); free(T->prv);
  free(T->bys); free(T->tnext); free(T->toff); free(T->et); free(T->enx);
  free(T->epv); free(T->tn); free(T->tmin);
  free(T->lv); free(T->pti); free(T->ptv);
  free(T->slot_r); free(T->bits_r); /* the pool's two blocks */
  free(T);
  X->stream = NULL;
}

size_t exact__stream_bytes(const struct ctx *X)
{
  const struct exact_stream *T = X->stream;
  if (!T)
    return 0;
  size_t m1 = (size_t)T->mcap + 1, n2 = 2 * (size_t)T->pcap, pm = 1;
  while (pm < T->mcap)
    pm *= 2;
  return sizeof *T + n2 * 5 * sizeof(uint64_t) +          /* section tree */
         (size_t)T->ttcap * sizeof(uint64_t) +            /* tag trail */
         m1 * (sizeof(uint64_t) + 1 + 3 * sizeof(uint32_t) + /* per tensor */
               sizeof(struct trn) + sizeof(struct slv)) +
         (m1 + 1) * sizeof(uint32_t) +                    /* toff */
         ((size_t)T->pcap + 2) * sizeof(uint32_t) +       /* bys */
         ((size_t)T->ecap + n2 + 1) * 3 * sizeof(uint32_t) + /* covers */
         2 * pm * sizeof(uint64_t) +                      /* tmin */
         (size_t)T->ptcap * (sizeof(uint32_t) + sizeof(uint64_t)) +
         m1 * 6 * sizeof(uint32_t) +           /* pool slots, ranks, spine */
         2 * (bit_words(T->mcap) + bit_words(bit_words(T->mcap))) *
             sizeof(uint64_t);                            /* pool bits */
}

/* Makes room for m tensors, S sections, E cover entries and a tag trail
 * of tags entries. */
static int stream_room(struct ctx *X, uint32_t m, uint32_t S, uint32_t E,
                       uint32_t tags)
{
  struct exact_stream *T = X->stream;
  uint32_t P = 1, Pm = 1;
  while (P < S)
    P *= 2;
  while (Pm < m)
    Pm *= 2;
  if (T && T->mcap >= m && T->pcap >= P && T->ecap >= E && T->ttcap > tags)
    return 0;
  exact__stream_free(X);
  T = X->stream = calloc(1, sizeof *T);
  if (!T)
    return ARENA_ENOMEM;
  size_t n2 = 2 * (size_t)P, m1 = (size_t)m + 1;
  T->mcap = m;
  T->pcap = P;
  T->ecap = E;
  T->ttcap = tags + 1; /* a tensor's tags, once per tensor on the path */
  T->tag = malloc(n2 * sizeof *T->tag);
  T->sub = malloc(n2 * sizeof *T->sub);
  T->add = malloc(n2 * sizeof *T->add);
  T->mr = malloc(n2 * sizeof *T->mr);
  T->fr = malloc(n2 * sizeof *T->fr);
  T->ttag = malloc((size_t)T->ttcap * sizeof *T->ttag);
  T->pos = malloc(m1 * sizeof *T->pos);
  T->placed = malloc(m1);
  T->nxt = malloc(m1 * sizeof *T->nxt);
  T->prv = malloc(m1 * sizeof *T->prv);
  T->bys = malloc(((size_t)P + 2) * sizeof *T->bys);
  T->tnext = malloc(m1 * sizeof *T->tnext);
  T->toff = malloc((m1 + 1) * sizeof *T->toff);
  T->et = malloc(((size_t)E + n2 + 1) * sizeof *T->et);
  T->enx = malloc(((size_t)E + n2 + 1) * sizeof *T->enx);
  T->epv = malloc(((size_t)E + n2 + 1) * sizeof *T->epv);
  T->tn = malloc(m1 * sizeof *T->tn);
  T->tmin = malloc(2 * (size_t)Pm * sizeof *T->tmin);
  T->lv = malloc((m1 + 1) * sizeof *T->lv);
  T->ptcap = (uint32_t)(4 * m1 + (1u << 12));
  T->pti = malloc((size_t)T->ptcap * sizeof *T->pti);
  T->ptv = malloc((size_t)T->ptcap * sizeof *T->ptv);
  /* The pool's arrays in two blocks, owned by slot_r and bits_r. */
  size_t w = bit_words(m), ws = bit_words(w);
  T->slot_r = malloc(6 * m1 * sizeof *T->slot_r);
  T->bits_r = malloc(2 * (w + ws) * sizeof *T->bits_r);
  if (!T->slot_r || !T->bits_r) {
    exact__stream_free(X);
    return ARENA_ENOMEM;
  }
  T->slot_z = T->slot_r + m1;
  T->by_r = T->slot_z + m1;
  T->by_z = T->by_r + m1;
  T->by_rank = T->by_z + m1;
  T->stk = T->by_rank + m1;
  T->bits_z = T->bits_r + w;
  T->sum_r = T->bits_z + w;
  T->sum_z = T->sum_r + ws;
  if (!T->tag || !T->sub || !T->add || !T->mr || !T->fr || !T->ttag ||
      !T->pos || !T->placed || !T->nxt || !T->prv || !T->bys || !T->tnext ||
      !T->toff || !T->et || !T->enx || !T->epv || !T->tn || !T->tmin ||
      !T->lv || !T->pti || !T->ptv) {
    exact__stream_free(X);
    return ARENA_ENOMEM;
  }
  return 0;
}

/* The pool's alignment in component c of S sections, m tensors from a:
 * that of its first tensor live in every section; 0 for no pool (none
 * such, or pinned obstacles, which give each tensor a pos of its own). */
static uint64_t pool_align(const struct ctx *X, uint32_t a, uint32_t m,
                           uint32_t S)
{
  if (X->npins)
    return 0;
  for (uint32_t q = 0; q < m; q++)
    if (X->slo[a + q] == 0 && X->shi[a + q] == S - 1)
      return X->align[a + q];
  return 0;
}

static int pool_member(const struct ctx *X, uint32_t k, uint32_t S,
                       uint64_t palign)
{
  return palign && X->slo[k] == 0 && X->shi[k] == S - 1 &&
         X->align[k] == palign;
}

/* Sorts the n tensors v by size, ties by index (a heap sort). */
static void sort_by_size(uint32_t *v, uint32_t n, const uint64_t *size)
{
#define SZ_LT(p, q) (size[p] < size[q] || (size[p] == size[q] && (p) < (q)))
  for (uint32_t end = n, start = n / 2;;) {
    if (start > 0) {
      start--;
    } else if (end > 1) {
      end--;
      uint32_t t = v[end];
      v[end] = v[0];
      v[0] = t;
    } else {
      break;
    }
    for (uint32_t i = start, k; (k = 2 * i + 1) < end; i = k) {
      if (k + 1 < end && SZ_LT(v[k], v[k + 1]))
        k++;
      if (!SZ_LT(v[i], v[k]))
        break;
      uint32_t t = v[i];
      v[i] = v[k];
      v[k] = t;
    }
  }
#undef SZ_LT
}

/* The pool of the component in T (alignment palign, 0: none): its slots
 * in rank and in size order (exact__cand_build() sets the bits), and ualign
 * when every other tensor has the pool's alignment. Needs T->rank. */
static void pool_init(struct exact_stream *T, uint64_t palign)
{
  uint32_t m = T->m, np = 0;
  T->palign = palign;
  T->ualign = palign;
  for (uint32_t q = 0; q < m; q++) {
    T->slot_r[q] = T->slot_z[q] = NONE;
    T->by_rank[T->rank[q]] = q;
  }
  for (uint32_t r = 0; palign && r < m; r++) {
    uint32_t q = T->by_rank[r];
    if (pool_member(T->X, T->a + q, T->S, palign))
      T->by_r[np++] = q;
    else if (T->align[q] != palign)
      T->ualign = 0;
  }
  for (uint32_t i = 0; i < np; i++) {
    T->slot_r[T->by_r[i]] = i;
    T->by_z[i] = T->by_r[i];
  }
  sort_by_size(T->by_z, np, T->size);
  for (uint32_t i = 0; i < np; i++)
    T->slot_z[T->by_z[i]] = i;
  T->np = np;
  T->nw = (uint32_t)bit_words(np);
  T->ns = (uint32_t)bit_words(T->nw);
}

/* Cover entries of the component's tensors outside the pool: sum of
 * their canonical node counts; *tags gets the sum over every tensor (the
 * tag trail's room). */
static uint32_t cover_count(const struct ctx *X, uint32_t a, uint32_t m,
                            uint32_t S, uint32_t P, uint64_t palign,
                            uint32_t *tags)
{
  uint64_t e = 0, all = 0;
  for (uint32_t q = 0; q < m; q++) {
    uint32_t l = X->slo[a + q] + P, r = X->shi[a + q] + P + 1, n = 0;
    while (l < r) {
      n += (l & 1) + (r & 1);
      l = (l + 1) >> 1;
      r >>= 1;
    }
    all += n;
    if (!pool_member(X, a + q, S, palign))
      e += n;
  }
  *tags = all > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)all;
  return e > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)e;
}

/* Builds the state for component c within cap. Returns 0, ARENA_ENOMEM,
 * or R_INFEAS when some tensor or section cannot fit at all. */
int exact__stream_init(struct ctx *X, uint32_t c, uint64_t cap)
{
  uint32_t a = X->cb[c], m = X->cb[c + 1] - a, S = X->sb[c + 1] - X->sb[c];
  uint32_t P = 1, Pm = 1;
  while (P < S)
    P *= 2;
  while (Pm < m)
    Pm *= 2;
  uint64_t palign = pool_align(X, a, m, S);
  uint32_t tags, E = cover_count(X, a, m, S, P, palign, &tags);
  int rc = stream_room(X, m, S, E, tags);
  if (rc)
    return rc;
  struct exact_stream *T = X->stream;
  T->X = X;
  T->a = a;
  T->m = m;
  T->S = S;
  T->P = P;
  T->Pm = Pm;
  T->E = E;
  T->lgS = ilog2c(P) + 1;
  T->lgm = ilog2c(Pm) + 1;
  T->size = X->size + a;
  T->align = X->align + a;
  T->slo = X->slo + a;
  T->shi = X->shi + a;
  T->rank = X->rank;
  T->twin = X->twin;
  T->cap = cap;
  T->ttn = 0;
  T->ptn = 0;
  T->unplaced = m;
  const uint64_t *rem0 = X->rem0 + X->sb[c];
  /* Sections: nothing placed; rem0 at the leaves, as their add. */
  memset(T->tag, 0, 2 * (size_t)P * sizeof *T->tag);
  memset(T->add, 0, 2 * (size_t)P * sizeof *T->add);
  for (uint32_t s = 0; s < S; s++) {
    if (rem0[s] > cap)
      return R_INFEAS;
    T->add[P + s] = rem0[s];
  }
  for (uint32_t v = 2 * P; v-- > P;)
    exact__sec_pull(T, v);
  for (uint32_t v = P; v-- > 1;)
    exact__sec_pull(T, v);
  /* Tensors: all unplaced, those outside the pool in one list (a pool
   * member's nxt is the next tensor outside it); first index by
   * section. */
  pool_init(T, palign);
  uint32_t last = m;
  for (uint32_t q = m; q-- > 0;) {
    T->placed[q] = 0;
    T->tnext[q] = NONE;
    T->nxt[q] = last;
    if (!in_pool(T, q))
      last = q;
  }
  T->nxt[m] = last;
  last = m;
  for (uint32_t q = 0; q < m; q++) {
    T->prv[q] = last;
    if (!in_pool(T, q))
      last = q;
  }
  T->prv[m] = last;
  for (uint32_t q = 0; q < m; q++)
    if (T->twin[q] != NONE)
      T->tnext[T->twin[q]] = q;
  for (uint32_t s = 0, q = 0; s <= S; s++) {
    while (q < m && T->slo[q] < s)
      q++;
    T->bys[s] = q;
  }
  T->bys[S + 1] = m;
  /* Cover lists: sentinels first, then each tensor's entries. */
  for (uint32_t v = 0; v < 2 * P; v++)
    T->enx[E + v] = T->epv[E + v] = E + v;
  uint32_t e = 0;
  for (uint32_t q = 0; q < m; q++) {
    uint32_t nodes[64], n = exact__sec_nodes(T, T->slo[q], T->shi[q], nodes);
    T->toff[q] = e;
    if (in_pool(T, q))
      continue;
    for (uint32_t k = 0; k < n; k++, e++) {
      uint32_t h = E + nodes[k];
      T->et[e] = q;
      T->enx[e] = h;
      T->epv[e] = T->epv[h];
      T->enx[T->epv[h]] = e;
      T->epv[h] = e;
    }
  }
  T->toff[m] = e;
  /* Candidates: every tensor at its pos above the pins, in the treap or
   * the pool. */
  for (uint32_t q = 0; q < m; q++) {
    T->pos[q] = X->npins ? exact__fixpin(X, a + q, 0) : 0;
    if (T->pos[q] + T->size[q] > cap)
      return R_INFEAS;
    T->tn[q].tp = (uint32_t)exact__mix64(((uint64_t)q << 1) ^ 0x5bd1e995u);
  }
  X->work += 8 * (uint64_t)P + 4 * (uint64_t)E + 2 * (uint64_t)m +
             exact__sort_units(T->np);
  return 0;
}

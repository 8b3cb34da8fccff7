/*
 * exact_order.c - the rank orders of the exact planner and the restart
 * schedule that races them.
 *
 * A rank order fixes the tie key of the canonical placements (see the
 * DESIGN comment in exact.c). Several orders, and jittered variants of
 * them, are raced in turns under growing node limits; this file builds
 * an order with its twin chains (exact__make_rank()), ranks the groups of
 * a split anew under a dynamic order (exact__rerank(), undone by
 * exact__rank_restore()) and says which order and limit a restart round
 * gets (exact__round_plan()).
 */
#include "exact_int.h"

#include <stdlib.h>

#define EXACT_FIRST_LIMIT 2048u /* nodes in the first round */

static int cmp_rkey(const void *a, const void *b)
{
  const struct rkey *x = a, *y = b;
  if (x->k1 != y->k1)
    return x->k1 > y->k1 ? -1 : 1;
  if (x->k2 != y->k2)
    return x->k2 > y->k2 ? -1 : 1;
  if (x->k3 != y->k3)
    return x->k3 > y->k3 ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* The keys a static order sorts by, all descending. */
enum rk {
  RK_PEAK,  /* the largest section total a tensor lives in */
  RK_LIFE,  /* lifetime, in steps */
  RK_AREA,  /* size x lifetime */
  RK_LAST,  /* last use: later first */
  RK_SIZE   /* bytes */
};

/* The static orders raced in turn, three keys each. Each instance of
 * MiniMalloc's suite is solved quickly by one or two of these and slowly
 * by the others, so the driver gives every order the same node limit
 * before doubling it. */
static const unsigned char ORDERS[][3] = {
  {RK_PEAK, RK_LIFE, RK_AREA}, {RK_LIFE, RK_AREA, RK_PEAK},
  {RK_PEAK, RK_AREA, RK_LIFE}, {RK_AREA, RK_PEAK, RK_LIFE},
  {RK_LAST, RK_PEAK, RK_AREA},
};
#define EXACT_N_JITTERED 4 /* jittered orders derive from the first four */
#define EXACT_N_ORDERS (sizeof ORDERS / sizeof ORDERS[0])

/* The Luby sequence 1 1 2 1 1 2 4 1 1 2 ... (i >= 1): restart lengths
 * that are within a log factor of the best fixed length. */
static uint64_t luby(uint64_t i)
{
  for (;;) {
    uint64_t k = 1;
    while (((uint64_t)1 << k) - 1 < i)
      k++;
    if (((uint64_t)1 << k) - 1 == i)
      return (uint64_t)1 << (k - 1);
    i -= ((uint64_t)1 << (k - 1)) - 1;
  }
}

/* Restart round r: which order (*v) and how many nodes. Rounds come in
 * turns. A turn first gives every base order, and the first one once more
 * with dynamic ranks (EXACT_DYN: the groups of every split are ranked
 * anew by what is left of them), the same limit, doubled from the turn
 * before: one order is often far faster than the rest, and its limit
 * grows geometrically. Then come EXACT_N_JITTERED fresh jittered orders
 * (v >= EXACT_N_ORDERS) under Luby limits: the search is heavy tailed,
 * and a short run of a slightly different order often succeeds where the
 * base orders need millions of nodes. */
uint64_t exact__round_plan(unsigned r, unsigned *v)
{
  unsigned n = (unsigned)EXACT_N_ORDERS, per = n + 1 + EXACT_N_JITTERED;
  unsigned turn = r / per, k = r % per;
  if (k <= n) {
    *v = k < n ? k : EXACT_DYN; /* order 0, dynamic */
    return EXACT_FIRST_LIMIT << (turn < 40 ? turn : 40);
  }
  unsigned j = turn * EXACT_N_JITTERED + (k - n - 1); /* jittered order j */
  *v = n + j;
  return EXACT_FIRST_LIMIT * luby(j + 1);
}

unsigned exact__order_slot(unsigned v)
{
  _Static_assert(EXACT_N_ORDERS + 2 == EXACT_ORDER_SLOTS, "order slots");
  if (v & EXACT_DYN)
    return (unsigned)EXACT_N_ORDERS;
  return v < EXACT_N_ORDERS ? v : (unsigned)EXACT_N_ORDERS + 1;
}

static uint64_t rank_key(const struct ctx *X, uint32_t k, unsigned key,
                         uint64_t peak)
{
  const struct planner_tensor *t = &X->p->t[X->gi[k]];
  uint64_t life = (uint64_t)(t->last - t->first) + 1, sz = X->size[k];
  switch (key) {
  case RK_PEAK: return peak;
  case RK_LIFE: return life;
  case RK_AREA: return life > UINT64_MAX / sz ? UINT64_MAX : life * sz;
  case RK_LAST: return (uint64_t)t->last;
  default: return sz;
  }
}

/* The sort key of tensor a + q under order v (no flag) and the given
 * peak. Jittered order v >= EXACT_N_ORDERS is number j = v -
 * EXACT_N_ORDERS: the keys of base order j % EXACT_N_JITTERED with a
 * deterministic +-25% jitter on the first, seeded by j. */
static void order_key(const struct ctx *X, uint32_t a, uint32_t q,
                      unsigned v, uint64_t peak, struct rkey *r)
{
  unsigned j0 = v >= EXACT_N_ORDERS ? v - (unsigned)EXACT_N_ORDERS : 0;
  const unsigned char *ord =
      ORDERS[v >= EXACT_N_ORDERS ? j0 % EXACT_N_JITTERED : v];
  r->i = q;
  r->k1 = rank_key(X, a + q, ord[0], peak);
  r->k2 = rank_key(X, a + q, ord[1], peak);
  r->k3 = rank_key(X, a + q, ord[2], peak);
  if (v >= EXACT_N_ORDERS) {
    uint64_t seed = (uint64_t)(j0 + EXACT_N_JITTERED) << 32;
    uint64_t j = 96 + exact__mix64(seed ^ q) % 65;
    uint64_t k = r->k1;
    r->k1 = k > UINT64_MAX / 256 ? k : k * j / 128;
  }
}

/* Fills X->rank for component c with order v (the EXACT_DYN flag aside),
 * jittered when v >= EXACT_N_ORDERS (ties go to the earlier tensor in
 * first-use order), and X->twin.
 * Returns 0 or ARENA_ENOMEM. */
int exact__make_rank(struct ctx *X, uint32_t c, unsigned v)
{
  uint32_t a = X->cb[c], m = X->cb[c + 1] - a;
  struct rkey *r = malloc(((size_t)m + 1) * sizeof *r);
  if (!r)
    return ARENA_ENOMEM;
  X->dyn = (v & EXACT_DYN) != 0;
  X->order = v & ~EXACT_DYN;
  X->rtn = 0;
  X->work += 2 * exact__sort_units(m) + 4 * (uint64_t)m; /* two sorts */
  for (uint32_t q = 0; q < m; q++)
    order_key(X, a, q, X->order, X->peak[a + q], &r[q]);
  qsort(r, m, sizeof *r, cmp_rkey);
  for (uint32_t q = 0; q < m; q++)
    X->rank[r[q].i] = q;
  /* Identical tensors (size, lifetime, alignment) are interchangeable:
   * swapping two gives a plan with the same offset sum, so some minimal
   * plan has them in any fixed order, here this order's ranks, and a
   * tensor waits for its twin of next lower rank (the chain stays as it
   * is when a dynamic order ranks the tensors anew). Group them by
   * sorting on those fields, then rank. */
  for (uint32_t q = 0; q < m; q++) {
    const struct planner_tensor *t = &X->p->t[X->gi[a + q]];
    r[q].k1 = X->size[a + q];
    r[q].k2 = ((uint64_t)X->slo[a + q] << 32) | X->shi[a + q];
    r[q].k3 = ((uint64_t)(t->last - t->first) << 8) ^ X->align[a + q];
    r[q].i = q;
  }
  qsort(r, m, sizeof *r, cmp_rkey);
  for (uint32_t q = 0; q < m;) {
    uint32_t e = q + 1;
    while (e < m && r[e].k1 == r[q].k1 && r[e].k2 == r[q].k2 &&
           r[e].k3 == r[q].k3)
      e++;
    /* r[q .. e) are candidates for twins; check exactly and chain by
     * rank (insertion sort, groups are tiny). */
    for (uint32_t i = q + 1; i < e; i++) {
      struct rkey w = r[i];
      uint32_t j = i;
      while (j > q && X->rank[r[j - 1].i] > X->rank[w.i]) {
        r[j] = r[j - 1];
        j--;
      }
      r[j] = w;
    }
    X->twin[r[q].i] = NONE;
    for (uint32_t i = q + 1; i < e; i++) {
      uint32_t x = a + r[i].i, y = a + r[i - 1].i;
      const struct planner_tensor *tx = &X->p->t[X->gi[x]];
      const struct planner_tensor *ty = &X->p->t[X->gi[y]];
      int same = tx->first == ty->first && tx->last == ty->last &&
                 X->size[x] == X->size[y] && X->align[x] == X->align[y] &&
                 X->pin_off[x] == X->pin_off[x + 1] &&
                 X->pin_off[y] == X->pin_off[y + 1];
      X->twin[r[i].i] = same ? r[i - 1].i : NONE;
    }
    q = e;
  }
  free(r);
  return 0;
}

int exact__rerank(struct ctx *X, uint32_t a, const uint32_t *list,
                  const uint64_t *peak, uint32_t n)
{
  if (n > X->rtcap - X->rtn)
    return 0;
  struct rkey *r = X->rks;
  for (uint32_t k = 0; k < n; k++) {
    order_key(X, a, list[k], X->order, peak[k], &r[k]);
    X->rtr_i[X->rtn + k] = list[k];
    X->rtr_v[X->rtn + k] = X->rank[list[k]];
  }
  X->rtn += n;
  X->reranks++;
  qsort(r, n, sizeof *r, cmp_rkey);
  for (uint32_t k = 0; k < n; k++)
    X->rank[r[k].i] = k;
  return 1;
}

void exact__rank_restore(struct ctx *X, uint32_t mark)
{
  while (X->rtn > mark) {
    X->rtn--;
    X->rank[X->rtr_i[X->rtn]] = X->rtr_v[X->rtn];
  }
}

/*
 * improve_lns.c - ruin and recreate: a large-neighbourhood search on a
 * whole plan that frees a region around a tensor near its top and places
 * the region's tensors anew in a perturbed order.
 *
 * The squeeze (improve_squeeze.c) is a strict descent on the one tensor
 * that reaches the top: a step is kept only when it lowers the arena.
 * On the XLA-like traces the top is often reached by dozens of tensors
 * at nearly the same height, so no single step lowers it, though steps
 * that take some of them down without raising the others would. This
 * search accepts such sideways moves.
 *
 * DESIGN
 *  Objective, lexicographic: the arena first, then the overflow, the
 *  bytes that lie above a level L times the spans they live in, with
 *  L = top - max(1, (top - LB) / 8) for the current top. A step is kept
 *  when no tensor it places reaches above the top and the overflow of
 *  its tensors does not grow (equal is kept too, so the search can walk
 *  along a plateau); when the top then drops, L follows it.
 *
 *  Ruin. Half the time the tensor that reaches the top (the first of
 *  equals), else one of those above L, is drawn at random (a fixed-seed
 *  SplitMix64), and a span c of its life. Then one of two regions,
 *  evenly:
 *   - a region of the squeeze's region step (improve_region.c): W spans
 *     around c (W = 2^r, r in 5 .. 11, plus up to W more) from offset
 *     top - D up, D = E 2^r (r in 0 .. 5, E = top - LB), and either no
 *     band elsewhere or a band of E 2^r (r in 0 .. 2) along all of
 *     time; its free tensors lie wholly inside it;
 *   - a column: every unpinned tensor live in 1 .. 64 spans around c
 *     whose offset is at least top - E 2^r (r in 0 .. 5), whatever its
 *     life. Every other tensor that meets the hull of their lives, above
 *     that edge, is a fixed piece, and the edge is a floor.
 *  Recreate. The free tensors are placed anew among the fixed pieces one
 *  at a time, first fit or best fit (evenly; the region step's
 *  placement, improve__place_order()), in an order drawn from size,
 *  length of life, area (each descending), current offset (ascending)
 *  and a random one, the first four with a noise of 0, 1/16, 1/4 or 1
 *  times the key (evenly).
 *
 *  Validity. A region's free tensors lie wholly inside it, as in the
 *  region step. A column's free tensors are placed where they miss the
 *  floor, every piece (every other tensor they meet in time, above the
 *  floor) and every free tensor placed before them that they meet in
 *  time. So the plan stays valid after every step, and planner_run()
 *  verifies it as usual. The plan given is replaced only when the arena
 *  ends lower.
 *
 *  Effort. The search has a budget of its own, LNS_UNITS_PER_TENSOR
 *  work units per sized tensor (a fixed amount of work for a graph, like
 *  the staircase plans, not a share of the effort, which the squeeze
 *  spends on the traces where this search helps). Each step counts its
 *  scans of the tensors, its sorts and every entry its placements scan
 *  or move, as the region step does; a region whose placements could
 *  scan more than a sixteenth of the budget (free tensors times
 *  entries) is skipped, so that no single step takes the budget, and the
 *  search stops before a step that could pass the budget. The stop
 *  callback is polled once a step. The random stream has a fixed seed
 *  (from the tensor count): deterministic, no clock.
 *
 *  Lists. Two lists of tensors (ascending) stand in for the scans of all
 *  the tensors: those that end above L (the tensors drawn from, and the
 *  top), and those that end above the lowest edge any ruin can have,
 *  top - E 2^5 (where a region or a column finds all its tensors). A
 *  kept step merges its moved tensors into them; they are built anew
 *  only when L moves. A ruin and a kept step still count the units of
 *  the scans they replace, so the steps, and the plan, are those of the
 *  scans; on the XLA-like traces the second list holds a few hundred of
 *  tens of thousands of tensors.
 */
#include "improve.h"
#include "improve_int.h"

#include <stdlib.h>
#include <string.h>

#include "exact_int.h"

/* Work units per sized tensor the search may do. */
#define LNS_UNITS_PER_TENSOR 500u
/* The level lies (top - LB) / 2^LNS_LEVEL_SHIFT below the top. */
#define LNS_LEVEL_SHIFT 3u
/* Region widths: 2^r spans, r from LNS_W_LOG, LNS_W_LOGS values. */
#define LNS_W_LOG 5u
#define LNS_W_LOGS 7u
/* Depths below the top: E 2^r, r < LNS_DEPTHS; bands: r < LNS_BANDS. */
#define LNS_DEPTHS 6u
#define LNS_BANDS 3u
/* A column is 1 .. LNS_COLUMN spans wide. */
#define LNS_COLUMN 64u
/* Keys are capped so that a key plus its noise fits in 54 bits. */
#define LNS_KEY_CAP ((uint64_t)1 << 52)
/* A step whose placements could scan more than the budget over this
 * is skipped. */
#define LNS_STEP_SHARE 16u
/* The seed of the random stream. */
#define LNS_SEED 0x6c6e73u

/* Orders of a recreate. */
enum { LO_SIZE, LO_LIFE, LO_AREA, LO_OFFSET, LO_RANDOM, N_LORDERS };

/* Tensors, ascending, that end above a height (kept up to date by each
 * step instead of scans of all the tensors). */
struct klist {
  uint32_t *k; /* m */
  uint32_t n;
};

/* The search's state beside the pass state. */
struct lns {
  struct imp *I;
  uint64_t rng;   /* SplitMix64 state */
  uint64_t top;   /* arena of I->off */
  uint64_t level; /* L, below top */
  uint64_t budget; /* work units of the whole search */
  struct klist up;   /* the tensors that end above level */
  struct klist deep; /* those that end above floor_of(top), and maybe
                        some below it while L has not moved */
  uint32_t *tmp;     /* m: scratch for updating a list */
  uint32_t kt;       /* the first tensor that reaches top, when up.n */
};

/* SplitMix64: the next value of the stream (its finaliser is
 * exact__mix64()). */
static uint64_t next(struct lns *S)
{
  return exact__mix64(S->rng += 0x9e3779b97f4a7c15ull);
}

/* A uniform value in [0, n), 0 when n is 0. */
static uint64_t below(struct lns *S, uint64_t n)
{
  return n ? next(S) % n : 0;
}

/* E 2^r, or top when that is more. */
static uint64_t scaled(uint64_t e, uint64_t r, uint64_t top)
{
  return r < 64 && e <= top >> r ? e << r : top;
}

/* Where sized tensor k ends at its offset. */
static uint64_t end_of(const struct imp *I, uint32_t k)
{
  return I->off[k] + I->p->t[I->gi[k]].size;
}

/* Bytes of sized tensor k at offset off above the level, times the spans
 * it lives in. */
static double overflow(const struct lns *S, uint32_t k, uint64_t off)
{
  const struct imp *I = S->I;
  uint64_t e = off + I->p->t[I->gi[k]].size;
  if (e <= S->level)
    return 0;
  uint64_t b = off > S->level ? off : S->level;
  return (double)(e - b) * (double)(I->shi[k] - I->slo[k] + 1);
}

/* S->kt and S->top from the list S->up (every tensor that reaches the
 * top is on it when it is not empty). */
static void top_of_list(struct lns *S)
{
  uint64_t top = 0;
  for (uint32_t j = 0; j < S->up.n; j++) {
    uint64_t e = end_of(S->I, S->up.k[j]);
    if (e > top) {
      top = e;
      S->kt = S->up.k[j];
    }
  }
  S->top = top;
}

/* L anew from a scan of the tensors: those that end above h. */
static void scan_list(const struct imp *I, struct klist *L, uint64_t h)
{
  L->n = 0;
  for (uint32_t k = 0; k < I->m; k++)
    if (end_of(I, k) > h)
      L->k[L->n++] = k;
}

/* Sets S->level from S->top. */
static void set_level(struct lns *S)
{
  uint64_t d = (S->top - S->I->p->lb) >> LNS_LEVEL_SHIFT;
  S->level = S->top - (d ? d : 1);
}

/* The lowest edge a ruin below top can have: top less its deepest
 * depth. */
static uint64_t floor_of(const struct lns *S)
{
  return S->top - scaled(S->top - S->I->p->lb, LNS_DEPTHS - 1, S->top);
}

/* L, of the tensors that end above h, after the free tensors
 * I->order[0 .. nf-1] (ascending, marked in I->done) moved: those off
 * it, merged with the moved ones that end above h. */
static void list_moved(struct lns *S, struct klist *L, uint64_t h,
                       uint32_t nf)
{
  struct imp *I = S->I;
  uint32_t a = 0, n = 0, i = 0, f = 0;
  for (uint32_t j = 0; j < L->n; j++)
    if (!I->done[L->k[j]])
      L->k[a++] = L->k[j];
  while (i < a || f < nf) {
    if (f < nf && end_of(I, I->order[f]) <= h) {
      f++;
      continue;
    }
    if (f == nf || (i < a && L->k[i] < I->order[f]))
      S->tmp[n++] = L->k[i++];
    else
      S->tmp[n++] = I->order[f++];
  }
  memcpy(L->k, S->tmp, n * sizeof *L->k);
  L->n = n;
}

/* After the free tensors I->order[0 .. nf-1] (ascending) moved: the
 * lists, S->top and S->level as scans of the tensors would find them,
 * counted as one scan (I->m units). The lists are merged with the moved
 * tensors; the tensors are scanned again only when the level moves (the
 * top drops) or no tensor ends above it. */
static void moved(struct lns *S, uint32_t nf)
{
  struct imp *I = S->I;
  for (uint32_t j = 0; j < nf; j++)
    I->done[I->order[j]] = 1;
  list_moved(S, &S->up, S->level, nf);
  list_moved(S, &S->deep, floor_of(S), nf);
  for (uint32_t j = 0; j < nf; j++)
    I->done[I->order[j]] = 0;
  uint64_t level = S->level;
  if (S->up.n) {
    top_of_list(S);
    I->work += I->m; /* counted as the scan of the tensors it stands for */
  } else {
    S->kt = improve__top_tensor(I, &S->top);
  }
  set_level(S);
  if (S->level != level) {
    scan_list(I, &S->up, S->level);
    scan_list(I, &S->deep, floor_of(S));
    top_of_list(S);
  }
}

/* The column of spans [a, b] from offset wb up: its free tensors into
 * I->order (*nf), the pieces and floor into I->ob (*no). */
static void column(struct imp *I, const struct klist *C, uint32_t a,
                   uint32_t b, uint64_t wb, uint32_t *nf, uint32_t *no)
{
  uint32_t ha = UINT32_MAX, hb = 0;
  *nf = *no = 0;
  for (uint32_t j = 0; j < C->n; j++) {
    uint32_t k = C->k[j];
    I->done[k] = I->slo[k] <= b && I->shi[k] >= a && I->off[k] >= wb &&
                 I->p->t[I->gi[k]].pinned == PLANNER_NOT_PINNED;
    if (!I->done[k])
      continue;
    I->order[(*nf)++] = k;
    ha = I->slo[k] < ha ? I->slo[k] : ha;
    hb = I->shi[k] > hb ? I->shi[k] : hb;
  }
  I->work += I->m;
  for (uint32_t j = 0; *nf && j < C->n; j++) {
    uint32_t k = C->k[j];
    if (I->done[k] || I->slo[k] > hb || I->shi[k] < ha)
      continue;
    uint64_t e = end_of(I, k);
    if (e <= wb)
      continue;
    struct obst *o = &I->ob[(*no)++];
    o->lo = I->slo[k] > ha ? I->slo[k] : ha;
    o->hi = I->shi[k] < hb ? I->shi[k] : hb;
    o->off = I->off[k] > wb ? I->off[k] : wb;
    o->top = e;
  }
  for (uint32_t j = 0; j < *nf; j++)
    I->done[I->order[j]] = 0;
  I->work += 2 * (uint64_t)I->m; /* the scan and the clearing of done */
  if (*nf && wb) {
    struct obst *o = &I->ob[(*no)++];
    o->lo = ha;
    o->hi = hb;
    o->off = 0;
    o->top = wb;
  }
}

/* The ruin: a region or a column around a tensor above the level, its
 * free tensors in I->order (*nf) and its pieces in I->ob (*no). Returns
 * 1 when every tensor above the level is pinned (nothing can lower the
 * arena), else 0. */
static int ruin(struct lns *S, uint32_t *nf, uint32_t *no)
{
  struct imp *I = S->I;
  uint64_t e = S->top - I->p->lb;
  uint32_t n = 0;
  *nf = *no = 0;
  for (uint32_t j = 0; j < S->up.n; j++)
    if (I->p->t[I->gi[S->up.k[j]]].pinned == PLANNER_NOT_PINNED)
      I->order[n++] = S->up.k[j];
  I->work += I->m; /* counted as the scan of the tensors it stands for */
  if (n == 0)
    return 1;
  /* Half the time the tensor that reaches the top (the first of equals),
   * which must move for the arena to drop. */
  uint32_t kt = I->order[below(S, n)];
  if (below(S, 2)) {
    kt = S->kt;
    I->work += I->m; /* counted as a scan of the tensors */
  }
  uint32_t c = I->slo[kt] + (uint32_t)below(S, I->shi[kt] - I->slo[kt] + 1);
  uint32_t w = 1u << (LNS_W_LOG + below(S, LNS_W_LOGS));
  w += (uint32_t)below(S, w);
  if (below(S, 2)) {
    struct region R;
    R.a = c > w / 2 ? c - w / 2 : 0;
    R.b = R.a + w - 1 < I->S ? R.a + w - 1 : I->S - 1;
    R.wbase = S->top - scaled(e, below(S, LNS_DEPTHS), S->top);
    R.base = S->top;
    if (below(S, 2)) {
      R.base = S->top - scaled(e, below(S, LNS_BANDS), S->top);
      R.base = R.base > R.wbase ? R.base : R.wbase;
    }
    if (improve__region_collect_in(I, &R, S->deep.k, S->deep.n, nf, no))
      *nf = 0;
    return 0;
  }
  uint32_t cw = 1 + (uint32_t)below(S, LNS_COLUMN);
  uint32_t a = c > cw / 2 ? c - cw / 2 : 0;
  uint32_t b = a + cw - 1 < I->S ? a + cw - 1 : I->S - 1;
  uint64_t edge = S->top - scaled(e, below(S, LNS_DEPTHS), S->top);
  column(I, &S->deep, a, b, edge, nf, no);
  return 0;
}

/* The key of free tensor k in order v, smaller first. */
static uint64_t order_key(struct lns *S, uint32_t k, int v, unsigned noise)
{
  const struct imp *I = S->I;
  uint64_t size = I->p->t[I->gi[k]].size;
  uint64_t life = (uint64_t)(I->shi[k] - I->slo[k]) + 1, x;
  switch (v) {
  case LO_SIZE:
    x = size;
    break;
  case LO_LIFE:
    x = life;
    break;
  case LO_AREA:
    x = size <= LNS_KEY_CAP / life ? size * life : LNS_KEY_CAP;
    break;
  case LO_OFFSET:
    x = I->off[k];
    break;
  default:
    return below(S, LNS_KEY_CAP);
  }
  x = x < LNS_KEY_CAP ? x : LNS_KEY_CAP;
  /* Up to x / 2^noise more (noise 0 .. 3: 1/16, 1/4, 1 or none). */
  static const unsigned shift[] = {4, 2, 0};
  if (noise < 3)
    x += ((x >> shift[noise]) >> 10) * below(S, 1024);
  return v == LO_OFFSET ? x : 4 * LNS_KEY_CAP - x;
}

/* Places the free tensors I->order[0 .. nf-1] among the ns pieces of
 * the window's graph in a drawn order, and keeps the result when it
 * keeps the objective. Returns 0, 1 (effort) or ARENA_ENOMEM. */
static int recreate(struct lns *S, uint32_t nf, uint32_t ns)
{
  struct imp *I = S->I;
  struct rstate X;
  int rc = improve__rstate_init(&X, I, ns, nf);
  int v = (int)below(S, N_LORDERS), best = (int)below(S, 2);
  unsigned noise = (unsigned)below(S, 4);
  if (!rc && I->work + 2 * (uint64_t)nf + exact__sort_units(nf) > I->limit)
    rc = 1;
  if (!rc) {
    for (uint32_t j = 0; j < nf; j++) {
      X.key[3 * (size_t)j] = order_key(S, I->order[j], v, noise);
      X.key[3 * (size_t)j + 1] = 0;
      X.key[3 * (size_t)j + 2] = j;
    }
    qsort(X.key, nf, 3 * sizeof *X.key, improve__cmp_key3);
    for (uint32_t j = 0; j < nf; j++)
      X.ord[j] = (uint32_t)X.key[3 * (size_t)j + 2];
    I->work += nf + exact__sort_units(nf);
    uint64_t a = improve__place_order(&X, I, S->top + 1, best);
    if (a == 0)
      rc = 1;
    else if (a != UINT64_MAX) {
      double o0 = 0, o1 = 0;
      for (uint32_t j = 0; j < nf; j++) {
        o0 += overflow(S, I->order[j], I->off[I->order[j]]);
        o1 += overflow(S, I->order[j], X.e[ns + j].off);
      }
      I->work += 2 * (uint64_t)nf;
      if (o1 <= o0) {
        for (uint32_t j = 0; j < nf; j++)
          I->off[I->order[j]] = X.e[ns + j].off;
        moved(S, nf);
      }
    }
  }
  improve__rstate_free(&X);
  return rc;
}

/* One ruin and recreate. Returns 0, 1 (effort, or only pinned tensors
 * above the level), ARENA_ENOMEM or ARENA_ECANCELED. */
static int step(struct lns *S)
{
  struct imp *I = S->I;
  const struct planner_options *o = I->p->o;
  if (I->work + 4 * (uint64_t)I->m + I->S > I->limit)
    return 1;
  if (o->stop && o->stop(o->stop_ctx))
    return ARENA_ECANCELED; /* polled once a step, like once a window */
  uint32_t nf, no, ns = 0;
  if (ruin(S, &nf, &no))
    return 1;
  if (nf == 0)
    return 0;
  if (I->work + 2 * exact__sort_units(no) + no + (uint64_t)nf > I->limit)
    return 1;
  /* A region whose placements could take more than a share of the
   * budget is not planned: the search goes on with the next. */
  if ((uint64_t)nf * (nf + no) > S->budget / LNS_STEP_SHARE)
    return 0;
  improve__emit_obstacles(I, no, 0, &ns);
  return recreate(S, nf, ns);
}

int planner__lns(const struct planner__prob *p, uint64_t *offsets,
                 uint64_t *arena)
{
  struct imp I;
  uint64_t m = 0;
  for (size_t i = 0; i < p->n; i++)
    m += p->t[i].size != 0;
  int rc = improve__start(&I, p, 0, LNS_UNITS_PER_TENSOR * m);
  for (uint32_t k = 0; !rc && k < I.m; k++)
    I.off[k] = offsets[I.gi[k]];
  struct lns S = {&I, LNS_SEED ^ m, *arena, 0, I.limit,
                  {NULL, 0}, {NULL, 0}, NULL, 0};
  if (!rc) {
    size_t sz = (I.m + (size_t)1) * sizeof *S.tmp;
    S.up.k = malloc(sz);
    S.deep.k = malloc(sz);
    S.tmp = malloc(sz);
    if (!S.up.k || !S.deep.k || !S.tmp)
      rc = ARENA_ENOMEM;
  }
  set_level(&S);
  if (!rc) {
    scan_list(&I, &S.up, S.level);
    scan_list(&I, &S.deep, floor_of(&S));
    top_of_list(&S);
    S.top = *arena; /* the arena given, until a step moves a tensor */
  }
  while (!rc && S.top > p->lb)
    rc = step(&S);
  free(S.up.k);
  free(S.deep.k);
  free(S.tmp);
  if (rc >= 0 && S.top < *arena) {
    for (uint32_t k = 0; k < I.m; k++)
      offsets[I.gi[k]] = I.off[k];
    *arena = S.top;
  }
  improve__free(&I);
  return rc == 1 ? 0 : rc;
}

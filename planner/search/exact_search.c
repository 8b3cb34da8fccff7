/*
 * exact_search.c - the depth-first search of the exact planner: places
 * the tensors of one component within a capacity, or proves that no
 * placement fits.
 *
 * The search walks canonical placements with the pruning rules, the
 * decomposition into independent groups and the dead-end table described
 * in the DESIGN comment of exact.c. Every step is counted in work units
 * (X->work), which the effort of exact.c bounds.
 */
#include "exact_int.h"

#include <string.h>

/* Work units between polls of the stop callback and the effort
 * (exact__poll_stop()). */
#define EXACT_POLL_UNITS (1u << 16)

/* Lowest offset >= y, aligned for tensor k, that misses its pinned
 * obstacles (sorted by offset, so repeated passes settle quickly).
 * Shared with exact_stream.c (exact_int.h). */
uint64_t exact__fixpin(const struct ctx *X, uint32_t k, uint64_t y)
{
  uint64_t a = X->align[k], s = X->size[k];
  y = planner__align_up(y, a);
  int moved = 1;
  while (moved) {
    moved = 0;
    for (uint32_t j = X->pin_off[k]; j < X->pin_off[k + 1]; j++) {
      const struct pin *q = &X->pins[X->pinl[j]];
      if (y < q->top && y + s > q->off) {
        y = planner__align_up(q->top, a);
        moved = 1;
      }
    }
  }
  return y;
}

/* State of one search over one component. Work arrays live in the ctx;
 * indexes here are local to the component. */
struct srch {
  struct ctx *X;
  uint32_t a, m, S;            /* first global tensor, tensors, sections */
  const uint64_t *size, *align;/* shifted to the component */
  const uint32_t *slo, *shi;   /* idem */
  uint64_t cap;                /* bytes every top must stay within */
  uint32_t u;                  /* unplaced tensors: X->ul[0 .. u) */
  uint32_t ptr_n, ftr_n;       /* trail lengths */
  uint64_t maxrem;             /* >= max rem over the sections */
  uint64_t h1, h2;             /* fingerprint of the state, see tt */
  uint32_t flo, fhi;           /* sections of the current group */
};

/* Fingerprints. A state of the search is fixed by the unplaced set, the
 * floors of the sections that still have unplaced tensors, and the entry
 * key; pos, rem and every check derive from them. Two independent 64-bit
 * hashes of the first two parts are kept up to date by xor. */
static uint64_t zt(uint32_t i, uint64_t salt)
{
  return exact__mix64(((uint64_t)i << 1) ^ salt);
}

static uint64_t zs(uint32_t s, uint64_t floor, uint64_t salt)
{
  return exact__mix64(exact__mix64(((uint64_t)s << 1 | 1) ^ salt) + floor);
}

#define SALT1 0x9e3779b97f4a7c15ull
#define SALT2 0xd1b54a32d192ed03ull
#define SALT3 0x8cb92ba72f3d8dd7ull

/* Undoes the placement made from level L, whole or partial: the trails
 * record exactly what was changed. */
static void s_undo(struct srch *S, const struct lvl *L)
{
  struct ctx *X = S->X;
  uint32_t c = L->c;
  uint64_t sz = S->size[c];
  uint32_t nf = S->ftr_n - L->fmark;
  for (uint32_t j = 0; j < nf; j++) {
    uint32_t s = S->slo[c] + j;
    X->floor[s] = X->ftr[L->fmark + j];
    X->rem[s] += sz;
  }
  S->ftr_n = L->fmark;
  while (S->ptr_n > L->pmark) {
    S->ptr_n--;
    X->pos[X->ptr_i[S->ptr_n]] = X->ptr_v[S->ptr_n];
  }
  S->maxrem = L->maxrem;
  S->h1 = L->h1;
  S->h2 = L->h2;
  S->u++; /* c still sits at X->ul[u - 1] */
}

struct job {
  uint64_t r, s; /* release offset and size, bytes */
};

/* In-place heapsort by release: no allocation on the search's hot path
 * (qsort may allocate and copy), and the work it does is counted. */
static void sift_jobs(struct job *jb, uint32_t i, uint32_t n)
{
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= n)
      return;
    if (c + 1 < n && jb[c + 1].r > jb[c].r)
      c++;
    if (jb[c].r <= jb[i].r)
      return;
    struct job t = jb[i];
    jb[i] = jb[c];
    jb[c] = t;
    i = c;
  }
}

static void sort_jobs(struct job *jb, uint32_t n)
{
  for (uint32_t i = n / 2; i-- > 0;)
    sift_jobs(jb, i, n);
  for (uint32_t end = n; end-- > 1;) {
    struct job t = jb[0];
    jb[0] = jb[end];
    jb[end] = t;
    sift_jobs(jb, 0, end);
  }
}

/* Section s holds tensors that all overlap in time, so they stack without
 * overlap, each no lower than its release max(pos, x). Ignoring alignment
 * and pins, stacking in release order gives the lowest possible top (the
 * earliest-release rule for one machine). Returns 0 when even that top
 * exceeds the capacity. */
static int erd_ok(struct srch *S, uint32_t s, uint64_t x)
{
  struct ctx *X = S->X;
  uint64_t rem = X->rem[s], cap = S->cap;
  if (!rem)
    return 1;
  if (rem > cap)
    return 0;
  /* The stack ends at max over releases r of r plus the sizes released
   * at r or later. Only a release above thr = cap - rem can push that
   * over cap, and then only the (late) tensors released at or after it
   * count: so only late tensors are collected and sorted. */
  uint64_t thr = cap - rem, lo = UINT64_MAX;
  struct job *jb = (struct job *)(void *)X->rel;
  uint32_t n = 0, seen = 0;
  for (uint32_t k = X->sl_off[s]; k < X->sl_off[s + 1]; k++) {
    uint32_t b = X->sl[k];
    if (X->upos[b] >= S->u)
      continue;
    seen++;
    uint64_t r = X->pos[b] > x ? X->pos[b] : x;
    if (r < lo)
      lo = r;
    if (r > thr) {
      jb[n].r = r;
      jb[n].s = S->size[b];
      n++;
    }
  }
  X->work += seen;
  if (lo > thr)
    return 0; /* even the earliest release leaves too little room */
  if (n <= 16) {
    for (uint32_t i = 1; i < n; i++) {
      struct job v = jb[i];
      uint32_t j = i;
      while (j > 0 && jb[j - 1].r > v.r) {
        jb[j] = jb[j - 1];
        j--;
      }
      jb[j] = v;
    }
  } else {
    sort_jobs(jb, n);
    X->work += 2 * exact__sort_units(n); /* ~2 n log2 n sift steps */
  }
  uint64_t acc = 0;
  for (uint32_t i = n; i-- > 0;) {
    acc += jb[i].s;
    if (jb[i].r + acc > cap)
      return 0;
  }
  return 1;
}

/* Places tensor c at pos[c] and propagates. Returns 0 when a check fails
 * (the caller then undoes), 1 otherwise. */
static int s_place(struct srch *S, struct lvl *L, uint32_t c)
{
  struct ctx *X = S->X;
  uint64_t x = X->pos[c], sz = S->size[c], top = x + sz, cap = S->cap;
  L->c = c;
  L->x = x;
  L->pmark = S->ptr_n;
  L->fmark = S->ftr_n;
  L->maxrem = S->maxrem;
  L->h1 = S->h1;
  L->h2 = S->h2;
  S->h1 ^= zt(c, SALT1);
  S->h2 ^= zt(c, SALT2);
  uint32_t j = X->upos[c], last = X->ul[S->u - 1];
  X->ul[j] = last;
  X->upos[last] = j;
  X->ul[S->u - 1] = c;
  X->upos[c] = S->u - 1;
  S->u--;
  X->work += (S->shi[c] - S->slo[c]) + 1 +
             (X->adj_off[S->a + c + 1] - X->adj_off[S->a + c]);
  /* Sections: the floor becomes top, and what is left must fit above. */
  for (uint32_t s = S->slo[c]; s <= S->shi[c]; s++) {
    X->ftr[S->ftr_n++] = X->floor[s];
    S->h1 ^= zs(s, X->floor[s], SALT1);
    S->h2 ^= zs(s, X->floor[s], SALT2);
    X->floor[s] = top;
    X->rem[s] -= sz;
    if (X->rem[s]) {
      S->h1 ^= zs(s, top, SALT1);
      S->h2 ^= zs(s, top, SALT2);
    }
    if (top + X->rem[s] > cap)
      return 0;
  }
  /* Neighbours in time can now start no lower than top. */
  uint32_t lo = S->slo[c], hi = S->shi[c];
  const uint32_t *adj = X->adj;
  uint32_t k1 = X->adj_off[S->a + c + 1];
  for (uint32_t k = X->adj_off[S->a + c]; k < k1; k++) {
    uint32_t b = adj[k];
    if (X->upos[b] >= S->u)
      continue;
    uint64_t np = planner__align_up(top, S->align[b]);
    if (np <= X->pos[b])
      continue;
    if (X->npins)
      np = exact__fixpin(X, S->a + b, np);
    X->ptr_i[S->ptr_n] = b;
    X->ptr_v[S->ptr_n++] = X->pos[b];
    X->pos[b] = np;
    if (np + S->size[b] > cap)
      return 0;
    if (S->slo[b] < lo)
      lo = S->slo[b];
    if (S->shi[b] > hi)
      hi = S->shi[b];
  }
  /* Everything still to come sits at or above x. */
  if (x + S->maxrem > cap) {
    uint64_t mr = 0;
    X->work += S->S;
    int bad = 0;
    for (uint32_t s = 0; s < S->S; s++) {
      uint64_t r = X->rem[s];
      if (r > mr)
        mr = r;
      if (X->floor[s] < x && x + r > cap && s >= S->flo && s <= S->fhi)
        bad = 1;
    }
    S->maxrem = mr;
    if (bad)
      return 0;
  }
  /* Sections whose tensors moved: check they still stack within cap. */
  for (uint32_t s = lo; s <= hi; s++)
    if (!erd_ok(S, s, x))
      return 0;
  return 1;
}

/* Splits the unplaced tensors whose first section lies in [lo, hi] into
 * groups that share no point in time; writes their section ranges to gr
 * (pairs) and returns the count, 0 when none is unplaced. */
static uint32_t split(const struct srch *S, uint32_t lo, uint32_t hi,
                      uint32_t *gr)
{
  const struct ctx *X = S->X;
  uint32_t ng = 0, reach = 0;
  for (uint32_t k = 0; k < S->m; k++) {
    uint32_t i = X->bys[k];
    if (S->slo[i] < lo)
      continue;
    if (S->slo[i] > hi)
      break;
    if (X->upos[i] >= S->u)
      continue;
    if (ng == 0 || S->slo[i] > reach) {
      gr[2 * ng] = S->slo[i];
      ng++;
      reach = S->shi[i];
    } else if (S->shi[i] > reach) {
      reach = S->shi[i];
    }
    gr[2 * ng - 1] = reach;
  }
  return ng;
}

/* A split of the group [lo, hi] under a dynamic order: ranks its
 * unplaced tensors anew, with each one's peak taken from the bytes still
 * unplaced in its sections (the totals of the subproblem the groups now
 * form). Returns a nonzero hash of the set ranked, or 0 when the rank
 * trail had no room and the ranks stay as they were. */
static uint64_t rerank_scope(struct srch *S, uint32_t lo, uint32_t hi)
{
  struct ctx *X = S->X;
  uint32_t n = 0;
  uint64_t h = 0;
  for (uint32_t k = 0; k < S->u; k++) {
    uint32_t i = X->ul[k];
    if (S->slo[i] < lo || S->slo[i] > hi)
      continue;
    uint64_t pk = 0;
    for (uint32_t s = S->slo[i]; s <= S->shi[i]; s++)
      if (X->rem[s] > pk)
        pk = X->rem[s];
    X->work += S->shi[i] - S->slo[i] + 4;
    X->tmp[n] = i;
    X->rpk[n] = pk;
    h ^= zt(i, SALT3);
    n++;
  }
  X->work += exact__sort_units(n); /* the sort */
  if (!exact__rerank(X, S->a, X->tmp, X->rpk, n))
    return 0;
  return h | 1;
}

/* Hash of the decomposition stack: the search below a state depends on
 * it too, so dead ends are remembered per stack. */
static uint64_t dec_hash(const struct ctx *X, uint32_t nd)
{
  uint64_t h = 0;
  for (uint32_t k = 0; k < nd; k++)
    h ^= exact__mix64(X->dec[k].h + X->dec[k].gi * 0x9e3779b97f4a7c15ull + k);
  return h;
}

/* Where the walk stands besides the levels: the decompositions open, the
 * group ranges they use and the dead-end table's generation. Helpers
 * that take it are inlined into exact__search(), which keeps it in
 * registers. */
struct walk {
  uint32_t d;     /* current level: X->lv[d] */
  uint32_t nd;    /* decompositions open: X->dec[0 .. nd) */
  uint32_t ngr;   /* group range entries in use: X->gr[0 .. ngr) */
  uint32_t grcap; /* group range entries in all */
  uint64_t fh;    /* dec_hash() of the open decompositions */
  uint32_t gen;   /* this call's generation in X->tt */
};

/* Binds S to component c of X and the capacity cap. */
static void s_bind(struct srch *S, struct ctx *X, uint32_t c, uint64_t cap)
{
  memset(S, 0, sizeof *S);
  S->X = X;
  S->a = X->cb[c];
  S->m = X->cb[c + 1] - S->a;
  S->S = X->sb[c + 1] - X->sb[c];
  S->size = X->size + S->a;
  S->align = X->align + S->a;
  S->slo = X->slo + S->a;
  S->shi = X->shi + S->a;
  S->cap = cap;
}

/* Sets up the empty placement: every tensor unplaced at its lowest
 * offset, every section at floor 0 with its initial rem, and their
 * fingerprint. Returns R_INFEAS when a tensor or a section cannot fit
 * within cap even so, else R_FOUND. */
static int s_reset(struct srch *S, const uint64_t *rem0)
{
  struct ctx *X = S->X;
  uint64_t cap = S->cap;
  for (uint32_t i = 0; i < S->m; i++) {
    X->ul[i] = i;
    X->upos[i] = i;
    X->pos[i] = exact__fixpin(X, S->a + i, 0);
    if (X->pos[i] + S->size[i] > cap)
      return R_INFEAS;
  }
  for (uint32_t s = 0; s < S->S; s++) {
    X->floor[s] = 0;
    X->rem[s] = rem0[s];
    if (rem0[s] > cap)
      return R_INFEAS;
    if (rem0[s] > S->maxrem)
      S->maxrem = rem0[s];
  }
  S->u = S->m;
  for (uint32_t i = 0; i < S->m; i++) {
    S->h1 ^= zt(i, SALT1);
    S->h2 ^= zt(i, SALT2);
  }
  for (uint32_t s = 0; s < S->S; s++)
    if (rem0[s]) {
      S->h1 ^= zs(s, 0, SALT1);
      S->h2 ^= zs(s, 0, SALT2);
    }
  return R_FOUND;
}

/* Starts a new generation of the dead-end table (its older entries read
 * as empty) and returns it. */
static uint32_t next_gen(struct ctx *X)
{
  uint32_t gen = ++X->gen;
  if (gen == 0) { /* wrapped: clear the table once */
    memset(X->tt, 0, X->tt_size * sizeof *X->tt);
    gen = X->gen = 1;
  }
  return gen;
}

/* Live lists per section, and tensors by first section, by counting. */
static void live_lists(const struct srch *S)
{
  struct ctx *X = S->X;
  memset(X->sl_off, 0, ((size_t)S->S + 1) * sizeof *X->sl_off);
  for (uint32_t i = 0; i < S->m; i++)
    for (uint32_t s = S->slo[i]; s <= S->shi[i]; s++)
      X->sl_off[s + 1]++;
  for (uint32_t s = 0; s < S->S; s++)
    X->sl_off[s + 1] += X->sl_off[s];
  for (uint32_t i = 0; i < S->m; i++)
    for (uint32_t s = S->slo[i]; s <= S->shi[i]; s++)
      X->sl[X->sl_off[s]++] = i;
  for (uint32_t s = S->S; s > 0; s--)
    X->sl_off[s] = X->sl_off[s - 1];
  X->sl_off[0] = 0;
  /* Tensors are in first-use order within the component already. */
  for (uint32_t i = 0; i < S->m; i++)
    X->bys[i] = i;
}

/* Section range of the group being searched: the current group of the
 * innermost decomposition, or all sections when none is open. */
static inline void cur_group(const struct srch *S, const struct walk *W,
                             uint32_t *lo, uint32_t *hi)
{
  const struct ctx *X = S->X;
  if (W->nd) {
    const struct dec *D = &X->dec[W->nd - 1];
    *lo = X->gr[D->g0 + 2 * D->gi];
    *hi = X->gr[D->g0 + 2 * D->gi + 1];
  } else {
    *lo = 0;
    *hi = S->S - 1;
  }
}

/* The current group has no unplaced tensor left: moves level L on to the
 * next group of the innermost decomposition, or closes that
 * decomposition. Returns 0 when none is open: everything is placed. */
static inline int close_group(struct srch *S, struct walk *W, struct lvl *L)
{
  struct ctx *X = S->X;
  if (W->nd == 0)
    return 0;
  struct dec *D = &X->dec[W->nd - 1];
  if (++D->gi < D->ng) {
    L->gstart = 1;
    L->ex = D->x0;
    L->er = D->r0;
    W->fh = dec_hash(X, W->nd);
    return 1;
  }
  W->ngr = D->g0;
  exact__rank_restore(X, D->rmark);
  W->nd--;
  W->fh = dec_hash(X, W->nd);
  return 1;
}

/* The group [*lo, *hi] fell apart at level L into the ng groups split()
 * wrote at X->gr + W->ngr: opens a decomposition over them (re-ranking
 * them under a dynamic order) and sets [*lo, *hi] to the first. */
static inline void open_dec(struct srch *S, struct walk *W, struct lvl *L,
                            uint32_t ng, uint32_t *lo, uint32_t *hi)
{
  struct ctx *X = S->X;
  struct dec *D = &X->dec[W->nd++];
  D->level = W->d;
  D->rmark = X->rtn;
  uint64_t scope = X->dyn ? rerank_scope(S, *lo, *hi) : 0;
  if (scope) {
    /* Fresh ranks: the groups start over from key (0, -1), and the hash
     * of the set ranked keeps the dead-end table apart from states
     * ranked otherwise. */
    L->ex = 0;
    L->er = -1;
  }
  D->x0 = L->ex;
  D->r0 = L->er;
  D->g0 = W->ngr;
  D->ng = ng;
  D->gi = 0;
  D->h = exact__mix64(L->ex ^ ((uint64_t)L->er << 40) ^ ng);
  for (uint32_t k = 0; k < ng; k++)
    D->h ^= exact__mix64(((uint64_t)X->gr[W->ngr + 2 * k] << 32) +
                         X->gr[W->ngr + 2 * k + 1] + k);
  D->h ^= scope;
  W->ngr += 2 * ng;
  W->fh = dec_hash(X, W->nd);
  *lo = X->gr[D->g0];
  *hi = X->gr[D->g0 + 1];
}

/* On entering level L: finishes the groups that are done and splits the
 * current one if it fell apart, then sets S->flo, S->fhi to the group to
 * search. Returns 1 when every tensor is placed (S->flo, S->fhi kept). */
static inline int enter_group(struct srch *S, struct walk *W, struct lvl *L)
{
  struct ctx *X = S->X;
  for (;;) {
    uint32_t lo, hi;
    cur_group(S, W, &lo, &hi);
    uint32_t room = W->grcap - W->ngr >= 2 ? (W->grcap - W->ngr) / 2 : 0;
    uint32_t ng = room ? split(S, lo, hi, X->gr + W->ngr) : 1;
    if (ng == 0 && !room)
      ng = 1;
    if (ng == 0) {
      if (!close_group(S, W, L))
        return 1;
      continue;
    }
    if (ng >= 2 && W->nd < S->m)
      open_dec(S, W, L, ng, &lo, &hi);
    S->flo = lo;
    S->fhi = hi;
    return 0;
  }
}

/* Sets L->t1: the lowest top of an unplaced tensor of the group. */
static inline void level_t1(const struct srch *S, struct lvl *L)
{
  const struct ctx *X = S->X;
  uint64_t t = UINT64_MAX;
  for (uint32_t k = 0; k < S->u; k++) {
    uint32_t i = X->ul[k];
    if (S->slo[i] < S->flo || S->slo[i] > S->fhi)
      continue;
    uint64_t v = X->pos[i] + S->size[i];
    if (v < t)
      t = v;
  }
  L->t1 = t;
}

/* Sets L->only: the lowest section, counting the last offset as a floor.
 * If it has no slack, the point at its floor e must be covered before
 * anything goes higher: the next placement is at e, by a tensor of rank
 * no higher than the last tensor that could cover the point (same-offset
 * placements come in rank order). None: dead end (L->t1 = 0). */
static inline void level_only(const struct srch *S, struct lvl *L)
{
  const struct ctx *X = S->X;
  const uint32_t *rank = X->rank;
  L->only = NONE;
  uint64_t e = UINT64_MAX;
  uint32_t sl = NONE;
  for (uint32_t s2 = S->flo; s2 <= S->fhi; s2++) {
    if (!X->rem[s2])
      continue;
    uint64_t f = X->floor[s2] > L->ex ? X->floor[s2] : L->ex;
    if (f < e) {
      e = f;
      sl = s2;
    }
  }
  if (sl != NONE && e + X->rem[sl] >= S->cap) {
    int64_t maxr = -1;
    for (uint32_t k = X->sl_off[sl]; k < X->sl_off[sl + 1]; k++) {
      uint32_t b = X->sl[k];
      if (X->upos[b] >= S->u || X->pos[b] != e)
        continue;
      if (e == L->ex && (int64_t)rank[b] <= L->er)
        continue;
      if ((int64_t)rank[b] > maxr)
        maxr = rank[b];
    }
    if (maxr < 0)
      L->t1 = 0;
    L->only = maxr < 0 ? 0 : (uint32_t)maxr;
    L->onlyp = e;
  }
}

/* A remembered dead end? Then level L has no candidate (L->t1 = 0): it
 * fails below, without a new entry. */
static inline void level_tt(const struct srch *S, const struct walk *W,
                            struct lvl *L)
{
  const struct ctx *X = S->X;
  const struct ttent *te = &X->tt[(S->h1 ^ W->fh) & (X->tt_size - 1)];
  if (W->d > 0 && te->gen == W->gen && te->h1 == (S->h1 ^ W->fh) &&
      te->h2 == (S->h2 ^ W->fh) &&
      (L->ex > te->kpos || (L->ex == te->kpos && L->er >= te->krank)))
    L->t1 = 0;
}

/* Next candidate of level L, or NONE; its key in *bp, *bs. Allowed: key
 * (pos, rank) above the entry key and pos below t1; tried in key order.
 * The best key starts above every allowed one (pos < t1 <= UINT64_MAX),
 * so the first allowed candidate always replaces it. */
static inline uint32_t next_cand(const struct srch *S, const struct lvl *L,
                                 uint64_t *bp, uint64_t *bs)
{
  const struct ctx *X = S->X;
  const uint32_t *rank = X->rank;
  uint32_t best = NONE;
  uint64_t bpos = UINT64_MAX, bsec = UINT64_MAX;
  for (uint32_t k = 0; k < S->u; k++) {
    uint32_t i = X->ul[k];
    uint64_t p = X->pos[i];
    if (p >= L->t1 || p < L->kpos)
      continue;
    if (S->slo[i] < S->flo || S->slo[i] > S->fhi)
      continue;
    uint32_t r = rank[i];
    if (p == L->ex && (int64_t)r <= L->er)
      continue;
    if (X->twin[i] != NONE && X->upos[X->twin[i]] < S->u)
      continue;
    if (L->only != NONE && (p != L->onlyp || r > L->only))
      continue;
    uint64_t sec = r;
    if (p == L->kpos && (int64_t)sec <= L->krank)
      continue;
    if (p < bpos || (p == bpos && sec < bsec)) {
      best = i;
      bpos = p;
      bsec = sec;
    }
  }
  *bp = bpos;
  *bs = bsec;
  return best;
}

/* Remembers that the current state, entered with level L's key, is a
 * dead end. */
static inline void tt_store(const struct srch *S, const struct walk *W,
                            const struct lvl *L)
{
  struct ctx *X = S->X;
  struct ttent *te = &X->tt[(S->h1 ^ W->fh) & (X->tt_size - 1)];
  te->h1 = S->h1 ^ W->fh;
  te->h2 = S->h2 ^ W->fh;
  te->kpos = L->ex;
  te->krank = L->er;
  te->gen = W->gen;
}

/* Level W->d failed. A group other than the first failing fails its
 * whole decomposition: jump back to the level that split, which fails in
 * turn. Otherwise steps back one level. Returns 1 when level 0 failed:
 * no placement exists. */
static inline int backtrack(struct srch *S, struct walk *W)
{
  struct ctx *X = S->X;
  struct lvl *lv = X->lv;
  int write = lv[W->d].t1 != 0;
  for (;;) {
    if (write && W->d > 0 && !lv[W->d].gstart)
      tt_store(S, W, &lv[W->d]);
    while (W->nd > 0 && X->dec[W->nd - 1].level == W->d) {
      W->ngr = X->dec[W->nd - 1].g0;
      exact__rank_restore(X, X->dec[W->nd - 1].rmark);
      W->nd--;
    }
    if (lv[W->d].gstart) {
      const struct dec *D = &X->dec[W->nd - 1];
      uint32_t target = D->level;
      while (W->d > target) {
        W->d--;
        s_undo(S, &lv[W->d]);
      }
      W->ngr = D->g0;
      exact__rank_restore(X, D->rmark);
      W->nd--;
      W->fh = dec_hash(X, W->nd);
      write = 0;
      continue; /* level target failed in turn */
    }
    W->fh = dec_hash(X, W->nd);
    if (W->d == 0)
      return 1;
    W->d--;
    s_undo(S, &lv[W->d]);
    return 0;
  }
}

/* Depth-first search for a placement of component c within cap, with at
 * most `limit` nodes. X->rank must hold the order. On R_FOUND the local
 * offsets are in X->out. */
int exact__search(struct ctx *X, uint32_t c, uint64_t cap, uint64_t limit)
{
  struct srch S;
  s_bind(&S, X, c, cap);
  /* Callers may run many short searches in a row: poll on every entry. */
  int rc = exact__poll_stop(X);
  if (rc != R_FOUND)
    return rc;
  if ((rc = s_reset(&S, X->rem0 + X->sb[c])) != R_FOUND)
    return rc;
  struct walk W = {0, 0, 0, 4 * (S.S + S.m + 1), 0, next_gen(X)};
  live_lists(&S);
  const uint32_t *rank = X->rank;
  struct lvl *lv = X->lv;
  uint64_t nodes = 0, next_poll = X->work + EXACT_POLL_UNITS;
  lv[0].ex = 0;
  lv[0].er = -1;
  lv[0].gstart = 0;
  int entering = 1;
  for (;;) {
    struct lvl *L = &lv[W.d];
    /* Every pass scans the unplaced tensors for the next candidate;
     * failed levels count too, so the effort tracks the work done. */
    X->work += S.u + 8;
    if (entering) {
      entering = 0;
      int found = enter_group(&S, &W, L);
      /* Entering also splits (all tensors), scans the unplaced tensors
       * for t1 and the group's sections for the lowest one. */
      X->work += S.m + S.u + (S.fhi - S.flo) + 16;
      if (found) {
        for (uint32_t k = 0; k < W.d; k++)
          X->out[lv[k].c] = lv[k].x;
        rc = R_FOUND;
        break;
      }
      L->kpos = L->ex;
      L->krank = -1;
      level_t1(&S, L);
      level_only(&S, L);
      level_tt(&S, &W, L);
    }
    uint64_t bp, bs;
    uint32_t best = next_cand(&S, L, &bp, &bs);
    if (best == NONE) {
      if (backtrack(&S, &W)) {
        rc = R_INFEAS;
        break;
      }
      /* Restore the group of level d (it may differ after a pop). */
      cur_group(&S, &W, &S.flo, &S.fhi);
      continue;
    }
    L->kpos = bp;
    L->krank = (int64_t)bs;
    if (++nodes > limit) {
      rc = R_LIMIT;
      break;
    }
    if (X->work >= next_poll) {
      next_poll = X->work + EXACT_POLL_UNITS;
      if ((rc = exact__poll_stop(X)) != R_FOUND)
        break;
    }
    if (!s_place(&S, L, best)) {
      s_undo(&S, L);
      continue;
    }
    W.d++;
    lv[W.d].ex = L->x;
    lv[W.d].er = rank[best];
    lv[W.d].gstart = 0;
    entering = 1;
  }
  X->nodes += nodes;
  return rc;
}

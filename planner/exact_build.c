/*
 * exact_build.c - preprocessing for the exact planner: builds the struct
 * ctx the search works on from a problem.
 *
 * Free tensors are sorted by first use and cut into components; pinned
 * tensors become obstacles sorted by offset; for every component come the
 * sections, their initial rem, each tensor's overlap list and obstacles,
 * and the granule; then the work arrays, sized for the largest component
 * that fits the memory cap. See the DESIGN comment in exact.c.
 *
 * The setup is part of the effort: every loop step, sort entry and table
 * entry is counted in X->work like the search's, and the budget and the
 * stop callback are polled between the phases, so a tiny effort on a
 * large graph stops before the expensive phases instead of after them.
 */
#include "exact_int.h"

#include <stdlib.h>
#include <string.h>

/* Total adjacency entries plus section incidences searched at most; each
 * costs 4 to 12 bytes. 4M keeps the search under ~64 MB. */
#define EXACT_TRAIL_MAX (1u << 20) /* rank trail entries at most */
#define EXACT_MAX_PAIRS (1u << 22)

static uint64_t gcd64(uint64_t a, uint64_t b)
{
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

struct ent {
  int64_t first, last;
  uint32_t gi;
  uint32_t pin; /* NONE for free tensors, else index into pins */
};

static int cmp_ent(const void *a, const void *b)
{
  const struct ent *x = a, *y = b;
  if (x->first != y->first)
    return x->first < y->first ? -1 : 1;
  if (x->last != y->last)
    return x->last < y->last ? -1 : 1;
  return x->gi < y->gi ? -1 : x->gi > y->gi;
}

static int cmp_pin(const void *a, const void *b)
{
  const struct pin *x = a, *y = b;
  if (x->off != y->off)
    return x->off < y->off ? -1 : 1;
  return x->top < y->top ? -1 : x->top > y->top;
}

static int cmp_i64(const void *a, const void *b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static uint32_t sec_find(const int64_t *pt, uint32_t npt, int64_t t)
{
  uint32_t lo = 0, hi = npt;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (pt[mid] < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

void exact__free(struct ctx *X)
{
  free(X->gi); free(X->size); free(X->align); free(X->slo); free(X->shi);
  free(X->adj_off); free(X->adj); free(X->pin_off); free(X->pinl);
  free(X->cb); free(X->sb); free(X->rem0); free(X->carena);
  free(X->searchable); free(X->peak); free(X->pins);
  free(X->pos); free(X->floor); free(X->rem); free(X->ptr_v); free(X->ftr);
  free(X->out); free(X->ul); free(X->upos); free(X->ptr_i); free(X->rank);
  free(X->tmp); free(X->lv); free(X->tt); free(X->dec); free(X->gr);
  free(X->bys); free(X->twin); free(X->sl_off); free(X->sl); free(X->rel);
  free(X->rtr_i); free(X->rtr_v); free(X->rks); free(X->rpk);
}

/* Builds everything the search needs. Returns 0 or ARENA_ENOMEM. */
int exact__build(struct ctx *X)
{
  const struct planner__prob *p = X->p;
  size_t n = p->n;
  uint32_t K = 0, P = 0;
  for (size_t i = 0; i < n; i++) {
    if (p->t[i].size == 0)
      continue;
    if (p->t[i].pinned != PLANNER_NOT_PINNED)
      P++;
    else
      K++;
  }
  X->K = K;
  X->npins = P;
  X->work += 3 * (uint64_t)n + exact__sort_units(P) +
             exact__sort_units(K + P);
  struct ent *e = malloc((K + P + 1) * sizeof *e);
  X->pins = malloc((P + 1) * sizeof *X->pins);
  if (!e || !X->pins) {
    free(e);
    return ARENA_ENOMEM;
  }
  /* Pinned obstacles sorted by offset. */
  uint32_t np = 0;
  uint64_t g = 0;
  for (size_t i = 0; i < n; i++) {
    const struct planner_tensor *t = &p->t[i];
    if (t->size == 0 || t->pinned == PLANNER_NOT_PINNED)
      continue;
    X->pins[np].off = (uint64_t)t->pinned;
    X->pins[np].top = (uint64_t)t->pinned + t->size;
    if (X->pins[np].top > X->pintop)
      X->pintop = X->pins[np].top;
    g = gcd64(g, gcd64((uint64_t)t->pinned, t->size));
    np++;
  }
  qsort(X->pins, P, sizeof *X->pins, cmp_pin);
  /* Entries: every non-empty tensor, free or pinned. */
  uint32_t ne = 0;
  for (size_t i = 0; i < n; i++) {
    const struct planner_tensor *t = &p->t[i];
    if (t->size == 0)
      continue;
    e[ne].first = t->first;
    e[ne].last = t->last;
    e[ne].gi = (uint32_t)i;
    e[ne].pin = NONE;
    if (t->pinned != PLANNER_NOT_PINNED) {
      e[ne].pin = 0; /* resolved to an index of X->pins below */
    } else {
      g = gcd64(g, t->size);
    }
    ne++;
  }
  /* Resolve pinned entries to indexes of X->pins with equal ranges. Each
   * obstacle is only a byte range, so sharing an index between tensors of
   * the same range is harmless. */
  for (uint32_t k = 0; k < ne; k++) {
    if (e[k].pin == NONE)
      continue;
    const struct planner_tensor *t = &p->t[e[k].gi];
    struct pin key = {(uint64_t)t->pinned, (uint64_t)t->pinned + t->size};
    uint32_t lo = 0, hi = P;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (cmp_pin(&X->pins[mid], &key) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    e[k].pin = lo;
  }
  qsort(e, ne, sizeof *e, cmp_ent);
  int rc = exact__poll_stop(X);
  if (rc != R_FOUND) {
    free(e);
    return rc;
  }
  if (g == 0)
    g = 1;
  for (size_t i = 0; i < n; i++) {
    uint64_t a = p->align[i];
    if (p->t[i].size && g % a)
      g = gcd64(g, a);
  }
  X->g = g;

  X->gi = malloc((K + 1) * sizeof *X->gi);
  X->size = malloc((K + 1) * sizeof *X->size);
  X->align = malloc((K + 1) * sizeof *X->align);
  X->slo = malloc((K + 1) * sizeof *X->slo);
  X->shi = malloc((K + 1) * sizeof *X->shi);
  X->adj_off = calloc(K + 2, sizeof *X->adj_off);
  X->pin_off = calloc(K + 2, sizeof *X->pin_off);
  X->cb = malloc((K + 2) * sizeof *X->cb);
  X->sb = malloc((K + 2) * sizeof *X->sb);
  X->carena = calloc(K + 1, sizeof *X->carena);
  X->searchable = calloc(K + 1, 1);
  X->peak = calloc(K + 1, sizeof *X->peak);
  X->rem0 = calloc(2 * (size_t)K + 2, sizeof *X->rem0);
  uint32_t *fidx = malloc((K + P + 1) * sizeof *fidx); /* entry -> free k */
  int64_t *pt = malloc((2 * (size_t)K + 2) * sizeof *pt);
  if (!X->gi || !X->size || !X->align || !X->slo || !X->shi ||
      !X->adj_off || !X->pin_off || !X->cb || !X->sb || !X->carena ||
      !X->searchable || !X->peak || !X->rem0 || !fidx || !pt) {
    free(e); free(fidx); free(pt);
    return ARENA_ENOMEM;
  }
  uint32_t k = 0;
  for (uint32_t j = 0; j < ne; j++) {
    if (e[j].pin != NONE) {
      fidx[j] = NONE;
      continue;
    }
    fidx[j] = k;
    X->gi[k] = e[j].gi;
    X->size[k] = p->t[e[j].gi].size;
    X->align[k] = p->align[e[j].gi];
    k++;
  }
  /* Components over free tensors in first-use order. */
  X->nc = 0;
  int64_t reach = INT64_MIN;
  k = 0;
  for (uint32_t j = 0; j < ne; j++) {
    if (e[j].pin != NONE)
      continue;
    if (k == 0 || e[j].first > reach)
      X->cb[X->nc++] = k;
    if (k == 0 || e[j].last > reach)
      reach = e[j].last;
    k++;
  }
  X->cb[X->nc] = K;

  /* Overlap pairs: a forward sweep over entries in first-use order. Two
   * passes, counting then filling; each step is a work unit. */
  uint64_t pairs = 0, pinpairs = 0, steps = 4 * (uint64_t)K + ne;
  for (uint32_t j = 0; j < ne; j++) {
    for (uint32_t q = j + 1; q < ne && e[q].first <= e[j].last; q++) {
      steps++;
      int fj = e[j].pin == NONE, fq = e[q].pin == NONE;
      if (fj && fq) {
        X->adj_off[fidx[j] + 1]++;
        X->adj_off[fidx[q] + 1]++;
        pairs += 2;
      } else if (fj != fq) {
        X->pin_off[(fj ? fidx[j] : fidx[q]) + 1]++;
        pinpairs++;
      }
    }
    if (pairs > 2u * EXACT_MAX_PAIRS || pinpairs > EXACT_MAX_PAIRS)
      break; /* too many: handled below by skipping every component */
  }
  int too_many = pairs > 2u * EXACT_MAX_PAIRS || pinpairs > EXACT_MAX_PAIRS;
  X->work += 2 * steps; /* this pass, and the same again to fill below */
  if ((rc = exact__poll_stop(X)) != R_FOUND) {
    free(e); free(fidx); free(pt);
    return rc;
  }
  if (too_many) {
    memset(X->adj_off, 0, (K + 2) * sizeof *X->adj_off);
    memset(X->pin_off, 0, (K + 2) * sizeof *X->pin_off);
    pairs = pinpairs = 0;
  }
  for (uint32_t q = 0; q < K; q++) {
    X->adj_off[q + 1] += X->adj_off[q];
    X->pin_off[q + 1] += X->pin_off[q];
  }
  X->adj = malloc((pairs + 1) * sizeof *X->adj);
  X->pinl = malloc((pinpairs + 1) * sizeof *X->pinl);
  uint32_t *fill = malloc((K + 1) * sizeof *fill);
  uint32_t *pfill = malloc((K + 1) * sizeof *pfill);
  if (!X->adj || !X->pinl || !fill || !pfill) {
    free(e); free(fidx); free(pt); free(fill); free(pfill);
    return ARENA_ENOMEM;
  }
  memcpy(fill, X->adj_off, K * sizeof *fill);
  memcpy(pfill, X->pin_off, K * sizeof *pfill);
  /* Component of each free tensor, to store local indexes. */
  uint32_t *comp = X->ul = malloc((K + 1) * sizeof *comp);
  if (!comp) {
    free(e); free(fidx); free(pt); free(fill); free(pfill);
    return ARENA_ENOMEM;
  }
  for (uint32_t c = 0; c < X->nc; c++)
    for (uint32_t q = X->cb[c]; q < X->cb[c + 1]; q++)
      comp[q] = c;
  if (!too_many) {
    for (uint32_t j = 0; j < ne; j++) {
      for (uint32_t q = j + 1; q < ne && e[q].first <= e[j].last; q++) {
        int fj = e[j].pin == NONE, fq = e[q].pin == NONE;
        if (fj && fq) {
          uint32_t a = fidx[j], b = fidx[q], base = X->cb[comp[a]];
          X->adj[fill[a]++] = b - base;
          X->adj[fill[b]++] = a - base;
        } else if (fj) {
          X->pinl[pfill[fidx[j]]++] = e[q].pin;
        } else if (fq) {
          X->pinl[pfill[fidx[q]]++] = e[j].pin;
        }
      }
    }
  }
  free(fill);
  free(pfill);
  /* Keep each tensor's obstacles in offset order (pin indexes are). */
  for (uint32_t q = 0; q < K; q++) {
    uint32_t a = X->pin_off[q], b = X->pin_off[q + 1];
    for (uint32_t i = a + 1; i < b; i++) {
      uint32_t v = X->pinl[i], j = i;
      while (j > a && X->pinl[j - 1] > v) {
        X->pinl[j] = X->pinl[j - 1];
        j--;
        X->work++;
      }
      X->pinl[j] = v;
    }
  }
  X->work += K;

  /* Sections per component, rem0, peak; and the memory cap. */
  uint64_t budget = EXACT_MAX_PAIRS;
  uint32_t maxm = 0, maxs = 0;
  uint64_t maxinc = 0, maxadj = 0;
  X->sb[0] = 0;
  for (uint32_t c = 0; c < X->nc; c++) {
    uint32_t a = X->cb[c], b = X->cb[c + 1], npt = 0;
    for (uint32_t q = a; q < b; q++) {
      pt[npt++] = p->t[X->gi[q]].first;
      pt[npt++] = p->t[X->gi[q]].last + 1;
    }
    qsort(pt, npt, sizeof *pt, cmp_i64);
    uint32_t u = 0;
    for (uint32_t q = 0; q < npt; q++)
      if (u == 0 || pt[q] != pt[u - 1])
        pt[u++] = pt[q];
    uint32_t S = u - 1, base = X->sb[c];
    X->sb[c + 1] = base + S;
    uint64_t inc = 0;
    for (uint32_t q = a; q < b; q++) {
      X->slo[q] = sec_find(pt, u, p->t[X->gi[q]].first);
      X->shi[q] = sec_find(pt, u, p->t[X->gi[q]].last + 1) - 1;
      inc += X->shi[q] - X->slo[q] + 1;
    }
    /* rem0 by a difference array over the sections. */
    for (uint32_t q = a; q < b; q++) {
      X->rem0[base + X->slo[q]] += X->size[q];
      if (X->shi[q] + 1 < S)
        X->rem0[base + X->shi[q] + 1] -= X->size[q];
    }
    for (uint32_t s = 1; s < S; s++)
      X->rem0[base + s] += X->rem0[base + s - 1];
    for (uint32_t q = a; q < b; q++) {
      uint64_t pk = 0;
      for (uint32_t s = X->slo[q]; s <= X->shi[q]; s++)
        if (X->rem0[base + s] > pk)
          pk = X->rem0[base + s];
      X->peak[q] = pk;
    }
    /* The sort of the points, the binary searches, the passes over the
     * incidences (ranges and peaks) and the sections. */
    X->work += exact__sort_units(npt) + 2 * exact__sort_units(b - a) +
               2 * inc + 2 * u;
    uint64_t nadj = X->adj_off[b] - X->adj_off[a];
    uint64_t cost = nadj + inc;
    if (!too_many && cost <= budget) {
      budget -= cost;
      X->searchable[c] = 1;
      if (b - a > maxm)
        maxm = b - a;
      if (S > maxs)
        maxs = S;
      if (inc > maxinc)
        maxinc = inc;
      if (nadj > maxadj)
        maxadj = nadj;
    }
    uint64_t top = 0;
    for (uint32_t q = a; q < b; q++) {
      uint64_t tq = X->offsets[X->gi[q]] + X->size[q];
      if (tq > top)
        top = tq;
    }
    X->carena[c] = top;
  }
  free(e);
  free(fidx);
  free(pt);
  free(X->ul);
  X->ul = NULL;
  if ((rc = exact__poll_stop(X)) != R_FOUND)
    return rc;
  size_t m1 = (size_t)maxm + 1, s1 = (size_t)maxs + 1;
  X->pos = malloc(m1 * sizeof *X->pos);
  X->out = malloc(m1 * sizeof *X->out);
  X->ul = malloc(m1 * sizeof *X->ul);
  X->upos = malloc(m1 * sizeof *X->upos);
  X->rank = malloc(m1 * sizeof *X->rank);
  X->tmp = malloc(m1 * sizeof *X->tmp);
  X->lv = malloc((m1 + 1) * sizeof *X->lv);
  X->floor = malloc(s1 * sizeof *X->floor);
  X->rem = malloc(s1 * sizeof *X->rem);
  X->ftr = malloc((maxinc + 1) * sizeof *X->ftr);
  X->sl = malloc((maxinc + 1) * sizeof *X->sl);
  X->sl_off = malloc((s1 + 1) * sizeof *X->sl_off);
  X->rel = malloc(2 * m1 * sizeof *X->rel);
  /* Dead-end table: 256 entries per tensor of the largest component,
   * from 1 K to EXACT_TT_MAX, so small graphs do not pay for a large one. */
  X->tt_size = 1024;
  while (X->tt_size < EXACT_TT_MAX && X->tt_size < 256 * m1)
    X->tt_size *= 2;
  X->tt = calloc(X->tt_size, sizeof *X->tt);
  /* Allocating and clearing the work arrays and the table. */
  X->work += X->tt_size + 16 * (uint64_t)m1 + 2 * (uint64_t)s1 +
             2 * (maxinc + maxadj);
  X->dec = malloc(m1 * sizeof *X->dec);
  X->gr = malloc(4 * (s1 + m1) * sizeof *X->gr);
  X->bys = malloc(m1 * sizeof *X->bys);
  X->twin = malloc(m1 * sizeof *X->twin);
  X->ptr_v = malloc((maxadj + 1) * sizeof *X->ptr_v);
  X->ptr_i = malloc((maxadj + 1) * sizeof *X->ptr_i);
  /* The rank trail holds the old ranks of the groups re-ranked by the
   * splits still open; nested splits re-rank ever smaller groups, and a
   * split that finds the trail full keeps the ranks it has. At most
   * EXACT_TRAIL_MAX entries (8 bytes each). */
  X->rtcap = (uint32_t)(8 * m1 < EXACT_TRAIL_MAX ? 8 * m1 : EXACT_TRAIL_MAX);
  X->rtr_i = malloc((size_t)X->rtcap * sizeof *X->rtr_i);
  X->rtr_v = malloc((size_t)X->rtcap * sizeof *X->rtr_v);
  X->rks = malloc(m1 * sizeof *X->rks);
  X->rpk = malloc(m1 * sizeof *X->rpk);
  if (!X->rtr_i || !X->rtr_v || !X->rks || !X->rpk)
    return ARENA_ENOMEM;
  if (!X->pos || !X->out || !X->ul || !X->upos || !X->rank || !X->tmp ||
      !X->lv || !X->floor || !X->rem || !X->ftr || !X->ptr_v || !X->ptr_i ||
      !X->sl || !X->sl_off || !X->rel || !X->tt ||
      !X->dec || !X->gr || !X->bys || !X->twin)
    return ARENA_ENOMEM;
  return 0;
}

/*
 * exact_build.c - preprocessing for the exact planner: builds the struct
 * ctx the search works on from a problem.
 *
 * Free tensors are sorted by first use and cut into components; pinned
 * tensors become obstacles sorted by offset; for every component come the
 * sections and their initial rem, and the choice of search: small
 * components within the memory cap get exact_search.c's, which needs each
 * tensor's overlap list (built here) and the section incidences; larger
 * ones get exact_stream.c's, which needs neither, so their overlap pairs
 * are only counted, never listed or visited. Then every tensor's pinned
 * obstacles, the peaks, the granule and the work arrays, sized for the
 * largest component of each kind. See the DESIGN comment in exact.c.
 *
 * The setup is part of the effort: every loop step, sort entry and table
 * entry is counted in X->work like the search's, and the budget and the
 * stop callback are polled between the phases, so a tiny effort on a
 * large graph stops before the expensive phases instead of after them.
 * Once the components are known, the setup also stops when the effort
 * left provably cannot pay for a plan of the large components at the
 * top (cannot_pay()).
 */
#include "exact_int.h"
#include "planner_sort.h"

#include <stdlib.h>
#include <string.h>

/* Total adjacency entries plus section incidences searched at most; each
 * costs 4 to 12 bytes. 4M keeps the search under ~64 MB. */
#define EXACT_TRAIL_MAX (1u << 20) /* rank trail entries at most */
#define EXACT_MAX_PAIRS (1u << 22)
/* Components of up to EXACT_SMALL_MAX tensors within the cap above get
 * exact_search.c's search, with its tables; larger ones, up to
 * EXACT_STREAM_MAX tensors, get exact_stream.c's, in linear memory. */
#define EXACT_SMALL_MAX 1000u
#define EXACT_STREAM_MAX (1u << 17)

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

static int cmp_u32(const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Sets X->peak for the tensors of component c: the largest rem0 over
 * their sections. A scan for the small search; a max tree over the
 * sections, O(log S) a tensor, for the stream search; nothing for a
 * component that is not searched. Returns 0 or ARENA_ENOMEM. */
static int peaks(struct ctx *X, uint32_t c)
{
  uint32_t a = X->cb[c], b = X->cb[c + 1], S = X->sb[c + 1] - X->sb[c];
  const uint64_t *rem0 = X->rem0 + X->sb[c];
  if (X->searchable[c] == 1) {
    for (uint32_t q = a; q < b; q++) {
      uint64_t pk = 0;
      for (uint32_t s = X->slo[q]; s <= X->shi[q]; s++)
        if (rem0[s] > pk)
          pk = rem0[s];
      X->peak[q] = pk;
      X->work += X->shi[q] - X->slo[q] + 1;
    }
    return 0;
  }
  if (X->searchable[c] != 2)
    return 0;
  uint32_t P = 1;
  while (P < S)
    P *= 2;
  uint64_t *t = calloc(2 * (size_t)P, sizeof *t);
  if (!t)
    return ARENA_ENOMEM;
  memcpy(t + P, rem0, S * sizeof *t);
  for (uint32_t v = P; v-- > 1;)
    t[v] = t[2 * v] > t[2 * v + 1] ? t[2 * v] : t[2 * v + 1];
  uint64_t lg = 1;
  for (uint32_t v = P; v > 1; v >>= 1)
    lg++;
  for (uint32_t q = a; q < b; q++) {
    uint64_t pk = 0;
    for (uint32_t l = X->slo[q] + P, r = X->shi[q] + P + 1; l < r;
         l >>= 1, r >>= 1) {
      if ((l & 1) && t[l] > pk)
        pk = t[l];
      if (l & 1)
        l++;
      if ((r & 1) && t[r - 1] > pk)
        pk = t[r - 1];
    }
    X->peak[q] = pk;
  }
  X->work += 2 * (uint64_t)P + 2 * lg * (b - a);
  free(t);
  return 0;
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
  exact__stream_free(X);
}

/* Work units that a plan of a component of m tensors searched by
 * exact_stream.c costs at the least before the effort is polled for the
 * last time, set-up included: its share of the setup's sorts (the
 * points, 3 binary searches), the ranking (two sorts and 4 units a
 * tensor) and the stream search's own setup (at least 4 + 2 lg m a
 * tensor), all before its first poll; then one placement of every tensor
 * (at least 20 units each: a plan, found or completed from a dead end,
 * places all of them), less the two poll intervals a search may run past
 * the effort before it notices. */
static uint64_t stream_plan_units(uint64_t m)
{
  uint64_t lg = 1;
  while (((uint64_t)1 << (lg - 1)) < m)
    lg++;
  uint64_t place = 20 * m, slack = 2 * (uint64_t)EXACT_STREAM_POLL;
  return exact__sort_units(2 * m) + 5 * exact__sort_units(m) +
         m * (8 + 2 * lg) + (place > slack ? place - slack : 0);
}

/* Sets X->carena to the heuristic top of every component (not counted,
 * like the sums of the sections' rem). */
static void component_tops(struct ctx *X)
{
  for (uint32_t c = 0; c < X->nc; c++) {
    uint64_t top = 0;
    for (uint32_t q = X->cb[c]; q < X->cb[c + 1]; q++)
      if (X->offsets[X->gi[q]] + X->size[q] > top)
        top = X->offsets[X->gi[q]] + X->size[q];
    X->carena[c] = top;
  }
}

/* Whether the effort left provably cannot pay for a plan below the
 * incumbent (docs/exact.md, "Effort"): every component whose heuristic
 * top (X->carena) is the arena must get a new plan for the arena to
 * drop, and each of them is too large for exact_search.c and needs more
 * than the units left after the rest of the setup (2 units per step of
 * the overlap sweep, at least 4 per tensor and 1 per entry). Only
 * without pinned tensors: with them a search may end at once with a
 * proof that the bound cannot be met. */
static int cannot_pay(const struct ctx *X, uint32_t ne)
{
  uint64_t arena = 0, need = UINT64_MAX;
  uint64_t rest = 2 * (4 * (uint64_t)X->K + ne);
  if (X->npins)
    return 0;
  for (uint32_t c = 0; c < X->nc; c++) {
    uint64_t top = X->carena[c], m = X->cb[c + 1] - X->cb[c];
    rest += exact__sort_units(2 * m) + 3 * exact__sort_units(m);
    if (top > arena) {
      arena = top;
      need = 0;
    }
    if (top == arena) {
      if (m <= EXACT_SMALL_MAX)
        need = UINT64_MAX; /* a small search may pay: never skip */
      else if (need != UINT64_MAX && stream_plan_units(m) > need)
        need = stream_plan_units(m);
    }
  }
  return need != UINT64_MAX && X->work + rest + need >= X->work_limit;
}

/* The setup's temporaries, freed by bld_free() (X->ul doubles as the
 * component of each free tensor until the work arrays replace it). */
struct bld {
  struct ent *e;        /* non-empty tensors by first use, ne of them */
  uint32_t ne;
  uint32_t P;           /* pinned tensors */
  uint64_t g;           /* granule so far: gcd of sizes and pin offsets */
  uint32_t *fidx;       /* entry -> free tensor index, NONE if pinned */
  int64_t *pt;          /* section points of one component, scratch */
  uint32_t *comp;       /* component of each free tensor (= X->ul) */
  uint32_t *pidx;       /* entries of the pinned tensors, npx of them */
  uint32_t npx;
  uint64_t budget;      /* overlap pairs and incidences still allowed */
  uint64_t pairs, pinpairs; /* overlap and obstacle list entries */
  uint64_t steps;       /* steps of the overlap sweep's counting pass */
  /* The largest small component (tensors, sections, incidences,
   * overlap entries) and the largest stream component (tensors). */
  uint32_t maxm, maxs;
  uint64_t maxinc, maxadj, maxstream;
};

static void bld_free(struct bld *B)
{
  free(B->e);
  free(B->fidx);
  free(B->pt);
  free(B->pidx);
  B->e = NULL;
  B->fidx = NULL;
  B->pt = NULL;
  B->pidx = NULL;
}

/* Counts the free (X->K) and pinned tensors and allocates the entries
 * and the obstacles. */
static int count_tensors(struct ctx *X, struct bld *B)
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
  B->P = P;
  X->work += 3 * (uint64_t)n + exact__sort_units(P) +
             exact__sort_units(K + P);
  B->e = malloc((K + P + 1) * sizeof *B->e);
  X->pins = malloc((P + 1) * sizeof *X->pins);
  if (!B->e || !X->pins)
    return ARENA_ENOMEM;
  return 0;
}

/* Pinned obstacles sorted by offset, and their share of the granule. */
static void collect_pins(struct ctx *X, struct bld *B)
{
  const struct planner__prob *p = X->p;
  uint32_t np = 0;
  for (size_t i = 0; i < p->n; i++) {
    const struct planner_tensor *t = &p->t[i];
    if (t->size == 0 || t->pinned == PLANNER_NOT_PINNED)
      continue;
    X->pins[np].off = (uint64_t)t->pinned;
    X->pins[np].top = (uint64_t)t->pinned + t->size;
    if (X->pins[np].top > X->pintop)
      X->pintop = X->pins[np].top;
    B->g = gcd64(B->g, gcd64((uint64_t)t->pinned, t->size));
    np++;
  }
  qsort(X->pins, B->P, sizeof *X->pins, cmp_pin);
}

/* Entries: every non-empty tensor, free or pinned, in graph order. */
static void collect_entries(struct ctx *X, struct bld *B)
{
  const struct planner__prob *p = X->p;
  struct ent *e = B->e;
  uint32_t ne = 0;
  for (size_t i = 0; i < p->n; i++) {
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
      B->g = gcd64(B->g, t->size);
    }
    ne++;
  }
  B->ne = ne;
}

/* Resolves pinned entries to indexes of X->pins with equal ranges. Each
 * obstacle is only a byte range, so sharing an index between tensors of
 * the same range is harmless. */
static void resolve_pins(struct ctx *X, struct bld *B)
{
  struct ent *e = B->e;
  for (uint32_t k = 0; k < B->ne; k++) {
    if (e[k].pin == NONE)
      continue;
    const struct planner_tensor *t = &X->p->t[e[k].gi];
    struct pin key = {(uint64_t)t->pinned, (uint64_t)t->pinned + t->size};
    uint32_t lo = 0, hi = B->P;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (cmp_pin(&X->pins[mid], &key) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    e[k].pin = lo;
  }
}

/* Sets X->g: the granule so far, made to divide every alignment. */
static void set_granule(struct ctx *X, uint64_t g)
{
  const struct planner__prob *p = X->p;
  if (g == 0)
    g = 1;
  for (size_t i = 0; i < p->n; i++) {
    uint64_t a = p->align[i];
    if (p->t[i].size && g % a)
      g = gcd64(g, a);
  }
  X->g = g;
}

/* Allocates the per-tensor and per-component arrays and the scratch of
 * the sections. */
static int alloc_tensors(struct ctx *X, struct bld *B)
{
  uint32_t K = X->K;
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
  B->fidx = malloc((K + B->P + 1) * sizeof *B->fidx);
  B->pt = malloc((2 * (size_t)K + 2) * sizeof *B->pt);
  if (!X->gi || !X->size || !X->align || !X->slo || !X->shi ||
      !X->adj_off || !X->pin_off || !X->cb || !X->sb || !X->carena ||
      !X->searchable || !X->peak || !X->rem0 || !B->fidx || !B->pt)
    return ARENA_ENOMEM;
  return 0;
}

/* Free tensors in first-use order: graph index, size, alignment. */
static void fill_free(struct ctx *X, struct bld *B)
{
  const struct planner__prob *p = X->p;
  const struct ent *e = B->e;
  uint32_t k = 0;
  for (uint32_t j = 0; j < B->ne; j++) {
    if (e[j].pin != NONE) {
      B->fidx[j] = NONE;
      continue;
    }
    B->fidx[j] = k;
    X->gi[k] = e[j].gi;
    X->size[k] = p->t[e[j].gi].size;
    X->align[k] = p->align[e[j].gi];
    k++;
  }
}

/* Components over free tensors in first-use order, and the component of
 * each free tensor (B->comp), to store local indexes. */
static int find_components(struct ctx *X, struct bld *B)
{
  const struct ent *e = B->e;
  X->nc = 0;
  int64_t reach = INT64_MIN;
  uint32_t k = 0;
  for (uint32_t j = 0; j < B->ne; j++) {
    if (e[j].pin != NONE)
      continue;
    if (k == 0 || e[j].first > reach)
      X->cb[X->nc++] = k;
    if (k == 0 || e[j].last > reach)
      reach = e[j].last;
    k++;
  }
  X->cb[X->nc] = X->K;
  uint32_t *comp = B->comp = X->ul = malloc((X->K + 1) * sizeof *comp);
  if (!comp)
    return ARENA_ENOMEM;
  for (uint32_t c = 0; c < X->nc; c++)
    for (uint32_t q = X->cb[c]; q < X->cb[c + 1]; q++)
      comp[q] = c;
  return 0;
}

/* Sections of component c and its rem0; then which search it gets:
 * exact_search.c's when small and within the memory cap (B->budget),
 * whose overlap pairs (counted here without listing them) and section
 * incidences it stores, exact_stream.c's for the others up to
 * EXACT_STREAM_MAX tensors. */
static int sections(struct ctx *X, struct bld *B, uint32_t c)
{
  const struct planner__prob *p = X->p;
  int64_t *pt = B->pt;
  uint32_t a = X->cb[c], b = X->cb[c + 1], npt = 0;
  for (uint32_t q = a; q < b; q++) {
    pt[npt++] = p->t[X->gi[q]].first;
    pt[npt++] = p->t[X->gi[q]].last + 1;
  }
  /* times are never negative: their order is the same unsigned */
  uint32_t u = exact__sections((uint64_t *)pt, b - a, X->slo + a,
                               X->shi + a);
  if (!u)
    return ARENA_ENOMEM;
  uint32_t S = u - 1, base = X->sb[c];
  X->sb[c + 1] = base + S;
  uint64_t inc = 0, pairs = 0;
  for (uint32_t q = a; q < b; q++)
    inc += X->shi[q] - X->slo[q] + 1;
  /* Overlap pairs: tensor q meets the later tensors that start in its
   * sections, a run of the first-use order. */
  for (uint32_t q = a; q < b; q++) {
    /* the run is short: gallop to a window that ends it, then halve */
    uint32_t lo = q + 1, hi = q + 1;
    for (uint32_t w = 1; hi < b && X->slo[hi] <= X->shi[q]; w *= 2) {
      lo = hi + 1;
      hi = b - lo > w ? lo + w : b;
    }
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (X->slo[mid] <= X->shi[q])
        lo = mid + 1;
      else
        hi = mid;
    }
    pairs += 2 * (uint64_t)(lo - q - 1);
  }
  /* rem0 by a difference array over the sections. */
  for (uint32_t q = a; q < b; q++) {
    X->rem0[base + X->slo[q]] += X->size[q];
    if (X->shi[q] + 1 < S)
      X->rem0[base + X->shi[q] + 1] -= X->size[q];
  }
  for (uint32_t s = 1; s < S; s++)
    X->rem0[base + s] += X->rem0[base + s - 1];
  /* The sort of the points, the binary searches and the sections. */
  X->work += exact__sort_units(npt) + 3 * exact__sort_units(b - a) + u;
  uint64_t cost = pairs + inc;
  if (b - a <= EXACT_SMALL_MAX && cost <= B->budget) {
    B->budget -= cost;
    X->searchable[c] = 1;
    if (b - a > B->maxm)
      B->maxm = b - a;
    if (S > B->maxs)
      B->maxs = S;
    if (inc > B->maxinc)
      B->maxinc = inc;
  } else if (b - a <= EXACT_STREAM_MAX) {
    X->searchable[c] = 2;
    if (b - a > B->maxstream)
      B->maxstream = b - a;
  }
  return 0;
}

/* One pass of the overlap sweep over the entries in first-use order:
 * counts the overlap pairs of the small components and the pinned
 * obstacles of every free tensor into adj_off, pin_off, B->pairs and
 * B->pinpairs (fill == NULL; each step is a work unit in B->steps), or
 * lists them, from the positions in fill and pfill. A free tensor of
 * another component only looks at the pinned entries after it (pidx), so
 * no pair of a large component is ever visited. The counting pass stops
 * once there are more than EXACT_MAX_PAIRS obstacle entries. */
static void sweep(struct ctx *X, struct bld *B, uint32_t *fill,
                  uint32_t *pfill)
{
  const struct ent *e = B->e;
  const uint32_t *fidx = B->fidx, *comp = B->comp, *pidx = B->pidx;
  uint32_t ne = B->ne, npx = B->npx;
  int fill_pass = fill != NULL;
  uint64_t pairs = B->pairs, pinpairs = B->pinpairs, steps = B->steps;
  uint32_t pn = 0; /* first pinned entry after j: pidx[pn] */
  for (uint32_t j = 0; j < ne; j++) {
    while (pn < npx && pidx[pn] <= j)
      pn++;
    int fj = e[j].pin == NONE;
    if (fj && X->searchable[comp[fidx[j]]] != 1) {
      for (uint32_t r = pn; r < npx && e[pidx[r]].first <= e[j].last;
           r++) {
        steps += !fill_pass;
        if (!fill_pass) {
          X->pin_off[fidx[j] + 1]++;
          pinpairs++;
        } else {
          X->pinl[pfill[fidx[j]]++] = e[pidx[r]].pin;
        }
      }
      continue;
    }
    for (uint32_t q = j + 1; q < ne && e[q].first <= e[j].last; q++) {
      int fq = e[q].pin == NONE;
      steps += !fill_pass;
      if (fj && fq) {
        uint32_t x = fidx[j], y = fidx[q], base = X->cb[comp[x]];
        if (!fill_pass) {
          X->adj_off[x + 1]++;
          X->adj_off[y + 1]++;
          pairs += 2;
        } else {
          X->adj[fill[x]++] = y - base;
          X->adj[fill[y]++] = x - base;
        }
      } else if (fj != fq) {
        uint32_t x = fj ? fidx[j] : fidx[q];
        uint32_t pin = fj ? e[q].pin : e[j].pin;
        if (!fill_pass) {
          X->pin_off[x + 1]++;
          pinpairs++;
        } else {
          X->pinl[pfill[x]++] = pin;
        }
      }
    }
    if (!fill_pass && pinpairs > EXACT_MAX_PAIRS)
      break;
  }
  B->pairs = pairs;
  B->pinpairs = pinpairs;
  B->steps = steps;
}

/* Too many obstacles to list: no component is searched. */
static int no_search(struct ctx *X, struct bld *B)
{
  memset(X->pin_off, 0, (X->K + 2) * sizeof *X->pin_off);
  memset(X->adj_off, 0, (X->K + 2) * sizeof *X->adj_off);
  memset(X->searchable, 0, X->nc);
  B->maxm = B->maxs = 0;
  B->maxinc = B->maxstream = 0;
  X->adj = malloc(sizeof *X->adj);
  X->pinl = malloc(sizeof *X->pinl);
  if (!X->adj || !X->pinl)
    return ARENA_ENOMEM;
  return 0;
}

/* Turns the counts of the sweep into offsets and lists the pairs and
 * obstacles in a second pass. */
static int fill_lists(struct ctx *X, struct bld *B)
{
  uint32_t K = X->K;
  for (uint32_t q = 0; q < K; q++) {
    X->adj_off[q + 1] += X->adj_off[q];
    X->pin_off[q + 1] += X->pin_off[q];
  }
  X->adj = malloc((B->pairs + 1) * sizeof *X->adj);
  X->pinl = malloc((B->pinpairs + 1) * sizeof *X->pinl);
  uint32_t *fill = malloc((K + 1) * sizeof *fill);
  uint32_t *pfill = malloc((K + 1) * sizeof *pfill);
  if (!X->adj || !X->pinl || !fill || !pfill) {
    free(fill);
    free(pfill);
    return ARENA_ENOMEM;
  }
  memcpy(fill, X->adj_off, K * sizeof *fill);
  memcpy(pfill, X->pin_off, K * sizeof *pfill);
  sweep(X, B, fill, pfill);
  free(fill);
  free(pfill);
  return 0;
}

/* Overlap lists of the small components and pinned obstacles of every
 * free tensor: the sweep in two passes, counting, then filling. */
static int overlaps(struct ctx *X, struct bld *B)
{
  int rc;
  B->pidx = malloc((B->P + 1) * sizeof *B->pidx);
  if (!B->pidx)
    return ARENA_ENOMEM;
  B->npx = 0;
  for (uint32_t j = 0; j < B->ne; j++)
    if (B->e[j].pin != NONE)
      B->pidx[B->npx++] = j;
  B->pairs = B->pinpairs = 0;
  B->steps = 4 * (uint64_t)X->K + B->ne;
  sweep(X, B, NULL, NULL);
  X->work += 2 * B->steps; /* this pass, and the same again to fill */
  if ((rc = exact__poll_stop(X)) != R_FOUND)
    return rc;
  rc = B->pinpairs > EXACT_MAX_PAIRS ? no_search(X, B) : fill_lists(X, B);
  free(B->pidx);
  B->pidx = NULL;
  return rc;
}

/* Keeps each tensor's obstacles in offset order (pin indexes are). */
static void sort_obstacles(struct ctx *X)
{
  for (uint32_t q = 0; q < X->K; q++) {
    uint32_t a = X->pin_off[q], b = X->pin_off[q + 1];
    qsort(X->pinl + a, b - a, sizeof *X->pinl, cmp_u32);
    X->work += exact__sort_units(b - a);
  }
  X->work += X->K;
}

/* Peaks of every component (see peaks()) and the largest overlap list
 * total of a component (B->maxadj). */
static int all_peaks(struct ctx *X, struct bld *B)
{
  int rc;
  for (uint32_t c = 0; c < X->nc; c++) {
    uint32_t a = X->cb[c], b = X->cb[c + 1];
    uint64_t nadj = X->adj_off[b] - X->adj_off[a];
    if (nadj > B->maxadj)
      B->maxadj = nadj;
    if ((rc = peaks(X, c)) != 0)
      return rc;
  }
  return 0;
}

/* Allocates the work arrays of the searches, sized for the largest
 * component of each kind, and the dead-end table. */
static int alloc_work(struct ctx *X, const struct bld *B)
{
  size_t m1 = (size_t)B->maxm + 1, s1 = (size_t)B->maxs + 1;
  uint64_t maxinc = B->maxinc, maxadj = B->maxadj;
  /* Ranks, twins and the plan found are needed by both searches. */
  size_t mr1 = (B->maxstream > B->maxm ? B->maxstream : B->maxm) + 1;
  X->pos = malloc(m1 * sizeof *X->pos);
  X->out = malloc(mr1 * sizeof *X->out);
  X->ul = malloc(m1 * sizeof *X->ul);
  X->upos = malloc(m1 * sizeof *X->upos);
  X->rank = malloc(mr1 * sizeof *X->rank);
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
  X->twin = malloc(mr1 * sizeof *X->twin);
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

/* Entries from which sort_entries() sorts by radix. */
#define ENTRY_RADIX_MIN 4096u

/* Sorts the entries, which collect_entries() left in graph order, into
 * first-use order: by first, last, then graph index, as cmp_ent(). Many
 * are sorted by radix on (first, last) when both fit in 32 bits: the
 * sort is stable, so graph order breaks the ties. Returns 0 or
 * ARENA_ENOMEM. */
static int sort_entries(struct bld *B)
{
  uint32_t n = B->ne;
  int64_t most = 0;
  for (uint32_t j = 0; j < n && n >= ENTRY_RADIX_MIN; j++)
    most = B->e[j].last > most ? B->e[j].last : most;
  if (n < ENTRY_RADIX_MIN || most > (int64_t)UINT32_MAX) {
    qsort(B->e, n, sizeof *B->e, cmp_ent);
    return 0;
  }
  uint64_t *key = malloc((size_t)n * sizeof *key);
  uint32_t *at = malloc((size_t)n * sizeof *at);
  struct ent *e = malloc((size_t)n * sizeof *e);
  struct planner__radix rs = {0};
  int rc = key && at && e ? 0 : ARENA_ENOMEM;
  for (uint32_t j = 0; !rc && j < n; j++) {
    key[j] = (uint64_t)B->e[j].first << 32 | (uint64_t)B->e[j].last;
    at[j] = j;
  }
  if (!rc && planner__radix_sort(key, at, n, &rs))
    rc = ARENA_ENOMEM;
  planner__radix_cleanup(&rs);
  for (uint32_t j = 0; !rc && j < n; j++)
    e[j] = B->e[at[j]];
  if (!rc) {
    free(B->e);
    B->e = e;
    e = NULL;
  }
  free(key);
  free(at);
  free(e);
  return rc;
}

/* The setup up to the work arrays, step by step, polling the budget and
 * the stop callback between the phases. Returns 0, R_SPENT, R_CANCEL or
 * ARENA_ENOMEM. */
static int setup(struct ctx *X, struct bld *B)
{
  int rc;
  if ((rc = count_tensors(X, B)) != 0)
    return rc;
  collect_pins(X, B);
  collect_entries(X, B);
  resolve_pins(X, B);
  if ((rc = sort_entries(B)) != 0)
    return rc;
  if ((rc = exact__poll_stop(X)) != R_FOUND)
    return rc;
  set_granule(X, B->g);
  if ((rc = alloc_tensors(X, B)) != 0)
    return rc;
  fill_free(X, B);
  if ((rc = find_components(X, B)) != 0)
    return rc;
  component_tops(X);
  if (cannot_pay(X, B->ne))
    return R_SPENT;
  B->budget = EXACT_MAX_PAIRS;
  X->sb[0] = 0;
  for (uint32_t c = 0; c < X->nc; c++)
    if ((rc = sections(X, B, c)) != 0)
      return rc;
  if ((rc = exact__poll_stop(X)) != R_FOUND)
    return rc;
  if ((rc = overlaps(X, B)) != 0)
    return rc;
  sort_obstacles(X);
  return all_peaks(X, B);
}

/* Builds everything the search needs (contract in exact_int.h). */
int exact__build(struct ctx *X)
{
  struct bld B;
  memset(&B, 0, sizeof B);
  int rc = setup(X, &B);
  bld_free(&B);
  if (rc != 0)
    return rc;
  free(X->ul); /* the components' map; the work arrays replace it */
  X->ul = NULL;
  if ((rc = exact__poll_stop(X)) != R_FOUND)
    return rc;
  return alloc_work(X, &B);
}

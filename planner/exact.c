/*
 * exact.c - the exact planner: branch and bound over canonical placements.
 *
 * planner__exact() (contract in planner_int.h) either minimises the arena
 * of a plan, starting from the heuristic plan it is given, or answers a
 * capacity question. docs/exact.md explains the method at length; this
 * comment is the short version for readers of the code.
 *
 * DESIGN
 *  Only "free" tensors (size > 0, not pinned) are searched. Zero-size
 *  tensors keep offset 0, pinned tensors keep their offset and act as
 *  fixed obstacles.
 *
 *  Decomposition. Free tensors sorted by first use split into components
 *  wherever no lifetime crosses a point in time. Components never
 *  interact (pinned tensors are fixed), so each is searched on its own and
 *  the arena is the maximum over components and pinned tops.
 *
 *  Sections. Inside a component the points where some lifetime starts or
 *  ends cut time into sections; the live set is constant inside one.
 *  Every section keeps a floor (the highest top of the tensors placed so
 *  far that live in it) and rem, the total size of unplaced tensors live
 *  in it.
 *
 *  Canonical solutions. Among the plans that fit a capacity C take one
 *  with the least sum of offsets and list its tensors by (offset, rank),
 *  rank being a fixed priority order. Placing them in that order, each
 *  lands at pos(b): the lowest aligned offset at or above the tops of the
 *  placed tensors it overlaps in time that misses every pinned obstacle
 *  (anything lower would lower the sum). So the search only ever places
 *  an unplaced tensor at pos(b), and the (pos, rank) keys of successive
 *  placements strictly increase; that alone removes every reordering of
 *  one plan. Further rules that the canonical plan obeys, so pruning with
 *  them loses nothing:
 *   - Dominance: a tensor may be placed at x only if x < pos(b') +
 *     size(b') for every other unplaced b'. Otherwise b' could drop to
 *     pos(b'), below everything still to come, and lower the sum.
 *   - Section capacity: later tensors sit at or above x (the last
 *     placement) and above the floor, so in every section
 *     max(floor, x) + rem <= C.
 *   - Fit: pos(b) + size(b) <= C for every unplaced b.
 *   - Stacking: the unplaced tensors of one section all meet in time, so
 *     stacked in order of release max(pos, x) they must end within C
 *     (erd_ok, checked on the sections a placement touched).
 *   - Lowest section: if the lowest section has no slack, the next
 *     placement goes exactly onto its floor.
 *   - Twins: identical tensors are placed in rank order.
 *  When every tensor is placed the plan fits C. When the tree is exhausted
 *  no plan fits C at all, which proves a lower bound of C + granule.
 *
 *  During the search, when the unplaced tensors fall apart into groups
 *  that share no point in time, each group is searched on its own (struct
 *  dec); one group without a completion fails the level that split, in a
 *  single jump. Failed states are remembered in a table keyed by two
 *  64-bit hashes (struct ttent).
 *
 *  Granule. Every canonical offset is a sum of sizes and pinned tops
 *  rounded up to alignments. With g the gcd of all sizes and pinned
 *  offsets, lowered so that each alignment divides g or is a multiple of
 *  it, every canonical arena is a multiple of g; so the optimum is too,
 *  and bounds are rounded up to multiples of g.
 *
 *  Driver. Searches race several static rank orders with restarts:
 *  in turns, every base order runs under a node limit that doubles from
 *  turn to turn, then a few jittered orders run under Luby limits
 *  (round_plan()). Minimisation alternates a feasibility
 *  attempt at the lower bound (success proves optimality, exhaustion
 *  raises the bound) with a descent from the incumbent. The wall clock
 *  and the stop callback are only polled: they decide when to stop,
 *  never what is explored, so a search that
 *  finishes inside its budget returns the same plan on every machine.
 *
 *  Memory. O(n + sections + overlap pairs). Overlap pairs (the adjacency
 *  lists) and section incidences are capped at EXACT_MAX_PAIRS entries in
 *  total; components above the cap keep their heuristic placement.
 */
#include "planner_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The budget is spent in work units, so that the same input and budget
 * explore the same tree on any machine and return the same plan. A unit
 * is one step of the search's inner loops: a tensor scanned for the next
 * candidate, a section or neighbour updated by a placement, a tensor
 * collected or sorted by the stacking check. Counted that way the search
 * runs at 230 to 590 units per microsecond on a 2-core x86-64 machine
 * (the slow end on busy machines and large graphs), so this rate spends
 * about 25% to 65% of the budget's wall time and the unit budget
 * normally ends the search before the clock. The wall clock stays a hard
 * cap at the budget plus EXACT_GRACE_US (setup such as allocating the
 * dead-end table is not counted in units): on a much slower or overloaded
 * machine it stops the search first, and then the result depends on
 * timing. Sanitizer builds run several times slower, hence the smaller
 * rate. */
#define EXACT_GRACE_US 2000u
#define EXACT_POLL_UNITS (1u << 16) /* units between clock polls */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define EXACT_UNITS_PER_MS 15000u
#else
#define EXACT_UNITS_PER_MS 150000u
#endif

/* Total adjacency entries plus section incidences searched at most; each
 * costs 4 to 12 bytes. 4M keeps the search under ~64 MB. */
#define EXACT_MAX_PAIRS (1u << 22)
#define EXACT_FIRST_LIMIT 2048u /* nodes in the first round */
#define NONE UINT32_MAX
#define EXACT_TT_SIZE (1u << 16) /* dead-end table entries (40 bytes) */

enum { R_FOUND, R_INFEAS, R_LIMIT, R_TIME, R_CANCEL, R_GIVEUP };

struct pin {
  uint64_t off, top; /* byte range [off, top) of a pinned tensor */
};

struct lvl {
  uint64_t kpos;   /* key of the last candidate tried here: offset ... */
  int64_t krank;   /* ... and rank; -1 at the root (anything goes) */
  uint64_t t1;     /* min pos + size over unplaced, on entry */
  uint64_t x;      /* offset of the tensor placed from this level */
  uint64_t maxrem; /* the maxrem bound before that placement */
  uint32_t c;      /* local index of that tensor */
  uint32_t pmark;  /* pos trail length before it */
  uint32_t fmark;  /* floor trail length before it */
  uint64_t h1, h2; /* state fingerprint before that placement */
  uint64_t ex;     /* entry key: offset ... */
  int64_t er;      /* ... and rank (-1: none) */
  int gstart;      /* 1: first level of a group other than the first */
  uint32_t only;   /* NONE, or the highest rank a candidate may have */
  uint64_t onlyp;  /* ... and the only offset it may take */
};

/* A decomposition: at some level the unplaced tensors of the current
 * group fell apart into groups that share no point in time. Each group is
 * searched on its own from that level's state and key; when one group has
 * no completion the whole level fails (backjump). */
struct dec {
  uint32_t level;  /* level whose state was split */
  uint64_t x0;     /* its entry key: offset ... */
  int64_t r0;      /* ... and rank */
  uint32_t g0, ng; /* groups: (lo, hi) pairs at X->gr[g0 + 2k], k < ng */
  uint32_t gi;     /* group being searched */
  uint64_t h;      /* hash of the above except gi */
};

/* A remembered dead end: the state with fingerprint (h1, h2) has no
 * completion when entered with a key (offset, rank) >= (kpos, krank). */
struct ttent {
  uint64_t h1, h2; /* fingerprint */
  uint64_t kpos;   /* entry key: offset ... */
  int64_t krank;   /* ... and tie key */
  uint32_t gen;    /* search call that wrote it; others are empty */
};

struct ctx {
  const struct planner__prob *p;
  uint64_t *offsets; /* graph order, always a valid plan */
  /* Free tensors sorted by (first, last, graph index), K of them. */
  uint32_t K;
  uint32_t *gi;                 /* graph index */
  uint64_t *size, *align;       /* bytes */
  uint32_t *slo, *shi;          /* section range, local to the component */
  uint32_t *adj_off, *adj;      /* overlap lists, local indexes */
  uint32_t *pin_off, *pinl;     /* pinned obstacles per tensor */
  /* Components: tensors [cb[c], cb[c+1]), sections [sb[c], sb[c+1]). */
  uint32_t nc;
  uint32_t *cb, *sb;
  uint64_t *rem0;               /* initial rem of every section */
  uint64_t *carena;             /* arena of each component's tensors */
  unsigned char *searchable;    /* 0: over the memory cap */
  uint64_t *peak;               /* max rem0 over a tensor's sections */
  struct pin *pins;             /* pinned obstacles, sorted by offset */
  uint32_t npins;
  uint64_t pintop;              /* max top of pinned tensors */
  uint64_t g;                   /* granule, see DESIGN */
  /* Work arrays, sized for the largest searchable component. */
  uint64_t *pos, *floor, *rem, *ptr_v, *ftr, *out;
  uint32_t *ul, *upos, *ptr_i, *rank, *tmp;
  uint32_t *sl_off, *sl;        /* tensors live in each section (CSR) */
  uint64_t *rel;                /* release times, scratch for erd_ok() */
  struct lvl *lv;
  /* Control. */
  struct ttent *tt;             /* EXACT_TT_SIZE dead ends */
  struct dec *dec;              /* decomposition stack */
  uint32_t *gr;                 /* group ranges (lo, hi) pairs */
  uint32_t *bys;                /* local tensors by first section */
  uint32_t *twin;               /* identical tensor of next lower rank */
  uint32_t gen;                 /* current search call, for tt */
  uint64_t nodes;               /* total search nodes */
  uint64_t work;                /* work units done, see poll_stop() */
  uint64_t work_limit;          /* the budget in work units */
  struct timespec t0;
  uint64_t deadline_us;         /* from t0 */
  int cancelled;
};

static uint64_t now_us(const struct ctx *X)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)(t.tv_sec - X->t0.tv_sec) * 1000000u +
         (uint64_t)((t.tv_nsec - X->t0.tv_nsec) / 1000);
}

/* Returns R_TIME, R_CANCEL or R_FOUND (keep going). */
static int poll_stop(struct ctx *X)
{
  const struct planner_options *o = X->p->o;
  if (o->stop && o->stop(o->stop_ctx)) {
    X->cancelled = 1;
    return R_CANCEL;
  }
  if (X->work >= X->work_limit || now_us(X) >= X->deadline_us)
    return R_TIME;
  return R_FOUND;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Lowest offset >= y, aligned for tensor k, that misses its pinned
 * obstacles (sorted by offset, so repeated passes settle quickly). */
static uint64_t fixpin(const struct ctx *X, uint32_t k, uint64_t y)
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

/* ---- preprocessing ------------------------------------------------------ */

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

static void ctx_free(struct ctx *X)
{
  free(X->gi); free(X->size); free(X->align); free(X->slo); free(X->shi);
  free(X->adj_off); free(X->adj); free(X->pin_off); free(X->pinl);
  free(X->cb); free(X->sb); free(X->rem0); free(X->carena);
  free(X->searchable); free(X->peak); free(X->pins);
  free(X->pos); free(X->floor); free(X->rem); free(X->ptr_v); free(X->ftr);
  free(X->out); free(X->ul); free(X->upos); free(X->ptr_i); free(X->rank);
  free(X->tmp); free(X->lv); free(X->tt); free(X->dec); free(X->gr);
  free(X->bys); free(X->twin); free(X->sl_off); free(X->sl); free(X->rel);
}

/* Builds everything the search needs. Returns 0 or ARENA_ENOMEM. */
static int ctx_build(struct ctx *X)
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
   * passes, counting then filling. */
  uint64_t pairs = 0, pinpairs = 0;
  for (uint32_t j = 0; j < ne; j++) {
    for (uint32_t q = j + 1; q < ne && e[q].first <= e[j].last; q++) {
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
      }
      X->pinl[j] = v;
    }
  }

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
  X->tt = calloc(EXACT_TT_SIZE, sizeof *X->tt);
  X->dec = malloc(m1 * sizeof *X->dec);
  X->gr = malloc(4 * (s1 + m1) * sizeof *X->gr);
  X->bys = malloc(m1 * sizeof *X->bys);
  X->twin = malloc(m1 * sizeof *X->twin);
  X->ptr_v = malloc((maxadj + 1) * sizeof *X->ptr_v);
  X->ptr_i = malloc((maxadj + 1) * sizeof *X->ptr_i);
  if (!X->pos || !X->out || !X->ul || !X->upos || !X->rank || !X->tmp ||
      !X->lv || !X->floor || !X->rem || !X->ftr || !X->ptr_v || !X->ptr_i ||
      !X->sl || !X->sl_off || !X->rel || !X->tt ||
      !X->dec || !X->gr || !X->bys || !X->twin)
    return ARENA_ENOMEM;
  return 0;
}

static uint64_t mix64(uint64_t z);


/* ---- rank orders -------------------------------------------------------- */

struct rkey {
  uint64_t k1, k2, k3;
  uint32_t i;
};

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
 * turns. A turn first gives every static order the same limit, doubled
 * from the turn before: one order is often far faster than the rest,
 * and its limit grows geometrically. Then come EXACT_N_JITTERED fresh
 * jittered orders (v >= EXACT_N_ORDERS) under Luby limits:
 * the search is heavy tailed, and a short run of a slightly different
 * order often succeeds where the base orders need millions of nodes. */
static uint64_t round_plan(unsigned r, unsigned *v)
{
  unsigned n = (unsigned)EXACT_N_ORDERS, per = n + EXACT_N_JITTERED;
  unsigned turn = r / per, k = r % per;
  if (k < n) {
    *v = k;
    return EXACT_FIRST_LIMIT << (turn < 40 ? turn : 40);
  }
  unsigned j = turn * EXACT_N_JITTERED + (k - n); /* jittered order j */
  *v = n + j;
  return EXACT_FIRST_LIMIT * luby(j + 1);
}

static uint64_t rank_key(const struct ctx *X, uint32_t k, unsigned key)
{
  const struct planner_tensor *t = &X->p->t[X->gi[k]];
  uint64_t life = (uint64_t)(t->last - t->first) + 1, sz = X->size[k];
  switch (key) {
  case RK_PEAK: return X->peak[k];
  case RK_LIFE: return life;
  case RK_AREA: return life > UINT64_MAX / sz ? UINT64_MAX : life * sz;
  case RK_LAST: return (uint64_t)t->last;
  default: return sz;
  }
}

/* Fills X->rank for component c with static order v, jittered when
 * v >= EXACT_N_ORDERS (ties go to the earlier tensor in
 * first-use order), and X->twin.
 * Returns 0 or ARENA_ENOMEM. */
static int make_rank(struct ctx *X, uint32_t c, unsigned v)
{
  uint32_t a = X->cb[c], m = X->cb[c + 1] - a;
  struct rkey *r = malloc(((size_t)m + 1) * sizeof *r);
  if (!r)
    return ARENA_ENOMEM;
  /* Jittered order v >= EXACT_N_ORDERS is number j = v - EXACT_N_ORDERS:
   * the keys of base order j % EXACT_N_JITTERED, seeded by j. */
  unsigned j0 = v >= EXACT_N_ORDERS ? v - (unsigned)EXACT_N_ORDERS : 0;
  const unsigned char *ord =
      ORDERS[v >= EXACT_N_ORDERS ? j0 % EXACT_N_JITTERED : v];
  for (uint32_t q = 0; q < m; q++) {
    r[q].i = q;
    r[q].k1 = rank_key(X, a + q, ord[0]);
    r[q].k2 = rank_key(X, a + q, ord[1]);
    r[q].k3 = rank_key(X, a + q, ord[2]);
    if (v >= EXACT_N_ORDERS) {
      /* A deterministic +-25% jitter on the first key. */
      uint64_t seed = (uint64_t)(j0 + EXACT_N_JITTERED) << 32;
      uint64_t j = 96 + mix64(seed ^ q) % 65;
      uint64_t k = r[q].k1;
      r[q].k1 = k > UINT64_MAX / 256 ? k : k * j / 128;
    }
  }
  qsort(r, m, sizeof *r, cmp_rkey);
  for (uint32_t q = 0; q < m; q++)
    X->rank[r[q].i] = q;
  /* Identical tensors (size, lifetime, alignment) are interchangeable:
   * swapping two gives a plan with the same offset sum, so some minimal
   * plan has them in rank order, and a tensor waits for its twin of next
   * lower rank. Group them by sorting on those fields, then rank. */
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

/* ---- the search --------------------------------------------------------- */


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
static uint64_t mix64(uint64_t z)
{
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t zt(uint32_t i, uint64_t salt)
{
  return mix64(((uint64_t)i << 1) ^ salt);
}

static uint64_t zs(uint32_t s, uint64_t floor, uint64_t salt)
{
  return mix64(mix64(((uint64_t)s << 1 | 1) ^ salt) + floor);
}

#define SALT1 0x9e3779b97f4a7c15ull
#define SALT2 0xd1b54a32d192ed03ull

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
  uint64_t lo = UINT64_MAX, hi = 0;
  struct job *jb = (struct job *)(void *)X->rel;
  uint32_t n = 0;
  for (uint32_t k = X->sl_off[s]; k < X->sl_off[s + 1]; k++) {
    uint32_t b = X->sl[k];
    if (X->upos[b] >= S->u)
      continue;
    uint64_t r = X->pos[b] > x ? X->pos[b] : x;
    if (r < lo)
      lo = r;
    if (r > hi)
      hi = r;
    jb[n].r = r;
    jb[n].s = S->size[b];
    n++;
  }
  X->work += n;
  if (lo + rem > cap)
    return 0;
  if (hi + rem <= cap)
    return 1; /* stacking from the latest release fits already */
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
    for (uint32_t k = n; k > 1; k >>= 1)
      X->work += 2 * (uint64_t)n; /* ~2 n log2 n sift steps */
  }
  uint64_t t = 0;
  for (uint32_t i = 0; i < n; i++)
    t = (t > jb[i].r ? t : jb[i].r) + jb[i].s;
  return t <= cap;
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
      np = fixpin(X, S->a + b, np);
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

/* Hash of the decomposition stack: the search below a state depends on
 * it too, so dead ends are remembered per stack. */
static uint64_t dec_hash(const struct ctx *X, uint32_t nd)
{
  uint64_t h = 0;
  for (uint32_t k = 0; k < nd; k++)
    h ^= mix64(X->dec[k].h + X->dec[k].gi * 0x9e3779b97f4a7c15ull + k);
  return h;
}

/* Depth-first search for a placement of component c within cap, with at
 * most `limit` nodes. X->rank must hold the order. On R_FOUND the local
 * offsets are in X->out. */
static int search(struct ctx *X, uint32_t c, uint64_t cap, uint64_t limit)
{
  struct srch S;
  memset(&S, 0, sizeof S);
  S.X = X;
  S.a = X->cb[c];
  S.m = X->cb[c + 1] - S.a;
  S.S = X->sb[c + 1] - X->sb[c];
  S.size = X->size + S.a;
  S.align = X->align + S.a;
  S.slo = X->slo + S.a;
  S.shi = X->shi + S.a;
  S.cap = cap;
  /* Callers may run many short searches in a row: poll on every entry. */
  int rc = poll_stop(X);
  if (rc != R_FOUND)
    return rc;
  const uint64_t *rem0 = X->rem0 + X->sb[c];
  for (uint32_t i = 0; i < S.m; i++) {
    X->ul[i] = i;
    X->upos[i] = i;
    X->pos[i] = fixpin(X, S.a + i, 0);
    if (X->pos[i] + S.size[i] > cap)
      return R_INFEAS;
  }
  for (uint32_t s = 0; s < S.S; s++) {
    X->floor[s] = 0;
    X->rem[s] = rem0[s];
    if (rem0[s] > cap)
      return R_INFEAS;
    if (rem0[s] > S.maxrem)
      S.maxrem = rem0[s];
  }
  S.u = S.m;
  for (uint32_t i = 0; i < S.m; i++) {
    S.h1 ^= zt(i, SALT1);
    S.h2 ^= zt(i, SALT2);
  }
  for (uint32_t s = 0; s < S.S; s++)
    if (rem0[s]) {
      S.h1 ^= zs(s, 0, SALT1);
      S.h2 ^= zs(s, 0, SALT2);
    }
  uint32_t gen = ++X->gen;
  if (gen == 0) { /* wrapped: clear the table once */
    memset(X->tt, 0, EXACT_TT_SIZE * sizeof *X->tt);
    gen = X->gen = 1;
  }
  /* Live lists per section, and tensors by first section, by counting. */
  memset(X->sl_off, 0, ((size_t)S.S + 1) * sizeof *X->sl_off);
  for (uint32_t i = 0; i < S.m; i++)
    for (uint32_t s = S.slo[i]; s <= S.shi[i]; s++)
      X->sl_off[s + 1]++;
  for (uint32_t s = 0; s < S.S; s++)
    X->sl_off[s + 1] += X->sl_off[s];
  for (uint32_t i = 0; i < S.m; i++)
    for (uint32_t s = S.slo[i]; s <= S.shi[i]; s++)
      X->sl[X->sl_off[s]++] = i;
  for (uint32_t s = S.S; s > 0; s--)
    X->sl_off[s] = X->sl_off[s - 1];
  X->sl_off[0] = 0;
  /* Tensors are in first-use order within the component already. */
  for (uint32_t i = 0; i < S.m; i++)
    X->bys[i] = i;
  const uint32_t *rank = X->rank;
  struct lvl *lv = X->lv;
  uint32_t d = 0, nd = 0, ngr = 0, grcap = 4 * (S.S + S.m + 1);
  uint64_t fh = 0; /* dec_hash of the current stack */
  uint64_t nodes = 0, next_poll = X->work + EXACT_POLL_UNITS;
  lv[0].ex = 0;
  lv[0].er = -1;
  lv[0].gstart = 0;
  int entering = 1;
  for (;;) {
    struct lvl *L = &lv[d];
    /* Every pass scans the unplaced tensors for the next candidate;
     * failed levels count too, so the unit budget tracks time. */
    X->work += S.u + 8;
    if (entering) {
      entering = 0;
      /* Finish groups that are done; split the current one if it fell
       * apart. */
      int found = 0;
      for (;;) {
        uint32_t lo = 0, hi = S.S - 1;
        if (nd) {
          const struct dec *D = &X->dec[nd - 1];
          lo = X->gr[D->g0 + 2 * D->gi];
          hi = X->gr[D->g0 + 2 * D->gi + 1];
        }
        uint32_t room = grcap - ngr >= 2 ? (grcap - ngr) / 2 : 0;
        uint32_t ng = room ? split(&S, lo, hi, X->gr + ngr) : 1;
        if (ng == 0 && !room)
          ng = 1;
        if (ng == 0) {
          if (nd == 0) {
            found = 1;
            break;
          }
          struct dec *D = &X->dec[nd - 1];
          if (++D->gi < D->ng) {
            L->gstart = 1;
            L->ex = D->x0;
            L->er = D->r0;
            fh = dec_hash(X, nd);
            continue;
          }
          ngr = D->g0;
          nd--;
          fh = dec_hash(X, nd);
          continue;
        }
        if (ng >= 2 && nd < S.m) {
          struct dec *D = &X->dec[nd++];
          D->level = d;
          D->x0 = L->ex;
          D->r0 = L->er;
          D->g0 = ngr;
          D->ng = ng;
          D->gi = 0;
          D->h = mix64(L->ex ^ ((uint64_t)L->er << 40) ^ ng);
          for (uint32_t k = 0; k < ng; k++)
            D->h ^= mix64(((uint64_t)X->gr[ngr + 2 * k] << 32) +
                          X->gr[ngr + 2 * k + 1] + k);
          ngr += 2 * ng;
          fh = dec_hash(X, nd);
          lo = X->gr[D->g0];
          hi = X->gr[D->g0 + 1];
        }
        S.flo = lo;
        S.fhi = hi;
        break;
      }
      /* Entering also splits (all tensors), scans the unplaced tensors
       * for t1 and the group's sections for the lowest one. */
      X->work += S.m + S.u + (S.fhi - S.flo) + 16;
      if (found) {
        for (uint32_t k = 0; k < d; k++)
          X->out[lv[k].c] = lv[k].x;
        rc = R_FOUND;
        break;
      }
      L->kpos = L->ex;
      L->krank = -1;
      uint64_t t = UINT64_MAX;
      for (uint32_t k = 0; k < S.u; k++) {
        uint32_t i = X->ul[k];
        if (S.slo[i] < S.flo || S.slo[i] > S.fhi)
          continue;
        uint64_t v = X->pos[i] + S.size[i];
        if (v < t)
          t = v;
      }
      L->t1 = t;
      /* The lowest section, counting the last offset as a floor. If it
       * has no slack, the point at its floor e must be covered before
       * anything goes higher: the next placement is at e, by a tensor of
       * rank no higher than the last tensor that could cover the point
       * (same-offset placements come in rank order). None: dead end. */
      L->only = NONE;
      {
        uint64_t e = UINT64_MAX;
        uint32_t sl = NONE;
        for (uint32_t s2 = S.flo; s2 <= S.fhi; s2++) {
          if (!X->rem[s2])
            continue;
          uint64_t f = X->floor[s2] > L->ex ? X->floor[s2] : L->ex;
          if (f < e) {
            e = f;
            sl = s2;
          }
        }
        if (sl != NONE && e + X->rem[sl] >= cap) {
          int64_t maxr = -1;
          for (uint32_t k = X->sl_off[sl]; k < X->sl_off[sl + 1]; k++) {
            uint32_t b = X->sl[k];
            if (X->upos[b] >= S.u || X->pos[b] != e)
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
      /* A remembered dead end? */
      const struct ttent *te = &X->tt[(S.h1 ^ fh) & (EXACT_TT_SIZE - 1)];
      if (d > 0 && te->gen == gen && te->h1 == (S.h1 ^ fh) &&
          te->h2 == (S.h2 ^ fh) &&
          (L->ex > te->kpos ||
           (L->ex == te->kpos && L->er >= te->krank)))
        L->t1 = 0; /* no candidate: fails below, without a new entry */
    }
    /* Next candidate of this level. Allowed: key (pos, rank) above the
     * entry key and pos below t1; tried in key order. */
    uint32_t best = NONE;
    uint64_t bp = 0, bs = 0;
    for (uint32_t k = 0; k < S.u; k++) {
      uint32_t i = X->ul[k];
      uint64_t p = X->pos[i];
      if (p >= L->t1 || p < L->kpos)
        continue;
      if (S.slo[i] < S.flo || S.slo[i] > S.fhi)
        continue;
      uint32_t r = rank[i];
      if (p == L->ex && (int64_t)r <= L->er)
        continue;
      if (X->twin[i] != NONE && X->upos[X->twin[i]] < S.u)
        continue;
      if (L->only != NONE && (p != L->onlyp || r > L->only))
        continue;
      uint64_t sec = r;
      if (p == L->kpos && (int64_t)sec <= L->krank)
        continue;
      if (best == NONE || p < bp || (p == bp && sec < bs)) {
        best = i;
        bp = p;
        bs = sec;
      }
    }
    if (best == NONE) {
      /* Level d failed. A group other than the first failing fails its
       * whole decomposition: jump back to the level that split. */
      int done = 0, write = lv[d].t1 != 0;
      for (;;) {
        if (write && d > 0 && !lv[d].gstart) {
          struct ttent *te = &X->tt[(S.h1 ^ fh) & (EXACT_TT_SIZE - 1)];
          te->h1 = S.h1 ^ fh;
          te->h2 = S.h2 ^ fh;
          te->kpos = lv[d].ex;
          te->krank = lv[d].er;
          te->gen = gen;
        }
        while (nd > 0 && X->dec[nd - 1].level == d) {
          ngr = X->dec[nd - 1].g0;
          nd--;
        }
        if (lv[d].gstart) {
          const struct dec *D = &X->dec[nd - 1];
          uint32_t target = D->level;
          while (d > target) {
            d--;
            s_undo(&S, &lv[d]);
          }
          ngr = D->g0;
          nd--;
          fh = dec_hash(X, nd);
          write = 0;
          continue; /* level target failed in turn */
        }
        fh = dec_hash(X, nd);
        if (d == 0) {
          done = 1;
          break;
        }
        d--;
        s_undo(&S, &lv[d]);
        break;
      }
      if (done) {
        rc = R_INFEAS;
        break;
      }
      /* Restore the group of level d (it may differ after a pop). */
      if (nd) {
        const struct dec *D = &X->dec[nd - 1];
        S.flo = X->gr[D->g0 + 2 * D->gi];
        S.fhi = X->gr[D->g0 + 2 * D->gi + 1];
      } else {
        S.flo = 0;
        S.fhi = S.S - 1;
      }
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
      if ((rc = poll_stop(X)) != R_FOUND)
        break;
    }
    if (!s_place(&S, L, best)) {
      s_undo(&S, L);
      continue;
    }
    d++;
    lv[d].ex = L->x;
    lv[d].er = rank[best];
    lv[d].gstart = 0;
    entering = 1;
  }
  X->nodes += nodes;
  return rc;
}

/* ---- drivers ------------------------------------------------------------ */

#define R_NOMEM 100

static uint64_t arena_now(const struct ctx *X)
{
  uint64_t a = X->pintop;
  for (uint32_t c = 0; c < X->nc; c++)
    if (X->carena[c] > a)
      a = X->carena[c];
  return a;
}

/* Makes every component fit cap, searching those that do not yet fit.
 * Returns R_FOUND (all fit now), R_INFEAS (one provably cannot), R_LIMIT
 * (some search hit the node limit), R_TIME, R_CANCEL, R_GIVEUP (a
 * component too large to search does not fit) or R_NOMEM. */
static int feas_all(struct ctx *X, uint64_t cap, uint64_t limit, unsigned v)
{
  int pending = 0;
  for (uint32_t c = 0; c < X->nc; c++) {
    if (X->carena[c] <= cap)
      continue;
    if (!X->searchable[c])
      return R_GIVEUP;
    if (make_rank(X, c, v))
      return R_NOMEM;
    int r = search(X, c, cap, limit);
    if (r == R_FOUND) {
      uint32_t a = X->cb[c], m = X->cb[c + 1] - a;
      uint64_t top = 0;
      for (uint32_t q = 0; q < m; q++) {
        X->offsets[X->gi[a + q]] = X->out[q];
        if (X->out[q] + X->size[a + q] > top)
          top = X->out[q] + X->size[a + q];
      }
      X->carena[c] = top;
    } else if (r == R_LIMIT) {
      pending = 1;
    } else {
      return r;
    }
  }
  return pending ? R_LIMIT : R_FOUND;
}

static int stopped(int r)
{
  return r == R_TIME || r == R_CANCEL || r == R_GIVEUP || r == R_NOMEM;
}

/* The smallest multiple of g above v. */
static uint64_t next_granule(uint64_t v, uint64_t g)
{
  return (v / g + 1) * g;
}

/* The least arena above cap that an optimal plan can have. The top
 * tensor of a plan above cap is free (pinned tops stay within the bounds
 * searched), so the arena is offset + size with the offset a multiple of
 * that tensor's alignment; and an optimal arena is a multiple of g. */
static uint64_t next_arena(const struct ctx *X, uint64_t cap)
{
  uint64_t best = UINT64_MAX;
  for (uint32_t k = 0; k < X->K; k++) {
    uint64_t s = X->size[k], v;
    if (cap + 1 <= s)
      v = s;
    else
      v = planner__align_up(cap + 1 - s, X->align[k]) + s;
    if (v < best)
      best = v;
  }
  uint64_t gr = next_granule(cap, X->g);
  return best != UINT64_MAX && best > gr ? best : gr;
}

int planner__exact(const struct planner__prob *p, uint64_t *offsets,
                   struct planner_plan *res, uint32_t default_budget_ms)
{
  struct ctx X;
  memset(&X, 0, sizeof X);
  X.p = p;
  X.offsets = offsets;
  clock_gettime(CLOCK_MONOTONIC, &X.t0);
  const struct planner_options *o = p->o;
  uint64_t budget = o->budget_ms ? o->budget_ms : default_budget_ms;
  if (!budget)
    budget = PLANNER_DEFAULT_BUDGET_MS;
  X.deadline_us = budget * 1000u + EXACT_GRACE_US;
  X.work_limit = budget * EXACT_UNITS_PER_MS;
  int rc = ctx_build(&X);
  if (rc) {
    ctx_free(&X);
    return rc;
  }
  uint64_t g = X.g, lb = res->lower_bound_bytes;
  if (X.pintop > lb)
    lb = X.pintop;
  if (lb % g)
    lb = next_granule(lb, g);
  int raised = 0, r = R_FOUND;
  unsigned round = 0, v;
  uint64_t limit = round_plan(round, &v);
  if (o->capacity) {
    uint64_t cap = o->capacity;
    if (arena_now(&X) <= cap) {
      res->fit = PLANNER_FIT_YES;
    } else if (lb > cap) {
      res->fit = PLANNER_FIT_NO;
    } else {
      res->fit = PLANNER_FIT_UNKNOWN;
      for (;;) {
        r = feas_all(&X, cap, limit, v);
        if (r == R_FOUND) {
          res->fit = PLANNER_FIT_YES;
        } else if (r == R_INFEAS) {
          res->fit = PLANNER_FIT_NO;
          if (next_arena(&X, cap) > lb) {
            lb = next_arena(&X, cap);
            raised = 1;
          }
        } else if (r == R_LIMIT) {
          round++;
          limit = round_plan(round, &v);
          if ((r = poll_stop(&X)) == R_FOUND)
            continue;
        }
        break;
      }
    }
  } else {
    uint64_t ub = arena_now(&X);
    while (ub > lb) {
      r = feas_all(&X, lb, limit, v);
      if (r == R_FOUND) {
        ub = arena_now(&X);
        break;
      }
      if (r == R_INFEAS) {
        lb = next_arena(&X, lb);
        raised = 1;
        continue;
      }
      if (stopped(r))
        break;
      /* Descend from the incumbent at the same node limit, in steps
       * that start at half the gap, stay while they succeed and halve
       * when a search runs out of nodes or proves its target too low. */
      uint64_t step = (ub - lb) / 2 / g * g;
      int misses = 0; /* searches that ran out of nodes this round */
      while (ub > lb) {
        if (step < g)
          step = g;
        uint64_t top = (ub - 1) / g * g; /* largest multiple below ub */
        uint64_t cap = top >= lb + (step - g) ? top - (step - g) : lb;
        r = feas_all(&X, cap, limit, v);
        if (r == R_FOUND) {
          ub = arena_now(&X);
          continue;
        }
        if (r == R_INFEAS) {
          lb = next_arena(&X, cap);
          raised = 1;
        } else if (r != R_LIMIT || step == g || ++misses >= 2) {
          break; /* keep most of the nodes for the attempts at lb */
        }
        step = step / 2 / g * g;
      }
      if (stopped(r))
        break;
      if ((r = poll_stop(&X)) != R_FOUND)
        break;
      round++;
      limit = round_plan(round, &v);
    }
  }
  res->arena_bytes = arena_now(&X);
  if (lb > res->lower_bound_bytes) {
    res->lower_bound_bytes = lb;
    if (raised)
      res->bound = PLANNER_BOUND_SEARCH;
  }
  res->proven_optimal = res->arena_bytes <= res->lower_bound_bytes;
  res->nodes_explored = X.nodes;
  res->search_us = now_us(&X);
  int cancelled = X.cancelled;
  ctx_free(&X);
  if (r == R_NOMEM)
    return ARENA_ENOMEM;
  return cancelled ? ARENA_ECANCELED : 0;
}

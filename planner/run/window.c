/*
 * window.c - planner_improve_window(): one step of improvement of a
 * large plan that re-plans one window of it around its peak, in memory
 * proportional to the window rather than to the graph (planner.h,
 * WINDOWED IMPROVEMENT).
 *
 * DESIGN
 *  The window is a region of the given plan: a band of memory, every
 *  byte from offset `base` up over all of time, joined to a stretch of
 *  time, operators [a, b], over all of memory. The band is as deep as
 *  half the window's tensors allow (base the lowest multiple of the
 *  alignment with at most that many tensors ending above it); the
 *  stretch is centred on the middle of the life of the tensor that
 *  reaches the top of the plan and as wide as the rest allows.
 *
 *  Its free tensors are the unpinned ones wholly inside it: alive only
 *  in [a, b], or placed at base or above. Every other tensor's part
 *  inside it is a pinned piece of the window's graph at its offset:
 *  inside [a, b] the whole tensor, cut to [a, b]; outside, its bytes
 *  from base up. Outside [a, b] a pinned floor [0, base) keeps the free
 *  tensors of the band above base. planner_run() plans that graph; its
 *  free tensors' offsets replace theirs in the given plan.
 *
 *  Validity. A free tensor meets in time only tensors of the window's
 *  graph inside [a, b] (every tensor alive there is in it, whole), and
 *  outside it only tensors that lie below base, under the floor, or
 *  whose part above base is a piece. planner_run() verifies the
 *  window's plan and this file verifies the whole plan again before it
 *  returns it (planner_verify(), O(n log n)).
 *
 *  Sizes. Choosing the region scans the graph's tensors a few dozen
 *  times (binary searches over base and over the stretch's radius, each
 *  step one scan) and needs no memory per tensor of the graph; the
 *  window's graph has at most 3 W + 2 entries (a tensor that crosses
 *  the stretch's edges above base is up to three pieces), so the
 *  planning takes memory in proportion to W. The new plan's offsets and
 *  its verification are in proportion to the graph.
 */
#include <stdlib.h>
#include <string.h>

#include "planner_int.h"

/* The band takes at most 1 / WIN_BAND_SHARE of the window's tensors. */
#define WIN_BAND_SHARE 2u
/* The stretch spans all of memory when it can be WIN_MIN_RADIUS
 * operators wide each side; else it reaches at most this many times
 * deeper than the band... */
#define WIN_DEPTH_MAX 64u
/* ...and is at least this many operators wide on each side of its
 * centre, when that is possible at any depth. */
#define WIN_MIN_RADIUS 200

/* Tensor i's top in the given plan. */
static uint64_t top_of(const struct planner_graph *g, const uint64_t *off,
                       size_t i)
{
  return off[i] + g->tensors[i].size;
}

/* The region of a window: the band from base up, the stretch [a, b]. */
struct wregion {
  uint64_t base;  /* the band's lower edge, outside [a, b] */
  uint64_t wbase; /* the stretch's lower edge, <= base */
  int64_t a, b;
  int64_t t0, t1; /* the graph's first and last operator */
};

/* Tensors of size that end above base. */
static size_t count_band(const struct planner_graph *g, const uint64_t *off,
                         uint64_t base)
{
  size_t c = 0;
  for (size_t i = 0; i < g->n_tensors; i++)
    c += g->tensors[i].size && top_of(g, off, i) > base;
  return c;
}

/* Tensors of size ending above wbase but not above base that are alive
 * in [a, b]. */
static size_t count_stretch(const struct planner_graph *g,
                            const uint64_t *off, const struct wregion *R)
{
  size_t c = 0;
  for (size_t i = 0; i < g->n_tensors; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    uint64_t top = top_of(g, off, i);
    c += t->size && top <= R->base && top > R->wbase && t->first <= R->b &&
         t->last >= R->a;
  }
  return c;
}

/* The lowest multiple of align from which at most `most` tensors end
 * above. */
static uint64_t band_base(const struct planner_graph *g, const uint64_t *off,
                          uint64_t arena, uint64_t align, size_t most)
{
  uint64_t lo = 0, hi = arena / align + 1;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (count_band(g, off, mid * align) <= most)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo * align;
}

/* Sets R->a, R->b to the widest stretch about c with at most `left`
 * tensors of count_stretch(); returns its radius, or -1 when even the
 * operator c alone holds more. */
static int64_t widest(const struct planner_graph *g, const uint64_t *off,
                      struct wregion *R, int64_t c, size_t left)
{
  uint64_t lo = 0, hi = (uint64_t)(R->t1 - R->t0) + 1;
  R->a = R->b = c;
  if (count_stretch(g, off, R) > left)
    return -1;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo + 1) / 2;
    R->a = c - (int64_t)mid < R->t0 ? R->t0 : c - (int64_t)mid;
    R->b = c + (int64_t)mid > R->t1 ? R->t1 : c + (int64_t)mid;
    if (count_stretch(g, off, R) <= left)
      lo = mid;
    else
      hi = mid - 1;
  }
  R->a = c - (int64_t)lo < R->t0 ? R->t0 : c - (int64_t)lo;
  R->b = c + (int64_t)lo > R->t1 ? R->t1 : c + (int64_t)lo;
  return (int64_t)lo;
}

/* Chooses the region of at most w tensors (see DESIGN). */
static void choose(const struct planner_graph *g, const uint64_t *off,
                   uint64_t arena, uint64_t align, size_t w,
                   struct wregion *R)
{
  size_t k = 0;
  R->t0 = INT64_MAX;
  R->t1 = 0;
  for (size_t i = 0; i < g->n_tensors; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    if (t->first < R->t0)
      R->t0 = t->first;
    if (t->last > R->t1)
      R->t1 = t->last;
    if (top_of(g, off, i) > top_of(g, off, k))
      k = i;
  }
  R->base = band_base(g, off, arena, align, w / WIN_BAND_SHARE);
  size_t left = w - count_band(g, off, R->base);
  uint64_t excess = arena > R->base ? arena - R->base : 0;
  const struct planner_tensor *t = &g->tensors[k];
  int64_t c = t->first + (t->last - t->first) / 2;
  /* The deepest stretch (WIN_DEPTH_MAX x the band's depth, halved in
   * turn) that is still WIN_MIN_RADIUS operators wide each side. */
  R->wbase = 0; /* first over all of memory */
  if (widest(g, off, R, c, left) >= WIN_MIN_RADIUS)
    return;
  for (uint64_t m = WIN_DEPTH_MAX; m >= 1; m /= 2) {
    uint64_t d = excess * m;
    R->wbase = d / m == excess && d < R->base ? (R->base - d) / align * align
                                              : 0;
    int64_t r = widest(g, off, R, c, left);
    if (r >= WIN_MIN_RADIUS || (r >= 0 && m == 1))
      return;
  }
  R->wbase = R->base;
  R->a = 1, R->b = 0; /* no stretch: the band alone */
}

/* The window's graph, built in place. */
struct wgraph {
  struct planner_tensor *t; /* n entries, room for cap */
  size_t n, cap;
  uint32_t *src;            /* n: the graph index of a free entry, or
                               UINT32_MAX for a piece or floor */
};

static int add(struct wgraph *W, const struct planner_tensor *t,
               uint32_t src)
{
  if (W->n == W->cap)
    return -1;
  W->t[W->n] = *t;
  W->t[W->n].id = (uint32_t)W->n;
  W->src[W->n++] = src;
  return 0;
}

/* A pinned piece [lo, hi] x [off, top) of the window's graph. */
static int add_piece(struct wgraph *W, int64_t lo, int64_t hi, uint64_t off,
                     uint64_t top, uint64_t align)
{
  if (lo > hi || top <= off)
    return 0;
  struct planner_tensor p = {0, top - off, lo, hi, align, (int64_t)off, 0, 0};
  return add(W, &p, UINT32_MAX);
}

/* Adds tensor i to the window's graph: free, or its pieces inside the
 * region, or nothing. A piece at an edge (base or wbase, multiples of
 * the options' alignment) takes no alignment of its own. */
static int add_tensor(struct wgraph *W, const struct planner_graph *g,
                      const uint64_t *off, const struct wregion *R,
                      size_t i)
{
  const struct planner_tensor *t = &g->tensors[i];
  uint64_t top = top_of(g, off, i);
  int in_stretch = t->first <= R->b && t->last >= R->a;
  if (!t->size || (top <= R->base && !(in_stretch && top > R->wbase)))
    return 0;
  int inside = t->first >= R->a && t->last <= R->b;
  if (t->pinned == PLANNER_NOT_PINNED &&
      (off[i] >= R->base || (inside && off[i] >= R->wbase))) {
    struct planner_tensor f = *t;
    f.has_alias = 0; /* restored among free pairs by link_aliases() */
    return add(W, &f, (uint32_t)i);
  }
  uint64_t boff = off[i] > R->base ? off[i] : R->base;
  uint64_t bal = off[i] > R->base ? t->align : 0;
  uint64_t woff = off[i] > R->wbase ? off[i] : R->wbase;
  uint64_t wal = off[i] > R->wbase ? t->align : 0;
  if (!in_stretch)
    return add_piece(W, t->first, t->last, boff, top, bal);
  int rc = add_piece(W, t->first > R->a ? t->first : R->a,
                     t->last < R->b ? t->last : R->b, woff, top, wal);
  rc = rc ? rc : add_piece(W, t->first, R->a - 1, boff, top, bal);
  return rc ? rc : add_piece(W, R->b + 1, t->last, boff, top, bal);
}

/* qsort() order of (id, index) pairs by id. */
static int cmp_pair(const void *x, const void *y)
{
  const uint32_t *a = x, *b = y;
  return a[0] != b[0] ? (a[0] < b[0] ? -1 : 1) : 0;
}

/* Keeps the declared aliases of the free entries whose other tensor is
 * free too, renamed to the window's ids. Returns 0 or ARENA_ENOMEM. */
static int link_aliases(struct wgraph *W, const struct planner_graph *g)
{
  size_t nf = 0;
  for (size_t j = 0; j < W->n; j++)
    nf += W->src[j] != UINT32_MAX;
  uint32_t *pairs = malloc((2 * nf + 1) * sizeof *pairs);
  if (!pairs)
    return ARENA_ENOMEM;
  size_t q = 0;
  for (size_t j = 0; j < W->n; j++)
    if (W->src[j] != UINT32_MAX) {
      pairs[2 * q] = g->tensors[W->src[j]].id;
      pairs[2 * q++ + 1] = (uint32_t)j;
    }
  qsort(pairs, nf, 2 * sizeof *pairs, cmp_pair);
  for (size_t j = 0; j < W->n; j++) {
    if (W->src[j] == UINT32_MAX)
      continue;
    const struct planner_tensor *t = &g->tensors[W->src[j]];
    uint32_t key[2] = {t->alias, 0};
    const uint32_t *hit = t->has_alias ? bsearch(key, pairs, nf,
                                                 2 * sizeof *pairs, cmp_pair)
                                       : NULL;
    if (hit) {
      W->t[j].alias = hit[1];
      W->t[j].has_alias = 1;
    }
  }
  free(pairs);
  return 0;
}

/* Builds the window's graph of region R. Returns 0, ARENA_ENOMEM, or 1
 * when it has no free tensor. */
static int build(struct wgraph *W, const struct planner_graph *g,
                 const uint64_t *off, const struct wregion *R, size_t w)
{
  W->cap = 3 * w + 3;
  W->n = 0;
  W->t = malloc(W->cap * sizeof *W->t);
  W->src = malloc(W->cap * sizeof *W->src);
  if (!W->t || !W->src)
    return ARENA_ENOMEM;
  int rc = 0;
  for (size_t i = 0; i < g->n_tensors && !rc; i++)
    rc = add_tensor(W, g, off, R, i);
  if (!rc && R->a <= R->b) {
    rc = add_piece(W, R->t0, R->a - 1, 0, R->base, 0);
    rc = rc ? rc : add_piece(W, R->a, R->b, 0, R->wbase, 0);
    rc = rc ? rc : add_piece(W, R->b + 1, R->t1, 0, R->base, 0);
  } else if (!rc) {
    rc = add_piece(W, R->t0, R->t1, 0, R->base, 0);
  }
  if (rc)
    return 1; /* more entries than counted: not planned */
  size_t nf = 0;
  for (size_t j = 0; j < W->n; j++)
    nf += W->src[j] != UINT32_MAX;
  if (!nf)
    return 1;
  return link_aliases(W, g);
}

/* The whole plan with the window's offsets in place of the free
 * tensors'; its arena in *arena. Returns the offsets (owned) or NULL. */
static uint64_t *merge(const struct planner_graph *g, const uint64_t *off,
                       const struct wgraph *W, const uint64_t *woff,
                       uint64_t *arena)
{
  uint64_t *o = malloc((g->n_tensors + 1) * sizeof *o);
  if (!o)
    return NULL;
  memcpy(o, off, g->n_tensors * sizeof *o);
  for (size_t j = 0; j < W->n; j++)
    if (W->src[j] != UINT32_MAX)
      o[W->src[j]] = woff[j];
  *arena = 0;
  for (size_t i = 0; i < g->n_tensors; i++)
    if (g->tensors[i].size && top_of(g, o, i) > *arena)
      *arena = top_of(g, o, i);
  return o;
}

/* Fills out from the merged offsets (taken) when smaller than given. */
static int finish(const struct planner_graph *g,
                  const struct planner_options *o,
                  const struct planner_plan *given, uint64_t *offsets,
                  uint64_t arena, struct planner_plan *out, int *better,
                  char err[ARENA_ERR_LEN])
{
  if (arena >= given->arena_bytes) {
    free(offsets);
    return 0;
  }
  struct planner_plan p = *given;
  p.offsets = offsets;
  p.arena_bytes = arena;
  p.proven_optimal = arena <= given->lower_bound_bytes;
  p.plan_us = p.validate_us = p.index_us = p.heuristics_us = p.verify_us = 0;
  p.search_us = 0;
  int rc = planner_verify(g, o, &p, err);
  if (rc) {
    free(offsets);
    return rc == ARENA_ENOMEM ? rc : ARENA_EVERIFY;
  }
  planner_plan_cleanup(out);
  *out = p;
  *better = 1;
  return 0;
}

int planner_improve_window(const struct planner_graph *g,
                           const struct planner_options *o,
                           const struct planner_plan *given, size_t max_window,
                           struct planner_plan *out, int *better,
                           char err[ARENA_ERR_LEN])
{
  *better = 0;
  if (err)
    err[0] = '\0';
  if (!g || !g->tensors || !given || !given->offsets ||
      given->n_offsets != g->n_tensors || max_window < 2 ||
      max_window > PLANNER_MAX_TENSORS)
    return ARENA_EINVAL;
  if (o->in_place)
    for (size_t i = 0; i < g->n_tensors; i++)
      if (g->tensors[i].has_alias)
        return 0; /* see planner.h: shared pairs are not windowed */
  uint64_t align = o->alignment ? o->alignment : 1;
  struct wregion R;
  choose(g, given->offsets, given->arena_bytes, align, max_window, &R);
  struct wgraph W = {0};
  int rc = build(&W, g, given->offsets, &R, max_window);
  if (rc == 0) {
    struct planner_options wo = *o;
    struct planner_plan wp;
    planner_plan_init(&wp);
    wo.capacity = 0;
    wo.threads = 1;
    struct planner_graph wg = {W.t, W.n};
    rc = planner_run(&wg, &wo, &wp, err);
    uint64_t arena = 0;
    uint64_t *merged = rc ? NULL : merge(g, given->offsets, &W, wp.offsets,
                                         &arena);
    if (!rc && !merged)
      rc = ARENA_ENOMEM;
    if (!rc)
      rc = finish(g, o, given, merged, arena, out, better, err);
    planner_plan_cleanup(&wp);
  } else if (rc == 1) {
    rc = 0;
  }
  free(W.t);
  free(W.src);
  return rc;
}

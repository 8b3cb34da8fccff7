/*
 * problem.c - validation of graphs and options, the normalised problem
 * every algorithm works on, and the load lower bound.
 */
#include "planner_int.h"
#include "planner_sort.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* The largest arena any planner may produce stays below this, so that
 * offset + size and align_up() never wrap. */
#define ARENA_LIMIT (UINT64_MAX / 2)

int planner__errf(char *err, int code, const char *fmt, ...)
{
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ARENA_ERR_LEN, fmt, ap);
    va_end(ap);
  }
  return code;
}

static int is_pow2(uint64_t v)
{
  return v != 0 && (v & (v - 1)) == 0;
}

uint64_t planner__eff_align(const struct planner_tensor *t,
                            const struct planner_options *o)
{
  return t->align > o->alignment ? t->align : o->alignment;
}

static int check_options(const struct planner_options *o, char *err)
{
  if ((unsigned)o->algo >= PLANNER_ALGO__COUNT)
    return planner__errf(err, ARENA_EINVAL, "unknown algorithm %d",
                         (int)o->algo);
  if (!is_pow2(o->alignment) || o->alignment > PLANNER_MAX_ALIGNMENT)
    return planner__errf(err, ARENA_EALIGN,
                         "alignment %" PRIu64 " is not a power of two "
                         "between 1 and 2^32",
                         o->alignment);
  return 0;
}

static int check_tensor(const struct planner_tensor *t, size_t i,
                        const struct planner_options *o, char *err)
{
  if (t->first < 0)
    return planner__errf(err, ARENA_ELIFETIME,
                         "tensor %" PRIu32 " (row %zu): first operator "
                         "%" PRId64 " is negative",
                         t->id, i, t->first);
  if (t->last < t->first)
    return planner__errf(err, ARENA_ELIFETIME,
                         "tensor %" PRIu32 " (row %zu): lifetime ends at "
                         "%" PRId64 " before it starts at %" PRId64,
                         t->id, i, t->last, t->first);
  if (t->last == INT64_MAX)
    return planner__errf(err, ARENA_EOVERFLOW,
                         "tensor %" PRIu32 ": last operator too large",
                         t->id);
  if (t->align != 0 && (!is_pow2(t->align) || t->align > PLANNER_MAX_ALIGNMENT))
    return planner__errf(err, ARENA_EALIGN,
                         "tensor %" PRIu32 ": alignment %" PRIu64
                         " is not a power of two between 1 and 2^32",
                         t->id, t->align);
  if (t->size > ARENA_LIMIT)
    return planner__errf(err, ARENA_EOVERFLOW,
                         "tensor %" PRIu32 ": size %" PRIu64 " is too large",
                         t->id, t->size);
  if (t->pinned != PLANNER_NOT_PINNED) {
    uint64_t a = planner__eff_align(t, o);
    if (t->pinned < 0 || (uint64_t)t->pinned > ARENA_LIMIT - t->size)
      return planner__errf(err, ARENA_EPINNED,
                           "tensor %" PRIu32 ": pinned offset %" PRId64
                           " is out of range",
                           t->id, t->pinned);
    if ((uint64_t)t->pinned % a != 0)
      return planner__errf(err, ARENA_EPINNED,
                           "tensor %" PRIu32 ": pinned offset %" PRId64
                           " is not aligned to %" PRIu64,
                           t->id, t->pinned, a);
  }
  return 0;
}

static int cmp_id(uint32_t a, uint32_t b, const void *ctx)
{
  const struct planner_tensor *t = ctx;
  return (t[a].id > t[b].id) - (t[a].id < t[b].id);
}

static int check_dup_ids(const struct planner_graph *g, char *err)
{
  uint32_t *idx = planner__iota(g->n_tensors);
  if (!idx || planner__sort_idx(idx, g->n_tensors, cmp_id, g->tensors)) {
    free(idx);
    return planner__errf(err, ARENA_ENOMEM, "out of memory");
  }
  int rc = 0;
  for (size_t k = 1; k < g->n_tensors; k++) {
    const struct planner_tensor *a = &g->tensors[idx[k - 1]];
    const struct planner_tensor *b = &g->tensors[idx[k]];
    if (a->id == b->id) {
      rc = planner__errf(err, ARENA_EDUPID,
                         "tensor id %" PRIu32 " appears twice (rows %" PRIu32
                         " and %" PRIu32 ")",
                         a->id, idx[k - 1], idx[k]);
      break;
    }
  }
  free(idx);
  return rc;
}

/* The worst arena any heuristic can build: everything stacked above the
 * highest pinned tensor, each tensor padded by its alignment. */
static int check_totals(const struct planner_graph *g,
                        const struct planner_options *o, char *err)
{
  uint64_t total = 0, pin_top = 0;
  for (size_t i = 0; i < g->n_tensors; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    /* size <= ARENA_LIMIT and alignment <= 2^32: need cannot wrap, but
     * it can exceed ARENA_LIMIT on its own, and ARENA_LIMIT - need must
     * not be computed then. */
    uint64_t need = t->size + planner__eff_align(t, o);
    if (need > ARENA_LIMIT || total > ARENA_LIMIT - need)
      return planner__errf(err, ARENA_EOVERFLOW,
                           "tensor sizes plus alignment padding exceed "
                           "2^63 - 1 bytes at tensor %" PRIu32,
                           t->id);
    total += need;
    if (t->pinned != PLANNER_NOT_PINNED &&
        (uint64_t)t->pinned + t->size > pin_top)
      pin_top = (uint64_t)t->pinned + t->size;
  }
  if (pin_top > ARENA_LIMIT - total)
    return planner__errf(err, ARENA_EOVERFLOW,
                         "pinned offsets plus tensor sizes exceed 2^63 - 1 "
                         "bytes");
  return 0;
}

static int check_pins(const struct planner_graph *g, char *err)
{
  size_t m = 0;
  for (size_t i = 0; i < g->n_tensors; i++)
    m += g->tensors[i].pinned != PLANNER_NOT_PINNED && g->tensors[i].size;
  if (m < 2)
    return 0;
  uint32_t *sub = malloc(m * sizeof *sub);
  uint64_t *off = calloc(g->n_tensors, sizeof *off);
  int rc = ARENA_ENOMEM;
  if (sub && off) {
    m = 0;
    for (size_t i = 0; i < g->n_tensors; i++) {
      const struct planner_tensor *t = &g->tensors[i];
      off[i] = t->pinned == PLANNER_NOT_PINNED ? 0 : (uint64_t)t->pinned;
      if (t->pinned != PLANNER_NOT_PINNED && t->size)
        sub[m++] = (uint32_t)i;
    }
    uint32_t a, b;
    rc = planner__find_overlap(g->tensors, off, sub, m, &a, &b);
    if (rc == 1)
      rc = planner__errf(err, ARENA_EPINNED,
                         "pinned tensors %" PRIu32 " and %" PRIu32
                         " overlap in time and memory",
                         g->tensors[a].id, g->tensors[b].id);
  }
  if (rc == ARENA_ENOMEM)
    planner__errf(err, rc, "out of memory");
  free(sub);
  free(off);
  return rc;
}

int planner_validate(const struct planner_graph *g,
                     const struct planner_options *o, char err[ARENA_ERR_LEN])
{
  int rc;
  if (!g || !o)
    return planner__errf(err, ARENA_EINVAL, "no graph or options");
  if (g->n_tensors == 0)
    return planner__errf(err, ARENA_EEMPTY, "graph has no tensors");
  if (!g->tensors)
    return planner__errf(err, ARENA_EINVAL, "graph has no tensor array");
  if (g->n_tensors > PLANNER_MAX_TENSORS)
    return planner__errf(err, ARENA_ETOOBIG,
                         "graph has %zu tensors, more than the limit of %u",
                         g->n_tensors, PLANNER_MAX_TENSORS);
  if ((rc = check_options(o, err)))
    return rc;
  for (size_t i = 0; i < g->n_tensors; i++)
    if ((rc = check_tensor(&g->tensors[i], i, o, err)))
      return rc;
  if ((rc = check_totals(g, o, err)))
    return rc;
  if ((rc = check_dup_ids(g, err)))
    return rc;
  return check_pins(g, err);
}

/* ---- lower bound --------------------------------------------------- */

static int cmp_first(uint32_t a, uint32_t b, const void *ctx)
{
  const struct planner_tensor *t = ctx;
  return (t[a].first > t[b].first) - (t[a].first < t[b].first);
}

static int cmp_last(uint32_t a, uint32_t b, const void *ctx)
{
  const struct planner_tensor *t = ctx;
  return (t[a].last > t[b].last) - (t[a].last < t[b].last);
}

/* A max-heap of (slack, last) with lazy deletion of expired entries. */
struct slack_heap {
  uint64_t *slack;
  int64_t *last;
  size_t len;
};

static void heap_push(struct slack_heap *h, uint64_t s, int64_t last)
{
  size_t i = h->len++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (h->slack[p] >= s)
      break;
    h->slack[i] = h->slack[p];
    h->last[i] = h->last[p];
    i = p;
  }
  h->slack[i] = s;
  h->last[i] = last;
}

static void heap_pop(struct slack_heap *h)
{
  uint64_t s = h->slack[--h->len];
  int64_t last = h->last[h->len];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->len)
      break;
    if (c + 1 < h->len && h->slack[c + 1] > h->slack[c])
      c++;
    if (h->slack[c] <= s)
      break;
    h->slack[i] = h->slack[c];
    h->last[i] = h->last[c];
    i = c;
  }
  if (h->len > 0 || i == 0) {
    h->slack[i] = s;
    h->last[i] = last;
  }
}

/* Sweeps the starts in time order; see LOWER BOUND in planner.h. All
 * offsets are multiples of the global alignment G, which is at most every
 * tensor's effective alignment, so G plays the role of A(t). */
static int load_bound(const struct planner_tensor *t, size_t n, uint64_t g_al,
                      uint64_t *out)
{
  uint32_t *byf = planner__iota(n), *byl = planner__iota(n);
  struct slack_heap h = {malloc((n + 1) * sizeof(uint64_t)),
                         malloc((n + 1) * sizeof(int64_t)), 0};
  int rc = ARENA_ENOMEM;
  if (!byf || !byl || !h.slack || !h.last ||
      planner__sort_idx(byf, n, cmp_first, t) ||
      planner__sort_idx(byl, n, cmp_last, t))
    goto out;
  uint64_t live = 0, best = 0;
  size_t j = 0;
  for (size_t i = 0; i < n;) {
    int64_t now = t[byf[i]].first;
    for (; j < n && t[byl[j]].last < now; j++)
      if (t[byl[j]].size && t[byl[j]].first < now)
        live -= planner__align_up(t[byl[j]].size, g_al);
    for (; i < n && t[byf[i]].first == now; i++) {
      const struct planner_tensor *x = &t[byf[i]];
      if (!x->size)
        continue;
      uint64_t r = planner__align_up(x->size, g_al);
      live += r;
      heap_push(&h, r - x->size, x->last);
    }
    while (h.len && h.last[0] < now)
      heap_pop(&h);
    uint64_t lb = live - (h.len ? h.slack[0] : 0);
    if (lb > best)
      best = lb;
  }
  *out = best;
  rc = 0;
out:
  free(byf);
  free(byl);
  free(h.slack);
  free(h.last);
  return rc;
}

int planner_lower_bound(const struct planner_graph *g,
                        const struct planner_options *o, uint64_t *lb_bytes)
{
  *lb_bytes = 0;
  return load_bound(g->tensors, g->n_tensors, o->alignment, lb_bytes);
}

int planner__prob_init(struct planner__prob *p, const struct planner_graph *g,
                       const struct planner_options *o)
{
  p->t = g->tensors;
  p->n = g->n_tensors;
  p->o = o;
  p->naive = 0;
  p->n_pinned = 0;
  p->align = malloc(p->n * sizeof *p->align);
  if (!p->align)
    return ARENA_ENOMEM;
  for (size_t i = 0; i < p->n; i++) {
    p->align[i] = planner__eff_align(&p->t[i], o);
    p->naive += p->t[i].size;
    p->n_pinned += p->t[i].pinned != PLANNER_NOT_PINNED;
  }
  int rc = load_bound(p->t, p->n, o->alignment, &p->lb);
  if (rc)
    planner__prob_cleanup(p);
  return rc;
}

void planner__prob_cleanup(struct planner__prob *p)
{
  free(p->align);
  p->align = NULL;
}

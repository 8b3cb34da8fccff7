/*
 * problem.c - validation of graphs and options, the normalised problem
 * every algorithm works on, and the load lower bound.
 */
#include "alias.h"
#include "planner_int.h"
#include "planner_sort.h"
#include "tindex.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* The largest arena any planner may produce stays below this, so that
 * offset + size and align_up() never wrap. */
#define ARENA_LIMIT (UINT64_MAX / 2)

static int is_pow2(uint64_t v)
{
  return v != 0 && (v & (v - 1)) == 0;
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

/* Names the smallest id that appears twice and its first two rows. */
static int name_dup_id(const struct planner_graph *g, char *err)
{
  size_t n = g->n_tensors;
  struct planner__radix rs = {0};
  uint64_t *key = malloc(n * sizeof *key);
  uint32_t *row = malloc(n * sizeof *row);
  int rc = ARENA_ENOMEM;
  if (key && row) {
    for (size_t i = 0; i < n; i++) {
      key[i] = g->tensors[i].id;
      row[i] = (uint32_t)i;
    }
    rc = planner__radix_sort(key, row, n, &rs) ? ARENA_ENOMEM : 0;
  }
  for (size_t k = 1; !rc && k < n; k++)
    if (key[k - 1] == key[k])
      rc = planner__errf(err, ARENA_EDUPID,
                         "tensor id %" PRIu64 " appears twice (rows %" PRIu32
                         " and %" PRIu32 ")",
                         key[k], row[k - 1], row[k]);
  if (rc == ARENA_ENOMEM)
    planner__errf(err, rc, "out of memory");
  planner__radix_cleanup(&rs);
  free(key);
  free(row);
  return rc;
}

/* Ids are usually dense (0 .. n-1 or close): then a bitmap of the ids
 * seen finds duplicates in one pass. Sparse ids, and the message naming
 * a duplicate, take the sort. */
static int check_dup_ids(const struct planner_graph *g, char *err)
{
  size_t n = g->n_tensors;
  uint32_t max_id = 0;
  for (size_t i = 0; i < n; i++)
    if (g->tensors[i].id > max_id)
      max_id = g->tensors[i].id;
  size_t words = (size_t)max_id / 64 + 1;
  if (words > n)
    return name_dup_id(g, err);
  uint64_t *seen = calloc(words, sizeof *seen);
  if (!seen)
    return planner__errf(err, ARENA_ENOMEM, "out of memory");
  int dup = 0;
  for (size_t i = 0; i < n && !dup; i++) {
    uint32_t id = g->tensors[i].id;
    uint64_t bit = (uint64_t)1 << (id & 63);
    dup = (seen[id / 64] & bit) != 0;
    seen[id / 64] |= bit;
  }
  free(seen);
  return dup ? name_dup_id(g, err) : 0;
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
    rc = planner__find_overlap(g->tensors, off, sub, NULL, m, &a, &b);
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

int planner__check_pins(const struct planner_graph *g, char *err)
{
  return check_pins(g, err);
}

/* Every declared alias names another tensor of the graph. Hands the
 * rows the aliases name to *in_row (NULL: discard them) when g declares
 * one; *in_row stays NULL otherwise and on failure. */
static int check_aliases(const struct planner_graph *g, char *err,
                         uint32_t **in_row)
{
  if (!planner__has_aliases(g))
    return 0;
  uint32_t *rows = NULL;
  int rc = planner__alias_rows(g, &rows, err);
  if (in_row && !rc)
    *in_row = rows;
  else
    free(rows);
  return rc;
}

/* Every check of the rows in one pass over them, where each used to take
 * a pass of its own: each tensor alone (the first bad one is reported),
 * then the totals, then duplicate ids (as check_dup_ids, with a bitmap of
 * the ids below 64 n marked as the pass goes), then colliding pins
 * (check_pins, which needs two pinned tensors). Reports exactly what
 * those checks one after another report. */
static int check_rows(const struct planner_graph *g,
                      const struct planner_options *o, char *err,
                      uint32_t **in_row)
{
  size_t n = g->n_tensors, over = n, pins = 0;
  uint64_t total = 0, pin_top = 0;
  uint64_t *seen = calloc(n, sizeof *seen); /* ids below 64 n */
  planner__advise_huge(seen, n * sizeof *seen);
  int dup = 0, sparse = 0;
  for (size_t i = 0; i < n; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    int rc = check_tensor(t, i, o, err);
    if (rc) {
      free(seen);
      return rc;
    }
    /* the worst arena any heuristic can build: everything stacked above
     * the highest pinned tensor, each tensor's offset rounded up to its
     * alignment, which adds at most alignment - 1 bytes below it (none at
     * alignment 1, so one tensor of 2^63 - 1 bytes fits exactly).
     * size <= ARENA_LIMIT and alignment <= 2^32: need cannot wrap, but it
     * can exceed ARENA_LIMIT on its own, and ARENA_LIMIT - need must not
     * be computed then. */
    uint64_t need = t->size + (planner__eff_align(t, o) - 1);
    if (over == n && (need > ARENA_LIMIT || total > ARENA_LIMIT - need))
      over = i;
    total += over == n ? need : 0;
    if (t->pinned != PLANNER_NOT_PINNED) {
      uint64_t end = (uint64_t)t->pinned + t->size;
      pin_top = end > pin_top ? end : pin_top;
      pins += t->size != 0;
    }
    uint32_t id = t->id;
    if (seen && id / 64 < n) {
      uint64_t bit = (uint64_t)1 << (id & 63);
      dup |= (seen[id / 64] & bit) != 0;
      seen[id / 64] |= bit;
    } else {
      sparse = 1;
    }
  }
  int had_map = seen != NULL;
  free(seen);
  if (over < n)
    return planner__errf(err, ARENA_EOVERFLOW,
                         "tensor sizes plus alignment padding exceed "
                         "2^63 - 1 bytes at tensor %" PRIu32,
                         g->tensors[over].id);
  if (pin_top > ARENA_LIMIT - total)
    return planner__errf(err, ARENA_EOVERFLOW,
                         "pinned offsets plus tensor sizes exceed 2^63 - 1 "
                         "bytes");
  int rc = !had_map ? check_dup_ids(g, err) /* its own, smaller, bitmap */
           : sparse || dup ? name_dup_id(g, err)
                           : 0;
  if (!rc && pins >= 2)
    rc = check_pins(g, err);
  return rc ? rc : check_aliases(g, err, in_row);
}

int planner_validate(const struct planner_graph *g,
                     const struct planner_options *o, char err[ARENA_ERR_LEN])
{
  return planner__validate(g, o, err, NULL);
}

int planner__validate(const struct planner_graph *g,
                      const struct planner_options *o, char *err,
                      uint32_t **in_row)
{
  int rc;
  if (in_row)
    *in_row = NULL;
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
  return check_rows(g, o, err, in_row);
}

/* ---- the problem and its lower bound -------------------------------- */

/* The load bound without the time index (which tindex_load_bound() reads
 * it from): the same sums and slacks over operators instead of spans.
 * Inside a span the live tensors do not change, so the maximum over the
 * operators is the maximum over the spans; an operator no tensor covers
 * counts 0. Sizes rounded to the alignment are added at first and
 * taken away after last in an array over operators, whose prefix sum is
 * what is live; the largest slack of the live tensors comes from a
 * segment tree over operators (the layout of tindex.h): each tensor
 * raises the tags of the nodes that cover its lifetime, and a pass from
 * the root down gives each leaf the largest tag on its path. O(n log T +
 * T) for a timeline of T operators, which must be short: at most 2 n +
 * 1024 operators, else 1 is returned and nothing is computed. */
int planner__direct_load_bound(const struct planner__prob *p, uint64_t *lb)
{
  uint64_t g_al = p->o->alignment, top = 0;
  *lb = 0;
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].size && (uint64_t)p->t[i].last + 1 > top)
      top = (uint64_t)p->t[i].last + 1;
  if (top > 2 * (uint64_t)p->n + 1024)
    return 1;
  size_t T = (size_t)top;
  uint64_t *live = calloc(T + 1, sizeof *live);
  uint32_t *tag = g_al > 1 ? calloc(2 * T + 1, sizeof *tag) : NULL;
  if (!live || (g_al > 1 && !tag)) {
    free(live);
    free(tag);
    return ARENA_ENOMEM;
  }
  for (size_t i = 0; i < p->n; i++) {
    const struct planner_tensor *t = &p->t[i];
    if (!t->size)
      continue;
    uint64_t rounded = planner__align_up(t->size, g_al);
    live[t->first] += rounded;
    live[t->last + 1] -= rounded;
    uint32_t slack = (uint32_t)(rounded - t->size);
    if (!tag || !slack)
      continue;
    size_t lo = (size_t)t->first + T, hi = (size_t)t->last + 1 + T;
    for (; lo < hi; lo >>= 1, hi >>= 1) {
      if ((lo & 1) && tag[lo] < slack)
        tag[lo] = slack;
      lo += lo & 1;
      if ((hi & 1) && tag[hi - 1] < slack)
        tag[hi - 1] = slack;
      hi -= hi & 1;
    }
  }
  if (tag) /* parents come before their children */
    for (size_t v = 2; v < 2 * T; v++)
      if (tag[v >> 1] > tag[v])
        tag[v] = tag[v >> 1];
  uint64_t sum = 0;
  for (size_t s = 0; s < T; s++) {
    sum += live[s];
    uint64_t here = sum - (tag ? tag[T + s] : 0);
    if (here > *lb)
      *lb = here;
  }
  free(live);
  free(tag);
  return 0;
}

/* p's load bound into p->lb, by planner__direct_load_bound() or, for a
 * long timeline, from a time index built for it and dropped again. */
static int load_bound(struct planner__prob *p)
{
  int rc = planner__direct_load_bound(p, &p->lb);
  if (rc != 1)
    return rc;
  struct tindex x;
  if (tindex_init(&x, p))
    return ARENA_ENOMEM;
  rc = tindex_load_bound(&x, p->o->alignment, &p->lb);
  tindex_cleanup(&x);
  return rc;
}

int planner_lower_bound(const struct planner_graph *g,
                        const struct planner_options *o, uint64_t *lb_bytes)
{
  struct planner__prob p;
  *lb_bytes = 0;
  int rc = planner__prob_init_bound(&p, g, o);
  if (rc)
    return rc;
  *lb_bytes = p.lb;
  planner__prob_cleanup(&p);
  return 0;
}

int planner__prob_init_bound(struct planner__prob *p,
                             const struct planner_graph *g,
                             const struct planner_options *o)
{
  int rc = planner__prob_init_bare(p, g, o);
  if (!rc && (rc = load_bound(p)) != 0)
    planner__prob_cleanup(p);
  return rc;
}

int planner__prob_init_bare(struct planner__prob *p,
                            const struct planner_graph *g,
                            const struct planner_options *o)
{
  p->t = g->tensors;
  p->n = g->n_tensors;
  p->o = o;
  p->naive = 0;
  p->n_pinned = 0;
  p->lb = 0;
  p->x = NULL;
  p->align = malloc(p->n * sizeof *p->align);
  if (!p->align)
    return ARENA_ENOMEM;
  planner__advise_huge(p->align, p->n * sizeof *p->align);
  for (size_t i = 0; i < p->n; i++) {
    p->align[i] = planner__eff_align(&p->t[i], o);
    p->naive += p->t[i].size;
    p->n_pinned += p->t[i].pinned != PLANNER_NOT_PINNED;
  }
  return 0;
}

int planner__prob_init(struct planner__prob *p, const struct planner_graph *g,
                       const struct planner_options *o)
{
  int rc = planner__prob_init_bare(p, g, o);
  if (rc)
    return rc;
  p->x = malloc(sizeof *p->x);
  if (!p->x) {
    planner__prob_cleanup(p);
    return ARENA_ENOMEM;
  }
  rc = tindex_init(p->x, p);
  if (!rc)
    rc = tindex_load_bound(p->x, o->alignment, &p->lb);
  if (rc)
    planner__prob_cleanup(p);
  return rc;
}

void planner__prob_drop_index(struct planner__prob *p)
{
  if (p->x)
    tindex_cleanup(p->x);
  free(p->x);
  p->x = NULL;
}

void planner__prob_cleanup(struct planner__prob *p)
{
  planner__prob_drop_index(p);
  free(p->align);
  p->align = NULL;
}

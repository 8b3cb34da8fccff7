/*
 * alias.c - the rules of in-place sharing (planner.h, IN-PLACE SHARING)
 * in one place: whether a declared pair is legal, which pairs a planner
 * takes, and which pairs a plan took, for the planner (run/) and the
 * verifier (verify.c). Part of planner/core/ (libc only).
 *
 * The legality rule makes chains safe by construction: out.first ==
 * in.last > in.first, so along a chain the first operators strictly
 * rise. A chain therefore never closes into a loop, and two tensors of
 * one chain that are not neighbours never live at the same operator:
 * only neighbours meet, at the one operator where the output is first
 * written over its input.
 */
#include "alias.h"

#include "planner_int.h"
#include "planner_sort.h"

#include <inttypes.h>
#include <stdlib.h>

const char *planner_alias_check(const struct planner_tensor *out,
                                const struct planner_tensor *in,
                                const struct planner_options *o)
{
  if (out == in || out->id == in->id)
    return "a tensor cannot reuse its own bytes";
  if (!out->size || !in->size)
    return "an empty tensor has no bytes to share";
  if (in->last != out->first)
    return in->last > out->first
               ? "the input is still used after the output is written"
               : "the input's last use is not the operator that writes "
                 "the output";
  if (in->first >= in->last)
    return "the input is not written before the operator that reuses it";
  uint64_t a = o->alignment;
  if (planner__align_up(in->size, a) != planner__align_up(out->size, a))
    return "the sizes differ after alignment";
  if (in->pinned != PLANNER_NOT_PINNED && out->pinned != PLANNER_NOT_PINNED)
    return in->pinned == out->pinned ? NULL : "they are pinned apart";
  const struct planner_tensor *p = in->pinned != PLANNER_NOT_PINNED ? in
                                   : out->pinned != PLANNER_NOT_PINNED
                                       ? out
                                       : NULL;
  const struct planner_tensor *q = p == in ? out : in;
  if (p && ((uint64_t)p->pinned & (planner__eff_align(q, o) - 1)))
    return "the pinned offset is not aligned for the other tensor";
  return NULL;
}

int planner__has_aliases(const struct planner_graph *g)
{
  for (size_t i = 0; i < g->n_tensors; i++)
    if (g->tensors[i].has_alias)
      return 1;
  return 0;
}

/* The row of id in the sorted (key = id, row) pairs, or PLANNER__NO_ROW. */
static uint32_t row_of_id(const uint64_t *key, const uint32_t *row,
                          size_t n, uint32_t id)
{
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (key[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && key[lo] == id ? row[lo] : PLANNER__NO_ROW;
}

int planner__alias_rows(const struct planner_graph *g, uint32_t **in_row,
                        char *err)
{
  size_t n = g->n_tensors;
  const struct planner_tensor *t = g->tensors;
  struct planner__radix rs = {0};
  uint64_t *key = malloc(n * sizeof *key);
  uint32_t *row = malloc(n * sizeof *row);
  uint32_t *out = malloc(n * sizeof *out);
  int rc = key && row && out ? 0 : ARENA_ENOMEM;
  for (size_t i = 0; !rc && i < n; i++) {
    key[i] = t[i].id;
    row[i] = (uint32_t)i;
  }
  if (!rc && planner__radix_sort(key, row, n, &rs))
    rc = ARENA_ENOMEM;
  for (size_t i = 0; !rc && i < n; i++) {
    out[i] = t[i].has_alias ? row_of_id(key, row, n, t[i].alias)
                            : PLANNER__NO_ROW;
    if (t[i].has_alias && t[i].alias == t[i].id)
      rc = planner__errf(err, ARENA_EINVAL,
                         "tensor %" PRIu32 " names itself as its alias",
                         t[i].id);
    else if (t[i].has_alias && out[i] == PLANNER__NO_ROW)
      rc = planner__errf(err, ARENA_EINVAL,
                         "tensor %" PRIu32 " reuses tensor %" PRIu32
                         ", which is not in the graph",
                         t[i].id, t[i].alias);
  }
  if (rc == ARENA_ENOMEM)
    planner__errf(err, rc, "out of memory");
  planner__radix_cleanup(&rs);
  free(key);
  free(row);
  if (rc)
    free(out);
  *in_row = rc ? NULL : out;
  return rc;
}

/* Union-find over rows, with what a chain must keep in agreement. */
struct chains {
  uint32_t *up;    /* parent row; a root is its own parent */
  int64_t *pin;    /* by root: the chain's pinned offset, or none */
  uint64_t *align; /* by root: the largest effective alignment */
  uint8_t *reused; /* by row: its bytes already went to an output */
};

static void chains_free(struct chains *c)
{
  free(c->up);
  free(c->pin);
  free(c->align);
  free(c->reused);
}

static int chains_init(struct chains *c, const struct planner_graph *g,
                       const struct planner_options *o)
{
  size_t n = g->n_tensors;
  c->up = malloc(n * sizeof *c->up);
  c->pin = malloc(n * sizeof *c->pin);
  c->align = malloc(n * sizeof *c->align);
  c->reused = calloc(n, sizeof *c->reused);
  if (!c->up || !c->pin || !c->align || !c->reused) {
    chains_free(c);
    return ARENA_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    c->up[i] = (uint32_t)i;
    c->pin[i] = g->tensors[i].pinned;
    c->align[i] = planner__eff_align(&g->tensors[i], o);
  }
  return 0;
}

static uint32_t find_root(uint32_t *up, uint32_t i)
{
  while (up[i] != i) {
    up[i] = up[up[i]]; /* halve the path */
    i = up[i];
  }
  return i;
}

/* Joins the chains of rows a and b when their pins and alignments
 * agree; returns 1 when joined. The root with the lower row stays. */
static int join(struct chains *c, uint32_t a, uint32_t b)
{
  uint32_t ra = find_root(c->up, a), rb = find_root(c->up, b);
  int64_t pa = c->pin[ra], pb = c->pin[rb];
  if (pa != PLANNER_NOT_PINNED && pb != PLANNER_NOT_PINNED && pa != pb)
    return 0;
  int64_t pin = pa != PLANNER_NOT_PINNED ? pa : pb;
  uint64_t al = c->align[ra] > c->align[rb] ? c->align[ra] : c->align[rb];
  if (pin != PLANNER_NOT_PINNED && ((uint64_t)pin & (al - 1)))
    return 0;
  uint32_t lo = ra < rb ? ra : rb, hi = ra < rb ? rb : ra;
  c->up[hi] = lo;
  c->pin[lo] = pin;
  c->align[lo] = al;
  return 1;
}

int planner__alias_groups(const struct planner_graph *g,
                          const struct planner_options *o,
                          const uint32_t *in_row, uint32_t *group,
                          size_t *n_groups, size_t *n_taken)
{
  size_t n = g->n_tensors;
  const struct planner_tensor *t = g->tensors;
  struct chains c;
  *n_groups = *n_taken = 0;
  if (chains_init(&c, g, o))
    return ARENA_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    uint32_t k = in_row[i];
    if (k == PLANNER__NO_ROW || c.reused[k] ||
        planner_alias_check(&t[i], &t[k], o) || !join(&c, (uint32_t)i, k))
      continue;
    c.reused[k] = 1;
    (*n_taken)++;
  }
  /* a root is its chain's lowest row, so it comes first in this pass */
  for (size_t i = 0; i < n; i++) {
    uint32_t r = find_root(c.up, (uint32_t)i);
    group[i] = r == i ? (uint32_t)(*n_groups)++ : group[r];
  }
  chains_free(&c);
  return 0;
}

int planner__alias_taken(const struct planner_graph *g,
                         const struct planner_options *o,
                         const uint32_t *in_row, const uint64_t *offsets,
                         uint32_t *root, size_t *n_taken, char *err)
{
  size_t n = g->n_tensors;
  const struct planner_tensor *t = g->tensors;
  uint32_t *taker = malloc(n * sizeof *taker);
  *n_taken = 0;
  if (!taker)
    return planner__errf(err, ARENA_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++)
    root[i] = taker[i] = (uint32_t)i;
  int rc = 0;
  for (size_t i = 0; !rc && i < n; i++) {
    uint32_t k = in_row[i];
    if (k == PLANNER__NO_ROW || offsets[i] != offsets[k] ||
        planner_alias_check(&t[i], &t[k], o))
      continue;
    if (taker[k] != k)
      rc = planner__errf(err, ARENA_EVERIFY,
                         "tensors %" PRIu32 " and %" PRIu32
                         " both reuse the bytes of tensor %" PRIu32,
                         t[taker[k]].id, t[i].id, t[k].id);
    taker[k] = (uint32_t)i;
    uint32_t ri = find_root(root, (uint32_t)i), rk = find_root(root, k);
    root[ri > rk ? ri : rk] = ri < rk ? ri : rk;
    (*n_taken)++;
  }
  for (size_t i = 0; !rc && i < n; i++)
    root[i] = find_root(root, (uint32_t)i);
  free(taker);
  return rc;
}

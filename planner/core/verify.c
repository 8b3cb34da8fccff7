/*
 * verify.c - the plan verifier. Every plan arenad stores or serves goes
 * through planner_verify() first: a wrong offset is silent memory
 * corruption in someone else's process.
 *
 * Each tensor is checked alone (offset aligned, end within 64 bits),
 * then the tensors are searched for two that overlap in both time and
 * memory (planner__find_overlap(), overlap.c, whose comment gives the
 * method). Part of planner/core/ (libc only).
 *
 * In-place sharing: when the graph declares aliases, the declared legal
 * pairs at one offset (alias.c) are joined into chains first, each chain
 * checked as one tensor over its members' whole lifetime and their
 * largest size. Their sizes agree once rounded to the alignment every
 * offset keeps, so another tensor overlaps that one exactly when it
 * overlaps a member that is live with it; any other overlap, of an
 * undeclared or illegal pair or of a pair at two offsets, fails as
 * before.
 */
#include "alias.h"
#include "planner_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Whether v[0..m) are m non-empty rows of g in strictly ascending
 * (first, row) order: with m the count of non-empty rows, exactly those
 * rows by (first, row). Keeps the check independent of where v came
 * from. */
static int rows_by_first(const struct planner_graph *g, const uint32_t *v,
                         size_t m)
{
  const struct planner_tensor *t = g->tensors;
  for (size_t k = 0; k < m; k++) {
    if (v[k] >= g->n_tensors || !t[v[k]].size)
      return 0;
    if (k && (t[v[k - 1]].first > t[v[k]].first ||
              (t[v[k - 1]].first == t[v[k]].first && v[k - 1] >= v[k])))
      return 0;
  }
  return 1;
}

/* Checks each tensor alone, sets *top to the highest end and lists the
 * non-empty rows in sub (*m of them). */
static int check_each(const struct planner_graph *g,
                      const struct planner_options *o,
                      const struct planner_plan *p, uint64_t *top,
                      uint32_t *sub, size_t *m, char *err)
{
  *top = 0;
  *m = 0;
  for (size_t i = 0; i < g->n_tensors; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    uint64_t off = p->offsets[i], al = planner__eff_align(t, o);
    if (t->pinned != PLANNER_NOT_PINNED && off != (uint64_t)t->pinned)
      return planner__errf(err, ARENA_EVERIFY,
                           "tensor %" PRIu32 " is pinned at %" PRId64
                           " but placed at %" PRIu64,
                           t->id, t->pinned, off);
    if (t->size == 0)
      continue;
    if (off & (al - 1)) /* a power of two, validated */
      return planner__errf(err, ARENA_EVERIFY,
                           "tensor %" PRIu32 " at offset %" PRIu64
                           " is not aligned to %" PRIu64,
                           t->id, off, al);
    if (off > UINT64_MAX / 2 - t->size)
      return planner__errf(err, ARENA_EVERIFY,
                           "tensor %" PRIu32 " at offset %" PRIu64
                           " ends beyond the addressable range",
                           t->id, off);
    if (off + t->size > *top)
      *top = off + t->size;
    sub[(*m)++] = (uint32_t)i;
  }
  return 0;
}

/* Rows a and b are chain roots that overlap as chains: names the two
 * members, one of each, that overlap in time and memory. */
static void name_members(const struct planner_tensor *t, const uint32_t *root,
                         const uint64_t *off, size_t n, uint32_t *a,
                         uint32_t *b)
{
  uint32_t ra = *a, rb = *b;
  for (size_t i = 0; i < n; i++) {
    if (root[i] != ra || !t[i].size)
      continue;
    for (size_t j = 0; j < n; j++)
      if (root[j] == rb && t[j].size && t[i].first <= t[j].last &&
          t[j].first <= t[i].last && off[i] < off[j] + t[j].size &&
          off[j] < off[i] + t[i].size) {
        *a = (uint32_t)i;
        *b = (uint32_t)j;
        return;
      }
  }
}

/* The overlap search of a graph with aliases (see the top): returns 1
 * with a bad pair in *a, *b, 0, or an error code described in err.
 * given_rows: the rows g's aliases name (borrowed), or NULL to resolve
 * them here. */
static int check_shared(const struct planner_graph *g,
                        const struct planner_options *o,
                        const struct planner_plan *p,
                        const uint32_t *given_rows, uint32_t *sub, size_t m,
                        uint32_t *a, uint32_t *b, char *err)
{
  size_t n = g->n_tensors, taken = 0, k = 0;
  uint32_t *own_rows = NULL, *root = malloc(n * sizeof *root);
  const uint32_t *in_row = given_rows;
  struct planner_tensor *t = malloc(n * sizeof *t);
  int rc = root && t ? 0 : ARENA_ENOMEM;
  if (!rc && !in_row) {
    rc = planner__alias_rows(g, &own_rows, err);
    in_row = own_rows;
  }
  if (!rc)
    rc = planner__alias_taken(g, o, in_row, p->offsets, root, &taken, err);
  if (!rc) {
    memcpy(t, g->tensors, n * sizeof *t);
    for (size_t i = 0; i < n; i++) { /* a chain is its root's row */
      struct planner_tensor *r = &t[root[i]];
      const struct planner_tensor *x = &g->tensors[i];
      r->first = x->first < r->first ? x->first : r->first;
      r->last = x->last > r->last ? x->last : r->last;
      r->size = x->size > r->size ? x->size : r->size;
    }
    for (size_t q = 0; q < m; q++)
      if (root[sub[q]] == sub[q])
        sub[k++] = sub[q];
    rc = planner__find_overlap(t, p->offsets, sub, NULL, k, a, b);
    if (rc == 1)
      name_members(g->tensors, root, p->offsets, n, a, b);
  }
  free(own_rows);
  free(root);
  free(t);
  return rc;
}

int planner_verify(const struct planner_graph *g,
                   const struct planner_options *o,
                   const struct planner_plan *p, char err[ARENA_ERR_LEN])
{
  int rc = planner_validate(g, o, err);
  return rc ? rc : planner__verify_valid(g, o, p, NULL, NULL, err);
}

int planner__verify_valid(const struct planner_graph *g,
                          const struct planner_options *o,
                          const struct planner_plan *p,
                          const uint32_t *by_first, const uint32_t *in_row,
                          char *err)
{
  int rc;
  if (!p || !p->offsets || p->n_offsets != g->n_tensors)
    return planner__errf(err, ARENA_EVERIFY,
                         "plan has %zu offsets for %zu tensors",
                         p && p->offsets ? p->n_offsets : 0, g->n_tensors);
  uint64_t top;
  size_t m = 0;
  uint32_t *sub = malloc(g->n_tensors * sizeof *sub);
  if (!sub)
    return planner__errf(err, ARENA_ENOMEM, "out of memory");
  if ((rc = check_each(g, o, p, &top, sub, &m, err))) {
    free(sub);
    return rc;
  }
  if (top != p->arena_bytes) {
    free(sub);
    return planner__errf(err, ARENA_EVERIFY,
                         "plan claims an arena of %" PRIu64
                         " bytes but its tensors end at %" PRIu64,
                         p->arena_bytes, top);
  }
  uint32_t a = 0, b = 0;
  if (o->in_place && planner__has_aliases(g)) {
    rc = check_shared(g, o, p, in_row, sub, m, &a, &b, err);
    free(sub);
    if (rc < 0 && rc != ARENA_ENOMEM)
      return rc; /* described */
  } else {
    if (by_first && !rows_by_first(g, by_first, m))
      by_first = NULL; /* not the order it claims: sort our own */
    rc = planner__find_overlap(g->tensors, p->offsets, sub, by_first, m, &a,
                               &b);
    free(sub);
  }
  if (rc == ARENA_ENOMEM)
    return planner__errf(err, rc, "out of memory");
  if (rc == 1) {
    const struct planner_tensor *x = &g->tensors[a], *y = &g->tensors[b];
    return planner__errf(
        err, ARENA_EVERIFY,
        "tensors %" PRIu32 " [%" PRId64 ",%" PRId64 "] at %" PRIu64
        "+%" PRIu64 " and %" PRIu32 " [%" PRId64 ",%" PRId64 "] at %" PRIu64
        "+%" PRIu64 " overlap in time and memory",
        x->id, x->first, x->last, p->offsets[a], x->size, y->id, y->first,
        y->last, p->offsets[b], y->size);
  }
  return 0;
}

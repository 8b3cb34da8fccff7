/*
 * verify.c - the plan verifier. Every plan arenad stores or serves goes
 * through planner_verify() first: a wrong offset is silent memory
 * corruption in someone else's process.
 *
 * DESIGN: sweep the lifetimes in time order, keeping the live tensors in
 * an ordered set by offset. Live tensors never overlap each other (or the
 * sweep would have stopped), so a new tensor overlaps some live one iff it
 * overlaps its neighbour below or above it in offset order. O(n log n).
 */
#include "ordset.h"
#include "planner_int.h"
#include "planner_sort.h"

#include <inttypes.h>
#include <stdlib.h>


static int by_first(uint32_t a, uint32_t b, const void *ctx)
{
  const struct planner_tensor *t = ctx;
  return (t[a].first > t[b].first) - (t[a].first < t[b].first);
}

static int by_last(uint32_t a, uint32_t b, const void *ctx)
{
  const struct planner_tensor *t = ctx;
  return (t[a].last > t[b].last) - (t[a].last < t[b].last);
}

static int collides(const struct planner_tensor *t, const uint64_t *off,
                    uint32_t lo, uint32_t hi)
{
  /* lo sorts at or below hi in offset order */
  return off[lo] + t[lo].size > off[hi];
}

int planner__find_overlap(const struct planner_tensor *t,
                          const uint64_t *offsets, const uint32_t *subset,
                          size_t m, uint32_t *a, uint32_t *b)
{
  size_t n = 0;
  for (size_t k = 0; k < m; k++)
    if (subset[k] + (size_t)1 > n)
      n = subset[k] + (size_t)1;
  struct ordset s;
  uint32_t *byf = malloc((m ? m : 1) * sizeof *byf);
  uint32_t *byl = malloc((m ? m : 1) * sizeof *byl);
  int rc = ARENA_ENOMEM;
  if (!byf || !byl || ordset_init(&s, n)) {
    free(byf);
    free(byl);
    return rc;
  }
  for (size_t k = 0; k < m; k++)
    byf[k] = byl[k] = subset[k];
  if (planner__sort_idx(byf, m, by_first, t) ||
      planner__sort_idx(byl, m, by_last, t))
    goto out;
  rc = 0;
  size_t j = 0;
  for (size_t k = 0; k < m && rc == 0; k++) {
    uint32_t i = byf[k];
    for (; j < m && t[byl[j]].last < t[i].first; j++)
      ordset_remove(&s, byl[j]);
    ordset_insert(&s, i, (int64_t)offsets[i], 0);
    uint32_t p = ordset_prev(&s, i), q = ordset_next(&s, i);
    if (p != ORDSET_NIL && collides(t, offsets, p, i)) {
      *a = p;
      *b = i;
      rc = 1;
    } else if (q != ORDSET_NIL && collides(t, offsets, i, q)) {
      *a = i;
      *b = q;
      rc = 1;
    }
  }
out:
  ordset_cleanup(&s);
  free(byf);
  free(byl);
  return rc;
}

static int check_each(const struct planner_graph *g,
                      const struct planner_options *o,
                      const struct planner_plan *p, uint64_t *top, char *err)
{
  *top = 0;
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
    if (off % al)
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
  }
  return 0;
}

int planner_verify(const struct planner_graph *g,
                   const struct planner_options *o,
                   const struct planner_plan *p, char err[ARENA_ERR_LEN])
{
  int rc = planner_validate(g, o, err);
  if (rc)
    return rc;
  if (!p || !p->offsets || p->n_offsets != g->n_tensors)
    return planner__errf(err, ARENA_EVERIFY,
                         "plan has %zu offsets for %zu tensors",
                         p && p->offsets ? p->n_offsets : 0, g->n_tensors);
  uint64_t top;
  if ((rc = check_each(g, o, p, &top, err)))
    return rc;
  if (top != p->arena_bytes)
    return planner__errf(err, ARENA_EVERIFY,
                         "plan claims an arena of %" PRIu64
                         " bytes but its tensors end at %" PRIu64,
                         p->arena_bytes, top);
  uint32_t *sub = malloc(g->n_tensors * sizeof *sub);
  if (!sub)
    return planner__errf(err, ARENA_ENOMEM, "out of memory");
  size_t m = 0;
  for (size_t i = 0; i < g->n_tensors; i++)
    if (g->tensors[i].size)
      sub[m++] = (uint32_t)i;
  uint32_t a = 0, b = 0;
  rc = planner__find_overlap(g->tensors, p->offsets, sub, m, &a, &b);
  free(sub);
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

/*
 * share.c - the graph in which in-place sharing is planned: each chain
 * of taken pairs (core/alias.c) becomes one tensor that lives from its
 * first member's first operator to its last member's last, as large as
 * its largest member, aligned for all of them, pinned where any of them
 * is. Any plan of that graph, spread back over the members, is a plan of
 * the caller's graph in which every joined pair shares one offset.
 *
 * And the lower bound of a graph with legal pairs (planner__share_bound):
 * the verifier accepts plans that share any of them, all, none or some,
 * so the bound must hold for each such plan, which neither the joined
 * graph's nor the unshared graph's bound does (see there).
 *
 * Part of planner/run/; uses core/ only.
 */
#include "share.h"

#include "alias.h"
#include "planner_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Folds tensor x into the chain's tensor j. */
static void fold(struct planner_tensor *j, const struct planner_tensor *x,
                 const struct planner_options *o)
{
  uint64_t al = planner__eff_align(x, o);
  j->first = x->first < j->first ? x->first : j->first;
  j->last = x->last > j->last ? x->last : j->last;
  j->size = x->size > j->size ? x->size : j->size;
  j->align = al > j->align ? al : j->align;
  if (x->pinned != PLANNER_NOT_PINNED)
    j->pinned = x->pinned;
}

static int build_joined(struct planner__share *s,
                        const struct planner_graph *g,
                        const struct planner_options *o, size_t m)
{
  struct planner_tensor *jt = calloc(m, sizeof *jt);
  uint8_t *seen = calloc(m, 1);
  if (!jt || !seen) {
    free(jt);
    free(seen);
    return ARENA_ENOMEM;
  }
  for (size_t i = 0; i < s->n; i++) {
    uint32_t k = s->group[i];
    const struct planner_tensor *x = &g->tensors[i];
    if (!seen[k]) {
      seen[k] = 1;
      jt[k] = *x;
      jt[k].id = k;
      jt[k].has_alias = 0;
      jt[k].alias = 0;
      jt[k].align = planner__eff_align(x, o);
    }
    fold(&jt[k], x, o);
  }
  free(seen);
  s->joined.tensors = jt;
  s->joined.n_tensors = m;
  return 0;
}

/* Whether the joined graph j, built from g, is valid under o: what
 * planner_validate(j, o) returns, without validating j again.
 *
 * g is valid under o, and a chain joins only legal pairs whose pins and
 * alignments agree (core/alias.c: its members round to one size at
 * o->alignment, are pinned at one offset or not at all, and that offset
 * suits the largest effective alignment A among them). So each tensor of
 * j is valid alone: its lifetime spans its members', its size S is its
 * largest member's, A is a power of two within the limit, and its pin is
 * aligned to A. Ids are 0 .. m-1 and j declares no alias. Its size plus
 * padding, S + A - 1, is at most the sum of its members', so j's total is
 * at most g's. A chain pinned at P by a member of size s ends at P + S,
 * less than o->alignment above P + s (both sizes round to one size), and
 * when S > s it holds a larger member besides, so it sheds at least
 * s + o->alignment - 1 >= S - s of g's total: the highest pinned end plus
 * the total stays within g's. What joining can break is only that two
 * pinned chains, larger or longer-lived than their members, now collide:
 * that one check remains. Debug builds (ARENA_DEBUG) check the claim
 * against planner_validate(). */
static int joined_valid(const struct planner_graph *j,
                        const struct planner_options *o)
{
  int rc = planner__check_pins(j, NULL);
#ifdef ARENA_DEBUG
  int full = planner_validate(j, o, NULL);
  assert(full == rc || full == ARENA_ENOMEM || rc == ARENA_ENOMEM);
#else
  (void)o;
#endif
  return rc;
}

int planner__share_init(struct planner__share *s,
                        const struct planner_graph *g,
                        const struct planner_options *o,
                        const uint32_t *in_row)
{
  memset(s, 0, sizeof *s);
  s->n = g->n_tensors;
  size_t m = 0;
  s->group = malloc(s->n * sizeof *s->group);
  int rc = s->group ? 0 : ARENA_ENOMEM;
  if (!rc)
    rc = planner__alias_groups(g, o, in_row, s->group, &m, &s->n_taken);
  if (!rc)
    rc = planner_lower_bound(g, o, &s->lb_unshared);
  if (!rc && s->n_taken)
    rc = build_joined(s, g, o, m);
  if (!rc && s->n_taken)
    rc = joined_valid(&s->joined, o);
  if (rc == ARENA_ENOMEM)
    planner__share_cleanup(s);
  return rc;
}

/* The cut graph of share_bound(), in t (a copy of g's tensors, caller's):
 * see there. Returns how many legal pairs g declares. */
static size_t cut_pairs(const struct planner_graph *g,
                        const struct planner_options *o,
                        const uint32_t *in_row, struct planner_tensor *t,
                        uint32_t *keeper)
{
  size_t n = g->n_tensors, legal = 0;
  const struct planner_tensor *x = g->tensors;
  for (size_t i = 0; i < n; i++)
    keeper[i] = (uint32_t)i;
  /* who keeps each input's last operator: the largest of it and its
   * legal outputs, the input on a tie, else the first such output */
  for (size_t i = 0; i < n; i++) {
    uint32_t k = in_row[i];
    if (k == PLANNER__NO_ROW || planner_alias_check(&x[i], &x[k], o))
      continue;
    legal++;
    if (x[i].size > x[keeper[k]].size)
      keeper[k] = (uint32_t)i;
  }
  for (size_t i = 0; i < n; i++) {
    t[i] = x[i];
    t[i].has_alias = 0;
    t[i].alias = 0;
    t[i].align = 0;
    t[i].pinned = PLANNER_NOT_PINNED;
  }
  for (size_t i = 0; i < n; i++) {
    uint32_t k = in_row[i];
    if (k == PLANNER__NO_ROW || planner_alias_check(&x[i], &x[k], o))
      continue;
    /* out.first == in.last: one of the two gives that operator up */
    if (keeper[k] != i)
      t[i].first++;
    if (keeper[k] != k)
      t[k].last = x[k].last - 1;
  }
  for (size_t i = 0; i < n; i++)
    if (t[i].first > t[i].last) { /* lived only at operators given up */
      t[i].first = t[i].last = x[i].first;
      t[i].size = 0;
    }
  return legal;
}

int planner__share_bound(const struct planner_graph *g,
                         const struct planner_options *o,
                         const uint32_t *in_row, uint64_t *lb, int *legal)
{
  size_t n = g->n_tensors;
  *lb = 0;
  *legal = 0;
  struct planner_tensor *t = malloc(n * sizeof *t);
  uint32_t *keeper = malloc(n * sizeof *keeper);
  int rc = t && keeper ? 0 : ARENA_ENOMEM;
  if (!rc && cut_pairs(g, o, in_row, t, keeper)) {
    struct planner_graph cut = {t, n};
    *legal = 1;
    rc = planner_lower_bound(&cut, o, lb);
  }
  free(t);
  free(keeper);
  return rc;
}

void planner__share_expand(const struct planner__share *s,
                           const uint64_t *joined_off, uint64_t *off)
{
  for (size_t i = 0; i < s->n; i++)
    off[i] = joined_off[s->group[i]];
}

void planner__share_cleanup(struct planner__share *s)
{
  free((void *)s->joined.tensors);
  free(s->group);
  memset(s, 0, sizeof *s);
}

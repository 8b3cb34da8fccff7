/*
 * cli_share.c - in-place sharing as the arenactl subcommands report it
 * (see cli_share.h): the two options, the pairs a plan took, the groups
 * aliases join, and the lower bound with sharing.
 *
 * The pairs are read off the offsets, not taken from the planner, so
 * that a plan from arenad, from a plan file or from this process is
 * described the same way: a declared pair counts when the planner's own
 * rule calls it legal and both tensors sit at one offset, exactly what
 * the verifier accepts.
 */
#include "cli_share.h"

#include <stdlib.h>
#include <string.h>

int cli_in_place_option(const char *arg, int *in_place)
{
  if (strcmp(arg, "--in-place") == 0)
    *in_place = 1;
  else if (strcmp(arg, "--no-in-place") == 0)
    *in_place = 0;
  else
    return 0;
  return 1;
}

int cli_has_aliases(const struct planner_graph *g)
{
  for (size_t i = 0; i < g->n_tensors; i++)
    if (g->tensors[i].has_alias)
      return 1;
  return 0;
}

/* An id and its row, sorted by id to find the tensor an alias names. */
struct id_row {
  uint32_t id;
  size_t row;
};

static int by_id(const void *a, const void *b)
{
  uint32_t x = ((const struct id_row *)a)->id;
  uint32_t y = ((const struct id_row *)b)->id;
  return (x > y) - (x < y);
}

/* The row of the tensor with this id, or SIZE_MAX. */
static size_t find_row(const struct id_row *ix, size_t n, uint32_t id)
{
  struct id_row key = {id, 0};
  const struct id_row *hit = bsearch(&key, ix, n, sizeof *ix, by_id);
  return hit ? hit->row : SIZE_MAX;
}

/* Appends the pairs of g taken in offsets to out (room for every row). */
static size_t collect(const struct planner_graph *g,
                      const struct planner_options *o,
                      const uint64_t *offsets, const struct id_row *ix,
                      struct cli_pair *out)
{
  size_t n = 0;
  for (size_t i = 0; i < g->n_tensors; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    if (!t->has_alias)
      continue;
    size_t k = find_row(ix, g->n_tensors, t->alias);
    if (k == SIZE_MAX || offsets[i] != offsets[k] ||
        planner_alias_check(t, &g->tensors[k], o))
      continue;
    out[n].out = i;
    out[n].in = k;
    n++;
  }
  return n;
}

/* A new index of g's rows sorted by id, or NULL when out of memory. */
static struct id_row *index_ids(const struct planner_graph *g)
{
  size_t m = g->n_tensors;
  struct id_row *ix = malloc((m + 1) * sizeof *ix);
  if (!ix)
    return NULL;
  for (size_t i = 0; i < m; i++) {
    ix[i].id = g->tensors[i].id;
    ix[i].row = i;
  }
  qsort(ix, m, sizeof *ix, by_id);
  return ix;
}

size_t cli_group_of(size_t *groups, size_t i)
{
  while (groups[i] != i) {
    groups[i] = groups[groups[i]]; /* halve the path */
    i = groups[i];
  }
  return i;
}

size_t *cli_alias_groups(const struct planner_graph *g)
{
  size_t m = g->n_tensors;
  size_t *up = malloc((m + 1) * sizeof *up);
  struct id_row *ix = index_ids(g);
  if (!up || !ix) {
    free(up);
    free(ix);
    return NULL;
  }
  for (size_t i = 0; i < m; i++)
    up[i] = i;
  for (size_t i = 0; i < m; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    size_t k = t->has_alias ? find_row(ix, m, t->alias) : SIZE_MAX;
    if (k != SIZE_MAX)
      up[cli_group_of(up, i)] = cli_group_of(up, k);
  }
  free(ix);
  return up;
}

int cli_pairs_taken(const char *what, const struct planner_graph *g,
                    const struct planner_options *o, const uint64_t *offsets,
                    struct cli_pair **pairs, size_t *n)
{
  *pairs = NULL;
  *n = 0;
  if (!o->in_place || !cli_has_aliases(g))
    return 0;
  struct id_row *ix = index_ids(g);
  struct cli_pair *out = malloc(g->n_tensors * sizeof *out);
  if (!ix || !out) {
    free(ix);
    free(out);
    cli_error(what, "out of memory");
    return CLI_EX_OSERR;
  }
  *n = collect(g, o, offsets, ix, out);
  free(ix);
  if (*n)
    *pairs = out;
  else
    free(out);
  return 0;
}

int cli_lower_bound(const struct planner_graph *g,
                    const struct planner_options *o, uint64_t *lb,
                    char err[ARENA_ERR_LEN])
{
  if (!o->in_place || !cli_has_aliases(g))
    return planner_lower_bound(g, o, lb);
  /* The joined graph's bound is what planner_run() reports; the naive
   * plan is the cheapest way to have it computed. */
  struct planner_options no = *o;
  struct planner_plan p;
  no.algo = PLANNER_ALGO_NAIVE;
  no.capacity = 0;
  planner_plan_init(&p);
  int rc = planner_run(g, &no, &p, err);
  *lb = rc ? 0 : p.lower_bound_bytes;
  planner_plan_cleanup(&p);
  return rc;
}

/*
 * run.c - planner_run(), the one way plans leave the planning core:
 * validate the graph, plan it (one heuristic, or `best`: the heuristics
 * raced, then the search when they stay above the lower bound), verify
 * the plan.
 *
 * planner_run() verifies each plan before returning it. `best` runs the
 * heuristics from the cheapest to the dearest and keeps the first
 * smallest arena; it stops early once an arena meets the lower bound,
 * since nothing can beat that. When the best heuristic is above the bound
 * it hands over to the search for a bounded effort
 * (PLANNER_DEFAULT_EFFORT unless options say otherwise), counted in work
 * units, so the plan never depends on the machine's speed or load.
 *
 * This is planner/run/, the top of planner/: it may use every other folder
 * of it (core, heuristics, search) and none of them uses it.
 */
#include "best.h"

#include <stdlib.h>

#include "heuristics.h"
#include "search.h"
#include "tindex.h"

static enum planner_fit fit_of(const struct planner_plan *r, uint64_t cap)
{
  if (!cap)
    return PLANNER_FIT_NA;
  if (r->arena_bytes <= cap)
    return PLANNER_FIT_YES;
  return r->lower_bound_bytes > cap ? PLANNER_FIT_NO : PLANNER_FIT_UNKNOWN;
}

/* Whether the exact search should run after the heuristics. */
static int wants_exact(const struct planner_options *o,
                       const struct planner_plan *r)
{
  if (o->algo == PLANNER_ALGO_EXACT)
    return 1;
  if (o->algo != PLANNER_ALGO_BEST || r->arena_bytes <= r->lower_bound_bytes)
    return 0;
  return !o->capacity || r->arena_bytes > o->capacity;
}

static int plan_with(struct planner__prob *p, struct planner_plan *r)
{
  const struct planner_options *o = p->o;
  int rc;
  r->algo = o->algo;
  if (o->algo == PLANNER_ALGO_BEST || o->algo == PLANNER_ALGO_EXACT)
    rc = planner__best(p, r->offsets, &r->algo);
  else
    rc = planner__heuristic(p, o->algo, r->offsets);
  if (rc)
    return rc;
  r->arena_bytes = planner__arena_of(p, r->offsets);
  r->lower_bound_bytes = p->lb;
  r->naive_bytes = p->naive;
  r->bound = PLANNER_BOUND_LOAD;
  r->proven_optimal = r->arena_bytes <= r->lower_bound_bytes;
  r->fit = fit_of(r, o->capacity);
  if (!wants_exact(o, r))
    return 0;
  uint64_t before = r->arena_bytes;
  planner__prob_drop_index(p); /* the search has its own structures */
  rc = planner__exact(p, r->offsets, r);
  if (!rc && (o->algo == PLANNER_ALGO_EXACT || r->arena_bytes < before))
    r->algo = PLANNER_ALGO_EXACT;
  return rc;
}

int planner_run(const struct planner_graph *g, const struct planner_options *o,
                struct planner_plan *out, char err[ARENA_ERR_LEN])
{
  struct planner__prob p;
  struct planner_plan r;
  planner_plan_cleanup(out);
  int rc = planner_validate(g, o, err);
  if (rc)
    return rc;
  if ((rc = planner__prob_init(&p, g, o)))
    return planner__errf(err, rc, "out of memory");
  planner_plan_init(&r);
  r.n_offsets = p.n;
  r.offsets = calloc(p.n, sizeof *r.offsets);
  rc = r.offsets ? plan_with(&p, &r) : ARENA_ENOMEM;
  /* the check reads the index's order by first; the rest goes first */
  uint32_t *by_first = p.x ? tindex_take_row_of(p.x) : NULL;
  planner__prob_cleanup(&p);
  if (rc == ARENA_ECANCELED)
    planner__errf(err, rc, "planning was cancelled");
  else if (rc)
    planner__errf(err, rc, "out of memory");
  else if ((rc = planner__verify_valid(g, o, &r, by_first, err)) != 0)
    rc = ARENA_EVERIFY; /* a planner bug: never hand out such a plan */
  free(by_first);
  if (rc) {
    planner_plan_cleanup(&r);
    return rc;
  }
  *out = r;
  return 0;
}

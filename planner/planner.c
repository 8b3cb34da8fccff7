/*
 * planner.c - the public entry points of the planning core: options,
 * planner_run() and the algorithm names.
 *
 * planner_run() is the only way plans leave the core, and it verifies each
 * one before returning it. `best` runs the heuristics from the cheapest to
 * the dearest and keeps the first smallest arena; it stops early once an
 * arena meets the lower bound, since nothing can beat that. When the best
 * heuristic is above the bound it hands over to the exact search for a
 * bounded effort (PLANNER_DEFAULT_EFFORT unless options say otherwise),
 * counted in work units, so the plan never depends on the machine's speed
 * or load.
 */
#include "planner_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const algo_names[PLANNER_ALGO__COUNT] = {
    [PLANNER_ALGO_BEST] = "best",
    [PLANNER_ALGO_NAIVE] = "naive",
    [PLANNER_ALGO_TFLM_GREEDY] = "tflm-greedy",
    [PLANNER_ALGO_TFLITE_BESTFIT] = "tflite-bestfit",
    [PLANNER_ALGO_GREEDY_SIZE] = "greedy-size",
    [PLANNER_ALGO_GREEDY_BREADTH] = "greedy-breadth",
    [PLANNER_ALGO_EXACT] = "exact",
};

/* The heuristics `best` tries, cheapest first (ties go to the earlier). */
static const enum planner_algo best_order[] = {
    PLANNER_ALGO_TFLM_GREEDY,
    PLANNER_ALGO_GREEDY_SIZE,
    PLANNER_ALGO_TFLITE_BESTFIT,
    PLANNER_ALGO_GREEDY_BREADTH,
};

void planner_options_init(struct planner_options *o)
{
  memset(o, 0, sizeof *o);
  o->algo = PLANNER_ALGO_BEST;
  o->alignment = PLANNER_DEFAULT_ALIGNMENT;
}

void planner_plan_init(struct planner_plan *p)
{
  memset(p, 0, sizeof *p);
}

void planner_plan_cleanup(struct planner_plan *p)
{
  if (!p)
    return;
  free(p->offsets);
  planner_plan_init(p);
}

const char *planner_algo_name(enum planner_algo a)
{
  return (unsigned)a < PLANNER_ALGO__COUNT ? algo_names[a] : "?";
}

int planner_algo_parse(const char *name, enum planner_algo *a)
{
  for (int i = 0; name && i < PLANNER_ALGO__COUNT; i++)
    if (strcasecmp(name, algo_names[i]) == 0) {
      *a = (enum planner_algo)i;
      return 0;
    }
  return ARENA_EINVAL;
}

const char *planner_fit_name(enum planner_fit f)
{
  switch (f) {
  case PLANNER_FIT_NA:
    return "n/a";
  case PLANNER_FIT_YES:
    return "fits";
  case PLANNER_FIT_NO:
    return "infeasible";
  case PLANNER_FIT_UNKNOWN:
    return "unknown";
  }
  return "?";
}

const char *planner_bound_name(enum planner_bound b)
{
  return b == PLANNER_BOUND_SEARCH ? "search" : "load";
}

/* Runs every heuristic of `best`, keeping the first smallest in off. */
static int run_best(const struct planner__prob *p, uint64_t *off,
                    enum planner_algo *used)
{
  uint64_t *tmp = malloc(p->n * sizeof *tmp);
  if (!tmp)
    return ARENA_ENOMEM;
  uint64_t best = UINT64_MAX;
  int rc = 0;
  for (size_t k = 0; k < sizeof best_order / sizeof *best_order; k++) {
    if ((rc = planner__heuristic(p, best_order[k], tmp)))
      break;
    uint64_t arena = planner__arena_of(p, tmp);
    if (arena < best) {
      best = arena;
      *used = best_order[k];
      memcpy(off, tmp, p->n * sizeof *off);
    }
    if (best <= p->lb)
      break;
  }
  free(tmp);
  return rc;
}

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

static int plan_with(const struct planner__prob *p, struct planner_plan *r)
{
  const struct planner_options *o = p->o;
  int rc;
  r->algo = o->algo;
  if (o->algo == PLANNER_ALGO_BEST || o->algo == PLANNER_ALGO_EXACT)
    rc = run_best(p, r->offsets, &r->algo);
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
  planner__prob_cleanup(&p);
  if (rc == ARENA_ECANCELED)
    planner__errf(err, rc, "planning was cancelled");
  else if (rc)
    planner__errf(err, rc, "out of memory");
  else if ((rc = planner_verify(g, o, &r, err)) != 0)
    rc = ARENA_EVERIFY; /* a planner bug: never hand out such a plan */
  if (rc) {
    planner_plan_cleanup(&r);
    return rc;
  }
  *out = r;
  return 0;
}

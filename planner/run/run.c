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
 *
 * Timing. planner_run() reports where its time went (planner.h,
 * struct planner_plan: plan_us and its phases). The phases are summed
 * into a struct run_times as they happen, whichever graph (the one
 * given, a copy without aliases, the joined graph) they ran on, and
 * copied into the plan at the end; the clock is only read, never obeyed.
 */
#include "best.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heuristics.h"
#include "search.h"
#include "share.h"
#include "tindex.h"

/* Wall times of one planner_run(), microseconds. */
struct run_times {
  uint64_t index;      /* problems, time indexes, bounds, joined graphs */
  uint64_t heuristics; /* the heuristics */
  uint64_t search;     /* the exact searches (their own search_us) */
};

static uint64_t now_us(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static enum planner_fit fit_of(const struct planner_plan *r, uint64_t cap)
{
  if (!cap)
    return PLANNER_FIT_NA;
  if (r->arena_bytes <= cap)
    return PLANNER_FIT_YES;
  return r->lower_bound_bytes > cap ? PLANNER_FIT_NO : PLANNER_FIT_UNKNOWN;
}

/* Whether the exact search should run after the heuristics. A capacity
 * the heuristics' plan already meets does not keep it out: with a
 * capacity the plan is never larger than without one. */
static int wants_exact(const struct planner_options *o,
                       const struct planner_plan *r)
{
  if (o->algo == PLANNER_ALGO_EXACT)
    return 1;
  return o->algo == PLANNER_ALGO_BEST &&
         r->arena_bytes > r->lower_bound_bytes;
}

/* Plans p into r with o->algo: the heuristics, then the search when it
 * is wanted. With row_of non-NULL, hands over the index's order by first
 * (owned by the caller) before the search drops the index, or leaves
 * it in the index when no search runs. */
static int plan_with(struct planner__prob *p, struct planner_plan *r,
                     uint32_t **row_of, struct run_times *tm)
{
  const struct planner_options *o = p->o;
  int rc;
  uint64_t t0 = now_us();
  r->algo = o->algo;
  if (o->algo == PLANNER_ALGO_BEST || o->algo == PLANNER_ALGO_EXACT)
    rc = planner__best(p, r->offsets, &r->algo);
  else
    rc = planner__heuristic(p, o->algo, r->offsets);
  tm->heuristics += now_us() - t0;
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
  if (row_of) /* the verifier's order, which the index has already */
    *row_of = tindex_take_row_of(p->x);
  planner__prob_drop_index(p); /* the search has its own structures */
  rc = planner__exact(p, r->offsets, r);
  tm->search += r->search_us;
  if (!rc && (o->algo == PLANNER_ALGO_EXACT || r->arena_bytes < before))
    r->algo = PLANNER_ALGO_EXACT;
  return rc;
}

/* Plans g into r (its offsets allocated here, left unverified). g is
 * valid under o: planner_validate() returned 0. With by_first non-NULL,
 * hands over the time index's order by first for the verifier (owned by
 * the caller, may be NULL). Returns 0, ARENA_ENOMEM or ARENA_ECANCELED;
 * r is then left for the caller to clean up. */
static int plan_valid(const struct planner_graph *g,
                      const struct planner_options *o,
                      struct planner_plan *r, uint32_t **by_first,
                      struct run_times *tm)
{
  struct planner__prob p;
  uint64_t t0 = now_us();
  /* naive reads no index: only the bound, which needs none */
  int rc = o->algo == PLANNER_ALGO_NAIVE ? planner__prob_init_bound(&p, g, o)
                                         : planner__prob_init(&p, g, o);
  tm->index += now_us() - t0;
  if (rc)
    return rc;
  r->n_offsets = p.n;
  r->offsets = calloc(p.n, sizeof *r->offsets);
  planner__advise_huge(r->offsets, p.n * sizeof *r->offsets);
  uint32_t *row_of = NULL;
  rc = r->offsets ? plan_with(&p, r, by_first ? &row_of : NULL, tm)
                  : ARENA_ENOMEM;
  r->lower_bound_unshared_bytes = r->lower_bound_bytes;
  r->load_bound_bytes = p.lb; /* aliases play no part in it */
  /* the check reads the index's order by first (taken already when the
   * search ran); the rest goes first */
  if (by_first && !rc && !row_of && p.x)
    row_of = tindex_take_row_of(p.x);
  if (by_first && !rc)
    *by_first = row_of;
  else
    free(row_of);
  planner__prob_cleanup(&p);
  return rc;
}

/* Plans g with its aliases ignored, on a copy without them: the
 * algorithms below never see an alias. g is valid under o:
 * planner_validate() returned 0, and so is the copy (an alias only adds
 * checks). */
static int plan_bare(const struct planner_graph *g,
                     const struct planner_options *o, struct planner_plan *r,
                     struct run_times *tm)
{
  size_t n = g->n_tensors;
  struct planner_tensor *t = malloc(n * sizeof *t);
  if (!t)
    return ARENA_ENOMEM;
  memcpy(t, g->tensors, n * sizeof *t);
  for (size_t i = 0; i < n; i++)
    t[i].has_alias = 0;
  struct planner_graph bare = {t, n};
  int rc = plan_valid(&bare, o, r, NULL, tm);
  free(t);
  return rc;
}

/* The plan of the joined graph (share.h), spread over g's rows in r.
 * planner__share_init() returned 0 for s: its joined graph is valid under
 * o. */
static int plan_joined(const struct planner__share *s,
                       const struct planner_options *o,
                       struct planner_plan *r, struct run_times *tm)
{
  struct planner_plan j;
  planner_plan_init(&j);
  int rc = plan_valid(&s->joined, o, &j, NULL, tm);
  if (!rc) {
    *r = j;
    r->n_offsets = s->n;
    r->offsets = malloc(s->n * sizeof *r->offsets);
    if (r->offsets)
      planner__share_expand(s, j.offsets, r->offsets);
    else
      rc = ARENA_ENOMEM;
    r->naive_bytes = 0;
  }
  free(j.offsets);
  return rc;
}

static uint64_t naive_of(const struct planner_graph *g)
{
  uint64_t sum = 0;
  for (size_t i = 0; i < g->n_tensors; i++)
    sum += g->tensors[i].size;
  return sum;
}

/* Gives r, a plan of g, the bound of every plan the verifier accepts
 * for g (planner__share_bound()) when g declares a legal pair: the plan
 * of one graph, joined or not, may be beaten by a plan of the other, or
 * by one sharing some pairs, so neither graph's own bound, nor what a
 * search proved of that graph, holds for it. Then the bound is a load
 * bound, and optimality and fit are judged on it. Returns 0 or
 * ARENA_ENOMEM. */
static int bound_shared(const struct planner_graph *g,
                        const struct planner_options *o,
                        const uint32_t *in_row, struct planner_plan *r,
                        struct run_times *tm)
{
  uint64_t lb;
  int legal;
  uint64_t t0 = now_us();
  int rc = planner__share_bound(g, o, in_row, &lb, &legal);
  tm->index += now_us() - t0;
  if (rc || !legal)
    return rc;
  r->lower_bound_bytes = lb;
  r->bound = PLANNER_BOUND_LOAD;
  r->proven_optimal = r->arena_bytes <= lb;
  r->fit = fit_of(r, o->capacity);
  return 0;
}

/* In-place sharing (planner.h): plans the joined graph and, unless that
 * meets g's own load bound, g as given too; keeps the smaller arena, the
 * shared one on a tie. The bound reported holds for every plan the
 * verifier accepts (bound_shared()). g is valid under o:
 * planner_validate() returned 0; in_row is the rows its aliases name
 * (planner__validate(), borrowed). */
static int plan_shared(const struct planner_graph *g,
                       const struct planner_options *o,
                       const uint32_t *in_row, struct planner_plan *r,
                       struct run_times *tm)
{
  struct planner__share s;
  uint64_t t0 = now_us();
  int rc = planner__share_init(&s, g, o, in_row);
  tm->index += now_us() - t0;
  if (rc == ARENA_ENOMEM)
    return rc;
  if (rc || !s.n_taken) { /* nothing to share, or chains whose pins clash */
    planner__share_cleanup(&s);
    rc = plan_bare(g, o, r, tm);
    return rc ? rc : bound_shared(g, o, in_row, r, tm);
  }
  rc = plan_joined(&s, o, r, tm);
  uint64_t nodes = r->nodes_explored, us = r->search_us;
  size_t taken = s.n_taken;
  if (!rc && r->arena_bytes > s.lb_unshared) {
    struct planner_plan u;
    planner_plan_init(&u);
    rc = plan_bare(g, o, &u, tm);
    nodes += u.nodes_explored;
    us += u.search_us;
    if (!rc && u.arena_bytes < r->arena_bytes) {
      planner_plan_cleanup(r);
      *r = u;
      taken = 0;
    } else {
      planner_plan_cleanup(&u);
    }
  }
  if (!rc) {
    r->lower_bound_unshared_bytes = s.lb_unshared;
    r->nodes_explored = nodes;
    r->search_us = us;
    r->n_shared = taken;
    r->naive_bytes = naive_of(g);
    r->load_bound_bytes = s.lb_unshared;
    rc = bound_shared(g, o, in_row, r, tm);
  }
  planner__share_cleanup(&s);
  return rc;
}

int planner_accepted_lower_bound(const struct planner_graph *g,
                                 const struct planner_options *o,
                                 uint64_t *lb_bytes, char *err)
{
  uint32_t *in_row = NULL;
  int legal = 0;
  *lb_bytes = 0;
  int rc = planner__validate(g, o, err, &in_row);
  if (rc)
    return rc;
  if (in_row && o->in_place)
    rc = planner__share_bound(g, o, in_row, lb_bytes, &legal);
  if (!rc && !legal)
    rc = planner_lower_bound(g, o, lb_bytes);
  free(in_row);
  return rc;
}

/* Plans g, which planner__validate() accepted (in_row: the rows its
 * aliases name, or NULL), into r (planner_plan_init()ed). Hands the
 * index's order by first to *by_first as plan_valid() does. */
static int plan_graph(const struct planner_graph *g,
                      const struct planner_options *o, const uint32_t *in_row,
                      struct planner_plan *r, uint32_t **by_first,
                      struct run_times *tm)
{
  if (!in_row)
    return plan_valid(g, o, r, by_first, tm);
  /* g declares an alias */
  return o->in_place ? plan_shared(g, o, in_row, r, tm)
                     : plan_bare(g, o, r, tm);
}

int planner_run(const struct planner_graph *g, const struct planner_options *o,
                struct planner_plan *out, char err[ARENA_ERR_LEN])
{
  struct planner_plan r;
  struct run_times tm = {0, 0, 0};
  uint32_t *by_first = NULL, *in_row = NULL;
  uint64_t t0 = now_us(), t1, t2, t3;
  planner_plan_cleanup(out);
  /* the one validation of this plan: everything below trusts it */
  int rc = planner__validate(g, o, err, &in_row);
  if (rc)
    return rc;
  planner_plan_init(&r);
  t1 = now_us();
  rc = plan_graph(g, o, in_row, &r, &by_first, &tm);
  t2 = now_us();
  if (rc == ARENA_ECANCELED)
    planner__errf(err, rc, "planning was cancelled");
  else if (rc)
    planner__errf(err, rc, "out of memory");
  else if ((rc = planner__verify_valid(g, o, &r, by_first, in_row, err)) !=
           0)
    rc = ARENA_EVERIFY; /* a planner bug: never hand out such a plan */
  t3 = now_us();
  free(by_first);
  free(in_row);
  if (rc) {
    planner_plan_cleanup(&r);
    return rc;
  }
  r.plan_us = now_us() - t0;
  r.validate_us = t1 - t0;
  r.index_us = tm.index;
  r.heuristics_us = tm.heuristics;
  r.search_us = tm.search;
  r.verify_us = t3 - t2;
  *out = r;
  return 0;
}

int planner_naive_arena(const struct planner_graph *g,
                        const struct planner_options *o, uint64_t *bytes,
                        char err[ARENA_ERR_LEN])
{
  struct planner_options no = *o;
  struct planner__prob p;
  uint32_t *in_row = NULL;
  *bytes = 0;
  no.algo = PLANNER_ALGO_NAIVE;
  no.capacity = 0;
  int rc = planner__validate(g, &no, err, &in_row);
  if (rc)
    return rc;
  if (in_row && no.in_place) {
    /* which pairs it shares is planner_run()'s choice: ask it */
    struct planner_plan r;
    free(in_row);
    planner_plan_init(&r);
    rc = planner_run(g, &no, &r, err);
    *bytes = rc ? 0 : r.arena_bytes;
    planner_plan_cleanup(&r);
    return rc;
  }
  /* As plan_valid() with naive, which reads neither the index nor the
   * bound, and ignores aliases (a copy without them plans the same). */
  free(in_row);
  uint64_t *off = NULL;
  rc = planner__prob_init_bare(&p, g, &no);
  if (!rc && !(off = malloc(p.n * sizeof *off)))
    rc = ARENA_ENOMEM;
  if (!rc)
    rc = planner__heuristic(&p, PLANNER_ALGO_NAIVE, off);
  if (!rc)
    *bytes = planner__arena_of(&p, off);
  else
    planner__errf(err, rc, "out of memory");
  free(off);
  planner__prob_cleanup(&p); /* safe after a failed init too */
  return rc;
}

/*
 * options.c - the records of planner.h: options and plans set up and
 * freed, and the names of algorithms, fit answers and bounds.
 *
 * Part of planner/core/ (libc only).
 */
#include "planner.h"

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

void planner_options_init(struct planner_options *o)
{
  memset(o, 0, sizeof *o);
  o->algo = PLANNER_ALGO_BEST;
  o->alignment = PLANNER_DEFAULT_ALIGNMENT;
  o->in_place = 1;
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

/*
 * exact.c - the exact planner (placeholder until the search lands).
 *
 * For now it only reports what the heuristic plan already proves.
 */
#include "planner_int.h"

int planner__exact(const struct planner__prob *p, uint64_t *offsets,
                   struct planner_plan *res, uint32_t default_budget_ms)
{
  (void)p;
  (void)offsets;
  (void)default_budget_ms;
  res->proven_optimal = res->arena_bytes <= res->lower_bound_bytes;
  return 0;
}

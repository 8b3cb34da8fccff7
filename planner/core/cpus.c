/*
 * cpus.c - planner_cpu_threads(): how many threads `best` may usefully
 * run in this process, read from its CPU affinity mask.
 */
#define _GNU_SOURCE 1 /* sched_getaffinity, CPU_COUNT */

#include <sched.h>

#include "planner.h"

uint32_t planner_cpu_threads(void)
{
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return 1;
  int n = CPU_COUNT(&set);
  return n > 0 ? (uint32_t)n : 1;
}

/*
 * helpers.c - the two small helpers every file of core/ uses, kept apart
 * so that no two core files call each other in a loop: an error code
 * with its message (planner__errf) and a tensor's effective alignment
 * (planner__eff_align). Declared in planner_int.h.
 */
#include "planner_int.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

int planner__errf(char *err, int code, const char *fmt, ...)
{
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ARENA_ERR_LEN, fmt, ap);
    va_end(ap);
  }
  return code;
}

uint64_t planner__eff_align(const struct planner_tensor *t,
                            const struct planner_options *o)
{
  return t->align > o->alignment ? t->align : o->alignment;
}

void planner__advise_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
  const uintptr_t huge = (uintptr_t)1 << 21;
  uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
  uintptr_t e = ((uintptr_t)p + bytes) & ~(huge - 1);
  if (p && bytes >= PLANNER_HUGE_MIN && e > a)
    (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

/*
 * fuzz_roundtrip.c - libFuzzer target for the planner and its verifier.
 * Built and run by `make fuzz`.
 *
 * The input decodes into a small graph (1 to 12 tensors, lifetimes within
 * 16 operators, sizes up to 64 KiB, some with their own alignment, a few
 * pinned) and a global alignment. Every algorithm, the exact search with a
 * tiny effort included, must then either plan it or fail with a
 * documented code, and every plan must:
 *  - pass planner_verify, and an independent O(n^2) check written here
 *    (offset count, alignment, pins, no overlap in both time and memory,
 *    arena_bytes = max end);
 *  - have arena >= its lower bound >= the load bound planner_lower_bound
 *    reports, and a proven-optimal flag only when arena equals the bound.
 * A graph planner_validate refuses must be refused by planner_run with the
 * same code.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"

#define FUZZ_MAX_T 12u /* tensors per graph */
#define FUZZ_BYTES_PER_T 6u

static uint64_t eff_align(const struct planner_tensor *t, uint64_t global)
{
  return t->align > global ? t->align : global;
}

/* The independent check. Returns 0 when the plan is right for g. */
static int brute_check(const struct planner_graph *g,
                       const struct planner_options *o,
                       const struct planner_plan *p)
{
  if (p->n_offsets != g->n_tensors)
    return -1;
  uint64_t end_max = 0;
  for (size_t i = 0; i < g->n_tensors; i++) {
    const struct planner_tensor *a = &g->tensors[i];
    uint64_t off = p->offsets[i];
    if (a->size == 0)
      continue;
    if (off % eff_align(a, o->alignment) != 0)
      return -2;
    if (a->pinned != PLANNER_NOT_PINNED && off != (uint64_t)a->pinned)
      return -3;
    if (off + a->size > end_max)
      end_max = off + a->size;
    for (size_t j = i + 1; j < g->n_tensors; j++) {
      const struct planner_tensor *b = &g->tensors[j];
      if (b->size == 0 || a->last < b->first || b->last < a->first)
        continue;
      uint64_t ob = p->offsets[j];
      if (off < ob + b->size && ob < off + a->size)
        return -4;
    }
  }
  return end_max == p->arena_bytes ? 0 : -5;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 2)
    return 0;
  struct planner_tensor t[FUZZ_MAX_T];
  size_t n = (size - 2) / FUZZ_BYTES_PER_T;
  if (n == 0)
    return 0;
  if (n > FUZZ_MAX_T)
    n = FUZZ_MAX_T;
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = (uint64_t)1 << (data[0] % 8); /* 1 .. 128 */
  o.effort = 1;
  uint8_t flags = data[1];
  const uint8_t *d = data + 2;
  for (size_t i = 0; i < n; i++, d += FUZZ_BYTES_PER_T) {
    t[i].id = (uint32_t)i;
    if (flags & 1)
      t[i].id = (uint32_t)(d[5] % (2 * n)); /* duplicates reach validation */
    t[i].size = (uint64_t)d[0] | (uint64_t)d[1] << 8;
    if ((d[2] & 0xc0) == 0xc0)
      t[i].size = 0;
    t[i].first = d[2] % 16;
    t[i].last = t[i].first + d[3] % 8;
    if ((flags & 2) && d[3] >= 0xf8)
      t[i].last = t[i].first - 1; /* reversed lifetime */
    t[i].align = (d[4] & 0x80) ? (uint64_t)1 << (d[4] % 9) : 0;
    t[i].pinned = PLANNER_NOT_PINNED;
    t[i].alias = 0;
    t[i].has_alias = 0;
    if ((flags & 4) && (d[4] & 0x40))
      t[i].pinned = (int64_t)(d[5] & 0x3f) * 64;
  }
  struct planner_graph g = {t, n};
  char err[ARENA_ERR_LEN];
  int valid = planner_validate(&g, &o, err);
  uint64_t load_lb = 0;
  if (valid == 0 && planner_lower_bound(&g, &o, &load_lb) != 0)
    abort();
  for (int a = 0; a < PLANNER_ALGO__COUNT; a++) {
    struct planner_plan p;
    o.algo = (enum planner_algo)a;
    o.capacity = (flags & 8) ? load_lb + (uint64_t)(flags >> 4) * 64 : 0;
    planner_plan_init(&p);
    int rc = planner_run(&g, &o, &p, err);
    if (valid != 0) {
      if (rc != valid)
        abort(); /* run and validate disagree about the graph */
      continue;
    }
    if (rc == ARENA_EVERIFY)
      abort(); /* the planner made a wrong plan (and caught it) */
    if (rc != 0) {
      /* Pinned tensors can make a heuristic give up; nothing else may. */
      if (rc != ARENA_EPINNED && rc != ARENA_EINFEASIBLE)
        abort();
      continue;
    }
    if (planner_verify(&g, &o, &p, err) != 0 || brute_check(&g, &o, &p) != 0)
      abort();
    if (p.arena_bytes < p.lower_bound_bytes || p.lower_bound_bytes < load_lb)
      abort();
    if (p.proven_optimal && p.arena_bytes != p.lower_bound_bytes &&
        p.bound == PLANNER_BOUND_LOAD)
      abort();
    if (o.capacity && p.fit == PLANNER_FIT_YES && p.arena_bytes > o.capacity)
      abort();
    if (o.capacity && p.fit == PLANNER_FIT_NO && p.lower_bound_bytes <= o.capacity)
      abort();
    planner_plan_cleanup(&p);
  }
  return 0;
}

/*
 * fuzz_share.c - libFuzzer target for planning with in-place pairs
 * (planner.h, IN-PLACE SHARING). Built and run by `make fuzz`, replayed
 * by check_fuzz_replay.
 *
 * The input decodes into a small graph (1 to 12 tensors, lifetimes within
 * 16 operators, sizes up to 64 KiB, some with their own alignment, a few
 * pinned), most tensors declaring an alias, many of them made legal (the
 * output first written where the input is last used, the two sizes
 * rounding to one at the global alignment but often differing), a global
 * alignment and a capacity. Every algorithm, the exact search with an
 * effort of 1 included, plans it with and without the capacity, and every
 * plan must:
 *  - pass planner_verify, and an independent O(n^2) check written here:
 *    two tensors that overlap in time and memory are a declared legal pair
 *    at one offset, and no input shares with two outputs;
 *  - have its bound at most its arena and at most the unshared bound,
 *    optimality claimed exactly at the bound, and a fit answer that agrees
 *    with the arena and the bound;
 *  - with the capacity, be no larger than without it;
 *  - have a bound that no other plan the verifier accepts beats: the plans
 *    of the graph with none or some of its aliases are such plans.
 * A graph planner_validate refuses must be refused by planner_run with the
 * same code.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"

#define FUZZ_MAX_T 12u /* tensors per graph */
#define FUZZ_BYTES_PER_T 6u
#define FUZZ_HEADER 3u

static uint64_t eff_align(const struct planner_tensor *t, uint64_t global)
{
  return t->align > global ? t->align : global;
}

/* The row of the tensor t[i] names, or -1. */
static int named_row(const struct planner_graph *g, size_t i)
{
  const struct planner_tensor *t = g->tensors;
  if (!t[i].has_alias)
    return -1;
  for (size_t k = 0; k < g->n_tensors; k++)
    if (t[k].id == t[i].alias)
      return (int)k;
  return -1;
}

/* Whether rows i and j are a declared legal pair at one offset. */
static int shared_pair(const struct planner_graph *g,
                       const struct planner_options *o,
                       const struct planner_plan *p, size_t i, size_t j)
{
  const struct planner_tensor *t = g->tensors;
  if (p->offsets[i] != p->offsets[j])
    return 0;
  if (named_row(g, i) == (int)j && !planner_alias_check(&t[i], &t[j], o))
    return 1;
  return named_row(g, j) == (int)i && !planner_alias_check(&t[j], &t[i], o);
}

/* The independent check. Returns 0 when the plan is right for g. */
static int brute_check(const struct planner_graph *g,
                       const struct planner_options *o,
                       const struct planner_plan *p)
{
  const struct planner_tensor *t = g->tensors;
  size_t n = g->n_tensors;
  int sharing = o->in_place;
  if (p->n_offsets != n)
    return -1;
  uint64_t end_max = 0;
  int takers[FUZZ_MAX_T] = {0};
  for (size_t i = 0; i < n; i++) {
    const struct planner_tensor *a = &t[i];
    uint64_t off = p->offsets[i];
    if (a->pinned != PLANNER_NOT_PINNED && off != (uint64_t)a->pinned)
      return -3;
    if (a->size == 0)
      continue;
    if (off % eff_align(a, o->alignment) != 0)
      return -2;
    if (off + a->size > end_max)
      end_max = off + a->size;
    int k = named_row(g, i);
    if (sharing && k >= 0 && p->offsets[k] == off &&
        !planner_alias_check(a, &t[k], o) && ++takers[k] > 1)
      return -6; /* two outputs over one input */
    for (size_t j = i + 1; j < n; j++) {
      const struct planner_tensor *b = &t[j];
      if (b->size == 0 || a->last < b->first || b->last < a->first)
        continue;
      uint64_t ob = p->offsets[j];
      if (off < ob + b->size && ob < off + a->size &&
          !(sharing && shared_pair(g, o, p, i, j)))
        return -4;
    }
  }
  return end_max == p->arena_bytes ? 0 : -5;
}

/* Plans g under o into p; aborts on a code no graph may cause. Returns
 * 0 when p holds a plan. */
static int plan(const struct planner_graph *g, const struct planner_options *o,
                int valid, struct planner_plan *p)
{
  char err[ARENA_ERR_LEN];
  planner_plan_init(p);
  int rc = planner_run(g, o, p, err);
  if (valid != 0) {
    if (rc != valid)
      abort(); /* run and validate disagree about the graph */
    return -1;
  }
  if (rc == ARENA_EVERIFY)
    abort(); /* the planner made a wrong plan (and caught it) */
  if (rc != 0) {
    /* Pinned tensors can make a heuristic give up; nothing else may. */
    if (rc != ARENA_EPINNED && rc != ARENA_EINFEASIBLE)
      abort();
    return -1;
  }
  if (planner_verify(g, o, p, err) != 0 || brute_check(g, o, p) != 0)
    abort();
  if (p->arena_bytes < p->lower_bound_bytes ||
      p->lower_bound_bytes > p->lower_bound_unshared_bytes ||
      !p->proven_optimal != (p->arena_bytes > p->lower_bound_bytes))
    abort();
  uint64_t cap = o->capacity;
  if (cap && !((p->fit == PLANNER_FIT_YES && p->arena_bytes <= cap) ||
               (p->fit == PLANNER_FIT_NO && p->lower_bound_bytes > cap &&
                p->arena_bytes > cap) ||
               (p->fit == PLANNER_FIT_UNKNOWN && p->arena_bytes > cap &&
                p->lower_bound_bytes <= cap)))
    abort(); /* a fit answer the plan and bound do not support */
  return 0;
}

/* Reads the graph, the alignment and the capacity's scale from the
 * input. Returns the tensor count, 0 for too short an input. */
static size_t decode(const uint8_t *data, size_t size,
                     struct planner_tensor *t, struct planner_options *o,
                     uint64_t *cap_scale)
{
  if (size < FUZZ_HEADER + FUZZ_BYTES_PER_T)
    return 0;
  size_t n = (size - FUZZ_HEADER) / FUZZ_BYTES_PER_T;
  if (n > FUZZ_MAX_T)
    n = FUZZ_MAX_T;
  uint8_t flags = data[1];
  planner_options_init(o);
  o->alignment = (uint64_t)1 << (data[0] % 8); /* 1 .. 128 */
  o->effort = 1;
  o->in_place = (flags & 3) != 3; /* now and then off */
  *cap_scale = data[2];
  const uint8_t *d = data + FUZZ_HEADER;
  for (size_t i = 0; i < n; i++, d += FUZZ_BYTES_PER_T) {
    t[i].id = (uint32_t)i;
    t[i].size = (uint64_t)d[0] | (uint64_t)d[1] << 8;
    if ((d[2] & 0xc0) == 0xc0)
      t[i].size = 0;
    t[i].first = d[2] % 16;
    t[i].last = t[i].first + d[3] % 8;
    t[i].align = (d[4] & 0x80) ? (uint64_t)1 << (d[4] % 9) : 0;
    t[i].pinned = PLANNER_NOT_PINNED;
    if ((flags & 4) && (d[4] & 0x40))
      t[i].pinned = (int64_t)(d[3] & 0x3f) * 64;
    t[i].alias = 0;
    t[i].has_alias = 0;
  }
  /* the aliases, once every row is known: d[5] names a row, and with
   * bit 6 set makes the pair legal where it can */
  d = data + FUZZ_HEADER;
  for (size_t i = 0; i < n; i++, d += FUZZ_BYTES_PER_T) {
    if (!(d[5] & 0x80))
      continue;
    size_t k = (size_t)(d[5] & 0x1f) % n;
    t[i].has_alias = 1;
    t[i].alias = (flags & 8) && (d[5] & 0x20) ? (uint32_t)(n + k)
                                              : t[k].id; /* not in the graph */
    if (!(d[5] & 0x40) || k == i || t[k].first >= t[k].last || !t[k].size)
      continue;
    uint64_t a = o->alignment;
    uint64_t r = (t[k].size + a - 1) / a * a; /* both round to r */
    uint64_t less = (uint64_t)d[4] % a;
    t[i].first = t[k].last;
    if (t[i].last < t[i].first)
      t[i].last = t[i].first + d[3] % 4;
    t[i].size = r - less; /* less < a <= r: within the last granule */
  }
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct planner_tensor t[FUZZ_MAX_T], sub[FUZZ_MAX_T];
  struct planner_options o;
  uint64_t cap_scale;
  size_t n = decode(data, size, t, &o, &cap_scale);
  if (n == 0)
    return 0;
  struct planner_graph g = {t, n}, gs = {sub, n};
  char err[ARENA_ERR_LEN];
  int valid = planner_validate(&g, &o, err);
  for (int a = 0; a < PLANNER_ALGO__COUNT; a++) {
    struct planner_plan p, c, q;
    o.algo = (enum planner_algo)a;
    o.capacity = 0;
    if (plan(&g, &o, valid, &p) != 0) {
      planner_plan_cleanup(&p);
      continue;
    }
    /* a capacity around the plan: between the bound and the arena, at
     * one of them, or above */
    o.capacity = p.lower_bound_bytes +
                 (p.arena_bytes - p.lower_bound_bytes + 64) * cap_scale / 128;
    if (o.capacity == 0)
      o.capacity = 1;
    if (plan(&g, &o, valid, &c) == 0 && c.arena_bytes > p.arena_bytes)
      abort(); /* a capacity made the plan larger */
    planner_plan_cleanup(&c);
    o.capacity = 0;
    /* plans with none, then some, of the aliases: the verifier accepts
     * them for g too when they share only legal pairs, one per input,
     * and then no bound of g may be above them */
    for (int k = 0; o.in_place && k < 2; k++) {
      memcpy(sub, t, n * sizeof *t);
      for (size_t i = 0; i < n; i++)
        if (k == 0 || ((data[FUZZ_HEADER + i * FUZZ_BYTES_PER_T] >> a) & 1))
          sub[i].has_alias = 0;
      if (plan(&gs, &o, planner_validate(&gs, &o, err), &q) == 0 &&
          planner_verify(&g, &o, &q, err) == 0 &&
          q.arena_bytes < p.lower_bound_bytes)
        abort(); /* a plan the verifier accepts beats the bound */
      planner_plan_cleanup(&q);
    }
    planner_plan_cleanup(&p);
  }
  return 0;
}

/*
 * fuzz_tflite_inplace.c - libFuzzer target for the in-place pairs the
 * TFLite reader derives (planner/formats/tflite_inplace.c; tflite.h,
 * IN-PLACE PAIRS). Built and run by `make fuzz`, replayed by
 * check_fuzz_replay.
 *
 * The input is model bytes: small models with pairs of every rule,
 * mutated. When the reader accepts them, with and without keep_dequant,
 * every pair it declares must:
 *  - name a planned tensor other than the output, and be counted in
 *    n_aliases;
 *  - be legal (planner_alias_check) at every alignment, as the reader's
 *    rules promise: the input last used where the output is first written,
 *    written before it, both of one size, neither pinned;
 *  - take an input no other output takes.
 * The graph must then validate, and plans of it, sharing or not, must
 * verify, with a bound at most the arena and the shared plan no larger
 * than the plan without sharing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "tflite.h"

#define FUZZ_MAX_PLANNED 4096u /* keep each run fast */

/* The row of id in m's planned tensors, or -1. */
static long row_of(const struct planner_tflite_model *m, uint32_t id)
{
  for (size_t k = 0; k < m->n_planned; k++)
    if (m->tensors[k].id == id)
      return (long)k;
  return -1;
}

static void check_pairs(const struct planner_tflite_model *m)
{
  size_t n = m->n_planned, declared = 0;
  uint8_t *taken = calloc(n ? n : 1, 1);
  if (!taken)
    return;
  for (size_t i = 0; i < n; i++) {
    const struct planner_tensor *out = &m->tensors[i];
    if (!out->has_alias)
      continue;
    declared++;
    long k = row_of(m, out->alias);
    if (k < 0 || (size_t)k == i)
      abort(); /* names no planned tensor, or itself */
    const struct planner_tensor *in = &m->tensors[k];
    for (unsigned s = 0; s <= 12; s += 3) {
      struct planner_options o;
      planner_options_init(&o);
      o.alignment = (uint64_t)1 << s;
      if (planner_alias_check(out, in, &o))
        abort(); /* a pair the reader declares is not legal */
    }
    if (in->size != out->size || out->pinned != PLANNER_NOT_PINNED ||
        in->pinned != PLANNER_NOT_PINNED)
      abort();
    if (taken[k]++)
      abort(); /* two outputs over one input */
  }
  free(taken);
  if (declared != m->n_aliases)
    abort();
}

/* Plans the model's graph with algorithm a, with and without sharing. */
static void check_plans(const struct planner_tflite_model *m,
                        enum planner_algo a)
{
  struct planner_graph g = {m->tensors, m->n_planned};
  struct planner_options o;
  char err[ARENA_ERR_LEN];
  planner_options_init(&o);
  o.algo = a;
  o.effort = 1;
  int valid = planner_validate(&g, &o, err);
  if (valid == ARENA_EINVAL)
    abort(); /* only an alias can make the reader's graph EINVAL */
  if (valid)
    return; /* sizes beyond the largest arena, say */
  struct planner_plan shared, bare;
  planner_plan_init(&shared);
  planner_plan_init(&bare);
  if (planner_run(&g, &o, &shared, err) != 0 ||
      planner_verify(&g, &o, &shared, err) != 0 ||
      shared.lower_bound_bytes > shared.arena_bytes ||
      shared.n_shared > m->n_aliases)
    abort();
  o.in_place = 0;
  if (planner_run(&g, &o, &bare, err) != 0 ||
      planner_verify(&g, &o, &bare, err) != 0)
    abort();
  o.in_place = 1; /* the plan without sharing is one that sharing accepts */
  if (planner_verify(&g, &o, &bare, err) != 0 ||
      shared.lower_bound_bytes > bare.arena_bytes)
    abort();
  if (shared.arena_bytes > bare.arena_bytes)
    abort(); /* sharing made the plan larger */
  planner_plan_cleanup(&shared);
  planner_plan_cleanup(&bare);
}

static void check_model(const uint8_t *data, size_t size, int keep_dequant)
{
  struct planner_tflite_model m;
  struct planner_tflite_options to;
  char err[ARENA_ERR_LEN];
  memset(&to, 0, sizeof to);
  to.keep_dequant = keep_dequant;
  planner_tflite_init(&m);
  if (planner_tflite_read(data, size, &to, &m, err) == 0 &&
      m.n_planned <= FUZZ_MAX_PLANNED) {
    check_pairs(&m);
    check_plans(&m, PLANNER_ALGO_BEST);
    check_plans(&m, PLANNER_ALGO_GREEDY_SIZE);
  }
  planner_tflite_cleanup(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  check_model(data, size, 0);
  check_model(data, size, 1);
  return 0;
}

/*
 * check_exact.h - what the parts of the exact planner's suite share: the
 * helpers that build options, run and check plans, and drive the search
 * on a set-up context, and the function each part exports to add its
 * test cases (defined in check_exact_<part>.c).
 */
#ifndef ARENA_CHECK_EXACT_H
#define ARENA_CHECK_EXACT_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "exact_int.h"
#include "planner.h"

/* Options for algo `exact` with the given alignment, capacity and effort. */
void ce_opts(struct planner_options *o, uint64_t alignment, uint64_t capacity,
             uint32_t effort);

/* Runs the planner on t, asserts success and a verified plan in *p (the
 * caller cleans it up). */
void ce_run_ok(const struct planner_tensor *t, size_t n,
               const struct planner_options *o, struct planner_plan *p);

/* Sets one unpinned tensor of the default alignment. */
void ce_set(struct planner_tensor *t, uint32_t id, uint64_t size,
            int64_t first, int64_t last);

/* Writes TensorFlow Lite Micro's "Medium" case (greedy by size 90,
 * optimum 80) into t[0 .. 5): ids from id0, sizes times scale, lifetimes
 * shifted by shift steps. */
void ce_tflm_medium(struct planner_tensor *t, uint32_t id0, uint64_t scale,
                    int64_t shift);

/* Plans t under *o twice, the second time with a stop callback that
 * sleeps on every poll, and asserts the same plan. */
/* A stop callback that never stops but sleeps 2 ms on every poll; ctx
 * points to an int that counts the polls. */
int ce_slow_poll(void *ctx);

void ce_check_slow_same(const struct planner_tensor *t, size_t n,
                        struct planner_options *o);

/* A problem set up for the search from greedy-size's plan (offs, graph
 * order, borrowed), with an unlimited work budget. */
struct ce_built {
  struct planner_graph g;
  struct planner_options o;
  struct planner__prob p;
  struct ctx X;
};

void ce_built_init(struct ce_built *b, const struct planner_tensor *t,
                   size_t n, uint64_t alignment, uint64_t *offs);
void ce_built_cleanup(struct ce_built *b);

/* Optimal arena of a small graph (at most 12 tensors) by an independent
 * brute force, first fit over every order; pinned and zero-size tensors
 * are pre-placed (check_exact_random.c). */
uint64_t ce_brute(const struct planner_tensor *t, size_t n,
                  uint64_t alignment);

/* check_exact_squeeze.c. B's problem for trace t of n tensors
 * (alignment 1, effort 100) and greedy-size's plan of it in offs;
 * returns that plan's arena. */
uint64_t ce_greedy_problem(struct ce_built *B, const struct planner_tensor *t,
                           size_t n, uint64_t *offs);

/* B's problem set up again (its graph kept) with the given alignment and
 * effort 100, and greedy-size's plan of it in offs; returns that plan's
 * arena. */
uint64_t ce_greedy_aligned(struct ce_built *B, uint64_t alignment,
                           uint64_t *offs);

/* Asserts that offs is a valid plan of B's graph with arena arena. */
void ce_check_verifies(const struct ce_built *B, uint64_t *offs,
                       uint64_t arena);

/* Asserts that plan p of B's graph, of arena arena, is valid and below
 * above; then frees B's problem, the trace t and offs. */
void ce_check_below_and_free(struct ce_built *B, uint64_t *p, uint64_t arena,
                             uint64_t above, struct planner_tensor *t,
                             uint64_t *offs);

/* A stop callback that always stops. */
int ce_stop_now(void *ctx);

/* Points p at options o, a copy of p's with stop as the stop callback;
 * returns the options p had (to be put back by the caller). */
const struct planner_options *ce_with_stop(struct planner__prob *p,
                                           struct planner_options *o,
                                           planner_stop_cb stop, void *ctx);

/* The XLA-like trace of 10 000 tensors (seed 1) of the squeeze tests
 * (*n of them, returned, free with free()), B's problem of it and
 * greedy-size's plan in *offs (room for three plans, freed by the
 * caller), its arena in *heur. */
struct planner_tensor *ce_squeeze_setup(struct ce_built *B, size_t *n,
                                        uint64_t **offs, uint64_t *heur);

/* check_exact_large.c. A generated XLA-like trace of size tensors (seed
 * seed; *n of them) and room for copies plans of it in *offs; both owned
 * by the caller (free with free()). */
struct planner_tensor *ce_xla_trace(size_t size, uint64_t seed, size_t *n,
                                    uint64_t **offs, size_t copies);

/* Adds the test case "random" (check_exact_random.c). */
void ce_add_random_tests(Suite *s);

/* Adds the test case "sections" (check_exact_sections.c). */
void ce_add_sections_tests(Suite *s);

/* Adds the test case "large" (check_exact_large.c). */
void ce_add_large_tests(Suite *s);

/* Adds the squeeze's tests to tc, the test case "large"
 * (check_exact_squeeze.c). */
void ce_add_squeeze_tests(TCase *tc);

/* check_exact_lns.c. Runs pass (planner__lns(), planner__joint(): a
 * pass that improves a plan in place) on a copy of plan offs (arena
 * *arena) of problem p with stop as the stop callback; returns its code,
 * the plan it leaves in out and its arena in *arena. */
int ce_pass_copy(int (*pass)(const struct planner__prob *, uint64_t *,
                             uint64_t *),
                 struct planner__prob *p, const uint64_t *offs,
                 uint64_t *out, uint64_t *arena, planner_stop_cb stop,
                 void *ctx);

/* Asserts, for pass on plan offs (arena given) of p: cancelled at its
 * first poll it fails with the plan unchanged; it succeeds, with its
 * plan in a, and again the same plan in b when every poll sleeps (and
 * it polls). Returns the arena of a. */
uint64_t ce_check_pass_repeats(int (*pass)(const struct planner__prob *,
                                           uint64_t *, uint64_t *),
                               struct planner__prob *p, const uint64_t *offs,
                               uint64_t given, uint64_t *a, uint64_t *b);

/* check_exact_lns.c. Plans the XLA-like trace of size tensors (seed
 * seed) with `best` at the default effort and alignment 1, asserts a
 * verified plan, and returns its arena, with its lower bound in *lb. */
uint64_t ce_best_on_trace(size_t size, uint64_t seed, uint64_t *lb);

/* check_exact_lns.c. The same for the generated trace of shape shape
 * (an enum tracegen_shape of tracegen.h). */
uint64_t ce_best_on_shape(int shape, size_t size, uint64_t seed, uint64_t *lb);

/* Adds the test case "lns" (check_exact_lns.c). */
void ce_add_lns_tests(Suite *s);

/* Adds the test case "joint" (check_exact_joint.c). */
void ce_add_joint_tests(Suite *s);
/* check_exact_window.c: planner_improve_window(). */
void ce_add_window_tests(Suite *s);

#endif /* ARENA_CHECK_EXACT_H */

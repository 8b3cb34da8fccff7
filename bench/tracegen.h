/*
 * tracegen.h - deterministic generator of large lifetime traces shaped
 * like the ones ML compilers hand to a memory planner.
 *
 * Used by bench/ (make bench) and by the unit tests to make instances of
 * any size, from a seed, the same on every machine. Two shapes:
 *
 *  TRACEGEN_SOMAS   a transformer training step as MindSpore's SOMAS sees
 *                   it (like pangu_2.6B): a few weights live all the time,
 *                   identical layers run forward, then backward in
 *                   reverse, then an optimiser tail. In the forward pass
 *                   most activations die within a few operators, some are
 *                   saved until the mirror operator of the backward pass
 *                   (nested lifetimes), a few live to the end; the
 *                   backward pass adds gradients that live to the end.
 *                   Sizes come from a palette of products of the model's
 *                   dimensions, so many tensors share a size.
 *  TRACEGEN_IOPDDL  an XLA program as in the IOPDDL benchmark (like S_1 and
 *                   Y_1): parameters live from operator 0 to a last use
 *                   spread over the program, a burst of tiny tensors at
 *                   the start, and a chain of operators whose outputs
 *                   mostly die soon, some after hundreds of operators.
 *                   Sizes are products of tensor dimensions, most plus one
 *                   byte as in the benchmark's files, so they are odd and
 *                   varied (5 bytes to about 1 GB).
 *
 * Lifetimes are inclusive operator indexes; ids are 0 .. n-1 in creation
 * order; no tensor is pinned or has an alignment of its own.
 */
#ifndef ARENA_TRACEGEN_H
#define ARENA_TRACEGEN_H

#include <stddef.h>
#include <stdint.h>

#include "planner.h"

enum tracegen_shape {
  TRACEGEN_SOMAS = 0,  /* transformer training step (SOMAS) */
  TRACEGEN_IOPDDL = 1, /* XLA program (IOPDDL) */
};

/* Makes a trace of the given shape with about n tensors (within a few
 * percent: whole layers or operators are generated) from seed; the same
 * arguments give the same trace everywhere. n must be at least 100.
 * Returns a new array of *n_out tensors (owned by the caller, free with
 * free()), or NULL when out of memory or for bad arguments. */
struct planner_tensor *tracegen_make(enum tracegen_shape shape, size_t n,
                                     uint64_t seed, size_t *n_out);

/* The generator's random stream (SplitMix64): the next value of state
 * *s, and one uniform in [lo, hi] (lo <= hi). Shared by the benchmarks'
 * own random graphs. */
uint64_t tracegen_rand(uint64_t *s);
uint64_t tracegen_rand_in(uint64_t *s, uint64_t lo, uint64_t hi);

/* Returns "somas" or "iopddl", or "?" for another value. */
const char *tracegen_shape_name(enum tracegen_shape shape);

#endif /* ARENA_TRACEGEN_H */

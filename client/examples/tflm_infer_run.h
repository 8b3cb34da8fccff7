/*
 * tflm_infer_run.h - loads a .tflite model and runs it on TensorFlow Lite
 * Micro with a given memory planner: the part of the tflm_infer example
 * (client/examples/tflm_infer.cc) that the TFLM tests share.
 *
 * A run creates a MicroAllocator on the caller's arena with the caller's
 * planner (MicroAllocator::Create(arena, len, planner), through a tap that
 * passes every call on and records the plan TFLM used), a MicroInterpreter
 * with the reference kernels of every operator the bundled models use,
 * allocates the tensors, then invokes the model n times. Before each
 * invoke every input is filled from a seeded generator (floats uniform in
 * [-1, 1), every other type random bytes), so two runs with the same seed
 * see the same inputs; after it every output is copied out. Nothing here
 * keeps global state.
 *
 * The plan is recorded while TFLM plans because that is the only time a
 * planner can be asked: TFLM's GreedyMemoryPlanner keeps its state in the
 * arena's temporary space, which the tensors overwrite afterwards, so
 * querying it after AllocateTensors() reads garbage.
 */
#ifndef ARENAD_TFLM_INFER_RUN_H
#define ARENAD_TFLM_INFER_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "tensorflow/lite/micro/memory_planner/micro_memory_planner.h"

namespace tflm_infer {

constexpr size_t kErrLen = 1024;      /* bytes of an error text: room to name
                                         every operator a model lacks */
constexpr int kMaxDims = 8;           /* dims kept per output */

/* Outcomes of LoadModel() and RunModel(). */
enum RunStatus {
  kRunOk = 0,
  kRunUnreadable = 1, /* the file cannot be read */
  kRunInvalid = 2,    /* not a TFLite model that verifies */
  kRunUnsupported = 3, /* an operator this build of TFLM does not have */
  kRunAllocate = 4,   /* AllocateTensors failed (arena too small, a kernel
                         refused the model, planning failed) */
  kRunInvoke = 5,     /* Invoke failed */
  kRunNoMemory = 6,   /* out of memory outside the arena */
};

/* A model file in memory. Owned; FreeModel() releases it. */
struct Model {
  uint8_t *data; /* len bytes, 16-byte aligned as TFLM needs */
  size_t len;    /* bytes */
};

/* Reads path into *m and checks it with the FlatBuffers verifier. Returns
 * kRunOk, kRunUnreadable, kRunInvalid or kRunNoMemory; err (kErrLen
 * bytes) says why. On failure *m is empty. */
int LoadModel(const char *path, Model *m, char *err);
void FreeModel(Model *m);

/* One output tensor of one invoke. */
struct OutputInfo {
  int invoke;          /* 0 .. invokes-1 */
  int index;           /* output index */
  int type;            /* TfLiteType */
  int rank;            /* dims; only the first kMaxDims are kept */
  int dims[kMaxDims];  /* shape */
  size_t offset;       /* where its bytes start in Run::outputs */
  size_t bytes;        /* its size */
};

/* One buffer TFLM added to the planner, and where the planner put it. */
struct PlannedBuffer {
  int size;    /* bytes, as TFLM passed them (a multiple of 16) */
  int first;   /* TFLM allocation scopes, inclusive: -1 never used, 0 the */
  int last;    /* graph inputs, k + 1 operator k */
  int offline; /* the model's offline offset, -1 when none */
  int offset;  /* what GetOffsetForBuffer() told TFLM, -1 if never asked */
};

/* What a run produced. Caller-allocated; RunModel() fills it and
 * FreeRun() releases what it owns. */
struct Run {
  size_t arena_used_bytes; /* MicroInterpreter::arena_used_bytes() */
  size_t head_bytes;       /* the planner's GetMaximumMemorySize(), as TFLM
                              read it while planning */
  int plan_asked;          /* 1: TFLM asked the planner for the head size
                              or an offset, so a plan was made (or its
                              making failed); 0: AllocateTensors stopped
                              before that */
  PlannedBuffer *buffers;  /* n_buffers, in TFLM's order; owned */
  size_t n_buffers;        /* buffers TFLM planned */
  uint8_t *outputs;        /* every output of every invoke, in order; owned */
  size_t outputs_len;      /* bytes at outputs */
  OutputInfo *info;        /* n_info entries, owned */
  size_t n_info;           /* invokes x outputs */
  char error[kErrLen];     /* why the run failed, "" on success */
};

/* Runs m (borrowed) with planner (borrowed) on arena (arena_len bytes,
 * 16-byte aligned, borrowed) for `invokes` invokes with inputs from seed.
 * Returns a RunStatus; on failure out->error says why (TFLM's own
 * messages go to stderr) and the outputs of the invokes that ran are
 * kept. out must not hold an earlier run. */
int RunModel(const Model &m, tflite::MicroMemoryPlanner *planner,
             uint8_t *arena, size_t arena_len, uint64_t seed, int invokes,
             Run *out);
void FreeRun(Run *r);

/* Called by RunTenants() before model i is allocated, so that the caller
 * can point its planner at that model (arenad::TflmPlanner::SetModel).
 * Returns 0 to go on; anything else stops the run (kRunAllocate). */
typedef int (*SelectModel)(void *ctx, size_t i);

/* TFLite Micro's multi-tenant arena: the n models (borrowed) share one
 * MicroAllocator on arena (arena_len bytes, 16-byte aligned, borrowed)
 * with planner (borrowed). Each model gets its own MicroInterpreter,
 * allocated in model order (select(ctx, i) first, when select is not
 * NULL); their persistent parts come from the arena's tail one after
 * another and they share one head, the size of the largest model's
 * plan. Then, `invokes` times, every model is invoked in turn with the
 * inputs a RunModel() of it with this seed would give, and its outputs
 * are copied into out[i] (n Runs, caller-allocated; FreeRun() each)
 * before the next model runs over the head. out[i] records model i's
 * plan; arena_used_bytes is the whole arena's, the same in every out[i].
 * Returns a RunStatus; the failing model's Run says why. */
int RunTenants(const Model *models, size_t n,
               tflite::MicroMemoryPlanner *planner, SelectModel select,
               void *ctx, uint8_t *arena, size_t arena_len, uint64_t seed,
               int invokes, Run *out);

}  // namespace tflm_infer

#endif /* ARENAD_TFLM_INFER_RUN_H */

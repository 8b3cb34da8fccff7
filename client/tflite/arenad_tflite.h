/*
 * arenad_tflite.h - runs a TensorFlow Lite tflite::Interpreter on a memory
 * plan from arenad.
 *
 * arenad::TflitePlanner builds the interpreter itself, so that it can give
 * tensors their addresses before TFLite's first AllocateTensors():
 *
 *     arenad_client_t *c = NULL;
 *     arenad_client_open(NULL, &c);              // fallback on by default
 *     tflite::ops::builtin::BuiltinOpResolver resolver;
 *     arenad::TflitePlanner planner(c, model_data, model_len, resolver);
 *     std::unique_ptr<tflite::Interpreter> interp;
 *     if (planner.Build(&interp) != 0) ...       // planner.error() says why
 *     interp->Invoke();
 *
 * HOW IT LEARNS THE TENSORS
 *  Build() first builds a throw-away interpreter of the same model and
 *  resolver and lets TFLite allocate it with its own ArenaPlanner. Then,
 *  walking subgraph 0's execution plan in order, it reads every node's
 *  inputs, outputs and intermediates: each tensor TFLite placed in its
 *  arena (kTfLiteArenaRw, not a temporary) becomes one buffer of the plan,
 *  sized with TFLite's own byte count, living from the first to the last
 *  node that names it; graph inputs live from node 0 and graph outputs to
 *  the last node. Each node's temporaries (created by kernels in Prepare)
 *  are counted with their bytes. The throw-away interpreter's arena is
 *  "TFLite alone", the figure the plan must not exceed.
 *
 * THE PLAN
 *  The buffers are planned through arenad_client_plan() (algorithm best,
 *  alignment 64 = TFLite's kDefaultTensorAlignment) under the model's
 *  key: the SHA-256 of the model bytes and the shapes of subgraph 0's
 *  inputs. Processes that run the same model share one cached plan; when
 *  the daemon fails and the client's fallback is on, the plan is computed
 *  in this process.
 *
 * PLACING
 *  Build() allocates one 64-byte-aligned arena of the plan's size, builds
 *  the real interpreter and calls SetCustomAllocationForTensor() for every
 *  planned tensor before AllocateTensors(). After it, a tensor whose data
 *  pointer is still its planned address is placed; one a kernel turned
 *  dynamic (or otherwise moved) is left to TFLite and counted.
 *
 * TEMPORARIES
 *  Kernel temporaries cannot be given an address (a kernel's Prepare sets
 *  them back to kTfLiteArenaRw): TFLite keeps them in its own arena. When
 *  every tensor has its address, that arena holds the temporaries alone.
 *  So Build() learns, from a second throw-away interpreter with the
 *  tensors laid end to end, where TFLite puts each temporary inside that
 *  arena (its first allocation is at offset 0) and how large the arena
 *  is; plans the tensors together with the temporaries, each pinned at
 *  its offset and live at its node only; and hands TFLite, through its
 *  allocator hook (Interpreter::SetAllocator), the base of arenad's arena
 *  for that arena: the first allocation of exactly its size. Every other
 *  allocation (TFLite's persistent arena, dynamic tensors) comes from the
 *  heap. After AllocateTensors() every temporary must be at its planned
 *  address, or the plan is dropped. Failing that, the tensors alone are
 *  planned and TFLite keeps its temporaries beside arenad's arena.
 *  TFLite's accounting (Subgraph::GetMemoryAllocInfo, every subgraph)
 *  gives what it still allocates outside arenad's arena, the remainder.
 *  When arenad's arena plus the remainder would be larger than TFLite
 *  alone, Build() returns an interpreter on TFLite's own planner instead
 *  and says so (TflitePlanSource::kTflite): the total is never larger
 *  than TFLite alone.
 *
 * IN-PLACE SHARING
 *  On by default (SetInPlace(false) before Build()). The model is read
 *  with arenad's .tflite reader, whose allowlist of kernels that read
 *  element i before they write it (ADD, the activations, RESHAPE, ...;
 *  planner/formats/tflite.h) names the input each output may reuse. A
 *  pair is declared to the planner when both tensors are planned buffers
 *  of equal size; the planner takes it only where that is legal and
 *  shrinks the arena. TFLite's kernels of those operators are safe with an
 *  output on its input for the same reason TFLite Micro's are.
 *
 * TFLITE'S MESSAGES
 *  The model and every interpreter the planner builds report to an error
 *  reporter of the planner's. While Build() or BuildTfliteOnly() runs it
 *  keeps TFLite's messages: when the call fails they end error() (after
 *  "TFLite said: "), except when the resolver lacks kernels, which
 *  error() names itself; when it succeeds they are dropped (a first
 *  choice of plan TFLite refused is not an error). Any other time, as
 *  during Invoke(), they go to stderr like TFLite's default reporter's.
 *
 * OWNERSHIP AND THREADS
 *  The client handle, the resolver and the model bytes are borrowed and
 *  must outlive the planner (TFLite's FlatBufferModel reads the bytes in
 *  place). The planner owns the arena, the FlatBufferModel and the
 *  allocator hook TFLite calls: every interpreter Build() returns must be
 *  destroyed before the planner. One planner is used from one thread at
 *  a time.
 */
#ifndef ARENAD_TFLITE_H
#define ARENAD_TFLITE_H

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <string>
#include <vector>

#include <arenad/arenad_client.h>
#include "tflite/core/api/error_reporter.h"
#include "tflite/core/api/op_resolver.h"
#include "tflite/interpreter.h"
#include "tflite/model_builder.h"

namespace arenad {

/* Where the plan in use came from. */
enum class TflitePlanSource {
  kNone,   /* not built, or the build failed */
  kDaemon, /* planned by arenad */
  kCache,  /* served from arenad's cache */
  kLocal,  /* planned in this process (fallback) */
  kTflite, /* arenad's plan would not save memory: TFLite's own planner */
};

/* Returns "daemon", "cache", "local", "tflite" or "none". */
const char *TflitePlanSourceName(TflitePlanSource s);

/* One tensor of the plan. Value struct. */
struct TfliteBuffer {
  int tensor;      /* tensor index in subgraph 0 */
  uint64_t size;   /* TFLite's byte count */
  int64_t first;   /* first node (execution order) that uses it */
  int64_t last;    /* last node that uses it */
  int alias;       /* the tensor it may share bytes with, or -1 */
  uint64_t offset; /* planned offset in the arena */
  bool placed;     /* after Build(): its data pointer is base + offset */
  bool temporary;  /* a kernel temporary, pinned where TFLite puts it */
};

/* Facts about the last Build(). Value struct; every size in bytes. */
struct TflitePlanInfo {
  TflitePlanSource source;
  int fallback_reason;       /* kLocal: the daemon's ARENA_E* code */
  uint64_t tflite_alone;     /* TFLite's arena on its own planner */
  uint64_t arena_bytes;      /* arenad's arena (0 for kTflite) */
  uint64_t plan_bytes;       /* arenad's plan, used or not */
  uint64_t remainder;        /* TFLite's arena beside arenad's */
  uint64_t dynamic_bytes;    /* dynamic tensors TFLite allocated */
  uint64_t lower_bound;      /* no plan of the buffers needs less */
  uint64_t planning_us;      /* as the client reports it */
  size_t n_tensors;          /* buffers planned */
  size_t n_placed;           /* of them at their planned address */
  size_t n_left;             /* of them left to TFLite */
  size_t n_temporaries;      /* kernel temporaries TFLite keeps */
  uint64_t temporary_bytes;  /* their total size */
  size_t n_shared;           /* in-place pairs sharing one offset */
  uint64_t total() const { return arena_bytes + remainder; }
};

class TflitePlanner {
 public:
  /* client, model (model_len bytes) and resolver: borrowed, see
   * OWNERSHIP. */
  TflitePlanner(arenad_client_t *client, const void *model, size_t model_len,
                const tflite::OpResolver &resolver);
  ~TflitePlanner();
  TflitePlanner(const TflitePlanner &) = delete;
  TflitePlanner &operator=(const TflitePlanner &) = delete;

  /* Learns, plans, places and allocates (see above). Returns 0 and sets
   * *out to an allocated interpreter, or an ARENA_E* code (ARENA_EPARSE:
   * TFLite refused the model; ARENA_EUNSUPPORTED: the resolver has no
   * kernel for some operator, builtin or custom (error() names each
   * once), or TFLite could not build or allocate it; a planning or daemon
   * code) with error() saying why, and *out null. */
  int Build(std::unique_ptr<tflite::Interpreter> *out);

  /* Build with TFLite's own planner only (for comparison). */
  int BuildTfliteOnly(std::unique_ptr<tflite::Interpreter> *out);

  void SetInPlace(bool on) { in_place_ = on; }
  const TflitePlanInfo &info() const { return info_; }
  const std::vector<TfliteBuffer> &buffers() const { return buffers_; }
  const uint8_t *arena() const { return arena_; }
  const char *error() const { return error_.c_str(); }

#ifdef ARENAD_TFLITE_TESTING
  /* Test builds only: after planning, move one buffer onto another that
   * is live at the same time, so that tests can prove they notice. */
  void TestOnlyOverlap(bool on) { test_overlap_ = on; }
#endif

 private:
  class Reporter; /* TFLite's messages (TFLITE'S MESSAGES) */
  int Fail(int code, const std::string &why);
  int FailMissing(const char *why);
  int Finish(int rc);
  int BuildPlanned(std::unique_ptr<tflite::Interpreter> *out);
  int BuildOwn(std::unique_ptr<tflite::Interpreter> *out);
  int NewInterpreter(std::unique_ptr<tflite::Interpreter> *out);
  /* The model's operators the resolver has no kernel for, each once, as
   * "NAME (version V)" or "NAME (versions V1, V2)" (every version the
   * model asks for that has no kernel) joined by ", "; "" when every one
   * has a kernel. */
  std::string MissingOps() const;
  int Learn(tflite::Interpreter *probe);
  void DeclarePairs();
  int Plan(bool with_temps);
  int Place(tflite::Interpreter *interp, bool with_temps);
  int FindTemps();
  int BuildOn(bool with_temps, std::unique_ptr<tflite::Interpreter> *out);
  void Overlap();

  arenad_client_t *client_;                     /* borrowed */
  const void *model_;                           /* borrowed */
  size_t model_len_;
  const tflite::OpResolver &resolver_;          /* borrowed */
  std::unique_ptr<Reporter> reporter_; /* owned; outlives fb_ (order) */
  bool missing_ops_;                   /* the last failure: no kernels */
  std::unique_ptr<tflite::FlatBufferModel> fb_; /* owned */
  std::vector<TfliteBuffer> buffers_; /* tensors, then temporaries */
  size_t n_tensors_;                  /* tensors at the head of buffers_ */
  uint64_t temp_arena_;               /* TFLite's arena of temporaries */
  bool temp_given_;                   /* it was handed base of arena_ */
  std::vector<std::vector<int64_t>> in_shapes_; /* subgraph 0's inputs */
  std::vector<struct arenad_dims> in_dims_;     /* views of in_shapes_ */
  uint8_t *arena_;                              /* owned, 64-byte aligned */
  TflitePlanInfo info_;
  std::string error_;
  bool in_place_;
  bool test_overlap_;

  static void *Allocate(void *self, size_t bytes, size_t alignment);
  static void Deallocate(void *self, void *ptr, size_t bytes,
                         size_t alignment);
  TfLiteAllocator allocator_; /* hands arena_ to TFLite's arena */
};

/* TFLite's accounting summed over every subgraph of interp: its arena
 * (kTfLiteArenaRw) bytes, and its dynamic tensor bytes in *dynamic. */
uint64_t TfliteArenaBytes(const tflite::Interpreter &interp,
                          uint64_t *dynamic);

}  // namespace arenad

#endif /* ARENAD_TFLITE_H */

/*
 * arenad_tflite_pipeline.h - several TensorFlow Lite models in one
 * process, invoked one at a time, on one arena with a joint plan from
 * arenad.
 *
 *     arenad::TflitePipeline pipe(client, resolver);
 *     pipe.Add(detector, detector_len);
 *     pipe.Add(landmarks, landmarks_len);
 *     if (pipe.Build() != 0) ...                 // pipe.error() says why
 *     fill(pipe.interpreter(0)->input_tensor(0));
 *     pipe.Invoke(0);                            // then model 1, any order
 *     copy(pipe.interpreter(0)->output_tensor(0),
 *          pipe.interpreter(1)->input_tensor(0));
 *     pipe.Invoke(1);
 *
 * THE JOINT PLAN
 *  Each model is learned as arenad::TflitePlanner learns it
 *  (arenad_tflite.h, HOW IT LEARNS; its in-place pairs with sharing on).
 *  Its arena tensors join one lifetime graph in which model k's
 *  execution plan follows model k-1's: an intermediate of model k lives
 *  at its own nodes shifted past every earlier model's, so the
 *  intermediates of different models may share bytes. Every model's
 *  graph inputs and outputs live through the whole graph: they keep
 *  bytes of their own for the pipeline's lifetime, so a caller may read
 *  model A's output and feed it to model B, in any order of invokes.
 *  Variable tensors and kernel temporaries stay with TFLite (its
 *  persistent arena, and each interpreter's arena of temporaries, the
 *  info().remainder). The graph is planned through arenad_client_plan()
 *  (algorithm best, alignment 64) under a key of its own: a SHA-256 over
 *  "arenad pipeline 1", every model's identity (TfliteModelIdentity) and
 *  its inputs' shapes, in model order, with every model's input shapes
 *  as the key's inputs. The client library verifies the plan, which the
 *  daemon caches like any other; the same models in the same order are a
 *  cache hit. Any invoke order is safe, since one model's intermediates
 *  are dead whenever another model runs.
 *
 * PLACING
 *  One arena (mapped when at least 128 KiB, from the heap below) holds
 *  every planned tensor; each model gets an interpreter whose tensors are
 *  given their addresses (SetCustomAllocationForTensor) before its first
 *  AllocateTensors(). A tensor TFLite does not keep at its address (a
 *  kernel made it dynamic) counts in info().n_left and takes no byte of
 *  anyone else's.
 *
 * ONE AT A TIME
 *  Invoke(k) refuses, with ARENA_EBUSY and without touching any tensor,
 *  while another Invoke() of the pipeline runs on another thread; the
 *  interpreters' own Invoke() must not be called directly then.
 *
 * OWNERSHIP AND THREADS
 *  The client handle, the resolver and every model's bytes are borrowed
 *  and must outlive the pipeline. The pipeline owns the arena, the
 *  models' FlatBufferModels and the interpreters (interpreter(k) is
 *  borrowed from it). Add(), SetInputShapes() and Build() from one
 *  thread; Invoke() from any.
 */
#ifndef ARENAD_TFLITE_PIPELINE_H
#define ARENAD_TFLITE_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <arenad/arenad_client.h>
#include "tflite/core/api/op_resolver.h"
#include "tflite/interpreter.h"
#include "tflite/model_builder.h"

namespace arenad {

/* Facts about the last Build(). Value struct; sizes in bytes. */
struct TflitePipelineInfo {
  uint64_t arena_bytes;  /* the one arena */
  uint64_t lower_bound;  /* no plan of the joint graph needs less */
  uint64_t tflite_alone; /* TFLite's arenas, every model on its own */
  uint64_t arenad_alone; /* arenad's plans of each model alone, summed */
  uint64_t largest_alone; /* the largest of those plans */
  uint64_t io_bytes;     /* every model's inputs and outputs */
  uint64_t remainder;    /* what TFLite still allocates beside the arena */
  size_t n_tensors;      /* tensors planned, every model */
  size_t n_left;         /* of them not at their planned address */
  bool cached;           /* the plan came from arenad's cache */
  bool local;            /* planned in this process (the fallback) */
};

class TflitePipeline {
 public:
  /* client and resolver: borrowed, see OWNERSHIP. */
  TflitePipeline(arenad_client_t *client, const tflite::OpResolver &resolver);
  ~TflitePipeline();
  TflitePipeline(const TflitePipeline &) = delete;
  TflitePipeline &operator=(const TflitePipeline &) = delete;

  /* Appends a model (len bytes, borrowed) before Build(); the same
   * model may be added more than once. Returns its index. */
  size_t Add(const void *model, size_t len);
  /* Model k's input shapes (arenad_tflite.h, INPUT SHAPES). Returns 0,
   * or ARENA_EINVAL when there is no model k. */
  int SetInputShapes(size_t k, const std::vector<std::vector<int>> &s);
  void SetInPlace(bool on) { in_place_ = on; }

  /* Learns every model, plans them jointly and builds an interpreter
   * for each on the one arena. Returns 0, or an ARENA_E* code with
   * error() saying which model and why (ARENA_EINVAL: no models). Any
   * earlier interpreters are destroyed first. */
  int Build();

  size_t size() const { return models_.size(); }
  /* Model k's interpreter after Build() (borrowed), or NULL. */
  tflite::Interpreter *interpreter(size_t k) const;
  /* Invokes model k (ONE AT A TIME). Returns 0, ARENA_EBUSY when another
   * model of the pipeline is running, ARENA_EINVAL for a bad k or before
   * Build(), or ARENA_EINTERNAL when TFLite's Invoke() fails. */
  int Invoke(size_t k);

  const TflitePipelineInfo &info() const { return info_; }
  const char *error() const { return error_.c_str(); }

 private:
  struct Model; /* one model: its bytes, shapes, learned tensors */

  int Fail(int code, const std::string &why);
  int Learn(size_t k, std::vector<struct planner_tensor> *g,
            std::vector<int> *owner, int64_t *base);
  int Plan(std::vector<struct planner_tensor> *g,
           std::vector<uint64_t> *offsets);
  int Place(size_t k, const std::vector<uint64_t> &offsets,
            const std::vector<int> &owner);
  void FreeArena();

  arenad_client_t *client_;             /* borrowed */
  const tflite::OpResolver &resolver_;  /* borrowed */
  std::vector<std::unique_ptr<Model>> models_;
  bool in_place_ = true;
  uint8_t *arena_ = nullptr; /* owned */
  size_t arena_len_ = 0;
  bool arena_mapped_ = false;
  std::atomic<int> running_{-1}; /* the model in Invoke(), or -1 */
  TflitePipelineInfo info_;
  std::string error_;
};

}  // namespace arenad

#endif /* ARENAD_TFLITE_PIPELINE_H */

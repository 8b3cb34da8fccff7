/*
 * arenad_tflm.h - a TensorFlow Lite Micro memory planner whose plans come
 * from arenad.
 *
 * arenad::TflmPlanner implements tflite::MicroMemoryPlanner, the interface
 * TFLite Micro's MicroAllocator plans its arena head through. Pass it where
 * TFLM would otherwise create its own GreedyMemoryPlanner:
 *
 *     arenad_client_t *c = NULL;
 *     arenad_client_open(NULL, &c);              // fallback on by default
 *     arenad::TflmPlanner planner(c, model_data, model_len);
 *     tflite::MicroAllocator *alloc =
 *         tflite::MicroAllocator::Create(arena, arena_len, &planner);
 *     tflite::MicroInterpreter interp(tflite::GetModel(model_data),
 *                                     resolver, alloc);
 *     interp.AllocateTensors();
 *
 * WHAT IT PLANS
 *  Every buffer TFLM adds: the tensors of every subgraph that live in the
 *  arena head and every kernel scratch buffer (RequestScratchBufferInArena),
 *  with the sizes (already rounded up to 16 bytes by TFLM) and lifetimes
 *  TFLM gives. Buffers TFLM adds with an offline offset (a model carrying
 *  an OfflineMemoryAllocation plan) are pinned there. TFLM numbers its
 *  allocation scopes from -1 (a tensor nothing uses) and 0 (the graph's
 *  inputs, before the first operator); the graph sent to arenad shifts
 *  every lifetime by one so that they start at 0. Offsets are multiples of
 *  16, TFLM's MicroArenaBufferAlignment(); options are the planner's
 *  defaults otherwise (algorithm `best`, which includes a replica of
 *  TFLM's GreedyMemoryPlanner, so the arena is never larger than TFLM's
 *  own on the same buffers).
 *
 * THE KEY
 *  Plans are requested from arenad under the model's key: the SHA-256 of
 *  the model bytes and the shapes of subgraph 0's inputs. Every process
 *  that runs the same model file therefore shares one cached plan. When
 *  the daemon fails and the client's fallback is on (the default), the
 *  plan is computed in this process (the same plan: planning is
 *  deterministic). A daemon that does not answer at all (stopped, hung)
 *  holds the first query, and so AllocateTensors(), for the client's
 *  answer timeout (arenad_client.h, TIMEOUTS), 2 s by default.
 *
 * IN-PLACE SHARING
 *  On by default (SetInPlace(false) turns it off before AllocateTensors).
 *  The constructor reads the model with arenad's .tflite reader, which
 *  names, for each output of an operator on its allowlist of kernels that
 *  read element i before they write it (ADD, the activations, RESHAPE,
 *  ...; docs/models.md), the input whose bytes it may reuse. When the
 *  buffers TFLM adds for subgraph 0 match the reader's tensors one for
 *  one (sizes and lifetimes), those pairs are declared to the planner,
 *  which gives each legal pair one buffer when that does not make the
 *  arena larger. TFLite Micro's kernels never check whether an output
 *  overlaps an input, so the allowlist is what makes this safe; the tests
 *  prove each kind in TFLM itself. Buffers that do not match (offline
 *  plans, other subgraphs, scratch buffers) share nothing.
 *
 * WHEN
 *  TFLM calls Init(), then AddBuffer() once per buffer, then
 *  GetOffsetForBuffer() and GetMaximumMemorySize(). The first query after
 *  the last AddBuffer() plans; later queries reuse the plan. Init() starts
 *  over (TFLM calls it once per model allocation).
 *
 * UNUSABLE PLANS
 *  Init() learns from TFLM the arena it has left for the head (the
 *  scratch size it offers). The plan is asked for with
 *  arenad_client_plan_within() under that size and INT_MAX (TFLM's
 *  offsets are int): a plan from arenad that needs more, or more than
 *  any naive layout of the buffers (a poisoned cache entry), is a miss.
 *  The client then plans the buffers in this process and, when its plan
 *  is smaller, reports arenad's to the daemon, which replaces it when
 *  its own plan is smaller (arenad_client.h, UNUSABLE PLANS). info() then says
 *  kLocal with fallback_reason ARENA_EUNUSABLE, and the reason is logged
 *  with MicroPrintf ("arenad planner: planned locally (55296 bytes): the
 *  daemon's plan needs 33286005760 bytes, ..."). With the client's
 *  fallback off, a plan worse than naive is reported and asked for once
 *  more; failing that, planning fails with ARENA_EUNUSABLE.
 *
 * ERRORS
 *  No client handle, a bad model, a bad buffer (negative size, lifetime out of order), an
 *  offline offset that is not a multiple of 16, a planning or daemon
 *  failure (with fallback off), or an offset beyond the int range make
 *  AddBuffer() or GetOffsetForBuffer() return kTfLiteError, so
 *  AllocateTensors() fails cleanly; status() then holds the ARENA_E* code
 *  and error() the reason, which is also logged with MicroPrintf.
 *  GetMaximumMemorySize() returns 0 after a failure.
 *
 * MULTI-TENANT
 *  TFLite Micro lets several MicroInterpreters share one MicroAllocator:
 *  each model's persistent data comes from the arena's tail, and one head
 *  serves them all, sized for the largest model's plan, since they run
 *  one at a time. The allocator has one planner; SetModel() points it at
 *  the model about to allocate, so that each model's buffers are planned
 *  under that model's key and with its own in-place pairs:
 *
 *      arenad::TflmPlanner planner(c, model_a, len_a);
 *      tflite::MicroAllocator *alloc =
 *          tflite::MicroAllocator::Create(arena, arena_len, &planner);
 *      tflite::MicroInterpreter a(tflite::GetModel(model_a), res, alloc);
 *      a.AllocateTensors();
 *      planner.SetModel(model_b, len_b);
 *      tflite::MicroInterpreter b(tflite::GetModel(model_b), res, alloc);
 *      b.AllocateTensors();
 *
 *  Each model's inputs and outputs live in the shared head too: copy a
 *  model's outputs out before invoking the next.
 *
 * OWNERSHIP AND THREADS
 *  The client handle is borrowed and must outlive the planner. The model
 *  bytes are borrowed only during the constructor, which
 *  hashes them and copies the input shapes. The planner owns its buffer
 *  list and plan (heap memory, not arena memory). One planner serves one
 *  MicroAllocator; like the client handle, it is not thread-safe.
 *
 * Calls only functions of arenad_client.h (planner.h, which it includes,
 * provides the types) and, for the pairs it may share, the .tflite reader
 * of planner/formats/tflite.h, which the client library contains.
 */
#ifndef ARENAD_TFLM_H
#define ARENAD_TFLM_H

#include <stddef.h>
#include <stdint.h>

#include <arenad/arenad_client.h>
#include "tensorflow/lite/micro/memory_planner/micro_memory_planner.h"

namespace arenad {

/* Where the current plan came from. */
enum class TflmPlanSource {
  kNone,   /* nothing planned yet, or the last plan failed */
  kDaemon, /* planned by arenad (or joined a planning job in flight) */
  kCache,  /* served from arenad's cache */
  kLocal,  /* planned in this process */
};

/* Facts about the current plan. Value struct. */
struct TflmPlanInfo {
  TflmPlanSource source;      /* see TflmPlanSource */
  int fallback_reason;        /* kLocal after a daemon failure: its ARENA_E*
                                 code (ARENA_EUNUSABLE: its plan was
                                 unusable); 0 otherwise */
  uint64_t arena_bytes;       /* head bytes the plan needs */
  uint64_t lower_bound_bytes; /* no plan of these buffers needs less */
  int proven_optimal;         /* 1 when arena_bytes meets a lower bound */
  enum planner_algo algo;     /* the algorithm that produced the offsets */
  uint64_t planning_us;       /* planning time as the client reports it */
  size_t n_buffers;           /* buffers planned */
  size_t n_shared;            /* pairs of buffers sharing bytes in place */
  uint64_t lower_bound_unshared_bytes; /* the bound without sharing */
};

/* Returns "daemon", "cache", "local" or "none". */
const char *TflmPlanSourceName(TflmPlanSource s);

class TflmPlanner : public tflite::MicroMemoryPlanner {
 public:
  /* client: borrowed, not NULL (its fallback decides whether a failing
   * daemon means local planning). model: the .tflite bytes, model_len of
   * them, borrowed for the call only. A NULL client or a model that does
   * not verify as a TFLite FlatBuffer leaves the planner failed
   * (status() != 0): every AddBuffer() then fails. */
  TflmPlanner(arenad_client_t *client, const void *model, size_t model_len);
  ~TflmPlanner() override;
  TflmPlanner(const TflmPlanner &) = delete;
  TflmPlanner &operator=(const TflmPlanner &) = delete;

  /* tflite::MicroMemoryPlanner. Init() ignores the scratch area TFLM
   * offers (the planner keeps its state on the heap) and drops every
   * buffer and the plan. */
  TfLiteStatus Init(unsigned char *scratch_buffer,
                    int scratch_buffer_size) override;
  TfLiteStatus AddBuffer(int size, int first_time_used,
                         int last_time_used) override;
  TfLiteStatus AddBuffer(int size, int first_time_used, int last_time_used,
                         int offline_offset) override;
  size_t GetMaximumMemorySize() override;
  int GetBufferCount() override;
  TfLiteStatus GetOffsetForBuffer(int buffer_index, int *offset) override;
  bool preserves_all_tensors() const override { return false; }
  /* Logs the plan with MicroPrintf: a summary and one line per buffer. */
  void PrintMemoryPlan() override;

  /* Points the planner at another model (model_len bytes, borrowed for
   * the call only), for the next AllocateTensors(): its key and in-place
   * pairs replace those of the model given before. For TFLite Micro's
   * multi-tenant arena, where several MicroInterpreters share one
   * MicroAllocator, and so one planner: call it before each of them
   * allocates (see MULTI-TENANT). Returns 0, or the ARENA_E* code of a
   * model the constructor would refuse (status() and error() then say
   * why, and AllocateTensors() fails until a good model is set). */
  int SetModel(const void *model, size_t model_len);

  /* In-place sharing on (the default) or off, for the next plan: call
   * before AllocateTensors(). */
  void SetInPlace(bool on) {
    in_place_ = on;
    planned_ = false;
  }
  /* The buffer whose bytes `buffer` may reuse as declared to the planner
   * for the current plan (whether or not the plan took the pair), or -1.
   * Plans first if needed. */
  int AliasOf(int buffer);

  /* 0, or the ARENA_E* code of the failure that stopped the planner. */
  int status() const { return status_; }
  /* Why, "" when status() is 0. Owned by the planner. */
  const char *error() const { return error_; }
  /* The current plan's facts (plans first if needed). */
  const TflmPlanInfo &info();

#ifdef ARENAD_TFLM_TESTING
  /* Test builds only: after planning, move one buffer onto another that is
   * live at the same time, so that tests can prove they notice. */
  void TestOnlyOverlap(bool on) {
    test_overlap_ = on;
    planned_ = false;
  }
  /* Test builds only: also declare that buffer `out` may reuse buffer
   * `in`, whatever its operator, so that tests can prove a pair outside
   * the allowlist is caught. */
  void TestOnlyAlias(int out, int in) {
    test_alias_out_ = out;
    test_alias_in_ = in;
    planned_ = false;
  }
  /* Test builds only: AliasOf() answers -1 for every buffer while the
   * plan still shares, so that tests can prove an undeclared share is
   * caught. */
  void TestOnlyHideAliases(bool on) { test_hide_aliases_ = on; }
#endif

 private:
  int Fail(int code, const char *fmt, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 3, 4)))
#endif
      ;
  int ReadKey(const void *model, size_t len);
  void ReadPairs(const void *model, size_t len);
  void DeclarePairs();
  int Add(int size, int first, int last, int64_t pinned);
  int PlanIfNeeded();
  int Plan();
#ifdef ARENAD_TFLM_TESTING
  void Overlap();
#endif

  arenad_client_t *client_;            /* borrowed */
  uint8_t model_hash_[ARENAD_CLIENT_DIGEST_LEN]; /* SHA-256 of the model */
  int64_t *dims_;                      /* all input dims, owned */
  struct arenad_dims *inputs_;         /* n_inputs_ views into dims_, owned */
  size_t n_inputs_;                    /* inputs of subgraph 0 */
  struct planner_tensor *buffers_;     /* n_buffers_ entries, owned */
  size_t n_buffers_, cap_buffers_;     /* used and allocated entries */
  int *offsets_;                       /* n_buffers_ offsets when planned */
  struct arenad_client_result result_; /* the plan, owned */
  TflmPlanInfo info_;                  /* facts about the plan */
  bool planned_;                       /* offsets_ matches buffers_ */
  /* Read only by code of test builds (-DARENAD_TFLM_TESTING); kept in
   * every build so that the layout does not depend on the define. */
  bool test_overlap_;                  /* test builds: corrupt the plan */
  int test_alias_out_, test_alias_in_; /* test builds: an extra pair */
  bool test_hide_aliases_;             /* test builds: AliasOf() says -1 */
  bool in_place_;                      /* share in place (default) */
  struct Cand {                        /* a tensor of subgraph 0 as the
                                          reader planned it, in TFLM's
                                          terms */
    uint64_t size;                     /* rounded up to 16 */
    int64_t first, last;               /* allocation scopes */
    int64_t in;                        /* the Cand it may reuse, or -1 */
  } *cands_;                           /* n_cands_, owned, by tensor index */
  size_t n_cands_;
  int status_;                         /* 0 or ARENA_E* */
  int key_status_;                     /* 0, or why the model was refused */
  uint64_t head_bytes_;                /* the arena TFLM offered at Init()
                                          for the head; 0: not known */
  char error_[2 * ARENA_ERR_LEN];      /* reason for status_ */
};

}  // namespace arenad

#endif /* ARENAD_TFLM_H */

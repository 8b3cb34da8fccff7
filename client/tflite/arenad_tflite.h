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
 *  Build() builds one interpreter of the model and resolver. Walking
 *  subgraph 0's execution plan in order, it reads every node's inputs,
 *  outputs and intermediates; each tensor TFLite would put in its arena
 *  (kTfLiteArenaRw) gets, before the first AllocateTensors(), an address
 *  in address space reserved for learning (mmap'd PROT_READ|PROT_WRITE,
 *  MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE), its slot as large as the
 *  model says the tensor is; TFLite's own arenas come from the allocator
 *  hook (Interpreter::SetAllocator), reserved the same way. Kernels'
 *  Prepare then runs. A tensor still at its address afterwards becomes
 *  one buffer of the plan, with TFLite's byte count, living from the
 *  first to the last node that names it; graph inputs live from node 0,
 *  graph outputs to the last node. A tensor a kernel made dynamic or
 *  persistent is left to TFLite (the output of a DEQUANTIZE of a
 *  constant, which TFLite keeps in its persistent arena, is never given
 *  an address). Each node's temporaries (created by
 *  kernels in Prepare) stay in TFLite's arena, which then holds the
 *  temporaries alone: their offsets in it and its size are read there.
 *  Nothing writes into the reserved space (kernels write their
 *  persistent data, which is not there), so learning costs address
 *  space, not memory; info().probe_resident says how much of it was
 *  found resident (mincore) all the same. "TFLite alone", the figure the
 *  plan must beat, is TFLite's own ArenaPlanner run over the same
 *  prepared graph with every tensor its own, its arena reserved too
 *  (exactly TFLite's accounting of an interpreter on its own planner).
 *  When TFLite cannot run the model at those addresses, Build() returns
 *  an interpreter on TFLite's own planner.
 *
 * THE PLAN
 *  The buffers, and the temporaries pinned at their offsets in TFLite's
 *  arena (see TEMPORARIES), make a lifetime graph planned with algorithm
 *  best and alignment 64 (TFLite's kDefaultTensorAlignment) under the key
 *  (model identity, shapes of subgraph 0's inputs) through
 *  arenad_client_plan(): the daemon serves the plan it stored for that
 *  key and graph (source kCache), or plans and stores it (kDaemon); with
 *  the client's fallback on and the daemon failing, it is planned in this
 *  process (kLocal). The request carries the graph (a few KiB): a hit is
 *  then answered from the daemon's in-memory cache in one round trip,
 *  where arenad_client_lookup(), which sends the key alone, is answered
 *  from sqlite. The client library checks the plan's graph digest
 *  against the graph this Build() learned and verifies the offsets
 *  (planner_verify) before they are used. So the facts a plan depends on
 *  never travel with it: they are learned again, from the interpreter
 *  that will run, and a stored plan is used only for exactly that graph
 *  (same tensors, sizes, lifetimes, temporaries and offsets, aliases). A
 *  different TFLite version, resolver or kernel that lays the model out
 *  differently gives another graph and so another plan.
 *
 * MODEL IDENTITY
 *  TfliteModelIdentity(): a SHA-256 over the model's bytes in which each
 *  constant buffer, and each per-channel quantization vector (scales,
 *  zero points), larger than 4096 bytes counts by its length only;
 *  computed once per planner (0.26 ms on mobilenet_v2, against 2.5 to 7
 *  ms for the SHA-256 of its 3.9 MB). Smaller constants, such as the
 *  shape operand of RESHAPE or the paddings of PAD, whose values kernels
 *  read in Prepare, are covered, as is every table of the FlatBuffer
 *  (operators and their options, tensor shapes and types, which tensors
 *  are constant). Two models that differ in their weights alone share an
 *  identity, and with it their plans, which is right: TFLite's layout
 *  depends on shapes, types and small operands, not on weight values.
 *  The identity only groups and finds plans; it cannot make a wrong plan
 *  be used, since a plan is used only for the graph its digest names
 *  (THE PLAN).
 *
 * PLACING
 *  When every tensor stayed at its learning address, the same
 *  interpreter is placed: arenad's arena is TFLite's arena of
 *  temporaries itself (a mapping with reserved room behind it), grown to
 *  the plan's size (pages beyond it are unmapped), and every tensor moves
 *  to its planned address with SetCustomAllocationForTensor(), which
 *  TFLite accepts after AllocateTensors(); a second AllocateTensors()
 *  re-plans nothing and checks each address against its tensor. One
 *  interpreter, one Prepare. Otherwise (a kernel took a tensor out of the
 *  arena, or the whole pages of that mapping would cost more than the
 *  plan saves while an arena from the heap would not) a second
 *  interpreter is built and given every address, and TFLite's arena of
 *  temporaries the base of arenad's arena, before its
 *  AllocateTensors(). Either way, afterwards a tensor whose data pointer
 *  is its planned address is placed, and every temporary must be at its
 *  planned address, or the plan is dropped (info().dropped) and Build()
 *  returns an interpreter on TFLite's own planner. An arena that is not
 *  TFLite's own is mapped by the planner (mmap) when it is at least
 *  128 KiB, glibc's default mmap threshold, and taken from the heap
 *  below it, where freeing it moves no threshold.
 *
 * PLACING AGAIN
 *  A Build() that placed arenad's plan in the interpreter that learned
 *  remembers what it learned (the buffers, their pairs, the temporaries'
 *  offsets and TFLite's arena of them, TFLite alone) under its input
 *  shapes and sharing. The next Build() at the same shapes, after
 *  Resize() back to them say, learns nothing: it asks arenad for the
 *  plan of the remembered graph (a cache hit, answered from the daemon's
 *  memory) and places it in one fresh interpreter, every tensor given its
 *  address and TFLite's arena of temporaries the base of arenad's before
 *  the first AllocateTensors() (info().placed_again, n_interpreters 1).
 *  TFLite's check afterwards stays: when any address or temporary is not
 *  where planned, or the plan would not save memory, the remembered
 *  graph is forgotten and the model learned again. One such record is
 *  kept per set of shapes for the planner's lifetime.
 *
 * FETCHED PLANS
 *  Another process, or a new planner, learns nothing either. A Build()
 *  that placed a plan arenad planned or served stores a placement record
 *  beside it (arenad_client_attach(); arenad_tflite_fetch.cc describes
 *  the bytes): TFLite alone, TFLite's arena of temporaries, and a
 *  fingerprint of what learned the plan (TFLite's version, the sharing
 *  option, the resolver's delegates and the kernels of every operator
 *  code, as offsets of their functions in this build). The plan's graph
 *  already holds every buffer's tensor index, bytes and lifetime, the
 *  temporaries pinned at their offsets, and the in-place pairs. Build()
 *  first asks for the plan stored under the model identity and the input
 *  shapes with a record of its fingerprint (arenad_client_fetch(): no
 *  graph sent; the library verifies the plan against the graph the
 *  daemon sends with it), checks that graph against the interpreter it
 *  will return (the arena tensors the nodes name and their lifetimes
 *  before any address is given; sizes, the temporaries and the pairs
 *  after AllocateTensors()), and places it there: one interpreter,
 *  nothing learned, info().fetched. A plan that fails a check, or that
 *  TFLite does not keep where planned, is dropped before the interpreter
 *  is used (info().fetch_refused) and the model learned as before; so is
 *  one that would not save memory. Small models never ask (SMALL
 *  MODELS); a daemon that is down or has no record costs one refused
 *  connection or one round trip.
 *
 * TEMPORARIES
 *  Kernel temporaries cannot be given an address (a kernel's Prepare sets
 *  them back to kTfLiteArenaRw): TFLite keeps them in its own arena,
 *  which, every tensor having its address, holds them alone. When all of
 *  them lie in one arena of TFLite's that holds nothing else, they join
 *  the plan pinned at their offsets and live at their node only, and
 *  that arena's base is arenad's arena's base. Otherwise the tensors
 *  alone are planned and TFLite keeps its temporaries beside arenad's
 *  arena. TFLite's accounting (Subgraph::GetMemoryAllocInfo, every
 *  subgraph) gives what it still allocates outside arenad's arena, the
 *  remainder. When arenad's arena (in whole pages when mapped) plus the
 *  remainder would be larger than TFLite alone, Build() returns an
 *  interpreter on TFLite's own planner instead and says so
 *  (TflitePlanSource::kTflite): the total is never larger than TFLite
 *  alone, and a saving smaller than a page's rounding is not taken.
 *
 * SMALL MODELS
 *  Asking arenad has a fixed cost that no plan can win back on a small
 *  model: the code of the client library, the planner and this adapter
 *  paged in, a connection, and a second Prepare of the model's kernels
 *  (bench_tflite measures 100 to 330 KiB of peak RSS and about 1 ms of
 *  start-up on the bundled models of under 20 KiB of arena). So Build()
 *  first sums the bytes of every tensor TFLite would put in its arena,
 *  at the shapes the model declares: no plan can save more than that.
 *  When the sum is under the minimum saving (SetMinSaving(), default
 *  kTfliteMinSaving, 256 KiB), Build() allocates the one interpreter it
 *  built on TFLite's own planner, audits that plan (NO UNCHECKED
 *  FALLBACK), and returns it: arenad is not asked, nothing is learned
 *  or stored, and info() says kTflite with below_min_saving set. The
 *  process is then TFLite alone plus the audit. When TFLite's arena
 *  turns out no smaller than the minimum after all (a kernel's Prepare
 *  made tensors larger than declared) or its plan is unsound, Build()
 *  goes on as above with a new interpreter. SetMinSaving(0) always asks
 *  arenad.
 *
 * INPUT SHAPES
 *  SetInputShapes() gives the shapes to build for, one per input of
 *  subgraph 0 in order; empty (the default) keeps the shapes the model
 *  declares. Every interpreter Build() and BuildTfliteOnly() make is
 *  resized to them with ResizeInputTensor() before its first
 *  AllocateTensors(), so any shape TFLite accepts that way can be
 *  planned. The plan's key holds the shapes of the inputs as allocated,
 *  so each shape has plans of its own, and going back to a shape seen
 *  before is a cache hit. Resize() destroys an interpreter, sets new
 *  shapes and builds again. A shape TFLite refuses (ResizeInputTensor()
 *  fails, or a kernel's Prepare does at that shape) fails the call, and
 *  error() names the shapes before TFLite's reason; arenad is asked for
 *  nothing then, so nothing is stored. A count of shapes other than the
 *  model's inputs, or a dimension below 1, is ARENA_EINVAL.
 *
 * IN-PLACE SHARING
 *  On by default (SetInPlace(false) before Build()). The allowlist of
 *  arenad's .tflite reader, kernels that read element i before they
 *  write it (ADD, the activations, RESHAPE, ...; planner/formats/tflite.h,
 *  planner_tflite_inplace_op()), is applied to the interpreter's nodes
 *  with the reader's rules: a node with one output o on the list declares
 *  the first input x such that both are planned buffers of equal bytes
 *  and element count, x is last used at the node and written before it,
 *  o is first written there and is not one of its inputs, and neither is
 *  a graph input, output or variable. The planner takes a pair only where
 *  that is legal and shrinks the arena. TFLite's kernels of those
 *  operators are safe with an output on its input for the same reason
 *  TFLite Micro's are.
 *
 * UNUSABLE PLANS
 *  The plan is asked for with arenad_client_plan_within() under TFLite
 *  alone's arena: a plan from arenad that needs more could never be
 *  used, and one that needs more than any naive layout of the buffers
 *  (a poisoned cache entry) is worse still. Either is a miss: the client
 *  plans the buffers in this process and, when its plan is smaller,
 *  reports arenad's to the daemon, which replaces it when its own plan
 *  is smaller (arenad_client.h, UNUSABLE PLANS). info() then says kLocal with
 *  fallback_reason ARENA_EUNUSABLE, note() holds the client's account, and
 *  it is logged through TFLite's logger as a warning.
 *
 * NO UNCHECKED FALLBACK
 *  TFLite's own ArenaPlanner is wrong on some graphs: it lets a RESHAPE's
 *  output keep its input's bytes and then an in-place ADD write over
 *  them while the input is still to be read (docs/client.md, "TFLite's
 *  own plan and RESHAPE"). So before Build() returns an interpreter on
 *  TFLite's own planner (kTflite), it audits that plan
 *  (arenad_tflite_audit.h). An unsound plan is never used: Build() places
 *  arenad's plan instead, even when it is larger than TFLite alone,
 *  sets info().tflite_unsound, and says why in note() and TFLite's log.
 *  When arenad's plan cannot be placed either (it was dropped), Build()
 *  fails with ARENA_EVERIFY rather than return a wrong interpreter.
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
 *  place; the model identity is computed once). The planner owns the
 *  arena, the FlatBufferModel and the allocator hook TFLite calls: every
 *  interpreter Build() returns must be destroyed before the planner and
 *  before the next Build(). One planner is used from one thread at a
 *  time.
 */
#ifndef ARENAD_TFLITE_H
#define ARENAD_TFLITE_H

#include <stddef.h>
#include <stdint.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
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
  int fallback_reason;       /* kLocal: the daemon's ARENA_E* code
                                (ARENA_EUNUSABLE: its plan was unusable) */
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
  /* -- appended -- */
  size_t n_interpreters;     /* tflite::Interpreters Build() built: 1 when
                                placed in the one that learned, 2 when a
                                second was needed or TFLite's own planner
                                was chosen */
  uint64_t probe_resident;   /* bytes of the space reserved for learning
                                found resident before it was released */
  bool dropped;              /* a plan failed the check after
                                AllocateTensors(): kTflite, error() says
                                why */
  bool tflite_unsound;       /* TFLite's own plan was audited before a
                                fall back to it and found unsound: not
                                used (NO UNCHECKED FALLBACK); tflite_alone
                                is then the arena of a wrong plan */
  bool placed_again;         /* placed from the graph this planner
                                learned at the same input shapes before,
                                with nothing learned (PLACING AGAIN) */
  bool below_min_saving;     /* kTflite because the model's arena
                                tensors sum to under the minimum saving:
                                arenad was not asked (SMALL MODELS) */
  bool fetched;              /* placed from a plan fetched by key with its
                                placement record, in the one interpreter
                                returned, with nothing learned (FETCHED
                                PLANS) */
  bool fetch_refused;        /* a fetched plan did not match this
                                interpreter and was dropped before use;
                                the model was learned instead */
};

/* The default minimum saving, bytes (SMALL MODELS). */
constexpr uint64_t kTfliteMinSaving = 256 * 1024;

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

  /* For TflitePipeline (arenad_tflite_pipeline.h): learns the model as
   * Build() does and, with sharing on, declares its in-place pairs;
   * buffers() then holds the tensors (the first n_learned()) and the
   * temporaries, learned_key() the model identity and learned_inputs()
   * the inputs' shapes as allocated. Nothing is planned, placed or kept
   * but those figures and info().tflite_alone. Returns 0 or an ARENA_E*
   * code with error() saying why. */
  int LearnOnly();
  size_t n_learned() const { return n_tensors_; }
  const uint8_t *learned_key() const { return identity_; }
  const std::vector<std::vector<int64_t>> &learned_inputs() const {
    return in_shapes_;
  }

  void SetInPlace(bool on) { in_place_ = on; }
  /* The shapes to build for (INPUT SHAPES); {} keeps the model's. */
  void SetInputShapes(const std::vector<std::vector<int>> &shapes) {
    input_shapes_ = shapes;
  }
  const std::vector<std::vector<int>> &input_shapes() const {
    return input_shapes_;
  }
  /* Destroys *out, sets shapes and builds again: Build()'s result. */
  int Resize(const std::vector<std::vector<int>> &shapes,
             std::unique_ptr<tflite::Interpreter> *out);
  /* Models whose arena tensors sum to fewer bytes stay on TFLite's own
   * planner without asking arenad (SMALL MODELS); 0 always asks. */
  void SetMinSaving(uint64_t bytes) { min_saving_ = bytes; }
  const TflitePlanInfo &info() const { return info_; }
  const std::vector<TfliteBuffer> &buffers() const { return buffers_; }
  const uint8_t *arena() const { return arena_; }
  const char *error() const { return error_.c_str(); }
  /* After Build(): what the client said about a plan from arenad that
   * could not be used (UNUSABLE PLANS), "" when none was. */
  const char *note() const { return note_.c_str(); }

#ifdef ARENAD_TFLITE_TESTING
  /* Test builds only: after planning, move one buffer onto another that
   * is live at the same time, so that tests can prove they notice. */
  void TestOnlyOverlap(bool on) { test_overlap_ = on; }
  /* Test builds only: after planning, move one temporary 64 bytes from
   * its offset, so that TFLite's arena disagrees with the plan. */
  void TestOnlyMoveTemporary(bool on) { test_move_temp_ = on; }
  /* Test builds only: after planning, take TFLite's own planner as if
   * arenad's plan saved nothing, so that tests reach the audit of
   * TFLite's plan (NO UNCHECKED FALLBACK) on any model. */
  void TestOnlyPreferTflite(bool on) { test_prefer_tflite_ = on; }
  /* Test builds only: end one fetched tensor's life a node early, so
   * that tests prove a fetched plan that disagrees with the interpreter
   * is refused (FETCHED PLANS). */
  void TestOnlyBreakFetched(bool on) { test_break_fetched_ = on; }
#endif

 private:
  class Reporter; /* TFLite's messages (TFLITE'S MESSAGES) */

  /* One arena of TFLite's that the allocator hook mapped. */
  struct Mapping {
    uint8_t *ptr; /* page-aligned */
    size_t len;   /* bytes mapped, reserved room included */
    size_t bytes; /* bytes TFLite asked for */
  };

  int Fail(int code, const std::string &why);
  int FailMissing(const char *why);
  void Begin();
  int Finish(int rc);
  int BuildPlanned(std::unique_ptr<tflite::Interpreter> *out);
  int BuildOwn(std::unique_ptr<tflite::Interpreter> *out);
  int KeepSmall(std::unique_ptr<tflite::Interpreter> *in, bool *kept);
  int NewInterpreter(std::unique_ptr<tflite::Interpreter> *out);
  int ApplyShapes(tflite::Interpreter *in);
  int SizeAtShapes();
  uint64_t BytesOf(const tflite::Interpreter &in, int t) const;
  /* The model's operators the resolver has no kernel for, each once, as
   * "NAME (version V)" or "NAME (versions V1, V2)" (every version the
   * model asks for that has no kernel) joined by ", "; "" when every one
   * has a kernel. */
  std::string MissingOps() const;
  bool ArenaTensors(tflite::Interpreter *in, std::vector<int64_t> *first,
                    std::vector<int64_t> *last, std::vector<int> *cand) const;
  int Learn(tflite::Interpreter *in);
  uint64_t Alone(tflite::Interpreter *in);
  void DeclarePairs(tflite::Interpreter *in);
  void KeyOf(tflite::Interpreter *in);
  struct arenad_model_key CurrentKey(struct planner_options *o);
  int Plan(tflite::Interpreter *in, bool with_temps);
  /* PLACING AGAIN: what Learn() found, and the pairs declared, for the
   * input shapes and sharing of a Build() that placed it. */
  struct Learned {
    std::vector<TfliteBuffer> buffers;
    size_t n_tensors;
    uint64_t temp_arena;
    bool temps_pinnable;
    std::vector<std::vector<int64_t>> in_shapes;
    TflitePlanInfo info; /* its learned figures */
  };
  void Remember();
  /* FETCHED PLANS (arenad_tflite_fetch.cc) */
  const std::string &RecordPrefix();
  void AttachRecord();
  bool PlaceFetched(std::unique_ptr<tflite::Interpreter> *in);
  bool TakeFetched(const struct arenad_client_fetched &f);
  bool FetchedMatches(tflite::Interpreter *in, bool after);
  int PlaceAgain(const Learned &l, std::unique_ptr<tflite::Interpreter> *out);
  uint64_t ArenaCost(uint64_t bytes, bool mapped) const;
  int Check(tflite::Interpreter *in, bool with_temps);
  int GiveAddresses(tflite::Interpreter *in);
  int PlaceInPlace(tflite::Interpreter *in, bool with_temps);
  int PlaceFresh(std::unique_ptr<tflite::Interpreter> *out, bool with_temps);
  int OnTfliteOwn(std::unique_ptr<tflite::Interpreter> *out);
  int RefuseUnsound(std::unique_ptr<tflite::Interpreter> *out,
                    const TflitePlanInfo &planned);
  int AllocArena(uint64_t bytes);
  void FreeArena();
  void FreeProbe();
  void TrimMaps();
  uint8_t *MapArena(size_t bytes);
  Mapping *FindMap(const void *p);
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
  size_t moved_;                      /* tensors a kernel took out of the
                                         arena while learning */
  uint64_t temp_arena_;               /* TFLite's arena of temporaries */
  bool temps_pinnable_;               /* all in it, and nothing else */
  uint8_t *temp_base_;                /* its base while learning */
  std::vector<std::vector<int64_t>> in_shapes_; /* subgraph 0's inputs */
  std::vector<struct arenad_dims> in_dims_;     /* views of in_shapes_ */
  uint8_t identity_[ARENAD_CLIENT_DIGEST_LEN];  /* TfliteModelIdentity */
  bool have_identity_;
  uint8_t *arena_;      /* owned, 64-byte aligned (page-aligned mapped) */
  size_t arena_len_;    /* bytes allocated or mapped at arena_ */
  bool arena_mapped_;   /* arena_ is a mapping (munmap), else heap */
  uint8_t *probe_;      /* owned: reserved slots of the learned tensors */
  size_t probe_len_;    /* bytes mapped at probe_ */
  std::vector<Mapping> maps_; /* TFLite's arenas the hook mapped, live */
  bool reserving_;      /* hook: map TFLite's arenas MAP_NORESERVE */
  size_t room_;         /* hook: reserved bytes behind each while learning */
  bool give_;           /* hook: hand arena_ to the request of exactly
                           temp_arena_ bytes (PlaceFresh) */
  bool given_;          /* it was handed */
  TflitePlanInfo info_;
  std::string error_;
  std::string note_;                            /* see note() */
  bool plan_placeable_ = false; /* Build(): arenad's plan exists and was
                                   not dropped by TFLite's check */
  bool plan_with_temps_ = false; /* it holds the temporaries */
  bool in_place_;
  uint64_t min_saving_ = kTfliteMinSaving; /* SMALL MODELS */
  std::vector<std::vector<int>> input_shapes_;   /* INPUT SHAPES */
  std::vector<uint64_t> sized_; /* every tensor's bytes at them, or empty */
  /* PLACING AGAIN: by input shapes and sharing */
  std::map<std::pair<std::vector<std::vector<int>>, bool>, Learned> learned_;
  bool test_overlap_;
  bool test_move_temp_;
  bool test_prefer_tflite_ = false;
  bool test_break_fetched_ = false;
  std::string prefix_;          /* FETCHED PLANS: the record's prefix */
  bool plan_stored_ = false;    /* the last Plan() came from the daemon */
  uint8_t plan_gd_[ARENAD_CLIENT_DIGEST_LEN]; /* its digests */
  uint8_t plan_od_[ARENAD_CLIENT_DIGEST_LEN];

  static void *Allocate(void *self, size_t bytes, size_t alignment);
  static void *Reallocate(void *self, void *ptr, size_t old_bytes,
                          size_t bytes, size_t alignment);
  static void Deallocate(void *self, void *ptr, size_t bytes,
                         size_t alignment);
  TfLiteAllocator allocator_; /* TFLite's arenas, see MEMORY in the .cc */
};

/* TFLite's accounting summed over every subgraph of interp: its arena
 * (kTfLiteArenaRw) bytes, and its dynamic tensor bytes in *dynamic. */
uint64_t TfliteArenaBytes(const tflite::Interpreter &interp,
                          uint64_t *dynamic);

/* The model identity under which Build() stores and finds plans (MODEL
 * IDENTITY) of the model_len bytes at model (borrowed), written to out
 * (caller-allocated). Returns 0, or ARENA_EPARSE when the bytes are not
 * a valid TFLite FlatBuffer (out is then zeroed). */
int TfliteModelIdentity(const void *model, size_t model_len,
                        uint8_t out[ARENAD_CLIENT_DIGEST_LEN]);

}  // namespace arenad

#endif /* ARENAD_TFLITE_H */

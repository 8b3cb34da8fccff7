/*
 * arenad_tflite.cc - arenad::TflitePlanner, a TensorFlow Lite interpreter
 * on an arenad plan (see arenad_tflite.h).
 *
 * DESIGN
 *  Build() = NewInterpreter -> PlaceFetched (a stored plan fetched by key
 *  and placed in that interpreter; arenad_tflite_fetch.cc), else Learn ->
 *  Plan -> Place -> AttachRecord. Learn() gives every
 *  tensor TFLite would put in its arena an address in reserved, untouched
 *  address space (probe_), lets TFLite allocate (its own arenas come from
 *  the allocator hook, reserved too) and reads back the tensors' bytes,
 *  the temporaries' offsets in TFLite's arena and, from TFLite's own
 *  ArenaPlanner run over the same graph (Alone()), TFLite alone. Plan()
 *  turns buffers_ into a planner graph, declares the in-place pairs and
 *  calls arenad_client_plan(), which verifies the plan against that
 *  graph. Place() moves every tensor to its planned address in the same
 *  interpreter (PlaceInPlace) when it can, or gives a second interpreter
 *  the addresses before its AllocateTensors() (PlaceFresh), and checks
 *  what TFLite kept. Only functions of arenad_client.h are called, plus
 *  planner_tflite_inplace_op() (planner/formats/tflite.h) that the client
 *  library contains.
 *
 * FILES
 *  This file: learning, planning, placing and Build(). The memory the
 *  planner maps and TFLite's allocator hook: arenad_tflite_memory.cc. The
 *  model identity and the key: arenad_tflite_identity.cc. What TFLite
 *  itself does with the model (its own plan's size, its arena's bytes,
 *  the operators its resolver lacks, the interpreters on its own planner
 *  Build() returns): arenad_tflite_own.cc. Input shapes, placing again
 *  and LearnOnly(): arenad_tflite_shapes.cc. Fetched plans and their
 *  placement records: arenad_tflite_fetch.cc. What they share:
 *  arenad_tflite_int.h.
 *
 * MEMORY
 *  Nothing here allocates through malloc more than the vectors that
 *  describe the graph. TFLite's arenas come from the hook: while learning
 *  from MAP_NORESERVE mappings, each with room_ bytes of reserved space
 *  behind it so that TFLite's arena of temporaries can grow into arenad's
 *  arena where it lies; afterwards from mmap when at least kHeapMax bytes
 *  (glibc's default mmap threshold) and from the heap below it. Freeing a
 *  mapping is munmap, so glibc's dynamic mmap threshold never moves.
 */
#include "arenad_tflite.h"
#include "arenad_tflite_audit.h"
#include "arenad_tflite_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "tflite.h"
#include "tflite/arena_planner.h"
#include "tflite/core/subgraph.h"
#include "tflite/graph_info.h"
#include "tflite/interpreter_builder.h"
#include "tflite/schema/schema_generated.h"
#include "tflite/schema/schema_utils.h"
#include "tflite/minimal_logging.h"
#include "tflite/version.h"

namespace arenad {

using tflite_int::kAlign;
using tflite_int::kHeapMax;
using tflite_int::MapAnon;
using tflite_int::Page;
using tflite_int::RoundPage;
using tflite_int::RoundUp;

/* TFLite's error reporter for one planner (TFLITE'S MESSAGES): while
 * held, keeps the first kKeep distinct messages and counts the others;
 * else prints each on stderr as TFLite's default reporter does. */
class TflitePlanner::Reporter : public tflite::ErrorReporter {
 public:
  int Report(const char *format, va_list args) override {
    char buf[512];
    int n = vsnprintf(buf, sizeof buf, format, args);
    std::string m = buf;
    while (!m.empty() && (m.back() == '\n' || m.back() == ' '))
      m.pop_back();
    if (!held_) {
      fprintf(stderr, "ERROR: %s\n", m.c_str()); /* TFLite's own form */
      return n;
    }
    if (m.empty() ||
        std::find(kept_.begin(), kept_.end(), m) != kept_.end())
      return n;
    if (kept_.size() < kKeep)
      kept_.push_back(m);
    else
      more_++;
    return n;
  }
  void Hold() {
    held_ = true;
    kept_.clear();
    more_ = 0;
  }
  /* Stops holding; returns what was held, "; "-joined. */
  std::string Release() {
    held_ = false;
    std::string t;
    for (const std::string &m : kept_)
      t += (t.empty() ? "" : "; ") + m;
    if (more_)
      t += " (" + std::to_string(more_) + " more)";
    kept_.clear();
    return t;
  }

 private:
  static constexpr size_t kKeep = 4; /* distinct messages kept */
  bool held_ = false;
  std::vector<std::string> kept_;
  size_t more_ = 0; /* messages past kKeep */
};

namespace {

/* Tensors of a TfLiteIntArray, skipping absent optional inputs (-1). */
template <typename F>
void EachTensor(const TfLiteIntArray *a, F f) {
  for (int i = 0; a && i < a->size; i++)
    if (a->data[i] >= 0)
      f(a->data[i]);
}

/* Bytes of [p, p + len) (page-aligned) that are resident (mincore). */
uint64_t Resident(const uint8_t *p, size_t len) {
  if (!p || !len)
    return 0;
  size_t page = Page(), n = (len + page - 1) / page;
  std::vector<unsigned char> v(n);
  if (mincore(const_cast<uint8_t *>(p), len, v.data()) != 0)
    return 0;
  uint64_t r = 0;
  for (unsigned char c : v)
    r += (c & 1) ? page : 0;
  return r;
}

/* Elements of a tensor by its dims (1 for a scalar). */
int64_t Elements(const TfLiteTensor *t) {
  int64_t n = 1;
  for (int k = 0; t->dims && k < t->dims->size; k++)
    n *= t->dims->data[k];
  return n;
}

}  // namespace

const char *TflitePlanSourceName(TflitePlanSource s) {
  switch (s) {
    case TflitePlanSource::kDaemon:
      return "daemon";
    case TflitePlanSource::kCache:
      return "cache";
    case TflitePlanSource::kLocal:
      return "local";
    case TflitePlanSource::kTflite:
      return "tflite";
    case TflitePlanSource::kNone:
      break;
  }
  return "none";
}

TflitePlanner::TflitePlanner(arenad_client_t *client, const void *model,
                             size_t model_len,
                             const tflite::OpResolver &resolver)
    : client_(client),
      model_(model),
      model_len_(model_len),
      resolver_(resolver),
      reporter_(new Reporter()),
      missing_ops_(false),
      n_tensors_(0),
      temp_arena_(0),
      temps_pinnable_(false),
      temp_base_(nullptr),
      have_identity_(false),
      arena_(nullptr),
      arena_len_(0),
      arena_mapped_(false),
      probe_(nullptr),
      probe_len_(0),
      reserving_(false),
      room_(0),
      give_(false),
      given_(false),
      in_place_(true),
      test_overlap_(false),
      test_move_temp_(false) {
  memset(&info_, 0, sizeof info_);
  memset(identity_, 0, sizeof identity_);
  allocator_.data = this;
  allocator_.allocate = Allocate;
  allocator_.reallocate = Reallocate;
  allocator_.deallocate = Deallocate;
}

TflitePlanner::~TflitePlanner() {
  FreeArena();
  FreeProbe();
  for (const Mapping &m : maps_)
    munmap(m.ptr, m.len);
}

int TflitePlanner::Fail(int code, const std::string &why) {
  error_ = why;
  info_.source = TflitePlanSource::kNone;
  return code;
}

int TflitePlanner::NewInterpreter(std::unique_ptr<tflite::Interpreter> *out) {
  if (!fb_) {
    if (!model_ || model_len_ == 0)
      return Fail(ARENA_EINVAL, "no model bytes");
    fb_ = tflite::FlatBufferModel::VerifyAndBuildFromBuffer(
        static_cast<const char *>(model_), model_len_, nullptr,
        reporter_.get());
    if (!fb_)
      return Fail(ARENA_EPARSE, "TFLite refused the model");
  }
  out->reset();
  if (tflite::InterpreterBuilder(*fb_, resolver_)(out) != kTfLiteOk || !*out)
    return FailMissing("TFLite could not build an interpreter for the model");
  return ApplyShapes(out->get());
}

/* Gives every tensor TFLite would place in its arena an address in
 * reserved space, lets TFLite allocate, and reads what it did (HOW IT
 * LEARNS). */
/* The tensors of in that TFLite would put in its arena and a node names
 * (cand, ascending), with every tensor's first and last node in
 * execution order (-1 when none names it): graph inputs from node 0,
 * outputs to the last. Returns false when the execution plan names a
 * missing node. */
bool TflitePlanner::ArenaTensors(tflite::Interpreter *in,
                                 std::vector<int64_t> *first_out,
                                 std::vector<int64_t> *last_out,
                                 std::vector<int> *cand) const {
  const tflite::Subgraph &sg = in->primary_subgraph();
  const std::vector<int> &plan = sg.execution_plan();
  std::vector<int64_t> &first = *first_out, &last = *last_out;
  first.assign(in->tensors_size(), -1);
  last = first;
  auto use = [&](int t, int64_t at) {
    if (first[t] < 0 || at < first[t])
      first[t] = at;
    last[t] = std::max(last[t], at);
  };
  for (size_t i = 0; i < plan.size(); i++) {
    const auto *nr = sg.node_and_registration(plan[i]);
    if (!nr)
      return false;
    const TfLiteNode &n = nr->first;
    EachTensor(n.inputs, [&](int t) { use(t, (int64_t)i); });
    EachTensor(n.outputs, [&](int t) { use(t, (int64_t)i); });
    EachTensor(n.intermediates, [&](int t) { use(t, (int64_t)i); });
  }
  int64_t end = plan.empty() ? 0 : (int64_t)plan.size() - 1;
  for (int t : in->inputs())
    if (t >= 0 && first[t] >= 0)
      first[t] = 0;
  for (int t : in->outputs())
    if (t >= 0 && first[t] >= 0)
      last[t] = end;
  /* TFLite's DEQUANTIZE keeps the output of a constant input in its
   * persistent arena (set in its Prepare): not an arena tensor */
  std::vector<bool> kept(in->tensors_size(), false);
  for (size_t i = 0; i < plan.size(); i++) {
    const auto *nr = sg.node_and_registration(plan[i]);
    const TfLiteNode &n = nr->first;
    if (nr->second.builtin_code == tflite::BuiltinOperator_DEQUANTIZE &&
        n.inputs && n.inputs->size > 0 && n.inputs->data[0] >= 0 &&
        n.outputs) {
      TfLiteAllocationType a = in->tensor(n.inputs->data[0])->allocation_type;
      if (a == kTfLiteMmapRo || a == kTfLitePersistentRo)
        EachTensor(n.outputs, [&](int t) { kept[t] = true; });
    }
  }
  cand->clear();
  for (int t = 0; t < (int)in->tensors_size(); t++)
    if (first[t] >= 0 && !kept[t] &&
        in->tensor(t)->allocation_type == kTfLiteArenaRw)
      cand->push_back(t);
  return true;
}

int TflitePlanner::Learn(tflite::Interpreter *in) {
  buffers_.clear();
  n_tensors_ = 0;
  temp_arena_ = 0;
  temp_base_ = nullptr;
  temps_pinnable_ = false;
  moved_ = 0;
  const tflite::Subgraph &sg = in->primary_subgraph();
  const std::vector<int> &plan = sg.execution_plan();
  std::vector<int64_t> first, last;
  std::vector<int> cand;
  if (!ArenaTensors(in, &first, &last, &cand))
    return Fail(ARENA_EINVAL, "the execution plan names a missing node");
  /* every arena tensor a node names, one slot each in reserved space */
  std::vector<uint64_t> slot;
  uint64_t total = 0;
  for (int t : cand) {
    slot.push_back(total);
    total += std::max<uint64_t>(RoundUp(BytesOf(*in, t), kAlign), kAlign);
  }
  FreeProbe();
  probe_len_ = RoundPage(total);
  probe_ = MapAnon(probe_len_, true);
  if (!probe_) {
    probe_len_ = 0;
    return Fail(ARENA_ENOMEM, "cannot reserve address space to learn in");
  }
  for (size_t i = 0; i < cand.size(); i++) {
    uint64_t next = i + 1 < cand.size() ? slot[i + 1] : total;
    TfLiteCustomAllocation a = {probe_ + slot[i], (size_t)(next - slot[i])};
    if (in->SetCustomAllocationForTensor(cand[i], a) != kTfLiteOk)
      return Fail(ARENA_EUNSUPPORTED, "TFLite refused an address for tensor " +
                                          std::to_string(cand[i]));
  }
  room_ = probe_len_;
  reserving_ = true;
  bool ok = in->SetAllocator(&allocator_) == kTfLiteOk &&
            in->AllocateTensors() == kTfLiteOk;
  reserving_ = false;
  if (!ok)
    return FailMissing(
        "TFLite could not allocate the tensors at learned addresses");
  for (size_t i = 0; i < cand.size(); i++) {
    const TfLiteTensor *x = in->tensor(cand[i]);
    if (x->allocation_type == kTfLiteCustom)
      buffers_.push_back(TfliteBuffer{cand[i], (uint64_t)x->bytes,
                                      first[cand[i]], last[cand[i]], -1, 0,
                                      false, false});
    else
      moved_++; /* a kernel made it dynamic or persistent */
  }
  n_tensors_ = buffers_.size();
  info_.n_tensors = n_tensors_;
  /* the temporaries, and the one arena of TFLite's that holds them */
  std::set<int> temps;
  const Mapping *home = nullptr;
  bool one_home = true;
  for (size_t i = 0; i < plan.size(); i++) {
    const TfLiteNode &n = sg.node_and_registration(plan[i])->first;
    EachTensor(n.temporaries, [&](int t) {
      const TfLiteTensor *x = in->tensor(t);
      if (x->allocation_type != kTfLiteArenaRw || !temps.insert(t).second)
        return;
      info_.n_temporaries++;
      info_.temporary_bytes += x->bytes;
      if (x->bytes == 0)
        return;
      const uint8_t *d = reinterpret_cast<const uint8_t *>(x->data.raw);
      const Mapping *m = nullptr;
      for (const Mapping &k : maps_)
        if (d >= k.ptr && d + x->bytes <= k.ptr + k.bytes)
          m = &k;
      if (!m || (home && m != home))
        one_home = false;
      else
        home = m;
      buffers_.push_back(TfliteBuffer{t, (uint64_t)x->bytes, (int64_t)i,
                                      (int64_t)i, -1,
                                      m ? (uint64_t)(d - m->ptr) : 0, false,
                                      true});
    });
  }
  /* any other tensor in that arena would be unplanned bytes in arenad's */
  for (int t = 0; home && t < (int)in->tensors_size(); t++) {
    const TfLiteTensor *x = in->tensor(t);
    const uint8_t *d = reinterpret_cast<const uint8_t *>(x->data.raw);
    if (!temps.count(t) && x->allocation_type == kTfLiteArenaRw && d &&
        d >= home->ptr && d < home->ptr + home->len)
      one_home = false;
  }
  temps_pinnable_ = home && one_home;
  info_.probe_resident = Resident(probe_, probe_len_);
  if (home) {
    temp_base_ = home->ptr;
    temp_arena_ = home->bytes;
    info_.probe_resident += Resident(home->ptr, home->len);
  }
  info_.tflite_alone = Alone(in);
  return 0;
}

/* The in-place pairs (IN-PLACE SHARING): for each node whose operator is
 * on the .tflite reader's allowlist and that has one output, the first
 * input the rules allow. */
void TflitePlanner::DeclarePairs(tflite::Interpreter *in) {
  std::vector<int> at(in->tensors_size(), -1); /* tensor -> buffer */
  for (size_t b = 0; b < n_tensors_; b++)
    at[buffers_[b].tensor] = (int)b;
  std::set<int> io(in->inputs().begin(), in->inputs().end());
  io.insert(in->outputs().begin(), in->outputs().end());
  io.insert(in->variables().begin(), in->variables().end());
  const tflite::Subgraph &sg = in->primary_subgraph();
  const std::vector<int> &plan = sg.execution_plan();
  for (size_t i = 0; i < plan.size(); i++) {
    const auto *nr = sg.node_and_registration(plan[i]);
    const TfLiteNode &n = nr->first;
    if (!planner_tflite_inplace_op(nr->second.builtin_code) || !n.outputs ||
        n.outputs->size != 1 || n.outputs->data[0] < 0)
      continue;
    int o = n.outputs->data[0];
    if (at[o] < 0 || io.count(o) || buffers_[at[o]].size == 0 ||
        buffers_[at[o]].first != (int64_t)i)
      continue;
    bool o_is_input = false;
    EachTensor(n.inputs, [&](int t) { o_is_input |= t == o; });
    if (o_is_input)
      continue;
    for (int k = 0; n.inputs && k < n.inputs->size; k++) {
      int x = n.inputs->data[k];
      if (x < 0 || at[x] < 0 || io.count(x))
        continue;
      const TfliteBuffer &bx = buffers_[at[x]];
      if (bx.first < (int64_t)i && bx.last == (int64_t)i &&
          bx.size == buffers_[at[o]].size &&
          Elements(in->tensor(x)) == Elements(in->tensor(o))) {
        buffers_[at[o]].alias = x;
        break;
      }
    }
  }
}

/* Plans the buffers through arenad under the model's key (the daemon
 * serves a stored plan of the same graph from its cache); with_temps
 * adds the temporaries, pinned at their offsets in TFLite's arena, which
 * then starts at the arena's base (TEMPORARIES). */
int TflitePlanner::Plan(tflite::Interpreter *in, bool with_temps) {
  if (in) { /* else PLACING AGAIN: the pairs and key learned before */
    for (auto &b : buffers_)
      b.alias = -1;
    if (in_place_)
      DeclarePairs(in);
    KeyOf(in);
  }
  size_t n = with_temps ? buffers_.size() : n_tensors_;
  std::vector<struct planner_tensor> g(n);
  for (size_t i = 0; i < n; i++) {
    const TfliteBuffer &b = buffers_[i];
    struct planner_tensor *t = &g[i];
    memset(t, 0, sizeof *t);
    t->id = (uint32_t)b.tensor;
    t->size = b.size;
    t->first = b.first;
    t->last = b.last;
    t->pinned = b.temporary ? (int64_t)b.offset : PLANNER_NOT_PINNED;
    if (b.alias >= 0) {
      t->has_alias = 1;
      t->alias = (uint32_t)b.alias;
    }
  }
  struct planner_options o;
  struct arenad_model_key key = CurrentKey(&o);
  struct planner_graph graph = {g.data(), g.size()};
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  /* A plan larger than TFLite's own arena can never be used (BUILD
   * falls back to TFLite's planner), and one worse than any naive
   * layout is poisoned: both are a miss, planned here and reported to
   * arenad (UNUSABLE PLANS). */
  int rc = arenad_client_plan_within(client_, &graph, &o, &key,
                                     info_.tflite_alone, &r);
  if (rc) {
    std::string why = arenad_client_errmsg(client_);
    return Fail(rc, "planning failed: " + why);
  }
  if (r.local && r.fallback_reason == ARENA_EUNUSABLE) {
    note_ = arenad_client_errmsg(client_);
    TFLITE_LOG_PROD(tflite::TFLITE_LOG_WARNING, "arenad planner: %s",
                    note_.c_str());
  }
  for (size_t i = 0; i < n; i++)
    buffers_[i].offset = r.plan.offsets[i];
  plan_stored_ = !r.local; /* the daemon holds it: a record can go beside */
  memcpy(plan_gd_, r.graph_digest, sizeof plan_gd_);
  memcpy(plan_od_, r.options_digest, sizeof plan_od_);
  info_.arena_bytes = info_.plan_bytes =
      std::max<uint64_t>(r.plan.arena_bytes, with_temps ? temp_arena_ : 0);
  info_.lower_bound = r.plan.lower_bound_bytes;
  info_.n_shared = r.plan.n_shared;
  info_.planning_us = r.planning_us;
  info_.fallback_reason = r.fallback_reason;
  info_.source = r.local    ? TflitePlanSource::kLocal
                 : r.cached ? TflitePlanSource::kCache
                            : TflitePlanSource::kDaemon;
  arenad_client_result_cleanup(&r);
  if (test_overlap_)
    Overlap();
  if (test_move_temp_)
    for (size_t i = n_tensors_; i < n; i++)
      if (buffers_[i].size > 0) {
        buffers_[i].offset += kAlign;
        break;
      }
  return 0;
}

/* Test builds: move one tensor onto a larger one that shares a node with
 * it. */
void TflitePlanner::Overlap() {
  for (size_t a = 0; a < n_tensors_; a++)
    for (size_t b = 0; b < n_tensors_; b++) {
      TfliteBuffer &x = buffers_[a], &y = buffers_[b];
      if (a == b || x.size == 0 || y.size == 0 || x.alias == y.tensor ||
          y.alias == x.tensor || x.last < y.first || y.last < x.first ||
          y.size > x.size)
        continue;
      y.offset = x.offset;
      return;
    }
}

/* What an arena of `bytes` costs: whole pages when it is mapped (at least
 * kHeapMax bytes, or TFLite's own arena of temporaries adopted in place),
 * its bytes from the heap. */
uint64_t TflitePlanner::ArenaCost(uint64_t bytes, bool mapped) const {
  return mapped || bytes >= kHeapMax ? RoundPage(bytes) : bytes;
}

/* Records, after AllocateTensors, which buffers TFLite kept at their
 * planned addresses; ARENA_EUNSUPPORTED when a temporary is elsewhere. */
int TflitePlanner::Check(tflite::Interpreter *in, bool with_temps) {
  info_.n_placed = info_.n_left = 0;
  bool temps_ok = true;
  for (TfliteBuffer &b : buffers_) {
    const TfLiteTensor *t = in->tensor(b.tensor);
    bool at = t->data.raw == reinterpret_cast<char *>(arena_ + b.offset);
    if (b.temporary) {
      b.placed = with_temps && at && t->allocation_type == kTfLiteArenaRw;
      temps_ok = temps_ok && (b.placed || !with_temps || b.size == 0);
      continue;
    }
    b.placed = at && t->allocation_type == kTfLiteCustom;
    (b.placed ? info_.n_placed : info_.n_left)++;
  }
  if (with_temps && !temps_ok)
    return Fail(ARENA_EUNSUPPORTED,
                "TFLite did not put its temporaries where planned");
  info_.remainder = TfliteArenaBytes(*in, &info_.dynamic_bytes);
  if (with_temps) /* that arena is inside arenad's */
    info_.remainder -= std::min(info_.remainder, temp_arena_);
  return 0;
}

/* Gives every planned tensor its address in arenad's arena
 * (SetCustomAllocationForTensor). Returns 0 or ARENA_EUNSUPPORTED. */
int TflitePlanner::GiveAddresses(tflite::Interpreter *in) {
  for (size_t i = 0; i < n_tensors_; i++) {
    const TfliteBuffer &b = buffers_[i];
    TfLiteCustomAllocation a = {arena_ + b.offset, (size_t)b.size};
    if (in->SetCustomAllocationForTensor(b.tensor, a) != kTfLiteOk)
      return Fail(ARENA_EUNSUPPORTED, "TFLite refused an address for tensor " +
                                          std::to_string(b.tensor));
  }
  return 0;
}

/* PLACING in the interpreter that learned: arenad's arena is TFLite's
 * arena of temporaries grown into its reserved room (with_temps), or an
 * arena of its own; every tensor moves to its planned address. The
 * AllocateTensors() that follows re-plans nothing: it checks each custom
 * allocation against its tensor, and Check() the addresses. */
int TflitePlanner::PlaceInPlace(tflite::Interpreter *in, bool with_temps) {
  FreeArena();
  uint64_t bytes = info_.arena_bytes;
  if (with_temps) {
    Mapping *m = FindMap(temp_base_);
    if (!m || RoundPage(bytes) > m->len)
      return Fail(ARENA_EUNSUPPORTED, "the plan does not fit where TFLite's "
                                      "arena of temporaries lies");
    size_t keep = RoundPage(bytes);
    if (m->len > keep)
      munmap(m->ptr + keep, m->len - keep);
    arena_ = m->ptr;
    arena_len_ = keep;
    arena_mapped_ = true;
    maps_.erase(maps_.begin() + (m - maps_.data()));
  } else if (AllocArena(bytes)) {
    return Fail(ARENA_ENOMEM, "out of memory for the arena");
  }
  if (int rc = GiveAddresses(in))
    return rc;
  TrimMaps();
  /* TFLite checks every custom allocation again (nothing is re-planned:
   * the interpreter is invokable and its inputs static) */
  int rc = in->AllocateTensors() == kTfLiteOk
               ? Check(in, with_temps)
               : Fail(ARENA_EUNSUPPORTED,
                      "TFLite refused the planned addresses");
  FreeProbe();
  return rc;
}

/* PLACING in a second interpreter, for a model where a kernel took a
 * tensor out of the arena while learning: every planned tensor gets its
 * address before AllocateTensors(), and with_temps TFLite's arena of
 * temporaries the base of arenad's (the hook's first request of exactly
 * its size). */
int TflitePlanner::PlaceFresh(std::unique_ptr<tflite::Interpreter> *out,
                              bool with_temps) {
  FreeProbe();
  out->reset();
  TrimMaps();
  if (AllocArena(info_.arena_bytes))
    return Fail(ARENA_ENOMEM, "out of memory for the arena");
  int rc = NewInterpreter(out);
  if (rc)
    return rc;
  info_.n_interpreters++;
  tflite::Interpreter *in = out->get();
  give_ = with_temps;
  given_ = false;
  if (in->SetAllocator(&allocator_) != kTfLiteOk)
    return Fail(ARENA_EUNSUPPORTED, "TFLite refused the allocator");
  if ((rc = GiveAddresses(in)))
    return rc;
  rc = in->AllocateTensors() == kTfLiteOk
           ? 0
           : Fail(ARENA_EUNSUPPORTED, "TFLite could not allocate the tensors");
  give_ = false;
  if (!rc)
    rc = Check(in, with_temps);
  if (!rc && with_temps && !given_)
    rc = Fail(ARENA_EUNSUPPORTED,
              "TFLite did not put its temporaries where planned");
  return rc;
}

/* Ends a public Build call: TFLite's messages held during it end error()
 * when it failed for another reason than missing kernels (TFLITE'S
 * MESSAGES). Returns rc. */
int TflitePlanner::Finish(int rc) {
  std::string said = reporter_->Release();
  if (rc && !missing_ops_ && !said.empty())
    error_ += ". TFLite said: " + said;
  if (rc && !missing_ops_ && !input_shapes_.empty()) {
    std::string at = "at input shapes ";
    for (size_t i = 0; i < input_shapes_.size(); i++) {
      at += i ? ", [" : "[";
      for (size_t k = 0; k < input_shapes_[i].size(); k++)
        at += (k ? "," : "") + std::to_string(input_shapes_[i][k]);
      at += "]";
    }
    error_ = at + ": " + error_;
  }
  return rc;
}

/* Starts a public Build call: TFLite's messages held (TFLITE'S
 * MESSAGES) until Finish(). */
void TflitePlanner::Begin() {
  reporter_->Hold();
  missing_ops_ = false;
}

int TflitePlanner::BuildTfliteOnly(std::unique_ptr<tflite::Interpreter> *out) {
  Begin();
  return Finish(BuildOwn(out));
}

int TflitePlanner::Build(std::unique_ptr<tflite::Interpreter> *out) {
  Begin();
  return Finish(BuildPlanned(out));
}

int TflitePlanner::BuildPlanned(std::unique_ptr<tflite::Interpreter> *out) {
  out->reset();
  memset(&info_, 0, sizeof info_);
  error_.clear();
  note_.clear();
  plan_placeable_ = false;
  FreeArena();
  if (!client_)
    return Fail(ARENA_EINVAL, "no client handle");
  auto seen = learned_.find({input_shapes_, in_place_});
  if (seen != learned_.end()) {
    if (PlaceAgain(seen->second, out) == 0)
      return 0;
    learned_.erase(seen); /* learn again */
    memset(&info_, 0, sizeof info_);
    error_.clear();
    note_.clear();
  }
  std::unique_ptr<tflite::Interpreter> in;
  int rc = NewInterpreter(&in);
  if (rc)
    return rc;
  info_.n_interpreters = 1;
  sized_.clear();
  bool kept = false;
  if (input_shapes_.empty() && (rc = KeepSmall(&in, &kept)))
    return rc;
  if (kept) {
    *out = std::move(in);
    return 0;
  }
  if (PlaceFetched(&in)) { /* FETCHED PLANS: one interpreter */
    Remember();
    *out = std::move(in);
    return 0;
  }
  if (!in) { /* the fetched plan was refused after allocating */
    if ((rc = NewInterpreter(&in)))
      return rc;
    info_.n_interpreters++;
  }
  if (!input_shapes_.empty()) {
    if ((rc = SizeAtShapes()))
      return rc;
    if ((rc = KeepSmall(&in, &kept)))
      return rc;
    if (kept) {
      *out = std::move(in);
      return 0;
    }
  }
  if (Learn(in.get()) || n_tensors_ == 0) { /* nothing to place */
    in.reset();
    return OnTfliteOwn(out);
  }
  bool with_temps = temps_pinnable_;
  if ((rc = Plan(in.get(), with_temps))) {
    in.reset();
    FreeProbe();
    return rc;
  }
  plan_placeable_ = true;
  plan_with_temps_ = with_temps;
#ifdef ARENAD_TFLITE_TESTING
  if (test_prefer_tflite_) {
    in.reset();
    return OnTfliteOwn(out);
  }
#endif
  /* TFLite's arena beside arenad's: the temporaries when not planned */
  uint64_t beside = with_temps ? 0 : temp_arena_;
  bool in_place = moved_ == 0 &&
                  ArenaCost(info_.arena_bytes, with_temps) + beside <=
                      info_.tflite_alone;
  /* a second interpreter may still save what the pages of TFLite's arena
   * of temporaries would cost, with an arena from the heap */
  if (!in_place &&
      ArenaCost(info_.arena_bytes, false) + beside > info_.tflite_alone) {
    in.reset();
    return OnTfliteOwn(out);
  }
  if (in_place)
    rc = PlaceInPlace(in.get(), with_temps);
  else
    rc = PlaceFresh(&in, with_temps);
  if (rc == 0 && ArenaCost(info_.arena_bytes, arena_mapped_) +
                         info_.remainder <= info_.tflite_alone) {
    if (moved_ == 0) {
      Remember();
      AttachRecord();
    }
    *out = std::move(in);
    return 0;
  }
  /* dropped: TFLite did not keep the plan, or it saves nothing */
  info_.dropped = rc != 0;
  plan_placeable_ = rc == 0;
  std::string why = error_;
  in.reset();
  rc = OnTfliteOwn(out);
  if (!rc)
    error_ = why;
  return rc;
}

}  // namespace arenad

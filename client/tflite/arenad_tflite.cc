/*
 * arenad_tflite.cc - arenad::TflitePlanner, a TensorFlow Lite interpreter
 * on an arenad plan (see arenad_tflite.h).
 *
 * DESIGN
 *  Build() = NewInterpreter (probe) -> Learn -> Plan -> NewInterpreter
 *  (real) -> Place. Learn() reads the probe's execution plan into
 *  buffers_; Plan() turns buffers_ into a planner graph, declares the
 *  in-place pairs the .tflite reader allows and calls arenad_client_plan(),
 *  which verifies the plan against that graph; Place() hands TFLite the
 *  addresses and checks, after AllocateTensors(), which ones it kept.
 *  Only functions of arenad_client.h are called, plus the .tflite reader
 *  (planner/formats/tflite.h) that the client library contains.
 */
#include "arenad_tflite.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <set>

#include "tflite.h"
#include "tflite/core/subgraph.h"
#include "tflite/interpreter_builder.h"
#include "tflite/schema/schema_generated.h"
#include "tflite/schema/schema_utils.h"

namespace arenad {

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

constexpr uint64_t kAlign = 64; /* TFLite's kDefaultTensorAlignment */

/* Tensors of a TfLiteIntArray, skipping absent optional inputs (-1). */
template <typename F>
void EachTensor(const TfLiteIntArray *a, F f) {
  for (int i = 0; a && i < a->size; i++)
    if (a->data[i] >= 0)
      f(a->data[i]);
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

uint64_t TfliteArenaBytes(const tflite::Interpreter &interp,
                          uint64_t *dynamic) {
  uint64_t arena = 0, dyn = 0;
  for (size_t i = 0; i < interp.subgraphs_size(); i++) {
    tflite::Subgraph::SubgraphAllocInfo a;
    interp.subgraph((int)i)->GetMemoryAllocInfo(&a);
    arena += a.arena_size;
    dyn += a.dynamic_size;
  }
  if (dynamic)
    *dynamic = dyn;
  return arena;
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
      temp_given_(false),
      arena_(nullptr),
      in_place_(true),
      test_overlap_(false) {
  memset(&info_, 0, sizeof info_);
  allocator_.data = this;
  allocator_.allocate = Allocate;
  allocator_.reallocate = nullptr;
  allocator_.deallocate = Deallocate;
}

TflitePlanner::~TflitePlanner() { free(arena_); }

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
  return 0;
}

/* Fails with the operators the resolver has no kernel for when there are
 * any, else with why. TFLite's builder refuses a missing builtin, but
 * accepts a missing custom operator (a placeholder a delegate may claim)
 * and leaves it to fail when the tensors are allocated: both end here. */
int TflitePlanner::FailMissing(const char *why) {
  std::string missing = MissingOps();
  missing_ops_ = !missing.empty();
  if (missing_ops_)
    return Fail(ARENA_EUNSUPPORTED,
                "the resolver has no kernel for " + missing +
                    ": register them (or link a TFLite build that has "
                    "them) to run this model");
  return Fail(ARENA_EUNSUPPORTED, why);
}

std::string TflitePlanner::MissingOps() const {
  const tflite::Model *m = fb_ ? fb_->GetModel() : nullptr;
  if (!m || !m->operator_codes())
    return std::string();
  /* each missing operator once, in the order of its first code, with
   * the versions of all its codes (a model has a code per version) */
  std::vector<std::pair<std::string, std::vector<int>>> missing;
  for (const tflite::OperatorCode *c : *m->operator_codes()) {
    if (!c)
      continue;
    tflite::BuiltinOperator op = tflite::GetBuiltinCode(c);
    int version = c->version();
    std::string name;
    if (op == tflite::BuiltinOperator_CUSTOM) {
      const char *custom = c->custom_code() ? c->custom_code()->c_str() : "";
      if (resolver_.FindOp(custom, version))
        continue;
      name = std::string("custom operator '") + custom + "'";
    } else {
      if (resolver_.FindOp(op, version))
        continue;
      const char *n = tflite::EnumNameBuiltinOperator(op);
      name = n && *n ? n : "builtin " + std::to_string((int)op);
    }
    auto it = std::find_if(missing.begin(), missing.end(),
                           [&](const auto &e) { return e.first == name; });
    if (it == missing.end())
      it = missing.insert(missing.end(), {name, {}});
    if (std::find(it->second.begin(), it->second.end(), version) ==
        it->second.end())
      it->second.push_back(version);
  }
  std::string list;
  for (auto &e : missing) {
    std::sort(e.second.begin(), e.second.end());
    list += (list.empty() ? "" : ", ") + e.first +
            (e.second.size() == 1 ? " (version " : " (versions ");
    for (size_t k = 0; k < e.second.size(); k++)
      list += (k ? ", " : "") + std::to_string(e.second[k]);
    list += ")";
  }
  return list;
}

/* Reads the probe, allocated by TFLite's own planner (HOW IT LEARNS THE
 * TENSORS). */
int TflitePlanner::Learn(tflite::Interpreter *probe) {
  buffers_.clear();
  const tflite::Subgraph &sg = probe->primary_subgraph();
  const std::vector<int> &plan = sg.execution_plan();
  std::set<int> temps;
  std::vector<TfliteBuffer> tlist;
  std::vector<int64_t> first(probe->tensors_size(), -1), last(first);
  auto use = [&](int t, int64_t at) {
    if (first[t] < 0 || at < first[t])
      first[t] = at;
    last[t] = std::max(last[t], at);
  };
  for (size_t i = 0; i < plan.size(); i++) {
    const auto *nr = sg.node_and_registration(plan[i]);
    if (!nr)
      return Fail(ARENA_EINVAL, "the execution plan names a missing node");
    const TfLiteNode &n = nr->first;
    EachTensor(n.inputs, [&](int t) { use(t, (int64_t)i); });
    EachTensor(n.outputs, [&](int t) { use(t, (int64_t)i); });
    EachTensor(n.intermediates, [&](int t) { use(t, (int64_t)i); });
    EachTensor(n.temporaries, [&](int t) {
      const TfLiteTensor *x = probe->tensor(t);
      if (x && x->allocation_type == kTfLiteArenaRw && temps.insert(t).second) {
        info_.n_temporaries++;
        info_.temporary_bytes += x->bytes;
        tlist.push_back(TfliteBuffer{t, (uint64_t)x->bytes, (int64_t)i,
                                     (int64_t)i, -1, 0, false, true});
      }
    });
  }
  int64_t end = plan.empty() ? 0 : (int64_t)plan.size() - 1;
  for (int t : probe->inputs())
    if (t >= 0 && first[t] >= 0)
      first[t] = 0;
  for (int t : probe->outputs())
    if (t >= 0 && first[t] >= 0)
      last[t] = end;
  for (int t = 0; t < (int)probe->tensors_size(); t++) {
    const TfLiteTensor *x = probe->tensor(t);
    if (first[t] < 0 || temps.count(t) || x->allocation_type != kTfLiteArenaRw)
      continue;
    buffers_.push_back(TfliteBuffer{t, (uint64_t)x->bytes, first[t], last[t],
                                    -1, 0, false, false});
  }
  n_tensors_ = buffers_.size();
  buffers_.insert(buffers_.end(), tlist.begin(), tlist.end());
  info_.tflite_alone = TfliteArenaBytes(*probe, nullptr);
  info_.n_tensors = n_tensors_;
  return 0;
}

/* The pairs the .tflite reader allows, where both tensors are buffers of
 * the same size (IN-PLACE SHARING). */
void TflitePlanner::DeclarePairs() {
  struct planner_tflite_options o;
  memset(&o, 0, sizeof o);
  o.keep_dequant = 1;
  struct planner_tflite_model m;
  planner_tflite_init(&m);
  if (planner_tflite_read(model_, model_len_, &o, &m, NULL) == 0) {
    std::vector<int> at(m.n_tensors, -1); /* tensor index -> buffer */
    for (size_t b = 0; b < buffers_.size(); b++)
      if ((uint32_t)buffers_[b].tensor < m.n_tensors)
        at[buffers_[b].tensor] = (int)b;
    for (size_t i = 0; i < m.n_planned; i++) {
      const struct planner_tensor *t = &m.tensors[i];
      if (!t->has_alias || t->id >= m.n_tensors || t->alias >= m.n_tensors)
        continue;
      int out = at[t->id], in = at[t->alias];
      if (out >= 0 && in >= 0 && buffers_[out].size == buffers_[in].size)
        buffers_[out].alias = buffers_[in].tensor;
    }
  }
  planner_tflite_cleanup(&m);
}

/* Plans the tensors through arenad under the model's key; with_temps
 * adds the temporaries, pinned at their offsets in TFLite's arena, which
 * then starts at the arena's base (TEMPORARIES). */
int TflitePlanner::Plan(bool with_temps) {
  for (auto &b : buffers_)
    b.alias = -1;
  if (in_place_)
    DeclarePairs();
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
  uint8_t hash[ARENAD_CLIENT_DIGEST_LEN];
  arenad_client_sha256(model_, model_len_, hash);
  struct arenad_model_key key;
  key.model_hash = hash;
  key.model_hash_len = sizeof hash;
  key.inputs = in_dims_.data();
  key.n_inputs = in_dims_.size();
  struct planner_options o;
  arenad_client_plan_options_init(&o);
  o.alignment = kAlign;
  o.in_place = in_place_ ? 1 : 0;
  struct planner_graph graph = {g.data(), g.size()};
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  int rc = arenad_client_plan(client_, &graph, &o, &key, &r);
  if (rc) {
    std::string why = arenad_client_errmsg(client_);
    return Fail(rc, "planning failed: " + why);
  }
  for (size_t i = 0; i < n; i++)
    buffers_[i].offset = r.plan.offsets[i];
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

/* TFLite's allocator hook: the first request for exactly temp_arena_
 * bytes (TFLite's arena of temporaries) gets the base of arena_; every
 * other request (its persistent arena, dynamic tensors) the heap. */
void *TflitePlanner::Allocate(void *self, size_t bytes, size_t alignment) {
  TflitePlanner *p = static_cast<TflitePlanner *>(self);
  if (!p->temp_given_ && p->arena_ && bytes == p->temp_arena_) {
    p->temp_given_ = true;
    return p->arena_;
  }
  size_t a = std::max<size_t>(alignment, sizeof(void *));
  return aligned_alloc(a, (bytes + a - 1) / a * a);
}

void TflitePlanner::Deallocate(void *self, void *ptr, size_t, size_t) {
  TflitePlanner *p = static_cast<TflitePlanner *>(self);
  if (ptr == p->arena_)
    p->temp_given_ = false;
  else
    free(ptr);
}

/* Learns where TFLite puts each temporary inside its own arena when every
 * tensor has a caller-given address: an interpreter with the tensors laid
 * end to end in a scratch buffer. TFLite's arena then holds the
 * temporaries alone, its first allocation at offset 0, so the lowest
 * temporary address is the arena's base. */
int TflitePlanner::FindTemps() {
  uint64_t total = 0;
  for (size_t i = 0; i < n_tensors_; i++) {
    buffers_[i].offset = total;
    total += (buffers_[i].size + kAlign - 1) / kAlign * kAlign;
  }
  uint8_t *scratch = static_cast<uint8_t *>(
      aligned_alloc(kAlign, total ? total : kAlign));
  if (!scratch)
    return Fail(ARENA_ENOMEM, "out of memory");
  std::unique_ptr<tflite::Interpreter> b;
  int rc = NewInterpreter(&b);
  for (size_t i = 0; !rc && i < n_tensors_; i++) {
    TfLiteCustomAllocation a = {scratch + buffers_[i].offset,
                                (size_t)buffers_[i].size};
    if (b->SetCustomAllocationForTensor(buffers_[i].tensor, a) != kTfLiteOk)
      rc = Fail(ARENA_EUNSUPPORTED, "TFLite refused a tensor address");
  }
  if (!rc && b->AllocateTensors() != kTfLiteOk)
    rc = Fail(ARENA_EUNSUPPORTED, "TFLite could not allocate the tensors");
  uintptr_t lo = UINTPTR_MAX;
  for (size_t i = n_tensors_; !rc && i < buffers_.size(); i++) {
    const TfLiteTensor *t = b->tensor(buffers_[i].tensor);
    if (t->allocation_type != kTfLiteArenaRw || !t->data.raw)
      rc = Fail(ARENA_EUNSUPPORTED, "a temporary is not in TFLite's arena");
    else
      lo = std::min(lo, reinterpret_cast<uintptr_t>(t->data.raw));
  }
  for (size_t i = n_tensors_; !rc && i < buffers_.size(); i++)
    buffers_[i].offset =
        reinterpret_cast<uintptr_t>(b->tensor(buffers_[i].tensor)->data.raw) - lo;
  if (!rc) {
    tflite::Subgraph::SubgraphAllocInfo a;
    b->primary_subgraph().GetMemoryAllocInfo(&a);
    temp_arena_ = a.arena_size;
  }
  b.reset();
  free(scratch);
  return rc;
}

/* Gives every tensor its address (and TFLite's arena of temporaries its
 * place, with_temps), allocates, and records which TFLite kept
 * (PLACING). */
int TflitePlanner::Place(tflite::Interpreter *interp, bool with_temps) {
  temp_given_ = false;
  if (with_temps && interp->SetAllocator(&allocator_) != kTfLiteOk)
    return Fail(ARENA_EUNSUPPORTED, "TFLite refused the allocator");
  for (size_t i = 0; i < n_tensors_; i++) {
    const TfliteBuffer &b = buffers_[i];
    TfLiteCustomAllocation a = {arena_ + b.offset, (size_t)b.size};
    if (interp->SetCustomAllocationForTensor(b.tensor, a) != kTfLiteOk)
      return Fail(ARENA_EUNSUPPORTED,
                  "TFLite refused an address for tensor " +
                      std::to_string(b.tensor));
  }
  if (interp->AllocateTensors() != kTfLiteOk)
    return Fail(ARENA_EUNSUPPORTED, "TFLite could not allocate the tensors");
  info_.n_placed = info_.n_left = 0;
  bool temps_ok = true;
  for (size_t i = 0; i < buffers_.size(); i++) {
    TfliteBuffer &b = buffers_[i];
    const TfLiteTensor *t = interp->tensor(b.tensor);
    bool at = t->data.raw == reinterpret_cast<char *>(arena_ + b.offset);
    if (b.temporary) {
      b.placed = with_temps && at && t->allocation_type == kTfLiteArenaRw;
      temps_ok = temps_ok && b.placed;
      continue;
    }
    b.placed = at && t->allocation_type == kTfLiteCustom;
    (b.placed ? info_.n_placed : info_.n_left)++;
  }
  if (with_temps && (!temps_ok || !temp_given_))
    return Fail(ARENA_EUNSUPPORTED,
                "TFLite did not put its temporaries where planned");
  info_.remainder = TfliteArenaBytes(*interp, &info_.dynamic_bytes);
  if (with_temps) /* that arena is inside arenad's */
    info_.remainder -= std::min(info_.remainder, temp_arena_);
  return 0;
}

/* Ends a public Build call: TFLite's messages held during it end error()
 * when it failed for another reason than missing kernels (TFLITE'S
 * MESSAGES). Returns rc. */
int TflitePlanner::Finish(int rc) {
  std::string said = reporter_->Release();
  if (rc && !missing_ops_ && !said.empty())
    error_ += ". TFLite said: " + said;
  return rc;
}

int TflitePlanner::BuildTfliteOnly(std::unique_ptr<tflite::Interpreter> *out) {
  reporter_->Hold();
  missing_ops_ = false;
  return Finish(BuildOwn(out));
}

int TflitePlanner::BuildOwn(std::unique_ptr<tflite::Interpreter> *out) {
  int rc = NewInterpreter(out);
  if (rc)
    return rc;
  if ((*out)->AllocateTensors() != kTfLiteOk) {
    out->reset();
    return FailMissing("TFLite could not allocate the tensors");
  }
  return 0;
}

/* Plans and places, with or without the temporaries. */
int TflitePlanner::BuildOn(bool with_temps,
                           std::unique_ptr<tflite::Interpreter> *out) {
  int rc = Plan(with_temps);
  if (rc)
    return rc;
  out->reset();
  free(arena_);
  size_t bytes = (size_t)((info_.arena_bytes + kAlign - 1) / kAlign * kAlign);
  arena_ = static_cast<uint8_t *>(aligned_alloc(kAlign, bytes ? bytes : kAlign));
  if (!arena_)
    return Fail(ARENA_ENOMEM, "out of memory for the arena");
  if ((rc = NewInterpreter(out)) || (rc = Place(out->get(), with_temps)))
    out->reset();
  return rc;
}

int TflitePlanner::Build(std::unique_ptr<tflite::Interpreter> *out) {
  reporter_->Hold();
  missing_ops_ = false;
  return Finish(BuildPlanned(out));
}

int TflitePlanner::BuildPlanned(std::unique_ptr<tflite::Interpreter> *out) {
  out->reset();
  memset(&info_, 0, sizeof info_);
  if (!client_)
    return Fail(ARENA_EINVAL, "no client handle");
  std::unique_ptr<tflite::Interpreter> probe;
  int rc = BuildOwn(&probe);
  if (!rc)
    rc = Learn(probe.get());
  if (rc)
    return rc;
  in_shapes_.clear();
  for (int t : probe->inputs()) {
    const TfLiteIntArray *d = probe->tensor(t)->dims;
    std::vector<int64_t> v;
    for (int k = 0; d && k < d->size; k++)
      v.push_back(d->data[k] < 0 ? 0 : d->data[k]);
    in_shapes_.push_back(v);
  }
  in_dims_.clear();
  for (auto &v : in_shapes_)
    in_dims_.push_back(arenad_dims{v.data(), v.size()});
  probe.reset();
  TflitePlanInfo learned = info_;
  /* First choice: tensors and temporaries in one plan. */
  if (n_tensors_ && n_tensors_ < buffers_.size() && FindTemps() == 0 &&
      BuildOn(true, out) == 0 && info_.total() <= info_.tflite_alone)
    return 0;
  /* Then the tensors alone, TFLite keeping its temporaries. */
  info_ = learned;
  for (auto &b : buffers_)
    b.placed = false;
  if (n_tensors_ && (rc = BuildOn(false, out)))
    return rc;
  if (n_tensors_ && info_.total() <= info_.tflite_alone)
    return 0;
  /* Not worth it: TFLite's own plan is smaller. */
  TflitePlanInfo keep = info_;
  out->reset();
  if ((rc = BuildOwn(out)))
    return rc;
  free(arena_);
  arena_ = nullptr;
  info_ = keep;
  info_.source = TflitePlanSource::kTflite;
  info_.remainder = TfliteArenaBytes(**out, &info_.dynamic_bytes);
  info_.arena_bytes = 0;
  info_.n_placed = 0;
  info_.n_left = info_.n_tensors;
  for (auto &b : buffers_)
    b.placed = false;
  return 0;
}

}  // namespace arenad

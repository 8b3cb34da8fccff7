/*
 * arenad_tflite_own.cc - what TensorFlow Lite itself does with a model,
 * as arenad::TflitePlanner reads it (see arenad_tflite.cc): TFLite alone,
 * the arena TFLite's own ArenaPlanner gives subgraph 0 (Alone()); the
 * bytes TFLite's arenas hold (TfliteArenaBytes()); the operators of
 * the model the resolver has no kernel for (MissingOps(), FailMissing());
 * and the interpreters on TFLite's own planner Build() returns: a small
 * model's (KeepSmall(), SMALL MODELS) and the fall back when arenad's plan
 * saves nothing, audited first (OnTfliteOwn(), NO UNCHECKED FALLBACK).
 */
#include "arenad_tflite.h"
#include "arenad_tflite_audit.h"
#include "arenad_tflite_int.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "tflite/arena_planner.h"
#include "tflite/core/subgraph.h"
#include "tflite/graph_info.h"
#include "tflite/schema/schema_generated.h"
#include "tflite/schema/schema_utils.h"
#include "tflite/minimal_logging.h"

namespace arenad {

using tflite_int::kAlign;

namespace {

/* Subgraph 0 as TFLite's ArenaPlanner sees it, over a copy of its tensors
 * in which every tensor of the arena (kTfLiteArenaRw, or an address this
 * planner gave, kTfLiteCustom) is an arena tensor without data: what
 * TFLite alone would plan. Borrows the subgraph. */
class AloneView : public tflite::GraphInfo {
 public:
  explicit AloneView(tflite::Subgraph *sg) : sg_(sg) {
    tensors_.resize(sg->tensors_size());
    for (size_t i = 0; i < tensors_.size(); i++) {
      tensors_[i] = *sg->tensor((int)i);
      TfLiteTensor &t = tensors_[i];
      if (t.allocation_type == kTfLiteCustom ||
          t.allocation_type == kTfLiteArenaRw) {
        t.allocation_type = kTfLiteArenaRw;
        t.data.raw = nullptr;
      }
    }
  }
  size_t num_tensors() const override { return tensors_.size(); }
  TfLiteTensor *tensor(size_t i) override { return &tensors_[i]; }
  TfLiteTensor *tensors() override { return tensors_.data(); }
  size_t num_execution_nodes() const override {
    return sg_->execution_plan().size();
  }
  size_t num_total_nodes() const override { return sg_->nodes_size(); }
  const TfLiteNode &node(size_t i) const override {
    return sg_->nodes_and_registration()[sg_->execution_plan()[i]].first;
  }
  const TfLiteRegistration &registration(size_t i) const override {
    return sg_->nodes_and_registration()[sg_->execution_plan()[i]].second;
  }
  size_t node_index(size_t i) const override {
    return sg_->execution_plan()[i];
  }
  const std::vector<int> &inputs() const override { return sg_->inputs(); }
  const std::vector<int> &outputs() const override { return sg_->outputs(); }
  const std::vector<int> &variables() const override {
    return sg_->variables();
  }

 private:
  tflite::Subgraph *sg_;              /* borrowed */
  std::vector<TfLiteTensor> tensors_; /* copies; dims etc. borrowed */
};

}  // namespace

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

/* TFLite alone: TFLite's own ArenaPlanner over subgraph 0 with every
 * arena tensor its own (AloneView), its arenas reserved and never touched,
 * plus the arenas of the other subgraphs. */
uint64_t TflitePlanner::Alone(tflite::Interpreter *in) {
  tflite::Subgraph *sg = in->subgraph(0);
  size_t n = sg->execution_plan().size();
  uint64_t other = 0;
  for (size_t i = 1; i < in->subgraphs_size(); i++) {
    tflite::Subgraph::SubgraphAllocInfo a;
    in->subgraph((int)i)->GetMemoryAllocInfo(&a);
    other += a.arena_size;
  }
  size_t arena = 0, persistent = 0;
  bool keep = reserving_;
  size_t room = room_;
  reserving_ = true;
  room_ = 0;
  {
    std::unique_ptr<tflite::GraphInfo> view(new AloneView(sg));
    tflite::ArenaPlanner p(sg->context(), std::move(view),
                           /*preserve_all_tensors=*/false, (int)kAlign, 0,
                           &allocator_);
    if (p.PlanAllocations() == kTfLiteOk &&
        (n == 0 || p.ExecuteAllocations(0, (int)n - 1) == kTfLiteOk))
      p.GetAllocInfo(&arena, &persistent);
  }
  reserving_ = keep;
  room_ = room;
  return arena + other;
}

/* SMALL MODELS: when the arena tensors of *in (built, not yet
 * allocated) sum to under min_saving_, allocates it on TFLite's own
 * planner and keeps it (*kept) if TFLite's arena is under the minimum too
 * and its plan is sound. Otherwise *kept is false and *in an interpreter
 * not yet allocated (a new one when this one was). Returns 0 or an
 * ARENA_E* code. */
int TflitePlanner::KeepSmall(std::unique_ptr<tflite::Interpreter> *in,
                             bool *kept) {
  *kept = false;
  if (min_saving_ == 0)
    return 0;
  uint64_t declared = 0;
  for (size_t t = 0; t < (*in)->tensors_size(); t++) {
    const TfLiteTensor *x = (*in)->tensor((int)t);
    if (x->allocation_type == kTfLiteArenaRw)
      declared += BytesOf(**in, (int)t);
  }
  if (declared >= min_saving_)
    return 0;
  if ((*in)->AllocateTensors() != kTfLiteOk) {
    in->reset();
    return FailMissing("TFLite could not allocate the tensors");
  }
  uint64_t dynamic = 0, alone = TfliteArenaBytes(**in, &dynamic);
  TfliteAudit audit;
  std::string why;
  if (alone >= min_saving_ ||
      AuditTflitePlan(**in, model_, model_len_, &audit, &why) != 0 ||
      !audit.sound) { /* the whole path, in a new interpreter */
    int rc = NewInterpreter(in);
    if (!rc)
      info_.n_interpreters++;
    return rc;
  }
  info_.source = TflitePlanSource::kTflite;
  info_.tflite_alone = info_.remainder = alone;
  info_.dynamic_bytes = dynamic;
  info_.below_min_saving = true;
  *kept = true;
  return 0;
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

/* TFLite's own planner, when arenad's plan would not save memory or was
 * dropped: the learned figures stay, the interpreter is a new one. */
int TflitePlanner::OnTfliteOwn(std::unique_ptr<tflite::Interpreter> *out) {
  TflitePlanInfo keep = info_;
  const TflitePlanInfo planned = info_;
  out->reset();
  FreeProbe();
  FreeArena();
  int rc = BuildOwn(out);
  if (rc)
    return rc;
  info_ = keep;
  info_.n_interpreters++;
  info_.source = TflitePlanSource::kTflite;
  info_.remainder = TfliteArenaBytes(**out, &info_.dynamic_bytes);
  info_.arena_bytes = 0;
  info_.n_placed = 0;
  info_.n_left = info_.n_tensors;
  for (auto &b : buffers_)
    b.placed = false;
  /* NO UNCHECKED FALLBACK: TFLite's plan is used only when sound. */
  TfliteAudit audit;
  std::string why;
  if (AuditTflitePlan(**out, model_, model_len_, &audit, &why) == 0 &&
      audit.sound)
    return 0;
  if (why.empty())
    why = audit.overlaps.empty() ? audit.verifier
                                 : TfliteOverlapText(audit.overlaps[0]);
  note_ = "TFLite's own plan is unsound (" + why + ")";
  return RefuseUnsound(out, planned);
}

/* TFLite's own plan in *out is unsound (note_ says how): places arenad's
 * plan (planned: the figures it had) in a new interpreter instead, or
 * fails when there is none that can be placed. */
int TflitePlanner::RefuseUnsound(std::unique_ptr<tflite::Interpreter> *out,
                                 const TflitePlanInfo &planned) {
  out->reset();
  info_.tflite_unsound = true;
  if (!plan_placeable_)
    return Fail(ARENA_EVERIFY, note_ + ", and arenad's plan cannot be "
                                       "placed: no interpreter is built");
  uint64_t alone = info_.tflite_alone;
  size_t built = info_.n_interpreters;
  info_ = planned;
  info_.tflite_unsound = true;
  info_.n_interpreters = built;
  int rc = PlaceFresh(out, plan_with_temps_);
  if (rc) {
    out->reset();
    return Fail(rc, note_ + ", and arenad's plan could not be placed: " +
                        error_);
  }
  note_ += "; arenad's plan is used though it needs " +
           std::to_string(info_.total()) + " bytes to TFLite's " +
           std::to_string(alone);
  TFLITE_LOG_PROD(tflite::TFLITE_LOG_WARNING, "arenad planner: %s",
                  note_.c_str());
  return 0;
}

}  // namespace arenad

/*
 * arenad_tflite_pipeline.cc - several TFLite models on one arena with a
 * joint plan (see arenad_tflite_pipeline.h): each model learned by a
 * TflitePlanner, their tensors joined on one timeline, the joint graph
 * planned through the client library, every model's interpreter placed
 * on the one arena.
 */
#include "arenad_tflite_pipeline.h"

#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <map>
#include <set>

#include "arenad_tflite.h"
#include "arenad_tflite_int.h"
#include "planner.h"
#include "tflite/interpreter_builder.h"

namespace arenad {

namespace {

constexpr char kKeyTag[] = "arenad pipeline 1";

/* Appends v's 8 bytes, little end first, to s. */
void Put64(std::string *s, uint64_t v) {
  for (int i = 0; i < 8; i++)
    s->push_back((char)(v >> (8 * i)));
}

}  // namespace

struct TflitePipeline::Model {
  const void *bytes = nullptr; /* borrowed */
  size_t len = 0;
  std::vector<std::vector<int>> shapes;
  std::unique_ptr<tflite::FlatBufferModel> fb;
  std::unique_ptr<tflite::Interpreter> in;
  size_t first = 0;            /* its tensors' place in the joint graph */
  std::vector<int> tensors;    /* their indices in subgraph 0 */
  std::vector<uint64_t> sizes; /* and their bytes, as learned */
  uint8_t identity[ARENAD_CLIENT_DIGEST_LEN] = {};
  std::vector<std::vector<int64_t>> inputs; /* shapes as allocated */
};

TflitePipeline::TflitePipeline(arenad_client_t *client,
                               const tflite::OpResolver &resolver)
    : client_(client), resolver_(resolver) {
  memset(&info_, 0, sizeof info_);
}

TflitePipeline::~TflitePipeline() {
  models_.clear(); /* the interpreters, before their arena */
  FreeArena();
}

size_t TflitePipeline::Add(const void *model, size_t len) {
  models_.emplace_back(new Model());
  models_.back()->bytes = model;
  models_.back()->len = len;
  return models_.size() - 1;
}

int TflitePipeline::SetInputShapes(size_t k,
                                   const std::vector<std::vector<int>> &s) {
  if (k >= models_.size())
    return ARENA_EINVAL;
  models_[k]->shapes = s;
  return 0;
}

tflite::Interpreter *TflitePipeline::interpreter(size_t k) const {
  return k < models_.size() ? models_[k]->in.get() : nullptr;
}

int TflitePipeline::Fail(int code, const std::string &why) {
  error_ = why;
  return code;
}

void TflitePipeline::FreeArena() {
  tflite_int::ArenaFree(arena_, arena_len_, arena_mapped_);
  arena_ = nullptr;
  arena_len_ = 0;
  arena_mapped_ = false;
}

/* Learns model k, builds its interpreter (not yet allocated) and appends
 * its tensors to the joint graph g from time *base on (advanced past its
 * nodes); owner names each joint tensor's model. */
int TflitePipeline::Learn(size_t k, std::vector<struct planner_tensor> *g,
                          std::vector<int> *owner, int64_t *base) {
  Model &m = *models_[k];
  std::string which = "model " + std::to_string(k) + ": ";
  TflitePlanner p(client_, m.bytes, m.len, resolver_);
  p.SetInPlace(in_place_);
  p.SetInputShapes(m.shapes);
  int rc = p.LearnOnly();
  if (rc)
    return Fail(rc, which + p.error());
  memcpy(m.identity, p.learned_key(), sizeof m.identity);
  m.inputs = p.learned_inputs();
  info_.tflite_alone += p.info().tflite_alone;
  m.fb = tflite::FlatBufferModel::VerifyAndBuildFromBuffer(
      static_cast<const char *>(m.bytes), m.len);
  if (!m.fb || tflite::InterpreterBuilder(*m.fb, resolver_)(&m.in) !=
                   kTfLiteOk || !m.in)
    return Fail(ARENA_EPARSE, which + "TFLite could not build it again");
  for (size_t i = 0; i < m.shapes.size() && i < m.in->inputs().size(); i++)
    if (m.in->ResizeInputTensor(m.in->inputs()[i], m.shapes[i]) != kTfLiteOk)
      return Fail(ARENA_EINVAL, which + "TFLite refused an input shape");
  std::set<int> io(m.in->inputs().begin(), m.in->inputs().end());
  io.insert(m.in->outputs().begin(), m.in->outputs().end());
  const std::vector<TfliteBuffer> &bs = p.buffers();
  size_t n = p.n_learned();
  int64_t span = 1;
  for (size_t i = 0; i < n; i++)
    span = std::max<int64_t>(span, bs[i].last + 1);
  m.first = g->size();
  std::map<int, uint32_t> id; /* tensor -> joint id */
  for (size_t i = 0; i < n; i++)
    id[bs[i].tensor] = (uint32_t)(m.first + i);
  for (size_t i = 0; i < n; i++) {
    struct planner_tensor t;
    memset(&t, 0, sizeof t);
    t.id = (uint32_t)(m.first + i);
    t.size = bs[i].size;
    bool kept = io.count(bs[i].tensor) != 0; /* the whole pipeline */
    t.first = kept ? 0 : *base + bs[i].first;
    t.last = kept ? -1 : *base + bs[i].last; /* -1: set when all known */
    t.pinned = PLANNER_NOT_PINNED;
    if (bs[i].alias >= 0 && id.count(bs[i].alias) && !kept) {
      t.has_alias = 1;
      t.alias = id[bs[i].alias];
    }
    if (kept)
      info_.io_bytes += t.size;
    g->push_back(t);
    owner->push_back((int)k);
    m.tensors.push_back(bs[i].tensor);
    m.sizes.push_back(bs[i].size);
  }
  /* arenad's plan of this model alone, on its own timeline */
  std::vector<struct planner_tensor> own(g->begin() + (long)m.first,
                                         g->end());
  for (size_t i = 0; i < own.size(); i++) {
    own[i].id = (uint32_t)i;
    own[i].first = bs[i].first;
    own[i].last = bs[i].last;
    if (own[i].has_alias)
      own[i].alias -= (uint32_t)m.first;
  }
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = tflite_int::kAlign;
  o.in_place = in_place_ ? 1 : 0;
  struct planner_graph og = {own.data(), own.size()};
  struct planner_plan op;
  planner_plan_init(&op);
  char why[ARENA_ERR_LEN] = "";
  if (!own.empty() && planner_run(&og, &o, &op, why) == 0) {
    info_.arenad_alone += op.arena_bytes;
    info_.largest_alone = std::max(info_.largest_alone, op.arena_bytes);
  }
  planner_plan_cleanup(&op);
  *base += span;
  return 0;
}

/* Plans the joint graph g through the client under the pipeline's key;
 * the offsets into *offsets. */
int TflitePipeline::Plan(std::vector<struct planner_tensor> *g,
                         std::vector<uint64_t> *offsets) {
  int64_t end = 0;
  for (const auto &t : *g)
    end = std::max(end, t.last);
  for (auto &t : *g)
    if (t.last < 0)
      t.last = end;
  std::string rec(kKeyTag);
  std::vector<std::vector<int64_t>> dims;
  for (const auto &m : models_) {
    rec.append(reinterpret_cast<const char *>(m->identity),
               sizeof m->identity);
    Put64(&rec, m->inputs.size());
    for (const auto &v : m->inputs) {
      Put64(&rec, v.size());
      for (int64_t d : v)
        Put64(&rec, (uint64_t)d);
      dims.push_back(v);
    }
  }
  uint8_t hash[ARENAD_CLIENT_DIGEST_LEN];
  arenad_client_sha256(rec.data(), rec.size(), hash);
  std::vector<struct arenad_dims> views;
  for (auto &v : dims)
    views.push_back(arenad_dims{v.data(), v.size()});
  struct arenad_model_key key = tflite_int::PlanKey(hash, sizeof hash, views);
  struct planner_options o;
  tflite_int::PlanOptions(&o, in_place_);
  struct planner_graph graph = {g->data(), g->size()};
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  int rc = arenad_client_plan(client_, &graph, &o, &key, &r);
  if (rc) {
    arenad_client_result_cleanup(&r);
    return Fail(rc, std::string("planning the pipeline failed: ") +
                        arenad_client_errmsg(client_));
  }
  offsets->assign(r.plan.offsets, r.plan.offsets + r.plan.n_offsets);
  info_.arena_bytes = r.plan.arena_bytes;
  info_.lower_bound = r.plan.lower_bound_bytes;
  info_.cached = r.cached != 0;
  info_.local = r.local != 0;
  arenad_client_result_cleanup(&r);
  return 0;
}

/* Gives model k's tensors their addresses and allocates its
 * interpreter. */
int TflitePipeline::Place(size_t k, const std::vector<uint64_t> &offsets,
                          const std::vector<int> &owner) {
  Model &m = *models_[k];
  std::string which = "model " + std::to_string(k) + ": ";
  for (size_t i = 0; i < m.tensors.size(); i++) {
    size_t j = m.first + i;
    if (owner[j] != (int)k)
      return Fail(ARENA_EINTERNAL, which + "tensor map out of step");
    /* the learned bytes: before Prepare, a resized model's tensors
     * still have the declared shapes' */
    TfLiteCustomAllocation a = {arena_ + offsets[j], (size_t)m.sizes[i]};
    if (m.in->SetCustomAllocationForTensor(m.tensors[i], a) != kTfLiteOk)
      return Fail(ARENA_EUNSUPPORTED, which + "TFLite refused an address "
                                              "for tensor " +
                                              std::to_string(m.tensors[i]));
  }
  if (m.in->AllocateTensors() != kTfLiteOk)
    return Fail(ARENA_EUNSUPPORTED, which + "TFLite could not allocate the "
                                            "tensors at their addresses");
  for (size_t i = 0; i < m.tensors.size(); i++) {
    const TfLiteTensor *x = m.in->tensor(m.tensors[i]);
    if (x->allocation_type != kTfLiteCustom ||
        x->data.raw !=
            reinterpret_cast<char *>(arena_ + offsets[m.first + i]))
      info_.n_left++;
  }
  info_.remainder += TfliteArenaBytes(*m.in, nullptr);
  return 0;
}

int TflitePipeline::Build() {
  for (auto &m : models_) {
    m->in.reset();
    m->tensors.clear();
    m->sizes.clear();
  }
  FreeArena();
  memset(&info_, 0, sizeof info_);
  error_.clear();
  if (models_.empty())
    return Fail(ARENA_EINVAL, "no models in the pipeline");
  std::vector<struct planner_tensor> g;
  std::vector<int> owner;
  int64_t base = 0;
  int rc = 0;
  for (size_t k = 0; k < models_.size() && !rc; k++)
    rc = Learn(k, &g, &owner, &base);
  std::vector<uint64_t> offsets;
  if (!rc && g.empty())
    rc = Fail(ARENA_EEMPTY, "no model has a tensor to plan");
  if (!rc)
    rc = Plan(&g, &offsets);
  if (!rc) {
    info_.n_tensors = g.size();
    arena_ = tflite_int::ArenaAlloc(info_.arena_bytes, &arena_len_,
                                    &arena_mapped_);
    if (!arena_)
      rc = Fail(ARENA_ENOMEM, "out of memory for the arena");
  }
  for (size_t k = 0; k < models_.size() && !rc; k++)
    rc = Place(k, offsets, owner);
  if (rc) {
    for (auto &m : models_)
      m->in.reset();
    FreeArena();
  }
  return rc;
}

int TflitePipeline::Invoke(size_t k) {
  if (k >= models_.size() || !models_[k]->in)
    return ARENA_EINVAL;
  int idle = -1;
  if (!running_.compare_exchange_strong(idle, (int)k))
    return ARENA_EBUSY;
  TfLiteStatus st = models_[k]->in->Invoke();
  running_.store(-1);
  return st == kTfLiteOk ? 0 : ARENA_EINTERNAL;
}

}  // namespace arenad

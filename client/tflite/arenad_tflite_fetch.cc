/*
 * arenad_tflite_fetch.cc - what lets arenad::TflitePlanner place a plan
 * without learning the model (see arenad_tflite.h, FETCHED PLANS): the
 * placement record it stores beside a plan it placed (AttachRecord()),
 * and placing a plan fetched by key in the one interpreter Build()
 * returns, after checking the plan's graph against that interpreter
 * (PlaceFetched()).
 *
 * THE RECORD
 *  The prefix "arenad-tflite placement 1", a NUL and the fingerprint of
 *  what learned the plan (a SHA-256 over TFLite's version, the sharing
 *  option, the number of delegates the resolver adds and, for each
 *  operator code of the model, its builtin code, version, custom name
 *  and the kernel's functions as offsets from one function of TFLite's,
 *  so that another build of the kernels is another fingerprint); then
 *  six little-endian u64 (TFLite alone, TFLite's arena of temporaries,
 *  whether the plan holds the temporaries, their count and bytes, the
 *  tensors planned); then the SHA-256 of everything before it. The
 *  buffers themselves, their offsets and the temporaries' offsets are
 *  the plan's graph, which the daemon serves with it and the client
 *  library verifies the plan against.
 *
 * WHAT IS CHECKED
 *  Nothing fetched is trusted to be this interpreter's graph. Before any
 *  address is given: the arena tensors the nodes name and their first
 *  and last nodes equal the graph's tensors and lifetimes. After
 *  AllocateTensors(), before the interpreter is returned: every tensor
 *  and temporary is at its planned address and no larger than its
 *  buffer, the temporaries are exactly the nodes' temporaries at their
 *  nodes, and the in-place pairs are the ones the rules declare for
 *  this interpreter. A plan that fails any check is dropped and the
 *  model learned as if nothing had been fetched.
 */
#include "arenad_tflite.h"
#include "arenad_tflite_int.h"

#include <string.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tflite/c/common.h"
#include "tflite/core/subgraph.h"
#include "tflite/schema/schema_generated.h"
#include "tflite/schema/schema_utils.h"
#include "tflite/version.h"

namespace arenad {

namespace {

constexpr char kMagic[] = "arenad-tflite placement 1"; /* NUL included */
constexpr size_t kFields = 6;                           /* u64 each */

void PutU64(std::string *s, uint64_t v) {
  for (int k = 0; k < 8; k++)
    s->push_back((char)(v >> (8 * k)));
}

uint64_t GetU64(const uint8_t *p) {
  uint64_t v = 0;
  for (int k = 7; k >= 0; k--)
    v = v << 8 | p[k];
  return v;
}

/* A kernel function as an offset from TfLiteIntArrayCreate: the same in
 * every process of one build whatever the load address. */
template <typename F>
uint64_t Offset(F f) {
  if (!f)
    return 0;
  return (uint64_t)(reinterpret_cast<uintptr_t>(f) -
                    reinterpret_cast<uintptr_t>(&TfLiteIntArrayCreate));
}

}  // namespace

const std::string &TflitePlanner::RecordPrefix() {
  std::string fp = std::string("TFLite ") + TFLITE_VERSION_STRING;
  PutU64(&fp, in_place_ ? 1 : 0);
  PutU64(&fp, resolver_.GetDelegateCreators().size());
  const tflite::Model *m = fb_ ? fb_->GetModel() : nullptr;
  if (m && m->operator_codes())
    for (const tflite::OperatorCode *c : *m->operator_codes()) {
      if (!c)
        continue;
      tflite::BuiltinOperator op = tflite::GetBuiltinCode(c);
      const char *custom = c->custom_code() ? c->custom_code()->c_str() : "";
      const TfLiteRegistration *r =
          op == tflite::BuiltinOperator_CUSTOM
              ? resolver_.FindOp(custom, c->version())
              : resolver_.FindOp(op, c->version());
      PutU64(&fp, (uint64_t)op);
      PutU64(&fp, (uint64_t)c->version());
      fp += custom;
      fp.push_back('\0');
      PutU64(&fp, r ? Offset(r->init) : 0);
      PutU64(&fp, r ? Offset(r->free) : 0);
      PutU64(&fp, r ? Offset(r->prepare) : 0);
      PutU64(&fp, r ? Offset(r->invoke) : 0);
    }
  uint8_t d[ARENAD_CLIENT_DIGEST_LEN];
  arenad_client_sha256(fp.data(), fp.size(), d);
  prefix_.assign(kMagic, sizeof kMagic);
  prefix_.append(reinterpret_cast<const char *>(d), sizeof d);
  return prefix_;
}

/* Stores the record of the plan just placed beside it in the daemon's
 * cache (when the daemon planned or served it). A failure only means
 * the next process learns. */
void TflitePlanner::AttachRecord() {
  if (!plan_stored_ || !client_)
    return;
  std::string rec = RecordPrefix();
  PutU64(&rec, info_.tflite_alone);
  PutU64(&rec, temp_arena_);
  PutU64(&rec, temps_pinnable_ ? 1 : 0);
  PutU64(&rec, info_.n_temporaries);
  PutU64(&rec, info_.temporary_bytes);
  PutU64(&rec, n_tensors_);
  uint8_t d[ARENAD_CLIENT_DIGEST_LEN];
  arenad_client_sha256(rec.data(), rec.size(), d);
  rec.append(reinterpret_cast<const char *>(d), sizeof d);
  struct arenad_model_key key =
      tflite_int::PlanKey(identity_, sizeof identity_, in_dims_);
  (void)arenad_client_attach(client_, &key, plan_gd_, plan_od_, rec.data(),
                             rec.size());
}

/* Takes a fetched plan into buffers_ and info_ when its record is whole
 * and consistent with its graph. Returns false otherwise. */
bool TflitePlanner::TakeFetched(const struct arenad_client_fetched &f) {
  size_t head = prefix_.size(), len = head + 8 * kFields;
  if (f.placement_len != len + ARENAD_CLIENT_DIGEST_LEN)
    return false;
  uint8_t d[ARENAD_CLIENT_DIGEST_LEN];
  arenad_client_sha256(f.placement, len, d);
  if (memcmp(d, f.placement + len, sizeof d) != 0)
    return false;
  const uint8_t *p = f.placement + head;
  uint64_t alone = GetU64(p), temp_arena = GetU64(p + 8),
           pinnable = GetU64(p + 16), n_temps = GetU64(p + 24),
           temp_bytes = GetU64(p + 32), n = GetU64(p + 40);
  std::vector<TfliteBuffer> regular, temps;
  for (size_t i = 0; i < f.graph.n_tensors; i++) {
    const struct planner_tensor &t = f.graph.tensors[i];
    if (t.id > (uint32_t)INT32_MAX)
      return false;
    bool temp = t.pinned != PLANNER_NOT_PINNED;
    TfliteBuffer b{(int)t.id, t.size, t.first, t.last,
                   t.has_alias ? (int)t.alias : -1,
                   f.result.plan.offsets[i], false, temp};
    (temp ? temps : regular).push_back(b);
  }
  if (pinnable > 1 || regular.size() != n || (!pinnable && !temps.empty()))
    return false;
  if (test_break_fetched_)
    for (TfliteBuffer &b : regular)
      if (b.last > b.first) {
        b.last--;
        break;
      }
  buffers_ = regular;
  buffers_.insert(buffers_.end(), temps.begin(), temps.end());
  n_tensors_ = regular.size();
  temp_arena_ = temp_arena;
  temps_pinnable_ = pinnable == 1;
  moved_ = 0;
  info_.tflite_alone = alone;
  info_.n_tensors = n_tensors_;
  info_.n_temporaries = (size_t)n_temps;
  info_.temporary_bytes = temp_bytes;
  info_.arena_bytes = info_.plan_bytes = std::max<uint64_t>(
      f.result.plan.arena_bytes, temps_pinnable_ ? temp_arena_ : 0);
  info_.lower_bound = f.result.plan.lower_bound_bytes;
  info_.n_shared = f.result.plan.n_shared;
  info_.planning_us = f.result.planning_us;
  info_.source = TflitePlanSource::kCache;
  return true;
}

/* Whether the fetched graph is in's: before any address is given, its
 * tensors and lifetimes (!after); after AllocateTensors(), sizes, the
 * temporaries and the in-place pairs (after). */
bool TflitePlanner::FetchedMatches(tflite::Interpreter *in, bool after) {
  if (!after) {
    std::vector<int64_t> first, last;
    std::vector<int> cand;
    if (!ArenaTensors(in, &first, &last, &cand) || cand.size() != n_tensors_)
      return false;
    for (size_t i = 0; i < n_tensors_; i++) {
      const TfliteBuffer &b = buffers_[i];
      if (b.tensor != cand[i] || b.first != first[cand[i]] ||
          b.last != last[cand[i]])
        return false;
    }
    return true;
  }
  std::set<std::pair<int, int64_t>> want, have;
  for (const TfliteBuffer &b : buffers_) {
    if (b.size < in->tensor(b.tensor)->bytes)
      return false;
    if (b.temporary)
      have.insert({b.tensor, b.first});
  }
  const tflite::Subgraph &sg = in->primary_subgraph();
  const std::vector<int> &plan = sg.execution_plan();
  for (size_t i = 0; temps_pinnable_ && i < plan.size(); i++) {
    const TfLiteIntArray *a = sg.node_and_registration(plan[i])->first.temporaries;
    for (int k = 0; a && k < a->size; k++) {
      const TfLiteTensor *x = a->data[k] >= 0 ? in->tensor(a->data[k]) : nullptr;
      if (x && x->allocation_type == kTfLiteArenaRw && x->bytes > 0)
        want.insert({a->data[k], (int64_t)i});
    }
  }
  if (want != have)
    return false;
  std::vector<int> alias;
  for (TfliteBuffer &b : buffers_) {
    alias.push_back(b.alias);
    b.alias = -1;
  }
  if (in_place_)
    DeclarePairs(in);
  bool same = true;
  for (size_t i = 0; i < buffers_.size(); i++) {
    same = same && buffers_[i].alias == alias[i];
    buffers_[i].alias = alias[i];
  }
  return same;
}

/* FETCHED PLANS: asks arenad for the plan stored under in's key with a
 * record of this fingerprint and, when its graph is in's, places it in
 * *in. Returns true with *in allocated on it; false with *in untouched
 * (nothing fetched, or refused before any address was given) or reset
 * (refused after), buffers_ and info_ then as before but for
 * info_.fetch_refused and n_interpreters. */
bool TflitePlanner::PlaceFetched(std::unique_ptr<tflite::Interpreter> *in) {
  if (!client_)
    return false;
  KeyOf(in->get());
  struct planner_options o;
  struct arenad_model_key key = CurrentKey(&o);
  const std::string &prefix = RecordPrefix();
  struct arenad_client_fetched f;
  arenad_client_fetched_init(&f);
  if (arenad_client_fetch(client_, &key, &o,
                          reinterpret_cast<const uint8_t *>(prefix.data()),
                          prefix.size(), &f) != 0)
    return false;
  size_t n_interp = info_.n_interpreters;
  bool ok = TakeFetched(f) && FetchedMatches(in->get(), false);
  arenad_client_fetched_cleanup(&f);
  bool with_temps = temps_pinnable_;
  uint64_t beside = with_temps ? 0 : temp_arena_;
  bool saves = ok && ArenaCost(info_.arena_bytes, false) + beside <=
                         info_.tflite_alone;
  bool placed = false;
  if (saves && AllocArena(info_.arena_bytes) == 0) {
    tflite::Interpreter *x = in->get();
    give_ = with_temps;
    given_ = false;
    placed = x->SetAllocator(&allocator_) == kTfLiteOk &&
             GiveAddresses(x) == 0 && x->AllocateTensors() == kTfLiteOk;
    give_ = false;
    placed = placed && Check(x, with_temps) == 0 && (!with_temps || given_) &&
             FetchedMatches(x, true) &&
             ArenaCost(info_.arena_bytes, arena_mapped_) + info_.remainder <=
                 info_.tflite_alone;
    if (!placed)
      in->reset(); /* addresses given: never used */
  }
  if (placed) {
    info_.fetched = true;
    info_.source = TflitePlanSource::kCache;
    plan_placeable_ = true;
    plan_with_temps_ = with_temps;
    return true;
  }
  FreeArena();
  buffers_.clear();
  n_tensors_ = 0;
  memset(&info_, 0, sizeof info_);
  info_.n_interpreters = n_interp;
  info_.fetch_refused = !ok || saves; /* saves: refused after allocating */
  error_.clear();
  return false;
}

}  // namespace arenad

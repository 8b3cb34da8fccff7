/*
 * arenad_tflm.cc - arenad::TflmPlanner, a TFLite Micro memory planner
 * backed by libarenad-client (see arenad_tflm.h).
 *
 * DESIGN
 *  AddBuffer() appends one planner_tensor per buffer (id = TFLM's buffer
 *  index, lifetime shifted by one, pinned at the offline offset if any) to
 *  a heap array. The first query plans the whole array at once through
 *  arenad_client_plan() and converts
 *  the offsets to int. The client verifies every plan it returns against
 *  this very graph (planner_verify), so a plan that reaches TFLM never
 *  overlaps two buffers that are live at once. Only functions of
 *  arenad_client.h are called (planner.h is used for its types). The planner is compiled
 *  with TFLM's flags (no exceptions, no RTTI); it allocates with
 *  malloc/realloc and reports failures instead of throwing.
 *
 *  TEST BUILDS
 *  The hooks that corrupt a plan or its declarations on purpose, for the
 *  negative controls of the tests, are compiled only with
 *  -DARENAD_TFLM_TESTING, into the test binary's own object of this file;
 *  libarenad-tflm.a has no code that could run them (the tflm suite
 *  checks its symbols). Their fields stay in every build, so that the
 *  class has one layout for objects compiled with the define and without
 *  it, which the test binary links together.
 */
#include "arenad_tflm.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tflite.h"
#include "tensorflow/lite/micro/micro_arena_constants.h"
#include "tensorflow/lite/micro/micro_log.h"
#include "tensorflow/lite/schema/schema_generated.h"

namespace arenad {

namespace {

/* The client library's limits on a model key (arenad_client.h). */
constexpr size_t kMaxInputs = 1024;
constexpr size_t kMaxDims = 32;

/* Counts the dims of subgraph 0's inputs; 0 and sets *bad on a limit. */
size_t CountDims(const tflite::SubGraph *sg, const char **bad) {
  size_t n = 0;
  const auto *in = sg->inputs();
  const auto *tensors = sg->tensors();
  *bad = NULL;
  if (!in)
    return 0;
  if (in->size() > kMaxInputs) {
    *bad = "the model has more than 1024 inputs";
    return 0;
  }
  for (flatbuffers::uoffset_t i = 0; i < in->size(); i++) {
    int32_t t = in->Get(i);
    if (!tensors || t < 0 || (flatbuffers::uoffset_t)t >= tensors->size()) {
      *bad = "an input of subgraph 0 names a tensor that does not exist";
      return 0;
    }
    const auto *shape = tensors->Get((flatbuffers::uoffset_t)t)->shape();
    size_t r = shape ? shape->size() : 0;
    if (r > kMaxDims) {
      *bad = "an input of subgraph 0 has more than 32 dimensions";
      return 0;
    }
    n += r;
  }
  return n;
}

}  // namespace

const char *TflmPlanSourceName(TflmPlanSource s) {
  switch (s) {
    case TflmPlanSource::kDaemon:
      return "daemon";
    case TflmPlanSource::kCache:
      return "cache";
    case TflmPlanSource::kLocal:
      return "local";
    case TflmPlanSource::kNone:
      break;
  }
  return "none";
}

TflmPlanner::TflmPlanner(arenad_client_t *client, const void *model,
                         size_t model_len)
    : client_(client),
      dims_(NULL),
      inputs_(NULL),
      n_inputs_(0),
      buffers_(NULL),
      n_buffers_(0),
      cap_buffers_(0),
      offsets_(NULL),
      planned_(false),
      test_overlap_(false),
      test_alias_out_(-1),
      test_alias_in_(-1),
      test_hide_aliases_(false),
      in_place_(true),
      cands_(NULL),
      n_cands_(0),
      status_(0),
      key_status_(0),
      head_bytes_(0) {
  memset(&info_, 0, sizeof info_);
  error_[0] = '\0';
  arenad_client_result_init(&result_);
  key_status_ = client ? ReadKey(model, model_len)
                       : Fail(ARENA_EINVAL, "no client handle");
  status_ = key_status_;
  if (!status_)
    ReadPairs(model, model_len);
}

int TflmPlanner::SetModel(const void *model, size_t model_len) {
  free(cands_);
  free(inputs_);
  free(dims_);
  cands_ = NULL;
  inputs_ = NULL;
  dims_ = NULL;
  n_cands_ = 0;
  n_inputs_ = 0;
  n_buffers_ = 0;
  planned_ = false;
  status_ = 0;
  error_[0] = '\0';
  memset(&info_, 0, sizeof info_);
  arenad_client_result_cleanup(&result_);
  key_status_ = client_ ? ReadKey(model, model_len)
                        : Fail(ARENA_EINVAL, "no client handle");
  status_ = key_status_;
  if (!status_)
    ReadPairs(model, model_len);
  return status_;
}

TflmPlanner::~TflmPlanner() {
  arenad_client_result_cleanup(&result_);
  free(cands_);
  free(offsets_);
  free(buffers_);
  free(inputs_);
  free(dims_);
}

int TflmPlanner::Fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(error_, sizeof error_, fmt, ap);
  va_end(ap);
  status_ = code;
  MicroPrintf("arenad planner: %s", error_);
  return code;
}

int TflmPlanner::ReadKey(const void *model, size_t len) {
  if (!model || len == 0 || len > FLATBUFFERS_MAX_BUFFER_SIZE)
    return Fail(ARENA_EINVAL, "no model bytes, or more than 2 GiB");
  flatbuffers::Verifier v(static_cast<const uint8_t *>(model), len);
  if (!tflite::VerifyModelBuffer(v))
    return Fail(ARENA_EPARSE, "the model is not a valid TFLite FlatBuffer");
  const tflite::Model *m = tflite::GetModel(model);
  if (!m->subgraphs() || m->subgraphs()->size() == 0)
    return Fail(ARENA_EPARSE, "the model has no subgraph");
  const tflite::SubGraph *sg = m->subgraphs()->Get(0);
  const char *bad;
  size_t n_dims = CountDims(sg, &bad);
  if (bad)
    return Fail(ARENA_EINVAL, "%s", bad);
  n_inputs_ = sg->inputs() ? sg->inputs()->size() : 0;
  dims_ = static_cast<int64_t *>(malloc((n_dims ? n_dims : 1) * sizeof *dims_));
  inputs_ = static_cast<struct arenad_dims *>(
      malloc((n_inputs_ ? n_inputs_ : 1) * sizeof *inputs_));
  if (!dims_ || !inputs_)
    return Fail(ARENA_ENOMEM, "out of memory");
  size_t at = 0;
  for (size_t i = 0; i < n_inputs_; i++) {
    int32_t t = sg->inputs()->Get((flatbuffers::uoffset_t)i);
    const auto *shape = sg->tensors()->Get((flatbuffers::uoffset_t)t)->shape();
    size_t r = shape ? shape->size() : 0;
    inputs_[i].dims = dims_ + at;
    inputs_[i].n_dims = r;
    for (size_t k = 0; k < r; k++) {
      int32_t d = shape->Get((flatbuffers::uoffset_t)k);
      dims_[at++] = d < 0 ? 0 : d; /* dynamic (-1) dims count as 0 */
    }
  }
  arenad_client_sha256(model, len, model_hash_);
  return 0;
}

namespace {

/* The index of the Cand made from tensor id among m's planned tensors,
 * which the reader lists by ascending tensor index, or -1. */
int64_t CandOf(const struct planner_tflite_model *m, uint32_t id) {
  size_t lo = 0, hi = m->n_planned;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (m->tensors[mid].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < m->n_planned && m->tensors[lo].id == id ? (int64_t)lo : -1;
}

}  // namespace

/* The reader's tensors of subgraph 0 and the pairs it allows (see
 * IN-PLACE SHARING). A model the reader refuses shares nothing. */
void TflmPlanner::ReadPairs(const void *model, size_t len) {
  struct planner_tflite_options o;
  memset(&o, 0, sizeof o);
  o.keep_dequant = 1;  /* TFLM allocates them like any other output */
  o.skip_variable = 1; /* TFLM keeps them out of the head */
  struct planner_tflite_model m;
  planner_tflite_init(&m);
  if (planner_tflite_read(model, len, &o, &m, NULL) == 0 && m.n_planned) {
    cands_ = static_cast<Cand *>(malloc(m.n_planned * sizeof *cands_));
    for (size_t i = 0; cands_ && i < m.n_planned; i++) {
      const struct planner_tensor *t = &m.tensors[i];
      if (i && t->id <= m.tensors[i - 1].id) { /* not by index: give up */
        free(cands_);
        cands_ = NULL;
        break;
      }
      cands_[i].size = (t->size + 15) / 16 * 16;
      cands_[i].first = t->first + 1;
      cands_[i].last = t->last + 1;
      cands_[i].in = t->has_alias ? CandOf(&m, t->alias) : -1;
    }
    n_cands_ = cands_ ? m.n_planned : 0;
  }
  planner_tflite_cleanup(&m);
}

/* Matches the buffers TFLM added to the reader's tensors, in order, and
 * declares the pairs whose both ends matched. A buffer that does not
 * match the next tensor is left alone (a tensor nothing uses, another
 * subgraph's, a scratch buffer), and an empty tensor, which TFLM never
 * adds, matches none; the graph's inputs come in scope 0, where the
 * reader has them in operator 0's scope. */
void TflmPlanner::DeclarePairs() {
  for (size_t k = 0; k < n_buffers_; k++)
    if (buffers_[k].pinned != PLANNER_NOT_PINNED)
      return; /* an offline plan is the model's own: keep it */
  int64_t *buf_of = static_cast<int64_t *>(
      malloc((n_cands_ ? n_cands_ : 1) * sizeof *buf_of));
  if (!buf_of)
    return; /* no sharing is always a valid plan */
  size_t p = 0;
  for (size_t k = 0; k < n_buffers_ && p < n_cands_; k++) {
    while (p < n_cands_ && cands_[p].size == 0) /* TFLM adds no empty one */
      buf_of[p++] = -1;
    if (p == n_cands_)
      break;
    const struct planner_tensor *b = &buffers_[k];
    const Cand *c = &cands_[p];
    int64_t first = b->first - 1, last = b->last - 1; /* TFLM's scopes */
    bool first_ok = first == c->first || (first == 0 && c->first == 1);
    if (b->size == c->size && first_ok && last == c->last)
      buf_of[p++] = (int64_t)k;
  }
  for (size_t q = 0; q < p; q++) {
    int64_t in = cands_[q].in;
    if (in < 0 || (size_t)in >= p || buf_of[q] < 0 || buf_of[in] < 0)
      continue;
    struct planner_tensor *out = &buffers_[buf_of[q]];
    out->alias = (uint32_t)buf_of[in];
    out->has_alias = 1;
  }
  free(buf_of);
}

int TflmPlanner::AliasOf(int buffer) {
  if (PlanIfNeeded() || buffer < 0 || (size_t)buffer >= n_buffers_ ||
      !buffers_[buffer].has_alias)
    return -1;
#ifdef ARENAD_TFLM_TESTING
  if (test_hide_aliases_)
    return -1;
#endif
  return (int)buffers_[buffer].alias;
}

TfLiteStatus TflmPlanner::Init(unsigned char *, int scratch_buffer_size) {
  /* TFLM offers the planner the arena it has left for the head: a plan
   * needs to fit in it (UNUSABLE PLANS). */
  head_bytes_ = scratch_buffer_size > 0 ? (uint64_t)scratch_buffer_size : 0;
  n_buffers_ = 0;
  planned_ = false;
  status_ = key_status_;
  if (!status_)
    error_[0] = '\0';
  memset(&info_, 0, sizeof info_);
  arenad_client_result_cleanup(&result_);
  return status_ ? kTfLiteError : kTfLiteOk;
}

int TflmPlanner::Add(int size, int first, int last, int64_t pinned) {
  if (status_)
    return status_;
  if (size < 0 || first < -1 || last < first)
    return Fail(ARENA_EINVAL,
                "buffer %zu: size %d, lifetime [%d, %d] is not a buffer",
                n_buffers_, size, first, last);
  if (pinned >= 0 && pinned % tflite::MicroArenaBufferAlignment() != 0)
    return Fail(ARENA_EPINNED,
                "buffer %zu: offline offset %lld is not a multiple of %d",
                n_buffers_, (long long)pinned,
                (int)tflite::MicroArenaBufferAlignment());
  if (n_buffers_ == cap_buffers_) {
    size_t cap = cap_buffers_ ? 2 * cap_buffers_ : 64;
    void *b = realloc(buffers_, cap * sizeof *buffers_);
    if (!b)
      return Fail(ARENA_ENOMEM, "out of memory");
    buffers_ = static_cast<struct planner_tensor *>(b);
    cap_buffers_ = cap;
  }
  struct planner_tensor *t = &buffers_[n_buffers_];
  t->id = (uint32_t)n_buffers_;
  t->size = (uint64_t)size;
  t->first = (int64_t)first + 1;
  t->last = (int64_t)last + 1;
  t->align = 0;
  t->pinned = pinned >= 0 ? pinned : PLANNER_NOT_PINNED;
  t->alias = 0;
  t->has_alias = 0;
  n_buffers_++;
  planned_ = false;
  return 0;
}

TfLiteStatus TflmPlanner::AddBuffer(int size, int first_time_used,
                                    int last_time_used) {
  return Add(size, first_time_used, last_time_used, -1) ? kTfLiteError
                                                        : kTfLiteOk;
}

TfLiteStatus TflmPlanner::AddBuffer(int size, int first_time_used,
                                    int last_time_used, int offline_offset) {
  if (offline_offset < 0) {
    Fail(ARENA_EINVAL, "buffer %zu: negative offline offset %d", n_buffers_,
         offline_offset);
    return kTfLiteError;
  }
  return Add(size, first_time_used, last_time_used, offline_offset)
             ? kTfLiteError
             : kTfLiteOk;
}

int TflmPlanner::Plan() {
  memset(&info_, 0, sizeof info_);
  arenad_client_result_cleanup(&result_);
  free(offsets_);
  offsets_ = static_cast<int *>(
      malloc((n_buffers_ ? n_buffers_ : 1) * sizeof *offsets_));
  if (!offsets_)
    return Fail(ARENA_ENOMEM, "out of memory");
  info_.n_buffers = n_buffers_;
  if (n_buffers_ == 0) {
    info_.source = TflmPlanSource::kLocal; /* nothing to place */
    return 0;
  }
  for (size_t k = 0; k < n_buffers_; k++)
    buffers_[k].has_alias = 0;
  if (in_place_)
    DeclarePairs();
#ifdef ARENAD_TFLM_TESTING
  if (test_alias_out_ >= 0 && (size_t)test_alias_out_ < n_buffers_ &&
      test_alias_in_ >= 0 && (size_t)test_alias_in_ < n_buffers_) {
    buffers_[test_alias_out_].alias = (uint32_t)test_alias_in_;
    buffers_[test_alias_out_].has_alias = 1;
  }
#endif
  struct planner_graph g = {buffers_, n_buffers_};
  struct planner_options o;
  arenad_client_plan_options_init(&o);
  o.alignment = tflite::MicroArenaBufferAlignment();
  o.in_place = in_place_ ? 1 : 0;
  struct arenad_model_key k = {model_hash_, sizeof model_hash_, inputs_,
                               n_inputs_};
  /* A plan TFLM cannot address (int offsets), or larger than the head
   * it has room for, is a miss: the client plans it here and reports
   * it to arenad (UNUSABLE PLANS). */
  uint64_t max = (uint64_t)INT_MAX;
  if (head_bytes_ && head_bytes_ < max)
    max = head_bytes_;
  int rc = arenad_client_plan_within(client_, &g, &o, &k, max, &result_);
  if (rc) {
    const char *why = arenad_client_errmsg(client_);
    return Fail(rc, "%s", why[0] ? why : arenad_client_strerror(rc));
  }
  if (result_.local && result_.fallback_reason == ARENA_EUNUSABLE)
    MicroPrintf("arenad planner: %s", arenad_client_errmsg(client_));
  const struct planner_plan *p = &result_.plan;
  if (p->arena_bytes > (uint64_t)INT_MAX)
    return Fail(ARENA_EOVERFLOW, "the plan needs %llu bytes, beyond the int "
                "offsets of TFLite Micro", (unsigned long long)p->arena_bytes);
  for (size_t i = 0; i < n_buffers_; i++)
    offsets_[i] = (int)p->offsets[i];
  info_.source = result_.local    ? TflmPlanSource::kLocal
                 : result_.cached ? TflmPlanSource::kCache
                                  : TflmPlanSource::kDaemon;
  info_.fallback_reason = result_.local ? result_.fallback_reason : 0;
  info_.arena_bytes = p->arena_bytes;
  info_.lower_bound_bytes = p->lower_bound_bytes;
  info_.proven_optimal = p->proven_optimal;
  info_.algo = p->algo;
  info_.planning_us = result_.planning_us;
  info_.n_shared = p->n_shared;
  info_.lower_bound_unshared_bytes = p->lower_bound_unshared_bytes;
#ifdef ARENAD_TFLM_TESTING
  if (test_overlap_)
    Overlap();
#endif
  return 0;
}

#ifdef ARENAD_TFLM_TESTING
/* Test builds only (never in libarenad-tflm.a): puts the first buffer
 * that shares time with an earlier one at that earlier buffer's offset. */
void TflmPlanner::Overlap() {
  for (size_t j = 1; j < n_buffers_; j++)
    for (size_t i = 0; i < j; i++) {
      const struct planner_tensor *a = &buffers_[i], *b = &buffers_[j];
      if (a->size && b->size && a->first <= b->last && b->first <= a->last &&
          offsets_[i] != offsets_[j]) {
        offsets_[j] = offsets_[i];
        return;
      }
    }
}
#endif

int TflmPlanner::PlanIfNeeded() {
  if (status_)
    return status_;
  if (planned_)
    return 0;
  int rc = Plan();
  if (rc) {
    memset(&info_, 0, sizeof info_);
    return rc;
  }
  planned_ = true;
  return 0;
}

size_t TflmPlanner::GetMaximumMemorySize() {
  return PlanIfNeeded() ? 0 : (size_t)info_.arena_bytes;
}

int TflmPlanner::GetBufferCount() { return (int)n_buffers_; }

TfLiteStatus TflmPlanner::GetOffsetForBuffer(int buffer_index, int *offset) {
  if (PlanIfNeeded())
    return kTfLiteError;
  if (buffer_index < 0 || (size_t)buffer_index >= n_buffers_) {
    MicroPrintf("arenad planner: no buffer %d (%zu buffers)", buffer_index,
                n_buffers_);
    return kTfLiteError;
  }
  *offset = offsets_[buffer_index];
  return kTfLiteOk;
}

const TflmPlanInfo &TflmPlanner::info() {
  (void)PlanIfNeeded();
  return info_;
}

void TflmPlanner::PrintMemoryPlan() {
  if (PlanIfNeeded()) {
    MicroPrintf("arenad planner: no plan: %s", error_);
    return;
  }
  MicroPrintf("arenad planner: %zu buffers, arena %llu bytes, lower bound "
              "%llu bytes, %s, from %s",
              n_buffers_, (unsigned long long)info_.arena_bytes,
              (unsigned long long)info_.lower_bound_bytes,
              arenad_client_algo_name(info_.algo),
              TflmPlanSourceName(info_.source));
  for (size_t i = 0; i < n_buffers_; i++)
    MicroPrintf("  buffer %zu: %llu bytes at %d, scopes %lld..%lld%s%s", i,
                (unsigned long long)buffers_[i].size, offsets_[i],
                (long long)buffers_[i].first - 1,
                (long long)buffers_[i].last - 1,
                buffers_[i].pinned != PLANNER_NOT_PINNED ? " (offline)" : "",
                buffers_[i].has_alias &&
                        offsets_[buffers_[i].alias] == offsets_[i]
                    ? " (in place)"
                    : "");
}

}  // namespace arenad

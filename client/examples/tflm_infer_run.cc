/*
 * tflm_infer_run.cc - loading and running a model on TensorFlow Lite
 * Micro with a caller's memory planner (see tflm_infer_run.h).
 *
 * The operator list below is the one the TFLM build compiles (the
 * Makefile section "TensorFlow Lite Micro"): the reference kernels of
 * every builtin operator the bundled models and MediaPipe's vision models
 * use, with DEQUANTIZE (which adds FLOAT16 input) and MediaPipe's custom
 * Convolution2DTransposeBias from arenad's own kernels
 * (client/tflm/ops/arenad_tflm_ops.h). A model that needs any other
 * operator is refused before TFLM sees it, with the operator's name,
 * instead of TFLM's "Didn't find op" deep inside AllocateTensors.
 */
#include "tflm_infer_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memory>
#include <new>
#include <string>
#include <vector>

#include "arenad_tflm_ops.h"
#include "tensorflow/lite/micro/micro_allocator.h"
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"
#include "tensorflow/lite/schema/schema_utils.h"

namespace tflm_infer {

namespace {

constexpr int kMaxOps = 64; /* resolver capacity (44 registered below) */
using Resolver = tflite::MicroMutableOpResolver<kMaxOps>;

TfLiteStatus AddOps(Resolver *r) {
  const TfLiteStatus rc[] = {
      arenad::AddTflmOps(r), /* DEQUANTIZE, Convolution2DTransposeBias */
      r->AddAdd(),           r->AddAveragePool2D(),
      r->AddCast(),          r->AddConcatenation(),
      r->AddConv2D(),        r->AddDepthToSpace(),
      r->AddDepthwiseConv2D(), r->AddDiv(),
      r->AddElu(),
      r->AddExpandDims(),    r->AddFullyConnected(),
      r->AddGather(),        r->AddHardSwish(),
      r->AddLeakyRelu(),     r->AddLogistic(),
      r->AddMaxPool2D(),     r->AddMaximum(),
      r->AddMean(),          r->AddMinimum(),
      r->AddMirrorPad(),     r->AddMul(),
      r->AddPack(),          r->AddPad(),
      r->AddPrelu(),         r->AddQuantize(),
      r->AddRelu(),          r->AddRelu6(),
      r->AddReshape(),       r->AddResizeBilinear(),
      r->AddResizeNearestNeighbor(), r->AddSoftmax(),
      r->AddSplit(),         r->AddSplitV(),
      r->AddSqueeze(),       r->AddStridedSlice(),
      r->AddSub(),           r->AddSvdf(),
      r->AddTanh(),          r->AddTranspose(),
      r->AddTransposeConv(), r->AddUnidirectionalSequenceLSTM(),
      r->AddUnpack(),
  };
  for (TfLiteStatus s : rc)
    if (s != kTfLiteOk)
      return kTfLiteError;
  return kTfLiteOk;
}

/* The name of operator code c, as TFLM's tables spell it (a custom
 * operator by its custom code). */
const char *OpName(const tflite::OperatorCode *c) {
  tflite::BuiltinOperator op = tflite::GetBuiltinCode(c);
  if (op == tflite::BuiltinOperator_CUSTOM)
    return c->custom_code() ? c->custom_code()->c_str() : "";
  return tflite::EnumNameBuiltinOperator(op);
}

/* Whether r can run operator code c. */
bool HasOp(const tflite::OperatorCode *c, const Resolver &r) {
  tflite::BuiltinOperator op = tflite::GetBuiltinCode(c);
  if (op == tflite::BuiltinOperator_CUSTOM)
    return r.FindOp(OpName(c)) != NULL;
  return r.FindOp(op) != NULL;
}

/* Writes "operator A is" or "operators A, B and C are" into msg (len
 * bytes, truncated with "..." when they do not fit) for every operator
 * code of m that r cannot run, each named once, in the model's order.
 * Returns how many there are (0: msg untouched). */
int MissingOps(const tflite::Model *m, const Resolver &r, char *msg,
               size_t len) {
  const auto *codes = m->operator_codes();
  std::vector<const char *> names;
  for (flatbuffers::uoffset_t i = 0; codes && i < codes->size(); i++) {
    const tflite::OperatorCode *c = codes->Get(i);
    if (HasOp(c, r))
      continue;
    const char *name = OpName(c);
    bool seen = false;
    for (const char *n : names)
      seen = seen || strcmp(n, name) == 0;
    if (!seen)
      names.push_back(name);
  }
  size_t n = names.size();
  if (n == 0)
    return 0;
  std::string s = n == 1 ? "operator " : "operators ";
  for (size_t i = 0; i < n; i++) {
    if (i > 0)
      s += i + 1 == n ? " and " : ", ";
    s += names[i];
  }
  s += n == 1 ? " is" : " are";
  if (s.size() >= len && len > 4)
    s = s.substr(0, len - 4) + "...";
  snprintf(msg, len, "%s", s.c_str());
  return (int)n;
}

/* splitmix64: a small seeded generator. */
uint64_t Next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void FillInput(TfLiteTensor *t, uint64_t seed) {
  uint64_t s = seed;
  if (t->type == kTfLiteFloat32) {
    float *f = t->data.f;
    for (size_t i = 0; i < t->bytes / sizeof *f; i++)
      f[i] = (float)((double)(Next(&s) >> 40) / (double)(1u << 23) - 1.0);
    return;
  }
  uint8_t *b = t->data.uint8;
  for (size_t i = 0; i < t->bytes; i++)
    b[i] = (uint8_t)(Next(&s) >> 56);
}

/* Passes every call to the caller's planner and records, into a Run,
 * the buffers TFLM adds and the offsets and head size it reads. */
class Tap : public tflite::MicroMemoryPlanner {
 public:
  Tap(tflite::MicroMemoryPlanner *inner, Run *out) : in_(inner), out_(out) {}
  /* Records the next plan into out (borrowed) instead. */
  void Retarget(Run *out) { out_ = out; }
  TfLiteStatus Init(unsigned char *s, int n) override {
    out_->n_buffers = 0;
    out_->plan_asked = 0;
    return in_->Init(s, n);
  }
  TfLiteStatus AddBuffer(int size, int first, int last) override {
    if (!Keep(size, first, last, -1))
      return kTfLiteError;
    return in_->AddBuffer(size, first, last);
  }
  TfLiteStatus AddBuffer(int size, int first, int last, int off) override {
    if (!Keep(size, first, last, off))
      return kTfLiteError;
    return in_->AddBuffer(size, first, last, off);
  }
  size_t GetMaximumMemorySize() override {
    out_->plan_asked = 1;
    return out_->head_bytes = in_->GetMaximumMemorySize();
  }
  int GetBufferCount() override { return in_->GetBufferCount(); }
  TfLiteStatus GetOffsetForBuffer(int i, int *off) override {
    out_->plan_asked = 1;
    TfLiteStatus st = in_->GetOffsetForBuffer(i, off);
    if (st == kTfLiteOk && i >= 0 && (size_t)i < out_->n_buffers)
      out_->buffers[i].offset = *off;
    return st;
  }
  bool preserves_all_tensors() const override {
    return in_->preserves_all_tensors();
  }
  void PrintMemoryPlan() override { in_->PrintMemoryPlan(); }

 private:
  bool Keep(int size, int first, int last, int off) {
    if ((out_->n_buffers & (out_->n_buffers + 1)) == 0) { /* 0, 1, 3, 7.. */
      void *b = realloc(out_->buffers,
                        (2 * out_->n_buffers + 1) * sizeof *out_->buffers);
      if (!b)
        return false;
      out_->buffers = static_cast<PlannedBuffer *>(b);
    }
    out_->buffers[out_->n_buffers++] = {size, first, last, off, -1};
    return true;
  }
  tflite::MicroMemoryPlanner *in_; /* borrowed */
  Run *out_;                       /* borrowed */
};

int Fail(Run *out, int status, const char *what) {
  snprintf(out->error, sizeof out->error, "%s", what);
  return status;
}

/* Appends every output of invoke k to out. */
int KeepOutputs(tflite::MicroInterpreter *in, int k, Run *out) {
  size_t n = in->outputs_size(), add = 0;
  for (size_t i = 0; i < n; i++)
    add += in->output(i)->bytes;
  void *o = realloc(out->outputs, out->outputs_len + add + 1);
  void *inf = realloc(out->info, (out->n_info + n + 1) * sizeof *out->info);
  if (o)
    out->outputs = static_cast<uint8_t *>(o);
  if (inf)
    out->info = static_cast<OutputInfo *>(inf);
  if (!o || !inf)
    return Fail(out, kRunNoMemory, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const TfLiteTensor *t = in->output(i);
    OutputInfo *e = &out->info[out->n_info++];
    memset(e, 0, sizeof *e);
    e->invoke = k;
    e->index = (int)i;
    e->type = t->type;
    e->rank = t->dims ? t->dims->size : 0;
    for (int d = 0; d < e->rank && d < kMaxDims; d++)
      e->dims[d] = t->dims->data[d];
    e->offset = out->outputs_len;
    e->bytes = t->bytes;
    memcpy(out->outputs + out->outputs_len, t->data.raw, t->bytes);
    out->outputs_len += t->bytes;
  }
  return kRunOk;
}

}  // namespace

int LoadModel(const char *path, Model *m, char *err) {
  m->data = NULL;
  m->len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, kErrLen, "cannot open: %s", strerror(errno));
    return kRunUnreadable;
  }
  long len = -1;
  if (fseek(f, 0, SEEK_END) == 0)
    len = ftell(f);
  if (len <= 0 || len > (long)FLATBUFFERS_MAX_BUFFER_SIZE ||
      fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    snprintf(err, kErrLen, "%s", len == 0 ? "empty file" : "cannot read");
    return len == 0 ? kRunInvalid : kRunUnreadable;
  }
  size_t cap = ((size_t)len + 15) / 16 * 16;
  m->data = static_cast<uint8_t *>(aligned_alloc(16, cap));
  if (!m->data) {
    fclose(f);
    snprintf(err, kErrLen, "out of memory");
    return kRunNoMemory;
  }
  size_t got = fread(m->data, 1, (size_t)len, f);
  fclose(f);
  m->len = (size_t)len;
  if (got != m->len) {
    FreeModel(m);
    snprintf(err, kErrLen, "short read");
    return kRunUnreadable;
  }
  flatbuffers::Verifier v(m->data, m->len);
  if (!tflite::VerifyModelBuffer(v)) {
    FreeModel(m);
    snprintf(err, kErrLen, "not a valid TFLite model (the FlatBuffers "
             "verifier rejects it)");
    return kRunInvalid;
  }
  return kRunOk;
}

void FreeModel(Model *m) {
  free(m->data);
  m->data = NULL;
  m->len = 0;
}

int RunModel(const Model &m, tflite::MicroMemoryPlanner *planner,
             uint8_t *arena, size_t arena_len, uint64_t seed, int invokes,
             Run *out) {
  memset(out, 0, sizeof *out);
  const tflite::Model *model = tflite::GetModel(m.data);
  Resolver resolver;
  if (AddOps(&resolver) != kTfLiteOk)
    return Fail(out, kRunNoMemory, "cannot register the operators");
  char missing[sizeof out->error - 48];
  if (MissingOps(model, resolver, missing, sizeof missing) > 0) {
    snprintf(out->error, sizeof out->error,
             "%s not in this build of TFLite Micro", missing);
    return kRunUnsupported;
  }
  Tap tap(planner, out);
  tflite::MicroAllocator *alloc =
      tflite::MicroAllocator::Create(arena, arena_len, &tap);
  if (!alloc)
    return Fail(out, kRunAllocate, "the arena is too small for the allocator");
  tflite::MicroInterpreter in(model, resolver, alloc);
  if (in.AllocateTensors() != kTfLiteOk)
    return Fail(out, kRunAllocate, "AllocateTensors failed");
  out->arena_used_bytes = in.arena_used_bytes();
  for (int k = 0; k < invokes; k++) {
    for (size_t i = 0; i < in.inputs_size(); i++)
      FillInput(in.input(i), seed * 1000003u + (uint64_t)k * 1009u + i);
    if (in.Invoke() != kTfLiteOk)
      return Fail(out, kRunInvoke, "Invoke failed");
    int rc = KeepOutputs(&in, k, out);
    if (rc)
      return rc;
  }
  return kRunOk;
}

namespace {

/* Invokes in (borrowed) once, as invoke k of a run with this seed, and
 * keeps its outputs in out. Returns a RunStatus. */
int InvokeOnce(tflite::MicroInterpreter *in, uint64_t seed, int k, Run *out) {
  for (size_t i = 0; i < in->inputs_size(); i++)
    FillInput(in->input(i), seed * 1000003u + (uint64_t)k * 1009u + i);
  if (in->Invoke() != kTfLiteOk)
    return Fail(out, kRunInvoke, "Invoke failed");
  return KeepOutputs(in, k, out);
}

}  // namespace

int RunTenants(const Model *models, size_t n,
               tflite::MicroMemoryPlanner *planner, SelectModel select,
               void *ctx, uint8_t *arena, size_t arena_len, uint64_t seed,
               int invokes, Run *out) {
  for (size_t i = 0; i < n; i++)
    memset(&out[i], 0, sizeof out[i]);
  if (n == 0)
    return kRunOk;
  Resolver resolver;
  if (AddOps(&resolver) != kTfLiteOk)
    return Fail(&out[0], kRunNoMemory, "cannot register the operators");
  for (size_t i = 0; i < n; i++) {
    char missing[sizeof out->error - 48];
    if (MissingOps(tflite::GetModel(models[i].data), resolver, missing,
                   sizeof missing) > 0) {
      snprintf(out[i].error, sizeof out[i].error,
               "%s not in this build of TFLite Micro", missing);
      return kRunUnsupported;
    }
  }
  Tap tap(planner, &out[0]);
  tflite::MicroAllocator *alloc =
      tflite::MicroAllocator::Create(arena, arena_len, &tap);
  if (!alloc)
    return Fail(&out[0], kRunAllocate,
                "the arena is too small for the allocator");
  /* Every interpreter on the one allocator: their persistent parts from
   * the arena's tail, one after another, and one head for all, as large
   * as the largest model's plan. */
  std::vector<std::unique_ptr<tflite::MicroInterpreter>> in(n);
  for (size_t i = 0; i < n; i++) {
    tap.Retarget(&out[i]);
    if (select && select(ctx, i) != 0)
      return Fail(&out[i], kRunAllocate, "the planner refused the model");
    in[i].reset(new (std::nothrow) tflite::MicroInterpreter(
        tflite::GetModel(models[i].data), resolver, alloc));
    if (!in[i])
      return Fail(&out[i], kRunNoMemory, "out of memory");
    if (in[i]->AllocateTensors() != kTfLiteOk)
      return Fail(&out[i], kRunAllocate, "AllocateTensors failed");
  }
  for (size_t i = 0; i < n; i++)
    out[i].arena_used_bytes = in[n - 1]->arena_used_bytes();
  /* In turn: each model's inputs are filled before its invoke and its
   * outputs copied after it, as the head they live in is the next
   * model's too. */
  for (int k = 0; k < invokes; k++)
    for (size_t i = 0; i < n; i++) {
      int rc = InvokeOnce(in[i].get(), seed, k, &out[i]);
      if (rc)
        return rc;
    }
  return kRunOk;
}

void FreeRun(Run *r) {
  free(r->outputs);
  free(r->info);
  free(r->buffers);
  memset(r, 0, sizeof *r);
}

}  // namespace tflm_infer

/*
 * check_tflm_gen.cc - the TFLM suite's generated models: small float
 * models of CONCATENATION, STRIDED_SLICE, PAD and ADD whose branches
 * leave tensors of many sizes live at once, where TFLite Micro's own
 * GreedyMemoryPlanner fragments its arena and arenad finds a smaller
 * one. The bundled real models are chains on which arenad's offsets equal
 * TFLM's own, so only these models make TFLM run on a layout of
 * arenad's that differs from its own planner's.
 *
 * Each model is built in memory with the FlatBuffers object API of the
 * TFLite schema, from a seeded generator: the same seed gives the same
 * model. Every tensor is [1, 4, 4, C] float32, C from 1 to 24; an
 * operator takes one or two tensors made before it (often recent ones,
 * sometimes old ones, so lifetimes overlap in many ways) and the model's
 * output concatenates the last ones made.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "check_tflm.h"
#include "flatbuffers/flatbuffers.h"
#include "tensorflow/lite/micro/memory_planner/greedy_memory_planner.h"
#include "tensorflow/lite/schema/schema_generated.h"
#include "arenad_tflm.h"
#include "tflm_infer_run.h"

extern "C" {
#include "testutil.h"
}

namespace check_tflm {
namespace {

constexpr int kHW = 4;          /* every tensor is [1, kHW, kHW, C] */
constexpr int kMaxC = 24;       /* channels */
constexpr int kOps = 18;        /* operators before the final concat */
constexpr int kGenModels = 24;  /* seeds tried */

/* A tensor, an operator and a model under construction, in plain
 * structs: the FlatBuffers builder writes children before parents, so the
 * model is serialized once it is complete (Finish). */
struct GTensor {
  std::vector<int32_t> shape;
  tflite::TensorType type;
  uint32_t buffer; /* 0: none (an activation) */
  float scale;     /* > 0: quantized with this scale, zero point 0 */
};

struct GOp {
  int code; /* index in Gen::codes */
  std::vector<int32_t> in, out;
  tflite::BuiltinOperator kind;
  int axis;                  /* CONCATENATION */
  std::vector<int32_t> dims; /* RESHAPE's new shape, SQUEEZE's dims */
};

struct Gen {
  std::vector<GTensor> tensors;
  std::vector<std::vector<uint8_t>> buffers; /* [0] is the empty one */
  std::vector<GOp> ops;
  std::vector<tflite::BuiltinOperator> codes;
  std::vector<int32_t> inputs;
  std::vector<int> chans; /* channels of each activation tensor */
  std::vector<int> acts;  /* their tensor indexes */
  uint64_t rs = 0;
};

int Rand(Gen *z, int lo, int hi) {
  return (int)tu_rand_range(&z->rs, (uint64_t)lo, (uint64_t)hi);
}

int AddBuffer(Gen *z, const void *data, size_t len) {
  const uint8_t *p = static_cast<const uint8_t *>(data);
  z->buffers.emplace_back(p, p + len);
  return (int)z->buffers.size() - 1;
}

int AddTensor(Gen *z, std::vector<int32_t> shape, tflite::TensorType type,
              int buffer) {
  z->tensors.push_back({shape, type, (uint32_t)buffer, 0.0f});
  return (int)z->tensors.size() - 1;
}

/* A new activation tensor of c channels. */
int Act(Gen *z, int c) {
  int t = AddTensor(z, {1, kHW, kHW, c}, tflite::TensorType_FLOAT32, 0);
  z->acts.push_back(t);
  z->chans.push_back(c);
  return t;
}

int ConstI32(Gen *z, std::vector<int32_t> shape,
             const std::vector<int32_t> &v) {
  int b = AddBuffer(z, v.data(), v.size() * sizeof v[0]);
  return AddTensor(z, shape, tflite::TensorType_INT32, b);
}

void AddOp(Gen *z, tflite::BuiltinOperator kind, std::vector<int32_t> in,
           int out, int axis = 0, std::vector<int32_t> dims = {}) {
  int code = -1;
  for (size_t k = 0; k < z->codes.size(); k++)
    if (z->codes[k] == kind)
      code = (int)k;
  if (code < 0) {
    z->codes.push_back(kind);
    code = (int)z->codes.size() - 1;
  }
  z->ops.push_back({code, in, {out}, kind, axis, dims});
}

/* An earlier activation: mostly one of the last three, sometimes any. */
size_t Pick(Gen *z) {
  size_t n = z->acts.size();
  if (n <= 3 || Rand(z, 0, 3))
    return n - 1 - (size_t)Rand(z, 0, n < 3 ? (int)n - 1 : 2);
  return (size_t)Rand(z, 0, (int)n - 1);
}

void Concat(Gen *z, std::vector<size_t> from) {
  int c = 0;
  std::vector<int32_t> in;
  for (size_t k : from) {
    c += z->chans[k];
    in.push_back(z->acts[k]);
  }
  AddOp(z, tflite::BuiltinOperator_CONCATENATION, in, Act(z, c), 3);
}

void Slice(Gen *z, size_t k) {
  int c = z->chans[k], lo = Rand(z, 0, c - 1), hi = Rand(z, lo + 1, c);
  int b = ConstI32(z, {4}, {0, 0, 0, lo});
  int e = ConstI32(z, {4}, {1, kHW, kHW, hi});
  int s = ConstI32(z, {4}, {1, 1, 1, 1});
  int in = z->acts[k];
  AddOp(z, tflite::BuiltinOperator_STRIDED_SLICE, {in, b, e, s},
        Act(z, hi - lo));
}

void Pad(Gen *z, size_t k) {
  int c = z->chans[k], before = Rand(z, 0, 4), after = Rand(z, 1, 6);
  if (c + before + after > kMaxC)
    before = after = 0;
  int p = ConstI32(z, {4, 2}, {0, 0, 0, 0, 0, 0, before, after});
  int in = z->acts[k];
  AddOp(z, tflite::BuiltinOperator_PAD, {in, p}, Act(z, c + before + after));
}

void Add(Gen *z, size_t a, size_t b) {
  int x = z->acts[a], y = z->acts[b], c = z->chans[a];
  AddOp(z, tflite::BuiltinOperator_ADD, {x, y}, Act(z, c));
}

/* One random operator on earlier activations. */
void Step(Gen *z) {
  size_t a = Pick(z);
  switch (Rand(z, 0, 3)) {
  case 0: {
    size_t b = Pick(z);
    if (z->chans[a] + z->chans[b] <= kMaxC) {
      Concat(z, {a, b});
      return;
    }
    Slice(z, a);
    return;
  }
  case 1:
    Slice(z, a);
    return;
  case 2:
    Pad(z, a);
    return;
  default:
    for (size_t b = z->acts.size(); b-- > 0;)
      if (b != a && z->chans[b] == z->chans[a]) {
        Add(z, a, b);
        return;
      }
    Add(z, a, a);
  }
}

/* A 3x3 CONV_2D of c channels in and out (SAME, stride 1) on activation
 * k, with seeded weights and bias. */
void Conv(Gen *z, size_t k) {
  int c = z->chans[k];
  std::vector<float> w((size_t)c * 9 * (size_t)c), bias((size_t)c);
  for (float &v : w)
    v = (float)Rand(z, 0, 2000) / 1000.0f - 1.0f;
  for (float &v : bias)
    v = (float)Rand(z, 0, 2000) / 1000.0f - 1.0f;
  int wb = AddBuffer(z, w.data(), w.size() * sizeof w[0]);
  int wt = AddTensor(z, {c, 3, 3, c}, tflite::TensorType_FLOAT32, wb);
  int bb = AddBuffer(z, bias.data(), bias.size() * sizeof bias[0]);
  int bt = AddTensor(z, {c}, tflite::TensorType_FLOAT32, bb);
  int in = z->acts[k];
  AddOp(z, tflite::BuiltinOperator_CONV_2D, {in, wt, bt}, Act(z, c));
}

void Start(Gen *z, uint64_t seed) {
  z->rs = seed * 0x9e3779b97f4a7c15ull + 1;
  z->buffers.emplace_back(); /* buffer 0: none */
}

/* The builtin options of an operator, written into fbb. */
std::pair<tflite::BuiltinOptions, flatbuffers::Offset<void>>
Options(flatbuffers::FlatBufferBuilder *fbb, const GOp &op) {
  using B = tflite::BuiltinOperator;
  switch (op.kind) {
  case B::BuiltinOperator_CONCATENATION:
    return {tflite::BuiltinOptions_ConcatenationOptions,
            tflite::CreateConcatenationOptions(*fbb, op.axis).Union()};
  case B::BuiltinOperator_STRIDED_SLICE:
    return {tflite::BuiltinOptions_StridedSliceOptions,
            tflite::CreateStridedSliceOptions(*fbb).Union()};
  case B::BuiltinOperator_PAD:
    return {tflite::BuiltinOptions_PadOptions,
            tflite::CreatePadOptions(*fbb).Union()};
  case B::BuiltinOperator_ADD:
    return {tflite::BuiltinOptions_AddOptions,
            tflite::CreateAddOptions(*fbb).Union()};
  case B::BuiltinOperator_SUB:
    return {tflite::BuiltinOptions_SubOptions,
            tflite::CreateSubOptions(*fbb).Union()};
  case B::BuiltinOperator_MUL:
    return {tflite::BuiltinOptions_MulOptions,
            tflite::CreateMulOptions(*fbb).Union()};
  case B::BuiltinOperator_CONV_2D:
    return {tflite::BuiltinOptions_Conv2DOptions,
            tflite::CreateConv2DOptions(*fbb, tflite::Padding_SAME, 1, 1)
                .Union()};
  case B::BuiltinOperator_LEAKY_RELU:
    return {tflite::BuiltinOptions_LeakyReluOptions,
            tflite::CreateLeakyReluOptions(*fbb, 0.2f).Union()};
  case B::BuiltinOperator_RESHAPE:
    return {tflite::BuiltinOptions_ReshapeOptions,
            tflite::CreateReshapeOptionsDirect(*fbb, &op.dims).Union()};
  case B::BuiltinOperator_SQUEEZE:
    return {tflite::BuiltinOptions_SqueezeOptions,
            tflite::CreateSqueezeOptionsDirect(*fbb, &op.dims).Union()};
  case B::BuiltinOperator_EXPAND_DIMS:
    return {tflite::BuiltinOptions_ExpandDimsOptions,
            tflite::CreateExpandDimsOptions(*fbb).Union()};
  default: /* the activations, QUANTIZE, DEQUANTIZE */
    return {tflite::BuiltinOptions_NONE, 0};
  }
}

/* The quantization of t: none, or its scale with zero point 0. */
flatbuffers::Offset<tflite::QuantizationParameters>
Quant(flatbuffers::FlatBufferBuilder *fbb, const GTensor &t) {
  if (t.scale <= 0)
    return 0;
  std::vector<float> scale = {t.scale};
  std::vector<int64_t> zero = {0};
  return tflite::CreateQuantizationParametersDirect(*fbb, nullptr, nullptr,
                                                    &scale, &zero);
}

tflm_infer::Model Finish(Gen *z) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<tflite::Buffer>> bufs;
  for (const auto &b : z->buffers)
    bufs.push_back(b.empty() ? tflite::CreateBuffer(fbb)
                             : tflite::CreateBufferDirect(fbb, &b));
  std::vector<flatbuffers::Offset<tflite::Tensor>> tens;
  for (size_t i = 0; i < z->tensors.size(); i++) {
    const GTensor &t = z->tensors[i];
    std::string name = "t" + std::to_string(i);
    tens.push_back(tflite::CreateTensorDirect(fbb, &t.shape, t.type,
                                              t.buffer, name.c_str(),
                                              Quant(&fbb, t)));
  }
  std::vector<flatbuffers::Offset<tflite::Operator>> ops;
  for (const GOp &op : z->ops) {
    auto o = Options(&fbb, op);
    ops.push_back(tflite::CreateOperatorDirect(fbb, (uint32_t)op.code,
                                               &op.in, &op.out, o.first,
                                               o.second));
  }
  std::vector<flatbuffers::Offset<tflite::OperatorCode>> codes;
  for (tflite::BuiltinOperator k : z->codes)
    codes.push_back(tflite::CreateOperatorCode(fbb, (int8_t)k, 0, 1, k));
  std::vector<int32_t> outputs = {z->acts.back()};
  std::vector<flatbuffers::Offset<tflite::SubGraph>> sgs = {
      tflite::CreateSubGraphDirect(fbb, &tens, &z->inputs, &outputs, &ops)};
  fbb.Finish(tflite::CreateModelDirect(fbb, 3, &codes, &sgs,
                                       "arenad test model", &bufs),
             tflite::ModelIdentifier());
  tflm_infer::Model m;
  m.len = fbb.GetSize();
  m.data = static_cast<uint8_t *>(aligned_alloc(16, (m.len + 15) / 16 * 16));
  ck_assert_ptr_nonnull(m.data);
  memcpy(m.data, fbb.GetBufferPointer(), m.len);
  return m;
}

/* An operator on activation k whose output has k's shape (in[0] = k). */
int Unary(Gen *z, tflite::BuiltinOperator kind, size_t k,
          std::vector<int32_t> more = {}) {
  std::vector<int32_t> in = {z->acts[k]};
  in.insert(in.end(), more.begin(), more.end());
  GTensor like = z->tensors[(size_t)z->acts[k]];
  int t = AddTensor(z, like.shape, like.type, 0);
  z->tensors[(size_t)t].scale = like.scale;
  z->acts.push_back(t);
  z->chans.push_back(z->chans[k]);
  AddOp(z, kind, in, t);
  return t;
}

int ConstF32(Gen *z, std::vector<int32_t> shape, size_t n) {
  std::vector<float> v(n);
  for (float &x : v)
    x = (float)Rand(z, 0, 2000) / 1000.0f - 1.0f;
  int b = AddBuffer(z, v.data(), v.size() * sizeof v[0]);
  return AddTensor(z, shape, tflite::TensorType_FLOAT32, b);
}

}  // namespace

tflm_infer::Model GenConvModel() {
  Gen z;
  Start(&z, 7);
  z.inputs = {Act(&z, 8)};
  Add(&z, 0, 0);  /* activation 1, buffer 1 */
  Conv(&z, 1);    /* activation 2, buffer 2 */
  Add(&z, 2, 2);  /* activation 3: the output */
  return Finish(&z);
}

tflm_infer::Model GenKindsModel() {
  using B = tflite::BuiltinOperator;
  Gen z;
  Start(&z, 13);
  z.inputs = {Act(&z, 8)};
  int zero = ConstI32(&z, {4, 2}, {0, 0, 0, 0, 0, 0, 0, 0});
  AddOp(&z, B::BuiltinOperator_PAD, {z.acts[0], zero}, Act(&z, 8));
  size_t last = 1; /* a copy of the input, which shares nothing */
  auto next = [&](B kind, std::vector<int32_t> more = {}) {
    Unary(&z, kind, last, more);
    last = z.acts.size() - 1;
  };
  const B kinds[] = {B::BuiltinOperator_RELU,       B::BuiltinOperator_RELU6,
                     B::BuiltinOperator_LEAKY_RELU, B::BuiltinOperator_LOGISTIC,
                     B::BuiltinOperator_TANH,       B::BuiltinOperator_HARD_SWISH,
                     B::BuiltinOperator_ELU};
  for (B k : kinds)
    next(k);
  next(B::BuiltinOperator_PRELU, {ConstF32(&z, {8}, 8)});
  next(B::BuiltinOperator_ADD, {ConstF32(&z, {1, kHW, kHW, 8}, 128)});
  next(B::BuiltinOperator_SUB, {ConstF32(&z, {1, kHW, kHW, 8}, 128)});
  next(B::BuiltinOperator_MUL, {ConstF32(&z, {1, kHW, kHW, 8}, 128)});
  /* RESHAPE to [1, 16, 8], EXPAND_DIMS to [1, 1, 16, 8], SQUEEZE and
   * RESHAPE back: the same bytes under other shapes */
  std::vector<int32_t> flat = {1, kHW * kHW, 8}, wide = {1, 1, kHW * kHW, 8};
  int a = AddTensor(&z, flat, tflite::TensorType_FLOAT32, 0);
  AddOp(&z, B::BuiltinOperator_RESHAPE, {z.acts[last]}, a, 0, flat);
  int axis = ConstI32(&z, {1}, {0});
  int e = AddTensor(&z, wide, tflite::TensorType_FLOAT32, 0);
  AddOp(&z, B::BuiltinOperator_EXPAND_DIMS, {a, axis}, e);
  int q = AddTensor(&z, flat, tflite::TensorType_FLOAT32, 0);
  AddOp(&z, B::BuiltinOperator_SQUEEZE, {e}, q, 0, {0});
  int r = Act(&z, 8);
  AddOp(&z, B::BuiltinOperator_RESHAPE, {q}, r, 0, {1, kHW, kHW, 8});
  last = z.acts.size() - 1;
  /* QUANTIZE to int8, requantize int8 to int8 (a pair), DEQUANTIZE */
  int i8 = Act(&z, 8);
  z.tensors[(size_t)i8].type = tflite::TensorType_INT8;
  z.tensors[(size_t)i8].scale = 1.0f / 64;
  AddOp(&z, B::BuiltinOperator_QUANTIZE, {r}, i8);
  int re = Act(&z, 8);
  z.tensors[(size_t)re].type = tflite::TensorType_INT8;
  z.tensors[(size_t)re].scale = 1.0f / 32;
  AddOp(&z, B::BuiltinOperator_QUANTIZE, {i8}, re);
  int f = Act(&z, 8);
  AddOp(&z, B::BuiltinOperator_DEQUANTIZE, {re}, f);
  Pad(&z, z.acts.size() - 1); /* the output, apart from every pair */
  return Finish(&z);
}

tflm_infer::Model GenChainModel() {
  Gen z;
  Start(&z, 11);
  z.inputs = {Act(&z, 6)};
  Pad(&z, 0);    /* activation 1 */
  Add(&z, 1, 1); /* activation 2: may reuse 1 */
  Add(&z, 2, 2); /* activation 3: may reuse 2 */
  Pad(&z, 3);    /* activation 4: the output */
  return Finish(&z);
}

tflm_infer::Model GenModel(uint64_t seed) {
  Gen z;
  Start(&z, seed);
  z.inputs = {Act(&z, Rand(&z, 4, 16))};
  for (int i = 0; i < kOps; i++)
    Step(&z);
  size_t n = z.acts.size();
  std::vector<size_t> last;
  int c = 0;
  for (size_t k = n; k-- > 1 && last.size() < 3 && c + z.chans[k] <= 64;) {
    last.push_back(k);
    c += z.chans[k];
  }
  Concat(&z, last);
  return Finish(&z);
}

namespace {

/* Every generated model runs with arenad's plan as with TFLM's own:
 * identical outputs over the invokes, a plan without conflicts, never a
 * larger arena; and on some of them a smaller one, on a layout that is
 * not TFLM's. */
START_TEST(test_generated_models) {
  int smaller = 0, other_layout = 0;
  size_t own_total = 0, ours_total = 0;
  LocalClient lc;
  for (int s = 0; s < kGenModels; s++) {
    tflm_infer::Model m = GenModel((uint64_t)s);
    tflite::GreedyMemoryPlanner greedy;
    tflm_infer::Run r_own, r_ours;
    AssertProven("TFLM's planner", RunOn(m, &greedy, &r_own), r_own);
    arenad::TflmPlanner ours(lc.c, m.data, m.len);
    int rc = RunOn(m, &ours, &r_ours);
    std::vector<int> alias = PlannerAliases(&ours, r_ours.n_buffers);
    AssertProven("arenad's planner", rc, r_ours, &alias);
    ck_assert_msg(SameOutputs(r_own, r_ours), "model %d: outputs differ", s);
    ck_assert_uint_le(r_ours.head_bytes, r_own.head_bytes);
    smaller += r_ours.head_bytes < r_own.head_bytes;
    bool same = r_ours.n_buffers == r_own.n_buffers;
    for (size_t i = 0; same && i < r_own.n_buffers; i++)
      same = r_ours.buffers[i].offset == r_own.buffers[i].offset;
    other_layout += !same;
    own_total += r_own.head_bytes;
    ours_total += r_ours.head_bytes;
    tflm_infer::FreeRun(&r_ours);
    tflm_infer::FreeRun(&r_own);
    tflm_infer::FreeModel(&m);
  }
  printf("tflm generated: %d models, arenad's arena smaller on %d, layout "
         "other than TFLM's on %d; heads %zu (TFLM) and %zu (arenad) in "
         "all; outputs identical over %d invokes\n",
         kGenModels, smaller, other_layout, own_total, ours_total, kInvokes);
  fflush(stdout);
  ck_assert_int_ge(smaller, kGenModels / 4);
  ck_assert_int_ge(other_layout, smaller);
}
END_TEST

}  // namespace

void AddGeneratedTests(Suite *s) {
  TCase *tc = tcase_create("generated");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_generated_models);
  suite_add_tcase(s, tc);
}

}  // namespace check_tflm

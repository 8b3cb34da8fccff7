/*
 * gen_models.cc - small TFLite models built in memory for the
 * interpreter suites (gen_models.h), with the FlatBuffers builder API of
 * the TFLite schema. Compiled once against TFLite Micro's schema header
 * and once against TensorFlow Lite's: the builder calls are the same.
 */
#include "gen_models.h"


#include <string.h>

#include <cmath>
#include <string>
#include <utility>

#include "flatbuffers/flatbuffers.h"
/* The schema header's path in each tree: TensorFlow Lite's build defines
 * GEN_MODELS_TFLITE. */
#ifdef GEN_MODELS_TFLITE
#include "tflite/schema/schema_generated.h"
#else
#include "tensorflow/lite/schema/schema_generated.h"
#endif

extern "C" {
#include "testutil.h"
}

namespace gen_models {
namespace {

constexpr int kHW = 4;          /* every tensor is [1, kHW, kHW, C] */
constexpr int kMaxC = 24;       /* channels */
constexpr int kOps = 18;        /* operators before the final concat */

/* A tensor, an operator and a model under construction, in plain
 * structs: the FlatBuffers builder writes children before parents, so the
 * model is serialized once it is complete (Finish). */
struct GTensor {
  std::vector<int32_t> shape;
  tflite::TensorType type;
  uint32_t buffer; /* 0: none (an activation) */
  float scale;     /* > 0: quantized with this scale and zero_point */
  int64_t zero_point = 0;
};

struct GOp {
  int code; /* index in Gen::codes */
  std::vector<int32_t> in, out;
  tflite::BuiltinOperator kind;
  int axis;                  /* CONCATENATION */
  std::vector<int32_t> dims; /* RESHAPE's new shape, SQUEEZE's dims */
  /* the convolutions' and the block operators' options */
  int stride = 1;            /* both ways; DEPTH/SPACE_TO_DEPTH's block */
  tflite::Padding padding = tflite::Padding_SAME;
  tflite::ActivationFunctionType act = tflite::ActivationFunctionType_NONE;
};

struct Gen {
  std::vector<GTensor> tensors;
  std::vector<std::vector<uint8_t>> buffers; /* [0] is the empty one */
  std::vector<GOp> ops;
  std::vector<tflite::BuiltinOperator> codes;
  std::vector<int> versions; /* of each code */
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs; /* empty: the last activation */
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

/* The index of the operator code of kind at version, added if new. */
int Code(Gen *z, tflite::BuiltinOperator kind, int version) {
  for (size_t k = 0; k < z->codes.size(); k++)
    if (z->codes[k] == kind && z->versions[k] == version)
      return (int)k;
  z->codes.push_back(kind);
  z->versions.push_back(version);
  return (int)z->codes.size() - 1;
}

void AddOp(Gen *z, tflite::BuiltinOperator kind, std::vector<int32_t> in,
           int out, int axis = 0, std::vector<int32_t> dims = {}) {
  z->ops.push_back({Code(z, kind, 1), in, {out}, kind, axis, dims});
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
            tflite::CreateConv2DOptions(*fbb, op.padding, op.stride,
                                        op.stride, op.act)
                .Union()};
  case B::BuiltinOperator_DEPTHWISE_CONV_2D:
    return {tflite::BuiltinOptions_DepthwiseConv2DOptions,
            tflite::CreateDepthwiseConv2DOptions(*fbb, op.padding, op.stride,
                                                 op.stride, 1, op.act)
                .Union()};
  case B::BuiltinOperator_TRANSPOSE_CONV:
    return {tflite::BuiltinOptions_TransposeConvOptions,
            tflite::CreateTransposeConvOptions(*fbb, op.padding, op.stride,
                                               op.stride)
                .Union()};
  case B::BuiltinOperator_RESIZE_BILINEAR:
    return {tflite::BuiltinOptions_ResizeBilinearOptions,
            tflite::CreateResizeBilinearOptions(*fbb, false, true).Union()};
  case B::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR:
    return {tflite::BuiltinOptions_ResizeNearestNeighborOptions,
            tflite::CreateResizeNearestNeighborOptions(*fbb).Union()};
  case B::BuiltinOperator_DEPTH_TO_SPACE:
    return {tflite::BuiltinOptions_DepthToSpaceOptions,
            tflite::CreateDepthToSpaceOptions(*fbb, op.stride).Union()};
  case B::BuiltinOperator_SPACE_TO_DEPTH:
    return {tflite::BuiltinOptions_SpaceToDepthOptions,
            tflite::CreateSpaceToDepthOptions(*fbb, op.stride).Union()};
  case B::BuiltinOperator_MEAN:
    return {tflite::BuiltinOptions_ReducerOptions,
            tflite::CreateReducerOptions(*fbb, true).Union()};
  case B::BuiltinOperator_MAXIMUM:
    return {tflite::BuiltinOptions_MaximumMinimumOptions,
            tflite::CreateMaximumMinimumOptions(*fbb).Union()};
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

/* The quantization of t: none, or its scale and zero point. */
flatbuffers::Offset<tflite::QuantizationParameters>
Quant(flatbuffers::FlatBufferBuilder *fbb, const GTensor &t) {
  if (t.scale <= 0)
    return 0;
  std::vector<float> scale = {t.scale};
  std::vector<int64_t> zero = {t.zero_point};
  return tflite::CreateQuantizationParametersDirect(*fbb, nullptr, nullptr,
                                                    &scale, &zero);
}

std::vector<uint8_t> Finish(Gen *z) {
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
  for (size_t k = 0; k < z->codes.size(); k++)
    codes.push_back(tflite::CreateOperatorCode(
        fbb, (int8_t)z->codes[k], 0, z->versions[k], z->codes[k]));
  std::vector<int32_t> outputs = z->outputs;
  if (outputs.empty())
    outputs = {z->acts.back()};
  std::vector<flatbuffers::Offset<tflite::SubGraph>> sgs = {
      tflite::CreateSubGraphDirect(fbb, &tens, &z->inputs, &outputs, &ops)};
  fbb.Finish(tflite::CreateModelDirect(fbb, 3, &codes, &sgs,
                                       "arenad test model", &bufs),
             tflite::ModelIdentifier());
  const uint8_t *p = fbb.GetBufferPointer();
  return std::vector<uint8_t>(p, p + fbb.GetSize());
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

/* ---- the segmentation net ------------------------------------------------ */

/* The quantization of a tensor of the segmentation net: scale 0 is
 * float32. */
struct Q {
  float scale;
  int64_t zero_point;
};

constexpr Q kFloat = {0.0f, 0};
constexpr float kActScale = 1.0f / 32; /* every int8 activation but: */
constexpr Q kLogisticQ = {1.0f / 256, -128}; /* TFLite's for LOGISTIC */

/* The scale of int8 weights over fan_in inputs: int8 values of up to
 * 127 stand for up to 1/sqrt(fan_in), so that sums over the fan-in stay
 * about the size of one input and activations do not saturate. */
float WeightScale(int fan_in) {
  return 1.0f / (128.0f * std::sqrt((float)fan_in));
}

/* An activation of shape; int8 at scale q (q.scale > 0), else float32. */
int Tensor(Gen *z, std::vector<int32_t> shape, Q q) {
  int t = AddTensor(z, shape, q.scale > 0 ? tflite::TensorType_INT8
                                          : tflite::TensorType_FLOAT32, 0);
  z->tensors[(size_t)t].scale = q.scale;
  z->tensors[(size_t)t].zero_point = q.zero_point;
  return t;
}

/* Seeded weights of shape over fan_in inputs: int8 at
 * WeightScale(fan_in) when int8, else float32 in [-1, 1] / sqrt(fan_in). */
int Weights(Gen *z, std::vector<int32_t> shape, int fan_in, bool int8) {
  size_t n = 1;
  for (int32_t d : shape)
    n *= (size_t)d;
  if (!int8) {
    std::vector<float> v(n);
    for (float &x : v)
      x = ((float)Rand(z, 0, 2000) / 1000.0f - 1.0f) / std::sqrt((float)fan_in);
    int b = AddBuffer(z, v.data(), v.size() * sizeof v[0]);
    return AddTensor(z, shape, tflite::TensorType_FLOAT32, b);
  }
  std::vector<int8_t> v(n);
  for (int8_t &x : v)
    x = (int8_t)Rand(z, -127, 127);
  int b = AddBuffer(z, v.data(), v.size());
  int t = AddTensor(z, shape, tflite::TensorType_INT8, b);
  z->tensors[(size_t)t].scale = WeightScale(fan_in);
  return t;
}

/* A seeded bias of n values in about [-1/4, 1/4] for an input at
 * in_scale and weights over fan_in inputs: int32 at in_scale *
 * WeightScale(fan_in) (TFLite's rule) when int8, else float32. */
int Bias(Gen *z, int n, int fan_in, bool int8, float in_scale) {
  if (!int8) {
    std::vector<float> v((size_t)n);
    for (float &x : v)
      x = (float)(Rand(z, 0, 512) - 256) / 1024.0f;
    int b = AddBuffer(z, v.data(), v.size() * sizeof v[0]);
    return AddTensor(z, {n}, tflite::TensorType_FLOAT32, b);
  }
  float scale = in_scale * WeightScale(fan_in);
  std::vector<int32_t> v((size_t)n);
  for (int32_t &x : v)
    x = (int32_t)((float)(Rand(z, 0, 512) - 256) / 1024.0f / scale);
  int b = AddBuffer(z, v.data(), v.size() * sizeof v[0]);
  int t = AddTensor(z, {n}, tflite::TensorType_INT32, b);
  z->tensors[(size_t)t].scale = scale;
  return t;
}

/* The IEEE half of v, for the values HalfWeights() makes (0, or a
 * normal number of at most 11 significant bits: exact). */
uint16_t Half(float v) {
  uint32_t f;
  memcpy(&f, &v, 4);
  uint16_t sign = (uint16_t)((f >> 16) & 0x8000);
  if ((f & 0x7fffffff) == 0)
    return sign;
  int e = (int)((f >> 23) & 0xff) - 127 + 15;
  return (uint16_t)(sign | (e << 10) | ((f >> 13) & 0x3ff));
}

/* Float32 weights as TFLite's float16 models carry them: a FLOAT16
 * constant of seeded values in [-1, 1] / 8 (multiples of 1/2048, exact
 * in half precision) and a DEQUANTIZE to float32, whose output the next
 * operator reads. */
int HalfWeights(Gen *z, std::vector<int32_t> shape) {
  size_t n = 1;
  for (int32_t d : shape)
    n *= (size_t)d;
  std::vector<uint16_t> v(n);
  for (uint16_t &x : v)
    x = Half((float)(Rand(z, 0, 512) - 256) / 2048.0f);
  int b = AddBuffer(z, v.data(), v.size() * sizeof v[0]);
  int h = AddTensor(z, shape, tflite::TensorType_FLOAT16, b);
  int f = AddTensor(z, shape, tflite::TensorType_FLOAT32, 0);
  AddOp(z, tflite::BuiltinOperator_DEQUANTIZE, {h}, f);
  return f;
}

/* An operator with the convolutions' options. */
int Op(Gen *z, tflite::BuiltinOperator kind, std::vector<int32_t> in,
       int out, int stride = 1,
       tflite::Padding padding = tflite::Padding_SAME,
       tflite::ActivationFunctionType act =
           tflite::ActivationFunctionType_NONE) {
  AddOp(z, kind, in, out);
  z->ops.back().stride = stride;
  z->ops.back().padding = padding;
  z->ops.back().act = act;
  return out;
}

/* A CONV_2D of k x k from c_in to c_out channels on in, output [1, h, w,
 * c_out] at q. */
int ConvOf(Gen *z, int in, int c_in, int c_out, int k, int stride,
           std::vector<int32_t> out_shape, Q q, bool int8,
           tflite::Padding padding = tflite::Padding_SAME,
           tflite::ActivationFunctionType act =
               tflite::ActivationFunctionType_NONE) {
  int w = Weights(z, {c_out, k, k, c_in}, c_in * k * k, int8);
  int b = Bias(z, c_out, c_in * k * k, int8, z->tensors[(size_t)in].scale);
  return Op(z, tflite::BuiltinOperator_CONV_2D, {in, w, b},
            Tensor(z, out_shape, q), stride, padding, act);
}

}  // namespace

std::vector<uint8_t> SegmenterModel(bool int8) {
  using B = tflite::BuiltinOperator;
  Gen z;
  Start(&z, int8 ? 19 : 17);
  Q a = int8 ? Q{kActScale, 0} : kFloat;
  Q g = int8 ? kLogisticQ : kFloat;
  int in = AddTensor(&z, {1, 16, 16, 3}, tflite::TensorType_FLOAT32, 0);
  z.inputs = {in};
  int x = in;
  if (int8)
    AddOp(&z, B::BuiltinOperator_QUANTIZE, {in},
          x = Tensor(&z, {1, 16, 16, 3}, a));
  /* encoder: a strided convolution beside SPACE_TO_DEPTH of the input */
  int e1 = ConvOf(&z, x, 3, 8, 3, 2, {1, 8, 8, 8}, a, int8);
  int sd = Op(&z, B::BuiltinOperator_SPACE_TO_DEPTH, {x},
              Tensor(&z, {1, 8, 8, 12}, a), 2);
  int e1c = Tensor(&z, {1, 8, 8, 20}, a);
  AddOp(&z, B::BuiltinOperator_CONCATENATION, {e1, sd}, e1c, 3);
  int e1h = Tensor(&z, {1, 8, 8, 20}, a);
  AddOp(&z, B::BuiltinOperator_HARD_SWISH, {e1c}, e1h);
  int dw = Weights(&z, {1, 3, 3, 20}, 9, int8);
  int dwb = Bias(&z, 20, 9, int8, a.scale);
  int e2 = Op(&z, B::BuiltinOperator_DEPTHWISE_CONV_2D, {e1h, dw, dwb},
              Tensor(&z, {1, 4, 4, 20}, a), 2);
  int e3 = ConvOf(&z, e2, 20, 16, 1, 1, {1, 4, 4, 16}, a, int8,
                  tflite::Padding_SAME, tflite::ActivationFunctionType_RELU6);
  /* squeeze and excite: MEAN, a 1x1 CONV_2D, LOGISTIC, MUL */
  int axes = ConstI32(&z, {2}, {1, 2});
  int m = Tensor(&z, {1, 1, 1, 16}, a);
  AddOp(&z, B::BuiltinOperator_MEAN, {e3, axes}, m);
  int s = ConvOf(&z, m, 16, 16, 1, 1, {1, 1, 1, 16}, a, int8);
  int gate = Tensor(&z, {1, 1, 1, 16}, g);
  AddOp(&z, B::BuiltinOperator_LOGISTIC, {s}, gate);
  int e4 = Tensor(&z, {1, 4, 4, 16}, a);
  AddOp(&z, B::BuiltinOperator_MUL, {e3, gate}, e4);
  /* decoder: TRANSPOSE_CONV up to 8x8 (float16 weights in the float
   * model), the skip concatenated, a 1x1 CONV_2D and PRELU */
  int shape = ConstI32(&z, {4}, {1, 8, 8, 8});
  /* each output of a stride-2 3x3 TRANSPOSE_CONV sums about 36 inputs */
  int tw = int8 ? Weights(&z, {8, 3, 3, 16}, 36, true)
                : HalfWeights(&z, {8, 3, 3, 16});
  int tb = Bias(&z, 8, 36, int8, a.scale);
  int d1 = Op(&z, B::BuiltinOperator_TRANSPOSE_CONV, {shape, tw, e4, tb},
              Tensor(&z, {1, 8, 8, 8}, a), 2);
  int d2 = Tensor(&z, {1, 8, 8, 28}, a);
  AddOp(&z, B::BuiltinOperator_CONCATENATION, {d1, e1h}, d2, 3);
  int d3 = ConvOf(&z, d2, 28, 8, 1, 1, {1, 8, 8, 8}, a, int8);
  int alpha = Weights(&z, {1, 1, 8}, 1, int8);
  int d4 = Tensor(&z, {1, 8, 8, 8}, a);
  AddOp(&z, B::BuiltinOperator_PRELU, {d3, alpha}, d4);
  /* up to 16x16 three ways, concatenated: RESIZE_BILINEAR and
   * DEPTH_TO_SPACE of the decoder, RESIZE_NEAREST_NEIGHBOR of the
   * encoder's 4x4 */
  int size = ConstI32(&z, {2}, {16, 16});
  int u1 = Tensor(&z, {1, 16, 16, 8}, a);
  AddOp(&z, B::BuiltinOperator_RESIZE_BILINEAR, {d4, size}, u1);
  int u2 = Op(&z, B::BuiltinOperator_DEPTH_TO_SPACE, {d4},
              Tensor(&z, {1, 16, 16, 2}, a), 2);
  int u3 = Tensor(&z, {1, 16, 16, 20}, a);
  AddOp(&z, B::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR, {e2, size}, u3);
  int u = Tensor(&z, {1, 16, 16, 30}, a);
  AddOp(&z, B::BuiltinOperator_CONCATENATION, {u1, u2, u3}, u, 3);
  /* the head: PAD, a VALID 3x3 CONV_2D to two channels, LOGISTIC */
  int pads = ConstI32(&z, {4, 2}, {0, 0, 1, 1, 1, 1, 0, 0});
  int p = Tensor(&z, {1, 18, 18, 30}, a);
  AddOp(&z, B::BuiltinOperator_PAD, {u, pads}, p);
  int logits = ConvOf(&z, p, 30, 2, 3, 1, {1, 16, 16, 2}, a, int8,
                      tflite::Padding_VALID);
  int mask = Tensor(&z, {1, 16, 16, 2}, g);
  AddOp(&z, B::BuiltinOperator_LOGISTIC, {logits}, mask);
  int out = mask;
  if (int8)
    AddOp(&z, B::BuiltinOperator_DEQUANTIZE, {mask},
          out = Tensor(&z, {1, 16, 16, 2}, kFloat));
  z.outputs = {out};
  return Finish(&z);
}

std::vector<int> SegmenterModelOps() {
  using B = tflite::BuiltinOperator;
  return {B::BuiltinOperator_CONV_2D,         B::BuiltinOperator_SPACE_TO_DEPTH,
          B::BuiltinOperator_CONCATENATION,   B::BuiltinOperator_HARD_SWISH,
          B::BuiltinOperator_DEPTHWISE_CONV_2D, B::BuiltinOperator_MEAN,
          B::BuiltinOperator_LOGISTIC,        B::BuiltinOperator_MUL,
          B::BuiltinOperator_DEQUANTIZE,      B::BuiltinOperator_TRANSPOSE_CONV,
          B::BuiltinOperator_PRELU,           B::BuiltinOperator_RESIZE_BILINEAR,
          B::BuiltinOperator_DEPTH_TO_SPACE,
          B::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR, B::BuiltinOperator_PAD};
}

std::vector<uint8_t> UnregisteredOpsModel() {
  using B = tflite::BuiltinOperator;
  Gen z;
  Start(&z, 23);
  z.inputs = {Act(&z, 4)};
  int c = ConstF32(&z, {1, kHW, kHW, 4}, 64);
  int a = Act(&z, 4);
  z.ops.push_back({Code(&z, B::BuiltinOperator_MAXIMUM, 1), {z.acts[0], c},
                   {a}, B::BuiltinOperator_MAXIMUM, 0, {}});
  int f = Act(&z, 4);
  AddOp(&z, B::BuiltinOperator_FLOOR, {a}, f);
  int b = Act(&z, 4);
  z.ops.push_back({Code(&z, B::BuiltinOperator_MAXIMUM, 2), {f, z.acts[0]},
                   {b}, B::BuiltinOperator_MAXIMUM, 0, {}});
  Add(&z, 3, 1); /* ADD, which every resolver has */
  return Finish(&z);
}

std::vector<uint8_t> ResizableModel() {
  Gen z;
  Start(&z, 17);
  z.inputs = {Act(&z, 4)};
  Conv(&z, 0);          /* 1 */
  Add(&z, 1, 0);        /* 2 */
  Pad(&z, 2);           /* 3: more channels */
  Conv(&z, 3);          /* 4 */
  Concat(&z, {4, 3});   /* 5 */
  Add(&z, 5, 5);        /* 6 */
  Concat(&z, {6, 1});   /* 7: the output */
  return Finish(&z);
}

std::vector<FileModel> FileModels() {
  return {{"resizable.tflite", ResizableModel()},
          {"segmenter_float.tflite", SegmenterModel(false)},
          {"segmenter_int8.tflite", SegmenterModel(true)},
          {"unregistered_ops.tflite", UnregisteredOpsModel()}};
}

std::vector<uint8_t> ConvModel() {
  Gen z;
  Start(&z, 7);
  z.inputs = {Act(&z, 8)};
  Add(&z, 0, 0);  /* activation 1, buffer 1 */
  Conv(&z, 1);    /* activation 2, buffer 2 */
  Add(&z, 2, 2);  /* activation 3: the output */
  return Finish(&z);
}

std::vector<uint8_t> KindsModel() {
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

std::vector<int> KindsModelOps() {
  using B = tflite::BuiltinOperator;
  return {B::BuiltinOperator_RELU,        B::BuiltinOperator_RELU6,
          B::BuiltinOperator_LEAKY_RELU,  B::BuiltinOperator_LOGISTIC,
          B::BuiltinOperator_TANH,        B::BuiltinOperator_HARD_SWISH,
          B::BuiltinOperator_ELU,         B::BuiltinOperator_PRELU,
          B::BuiltinOperator_ADD,         B::BuiltinOperator_SUB,
          B::BuiltinOperator_MUL,         B::BuiltinOperator_RESHAPE,
          B::BuiltinOperator_EXPAND_DIMS, B::BuiltinOperator_SQUEEZE,
          B::BuiltinOperator_QUANTIZE};
}

std::vector<uint8_t> ChainModel() {
  Gen z;
  Start(&z, 11);
  z.inputs = {Act(&z, 6)};
  Pad(&z, 0);    /* activation 1 */
  Add(&z, 1, 1); /* activation 2: may reuse 1 */
  Add(&z, 2, 2); /* activation 3: may reuse 2 */
  Pad(&z, 3);    /* activation 4: the output */
  return Finish(&z);
}

std::vector<uint8_t> RandomModel(uint64_t seed) {
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

std::vector<uint8_t> TransposeConvModel() {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<float> w(2 * 3 * 3 * 3), bias = {0.5f, -1.0f};
  for (size_t i = 0; i < w.size(); i++)
    w[i] = (float)((int)(i * 7 % 5) - 2); /* -2 .. 2 */
  std::vector<uint8_t> wb(w.size() * sizeof w[0]), bb(bias.size() * 4);
  memcpy(wb.data(), w.data(), wb.size());
  memcpy(bb.data(), bias.data(), bb.size());
  std::vector<flatbuffers::Offset<tflite::Buffer>> bufs = {
      tflite::CreateBuffer(fbb), tflite::CreateBufferDirect(fbb, &wb),
      tflite::CreateBufferDirect(fbb, &bb)};
  const std::vector<int32_t> shapes[] = {
      {1, 4, 4, 3}, {2, 3, 3, 3}, {2}, {1, 8, 8, 2}, {1, 8, 8, 2}};
  const uint32_t buffer_of[] = {0, 1, 2, 0, 0};
  std::vector<flatbuffers::Offset<tflite::Tensor>> tens;
  for (int i = 0; i < 5; i++) {
    std::string name = "t" + std::to_string(i);
    tens.push_back(tflite::CreateTensorDirect(fbb, &shapes[i],
                                              tflite::TensorType_FLOAT32,
                                              buffer_of[i], name.c_str()));
  }
  /* padding SAME (1), stride_width 2, stride_height 2, little-endian */
  const int32_t opt[3] = {1, 2, 2};
  std::vector<uint8_t> options(sizeof opt);
  memcpy(options.data(), opt, sizeof opt);
  std::vector<int32_t> conv_in = {0, 1, 2}, conv_out = {3};
  std::vector<int32_t> add_in = {3, 3}, add_out = {4};
  std::vector<flatbuffers::Offset<tflite::Operator>> ops = {
      tflite::CreateOperatorDirect(fbb, 0, &conv_in, &conv_out,
                                   tflite::BuiltinOptions_NONE, 0, &options),
      tflite::CreateOperatorDirect(fbb, 1, &add_in, &add_out,
                                   tflite::BuiltinOptions_AddOptions,
                                   tflite::CreateAddOptions(fbb).Union())};
  std::vector<flatbuffers::Offset<tflite::OperatorCode>> codes = {
      tflite::CreateOperatorCodeDirect(fbb, (int8_t)tflite::BuiltinOperator_CUSTOM,
                                       "Convolution2DTransposeBias", 1,
                                       tflite::BuiltinOperator_CUSTOM),
      tflite::CreateOperatorCode(fbb, (int8_t)tflite::BuiltinOperator_ADD, 0, 1,
                                 tflite::BuiltinOperator_ADD)};
  std::vector<int32_t> inputs = {0}, outputs = {4};
  std::vector<flatbuffers::Offset<tflite::SubGraph>> sgs = {
      tflite::CreateSubGraphDirect(fbb, &tens, &inputs, &outputs, &ops)};
  fbb.Finish(tflite::CreateModelDirect(fbb, 3, &codes, &sgs,
                                       "arenad test model", &bufs),
             tflite::ModelIdentifier());
  const uint8_t *p = fbb.GetBufferPointer();
  return std::vector<uint8_t>(p, p + fbb.GetSize());
}

}  // namespace gen_models

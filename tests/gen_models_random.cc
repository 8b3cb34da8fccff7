/*
 * gen_models_random.cc - the models of gen_models.h that test in-place
 * sharing against a layout with no sharing at all: the reduced graph on
 * which TensorFlow Lite's own ArenaPlanner overwrites a tensor still to
 * be read (ReshapeInPlaceModel), and seeded random float32 graphs of the
 * same kinds of operators (SharingModel). Like gen_models.cc it is
 * compiled once against TFLite Micro's schema header and once against
 * TensorFlow Lite's.
 *
 * DESIGN
 *  A model is built in plain structs (Net) and serialized once complete
 *  (Finish), since the FlatBuffers builder writes children before
 *  parents. Every activation is float32, either [1, 4, 4, C] ("4-D") or
 *  [1, 16, C] ("flat"), C from 1 to kMaxC; binary operators take two
 *  activations of one shape, or an activation and a seeded constant of
 *  shape [C] that broadcasts over it.
 */
#include "gen_models.h"

#include <string>
#include <utility>

#include "flatbuffers/flatbuffers.h"
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

using Op = tflite::BuiltinOperator;
using Act = tflite::ActivationFunctionType;

constexpr int kHW = 4;     /* 4-D activations are [1, kHW, kHW, C] */
constexpr int kMaxC = 16;  /* channels of one activation */
constexpr int kSteps = 16; /* random steps before the output */

struct NTensor {
  std::vector<int32_t> shape;
  tflite::TensorType type;
  uint32_t buffer; /* 0: an activation, else its constant's buffer */
};

struct NOp {
  Op kind;
  std::vector<int32_t> in, out;
  Act act;                   /* fused activation (ADD, SUB, MUL) */
  int axis;                  /* CONCATENATION */
  std::vector<int32_t> dims; /* RESHAPE's new shape */
};

/* An activation a step may read: its tensor, channels and rank. */
struct Val {
  int tensor;
  int c;
  bool flat; /* [1, 16, C] rather than [1, 4, 4, C] */
};

struct Net {
  std::vector<NTensor> tensors;
  std::vector<std::vector<uint8_t>> buffers; /* [0] is the empty one */
  std::vector<NOp> ops;
  std::vector<Op> codes;
  std::vector<int32_t> inputs, outputs;
  std::vector<Val> vals; /* every activation, in the order made */
  std::vector<Val> keep; /* activations the output must include */
  uint64_t rs = 0;
};

int Rand(Net *z, int lo, int hi) {
  return (int)tu_rand_range(&z->rs, (uint64_t)lo, (uint64_t)hi);
}

std::vector<int32_t> Shape(int c, bool flat) {
  if (flat)
    return {1, kHW * kHW, c};
  return {1, kHW, kHW, c};
}

/* A new activation of c channels. */
Val NewVal(Net *z, int c, bool flat) {
  z->tensors.push_back({Shape(c, flat), tflite::TensorType_FLOAT32, 0});
  Val v = {(int)z->tensors.size() - 1, c, flat};
  z->vals.push_back(v);
  return v;
}

int Const(Net *z, std::vector<int32_t> shape, const void *data, size_t len,
          tflite::TensorType type) {
  const uint8_t *p = static_cast<const uint8_t *>(data);
  z->buffers.emplace_back(p, p + len);
  z->tensors.push_back({shape, type, (uint32_t)z->buffers.size() - 1});
  return (int)z->tensors.size() - 1;
}

int ConstI32(Net *z, std::vector<int32_t> shape, std::vector<int32_t> v) {
  return Const(z, shape, v.data(), v.size() * sizeof v[0],
               tflite::TensorType_INT32);
}

/* A seeded float constant of shape [c], values in [-1, 1]. */
int ConstC(Net *z, int c) {
  std::vector<float> v((size_t)c);
  for (float &x : v)
    x = (float)Rand(z, 0, 2000) / 1000.0f - 1.0f;
  return Const(z, {c}, v.data(), v.size() * sizeof v[0],
               tflite::TensorType_FLOAT32);
}

void AddOp(Net *z, Op kind, std::vector<int32_t> in, int out,
           Act act = tflite::ActivationFunctionType_NONE, int axis = 0,
           std::vector<int32_t> dims = {}) {
  bool known = false;
  for (Op k : z->codes)
    known |= k == kind;
  if (!known)
    z->codes.push_back(kind);
  z->ops.push_back({kind, in, {out}, act, axis, dims});
}

/* A fused activation: none half the time, else RELU, RELU6 or
 * RELU_N1_TO_1. */
Act RandomAct(Net *z) {
  switch (Rand(z, 0, 5)) {
  case 0:
    return tflite::ActivationFunctionType_RELU;
  case 1:
    return tflite::ActivationFunctionType_RELU6;
  case 2:
    return tflite::ActivationFunctionType_RELU_N1_TO_1;
  default:
    return tflite::ActivationFunctionType_NONE;
  }
}

Op RandomBinary(Net *z) {
  const Op k[] = {tflite::BuiltinOperator_ADD, tflite::BuiltinOperator_SUB,
                  tflite::BuiltinOperator_MUL};
  return k[Rand(z, 0, 2)];
}

/* An earlier activation: mostly one of the last three (a chain), else any
 * (a residual branch, a fan-out). */
Val Pick(Net *z) {
  int n = (int)z->vals.size();
  if (n <= 3 || Rand(z, 0, 3))
    return z->vals[(size_t)(n - 1 - Rand(z, 0, n < 3 ? n - 1 : 2))];
  return z->vals[(size_t)Rand(z, 0, n - 1)];
}

/* An earlier 4-D activation, made from a flat one by a RESHAPE when the
 * pick is flat. */
Val Reshape(Net *z, Val v, bool flat) {
  Val r = NewVal(z, v.c, flat);
  std::vector<int32_t> shape = Shape(v.c, flat);
  AddOp(z, tflite::BuiltinOperator_RESHAPE, {v.tensor}, r.tensor,
        tflite::ActivationFunctionType_NONE, 0, shape);
  return r;
}

Val Pick4D(Net *z) {
  Val v = Pick(z);
  return v.flat ? Reshape(z, v, false) : v;
}

/* op(a, b) with a fused activation, b an activation of a's shape or, with
 * b.tensor < 0, a constant of shape [C] that broadcasts. */
Val Binary(Net *z, Op kind, Val a, Val b, Act act) {
  int rhs = b.tensor >= 0 ? b.tensor : ConstC(z, a.c);
  Val o = NewVal(z, a.c, a.flat);
  AddOp(z, kind, {a.tensor, rhs}, o.tensor, act);
  return o;
}

Val Unary(Net *z, Op kind, Val a) {
  Val o = NewVal(z, a.c, a.flat);
  AddOp(z, kind, {a.tensor}, o.tensor);
  return o;
}

Val Concat(Net *z, Val a, Val b) {
  Val o = NewVal(z, a.c + b.c, false);
  AddOp(z, tflite::BuiltinOperator_CONCATENATION, {a.tensor, b.tensor},
        o.tensor, tflite::ActivationFunctionType_NONE, 3);
  return o;
}

Val Slice(Net *z, Val a) {
  int lo = Rand(z, 0, a.c - 1), hi = Rand(z, lo + 1, a.c);
  int b = ConstI32(z, {4}, {0, 0, 0, lo});
  int e = ConstI32(z, {4}, {1, kHW, kHW, hi});
  int s = ConstI32(z, {4}, {1, 1, 1, 1});
  Val o = NewVal(z, hi - lo, false);
  AddOp(z, tflite::BuiltinOperator_STRIDED_SLICE, {a.tensor, b, e, s},
        o.tensor);
  return o;
}

Val Pad(Net *z, Val a) {
  int before = Rand(z, 0, 3), after = Rand(z, 0, 3);
  if (a.c + before + after > kMaxC)
    before = after = 0;
  int p = ConstI32(z, {4, 2}, {0, 0, 0, 0, 0, 0, before, after});
  Val o = NewVal(z, a.c + before + after, false);
  AddOp(z, tflite::BuiltinOperator_PAD, {a.tensor, p}, o.tensor);
  return o;
}

/* The shape of the issue: x, an elementwise output on a fresh tensor
 * (which an interpreter may compute in place), is reshaped; an
 * elementwise operator with a constant runs on the reshape's output (in
 * place, if the interpreter lets it); then x is read again. */
void ReshapeThenReadAgain(Net *z) {
  Val a = Pad(z, Pick4D(z)); /* fresh: read by the next operator only */
  Val x = Binary(z, RandomBinary(z), a, {-1, 0, false}, RandomAct(z));
  Val r = Reshape(z, x, true);
  Binary(z, RandomBinary(z), r, {-1, 0, false}, RandomAct(z));
  const Op later[] = {tflite::BuiltinOperator_RELU6,
                      tflite::BuiltinOperator_TANH,
                      tflite::BuiltinOperator_LOGISTIC};
  z->keep.push_back(Unary(z, later[Rand(z, 0, 2)], x));
}

/* One random step. */
void Step(Net *z) {
  const Op unary[] = {tflite::BuiltinOperator_RELU,
                      tflite::BuiltinOperator_RELU6,
                      tflite::BuiltinOperator_LOGISTIC,
                      tflite::BuiltinOperator_TANH};
  switch (Rand(z, 0, 7)) {
  case 0: {
    Val a = Pick4D(z), b = Pick4D(z);
    if (a.c + b.c <= kMaxC)
      Concat(z, a, b);
    else
      Slice(z, a);
    return;
  }
  case 1:
    Slice(z, Pick4D(z));
    return;
  case 2:
    Pad(z, Pick4D(z));
    return;
  case 3:
    Unary(z, unary[Rand(z, 0, 3)], Pick(z));
    return;
  case 4: {
    Val a = Pick(z);
    Reshape(z, a, !a.flat);
    return;
  }
  case 5:
    ReshapeThenReadAgain(z);
    return;
  default: {
    /* a binary operator: on two activations of one shape (a residual
     * branch, or x op x) or on one and a broadcast constant */
    Val a = Pick(z), b = {-1, 0, false};
    for (size_t k = z->vals.size(); Rand(z, 0, 2) && k-- > 0;)
      if (z->vals[k].c == a.c && z->vals[k].flat == a.flat &&
          z->vals[k].tensor != a.tensor) {
        b = z->vals[k];
        break;
      }
    Binary(z, RandomBinary(z), a, b, RandomAct(z));
    return;
  }
  }
}

void Start(Net *z, uint64_t seed) {
  z->rs = seed * 0x9e3779b97f4a7c15ull + 35;
  z->buffers.emplace_back(); /* buffer 0: none */
}

std::pair<tflite::BuiltinOptions, flatbuffers::Offset<void>>
Options(flatbuffers::FlatBufferBuilder *fbb, const NOp &op) {
  switch (op.kind) {
  case tflite::BuiltinOperator_ADD:
    return {tflite::BuiltinOptions_AddOptions,
            tflite::CreateAddOptions(*fbb, op.act).Union()};
  case tflite::BuiltinOperator_SUB:
    return {tflite::BuiltinOptions_SubOptions,
            tflite::CreateSubOptions(*fbb, op.act).Union()};
  case tflite::BuiltinOperator_MUL:
    return {tflite::BuiltinOptions_MulOptions,
            tflite::CreateMulOptions(*fbb, op.act).Union()};
  case tflite::BuiltinOperator_CONCATENATION:
    return {tflite::BuiltinOptions_ConcatenationOptions,
            tflite::CreateConcatenationOptions(*fbb, op.axis).Union()};
  case tflite::BuiltinOperator_STRIDED_SLICE:
    return {tflite::BuiltinOptions_StridedSliceOptions,
            tflite::CreateStridedSliceOptions(*fbb).Union()};
  case tflite::BuiltinOperator_PAD:
    return {tflite::BuiltinOptions_PadOptions,
            tflite::CreatePadOptions(*fbb).Union()};
  case tflite::BuiltinOperator_RESHAPE:
    return {tflite::BuiltinOptions_ReshapeOptions,
            tflite::CreateReshapeOptionsDirect(*fbb, &op.dims).Union()};
  default: /* the activations */
    return {tflite::BuiltinOptions_NONE, 0};
  }
}

std::vector<uint8_t> Finish(Net *z) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<tflite::Buffer>> bufs;
  for (const auto &b : z->buffers)
    bufs.push_back(b.empty() ? tflite::CreateBuffer(fbb)
                             : tflite::CreateBufferDirect(fbb, &b));
  std::vector<flatbuffers::Offset<tflite::Tensor>> tens;
  for (size_t i = 0; i < z->tensors.size(); i++) {
    const NTensor &t = z->tensors[i];
    std::string name = "t" + std::to_string(i);
    tens.push_back(tflite::CreateTensorDirect(fbb, &t.shape, t.type, t.buffer,
                                              name.c_str()));
  }
  std::vector<flatbuffers::Offset<tflite::Operator>> ops;
  for (const NOp &op : z->ops) {
    uint32_t code = 0;
    while (z->codes[code] != op.kind)
      code++;
    auto o = Options(&fbb, op);
    ops.push_back(tflite::CreateOperatorDirect(fbb, code, &op.in, &op.out,
                                               o.first, o.second));
  }
  std::vector<flatbuffers::Offset<tflite::OperatorCode>> codes;
  for (Op k : z->codes)
    codes.push_back(tflite::CreateOperatorCode(fbb, (int8_t)k, 0, 1, k));
  std::vector<flatbuffers::Offset<tflite::SubGraph>> sgs = {
      tflite::CreateSubGraphDirect(fbb, &tens, &z->inputs, &z->outputs, &ops)};
  fbb.Finish(tflite::CreateModelDirect(fbb, 3, &codes, &sgs,
                                       "arenad test model", &bufs),
             tflite::ModelIdentifier());
  const uint8_t *p = fbb.GetBufferPointer();
  return std::vector<uint8_t>(p, p + fbb.GetSize());
}

}  // namespace

std::vector<uint8_t> ReshapeInPlaceModel() {
  Net z;
  Start(&z, 0);
  const Act none = tflite::ActivationFunctionType_NONE;
  Val in = NewVal(&z, 4, false);                                  /* t0 */
  z.inputs = {in.tensor};
  Val w = Binary(&z, tflite::BuiltinOperator_ADD, in, in, none);  /* t1 */
  Val x = Binary(&z, tflite::BuiltinOperator_ADD, w, {-1, 0, false},
                 none);                                           /* t3 */
  Val r6 = Unary(&z, tflite::BuiltinOperator_RELU6, x);           /* t4 */
  Val r = Reshape(&z, x, true);                                   /* t5 */
  Val y = Binary(&z, tflite::BuiltinOperator_ADD, r, {-1, 0, false},
                 none);                                           /* t7 */
  Val d = Binary(&z, tflite::BuiltinOperator_SUB, x, r6, none);   /* t8 */
  Val zero = Unary(&z, tflite::BuiltinOperator_RELU, d);          /* t9 */
  Val back = Reshape(&z, y, false);                               /* t10 */
  Val out = Concat(&z, zero, back);                               /* t11 */
  z.outputs = {out.tensor};
  return Finish(&z);
}

std::vector<uint8_t> SharingModel(uint64_t seed) {
  Net z;
  Start(&z, seed);
  Val in = NewVal(&z, Rand(&z, 2, 8), false);
  z.inputs = {in.tensor};
  for (int i = 0; i < kSteps; i++)
    Step(&z);
  /* the output: every activation that reads a reshaped tensor again,
   * then 4-D activations made late, concatenated, so that most branches
   * reach it */
  Val out = Pick4D(&z);
  for (const Val &v : z.keep)
    if (v.tensor != out.tensor && out.c + v.c <= 4 * kMaxC)
      out = Concat(&z, out, v);
  for (size_t k = z.vals.size() - 1; k-- > 1;) {
    const Val v = z.vals[k];
    if (!v.flat && v.tensor != out.tensor && out.c + v.c <= 4 * kMaxC &&
        Rand(&z, 0, 1))
      out = Concat(&z, out, v);
  }
  z.outputs = {out.tensor};
  return Finish(&z);
}

}  // namespace gen_models

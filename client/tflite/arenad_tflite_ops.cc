/*
 * arenad_tflite_ops.cc - arenad::TfliteOpResolver: TFLite's own kernels
 * for the operators listed in arenad_tflite_ops.h, registered one table
 * row each (or, compiled with ARENAD_TFLITE_ALL_BUILTINS, every builtin
 * kernel of BuiltinOpResolver), and MediaPipe's
 * Convolution2DTransposeBias on the shared arithmetic of
 * client/ops/conv_transpose_bias.cc (Prepare checks the tensors and sets
 * the output's shape; Eval reads the geometry Prepare kept in the node).
 */
#include "arenad_tflite_ops.h"

#include <limits.h>

#include "tflite/kernels/builtin_op_kernels.h"
#include "tflite/kernels/kernel_util.h"
#ifdef ARENAD_TFLITE_ALL_BUILTINS
#include "tflite/kernels/register.h"
#endif

namespace arenad {

namespace {

namespace k = tflite::ops::builtin;

/* One builtin: its code, TFLite's kernel and the versions that kernel
 * takes (BuiltinOpResolver's ranges). */
struct Builtin {
  tflite::BuiltinOperator op;
  TfLiteRegistration *(*reg)();
  int min_version, max_version;
};

const Builtin kBuiltins[] = {
    {tflite::BuiltinOperator_ADD, k::Register_ADD, 1, 6},
    {tflite::BuiltinOperator_AVERAGE_POOL_2D, k::Register_AVERAGE_POOL_2D, 1, 3},
    {tflite::BuiltinOperator_CONCATENATION, k::Register_CONCATENATION, 1, 7},
    {tflite::BuiltinOperator_CONV_2D, k::Register_CONV_2D, 1, 8},
    {tflite::BuiltinOperator_DEPTH_TO_SPACE, k::Register_DEPTH_TO_SPACE, 1, 2},
    {tflite::BuiltinOperator_DEPTHWISE_CONV_2D, k::Register_DEPTHWISE_CONV_2D, 1, 7},
    {tflite::BuiltinOperator_DEQUANTIZE, k::Register_DEQUANTIZE, 1, 9},
    {tflite::BuiltinOperator_ELU, k::Register_ELU, 1, 1},
    {tflite::BuiltinOperator_EXPAND_DIMS, k::Register_EXPAND_DIMS, 1, 1},
    {tflite::BuiltinOperator_FULLY_CONNECTED, k::Register_FULLY_CONNECTED, 1, 14},
    {tflite::BuiltinOperator_HARD_SWISH, k::Register_HARD_SWISH, 1, 1},
    {tflite::BuiltinOperator_LEAKY_RELU, k::Register_LEAKY_RELU, 1, 2},
    {tflite::BuiltinOperator_LOGISTIC, k::Register_LOGISTIC, 1, 3},
    {tflite::BuiltinOperator_MAX_POOL_2D, k::Register_MAX_POOL_2D, 1, 3},
    {tflite::BuiltinOperator_MEAN, k::Register_MEAN, 1, 3},
    {tflite::BuiltinOperator_MUL, k::Register_MUL, 1, 8},
    {tflite::BuiltinOperator_PAD, k::Register_PAD, 1, 6},
    {tflite::BuiltinOperator_PRELU, k::Register_PRELU, 1, 1},
    {tflite::BuiltinOperator_QUANTIZE, k::Register_QUANTIZE, 1, 6},
    {tflite::BuiltinOperator_RELU, k::Register_RELU, 1, 3},
    {tflite::BuiltinOperator_RELU6, k::Register_RELU6, 1, 3},
    {tflite::BuiltinOperator_RESHAPE, k::Register_RESHAPE, 1, 1},
    {tflite::BuiltinOperator_RESIZE_BILINEAR, k::Register_RESIZE_BILINEAR, 1, 4},
    {tflite::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR,
     k::Register_RESIZE_NEAREST_NEIGHBOR, 1, 4},
    {tflite::BuiltinOperator_SOFTMAX, k::Register_SOFTMAX, 1, 4},
    {tflite::BuiltinOperator_SPACE_TO_DEPTH, k::Register_SPACE_TO_DEPTH, 1, 2},
    {tflite::BuiltinOperator_SQUEEZE, k::Register_SQUEEZE, 1, 2},
    {tflite::BuiltinOperator_STRIDED_SLICE, k::Register_STRIDED_SLICE, 1, 8},
    {tflite::BuiltinOperator_SUB, k::Register_SUB, 1, 5},
    {tflite::BuiltinOperator_SVDF, k::Register_SVDF, 1, 4},
    {tflite::BuiltinOperator_TANH, k::Register_TANH, 1, 3},
    {tflite::BuiltinOperator_TRANSPOSE, k::Register_TRANSPOSE, 1, 9},
    {tflite::BuiltinOperator_TRANSPOSE_CONV, k::Register_TRANSPOSE_CONV, 1, 5},
    {tflite::BuiltinOperator_UNIDIRECTIONAL_SEQUENCE_LSTM,
     k::Register_UNIDIRECTIONAL_SEQUENCE_LSTM, 1, 4},
};

/* ---- Convolution2DTransposeBias ------------------------------------------ */

constexpr int kData = 0, kWeights = 1, kBias = 2;

void *ConvInit(TfLiteContext *, const char *, size_t) {
  return new ConvTransposeGeometry();
}

void ConvFree(TfLiteContext *, void *data) {
  delete static_cast<ConvTransposeGeometry *>(data);
}

/* Whether the tensors have the types and ranks the operator takes (the
 * output's rank is set by Prepare). */
bool ConvTypesAndRanks(const TfLiteTensor *in, const TfLiteTensor *w,
                       const TfLiteTensor *b, const TfLiteTensor *out) {
  return in->type == kTfLiteFloat32 && w->type == kTfLiteFloat32 &&
         b->type == kTfLiteFloat32 && out->type == kTfLiteFloat32 &&
         in->dims->size == 4 && w->dims->size == 4 && b->dims->size == 1;
}

/* Gives out the shape {n, h, w, c}. */
TfLiteStatus ConvResize(TfLiteContext *ctx, TfLiteTensor *out, int n, int h,
                        int w, int c) {
  TfLiteIntArray *dims = TfLiteIntArrayCreate(4);
  if (dims == nullptr)
    return kTfLiteError;
  dims->data[0] = n;
  dims->data[1] = h;
  dims->data[2] = w;
  dims->data[3] = c;
  return ctx->ResizeTensor(ctx, out, dims); /* takes dims */
}

/* Checks the tensors against each other and the options, gives the
 * output the shape the options give when it has another, and fills
 * *g. */
TfLiteStatus ConvShapes(TfLiteContext *ctx, const TfLiteTensor *in,
                        const TfLiteTensor *w, const TfLiteTensor *b,
                        TfLiteTensor *out, const ConvTransposeOptions &o,
                        ConvTransposeGeometry *g) {
  const int *id = in->dims->data, *wd = w->dims->data;
  int want[4] = {id[0], 0, 0, wd[0]};
  const int *od = out->dims->size == 4 ? out->dims->data : want;
  int64_t h = 0, wid = 0;
  int rc = ConvTransposeGeometryOf(id, wd, b->dims->data[0], od, o, g, &h, &wid);
  if (rc == 2 && h <= INT_MAX && wid <= INT_MAX) {
    TF_LITE_ENSURE_OK(ctx, ConvResize(ctx, out, id[0], (int)h, (int)wid, wd[0]));
    rc = ConvTransposeGeometryOf(id, wd, b->dims->data[0], out->dims->data, o,
                                 g, &h, &wid);
  }
  if (rc != 0) {
    TF_LITE_KERNEL_LOG(ctx, "Convolution2DTransposeBias: tensor shapes do "
                            "not match");
    return kTfLiteError;
  }
  return kTfLiteOk;
}

TfLiteStatus ConvPrepare(TfLiteContext *ctx, TfLiteNode *node) {
  ConvTransposeOptions o;
  size_t len = node->custom_initial_data_size < 0
                   ? 0
                   : (size_t)node->custom_initial_data_size;
  if (!ConvTransposeReadOptions(node->custom_initial_data, len, &o)) {
    TF_LITE_KERNEL_LOG(ctx, "Convolution2DTransposeBias: custom options "
                            "must be padding (1 SAME or 2 VALID), "
                            "stride_width, stride_height (>= 1)");
    return kTfLiteError;
  }
  TF_LITE_ENSURE_EQ(ctx, tflite::NumInputs(node), 3);
  TF_LITE_ENSURE_EQ(ctx, tflite::NumOutputs(node), 1);
  const TfLiteTensor *in, *w, *b;
  TfLiteTensor *out;
  TF_LITE_ENSURE_OK(ctx, tflite::GetInputSafe(ctx, node, kData, &in));
  TF_LITE_ENSURE_OK(ctx, tflite::GetInputSafe(ctx, node, kWeights, &w));
  TF_LITE_ENSURE_OK(ctx, tflite::GetInputSafe(ctx, node, kBias, &b));
  TF_LITE_ENSURE_OK(ctx, tflite::GetOutputSafe(ctx, node, 0, &out));
  if (!ConvTypesAndRanks(in, w, b, out)) {
    TF_LITE_KERNEL_LOG(ctx, "Convolution2DTransposeBias: needs float32 data "
                            "[n,h,w,c], weights [o,kh,kw,c], bias [o] and "
                            "output [n,oh,ow,o]");
    return kTfLiteError;
  }
  return ConvShapes(ctx, in, w, b, out, o,
                    static_cast<ConvTransposeGeometry *>(node->user_data));
}

TfLiteStatus ConvEval(TfLiteContext *ctx, TfLiteNode *node) {
  const TfLiteTensor *in, *w, *b;
  TfLiteTensor *out;
  TF_LITE_ENSURE_OK(ctx, tflite::GetInputSafe(ctx, node, kData, &in));
  TF_LITE_ENSURE_OK(ctx, tflite::GetInputSafe(ctx, node, kWeights, &w));
  TF_LITE_ENSURE_OK(ctx, tflite::GetInputSafe(ctx, node, kBias, &b));
  TF_LITE_ENSURE_OK(ctx, tflite::GetOutputSafe(ctx, node, 0, &out));
  ConvTransposeBiasEval(*static_cast<const ConvTransposeGeometry *>(
                            node->user_data),
                        in->data.f, w->data.f, b->data.f, out->data.f);
  return kTfLiteOk;
}

TfLiteRegistration MakeConvRegistration() {
  TfLiteRegistration r = {};
  r.init = ConvInit;
  r.free = ConvFree;
  r.prepare = ConvPrepare;
  r.invoke = ConvEval;
  r.custom_name = kConvolution2DTransposeBias;
  r.version = 1;
  return r;
}

}  // namespace

const TfLiteRegistration *RegisterConvolution2DTransposeBias() {
  static const TfLiteRegistration r = MakeConvRegistration();
  return &r;
}

void AddTfliteBuiltins(tflite::MutableOpResolver *r) {
  for (const Builtin &b : kBuiltins)
    r->AddBuiltin(b.op, b.reg(), b.min_version, b.max_version);
}

TfliteOpResolver::TfliteOpResolver() {
#ifdef ARENAD_TFLITE_ALL_BUILTINS
  /* BuiltinOpResolver's kernels (AddAll copies registrations only), not
   * its default delegate, XNNPACK in a TFLite built with it: a delegate
   * runs its part of the graph on memory of its own, outside the arena
   * arenad plans. */
  AddAll(tflite::ops::builtin::BuiltinOpResolver());
#else
  AddTfliteBuiltins(this);
#endif
  AddCustom(kConvolution2DTransposeBias, RegisterConvolution2DTransposeBias());
}

}  // namespace arenad

/*
 * transpose_conv_bias.cc - MediaPipe's custom operator
 * Convolution2DTransposeBias for TensorFlow Lite Micro: a transposed
 * convolution plus a bias, float32 (tensors, options and sizes in
 * arenad_tflm_ops.h).
 *
 * The arithmetic is client/ops/conv_transpose_bias.cc's; this file reads
 * the node's tensors and options the TFLM way.
 *
 * Init allocates the node's OpData in TFLM's persistent arena; Prepare
 * reads the options, checks every tensor against them and fills it in;
 * Eval only reads it.
 */
#include <stdint.h>

#include "arenad_tflm_ops.h"
#include "tensorflow/lite/kernels/kernel_util.h"
#include "tensorflow/lite/micro/kernels/kernel_util.h"
#include "tensorflow/lite/micro/micro_context.h"
#include "tensorflow/lite/micro/micro_log.h"

namespace arenad {

namespace {

constexpr int kData = 0;
constexpr int kWeights = 1;
constexpr int kBias = 2;
constexpr int kInputs = 3;

/* What Prepare works out for a node; in TFLM's persistent arena. */
struct OpData {
  ConvTransposeGeometry g;
};

/* A node's tensors as Prepare sees them; released on destruction. */
class PrepareTensors {
 public:
  PrepareTensors(TfLiteContext *ctx, TfLiteNode *node)
      : mc_(tflite::GetMicroContext(ctx)) {
    for (int i = 0; i < kInputs; i++)
      in_[i] = mc_->AllocateTempInputTensor(node, i);
    out_ = mc_->AllocateTempOutputTensor(node, 0);
  }
  ~PrepareTensors() {
    for (TfLiteTensor *t : in_)
      if (t != nullptr)
        mc_->DeallocateTempTfLiteTensor(t);
    if (out_ != nullptr)
      mc_->DeallocateTempTfLiteTensor(out_);
  }
  PrepareTensors(const PrepareTensors &) = delete;
  PrepareTensors &operator=(const PrepareTensors &) = delete;

  bool all() const {
    return in_[kData] && in_[kWeights] && in_[kBias] && out_;
  }
  const TfLiteTensor *in(int i) const { return in_[i]; }
  const TfLiteTensor *out() const { return out_; }

 private:
  tflite::MicroContext *mc_;
  TfLiteTensor *in_[kInputs];
  TfLiteTensor *out_;
};

/* Whether the tensors have the types and ranks the operator takes. */
bool TypesAndRanks(const PrepareTensors &t) {
  const TfLiteTensor *all[] = {t.in(kData), t.in(kWeights), t.in(kBias),
                               t.out()};
  const int ranks[] = {4, 4, 1, 4};
  for (int i = 0; i < 4; i++)
    if (all[i]->type != kTfLiteFloat32 || all[i]->dims->size != ranks[i])
      return false;
  return true;
}

/* Checks the tensors' shapes against each other and the options, and
 * fills *d. */
TfLiteStatus CheckShapes(const PrepareTensors &t,
                         const ConvTransposeOptions &o, OpData *d) {
  int64_t want_h = 0, want_w = 0;
  const int *out = t.out()->dims->data;
  switch (ConvTransposeGeometryOf(t.in(kData)->dims->data,
                                  t.in(kWeights)->dims->data,
                                  t.in(kBias)->dims->data[0], out, o, &d->g,
                                  &want_h, &want_w)) {
  case 0:
    return kTfLiteOk;
  case 2:
    MicroPrintf("Convolution2DTransposeBias: output is %dx%d, the options "
                "give %dx%d", out[1], out[2], (int)want_h, (int)want_w);
    return kTfLiteError;
  default:
    MicroPrintf("Convolution2DTransposeBias: tensor shapes do not match");
    return kTfLiteError;
  }
}

void *Init(TfLiteContext *ctx, const char *, size_t) {
  return ctx->AllocatePersistentBuffer(ctx, sizeof(OpData));
}

TfLiteStatus Prepare(TfLiteContext *ctx, TfLiteNode *node) {
  ConvTransposeOptions o;
  if (node->user_data == nullptr)
    return kTfLiteError;
  if (!ConvTransposeReadOptions(node->custom_initial_data,
                                node->custom_initial_data_size < 0
                                    ? 0
                                    : (size_t)node->custom_initial_data_size,
                                &o)) {
    MicroPrintf("Convolution2DTransposeBias: custom options must be padding "
                "(1 SAME or 2 VALID), stride_width, stride_height (>= 1)");
    return kTfLiteError;
  }
  if (tflite::NumInputs(node) != kInputs || tflite::NumOutputs(node) != 1) {
    MicroPrintf("Convolution2DTransposeBias: needs 3 inputs and 1 output");
    return kTfLiteError;
  }
  PrepareTensors t(ctx, node);
  if (!t.all() || !TypesAndRanks(t)) {
    MicroPrintf("Convolution2DTransposeBias: needs float32 data [n,h,w,c], "
                "weights [o,kh,kw,c], bias [o] and output [n,oh,ow,o]");
    return kTfLiteError;
  }
  return CheckShapes(t, o, static_cast<OpData *>(node->user_data));
}

TfLiteStatus Eval(TfLiteContext *ctx, TfLiteNode *node) {
  const TfLiteEvalTensor *in = tflite::micro::GetEvalInput(ctx, node, kData);
  const TfLiteEvalTensor *w = tflite::micro::GetEvalInput(ctx, node, kWeights);
  const TfLiteEvalTensor *b = tflite::micro::GetEvalInput(ctx, node, kBias);
  TfLiteEvalTensor *out = tflite::micro::GetEvalOutput(ctx, node, 0);
  ConvTransposeBiasEval(static_cast<const OpData *>(node->user_data)->g,
                        tflite::micro::GetTensorData<float>(in),
                        tflite::micro::GetTensorData<float>(w),
                        tflite::micro::GetTensorData<float>(b),
                        tflite::micro::GetTensorData<float>(out));
  return kTfLiteOk;
}

}  // namespace

TFLMRegistration Register_CONVOLUTION_2D_TRANSPOSE_BIAS() {
  return tflite::micro::RegisterOp(Init, Prepare, Eval);
}

}  // namespace arenad

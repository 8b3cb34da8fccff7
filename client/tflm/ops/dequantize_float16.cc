/*
 * dequantize_float16.cc - DEQUANTIZE for TensorFlow Lite Micro with
 * FLOAT16 input (arenad_tflm_ops.h): FLOAT16 to FLOAT32, which TFLM's
 * own DEQUANTIZE refuses, and TFLM's kernel for every other input type.
 *
 * The registration is TFLM's Register_DEQUANTIZE() with prepare and
 * invoke replaced by the two functions below. Each looks at the node's
 * input type: FLOAT16 runs the code here, anything else calls TFLM's
 * prepare or invoke, which then see the node exactly as they would
 * without this wrapper. TFLM's init runs for every node (it allocates
 * TFLM's few bytes of per-node data, which the FLOAT16 path leaves
 * unused) and its free, if it has one, too. Nothing is kept between
 * calls: TFLM's registration is asked for again where it is needed.
 */
#include <string.h>

#include "arenad_tflm_ops.h"
#include "tensorflow/lite/kernels/kernel_util.h"
#include "tensorflow/lite/micro/kernels/kernel_util.h"
#include "tensorflow/lite/micro/kernels/micro_ops.h"
#include "tensorflow/lite/micro/micro_context.h"
#include "tensorflow/lite/micro/micro_log.h"
#include "tensorflow/lite/micro/micro_utils.h"

namespace arenad {

namespace {

/* Whether node's single input is FLOAT16, as Prepare sees it. A node
 * with another number of inputs or outputs is TFLM's to refuse. */
bool HasFloat16Input(TfLiteContext *ctx, TfLiteNode *node) {
  if (tflite::NumInputs(node) != 1 || tflite::NumOutputs(node) != 1)
    return false;
  tflite::MicroContext *mc = tflite::GetMicroContext(ctx);
  TfLiteTensor *in = mc->AllocateTempInputTensor(node, 0);
  if (in == nullptr)
    return false;
  bool f16 = in->type == kTfLiteFloat16;
  mc->DeallocateTempTfLiteTensor(in);
  return f16;
}

/* The FLOAT16 path of Prepare: the output must be FLOAT32 with as many
 * elements as the input. */
TfLiteStatus PrepareFloat16(TfLiteContext *ctx, TfLiteNode *node) {
  tflite::MicroContext *mc = tflite::GetMicroContext(ctx);
  TfLiteTensor *in = mc->AllocateTempInputTensor(node, 0);
  TfLiteTensor *out = mc->AllocateTempOutputTensor(node, 0);
  TfLiteStatus st = kTfLiteOk;
  if (out == nullptr || out->type != kTfLiteFloat32) {
    MicroPrintf("DEQUANTIZE: FLOAT16 input needs a FLOAT32 output");
    st = kTfLiteError;
  } else if (tflite::NumElements(in) != tflite::NumElements(out)) {
    MicroPrintf("DEQUANTIZE: input and output sizes differ");
    st = kTfLiteError;
  }
  mc->DeallocateTempTfLiteTensor(in);
  if (out != nullptr)
    mc->DeallocateTempTfLiteTensor(out);
  return st;
}

TfLiteStatus Prepare(TfLiteContext *ctx, TfLiteNode *node) {
  if (HasFloat16Input(ctx, node))
    return PrepareFloat16(ctx, node);
  return tflite::Register_DEQUANTIZE().prepare(ctx, node);
}

/* Converts every element. The input may be a constant in the model's
 * FlatBuffer, so it is read bytewise rather than through a uint16_t
 * pointer that might not be aligned. */
void DequantizeFloat16(const TfLiteEvalTensor *in, TfLiteEvalTensor *out) {
  const uint8_t *src = tflite::micro::GetTensorData<uint8_t>(in);
  float *dst = tflite::micro::GetTensorData<float>(out);
  int n = tflite::ElementCount(*in->dims);
  for (int i = 0; i < n; i++) {
    uint16_t h;
    memcpy(&h, src + 2 * i, sizeof h);
    dst[i] = HalfToFloat(h);
  }
}

TfLiteStatus Invoke(TfLiteContext *ctx, TfLiteNode *node) {
  const TfLiteEvalTensor *in = tflite::micro::GetEvalInput(ctx, node, 0);
  if (in == nullptr || in->type != kTfLiteFloat16)
    return tflite::Register_DEQUANTIZE().invoke(ctx, node);
  DequantizeFloat16(in, tflite::micro::GetEvalOutput(ctx, node, 0));
  return kTfLiteOk;
}

}  // namespace

TFLMRegistration Register_DEQUANTIZE_FLOAT16() {
  TFLMRegistration r = tflite::Register_DEQUANTIZE();
  r.prepare = Prepare;
  r.invoke = Invoke;
  return r;
}

}  // namespace arenad

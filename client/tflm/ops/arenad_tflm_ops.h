/*
 * arenad_tflm_ops.h - TensorFlow Lite Micro kernels that TFLM's own
 * reference kernels lack and the MediaPipe vision models need:
 *
 *  - DEQUANTIZE of FLOAT16 to FLOAT32 (models that store their weights
 *    as half floats and dequantize them at run time, such as
 *    face_detection_short_range). The registration wraps TFLM's own
 *    DEQUANTIZE: a node whose input is FLOAT16 runs this kernel, every
 *    other node runs TFLM's prepare and invoke unchanged. Init and free
 *    are TFLM's for every node.
 *  - Convolution2DTransposeBias, MediaPipe's custom operator: a
 *    transposed convolution plus a bias, float32, on the arithmetic of
 *    client/ops/conv_transpose_bias.h (shared with the TFLite kernel).
 *
 * An interpreter registers them in its op resolver, in place of TFLM's
 * DEQUANTIZE:
 *
 *     tflite::MicroMutableOpResolver<N> r;
 *     arenad::AddTflmOps(&r);   // both kernels; or one at a time:
 *     r.AddDequantize(arenad::Register_DEQUANTIZE_FLOAT16());
 *     TFLMRegistration t = arenad::Register_CONVOLUTION_2D_TRANSPOSE_BIAS();
 *     r.AddCustom(arenad::kConvolution2DTransposeBias, &t);
 *
 * The resolver copies a registration, so the one returned may be a
 * local; the custom operator's name must outlive the resolver (the
 * constant below does). Link libarenad-tflm-ops.a before TFLM.
 *
 * OWNERSHIP AND THREADS
 *  The kernels keep no global state. Everything a node keeps lives in
 *  TFLM's arena (persistent buffers allocated through the TfLiteContext)
 *  and is TFLM's to release with the arena. Like TFLM's kernels, they
 *  run on the interpreter's thread.
 */
#ifndef ARENAD_TFLM_OPS_H
#define ARENAD_TFLM_OPS_H

#include <stdint.h>

#include "conv_transpose_bias.h"
#include "tensorflow/lite/c/common.h"
#include "tensorflow/lite/micro/micro_common.h"

namespace arenad {

/* An IEEE 754 binary16 value (its bits) as a float: exact for every
 * finite value, subnormals included; infinities keep their sign; a NaN
 * stays a NaN with its sign and payload, made quiet (as x86's F16C and
 * Arm's FCVT do). */
float HalfToFloat(uint16_t half);

/* TFLM's DEQUANTIZE with FLOAT16 input added: for AddDequantize(). */
TFLMRegistration Register_DEQUANTIZE_FLOAT16();

/* MediaPipe's Convolution2DTransposeBias, for AddCustom() under
 * kConvolution2DTransposeBias: tensors, options, sizes and values as
 * client/ops/conv_transpose_bias.h gives them. The output tensor's shape
 * in the model must match the options, or Prepare fails. */
TFLMRegistration Register_CONVOLUTION_2D_TRANSPOSE_BIAS();

/* Registers both kernels in r (any tflite::MicroMutableOpResolver):
 * Register_DEQUANTIZE_FLOAT16() as DEQUANTIZE, so r must not hold TFLM's
 * DEQUANTIZE already, and the transposed convolution under its custom
 * code. Needs two free slots. */
template <typename Resolver>
TfLiteStatus AddTflmOps(Resolver *r) {
  TFLMRegistration t = Register_CONVOLUTION_2D_TRANSPOSE_BIAS();
  if (r->AddDequantize(Register_DEQUANTIZE_FLOAT16()) != kTfLiteOk)
    return kTfLiteError;
  return r->AddCustom(kConvolution2DTransposeBias, &t);
}

}  // namespace arenad

#endif /* ARENAD_TFLM_OPS_H */

/*
 * arenad_tflite_ops.h - the operators tflite_infer and arenad's tests run
 * on TensorFlow Lite: an op resolver with the builtin kernels of the
 * bundled models and of the in-place allowlist, and MediaPipe's custom
 * operator Convolution2DTransposeBias.
 *
 * TFLite's BuiltinOpResolver registers every builtin kernel, so a program
 * that uses it links all of them (about 150 kernels, most of a TFLite
 * build's compile time). arenad::TfliteOpResolver, as the tests build it,
 * registers only these, with the same kernels and version ranges as
 * BuiltinOpResolver:
 *
 *   ADD AVERAGE_POOL_2D CONCATENATION CONV_2D DEPTH_TO_SPACE
 *   DEPTHWISE_CONV_2D DEQUANTIZE ELU EXPAND_DIMS FULLY_CONNECTED
 *   HARD_SWISH LEAKY_RELU LOGISTIC MAX_POOL_2D MEAN MUL PAD PRELU QUANTIZE
 *   RELU RELU6 RESHAPE RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR SOFTMAX
 *   SPACE_TO_DEPTH SQUEEZE STRIDED_SLICE SUB SVDF TANH TRANSPOSE
 *   TRANSPOSE_CONV UNIDIRECTIONAL_SEQUENCE_LSTM
 *
 * (the bundled models', the in-place allowlist's and MediaPipe's vision
 * models' operators), so that `make test` builds TFLite's library with
 * only the kernels they need (client/tflite/tflite_objects.txt).
 * Compiled with ARENAD_TFLITE_ALL_BUILTINS, as `make tflite` compiles it
 * for libarenad-tflite.a and tflite_infer, it registers every kernel of
 * BuiltinOpResolver instead (and so needs a TFLite build that has them
 * all). arenad::TflitePlanner itself takes any tflite::OpResolver.
 *
 * OWNERSHIP AND THREADS
 *  The resolver owns copies of its registrations (MutableOpResolver's
 *  rule) and keeps no global state; the kernels keep theirs in each
 *  node. Like any OpResolver it must outlive the interpreters built with
 *  it.
 */
#ifndef ARENAD_TFLITE_OPS_H
#define ARENAD_TFLITE_OPS_H

#include "conv_transpose_bias.h"
#include "tflite/core/c/common.h"
#include "tflite/mutable_op_resolver.h"

namespace arenad {

/* MediaPipe's Convolution2DTransposeBias for TFLite, for AddCustom()
 * under kConvolution2DTransposeBias: a transposed convolution plus a
 * bias, float32, with the tensors, options, sizes and values of
 * client/ops/conv_transpose_bias.h. Prepare sets the output's shape to
 * the one the options give (MediaPipe's kernel does the same). The
 * registration is a constant shared by every caller. */
const TfLiteRegistration *RegisterConvolution2DTransposeBias();

/* Registers the builtin kernels listed above in r, each over the
 * versions BuiltinOpResolver gives it (the small set, whatever
 * ARENAD_TFLITE_ALL_BUILTINS says). */
void AddTfliteBuiltins(tflite::MutableOpResolver *r);

/* A resolver with the builtins above (every builtin under
 * ARENAD_TFLITE_ALL_BUILTINS) and Convolution2DTransposeBias. */
class TfliteOpResolver : public tflite::MutableOpResolver {
 public:
  TfliteOpResolver();
};

}  // namespace arenad

#endif /* ARENAD_TFLITE_OPS_H */

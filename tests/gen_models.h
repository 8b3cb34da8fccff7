/*
 * gen_models.h - small TFLite models built in memory for the interpreter
 * suites: the TFLite Micro suite (check_tflm_gen.cc, check_tflm_share.cc)
 * and the full TensorFlow Lite suite (check_tflite_rt.cc) run the same
 * models.
 *
 * Every model is a .tflite flatbuffer (schema version 3) built with the
 * FlatBuffers builder API from a seeded generator: the same call gives
 * the same bytes. Activations are [1, 4, 4, C] float32 unless said
 * otherwise, constants are seeded, and the graph input is tensor 0.
 *
 * OWNERSHIP
 *  Each function returns the model's bytes by value; an interpreter that
 *  needs them aligned copies them.
 */
#ifndef ARENAD_TEST_GEN_MODELS_H
#define ARENAD_TEST_GEN_MODELS_H

#include <stdint.h>

#include <vector>

namespace gen_models {

/* A random model of seed: CONCATENATION, STRIDED_SLICE, PAD and ADD on
 * earlier activations, C from 1 to 24 (often recent ones, sometimes old
 * ones, so lifetimes overlap in many ways); the output concatenates the
 * last ones made. Branches leave tensors of many sizes live at once,
 * where a greedy planner fragments its arena. */
std::vector<uint8_t> RandomModel(uint64_t seed);

/* ADD, a 3x3 CONV_2D, ADD: the CONV_2D's output could legally share the
 * bytes of its input (buffer 1) but must not, since the kernel reads
 * neighbours of an element after writing it. */
std::vector<uint8_t> ConvModel();

/* A small net of 3x3 CONV_2D, ADD, channel PAD and CONCATENATION on
 * [1, 4, 4, 4] whose every operator takes any height and width, so
 * TFLite can run it at any input shape [1, H, W, 4]
 * (tests/data/generated/resizable.tflite). */
std::vector<uint8_t> ResizableModel();
/* A chain PAD, ADD, ADD, PAD whose two ADD outputs may each reuse their
 * input's bytes. */
std::vector<uint8_t> ChainModel();

/* A chain of every kind of kernel on the in-place allowlist, each output
 * after the first PAD able to reuse its input's bytes: RELU, RELU6,
 * LEAKY_RELU, LOGISTIC, TANH, HARD_SWISH, ELU, PRELU, ADD, SUB, MUL,
 * RESHAPE, EXPAND_DIMS, SQUEEZE, RESHAPE, then QUANTIZE to int8, an int8
 * requantization (QUANTIZE), DEQUANTIZE and a PAD to the output. */
std::vector<uint8_t> KindsModel();

/* The 15 kinds of kernel KindsModel() proves, as BuiltinOperator codes:
 * every operator of the chain above whose output may share its input's
 * bytes (DEQUANTIZE and the PADs excluded). A test expects a shared pair
 * on each. */
std::vector<int> KindsModelOps();

/* MediaPipe's custom operator Convolution2DTransposeBias on an input of
 * [1, 4, 4, 3] (SAME, stride 2, a 3x3 kernel of 2 output channels, so
 * the output is [1, 8, 8, 2]), then an ADD of that output to itself, the
 * graph's output. The weights and the bias are small integers, tensors 1
 * and 2; the transposed convolution's output is tensor 3. */
std::vector<uint8_t> TransposeConvModel();

/* gen_models_random.cc: models whose outputs the suites compare with a
 * run where every tensor has bytes of its own (no sharing at all). */

/* The reduced graph of the finding in docs/client.md ("TFLite's own
 * planner and RESHAPE"), on an input of [1, 4, 4, 4], tensor names tN:
 *   t1 = ADD(t0, t0); t3 = ADD(t1, t2) (t2 a constant of shape [4]);
 *   t4 = RELU6(t3); t5 = RESHAPE(t3) to [1, 16, 4];
 *   t7 = ADD(t5, t6) (t6 a constant); t8 = SUB(t3, t4); t9 = RELU(t8);
 *   t10 = RESHAPE(t7) to [1, 4, 4, 4]; t11 = CONCATENATION(t9, t10), the
 *   output.
 * t8 = t3 - RELU6(t3) is at most 0, so channels 0..3 of the output are
 * all zeros. TFLite's ArenaPlanner puts t1, t3, t5, t7 and t10 on one
 * buffer, so the ADD of t7 overwrites t3 before the SUB reads it. */
std::vector<uint8_t> ReshapeInPlaceModel();

/* A random float32 model of seed, of the kinds of operators in-place
 * sharing meets: CONCATENATION, STRIDED_SLICE, PAD, ADD, SUB and MUL
 * (fused RELU, RELU6 or RELU_N1_TO_1 half the time; the second operand
 * an activation of the same shape or a constant of shape [C] that
 * broadcasts), RELU, RELU6, LOGISTIC, TANH and RESHAPE between
 * [1, 4, 4, C] and [1, 16, C], with residual branches and fan-outs; and,
 * among the steps, the shape of ReshapeInPlaceModel(): an elementwise
 * output x on a fresh tensor, a RESHAPE of x, an elementwise operator on
 * the reshape's output, and x read again. The output concatenates
 * activations made late. */
std::vector<uint8_t> SharingModel(uint64_t seed);

/* A small segmentation net shaped like MediaPipe's vision models, on an
 * input of [1, 16, 16, 3] float32 (int8: QUANTIZE first, every other
 * activation int8, weights int8, DEQUANTIZE last). Encoder: a strided
 * 3x3 CONV_2D beside SPACE_TO_DEPTH of the input, CONCATENATION,
 * HARD_SWISH, a strided DEPTHWISE_CONV_2D, a 1x1 CONV_2D with RELU6 and a
 * squeeze and excite (MEAN, CONV_2D, LOGISTIC, MUL). Decoder:
 * TRANSPOSE_CONV to 8x8 (in the float model its weights are FLOAT16
 * behind a DEQUANTIZE, as in MediaPipe's float16 models), the encoder's
 * skip concatenated, a 1x1 CONV_2D, PRELU; then RESIZE_BILINEAR,
 * DEPTH_TO_SPACE and RESIZE_NEAREST_NEIGHBOR (of the encoder's 4x4) to
 * 16x16, concatenated, PAD, a VALID 3x3 CONV_2D to two channels and
 * LOGISTIC: the output [1, 16, 16, 2]. */
std::vector<uint8_t> SegmenterModel(bool int8);

/* The builtin codes of the operators SegmenterModel(false) has, each
 * once. */
std::vector<int> SegmenterModelOps();

/* MAXIMUM under two operator codes (versions 1 and 2), FLOOR and ADD on
 * [1, 4, 4, 4] float32: builtins that arenad::TfliteOpResolver's small
 * set has no kernel for (but ADD), and that every full TFLite build
 * runs. */
std::vector<uint8_t> UnregisteredOpsModel();

/* A model as a file of tests/data/generated/. */
struct FileModel {
  const char *file; /* its name there, static */
  std::vector<uint8_t> bytes;
};

/* The models tests/data/generated/ holds, written there by
 * gen_models_write (`make gen-models`): segmenter_float.tflite,
 * segmenter_int8.tflite and unregistered_ops.tflite. */
std::vector<FileModel> FileModels();

}  // namespace gen_models

#endif /* ARENAD_TEST_GEN_MODELS_H */

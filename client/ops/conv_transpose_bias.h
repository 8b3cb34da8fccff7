/*
 * conv_transpose_bias.h - the arithmetic of MediaPipe's custom operator
 * Convolution2DTransposeBias, shared by arenad's TensorFlow Lite Micro
 * kernel (client/tflm/ops/) and its TensorFlow Lite kernel
 * (client/tflite/): options, sizes and the output values, with no
 * interpreter behind them.
 *
 * THE OPERATOR
 *  Inputs: 0 the data, float32 NHWC [n, h, w, in_c]; 1 the weights,
 *  float32 [out_c, kh, kw, in_c]; 2 the bias, float32 [out_c]. Output:
 *  float32 [n, oh, ow, out_c]. The custom options are the first three
 *  int32 fields of TFLite's TfLiteTransposeConvParams, raw and
 *  little-endian (12 bytes; longer options are accepted and the rest
 *  ignored): padding (1 SAME, 2 VALID; anything else is refused),
 *  stride_width, stride_height (both 1 .. 65536).
 *
 *  Sizes, per spatial dimension with input i, kernel k and stride s, as
 *  MediaPipe computes them: VALID pads nothing and gives s*(i-1)+k; SAME
 *  pads p = max(0, k - (i-1)%s - 1) in all, p/2 before (the rest after),
 *  and gives s*(i-1)+k-p: i*s when k >= s and s divides i (the usual
 *  case). out[b,y,x,o] = bias[o] + the sum over every input pixel
 *  (iy, ix) and kernel tap (ky, kx) with iy*s_h - p_top + ky = y and
 *  ix*s_w - p_left + kx = x of in[b,iy,ix,c] * w[o,ky,kx,c] over c.
 *
 * HOW IT IS COMPUTED
 *  A transposed convolution scatters each input pixel, times the kernel,
 *  into the output. ConvTransposeBiasEval gathers instead: each output
 *  value is its bias plus, for every tap that reaches it, the dot
 *  product over the input channels, so every output is written once and
 *  both the input pixel and the weights it meets are contiguous. Only the
 *  order of the float additions differs from a scattering loop.
 *
 * OWNERSHIP AND THREADS
 *  Pure functions on caller-owned memory; no state.
 */
#ifndef ARENAD_CONV_TRANSPOSE_BIAS_H
#define ARENAD_CONV_TRANSPOSE_BIAS_H

#include <stddef.h>
#include <stdint.h>

namespace arenad {

/* The custom code MediaPipe's models give the operator. */
constexpr char kConvolution2DTransposeBias[] = "Convolution2DTransposeBias";

/* TfLitePadding's values, as the options store them. */
constexpr int32_t kConvPaddingSame = 1;
constexpr int32_t kConvPaddingValid = 2;

/* A node's options. */
struct ConvTransposeOptions {
  int32_t padding, stride_w, stride_h;
};

/* Everything the evaluation loops over: the sizes of the tensors, the
 * strides and the rows and columns cut before the first output. */
struct ConvTransposeGeometry {
  int batches, in_h, in_w, in_c;
  int k_h, k_w;
  int out_h, out_w, out_c;
  int stride_h, stride_w;
  int pad_top, pad_left;
};

/* Reads len bytes of custom options into *o; false if they are missing,
 * short, or out of range. */
bool ConvTransposeReadOptions(const void *data, size_t len,
                              ConvTransposeOptions *o);

/* Checks the shapes (in, w and out of rank 4, bias of length bias_len)
 * against each other and the options, and fills *g. Returns 0 when they
 * agree; 1 when the tensors do not fit each other; 2 when the output's
 * height or width is not what the options give, which are then in
 * *want_h and *want_w. */
int ConvTransposeGeometryOf(const int in[4], const int w[4], int bias_len,
                            const int out[4], const ConvTransposeOptions &o,
                            ConvTransposeGeometry *g, int64_t *want_h,
                            int64_t *want_w);

/* Writes the output (g.batches * g.out_h * g.out_w * g.out_c floats) from
 * the data, the weights and the bias, laid out as above. */
void ConvTransposeBiasEval(const ConvTransposeGeometry &g, const float *in,
                           const float *w, const float *bias, float *out);

}  // namespace arenad

#endif /* ARENAD_CONV_TRANSPOSE_BIAS_H */

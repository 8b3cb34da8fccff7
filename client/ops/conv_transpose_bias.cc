/*
 * conv_transpose_bias.cc - Convolution2DTransposeBias's options, sizes
 * and output values (conv_transpose_bias.h).
 */
#include "conv_transpose_bias.h"

#include <string.h>

namespace arenad {

namespace {

constexpr size_t kOptionsBytes = 3 * sizeof(int32_t);
constexpr int32_t kMaxStride = 1 << 16; /* keeps the size arithmetic small */

/* The padding along one dimension, in all (MediaPipe's rule): SAME pads
 * what makes the output in*s when k >= s, VALID nothing. */
int64_t PadTotal(int32_t padding, int64_t in, int64_t k, int64_t s) {
  if (padding != kConvPaddingSame)
    return 0;
  int64_t p = k - (in - 1) % s - 1;
  return p > 0 ? p : 0;
}

/* The output size along one dimension. */
int64_t OutSize(int64_t in, int64_t k, int64_t s, int64_t pad) {
  return s * (in - 1) + k - pad;
}

/* The dot product of n floats at a and b. */
float Dot(const float *a, const float *b, int n) {
  float acc = 0.0f;
  for (int i = 0; i < n; i++)
    acc += a[i] * b[i];
  return acc;
}

/* Output channel oc of output pixel (y, x): its bias plus every tap that
 * reaches it. in is the batch's first pixel. Output row y takes kernel
 * row ky from input row iy when iy*s_h - p_top + ky = y, that is for
 * ky = (y + p_top) mod s_h, then every s_h-th, while iy stays in range;
 * the same along x. */
float OutputValue(const ConvTransposeGeometry &g, const float *in,
                  const float *w, float bias, int y, int x, int oc) {
  float acc = bias;
  int ty = y + g.pad_top, tx = x + g.pad_left;
  for (int ky = ty % g.stride_h; ky < g.k_h && ky <= ty; ky += g.stride_h) {
    int iy = (ty - ky) / g.stride_h;
    if (iy >= g.in_h)
      continue;
    for (int kx = tx % g.stride_w; kx < g.k_w && kx <= tx;
         kx += g.stride_w) {
      int ix = (tx - kx) / g.stride_w;
      if (ix >= g.in_w)
        continue;
      const float *pix = in + ((size_t)iy * g.in_w + ix) * g.in_c;
      const float *tap =
          w + (((size_t)oc * g.k_h + ky) * g.k_w + kx) * g.in_c;
      acc += Dot(pix, tap, g.in_c);
    }
  }
  return acc;
}

}  // namespace

bool ConvTransposeReadOptions(const void *data, size_t len,
                              ConvTransposeOptions *o) {
  if (data == nullptr || len < kOptionsBytes)
    return false;
  int32_t f[3];
  memcpy(f, data, sizeof f);
  *o = {f[0], f[1], f[2]};
  return (o->padding == kConvPaddingSame || o->padding == kConvPaddingValid) &&
         o->stride_w >= 1 && o->stride_w <= kMaxStride && o->stride_h >= 1 &&
         o->stride_h <= kMaxStride;
}

int ConvTransposeGeometryOf(const int in[4], const int w[4], int bias_len,
                            const int out[4], const ConvTransposeOptions &o,
                            ConvTransposeGeometry *g, int64_t *want_h,
                            int64_t *want_w) {
  if (in[3] != w[3] || w[0] != bias_len || out[0] != in[0] ||
      out[3] != w[0] || in[0] < 1 || in[1] < 1 || in[2] < 1 || w[1] < 1 ||
      w[2] < 1)
    return 1;
  int64_t pad_h = PadTotal(o.padding, in[1], w[1], o.stride_h);
  int64_t pad_w = PadTotal(o.padding, in[2], w[2], o.stride_w);
  *want_h = OutSize(in[1], w[1], o.stride_h, pad_h);
  *want_w = OutSize(in[2], w[2], o.stride_w, pad_w);
  if (out[1] != *want_h || out[2] != *want_w)
    return 2;
  *g = {in[0],      in[1],      in[2],          in[3],
        w[1],       w[2],       out[1],         out[2],
        out[3],     o.stride_h, o.stride_w,     (int)(pad_h / 2),
        (int)(pad_w / 2)};
  return 0;
}

void ConvTransposeBiasEval(const ConvTransposeGeometry &g, const float *in,
                           const float *w, const float *bias, float *out) {
  size_t in_batch = (size_t)g.in_h * g.in_w * g.in_c;
  for (int n = 0; n < g.batches; n++, in += in_batch)
    for (int y = 0; y < g.out_h; y++)
      for (int x = 0; x < g.out_w; x++)
        for (int oc = 0; oc < g.out_c; oc++)
          *out++ = OutputValue(g, in, w, bias[oc], y, x, oc);
}

}  // namespace arenad

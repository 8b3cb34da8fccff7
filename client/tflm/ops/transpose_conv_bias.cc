/*
 * transpose_conv_bias.cc - MediaPipe's custom operator
 * Convolution2DTransposeBias for TensorFlow Lite Micro: a transposed
 * convolution plus a bias, float32 (tensors, options and sizes in
 * arenad_tflm_ops.h).
 *
 * A transposed convolution scatters each input pixel, times the kernel,
 * into the output: input (iy, ix) with kernel tap (ky, kx) lands on
 * output (iy*s_h - p_top + ky, ix*s_w - p_left + kx). This kernel
 * computes the same sums the other way round, gathering: each output
 * value is its bias plus, for every tap that reaches it, the dot
 * product over the input channels, so every output is written once and
 * both the input pixel and the weights it meets are contiguous (NHWC
 * data, [out_c, kh, kw, in_c] weights). Only the order of the float
 * additions differs from a scattering loop.
 *
 * Init allocates the node's OpData in TFLM's persistent arena; Prepare
 * reads the options, checks every tensor against them and fills it in;
 * Eval only reads it.
 */
#include <stdint.h>
#include <string.h>

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

/* TfLitePadding's values, as the options store them. */
constexpr int32_t kPaddingSame = 1;
constexpr int32_t kPaddingValid = 2;
/* The options: TfLiteTransposeConvParams' padding, stride_width,
 * stride_height, each a little-endian int32. */
constexpr size_t kOptionsBytes = 3 * sizeof(int32_t);
constexpr int32_t kMaxStride = 1 << 16; /* keeps the size arithmetic small */

/* What Prepare works out for a node; in TFLM's persistent arena. */
struct OpData {
  int stride_h, stride_w;
  int pad_top, pad_left; /* output rows and columns cut before the first */
};

/* A node's options. */
struct Options {
  int32_t padding, stride_w, stride_h;
};

/* The sizes Eval loops over. */
struct Geometry {
  int in_h, in_w, in_c;
  int k_h, k_w;
  int out_h, out_w, out_c;
  OpData d;
};

/* Reads the options of node into *o; false if they are missing, short,
 * or out of range. */
bool ReadOptions(const TfLiteNode *node, Options *o) {
  if (node->custom_initial_data == nullptr ||
      node->custom_initial_data_size < (int)kOptionsBytes)
    return false;
  int32_t f[3];
  memcpy(f, node->custom_initial_data, sizeof f);
  *o = {f[0], f[1], f[2]};
  return (o->padding == kPaddingSame || o->padding == kPaddingValid) &&
         o->stride_w >= 1 && o->stride_w <= kMaxStride &&
         o->stride_h >= 1 && o->stride_h <= kMaxStride;
}

/* The padding along one dimension, in all (MediaPipe's rule): SAME pads
 * what makes the output in*s when k >= s, VALID nothing. */
int64_t PadTotal(int32_t padding, int64_t in, int64_t k, int64_t s) {
  if (padding != kPaddingSame)
    return 0;
  int64_t p = k - (in - 1) % s - 1;
  return p > 0 ? p : 0;
}

/* The output size along one dimension. */
int64_t OutSize(int64_t in, int64_t k, int64_t s, int64_t pad) {
  return s * (in - 1) + k - pad;
}

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
TfLiteStatus CheckShapes(const PrepareTensors &t, const Options &o,
                         OpData *d) {
  const int *in = t.in(kData)->dims->data;
  const int *w = t.in(kWeights)->dims->data;
  const int *out = t.out()->dims->data;
  if (in[3] != w[3] || w[0] != t.in(kBias)->dims->data[0] ||
      out[0] != in[0] || out[3] != w[0] || in[1] < 1 || in[2] < 1 ||
      w[1] < 1 || w[2] < 1) {
    MicroPrintf("Convolution2DTransposeBias: tensor shapes do not match");
    return kTfLiteError;
  }
  int64_t pad_h = PadTotal(o.padding, in[1], w[1], o.stride_h);
  int64_t pad_w = PadTotal(o.padding, in[2], w[2], o.stride_w);
  if (out[1] != OutSize(in[1], w[1], o.stride_h, pad_h) ||
      out[2] != OutSize(in[2], w[2], o.stride_w, pad_w)) {
    MicroPrintf("Convolution2DTransposeBias: output is %dx%d, the options "
                "give %dx%d", out[1], out[2],
                (int)OutSize(in[1], w[1], o.stride_h, pad_h),
                (int)OutSize(in[2], w[2], o.stride_w, pad_w));
    return kTfLiteError;
  }
  *d = {o.stride_h, o.stride_w, (int)(pad_h / 2), (int)(pad_w / 2)};
  return kTfLiteOk;
}

void *Init(TfLiteContext *ctx, const char *, size_t) {
  return ctx->AllocatePersistentBuffer(ctx, sizeof(OpData));
}

TfLiteStatus Prepare(TfLiteContext *ctx, TfLiteNode *node) {
  Options o;
  if (node->user_data == nullptr)
    return kTfLiteError;
  if (!ReadOptions(node, &o)) {
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
float OutputValue(const Geometry &g, const float *in, const float *w,
                  float bias, int y, int x, int oc) {
  float acc = bias;
  int ty = y + g.d.pad_top, tx = x + g.d.pad_left;
  for (int ky = ty % g.d.stride_h; ky < g.k_h && ky <= ty;
       ky += g.d.stride_h) {
    int iy = (ty - ky) / g.d.stride_h;
    if (iy >= g.in_h)
      continue;
    for (int kx = tx % g.d.stride_w; kx < g.k_w && kx <= tx;
         kx += g.d.stride_w) {
      int ix = (tx - kx) / g.d.stride_w;
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

Geometry GeometryOf(const TfLiteEvalTensor *in, const TfLiteEvalTensor *w,
                    const TfLiteEvalTensor *out, const OpData &d) {
  const int *i = in->dims->data, *k = w->dims->data, *o = out->dims->data;
  return {i[1], i[2], i[3], k[1], k[2], o[1], o[2], o[3], d};
}

TfLiteStatus Eval(TfLiteContext *ctx, TfLiteNode *node) {
  const TfLiteEvalTensor *in = tflite::micro::GetEvalInput(ctx, node, kData);
  const TfLiteEvalTensor *w = tflite::micro::GetEvalInput(ctx, node, kWeights);
  const TfLiteEvalTensor *b = tflite::micro::GetEvalInput(ctx, node, kBias);
  TfLiteEvalTensor *out = tflite::micro::GetEvalOutput(ctx, node, 0);
  const Geometry g =
      GeometryOf(in, w, out, *static_cast<const OpData *>(node->user_data));
  const float *src = tflite::micro::GetTensorData<float>(in);
  const float *wt = tflite::micro::GetTensorData<float>(w);
  const float *bias = tflite::micro::GetTensorData<float>(b);
  float *dst = tflite::micro::GetTensorData<float>(out);
  size_t in_batch = (size_t)g.in_h * g.in_w * g.in_c;
  for (int n = 0; n < in->dims->data[0]; n++, src += in_batch)
    for (int y = 0; y < g.out_h; y++)
      for (int x = 0; x < g.out_w; x++)
        for (int oc = 0; oc < g.out_c; oc++)
          *dst++ = OutputValue(g, src, wt, bias[oc], y, x, oc);
  return kTfLiteOk;
}

}  // namespace

TFLMRegistration Register_CONVOLUTION_2D_TRANSPOSE_BIAS() {
  return tflite::micro::RegisterOp(Init, Prepare, Eval);
}

}  // namespace arenad

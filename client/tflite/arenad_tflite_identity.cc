/*
 * arenad_tflite_identity.cc - arenad::TfliteModelIdentity() (see
 * arenad_tflite.h, THE KEY): a digest of a .tflite model that counts
 * its large constant buffers and per-channel quantization vectors by
 * length only, so that it costs a fraction of hashing the whole file.
 */
#include "arenad_tflite.h"
#include "arenad_tflite_int.h"

#include <string.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "tflite/schema/schema_generated.h"

namespace arenad {

namespace {

constexpr size_t kSmallConstant = 4096; /* constant buffers hashed whole */

}  // namespace

void tflite_int::ModelIdentity(const tflite::Model *m, const uint8_t *base, size_t len,
              uint8_t out[ARENAD_CLIENT_DIGEST_LEN]) {
  /* the large constant buffers, as [start, end) inside the model bytes */
  std::vector<std::pair<size_t, size_t>> skip;
  if (m->buffers())
    for (const tflite::Buffer *b : *m->buffers()) {
      if (!b)
        continue;
      if (b->data() && b->data()->size() > kSmallConstant) {
        size_t at = (size_t)(b->data()->data() - base);
        skip.emplace_back(at, at + b->data()->size());
      } else if (b->offset() > 1 && b->size() > kSmallConstant &&
                 b->offset() <= len && b->size() <= len - b->offset()) {
        skip.emplace_back((size_t)b->offset(),
                          (size_t)(b->offset() + b->size()));
      }
    }
  /* per-channel quantization parameters, as large as a tensor has
   * channels: values the kernels compute with, not sizes */
  auto vec = [&](const auto *v) {
    size_t n = v ? (size_t)v->size() * sizeof(*v->data()) : 0;
    if (n > kSmallConstant) {
      size_t at = (size_t)(reinterpret_cast<const uint8_t *>(v->data()) - base);
      skip.emplace_back(at, at + n);
    }
  };
  if (m->subgraphs())
    for (const tflite::SubGraph *g : *m->subgraphs())
      if (g && g->tensors())
        for (const tflite::Tensor *t : *g->tensors())
          if (t && t->quantization()) {
            vec(t->quantization()->scale());
            vec(t->quantization()->zero_point());
          }
  std::sort(skip.begin(), skip.end());
  /* SHA-256 over a tag and, in file order, the SHA-256 of each piece of
   * the model outside the large buffers and the length of each of them */
  std::string rec = "arenad-tflite model identity 1";
  rec.push_back('\0');
  auto piece = [&](size_t from, size_t to) {
    uint8_t d[ARENAD_CLIENT_DIGEST_LEN];
    arenad_client_sha256(base + from, to - from, d);
    rec.append(reinterpret_cast<const char *>(d), sizeof d);
  };
  size_t at = 0;
  for (const auto &s : skip) {
    if (s.first < at) /* overlaps one already skipped */
      continue;
    piece(at, s.first);
    uint64_t n = s.second - s.first;
    for (int k = 0; k < 8; k++)
      rec.push_back((char)(n >> (8 * k)));
    at = s.second;
  }
  piece(at, len);
  arenad_client_sha256(rec.data(), rec.size(), out);
}

int TfliteModelIdentity(const void *model, size_t model_len,
                        uint8_t out[ARENAD_CLIENT_DIGEST_LEN]) {
  memset(out, 0, ARENAD_CLIENT_DIGEST_LEN);
  if (!model || model_len == 0)
    return ARENA_EPARSE;
  const uint8_t *base = static_cast<const uint8_t *>(model);
  flatbuffers::Verifier v(base, model_len);
  if (!tflite::VerifyModelBuffer(v))
    return ARENA_EPARSE;
  tflite_int::ModelIdentity(tflite::GetModel(model), base, model_len, out);
  return 0;
}

/* The model identity (once per model: fb_ verified it) and the shapes
 * of in's inputs as allocated: what the plan is stored under. */
void TflitePlanner::KeyOf(tflite::Interpreter *in) {
  if (!have_identity_) {
    tflite_int::ModelIdentity(fb_->GetModel(),
                              static_cast<const uint8_t *>(model_),
                              model_len_, identity_);
    have_identity_ = true;
  }
  in_shapes_.clear();
  for (int t : in->inputs()) {
    const TfLiteIntArray *d = in->tensor(t)->dims;
    std::vector<int64_t> v;
    for (int k = 0; d && k < d->size; k++)
      v.push_back(d->data[k] < 0 ? 0 : d->data[k]);
    in_shapes_.push_back(v);
  }
}

/* The key KeyOf() found, its dims viewing in_shapes_ through in_dims_
 * (valid until in_shapes_ changes), and in o the options every plan of
 * this planner is asked with. */
struct arenad_model_key TflitePlanner::CurrentKey(struct planner_options *o) {
  in_dims_.clear();
  for (auto &v : in_shapes_)
    in_dims_.push_back(arenad_dims{v.data(), v.size()});
  tflite_int::PlanOptions(o, in_place_);
  return tflite_int::PlanKey(identity_, sizeof identity_, in_dims_);
}

}  // namespace arenad

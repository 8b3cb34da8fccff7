/*
 * tflite_infer_run.cc - seeded inputs and output bytes for a TensorFlow
 * Lite interpreter (see tflite_infer_run.h).
 */
#include "tflite_infer_run.h"

#include <stdlib.h>
#include <string.h>

#include <algorithm>

#include <arenad/arenad_client.h>

namespace arenad {

namespace {

/* splitmix64: a small, fixed pseudo-random sequence. */
uint64_t Next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void Fill(TfLiteTensor *t, uint64_t *s) {
  if (!t->data.raw)
    return;
  if (t->type == kTfLiteFloat32) {
    size_t n = t->bytes / sizeof(float);
    for (size_t i = 0; i < n; i++)
      t->data.f[i] = (float)((double)(Next(s) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    return;
  }
  for (size_t i = 0; i < t->bytes; i++)
    reinterpret_cast<uint8_t *>(t->data.raw)[i] = (uint8_t)Next(s);
}

}  // namespace

void FillTfliteInputs(tflite::Interpreter *interp, uint64_t seed, int invoke) {
  uint64_t s = seed * 1000003u + (uint64_t)invoke;
  for (int t : interp->inputs())
    Fill(interp->tensor(t), &s);
}

bool RunTflite(tflite::Interpreter *interp, uint64_t seed, int invokes,
               std::vector<uint8_t> *outputs, std::string *err) {
  outputs->clear();
  for (int i = 0; i < invokes; i++) {
    FillTfliteInputs(interp, seed, i);
    if (interp->Invoke() != kTfLiteOk) {
      *err = "invoke " + std::to_string(i) + " failed";
      return false;
    }
    for (int t : interp->outputs()) {
      const TfLiteTensor *x = interp->tensor(t);
      const uint8_t *p = reinterpret_cast<const uint8_t *>(x->data.raw);
      if (p)
        outputs->insert(outputs->end(), p, p + x->bytes);
    }
  }
  return true;
}

bool RunTfliteDigest(tflite::Interpreter *interp, uint64_t seed,
                     uint64_t invokes, uint8_t digest[kTfliteDigestLen],
                     std::string *err, TfliteInvokeCb each, void *user) {
  static_assert(kTfliteDigestLen == ARENAD_CLIENT_DIGEST_LEN,
                "the chain is of SHA-256 digests");
  size_t total = kTfliteDigestLen;
  for (int t : interp->outputs())
    total += interp->tensor(t)->bytes;
  /* One buffer for the whole run: the previous digest, then the outputs. */
  uint8_t *buf = static_cast<uint8_t *>(calloc(1, total));
  if (!buf) {
    *err = "out of memory";
    return false;
  }
  bool ok = true;
  for (uint64_t i = 0; ok && i < invokes; i++) {
    FillTfliteInputs(interp, seed, (int)i);
    if (interp->Invoke() != kTfLiteOk) {
      *err = "invoke " + std::to_string(i) + " failed";
      ok = false;
      break;
    }
    size_t at = kTfliteDigestLen;
    for (int t : interp->outputs()) {
      const TfLiteTensor *x = interp->tensor(t);
      /* a shape that grew since the buffer was sized is cut, never overrun */
      size_t n = x->data.raw ? std::min(x->bytes, total - at) : 0;
      if (n)
        memcpy(buf + at, x->data.raw, n);
      at += n;
    }
    uint8_t d[kTfliteDigestLen];
    arenad_client_sha256(buf, at, d);
    memcpy(buf, d, sizeof d);
    if (each)
      each(i, user);
  }
  memcpy(digest, buf, kTfliteDigestLen);
  free(buf);
  return ok;
}

}  // namespace arenad

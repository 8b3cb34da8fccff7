/*
 * tflite_infer_run.cc - seeded inputs and output bytes for a TensorFlow
 * Lite interpreter (see tflite_infer_run.h).
 */
#include "tflite_infer_run.h"

#include <string.h>

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

}  // namespace arenad

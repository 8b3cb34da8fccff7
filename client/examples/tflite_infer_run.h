/*
 * tflite_infer_run.h - seeded inputs and output bytes for a TensorFlow
 * Lite interpreter, shared by the tflite_infer example and its tests.
 *
 * Stateless helpers: the interpreter is borrowed for the call.
 */
#ifndef TFLITE_INFER_RUN_H
#define TFLITE_INFER_RUN_H

#include <stdint.h>

#include <string>
#include <vector>

#include "tflite/interpreter.h"

namespace arenad {

/* Fills every input tensor of interp with values derived from seed and
 * invoke (the same on every interpreter of the same model): floats in
 * [-1, 1), other types pseudo-random bytes. */
void FillTfliteInputs(tflite::Interpreter *interp, uint64_t seed, int invoke);

/* Invokes interp `invokes` times, each on FillTfliteInputs(seed, i), and
 * returns every output tensor's bytes of every invoke, appended in order.
 * Returns false (and *err why) when an invoke fails. */
bool RunTflite(tflite::Interpreter *interp, uint64_t seed, int invokes,
               std::vector<uint8_t> *outputs, std::string *err);

}  // namespace arenad

#endif /* TFLITE_INFER_RUN_H */

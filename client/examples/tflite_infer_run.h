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
 * returns every output tensor's bytes of every invoke, appended in order
 * (memory grows with invokes: for a few invokes, as the tests compare).
 * Returns false (and *err why) when an invoke fails. */
bool RunTflite(tflite::Interpreter *interp, uint64_t seed, int invokes,
               std::vector<uint8_t> *outputs, std::string *err);

/* Called after invoke i (0-based) of RunTfliteDigest. */
typedef void (*TfliteInvokeCb)(uint64_t i, void *user);

/* Length of the digest RunTfliteDigest computes, in bytes. */
constexpr size_t kTfliteDigestLen = 32;

/* Invokes interp `invokes` times, each on FillTfliteInputs(seed, i), in
 * memory that does not grow with invokes: digest becomes the chain
 * d_i = SHA-256(d_{i-1} || the bytes of every output tensor after invoke
 * i), from d_{-1} = 32 zero bytes, so two runs with the same digest gave
 * the same outputs at every invoke; the interpreter keeps the last
 * invoke's outputs. each (may be null) is called after every invoke with
 * user. Returns false (and *err why) when an invoke fails, or when out of
 * memory for the one buffer the chain needs. */
bool RunTfliteDigest(tflite::Interpreter *interp, uint64_t seed,
                     uint64_t invokes, uint8_t digest[kTfliteDigestLen],
                     std::string *err, TfliteInvokeCb each, void *user);

}  // namespace arenad

#endif /* TFLITE_INFER_RUN_H */

/*
 * arenad_tflite_shapes.cc - what arenad::TflitePlanner does across
 * Build() calls (see arenad_tflite.h): the input shapes it builds for
 * (INPUT SHAPES: resizing, sizing the tensors at new shapes, Resize()),
 * placing a graph it learned before at the same shapes without learning
 * it again (PLACING AGAIN), and learning alone for TflitePipeline
 * (LearnOnly()).
 */
#include "arenad_tflite.h"
#include "arenad_tflite_int.h"

#include <string.h>
#include <sys/mman.h>

#include <string>

namespace arenad {

/* INPUT SHAPES: the bytes of every tensor at the shapes set, into
 * sized_, read from a sizing interpreter whose arenas are reserved space
 * (nothing is touched): a resized model's other tensors still have the
 * bytes of the shapes it declares until Prepare runs. */
int TflitePlanner::SizeAtShapes() {
  sized_.clear();
  std::unique_ptr<tflite::Interpreter> s;
  int rc = NewInterpreter(&s);
  if (rc)
    return rc;
  info_.n_interpreters++;
  size_t room = room_;
  room_ = 0;
  reserving_ = true;
  bool ok = s->SetAllocator(&allocator_) == kTfLiteOk &&
            s->AllocateTensors() == kTfLiteOk;
  reserving_ = false;
  room_ = room;
  if (!ok)
    return FailMissing("TFLite could not allocate the tensors");
  for (size_t t = 0; t < s->tensors_size(); t++)
    sized_.push_back(s->tensor((int)t)->bytes);
  return 0; /* s's arenas are unmapped as it goes */
}

/* A tensor's bytes at the shapes to build for. */
uint64_t TflitePlanner::BytesOf(const tflite::Interpreter &in, int t) const {
  return (size_t)t < sized_.size() ? sized_[(size_t)t] : in.tensor(t)->bytes;
}

/* INPUT SHAPES: resizes the inputs of in (not yet allocated). */
int TflitePlanner::ApplyShapes(tflite::Interpreter *in) {
  if (input_shapes_.empty())
    return 0;
  const std::vector<int> &ins = in->inputs();
  if (input_shapes_.size() != ins.size())
    return Fail(ARENA_EINVAL, std::to_string(input_shapes_.size()) +
                                  " input shapes given for a model of " +
                                  std::to_string(ins.size()) + " inputs");
  for (size_t i = 0; i < ins.size(); i++) {
    for (int d : input_shapes_[i])
      if (d < 1)
        return Fail(ARENA_EINVAL, "input " + std::to_string(i) +
                                      ": a dimension below 1");
    if (in->ResizeInputTensor(ins[i], input_shapes_[i]) != kTfLiteOk)
      return Fail(ARENA_EINVAL, "TFLite refused the shape of input " +
                                    std::to_string(i));
  }
  return 0;
}

int TflitePlanner::Resize(const std::vector<std::vector<int>> &shapes,
                          std::unique_ptr<tflite::Interpreter> *out) {
  out->reset();
  SetInputShapes(shapes);
  return Build(out);
}

void TflitePlanner::Remember() {
  Learned &l = learned_[{input_shapes_, in_place_}];
  l.buffers = buffers_;
  l.n_tensors = n_tensors_;
  l.temp_arena = temp_arena_;
  l.temps_pinnable = temps_pinnable_;
  l.in_shapes = in_shapes_;
  l.info = info_;
}

/* PLACING AGAIN: plans the graph learned before at these shapes and
 * places it in one fresh interpreter, learning nothing. Returns 0 with
 * *out set, or nonzero (nothing kept) when the plan is not placed or
 * would not save memory: the caller then learns. */
int TflitePlanner::PlaceAgain(const Learned &l,
                              std::unique_ptr<tflite::Interpreter> *out) {
  buffers_ = l.buffers;
  n_tensors_ = l.n_tensors;
  temp_arena_ = l.temp_arena;
  temps_pinnable_ = l.temps_pinnable;
  in_shapes_ = l.in_shapes;
  moved_ = 0;
  info_.tflite_alone = l.info.tflite_alone;
  info_.n_tensors = l.info.n_tensors;
  info_.n_temporaries = l.info.n_temporaries;
  info_.temporary_bytes = l.info.temporary_bytes;
  bool with_temps = temps_pinnable_;
  int rc = Plan(nullptr, with_temps);
  uint64_t beside = with_temps ? 0 : temp_arena_;
  if (!rc && ArenaCost(info_.arena_bytes, false) + beside > info_.tflite_alone)
    rc = ARENA_EUNUSABLE;
  std::unique_ptr<tflite::Interpreter> in;
  if (!rc)
    rc = PlaceFresh(&in, with_temps);
  if (!rc && ArenaCost(info_.arena_bytes, arena_mapped_) + info_.remainder >
                 info_.tflite_alone)
    rc = ARENA_EUNUSABLE;
  if (rc) {
    in.reset();
    FreeArena();
    return rc;
  }
  info_.placed_again = true;
  *out = std::move(in);
  return 0;
}

int TflitePlanner::LearnOnly() {
  Begin();
  memset(&info_, 0, sizeof info_);
  error_.clear();
  FreeArena();
  sized_.clear();
  std::unique_ptr<tflite::Interpreter> in;
  int rc = NewInterpreter(&in);
  if (!rc && !input_shapes_.empty())
    rc = SizeAtShapes();
  if (!rc && (rc = Learn(in.get())) == 0) {
    for (auto &b : buffers_)
      b.alias = -1;
    if (in_place_)
      DeclarePairs(in.get());
    KeyOf(in.get());
  }
  in.reset();
  FreeProbe();
  for (const Mapping &m : maps_)
    munmap(m.ptr, m.len);
  maps_.clear();
  return Finish(rc);
}

}  // namespace arenad

/*
 * ruy/profiler/instrumentation.h - a no-op stand-in for the only header of
 * the ruy library that TensorFlow Lite Micro's reference kernels include.
 *
 * The kernels mark their scopes with `ruy::profiler::ScopeLabel label(...)`.
 * With ruy's profiler compiled out (RUY_PROFILER undefined, as in every
 * TFLM build) such a label does nothing, so this header provides a label
 * type that accepts any arguments and does nothing either. ruy itself is
 * not bundled with TFLM's sources nor packaged by Debian 12; nothing else
 * of it is used. Written for arenad; see third_party/README.md.
 */
#ifndef ARENAD_RUY_NOOP_INSTRUMENTATION_H
#define ARENAD_RUY_NOOP_INSTRUMENTATION_H

namespace ruy {
namespace profiler {

/* A scope label that records nothing. */
class ScopeLabel {
 public:
  template <typename... Args>
  explicit ScopeLabel(Args &&...) {}
  ScopeLabel(const ScopeLabel &) = delete;
  ScopeLabel &operator=(const ScopeLabel &) = delete;
};

}  // namespace profiler
}  // namespace ruy

#endif /* ARENAD_RUY_NOOP_INSTRUMENTATION_H */

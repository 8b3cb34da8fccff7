/*
 * arenad_tflite_int.h - what the files of arenad::TflitePlanner share
 * (arenad_tflite.cc, arenad_tflite_memory.cc, arenad_tflite_identity.cc,
 * arenad_tflite_own.cc, arenad_tflite_shapes.cc):
 * TFLite's tensor alignment, glibc's mmap threshold, page rounding,
 * anonymous mappings and the model identity of a verified model. Internal: not installed, included by those files
 * only.
 */
#ifndef ARENAD_TFLITE_INT_H
#define ARENAD_TFLITE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

namespace tflite {
struct Model;
}

namespace arenad {
namespace tflite_int {

constexpr uint64_t kAlign = 64;         /* TFLite's kDefaultTensorAlignment */
constexpr size_t kHeapMax = 128 * 1024; /* glibc's default mmap threshold */

inline uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

inline size_t Page() { return (size_t)sysconf(_SC_PAGESIZE); }

inline size_t RoundPage(uint64_t v) {
  return (size_t)RoundUp(v ? v : 1, Page());
}

/* Anonymous private memory: reserved (MAP_NORESERVE, for space that is
 * never meant to be touched) or ordinary. Owned by the caller (munmap);
 * nullptr on failure. */
inline uint8_t *MapAnon(size_t len, bool reserve) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | (reserve ? MAP_NORESERVE : 0);
  void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, flags, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t *>(p);
}

/* TfliteModelIdentity() of a model m that verified, at base (len bytes):
 * out gets ARENAD_CLIENT_DIGEST_LEN bytes (arenad_tflite_identity.cc). */
void ModelIdentity(const tflite::Model *m, const uint8_t *base, size_t len,
                   uint8_t *out);

}  // namespace tflite_int
}  // namespace arenad

#endif /* ARENAD_TFLITE_INT_H */

/*
 * arenad_tflite_int.h - what the files of arenad::TflitePlanner share
 * (arenad_tflite.cc, arenad_tflite_memory.cc, arenad_tflite_identity.cc,
 * arenad_tflite_own.cc, arenad_tflite_shapes.cc, arenad_tflite_pipeline.cc,
 * arenad_tflite_fetch.cc):
 * TFLite's tensor alignment, glibc's mmap threshold, page rounding,
 * anonymous mappings and the model identity of a verified model. Internal: not installed, included by those files
 * only.
 */
#ifndef ARENAD_TFLITE_INT_H
#define ARENAD_TFLITE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include <arenad/arenad_client.h>

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

/* An arena of bytes: mapped when at least kHeapMax (freeing it then moves
 * no glibc threshold), from the heap, 64-byte aligned, below. Returns it
 * (owned by the caller: ArenaFree()) with *len the bytes allocated and
 * *mapped how, or nullptr (out of memory; *len 0). */
inline uint8_t *ArenaAlloc(uint64_t bytes, size_t *len, bool *mapped) {
  uint8_t *p;
  if (bytes >= kHeapMax) {
    *len = RoundPage(bytes);
    p = MapAnon(*len, false);
    *mapped = p != nullptr;
  } else {
    *len = (size_t)RoundUp(bytes ? bytes : 1, kAlign);
    p = static_cast<uint8_t *>(aligned_alloc(kAlign, *len));
    *mapped = false;
  }
  if (!p)
    *len = 0;
  return p;
}

/* Frees what ArenaAlloc() returned (nullptr: nothing). */
inline void ArenaFree(uint8_t *p, size_t len, bool mapped) {
  if (mapped)
    munmap(p, len);
  else
    free(p);
}

/* The options the adapter asks every plan under: the client library's
 * defaults, TFLite's alignment, in-place sharing as given. */
inline void PlanOptions(struct planner_options *o, bool in_place) {
  arenad_client_plan_options_init(o);
  o->alignment = kAlign;
  o->in_place = in_place ? 1 : 0;
}

/* The key of a plan: hash (hash_len bytes) and the input shapes in dims,
 * both borrowed for the key's life. */
inline struct arenad_model_key PlanKey(const uint8_t *hash, size_t hash_len,
                                       const std::vector<arenad_dims> &dims) {
  struct arenad_model_key key;
  key.model_hash = hash;
  key.model_hash_len = hash_len;
  key.inputs = dims.data();
  key.n_inputs = dims.size();
  return key;
}

/* TfliteModelIdentity() of a model m that verified, at base (len bytes):
 * out gets ARENAD_CLIENT_DIGEST_LEN bytes (arenad_tflite_identity.cc). */
void ModelIdentity(const tflite::Model *m, const uint8_t *base, size_t len,
                   uint8_t *out);

}  // namespace tflite_int
}  // namespace arenad

#endif /* ARENAD_TFLITE_INT_H */

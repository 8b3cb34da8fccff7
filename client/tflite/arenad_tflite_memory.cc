/*
 * arenad_tflite_memory.cc - the memory arenad::TflitePlanner maps (see
 * arenad_tflite.cc, MEMORY): arenad's arena, the reserved space tensors
 * get while learning, and TFLite's allocator hook, which hands TFLite
 * its arenas from mappings while learning and gives back their reserved
 * room afterwards, so that nothing large passes through malloc.
 */
#include "arenad_tflite.h"
#include "arenad_tflite_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <algorithm>

namespace arenad {

using tflite_int::kAlign;
using tflite_int::kHeapMax;
using tflite_int::MapAnon;
using tflite_int::RoundPage;
using tflite_int::RoundUp;

void TflitePlanner::FreeArena() {
  tflite_int::ArenaFree(arena_, arena_len_, arena_mapped_);
  arena_ = nullptr;
  arena_len_ = 0;
  arena_mapped_ = false;
}

void TflitePlanner::FreeProbe() {
  if (probe_)
    munmap(probe_, probe_len_);
  probe_ = nullptr;
  probe_len_ = 0;
}

/* TFLite's allocator hook (MEMORY). */
uint8_t *TflitePlanner::MapArena(size_t bytes) {
  size_t len = RoundPage(bytes) + (reserving_ ? room_ : 0);
  uint8_t *p = MapAnon(len, reserving_);
  if (p)
    maps_.push_back(Mapping{p, len, bytes});
  return p;
}

TflitePlanner::Mapping *TflitePlanner::FindMap(const void *p) {
  for (Mapping &m : maps_)
    if (m.ptr == p)
      return &m;
  return nullptr;
}

void *TflitePlanner::Allocate(void *self, size_t bytes, size_t alignment) {
  TflitePlanner *p = static_cast<TflitePlanner *>(self);
  if (p->give_ && !p->given_ && p->arena_ && bytes == p->temp_arena_) {
    p->given_ = true;
    return p->arena_;
  }
  if (p->reserving_ || bytes >= kHeapMax)
    return p->MapArena(bytes);
  size_t a = std::max<size_t>(alignment, sizeof(void *));
  return aligned_alloc(a, RoundUp(bytes ? bytes : 1, a));
}

void *TflitePlanner::Reallocate(void *self, void *ptr, size_t old_bytes,
                                size_t bytes, size_t alignment) {
  TflitePlanner *p = static_cast<TflitePlanner *>(self);
  Mapping *m = p->FindMap(ptr);
  if (m) {
    if (RoundPage(bytes) <= m->len) { /* grows into its reserved room */
      m->bytes = bytes;
      return ptr;
    }
    size_t len = RoundPage(bytes) + (p->reserving_ ? p->room_ : 0);
    void *q = mremap(m->ptr, m->len, len, MREMAP_MAYMOVE);
    if (q == MAP_FAILED)
      return nullptr;
    *m = Mapping{static_cast<uint8_t *>(q), len, bytes};
    return q;
  }
  void *q = Allocate(self, bytes, alignment);
  if (!q)
    return nullptr;
  memcpy(q, ptr, std::min(old_bytes, bytes));
  if (ptr != p->arena_) /* arenad's arena stays the planner's */
    free(ptr);
  else
    p->given_ = false;
  return q;
}

void TflitePlanner::Deallocate(void *self, void *ptr, size_t, size_t) {
  TflitePlanner *p = static_cast<TflitePlanner *>(self);
  if (!ptr)
    return;
  if (ptr == p->arena_) {
    p->given_ = false;
    return;
  }
  for (size_t i = 0; i < p->maps_.size(); i++)
    if (p->maps_[i].ptr == ptr) {
      munmap(p->maps_[i].ptr, p->maps_[i].len);
      p->maps_.erase(p->maps_.begin() + (long)i);
      return;
    }
  free(ptr);
}

/* Gives back the reserved room behind TFLite's arenas once learning is
 * over. */
void TflitePlanner::TrimMaps() {
  for (Mapping &m : maps_) {
    size_t keep = RoundPage(m.bytes);
    if (m.len > keep) {
      munmap(m.ptr + keep, m.len - keep);
      m.len = keep;
    }
  }
}

int TflitePlanner::AllocArena(uint64_t bytes) {
  FreeArena();
  arena_ = tflite_int::ArenaAlloc(bytes, &arena_len_, &arena_mapped_);
  return arena_ ? 0 : ARENA_ENOMEM;
}

}  // namespace arenad

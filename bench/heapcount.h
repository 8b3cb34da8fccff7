/*
 * heapcount.h - a counting malloc for the benchmarks: the heap a process
 * holds, now and at its peak, as a user's heap profiler sees it.
 *
 * A program that links heapcount.o replaces glibc's allocation entry
 * points (malloc, calloc, realloc, reallocarray, free, posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc) with ones that forward to
 * glibc's own (__libc_malloc and its kin) and count every block in the
 * bytes glibc reserves for it (malloc_usable_size). glibc lets a program
 * replace these, and calls the replacement from inside itself too, so
 * every block of the process is counted: C++'s operator new and
 * TensorFlow Lite's aligned arenas included, from the first allocation
 * of the process on. Memory mapped without malloc (mmap) is not heap and
 * is not counted; a process's peak RSS counts it.
 *
 * DESIGN
 *  The counts are process-wide by nature (malloc has no context), so they
 *  are the file's static atomics, updated with relaxed atomic operations
 *  from any thread. A sanitizer build (AddressSanitizer or
 *  ThreadSanitizer) has its own malloc: there nothing is replaced and
 *  heapcount_active() is 0.
 */
#ifndef ARENA_HEAPCOUNT_H
#define ARENA_HEAPCOUNT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The counts at one moment. Value struct. */
struct heapcount {
  int64_t live_bytes; /* bytes of the blocks allocated and not freed */
  int64_t peak_bytes; /* the largest live_bytes since the process began,
                         or since heapcount_reset_peak() */
  uint64_t n_allocs;  /* blocks allocated since the process began */
};

/* 1 when this build counts (the allocator is replaced), 0 when not (a
 * sanitizer build): then every count reads 0. */
int heapcount_active(void);

/* Fills *out with the counts now. */
void heapcount_get(struct heapcount *out);

/* Sets the peak to the live bytes now. */
void heapcount_reset_peak(void);

#ifdef __cplusplus
}
#endif

#endif /* ARENA_HEAPCOUNT_H */

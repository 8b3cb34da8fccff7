/*
 * memory.c - the allocator settings and the trim of memory.h.
 *
 * mallopt() and malloc_trim() are glibc's; elsewhere the calls compile to
 * nothing (memory.h, THREADS).
 */
#include "memory.h"

#include <stdlib.h> /* any header of the C library defines __GLIBC__ */

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "arena_error.h"

int daemon_memory_setup(void)
{
#ifdef __GLIBC__
  /* Setting either threshold also turns off glibc's raising of both. */
  if (mallopt(M_MMAP_THRESHOLD, (int)DAEMON_MEMORY_MMAP_BYTES) != 1 ||
      mallopt(M_TRIM_THRESHOLD, (int)DAEMON_MEMORY_TRIM_BYTES) != 1)
    return ARENA_EINTERNAL;
#endif
  return 0;
}

int daemon_memory_large(size_t n_tensors)
{
  return n_tensors >= DAEMON_MEMORY_LARGE_TENSORS;
}

void daemon_memory_release(void)
{
#ifdef __GLIBC__
  (void)malloc_trim(0);
#endif
}

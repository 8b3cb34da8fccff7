/*
 * heapcount.c - a counting malloc for the benchmarks (see heapcount.h):
 * glibc's allocation entry points replaced by ones that forward to
 * glibc's own and count each block's usable bytes.
 */
#include "heapcount.h"

#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAPCOUNT_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HEAPCOUNT_OFF 1
#endif
#endif

/* The counts: process-wide, as malloc is (heapcount.h, DESIGN). */
static _Atomic int64_t live;      /* bytes, see struct heapcount */
static _Atomic int64_t peak;      /* bytes */
static _Atomic uint64_t n_allocs; /* blocks */

int heapcount_active(void)
{
#ifdef HEAPCOUNT_OFF
  return 0;
#else
  return 1;
#endif
}

void heapcount_get(struct heapcount *out)
{
  out->live_bytes = atomic_load_explicit(&live, memory_order_relaxed);
  out->peak_bytes = atomic_load_explicit(&peak, memory_order_relaxed);
  out->n_allocs = atomic_load_explicit(&n_allocs, memory_order_relaxed);
}

void heapcount_reset_peak(void)
{
  atomic_store_explicit(&peak, atomic_load_explicit(&live, memory_order_relaxed),
                        memory_order_relaxed);
}

#ifndef HEAPCOUNT_OFF

/* glibc's own allocator, under the names it exports for replacements. */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t align, size_t n);
extern void *__libc_valloc(size_t n);
extern void *__libc_pvalloc(size_t n);

#define EXPORT __attribute__((visibility("default")))

/* Counts block p (NULL: nothing) as allocated; returns p. */
static void *counted(void *p)
{
  if (!p)
    return p;
  int64_t n = (int64_t)malloc_usable_size(p);
  int64_t now = atomic_fetch_add_explicit(&live, n, memory_order_relaxed) + n;
  atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
  int64_t pk = atomic_load_explicit(&peak, memory_order_relaxed);
  while (now > pk && !atomic_compare_exchange_weak_explicit(
                         &peak, &pk, now, memory_order_relaxed,
                         memory_order_relaxed))
    ;
  return p;
}

/* Counts block p (NULL: nothing) as freed; call before freeing it. */
static void uncounted(void *p)
{
  if (p)
    atomic_fetch_sub_explicit(&live, (int64_t)malloc_usable_size(p),
                              memory_order_relaxed);
}

/* Whether align is one posix_memalign accepts. */
static int good_align(size_t align)
{
  return align >= sizeof(void *) && (align & (align - 1)) == 0;
}

EXPORT void *malloc(size_t n)
{
  return counted(__libc_malloc(n));
}

EXPORT void *calloc(size_t n, size_t size)
{
  return counted(__libc_calloc(n, size));
}

EXPORT void free(void *p)
{
  uncounted(p);
  __libc_free(p);
}

/* The old block is uncounted first: a realloc that moves the block holds
 * both for a moment, which no caller can use, so the peak leaves it out. */
EXPORT void *realloc(void *p, size_t n)
{
  int64_t before = p ? (int64_t)malloc_usable_size(p) : 0;
  void *q = __libc_realloc(p, n);
  if (q || (p && n == 0)) { /* moved, resized, or freed (n == 0) */
    atomic_fetch_sub_explicit(&live, before, memory_order_relaxed);
    if (q && p) /* a block resized is not a new one */
      atomic_fetch_sub_explicit(&n_allocs, 1, memory_order_relaxed);
    return counted(q);
  }
  return NULL; /* failed: p is untouched */
}

EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(p, bytes);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
  if (!good_align(align))
    return EINVAL;
  void *p = __libc_memalign(align, n);
  if (!p)
    return ENOMEM;
  *out = counted(p);
  return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
  if (align == 0 || (align & (align - 1))) {
    errno = EINVAL;
    return NULL;
  }
  return counted(__libc_memalign(align, n));
}

EXPORT void *memalign(size_t align, size_t n)
{
  return counted(__libc_memalign(align, n));
}

EXPORT void *valloc(size_t n)
{
  return counted(__libc_valloc(n));
}

EXPORT void *pvalloc(size_t n)
{
  return counted(__libc_pvalloc(n));
}

#endif /* HEAPCOUNT_OFF */

/*
 * sort.c - a stable merge sort of index arrays (internal to planner/).
 *
 * C11 qsort() has no context argument and is not stable; the planner needs
 * both, so that every order (and with it every plan) is deterministic.
 */
#include "planner_sort.h"

#include <stdlib.h>
#include <string.h>

static void merge_pass(uint32_t *dst, const uint32_t *src, size_t n,
                       size_t width, planner__cmp_fn cmp, const void *ctx)
{
  for (size_t lo = 0; lo < n; lo += 2 * width) {
    size_t mid = lo + width < n ? lo + width : n;
    size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
    size_t a = lo, b = mid, k = lo;
    while (a < mid && b < hi)
      dst[k++] = cmp(src[b], src[a], ctx) < 0 ? src[b++] : src[a++];
    while (a < mid)
      dst[k++] = src[a++];
    while (b < hi)
      dst[k++] = src[b++];
  }
}

int planner__sort_idx(uint32_t *idx, size_t n, planner__cmp_fn cmp,
                      const void *ctx)
{
  if (n < 2)
    return 0;
  /* Insertion-sort runs of 16 first: fewer passes, better locality. */
  const size_t run = 16;
  for (size_t lo = 0; lo < n; lo += run) {
    size_t hi = lo + run < n ? lo + run : n;
    for (size_t i = lo + 1; i < hi; i++) {
      uint32_t v = idx[i];
      size_t j = i;
      while (j > lo && cmp(v, idx[j - 1], ctx) < 0) {
        idx[j] = idx[j - 1];
        j--;
      }
      idx[j] = v;
    }
  }
  if (n <= run)
    return 0;
  uint32_t *tmp = malloc(n * sizeof *tmp);
  if (!tmp)
    return -1;
  uint32_t *src = idx, *dst = tmp;
  for (size_t width = run; width < n; width *= 2) {
    merge_pass(dst, src, n, width, cmp, ctx);
    uint32_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != idx)
    memcpy(idx, src, n * sizeof *idx);
  free(tmp);
  return 0;
}

uint32_t *planner__iota(size_t n)
{
  uint32_t *v = malloc((n ? n : 1) * sizeof *v);
  if (v)
    for (size_t i = 0; i < n; i++)
      v[i] = (uint32_t)i;
  return v;
}

/*
 * exact_sections.c - the sections of a set of lifetimes (exact_int.h,
 * exact__sections()), for the exact search's setup (exact_build.c) and
 * the improvement passes (improve.c).
 *
 * The sections are the stretches of time between consecutive distinct
 * points, a point being the start of a lifetime or one past its end.
 * Few lifetimes are numbered the plain way: sort the points, drop the
 * repeats, and find each lifetime's points by binary search. Many are
 * numbered with a table over the range of the points when it is narrow
 * (operator indexes, numbered from 0, usually are), else with one radix
 * sort of the points, each tagged with the lifetime and end it came
 * from, and one pass over them: a million binary searches over a
 * million points, each a chain of cache misses, cost far more. Every
 * way gives the same numbers.
 */
#include "exact_int.h"

#include <stdlib.h>

#include "planner_sort.h"

/* Lifetimes from which the sections are numbered without a search. */
#define SECTIONS_RADIX_MIN 2048u
/* Widest range of the points, per lifetime, that by_table() takes. */
#define SECTIONS_TABLE_SPAN 8u

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The sorted points without repeats, in place; returns how many. */
static uint32_t unique_sorted(uint64_t *pt, uint32_t npt)
{
  uint32_t u = 0;
  for (uint32_t q = 0; q < npt; q++)
    if (u == 0 || pt[q] != pt[u - 1])
      pt[u++] = pt[q];
  return u;
}

/* Index of the first of the u sorted points pt that is not below t
 * (exact__sec_find(): points are times, never negative, so their order
 * is the same signed or not). */
static uint32_t find(const uint64_t *pt, uint32_t u, uint64_t t)
{
  return exact__sec_find((const int64_t *)pt, u, (int64_t)t);
}

static uint32_t by_search(uint64_t *pt, uint32_t n, uint32_t *slo,
                          uint32_t *shi)
{
  uint64_t *life = malloc(2 * (size_t)n * sizeof *life);
  if (!life)
    return 0;
  for (uint32_t q = 0; q < 2 * n; q++)
    life[q] = pt[q];
  qsort(pt, 2 * (size_t)n, sizeof *pt, cmp_u64);
  uint32_t u = unique_sorted(pt, 2 * n);
  for (uint32_t k = 0; k < n; k++) {
    slo[k] = find(pt, u, life[2 * k]);
    shi[k] = find(pt, u, life[2 * k + 1]) - 1;
  }
  free(life);
  return u;
}

static uint32_t by_radix(uint64_t *pt, uint32_t n, uint32_t *slo,
                         uint32_t *shi)
{
  size_t npt = 2 * (size_t)n;
  uint32_t *tag = malloc(npt * sizeof *tag);
  struct planner__radix rs = {0};
  if (!tag)
    return 0;
  for (uint32_t q = 0; q < npt; q++)
    tag[q] = q; /* lifetime q / 2, its start when q is even */
  int rc = planner__radix_sort(pt, tag, npt, &rs);
  planner__radix_cleanup(&rs);
  uint32_t u = 0;
  for (uint32_t q = 0; !rc && q < npt; q++) {
    if (u == 0 || pt[q] != pt[u - 1])
      pt[u++] = pt[q];
    if (tag[q] & 1)
      shi[tag[q] / 2] = u - 2; /* the section before this point */
    else
      slo[tag[q] / 2] = u - 1;
  }
  free(tag);
  return rc ? 0 : u;
}

/* With the points within a range of at most SECTIONS_TABLE_SPAN per
 * lifetime (operator indexes, as graphs number them), a table over the
 * range marks the points and then holds each one's index. Returns u, or
 * 0 when the range is wider or memory runs out. */
static uint32_t by_table(uint64_t *pt, uint32_t n, uint32_t *slo,
                         uint32_t *shi)
{
  size_t npt = 2 * (size_t)n;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t q = 0; q < npt; q++) {
    lo = pt[q] < lo ? pt[q] : lo;
    hi = pt[q] > hi ? pt[q] : hi;
  }
  if (hi - lo >= (uint64_t)SECTIONS_TABLE_SPAN * n)
    return 0;
  size_t w = (size_t)(hi - lo) + 1;
  uint32_t *at = calloc(w, sizeof *at); /* 0, or a point's index + 1 */
  if (!at)
    return 0;
  for (size_t q = 0; q < npt; q++)
    at[pt[q] - lo] = 1;
  uint32_t u = 0;
  for (size_t t = 0; t < w; t++)
    if (at[t])
      at[t] = ++u;
  for (uint32_t k = 0; k < n; k++) {
    slo[k] = at[pt[2 * (size_t)k] - lo] - 1;
    shi[k] = at[pt[2 * (size_t)k + 1] - lo] - 2;
  }
  for (size_t t = 0; t < w; t++)
    if (at[t])
      pt[at[t] - 1] = lo + t;
  free(at);
  return u;
}

uint32_t exact__sections(uint64_t *pt, uint32_t n, uint32_t *slo,
                         uint32_t *shi)
{
  if (n == 0)
    return 0;
  if (n < SECTIONS_RADIX_MIN)
    return by_search(pt, n, slo, shi);
  uint32_t u = by_table(pt, n, slo, shi);
  return u ? u : by_radix(pt, n, slo, shi);
}

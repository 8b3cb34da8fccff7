/*
 * check_exact_sections.c - the sections of a set of lifetimes
 * (exact__sections(), planner/search/exact_sections.c), which the exact
 * search's setup and the improvement passes number: every way it takes
 * (binary search for few lifetimes, a table over a narrow range of
 * points, a radix sort over a wide one) against sorting and searching
 * done here. Its test case is "sections" of the exact suite.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_exact.h"
#include "exact_int.h"

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* A xorshift stream, so that every run draws the same lifetimes. */
static uint64_t next(uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* The index of t among the u sorted points pt (t is one of them). */
static uint32_t index_of(const uint64_t *pt, uint32_t u, uint64_t t)
{
  const uint64_t *at = bsearch(&t, pt, u, sizeof *pt, cmp_u64);
  ck_assert_ptr_nonnull(at);
  return (uint32_t)(at - pt);
}

/* n lifetimes starting below `range` (plus `base`), each 1 to `len`
 * long, numbered by exact__sections() and checked point by point. */
static void check_sections(uint32_t n, uint64_t base, uint64_t range,
                           uint64_t len, uint64_t seed)
{
  uint64_t *pt = malloc(2 * (size_t)n * sizeof *pt);
  uint64_t *ref = malloc(2 * (size_t)n * sizeof *ref);
  uint32_t *slo = malloc((size_t)n * sizeof *slo);
  uint32_t *shi = malloc((size_t)n * sizeof *shi);
  ck_assert(pt && ref && slo && shi);
  for (uint32_t k = 0; k < n; k++) {
    pt[2 * k] = base + next(&seed) % range;
    pt[2 * k + 1] = pt[2 * k] + 1 + next(&seed) % len;
  }
  memcpy(ref, pt, 2 * (size_t)n * sizeof *ref);
  qsort(ref, 2 * (size_t)n, sizeof *ref, cmp_u64);
  uint32_t u = 0;
  for (uint32_t q = 0; q < 2 * n; q++)
    if (u == 0 || ref[q] != ref[u - 1])
      ref[u++] = ref[q];
  uint64_t *life = malloc(2 * (size_t)n * sizeof *life);
  ck_assert_ptr_nonnull(life);
  memcpy(life, pt, 2 * (size_t)n * sizeof *life);
  ck_assert_uint_eq(exact__sections(pt, n, slo, shi), u);
  ck_assert_int_eq(memcmp(pt, ref, u * sizeof *pt), 0);
  for (uint32_t k = 0; k < n; k++) {
    ck_assert_uint_eq(slo[k], index_of(ref, u, life[2 * k]));
    ck_assert_uint_eq(shi[k], index_of(ref, u, life[2 * k + 1]) - 1);
  }
  free(life);
  free(pt);
  free(ref);
  free(slo);
  free(shi);
}

START_TEST(test_sections_every_way)
{
  check_sections(1, 0, 1, 1, 1);         /* one lifetime */
  check_sections(300, 0, 50, 4, 2);      /* few: binary search */
  check_sections(5000, 0, 1250, 9, 3);   /* narrow range: the table */
  check_sections(5000, 7, 40000, 9, 4);  /* about the table's limit */
  check_sections(5000, 0, 1u << 30, 1u << 20, 5); /* wide: radix */
  check_sections(5000, (uint64_t)1 << 62, 1000, 3, 6); /* far from 0 */
}
END_TEST

void ce_add_sections_tests(Suite *s)
{
  TCase *tc = tcase_create("sections");
  tcase_add_test(tc, test_sections_every_way);
  suite_add_tcase(s, tc);
}

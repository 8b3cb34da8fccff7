/*
 * check_planner_sort.c - the planner's stable radix sort
 * (planner/core/planner_sort.h) against a stable reference on keys in
 * order but for a few late ones (sorted apart and merged), in order,
 * and in no order, with many ties, with and without values.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_planner.h"
#include "planner_sort.h"
#include "testutil.h"

/* A key and its input position: the reference sorts by both. */
struct pair {
  uint64_t key;
  uint32_t at;
};

static int cmp_pair(const void *a, const void *b)
{
  const struct pair *x = a, *y = b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return (x->at > y->at) - (x->at < y->at);
}

/* Keys ascending by steps of 0..2 (ties), with `late` of them replaced
 * by smaller ones; a third of the rounds wide keys. */
static void make_keys(uint64_t *rs, uint64_t *key, size_t n, size_t late)
{
  uint64_t v = tu_rand_range(rs, 0, 1000), scale =
      tu_rand_range(rs, 0, 2) == 0 ? (uint64_t)1 << 40 : 1;
  for (size_t i = 0; i < n; i++) {
    v += tu_rand_range(rs, 0, 2);
    key[i] = v * scale;
  }
  for (size_t k = 0; k < late; k++) {
    size_t i = (size_t)tu_rand_range(rs, 0, n - 1);
    key[i] = tu_rand_range(rs, 0, key[i] / scale) * scale;
  }
}

START_TEST(test_sort_stable)
{
  uint64_t rs = 0x5047;
  struct planner__radix s = {0};
  for (int r = 0; r < 600; r++) {
    size_t n = (size_t)tu_rand_range(&rs, 33, 3000);
    /* few late keys (the merge), up to many (the radix passes) */
    size_t late = r % 3 == 0 ? (size_t)tu_rand_range(&rs, 1, n / 16)
                  : r % 3 == 1 ? 0
                               : (size_t)tu_rand_range(&rs, n / 8, n);
    uint64_t *key = malloc(n * sizeof *key);
    uint32_t *val = malloc(n * sizeof *val);
    struct pair *want = malloc(n * sizeof *want);
    make_keys(&rs, key, n, late);
    for (size_t i = 0; i < n; i++) {
      val[i] = (uint32_t)i;
      want[i] = (struct pair){key[i], (uint32_t)i};
    }
    qsort(want, n, sizeof *want, cmp_pair);
    int with_val = r % 5 != 4;
    ck_assert_int_eq(planner__radix_sort(key, with_val ? val : NULL, n, &s),
                     0);
    for (size_t i = 0; i < n; i++) {
      ck_assert_msg(key[i] == want[i].key, "round %d: key %zu", r, i);
      if (with_val)
        ck_assert_msg(val[i] == want[i].at, "round %d: value %zu", r, i);
    }
    free(key);
    free(val);
    free(want);
  }
  planner__radix_cleanup(&s);
}
END_TEST

void cp_add_sort_tests(Suite *s)
{
  TCase *tc = tcase_create("sort");
  /* about 3 s alone; Check's default of 4 s is too close on a loaded
   * machine or under the sanitizers */
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_sort_stable);
  suite_add_tcase(s, tc);
}

/*
 * check_planner_validation.c - the planner's checks of its input and of
 * plans: validation errors and the order in which they are reported,
 * sizes near the largest arena, planner_run() reporting them, the
 * verifier catching bad plans (containment included), the lower bound
 * with alignment, and zero-size tensors and algorithm names.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "check_planner.h"
#include "planner.h"

/* ---- validation ------------------------------------------------------- */

static int validate_one(struct planner_tensor *t, size_t n, uint64_t align,
                        char *err)
{
  struct planner_graph g = {t, n};
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = align;
  return planner_validate(&g, &o, err);
}

/* Validation reports the first bad tensor before anything else, even one
 * after the row where the padded sizes pass the largest arena; the sizes
 * before duplicate ids; duplicate ids (dense or sparse) before colliding
 * pins. */
START_TEST(test_validation_order)
{
  char err[ARENA_ERR_LEN];
  struct planner_tensor t[4] = {
      {1, UINT64_MAX / 4, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
      {2, UINT64_MAX / 4, 1, 2, 0, PLANNER_NOT_PINNED, 0, 0},
      {1, 10, 0, 3, 0, 0, 0, 0},         /* id 1 again, pinned at 0 */
      {4, 10, 3, 2, 0, PLANNER_NOT_PINNED, 0, 0}, /* ends before it starts */
  };
  ck_assert_int_eq(validate_one(t, 4, 64, err), ARENA_ELIFETIME);
  ck_assert_ptr_nonnull(strstr(err, "tensor 4"));
  t[3].last = 3;
  ck_assert_int_eq(validate_one(t, 4, 64, err), ARENA_EOVERFLOW);
  ck_assert_ptr_nonnull(strstr(err, "at tensor 2"));
  t[0].size = t[1].size = 10;
  t[3].pinned = 0; /* collides with the pinned tensor of id 1 */
  ck_assert_int_eq(validate_one(t, 4, 64, err), ARENA_EDUPID);
  ck_assert_ptr_nonnull(strstr(err, "id 1 "));
  t[2].id = 4000000000u; /* sparse ids: found by the sort */
  t[1].id = 4000000000u;
  ck_assert_int_eq(validate_one(t, 4, 64, err), ARENA_EDUPID);
  ck_assert_ptr_nonnull(strstr(err, "rows 1 and 2"));
  t[1].id = 2;
  ck_assert_int_eq(validate_one(t, 4, 64, err), ARENA_EPINNED);
  t[3].pinned = 64;
  ck_assert_int_eq(validate_one(t, 4, 64, err), 0);
}
END_TEST

START_TEST(test_validation_errors)
{
  char err[ARENA_ERR_LEN];
  struct planner_tensor t[3] = {
      {1, 10, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
      {2, 10, 1, 2, 0, PLANNER_NOT_PINNED, 0, 0},
      {3, 10, 2, 3, 0, PLANNER_NOT_PINNED, 0, 0},
  };
  ck_assert_int_eq(validate_one(t, 3, 64, err), 0);
  ck_assert_int_eq(validate_one(t, 0, 64, err), ARENA_EEMPTY);
  ck_assert_int_eq(validate_one(t, 3, 48, err), ARENA_EALIGN);
  ck_assert_ptr_nonnull(strstr(err, "48"));
  ck_assert_int_eq(validate_one(t, 3, 0, err), ARENA_EALIGN);

  t[1].first = 5; /* ends before it starts */
  ck_assert_int_eq(validate_one(t, 3, 64, err), ARENA_ELIFETIME);
  ck_assert_ptr_nonnull(strstr(err, "tensor 2"));
  t[1].first = -1;
  ck_assert_int_eq(validate_one(t, 3, 64, err), ARENA_ELIFETIME);
  t[1].first = 1;

  t[2].id = 1;
  ck_assert_int_eq(validate_one(t, 3, 64, err), ARENA_EDUPID);
  ck_assert_ptr_nonnull(strstr(err, "id 1"));
  t[2].id = 3;

  t[0].align = 24;
  ck_assert_int_eq(validate_one(t, 3, 64, err), ARENA_EALIGN);
  t[0].align = 0;

  t[0].size = UINT64_MAX / 3;
  t[1].size = UINT64_MAX / 3;
  ck_assert_int_eq(validate_one(t, 3, 1, err), ARENA_EOVERFLOW);
  t[0].size = UINT64_MAX;
  ck_assert_int_eq(validate_one(t, 3, 1, err), ARENA_EOVERFLOW);
  t[0].size = t[1].size = 10;

  t[0].pinned = 3; /* misaligned */
  ck_assert_int_eq(validate_one(t, 3, 64, err), ARENA_EPINNED);
  t[0].pinned = 0;
  t[1].pinned = 0; /* t0 and t1 share op 1 and the same bytes */
  ck_assert_int_eq(validate_one(t, 3, 64, err), ARENA_EPINNED);
  t[1].pinned = 64;
  ck_assert_int_eq(validate_one(t, 3, 64, err), 0);

  struct planner_graph g = {NULL, 3};
  struct planner_options o;
  planner_options_init(&o);
  ck_assert_int_eq(planner_validate(&g, &o, err), ARENA_EINVAL);
  o.algo = (enum planner_algo)99;
  g.tensors = t;
  ck_assert_int_eq(planner_validate(&g, &o, err), ARENA_EINVAL);
}
END_TEST

START_TEST(test_run_reports_errors)
{
  struct planner_tensor t[1] = {{7, 10, 3, 2, 0, PLANNER_NOT_PINNED, 0, 0}};
  struct planner_graph g = {t, 1};
  struct planner_options o;
  planner_options_init(&o);
  struct planner_plan p;
  planner_plan_init(&p);
  char err[ARENA_ERR_LEN] = "";
  ck_assert_int_eq(planner_run(&g, &o, &p, err), ARENA_ELIFETIME);
  ck_assert_ptr_null(p.offsets);
  ck_assert_ptr_nonnull(strstr(err, "before it starts"));
  ck_assert_str_eq(arena_err_name(ARENA_ELIFETIME), "ARENA_ELIFETIME");
  ck_assert_str_eq(arena_strerror(ARENA_ELIFETIME),
                   "lifetime ends before it starts");
  ck_assert_str_eq(arena_strerror(12345), "unknown error");
}
END_TEST

/* ---- verifier --------------------------------------------------------- */

START_TEST(test_verify_catches_bad_plans)
{
  struct planner_tensor t[3] = {
      {0, 100, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
      {1, 50, 1, 2, 0, PLANNER_NOT_PINNED, 0, 0},
      {2, 50, 3, 4, 0, PLANNER_NOT_PINNED, 0, 0},
  };
  struct planner_graph g = {t, 3};
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = 4;
  uint64_t off[3] = {0, 100, 0};
  struct planner_plan p = {0};
  p.offsets = off;
  p.n_offsets = 3;
  p.arena_bytes = 150;
  char err[ARENA_ERR_LEN];
  ck_assert_int_eq(planner_verify(&g, &o, &p, err), 0);

  off[1] = 96; /* overlaps tensor 0 at op 1 */
  p.arena_bytes = 146;
  ck_assert_int_eq(planner_verify(&g, &o, &p, err), ARENA_EVERIFY);
  ck_assert_ptr_nonnull(strstr(err, "tensors 0"));
  ck_assert_ptr_nonnull(strstr(err, "and 1"));

  off[1] = 102; /* misaligned */
  p.arena_bytes = 152;
  ck_assert_int_eq(planner_verify(&g, &o, &p, err), ARENA_EVERIFY);
  ck_assert_ptr_nonnull(strstr(err, "aligned"));

  off[1] = 100;
  p.arena_bytes = 151; /* wrong arena */
  ck_assert_int_eq(planner_verify(&g, &o, &p, err), ARENA_EVERIFY);
  p.arena_bytes = 150;
  p.n_offsets = 2;
  ck_assert_int_eq(planner_verify(&g, &o, &p, err), ARENA_EVERIFY);
  p.n_offsets = 3;

  off[2] = 0; /* tensor 2 is disjoint in time: sharing is fine */
  ck_assert_int_eq(planner_verify(&g, &o, &p, err), 0);
  t[2].pinned = 64;
  ck_assert_int_eq(planner_verify(&g, &o, &p, err), ARENA_EVERIFY);
  ck_assert_ptr_nonnull(strstr(err, "pinned"));
}
END_TEST

/* Same-offset neighbours and containment must be found too. */
START_TEST(test_verify_containment)
{
  struct planner_tensor t[3] = {
      {0, 1000, 0, 10, 0, PLANNER_NOT_PINNED, 0, 0},
      {1, 10, 5, 5, 0, PLANNER_NOT_PINNED, 0, 0},
      {2, 10, 20, 30, 0, PLANNER_NOT_PINNED, 0, 0},
  };
  struct planner_graph g = {t, 3};
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = 1;
  uint64_t off[3] = {0, 500, 0};
  struct planner_plan p;
  planner_plan_init(&p);
  p.offsets = off;
  p.n_offsets = 3;
  p.arena_bytes = 1000;
  ck_assert_int_eq(planner_verify(&g, &o, &p, NULL), ARENA_EVERIFY);
  off[1] = 0;
  ck_assert_int_eq(planner_verify(&g, &o, &p, NULL), ARENA_EVERIFY);
  off[1] = 1000;
  p.arena_bytes = 1010;
  ck_assert_int_eq(planner_verify(&g, &o, &p, NULL), 0);
}
END_TEST

/* ---- lower bound with alignment ---------------------------------------- */

START_TEST(test_lower_bound_alignment)
{
  /* Three 10-byte tensors live together at alignment 64: any plan puts
   * two starts at >= 64 apart, so the arena is at least 64+64+10. */
  struct planner_tensor t[3] = {
      {0, 10, 0, 0, 0, PLANNER_NOT_PINNED, 0, 0},
      {1, 10, 0, 0, 0, PLANNER_NOT_PINNED, 0, 0},
      {2, 10, 0, 0, 0, PLANNER_NOT_PINNED, 0, 0},
  };
  struct planner_graph g = {t, 3};
  struct planner_options o;
  planner_options_init(&o);
  uint64_t lb;
  ck_assert_int_eq(planner_lower_bound(&g, &o, &lb), 0);
  ck_assert_uint_eq(lb, 138);
  struct planner_plan p;
  planner_plan_init(&p);
  ck_assert_int_eq(planner_run(&g, &o, &p, NULL), 0);
  ck_assert_uint_eq(p.arena_bytes, 138);
  ck_assert_int_eq(p.proven_optimal, 1);
  planner_plan_cleanup(&p);
  o.alignment = 1;
  ck_assert_int_eq(planner_lower_bound(&g, &o, &lb), 0);
  ck_assert_uint_eq(lb, 30);
}
END_TEST

/* planner_accepted_lower_bound: the bound of every plan the verifier
 * accepts. With a legal in-place pair and sharing on it counts the pair
 * once where they meet (100, what planner_run reports and reaches); with
 * sharing off, or no alias at all, it is the load bound (200); a bad
 * graph gets its validation code. */
START_TEST(test_accepted_lower_bound)
{
  struct planner_tensor t[2] = {
      {0, 100, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
      {1, 100, 1, 2, 0, PLANNER_NOT_PINNED, 0, 1},
  };
  struct planner_graph g = {t, 2};
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = 1;
  uint64_t lb = 0, load = 0;
  ck_assert_int_eq(planner_accepted_lower_bound(&g, &o, &lb, NULL), 0);
  ck_assert_uint_eq(lb, 100);
  struct planner_plan p;
  planner_plan_init(&p);
  ck_assert_int_eq(planner_run(&g, &o, &p, NULL), 0);
  ck_assert_uint_eq(p.lower_bound_bytes, lb);
  ck_assert_uint_eq(p.arena_bytes, 100);
  planner_plan_cleanup(&p);
  ck_assert_int_eq(planner_lower_bound(&g, &o, &load), 0);
  ck_assert_uint_eq(load, 200);
  o.in_place = 0;
  ck_assert_int_eq(planner_accepted_lower_bound(&g, &o, &lb, NULL), 0);
  ck_assert_uint_eq(lb, 200);
  o.in_place = 1;
  t[1].has_alias = 0;
  ck_assert_int_eq(planner_accepted_lower_bound(&g, &o, &lb, NULL), 0);
  ck_assert_uint_eq(lb, 200);
  t[1].last = -1;
  char err[ARENA_ERR_LEN] = "";
  ck_assert_int_eq(planner_accepted_lower_bound(&g, &o, &lb, err),
                   ARENA_ELIFETIME);
  ck_assert(err[0] != '\0');
}
END_TEST

START_TEST(test_zero_size_and_names)
{
  struct planner_tensor t[3] = {
      {5, 0, 0, 3, 0, PLANNER_NOT_PINNED, 0, 0},
      {6, 16, 0, 3, 0, PLANNER_NOT_PINNED, 0, 0},
      {7, 0, 2, 2, 0, PLANNER_NOT_PINNED, 0, 0},
  };
  struct planner_graph g = {t, 3};
  struct planner_options o;
  planner_options_init(&o);
  for (int a = 0; a < PLANNER_ALGO__COUNT; a++) {
    struct planner_plan p;
    planner_plan_init(&p);
    o.algo = (enum planner_algo)a;
    ck_assert_int_eq(planner_run(&g, &o, &p, NULL), 0);
    ck_assert_uint_eq(p.offsets[0], 0);
    ck_assert_uint_eq(p.offsets[2], 0);
    ck_assert_uint_eq(p.arena_bytes, 16);
    planner_plan_cleanup(&p);
    enum planner_algo back;
    ck_assert_int_eq(planner_algo_parse(planner_algo_name(o.algo), &back), 0);
    ck_assert_int_eq(back, a);
  }
  enum planner_algo x;
  ck_assert_int_eq(planner_algo_parse("fastest", &x), ARENA_EINVAL);
}
END_TEST

/* Sizes near 2^63: a graph whose padded sizes exceed the largest arena,
 * 2^63 - 1 bytes, is bad input (ARENA_EOVERFLOW) for every algorithm,
 * also when one tensor's size plus its alignment alone is past the limit;
 * one just inside it plans and verifies. */
START_TEST(test_overflow_is_bad_input)
{
  const uint64_t lim = UINT64_MAX / 2, a32 = 1ull << 32;
  struct planner_tensor t[2] = {
      {1, lim - 2 * a32, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
      {2, lim - a32 / 2, 1, 2, a32, PLANNER_NOT_PINNED, 0, 0},
  };
  struct planner_graph g = {t, 2};
  char err[ARENA_ERR_LEN];
  for (int a = 0; a < PLANNER_ALGO__COUNT; a++) {
    struct planner_options o;
    planner_options_init(&o);
    o.algo = (enum planner_algo)a;
    struct planner_plan p;
    planner_plan_init(&p);
    err[0] = '\0';
    ck_assert_int_eq(planner_run(&g, &o, &p, err), ARENA_EOVERFLOW);
    ck_assert_msg(strstr(err, "2^63 - 1 bytes at tensor 2") != NULL, "%s",
                  err);
    ck_assert_ptr_null(p.offsets);
    /* One tensor alone, its padding past the limit. */
    struct planner_graph one = {&t[1], 1};
    ck_assert_int_eq(planner_run(&one, &o, &p, err), ARENA_EOVERFLOW);
    /* Just inside: size plus the alignment padding is the limit. */
    struct planner_tensor edge = {7, lim - a32, 0, 0, a32, PLANNER_NOT_PINNED, 0, 0};
    struct planner_graph e = {&edge, 1};
    ck_assert_msg(planner_run(&e, &o, &p, err) == 0, "%s", err);
    ck_assert_uint_eq(p.arena_bytes, lim - a32);
    planner_plan_cleanup(&p);
  }
}
END_TEST

/* The largest tensor: 2^63 - 1 bytes at alignment 1 plans, with every
 * algorithm, into an arena of exactly that size (its offset needs no
 * padding); at alignment 2 it may need one byte of padding and is bad
 * input. The last operator may be 2^63 - 2, not 2^63 - 1. */
START_TEST(test_largest_tensor)
{
  const uint64_t lim = UINT64_MAX / 2;
  struct planner_tensor t = {3, lim, 0, INT64_MAX - 1, 0, PLANNER_NOT_PINNED,
                             0, 0};
  struct planner_graph g = {&t, 1};
  char err[ARENA_ERR_LEN];
  for (int a = 0; a < PLANNER_ALGO__COUNT; a++) {
    struct planner_options o;
    planner_options_init(&o);
    o.algo = (enum planner_algo)a;
    o.alignment = 1;
    struct planner_plan p;
    planner_plan_init(&p);
    err[0] = '\0';
    ck_assert_msg(planner_run(&g, &o, &p, err) == 0, "%s: %s",
                  planner_algo_name(o.algo), err);
    ck_assert_uint_eq(p.arena_bytes, lim);
    ck_assert_uint_eq(p.lower_bound_bytes, lim);
    ck_assert_uint_eq(p.offsets[0], 0);
    ck_assert_int_eq(planner_verify(&g, &o, &p, err), 0);
    planner_plan_cleanup(&p);
    o.alignment = 2;
    ck_assert_int_eq(planner_run(&g, &o, &p, err), ARENA_EOVERFLOW);
    ck_assert_ptr_nonnull(strstr(err, "at tensor 3"));
  }
  ck_assert_int_eq(validate_one(&t, 1, 1, err), 0);
  t.last = INT64_MAX;
  ck_assert_int_eq(validate_one(&t, 1, 1, err), ARENA_EOVERFLOW);
  ck_assert_ptr_nonnull(strstr(err, "tensor 3: last operator too large"));
}
END_TEST

void cp_add_validation_tests(Suite *s)
{
  TCase *tc = tcase_create("validation");
  tcase_add_test(tc, test_validation_errors);
  tcase_add_test(tc, test_validation_order);
  tcase_add_test(tc, test_overflow_is_bad_input);
  tcase_add_test(tc, test_largest_tensor);
  tcase_add_test(tc, test_accepted_lower_bound);
  tcase_add_test(tc, test_run_reports_errors);
  tcase_add_test(tc, test_verify_catches_bad_plans);
  tcase_add_test(tc, test_verify_containment);
  tcase_add_test(tc, test_lower_bound_alignment);
  tcase_add_test(tc, test_zero_size_and_names);
  suite_add_tcase(s, tc);
}

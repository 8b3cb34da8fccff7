/*
 * check_models_input.c - the models suite's test case "input": arenactl
 * refuses input exactly as docs/arenactl.md says, at the edges of its
 * limits. A --shape is refused with one status whatever the file (CSV
 * or .tflite); the largest tensor and the last operator plan or are
 * refused as LIMITS says; explain and render chart 10^7 operators, not
 * one more.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_models.h"
#include "testutil.h"

/* Writes text into the temp dir as name. */
static void put_file(const char *name, const char *text)
{
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/%s", cm_tmpdir(), name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
  ck_assert_int_eq(fclose(f), 0);
}

/* Copies tests/data/<rel> into the temp dir as name. */
static void copy_data(const char *rel, const char *name)
{
  char src[PATH_MAX + 64];
  size_t len;
  snprintf(src, sizeof src, "%s/%s", tu_data_dir(), rel);
  char *b = tu_read_file(src, &len);
  ck_assert_msg(b != NULL, "cannot read %s", src);
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/%s", cm_tmpdir(), name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
  free(b);
}

/* `plan --shape` refuses a shape with the same status for a CSV (where
 * the shape is only the cache key) as for a .tflite: text that is not a
 * shape, the empty text included, is a usage error (64); dims no shape
 * can have are bad input (65). With or without --local. */
START_TEST(test_shape_same_status_any_file)
{
  static const struct {
    const char *shape;
    int status;
    const char *msg;
  } cases[] = {
      {"", 64, "no dimensions given"},
      {"-1", 65, "a dimension is negative"},
      {"4x-1", 65, "a dimension is negative"},
      {"4y1", 64, "expected dimensions like"},
      {"1,,2", 64, "expected dimensions like"},
      {"9999999999999999999", 65, "a dimension is too large"},
  };
  static const char *const files[] = {"m.csv", "m.tflite"};
  copy_data("models/hello_world_float.csv", "m.csv");
  copy_data("models/hello_world_float.tflite", "m.tflite");
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    for (size_t f = 0; f < 2; f++)
      for (int local = 0; local < 2; local++) {
        struct run r;
        if (local)
          RUN(&r, "plan", "--local", "--shape", cases[k].shape, files[f]);
        else /* the daemon is never reached: the shape is refused first */
          RUN(&r, "plan", "-s", "no.sock", "--no-fallback", "--shape",
              cases[k].shape, files[f]);
        ck_assert_msg(r.status == cases[k].status,
                      "--shape '%s' %s: status %d, want %d: %s",
                      cases[k].shape, files[f], r.status, cases[k].status,
                      r.err);
        cm_assert_contains(r.err, cases[k].msg);
        ck_assert_uint_eq(r.out_len, 0);
        cm_run_free(&r);
      }
}
END_TEST

/* One tensor of 2^63 - 1 bytes plans at alignment 1 (its offset needs no
 * padding), not at alignment 2; its last operator may be 2^63 - 2, not
 * 2^63 - 1. */
START_TEST(test_largest_tensor)
{
  struct run r;
  put_file("max.csv", "id,size,first,last\n"
                      "0,9223372036854775807,0,9223372036854775806\n");
  put_file("last.csv", "id,size,first,last\n"
                       "0,1,0,9223372036854775807\n");
  put_file("mm.csv", "id,lower,upper,size\n"
                     "0,0,9223372036854775807,9223372036854775807\n");
  static const char *const ok[] = {"max.csv", "mm.csv"};
  for (size_t k = 0; k < 2; k++) {
    RUN(&r, "plan", "--local", "--align", "1", ok[k]);
    ck_assert_msg(r.status == 0, "%s: %s", ok[k], r.err);
    cm_assert_contains(r.out, "arena:           9223372036854775807 bytes");
    cm_run_free(&r);
  }
  RUN(&r, "plan", "--local", "--align", "2", "max.csv");
  ck_assert_int_eq(r.status, 65);
  cm_assert_contains(r.err, "exceed 2^63 - 1 bytes at tensor 0");
  cm_run_free(&r);
  RUN(&r, "plan", "--local", "--align", "1", "last.csv");
  ck_assert_int_eq(r.status, 65);
  cm_assert_contains(r.err, "tensor 0: last operator too large");
  cm_run_free(&r);
}
END_TEST

/* explain and render chart up to 10^7 operators (the largest last
 * operator 9999999); one more is refused with exit 65. */
START_TEST(test_operator_limit)
{
  put_file("ops_max.csv", "id,size,first,last\n0,10,0,9999999\n1,10,5,6\n");
  put_file("ops_over.csv", "id,size,first,last\n0,10,0,10000000\n1,10,5,6\n");
  static const char *const cmds[] = {"explain", "render"};
  for (size_t c = 0; c < 2; c++) {
    struct run r;
    if (c == 0) /* explain has no -o: its output goes to stdout */
      RUN(&r, cmds[c], "--align", "1", "ops_max.csv");
    else
      RUN(&r, cmds[c], "--align", "1", "ops_max.csv", "-o", "out.svg");
    ck_assert_msg(r.status == 0, "%s: %s", cmds[c], r.err);
    cm_run_free(&r);
    RUN(&r, cmds[c], "--align", "1", "ops_over.csv");
    ck_assert_int_eq(r.status, 65);
    cm_assert_contains(r.err, "more than 10000000 operators cannot be charted");
    cm_run_free(&r);
  }
}
END_TEST

void cm_add_input_tests(Suite *s)
{
  TCase *tc = tcase_create("input");
  tcase_add_checked_fixture(tc, cm_setup, cm_teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_shape_same_status_any_file);
  tcase_add_test(tc, test_largest_tensor);
  tcase_add_test(tc, test_operator_limit);
  suite_add_tcase(s, tc);
}

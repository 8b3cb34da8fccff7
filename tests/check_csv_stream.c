/*
 * check_csv_stream.c - tests of the incremental CSV parse
 * (planner_csv_stream_*, graph_csv.h): a text fed in parts, cut anywhere
 * and moved between the calls, gives exactly the result and the message
 * of one planner_csv_parse() of the whole text, and an error is found
 * by the feed that completes its line. Also the parser's fast path for
 * rows of plain numbers: it reads every row as the general path does.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_csv.h"
#include "graph_csv.h"
#include "planner.h"
#include "testutil.h"

/* Texts, valid and not, whose errors (when they have one) name a line
 * and a column from the header, which the stream reads in an earlier
 * part than the error. */
static const char *const texts[] = {
    "# model=sample\r\nid,size,first,last,align,offset\r\n0,1024,0,3,16,\r\n"
    "\r\n11,96,1,2,,4096\r\n# middle\r\n123,70000,2,9,0,-1\r\n4,5,6,7,8,",
    "\xEF\xBB\xBFid,size,first,last\n0,10,0,1\n1,20,1,2\n",
    "id,lower,upper,size\nb1,0,5,1\nb2,5,6,1\n3,1,2,4\n",
    "tensor_index,size_bytes,first_op,last_op\n0,1,0,1\n1,2,x,1\n",
    "id,size,first,last\n0,1,0,0\n# c\n0,abc,0,1\n",
    "id,size,first,last\n0,1,0,0\n1,2,3\n",
    "id,size,first,last\n0,1,5,2\n",
    "id,size,first,last\n0,99999999999999999999999,0,1\n",
    "id,lower,upper,size,alias\nb1,0,5,1,\nb2,5,6,1,0\n",
    "id,size,first,last\n",
    "# only a comment\n\n",
    "",
    "\xEF\xBB",
    "id,size,first,last,alias\n0,8,0,1,\n1,8,1,2,0",
    /* a byte order mark is one only at the start of the text */
    "id,size,first,last\n0,1,0,0\n\xEF\xBB\xBF" "1,2,0,1\n",
};
#define N_TEXTS (sizeof texts / sizeof texts[0])

/* Field by field: the struct has padding that memcmp would read. */
static void assert_same(const struct planner_csv *a,
                        const struct planner_csv *b)
{
  ck_assert_uint_eq(a->n_tensors, b->n_tensors);
  ck_assert_int_eq(a->format, b->format);
  ck_assert_int_eq(a->ids_renumbered, b->ids_renumbered);
  for (size_t i = 0; i < a->n_tensors; i++) {
    const struct planner_tensor *x = &a->tensors[i], *y = &b->tensors[i];
    ck_assert_uint_eq(x->id, y->id);
    ck_assert_uint_eq(x->size, y->size);
    ck_assert_int_eq(x->first, y->first);
    ck_assert_int_eq(x->last, y->last);
    ck_assert_uint_eq(x->align, y->align);
    ck_assert_int_eq(x->pinned, y->pinned);
    ck_assert_uint_eq(x->has_alias, y->has_alias);
    ck_assert_uint_eq(x->alias, y->alias);
  }
}

/* A heap copy of the first len bytes of s, exactly that long, so that
 * the stream sees its text move and a read past the end shows under the
 * address sanitizer. */
static char *copy_of(const char *s, size_t len)
{
  char *c = malloc(len ? len : 1);
  ck_assert_ptr_nonnull(c);
  memcpy(c, s, len);
  return c;
}

/* Feeds text i cut at every pair of points a <= b (each part in a new
 * copy, the one before freed), then finishes: the result, the return
 * code and the message are those of one parse of the whole text. */
START_TEST(test_every_cut_same_as_whole)
{
  const char *t = texts[_i];
  size_t len = strlen(t);
  struct planner_csv whole, c;
  char want[ARENA_ERR_LEN], got[ARENA_ERR_LEN];
  planner_csv_init(&whole);
  planner_csv_init(&c);
  int want_rc = planner_csv_parse(t, len, &whole, want);
  for (size_t a = 0; a <= len; a++)
    for (size_t b = a; b <= len; b++) {
      planner_csv_stream_t *st;
      ck_assert_int_eq(planner_csv_stream_new(&st), 0);
      size_t cuts[2] = {a, b};
      int rc = 0;
      for (int k = 0; k < 2 && rc == 0; k++) {
        char *part = copy_of(t, cuts[k]);
        rc = planner_csv_stream_feed(st, part, cuts[k], got);
        free(part);
        /* a feed never calls a text empty: more lines may come */
        ck_assert_int_ne(rc, ARENA_EEMPTY);
        if (rc)
          ck_assert_str_eq(got, want);
      }
      char *all = copy_of(t, len);
      int frc = planner_csv_stream_finish(st, all, len, &c, got);
      free(all);
      planner_csv_stream_free(st);
      ck_assert_msg(frc == want_rc, "text %d cut %zu,%zu: rc %d, want %d",
                    _i, a, b, frc, want_rc);
      ck_assert_int_eq(rc == 0 || rc == frc, 1);
      if (frc) {
        ck_assert_str_eq(got, want);
        ck_assert_uint_eq(c.n_tensors, 0);
      } else {
        ck_assert_str_eq(got, "");
        assert_same(&c, &whole);
      }
      planner_csv_cleanup(&c);
    }
  planner_csv_cleanup(&whole);
}
END_TEST

/* As test_every_cut_same_as_whole, with the parsed lines dropped after
 * each feed (planner_csv_stream_drop()): every later call gets the text
 * from the first byte not dropped, so the header and the start of the
 * text are gone when a later line is read; the result and the message
 * are still those of the whole text. */
START_TEST(test_every_cut_dropped)
{
  const char *t = texts[_i];
  size_t len = strlen(t);
  struct planner_csv whole, c;
  char want[ARENA_ERR_LEN], got[ARENA_ERR_LEN];
  planner_csv_init(&whole);
  planner_csv_init(&c);
  int want_rc = planner_csv_parse(t, len, &whole, want);
  for (size_t a = 0; a <= len; a++)
    for (size_t b = a; b <= len; b++) {
      planner_csv_stream_t *st;
      ck_assert_int_eq(planner_csv_stream_new(&st), 0);
      size_t cuts[2] = {a, b}, gone = 0;
      int rc = 0;
      for (int k = 0; k < 2 && rc == 0; k++) {
        char *part = copy_of(t + gone, cuts[k] - gone);
        rc = planner_csv_stream_feed(st, part, cuts[k] - gone, got);
        free(part);
        if (rc)
          ck_assert_str_eq(got, want);
        gone += planner_csv_stream_drop(st);
        ck_assert_uint_le(gone, cuts[k]);
      }
      char *rest = copy_of(t + gone, len - gone);
      int frc = planner_csv_stream_finish(st, rest, len - gone, &c, got);
      free(rest);
      planner_csv_stream_free(st);
      ck_assert_msg(frc == want_rc, "text %d cut %zu,%zu: rc %d, want %d",
                    _i, a, b, frc, want_rc);
      if (frc) {
        ck_assert_str_eq(got, want);
        ck_assert_uint_eq(c.n_tensors, 0);
      } else {
        assert_same(&c, &whole);
      }
      planner_csv_cleanup(&c);
    }
  planner_csv_cleanup(&whole);
}
END_TEST

/* The feed that completes a bad line reports it, before the end of the
 * text, and every later call reports it again; a feed of the lines
 * before it does not. */
START_TEST(test_error_found_on_its_line)
{
  const char *t = "id,size,first,last\n0,1,0,0\n1,oops,0,1\n2,1,0,0\n";
  const char *bad = strstr(t, "1,oops");
  size_t upto_bad = (size_t)(bad - t);
  size_t line_end = (size_t)(strchr(bad, '\n') - t) + 1;
  char err[ARENA_ERR_LEN];
  planner_csv_stream_t *st;
  struct planner_csv c;
  planner_csv_init(&c);
  ck_assert_int_eq(planner_csv_stream_new(&st), 0);
  ck_assert_int_eq(planner_csv_stream_feed(st, t, upto_bad, err), 0);
  ck_assert_str_eq(err, "");
  /* the bad line without its end: not complete, not parsed yet */
  ck_assert_int_eq(planner_csv_stream_feed(st, t, line_end - 1, err), 0);
  ck_assert_int_eq(planner_csv_stream_feed(st, t, line_end, err),
                   ARENA_EPARSE);
  ck_assert_str_eq(err, "line 3: size: not a number: 'oops'");
  ck_assert_int_eq(planner_csv_stream_feed(st, t, strlen(t), err),
                   ARENA_EPARSE);
  ck_assert_str_eq(err, "line 3: size: not a number: 'oops'");
  ck_assert_int_eq(planner_csv_stream_finish(st, t, strlen(t), &c, err),
                   ARENA_EPARSE);
  ck_assert_str_eq(err, "line 3: size: not a number: 'oops'");
  ck_assert_ptr_null(c.tensors);
  planner_csv_stream_free(st);
  planner_csv_stream_free(NULL);
}
END_TEST

/* A large text fed in random parts gives the rows of one parse. */
START_TEST(test_random_parts_large)
{
  uint64_t seed = 7;
  size_t n = 20000, cap = n * 48 + 64, len = 0;
  char *t = malloc(cap);
  ck_assert_ptr_nonnull(t);
  len += (size_t)snprintf(t, cap, "id,size,first,last\r\n");
  for (size_t i = 0; i < n; i++) {
    uint64_t f = tu_rand_range(&seed, 0, 5000);
    len += (size_t)snprintf(t + len, cap - len, "%zu, %llu ,%llu,%llu%s\n", i,
                            (unsigned long long)tu_rand_range(&seed, 0, 1 << 20),
                            (unsigned long long)f,
                            (unsigned long long)(f + tu_rand_range(&seed, 0, 9)),
                            i % 7 ? "" : "\r");
  }
  struct planner_csv whole, c;
  planner_csv_init(&whole);
  planner_csv_init(&c);
  ck_assert_int_eq(planner_csv_parse(t, len, &whole, NULL), 0);
  ck_assert_uint_eq(whole.n_tensors, n);
  planner_csv_stream_t *st;
  ck_assert_int_eq(planner_csv_stream_new(&st), 0);
  for (size_t at = 0; at < len;) {
    at += tu_rand_range(&seed, 1, 4096);
    if (at > len)
      at = len;
    ck_assert_int_eq(planner_csv_stream_feed(st, t, at, NULL), 0);
  }
  ck_assert_int_eq(planner_csv_stream_finish(st, t, len, &c, NULL), 0);
  planner_csv_stream_free(st);
  assert_same(&c, &whole);
  planner_csv_cleanup(&c);
  planner_csv_cleanup(&whole);
  free(t);
}
END_TEST

/* A random field: mostly plain numbers, often near a limit of some
 * column, sometimes padded, signed, empty or not a number. */
static const char *random_field(uint64_t *rs, char *buf, size_t cap)
{
  static const char *const odd[] = {
      "4294967295", "4294967296", "9223372036854775807",
      "9223372036854775808", "18446744073709551615", "18446744073709551616",
      "99999999999999999999", "0000000000000000000007",
      "000000000000000000007", "-0", "-1", "+1", "", " ", "1 2", "1x",
      "x", "	12	", " 007 ", "0"};
  uint64_t k = tu_rand_range(rs, 0, 9);
  if (k < 6) {
    snprintf(buf, cap, "%llu",
             (unsigned long long)tu_rand_range(rs, 0, k < 3 ? 40 : 1u << 30));
    return buf;
  }
  return odd[tu_rand_range(rs, 0, sizeof odd / sizeof odd[0] - 1)];
}

/* The same rows under a header whose every column is a number (the fast
 * path may read them) and with an alias column of empty fields added
 * (the general path reads every row): the same rows, or the same error
 * with the same message, in both dialects. */
START_TEST(test_fast_rows_same_as_general)
{
  uint64_t rs = 0xfa57ull;
  static const char *const heads[][2] = {
      {"id,size,first,last", "id,size,first,last,alias"},
      {"id,lower,upper,size", "id,lower,upper,size,alias"},
      {"align,last,first,id,size", "align,last,first,id,size,alias"}};
  int ok = 0, bad = 0;
  for (int round = 0; round < 3000; round++) {
    size_t h = (size_t)tu_rand_range(&rs, 0, 2), rows = tu_rand_range(&rs, 1, 6);
    char fast[2048], slow[2048], f[64];
    size_t nf = (size_t)snprintf(fast, sizeof fast, "%s\n", heads[h][0]);
    size_t ns = (size_t)snprintf(slow, sizeof slow, "%s\n", heads[h][1]);
    for (size_t r = 0; r < rows; r++) {
      for (int c = 0; c < (h == 2 ? 5 : 4); c++) {
        /* most rows valid: small numbers, first <= last */
        const char *v = tu_rand_range(&rs, 0, 3)
                            ? (snprintf(f, sizeof f, "%d",
                                        c == 0 ? (int)r
                                        : h == 2 ? 10 - c /* last 9, first 8 */
                                                 : 1 + c),
                               f)
                            : random_field(&rs, f, sizeof f);
        nf += (size_t)snprintf(fast + nf, sizeof fast - nf, "%s%s",
                               c ? "," : "", v);
        ns += (size_t)snprintf(slow + ns, sizeof slow - ns, "%s%s",
                               c ? "," : "", v);
      }
      nf += (size_t)snprintf(fast + nf, sizeof fast - nf, "\n");
      ns += (size_t)snprintf(slow + ns, sizeof slow - ns, ",\n");
    }
    struct planner_csv a, b;
    char ea[ARENA_ERR_LEN], eb[ARENA_ERR_LEN];
    planner_csv_init(&a);
    planner_csv_init(&b);
    int ra = planner_csv_parse(fast, nf, &a, ea);
    int rb = planner_csv_parse(slow, ns, &b, eb);
    ck_assert_msg(ra == rb, "%s: %d, %s: %d", fast, ra, slow, rb);
    if (ra) {
      ck_assert_str_eq(ea, eb);
      bad++;
    } else {
      assert_same(&a, &b);
      ok++;
    }
    planner_csv_cleanup(&a);
    planner_csv_cleanup(&b);
  }
  ck_assert_int_gt(ok, 300);
  ck_assert_int_gt(bad, 300);
}
END_TEST

void csv_add_stream_tests(Suite *s)
{
  TCase *tc = tcase_create("stream");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_every_cut_same_as_whole, 0, (int)N_TEXTS);
  tcase_add_loop_test(tc, test_every_cut_dropped, 0, (int)N_TEXTS);
  tcase_add_test(tc, test_error_found_on_its_line);
  tcase_add_test(tc, test_random_parts_large);
  tcase_add_test(tc, test_fast_rows_same_as_general);
  suite_add_tcase(s, tc);
}

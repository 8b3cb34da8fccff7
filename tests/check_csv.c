/*
 * check_csv.c - tests of the lifetime-graph CSV parser and writer
 * (planner/graph_csv.h): both dialects, every error path, damaged input,
 * a million rows, and writer round trips; the incremental parse is
 * tested in check_csv_stream.c.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_csv.h"
#include "graph_csv.h"
#include "planner.h"
#include "testutil.h"

/* Parses a NUL-terminated text; the length excludes the NUL, so the
 * parser never sees it. */
static int parse_str(const char *s, struct planner_csv *c, char *err)
{
  return planner_csv_parse(s, strlen(s), c, err);
}

/* Parses s from a heap copy of exactly its length, so that a read past
 * the end shows up under the address sanitizer. */
static int parse_exact(const char *s, size_t len, struct planner_csv *c,
                       char *err)
{
  char *copy = malloc(len ? len : 1);
  ck_assert_ptr_nonnull(copy);
  memcpy(copy, s, len);
  int rc = planner_csv_parse(copy, len, c, err);
  free(copy);
  return rc;
}

static void assert_tensor(const struct planner_tensor *t, uint32_t id,
                          uint64_t size, int64_t first, int64_t last)
{
  ck_assert_uint_eq(t->id, id);
  ck_assert_uint_eq(t->size, size);
  ck_assert_int_eq(t->first, first);
  ck_assert_int_eq(t->last, last);
}

/* Field by field: the struct has padding that memcmp would read. */
static int same_tensors(const struct planner_tensor *a,
                        const struct planner_tensor *b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (a[i].id != b[i].id || a[i].size != b[i].size ||
        a[i].first != b[i].first || a[i].last != b[i].last ||
        a[i].align != b[i].align || a[i].pinned != b[i].pinned ||
        a[i].has_alias != b[i].has_alias ||
        (a[i].has_alias && a[i].alias != b[i].alias))
      return 0;
  return 1;
}

/* ---- the "ours" dialect ---------------------------------------------------- */

START_TEST(test_ours_basic)
{
  struct planner_csv c;
  char err[ARENA_ERR_LEN];
  planner_csv_init(&c);
  int rc = parse_str("id,size,first,last\n0,10,0,1\n7,20,1,2\n", &c, err);
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(c.format, PLANNER_CSV_OURS);
  ck_assert_uint_eq(c.n_tensors, 2);
  ck_assert_int_eq(c.ids_renumbered, 0);
  assert_tensor(&c.tensors[0], 0, 10, 0, 1);
  assert_tensor(&c.tensors[1], 7, 20, 1, 2);
  ck_assert_uint_eq(c.tensors[1].align, 0);
  ck_assert_int_eq(c.tensors[1].pinned, PLANNER_NOT_PINNED);
  planner_csv_cleanup(&c);
  ck_assert_ptr_null(c.tensors);
  ck_assert_uint_eq(c.n_tensors, 0);
}
END_TEST

START_TEST(test_ours_reference_spelling_and_comments)
{
  const char *s = "# model=x.tflite\n"
                  "\n"
                  "  # indented comment\n"
                  "tensor_index,size_bytes,first_op,last_op\n"
                  "3,960,0,0\n"
                  "# a comment between rows\n"
                  "\n"
                  "   \t\n"
                  "19,960,0,1\n";
  struct planner_csv c;
  planner_csv_init(&c);
  ck_assert_int_eq(parse_str(s, &c, NULL), 0);
  ck_assert_uint_eq(c.n_tensors, 2);
  assert_tensor(&c.tensors[0], 3, 960, 0, 0);
  assert_tensor(&c.tensors[1], 19, 960, 0, 1);
  planner_csv_cleanup(&c);
}
END_TEST

START_TEST(test_crlf_bom_blanks_and_case)
{
  const char *s = "\xEF\xBB\xBF# c\r\nID, Size ,FIRST,Last\r\n"
                  " 1 , 2 ,3,4\r\n\r\n5,6,7,8";
  struct planner_csv c;
  planner_csv_init(&c);
  ck_assert_int_eq(parse_str(s, &c, NULL), 0);
  ck_assert_uint_eq(c.n_tensors, 2);
  assert_tensor(&c.tensors[0], 1, 2, 3, 4);
  assert_tensor(&c.tensors[1], 5, 6, 7, 8);
  planner_csv_cleanup(&c);
}
END_TEST

START_TEST(test_no_final_newline)
{
  struct planner_csv c;
  planner_csv_init(&c);
  ck_assert_int_eq(parse_str("id,size,first,last\n1,2,3,4", &c, NULL), 0);
  ck_assert_uint_eq(c.n_tensors, 1);
  assert_tensor(&c.tensors[0], 1, 2, 3, 4);
  planner_csv_cleanup(&c);
}
END_TEST

START_TEST(test_align_offset_any_order)
{
  const char *s = "offset,last,align,first,size,id\n"
                  "128,1,64,0,100,0\n"
                  ",2,,1,50,1\n"
                  "-1,3,0,2,25,2\n";
  struct planner_csv c;
  planner_csv_init(&c);
  ck_assert_int_eq(parse_str(s, &c, NULL), 0);
  ck_assert_uint_eq(c.n_tensors, 3);
  assert_tensor(&c.tensors[0], 0, 100, 0, 1);
  ck_assert_uint_eq(c.tensors[0].align, 64);
  ck_assert_int_eq(c.tensors[0].pinned, 128);
  assert_tensor(&c.tensors[1], 1, 50, 1, 2);
  ck_assert_uint_eq(c.tensors[1].align, 0);
  ck_assert_int_eq(c.tensors[1].pinned, PLANNER_NOT_PINNED);
  ck_assert_int_eq(c.tensors[2].pinned, PLANNER_NOT_PINNED);
  planner_csv_cleanup(&c);
}
END_TEST

START_TEST(test_limits_accepted)
{
  const char *s = "id,size,first,last\n"
                  "4294967295,18446744073709551615,0,9223372036854775807\n"
                  "0,0,00,0\n";
  struct planner_csv c;
  planner_csv_init(&c);
  ck_assert_int_eq(parse_str(s, &c, NULL), 0);
  ck_assert_uint_eq(c.tensors[0].id, UINT32_MAX);
  ck_assert_uint_eq(c.tensors[0].size, UINT64_MAX);
  ck_assert_int_eq(c.tensors[0].last, INT64_MAX);
  assert_tensor(&c.tensors[1], 0, 0, 0, 0);
  planner_csv_cleanup(&c);
}
END_TEST

/* ---- MiniMalloc ------------------------------------------------------------ */

START_TEST(test_minimalloc_exclusive_upper)
{
  struct planner_csv c;
  planner_csv_init(&c);
  ck_assert_int_eq(parse_str("id,lower,upper,size\n0,0,3,4\n1,3,9,8\n",
                             &c, NULL), 0);
  ck_assert_int_eq(c.format, PLANNER_CSV_MINIMALLOC);
  ck_assert_uint_eq(c.n_tensors, 2);
  assert_tensor(&c.tensors[0], 0, 4, 0, 2);
  assert_tensor(&c.tensors[1], 1, 8, 3, 8);
  /* Buffers that end at t and start at t must not overlap in time. */
  ck_assert_int_lt(c.tensors[0].last, c.tensors[1].first);
  planner_csv_cleanup(&c);
}
END_TEST

START_TEST(test_minimalloc_columns_any_order)
{
  const char *s = "size,upper,alignment,offset,lower,id\n"
                  "4096,10,32,256,5,12\n"
                  "16,2,,,1,13\n";
  struct planner_csv c;
  planner_csv_init(&c);
  ck_assert_int_eq(parse_str(s, &c, NULL), 0);
  ck_assert_int_eq(c.format, PLANNER_CSV_MINIMALLOC);
  assert_tensor(&c.tensors[0], 12, 4096, 5, 9);
  ck_assert_uint_eq(c.tensors[0].align, 32);
  ck_assert_int_eq(c.tensors[0].pinned, 256);
  assert_tensor(&c.tensors[1], 13, 16, 1, 1);
  ck_assert_int_eq(c.tensors[1].pinned, PLANNER_NOT_PINNED);
  planner_csv_cleanup(&c);
}
END_TEST

START_TEST(test_minimalloc_labels_renumbered)
{
  const char *s = "id,lower,upper,size\n"
                  "7,0,3,4\nb2,3,9,4\nb3,0,9,4\n";
  struct planner_csv c;
  planner_csv_init(&c);
  ck_assert_int_eq(parse_str(s, &c, NULL), 0);
  ck_assert_int_eq(c.ids_renumbered, 1);
  for (uint32_t i = 0; i < 3; i++)
    ck_assert_uint_eq(c.tensors[i].id, i);
  assert_tensor(&c.tensors[1], 1, 4, 3, 8);
  planner_csv_cleanup(&c);
}
END_TEST

/* ---- the alias column ------------------------------------------------------ */

START_TEST(test_alias_column)
{
  const char *s = "id,size,first,last,alias\n"
                  "0,100,0,1,\n"
                  "1,100,1,2, 0 \n"
                  "2,100,2,3,1\n"
                  "9,8,0,3,4294967295\n";
  struct planner_csv c;
  char err[ARENA_ERR_LEN];
  planner_csv_init(&c);
  ck_assert_int_eq(parse_str(s, &c, err), 0);
  ck_assert_uint_eq(c.n_tensors, 4);
  ck_assert_uint_eq(c.tensors[0].has_alias, 0);
  ck_assert_uint_eq(c.tensors[0].alias, 0);
  ck_assert_uint_eq(c.tensors[1].has_alias, 1);
  ck_assert_uint_eq(c.tensors[1].alias, 0);
  ck_assert_uint_eq(c.tensors[2].has_alias, 1);
  ck_assert_uint_eq(c.tensors[2].alias, 1);
  ck_assert_uint_eq(c.tensors[3].alias, UINT32_MAX);
  assert_tensor(&c.tensors[2], 2, 100, 2, 3);
  /* any position, any case; MiniMalloc too, with numeric ids */
  ck_assert_int_eq(parse_str("ALIAS,id,lower,upper,size\n,0,0,2,4\n0,1,1,3,4\n",
                             &c, err), 0);
  ck_assert_int_eq(c.format, PLANNER_CSV_MINIMALLOC);
  ck_assert_uint_eq(c.tensors[0].has_alias, 0);
  ck_assert_uint_eq(c.tensors[1].has_alias, 1);
  assert_tensor(&c.tensors[1], 1, 4, 1, 2);
  /* a file without the column declares nothing */
  ck_assert_int_eq(parse_str("id,size,first,last\n0,1,0,1\n", &c, err), 0);
  ck_assert_uint_eq(c.tensors[0].has_alias, 0);
  planner_csv_cleanup(&c);
}
END_TEST

START_TEST(test_alias_validated_after_parse)
{
  /* the parser reads ids; planner_validate() checks what they name */
  static const char *const cases[][2] = {
      {"id,size,first,last,alias\n0,8,0,1,\n1,8,1,2,5\n", "not in the graph"},
      {"id,size,first,last,alias\n0,8,0,1,0\n", "itself"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    struct planner_csv c;
    struct planner_options o;
    char err[ARENA_ERR_LEN] = "";
    planner_csv_init(&c);
    planner_options_init(&o);
    ck_assert_int_eq(parse_str(cases[k][0], &c, err), 0);
    struct planner_graph g = planner_csv_graph(&c);
    ck_assert_int_eq(planner_validate(&g, &o, err), ARENA_EINVAL);
    ck_assert_msg(strstr(err, cases[k][1]), "%s", err);
    planner_csv_cleanup(&c);
  }
}
END_TEST

/* ---- errors ---------------------------------------------------------------- */

static const struct bad_case {
  const char *text;
  int rc;
  const char *msg; /* expected substring of the message */
} bad_cases[] = {
    {"", ARENA_EEMPTY, "empty input"},
    {"# only a comment\n\n  \n", ARENA_EEMPTY, "no header"},
    {"id,size,first,last\n", ARENA_EEMPTY, "no tensors"},
    {"id,size,first,last\n# c\n\r\n", ARENA_EEMPTY, "no tensors"},
    {"0,10,0,1\n", ARENA_EPARSE, "line 1: missing header"},
    {"id,size,first\n0,1,0\n", ARENA_EPARSE, "lacks column 'last'"},
    {"id,lower,size\n", ARENA_EPARSE, "lacks column 'upper'"},
    {"id,size,first,last,color\n", ARENA_EPARSE, "unknown column 'color'"},
    {"id,size,first,,last\n", ARENA_EPARSE, "unknown column ''"},
    {"id,size,size_bytes,first,last\n", ARENA_EPARSE, "given twice"},
    {"id,lower,upper,size,first\n", ARENA_EPARSE, "cannot be mixed"},
    {"id,size,first,last\n0,abc,0,1\n", ARENA_EPARSE,
     "line 2: size: not a number: 'abc'"},
    {"#a\n#b\nid,size,first,last\n\n0,1,0,0\n#c\n0,abc,0,1\n", ARENA_EPARSE,
     "line 7: size: not a number: 'abc'"},
    {"tensor_index,size_bytes,first_op,last_op\n0,1,x,1\n", ARENA_EPARSE,
     "line 2: first_op: not a number: 'x'"},
    {"id,size,first,last\n0,10,0\n", ARENA_EPARSE,
     "line 2: expected 4 fields, found 3"},
    {"id,size,first,last\n0,10,0,1,\n", ARENA_EPARSE, "found 5"},
    {"id,size,first,last\n0,,0,1\n", ARENA_EPARSE, "size: empty field"},
    {"id,size,first,last\n,1,0,1\n", ARENA_EPARSE, "id: empty field"},
    {"id,size,first,last\n0,10,-1,1\n", ARENA_EPARSE, "first: negative: '-1'"},
    {"id,size,first,last\n0,10,0,-2\n", ARENA_EPARSE, "last: negative"},
    {"id,size,first,last\n0,-10,0,1\n", ARENA_EPARSE, "size: negative"},
    /* numbers take no sign, not even on zero */
    {"id,size,first,last\n0,-0,0,1\n", ARENA_EPARSE, "size: negative: '-0'"},
    {"id,size,first,last\n-0,1,0,1\n", ARENA_EPARSE, "id: negative: '-0'"},
    {"id,size,first,last\n0,1,-0,1\n", ARENA_EPARSE, "first: negative: '-0'"},
    {"id,size,first,last\n0,1,0,-00\n", ARENA_EPARSE, "last: negative: '-00'"},
    {"id,size,first,last,align\n0,1,0,1,-0\n", ARENA_EPARSE,
     "align: negative: '-0'"},
    {"id,size,first,last,offset\n0,1,0,1,-0\n", ARENA_EPARSE,
     "offset: negative: '-0'"},
    {"id,size,first,last,alias\n0,1,0,1,-0\n1,1,0,1,\n", ARENA_EPARSE,
     "alias: negative: '-0'"},
    {"id,lower,upper,size\n0,0,5,-0\n", ARENA_EPARSE, "size: negative: '-0'"},
    {"id,size,first,last\n0,10,3,1\n", ARENA_EPARSE,
     "line 2: first 3 is after last 1"},
    {"id,size,first,last\n0,18446744073709551616,0,1\n", ARENA_EOVERFLOW,
     "size: out of range"},
    {"id,size,first,last\n0,99999999999999999999999999,0,1\n",
     ARENA_EOVERFLOW, "size: out of range"},
    {"id,size,first,last\n4294967296,1,0,1\n", ARENA_EOVERFLOW,
     "id: out of range"},
    {"id,size,first,last\n0,1,0,9223372036854775808\n", ARENA_EOVERFLOW,
     "last: out of range"},
    {"id,size,first,last\n0,+5,0,1\n", ARENA_EPARSE, "not a number: '+5'"},
    {"id,size,first,last\n0,1 0,0,1\n", ARENA_EPARSE, "not a number: '1 0'"},
    {"id,size,first,last\n0,0x10,0,1\n", ARENA_EPARSE, "not a number"},
    {"id,size,first,last\n0,1.5,0,1\n", ARENA_EPARSE, "not a number"},
    {"id,size,first,last\n0,-,0,1\n", ARENA_EPARSE, "not a number: '-'"},
    {"id,size,first,last\n0,1,0,1\r\r\n", ARENA_EPARSE, "last: not a number"},
    {"id,size,first,last,offset\n0,1,0,1,-2\n", ARENA_EPARSE,
     "offset: negative"},
    {"id,size,first,last,align\n0,1,0,1,big\n", ARENA_EPARSE,
     "align: not a number"},
    {"id,lower,upper,size\n0,5,5,1\n", ARENA_EPARSE,
     "line 2: lower 5 is not below upper 5"},
    {"id,lower,upper,size\n0,6,5,1\n", ARENA_EPARSE, "not below upper"},
    {"id,lower,upper,size\n0,-1,5,1\n", ARENA_EPARSE, "lower: negative"},
    {"id,lower,upper,size\n,0,5,1\n", ARENA_EPARSE, "id: empty field"},
    {"id,lower,upper,size\nb1,0,5\n", ARENA_EPARSE, "expected 4 fields"},
    {"id,size,first,last,alias\n0,1,0,1,x\n", ARENA_EPARSE,
     "line 2: alias: not a number: 'x'"},
    {"id,size,first,last,alias\n0,1,0,1,-1\n", ARENA_EPARSE,
     "alias: negative: '-1'"},
    {"id,size,first,last,alias\n0,1,0,1,+3\n", ARENA_EPARSE,
     "alias: not a number: '+3'"},
    {"id,size,first,last,alias\n0,1,0,1,0x1\n", ARENA_EPARSE,
     "alias: not a number"},
    {"id,size,first,last,alias\n0,1,0,1,1 2\n", ARENA_EPARSE,
     "alias: not a number: '1 2'"},
    {"id,size,first,last,alias\n0,1,0,1,4294967296\n", ARENA_EOVERFLOW,
     "alias: out of range (max 4294967295)"},
    {"id,size,first,last,alias,alias\n", ARENA_EPARSE, "given twice"},
    {"id,size,first,last,alias\n0,1,0,1\n", ARENA_EPARSE,
     "expected 5 fields, found 4"},
    {"id,lower,upper,size,alias\nb1,0,5,1,\nb2,5,6,1,0\n", ARENA_EPARSE,
     "row 2: alias: the ids are labels"},
};

START_TEST(test_bad_input)
{
  const struct bad_case *bc = &bad_cases[_i];
  struct planner_csv c;
  char err[ARENA_ERR_LEN];
  planner_csv_init(&c);
  int rc = parse_str(bc->text, &c, err);
  ck_assert_msg(rc == bc->rc, "case %d: rc %d (%s), want %d", _i, rc, err,
                bc->rc);
  ck_assert_msg(strstr(err, bc->msg) != NULL, "case %d: '%s' lacks '%s'", _i,
                err, bc->msg);
  ck_assert_ptr_null(c.tensors);
  ck_assert_uint_eq(c.n_tensors, 0);
  /* The same input without a message buffer fails the same way. */
  ck_assert_int_eq(parse_str(bc->text, &c, NULL), bc->rc);
}
END_TEST

START_TEST(test_nul_byte_and_long_token)
{
  static const char s[] = "id,size,first,last\n0,1\0002,0,1\n";
  struct planner_csv c;
  char err[ARENA_ERR_LEN];
  planner_csv_init(&c);
  ck_assert_int_eq(parse_exact(s, sizeof s - 1, &c, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "size: not a number: '1?2'"));

  char big[400] = "id,size,first,last\n0,";
  size_t n = strlen(big);
  memset(big + n, 'z', 300);
  strcpy(big + n + 300, ",0,1\n");
  ck_assert_int_eq(parse_str(big, &c, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "zzz...'"));
  ck_assert_uint_lt(strlen(err), 120);
}
END_TEST

START_TEST(test_bad_arguments)
{
  struct planner_csv c;
  char err[ARENA_ERR_LEN];
  planner_csv_init(&c);
  ck_assert_int_eq(planner_csv_parse("x", 1, NULL, err), ARENA_EINVAL);
  ck_assert_int_eq(planner_csv_parse(NULL, 5, &c, err), ARENA_EINVAL);
  ck_assert_int_eq(planner_csv_parse(NULL, 0, &c, err), ARENA_EEMPTY);
  planner_csv_cleanup(NULL);
  struct planner_graph g = planner_csv_graph(NULL);
  ck_assert_ptr_null(g.tensors);
  ck_assert_str_eq(planner_csv_format_name(PLANNER_CSV_OURS), "ours");
  ck_assert_str_eq(planner_csv_format_name(PLANNER_CSV_MINIMALLOC),
                   "minimalloc");
  ck_assert_str_eq(planner_csv_format_name(PLANNER_CSV_NONE), "none");
}
END_TEST

START_TEST(test_reparse_replaces_and_failure_empties)
{
  struct planner_csv c;
  planner_csv_init(&c);
  ck_assert_int_eq(parse_str("id,size,first,last\n1,2,3,4\n5,6,7,8\n", &c,
                             NULL), 0);
  ck_assert_int_eq(parse_str("id,lower,upper,size\n9,0,1,2\n", &c, NULL), 0);
  ck_assert_uint_eq(c.n_tensors, 1);
  ck_assert_int_eq(c.format, PLANNER_CSV_MINIMALLOC);
  ck_assert_int_eq(parse_str("id,size,first,last\nx\n", &c, NULL),
                   ARENA_EPARSE);
  ck_assert_ptr_null(c.tensors);
  ck_assert_int_eq(c.format, PLANNER_CSV_NONE);
  planner_csv_cleanup(&c);
}
END_TEST

/* Semantic checks are planner_validate()'s job; the parser passes them on. */
START_TEST(test_validate_after_parse)
{
  struct planner_csv c;
  struct planner_options o;
  char err[ARENA_ERR_LEN];
  planner_csv_init(&c);
  planner_options_init(&o);
  ck_assert_int_eq(parse_str("id,size,first,last\n1,2,3,4\n1,6,7,8\n", &c,
                             NULL), 0);
  struct planner_graph g = planner_csv_graph(&c);
  ck_assert_int_eq(planner_validate(&g, &o, err), ARENA_EDUPID);
  ck_assert_int_eq(parse_str("id,size,first,last,align\n1,2,3,4,3\n", &c,
                             NULL), 0);
  g = planner_csv_graph(&c);
  ck_assert_int_eq(planner_validate(&g, &o, err), ARENA_EALIGN);
  planner_csv_cleanup(&c);
}
END_TEST

/* ---- damaged input --------------------------------------------------------- */

static const char sample[] = "# model=sample\r\n"
                             "id,size,first,last,align,offset\r\n"
                             "0,1024,0,3,16,\r\n"
                             "\r\n"
                             "11,96,1,2,,4096\r\n"
                             "# middle\r\n"
                             "123,70000,2,9,0,-1\r\n"
                             "4,5,6,7,8,\r\n";

/* Every prefix of a valid file either parses to a prefix of its rows (the
 * last one possibly cut short, e.g. "70000" read as "700") or fails with a
 * message. */
START_TEST(test_truncated_everywhere)
{
  struct planner_csv full, c;
  char err[ARENA_ERR_LEN];
  size_t len = sizeof sample - 1;
  planner_csv_init(&full);
  planner_csv_init(&c);
  ck_assert_int_eq(parse_str(sample, &full, NULL), 0);
  ck_assert_uint_eq(full.n_tensors, 4);
  int ok = 0;
  for (size_t k = 0; k <= len; k++) {
    err[0] = '\0';
    int rc = parse_exact(sample, k, &c, err);
    if (rc != 0) {
      ck_assert_msg(rc == ARENA_EPARSE || rc == ARENA_EEMPTY,
                    "prefix %zu: rc %d", k, rc);
      ck_assert_msg(err[0] != '\0', "prefix %zu: no message", k);
      ck_assert_ptr_null(c.tensors);
      continue;
    }
    ok++;
    ck_assert_uint_ge(c.n_tensors, 1);
    ck_assert_uint_le(c.n_tensors, full.n_tensors);
    for (size_t i = 0; i + 1 < c.n_tensors; i++)
      ck_assert(same_tensors(&c.tensors[i], &full.tensors[i], 1));
  }
  ck_assert_int_gt(ok, 4);
  planner_csv_cleanup(&c);
  planner_csv_cleanup(&full);
}
END_TEST

/* Random byte damage never crashes, and a failure always explains. */
START_TEST(test_garbled)
{
  static const char junk[] = ",\n\r#-0123456789x \t\"";
  uint64_t seed = 42;
  size_t len = sizeof sample - 1;
  char *buf = malloc(len);
  ck_assert_ptr_nonnull(buf);
  for (int round = 0; round < 3000; round++) {
    memcpy(buf, sample, len);
    int flips = (int)tu_rand_range(&seed, 1, 4);
    for (int f = 0; f < flips; f++) {
      size_t at = tu_rand_range(&seed, 0, len - 1);
      buf[at] = tu_rand(&seed) & 1
                    ? junk[tu_rand_range(&seed, 0, sizeof junk - 2)]
                    : (char)tu_rand(&seed);
    }
    size_t cut = tu_rand_range(&seed, 0, len);
    struct planner_csv c;
    char err[ARENA_ERR_LEN] = "";
    planner_csv_init(&c);
    int rc = parse_exact(buf, cut, &c, err);
    if (rc == 0) {
      ck_assert_uint_ge(c.n_tensors, 1);
      for (size_t i = 0; i < c.n_tensors; i++)
        ck_assert_int_le(c.tensors[i].first, c.tensors[i].last);
    } else {
      ck_assert_msg(err[0] != '\0', "round %d: rc %d without message", round,
                    rc);
    }
    planner_csv_cleanup(&c);
  }
  free(buf);
}
END_TEST

/* ---- scale ----------------------------------------------------------------- */

#define MANY 1000000u

static struct planner_tensor *make_tensors(size_t n, uint64_t seed)
{
  struct planner_tensor *t = malloc(n * sizeof *t);
  ck_assert_ptr_nonnull(t);
  for (size_t i = 0; i < n; i++) {
    int64_t first = (int64_t)(i / 2);
    t[i].id = (uint32_t)i;
    t[i].size = tu_rand_range(&seed, 0, 1u << 20);
    t[i].first = first;
    t[i].last = first + (int64_t)tu_rand_range(&seed, 0, 5);
    t[i].align = 0;
    t[i].pinned = PLANNER_NOT_PINNED;
    t[i].alias = 0;
    t[i].has_alias = 0;
  }
  return t;
}

START_TEST(test_million_rows_ours)
{
  struct planner_tensor *t = make_tensors(MANY, 7);
  struct planner_graph g = {t, MANY};
  char *text = NULL;
  size_t len = 0;
  ck_assert_int_eq(planner_csv_write_alloc(&g, "a million rows", &text, &len),
                   0);
  struct planner_csv c;
  char err[ARENA_ERR_LEN];
  planner_csv_init(&c);
  ck_assert_int_eq(planner_csv_parse(text, len, &c, err), 0);
  ck_assert_uint_eq(c.n_tensors, MANY);
  ck_assert(same_tensors(c.tensors, t, MANY));
  planner_csv_cleanup(&c);
  free(text);
  free(t);
}
END_TEST

START_TEST(test_million_rows_minimalloc)
{
  size_t cap = (size_t)MANY * 48 + 64, len = 0;
  char *text = malloc(cap);
  ck_assert_ptr_nonnull(text);
  len += (size_t)snprintf(text, cap, "id,lower,upper,size\n");
  for (unsigned i = 0; i < MANY; i++)
    len += (size_t)snprintf(text + len, cap - len, "%u,%u,%u,%u\n", i, i,
                            i + 1 + i % 7, 1024 + i % 4096);
  struct planner_csv c;
  planner_csv_init(&c);
  ck_assert_int_eq(planner_csv_parse(text, len, &c, NULL), 0);
  ck_assert_uint_eq(c.n_tensors, MANY);
  assert_tensor(&c.tensors[MANY - 1], MANY - 1, 1024 + (MANY - 1) % 4096,
                MANY - 1, MANY - 1 + (MANY - 1) % 7);
  planner_csv_cleanup(&c);
  free(text);
}
END_TEST

/* ---- the writer ------------------------------------------------------------ */

static const struct planner_tensor few[] = {
    {3, 1024, 0, 2, 0, PLANNER_NOT_PINNED, 0, 0},
    {4, 0, 1, 1, 64, 4096, 0, 0},
    {4000000000u, UINT64_MAX, 5, INT64_MAX, 0, PLANNER_NOT_PINNED, 0, 0},
};

START_TEST(test_write_exact_text)
{
  struct planner_graph g = {few, 1};
  char buf[128];
  size_t len = 99;
  ck_assert_int_eq(planner_csv_write(&g, NULL, buf, sizeof buf, &len), 0);
  ck_assert_str_eq(buf, "id,size,first,last\n3,1024,0,2\n");
  ck_assert_uint_eq(len, strlen(buf));

  g.n_tensors = 2;
  ck_assert_int_eq(planner_csv_write(&g, "m\n\nsecond", buf, sizeof buf, &len),
                   0);
  ck_assert_str_eq(buf, "# m\n#\n# second\n"
                        "id,size,first,last,align,offset\n"
                        "3,1024,0,2,0,\n"
                        "4,0,1,1,64,4096\n");
}
END_TEST

static const struct planner_tensor shared[] = {
    {0, 100, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
    {1, 100, 1, 2, 0, PLANNER_NOT_PINNED, 0, 1},
    {7, 100, 2, 3, 0, PLANNER_NOT_PINNED, 1, 1},
    {8, 50, 0, 3, 0, PLANNER_NOT_PINNED, 123, 0}, /* ignored: has_alias 0 */
};

START_TEST(test_write_alias_column)
{
  struct planner_graph g = {shared, 4};
  char buf[256];
  size_t len = 0;
  ck_assert_int_eq(planner_csv_write(&g, NULL, buf, sizeof buf, &len), 0);
  ck_assert_str_eq(buf, "id,size,first,last,alias\n"
                        "0,100,0,1,\n"
                        "1,100,1,2,0\n"
                        "7,100,2,3,1\n"
                        "8,50,0,3,\n");
  /* with the other optional columns, alias comes last */
  struct planner_tensor t[2] = {few[1], shared[2]};
  g.tensors = t;
  g.n_tensors = 2;
  ck_assert_int_eq(planner_csv_write(&g, NULL, buf, sizeof buf, &len), 0);
  ck_assert_str_eq(buf, "id,size,first,last,align,offset,alias\n"
                        "4,0,1,1,64,4096,\n"
                        "7,100,2,3,0,,1\n");
  /* no tensor declares one: the text is what it always was */
  g.tensors = shared;
  g.n_tensors = 1;
  ck_assert_int_eq(planner_csv_write(&g, NULL, buf, sizeof buf, &len), 0);
  ck_assert_str_eq(buf, "id,size,first,last\n0,100,0,1\n");
  struct planner_tensor u = shared[3];
  g.tensors = &u;
  ck_assert_int_eq(planner_csv_write(&g, NULL, buf, sizeof buf, &len), 0);
  ck_assert_str_eq(buf, "id,size,first,last\n8,50,0,3\n");
}
END_TEST

START_TEST(test_write_alias_round_trip)
{
  struct planner_graph g = {shared, 4};
  char *text = NULL;
  size_t len = 0;
  ck_assert_int_eq(planner_csv_write_alloc(&g, "pairs", &text, &len), 0);
  struct planner_csv c;
  planner_csv_init(&c);
  ck_assert_int_eq(planner_csv_parse(text, len, &c, NULL), 0);
  ck_assert_uint_eq(c.n_tensors, 4);
  struct planner_tensor want[4];
  memcpy(want, shared, sizeof want);
  want[3].alias = 0; /* not declared: not written, read back as 0 */
  ck_assert(same_tensors(c.tensors, want, 4));
  ck_assert_uint_eq(c.tensors[3].alias, 0);
  /* and writing what was read gives the same text */
  struct planner_graph back = planner_csv_graph(&c);
  char *again = NULL;
  size_t len2 = 0;
  ck_assert_int_eq(planner_csv_write_alloc(&back, "pairs", &again, &len2), 0);
  ck_assert_str_eq(again, text);
  planner_csv_cleanup(&c);
  free(again);
  free(text);
}
END_TEST

START_TEST(test_write_small_buffer)
{
  struct planner_graph g = {few, 3};
  char buf[256];
  size_t need = 0, len = 0;
  ck_assert_int_eq(planner_csv_write(&g, NULL, NULL, 0, &need), ARENA_ETOOBIG);
  ck_assert_uint_gt(need, 40);
  ck_assert_uint_lt(need, sizeof buf);
  memset(buf, 'x', sizeof buf);
  ck_assert_int_eq(planner_csv_write(&g, NULL, buf, need, &len),
                   ARENA_ETOOBIG);
  ck_assert_uint_eq(len, need);
  ck_assert_int_eq(buf[0], '\0');
  ck_assert_int_eq(buf[need], 'x'); /* nothing written past cap */
  ck_assert_int_eq(planner_csv_write(&g, NULL, buf, need + 1, &len), 0);
  ck_assert_uint_eq(strlen(buf), need);
  ck_assert_int_eq(planner_csv_write(NULL, NULL, buf, sizeof buf, &len),
                   ARENA_EINVAL);
  ck_assert_int_eq(planner_csv_write(&g, NULL, buf, sizeof buf, NULL),
                   ARENA_EINVAL);
  char *out = (char *)1;
  ck_assert_int_eq(planner_csv_write_alloc(NULL, NULL, &out, &len),
                   ARENA_EINVAL);
  ck_assert_ptr_null(out);
}
END_TEST

START_TEST(test_write_round_trip)
{
  struct planner_graph g = {few, 3};
  char *text = NULL;
  size_t len = 0;
  ck_assert_int_eq(planner_csv_write_alloc(&g, "model=few\nops=6", &text,
                                           &len), 0);
  ck_assert_uint_eq(strlen(text), len);
  struct planner_csv c;
  planner_csv_init(&c);
  ck_assert_int_eq(planner_csv_parse(text, len, &c, NULL), 0);
  ck_assert_int_eq(c.format, PLANNER_CSV_OURS);
  ck_assert_uint_eq(c.n_tensors, 3);
  ck_assert(same_tensors(c.tensors, few, 3));
  planner_csv_cleanup(&c);
  free(text);
}
END_TEST

/* ---- the reference model graphs ----------------------------------------- */

static const char *const models[] = {
    "hello_world_float",
    "micro_speech_quantized",
    "trained_lstm",
    "micro_speech_lstm",
    "dtln_noise_suppression",
    "magic_wand",
    "keyword_scrambled",
    "audio_preprocessor_int8",
    "person_detect",
    "mobilenet_v2_quantized_1x3x224x224",
    "face_detection_short_range",
    "face_detection_short_range.keep_dequant",
};

/* Each file's second comment says how many tensors it plans. */
START_TEST(test_model_files)
{
  char path[512];
  size_t len = 0;
  snprintf(path, sizeof path, "%s/models/%s.csv", tu_data_dir(), models[_i]);
  char *text = tu_read_file(path, &len);
  ck_assert_msg(text != NULL, "cannot read %s", path);
  const char *planned = strstr(text, "planned=");
  ck_assert_ptr_nonnull(planned);
  unsigned long want = strtoul(planned + 8, NULL, 10);
  struct planner_csv c;
  char err[ARENA_ERR_LEN];
  planner_csv_init(&c);
  ck_assert_msg(planner_csv_parse(text, len, &c, err) == 0, "%s: %s", path,
                err);
  ck_assert_int_eq(c.format, PLANNER_CSV_OURS);
  ck_assert_uint_eq(c.n_tensors, want);
  planner_csv_cleanup(&c);
  free(text);
}
END_TEST

Suite *csv_suite(void)
{
  Suite *s = suite_create("csv");
  TCase *tc = tcase_create("parse");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_ours_basic);
  tcase_add_test(tc, test_ours_reference_spelling_and_comments);
  tcase_add_test(tc, test_crlf_bom_blanks_and_case);
  tcase_add_test(tc, test_no_final_newline);
  tcase_add_test(tc, test_align_offset_any_order);
  tcase_add_test(tc, test_limits_accepted);
  tcase_add_test(tc, test_minimalloc_exclusive_upper);
  tcase_add_test(tc, test_minimalloc_columns_any_order);
  tcase_add_test(tc, test_minimalloc_labels_renumbered);
  tcase_add_test(tc, test_alias_column);
  tcase_add_test(tc, test_alias_validated_after_parse);
  tcase_add_test(tc, test_validate_after_parse);
  tcase_add_loop_test(tc, test_model_files, 0,
                      (int)(sizeof models / sizeof models[0]));
  suite_add_tcase(s, tc);

  tc = tcase_create("errors");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_bad_input, 0,
                      (int)(sizeof bad_cases / sizeof bad_cases[0]));
  tcase_add_test(tc, test_nul_byte_and_long_token);
  tcase_add_test(tc, test_bad_arguments);
  tcase_add_test(tc, test_reparse_replaces_and_failure_empties);
  tcase_add_test(tc, test_truncated_everywhere);
  tcase_add_test(tc, test_garbled);
  suite_add_tcase(s, tc);

  tc = tcase_create("scale");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_million_rows_ours);
  tcase_add_test(tc, test_million_rows_minimalloc);
  suite_add_tcase(s, tc);

  tc = tcase_create("write");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_write_exact_text);
  tcase_add_test(tc, test_write_small_buffer);
  tcase_add_test(tc, test_write_round_trip);
  tcase_add_test(tc, test_write_alias_column);
  tcase_add_test(tc, test_write_alias_round_trip);
  suite_add_tcase(s, tc);

  csv_add_stream_tests(s);
  return s;
}

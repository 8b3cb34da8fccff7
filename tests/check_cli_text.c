/*
 * check_cli_text.c - the "text" cases of the cli suite: how arenactl
 * prints strings that came from a file or the daemon
 * (cli_print_text() and cli_print_json() of client/cli/cli_util.c, and
 * cli_error(), which sends every message through the first): a
 * terminal never gets a control byte from them, and JSON output is
 * valid UTF-8 whatever the bytes were.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_cli.h"
#include "cli.h"
#include "testutil.h"

/* What f printed s as, in a static buffer. */
static const char *printed(void (*f)(FILE *, const char *), const char *s)
{
  static char out[1024];
  FILE *m = fmemopen(out, sizeof out, "w");
  ck_assert_ptr_nonnull(m);
  f(m, s);
  ck_assert_int_eq(fclose(m), 0);
  return out;
}

static const struct {
  const char *in, *text, *json;
} cases[] = {
    {"plain", "plain", "\"plain\""},
    {"", "", "\"\""},
    {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", /* é, €, an emoji */
     "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
     "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
    {"a\x1b[31mred\x07", "a\\x1b[31mred\\x07", "\"a\\u001b[31mred\\u0007\""},
    {"tab\there\nline\r", "tab\\x09here\\x0aline\\x0d",
     "\"tab\\there\\nline\\r\""},
    {"q\"b\\", "q\"b\\", "\"q\\\"b\\\\\""},
    {"del\x7f", "del\\x7f", "\"del\\u007f\""},
    /* C1 controls (U+009B is CSI) in valid UTF-8. */
    {"c1\xc2\x9b", "c1\\xc2\\x9b", "\"c1\\u009b\""},
    /* Not UTF-8: a lone continuation byte, a lone lead byte, an
     * overlong '/', a surrogate, a code point past U+10FFFF, a
     * truncated sequence at the end. */
    {"x\x80y", "x\\x80y", "\"x\\ufffdy\""},
    {"\xff\xfe", "\\xff\\xfe", "\"\\ufffd\\ufffd\""},
    {"\xc0\xaf", "\\xc0\\xaf", "\"\\ufffd\\ufffd\""},
    {"\xed\xa0\x80", "\\xed\\xa0\\x80", "\"\\ufffd\\ufffd\\ufffd\""},
    {"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80",
     "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},
    {"end\xe2\x82", "end\\xe2\\x82", "\"end\\ufffd\\ufffd\""},
};

START_TEST(text_and_json_escapes)
{
  ck_assert_str_eq(printed(cli_print_text, cases[_i].in), cases[_i].text);
  ck_assert_str_eq(printed(cli_print_json, cases[_i].in), cases[_i].json);
}
END_TEST

START_TEST(null_strings)
{
  ck_assert_str_eq(printed(cli_print_text, NULL), "");
  ck_assert_str_eq(printed(cli_print_json, NULL), "\"\"");
}
END_TEST

/* A file whose name holds escape sequences (as `arenactl plan *` may
 * meet), with a bad line: the error names the file escaped, and stderr
 * holds no control byte but the newline. */
START_TEST(error_messages_escaped)
{
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  char in[600], out[600], err[600];
  snprintf(in, sizeof in, "%s/evil\x1b]0;pwned\x07\x1b[2J.csv", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  snprintf(err, sizeof err, "%s/err", dir);
  FILE *f = fopen(in, "wb");
  ck_assert_ptr_nonnull(f);
  fputs("id,size,first,last\n0,x,0,1\n", f);
  ck_assert_int_eq(fclose(f), 0);
  const char *argv[] = {cli_test_arenactl(), "plan", "--local", in, NULL};
  ck_assert_int_eq(tu_run(argv, NULL, NULL, out, err), 65);
  char *e = tu_read_file(err, NULL);
  ck_assert_ptr_nonnull(e);
  ck_assert_msg(strstr(e, "/evil\\x1b]0;pwned\\x07\\x1b[2J.csv: ") != NULL,
                "%s", e);
  for (const char *p = e; *p; p++)
    ck_assert_msg((unsigned char)*p >= 0x20 || *p == '\n',
                  "control byte 0x%02x on stderr", (unsigned char)*p);
  free(e);
  tu_rm_rf(dir);
  free(dir);
}
END_TEST

/* One tensor of one byte: every count and size in the text is singular
 * ("1 byte", "1 tensor"), none says "1 bytes". */
START_TEST(singular_counts)
{
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  char in[600], out[600], err[600];
  snprintf(in, sizeof in, "%s/one.csv", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  snprintf(err, sizeof err, "%s/err", dir);
  FILE *f = fopen(in, "wb");
  ck_assert_ptr_nonnull(f);
  fputs("id,size,first,last\n0,1,0,0\n", f);
  ck_assert_int_eq(fclose(f), 0);
  static const char *const cmds[][3] = {
      {"explain", NULL}, {"render", NULL}, {"plan", "--local", NULL}};
  static const char *const want[][3] = {
      {"(csv, 1 tensor, 1 operator)", "peak:        1 byte at operator",
       "lower bound: 1 byte (alignment 64)"},
      {"1 tensor, 1 operator,", "arena 1 byte, lower bound 1 byte, peak 1 "
                                "live byte",
       ": 1 byte at offset 0"},
      {"(1 tensor, CSV)", "arena:           1 byte\n",
       "lower bound:     1 byte ("},
  };
  for (size_t c = 0; c < 3; c++) {
    const char *argv[] = {cli_test_arenactl(), cmds[c][0],
                          cmds[c][1] ? cmds[c][1] : in,
                          cmds[c][1] ? in : NULL, NULL};
    ck_assert_int_eq(tu_run(argv, NULL, NULL, out, err), 0);
    char *o = tu_read_file(out, NULL);
    ck_assert_ptr_nonnull(o);
    for (size_t k = 0; k < 3; k++)
      ck_assert_msg(strstr(o, want[c][k]) != NULL, "%s: '%s' not in:\n%s",
                    cmds[c][0], want[c][k], o);
    ck_assert_msg(strstr(o, " 1 bytes") == NULL &&
                      strstr(o, " 1 tensors") == NULL,
                  "%s: a plural after 1 in:\n%s", cmds[c][0], o);
    if (c == 2) /* the naive line of the one-byte graph */
      ck_assert_msg(strstr(o, "naive:           1 byte\n") != NULL, "%s",
                    o);
    free(o);
  }
  tu_rm_rf(dir);
  free(dir);
}
END_TEST

void cli_add_text(Suite *s)
{
  TCase *tc = tcase_create("text");
  tcase_set_timeout(tc, 30);
  tcase_add_loop_test(tc, text_and_json_escapes, 0,
                      (int)(sizeof cases / sizeof cases[0]));
  tcase_add_test(tc, null_strings);
  tcase_add_test(tc, error_messages_escaped);
  tcase_add_test(tc, singular_counts);
  suite_add_tcase(s, tc);
}

/*
 * check_cli.c - end-to-end tests of the arenactl binary.
 *
 * Each test runs arenactl as a child process (the path comes from the
 * ARENACTL environment variable, which tests/run.sh sets from BUILD;
 * the tests run in the repository root) and checks its exit status, its
 * stdout and its stderr. JSON output is read back and the plan in it
 * checked independently: every offset aligned, no two tensors that share
 * an operator sharing a byte.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_cli.h"
#include "testutil.h"

/* What one run of arenactl produced. */
struct run {
  int status; /* exit status, or 128 + signal number */
  char *out;  /* stdout, owned */
  char *err;  /* stderr, owned */
};

static char *tmpdir; /* fresh per test */

static void setup(void)
{
  tmpdir = tu_mkdtemp();
  ck_assert_ptr_nonnull(tmpdir);
}

static void teardown(void)
{
  tu_rm_rf(tmpdir);
  free(tmpdir);
  tmpdir = NULL;
}

const char *cli_test_arenactl(void)
{
  return tu_bin("ARENACTL");
}

/* Writes text to a file in the temp dir; returns its path (static). */
static const char *tmp_file(const char *name, const char *text)
{
  static char path[4][600];
  static int k;
  char *p = path[k++ % 4];
  snprintf(p, sizeof path[0], "%s/%s", tmpdir, name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
  ck_assert_int_eq(fclose(f), 0);
  return p;
}

/* Runs arenactl with the NULL-terminated args and stdin from in_path (NULL
 * for /dev/null). */
static void run_cli(struct run *r, const char *in_path, const char *const *args)
{
  char out_path[600], err_path[600];
  const char *argv[32];
  int n = 0;
  argv[n++] = cli_test_arenactl();
  while (args[n - 1] && n < 31) {
    argv[n] = args[n - 1];
    n++;
  }
  argv[n] = NULL;
  snprintf(out_path, sizeof out_path, "%s/stdout", tmpdir);
  snprintf(err_path, sizeof err_path, "%s/stderr", tmpdir);
  r->status = tu_run(argv, NULL, in_path, out_path, err_path);
  ck_assert_msg(r->status != 127, "cannot run %s (set ARENACTL)", argv[0]);
  r->out = tu_read_file(out_path, NULL);
  r->err = tu_read_file(err_path, NULL);
  ck_assert_ptr_nonnull(r->out);
  ck_assert_ptr_nonnull(r->err);
}

static void run_free(struct run *r)
{
  free(r->out);
  free(r->err);
}

#define RUN(r, ...) run_cli((r), NULL, (const char *const[]){__VA_ARGS__, NULL})

static void assert_contains(const char *hay, const char *needle)
{
  ck_assert_msg(strstr(hay, needle) != NULL, "'%s' not found in:\n%s",
                needle, hay);
}

/* ---- reading JSON back ---------------------------------------------------- */

/* Finds "key": at the top level (before the tensor array). */
static const char *json_key(const char *json, const char *key)
{
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *end = strstr(json, "\"tensors\":");
  const char *p = strstr(json, pat);
  return p && (!end || p < end) ? p + strlen(pat) : NULL;
}

static uint64_t json_u64(const char *json, const char *key)
{
  const char *p = json_key(json, key);
  ck_assert_msg(p != NULL, "no \"%s\" in %s", key, json);
  char *e;
  unsigned long long v = strtoull(p, &e, 10);
  ck_assert_msg(e != p, "\"%s\" is not a number", key);
  return v;
}

/* Copies the string value of key into out. */
static void json_str(const char *json, const char *key, char *out, size_t cap)
{
  const char *p = json_key(json, key);
  ck_assert_msg(p && *p == '"', "no string \"%s\" in %s", key, json);
  const char *e = strchr(p + 1, '"');
  ck_assert_ptr_nonnull(e);
  size_t n = (size_t)(e - p - 1);
  ck_assert_uint_lt(n, cap);
  memcpy(out, p + 1, n);
  out[n] = '\0';
}

struct jt {
  unsigned id;
  unsigned long long size, offset;
  long long first, last;
};

/* Reads the tensor array; returns the count (at most max). */
static size_t json_tensors(const char *json, struct jt *t, size_t max)
{
  const char *p = strstr(json, "\"tensors\":[");
  ck_assert_ptr_nonnull(p);
  size_t n = 0;
  while ((p = strstr(p, "{\"id\":")) != NULL) {
    ck_assert_uint_lt(n, max);
    int got = sscanf(p,
                     "{\"id\":%u,\"size\":%llu,\"first\":%lld,\"last\":%lld,"
                     "\"offset\":%llu}",
                     &t[n].id, &t[n].size, &t[n].first, &t[n].last,
                     &t[n].offset);
    ck_assert_int_eq(got, 5);
    n++;
    p++;
  }
  return n;
}

/* Checks the plan in a JSON reply on its own terms; returns its arena. */
static uint64_t check_json_plan(const char *json, size_t want_n)
{
  static struct jt t[512];
  size_t n = json_tensors(json, t, 512);
  uint64_t align = json_u64(json, "alignment"), arena = 0;
  ck_assert_uint_eq(n, want_n);
  for (size_t i = 0; i < n; i++) {
    if (t[i].size && t[i].offset + t[i].size > arena)
      arena = t[i].offset + t[i].size;
    ck_assert_msg(t[i].size == 0 || t[i].offset % align == 0,
                  "tensor %u at %llu not aligned to %llu", t[i].id,
                  t[i].offset, (unsigned long long)align);
    for (size_t j = 0; j < i; j++) {
      int in_time = t[i].first <= t[j].last && t[j].first <= t[i].last;
      int in_mem = t[i].offset < t[j].offset + t[j].size &&
                   t[j].offset < t[i].offset + t[i].size;
      ck_assert_msg(!(in_time && in_mem && t[i].size && t[j].size),
                    "tensors %u and %u collide", t[i].id, t[j].id);
    }
  }
  ck_assert_uint_eq(json_u64(json, "arena_bytes"), arena);
  return arena;
}

/* Path of a reference model graph (static buffer, one at a time). */
static const char *model_path(const char *name)
{
  static char path[512];
  snprintf(path, sizeof path, "%s/models/%s.csv", tu_data_dir(), name);
  return path;
}

/* ---- global options ------------------------------------------------------- */

START_TEST(test_no_arguments)
{
  struct run r;
  run_cli(&r, NULL, (const char *const[]){NULL});
  ck_assert_int_eq(r.status, 64);
  assert_contains(r.err, "Usage: arenactl");
  ck_assert_str_eq(r.out, "");
  run_free(&r);
}
END_TEST

START_TEST(test_help_and_version)
{
  struct run r;
  RUN(&r, "--help");
  ck_assert_int_eq(r.status, 0);
  assert_contains(r.out, "Usage: arenactl");
  assert_contains(r.out, "plan");
  ck_assert_str_eq(r.err, "");
  run_free(&r);
  RUN(&r, "--version");
  ck_assert_int_eq(r.status, 0);
  assert_contains(r.out, "arenactl ");
  run_free(&r);
  RUN(&r, "frobnicate");
  ck_assert_int_eq(r.status, 64);
  assert_contains(r.err, "arenactl: unknown command 'frobnicate'");
  run_free(&r);
}
END_TEST

START_TEST(test_plan_help)
{
  struct run r;
  RUN(&r, "plan", "--help");
  ck_assert_int_eq(r.status, 0);
  assert_contains(r.out, "Usage: arenactl plan");
  const char *opts[] = {"--local", "--algo", "--align", "--effort",
                        "--budget-ms", "--capacity", "--json",
                        "tflite-bestfit", "--in-place", "--no-in-place"};
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
    assert_contains(r.out, opts[i]);
  run_free(&r);
}
END_TEST

/* ---- exit statuses -------------------------------------------------------- */

static const char good_csv[] = "id,size,first,last\n0,100,0,1\n1,50,1,2\n"
                               "2,100,2,3\n";

START_TEST(test_usage_errors)
{
  static const char *const cases[][5] = {
      {"--bogus", "F", NULL},
      {NULL},
      {"--algo", "foo", "F", NULL},
      {"--algo", NULL},
      {"--align", "3", "F", NULL},
      {"--align", "0", "F", NULL},
      {"--align", "abc", "F", NULL},
      {"--align=8589934592", "F", NULL},
      {"--capacity", "0", "F", NULL},
      {"--capacity", "-5", "F", NULL},
      {"--capacity", "12Q", "F", NULL},
      {"--effort", "x", "F", NULL},
      {"--effort", "99999999999", "F", NULL},
      {"--effort", "-1", "F", NULL},
      {"--budget-ms", "x", "F", NULL},
      {"--budget-ms", "99999999999", "F", NULL},
      {"F", "F", NULL},
  };
  const char *f = tmp_file("g.csv", good_csv);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const char *argv[8] = {"plan"};
    size_t n = 1;
    for (size_t k = 0; cases[c][k]; k++)
      argv[n++] = strcmp(cases[c][k], "F") ? cases[c][k] : f;
    argv[n] = NULL;
    struct run r;
    run_cli(&r, NULL, argv);
    ck_assert_msg(r.status == 64, "case %zu: status %d", c, r.status);
    ck_assert_msg(strncmp(r.err, "arenactl: plan: ", 16) == 0,
                  "case %zu: stderr '%s'", c, r.err);
    ck_assert_str_eq(r.out, "");
    run_free(&r);
  }
}
END_TEST

START_TEST(test_missing_and_unreadable)
{
  char path[700];
  struct run r;
  snprintf(path, sizeof path, "%s/no-such.csv", tmpdir);
  RUN(&r, "plan", "--local", path);
  ck_assert_int_eq(r.status, 66);
  char want[800];
  snprintf(want, sizeof want, "arenactl: %s: ", path);
  ck_assert_msg(strncmp(r.err, want, strlen(want)) == 0, "stderr '%s'", r.err);
  ck_assert_str_eq(r.out, "");
  run_free(&r);

  RUN(&r, "plan", "--local", tmpdir);
  ck_assert_int_eq(r.status, 66);
  assert_contains(r.err, "directory");
  run_free(&r);
}
END_TEST

static const struct bad_data {
  const char *text;
  const char *msg;
} bad_data[] = {
    {"", "empty input"},
    {"id,size,first,last\n", "no tensors"},
    {"0,1,2,3\n", "line 1: missing header"},
    {"# c\nid,size,first,last\n0,1,0,1\n1,abc,0,1\n",
     "line 4: size: not a number: 'abc'"},
    {"id,size,first,last\n0,1,5,1\n", "first 5 is after last 1"},
    {"id,size,first,last\n0,1,0\n", "expected 4 fields"},
    {"id,size,first,last\n0,1,0,1\n0,2,0,1\n", "appears twice"},
    {"id,size,first,last,align\n0,1,0,1,3\n", "not a power of two"},
    {"id,size,first,last,offset\n0,128,0,1,0\n1,8,1,2,64\n", "pinned"},
    {"id,lower,upper,size\n0,4,4,8\n", "lower 4 is not below upper 4"},
    {"id,size,first,last\n0,99999999999999999999,0,1\n", "out of range"},
};

START_TEST(test_bad_data)
{
  const struct bad_data *b = &bad_data[_i];
  const char *f = tmp_file("bad.csv", b->text);
  struct run r;
  RUN(&r, "plan", "--local", f);
  ck_assert_msg(r.status == 65, "case %d: status %d: %s", _i, r.status,
                r.err);
  char want[800];
  snprintf(want, sizeof want, "arenactl: %s: ", f);
  ck_assert_msg(strncmp(r.err, want, strlen(want)) == 0, "stderr '%s'", r.err);
  assert_contains(r.err + strlen(want), b->msg);
  const char *nl = strchr(r.err, '\n');
  ck_assert_ptr_nonnull(nl);
  ck_assert_int_eq(nl[1], '\0'); /* exactly one line */
  ck_assert_str_eq(r.out, "");
  run_free(&r);
}
END_TEST

/* Near 2^63: padded sizes past the largest arena (2^63 - 1 bytes) are
 * bad input, exit 65, for plan and for the commands that plan first; a
 * graph just inside the limit plans. Sizes 2^63 - 1 - 2^33 and
 * 2^63 - 1 - 2^31, the second aligned to 2^32. */
static const char over_csv[] = "id,size,first,last,align\n"
                               "1,9223372028264841215,0,1,0\n"
                               "2,9223372034707292159,1,2,4294967296\n";

START_TEST(test_overflow_is_bad_input)
{
  const char *f = tmp_file("over.csv", over_csv);
  static const char *const cmds[][4] = {
      {"plan", "--local", NULL},        {"plan", "--local", "--json", NULL},
      {"explain", NULL},                {"render", NULL},
      {"diff", "F", NULL},
  };
  for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
    const char *argv[8];
    size_t n = 0;
    for (size_t k = 0; cmds[c][k]; k++)
      argv[n++] = strcmp(cmds[c][k], "F") ? cmds[c][k] : f;
    argv[n++] = f;
    argv[n] = NULL;
    struct run r;
    run_cli(&r, NULL, argv);
    ck_assert_msg(r.status == 65, "%s: status %d: %s", cmds[c][0], r.status,
                  r.err);
    assert_contains(r.err, "exceed 2^63 - 1 bytes at tensor 2");
    run_free(&r);
  }
  /* Just inside: 2^63 - 1 - 2^32 bytes, aligned to 2^32. */
  f = tmp_file("edge.csv", "id,size,first,last,align\n"
                           "7,9223372032559808511,0,0,4294967296\n");
  struct run r;
  RUN(&r, "plan", "--local", "--json", "--algo", "exact", f);
  ck_assert_int_eq(r.status, 0);
  ck_assert_uint_eq(json_u64(r.out, "arena_bytes"), 9223372032559808511ull);
  run_free(&r);
}
END_TEST

/* ---- output --------------------------------------------------------------- */

START_TEST(test_text_output)
{
  struct run r;
  RUN(&r, "plan", "--local", model_path("person_detect"));
  ck_assert_int_eq(r.status, 0);
  ck_assert_str_eq(r.err, "");
  const char *lines[] = {"arena:", "lower bound:     55296 bytes",
                         "naive:           241030 bytes", "saving:",
                         "% vs naive", "proven optimal:", "algorithm:",
                         "alignment:       64 bytes"};
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
    assert_contains(r.out, lines[i]);
  const char *table = strstr(r.out, "\n\n");
  ck_assert_ptr_nonnull(table);
  unsigned id, lo, hi;
  unsigned long long size, off;
  char hdr[5][16];
  ck_assert_int_eq(sscanf(table, "%15s %15s %15s %15s %15s", hdr[0], hdr[1],
                          hdr[2], hdr[3], hdr[4]), 5);
  ck_assert_str_eq(hdr[0], "id");
  ck_assert_str_eq(hdr[4], "offset");
  int rows = 0;
  for (const char *p = strchr(table + 2, '\n'); p && p[1]; p = strchr(p + 1,
                                                                     '\n')) {
    ck_assert_int_eq(sscanf(p + 1, "%u %llu %u %u %llu", &id, &size, &lo, &hi,
                            &off), 5);
    ck_assert_uint_eq(off % 64, 0);
    rows++;
  }
  ck_assert_int_eq(rows, 32);
  run_free(&r);
}
END_TEST

START_TEST(test_text_capacity_and_search)
{
  const char *f = tmp_file("g.csv", good_csv);
  struct run r;
  RUN(&r, "plan", "--local", f, "--algo", "exact", "--capacity", "1K", "--align", "1");
  ck_assert_int_eq(r.status, 0);
  assert_contains(r.out, "capacity:        1024 bytes: fits (874 bytes spare)");
  assert_contains(r.out, "exact search:");
  assert_contains(r.out, "gap to the bound 0 bytes");
  assert_contains(r.out, "proven optimal:  yes");
  run_free(&r);
}
END_TEST

static const char *const algos[] = {"best", "naive", "tflm-greedy",
                                    "tflite-bestfit", "greedy-size",
                                    "greedy-breadth", "exact"};

START_TEST(test_bound_source_and_gap)
{
  /* A tensor pinned at 10 leaves no room below it for an 11-byte one, so
   * the optimum (22) is above the load bound (16): the exact search
   * proves it and the bound is named "search", with no gap left. */
  const char *f = tmp_file("pinned.csv", "id,size,first,last,offset\n"
                                         "0,1,0,0,10\n1,11,0,1,\n"
                                         "2,5,1,1,\n");
  struct run r;
  RUN(&r, "plan", "--local", "--json", "--algo", "exact", "--align", "1", f);
  ck_assert_int_eq(r.status, 0);
  char bound[16];
  json_str(r.out, "bound", bound, sizeof bound);
  ck_assert_str_eq(bound, "search");
  ck_assert_uint_eq(json_u64(r.out, "arena_bytes"), 22);
  ck_assert_uint_eq(json_u64(r.out, "lower_bound_bytes"), 22);
  ck_assert_uint_eq(json_u64(r.out, "gap_bytes"), 0);
  ck_assert_ptr_nonnull(json_key(r.out, "gap_percent"));
  run_free(&r);
  RUN(&r, "plan", "--local", "--algo", "exact", "--align", "1", f);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "lower bound:     22 bytes (search bound)"));
  run_free(&r);
  /* Here the load bound (150 at operator 0) is met: "load", no gap. */
  const char *g = tmp_file("gap.csv", "id,size,first,last\n"
                                      "0,100,0,0\n1,60,1,2\n"
                                      "2,50,0,1\n");
  RUN(&r, "plan", "--local", "--json", "--algo", "best", "--align", "1",
      "--effort", "50", g);
  ck_assert_int_eq(r.status, 0);
  json_str(r.out, "bound", bound, sizeof bound);
  uint64_t arena = json_u64(r.out, "arena_bytes");
  uint64_t lb = json_u64(r.out, "lower_bound_bytes");
  ck_assert_uint_eq(lb, 150);
  ck_assert_uint_eq(arena, 150);
  ck_assert_uint_eq(json_u64(r.out, "gap_bytes"), 0);
  ck_assert_str_eq(bound, "load");
  run_free(&r);
}
END_TEST

/* --effort sets the exact search's effort: the same number gives the
 * same plan, node for node; a larger one explores more. --budget-ms is
 * its deprecated alias: the same plan, and a one-line warning. */
START_TEST(test_effort_option)
{
  char path[512];
  snprintf(path, sizeof path, "%s/minimalloc/E.1048576.csv", tu_data_dir());
  struct run a, b, c, d;
  RUN(&a, "plan", "--local", "--json", "--effort", "3", path);
  RUN(&b, "plan", "--local", "--json", "--effort", "3", path);
  RUN(&c, "plan", "--local", "--json", "--budget-ms", "3", path);
  RUN(&d, "plan", "--local", "--json", "--effort", "12", path);
  ck_assert_int_eq(a.status, 0);
  ck_assert_int_eq(b.status, 0);
  ck_assert_int_eq(c.status, 0);
  ck_assert_int_eq(d.status, 0);
  ck_assert_str_eq(a.err, "");
  ck_assert_str_eq(c.err, "arenactl: plan: warning: --budget-ms is "
                          "deprecated; use --effort (the same number, in "
                          "effort units)\n");
  uint64_t nodes = json_u64(a.out, "nodes_explored");
  ck_assert_uint_gt(nodes, 0);
  ck_assert_uint_eq(json_u64(b.out, "nodes_explored"), nodes);
  ck_assert_uint_eq(json_u64(c.out, "nodes_explored"), nodes);
  ck_assert_uint_gt(json_u64(d.out, "nodes_explored"), nodes);
  ck_assert_str_eq(strstr(a.out, "\"tensors\":"),
                   strstr(b.out, "\"tensors\":"));
  ck_assert_str_eq(strstr(a.out, "\"tensors\":"),
                   strstr(c.out, "\"tensors\":"));
  run_free(&a);
  run_free(&b);
  run_free(&c);
  run_free(&d);
}
END_TEST

START_TEST(test_json_every_algorithm)
{
  const char *algo = algos[_i];
  struct run r;
  RUN(&r, "plan", "--local", "--json", "--algo", algo,
      model_path("mobilenet_v2_quantized_1x3x224x224"));
  ck_assert_int_eq(r.status, 0);
  ck_assert_str_eq(r.err, "");
  ck_assert_int_eq(r.out[0], '{');
  ck_assert_str_eq(r.out + strlen(r.out) - 3, "]}\n");
  uint64_t arena = check_json_plan(r.out, 85);
  uint64_t lb = json_u64(r.out, "lower_bound_bytes");
  uint64_t naive = json_u64(r.out, "naive_bytes");
  ck_assert_uint_ge(arena, lb);
  ck_assert_uint_ge(lb, 2451840); /* alignment 64 can only raise it */
  ck_assert_uint_eq(naive, 11571924);
  ck_assert_uint_eq(json_u64(r.out, "alignment"), 64);
  char got[32], proven[8];
  json_str(r.out, "algorithm", got, sizeof got);
  if (strcmp(algo, "best") && strcmp(algo, "exact"))
    ck_assert_str_eq(got, algo);
  const char *p = json_key(r.out, "proven_optimal");
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(sscanf(p, "%7[a-z]", proven), 1);
  ck_assert_str_eq(proven, arena == lb ? "true" : "false");
  int searched = !strcmp(algo, "best") || !strcmp(algo, "exact");
  ck_assert_int_eq(json_key(r.out, "nodes_explored") != NULL, searched);
  ck_assert_int_eq(json_key(r.out, "search_us") != NULL, searched);
  ck_assert_int_eq(json_key(r.out, "gap_bytes") != NULL, searched);
  /* planned here: where the time went, phases within the whole */
  static const char *const phases[] = {"validate_us", "index_us",
                                       "heuristics_us", "verify_us",
                                       "search_us"};
  uint64_t whole = json_u64(r.out, "plan_us"), sum = 0;
  ck_assert_ptr_nonnull(json_key(r.out, "plan_us"));
  for (int k = 0; k < 5; k++) {
    ck_assert_int_eq(json_key(r.out, phases[k]) != NULL, k < 4 || searched);
    sum += k < 4 || searched ? json_u64(r.out, phases[k]) : 0;
  }
  ck_assert_uint_le(sum, whole);
  /* and the command's reading of the file, apart from the planning */
  ck_assert_ptr_nonnull(json_key(r.out, "read_us"));
  char src[16];
  json_str(r.out, "bound", src, sizeof src);
  ck_assert_str_eq(src, "load"); /* no search proves more here */
  ck_assert_ptr_null(json_key(r.out, "capacity"));
  ck_assert_ptr_null(json_key(r.out, "fit"));
  run_free(&r);
}
END_TEST

START_TEST(test_json_capacity)
{
  struct run r;
  const char *f = model_path("person_detect");
  RUN(&r, "plan", "--local", "--json", "--capacity", "64K", f);
  ck_assert_int_eq(r.status, 0);
  ck_assert_uint_eq(json_u64(r.out, "capacity"), 65536);
  char fit[16];
  json_str(r.out, "fit", fit, sizeof fit);
  ck_assert_str_eq(fit, "fits");
  ck_assert_uint_le(check_json_plan(r.out, 32), 65536);
  run_free(&r);

  RUN(&r, "plan", "--local", "--json", "--capacity", "50000", f);
  ck_assert_int_eq(r.status, 1);
  ck_assert_uint_eq(json_u64(r.out, "capacity"), 50000);
  json_str(r.out, "fit", fit, sizeof fit);
  ck_assert_str_eq(fit, "infeasible"); /* 50000 is below the bound */
  assert_contains(r.err, "does not fit in 50000 bytes");
  run_free(&r);

  /* Above the bound but tighter than any plan found: fits or unknown. */
  RUN(&r, "plan", "--local", "--json", "--align", "1", "--algo", "naive",
      "--capacity", "100000", f);
  ck_assert_int_eq(r.status, 1);
  json_str(r.out, "fit", fit, sizeof fit);
  ck_assert_str_eq(fit, "unknown");
  assert_contains(r.err, "100000");
  run_free(&r);
}
END_TEST

static const char mm_csv[] = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\n"
                             "b3,0,9,4\nb4,9,21,4\nb5,0,21,4\n";

/* Removes the timing fields ("..._us":N,) from a JSON object in place:
 * the rest of a plan is the same on every run. */
static void strip_times(char *json)
{
  char *w = json, *p = json;
  while (*p) {
    char *q = strstr(p, "_us\":");
    if (!q) {
      memmove(w, p, strlen(p) + 1);
      return;
    }
    char *k = q;
    while (k > p && k[-1] != '"')
      k--;
    char *e = q + 5;
    while (*e >= '0' && *e <= '9')
      e++;
    if (k > p && *e == ',') {
      k--; /* the key's opening quote */
      e++;
    } else {
      k = e = q + 5; /* not one: keep it */
    }
    memmove(w, p, (size_t)(k - p));
    w += k - p;
    p = e;
  }
  *w = '\0';
}

START_TEST(test_stdin)
{
  const char *f = tmp_file("mm.csv", mm_csv);
  struct run r, s;
  run_cli(&r, f, (const char *const[]){"plan", "--local", "--json", "--align",
                                       "1", "-", NULL});
  ck_assert_int_eq(r.status, 0);
  ck_assert_uint_eq(json_u64(r.out, "lower_bound_bytes"), 12);
  ck_assert_uint_eq(json_u64(r.out, "naive_bytes"), 20);
  ck_assert_uint_eq(check_json_plan(r.out, 5), 12);
  RUN(&s, "plan", "--local", "--json", "--align", "1", f);
  ck_assert_int_eq(s.status, 0);
  ck_assert_ptr_nonnull(strstr(r.out, "\"plan_us\":"));
  strip_times(r.out);
  strip_times(s.out);
  ck_assert_ptr_null(strstr(r.out, "_us\":"));
  ck_assert_str_eq(r.out, s.out); /* deterministic, however it is read */
  run_free(&r);
  run_free(&s);
}
END_TEST

/* Without --local and without a daemon to ask, plan still plans here. */
START_TEST(test_no_daemon_falls_back)
{
  char sock[700];
  const char *f = tmp_file("mm.csv", mm_csv);
  snprintf(sock, sizeof sock, "%s/no-daemon.sock", tmpdir);
  ck_assert_int_eq(setenv("ARENAD_SOCKET", sock, 1), 0);
  struct run r;
  RUN(&r, "plan", "--json", "--align", "1", f);
  ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
  ck_assert_uint_eq(json_u64(r.out, "lower_bound_bytes"), 12);
  ck_assert_uint_eq(check_json_plan(r.out, 5), 12);
  run_free(&r);
}
END_TEST

/* ---- in-place sharing ----------------------------------------------------- */

/* Three elementwise steps, each output written over its input, and one
 * tensor live throughout: 150 bytes with sharing, 250 without. */
static const char alias_csv[] = "id,size,first,last,alias\n"
                                "0,100,0,1,\n"
                                "1,100,1,2,0\n"
                                "2,100,2,3,1\n"
                                "3,50,0,3,\n";
static const char bare_csv[] = "id,size,first,last\n0,100,0,1\n1,100,1,2\n"
                               "2,100,2,3\n3,50,0,3\n";

START_TEST(test_in_place_plan)
{
  const char *f = tmp_file("alias.csv", alias_csv);
  struct run r;
  RUN(&r, "plan", "--local", "--align", "1", "--json", f);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_uint_eq(json_u64(r.out, "arena_bytes"), 150);
  ck_assert_uint_eq(json_u64(r.out, "lower_bound_bytes"), 150);
  ck_assert_uint_eq(json_u64(r.out, "lower_bound_unshared_bytes"), 250);
  assert_contains(r.out, "\"shared_pairs\":[{\"out\":1,\"in\":0,\"op\":1,"
                         "\"bytes\":100},{\"out\":2,\"in\":1,\"op\":2,"
                         "\"bytes\":100}]");
  /* the pairs sit at one offset; the tensors carry their alias */
  struct jt t[4];
  ck_assert_uint_eq(json_tensors(r.out, t, 4), 4);
  ck_assert_uint_eq(t[0].offset, t[1].offset);
  ck_assert_uint_eq(t[1].offset, t[2].offset);
  assert_contains(r.out, "\"offset\":0,\"alias\":0}");
  run_free(&r);
  /* --no-in-place: the arena of the graph without the column */
  RUN(&r, "plan", "--local", "--align", "1", "--json", "--no-in-place", f);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_uint_eq(json_u64(r.out, "arena_bytes"), 250);
  ck_assert_uint_eq(json_u64(r.out, "lower_bound_bytes"), 250);
  ck_assert_uint_eq(json_u64(r.out, "lower_bound_unshared_bytes"), 250);
  assert_contains(r.out, "\"shared_pairs\":[]");
  ck_assert_uint_eq(check_json_plan(r.out, 4), 250);
  run_free(&r);
  /* --in-place is the default, and the last of the two wins */
  RUN(&r, "plan", "--local", "--align", "1", "--json", "--no-in-place",
      "--in-place", f);
  ck_assert_uint_eq(json_u64(r.out, "arena_bytes"), 150);
  run_free(&r);
  /* a graph without aliases: the new keys, nothing shared */
  const char *g = tmp_file("bare.csv", bare_csv);
  RUN(&r, "plan", "--local", "--align", "1", "--json", g);
  ck_assert_uint_eq(json_u64(r.out, "arena_bytes"), 250);
  ck_assert_uint_eq(json_u64(r.out, "lower_bound_unshared_bytes"), 250);
  assert_contains(r.out, "\"shared_pairs\":[]");
  ck_assert_ptr_null(strstr(r.out, "\"alias\""));
  run_free(&r);
}
END_TEST

START_TEST(test_in_place_text)
{
  const char *f = tmp_file("alias.csv", alias_csv);
  struct run r;
  RUN(&r, "plan", "--local", "--align", "1", f);
  ck_assert_msg(r.status == 0, "%s", r.err);
  assert_contains(r.out, "arena:           150 bytes\n"
                         "lower bound:     150 bytes (load bound)\n"
                         "unshared bound:  250 bytes (the lower bound with "
                         "no pair shared)\n"
                         "in-place pairs:  2 of 2 declared share their "
                         "input's bytes: 1<-0, 2<-1\n");
  run_free(&r);
  RUN(&r, "plan", "--local", "--align", "1", "--no-in-place", f);
  assert_contains(r.out, "arena:           250 bytes\n");
  assert_contains(r.out, "in-place pairs:  off (--no-in-place): 2 declared, "
                         "none shared\n");
  run_free(&r);
  /* a graph without aliases prints no such lines */
  const char *g = tmp_file("bare.csv", bare_csv);
  RUN(&r, "plan", "--local", "--align", "1", g);
  ck_assert_ptr_null(strstr(r.out, "unshared bound"));
  ck_assert_ptr_null(strstr(r.out, "in-place"));
  run_free(&r);
}
END_TEST

/* An alias that names no tensor is bad input, as the planner says. */
START_TEST(test_in_place_bad_alias)
{
  const char *f = tmp_file("bad.csv", "id,size,first,last,alias\n0,8,0,1,\n"
                                      "1,8,1,2,9\n");
  struct run r;
  RUN(&r, "plan", "--local", f);
  ck_assert_int_eq(r.status, 65);
  assert_contains(r.err, "reuses tensor 9, which is not in the graph");
  run_free(&r);
  f = tmp_file("junk.csv", "id,size,first,last,alias\n0,8,0,1,x\n");
  RUN(&r, "plan", "--local", f);
  ck_assert_int_eq(r.status, 65);
  assert_contains(r.err, "line 2: alias: not a number: 'x'");
  run_free(&r);
}
END_TEST

START_TEST(test_in_place_explain)
{
  const char *f = tmp_file("alias.csv", alias_csv);
  struct run r;
  RUN(&r, "explain", "--align", "1", f);
  ck_assert_msg(r.status == 0, "%s", r.err);
  assert_contains(r.out, "lower bound: 150 bytes (alignment 1)");
  assert_contains(r.out, "in-place sharing: 2 of 2 declared pairs taken by "
                         "best");
  assert_contains(r.out, "           1          0          1          100\n"
                         "           2          1          2          100\n");
  assert_contains(r.out, "saved by sharing: lower bound 250 -> 150 (-100 "
                         "bytes), arena (best) 250 -> 150 (-100 bytes)");
  run_free(&r);
  RUN(&r, "explain", "--align", "1", "--json", f);
  ck_assert_msg(r.status == 0, "%s", r.err);
  assert_contains(r.out, "\"in_place\":true,\"declared_pairs\":2,"
                         "\"shared_pairs\":[{\"out\":1,\"in\":0,\"op\":1,"
                         "\"bytes\":100},{\"out\":2,\"in\":1,\"op\":2,"
                         "\"bytes\":100}],\"lower_bound_unshared_bytes\":250,"
                         "\"arena_unshared_bytes\":250,"
                         "\"saved_lower_bound_bytes\":100,"
                         "\"saved_arena_bytes\":100}");
  run_free(&r);
  RUN(&r, "explain", "--align", "1", "--no-in-place", f);
  assert_contains(r.out, "lower bound: 250 bytes (alignment 1)");
  assert_contains(r.out, "in-place sharing: off (--no-in-place); 2 pairs "
                         "declared");
  run_free(&r);
}
END_TEST

START_TEST(test_in_place_render)
{
  const char *f = tmp_file("alias.csv", alias_csv);
  struct run r;
  RUN(&r, "render", "--align", "1", f);
  ck_assert_msg(r.status == 0, "%s", r.err);
  assert_contains(r.out, ">in place (output&lt;-input), 2 pairs: 1&lt;-0, "
                         "2&lt;-1</text>");
  assert_contains(r.out, "output written over its input (in place)</text>");
  assert_contains(r.out, "<title>tensor 1 written over tensor 0 in place at "
                         "operator 1 (100 bytes)</title>");
  assert_contains(r.out, "operators 1-2, live at the peak, written over "
                         "tensor 0 in place</title>");
  /* one rect per tensor still; the markers are paths */
  size_t rects = 0, marks = 0;
  for (const char *p = r.out; (p = strstr(p, "<rect class=\"t")); p++)
    rects++;
  for (const char *p = r.out; (p = strstr(p, "<path class=\"inplace\"")); p++)
    marks++;
  ck_assert_uint_eq(rects, 4);
  ck_assert_uint_eq(marks, 3); /* two pairs and the legend swatch */
  run_free(&r);
  RUN(&r, "render", "--align", "1", "--html", f);
  assert_contains(r.out, "<th class=\"n\">in-place pairs</th><td>2</td>");
  assert_contains(r.out, "<th>written over</th>");
  run_free(&r);
  RUN(&r, "render", "--align", "1", "--no-in-place", f);
  ck_assert_ptr_null(strstr(r.out, "inplace"));
  run_free(&r);
}
END_TEST

/* A shared plan written as JSON reads back with its aliases: diff and
 * render verify it as the planner did. */
START_TEST(test_in_place_plan_json_round_trip)
{
  const char *f = tmp_file("alias.csv", alias_csv);
  struct run r;
  RUN(&r, "plan", "--local", "--align", "1", "--json", f);
  ck_assert_int_eq(r.status, 0);
  const char *j = tmp_file("plan.json", r.out);
  run_free(&r);
  RUN(&r, "render", j);
  ck_assert_msg(r.status == 0, "%s", r.err);
  assert_contains(r.out, "2 pairs: 1&lt;-0, 2&lt;-1");
  run_free(&r);
  RUN(&r, "diff", j, f, "--align", "1");
  ck_assert_msg(r.status == 0, "status %d: %s%s", r.status, r.out, r.err);
  run_free(&r);
  /* without sharing the same plan is an overlap */
  RUN(&r, "render", "--no-in-place", j);
  ck_assert_int_eq(r.status, 70);
  run_free(&r);
}
END_TEST

/* ---- the reference models ------------------------------------------------- */

static const struct model {
  const char *name;
  uint64_t lb;    /* lower bound at alignment 1, bytes */
  uint64_t naive; /* sum of sizes, bytes */
  size_t n;       /* planned tensors */
} model_table[] = {
    {"hello_world_float", 128, 136, 4},
    {"micro_speech_quantized", 5960, 7928, 5},
    {"trained_lstm", 5536, 7856, 7},
    {"micro_speech_lstm", 16753, 20679, 12},
    {"dtln_noise_suppression", 1282, 1795, 19},
    {"magic_wand", 13824, 18848, 8},
    {"keyword_scrambled", 10528, 10958, 23},
    {"audio_preprocessor_int8", 2060, 12128, 25},
    {"person_detect", 55296, 241030, 32},
    {"mobilenet_v2_quantized_1x3x224x224", 2451840, 11571924, 85},
    {"face_detection_short_range", 1376256, 9898496, 91},
    {"face_detection_short_range.keep_dequant", 1376256, 10304056, 165},
};

START_TEST(test_models)
{
  const struct model *m = &model_table[_i];
  struct run r;
  RUN(&r, "plan", "--local", "--align", "1", "--json", model_path(m->name));
  ck_assert_msg(r.status == 0, "%s: status %d: %s", m->name, r.status, r.err);
  ck_assert_uint_eq(json_u64(r.out, "lower_bound_bytes"), m->lb);
  ck_assert_uint_eq(json_u64(r.out, "naive_bytes"), m->naive);
  ck_assert_uint_eq(json_u64(r.out, "alignment"), 1);
  uint64_t arena = check_json_plan(r.out, m->n);
  ck_assert_uint_ge(arena, m->lb);
  ck_assert_uint_le(arena, m->naive);
  run_free(&r);
}
END_TEST

/* The saving is measured against the naive algorithm's arena at the
 * plan's alignment, the arena `--algo naive` prints (naive_aligned_bytes).
 * No reference model at the default alignment shows a negative saving
 * (small models used to: their padding outweighed their reuse against
 * naive's plain sum of sizes), and naive's own plan shows none. */
START_TEST(test_saving_at_alignment)
{
  const struct model *m = &model_table[_i];
  struct run r;
  RUN(&r, "plan", "--local", "--json", "--algo", "naive", model_path(m->name));
  ck_assert_msg(r.status == 0, "%s: status %d: %s", m->name, r.status, r.err);
  uint64_t naive = json_u64(r.out, "arena_bytes");
  ck_assert_uint_eq(json_u64(r.out, "naive_aligned_bytes"), naive);
  run_free(&r);
  RUN(&r, "plan", "--local", "--json", model_path(m->name));
  ck_assert_msg(r.status == 0, "%s: status %d: %s", m->name, r.status, r.err);
  ck_assert_uint_eq(json_u64(r.out, "naive_aligned_bytes"), naive);
  ck_assert_uint_ge(naive, json_u64(r.out, "naive_bytes"));
  ck_assert_uint_le(json_u64(r.out, "arena_bytes"), naive);
  run_free(&r);
  RUN(&r, "plan", "--local", model_path(m->name));
  ck_assert_int_eq(r.status, 0);
  const char *s = strstr(r.out, "\nsaving:          ");
  ck_assert_ptr_nonnull(s);
  double pct = -1;
  ck_assert_int_eq(sscanf(s + 18, "%lf%%", &pct), 1);
  ck_assert_msg(pct >= 0 && pct < 100, "%s: saving %f", m->name, pct);
  run_free(&r);
}
END_TEST

/* The lines themselves, on small graphs: padding that naive's plain sum
 * of sizes ignores, pins, and no saving where nothing is reused. The
 * baseline used to be every size rounded up, the last one too, so that a
 * plan without reuse claimed a saving: 21.88% for one tensor of 100
 * bytes, 13.75% for `--algo naive` itself on small.csv. */
START_TEST(test_saving_text)
{
  struct run r;
  const char *f = tmp_file("small.csv", "id,size,first,last\n0,100,0,1\n"
                                        "1,50,1,2\n2,30,2,2\n3,20,0,2\n");
  RUN(&r, "plan", "--local", f);
  ck_assert_int_eq(r.status, 0);
  assert_contains(r.out, "arena:           212 bytes\n");
  assert_contains(r.out, "naive:           200 bytes (276 as the naive "
                         "algorithm places them at this alignment)\n");
  assert_contains(r.out, "saving:          23.19% vs naive at this "
                         "alignment\n");
  run_free(&r);
  RUN(&r, "plan", "--local", "--algo", "naive", f);
  ck_assert_int_eq(r.status, 0);
  assert_contains(r.out, "arena:           276 bytes\n");
  assert_contains(r.out, "saving:          0.00% vs naive at this "
                         "alignment\n");
  run_free(&r);
  RUN(&r, "plan", "--local", "--align", "1", f); /* no padding: as before */
  assert_contains(r.out, "naive:           200 bytes\n"
                         "saving:          15.00% vs naive\n");
  run_free(&r);
  f = tmp_file("one.csv", "id,size,first,last\n0,100,0,0\n");
  RUN(&r, "plan", "--local", f);
  ck_assert_int_eq(r.status, 0);
  assert_contains(r.out, "naive:           100 bytes\n"
                         "saving:          0.00% vs naive\n");
  run_free(&r);
  f = tmp_file("pinned.csv", "id,size,first,last,offset\n0,10,0,0,1024\n"
                             "1,10,0,0,\n");
  RUN(&r, "plan", "--local", f);
  ck_assert_int_eq(r.status, 0);
  assert_contains(r.out, "arena:           1034 bytes\n");
  assert_contains(r.out, "naive:           20 bytes (1098 as the naive "
                         "algorithm places them at this alignment)\n");
  assert_contains(r.out, "saving:          5.83% vs naive at this "
                         "alignment\n");
  run_free(&r);
}
END_TEST

/* A capacity never makes the plan larger, and a shortfall is the best
 * plan's. On TensorFlow Lite Micro's "Medium" case best's heuristics give
 * 90 bytes and the search 80, the optimum: a capacity the heuristics met
 * used to keep the search out (90 bytes), and one below the bound
 * reported the heuristics' shortfall ("does not fit by 11 bytes"). */
START_TEST(test_capacity_shortfall)
{
  const char *f = tmp_file("medium.csv", "id,size,first,last\n0,10,0,1\n"
                                         "1,20,1,2\n2,30,2,3\n3,40,3,4\n"
                                         "4,50,0,1\n");
  struct run r;
  RUN(&r, "plan", "--local", "--align", "1", "--capacity", "1000", f);
  ck_assert_int_eq(r.status, 0);
  assert_contains(r.out, "arena:           80 bytes\n");
  assert_contains(r.out, "capacity:        1000 bytes: fits (920 bytes "
                         "spare)\n");
  run_free(&r);
  RUN(&r, "plan", "--local", "--align", "1", "--capacity", "79", f);
  ck_assert_int_eq(r.status, 1);
  assert_contains(r.out, "arena:           80 bytes\n");
  assert_contains(r.out, "capacity:        79 bytes: does not fit: the best "
                         "plan found is 1 byte over (proven: no plan "
                         "fits)\n");
  assert_contains(r.err, "does not fit in 79 bytes: the plan needs 80 bytes "
                         "and no plan needs fewer than 80");
  run_free(&r);
}
END_TEST

Suite *cli_suite(void)
{
  Suite *s = suite_create("cli");
  TCase *tc = tcase_create("usage");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_no_arguments);
  tcase_add_test(tc, test_help_and_version);
  tcase_add_test(tc, test_plan_help);
  tcase_add_test(tc, test_usage_errors);
  tcase_add_test(tc, test_missing_and_unreadable);
  tcase_add_test(tc, test_overflow_is_bad_input);
  tcase_add_loop_test(tc, test_bad_data, 0,
                      (int)(sizeof bad_data / sizeof bad_data[0]));
  suite_add_tcase(s, tc);

  tc = tcase_create("output");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_text_output);
  tcase_add_test(tc, test_text_capacity_and_search);
  tcase_add_test(tc, test_bound_source_and_gap);
  tcase_add_test(tc, test_effort_option);
  tcase_add_loop_test(tc, test_json_every_algorithm, 0,
                      (int)(sizeof algos / sizeof algos[0]));
  tcase_add_test(tc, test_json_capacity);
  tcase_add_test(tc, test_stdin);
  tcase_add_test(tc, test_no_daemon_falls_back);
  tcase_add_loop_test(tc, test_models, 0,
                      (int)(sizeof model_table / sizeof model_table[0]));
  tcase_add_loop_test(tc, test_saving_at_alignment, 0,
                      (int)(sizeof model_table / sizeof model_table[0]));
  tcase_add_test(tc, test_saving_text);
  tcase_add_test(tc, test_capacity_shortfall);
  suite_add_tcase(s, tc);

  tc = tcase_create("in-place");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_in_place_plan);
  tcase_add_test(tc, test_in_place_text);
  tcase_add_test(tc, test_in_place_bad_alias);
  tcase_add_test(tc, test_in_place_explain);
  tcase_add_test(tc, test_in_place_render);
  tcase_add_test(tc, test_in_place_plan_json_round_trip);
  suite_add_tcase(s, tc);

  cli_add_output(s);
  cli_add_text(s);
  return s;
}

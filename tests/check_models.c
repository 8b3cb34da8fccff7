/*
 * check_models.c - end-to-end tests of the model subcommands of arenactl
 * (import, plan on .tflite, explain, render, diff, embed).
 *
 * Each test runs arenactl as a child process (path from ARENACTL, default
 * build/arenactl, made absolute) inside a fresh temp dir, so that file
 * names in the output are short and stable. Golden outputs for small
 * graphs live in tests/data/golden/; real models get structural checks:
 * the imported graph equals the reference CSV, the SVG holds one tensor
 * rectangle per planned tensor and is well-formed XML, explain's peak
 * equals the reference lower bound, an embedded plan reads back; the
 * in-place pairs a model declares are imported, planned, explained and
 * embedded, and --no-in-place gives what these commands gave before.
 */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_models.h"
#include "graph_csv.h"
#include "tflite.h"
#include "testutil.h"

static char *tmpdir;            /* fresh per test, see cm_tmpdir() */
static char exe[PATH_MAX];      /* absolute path of arenactl */
static char data[PATH_MAX];     /* absolute path of the test data */

const char *cm_tmpdir(void)
{
  return tmpdir;
}

void cm_setup(void)
{
  ck_assert_ptr_nonnull(realpath(tu_bin("ARENACTL"), exe));
  ck_assert_ptr_nonnull(realpath(tu_data_dir(), data));
  tmpdir = tu_mkdtemp();
  ck_assert_ptr_nonnull(tmpdir);
}

void cm_teardown(void)
{
  tu_rm_rf(tmpdir);
  free(tmpdir);
  tmpdir = NULL;
}

/* Runs arenactl with the NULL-terminated args inside tmpdir. */
void cm_run_cli(struct run *r, const char *const *args)
{
  char out_path[PATH_MAX + 16], err_path[PATH_MAX + 16];
  const char *argv[32];
  int n = 0;
  argv[n++] = exe;
  while (args[n - 1] && n < 31) {
    argv[n] = args[n - 1];
    n++;
  }
  argv[n] = NULL;
  snprintf(out_path, sizeof out_path, "%s/.stdout", tmpdir);
  snprintf(err_path, sizeof err_path, "%s/.stderr", tmpdir);
  r->status = tu_run(argv, tmpdir, NULL, out_path, err_path);
  ck_assert_msg(r->status != 127, "cannot run %s (set ARENACTL)", argv[0]);
  ck_assert_msg(r->status < 128, "arenactl died of signal %d", r->status - 128);
  r->out = tu_read_file(out_path, &r->out_len);
  r->err = tu_read_file(err_path, NULL);
  ck_assert_ptr_nonnull(r->out);
  ck_assert_ptr_nonnull(r->err);
}

void cm_run_free(struct run *r)
{
  free(r->out);
  free(r->err);
}

void cm_assert_contains(const char *hay, const char *needle)
{
  ck_assert_msg(strstr(hay, needle) != NULL, "'%s' not found in:\n%s",
                needle, hay);
}

/* Copies a test data file into tmpdir under its base name. */
static void copy_in(const char *rel)
{
  char src[PATH_MAX + 64], dst[PATH_MAX + 64];
  size_t len;
  snprintf(src, sizeof src, "%s/%s", data, rel);
  const char *base = strrchr(rel, '/');
  snprintf(dst, sizeof dst, "%s/%s", tmpdir, base ? base + 1 : rel);
  char *b = tu_read_file(src, &len);
  ck_assert_msg(b != NULL, "cannot read %s", src);
  FILE *f = fopen(dst, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
  free(b);
}

static char *read_tmp(const char *name, size_t *len)
{
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/%s", tmpdir, name);
  return tu_read_file(p, len);
}

static void write_tmp(const char *name, const void *b, size_t len)
{
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/%s", tmpdir, name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
}

/* Checks stdout of r against a golden file byte for byte. */
static void assert_golden(const struct run *r, const char *golden)
{
  char p[PATH_MAX + 64];
  size_t len;
  snprintf(p, sizeof p, "%s/golden/%s", data, golden);
  char *want = tu_read_file(p, &len);
  ck_assert_msg(want != NULL, "cannot read %s", p);
  ck_assert_msg(len == r->out_len && memcmp(want, r->out, len) == 0,
                "output differs from %s:\n%s", golden, r->out);
  free(want);
}

static const char *const models[] = {
    "hello_world_float",   "micro_speech_quantized",
    "trained_lstm",        "micro_speech_lstm",
    "dtln_noise_suppression", "magic_wand",
    "keyword_scrambled",   "audio_preprocessor_int8",
    "person_detect",       "mobilenet_v2_quantized_1x3x224x224",
    "face_detection_short_range",
};
#define N_MODELS (sizeof models / sizeof models[0])

/* Reference lower bounds at alignment 1 (the data README). */
static const unsigned long long ref_lb[N_MODELS] = {
    128, 5960, 5536, 16753, 1282, 13824, 10528, 2060, 55296, 2451840, 1376256,
};
/* The lower bound at alignment 1 with the in-place pairs the reader
 * declares: face_detection_short_range's ADD and RELU outputs written
 * over their inputs lower it; elsewhere the peak is not where pairs are. */
static const unsigned long long shared_lb[N_MODELS] = {
    128, 5960, 5536, 16753, 1282, 13824, 10528, 2060, 55296, 2451840, 1310720,
};

/* Parses CSV text; the caller cleans up. */
static void parse_csv(const char *text, size_t len, struct planner_csv *c)
{
  char err[ARENA_ERR_LEN];
  planner_csv_init(c);
  ck_assert_msg(planner_csv_parse(text, len, c, err) == 0, "%s", err);
}

/* ---- import and plan --------------------------------------------------------- */

START_TEST(test_import_matches_reference)
{
  char model[256], csv[256], ref[PATH_MAX + 300];
  struct run r;
  struct planner_csv got, want;
  snprintf(model, sizeof model, "models/%s.tflite", models[_i]);
  copy_in(model);
  snprintf(model, sizeof model, "%s.tflite", models[_i]);
  RUN(&r, "import", model, "-o", "out.csv");
  ck_assert_msg(r.status == 0, "%s", r.err);
  size_t len, rlen;
  char *text = read_tmp("out.csv", &len);
  ck_assert_ptr_nonnull(text);
  cm_assert_contains(text, "# sha256=");
  parse_csv(text, len, &got);
  snprintf(csv, sizeof csv, "%s.csv", models[_i]);
  snprintf(ref, sizeof ref, "%s/models/%s", data, csv);
  char *rtext = tu_read_file(ref, &rlen);
  ck_assert_ptr_nonnull(rtext);
  parse_csv(rtext, rlen, &want);
  ck_assert_uint_eq(got.n_tensors, want.n_tensors);
  for (size_t i = 0; i < got.n_tensors; i++) {
    ck_assert_uint_eq(got.tensors[i].id, want.tensors[i].id);
    ck_assert_uint_eq(got.tensors[i].size, want.tensors[i].size);
    ck_assert_int_eq(got.tensors[i].first, want.tensors[i].first);
    ck_assert_int_eq(got.tensors[i].last, want.tensors[i].last);
  }
  planner_csv_cleanup(&got);
  planner_csv_cleanup(&want);
  free(text);
  free(rtext);
  cm_run_free(&r);
}
END_TEST

START_TEST(test_import_errors)
{
  struct run r;
  copy_in("models/magic_wand.tflite");
  RUN(&r, "import");
  ck_assert_int_eq(r.status, 64);
  cm_run_free(&r);
  RUN(&r, "import", "--bogus", "magic_wand.tflite");
  ck_assert_int_eq(r.status, 64);
  cm_run_free(&r);
  RUN(&r, "import", "missing.tflite");
  ck_assert_int_eq(r.status, 66);
  cm_assert_contains(r.err, "arenactl: missing.tflite: cannot open");
  cm_run_free(&r);
  /* A truncated model: a clear message and exit 65. */
  size_t len;
  char *b = read_tmp("magic_wand.tflite", &len);
  write_tmp("cut.tflite", b, len / 3);
  write_tmp("empty.tflite", b, 0);
  b[5] = 'X';
  write_tmp("magic.tflite", b, len);
  free(b);
  RUN(&r, "import", "cut.tflite");
  ck_assert_int_eq(r.status, 65);
  cm_assert_contains(r.err, "arenactl: cut.tflite: ");
  cm_run_free(&r);
  RUN(&r, "plan", "cut.tflite");
  ck_assert_int_eq(r.status, 65);
  cm_run_free(&r);
  RUN(&r, "import", "empty.tflite");
  ck_assert_int_eq(r.status, 65);
  cm_assert_contains(r.err, "not a TFLite model");
  cm_run_free(&r);
  RUN(&r, "import", "magic.tflite");
  ck_assert_int_eq(r.status, 65);
  cm_assert_contains(r.err, "not a TFLite model");
  cm_run_free(&r);
  RUN(&r, "import", "--shape", "2x3x3", "magic_wand.tflite");
  ck_assert_int_eq(r.status, 65);
  cm_run_free(&r);
}
END_TEST

START_TEST(test_import_keep_dequant_and_shape)
{
  struct run r;
  struct planner_csv c;
  copy_in("models/face_detection_short_range.tflite");
  copy_in("models/hello_world_float.tflite");
  RUN(&r, "import", "--keep-dequant", "face_detection_short_range.tflite");
  ck_assert_int_eq(r.status, 0);
  parse_csv(r.out, r.out_len, &c);
  ck_assert_uint_eq(c.n_tensors, 165);
  planner_csv_cleanup(&c);
  cm_run_free(&r);
  /* hello_world has a dynamic batch: --shape 4x1 scales it. */
  RUN(&r, "import", "--shape", "4x1", "hello_world_float.tflite");
  ck_assert_int_eq(r.status, 0);
  cm_assert_contains(r.out, "\n0,16,0,0\n");
  cm_assert_contains(r.out, "\n7,256,0,1\n");
  cm_run_free(&r);
  RUN(&r, "import", "--shape", "4x2", "hello_world_float.tflite");
  ck_assert_int_eq(r.status, 65);
  cm_assert_contains(r.err, "only a dynamic batch dimension");
  cm_run_free(&r);
}
END_TEST

/* import declares in-place pairs in an alias column; --no-in-place
 * writes the graph without it, as before. */
START_TEST(test_import_in_place)
{
  struct run r;
  struct planner_csv c;
  copy_in("models/face_detection_short_range.tflite");
  copy_in("models/magic_wand.tflite");
  RUN(&r, "import", "face_detection_short_range.tflite");
  ck_assert_msg(r.status == 0, "%s", r.err);
  cm_assert_contains(r.out, "# in-place pairs: 37 (");
  cm_assert_contains(r.out, "\nid,size,first,last,alias\n0,196608,0,2,\n");
  cm_assert_contains(r.out, "\n4,393216,3,10,3\n"); /* RELU over its input */
  parse_csv(r.out, r.out_len, &c);
  size_t pairs = 0;
  for (size_t i = 0; i < c.n_tensors; i++)
    pairs += c.tensors[i].has_alias;
  ck_assert_uint_eq(pairs, 37);
  planner_csv_cleanup(&c);
  cm_run_free(&r);
  /* the CSV plans to what the model plans to */
  RUN(&r, "import", "face_detection_short_range.tflite", "-o", "face.csv");
  ck_assert_int_eq(r.status, 0);
  cm_run_free(&r);
  RUN(&r, "plan", "--local", "--align", "1", "face.csv");
  ck_assert_msg(r.status == 0, "%s", r.err);
  cm_assert_contains(r.out, "arena:           1310720 bytes\n"
                            "lower bound:     1310720 bytes (load bound)\n"
                            "unshared bound:  1376256 bytes");
  cm_assert_contains(r.out, "in-place pairs:  37 of 37 declared");
  cm_run_free(&r);
  RUN(&r, "import", "--no-in-place", "face_detection_short_range.tflite");
  ck_assert_int_eq(r.status, 0);
  cm_assert_contains(r.out, "\nid,size,first,last\n0,196608,0,2\n");
  ck_assert_ptr_null(strstr(r.out, "alias"));
  ck_assert_ptr_null(strstr(r.out, "in-place"));
  cm_run_free(&r);
  /* a model without pairs imports exactly as it always did */
  RUN(&r, "import", "magic_wand.tflite");
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_null(strstr(r.out, "alias"));
  cm_run_free(&r);
  RUN(&r, "import", "--help");
  cm_assert_contains(r.out, "--no-in-place");
  cm_run_free(&r);
}
END_TEST

/* plan and explain on a model: the bound with and without sharing, and
 * the operator type of each pair. */
START_TEST(test_plan_explain_tflite_in_place)
{
  struct run r;
  copy_in("models/face_detection_short_range.tflite");
  RUN(&r, "plan", "--local", "--align", "1", "--json",
      "face_detection_short_range.tflite");
  ck_assert_msg(r.status == 0, "%s", r.err);
  cm_assert_contains(r.out, "\"arena_bytes\":1310720,"
                            "\"lower_bound_bytes\":1310720,");
  cm_assert_contains(r.out, "\"lower_bound_unshared_bytes\":1376256,"
                            "\"shared_pairs\":[{\"out\":4,\"in\":3,\"op\":3,"
                            "\"bytes\":393216},");
  cm_run_free(&r);
  RUN(&r, "plan", "--local", "--align", "1", "--json", "--no-in-place",
      "face_detection_short_range.tflite");
  cm_assert_contains(r.out, "\"arena_bytes\":1376256,"
                            "\"lower_bound_bytes\":1376256,");
  cm_assert_contains(r.out, "\"shared_pairs\":[]");
  cm_run_free(&r);
  RUN(&r, "explain", "--align", "1", "face_detection_short_range.tflite");
  ck_assert_msg(r.status == 0, "%s", r.err);
  cm_assert_contains(r.out, "model:       in-place pairs: 37");
  cm_assert_contains(r.out, "in-place sharing: 37 of 37 declared pairs");
  cm_assert_contains(r.out, "      output      input   operator        bytes"
                            "  type\n"
                            "           4          3          3       393216"
                            "  RELU\n"
                            "          11          4         10       393216"
                            "  ADD\n");
  cm_assert_contains(r.out, "         170        160        158         2048"
                            "  RESHAPE\n");
  cm_assert_contains(r.out, "saved by sharing: lower bound 1376256 -> 1310720 "
                            "(-65536 bytes), arena (best) 1376256 -> 1310720 "
                            "(-65536 bytes)");
  cm_run_free(&r);
  RUN(&r, "explain", "--json", "face_detection_short_range.tflite");
  cm_assert_contains(r.out, "{\"out\":4,\"in\":3,\"op\":3,\"op_type\":\"RELU\","
                            "\"bytes\":393216}");
  cm_run_free(&r);
  /* --no-in-place: the model declares nothing, explain is as before */
  RUN(&r, "explain", "--align", "1", "--no-in-place",
      "face_detection_short_range.tflite");
  ck_assert_ptr_null(strstr(r.out, "in-place"));
  cm_assert_contains(r.out, "lower bound: 1376256 bytes (alignment 1)");
  cm_run_free(&r);
}
END_TEST

/* embed with sharing gives a pair one offset, and the plan is smaller
 * than TFLite Micro's own; --no-in-place embeds what it always did. */
START_TEST(test_embed_in_place)
{
  char err[ARENA_ERR_LEN];
  struct run r;
  copy_in("models/face_detection_short_range.tflite");
  RUN(&r, "embed", "--in-place", "face_detection_short_range.tflite", "-o",
      "shared.tflite");
  ck_assert_msg(r.status == 0, "%s", r.err);
  cm_assert_contains(r.out, "arena 1310720 bytes, lower bound 1310720 bytes");
  cm_assert_contains(r.out, "TFLite Micro's own planner needs 1376256 bytes");
  cm_assert_contains(r.out, "in-place: 37 of 37 declared pairs share an "
                            "offset (an output written over the input its "
                            "operator reads last), saving 65536 bytes\n");
  ck_assert_ptr_null(strstr(r.err, "warning"));
  cm_run_free(&r);
  size_t olen, n;
  char *out = read_tmp("shared.tflite", &olen);
  int32_t *offs = NULL;
  ck_assert_int_eq(planner_tflite_offline_plan(out, olen, &offs, &n, err), 0);
  ck_assert_int_eq(offs[4], offs[3]);  /* RELU over its input */
  ck_assert_int_eq(offs[11], offs[4]); /* ADD over the RELU's output */
  ck_assert_int_ge(offs[4], 0);
  free(offs);
  free(out);
  RUN(&r, "embed", "--no-in-place", "face_detection_short_range.tflite", "-o",
      "own.tflite");
  ck_assert_msg(r.status == 0, "%s", r.err);
  cm_assert_contains(r.out, "arena 1376256 bytes, lower bound 1376256 bytes");
  ck_assert_ptr_null(strstr(r.out, "in-place"));
  cm_assert_contains(r.err, "warning: the plan needs 1376256 bytes");
  cm_run_free(&r);
  out = read_tmp("own.tflite", &olen);
  ck_assert_int_eq(planner_tflite_offline_plan(out, olen, &offs, &n, err), 0);
  ck_assert_int_ne(offs[4], offs[3]);
  free(offs);
  free(out);
  RUN(&r, "embed", "--help");
  cm_assert_contains(r.out, "--no-in-place");
  cm_run_free(&r);
}
END_TEST

/* A pair that saves no bytes is not shared in an offline plan: the file
 * is the one --no-in-place writes. */
START_TEST(test_embed_in_place_no_saving)
{
  struct run r;
  copy_in("models/person_detect.tflite");
  RUN(&r, "embed", "person_detect.tflite", "-o", "a.tflite");
  ck_assert_msg(r.status == 0, "%s", r.err);
  cm_assert_contains(r.out, "in-place: 1 pair declared, none shared: "
                            "sharing saves no bytes in this model\n");
  cm_run_free(&r);
  RUN(&r, "embed", "--no-in-place", "person_detect.tflite", "-o", "b.tflite");
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_ptr_null(strstr(r.out, "in-place"));
  cm_run_free(&r);
  size_t la, lb;
  char *a = read_tmp("a.tflite", &la), *b = read_tmp("b.tflite", &lb);
  ck_assert_uint_eq(la, lb);
  ck_assert_int_eq(memcmp(a, b, la), 0);
  free(a);
  free(b);
}
END_TEST

START_TEST(test_plan_tflite)
{
  struct run r;
  copy_in("models/person_detect.tflite");
  RUN(&r, "plan", "--align", "1", "person_detect.tflite");
  ck_assert_msg(r.status == 0, "%s", r.err);
  cm_assert_contains(r.out, "lower bound:     55296 bytes");
  cm_assert_contains(r.out, "arena:           55296 bytes");
  cm_run_free(&r);
}
END_TEST

/* Asserts that the tensors of `plan --json` output equal the graph c
 * (same order, ids, sizes and lifetimes). */
static void assert_plan_tensors(const char *json, const struct planner_csv *c)
{
  const char *p = strstr(json, "\"tensors\":[");
  ck_assert_ptr_nonnull(p);
  size_t n = 0;
  while ((p = strstr(p, "{\"id\":")) != NULL) {
    unsigned id;
    unsigned long long size;
    long long first, last;
    ck_assert_int_eq(sscanf(p, "{\"id\":%u,\"size\":%llu,\"first\":%lld,"
                                "\"last\":%lld",
                            &id, &size, &first, &last),
                     4);
    ck_assert_uint_lt(n, c->n_tensors);
    const struct planner_tensor *t = &c->tensors[n++];
    ck_assert_uint_eq(id, t->id);
    ck_assert_uint_eq(size, t->size);
    ck_assert_int_eq(first, t->first);
    ck_assert_int_eq(last, t->last);
    p++;
  }
  ck_assert_uint_eq(n, c->n_tensors);
}

/* plan --shape resizes a .tflite exactly as import --shape does, whether
 * the shape is written in full or as the batch alone. */
START_TEST(test_plan_shape_resizes)
{
  static const char *const shapes[] = {"4x1", "4", "1x1"};
  struct run r;
  struct planner_csv c, base;
  copy_in("models/hello_world_float.tflite");
  RUN(&r, "import", "hello_world_float.tflite");
  ck_assert_int_eq(r.status, 0);
  parse_csv(r.out, r.out_len, &base);
  cm_run_free(&r);
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    RUN(&r, "import", "--shape", shapes[k], "hello_world_float.tflite");
    ck_assert_msg(r.status == 0, "%s", r.err);
    parse_csv(r.out, r.out_len, &c);
    cm_run_free(&r);
    RUN(&r, "plan", "--local", "--json", "--align", "1", "--shape",
        shapes[k], "hello_world_float.tflite");
    ck_assert_msg(r.status == 0, "%s", r.err);
    assert_plan_tensors(r.out, &c);
    /* batch 4 quadruples every tensor; batch 1 is the model's own */
    for (size_t i = 0; i < c.n_tensors; i++)
      ck_assert_uint_eq(c.tensors[i].size,
                        base.tensors[i].size * (k < 2 ? 4 : 1));
    cm_run_free(&r);
    planner_csv_cleanup(&c);
  }
  planner_csv_cleanup(&base);
}
END_TEST

/* A --shape that cannot apply to the model is refused, by plan (with or
 * without arenad), import and explain alike, with exit 65; text that is
 * not a shape at all is a usage error (64). */
START_TEST(test_plan_shape_refused)
{
  static const struct {
    const char *model, *shape, *msg;
  } bad[] = {
      {"hello_world_float", "4x2", "dimension 1 of input 0 is fixed at 1"},
      {"hello_world_float", "1x1x1", "gives 3 dimensions for input 0, which has 2"},
      {"hello_world_float", "0x1", "is 0; every dimension must be at least 1"},
      {"hello_world_float", "0", "is 0; every dimension must be at least 1"},
      {"hello_world_float", "-4x1", "a dimension is negative"},
      {"hello_world_float", "2147483648x1", "above 2147483647"},
      {"hello_world_float", "99999999999999999999x1", "a dimension is too large"},
      {"hello_world_float", "4x1,4x1", "gives 2 inputs, the model has 1"},
      {"person_detect", "2x96x96x1", "the model's shapes are static (batch 1)"},
      {"person_detect", "2", "the model's shapes are static (batch 1)"},
      {"person_detect", "1x96x96", "gives 3 dimensions for input 88"},
  };
  static const char *const cmds[][3] = {
      {"plan", "--local", NULL},
      {"plan", "--no-fallback", "--timeout-ms=2000"},
      {"import", NULL, NULL},
      {"explain", NULL, NULL},
  };
  struct run r;
  char file[64];
  copy_in("models/hello_world_float.tflite");
  copy_in("models/person_detect.tflite");
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
    for (size_t m = 0; m < sizeof cmds / sizeof cmds[0]; m++) {
      snprintf(file, sizeof file, "%s.tflite", bad[k].model);
      /* The daemon is never reached: the shape is refused first. */
      if (cmds[m][1] && cmds[m][2])
        RUN(&r, cmds[m][0], cmds[m][1], cmds[m][2], "-s", "no.sock",
            "--shape", bad[k].shape, file);
      else if (cmds[m][1])
        RUN(&r, cmds[m][0], cmds[m][1], "--shape", bad[k].shape, file);
      else
        RUN(&r, cmds[m][0], "--shape", bad[k].shape, file);
      ck_assert_msg(r.status == 65, "%s --shape %s %s: status %d, %s",
                    cmds[m][0], bad[k].shape, file, r.status, r.err);
      cm_assert_contains(r.err, bad[k].msg);
      ck_assert_uint_eq(r.out_len, 0);
      cm_run_free(&r);
    }
  RUN(&r, "plan", "--local", "--shape", "4y1", "hello_world_float.tflite");
  ck_assert_int_eq(r.status, 64);
  cm_assert_contains(r.err, "expected dimensions like 1x96x96x1");
  cm_run_free(&r);
}
END_TEST

/* ---- explain, render, diff: goldens ---------------------------------------- */

START_TEST(test_explain_golden)
{
  struct run r;
  copy_in("golden/small_a.csv");
  RUN(&r, "explain", "--align", "1", "small_a.csv");
  ck_assert_int_eq(r.status, 0);
  assert_golden(&r, "explain_small.txt");
  cm_run_free(&r);
  RUN(&r, "explain", "--align", "1", "--json", "small_a.csv");
  ck_assert_int_eq(r.status, 0);
  assert_golden(&r, "explain_small.json");
  cm_run_free(&r);
}
END_TEST

START_TEST(test_render_golden)
{
  struct run r;
  copy_in("golden/small_a.csv");
  RUN(&r, "render", "--align", "1", "small_a.csv");
  ck_assert_int_eq(r.status, 0);
  assert_golden(&r, "render_small.svg");
  cm_run_free(&r);
  RUN(&r, "render", "--html", "--align", "1", "small_a.csv");
  ck_assert_int_eq(r.status, 0);
  assert_golden(&r, "render_small.html");
  cm_run_free(&r);
}
END_TEST

START_TEST(test_diff_golden)
{
  struct run r;
  copy_in("golden/small_a.csv");
  copy_in("golden/small_b.csv");
  RUN(&r, "diff", "--align", "1", "small_a.csv", "small_b.csv");
  ck_assert_int_eq(r.status, 1); /* differences, as diff(1) */
  assert_golden(&r, "diff_small.txt");
  cm_run_free(&r);
  RUN(&r, "diff", "--json", "--align", "1", "small_a.csv", "small_b.csv");
  ck_assert_int_eq(r.status, 1);
  assert_golden(&r, "diff_small.json");
  cm_run_free(&r);
  RUN(&r, "diff", "small_a.csv", "small_a.csv");
  ck_assert_int_eq(r.status, 0);
  cm_assert_contains(r.out, "0 added, 0 removed, 0 resized, 0 lifetime changed, "
                         "0 moved, 4 unchanged");
  cm_run_free(&r);
  RUN(&r, "diff", "small_a.csv");
  ck_assert_int_eq(r.status, 64);
  cm_run_free(&r);
}
END_TEST

START_TEST(test_diff_plan_json)
{
  /* A plan from `plan --json` compared with the graph it came from: same
   * offsets when the same algorithm and alignment plan the graph. */
  struct run r;
  copy_in("golden/small_a.csv");
  RUN(&r, "plan", "--json", "--algo", "naive", "small_a.csv");
  ck_assert_int_eq(r.status, 0);
  write_tmp("naive.json", r.out, r.out_len);
  cm_run_free(&r);
  RUN(&r, "diff", "--algo", "naive", "naive.json", "small_a.csv");
  ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
  cm_run_free(&r);
  RUN(&r, "diff", "naive.json", "small_a.csv");
  ck_assert_int_eq(r.status, 1);
  cm_assert_contains(r.out, "A: naive.json (plan, 4 tensors)");
  cm_assert_contains(r.out, "moved:");
  cm_run_free(&r);
  /* A broken plan file is refused with its position. */
  const char *bad = "{\"tensors\":[{\"id\":1}]}";
  write_tmp("bad.json", bad, strlen(bad));
  RUN(&r, "diff", "bad.json", "small_a.csv");
  ck_assert_int_eq(r.status, 65);
  cm_assert_contains(r.err, "plan JSON");
  cm_run_free(&r);
  /* A plan whose offsets overlap fails verification, clearly. */
  const char *overlap =
      "{\"alignment\":1,\"tensors\":[{\"id\":0,\"size\":8,\"first\":0,"
      "\"last\":1,\"offset\":0},{\"id\":1,\"size\":8,\"first\":1,"
      "\"last\":2,\"offset\":4}]}";
  write_tmp("overlap.json", overlap, strlen(overlap));
  RUN(&r, "diff", "overlap.json", "small_a.csv");
  ck_assert_int_ge(r.status, 65);
  cm_assert_contains(r.err, "overlap.json");
  cm_run_free(&r);
}
END_TEST

/* ---- real models: structure ------------------------------------------------ */

/* Minimal XML well-formedness: tags balance and nest. Used when xmllint
 * is not installed; xmllint runs as well when it is. */
void cm_assert_well_formed(const char *s)
{
  const char *stack[64];
  size_t lens[64];
  int depth = 0;
  for (const char *p = strchr(s, '<'); p; p = strchr(p + 1, '<')) {
    if (p[1] == '?' || p[1] == '!')
      continue;
    const char *e = strchr(p, '>');
    ck_assert_ptr_nonnull(e);
    if (p[1] == '/') {
      ck_assert_int_gt(depth, 0);
      depth--;
      ck_assert_msg(strncmp(p + 2, stack[depth], lens[depth]) == 0,
                    "mismatched close tag at: %.40s", p);
    } else if (e[-1] != '/') {
      size_t n = strcspn(p + 1, " >/\n");
      ck_assert_int_lt(depth, 64);
      stack[depth] = p + 1;
      lens[depth] = n;
      depth++;
    }
  }
  ck_assert_int_eq(depth, 0);
}

size_t cm_count(const char *s, const char *needle)
{
  size_t n = 0;
  for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

START_TEST(test_render_real_models)
{
  char model[256];
  struct run r;
  struct planner_csv c;
  snprintf(model, sizeof model, "models/%s.tflite", models[_i]);
  copy_in(model);
  snprintf(model, sizeof model, "%s.tflite", models[_i]);
  RUN(&r, "import", model);
  ck_assert_int_eq(r.status, 0);
  parse_csv(r.out, r.out_len, &c);
  size_t planned = c.n_tensors;
  planner_csv_cleanup(&c);
  cm_run_free(&r);
  RUN(&r, "render", model, "-o", "plan.svg");
  ck_assert_msg(r.status == 0, "%s", r.err);
  cm_run_free(&r);
  size_t len;
  char *svg = read_tmp("plan.svg", &len);
  ck_assert_ptr_nonnull(svg);
  ck_assert_uint_eq(cm_count(svg, "<rect "), planned);
  ck_assert_uint_eq(cm_count(svg, "<rect class=\"t"), planned);
  ck_assert_uint_ge(cm_count(svg, "<rect class=\"t peak\""), 1);
  cm_assert_contains(svg, "class=\"lb\"");
  cm_assert_contains(svg, "class=\"arena\"");
  cm_assert_well_formed(svg);
  free(svg);
  if (system("command -v xmllint >/dev/null 2>&1") == 0) {
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "xmllint --noout '%s/plan.svg'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
  }
}
END_TEST

START_TEST(test_explain_real_models)
{
  char model[256], want[64];
  struct run r;
  snprintf(model, sizeof model, "models/%s.tflite", models[_i]);
  copy_in(model);
  snprintf(model, sizeof model, "%s.tflite", models[_i]);
  RUN(&r, "explain", "--align", "1", "--json", model);
  ck_assert_msg(r.status == 0, "%s", r.err);
  snprintf(want, sizeof want, "\"lower_bound_bytes\":%llu,", shared_lb[_i]);
  ck_assert_msg(strstr(r.out, want), "%s: no %s", models[_i], want);
  snprintf(want, sizeof want, "\"peak_bytes\":%llu,", ref_lb[_i]);
  ck_assert_msg(strstr(r.out, want), "%s: no %s", models[_i], want);
  if (strstr(r.out, "\"declared_pairs\":")) {
    snprintf(want, sizeof want, "\"lower_bound_unshared_bytes\":%llu,",
             ref_lb[_i]);
    ck_assert_msg(strstr(r.out, want), "%s: no %s", models[_i], want);
  }
  cm_run_free(&r);
  /* without sharing, the bound is the peak of live bytes again */
  RUN(&r, "explain", "--align", "1", "--json", "--no-in-place", model);
  ck_assert_msg(r.status == 0, "%s", r.err);
  snprintf(want, sizeof want, "\"lower_bound_bytes\":%llu,", ref_lb[_i]);
  ck_assert_msg(strstr(r.out, want), "%s: no %s", models[_i], want);
  ck_assert_ptr_null(strstr(r.out, "\"declared_pairs\":"));
  cm_run_free(&r);
}
END_TEST

START_TEST(test_render_many_operators)
{
  /* 350 operators, 700 tensors: the picture stays a sane size. */
  char *csv = malloc(700 * 48 + 32);
  ck_assert_ptr_nonnull(csv);
  size_t n = (size_t)sprintf(csv, "id,size,first,last\n");
  for (int i = 0; i < 700; i++)
    n += (size_t)sprintf(csv + n, "%d,%d,%d,%d\n", i, 64 + (i * 37) % 4000,
                         i / 2, i / 2 + (i % 3));
  write_tmp("big.csv", csv, n);
  free(csv);
  struct run r;
  RUN(&r, "render", "--algo", "greedy-size", "big.csv", "-o", "big.svg");
  ck_assert_msg(r.status == 0, "%s", r.err);
  cm_run_free(&r);
  size_t len;
  char *svg = read_tmp("big.svg", &len);
  ck_assert_uint_eq(cm_count(svg, "<rect class=\"t"), 700);
  int w = 0;
  ck_assert_int_eq(sscanf(strstr(svg, "<svg "), "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\"", &w), 1);
  ck_assert_int_ge(w, 350 * 3);
  ck_assert_int_le(w, 2000);
  cm_assert_well_formed(svg);
  free(svg);
}
END_TEST

/* ---- embed ----------------------------------------------------------------------- */

START_TEST(test_embed_golden)
{
  /* hello_world_float at alignment 16 with tflm-greedy: tensors 0 and 8
   * at 0, 7 and 9 at 64; the 6 constants -1. */
  static const int32_t want[10] = {0, -1, -1, -1, -1, -1, -1, 64, 0, 64};
  struct run r;
  char err[ARENA_ERR_LEN];
  copy_in("models/hello_world_float.tflite");
  RUN(&r, "embed", "--algo", "tflm-greedy", "hello_world_float.tflite", "-o",
      "out.tflite");
  ck_assert_msg(r.status == 0, "%s", r.err);
  cm_assert_contains(r.out, "embedded: 4 of 10 tensors");
  /* tflm-greedy is TFLite Micro's own planner: embed says it saves
   * nothing. */
  cm_assert_contains(r.out, "arena 128 bytes");
  cm_assert_contains(r.out, "tflm:     TFLite Micro's own planner needs 128 "
                         "bytes");
  cm_assert_contains(r.err, "warning: the plan needs 128 bytes, no fewer than "
                         "TFLite Micro's own planner (128 bytes)");
  cm_run_free(&r);
  /* On audio_preprocessor_int8 arenad's plan is smaller: no warning, and
   * the arena is counted as TFLM counts it (sizes rounded up to 16; the
   * model has 3- and 1-byte tensors). */
  copy_in("models/audio_preprocessor_int8.tflite");
  RUN(&r, "embed", "audio_preprocessor_int8.tflite", "-o", "a.tflite");
  ck_assert_msg(r.status == 0, "%s", r.err);
  cm_assert_contains(r.out, "arena 2096 bytes, lower bound 2096 bytes");
  cm_assert_contains(r.out, "own planner needs 3040 bytes");
  ck_assert_ptr_null(strstr(r.err, "warning"));
  cm_run_free(&r);
  /* Kernel scratch buffers: keyword_scrambled's SVDFs request 14. */
  copy_in("models/keyword_scrambled.tflite");
  RUN(&r, "embed", "keyword_scrambled.tflite", "-o", "k.tflite");
  ck_assert_msg(r.status == 0, "%s", r.err);
  cm_assert_contains(r.out, "scratch:  14 kernel scratch buffers (2816 bytes)");
  cm_run_free(&r);
  size_t len, olen, n;
  char *in = read_tmp("hello_world_float.tflite", &len);
  char *out = read_tmp("out.tflite", &olen);
  ck_assert_ptr_nonnull(out);
  ck_assert_uint_gt(olen, len);
  ck_assert_int_eq(memcmp(out + 8 + (olen - len), in + 8, len - 8), 0);
  int32_t *offs = NULL;
  ck_assert_int_eq(planner_tflite_offline_plan(out, olen, &offs, &n, err), 0);
  ck_assert_uint_eq(n, 10);
  ck_assert_int_eq(memcmp(offs, want, sizeof want), 0);
  free(offs);
  free(in);
  free(out);
  /* The embedded model imports to the same graph and says it has a plan. */
  RUN(&r, "import", "out.tflite");
  ck_assert_int_eq(r.status, 0);
  cm_assert_contains(r.out, "carries an OfflineMemoryAllocation plan");
  cm_assert_contains(r.out, "id,size,first,last\n0,4,0,0\n7,64,0,1\n8,64,1,2\n"
                         "9,4,2,2\n");
  cm_run_free(&r);
  /* Embedding into a non-model, or without -o, fails cleanly. */
  copy_in("golden/small_a.csv");
  RUN(&r, "embed", "small_a.csv", "-o", "x.tflite");
  ck_assert_int_eq(r.status, 65);
  cm_run_free(&r);
  RUN(&r, "embed", "hello_world_float.tflite");
  ck_assert_int_eq(r.status, 64);
  cm_run_free(&r);
}
END_TEST

/* Whether a and b are a declared in-place pair the planner allows. */
static int in_place_pair(const struct planner_tensor *a,
                         const struct planner_tensor *b,
                         const struct planner_options *o)
{
  if (a->has_alias && a->alias == b->id)
    return planner_alias_check(a, b, o) == NULL;
  if (b->has_alias && b->alias == a->id)
    return planner_alias_check(b, a, o) == NULL;
  return 0;
}

START_TEST(test_embed_real_models)
{
  char model[256], err[ARENA_ERR_LEN];
  struct run r;
  snprintf(model, sizeof model, "models/%s.tflite", models[_i]);
  copy_in(model);
  snprintf(model, sizeof model, "%s.tflite", models[_i]);
  RUN(&r, "embed", model, "-o", "out.tflite");
  ck_assert_msg(r.status == 0, "%s", r.err);
  cm_run_free(&r);
  size_t olen, n;
  char *out = read_tmp("out.tflite", &olen);
  int32_t *offs = NULL;
  struct planner_tflite_model m;
  struct planner_tflite_options keep = {.keep_dequant = 1,
                                       .skip_variable = 1}; /* as embed reads */
  planner_tflite_init(&m);
  ck_assert_int_eq(planner_tflite_read(out, olen, &keep, &m, err), 0);
  ck_assert_int_eq(planner_tflite_offline_plan(out, olen, &offs, &n, err), 0);
  ck_assert_uint_eq(n, m.n_tensors_all);
  /* Every planned tensor has an offset, 16-byte aligned, and no two
   * planned tensors alive at once overlap, but for a declared in-place
   * pair that the planner's rule allows at one offset. */
  struct planner_options po;
  planner_options_init(&po);
  po.alignment = 16;
  for (size_t i = 0; i < m.n_planned; i++) {
    const struct planner_tensor *a = &m.tensors[i];
    int32_t oa = offs[a->id];
    ck_assert_int_ge(oa, 0);
    ck_assert_int_eq(oa % 16, 0);
    for (size_t j = i + 1; j < m.n_planned; j++) {
      const struct planner_tensor *b = &m.tensors[j];
      int32_t ob = offs[b->id];
      if (a->last < b->first || b->last < a->first || !a->size || !b->size)
        continue;
      if (oa == ob && in_place_pair(a, b, &po))
        continue;
      ck_assert_msg((uint64_t)oa + a->size <= (uint64_t)ob ||
                        (uint64_t)ob + b->size <= (uint64_t)oa,
                    "tensors %u and %u overlap", (unsigned)a->id,
                    (unsigned)b->id);
    }
  }
  free(offs);
  free(out);
  planner_tflite_cleanup(&m);
}
END_TEST

Suite *models_suite(void)
{
  Suite *s = suite_create("models");
  TCase *tc = tcase_create("import");
  tcase_add_checked_fixture(tc, cm_setup, cm_teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_import_matches_reference, 0, (int)N_MODELS);
  tcase_add_test(tc, test_import_errors);
  tcase_add_test(tc, test_import_keep_dequant_and_shape);
  tcase_add_test(tc, test_import_in_place);
  tcase_add_test(tc, test_plan_explain_tflite_in_place);
  tcase_add_test(tc, test_embed_in_place);
  tcase_add_test(tc, test_embed_in_place_no_saving);
  tcase_add_test(tc, test_plan_tflite);
  tcase_add_test(tc, test_plan_shape_resizes);
  tcase_add_test(tc, test_plan_shape_refused);
  suite_add_tcase(s, tc);
  tc = tcase_create("golden");
  tcase_add_checked_fixture(tc, cm_setup, cm_teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_explain_golden);
  tcase_add_test(tc, test_render_golden);
  tcase_add_test(tc, test_diff_golden);
  tcase_add_test(tc, test_diff_plan_json);
  tcase_add_test(tc, test_embed_golden);
  suite_add_tcase(s, tc);
  tc = tcase_create("real");
  tcase_add_checked_fixture(tc, cm_setup, cm_teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_render_real_models, 0, (int)N_MODELS);
  tcase_add_loop_test(tc, test_explain_real_models, 0, (int)N_MODELS);
  tcase_add_loop_test(tc, test_embed_real_models, 0, (int)N_MODELS);
  tcase_add_test(tc, test_render_many_operators);
  suite_add_tcase(s, tc);
  cm_add_layout_tests(s);
  cm_add_input_tests(s);
  return s;
}

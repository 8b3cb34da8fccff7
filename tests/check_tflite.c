/*
 * check_tflite.c - tests of the TFLite reader and offline-plan writer
 * (planner/formats/tflite.h): every bundled real model against its reference
 * CSV and figures, the lifetime rules on small synthetic models, damaged
 * and hostile files, and embed round trips.
 *
 * This file holds the suite and its "models" and "rules" cases. The "bad"
 * cases are in check_tflite_bad.c, the "embed" cases in
 * check_tflite_embed.c, the "scratch" cases (TFLite Micro's kernel
 * scratch buffers) in check_tflite_scratch.c, the "inplace" cases (the
 * in-place pairs of the kernel allowlist) in check_tflite_inplace.c, and
 * the helpers they share
 * (the FlatBuffers writer for synthetic models, the bundled models) in
 * check_tflite_util.c.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "graph_csv.h"
#include "planner.h"
#include "tflite.h"
#include "testutil.h"
#include "check_tflite.h"

static const struct planner_tensor *find(const struct planner_tflite_model *m,
                                         uint32_t id)
{
  for (size_t i = 0; i < m->n_planned; i++)
    if (m->tensors[i].id == id)
      return &m->tensors[i];
  return NULL;
}

static void expect(const struct planner_tflite_model *m, uint32_t id,
                   uint64_t size, int64_t first, int64_t last)
{
  const struct planner_tensor *t = find(m, id);
  ck_assert_msg(t != NULL, "tensor %u not planned", (unsigned)id);
  ck_assert_uint_eq(t->size, size);
  ck_assert_int_eq(t->first, first);
  ck_assert_int_eq(t->last, last);
}

/* ---- real models ----------------------------------------------------------- */

/* The README's reference figures: ops, planned, naive, lower bound; one
 * row per model, in the order of tfl_model_name(). */
static const uint64_t figures[TFL_N_MODELS][4] = {
    {3, 4, 136, 128},         {4, 5, 7928, 5960},
    {4, 7, 7856, 5536},       {4, 12, 20679, 16753},
    {4, 19, 1795, 1282},      {7, 8, 18848, 13824},
    {15, 23, 10958, 10528},   {22, 25, 12128, 2060},
    {31, 32, 241030, 55296},  {84, 85, 11571924, 2451840},
    {164, 91, 9898496, 1376256},
};

/* Compares a model's graph with the reference CSV, as sets by id. */
static void compare_csv(const struct planner_tflite_model *m, const char *csv)
{
  char path[512], err[ARENA_ERR_LEN];
  size_t len;
  snprintf(path, sizeof path, "%s/models/%s", tu_data_dir(), csv);
  char *text = tu_read_file(path, &len);
  ck_assert_msg(text != NULL, "cannot read %s", path);
  struct planner_csv c;
  planner_csv_init(&c);
  ck_assert_int_eq(planner_csv_parse(text, len, &c, err), 0);
  free(text);
  ck_assert_msg(c.n_tensors == m->n_planned, "%s: %zu reference rows, %zu "
                "planned", csv, c.n_tensors, m->n_planned);
  for (size_t i = 0; i < c.n_tensors; i++) {
    const struct planner_tensor *r = &c.tensors[i];
    const struct planner_tensor *t = find(m, r->id);
    ck_assert_msg(t != NULL, "%s: tensor %u missing", csv, (unsigned)r->id);
    ck_assert_msg(t->size == r->size && t->first == r->first &&
                      t->last == r->last,
                  "%s: tensor %u is %llu [%lld,%lld], reference %llu "
                  "[%lld,%lld]",
                  csv, (unsigned)r->id, (unsigned long long)t->size,
                  (long long)t->first, (long long)t->last,
                  (unsigned long long)r->size, (long long)r->first,
                  (long long)r->last);
  }
  planner_csv_cleanup(&c);
}

START_TEST(test_reference_models)
{
  const char *name = tfl_model_name(_i);
  char err[ARENA_ERR_LEN], csv[256];
  size_t len;
  uint8_t *b = tfl_load_model(name, &len);
  struct planner_tflite_model m;
  planner_tflite_init(&m);
  ck_assert_int_eq(planner_tflite_is_model(b, len), 1);
  int rc = planner_tflite_read(b, len, NULL, &m, err);
  ck_assert_msg(rc == 0, "%s: %s", name, err);
  snprintf(csv, sizeof csv, "%s.csv", name);
  compare_csv(&m, csv);
  ck_assert_uint_eq(m.n_ops, figures[_i][0]);
  ck_assert_uint_eq(m.n_planned, figures[_i][1]);
  uint64_t naive = 0, lb = 0;
  for (size_t i = 0; i < m.n_planned; i++)
    naive += m.tensors[i].size;
  ck_assert_uint_eq(naive, figures[_i][2]);
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = 1;
  struct planner_graph g = planner_tflite_graph(&m);
  ck_assert_int_eq(planner_lower_bound(&g, &o, &lb), 0);
  ck_assert_uint_eq(lb, figures[_i][3]);
  /* The hash is the SHA-256 of the file. */
  uint8_t d[PLANNER_DIGEST_LEN];
  planner_sha256(b, len, d);
  ck_assert_int_eq(memcmp(d, m.sha256, sizeof d), 0);
  ck_assert_uint_eq(m.n_subgraphs, 1);
  ck_assert_uint_ge(m.n_inputs, 1);
  planner_tflite_cleanup(&m);
  free(b);
}
END_TEST

START_TEST(test_keep_dequant)
{
  char err[ARENA_ERR_LEN];
  size_t len;
  uint8_t *b = tfl_load_model("face_detection_short_range", &len);
  struct planner_tflite_model m;
  struct planner_tflite_options o = {.keep_dequant = 1};
  planner_tflite_init(&m);
  ck_assert_int_eq(planner_tflite_read(b, len, NULL, &m, err), 0);
  ck_assert_uint_eq(m.n_persistent, 74);
  ck_assert_uint_eq(m.persistent_bytes, 405560);
  ck_assert_int_eq(planner_tflite_read(b, len, &o, &m, err), 0);
  ck_assert_uint_eq(m.n_planned, 165);
  ck_assert_uint_eq(m.n_persistent, 0);
  compare_csv(&m, "face_detection_short_range.keep_dequant.csv");
  uint64_t naive = 0;
  for (size_t i = 0; i < m.n_planned; i++)
    naive += m.tensors[i].size;
  ck_assert_uint_eq(naive, 10304056);
  planner_tflite_cleanup(&m);
  free(b);
}
END_TEST

START_TEST(test_model_facts)
{
  char err[ARENA_ERR_LEN];
  size_t len;
  uint8_t *b = tfl_load_model("keyword_scrambled", &len);
  struct planner_tflite_model m;
  planner_tflite_init(&m);
  ck_assert_int_eq(planner_tflite_read(b, len, NULL, &m, err), 0);
  ck_assert_uint_eq(m.n_variable, 7);
  ck_assert_uint_eq(m.n_inputs, 1);
  ck_assert_int_eq(m.inputs[0].tensor, 52);
  ck_assert_uint_eq(m.inputs[0].rank, 2);
  ck_assert_int_eq(m.inputs[0].dims[0], 1);
  ck_assert_int_eq(m.inputs[0].dims[1], 96);
  ck_assert_str_eq(planner_tflite_type_name(m.inputs[0].type), "INT16");
  ck_assert_int_eq(m.outputs[0].tensor, 53);
  ck_assert_uint_eq(m.n_tensors_all, 54);
  planner_tflite_cleanup(&m);
  free(b);
}
END_TEST

/* ---- lifetime rules on a synthetic model ----------------------------------- */

START_TEST(test_rules)
{
  char err[ARENA_ERR_LEN];
  size_t len;
  struct tb_model tm = tb_sample();
  uint8_t *b = tb_build(&tm, &len);
  struct planner_tflite_model m;
  planner_tflite_init(&m);
  int rc = planner_tflite_read(b, len, NULL, &m, err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_uint_eq(m.n_ops, 4);
  expect(&m, 0, 32, 0, 0);  /* graph input from op 0 */
  ck_assert_ptr_null(find(&m, 1)); /* constant */
  expect(&m, 2, 1, 0, 1);   /* int4, 2 elements -> 1 byte */
  expect(&m, 3, 16, 0, 3);  /* variable: whole run */
  expect(&m, 4, 0, 1, 1);   /* intermediate of op 1, size 0 kept */
  ck_assert_ptr_null(find(&m, 5)); /* DEQUANTIZE of a constant */
  ck_assert_ptr_null(find(&m, 6)); /* STRING */
  expect(&m, 7, 3, 3, 3);   /* graph output */
  ck_assert_ptr_null(find(&m, 8)); /* never used */
  expect(&m, 9, 2, 1, 3);
  ck_assert_uint_eq(m.n_planned, 6);
  ck_assert_uint_eq(m.n_const, 1);
  ck_assert_uint_eq(m.n_persistent, 1);
  ck_assert_uint_eq(m.persistent_bytes, 16);
  ck_assert_uint_eq(m.n_unplannable, 1);
  ck_assert_uint_eq(m.n_unused, 1);
  ck_assert_uint_eq(m.n_variable, 1);
  ck_assert_int_eq(m.dynamic, 0);
  ck_assert_int_eq(m.has_offline_plan, 0);
  struct planner_tflite_options o = {.keep_dequant = 1};
  ck_assert_int_eq(planner_tflite_read(b, len, &o, &m, err), 0);
  expect(&m, 5, 16, 2, 3);
  ck_assert_uint_eq(m.n_planned, 7);
  /* As for TFLite Micro: variables live outside the planned arena. */
  o.skip_variable = 1;
  ck_assert_int_eq(planner_tflite_read(b, len, &o, &m, err), 0);
  ck_assert_ptr_null(find(&m, 3));
  ck_assert_uint_eq(m.n_planned, 6);
  ck_assert_uint_eq(m.n_variable, 1);
  planner_tflite_cleanup(&m);
  free(b);
}
END_TEST

START_TEST(test_element_sizes)
{
  /* type, dims -> bytes */
  static const struct {
    int type;
    int32_t n;
    uint64_t bytes;
  } cases[] = {
      {0, 3, 12},  {1, 3, 6},   {2, 3, 12},  {3, 3, 3},   {4, 3, 24},
      {6, 3, 3},   {7, 3, 6},   {8, 3, 24},  {9, 3, 3},   {10, 3, 24},
      {11, 3, 48}, {12, 3, 24}, {15, 3, 12}, {16, 3, 6},  {17, 3, 2},
      {18, 3, 6},  {19, 3, 1},  {20, 5, 3},  {21, 3, 3},  {22, 3, 3},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char err[ARENA_ERR_LEN];
    size_t len;
    struct tb_model tm;
    memset(&tm, 0, sizeof tm);
    tm.n_opcodes = 1;
    tm.nb = 1;
    tm.nt = 1;
    tm.t[0].type = cases[c].type;
    tm.t[0].nd = 1;
    tm.t[0].shape[0] = cases[c].n;
    tm.ni = 1;
    uint8_t *b = tb_build(&tm, &len);
    struct planner_tflite_model m;
    planner_tflite_init(&m);
    ck_assert_int_eq(planner_tflite_read(b, len, NULL, &m, err), 0);
    ck_assert_msg(m.tensors[0].size == cases[c].bytes, "type %s: %llu bytes",
                  planner_tflite_type_name(cases[c].type),
                  (unsigned long long)m.tensors[0].size);
    planner_tflite_cleanup(&m);
    free(b);
  }
}
END_TEST

START_TEST(test_unplannable_types)
{
  static const int types[] = {5, 13, 14}; /* STRING, RESOURCE, VARIANT */
  for (size_t q = 0; q < sizeof types / sizeof types[0]; q++) {
    int type = types[q];
    char err[ARENA_ERR_LEN];
    size_t len;
    struct tb_model tm;
    memset(&tm, 0, sizeof tm);
    tm.n_opcodes = 1;
    tm.nb = 1;
    tm.nt = 2;
    tm.t[0].type = type;
    tm.t[0].nd = 1;
    tm.t[0].shape[0] = 1;
    tm.t[1].nd = 1;
    tm.t[1].shape[0] = 1;
    tm.ni = 2;
    tm.in[1] = 1;
    uint8_t *b = tb_build(&tm, &len);
    struct planner_tflite_model m;
    planner_tflite_init(&m);
    ck_assert_int_eq(planner_tflite_read(b, len, NULL, &m, err), 0);
    ck_assert_uint_eq(m.n_unplannable, 1);
    ck_assert_uint_eq(m.n_planned, 1);
    ck_assert_uint_eq(m.tensors[0].id, 1);
    planner_tflite_cleanup(&m);
    free(b);
  }
}
END_TEST

START_TEST(test_subgraphs_counted)
{
  char err[ARENA_ERR_LEN];
  size_t len;
  struct tb_model tm = tb_sample();
  tm.extra_subgraphs = 2;
  uint8_t *b = tb_build(&tm, &len);
  struct planner_tflite_model m;
  planner_tflite_init(&m);
  ck_assert_int_eq(planner_tflite_read(b, len, NULL, &m, err), 0);
  ck_assert_uint_eq(m.n_subgraphs, 3);
  ck_assert_uint_eq(m.n_tensors_all, 12);
  ck_assert_uint_eq(m.n_tensors, 10);
  ck_assert_uint_eq(m.n_planned, 6);
  planner_tflite_cleanup(&m);
  free(b);
}
END_TEST

START_TEST(test_dynamic_batch)
{
  char err[ARENA_ERR_LEN];
  size_t len;
  struct tb_model tm = tb_sample();
  tm.t[0].nsig = 2;
  tm.t[0].sig[0] = -1;
  tm.t[0].sig[1] = 8;
  uint8_t *b = tb_build(&tm, &len);
  struct planner_tflite_model m;
  struct planner_tflite_options o = {.batch = 5};
  planner_tflite_init(&m);
  ck_assert_int_eq(planner_tflite_read(b, len, NULL, &m, err), 0);
  ck_assert_int_eq(m.dynamic, 1);
  ck_assert_int_eq(m.inputs[0].dynamic, 1);
  ck_assert_int_eq(m.inputs[0].sig[0], -1);
  expect(&m, 0, 32, 0, 0); /* sized from `shape` */
  ck_assert_int_eq(planner_tflite_read(b, len, &o, &m, err), 0);
  ck_assert_int_eq(m.batch_applied, 1);
  expect(&m, 0, 160, 0, 0); /* batch 5 */
  free(b);
  /* A dynamic non-batch dimension cannot be set from a batch. */
  tm.t[0].sig[0] = 1;
  tm.t[0].sig[1] = -1;
  b = tb_build(&tm, &len);
  ck_assert_int_eq(planner_tflite_read(b, len, &o, &m, err),
                   ARENA_EUNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err, "dynamic dimension other than the batch"));
  ck_assert_ptr_null(m.tensors);
  ck_assert_int_eq(planner_tflite_read(b, len, NULL, &m, err), 0);
  planner_tflite_cleanup(&m);
  free(b);
}
END_TEST

Suite *tflite_suite(void)
{
  Suite *s = suite_create("tflite");
  TCase *tc = tcase_create("models");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_reference_models, 0, (int)TFL_N_MODELS);
  tcase_add_test(tc, test_keep_dequant);
  tcase_add_test(tc, test_model_facts);
  suite_add_tcase(s, tc);
  tc = tcase_create("rules");
  tcase_add_test(tc, test_rules);
  tcase_add_test(tc, test_element_sizes);
  tcase_add_test(tc, test_unplannable_types);
  tcase_add_test(tc, test_subgraphs_counted);
  tcase_add_test(tc, test_dynamic_batch);
  suite_add_tcase(s, tc);
  tc = tcase_create("bad");
  tcase_set_timeout(tc, 120);
  tflite_add_bad(tc);
  suite_add_tcase(s, tc);
  tc = tcase_create("embed");
  tcase_set_timeout(tc, 120);
  tflite_add_embed(tc);
  suite_add_tcase(s, tc);
  tc = tcase_create("scratch");
  tcase_set_timeout(tc, 60);
  tflite_add_scratch(tc);
  suite_add_tcase(s, tc);
  tc = tcase_create("inplace");
  tcase_set_timeout(tc, 120);
  tflite_add_inplace(tc);
  suite_add_tcase(s, tc);
  return s;
}

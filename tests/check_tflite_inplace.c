/*
 * check_tflite_inplace.c - the "inplace" tests of tflite_suite: the
 * in-place pairs the reader declares from its allowlist of kernels
 * (tflite.h, IN-PLACE PAIRS). Each rule is checked on a synthetic model;
 * on the bundled models the pairs are counted, checked against the rules
 * one by one, and planned: face_detection_short_range's ADD and RELU
 * pairs lower its bound.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_tflite.h"
#include "planner.h"
#include "tflite.h"

enum { F32 = 0, I32 = 2, I8 = 9 };
enum {
  OP_ADD = 0, OP_CONV_2D = 3, OP_DEQUANTIZE = 6, OP_MUL = 18, OP_RELU = 19,
  OP_RESHAPE = 22, OP_QUANTIZE = 114
};

/* op0 RELU(t0) -> t2          t0 is the graph input: no pair
 * op1 CONV_2D(t2, t1) -> t3   not on the allowlist: no pair
 * op2 ADD(t1, t3) -> t4       t1 constant, skipped: t4 reuses t3
 * op3 RELU(t4) -> t5          t4 is read again at op4: no pair
 * op4 ADD(-1, t4, t5) -> t6   absent input skipped: t6 reuses t4, the
 *                             first that qualifies
 * op5 QUANTIZE(t6) -> t7      float32 to int8, 32 to 8 bytes: no pair
 * op6 RELU(t7) -> t8          t8 is the graph output: no pair */
static struct tb_model chain_model(void)
{
  struct tb_model m;
  memset(&m, 0, sizeof m);
  m.n_opcodes = 4;
  m.opcodes[0] = OP_RELU;
  m.opcodes[1] = OP_CONV_2D;
  m.opcodes[2] = OP_ADD;
  m.opcodes[3] = OP_QUANTIZE;
  m.nb = 2;
  m.buf_len[1] = 32;
  m.nt = 9;
  struct tb_tensor t[9] = {
      {F32, 1, {8}, 0, {0}, 0, 0}, {F32, 1, {8}, 0, {0}, 1, 0},
      {F32, 1, {8}, 0, {0}, 0, 0}, {F32, 1, {8}, 0, {0}, 0, 0},
      {F32, 1, {8}, 0, {0}, 0, 0}, {F32, 1, {8}, 0, {0}, 0, 0},
      {F32, 1, {8}, 0, {0}, 0, 0}, {I8, 1, {8}, 0, {0}, 0, 0},
      {I8, 1, {8}, 0, {0}, 0, 0},
  };
  memcpy(m.t, t, sizeof t);
  m.no = 7;
  struct tb_op o[7] = {
      {0, 1, 1, 0, {0}, {2}, {0}},         {1, 2, 1, 0, {2, 1}, {3}, {0}},
      {2, 2, 1, 0, {1, 3}, {4}, {0}},      {0, 1, 1, 0, {4}, {5}, {0}},
      {2, 3, 1, 0, {-1, 4, 5}, {6}, {0}},  {3, 1, 1, 0, {6}, {7}, {0}},
      {0, 1, 1, 0, {7}, {8}, {0}},
  };
  memcpy(m.ops, o, sizeof o);
  m.ni = 1;
  m.in[0] = 0;
  m.nout = 1;
  m.out[0] = 8;
  return m;
}

/* op0 MUL(t0, t0) -> t1        t0 is the graph input: no pair
 * op1 QUANTIZE(t1) -> t2       int8 to int8: t2 reuses t1
 * op2 DEQUANTIZE(t2) -> t3     int8 to float32, the output grows: no pair
 * op3 RESHAPE(t3, t4) -> t5    t5 reuses t3 (t4, the shape, is constant)
 * op4 MUL(t6, t5) -> t7        t6 is a variable, skipped: t7 reuses t5
 * op5 DEQUANTIZE(t9) -> t8     of a constant: t8 is persistent
 * op6 MUL(t8, t7) -> t10       t8 persistent, t7 read again: no pair
 * op7 MUL(t7, t10) -> t11      t11 is the graph output: no pair */
static struct tb_model convert_model(void)
{
  struct tb_model m;
  memset(&m, 0, sizeof m);
  m.n_opcodes = 4;
  m.opcodes[0] = OP_MUL;
  m.opcodes[1] = OP_QUANTIZE;
  m.opcodes[2] = OP_DEQUANTIZE;
  m.opcodes[3] = OP_RESHAPE;
  m.nb = 3;
  m.buf_len[1] = 8;
  m.buf_len[2] = 16;
  m.nt = 12;
  struct tb_tensor t[12] = {
      {I8, 1, {16}, 0, {0}, 0, 0},     {I8, 1, {16}, 0, {0}, 0, 0},
      {I8, 1, {16}, 0, {0}, 0, 0},     {F32, 1, {16}, 0, {0}, 0, 0},
      {I32, 1, {2}, 0, {0}, 1, 0},     {F32, 2, {4, 4}, 0, {0}, 0, 0},
      {F32, 2, {4, 4}, 0, {0}, 0, 1},  {F32, 2, {4, 4}, 0, {0}, 0, 0},
      {F32, 2, {4, 4}, 0, {0}, 0, 0},  {I8, 2, {4, 4}, 0, {0}, 2, 0},
      {F32, 2, {4, 4}, 0, {0}, 0, 0},  {F32, 2, {4, 4}, 0, {0}, 0, 0},
  };
  memcpy(m.t, t, sizeof t);
  m.no = 8;
  struct tb_op o[8] = {
      {0, 2, 1, 0, {0, 0}, {1}, {0}},   {1, 1, 1, 0, {1}, {2}, {0}},
      {2, 1, 1, 0, {2}, {3}, {0}},      {3, 2, 1, 0, {3, 4}, {5}, {0}},
      {0, 2, 1, 0, {6, 5}, {7}, {0}},   {2, 1, 1, 0, {9}, {8}, {0}},
      {0, 2, 1, 0, {8, 7}, {10}, {0}},  {0, 2, 1, 0, {7, 10}, {11}, {0}},
  };
  memcpy(m.ops, o, sizeof o);
  m.ni = 1;
  m.in[0] = 0;
  m.nout = 1;
  m.out[0] = 11;
  return m;
}

static void read_built(const struct tb_model *tm,
                       const struct planner_tflite_options *o,
                       struct planner_tflite_model *m)
{
  size_t len;
  char err[ARENA_ERR_LEN] = "";
  uint8_t *buf = tb_build(tm, &len);
  planner_tflite_init(m);
  ck_assert_msg(planner_tflite_read(buf, len, o, m, err) == 0, "%s", err);
  free(buf);
}

static const struct planner_tensor *row_of(const struct planner_tflite_model *m,
                                           uint32_t id)
{
  for (size_t i = 0; i < m->n_planned; i++)
    if (m->tensors[i].id == id)
      return &m->tensors[i];
  ck_abort_msg("tensor %u not planned", (unsigned)id);
  return NULL;
}

/* Checks that tensors 0 .. n-1 (those planned) reuse want[id], -1 for
 * none. */
static void expect_pairs(const struct planner_tflite_model *m,
                         const int *want, uint32_t n)
{
  size_t pairs = 0;
  for (uint32_t id = 0; id < n; id++) {
    if (want[id] == -2)
      continue; /* not planned */
    const struct planner_tensor *t = row_of(m, id);
    ck_assert_msg(t->has_alias == (want[id] >= 0), "tensor %u: has_alias %u",
                  (unsigned)id, (unsigned)t->has_alias);
    if (want[id] >= 0) {
      ck_assert_uint_eq(t->alias, (uint32_t)want[id]);
      pairs++;
    }
  }
  ck_assert_uint_eq(m->n_aliases, pairs);
}

START_TEST(test_rules_chain)
{
  struct planner_tflite_model m;
  struct tb_model tm = chain_model();
  read_built(&tm, NULL, &m);
  static const int want[9] = {-1, -2, -1, -1, 3, -1, 4, -1, -1};
  expect_pairs(&m, want, 9);
  ck_assert_uint_eq(m.n_ops, 7);
  ck_assert_int_eq(m.op_codes[1], OP_CONV_2D);
  ck_assert_str_eq(planner_tflite_inplace_op(m.op_codes[2]), "ADD");
  ck_assert_ptr_null(planner_tflite_inplace_op(OP_CONV_2D));
  planner_tflite_cleanup(&m);
  /* no_in_place: the same graph without a single alias */
  struct planner_tflite_options o = {.no_in_place = 1};
  read_built(&tm, &o, &m);
  static const int none[9] = {-1, -2, -1, -1, -1, -1, -1, -1, -1};
  expect_pairs(&m, none, 9);
  planner_tflite_cleanup(&m);
}
END_TEST

START_TEST(test_rules_conversions)
{
  struct planner_tflite_model m;
  struct tb_model tm = convert_model();
  read_built(&tm, NULL, &m); /* t8 persistent, not planned */
  static const int want[12] = {-1, -1, 1, -1, -2, 3, -1, 5, -2, -2, -1, -1};
  expect_pairs(&m, want, 12);
  planner_tflite_cleanup(&m);
  /* planned with --keep-dequant, t8 still never gives its bytes */
  struct planner_tflite_options o = {.keep_dequant = 1};
  read_built(&tm, &o, &m);
  static const int kept[12] = {-1, -1, 1, -1, -2, 3, -1, 5, -1, -2, -1, -1};
  expect_pairs(&m, kept, 12);
  planner_tflite_cleanup(&m);
  /* variables left out (as embed does): t7 still reuses t5 */
  o.skip_variable = 1;
  read_built(&tm, &o, &m);
  static const int skip[12] = {-1, -1, 1, -1, -2, 3, -2, 5, -1, -2, -1, -1};
  expect_pairs(&m, skip, 12);
  planner_tflite_cleanup(&m);
}
END_TEST

/* Equal byte sizes are not enough: the element widths must match too. */
START_TEST(test_rules_element_width)
{
  struct tb_model tm = convert_model();
  tm.t[3].shape[0] = 4; /* DEQUANTIZE int8 [16] -> float32 [4]: 16 bytes */
  tm.t[5].shape[0] = 2; /* and what follows, float32 [2, 2] */
  tm.t[5].shape[1] = 2;
  struct planner_tflite_model m;
  read_built(&tm, NULL, &m);
  ck_assert_uint_eq(row_of(&m, 3)->size, row_of(&m, 2)->size);
  ck_assert_uint_eq(row_of(&m, 3)->has_alias, 0);
  ck_assert_uint_eq(row_of(&m, 5)->has_alias, 1); /* reshape of t3 */
  ck_assert_uint_eq(row_of(&m, 5)->alias, 3);
  planner_tflite_cleanup(&m);
}
END_TEST

/* Pairs on the bundled models, in the order of tfl_model_name(). */
static const size_t bundled_pairs[TFL_N_MODELS] = {0, 0, 1, 1, 0, 0,
                                                   0, 4, 1, 11, 37};

static int is_io(const struct planner_tflite_model *m, uint32_t id)
{
  for (size_t i = 0; i < m->n_inputs; i++)
    if ((uint32_t)m->inputs[i].tensor == id)
      return 1;
  for (size_t i = 0; i < m->n_outputs; i++)
    if ((uint32_t)m->outputs[i].tensor == id)
      return 1;
  return 0;
}

START_TEST(test_bundled_pairs)
{
  const char *name = tfl_model_name(_i);
  size_t len;
  char err[ARENA_ERR_LEN] = "";
  uint8_t *b = tfl_load_model(name, &len);
  struct planner_tflite_model m;
  planner_tflite_init(&m);
  ck_assert_msg(planner_tflite_read(b, len, NULL, &m, err) == 0, "%s", err);
  ck_assert_msg(m.n_aliases == bundled_pairs[_i], "%s: %zu pairs", name,
                m.n_aliases);
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = 1;
  size_t n = 0;
  for (size_t i = 0; i < m.n_planned; i++) {
    const struct planner_tensor *t = &m.tensors[i];
    int32_t code = m.op_codes[t->first];
    if (!t->has_alias) /* a CONV_2D output, say */
      continue;
    n++;
    const struct planner_tensor *in = row_of(&m, t->alias);
    ck_assert_msg(planner_tflite_inplace_op(code) != NULL,
                  "%s: tensor %u comes from builtin %d", name,
                  (unsigned)t->id, (int)code);
    ck_assert_int_ne(code, OP_CONV_2D);
    ck_assert_msg(!is_io(&m, t->id) && !is_io(&m, in->id),
                  "%s: pair %u <- %u involves a graph input or output", name,
                  (unsigned)t->id, (unsigned)in->id);
    ck_assert_uint_eq(t->size, in->size);
    const char *why = planner_alias_check(t, in, &o);
    ck_assert_msg(why == NULL, "%s: %u <- %u: %s", name, (unsigned)t->id,
                  (unsigned)in->id, why);
  }
  ck_assert_uint_eq(n, m.n_aliases);
  /* no output of a CONV_2D declares one */
  for (size_t i = 0; i < m.n_planned; i++)
    if (m.op_codes[m.tensors[i].first] == OP_CONV_2D &&
        !is_io(&m, m.tensors[i].id))
      ck_assert_uint_eq(m.tensors[i].has_alias, 0);
  planner_tflite_cleanup(&m);
  /* with no_in_place, none at all */
  struct planner_tflite_options off = {.no_in_place = 1};
  ck_assert_int_eq(planner_tflite_read(b, len, &off, &m, err), 0);
  ck_assert_uint_eq(m.n_aliases, 0);
  for (size_t i = 0; i < m.n_planned; i++)
    ck_assert_uint_eq(m.tensors[i].has_alias, 0);
  planner_tflite_cleanup(&m);
  free(b);
}
END_TEST

/* Plans a model at alignment `align`, with sharing on or off. */
static void plan_model(const char *name, uint64_t align, int in_place,
                       struct planner_plan *p)
{
  size_t len;
  char err[ARENA_ERR_LEN] = "";
  uint8_t *b = tfl_load_model(name, &len);
  struct planner_tflite_model m;
  planner_tflite_init(&m);
  ck_assert_int_eq(planner_tflite_read(b, len, NULL, &m, err), 0);
  struct planner_graph g = planner_tflite_graph(&m);
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = align;
  o.in_place = in_place;
  planner_plan_init(p);
  ck_assert_msg(planner_run(&g, &o, p, err) == 0, "%s", err);
  ck_assert_int_eq(planner_verify(&g, &o, p, err), 0);
  planner_tflite_cleanup(&m);
  free(b);
}

/* face_detection_short_range's ADD+RELU pairs: the load bound falls from
 * 1376256 to 1310720 bytes, at alignment 1 and 64 alike, and the plan
 * meets it. */
START_TEST(test_face_detection_bound)
{
  static const uint64_t aligns[] = {1, 64};
  for (size_t a = 0; a < 2; a++) {
    struct planner_plan p;
    plan_model("face_detection_short_range", aligns[a], 1, &p);
    ck_assert_uint_eq(p.lower_bound_bytes, 1310720);
    ck_assert_uint_eq(p.lower_bound_unshared_bytes, 1376256);
    ck_assert_uint_eq(p.arena_bytes, 1310720);
    ck_assert_uint_eq(p.n_shared, 37);
    planner_plan_cleanup(&p);
    plan_model("face_detection_short_range", aligns[a], 0, &p);
    ck_assert_uint_eq(p.lower_bound_bytes, 1376256);
    ck_assert_uint_eq(p.arena_bytes, 1376256);
    ck_assert_uint_eq(p.n_shared, 0);
    planner_plan_cleanup(&p);
  }
  /* mobilenet_v2's residual ADDs share too, but its peak is elsewhere */
  struct planner_plan p;
  plan_model("mobilenet_v2_quantized_1x3x224x224", 1, 1, &p);
  ck_assert_uint_eq(p.lower_bound_bytes, 2451840);
  ck_assert_uint_eq(p.lower_bound_unshared_bytes, 2451840);
  ck_assert_uint_eq(p.arena_bytes, 2451840);
  planner_plan_cleanup(&p);
}
END_TEST

void tflite_add_inplace(TCase *tc)
{
  tcase_add_test(tc, test_rules_chain);
  tcase_add_test(tc, test_rules_conversions);
  tcase_add_test(tc, test_rules_element_width);
  tcase_add_loop_test(tc, test_bundled_pairs, 0, (int)TFL_N_MODELS);
  tcase_add_test(tc, test_face_detection_bound);
}

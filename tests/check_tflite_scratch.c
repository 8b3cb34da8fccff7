/*
 * check_tflite_scratch.c - the "scratch" tests of tflite_suite: the kernel
 * scratch buffers TFLite Micro's reference kernels request, as the reader
 * lists them with planner_tflite_options.tflm_scratch (tflite.h, TFLM
 * SCRATCH). Each rule is checked on a synthetic model whose sizes are
 * worked out by hand from TFLM's kernel sources; the bundled models are
 * checked for their counts (and, in check_tflm, against the buffers the
 * real TFLM asks for).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_tflite.h"
#include "tflite.h"

enum { F32 = 0, I32 = 2, I8 = 9 };

/* op0 SVDF(t0 int8 [2,10], t1 [6,10], t2, t3) -> t4 int8 [2,3];
 * op1 MEAN(t4, axis t5 [1]) -> t6 int8 [2,1];
 * op2 MEAN(t7 float [2,3], t5) -> t8 float [2];
 * op3 SVDF(t9 float [3,10], t10 [4,10], t2, t3) -> t11 float [3,2]. */
static struct tb_model scratch_model(void)
{
  struct tb_model m;
  memset(&m, 0, sizeof m);
  m.n_opcodes = 2;
  m.opcodes[0] = 27; /* SVDF */
  m.opcodes[1] = 40; /* MEAN */
  m.nb = 3;
  m.buf_len[1] = 16;
  m.buf_len[2] = 4;
  m.nt = 12;
  struct tb_tensor t[12] = {
      {I8, 2, {2, 10}, 0, {0}, 0, 0},  {I8, 2, {6, 10}, 0, {0}, 1, 0},
      {I8, 2, {6, 4}, 0, {0}, 1, 0},   {I8, 2, {2, 24}, 0, {0}, 0, 1},
      {I8, 2, {2, 3}, 0, {0}, 0, 0},   {I32, 1, {1}, 0, {0}, 2, 0},
      {I8, 2, {2, 1}, 0, {0}, 0, 0},   {F32, 2, {2, 3}, 0, {0}, 0, 0},
      {F32, 1, {2}, 0, {0}, 0, 0},     {F32, 2, {3, 10}, 0, {0}, 0, 0},
      {F32, 2, {4, 10}, 0, {0}, 1, 0}, {F32, 2, {3, 2}, 0, {0}, 0, 0},
  };
  memcpy(m.t, t, sizeof t);
  m.no = 4;
  struct tb_op o[4] = {
      {0, 4, 1, 0, {0, 1, 2, 3}, {4}, {0}},
      {1, 2, 1, 0, {4, 5}, {6}, {0}},
      {1, 2, 1, 0, {7, 5}, {8}, {0}},
      {0, 4, 1, 0, {9, 10, 2, 3}, {11}, {0}},
  };
  memcpy(m.ops, o, sizeof o);
  m.ni = 3;
  m.in[0] = 0;
  m.in[1] = 7;
  m.in[2] = 9;
  m.nout = 3;
  m.out[0] = 6;
  m.out[1] = 8;
  m.out[2] = 11;
  return m;
}

/* Builds tm and reads it, listing scratch buffers when asked. */
static int read_built(const struct tb_model *tm, int scratch,
                      struct planner_tflite_model *m, char err[ARENA_ERR_LEN])
{
  size_t len;
  uint8_t *buf = tb_build(tm, &len);
  struct planner_tflite_options o = {.tflm_scratch = scratch};
  int rc = planner_tflite_read(buf, len, &o, m, err);
  free(buf);
  return rc;
}

START_TEST(test_scratch_rules)
{
  /* SVDF int8: 4*batch*filters = 4*2*6, 4*batch*units = 4*6; MEAN int8:
   * 4*out elements, 4*rank, 4*axis elements; MEAN float: no accumulator;
   * SVDF float: 4*3*4 only. */
  static const uint64_t want_size[] = {48, 24, 8, 8, 4, 8, 4, 48};
  static const int64_t want_op[] = {0, 0, 1, 1, 1, 2, 2, 3};
  struct tb_model tm = scratch_model();
  struct planner_tflite_model m;
  char err[ARENA_ERR_LEN];
  planner_tflite_init(&m);
  ck_assert_msg(read_built(&tm, 1, &m, err) == 0, "%s", err);
  ck_assert_uint_eq(m.n_scratch, 8);
  uint64_t total = 0;
  for (size_t i = 0; i < m.n_scratch; i++) {
    const struct planner_tensor *s = &m.scratch[i];
    ck_assert_uint_eq(s->id, m.n_tensors_all + i);
    ck_assert_uint_eq(s->size, want_size[i]);
    ck_assert_int_eq(s->first, want_op[i]);
    ck_assert_int_eq(s->last, want_op[i]);
    ck_assert_int_eq(s->pinned, PLANNER_NOT_PINNED);
    total += s->size;
  }
  ck_assert_uint_eq(m.scratch_bytes, total);
  /* Scratch buffers are not tensors: the graph is unchanged. */
  size_t n_planned = m.n_planned;
  ck_assert_int_eq(read_built(&tm, 0, &m, err), 0);
  ck_assert_uint_eq(m.n_scratch, 0);
  ck_assert_ptr_null(m.scratch);
  ck_assert_uint_eq(m.scratch_bytes, 0);
  ck_assert_uint_eq(m.n_planned, n_planned);
  planner_tflite_cleanup(&m);
}
END_TEST

START_TEST(test_scratch_overflow)
{
  struct tb_model tm = scratch_model();
  tm.t[0].shape[0] = 1 << 20; /* 4 * 2^20 * 2^20 bytes: past 2^40 */
  tm.t[1].shape[0] = 1 << 20;
  struct planner_tflite_model m;
  char err[ARENA_ERR_LEN];
  planner_tflite_init(&m);
  ck_assert_int_eq(read_built(&tm, 1, &m, err), ARENA_EOVERFLOW);
  ck_assert_ptr_nonnull(strstr(err, "operator 0"));
  ck_assert_ptr_null(m.scratch);
  /* Without the option the same model reads. */
  ck_assert_int_eq(read_built(&tm, 0, &m, err), 0);
  planner_tflite_cleanup(&m);
}
END_TEST

START_TEST(test_scratch_bundled)
{
  /* keyword_scrambled: 7 int8 SVDFs, two each; the LSTM models: four per
   * UNIDIRECTIONAL_SEQUENCE_LSTM; mobilenet: its int8 MEAN, three. */
  static const struct {
    const char *name;
    size_t n;
  } want[] = {{"keyword_scrambled", 14}, {"micro_speech_lstm", 4},
              {"trained_lstm", 4},       {"dtln_noise_suppression", 8},
              {"mobilenet_v2_quantized_1x3x224x224", 3},
              {"person_detect", 0},      {"hello_world_float", 0}};
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
    size_t len;
    uint8_t *buf = tfl_load_model(want[k].name, &len);
    struct planner_tflite_model m;
    struct planner_tflite_options o = {.keep_dequant = 1,
                                       .skip_variable = 1,
                                       .tflm_scratch = 1};
    char err[ARENA_ERR_LEN];
    planner_tflite_init(&m);
    ck_assert_msg(planner_tflite_read(buf, len, &o, &m, err) == 0, "%s", err);
    ck_assert_msg(m.n_scratch == want[k].n, "%s: %zu scratch buffers",
                  want[k].name, m.n_scratch);
    for (size_t i = 0; i < m.n_scratch; i++) {
      ck_assert_int_eq(m.scratch[i].first, m.scratch[i].last);
      ck_assert_int_lt(m.scratch[i].first, (int64_t)m.n_ops);
      ck_assert_uint_gt(m.scratch[i].size, 0);
    }
    planner_tflite_cleanup(&m);
    free(buf);
  }
}
END_TEST

void tflite_add_scratch(TCase *tc)
{
  tcase_add_test(tc, test_scratch_rules);
  tcase_add_test(tc, test_scratch_overflow);
  tcase_add_test(tc, test_scratch_bundled);
}

/*
 * check_tflite.c - tests of the TFLite reader and offline-plan writer
 * (planner/tflite.h): every bundled real model against its reference
 * CSV and figures, the lifetime rules on small synthetic models, damaged
 * and hostile files, and embed round trips.
 *
 * The synthetic models come from a tiny forward FlatBuffers writer below
 * (parents before children, so every reference points forward, as the
 * format requires). All its scalar fields take 4-byte slots, which a
 * reader of 1-byte fields reads correctly in little endian.
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

/* ---- a small FlatBuffers writer for test models --------------------------- */

#define TB_CAP 65536

struct tb {
  uint8_t b[TB_CAP]; /* the file */
  size_t pos;        /* bytes used */
};

static void wr32(uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static uint32_t rd32(const uint8_t *p)
{
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}

static size_t tb_take(struct tb *t, size_t n)
{
  t->pos = (t->pos + 3) & ~(size_t)3;
  size_t at = t->pos;
  t->pos += n;
  ck_assert_uint_le(t->pos, TB_CAP);
  return at;
}

/* A table with n_fields 4-byte slots; bit i of present = field i set. */
static size_t tb_table(struct tb *t, unsigned n_fields, uint32_t present)
{
  size_t vt = tb_take(t, 4 + 2 * n_fields);
  t->b[vt] = (uint8_t)(4 + 2 * n_fields);
  t->b[vt + 2] = (uint8_t)(4 + 4 * n_fields);
  for (unsigned i = 0; i < n_fields; i++)
    if (present & (1u << i))
      t->b[vt + 4 + 2 * i] = (uint8_t)(4 + 4 * i);
  size_t tab = tb_take(t, 4 + 4 * n_fields);
  wr32(t->b + tab, (uint32_t)(tab - vt));
  return tab;
}

static void tb_u32(struct tb *t, size_t tab, unsigned field, uint32_t v)
{
  wr32(t->b + tab + 4 + 4 * field, v);
}

static void tb_ref_at(struct tb *t, size_t slot, size_t target)
{
  ck_assert_uint_gt(target, slot);
  wr32(t->b + slot, (uint32_t)(target - slot));
}

static void tb_ref(struct tb *t, size_t tab, unsigned field, size_t target)
{
  tb_ref_at(t, tab + 4 + 4 * field, target);
}

static size_t tb_vec_i32(struct tb *t, int n, const int32_t *v)
{
  size_t at = tb_take(t, 4 + 4 * (size_t)n);
  wr32(t->b + at, (uint32_t)n);
  for (int i = 0; i < n; i++)
    wr32(t->b + at + 4 + 4 * (size_t)i, (uint32_t)v[i]);
  return at;
}

struct tb_tensor {
  int type;         /* TensorType */
  int nd;           /* dims in shape */
  int32_t shape[4]; /* shape */
  int nsig;         /* dims in shape_signature (0 = absent) */
  int32_t sig[4];   /* shape_signature */
  uint32_t buffer;  /* buffer index */
  int variable;     /* is_variable */
};

struct tb_op {
  int opcode;                 /* index into opcodes */
  int nin, nout, nint;        /* list lengths */
  int32_t in[4], out[4], it[4]; /* inputs, outputs, intermediates */
};

struct tb_model {
  int n_opcodes;
  int32_t opcodes[4];   /* builtin codes */
  int nb;
  uint32_t buf_len[8];  /* data bytes per buffer */
  int nt;
  struct tb_tensor t[16];
  int no;
  struct tb_op ops[8];
  int ni, nout;
  int32_t in[4], out[4];
  int extra_subgraphs;  /* more subgraphs with one tensor each */
};

static void tb_subgraph(struct tb *t, size_t sg, const struct tb_model *m)
{
  size_t tv = tb_take(t, 4 + 4 * (size_t)m->nt);
  wr32(t->b + tv, (uint32_t)m->nt);
  tb_ref(t, sg, 0, tv);
  for (int i = 0; i < m->nt; i++) {
    const struct tb_tensor *x = &m->t[i];
    uint32_t present = 1u | 2u | 4u | (x->variable ? 32u : 0) |
                       (x->nsig ? 128u : 0);
    size_t tt = tb_table(t, 8, present);
    tb_ref_at(t, tv + 4 + 4 * (size_t)i, tt);
    tb_u32(t, tt, 1, (uint32_t)x->type);
    tb_u32(t, tt, 2, x->buffer);
    tb_u32(t, tt, 5, (uint32_t)x->variable);
    tb_ref(t, tt, 0, tb_vec_i32(t, x->nd, x->shape));
    if (x->nsig)
      tb_ref(t, tt, 7, tb_vec_i32(t, x->nsig, x->sig));
  }
  size_t ov = tb_take(t, 4 + 4 * (size_t)m->no);
  wr32(t->b + ov, (uint32_t)m->no);
  tb_ref(t, sg, 3, ov);
  for (int k = 0; k < m->no; k++) {
    const struct tb_op *o = &m->ops[k];
    size_t ot = tb_table(t, 9, 1u | 2u | 4u | (o->nint ? 256u : 0));
    tb_ref_at(t, ov + 4 + 4 * (size_t)k, ot);
    tb_u32(t, ot, 0, (uint32_t)o->opcode);
    tb_ref(t, ot, 1, tb_vec_i32(t, o->nin, o->in));
    tb_ref(t, ot, 2, tb_vec_i32(t, o->nout, o->out));
    if (o->nint)
      tb_ref(t, ot, 8, tb_vec_i32(t, o->nint, o->it));
  }
  tb_ref(t, sg, 1, tb_vec_i32(t, m->ni, m->in));
  tb_ref(t, sg, 2, tb_vec_i32(t, m->nout, m->out));
}

/* Builds m into a new heap buffer of exactly *len bytes. */
static uint8_t *tb_build(const struct tb_model *m, size_t *len)
{
  struct tb *t = calloc(1, sizeof *t);
  ck_assert_ptr_nonnull(t);
  t->pos = 8;
  memcpy(t->b + 4, "TFL3", 4);
  size_t model = tb_table(t, 7, 1u | 2u | 4u | 16u);
  wr32(t->b, (uint32_t)model);
  tb_u32(t, model, 0, 3);
  size_t cv = tb_take(t, 4 + 4 * (size_t)m->n_opcodes);
  wr32(t->b + cv, (uint32_t)m->n_opcodes);
  tb_ref(t, model, 1, cv);
  for (int i = 0; i < m->n_opcodes; i++) {
    size_t oc = tb_table(t, 4, 8u);
    tb_ref_at(t, cv + 4 + 4 * (size_t)i, oc);
    tb_u32(t, oc, 3, (uint32_t)m->opcodes[i]);
  }
  int n_sg = 1 + m->extra_subgraphs;
  size_t sv = tb_take(t, 4 + 4 * (size_t)n_sg);
  wr32(t->b + sv, (uint32_t)n_sg);
  tb_ref(t, model, 2, sv);
  for (int s = 0; s < n_sg; s++) {
    size_t sg = tb_table(t, 4, 15u);
    tb_ref_at(t, sv + 4 + 4 * (size_t)s, sg);
    if (s == 0) {
      tb_subgraph(t, sg, m);
    } else {
      struct tb_model one;
      memset(&one, 0, sizeof one);
      one.nt = 1;
      one.t[0].nd = 1;
      one.t[0].shape[0] = 4;
      tb_subgraph(t, sg, &one);
    }
  }
  size_t bv = tb_take(t, 4 + 4 * (size_t)m->nb);
  wr32(t->b + bv, (uint32_t)m->nb);
  tb_ref(t, model, 4, bv);
  for (int j = 0; j < m->nb; j++) {
    size_t bt = tb_table(t, 1, m->buf_len[j] ? 1u : 0u);
    tb_ref_at(t, bv + 4 + 4 * (size_t)j, bt);
    if (m->buf_len[j]) {
      size_t dv = tb_take(t, 4 + m->buf_len[j]);
      wr32(t->b + dv, m->buf_len[j]);
      memset(t->b + dv + 4, 0x5a, m->buf_len[j]);
      tb_ref(t, bt, 0, dv);
    }
  }
  *len = t->pos;
  uint8_t *out = malloc(t->pos);
  ck_assert_ptr_nonnull(out);
  memcpy(out, t->b, t->pos);
  free(t);
  return out;
}

/* A small model exercising every rule:
 *  t0 input [1,8] f32 (32 B)      t1 const weights (buffer 1)
 *  t2 [2] int4 -> 1 B             t3 variable [4] f32 (16 B)
 *  t4 intermediate of op 1 [0]    t5 dequant output of const t1 [4] f32
 *  t6 STRING                      t7 output [3] int8 (3 B)
 *  t8 never used [5] f32          t9 [1] INT16 used only by op 2
 *  op0 FC(t0, t1, -1) -> t2;  op1 ADD(t2, t3) -> t9, intermediates t4;
 *  op2 DEQUANTIZE(t1) -> t5;  op3 ADD(t5, t9, t6) -> t7. */
static struct tb_model sample(void)
{
  struct tb_model m;
  memset(&m, 0, sizeof m);
  m.n_opcodes = 3;
  m.opcodes[0] = 9;  /* FULLY_CONNECTED */
  m.opcodes[1] = 0;  /* ADD */
  m.opcodes[2] = 6;  /* DEQUANTIZE */
  m.nb = 2;
  m.buf_len[1] = 16;
  m.nt = 10;
  struct tb_tensor t0 = {0, 2, {1, 8}, 0, {0}, 0, 0};
  struct tb_tensor t1 = {9, 1, {16}, 0, {0}, 1, 0};
  struct tb_tensor t2 = {17, 1, {2}, 0, {0}, 0, 0};
  struct tb_tensor t3 = {0, 1, {4}, 0, {0}, 0, 1};
  struct tb_tensor t4 = {0, 1, {0}, 0, {0}, 0, 0};
  struct tb_tensor t5 = {0, 1, {4}, 0, {0}, 0, 0};
  struct tb_tensor t6 = {5, 1, {1}, 0, {0}, 0, 0};
  struct tb_tensor t7 = {9, 1, {3}, 0, {0}, 0, 0};
  struct tb_tensor t8 = {0, 1, {5}, 0, {0}, 0, 0};
  struct tb_tensor t9 = {7, 1, {1}, 0, {0}, 0, 0};
  m.t[0] = t0; m.t[1] = t1; m.t[2] = t2; m.t[3] = t3; m.t[4] = t4;
  m.t[5] = t5; m.t[6] = t6; m.t[7] = t7; m.t[8] = t8; m.t[9] = t9;
  m.no = 4;
  struct tb_op o0 = {0, 3, 1, 0, {0, 1, -1}, {2}, {0}};
  struct tb_op o1 = {1, 2, 1, 1, {2, 3}, {9}, {4}};
  struct tb_op o2 = {2, 1, 1, 0, {1}, {5}, {0}};
  struct tb_op o3 = {1, 3, 1, 0, {5, 9, 6}, {7}, {0}};
  m.ops[0] = o0; m.ops[1] = o1; m.ops[2] = o2; m.ops[3] = o3;
  m.ni = 1;
  m.in[0] = 0;
  m.nout = 1;
  m.out[0] = 7;
  return m;
}

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

static const char *const models[] = {
    "hello_world_float",   "micro_speech_quantized",
    "trained_lstm",        "micro_speech_lstm",
    "dtln_noise_suppression", "magic_wand",
    "keyword_scrambled",   "audio_preprocessor_int8",
    "person_detect",       "mobilenet_v2_quantized_1x3x224x224",
    "face_detection_short_range",
};
#define N_MODELS (sizeof models / sizeof models[0])

/* The README's reference figures: ops, planned, naive, lower bound. */
static const uint64_t figures[N_MODELS][4] = {
    {3, 4, 136, 128},         {4, 5, 7928, 5960},
    {4, 7, 7856, 5536},       {4, 12, 20679, 16753},
    {4, 19, 1795, 1282},      {7, 8, 18848, 13824},
    {15, 23, 10958, 10528},   {22, 25, 12128, 2060},
    {31, 32, 241030, 55296},  {84, 85, 11571924, 2451840},
    {164, 91, 9898496, 1376256},
};

static uint8_t *load_model(const char *name, size_t *len)
{
  char path[512];
  snprintf(path, sizeof path, "%s/models/%s.tflite", tu_data_dir(), name);
  uint8_t *b = (uint8_t *)tu_read_file(path, len);
  ck_assert_msg(b != NULL, "cannot read %s", path);
  return b;
}

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
  const char *name = models[_i];
  char err[ARENA_ERR_LEN], csv[256];
  size_t len;
  uint8_t *b = load_model(name, &len);
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
  uint8_t *b = load_model("face_detection_short_range", &len);
  struct planner_tflite_model m;
  struct planner_tflite_options o = {1, 0, 0};
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
  uint8_t *b = load_model("keyword_scrambled", &len);
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
  struct tb_model tm = sample();
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
  struct planner_tflite_options o = {1, 0, 0};
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
  struct tb_model tm = sample();
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
  struct tb_model tm = sample();
  tm.t[0].nsig = 2;
  tm.t[0].sig[0] = -1;
  tm.t[0].sig[1] = 8;
  uint8_t *b = tb_build(&tm, &len);
  struct planner_tflite_model m;
  struct planner_tflite_options o = {0, 5, 0};
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

/* ---- bad files ---------------------------------------------------------------- */

/* Reads a heap copy of exactly len bytes, so ASan sees any overread. */
static int read_copy(const uint8_t *b, size_t len, char *err)
{
  uint8_t *c = malloc(len ? len : 1);
  ck_assert_ptr_nonnull(c);
  memcpy(c, b, len);
  struct planner_tflite_model m;
  planner_tflite_init(&m);
  int rc = planner_tflite_read(c, len, NULL, &m, err);
  if (rc == 0)
    ck_assert_uint_gt(m.n_planned, 0);
  else
    ck_assert_ptr_null(m.tensors);
  planner_tflite_cleanup(&m);
  free(c);
  return rc;
}

START_TEST(test_empty_and_short)
{
  char err[ARENA_ERR_LEN];
  ck_assert_int_eq(read_copy((const uint8_t *)"", 0, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "too short"));
  ck_assert_int_eq(read_copy((const uint8_t *)"\x08\0\0\0TFL", 7, err),
                   ARENA_EPARSE);
  ck_assert_int_eq(planner_tflite_is_model("\x08\0\0\0TFL", 7), 0);
  ck_assert_int_eq(planner_tflite_is_model(NULL, 0), 0);
  struct planner_tflite_model m;
  planner_tflite_init(&m);
  ck_assert_int_eq(planner_tflite_read(NULL, 5, NULL, &m, err), ARENA_EINVAL);
  ck_assert_int_eq(planner_tflite_read("x", 1, NULL, NULL, err), ARENA_EINVAL);
  planner_tflite_cleanup(NULL);
}
END_TEST

START_TEST(test_wrong_magic)
{
  char err[ARENA_ERR_LEN];
  size_t len;
  uint8_t *b = load_model("hello_world_float", &len);
  b[6] = 'X';
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "TFL3"));
  ck_assert_int_eq(planner_tflite_is_model(b, len), 0);
  free(b);
}
END_TEST

START_TEST(test_truncated_everywhere)
{
  char err[ARENA_ERR_LEN];
  size_t len;
  uint8_t *b = load_model("hello_world_float", &len);
  size_t errors = 0;
  for (size_t n = 0; n < len; n++) {
    int rc = read_copy(b, n, err);
    if (rc != 0) {
      errors++;
      ck_assert_msg(err[0] != '\0', "no message at length %zu", n);
    }
  }
  /* Builders put the root table first and data last, so some prefixes
   * stay readable only if nothing referenced lies past the cut; most must
   * fail, and none may crash (ASan checks the reads). */
  ck_assert_uint_gt(errors, len * 9 / 10);
  free(b);
}
END_TEST

START_TEST(test_root_outside)
{
  char err[ARENA_ERR_LEN];
  size_t len;
  uint8_t *b = load_model("hello_world_float", &len);
  wr32(b, (uint32_t)len + 100);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "outside the file"));
  wr32(b, 0xfffffffcu);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  wr32(b, 4);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "header"));
  free(b);
}
END_TEST

/* Position of the vector that field `field` of the root table names. */
static size_t field_target(const uint8_t *b, unsigned field)
{
  size_t root = rd32(b);
  size_t vt = root - (size_t)(int32_t)rd32(b + root);
  size_t slot = root + (b[vt + 4 + 2 * field] | (b[vt + 5 + 2 * field] << 8));
  return slot + rd32(b + slot);
}

START_TEST(test_huge_vector_length)
{
  char err[ARENA_ERR_LEN];
  size_t len;
  uint8_t *b = load_model("hello_world_float", &len);
  size_t sv = field_target(b, 2); /* subgraphs */
  wr32(b + sv, 0xffffffffu);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "runs past the end"));
  free(b);
  b = load_model("hello_world_float", &len);
  size_t bv = field_target(b, 4); /* buffers */
  wr32(b + bv, 0x40000000u);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  free(b);
}
END_TEST

START_TEST(test_cyclic_offset)
{
  char err[ARENA_ERR_LEN];
  size_t len;
  uint8_t *b = load_model("hello_world_float", &len);
  size_t root = rd32(b);
  size_t vt = root - (size_t)(int32_t)rd32(b + root);
  size_t slot = root + (b[vt + 8] | (b[vt + 9] << 8)); /* subgraphs */
  wr32(b + slot, 0); /* points at itself */
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "points at itself"));
  free(b);
  /* A table whose vtable is itself: soffset 0. */
  b = load_model("hello_world_float", &len);
  wr32(b + root, 0);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  free(b);
}
END_TEST

START_TEST(test_shared_vectors_capped)
{
  /* Every operator names the same long input list: the work cap stops
   * the reader long before it would have visited n_ops * list elements. */
  char err[ARENA_ERR_LEN];
  size_t len;
  /* Hand-build: ops vector of N entries all pointing at one op table whose
   * inputs vector has L entries. */
  enum { N = 4000, L = 4000 };
  uint8_t *b = calloc(1, 1 << 16);
  ck_assert_ptr_nonnull(b);
  struct tb *w = calloc(1, sizeof *w);
  ck_assert_ptr_nonnull(w);
  w->pos = 8;
  memcpy(w->b + 4, "TFL3", 4);
  size_t model = tb_table(w, 7, 1u | 2u | 4u | 16u);
  wr32(w->b, (uint32_t)model);
  size_t cv = tb_take(w, 8);
  wr32(w->b + cv, 1);
  tb_ref(w, model, 1, cv);
  size_t oc = tb_table(w, 4, 0);
  tb_ref_at(w, cv + 4, oc);
  size_t sv = tb_take(w, 8);
  wr32(w->b + sv, 1);
  tb_ref(w, model, 2, sv);
  size_t sg = tb_table(w, 4, 1u | 8u);
  tb_ref_at(w, sv + 4, sg);
  int32_t shape[1] = {1};
  size_t tv = tb_take(w, 8);
  wr32(w->b + tv, 1);
  tb_ref(w, sg, 0, tv);
  size_t tt = tb_table(w, 8, 1u);
  tb_ref_at(w, tv + 4, tt);
  tb_ref(w, tt, 0, tb_vec_i32(w, 1, shape));
  size_t ov = tb_take(w, 4 + 4 * N);
  wr32(w->b + ov, N);
  tb_ref(w, sg, 3, ov);
  size_t op = tb_table(w, 9, 2u);
  for (int k = 0; k < N; k++)
    tb_ref_at(w, ov + 4 + 4 * (size_t)k, op);
  size_t iv = tb_take(w, 4 + 4 * L); /* L zeros: tensor 0 each time */
  wr32(w->b + iv, L);
  tb_ref(w, op, 1, iv);
  size_t bv = tb_take(w, 4);
  tb_ref(w, model, 4, bv);
  len = w->pos;
  memcpy(b, w->b, len);
  free(w);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_ETOOBIG);
  ck_assert_ptr_nonnull(strstr(err, "too many for its size"));
  free(b);
}
END_TEST

START_TEST(test_bad_indexes)
{
  char err[ARENA_ERR_LEN];
  size_t len;
  struct tb_model tm = sample();
  tm.ops[1].in[1] = 10; /* past the 10 tensors */
  uint8_t *b = tb_build(&tm, &len);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "operator 1: inputs names tensor 10"));
  free(b);
  tm = sample();
  tm.ops[0].in[2] = -2;
  b = tb_build(&tm, &len);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  free(b);
  tm = sample();
  tm.t[3].buffer = 7;
  b = tb_build(&tm, &len);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "buffer index 7 out of range"));
  free(b);
  tm = sample();
  tm.ops[2].opcode = 3;
  b = tb_build(&tm, &len);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "opcode index 3"));
  free(b);
  tm = sample();
  tm.out[0] = 99;
  b = tb_build(&tm, &len);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  free(b);
  tm = sample();
  tm.t[2].type = 77;
  b = tb_build(&tm, &len);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EUNSUPPORTED);
  free(b);
  tm = sample();
  tm.t[2].nd = 4;
  tm.t[2].shape[0] = tm.t[2].shape[1] = tm.t[2].shape[2] =
      tm.t[2].shape[3] = 0x7fffffff;
  b = tb_build(&tm, &len);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EOVERFLOW);
  free(b);
}
END_TEST

START_TEST(test_random_damage)
{
  /* Flip bytes of a real model at random: each result is either read or
   * refused with a message, never a crash or an overread. */
  char err[ARENA_ERR_LEN];
  size_t len;
  uint8_t *orig = load_model("magic_wand", &len);
  uint8_t *b = malloc(len);
  ck_assert_ptr_nonnull(b);
  uint64_t seed = 42;
  for (int round = 0; round < 400; round++) {
    memcpy(b, orig, len);
    int flips = 1 + (int)tu_rand_range(&seed, 0, 7);
    for (int k = 0; k < flips; k++)
      b[tu_rand_range(&seed, 0, len - 1)] = (uint8_t)tu_rand(&seed);
    int rc = read_copy(b, len, err);
    if (rc != 0)
      ck_assert(err[0] != '\0');
  }
  free(b);
  free(orig);
}
END_TEST

/* ---- offline plans ------------------------------------------------------------ */

START_TEST(test_embed_round_trip)
{
  const char *name = models[_i];
  char err[ARENA_ERR_LEN];
  size_t len, out_len, nb;
  uint8_t *b = load_model(name, &len), *out = NULL;
  struct planner_tflite_model m, again;
  struct planner_tflite_options keep = {1, 0, 0};
  struct planner_plan p;
  struct planner_options o;
  int32_t *back = NULL;
  planner_tflite_init(&m);
  planner_tflite_init(&again);
  planner_plan_init(&p);
  planner_options_init(&o);
  o.alignment = 16;
  ck_assert_int_eq(planner_tflite_read(b, len, &keep, &m, err), 0);
  struct planner_graph g = planner_tflite_graph(&m);
  ck_assert_int_eq(planner_run(&g, &o, &p, err), 0);
  size_t n = (size_t)m.n_tensors_all;
  int32_t *offs = malloc(n * sizeof *offs);
  ck_assert_ptr_nonnull(offs);
  for (size_t i = 0; i < n; i++)
    offs[i] = -1;
  for (size_t i = 0; i < m.n_planned; i++)
    offs[m.tensors[i].id] = (int32_t)p.offsets[i];
  ck_assert_int_eq(planner_tflite_offline_plan(b, len, &back, &nb, err),
                   ARENA_ENOENT);
  int rc = planner_tflite_embed(b, len, offs, n, &out, &out_len, err);
  ck_assert_msg(rc == 0, "%s: %s", name, err);
  /* Header, then a block of K (a multiple of 64), then bytes 8.. intact. */
  size_t k = out_len - len;
  ck_assert_uint_eq(k % 64, 0);
  ck_assert_int_eq(memcmp(out + 4, "TFL3", 4), 0);
  ck_assert_int_eq(memcmp(out + 8 + k, b + 8, len - 8), 0);
  /* The result reads as the same graph and carries the plan. */
  ck_assert_int_eq(planner_tflite_read(out, out_len, &keep, &again, err), 0);
  ck_assert_int_eq(again.has_offline_plan, 1);
  ck_assert_uint_eq(again.n_planned, m.n_planned);
  for (size_t i = 0; i < m.n_planned; i++) {
    ck_assert_uint_eq(again.tensors[i].id, m.tensors[i].id);
    ck_assert_uint_eq(again.tensors[i].size, m.tensors[i].size);
    ck_assert_int_eq(again.tensors[i].first, m.tensors[i].first);
    ck_assert_int_eq(again.tensors[i].last, m.tensors[i].last);
  }
  ck_assert_int_eq(planner_tflite_offline_plan(out, out_len, &back, &nb, err),
                   0);
  ck_assert_uint_eq(nb, n);
  ck_assert_int_eq(memcmp(back, offs, n * sizeof *offs), 0);
  /* The words before the offsets: version 1, subgraph 0, N. */
  uint32_t at = 0;
  for (size_t q = 8; q + 12 <= 8 + k; q += 4)
    if (rd32(out + q) == 1 && rd32(out + q + 4) == 0 &&
        rd32(out + q + 8) == n && (q + 12) % 4 == 0) {
      at = (uint32_t)q;
      break;
    }
  ck_assert_uint_ne(at, 0);
  ck_assert_uint_eq(at % 16, 0); /* data is 16-byte aligned */
  free(back);
  back = NULL;
  /* Embedding again replaces the entry instead of adding a second. */
  for (size_t i = 0; i < n; i++)
    offs[i] = offs[i] < 0 ? -1 : offs[i] + 16;
  uint8_t *out2 = NULL;
  size_t out2_len = 0;
  ck_assert_int_eq(planner_tflite_embed(out, out_len, offs, n, &out2,
                                        &out2_len, err),
                   0);
  ck_assert_int_eq(planner_tflite_offline_plan(out2, out2_len, &back, &nb, err),
                   0);
  ck_assert_int_eq(memcmp(back, offs, n * sizeof *offs), 0);
  free(back);
  free(out2);
  /* A wrong count is refused. */
  ck_assert_int_eq(planner_tflite_embed(b, len, offs, n - 1, &out2, &out2_len,
                                        err),
                   ARENA_EINVAL);
  ck_assert_ptr_null(out2);
  free(offs);
  free(out);
  free(b);
  planner_plan_cleanup(&p);
  planner_tflite_cleanup(&m);
  planner_tflite_cleanup(&again);
}
END_TEST

START_TEST(test_embed_bad_input)
{
  char err[ARENA_ERR_LEN];
  uint8_t *out = (uint8_t *)"x";
  size_t out_len = 5;
  int32_t one = -1;
  ck_assert_int_eq(planner_tflite_embed("\x08\0\0\0ABCD", 8, &one, 1, &out,
                                        &out_len, err),
                   ARENA_EPARSE);
  ck_assert_ptr_null(out);
  ck_assert_uint_eq(out_len, 0);
}
END_TEST

Suite *tflite_suite(void)
{
  Suite *s = suite_create("tflite");
  TCase *tc = tcase_create("models");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_reference_models, 0, (int)N_MODELS);
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
  tcase_add_test(tc, test_empty_and_short);
  tcase_add_test(tc, test_wrong_magic);
  tcase_add_test(tc, test_truncated_everywhere);
  tcase_add_test(tc, test_root_outside);
  tcase_add_test(tc, test_huge_vector_length);
  tcase_add_test(tc, test_cyclic_offset);
  tcase_add_test(tc, test_shared_vectors_capped);
  tcase_add_test(tc, test_bad_indexes);
  tcase_add_test(tc, test_random_damage);
  suite_add_tcase(s, tc);
  tc = tcase_create("embed");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_embed_round_trip, 0, (int)N_MODELS);
  tcase_add_test(tc, test_embed_bad_input);
  suite_add_tcase(s, tc);
  return s;
}

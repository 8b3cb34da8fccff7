/*
 * check_tflite_util.c - helpers shared by the parts of the tflite suite,
 * declared in check_tflite.h: a tiny forward FlatBuffers writer for
 * synthetic test models, the sample model that exercises every lifetime
 * rule, and access to the bundled real models.
 *
 * The writer puts parents before children, so every reference points
 * forward, as the format requires. All its scalar fields take 4-byte
 * slots, which a reader of 1-byte fields reads correctly in little endian.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_tflite.h"
#include "testutil.h"

/* ---- a small FlatBuffers writer for test models --------------------------- */

void tb_wr32(uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

uint32_t tb_rd32(const uint8_t *p)
{
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}

size_t tb_take(struct tb *t, size_t n)
{
  t->pos = (t->pos + 3) & ~(size_t)3;
  size_t at = t->pos;
  t->pos += n;
  ck_assert_uint_le(t->pos, TB_CAP);
  return at;
}

/* A table with n_fields 4-byte slots; bit i of present = field i set. */
size_t tb_table(struct tb *t, unsigned n_fields, uint32_t present)
{
  size_t vt = tb_take(t, 4 + 2 * n_fields);
  t->b[vt] = (uint8_t)(4 + 2 * n_fields);
  t->b[vt + 2] = (uint8_t)(4 + 4 * n_fields);
  for (unsigned i = 0; i < n_fields; i++)
    if (present & (1u << i))
      t->b[vt + 4 + 2 * i] = (uint8_t)(4 + 4 * i);
  size_t tab = tb_take(t, 4 + 4 * n_fields);
  tb_wr32(t->b + tab, (uint32_t)(tab - vt));
  return tab;
}

static void tb_u32(struct tb *t, size_t tab, unsigned field, uint32_t v)
{
  tb_wr32(t->b + tab + 4 + 4 * field, v);
}

void tb_ref_at(struct tb *t, size_t slot, size_t target)
{
  ck_assert_uint_gt(target, slot);
  tb_wr32(t->b + slot, (uint32_t)(target - slot));
}

void tb_ref(struct tb *t, size_t tab, unsigned field, size_t target)
{
  tb_ref_at(t, tab + 4 + 4 * field, target);
}

size_t tb_vec_i32(struct tb *t, int n, const int32_t *v)
{
  size_t at = tb_take(t, 4 + 4 * (size_t)n);
  tb_wr32(t->b + at, (uint32_t)n);
  for (int i = 0; i < n; i++)
    tb_wr32(t->b + at + 4 + 4 * (size_t)i, (uint32_t)v[i]);
  return at;
}

static void tb_subgraph(struct tb *t, size_t sg, const struct tb_model *m)
{
  size_t tv = tb_take(t, 4 + 4 * (size_t)m->nt);
  tb_wr32(t->b + tv, (uint32_t)m->nt);
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
  tb_wr32(t->b + ov, (uint32_t)m->no);
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
uint8_t *tb_build(const struct tb_model *m, size_t *len)
{
  struct tb *t = calloc(1, sizeof *t);
  ck_assert_ptr_nonnull(t);
  t->pos = 8;
  memcpy(t->b + 4, "TFL3", 4);
  size_t model = tb_table(t, 7, 1u | 2u | 4u | 16u);
  tb_wr32(t->b, (uint32_t)model);
  tb_u32(t, model, 0, 3);
  size_t cv = tb_take(t, 4 + 4 * (size_t)m->n_opcodes);
  tb_wr32(t->b + cv, (uint32_t)m->n_opcodes);
  tb_ref(t, model, 1, cv);
  for (int i = 0; i < m->n_opcodes; i++) {
    size_t oc = tb_table(t, 4, 8u);
    tb_ref_at(t, cv + 4 + 4 * (size_t)i, oc);
    tb_u32(t, oc, 3, (uint32_t)m->opcodes[i]);
  }
  int n_sg = 1 + m->extra_subgraphs;
  size_t sv = tb_take(t, 4 + 4 * (size_t)n_sg);
  tb_wr32(t->b + sv, (uint32_t)n_sg);
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
  tb_wr32(t->b + bv, (uint32_t)m->nb);
  tb_ref(t, model, 4, bv);
  for (int j = 0; j < m->nb; j++) {
    size_t bt = tb_table(t, 1, m->buf_len[j] ? 1u : 0u);
    tb_ref_at(t, bv + 4 + 4 * (size_t)j, bt);
    if (m->buf_len[j]) {
      size_t dv = tb_take(t, 4 + m->buf_len[j]);
      tb_wr32(t->b + dv, m->buf_len[j]);
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
struct tb_model tb_sample(void)
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

/* ---- the bundled real models --------------------------------------------- */

static const char *const models[] = {
    "hello_world_float",   "micro_speech_quantized",
    "trained_lstm",        "micro_speech_lstm",
    "dtln_noise_suppression", "magic_wand",
    "keyword_scrambled",   "audio_preprocessor_int8",
    "person_detect",       "mobilenet_v2_quantized_1x3x224x224",
    "face_detection_short_range",
};
_Static_assert(sizeof models / sizeof models[0] == TFL_N_MODELS,
               "TFL_N_MODELS counts the models");

const char *tfl_model_name(int i)
{
  return models[i];
}

uint8_t *tfl_load_model(const char *name, size_t *len)
{
  char path[512];
  snprintf(path, sizeof path, "%s/models/%s.tflite", tu_data_dir(), name);
  uint8_t *b = (uint8_t *)tu_read_file(path, len);
  ck_assert_msg(b != NULL, "cannot read %s", path);
  return b;
}

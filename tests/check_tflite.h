/*
 * check_tflite.h - declarations shared by the parts of the tflite suite
 * (tests/check_tflite.c and tests/check_tflite_*.c): the small FlatBuffers
 * writer for synthetic test models and its model description (tb_*), the
 * bundled real models (tfl_*), both defined in check_tflite_util.c, and
 * the functions that add the tests of check_tflite_bad.c,
 * check_tflite_embed.c, check_tflite_scratch.c and check_tflite_inplace.c
 * to their TCases (tflite_add_*).
 */
#ifndef ARENA_CHECK_TFLITE_H
#define ARENA_CHECK_TFLITE_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

/* ---- a small FlatBuffers writer for test models --------------------------- */

#define TB_CAP 65536

struct tb {
  uint8_t b[TB_CAP]; /* the file */
  size_t pos;        /* bytes used */
};

/* Little-endian 32-bit store and load. */
void tb_wr32(uint8_t *p, uint32_t v);
uint32_t tb_rd32(const uint8_t *p);

/* Reserves n bytes at the next 4-byte boundary; returns their position. */
size_t tb_take(struct tb *t, size_t n);
/* A table with n_fields 4-byte slots; bit i of present = field i set.
 * Returns the table's position. */
size_t tb_table(struct tb *t, unsigned n_fields, uint32_t present);
/* Makes the offset at `slot` point forward at `target`. */
void tb_ref_at(struct tb *t, size_t slot, size_t target);
/* Makes field `field` of the table at `tab` point forward at `target`. */
void tb_ref(struct tb *t, size_t tab, unsigned field, size_t target);
/* An int32 vector of n elements; returns its position. */
size_t tb_vec_i32(struct tb *t, int n, const int32_t *v);

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

/* Builds m into a new heap buffer of exactly *len bytes (free()). */
uint8_t *tb_build(const struct tb_model *m, size_t *len);
/* A small model exercising every lifetime rule; its tensors and operators
 * are listed at the definition. */
struct tb_model tb_sample(void);

/* ---- the bundled real models --------------------------------------------- */

/* Number of models in tests/data/models/, and the name of model i (0 to
 * TFL_N_MODELS - 1), always in the same order. */
#define TFL_N_MODELS 11
const char *tfl_model_name(int i);
/* Reads models/NAME.tflite from the test data directory (owned, free());
 * fails the test when it cannot. */
uint8_t *tfl_load_model(const char *name, size_t *len);

/* ---- the parts of the suite ---------------------------------------------- */

void tflite_add_bad(TCase *tc);   /* check_tflite_bad.c */
void tflite_add_embed(TCase *tc); /* check_tflite_embed.c */
void tflite_add_scratch(TCase *tc); /* check_tflite_scratch.c */
void tflite_add_inplace(TCase *tc); /* check_tflite_inplace.c */

#endif

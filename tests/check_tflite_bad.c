/*
 * check_tflite_bad.c - the "bad" cases of the tflite suite: empty, short
 * and wrongly tagged files, every truncation of a real model, offsets
 * outside the file or pointing at themselves, huge vector lengths, a
 * shared-vector work bomb, bad indexes and overflowing shapes in the
 * synthetic sample model, and random damage. Each file is read from a heap
 * copy of exactly its length, so ASan sees any overread.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tflite.h"
#include "testutil.h"
#include "check_tflite.h"

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
  uint8_t *b = tfl_load_model("hello_world_float", &len);
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
  uint8_t *b = tfl_load_model("hello_world_float", &len);
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
  uint8_t *b = tfl_load_model("hello_world_float", &len);
  tb_wr32(b, (uint32_t)len + 100);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "outside the file"));
  tb_wr32(b, 0xfffffffcu);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  tb_wr32(b, 4);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "header"));
  free(b);
}
END_TEST

/* Position of the vector that field `field` of the root table names. */
static size_t field_target(const uint8_t *b, unsigned field)
{
  size_t root = tb_rd32(b);
  size_t vt = root - (size_t)(int32_t)tb_rd32(b + root);
  size_t slot = root + (b[vt + 4 + 2 * field] | (b[vt + 5 + 2 * field] << 8));
  return slot + tb_rd32(b + slot);
}

START_TEST(test_huge_vector_length)
{
  char err[ARENA_ERR_LEN];
  size_t len;
  uint8_t *b = tfl_load_model("hello_world_float", &len);
  size_t sv = field_target(b, 2); /* subgraphs */
  tb_wr32(b + sv, 0xffffffffu);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "runs past the end"));
  free(b);
  b = tfl_load_model("hello_world_float", &len);
  size_t bv = field_target(b, 4); /* buffers */
  tb_wr32(b + bv, 0x40000000u);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  free(b);
}
END_TEST

START_TEST(test_cyclic_offset)
{
  char err[ARENA_ERR_LEN];
  size_t len;
  uint8_t *b = tfl_load_model("hello_world_float", &len);
  size_t root = tb_rd32(b);
  size_t vt = root - (size_t)(int32_t)tb_rd32(b + root);
  size_t slot = root + (b[vt + 8] | (b[vt + 9] << 8)); /* subgraphs */
  tb_wr32(b + slot, 0); /* points at itself */
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "points at itself"));
  free(b);
  /* A table whose vtable is itself: soffset 0. */
  b = tfl_load_model("hello_world_float", &len);
  tb_wr32(b + root, 0);
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
  tb_wr32(w->b, (uint32_t)model);
  size_t cv = tb_take(w, 8);
  tb_wr32(w->b + cv, 1);
  tb_ref(w, model, 1, cv);
  size_t oc = tb_table(w, 4, 0);
  tb_ref_at(w, cv + 4, oc);
  size_t sv = tb_take(w, 8);
  tb_wr32(w->b + sv, 1);
  tb_ref(w, model, 2, sv);
  size_t sg = tb_table(w, 4, 1u | 8u);
  tb_ref_at(w, sv + 4, sg);
  int32_t shape[1] = {1};
  size_t tv = tb_take(w, 8);
  tb_wr32(w->b + tv, 1);
  tb_ref(w, sg, 0, tv);
  size_t tt = tb_table(w, 8, 1u);
  tb_ref_at(w, tv + 4, tt);
  tb_ref(w, tt, 0, tb_vec_i32(w, 1, shape));
  size_t ov = tb_take(w, 4 + 4 * N);
  tb_wr32(w->b + ov, N);
  tb_ref(w, sg, 3, ov);
  size_t op = tb_table(w, 9, 2u);
  for (int k = 0; k < N; k++)
    tb_ref_at(w, ov + 4 + 4 * (size_t)k, op);
  size_t iv = tb_take(w, 4 + 4 * L); /* L zeros: tensor 0 each time */
  tb_wr32(w->b + iv, L);
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
  struct tb_model tm = tb_sample();
  tm.ops[1].in[1] = 10; /* past the 10 tensors */
  uint8_t *b = tb_build(&tm, &len);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "operator 1: inputs names tensor 10"));
  free(b);
  tm = tb_sample();
  tm.ops[0].in[2] = -2;
  b = tb_build(&tm, &len);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  free(b);
  tm = tb_sample();
  tm.t[3].buffer = 7;
  b = tb_build(&tm, &len);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "buffer index 7 out of range"));
  free(b);
  tm = tb_sample();
  tm.ops[2].opcode = 3;
  b = tb_build(&tm, &len);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  ck_assert_ptr_nonnull(strstr(err, "opcode index 3"));
  free(b);
  tm = tb_sample();
  tm.out[0] = 99;
  b = tb_build(&tm, &len);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EPARSE);
  free(b);
  tm = tb_sample();
  tm.t[2].type = 77;
  b = tb_build(&tm, &len);
  ck_assert_int_eq(read_copy(b, len, err), ARENA_EUNSUPPORTED);
  free(b);
  tm = tb_sample();
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
  uint8_t *orig = tfl_load_model("magic_wand", &len);
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

void tflite_add_bad(TCase *tc)
{
  tcase_add_test(tc, test_empty_and_short);
  tcase_add_test(tc, test_wrong_magic);
  tcase_add_test(tc, test_truncated_everywhere);
  tcase_add_test(tc, test_root_outside);
  tcase_add_test(tc, test_huge_vector_length);
  tcase_add_test(tc, test_cyclic_offset);
  tcase_add_test(tc, test_shared_vectors_capped);
  tcase_add_test(tc, test_bad_indexes);
  tcase_add_test(tc, test_random_damage);
}

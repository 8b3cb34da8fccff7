/*
 * check_tflite_embed.c - the "embed" cases of the tflite suite: for every
 * bundled model, a plan embedded as offline-plan metadata reads back as
 * the same graph with the same offsets (in-place pairs at one offset
 * included), embedding again replaces the entry, and wrong counts and
 * non-models are refused.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "tflite.h"
#include "check_tflite.h"

START_TEST(test_embed_round_trip)
{
  const char *name = tfl_model_name(_i);
  char err[ARENA_ERR_LEN];
  size_t len, out_len, nb;
  uint8_t *b = tfl_load_model(name, &len), *out = NULL;
  struct planner_tflite_model m, again;
  struct planner_tflite_options keep = {.keep_dequant = 1};
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
  /* In-place pairs give two tensors one offset; the writer takes that. */
  size_t equal = 0;
  for (size_t i = 0; i < m.n_planned; i++)
    equal += m.tensors[i].has_alias && m.tensors[i].size &&
             offs[m.tensors[i].alias] == offs[m.tensors[i].id];
  ck_assert_uint_eq(equal, p.n_shared);
  if (!strcmp(name, "face_detection_short_range"))
    ck_assert_uint_eq(equal, 37);
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
    if (tb_rd32(out + q) == 1 && tb_rd32(out + q + 4) == 0 &&
        tb_rd32(out + q + 8) == n && (q + 12) % 4 == 0) {
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

void tflite_add_embed(TCase *tc)
{
  tcase_add_loop_test(tc, test_embed_round_trip, 0, (int)TFL_N_MODELS);
  tcase_add_test(tc, test_embed_bad_input);
}

/*
 * fuzz_tflite.c - libFuzzer target for the TFLite reader and the offline
 * plan writer (planner/tflite.h). Built and run by `make fuzz`.
 *
 * Every input is read with the default options, with keep_dequant and a
 * batch size, and searched for an offline plan. When the reader accepts
 * it, a plan of -1 words is embedded and the result must read back to the
 * same graph: the writer may only add, never break, a valid model.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "tflite.h"

#define FUZZ_MAX_EMBED_TENSORS 4096u /* keep each run fast */

static void check_embed(const uint8_t *data, size_t size,
                        const struct planner_tflite_model *m)
{
  char err[ARENA_ERR_LEN];
  size_t n = (size_t)m->n_tensors_all;
  if (n > FUZZ_MAX_EMBED_TENSORS)
    return;
  int32_t *offs = malloc(n * sizeof *offs + 1);
  if (!offs)
    return;
  for (size_t i = 0; i < n; i++)
    offs[i] = (int32_t)i;
  uint8_t *out = NULL;
  size_t out_len = 0;
  if (planner_tflite_embed(data, size, offs, n, &out, &out_len, err) == 0) {
    struct planner_tflite_model again;
    int32_t *back = NULL;
    size_t nb = 0;
    planner_tflite_init(&again);
    if (planner_tflite_read(out, out_len, NULL, &again, err) != 0 ||
        again.n_planned != m->n_planned ||
        planner_tflite_offline_plan(out, out_len, &back, &nb, err) != 0 ||
        nb != n || (n && memcmp(back, offs, n * sizeof *offs) != 0))
      abort(); /* the writer broke a model the reader accepted */
    for (size_t i = 0; i < m->n_planned; i++)
      if (again.tensors[i].id != m->tensors[i].id ||
          again.tensors[i].size != m->tensors[i].size ||
          again.tensors[i].first != m->tensors[i].first ||
          again.tensors[i].last != m->tensors[i].last)
        abort();
    free(back);
    planner_tflite_cleanup(&again);
  }
  free(out);
  free(offs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char err[ARENA_ERR_LEN];
  struct planner_tflite_model m;
  struct planner_tflite_options o;
  int32_t *offs = NULL;
  size_t n = 0;
  planner_tflite_init(&m);
  memset(&o, 0, sizeof o);
  if (planner_tflite_read(data, size, &o, &m, err) == 0)
    check_embed(data, size, &m);
  o.keep_dequant = 1;
  o.batch = 3;
  (void)planner_tflite_read(data, size, &o, &m, err);
  planner_tflite_cleanup(&m);
  if (planner_tflite_offline_plan(data, size, &offs, &n, err) == 0)
    free(offs);
  return 0;
}

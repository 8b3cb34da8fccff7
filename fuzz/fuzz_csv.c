/*
 * fuzz_csv.c - libFuzzer target for the CSV readers (planner/graph_csv.h).
 * Built and run by `make fuzz`.
 *
 * Any bytes go to planner_csv_parse. An accepted text must give a sane
 * result (at least one row, a known dialect, lifetimes in order), and
 * writing that graph with planner_csv_write_alloc and parsing the text
 * again must give the same tensors: what the reader accepts, the writer
 * can express.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph_csv.h"
#include "planner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct planner_csv c, again;
  char err[ARENA_ERR_LEN];
  planner_csv_init(&c);
  planner_csv_init(&again);
  int rc = planner_csv_parse((const char *)data, size, &c, err);
  if (rc != 0) {
    if (c.tensors || c.n_tensors)
      abort(); /* a failed parse must leave *out empty */
    return 0;
  }
  if (c.n_tensors == 0 || c.format == PLANNER_CSV_NONE)
    abort();
  for (size_t i = 0; i < c.n_tensors; i++) {
    const struct planner_tensor *t = &c.tensors[i];
    if (t->first < 0 || t->last < t->first || t->pinned < PLANNER_NOT_PINNED)
      abort();
  }
  struct planner_graph g = planner_csv_graph(&c);
  char *text = NULL;
  size_t len = 0;
  if (planner_csv_write_alloc(&g, "fuzz\nround trip", &text, &len) != 0)
    abort();
  if (strlen(text) != len)
    abort();
  if (planner_csv_parse(text, len, &again, err) != 0 ||
      again.n_tensors != c.n_tensors || again.format != PLANNER_CSV_OURS)
    abort(); /* the writer produced text the reader refuses */
  for (size_t i = 0; i < c.n_tensors; i++) {
    const struct planner_tensor *a = &c.tensors[i], *b = &again.tensors[i];
    if (a->id != b->id || a->size != b->size || a->first != b->first ||
        a->last != b->last || a->align != b->align || a->pinned != b->pinned ||
        a->has_alias != b->has_alias || (a->has_alias && a->alias != b->alias))
      abort();
  }
  /* Whatever the graph, validation must answer without crashing. */
  struct planner_options o;
  planner_options_init(&o);
  (void)planner_validate(&g, &o, err);
  free(text);
  planner_csv_cleanup(&again);
  planner_csv_cleanup(&c);
  return 0;
}

/*
 * poison_db.c - a test tool, never installed: replaces every plan an
 * arenad cache database stores with its graph by a poisoned one, as a
 * hostile bundle or a damaged database could leave it, for the tests of
 * unusable plans (arenad_client.h, UNUSABLE PLANS).
 *
 * Usage: poison_db DB
 *   Run while no daemon has DB open. Each poisoned plan keeps every
 *   pinned tensor where it is and puts unpinned tensor i at (i + 1) *
 *   2^30: no two tensors overlap, so it passes planner_verify and the
 *   storage layer stores it, but its arena is gigabytes. It is stored as
 *   final (effort 4000000000, no background work), in place of the plan
 *   there (evicted first, since storage keeps the smaller plan).
 * Prints "poisoned KEY_INDEX: A -> B bytes" per plan and exits 0 when it
 * poisoned at least one, 1 when there was none, 2 on an error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "storage.h"

/* Copies r's plan into p with the unpinned tensors 2^30 apart. */
static int poison(const struct storage_record *r, struct planner_plan *p)
{
  const struct planner_graph *g = &r->graph;
  planner_plan_init(p);
  p->offsets = malloc((g->n_tensors ? g->n_tensors : 1) * sizeof *p->offsets);
  if (!p->offsets)
    return -1;
  p->n_offsets = g->n_tensors;
  p->lower_bound_bytes = r->plan.lower_bound_bytes;
  p->lower_bound_unshared_bytes = r->plan.lower_bound_unshared_bytes;
  p->naive_bytes = r->plan.naive_bytes;
  p->algo = r->plan.algo;
  p->bound = r->plan.bound;
  p->fit = r->opts.capacity ? PLANNER_FIT_NO : PLANNER_FIT_NA;
  for (size_t i = 0; i < g->n_tensors; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    p->offsets[i] = t->pinned != PLANNER_NOT_PINNED ? (uint64_t)t->pinned
                                                    : (uint64_t)(i + 1) << 30;
    if (t->size && p->offsets[i] + t->size > p->arena_bytes)
      p->arena_bytes = p->offsets[i] + t->size;
  }
  return 0;
}

int main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: poison_db DB\n");
    return 2;
  }
  char err[ARENA_ERR_LEN] = "";
  storage_t *st;
  if (storage_open(argv[1], NULL, &st, err) != 0) {
    fprintf(stderr, "poison_db: %s: %s\n", argv[1], err);
    return 2;
  }
  struct storage_export_query q = {NULL, 0, NULL, 0, 0, STORAGE_LIST_MAX};
  struct storage_record *recs = NULL;
  size_t n = 0;
  int rc = storage_export(st, &q, &recs, &n, NULL);
  if (rc) {
    fprintf(stderr, "poison_db: export: %s\n", storage_errmsg(st));
    storage_close(st);
    return 2;
  }
  int status = n ? 0 : 1;
  for (size_t i = 0; i < n && status == 0; i++) {
    const struct storage_record *r = &recs[i];
    struct storage_key k = {r->model_hash, r->model_hash_len, r->ranks,
                            r->n_inputs, r->dims};
    struct planner_plan p;
    uint64_t gone = 0;
    enum storage_put_result res;
    if (poison(r, &p) != 0 ||
        storage_evict(st, &k, r->graph_digest, r->options_digest, &gone) ||
        storage_put_effort(st, &k, &r->graph, &r->opts, &p, 0, 4000000000u,
                           1, &res) ||
        res != STORAGE_PUT_INSERTED) {
      fprintf(stderr, "poison_db: plan %zu: %s\n", i, storage_errmsg(st));
      status = 2;
    } else {
      printf("poisoned %zu: %llu -> %llu bytes\n", i,
             (unsigned long long)r->plan.arena_bytes,
             (unsigned long long)p.arena_bytes);
    }
    planner_plan_cleanup(&p);
  }
  storage_records_free(recs, n);
  storage_close(st);
  return status;
}

/*
 * poison_db.c - a test tool, never installed: replaces every plan an
 * arenad cache database stores with its graph by a poisoned one, as a
 * hostile bundle or a damaged database could leave it, for the tests of
 * unusable plans (arenad_client.h, UNUSABLE PLANS).
 *
 * Usage: poison_db DB
 *   Run while no daemon has DB open. Each poisoned plan is the naive
 *   layout of its graph (no two tensors share a byte): it passes
 *   planner_verify and is within the largest arena the storage layer
 *   accepts, but it is as large as a plan can be without being refused.
 *   It is stored as final (effort 1, no background work), in place of the
 *   plan there (evicted first, since storage keeps the smaller plan).
 * Prints "poisoned KEY_INDEX: A -> B bytes" per plan and exits 0 when it
 * poisoned at least one, 1 when there was none, 2 on an error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "storage.h"

/* Plans r's graph with the naive algorithm (every tensor its own bytes)
 * under r's options into p, as a plan that does no reuse at all. */
static int poison(const struct storage_record *r, struct planner_plan *p)
{
  struct planner_options o = r->opts;
  o.algo = PLANNER_ALGO_NAIVE;
  o.capacity = 0;
  planner_plan_init(p);
  if (planner_run(&r->graph, &o, p, NULL) != 0)
    return -1;
  p->algo = r->plan.algo;
  p->fit = r->opts.capacity ? PLANNER_FIT_NO : PLANNER_FIT_NA;
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
        storage_put_effort(st, &k, &r->graph, &r->opts, &p, 0, 1,
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

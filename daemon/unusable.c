/*
 * unusable.c - a client's report of a plan it cannot use (see
 * unusable.h): checked on the loop thread, then, on a worker, the stored
 * plan is compared with the naive plan of its stored graph and dropped
 * only when it is larger.
 */
#include "unusable.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "wire_plan.h"

Arenad__V1__Status unusable_select(const Arenad__V1__Unusable *u,
                                   struct keycodec_key *k, char *msg,
                                   size_t len)
{
  char err[ARENA_ERR_LEN] = "";
  memset(k, 0, sizeof *k);
  if (!u || u->model_hash.len == 0 ||
      u->model_hash.len > WIRE_MAX_MODEL_HASH) {
    snprintf(msg, len, "unusable: the model hash must be 1 to %u bytes",
             WIRE_MAX_MODEL_HASH);
    return ARENAD__V1__STATUS__INVALID_ARGUMENT;
  }
  if (u->graph_digest.len != PLANNER_DIGEST_LEN ||
      u->options_digest.len != PLANNER_DIGEST_LEN) {
    snprintf(msg, len, "unusable: the digests must be %u bytes each",
             PLANNER_DIGEST_LEN);
    return ARENAD__V1__STATUS__INVALID_ARGUMENT;
  }
  struct wire_shape sh;
  int rc = wire_shape_from_msg(u->input_shape, u->n_input_shape, &sh, err);
  if (rc) {
    snprintf(msg, len, "unusable: %s",
             rc == ARENA_ENOMEM ? "out of memory" : err);
    return rc == ARENA_ENOMEM ? ARENAD__V1__STATUS__INTERNAL
                              : ARENAD__V1__STATUS__INVALID_ARGUMENT;
  }
  /* Through the key's own encoding, so that *k is laid out and owned as
   * a decoded Evict.key is. */
  size_t klen;
  uint8_t *key = keycodec_encode(u->model_hash.data, u->model_hash.len,
                                 sh.ranks, sh.dims, sh.n_inputs,
                                 u->graph_digest.data,
                                 u->options_digest.data, &klen);
  wire_shape_cleanup(&sh);
  rc = key ? keycodec_decode(key, klen, k) : ARENA_ENOMEM;
  free(key);
  if (rc) {
    snprintf(msg, len, "out of memory");
    return ARENAD__V1__STATUS__INTERNAL;
  }
  return ARENAD__V1__STATUS__OK;
}

/* The arena the naive algorithm gives r's stored graph under r's
 * options; 0 when it cannot be computed. */
static uint64_t naive_arena(const struct storage_record *r)
{
  struct planner_options o = r->opts;
  struct planner_plan p;
  o.algo = PLANNER_ALGO_NAIVE;
  o.capacity = 0;
  planner_plan_init(&p);
  uint64_t a = planner_run(&r->graph, &o, &p, NULL) == 0 ? p.arena_bytes : 0;
  planner_plan_cleanup(&p);
  return a;
}

int unusable_drop(struct server *s, const Arenad__V1__Unusable *u,
                  const struct keycodec_key *k, uint64_t *evicted)
{
  *evicted = 0;
  size_t klen;
  uint8_t *key = keycodec_encode(k->hash, k->hash_len, k->ranks, k->dims,
                                 k->n_inputs, k->graph_digest,
                                 k->options_digest, &klen);
  if (!key)
    return ARENA_ENOMEM;
  struct storage_export_query q = {NULL, 0, key, klen, 0, 1};
  struct storage_record *recs = NULL;
  size_t n = 0;
  int rc = storage_export(s->st, &q, &recs, &n, NULL);
  free(key);
  if (rc || n == 0) {
    /* Nothing stored with its graph under the key: nothing to judge. */
    dlog(&s->log, DLOG_DEBUG, "unusable report: no stored plan with a "
         "graph under the key; kept");
    storage_records_free(recs, n);
    return rc;
  }
  const struct storage_record *r = &recs[0];
  uint64_t naive = naive_arena(r);
  if (r->plan.arena_bytes != u->arena_bytes || naive == 0 ||
      r->plan.arena_bytes <= naive) {
    dlog(&s->log, DLOG_INFO, "unusable report kept the stored plan: %"
         PRIu64 " bytes (the report says %" PRIu64 ", usable %" PRIu64
         "), naive plan %" PRIu64 " bytes",
         r->plan.arena_bytes, (uint64_t)u->arena_bytes,
         (uint64_t)u->usable_bytes, naive);
    storage_records_free(recs, n);
    return 0;
  }
  struct storage_key sk = {k->hash, k->hash_len, k->ranks, k->n_inputs,
                           k->dims};
  rc = storage_evict(s->st, &sk, k->graph_digest, k->options_digest,
                     evicted);
  if (rc == 0 && *evicted)
    dlog(&s->log, DLOG_NOTICE, "dropped a stored plan a client reported "
         "unusable: %" PRIu64 " bytes, above the naive plan of its graph "
         "(%" PRIu64 " bytes; usable %" PRIu64 "); the next request plans "
         "it again",
         r->plan.arena_bytes, naive, (uint64_t)u->usable_bytes);
  storage_records_free(recs, n);
  return rc;
}

/*
 * unusable.c - a client's report of a plan it cannot use (see
 * unusable.h): checked on the loop thread, then, on a worker, the stored
 * graph is planned again and the stored plan replaced only when the new
 * one is strictly smaller.
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

int unusable_fetch(struct server *s, const struct keycodec_key *k,
                   struct unusable_work *w)
{
  memset(w, 0, sizeof *w);
  planner_plan_init(&w->plan);
  size_t klen;
  uint8_t *key = keycodec_encode(k->hash, k->hash_len, k->ranks, k->dims,
                                 k->n_inputs, k->graph_digest,
                                 k->options_digest, &klen);
  if (!key)
    return ARENA_ENOMEM;
  struct storage_export_query q = {NULL, 0, key, klen, 0, 1};
  int rc = storage_export(s->st, &q, &w->recs, &w->n_recs, NULL);
  free(key);
  return rc;
}

int unusable_replan(struct server *s, const Arenad__V1__Unusable *u,
                    struct unusable_work *w)
{
  if (w->n_recs == 0) {
    /* Nothing stored with its graph under the key: nothing to judge. */
    dlog(&s->log, DLOG_DEBUG, "unusable report: no stored plan with a "
         "graph under the key; kept");
    return 0;
  }
  const struct storage_record *r = &w->recs[0];
  if (r->plan.arena_bytes != u->arena_bytes || r->plan.proven_optimal) {
    dlog(&s->log, DLOG_INFO, "unusable report kept the stored plan: %"
         PRIu64 " bytes%s (the report says %" PRIu64 ", usable %" PRIu64 ")",
         r->plan.arena_bytes, r->plan.proven_optimal ? ", proven optimal" : "",
         (uint64_t)u->arena_bytes, (uint64_t)u->usable_bytes);
    return 0;
  }
  char err[ARENA_ERR_LEN] = "";
  int rc = planner_run(&r->graph, &r->opts, &w->plan, err);
  if (rc) {
    dlog(&s->log, DLOG_WARNING, "unusable report: planning the stored "
         "graph again failed: %s", err);
    return rc;
  }
  w->smaller = w->plan.arena_bytes < r->plan.arena_bytes;
  if (!w->smaller)
    dlog(&s->log, DLOG_INFO, "unusable report kept the stored plan: %"
         PRIu64 " bytes, no larger than its graph planned again (%" PRIu64
         " bytes; usable %" PRIu64 ")",
         r->plan.arena_bytes, w->plan.arena_bytes,
         (uint64_t)u->usable_bytes);
  return 0;
}

int unusable_store(struct server *s, const struct keycodec_key *k,
                   const struct unusable_work *w, uint64_t *replaced)
{
  *replaced = 0;
  if (!w->smaller)
    return 0;
  const struct storage_record *r = &w->recs[0];
  struct storage_key sk = {k->hash, k->hash_len, k->ranks, k->n_inputs,
                           k->dims};
  enum storage_put_result res = STORAGE_PUT_KEPT;
  /* Effort 0 (the request's own) and not done, as a Plan request's. */
  int rc = storage_put_effort(s->st, &sk, &r->graph, &r->opts, &w->plan,
                              0, 0, 0, &res);
  if (rc)
    return rc;
  *replaced = res == STORAGE_PUT_UPGRADED;
  if (*replaced)
    dlog(&s->log, DLOG_NOTICE, "replaced a stored plan a client reported "
         "unusable: %" PRIu64 " -> %" PRIu64 " bytes",
         r->plan.arena_bytes, w->plan.arena_bytes);
  return 0;
}

void unusable_work_cleanup(struct unusable_work *w)
{
  storage_records_free(w->recs, w->n_recs);
  planner_plan_cleanup(&w->plan);
  memset(w, 0, sizeof *w);
}

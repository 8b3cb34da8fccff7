/*
 * jobs_storage.c - the storage jobs of arenad: Lookup, List, Stats,
 * Evict, Export and Preload requests, each run against the sqlite cache
 * on a worker of the libuv pool (never on the loop thread), and answered
 * back on the loop.
 *
 * The job record, its bookkeeping and the plan jobs are in jobs.c (see
 * jobs_int.h). An Evict is checked on the loop thread before it is
 * queued, so that a request that names nothing is refused without
 * touching the database; after an eviction the loop also drops the
 * evicted plans from the hot LRU. An Evict that reports an unusable plan
 * (Evict.unusable) is judged by unusable.c.
 *
 * LAYER: below conn.c, above jobs.c, uses.c and dbhealth.c. Replies,
 * the server's counters for Stats and the end of a job reach the layers
 * above only through s->report (report.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundles.h"
#include "jobs_int.h"
#include "memory.h"
#include "unusable.h"

/* Reads the input shape of a Lookup or Attach into *shape (cleaned up by
 * the caller after use) and the key it names with hash into *k, which
 * borrows both. Returns 0, or sets j's status and message and returns
 * the error (nothing to clean up then). */
static int key_of_msg(struct job *j, const ProtobufCBinaryData *hash,
                      Arenad__V1__Dims **dims, size_t n_dims,
                      struct wire_shape *shape, struct storage_key *k)
{
  int rc = wire_shape_from_msg(dims, n_dims, shape, j->err);
  if (rc) {
    j->status = jobs__status_of(rc);
    return rc;
  }
  *k = (struct storage_key){hash->data, hash->len, shape->ranks,
                            shape->n_inputs, shape->dims};
  return 0;
}

static void work_lookup(struct job *j)
{
  Arenad__V1__Lookup *m = j->req->lookup;
  struct wire_shape shape;
  int rc;
  if (m->model_hash.len == 0 || m->model_hash.len > WIRE_MAX_MODEL_HASH) {
    snprintf(j->err, sizeof j->err, "model hash must be 1 to %u bytes",
             WIRE_MAX_MODEL_HASH);
    j->status = ARENAD__V1__STATUS__INVALID_ARGUMENT;
    return;
  }
  if (m->graph_digest.len != 0 && m->graph_digest.len != PLANNER_DIGEST_LEN) {
    snprintf(j->err, sizeof j->err, "graph digest must be 32 bytes");
    j->status = ARENAD__V1__STATUS__INVALID_ARGUMENT;
    return;
  }
  struct storage_key k;
  if (key_of_msg(j, &m->model_hash, m->input_shape, m->n_input_shape, &shape,
                 &k))
    return;
  jobs__st_enter(j->s);
  rc = m->with_graph ? storage_lookup_graphs(j->s->st, &k, &j->recs,
                                             &j->n_recs)
                     : storage_lookup(j->s->st, &k, &j->recs, &j->n_recs);
  if (rc)
    dbhealth_failed(j->s, "lookup", rc);
  uv_mutex_unlock(&j->s->st_lock);
  wire_shape_cleanup(&shape);
  if (rc) {
    snprintf(j->err, sizeof j->err, "cache lookup failed: %s",
             arena_strerror(rc));
    j->status = ARENAD__V1__STATUS__INTERNAL;
  }
}

/* Attach: the placement record checked here, stored beside the plan the
 * request names; NOT_FOUND when no plan is stored under it. */
static void work_attach(struct job *j)
{
  Arenad__V1__Attach *m = j->req->attach;
  struct wire_shape shape;
  int rc;
  if (m->model_hash.len == 0 || m->model_hash.len > WIRE_MAX_MODEL_HASH ||
      m->graph_digest.len != PLANNER_DIGEST_LEN ||
      m->options_digest.len != PLANNER_DIGEST_LEN ||
      m->placement.len == 0 || m->placement.len > WIRE_MAX_PLACEMENT) {
    snprintf(j->err, sizeof j->err,
             "attach takes a model hash of 1 to %u bytes, two digests of "
             "32 bytes and a placement record of 1 to %u bytes",
             WIRE_MAX_MODEL_HASH, WIRE_MAX_PLACEMENT);
    j->status = ARENAD__V1__STATUS__INVALID_ARGUMENT;
    return;
  }
  struct storage_key k;
  if (key_of_msg(j, &m->model_hash, m->input_shape, m->n_input_shape, &shape,
                 &k))
    return;
  jobs__st_enter(j->s);
  rc = storage_attach(j->s->st, &k, m->graph_digest.data,
                      m->options_digest.data, m->placement.data,
                      m->placement.len);
  if (rc && rc != ARENA_ENOENT && rc != ARENA_EINVAL)
    dbhealth_failed(j->s, "attach", rc);
  if (rc)
    snprintf(j->err, sizeof j->err, "attach: %s", storage_errmsg(j->s->st));
  uv_mutex_unlock(&j->s->st_lock);
  wire_shape_cleanup(&shape);
  if (rc)
    j->status = rc == ARENA_ENOENT   ? ARENAD__V1__STATUS__NOT_FOUND
                : rc == ARENA_EINVAL ? ARENAD__V1__STATUS__INVALID_ARGUMENT
                                     : ARENAD__V1__STATUS__INTERNAL;
}

static void work_list(struct job *j)
{
  Arenad__V1__List *m = j->req->list;
  if (m->model_hash.len > WIRE_MAX_MODEL_HASH) {
    snprintf(j->err, sizeof j->err, "model hash too long");
    j->status = ARENAD__V1__STATUS__INVALID_ARGUMENT;
    return;
  }
  /* An enum value this daemon does not know is an error in the message
   * (docs/protocol.md, "Compatibility rules"), never read as NEWEST.
   * Compared as int: a peer can send any 32-bit value; printed as the
   * unsigned number it is on the wire (2^32 - 1, not -1). */
  if ((int)m->order != (int)ARENAD__V1__LIST_ORDER__NEWEST &&
      (int)m->order != (int)ARENAD__V1__LIST_ORDER__MOST_USED) {
    snprintf(j->err, sizeof j->err, "unknown list order %u",
             (unsigned)m->order);
    j->status = ARENAD__V1__STATUS__INVALID_ARGUMENT;
    return;
  }
  struct storage_list_query q = {
      m->model_hash.len ? m->model_hash.data : NULL, m->model_hash.len,
      m->order == ARENAD__V1__LIST_ORDER__MOST_USED ? STORAGE_ORDER_MOST_USED
                                                    : STORAGE_ORDER_NEWEST,
      m->offset, m->limit ? m->limit : 100};
  if (q.limit > STORAGE_LIST_MAX)
    q.limit = STORAGE_LIST_MAX;
  jobs__st_enter(j->s);
  int rc = storage_list(j->s->st, &q, &j->recs, &j->n_recs);
  if (rc)
    dbhealth_failed(j->s, "list", rc);
  uv_mutex_unlock(&j->s->st_lock);
  if (rc) {
    snprintf(j->err, sizeof j->err, "cache list failed: %s",
             arena_strerror(rc));
    j->status = ARENAD__V1__STATUS__INTERNAL;
  }
}

static void work_export(struct job *j)
{
  const Arenad__V1__Export *m = j->req->export_plans;
  if (m->model_hash.len > WIRE_MAX_MODEL_HASH) {
    snprintf(j->err, sizeof j->err, "model hash too long");
    j->status = ARENAD__V1__STATUS__INVALID_ARGUMENT;
    return;
  }
  struct storage_export_query q = {
      m->model_hash.len ? m->model_hash.data : NULL, m->model_hash.len,
      m->key.len ? m->key.data : NULL, m->key.len, m->offset,
      m->limit ? m->limit : 100};
  if (q.limit > STORAGE_LIST_MAX)
    q.limit = STORAGE_LIST_MAX;
  jobs__st_enter(j->s);
  int rc = storage_export(j->s->st, &q, &j->recs, &j->n_recs, &j->n_without);
  if (rc && rc != ARENA_EINVAL)
    dbhealth_failed(j->s, "export", rc);
  if (rc)
    snprintf(j->err, sizeof j->err, "export: %s", storage_errmsg(j->s->st));
  uv_mutex_unlock(&j->s->st_lock);
  if (rc)
    j->status = rc == ARENA_EINVAL ? ARENAD__V1__STATUS__INVALID_ARGUMENT
                                   : ARENAD__V1__STATUS__INTERNAL;
}

static void work_preload(struct job *j)
{
  const Arenad__V1__Preload *m = j->req->preload_plans;
  struct bundles_outcome o;
  char err[ARENA_ERR_LEN] = "";
  struct bundles_rules r = {&j->cfg.limits, {0, 0, 0},
                            j->cfg.improve_max_effort};
  jobs__st_enter(j->s);
  int rc = bundles_preload(j->s->st, &r, m->entries, m->n_entries, &o, err);
  if (rc == ARENA_EBUSY || rc == ARENA_EIO)
    dbhealth_failed(j->s, "preload", rc);
  uv_mutex_unlock(&j->s->st_lock);
  j->preload_stored = o.stored;
  j->preload_kept = o.kept;
  if (rc) {
    snprintf(j->err, sizeof j->err, "preload refused, nothing stored: %s",
             err);
    /* A plan that fails verification is the bundle's fault, not ours. */
    j->status = rc == ARENA_EVERIFY ? ARENAD__V1__STATUS__INVALID_ARGUMENT
                                    : jobs__status_of(rc);
  }
}

/* Checks what an Evict request selects, on the loop thread before any
 * work is queued, and decodes its key into j->evict_key. Exactly one
 * selector counts: `all` only when true, a model hash of 1..64 bytes, or
 * a key as List returns it. Returns 0, or an error status with msg. */
static Arenad__V1__Status evict_select(struct job *j, char *msg, size_t len)
{
  const Arenad__V1__Evict *m = j->req->evict;
  switch (m->target_case) {
  case ARENAD__V1__EVICT__TARGET_ALL:
    if (m->all)
      return ARENAD__V1__STATUS__OK;
    snprintf(msg, len, "evict selects nothing: all is false");
    return ARENAD__V1__STATUS__INVALID_ARGUMENT;
  case ARENAD__V1__EVICT__TARGET_MODEL_HASH:
    if (m->model_hash.len >= 1 && m->model_hash.len <= WIRE_MAX_MODEL_HASH)
      return ARENAD__V1__STATUS__OK;
    snprintf(msg, len, "evict: the model hash must be 1 to %u bytes",
             WIRE_MAX_MODEL_HASH);
    return ARENAD__V1__STATUS__INVALID_ARGUMENT;
  case ARENAD__V1__EVICT__TARGET_KEY:
    switch (keycodec_decode(m->key.data, m->key.len, &j->evict_key)) {
    case 0:
      return ARENAD__V1__STATUS__OK;
    case ARENA_ENOMEM:
      snprintf(msg, len, "out of memory");
      return ARENAD__V1__STATUS__INTERNAL;
    default:
      snprintf(msg, len, "evict: the key is not one that List gave");
      return ARENAD__V1__STATUS__INVALID_ARGUMENT;
    }
  case ARENAD__V1__EVICT__TARGET_UNUSABLE:
    return unusable_select(m->unusable, &j->evict_key, msg, len);
  default:
    snprintf(msg, len, "evict selects nothing: set all, model_hash or key");
    return ARENAD__V1__STATUS__INVALID_ARGUMENT;
  }
}

/* Judges an unusable report: the stored graph is planned again outside
 * st_lock, and the new plan stored when it is strictly smaller. */
static int do_unusable(struct job *j)
{
  struct unusable_work w;
  jobs__st_enter(j->s);
  int rc = unusable_fetch(j->s, &j->evict_key, &w);
  uv_mutex_unlock(&j->s->st_lock);
  if (rc == 0)
    rc = unusable_replan(j->s, j->req->evict->unusable, &w);
  if (rc == 0 && w.smaller) {
    jobs__st_enter(j->s);
    rc = unusable_store(j->s, &j->evict_key, &w, &j->evicted);
    uv_mutex_unlock(&j->s->st_lock);
  }
  unusable_work_cleanup(&w);
  return rc;
}

/* Removes what evict_select accepted. Caller holds st_lock. */
static int do_evict(struct job *j)
{
  const Arenad__V1__Evict *m = j->req->evict;
  storage_t *st = j->s->st;
  const struct keycodec_key *k = &j->evict_key;
  struct storage_key sk = {k->hash, k->hash_len, k->ranks, k->n_inputs,
                           k->dims};
  switch (m->target_case) {
  case ARENAD__V1__EVICT__TARGET_ALL:
    return storage_evict_all(st, &j->evicted);
  case ARENAD__V1__EVICT__TARGET_MODEL_HASH:
    return storage_evict_model(st, m->model_hash.data, m->model_hash.len,
                               &j->evicted);
  default:
    return storage_evict(st, &sk, k->graph_digest, k->options_digest,
                         &j->evicted);
  }
}

static void work_storage(uv_work_t *w)
{
  struct job *j = w->data;
  int rc;
  if (!j->s->st && j->req->body_case != ARENAD__V1__REQUEST__BODY_STATS) {
    j->status = ARENAD__V1__STATUS__INTERNAL;
    snprintf(j->err, sizeof j->err, "the cache database is not open");
    return;
  }
  switch (j->req->body_case) {
  case ARENAD__V1__REQUEST__BODY_LOOKUP:
    work_lookup(j);
    break;
  case ARENAD__V1__REQUEST__BODY_LIST:
    work_list(j);
    break;
  case ARENAD__V1__REQUEST__BODY_ATTACH:
    work_attach(j);
    break;
  case ARENAD__V1__REQUEST__BODY_STATS:
    jobs__st_enter(j->s);
    j->stats_ok = j->s->st && storage_get_stats(j->s->st, &j->stats) == 0;
    uv_mutex_unlock(&j->s->st_lock);
    break;
  case ARENAD__V1__REQUEST__BODY_EXPORT_PLANS:
    work_export(j);
    break;
  case ARENAD__V1__REQUEST__BODY_PRELOAD_PLANS:
    work_preload(j);
    break;
  case ARENAD__V1__REQUEST__BODY_EVICT:
    if (j->req->evict->target_case == ARENAD__V1__EVICT__TARGET_UNUSABLE) {
      rc = do_unusable(j);
      if (rc)
        snprintf(j->err, sizeof j->err, "unusable report failed: %s",
                 arena_strerror(rc));
      j->status = rc == 0 ? ARENAD__V1__STATUS__OK : jobs__status_of(rc);
      break;
    }
    jobs__st_enter(j->s);
    rc = do_evict(j);
    if (rc)
      snprintf(j->err, sizeof j->err, "evict failed: %s",
               storage_errmsg(j->s->st));
    uv_mutex_unlock(&j->s->st_lock);
    if (rc) /* EINVAL: a key that decodes but no storage key can hold */
      j->status = rc == ARENA_EINVAL ? ARENAD__V1__STATUS__INVALID_ARGUMENT
                                     : ARENAD__V1__STATUS__INTERNAL;
    break;
  default:
    j->status = ARENAD__V1__STATUS__INVALID_ARGUMENT;
    break;
  }
}

struct reply_arena {
  Arenad__V1__PlanReply *plans;
  Arenad__V1__PlanReply **plan_ptrs;
  Arenad__V1__CacheEntry *entries;
  Arenad__V1__CacheEntry **entry_ptrs;
  Arenad__V1__Dims *dims;
  Arenad__V1__Dims **dim_ptrs;
  uint8_t **keys;
  size_t n;
};

static void arena_free(struct reply_arena *a)
{
  for (size_t i = 0; a->keys && i < a->n; i++)
    free(a->keys[i]);
  free(a->plans);
  free(a->plan_ptrs);
  free(a->entries);
  free(a->entry_ptrs);
  free(a->dims);
  free(a->dim_ptrs);
  free(a->keys);
}

/* Points dim messages at a record's flat shape. */
static void shape_to_msg(const struct storage_record *rec,
                         Arenad__V1__Dims *dims, Arenad__V1__Dims **ptrs)
{
  size_t off = 0;
  for (size_t i = 0; i < rec->n_inputs; i++) {
    arenad__v1__dims__init(&dims[i]);
    dims[i].n_dims = rec->ranks[i];
    dims[i].dims = rec->dims + off;
    off += rec->ranks[i];
    ptrs[i] = &dims[i];
  }
}

static size_t total_inputs(const struct job *j)
{
  size_t n = 0;
  for (size_t i = 0; i < j->n_recs; i++)
    n += j->recs[i].n_inputs;
  return n;
}

/* Whether background work on rec's plan goes on (read on the loop):
 * the rule of every reply (improve_wanted). */
static int improving(const struct server *s, const struct storage_record *r)
{
  return improve_wanted(s->improver,
                        r->info.has_graph && !r->info.improve_done &&
                            !r->plan.proven_optimal,
                        r->info.n_tensors);
}

static int build_lookup(struct job *j, Arenad__V1__LookupReply *lr,
                        struct reply_arena *a)
{
  const Arenad__V1__Lookup *m = j->req->lookup;
  a->plans = calloc(j->n_recs + 1, sizeof *a->plans);
  a->plan_ptrs = calloc(j->n_recs + 1, sizeof *a->plan_ptrs);
  if (!a->plans || !a->plan_ptrs)
    return -1;
  size_t k = 0;
  for (size_t i = 0; i < j->n_recs; i++) {
    const struct storage_record *rec = &j->recs[i];
    if (m->graph_digest.len &&
        memcmp(m->graph_digest.data, rec->graph_digest, PLANNER_DIGEST_LEN))
      continue;
    wire_reply_from_plan(&a->plans[k], &rec->plan, rec->graph_digest,
                         rec->options_digest);
    a->plans[k].cached = 1;
    a->plans[k].planning_us = rec->info.plan_us;
    a->plans[k].generation = rec->info.generation;
    a->plans[k].effort = rec->info.effort;
    a->plans[k].improving = improving(j->s, rec);
    a->plan_ptrs[k] = &a->plans[k];
    k++;
  }
  lr->plans = a->plan_ptrs;
  lr->n_plans = k;
  return 0;
}

/* A Lookup with_graph: each record (stored with its graph, verified
 * against it) as a BundleEntry with its placement record, those of
 * another graph digest left out when the request names one. Returns 0
 * or -1 (out of memory). */
static int build_lookup_graphs(struct job *j, Arenad__V1__LookupReply *lr,
                               struct bundles_export *x)
{
  const Arenad__V1__Lookup *m = j->req->lookup;
  size_t k = 0;
  for (size_t i = 0; i < j->n_recs; i++) {
    if (m->graph_digest.len &&
        memcmp(m->graph_digest.data, j->recs[i].graph_digest,
               PLANNER_DIGEST_LEN))
      continue;
    if (k != i) { /* moved down; what it owned goes with it */
      struct storage_record t = j->recs[k];
      j->recs[k] = j->recs[i];
      j->recs[i] = t;
    }
    k++;
  }
  if (bundles_export_build(j->recs, k, x) != 0)
    return -1;
  for (size_t i = 0; i < x->n; i++)
    x->plans[i].improving = improving(j->s, &j->recs[i]);
  lr->entries = x->ptrs;
  lr->n_entries = x->n;
  return 0;
}

static int build_list(struct job *j, Arenad__V1__ListReply *lr,
                      struct reply_arena *a)
{
  size_t ni = total_inputs(j);
  a->n = j->n_recs;
  a->entries = calloc(j->n_recs + 1, sizeof *a->entries);
  a->entry_ptrs = calloc(j->n_recs + 1, sizeof *a->entry_ptrs);
  a->dims = calloc(ni + 1, sizeof *a->dims);
  a->dim_ptrs = calloc(ni + 1, sizeof *a->dim_ptrs);
  a->keys = calloc(j->n_recs + 1, sizeof *a->keys);
  if (!a->entries || !a->entry_ptrs || !a->dims || !a->dim_ptrs || !a->keys)
    return -1;
  size_t di = 0;
  for (size_t i = 0; i < j->n_recs; i++) {
    const struct storage_record *rec = &j->recs[i];
    Arenad__V1__CacheEntry *e = &a->entries[i];
    arenad__v1__cache_entry__init(e);
    size_t klen;
    a->keys[i] = keycodec_encode(rec->model_hash, rec->model_hash_len,
                                 rec->ranks, rec->dims, rec->n_inputs,
                                 rec->graph_digest, rec->options_digest,
                                 &klen);
    if (!a->keys[i])
      return -1;
    e->key.data = a->keys[i];
    e->key.len = klen;
    e->model_hash.data = (uint8_t *)rec->model_hash;
    e->model_hash.len = rec->model_hash_len;
    shape_to_msg(rec, a->dims + di, a->dim_ptrs + di);
    e->input_shape = a->dim_ptrs + di;
    e->n_input_shape = rec->n_inputs;
    di += rec->n_inputs;
    e->graph_digest.data = (uint8_t *)rec->graph_digest;
    e->graph_digest.len = PLANNER_DIGEST_LEN;
    e->options_digest.data = (uint8_t *)rec->options_digest;
    e->options_digest.len = PLANNER_DIGEST_LEN;
    e->n_tensors = rec->info.n_tensors;
    e->arena_bytes = rec->plan.arena_bytes;
    e->lower_bound_bytes = rec->plan.lower_bound_bytes;
    e->lower_bound_unshared_bytes = rec->plan.lower_bound_unshared_bytes;
    e->shared_pairs = rec->plan.n_shared;
    e->proven_optimal = rec->plan.proven_optimal != 0;
    e->algorithm = (Arenad__V1__Algorithm)rec->plan.algo;
    e->hits = rec->info.hits;
    e->created_unix_ms = rec->info.created_ms;
    e->last_used_unix_ms = rec->info.last_used_ms;
    e->planning_us = rec->info.plan_us;
    e->generation = rec->info.generation;
    e->effort = rec->info.effort;
    e->effort_tried = rec->info.effort_tried;
    e->has_graph = rec->info.has_graph != 0;
    e->improving = improving(j->s, rec);
    a->entry_ptrs[i] = e;
  }
  lr->entries = a->entry_ptrs;
  lr->n_entries = j->n_recs;
  return 0;
}

static void purge_hot(struct job *j)
{
  Arenad__V1__Evict *m = j->req->evict;
  struct hotcache *hc = j->s->hot;
  if (m->target_case == ARENAD__V1__EVICT__TARGET_ALL)
    hotcache_clear(hc);
  else if (m->target_case == ARENAD__V1__EVICT__TARGET_MODEL_HASH)
    hotcache_remove_model(hc, m->model_hash.data, m->model_hash.len);
  else if (m->target_case != ARENAD__V1__EVICT__TARGET_UNUSABLE ||
           j->evicted)
    hotcache_remove_digests(hc, j->evict_key.hash, j->evict_key.hash_len,
                            j->evict_key.graph_digest,
                            j->evict_key.options_digest);
}

static void answer_storage(struct job *j, struct conn *c, uint64_t rid)
{
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  Arenad__V1__LookupReply lr = ARENAD__V1__LOOKUP_REPLY__INIT;
  Arenad__V1__ListReply li = ARENAD__V1__LIST_REPLY__INIT;
  Arenad__V1__StatsReply sr = ARENAD__V1__STATS_REPLY__INIT;
  Arenad__V1__EvictReply er = ARENAD__V1__EVICT_REPLY__INIT;
  Arenad__V1__ExportReply xr = ARENAD__V1__EXPORT_REPLY__INIT;
  Arenad__V1__PreloadReply pr = ARENAD__V1__PRELOAD_REPLY__INIT;
  Arenad__V1__AttachReply ar = ARENAD__V1__ATTACH_REPLY__INIT;
  struct bundles_export x = {0};
  struct reply_arena a = {0};
  r.request_id = rid;
  int oom = 0;
  switch (j->req->body_case) {
  case ARENAD__V1__REQUEST__BODY_LOOKUP:
    if (j->req->lookup->with_graph)
      oom = build_lookup_graphs(j, &lr, &x);
    else
      oom = build_lookup(j, &lr, &a);
    r.body_case = ARENAD__V1__RESPONSE__BODY_LOOKUP;
    r.lookup = &lr;
    if (!oom && lr.n_plans == 0 && lr.n_entries == 0) {
      r.status = ARENAD__V1__STATUS__NOT_FOUND;
      r.error = "no stored plan for this model hash and shape";
    }
    break;
  case ARENAD__V1__REQUEST__BODY_LIST:
    oom = build_list(j, &li, &a);
    r.body_case = ARENAD__V1__RESPONSE__BODY_LIST;
    r.list = &li;
    break;
  case ARENAD__V1__REQUEST__BODY_STATS:
    j->s->report.fill_stats(j->s, &sr);
    if (j->stats_ok) {
      sr.storage_entries = j->stats.entries;
      sr.storage_bytes = j->stats.bytes;
      sr.storage_evictions = j->stats.evictions;
      sr.storage_corrupt_dropped = j->stats.corrupt_dropped;
      sr.storage_file_bytes = j->stats.file_bytes;
    }
    r.body_case = ARENAD__V1__RESPONSE__BODY_STATS;
    r.stats = &sr;
    break;
  case ARENAD__V1__REQUEST__BODY_EVICT:
    er.evicted = j->evicted;
    r.body_case = ARENAD__V1__RESPONSE__BODY_EVICT;
    r.evict = &er;
    break;
  case ARENAD__V1__REQUEST__BODY_EXPORT_PLANS:
    oom = bundles_export_build(j->recs, j->n_recs, &x) != 0;
    xr.entries = x.ptrs;
    xr.n_entries = x.n;
    xr.without_graph = j->n_without;
    r.body_case = ARENAD__V1__RESPONSE__BODY_EXPORTED;
    r.exported = &xr;
    break;
  case ARENAD__V1__REQUEST__BODY_ATTACH:
    r.body_case = ARENAD__V1__RESPONSE__BODY_ATTACHED;
    r.attached = &ar;
    break;
  case ARENAD__V1__REQUEST__BODY_PRELOAD_PLANS:
    pr.stored = j->preload_stored;
    pr.kept = j->preload_kept;
    r.body_case = ARENAD__V1__RESPONSE__BODY_PRELOADED;
    r.preloaded = &pr;
    break;
  default:
    break;
  }
  if (oom)
    j->s->report.send_status(c, rid, ARENAD__V1__STATUS__INTERNAL,
                             "out of memory");
  else
    j->s->report.send(c, &r);
  arena_free(&a);
  bundles_export_free(&x);
}

/* After a preload: the hot LRU may hold larger plans for the keys that
 * got smaller ones, so every model the request named leaves it, and the
 * background improvement is told that plans may want work. */
static void after_preload(struct job *j)
{
  const Arenad__V1__Preload *m = j->req->preload_plans;
  for (size_t i = 0; i < m->n_entries; i++) {
    const Arenad__V1__Plan *p = m->entries[i]->request;
    hotcache_remove_model(j->s->hot, p->model_hash.data, p->model_hash.len);
  }
  improve_wake(j->s->improver);
}

static void after_storage(uv_work_t *w, int status)
{
  struct job *j = w->data;
  struct server *s = j->s;
  jobs__unlink(s, j);
  if (status == 0 && j->status == ARENAD__V1__STATUS__OK &&
      j->req->body_case == ARENAD__V1__REQUEST__BODY_EVICT)
    purge_hot(j);
  if (status == 0 && j->status == ARENAD__V1__STATUS__OK &&
      j->req->body_case == ARENAD__V1__REQUEST__BODY_PRELOAD_PLANS)
    after_preload(j);
  for (struct waiter *wt = j->waiters; wt; wt = wt->next)
    if (wt->conn) {
      struct conn *c = wt->conn;
      if (status != 0)
        s->report.send_status(c, wt->request_id,
                              ARENAD__V1__STATUS__INTERNAL,
                              "request was cancelled");
      else if (j->status != ARENAD__V1__STATUS__OK)
        s->report.send_status(c, wt->request_id, j->status, j->err);
      else
        answer_storage(j, c, wt->request_id);
      s->report.job_done(c);
    }
  int preload = j->req->body_case == ARENAD__V1__REQUEST__BODY_PRELOAD_PLANS;
  jobs__free(j);
  if (preload) /* the decoded request's many small blocks, back at once */
    daemon_memory_release();
  if (s->draining)
    s->report.drain_check(s);
}

void jobs_submit_storage(struct server *s, struct conn *c,
                         uint64_t request_id, Arenad__V1__Request *req)
{
  struct job *j;
  char msg[ARENA_ERR_LEN];
  int want_ack = req->want_ack;
  if (jobs__queue_full(s, c, request_id) ||
      !(j = jobs__new(s, JOB_STORAGE, req))) {
    wire_free_request(req);
    return;
  }
  if (req->body_case == ARENAD__V1__REQUEST__BODY_EVICT) {
    Arenad__V1__Status st = evict_select(j, msg, sizeof msg);
    if (st != ARENAD__V1__STATUS__OK) {
      s->report.send_status(c, request_id, st, msg);
      jobs__free(j);
      return;
    }
  }
  uses_collect(s);
  if (jobs__add_waiter(j, c, request_id) ||
      uv_queue_work(&s->loop, &j->work, work_storage, after_storage)) {
    jobs__reject_new(j, c, request_id, "cannot queue the request");
    return;
  }
  jobs__link(s, j);
  jobs__ack(s, c, request_id, want_ack);
}

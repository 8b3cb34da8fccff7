/*
 * admin.c - the plan cache's inspection and maintenance calls: lookup by
 * model hash and shape, listing, the plans that want background work,
 * export with graphs, eviction, statistics and vacuum
 * (storage.h). The handle lives in storage.c, put in write.c and get in
 * get.c; all share the handle's layout and the helpers of stmt.c through
 * storage_int.h.
 */
#include "storage_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- lookup and list ---------------------------------------------------- */

/* Frees what one record owns and empties it. */
static void record_cleanup(struct storage_record *r)
{
  free(r->ranks);
  free(r->dims);
  planner_plan_cleanup(&r->plan);
  free((void *)r->graph.tensors);
  free(r->placement);
  memset(r, 0, sizeof *r);
}

void storage_records_free(struct storage_record *r, size_t n)
{
  if (!r)
    return;
  for (size_t i = 0; i < n; i++)
    record_cleanup(&r[i]);
  free(r);
}

/* What collect_entries makes of each row besides its plan. */
enum {
  WITH_GRAPH = 1, /* decode the graph and options (FULL_COLS) */
  VERIFY = 2,     /* and planner_verify the plan against them */
};

/* Adds the row's graph and options to rec, whose plan is read. Returns
 * 0, ARENA_ECORRUPT (bad checksum, a blob that does not decode, a plan
 * that fails verification, or an arena above storage__arena_cap) or
 * ARENA_ENOMEM. */
static int add_graph(const struct row_view *v, struct storage_record *rec,
                     unsigned how)
{
  struct planner_tensor *t = NULL;
  if (!storage__graph_ok(v))
    return ARENA_ECORRUPT;
  int rc = storage__graph_decode(v->x.graph, v->x.graph_len,
                                 rec->plan.n_offsets, &t);
  if (rc)
    return rc;
  rec->graph.tensors = t;
  rec->graph.n_tensors = rec->plan.n_offsets;
  if ((rc = storage__opts_decode(v->x.opts, v->x.opts_len, &rec->opts)))
    return rc;
  if (how & VERIFY) {
    rc = planner_verify(&rec->graph, &rec->opts, &rec->plan, NULL);
    if (rc)
      return rc == ARENA_ENOMEM ? rc : ARENA_ECORRUPT;
  }
  /* An arena no planner makes for this graph: written by hand. */
  if (rec->plan.arena_bytes > storage__arena_cap(&rec->graph, &rec->opts))
    return ARENA_ECORRUPT;
  if (v->placement && v->placement_len) {
    rec->placement = malloc(v->placement_len);
    if (!rec->placement)
      return ARENA_ENOMEM;
    memcpy(rec->placement, v->placement, v->placement_len);
    rec->placement_len = v->placement_len;
  }
  return 0;
}

/* Turns the current row into rec. Returns 0, ARENA_ECORRUPT or
 * ARENA_ENOMEM. */
static int make_record(const struct row_view *v, struct storage_record *rec,
                       unsigned how)
{
  memset(rec, 0, sizeof *rec);
  memcpy(rec->model_hash, v->r.model_hash, v->r.model_hash_len);
  rec->model_hash_len = v->r.model_hash_len;
  memcpy(rec->graph_digest, v->r.graph_digest, PLANNER_DIGEST_LEN);
  memcpy(rec->options_digest, v->r.options_digest, PLANNER_DIGEST_LEN);
  storage__fill_info(v, &rec->info);
  int rc = storage__fill_plan_fields(v, &rec->plan);
  if (!rc)
    rc = storage__shape_decode(v->r.shape, v->r.shape_len, &rec->ranks,
                               &rec->dims, &rec->n_inputs);
  if (rc || !v->have_offsets)
    return rc;
  size_t n = (size_t)v->r.n_tensors;
  rec->plan.offsets = malloc((n ? n : 1) * sizeof *rec->plan.offsets);
  if (!rec->plan.offsets)
    return ARENA_ENOMEM;
  rc = storage__offsets_decode(v->r.offsets, v->r.offsets_len, n, NULL,
                               rec->plan.offsets);
  if (!rc && (how & WITH_GRAPH))
    rc = add_graph(v, rec, how);
  return rc;
}

/* Steps s (bound by the caller) and collects up to max records, made as
 * how says. Bad rows are deleted after the statement is reset, and left
 * out. */
static int collect_entries(storage_t *st, sqlite3_stmt *s, size_t max,
                           unsigned how, struct storage_record **out,
                           size_t *n_out)
{
  struct storage_record *recs = calloc(max ? max : 1, sizeof *recs);
  int64_t *bad_ids = calloc(max ? max : 1, sizeof *bad_ids);
  size_t n = 0, n_bad = 0;
  int rc = 0, src = SQLITE_DONE;
  if (!recs || !bad_ids) {
    storage__done(s);
    free(recs);
    free(bad_ids);
    return storage__seterr(st, ARENA_ENOMEM, "out of memory");
  }
  while (n + n_bad < max && (src = sqlite3_step(s)) == SQLITE_ROW) {
    struct row_view v;
    int r = storage__read_row(s, &v);
    if (!r && !storage__checksum_ok(&v))
      r = ARENA_ECORRUPT;
    if (!r)
      r = make_record(&v, &recs[n], how);
    if (r == ARENA_ENOMEM) {
      rc = storage__seterr(st, r, "out of memory");
      storage_records_free(recs, n + 1);
      recs = NULL;
      break;
    }
    if (r) {
      record_cleanup(&recs[n]);
      bad_ids[n_bad++] = v.id;
    } else {
      n++;
    }
  }
  if (recs && src != SQLITE_ROW && src != SQLITE_DONE && n + n_bad < max) {
    rc = storage__sqlerr(st, src, "cannot read plans");
    storage_records_free(recs, n);
    recs = NULL;
  }
  storage__done(s);
  for (size_t i = 0; i < n_bad; i++)
    storage__drop_corrupt(st, bad_ids[i],
                          "checksum mismatch, a value that does not decode "
                          "or a plan that fails its stored graph");
  free(bad_ids);
  if (!recs)
    return rc;
  if (n == 0) {
    free(recs);
    recs = NULL;
  }
  *out = recs;
  *n_out = n;
  return 0;
}

/* The rows of statement which (S_LOOKUP or S_LOOKUP_GRAPHS) stored
 * under k's model hash and shape, made as how says. */
static int lookup_rows(storage_t *st, const struct storage_key *k, int which,
                       unsigned how, struct storage_record **out,
                       size_t *n_out)
{
  struct bound_key bk;
  *out = NULL;
  *n_out = 0;
  storage__clear_err(st);
  int rc = storage__bind_key_prepare(st, k, NULL, NULL, &bk);
  if (rc)
    return rc;
  sqlite3_stmt *s = st->stmt[which];
  sqlite3_bind_blob(s, 1, k->model_hash, (int)k->model_hash_len,
                    SQLITE_STATIC);
  sqlite3_bind_blob(s, 2, bk.shape, (int)bk.shape_len, SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, STORAGE_LOOKUP_MAX);
  return collect_entries(st, s, STORAGE_LOOKUP_MAX, how, out, n_out);
}

int storage_lookup(storage_t *st, const struct storage_key *k,
                   struct storage_record **out, size_t *n_out)
{
  return lookup_rows(st, k, S_LOOKUP, 0, out, n_out);
}

int storage_lookup_graphs(storage_t *st, const struct storage_key *k,
                          struct storage_record **out, size_t *n_out)
{
  return lookup_rows(st, k, S_LOOKUP_GRAPHS, WITH_GRAPH | VERIFY, out,
                     n_out);
}

int storage_attach(storage_t *st, const struct storage_key *k,
                   const uint8_t graph_digest[PLANNER_DIGEST_LEN],
                   const uint8_t options_digest[PLANNER_DIGEST_LEN],
                   const uint8_t *placement, size_t len)
{
  struct bound_key bk;
  storage__clear_err(st);
  if (!graph_digest || !options_digest || !placement || len < 1 ||
      len > STORAGE_PLACEMENT_MAX)
    return storage__seterr(st, ARENA_EINVAL,
                           "a placement record takes both digests and 1 "
                           "to %u bytes", STORAGE_PLACEMENT_MAX);
  sqlite3_stmt *s = st->stmt[S_ATTACH];
  int rc = storage__bind_digest_key(st, s, k, graph_digest, options_digest,
                                    &bk);
  if (rc)
    return rc;
  sqlite3_bind_blob(s, 5, placement, (int)len, SQLITE_STATIC);
  sqlite3_bind_int64(s, 6, (sqlite3_int64)len);
  rc = storage__run(s); /* one statement: its own transaction */
  if (rc != SQLITE_OK)
    return storage__sqlerr(st, rc, "cannot store a placement record");
  if (sqlite3_changes(st->db) == 0)
    return storage__seterr(st, ARENA_ENOENT, "no plan stored under that key");
  return 0;
}

int storage_list(storage_t *st, const struct storage_list_query *q,
                 struct storage_record **out, size_t *n_out)
{
  *out = NULL;
  *n_out = 0;
  storage__clear_err(st);
  if (!q || q->limit < 1 || q->limit > STORAGE_LIST_MAX ||
      (q->model_hash && (q->model_hash_len < 1 ||
                         q->model_hash_len > STORAGE_MODEL_HASH_MAX)) ||
      (q->order != STORAGE_ORDER_NEWEST &&
       q->order != STORAGE_ORDER_MOST_USED) ||
      q->offset > (size_t)INT64_MAX)
    return storage__seterr(st, ARENA_EINVAL, "bad list query");
  int rc = storage_flush(st);
  if (rc)
    return rc;
  int which = q->order == STORAGE_ORDER_NEWEST
                  ? (q->model_hash ? S_LIST_NEW_MODEL : S_LIST_NEW)
                  : (q->model_hash ? S_LIST_USED_MODEL : S_LIST_USED);
  sqlite3_stmt *s = st->stmt[which];
  if (q->model_hash)
    sqlite3_bind_blob(s, 1, q->model_hash, (int)q->model_hash_len,
                      SQLITE_STATIC);
  sqlite3_bind_int64(s, 2, (sqlite3_int64)q->limit);
  sqlite3_bind_int64(s, 3, (sqlite3_int64)q->offset);
  return collect_entries(st, s, q->limit, 0, out, n_out);
}

/* ---- pending work and export ------------------------------------------- */

int storage_pending(storage_t *st, size_t max, uint64_t max_tensors,
                    struct storage_record **out, size_t *n_out)
{
  *out = NULL;
  *n_out = 0;
  storage__clear_err(st);
  if (max < 1 || max > STORAGE_LIST_MAX)
    return storage__seterr(st, ARENA_EINVAL, "pending takes 1..%u plans",
                           STORAGE_LIST_MAX);
  int rc = storage_flush(st); /* so that "most hits" is current */
  if (rc)
    return rc;
  sqlite3_stmt *s = st->stmt[S_PENDING];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)max);
  sqlite3_bind_int64(s, 2, max_tensors > INT64_MAX ? INT64_MAX
                                                   : (sqlite3_int64)max_tensors);
  return collect_entries(st, s, max, WITH_GRAPH, out, n_out);
}

/* Binds an export's filters (?1..?4) to s. *empty is set when the model
 * hash filter and the key's model hash differ, so nothing can match. */
static void bind_export(sqlite3_stmt *s, const struct storage_export_query *q,
                        const struct storage__entry_key *ek,
                        const struct bound_key *bk, int *empty)
{
  *empty = 0;
  if (q->key) {
    if (q->model_hash && (q->model_hash_len != ek->hash_len ||
                          memcmp(q->model_hash, ek->hash, ek->hash_len)))
      *empty = 1;
    sqlite3_bind_blob(s, 1, ek->hash, (int)ek->hash_len, SQLITE_STATIC);
    sqlite3_bind_blob(s, 2, bk->shape, (int)bk->shape_len, SQLITE_STATIC);
    sqlite3_bind_blob(s, 3, bk->gd, PLANNER_DIGEST_LEN, SQLITE_STATIC);
    sqlite3_bind_blob(s, 4, bk->od, PLANNER_DIGEST_LEN, SQLITE_STATIC);
  } else if (q->model_hash) {
    sqlite3_bind_blob(s, 1, q->model_hash, (int)q->model_hash_len,
                      SQLITE_STATIC);
  }
}

/* Counts the plans the export's filters select that have no graph. */
static int count_without(storage_t *st, const struct storage_export_query *q,
                         const struct storage__entry_key *ek,
                         const struct bound_key *bk, size_t *n_without)
{
  int empty;
  sqlite3_stmt *s = st->stmt[S_EXPORT_WITHOUT];
  bind_export(s, q, ek, bk, &empty);
  int rc = sqlite3_step(s);
  int64_t n = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
  storage__done(s);
  if (rc != SQLITE_ROW)
    return storage__sqlerr(st, rc, "cannot count plans without a graph");
  *n_without = empty ? 0 : (size_t)n;
  return 0;
}

static int export_query_ok(const struct storage_export_query *q)
{
  return q && q->limit >= 1 && q->limit <= STORAGE_LIST_MAX &&
         q->offset <= (size_t)INT64_MAX &&
         (!q->model_hash || (q->model_hash_len >= 1 &&
                             q->model_hash_len <= STORAGE_MODEL_HASH_MAX));
}

/* storage_export with the key (if any) decoded into ek and bk. */
static int export_rows(storage_t *st, const struct storage_export_query *q,
                       const struct storage__entry_key *ek,
                       const struct bound_key *bk,
                       struct storage_record **out, size_t *n_out,
                       size_t *n_without)
{
  int empty;
  if (n_without) {
    int rc = count_without(st, q, ek, bk, n_without);
    if (rc)
      return rc;
  }
  sqlite3_stmt *s = st->stmt[S_EXPORT];
  bind_export(s, q, ek, bk, &empty);
  if (empty) {
    storage__done(s);
    return 0;
  }
  sqlite3_bind_int64(s, 5, (sqlite3_int64)q->limit);
  sqlite3_bind_int64(s, 6, (sqlite3_int64)q->offset);
  return collect_entries(st, s, q->limit, WITH_GRAPH | VERIFY, out, n_out);
}

int storage_export(storage_t *st, const struct storage_export_query *q,
                   struct storage_record **out, size_t *n_out,
                   size_t *n_without)
{
  struct storage__entry_key ek;
  struct bound_key bk;
  *out = NULL;
  *n_out = 0;
  if (n_without)
    *n_without = 0;
  storage__clear_err(st);
  memset(&ek, 0, sizeof ek);
  memset(&bk, 0, sizeof bk);
  if (!export_query_ok(q))
    return storage__seterr(st, ARENA_EINVAL, "bad export query");
  if (q->key) {
    int rc = storage__entry_key_decode(q->key, q->key_len, &ek);
    if (rc == 0)
      rc = storage__bind_key_prepare(st, &ek.key, NULL, NULL, &bk);
    if (rc) {
      storage__entry_key_cleanup(&ek);
      return storage__seterr(st, rc, rc == ARENA_ENOMEM ? "out of memory"
                                                        : "bad entry key");
    }
    memcpy(bk.gd, ek.graph_digest, PLANNER_DIGEST_LEN);
    memcpy(bk.od, ek.options_digest, PLANNER_DIGEST_LEN);
  }
  int rc = export_rows(st, q, &ek, &bk, out, n_out, n_without);
  storage__entry_key_cleanup(&ek);
  return rc;
}

/* ---- evict -------------------------------------------------------------- */

/* Runs one bound DELETE and counts it in stats.removed, in one
 * transaction. */
static int remove_txn(storage_t *st, sqlite3_stmt *s, uint64_t *n_removed)
{
  uint64_t dummy;
  n_removed = n_removed ? n_removed : &dummy;
  *n_removed = 0;
  int rc = storage__begin(st);
  if (rc != SQLITE_OK) {
    storage__done(s);
    return storage__sqlerr(st, rc, "cannot start a write transaction");
  }
  uint64_t n = 0;
  if ((rc = storage__run(s)) == SQLITE_OK) {
    n = (uint64_t)sqlite3_changes64(st->db);
    if (n)
      rc = storage__stats_add(st, 0, 0, 0, n, 0);
  }
  if (rc == SQLITE_OK)
    rc = storage__commit(st);
  if (rc != SQLITE_OK) {
    storage__sqlerr(st, rc, "cannot remove plans");
    storage__rollback(st);
    return storage__err_of(rc);
  }
  *n_removed = n;
  return 0;
}

int storage_evict(storage_t *st, const struct storage_key *k,
                  const uint8_t graph_digest[PLANNER_DIGEST_LEN],
                  const uint8_t options_digest[PLANNER_DIGEST_LEN],
                  uint64_t *n_removed)
{
  struct bound_key bk;
  if (n_removed)
    *n_removed = 0;
  storage__clear_err(st);
  if (!graph_digest || !options_digest)
    return storage__seterr(st, ARENA_EINVAL, "evict needs both digests");
  sqlite3_stmt *s = st->stmt[S_DELETE_KEY];
  int rc = storage__bind_digest_key(st, s, k, graph_digest, options_digest,
                                    &bk);
  if (rc)
    return rc;
  return remove_txn(st, s, n_removed);
}

int storage_evict_model(storage_t *st, const uint8_t *model_hash,
                        size_t model_hash_len, uint64_t *n_removed)
{
  if (n_removed)
    *n_removed = 0;
  storage__clear_err(st);
  if (!model_hash || model_hash_len < 1 ||
      model_hash_len > STORAGE_MODEL_HASH_MAX)
    return storage__seterr(st, ARENA_EINVAL, "model hash must be 1..64 bytes");
  sqlite3_stmt *s = st->stmt[S_DELETE_MODEL];
  sqlite3_bind_blob(s, 1, model_hash, (int)model_hash_len, SQLITE_STATIC);
  return remove_txn(st, s, n_removed);
}

int storage_evict_all(storage_t *st, uint64_t *n_removed)
{
  storage__clear_err(st);
  return remove_txn(st, st->stmt[S_DELETE_ALL], n_removed);
}

/* ---- stats and vacuum --------------------------------------------------- */

static uint64_t file_size(const char *path, const char *suffix)
{
  char name[4096];
  struct stat sb;
  snprintf(name, sizeof name, "%s%s", path, suffix);
  return stat(name, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

int storage_get_stats(storage_t *st, struct storage_stats *out)
{
  memset(out, 0, sizeof *out);
  storage__clear_err(st);
  sqlite3_stmt *s = st->stmt[S_STATS_GET];
  int rc = sqlite3_step(s);
  if (rc != SQLITE_ROW) {
    storage__done(s);
    return storage__sqlerr(st, rc == SQLITE_DONE ? SQLITE_CORRUPT : rc,
                  "cannot read stats");
  }
  out->entries = (uint64_t)sqlite3_column_int64(s, 0);
  out->bytes = (uint64_t)sqlite3_column_int64(s, 1);
  out->hits = (uint64_t)sqlite3_column_int64(s, 2) + st->pend.hits;
  out->misses = (uint64_t)sqlite3_column_int64(s, 3) + st->pend.misses;
  out->evictions = (uint64_t)sqlite3_column_int64(s, 4);
  out->removed = (uint64_t)sqlite3_column_int64(s, 5);
  out->corrupt_dropped = (uint64_t)sqlite3_column_int64(s, 6);
  storage__done(s);
  out->file_bytes = file_size(st->path, "") + file_size(st->path, "-wal");
  return 0;
}

int storage_vacuum(storage_t *st)
{
  int rc = storage_flush(st);
  if (rc)
    return rc;
  /* VACUUM rewrites the database; the TRUNCATE checkpoints around it move
   * the WAL into the file and shrink the WAL back to zero bytes. */
  static const char *const steps[] = {"PRAGMA wal_checkpoint(TRUNCATE)",
                                      "VACUUM",
                                      "PRAGMA wal_checkpoint(TRUNCATE)"};
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    int src = sqlite3_exec(st->db, steps[i], NULL, NULL, NULL);
    if (src != SQLITE_OK)
      return storage__sqlerr(st, src, steps[i]);
  }
  return 0;
}

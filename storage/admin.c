/*
 * admin.c - the plan cache's inspection and maintenance calls: lookup by
 * model hash and shape, listing, eviction, statistics and vacuum
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

void storage_records_free(struct storage_record *r, size_t n)
{
  if (!r)
    return;
  for (size_t i = 0; i < n; i++) {
    free(r[i].ranks);
    free(r[i].dims);
    planner_plan_cleanup(&r[i].plan);
  }
  free(r);
}

/* Turns the current row into rec. Returns 0, ARENA_ECORRUPT or
 * ARENA_ENOMEM. */
static int make_record(const struct row_view *v, struct storage_record *rec)
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
  return storage__offsets_decode(v->r.offsets, v->r.offsets_len, n, NULL,
                                 rec->plan.offsets);
}

/* Steps s (bound by the caller) and collects up to max records. Bad rows
 * are deleted after the statement is reset, and left out. */
static int collect_entries(storage_t *st, sqlite3_stmt *s, size_t max,
                           struct storage_record **out, size_t *n_out)
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
      r = make_record(&v, &recs[n]);
    if (r == ARENA_ENOMEM) {
      rc = storage__seterr(st, r, "out of memory");
      storage_records_free(recs, n + 1);
      recs = NULL;
      break;
    }
    if (r) {
      free(recs[n].ranks);
      free(recs[n].dims);
      planner_plan_cleanup(&recs[n].plan);
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
                          "checksum mismatch or a value that does not decode");
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

int storage_lookup(storage_t *st, const struct storage_key *k,
                           struct storage_record **out, size_t *n_out)
{
  struct bound_key bk;
  *out = NULL;
  *n_out = 0;
  storage__clear_err(st);
  int rc = storage__bind_key_prepare(st, k, NULL, NULL, &bk);
  if (rc)
    return rc;
  sqlite3_stmt *s = st->stmt[S_LOOKUP];
  sqlite3_bind_blob(s, 1, k->model_hash, (int)k->model_hash_len,
                    SQLITE_STATIC);
  sqlite3_bind_blob(s, 2, bk.shape, (int)bk.shape_len, SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, STORAGE_LOOKUP_MAX);
  return collect_entries(st, s, STORAGE_LOOKUP_MAX, out, n_out);
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
  return collect_entries(st, s, q->limit, out, n_out);
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
  int rc = storage__bind_key_prepare(st, k, NULL, NULL, &bk);
  if (rc)
    return rc;
  memcpy(bk.gd, graph_digest, PLANNER_DIGEST_LEN);
  memcpy(bk.od, options_digest, PLANNER_DIGEST_LEN);
  sqlite3_stmt *s = st->stmt[S_DELETE_KEY];
  storage__bind_key(s, k, &bk);
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

/*
 * stmt.c - the helpers under every call of the plan cache: the handle's
 * error text, running statements, IMMEDIATE transactions, the stats row's
 * counters, binding a key, reading a row and dropping a corrupt one
 * (declared in storage_int.h).
 *
 * The lowest layer of the handle's files: it may use schema.c (logging,
 * error codes) and codec.c (key and value encodings), and is used by
 * write.c, get.c and admin.c. It calls none of them.
 */
#include "storage_int.h"

#include <stdio.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------ */

int storage__seterr(storage_t *st, int code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->errmsg, sizeof st->errmsg, fmt, ap);
  va_end(ap);
  return code;
}

/* Records a sqlite failure as the handle's error. */
int storage__sqlerr(storage_t *st, int rc, const char *what)
{
  /* The connection's message describes rc only while nothing else has run
   * since: the ROLLBACK after a failed COMMIT replaces it (with "cannot
   * rollback - no transaction is active" when a full disk already rolled
   * back). Then rc's own text is the truth. */
  const char *msg = (sqlite3_errcode(st->db) & 0xff) == (rc & 0xff)
                        ? sqlite3_errmsg(st->db)
                        : sqlite3_errstr(rc);
  return storage__seterr(st, storage__err_of(rc), "%s: %s", what, msg);
}

void storage__clear_err(storage_t *st)
{
  st->errmsg[0] = '\0';
}

/* Resets a statement and drops its bindings so that no blob stays
 * referenced and no read transaction stays open. */
void storage__done(sqlite3_stmt *s)
{
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
}

/* Runs a statement that returns no rows. Returns the sqlite code. */
int storage__run(sqlite3_stmt *s)
{
  int rc = sqlite3_step(s);
  storage__done(s);
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

int storage__begin(storage_t *st)
{
  return storage__run(st->stmt[S_BEGIN]);
}

int storage__commit(storage_t *st)
{
  int rc = storage__run(st->stmt[S_COMMIT]);
  if (rc != SQLITE_OK)
    (void)storage__run(st->stmt[S_ROLLBACK]);
  return rc;
}

void storage__rollback(storage_t *st)
{
  if (!sqlite3_get_autocommit(st->db))
    (void)storage__run(st->stmt[S_ROLLBACK]);
}

int storage__stats_add(storage_t *st, uint64_t hits, uint64_t misses,
                     uint64_t evictions, uint64_t removed, uint64_t corrupt)
{
  sqlite3_stmt *s = st->stmt[S_STATS_ADD];
  sqlite3_bind_int64(s, 1, (sqlite3_int64)hits);
  sqlite3_bind_int64(s, 2, (sqlite3_int64)misses);
  sqlite3_bind_int64(s, 3, (sqlite3_int64)evictions);
  sqlite3_bind_int64(s, 4, (sqlite3_int64)removed);
  sqlite3_bind_int64(s, 5, (sqlite3_int64)corrupt);
  return storage__run(s);
}

/* Validates k, encodes its shape and computes both digests. g may be
 * NULL for calls that take digests from the caller instead. */
int storage__bind_key_prepare(storage_t *st, const struct storage_key *k,
                            const struct planner_graph *g,
                            const struct planner_options *o,
                            struct bound_key *bk)
{
  size_t len = 0;
  int rc;
  if (!k)
    return storage__seterr(st, ARENA_EINVAL, "no key");
  rc = storage__shape_encode(k, &st->shape_buf, &st->shape_cap, &len);
  if (rc)
    return storage__seterr(st, rc, rc == ARENA_EINVAL
                              ? "bad key: model hash must be 1..64 bytes, "
                                "shape within limits, dims >= 0"
                              : "out of memory");
  bk->shape = st->shape_buf;
  bk->shape_len = len;
  if (g) {
    if ((rc = planner_graph_digest(g, bk->gd)))
      return storage__seterr(st, rc, "cannot digest the graph: %s",
                    arena_strerror(rc));
    planner_options_digest(o, bk->od);
  }
  return 0;
}

void storage__bind_key(sqlite3_stmt *s, const struct storage_key *k,
                     const struct bound_key *bk)
{
  sqlite3_bind_blob(s, 1, k->model_hash, (int)k->model_hash_len,
                    SQLITE_STATIC);
  sqlite3_bind_blob(s, 2, bk->shape, (int)bk->shape_len, SQLITE_STATIC);
  sqlite3_bind_blob(s, 3, bk->gd, PLANNER_DIGEST_LEN, SQLITE_STATIC);
  sqlite3_bind_blob(s, 4, bk->od, PLANNER_DIGEST_LEN, SQLITE_STATIC);
}

int storage__bind_digest_key(storage_t *st, sqlite3_stmt *s,
                             const struct storage_key *k,
                             const uint8_t *graph_digest,
                             const uint8_t *options_digest,
                             struct bound_key *bk)
{
  int rc = storage__bind_key_prepare(st, k, NULL, NULL, bk);
  if (rc)
    return rc;
  memcpy(bk->gd, graph_digest, PLANNER_DIGEST_LEN);
  memcpy(bk->od, options_digest, PLANNER_DIGEST_LEN);
  storage__bind_key(s, k, bk);
  return 0;
}

static const uint8_t *col_blob(sqlite3_stmt *s, int i, size_t *len)
{
  const uint8_t *p = sqlite3_column_blob(s, i);
  *len = (size_t)sqlite3_column_bytes(s, i);
  return p;
}

/* Reads the current row. Returns 0, or ARENA_ECORRUPT when a column has
 * the wrong size or type (the row then counts as corrupt). */
int storage__read_row(sqlite3_stmt *s, struct row_view *v)
{
  size_t len;
  static const uint8_t empty[1] = {0};
  memset(v, 0, sizeof *v);
  v->id = sqlite3_column_int64(s, 0);
  v->r.model_hash = col_blob(s, 1, &v->r.model_hash_len);
  v->r.shape = col_blob(s, 2, &v->r.shape_len);
  v->r.graph_digest = col_blob(s, 3, &len);
  if (len != PLANNER_DIGEST_LEN)
    return ARENA_ECORRUPT;
  v->r.options_digest = col_blob(s, 4, &len);
  if (len != PLANNER_DIGEST_LEN)
    return ARENA_ECORRUPT;
  v->r.n_tensors = (uint64_t)sqlite3_column_int64(s, 5);
  v->have_offsets = sqlite3_column_type(s, 6) != SQLITE_NULL;
  v->r.offsets = col_blob(s, 6, &v->r.offsets_len);
  v->r.arena_bytes = (uint64_t)sqlite3_column_int64(s, 7);
  v->r.lower_bound = (uint64_t)sqlite3_column_int64(s, 8);
  v->r.naive_bytes = (uint64_t)sqlite3_column_int64(s, 9);
  v->r.proven_optimal = (uint32_t)sqlite3_column_int64(s, 10);
  v->r.algo = (uint32_t)sqlite3_column_int64(s, 11);
  v->r.fit = (uint32_t)sqlite3_column_int64(s, 12);
  v->r.bound = (uint32_t)sqlite3_column_int64(s, 13);
  v->r.plan_us = (uint64_t)sqlite3_column_int64(s, 14);
  v->r.created_ms = sqlite3_column_int64(s, 15);
  v->last_used_ms = sqlite3_column_int64(s, 16);
  v->hits = (uint64_t)sqlite3_column_int64(s, 17);
  v->checksum = col_blob(s, 18, &len);
  if (len != PLANNER_DIGEST_LEN)
    return ARENA_ECORRUPT;
  v->bytes = (uint64_t)sqlite3_column_int64(s, 19);
  if (v->have_offsets) {
    v->head = v->r.offsets;
    v->head_len = v->r.offsets_len;
  } else {
    v->head = col_blob(s, 20, &v->head_len);
  }
  v->x.effort = (uint32_t)sqlite3_column_int64(s, 21);
  v->effort_tried = (uint32_t)sqlite3_column_int64(s, 22);
  v->generation = (uint64_t)sqlite3_column_int64(s, 23);
  v->improve_done = sqlite3_column_int64(s, 24) != 0;
  v->has_graph = sqlite3_column_int64(s, 25) != 0;
  if (v->has_graph && sqlite3_column_count(s) > 28) {
    v->have_graph = 1;
    v->graph_sum = col_blob(s, 26, &len);
    if (len != PLANNER_DIGEST_LEN)
      return ARENA_ECORRUPT;
    v->x.opts = col_blob(s, 27, &v->x.opts_len);
    v->x.graph = col_blob(s, 28, &v->x.graph_len);
    if (!v->x.opts || !v->x.graph)
      return ARENA_ECORRUPT;
    if (sqlite3_column_count(s) > 29 &&
        sqlite3_column_type(s, 29) == SQLITE_BLOB) {
      v->placement = col_blob(s, 29, &v->placement_len);
      if (v->placement_len > STORAGE_PLACEMENT_MAX) { /* never written so */
        v->placement = NULL;
        v->placement_len = 0;
      }
    }
  }
  if (!v->r.model_hash || v->r.model_hash_len < 1 ||
      v->r.model_hash_len > STORAGE_MODEL_HASH_MAX || !v->r.shape)
    return ARENA_ECORRUPT;
  if (!v->r.offsets)
    v->r.offsets = empty; /* length 0, so never read */
  if (!v->head)
    v->head = empty; /* length 0: refused as a bad head */
  if (v->r.n_tensors > PLANNER_MAX_TENSORS)
    return ARENA_ECORRUPT;
  return 0;
}

/* Returns 1 when the row's stored checksum matches its contents. A
 * listing row without offsets cannot be checked and returns 1. */
int storage__checksum_ok(const struct row_view *v)
{
  if (!v->have_offsets)
    return 1;
  uint8_t sum[PLANNER_DIGEST_LEN];
  storage__checksum(&v->r, sum);
  return memcmp(sum, v->checksum, PLANNER_DIGEST_LEN) == 0;
}

/* Returns 1 when the graph columns read into v match their checksum,
 * which also covers the row's value checksum: a graph moved to another
 * row fails it. */
int storage__graph_ok(const struct row_view *v)
{
  if (!v->have_graph)
    return 0;
  uint8_t sum[PLANNER_DIGEST_LEN];
  storage__graph_checksum(v->checksum, &v->x, sum);
  return memcmp(sum, v->graph_sum, PLANNER_DIGEST_LEN) == 0;
}

void storage__fill_info(const struct row_view *v, struct storage_info *info)
{
  info->generation = v->generation;
  info->effort = v->x.effort;
  info->effort_tried = v->effort_tried;
  info->improve_done = v->improve_done;
  info->has_graph = v->has_graph;
  info->plan_us = v->r.plan_us;
  info->created_ms = v->r.created_ms;
  info->last_used_ms = v->last_used_ms;
  info->hits = v->hits;
  info->bytes = v->bytes;
  info->n_tensors = (size_t)v->r.n_tensors;
}

int storage__fill_plan_fields(const struct row_view *v, struct planner_plan *p)
{
  struct storage__share sh;
  if (storage__offsets_share(v->head, v->head_len, v->r.lower_bound, &sh))
    return ARENA_ECORRUPT;
  p->n_offsets = (size_t)v->r.n_tensors;
  p->arena_bytes = v->r.arena_bytes;
  p->lower_bound_bytes = v->r.lower_bound;
  p->naive_bytes = v->r.naive_bytes;
  p->algo = (enum planner_algo)v->r.algo;
  p->proven_optimal = (int)v->r.proven_optimal;
  p->fit = (enum planner_fit)v->r.fit;
  p->bound = (enum planner_bound)v->r.bound;
  p->lower_bound_unshared_bytes = sh.lb_unshared;
  p->n_shared = (size_t)sh.n_shared;
  return 0;
}

/* Deletes a row found bad, counts and logs it. Best effort: when the
 * delete itself fails, the row is still never served and the next reader
 * will try again. */
void storage__drop_corrupt(storage_t *st, int64_t id, const char *why)
{
  int rc = storage__begin(st);
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(st->stmt[S_DELETE_ID], 1, id);
    rc = storage__run(st->stmt[S_DELETE_ID]);
    if (rc == SQLITE_OK)
      rc = storage__stats_add(st, 0, 0, 0, 0, 1);
    rc = rc == SQLITE_OK ? storage__commit(st) : rc;
    if (rc != SQLITE_OK)
      storage__rollback(st);
  }
  if (rc == SQLITE_OK)
    storage__logf(&st->log, STORAGE_LOG_WARN,
                  "plan cache %s: deleted plan %lld: %s", st->path,
                  (long long)id, why);
  else
    storage__logf(&st->log, STORAGE_LOG_WARN,
                  "plan cache %s: plan %lld is bad (%s) but could not be "
                  "deleted: %s",
                  st->path, (long long)id, why, sqlite3_errmsg(st->db));
}

/*
 * write.c - the write path of the plan cache: storage_put (keep the better
 * plan, evict least-recently-used rows to stay within the caps) and the
 * writing of pending uses (storage_flush, storage_add_uses). See the
 * DESIGN section of storage.c for the transactions and the LRU clock.
 *
 * It may use stmt.c, codec.c and schema.c. storage.c (close), get.c (a
 * full batch of pending uses) and admin.c (before listing or vacuum) call
 * storage_flush here; this file calls none of them.
 */
#include "storage_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- flushing uses ------------------------------------------------------ */

/* Writes pending touches and counters inside the caller's transaction. */
static int flush_in_txn(storage_t *st)
{
  for (size_t i = 0; i < st->n_touches; i++) {
    sqlite3_stmt *s = st->stmt[S_TOUCH];
    sqlite3_bind_int64(s, 1, st->touches[i].when_ms);
    sqlite3_bind_int64(s, 2, st->touches[i].id);
    int rc = storage__run(s);
    if (rc != SQLITE_OK)
      return rc;
  }
  if (st->pend.hits || st->pend.misses)
    return storage__stats_add(st, st->pend.hits, st->pend.misses, 0, 0, 0);
  return SQLITE_OK;
}

/* Forgets what flush_in_txn wrote, once its transaction committed. */
static void flush_done(storage_t *st)
{
  st->n_touches = 0;
  memset(&st->pend, 0, sizeof st->pend);
}

static int add_use_in_txn(storage_t *st, const struct storage_use *u,
                          uint64_t *n_applied);

/* One transaction: the pending touches and counters, then uses u[0..n).
 * On failure nothing is written and the touches stay pending. */
static int write_uses(storage_t *st, const struct storage_use *u, size_t n,
                      uint64_t *n_applied)
{
  int rc = storage__begin(st);
  if (rc == SQLITE_OK)
    rc = flush_in_txn(st);
  for (size_t i = 0; rc == SQLITE_OK && i < n; i++)
    rc = add_use_in_txn(st, &u[i], n_applied);
  if (rc < 0) { /* an ARENA_E* code: add_use_in_txn set the message */
    storage__rollback(st);
    return rc;
  }
  if (rc == SQLITE_OK)
    rc = storage__commit(st);
  if (rc != SQLITE_OK) {
    storage__rollback(st);
    return storage__sqlerr(st, rc, "cannot write plan uses");
  }
  flush_done(st);
  return 0;
}

int storage_flush(storage_t *st)
{
  uint64_t none = 0;
  storage__clear_err(st);
  if (!st->n_touches && !st->pend.hits && !st->pend.misses)
    return 0;
  return write_uses(st, NULL, 0, &none);
}

/* Writes one storage_use inside the caller's transaction; adds the rows
 * it changed (0 or 1) to *n_applied. Returns an ARENA_E* code for a bad
 * key, else the sqlite code. */
static int add_use_in_txn(storage_t *st, const struct storage_use *u,
                          uint64_t *n_applied)
{
  struct bound_key bk;
  if (!u->graph_digest || !u->options_digest)
    return storage__seterr(st, ARENA_EINVAL, "a use needs both digests");
  int rc = storage__bind_key_prepare(st, &u->key, NULL, NULL, &bk);
  if (rc)
    return rc;
  memcpy(bk.gd, u->graph_digest, PLANNER_DIGEST_LEN);
  memcpy(bk.od, u->options_digest, PLANNER_DIGEST_LEN);
  sqlite3_stmt *s = st->stmt[S_ADD_USES];
  storage__bind_key(s, &u->key, &bk);
  sqlite3_bind_int64(s, 5, u->last_used_ms);
  sqlite3_bind_int64(s, 6, (sqlite3_int64)u->count);
  rc = storage__run(s);
  if (rc == SQLITE_OK)
    *n_applied += (uint64_t)sqlite3_changes(st->db);
  return rc;
}

int storage_add_uses(storage_t *st, const struct storage_use *u, size_t n,
                     uint64_t *n_applied)
{
  uint64_t applied = 0;
  if (n_applied)
    *n_applied = 0;
  storage__clear_err(st);
  if (n == 0)
    return 0;
  if (!u)
    return storage__seterr(st, ARENA_EINVAL, "no uses");
  int rc = write_uses(st, u, n, &applied);
  if (rc == 0 && n_applied)
    *n_applied = applied;
  return rc;
}

/* ---- put ---------------------------------------------------------------- */

/* Binds the value columns (?5..?17) shared by INSERT and UPGRADE. */
static void bind_value(sqlite3_stmt *s, const struct storage__row *r,
                       const uint8_t sum[PLANNER_DIGEST_LEN], uint64_t bytes)
{
  sqlite3_bind_int64(s, 5, (sqlite3_int64)r->n_tensors);
  sqlite3_bind_blob(s, 6, r->offsets, (int)r->offsets_len, SQLITE_STATIC);
  sqlite3_bind_int64(s, 7, (sqlite3_int64)r->arena_bytes);
  sqlite3_bind_int64(s, 8, (sqlite3_int64)r->lower_bound);
  sqlite3_bind_int64(s, 9, (sqlite3_int64)r->naive_bytes);
  sqlite3_bind_int64(s, 10, r->proven_optimal);
  sqlite3_bind_int64(s, 11, r->algo);
  sqlite3_bind_int64(s, 12, r->fit);
  sqlite3_bind_int64(s, 13, r->bound);
  sqlite3_bind_int64(s, 14, (sqlite3_int64)r->plan_us);
  sqlite3_bind_int64(s, 15, r->created_ms);
  sqlite3_bind_blob(s, 16, sum, PLANNER_DIGEST_LEN, SQLITE_TRANSIENT);
  sqlite3_bind_int64(s, 17, (sqlite3_int64)bytes);
}

/* What the put transaction found under the key. */
struct existing {
  int64_t id;          /* 0 when absent (or corrupt, then deleted) */
  uint64_t arena;      /* its arena bytes */
  int proven;          /* its proven_optimal flag */
};

/* Reads the row under the key inside the put transaction. A row that
 * fails its checksum is deleted and treated as absent. */
static int find_existing(storage_t *st, const struct storage_key *k,
                         const struct bound_key *bk, struct existing *ex,
                         uint64_t *n_corrupt)
{
  sqlite3_stmt *s = st->stmt[S_GET];
  struct row_view v;
  memset(ex, 0, sizeof *ex);
  storage__bind_key(s, k, bk);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) {
    storage__done(s);
    return SQLITE_OK;
  }
  if (rc != SQLITE_ROW) {
    storage__done(s);
    return rc;
  }
  int64_t id = sqlite3_column_int64(s, 0);
  int bad = storage__read_row(s, &v) != 0 || !storage__checksum_ok(&v);
  ex->id = id;
  ex->arena = v.r.arena_bytes;
  ex->proven = v.r.proven_optimal != 0;
  storage__done(s);
  if (!bad)
    return SQLITE_OK;
  sqlite3_bind_int64(st->stmt[S_DELETE_ID], 1, id);
  if ((rc = storage__run(st->stmt[S_DELETE_ID])) != SQLITE_OK)
    return rc;
  storage__logf(&st->log, STORAGE_LOG_WARN,
                "plan cache %s: deleted plan %lld: checksum mismatch",
                st->path, (long long)id);
  (*n_corrupt)++;
  memset(ex, 0, sizeof *ex);
  return SQLITE_OK;
}

/* Evicts least-recently-used rows other than keep_id until both caps
 * hold. Counts them in *n_evicted. */
static int enforce_caps(storage_t *st, int64_t keep_id, uint64_t *n_evicted)
{
  for (;;) {
    sqlite3_stmt *s = st->stmt[S_STATS_GET];
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
      storage__done(s);
      return rc == SQLITE_DONE ? SQLITE_CORRUPT : rc;
    }
    uint64_t entries = (uint64_t)sqlite3_column_int64(s, 0);
    uint64_t bytes = (uint64_t)sqlite3_column_int64(s, 1);
    storage__done(s);
    int over = (st->opt.max_entries && entries > st->opt.max_entries) ||
               (st->opt.max_bytes && bytes > st->opt.max_bytes);
    if (!over)
      return SQLITE_OK;
    s = st->stmt[S_LRU_VICTIM];
    sqlite3_bind_int64(s, 1, keep_id);
    rc = sqlite3_step(s);
    int64_t victim = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    storage__done(s);
    if (rc == SQLITE_DONE)
      return SQLITE_OK; /* only keep_id left; put checked it fits */
    if (rc != SQLITE_ROW)
      return rc;
    sqlite3_bind_int64(st->stmt[S_DELETE_ID], 1, victim);
    if ((rc = storage__run(st->stmt[S_DELETE_ID])) != SQLITE_OK)
      return rc;
    (*n_evicted)++;
  }
}

/* Whether a new plan should replace the stored one. */
static int is_better(const struct planner_plan *p, const struct existing *ex)
{
  if (p->arena_bytes != ex->arena)
    return p->arena_bytes < ex->arena;
  return p->proven_optimal && !ex->proven;
}

/* The write half of put: one IMMEDIATE transaction. */
static int put_txn(storage_t *st, const struct storage_key *k,
                   const struct bound_key *bk, const struct storage__row *r,
                   const struct planner_plan *p, enum storage_put_result *res)
{
  uint8_t sum[PLANNER_DIGEST_LEN];
  uint64_t bytes = storage__entry_bytes(r);
  uint64_t n_corrupt = 0, n_evicted = 0;
  struct existing ex;
  int64_t keep_id;
  storage__checksum(r, sum);

  int rc = storage__begin(st);
  if (rc != SQLITE_OK)
    return storage__sqlerr(st, rc, "cannot start a write transaction");
  if ((rc = flush_in_txn(st)) != SQLITE_OK ||
      (rc = find_existing(st, k, bk, &ex, &n_corrupt)) != SQLITE_OK)
    goto fail;
  if (ex.id && !is_better(p, &ex)) {
    *res = STORAGE_PUT_KEPT;
    keep_id = ex.id;
  } else {
    sqlite3_stmt *s = st->stmt[ex.id ? S_UPGRADE : S_INSERT];
    storage__bind_key(s, k, bk);
    bind_value(s, r, sum, bytes);
    if (ex.id)
      sqlite3_bind_int64(s, 18, ex.id);
    if ((rc = storage__run(s)) != SQLITE_OK)
      goto fail;
    keep_id = ex.id ? ex.id : sqlite3_last_insert_rowid(st->db);
    *res = ex.id ? STORAGE_PUT_UPGRADED : STORAGE_PUT_INSERTED;
  }
  if ((rc = enforce_caps(st, keep_id, &n_evicted)) != SQLITE_OK)
    goto fail;
  if ((n_evicted || n_corrupt) &&
      (rc = storage__stats_add(st, 0, 0, n_evicted, 0, n_corrupt)) != SQLITE_OK)
    goto fail;
  if ((rc = storage__commit(st)) != SQLITE_OK)
    return storage__sqlerr(st, rc, "cannot commit a plan");
  flush_done(st);
  return 0;

fail:
  storage__sqlerr(st, rc, "cannot store a plan");
  storage__rollback(st);
  return storage__err_of(rc);
}

int storage_put(storage_t *st, const struct storage_key *k,
                const struct planner_graph *g,
                const struct planner_options *o,
                const struct planner_plan *p, uint64_t plan_us,
                enum storage_put_result *res)
{
  enum storage_put_result dummy;
  struct bound_key bk;
  char verr[ARENA_ERR_LEN];
  size_t *perm = NULL;
  uint8_t *blob = NULL;
  size_t blob_len = 0;
  struct storage__share sh;
  int rc;

  res = res ? res : &dummy;
  *res = 0;
  storage__clear_err(st);
  if (!g || !o || !p)
    return storage__seterr(st, ARENA_EINVAL, "put needs a graph, options and a plan");
  if ((rc = storage__bind_key_prepare(st, k, g, o, &bk)))
    return rc;
  if ((rc = planner_verify(g, o, p, verr)))
    return storage__seterr(st, rc, "plan rejected: %s", verr);
  if ((rc = storage__canonical_perm(g, &perm)) ||
      (rc = storage__offsets_encode(p->offsets, p->n_offsets, perm,
                                    storage__share_of(p, &sh) ? &sh : NULL,
                                    &blob, &blob_len))) {
    free(perm);
    return storage__seterr(st, rc, "out of memory");
  }
  free(perm);

  struct storage__row r = {
      .model_hash = k->model_hash,
      .model_hash_len = k->model_hash_len,
      .shape = bk.shape,
      .shape_len = bk.shape_len,
      .graph_digest = bk.gd,
      .options_digest = bk.od,
      .n_tensors = p->n_offsets,
      .offsets = blob,
      .offsets_len = blob_len,
      .arena_bytes = p->arena_bytes,
      .lower_bound = p->lower_bound_bytes,
      .naive_bytes = p->naive_bytes,
      .proven_optimal = p->proven_optimal ? 1u : 0u,
      .algo = (uint32_t)p->algo,
      .fit = (uint32_t)p->fit,
      .bound = (uint32_t)p->bound,
      .plan_us = plan_us,
      .created_ms = storage__now_ms(),
  };
  uint64_t bytes = storage__entry_bytes(&r);
  if (st->opt.max_bytes && bytes > st->opt.max_bytes)
    rc = storage__seterr(st, ARENA_ETOOBIG,
                "plan needs %llu accounted bytes, cap is %llu",
                (unsigned long long)bytes,
                (unsigned long long)st->opt.max_bytes);
  else if (blob_len > (size_t)INT32_MAX)
    rc = storage__seterr(st, ARENA_ETOOBIG, "offsets blob of %zu bytes is too big",
                blob_len);
  else
    rc = put_txn(st, k, &bk, &r, p, res);
  free(blob);
  return rc;
}

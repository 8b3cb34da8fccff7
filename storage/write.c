/*
 * write.c - the write path of the plan cache: storage_put and
 * storage_put_effort (keep the better plan with its graph, options and
 * effort; evict least-recently-used rows to stay within the caps),
 * storage_preload (many plans, all or nothing, in batches if the caller
 * likes), storage_note_tried, and the writing of pending uses
 * (storage_flush, storage_add_uses). See the DESIGN section of storage.c
 * for the transactions and the LRU clock.
 *
 * A put checks and encodes its plan (prepare) before its transaction
 * starts, so the transaction only reads and writes rows. A preload
 * cannot: all or nothing needs one transaction, and holding every
 * prepared entry until it starts would cost memory in proportion to the
 * bundle. So a preload prepares and writes one entry at a time inside
 * its transaction, and a failure rolls back every entry before it.
 *
 * It may use stmt.c, codec.c and schema.c. storage.c (close), get.c (a
 * full batch of pending uses) and admin.c (before listing or vacuum) call
 * storage_flush here; this file calls none of them.
 */
#include "storage_int.h"

#include <stdint.h>
#include <stdio.h>
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
  sqlite3_stmt *s = st->stmt[S_ADD_USES];
  int rc = storage__bind_digest_key(st, s, &u->key, u->graph_digest,
                                    u->options_digest, &bk);
  if (rc)
    return rc;
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

/* ---- preparing a plan --------------------------------------------------- */

/* A plan ready to be written: every encoding, both checksums and the
 * accounted bytes, computed before any transaction starts. Owns its
 * blobs; the key it was made from is borrowed. */
struct prepared {
  const struct storage_key *k;     /* borrowed from the caller */
  struct bound_key bk;             /* shape points at shape below */
  struct storage__row r;           /* checksummed fields */
  struct storage__graph_row x;     /* graph columns */
  uint8_t *shape;                  /* owned copy of the shape blob */
  uint8_t *offsets;                /* owned offsets blob */
  uint8_t *graph;                  /* owned graph blob */
  uint8_t opts[STORAGE__OPTS_MAX]; /* options blob, x.opts_len bytes */
  uint8_t sum[PLANNER_DIGEST_LEN];       /* value checksum */
  uint8_t graph_sum[PLANNER_DIGEST_LEN]; /* graph columns' checksum */
  uint64_t bytes;                  /* accounted bytes of the row */
  int done;                        /* improve_done on insert or upgrade */
};

static void prepared_free(struct prepared *w)
{
  free(w->shape);
  free(w->offsets);
  free(w->graph);
  memset(w, 0, sizeof *w);
}

/* Encodes the plan's blobs (offsets and graph in canonical order) into w.
 * Returns 0 or ARENA_ENOMEM / ARENA_EINVAL with the message set. */
static int encode_blobs(storage_t *st, const struct planner_graph *g,
                        const struct planner_options *o,
                        const struct planner_plan *p, struct prepared *w)
{
  size_t *perm = NULL, offsets_len = 0, graph_len = 0;
  struct storage__share sh;
  int rc = storage__canonical_perm(g, &perm);
  if (!rc)
    rc = storage__offsets_encode(p->offsets, p->n_offsets, perm,
                                 storage__share_of(p, &sh) ? &sh : NULL,
                                 &w->offsets, &offsets_len);
  if (!rc)
    rc = storage__graph_encode(g, perm, &w->graph, &graph_len);
  free(perm);
  if (rc)
    return storage__seterr(st, rc, "cannot encode the plan: %s",
                           arena_strerror(rc));
  w->r.offsets = w->offsets;
  w->r.offsets_len = offsets_len;
  w->x.graph = w->graph;
  w->x.graph_len = graph_len;
  w->x.opts = w->opts;
  w->x.opts_len = storage__opts_encode(o, w->opts);
  return 0;
}

/* Fills the plan fields of w->r from p. */
static void fill_row(struct prepared *w, const struct planner_plan *p,
                     uint64_t plan_us)
{
  w->r.model_hash = w->k->model_hash;
  w->r.model_hash_len = w->k->model_hash_len;
  w->r.shape = w->shape;
  w->r.shape_len = w->bk.shape_len;
  w->r.graph_digest = w->bk.gd;
  w->r.options_digest = w->bk.od;
  w->r.n_tensors = p->n_offsets;
  w->r.arena_bytes = p->arena_bytes;
  w->r.lower_bound = p->lower_bound_bytes;
  w->r.naive_bytes = p->naive_bytes;
  w->r.proven_optimal = p->proven_optimal ? 1u : 0u;
  w->r.algo = (uint32_t)p->algo;
  w->r.fit = (uint32_t)p->fit;
  w->r.bound = (uint32_t)p->bound;
  w->r.plan_us = plan_us;
  w->r.created_ms = storage__now_ms();
}

/* Checks plan p of graph g under options o and key k (all borrowed) and
 * prepares its row in w (prepared_free() it, whatever this returns).
 * Returns 0 or the put's error codes with the message set. */
static int prepare(storage_t *st, const struct storage_key *k,
                   const struct planner_graph *g,
                   const struct planner_options *o,
                   const struct planner_plan *p, uint64_t plan_us,
                   uint32_t effort, int done, struct prepared *w)
{
  char verr[ARENA_ERR_LEN];
  int rc;
  memset(w, 0, sizeof *w);
  if (!g || !o || !p)
    return storage__seterr(st, ARENA_EINVAL,
                           "put needs a graph, options and a plan");
  if ((rc = storage__bind_key_prepare(st, k, g, o, &w->bk)))
    return rc;
  if ((rc = planner_verify(g, o, p, verr)))
    return storage__seterr(st, rc, "plan rejected: %s", verr);
  uint64_t cap = storage__arena_cap(g, o);
  if (p->arena_bytes > cap)
    return storage__seterr(st, ARENA_EVERIFY,
                           "plan rejected: its arena of %llu %s is above "
                           "the %llu %s that every tensor in bytes of its "
                           "own takes",
                           (unsigned long long)p->arena_bytes,
                           storage__noun(p->arena_bytes, "byte", "bytes"),
                           (unsigned long long)cap,
                           storage__noun(cap, "byte", "bytes"));
  w->k = k;
  w->shape = malloc(w->bk.shape_len);
  if (!w->shape)
    return storage__seterr(st, ARENA_ENOMEM, "out of memory");
  memcpy(w->shape, w->bk.shape, w->bk.shape_len);
  w->bk.shape = w->shape;
  if ((rc = encode_blobs(st, g, o, p, w)))
    return rc;
  fill_row(w, p, plan_us);
  w->x.effort = effort;
  w->done = done || p->proven_optimal;
  storage__checksum(&w->r, w->sum);
  storage__graph_checksum(w->sum, &w->x, w->graph_sum);
  w->bytes = storage__entry_bytes(&w->r) + storage__graph_bytes(&w->x);
  if (st->opt.max_bytes && w->bytes > st->opt.max_bytes)
    return storage__seterr(st, ARENA_ETOOBIG,
                           "plan needs %llu accounted bytes, cap is %llu",
                           (unsigned long long)w->bytes,
                           (unsigned long long)st->opt.max_bytes);
  if (w->r.offsets_len > (size_t)INT32_MAX ||
      w->x.graph_len > (size_t)INT32_MAX)
    return storage__seterr(st, ARENA_ETOOBIG,
                           "a blob of this plan is too big (%zu, %zu bytes)",
                           w->r.offsets_len, w->x.graph_len);
  return 0;
}

/* ---- writing a prepared plan -------------------------------------------- */

/* Binds the value columns (?5..?22) shared by INSERT and UPGRADE. */
static void bind_value(sqlite3_stmt *s, const struct prepared *w)
{
  const struct storage__row *r = &w->r;
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
  sqlite3_bind_blob(s, 16, w->sum, PLANNER_DIGEST_LEN, SQLITE_STATIC);
  sqlite3_bind_int64(s, 17, (sqlite3_int64)w->bytes);
  sqlite3_bind_blob(s, 18, w->x.graph, (int)w->x.graph_len, SQLITE_STATIC);
  sqlite3_bind_blob(s, 19, w->x.opts, (int)w->x.opts_len, SQLITE_STATIC);
  sqlite3_bind_blob(s, 20, w->graph_sum, PLANNER_DIGEST_LEN, SQLITE_STATIC);
  sqlite3_bind_int64(s, 21, w->x.effort);
  sqlite3_bind_int64(s, 22, w->done ? 1 : 0);
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

/* Evicts least-recently-used rows other than keep_id (0: none) until
 * both caps hold. Counts them in *n_evicted. */
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
static int is_better(const struct storage__row *r, const struct existing *ex)
{
  if (r->arena_bytes != ex->arena)
    return r->arena_bytes < ex->arena;
  return r->proven_optimal && !ex->proven;
}

/* Writes one prepared plan inside the caller's transaction: inserts,
 * upgrades, or on a kept plan updates only its tried effort and done
 * flag. Sets *res and *id (the row written or kept) and adds to
 * *n_corrupt the bad rows it deleted. Returns the sqlite code. */
static int write_one(storage_t *st, const struct prepared *w,
                     enum storage_put_result *res, int64_t *id,
                     uint64_t *n_corrupt)
{
  struct existing ex;
  int rc = find_existing(st, w->k, &w->bk, &ex, n_corrupt);
  if (rc != SQLITE_OK)
    return rc;
  sqlite3_stmt *s;
  if (ex.id && !is_better(&w->r, &ex)) {
    s = st->stmt[S_KEPT];
    sqlite3_bind_int64(s, 1, w->x.effort);
    sqlite3_bind_int64(s, 2, w->done ? 1 : 0);
    sqlite3_bind_int64(s, 3, ex.id);
    *res = STORAGE_PUT_KEPT;
  } else {
    s = st->stmt[ex.id ? S_UPGRADE : S_INSERT];
    storage__bind_key(s, w->k, &w->bk);
    bind_value(s, w);
    if (ex.id)
      sqlite3_bind_int64(s, 23, ex.id);
    *res = ex.id ? STORAGE_PUT_UPGRADED : STORAGE_PUT_INSERTED;
  }
  if ((rc = storage__run(s)) != SQLITE_OK)
    return rc;
  *id = ex.id ? ex.id : sqlite3_last_insert_rowid(st->db);
  return SQLITE_OK;
}

/* Ends a write transaction: evicts to the caps (sparing keep_id), counts
 * evictions and corrupt rows, commits. Returns the sqlite code; the
 * caller rolls back on failure. */
static int finish_txn(storage_t *st, int64_t keep_id, uint64_t n_corrupt)
{
  uint64_t n_evicted = 0;
  int rc = enforce_caps(st, keep_id, &n_evicted);
  if (rc == SQLITE_OK && (n_evicted || n_corrupt))
    rc = storage__stats_add(st, 0, 0, n_evicted, 0, n_corrupt);
  if (rc == SQLITE_OK)
    rc = storage__commit(st);
  return rc;
}

/* ---- put ---------------------------------------------------------------- */

/* The write half of put: one IMMEDIATE transaction. */
static int put_txn(storage_t *st, const struct prepared *w,
                   enum storage_put_result *res)
{
  uint64_t n_corrupt = 0;
  int64_t keep_id = 0;
  int rc = storage__begin(st);
  if (rc != SQLITE_OK)
    return storage__sqlerr(st, rc, "cannot start a write transaction");
  if ((rc = flush_in_txn(st)) != SQLITE_OK ||
      (rc = write_one(st, w, res, &keep_id, &n_corrupt)) != SQLITE_OK ||
      (rc = finish_txn(st, keep_id, n_corrupt)) != SQLITE_OK) {
    storage__sqlerr(st, rc, "cannot store a plan");
    storage__rollback(st);
    *res = 0;
    return storage__err_of(rc);
  }
  flush_done(st);
  return 0;
}

int storage_put_effort(storage_t *st, const struct storage_key *k,
                       const struct planner_graph *g,
                       const struct planner_options *o,
                       const struct planner_plan *p, uint64_t plan_us,
                       uint32_t effort, int done,
                       enum storage_put_result *res)
{
  enum storage_put_result dummy;
  struct prepared w;
  res = res ? res : &dummy;
  *res = 0;
  storage__clear_err(st);
  int rc = prepare(st, k, g, o, p, plan_us, effort, done, &w);
  if (!rc)
    rc = put_txn(st, &w, res);
  prepared_free(&w);
  return rc;
}

int storage_put(storage_t *st, const struct storage_key *k,
                const struct planner_graph *g,
                const struct planner_options *o,
                const struct planner_plan *p, uint64_t plan_us,
                enum storage_put_result *res)
{
  return storage_put_effort(st, k, g, o, p, plan_us, 0, 0, res);
}

/* ---- noting tried efforts ----------------------------------------------- */

int storage_note_tried(storage_t *st, const struct storage_key *k,
                       const uint8_t graph_digest[PLANNER_DIGEST_LEN],
                       const uint8_t options_digest[PLANNER_DIGEST_LEN],
                       uint32_t effort, int done)
{
  struct bound_key bk;
  storage__clear_err(st);
  if (!graph_digest || !options_digest)
    return storage__seterr(st, ARENA_EINVAL, "note_tried needs both digests");
  sqlite3_stmt *s = st->stmt[S_NOTE_TRIED];
  int rc = storage__bind_digest_key(st, s, k, graph_digest, options_digest,
                                    &bk);
  if (rc)
    return rc;
  sqlite3_bind_int64(s, 5, effort);
  sqlite3_bind_int64(s, 6, done ? 1 : 0);
  rc = storage__run(s); /* one statement: its own transaction */
  if (rc != SQLITE_OK)
    return storage__sqlerr(st, rc, "cannot note a tried effort");
  return 0;
}

/* ---- preload ------------------------------------------------------------ */

int storage_preload_begin(storage_t *st)
{
  storage__clear_err(st);
  if (st->pre.open)
    return storage__seterr(st, ARENA_EINVAL, "a preload is already open");
  int rc = storage__begin(st);
  if (rc != SQLITE_OK)
    return storage__sqlerr(st, rc, "cannot start a write transaction");
  if ((rc = flush_in_txn(st)) != SQLITE_OK) {
    storage__sqlerr(st, rc, "cannot preload plans");
    storage__rollback(st);
    return storage__err_of(rc);
  }
  memset(&st->pre, 0, sizeof st->pre);
  st->pre.open = 1;
  return 0;
}

void storage_preload_abort(storage_t *st)
{
  if (!st || !st->pre.open)
    return;
  storage__rollback(st);
  memset(&st->pre, 0, sizeof st->pre);
}

/* Ends the open preload after a failure of entry i of the whole
 * preload (the transaction's own failures: i is SIZE_MAX), with the
 * message already set. */
static int preload_fail(storage_t *st, int rc, size_t i, size_t *bad)
{
  if (bad)
    *bad = i;
  storage_preload_abort(st);
  return rc;
}

/* Stores a preloaded entry's placement record beside its plan, inside the
 * preload's transaction. Returns the sqlite code (SQLITE_MISUSE for a
 * record over STORAGE_PLACEMENT_MAX). */
static int attach_in_txn(storage_t *st, const struct prepared *w,
                         const uint8_t *placement, size_t len)
{
  if (!placement || len > STORAGE_PLACEMENT_MAX)
    return SQLITE_MISUSE;
  sqlite3_stmt *s = st->stmt[S_ATTACH];
  storage__bind_key(s, w->k, &w->bk);
  sqlite3_bind_blob(s, 5, placement, (int)len, SQLITE_STATIC);
  sqlite3_bind_int64(s, 6, (sqlite3_int64)len);
  return storage__run(s);
}

int storage_preload_add(storage_t *st, const struct storage_preload_entry *e,
                        size_t n, size_t *bad)
{
  storage__clear_err(st);
  if (!st->pre.open)
    return storage__seterr(st, ARENA_EINVAL, "no preload is open");
  if (n && !e)
    return preload_fail(st, storage__seterr(st, ARENA_EINVAL, "no entries"),
                        st->pre.seen, bad);
  for (size_t i = 0; i < n; i++) {
    struct prepared w;
    size_t at = st->pre.seen;
    int rc = prepare(st, &e[i].key, e[i].graph, e[i].opts, e[i].plan, 0,
                     e[i].effort, e[i].done, &w);
    if (rc) {
      char why[ARENA_ERR_LEN];
      snprintf(why, sizeof why, "%s", st->errmsg);
      prepared_free(&w);
      return preload_fail(st, storage__seterr(st, rc, "entry %zu: %s", at,
                                              why),
                          at, bad);
    }
    enum storage_put_result res;
    int64_t id;
    rc = write_one(st, &w, &res, &id, &st->pre.n_corrupt);
    if (rc == SQLITE_OK && e[i].placement_len)
      rc = attach_in_txn(st, &w, e[i].placement, e[i].placement_len);
    prepared_free(&w);
    if (rc != SQLITE_OK) {
      storage__sqlerr(st, rc, "cannot preload plans");
      return preload_fail(st, storage__err_of(rc), at, bad);
    }
    *(res == STORAGE_PUT_KEPT ? &st->pre.kept : &st->pre.stored) += 1;
    st->pre.seen++;
  }
  return 0;
}

int storage_preload_commit(storage_t *st, size_t *n_stored, size_t *n_kept)
{
  storage__clear_err(st);
  if (n_stored)
    *n_stored = 0;
  if (n_kept)
    *n_kept = 0;
  if (!st->pre.open)
    return storage__seterr(st, ARENA_EINVAL, "no preload is open");
  int rc = finish_txn(st, 0, st->pre.n_corrupt);
  if (rc != SQLITE_OK) {
    storage__sqlerr(st, rc, "cannot preload plans");
    return preload_fail(st, storage__err_of(rc), SIZE_MAX, NULL);
  }
  flush_done(st);
  if (n_stored)
    *n_stored = st->pre.stored;
  if (n_kept)
    *n_kept = st->pre.kept;
  memset(&st->pre, 0, sizeof st->pre);
  return 0;
}

int storage_preload(storage_t *st, const struct storage_preload_entry *e,
                    size_t n, size_t *n_stored, size_t *n_kept, size_t *bad)
{
  size_t at = n;
  storage__clear_err(st);
  if (n_stored)
    *n_stored = 0;
  if (n_kept)
    *n_kept = 0;
  if (n == 0)
    return 0;
  if (!e)
    return storage__seterr(st, ARENA_EINVAL, "no entries");
  int rc = storage_preload_begin(st);
  if (!rc)
    rc = storage_preload_add(st, e, n, &at);
  if (!rc)
    rc = storage_preload_commit(st, n_stored, n_kept);
  if (rc && bad)
    *bad = at < n ? at : n;
  return rc;
}

/*
 * storage.c - the plan cache handle: open and close, put and get, uses
 * counted elsewhere (storage_add_uses), and the helpers admin.c shares
 * (storage_int.h).
 *
 * DESIGN
 *  A handle owns one sqlite connection and every statement it will ever
 *  run, prepared once at open (stmt[] below). Reads never open a write
 *  transaction: a get runs one indexed SELECT, checks the value's
 *  checksum and planner_verify()s the plan, and only then notes the use
 *  in memory (touches[]). Pending uses and the hit/miss counters are
 *  written in a single IMMEDIATE transaction every touch_batch gets, at
 *  the start of every put (so that LRU eviction sees current recency), on
 *  storage_flush and on close.
 *
 *  LRU order is a logical clock, plans.use_seq: each insert or flushed
 *  touch sets it to max(use_seq) + 1 inside its write transaction, so the
 *  order is total and consistent across every process sharing the file.
 *  The stats row's entry and byte totals are maintained by triggers
 *  (schema.c), so a put checks the caps with one row read and evicts the
 *  smallest use_seq first, in the same transaction as the insert.
 *
 *  A row that fails its checksum or verification is never served: it is
 *  deleted in its own small transaction, counted in stats.corrupt and
 *  logged, and the get reports a miss.
 */
#include "storage_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


/* Columns every row reader selects, in this order (see read_row). */
#define ROW_COLS                                                             \
  "id, model_hash, shape, graph_digest, options_digest, n_tensors, "         \
  "offsets, arena_bytes, lower_bound, naive_bytes, proven_optimal, algo, "   \
  "fit, bound, plan_us, created_ms, last_used_ms, hits, checksum, bytes"
/* The same without the offsets blob, for listings (offsets is NULL). */
#define META_COLS                                                            \
  "id, model_hash, shape, graph_digest, options_digest, n_tensors, "         \
  "NULL, arena_bytes, lower_bound, naive_bytes, proven_optimal, algo, "      \
  "fit, bound, plan_us, created_ms, last_used_ms, hits, checksum, bytes"
#define KEY_MATCH                                                            \
  "model_hash = ?1 AND shape = ?2 AND graph_digest = ?3 AND "                \
  "options_digest = ?4"
#define NEXT_SEQ "(SELECT coalesce(max(use_seq), 0) + 1 FROM plans)"

static const char *const stmt_sql[S__COUNT] = {
    [S_GET] = "SELECT " ROW_COLS " FROM plans WHERE " KEY_MATCH,
    [S_LOOKUP] = "SELECT " ROW_COLS " FROM plans WHERE model_hash = ?1 AND "
                 "shape = ?2 ORDER BY use_seq DESC LIMIT ?3",
    [S_INSERT] =
        "INSERT INTO plans (model_hash, shape, graph_digest, options_digest,"
        " n_tensors, offsets, arena_bytes, lower_bound, naive_bytes,"
        " proven_optimal, algo, fit, bound, plan_us, created_ms,"
        " last_used_ms, hits, checksum, bytes, use_seq) VALUES (?1, ?2, ?3,"
        " ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?15, 0, ?16,"
        " ?17, " NEXT_SEQ ")",
    [S_UPGRADE] =
        "UPDATE plans SET n_tensors = ?5, offsets = ?6, arena_bytes = ?7,"
        " lower_bound = ?8, naive_bytes = ?9, proven_optimal = ?10,"
        " algo = ?11, fit = ?12, bound = ?13, plan_us = ?14,"
        " created_ms = ?15, last_used_ms = ?15, checksum = ?16, bytes = ?17,"
        " use_seq = " NEXT_SEQ " WHERE id = ?18",
    [S_TOUCH] = "UPDATE plans SET last_used_ms = max(last_used_ms, ?1),"
                " hits = hits + 1, use_seq = " NEXT_SEQ " WHERE id = ?2",
    [S_ADD_USES] = "UPDATE plans SET last_used_ms = max(last_used_ms, ?5),"
                   " hits = hits + ?6, use_seq = " NEXT_SEQ
                   " WHERE " KEY_MATCH,
    [S_STATS_ADD] = "UPDATE stats SET hits = hits + ?1, misses = misses + ?2,"
                    " evictions = evictions + ?3, removed = removed + ?4,"
                    " corrupt = corrupt + ?5 WHERE id = 1",
    [S_STATS_GET] = "SELECT entries, bytes, hits, misses, evictions, removed,"
                    " corrupt FROM stats WHERE id = 1",
    [S_LRU_VICTIM] = "SELECT id FROM plans WHERE id <> ?1"
                     " ORDER BY use_seq, id LIMIT 1",
    [S_DELETE_ID] = "DELETE FROM plans WHERE id = ?1",
    [S_DELETE_KEY] = "DELETE FROM plans WHERE " KEY_MATCH,
    [S_DELETE_MODEL] = "DELETE FROM plans WHERE model_hash = ?1",
    [S_DELETE_ALL] = "DELETE FROM plans",
    [S_LIST_NEW] = "SELECT " META_COLS " FROM plans"
                   " ORDER BY created_ms DESC, id DESC LIMIT ?2 OFFSET ?3",
    [S_LIST_NEW_MODEL] = "SELECT " META_COLS " FROM plans"
                         " WHERE model_hash = ?1"
                         " ORDER BY created_ms DESC, id DESC"
                         " LIMIT ?2 OFFSET ?3",
    [S_LIST_USED] = "SELECT " META_COLS " FROM plans"
                    " ORDER BY hits DESC, use_seq DESC LIMIT ?2 OFFSET ?3",
    [S_LIST_USED_MODEL] = "SELECT " META_COLS " FROM plans"
                          " WHERE model_hash = ?1"
                          " ORDER BY hits DESC, use_seq DESC"
                          " LIMIT ?2 OFFSET ?3",
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
};





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
  if (!v->r.model_hash || v->r.model_hash_len < 1 ||
      v->r.model_hash_len > STORAGE_MODEL_HASH_MAX || !v->r.shape)
    return ARENA_ECORRUPT;
  if (!v->r.offsets)
    v->r.offsets = empty; /* length 0, so never read */
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

void storage__fill_info(const struct row_view *v, struct storage_info *info)
{
  info->plan_us = v->r.plan_us;
  info->created_ms = v->r.created_ms;
  info->last_used_ms = v->last_used_ms;
  info->hits = v->hits;
  info->bytes = v->bytes;
  info->n_tensors = (size_t)v->r.n_tensors;
}

void storage__fill_plan_fields(const struct row_view *v, struct planner_plan *p)
{
  p->n_offsets = (size_t)v->r.n_tensors;
  p->arena_bytes = v->r.arena_bytes;
  p->lower_bound_bytes = v->r.lower_bound;
  p->naive_bytes = v->r.naive_bytes;
  p->algo = (enum planner_algo)v->r.algo;
  p->proven_optimal = (int)v->r.proven_optimal;
  p->fit = (enum planner_fit)v->r.fit;
  p->bound = (enum planner_bound)v->r.bound;
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

/* Notes one hit. When the batch is full, flushes; if that fails the
 * touches are dropped (recency is advisory) but the counters are kept. */
static void note_hit(storage_t *st, int64_t id)
{
  st->touches[st->n_touches].id = id;
  st->touches[st->n_touches].when_ms = storage__now_ms();
  st->n_touches++;
  st->pend.hits++;
  if (st->n_touches >= st->opt.touch_batch && storage_flush(st) != 0) {
    storage__logf(&st->log, STORAGE_LOG_WARN,
                  "plan cache %s: dropped %zu pending uses: %s", st->path,
                  st->n_touches, st->errmsg);
    st->n_touches = 0;
  }
}

static void note_miss(storage_t *st)
{
  st->pend.misses++;
}

/* ---- open / close ------------------------------------------------------- */

void storage_options_init(struct storage_options *o)
{
  memset(o, 0, sizeof *o);
  o->max_bytes = STORAGE_DEFAULT_MAX_BYTES;
  o->max_entries = STORAGE_DEFAULT_MAX_ENTRIES;
  o->busy_timeout_ms = STORAGE_DEFAULT_BUSY_TIMEOUT_MS;
  o->touch_batch = STORAGE_DEFAULT_TOUCH_BATCH;
}

int storage_open(const char *path, const struct storage_options *o,
                 storage_t **out, char err[ARENA_ERR_LEN])
{
  *out = NULL;
  if (!path || !*path) {
    if (err)
      snprintf(err, ARENA_ERR_LEN, "no database path");
    return ARENA_EINVAL;
  }
  storage_t *st = calloc(1, sizeof *st);
  if (!st)
    goto nomem;
  if (o)
    st->opt = *o;
  else
    storage_options_init(&st->opt);
  if (st->opt.touch_batch < 1)
    st->opt.touch_batch = 1;
  if (st->opt.touch_batch > 65536)
    st->opt.touch_batch = 65536; /* bounds the pending array */
  st->log.cb = st->opt.log;
  st->log.ctx = st->opt.log_ctx;
  st->path = strdup(path);
  st->touches = malloc(st->opt.touch_batch * sizeof *st->touches);
  if (!st->path || !st->touches)
    goto nomem;

  int rc = storage__open_db(path, st->opt.busy_timeout_ms, &st->log, &st->db,
                            err);
  if (rc) {
    storage__logf(&st->log, STORAGE_LOG_ERROR, "plan cache %s: %s", path,
                  err ? err : arena_strerror(rc));
    storage_close(st);
    return rc;
  }
  for (int i = 0; i < S__COUNT; i++) {
    int src = sqlite3_prepare_v3(st->db, stmt_sql[i], -1,
                                 SQLITE_PREPARE_PERSISTENT, &st->stmt[i],
                                 NULL);
    if (src != SQLITE_OK) {
      rc = storage__err_of(src);
      if (err)
        snprintf(err, ARENA_ERR_LEN, "cannot prepare statement %d: %s", i,
                 sqlite3_errmsg(st->db));
      storage_close(st);
      return rc;
    }
  }
  *out = st;
  return 0;

nomem:
  if (err)
    snprintf(err, ARENA_ERR_LEN, "out of memory");
  storage_close(st);
  return ARENA_ENOMEM;
}

void storage_close(storage_t *st)
{
  if (!st)
    return;
  if (st->db && st->stmt[S__COUNT - 1] && storage_flush(st) != 0)
    storage__logf(&st->log, STORAGE_LOG_WARN,
                  "plan cache %s: pending uses lost at close: %s", st->path,
                  st->errmsg);
  for (int i = 0; i < S__COUNT; i++)
    sqlite3_finalize(st->stmt[i]);
  sqlite3_close_v2(st->db);
  free(st->path);
  free(st->touches);
  free(st->shape_buf);
  free(st);
}

const char *storage_errmsg(const storage_t *st)
{
  return st ? st->errmsg : "no handle";
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
      (rc = storage__offsets_encode(p->offsets, p->n_offsets, perm, &blob,
                                    &blob_len))) {
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

/* ---- get ---------------------------------------------------------------- */

int storage_get(storage_t *st, const struct storage_key *k,
                const struct planner_graph *g,
                const struct planner_options *o, struct planner_plan *out,
                struct storage_info *info)
{
  struct bound_key bk;
  struct row_view v;
  size_t *perm = NULL;
  uint64_t *offs = NULL;
  const char *bad = NULL;
  char verr[ARENA_ERR_LEN];
  int rc;

  storage__clear_err(st);
  planner_plan_cleanup(out);
  if (info)
    memset(info, 0, sizeof *info);
  if (!g || !o || !g->tensors || !g->n_tensors)
    return storage__seterr(st, ARENA_EINVAL, "get needs a non-empty graph and options");
  if ((rc = storage__bind_key_prepare(st, k, g, o, &bk)))
    return rc;

  sqlite3_stmt *s = st->stmt[S_GET];
  storage__bind_key(s, k, &bk);
  int src = sqlite3_step(s);
  if (src == SQLITE_DONE) {
    storage__done(s);
    note_miss(st);
    return storage__seterr(st, ARENA_ENOENT, "no plan under this key");
  }
  if (src != SQLITE_ROW) {
    storage__done(s);
    return storage__sqlerr(st, src, "cannot read a plan");
  }
  if (storage__read_row(s, &v) || !storage__checksum_ok(&v)) {
    bad = "checksum mismatch";
  } else if (v.r.n_tensors != g->n_tensors) {
    bad = "tensor count does not match its graph digest";
  } else {
    offs = malloc(g->n_tensors * sizeof *offs);
    if (!offs || storage__canonical_perm(g, &perm)) {
      storage__done(s);
      free(offs);
      return storage__seterr(st, ARENA_ENOMEM, "out of memory");
    }
    if (storage__offsets_decode(v.r.offsets, v.r.offsets_len, g->n_tensors,
                                perm, offs))
      bad = "offsets blob does not decode";
    free(perm);
  }
  if (bad) {
    int64_t id = v.id;
    storage__done(s);
    free(offs);
    storage__drop_corrupt(st, id, bad);
    note_miss(st);
    return storage__seterr(st, ARENA_ENOENT, "stored plan was bad (%s); deleted", bad);
  }
  storage__fill_plan_fields(&v, out);
  out->offsets = offs;
  if (info)
    storage__fill_info(&v, info);
  int64_t id = v.id;
  storage__done(s); /* v's blob pointers die here */

  rc = planner_verify(g, o, out, verr);
  if (rc == ARENA_EVERIFY) {
    planner_plan_cleanup(out);
    storage__drop_corrupt(st, id, verr);
    note_miss(st);
    return storage__seterr(st, ARENA_ENOENT, "stored plan failed verification (%s); "
                  "deleted", verr);
  }
  if (rc) {
    planner_plan_cleanup(out);
    return storage__seterr(st, rc, "cannot verify the stored plan: %s", verr);
  }
  note_hit(st, id);
  return 0;
}

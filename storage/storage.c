/*
 * storage.c - the plan cache handle: its prepared statements, open and
 * close, and the last error text (storage.h).
 *
 * The rest of the module sits under or beside this file (storage_int.h):
 * stmt.c holds the statement, transaction and row helpers every call
 * uses, write.c the put path and the flushing of uses, get.c the get
 * path, admin.c lookup, listing, eviction and statistics. This file may
 * use schema.c (opening the database) and write.c (close flushes the
 * pending uses); nothing in storage/ calls back into it.
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
 *
 *  Since schema v3 a row also keeps its graph and options (the last
 *  columns, so that a get never reads them) under a checksum of their
 *  own that covers the row's value checksum too. Only the calls that
 *  return graphs (pending, export) read and check them.
 */
#include "storage_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Columns every row reader selects, in this order (see read_row). */
#define ROW_COLS                                                             \
  "id, model_hash, shape, graph_digest, options_digest, n_tensors, "         \
  "offsets, arena_bytes, lower_bound, naive_bytes, proven_optimal, algo, "   \
  "fit, bound, plan_us, created_ms, last_used_ms, hits, checksum, bytes, "   \
  "NULL, " BOOK_COLS
/* The bookkeeping of schema v3, which every reader selects too. */
#define BOOK_COLS                                                            \
  "effort, effort_tried, generation, improve_done, graph_sum IS NOT NULL"
/* ROW_COLS and the graph columns, for the calls that return graphs. */
#define FULL_COLS ROW_COLS ", graph_sum, opts, graph, placement"
#define HEAD_MAX_SQL "32" /* STORAGE__OFFSETS_HEAD_MAX, checked below */
_Static_assert(STORAGE__OFFSETS_HEAD_MAX == 32, "HEAD_MAX_SQL is stale");
/* The same without the offsets blob, for listings (offsets is NULL), but
 * with its head, which holds the plan's sharing (codec.c). */
#define META_COLS                                                            \
  "id, model_hash, shape, graph_digest, options_digest, n_tensors, "         \
  "NULL, arena_bytes, lower_bound, naive_bytes, proven_optimal, algo, "      \
  "fit, bound, plan_us, created_ms, last_used_ms, hits, checksum, bytes, "   \
  "substr(offsets, 1, " HEAD_MAX_SQL "), " BOOK_COLS
#define KEY_MATCH                                                            \
  "model_hash = ?1 AND shape = ?2 AND graph_digest = ?3 AND "                \
  "options_digest = ?4"
/* An export's filters: ?1 a model hash, ?2..?4 a shape and both
 * digests; each NULL for any. */
#define EXPORT_MATCH                                                         \
  "(?1 IS NULL OR model_hash = ?1) AND (?2 IS NULL OR (shape = ?2 AND "      \
  "graph_digest = ?3 AND options_digest = ?4))"
#define NEXT_SEQ "(SELECT coalesce(max(use_seq), 0) + 1 FROM plans)"

static const char *const stmt_sql[S__COUNT] = {
    [S_GET] = "SELECT " ROW_COLS " FROM plans WHERE " KEY_MATCH,
    [S_LOOKUP] = "SELECT " ROW_COLS " FROM plans WHERE model_hash = ?1 AND "
                 "shape = ?2 ORDER BY use_seq DESC LIMIT ?3",
    [S_LOOKUP_GRAPHS] = "SELECT " FULL_COLS " FROM plans WHERE"
                        " model_hash = ?1 AND shape = ?2 AND graph_sum IS"
                        " NOT NULL ORDER BY use_seq DESC LIMIT ?3",
    [S_ATTACH] = "UPDATE plans SET bytes = bytes - coalesce(length(placement),"
                 " 0) + ?6, placement = ?5 WHERE " KEY_MATCH,
    [S_INSERT] =
        "INSERT INTO plans (model_hash, shape, graph_digest, options_digest,"
        " n_tensors, offsets, arena_bytes, lower_bound, naive_bytes,"
        " proven_optimal, algo, fit, bound, plan_us, created_ms,"
        " last_used_ms, hits, checksum, bytes, use_seq, graph, opts,"
        " graph_sum, effort, effort_tried, generation, improve_done)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,"
        " ?14, ?15, ?15, 0, ?16, ?17, " NEXT_SEQ ", ?18, ?19, ?20, ?21, ?21,"
        " 1, ?22)",
    [S_UPGRADE] =
        "UPDATE plans SET n_tensors = ?5, offsets = ?6, arena_bytes = ?7,"
        " lower_bound = ?8, naive_bytes = ?9, proven_optimal = ?10,"
        " algo = ?11, fit = ?12, bound = ?13, plan_us = ?14,"
        " created_ms = ?15, last_used_ms = ?15, checksum = ?16, bytes = ?17,"
        " use_seq = " NEXT_SEQ ", graph = ?18, opts = ?19, graph_sum = ?20,"
        " effort = ?21, effort_tried = max(effort_tried, ?21),"
        " generation = max(generation, 1) + 1, improve_done = ?22"
        " WHERE id = ?23",
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
    [S_KEPT] = "UPDATE plans SET effort_tried = max(effort_tried, ?1),"
               " improve_done = (improve_done OR ?2) WHERE id = ?3",
    [S_NOTE_TRIED] = "UPDATE plans SET effort_tried = max(effort_tried, ?5),"
                     " improve_done = (improve_done OR ?6)"
                     " WHERE " KEY_MATCH,
    [S_PENDING] = "SELECT " FULL_COLS " FROM plans"
                  " WHERE improve_done = 0 AND graph_sum IS NOT NULL"
                  " AND (?2 = 0 OR n_tensors <= ?2)"
                  " ORDER BY hits DESC, use_seq DESC LIMIT ?1",
    [S_EXPORT] = "SELECT " FULL_COLS " FROM plans"
                 " WHERE graph_sum IS NOT NULL AND " EXPORT_MATCH
                 " ORDER BY created_ms, id LIMIT ?5 OFFSET ?6",
    [S_EXPORT_WITHOUT] = "SELECT count(*) FROM plans"
                         " WHERE graph_sum IS NULL AND " EXPORT_MATCH,
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
};

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

/*
 * get.c - the read path of the plan cache: storage_get, which reads one
 * row without a write transaction, checks its checksum and verifies the
 * plan, and notes the hit or miss in memory for write.c to flush later.
 *
 * It may use stmt.c, codec.c, schema.c and storage_flush (write.c);
 * nothing in storage/ calls into it.
 */
#include "storage_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- noting uses -------------------------------------------------------- */

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
                                perm, offs) ||
        storage__fill_plan_fields(&v, out))
      bad = "offsets blob does not decode";
    free(perm);
  }
  if (bad) {
    int64_t id = v.id;
    storage__done(s);
    free(offs);
    planner_plan_cleanup(out);
    storage__drop_corrupt(st, id, bad);
    note_miss(st);
    return storage__seterr(st, ARENA_ENOENT, "stored plan was bad (%s); deleted", bad);
  }
  out->offsets = offs;
  if (info)
    storage__fill_info(&v, info);
  int64_t id = v.id;
  storage__done(s); /* v's blob pointers die here */

  rc = planner_verify(g, o, out, verr);
  uint64_t cap = rc == 0 ? storage__arena_cap(g, o) : 0;
  if (rc == 0 && out->arena_bytes > cap) {
    rc = ARENA_EVERIFY;
    snprintf(verr, sizeof verr, "its arena of %llu %s is above the %llu %s "
             "that every tensor in bytes of its own takes",
             (unsigned long long)out->arena_bytes,
             storage__noun(out->arena_bytes, "byte", "bytes"),
             (unsigned long long)cap, storage__noun(cap, "byte", "bytes"));
  }
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

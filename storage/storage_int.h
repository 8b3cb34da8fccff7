/*
 * storage_int.h - internal interface between the files of storage/.
 *
 * Not included outside storage/ (tests may include it to reach the codec
 * and the schema constants). Cross-file functions use the storage__
 * prefix.
 *
 *   codec.c   value and key encodings: the canonical shape blob, the
 *             compact offsets blob, the canonical tensor order, the
 *             value checksum, the graph and options blobs with their
 *             checksum, and the daemon's entry key. Pure C, no sqlite.
 *   schema.c  opening a file safely: classification, moving bad files
 *             aside, sqlite settings and the numbered migrations.
 *   stmt.c    the helpers every call of the handle uses: error text,
 *             statements, transactions, key binding, row reading.
 *   storage.c the handle: prepared statements, open and close.
 *   write.c   put, preload, noting tried efforts, and the flushing of
 *             uses and of added uses.
 *   get.c     get, and noting its hits and misses.
 *   admin.c   lookup, listing, pending work, export, eviction,
 *             statistics and vacuum.
 *
 * Calls go one way: storage.c, get.c and admin.c use write.c; write.c,
 * get.c and admin.c use stmt.c; all may use schema.c and codec.c.
 */
#ifndef ARENA_STORAGE_INT_H
#define ARENA_STORAGE_INT_H

#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "storage.h"

/* "AREN" in the sqlite header's application_id field. */
#define STORAGE__APP_ID 0x4152454e
/* The schema version this code writes; older files are migrated. */
#define STORAGE__SCHEMA_VERSION 4
/* Accounted bytes per plan on top of its blobs (fixed-width columns and
 * row overhead); see storage__entry_bytes. */
#define STORAGE__ROW_OVERHEAD 128u
/* Version byte at the start of every offsets blob: format 1, or format 2
 * for a plan that shares bytes in place (its head then also holds the
 * shared pair count and the unshared lower bound; docs/storage.md). */
#define STORAGE__OFFSETS_FORMAT 1u
#define STORAGE__OFFSETS_FORMAT_SHARED 2u
/* Bytes that always hold an offsets blob's head (format, shift and three
 * varints); what a listing reads instead of the whole blob. */
#define STORAGE__OFFSETS_HEAD_MAX 32u
/* Version byte at the start of every graph blob and options blob
 * (schema v3; docs/storage.md). */
#define STORAGE__GRAPH_FORMAT 1u
#define STORAGE__OPTS_FORMAT 1u
/* Bytes an options blob takes at most: format, three varints, in_place. */
#define STORAGE__OPTS_MAX 32u

/* one when n is 1, else many ("1 byte", "2 bytes"), for messages. */
static inline const char *storage__noun(unsigned long long n,
                                        const char *one, const char *many)
{
  return n == 1 ? one : many;
}

/* ---- codec.c ------------------------------------------------------------ */

/* Checks key k and writes its canonical shape blob (u32 n_inputs, then per
 * input u32 rank and rank i64 dims, little-endian) into *buf, growing it
 * with realloc as needed (the caller owns *buf and *cap; free()). Sets
 * *len. Returns 0, ARENA_EINVAL (bad key) or ARENA_ENOMEM. */
int storage__shape_encode(const struct storage_key *k, uint8_t **buf,
                          size_t *cap, size_t *len);

/* Decodes a shape blob (borrowed) into owned ranks and dims arrays
 * (free()). Returns 0, ARENA_ECORRUPT or ARENA_ENOMEM; on failure both
 * outputs are NULL. */
int storage__shape_decode(const uint8_t *blob, size_t len, uint32_t **ranks,
                          int64_t **dims, size_t *n_inputs);

/* Computes the canonical order of g's tensors (ascending id, ties broken
 * by the other fields as in planner_graph_digest): *perm is set to NULL
 * when graph order already is canonical, else to an owned array (free())
 * with perm[k] = graph index of the k-th canonical tensor.
 * Returns 0 or ARENA_ENOMEM. */
int storage__canonical_perm(const struct planner_graph *g, size_t **perm);

/* The largest arena a plan of g under o may claim, in bytes: A the
 * largest effective alignment of g's free (unpinned, non-empty) tensors,
 * the end of the highest pinned tensor rounded up to A, then every free
 * tensor in bytes of its own, its size rounded up to A. Every planner
 * algorithm stays within it: each places a tensor at or below the top of
 * those placed before it, rounded up to the tensor's alignment, so the
 * top grows by at most the rounded size per tensor. The naive
 * algorithm's arena is below it by less than A (it does not round its
 * last tensor); a greedy heuristic's may be above that (docs/storage.md,
 * "What a stored plan may claim"). Saturates at UINT64_MAX, so any
 * graph is safe to ask about; the bound holds for graphs that pass
 * planner_validate. O(n). */
uint64_t storage__arena_cap(const struct planner_graph *g,
                            const struct planner_options *o);

/* What a plan's in-place sharing adds to its offsets blob (format 2). */
struct storage__share {
  uint64_t n_shared;    /* declared pairs at one offset, < n offsets */
  uint64_t lb_unshared; /* the lower bound with every alias ignored */
};

/* The sharing to store with plan p (borrowed): returns 1 and fills *sh
 * when p shares or reports a bound without sharing of its own, else 0
 * (format 1 keeps such a plan exactly as before sharing existed). */
int storage__share_of(const struct planner_plan *p, struct storage__share *sh);

/* Encodes n offsets (borrowed), taken in the order perm gives (NULL =
 * as is), into an owned blob (free()) of *len bytes: the format byte, a
 * shift s (every offset is a multiple of 2^s), with sh (borrowed, NULL
 * for format 1) format 2's varints n_shared and lb_unshared, a varint
 * count, then each offset >> s as a LEB128 varint. Returns 0 or
 * ARENA_ENOMEM. */
int storage__offsets_encode(const uint64_t *offsets, size_t n,
                            const size_t *perm,
                            const struct storage__share *sh, uint8_t **blob,
                            size_t *len);

/* Decodes a blob of either format that must hold exactly n offsets into
 * out (caller-allocated, n entries), writing the k-th stored offset to
 * out[perm[k]] (perm NULL = out[k]). Returns 0 or ARENA_ECORRUPT. */
int storage__offsets_decode(const uint8_t *blob, size_t len, size_t n,
                            const size_t *perm, uint64_t *out);

/* Reads the sharing from the head of an offsets blob (borrowed; its
 * first STORAGE__OFFSETS_HEAD_MAX bytes suffice) into *sh: for format 1,
 * no pair and lb_unshared = lower_bound, the plan's own bound. Returns 0
 * or ARENA_ECORRUPT (a head that does not decode, or more pairs than the
 * count allows). */
int storage__offsets_share(const uint8_t *blob, size_t len,
                           uint64_t lower_bound, struct storage__share *sh);

/* Everything the value checksum covers: the key and the stored value. */
struct storage__row {
  const uint8_t *model_hash;  /* model_hash_len bytes, borrowed */
  size_t model_hash_len;      /* 1 .. 64 */
  const uint8_t *shape;       /* canonical shape blob, borrowed */
  size_t shape_len;           /* bytes */
  const uint8_t *graph_digest;   /* PLANNER_DIGEST_LEN bytes, borrowed */
  const uint8_t *options_digest; /* PLANNER_DIGEST_LEN bytes, borrowed */
  uint64_t n_tensors;         /* offsets in the blob */
  const uint8_t *offsets;     /* offsets blob, borrowed */
  size_t offsets_len;         /* bytes */
  uint64_t arena_bytes;       /* plan fields, as in struct planner_plan */
  uint64_t lower_bound;       /* bytes */
  uint64_t naive_bytes;       /* bytes */
  uint32_t proven_optimal;    /* 0 or 1 */
  uint32_t algo;              /* enum planner_algo */
  uint32_t fit;               /* enum planner_fit */
  uint32_t bound;             /* enum planner_bound */
  uint64_t plan_us;           /* planning time */
  int64_t created_ms;         /* Unix ms */
};

/* SHA-256 over the canonical encoding of r (see docs/storage.md). The
 * mutable bookkeeping (last use, hits, LRU sequence) is not covered, so a
 * touch never rewrites the checksum. */
void storage__checksum(const struct storage__row *r,
                       uint8_t out[PLANNER_DIGEST_LEN]);

/* Accounted bytes of a row: its blobs plus STORAGE__ROW_OVERHEAD. The SQL
 * in schema.c computes the same sum for migrated rows. */
uint64_t storage__entry_bytes(const struct storage__row *r);

/* The graph columns of a row (schema v3), covered by their own checksum
 * so that a get, which never reads them, costs what it did before. */
struct storage__graph_row {
  const uint8_t *graph;  /* graph blob, borrowed; NULL: stored without */
  size_t graph_len;      /* bytes */
  const uint8_t *opts;   /* options blob, borrowed */
  size_t opts_len;       /* bytes */
  uint32_t effort;       /* the effort that found the plan */
};

/* Encodes g's tensors, taken in the order perm gives (NULL = as is; give
 * the canonical order), into an owned blob (free()) of *len bytes: the
 * format byte, a varint count, then per tensor a flags byte (1: align
 * follows, 2: pinned follows, 4: has an alias, which follows), the id's
 * gap to the previous id, size, zigzag first, last - first, and the
 * optional fields, all LEB128 varints. Returns 0, ARENA_EINVAL (too many
 * tensors) or ARENA_ENOMEM. */
int storage__graph_encode(const struct planner_graph *g, const size_t *perm,
                          uint8_t **blob, size_t *len);

/* Decodes a graph blob (borrowed) that must hold exactly n tensors into
 * an owned array (free()). Returns 0, ARENA_ECORRUPT or ARENA_ENOMEM; on
 * failure *out is NULL. */
int storage__graph_decode(const uint8_t *blob, size_t len, size_t n,
                          struct planner_tensor **out);

/* Encodes o's algorithm, alignment, capacity and in_place into out (the
 * format byte, three varints, a 0/1 byte). Returns the length. */
size_t storage__opts_encode(const struct planner_options *o,
                            uint8_t out[STORAGE__OPTS_MAX]);

/* Decodes an options blob into *o, the fields it lacks at their
 * planner_options_init() defaults. Returns 0 or ARENA_ECORRUPT. */
int storage__opts_decode(const uint8_t *blob, size_t len,
                         struct planner_options *o);

/* SHA-256 over the row's value checksum row_sum, which ties the graph to
 * the plan and key it was stored with, and x's graph blob, options blob
 * and effort (docs/storage.md). */
void storage__graph_checksum(const uint8_t row_sum[PLANNER_DIGEST_LEN],
                             const struct storage__graph_row *x,
                             uint8_t out[PLANNER_DIGEST_LEN]);

/* Accounted bytes the graph columns add to a row: both blobs and their
 * checksum, or 0 for a row stored without a graph. */
uint64_t storage__graph_bytes(const struct storage__graph_row *x);

/* The opaque entry key that the daemon's List hands out (u8 hash length,
 * hash, u16 n_inputs, one u8 rank per input, the dims as i64, the graph
 * digest, the options digest; little-endian), decoded. */
struct storage__entry_key {
  uint8_t hash[STORAGE_MODEL_HASH_MAX];       /* hash_len bytes */
  size_t hash_len;                            /* 1 .. 64 */
  uint32_t *ranks;                            /* owned */
  int64_t *dims;                              /* owned */
  size_t n_inputs;                            /* inputs */
  uint8_t graph_digest[PLANNER_DIGEST_LEN];   /* as stored */
  uint8_t options_digest[PLANNER_DIGEST_LEN]; /* as stored */
  struct storage_key key;                     /* points into the above */
};

/* Decodes buf (borrowed). Returns 0, ARENA_EINVAL (malformed) or
 * ARENA_ENOMEM; free with storage__entry_key_cleanup either way. */
int storage__entry_key_decode(const uint8_t *buf, size_t len,
                              struct storage__entry_key *k);
void storage__entry_key_cleanup(struct storage__entry_key *k);

/* ---- schema.c ----------------------------------------------------------- */

/* Log sink used while no handle exists yet. */
struct storage__log {
  storage_log_cb cb; /* may be NULL */
  void *ctx;         /* borrowed */
};

/* Formats and sends one line to lg (printf-style). */
void storage__logf(const struct storage__log *lg, enum storage_log_level lv,
                   const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Opens path, moves it aside when it is not a healthy arenad database of
 * this or an older schema, applies the connection settings (WAL,
 * synchronous=NORMAL, busy timeout) and runs the migrations. On success
 * *out is an open connection (sqlite3_close_v2 it). Returns 0 or an
 * ARENA_E* code with err filled; *out is NULL on failure. */
int storage__open_db(const char *path, uint32_t busy_timeout_ms,
                     const struct storage__log *lg, sqlite3 **out,
                     char err[ARENA_ERR_LEN]);

/* Runs the migrations from the file's user_version up to
 * STORAGE__SCHEMA_VERSION, each in its own IMMEDIATE transaction that
 * also stamps application_id and user_version. Returns 0 or an ARENA_E*
 * code with err filled. */
int storage__migrate(sqlite3 *db, const struct storage__log *lg,
                     char err[ARENA_ERR_LEN]);

/* Maps a sqlite result code to an ARENA_E* code. */
int storage__err_of(int sqlite_rc);

/* Current wall-clock time in Unix milliseconds. */
int64_t storage__now_ms(void);

/* ---- the handle (storage.c, stmt.c, write.c, get.c, admin.c) ------------ */

/* Prepared statements; SQL in stmt_sql[], same order. */
enum {
  S_GET,
  S_LOOKUP,
  S_LOOKUP_GRAPHS,
  S_ATTACH,
  S_INSERT,
  S_UPGRADE,
  S_TOUCH,
  S_ADD_USES,
  S_STATS_ADD,
  S_STATS_GET,
  S_LRU_VICTIM,
  S_DELETE_ID,
  S_DELETE_KEY,
  S_DELETE_MODEL,
  S_DELETE_ALL,
  S_LIST_NEW,
  S_LIST_NEW_MODEL,
  S_LIST_USED,
  S_LIST_USED_MODEL,
  S_KEPT,
  S_NOTE_TRIED,
  S_PENDING,
  S_EXPORT,
  S_EXPORT_WITHOUT,
  S_BEGIN,
  S_COMMIT,
  S_ROLLBACK,
  S__COUNT
};

/* One get that has not been written yet. */
struct touch {
  int64_t id;      /* plans.id; AUTOINCREMENT ids are never reused */
  int64_t when_ms; /* Unix ms of the get */
};

/* Counter deltas not yet written to the stats row. */
struct pending {
  uint64_t hits;      /* gets that hit */
  uint64_t misses;    /* gets that missed */
};

/* An open cache; see storage.h. */
struct storage {
  sqlite3 *db;                   /* owned connection */
  char *path;                    /* owned copy of the file path */
  sqlite3_stmt *stmt[S__COUNT];  /* owned, prepared at open */
  struct storage_options opt;    /* copied at open */
  struct storage__log log;       /* from opt */
  char errmsg[ARENA_ERR_LEN];    /* last error, "" after success */
  struct touch *touches;         /* n_touches pending uses, owned */
  size_t n_touches;              /* <= opt.touch_batch */
  struct pending pend;           /* unwritten counters */
  uint8_t *shape_buf;            /* scratch for the shape blob, owned */
  size_t shape_cap;              /* bytes allocated in shape_buf */
  struct preload_txn {           /* a preload in progress (write.c) */
    int open;                    /* 1 between begin and commit/abort */
    size_t seen;                 /* entries added so far */
    size_t stored, kept;         /* their outcomes */
    uint64_t n_corrupt;          /* bad rows found under their keys */
  } pre;
};

/* The caller's key, encoded: what every keyed statement binds. */
struct bound_key {
  const uint8_t *shape;                 /* st->shape_buf */
  size_t shape_len;                     /* bytes */
  uint8_t gd[PLANNER_DIGEST_LEN];       /* graph digest */
  uint8_t od[PLANNER_DIGEST_LEN];       /* options digest */
};

/* A row as read from a statement selecting ROW_COLS, META_COLS or
 * FULL_COLS (storage.c). Blob pointers are borrowed from the statement
 * and valid until it steps or resets. */
struct row_view {
  int64_t id;                /* plans.id */
  struct storage__row r;     /* checksummed fields */
  int have_offsets;          /* 0 for META_COLS */
  const uint8_t *head;       /* the offsets blob, or for META_COLS its
                                first STORAGE__OFFSETS_HEAD_MAX bytes */
  size_t head_len;           /* bytes in head */
  int64_t last_used_ms;      /* bookkeeping */
  uint64_t hits;             /* flushed hits */
  uint64_t bytes;            /* accounted bytes */
  const uint8_t *checksum;   /* PLANNER_DIGEST_LEN bytes, or NULL */
  uint32_t effort_tried;     /* bookkeeping (schema v3) */
  uint64_t generation;       /* bookkeeping */
  int improve_done;          /* bookkeeping, 0 or 1 */
  int has_graph;             /* the row has graph columns */
  int have_graph;            /* they were read (FULL_COLS): x and
                                graph_sum are set */
  struct storage__graph_row x; /* graph columns; x.effort always set */
  const uint8_t *graph_sum;  /* PLANNER_DIGEST_LEN bytes, with have_graph */
  const uint8_t *placement;  /* the placement record (schema v4), read
                                with the graph columns; NULL: none */
  size_t placement_len;      /* bytes in placement */
};

/* Helpers shared by write.c, get.c and admin.c (defined in stmt.c). */

/* Formats the handle's error text; returns code. */
int storage__seterr(storage_t *st, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Records a sqlite failure rc during `what`; returns the ARENA_E* code. */
int storage__sqlerr(storage_t *st, int rc, const char *what);
void storage__clear_err(storage_t *st);
/* Resets a statement and clears its bindings. */
void storage__done(sqlite3_stmt *s);
/* Steps a statement that returns no rows; returns the sqlite code. */
int storage__run(sqlite3_stmt *s);
/* IMMEDIATE transaction control; begin/commit return ARENA_E* codes. */
int storage__begin(storage_t *st);
int storage__commit(storage_t *st);
void storage__rollback(storage_t *st);
/* Adds to the stats row (inside a write transaction). */
int storage__stats_add(storage_t *st, uint64_t hits, uint64_t misses,
                       uint64_t evictions, uint64_t removed, uint64_t corrupt);
/* Encodes k's shape and the digests of g and o into bk. */
int storage__bind_key_prepare(storage_t *st, const struct storage_key *k,
                              const struct planner_graph *g,
                              const struct planner_options *o,
                              struct bound_key *bk);
void storage__bind_key(sqlite3_stmt *s, const struct storage_key *k,
                       const struct bound_key *bk);
/* Binds k and the two digests given (32 bytes each, copied into bk) to
 * parameters 1 to 4 of s. bk is the caller's and must outlive the
 * binding, and so must k's model hash. Returns 0 or the error
 * storage__bind_key_prepare() recorded. */
int storage__bind_digest_key(storage_t *st, sqlite3_stmt *s,
                             const struct storage_key *k,
                             const uint8_t *graph_digest,
                             const uint8_t *options_digest,
                             struct bound_key *bk);
/* Reads the current row; 0 or ARENA_ECORRUPT. */
int storage__read_row(sqlite3_stmt *s, struct row_view *v);
int storage__checksum_ok(const struct row_view *v);
/* Returns 1 when the graph columns that v read match their checksum. */
int storage__graph_ok(const struct row_view *v);
void storage__fill_info(const struct row_view *v, struct storage_info *info);
/* Fills p's fields from v, its sharing from the offsets head. Returns 0
 * or ARENA_ECORRUPT (the head does not decode). */
int storage__fill_plan_fields(const struct row_view *v,
                              struct planner_plan *p);
/* Deletes a corrupt row in its own transaction, counts and logs it. */
void storage__drop_corrupt(storage_t *st, int64_t id, const char *why);

#endif /* ARENA_STORAGE_INT_H */

/*
 * storage.h - arenad's persistent plan cache: a bounded, crash-safe sqlite
 * database of verified arena plans.
 *
 * Every plan the daemon computes is kept here, so that a process that
 * restarts, or a second process running the same model, gets its plan
 * back without planning again. docs/storage.md describes the file format,
 * the sqlite settings and the recovery rules in full; this header is the
 * contract.
 *
 * KEY
 *  A plan is stored under (model hash, input shape, graph digest, options
 *  digest). The model hash is opaque bytes from the client (1 to
 *  STORAGE_MODEL_HASH_MAX). The input shape lists the dims of every graph
 *  input, in the model's input order. The graph digest
 *  (planner_graph_digest) is computed here from the caller's graph, and
 *  the options digest (planner_options_digest) covers algorithm,
 *  alignment and capacity. Because the graph digest is part of the key,
 *  two different graphs sent under one model hash can never receive each
 *  other's plan.
 *
 * OFFSET ORDER
 *  Offsets are stored in canonical tensor order (ascending tensor id), so
 *  the same graph listed in another order still matches. storage_get()
 *  returns them in the caller's graph order; storage_lookup(), which has
 *  no graph, returns them in canonical order: offsets[k] belongs to the
 *  tensor with the k-th smallest id.
 *
 * THREADS
 *  A storage_t is used by one thread at a time. Threads and processes
 *  that read concurrently open their own handles on the same file; sqlite
 *  WAL mode lets readers run while one writer commits, and the busy
 *  timeout absorbs short lock waits.
 *
 * ERRORS
 *  Calls return 0 or a negative ARENA_E* code. After a failed call on a
 *  handle, storage_errmsg() describes it. The library never prints; it
 *  reports notable events (corrupt entries dropped, files moved aside)
 *  through the optional log callback given at open.
 */
#ifndef ARENA_STORAGE_H
#define ARENA_STORAGE_H

#include <stddef.h>
#include <stdint.h>

#include "arena_error.h"
#include "digest.h"
#include "planner.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STORAGE_MODEL_HASH_MAX 64u   /* bytes in a model hash, at most */
#define STORAGE_MAX_INPUTS 1024u     /* graph inputs in one shape */
#define STORAGE_MAX_RANK 32u         /* dims of one input */
#define STORAGE_LOOKUP_MAX 64u       /* records one storage_lookup returns */
#define STORAGE_LIST_MAX 10000u      /* records one storage_list returns */
#define STORAGE_PLACEMENT_MAX 4096u  /* bytes in a placement record */

#define STORAGE_DEFAULT_MAX_BYTES (512ull << 20) /* 512 MiB */
#define STORAGE_DEFAULT_MAX_ENTRIES 100000u
#define STORAGE_DEFAULT_BUSY_TIMEOUT_MS 5000u
#define STORAGE_DEFAULT_TOUCH_BATCH 64u

/* Marks calls whose result must be checked. */
#if defined(__GNUC__)
#define STORAGE_WUR __attribute__((warn_unused_result))
#else
#define STORAGE_WUR
#endif

/* An open cache. Opaque; see storage_open / storage_close. */
typedef struct storage storage_t;

enum storage_log_level {
  STORAGE_LOG_INFO = 0,  /* routine: database created or migrated */
  STORAGE_LOG_WARN = 1,  /* recovered: corrupt entry dropped, file moved */
  STORAGE_LOG_ERROR = 2, /* a failure the caller also sees as a code */
};

/* Receives one log line (msg is borrowed for the duration of the call,
 * no trailing newline). Called on the thread using the handle. */
typedef void (*storage_log_cb)(void *ctx, enum storage_log_level level,
                               const char *msg);

struct storage_options {
  uint64_t max_bytes;       /* cap on accounted bytes, 0 = unlimited */
  uint64_t max_entries;     /* cap on stored plans, 0 = unlimited */
  uint32_t busy_timeout_ms; /* lock wait before ARENA_EBUSY */
  uint32_t touch_batch;     /* gets between flushes of hit updates, >= 1 */
  storage_log_cb log;       /* optional, may be NULL */
  void *log_ctx;            /* borrowed, passed to log */
};

/* The cache key without its digests. All pointers are borrowed. */
struct storage_key {
  const uint8_t *model_hash; /* model_hash_len opaque bytes */
  size_t model_hash_len;     /* 1 .. STORAGE_MODEL_HASH_MAX */
  const uint32_t *ranks;     /* n_inputs ranks, each <= STORAGE_MAX_RANK */
  size_t n_inputs;           /* 0 .. STORAGE_MAX_INPUTS */
  const int64_t *dims;       /* sum(ranks) dims, >= 0, input by input */
};

/* Bookkeeping stored next to a plan. */
struct storage_info {
  uint64_t plan_us;     /* time the planner took, as given to put */
  int64_t created_ms;   /* Unix ms when this plan was stored */
  int64_t last_used_ms; /* Unix ms of the last flushed get */
  uint64_t hits;        /* flushed gets that returned this plan */
  uint64_t bytes;       /* accounted bytes (see docs/storage.md) */
  size_t n_tensors;     /* tensors in the plan's graph */
  uint64_t generation;  /* 1 when first stored, +1 per smaller plan that
                           replaced it; 0 for a plan stored before
                           generations were kept */
  uint32_t effort;      /* effort that found the stored plan; 0: unknown */
  uint32_t effort_tried;/* highest effort tried on this key (>= effort) */
  int improve_done;     /* 1: no more background work is wanted (proven
                           optimal, or tried up to the caller's limit) */
  int has_graph;        /* 1: the graph and options are stored too */
};

/* One stored plan as storage_lookup / storage_list return it. */
struct storage_record {
  uint8_t model_hash[STORAGE_MODEL_HASH_MAX]; /* model_hash_len bytes */
  size_t model_hash_len;                      /* 1 .. 64 */
  uint32_t *ranks;                            /* n_inputs ranks, owned */
  int64_t *dims;                              /* sum(ranks) dims, owned */
  size_t n_inputs;                            /* inputs in the shape */
  uint8_t graph_digest[PLANNER_DIGEST_LEN];   /* planner_graph_digest */
  uint8_t options_digest[PLANNER_DIGEST_LEN]; /* planner_options_digest */
  struct planner_plan plan; /* owned; offsets in canonical order, or NULL
                               (n_offsets still set) from storage_list */
  struct storage_info info; /* bookkeeping */
  struct planner_graph graph; /* owned tensors, in canonical order
                                 (ascending id), from storage_export and
                                 storage_pending only; else empty */
  struct planner_options opts; /* the options the plan was made under
                                 (algo, alignment, capacity, in_place;
                                 the rest at their defaults), with graph */
  uint8_t *placement;  /* owned: the plan's placement record
                          (storage_attach), with graph; NULL: none */
  size_t placement_len; /* bytes in placement */
};

enum storage_put_result {
  STORAGE_PUT_INSERTED = 1, /* no plan was stored under this key */
  STORAGE_PUT_UPGRADED = 2, /* replaced a larger or unproven plan */
  STORAGE_PUT_KEPT = 3,     /* the stored plan is as good; unchanged */
};

enum storage_order {
  STORAGE_ORDER_NEWEST = 0,    /* created_ms descending */
  STORAGE_ORDER_MOST_USED = 1, /* hits descending */
};

struct storage_list_query {
  const uint8_t *model_hash; /* borrowed filter, NULL for every model */
  size_t model_hash_len;     /* bytes in model_hash */
  enum storage_order order;  /* sort order */
  size_t offset;             /* records to skip (paging) */
  size_t limit;              /* 1 .. STORAGE_LIST_MAX */
};

struct storage_stats {
  uint64_t entries;         /* stored plans */
  uint64_t bytes;           /* accounted bytes of all stored plans */
  uint64_t hits;            /* gets that returned a plan, ever */
  uint64_t misses;          /* gets that returned ARENA_ENOENT, ever */
  uint64_t evictions;       /* plans evicted by the caps, ever */
  uint64_t removed;         /* plans removed by storage_evict_*, ever */
  uint64_t corrupt_dropped; /* plans deleted for a bad checksum/verify */
  uint64_t file_bytes;      /* database file plus WAL file, bytes */
};

/* Fills o with the defaults: STORAGE_DEFAULT_* caps, busy timeout and
 * touch batch, no log callback. */
void storage_options_init(struct storage_options *o);

/* Opens or creates the cache at path (borrowed; copied). o (borrowed,
 * copied; NULL = defaults) sets the caps and the log callback. A file that
 * is not an arenad database, has a newer schema, or fails
 * PRAGMA quick_check is renamed to "<path>.<reason>-<UTC time>" (its -wal
 * and -shm files likewise), logged, and replaced by a fresh database; an
 * older schema is migrated in place. On success *out is a handle to free
 * with storage_close. Returns 0, ARENA_EINVAL, ARENA_ENOMEM, ARENA_EBUSY
 * (the file stayed locked past the busy timeout), ARENA_EIO (cannot open,
 * create or rename) or ARENA_ECORRUPT; on failure *out is NULL and err
 * (optional) explains. */
STORAGE_WUR int storage_open(const char *path, const struct storage_options *o,
                 storage_t **out, char err[ARENA_ERR_LEN]);

/* Flushes pending hit updates (best effort; failures are logged), frees
 * the prepared statements and closes the database. Accepts NULL. */
void storage_close(storage_t *st);

/* Returns the text of the last error on st, owned by st and valid until
 * the next call on it; "" when the last call succeeded. */
const char *storage_errmsg(const storage_t *st);

/* Stores plan p (borrowed) for graph g and options o (borrowed) under key
 * k (borrowed). plan_us is the planning time to record. p must pass
 * planner_verify(g, o, p) or nothing is written. Inserts when the key is
 * new; replaces the stored plan only when p's arena is smaller, or equal
 * and p is proven optimal while the stored one is not; otherwise keeps
 * it. Then evicts least-recently-used plans, in the same transaction,
 * until the caps hold again. Sets *res (optional) to the outcome. Same
 * as storage_put_effort with effort 0 (unknown) and done 0, so the plan
 * is stored with its graph and, unless proven optimal, wants background
 * work (storage_pending).
 * Returns 0, ARENA_EINVAL (bad key), ARENA_ETOOBIG (this plan alone
 * exceeds max_bytes), ARENA_EVERIFY or another planner_verify code,
 * ARENA_ENOMEM, ARENA_EBUSY or ARENA_EIO. On failure the database is
 * unchanged. */
STORAGE_WUR int storage_put(storage_t *st, const struct storage_key *k,
                const struct planner_graph *g,
                const struct planner_options *o,
                const struct planner_plan *p, uint64_t plan_us,
                enum storage_put_result *res);

/* storage_put with the effort that found p (0: unknown). The row keeps g
 * and o (as storage_export and storage_pending return them), effort, and
 * effort_tried = max(effort, the stored effort_tried); generation is 1 on
 * insert and one more on each replacement (a plan stored before
 * generations, 0, counts as 1). On insert or replacement improve_done
 * is set to done (or to 1 when p is proven optimal). On
 * STORAGE_PUT_KEPT only effort_tried and improve_done change, and
 * improve_done is only ever set there, never cleared. Returns as
 * storage_put. */
STORAGE_WUR int storage_put_effort(storage_t *st, const struct storage_key *k,
                                   const struct planner_graph *g,
                                   const struct planner_options *o,
                                   const struct planner_plan *p,
                                   uint64_t plan_us, uint32_t effort,
                                   int done, enum storage_put_result *res);

/* Records that effort was tried on the plan under the full key (k,
 * graph_digest, options_digest; borrowed) without storing a smaller plan:
 * effort_tried becomes max(effort_tried, effort) and improve_done is set
 * when done (never cleared). A key not stored changes nothing. Returns
 * 0, ARENA_EINVAL, ARENA_EBUSY or ARENA_EIO. */
STORAGE_WUR int storage_note_tried(storage_t *st, const struct storage_key *k,
                                   const uint8_t graph_digest[PLANNER_DIGEST_LEN],
                                   const uint8_t options_digest[PLANNER_DIGEST_LEN],
                                   uint32_t effort, int done);

/* Returns up to max plans (1 .. STORAGE_LIST_MAX) that want background
 * work: stored with their graph, improve_done 0, of at most max_tensors
 * tensors (0: any), most hits first, then most recently used. Each
 * record carries its plan (canonical order, checksum checked), graph and
 * options. Flushes pending uses first so that the order is current.
 * Output and errors as storage_lookup. */
STORAGE_WUR int storage_pending(storage_t *st, size_t max,
                                uint64_t max_tensors,
                                struct storage_record **out, size_t *n_out);

/* A selection of stored plans for storage_export. */
struct storage_export_query {
  const uint8_t *model_hash; /* borrowed filter, NULL for every model */
  size_t model_hash_len;     /* bytes in model_hash */
  const uint8_t *key;        /* borrowed: one plan, by the opaque key the
                                daemon's List gives (u8 hash length, hash,
                                u16 n_inputs, u8 ranks, i64 dims, graph
                                and options digests; little-endian);
                                NULL for any */
  size_t key_len;            /* bytes in key */
  size_t offset;             /* records to skip (paging) */
  size_t limit;              /* 1 .. STORAGE_LIST_MAX */
};

/* Returns the plans q selects that were stored with their graph, oldest
 * first, each with its plan (canonical order, checksum checked and
 * planner_verify()ed against the stored graph), graph and options. A
 * plan whose graph or options fail their checksum or do not decode, or
 * whose plan fails verification, is deleted and left out like a bad row
 * in storage_lookup. Sets *n_without (optional) to the plans the filters
 * select, whatever the paging, that are left out for having no stored
 * graph. A malformed key is ARENA_EINVAL. Output and errors as
 * storage_lookup. */
STORAGE_WUR int storage_export(storage_t *st,
                               const struct storage_export_query *q,
                               struct storage_record **out, size_t *n_out,
                               size_t *n_without);

/* One plan to preload: its key, graph, options and plan (offsets in g's
 * order), all borrowed, the effort that found it (0: unknown), and
 * whether no background work is wanted on it (as storage_put_effort's
 * done). */
struct storage_preload_entry {
  struct storage_key key;
  const struct planner_graph *graph;
  const struct planner_options *opts;
  const struct planner_plan *plan;
  uint32_t effort;
  int done;
  const uint8_t *placement; /* borrowed placement record (storage_attach),
                               stored beside the plan; NULL: none */
  size_t placement_len;     /* bytes in placement, 0 .. STORAGE_PLACEMENT_MAX */
};

/* Stores n entries (e borrowed) in one transaction, each as
 * storage_put_effort would (a smaller plan replaces a stored one; a
 * larger one is kept out), all or nothing: when any entry has a bad key
 * or fails planner_verify against its graph (or claims a larger arena
 * than any planner makes for it: docs/storage.md, "What a stored plan
 * may claim"), or a write fails, nothing is stored, *bad (optional) is
 * set to its index (n when the transaction itself failed) and the code
 * returned. Sets *n_stored (inserted or upgraded) and *n_kept
 * (optional) on success. Evicts to the caps after, in the same
 * transaction; that may evict preloaded plans too when the caps are
 * smaller than the bundle. Entries get improve_done from their done
 * field (or 1 when proven optimal), and plan_us 0. n 0 stores nothing
 * and returns 0. Same as storage_preload_begin, one storage_preload_add
 * of all n and storage_preload_commit. */
STORAGE_WUR int storage_preload(storage_t *st,
                                const struct storage_preload_entry *e,
                                size_t n, size_t *n_stored, size_t *n_kept,
                                size_t *bad);

/* A preload in batches: storage_preload_begin opens one write
 * transaction, each storage_preload_add checks and writes a batch of
 * entries in it (so that a caller holds one batch in memory at a time,
 * never the whole bundle), and storage_preload_commit ends it: all or
 * nothing, as storage_preload. No other call may use st while a preload
 * is open (its write lock is held: other handles on the file wait, or
 * get ARENA_EBUSY past their busy timeout). Each returns 0 or a code as
 * storage_preload; after any failure the preload is over and nothing
 * was stored (*bad, optional, is the failing entry's index counted over
 * every add, SIZE_MAX for the commit). storage_preload_abort ends an
 * open preload without storing anything (accepts NULL, and a handle
 * with none open). Beginning while one is open is ARENA_EINVAL. */
STORAGE_WUR int storage_preload_begin(storage_t *st);
STORAGE_WUR int storage_preload_add(storage_t *st,
                                    const struct storage_preload_entry *e,
                                    size_t n, size_t *bad);
STORAGE_WUR int storage_preload_commit(storage_t *st, size_t *n_stored,
                                       size_t *n_kept);
void storage_preload_abort(storage_t *st);

/* Looks up the plan for key k and graph g under options o (all borrowed),
 * checks its checksum and planner_verify()s it against g. On a hit fills
 * *out (planner_plan_init()ed or cleaned; old contents freed) with
 * offsets in g's order, and *info (optional), and records the use in
 * memory; uses are written in one transaction every touch_batch gets, on
 * put, on flush and on close. A stored plan that fails its checksum or
 * verification is deleted, logged, counted and reported as a miss.
 * Returns 0, ARENA_ENOENT (miss), ARENA_EINVAL, a planner_validate code
 * for a bad g, ARENA_ENOMEM, ARENA_EBUSY or ARENA_EIO. On failure *out is
 * empty. */
STORAGE_WUR int storage_get(storage_t *st, const struct storage_key *k,
                const struct planner_graph *g,
                const struct planner_options *o, struct planner_plan *out,
                struct storage_info *info);

/* Returns every plan stored under (model hash, input shape) of k
 * (borrowed), whatever its graph or options, most recently used first and
 * at most STORAGE_LOOKUP_MAX, so a client that did not send its graph can
 * compare graph digests itself. Each record's checksum is checked; bad
 * ones are deleted and left out. Does not count as a use. On success
 * *out is an owned array of *n_out records (NULL when 0) to free with
 * storage_records_free. Returns 0, ARENA_EINVAL, ARENA_ENOMEM,
 * ARENA_EBUSY or ARENA_EIO; on failure *out is NULL and *n_out 0. */
STORAGE_WUR int storage_lookup(storage_t *st, const struct storage_key *k,
                   struct storage_record **out, size_t *n_out);

/* storage_lookup for a client that learns the graph from the cache:
 * only the plans stored with their graph, each with its plan (checksum
 * checked and planner_verify()ed against the stored graph, as
 * storage_export does), graph, options and placement record. Output and
 * errors as storage_lookup. */
STORAGE_WUR int storage_lookup_graphs(storage_t *st,
                                      const struct storage_key *k,
                                      struct storage_record **out,
                                      size_t *n_out);

/* Stores placement (len bytes, 1 .. STORAGE_PLACEMENT_MAX, borrowed)
 * beside the plan stored under k and the two digests, replacing any
 * record it had; the record counts in the plan's accounted bytes. The
 * bytes are the client's: storage keeps and returns them (in
 * storage_lookup_graphs and storage_export records) but never reads
 * them, and no checksum of the row covers them. Returns 0, ARENA_ENOENT
 * (no such plan), ARENA_EINVAL (bad key or length), ARENA_EBUSY or
 * ARENA_EIO. */
STORAGE_WUR int storage_attach(storage_t *st, const struct storage_key *k,
                               const uint8_t graph_digest[PLANNER_DIGEST_LEN],
                               const uint8_t options_digest[PLANNER_DIGEST_LEN],
                               const uint8_t *placement, size_t len);

/* Lists stored plans without their offsets (plan.offsets is NULL,
 * plan.n_offsets is set), filtered and paged by q (borrowed). Since the
 * offsets are not read, checksums are not checked here; get and lookup
 * check them. Flushes pending uses first so that STORAGE_ORDER_MOST_USED
 * is current. Output and errors as storage_lookup. */
STORAGE_WUR int storage_list(storage_t *st, const struct storage_list_query *q,
                 struct storage_record **out, size_t *n_out);

/* Frees an array from storage_lookup, storage_list, storage_pending or
 * storage_export, graphs included. Accepts NULL. */
void storage_records_free(struct storage_record *r, size_t n);

/* Removes the plan under the full key (k, graph_digest, options_digest;
 * all borrowed). Sets *n_removed (optional) to 0 or 1. Returns 0,
 * ARENA_EINVAL, ARENA_EBUSY or ARENA_EIO. */
STORAGE_WUR int storage_evict(storage_t *st, const struct storage_key *k,
                  const uint8_t graph_digest[PLANNER_DIGEST_LEN],
                  const uint8_t options_digest[PLANNER_DIGEST_LEN],
                  uint64_t *n_removed);

/* Removes every plan of one model hash (borrowed, 1..64 bytes). */
STORAGE_WUR int storage_evict_model(storage_t *st, const uint8_t *model_hash,
                        size_t model_hash_len, uint64_t *n_removed);

/* Removes every plan. */
STORAGE_WUR int storage_evict_all(storage_t *st, uint64_t *n_removed);

/* Uses of a stored plan that were served without storage_get, e.g. from
 * a caller's own in-memory cache. All pointers are borrowed. */
struct storage_use {
  struct storage_key key;        /* model hash and input shape */
  const uint8_t *graph_digest;   /* PLANNER_DIGEST_LEN bytes */
  const uint8_t *options_digest; /* PLANNER_DIGEST_LEN bytes */
  uint64_t count;                /* uses to add to the plan's hits */
  int64_t last_used_ms;          /* Unix ms of the latest of them */
};

/* Adds n uses (u borrowed) to the plans they name, in one IMMEDIATE
 * transaction that also writes this handle's pending uses: each named
 * plan's hits grow by count, its last-use time becomes at least
 * last_used_ms, and it becomes the most recently used plan, in array
 * order (so list the least recent first). A use of a plan that is not
 * stored changes nothing. The stats row's hit counter, which counts
 * gets, is left alone. Sets *n_applied (optional) to the plans changed.
 * Returns 0, ARENA_EINVAL (a bad key or a missing digest), ARENA_ENOMEM,
 * ARENA_EBUSY or ARENA_EIO; on failure nothing is written and this
 * handle's pending uses stay pending. */
STORAGE_WUR int storage_add_uses(storage_t *st, const struct storage_use *u,
                                 size_t n, uint64_t *n_applied);

/* Writes pending uses (last-use times, hit and miss counts) in one
 * transaction. Returns 0, ARENA_EBUSY or ARENA_EIO; on failure the
 * pending uses are kept for the next flush. */
STORAGE_WUR int storage_flush(storage_t *st);

/* Fills *out with the counters (including this handle's pending ones)
 * and the file sizes. Returns 0, ARENA_EBUSY or ARENA_EIO. */
STORAGE_WUR int storage_get_stats(storage_t *st, struct storage_stats *out);

/* Flushes, checkpoints the WAL and rebuilds the file to return free pages
 * to the OS (VACUUM). Needs free disk space about the size of the file.
 * Returns 0, ARENA_EBUSY (another connection is active) or ARENA_EIO. */
STORAGE_WUR int storage_vacuum(storage_t *st);

#ifdef __cplusplus
}
#endif

#endif /* ARENA_STORAGE_H */

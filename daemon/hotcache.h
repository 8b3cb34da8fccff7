/*
 * hotcache.h - the daemon's in-memory LRU of hot plans, consulted on the
 * loop thread so that a repeated request is answered without touching
 * sqlite or the worker pool.
 *
 * An entry is found by the request's identity: the exact bytes of its
 * model hash, input shape, options (algorithm, alignment, capacity, and
 * for a graph that declares aliases the in-place option) and tensor
 * columns, aliases included, in request order. A 64-bit hash picks the
 * bucket and a full byte comparison confirms the match, so a hit is only
 * ever served to a graph identical to the one whose plan was verified
 * when it entered the cache. Bounded by bytes and by entries; least
 * recently used first out. Used by the loop thread only.
 *
 *  One plan may take at most HOT_ENTRY_SHARE-th of the byte cap: a
 *  larger one is not cached, so that one huge graph neither pushes out
 *  the hot set nor stays resident in an idle daemon (its repeats are
 *  answered from the database, in a time small beside that of sending
 *  the request).
 *
 * USES
 *  Each hit is counted on its entry, under the entry's use key: opaque
 *  bytes the caller gives at put that name the plan in the database.
 *  hotcache_take_uses() moves the counts out, so that the caller can add
 *  them to the database in one batch. An entry pushed out by the caps, or
 *  replaced, keeps its uncollected count (and its use key) until the next
 *  take; an entry removed on purpose (hotcache_clear, hotcache_remove_*)
 *  drops it, since its plan is being deleted.
 */
#ifndef ARENA_HOTCACHE_H
#define ARENA_HOTCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "planner.h"

struct hotcache;

/* The largest entry is the byte cap divided by this. */
#define HOT_ENTRY_SHARE 8

/* A cached plan. Arrays are owned by the cache. */
struct hot_plan {
  uint64_t *offsets;       /* n_offsets, request order */
  size_t n_offsets;
  uint64_t arena_bytes;
  uint64_t lower_bound_bytes;
  uint64_t naive_bytes;
  enum planner_algo algo;
  int proven_optimal;
  enum planner_fit fit;
  uint64_t nodes_explored;
  uint64_t lower_bound_unshared_bytes; /* as in struct planner_plan */
  size_t n_shared;         /* pairs sharing bytes in place */
  uint64_t planning_us;    /* time the plan took when it was computed */
  uint64_t generation;     /* as in struct storage_info; 0: unknown */
  uint32_t effort;         /* effort that found the plan; 0: unknown */
  int improving;           /* background work on it goes on */
  uint8_t graph_digest[PLANNER_DIGEST_LEN];
  uint8_t options_digest[PLANNER_DIGEST_LEN];
  const uint8_t *use_key;  /* names the stored plan; copied by put, owned
                              by the cache; NULL: uses are not counted */
  size_t use_key_len;      /* bytes in use_key */
  const uint8_t *reply;    /* the PlanReply a hit sends, packed once
                              (cached = 1); copied by put, owned by the
                              cache; NULL: built from the fields above */
  size_t reply_len;        /* bytes in reply */
};

/* Uses counted under one use key since the last take. */
struct hot_use {
  uint8_t *key;   /* use key, owned by the array */
  size_t key_len; /* bytes in key */
  uint64_t count; /* hits, >= 1 */
};

/* 64-bit hash of a byte string (not cryptographic). */
uint64_t hot_hash(const void *data, size_t len);

/* Returns a new cache, or NULL on OOM. Free with hotcache_free. A cap of
 * 0 bytes or entries disables the cache (every get misses). */
struct hotcache *hotcache_new(uint64_t max_bytes, uint64_t max_entries);
void hotcache_free(struct hotcache *hc);

/* Changes the caps, evicting as needed. */
void hotcache_set_caps(struct hotcache *hc, uint64_t max_bytes,
                       uint64_t max_entries);

/* Returns the plan for identity (ident, len, h), marks it recently used
 * and counts one use, or NULL. The pointer is borrowed until the next
 * call. */
const struct hot_plan *hotcache_get(struct hotcache *hc, const uint8_t *ident,
                                    size_t len, uint64_t h);

/* Copies ident and plan, use key included, in (replacing an entry with
 * the same identity, whose uncollected uses stay pending).
 * Returns 0, or -1 on OOM or when the entry alone exceeds its share of
 * the byte cap, max_bytes / HOT_ENTRY_SHARE (then nothing is cached and
 * an entry with the same identity stays as it was). */
int hotcache_put(struct hotcache *hc, const uint8_t *ident, size_t len,
                 uint64_t h, const struct hot_plan *plan);

/* Removes entries: every one, those whose identity starts with the given
 * model hash, or the one with these digests and model hash. Returns how
 * many were removed. */
size_t hotcache_clear(struct hotcache *hc);
size_t hotcache_remove_model(struct hotcache *hc, const uint8_t *model_hash,
                             size_t len);
size_t hotcache_remove_digests(struct hotcache *hc, const uint8_t *model_hash,
                               size_t len, const uint8_t *graph_digest,
                               const uint8_t *options_digest);

void hotcache_usage(const struct hotcache *hc, uint64_t *entries,
                    uint64_t *bytes);

/* Whether any use is waiting to be taken. */
int hotcache_has_uses(const struct hotcache *hc);

/* Moves every uncollected use out of the cache: first those of entries
 * pushed out since the last take (in the order they left), then those of
 * cached entries, least recently used first. On success returns 0 and an
 * owned array in *out (free with hot_uses_free; NULL when *n is 0) and
 * the count is reset; on OOM returns -1, sets *out NULL and *n 0, and the
 * uses stay pending. */
int hotcache_take_uses(struct hotcache *hc, struct hot_use **out, size_t *n);
void hot_uses_free(struct hot_use *u, size_t n);

#endif

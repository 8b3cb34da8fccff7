/*
 * digest.h - SHA-256 and the canonical digests of graphs and options.
 *
 * Part of planner/formats/ (CSV, .tflite and digests), which uses only
 * planner/core/ and libc; nothing else in planner/ uses it.
 *
 * Plans are cached and shared by content, so arenad needs a stable name for
 * "this lifetime graph" and "these planning options" that does not depend
 * on the order in which a client listed its tensors, on the host's byte
 * order or on struct padding. This module provides a self-contained
 * SHA-256 (FIPS 180-4) and two digests built on it. Pure C: no I/O, no
 * globals, reentrant.
 *
 * CANONICAL GRAPH ENCODING (version 1)
 *  The graph digest is SHA-256 over these bytes, all integers little-endian
 *  and fixed-width, signed ones in two's complement:
 *      16 bytes  the tag "arenad-graph-v1\n" (ASCII, no NUL)
 *       8 bytes  u64 number of tensors
 *  then, for each tensor in canonical order, 44 bytes:
 *       4 bytes  u32 id
 *       8 bytes  u64 size
 *       8 bytes  i64 first
 *       8 bytes  i64 last
 *       8 bytes  u64 align
 *       8 bytes  i64 pinned (PLANNER_NOT_PINNED = -1 when free)
 *  Canonical order sorts by id, then (only for graphs with duplicate ids,
 *  which planner_validate rejects anyway) by size, first, last, align,
 *  pinned, has_alias and alias, so any permutation of the same tensors
 *  gives the same digest.
 *
 * CANONICAL GRAPH ENCODING (version 2)
 *  A graph in which some tensor declares an alias (has_alias != 0;
 *  planner.h, IN-PLACE SHARING) is encoded as version 2, so that the
 *  pairs it declares are part of the cache key. A graph that declares
 *  none keeps the version 1 encoding above, and so the digest it always
 *  had. Version 2 is version 1 with another tag and 8 more bytes per
 *  tensor:
 *      16 bytes  the tag "arenad-graph-v2\n"
 *       8 bytes  u64 number of tensors
 *  then, for each tensor in canonical order, 52 bytes:
 *      44 bytes  the version 1 record (id, size, first, last, align,
 *                pinned)
 *       4 bytes  u32 has_alias: 1 when the tensor declares an alias, else 0
 *       4 bytes  u32 alias: the id it names, 0 when has_alias is 0
 *  A tensor's alias field counts only when its has_alias does, as in the
 *  planner: two graphs that differ only there have one digest.
 *
 * CANONICAL OPTIONS ENCODING (version 1)
 *      18 bytes  the tag "arenad-options-v1\n"
 *       4 bytes  u32 algorithm (enum planner_algo, stable values)
 *       8 bytes  u64 alignment
 *       8 bytes  u64 capacity
 *  The effort and the stop callback are left out on purpose: they change
 *  how much planning may do, not which plans are acceptable answers (so
 *  the effort, once a time budget, never changed a digest). Threads never
 *  change a plan and are left out too.
 *
 *  in_place is left out as well: with it off, every tool and the daemon
 *  digest, key, plan and verify the graph as if it declared no alias
 *  (planner_graph_digest_planned), so the graph's digest already tells
 *  the two apart, and a graph planned with sharing off shares its cache
 *  entry with the same graph written without aliases.
 *
 *  Changing any encoding means a new tag ("-v3"), never a silent edit:
 *  digests are stored in caches and sent over the wire.
 */
#ifndef ARENA_DIGEST_H
#define ARENA_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "planner.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PLANNER_DIGEST_LEN 32u /* bytes in a SHA-256 digest */
#define PLANNER_DIGEST_HEX_LEN (2u * PLANNER_DIGEST_LEN + 1u) /* with NUL */

/* Streaming SHA-256 state. Caller-allocated value struct: init it, feed it
 * with update, finish with final. Fields are private to digest.c. */
struct planner_sha256 {
  uint32_t h[8];       /* chaining value */
  uint64_t n_bytes;    /* total bytes fed so far */
  uint8_t buf[64];     /* partial block, buf_len bytes used */
  size_t buf_len;      /* 0 .. 63 */
};

/* Starts a new hash in s (borrowed, caller-allocated). Cannot fail. */
void planner_sha256_init(struct planner_sha256 *s);

/* Feeds len bytes of data (borrowed; may be NULL when len is 0). */
void planner_sha256_update(struct planner_sha256 *s, const void *data,
                           size_t len);

/* Finishes the hash and writes the digest to out (caller-allocated,
 * PLANNER_DIGEST_LEN bytes). s must be re-initialised before reuse. */
void planner_sha256_final(struct planner_sha256 *s,
                          uint8_t out[PLANNER_DIGEST_LEN]);

/* One-shot SHA-256 of len bytes at data (borrowed) into out. */
void planner_sha256(const void *data, size_t len,
                    uint8_t out[PLANNER_DIGEST_LEN]);

/* Digest of the canonical encoding of g (borrowed; see above). Does not
 * validate g beyond g->tensors being non-NULL when n_tensors > 0.
 * Returns 0, ARENA_EINVAL (NULL tensors with n_tensors > 0), or
 * ARENA_ENOMEM (the sort needs one pointer per tensor when the tensors are
 * not already in strictly ascending id order). On failure out is zeroed. */
int planner_graph_digest(const struct planner_graph *g,
                         uint8_t out[PLANNER_DIGEST_LEN]);

/* planner_graph_digest() of g as planned under o (borrowed): with
 * o->in_place 0, of g with every alias ignored, the digest the daemon
 * keys such a request under. Same returns. */
int planner_graph_digest_planned(const struct planner_graph *g,
                                 const struct planner_options *o,
                                 uint8_t out[PLANNER_DIGEST_LEN]);

/* Digest of the canonical encoding of o's algorithm, alignment,
 * capacity and, when it is off, in_place (o borrowed). Cannot fail. */
void planner_options_digest(const struct planner_options *o,
                            uint8_t out[PLANNER_DIGEST_LEN]);

/* Writes the 2*n lower-case hex digits of b (borrowed) and a NUL into out
 * (caller-allocated, at least 2*n+1 bytes). Returns out. */
char *planner_hex(const uint8_t *b, size_t n, char *out);

/* Parses exactly 2*n hex digits (either case) from the NUL-terminated hex
 * (borrowed) into out (caller-allocated, n bytes). Returns 0, or
 * ARENA_EPARSE when hex has a non-hex character or is not exactly 2*n
 * digits long; out is zeroed on failure. */
int planner_unhex(const char *hex, uint8_t *out, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* ARENA_DIGEST_H */

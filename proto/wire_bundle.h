/*
 * wire_bundle.h - the plan bundle file format: writing a bundle from a
 * list of BundleEntry messages, and reading one back with every check a
 * file from another machine needs (docs/bundles.md).
 *
 * A bundle lets one build machine plan at high effort and a fleet ship
 * the plans beside the model: `arenactl export` writes one, `arenactl
 * preload` reads one and hands its entries to a daemon in a Preload
 * request, `arenactl bundle-info` prints what it holds.
 *
 * FORMAT (all integers big-endian)
 *     8 bytes  the magic "ARENABDL"
 *     4 bytes  u32 format version, 1
 *     8 bytes  u64 body length L
 *     L bytes  one serialized arenad.v1.Bundle (proto/arenad.proto)
 *    32 bytes  SHA-256 of the 20 + L bytes before it
 *
 * WHERE IT LIVES
 *  In proto/ (libarenawire), beside the messages it carries, because two
 *  programs read it: arenactl (export, preload, bundle-info) and arenad,
 *  which preloads the bundles of its configured directory at start. Its
 *  checksum is the SHA-256 of planner/formats/digest.h, the one planner
 *  folder besides core/ that proto/ uses. Whoever reads a bundle still
 *  hands its entries to the daemon's own checks: every graph is digested
 *  and every plan verified again before it is stored.
 *
 * ERRORS
 *  ARENA_ECORRUPT for every file that is not an intact version 1 bundle
 *  (not a bundle at all, truncated, damaged, inconsistent), and
 *  ARENA_EVERSION for a bundle of a newer format than this code reads,
 *  so that a caller can tell "upgrade" from "damaged"; ARENA_ETOOBIG when
 *  decoding needs more memory than the limit, ARENA_ENOMEM. Every
 *  failure writes a one-line reason to the optional err.
 *
 * Pure: no I/O, no globals. Private to arenactl (and its tests).
 */
#ifndef ARENA_WIRE_BUNDLE_H
#define ARENA_WIRE_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "arena_error.h"
#include "wire.h"

#define WIRE_BUNDLE_MAGIC "ARENABDL"
#define WIRE_BUNDLE_MAGIC_LEN 8u
#define WIRE_BUNDLE_VERSION 1u    /* the format this code writes and reads */
#define WIRE_BUNDLE_HEADER_LEN 20u /* magic, version, body length: bytes */
#define WIRE_BUNDLE_SUM_LEN 32u    /* the trailing SHA-256: bytes */
/* Bytes of a bundle around its body. */
#define WIRE_BUNDLE_FRAME_LEN (WIRE_BUNDLE_HEADER_LEN + WIRE_BUNDLE_SUM_LEN)

/* What one bundle may hold, by default (docs/bundles.md, "Limits"):
 * bounds the work a reader does with it (every graph validated,
 * digested and its plan verified and stored), not only its decoding. */
#define WIRE_BUNDLE_MAX_ENTRIES 65536u       /* entries (plans) */
#define WIRE_BUNDLE_MAX_TENSORS (1ull << 22) /* tensors, over all entries */

/* What reading one bundle may cost. Zero fields take the defaults. */
struct wire_bundle_limits {
  size_t mem_limit;     /* bytes of decoded messages; 0:
                           WIRE_DEFAULT_MEM_LIMIT */
  size_t max_entries;   /* entries; 0: WIRE_BUNDLE_MAX_ENTRIES */
  uint64_t max_tensors; /* tensors over all entries; 0:
                           WIRE_BUNDLE_MAX_TENSORS */
};

/* Writes a bundle of the n entries (borrowed; n may be 0), the producer
 * text (borrowed, NUL-terminated) and the creation time into a new
 * buffer: *out is owned (free()) and *out_len its length. Returns 0,
 * ARENA_ETOOBIG (a body over max_len - WIRE_BUNDLE_FRAME_LEN bytes; 0
 * means no limit beyond SIZE_MAX) or ARENA_ENOMEM; on failure *out is
 * NULL and *out_len 0. Does not check the entries (see
 * wire_bundle_check_entry). */
int wire_bundle_write(Arenad__V1__BundleEntry *const *entries, size_t n,
                     const char *producer, int64_t created_unix_ms,
                     size_t max_len, uint8_t **out, size_t *out_len);

/* Checks what the first len bytes of a file (borrowed) already tell:
 * that they begin with the magic (or a prefix of it), a version this
 * code reads, and, once the body length is there, that the file is no
 * longer than it announces. Returns 0 when the bytes so far can still be
 * a bundle, else the code wire_bundle_read() gives them, with the reason
 * in err (optional). Lets a reader stop at the first wrong byte. */
int wire_bundle_check_prefix(const uint8_t *bytes, size_t len,
                            char err[ARENA_ERR_LEN]);

/* Checks one entry (borrowed; index counts from 0, for the message): a
 * request with a graph of at least one tensor, and a plan with one
 * offset per tensor. Returns 0 or ARENA_ECORRUPT with the reason in err
 * (optional). Verifying the plan against its graph is the daemon's. */
int wire_bundle_check_entry(const Arenad__V1__BundleEntry *e, size_t index,
                           char err[ARENA_ERR_LEN]);

/* Checks a number of entries against l->max_entries (l borrowed, NULL:
 * the default). Returns 0, or ARENA_ETOOBIG with "the bundle holds N
 * entries, more than the M one bundle may hold" in err (optional). */
int wire_bundle_check_count(size_t n, const struct wire_bundle_limits *l,
                            char err[ARENA_ERR_LEN]);

/* Takes the n entries of a bundle (borrowed; the messages are changed,
 * not the array) as every reader must, the same way whoever reads them:
 * at most l->max_entries of them (l borrowed, NULL: the defaults), each
 * as wire_bundle_check_entry wants it, at most l->max_tensors tensors in
 * all, and each stripped of the unknown fields it carries
 * (wire_strip_unknown), so that packing it again into a Preload request
 * gives what any reader takes. Returns 0, ARENA_ETOOBIG (over a limit:
 * "the bundle holds N entries, more than the M ...", or "... N tensors
 * ..."), or ARENA_ECORRUPT ("entry K: ...", also "entry K: damaged: a
 * field numbered 0"), with the reason in err (optional). */
int wire_bundle_accept_entries(Arenad__V1__BundleEntry *const *e, size_t n,
                               const struct wire_bundle_limits *l,
                               char err[ARENA_ERR_LEN]);

/* Looks into a Request frame body (len bytes, borrowed) without
 * unpacking it: returns 1 when it is a Preload request, with its
 * request id in *request_id and the number of entries it carries in
 * *n_entries, else 0 (also for bytes that do not parse; unpacking then
 * says why). Lets a reader refuse a Preload of too many entries before
 * it decodes any: unpacked, a minimal entry of some 30 bytes takes about
 * 700. */
int wire_bundle_scan_preload(const uint8_t *body, size_t len,
                             uint64_t *request_id, size_t *n_entries);

/* Reads a whole bundle file (len bytes at bytes, borrowed) under the
 * limits l (borrowed; NULL: defaults). Checks, in this order: the magic
 * ("not an arenad plan bundle"), the version ("bundle format V is newer
 * than this arenad reads (1)", or "invalid bundle format version 0"),
 * the length ("truncated: N bytes, expected M", or bytes after the
 * checksum), the checksum ("damaged: checksum mismatch"), the number of
 * entries the body holds, counted before it is unpacked (ARENA_ETOOBIG
 * over l->max_entries), then unpacks the body with a bounded allocator
 * and checks that its format_version equals the header's and takes its
 * entries with wire_bundle_accept_entries (and strips the unknown
 * fields of the Bundle message itself the same way). The
 * magic is checked on the bytes there are before the length, so that a
 * short file that is not a bundle at all is called that, not truncated.
 * Returns 0 and an owned *out (free with wire_free_bundle), or an error
 * (see ERRORS above) with *out NULL and the reason in err (optional). */
int wire_bundle_read(const uint8_t *bytes, size_t len,
                    const struct wire_bundle_limits *l,
                    Arenad__V1__Bundle **out, char err[ARENA_ERR_LEN]);

#endif /* ARENA_WIRE_BUNDLE_H */

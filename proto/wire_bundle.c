/*
 * wire_bundle.c - writing and reading plan bundle files (see wire_bundle.h
 * for the format, docs/bundles.md for the trust model).
 *
 * DESIGN
 *  Reading checks the cheap, outer things first and the body last: the
 *  header tells a file that is no bundle, or one of a newer format, from
 *  its first 12 bytes; the length and the checksum prove that the body is
 *  the one the producer wrote before protobuf-c sees any of it; and the
 *  body is unpacked under a memory budget, as a frame from a peer is.
 */
#include "wire_bundle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(char *err, int code, const char *fmt, ...)
{
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ARENA_ERR_LEN, fmt, ap);
    va_end(ap);
  }
  return code;
}

static void put_be(uint8_t *p, uint64_t v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint64_t get_be(const uint8_t *p, size_t n)
{
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++)
    v = v << 8 | p[i];
  return v;
}

/* ---- writing ------------------------------------------------------------ */

int wire_bundle_write(Arenad__V1__BundleEntry *const *entries, size_t n,
                     const char *producer, int64_t created_unix_ms,
                     size_t max_len, uint8_t **out, size_t *out_len)
{
  *out = NULL;
  *out_len = 0;
  Arenad__V1__Bundle b = ARENAD__V1__BUNDLE__INIT;
  b.format_version = WIRE_BUNDLE_VERSION;
  b.producer = (char *)producer;
  b.created_unix_ms = created_unix_ms;
  b.entries = (Arenad__V1__BundleEntry **)entries;
  b.n_entries = n;
  size_t body = protobuf_c_message_get_packed_size(&b.base);
  size_t cap = max_len ? max_len : SIZE_MAX;
  if (cap < WIRE_BUNDLE_FRAME_LEN || body > cap - WIRE_BUNDLE_FRAME_LEN)
    return ARENA_ETOOBIG;
  size_t total = WIRE_BUNDLE_FRAME_LEN + body;
  uint8_t *buf = malloc(total);
  if (!buf)
    return ARENA_ENOMEM;
  memcpy(buf, WIRE_BUNDLE_MAGIC, WIRE_BUNDLE_MAGIC_LEN);
  put_be(buf + 8, WIRE_BUNDLE_VERSION, 4);
  put_be(buf + 12, body, 8);
  protobuf_c_message_pack(&b.base, buf + WIRE_BUNDLE_HEADER_LEN);
  planner_sha256(buf, WIRE_BUNDLE_HEADER_LEN + body,
                 buf + WIRE_BUNDLE_HEADER_LEN + body);
  *out = buf;
  *out_len = total;
  return 0;
}

/* ---- reading ------------------------------------------------------------ */

int wire_bundle_check_prefix(const uint8_t *bytes, size_t len,
                            char err[ARENA_ERR_LEN])
{
  size_t m = len < WIRE_BUNDLE_MAGIC_LEN ? len : WIRE_BUNDLE_MAGIC_LEN;
  if (memcmp(bytes, WIRE_BUNDLE_MAGIC, m) != 0)
    return fail(err, ARENA_ECORRUPT, "not an arenad plan bundle");
  if (len < 12)
    return 0;
  uint64_t v = get_be(bytes + 8, 4);
  if (v == 0)
    return fail(err, ARENA_ECORRUPT, "invalid bundle format version 0");
  if (v > WIRE_BUNDLE_VERSION)
    return fail(err, ARENA_EVERSION,
                "bundle format %llu is newer than this arenad reads (%u)",
                (unsigned long long)v, WIRE_BUNDLE_VERSION);
  if (len < WIRE_BUNDLE_HEADER_LEN)
    return 0;
  uint64_t body = get_be(bytes + 12, 8);
  if (body <= SIZE_MAX - WIRE_BUNDLE_FRAME_LEN &&
      len > WIRE_BUNDLE_FRAME_LEN + body)
    return fail(err, ARENA_ECORRUPT,
                "damaged: %zu bytes, but the header announces %llu",
                len, (unsigned long long)(WIRE_BUNDLE_FRAME_LEN + body));
  return 0;
}

/* The length check, once the header is known good: the file must hold
 * exactly the header, the announced body and the checksum. */
static int check_length(const uint8_t *bytes, size_t len, char *err)
{
  if (len < WIRE_BUNDLE_HEADER_LEN)
    return fail(err, ARENA_ECORRUPT,
                "truncated: %zu bytes, expected at least %u", len,
                WIRE_BUNDLE_FRAME_LEN);
  uint64_t body = get_be(bytes + 12, 8);
  if (body > SIZE_MAX - WIRE_BUNDLE_FRAME_LEN ||
      len < WIRE_BUNDLE_FRAME_LEN + body) {
    unsigned long long want =
        body > UINT64_MAX - WIRE_BUNDLE_FRAME_LEN
            ? UINT64_MAX
            : (unsigned long long)(body + WIRE_BUNDLE_FRAME_LEN);
    return fail(err, ARENA_ECORRUPT, "truncated: %zu bytes, expected %llu",
                len, want);
  }
  return 0; /* longer than announced: wire_bundle_check_prefix refused it */
}

static int check_sum(const uint8_t *bytes, size_t len, char *err)
{
  uint8_t sum[PLANNER_DIGEST_LEN];
  planner_sha256(bytes, len - WIRE_BUNDLE_SUM_LEN, sum);
  if (memcmp(sum, bytes + len - WIRE_BUNDLE_SUM_LEN, sizeof sum) != 0)
    return fail(err, ARENA_ECORRUPT, "damaged: checksum mismatch");
  return 0;
}

int wire_bundle_check_entry(const Arenad__V1__BundleEntry *e, size_t index,
                           char err[ARENA_ERR_LEN])
{
  if (!e || !e->request || e->request->n_tensor_ids == 0)
    return fail(err, ARENA_ECORRUPT, "entry %zu: no graph in its request",
                index);
  if (!e->plan)
    return fail(err, ARENA_ECORRUPT, "entry %zu: no plan", index);
  if (e->plan->n_offsets != e->request->n_tensor_ids)
    return fail(err, ARENA_ECORRUPT,
                "entry %zu: %zu offsets for %zu tensors", index,
                e->plan->n_offsets, e->request->n_tensor_ids);
  return 0;
}

/* Unpacks the checked body and checks what it says. */
static int read_body(const uint8_t *body, size_t len, size_t mem_limit,
                     Arenad__V1__Bundle **out, char *err)
{
  Arenad__V1__Bundle *b;
  int rc = wire_unpack_bundle(body, len, mem_limit, &b);
  if (rc == ARENA_ETOOBIG)
    return fail(err, rc, "decoding the bundle needs more than %zu bytes",
                mem_limit ? mem_limit : (size_t)WIRE_DEFAULT_MEM_LIMIT);
  if (rc)
    return fail(err, ARENA_ECORRUPT, "damaged: the body is not a bundle");
  if (b->format_version != WIRE_BUNDLE_VERSION) {
    rc = fail(err, ARENA_ECORRUPT,
              "damaged: the body says format %u, the header %u",
              (unsigned)b->format_version, WIRE_BUNDLE_VERSION);
  }
  for (size_t i = 0; rc == 0 && i < b->n_entries; i++)
    rc = wire_bundle_check_entry(b->entries[i], i, err);
  if (rc) {
    wire_free_bundle(b);
    return rc;
  }
  *out = b;
  return 0;
}

int wire_bundle_read(const uint8_t *bytes, size_t len,
                    const struct wire_bundle_limits *l,
                    Arenad__V1__Bundle **out, char err[ARENA_ERR_LEN])
{
  *out = NULL;
  int rc = wire_bundle_check_prefix(bytes, len, err);
  if (rc == 0)
    rc = check_length(bytes, len, err);
  if (rc == 0)
    rc = check_sum(bytes, len, err);
  if (rc)
    return rc;
  return read_body(bytes + WIRE_BUNDLE_HEADER_LEN, len - WIRE_BUNDLE_FRAME_LEN,
                   l ? l->mem_limit : 0, out, err);
}

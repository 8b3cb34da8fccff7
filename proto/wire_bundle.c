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

/* one when n is 1, else many: "1 byte", "2 bytes". */
static const char *noun(unsigned long long n, const char *one,
                        const char *many)
{
  return n == 1 ? one : many;
}

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
                "truncated: %zu %s, expected at least %u", len,
                noun(len, "byte", "bytes"),
                WIRE_BUNDLE_FRAME_LEN);
  uint64_t body = get_be(bytes + 12, 8);
  if (body > SIZE_MAX - WIRE_BUNDLE_FRAME_LEN ||
      len < WIRE_BUNDLE_FRAME_LEN + body) {
    unsigned long long want =
        body > UINT64_MAX - WIRE_BUNDLE_FRAME_LEN
            ? UINT64_MAX
            : (unsigned long long)(body + WIRE_BUNDLE_FRAME_LEN);
    return fail(err, ARENA_ECORRUPT, "truncated: %zu %s, expected %llu",
                len, noun(len, "byte", "bytes"), want);
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
  if (e->placement.len > WIRE_MAX_PLACEMENT)
    return fail(err, ARENA_ECORRUPT,
                "entry %zu: a placement record of %zu bytes, over %u", index,
                e->placement.len, WIRE_MAX_PLACEMENT);
  if (e->plan->n_offsets != e->request->n_tensor_ids)
    return fail(err, ARENA_ECORRUPT,
                "entry %zu: %zu %s for %zu %s", index, e->plan->n_offsets,
                noun(e->plan->n_offsets, "offset", "offsets"),
                e->request->n_tensor_ids,
                noun(e->request->n_tensor_ids, "tensor", "tensors"));
  return 0;
}

int wire_bundle_check_count(size_t n, const struct wire_bundle_limits *l,
                            char err[ARENA_ERR_LEN])
{
  size_t max = l && l->max_entries ? l->max_entries : WIRE_BUNDLE_MAX_ENTRIES;
  if (n <= max)
    return 0;
  return fail(err, ARENA_ETOOBIG,
              "the bundle holds %zu entries, more than the %zu one bundle "
              "may hold",
              n, max); /* n > max >= 1: never "1 entries" */
}

int wire_bundle_accept_entries(Arenad__V1__BundleEntry *const *e, size_t n,
                               const struct wire_bundle_limits *l,
                               char err[ARENA_ERR_LEN])
{
  uint64_t max_t = l && l->max_tensors ? l->max_tensors
                                       : WIRE_BUNDLE_MAX_TENSORS;
  uint64_t tensors = 0;
  int rc = wire_bundle_check_count(n, l, err);
  if (rc)
    return rc;
  for (size_t i = 0; i < n; i++) {
    if ((rc = wire_bundle_check_entry(e[i], i, err)) != 0)
      return rc;
    tensors += e[i]->request->n_tensor_ids;
    if (tensors > max_t)
      return fail(err, ARENA_ETOOBIG,
                  "the bundle holds more than the %llu %s one bundle "
                  "may hold (entry %zu reaches %llu)",
                  (unsigned long long)max_t,
                  noun(max_t, "tensor", "tensors"), i,
                  (unsigned long long)tensors);
    if (wire_strip_unknown(&e[i]->base) != 0)
      return fail(err, ARENA_ECORRUPT,
                  "entry %zu: damaged: a field numbered 0", i);
  }
  return 0;
}

/* Reads a varint at *at of p (len bytes). Returns 0, or -1 past the end
 * or beyond 10 bytes. */
static int scan_varint(const uint8_t *p, size_t len, size_t *at, uint64_t *v)
{
  *v = 0;
  for (unsigned shift = 0; shift < 70; shift += 7) {
    if (*at >= len)
      return -1;
    uint8_t b = p[(*at)++];
    *v |= (uint64_t)(b & 0x7f) << (shift < 64 ? shift : 63);
    if (!(b & 0x80))
      return 0;
  }
  return -1;
}

/* What walk() found. */
struct walk {
  uint64_t id;    /* last value of the varint field id_field */
  size_t count;   /* length-delimited fields count_field */
  size_t inner;   /* with inner_field: the length-delimited fields
                     inner_field inside all of those together */
};

/* Walks the top-level fields of a message (len bytes at p) without
 * unpacking it; with inner_field, also the top-level fields of every
 * field count_field, as a message. Returns 0, or -1 when the bytes do
 * not parse that far. */
static int walk(const uint8_t *p, size_t len, uint32_t id_field,
                uint32_t count_field, uint32_t inner_field, struct walk *w)
{
  size_t at = 0;
  memset(w, 0, sizeof *w);
  while (at < len) {
    uint64_t tag, v;
    struct walk sub;
    if (scan_varint(p, len, &at, &tag))
      return -1;
    switch (tag & 7) {
    case 0:
      if (scan_varint(p, len, &at, &v))
        return -1;
      if (tag >> 3 == id_field)
        w->id = v;
      break;
    case 1:
      if (len - at < 8)
        return -1;
      at += 8;
      break;
    case 2:
      if (scan_varint(p, len, &at, &v) || v > len - at)
        return -1;
      if (tag >> 3 == count_field) {
        w->count++;
        if (inner_field &&
            walk(p + at, (size_t)v, 0, inner_field, 0, &sub) != 0)
          return -1;
        w->inner += inner_field ? sub.count : 0;
      }
      at += (size_t)v;
      break;
    case 5:
      if (len - at < 4)
        return -1;
      at += 4;
      break;
    default:
      return -1;
    }
  }
  return 0;
}

/* Counts the entries (field 4) of a Bundle body without unpacking it.
 * Returns the count, or SIZE_MAX when the body does not parse that far
 * (protobuf-c then says why). */
static size_t count_entries(const uint8_t *p, size_t len)
{
  struct walk w;
  return walk(p, len, 0, 4, 0, &w) ? SIZE_MAX : w.count;
}

int wire_bundle_scan_preload(const uint8_t *body, size_t len,
                             uint64_t *request_id, size_t *n_entries)
{
  struct walk w;
  *request_id = 0;
  *n_entries = 0;
  /* Request: request_id = 2, preload_plans = 17, whose entries are its
   * field 1. protobuf merges a message field that comes more than once,
   * so the entries of every occurrence count. */
  if (walk(body, len, 2, 17, 1, &w) != 0 || w.count == 0)
    return 0;
  *request_id = w.id;
  *n_entries = w.inner;
  return 1;
}

/* Unpacks the checked body and checks what it says. */
static int read_body(const uint8_t *body, size_t len,
                     const struct wire_bundle_limits *l,
                     Arenad__V1__Bundle **out, char *err)
{
  size_t mem_limit = l ? l->mem_limit : 0;
  size_t counted = count_entries(body, len);
  int rc = counted == SIZE_MAX ? 0 : wire_bundle_check_count(counted, l, err);
  if (rc)
    return rc;
  Arenad__V1__Bundle *b;
  rc = wire_unpack_bundle(body, len, mem_limit, &b);
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
  if (rc == 0)
    rc = wire_bundle_accept_entries(b->entries, b->n_entries, l, err);
  if (rc == 0 && wire_strip_unknown(&b->base) != 0)
    rc = fail(err, ARENA_ECORRUPT, "damaged: a field numbered 0");
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
                   l, out, err);
}

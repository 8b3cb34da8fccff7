/*
 * check_client_bundle.c - the "bundle" case of the client suite: the plan
 * bundle file format of proto/wire_bundle.c (docs/bundles.md).
 *
 * A bundle written and read back holds the same entries; every damage is
 * refused with its own message: each byte flipped anywhere in a small
 * bundle, a truncation at every length, a wrong magic, a newer or a zero
 * version, a body length that disagrees with the file, a body that is no
 * Bundle or names another version, an entry whose plan has another
 * number of offsets than its graph has tensors, and a body that needs
 * more memory than allowed.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_client.h"
#include "wire_bundle.h"
#include "digest.h"

#define PRODUCER "arenactl test"
#define CREATED 1700000000123LL

/* A bundle of n test entries; *len its bytes; owned (free()). */
static uint8_t *make_bundle(size_t n, size_t *len)
{
  struct ct_bundle b;
  uint8_t *out;
  ct_bundle_init(&b, n);
  ck_assert_int_eq(wire_bundle_write(b.ptrs, n, PRODUCER, CREATED, 0, &out,
                                    len),
                   0);
  ct_bundle_cleanup(&b);
  return out;
}

/* Frames body (len bytes) as a bundle of the given header version, with
 * a correct checksum; *out_len its bytes; owned (free()). */
static uint8_t *frame_body(const uint8_t *body, size_t len, uint32_t version,
                           size_t *out_len)
{
  uint8_t *f = malloc(len + WIRE_BUNDLE_FRAME_LEN);
  ck_assert_ptr_nonnull(f);
  memcpy(f, WIRE_BUNDLE_MAGIC, 8);
  for (int i = 0; i < 4; i++)
    f[8 + i] = (uint8_t)(version >> (24 - 8 * i));
  for (int i = 0; i < 8; i++)
    f[12 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
  if (len)
    memcpy(f + WIRE_BUNDLE_HEADER_LEN, body, len);
  planner_sha256(f, WIRE_BUNDLE_HEADER_LEN + len, f + WIRE_BUNDLE_HEADER_LEN + len);
  *out_len = len + WIRE_BUNDLE_FRAME_LEN;
  return f;
}

/* Reads bytes, expecting code and a message that contains want. */
static void expect_refused(const uint8_t *bytes, size_t len, int code,
                           const char *want, const char *what)
{
  Arenad__V1__Bundle *b = (Arenad__V1__Bundle *)1;
  char err[ARENA_ERR_LEN] = "";
  int rc = wire_bundle_read(bytes, len, NULL, &b, err);
  ck_assert_msg(rc == code, "%s: %s, not %s (%s)", what, arena_err_name(rc),
                arena_err_name(code), err);
  ck_assert_ptr_null(b);
  ck_assert_msg(strstr(err, want) != NULL, "%s: '%s' not in '%s'", what,
                want, err);
}

/* Sets the body length field of bundle f. */
static void set_body_len(uint8_t *f, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    f[12 + i] = (uint8_t)(v >> (56 - 8 * i));
}

/* Packs m into an owned buffer. */
static uint8_t *pack(const ProtobufCMessage *m, size_t *len)
{
  *len = protobuf_c_message_get_packed_size(m);
  uint8_t *buf = malloc(*len ? *len : 1);
  ck_assert_ptr_nonnull(buf);
  protobuf_c_message_pack(m, buf);
  return buf;
}

START_TEST(round_trip)
{
  for (size_t n = 0; n <= 3; n++) {
    struct ct_bundle want;
    size_t len;
    uint8_t *bytes = make_bundle(n, &len);
    ck_assert_int_eq(memcmp(bytes, "ARENABDL\0\0\0\1", 12), 0);
    Arenad__V1__Bundle *got = NULL;
    char err[ARENA_ERR_LEN] = "";
    ck_assert_msg(wire_bundle_read(bytes, len, NULL, &got, err) == 0, "%s",
                  err);
    ck_assert_uint_eq(got->format_version, 1);
    ck_assert_str_eq(got->producer, PRODUCER);
    ck_assert_int_eq(got->created_unix_ms, CREATED);
    ck_assert_uint_eq(got->n_entries, n);
    ct_bundle_init(&want, n);
    for (size_t k = 0; k < n; k++) {
      size_t la, lb;
      uint8_t *a = pack(&want.e[k].base, &la);
      uint8_t *b = pack(&got->entries[k]->base, &lb);
      ck_assert_uint_eq(la, lb);
      ck_assert_int_eq(memcmp(a, b, la), 0);
      ck_assert_uint_eq(got->entries[k]->plan->effort, 10 * k);
      free(a);
      free(b);
    }
    ct_bundle_cleanup(&want);
    wire_free_bundle(got);
    free(bytes);
  }
}
END_TEST

/* The message a flipped byte at position i of a bundle gets: each part
 * of the file has its own. */
static const char *flip_message(size_t i)
{
  if (i < 8)
    return "not an arenad plan bundle";
  if (i < 12)
    return "bundle format";
  if (i < 20)
    return "bytes";
  return "damaged: checksum mismatch";
}

START_TEST(every_flipped_byte_refused)
{
  size_t len;
  uint8_t *good = make_bundle(1, &len);
  uint8_t *bad = malloc(len);
  ck_assert_ptr_nonnull(bad);
  static const uint8_t masks[] = {0x01, 0x80, 0xff};
  for (size_t m = 0; m < sizeof masks; m++)
    for (size_t i = 0; i < len; i++) {
      char what[64];
      memcpy(bad, good, len);
      bad[i] ^= masks[m];
      snprintf(what, sizeof what, "byte %zu ^ 0x%02x", i, masks[m]);
      Arenad__V1__Bundle *b = NULL;
      char err[ARENA_ERR_LEN] = "";
      int rc = wire_bundle_read(bad, len, NULL, &b, err);
      ck_assert_msg(rc == ARENA_ECORRUPT || rc == ARENA_EVERSION, "%s: %s",
                    what, arena_err_name(rc));
      ck_assert_ptr_null(b);
      ck_assert_msg(strstr(err, flip_message(i)),
                    "%s: %s", what, err);
    }
  free(bad);
  free(good);
}
END_TEST

START_TEST(every_truncation_refused)
{
  size_t len;
  uint8_t *good = make_bundle(2, &len);
  for (size_t n = 0; n < len; n++) {
    char want[128], what[32];
    uint8_t *copy = malloc(n ? n : 1); /* exactly n bytes, for ASan */
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, good, n);
    if (n < WIRE_BUNDLE_HEADER_LEN)
      snprintf(want, sizeof want, "truncated: %zu %s, expected at least 52",
               n, n == 1 ? "byte" : "bytes");
    else
      snprintf(want, sizeof want, "truncated: %zu bytes, expected %zu", n,
               len);
    snprintf(what, sizeof what, "%zu of %zu bytes", n, len);
    expect_refused(copy, n, ARENA_ECORRUPT, want, what);
    free(copy);
  }
  free(good);
}
END_TEST

START_TEST(header_refusals)
{
  size_t len, flen;
  uint8_t *b = make_bundle(1, &len);
  const uint8_t *body = b + WIRE_BUNDLE_HEADER_LEN;
  size_t blen = len - WIRE_BUNDLE_FRAME_LEN;

  /* Not a bundle at all, however short. */
  expect_refused((const uint8_t *)"hello", 5, ARENA_ECORRUPT,
                 "not an arenad plan bundle", "text");
  b[7] = 'X';
  expect_refused(b, len, ARENA_ECORRUPT, "not an arenad plan bundle",
                 "magic");
  b[7] = 'L';

  /* A newer format and version 0, each with a correct checksum. */
  uint8_t *f = frame_body(body, blen, 2, &flen);
  expect_refused(f, flen, ARENA_EVERSION,
                 "bundle format 2 is newer than this arenad reads (1)",
                 "version 2");
  free(f);
  f = frame_body(body, blen, 0, &flen);
  expect_refused(f, flen, ARENA_ECORRUPT, "invalid bundle format version 0",
                 "version 0");
  free(f);

  /* A body length larger than the file, and smaller. */
  set_body_len(b, blen + 100);
  {
    char want[96];
    snprintf(want, sizeof want, "truncated: %zu bytes, expected %zu", len,
             len + 100);
    expect_refused(b, len, ARENA_ECORRUPT, want, "length + 100");
  }
  set_body_len(b, blen - 1);
  expect_refused(b, len, ARENA_ECORRUPT, "header announces", "length - 1");
  set_body_len(b, UINT64_MAX - 10); /* no file is that long */
  expect_refused(b, len, ARENA_ECORRUPT, "expected 18446744073709551615",
                 "length 2^64 - 11");
  free(b);
}
END_TEST

START_TEST(body_refusals)
{
  size_t flen, blen;
  /* Bytes that are no protobuf message, under a good checksum. */
  static const uint8_t junk[] = {0xff, 0xff, 0xff};
  uint8_t *f = frame_body(junk, sizeof junk, 1, &flen);
  expect_refused(f, flen, ARENA_ECORRUPT, "damaged: the body is not a bundle",
                 "junk body");
  free(f);

  /* A body that names another version than its header. */
  Arenad__V1__Bundle m = ARENAD__V1__BUNDLE__INIT;
  m.format_version = 2;
  uint8_t *body = pack(&m.base, &blen);
  f = frame_body(body, blen, 1, &flen);
  expect_refused(f, flen, ARENA_ECORRUPT, "the body says format 2",
                 "body version");
  free(f);
  free(body);

  /* Entries the daemon could not use, written without checks. */
  struct ct_bundle b;
  uint8_t *out;
  ct_bundle_init(&b, 3);
  b.reply[1].n_offsets--;
  ck_assert_int_eq(wire_bundle_write(b.ptrs, 3, "t", 1, 0, &out, &flen), 0);
  expect_refused(out, flen, ARENA_ECORRUPT, "entry 1: 4 offsets for 5 tensors",
                 "short plan");
  free(out);
  b.reply[1].n_offsets++;
  b.e[2].plan = NULL;
  ck_assert_int_eq(wire_bundle_write(b.ptrs, 3, "t", 1, 0, &out, &flen), 0);
  expect_refused(out, flen, ARENA_ECORRUPT, "entry 2: no plan", "no plan");
  free(out);
  b.e[2].plan = &b.reply[2];
  b.e[0].request = NULL;
  ck_assert_int_eq(wire_bundle_write(b.ptrs, 3, "t", 1, 0, &out, &flen), 0);
  expect_refused(out, flen, ARENA_ECORRUPT, "entry 0: no graph", "no graph");
  free(out);
  b.e[0].request = &b.req[0];

  /* Over the memory limit: refused, nothing leaked. */
  ck_assert_int_eq(wire_bundle_write(b.ptrs, 3, "t", 1, 0, &out, &flen), 0);
  struct wire_bundle_limits l = {256, 0, 0};
  Arenad__V1__Bundle *got = NULL;
  char err[ARENA_ERR_LEN] = "";
  ck_assert_int_eq(wire_bundle_read(out, flen, &l, &got, err), ARENA_ETOOBIG);
  ck_assert_ptr_null(got);
  ck_assert_ptr_nonnull(strstr(err, "more than 256 bytes"));
  free(out);

  /* The writer's own limit. */
  out = (uint8_t *)1;
  ck_assert_int_eq(wire_bundle_write(b.ptrs, 3, "t", 1, 100, &out, &flen),
                   ARENA_ETOOBIG);
  ck_assert_ptr_null(out);
  ck_assert_uint_eq(flen, 0);
  ct_bundle_cleanup(&b);
}
END_TEST

START_TEST(prefix_checks)
{
  size_t len;
  uint8_t *b = make_bundle(1, &len);
  char err[ARENA_ERR_LEN] = "";
  /* Every prefix of a good bundle can still be one. */
  for (size_t n = 0; n <= len; n++)
    ck_assert_msg(wire_bundle_check_prefix(b, n, err) == 0, "%zu: %s", n, err);
  ck_assert_int_eq(wire_bundle_check_prefix((const uint8_t *)"ARENAC", 6, err),
                   ARENA_ECORRUPT);
  uint8_t *longer = malloc(len + 1);
  ck_assert_ptr_nonnull(longer);
  memcpy(longer, b, len);
  longer[len] = 0;
  ck_assert_int_eq(wire_bundle_check_prefix(longer, len + 1, err),
                   ARENA_ECORRUPT);
  ck_assert_ptr_nonnull(strstr(err, "header announces"));
  expect_refused(longer, len + 1, ARENA_ECORRUPT, "header announces",
                 "one byte more");
  free(longer);
  free(b);
}
END_TEST

void client_add_bundle(TCase *tc)
{
  tcase_add_test(tc, round_trip);
  tcase_add_test(tc, every_flipped_byte_refused);
  tcase_add_test(tc, every_truncation_refused);
  tcase_add_test(tc, header_refusals);
  tcase_add_test(tc, body_refusals);
  tcase_add_test(tc, prefix_checks);
}

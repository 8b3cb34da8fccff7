/*
 * check_wire_bundle.c - what every reader of a plan bundle does the same
 * way (proto/wire_bundle.c; the format itself, every flipped byte and
 * truncation, is tested in check_client_bundle.c): the limits on the
 * entries and tensors of one bundle, the entry count read before the
 * body is unpacked, and unknown fields, stripped so that an entry packs
 * again into what any reader takes, or refused when numbered 0.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_wire.h"
#include "digest.h"
#include "wire.h"
#include "wire_bundle.h"
#include "wire_plan.h"

/* An entry for the small graph of check_wire_codec.c with a plan of one
 * offset per tensor. */
struct entry {
  Arenad__V1__Plan req;
  Arenad__V1__PlanOptions opts;
  Arenad__V1__PlanReply reply;
  uint64_t offsets[WT_SMALL_N];
  Arenad__V1__BundleEntry e;
};

static void entry_init(struct entry *x)
{
  wt_small_plan_msg(&x->req, &x->opts);
  arenad__v1__plan_reply__init(&x->reply);
  for (size_t i = 0; i < WT_SMALL_N; i++)
    x->offsets[i] = 64 * i;
  x->reply.offsets = x->offsets;
  x->reply.n_offsets = WT_SMALL_N;
  x->reply.arena_bytes = 64 * WT_SMALL_N;
  arenad__v1__bundle_entry__init(&x->e);
  x->e.request = &x->req;
  x->e.plan = &x->reply;
}

/* Packs x's entry into an owned buffer with `extra` (extra_len bytes)
 * appended: fields a writer added after the known ones. */
static uint8_t *entry_bytes(struct entry *x, const uint8_t *extra,
                            size_t extra_len, size_t *len)
{
  size_t n = protobuf_c_message_get_packed_size(&x->e.base);
  uint8_t *b = malloc(n + extra_len);
  ck_assert_ptr_nonnull(b);
  protobuf_c_message_pack(&x->e.base, b);
  if (extra_len)
    memcpy(b + n, extra, extra_len);
  *len = n + extra_len;
  return b;
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
  size_t k = 0;
  while (v >= 0x80) {
    p[k++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[k++] = (uint8_t)v;
  return k;
}

/* A whole bundle file around a body of format_version 1 and `copies`
 * copies of the entry bytes e (len bytes) as field 4, with a valid
 * header and checksum. Owned; *file_len is its length. */
static uint8_t *bundle_of(const uint8_t *e, size_t len, size_t copies,
                          size_t *file_len)
{
  size_t body_cap = 2 + copies * (len + 11);
  uint8_t *f = malloc(WIRE_BUNDLE_FRAME_LEN + body_cap);
  ck_assert_ptr_nonnull(f);
  uint8_t *body = f + WIRE_BUNDLE_HEADER_LEN;
  size_t at = 0;
  body[at++] = 0x08; /* format_version = 1 */
  body[at++] = 0x01;
  for (size_t i = 0; i < copies; i++) {
    body[at++] = 0x22; /* field 4, length-delimited */
    at += put_varint(body + at, len);
    memcpy(body + at, e, len);
    at += len;
  }
  memcpy(f, WIRE_BUNDLE_MAGIC, WIRE_BUNDLE_MAGIC_LEN);
  for (int i = 0; i < 4; i++)
    f[8 + i] = (uint8_t)(WIRE_BUNDLE_VERSION >> (8 * (3 - i)));
  for (int i = 0; i < 8; i++)
    f[12 + i] = (uint8_t)((uint64_t)at >> (8 * (7 - i)));
  planner_sha256(f, WIRE_BUNDLE_HEADER_LEN + at,
                 f + WIRE_BUNDLE_HEADER_LEN + at);
  *file_len = WIRE_BUNDLE_FRAME_LEN + at;
  return f;
}

/* protobuf-c keeps an entry's field numbered 0 (the two-byte tag 80 00)
 * and packs it as the one-byte tag 00, which it then refuses: a bundle
 * read by one path could not be sent on another. Every reader refuses
 * it instead, naming the entry. */
START_TEST(bundle_field_zero_refused)
{
  struct entry x;
  entry_init(&x);
  static const uint8_t zero[] = {0x80, 0x00, 0x01};
  size_t elen, flen;
  uint8_t *e = entry_bytes(&x, zero, sizeof zero, &elen);

  /* The premise: unpacked, the field is kept, and packed again it is
   * not readable. */
  Arenad__V1__BundleEntry *raw = arenad__v1__bundle_entry__unpack(NULL, elen,
                                                                  e);
  ck_assert_ptr_nonnull(raw);
  ck_assert_uint_eq(raw->base.n_unknown_fields, 1);
  ck_assert_uint_eq(raw->base.unknown_fields[0].tag, 0);
  size_t n = protobuf_c_message_get_packed_size(&raw->base);
  uint8_t *again = malloc(n);
  protobuf_c_message_pack(&raw->base, again);
  ck_assert_ptr_null(arenad__v1__bundle_entry__unpack(NULL, n, again));
  free(again);
  arenad__v1__bundle_entry__free_unpacked(raw, NULL);

  uint8_t *f = bundle_of(e, elen, 2, &flen);
  Arenad__V1__Bundle *b = (Arenad__V1__Bundle *)1;
  char err[ARENA_ERR_LEN] = "";
  ck_assert_int_eq(wire_bundle_read(f, flen, NULL, &b, err), ARENA_ECORRUPT);
  ck_assert_ptr_null(b);
  ck_assert_str_eq(err, "entry 0: damaged: a field numbered 0");

  /* The entries of a request (the daemon's Preload) the same way. */
  ck_assert_int_eq(wire_unpack_bundle(f + WIRE_BUNDLE_HEADER_LEN,
                                      flen - WIRE_BUNDLE_FRAME_LEN, 0, &b),
                   0);
  ck_assert_int_eq(wire_bundle_accept_entries(b->entries, b->n_entries, NULL,
                                              err),
                   ARENA_ECORRUPT);
  ck_assert_str_eq(err, "entry 0: damaged: a field numbered 0");
  wire_free_bundle(b);
  free(f);
  free(e);
  wire_plan_msg_cleanup(&x.req);
}
END_TEST

/* Fields of a newer writer (here 99, a varint, and 100, bytes, on the
 * entry) are read past as before, and stripped: the entry packs again
 * into a Preload request that unpacks to the same entry. */
START_TEST(bundle_unknown_fields_stripped)
{
  struct entry x;
  entry_init(&x);
  static const uint8_t newer[] = {0x98, 0x06, 0x05,             /* 99: 5 */
                                  0xa2, 0x06, 0x02, 'h', 'i'}; /* 100 */
  size_t elen, flen;
  uint8_t *e = entry_bytes(&x, newer, sizeof newer, &elen);
  uint8_t *f = bundle_of(e, elen, 1, &flen);
  Arenad__V1__Bundle *b = NULL;
  char err[ARENA_ERR_LEN] = "";
  ck_assert_msg(wire_bundle_read(f, flen, NULL, &b, err) == 0, "%s", err);
  ck_assert_uint_eq(b->n_entries, 1);
  ck_assert_uint_eq(b->entries[0]->base.n_unknown_fields, 0);
  Arenad__V1__Preload pl = ARENAD__V1__PRELOAD__INIT;
  pl.entries = b->entries;
  pl.n_entries = b->n_entries;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.body_case = ARENAD__V1__REQUEST__BODY_PRELOAD_PLANS;
  req.preload_plans = &pl;
  uint8_t *frame;
  size_t len;
  ck_assert_int_eq(wire_pack(&req.base, 0, &frame, &len), 0);
  Arenad__V1__Request *back = NULL;
  ck_assert_int_eq(wire_unpack_request(frame + WIRE_HEADER_LEN,
                                       len - WIRE_HEADER_LEN, 0, &back),
                   0);
  ck_assert_uint_eq(back->preload_plans->n_entries, 1);
  const Arenad__V1__BundleEntry *be = back->preload_plans->entries[0];
  ck_assert_uint_eq(be->plan->n_offsets, WT_SMALL_N);
  ck_assert_mem_eq(be->plan->offsets, x.offsets, sizeof x.offsets);
  ck_assert_uint_eq(be->request->n_tensor_ids, WT_SMALL_N);
  size_t bare = protobuf_c_message_get_packed_size(&x.e.base);
  ck_assert_uint_eq(protobuf_c_message_get_packed_size(&be->base), bare);
  wire_free_request(back);
  free(frame);
  wire_free_bundle(b);
  free(f);
  free(e);
  wire_plan_msg_cleanup(&x.req);
}
END_TEST

/* The entries are counted before the body is unpacked: a bundle of more
 * than the limit is refused as that, even when unpacking it would have
 * needed more memory than allowed. */
START_TEST(bundle_too_many_entries)
{
  struct entry x;
  entry_init(&x);
  size_t elen, flen;
  uint8_t *e = entry_bytes(&x, NULL, 0, &elen);
  uint8_t *f = bundle_of(e, elen, 5, &flen);
  Arenad__V1__Bundle *b = NULL;
  char err[ARENA_ERR_LEN] = "";
  struct wire_bundle_limits l = {4096, 4, 0};
  ck_assert_int_eq(wire_bundle_read(f, flen, &l, &b, err), ARENA_ETOOBIG);
  ck_assert_str_eq(err, "the bundle holds 5 entries, more than the 4 one "
                        "bundle may hold");
  l.mem_limit = 0;
  l.max_entries = 5;
  ck_assert_msg(wire_bundle_read(f, flen, &l, &b, err) == 0, "%s", err);
  ck_assert_uint_eq(b->n_entries, 5);
  /* The same limit on entries that came in a request. */
  l.max_entries = 4;
  ck_assert_int_eq(wire_bundle_accept_entries(b->entries, 5, &l, err),
                   ARENA_ETOOBIG);
  ck_assert_ptr_nonnull(strstr(err, "holds 5 entries"));
  wire_free_bundle(b);
  free(f);

  /* The default is WIRE_BUNDLE_MAX_ENTRIES. */
  f = bundle_of(e, elen, WIRE_BUNDLE_MAX_ENTRIES + 1, &flen);
  ck_assert_int_eq(wire_bundle_read(f, flen, NULL, &b, err), ARENA_ETOOBIG);
  ck_assert_ptr_nonnull(strstr(err, "65537 entries, more than the 65536"));
  free(f);
  free(e);
  wire_plan_msg_cleanup(&x.req);
}
END_TEST

START_TEST(bundle_too_many_tensors)
{
  struct entry x;
  entry_init(&x);
  size_t elen, flen;
  uint8_t *e = entry_bytes(&x, NULL, 0, &elen);
  uint8_t *f = bundle_of(e, elen, 3, &flen);
  Arenad__V1__Bundle *b = NULL;
  char err[ARENA_ERR_LEN] = "";
  struct wire_bundle_limits l = {0, 0, 3 * WT_SMALL_N - 1};
  ck_assert_int_eq(wire_bundle_read(f, flen, &l, &b, err), ARENA_ETOOBIG);
  ck_assert_str_eq(err, "the bundle holds more than the 11 tensors one "
                        "bundle may hold (entry 2 reaches 12)");
  l.max_tensors = 3 * WT_SMALL_N;
  ck_assert_msg(wire_bundle_read(f, flen, &l, &b, err) == 0, "%s", err);
  wire_free_bundle(b);
  free(f);
  free(e);
  wire_plan_msg_cleanup(&x.req);
}
END_TEST

/* Messages that count say "1 byte", "1 offset", "1 entry". */
START_TEST(bundle_messages_count_in_english)
{
  char err[ARENA_ERR_LEN] = "";
  Arenad__V1__Bundle *b = NULL;
  ck_assert_int_eq(wire_bundle_read((const uint8_t *)"A", 1, NULL, &b, err),
                   ARENA_ECORRUPT);
  ck_assert_str_eq(err, "truncated: 1 byte, expected at least 52");
  ck_assert_int_eq(wire_bundle_read((const uint8_t *)"AR", 2, NULL, &b, err),
                   ARENA_ECORRUPT);
  ck_assert_str_eq(err, "truncated: 2 bytes, expected at least 52");
  struct entry x;
  entry_init(&x);
  x.reply.n_offsets = 1;
  ck_assert_int_eq(wire_bundle_check_entry(&x.e, 0, err), ARENA_ECORRUPT);
  ck_assert_str_eq(err, "entry 0: 1 offset for 4 tensors");
  uint64_t one = 64, *align = x.req.tensor_align;
  size_t n_align = x.req.n_tensor_align;
  x.req.tensor_align = &one;
  x.req.n_tensor_align = 1;
  struct wire_limits l;
  wire_limits_init(&l);
  struct wire_graph g;
  ck_assert_int_eq(wire_graph_from_plan(&x.req, &l, &g, err), ARENA_EINVAL);
  ck_assert_str_eq(err, "tensor_align has 1 entry for 4");
  x.req.tensor_align = align;
  x.req.n_tensor_align = n_align;
  wire_plan_msg_cleanup(&x.req);
}
END_TEST

void wire_add_bundle(TCase *tc)
{
  tcase_add_test(tc, bundle_field_zero_refused);
  tcase_add_test(tc, bundle_unknown_fields_stripped);
  tcase_add_test(tc, bundle_too_many_entries);
  tcase_add_test(tc, bundle_too_many_tensors);
  tcase_add_test(tc, bundle_messages_count_in_english);
}

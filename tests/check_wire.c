/*
 * check_wire.c - tests for proto/wire.{c,h}, proto/wire_plan.{c,h} and
 * the shared rules of proto/wire_bundle.{c,h}.
 *
 * The frame assembler is fed the same byte stream (several frames back to
 * back) cut at every possible boundary: in two pieces at each offset, and
 * one byte at a time, and the frames that come out must be exactly the
 * frames that went in. Header errors (zero length, over the maximum) must
 * show up as soon as the four header bytes are in and stay reported. The
 * codec tests pack and unpack real messages, push the counting allocator
 * over its limit, feed it garbage, and walk wire_graph_from_plan through
 * each validation rule.
 *
 * This file holds the suite and its "frames" case. The "codec" case is in
 * check_wire_codec.c (packing, Plan messages, limits, garbage) and
 * check_wire_kinds.c (every other request and reply kind), the
 * "validation" case in check_wire_validation.c, the "bundle" case (what
 * every reader of a plan bundle does alike: limits, unknown fields) in
 * check_wire_bundle.c.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "wire.h"
#include "check_wire.h"

/* ---- helpers ------------------------------------------------------------ */

/* A byte stream of N_FRAMES frames with bodies of different lengths
 * (1 byte, 3 bytes, 300 bytes, 2 bytes), each body filled with a pattern
 * that depends on the frame so that a shifted frame cannot pass. */
#define N_FRAMES 4
static const size_t frame_len[N_FRAMES] = {1, 3, 300, 2};

static uint8_t body_byte(size_t frame, size_t i)
{
  return (uint8_t)(frame * 37u + i * 11u + 1u);
}

static uint8_t *make_stream(size_t *len)
{
  size_t total = 0;
  for (size_t f = 0; f < N_FRAMES; f++)
    total += WIRE_HEADER_LEN + frame_len[f];
  uint8_t *s = malloc(total);
  ck_assert_ptr_nonnull(s);
  size_t k = 0;
  for (size_t f = 0; f < N_FRAMES; f++) {
    uint32_t n = (uint32_t)frame_len[f];
    s[k++] = (uint8_t)(n >> 24);
    s[k++] = (uint8_t)(n >> 16);
    s[k++] = (uint8_t)(n >> 8);
    s[k++] = (uint8_t)n;
    for (size_t i = 0; i < frame_len[f]; i++)
      s[k++] = body_byte(f, i);
  }
  *len = total;
  return s;
}

/* Takes every complete frame out of r, checking each against the expected
 * next frame; *next counts frames seen so far. */
static void drain(struct wire_reader *r, size_t *next)
{
  const uint8_t *body;
  size_t len;
  int rc;
  while ((rc = wire_reader_next(r, &body, &len)) == 1) {
    ck_assert_uint_lt(*next, N_FRAMES);
    ck_assert_uint_eq(len, frame_len[*next]);
    for (size_t i = 0; i < len; i++)
      ck_assert_uint_eq(body[i], body_byte(*next, i));
    (*next)++;
  }
  ck_assert_int_eq(rc, 0);
  ck_assert_ptr_null(body);
  ck_assert_uint_eq(len, 0);
}

static void put_be32(uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

/* ---- frame assembler ---------------------------------------------------- */

START_TEST(frames_all_at_once)
{
  size_t len, next = 0;
  uint8_t *s = make_stream(&len);
  struct wire_reader r;
  wire_reader_init(&r, 0);
  ck_assert_uint_eq(r.max_frame, WIRE_DEFAULT_MAX_FRAME);
  ck_assert_int_eq(wire_reader_feed(&r, s, len), 0);
  ck_assert_uint_eq(wire_reader_pending(&r), len);
  drain(&r, &next);
  ck_assert_uint_eq(next, N_FRAMES);
  ck_assert_uint_eq(wire_reader_pending(&r), 0);
  wire_reader_cleanup(&r);
  free(s);
}
END_TEST

START_TEST(frames_every_two_way_split)
{
  size_t len;
  uint8_t *s = make_stream(&len);
  for (size_t cut = 0; cut <= len; cut++) {
    size_t next = 0;
    struct wire_reader r;
    wire_reader_init(&r, 1024);
    ck_assert_int_eq(wire_reader_feed(&r, s, cut), 0);
    drain(&r, &next);
    ck_assert_int_eq(wire_reader_feed(&r, s + cut, len - cut), 0);
    drain(&r, &next);
    ck_assert_msg(next == N_FRAMES, "cut at %zu gave %zu frames", cut, next);
    ck_assert_uint_eq(wire_reader_pending(&r), 0);
    wire_reader_cleanup(&r);
  }
  free(s);
}
END_TEST

START_TEST(frames_byte_by_byte)
{
  size_t len, next = 0;
  uint8_t *s = make_stream(&len);
  struct wire_reader r;
  wire_reader_init(&r, 1024);
  for (size_t i = 0; i < len; i++) {
    ck_assert_int_eq(wire_reader_feed(&r, s + i, 1), 0);
    drain(&r, &next);
  }
  ck_assert_uint_eq(next, N_FRAMES);
  ck_assert_uint_eq(wire_reader_pending(&r), 0);
  wire_reader_cleanup(&r);
  free(s);
}
END_TEST

/* Three-way cuts with the frames read only at the end, so that pieces of
 * several frames sit in the buffer together. */
START_TEST(frames_three_way_split_merged)
{
  size_t len;
  uint8_t *s = make_stream(&len);
  for (size_t a = 0; a <= len; a += 3)
    for (size_t b = a; b <= len; b += 5) {
      size_t next = 0;
      struct wire_reader r;
      wire_reader_init(&r, 1024);
      ck_assert_int_eq(wire_reader_feed(&r, s, a), 0);
      ck_assert_int_eq(wire_reader_feed(&r, s + a, b - a), 0);
      drain(&r, &next);
      ck_assert_int_eq(wire_reader_feed(&r, s + b, len - b), 0);
      drain(&r, &next);
      ck_assert_uint_eq(next, N_FRAMES);
      wire_reader_cleanup(&r);
    }
  free(s);
}
END_TEST

START_TEST(frame_partial_header_waits)
{
  struct wire_reader r;
  const uint8_t *body = (const uint8_t *)"x";
  size_t len = 9;
  uint8_t hdr[4];
  put_be32(hdr, 5);
  wire_reader_init(&r, 16);
  ck_assert_int_eq(wire_reader_next(&r, &body, &len), 0);
  ck_assert_int_eq(wire_reader_feed(&r, hdr, 3), 0);
  ck_assert_int_eq(wire_reader_next(&r, &body, &len), 0);
  ck_assert_ptr_null(body);
  ck_assert_uint_eq(len, 0);
  ck_assert_int_eq(wire_reader_feed(&r, hdr + 3, 1), 0);
  ck_assert_int_eq(wire_reader_feed(&r, "abcd", 4), 0);
  ck_assert_int_eq(wire_reader_next(&r, &body, &len), 0);
  ck_assert_int_eq(wire_reader_feed(&r, "e", 1), 0);
  ck_assert_int_eq(wire_reader_next(&r, &body, &len), 1);
  ck_assert_uint_eq(len, 5);
  ck_assert_int_eq(memcmp(body, "abcde", 5), 0);
  ck_assert_int_eq(wire_reader_feed(&r, NULL, 0), 0);
  wire_reader_cleanup(&r);
}
END_TEST

START_TEST(frame_zero_length_is_sticky_eproto)
{
  struct wire_reader r;
  const uint8_t *body;
  size_t len;
  uint8_t bytes[4 + 2 + 4] = {0};
  put_be32(bytes, 2);
  bytes[4] = 'o';
  bytes[5] = 'k';
  /* bytes 6..9: a zero-length header */
  wire_reader_init(&r, 16);
  ck_assert_int_eq(wire_reader_feed(&r, bytes, sizeof bytes), 0);
  ck_assert_int_eq(wire_reader_next(&r, &body, &len), 1);
  ck_assert_uint_eq(len, 2);
  ck_assert_int_eq(wire_reader_next(&r, &body, &len), ARENA_EPROTO);
  ck_assert_ptr_null(body);
  /* Sticky: neither more bytes nor more calls clear the error. */
  ck_assert_int_eq(wire_reader_next(&r, &body, &len), ARENA_EPROTO);
  uint8_t good[5] = {0, 0, 0, 1, 'x'};
  ck_assert_int_eq(wire_reader_feed(&r, good, sizeof good), ARENA_EPROTO);
  ck_assert_int_eq(wire_reader_next(&r, &body, &len), ARENA_EPROTO);
  wire_reader_cleanup(&r);
}
END_TEST

START_TEST(frame_oversize_rejected_from_header)
{
  struct wire_reader r;
  const uint8_t *body;
  size_t len;
  uint8_t hdr[4];

  /* Exactly the maximum is fine and waits for the body. */
  wire_reader_init(&r, 100);
  put_be32(hdr, 100);
  ck_assert_int_eq(wire_reader_feed(&r, hdr, 4), 0);
  ck_assert_int_eq(wire_reader_next(&r, &body, &len), 0);
  wire_reader_cleanup(&r);

  /* One more is refused on the header alone, before any body byte, and
   * nothing is allocated for the announced body. */
  wire_reader_init(&r, 1u << 20);
  put_be32(hdr, (1u << 20) + 1);
  ck_assert_int_eq(wire_reader_feed(&r, hdr, 4), 0);
  ck_assert_int_eq(wire_reader_next(&r, &body, &len), ARENA_ETOOBIG);
  ck_assert_int_eq(wire_reader_next(&r, &body, &len), ARENA_ETOOBIG);
  ck_assert_int_eq(wire_reader_feed(&r, "x", 1), ARENA_ETOOBIG);
  ck_assert_uint_lt(r.cap, 1u << 16);
  wire_reader_cleanup(&r);

  /* The largest possible header with the default maximum. */
  wire_reader_init(&r, 0);
  put_be32(hdr, UINT32_MAX);
  ck_assert_int_eq(wire_reader_feed(&r, hdr, 4), 0);
  ck_assert_int_eq(wire_reader_next(&r, &body, &len), ARENA_ETOOBIG);
  wire_reader_cleanup(&r);
}
END_TEST

/* A second frame whose header is bad, behind a good one: the good one is
 * still delivered first. */
START_TEST(frame_error_after_good_frame)
{
  struct wire_reader r;
  const uint8_t *body;
  size_t len;
  uint8_t bytes[5 + 4];
  put_be32(bytes, 1);
  bytes[4] = 'a';
  put_be32(bytes + 5, 1000);
  wire_reader_init(&r, 64);
  for (size_t i = 0; i < sizeof bytes; i++)
    ck_assert_int_eq(wire_reader_feed(&r, bytes + i, 1), 0);
  ck_assert_int_eq(wire_reader_next(&r, &body, &len), 1);
  ck_assert_uint_eq(len, 1);
  ck_assert_uint_eq(body[0], 'a');
  ck_assert_int_eq(wire_reader_next(&r, &body, &len), ARENA_ETOOBIG);
  wire_reader_cleanup(&r);
}
END_TEST

Suite *wire_suite(void)
{
  Suite *s = suite_create("wire");
  TCase *tc = tcase_create("frames");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, frames_all_at_once);
  tcase_add_test(tc, frames_every_two_way_split);
  tcase_add_test(tc, frames_byte_by_byte);
  tcase_add_test(tc, frames_three_way_split_merged);
  tcase_add_test(tc, frame_partial_header_waits);
  tcase_add_test(tc, frame_zero_length_is_sticky_eproto);
  tcase_add_test(tc, frame_oversize_rejected_from_header);
  tcase_add_test(tc, frame_error_after_good_frame);
  suite_add_tcase(s, tc);

  tc = tcase_create("codec");
  tcase_set_timeout(tc, 60);
  wire_add_codec(tc);
  wire_add_kinds(tc);
  suite_add_tcase(s, tc);

  tc = tcase_create("validation");
  tcase_set_timeout(tc, 60);
  wire_add_validation(tc);
  suite_add_tcase(s, tc);

  tc = tcase_create("bundle");
  tcase_set_timeout(tc, 60);
  wire_add_bundle(tc);
  suite_add_tcase(s, tc);
  return s;
}

/*
 * check_wire.c - tests for proto/wire.{c,h} and proto/wire_plan.{c,h}.
 *
 * The frame assembler is fed the same byte stream (several frames back to
 * back) cut at every possible boundary: in two pieces at each offset, and
 * one byte at a time, and the frames that come out must be exactly the
 * frames that went in. Header errors (zero length, over the maximum) must
 * show up as soon as the four header bytes are in and stay reported. The
 * codec tests pack and unpack real messages, push the counting allocator
 * over its limit, feed it garbage, and walk wire_graph_from_plan through
 * each validation rule.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "testutil.h"
#include "wire.h"
#include "wire_plan.h"

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

/* A small valid graph: ids deliberately out of order. */
static const struct planner_tensor small_graph[] = {
    {7, 100, 0, 2, 0, PLANNER_NOT_PINNED},
    {3, 40, 1, 3, 16, PLANNER_NOT_PINNED},
    {5, 64, 2, 4, 0, 128},
    {1, 0, 0, 0, 0, PLANNER_NOT_PINNED},
};
#define SMALL_N (sizeof small_graph / sizeof small_graph[0])

static const uint8_t model_hash[] = {0xde, 0xad, 0xbe, 0xef};

/* Builds a Plan message for small_graph; free with wire_plan_msg_cleanup. */
static void small_plan_msg(Arenad__V1__Plan *m, Arenad__V1__PlanOptions *mo)
{
  struct planner_graph g = {small_graph, SMALL_N};
  struct planner_options o;
  planner_options_init(&o);
  ck_assert_int_eq(wire_plan_msg_init(m, mo, &g, &o, model_hash,
                                      sizeof model_hash, NULL, 0),
                   0);
}

/* Packs a Request carrying m, unpacks it again and returns it (owned). */
static Arenad__V1__Request *round_trip_plan(Arenad__V1__Plan *m)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = 42;
  req.body_case = ARENAD__V1__REQUEST__BODY_PLAN;
  req.plan = m;
  uint8_t *buf;
  size_t len;
  ck_assert_int_eq(wire_pack(&req.base, 0, &buf, &len), 0);
  Arenad__V1__Request *out = NULL;
  ck_assert_int_eq(wire_unpack_request(buf + WIRE_HEADER_LEN,
                                       len - WIRE_HEADER_LEN, 0, &out),
                   0);
  free(buf);
  ck_assert_ptr_nonnull(out);
  ck_assert_int_eq(out->body_case, ARENAD__V1__REQUEST__BODY_PLAN);
  return out;
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

/* ---- packing and unpacking ---------------------------------------------- */

START_TEST(pack_header_and_limits)
{
  Arenad__V1__Ping ping = ARENAD__V1__PING__INIT;
  uint8_t payload[200];
  memset(payload, 'p', sizeof payload);
  ping.payload.data = payload;
  ping.payload.len = sizeof payload;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = 1;
  req.request_id = 0x0102030405060708ull;
  req.body_case = ARENAD__V1__REQUEST__BODY_PING;
  req.ping = &ping;

  uint8_t *buf = (uint8_t *)1;
  size_t len = 1;
  ck_assert_int_eq(wire_pack(&req.base, 0, &buf, &len), 0);
  size_t body = protobuf_c_message_get_packed_size(&req.base);
  ck_assert_uint_eq(len, WIRE_HEADER_LEN + body);
  ck_assert_uint_eq(((size_t)buf[0] << 24 | (size_t)buf[1] << 16 |
                     (size_t)buf[2] << 8 | buf[3]),
                    body);

  /* The packed frame goes through a reader intact. */
  struct wire_reader r;
  const uint8_t *fb;
  size_t fl;
  wire_reader_init(&r, 0);
  ck_assert_int_eq(wire_reader_feed(&r, buf, len), 0);
  ck_assert_int_eq(wire_reader_next(&r, &fb, &fl), 1);
  Arenad__V1__Request *back = NULL;
  ck_assert_int_eq(wire_unpack_request(fb, fl, 0, &back), 0);
  ck_assert_uint_eq(back->protocol_version, 1);
  ck_assert_uint_eq(back->request_id, 0x0102030405060708ull);
  ck_assert_int_eq(back->body_case, ARENAD__V1__REQUEST__BODY_PING);
  ck_assert_uint_eq(back->ping->payload.len, sizeof payload);
  ck_assert_int_eq(memcmp(back->ping->payload.data, payload, sizeof payload),
                   0);
  wire_free_request(back);
  wire_reader_cleanup(&r);
  free(buf);

  /* A body over max_frame is refused and nothing is returned. */
  buf = (uint8_t *)1;
  ck_assert_int_eq(wire_pack(&req.base, body - 1, &buf, &len),
                   ARENA_ETOOBIG);
  ck_assert_ptr_null(buf);
  ck_assert_uint_eq(len, 0);
  ck_assert_int_eq(wire_pack(&req.base, body, &buf, &len), 0);
  free(buf);

  /* An all-default message would be an empty (illegal) frame. */
  Arenad__V1__Stats empty = ARENAD__V1__STATS__INIT;
  ck_assert_int_eq(wire_pack(&empty.base, 0, &buf, &len), ARENA_EINVAL);
  ck_assert_ptr_null(buf);
}
END_TEST

START_TEST(plan_request_round_trip)
{
  Arenad__V1__Plan m;
  Arenad__V1__PlanOptions mo;
  small_plan_msg(&m, &mo);
  mo.algorithm = ARENAD__V1__ALGORITHM__GREEDY_SIZE;
  mo.capacity = 4096;
  mo.budget_ms = 7;
  mo.alignment = 32;
  Arenad__V1__Dims d0 = ARENAD__V1__DIMS__INIT, d1 = ARENAD__V1__DIMS__INIT;
  int64_t dims0[] = {1, 224, 224, 3};
  d0.dims = dims0;
  d0.n_dims = 4;
  Arenad__V1__Dims *shape[] = {&d0, &d1};
  m.input_shape = shape;
  m.n_input_shape = 2;

  Arenad__V1__Request *back = round_trip_plan(&m);
  ck_assert_uint_eq(back->request_id, 42);
  struct wire_limits l;
  struct wire_graph g;
  char err[ARENA_ERR_LEN] = "";
  wire_limits_init(&l);
  ck_assert_uint_eq(l.max_tensors, WIRE_DEFAULT_MAX_TENSORS);
  ck_assert_int_eq(wire_graph_from_plan(back->plan, &l, &g, err), 0);
  ck_assert_uint_eq(g.n_tensors, SMALL_N);
  for (size_t i = 0; i < SMALL_N; i++) {
    ck_assert_uint_eq(g.tensors[i].id, small_graph[i].id);
    ck_assert_uint_eq(g.tensors[i].size, small_graph[i].size);
    ck_assert_int_eq(g.tensors[i].first, small_graph[i].first);
    ck_assert_int_eq(g.tensors[i].last, small_graph[i].last);
    ck_assert_uint_eq(g.tensors[i].align, small_graph[i].align);
    ck_assert_int_eq(g.tensors[i].pinned, small_graph[i].pinned);
  }
  ck_assert_int_eq(g.opts.algo, PLANNER_ALGO_GREEDY_SIZE);
  ck_assert_uint_eq(g.opts.alignment, 32);
  ck_assert_uint_eq(g.opts.capacity, 4096);
  ck_assert_uint_eq(g.opts.budget_ms, 7);
  ck_assert_uint_eq(g.model_hash_len, sizeof model_hash);
  ck_assert_int_eq(memcmp(g.model_hash, model_hash, sizeof model_hash), 0);
  ck_assert_uint_eq(g.shape.n_inputs, 2);
  ck_assert_uint_eq(g.shape.ranks[0], 4);
  ck_assert_uint_eq(g.shape.ranks[1], 0);
  ck_assert_int_eq(g.shape.dims[1], 224);
  ck_assert_int_eq(g.shape.dims[3], 3);

  /* The digest of what arrived equals the digest of what was sent. */
  uint8_t d_sent[PLANNER_DIGEST_LEN], d_got[PLANNER_DIGEST_LEN];
  struct planner_graph pg = {small_graph, SMALL_N};
  struct planner_graph gg = {g.tensors, g.n_tensors};
  ck_assert_int_eq(planner_graph_digest(&pg, d_sent), 0);
  ck_assert_int_eq(planner_graph_digest(&gg, d_got), 0);
  ck_assert_int_eq(memcmp(d_sent, d_got, sizeof d_sent), 0);

  wire_graph_cleanup(&g);
  wire_graph_cleanup(&g); /* cleanup twice is harmless */
  wire_free_request(back);
  wire_plan_msg_cleanup(&m);
}
END_TEST

/* Alignment 0 on the wire means the default; no align/pinned columns
 * means none. */
START_TEST(plan_request_defaults)
{
  static const struct planner_tensor plain[] = {
      {1, 8, 0, 1, 0, PLANNER_NOT_PINNED},
      {2, 8, 1, 2, 0, PLANNER_NOT_PINNED},
  };
  struct planner_graph pg = {plain, 2};
  struct planner_options o;
  planner_options_init(&o);
  Arenad__V1__Plan m;
  Arenad__V1__PlanOptions mo;
  ck_assert_int_eq(
      wire_plan_msg_init(&m, &mo, &pg, &o, model_hash, 1, NULL, 0), 0);
  ck_assert_uint_eq(m.n_tensor_align, 0);
  ck_assert_uint_eq(m.n_tensor_pinned, 0);
  mo.alignment = 0;
  Arenad__V1__Request *back = round_trip_plan(&m);
  struct wire_limits l;
  struct wire_graph g;
  wire_limits_init(&l);
  ck_assert_int_eq(wire_graph_from_plan(back->plan, &l, &g, NULL), 0);
  ck_assert_uint_eq(g.opts.alignment, PLANNER_DEFAULT_ALIGNMENT);
  ck_assert_int_eq(g.tensors[1].pinned, PLANNER_NOT_PINNED);
  ck_assert_uint_eq(g.tensors[1].align, 0);
  wire_graph_cleanup(&g);
  wire_free_request(back);

  /* No options message at all also means the defaults. */
  m.options = NULL;
  back = round_trip_plan(&m);
  ck_assert_ptr_null(back->plan->options);
  ck_assert_int_eq(wire_graph_from_plan(back->plan, &l, &g, NULL), 0);
  ck_assert_int_eq(g.opts.algo, PLANNER_ALGO_BEST);
  ck_assert_uint_eq(g.opts.alignment, PLANNER_DEFAULT_ALIGNMENT);
  wire_graph_cleanup(&g);
  wire_free_request(back);
  wire_plan_msg_cleanup(&m);
}
END_TEST

START_TEST(plan_reply_round_trip)
{
  struct planner_graph pg = {small_graph, SMALL_N};
  struct planner_options o;
  struct planner_plan p, q;
  char err[ARENA_ERR_LEN];
  planner_options_init(&o);
  planner_plan_init(&p);
  planner_plan_init(&q);
  ck_assert_int_eq(planner_run(&pg, &o, &p, err), 0);
  uint8_t gd[PLANNER_DIGEST_LEN], od[PLANNER_DIGEST_LEN];
  ck_assert_int_eq(planner_graph_digest(&pg, gd), 0);
  planner_options_digest(&o, od);

  Arenad__V1__PlanReply pr;
  wire_reply_from_plan(&pr, &p, gd, od);
  pr.cached = 1;
  pr.planning_us = 1234;
  Arenad__V1__Response resp = ARENAD__V1__RESPONSE__INIT;
  resp.request_id = 9;
  resp.body_case = ARENAD__V1__RESPONSE__BODY_PLAN;
  resp.plan = &pr;
  uint8_t *buf;
  size_t len;
  ck_assert_int_eq(wire_pack(&resp.base, 0, &buf, &len), 0);
  Arenad__V1__Response *back = NULL;
  ck_assert_int_eq(wire_unpack_response(buf + 4, len - 4, 0, &back), 0);
  free(buf);
  ck_assert_uint_eq(back->request_id, 9);
  ck_assert_int_eq(back->status, ARENAD__V1__STATUS__OK);
  ck_assert_int_eq(back->body_case, ARENAD__V1__RESPONSE__BODY_PLAN);
  ck_assert(back->plan->cached);
  ck_assert_uint_eq(back->plan->planning_us, 1234);
  ck_assert_uint_eq(back->plan->graph_digest.len, PLANNER_DIGEST_LEN);
  ck_assert_int_eq(memcmp(back->plan->graph_digest.data, gd, sizeof gd), 0);
  ck_assert_int_eq(memcmp(back->plan->options_digest.data, od, sizeof od),
                   0);
  ck_assert_int_eq(wire_plan_from_reply(back->plan, &q), 0);
  ck_assert_uint_eq(q.n_offsets, p.n_offsets);
  for (size_t i = 0; i < p.n_offsets; i++)
    ck_assert_uint_eq(q.offsets[i], p.offsets[i]);
  ck_assert_uint_eq(q.arena_bytes, p.arena_bytes);
  ck_assert_uint_eq(q.lower_bound_bytes, p.lower_bound_bytes);
  ck_assert_uint_eq(q.naive_bytes, p.naive_bytes);
  ck_assert_int_eq(q.algo, p.algo);
  ck_assert_int_eq(!!q.proven_optimal, !!p.proven_optimal);
  ck_assert_int_eq(planner_verify(&pg, &o, &q, err), 0);

  /* Out-of-range enums from a peer are a protocol error, not a crash. */
  back->plan->algorithm = (Arenad__V1__Algorithm)99;
  ck_assert_int_eq(wire_plan_from_reply(back->plan, &q), ARENA_EPROTO);
  ck_assert_ptr_null(q.offsets);
  back->plan->algorithm = ARENAD__V1__ALGORITHM__NAIVE;
  back->plan->fit = (Arenad__V1__Fit)-1;
  ck_assert_int_eq(wire_plan_from_reply(back->plan, &q), ARENA_EPROTO);

  wire_free_response(back);
  planner_plan_cleanup(&p);
  planner_plan_cleanup(&q);
}
END_TEST

START_TEST(unpack_memory_limit)
{
  enum { N = 20000 };
  static struct planner_tensor big[N];
  for (size_t i = 0; i < N; i++) {
    big[i].id = (uint32_t)i;
    big[i].size = 1;
    big[i].first = (int64_t)i;
    big[i].last = (int64_t)i;
    big[i].align = 0;
    big[i].pinned = PLANNER_NOT_PINNED;
  }
  struct planner_graph pg = {big, N};
  struct planner_options o;
  planner_options_init(&o);
  Arenad__V1__Plan m;
  Arenad__V1__PlanOptions mo;
  ck_assert_int_eq(
      wire_plan_msg_init(&m, &mo, &pg, &o, model_hash, 4, NULL, 0), 0);
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = 1;
  req.body_case = ARENAD__V1__REQUEST__BODY_PLAN;
  req.plan = &m;
  uint8_t *buf;
  size_t len;
  ck_assert_int_eq(wire_pack(&req.base, 0, &buf, &len), 0);
  /* The packed body is far smaller than the decoded columns: one-byte
   * varints become 4- and 8-byte integers. */
  size_t decoded = N * (4 + 8 + 8 + 8);
  ck_assert_uint_lt(len, decoded);

  Arenad__V1__Request *out = (Arenad__V1__Request *)1;
  ck_assert_int_eq(wire_unpack_request(buf + 4, len - 4, len, &out),
                   ARENA_ETOOBIG);
  ck_assert_ptr_null(out);
  ck_assert_int_eq(wire_unpack_request(buf + 4, len - 4, 4096, &out),
                   ARENA_ETOOBIG);
  ck_assert_int_eq(wire_unpack_request(buf + 4, len - 4, 2 * decoded, &out),
                   0);
  ck_assert_uint_eq(out->plan->n_tensor_ids, N);
  wire_free_request(out);
  free(buf);
  wire_plan_msg_cleanup(&m);
}
END_TEST

START_TEST(unpack_garbage)
{
  static const uint8_t bad[][8] = {
      {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, /* endless varint */
      {0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}, /* truncated varint */
      {0x52, 0x7f, 0x01, 0x02, 0, 0, 0, 0}, /* plan longer than the body */
      {0x0f, 0x01, 0, 0, 0, 0, 0, 0},       /* wire type 7 */
      {0x00, 0x01, 0, 0, 0, 0, 0, 0},       /* field number 0 */
  };
  static const size_t bad_len[] = {8, 8, 4, 2, 2};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    Arenad__V1__Request *q = (Arenad__V1__Request *)1;
    Arenad__V1__Response *s = (Arenad__V1__Response *)1;
    ck_assert_msg(wire_unpack_request(bad[i], bad_len[i], 0, &q) ==
                      ARENA_EPROTO,
                  "case %zu", i);
    ck_assert_ptr_null(q);
    ck_assert_msg(wire_unpack_response(bad[i], bad_len[i], 0, &s) ==
                      ARENA_EPROTO,
                  "case %zu", i);
    ck_assert_ptr_null(s);
  }

  /* Every proper prefix of a valid message with a sub-message fails
   * cleanly (some prefixes are themselves valid messages; none crash). */
  Arenad__V1__Plan m;
  Arenad__V1__PlanOptions mo;
  small_plan_msg(&m, &mo);
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = 1;
  req.request_id = 5;
  req.body_case = ARENAD__V1__REQUEST__BODY_PLAN;
  req.plan = &m;
  uint8_t *buf;
  size_t len;
  ck_assert_int_eq(wire_pack(&req.base, 0, &buf, &len), 0);
  size_t failures = 0;
  for (size_t cut = 1; cut < len - 4; cut++) {
    Arenad__V1__Request *q = NULL;
    int rc = wire_unpack_request(buf + 4, cut, 0, &q);
    ck_assert(rc == 0 || rc == ARENA_EPROTO);
    failures += rc != 0;
    wire_free_request(q);
  }
  ck_assert_uint_gt(failures, 0);
  free(buf);
  wire_plan_msg_cleanup(&m);

  /* Unknown fields are skipped: field 99, varint 1, before a ping. */
  static const uint8_t unknown[] = {0x98, 0x06, 0x01, 0x08, 0x01,
                                    0x7a, 0x00};
  Arenad__V1__Request *q = NULL;
  ck_assert_int_eq(wire_unpack_request(unknown, sizeof unknown, 0, &q), 0);
  ck_assert_uint_eq(q->protocol_version, 1);
  ck_assert_int_eq(q->body_case, ARENAD__V1__REQUEST__BODY_PING);
  wire_free_request(q);
  wire_free_request(NULL);
  wire_free_response(NULL);
}
END_TEST

/* Packs every request kind into one stream, reads them back through a
 * reader fed one byte at a time, and checks each field. */
START_TEST(every_request_kind_round_trip)
{
  uint8_t hash[3] = {7, 8, 9}, digest[32], key[5] = {1, 2, 3, 4, 5};
  memset(digest, 0xee, sizeof digest);
  int64_t dd[] = {2, 3};
  Arenad__V1__Dims dims = ARENAD__V1__DIMS__INIT;
  dims.dims = dd;
  dims.n_dims = 2;
  Arenad__V1__Dims *dp[] = {&dims};

  Arenad__V1__Lookup lk = ARENAD__V1__LOOKUP__INIT;
  lk.model_hash.data = hash;
  lk.model_hash.len = sizeof hash;
  lk.input_shape = dp;
  lk.n_input_shape = 1;
  lk.graph_digest.data = digest;
  lk.graph_digest.len = sizeof digest;
  Arenad__V1__List ls = ARENAD__V1__LIST__INIT;
  ls.order = ARENAD__V1__LIST_ORDER__MOST_USED;
  ls.offset = 10;
  ls.limit = 20;
  Arenad__V1__Stats st = ARENAD__V1__STATS__INIT;
  Arenad__V1__Evict ev = ARENAD__V1__EVICT__INIT;
  ev.target_case = ARENAD__V1__EVICT__TARGET_KEY;
  ev.key.data = key;
  ev.key.len = sizeof key;

  Arenad__V1__Request reqs[4];
  for (int i = 0; i < 4; i++) {
    arenad__v1__request__init(&reqs[i]);
    reqs[i].protocol_version = 1;
    reqs[i].request_id = 100u + (uint64_t)i;
  }
  reqs[0].body_case = ARENAD__V1__REQUEST__BODY_LOOKUP;
  reqs[0].lookup = &lk;
  reqs[1].body_case = ARENAD__V1__REQUEST__BODY_LIST;
  reqs[1].list = &ls;
  reqs[2].body_case = ARENAD__V1__REQUEST__BODY_STATS;
  reqs[2].stats = &st;
  reqs[3].body_case = ARENAD__V1__REQUEST__BODY_EVICT;
  reqs[3].evict = &ev;

  uint8_t *stream = NULL;
  size_t total = 0;
  for (int i = 0; i < 4; i++) {
    uint8_t *buf;
    size_t len;
    ck_assert_int_eq(wire_pack(&reqs[i].base, 0, &buf, &len), 0);
    stream = realloc(stream, total + len);
    ck_assert_ptr_nonnull(stream);
    memcpy(stream + total, buf, len);
    total += len;
    free(buf);
  }

  struct wire_reader r;
  wire_reader_init(&r, 0);
  Arenad__V1__Request *got[4] = {NULL};
  int n = 0;
  for (size_t i = 0; i < total; i++) {
    const uint8_t *body;
    size_t len;
    ck_assert_int_eq(wire_reader_feed(&r, stream + i, 1), 0);
    while (wire_reader_next(&r, &body, &len) == 1) {
      ck_assert_int_lt(n, 4);
      ck_assert_int_eq(wire_unpack_request(body, len, 0, &got[n]), 0);
      n++;
    }
  }
  ck_assert_int_eq(n, 4);
  for (int i = 0; i < 4; i++)
    ck_assert_uint_eq(got[i]->request_id, 100u + (uint64_t)i);
  ck_assert_int_eq(got[0]->body_case, ARENAD__V1__REQUEST__BODY_LOOKUP);
  ck_assert_uint_eq(got[0]->lookup->model_hash.len, 3);
  ck_assert_uint_eq(got[0]->lookup->model_hash.data[2], 9);
  ck_assert_uint_eq(got[0]->lookup->n_input_shape, 1);
  ck_assert_int_eq(got[0]->lookup->input_shape[0]->dims[1], 3);
  ck_assert_uint_eq(got[0]->lookup->graph_digest.len, 32);
  ck_assert_int_eq(got[1]->list->order, ARENAD__V1__LIST_ORDER__MOST_USED);
  ck_assert_uint_eq(got[1]->list->offset, 10);
  ck_assert_uint_eq(got[1]->list->limit, 20);
  ck_assert_uint_eq(got[1]->list->model_hash.len, 0);
  ck_assert_int_eq(got[2]->body_case, ARENAD__V1__REQUEST__BODY_STATS);
  ck_assert_ptr_nonnull(got[2]->stats);
  ck_assert_int_eq(got[3]->evict->target_case, ARENAD__V1__EVICT__TARGET_KEY);
  ck_assert_uint_eq(got[3]->evict->key.len, 5);
  ck_assert_int_eq(memcmp(got[3]->evict->key.data, key, 5), 0);
  for (int i = 0; i < 4; i++)
    wire_free_request(got[i]);
  wire_reader_cleanup(&r);
  free(stream);
}
END_TEST

START_TEST(every_reply_kind_round_trip)
{
  uint8_t key[2] = {0xab, 0xcd};
  Arenad__V1__CacheEntry e = ARENAD__V1__CACHE_ENTRY__INIT;
  e.key.data = key;
  e.key.len = 2;
  e.hits = 12;
  e.created_unix_ms = -5; /* a negative int64 travels as a 10-byte varint */
  e.algorithm = ARENAD__V1__ALGORITHM__EXACT;
  Arenad__V1__CacheEntry *ep[] = {&e, &e};
  Arenad__V1__ListReply lr = ARENAD__V1__LIST_REPLY__INIT;
  lr.entries = ep;
  lr.n_entries = 2;
  Arenad__V1__StatsReply sr = ARENAD__V1__STATS_REPLY__INIT;
  sr.version = "9.9.9";
  sr.socket_path = "/run/x.sock";
  sr.verify_failures = 3;
  sr.storage_ok = 1;
  Arenad__V1__Pong pong = ARENAD__V1__PONG__INIT;
  pong.version = "v";
  Arenad__V1__EvictReply er = ARENAD__V1__EVICT_REPLY__INIT;
  er.evicted = 1ull << 40;

  Arenad__V1__Response rs[5];
  for (int i = 0; i < 5; i++) {
    arenad__v1__response__init(&rs[i]);
    rs[i].request_id = (uint64_t)i;
  }
  rs[0].body_case = ARENAD__V1__RESPONSE__BODY_LIST;
  rs[0].list = &lr;
  rs[1].body_case = ARENAD__V1__RESPONSE__BODY_STATS;
  rs[1].stats = &sr;
  rs[2].body_case = ARENAD__V1__RESPONSE__BODY_PONG;
  rs[2].pong = &pong;
  rs[3].body_case = ARENAD__V1__RESPONSE__BODY_EVICT;
  rs[3].evict = &er;
  rs[4].status = ARENAD__V1__STATUS__BUSY;
  rs[4].error = "too many connections";

  for (int i = 0; i < 5; i++) {
    uint8_t *buf;
    size_t len;
    Arenad__V1__Response *g = NULL;
    ck_assert_int_eq(wire_pack(&rs[i].base, 0, &buf, &len), 0);
    ck_assert_int_eq(wire_unpack_response(buf + 4, len - 4, 0, &g), 0);
    free(buf);
    ck_assert_int_eq(g->body_case, rs[i].body_case);
    switch (i) {
    case 0:
      ck_assert_uint_eq(g->list->n_entries, 2);
      ck_assert_uint_eq(g->list->entries[1]->hits, 12);
      ck_assert_int_eq(g->list->entries[1]->created_unix_ms, -5);
      ck_assert_int_eq(g->list->entries[0]->algorithm,
                       ARENAD__V1__ALGORITHM__EXACT);
      ck_assert_uint_eq(g->list->entries[0]->key.len, 2);
      break;
    case 1:
      ck_assert_str_eq(g->stats->version, "9.9.9");
      ck_assert_str_eq(g->stats->socket_path, "/run/x.sock");
      ck_assert_str_eq(g->stats->db_path, "");
      ck_assert_uint_eq(g->stats->verify_failures, 3);
      ck_assert(g->stats->storage_ok);
      break;
    case 2:
      ck_assert_str_eq(g->pong->version, "v");
      ck_assert_uint_eq(g->pong->payload.len, 0);
      break;
    case 3:
      ck_assert_uint_eq(g->evict->evicted, 1ull << 40);
      break;
    default:
      ck_assert_int_eq(g->status, ARENAD__V1__STATUS__BUSY);
      ck_assert_str_eq(g->error, "too many connections");
      ck_assert_uint_eq(g->request_id, 4);
      break;
    }
    wire_free_response(g);
  }
}
END_TEST

START_TEST(status_names)
{
  ck_assert_str_eq(wire_status_name(ARENAD__V1__STATUS__OK), "OK");
  ck_assert_str_eq(wire_status_name(ARENAD__V1__STATUS__BUSY), "BUSY");
  ck_assert_str_eq(wire_status_name(ARENAD__V1__STATUS__UNSUPPORTED_VERSION),
                   "UNSUPPORTED_VERSION");
  ck_assert_str_eq(wire_status_name((Arenad__V1__Status)77), "UNKNOWN");
}
END_TEST

/* ---- request validation -------------------------------------------------- */

/* One way to break a valid Plan message, and the code it must give. */
struct bad_case {
  const char *what;
  int code;
  const char *needle; /* must appear in the error text */
};

static const struct bad_case bad_cases[] = {
    {"sizes column short", ARENA_EINVAL, "columns differ"},
    {"last column long", ARENA_EINVAL, "columns differ"},
    {"align column short", ARENA_EINVAL, "tensor_align"},
    {"pinned column short", ARENA_EINVAL, "tensor_pinned"},
    {"no tensors", ARENA_EEMPTY, "no tensors"},
    {"too many tensors", ARENA_ETOOBIG, "over 3"},
    {"empty model hash", ARENA_EINVAL, "model hash"},
    {"65-byte model hash", ARENA_EINVAL, "model hash"},
    {"negative dim", ARENA_EINVAL, "negative"},
    {"rank over limit", ARENA_ETOOBIG, "rank"},
    {"first > last", ARENA_ELIFETIME, ""},
    {"negative first", ARENA_ELIFETIME, ""},
    {"duplicate id", ARENA_EDUPID, ""},
    {"bad algorithm", ARENA_EINVAL, "algorithm"},
    {"negative algorithm", ARENA_EINVAL, "algorithm"},
    {"alignment not a power of two", ARENA_EALIGN, ""},
    {"pinned below -1", ARENA_EPINNED, ""},
};
#define N_BAD (sizeof bad_cases / sizeof bad_cases[0])

START_TEST(validation_rejects)
{
  const struct bad_case *bc = &bad_cases[_i];
  Arenad__V1__Plan m;
  Arenad__V1__PlanOptions mo;
  small_plan_msg(&m, &mo);
  ck_assert_uint_eq(m.n_tensor_pinned, SMALL_N);
  ck_assert_uint_eq(m.n_tensor_align, SMALL_N);
  struct wire_limits l;
  wire_limits_init(&l);
  uint8_t long_hash[WIRE_MAX_MODEL_HASH + 1] = {0};
  int64_t dims[WIRE_MAX_RANK + 1] = {0};
  Arenad__V1__Dims d = ARENAD__V1__DIMS__INIT;
  Arenad__V1__Dims *shape[] = {&d};

  switch (_i) {
  case 0: m.n_tensor_sizes--; break;
  case 1: m.n_tensor_last++; break; /* reads stay inside: the check is first */
  case 2: m.n_tensor_align--; break;
  case 3: m.n_tensor_pinned = 1; break;
  case 4:
    m.n_tensor_ids = m.n_tensor_sizes = m.n_tensor_first = 0;
    m.n_tensor_last = m.n_tensor_align = m.n_tensor_pinned = 0;
    break;
  case 5: l.max_tensors = 3; break;
  case 6: m.model_hash.len = 0; break;
  case 7:
    m.model_hash.data = long_hash;
    m.model_hash.len = sizeof long_hash;
    break;
  case 8:
    dims[0] = 2;
    dims[1] = -1;
    d.dims = dims;
    d.n_dims = 2;
    m.input_shape = shape;
    m.n_input_shape = 1;
    break;
  case 9:
    d.dims = dims;
    d.n_dims = WIRE_MAX_RANK + 1;
    m.input_shape = shape;
    m.n_input_shape = 1;
    break;
  case 10: m.tensor_first[1] = 5; break;
  case 11: m.tensor_first[0] = -3; break;
  case 12: m.tensor_ids[2] = m.tensor_ids[0]; break;
  case 13: mo.algorithm = (Arenad__V1__Algorithm)PLANNER_ALGO__COUNT; break;
  case 14: mo.algorithm = (Arenad__V1__Algorithm)-2; break;
  case 15: mo.alignment = 48; break;
  case 16: m.tensor_pinned[0] = -7; break;
  default: ck_abort_msg("no case %d", _i);
  }

  /* Round-trip through the codec first so that the validation sees
   * exactly what a peer could send (case 1 cannot be encoded: the
   * column is shorter than it claims, so it is checked directly). */
  struct wire_graph g;
  char err[ARENA_ERR_LEN] = "";
  int rc;
  if (_i == 1) {
    rc = wire_graph_from_plan(&m, &l, &g, err);
  } else {
    Arenad__V1__Request *back = round_trip_plan(&m);
    rc = wire_graph_from_plan(back->plan, &l, &g, err);
    wire_free_request(back);
  }
  ck_assert_msg(rc == bc->code, "%s: got %s (%s), want %s", bc->what,
                arena_err_name(rc), err, arena_err_name(bc->code));
  ck_assert_msg(err[0] != '\0', "%s: no message", bc->what);
  ck_assert_msg(strstr(err, bc->needle) != NULL, "%s: message '%s'",
                bc->what, err);
  /* On failure the graph is left empty. */
  ck_assert_ptr_null(g.tensors);
  ck_assert_uint_eq(g.n_tensors, 0);
  ck_assert_ptr_null(g.shape.ranks);
  if (_i == 7)
    m.model_hash.data = NULL; /* not owned by the message */
  m.input_shape = NULL;
  m.n_input_shape = 0;
  m.n_tensor_ids = m.n_tensor_sizes = m.n_tensor_first = SMALL_N;
  wire_plan_msg_cleanup(&m);
}
END_TEST

/* The limits are inclusive: exactly max_tensors, a 64-byte hash and the
 * largest rank all pass. */
START_TEST(validation_limits_inclusive)
{
  Arenad__V1__Plan m;
  Arenad__V1__PlanOptions mo;
  small_plan_msg(&m, &mo);
  struct wire_limits l;
  wire_limits_init(&l);
  l.max_tensors = SMALL_N;
  uint8_t hash[WIRE_MAX_MODEL_HASH];
  memset(hash, 0x5a, sizeof hash);
  m.model_hash.data = hash;
  m.model_hash.len = sizeof hash;
  int64_t dims[WIRE_MAX_RANK];
  for (size_t i = 0; i < WIRE_MAX_RANK; i++)
    dims[i] = (int64_t)i;
  Arenad__V1__Dims d = ARENAD__V1__DIMS__INIT;
  d.dims = dims;
  d.n_dims = WIRE_MAX_RANK;
  Arenad__V1__Dims *shape[] = {&d};
  m.input_shape = shape;
  m.n_input_shape = 1;
  struct wire_graph g;
  char err[ARENA_ERR_LEN] = "";
  ck_assert_msg(wire_graph_from_plan(&m, &l, &g, err) == 0, "%s", err);
  ck_assert_uint_eq(g.shape.ranks[0], WIRE_MAX_RANK);
  ck_assert_uint_eq(g.model_hash_len, WIRE_MAX_MODEL_HASH);
  wire_graph_cleanup(&g);
  m.input_shape = NULL;
  m.n_input_shape = 0;
  wire_plan_msg_cleanup(&m);
}
END_TEST

START_TEST(shape_too_many_inputs)
{
  Arenad__V1__Dims d = ARENAD__V1__DIMS__INIT;
  Arenad__V1__Dims **many = calloc(WIRE_MAX_INPUTS + 1, sizeof *many);
  ck_assert_ptr_nonnull(many);
  for (size_t i = 0; i <= WIRE_MAX_INPUTS; i++)
    many[i] = &d;
  struct wire_shape s;
  char err[ARENA_ERR_LEN] = "";
  ck_assert_int_eq(wire_shape_from_msg(many, WIRE_MAX_INPUTS + 1, &s, err),
                   ARENA_ETOOBIG);
  ck_assert_ptr_nonnull(strstr(err, "inputs"));
  ck_assert_int_eq(wire_shape_from_msg(many, WIRE_MAX_INPUTS, &s, err), 0);
  ck_assert_uint_eq(s.n_inputs, WIRE_MAX_INPUTS);
  wire_shape_cleanup(&s);
  /* A NULL entry (impossible from the decoder, possible from a caller). */
  many[3] = NULL;
  ck_assert_int_eq(wire_shape_from_msg(many, 4, &s, NULL), ARENA_EINVAL);
  free(many);
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
  tcase_add_test(tc, pack_header_and_limits);
  tcase_add_test(tc, plan_request_round_trip);
  tcase_add_test(tc, plan_request_defaults);
  tcase_add_test(tc, plan_reply_round_trip);
  tcase_add_test(tc, unpack_memory_limit);
  tcase_add_test(tc, unpack_garbage);
  tcase_add_test(tc, every_request_kind_round_trip);
  tcase_add_test(tc, every_reply_kind_round_trip);
  tcase_add_test(tc, status_names);
  suite_add_tcase(s, tc);

  tc = tcase_create("validation");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, validation_rejects, 0, (int)N_BAD);
  tcase_add_test(tc, validation_limits_inclusive);
  tcase_add_test(tc, shape_too_many_inputs);
  suite_add_tcase(s, tc);
  return s;
}

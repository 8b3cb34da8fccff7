/*
 * check_wire_codec.c - the first part of the "codec" case of the wire
 * suite: frame headers and wire_pack's limits, a packed request framed
 * under a request id of its own, Plan requests and replies
 * through the codec and back (with their defaults and out-of-range
 * enums, and the alias column, the in-place option and the sharing
 * fields), the counting allocator pushed over its limit, and garbage and
 * truncated bodies. Also defines the small Plan message that
 * check_wire.h shares with the validation case.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "wire.h"
#include "wire_plan.h"
#include "check_wire.h"

/* ---- the small Plan message ---------------------------------------------- */

/* A small valid graph: ids deliberately out of order. */
static const struct planner_tensor small_graph[] = {
    {7, 100, 0, 2, 0, PLANNER_NOT_PINNED, 0, 0},
    {3, 40, 1, 3, 16, PLANNER_NOT_PINNED, 0, 0},
    {5, 64, 2, 4, 0, 128, 0, 0},
    {1, 0, 0, 0, 0, PLANNER_NOT_PINNED, 0, 0},
};
_Static_assert(sizeof small_graph / sizeof small_graph[0] == WT_SMALL_N,
               "WT_SMALL_N counts small_graph");

static const uint8_t model_hash[] = {0xde, 0xad, 0xbe, 0xef};

/* Builds a Plan message for small_graph; free with wire_plan_msg_cleanup. */
void wt_small_plan_msg(Arenad__V1__Plan *m, Arenad__V1__PlanOptions *mo)
{
  struct planner_graph g = {small_graph, WT_SMALL_N};
  struct planner_options o;
  planner_options_init(&o);
  ck_assert_int_eq(wire_plan_msg_init(m, mo, &g, &o, model_hash,
                                      sizeof model_hash, NULL, 0),
                   0);
}

/* Packs a Request carrying m, unpacks it again and returns it (owned). */
Arenad__V1__Request *wt_round_trip_plan(Arenad__V1__Plan *m)
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

/* A Request packed once with request id 0 and framed under several ids
 * (every varint length from 1 to 10 bytes) decodes with that id and the
 * rest unchanged; the frame limit counts the appended field. */
START_TEST(frame_with_id_appends_the_request_id)
{
  Arenad__V1__Plan pm;
  Arenad__V1__PlanOptions po;
  wt_small_plan_msg(&pm, &po);
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.want_ack = 1;
  req.body_case = ARENAD__V1__REQUEST__BODY_PLAN;
  req.plan = &pm;
  uint8_t *packed;
  size_t plen;
  ck_assert_int_eq(wire_pack(&req.base, 0, &packed, &plen), 0);
  const uint8_t *body = packed + WIRE_HEADER_LEN;
  size_t blen = plen - WIRE_HEADER_LEN;
  uint8_t *out = malloc(WIRE_HEADER_LEN + blen + WIRE_ID_FIELD_MAX);
  ck_assert_ptr_nonnull(out);
  static const uint64_t ids[] = {0, 1, 127, 128, 300, 1ull << 32,
                                 (1ull << 63) - 1, UINT64_MAX};
  static const size_t field_len[] = {2, 2, 2, 3, 3, 6, 10, 11};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    size_t len = 0;
    ck_assert_int_eq(wire_frame_with_id(body, blen, ids[i], 0, out, &len), 0);
    ck_assert_uint_eq(len, WIRE_HEADER_LEN + blen + field_len[i]);
    ck_assert_uint_eq(((size_t)out[0] << 24 | (size_t)out[1] << 16 |
                       (size_t)out[2] << 8 | out[3]),
                      len - WIRE_HEADER_LEN);
    ck_assert_mem_eq(out + WIRE_HEADER_LEN, body, blen);
    ck_assert_uint_eq(out[WIRE_HEADER_LEN + blen], 0x10);
    Arenad__V1__Request *back = NULL;
    ck_assert_int_eq(wire_unpack_request(out + WIRE_HEADER_LEN,
                                         len - WIRE_HEADER_LEN, 0, &back),
                     0);
    ck_assert_uint_eq(back->request_id, ids[i]);
    ck_assert_uint_eq(back->protocol_version, WIRE_PROTOCOL_VERSION);
    ck_assert_int_eq(back->want_ack, 1);
    ck_assert_int_eq(back->body_case, ARENAD__V1__REQUEST__BODY_PLAN);
    /* with the id set the same, it packs to the same bytes but for the
     * place of the id field */
    back->request_id = 0;
    uint8_t *again;
    size_t alen;
    ck_assert_int_eq(wire_pack(&back->base, 0, &again, &alen), 0);
    ck_assert_uint_eq(alen, plen);
    ck_assert_mem_eq(again, packed, plen);
    free(again);
    wire_free_request(back);
  }

  /* The limit counts the id field: a frame of blen + 2 bytes fits in a
   * limit of blen + 2, not in blen + 1. */
  size_t len = 1;
  ck_assert_int_eq(wire_frame_with_id(body, blen, 5, blen + 1, out, &len),
                   ARENA_ETOOBIG);
  ck_assert_uint_eq(len, 0);
  ck_assert_int_eq(wire_frame_with_id(body, blen, 5, blen + 2, out, &len), 0);
  ck_assert_uint_eq(len, WIRE_HEADER_LEN + blen + 2);
  free(out);
  free(packed);
  wire_plan_msg_cleanup(&pm);
}
END_TEST

START_TEST(plan_request_round_trip)
{
  Arenad__V1__Plan m;
  Arenad__V1__PlanOptions mo;
  wt_small_plan_msg(&m, &mo);
  mo.algorithm = ARENAD__V1__ALGORITHM__GREEDY_SIZE;
  mo.capacity = 4096;
  mo.effort = 7;
  mo.alignment = 32;
  Arenad__V1__Dims d0 = ARENAD__V1__DIMS__INIT, d1 = ARENAD__V1__DIMS__INIT;
  int64_t dims0[] = {1, 224, 224, 3};
  d0.dims = dims0;
  d0.n_dims = 4;
  Arenad__V1__Dims *shape[] = {&d0, &d1};
  m.input_shape = shape;
  m.n_input_shape = 2;

  Arenad__V1__Request *back = wt_round_trip_plan(&m);
  ck_assert_uint_eq(back->request_id, 42);
  struct wire_limits l;
  struct wire_graph g;
  char err[ARENA_ERR_LEN] = "";
  wire_limits_init(&l);
  ck_assert_uint_eq(l.max_tensors, WIRE_DEFAULT_MAX_TENSORS);
  ck_assert_int_eq(wire_graph_from_plan(back->plan, &l, &g, err), 0);
  ck_assert_uint_eq(g.n_tensors, WT_SMALL_N);
  for (size_t i = 0; i < WT_SMALL_N; i++) {
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
  ck_assert_uint_eq(g.opts.effort, 7);
  ck_assert_uint_eq(g.model_hash_len, sizeof model_hash);
  ck_assert_int_eq(memcmp(g.model_hash, model_hash, sizeof model_hash), 0);
  ck_assert_uint_eq(g.shape.n_inputs, 2);
  ck_assert_uint_eq(g.shape.ranks[0], 4);
  ck_assert_uint_eq(g.shape.ranks[1], 0);
  ck_assert_int_eq(g.shape.dims[1], 224);
  ck_assert_int_eq(g.shape.dims[3], 3);

  /* The digest of what arrived equals the digest of what was sent. */
  uint8_t d_sent[PLANNER_DIGEST_LEN], d_got[PLANNER_DIGEST_LEN];
  struct planner_graph pg = {small_graph, WT_SMALL_N};
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
      {1, 8, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
      {2, 8, 1, 2, 0, PLANNER_NOT_PINNED, 0, 0},
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
  Arenad__V1__Request *back = wt_round_trip_plan(&m);
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
  back = wt_round_trip_plan(&m);
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
  struct planner_graph pg = {small_graph, WT_SMALL_N};
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

/* A chain of in-place pairs: 11 over 10, 12 over 11; 13 declares none. */
static const struct planner_tensor chain_graph[] = {
    {10, 256, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
    {11, 256, 1, 2, 0, PLANNER_NOT_PINNED, 10, 1},
    {12, 256, 2, 3, 0, PLANNER_NOT_PINNED, 11, 1},
    {13, 64, 0, 3, 0, PLANNER_NOT_PINNED, 0, 0},
};

/* Packs the Request that carries m; returns the frame (owned). */
static uint8_t *pack_plan(Arenad__V1__Plan *m, size_t *len)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = 1;
  req.request_id = 3;
  req.body_case = ARENAD__V1__REQUEST__BODY_PLAN;
  req.plan = m;
  uint8_t *buf;
  ck_assert_int_eq(wire_pack(&req.base, 0, &buf, len), 0);
  return buf;
}

START_TEST(plan_request_aliases)
{
  struct planner_graph pg = {chain_graph, 4};
  struct planner_options o;
  planner_options_init(&o);
  Arenad__V1__Plan m;
  Arenad__V1__PlanOptions mo;
  ck_assert_int_eq(
      wire_plan_msg_init(&m, &mo, &pg, &o, model_hash, 4, NULL, 0), 0);
  ck_assert_uint_eq(m.n_tensor_alias, 4);
  ck_assert_int_eq(m.tensor_alias[0], -1);
  ck_assert_int_eq(m.tensor_alias[1], 10);
  ck_assert_int_eq(m.tensor_alias[2], 11);
  ck_assert_int_eq(m.tensor_alias[3], -1);
  ck_assert_int_eq(mo.no_in_place, 0);
  Arenad__V1__Request *back = wt_round_trip_plan(&m);
  struct wire_limits l;
  struct wire_graph g;
  char err[ARENA_ERR_LEN] = "";
  wire_limits_init(&l);
  ck_assert_msg(wire_graph_from_plan(back->plan, &l, &g, err) == 0, "%s", err);
  ck_assert_int_eq(g.opts.in_place, 1);
  for (size_t i = 0; i < 4; i++) {
    ck_assert_uint_eq(g.tensors[i].has_alias, chain_graph[i].has_alias);
    ck_assert_uint_eq(g.tensors[i].alias, chain_graph[i].alias);
  }
  /* what arrived digests as what was sent, whatever the digest covers */
  uint8_t d_sent[PLANNER_DIGEST_LEN], d_got[PLANNER_DIGEST_LEN];
  struct planner_graph gg = {g.tensors, g.n_tensors};
  ck_assert_int_eq(planner_graph_digest(&pg, d_sent), 0);
  ck_assert_int_eq(planner_graph_digest(&gg, d_got), 0);
  ck_assert_int_eq(memcmp(d_sent, d_got, sizeof d_sent), 0);
  wire_graph_cleanup(&g);
  wire_free_request(back);
  wire_plan_msg_cleanup(&m);

  /* in-place off travels as no_in_place and arrives as the graph
   * without aliases */
  o.in_place = 0;
  ck_assert_int_eq(
      wire_plan_msg_init(&m, &mo, &pg, &o, model_hash, 4, NULL, 0), 0);
  ck_assert_int_eq(mo.no_in_place, 1);
  ck_assert_uint_eq(m.n_tensor_alias, 4);
  back = wt_round_trip_plan(&m);
  ck_assert_msg(wire_graph_from_plan(back->plan, &l, &g, err) == 0, "%s", err);
  ck_assert_int_eq(g.opts.in_place, 0);
  struct planner_tensor bare[4];
  memcpy(bare, chain_graph, sizeof bare);
  for (size_t i = 0; i < 4; i++) {
    ck_assert_uint_eq(g.tensors[i].has_alias, 0);
    bare[i].has_alias = 0;
  }
  struct planner_graph bg = {bare, 4};
  gg.tensors = g.tensors;
  ck_assert_int_eq(planner_graph_digest(&bg, d_sent), 0);
  ck_assert_int_eq(planner_graph_digest(&gg, d_got), 0);
  ck_assert_int_eq(memcmp(d_sent, d_got, sizeof d_sent), 0);
  wire_graph_cleanup(&g);
  wire_free_request(back);
  wire_plan_msg_cleanup(&m);
}
END_TEST

/* A graph that declares no alias, with sharing on, encodes exactly as
 * before the alias column and the option existed: neither is written,
 * whatever the unused alias fields hold. */
START_TEST(plan_request_without_aliases_unchanged)
{
  struct planner_tensor t[4];
  memcpy(t, small_graph, sizeof t);
  struct planner_graph pg = {t, WT_SMALL_N};
  struct planner_options o;
  planner_options_init(&o);
  Arenad__V1__Plan m;
  Arenad__V1__PlanOptions mo;
  ck_assert_int_eq(
      wire_plan_msg_init(&m, &mo, &pg, &o, model_hash, 4, NULL, 0), 0);
  ck_assert_uint_eq(m.n_tensor_alias, 0);
  ck_assert_ptr_null(m.tensor_alias);
  ck_assert_int_eq(mo.no_in_place, 0);
  size_t len_a, len_b;
  uint8_t *a = pack_plan(&m, &len_a);
  wire_plan_msg_cleanup(&m);
  for (size_t i = 0; i < WT_SMALL_N; i++)
    t[i].alias = 0xfeedu + (uint32_t)i; /* ignored: has_alias is 0 */
  ck_assert_int_eq(
      wire_plan_msg_init(&m, &mo, &pg, &o, model_hash, 4, NULL, 0), 0);
  uint8_t *b = pack_plan(&m, &len_b);
  ck_assert_uint_eq(len_a, len_b);
  ck_assert_int_eq(memcmp(a, b, len_a), 0);
  /* the same bytes as a message built with the fields of old alone */
  Arenad__V1__Plan old = ARENAD__V1__PLAN__INIT;
  Arenad__V1__PlanOptions old_o = ARENAD__V1__PLAN_OPTIONS__INIT;
  old_o.algorithm = mo.algorithm;
  old_o.alignment = mo.alignment;
  old_o.effort = mo.effort;
  old_o.capacity = mo.capacity;
  old = m;
  old.options = &old_o;
  old.tensor_alias = NULL;
  old.n_tensor_alias = 0;
  uint8_t *c = pack_plan(&old, &len_b);
  ck_assert_uint_eq(len_a, len_b);
  ck_assert_int_eq(memcmp(a, c, len_a), 0);
  free(a);
  free(b);
  free(c);
  wire_plan_msg_cleanup(&m);
}
END_TEST

START_TEST(plan_reply_sharing)
{
  struct planner_graph pg = {chain_graph, 4};
  struct planner_options o;
  struct planner_plan p, q;
  char err[ARENA_ERR_LEN];
  planner_options_init(&o);
  planner_plan_init(&p);
  planner_plan_init(&q);
  ck_assert_int_eq(planner_run(&pg, &o, &p, err), 0);
  ck_assert_uint_eq(p.n_shared, 2);
  ck_assert_uint_gt(p.lower_bound_unshared_bytes, p.lower_bound_bytes);
  Arenad__V1__PlanReply pr;
  wire_reply_from_plan(&pr, &p, NULL, NULL);
  ck_assert_uint_eq(pr.shared_pairs, 2);
  ck_assert_uint_eq(pr.lower_bound_unshared_bytes,
                    p.lower_bound_unshared_bytes);
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
  ck_assert_int_eq(wire_plan_from_reply(back->plan, &q), 0);
  ck_assert_uint_eq(q.n_shared, 2);
  ck_assert_uint_eq(q.lower_bound_unshared_bytes,
                    p.lower_bound_unshared_bytes);
  ck_assert_uint_eq(q.lower_bound_bytes, p.lower_bound_bytes);
  ck_assert_int_eq(planner_verify(&pg, &o, &q, err), 0);

  /* an older daemon sends neither field: nothing shared, one bound */
  back->plan->lower_bound_unshared_bytes = 0;
  back->plan->shared_pairs = 0;
  ck_assert_int_eq(wire_plan_from_reply(back->plan, &q), 0);
  ck_assert_uint_eq(q.n_shared, 0);
  ck_assert_uint_eq(q.lower_bound_unshared_bytes, q.lower_bound_bytes);
  /* as many pairs as offsets, or more, is a malformed reply */
  back->plan->shared_pairs = back->plan->n_offsets;
  ck_assert_int_eq(wire_plan_from_reply(back->plan, &q), ARENA_EPROTO);
  back->plan->shared_pairs = back->plan->n_offsets - 1;
  ck_assert_int_eq(wire_plan_from_reply(back->plan, &q), 0);
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
    big[i].alias = 0;
    big[i].has_alias = 0;
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
  wt_small_plan_msg(&m, &mo);
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

void wire_add_codec(TCase *tc)
{
  tcase_add_test(tc, pack_header_and_limits);
  tcase_add_test(tc, frame_with_id_appends_the_request_id);
  tcase_add_test(tc, plan_request_round_trip);
  tcase_add_test(tc, plan_request_defaults);
  tcase_add_test(tc, plan_reply_round_trip);
  tcase_add_test(tc, plan_request_aliases);
  tcase_add_test(tc, plan_request_without_aliases_unchanged);
  tcase_add_test(tc, plan_reply_sharing);
  tcase_add_test(tc, unpack_memory_limit);
  tcase_add_test(tc, unpack_garbage);
}

/*
 * check_wire_kinds.c - the rest of the "codec" case of the wire suite:
 * every request kind packed into one stream and read back through a
 * reader fed one byte at a time, every reply kind packed and unpacked,
 * the status names, and the plan reply frame a cache hit sends from a
 * reply packed once.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"
#include "wire_plan.h"
#include "check_wire.h"

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

/* wire_plan_reply_frame gives, byte for byte, the frame that packing
 * the whole Response gives, for request ids whose varints take 0 to 10
 * bytes, and refuses a frame over the limit. */
START_TEST(plan_reply_frame_equals_packed_response)
{
  uint64_t off[300];
  for (size_t i = 0; i < 300; i++)
    off[i] = i * 64 + (i % 3) * 1000000;
  uint8_t gd[32], od[32];
  memset(gd, 0x5a, sizeof gd);
  memset(od, 0xa5, sizeof od);
  Arenad__V1__PlanReply pr = ARENAD__V1__PLAN_REPLY__INIT;
  pr.offsets = off;
  pr.n_offsets = 300;
  pr.arena_bytes = 123456789;
  pr.lower_bound_bytes = 1000;
  pr.proven_optimal = 1;
  pr.algorithm = ARENAD__V1__ALGORITHM__EXACT;
  pr.graph_digest = (ProtobufCBinaryData){32, gd};
  pr.options_digest = (ProtobufCBinaryData){32, od};
  pr.cached = 1;
  uint8_t *reply;
  size_t reply_len;
  ck_assert_int_eq(wire_plan_reply_pack(&pr, &reply, &reply_len), 0);
  ck_assert_uint_eq(reply_len, protobuf_c_message_get_packed_size(&pr.base));
  const uint64_t ids[] = {0, 1, 127, 128, 300, 1ull << 35, UINT64_MAX};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
    r.request_id = ids[i];
    r.body_case = ARENAD__V1__RESPONSE__BODY_PLAN;
    r.plan = &pr;
    uint8_t *want, *got;
    size_t want_len, got_len;
    ck_assert_int_eq(wire_pack(&r.base, 0, &want, &want_len), 0);
    ck_assert_int_eq(
        wire_plan_reply_frame(ids[i], reply, reply_len, 0, &got, &got_len),
        0);
    ck_assert_uint_eq(got_len, want_len);
    ck_assert_int_eq(memcmp(got, want, want_len), 0);
    Arenad__V1__Response *back = NULL;
    ck_assert_int_eq(wire_unpack_response(got + 4, got_len - 4, 0, &back), 0);
    ck_assert_uint_eq(back->request_id, ids[i]);
    ck_assert_uint_eq(back->plan->n_offsets, 300);
    ck_assert_uint_eq(back->plan->offsets[299], off[299]);
    wire_free_response(back);
    free(want);
    free(got);
  }
  uint8_t *f = (uint8_t *)"x";
  size_t flen = 7;
  ck_assert_int_eq(wire_plan_reply_frame(9, reply, reply_len, reply_len, &f,
                                         &flen),
                   ARENA_ETOOBIG);
  ck_assert_ptr_null(f);
  ck_assert_uint_eq(flen, 0);
  free(reply);
}
END_TEST

void wire_add_kinds(TCase *tc)
{
  tcase_add_test(tc, plan_reply_frame_equals_packed_response);
  tcase_add_test(tc, every_request_kind_round_trip);
  tcase_add_test(tc, every_reply_kind_round_trip);
  tcase_add_test(tc, status_names);
}

/*
 * check_daemon_share.c - in-place sharing through a real arenad: a graph
 * whose tensors declare aliases gets the smaller shared arena, with the
 * pair count and both bounds in the reply, from the planner, the hot
 * LRU and sqlite alike; with in-place sharing off the same graph is
 * planned, keyed and verified as the graph without aliases, and so
 * shares its cache entry; hostile alias values are INVALID_ARGUMENT and
 * the daemon keeps serving.
 *
 * The tests hold whether or not the graph digest covers aliases: each
 * model hash sees either only the graph with aliases and sharing on, or
 * only graphs keyed without aliases.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_daemon.h"
#include "digest.h"
#include "wire.h"
#include "wire_plan.h"

enum { SH_N = 7, SH_PAIRS = 4 };

/* Two chains of three tensors, each output over its input (4 legal
 * pairs), one after the other, and a tensor live throughout. */
static void share_graph(struct planner_tensor *t, int with_aliases)
{
  for (size_t i = 0; i < SH_N; i++) {
    t[i].id = (uint32_t)(10 + i);
    t[i].size = 4000;
    t[i].first = (int64_t)(i < 3 ? i : i + 1); /* 0 1 2, then 4 5 6 */
    t[i].last = t[i].first + 1;
    t[i].align = 0;
    t[i].pinned = PLANNER_NOT_PINNED;
    t[i].alias = t[i].id - 1;
    t[i].has_alias = with_aliases && i != 0 && i != 3 && i != 6;
  }
  t[6].size = 1000;
  t[6].first = 0;
  t[6].last = SH_N + 1;
}

static void share_options(struct planner_options *o, int in_place)
{
  planner_options_init(o);
  o->in_place = in_place;
}

/* Sends one Plan of t (model hash `hash`, best, alignment 64) with
 * in-place sharing on or off on a new connection, and returns the
 * reply (owned), which must have arrived. */
static Arenad__V1__Response *plan_req(const struct harness *h,
                                      const struct planner_tensor *t,
                                      const char *hash, int in_place,
                                      uint64_t rid)
{
  struct planner_graph g = {t, SH_N};
  struct planner_options o;
  share_options(&o, in_place);
  Arenad__V1__Plan m;
  Arenad__V1__PlanOptions mo;
  ck_assert_int_eq(wire_plan_msg_init(&m, &mo, &g, &o, (const uint8_t *)hash,
                                      strlen(hash), NULL, 0),
                   0);
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = rid;
  req.body_case = ARENAD__V1__REQUEST__BODY_PLAN;
  req.plan = &m;
  int fd = hn_connect(h);
  ck_assert_int_ge(fd, 0);
  Arenad__V1__Response *r = hn_call(fd, &req, 20000);
  close(fd);
  wire_plan_msg_cleanup(&m);
  ck_assert_ptr_nonnull(r);
  return r;
}

/* Asserts that r is an OK plan of t whose offsets verify under the
 * in-place option given, and equal those of the local plan p. */
static void check_reply(const Arenad__V1__Response *r,
                        const struct planner_tensor *t, int in_place,
                        const struct planner_plan *p)
{
  ck_assert_msg(r->status == ARENAD__V1__STATUS__OK, "status %d: %s",
                r->status, r->error);
  struct planner_plan q;
  planner_plan_init(&q);
  ck_assert_int_eq(wire_plan_from_reply(r->plan, &q), 0);
  struct planner_graph g = {t, SH_N};
  struct planner_options o;
  share_options(&o, in_place);
  char err[ARENA_ERR_LEN] = "";
  ck_assert_msg(planner_verify(&g, &o, &q, err) == 0, "%s", err);
  ck_assert_uint_eq(q.n_offsets, SH_N);
  ck_assert_mem_eq(q.offsets, p->offsets, SH_N * sizeof *q.offsets);
  ck_assert_uint_eq(q.arena_bytes, p->arena_bytes);
  ck_assert_uint_eq(q.lower_bound_bytes, p->lower_bound_bytes);
  ck_assert_uint_eq(q.lower_bound_unshared_bytes,
                    p->lower_bound_unshared_bytes);
  ck_assert_uint_eq(q.n_shared, p->n_shared);
  planner_plan_cleanup(&q);
}

/* The plan this process computes for t: the daemon's must equal it. */
static void local_plan(const struct planner_tensor *t, int in_place,
                       struct planner_plan *p)
{
  struct planner_graph g = {t, SH_N};
  struct planner_options o;
  share_options(&o, in_place);
  char err[ARENA_ERR_LEN] = "";
  planner_plan_init(p);
  ck_assert_msg(planner_run(&g, &o, p, err) == 0, "%s", err);
}

/* Lists the cache entries of one model hash. Returns the reply (owned). */
static Arenad__V1__Response *list_model(const struct harness *h,
                                        const char *hash)
{
  Arenad__V1__List l = ARENAD__V1__LIST__INIT;
  l.model_hash.data = (uint8_t *)hash;
  l.model_hash.len = strlen(hash);
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = 77;
  req.body_case = ARENAD__V1__REQUEST__BODY_LIST;
  req.list = &l;
  int fd = hn_connect(h);
  ck_assert_int_ge(fd, 0);
  Arenad__V1__Response *r = hn_call(fd, &req, 5000);
  close(fd);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  return r;
}

/* A legal alias chain gets the shared arena and reports it, computed,
 * from the hot LRU and, after a restart, from sqlite; every copy
 * verifies. */
START_TEST(test_share_chain)
{
  struct planner_tensor t[SH_N], bare[SH_N];
  share_graph(t, 1);
  share_graph(bare, 0);
  struct planner_plan ps, pb;
  local_plan(t, 1, &ps);
  local_plan(bare, 1, &pb);
  ck_assert_uint_eq(ps.n_shared, SH_PAIRS);
  ck_assert_uint_lt(ps.arena_bytes, pb.arena_bytes);
  ck_assert_uint_lt(ps.lower_bound_bytes, ps.lower_bound_unshared_bytes);

  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  Arenad__V1__Response *r = plan_req(&h, t, "share-chain", 1, 1);
  check_reply(r, t, 1, &ps);
  ck_assert_int_eq(r->plan->cached, 0);
  ck_assert_uint_eq(r->plan->shared_pairs, SH_PAIRS);
  ck_assert_uint_eq(r->plan->lower_bound_unshared_bytes,
                    ps.lower_bound_unshared_bytes);
  wire_free_response(r);
  r = plan_req(&h, t, "share-chain", 1, 2); /* the hot LRU */
  check_reply(r, t, 1, &ps);
  ck_assert_int_eq(r->plan->cached, 1);
  wire_free_response(r);
  ck_assert_int_eq(hn_stop(&h), 0);

  ck_assert_int_eq(hn_start(&h), 0); /* sqlite, verified on the way */
  r = plan_req(&h, t, "share-chain", 1, 3);
  check_reply(r, t, 1, &ps);
  ck_assert_int_eq(r->plan->cached, 1);
  wire_free_response(r);
  r = hn_stats(&h);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->stats->storage_hits, 1);
  ck_assert_uint_eq(r->stats->plans_computed, 0);
  ck_assert_uint_eq(r->stats->storage_corrupt_dropped, 0);
  wire_free_response(r);
  r = list_model(&h, "share-chain");
  ck_assert_uint_eq(r->list->n_entries, 1);
  ck_assert_uint_eq(r->list->entries[0]->shared_pairs, SH_PAIRS);
  ck_assert_uint_eq(r->list->entries[0]->lower_bound_unshared_bytes,
                    ps.lower_bound_unshared_bytes);
  ck_assert_uint_eq(r->list->entries[0]->lower_bound_bytes,
                    ps.lower_bound_bytes);
  wire_free_response(r);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  planner_plan_cleanup(&ps);
  planner_plan_cleanup(&pb);
}
END_TEST

/* With sharing off, the graph with aliases and the graph without are
 * one cache entry, whichever comes first, with the unshared plan. */
START_TEST(test_share_off_is_the_bare_entry)
{
  struct planner_tensor t[SH_N], bare[SH_N];
  share_graph(t, 1);
  share_graph(bare, 0);
  struct planner_plan pb;
  local_plan(bare, 1, &pb);
  ck_assert_uint_eq(pb.n_shared, 0);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  for (int off_first = 0; off_first < 2; off_first++) {
    const char *hash = off_first ? "share-off-first" : "share-bare-first";
    Arenad__V1__Response *a = off_first ? plan_req(&h, t, hash, 0, 1)
                                        : plan_req(&h, bare, hash, 1, 1);
    Arenad__V1__Response *b = off_first ? plan_req(&h, bare, hash, 1, 2)
                                        : plan_req(&h, t, hash, 0, 2);
    check_reply(a, off_first ? t : bare, !off_first, &pb);
    check_reply(b, off_first ? bare : t, off_first, &pb);
    ck_assert_int_eq(a->plan->cached, 0);
    ck_assert_int_eq(b->plan->cached, 1);
    ck_assert_uint_eq(b->plan->shared_pairs, 0);
    ck_assert_uint_eq(a->plan->graph_digest.len, PLANNER_DIGEST_LEN);
    ck_assert_mem_eq(a->plan->graph_digest.data, b->plan->graph_digest.data,
                     PLANNER_DIGEST_LEN);
    ck_assert_mem_eq(a->plan->options_digest.data,
                     b->plan->options_digest.data, PLANNER_DIGEST_LEN);
    uint8_t gd[PLANNER_DIGEST_LEN];
    struct planner_graph bg = {bare, SH_N};
    ck_assert_int_eq(planner_graph_digest(&bg, gd), 0);
    ck_assert_mem_eq(a->plan->graph_digest.data, gd, PLANNER_DIGEST_LEN);
    wire_free_response(a);
    wire_free_response(b);
    Arenad__V1__Response *l = list_model(&h, hash);
    ck_assert_uint_eq(l->list->n_entries, 1);
    ck_assert_uint_eq(l->list->entries[0]->shared_pairs, 0);
    wire_free_response(l);
  }
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  planner_plan_cleanup(&pb);
}
END_TEST

/* Sends t with row 1's alias set to v (and, with short, a column one
 * entry short) on fd, sharing on or off; expects INVALID_ARGUMENT with
 * needle in the message. */
static void expect_bad_alias(int fd, int64_t v, int shorter, int in_place,
                             const char *needle)
{
  struct planner_tensor t[SH_N];
  share_graph(t, 1);
  struct planner_graph g = {t, SH_N};
  struct planner_options o;
  share_options(&o, in_place);
  Arenad__V1__Plan m;
  Arenad__V1__PlanOptions mo;
  ck_assert_int_eq(wire_plan_msg_init(&m, &mo, &g, &o,
                                      (const uint8_t *)"hostile", 7, NULL, 0),
                   0);
  ck_assert_uint_eq(m.n_tensor_alias, SH_N);
  m.tensor_alias[1] = v;
  m.n_tensor_alias -= shorter != 0;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = 5;
  req.body_case = ARENAD__V1__REQUEST__BODY_PLAN;
  req.plan = &m;
  for (int round = 0; round < 2; round++) { /* cold, then again */
    Arenad__V1__Response *r = hn_call(fd, &req, 20000);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->status == ARENAD__V1__STATUS__INVALID_ARGUMENT,
                  "alias %lld: status %d: %s", (long long)v, r->status,
                  r->error);
    ck_assert_uint_eq(r->request_id, 5);
    ck_assert_msg(strstr(r->error, needle) != NULL, "alias %lld: '%s'",
                  (long long)v, r->error);
    wire_free_response(r);
  }
  wire_plan_msg_cleanup(&m);
}

START_TEST(test_share_hostile_aliases)
{
  struct planner_tensor t[SH_N];
  share_graph(t, 1);
  struct planner_plan ps;
  local_plan(t, 1, &ps);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  /* a good request first, so that the hot LRU holds this graph */
  Arenad__V1__Response *r = plan_req(&h, t, "hostile", 1, 1);
  check_reply(r, t, 1, &ps);
  wire_free_response(r);
  int fd = hn_connect(&h);
  ck_assert_int_ge(fd, 0);
  for (int in_place = 1; in_place >= 0; in_place--) {
    expect_bad_alias(fd, 99, 0, in_place, "not in the graph");
    expect_bad_alias(fd, 11, 0, in_place, "itself"); /* row 1 is id 11 */
    expect_bad_alias(fd, (int64_t)UINT32_MAX + 1, 0, in_place,
                     "neither -1 nor a tensor id");
    expect_bad_alias(fd, -2, 0, in_place, "neither -1 nor a tensor id");
    expect_bad_alias(fd, INT64_MIN, 0, in_place, "neither -1");
    expect_bad_alias(fd, 10, 1, in_place, "differ in length");
  }
  /* the same connection and new ones are still served */
  Arenad__V1__Response *p = hn_ping(fd, 9, 5000);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(p->status, ARENAD__V1__STATUS__OK);
  wire_free_response(p);
  close(fd);
  r = plan_req(&h, t, "hostile", 1, 2);
  check_reply(r, t, 1, &ps);
  ck_assert_int_eq(r->plan->cached, 1);
  wire_free_response(r);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  planner_plan_cleanup(&ps);
}
END_TEST

void cd_add_share_tests(TCase *tc)
{
  tcase_add_test(tc, test_share_chain);
  tcase_add_test(tc, test_share_off_is_the_bare_entry);
  tcase_add_test(tc, test_share_hostile_aliases);
}

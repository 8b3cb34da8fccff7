/*
 * check_service_place.c - placement records through a real daemon and
 * the client library: arenad_client_attach() stores one beside a plan,
 * arenad_client_fetch() takes the plan back by key with its graph and
 * record, chooses by options and prefix, survives a restart, and refuses
 * what does not verify; a record exported by one daemon and preloaded
 * into another is fetched there; malformed Attach requests get
 * INVALID_ARGUMENT and leave the connection open.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arenad_client.h"
#include "check_service.h"
#include "daemon_harness.h"
#include "testutil.h"
#include "wire.h"

static arenad_client_t *client_of(const struct harness *h)
{
  struct arenad_client_options o;
  arenad_client_options_init(&o);
  o.socket_path = h->sock;
  o.fallback = 0;
  arenad_client_t *c = NULL;
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  return c;
}

/* The tensor of g with id, or NULL. */
static const struct planner_tensor *by_id(const struct planner_graph *g,
                                          uint32_t id)
{
  for (size_t i = 0; i < g->n_tensors; i++)
    if (g->tensors[i].id == id)
      return &g->tensors[i];
  return NULL;
}

START_TEST(test_fetch_by_key)
{
  struct harness h;
  struct hn_graph a;
  hn_random_graph(&a, 80, 7);
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  arenad_client_t *c = client_of(&h);
  struct planner_options o;
  planner_options_init(&o);
  const int64_t dims[] = {1, 96, 96, 3};
  struct arenad_dims in = {dims, 4};
  struct arenad_model_key k = {(const uint8_t *)"place-model", 11, &in, 1};
  struct planner_graph g = {a.t, a.n};
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  ck_assert_int_eq(arenad_client_plan(c, &g, &o, &k, &r), 0);

  struct arenad_client_fetched f;
  arenad_client_fetched_init(&f);
  /* planned, but no record yet: nothing to fetch */
  ck_assert_int_eq(arenad_client_fetch(c, &k, &o, NULL, 0, &f), ARENA_ENOENT);

  const char rec[] = "tag-1 what placing needs";
  ck_assert_int_eq(arenad_client_attach(c, &k, r.graph_digest,
                                        r.options_digest, rec, sizeof rec),
                   0);
  ck_assert_int_eq(arenad_client_fetch(c, &k, &o, (const uint8_t *)"tag-1",
                                       5, &f),
                   0);
  ck_assert_uint_eq(f.placement_len, sizeof rec);
  ck_assert_mem_eq(f.placement, rec, sizeof rec);
  ck_assert_int_eq(f.result.cached, 1);
  ck_assert_mem_eq(f.result.graph_digest, r.graph_digest, 32);
  ck_assert_uint_eq(f.result.plan.arena_bytes, r.plan.arena_bytes);
  /* the same graph, in ascending id order, each tensor at its offset */
  ck_assert_uint_eq(f.graph.n_tensors, g.n_tensors);
  for (size_t i = 0; i < f.graph.n_tensors; i++) {
    const struct planner_tensor *t = &f.graph.tensors[i];
    if (i)
      ck_assert_uint_lt(f.graph.tensors[i - 1].id, t->id);
    const struct planner_tensor *u = by_id(&g, t->id);
    ck_assert_ptr_nonnull(u);
    ck_assert_uint_eq(t->size, u->size);
    ck_assert_int_eq(t->first, u->first);
    ck_assert_int_eq(t->last, u->last);
    ck_assert_uint_eq(f.result.plan.offsets[i],
                      r.plan.offsets[(size_t)(u - g.tensors)]);
  }
  ck_assert_int_eq(planner_verify(&f.graph, &o, &f.result.plan, NULL), 0);

  /* another prefix, other options, another shape: nothing */
  ck_assert_int_eq(arenad_client_fetch(c, &k, &o, (const uint8_t *)"tag-2",
                                       5, &f),
                   ARENA_ENOENT);
  ck_assert_ptr_null(f.placement);
  struct planner_options o2 = o;
  o2.alignment = 128;
  ck_assert_int_eq(arenad_client_fetch(c, &k, &o2, NULL, 0, &f),
                   ARENA_ENOENT);
  const int64_t dims2[] = {1, 128, 128, 3};
  struct arenad_dims in2 = {dims2, 4};
  struct arenad_model_key k2 = {(const uint8_t *)"place-model", 11, &in2, 1};
  ck_assert_int_eq(arenad_client_fetch(c, &k2, &o, NULL, 0, &f),
                   ARENA_ENOENT);
  ck_assert_int_eq(arenad_client_attach(c, &k2, r.graph_digest,
                                        r.options_digest, rec, sizeof rec),
                   ARENA_ENOENT);
  /* bad arguments never reach the daemon */
  ck_assert_int_eq(arenad_client_attach(c, &k, r.graph_digest,
                                        r.options_digest, rec, 0),
                   ARENA_EINVAL);
  static char big[ARENAD_CLIENT_MAX_PLACEMENT + 1];
  ck_assert_int_eq(arenad_client_attach(c, &k, r.graph_digest,
                                        r.options_digest, big, sizeof big),
                   ARENA_EINVAL);

  /* a restarted daemon still serves it, from its database */
  arenad_client_close(c);
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  c = client_of(&h);
  ck_assert_int_eq(arenad_client_fetch(c, &k, &o, (const uint8_t *)"tag-1",
                                       5, &f),
                   0);
  ck_assert_mem_eq(f.placement, rec, sizeof rec);
  ck_assert_int_eq(planner_verify(&f.graph, &o, &f.result.plan, NULL), 0);
  arenad_client_fetched_cleanup(&f);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&a);
}
END_TEST

/* A placement record travels with its plan: exported by one daemon,
 * preloaded into another, fetched there. */
START_TEST(test_record_exported_and_preloaded)
{
  struct harness a, b;
  struct hn_graph g0;
  hn_random_graph(&g0, 60, 11);
  ck_assert_int_eq(hn_init(&a, NULL), 0);
  ck_assert_int_eq(hn_start(&a), 0);
  ck_assert_int_eq(hn_init(&b, NULL), 0);
  ck_assert_int_eq(hn_start(&b), 0);
  arenad_client_t *c = client_of(&a);
  struct planner_options o;
  planner_options_init(&o);
  struct arenad_model_key k = {(const uint8_t *)"travel", 6, NULL, 0};
  struct planner_graph g = {g0.t, g0.n};
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  ck_assert_int_eq(arenad_client_plan(c, &g, &o, &k, &r), 0);
  const char rec[] = "tag-9 record that travels";
  ck_assert_int_eq(arenad_client_attach(c, &k, r.graph_digest,
                                        r.options_digest, rec, sizeof rec),
                   0);
  arenad_client_close(c);

  int fa = hn_connect(&a), fb = hn_connect(&b);
  ck_assert_int_ge(fa, 0);
  ck_assert_int_ge(fb, 0);
  Arenad__V1__Export ex = ARENAD__V1__EXPORT__INIT;
  Arenad__V1__Request q = ARENAD__V1__REQUEST__INIT;
  q.protocol_version = 1;
  q.request_id = 1;
  q.body_case = ARENAD__V1__REQUEST__BODY_EXPORT_PLANS;
  q.export_plans = &ex;
  Arenad__V1__Response *er = hn_call(fa, &q, 10000);
  ck_assert_ptr_nonnull(er);
  ck_assert_int_eq(er->status, ARENAD__V1__STATUS__OK);
  ck_assert_uint_eq(er->exported->n_entries, 1);
  ck_assert_uint_eq(er->exported->entries[0]->placement.len, sizeof rec);
  Arenad__V1__Preload pl = ARENAD__V1__PRELOAD__INIT;
  pl.entries = er->exported->entries;
  pl.n_entries = er->exported->n_entries;
  q.request_id = 2;
  q.body_case = ARENAD__V1__REQUEST__BODY_PRELOAD_PLANS;
  q.preload_plans = &pl;
  Arenad__V1__Response *pr = hn_call(fb, &q, 10000);
  ck_assert_ptr_nonnull(pr);
  ck_assert_msg(pr->status == ARENAD__V1__STATUS__OK, "%s", pr->error);
  ck_assert_uint_eq(pr->preloaded->stored, 1);
  wire_free_response(pr);
  wire_free_response(er);
  close(fa);
  close(fb);

  c = client_of(&b);
  struct arenad_client_fetched f;
  arenad_client_fetched_init(&f);
  ck_assert_msg(arenad_client_fetch(c, &k, &o, (const uint8_t *)"tag-9", 5,
                                    &f) == 0,
                "%s", arenad_client_errmsg(c));
  ck_assert_mem_eq(f.placement, rec, sizeof rec);
  ck_assert_uint_eq(f.result.plan.arena_bytes, r.plan.arena_bytes);
  arenad_client_fetched_cleanup(&f);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
  ck_assert_int_eq(hn_stop(&a), 0);
  ck_assert_int_eq(hn_stop(&b), 0);
  hn_cleanup(&a);
  hn_cleanup(&b);
  hn_graph_free(&g0);
}
END_TEST

/* Malformed Attach requests: INVALID_ARGUMENT, the connection stays. */
START_TEST(test_attach_malformed)
{
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  int fd = hn_connect(&h);
  ck_assert_int_ge(fd, 0);
  uint8_t d[32] = {0};
  static uint8_t big[4097];
  struct {
    size_t hash_len, gd_len, od_len, rec_len;
  } bad[] = {{0, 32, 32, 8}, {65, 32, 32, 8}, {4, 31, 32, 8},
             {4, 32, 0, 8},  {4, 32, 32, 0},  {4, 32, 32, 4097}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    Arenad__V1__Attach am = ARENAD__V1__ATTACH__INIT;
    Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
    uint8_t hash[65] = {0};
    am.model_hash.data = hash;
    am.model_hash.len = bad[i].hash_len;
    am.graph_digest.data = d;
    am.graph_digest.len = bad[i].gd_len;
    am.options_digest.data = d;
    am.options_digest.len = bad[i].od_len;
    am.placement.data = big;
    am.placement.len = bad[i].rec_len;
    req.protocol_version = 1;
    req.request_id = 10 + i;
    req.body_case = ARENAD__V1__REQUEST__BODY_ATTACH;
    req.attach = &am;
    Arenad__V1__Response *r = hn_call(fd, &req, 5000);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->status, ARENAD__V1__STATUS__INVALID_ARGUMENT);
    wire_free_response(r);
  }
  Arenad__V1__Response *p = hn_ping(fd, 99, 5000);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(p->status, ARENAD__V1__STATUS__OK);
  wire_free_response(p);
  close(fd);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

void service_add_place(TCase *tc)
{
  tcase_add_test(tc, test_fetch_by_key);
  tcase_add_test(tc, test_attach_malformed);
  tcase_add_test(tc, test_record_exported_and_preloaded);
}

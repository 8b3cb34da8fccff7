/*
 * check_client_fake.c - the "fake-daemon" case of the client suite: the
 * client library against the fake daemon of check_client_harness.c.
 *
 * Checks that verified plans come back over one reused connection, that
 * the client reconnects after the daemon drops it, skips stale replies,
 * rejects wrong, foreign, short and malformed plans, maps every status
 * to its documented code, times out on silence, falls back to local
 * planning when allowed, and maps looked-up plans back to the caller's
 * tensor order.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_client.h"
#include "digest.h"

/* ---- a well-behaved daemon ---------------------------------------------- */

START_TEST(good_plan_and_connection_reuse)
{
  ct_fake_start1(M_GOOD);
  arenad_client_t *c = ct_open_client(0, 5000);
  struct arenad_client_result r;
  struct planner_plan p;
  arenad_client_result_init(&r);
  ct_local_plan(&p);
  for (int round = 0; round < 3; round++) {
    ck_assert_msg(arenad_client_plan(c, &ct_graph, NULL, &ct_key, &r) ==
                      0,
                  "%s", arenad_client_errmsg(c));
    ck_assert_int_eq(r.local, 0);
    ck_assert_int_eq(r.cached, 1);
    ck_assert_uint_eq(r.planning_us, 777);
    ct_assert_good_result(&r);
    for (size_t i = 0; i < CT_TG_N; i++)
      ck_assert_uint_eq(r.plan.offsets[i], p.offsets[i]);
  }
  ck_assert_int_eq(ct_fk.conns, 1);
  ck_assert_int_eq(ct_fk.requests, 3);
  ck_assert_int_eq(ct_fk.last_version, 1);

  /* A raw ping on the same connection. */
  Arenad__V1__Ping ping = ARENAD__V1__PING__INIT;
  ping.payload.data = (uint8_t *)"hello";
  ping.payload.len = 5;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.body_case = ARENAD__V1__REQUEST__BODY_PING;
  req.ping = &ping;
  Arenad__V1__Response *resp = NULL;
  ck_assert_int_eq(arenad_client__call(c, &req, &resp), 0);
  ck_assert_uint_eq(resp->request_id, req.request_id);
  ck_assert_int_eq(arenad_client__check_status(c, resp, "ping"), 0);
  ck_assert_int_eq(resp->body_case, ARENAD__V1__RESPONSE__BODY_PONG);
  ck_assert_uint_eq(resp->pong->payload.len, 5);
  ck_assert_int_eq(memcmp(resp->pong->payload.data, "hello", 5), 0);
  ck_assert_str_eq(resp->pong->version, "fake-1");
  wire_free_response(resp);
  ck_assert_int_eq(ct_fk.conns, 1);

  planner_plan_cleanup(&p);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

/* The daemon closes an idle connection between two calls: the second
 * call notices and retries once on a new connection. */
START_TEST(reconnect_after_idle_close)
{
  enum ct_mode m[] = {M_ONE_THEN_CLOSE, M_GOOD};
  ct_fake_start(2, m);
  arenad_client_t *c = ct_open_client(0, 5000);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  ck_assert_int_eq(arenad_client_plan(c, &ct_graph, NULL, &ct_key, &r),
                   0);
  /* Let the fake close its end before the next call. */
  for (int i = 0; i < 2000 && ct_fk.closed < 1; i++) {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  ck_assert_int_eq(ct_fk.closed, 1);
  ck_assert_msg(arenad_client_plan(c, &ct_graph, NULL, &ct_key, &r) == 0,
                "%s", arenad_client_errmsg(c));
  ck_assert_int_eq(r.local, 0);
  ck_assert_int_eq(ct_fk.conns, 2);
  ct_assert_good_result(&r);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

START_TEST(stale_reply_skipped)
{
  ct_fake_start1(M_STALE_FIRST);
  struct arenad_client_result r;
  char msg[600];
  ck_assert_msg(ct_plan_once(0, 5000, &r, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_int_eq(r.local, 0);
  ct_assert_good_result(&r);
  arenad_client_result_cleanup(&r);
}
END_TEST

/* ---- a misbehaving daemon ----------------------------------------------- */

/* Modes whose plan must be rejected, the code, and a word of the text. */
static const struct {
  enum ct_mode m;
  int code;
  const char *needle;
} bad_plans[] = {
    {M_WRONG_PLAN, ARENA_EVERIFY, "verification"},
    {M_OTHER_DIGEST, ARENA_EVERIFY, "another graph"},
    {M_SHORT_PLAN, ARENA_EVERIFY, "offsets"},
    {M_GARBAGE, ARENA_EPROTO, "malformed"},
    {M_ZERO_FRAME, ARENA_EPROTO, "malformed"},
    {M_CLOSE_MID, ARENA_EPROTO, "middle of a reply"},
    {M_CLOSE_NOREPLY, ARENA_EUNAVAIL, "closed the connection"},
    {M_NO_BODY, ARENA_EPROTO, "without a plan"},
};

START_TEST(bad_plan_rejected)
{
  ct_fake_start1(bad_plans[_i].m);
  struct arenad_client_result r;
  char msg[600];
  int rc = ct_plan_once(0, 5000, &r, msg, sizeof msg);
  ck_assert_msg(rc == bad_plans[_i].code, "mode %d: %s (%s)", _i,
                arena_err_name(rc), msg);
  ck_assert_msg(strstr(msg, bad_plans[_i].needle) != NULL, "mode %d: %s", _i,
                msg);
  ct_assert_empty_result(&r);
}
END_TEST

START_TEST(bad_plan_falls_back)
{
  ct_fake_start1(bad_plans[_i].m);
  struct arenad_client_result r;
  char msg[600];
  ck_assert_int_eq(ct_plan_once(1, 5000, &r, msg, sizeof msg), 0);
  ck_assert_int_eq(r.local, 1);
  ck_assert_int_eq(r.cached, 0);
  ck_assert_int_eq(r.fallback_reason, bad_plans[_i].code);
  ck_assert_msg(strstr(msg, "planned locally") != NULL, "%s", msg);
  ct_assert_good_result(&r);
  arenad_client_result_cleanup(&r);
}
END_TEST

/* Statuses, sent both as a connection-level refusal (request id 0, then
 * close) and as the answer to the request. */
static const struct {
  Arenad__V1__Status s;
  int code;
} statuses[] = {
    {ARENAD__V1__STATUS__BUSY, ARENA_EBUSY},
    {ARENAD__V1__STATUS__DENIED, ARENA_EDENIED},
    {ARENAD__V1__STATUS__UNSUPPORTED_VERSION, ARENA_EVERSION},
    {ARENAD__V1__STATUS__TOO_LARGE, ARENA_ETOOBIG},
    {ARENAD__V1__STATUS__INVALID_ARGUMENT, ARENA_EINVAL},
    {ARENAD__V1__STATUS__NOT_FOUND, ARENA_ENOENT},
    {ARENAD__V1__STATUS__INTERNAL, ARENA_EINTERNAL},
};
#define N_STATUSES (sizeof statuses / sizeof statuses[0])

START_TEST(status_replies)
{
  int refuse = _i >= (int)N_STATUSES;
  int k = _i % (int)N_STATUSES;
  ct_fk.status = statuses[k].s;
  ct_fake_start1(refuse ? M_REFUSE : M_STATUS);
  struct arenad_client_result r;
  char msg[600];
  int rc = ct_plan_once(0, 5000, &r, msg, sizeof msg);
  ck_assert_msg(rc == statuses[k].code, "%s: got %s (%s)",
                wire_status_name(statuses[k].s), arena_err_name(rc), msg);
  ck_assert_msg(strstr(msg, wire_status_name(statuses[k].s)) != NULL, "%s",
                msg);
  ck_assert_msg(strstr(msg, refuse ? "refused by the fake" : "fake says no"),
                "%s", msg);
  /* The daemon's text reaches the caller without control characters. */
  ck_assert_ptr_null(strchr(msg, '\033'));
  ck_assert_ptr_null(strchr(msg, '\n'));
  ct_assert_empty_result(&r);
}
END_TEST

START_TEST(busy_falls_back)
{
  enum ct_mode m[] = {M_REFUSE, M_STATUS};
  ct_fk.status = ARENAD__V1__STATUS__BUSY;
  ct_fake_start(2, m);
  arenad_client_t *c = ct_open_client(1, 5000);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(arenad_client_plan(c, &ct_graph, NULL, &ct_key, &r),
                     0);
    ck_assert_int_eq(r.local, 1);
    ck_assert_int_eq(r.fallback_reason, ARENA_EBUSY);
    ck_assert_ptr_nonnull(strstr(arenad_client_errmsg(c), "BUSY"));
    ct_assert_good_result(&r);
  }
  ck_assert_int_eq(ct_fk.conns, 2);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

/* A daemon that never answers: ETIMEDOUT after the request timeout, the
 * connection is dropped, and the next call reconnects. */
START_TEST(silent_daemon_times_out)
{
  enum ct_mode m[] = {M_SILENT, M_GOOD};
  ct_fake_start(2, m);
  arenad_client_t *c = ct_open_client(0, 300);
  struct arenad_client_result r;
  struct timespec t0, t1;
  arenad_client_result_init(&r);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = arenad_client_plan(c, &ct_graph, NULL, &ct_key, &r);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  ck_assert_msg(rc == ARENA_ETIMEDOUT, "%s: %s", arena_err_name(rc),
                arenad_client_errmsg(c));
  ck_assert_ptr_nonnull(strstr(arenad_client_errmsg(c), "300 ms"));
  /* It returned; the bound is loose on purpose (slow CI machines). */
  ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 20);
  ct_assert_empty_result(&r);
  ck_assert_msg(arenad_client_plan(c, &ct_graph, NULL, &ct_key, &r) == 0,
                "%s", arenad_client_errmsg(c));
  ck_assert_int_eq(r.local, 0);
  ck_assert_int_eq(ct_fk.conns, 2);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

START_TEST(silent_daemon_falls_back)
{
  ct_fake_start1(M_SILENT);
  struct arenad_client_result r;
  char msg[600];
  ck_assert_int_eq(ct_plan_once(1, 200, &r, msg, sizeof msg), 0);
  ck_assert_int_eq(r.local, 1);
  ck_assert_int_eq(r.fallback_reason, ARENA_ETIMEDOUT);
  ct_assert_good_result(&r);
  arenad_client_result_cleanup(&r);
}
END_TEST

/* ---- lookup ------------------------------------------------------------- */

START_TEST(lookup_maps_canonical_order)
{
  ct_fake_start1(M_LOOKUP);
  arenad_client_t *c = ct_open_client(0, 5000);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  ck_assert_msg(arenad_client_lookup(c, &ct_key, &ct_graph, NULL, &r) ==
                    0,
                "%s", arenad_client_errmsg(c));
  ck_assert_int_eq(ct_fk.lookup_digest_len, PLANNER_DIGEST_LEN);
  ck_assert_int_eq(r.cached, 1);
  ck_assert_int_eq(r.local, 0);
  ct_assert_good_result(&r);

  /* Expected: plan the sorted graph, then put each offset back at its
   * tensor's position in the caller's order. */
  struct planner_tensor *st = ct_sorted_copy(&ct_graph);
  struct planner_graph sg = {st, CT_TG_N};
  struct planner_options o;
  struct planner_plan p;
  planner_options_init(&o);
  planner_plan_init(&p);
  ck_assert_int_eq(planner_run(&sg, &o, &p, NULL), 0);
  for (size_t k = 0; k < CT_TG_N; k++)
    for (size_t i = 0; i < CT_TG_N; i++)
      if (ct_tg[i].id == st[k].id)
        ck_assert_uint_eq(r.plan.offsets[i], p.offsets[k]);
  planner_plan_cleanup(&p);
  free(st);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

START_TEST(lookup_rejections)
{
  enum ct_mode m[] = {M_LOOKUP_DECOY, M_LOOKUP_WRONG, M_STATUS, M_LOOKUP};
  ct_fk.status = ARENAD__V1__STATUS__NOT_FOUND;
  ct_fake_start(4, m);
  struct arenad_client_result r;
  arenad_client_result_init(&r);

  arenad_client_t *c = ct_open_client(1, 5000);
  ck_assert_int_eq(arenad_client_lookup(c, &ct_key, &ct_graph, NULL, &r),
                   ARENA_ENOENT);
  ck_assert_ptr_nonnull(strstr(arenad_client_errmsg(c), "none for this"));
  arenad_client_close(c);

  c = ct_open_client(1, 5000);
  ck_assert_int_eq(arenad_client_lookup(c, &ct_key, &ct_graph, NULL, &r),
                   ARENA_EVERIFY);
  ct_assert_empty_result(&r);
  arenad_client_close(c);

  c = ct_open_client(1, 5000);
  ck_assert_int_eq(arenad_client_lookup(c, &ct_key, &ct_graph, NULL, &r),
                   ARENA_ENOENT);
  ck_assert_ptr_nonnull(strstr(arenad_client_errmsg(c), "NOT_FOUND"));
  arenad_client_close(c);

  /* Other options than the stored plan's: its options digest differs. */
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = 16;
  c = ct_open_client(1, 5000);
  ck_assert_int_eq(arenad_client_lookup(c, &ct_key, &ct_graph, &o, &r),
                   ARENA_ENOENT);
  arenad_client_close(c);
  ct_assert_empty_result(&r);
}
END_TEST

/* arenad_client_fetch against a fake daemon: the entry whose record has
 * the prefix, verified; a plan that overlaps or a graph that is not the
 * one its digest names refused with ARENA_EVERIFY. */
START_TEST(fetch_checks_what_it_gets)
{
  enum ct_mode m[] = {M_LOOKUP, M_LOOKUP_WRONG, M_LOOKUP_DECOY, M_LOOKUP};
  ct_fake_start(4, m);
  struct arenad_client_fetched f;
  arenad_client_fetched_init(&f);
  const uint8_t *pre = (const uint8_t *)"rec-1";
  arenad_client_t *c = ct_open_client(0, 5000);
  ck_assert_msg(arenad_client_fetch(c, &ct_key, NULL, pre, 5, &f) == 0, "%s",
                arenad_client_errmsg(c));
  ck_assert_str_eq((const char *)f.placement, "rec-1 the right one");
  ck_assert_uint_eq(f.graph.n_tensors, CT_TG_N);
  struct planner_options o;
  planner_options_init(&o);
  ck_assert_int_eq(planner_verify(&f.graph, &o, &f.result.plan, NULL), 0);
  arenad_client_close(c);
  for (int i = 0; i < 2; i++) {
    c = ct_open_client(0, 5000);
    ck_assert_int_eq(arenad_client_fetch(c, &ct_key, NULL, pre, 5, &f),
                     ARENA_EVERIFY);
    ck_assert_ptr_null(f.placement);
    ck_assert_ptr_null(f.graph.tensors);
    arenad_client_close(c);
  }
  /* no record with this prefix */
  c = ct_open_client(1, 5000);
  ck_assert_int_eq(arenad_client_fetch(c, &ct_key, NULL,
                                       (const uint8_t *)"rec-2", 5, &f),
                   ARENA_ENOENT);
  arenad_client_close(c);
  arenad_client_fetched_cleanup(&f);
}
END_TEST

void client_add_fake_daemon(TCase *tc)
{
  tcase_add_test(tc, fetch_checks_what_it_gets);
  tcase_add_test(tc, good_plan_and_connection_reuse);
  tcase_add_test(tc, reconnect_after_idle_close);
  tcase_add_test(tc, stale_reply_skipped);
  tcase_add_loop_test(tc, bad_plan_rejected, 0,
                      (int)(sizeof bad_plans / sizeof bad_plans[0]));
  tcase_add_loop_test(tc, bad_plan_falls_back, 0,
                      (int)(sizeof bad_plans / sizeof bad_plans[0]));
  tcase_add_loop_test(tc, status_replies, 0, 2 * (int)N_STATUSES);
  tcase_add_test(tc, busy_falls_back);
  tcase_add_test(tc, silent_daemon_times_out);
  tcase_add_test(tc, silent_daemon_falls_back);
  tcase_add_test(tc, lookup_maps_canonical_order);
  tcase_add_test(tc, lookup_rejections);
}

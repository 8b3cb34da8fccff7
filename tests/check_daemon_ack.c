/*
 * check_daemon_ack.c - the daemon acknowledges accepted work: a request
 * that asks with want_ack and becomes a planning or storage job is told
 * with an Accepted response before its reply, so that a client can tell
 * a daemon at work from one that does not answer; a request answered at
 * once (a hot hit, a refusal, a ping) and one that does not ask (every
 * older client) gets its reply alone.
 */
#include <check.h>
#include <stdlib.h>
#include <unistd.h>

#include "check_daemon.h"
#include "wire.h"

/* Sends a Plan of g under model hash `hash` with want_ack as given. */
static void send_plan(int fd, const struct hn_graph *g, const char *hash,
                      uint64_t rid, int want_ack)
{
  size_t len;
  uint8_t *buf = hn_plan_frame(rid, g, hash, PLANNER_ALGO_BEST, 64, 0, &len);
  ck_assert_ptr_nonnull(buf);
  Arenad__V1__Request *req = NULL;
  ck_assert_int_eq(wire_unpack_request(buf + 4, len - 4, 0, &req), 0);
  free(buf);
  req->want_ack = want_ack != 0;
  ck_assert_int_eq(hn_send(fd, req), 0);
  wire_free_request(req);
}

/* Reads the next response; it must be an Accepted for rid. */
static void expect_ack(int fd, uint64_t rid)
{
  Arenad__V1__Response *r = hn_recv(fd, 20000);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->request_id, rid);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  ck_assert_int_eq(r->body_case, ARENAD__V1__RESPONSE__BODY_ACCEPTED);
  wire_free_response(r);
}

/* Reads the next response; it must be rid's reply with body `body`
 * (a plan reply is also checked against g). */
static void expect_reply(int fd, uint64_t rid, int body,
                         const struct hn_graph *g)
{
  Arenad__V1__Response *r = hn_recv(fd, 20000);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->request_id, rid);
  ck_assert_int_eq(r->body_case, body);
  if (g)
    cd_check_plan_reply(r, g, rid);
  wire_free_response(r);
}

/* Sends a ping and reads the next response, which must be its pong: so
 * nothing else was sent in between. */
static void expect_nothing_before_pong(int fd, uint64_t rid)
{
  Arenad__V1__Response *r = hn_ping(fd, rid, 20000);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->request_id, rid);
  ck_assert_int_eq(r->body_case, ARENAD__V1__RESPONSE__BODY_PONG);
  wire_free_response(r);
}

START_TEST(test_ack_plan_and_storage_jobs)
{
  struct harness h;
  struct hn_graph a, b;
  hn_random_graph(&a, 60, 11);
  hn_random_graph(&b, 60, 12);
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  int fd = hn_connect(&h);
  ck_assert_int_ge(fd, 0);

  /* A miss becomes a job: Accepted first, then the plan. */
  send_plan(fd, &a, "ack-a", 1, 1);
  expect_ack(fd, 1);
  expect_reply(fd, 1, ARENAD__V1__RESPONSE__BODY_PLAN, &a);

  /* The same request again is a hot hit, answered at once: no Accepted. */
  send_plan(fd, &a, "ack-a", 2, 1);
  expect_reply(fd, 2, ARENAD__V1__RESPONSE__BODY_PLAN, &a);
  expect_nothing_before_pong(fd, 3);

  /* A miss that does not ask, as every older client: the reply alone. */
  send_plan(fd, &b, "ack-b", 4, 0);
  expect_reply(fd, 4, ARENAD__V1__RESPONSE__BODY_PLAN, &b);
  expect_nothing_before_pong(fd, 5);

  /* A storage request is a job too. */
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Stats st = ARENAD__V1__STATS__INIT;
  req.protocol_version = 1;
  req.request_id = 6;
  req.want_ack = 1;
  req.body_case = ARENAD__V1__REQUEST__BODY_STATS;
  req.stats = &st;
  ck_assert_int_eq(hn_send(fd, &req), 0);
  expect_ack(fd, 6);
  expect_reply(fd, 6, ARENAD__V1__RESPONSE__BODY_STATS, NULL);

  /* A plan refused before it becomes a job: the refusal alone. */
  struct hn_graph none = {a.t, 0};
  send_plan(fd, &none, "ack-none", 7, 1);
  Arenad__V1__Response *r = hn_recv(fd, 20000);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->request_id, 7);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__INVALID_ARGUMENT);
  wire_free_response(r);
  expect_nothing_before_pong(fd, 8);

  close(fd);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&a);
  hn_graph_free(&b);
}
END_TEST

void cd_add_ack_tests(TCase *tc)
{
  tcase_add_test(tc, test_ack_plan_and_storage_jobs);
}

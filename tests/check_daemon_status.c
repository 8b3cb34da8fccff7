/*
 * check_daemon_status.c - the status a real arenad gives a malformed
 * request is the one docs/protocol.md documents, whatever the kind of
 * request: an unknown List order, an input shape of more than 1024
 * inputs or of a rank over 32 (Plan and Lookup alike), a pinned offset
 * below -1 (reported as sent). Each is answered on its connection,
 * which stays open.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check_daemon.h"
#include "wire.h"
#include "wire_plan.h"

/* Sends req on a new connection, returns the reply (owned), and checks
 * that the connection still answers a Ping. */
static Arenad__V1__Response *call_once(const struct harness *h,
                                       const Arenad__V1__Request *req)
{
  int fd = hn_connect(h);
  ck_assert_int_ge(fd, 0);
  Arenad__V1__Response *r = hn_call(fd, req, 20000);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->request_id, req->request_id);
  Arenad__V1__Response *pong = hn_ping(fd, req->request_id + 1, 5000);
  ck_assert_ptr_nonnull(pong);
  ck_assert_int_eq(pong->status, ARENAD__V1__STATUS__OK);
  wire_free_response(pong);
  close(fd);
  return r;
}

static void expect(Arenad__V1__Response *r, Arenad__V1__Status want,
                   const char *msg)
{
  ck_assert_msg((int)r->status == (int)want, "status %d, want %d: %s",
                (int)r->status, (int)want, r->error);
  if (msg)
    ck_assert_msg(strstr(r->error, msg) != NULL, "error '%s'", r->error);
  wire_free_response(r);
}

/* A List request with the given order. */
static Arenad__V1__Response *list_with(const struct harness *h, int order)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__List li = ARENAD__V1__LIST__INIT;
  li.order = (Arenad__V1__ListOrder)order;
  req.protocol_version = 1;
  req.request_id = 11;
  req.body_case = ARENAD__V1__REQUEST__BODY_LIST;
  req.list = &li;
  return call_once(h, &req);
}

START_TEST(list_unknown_order_invalid)
{
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  expect(list_with(&h, ARENAD__V1__LIST_ORDER__NEWEST),
         ARENAD__V1__STATUS__OK, NULL);
  expect(list_with(&h, ARENAD__V1__LIST_ORDER__MOST_USED),
         ARENAD__V1__STATUS__OK, NULL);
  expect(list_with(&h, 2), ARENAD__V1__STATUS__INVALID_ARGUMENT,
         "unknown list order 2");
  /* 2^32 - 1 on the wire, said as such. */
  expect(list_with(&h, -1), ARENAD__V1__STATUS__INVALID_ARGUMENT,
         "unknown list order 4294967295");
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* An input shape of n_inputs inputs of `rank` dims of 1 each, in dims
 * (room for n_inputs pointers) over storage d and v. */
static void make_shape(Arenad__V1__Dims **dims, Arenad__V1__Dims *d,
                       int64_t *v, size_t n_inputs, size_t rank)
{
  for (size_t k = 0; k < rank; k++)
    v[k] = 1;
  arenad__v1__dims__init(d);
  d->dims = v;
  d->n_dims = rank;
  for (size_t i = 0; i < n_inputs; i++)
    dims[i] = d;
}

/* Sends a Plan of a small graph and a Lookup under the shape, and
 * returns their statuses with the Plan's error text in msg. */
static void plan_and_lookup(const struct harness *h, Arenad__V1__Dims **dims,
                            size_t n_inputs, Arenad__V1__Status st[2],
                            char *msg, size_t cap)
{
  static const uint8_t hash[] = {0xab, 0xcd};
  struct planner_tensor t[2] = {
      {1, 100, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
      {2, 200, 1, 2, 0, PLANNER_NOT_PINNED, 0, 0},
  };
  struct planner_graph g = {t, 2};
  struct planner_options o;
  planner_options_init(&o);
  Arenad__V1__Plan pm;
  Arenad__V1__PlanOptions mo;
  ck_assert_int_eq(wire_plan_msg_init(&pm, &mo, &g, &o, hash, sizeof hash,
                                      dims, n_inputs),
                   0);
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = 1;
  req.request_id = 21;
  req.body_case = ARENAD__V1__REQUEST__BODY_PLAN;
  req.plan = &pm;
  Arenad__V1__Response *r = call_once(h, &req);
  st[0] = r->status;
  snprintf(msg, cap, "%s", r->error);
  wire_free_response(r);
  wire_plan_msg_cleanup(&pm);

  Arenad__V1__Lookup lk = ARENAD__V1__LOOKUP__INIT;
  lk.model_hash.data = (uint8_t *)hash;
  lk.model_hash.len = sizeof hash;
  lk.input_shape = dims;
  lk.n_input_shape = n_inputs;
  req.request_id = 31;
  req.body_case = ARENAD__V1__REQUEST__BODY_LOOKUP;
  req.lookup = &lk;
  r = call_once(h, &req);
  st[1] = r->status;
  wire_free_response(r);
}

START_TEST(shape_limits_same_status)
{
  static Arenad__V1__Dims *dims[WIRE_MAX_INPUTS + 1];
  Arenad__V1__Dims d;
  int64_t v[WIRE_MAX_RANK + 1];
  Arenad__V1__Status st[2];
  char msg[ARENA_ERR_LEN];
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  /* at the limits: planned, then found */
  make_shape(dims, &d, v, WIRE_MAX_INPUTS, WIRE_MAX_RANK);
  plan_and_lookup(&h, dims, WIRE_MAX_INPUTS, st, msg, sizeof msg);
  ck_assert_msg(st[0] == ARENAD__V1__STATUS__OK, "plan: %d %s", st[0], msg);
  ck_assert_int_eq(st[1], ARENAD__V1__STATUS__OK);
  /* 1025 inputs */
  make_shape(dims, &d, v, WIRE_MAX_INPUTS + 1, 1);
  plan_and_lookup(&h, dims, WIRE_MAX_INPUTS + 1, st, msg, sizeof msg);
  ck_assert_int_eq(st[0], ARENAD__V1__STATUS__INVALID_ARGUMENT);
  ck_assert_int_eq(st[1], ARENAD__V1__STATUS__INVALID_ARGUMENT);
  /* one input of rank 33 */
  make_shape(dims, &d, v, 1, WIRE_MAX_RANK + 1);
  plan_and_lookup(&h, dims, 1, st, msg, sizeof msg);
  ck_assert_int_eq(st[0], ARENAD__V1__STATUS__INVALID_ARGUMENT);
  ck_assert_int_eq(st[1], ARENAD__V1__STATUS__INVALID_ARGUMENT);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

START_TEST(pinned_below_minus_one_reported)
{
  static const int64_t pins[] = {-2, INT64_MIN};
  static const char *const said[] = {"pinned offset -2 ",
                                     "pinned offset -9223372036854775808 "};
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  for (size_t k = 0; k < 2; k++) {
    struct planner_tensor t[2] = {
        {1, 100, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
        {2, 200, 1, 2, 0, pins[k], 0, 0},
    };
    struct hn_graph g = {t, 2};
    int fd = hn_connect(&h);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(hn_send_plan(fd, 41, &g, "pins", 0, 64, 0), 0);
    Arenad__V1__Response *r = hn_recv(fd, 20000);
    ck_assert_ptr_nonnull(r);
    expect(r, ARENAD__V1__STATUS__INVALID_ARGUMENT, said[k]);
    close(fd);
  }
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

void cd_add_status_tests(TCase *tc)
{
  tcase_add_test(tc, list_unknown_order_invalid);
  tcase_add_test(tc, shape_limits_same_status);
  tcase_add_test(tc, pinned_below_minus_one_reported);
}

/*
 * check_client_timeouts.c - the "timeouts" case of the client suite: the
 * connect, answer and plan timeouts against the fake daemon
 * (check_client_harness.c), and the sized options that carry them.
 *
 * A daemon that says nothing is given up on after the answer timeout,
 * whether it never reads the request or never replies; one that
 * acknowledges the request (Accepted) may take until the plan timeout;
 * one that predates the acknowledgement must reply within the answer
 * timeout. The figures are chosen so that every assertion holds on a
 * loaded machine: upper bounds on elapsed time are many times the
 * timeout that should end the wait, lower bounds are the timeout itself,
 * which no wait ends before.
 */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_client.h"

static double now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A client of the fake with the given fallback, answer and plan
 * timeouts. */
static arenad_client_t *open_timed(int fallback, uint32_t answer_ms,
                                   uint32_t plan_ms)
{
  struct arenad_client_options o;
  arenad_client_options_init(&o);
  o.socket_path = ct_fk.path;
  o.fallback = fallback;
  o.connect_timeout_ms = 2000;
  o.answer_timeout_ms = answer_ms;
  o.request_timeout_ms = plan_ms;
  arenad_client_t *c = NULL;
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  return c;
}

/* One plan of the test graph; its code, result, message and time. */
struct outcome {
  int rc;
  struct arenad_client_result r;
  char msg[600];
  double ms;
};

static void plan_timed(int fallback, uint32_t answer_ms, uint32_t plan_ms,
                       struct outcome *out)
{
  arenad_client_t *c = open_timed(fallback, answer_ms, plan_ms);
  arenad_client_result_init(&out->r);
  double t0 = now_ms();
  out->rc = arenad_client_plan(c, &ct_graph, NULL, &ct_key, &out->r);
  out->ms = now_ms() - t0;
  snprintf(out->msg, sizeof out->msg, "%s", arenad_client_errmsg(c));
  arenad_client_close(c);
}

/* ---- options ------------------------------------------------------------- */

START_TEST(options_sized)
{
  struct arenad_client__timeouts t;
  struct arenad_client_options o;
  arenad_client_t *c = NULL;
  arenad_client_options_init(&o);
  ck_assert_uint_eq(o.answer_timeout_ms,
                    ARENAD_CLIENT_DEFAULT_ANSWER_TIMEOUT_MS);
  ck_assert_uint_eq(o.request_timeout_ms,
                    ARENAD_CLIENT_DEFAULT_REQUEST_TIMEOUT_MS);
  o.socket_path = "/tmp/x/a.sock";
  o.connect_timeout_ms = 0; /* 0: the default */
  o.request_timeout_ms = 0;
  o.answer_timeout_ms = 0;
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  arenad_client__get_timeouts(c, &t);
  ck_assert_uint_eq(t.connect_ms, ARENAD_CLIENT_DEFAULT_CONNECT_TIMEOUT_MS);
  ck_assert_uint_eq(t.answer_ms, ARENAD_CLIENT_DEFAULT_ANSWER_TIMEOUT_MS);
  ck_assert_uint_eq(t.plan_ms, ARENAD_CLIENT_DEFAULT_REQUEST_TIMEOUT_MS);
  arenad_client_close(c);
  o.connect_timeout_ms = 11;
  o.answer_timeout_ms = 22;
  o.request_timeout_ms = 33;
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  arenad_client__get_timeouts(c, &t);
  ck_assert_uint_eq(t.connect_ms, 11);
  ck_assert_uint_eq(t.answer_ms, 22);
  ck_assert_uint_eq(t.plan_ms, 33);
  arenad_client_close(c);

  /* The entry points of programs built before the size was passed: they
   * write and read nothing past fallback, so a struct that ends there is
   * safe, and the answer timeout takes its default whatever lies
   * beyond. */
  const size_t v1 = offsetof(struct arenad_client_options, fallback) +
                    sizeof(int);
  unsigned char raw[sizeof(struct arenad_client_options) + 16];
  memset(raw, 0xa5, sizeof raw);
  struct arenad_client_options *old = (struct arenad_client_options *)raw;
  (arenad_client_options_init)(old);
  for (size_t i = v1; i < sizeof raw; i++)
    ck_assert_msg(raw[i] == 0xa5, "byte %zu past fallback written", i);
  ck_assert_int_eq(old->fallback, 1);
  ck_assert_uint_eq(old->request_timeout_ms,
                    ARENAD_CLIENT_DEFAULT_REQUEST_TIMEOUT_MS);
  old->socket_path = "/tmp/x/b.sock";
  ck_assert_int_eq((arenad_client_open)(old, &c), 0);
  arenad_client__get_timeouts(c, &t);
  ck_assert_uint_eq(t.answer_ms, ARENAD_CLIENT_DEFAULT_ANSWER_TIMEOUT_MS);
  arenad_client_close(c);
  ck_assert_int_eq((arenad_client_open)(NULL, &c), 0);
  arenad_client_close(c);

  /* A program built against a larger struct: what this library does not
   * know is zeroed by init and ignored by open. */
  memset(raw, 0xa5, sizeof raw);
  arenad_client_options_init_sized(old, sizeof raw);
  for (size_t i = sizeof o; i < sizeof raw; i++)
    ck_assert_uint_eq(raw[i], 0);
  old->socket_path = "/tmp/x/c.sock";
  old->answer_timeout_ms = 44;
  ck_assert_int_eq(arenad_client_open_sized(old, sizeof raw, &c), 0);
  arenad_client__get_timeouts(c, &t);
  ck_assert_uint_eq(t.answer_ms, 44);
  arenad_client_close(c);

  /* A size that does not even reach the first fields is refused. */
  c = (arenad_client_t *)1;
  ck_assert_int_eq(arenad_client_open_sized(&o, v1 - 1, &c), ARENA_EINVAL);
  ck_assert_ptr_null(c);
  ck_assert_int_eq(arenad_client_open_sized(NULL, 0, &c), 0);
  arenad_client_close(c);
}
END_TEST

/* ---- waits ---------------------------------------------------------------- */

/* A daemon that acknowledges the request may take far longer than the
 * answer timeout: the plan comes from it. */
START_TEST(acknowledged_search_may_take_its_time)
{
  ct_fk.delay_ms = 1000;
  ct_fake_start1(M_ACK_SLOW);
  struct outcome o;
  plan_timed(1, 100, 60000, &o);
  ck_assert_msg(o.rc == 0 && o.r.local == 0, "%s: %s", arena_err_name(o.rc),
                o.msg);
  ck_assert_int_eq(ct_fk.last_want_ack, 1);
  ct_assert_good_result(&o.r);
  arenad_client_result_cleanup(&o.r);
}
END_TEST

/* A daemon that reads the request and says nothing, as a stopped one:
 * given up on at the answer timeout, long before the plan timeout. */
START_TEST(silence_ends_at_the_answer_timeout)
{
  enum ct_mode m[] = {M_SILENT, M_SILENT};
  ct_fake_start(2, m);
  struct outcome o;
  plan_timed(1, 200, 60000, &o);
  ck_assert_int_eq(o.rc, 0);
  ck_assert_int_eq(o.r.local, 1);
  ck_assert_int_eq(o.r.fallback_reason, ARENA_ETIMEDOUT);
  ck_assert_msg(strstr(o.msg, "answer timeout") && strstr(o.msg, "200 ms"),
                "%s", o.msg);
  ck_assert_msg(o.ms < 20000, "fell back after %.0f ms", o.ms);
  ct_assert_good_result(&o.r);
  arenad_client_result_cleanup(&o.r);

  plan_timed(0, 200, 60000, &o);
  ck_assert_int_eq(o.rc, ARENA_ETIMEDOUT);
  ck_assert_msg(o.ms < 20000, "failed after %.0f ms", o.ms);
  ct_assert_empty_result(&o.r);
}
END_TEST

/* A daemon that never reads: sending ends at the answer timeout. The
 * graph is large enough to fill the socket's buffers. */
START_TEST(unread_request_ends_at_the_answer_timeout)
{
  ct_fake_start1(M_NO_READ);
  const size_t n = 200000;
  struct planner_tensor *t = calloc(n, sizeof *t);
  ck_assert_ptr_nonnull(t);
  for (size_t i = 0; i < n; i++) {
    t[i].id = (uint32_t)i;
    t[i].size = 4096 + i;
    t[i].first = (int64_t)i;
    t[i].last = (int64_t)i + 1;
    t[i].pinned = PLANNER_NOT_PINNED;
  }
  struct planner_graph g = {t, n};
  arenad_client_t *c = open_timed(0, 200, 60000);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  double t0 = now_ms();
  int rc = arenad_client_plan(c, &g, NULL, &ct_key, &r);
  double ms = now_ms() - t0;
  ck_assert_msg(rc == ARENA_ETIMEDOUT, "%s: %s", arena_err_name(rc),
                arenad_client_errmsg(c));
  ck_assert_msg(strstr(arenad_client_errmsg(c), "took no byte"), "%s",
                arenad_client_errmsg(c));
  ck_assert_msg(ms < 20000, "gave up after %.0f ms", ms);
  arenad_client_close(c);
  free(t);
}
END_TEST

/* A daemon that predates the acknowledgement must reply within the
 * answer timeout: a slower reply is not waited for, a quicker one is
 * taken. */
START_TEST(old_daemon_must_answer_in_time)
{
  enum ct_mode m[] = {M_SLOW, M_SLOW};
  ct_fk.delay_ms = 2000;
  ct_fake_start(2, m);
  struct outcome o;
  plan_timed(1, 200, 60000, &o);
  ck_assert_int_eq(o.rc, 0);
  ck_assert_int_eq(o.r.local, 1);
  ck_assert_int_eq(o.r.fallback_reason, ARENA_ETIMEDOUT);
  ck_assert_msg(strstr(o.msg, "answer timeout"), "%s", o.msg);
  arenad_client_result_cleanup(&o.r);
  plan_timed(1, 30000, 60000, &o);
  ck_assert_msg(o.rc == 0 && o.r.local == 0, "%s: %s", arena_err_name(o.rc),
                o.msg);
  ct_assert_good_result(&o.r);
  arenad_client_result_cleanup(&o.r);
}
END_TEST

/* Acknowledged, then nothing: the wait ends at the plan timeout, not
 * before (the answer timeout no longer counts). */
START_TEST(acknowledged_then_silent_ends_at_the_plan_timeout)
{
  ct_fake_start1(M_ACK_SILENT);
  struct outcome o;
  plan_timed(0, 100, 700, &o);
  ck_assert_int_eq(o.rc, ARENA_ETIMEDOUT);
  ck_assert_msg(strstr(o.msg, "plan timeout") && strstr(o.msg, "700 ms"),
                "%s", o.msg);
  ck_assert_msg(o.ms >= 690, "gave up after %.0f ms", o.ms);
  ct_assert_empty_result(&o.r);
}
END_TEST

void client_add_timeouts(TCase *tc)
{
  tcase_add_test(tc, options_sized);
  tcase_add_test(tc, acknowledged_search_may_take_its_time);
  tcase_add_test(tc, silence_ends_at_the_answer_timeout);
  tcase_add_test(tc, unread_request_ends_at_the_answer_timeout);
  tcase_add_test(tc, old_daemon_must_answer_in_time);
  tcase_add_test(tc, acknowledged_then_silent_ends_at_the_plan_timeout);
}

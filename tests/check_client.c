/*
 * check_client.c - tests of the client library (client/lib/arenad_client.c,
 * lib_message.c, lib_request.c) that need no daemon, and the client
 * suite.
 *
 * A fake daemon runs in a thread of the test process and serves each
 * connection in a scripted way (check_client_harness.c). The tests check
 * that the library returns only verified plans, maps every failure to the
 * documented code, falls back to local planning when allowed, and
 * reconnects after dropping a connection.
 *
 * This file holds the "api" case (options, status codes, bad inputs, no
 * daemon at all) and client_suite(), which also runs the "fake-daemon"
 * case (check_client_fake.c), the "share" case (check_client_share.c),
 * the "timeouts" case (check_client_timeouts.c), the "memo" case
 * (check_client_memo.c), the "bundle" case, the plan bundle format
 * (check_client_bundle.c), and the "arenactl" case, arenactl's daemon
 * commands against the fake (check_client_cli.c). Shared helpers are
 * declared in check_client.h.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check_client.h"
#include "digest.h"

/* ---- handles and options ------------------------------------------------ */

START_TEST(open_options)
{
  struct arenad_client_options o;
  arenad_client_t *c = (arenad_client_t *)1;
  arenad_client_options_init(&o);
  ck_assert_ptr_null(o.socket_path);
  ck_assert_int_eq(o.fallback, 1);
  ck_assert_uint_eq(o.connect_timeout_ms,
                    ARENAD_CLIENT_DEFAULT_CONNECT_TIMEOUT_MS);

  ck_assert_int_eq(unsetenv(ARENAD_CLIENT_SOCKET_ENV), 0);
  ck_assert_int_eq(arenad_client_open(NULL, &c), 0);
  ck_assert_str_eq(arenad_client__socket_path(c),
                   ARENAD_CLIENT_DEFAULT_SOCKET);
  ck_assert_str_eq(arenad_client_errmsg(c), "");
  arenad_client_close(c);

  ck_assert_int_eq(setenv(ARENAD_CLIENT_SOCKET_ENV, "/tmp/x/env.sock", 1),
                   0);
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  ck_assert_str_eq(arenad_client__socket_path(c), "/tmp/x/env.sock");
  arenad_client_close(c);

  /* An explicit path wins over the environment. */
  o.socket_path = "/tmp/x/explicit.sock";
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  ck_assert_str_eq(arenad_client__socket_path(c), "/tmp/x/explicit.sock");
  arenad_client_close(c);

  char longp[200];
  memset(longp, 'a', sizeof longp - 1);
  longp[sizeof longp - 1] = '\0';
  o.socket_path = longp;
  ck_assert_int_eq(arenad_client_open(&o, &c), ARENA_EINVAL);
  ck_assert_ptr_null(c);
  o.socket_path = "";
  ck_assert_int_eq(arenad_client_open(&o, &c), ARENA_EINVAL);

  arenad_client_close(NULL);
  arenad_client_result_cleanup(NULL);
  ck_assert_str_eq(arenad_client_errmsg(NULL), "");
}
END_TEST

START_TEST(status_mapping)
{
  static const struct {
    Arenad__V1__Status s;
    int code;
  } m[] = {
      {ARENAD__V1__STATUS__OK, 0},
      {ARENAD__V1__STATUS__NOT_FOUND, ARENA_ENOENT},
      {ARENAD__V1__STATUS__INVALID_ARGUMENT, ARENA_EINVAL},
      {ARENAD__V1__STATUS__BUSY, ARENA_EBUSY},
      {ARENAD__V1__STATUS__DENIED, ARENA_EDENIED},
      {ARENAD__V1__STATUS__TOO_LARGE, ARENA_ETOOBIG},
      {ARENAD__V1__STATUS__UNSUPPORTED_VERSION, ARENA_EVERSION},
      {ARENAD__V1__STATUS__INTERNAL, ARENA_EINTERNAL},
      {(Arenad__V1__Status)99, ARENA_EPROTO},
  };
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
    ck_assert_int_eq(arenad_client__status_code(m[i].s), m[i].code);
}
END_TEST

START_TEST(bad_inputs_never_reach_the_daemon)
{
  struct arenad_client_result r;
  arenad_client_t *c = ct_open_client(1, 1000); /* no fake: nothing listens */
  arenad_client_result_init(&r);

  struct arenad_model_key k = ct_key;
  k.model_hash_len = 0;
  ck_assert_int_eq(arenad_client_plan(c, &ct_graph, NULL, &k, &r),
                   ARENA_EINVAL);
  ck_assert_ptr_nonnull(strstr(arenad_client_errmsg(c), "model hash"));
  k.model_hash_len = ARENAD_CLIENT_MAX_MODEL_HASH + 1;
  ck_assert_int_eq(arenad_client_plan(c, &ct_graph, NULL, &k, &r),
                   ARENA_EINVAL);
  int64_t neg[] = {1, -2};
  struct arenad_dims nd = {neg, 2};
  k = ct_key;
  k.inputs = &nd;
  ck_assert_int_eq(arenad_client_plan(c, &ct_graph, NULL, &k, &r),
                   ARENA_EINVAL);
  ck_assert_ptr_nonnull(strstr(arenad_client_errmsg(c), "negative"));
  ck_assert_int_eq(arenad_client_lookup(c, &k, &ct_graph, NULL, &r),
                   ARENA_EINVAL);

  /* An invalid graph fails even with fallback: local planning would
   * fail the same way. */
  struct planner_tensor bad[CT_TG_N];
  memcpy(bad, ct_tg, sizeof bad);
  bad[2].first = 9;
  struct planner_graph bg = {bad, CT_TG_N};
  ck_assert_int_eq(arenad_client_plan(c, &bg, NULL, &ct_key, &r),
                   ARENA_ELIFETIME);
  bad[2] = ct_tg[2];
  bad[3].id = bad[0].id;
  ck_assert_int_eq(arenad_client_plan(c, &bg, NULL, &ct_key, &r),
                   ARENA_EDUPID);
  struct planner_graph empty = {ct_tg, 0};
  ck_assert_int_eq(arenad_client_plan(c, &empty, NULL, &ct_key, &r),
                   ARENA_EEMPTY);
  ct_assert_empty_result(&r);
  arenad_client_close(c);
}
END_TEST

/* ---- unreachable daemon ------------------------------------------------- */

START_TEST(unreachable_with_fallback)
{
  struct arenad_client_result r;
  char msg[600];
  ck_assert_int_eq(ct_plan_once(1, 1000, &r, msg, sizeof msg), 0);
  ck_assert_int_eq(r.local, 1);
  ck_assert_int_eq(r.cached, 0);
  ck_assert_int_eq(r.fallback_reason, ARENA_EUNAVAIL);
  ck_assert_msg(strstr(msg, "unreachable") != NULL, "%s", msg);
  ck_assert_msg(strstr(msg, ct_fk.path) != NULL, "%s", msg);
  ct_assert_good_result(&r);
  struct planner_plan p;
  ct_local_plan(&p);
  for (size_t i = 0; i < CT_TG_N; i++)
    ck_assert_uint_eq(r.plan.offsets[i], p.offsets[i]);
  uint8_t od[PLANNER_DIGEST_LEN];
  struct planner_options o;
  planner_options_init(&o);
  planner_options_digest(&o, od);
  ck_assert_int_eq(memcmp(od, r.options_digest, sizeof od), 0);
  planner_plan_cleanup(&p);
  arenad_client_result_cleanup(&r);
  ct_assert_empty_result(&r);
}
END_TEST

START_TEST(unreachable_without_fallback)
{
  struct arenad_client_result r;
  char msg[600];
  ck_assert_int_eq(ct_plan_once(0, 1000, &r, msg, sizeof msg), ARENA_EUNAVAIL);
  ck_assert_msg(strstr(msg, ct_fk.path) != NULL, "%s", msg);
  ct_assert_empty_result(&r);

  /* A socket file that nobody listens on: connection refused. */
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  strcpy(sa.sun_path, ct_fk.path);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  ck_assert_int_eq(ct_plan_once(0, 1000, &r, msg, sizeof msg), ARENA_EUNAVAIL);
  ck_assert_msg(strstr(msg, "refused") != NULL, "%s", msg);
  close(fd);

  /* Lookup never falls back. */
  arenad_client_t *c = ct_open_client(1, 1000);
  ck_assert_int_eq(arenad_client_lookup(c, &ct_key, &ct_graph, NULL, &r),
                   ARENA_EUNAVAIL);
  ct_assert_empty_result(&r);
  arenad_client_close(c);
}
END_TEST

Suite *client_suite(void)
{
  Suite *s = suite_create("client");
  TCase *tc = tcase_create("api");
  tcase_add_checked_fixture(tc, ct_setup, ct_teardown);
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, open_options);
  tcase_add_test(tc, status_mapping);
  tcase_add_test(tc, bad_inputs_never_reach_the_daemon);
  tcase_add_test(tc, unreachable_with_fallback);
  tcase_add_test(tc, unreachable_without_fallback);
  suite_add_tcase(s, tc);

  tc = tcase_create("fake-daemon");
  tcase_add_checked_fixture(tc, ct_setup, ct_teardown);
  tcase_set_timeout(tc, 30);
  client_add_fake_daemon(tc);
  suite_add_tcase(s, tc);

  tc = tcase_create("share");
  tcase_add_checked_fixture(tc, ct_setup, ct_teardown);
  tcase_set_timeout(tc, 30);
  client_add_share(tc);
  suite_add_tcase(s, tc);

  /* Room for the plan timeouts of 60 s, which the timeouts must beat. */
  tc = tcase_create("timeouts");
  tcase_add_checked_fixture(tc, ct_setup, ct_teardown);
  tcase_set_timeout(tc, 90);
  client_add_timeouts(tc);
  suite_add_tcase(s, tc);

  tc = tcase_create("memo");
  tcase_add_checked_fixture(tc, ct_setup, ct_teardown);
  tcase_set_timeout(tc, 30);
  client_add_memo(tc);
  suite_add_tcase(s, tc);

  tc = tcase_create("bundle");
  tcase_add_checked_fixture(tc, ct_setup, ct_teardown);
  tcase_set_timeout(tc, 60);
  client_add_bundle(tc);
  suite_add_tcase(s, tc);

  tc = tcase_create("unusable");
  tcase_add_checked_fixture(tc, ct_setup, ct_teardown);
  tcase_set_timeout(tc, 30);
  client_add_unusable(tc);
  suite_add_tcase(s, tc);

  tc = tcase_create("arenactl");
  tcase_add_checked_fixture(tc, ct_setup, ct_teardown);
  tcase_set_timeout(tc, 60);
  client_add_arenactl(tc);
  suite_add_tcase(s, tc);
  return s;
}

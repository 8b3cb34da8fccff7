/*
 * check_deploy_static.c - the deploy suite's static checks: each runs one
 * step of tests/deploy.sh (systemd-analyze verify and security, the man
 * pages, install and the pkg-config client, the symbols the client
 * library exports, the .deb, the maintainer scripts, the daemon's system
 * calls and files traced against the unit's sandbox) and judges it by
 * its exit status and output; and the one-way use between the folders of
 * planner/ and client/ (tests/layers.sh).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_deploy.h"
#include "daemon_harness.h"
#include "wire.h"

/* Runs one step of tests/deploy.sh; returns its output (owned) after
 * asserting that it succeeded. */
static char *deploy_step(const char *step)
{
  char *argv[] = {"sh", "tests/deploy.sh", (char *)step, DEPLOY_BUILD, NULL};
  char *out;
  setenv("SANFLAGS", DEPLOY_SANFLAGS, 1);
  int rc = cdp_run_capture(argv, &out);
  ck_assert_ptr_nonnull(out);
  printf("-- deploy.sh %s\n%s", step, out);
  ck_assert_msg(rc == 0, "deploy.sh %s failed (exit %d):\n%s", step, rc, out);
  return out;
}

/* ---- static checks (tests/deploy.sh) ------------------------------------ */

START_TEST(test_units_verify)
{
  char *out = deploy_step("units");
  ck_assert_ptr_nonnull(strstr(out, "verify: clean"));
  ck_assert_ptr_nonnull(strstr(out, "verify: rejects a broken copy"));
  ck_assert_ptr_nonnull(strstr(out, "snippets: user arenad"));
  free(out);
}
END_TEST

START_TEST(test_security_score)
{
  char *out = deploy_step("security");
  const char *p = strstr(out, "Overall exposure level for arenad.service: ");
  ck_assert_ptr_nonnull(p);
  double score = -1;
  ck_assert_int_eq(sscanf(p + strlen("Overall exposure level for "
                                     "arenad.service: "),
                          "%lf", &score),
                   1);
  printf("deploy: systemd-analyze security score %.1f\n", score);
  ck_assert_msg(score >= 0.0 && score <= 2.0, "exposure %.1f is above 2.0",
                score);
  free(out);
}
END_TEST

START_TEST(test_man_pages)
{
  char *out = deploy_step("man");
  ck_assert_ptr_nonnull(strstr(out, "man: arenad.8 clean"));
  ck_assert_ptr_nonnull(strstr(out, "man: arenad.conf.5 clean"));
  ck_assert_ptr_nonnull(strstr(out, "man: arenactl.1 clean"));
  free(out);
}
END_TEST

START_TEST(test_install_and_pkgconfig_client)
{
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  setenv("ARENAD_SOCKET", h.sock, 1);
  char *out = deploy_step("install");
  ck_assert_ptr_nonnull(strstr(
      out, "headers: <arenad/arenad_client.h>, nothing else on the include path"));
  ck_assert_ptr_nonnull(strstr(out, "example: daemon, then daemon cache"));
  ck_assert_ptr_nonnull(strstr(out, "uninstall: nothing left"));
  ck_assert_ptr_nonnull(strstr(out, "an edited configuration is kept"));
  ck_assert_ptr_nonnull(strstr(out, "a second DESTDIR install keeps an "
                                    "edited configuration"));
  free(out);
  /* The daemon's side of the same story: one plan computed, one hit. */
  Arenad__V1__Response *s = hn_stats(&h);
  ck_assert_ptr_nonnull(s);
  ck_assert_uint_eq(s->stats->plans_computed, 1);
  ck_assert_uint_ge(s->stats->memory_hits + s->stats->storage_hits, 1);
  wire_free_response(s);
  ck_assert_int_eq(cdp_stop_daemon(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* libarenad-client.so exports its C API and nothing else (it was 242
 * symbols: the planner, the wire codec, protobuf-c messages). */
START_TEST(test_library_exports_only_its_api)
{
  char *out = deploy_step("symbols");
  ck_assert_ptr_nonnull(
      strstr(out, "each an ARENAD_CLIENT_API function of arenad_client.h"));
  free(out);
}
END_TEST

START_TEST(test_deb_package)
{
  char *out = deploy_step("deb");
  ck_assert_ptr_nonnull(strstr(out, "deb: metadata ok"));
  ck_assert_ptr_nonnull(strstr(out, "deb: copyright in every package"));
  ck_assert_ptr_nonnull(
      strstr(out, "a client builds from the -dev package"));
  free(out);
}
END_TEST

START_TEST(test_maintainer_scripts)
{
  char *out = deploy_step("maint");
  ck_assert_ptr_nonnull(strstr(out, "nothing enabled"));
  ck_assert_ptr_nonnull(strstr(out, "purge deletes it"));
  free(out);
}
END_TEST

START_TEST(test_syscalls_within_filter)
{
  char *out = deploy_step("syscalls");
  ck_assert_ptr_nonnull(strstr(out, "all allowed by the unit's filter"));
  ck_assert_ptr_nonnull(strstr(out, "all in its own directories"));
  free(out);
}
END_TEST

/* The folders of planner/ and the parts of client/ use each other one
 * way only (tests/layers.sh reads their archives' symbols; make test
 * builds all 13 parts, the TFLite adapter included). The same check
 * with a wrong map must name the calls it then forbids, so a broken
 * check cannot pass: run/ allowed only core/ (its calls into search/
 * and heuristics/), and the TFLite Micro adapter allowed only the
 * planner (its calls into the client library). */
START_TEST(test_planner_layers)
{
  char *argv[] = {"sh", "tests/layers.sh", DEPLOY_BUILD, NULL};
  char *out;
  int rc = cdp_run_capture(argv, &out);
  ck_assert_ptr_nonnull(out);
  printf("-- layers.sh\n%s", out);
  ck_assert_msg(rc == 0, "layers.sh failed (exit %d):\n%s", rc, out);
  ck_assert_ptr_nonnull(strstr(out, "layers: ok (13 parts)"));
  free(out);
  char *wrong[] = {"sh", "tests/layers.sh", DEPLOY_BUILD, "run=core", NULL};
  rc = cdp_run_capture(wrong, &out);
  ck_assert_ptr_nonnull(out);
  ck_assert_int_eq(rc, 1);
  ck_assert_ptr_nonnull(strstr(out, "layers: run uses planner__exact from "
                                    "search"));
  ck_assert_ptr_nonnull(strstr(out, "layers: run uses planner__task_new "
                                    "from heuristics"));
  ck_assert_ptr_null(strstr(out, "layers: ok"));
  free(out);
  char *adapter[] = {"sh", "tests/layers.sh", DEPLOY_BUILD,
                     "tflm=core,heuristics,search,run,formats", NULL};
  rc = cdp_run_capture(adapter, &out);
  ck_assert_ptr_nonnull(out);
  ck_assert_int_eq(rc, 1);
  ck_assert_ptr_nonnull(strstr(out, "layers: tflm uses "
                                    "arenad_client_plan_within from lib"));
  ck_assert_ptr_null(strstr(out, "layers: ok"));
  free(out);
}
END_TEST

void cdp_add_static_tests(Suite *s)
{
  TCase *tc = tcase_create("static");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_units_verify);
  tcase_add_test(tc, test_security_score);
  tcase_add_test(tc, test_man_pages);
  tcase_add_test(tc, test_install_and_pkgconfig_client);
  tcase_add_test(tc, test_library_exports_only_its_api);
  tcase_add_test(tc, test_deb_package);
  tcase_add_test(tc, test_maintainer_scripts);
  tcase_add_test(tc, test_syscalls_within_filter);
  tcase_add_test(tc, test_planner_layers);
  suite_add_tcase(s, tc);
}

/*
 * check_client_unusable.c - the "unusable" case of the client suite: a
 * daemon's plan that verifies but cannot be used (arenad_client.h,
 * UNUSABLE PLANS), against the fake daemon of check_client_harness.c.
 *
 * The fake's M_POISON plans put tensor i at i * 2^30: no two tensors
 * overlap, so the plan verifies, but its arena is gigabytes for a graph
 * of 4600 bytes, as a poisoned cache entry would be. Checked: with
 * fallback the call plans locally and reports the plan (with the key,
 * digests and sizes the fake checks); without, it reports and asks
 * again, or fails with ARENA_EUNUSABLE when the daemon keeps the plan; a
 * plan that is only over the caller's limit is reported only when a
 * smaller one exists; a daemon that predates reports costs nothing but
 * the message.
 */
#include <check.h>
#include <string.h>

#include "check_client.h"

/* The naive bound of the test graph at alignment 64: every size plus 63
 * bytes of padding. */
#define TG_NAIVE_BOUND (1000u + 500u + 2000u + 300u + 800u + 5u * 63u)
/* The arena of the fake's poisoned plan: the last tensor (800 bytes) at
 * 4 * 2^30. */
#define TG_POISON_ARENA (((uint64_t)4 << 30) + 800u)

static void assert_has(const char *hay, const char *needle)
{
  ck_assert_msg(strstr(hay, needle) != NULL, "'%s' not in '%s'", needle,
                hay);
}

/* With fallback: a local plan, the poisoned one reported and replaced. */
START_TEST(poisoned_plan_falls_back_and_is_reported)
{
  ct_fake_start1(M_POISON);
  arenad_client_t *c = ct_open_client(1, 5000);
  struct arenad_client_result r;
  struct planner_plan p;
  arenad_client_result_init(&r);
  ct_local_plan(&p);
  ck_assert_int_eq(arenad_client_plan(c, &ct_graph, NULL, &ct_key, &r), 0);
  ct_assert_good_result(&r);
  ck_assert_int_eq(r.local, 1);
  ck_assert_int_eq(r.cached, 0);
  ck_assert_int_eq(r.fallback_reason, ARENA_EUNUSABLE);
  ck_assert_uint_eq(r.plan.arena_bytes, p.arena_bytes);
  ck_assert_uint_le(r.plan.arena_bytes, TG_NAIVE_BOUND);
  const char *m = arenad_client_errmsg(c);
  assert_has(m, "planned locally (");
  assert_has(m, "the daemon's plan needs 4294968096 bytes, more than any "
                "naive layout of this graph (4915)");
  assert_has(m, "reported to the daemon, which replaced it");
  ck_assert_int_eq(ct_fk.unusable_reports, 1);
  ck_assert_uint_eq(ct_fk.unusable_arena, TG_POISON_ARENA);
  ck_assert_uint_eq(ct_fk.unusable_usable, TG_NAIVE_BOUND);
  ck_assert_int_eq(ct_fk.unusable_digests_ok, 1);
  /* One connection: the plan, the report. */
  ck_assert_int_eq(ct_fk.conns, 1);
  ck_assert_int_eq(ct_fk.requests, 2);
  planner_plan_cleanup(&p);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

/* Without fallback: reported, replaced, and the daemon's next plan used. */
START_TEST(poisoned_plan_without_fallback_asks_again)
{
  ct_fake_start1(M_POISON_ONCE);
  arenad_client_t *c = ct_open_client(0, 5000);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  ck_assert_msg(arenad_client_plan(c, &ct_graph, NULL, &ct_key, &r) == 0,
                "%s", arenad_client_errmsg(c));
  ct_assert_good_result(&r);
  ck_assert_int_eq(r.local, 0);
  ck_assert_int_eq(r.cached, 1);
  ck_assert_uint_le(r.plan.arena_bytes, TG_NAIVE_BOUND);
  assert_has(arenad_client_errmsg(c), "which replaced it, and its plan "
                                      "asked for again is usable");
  ck_assert_int_eq(ct_fk.unusable_reports, 1);
  ck_assert_int_eq(ct_fk.requests, 3);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

/* Without fallback, a daemon that keeps the plan: a clean error. */
START_TEST(poisoned_plan_kept_without_fallback_fails)
{
  ct_fk.unusable_keep = 1;
  ct_fake_start1(M_POISON);
  arenad_client_t *c = ct_open_client(0, 5000);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  ck_assert_int_eq(arenad_client_plan(c, &ct_graph, NULL, &ct_key, &r),
                   ARENA_EUNUSABLE);
  ct_assert_empty_result(&r);
  assert_has(arenad_client_errmsg(c), "reported to the daemon, which kept "
                                      "it (fallback is off)");
  ck_assert_int_eq(ct_fk.unusable_reports, 1);
  /* The plan, the report, the plan asked for again. */
  ck_assert_int_eq(ct_fk.requests, 3);
  arenad_client_close(c);
}
END_TEST

/* A daemon that predates reports refuses the Evict: the local plan is
 * returned all the same, and the message says the report failed. */
START_TEST(report_to_an_old_daemon)
{
  ct_fk.unusable_status = ARENAD__V1__STATUS__INVALID_ARGUMENT;
  ct_fake_start1(M_POISON);
  arenad_client_t *c = ct_open_client(1, 5000);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  ck_assert_int_eq(arenad_client_plan(c, &ct_graph, NULL, &ct_key, &r), 0);
  ct_assert_good_result(&r);
  ck_assert_int_eq(r.local, 1);
  ck_assert_int_eq(r.fallback_reason, ARENA_EUNUSABLE);
  assert_has(arenad_client_errmsg(c), "the report failed: ");
  assert_has(arenad_client_errmsg(c), "INVALID_ARGUMENT");
  /* The connection survives the refusal: a second call uses it. */
  ck_assert_int_eq(arenad_client_plan(c, &ct_graph, NULL, &ct_key, &r), 0);
  ck_assert_int_eq(r.local, 1);
  ck_assert_int_eq(ct_fk.conns, 1);
  ck_assert_int_eq(ct_fk.unusable_reports, 2);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

/* A good plan over the caller's limit: no smaller plan exists, so the
 * daemon's plan is returned as it is and nothing is reported; under a
 * limit it meets, nothing changes. */
START_TEST(limit_below_a_good_plan)
{
  ct_fake_start1(M_GOOD);
  arenad_client_t *c = ct_open_client(1, 5000);
  struct arenad_client_result r;
  struct planner_plan p;
  arenad_client_result_init(&r);
  ct_local_plan(&p);
  ck_assert_int_eq(arenad_client_plan_within(c, &ct_graph, NULL, &ct_key,
                                             p.arena_bytes - 1, &r),
                   0);
  ct_assert_good_result(&r);
  ck_assert_int_eq(r.local, 0);
  ck_assert_uint_eq(r.plan.arena_bytes, p.arena_bytes);
  assert_has(arenad_client_errmsg(c), "no plan of this graph is smaller "
                                      "(its lower bound is");
  ck_assert_int_eq(ct_fk.unusable_reports, 0);
  ck_assert_int_eq(arenad_client_plan_within(c, &ct_graph, NULL, &ct_key,
                                             p.arena_bytes, &r),
                   0);
  ck_assert_int_eq(r.local, 0);
  ck_assert_str_eq(arenad_client_errmsg(c), "");
  ck_assert_int_eq(ct_fk.unusable_reports, 0);
  planner_plan_cleanup(&p);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

/* Under a limit, a poisoned plan is reported with the limit as what the
 * caller could use. */
START_TEST(limit_reported_as_usable)
{
  ct_fake_start1(M_POISON);
  arenad_client_t *c = ct_open_client(1, 5000);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  ck_assert_int_eq(arenad_client_plan_within(c, &ct_graph, NULL, &ct_key,
                                             4096, &r),
                   0);
  ct_assert_good_result(&r);
  ck_assert_int_eq(r.local, 1);
  ck_assert_int_eq(ct_fk.unusable_reports, 1);
  ck_assert_uint_eq(ct_fk.unusable_usable, 4096);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

void client_add_unusable(TCase *tc)
{
  tcase_add_test(tc, poisoned_plan_falls_back_and_is_reported);
  tcase_add_test(tc, poisoned_plan_without_fallback_asks_again);
  tcase_add_test(tc, poisoned_plan_kept_without_fallback_fails);
  tcase_add_test(tc, report_to_an_old_daemon);
  tcase_add_test(tc, limit_below_a_good_plan);
  tcase_add_test(tc, limit_reported_as_usable);
}

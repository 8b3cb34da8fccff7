/*
 * check_client_share.c - the "share" case of the client suite: in-place
 * sharing through the client library. A graph that declares aliases gets
 * the same offsets, pair count and bounds from the daemon (the fake of
 * check_client_harness.c, which plans with the real wire code and
 * planner) and from the local fallback; with options->in_place 0 both
 * give the plan of the graph without aliases, under that graph's digest;
 * a daemon that shares although the request said not to is caught by
 * the verification.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_client.h"
#include "digest.h"

enum { CS_N = 6 };

/* Two chains of three, each output over its input (4 legal pairs), one
 * after the other, ids out of order; with_aliases 0 declares none. */
static void chain(struct planner_tensor *t, int with_aliases)
{
  static const uint32_t ids[CS_N] = {40, 7, 19, 3, 25, 11};
  for (size_t i = 0; i < CS_N; i++) {
    t[i].id = ids[i];
    t[i].size = 3000;
    t[i].first = (int64_t)(i < 3 ? i : i + 1);
    t[i].last = t[i].first + 1;
    t[i].align = 0;
    t[i].pinned = PLANNER_NOT_PINNED;
    t[i].alias = i ? ids[i - 1] : 0;
    t[i].has_alias = with_aliases && i != 0 && i != 3;
  }
}

/* Plans g under o through a client of socket `path` (fallback as given)
 * into r; the call must succeed. */
static void plan_via(const char *path, int fallback,
                     const struct planner_graph *g,
                     const struct planner_options *o,
                     struct arenad_client_result *r)
{
  struct arenad_client_options co;
  arenad_client_options_init(&co);
  co.socket_path = path;
  co.fallback = fallback;
  co.request_timeout_ms = 5000;
  arenad_client_t *c = NULL;
  ck_assert_int_eq(arenad_client_open(&co, &c), 0);
  arenad_client_result_init(r);
  int rc = arenad_client_plan(c, g, o, &ct_key, r);
  ck_assert_msg(rc == 0, "%s", arenad_client_errmsg(c));
  arenad_client_close(c);
}

/* Asserts that r holds plan p (offsets, bounds, pairs) and verifies
 * against g under o. */
static void assert_same_plan(const struct arenad_client_result *r,
                             const struct planner_plan *p,
                             const struct planner_graph *g,
                             const struct planner_options *o)
{
  ck_assert_uint_eq(r->plan.n_offsets, CS_N);
  ck_assert_mem_eq(r->plan.offsets, p->offsets, CS_N * sizeof *p->offsets);
  ck_assert_uint_eq(r->plan.arena_bytes, p->arena_bytes);
  ck_assert_uint_eq(r->plan.lower_bound_bytes, p->lower_bound_bytes);
  ck_assert_uint_eq(r->plan.lower_bound_unshared_bytes,
                    p->lower_bound_unshared_bytes);
  ck_assert_uint_eq(r->plan.n_shared, p->n_shared);
  char err[ARENA_ERR_LEN] = "";
  ck_assert_msg(planner_verify(g, o, &r->plan, err) == 0, "%s", err);
}

/* Daemon first, then the local fallback (no socket there): one plan. */
static void both_ways(const struct planner_graph *g,
                      const struct planner_options *o,
                      const struct planner_plan *want, uint8_t gd[32])
{
  struct arenad_client_result d, l;
  plan_via(ct_fk.path, 0, g, o, &d);
  ck_assert_int_eq(d.local, 0);
  assert_same_plan(&d, want, g, o);
  char none[700];
  snprintf(none, sizeof none, "%s.none", ct_fk.path);
  plan_via(none, 1, g, o, &l);
  ck_assert_int_eq(l.local, 1);
  ck_assert_int_eq(l.fallback_reason, ARENA_EUNAVAIL);
  assert_same_plan(&l, want, g, o);
  ck_assert_mem_eq(d.graph_digest, l.graph_digest, PLANNER_DIGEST_LEN);
  ck_assert_mem_eq(d.options_digest, l.options_digest, PLANNER_DIGEST_LEN);
  memcpy(gd, d.graph_digest, PLANNER_DIGEST_LEN);
  arenad_client_result_cleanup(&d);
  arenad_client_result_cleanup(&l);
}

START_TEST(share_daemon_and_local_agree)
{
  struct planner_tensor t[CS_N], bare[CS_N];
  chain(t, 1);
  chain(bare, 0);
  struct planner_graph g = {t, CS_N}, bg = {bare, CS_N};
  struct planner_options o;
  arenad_client_plan_options_init(&o);
  ck_assert_int_eq(o.in_place, 1);
  struct planner_plan ps, pb;
  planner_plan_init(&ps);
  planner_plan_init(&pb);
  ck_assert_int_eq(planner_run(&g, &o, &ps, NULL), 0);
  ck_assert_int_eq(planner_run(&bg, &o, &pb, NULL), 0);
  ck_assert_uint_eq(ps.n_shared, 4);
  ck_assert_uint_lt(ps.arena_bytes, pb.arena_bytes);
  ck_assert_uint_lt(ps.lower_bound_bytes, ps.lower_bound_unshared_bytes);
  ct_fake_start1(M_GOOD);
  uint8_t gd[PLANNER_DIGEST_LEN], want[PLANNER_DIGEST_LEN];
  both_ways(&g, &o, &ps, gd);
  ck_assert_int_eq(planner_graph_digest(&g, want), 0);
  ck_assert_mem_eq(gd, want, PLANNER_DIGEST_LEN);
  planner_plan_cleanup(&ps);
  planner_plan_cleanup(&pb);
}
END_TEST

/* in_place 0: the plan, digest and bounds of the graph without aliases,
 * from the daemon and locally. */
START_TEST(share_off_is_the_bare_plan)
{
  struct planner_tensor t[CS_N], bare[CS_N];
  chain(t, 1);
  chain(bare, 0);
  struct planner_graph g = {t, CS_N}, bg = {bare, CS_N};
  struct planner_options o;
  arenad_client_plan_options_init(&o);
  struct planner_plan pb;
  planner_plan_init(&pb);
  ck_assert_int_eq(planner_run(&bg, &o, &pb, NULL), 0);
  ck_assert_uint_eq(pb.n_shared, 0);
  o.in_place = 0;
  ct_fake_start1(M_GOOD);
  uint8_t gd[PLANNER_DIGEST_LEN], want[PLANNER_DIGEST_LEN];
  both_ways(&g, &o, &pb, gd);
  ck_assert_int_eq(planner_graph_digest(&bg, want), 0);
  ck_assert_mem_eq(gd, want, PLANNER_DIGEST_LEN);
  planner_plan_cleanup(&pb);
}
END_TEST

/* A daemon that shares bytes although the request turned sharing off
 * never gets its plan past the library: without fallback the call fails
 * verification, with it the plan is made here, unshared. */
START_TEST(share_off_refuses_a_shared_plan)
{
  struct planner_tensor t[CS_N];
  chain(t, 1);
  struct planner_graph g = {t, CS_N};
  struct planner_options o;
  arenad_client_plan_options_init(&o);
  o.in_place = 0;
  enum ct_mode m[] = {M_SHARE_ANYWAY, M_SHARE_ANYWAY};
  ct_fake_start(2, m);
  arenad_client_t *c = ct_open_client(0, 5000);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  ck_assert_int_eq(arenad_client_plan(c, &g, &o, &ct_key, &r),
                   ARENA_EVERIFY);
  ct_assert_empty_result(&r);
  arenad_client_close(c);
  c = ct_open_client(1, 5000);
  ck_assert_int_eq(arenad_client_plan(c, &g, &o, &ct_key, &r), 0);
  ck_assert_int_eq(r.local, 1);
  ck_assert_int_eq(r.fallback_reason, ARENA_EVERIFY);
  ck_assert_uint_eq(r.plan.n_shared, 0);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

/* A bad alias fails before anything is sent, sharing on or off. */
START_TEST(share_bad_alias_stays_local)
{
  struct planner_tensor t[CS_N];
  chain(t, 1);
  t[2].alias = 999;
  struct planner_graph g = {t, CS_N};
  struct planner_options o;
  arenad_client_plan_options_init(&o);
  ct_fake_start1(M_GOOD);
  arenad_client_t *c = ct_open_client(1, 5000);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  for (int in_place = 1; in_place >= 0; in_place--) {
    o.in_place = in_place;
    ck_assert_int_eq(arenad_client_plan(c, &g, &o, &ct_key, &r),
                     ARENA_EINVAL);
    ck_assert_msg(strstr(arenad_client_errmsg(c), "not in the graph"),
                  "%s", arenad_client_errmsg(c));
    ck_assert_int_eq(arenad_client_lookup(c, &ct_key, &g, &o, &r),
                     ARENA_EINVAL);
  }
  ck_assert_int_eq(ct_fk.requests, 0);
  arenad_client_close(c);
}
END_TEST

void client_add_share(TCase *tc)
{
  tcase_add_test(tc, share_daemon_and_local_agree);
  tcase_add_test(tc, share_off_is_the_bare_plan);
  tcase_add_test(tc, share_off_refuses_a_shared_plan);
  tcase_add_test(tc, share_bad_alias_stays_local);
}

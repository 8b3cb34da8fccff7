/*
 * check_service_unusable.c - the "unusable" case of the service suite:
 * a poisoned plan in a real daemon's database, through the real client
 * library (arenad_client.h, UNUSABLE PLANS; daemon/unusable.c).
 *
 * The daemon plans a model's graph and stores it; stopped, its database
 * is poisoned with tests/poison_db (every stored plan replaced by the
 * naive layout of its graph, stored as final), and it is started again.
 * A client that can use only the daemon's first arena then gets a local
 * plan of that size, and reports the poisoned plan; the daemon plans
 * the stored graph again, logs that it replaced the plan, and serves
 * the new one from its cache. A client without fallback gets the
 * daemon's new plan after its report. A report of a good plan changes
 * nothing.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arenad_client.h"
#include "check_service.h"
#include "daemon_harness.h"
#include "testutil.h"

static arenad_client_t *client(const struct harness *h, int fallback)
{
  struct arenad_client_options o;
  arenad_client_options_init(&o);
  o.socket_path = h->sock;
  o.fallback = fallback;
  o.request_timeout_ms = 30000;
  arenad_client_t *c = NULL;
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  return c;
}

/* Stops the daemon, poisons its database, starts it again. */
static void poison(struct harness *h)
{
  ck_assert_int_eq(hn_stop(h), 0);
  char out[600], err[600];
  snprintf(out, sizeof out, "%s/poison.out", h->dir);
  snprintf(err, sizeof err, "%s/poison.err", h->dir);
  const char *argv[] = {tu_bin("POISON_DB"), h->db, NULL};
  int rc = tu_run(argv, NULL, NULL, out, err);
  char *e = tu_read_file(err, NULL);
  ck_assert_msg(rc == 0, "poison_db: exit %d: %s", rc, e ? e : "");
  free(e);
  char *o = tu_read_file(out, NULL);
  ck_assert_ptr_nonnull(o);
  ck_assert_msg(strstr(o, "poisoned 0: ") != NULL, "%s", o);
  free(o);
  ck_assert_int_eq(hn_start(h), 0);
}

static void assert_has(const char *hay, const char *needle)
{
  ck_assert_msg(strstr(hay, needle) != NULL, "'%s' not in '%s'", needle,
                hay);
}

START_TEST(test_poisoned_plan_is_a_miss)
{
  struct harness h;
  struct hn_graph hg;
  char path[600];
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  snprintf(path, sizeof path, "%s/models/person_detect.csv", tu_data_dir());
  ck_assert_int_eq(hn_load_csv(path, &hg), 0);
  struct planner_graph g = {hg.t, hg.n};
  struct planner_options o;
  planner_options_init(&o);
  struct arenad_model_key k = {(const uint8_t *)"poisoned", 8, NULL, 0};
  struct arenad_client_result r;
  arenad_client_result_init(&r);

  /* The daemon's own plan, stored. */
  arenad_client_t *c = client(&h, 1);
  ck_assert_int_eq(arenad_client_plan(c, &g, &o, &k, &r), 0);
  ck_assert_int_eq(r.local, 0);
  uint64_t good = r.plan.arena_bytes;
  arenad_client_close(c);

  /* Poisoned: the stored plan is the naive layout, larger than the
   * caller's arena (good). A plain call takes it as it is: it is a
   * legal plan, and no caller limit is given. */
  poison(&h);
  c = client(&h, 1);
  ck_assert_int_eq(arenad_client_plan(c, &g, &o, &k, &r), 0);
  ck_assert_int_eq(r.local, 0);
  uint64_t naive = r.plan.arena_bytes;
  ck_assert_uint_gt(naive, good);
  ck_assert_int_eq(hn_log_count(&h, "client reported unusable"), 0);
  /* Within good bytes, the client with fallback plans here, reports,
   * and the daemon plans the stored graph again and replaces it. */
  ck_assert_int_eq(arenad_client_plan_within(c, &g, &o, &k, good, &r), 0);
  ck_assert_int_eq(planner_verify(&g, &o, &r.plan, NULL), 0);
  ck_assert_int_eq(r.local, 1);
  ck_assert_int_eq(r.fallback_reason, ARENA_EUNUSABLE);
  ck_assert_uint_eq(r.plan.arena_bytes, good);
  assert_has(arenad_client_errmsg(c), "more than the");
  assert_has(arenad_client_errmsg(c), "reported to the daemon, which "
                                      "replaced it");
  ck_assert_int_eq(hn_log_count(&h, "replaced a stored plan a client "
                                    "reported unusable"),
                   1);
  /* Served from its cache from then on, to any call. */
  ck_assert_int_eq(arenad_client_plan(c, &g, &o, &k, &r), 0);
  ck_assert_int_eq(r.local, 0);
  ck_assert_int_eq(r.cached, 1);
  ck_assert_uint_eq(r.plan.arena_bytes, good);
  /* A plan at the graph's lower bound is not reported at all: asked
   * within one byte less, it is returned as it is. */
  ck_assert_int_eq(arenad_client_plan_within(c, &g, &o, &k, good - 1, &r),
                   0);
  ck_assert_int_eq(r.local, 0);
  ck_assert_uint_eq(r.plan.arena_bytes, good);
  assert_has(arenad_client_errmsg(c), "no plan of this graph is smaller");
  ck_assert_int_eq(hn_log_count(&h, "unusable report"), 0);
  arenad_client_close(c);

  /* Without fallback: reported, and the daemon's new plan served. */
  poison(&h);
  c = client(&h, 0);
  ck_assert_msg(arenad_client_plan_within(c, &g, &o, &k, good, &r) == 0,
                "%s", arenad_client_errmsg(c));
  ck_assert_int_eq(r.local, 0);
  ck_assert_msg(r.plan.arena_bytes == good, "%s", arenad_client_errmsg(c));
  assert_has(arenad_client_errmsg(c), "which replaced it, and its plan "
                                      "asked for again is usable");
  /* The log runs on across restarts: the second replacement. */
  ck_assert_int_eq(hn_log_count(&h, "replaced a stored plan a client "
                                    "reported unusable"),
                   2);
  arenad_client_close(c);

  /* A good plan above the load bound: a 100-byte tensor and a 10-byte
   * one aligned to 256 live together need 164 bytes, the load bound
   * says 138. Within 163 bytes, the client with fallback finds nothing
   * smaller and reports nothing; without fallback it reports, the
   * daemon plans the graph again, keeps its plan, and the plan is
   * returned as it is. */
  struct planner_tensor t2[2] = {
      {.id = 0, .size = 100, .first = 0, .last = 0,
       .pinned = PLANNER_NOT_PINNED},
      {.id = 1, .size = 10, .first = 0, .last = 0, .align = 256,
       .pinned = PLANNER_NOT_PINNED},
  };
  struct planner_graph g2 = {t2, 2};
  struct arenad_model_key k2 = {(const uint8_t *)"aligned", 7, NULL, 0};
  c = client(&h, 1);
  ck_assert_int_eq(arenad_client_plan(c, &g2, &o, &k2, &r), 0);
  uint64_t good2 = r.plan.arena_bytes;
  ck_assert_uint_eq(good2, 164);
  ck_assert_int_eq(arenad_client_plan_within(c, &g2, &o, &k2, good2 - 1, &r),
                   0);
  ck_assert_int_eq(r.local, 0);
  ck_assert_uint_eq(r.plan.arena_bytes, good2);
  assert_has(arenad_client_errmsg(c), "no smaller plan was found here");
  ck_assert_int_eq(hn_log_count(&h, "unusable report kept"), 0);
  arenad_client_close(c);
  c = client(&h, 0);
  ck_assert_int_eq(arenad_client_plan_within(c, &g2, &o, &k2, good2 - 1, &r),
                   0);
  ck_assert_uint_eq(r.plan.arena_bytes, good2);
  assert_has(arenad_client_errmsg(c), "reported to the daemon, which kept "
                                      "it (fallback is off");
  ck_assert_int_eq(hn_log_count(&h, "unusable report kept the stored "
                                    "plan"),
                   1);
  ck_assert_int_eq(hn_log_count(&h, "replaced a stored plan a client "
                                    "reported unusable"),
                   2);
  arenad_client_close(c);

  arenad_client_result_cleanup(&r);
  hn_graph_free(&hg);
  hn_cleanup(&h);
}
END_TEST

void service_add_unusable(TCase *tc)
{
  tcase_add_test(tc, test_poisoned_plan_is_a_miss);
}

/*
 * check_reliability_fallback.c - the reliability suite's test of the
 * client library when the daemon dies (see check_reliability.c):
 *
 *   fallback    the daemon is killed while 16 library clients wait on it:
 *               those with fallback on get a verified local plan, the
 *               others a clean error, all within their request timeout.
 *   unusable    the daemon's database poisoned (tests/poison_db: every
 *               stored plan replaced by the naive layout of its graph):
 *               16 library clients at once, half without fallback, each
 *               able to use no more than the daemon's own arena, each get
 *               a verified plan no larger than it; each poisoned plan is
 *               replaced once, and afterwards the daemon serves its own
 *               plans again.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arenad_client.h"
#include "check_reliability.h"
#include "testutil.h"

/* ---- fallback: the daemon dies under 16 waiting library clients ---------- */

#define FB_CLIENTS 16

struct fb_shared {
  int rc[FB_CLIENTS];          /* arenad_client_plan result */
  int local[FB_CLIENTS];       /* result.local */
  int verified[FB_CLIENTS];    /* plan checked against the graph */
  double done_ms[FB_CLIENTS];  /* CLOCK_MONOTONIC when the call returned */
  double local_ms[FB_CLIENTS]; /* time spent planning locally */
  int started[FB_CLIENTS];     /* set just before the plan call */
};

static void fb_client(const struct harness *h, struct fb_shared *sh,
                      unsigned c, uint32_t timeout_ms)
{
  struct vgraph v;
  char hash[32];
  snprintf(hash, sizeof hash, "fallback-%u", c);
  /* exact with an effort: each job holds a worker for a while */
  rel_vgraph_make(&v, 300, 900 + c, PLANNER_ALGO_EXACT, hash);
  v.o.effort = 750; /* 300 M work units, a few hundred ms of search */
  struct arenad_client_options co;
  arenad_client_options_init(&co);
  co.socket_path = h->sock;
  co.connect_timeout_ms = 500;
  co.request_timeout_ms = timeout_ms;
  co.fallback = c % 2 == 0;
  arenad_client_t *cl = NULL;
  if (arenad_client_open(&co, &cl) != 0)
    _exit(2);
  struct arenad_model_key k = {(const uint8_t *)hash, strlen(hash), NULL, 0};
  struct planner_graph pg = {v.g.t, v.g.n};
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  __atomic_store_n(&sh->started[c], 1, __ATOMIC_SEQ_CST);
  sh->rc[c] = arenad_client_plan(cl, &pg, &v.o, &k, &r);
  sh->done_ms[c] = rel_now_ms();
  sh->local[c] = r.local;
  sh->local_ms[c] = r.local ? (double)r.planning_us / 1e3 : 0;
  sh->verified[c] =
      sh->rc[c] == 0 && planner_verify(&pg, &v.o, &r.plan, NULL) == 0;
  arenad_client_result_cleanup(&r);
  arenad_client_close(cl);
  rel_vgraph_free(&v);
}

/* Waits (up to 5 s) until every client has started its plan call;
 * returns how many have. */
static unsigned fb_wait_started(struct fb_shared *sh)
{
  unsigned n = 0;
  for (unsigned tries = 0; tries < 500; tries++) {
    n = 0;
    for (unsigned c = 0; c < FB_CLIENTS; c++)
      n += __atomic_load_n(&sh->started[c], __ATOMIC_SEQ_CST) != 0;
    if (n == FB_CLIENTS)
      break;
    rel_sleep_ms(10);
  }
  return n;
}

START_TEST(test_fallback_on_kill)
{
  if (rel_skipped("fallback"))
    return;
  const uint32_t timeout_ms = 5000;
  struct figs f = {0};
  struct harness h;
  /* One long search at a time, each allowed its full effort. */
  rel_setup(&h, NULL, "workers = 1\n[planner]\nmax_effort = 750\n");
  ck_assert_int_eq(rel_start(&h), 0);
  struct fb_shared *sh = rel_shared_new(sizeof *sh);
  pid_t kids[FB_CLIENTS];
  for (unsigned c = 0; c < FB_CLIENTS; c++) {
    kids[c] = fork();
    ck_assert_int_ge(kids[c], 0);
    if (kids[c] == 0) {
      fb_client(&h, sh, c, timeout_ms);
      _exit(0);
    }
  }
  /* Kill once every client is in its call and its request has had time
   * to arrive: one job runs, the rest queue. A fixed delay from the forks
   * instead let the worker finish the quick searches first on a fast
   * machine, and left too few clients waiting to test anything. */
  unsigned started = fb_wait_started(sh);
  rel_sleep_ms(100);
  rel_rss_peak(&f, &h);
  double killed = rel_now_ms();
  rel_kill9(&h);
  f.crashes++;
  ck_assert_uint_eq(started, FB_CLIENTS);
  double worst_wait = 0;
  unsigned mid = 0;  /* clients still waiting when the daemon died */
  unsigned n_unavail = 0, n_proto = 0, n_other = 0; /* fallback off */
  for (unsigned c = 0; c < FB_CLIENTS; c++) {
    ck_assert_int_eq(rel_wait_child(kids[c]), 0);
    if (sh->done_ms[c] < killed ||
        (sh->rc[c] == 0 && !sh->local[c])) {
      /* answered by the daemon (before the kill, or sent just before it
       * and read just after): it must be a verified plan */
      ck_assert(sh->rc[c] == 0 && !sh->local[c] && sh->verified[c]);
      f.requests++;
      continue;
    }
    mid++;
    /* time from the kill to the call returning, local planning excluded */
    double wait = sh->done_ms[c] - killed - sh->local_ms[c];
    if (wait > worst_wait)
      worst_wait = wait;
    ck_assert_msg(wait < timeout_ms, "client %u waited %.0f ms", c, wait);
    if (c % 2 == 0) {
      /* fallback on: a verified local plan */
      ck_assert_msg(sh->rc[c] == 0 && sh->local[c] && sh->verified[c],
                    "client %u: rc %d local %d", c, sh->rc[c], sh->local[c]);
      f.requests++;
    } else {
      /* fallback off: a clean error, no plan */
      n_unavail += sh->rc[c] == ARENA_EUNAVAIL;
      n_proto += sh->rc[c] == ARENA_EPROTO;
      n_other += sh->rc[c] != ARENA_EUNAVAIL && sh->rc[c] != ARENA_EPROTO;
      ck_assert_msg(sh->rc[c] == ARENA_EUNAVAIL || sh->rc[c] == ARENA_EPROTO ||
                        sh->rc[c] == ARENA_ETIMEDOUT ||
                        sh->rc[c] == ARENA_EINTERNAL,
                    "client %u: rc %s", c, arena_err_name(sh->rc[c]));
    }
  }
  char extra[200];
  snprintf(extra, sizeof extra,
           "mid_request_at_kill=%u worst_wait_after_kill_ms=%.0f "
           "no_fallback_eunavail=%u no_fallback_eproto=%u "
           "no_fallback_other=%u",
           mid, worst_wait, n_unavail, n_proto, n_other);
  rel_figs_report("fallback", &f, extra);
  ck_assert_uint_ge(mid, FB_CLIENTS / 2);
  munmap(sh, sizeof *sh);
  hn_cleanup(&h);
}
END_TEST

/* ---- unusable: a poisoned database under 16 library clients -------------- */

#define UN_GRAPHS 8
#define UN_CLIENTS 16

struct un_shared {
  int rc[UN_CLIENTS];       /* arenad_client_plan result */
  int local[UN_CLIENTS];    /* result.local */
  int verified[UN_CLIENTS]; /* the plan checked against the graph */
  uint64_t arena[UN_CLIENTS];
};

static void un_graph(struct vgraph *v, unsigned g)
{
  char hash[32];
  snprintf(hash, sizeof hash, "unusable-%u", g);
  rel_vgraph_make(v, 200, 7000 + g, PLANNER_ALGO_BEST, hash);
}

/* Client c plans its graph, within max bytes (0: no limit). */
static void un_client(const struct harness *h, struct un_shared *sh,
                      unsigned c, uint64_t max)
{
  struct vgraph v;
  un_graph(&v, c % UN_GRAPHS);
  struct arenad_client_options co;
  arenad_client_options_init(&co);
  co.socket_path = h->sock;
  co.request_timeout_ms = 30000;
  co.fallback = c < UN_CLIENTS / 2;
  arenad_client_t *cl = NULL;
  if (arenad_client_open(&co, &cl) != 0)
    _exit(2);
  struct arenad_model_key k = {(const uint8_t *)v.hash, strlen(v.hash),
                               NULL, 0};
  struct planner_graph pg = {v.g.t, v.g.n};
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  sh->rc[c] = arenad_client_plan_within(cl, &pg, &v.o, &k, max, &r);
  sh->local[c] = r.local;
  sh->arena[c] = r.plan.arena_bytes;
  sh->verified[c] =
      sh->rc[c] == 0 && planner_verify(&pg, &v.o, &r.plan, NULL) == 0;
  arenad_client_result_cleanup(&r);
  arenad_client_close(cl);
  rel_vgraph_free(&v);
}

START_TEST(test_unusable_plans)
{
  if (rel_skipped("unusable"))
    return;
  struct figs f = {0};
  struct harness h;
  uint64_t own[UN_GRAPHS];
  rel_setup(&h, NULL, NULL);
  ck_assert_int_eq(rel_start(&h), 0);
  for (unsigned g = 0; g < UN_GRAPHS; g++) {
    struct vgraph v;
    un_graph(&v, g);
    rel_expect_plan(&h, &v, &f);
    Arenad__V1__Status st;
    ck_assert_int_eq(rel_lookup_once(&h, &v, &f, &st), 1);
    rel_vgraph_free(&v);
  }
  ck_assert_uint_eq(f.requests, UN_GRAPHS);
  /* The daemon's own arenas, from a client of its own. */
  {
    struct un_shared *sh = rel_shared_new(sizeof *sh);
    for (unsigned g = 0; g < UN_GRAPHS; g++) {
      un_client(&h, sh, UN_CLIENTS / 2 + g, 0); /* fallback off */
      ck_assert_int_eq(sh->rc[UN_CLIENTS / 2 + g], 0);
      own[g] = sh->arena[UN_CLIENTS / 2 + g];
    }
    munmap(sh, sizeof *sh);
  }
  /* Poison the database. */
  ck_assert_int_eq(hn_stop(&h), 0);
  char out[600];
  snprintf(out, sizeof out, "%s/poison.txt", h.dir);
  const char *argv[] = {tu_bin("POISON_DB"), h.db, NULL};
  ck_assert_int_eq(tu_run(argv, NULL, NULL, out, out), 0);
  f.bad_inputs += UN_GRAPHS;
  ck_assert_int_eq(rel_start(&h), 0);
  struct un_shared *sh = rel_shared_new(sizeof *sh);
  pid_t kids[UN_CLIENTS];
  for (unsigned c = 0; c < UN_CLIENTS; c++) {
    kids[c] = fork();
    ck_assert_int_ge(kids[c], 0);
    if (kids[c] == 0) {
      un_client(&h, sh, c, own[c % UN_GRAPHS]);
      _exit(0);
    }
  }
  unsigned local = 0;
  for (unsigned c = 0; c < UN_CLIENTS; c++) {
    ck_assert_int_eq(rel_wait_child(kids[c]), 0);
    ck_assert_msg(sh->rc[c] == 0 && sh->verified[c],
                  "client %u: rc %s, verified %d", c,
                  arena_err_name(sh->rc[c]), sh->verified[c]);
    ck_assert_msg(sh->arena[c] <= own[c % UN_GRAPHS],
                  "client %u: arena %llu, the daemon's own %llu", c,
                  (unsigned long long)sh->arena[c],
                  (unsigned long long)own[c % UN_GRAPHS]);
    local += sh->local[c];
    f.requests++;
  }
  int replaced = hn_log_count(&h, "replaced a stored plan a client "
                                  "reported unusable");
  /* Afterwards the daemon serves plans of its own size again. */
  for (unsigned g = 0; g < UN_GRAPHS; g++) {
    un_client(&h, sh, UN_CLIENTS / 2 + g, 0);
    ck_assert_int_eq(sh->rc[UN_CLIENTS / 2 + g], 0);
    ck_assert_int_eq(sh->local[UN_CLIENTS / 2 + g], 0);
    ck_assert_uint_eq(sh->arena[UN_CLIENTS / 2 + g], own[g]);
    f.requests++;
  }
  rel_rss_peak(&f, &h);
  char extra[160];
  snprintf(extra, sizeof extra, "poisoned=%d clients=%d planned_locally=%u "
           "replaced=%d", UN_GRAPHS, UN_CLIENTS, local, replaced);
  rel_figs_report("unusable", &f, extra);
  /* Each poisoned plan replaced once: the reports that came after found
   * the daemon's own plan, which planning again cannot shrink. */
  ck_assert_int_eq(replaced, UN_GRAPHS);
  munmap(sh, sizeof *sh);
  hn_cleanup(&h);
}
END_TEST

void reliability_add_fallback(TCase *tc)
{
  tcase_add_test(tc, test_fallback_on_kill);
  tcase_add_test(tc, test_unusable_plans);
}

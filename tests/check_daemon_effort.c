/*
 * check_daemon_effort.c - the effort of Plan requests through arenad:
 * max_effort caps every request, long searches never take the last
 * worker and wait in order, default_effort and max_effort from the
 * configuration (and their old names) are applied and reloaded, and the
 * daemon's plans are node for node those of planner_run() at the same
 * effort.
 */
#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_daemon.h"
#include "testutil.h"
#include "wire.h"

/* Whether fd has bytes to read right now. */
static int readable(int fd)
{
  struct pollfd p = {fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

/* Receives one reply on fd, which must be an OK plan of g. */
static Arenad__V1__Response *plan_reply(int fd, const struct hn_graph *g,
                                        uint64_t rid)
{
  Arenad__V1__Response *r = hn_recv(fd, 120000);
  cd_check_plan_reply(r, g, rid);
  return r;
}

/* Loads MiniMalloc's instance `name` from the test data into g, and
 * starts a daemon with configuration conf in h. */
static void start_on(struct harness *h, const char *conf, const char *name,
                     struct hn_graph *g)
{
  char path[128];
  snprintf(path, sizeof path, "tests/data/minimalloc/%s.1048576.csv", name);
  ck_assert_int_eq(hn_load_csv(path, g), 0);
  ck_assert_int_eq(hn_init(h, conf), 0);
  ck_assert_int_eq(hn_start(h), 0);
}

/* Asserts that reply r holds the plan planner_run() makes of g with
 * algorithm algo, alignment 64 and the given effort, node for node. */
static void assert_plan_of_effort(const Arenad__V1__Response *r,
                                  const struct hn_graph *g,
                                  enum planner_algo algo, uint32_t effort)
{
  struct planner_graph pg = {g->t, g->n};
  struct planner_options o;
  planner_options_init(&o);
  o.algo = algo;
  o.effort = effort;
  struct planner_plan p;
  planner_plan_init(&p);
  ck_assert_int_eq(planner_run(&pg, &o, &p, NULL), 0);
  ck_assert_uint_gt(p.nodes_explored, 0);
  ck_assert_uint_eq(r->plan->nodes_explored, p.nodes_explored);
  ck_assert_mem_eq(r->plan->offsets, p.offsets, g->n * 8);
  planner_plan_cleanup(&p);
}

/* max_effort caps every request, and long searches never take the last
 * worker. With 2 workers and max_effort 2000, three clients ask for the
 * largest effort there is on MiniMalloc's D and E, which no search
 * finishes within that effort: two run, the third waits for one of them.
 * A fourth client's cache miss on a small graph must be answered while
 * both searches still run. The capped plans are those of effort 2000,
 * and a request at the cap shares the capped one's plan. */
START_TEST(test_max_effort_spare_worker)
{
  struct hn_graph d, e, small;
  ck_assert_int_eq(hn_load_csv("tests/data/minimalloc/E.1048576.csv", &e), 0);
  hn_random_graph(&small, 200, 11);
  struct harness h;
  start_on(&h, "workers = 2\n[planner]\nmax_effort = 2000\n", "D", &d);
  int fa = hn_connect(&h), fb = hn_connect(&h), fx = hn_connect(&h);
  ck_assert_int_ge(fa, 0);
  ck_assert_int_ge(fb, 0);
  ck_assert_int_ge(fx, 0);
  ck_assert_int_eq(hn_send_plan(fa, 1, &d, "max-a", 6, 64, UINT32_MAX), 0);
  ck_assert_int_eq(hn_send_plan(fb, 2, &e, "max-b", 6, 64, UINT32_MAX), 0);
  ck_assert_int_eq(hn_send_plan(fx, 3, &d, "max-x", 6, 64, UINT32_MAX), 0);
  struct timespec ts = {0, 300 * 1000000L};
  nanosleep(&ts, NULL); /* both searches are running */
  Arenad__V1__Response *st = hn_stats(&h);
  ck_assert_ptr_nonnull(st);
  ck_assert_uint_eq(st->stats->jobs_queued, 3);
  wire_free_response(st);
  int fc = hn_connect(&h);
  ck_assert_int_ge(fc, 0);
  ck_assert_int_eq(hn_send_plan(fc, 4, &small, "small", 0, 64, 0), 0);
  Arenad__V1__Response *rc = plan_reply(fc, &small, 4);
  ck_assert_int_eq(rc->plan->cached, 0);
  /* Answered, and no maximal search has finished yet. */
  ck_assert_msg(!readable(fa) && !readable(fb) && !readable(fx),
                "a maximal search finished before the small miss was served");
  wire_free_response(rc);
  close(fc);
  /* The third maximal search waited for a slot: it cannot come first. */
  struct pollfd p[3] = {{fa, POLLIN, 0}, {fb, POLLIN, 0}, {fx, POLLIN, 0}};
  ck_assert_int_ge(poll(p, 3, 120000), 1);
  ck_assert_msg(!(p[2].revents & POLLIN) || (p[0].revents & POLLIN) ||
                    (p[1].revents & POLLIN),
                "the third maximal search ran before a slot was free");
  Arenad__V1__Response *ra = plan_reply(fa, &d, 1);
  Arenad__V1__Response *rb = plan_reply(fb, &e, 2);
  Arenad__V1__Response *rx = plan_reply(fx, &d, 3);
  /* Capped at 2000: the plan of effort 2000, node for node; no search
   * could finish. */
  assert_plan_of_effort(ra, &d, PLANNER_ALGO_EXACT, 2000);
  assert_plan_of_effort(rx, &d, PLANNER_ALGO_EXACT, 2000);
  ck_assert_int_eq(ra->plan->proven_optimal, 0);
  ck_assert_int_eq(rb->plan->proven_optimal, 0);
  /* A request at the cap shares the capped request's plan. */
  ck_assert_int_eq(hn_send_plan(fa, 5, &d, "max-a", 6, 64, 2000), 0);
  Arenad__V1__Response *r2 = plan_reply(fa, &d, 5);
  ck_assert_int_eq(r2->plan->cached, 1);
  ck_assert_mem_eq(r2->plan->offsets, ra->plan->offsets, d.n * 8);
  wire_free_response(r2);
  wire_free_response(ra);
  wire_free_response(rb);
  wire_free_response(rx);
  close(fa);
  close(fb);
  close(fx);
  ck_assert_int_eq(hn_stop(&h), 0);
  char *log = tu_read_file(h.log, NULL);
  ck_assert_ptr_nonnull(log);
  ck_assert_ptr_nonnull(strstr(log, "capped at max_effort 2000"));
  free(log);
  hn_cleanup(&h);
  hn_graph_free(&d);
  hn_graph_free(&e);
  hn_graph_free(&small);
}
END_TEST

/* A long job waiting for a slot: cancelled at once when its client goes
 * away, while the running one goes on; and on SIGTERM a waiting job still
 * runs and is answered before the daemon exits. One worker, so one long
 * slot. */
START_TEST(test_waiting_long_jobs)
{
  struct hn_graph d;
  struct harness h;
  start_on(&h, "workers = 1\n[planner]\nmax_effort = 1500\n"
               "[limits]\ndrain_timeout_ms = 120000\n", "D", &d);
  int fa = hn_connect(&h), fb = hn_connect(&h);
  ck_assert_int_eq(hn_send_plan(fa, 1, &d, "wait-a", 6, 64, 1500), 0);
  ck_assert_int_eq(hn_send_plan(fb, 2, &d, "wait-b", 6, 64, 1500), 0);
  nanosleep(&(struct timespec){0, 200 * 1000000L}, NULL);
  close(fb); /* b waits behind a: cancelled without running */
  int gone = 0;
  for (int i = 0; i < 50 && !gone; i++) {
    Arenad__V1__Response *st = hn_stats(&h);
    ck_assert_ptr_nonnull(st);
    gone = st->stats->jobs_cancelled == 1 && st->stats->jobs_queued == 1;
    wire_free_response(st);
    if (!gone)
      nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
  }
  ck_assert_msg(gone, "the waiting job was not cancelled");
  ck_assert(!readable(fa)); /* a still runs */
  /* Another waiter behind a, then SIGTERM: both are answered. */
  int fc = hn_connect(&h);
  ck_assert_int_eq(hn_send_plan(fc, 3, &d, "wait-c", 6, 64, 1500), 0);
  nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
  kill(h.pid, SIGTERM);
  Arenad__V1__Response *ra = plan_reply(fa, &d, 1);
  Arenad__V1__Response *rc = plan_reply(fc, &d, 3);
  ck_assert_mem_eq(ra->plan->offsets, rc->plan->offsets, d.n * 8);
  wire_free_response(ra);
  wire_free_response(rc);
  close(fa);
  close(fc);
  cd_assert_exits_0(&h);
  hn_cleanup(&h);
  hn_graph_free(&d);
}
END_TEST


/* The effort keys: default_effort and max_effort are printed, the old
 * default_budget_ms still sets default_effort, with a warning, and a
 * default above the cap is a configuration error. */
START_TEST(test_effort_config)
{
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  char conf[600], out[600], err[600], cmd[2400];
  snprintf(conf, sizeof conf, "%s/a.conf", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  snprintf(err, sizeof err, "%s/err", dir);
  FILE *f = fopen(conf, "w");
  ck_assert_ptr_nonnull(f);
  fputs("[planner]\ndefault_budget_ms = 45\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "'%s' --check-config --config %s >%s 2>%s",
           tu_bin("ARENAD"), conf, out, err);
  ck_assert_int_eq(system(cmd), 0);
  char *o = tu_read_file(out, NULL), *e = tu_read_file(err, NULL);
  ck_assert_ptr_nonnull(o);
  ck_assert_ptr_nonnull(e);
  ck_assert_ptr_nonnull(strstr(o, "\ndefault_effort = 45\n"));
  ck_assert_ptr_nonnull(strstr(o, "\nmax_effort = 400\n"));
  ck_assert_ptr_null(strstr(o, "budget"));
  ck_assert_str_eq(e, "arenad: warning: planner.default_budget_ms is "
                      "deprecated; use planner.default_effort (the same "
                      "number, in effort units)\n");
  free(o);
  free(e);
  f = fopen(conf, "w");
  ck_assert_ptr_nonnull(f);
  fputs("[planner]\ndefault_effort = 500\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "'%s' --check-config --config %s "
           ">/dev/null 2>%s", tu_bin("ARENAD"), conf, err);
  ck_assert_int_eq(system(cmd) >> 8, 78);
  e = tu_read_file(err, NULL);
  ck_assert_ptr_nonnull(e);
  ck_assert_ptr_nonnull(strstr(e, "default_effort is above"));
  free(e);
  tu_rm_rf(dir);
  free(dir);
}
END_TEST

/* The effort keys of a running daemon: with the old key
 * default_budget_ms it logs the deprecation and plans a request that
 * names no effort with the configured one; a request with the largest
 * effort gets the plan of max_effort, and of the new max_effort after
 * SIGHUP. Each the same plan, node for node, as planner_run() with that
 * effort. */
START_TEST(test_effort_keys_applied)
{
  struct hn_graph e;
  struct harness h;
  start_on(&h, "[planner]\ndefault_budget_ms = 7\nmax_effort = 30\n", "E",
           &e);
  Arenad__V1__Response *r = cd_plan_once(&h, &e, "eff", 1);
  cd_check_plan_reply(r, &e, 1);
  assert_plan_of_effort(r, &e, PLANNER_ALGO_BEST, 7);
  wire_free_response(r);
  static const uint32_t caps[] = {30, 60};
  for (int i = 0; i < 2; i++) {
    if (i) {
      char conf[96];
      snprintf(conf, sizeof conf,
               "[planner]\ndefault_budget_ms = 7\nmax_effort = %u\n",
               caps[i]);
      ck_assert_int_eq(hn_write_conf(&h, conf), 0);
      kill(h.pid, SIGHUP);
      nanosleep(&(struct timespec){0, 300 * 1000000L}, NULL);
    }
    char hash[16];
    snprintf(hash, sizeof hash, "reload-%d", i);
    int fd = hn_connect(&h);
    ck_assert_int_eq(hn_send_plan(fd, 1, &e, hash, 6, 64, UINT32_MAX), 0);
    r = plan_reply(fd, &e, 1);
    close(fd);
    assert_plan_of_effort(r, &e, PLANNER_ALGO_EXACT, caps[i]);
    wire_free_response(r);
  }
  ck_assert_int_eq(hn_stop(&h), 0);
  char *log = tu_read_file(h.log, NULL);
  ck_assert_ptr_nonnull(log);
  ck_assert_ptr_nonnull(strstr(log, "planner.default_budget_ms is "
                                    "deprecated"));
  free(log);
  hn_cleanup(&h);
  hn_graph_free(&e);
}
END_TEST

void cd_add_effort_tests(TCase *tc)
{
  tcase_add_test(tc, test_effort_config);
  tcase_add_test(tc, test_max_effort_spare_worker);
  tcase_add_test(tc, test_waiting_long_jobs);
  tcase_add_test(tc, test_effort_keys_applied);
}

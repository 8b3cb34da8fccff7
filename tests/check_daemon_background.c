/*
 * check_daemon_background.c - background improvement through a real arenad:
 * the effort ladder stores each strictly smaller plan, with generations,
 * each one offset for offset the plan planner_run() makes at its effort;
 * the switch in the configuration (and SIGHUP); work left in the database
 * resumes after a restart; SIGTERM does not wait for a running step; the
 * CPU bounds of a step and of an hour hold; and `arenactl plan
 * --wait-optimal` waits for the work and prints its end.
 *
 * And a graph of 10^5 tensors, far over the window, improved one window
 * at a time (test_window_improves_large).
 *
 * The graph is MiniMalloc's G at alignment 1, whose plans at effort 40,
 * 160, 640 and 2560 are all different and smaller each time, the last
 * one proven optimal.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_daemon.h"
#include "background.h"
#include "testutil.h"
#include "tracegen.h"
#include "wire.h"

#define G_CSV "tests/data/minimalloc/G.1048576.csv"
#define HASH "improve-G"

static const char *const CONF_ON = "[improve]\nthreads = 1\n";
static const char *const CONF_OFF = "[improve]\nenabled = 0\n";

static void sleep_ms(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* One Plan of g at alignment 1 and the default effort; returns the
 * reply, checked to be an OK plan (owned). */
static Arenad__V1__Response *plan_g(const struct harness *h,
                                    const struct hn_graph *g)
{
  int fd = hn_connect(h);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(hn_send_plan(fd, 7, g, HASH, 0, 1, 0), 0);
  Arenad__V1__Response *r = hn_recv(fd, 60000);
  close(fd);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  ck_assert_int_eq(r->body_case, ARENAD__V1__RESPONSE__BODY_PLAN);
  ck_assert_uint_eq(r->plan->n_offsets, g->n);
  return r;
}

/* planner_run() of g at alignment 1, effort e, one thread. */
static void plan_at(const struct hn_graph *g, uint32_t e,
                    struct planner_plan *p)
{
  struct planner_graph pg = {g->t, g->n};
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = 1;
  o.effort = e;
  planner_plan_init(p);
  ck_assert_int_eq(planner_run(&pg, &o, p, NULL), 0);
}

/* Asks for g's plan every 100 ms until the daemon no longer improves it,
 * for at most secs; returns the last reply (owned). */
static Arenad__V1__Response *until_done(const struct harness *h,
                                        const struct hn_graph *g, int secs)
{
  Arenad__V1__Response *r = NULL;
  for (int i = 0; i < secs * 10; i++) {
    wire_free_response(r);
    r = plan_g(h, g);
    if (!r->plan->improving)
      break;
    sleep_ms(100);
  }
  return r;
}

static Arenad__V1__StatsReply *stats_of(Arenad__V1__Response **keep,
                                        const struct harness *h)
{
  *keep = hn_stats(h);
  ck_assert_ptr_nonnull(*keep);
  return (*keep)->stats;
}

/* The ladder from the default effort: 40 -> 160 -> 640 -> 2560, each
 * step smaller on G, 2560 proven optimal: generation 4, and the final
 * plan is planner_run()'s at effort 2560 offset for offset; the first
 * answer said improving, the last does not. */
START_TEST(test_ladder_improves_and_matches_local)
{
  struct hn_graph g;
  struct harness h;
  ck_assert_int_eq(hn_load_csv(G_CSV, &g), 0);
  ck_assert_int_eq(hn_init(&h, CONF_ON), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  Arenad__V1__Response *first = plan_g(&h, &g);
  struct planner_plan p40, p2560;
  plan_at(&g, PLANNER_DEFAULT_EFFORT, &p40);
  plan_at(&g, 2560, &p2560);
  ck_assert_uint_eq(first->plan->arena_bytes, p40.arena_bytes);
  ck_assert(!first->plan->proven_optimal);
  ck_assert(first->plan->improving);
  ck_assert_uint_eq(first->plan->generation, 1);
  ck_assert_uint_eq(first->plan->effort, PLANNER_DEFAULT_EFFORT);

  Arenad__V1__Response *last = until_done(&h, &g, 60);
  ck_assert(!last->plan->improving);
  ck_assert(last->plan->proven_optimal);
  ck_assert_uint_eq(last->plan->effort, 2560);
  ck_assert_uint_eq(last->plan->generation, 4);
  ck_assert_uint_eq(last->plan->arena_bytes, p2560.arena_bytes);
  ck_assert_uint_lt(last->plan->arena_bytes, first->plan->arena_bytes);
  ck_assert_mem_eq(last->plan->offsets, p2560.offsets, g.n * 8);

  Arenad__V1__Response *sr;
  Arenad__V1__StatsReply *st = stats_of(&sr, &h);
  ck_assert(st->improve_enabled);
  ck_assert_uint_eq(st->improve_runs, 3);
  ck_assert_uint_eq(st->improve_gains, 3);
  ck_assert_uint_gt(st->improve_cpu_ms, 0);
  wire_free_response(sr);

  /* List shows the same state. */
  Arenad__V1__Response *ls = hn_list(&h, 0);
  ck_assert_ptr_nonnull(ls);
  ck_assert_uint_eq(ls->list->n_entries, 1);
  const Arenad__V1__CacheEntry *e = ls->list->entries[0];
  ck_assert_uint_eq(e->generation, 4);
  ck_assert_uint_eq(e->effort, 2560);
  ck_assert_uint_eq(e->effort_tried, 2560);
  ck_assert(e->has_graph);
  ck_assert(!e->improving);
  wire_free_response(ls);

  wire_free_response(first);
  wire_free_response(last);
  planner_plan_cleanup(&p40);
  planner_plan_cleanup(&p2560);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&g);
}
END_TEST

/* With `enabled = 0` nothing runs and replies never say improving; a
 * SIGHUP that turns it on starts the work on the plan already stored,
 * from the database; and the work left when the daemon stops goes on
 * after a restart. */
START_TEST(test_switch_reload_and_restart)
{
  struct hn_graph g;
  struct harness h;
  ck_assert_int_eq(hn_load_csv(G_CSV, &g), 0);
  ck_assert_int_eq(hn_init(&h, CONF_OFF), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  Arenad__V1__Response *r = plan_g(&h, &g);
  ck_assert(!r->plan->improving);
  ck_assert_uint_eq(r->plan->generation, 1);
  uint64_t first = r->plan->arena_bytes;
  wire_free_response(r);
  sleep_ms(1500);
  Arenad__V1__Response *sr;
  Arenad__V1__StatsReply *st = stats_of(&sr, &h);
  ck_assert(!st->improve_enabled);
  ck_assert_uint_eq(st->improve_runs, 0);
  wire_free_response(sr);

  /* Stopped and started again, still off: nothing; then on by SIGHUP
   * (with a ladder that stops at 160, one step). */
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  ck_assert_int_eq(hn_write_conf(&h, "[improve]\nthreads = 1\n"
                                     "max_effort = 160\n"),
                   0);
  ck_assert_int_eq(kill(h.pid, SIGHUP), 0);
  r = NULL;
  for (int i = 0; i < 300; i++) {
    wire_free_response(r);
    sleep_ms(100);
    r = plan_g(&h, &g);
    if (r->plan->generation == 2 && !r->plan->improving)
      break;
  }
  ck_assert_uint_eq(r->plan->generation, 2);
  ck_assert_uint_eq(r->plan->effort, 160);
  ck_assert(!r->plan->improving); /* the top of this ladder was tried */
  ck_assert_uint_lt(r->plan->arena_bytes, first);
  struct planner_plan p160;
  plan_at(&g, 160, &p160);
  ck_assert_mem_eq(r->plan->offsets, p160.offsets, g.n * 8);
  planner_plan_cleanup(&p160);
  wire_free_response(r);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&g);
}
END_TEST

/* SIGTERM while a long background step runs: the daemon exits at once
 * (the step gives up and stores nothing), not after the step. The step
 * here, MiniMalloc's E at effort 100000, would take minutes. */
START_TEST(test_sigterm_does_not_wait)
{
  struct hn_graph e;
  struct harness h;
  ck_assert_int_eq(hn_load_csv("tests/data/minimalloc/E.1048576.csv", &e),
                   0);
  ck_assert_int_eq(hn_init(&h, "[improve]\nthreads = 1\n"
                               "max_effort = 100000\n"),
                   0);
  ck_assert_int_eq(hn_start(&h), 0);
  Arenad__V1__Response *r = plan_g(&h, &e);
  wire_free_response(r);
  /* Wait until the ladder is past its short steps (40 x 4^3 = 2560:
   * 0.1 to 4 s each), so the step running is a long one. */
  Arenad__V1__Response *sr = NULL;
  for (int i = 0; i < 600; i++) {
    wire_free_response(sr);
    sleep_ms(100);
    Arenad__V1__StatsReply *st = stats_of(&sr, &h);
    if (st->improve_runs >= 3 && st->improve_active == 1)
      break;
  }
  ck_assert_uint_ge(sr->stats->improve_runs, 3);
  ck_assert_uint_eq(sr->stats->improve_active, 1);
  wire_free_response(sr);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ck_assert_int_eq(hn_stop(&h), 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) +
             (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  /* The step alone runs for minutes; a drain that waited for it would
   * end at the drain deadline (10 s) with a warning. */
  ck_assert_msg(s < 5.0, "SIGTERM took %.1f s", s);
  ck_assert_int_eq(hn_log_count(&h, "drain deadline passed"), 0);
  hn_cleanup(&h);
  hn_graph_free(&e);
}
END_TEST

/* arenactl plan --wait-optimal prints the end of the work: the plan the
 * last step stored, with its generation and effort. A bad value is a
 * usage error, and so is --wait-optimal with --local. */
START_TEST(test_cli_wait_optimal)
{
  struct harness h;
  ck_assert_int_eq(hn_init(&h, CONF_ON), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  const char *exe = tu_bin("ARENACTL");
  char out[300], errp[300];
  snprintf(out, sizeof out, "%s/cli.out", h.dir);
  snprintf(errp, sizeof errp, "%s/cli.err", h.dir);
  const char *argv[] = {exe, "plan", "-s", h.sock, "--align", "1",
                        "--wait-optimal=60", "--no-fallback", "--json",
                        G_CSV, NULL};
  ck_assert_int_eq(tu_run(argv, NULL, NULL, out, errp), 0);
  char *o = tu_read_file(out, NULL);
  ck_assert_ptr_nonnull(o);
  ck_assert_msg(strstr(o, "\"generation\":4,\"effort\":2560,"
                          "\"improving\":false,\"cached\":true") != NULL,
                "%s", o);
  ck_assert_msg(strstr(o, "\"proven_optimal\":true") != NULL, "%s", o);
  free(o);
  const char *bad[] = {exe, "plan", "-s", h.sock, "--wait-optimal=0",
                       G_CSV, NULL};
  ck_assert_int_eq(tu_run(bad, NULL, NULL, out, errp), 64);
  const char *local[] = {exe, "plan", "--local", "--wait-optimal", G_CSV,
                         NULL};
  ck_assert_int_eq(tu_run(local, NULL, NULL, out, errp), 64);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* run_cpu_ms: a step past it is given up, its plan stays, and the row is
 * done (never tried again). cpu_ms_per_hour: once spent, a running step
 * pauses (it neither ends nor stores) until more budget comes, here by
 * SIGHUP. */
START_TEST(test_cpu_bounds)
{
  struct hn_graph g;
  struct harness h;
  ck_assert_int_eq(hn_load_csv(G_CSV, &g), 0);
  ck_assert_int_eq(hn_init(&h, "[improve]\nthreads = 1\nrun_cpu_ms = 1\n"),
                   0);
  ck_assert_int_eq(hn_start(&h), 0);
  Arenad__V1__Response *r = plan_g(&h, &g);
  uint64_t first = r->plan->arena_bytes;
  wire_free_response(r);
  Arenad__V1__Response *last = until_done(&h, &g, 30);
  ck_assert(!last->plan->improving);
  ck_assert_uint_eq(last->plan->generation, 1);
  ck_assert_uint_eq(last->plan->arena_bytes, first);
  wire_free_response(last);
  Arenad__V1__Response *sr;
  Arenad__V1__StatsReply *st = stats_of(&sr, &h);
  ck_assert_uint_eq(st->improve_runs, 1);
  ck_assert_uint_eq(st->improve_gains, 0);
  wire_free_response(sr);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);

  /* No budget: the step starts and pauses. */
  ck_assert_int_eq(hn_init(&h, "[improve]\nthreads = 1\n"
                               "cpu_ms_per_hour = 0\n"),
                   0);
  ck_assert_int_eq(hn_start(&h), 0);
  wire_free_response(plan_g(&h, &g));
  sleep_ms(1500);
  st = stats_of(&sr, &h);
  ck_assert_uint_eq(st->improve_active, 1);
  ck_assert_uint_eq(st->improve_runs, 0);
  wire_free_response(sr);
  ck_assert_int_eq(hn_write_conf(&h, "[improve]\nthreads = 1\n"), 0);
  ck_assert_int_eq(kill(h.pid, SIGHUP), 0);
  last = until_done(&h, &g, 60);
  ck_assert(!last->plan->improving);
  ck_assert_uint_eq(last->plan->generation, 4);
  wire_free_response(last);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&g);
}
END_TEST

/* The state a Lookup gives for g's plan: 1 improving, 0 not. */
static int lookup_improving(const struct harness *h, const struct hn_graph *g)
{
  uint8_t gd[PLANNER_DIGEST_LEN];
  struct planner_graph pg = {g->t, g->n};
  ck_assert_int_eq(planner_graph_digest(&pg, gd), 0);
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Lookup lk = ARENAD__V1__LOOKUP__INIT;
  lk.model_hash.data = (uint8_t *)HASH;
  lk.model_hash.len = strlen(HASH);
  lk.graph_digest.data = gd;
  lk.graph_digest.len = PLANNER_DIGEST_LEN;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = 3;
  req.body_case = ARENAD__V1__REQUEST__BODY_LOOKUP;
  req.lookup = &lk;
  int fd = hn_connect(h);
  ck_assert_int_ge(fd, 0);
  Arenad__V1__Response *r = hn_call(fd, &req, 10000);
  close(fd);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  ck_assert_uint_eq(r->lookup->n_plans, 1);
  int improving = r->lookup->plans[0]->improving;
  wire_free_response(r);
  return improving;
}

/* The state List gives for the one stored plan. */
static int list_improving(const struct harness *h)
{
  Arenad__V1__Response *r = hn_list(h, 0);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->list->n_entries, 1);
  int improving = r->list->entries[0]->improving;
  wire_free_response(r);
  return improving;
}

/* A graph over improve.max_tensors is not improved, and every answer
 * says so alike, on the miss path and after a restart: the Plan reply,
 * a Lookup and List (Lookup, which arenactl plan --wait-optimal asks,
 * said "improving" until the background threads happened to mark the
 * row, and after a restart "final"). The row is left for a larger cap:
 * raised by SIGHUP, every answer says improving, and the ladder runs to
 * the optimum. */
START_TEST(test_over_max_tensors_same_rule)
{
  struct hn_graph g;
  struct harness h;
  char conf[128];
  ck_assert_int_eq(hn_load_csv(G_CSV, &g), 0);
  snprintf(conf, sizeof conf, "[improve]\nthreads = 1\nmax_tensors = %zu\n",
           g.n - 1);
  ck_assert_int_eq(hn_init(&h, conf), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  Arenad__V1__Response *r = plan_g(&h, &g);
  ck_assert(!r->plan->proven_optimal);
  ck_assert(!r->plan->improving);
  uint64_t first = r->plan->arena_bytes;
  wire_free_response(r);
  ck_assert(!lookup_improving(&h, &g));
  ck_assert(!list_improving(&h));
  r = plan_g(&h, &g); /* from the in-memory cache */
  ck_assert(r->plan->cached && !r->plan->improving);
  wire_free_response(r);
  sleep_ms(1500); /* whatever the background threads do meanwhile */
  ck_assert(!lookup_improving(&h, &g));

  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  r = plan_g(&h, &g); /* from the database */
  ck_assert(r->plan->cached && !r->plan->improving);
  ck_assert_uint_eq(r->plan->arena_bytes, first);
  ck_assert_uint_eq(r->plan->generation, 1);
  wire_free_response(r);
  ck_assert(!lookup_improving(&h, &g));
  ck_assert(!list_improving(&h));

  /* The cap raised: the same rule now says improving, and it is. */
  ck_assert_int_eq(hn_write_conf(&h, "[improve]\nthreads = 1\n"), 0);
  ck_assert_int_eq(kill(h.pid, SIGHUP), 0);
  sleep_ms(300);
  r = plan_g(&h, &g);
  int answered_improving = r->plan->improving || r->plan->generation > 1;
  wire_free_response(r);
  ck_assert(answered_improving);
  Arenad__V1__Response *last = until_done(&h, &g, 60);
  ck_assert(!last->plan->improving);
  ck_assert(last->plan->proven_optimal);
  ck_assert_uint_lt(last->plan->arena_bytes, first);
  ck_assert(!lookup_improving(&h, &g));
  wire_free_response(last);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&g);
}
END_TEST

/* A graph of 10^5 tensors (an IOPDDL-like trace), above its lower bound
 * at the default effort, is improved while the daemon idles, one window
 * of improve.window_tensors at a time: the plan served later is
 * strictly smaller, verifies against the graph, and has a higher
 * generation. (Before, improve.max_tensors was 16384, and such a graph
 * was never improved nor answered improving.) */
START_TEST(test_window_improves_large)
{
  struct hn_graph g;
  struct harness h;
  g.t = tracegen_make(TRACEGEN_IOPDDL, 100000, 1, &g.n);
  ck_assert_ptr_nonnull(g.t);
  ck_assert_int_eq(hn_init(&h, CONF_ON), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  int fd = hn_connect(&h);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(hn_send_plan(fd, 1, &g, "window", 0, 64, 0), 0);
  Arenad__V1__Response *first = hn_recv(fd, 60000);
  close(fd);
  ck_assert_ptr_nonnull(first);
  ck_assert_int_eq(first->status, ARENAD__V1__STATUS__OK);
  ck_assert(!first->plan->proven_optimal);
  ck_assert(first->plan->improving);
  ck_assert_uint_eq(first->plan->generation, 1);
  Arenad__V1__Response *r = NULL;
  for (int i = 0; i < 300; i++) { /* 30 s at most; about 2 s here */
    wire_free_response(r);
    fd = hn_connect(&h);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(hn_send_plan(fd, 2, &g, "window", 0, 64, 0), 0);
    r = hn_recv(fd, 60000);
    close(fd);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
    if (r->plan->generation > 1)
      break;
    sleep_ms(100);
  }
  ck_assert_uint_gt(r->plan->generation, 1);
  ck_assert_uint_lt(r->plan->arena_bytes, first->plan->arena_bytes);
  ck_assert_uint_ge(r->plan->arena_bytes, r->plan->lower_bound_bytes);
  struct planner_graph pg = {g.t, g.n};
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = 64;
  struct planner_plan p;
  planner_plan_init(&p);
  ck_assert_uint_eq(r->plan->n_offsets, g.n);
  p.offsets = r->plan->offsets;
  p.n_offsets = g.n;
  p.arena_bytes = r->plan->arena_bytes;
  ck_assert_int_eq(planner_verify(&pg, &o, &p, NULL), 0);
  Arenad__V1__Response *sr;
  Arenad__V1__StatsReply *st = stats_of(&sr, &h);
  ck_assert_uint_ge(st->improve_gains, 1);
  wire_free_response(sr);
  wire_free_response(first);
  wire_free_response(r);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  free(g.t);
}
END_TEST

/* The ladder itself. */
START_TEST(test_next_effort)
{
  ck_assert_uint_eq(improve_next_effort(0, 20000), PLANNER_DEFAULT_EFFORT);
  ck_assert_uint_eq(improve_next_effort(40, 20000), 160);
  ck_assert_uint_eq(improve_next_effort(10240, 20000), 20000);
  ck_assert_uint_eq(improve_next_effort(20000, 20000), 0);
  ck_assert_uint_eq(improve_next_effort(400, 100), 0);
  ck_assert_uint_eq(improve_next_effort(0, 10), 10);
  ck_assert_uint_eq(improve_next_effort(3000000000u, 4000000000u),
                    4000000000u);
}
END_TEST

void cd_add_improve_tests(TCase *tc)
{
  tcase_add_test(tc, test_next_effort);
  tcase_add_test(tc, test_ladder_improves_and_matches_local);
  tcase_add_test(tc, test_switch_reload_and_restart);
  tcase_add_test(tc, test_sigterm_does_not_wait);
  tcase_add_test(tc, test_cli_wait_optimal);
  tcase_add_test(tc, test_cpu_bounds);
  tcase_add_test(tc, test_over_max_tensors_same_rule);
}

void cd_add_window_tests(TCase *tc)
{
  tcase_add_test(tc, test_window_improves_large);
}

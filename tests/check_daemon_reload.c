/*
 * check_daemon_reload.c - SIGHUP while planning jobs run: a job keeps the
 * configuration it was accepted under (a reload that lowers max_tensors
 * does not fail a request already queued), and many reloads while
 * clients plan cost no request and leave a daemon that exits cleanly
 * (under `make SANITIZE=thread test` a data race between a reload and a
 * worker makes that exit status non-zero).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_daemon.h"
#include "testutil.h"
#include "wire.h"

static void sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* How many reloads the daemon has logged. */
static int reloads(const struct harness *h)
{
  size_t len;
  char *log = tu_read_file(h->log, &len);
  int n = 0;
  for (const char *p = log; p && (p = strstr(p, "configuration reloaded"));
       p++)
    n++;
  free(log);
  return n;
}

/* Rewrites the configuration file with `extra` after the harness's own
 * lines, sends SIGHUP and waits until the daemon logged reload number
 * `nth`. */
static void reload(struct harness *h, const char *extra, int nth)
{
  FILE *f = fopen(h->conf, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "[daemon]\nsocket = %s\ndatabase = %s\n%s\n", h->sock, h->db,
          extra);
  fclose(f);
  ck_assert_int_eq(kill(h->pid, SIGHUP), 0);
  for (int i = 0; i < 1000 && reloads(h) < nth; i++)
    sleep_ms(10);
  ck_assert_int_eq(reloads(h), nth);
}

/* A default effort that keeps a worker busy for seconds. */
#define PLANNER_SLOW "[planner]\ndefault_effort = 20000\nmax_effort = 20000\n"

START_TEST(queued_job_keeps_its_limits)
{
  struct harness h;
  struct hn_graph blocker, blocker2, g, g2;
  hn_random_graph(&blocker, 60000, 21);
  hn_random_graph(&blocker2, 60000, 24);
  hn_random_graph(&g, 5000, 22);
  hn_random_graph(&g2, 5000, 23);
  /* The pool has workers + 1 threads and an effort above default_effort
   * may use only `workers` of them, so the blockers run at the default
   * effort, set high, and there are two of them. */
  ck_assert_int_eq(hn_init(&h, "[daemon]\nworkers = 1\n"
                                "[limits]\nmax_tensors = 100000\n" PLANNER_SLOW),
                   0);
  ck_assert_int_eq(hn_start(&h), 0);
  /* both threads are busy until fd1 goes away (effort 20000 each) */
  int fd1 = hn_connect(&h), fd2 = hn_connect(&h);
  ck_assert_int_ge(fd1, 0);
  ck_assert_int_ge(fd2, 0);
  ck_assert_int_eq(hn_send_plan(fd1, 1, &blocker, "blocker", 6, 64, 0), 0);
  ck_assert_int_eq(hn_send_plan(fd1, 4, &blocker2, "blocker2", 6, 64, 0), 0);
  /* accepted under max_tensors 100000, queued behind it; the Ping after
   * it is answered on the loop once the Plan frame has been handled */
  ck_assert_int_eq(hn_send_plan(fd2, 2, &g, "queued", 0, 64, 1), 0);
  Arenad__V1__Response *r = hn_ping(fd2, 50, 5000);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->request_id, 50);
  wire_free_response(r);
  reload(&h,
         "[daemon]\nworkers = 1\n[limits]\nmax_tensors = 1000\n" PLANNER_SLOW,
         1);
  close(fd1); /* cancels the blockers: now the queued job runs */
  r = hn_recv(fd2, 30000);
  cd_check_plan_reply(r, &g, 2);
  wire_free_response(r);
  /* a request that arrives after the reload gets the new limit */
  ck_assert_int_eq(hn_send_plan(fd2, 3, &g2, "late", 0, 64, 1), 0);
  r = hn_recv(fd2, 30000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__TOO_LARGE);
  wire_free_response(r);
  close(fd2);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&blocker);
  hn_graph_free(&blocker2);
  hn_graph_free(&g);
  hn_graph_free(&g2);
}
END_TEST

enum { N_CLIENTS = 3, N_REQUESTS = 40, N_RELOADS = 30 };

/* A client process: plans new graphs and repeats old ones, and checks
 * every reply. Exits 0 when all were right. */
static void client(const struct harness *h, int id)
{
  for (int i = 0; i < N_REQUESTS; i++) {
    struct hn_graph g;
    /* every third request repeats an earlier graph (a hot hit) */
    int seed = i % 3 == 2 ? i - 2 : i;
    hn_random_graph(&g, 2000, 1000 * (uint64_t)id + (uint64_t)seed);
    char hash[32];
    snprintf(hash, sizeof hash, "c%d-%d", id, seed);
    int fd = hn_connect(h);
    Arenad__V1__Response *r = NULL;
    if (fd >= 0 && hn_send_plan(fd, 1 + (uint64_t)i, &g, hash, 0, 64, 0) == 0)
      r = hn_recv(fd, 30000);
    char err[ARENA_ERR_LEN];
    int ok = hn_plan_reply_ok(r, &g, err) == 0;
    if (!ok)
      fprintf(stderr, "client %d request %d: %s\n", id, i, err);
    wire_free_response(r);
    if (fd >= 0)
      close(fd);
    hn_graph_free(&g);
    if (!ok)
      _exit(1);
  }
  _exit(0);
}

START_TEST(reloads_while_jobs_run)
{
  static const char *const confs[2] = {
      "[daemon]\nlog_level = debug\n[limits]\nmax_tensors = 50000\n"
      "[planner]\ndefault_effort = 5\n[cache]\nmemory_entries = 2\n",
      "[daemon]\nlog_level = info\n[limits]\nmax_tensors = 40000\n"
      "[planner]\ndefault_effort = 50\n[cache]\nmemory_entries = 100\n",
  };
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  pid_t kids[N_CLIENTS];
  for (int c = 0; c < N_CLIENTS; c++) {
    kids[c] = fork();
    ck_assert_int_ge(kids[c], 0);
    if (kids[c] == 0)
      client(&h, c);
  }
  for (int i = 1; i <= N_RELOADS; i++) {
    reload(&h, confs[i % 2], i);
    sleep_ms(20);
  }
  for (int c = 0; c < N_CLIENTS; c++) {
    int st;
    ck_assert_int_eq(waitpid(kids[c], &st, 0), kids[c]);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "client %d failed (status %d)", c, st);
  }
  Arenad__V1__Response *st = hn_stats(&h);
  ck_assert_ptr_nonnull(st);
  ck_assert_uint_ge(st->stats->plans_computed, 1);
  wire_free_response(st);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

void cd_add_reload_tests(TCase *tc)
{
  tcase_add_test(tc, queued_job_keeps_its_limits);
  tcase_add_test(tc, reloads_while_jobs_run);
}

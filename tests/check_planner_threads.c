/*
 * check_planner_threads.c - `best` on threads: the same plan for every
 * thread count, the stop callback never called by two threads at once,
 * cancellation on threads, and planner_cpu_threads() following the
 * affinity mask.
 */
#define _GNU_SOURCE 1 /* pthread_setaffinity_np, CPU_SET */
#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_planner.h"
#include "graph_csv.h"
#include "planner.h"
#include "testutil.h"

static const uint32_t thread_counts[] = {0, 1, 2, 3, 4, 16};
#define N_COUNTS (sizeof thread_counts / sizeof *thread_counts)

/* Plans g with `best` on every thread count (capacity 0: none);
 * asserts that all plans are identical to the first and returns its
 * algorithm. */
static enum planner_algo same_plans(const struct planner_graph *g,
                                    uint64_t alignment, uint64_t capacity,
                                    uint32_t effort, const char *what)
{
  struct planner_plan p[N_COUNTS];
  char err[ARENA_ERR_LEN];
  for (size_t k = 0; k < N_COUNTS; k++) {
    struct planner_options o;
    planner_options_init(&o);
    o.alignment = alignment;
    o.capacity = capacity;
    o.effort = effort;
    o.threads = thread_counts[k];
    planner_plan_init(&p[k]);
    ck_assert_msg(planner_run(g, &o, &p[k], err) == 0, "%s: %s", what, err);
  }
  for (size_t k = 1; k < N_COUNTS; k++) {
    ck_assert_msg(p[k].algo == p[0].algo, "%s: %u threads chose %s, not %s",
                  what, thread_counts[k], planner_algo_name(p[k].algo),
                  planner_algo_name(p[0].algo));
    ck_assert_uint_eq(p[k].arena_bytes, p[0].arena_bytes);
    ck_assert_uint_eq(p[k].lower_bound_bytes, p[0].lower_bound_bytes);
    ck_assert_uint_eq(p[k].nodes_explored, p[0].nodes_explored);
    ck_assert_msg(memcmp(p[k].offsets, p[0].offsets,
                         g->n_tensors * sizeof *p[0].offsets) == 0,
                  "%s: offsets differ on %u threads", what, thread_counts[k]);
  }
  enum planner_algo a = p[0].algo;
  for (size_t k = 0; k < N_COUNTS; k++)
    planner_plan_cleanup(&p[k]);
  return a;
}

/* Copies the n tensors of t into big again and again, in disjoint spans
 * of time, until at least BIG_MIN of them have a size (ids stay unique);
 * tensors that live through the whole of t are copied once and live
 * through the whole of big. The result is large enough for best to use
 * threads. Returns how many tensors big holds, or 0 when t has no sized
 * tensor to copy. */
#define BIG_MIN 5000
static size_t replicate(const struct planner_tensor *t, size_t n,
                        struct planner_tensor *big)
{
  int64_t end = 0;
  for (size_t i = 0; i < n; i++)
    if (t[i].last > end)
      end = t[i].last;
  size_t per_copy = 0;
  for (size_t i = 0; i < n; i++)
    per_copy += t[i].size && !(t[i].first == 0 && t[i].last == end);
  if (per_copy == 0)
    return 0;
  size_t m = 0, sized = 0, copies = 0;
  for (uint32_t c = 0; sized < BIG_MIN; c++, copies++)
    for (size_t i = 0; i < n; i++) {
      int whole = t[i].first == 0 && t[i].last == end;
      if (whole && c > 0)
        continue;
      big[m] = t[i];
      big[m].id = t[i].id + c * 1000u;
      big[m].first += (int64_t)c * (end + 1);
      big[m].last += (int64_t)c * (end + 1);
      sized += big[m].size != 0;
      m++;
    }
  for (size_t i = 0; i < m; i++) /* the whole ones span every copy */
    if (big[i].first == 0 && big[i].last == end)
      big[i].last = (int64_t)copies * (end + 1) - 1;
  return m;
}

/* Random graphs of every shape, replicated to a size where best uses
 * threads: whichever heuristic wins, and whether or not one meets the
 * bound early, the plan does not depend on threads. Half the rounds ask
 * a capacity that every plan fits, which must not change that either.
 * Up to 8 graphs of each winner are checked. */
START_TEST(test_threads_same_plan)
{
  struct planner_tensor t[40];
  static struct planner_tensor big[40 * BIG_MIN];
  uint64_t rs = 0x7e4d;
  int won[PLANNER_ALGO__COUNT] = {0}, tried[PLANNER_ALGO__COUNT] = {0};
  for (int r = 0; r < 3000; r++) {
    size_t n = cp_random_graph(&rs, (enum cp_shape)(r % CP_SHAPE__N), t, 40);
    uint64_t al = 1u << tu_rand_range(&rs, 0, 6);
    uint64_t cap = r % 2 ? (uint64_t)1 << 62 : 0;
    struct planner_options o;
    planner_options_init(&o);
    o.alignment = al;
    o.capacity = cap;
    o.effort = 1;
    struct planner_graph g = {t, n};
    struct planner_plan p;
    planner_plan_init(&p);
    ck_assert_int_eq(planner_run(&g, &o, &p, NULL), 0);
    enum planner_algo a = p.algo; /* on one copy: picks the rounds */
    planner_plan_cleanup(&p);
    if (tried[a]++ >= 8)
      continue;
    struct planner_graph gb = {big, replicate(t, n, big)};
    if (gb.n_tensors)
      won[same_plans(&gb, al, cap, 1, "random")]++;
  }
  /* the graphs cover each heuristic of best winning, and the search */
  ck_assert_int_gt(won[PLANNER_ALGO_TFLM_GREEDY], 0);
  ck_assert_int_gt(won[PLANNER_ALGO_GREEDY_SIZE], 0);
  ck_assert_int_gt(won[PLANNER_ALGO_TFLITE_BESTFIT], 0);
  ck_assert_int_gt(won[PLANNER_ALGO_GREEDY_BREADTH], 0);
  ck_assert_int_gt(won[PLANNER_ALGO_EXACT], 0);
}
END_TEST

/* Larger graphs: a 20,000-tensor chain with long-lived tensors and
 * MiniMalloc's E (whose exact search starts from best's heuristics). */
START_TEST(test_threads_large)
{
  size_t n = 20000;
  struct planner_tensor *t = malloc(n * sizeof *t);
  uint64_t rs = 5;
  for (size_t i = 0; i < n; i++) {
    t[i].id = (uint32_t)i;
    t[i].size = tu_rand_range(&rs, 1, 1u << 16);
    t[i].first = (int64_t)(i / 2);
    t[i].last = t[i].first + (int64_t)(i % 97 == 0 ? tu_rand_range(&rs, 0, n)
                                                   : tu_rand_range(&rs, 0, 3));
    t[i].align = 0;
    t[i].pinned = PLANNER_NOT_PINNED;
    t[i].alias = 0;
    t[i].has_alias = 0;
  }
  struct planner_graph g = {t, n};
  same_plans(&g, 64, 0, 1, "chain");
  free(t);
  struct planner_csv mm;
  char path[512];
  snprintf(path, sizeof path, "%s/minimalloc/E.1048576.csv", tu_data_dir());
  ck_assert_int_eq(tu_load_csv(path, &mm), 0);
  g = planner_csv_graph(&mm);
  ck_assert_int_eq(same_plans(&g, 1, 0, 0, "E"), PLANNER_ALGO_EXACT);
  planner_csv_cleanup(&mm);
}
END_TEST

/* A stop callback that records how many threads are inside it at once
 * and which threads called it, stays a while to give another thread the
 * chance to come in, and asks to stop after `limit` calls. */
#define PROBE_THREADS 8
struct stop_probe {
  atomic_int inside;  /* threads in the callback now */
  atomic_int most;    /* the most ever at once */
  atomic_int calls;   /* calls so far */
  int limit;          /* calls before it answers 1 */
  pthread_t who[PROBE_THREADS]; /* distinct callers, while inside alone */
  int n_who;
};

static int probe_stop(void *ctx)
{
  struct stop_probe *s = ctx;
  int now = atomic_fetch_add(&s->inside, 1) + 1;
  int most = atomic_load(&s->most);
  while (now > most && !atomic_compare_exchange_weak(&s->most, &most, now))
    ;
  if (now == 1) {
    int known = 0;
    for (int k = 0; k < s->n_who; k++)
      known |= pthread_equal(s->who[k], pthread_self());
    if (!known && s->n_who < PROBE_THREADS)
      s->who[s->n_who++] = pthread_self();
  }
  struct timespec ts = {0, 200000}; /* 0.2 ms */
  nanosleep(&ts, NULL);
  int calls = atomic_fetch_add(&s->calls, 1) + 1;
  atomic_fetch_sub(&s->inside, 1);
  return calls > s->limit;
}

/* Plans 200,000 tensors, three starting at each operator, with `best`
 * on 4 threads and the probe s as stop callback; returns planner_run()'s
 * result (the plan, if any, is released) and its message in err. */
static int run_probed(struct stop_probe *s, char err[ARENA_ERR_LEN])
{
  size_t n = 200000;
  struct planner_tensor *t = malloc(n * sizeof *t);
  ck_assert_ptr_nonnull(t);
  for (size_t i = 0; i < n; i++)
    t[i] = (struct planner_tensor){(uint32_t)i, 64 + i % 4096, (int64_t)(i / 3),
                                   (int64_t)(i / 3) + 2, 0,
                                   PLANNER_NOT_PINNED, 0, 0};
  struct planner_graph g = {t, n};
  struct planner_options o;
  planner_options_init(&o);
  o.threads = 4;
  o.stop = probe_stop;
  o.stop_ctx = s;
  struct planner_plan p;
  planner_plan_init(&p);
  err[0] = '\0';
  int rc = planner_run(&g, &o, &p, err);
  if (rc)
    ck_assert_ptr_null(p.offsets);
  planner_plan_cleanup(&p);
  free(t);
  return rc;
}

START_TEST(test_threads_stop_serialised)
{
  static struct stop_probe s;
  s.limit = 1000000;
  char err[ARENA_ERR_LEN];
  ck_assert_msg(run_probed(&s, err) == 0, "%s", err);
  ck_assert_int_gt(atomic_load(&s.calls), 100);
  ck_assert_int_ge(s.n_who, 2); /* it was called from several threads */
  ck_assert_int_eq(atomic_load(&s.most), 1); /* never by two at once */
}
END_TEST

START_TEST(test_threads_cancel)
{
  static struct stop_probe s;
  s.limit = 20;
  char err[ARENA_ERR_LEN];
  ck_assert_int_eq(run_probed(&s, err), ARENA_ECANCELED);
  ck_assert_str_eq(err, "planning was cancelled");
  /* every worker gave up at its next poll: few calls past the limit */
  ck_assert_int_le(atomic_load(&s.calls), 20 + 4);
}
END_TEST

/* Restricts the calling thread to the first `want` CPUs it may run on and
 * returns planner_cpu_threads() there; *got is how many it kept. */
static void *count_on_subset(void *arg)
{
  int *want_got = arg;
  cpu_set_t all, some;
  ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
  CPU_ZERO(&some);
  int kept = 0;
  for (int c = 0; c < CPU_SETSIZE && kept < want_got[0]; c++)
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &some);
      kept++;
    }
  ck_assert_int_eq(pthread_setaffinity_np(pthread_self(), sizeof some, &some),
                   0);
  want_got[1] = kept;
  want_got[2] = (int)planner_cpu_threads();
  return NULL;
}

START_TEST(test_cpu_threads_follow_mask)
{
  cpu_set_t all;
  ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
  ck_assert_uint_eq(planner_cpu_threads(), (uint32_t)CPU_COUNT(&all));
  /* on a thread of its own, so the rest of the suite keeps its CPUs */
  for (int want = 1; want <= 2; want++) {
    int want_got[3] = {want, 0, 0};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, count_on_subset, want_got), 0);
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert_int_eq(want_got[2], want_got[1]);
  }
  ck_assert_uint_eq(planner_cpu_threads(), (uint32_t)CPU_COUNT(&all));
}
END_TEST

void cp_add_thread_tests(Suite *s)
{
  TCase *tc = tcase_create("threads");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_threads_same_plan);
  tcase_add_test(tc, test_threads_large);
  tcase_add_test(tc, test_threads_stop_serialised);
  tcase_add_test(tc, test_threads_cancel);
  tcase_add_test(tc, test_cpu_threads_follow_mask);
  suite_add_tcase(s, tc);
}

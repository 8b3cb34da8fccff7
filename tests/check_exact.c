/*
 * check_exact.c - tests of the exact planner (planner/search/exact.c): worked
 * cases, effort, cancellation, determinism, the MiniMalloc suite, pinned
 * tensors and alignment, and best's use of the search (test case "core"),
 * plus the helpers the parts of the suite share (check_exact.h). The
 * brute-force comparison on random graphs is in check_exact_random.c, the
 * large components and traces in check_exact_large.c, ruin and recreate
 * in check_exact_lns.c, the joint re-plan of the stretch in
 * check_exact_joint.c.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_exact.h"
#include "graph_csv.h"
#include "planner.h"
#include "testutil.h"

#define MAXN 12

/* ---- helpers ------------------------------------------------------------ */

void ce_opts(struct planner_options *o, uint64_t alignment,
                 uint64_t capacity, uint32_t effort)
{
  planner_options_init(o);
  o->algo = PLANNER_ALGO_EXACT;
  o->alignment = alignment;
  o->capacity = capacity;
  o->effort = effort;
}

/* Runs the planner, asserts success and a verified plan. */
void ce_run_ok(const struct planner_tensor *t, size_t n,
                   const struct planner_options *o, struct planner_plan *p)
{
  struct planner_graph g = {t, n};
  char err[ARENA_ERR_LEN] = "";
  planner_plan_init(p);
  int rc = planner_run(&g, o, p, err);
  ck_assert_msg(rc == 0, "planner_run: %d %s", rc, err);
  rc = planner_verify(&g, o, p, err);
  ck_assert_msg(rc == 0, "verify: %s", err);
}

void ce_set(struct planner_tensor *t, uint32_t id, uint64_t size,
                int64_t first, int64_t last)
{
  t->id = id;
  t->size = size;
  t->first = first;
  t->last = last;
  t->align = 0;
  t->pinned = PLANNER_NOT_PINNED;
  t->alias = 0;
  t->has_alias = 0;
}

static double wall_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Writes TensorFlow Lite Micro's "Medium" case (greedy by size 90,
 * optimum 80) into t[0 .. 5): ids from id0, sizes times scale, lifetimes
 * shifted by shift steps. */
void ce_tflm_medium(struct planner_tensor *t, uint32_t id0,
                        uint64_t scale, int64_t shift)
{
  static const uint64_t sz[] = {10, 20, 30, 40, 50};
  static const int64_t f[] = {0, 1, 2, 3, 0}, l[] = {1, 2, 3, 4, 1};
  for (uint32_t i = 0; i < 5; i++)
    ce_set(&t[i], id0 + i, sz[i] * scale, f[i] + shift, l[i] + shift);
}

/* ---- tests -------------------------------------------------------------- */

START_TEST(test_tflm_medium)
{
  /* TFLite Micro's "Medium" case: greedy by size gives 90, optimum 80. */
  struct planner_tensor t[5];
  ce_tflm_medium(t, 0, 1, 0);
  struct planner_options o;
  struct planner_plan p;
  ce_opts(&o, 1, 0, 5000);
  ce_run_ok(t, 5, &o, &p);
  ck_assert_uint_eq(p.arena_bytes, 80);
  ck_assert_int_eq(p.proven_optimal, 1);
  ck_assert_uint_eq(p.lower_bound_bytes, 80);
  ck_assert_int_eq(p.algo, PLANNER_ALGO_EXACT);
  planner_plan_cleanup(&p);
  /* Capacity 79 is provably impossible, 80 fits. */
  ce_opts(&o, 1, 79, 5000);
  ce_run_ok(t, 5, &o, &p);
  ck_assert_int_eq(p.fit, PLANNER_FIT_NO);
  planner_plan_cleanup(&p);
  ce_opts(&o, 1, 80, 5000);
  ce_run_ok(t, 5, &o, &p);
  ck_assert_int_eq(p.fit, PLANNER_FIT_YES);
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(test_worked_example)
{
  static const uint64_t sz[] = {602112, 802816, 401408, 200704};
  static const int64_t f[] = {0, 0, 1, 2}, l[] = {0, 1, 2, 2};
  struct planner_tensor t[4];
  for (int i = 0; i < 4; i++)
    ce_set(&t[i], (uint32_t)i, sz[i], f[i], l[i]);
  struct planner_options o;
  struct planner_plan p;
  ce_opts(&o, 1, 0, 5000);
  ce_run_ok(t, 4, &o, &p);
  ck_assert_uint_eq(p.arena_bytes, 1404928);
  ck_assert_int_eq(p.proven_optimal, 1);
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(test_search_raises_bound)
{
  /* A graph whose optimum is above the load bound: three tensors that
   * pairwise overlap in a cycle of times cannot all share space. With
   * sizes 2 and lifetimes [0,1] [1,2] [2,3] [3,0..] a gap is forced. */
  struct planner_tensor t[4];
  ce_set(&t[0], 0, 3, 0, 1);
  ce_set(&t[1], 1, 2, 1, 2);
  ce_set(&t[2], 2, 3, 2, 3);
  ce_set(&t[3], 3, 2, 0, 0);
  uint64_t opt = ce_brute(t, 4, 1);
  struct planner_options o;
  struct planner_plan p;
  ce_opts(&o, 1, 0, 5000);
  ce_run_ok(t, 4, &o, &p);
  ck_assert_uint_eq(p.arena_bytes, opt);
  ck_assert_int_eq(p.proven_optimal, 1);
  if (opt > 5) /* load bound is 5 */
    ck_assert_int_eq(p.bound, PLANNER_BOUND_SEARCH);
  planner_plan_cleanup(&p);
}
END_TEST

/* A hard instance: many random tensors at capacity equal to the load
 * bound. */
static size_t hard_graph(struct planner_tensor *t, size_t n, uint64_t seed)
{
  uint64_t rs = seed;
  for (size_t i = 0; i < n; i++) {
    int64_t f = (int64_t)tu_rand_range(&rs, 0, 999);
    int64_t l = f + (int64_t)tu_rand_range(&rs, 0, 300);
    ce_set(&t[i], (uint32_t)i, 1024 * tu_rand_range(&rs, 1, 64), f, l);
  }
  return n;
}

START_TEST(test_effort_respected)
{
  enum { N = 400 };
  static struct planner_tensor t[N];
  hard_graph(t, N, 42);
  struct planner_graph g = {t, N};
  struct planner_options o;
  uint64_t lb;
  ce_opts(&o, 1, 0, 30);
  ck_assert_int_eq(planner_lower_bound(&g, &o, &lb), 0);
  struct planner_plan p;
  double t0 = wall_ms();
  ce_run_ok(t, N, &o, &p);
  double ms = wall_ms() - t0;
  /* An effort of 30, nominally 30 ms of search, plus heuristics and
   * verification; generous margin for loaded or sanitised builds. */
  ck_assert_msg(ms < 30 + 1500, "took %.1f ms", ms);
  ck_assert_uint_ge(p.arena_bytes, p.lower_bound_bytes);
  ck_assert_uint_le(p.search_us, (30 + 1500) * 1000u);
  planner_plan_cleanup(&p);
  /* Capacity at the load bound: fits, proven impossible, or unknown; any
   * answer must come back within the effort. */
  ce_opts(&o, 1, lb, 30);
  t0 = wall_ms();
  ce_run_ok(t, N, &o, &p);
  ms = wall_ms() - t0;
  ck_assert_msg(ms < 30 + 1500, "took %.1f ms", ms);
  ck_assert(p.fit == PLANNER_FIT_YES || p.fit == PLANNER_FIT_NO ||
            p.fit == PLANNER_FIT_UNKNOWN);
  if (p.fit == PLANNER_FIT_YES)
    ck_assert_uint_le(p.arena_bytes, lb);
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(test_effort_small_graphs)
{
  /* Tiny graphs with odd sizes and alignment 8 can need many short
   * searches, each proving the bound one step higher: an effort of 1
   * must still bound the time (generous margin for loaded or sanitised
   * builds). */
  for (uint64_t seed = 1; seed <= 60; seed++) {
    uint64_t rs = seed * 104729u;
    struct planner_tensor t[MAXN];
    size_t n = 12;
    for (size_t i = 0; i < n; i++) {
      int64_t f = (int64_t)tu_rand_range(&rs, 0, 5);
      ce_set(&t[i], (uint32_t)i, 2 * tu_rand_range(&rs, 1000, 20000) + 1, f,
          f + (int64_t)tu_rand_range(&rs, 0, 3));
    }
    struct planner_options o;
    struct planner_plan p;
    ce_opts(&o, 8, 0, 1);
    ce_run_ok(t, n, &o, &p);
    ck_assert_msg(p.search_us < 1000 + 250000, "seed %" PRIu64 ": %" PRIu64
                  " us", seed, p.search_us);
    ck_assert_uint_le(p.lower_bound_bytes, p.arena_bytes);
    planner_plan_cleanup(&p);
  }
}
END_TEST

struct stopper {
  int calls;    /* polls seen */
  int fire_at;  /* poll that returns 1 */
};

static int stop_cb(void *ctx)
{
  struct stopper *s = ctx;
  return ++s->calls >= s->fire_at;
}

START_TEST(test_cancel)
{
  enum { N = 400 };
  static struct planner_tensor t[N];
  hard_graph(t, N, 43);
  struct planner_graph g = {t, N};
  struct planner_options o;
  ce_opts(&o, 1, 0, 60000);
  struct stopper st = {0, 3};
  o.stop = stop_cb;
  o.stop_ctx = &st;
  struct planner_plan p;
  planner_plan_init(&p);
  char err[ARENA_ERR_LEN];
  double t0 = wall_ms();
  int rc = planner_run(&g, &o, &p, err);
  double ms = wall_ms() - t0;
  /* Either the search finished before the third poll, or it stopped
   * within a few polls of the request. */
  if (rc == 0) {
    ck_assert_int_lt(st.calls, 3);
    ck_assert_int_eq(planner_verify(&g, &o, &p, err), 0);
  } else {
    ck_assert_int_eq(rc, ARENA_ECANCELED);
    ck_assert_int_le(st.calls, 4);
  }
  ck_assert_msg(ms < 2000, "took %.1f ms", ms);
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(test_deterministic)
{
  enum { N = 120 };
  static struct planner_tensor t[N];
  for (uint64_t seed = 1; seed <= 4; seed++) {
    hard_graph(t, N, seed);
    struct planner_options o;
    struct planner_plan a, b;
    ce_opts(&o, 64, 0, 2500);
    ce_run_ok(t, N, &o, &a);
    ce_run_ok(t, N, &o, &b);
    /* Identical results, however long each run took. */
    ck_assert_uint_eq(a.arena_bytes, b.arena_bytes);
    ck_assert_uint_eq(a.nodes_explored, b.nodes_explored);
    ck_assert_int_eq(memcmp(a.offsets, b.offsets, N * sizeof *a.offsets), 0);
    planner_plan_cleanup(&a);
    planner_plan_cleanup(&b);
  }
}
END_TEST

/* Reads instance `name` of MiniMalloc's suite from the test data into c
 * (init'ed here; the caller cleans it up). */
static void load_instance(const char *name, struct planner_csv *c)
{
  char path[512];
  snprintf(path, sizeof path, "%s/minimalloc/%s.1048576.csv", tu_data_dir(),
           name);
  ck_assert_int_eq(tu_load_csv(path, c), 0);
}

/* A stop callback that never stops but sleeps on every poll: a machine
 * so slow or so loaded that the search gets 2 ms of wall time for every
 * 64 K work units, far less than any real machine. */
int ce_slow_poll(void *ctx)
{
  int *polls = ctx;
  struct timespec ts = {0, 2000000};
  nanosleep(&ts, NULL);
  (*polls)++;
  return 0;
}

/* Plans g under o twice, the second time with ce_slow_poll, and asserts the
 * same plan. */
void ce_check_slow_same(const struct planner_tensor *t, size_t n,
                            struct planner_options *o)
{
  struct planner_plan a, b;
  ce_run_ok(t, n, o, &a);
  int polls = 0;
  o->stop = ce_slow_poll;
  o->stop_ctx = &polls;
  ce_run_ok(t, n, o, &b);
  o->stop = NULL;
  ck_assert_uint_eq(a.arena_bytes, b.arena_bytes);
  ck_assert_uint_eq(a.lower_bound_bytes, b.lower_bound_bytes);
  ck_assert_uint_eq(a.nodes_explored, b.nodes_explored);
  ck_assert_int_eq(a.algo, b.algo);
  ck_assert_int_eq(memcmp(a.offsets, b.offsets, n * sizeof *a.offsets), 0);
  ck_assert_int_gt(polls, 20); /* the search ran long enough to notice */
  /* The clock saw the slowness; the plan did not. */
  ck_assert_uint_gt(b.search_us, a.search_us);
  planner_plan_cleanup(&a);
  planner_plan_cleanup(&b);
}

START_TEST(test_slow_machine_same_plan)
{
  /* The effort is counted in work units, so a search that gets a tiny
   * share of the CPU explores exactly the same tree. A hard random graph
   * under `exact`, and MiniMalloc's G under `best` with the default
   * effort: neither search can finish, so both end on the effort. */
  enum { N = 400 };
  static struct planner_tensor t[N];
  hard_graph(t, N, 42);
  struct planner_options o;
  ce_opts(&o, 1, 0, 30);
  ce_check_slow_same(t, N, &o);
  struct planner_csv c;
  load_instance("G", &c);
  planner_options_init(&o);
  ce_check_slow_same(c.tensors, c.n_tensors, &o);
  planner_csv_cleanup(&c);
}
END_TEST

START_TEST(test_minimalloc_fits)
{
  /* MiniMalloc's instances G and I fit 1048576 bytes, their peak load,
   * only in tight packings: G needs a static order under a node limit the
   * restart schedule must reach, I the dynamic order. The answer must
   * repeat exactly. */
  static const char *const names[] = {"G", "I"};
  struct planner_csv c;
  load_instance(names[_i], &c);
  struct planner_options o;
  ce_opts(&o, 1, 1048576, 60000);
  struct planner_plan a, b;
  ce_run_ok(c.tensors, c.n_tensors, &o, &a);
  ck_assert_msg(a.fit == PLANNER_FIT_YES, "%s: %s", names[_i],
                planner_fit_name(a.fit));
  ck_assert_uint_le(a.arena_bytes, 1048576);
  ce_run_ok(c.tensors, c.n_tensors, &o, &b);
  ck_assert_uint_eq(a.nodes_explored, b.nodes_explored);
  ck_assert_int_eq(memcmp(a.offsets, b.offsets,
                          c.n_tensors * sizeof *a.offsets), 0);
  planner_plan_cleanup(&a);
  planner_plan_cleanup(&b);
  planner_csv_cleanup(&c);
}
END_TEST

/* Minimisation finds what capacity mode finds. On MiniMalloc's D (load
 * bound 986112, best arena known 1025024) capacity mode fits 1024000
 * bytes within an effort of 3000; minimisation must reach 1024000 too,
 * within an effort of 17000 (an exact figure: the search counts work, not
 * time). The old descent, which only tried fixed fractions of the gap to
 * the weak bound, stayed at 1026048 even with an effort of 60000. */
START_TEST(test_minimisation_reaches_capacity)
{
  struct planner_csv c;
  load_instance("D", &c);
  struct planner_options o;
  struct planner_plan p;
  ce_opts(&o, 1, 1024000, 3000);
  ce_run_ok(c.tensors, c.n_tensors, &o, &p);
  ck_assert_msg(p.fit == PLANNER_FIT_YES, "capacity mode: %s",
                planner_fit_name(p.fit));
  planner_plan_cleanup(&p);
  ce_opts(&o, 1, 0, 17000);
  ce_run_ok(c.tensors, c.n_tensors, &o, &p);
  ck_assert_msg(p.arena_bytes <= 1024000, "minimisation stopped at %" PRIu64,
                p.arena_bytes);
  ck_assert_uint_eq(p.lower_bound_bytes, 986112);
  planner_plan_cleanup(&p);
  planner_csv_cleanup(&c);
}
END_TEST

/* A capacity question the search cannot decide reports the best plan it
 * found. On MiniMalloc's D at 1048576 bytes (load bound 986112, nothing
 * within 1048576 found at the default effort) the answer stays unknown,
 * and the plan is the one planning without the capacity gives, offset
 * for offset: the arena used to be the heuristic's 1301504 bytes while
 * the plan without the capacity needs 1107968. Capacities that this
 * plan meets are answered `fits` with it. */
START_TEST(test_capacity_unknown_keeps_best)
{
  struct planner_csv c;
  load_instance("D", &c);
  struct planner_options o;
  struct planner_plan free_p, cap_p;
  ce_opts(&o, 1, 0, 0);
  o.algo = PLANNER_ALGO_BEST;
  ce_run_ok(c.tensors, c.n_tensors, &o, &free_p);
  ck_assert_uint_gt(free_p.arena_bytes, 1048576); /* the question is open */
  o.capacity = 1048576;
  ce_run_ok(c.tensors, c.n_tensors, &o, &cap_p);
  ck_assert_msg(cap_p.fit == PLANNER_FIT_UNKNOWN, "fit %s",
                planner_fit_name(cap_p.fit));
  ck_assert_uint_eq(cap_p.arena_bytes, free_p.arena_bytes);
  ck_assert_mem_eq(cap_p.offsets, free_p.offsets,
                   c.n_tensors * sizeof *cap_p.offsets);
  ck_assert_uint_eq(cap_p.lower_bound_bytes, free_p.lower_bound_bytes);
  ck_assert_uint_gt(cap_p.nodes_explored, free_p.nodes_explored);
  planner_plan_cleanup(&cap_p);
  /* a capacity between the bound and that plan's arena: the plan fits */
  o.capacity = free_p.arena_bytes;
  ce_run_ok(c.tensors, c.n_tensors, &o, &cap_p);
  ck_assert_int_eq(cap_p.fit, PLANNER_FIT_YES);
  ck_assert_uint_le(cap_p.arena_bytes, free_p.arena_bytes);
  planner_plan_cleanup(&cap_p);
  planner_plan_cleanup(&free_p);
  planner_csv_cleanup(&c);
}
END_TEST

/* A capacity never makes the plan larger: `best` with any capacity
 * returns a plan no larger than without one, the very same plan when
 * nothing smaller is found, and a shortfall measured from that plan. The capacity used to keep the search out whenever the
 * heuristics' plan fitted (D within 2000000 bytes: 1301504 bytes, against
 * 1107968 without a capacity), and a capacity below the load bound
 * returned the heuristics' plan, missing by far more than the best plan
 * does. */
START_TEST(test_capacity_never_larger)
{
  static const char *const names[] = {"D", "E", "G", "I"};
  struct planner_csv c;
  load_instance(names[_i], &c);
  struct planner_options o;
  struct planner_plan free_p, cap_p;
  ce_opts(&o, 1, 0, 0);
  o.algo = PLANNER_ALGO_BEST;
  ce_run_ok(c.tensors, c.n_tensors, &o, &free_p);
  uint64_t caps[] = {2000000, free_p.arena_bytes, free_p.arena_bytes - 1,
                     free_p.lower_bound_bytes - 1};
  for (size_t k = 0; k < sizeof caps / sizeof *caps; k++) {
    o.capacity = caps[k];
    ce_run_ok(c.tensors, c.n_tensors, &o, &cap_p);
    ck_assert_msg(cap_p.arena_bytes <= free_p.arena_bytes,
                  "%s at capacity %" PRIu64 ": %" PRIu64 " bytes, %" PRIu64
                  " without a capacity",
                  names[_i], caps[k], cap_p.arena_bytes, free_p.arena_bytes);
    ck_assert_uint_ge(cap_p.lower_bound_bytes, free_p.lower_bound_bytes);
    if (cap_p.fit == PLANNER_FIT_YES) {
      ck_assert_uint_le(cap_p.arena_bytes, caps[k]);
    } else {
      /* not found within the capacity: the plan is the best found, the
       * one planning without the capacity gives */
      ck_assert_uint_gt(cap_p.arena_bytes, caps[k]);
      ck_assert_uint_eq(cap_p.arena_bytes, free_p.arena_bytes);
      ck_assert_int_eq(cap_p.fit == PLANNER_FIT_NO,
                       cap_p.lower_bound_bytes > caps[k]);
    }
    /* no smaller plan found: the very plan without the capacity */
    if (cap_p.arena_bytes == free_p.arena_bytes && !free_p.proven_optimal)
      ck_assert_mem_eq(cap_p.offsets, free_p.offsets,
                       c.n_tensors * sizeof *cap_p.offsets);
    if (k == 3) /* below the load bound: proven */
      ck_assert_int_eq(cap_p.fit, PLANNER_FIT_NO);
    planner_plan_cleanup(&cap_p);
  }
  planner_plan_cleanup(&free_p);
  planner_csv_cleanup(&c);
}
END_TEST

START_TEST(test_pinned_and_alignment)
{
  /* Pinned tensors stay put; aligned tensors land on their alignment. */
  struct planner_tensor t[6];
  ce_set(&t[0], 0, 100, 0, 3);
  t[0].pinned = 64;
  ce_set(&t[1], 1, 50, 0, 1);
  ce_set(&t[2], 2, 70, 1, 2);
  t[2].align = 128;
  ce_set(&t[3], 3, 30, 2, 3);
  ce_set(&t[4], 4, 0, 0, 3);
  ce_set(&t[5], 5, 60, 3, 3);
  struct planner_options o;
  struct planner_plan p;
  ce_opts(&o, 16, 0, 5000);
  ce_run_ok(t, 6, &o, &p);
  ck_assert_uint_eq(p.offsets[0], 64);
  ck_assert_uint_eq(p.offsets[2] % 128, 0);
  ck_assert_uint_eq(p.offsets[4], 0);
  ck_assert_uint_eq(p.arena_bytes, ce_brute(t, 6, 16));
  ck_assert_int_eq(p.proven_optimal, 1);
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(test_best_skips_search_at_bound)
{
  /* A chain that greedy packs at the bound: `best` never searches. */
  struct planner_tensor t[8];
  for (int i = 0; i < 8; i++)
    ce_set(&t[i], (uint32_t)i, 64 * (uint64_t)(i + 1), i, i + 1);
  struct planner_options o;
  planner_options_init(&o);
  struct planner_plan p;
  ce_run_ok(t, 8, &o, &p);
  ck_assert_int_eq(p.proven_optimal, 1);
  ck_assert_uint_eq(p.nodes_explored, 0);
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(test_best_closes_gap)
{
  /* The TFLM case again under `best`: greedy is above the bound, so the
   * default effort's search finds 80. */
  struct planner_tensor t[5];
  ce_tflm_medium(t, 0, 1, 0);
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = 1;
  struct planner_plan p;
  ce_run_ok(t, 5, &o, &p);
  ck_assert_uint_eq(p.arena_bytes, 80);
  ck_assert_int_eq(p.proven_optimal, 1);
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(test_independent_components)
{
  /* Two copies of the TFLM case far apart in time, plus a pinned tensor
   * in between: components are solved separately. */
  struct planner_tensor t[11];
  ce_tflm_medium(t, 0, 1, 0);
  ce_tflm_medium(t + 5, 5, 2, 10);
  ce_set(&t[10], 10, 8, 6, 7);
  t[10].pinned = 4;
  struct planner_options o;
  struct planner_plan p;
  ce_opts(&o, 1, 0, 5000);
  ce_run_ok(t, 11, &o, &p);
  ck_assert_uint_eq(p.arena_bytes, 160);
  ck_assert_int_eq(p.proven_optimal, 1);
  ck_assert_uint_eq(p.offsets[10], 4);
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(test_nested_groups)
{
  /* A tensor alive throughout; under it five copies of the TFLM case
   * (greedy 90, optimum 80) apart in time, and around two of them a
   * second long tensor. Placing the long tensors splits the rest into
   * groups, one of them split again: decompositions nest. */
  struct planner_tensor t[32];
  size_t n = 0;
  ce_set(&t[n], (uint32_t)n, 5, 0, 100);
  n++;
  ce_set(&t[n], (uint32_t)n, 3, 20, 45);
  n++;
  static const int64_t at[] = {0, 10, 20, 30, 40};
  for (int c = 0; c < 5; c++, n += 5)
    ce_tflm_medium(t + n, (uint32_t)n, 1, at[c]);
  struct planner_options o;
  struct planner_plan p;
  ce_opts(&o, 1, 0, 10000);
  ce_run_ok(t, n, &o, &p);
  ck_assert_uint_eq(p.arena_bytes, 88);
  ck_assert_int_eq(p.proven_optimal, 1);
  planner_plan_cleanup(&p);
  ce_opts(&o, 1, 87, 10000);
  ce_run_ok(t, n, &o, &p);
  ck_assert_int_eq(p.fit, PLANNER_FIT_NO);
  planner_plan_cleanup(&p);
}
END_TEST


Suite *exact_suite(void)
{
  Suite *s = suite_create("exact");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_tflm_medium);
  tcase_add_test(tc, test_worked_example);
  tcase_add_test(tc, test_search_raises_bound);
  tcase_add_test(tc, test_pinned_and_alignment);
  tcase_add_test(tc, test_best_skips_search_at_bound);
  tcase_add_test(tc, test_best_closes_gap);
  tcase_add_test(tc, test_independent_components);
  tcase_add_test(tc, test_nested_groups);
  tcase_add_test(tc, test_effort_respected);
  tcase_add_test(tc, test_effort_small_graphs);
  tcase_add_test(tc, test_cancel);
  tcase_add_test(tc, test_deterministic);
  tcase_add_test(tc, test_slow_machine_same_plan);
  tcase_add_loop_test(tc, test_minimalloc_fits, 0, 2);
  tcase_add_test(tc, test_minimisation_reaches_capacity);
  tcase_add_test(tc, test_capacity_unknown_keeps_best);
  tcase_add_loop_test(tc, test_capacity_never_larger, 0, 4);
  suite_add_tcase(s, tc);
  ce_add_random_tests(s);
  ce_add_large_tests(s);
  ce_add_lns_tests(s);
  ce_add_joint_tests(s);
  ce_add_window_tests(s);
  ce_add_sections_tests(s);
  return s;
}

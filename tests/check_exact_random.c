/*
 * check_exact_random.c - the exact planner's search against an independent
 * brute force on random small graphs: the test case "random" of the exact
 * suite.
 *
 * The brute force is first fit over every order of the tensors. For any
 * optimal plan, first fit in the order of its offsets places each tensor
 * no higher than that plan does (every lower tensor that overlaps it in
 * time sits lower still), so the best first fit over all orders is the
 * optimum. It shares no code with the planner.
 */
#include <check.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_exact.h"
#include "exact_int.h" /* internals: drive the search with a chosen order */
#include "heuristics.h"
#include "planner.h"
#include "testutil.h"

#define MAXN 12 /* most tensors the brute force takes */

/* ---- brute force -------------------------------------------------------- */

struct bf {
  size_t n;
  const struct planner_tensor *t;
  uint64_t align[MAXN];  /* effective alignment */
  uint64_t off[MAXN];    /* offsets of placed tensors */
  int placed[MAXN];
  int order[MAXN];
  uint64_t best;         /* best max top found (including pins) */
  uint64_t floor;        /* stop once best reaches this */
  uint64_t work;         /* nodes visited */
};

static int time_overlap(const struct planner_tensor *a,
                        const struct planner_tensor *b)
{
  return a->first <= b->last && b->first <= a->last;
}

static uint64_t up(uint64_t v, uint64_t a)
{
  return (v + a - 1) / a * a;
}

/* Lowest aligned offset for tensor i that misses every placed tensor and
 * every pinned one it overlaps in time. */
static uint64_t first_fit(struct bf *b, size_t i)
{
  const struct planner_tensor *ti = &b->t[i];
  uint64_t y = 0;
  for (;;) {
    int moved = 0;
    for (size_t j = 0; j < b->n; j++) {
      if (j == i || !b->placed[j] || b->t[j].size == 0)
        continue;
      if (!time_overlap(ti, &b->t[j]))
        continue;
      uint64_t o = b->off[j], e = o + b->t[j].size;
      if (y < e && y + ti->size > o) {
        y = up(e, b->align[i]);
        moved = 1;
      }
    }
    if (!moved)
      return y;
  }
}

static void bf_rec(struct bf *b, size_t depth, uint64_t top, int prev)
{
  b->work++;
  if (b->best <= b->floor)
    return;
  if (depth == b->n) {
    if (top < b->best)
      b->best = top;
    return;
  }
  /* More placed tensors only block more offsets, so first fit never
   * moves down: a tensor that cannot fit below best now never will. */
  uint64_t ff[MAXN];
  for (size_t i = 0; i < b->n; i++) {
    if (b->placed[i])
      continue;
    ff[i] = first_fit(b, i);
    if (ff[i] + b->t[i].size >= b->best)
      return;
  }
  for (size_t i = 0; i < b->n; i++) {
    if (b->placed[i])
      continue;
    /* Neighbouring tensors that do not meet in time give the same first
     * fit in either order: try only one of the two orders. */
    if (prev >= 0 && (size_t)prev > i && !time_overlap(&b->t[prev], &b->t[i]))
      continue;
    uint64_t y = ff[i];
    uint64_t e = y + b->t[i].size;
    b->placed[i] = 1;
    b->off[i] = y;
    bf_rec(b, depth + 1, e > top ? e : top, (int)i);
    b->placed[i] = 0;
    if (b->best <= b->floor)
      return;
  }
}

/* Optimal arena of a small graph; pinned and zero-size tensors are
 * pre-placed. */
uint64_t ce_brute(const struct planner_tensor *t, size_t n,
                  uint64_t alignment)
{
  struct bf b;
  memset(&b, 0, sizeof b);
  b.n = n;
  b.t = t;
  uint64_t top = 0, load = 0;
  size_t nfree = 0;
  for (size_t i = 0; i < n; i++) {
    b.align[i] = t[i].align > alignment ? t[i].align : alignment;
    if (t[i].size == 0) {
      b.placed[i] = 1;
    } else if (t[i].pinned != PLANNER_NOT_PINNED) {
      b.placed[i] = 1;
      b.off[i] = (uint64_t)t[i].pinned;
      if (b.off[i] + t[i].size > top)
        top = b.off[i] + t[i].size;
    } else {
      nfree++;
    }
  }
  /* Stop early at the load bound proved in planner.h (LOWER BOUND): at
   * each time, sizes rounded to the smallest alignment live, less the
   * largest rounding slack. Computed here from the tensors, not taken
   * from the planner. */
  for (size_t i = 0; i < n; i++) {
    uint64_t amin = UINT64_MAX, sum = 0, slack = 0;
    for (size_t j = 0; j < n; j++)
      if (t[j].size && t[j].first <= t[i].first && t[i].first <= t[j].last &&
          b.align[j] < amin)
        amin = b.align[j];
    for (size_t j = 0; j < n; j++) {
      if (!t[j].size || t[j].first > t[i].first || t[i].first > t[j].last)
        continue;
      uint64_t r = up(t[j].size, amin);
      sum += r;
      if (r - t[j].size > slack)
        slack = r - t[j].size;
    }
    if (sum - slack > load && sum)
      load = sum - slack;
  }
  b.floor = load > top ? load : top;
  b.best = UINT64_MAX;
  /* Depth counts pre-placed tensors as done. */
  bf_rec(&b, n - nfree, top, -1);
  return b.best;
}

/* Random graph of n tensors; returns the global alignment to use. */
static uint64_t random_graph(uint64_t *rs, struct planner_tensor *t, size_t n,
                             int with_align, int with_pins, uint64_t hmax)
{
  uint64_t horizon = tu_rand_range(rs, 1, hmax);
  uint64_t alignment = with_align ? (1u << tu_rand_range(rs, 0, 2)) : 1;
  for (size_t i = 0; i < n; i++) {
    int64_t f = (int64_t)tu_rand_range(rs, 0, horizon - 1);
    /* Mostly short lifetimes; on long spans some long ones too, which
     * split the rest into nested groups once they are placed. */
    uint64_t lmax = hmax > 8 && tu_rand_range(rs, 0, 3) == 0 ? hmax / 2 : 3;
    int64_t l = f + (int64_t)tu_rand_range(rs, 0, lmax);
    uint64_t sz = tu_rand_range(rs, 0, 9) == 0 ? 0 : tu_rand_range(rs, 1, 12);
    ce_set(&t[i], (uint32_t)(100 + i), sz, f, l);
    if (with_align && tu_rand_range(rs, 0, 3) == 0)
      t[i].align = 1u << tu_rand_range(rs, 0, 3);
  }
  if (with_pins) {
    size_t np = tu_rand_range(rs, 1, 2);
    for (size_t k = 0; k < np; k++) {
      size_t i = tu_rand_range(rs, 0, n - 1);
      uint64_t a = t[i].align > alignment ? t[i].align : alignment;
      int64_t off = (int64_t)(a * tu_rand_range(rs, 0, 6));
      int ok = 1;
      for (size_t j = 0; j < n; j++) {
        if (j == i || t[j].pinned == PLANNER_NOT_PINNED)
          continue;
        if (time_overlap(&t[i], &t[j]) && off < t[j].pinned + (int64_t)t[j].size &&
            t[j].pinned < off + (int64_t)t[i].size)
          ok = 0;
      }
      if (ok)
        t[i].pinned = off;
    }
  }
  return alignment;
}

/* One random instance checked three ways: minimise, then capacity at the
 * optimum (fits) and one byte below (proven infeasible). */
static void check_instance_h(uint64_t seed, size_t n, int with_align,
                             int with_pins, uint64_t hmax)
{
  uint64_t rs = seed;
  struct planner_tensor t[MAXN];
  uint64_t alignment = random_graph(&rs, t, n, with_align, with_pins, hmax);
  uint64_t opt = ce_brute(t, n, alignment);
  struct planner_options o;
  struct planner_plan p;
  ce_opts(&o, alignment, 0, 10000);
  ce_run_ok(t, n, &o, &p);
  ck_assert_msg(p.arena_bytes == opt,
                "seed %" PRIu64 " n %zu: exact %" PRIu64 " brute %" PRIu64,
                seed, n, p.arena_bytes, opt);
  ck_assert_int_eq(p.proven_optimal, 1);
  ck_assert_uint_eq(p.lower_bound_bytes, opt);
  planner_plan_cleanup(&p);
  if (opt == 0)
    return;
  ce_opts(&o, alignment, opt, 10000);
  ce_run_ok(t, n, &o, &p);
  ck_assert_int_eq(p.fit, PLANNER_FIT_YES);
  ck_assert_uint_le(p.arena_bytes, opt);
  planner_plan_cleanup(&p);
  if (opt == 1)
    return;
  ce_opts(&o, alignment, opt - 1, 10000);
  ce_run_ok(t, n, &o, &p);
  ck_assert_msg(p.fit == PLANNER_FIT_NO,
                "seed %" PRIu64 ": capacity %" PRIu64 " answered %s", seed,
                opt - 1, planner_fit_name(p.fit));
  ck_assert_uint_ge(p.lower_bound_bytes, opt);
  planner_plan_cleanup(&p);
}

static void check_instance(uint64_t seed, size_t n, int with_align,
                           int with_pins)
{
  check_instance_h(seed, n, with_align, with_pins, 8);
}

/* ---- the search under a chosen order ------------------------------------ */

/* The exact search's context for a graph, built from greedy-size's plan
 * in offs with an unlimited effort; the fields borrow each other, so the
 * struct stays put until ce_built_cleanup(). */
void ce_built_init(struct ce_built *b, const struct planner_tensor *t,
                       size_t n, uint64_t alignment, uint64_t *offs)
{
  b->g.tensors = t;
  b->g.n_tensors = n;
  ce_opts(&b->o, alignment, 0, 10000);
  ck_assert_int_eq(planner__prob_init(&b->p, &b->g, &b->o), 0);
  ck_assert_int_eq(planner__heuristic(&b->p, PLANNER_ALGO_GREEDY_SIZE, offs),
                   0);
  memset(&b->X, 0, sizeof b->X);
  b->X.p = &b->p;
  b->X.offsets = offs;
  b->X.work_limit = UINT64_MAX;
  ck_assert_int_eq(exact__build(&b->X), 0);
}

void ce_built_cleanup(struct ce_built *b)
{
  exact__free(&b->X);
  planner__prob_cleanup(&b->p);
}

/* Runs the exact search itself on every component at capacity cap under
 * order v (exact__round_plan() numbering, flags included), without node
 * limit: exact_search.c's, or with stream set exact_stream.c's, whatever
 * the components' size. Returns 1 and the plan in offs when every component fits, 0
 * when one provably does not (or a pinned tensor ends above cap). Adds
 * the splits re-ranked to *reranks. */
static int search_with(const struct planner_tensor *t, size_t n,
                       uint64_t alignment, uint64_t cap, unsigned v,
                       int stream, uint64_t *offs, uint64_t *reranks)
{
  struct ce_built b;
  ce_built_init(&b, t, n, alignment, offs);
  struct ctx *X = &b.X;
  int ok = X->pintop <= cap;
  for (uint32_t c = 0; ok && c < X->nc; c++) {
    ck_assert(X->searchable[c]);
    ck_assert_int_eq(exact__make_rank(X, c, v), 0);
    int r = stream ? exact__stream_search(X, c, cap, UINT64_MAX)
                   : exact__search(X, c, cap, UINT64_MAX);
    ck_assert_msg(r == R_FOUND || r == R_INFEAS, "search: %d", r);
    ck_assert_uint_eq(X->rtn, 0); /* every re-ranking undone */
    if (r == R_INFEAS) {
      ok = 0;
      break;
    }
    for (uint32_t q = X->cb[c]; q < X->cb[c + 1]; q++)
      offs[X->gi[q]] = X->out[q - X->cb[c]];
  }
  *reranks += X->reranks;
  ce_built_cleanup(&b);
  return ok;
}

/* The search of exact_search.c under order v (see search_with()). */
static int search_with_order(const struct planner_tensor *t, size_t n,
                             uint64_t alignment, uint64_t cap, unsigned v,
                             uint64_t *offs, uint64_t *reranks)
{
  return search_with(t, n, alignment, cap, v, 0, offs, reranks);
}

/* Independent check of a plan: alignment, pins, capacity, no overlap. */
static void check_plan(const struct planner_tensor *t, size_t n,
                       uint64_t alignment, uint64_t cap, const uint64_t *off)
{
  for (size_t i = 0; i < n; i++) {
    if (t[i].size == 0)
      continue;
    uint64_t a = t[i].align > alignment ? t[i].align : alignment;
    ck_assert_uint_eq(off[i] % a, 0);
    if (t[i].pinned != PLANNER_NOT_PINNED)
      ck_assert_uint_eq(off[i], (uint64_t)t[i].pinned);
    ck_assert_uint_le(off[i] + t[i].size, cap);
    for (size_t j = i + 1; j < n; j++)
      if (t[j].size && time_overlap(&t[i], &t[j]))
        ck_assert(off[i] + t[i].size <= off[j] ||
                  off[j] + t[j].size <= off[i]);
  }
}

/* ---- tests -------------------------------------------------------------- */

/* Seed k of block `block` of a test's seeds from base. */
static uint64_t block_seed(uint64_t base, int block, int k)
{
  return base + (uint64_t)block * 1000003u + (uint64_t)k;
}

/* The tensor count in [lo, hi] for seed, drawn from its own stream
 * (salt keeps the streams of different tests apart). */
static size_t seeded_count(uint64_t seed, unsigned salt, uint64_t lo,
                           uint64_t hi)
{
  uint64_t rs = seed * 7919u + salt;
  return (size_t)tu_rand_range(&rs, lo, hi);
}

START_TEST(test_random_vs_brute)
{
  /* _i selects a block of seeds; sizes grow with the block. */
  for (int k = 0; k < 250; k++) {
    uint64_t seed = block_seed(0, _i, k);
    size_t n = seeded_count(seed, 1, 1, _i < 6 ? 8 : 10);
    check_instance(seed, n, 0, 0);
  }
}
END_TEST

START_TEST(test_random_aligned_pinned_vs_brute)
{
  for (int k = 0; k < 250; k++) {
    uint64_t seed = block_seed(0x5eed0000u, _i, k);
    size_t n = seeded_count(seed, 3, 1, 8);
    check_instance(seed, n, 1, (int)(k & 1));
  }
}
END_TEST

START_TEST(test_random_sparse_vs_brute)
{
  /* Longer time spans: the unplaced tensors keep falling apart into
   * groups, nested several levels deep, during the search. */
  for (int k = 0; k < 250; k++) {
    uint64_t seed = block_seed(0x5a000000u, _i, k);
    size_t n = seeded_count(seed, 5, 4, 10);
    check_instance_h(seed, n, k % 4 == 0, k % 5 == 0, 20);
  }
}
END_TEST

START_TEST(test_random_twelve_vs_brute)
{
  /* Twelve tensors: the brute force is slower, so fewer instances. */
  for (int k = 0; k < 40; k++) {
    uint64_t seed = block_seed(0x12000000u, _i, k);
    check_instance(seed, 11 + (size_t)(k & 1), k % 3 == 0, 0);
  }
}
END_TEST

START_TEST(test_dynamic_orders_vs_brute)
{
  /* The dynamic orders rank the groups of every split anew and restart
   * their keys; on long spans with long lifetimes the groups nest. Each
   * must still find a plan at the optimum and prove one byte less
   * impossible, like the brute force. */
  static const unsigned orders[] = {EXACT_DYN, EXACT_DYN | 1u,
                                    EXACT_DYN | 2u, EXACT_DYN | 7u};
  uint64_t reranks = 0;
  for (uint64_t k = 0; k < 400; k++) {
    uint64_t seed = 0xd1a0000u + (uint64_t)_i * 1000u + k, rs = seed;
    size_t n = (size_t)tu_rand_range(&rs, 4, 10);
    struct planner_tensor t[MAXN];
    uint64_t alignment = random_graph(&rs, t, n, _i & 1, _i & 2, 24);
    uint64_t opt = ce_brute(t, n, alignment);
    if (opt == 0)
      continue;
    uint64_t off[MAXN];
    for (size_t q = 0; q < sizeof orders / sizeof orders[0]; q++) {
      int fits = search_with_order(t, n, alignment, opt, orders[q], off,
                                   &reranks);
      ck_assert_msg(fits, "seed %" PRIu64 " order %#x: no plan at the "
                    "optimum %" PRIu64, seed, orders[q], opt);
      check_plan(t, n, alignment, opt, off);
      ck_assert_msg(!search_with_order(t, n, alignment, opt - 1, orders[q],
                                       off, &reranks),
                    "seed %" PRIu64 " order %#x: a plan below the optimum",
                    seed, orders[q]);
    }
  }
  ck_assert_uint_gt(reranks, 100); /* the splits were really re-ranked */
}
END_TEST

/* ---- the search of large components (exact_stream.c) -------------------- */

/* exact_stream.c under order v on every component of t: a plan at the
 * optimum opt, none one byte below. */
static void stream_at_optimum(const struct planner_tensor *t, size_t n,
                              uint64_t alignment, uint64_t opt, uint64_t seed,
                              unsigned v, uint64_t *reranks)
{
  uint64_t off[MAXN];
  ck_assert_msg(search_with(t, n, alignment, opt, v, 1, off, reranks),
                "seed %" PRIu64 " order %u: no plan at the optimum %" PRIu64,
                seed, v, opt);
  check_plan(t, n, alignment, opt, off);
  ck_assert_msg(!search_with(t, n, alignment, opt - 1, v, 1, off, reranks),
                "seed %" PRIu64 " order %u: a plan below the optimum", seed,
                v);
}

/* One to three tensors of t (n of them, from rs) made to live the whole
 * time of the graph, and with twin set the second one identical to the
 * first. */
static void live_whole_time(uint64_t *rs, struct planner_tensor *t, size_t n,
                            int twin)
{
  int64_t lo = INT64_MAX, hi = 0;
  for (size_t i = 0; i < n; i++) {
    lo = t[i].first < lo ? t[i].first : lo;
    hi = t[i].last > hi ? t[i].last : hi;
  }
  size_t full = (size_t)tu_rand_range(rs, 1, 3);
  for (size_t i = 0; i < full; i++) {
    t[i].first = lo;
    t[i].last = hi;
    t[i].align = 0;
    if (t[i].size == 0)
      t[i].size = 1 + (uint64_t)i;
  }
  if (twin)
    t[1] = (struct planner_tensor){t[1].id, t[0].size, t[0].first,
                                   t[0].last, t[0].align, t[1].pinned, 0, 0};
}

/* 300 random graphs from seeds base + 1000 i + k, of nmin to 10
 * tensors (alignment by i & 1, pins when pins, spans up to hmax; with
 * whole, some tensors live the whole time, see live_whole_time()), each
 * checked by stream_at_optimum() under order k % 9. */
static void stream_vs_brute(uint64_t base, int i, size_t nmin, int pins,
                            uint64_t hmax, int whole)
{
  uint64_t reranks = 0;
  for (uint64_t k = 0; k < 300; k++) {
    uint64_t seed = base + (uint64_t)i * 1000u + k, rs = seed;
    size_t n = (size_t)tu_rand_range(&rs, nmin, 10);
    struct planner_tensor t[MAXN];
    uint64_t alignment = random_graph(&rs, t, n, i & 1, pins, hmax);
    if (whole)
      live_whole_time(&rs, t, n, (int)(k & 1));
    uint64_t opt = ce_brute(t, n, alignment);
    if (opt == 0)
      continue;
    stream_at_optimum(t, n, alignment, opt, seed, (unsigned)(k % 9),
                      &reranks);
  }
  ck_assert_uint_eq(reranks, 0); /* no splits: nothing re-ranked */
}

START_TEST(test_stream_vs_brute)
{
  /* exact_stream.c on random graphs (aligned, pinned, long spans), run on
   * every component whatever its size: it must find a plan at the brute
   * force's optimum and prove one byte less impossible. Every rule it
   * prunes with holds for the minimal canonical plan, so it is complete. */
  stream_vs_brute(0x57e0000u, _i, 2, _i & 2, _i & 4 ? 24 : 8, 0);
}
END_TEST

START_TEST(test_stream_pool_vs_brute)
{
  /* Random graphs under one to three tensors live the whole time (one of
   * them twice, for twins): exact_stream.c keeps these in its pool at the
   * highest floor, and when the others share their alignment (even _i) a
   * placement of one sets every other key at once. It must still find a
   * plan at the optimum and prove one byte less impossible. */
  stream_vs_brute(0x9001000u, _i, 3, 0, _i & 2 ? 24 : 8, 1);
}
END_TEST

void ce_add_random_tests(Suite *s)
{
  TCase *tr = tcase_create("random");
  tcase_set_timeout(tr, 300);
  tcase_add_loop_test(tr, test_random_vs_brute, 0, 8);
  tcase_add_loop_test(tr, test_random_aligned_pinned_vs_brute, 0, 4);
  tcase_add_loop_test(tr, test_random_twelve_vs_brute, 0, 3);
  tcase_add_loop_test(tr, test_random_sparse_vs_brute, 0, 4);
  tcase_add_loop_test(tr, test_dynamic_orders_vs_brute, 0, 4);
  tcase_add_loop_test(tr, test_stream_vs_brute, 0, 8);
  tcase_add_loop_test(tr, test_stream_pool_vs_brute, 0, 4);
  suite_add_tcase(s, tr);
}

/*
 * check_planner.c - tests of the planning core: the reference planners'
 * own cases (bit-exact where they give offsets), the worked example,
 * randomised property tests and scale. Validation errors and the
 * verifier are in check_planner_validation.c, the heuristics against a
 * brute-force reference in check_planner_oracle.c, `best` on threads in
 * check_planner_threads.c.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_planner.h"
#include "graph_csv.h"
#include "planner.h"
#include "testutil.h"

#define END 100 /* "never freed" in the TFLite cases: past every op */
#define NONE UINT64_MAX

struct ref_case {
  const char *name;
  enum planner_algo algo;
  uint64_t alignment;
  size_t n;
  uint32_t ids[32];         /* 0 means "use the row index" unless has_ids */
  int has_ids;
  uint64_t size[32];
  int64_t first[32];
  int64_t last[32];
  int64_t pinned[32];       /* 0 entries mean not pinned unless has_pins */
  int has_pins;
  uint64_t want_off[32];    /* checked when want_off[0] != NONE */
  uint64_t want_arena;
  uint64_t want_lb;         /* checked when not NONE */
};

static void build(const struct ref_case *c, struct planner_tensor *t)
{
  for (size_t i = 0; i < c->n; i++) {
    t[i].id = c->has_ids ? c->ids[i] : (uint32_t)i;
    t[i].size = c->size[i];
    t[i].first = c->first[i];
    t[i].last = c->last[i];
    t[i].align = 0;
    t[i].pinned = c->has_pins ? c->pinned[i] : PLANNER_NOT_PINNED;
    t[i].alias = 0;
    t[i].has_alias = 0;
  }
}

static void run_case(const struct ref_case *c)
{
  struct planner_tensor t[32];
  build(c, t);
  struct planner_graph g = {t, c->n};
  struct planner_options o;
  planner_options_init(&o);
  o.algo = c->algo;
  o.alignment = c->alignment;
  struct planner_plan p;
  planner_plan_init(&p);
  char err[ARENA_ERR_LEN] = "";
  int rc = planner_run(&g, &o, &p, err);
  ck_assert_msg(rc == 0, "%s: %s", c->name, err);
  ck_assert_int_eq(planner_verify(&g, &o, &p, err), 0);
  if (c->want_off[0] != NONE)
    for (size_t i = 0; i < c->n; i++)
      ck_assert_msg(p.offsets[i] == c->want_off[i],
                    "%s (%s): tensor %zu at %" PRIu64 ", want %" PRIu64,
                    c->name, planner_algo_name(c->algo), i, p.offsets[i],
                    c->want_off[i]);
  ck_assert_msg(p.arena_bytes == c->want_arena,
                "%s (%s): arena %" PRIu64 ", want %" PRIu64, c->name,
                planner_algo_name(c->algo), p.arena_bytes, c->want_arena);
  if (c->want_lb != NONE)
    ck_assert_msg(p.lower_bound_bytes == c->want_lb,
                  "%s: lb %" PRIu64 ", want %" PRIu64, c->name,
                  p.lower_bound_bytes, c->want_lb);
  planner_plan_cleanup(&p);
}

#define TFLM PLANNER_ALGO_TFLM_GREEDY
#define BESTFIT PLANNER_ALGO_TFLITE_BESTFIT
#define GSIZE PLANNER_ALGO_GREEDY_SIZE
#define NAIVE PLANNER_ALGO_NAIVE

/* Person-detection buffers (section A4). */
#define PERSON_SIZES                                                        \
  {9216, 3, 256, 2304, 2304, 2304, 1152, 4608, 4608, 4608, 4608, 4608,      \
   4608, 4608, 4608, 4608, 4608, 4608, 2304, 9216, 9216, 9216, 4608, 18432, \
   18432, 18432, 9216, 36864, 18432, 18432}
#define PERSON_FIRST                                                        \
  {0, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12,  \
   11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}
#define PERSON_LAST                                                         \
  {29, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, \
   12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}

static const struct ref_case cases[] = {
    /* A: TFLite Micro GreedyMemoryPlanner */
    {"A1", TFLM, 1, 2, {0}, 0, {10, 20}, {0, 2}, {1, 3}, {0}, 0, {0, 0}, 20, 20},
    {"A2", TFLM, 1, 5, {0}, 0, {10, 20, 30, 40, 50}, {0, 1, 2, 3, 0},
     {1, 2, 3, 4, 1}, {0}, 0, {50, 70, 40, 0, 0}, 90, 80},
    {"A3", TFLM, 1, 3, {0}, 0, {100, 50, 20}, {0, 2, 1}, {1, 3, 2}, {0}, 0,
     {0, 0, 100}, 120, 120},
    {"A4", TFLM, 1, 30, {0}, 0, PERSON_SIZES, PERSON_FIRST, PERSON_LAST, {0}, 0,
     {55296, 0, 2304, 0, 2304, 0, 4608, 0, 4608, 0, 4608, 0, 4608, 0, 4608,
      0, 4608, 0, 9216, 0, 9216, 0, 18432, 0, 18432, 0, 36864, 0, 36864, 0},
     64512, 64512},
    /* B: the linear planner is our naive bump allocator */
    {"B1", NAIVE, 1, 2, {0}, 0, {10, 20}, {0, 1}, {1, 2}, {0}, 0, {0, 10}, 30,
     NONE},
    {"B3", NAIVE, 1, 30, {0}, 0, PERSON_SIZES, PERSON_FIRST, PERSON_LAST, {0},
     0, {NONE}, 241027, 64512},
    /* C: TFLite Micro allocator level, online and offline (pinned) */
    {"C1", TFLM, 1, 4, {0}, 0, {48, 48, 48, 48}, {0, 1, 2, 3}, {2, 3, 3, 3},
     {0}, 0, {0, 96, 48, 0}, 144, NONE},
    {"C2", TFLM, 1, 4, {0}, 0, {48, 48, 48, 48}, {0, 1, 2, 3}, {1, 2, 3, 3},
     {0, 48, 0, 48}, 1, {0, 48, 0, 48}, 96, NONE},
    {"C4", TFLM, 1, 5, {0}, 0, {48, 48, 48, 48, 48}, {0, 0, 1, 2, 2},
     {1, 1, 2, 2, 2}, {0, 48, -1, 0, -1}, 1, {0, 48, 96, 0, 48}, 144, NONE},
    /* C5 without its never-used tensor, which has no lifetime at all. */
    {"C5", TFLM, 1, 3, {0}, 0, {64, 64, 64}, {0, 0, 1}, {1, 0, 1}, {0}, 0,
     {64, 0, 0}, 128, 128},
    {"C6", TFLM, 1, 2, {0}, 0, {64, 64}, {1, 1}, {1, 1}, {0}, 0, {64, 0}, 128,
     128},
    /* D: TFLite ArenaPlanner best fit, alignment 4 */
    {"D1", BESTFIT, 4, 6, {0}, 0, {3, 6, 9, 12, 15, 18}, {0, 0, 0, 2, 1, 1},
     {END, END, 1, END, 2, 2}, {0}, 0, {0, 4, 48, 48, 32, 12}, 60, NONE},
    {"D2", BESTFIT, 4, 2, {0, 10}, 1, {3, 33}, {0, 0}, {END, END}, {0}, 0,
     {0, 4}, 37, NONE},
    {"D3", BESTFIT, 4, 2, {1, 2}, 1, {6, 9}, {0, 0}, {END, END}, {0}, 0,
     {0, 8}, 17, NONE},
    {"D4", BESTFIT, 4, 6, {0}, 0, {3, 6, 9, 12, 15, 18}, {0, 0, 0, 2, 1, 1},
     {END, END, 1, END, 2, 1}, {0}, 0, {0, 4, 48, 12, 32, 12}, 57, NONE},
    {"D5", BESTFIT, 4, 6, {0}, 0, {3, 40, 9, 12, 15, 18}, {0, 0, 1, 3, 2, 2},
     {END, 1, 2, END, 3, 2}, {0}, 0, {0, 4, 44, 4, 24, 4}, 53, NONE},
    {"D6", BESTFIT, 4, 5, {0, 2, 3, 4, 5}, 1, {3, 9, 12, 15, 18},
     {0, 0, 2, 1, 1}, {END, 1, END, 2, 1}, {0}, 0, {0, 40, 4, 24, 4}, 49, NONE},
    {"D7", BESTFIT, 4, 9, {0}, 0, {32, 28, 36, 16, 8, 64, 10, 40, 27},
     {0, 0, 1, 2, 3, 4, 5, 6, 7}, {END, 3, 4, 4, 4, 6, 7, 7, END}, {0}, 0,
     {0, 32, 96, 132, 148, 32, 136, 96, 32}, 156, NONE},
    {"D8", BESTFIT, 4, 16, {0}, 0,
     {3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45, 48},
     {0, 0, 0, 0, 1, 1, 2, 2, 2, 2, 2, 3, 3, 4, 5, 5},
     {END, END, 1, 0, 3, 2, 3, 5, 2, 2, 2, END, 3, 5, END, 5}, {0}, 0,
     {0, 4, 152, 12, 212, 132, 108, 188, 80, 48, 12, 152, 12, 108, 60, 12},
     227, NONE},
    {"D9", BESTFIT, 4, 8, {0}, 0, {3, 6, 9, 12, 15, 18, 21, 24},
     {0, 0, 0, 2, 1, 0, 1, 2}, {END, END, 1, END, 2, 0, 1, 2}, {0}, 0,
     {0, 4, 52, 52, 36, 12, 12, 12}, 64, NONE},
    {"D10", BESTFIT, 4, 8, {0}, 0, {3, 6, 9, 12, 15, 18, 21, 24},
     {0, 0, 0, 2, 1, 0, 1, 2}, {END, END, END, END, END, END, END, END}, {0},
     0, {0, 4, 12, 108, 92, 24, 68, 44}, 120, NONE},
    {"D11", BESTFIT, 4, 3, {0, 1, 3}, 1, {3, 6, 12}, {0, 0, 0},
     {END, END, END}, {0}, 0, {0, 4, 12}, 24, NONE},
    /* D12 planned all at once (not stepwise) */
    {"D12", BESTFIT, 4, 11, {0}, 0, {3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33},
     {0, 0, 0, 0, 1, 1, 1, 2, 3, 3, 4}, {END, END, 1, 3, 4, 4, 1, 3, 4, 3, END},
     {0}, 0, {0, 4, 36, 136, 120, 100, 12, 76, 48, 12, 12}, 148, NONE},
    /* E: GPU delegate greedy by size (offsets version) */
    {"E1", GSIZE, 1, 1, {0}, 0, {16}, {0}, {1}, {0}, 0, {0}, 16, 16},
    {"E2", GSIZE, 1, 5, {0}, 0, {16, 8, 64, 32, 8}, {0, 1, 2, 3, 4},
     {1, 2, 3, 4, 5}, {0}, 0, {0, 64, 0, 64, 0}, 96, 96},
    {"E2-align128", GSIZE, 128, 5, {0}, 0, {16, 8, 64, 32, 8},
     {0, 1, 2, 3, 4}, {1, 2, 3, 4, 5}, {0}, 0, {0, 128, 0, 128, 0}, 160, NONE},
    {"E3", GSIZE, 1, 9, {0}, 0, {32, 32, 8, 16, 8, 64, 8, 8, 16},
     {0, 1, 2, 3, 4, 5, 6, 7, 8}, {1, 4, 5, 5, 5, 7, 8, 8, 9}, {0}, 0,
     {0, 32, 80, 64, 88, 0, 64, 72, 0}, 96, 96},
    /* F: the paper example */
    {"F-size", GSIZE, 1, 8, {0}, 0, {32, 28, 36, 16, 8, 64, 10, 40},
     {0, 1, 2, 3, 4, 5, 6, 7}, {1, 4, 5, 5, 5, 7, 8, 8}, {0}, 0,
     {0, 32, 64, 100, 116, 0, 104, 64}, 124, 124},
    {"F-tflm", TFLM, 1, 8, {0}, 0, {32, 28, 36, 16, 8, 64, 10, 40},
     {0, 1, 2, 3, 4, 5, 6, 7}, {1, 4, 5, 5, 5, 7, 8, 8}, {0}, 0, {NONE}, 124,
     124},
    {"F-bestfit", BESTFIT, 1, 8, {0}, 0, {32, 28, 36, 16, 8, 64, 10, 40},
     {0, 1, 2, 3, 4, 5, 6, 7}, {1, 4, 5, 5, 5, 7, 8, 8}, {0}, 0, {NONE}, 124,
     124},
    /* G: cross-planner results */
    {"G-A2-bestfit", BESTFIT, 1, 5, {0}, 0, {10, 20, 30, 40, 50},
     {0, 1, 2, 3, 0}, {1, 2, 3, 4, 1}, {0}, 0, {NONE}, 90, 80},
    {"G-A2-size", GSIZE, 1, 5, {0}, 0, {10, 20, 30, 40, 50}, {0, 1, 2, 3, 0},
     {1, 2, 3, 4, 1}, {0}, 0, {NONE}, 90, 80},
    {"G-E3-tflm", TFLM, 1, 9, {0}, 0, {32, 32, 8, 16, 8, 64, 8, 8, 16},
     {0, 1, 2, 3, 4, 5, 6, 7, 8}, {1, 4, 5, 5, 5, 7, 8, 8, 9}, {0}, 0, {NONE},
     96, 96},
    {"G-E3-bestfit", BESTFIT, 1, 9, {0}, 0, {32, 32, 8, 16, 8, 64, 8, 8, 16},
     {0, 1, 2, 3, 4, 5, 6, 7, 8}, {1, 4, 5, 5, 5, 7, 8, 8, 9}, {0}, 0, {NONE},
     96, 96},
    {"G-A4-bestfit", BESTFIT, 1, 30, {0}, 0, PERSON_SIZES, PERSON_FIRST,
     PERSON_LAST, {0}, 0, {NONE}, 64512, 64512},
    {"G-A4-size", GSIZE, 1, 30, {0}, 0, PERSON_SIZES, PERSON_FIRST,
     PERSON_LAST, {0}, 0, {NONE}, 64512, 64512},
};

START_TEST(test_reference_case)
{
  run_case(&cases[_i]);
}
END_TEST

/* H1: fsrcnn from Arm NN, every greedy planner reaches the bound. */
START_TEST(test_fsrcnn)
{
  static const uint64_t sz[] = {691200,  7372800, 7372800, 1843200, 1843200,
                                1843200, 1843200, 1843200, 1843200, 7372800,
                                7372800, 2764800, 2764800, 2764800};
  static const int64_t f[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  static const int64_t l[] = {1,  3,  5,  7,  9,  11, 13,
                              15, 17, 19, 21, 23, 25, 27};
  static const enum planner_algo algos[] = {TFLM, BESTFIT, GSIZE,
                                            PLANNER_ALGO_BEST};
  struct ref_case c = {"H1", TFLM, 1, 14, {0}, 0, {0}, {0}, {0}, {0}, 0,
                       {NONE}, 28569600, 28569600};
  memcpy(c.size, sz, sizeof sz);
  memcpy(c.first, f, sizeof f);
  memcpy(c.last, l, sizeof l);
  for (size_t k = 0; k < sizeof algos / sizeof *algos; k++) {
    c.algo = algos[k];
    run_case(&c);
  }
}
END_TEST

/* The worked example: the claimed 1204224 is below the true bound. */
START_TEST(test_worked_example)
{
  struct planner_tensor t[4] = {
      {0, 602112, 0, 0, 0, PLANNER_NOT_PINNED, 0, 0},
      {1, 802816, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
      {2, 401408, 1, 2, 0, PLANNER_NOT_PINNED, 0, 0},
      {3, 200704, 2, 2, 0, PLANNER_NOT_PINNED, 0, 0},
  };
  struct planner_graph g = {t, 4};
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = 1;
  for (int a = 0; a < PLANNER_ALGO__COUNT; a++) {
    struct planner_plan p;
    planner_plan_init(&p);
    o.algo = (enum planner_algo)a;
    ck_assert_int_eq(planner_run(&g, &o, &p, NULL), 0);
    ck_assert_int_eq(planner_verify(&g, &o, &p, NULL), 0);
    ck_assert_uint_eq(p.naive_bytes, 2007040);
    ck_assert_uint_eq(p.lower_bound_bytes, 1404928);
    if (a == PLANNER_ALGO_NAIVE) {
      ck_assert_uint_eq(p.arena_bytes, 2007040);
    } else {
      ck_assert_uint_eq(p.arena_bytes, 1404928);
      ck_assert_int_eq(p.proven_optimal, 1);
    }
    planner_plan_cleanup(&p);
  }
}
END_TEST

/* ---- properties on random graphs ---------------------------------------- */

size_t cp_random_graph(uint64_t *rs, enum cp_shape sh,
                       struct planner_tensor *t, size_t cap)
{
  size_t n = (size_t)tu_rand_range(rs, 1, cap);
  int64_t ops = (int64_t)tu_rand_range(rs, 1, 24);
  for (size_t i = 0; i < n; i++) {
    struct planner_tensor *x = &t[i];
    x->id = (uint32_t)(i * 7 + 3);
    x->align = tu_rand_range(rs, 0, 9) == 0 ? 1u << tu_rand_range(rs, 0, 8) : 0;
    x->pinned = PLANNER_NOT_PINNED;
    x->alias = 0;
    x->has_alias = 0;
    uint64_t kind = tu_rand_range(rs, 0, 9);
    x->size = kind == 0 ? 0 : kind == 1 ? tu_rand_range(rs, 1, 7)
                                        : tu_rand_range(rs, 1, 5000);
    if (sh == CP_SHAPE_CHAIN) {
      x->first = (int64_t)(i % (size_t)ops);
      x->last = x->first + (int64_t)tu_rand_range(rs, 0, 1);
    } else if (sh == CP_SHAPE_FANOUT) {
      x->first = (int64_t)tu_rand_range(rs, 0, 2);
      x->last = x->first + (int64_t)tu_rand_range(rs, 0, (uint64_t)ops);
    } else {
      x->first = (int64_t)tu_rand_range(rs, 0, (uint64_t)ops);
      x->last = tu_rand_range(rs, 0, 7) == 0
                    ? ops + 1
                    : x->first + (int64_t)tu_rand_range(rs, 0, 4);
      if (tu_rand_range(rs, 0, 9) == 0)
        x->first = 0;
    }
  }
  return n;
}

static void check_property(enum planner_algo algo, int rounds)
{
  struct planner_tensor t[40];
  uint64_t rs = 0x5eed0000u + (uint64_t)algo;
  char err[ARENA_ERR_LEN];
  for (int r = 0; r < rounds; r++) {
    size_t n = cp_random_graph(&rs, (enum cp_shape)(r % CP_SHAPE__N), t, 40);
    struct planner_graph g = {t, n};
    struct planner_options o;
    planner_options_init(&o);
    o.algo = algo;
    o.alignment = 1u << tu_rand_range(&rs, 0, 6);
    o.effort = 1;
    struct planner_plan a, b;
    planner_plan_init(&a);
    planner_plan_init(&b);
    ck_assert_msg(planner_run(&g, &o, &a, err) == 0, "round %d: %s", r, err);
    ck_assert_msg(planner_verify(&g, &o, &a, err) == 0, "round %d: %s", r,
                  err);
    ck_assert_uint_ge(a.arena_bytes, a.lower_bound_bytes);
    /* naive bytes plus the worst alignment padding */
    uint64_t pad = 0;
    for (size_t i = 0; i < n; i++)
      pad += (t[i].align > o.alignment ? t[i].align : o.alignment) - 1;
    ck_assert_uint_le(a.arena_bytes, a.naive_bytes + pad);
    ck_assert_uint_le(a.lower_bound_bytes, a.naive_bytes + pad);
    if (o.alignment == 1 && pad == 0)
      ck_assert_uint_le(a.lower_bound_bytes, a.naive_bytes);
    ck_assert_int_eq(a.proven_optimal, a.arena_bytes == a.lower_bound_bytes);
    if (algo != PLANNER_ALGO_EXACT) {
      ck_assert_int_eq(planner_run(&g, &o, &b, err), 0);
      ck_assert_uint_eq(a.arena_bytes, b.arena_bytes);
      ck_assert_mem_eq(a.offsets, b.offsets, n * sizeof *a.offsets);
    }
    planner_plan_cleanup(&a);
    planner_plan_cleanup(&b);
  }
}

START_TEST(test_property_random)
{
  check_property((enum planner_algo)_i, 10000);
}
END_TEST

/* The plans of one pass over the graphs of test_loaded_machine. */
enum { LOADED_RANDOM = 200, LOADED_ALL = LOADED_RANDOM + 2 };
struct loaded_pass {
  struct planner_plan p[LOADED_ALL];
};

/* Plans LOADED_RANDOM random graphs (`best`, effort 1, random alignments,
 * from a fixed seed) and MiniMalloc's E and G (`best`, defaults). */
static void loaded_pass(const struct planner_csv *mm, struct loaded_pass *r)
{
  struct planner_tensor t[40];
  uint64_t rs = 0x10adedu;
  char err[ARENA_ERR_LEN];
  for (int k = 0; k < LOADED_ALL; k++) {
    struct planner_options o;
    planner_options_init(&o);
    struct planner_graph g;
    if (k < LOADED_RANDOM) {
      g.n_tensors = cp_random_graph(&rs, (enum cp_shape)(k % CP_SHAPE__N), t, 40);
      g.tensors = t;
      o.alignment = 1u << tu_rand_range(&rs, 0, 6);
      o.effort = 1;
    } else {
      g = planner_csv_graph(&mm[k - LOADED_RANDOM]);
    }
    planner_plan_init(&r->p[k]);
    ck_assert_msg(planner_run(&g, &o, &r->p[k], err) == 0, "graph %d: %s", k,
                  err);
  }
}

/* The same plans, node for node, on an idle and on a loaded machine: CPU
 * hogs take most of the CPU (tu_hogs_start lowers this process's
 * priority), so every search gets far less wall time per work unit. */
START_TEST(test_loaded_machine)
{
  struct planner_csv mm[2];
  for (int i = 0; i < 2; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/minimalloc/%c.1048576.csv",
             tu_data_dir(), "EG"[i]);
    ck_assert_int_eq(tu_load_csv(path, &mm[i]), 0);
  }
  static struct loaded_pass idle, busy;
  loaded_pass(mm, &idle);
  struct tu_hogs h;
  ck_assert_int_eq(tu_hogs_start(&h, 3, 120), 0);
  loaded_pass(mm, &busy);
  tu_hogs_stop(&h);
  uint64_t searched = 0;
  for (int k = 0; k < LOADED_ALL; k++) {
    const struct planner_plan *a = &idle.p[k], *b = &busy.p[k];
    ck_assert_msg(a->nodes_explored == b->nodes_explored,
                  "graph %d: %" PRIu64 " nodes idle, %" PRIu64 " loaded", k,
                  a->nodes_explored, b->nodes_explored);
    ck_assert_uint_eq(a->arena_bytes, b->arena_bytes);
    ck_assert_uint_eq(a->lower_bound_bytes, b->lower_bound_bytes);
    ck_assert_int_eq(a->algo, b->algo);
    ck_assert_mem_eq(a->offsets, b->offsets, a->n_offsets * 8);
    searched += a->nodes_explored > 0;
    planner_plan_cleanup(&idle.p[k]);
    planner_plan_cleanup(&busy.p[k]);
  }
  ck_assert_uint_gt(searched, 20); /* the exact search ran on many */
  planner_csv_cleanup(&mm[0]);
  planner_csv_cleanup(&mm[1]);
}
END_TEST

/* `best` is never worse than any single heuristic. */
START_TEST(test_best_dominates)
{
  struct planner_tensor t[40];
  uint64_t rs = 77;
  for (int r = 0; r < 2000; r++) {
    size_t n = cp_random_graph(&rs, (enum cp_shape)(r % CP_SHAPE__N), t, 40);
    struct planner_graph g = {t, n};
    struct planner_options o;
    planner_options_init(&o);
    o.alignment = 1;
    struct planner_plan best;
    planner_plan_init(&best);
    ck_assert_int_eq(planner_run(&g, &o, &best, NULL), 0);
    for (int a = PLANNER_ALGO_TFLM_GREEDY; a <= PLANNER_ALGO_GREEDY_BREADTH;
         a++) {
      struct planner_plan h;
      planner_plan_init(&h);
      o.algo = (enum planner_algo)a;
      ck_assert_int_eq(planner_run(&g, &o, &h, NULL), 0);
      ck_assert_uint_le(best.arena_bytes, h.arena_bytes);
      planner_plan_cleanup(&h);
    }
    o.algo = PLANNER_ALGO_BEST;
    planner_plan_cleanup(&best);
  }
}
END_TEST

/* Pinned tensors stay where they are pinned under every algorithm. */
START_TEST(test_pinned_respected)
{
  struct planner_tensor t[40];
  uint64_t rs = 99;
  for (int r = 0; r < 2000; r++) {
    size_t n = cp_random_graph(&rs, CP_SHAPE_MIXED, t, 40);
    /* pin a few tensors at distinct high slots so they cannot collide */
    for (size_t i = 0; i < n; i += 5)
      if (t[i].size)
        t[i].pinned = (int64_t)(1u << 20) * (int64_t)(i + 1);
    struct planner_graph g = {t, n};
    struct planner_options o;
    planner_options_init(&o);
    o.algo = (enum planner_algo)(r % PLANNER_ALGO__COUNT);
    o.effort = 1;
    struct planner_plan p;
    planner_plan_init(&p);
    char err[ARENA_ERR_LEN];
    ck_assert_msg(planner_run(&g, &o, &p, err) == 0, "%s", err);
    for (size_t i = 0; i < n; i++)
      if (t[i].pinned != PLANNER_NOT_PINNED)
        ck_assert_uint_eq(p.offsets[i], (uint64_t)t[i].pinned);
    planner_plan_cleanup(&p);
  }
}
END_TEST

/* ---- scale ------------------------------------------------------------ */

START_TEST(test_million_tensors)
{
  size_t n = 1000000;
  struct planner_tensor *t = malloc(n * sizeof *t);
  ck_assert_ptr_nonnull(t);
  uint64_t rs = 1;
  for (size_t i = 0; i < n; i++) {
    t[i].id = (uint32_t)i;
    t[i].size = tu_rand_range(&rs, 1, 1 << 16);
    t[i].first = (int64_t)(i / 4);
    t[i].last = t[i].first + (int64_t)tu_rand_range(&rs, 0, 3);
    t[i].align = 0;
    t[i].pinned = PLANNER_NOT_PINNED;
    t[i].alias = 0;
    t[i].has_alias = 0;
  }
  struct planner_graph g = {t, n};
  struct planner_options o;
  planner_options_init(&o);
  o.algo = PLANNER_ALGO_GREEDY_SIZE;
  struct planner_plan p;
  planner_plan_init(&p);
  char err[ARENA_ERR_LEN];
  ck_assert_msg(planner_run(&g, &o, &p, err) == 0, "%s", err);
  ck_assert_uint_ge(p.arena_bytes, p.lower_bound_bytes);
  ck_assert_uint_lt(p.arena_bytes, p.naive_bytes);
  planner_plan_cleanup(&p);
  t[n - 1].id = 17; /* a duplicate at the very end */
  ck_assert_int_eq(planner_validate(&g, &o, err), ARENA_EDUPID);
  free(t);
}
END_TEST

static int stop_now(void *ctx)
{
  (void)ctx;
  return 1;
}

START_TEST(test_cancel)
{
  size_t n = 5000;
  struct planner_tensor *t = malloc(n * sizeof *t);
  for (size_t i = 0; i < n; i++)
    t[i] = (struct planner_tensor){(uint32_t)i, 64 + i, (int64_t)i,
                                   (int64_t)i + 3, 0, PLANNER_NOT_PINNED, 0, 0};
  struct planner_graph g = {t, n};
  struct planner_options o;
  planner_options_init(&o);
  o.stop = stop_now;
  struct planner_plan p;
  planner_plan_init(&p);
  ck_assert_int_eq(planner_run(&g, &o, &p, NULL), ARENA_ECANCELED);
  ck_assert_ptr_null(p.offsets);
  free(t);
}
END_TEST

Suite *planner_suite(void)
{
  Suite *s = suite_create("planner");
  TCase *tc = tcase_create("reference");
  tcase_add_loop_test(tc, test_reference_case, 0,
                      (int)(sizeof cases / sizeof *cases));
  tcase_add_test(tc, test_fsrcnn);
  tcase_add_test(tc, test_worked_example);
  suite_add_tcase(s, tc);

  cp_add_validation_tests(s);
  cp_add_share_tests(s);

  tc = tcase_create("property");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_property_random, PLANNER_ALGO_BEST,
                      PLANNER_ALGO__COUNT);
  tcase_add_test(tc, test_best_dominates);
  tcase_add_test(tc, test_loaded_machine);
  tcase_add_test(tc, test_pinned_respected);
  suite_add_tcase(s, tc);

  tc = tcase_create("scale");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_million_tensors);
  tcase_add_test(tc, test_cancel);
  suite_add_tcase(s, tc);

  cp_add_oracle_tests(s);
  cp_add_best_tests(s);
  cp_add_union_tests(s);
  cp_add_thread_tests(s);
  cp_add_sort_tests(s);
  cp_add_report_tests(s);
  return s;
}

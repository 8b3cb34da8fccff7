/*
 * check_planner_share.c - in-place sharing in the planning core
 * (planner.h, IN-PLACE SHARING): which declared pairs are legal, that the
 * planner joins the legal ones and never ends with a larger arena than
 * without them, that the verifier accepts an overlap only between a
 * declared legal pair at one offset, and that a graph without aliases
 * plans exactly as before.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_planner.h"
#include "planner.h"
#include "planner_int.h"
#include "share.h"
#include "testutil.h"

#define NP PLANNER_NOT_PINNED

static struct planner_tensor ten(uint32_t id, uint64_t size, int64_t first,
                                 int64_t last)
{
  return (struct planner_tensor){id, size, first, last, 0, NP, 0, 0};
}

static struct planner_tensor reuses(struct planner_tensor t, uint32_t in)
{
  t.alias = in;
  t.has_alias = 1;
  return t;
}

static void opts(struct planner_options *o, enum planner_algo a,
                 uint64_t align)
{
  planner_options_init(o);
  o->algo = a;
  o->alignment = align;
}

static void run_ok(const struct planner_tensor *t, size_t n,
                   const struct planner_options *o, struct planner_plan *p)
{
  struct planner_graph g = {t, n};
  char err[ARENA_ERR_LEN] = "";
  planner_plan_init(p);
  int rc = planner_run(&g, o, p, err);
  ck_assert_msg(rc == 0, "planner_run: %s (%s)", arena_strerror(rc), err);
}

START_TEST(test_chain_shares_one_buffer)
{
  /* three elementwise steps: each output over its input */
  struct planner_tensor t[] = {ten(0, 100, 0, 1),
                               reuses(ten(1, 100, 1, 2), 0),
                               reuses(ten(2, 100, 2, 3), 1)};
  for (int a = 0; a < PLANNER_ALGO__COUNT; a++) {
    struct planner_options o;
    struct planner_plan p;
    opts(&o, (enum planner_algo)a, 1);
    run_ok(t, 3, &o, &p);
    ck_assert_uint_eq(p.arena_bytes, 100);
    ck_assert_uint_eq(p.lower_bound_bytes, 100);
    ck_assert_uint_eq(p.lower_bound_unshared_bytes, 200);
    ck_assert_uint_eq(p.n_shared, 2);
    ck_assert_int_eq(p.proven_optimal, 1);
    ck_assert_uint_eq(p.offsets[0], p.offsets[2]);
    /* with sharing off the same plan is an overlap */
    struct planner_graph g = {t, 3};
    o.in_place = 0;
    ck_assert_int_eq(planner_verify(&g, &o, &p, NULL), ARENA_EVERIFY);
    planner_plan_cleanup(&p);
    run_ok(t, 3, &o, &p); /* and plans as if no alias was declared */
    struct planner_tensor bare[3];
    struct planner_plan pb;
    memcpy(bare, t, sizeof bare);
    for (size_t i = 0; i < 3; i++)
      bare[i].has_alias = 0;
    run_ok(bare, 3, &o, &pb);
    ck_assert_uint_eq(p.arena_bytes, pb.arena_bytes); /* naive: 300 */
    ck_assert_mem_eq(p.offsets, pb.offsets, 3 * sizeof *p.offsets);
    ck_assert_uint_ge(p.arena_bytes, 200);
    ck_assert_uint_eq(p.n_shared, 0);
    ck_assert_uint_eq(p.lower_bound_bytes, 200);
    planner_plan_cleanup(&p);
    planner_plan_cleanup(&pb);
  }
}
END_TEST

START_TEST(test_legality)
{
  struct planner_options o;
  opts(&o, PLANNER_ALGO_BEST, 1);
  struct planner_tensor in = ten(0, 100, 0, 1), out = ten(1, 100, 1, 2);
  ck_assert_ptr_null(planner_alias_check(&out, &in, &o));
  struct planner_tensor late = ten(0, 100, 0, 2); /* read after */
  ck_assert_ptr_nonnull(planner_alias_check(&out, &late, &o));
  struct planner_tensor early = ten(0, 100, 0, 0); /* gone before */
  ck_assert_ptr_nonnull(planner_alias_check(&out, &early, &o));
  struct planner_tensor born = ten(0, 100, 1, 1); /* not written before */
  ck_assert_ptr_nonnull(planner_alias_check(&out, &born, &o));
  struct planner_tensor big = ten(1, 120, 1, 2);
  ck_assert_ptr_nonnull(planner_alias_check(&big, &in, &o));
  opts(&o, PLANNER_ALGO_BEST, 64); /* 100 and 120 are both 128 */
  ck_assert_ptr_null(planner_alias_check(&big, &in, &o));
  struct planner_tensor empty = ten(1, 0, 1, 2);
  ck_assert_ptr_nonnull(planner_alias_check(&empty, &in, &o));
  ck_assert_ptr_nonnull(planner_alias_check(&in, &in, &o));
  struct planner_tensor pa = in, pb = out;
  pa.pinned = 0;
  pb.pinned = 128;
  ck_assert_ptr_nonnull(planner_alias_check(&pb, &pa, &o));
  pb.pinned = 0;
  ck_assert_ptr_null(planner_alias_check(&pb, &pa, &o));
  pb.pinned = NP;
  pb.align = 256; /* the input's pin 64 is not aligned for the output */
  pa.pinned = 64;
  ck_assert_ptr_nonnull(planner_alias_check(&pb, &pa, &o));
}
END_TEST

START_TEST(test_illegal_pairs_get_two_buffers)
{
  struct planner_tensor t[] = {ten(0, 100, 0, 2),
                               reuses(ten(1, 100, 1, 3), 0), /* overlaps */
                               ten(2, 50, 4, 5),
                               reuses(ten(3, 60, 5, 6), 2)}; /* sizes */
  struct planner_options o;
  struct planner_plan p;
  opts(&o, PLANNER_ALGO_BEST, 1);
  run_ok(t, 4, &o, &p);
  ck_assert_uint_eq(p.arena_bytes, 200);
  ck_assert_uint_eq(p.n_shared, 0);
  ck_assert_uint_eq(p.lower_bound_bytes, p.lower_bound_unshared_bytes);
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(test_one_input_one_output)
{
  /* two outputs name one input: only the first in graph order takes it */
  struct planner_tensor t[] = {ten(0, 100, 0, 1),
                               reuses(ten(1, 100, 1, 2), 0),
                               reuses(ten(2, 100, 1, 2), 0)};
  struct planner_options o;
  struct planner_plan p;
  opts(&o, PLANNER_ALGO_BEST, 1);
  run_ok(t, 3, &o, &p);
  ck_assert_uint_eq(p.n_shared, 1);
  ck_assert_uint_eq(p.offsets[0], p.offsets[1]);
  ck_assert_uint_ne(p.offsets[0], p.offsets[2]);
  ck_assert_uint_eq(p.arena_bytes, 200);
  /* a plan that gives both the input's bytes fails verification */
  struct planner_graph g = {t, 3};
  p.offsets[0] = p.offsets[1] = p.offsets[2] = 0;
  p.arena_bytes = 100;
  char err[ARENA_ERR_LEN] = "";
  ck_assert_int_eq(planner_verify(&g, &o, &p, err), ARENA_EVERIFY);
  ck_assert_ptr_nonnull(strstr(err, "both reuse"));
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(test_verifier_allows_only_declared_pairs)
{
  struct planner_tensor t[] = {ten(0, 100, 0, 1), ten(1, 100, 1, 2)};
  uint64_t off[2] = {0, 0};
  struct planner_plan p;
  planner_plan_init(&p);
  p.offsets = off;
  p.n_offsets = 2;
  p.arena_bytes = 100;
  struct planner_options o;
  opts(&o, PLANNER_ALGO_BEST, 1);
  struct planner_graph g = {t, 2};
  char err[ARENA_ERR_LEN] = "";
  /* undeclared: the overlap at operator 1 is an error */
  ck_assert_int_eq(planner_verify(&g, &o, &p, err), ARENA_EVERIFY);
  ck_assert_ptr_nonnull(strstr(err, "overlap"));
  t[1] = reuses(t[1], 0); /* declared and legal */
  ck_assert_int_eq(planner_verify(&g, &o, &p, err), 0);
  t[0].last = 2; /* declared but illegal: the input is read after */
  ck_assert_int_eq(planner_verify(&g, &o, &p, err), ARENA_EVERIFY);
  t[0].last = 1;
  off[1] = 8; /* declared, legal, but not at one offset */
  p.arena_bytes = 108;
  ck_assert_int_eq(planner_verify(&g, &o, &p, err), ARENA_EVERIFY);
  /* a third tensor over the shared bytes while the output lives */
  struct planner_tensor u[] = {t[0], t[1], ten(2, 10, 2, 3)};
  uint64_t off3[3] = {0, 0, 90};
  struct planner_graph g3 = {u, 3};
  p.offsets = off3;
  p.n_offsets = 3;
  p.arena_bytes = 100;
  ck_assert_int_eq(planner_verify(&g3, &o, &p, err), ARENA_EVERIFY);
  ck_assert_ptr_nonnull(strstr(err, "tensors 1 "));
  off3[2] = 100;
  p.arena_bytes = 110;
  ck_assert_int_eq(planner_verify(&g3, &o, &p, err), 0);
}
END_TEST

START_TEST(test_bad_alias_is_invalid)
{
  struct planner_tensor t[] = {ten(0, 100, 0, 1), reuses(ten(1, 100, 1, 2), 7)};
  struct planner_graph g = {t, 2};
  struct planner_options o;
  opts(&o, PLANNER_ALGO_BEST, 1);
  char err[ARENA_ERR_LEN] = "";
  ck_assert_int_eq(planner_validate(&g, &o, err), ARENA_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "not in the graph"));
  t[1].alias = 1;
  ck_assert_int_eq(planner_validate(&g, &o, err), ARENA_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "itself"));
}
END_TEST

START_TEST(test_pins_agree)
{
  struct planner_tensor t[] = {ten(0, 64, 0, 1), reuses(ten(1, 64, 1, 2), 0),
                               ten(2, 64, 0, 2)};
  t[1].pinned = 128;
  struct planner_options o;
  struct planner_plan p;
  opts(&o, PLANNER_ALGO_BEST, 64);
  run_ok(t, 3, &o, &p);
  ck_assert_uint_eq(p.n_shared, 1);
  ck_assert_uint_eq(p.offsets[0], 128);
  ck_assert_uint_eq(p.offsets[1], 128);
  planner_plan_cleanup(&p);
  t[0].pinned = 0; /* pinned apart: two buffers, each at its pin */
  run_ok(t, 3, &o, &p);
  ck_assert_uint_eq(p.n_shared, 0);
  ck_assert_uint_eq(p.offsets[0], 0);
  ck_assert_uint_eq(p.offsets[1], 128);
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(test_pinned_chains_collide)
{
  /* 0 and 2 are pinned at one offset and never live at once, so the
   * graph is valid; joined with 1, which reuses 0 and meets 2 at op 2,
   * the chain would collide with 2: nothing is shared, and 1 gets bytes
   * of its own */
  struct planner_tensor t[] = {ten(0, 64, 0, 1), reuses(ten(1, 64, 1, 2), 0),
                               ten(2, 64, 2, 3)};
  t[0].pinned = t[2].pinned = 0;
  for (int a = 0; a < PLANNER_ALGO__COUNT; a++) {
    struct planner_options o;
    struct planner_plan p;
    opts(&o, (enum planner_algo)a, 64);
    run_ok(t, 3, &o, &p);
    ck_assert_uint_eq(p.n_shared, 0);
    ck_assert_uint_eq(p.offsets[0], 0);
    ck_assert_uint_eq(p.offsets[2], 0);
    ck_assert_uint_eq(p.offsets[1], 64);
    ck_assert_uint_eq(p.arena_bytes, 128);
    planner_plan_cleanup(&p);
  }
}
END_TEST

/* A random graph with aliases, pins, own alignments and, in some rounds,
 * sizes and pins close to the largest arena: the raw material of
 * test_joined_needs_only_pins. */
static size_t pinned_alias_graph(uint64_t *rs, int huge,
                                 struct planner_tensor *t, size_t cap)
{
  size_t n = cp_random_graph(rs, (enum cp_shape)tu_rand_range(rs, 0, 2), t,
                             cap);
  for (size_t i = 0; i < n; i++) {
    if (huge && tu_rand_range(rs, 0, 3) == 0)
      t[i].size = ((uint64_t)1 << 60) + tu_rand_range(rs, 0, 63);
    if (tu_rand_range(rs, 0, 2) == 0)
      t[i].pinned = (int64_t)(tu_rand_range(rs, 0, 8) << 6) +
                    (huge ? ((int64_t)1 << 61) : 0);
    if (!tu_rand_range(rs, 0, 1)) {
      size_t k = (size_t)tu_rand_range(rs, 0, n - 1);
      if (k == i || !t[k].size || t[k].first >= t[k].last)
        continue;
      t[i].first = t[k].last; /* legal when sizes agree */
      if (t[i].last < t[i].first)
        t[i].last = t[i].first + (int64_t)tu_rand_range(rs, 0, 2);
      t[i].size = t[k].size - tu_rand_range(rs, 0, t[k].size > 63 ? 63 : 0);
      if (!t[i].size)
        t[i].size = 1;
      t[i].alias = t[k].id;
      t[i].has_alias = 1;
    }
  }
  return n;
}

START_TEST(test_joined_needs_only_pins)
{
  /* share.c validates the joined graph only for colliding pins and
   * argues that nothing else of planner_validate() can fail on it: check
   * that argument against the full validation */
  uint64_t rs = 0x101ull;
  enum { CAP = 24 };
  struct planner_tensor t[CAP];
  int checked = 0, pinned_apart = 0;
  for (int r = 0; r < 4000; r++) {
    size_t n = pinned_alias_graph(&rs, r % 4 == 3, t, CAP);
    struct planner_graph g = {t, n};
    struct planner_options o;
    opts(&o, PLANNER_ALGO_BEST, (uint64_t)1 << tu_rand_range(&rs, 0, 6));
    uint32_t *in_row = NULL;
    if (planner__validate(&g, &o, NULL, &in_row) || !in_row)
      continue;
    struct planner__share s;
    int rc = planner__share_init(&s, &g, &o, in_row);
    ck_assert_int_ne(rc, ARENA_ENOMEM);
    if (s.n_taken) {
      ck_assert_int_eq(rc, planner_validate(&s.joined, &o, NULL));
      checked++;
      pinned_apart += rc == ARENA_EPINNED;
    } else {
      ck_assert_int_eq(rc, 0);
    }
    planner__share_cleanup(&s);
    free(in_row);
  }
  /* the rounds reach both answers */
  ck_assert_int_gt(checked, 200);
  ck_assert_int_gt(pinned_apart, 10);
}
END_TEST

/* Plans t (n tensors) with every algorithm at alignment al and checks
 * that the bound holds for the plan and, when given, for a plan the
 * verifier accepts with arena other (0: none), and that optimality is
 * claimed only at the bound. */
static void bound_holds(const struct planner_tensor *t, size_t n,
                        uint64_t al, uint64_t other)
{
  for (int a = 0; a < PLANNER_ALGO__COUNT; a++) {
    struct planner_options o;
    struct planner_plan p;
    opts(&o, (enum planner_algo)a, al);
    o.effort = 5;
    run_ok(t, n, &o, &p);
    ck_assert_msg(p.lower_bound_bytes <= p.arena_bytes,
                  "%s: bound %llu above its own arena %llu",
                  planner_algo_name((enum planner_algo)a),
                  (unsigned long long)p.lower_bound_bytes,
                  (unsigned long long)p.arena_bytes);
    ck_assert_uint_le(p.lower_bound_bytes, p.lower_bound_unshared_bytes);
    if (other)
      ck_assert_msg(p.lower_bound_bytes <= other,
                    "%s: bound %llu above a valid plan of %llu bytes",
                    planner_algo_name((enum planner_algo)a),
                    (unsigned long long)p.lower_bound_bytes,
                    (unsigned long long)other);
    ck_assert_int_eq(p.proven_optimal, p.arena_bytes == p.lower_bound_bytes);
    planner_plan_cleanup(&p);
  }
}

START_TEST(test_bound_of_unshared_plan)
{
  /* 2 (62 bytes) and 1 (64) are a legal pair at alignment 64, but joined
   * they count 64 bytes where 2 lives with 0: the plan that shares needs
   * 128 bytes, the one that does not 126, and the bound is 126. It used
   * to be 128, above the arena of the plan returned, which was then
   * "proven optimal". */
  struct planner_tensor t[] = {ten(0, 64, 0, 1), reuses(ten(1, 64, 2, 2), 2),
                               ten(2, 62, 0, 2)};
  bound_holds(t, 3, 64, 126);
  struct planner_options o;
  struct planner_plan p;
  opts(&o, PLANNER_ALGO_BEST, 64);
  run_ok(t, 3, &o, &p);
  ck_assert_uint_eq(p.arena_bytes, 126);
  ck_assert_uint_eq(p.n_shared, 0);
  ck_assert_uint_eq(p.lower_bound_bytes, 126);
  ck_assert_uint_eq(p.lower_bound_unshared_bytes, 126);
  ck_assert_int_eq(p.bound, PLANNER_BOUND_LOAD);
  ck_assert_int_eq(p.proven_optimal, 1);
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(test_bound_below_partial_sharing)
{
  /* Two pairs: 3 reuses 2 (2 bytes, then 64) and 5 reuses 4. Joined or
   * not, both graphs have a load bound of 192 (0, 1 and the joined 2-3 at
   * operator 0; 0, 4 and 5 at operator 6); sharing only 4-5 needs 130
   * bytes, a plan the verifier accepts. The bound must not claim more. */
  struct planner_tensor t[] = {ten(0, 64, 0, 7),
                               ten(1, 64, 0, 0),
                               ten(2, 2, 0, 1),
                               reuses(ten(3, 64, 1, 2), 2),
                               ten(4, 64, 5, 6),
                               reuses(ten(5, 64, 6, 7), 4)};
  uint64_t off[] = {0, 64, 128, 64, 64, 64};
  struct planner_graph g = {t, 6};
  struct planner_options o;
  opts(&o, PLANNER_ALGO_BEST, 64);
  struct planner_plan p;
  planner_plan_init(&p);
  p.offsets = off;
  p.n_offsets = 6;
  p.arena_bytes = 130;
  char err[ARENA_ERR_LEN] = "";
  ck_assert_msg(planner_verify(&g, &o, &p, err) == 0, "%s", err);
  bound_holds(t, 6, 64, 130);
}
END_TEST

/* A graph whose declared pairs are legal but differ in size (rounding to
 * one at alignment al), with some tensors of their own alignment. */
static size_t uneven_pairs(uint64_t *rs, uint64_t al, struct planner_tensor *t,
                           size_t cap)
{
  size_t n = cp_random_graph(rs, (enum cp_shape)tu_rand_range(rs, 0, 2), t,
                             cap);
  for (size_t i = 0; i < n; i++) {
    if (tu_rand_range(rs, 0, 2))
      continue;
    size_t k = (size_t)tu_rand_range(rs, 0, n - 1);
    if (k == i || !t[k].size || t[k].first >= t[k].last)
      continue;
    t[i].first = t[k].last;
    if (t[i].last < t[i].first)
      t[i].last = t[i].first + (int64_t)tu_rand_range(rs, 0, 2);
    uint64_t r = (t[k].size + al - 1) / al * al; /* both round to r */
    t[i].size = r - tu_rand_range(rs, 0, al - 1);
    t[i].alias = t[k].id;
    t[i].has_alias = 1;
  }
  return n;
}

START_TEST(test_random_bound_holds)
{
  /* The bound holds for every plan the verifier accepts: the plans of
   * the graph with any subset of its aliases kept are such plans when
   * the verifier says so */
  uint64_t rs = 0xb0e5ull + (uint64_t)_i;
  enum { CAP = 24 };
  struct planner_tensor t[CAP], sub[CAP];
  int compared = 0;
  for (int r = 0; r < 150; r++) {
    uint64_t al = (uint64_t)1 << tu_rand_range(&rs, 0, 6);
    size_t n = uneven_pairs(&rs, al, t, CAP);
    struct planner_graph g = {t, n};
    struct planner_options o;
    opts(&o, PLANNER_ALGO_BEST, al);
    o.effort = 5;
    struct planner_plan p, q;
    run_ok(t, n, &o, &p);
    bound_holds(t, n, al, 0);
    for (int k = 0; k < 4; k++) {
      memcpy(sub, t, n * sizeof *t);
      for (size_t i = 0; i < n; i++)
        if (tu_rand_range(&rs, 0, 1))
          sub[i].has_alias = 0;
      run_ok(sub, n, &o, &q);
      char err[ARENA_ERR_LEN];
      if (planner_verify(&g, &o, &q, err) == 0) {
        ck_assert_msg(p.lower_bound_bytes <= q.arena_bytes,
                      "round %d: bound %llu, a valid plan of %llu bytes", r,
                      (unsigned long long)p.lower_bound_bytes,
                      (unsigned long long)q.arena_bytes);
        compared++;
      }
      planner_plan_cleanup(&q);
    }
    planner_plan_cleanup(&p);
  }
  ck_assert_int_gt(compared, 300);
}
END_TEST

/* Declares random aliases on a random graph: mostly legal ones (an input
 * whose last use starts the output, sizes made equal), some illegal. */
static void add_aliases(uint64_t *rs, struct planner_tensor *t, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    if (tu_rand_range(rs, 0, 2))
      continue;
    size_t k = (size_t)tu_rand_range(rs, 0, n - 1);
    if (k == i)
      continue;
    if (tu_rand_range(rs, 0, 3)) { /* make it legal, if it can be */
      if (t[k].first >= t[k].last || t[k].size == 0)
        continue;
      t[i].first = t[k].last;
      if (t[i].last < t[i].first)
        t[i].last = t[i].first + (int64_t)tu_rand_range(rs, 0, 3);
      t[i].size = t[k].size;
      t[i].pinned = t[k].pinned = NP;
    }
    t[i].alias = t[k].id;
    t[i].has_alias = 1;
  }
}

START_TEST(test_random_never_larger)
{
  uint64_t rs = 0x5a17ull + (uint64_t)_i;
  enum { CAP = 40 };
  struct planner_tensor t[CAP], bare[CAP];
  for (int r = 0; r < 60; r++) {
    size_t n = cp_random_graph(&rs, (enum cp_shape)(r % CP_SHAPE__N), t, CAP);
    add_aliases(&rs, t, n);
    memcpy(bare, t, n * sizeof *t);
    for (size_t i = 0; i < n; i++)
      bare[i].has_alias = 0;
    for (int a = 0; a < PLANNER_ALGO__COUNT; a++) {
      struct planner_options o;
      struct planner_plan ps, pb;
      opts(&o, (enum planner_algo)a, r % 2 ? 64 : 1);
      o.effort = 5;
      run_ok(t, n, &o, &ps);
      run_ok(bare, n, &o, &pb);
      ck_assert_msg(ps.arena_bytes <= pb.arena_bytes,
                    "round %d algo %d: %llu with sharing, %llu without", r,
                    a, (unsigned long long)ps.arena_bytes,
                    (unsigned long long)pb.arena_bytes);
      ck_assert_uint_le(ps.lower_bound_bytes, ps.lower_bound_unshared_bytes);
      ck_assert_uint_le(ps.lower_bound_bytes, ps.arena_bytes);
      ck_assert_uint_eq(pb.n_shared, 0);
      struct planner_graph g = {t, n};
      char err[ARENA_ERR_LEN] = "";
      ck_assert_msg(planner_verify(&g, &o, &ps, err) == 0, "%s", err);
      planner_plan_cleanup(&ps);
      planner_plan_cleanup(&pb);
    }
  }
}
END_TEST

START_TEST(test_unshared_unchanged)
{
  /* has_alias = 0 with any alias value plans exactly as before */
  uint64_t rs = 77;
  enum { CAP = 40 };
  struct planner_tensor t[CAP], u[CAP];
  size_t n = cp_random_graph(&rs, CP_SHAPE_MIXED, t, CAP);
  memcpy(u, t, sizeof t);
  for (size_t i = 0; i < n; i++)
    u[i].alias = (uint32_t)tu_rand(&rs);
  struct planner_options o;
  struct planner_plan a, b;
  opts(&o, PLANNER_ALGO_BEST, 64);
  run_ok(t, n, &o, &a);
  run_ok(u, n, &o, &b);
  ck_assert_uint_eq(a.arena_bytes, b.arena_bytes);
  ck_assert_mem_eq(a.offsets, b.offsets, n * sizeof *a.offsets);
  planner_plan_cleanup(&a);
  planner_plan_cleanup(&b);
}
END_TEST

void cp_add_share_tests(Suite *s)
{
  TCase *tc = tcase_create("share");
  tcase_add_test(tc, test_chain_shares_one_buffer);
  tcase_add_test(tc, test_legality);
  tcase_add_test(tc, test_illegal_pairs_get_two_buffers);
  tcase_add_test(tc, test_one_input_one_output);
  tcase_add_test(tc, test_verifier_allows_only_declared_pairs);
  tcase_add_test(tc, test_bad_alias_is_invalid);
  tcase_add_test(tc, test_pins_agree);
  tcase_add_test(tc, test_pinned_chains_collide);
  tcase_add_test(tc, test_joined_needs_only_pins);
  tcase_add_test(tc, test_bound_of_unshared_plan);
  tcase_add_test(tc, test_bound_below_partial_sharing);
  tcase_add_loop_test(tc, test_random_bound_holds, 0, 4);
  tcase_add_loop_test(tc, test_random_never_larger, 0, 4);
  tcase_add_test(tc, test_unshared_unchanged);
  suite_add_tcase(s, tc);
}

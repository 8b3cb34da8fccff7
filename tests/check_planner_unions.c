/*
 * check_planner_unions.c - the unions of placed bytes (planner/tunion.h)
 * against brute force: tensors are placed at random offsets in a random
 * order, and after each placement the bytes an overlap query returns
 * must have exactly the union of the placed tensors that overlap the
 * queried one in time, on graphs made to build every kind of union:
 * node, group, block (some given up) and block-tree unions. And the
 * plan check's use of the index's order by first (row_of): the same
 * colliding pair as with its own sort.
 */
#include <check.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "check_planner.h"
#include "planner.h"
#include "planner_int.h"
#include "testutil.h"
#include "tindex.h"
#include "tunion.h"

static int cmp_off(const void *a, const void *b)
{
  uint64_t x = ((const struct tindex_span *)a)->off;
  uint64_t y = ((const struct tindex_span *)b)->off;
  return (x > y) - (x < y);
}

/* Sorts v[0..n) and merges it into disjoint, not touching pieces;
 * returns their count. */
static size_t normalise(struct tindex_span *v, size_t n)
{
  qsort(v, n, sizeof *v, cmp_off);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (k && v[i].off <= v[k - 1].end) {
      if (v[i].end > v[k - 1].end)
        v[k - 1].end = v[i].end;
    } else {
      v[k++] = v[i];
    }
  }
  return k;
}

/* A graph of n tensors over about n / 2 operators: most live a few
 * operators, `long_pct` percent live up to the whole graph; sizes are
 * odd. */
static void graph(uint64_t *rs, struct planner_tensor *t, size_t n,
                  unsigned long_pct)
{
  int64_t ops = (int64_t)(n / 2);
  for (size_t i = 0; i < n; i++) {
    int64_t f = (int64_t)tu_rand_range(rs, 0, (uint64_t)ops);
    int64_t len = tu_rand_range(rs, 0, 99) < long_pct
                      ? (int64_t)tu_rand_range(rs, 100, (uint64_t)ops)
                      : (int64_t)tu_rand_range(rs, 0, 4);
    uint64_t size = 2 * tu_rand_range(rs, 1, 500) + 1;
    t[i] = (struct planner_tensor){(uint32_t)i, size, f, f + len, 0,
                                   PLANNER_NOT_PINNED, 0, 0};
  }
}

/* A query's scratch: its results and the brute-force answer. */
struct scratch {
  struct tindex_spans out;
  struct tunion_runs runs;
  struct tindex_span *got, *want; /* want: m + 1 entries */
  size_t got_cap;
  size_t k; /* placements made, for messages */
};

/* Checks the query of rank q against brute force over pos. */
static void check_query(const struct tindex *x, const struct tindex_span *pos,
                        struct tunion *u, uint32_t q, struct scratch *c)
{
  size_t m = x->m;
  ck_assert_int_eq(tunion_collect(x, pos, u, q, &c->out, &c->runs), 0);
  size_t n_got = c->out.n;
  for (size_t i = 0; i < c->runs.n; i++)
    n_got += c->runs.v[i].n;
  if (n_got > c->got_cap) {
    c->got_cap = 2 * n_got;
    c->got = realloc(c->got, c->got_cap * sizeof *c->got);
  }
  if (c->out.n) /* out.v may still be NULL */
    memcpy(c->got, c->out.v, c->out.n * sizeof *c->got);
  n_got = c->out.n;
  size_t short_runs = 0; /* only the group's union may be one */
  for (size_t i = 0; i < c->runs.n; i++) {
    const struct tindex_span *v = *c->runs.v[i].base + c->runs.v[i].at;
    ck_assert_uint_ge(c->runs.v[i].n, 1);
    short_runs += c->runs.v[i].n < TUNION_RUN;
    ck_assert_uint_le(short_runs, 1);
    for (size_t j = 1; j < c->runs.v[i].n; j++) /* sorted, disjoint */
      ck_assert_uint_lt(v[j - 1].end, v[j].off);
    memcpy(c->got + n_got, v, c->runs.v[i].n * sizeof *c->got);
    n_got += c->runs.v[i].n;
  }
  size_t n_want = 0;
  for (size_t r = 0; r < m; r++)
    if (pos[r].end && x->item[r].s0 < x->item[q].s1 &&
        x->item[q].s0 < x->item[r].s1)
      c->want[n_want++] = pos[r];
  n_got = normalise(c->got, n_got);
  n_want = normalise(c->want, n_want);
  ck_assert_msg(n_got == n_want, "placement %zu: %zu pieces, want %zu", c->k,
                n_got, n_want);
  ck_assert_msg(memcmp(c->got, c->want, n_got * sizeof *c->got) == 0,
                "placement %zu: other pieces", c->k);
}

/* Places every tensor of g at a random offset, in a random order, and
 * checks a query of a random tensor (every `every` placements, and of
 * the one about to be placed) against brute force; in the second half,
 * only every `gap` placements, so that the unions read then have many
 * placements to catch up with. Returns the unions for the caller to
 * inspect (clean them up). */
static void check_unions(const struct planner_graph *g, unsigned every,
                         unsigned gap, uint64_t *rs, struct tunion *u)
{
  struct planner_options o;
  struct planner__prob p;
  planner_options_init(&o);
  o.alignment = 1;
  ck_assert_int_eq(planner__prob_init(&p, g, &o), 0);
  const struct tindex *x = p.x;
  size_t m = x->m;
  struct tindex_span *pos = calloc(m, sizeof *pos);
  struct scratch c = {0};
  c.want = malloc((m + 1) * sizeof *c.want);
  c.got_cap = 16;
  c.got = malloc(c.got_cap * sizeof *c.got);
  uint32_t *order = malloc(m * sizeof *order);
  for (size_t r = 0; r < m; r++)
    order[r] = (uint32_t)r;
  for (size_t r = m; r > 1; r--) { /* shuffle */
    size_t k = (size_t)tu_rand_range(rs, 0, r - 1);
    uint32_t v = order[r - 1];
    order[r - 1] = order[k];
    order[k] = v;
  }
  memset(u, 0, sizeof *u);
  uint64_t space = 600 * (uint64_t)m / 8;
  for (size_t k = 0; k < m; k++) {
    uint32_t q = k % every == 0 ? (uint32_t)tu_rand_range(rs, 0, m - 1)
                                : order[k];
    c.k = k;
    if (k < m / 2 || k % gap == 0)
      check_query(x, pos, u, q, &c);
    uint32_t r = order[k];
    uint64_t off = tu_rand_range(rs, 0, space);
    pos[r] = (struct tindex_span){off, off + x->item[r].size};
    ck_assert_int_eq(tunion_add(x, u, r, off, pos[r].end), 0);
  }
  free(c.out.v);
  free(c.runs.v);
  free(c.got);
  free(c.want);
  free(order);
  free(pos);
  planner__prob_cleanup(&p);
}

enum { N_UNIONS = 9000 }; /* tensors of each case */

/* Checks the unions on the graph of seed with long_pct percent long-lived
 * tensors, queried as check_unions() says with gap; leaves them in u. */
static void check_case(uint64_t seed, unsigned long_pct, unsigned gap,
                       struct tunion *u)
{
  static struct planner_tensor t[N_UNIONS];
  graph(&seed, t, N_UNIONS, long_pct);
  struct planner_graph g = {t, N_UNIONS};
  check_unions(&g, 1, gap, &seed, u);
}

/* Mostly short tensors: blocks and node unions, no tree. */
START_TEST(test_unions_short)
{
  struct tunion u;
  check_case(0x51, 1, 1, &u);
  ck_assert_ptr_nonnull(u.group); /* the timeline is long enough */
  ck_assert_ptr_nonnull(u.block);
  tunion_cleanup(&u);
}
END_TEST

/* Many long-lived tensors queried often: every kind of union, the
 * block tree too, and blocks that give their unions up. */
START_TEST(test_unions_long)
{
  struct tunion u;
  check_case(0x52, 30, 1, &u);
  ck_assert_ptr_nonnull(u.group);
  ck_assert_ptr_nonnull(u.node);
  ck_assert_ptr_nonnull(u.tree);
  size_t gave_up = 0;
  for (size_t k = 0; k < (N_UNIONS + TUNION_BLOCK - 1) / TUNION_BLOCK; k++)
    gave_up += u.n_block[k] == TUNION_GAVE_UP;
  ck_assert_uint_gt(gave_up, 0);
  tunion_cleanup(&u);
}
END_TEST

/* Long-lived tensors queried often, then seldom: the block tree, built
 * in the first half, then has hundreds of placements to take in at each
 * read, more than it has blocks, and is recomputed. */
START_TEST(test_unions_seldom)
{
  struct tunion u;
  check_case(0x53, 30, 400, &u);
  ck_assert_ptr_nonnull(u.tree);
  tunion_cleanup(&u);
}
END_TEST

/* Short tensors crowded into the first 64th of the timeline, sparse
 * ones after: the crowded ones have too many neighbours to be read as
 * near tensors and stay in the tree's lists, the sparse ones are near
 * (tindex.h, "Near tensors"), and each span knows the first near one
 * live in it; queries see both right. */
START_TEST(test_unions_crowded)
{
  static struct planner_tensor t[N_UNIONS];
  uint64_t rs = 0x54;
  graph(&rs, t, N_UNIONS, 1);
  int64_t ops = N_UNIONS / 2;
  for (size_t i = 0; i < N_UNIONS / 2; i++) {
    int64_t len = t[i].last - t[i].first;
    t[i].first = (int64_t)tu_rand_range(&rs, 0, (uint64_t)ops / 64);
    t[i].last = t[i].first + len;
  }
  struct planner_graph g = {t, N_UNIONS};
  struct planner_options o;
  struct planner__prob p;
  planner_options_init(&o);
  ck_assert_int_eq(planner__prob_init(&p, &g, &o), 0);
  size_t near = 0, listed = 0;
  for (size_t r = 0; r < p.x->m; r++) {
    const struct tindex_item *it = &p.x->item[r];
    if (it->s1 - it->s0 <= TINDEX_NEAR) {
      near += p.x->near_s1[r] != 0;
      listed += p.x->near_s1[r] == 0;
    }
  }
  for (uint32_t s = 0; s < p.x->n_spans; s++) { /* leaf[s].near */
    size_t first = p.x->leaf[s].after;
    for (size_t r = 0; r < p.x->m && first == p.x->leaf[s].after; r++)
      if (p.x->item[r].s0 <= s && p.x->near_s1[r] > s)
        first = r;
    ck_assert_uint_eq(p.x->leaf[s].near, first);
  }
  planner__prob_cleanup(&p);
  ck_assert_uint_gt(near, N_UNIONS / 4);
  ck_assert_uint_gt(listed, N_UNIONS / 4);
  struct tunion u;
  check_unions(&g, 1, 1, &rs, &u);
  tunion_cleanup(&u);
}
END_TEST

/* Asserts that two overlap searches found the same (r, a, b) and counts
 * the finds in *hits, the others in *misses. */
static void count_same_pair(int r0, uint32_t a0, uint32_t b0, int r1,
                            uint32_t a1, uint32_t b1, int *hits, int *misses)
{
  ck_assert_int_eq(r1, r0);
  if (r0 == 1) {
    ck_assert_uint_eq(a1, a0);
    ck_assert_uint_eq(b1, b0);
  }
  *hits += r0 == 1;
  *misses += r0 == 0;
}

/* planner__find_overlap() given the index's row_of as its order by
 * first finds exactly the pair it finds sorting by first itself, on
 * random offsets that collide in some rounds and not in others. */
START_TEST(test_overlap_by_index_order)
{
  enum { CAP = 300 };
  struct planner_tensor t[CAP];
  uint64_t off[CAP], rs = 0x51de;
  uint32_t sub[CAP];
  int hits = 0, misses = 0;
  for (int round = 0; round < 400; round++) {
    size_t n = cp_random_graph(&rs, (enum cp_shape)(round % CP_SHAPE__N), t,
                               CAP);
    uint64_t spread = tu_rand_range(&rs, 1, 1u << 16);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
      off[i] = tu_rand_range(&rs, 0, spread) * (round % 2 ? 64 : 1);
      if (t[i].size)
        sub[m++] = (uint32_t)i;
    }
    struct planner_graph g = {t, n};
    struct planner_options o;
    struct planner__prob p;
    planner_options_init(&o);
    ck_assert_int_eq(planner__prob_init(&p, &g, &o), 0);
    ck_assert_uint_eq(p.x->m, m);
    uint32_t a0 = 0, b0 = 0, a1 = 0, b1 = 0;
    int r0 = planner__find_overlap(t, off, sub, NULL, m, &a0, &b0);
    int r1 = planner__find_overlap(t, off, sub, p.x->row_of, m, &a1, &b1);
    planner__prob_cleanup(&p);
    ck_assert_int_ge(r0, 0);
    count_same_pair(r0, a0, b0, r1, a1, b1, &hits, &misses);
  }
  ck_assert_int_gt(hits, 0);
  ck_assert_int_gt(misses, 0);
}
END_TEST

/* The pair the plan check's sweep names, by brute force: the tensors in
 * (first, row) order; the first one that overlaps in memory some earlier
 * one still live at its first operator is paired with its nearest such
 * neighbour below in (offset, row) order when the two overlap, else with
 * the one above. Returns 1 with the pair, or 0. */
static int overlap_oracle(const struct planner_tensor *t, const uint64_t *off,
                          size_t n, uint32_t *a, uint32_t *b)
{
  uint32_t ord[600];
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (t[i].size)
      ord[m++] = (uint32_t)i;
  for (size_t k = 1; k < m; k++) /* insertion sort by (first, row) */
    for (size_t j = k; j > 0 && t[ord[j - 1]].first > t[ord[j]].first; j--) {
      uint32_t x = ord[j];
      ord[j] = ord[j - 1];
      ord[j - 1] = x;
    }
  for (size_t k = 0; k < m; k++) {
    uint32_t i = ord[k];
    long below = -1, above = -1;
    for (size_t q = 0; q < k; q++) {
      uint32_t j = ord[q];
      if (t[j].last < t[i].first)
        continue;
      if (off[j] < off[i] || (off[j] == off[i] && j < i)) {
        if (below < 0 || off[j] > off[below] ||
            (off[j] == off[below] && j > (uint32_t)below))
          below = j;
      } else if (above < 0 || off[j] < off[above] ||
                 (off[j] == off[above] && j < (uint32_t)above)) {
        above = j;
      }
    }
    if (below >= 0 && off[below] + t[below].size > off[i]) {
      *a = (uint32_t)below;
      *b = i;
      return 1;
    }
    if (above >= 0 && off[i] + t[i].size > off[above]) {
      *a = i;
      *b = (uint32_t)above;
      return 1;
    }
  }
  return 0;
}

/* planner__find_overlap() names the pair of the brute force, with few
 * tensors live at once (its small sweep), with many (more than 64: the
 * sweep with the tree) and with a crowd that comes only late in time
 * (the small sweep gives up part way), on bump-allocated bytes (no
 * sweep at all), and on bytes that collide, tie or touch. */
START_TEST(test_overlap_oracle)
{
  static struct planner_tensor t[600]; /* the oracle's room */
  static uint64_t off[600];
  static uint32_t sub[600];
  uint64_t rs = 0x0fe7;
  int hits = 0, misses = 0;
  for (int round = 0; round < 600; round++) {
    size_t n = tu_rand_range(&rs, 1, 600);
    int crowd = round % 3; /* 0 few live, 1 many, 2 many late */
    uint64_t top = 0,
             spread = tu_rand_range(&rs, 1, crowd ? 1u << 22 : 1u << 14);
    for (size_t i = 0; i < n; i++) {
      int64_t f = (int64_t)tu_rand_range(&rs, 0, n / 2);
      int64_t len = (int64_t)tu_rand_range(&rs, 0, 3);
      if (crowd == 1 || (crowd == 2 && f > (int64_t)n / 3))
        len = (int64_t)tu_rand_range(&rs, 0, n);
      uint64_t size = tu_rand_range(&rs, 0, 9) ? tu_rand_range(&rs, 1, 64) : 0;
      t[i] = (struct planner_tensor){(uint32_t)i, size, f, f + len, 0,
                                     PLANNER_NOT_PINNED, 0, 0};
      if (round % 7 == 6) { /* a bump allocator's plan: no collision */
        off[i] = top;
        top += size;
      } else {
        off[i] = tu_rand_range(&rs, 0, spread) * (round % 2 ? 16 : 1);
      }
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (t[i].size)
        sub[m++] = (uint32_t)i;
    uint32_t a0 = 0, b0 = 0, a1 = 0, b1 = 0;
    int r0 = overlap_oracle(t, off, n, &a0, &b0);
    int r1 = planner__find_overlap(t, off, sub, NULL, m, &a1, &b1);
    count_same_pair(r0, a0, b0, r1, a1, b1, &hits, &misses);
  }
  ck_assert_int_gt(hits, 100);
  ck_assert_int_gt(misses, 100);
}
END_TEST

/* The plan check does not trust an order by first that is not one:
 * given {A, D, C} (D later than C), a sweep in that order would drop A
 * when it meets D and miss that A and C collide. */
START_TEST(test_overlap_bad_order_ignored)
{
  struct planner_tensor t[3] = {
      {0, 100, 0, 0, 0, PLANNER_NOT_PINNED, 0, 0},  /* A */
      {1, 100, 0, 10, 0, PLANNER_NOT_PINNED, 0, 0}, /* C: meets A in memory */
      {2, 10, 8, 9, 0, PLANNER_NOT_PINNED, 0, 0},   /* D */
  };
  uint64_t off[3] = {0, 50, 300};
  const uint32_t bad[3] = {0, 2, 1}, good[3] = {0, 1, 2};
  struct planner_graph g = {t, 3};
  struct planner_options o;
  struct planner_plan p;
  char err[ARENA_ERR_LEN];
  planner_options_init(&o);
  o.alignment = 1;
  planner_plan_init(&p);
  p.offsets = off;
  p.n_offsets = 3;
  p.arena_bytes = 310;
  ck_assert_int_eq(planner__verify_valid(&g, &o, &p, good, NULL, err),
                   ARENA_EVERIFY);
  ck_assert_int_eq(planner__verify_valid(&g, &o, &p, bad, NULL, err),
                   ARENA_EVERIFY);
  ck_assert_ptr_nonnull(strstr(err, "overlap in time and memory"));
}
END_TEST

void cp_add_union_tests(Suite *s)
{
  TCase *tc = tcase_create("unions");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_unions_short);
  tcase_add_test(tc, test_unions_long);
  tcase_add_test(tc, test_unions_seldom);
  tcase_add_test(tc, test_unions_crowded);
  tcase_add_test(tc, test_overlap_by_index_order);
  tcase_add_test(tc, test_overlap_oracle);
  tcase_add_test(tc, test_overlap_bad_order_ignored);
  suite_add_tcase(s, tc);
}

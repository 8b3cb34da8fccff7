/*
 * check_client_digest.c - the "digests" case of the client suite: the
 * handle's memory of its last digests (client/lib_digest.c).
 *
 * Whatever the memory holds, every digest it hands out must equal the one
 * digesting the caller's graph and options afresh gives: after a repeat,
 * after a change of any digested field made in place in the caller's
 * array, after a reorder, with in-place sharing on and off, for every
 * digested option, and for a graph too large to be remembered. Through a
 * handle, a graph changed in place between two calls must get the plan
 * and digest of the changed graph from the fake daemon, which plans and
 * digests whatever it is sent.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_client.h"
#include "digest.h"
#include "lib_digest.h"

enum { CD_N = 6 };

/* Six tensors, ids out of order, two of them declaring an alias. */
static void graph6(struct planner_tensor *t)
{
  static const uint32_t ids[CD_N] = {12, 3, 40, 7, 19, 25};
  for (size_t i = 0; i < CD_N; i++) {
    t[i].id = ids[i];
    t[i].size = 1000 + 100 * i;
    t[i].first = (int64_t)i;
    t[i].last = (int64_t)i + 1;
    t[i].align = 0;
    t[i].pinned = PLANNER_NOT_PINNED;
    t[i].alias = i ? ids[i - 1] : 0;
    t[i].has_alias = i == 2 || i == 4;
  }
}

/* Asks d for the digests of g under o and checks them against fresh
 * ones. Returns whether d now remembers a graph. */
static int check_fresh(struct arenad_client__digests *d,
                       const struct planner_graph *g,
                       const struct planner_options *o)
{
  uint8_t gd[PLANNER_DIGEST_LEN], od[PLANNER_DIGEST_LEN];
  uint8_t want_gd[PLANNER_DIGEST_LEN], want_od[PLANNER_DIGEST_LEN];
  ck_assert_int_eq(arenad_client__digests_get(d, g, o, gd, od), 0);
  ck_assert_int_eq(planner_graph_digest_planned(g, o, want_gd), 0);
  planner_options_digest(o, want_od);
  ck_assert_mem_eq(gd, want_gd, PLANNER_DIGEST_LEN);
  ck_assert_mem_eq(od, want_od, PLANNER_DIGEST_LEN);
  return d->n_tensors != 0;
}

/* One change per digested field, made in place on tensor 2 (which
 * declares an alias), and undone by calling it again with undo set. */
static void change_field(struct planner_tensor *t, int field, int undo)
{
  int s = undo ? -1 : 1;
  switch (field) {
  case 0: t->id = undo ? 40 : 41; break;
  case 1: t->size = (uint64_t)((int64_t)t->size + s * 8); break;
  case 2: t->first += s; break;
  case 3: t->last += s; break;
  case 4: t->align = undo ? 0 : 128; break;
  case 5: t->pinned = undo ? PLANNER_NOT_PINNED : 4096; break;
  case 6: t->alias = undo ? 3 : 7; break;
  default: t->has_alias = undo ? 1 : 0; break;
  }
}

START_TEST(digests_follow_every_field)
{
  struct planner_tensor t[CD_N];
  graph6(t);
  struct planner_graph g = {t, CD_N};
  struct planner_options o;
  planner_options_init(&o);
  struct arenad_client__digests d;
  arenad_client__digests_init(&d);
  uint8_t first[PLANNER_DIGEST_LEN], od[PLANNER_DIGEST_LEN];
  ck_assert(check_fresh(&d, &g, &o));
  ck_assert_int_eq(arenad_client__digests_get(&d, &g, &o, first, od), 0);
  ck_assert(check_fresh(&d, &g, &o)); /* a repeat */
  for (int f = 0; f < 8; f++) {
    uint8_t gd[PLANNER_DIGEST_LEN];
    change_field(&t[2], f, 0);
    ck_assert(check_fresh(&d, &g, &o));
    ck_assert_int_eq(arenad_client__digests_get(&d, &g, &o, gd, od), 0);
    ck_assert_msg(memcmp(gd, first, sizeof gd) != 0, "field %d", f);
    change_field(&t[2], f, 1);
    ck_assert(check_fresh(&d, &g, &o));
    ck_assert_int_eq(arenad_client__digests_get(&d, &g, &o, gd, od), 0);
    ck_assert_mem_eq(gd, first, sizeof gd);
  }
  arenad_client__digests_cleanup(&d);
  ck_assert_ptr_null(d.tensors);
}
END_TEST

START_TEST(digests_follow_order_sharing_and_options)
{
  struct planner_tensor t[CD_N];
  graph6(t);
  struct planner_graph g = {t, CD_N};
  struct planner_options o;
  planner_options_init(&o);
  struct arenad_client__digests d;
  arenad_client__digests_init(&d);
  uint8_t on[PLANNER_DIGEST_LEN], off[PLANNER_DIGEST_LEN];
  uint8_t od[PLANNER_DIGEST_LEN];
  ck_assert(check_fresh(&d, &g, &o));
  ck_assert_int_eq(arenad_client__digests_get(&d, &g, &o, on, od), 0);
  o.in_place = 0; /* the graph without its aliases: another digest */
  ck_assert(check_fresh(&d, &g, &o));
  ck_assert_int_eq(arenad_client__digests_get(&d, &g, &o, off, od), 0);
  ck_assert(memcmp(on, off, sizeof on) != 0);
  o.in_place = 1;
  ck_assert(check_fresh(&d, &g, &o));
  struct planner_tensor swap = t[0]; /* same tensors, another order */
  t[0] = t[5];
  t[5] = swap;
  ck_assert(check_fresh(&d, &g, &o));
  o.alignment = 256;
  ck_assert(check_fresh(&d, &g, &o));
  o.capacity = 1 << 20;
  ck_assert(check_fresh(&d, &g, &o));
  o.algo = PLANNER_ALGO_NAIVE;
  ck_assert(check_fresh(&d, &g, &o));
  arenad_client__digests_cleanup(&d);
}
END_TEST

START_TEST(digests_of_a_large_graph_are_not_kept)
{
  size_t n = ARENAD_CLIENT__MEMO_MAX_TENSORS + 1;
  struct planner_tensor *t = calloc(n, sizeof *t);
  ck_assert_ptr_nonnull(t);
  for (size_t i = 0; i < n; i++) {
    t[i].id = (uint32_t)i;
    t[i].size = 64;
    t[i].first = (int64_t)i;
    t[i].last = (int64_t)i;
    t[i].pinned = PLANNER_NOT_PINNED;
  }
  struct planner_graph g = {t, n}, small = {t, 3};
  struct planner_options o;
  planner_options_init(&o);
  struct arenad_client__digests d;
  arenad_client__digests_init(&d);
  ck_assert(check_fresh(&d, &small, &o));
  ck_assert(!check_fresh(&d, &g, &o)); /* digested, then forgotten */
  t[n - 1].size = 128;
  ck_assert(!check_fresh(&d, &g, &o));
  arenad_client__digests_cleanup(&d);
  free(t);
}
END_TEST

/* Through a handle: the caller changes its array in place between two
 * calls. The fake digests what it is sent, so a stale digest in the
 * handle would fail the call as a plan for another graph. */
START_TEST(handle_sees_a_graph_changed_in_place)
{
  ct_fake_start1(M_GOOD);
  arenad_client_t *c = ct_open_client(0, 5000);
  struct planner_tensor t[CT_TG_N];
  memcpy(t, ct_tg, sizeof t);
  struct planner_graph g = {t, CT_TG_N};
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  uint8_t want[PLANNER_DIGEST_LEN];
  for (int round = 0; round < 4; round++) {
    if (round == 2)
      t[1].size *= 4; /* larger: the old offsets would overlap */
    if (round == 3)
      t[1].size /= 4;
    ck_assert_msg(arenad_client_plan(c, &g, NULL, &ct_key, &r) == 0,
                  "round %d: %s", round, arenad_client_errmsg(c));
    ck_assert_int_eq(r.local, 0);
    ck_assert_int_eq(planner_graph_digest(&g, want), 0);
    ck_assert_mem_eq(r.graph_digest, want, PLANNER_DIGEST_LEN);
    struct planner_options o;
    planner_options_init(&o);
    ck_assert_int_eq(planner_verify(&g, &o, &r.plan, NULL), 0);
  }
  ck_assert_int_eq(ct_fk.conns, 1);
  ck_assert_int_eq(ct_fk.requests, 4);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

void client_add_digests(TCase *tc)
{
  tcase_add_test(tc, digests_follow_every_field);
  tcase_add_test(tc, digests_follow_order_sharing_and_options);
  tcase_add_test(tc, digests_of_a_large_graph_are_not_kept);
  tcase_add_test(tc, handle_sees_a_graph_changed_in_place);
}

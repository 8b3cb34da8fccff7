/*
 * check_client_memo.c - the "memo" case of the client suite: the
 * handle's memory of its last call (client/lib/lib_memo.c).
 *
 * Whatever the memory holds, every digest it hands out must equal the one
 * digesting the caller's graph and options afresh gives: after a repeat,
 * after a change of any field made in place in the caller's array, after
 * a reorder, with in-place sharing on and off, for every digested option,
 * and for a graph too large to be remembered. Its other facts (validated,
 * the verified plan, the packed request) must be forgotten when any field
 * of the graph, any option but stop, stop_ctx and threads, or (for the
 * request) the model key changes, and a plan differing from the verified
 * one in one offset or its arena size must not pass as verified.
 *
 * Through a handle, against the fake daemon: a graph changed in place
 * between two calls gets the plan and digest of the changed graph; a
 * daemon that sends back the old offsets for it, or tampers with a plan
 * it sent right before, is refused; a graph made invalid in place, or
 * an alignment that makes it invalid, never reaches the daemon; a new
 * alignment or model key sends a new request; and the request id grows
 * on every call that reuses the packed request.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_client.h"
#include "digest.h"
#include "lib_memo.h"

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

/* Starts a call on m for g under o, asks for the digests and checks them
 * against fresh ones. Returns whether m now holds a graph. */
static int check_fresh(struct arenad_client__memo *m,
                       const struct planner_graph *g,
                       const struct planner_options *o)
{
  uint8_t gd[PLANNER_DIGEST_LEN], od[PLANNER_DIGEST_LEN];
  uint8_t want_gd[PLANNER_DIGEST_LEN], want_od[PLANNER_DIGEST_LEN];
  int held = arenad_client__memo_begin(m, g, o);
  ck_assert_int_eq(arenad_client__memo_digests(m, g, o, gd, od), 0);
  ck_assert_int_eq(planner_graph_digest_planned(g, o, want_gd), 0);
  planner_options_digest(o, want_od);
  ck_assert_mem_eq(gd, want_gd, PLANNER_DIGEST_LEN);
  ck_assert_mem_eq(od, want_od, PLANNER_DIGEST_LEN);
  ck_assert_int_eq(held, m->n_tensors != 0);
  return held;
}

/* The digests of g under o as m gives them after a begin. */
static void memo_gd(struct arenad_client__memo *m,
                    const struct planner_graph *g,
                    const struct planner_options *o,
                    uint8_t gd[PLANNER_DIGEST_LEN])
{
  uint8_t od[PLANNER_DIGEST_LEN];
  arenad_client__memo_begin(m, g, o);
  ck_assert_int_eq(arenad_client__memo_digests(m, g, o, gd, od), 0);
}

/* One change per field of a tensor, made in place on tensor 2 (which
 * declares an alias), and undone by calling it again with undo set. */
enum { CD_FIELDS = 8 };
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
  struct arenad_client__memo m;
  arenad_client__memo_init(&m);
  uint8_t first[PLANNER_DIGEST_LEN];
  ck_assert(check_fresh(&m, &g, &o));
  memo_gd(&m, &g, &o, first);
  ck_assert(check_fresh(&m, &g, &o)); /* a repeat */
  for (int f = 0; f < CD_FIELDS; f++) {
    uint8_t gd[PLANNER_DIGEST_LEN];
    change_field(&t[2], f, 0);
    ck_assert(check_fresh(&m, &g, &o));
    memo_gd(&m, &g, &o, gd);
    ck_assert_msg(memcmp(gd, first, sizeof gd) != 0, "field %d", f);
    change_field(&t[2], f, 1);
    ck_assert(check_fresh(&m, &g, &o));
    memo_gd(&m, &g, &o, gd);
    ck_assert_mem_eq(gd, first, sizeof gd);
  }
  arenad_client__memo_cleanup(&m);
  ck_assert_ptr_null(m.tensors);
}
END_TEST

START_TEST(digests_follow_order_sharing_and_options)
{
  struct planner_tensor t[CD_N];
  graph6(t);
  struct planner_graph g = {t, CD_N};
  struct planner_options o;
  planner_options_init(&o);
  struct arenad_client__memo m;
  arenad_client__memo_init(&m);
  uint8_t on[PLANNER_DIGEST_LEN], off[PLANNER_DIGEST_LEN];
  ck_assert(check_fresh(&m, &g, &o));
  memo_gd(&m, &g, &o, on);
  o.in_place = 0; /* the graph without its aliases: another digest */
  ck_assert(check_fresh(&m, &g, &o));
  memo_gd(&m, &g, &o, off);
  ck_assert(memcmp(on, off, sizeof on) != 0);
  o.in_place = 1;
  ck_assert(check_fresh(&m, &g, &o));
  struct planner_tensor swap = t[0]; /* same tensors, another order */
  t[0] = t[5];
  t[5] = swap;
  ck_assert(check_fresh(&m, &g, &o));
  o.alignment = 256;
  ck_assert(check_fresh(&m, &g, &o));
  o.capacity = 1 << 20;
  ck_assert(check_fresh(&m, &g, &o));
  o.algo = PLANNER_ALGO_NAIVE;
  ck_assert(check_fresh(&m, &g, &o));
  arenad_client__memo_cleanup(&m);
}
END_TEST

/* ---- validated, verified, packed ---------------------------------------- */

static const uint8_t cd_hash[] = {9, 8, 7, 6};
static const int64_t cd_dims[] = {1, 3, 32, 32};

/* Everything m can learn about g under o: validated, p verified, and a
 * packed request (a dummy frame) for key k. */
static void learn_all(struct arenad_client__memo *m,
                      const struct planner_graph *g,
                      const struct planner_options *o,
                      const struct planner_plan *p,
                      const struct arenad_model_key *k)
{
  ck_assert(arenad_client__memo_begin(m, g, o));
  ck_assert_int_eq(planner_validate(g, o, NULL), 0);
  arenad_client__memo_set_validated(m);
  ck_assert_int_eq(planner_verify(g, o, p, NULL), 0);
  arenad_client__memo_set_verified(m, p);
  uint8_t *frame = malloc(16);
  ck_assert_ptr_nonnull(frame);
  memset(frame, 0xab, 16);
  arenad_client__memo_set_packed(m, k, frame, 16);
}

/* What m knows after a begin for g under o: 1 bit each for validated,
 * p verified and a packed request for k. */
static int known(struct arenad_client__memo *m, const struct planner_graph *g,
                 const struct planner_options *o,
                 const struct planner_plan *p,
                 const struct arenad_model_key *k)
{
  size_t len = 1;
  arenad_client__memo_begin(m, g, o);
  const uint8_t *f = arenad_client__memo_packed(m, k, &len);
  ck_assert_uint_eq(len, f ? 16 : 0);
  return arenad_client__memo_validated(m) |
         arenad_client__memo_verified(m, p) << 1 | (f != NULL) << 2;
}

/* One change per field of struct planner_options; fields 0 to 4 matter,
 * 5 to 7 (stop, stop_ctx, threads) do not. */
enum { CD_OPTIONS = 8, CD_OPTIONS_THAT_MATTER = 5 };
static int never_stop(void *ctx)
{
  (void)ctx;
  return 0;
}
static void change_option(struct planner_options *o, int field)
{
  switch (field) {
  case 0: o->algo = PLANNER_ALGO_NAIVE; break;
  case 1: o->alignment = 128; break;
  case 2: o->capacity = 1 << 20; break;
  case 3: o->effort = 7; break;
  case 4: o->in_place = 2; break; /* as on, and yet another value */
  case 5: o->stop = never_stop; break;
  case 6: o->stop_ctx = o; break;
  default: o->threads = 4; break;
  }
}

START_TEST(facts_follow_the_graph_and_options)
{
  struct planner_tensor t[CD_N];
  graph6(t);
  struct planner_graph g = {t, CD_N};
  struct planner_options o, o2;
  planner_options_init(&o);
  struct planner_plan p;
  planner_plan_init(&p);
  ck_assert_int_eq(planner_run(&g, &o, &p, NULL), 0);
  struct arenad_dims in = {cd_dims, 4};
  struct arenad_model_key k = {cd_hash, sizeof cd_hash, &in, 1};
  struct arenad_client__memo m;
  arenad_client__memo_init(&m);
  ck_assert_int_eq(known(&m, &g, &o, &p, &k), 0);
  learn_all(&m, &g, &o, &p, &k);
  ck_assert_int_eq(known(&m, &g, &o, &p, &k), 7);

  for (int f = 0; f < CD_OPTIONS; f++) { /* each option changed alone */
    o2 = o;
    change_option(&o2, f);
    int want = f < CD_OPTIONS_THAT_MATTER ? 0 : 7;
    ck_assert_msg(known(&m, &g, &o2, &p, &k) == want, "option %d", f);
    ck_assert_msg(known(&m, &g, &o, &p, &k) == want, "option %d back", f);
    learn_all(&m, &g, &o, &p, &k);
  }
  for (int f = 0; f < CD_FIELDS; f++) { /* each field changed in place */
    change_field(&t[2], f, 0);
    ck_assert_msg(known(&m, &g, &o, &p, &k) == 0, "field %d", f);
    change_field(&t[2], f, 1);
    ck_assert_msg(known(&m, &g, &o, &p, &k) == 0, "field %d back", f);
    learn_all(&m, &g, &o, &p, &k);
  }
  arenad_client__memo_cleanup(&m);
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(verified_plan_is_exact)
{
  struct planner_tensor t[CD_N];
  graph6(t);
  struct planner_graph g = {t, CD_N};
  struct planner_options o;
  planner_options_init(&o);
  struct planner_plan p;
  planner_plan_init(&p);
  ck_assert_int_eq(planner_run(&g, &o, &p, NULL), 0);
  struct arenad_client__memo m;
  arenad_client__memo_init(&m);
  ck_assert(arenad_client__memo_begin(&m, &g, &o));
  arenad_client__memo_set_verified(&m, &p); /* not validated: ignored */
  ck_assert(!arenad_client__memo_verified(&m, &p));
  arenad_client__memo_set_validated(&m);
  arenad_client__memo_set_verified(&m, &p);
  ck_assert(arenad_client__memo_verified(&m, &p));
  for (size_t i = 0; i < CD_N; i++) { /* any one offset changed */
    p.offsets[i] += 64;
    ck_assert_msg(!arenad_client__memo_verified(&m, &p), "offset %zu", i);
    p.offsets[i] -= 64;
  }
  p.arena_bytes++;
  ck_assert(!arenad_client__memo_verified(&m, &p));
  p.arena_bytes--;
  p.n_offsets--;
  ck_assert(!arenad_client__memo_verified(&m, &p));
  p.n_offsets++;
  ck_assert(arenad_client__memo_verified(&m, &p));
  arenad_client__memo_cleanup(&m);
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(packed_request_follows_the_key)
{
  struct planner_tensor t[CD_N];
  graph6(t);
  struct planner_graph g = {t, CD_N};
  struct planner_options o;
  planner_options_init(&o);
  struct planner_plan p;
  planner_plan_init(&p);
  ck_assert_int_eq(planner_run(&g, &o, &p, NULL), 0);
  uint8_t hash[sizeof cd_hash];
  int64_t dims[4], dims2[2] = {5, 6};
  memcpy(hash, cd_hash, sizeof hash);
  memcpy(dims, cd_dims, sizeof dims);
  struct arenad_dims in[2] = {{dims, 4}, {dims2, 2}};
  struct arenad_model_key k = {hash, sizeof hash, in, 1};
  struct arenad_client__memo m;
  arenad_client__memo_init(&m);
  learn_all(&m, &g, &o, &p, &k);
  ck_assert_int_eq(known(&m, &g, &o, &p, &k), 7);
  hash[3] ^= 1; /* changed in place: the copy tells */
  ck_assert_int_eq(known(&m, &g, &o, &p, &k), 3);
  hash[3] ^= 1;
  ck_assert_int_eq(known(&m, &g, &o, &p, &k), 7);
  k.model_hash_len--;
  ck_assert_int_eq(known(&m, &g, &o, &p, &k), 3);
  k.model_hash_len++;
  dims[2]++;
  ck_assert_int_eq(known(&m, &g, &o, &p, &k), 3);
  dims[2]--;
  in[0].n_dims = 3;
  ck_assert_int_eq(known(&m, &g, &o, &p, &k), 3);
  in[0].n_dims = 4;
  k.n_inputs = 2;
  ck_assert_int_eq(known(&m, &g, &o, &p, &k), 3);
  learn_all(&m, &g, &o, &p, &k); /* two inputs now */
  ck_assert_int_eq(known(&m, &g, &o, &p, &k), 7);
  dims2[1]++;
  ck_assert_int_eq(known(&m, &g, &o, &p, &k), 3);
  arenad_client__memo_cleanup(&m);
  ck_assert_ptr_null(m.packed);
  planner_plan_cleanup(&p);
}
END_TEST

START_TEST(a_large_graph_is_not_kept)
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
  struct arenad_client__memo m;
  arenad_client__memo_init(&m);
  ck_assert(check_fresh(&m, &small, &o));
  ck_assert(!check_fresh(&m, &g, &o)); /* digested, not kept */
  arenad_client__memo_set_validated(&m);
  ck_assert(!arenad_client__memo_validated(&m));
  t[n - 1].size = 128;
  ck_assert(!check_fresh(&m, &g, &o));
  arenad_client__memo_cleanup(&m);
  free(t);
}
END_TEST

/* ---- through a handle ----------------------------------------------------- */

/* The caller changes its array in place between two calls. The fake
 * digests what it is sent, so a stale digest in the handle would fail the
 * call as a plan for another graph. */
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

/* A daemon that answers with the offsets of the graph's first plan, under
 * the digest of whatever it is sent: fine while the graph stays the same,
 * refused once the caller has made a tensor larger in place. */
START_TEST(old_offsets_for_a_graph_changed_in_place_are_refused)
{
  ct_fake_start1(M_OLD_OFFSETS);
  arenad_client_t *c = ct_open_client(0, 5000);
  struct planner_tensor t[CT_TG_N];
  memcpy(t, ct_tg, sizeof t);
  struct planner_graph g = {t, CT_TG_N};
  struct planner_options o;
  planner_options_init(&o);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  for (int round = 0; round < 2; round++)
    ck_assert_msg(arenad_client_plan(c, &g, &o, &ct_key, &r) == 0,
                  "round %d: %s", round, arenad_client_errmsg(c));
  t[1].size *= 4;
  ck_assert_int_eq(arenad_client_plan(c, &g, &o, &ct_key, &r),
                   ARENA_EVERIFY);
  ck_assert_msg(strstr(arenad_client_errmsg(c), "failed verification"),
                "%s", arenad_client_errmsg(c));
  ct_assert_empty_result(&r);
  t[1].size /= 4; /* the old offsets are right again */
  ck_assert_msg(arenad_client_plan(c, &g, &o, &ct_key, &r) == 0, "%s",
                arenad_client_errmsg(c));
  ck_assert_int_eq(planner_verify(&g, &o, &r.plan, NULL), 0);
  ck_assert_int_eq(ct_fk.requests, 4);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

/* A good plan, then the same plan with one tensor moved onto another
 * (and the arena size to match): the library verifies it again, and
 * keeps refusing it. */
START_TEST(a_plan_tampered_with_after_a_good_one_is_refused)
{
  ct_fake_start1(M_TAMPER_LATER);
  arenad_client_t *c = ct_open_client(0, 5000);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  ck_assert_msg(arenad_client_plan(c, &ct_graph, NULL, &ct_key, &r) == 0,
                "%s", arenad_client_errmsg(c));
  ct_assert_good_result(&r);
  for (int round = 0; round < 2; round++) {
    ck_assert_int_eq(arenad_client_plan(c, &ct_graph, NULL, &ct_key, &r),
                     ARENA_EVERIFY);
    ck_assert_msg(strstr(arenad_client_errmsg(c), "overlap"), "%s",
                  arenad_client_errmsg(c));
    ct_assert_empty_result(&r);
  }
  ck_assert_int_eq(ct_fk.requests, 3);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

/* A remembered graph made invalid in place, or asked for under an
 * alignment that makes it invalid, is refused before the daemon sees
 * it. */
START_TEST(a_remembered_graph_is_validated_again)
{
  ct_fake_start1(M_GOOD);
  arenad_client_t *c = ct_open_client(0, 5000);
  struct planner_tensor t[CT_TG_N];
  memcpy(t, ct_tg, sizeof t);
  struct planner_graph g = {t, CT_TG_N};
  struct planner_options o;
  planner_options_init(&o);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  ck_assert_int_eq(arenad_client_plan(c, &g, &o, &ct_key, &r), 0);
  o.alignment = 48;
  ck_assert_int_eq(arenad_client_plan(c, &g, &o, &ct_key, &r), ARENA_EALIGN);
  o.alignment = 64;
  t[3].last = t[3].first - 1;
  ck_assert_int_eq(arenad_client_plan(c, &g, &o, &ct_key, &r),
                   ARENA_ELIFETIME);
  t[3].last = ct_tg[3].last;
  t[0].pinned = 3; /* misaligned */
  ck_assert_int_eq(arenad_client_plan(c, &g, &o, &ct_key, &r), ARENA_EPINNED);
  t[0].pinned = PLANNER_NOT_PINNED;
  ck_assert_int_eq(ct_fk.requests, 1);
  ck_assert_int_eq(arenad_client_plan(c, &g, &o, &ct_key, &r), 0);
  ck_assert_int_eq(ct_fk.requests, 2);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

/* Asking again and again for one graph under one key reuses the packed
 * request; each call still sends a new id, and other options or another
 * key, even one changed in place, send a new request. The fake plans what
 * it is sent, so stale options would fail as an options digest mismatch
 * or a misaligned plan. */
START_TEST(packed_request_ids_options_and_keys)
{
  ct_fake_start1(M_GOOD);
  arenad_client_t *c = ct_open_client(0, 5000);
  struct planner_options o;
  planner_options_init(&o);
  uint8_t hash[8];
  int64_t dims[4] = {1, 3, 224, 224};
  memcpy(hash, ct_key.model_hash, sizeof hash);
  struct arenad_dims in = {dims, 4};
  struct arenad_model_key k = {hash, sizeof hash, &in, 1};
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  uint64_t last = 0;
  for (int round = 0; round < 12; round++) {
    if (round == 3)
      o.alignment = 256;
    if (round == 5)
      o.alignment = 64;
    if (round == 7)
      hash[7] = 0x77;
    if (round == 9)
      dims[0] = 8;
    ck_assert_msg(arenad_client_plan(c, &ct_graph, &o, &k, &r) == 0,
                  "round %d: %s", round, arenad_client_errmsg(c));
    ck_assert_uint_gt(ct_fk.last_id, last);
    last = ct_fk.last_id;
    ck_assert_int_eq(ct_fk.last_version, 1);
    ck_assert_int_eq(ct_fk.last_want_ack, 1);
    for (size_t i = 0; i < CT_TG_N; i++)
      ck_assert_uint_eq(r.plan.offsets[i] % o.alignment, 0);
    ck_assert_int_eq(ct_fk.last_hash_len, 8);
    ck_assert_int_eq(ct_fk.last_hash_tail, round < 7 ? 8 : 0x77);
    ck_assert_int_eq(ct_fk.last_dims_sum, round < 9 ? 452 : 459);
  }
  ck_assert_int_eq(ct_fk.requests, 12);
  ck_assert_int_eq(ct_fk.conns, 1);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

void client_add_memo(TCase *tc)
{
  tcase_add_test(tc, digests_follow_every_field);
  tcase_add_test(tc, digests_follow_order_sharing_and_options);
  tcase_add_test(tc, facts_follow_the_graph_and_options);
  tcase_add_test(tc, verified_plan_is_exact);
  tcase_add_test(tc, packed_request_follows_the_key);
  tcase_add_test(tc, a_large_graph_is_not_kept);
  tcase_add_test(tc, handle_sees_a_graph_changed_in_place);
  tcase_add_test(tc, old_offsets_for_a_graph_changed_in_place_are_refused);
  tcase_add_test(tc, a_plan_tampered_with_after_a_good_one_is_refused);
  tcase_add_test(tc, a_remembered_graph_is_validated_again);
  tcase_add_test(tc, packed_request_ids_options_and_keys);
}

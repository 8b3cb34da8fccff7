/*
 * check_daemon_hotcache.c - unit tests of the daemon's in-memory plan
 * cache (daemon/hotcache.c) and the use counts it keeps: which hits are
 * counted, the order a take lists them in, counts of entries pushed out
 * or replaced, counts dropped with entries removed on purpose, the
 * plan fields an entry keeps, and the largest plan it takes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_daemon.h"
#include "hotcache.h"

/* An entry named by one letter: identity "\1" + model hash letter, use
 * key "k" + letter (none when counted is 0). */
static void put(struct hotcache *hc, char name, int counted)
{
  uint8_t ident[2] = {1, (uint8_t)name};
  uint8_t key[2] = {'k', (uint8_t)name};
  uint64_t offsets[1] = {0};
  struct hot_plan p;
  memset(&p, 0, sizeof p);
  p.offsets = offsets;
  p.n_offsets = 1;
  p.use_key = counted ? key : NULL;
  p.use_key_len = counted ? sizeof key : 0;
  ck_assert_int_eq(hotcache_put(hc, ident, 2, hot_hash(ident, 2), &p), 0);
}

static int get(struct hotcache *hc, char name)
{
  uint8_t ident[2] = {1, (uint8_t)name};
  return hotcache_get(hc, ident, 2, hot_hash(ident, 2)) != NULL;
}

/* Takes the uses and writes them as "a3 c1 b2" into buf. */
static const char *take(struct hotcache *hc, char *buf, size_t len)
{
  struct hot_use *u;
  size_t n;
  ck_assert_int_eq(hotcache_take_uses(hc, &u, &n), 0);
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    ck_assert_uint_eq(u[i].key_len, 2);
    ck_assert_int_eq(u[i].key[0], 'k');
    size_t at = strlen(buf);
    snprintf(buf + at, len - at, "%s%c%llu", i ? " " : "", u[i].key[1],
             (unsigned long long)u[i].count);
  }
  hot_uses_free(u, n);
  ck_assert_int_eq(hotcache_has_uses(hc), 0);
  return buf;
}

/* Runs a script of space-separated steps on hc: "+x" puts entry x with
 * a use key, "=x" puts it without one, "?x" gets x (a hit is required),
 * "!x" gets x (a miss is required). */
static void run(struct hotcache *hc, const char *script)
{
  for (const char *p = script; *p; p++) {
    if (*p == ' ')
      continue;
    char op = *p++, name = *p;
    ck_assert_msg(name && name != ' ', "bad script %s", script);
    if (op == '+' || op == '=')
      put(hc, name, op == '+');
    else if (op == '?')
      ck_assert_msg(get(hc, name), "%c should be cached (%s)", name, script);
    else if (op == '!')
      ck_assert_msg(!get(hc, name), "%c should be gone (%s)", name, script);
    else
      ck_abort_msg("bad step %c in %s", op, script);
  }
}

START_TEST(hits_are_counted_least_recent_first)
{
  char b[128];
  struct hotcache *hc = hotcache_new(1 << 20, 100);
  ck_assert_ptr_nonnull(hc);
  run(hc, "+a +b +c =n"); /* n has no use key: never counted */
  ck_assert_int_eq(hotcache_has_uses(hc), 0);
  ck_assert_str_eq(take(hc, b, sizeof b), "");
  run(hc, "?a ?a ?a ?c ?b ?n ?b !z");
  ck_assert_int_eq(hotcache_has_uses(hc), 1);
  ck_assert_str_eq(take(hc, b, sizeof b), "a3 c1 b2");
  ck_assert_str_eq(take(hc, b, sizeof b), ""); /* a take resets */
  run(hc, "?c");
  ck_assert_str_eq(take(hc, b, sizeof b), "c1");
  hotcache_free(hc);
}
END_TEST

START_TEST(pushed_out_and_replaced_entries_keep_their_counts)
{
  char b[128];
  struct hotcache *hc = hotcache_new(1 << 20, 2);
  /* c pushes b out, which has no uses */
  run(hc, "+a +b ?a ?a +c !b ?c");
  hotcache_set_caps(hc, 1 << 20, 1); /* pushes a out, with 2 uses */
  run(hc, "!a");
  uint64_t e, bytes;
  hotcache_usage(hc, &e, &bytes);
  ck_assert_uint_eq(e, 1);
  ck_assert_str_eq(take(hc, b, sizeof b), "a2 c1");
  run(hc, "?c +c ?c"); /* replaced: the old entry's use is kept */
  ck_assert_str_eq(take(hc, b, sizeof b), "c1 c1");
  hotcache_free(hc);
}
END_TEST

START_TEST(removed_entries_drop_their_counts)
{
  char b[128];
  struct hotcache *hc = hotcache_new(1 << 20, 2);
  run(hc, "+a +b ?a ?b");
  const uint8_t mh = 'a';
  ck_assert_uint_eq(hotcache_remove_model(hc, &mh, 1), 1);
  ck_assert_str_eq(take(hc, b, sizeof b), "b1");
  /* clear drops counts of cached and of pushed-out entries: d pushes b
   * out with its use */
  run(hc, "?b +c +d ?c");
  ck_assert_uint_eq(hotcache_clear(hc), 2);
  ck_assert_int_eq(hotcache_has_uses(hc), 0);
  ck_assert_str_eq(take(hc, b, sizeof b), "");
  /* and a cache freed with counts pending frees them (ASan checks) */
  run(hc, "+e ?e +f +g");
  hotcache_free(hc);
}
END_TEST

/* A cached plan comes back whole, its in-place sharing included. */
START_TEST(plan_fields_survive)
{
  struct hotcache *hc = hotcache_new(1 << 20, 10);
  uint8_t ident[3] = {2, 's', 'h'};
  uint64_t offsets[3] = {0, 0, 256};
  struct hot_plan p;
  memset(&p, 0, sizeof p);
  p.offsets = offsets;
  p.n_offsets = 3;
  p.arena_bytes = 320;
  p.lower_bound_bytes = 320;
  p.lower_bound_unshared_bytes = 576;
  p.n_shared = 1;
  ck_assert_int_eq(hotcache_put(hc, ident, 3, hot_hash(ident, 3), &p), 0);
  offsets[2] = 9; /* put copied them */
  const struct hot_plan *q = hotcache_get(hc, ident, 3, hot_hash(ident, 3));
  ck_assert_ptr_nonnull(q);
  ck_assert_uint_eq(q->offsets[2], 256);
  ck_assert_uint_eq(q->arena_bytes, 320);
  ck_assert_uint_eq(q->lower_bound_unshared_bytes, 576);
  ck_assert_uint_eq(q->n_shared, 1);
  hotcache_free(hc);
}
END_TEST

/* Puts a plan of n offsets under a one-letter identity; returns what
 * hotcache_put returned. */
static int put_sized(struct hotcache *hc, char name, size_t n)
{
  uint8_t ident[2] = {1, (uint8_t)name};
  uint64_t *offsets = calloc(n, sizeof *offsets);
  ck_assert_ptr_nonnull(offsets);
  struct hot_plan p;
  memset(&p, 0, sizeof p);
  p.offsets = offsets;
  p.n_offsets = n;
  int rc = hotcache_put(hc, ident, 2, hot_hash(ident, 2), &p);
  free(offsets);
  return rc;
}

/* One plan takes at most an eighth of the byte cap: a larger one is not
 * cached, although it would fit the cap, and leaves the others alone. */
START_TEST(one_plan_takes_at_most_its_share)
{
  const uint64_t cap = 64 << 10, share = cap / HOT_ENTRY_SHARE;
  struct hotcache *hc = hotcache_new(cap, 100);
  ck_assert_ptr_nonnull(hc);
  /* 8 KiB of offsets alone: over the share, well within the cap */
  ck_assert_int_eq(put_sized(hc, 'b', share / 8), -1);
  run(hc, "!b");
  /* three quarters of the share, with the entry's own bytes */
  for (char name = 'c'; name < 'c' + HOT_ENTRY_SHARE; name++)
    ck_assert_int_eq(put_sized(hc, name, share * 3 / 4 / 8), 0);
  run(hc, "?c ?d ?j");
  ck_assert_int_eq(put_sized(hc, 'c', share / 8 + 1), -1);
  run(hc, "?c !b"); /* the entry with that identity stays */
  uint64_t e, bytes;
  hotcache_usage(hc, &e, &bytes);
  ck_assert_uint_eq(e, HOT_ENTRY_SHARE);
  ck_assert_uint_le(bytes, cap);
  hotcache_free(hc);
}
END_TEST

void cd_add_hotcache_tests(TCase *tc)
{
  tcase_add_test(tc, one_plan_takes_at_most_its_share);
  tcase_add_test(tc, plan_fields_survive);
  tcase_add_test(tc, hits_are_counted_least_recent_first);
  tcase_add_test(tc, pushed_out_and_replaced_entries_keep_their_counts);
  tcase_add_test(tc, removed_entries_drop_their_counts);
}

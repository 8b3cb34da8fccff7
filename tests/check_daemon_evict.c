/*
 * check_daemon_evict.c - Evict against a real arenad, in raw requests:
 * a request that selects nothing (all = false, no target, an empty model
 * hash, a key that List never gave) is INVALID_ARGUMENT, removes nothing
 * and keeps the connection; each selector removes exactly what it names,
 * from the database and from the in-memory cache.
 */
#include <string.h>
#include <unistd.h>

#include "check_daemon.h"
#include "digest.h"
#include "wire.h"

enum { N_ENTRIES = 3 };

/* Three plans: two graphs under model "ma", one under "mb". */
struct evict_fixture {
  struct harness h;
  struct hn_graph g[N_ENTRIES];
  const char *hash[N_ENTRIES];
};

static void fixture_start(struct evict_fixture *f)
{
  static const char *const hashes[N_ENTRIES] = {"ma", "ma", "mb"};
  ck_assert_int_eq(hn_init(&f->h, NULL), 0);
  ck_assert_int_eq(hn_start(&f->h), 0);
  for (int i = 0; i < N_ENTRIES; i++) {
    hn_random_graph(&f->g[i], 40, 100 + (uint64_t)i);
    f->hash[i] = hashes[i];
    ck_assert_int_eq(cd_plan(&f->h, &f->g[i], f->hash[i], 1 + (uint64_t)i),
                     0);
  }
}

static void fixture_stop(struct evict_fixture *f)
{
  ck_assert_int_eq(hn_stop(&f->h), 0);
  hn_cleanup(&f->h);
  for (int i = 0; i < N_ENTRIES; i++)
    hn_graph_free(&f->g[i]);
}

/* Entries in the database and plans in the in-memory cache. */
static void assert_counts(const struct harness *h, size_t stored,
                          uint64_t hot)
{
  Arenad__V1__Response *l = hn_list(h, 0);
  ck_assert_ptr_nonnull(l);
  ck_assert_int_eq(l->status, ARENAD__V1__STATUS__OK);
  ck_assert_uint_eq(l->list->n_entries, stored);
  wire_free_response(l);
  Arenad__V1__Response *st = hn_stats(h);
  ck_assert_ptr_nonnull(st);
  ck_assert_uint_eq(st->stats->lru_entries, hot);
  wire_free_response(st);
}

/* Whether model hash `hash` with graph g still has a stored entry. */
static int stored(const struct harness *h, const char *hash,
                  const struct hn_graph *g)
{
  struct planner_graph pg = {g->t, g->n};
  uint8_t gd[PLANNER_DIGEST_LEN];
  ck_assert_int_eq(planner_graph_digest(&pg, gd), 0);
  Arenad__V1__Response *l = hn_list(h, 0);
  ck_assert_ptr_nonnull(l);
  int found = 0;
  for (size_t i = 0; i < l->list->n_entries; i++) {
    const Arenad__V1__CacheEntry *e = l->list->entries[i];
    found |= e->model_hash.len == strlen(hash) &&
             memcmp(e->model_hash.data, hash, e->model_hash.len) == 0 &&
             memcmp(e->graph_digest.data, gd, PLANNER_DIGEST_LEN) == 0;
  }
  wire_free_response(l);
  return found;
}

/* Sends an Evict on fd; returns the reply (owned). */
static Arenad__V1__Response *evict(int fd, uint64_t rid,
                                   const Arenad__V1__Evict *em)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = 1;
  req.request_id = rid;
  req.body_case = ARENAD__V1__REQUEST__BODY_EVICT;
  req.evict = (Arenad__V1__Evict *)em;
  Arenad__V1__Response *r = hn_call(fd, &req, 5000);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->request_id, rid);
  return r;
}

/* The connection still answers a Ping. */
static void assert_open(int fd)
{
  Arenad__V1__Response *r = hn_ping(fd, 500, 5000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  ck_assert_uint_eq(r->request_id, 500);
  wire_free_response(r);
}

START_TEST(evict_all_false_selects_nothing)
{
  struct evict_fixture f;
  fixture_start(&f);
  assert_counts(&f.h, N_ENTRIES, N_ENTRIES);
  int fd = hn_connect(&f.h);
  ck_assert_int_ge(fd, 0);
  /* Request{protocol_version 1, request_id 5, evict {all: false}}, byte
   * by byte: the field is on the wire, its value is false. */
  static const uint8_t frame[] = {0, 0, 0, 8, 0x08, 0x01, 0x10, 0x05,
                                  0x72, 0x02, 0x08, 0x00};
  ck_assert_int_eq(hn_send_raw(fd, frame, sizeof frame), 0);
  Arenad__V1__Response *r = hn_recv(fd, 5000);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->request_id, 5);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(r->error, "selects nothing"));
  wire_free_response(r);
  assert_open(fd);
  assert_counts(&f.h, N_ENTRIES, N_ENTRIES);
  /* the plans are still served from the in-memory cache */
  for (int i = 0; i < N_ENTRIES; i++)
    ck_assert_int_eq(cd_plan(&f.h, &f.g[i], f.hash[i], 10 + (uint64_t)i), 1);
  Arenad__V1__Response *st = hn_stats(&f.h);
  ck_assert_uint_eq(st->stats->memory_hits, N_ENTRIES);
  wire_free_response(st);
  close(fd);
  fixture_stop(&f);
}
END_TEST

START_TEST(evict_bad_selectors_remove_nothing)
{
  struct evict_fixture f;
  fixture_start(&f);
  int fd = hn_connect(&f.h);
  ck_assert_int_ge(fd, 0);
  Arenad__V1__Evict em = ARENAD__V1__EVICT__INIT;
  /* no target at all */
  Arenad__V1__Response *r = evict(fd, 21, &em);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__INVALID_ARGUMENT);
  wire_free_response(r);
  /* an empty model hash, and one over 64 bytes */
  static uint8_t long_hash[65];
  em.target_case = ARENAD__V1__EVICT__TARGET_MODEL_HASH;
  r = evict(fd, 22, &em);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__INVALID_ARGUMENT);
  wire_free_response(r);
  em.model_hash.data = long_hash;
  em.model_hash.len = sizeof long_hash;
  r = evict(fd, 23, &em);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__INVALID_ARGUMENT);
  wire_free_response(r);
  /* an empty key, and bytes that are no key List gives */
  em.target_case = ARENAD__V1__EVICT__TARGET_KEY;
  em.key.data = NULL;
  em.key.len = 0;
  r = evict(fd, 24, &em);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__INVALID_ARGUMENT);
  wire_free_response(r);
  em.key.data = (uint8_t *)"\x02ma";
  em.key.len = 3;
  r = evict(fd, 25, &em);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__INVALID_ARGUMENT);
  wire_free_response(r);
  assert_open(fd);
  assert_counts(&f.h, N_ENTRIES, N_ENTRIES);
  close(fd);
  fixture_stop(&f);
}
END_TEST

START_TEST(evict_each_selector_removes_what_it_names)
{
  struct evict_fixture f;
  fixture_start(&f);
  int fd = hn_connect(&f.h);
  ck_assert_int_ge(fd, 0);

  /* by key: the second plan of model "ma" only */
  struct planner_graph pg = {f.g[1].t, f.g[1].n};
  uint8_t gd[PLANNER_DIGEST_LEN];
  ck_assert_int_eq(planner_graph_digest(&pg, gd), 0);
  Arenad__V1__Response *l = hn_list(&f.h, 0);
  ck_assert_ptr_nonnull(l);
  Arenad__V1__Evict em = ARENAD__V1__EVICT__INIT;
  em.target_case = ARENAD__V1__EVICT__TARGET_KEY;
  for (size_t i = 0; i < l->list->n_entries; i++)
    if (memcmp(l->list->entries[i]->graph_digest.data, gd,
               PLANNER_DIGEST_LEN) == 0)
      em.key = l->list->entries[i]->key;
  ck_assert_uint_gt(em.key.len, 0);
  Arenad__V1__Response *r = evict(fd, 31, &em);
  wire_free_response(l);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  ck_assert_uint_eq(r->evict->evicted, 1);
  wire_free_response(r);
  assert_counts(&f.h, 2, 2);
  ck_assert(stored(&f.h, "ma", &f.g[0]));
  ck_assert(!stored(&f.h, "ma", &f.g[1]));
  ck_assert(stored(&f.h, "mb", &f.g[2]));
  /* gone from the in-memory cache too: planned again, not cached */
  ck_assert_int_eq(cd_plan(&f.h, &f.g[1], "ma", 32), 0);
  assert_counts(&f.h, 3, 3);

  /* by model hash: both plans of "ma", not the one of "mb" */
  em = (Arenad__V1__Evict)ARENAD__V1__EVICT__INIT;
  em.target_case = ARENAD__V1__EVICT__TARGET_MODEL_HASH;
  em.model_hash.data = (uint8_t *)"ma";
  em.model_hash.len = 2;
  r = evict(fd, 33, &em);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  ck_assert_uint_eq(r->evict->evicted, 2);
  wire_free_response(r);
  assert_counts(&f.h, 1, 1);
  ck_assert(stored(&f.h, "mb", &f.g[2]));
  ck_assert_int_eq(cd_plan(&f.h, &f.g[2], "mb", 34), 1);

  /* all = true: everything */
  em = (Arenad__V1__Evict)ARENAD__V1__EVICT__INIT;
  em.target_case = ARENAD__V1__EVICT__TARGET_ALL;
  em.all = 1;
  r = evict(fd, 35, &em);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  ck_assert_uint_eq(r->evict->evicted, 1);
  wire_free_response(r);
  assert_counts(&f.h, 0, 0);
  close(fd);
  fixture_stop(&f);
}
END_TEST

void cd_add_evict_tests(TCase *tc)
{
  tcase_add_test(tc, evict_all_false_selects_nothing);
  tcase_add_test(tc, evict_bad_selectors_remove_nothing);
  tcase_add_test(tc, evict_each_selector_removes_what_it_names);
}

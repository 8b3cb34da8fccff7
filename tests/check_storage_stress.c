/*
 * check_storage_stress.c - the last tests of the storage suite's
 * "recovery" test case: the cache under a killed writer and under
 * concurrent use. A child process that keeps putting plans is killed
 * with SIGKILL 100 times; after each kill the file must be intact, every
 * plan must verify and every acknowledged put must be there or have
 * been evicted. Then one writer thread and four reader threads, each
 * with its own handle, share one file without a single error.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_storage.h"
#include "storage.h"
#include "testutil.h"

/* ---- crash safety ------------------------------------------------------- */

#define CRASH_ROUNDS 100
#define CRASH_CAP 40

/* The graph, key and plan for crash-test entry i. */
static void crash_item(uint32_t i, struct planner_tensor **t,
                       struct planner_graph *g, struct st_tkey *k)
{
  size_t n = 20 + i % 60;
  *t = st_make_tensors(n, 1000 + i);
  g->tensors = *t;
  g->n_tensors = n;
  st_key_init(k, i, 16);
}

/* The child: puts new plans (and reads some back) until it is killed,
 * reporting each acknowledged put as a uint32 on fd. */
static void crash_child(int fd, uint32_t first)
{
  struct storage_options o;
  storage_options_init(&o);
  o.max_entries = CRASH_CAP;
  o.touch_batch = 3;
  storage_t *st = NULL;
  if (storage_open(st_dbpath(), &o, &st, NULL))
    _exit(3);
  for (uint32_t i = first;; i++) {
    struct planner_tensor *t;
    struct planner_graph g;
    struct st_tkey k;
    struct planner_plan p, q;
    struct planner_options po;
    crash_item(i, &t, &g, &k);
    st_opts(&po, PLANNER_ALGO_BEST);
    planner_plan_init(&p);
    planner_plan_init(&q);
    if (planner_run(&g, &po, &p, NULL) ||
        storage_put(st, &k.k, &g, &po, &p, 1, NULL))
      _exit(4);
    if (write(fd, &i, sizeof i) != (ssize_t)sizeof i)
      _exit(5);
    if (i > first) { /* read back the previous one, to write touches */
      free(t);
      crash_item(i - 1, &t, &g, &k);
      int rc = storage_get(st, &k.k, &g, &po, &q, NULL);
      if (rc && rc != ARENA_ENOENT)
        _exit(6);
    }
    planner_plan_cleanup(&p);
    planner_plan_cleanup(&q);
    free(t);
  }
}

START_TEST(crash_safety)
{
  uint64_t seed = 12345;
  uint64_t acked_total = 0, missing_total = 0;
  uint32_t next = 0;
  size_t cap = 1 << 16;
  uint32_t *acked = malloc(cap * sizeof *acked);
  for (int round = 0; round < CRASH_ROUNDS; round++) {
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      crash_child(fds[1], next);
    }
    close(fds[1]);
    /* Odd rounds wait for the first acknowledged put, so that at least
     * half the kills land among writes however slow the machine is; even
     * rounds may also kill the child while it opens the file. */
    size_t n_acked = 0;
    if (round % 2 == 1)
      n_acked = read(fds[0], acked, sizeof *acked) == (ssize_t)sizeof *acked;
    struct timespec ts = {0, (long)tu_rand_range(&seed, 1, 30) * 1000000L};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status), "child exited with %d",
                  WEXITSTATUS(status));

    ssize_t got;
    while ((got = read(fds[0], acked + n_acked, sizeof *acked)) ==
           (ssize_t)sizeof *acked)
      if (++n_acked == cap)
        break;
    close(fds[0]);
    acked_total += n_acked;
    /* The next child starts past anything this one may have written. */
    next = (n_acked ? acked[n_acked - 1] : next) + 2;

    /* Reopen: the file is intact and every plan checks out. */
    struct storage_options o;
    storage_options_init(&o);
    o.max_entries = CRASH_CAP;
    storage_t *st = st_open_with(&o);
    sqlite3 *db = st_raw_open(st_dbpath());
    sqlite3_stmt *ic;
    ck_assert_int_eq(
        sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &ic, NULL),
        SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(ic), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(ic, 0), "ok");
    sqlite3_finalize(ic);
    sqlite3_close(db);

    struct storage_list_query lq = {NULL, 0, STORAGE_ORDER_NEWEST, 0,
                                    STORAGE_LIST_MAX};
    struct storage_record *r;
    size_t nr;
    ck_assert_int_eq(storage_list(st, &lq, &r, &nr), 0);
    ck_assert_uint_le(nr, CRASH_CAP);
    for (size_t j = 0; j < nr; j++) {
      unsigned id;
      char hash[80];
      memcpy(hash, r[j].model_hash, r[j].model_hash_len);
      hash[r[j].model_hash_len] = '\0';
      ck_assert_int_eq(sscanf(hash, "model-%u", &id), 1);
      struct planner_tensor *t;
      struct planner_graph g;
      struct st_tkey k;
      struct planner_plan q;
      crash_item(id, &t, &g, &k);
      planner_plan_init(&q);
      ck_assert_int_eq(st_get_rc(st, &k, &g, &q), 0); /* checksum + verify */
      char err[ARENA_ERR_LEN];
      struct planner_options po;
      st_opts(&po, PLANNER_ALGO_BEST);
      ck_assert_int_eq(planner_verify(&g, &po, &q, err), 0);
      planner_plan_cleanup(&q);
      free(t);
    }
    storage_records_free(r, nr);

    /* Every acknowledged put is there or was evicted. */
    for (size_t j = 0; j < n_acked; j++) {
      struct planner_tensor *t;
      struct planner_graph g;
      struct st_tkey k;
      struct planner_plan q;
      crash_item(acked[j], &t, &g, &k);
      planner_plan_init(&q);
      int rc = st_get_rc(st, &k, &g, &q);
      ck_assert(rc == 0 || rc == ARENA_ENOENT);
      missing_total += rc != 0;
      planner_plan_cleanup(&q);
      free(t);
    }
    struct storage_stats s;
    st_stats_of(st, &s);
    ck_assert_uint_eq(s.corrupt_dropped, 0);
    ck_assert_uint_le(missing_total, s.evictions);
    /* Each put is a new key, so committed puts = entries + evictions; at
     * most one per round was committed but not yet acknowledged. */
    ck_assert_uint_ge(s.entries + s.evictions, acked_total);
    ck_assert_uint_le(s.entries + s.evictions,
                      acked_total + (uint64_t)round + 1);
    storage_close(st);
  }
  /* The children got work done (see the odd rounds above). */
  ck_assert_uint_ge(acked_total, CRASH_ROUNDS / 2);
  free(acked);
}
END_TEST

/* ---- concurrency -------------------------------------------------------- */

#define CONC_READERS 4
#define CONC_PUTS 400
#define CONC_MIN_READS 300

struct conc {
  atomic_uint written;  /* keys 0..written-1 are stored */
  atomic_int writer_done;
  atomic_int errors;    /* any unexpected result */
  char first_error[256];
};

static void conc_fail(struct conc *c, const char *what, int rc)
{
  if (atomic_fetch_add(&c->errors, 1) == 0)
    snprintf(c->first_error, sizeof c->first_error, "%s: %s", what,
             arena_err_name(rc));
}

static void *conc_writer(void *arg)
{
  struct conc *c = arg;
  struct storage_options o;
  storage_options_init(&o);
  o.busy_timeout_ms = 10000;
  storage_t *st = NULL;
  int rc = storage_open(st_dbpath(), &o, &st, NULL);
  if (rc) {
    conc_fail(c, "writer open", rc);
    atomic_store(&c->writer_done, 1);
    return NULL;
  }
  for (uint32_t i = 0; i < CONC_PUTS; i++) {
    struct planner_tensor *t;
    struct planner_graph g;
    struct st_tkey k;
    struct planner_plan p;
    struct planner_options po;
    crash_item(i, &t, &g, &k);
    st_opts(&po, PLANNER_ALGO_BEST);
    planner_plan_init(&p);
    if ((rc = planner_run(&g, &po, &p, NULL)) ||
        (rc = storage_put(st, &k.k, &g, &po, &p, 1, NULL)))
      conc_fail(c, "put", rc);
    else
      atomic_store(&c->written, i + 1);
    planner_plan_cleanup(&p);
    free(t);
  }
  storage_close(st);
  atomic_store(&c->writer_done, 1);
  return NULL;
}

static void *conc_reader(void *arg)
{
  struct conc *c = arg;
  struct storage_options o;
  storage_options_init(&o);
  o.busy_timeout_ms = 10000;
  o.touch_batch = 16; /* readers write their uses too */
  storage_t *st = NULL;
  int rc = storage_open(st_dbpath(), &o, &st, NULL);
  if (rc) {
    conc_fail(c, "reader open", rc);
    return NULL;
  }
  uint64_t seed = (uint64_t)(uintptr_t)&o;
  int reads = 0;
  while (reads < CONC_MIN_READS || !atomic_load(&c->writer_done)) {
    unsigned w = atomic_load(&c->written);
    if (w == 0) {
      struct timespec ts = {0, 1000000L}; /* the first put is coming */
      nanosleep(&ts, NULL);
      continue;
    }
    uint32_t i = (uint32_t)tu_rand_range(&seed, 0, w - 1);
    struct planner_tensor *t;
    struct planner_graph g;
    struct st_tkey k;
    struct planner_plan q;
    struct planner_options po;
    crash_item(i, &t, &g, &k);
    st_opts(&po, PLANNER_ALGO_BEST);
    planner_plan_init(&q);
    rc = storage_get(st, &k.k, &g, &po, &q, NULL);
    if (rc)
      conc_fail(c, "get", rc);
    else if ((rc = planner_verify(&g, &po, &q, NULL)))
      conc_fail(c, "verify", rc);
    planner_plan_cleanup(&q);
    free(t);
    reads++;
    if (reads % 50 == 0 && (rc = storage_flush(st)))
      conc_fail(c, "flush", rc);
    if (reads % 97 == 0) {
      struct storage_record *r;
      size_t n;
      if ((rc = storage_lookup(st, &k.k, &r, &n)) || n != 1)
        conc_fail(c, "lookup", rc);
      storage_records_free(r, n);
    }
  }
  storage_close(st);
  return NULL;
}

START_TEST(one_writer_four_readers)
{
  struct conc c;
  memset(&c, 0, sizeof c);
  atomic_init(&c.written, 0);
  atomic_init(&c.writer_done, 0);
  atomic_init(&c.errors, 0);
  storage_close(st_open_with(NULL)); /* create the file up front */
  pthread_t w, r[CONC_READERS];
  ck_assert_int_eq(pthread_create(&w, NULL, conc_writer, &c), 0);
  for (int i = 0; i < CONC_READERS; i++)
    ck_assert_int_eq(pthread_create(&r[i], NULL, conc_reader, &c), 0);
  pthread_join(w, NULL);
  for (int i = 0; i < CONC_READERS; i++)
    pthread_join(r[i], NULL);
  ck_assert_msg(atomic_load(&c.errors) == 0, "%d errors, first: %s",
                atomic_load(&c.errors), c.first_error);
  storage_t *st = st_open_with(NULL);
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, CONC_PUTS);
  ck_assert_uint_ge(s.hits, CONC_READERS * CONC_MIN_READS);
  ck_assert_uint_eq(s.misses, 0);
  storage_close(st);
}
END_TEST

/* ---- adding the tests --------------------------------------------------- */

void storage_add_stress(TCase *tc)
{
  tcase_add_test(tc, crash_safety);
  tcase_add_test(tc, one_writer_four_readers);
}

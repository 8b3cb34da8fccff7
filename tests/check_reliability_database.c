/*
 * check_reliability_database.c - the reliability suite's tests of the
 * plan database under faults (see check_reliability.c):
 *
 *   crash       SIGKILL the daemon at random moments under a write-heavy
 *               load; after each kill the database passes
 *               PRAGMA integrity_check, every stored plan verifies, every
 *               acknowledged plan is still there.
 *   disk_full   the database on a small tmpfs that fills up: plans are
 *               still served, status reports the failing storage, and
 *               writes resume once space returns.
 *   tamper      the database removed, made read-only, or overwritten with
 *               garbage while the daemon runs.
 *
 * With the helpers only they use: the crash clients and the checks after
 * a kill, PRAGMA integrity_check, the daemon log, filling a file system
 * and writing garbage over a file.
 */
#define _GNU_SOURCE 1 /* unshare */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_reliability.h"
#include "storage.h"
#include "testutil.h"
#include "wire.h"

/* Runs PRAGMA integrity_check on a database file. Returns 1 when it says
 * "ok". */
static int integrity_ok(const char *db)
{
  sqlite3 *d = NULL;
  int ok = 0;
  if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(d, "PRAGMA integrity_check", -1, &s, NULL) ==
            SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
      ok = strcmp((const char *)sqlite3_column_text(s, 0), "ok") == 0;
    sqlite3_finalize(s);
  }
  sqlite3_close(d);
  return ok;
}

/* ---- crash: SIGKILL under a write-heavy load ----------------------------- */

#define CRASH_CLIENTS 4
#define CRASH_MAX_REQ 4096 /* requests per client per round, at most */

enum { R_NONE = 0, R_ACKED = 1, R_ERROR = 2, R_WRONG = 3 };

struct crash_shared {
  atomic_int stop;
  uint32_t n[CRASH_CLIENTS];                    /* requests made */
  uint8_t res[CRASH_CLIENTS][CRASH_MAX_REQ];    /* R_* per request */
};

static void crash_graph(struct vgraph *v, unsigned round, unsigned c,
                        unsigned i)
{
  char hash[64];
  snprintf(hash, sizeof hash, "crash-r%u-c%u-i%u", round, c, i);
  uint64_t seed = (uint64_t)round << 40 | (uint64_t)c << 32 | i;
  /* greedy-size keeps planning short, so the load is mostly writes */
  rel_vgraph_make(v, 20 + (size_t)(seed * 2654435761u % 180), seed,
                  PLANNER_ALGO_GREEDY_SIZE, hash);
}

static void crash_client(const struct harness *h, struct crash_shared *sh,
                         unsigned round, unsigned c)
{
  int fd = -1;
  for (unsigned i = 0; i < CRASH_MAX_REQ && !atomic_load(&sh->stop); i++) {
    struct vgraph v;
    crash_graph(&v, round, c, i);
    if (fd < 0)
      fd = hn_connect(h);
    int res = -1;
    if (fd >= 0 && rel_send_plan(fd, i + 1, &v) == 0) {
      Arenad__V1__Response *r = hn_recv(fd, 10000);
      res = rel_classify(r, &v);
      wire_free_response(r);
    }
    sh->res[c][i] = res == 0 ? R_ACKED : res == 1 ? R_WRONG : R_ERROR;
    sh->n[c] = i + 1;
    rel_vgraph_free(&v);
    if (res < 0) {
      if (fd >= 0)
        close(fd);
      if ((fd = hn_connect(h)) < 0)
        break; /* the daemon is gone: a clean error, stop */
    }
  }
  if (fd >= 0)
    close(fd);
}

/* Every record must be a crash-test plan that storage_get returns, that
 * is, whose checksum and verification pass. */
static void check_records(storage_t *st, const struct storage_record *recs,
                          size_t n_recs)
{
  struct storage_key k = {NULL, 0, NULL, 0, NULL};
  for (size_t r = 0; r < n_recs; r++) {
    unsigned rr, c, i;
    char name[STORAGE_MODEL_HASH_MAX + 1];
    memcpy(name, recs[r].model_hash, recs[r].model_hash_len);
    name[recs[r].model_hash_len] = '\0';
    ck_assert_int_eq(sscanf(name, "crash-r%u-c%u-i%u", &rr, &c, &i), 3);
    struct vgraph v;
    crash_graph(&v, rr, c, i);
    struct planner_graph pg = {v.g.t, v.g.n};
    struct planner_plan p;
    planner_plan_init(&p);
    k.model_hash = (const uint8_t *)v.hash;
    k.model_hash_len = strlen(v.hash);
    ck_assert_msg(storage_get(st, &k, &pg, &v.o, &p, NULL) == 0,
                  "stored plan %s does not verify", name);
    planner_plan_cleanup(&p);
    rel_vgraph_free(&v);
  }
}

/* After a kill: the file is sound, every stored plan verifies, every
 * acknowledged plan is there. Adds to f. */
static void crash_check(const struct harness *h, struct crash_shared *sh,
                        unsigned round, struct figs *f, uint64_t *verified)
{
  ck_assert_msg(integrity_ok(h->db), "integrity_check failed after kill %u",
                round);
  storage_t *st = NULL;
  char err[ARENA_ERR_LEN];
  ck_assert_msg(storage_open(h->db, NULL, &st, err) == 0, "%s", err);
  /* nothing was moved aside as damaged ("cache.db.<reason>-<time>") */
  ck_assert_int_eq(rel_count_prefix(h->dir, "cache.db."), 0);
  struct storage_key k = {NULL, 0, NULL, 0, NULL};
  for (unsigned c = 0; c < CRASH_CLIENTS; c++)
    for (unsigned i = 0; i < sh->n[c]; i++) {
      if (sh->res[c][i] == R_WRONG)
        f->wrong++;
      if (sh->res[c][i] != R_ACKED)
        continue;
      f->requests++;
      struct vgraph v;
      crash_graph(&v, round, c, i);
      struct planner_graph pg = {v.g.t, v.g.n};
      struct planner_plan p;
      planner_plan_init(&p);
      k.model_hash = (const uint8_t *)v.hash;
      k.model_hash_len = strlen(v.hash);
      if (storage_get(st, &k, &pg, &v.o, &p, NULL) != 0)
        f->lost++;
      planner_plan_cleanup(&p);
      rel_vgraph_free(&v);
    }
  /* Every stored plan, acknowledged or not, passes its checksum and
   * verification: storage_get would drop and count one that does not. */
  struct storage_list_query q = {NULL, 0, STORAGE_ORDER_NEWEST, 0,
                                 STORAGE_LIST_MAX};
  for (size_t got = STORAGE_LIST_MAX; got == STORAGE_LIST_MAX;
       q.offset += got) {
    struct storage_record *recs = NULL;
    ck_assert_int_eq(storage_list(st, &q, &recs, &got), 0);
    check_records(st, recs, got);
    *verified += got;
    storage_records_free(recs, got);
  }
  struct storage_stats ss;
  ck_assert_int_eq(storage_get_stats(st, &ss), 0);
  ck_assert_uint_eq(ss.corrupt_dropped, 0);
  storage_close(st);
}

START_TEST(test_crash_kill_loop)
{
  if (rel_skipped("crash"))
    return;
  unsigned rounds = rel_scaled(5, 50);
  struct harness h;
  struct figs f = {0};
  rel_setup(&h, NULL, "workers = 2\n");
  struct crash_shared *sh = rel_shared_new(sizeof *sh);
  uint64_t rng = 42;
  uint64_t errors = 0, verified = 0;
  for (unsigned round = 0; round < rounds; round++) {
    ck_assert_msg(rel_start(&h) == 0, "restart %u failed", round);
    atomic_store(&sh->stop, 0);
    memset(sh->n, 0, sizeof sh->n);
    pid_t kids[CRASH_CLIENTS];
    for (unsigned c = 0; c < CRASH_CLIENTS; c++) {
      kids[c] = fork();
      ck_assert_int_ge(kids[c], 0);
      if (kids[c] == 0) {
        crash_client(&h, sh, round, c);
        _exit(0);
      }
    }
    rel_sleep_ms((int)tu_rand_range(&rng, 30, 600));
    rel_rss_peak(&f, &h);
    rel_kill9(&h);
    atomic_store(&sh->stop, 1);
    for (unsigned c = 0; c < CRASH_CLIENTS; c++)
      ck_assert_int_eq(rel_wait_child(kids[c]), 0);
    for (unsigned c = 0; c < CRASH_CLIENTS; c++)
      for (unsigned i = 0; i < sh->n[c]; i++)
        errors += sh->res[c][i] == R_ERROR;
    crash_check(&h, sh, round, &f, &verified);
    f.crashes++;
  }
  /* After the last kill the daemon starts again and serves. */
  ck_assert_int_eq(rel_start(&h), 0);
  ck_assert(rel_ping_ok(&h));
  ck_assert_int_eq(hn_stop(&h), 0);
  char extra[128];
  snprintf(extra, sizeof extra,
           "clean_errors=%" PRIu64 " stored_plans_verified=%" PRIu64, errors,
           verified);
  rel_figs_report("crash", &f, extra);
  ck_assert_uint_eq(f.wrong, 0);
  ck_assert_uint_eq(f.lost, 0);
  ck_assert_uint_gt(f.requests, 0);
  munmap(sh, sizeof *sh);
  hn_cleanup(&h);
}
END_TEST

/* ---- disk full ------------------------------------------------------------ */

static int fill_disk(const char *path)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ck_assert_int_ge(fd, 0);
  static char block[4096];
  memset(block, 0xab, sizeof block);
  int blocks = 0;
  while (write(fd, block, sizeof block) == (ssize_t)sizeof block)
    blocks++;
  close(fd);
  return blocks;
}

START_TEST(test_disk_full)
{
  if (rel_skipped("disk_full"))
    return;
  struct figs f = {0};
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  char mnt[300], db[320], ballast[320];
  snprintf(mnt, sizeof mnt, "%s/small", h.dir);
  snprintf(db, sizeof db, "%s/cache.db", mnt);
  snprintf(ballast, sizeof ballast, "%s/ballast", mnt);
  ck_assert_int_eq(mkdir(mnt, 0700), 0);
  /* The tmpfs lives in a mount namespace of this test process and its
   * daemon, so it goes away with them however the test ends. */
  if (geteuid() != 0 || unshare(CLONE_NEWNS) != 0 ||
      mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") != 0) {
    printf("reliability: disk_full skipped: cannot mount a tmpfs (%s)\n",
           geteuid() ? "not root" : strerror(errno));
    hn_cleanup(&h);
    return;
  }
  /* A small hot LRU, so that most hits have to come from sqlite. */
  rel_write_conf(&h, db, "[cache]\nmemory_entries = 2\n");
  ck_assert_int_eq(rel_start(&h), 0);
  struct vgraph g0;
  rel_vgraph_make(&g0, 200, 1, PLANNER_ALGO_GREEDY_SIZE, "disk-g0");
  rel_expect_plan(&h, &g0, &f);
  ck_assert_uint_eq(f.requests, 1);

  /* Fill the file system, then keep planning new graphs: each must still
   * be answered with a verified plan while the writes fail. */
  fill_disk(ballast);
  Arenad__V1__Response *keep;
  int full = 0, attempts = 0;
  for (; attempts < 200 && !full; attempts++) {
    struct vgraph v;
    char hash[32];
    snprintf(hash, sizeof hash, "disk-full-%d", attempts);
    rel_vgraph_make(&v, 3000, 100 + (uint64_t)attempts,
                    PLANNER_ALGO_GREEDY_SIZE, hash);
    rel_expect_plan(&h, &v, &f);
    rel_vgraph_free(&v);
    f.bad_inputs++;
    Arenad__V1__StatsReply *sr = rel_stats_of(&h, &keep);
    full = !sr->storage_ok;
    if (full)
      printf("reliability: disk_full: after %d plans storage_ok=0 "
             "storage_error='%s'\n",
             attempts + 1, sr->storage_error);
    if (full)
      ck_assert_ptr_nonnull(strstr(sr->storage_error, "full"));
    wire_free_response(keep);
  }
  ck_assert_msg(full, "the disk never filled up in %d plans", attempts);
  ck_assert_msg(hn_log_count(&h, "cache database"),
                "the failing writes were not logged");
  ck_assert(rel_ping_ok(&h));
  /* What is stored is still served: by lookup, and by Plan. */
  Arenad__V1__Status ls;
  ck_assert_int_eq(rel_lookup_once(&h, &g0, &f, &ls), 1);
  rel_expect_plan(&h, &g0, &f);
  ck_assert_uint_eq(f.failures, 0);
  ck_assert_uint_eq(f.wrong, 0);

  /* Space returns: the next writes succeed and status says so. */
  ck_assert_int_eq(unlink(ballast), 0);
  int ok = 0;
  struct vgraph last = {0};
  for (int i = 0; i < 20 && !ok; i++) {
    char hash[32];
    rel_vgraph_free(&last);
    snprintf(hash, sizeof hash, "disk-back-%d", i);
    rel_vgraph_make(&last, 200, 1000 + (uint64_t)i, PLANNER_ALGO_GREEDY_SIZE,
                    hash);
    rel_expect_plan(&h, &last, &f);
    Arenad__V1__StatsReply *sr = rel_stats_of(&h, &keep);
    ok = sr->storage_ok;
    wire_free_response(keep);
  }
  ck_assert_msg(ok, "storage did not recover once space returned");
  ck_assert_int_eq(rel_lookup_once(&h, &last, &f, &ls), 1);
  rel_rss_peak(&f, &h);
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert(integrity_ok(db));
  ck_assert_uint_eq(f.failures, 0);
  ck_assert_uint_eq(f.wrong, 0);
  rel_figs_report("disk_full", &f, NULL);
  rel_vgraph_free(&last);
  rel_vgraph_free(&g0);
  ck_assert_int_eq(umount(mnt), 0);
  hn_cleanup(&h);
}
END_TEST

/* ---- tamper: removed, read-only, garbage --------------------------------- */

static void overwrite_garbage(const char *path, int in_place)
{
  struct stat sb;
  ck_assert_int_eq(stat(path, &sb), 0);
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s.new", path);
  int fd = open(in_place ? path : tmp,
                O_WRONLY | O_CLOEXEC | (in_place ? 0 : O_CREAT | O_TRUNC),
                0600);
  ck_assert_int_ge(fd, 0);
  uint64_t s = 7;
  for (off_t done = 0; done < sb.st_size; done += 8) {
    uint64_t word = tu_rand(&s);
    ck_assert_int_eq(write(fd, &word, sizeof word), (ssize_t)sizeof word);
  }
  close(fd);
  if (!in_place)
    ck_assert_int_eq(rename(tmp, path), 0);
}

START_TEST(test_tamper)
{
  if (rel_skipped("tamper"))
    return;
  struct figs f = {0};
  struct harness h;
  rel_setup(&h, NULL, "[cache]\nmemory_entries = 2\n");
  struct vgraph g[8];
  for (int i = 0; i < 8; i++) {
    char hash[32];
    snprintf(hash, sizeof hash, "tamper-%d", i);
    rel_vgraph_make(&g[i], 300, 50 + (uint64_t)i, PLANNER_ALGO_GREEDY_SIZE,
                    hash);
  }
  Arenad__V1__Status ls;
  Arenad__V1__Response *keep;

  /* Removed while running: the daemon keeps using the open (unlinked)
   * file until it restarts, then starts a fresh one. */
  ck_assert_int_eq(rel_start(&h), 0);
  rel_expect_plan(&h, &g[0], &f);
  rel_unlink_db(h.db);
  f.bad_inputs++;
  rel_expect_plan(&h, &g[1], &f);
  ck_assert_int_eq(rel_lookup_once(&h, &g[0], &f, &ls), 1);
  rel_stats_of(&h, &keep);
  wire_free_response(keep);
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert_int_eq(rel_start(&h), 0);
  ck_assert_int_eq(rel_lookup_once(&h, &g[0], &f, &ls), 0);
  ck_assert_int_eq(ls, ARENAD__V1__STATUS__NOT_FOUND);
  rel_expect_plan(&h, &g[0], &f);
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert(integrity_ok(h.db));

  /* Read-only (as an unprivileged daemon, since root ignores modes): the
   * daemon starts, serves and plans, reports the failing writes. */
  if (geteuid() == 0) {
    ck_assert_int_eq(chown(h.dir, NOBODY, NOBODY), 0);
    ck_assert_int_eq(chmod(h.db, 0444), 0);
    ck_assert_int_eq(chmod(h.log, 0666), 0);
    ck_assert_int_eq(rel_start_as(&h, NOBODY, NOBODY, h.dir), 0);
    f.bad_inputs++;
    rel_expect_plan(&h, &g[2], &f);
    rel_expect_plan(&h, &g[0], &f);
    (void)rel_lookup_once(&h, &g[0], &f, &ls);
    Arenad__V1__StatsReply *sr = rel_stats_of(&h, &keep);
    printf("reliability: tamper: read-only database: storage_ok=%d "
           "storage_error='%s' lookup status %s\n",
           sr->storage_ok, sr->storage_error, wire_status_name(ls));
    ck_assert(!sr->storage_ok);
    wire_free_response(keep);
    ck_assert_int_eq(hn_stop(&h), 0);
    ck_assert_int_eq(chmod(h.db, 0644), 0);
    ck_assert_int_eq(chown(h.dir, 0, 0), 0);
  }

  /* Garbage written over the file in place while running: plans are still
   * served and verified (planned again when the stored copy is
   * unreadable); at restart the file is moved aside. */
  ck_assert_int_eq(rel_start(&h), 0);
  rel_expect_plan(&h, &g[3], &f);
  overwrite_garbage(h.db, 1);
  f.bad_inputs++;
  rel_expect_plan(&h, &g[4], &f);
  rel_expect_plan(&h, &g[3], &f);
  rel_expect_plan(&h, &g[0], &f);
  (void)rel_lookup_once(&h, &g[3], &f, &ls);
  Arenad__V1__StatsReply *sr = rel_stats_of(&h, &keep);
  printf("reliability: tamper: garbage in place: storage_ok=%d "
         "storage_error='%s' lookup status %s\n",
         sr->storage_ok, sr->storage_error, wire_status_name(ls));
  wire_free_response(keep);
  ck_assert(rel_ping_ok(&h));
  /* ...and replaced by another garbage file (a new inode). */
  overwrite_garbage(h.db, 0);
  f.bad_inputs++;
  rel_expect_plan(&h, &g[5], &f);
  ck_assert(rel_ping_ok(&h));
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert_int_eq(rel_start(&h), 0);
  ck_assert_int_ge(rel_count_prefix(h.dir, "cache.db."), 1);
  rel_expect_plan(&h, &g[3], &f);
  rel_expect_plan(&h, &g[6], &f);
  ck_assert_int_eq(rel_lookup_once(&h, &g[6], &f, &ls), 1);
  rel_rss_peak(&f, &h);
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert(integrity_ok(h.db));
  rel_figs_report("tamper", &f, NULL);
  ck_assert_uint_eq(f.failures, 0);
  ck_assert_uint_eq(f.wrong, 0);
  for (int i = 0; i < 8; i++)
    rel_vgraph_free(&g[i]);
  hn_cleanup(&h);
}
END_TEST

void reliability_add_database(TCase *tc)
{
  tcase_add_test(tc, test_crash_kill_loop);
  tcase_add_test(tc, test_disk_full);
  tcase_add_test(tc, test_tamper);
}

/*
 * check_reliability.c - arenad under faults, floods and hostile clients.
 *
 * Every test starts a real arenad (tests/daemon_harness.h) and checks the
 * one property an interpreter depends on: a plan it receives is right for
 * its own graph, or it gets a clean error. Each test prints its figures
 * ("reliability: <test> key=value ...") and appends them to a figures
 * file; the last test prints the summary table and fails if any wrong
 * plan was served or any acknowledged plan was lost.
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
 *   fallback    the daemon is killed while 16 library clients wait on it.
 *   unusable    a poisoned database under 16 library clients: each gets
 *               a verified plan no larger than the daemon's own.
 *   flood       a connection flood past max_connections.
 *   lockout     300 idle connections against the default limits: a fresh
 *               client is served while they are open.
 *   slow        a client that never reads, and one that trickles a frame.
 *   unread      128 connections of one uid with 1 MiB of replies each
 *               that they never read: the uid is served, they are
 *               closed at the idle timeout, the daemon's RSS measured.
 *   abusive     huge graphs, maximum-size frames, repeated requests; the
 *               daemon's RSS is measured.
 *   poison      graphs that differ in one detail sent under one hash.
 *   bundle      plan bundles whose plans verify but claim absurd arenas:
 *               refused on both ways in, nothing stored, across a
 *               restart.
 *   access      socket mode and allow-lists against an unprivileged user;
 *               nothing written outside the configured paths.
 *   soak        64 concurrent clients mixing hits, misses, lookups, stats
 *               and evictions, with RSS sampled every second.
 *   symlink     `arenactl export` while a hostile process plants
 *               symbolic links to a victim at every temporary name: the
 *               victim is never written.
 *
 * `make test` runs small counts. ARENA_RELIABILITY=full (what
 * `make reliability` sets) raises them: 50 kills, 10^6-tensor graphs,
 * 204,800 soak requests. Tests that need root (tmpfs, a second user)
 * say so and pass without checking when not run as root.
 * ARENA_REL_ONLY=<test> (crash, disk_full, ...) runs just that one.
 *
 * The tests live in one file per subject and are added to the one TCase
 * in the order above:
 *   check_reliability_database.c   crash, disk_full, tamper
 *   check_reliability_fallback.c   fallback, unusable
 *   check_reliability_hostile.c    flood, lockout, slow, unread, abusive
 *   check_reliability_isolation.c  poison, bundle, access
 *   check_reliability_soak.c       soak
 *   check_reliability_output.c     symlink
 * This file holds what they share (declared in check_reliability.h): the
 * figures, graphs that can be checked, requests, daemon set-up; and the
 * summary test and reliability_suite.
 */
#define _GNU_SOURCE 1 /* setresuid, setresgid */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_reliability.h"
#include "testutil.h"
#include "wire.h"
#include "wire_plan.h"

#define FIGURES_ENV "ARENA_REL_FIGURES"

/* ---- scale, time, figures ------------------------------------------------ */

int rel_full_mode(void)
{
  const char *e = getenv("ARENA_RELIABILITY");
  return e && strcmp(e, "full") == 0;
}

/* ARENA_REL_ONLY=<test> runs one test (and the summary); the others
 * return at once. For working on one case. */
int rel_skipped(const char *test)
{
  const char *only = getenv("ARENA_REL_ONLY");
  return only && *only && strcmp(only, test) != 0;
}

unsigned rel_scaled(unsigned ci, unsigned full)
{
  return rel_full_mode() ? full : ci;
}

double rel_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void rel_sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* Prints the figures and appends them to the figures file. extra is a
 * free-form "key=value ..." note. */
void rel_figs_report(const char *test, const struct figs *f,
                     const char *extra)
{
  printf("reliability: %s bad_inputs=%" PRIu64 " crashes=%" PRIu64
         " requests=%" PRIu64 " failures=%" PRIu64 " wrong_plans=%" PRIu64
         " lost_acks=%" PRIu64 " peak_rss_kib=%ld%s%s\n",
         test, f->bad_inputs, f->crashes, f->requests, f->failures, f->wrong,
         f->lost, f->peak_rss_kib, extra ? " " : "", extra ? extra : "");
  fflush(stdout);
  const char *path = getenv(FIGURES_ENV);
  FILE *fp = path ? fopen(path, "a") : NULL;
  if (!fp)
    return;
  fprintf(fp, "%s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
              " %" PRIu64 " %ld\n",
          test, f->bad_inputs, f->crashes, f->requests, f->failures, f->wrong,
          f->lost, f->peak_rss_kib);
  fclose(fp);
}

/* Whether the running daemon was built with AddressSanitizer: its
 * quarantine and shadow memory make RSS bounds meaningless, so memory
 * figures are then reported but not asserted. */
int rel_daemon_sanitized(const struct harness *h)
{
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/%ld/maps", (long)h->pid);
  FILE *f = fopen(path, "r");
  int found = 0;
  while (f && !found && fgets(line, sizeof line, f))
    found = strstr(line, "libasan") != NULL;
  if (f)
    fclose(f);
  return found;
}

void rel_rss_peak(struct figs *f, const struct harness *h)
{
  long k = hn_rss_kib(h);
  if (k > f->peak_rss_kib)
    f->peak_rss_kib = k;
}

/* ---- graphs that can be checked --------------------------------------- */

void rel_vgraph_make(struct vgraph *v, size_t n, uint64_t seed, int algo,
                     const char *hash)
{
  memset(v, 0, sizeof *v);
  hn_random_graph(&v->g, n, seed);
  planner_options_init(&v->o);
  v->o.algo = (enum planner_algo)algo;
  snprintf(v->hash, sizeof v->hash, "%s", hash);
  struct planner_graph pg = {v->g.t, v->g.n};
  ck_assert_int_eq(planner_graph_digest(&pg, v->gd), 0);
}

void rel_vgraph_free(struct vgraph *v)
{
  hn_graph_free(&v->g);
}

/* Checks a PlanReply against v: returns 0 for a right plan, 1 for a plan
 * that is wrong for v (digest or verification). */
int rel_reply_wrong(const Arenad__V1__PlanReply *pr, const struct vgraph *v)
{
  if (pr->graph_digest.len != PLANNER_DIGEST_LEN ||
      memcmp(pr->graph_digest.data, v->gd, PLANNER_DIGEST_LEN) != 0)
    return 1;
  struct planner_plan p;
  planner_plan_init(&p);
  int bad = wire_plan_from_reply(pr, &p) != 0;
  struct planner_graph pg = {v->g.t, v->g.n};
  if (!bad)
    bad = planner_verify(&pg, &v->o, &p, NULL) != 0;
  planner_plan_cleanup(&p);
  return bad;
}

/* Classifies a reply to a Plan request: 0 verified plan, 1 wrong plan,
 * -1 no plan (error status, EOF or timeout). */
int rel_classify(const Arenad__V1__Response *r, const struct vgraph *v)
{
  if (!r || r->status != ARENAD__V1__STATUS__OK ||
      r->body_case != ARENAD__V1__RESPONSE__BODY_PLAN)
    return -1;
  return rel_reply_wrong(r->plan, v);
}

int rel_send_plan(int fd, uint64_t rid, const struct vgraph *v)
{
  return hn_send_plan(fd, rid, &v->g, v->hash, (int)v->o.algo,
                      v->o.alignment, v->o.effort);
}

/* Sends Plan for v and waits for the reply on a new connection. */
static int plan_once(const struct harness *h, const struct vgraph *v,
                     int timeout_ms)
{
  int fd = hn_connect(h);
  if (fd < 0)
    return -1;
  int res = -1;
  if (rel_send_plan(fd, 1, v) == 0) {
    Arenad__V1__Response *r = hn_recv(fd, timeout_ms);
    res = rel_classify(r, v);
    wire_free_response(r);
  }
  close(fd);
  return res;
}

int rel_send_lookup(int fd, uint64_t rid, const char *hash,
                    const uint8_t *digest)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Lookup lk = ARENAD__V1__LOOKUP__INIT;
  lk.model_hash.data = (uint8_t *)hash;
  lk.model_hash.len = strlen(hash);
  if (digest) {
    lk.graph_digest.data = (uint8_t *)digest;
    lk.graph_digest.len = PLANNER_DIGEST_LEN;
  }
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = rid;
  req.body_case = ARENAD__V1__REQUEST__BODY_LOOKUP;
  req.lookup = &lk;
  return hn_send(fd, &req);
}

int rel_send_evict_model(int fd, uint64_t rid, const char *hash)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Evict ev = ARENAD__V1__EVICT__INIT;
  ev.target_case = ARENAD__V1__EVICT__TARGET_MODEL_HASH;
  ev.model_hash.data = (uint8_t *)hash;
  ev.model_hash.len = strlen(hash);
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = rid;
  req.body_case = ARENAD__V1__REQUEST__BODY_EVICT;
  req.evict = &ev;
  return hn_send(fd, &req);
}

int rel_send_ping(int fd, uint64_t rid, const void *payload, size_t len)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Ping ping = ARENAD__V1__PING__INIT;
  ping.payload.data = (uint8_t *)payload;
  ping.payload.len = len;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = rid;
  req.body_case = ARENAD__V1__REQUEST__BODY_PING;
  req.ping = &ping;
  return hn_send(fd, &req);
}

int rel_ping_ok(const struct harness *h)
{
  int fd = hn_connect(h);
  if (fd < 0)
    return 0;
  int ok = 0;
  if (rel_send_ping(fd, 5, "x", 1) == 0) {
    Arenad__V1__Response *r = hn_recv(fd, 5000);
    ok = r && r->status == ARENAD__V1__STATUS__OK &&
         r->body_case == ARENAD__V1__RESPONSE__BODY_PONG;
    wire_free_response(r);
  }
  close(fd);
  return ok;
}

/* Plans v and counts the outcome in f: a verified plan is a request, a
 * wrong one is counted, anything else is a failure. */
void rel_expect_plan(const struct harness *h, const struct vgraph *v,
                     struct figs *f)
{
  int res = plan_once(h, v, 30000);
  if (res == 0)
    f->requests++;
  else if (res == 1)
    f->wrong++;
  else
    f->failures++;
}

/* Looks v up by hash and digest; returns 1 when a stored plan came back
 * and was right for v, 0 for NOT_FOUND or another clean error, and counts
 * a wrong plan in f. */
int rel_lookup_once(const struct harness *h, const struct vgraph *v,
                    struct figs *f, Arenad__V1__Status *status)
{
  int fd = hn_connect(h);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(rel_send_lookup(fd, 3, v->hash, v->gd), 0);
  Arenad__V1__Response *r = hn_recv(fd, 10000);
  close(fd);
  ck_assert_ptr_nonnull(r); /* an answer, whatever it is */
  *status = r->status;
  int found = 0;
  if (r->status == ARENAD__V1__STATUS__OK &&
      r->body_case == ARENAD__V1__RESPONSE__BODY_LOOKUP) {
    /* ids ascend in graph order, so canonical order is graph order */
    for (size_t i = 0; i < r->lookup->n_plans; i++) {
      if (rel_reply_wrong(r->lookup->plans[i], v))
        f->wrong++;
      else
        found = 1;
    }
  }
  wire_free_response(r);
  return found;
}

/* ---- daemon set-up ------------------------------------------------------ */

/* Rewrites the harness config: db (NULL = the harness default), log level
 * info (debug lines would dominate the long runs), and extra ini text. */
void rel_write_conf(struct harness *h, const char *db, const char *extra)
{
  FILE *f = fopen(h->conf, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "[daemon]\nsocket = %s\ndatabase = %s\nlog_level = info\n%s\n",
          h->sock, db ? db : h->db, extra ? extra : "");
  fclose(f);
}

void rel_setup(struct harness *h, const char *db, const char *extra)
{
  ck_assert_int_eq(hn_init(h, NULL), 0);
  rel_write_conf(h, db, extra);
}

/* Like hn_start, but the daemon runs as uid/gid (others than ours need
 * root) with its working directory in cwd (NULL: unchanged), and is
 * killed when the test process ends. */
int rel_start_as(struct harness *h, uid_t uid, gid_t gid, const char *cwd)
{
  char bin[PATH_MAX];
  if (!realpath(tu_bin("ARENAD"), bin))
    return -1;
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    if (!freopen(h->log, "a", stderr))
      _exit(126);
    /* The daemon dies with this test process, even one that a failed
     * assertion ended. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() == 1)
      _exit(126);
    if (cwd && chdir(cwd) != 0)
      _exit(126);
    if ((uid != geteuid() || gid != getegid()) &&
        (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
         setresuid(uid, uid, uid) != 0))
      _exit(126);
    execl(bin, bin, "--config", h->conf, (char *)NULL);
    _exit(127);
  }
  h->pid = pid;
  for (int i = 0; i < 500; i++) {
    int fd = hn_connect(h);
    if (fd >= 0) {
      close(fd);
      return 0;
    }
    if (waitpid(pid, NULL, WNOHANG) == pid) {
      h->pid = 0;
      return -1;
    }
    rel_sleep_ms(10);
  }
  return -1;
}

int rel_start(struct harness *h)
{
  return rel_start_as(h, geteuid(), getegid(), NULL);
}

const char *rel_arenactl(void)
{
  static char bin[PATH_MAX];
  ck_assert_ptr_nonnull(realpath(tu_bin("ARENACTL"), bin));
  return bin;
}

void rel_kill9(struct harness *h)
{
  if (h->pid) {
    kill(h->pid, SIGKILL);
    waitpid(h->pid, NULL, 0);
    h->pid = 0;
  }
}

Arenad__V1__StatsReply *rel_stats_of(const struct harness *h,
                                     Arenad__V1__Response **keep)
{
  *keep = hn_stats(h);
  ck_assert_ptr_nonnull(*keep);
  ck_assert_int_eq((*keep)->status, ARENAD__V1__STATUS__OK);
  ck_assert_int_eq((*keep)->body_case, ARENAD__V1__RESPONSE__BODY_STATS);
  return (*keep)->stats;
}

/* ---- files and processes ------------------------------------------------ */

/* Counts directory entries whose name starts with prefix. */
int rel_count_prefix(const char *dir, const char *prefix)
{
  DIR *d = opendir(dir);
  int n = 0;
  if (!d)
    return 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
      n++;
  closedir(d);
  return n;
}

/* Removes a database file and its -wal and -shm files. */
void rel_unlink_db(const char *db)
{
  char p[600];
  unlink(db);
  snprintf(p, sizeof p, "%s-wal", db);
  unlink(p);
  snprintf(p, sizeof p, "%s-shm", db);
  unlink(p);
}

/* A MAP_SHARED block that forked clients write their results into. */
void *rel_shared_new(size_t len)
{
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne(p, MAP_FAILED);
  memset(p, 0, len);
  return p;
}

int rel_wait_child(pid_t pid)
{
  int st;
  if (waitpid(pid, &st, 0) != pid)
    return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- summary ------------------------------------------------------------------ */

START_TEST(test_summary)
{
  const char *path = getenv(FIGURES_ENV);
  ck_assert_ptr_nonnull(path);
  FILE *fp = fopen(path, "r");
  ck_assert_ptr_nonnull(fp);
  struct figs t = {0};
  char name[64];
  struct figs r;
  printf("\nreliability summary (%s counts)\n",
         rel_full_mode() ? "full" : "CI");
  printf("| test | bad inputs | crashes survived | requests served | "
         "failures | wrong plans | plans lost after ack | peak RSS MiB |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  while (fscanf(fp,
                "%63s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                " %" SCNu64 " %" SCNu64 " %ld",
                name, &r.bad_inputs, &r.crashes, &r.requests, &r.failures,
                &r.wrong, &r.lost, &r.peak_rss_kib) == 8) {
    printf("| %s | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64
           " | %" PRIu64 " | %" PRIu64 " | %.1f |\n",
           name, r.bad_inputs, r.crashes, r.requests, r.failures, r.wrong,
           r.lost, (double)r.peak_rss_kib / 1024.0);
    t.bad_inputs += r.bad_inputs;
    t.crashes += r.crashes;
    t.requests += r.requests;
    t.failures += r.failures;
    t.wrong += r.wrong;
    t.lost += r.lost;
    if (r.peak_rss_kib > t.peak_rss_kib)
      t.peak_rss_kib = r.peak_rss_kib;
  }
  fclose(fp);
  printf("| **total** | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64
         " | %" PRIu64 " | %" PRIu64 " | %.1f |\n\n",
         t.bad_inputs, t.crashes, t.requests, t.failures, t.wrong, t.lost,
         (double)t.peak_rss_kib / 1024.0);
  fflush(stdout);
  if (getenv("ARENA_REL_FIGURES_OWNED"))
    unlink(path);
  ck_assert_uint_eq(t.wrong, 0);
  ck_assert_uint_eq(t.lost, 0);
  ck_assert_uint_eq(t.failures, 0);
  ck_assert_uint_gt(t.requests, 0);
}
END_TEST

Suite *reliability_suite(void)
{
  /* One figures file for every test of this run; the tests run in forked
   * children, so they find it through the environment. */
  if (!getenv(FIGURES_ENV)) {
    char tmpl[] = "/tmp/arenad-reliability-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd >= 0) {
      close(fd);
      setenv(FIGURES_ENV, tmpl, 1);
      setenv("ARENA_REL_FIGURES_OWNED", "1", 1);
    }
  }
  Suite *s = suite_create("reliability");
  TCase *tc = tcase_create("reliability");
  tcase_set_timeout(tc, rel_full_mode() ? 3600 : 180);
  reliability_add_database(tc);  /* crash, disk_full, tamper */
  reliability_add_fallback(tc);  /* fallback, unusable */
  reliability_add_hostile(tc);   /* flood, lockout, slow, abusive */
  reliability_add_isolation(tc); /* poison, access */
  reliability_add_soak(tc);      /* soak */
  reliability_add_output(tc);    /* symlink */
  tcase_add_test(tc, test_summary);
  suite_add_tcase(s, tc);
  return s;
}

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
 *   flood       a connection flood past max_connections.
 *   slow        a client that never reads, and one that trickles a frame.
 *   abusive     huge graphs, maximum-size frames, repeated requests; the
 *               daemon's RSS is measured.
 *   poison      graphs that differ in one detail sent under one hash.
 *   access      socket mode and allow-lists against an unprivileged user;
 *               nothing written outside the configured paths.
 *   soak        64 concurrent clients mixing hits, misses, lookups, stats
 *               and evictions, with RSS sampled every second.
 *
 * `make test` runs small counts. ARENA_RELIABILITY=full (what
 * `make reliability` sets) raises them: 50 kills, 10^6-tensor graphs,
 * 204,800 soak requests. Tests that need root (tmpfs, a second user)
 * say so and pass without checking when not run as root.
 * ARENA_REL_ONLY=<test> (crash, disk_full, ...) runs just that one.
 */
#define _GNU_SOURCE 1 /* setresuid, setresgid, unshare */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arenad_client.h"
#include "daemon_harness.h"
#include "digest.h"
#include "storage.h"
#include "testutil.h"
#include "wire.h"
#include "wire_plan.h"

#define FIGURES_ENV "ARENA_REL_FIGURES"
#define NOBODY 65534

/* ---- scale, time, figures ------------------------------------------------ */

static int full_mode(void)
{
  const char *e = getenv("ARENA_RELIABILITY");
  return e && strcmp(e, "full") == 0;
}

/* ARENA_REL_ONLY=<test> runs one test (and the summary); the others
 * return at once. For working on one case. */
static int skipped(const char *test)
{
  const char *only = getenv("ARENA_REL_ONLY");
  return only && *only && strcmp(only, test) != 0;
}

static unsigned scaled(unsigned ci, unsigned full)
{
  return full_mode() ? full : ci;
}

static double now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* What one test contributes to the summary. */
struct figs {
  uint64_t bad_inputs; /* hostile inputs or peers thrown at the daemon */
  uint64_t crashes;    /* daemon kills survived (restart + checks) */
  uint64_t requests;   /* requests answered correctly */
  uint64_t failures;   /* requests that failed when they should not */
  uint64_t wrong;      /* plans that failed verification at the client */
  uint64_t lost;       /* acknowledged plans missing after a restart */
  long peak_rss_kib;   /* largest daemon RSS seen */
};

/* Prints the figures and appends them to the figures file. extra is a
 * free-form "key=value ..." note. */
static void figs_report(const char *test, const struct figs *f,
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
static int daemon_sanitized(const struct harness *h)
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

static void rss_peak(struct figs *f, const struct harness *h)
{
  long k = hn_rss_kib(h);
  if (k > f->peak_rss_kib)
    f->peak_rss_kib = k;
}

/* ---- graphs that can be checked --------------------------------------- */

/* A graph, the options it is planned with, its digests and model hash. */
struct vgraph {
  struct hn_graph g;
  struct planner_options o;
  uint8_t gd[PLANNER_DIGEST_LEN];
  char hash[64];
};

static void vgraph_make(struct vgraph *v, size_t n, uint64_t seed, int algo,
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

static void vgraph_free(struct vgraph *v)
{
  hn_graph_free(&v->g);
}

/* Checks a PlanReply against v: returns 0 for a right plan, 1 for a plan
 * that is wrong for v (digest or verification). */
static int reply_wrong(const Arenad__V1__PlanReply *pr, const struct vgraph *v)
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
static int classify(const Arenad__V1__Response *r, const struct vgraph *v)
{
  if (!r || r->status != ARENAD__V1__STATUS__OK ||
      r->body_case != ARENAD__V1__RESPONSE__BODY_PLAN)
    return -1;
  return reply_wrong(r->plan, v);
}

static int send_plan(int fd, uint64_t rid, const struct vgraph *v)
{
  return hn_send_plan(fd, rid, &v->g, v->hash, (int)v->o.algo,
                      v->o.alignment, v->o.budget_ms);
}

/* Sends Plan for v and waits for the reply on a new connection. */
static int plan_once(const struct harness *h, const struct vgraph *v,
                     int timeout_ms)
{
  int fd = hn_connect(h);
  if (fd < 0)
    return -1;
  int res = -1;
  if (send_plan(fd, 1, v) == 0) {
    Arenad__V1__Response *r = hn_recv(fd, timeout_ms);
    res = classify(r, v);
    wire_free_response(r);
  }
  close(fd);
  return res;
}

static int send_lookup(int fd, uint64_t rid, const char *hash,
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

static int send_stats(int fd, uint64_t rid)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Stats st = ARENAD__V1__STATS__INIT;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = rid;
  req.body_case = ARENAD__V1__REQUEST__BODY_STATS;
  req.stats = &st;
  return hn_send(fd, &req);
}

static int send_evict_model(int fd, uint64_t rid, const char *hash)
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

static int send_ping(int fd, uint64_t rid, const void *payload, size_t len)
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

static int ping_ok(const struct harness *h)
{
  int fd = hn_connect(h);
  if (fd < 0)
    return 0;
  int ok = 0;
  if (send_ping(fd, 5, "x", 1) == 0) {
    Arenad__V1__Response *r = hn_recv(fd, 5000);
    ok = r && r->status == ARENAD__V1__STATUS__OK &&
         r->body_case == ARENAD__V1__RESPONSE__BODY_PONG;
    wire_free_response(r);
  }
  close(fd);
  return ok;
}

/* ---- daemon set-up ------------------------------------------------------ */

/* Rewrites the harness config: db (NULL = the harness default), log level
 * info (debug lines would dominate the long runs), and extra ini text. */
static void write_conf(struct harness *h, const char *db, const char *extra)
{
  FILE *f = fopen(h->conf, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "[daemon]\nsocket = %s\ndatabase = %s\nlog_level = info\n%s\n",
          h->sock, db ? db : h->db, extra ? extra : "");
  fclose(f);
}

static void setup(struct harness *h, const char *db, const char *extra)
{
  ck_assert_int_eq(hn_init(h, NULL), 0);
  write_conf(h, db, extra);
}

/* Like hn_start, but the daemon runs as uid/gid (others than ours need
 * root) with its working directory in cwd (NULL: unchanged), and is
 * killed when the test process ends. */
static int start_as(struct harness *h, uid_t uid, gid_t gid, const char *cwd)
{
  char bin[PATH_MAX];
  const char *b = getenv("ARENAD");
  if (!realpath(b ? b : "build/arenad", bin))
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
    sleep_ms(10);
  }
  return -1;
}

static int start(struct harness *h)
{
  return start_as(h, geteuid(), getegid(), NULL);
}

static void kill9(struct harness *h)
{
  if (h->pid) {
    kill(h->pid, SIGKILL);
    waitpid(h->pid, NULL, 0);
    h->pid = 0;
  }
}

static Arenad__V1__StatsReply *stats_of(const struct harness *h,
                                        Arenad__V1__Response **keep)
{
  *keep = hn_stats(h);
  ck_assert_ptr_nonnull(*keep);
  ck_assert_int_eq((*keep)->status, ARENAD__V1__STATUS__OK);
  ck_assert_int_eq((*keep)->body_case, ARENAD__V1__RESPONSE__BODY_STATS);
  return (*keep)->stats;
}

/* Whether the log file contains needle. */
static int log_has(const struct harness *h, const char *needle)
{
  size_t len;
  char *text = tu_read_file(h->log, &len);
  int found = text && strstr(text, needle) != NULL;
  free(text);
  return found;
}

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

/* Counts directory entries whose name starts with prefix. */
static int count_prefix(const char *dir, const char *prefix)
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

/* A MAP_SHARED block that forked clients write their results into. */
static void *shared_new(size_t len)
{
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne(p, MAP_FAILED);
  memset(p, 0, len);
  return p;
}

static int wait_child(pid_t pid)
{
  int st;
  if (waitpid(pid, &st, 0) != pid)
    return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int cmp_u32(const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
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
  vgraph_make(v, 20 + (size_t)(seed * 2654435761u % 180), seed,
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
    if (fd >= 0 && send_plan(fd, i + 1, &v) == 0) {
      Arenad__V1__Response *r = hn_recv(fd, 10000);
      res = classify(r, &v);
      wire_free_response(r);
    }
    sh->res[c][i] = res == 0 ? R_ACKED : res == 1 ? R_WRONG : R_ERROR;
    sh->n[c] = i + 1;
    vgraph_free(&v);
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
    vgraph_free(&v);
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
  ck_assert_int_eq(count_prefix(h->dir, "cache.db."), 0);
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
      vgraph_free(&v);
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
  if (skipped("crash"))
    return;
  unsigned rounds = scaled(5, 50);
  struct harness h;
  struct figs f = {0};
  setup(&h, NULL, "workers = 2\n");
  struct crash_shared *sh = shared_new(sizeof *sh);
  uint64_t rng = 42;
  uint64_t errors = 0, verified = 0;
  for (unsigned round = 0; round < rounds; round++) {
    ck_assert_msg(start(&h) == 0, "restart %u failed", round);
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
    sleep_ms((int)tu_rand_range(&rng, 30, 600));
    rss_peak(&f, &h);
    kill9(&h);
    atomic_store(&sh->stop, 1);
    for (unsigned c = 0; c < CRASH_CLIENTS; c++)
      ck_assert_int_eq(wait_child(kids[c]), 0);
    for (unsigned c = 0; c < CRASH_CLIENTS; c++)
      for (unsigned i = 0; i < sh->n[c]; i++)
        errors += sh->res[c][i] == R_ERROR;
    crash_check(&h, sh, round, &f, &verified);
    f.crashes++;
  }
  /* After the last kill the daemon starts again and serves. */
  ck_assert_int_eq(start(&h), 0);
  ck_assert(ping_ok(&h));
  ck_assert_int_eq(hn_stop(&h), 0);
  char extra[128];
  snprintf(extra, sizeof extra,
           "clean_errors=%" PRIu64 " stored_plans_verified=%" PRIu64, errors,
           verified);
  figs_report("crash", &f, extra);
  ck_assert_uint_eq(f.wrong, 0);
  ck_assert_uint_eq(f.lost, 0);
  ck_assert_uint_gt(f.requests, 0);
  munmap(sh, sizeof *sh);
  hn_cleanup(&h);
}
END_TEST

/* ---- disk full ------------------------------------------------------------ */

/* Plans v and counts the outcome in f: a verified plan is a request, a
 * wrong one is counted, anything else is a failure. */
static void expect_plan(const struct harness *h, const struct vgraph *v,
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
static int lookup_once(const struct harness *h, const struct vgraph *v,
                       struct figs *f, Arenad__V1__Status *status)
{
  int fd = hn_connect(h);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(send_lookup(fd, 3, v->hash, v->gd), 0);
  Arenad__V1__Response *r = hn_recv(fd, 10000);
  close(fd);
  ck_assert_ptr_nonnull(r); /* an answer, whatever it is */
  *status = r->status;
  int found = 0;
  if (r->status == ARENAD__V1__STATUS__OK &&
      r->body_case == ARENAD__V1__RESPONSE__BODY_LOOKUP) {
    /* ids ascend in graph order, so canonical order is graph order */
    for (size_t i = 0; i < r->lookup->n_plans; i++) {
      if (reply_wrong(r->lookup->plans[i], v))
        f->wrong++;
      else
        found = 1;
    }
  }
  wire_free_response(r);
  return found;
}

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
  if (skipped("disk_full"))
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
  write_conf(&h, db, "[cache]\nmemory_entries = 2\n");
  ck_assert_int_eq(start(&h), 0);
  struct vgraph g0;
  vgraph_make(&g0, 200, 1, PLANNER_ALGO_GREEDY_SIZE, "disk-g0");
  expect_plan(&h, &g0, &f);
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
    vgraph_make(&v, 3000, 100 + (uint64_t)attempts, PLANNER_ALGO_GREEDY_SIZE,
                hash);
    expect_plan(&h, &v, &f);
    vgraph_free(&v);
    f.bad_inputs++;
    Arenad__V1__StatsReply *sr = stats_of(&h, &keep);
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
  ck_assert_msg(log_has(&h, "cache database"),
                "the failing writes were not logged");
  ck_assert(ping_ok(&h));
  /* What is stored is still served: by lookup, and by Plan. */
  Arenad__V1__Status ls;
  ck_assert_int_eq(lookup_once(&h, &g0, &f, &ls), 1);
  expect_plan(&h, &g0, &f);
  ck_assert_uint_eq(f.failures, 0);
  ck_assert_uint_eq(f.wrong, 0);

  /* Space returns: the next writes succeed and status says so. */
  ck_assert_int_eq(unlink(ballast), 0);
  int ok = 0;
  struct vgraph last = {0};
  for (int i = 0; i < 20 && !ok; i++) {
    char hash[32];
    vgraph_free(&last);
    snprintf(hash, sizeof hash, "disk-back-%d", i);
    vgraph_make(&last, 200, 1000 + (uint64_t)i, PLANNER_ALGO_GREEDY_SIZE,
                hash);
    expect_plan(&h, &last, &f);
    Arenad__V1__StatsReply *sr = stats_of(&h, &keep);
    ok = sr->storage_ok;
    wire_free_response(keep);
  }
  ck_assert_msg(ok, "storage did not recover once space returned");
  ck_assert_int_eq(lookup_once(&h, &last, &f, &ls), 1);
  rss_peak(&f, &h);
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert(integrity_ok(db));
  ck_assert_uint_eq(f.failures, 0);
  ck_assert_uint_eq(f.wrong, 0);
  figs_report("disk_full", &f, NULL);
  vgraph_free(&last);
  vgraph_free(&g0);
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

static void unlink_db(const char *db)
{
  char p[600];
  unlink(db);
  snprintf(p, sizeof p, "%s-wal", db);
  unlink(p);
  snprintf(p, sizeof p, "%s-shm", db);
  unlink(p);
}

START_TEST(test_tamper)
{
  if (skipped("tamper"))
    return;
  struct figs f = {0};
  struct harness h;
  setup(&h, NULL, "[cache]\nmemory_entries = 2\n");
  struct vgraph g[8];
  for (int i = 0; i < 8; i++) {
    char hash[32];
    snprintf(hash, sizeof hash, "tamper-%d", i);
    vgraph_make(&g[i], 300, 50 + (uint64_t)i, PLANNER_ALGO_GREEDY_SIZE, hash);
  }
  Arenad__V1__Status ls;
  Arenad__V1__Response *keep;

  /* Removed while running: the daemon keeps using the open (unlinked)
   * file until it restarts, then starts a fresh one. */
  ck_assert_int_eq(start(&h), 0);
  expect_plan(&h, &g[0], &f);
  unlink_db(h.db);
  f.bad_inputs++;
  expect_plan(&h, &g[1], &f);
  ck_assert_int_eq(lookup_once(&h, &g[0], &f, &ls), 1);
  stats_of(&h, &keep);
  wire_free_response(keep);
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert_int_eq(start(&h), 0);
  ck_assert_int_eq(lookup_once(&h, &g[0], &f, &ls), 0);
  ck_assert_int_eq(ls, ARENAD__V1__STATUS__NOT_FOUND);
  expect_plan(&h, &g[0], &f);
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert(integrity_ok(h.db));

  /* Read-only (as an unprivileged daemon, since root ignores modes): the
   * daemon starts, serves and plans, reports the failing writes. */
  if (geteuid() == 0) {
    ck_assert_int_eq(chown(h.dir, NOBODY, NOBODY), 0);
    ck_assert_int_eq(chmod(h.db, 0444), 0);
    ck_assert_int_eq(chmod(h.log, 0666), 0);
    ck_assert_int_eq(start_as(&h, NOBODY, NOBODY, h.dir), 0);
    f.bad_inputs++;
    expect_plan(&h, &g[2], &f);
    expect_plan(&h, &g[0], &f);
    (void)lookup_once(&h, &g[0], &f, &ls);
    Arenad__V1__StatsReply *sr = stats_of(&h, &keep);
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
  ck_assert_int_eq(start(&h), 0);
  expect_plan(&h, &g[3], &f);
  overwrite_garbage(h.db, 1);
  f.bad_inputs++;
  expect_plan(&h, &g[4], &f);
  expect_plan(&h, &g[3], &f);
  expect_plan(&h, &g[0], &f);
  (void)lookup_once(&h, &g[3], &f, &ls);
  Arenad__V1__StatsReply *sr = stats_of(&h, &keep);
  printf("reliability: tamper: garbage in place: storage_ok=%d "
         "storage_error='%s' lookup status %s\n",
         sr->storage_ok, sr->storage_error, wire_status_name(ls));
  wire_free_response(keep);
  ck_assert(ping_ok(&h));
  /* ...and replaced by another garbage file (a new inode). */
  overwrite_garbage(h.db, 0);
  f.bad_inputs++;
  expect_plan(&h, &g[5], &f);
  ck_assert(ping_ok(&h));
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert_int_eq(start(&h), 0);
  ck_assert_int_ge(count_prefix(h.dir, "cache.db."), 1);
  expect_plan(&h, &g[3], &f);
  expect_plan(&h, &g[6], &f);
  ck_assert_int_eq(lookup_once(&h, &g[6], &f, &ls), 1);
  rss_peak(&f, &h);
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert(integrity_ok(h.db));
  figs_report("tamper", &f, NULL);
  ck_assert_uint_eq(f.failures, 0);
  ck_assert_uint_eq(f.wrong, 0);
  for (int i = 0; i < 8; i++)
    vgraph_free(&g[i]);
  hn_cleanup(&h);
}
END_TEST

/* ---- fallback: the daemon dies under 16 waiting library clients ---------- */

#define FB_CLIENTS 16

struct fb_shared {
  int rc[FB_CLIENTS];          /* arenad_client_plan result */
  int local[FB_CLIENTS];       /* result.local */
  int verified[FB_CLIENTS];    /* plan checked against the graph */
  double done_ms[FB_CLIENTS];  /* CLOCK_MONOTONIC when the call returned */
  double local_ms[FB_CLIENTS]; /* time spent planning locally */
};

static void fb_client(const struct harness *h, struct fb_shared *sh,
                      unsigned c, uint32_t timeout_ms)
{
  struct vgraph v;
  char hash[32];
  snprintf(hash, sizeof hash, "fallback-%u", c);
  /* exact with a budget: each job holds a worker for a while */
  vgraph_make(&v, 300, 900 + c, PLANNER_ALGO_EXACT, hash);
  v.o.budget_ms = 3000; /* stopped by work units well before this */
  struct arenad_client_options co;
  arenad_client_options_init(&co);
  co.socket_path = h->sock;
  co.connect_timeout_ms = 500;
  co.request_timeout_ms = timeout_ms;
  co.fallback = c % 2 == 0;
  arenad_client_t *cl = NULL;
  if (arenad_client_open(&co, &cl) != 0)
    _exit(2);
  struct arenad_model_key k = {(const uint8_t *)hash, strlen(hash), NULL, 0};
  struct planner_graph pg = {v.g.t, v.g.n};
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  sh->rc[c] = arenad_client_plan(cl, &pg, &v.o, &k, &r);
  sh->done_ms[c] = now_ms();
  sh->local[c] = r.local;
  sh->local_ms[c] = r.local ? (double)r.planning_us / 1e3 : 0;
  sh->verified[c] =
      sh->rc[c] == 0 && planner_verify(&pg, &v.o, &r.plan, NULL) == 0;
  arenad_client_result_cleanup(&r);
  arenad_client_close(cl);
  vgraph_free(&v);
}

START_TEST(test_fallback_on_kill)
{
  if (skipped("fallback"))
    return;
  const uint32_t timeout_ms = 5000;
  struct figs f = {0};
  struct harness h;
  setup(&h, NULL, "workers = 1\n");
  ck_assert_int_eq(start(&h), 0);
  struct fb_shared *sh = shared_new(sizeof *sh);
  pid_t kids[FB_CLIENTS];
  for (unsigned c = 0; c < FB_CLIENTS; c++) {
    kids[c] = fork();
    ck_assert_int_ge(kids[c], 0);
    if (kids[c] == 0) {
      fb_client(&h, sh, c, timeout_ms);
      _exit(0);
    }
  }
  sleep_ms(400); /* every client has sent; one job runs, the rest queue */
  rss_peak(&f, &h);
  double killed = now_ms();
  kill9(&h);
  f.crashes++;
  double worst_wait = 0;
  unsigned mid = 0;  /* clients still waiting when the daemon died */
  unsigned n_unavail = 0, n_proto = 0, n_other = 0; /* fallback off */
  for (unsigned c = 0; c < FB_CLIENTS; c++) {
    ck_assert_int_eq(wait_child(kids[c]), 0);
    if (sh->done_ms[c] < killed ||
        (sh->rc[c] == 0 && !sh->local[c])) {
      /* answered by the daemon (before the kill, or sent just before it
       * and read just after): it must be a verified plan */
      ck_assert(sh->rc[c] == 0 && !sh->local[c] && sh->verified[c]);
      f.requests++;
      continue;
    }
    mid++;
    /* time from the kill to the call returning, local planning excluded */
    double wait = sh->done_ms[c] - killed - sh->local_ms[c];
    if (wait > worst_wait)
      worst_wait = wait;
    ck_assert_msg(wait < timeout_ms, "client %u waited %.0f ms", c, wait);
    if (c % 2 == 0) {
      /* fallback on: a verified local plan */
      ck_assert_msg(sh->rc[c] == 0 && sh->local[c] && sh->verified[c],
                    "client %u: rc %d local %d", c, sh->rc[c], sh->local[c]);
      f.requests++;
    } else {
      /* fallback off: a clean error, no plan */
      n_unavail += sh->rc[c] == ARENA_EUNAVAIL;
      n_proto += sh->rc[c] == ARENA_EPROTO;
      n_other += sh->rc[c] != ARENA_EUNAVAIL && sh->rc[c] != ARENA_EPROTO;
      ck_assert_msg(sh->rc[c] == ARENA_EUNAVAIL || sh->rc[c] == ARENA_EPROTO ||
                        sh->rc[c] == ARENA_ETIMEDOUT ||
                        sh->rc[c] == ARENA_EINTERNAL,
                    "client %u: rc %s", c, arena_err_name(sh->rc[c]));
    }
  }
  char extra[200];
  snprintf(extra, sizeof extra,
           "mid_request_at_kill=%u worst_wait_after_kill_ms=%.0f "
           "no_fallback_eunavail=%u no_fallback_eproto=%u "
           "no_fallback_other=%u",
           mid, worst_wait, n_unavail, n_proto, n_other);
  figs_report("fallback", &f, extra);
  ck_assert_uint_ge(mid, FB_CLIENTS / 2);
  munmap(sh, sizeof *sh);
  hn_cleanup(&h);
}
END_TEST

/* ---- flood: connections past max_connections ----------------------------- */

START_TEST(test_connection_flood)
{
  if (skipped("flood"))
    return;
  unsigned flood = scaled(200, 900);
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < flood + 64) {
    rl.rlim_cur = rl.rlim_max < flood + 64 ? rl.rlim_max : flood + 64;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (flood + 64 > rl.rlim_cur)
      flood = (unsigned)rl.rlim_cur - 64;
  }
  struct figs f = {0};
  struct harness h;
  setup(&h, NULL, "[limits]\nmax_connections = 32\n");
  ck_assert_int_eq(start(&h), 0);
  struct vgraph v;
  vgraph_make(&v, 500, 3, PLANNER_ALGO_GREEDY_SIZE, "flood");
  int est = hn_connect(&h);
  ck_assert_int_ge(est, 0);
  ck_assert_int_eq(send_plan(est, 1, &v), 0);
  Arenad__V1__Response *r = hn_recv(est, 10000);
  ck_assert_int_eq(classify(r, &v), 0);
  wire_free_response(r);

  int *fds = calloc(flood, sizeof *fds);
  unsigned busy = 0, refused = 0, open_ok = 0;
  double worst = 0;
  for (unsigned i = 0; i < flood; i++) {
    fds[i] = hn_connect(&h);
    if (fds[i] < 0) {
      refused++; /* the listen backlog overflowed: also clean */
      continue;
    }
    f.bad_inputs++;
    /* every tenth flood connection, the established client is served */
    if (i % 10 == 0) {
      double t0 = now_ms();
      ck_assert_int_eq(send_plan(est, 2 + i, &v), 0);
      r = hn_recv(est, 10000);
      ck_assert_int_eq(classify(r, &v), 0);
      wire_free_response(r);
      f.requests++;
      if (now_ms() - t0 > worst)
        worst = now_ms() - t0;
    }
  }
  /* past the limit: one BUSY reply, then the daemon hangs up */
  for (unsigned i = 0; i < flood; i++) {
    if (fds[i] < 0)
      continue;
    struct pollfd p = {fds[i], POLLIN, 0};
    if (poll(&p, 1, i < 40 ? 50 : 2000) > 0) {
      r = hn_recv(fds[i], 2000);
      if (r && r->status == ARENAD__V1__STATUS__BUSY) {
        busy++;
        ck_assert(hn_wait_closed(fds[i], 2000));
      }
      wire_free_response(r);
    } else {
      open_ok++;
    }
  }
  rss_peak(&f, &h);
  ck_assert_uint_le(open_ok, 32);
  ck_assert_uint_ge(busy + refused, flood - 32);
  for (unsigned i = 0; i < flood; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  free(fds);
  /* still served, and the counter matches */
  ck_assert_int_eq(send_plan(est, 9999, &v), 0);
  r = hn_recv(est, 10000);
  ck_assert_int_eq(classify(r, &v), 0);
  wire_free_response(r);
  close(est);
  Arenad__V1__Response *keep;
  Arenad__V1__StatsReply *sr = stats_of(&h, &keep);
  ck_assert_uint_ge(sr->busy_rejections, busy);
  wire_free_response(keep);
  ck_assert_int_eq(hn_stop(&h), 0);
  char extra[160];
  snprintf(extra, sizeof extra,
           "flood=%u busy=%u backlog_refused=%u served_while_flooded=%" PRIu64
           " worst_ms=%.1f",
           flood, busy, refused, f.requests, worst);
  figs_report("flood", &f, extra);
  vgraph_free(&v);
  hn_cleanup(&h);
}
END_TEST

/* ---- slow clients ------------------------------------------------------------ */

/* Whether fd was closed by the peer within timeout_ms while we keep
 * trickling one byte every step_ms. Sets *after_ms. */
static int closed_while_trickling(int fd, int timeout_ms, int step_ms,
                                  double *after_ms)
{
  double t0 = now_ms();
  while (now_ms() - t0 < timeout_ms) {
    char b = 'x', buf[256];
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, step_ms) > 0) {
      ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) {
        *after_ms = now_ms() - t0;
        return 1;
      }
    }
    if (send(fd, &b, 1, MSG_NOSIGNAL) < 0 && errno == EPIPE) {
      *after_ms = now_ms() - t0;
      return 1;
    }
  }
  return 0;
}

START_TEST(test_slow_clients)
{
  if (skipped("slow"))
    return;
  struct figs f = {0};
  struct harness h;
  setup(&h, NULL,
        "[limits]\nwrite_queue_bytes = 256K\nidle_timeout_ms = 500\n");
  ck_assert_int_eq(start(&h), 0);
  struct vgraph big, small;
  vgraph_make(&big, 5000, 11, PLANNER_ALGO_GREEDY_SIZE, "slow-big");
  vgraph_make(&small, 100, 12, PLANNER_ALGO_GREEDY_SIZE, "slow-small");
  expect_plan(&h, &big, &f);
  expect_plan(&h, &small, &f);
  int sanitized = daemon_sanitized(&h);
  long rss0 = hn_rss_kib(&h);

  /* A client that pipelines requests for a large plan and never reads.
   * Its socket fills, the daemon stops reading from it, and its queue
   * stays near write_queue_bytes. */
  int slow = hn_connect(&h);
  ck_assert_int_ge(slow, 0);
  uint8_t *frame;
  size_t frame_len;
  {
    Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
    Arenad__V1__Plan pm;
    Arenad__V1__PlanOptions po;
    struct planner_graph pg = {big.g.t, big.g.n};
    ck_assert_int_eq(wire_plan_msg_init(&pm, &po, &pg, &big.o,
                                        (const uint8_t *)big.hash,
                                        strlen(big.hash), NULL, 0),
                     0);
    req.protocol_version = WIRE_PROTOCOL_VERSION;
    req.request_id = 77;
    req.body_case = ARENAD__V1__REQUEST__BODY_PLAN;
    req.plan = &pm;
    ck_assert_int_eq(wire_pack(&req.base, 1u << 30, &frame, &frame_len), 0);
    wire_plan_msg_cleanup(&pm);
  }
  unsigned sent = 0;
  size_t partial = 0;
  double t0 = now_ms(), stuck_since = 0;
  while (sent < 4000 && now_ms() - t0 < 10000) {
    ssize_t n = send(slow, frame + partial, frame_len - partial,
                     MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      partial += (size_t)n;
      stuck_since = 0;
      if (partial == frame_len) {
        partial = 0;
        sent++;
      }
      continue;
    }
    ck_assert(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    if (stuck_since == 0)
      stuck_since = now_ms();
    else if (now_ms() - stuck_since > 500)
      break; /* the daemon stopped reading from us */
    sleep_ms(5);
  }
  f.bad_inputs++;
  /* Others are served promptly meanwhile. */
  double worst = 0;
  int fd = hn_connect(&h);
  ck_assert_int_ge(fd, 0);
  for (int i = 0; i < 100; i++) {
    double s0 = now_ms();
    ck_assert_int_eq(send_plan(fd, (uint64_t)i + 1, i % 2 ? &big : &small),
                     0);
    Arenad__V1__Response *r = hn_recv(fd, 10000);
    ck_assert_int_eq(classify(r, i % 2 ? &big : &small), 0);
    wire_free_response(r);
    f.requests++;
    if (now_ms() - s0 > worst)
      worst = now_ms() - s0;
  }
  close(fd);
  long rss_stalled = hn_rss_kib(&h);
  rss_peak(&f, &h);
  ck_assert_msg(worst < 2000, "a client waited %.0f ms behind a slow reader",
                worst);
  /* The stalled client costs at most its queue, the in-flight replies and
   * socket buffers: well under 64 MiB here (each reply is ~20 KB). */
  if (!sanitized)
    ck_assert_int_lt(rss_stalled - rss0, 64 * 1024);
  close(slow);
  free(frame);

  /* A client that never sends is closed at the idle timeout. */
  double after = 0;
  int idle = hn_connect(&h);
  ck_assert_int_ge(idle, 0);
  ck_assert(hn_wait_closed(idle, 3000));
  close(idle);
  f.bad_inputs++;

  /* A client that trickles a frame, one byte every 100 ms, never
   * completing it, is closed too: bytes without a complete request do not
   * count as activity. */
  int loris = hn_connect(&h);
  ck_assert_int_ge(loris, 0);
  ck_assert_int_eq(hn_send_raw(loris, "\0\0\x04\0", 4), 0);
  int closed = closed_while_trickling(loris, 5000, 100, &after);
  close(loris);
  f.bad_inputs++;
  ck_assert_msg(closed, "a trickling client was never closed");
  ck_assert(ping_ok(&h));
  ck_assert_int_eq(hn_stop(&h), 0);
  char extra[200];
  snprintf(extra, sizeof extra,
           "slow_reader_requests_sent=%u stalled_rss_growth_kib=%ld "
           "worst_other_ms=%.1f trickler_closed_after_ms=%.0f",
           sent, rss_stalled - rss0, worst, after);
  figs_report("slow", &f, extra);
  vgraph_free(&big);
  vgraph_free(&small);
  hn_cleanup(&h);
}
END_TEST

/* ---- abusive requests ------------------------------------------------------- */

/* Waits for one reply on fd, sampling the daemon's RSS every 50 ms. */
static Arenad__V1__Response *recv_sampling(const struct harness *h, int fd,
                                           int timeout_ms, struct figs *f)
{
  double t0 = now_ms();
  while (now_ms() - t0 < timeout_ms) {
    struct pollfd p = {fd, POLLIN, 0};
    rss_peak(f, h);
    if (poll(&p, 1, 50) > 0)
      return hn_recv(fd, timeout_ms);
  }
  return NULL;
}

START_TEST(test_abusive_requests)
{
  if (skipped("abusive"))
    return;
  const size_t max_frame = 16u << 20;
  size_t huge = scaled(100000, 1000000);
  unsigned repeats = scaled(5000, 100000);
  struct figs f = {0};
  struct harness h;
  setup(&h, NULL, NULL); /* the shipped limits */
  ck_assert_int_eq(start(&h), 0);
  ck_assert(ping_ok(&h));
  int sanitized = daemon_sanitized(&h);
  long rss_base = hn_rss_kib(&h);

  /* A very large graph, planned with the default algorithm. */
  struct vgraph v;
  vgraph_make(&v, huge, 5, PLANNER_ALGO_BEST, "abuse-huge");
  double t0 = now_ms();
  int fd = hn_connect(&h);
  ck_assert_int_eq(send_plan(fd, 1, &v), 0);
  Arenad__V1__Response *r = recv_sampling(&h, fd, 600000, &f);
  int res = classify(r, &v);
  wire_free_response(r);
  close(fd);
  double huge_ms = now_ms() - t0;
  long huge_peak = f.peak_rss_kib;
  ck_assert_int_eq(res, 0);
  f.requests++;
  f.bad_inputs++;

  sleep_ms(500);
  long huge_after = hn_rss_kib(&h); /* what the daemon keeps afterwards */

  /* Maximum-size frames: garbage, a ping echo, and one byte too many,
   * measured on a fresh daemon. */
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert_int_eq(start(&h), 0);
  f.peak_rss_kib = hn_rss_kib(&h); /* this part's own peak */
  uint8_t *blob = malloc(max_frame + 4);
  ck_assert_ptr_nonnull(blob);
  int fds[4];
  for (int i = 0; i < 4; i++) {
    memset(blob, 0xff, max_frame + 4);
    blob[0] = (uint8_t)(max_frame >> 24);
    blob[1] = (uint8_t)(max_frame >> 16);
    blob[2] = (uint8_t)(max_frame >> 8);
    blob[3] = (uint8_t)max_frame;
    fds[i] = hn_connect(&h);
    ck_assert_int_eq(hn_send_raw(fds[i], blob, max_frame + 4), 0);
    f.bad_inputs++;
  }
  for (int i = 0; i < 4; i++) {
    r = recv_sampling(&h, fds[i], 30000, &f);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->status, ARENAD__V1__STATUS__INVALID_ARGUMENT);
    wire_free_response(r);
    ck_assert(hn_wait_closed(fds[i], 5000));
    close(fds[i]);
  }
  memset(blob, 'p', max_frame);
  fd = hn_connect(&h);
  ck_assert_int_eq(send_ping(fd, 2, blob, max_frame - 64), 0);
  r = recv_sampling(&h, fd, 30000, &f);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  ck_assert_uint_eq(r->pong->payload.len, max_frame - 64);
  wire_free_response(r);
  /* one byte over the limit: refused from the 4 header bytes alone */
  size_t over = max_frame + 1;
  uint8_t hdr[8] = {(uint8_t)(over >> 24), (uint8_t)(over >> 16),
                    (uint8_t)(over >> 8), (uint8_t)over, 0x7a, 0, 0, 0};
  ck_assert_int_eq(hn_send_raw(fd, hdr, sizeof hdr), 0);
  r = hn_recv(fd, 30000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__TOO_LARGE);
  wire_free_response(r);
  close(fd);
  f.bad_inputs += 2;
  long frames_peak = f.peak_rss_kib;
  if (huge_peak > f.peak_rss_kib)
    f.peak_rss_kib = huge_peak;

  /* Connections that sent one large request and stay open must not keep
   * its buffer. */
  sleep_ms(200);
  long rss_before_idle = hn_rss_kib(&h);
  int keep[16];
  for (int i = 0; i < 16; i++) {
    keep[i] = hn_connect(&h);
    ck_assert_int_eq(send_ping(keep[i], 4, blob, 4u << 20), 0);
    r = hn_recv(keep[i], 30000);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
    wire_free_response(r);
    f.requests++;
  }
  sleep_ms(200);
  long retained = hn_rss_kib(&h) - rss_before_idle;
  for (int i = 0; i < 16; i++)
    close(keep[i]);
  free(blob);

  /* Deeply repeated identical requests: memory hits, flat RSS. */
  struct vgraph rep;
  vgraph_make(&rep, 200, 6, PLANNER_ALGO_GREEDY_SIZE, "abuse-repeat");
  expect_plan(&h, &rep, &f);
  long rss_rep0 = hn_rss_kib(&h);
  fd = hn_connect(&h);
  unsigned done = 0, sent = 0;
  while (done < repeats) {
    while (sent < repeats && sent - done < 16)
      ck_assert_int_eq(send_plan(fd, ++sent, &rep), 0);
    r = hn_recv(fd, 10000);
    int c = classify(r, &rep);
    wire_free_response(r);
    if (c == 0)
      f.requests++;
    else if (c == 1)
      f.wrong++;
    else
      f.failures++;
    done++;
  }
  close(fd);
  rss_peak(&f, &h);
  long rep_growth = hn_rss_kib(&h) - rss_rep0;
  Arenad__V1__Response *ks;
  Arenad__V1__StatsReply *sr = stats_of(&h, &ks);
  ck_assert_uint_ge(sr->memory_hits, repeats);
  wire_free_response(ks);
  ck_assert_int_eq(hn_stop(&h), 0);

  char extra[400];
  snprintf(extra, sizeof extra,
           "base_rss_kib=%ld huge_tensors=%zu huge_ms=%.0f "
           "huge_peak_rss_kib=%ld huge_bytes_per_tensor=%.0f "
           "huge_idle_after_kib=%ld "
           "max_frames_peak_rss_kib=%ld idle_after_4MiB_x16_retained_kib=%ld "
           "repeats=%u repeat_rss_growth_kib=%ld",
           rss_base, huge, huge_ms, huge_peak,
           (double)(huge_peak - rss_base) * 1024.0 / (double)huge,
           huge_after,
           frames_peak, retained, repeats, rep_growth);
  figs_report("abusive", &f, extra);
  ck_assert_uint_eq(f.failures, 0);
  ck_assert_uint_eq(f.wrong, 0);
  /* Sixteen idle connections that each sent 4 MiB keep no buffers: what
   * remains is the allocator's cache (about 8 to 13 MiB measured), which
   * does not grow with the number of connections; kept buffers would be
   * 8 MiB each, 128 MiB in all. */
  if (!sanitized) {
    ck_assert_int_lt(retained, 32 * 1024);
    ck_assert_int_lt(rep_growth, 8 * 1024);
  }
  vgraph_free(&rep);
  vgraph_free(&v);
  hn_cleanup(&h);
}
END_TEST

/* ---- cache poisoning: near-identical graphs under one hash ----------------- */

#define POISON_CLIENTS 3

struct poison_shared {
  uint64_t ok[POISON_CLIENTS];      /* verified plans and lookups */
  uint64_t wrong[POISON_CLIENTS];   /* a plan wrong for the client's graph */
  uint64_t foreign[POISON_CLIENTS]; /* others' plans seen in lookups */
  uint64_t failed[POISON_CLIENTS];  /* errors */
};

/* Three graphs that differ in one detail each, all sent as model "H". */
static void poison_graph(struct vgraph *v, unsigned c)
{
  vgraph_make(v, 120, 31, PLANNER_ALGO_GREEDY_SIZE, "H");
  if (c == 1)
    v->g.t[40].last += 5; /* one lifetime longer */
  if (c == 2)
    v->g.t[7].size += 4096; /* one tensor larger */
  struct planner_graph pg = {v->g.t, v->g.n};
  ck_assert_int_eq(planner_graph_digest(&pg, v->gd), 0);
}

static void poison_client(const struct harness *h, struct poison_shared *sh,
                          unsigned c, unsigned rounds)
{
  struct vgraph v;
  poison_graph(&v, c);
  struct arenad_client_options co;
  arenad_client_options_init(&co);
  co.socket_path = h->sock;
  co.fallback = 0;
  arenad_client_t *cl = NULL;
  if (arenad_client_open(&co, &cl) != 0)
    _exit(2);
  struct arenad_model_key k = {(const uint8_t *)"H", 1, NULL, 0};
  struct planner_graph pg = {v.g.t, v.g.n};
  int fd = hn_connect(h);
  for (unsigned i = 0; i < rounds && fd >= 0; i++) {
    /* raw Plan: the reply must carry our digest and verify */
    Arenad__V1__Response *r = NULL;
    int res = send_plan(fd, 2 * i + 1, &v) == 0
                  ? classify(r = hn_recv(fd, 10000), &v)
                  : -1;
    wire_free_response(r);
    if (res == 0)
      sh->ok[c]++;
    else if (res == 1)
      sh->wrong[c]++;
    else
      sh->failed[c]++;
    /* raw Lookup by the hash alone: every plan carries a digest; ours
     * verifies, the others' are recognisable by theirs */
    r = send_lookup(fd, 2 * i + 2, "H", NULL) == 0 ? hn_recv(fd, 10000) : NULL;
    if (!r || r->status != ARENAD__V1__STATUS__OK) {
      sh->failed[c]++;
    } else {
      for (size_t p = 0; p < r->lookup->n_plans; p++) {
        const Arenad__V1__PlanReply *pr = r->lookup->plans[p];
        if (pr->graph_digest.len != PLANNER_DIGEST_LEN)
          sh->wrong[c]++;
        else if (memcmp(pr->graph_digest.data, v.gd, PLANNER_DIGEST_LEN))
          sh->foreign[c]++;
        else if (reply_wrong(pr, &v))
          sh->wrong[c]++;
      }
    }
    wire_free_response(r);
    /* through the library: it picks our plan by digest and verifies */
    struct arenad_client_result res2;
    arenad_client_result_init(&res2);
    int rc = arenad_client_lookup(cl, &k, &pg, &v.o, &res2);
    if (rc == 0 && planner_verify(&pg, &v.o, &res2.plan, NULL) == 0 &&
        memcmp(res2.graph_digest, v.gd, PLANNER_DIGEST_LEN) == 0)
      sh->ok[c]++;
    else if (rc == ARENA_EVERIFY || rc == 0)
      sh->wrong[c]++;
    else
      sh->failed[c]++;
    arenad_client_result_cleanup(&res2);
  }
  if (fd < 0)
    sh->failed[c]++;
  else
    close(fd);
  arenad_client_close(cl);
  vgraph_free(&v);
}

START_TEST(test_cache_poisoning)
{
  if (skipped("poison"))
    return;
  unsigned rounds = scaled(40, 1000);
  struct figs f = {0};
  struct harness h;
  setup(&h, NULL, NULL);
  ck_assert_int_eq(start(&h), 0);
  struct poison_shared *sh = shared_new(sizeof *sh);
  pid_t kids[POISON_CLIENTS];
  for (unsigned c = 0; c < POISON_CLIENTS; c++) {
    kids[c] = fork();
    ck_assert_int_ge(kids[c], 0);
    if (kids[c] == 0) {
      poison_client(&h, sh, c, rounds);
      _exit(0);
    }
  }
  for (unsigned c = 0; c < POISON_CLIENTS; c++)
    ck_assert_int_eq(wait_child(kids[c]), 0);
  uint64_t foreign = 0;
  for (unsigned c = 0; c < POISON_CLIENTS; c++) {
    f.requests += sh->ok[c];
    f.wrong += sh->wrong[c];
    f.failures += sh->failed[c];
    foreign += sh->foreign[c];
    f.bad_inputs += rounds;
  }
  /* A graph that was never sent gets nothing from the library, although
   * three plans are stored under its hash. */
  struct vgraph x;
  vgraph_make(&x, 120, 99, PLANNER_ALGO_GREEDY_SIZE, "H");
  struct arenad_client_options co;
  arenad_client_options_init(&co);
  co.socket_path = h.sock;
  co.fallback = 0;
  arenad_client_t *cl = NULL;
  ck_assert_int_eq(arenad_client_open(&co, &cl), 0);
  struct arenad_model_key k = {(const uint8_t *)"H", 1, NULL, 0};
  struct planner_graph pg = {x.g.t, x.g.n};
  struct arenad_client_result rr;
  arenad_client_result_init(&rr);
  ck_assert_int_eq(arenad_client_lookup(cl, &k, &pg, &x.o, &rr),
                   ARENA_ENOENT);
  arenad_client_result_cleanup(&rr);
  arenad_client_close(cl);
  vgraph_free(&x);
  rss_peak(&f, &h);
  ck_assert_int_eq(hn_stop(&h), 0);
  char extra[96];
  snprintf(extra, sizeof extra, "foreign_plans_seen_in_lookups=%" PRIu64,
           foreign);
  figs_report("poison", &f, extra);
  ck_assert_uint_eq(f.wrong, 0);
  ck_assert_uint_eq(f.failures, 0);
  ck_assert_uint_gt(foreign, 0); /* the lookups did see the others' plans */
  munmap(sh, sizeof *sh);
  hn_cleanup(&h);
}
END_TEST

/* ---- access: socket mode, allow-lists, paths ------------------------------- */

enum { AC_EACCES = 10, AC_DENIED = 11, AC_SERVED = 12, AC_OTHER = 13 };

/* Connects as uid/gid in a child and reports what happened. */
static int access_as(const struct harness *h, uid_t uid, gid_t gid)
{
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
        setresuid(uid, uid, uid) != 0)
      _exit(AC_OTHER);
    int fd = hn_connect(h);
    if (fd < 0)
      _exit(errno == EACCES ? AC_EACCES : AC_OTHER);
    int out = AC_OTHER;
    /* A denied peer may find the socket closed before its request goes
     * out; the DENIED reply is waiting to be read all the same. */
    (void)send_ping(fd, 1, "a", 1);
    Arenad__V1__Response *r = hn_recv(fd, 5000);
    if (r && r->status == ARENAD__V1__STATUS__DENIED)
      out = AC_DENIED;
    else if (r && r->status == ARENAD__V1__STATUS__OK)
      out = AC_SERVED;
    wire_free_response(r);
    _exit(out);
  }
  return wait_child(pid);
}

/* Entries under dir (depth levels down) owned by uid and changed since
 * t0, skipping the subtree skip and every test harness directory (other
 * test runs may have their own unprivileged daemons). */
static int owned_since(const char *dir, uid_t uid, time_t t0, int depth,
                       const char *skip)
{
  DIR *d = opendir(dir);
  int n = 0;
  if (!d)
    return 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    char p[PATH_MAX];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (!strcmp(p, skip) || !strncmp(e->d_name, "arenad-test-", 12) ||
        lstat(p, &sb) != 0)
      continue;
    if (sb.st_uid == uid && sb.st_mtime >= t0) {
      printf("reliability: access: written outside the configured paths: "
             "%s\n",
             p);
      n++;
    }
    if (S_ISDIR(sb.st_mode) && depth > 0)
      n += owned_since(p, uid, t0, depth - 1, skip);
  }
  closedir(d);
  return n;
}

START_TEST(test_access)
{
  if (skipped("access"))
    return;
  struct figs f = {0};
  if (geteuid() != 0) {
    printf("reliability: access skipped: needs root for a second user\n");
    return;
  }
  struct harness h;
  setup(&h, NULL, "[access]\nallow_uids = 0\n");
  ck_assert_int_eq(chmod(h.dir, 0711), 0);
  ck_assert_int_eq(start(&h), 0);
  struct stat sb;
  ck_assert_int_eq(stat(h.sock, &sb), 0);
  ck_assert_int_eq(sb.st_mode & 0777, 0660);
  ck_assert_int_eq(access_as(&h, NOBODY, NOBODY), AC_EACCES);
  ck_assert_int_eq(access_as(&h, NOBODY, 0), AC_DENIED);
  ck_assert_int_eq(access_as(&h, 0, 0), AC_SERVED);
  f.bad_inputs += 2;
  /* allow the group too: served after SIGHUP */
  write_conf(&h, NULL, "[access]\nallow_uids = 0\nallow_gids = 0\n");
  kill(h.pid, SIGHUP);
  int served = 0;
  for (int i = 0; i < 50 && !served; i++) {
    served = access_as(&h, NOBODY, 0) == AC_SERVED;
    if (!served)
      sleep_ms(50);
  }
  ck_assert(served);
  Arenad__V1__Response *keep;
  Arenad__V1__StatsReply *sr = stats_of(&h, &keep);
  ck_assert_uint_ge(sr->denied, 1);
  wire_free_response(keep);
  ck_assert_int_eq(hn_stop(&h), 0);

  /* An unprivileged daemon with an empty working directory: after a
   * workload, only the configured files exist, and nothing owned by its
   * user appeared in the shared temporary directories. */
  time_t t0 = time(NULL);
  char cwd[400];
  snprintf(cwd, sizeof cwd, "%s/cwd", h.dir);
  ck_assert_int_eq(mkdir(cwd, 0755), 0);
  ck_assert_int_eq(chown(cwd, NOBODY, NOBODY), 0);
  ck_assert_int_eq(chown(h.dir, NOBODY, NOBODY), 0);
  unlink_db(h.db);
  write_conf(&h, NULL, "");
  ck_assert_int_eq(chmod(h.log, 0666), 0);
  ck_assert_int_eq(start_as(&h, NOBODY, NOBODY, cwd), 0);
  for (int i = 0; i < 20; i++) {
    struct vgraph v;
    char hash[32];
    snprintf(hash, sizeof hash, "access-%d", i % 5);
    vgraph_make(&v, 2000, (uint64_t)i, PLANNER_ALGO_BEST, hash);
    expect_plan(&h, &v, &f);
    Arenad__V1__Status ls;
    (void)lookup_once(&h, &v, &f, &ls);
    vgraph_free(&v);
  }
  int fd = hn_connect(&h);
  ck_assert_int_eq(send_evict_model(fd, 1, "access-1"), 0);
  Arenad__V1__Response *r = hn_recv(fd, 5000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  wire_free_response(r);
  close(fd);
  rss_peak(&f, &h);
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert_int_eq(count_prefix(cwd, ""), 2); /* "." and ".." */
  DIR *d = opendir(h.dir);
  for (struct dirent *e; (e = readdir(d));) {
    const char *n = e->d_name;
    ck_assert_msg(!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "cwd") ||
                      !strcmp(n, "arenad.conf") ||
                      !strcmp(n, "arenad.log") ||
                      !strncmp(n, "cache.db", 8),
                  "unexpected file %s", n);
  }
  closedir(d);
  char real[PATH_MAX];
  ck_assert_ptr_nonnull(realpath(h.dir, real));
  int outside = owned_since("/tmp", NOBODY, t0, 2, real) +
                owned_since("/var/tmp", NOBODY, t0, 2, real) +
                owned_since("/dev/shm", NOBODY, t0, 2, real);
  ck_assert_int_eq(outside, 0);
  ck_assert_int_eq(chown(h.dir, 0, 0), 0);
  figs_report("access", &f, NULL);
  ck_assert_uint_eq(f.failures, 0);
  ck_assert_uint_eq(f.wrong, 0);
  hn_cleanup(&h);
}
END_TEST

/* ---- soak: 64 clients, mixed requests, RSS every second ---------------------- */

#define SOAK_CLIENTS 64
#define SOAK_POOL 32
#define SOAK_MAX_SAMPLES 3600

enum { OP_HIT, OP_MISS, OP_LOOKUP, OP_STATS, OP_EVICT, OP__N };
static const char *const op_names[OP__N] = {"hit", "miss", "lookup", "stats",
                                            "evict"};

struct soak_shared {
  uint64_t ok[SOAK_CLIENTS];
  uint64_t failed[SOAK_CLIENTS];
  uint64_t wrong[SOAK_CLIENTS];
  uint64_t not_found[SOAK_CLIENTS];
  /* followed by lat_us[SOAK_CLIENTS * per] and op[SOAK_CLIENTS * per] */
};

static void pool_graph(struct vgraph *v, unsigned j)
{
  char hash[32];
  snprintf(hash, sizeof hash, "pool-%u", j);
  vgraph_make(v, 50 + (size_t)j * 11, 5000 + j, PLANNER_ALGO_GREEDY_SIZE,
              hash);
}

static void soak_client(const struct harness *h, struct soak_shared *sh,
                        uint32_t *lat, uint8_t *ops, unsigned c,
                        unsigned per)
{
  uint64_t rng = 0x9e3779b97f4a7c15ull * (c + 1);
  struct vgraph pool[SOAK_POOL];
  for (unsigned j = 0; j < SOAK_POOL; j++)
    pool_graph(&pool[j], j);
  int fd = hn_connect(h);
  if (fd < 0)
    _exit(3);
  for (unsigned i = 0; i < per; i++) {
    unsigned roll = (unsigned)tu_rand_range(&rng, 0, 99);
    int op = roll < 60   ? OP_HIT
             : roll < 75 ? OP_MISS
             : roll < 90 ? OP_LOOKUP
             : roll < 98 ? OP_STATS
                         : OP_EVICT;
    struct vgraph *v = &pool[tu_rand_range(&rng, 0, SOAK_POOL - 1)];
    struct vgraph miss;
    int sent;
    double t0 = now_ms();
    if (op == OP_MISS) {
      char hash[48];
      snprintf(hash, sizeof hash, "miss-c%u-i%u", c, i);
      vgraph_make(&miss, (size_t)tu_rand_range(&rng, 30, 150),
                  (uint64_t)c << 32 | i,
                  (int)tu_rand_range(&rng, PLANNER_ALGO_NAIVE,
                                     PLANNER_ALGO_GREEDY_BREADTH),
                  hash);
      v = &miss;
    }
    if (op == OP_HIT || op == OP_MISS)
      sent = send_plan(fd, i + 1, v);
    else if (op == OP_LOOKUP)
      sent = send_lookup(fd, i + 1, v->hash, v->gd);
    else if (op == OP_STATS)
      sent = send_stats(fd, i + 1);
    else
      sent = send_evict_model(fd, i + 1, v->hash);
    Arenad__V1__Response *r = sent == 0 ? hn_recv(fd, 30000) : NULL;
    lat[i] = (uint32_t)((now_ms() - t0) * 1e3);
    ops[i] = (uint8_t)op;
    if (!r || r->request_id != i + 1) {
      sh->failed[c]++;
    } else if (op == OP_HIT || op == OP_MISS) {
      int res = classify(r, v);
      if (res == 0)
        sh->ok[c]++;
      else if (res == 1)
        sh->wrong[c]++;
      else
        sh->failed[c]++;
    } else if (op == OP_LOOKUP && r->status == ARENAD__V1__STATUS__NOT_FOUND) {
      sh->not_found[c]++; /* not planned yet, or evicted: a clean answer */
      sh->ok[c]++;
    } else if (r->status != ARENAD__V1__STATUS__OK) {
      sh->failed[c]++;
    } else if (op == OP_LOOKUP) {
      int bad = r->lookup->n_plans == 0;
      for (size_t p = 0; p < r->lookup->n_plans; p++)
        bad |= reply_wrong(r->lookup->plans[p], v);
      if (bad)
        sh->wrong[c]++;
      else
        sh->ok[c]++;
    } else {
      sh->ok[c]++;
    }
    wire_free_response(r);
    if (op == OP_MISS)
      vgraph_free(&miss);
  }
  close(fd);
  for (unsigned j = 0; j < SOAK_POOL; j++)
    vgraph_free(&pool[j]);
}

static double pct(const uint32_t *sorted, size_t n, double q)
{
  if (n == 0)
    return 0;
  size_t k = (size_t)(q * (double)(n - 1) + 0.5);
  return sorted[k] / 1e3;
}

START_TEST(test_soak)
{
  if (skipped("soak"))
    return;
  unsigned per = scaled(40, 3200);
  size_t total = (size_t)SOAK_CLIENTS * per;
  struct figs f = {0};
  struct harness h;
  setup(&h, NULL, "workers = 2\n[cache]\nmemory_bytes = 8M\n");
  ck_assert_int_eq(start(&h), 0);
  int sanitized = daemon_sanitized(&h);
  size_t shlen = sizeof(struct soak_shared) + total * 5;
  struct soak_shared *sh = shared_new(shlen);
  uint32_t *lat = (uint32_t *)(sh + 1);
  uint8_t *ops = (uint8_t *)(lat + total);
  pid_t kids[SOAK_CLIENTS];
  double t0 = now_ms();
  for (unsigned c = 0; c < SOAK_CLIENTS; c++) {
    kids[c] = fork();
    ck_assert_int_ge(kids[c], 0);
    if (kids[c] == 0) {
      soak_client(&h, sh, lat + (size_t)c * per, ops + (size_t)c * per, c,
                  per);
      _exit(0);
    }
  }
  static long rss[SOAK_MAX_SAMPLES];
  size_t n_rss = 0;
  unsigned alive = SOAK_CLIENTS;
  double next = now_ms();
  while (alive) {
    if (now_ms() >= next && n_rss < SOAK_MAX_SAMPLES) {
      rss[n_rss++] = hn_rss_kib(&h);
      next += 1000;
    }
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                    "soak client died");
      alive--;
    } else {
      sleep_ms(20);
    }
  }
  double secs = (now_ms() - t0) / 1e3;
  rss[n_rss++] = hn_rss_kib(&h);
  uint64_t not_found = 0;
  for (unsigned c = 0; c < SOAK_CLIENTS; c++) {
    f.requests += sh->ok[c];
    f.failures += sh->failed[c];
    f.wrong += sh->wrong[c];
    not_found += sh->not_found[c];
  }
  Arenad__V1__Response *keep;
  Arenad__V1__StatsReply *sr = stats_of(&h, &keep);
  ck_assert_uint_ge(sr->requests, total);
  uint64_t hits = sr->memory_hits + sr->storage_hits, misses = sr->misses;
  wire_free_response(keep);
  ck_assert_int_eq(hn_stop(&h), 0);

  /* latency: all requests, then per kind */
  uint32_t *all = malloc(total * sizeof *all);
  memcpy(all, lat, total * sizeof *all);
  qsort(all, total, sizeof *all, cmp_u32);
  char perop[300] = "";
  size_t used = 0;
  for (int op = 0; op < OP__N; op++) {
    size_t k = 0;
    uint32_t *sel = malloc(total * sizeof *sel);
    for (size_t i = 0; i < total; i++)
      if (ops[i] == op)
        sel[k++] = lat[i];
    qsort(sel, k, sizeof *sel, cmp_u32);
    used += (size_t)snprintf(perop + used, sizeof perop - used,
                             " p99_%s_ms=%.2f", op_names[op],
                             pct(sel, k, 0.99));
    free(sel);
  }
  for (size_t i = 0; i < n_rss; i++)
    if (rss[i] > f.peak_rss_kib)
      f.peak_rss_kib = rss[i];
  /* warm-up: the first quarter of the run (at least 3 samples) */
  size_t warm = n_rss / 4 > 3 ? n_rss / 4 : (n_rss > 3 ? 3 : n_rss - 1);
  long growth = rss[n_rss - 1] - rss[warm];
  char extra[600];
  snprintf(extra, sizeof extra,
           "clients=%d total=%zu seconds=%.1f req_per_s=%.0f "
           "daemon_hits=%" PRIu64 " daemon_misses=%" PRIu64
           " lookup_not_found=%" PRIu64
           " p50_ms=%.2f p99_ms=%.2f max_ms=%.2f%s rss_samples=%zu "
           "rss_after_warmup_kib=%ld rss_end_kib=%ld rss_growth_kib=%ld",
           SOAK_CLIENTS, total, secs, (double)total / secs, hits, misses,
           not_found, pct(all, total, 0.5), pct(all, total, 0.99),
           all[total - 1] / 1e3, perop, n_rss, rss[warm], rss[n_rss - 1],
           growth);
  figs_report("soak", &f, extra);
  free(all);
  ck_assert_uint_eq(f.failures, 0);
  ck_assert_uint_eq(f.wrong, 0);
  ck_assert_uint_eq(f.requests, total);
  if (full_mode() && !sanitized)
    ck_assert_msg(growth < 32 * 1024, "RSS grew %ld KiB after warm-up",
                  growth);
  munmap(sh, shlen);
  hn_cleanup(&h);
}
END_TEST

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
  printf("\nreliability summary (%s counts)\n", full_mode() ? "full" : "CI");
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
  tcase_set_timeout(tc, full_mode() ? 3600 : 180);
  tcase_add_test(tc, test_crash_kill_loop);
  tcase_add_test(tc, test_disk_full);
  tcase_add_test(tc, test_tamper);
  tcase_add_test(tc, test_fallback_on_kill);
  tcase_add_test(tc, test_connection_flood);
  tcase_add_test(tc, test_slow_clients);
  tcase_add_test(tc, test_abusive_requests);
  tcase_add_test(tc, test_cache_poisoning);
  tcase_add_test(tc, test_access);
  tcase_add_test(tc, test_soak);
  tcase_add_test(tc, test_summary);
  suite_add_tcase(s, tc);
  return s;
}

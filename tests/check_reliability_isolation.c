/*
 * check_reliability_isolation.c - the reliability suite's tests that
 * keep clients, users and files apart (see check_reliability.c):
 *
 *   poison      graphs that differ in one detail sent under one hash: no
 *               client is ever given a plan for another's graph.
 *   bundle      plan bundles with valid checksums whose plans verify but
 *               claim absurd arenas, in the preload directory and in
 *               Preload requests: refused, nothing stored, before and
 *               after a restart, and every client served its own plan.
 *   access      socket mode and allow-lists against an unprivileged user;
 *               nothing written outside the configured paths.
 *
 * access needs root for a second user and passes without checking
 * otherwise.
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arenad_client.h"
#include "check_reliability.h"
#include "testutil.h"
#include "wire.h"
#include "wire_bundle.h"
#include "wire_plan.h"

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
  rel_vgraph_make(v, 120, 31, PLANNER_ALGO_GREEDY_SIZE, "H");
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
    int res = rel_send_plan(fd, 2 * i + 1, &v) == 0
                  ? rel_classify(r = hn_recv(fd, 10000), &v)
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
    r = rel_send_lookup(fd, 2 * i + 2, "H", NULL) == 0 ? hn_recv(fd, 10000)
                                                       : NULL;
    if (!r || r->status != ARENAD__V1__STATUS__OK) {
      sh->failed[c]++;
    } else {
      for (size_t p = 0; p < r->lookup->n_plans; p++) {
        const Arenad__V1__PlanReply *pr = r->lookup->plans[p];
        if (pr->graph_digest.len != PLANNER_DIGEST_LEN)
          sh->wrong[c]++;
        else if (memcmp(pr->graph_digest.data, v.gd, PLANNER_DIGEST_LEN))
          sh->foreign[c]++;
        else if (rel_reply_wrong(pr, &v))
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
  rel_vgraph_free(&v);
}

START_TEST(test_cache_poisoning)
{
  if (rel_skipped("poison"))
    return;
  unsigned rounds = rel_scaled(40, 1000);
  struct figs f = {0};
  struct harness h;
  rel_setup(&h, NULL, NULL);
  ck_assert_int_eq(rel_start(&h), 0);
  struct poison_shared *sh = rel_shared_new(sizeof *sh);
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
    ck_assert_int_eq(rel_wait_child(kids[c]), 0);
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
  rel_vgraph_make(&x, 120, 99, PLANNER_ALGO_GREEDY_SIZE, "H");
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
  rel_vgraph_free(&x);
  rel_rss_peak(&f, &h);
  ck_assert_int_eq(hn_stop(&h), 0);
  char extra[96];
  snprintf(extra, sizeof extra, "foreign_plans_seen_in_lookups=%" PRIu64,
           foreign);
  rel_figs_report("poison", &f, extra);
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
    (void)rel_send_ping(fd, 1, "a", 1);
    Arenad__V1__Response *r = hn_recv(fd, 5000);
    if (r && r->status == ARENAD__V1__STATUS__DENIED)
      out = AC_DENIED;
    else if (r && r->status == ARENAD__V1__STATUS__OK)
      out = AC_SERVED;
    wire_free_response(r);
    _exit(out);
  }
  return rel_wait_child(pid);
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
  if (rel_skipped("access"))
    return;
  struct figs f = {0};
  if (geteuid() != 0) {
    printf("reliability: access skipped: needs root for a second user\n");
    return;
  }
  struct harness h;
  rel_setup(&h, NULL, "[access]\nallow_uids = 0\n");
  ck_assert_int_eq(chmod(h.dir, 0711), 0);
  ck_assert_int_eq(rel_start(&h), 0);
  struct stat sb;
  ck_assert_int_eq(stat(h.sock, &sb), 0);
  ck_assert_int_eq(sb.st_mode & 0777, 0660);
  ck_assert_int_eq(access_as(&h, NOBODY, NOBODY), AC_EACCES);
  ck_assert_int_eq(access_as(&h, NOBODY, 0), AC_DENIED);
  ck_assert_int_eq(access_as(&h, 0, 0), AC_SERVED);
  f.bad_inputs += 2;
  /* allow the group too: served after SIGHUP */
  rel_write_conf(&h, NULL, "[access]\nallow_uids = 0\nallow_gids = 0\n");
  kill(h.pid, SIGHUP);
  int served = 0;
  for (int i = 0; i < 50 && !served; i++) {
    served = access_as(&h, NOBODY, 0) == AC_SERVED;
    if (!served)
      rel_sleep_ms(50);
  }
  ck_assert(served);
  Arenad__V1__Response *keep;
  Arenad__V1__StatsReply *sr = rel_stats_of(&h, &keep);
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
  rel_unlink_db(h.db);
  rel_write_conf(&h, NULL, "");
  ck_assert_int_eq(chmod(h.log, 0666), 0);
  ck_assert_int_eq(rel_start_as(&h, NOBODY, NOBODY, cwd), 0);
  for (int i = 0; i < 20; i++) {
    struct vgraph v;
    char hash[32];
    snprintf(hash, sizeof hash, "access-%d", i % 5);
    rel_vgraph_make(&v, 2000, (uint64_t)i, PLANNER_ALGO_BEST, hash);
    rel_expect_plan(&h, &v, &f);
    Arenad__V1__Status ls;
    (void)rel_lookup_once(&h, &v, &f, &ls);
    rel_vgraph_free(&v);
  }
  int fd = hn_connect(&h);
  ck_assert_int_eq(rel_send_evict_model(fd, 1, "access-1"), 0);
  Arenad__V1__Response *r = hn_recv(fd, 5000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  wire_free_response(r);
  close(fd);
  rel_rss_peak(&f, &h);
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert_int_eq(rel_count_prefix(cwd, ""), 2); /* "." and ".." */
  DIR *d = opendir(h.dir);
  for (struct dirent *e; (e = readdir(d));) {
    const char *n = e->d_name;
    ck_assert_msg(!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "cwd") ||
                      !strcmp(n, "arenad.conf") ||
                      !strcmp(n, "arenad.log") ||
                      !strcmp(n, "arenad.sock.lock") ||
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
  rel_figs_report("access", &f, NULL);
  ck_assert_uint_eq(f.failures, 0);
  ck_assert_uint_eq(f.wrong, 0);
  hn_cleanup(&h);
}
END_TEST

/* ---- bundle poisoning: plans that verify but claim absurd arenas ---------- */

/* A bundle entry for v: its Plan request and a reply with offsets off
 * (borrowed), arena and effort. */
struct pentry {
  Arenad__V1__Plan req;
  Arenad__V1__PlanOptions opts;
  Arenad__V1__PlanReply reply;
  Arenad__V1__BundleEntry e;
};

static void pentry_init(struct pentry *x, const struct vgraph *v,
                        uint64_t *off, uint64_t arena, uint32_t effort)
{
  struct planner_graph pg = {v->g.t, v->g.n};
  ck_assert_int_eq(wire_plan_msg_init(&x->req, &x->opts, &pg, &v->o,
                                      (const uint8_t *)v->hash,
                                      strlen(v->hash), NULL, 0),
                   0);
  arenad__v1__plan_reply__init(&x->reply);
  x->reply.offsets = off;
  x->reply.n_offsets = v->g.n;
  x->reply.arena_bytes = arena;
  x->reply.effort = effort;
  x->reply.proven_optimal = 1; /* a claim the daemon recomputes */
  arenad__v1__bundle_entry__init(&x->e);
  x->e.request = &x->req;
  x->e.plan = &x->reply;
}

/* Writes the n entries as a bundle at path, with a valid checksum. */
static void pbundle_write(const char *path, struct pentry **x, size_t n)
{
  Arenad__V1__BundleEntry *ptrs[4];
  for (size_t i = 0; i < n; i++)
    ptrs[i] = &x[i]->e;
  uint8_t *b;
  size_t len;
  ck_assert_int_eq(wire_bundle_write(ptrs, n, "rel", 1, 0, &b, &len), 0);
  FILE *fp = fopen(path, "wb");
  ck_assert_ptr_nonnull(fp);
  ck_assert_uint_eq(fwrite(b, 1, len, fp), len);
  fclose(fp);
  free(b);
}

/* Reads the bundle at path and sends its entries as one Preload request;
 * returns the reply's status, -1 without one. */
static int pbundle_preload(const struct harness *h, const char *path,
                           char *why, size_t why_len)
{
  size_t len;
  char err[ARENA_ERR_LEN];
  uint8_t *b = (uint8_t *)tu_read_file(path, &len);
  ck_assert_ptr_nonnull(b);
  Arenad__V1__Bundle *bun = NULL;
  ck_assert_msg(wire_bundle_read(b, len, NULL, &bun, err) == 0, "%s", err);
  free(b);
  Arenad__V1__Preload pl = ARENAD__V1__PRELOAD__INIT;
  pl.entries = bun->entries;
  pl.n_entries = bun->n_entries;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = 17;
  req.body_case = ARENAD__V1__REQUEST__BODY_PRELOAD_PLANS;
  req.preload_plans = &pl;
  int fd = hn_connect(h);
  ck_assert_int_ge(fd, 0);
  Arenad__V1__Response *r = hn_call(fd, &req, 30000);
  close(fd);
  wire_free_bundle(bun);
  int st = r ? (int)r->status : -1;
  snprintf(why, why_len, "%s", r && r->error ? r->error : "");
  wire_free_response(r);
  return st;
}

/* Plans v on a new connection: 0 for a verified plan within cap bytes
 * (counted in f), else -1 (a wrong plan is counted as wrong). *cached
 * tells whether it came from the cache. */
static int plan_within(const struct harness *h, const struct vgraph *v,
                       uint64_t cap, struct figs *f, int *cached)
{
  int fd = hn_connect(h);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(rel_send_plan(fd, 5, v), 0);
  Arenad__V1__Response *r = hn_recv(fd, 30000);
  close(fd);
  int c = rel_classify(r, v);
  int ok = c == 0 && r->plan->arena_bytes <= cap;
  if (c == 1 || (c == 0 && !ok))
    f->wrong++;
  else if (ok)
    f->requests++;
  else
    f->failures++;
  *cached = r && r->plan ? r->plan->cached : 0;
  wire_free_response(r);
  return ok ? 0 : -1;
}

/* The attack of a bundle whose checksums are valid: two plans of a
 * 300-tensor graph that verify (aligned, no two live tensors
 * overlapping) but claim absurd arenas, one with tensor i at i * 2^30
 * and an effort of 4e9, one with its highest tensor lifted just above
 * what every tensor in bytes of its own would take, each beside a good
 * plan of another graph. Dropped in the preload directory and sent in
 * Preload requests, they are refused and nothing is stored, before and
 * after a restart; the daemon keeps serving, and clients get the
 * daemon's own plans, within the bound. */
START_TEST(test_bundle_poisoning)
{
  if (rel_skipped("bundle"))
    return;
  struct figs f = {0};
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  char dir[300], conf[400], path_a[400], path_b[400], why[ARENA_ERR_LEN];
  snprintf(dir, sizeof dir, "%s/bundles", h.dir);
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  snprintf(conf, sizeof conf, "[cache]\npreload_dir = %s\n", dir);
  rel_write_conf(&h, NULL, conf);

  struct vgraph v, w;
  rel_vgraph_make(&v, 300, 41, PLANNER_ALGO_BEST, "bundle-victim");
  rel_vgraph_make(&w, 200, 42, PLANNER_ALGO_BEST, "bundle-other");
  uint64_t cap = 0, top = 0, top_i = 0;
  for (size_t i = 0; i < v.g.n; i++)
    cap += (v.g.t[i].size + 63) / 64 * 64;
  struct planner_plan good_v, good_w;
  struct planner_graph pv = {v.g.t, v.g.n}, pw = {w.g.t, w.g.n};
  planner_plan_init(&good_v);
  planner_plan_init(&good_w);
  ck_assert_int_eq(planner_run(&pv, &v.o, &good_v, NULL), 0);
  ck_assert_int_eq(planner_run(&pw, &w.o, &good_w, NULL), 0);
  uint64_t *spread = calloc(v.g.n, sizeof *spread);
  uint64_t *lifted = calloc(v.g.n, sizeof *lifted);
  uint64_t spread_arena = 0;
  for (size_t i = 0; i < v.g.n; i++) {
    spread[i] = (uint64_t)i << 30;
    if (spread[i] + v.g.t[i].size > spread_arena)
      spread_arena = spread[i] + v.g.t[i].size;
    lifted[i] = good_v.offsets[i];
    if (lifted[i] + v.g.t[i].size > top) {
      top = lifted[i] + v.g.t[i].size;
      top_i = i;
    }
  }
  /* Above every other tensor, so it overlaps none; its end just past
   * the bound. */
  lifted[top_i] = (cap - v.g.t[top_i].size + 64) / 64 * 64;
  uint64_t lifted_arena = lifted[top_i] + v.g.t[top_i].size;
  ck_assert_uint_gt(lifted_arena, cap);
  struct planner_plan check = good_v;
  check.offsets = lifted;
  check.arena_bytes = lifted_arena;
  ck_assert_int_eq(planner_verify(&pv, &v.o, &check, NULL), 0);
  check.offsets = spread;
  check.arena_bytes = spread_arena;
  ck_assert_int_eq(planner_verify(&pv, &v.o, &check, NULL), 0);

  struct pentry ew, ea, eb;
  pentry_init(&ew, &w, good_w.offsets, good_w.arena_bytes, 40);
  pentry_init(&ea, &v, spread, spread_arena, 4000000000u);
  pentry_init(&eb, &v, lifted, lifted_arena, 40);
  snprintf(path_a, sizeof path_a, "%s/a-spread.bundle", dir);
  snprintf(path_b, sizeof path_b, "%s/b-lifted.bundle", dir);
  pbundle_write(path_a, (struct pentry *[]){&ew, &ea}, 2);
  pbundle_write(path_b, (struct pentry *[]){&eb, &ew}, 2);
  f.bad_inputs += 2;

  ck_assert_int_eq(rel_start(&h), 0);
  ck_assert_int_eq(hn_log_count(&h, "refused, nothing stored"), 2);
  ck_assert_int_eq(hn_log_count(&h, "its arena of"), 2);
  Arenad__V1__Response *keep;
  Arenad__V1__StatsReply *sr = rel_stats_of(&h, &keep);
  ck_assert_uint_eq(sr->storage_entries, 0);
  wire_free_response(keep);

  /* Both again as Preload requests. */
  for (int i = 0; i < 2; i++) {
    int st = pbundle_preload(&h, i ? path_b : path_a, why, sizeof why);
    f.bad_inputs++;
    ck_assert_msg(st == ARENAD__V1__STATUS__INVALID_ARGUMENT, "%d: %s", st,
                  why);
    ck_assert_msg(strstr(why, "entry") && strstr(why, "its arena of"), "%s",
                  why);
  }
  sr = rel_stats_of(&h, &keep);
  ck_assert_uint_eq(sr->storage_entries, 0);
  wire_free_response(keep);

  /* The daemon keeps serving: its own plans, within the bound. */
  int cached = 0;
  ck_assert_int_eq(plan_within(&h, &v, cap, &f, &cached), 0);
  ck_assert(!cached);
  ck_assert_int_eq(plan_within(&h, &w, UINT64_MAX, &f, &cached), 0);
  for (int i = 0; i < 20; i++)
    ck_assert_int_eq(plan_within(&h, i % 2 ? &v : &w, i % 2 ? cap
                                                            : UINT64_MAX,
                                 &f, &cached),
                     0);
  rel_rss_peak(&f, &h);
  ck_assert_int_eq(hn_stop(&h), 0);

  /* After a restart: refused again, the daemon's own plans served. */
  ck_assert_int_eq(rel_start(&h), 0);
  ck_assert_int_eq(hn_log_count(&h, "refused, nothing stored"), 4);
  ck_assert_int_eq(plan_within(&h, &v, cap, &f, &cached), 0);
  ck_assert(cached);
  sr = rel_stats_of(&h, &keep);
  ck_assert_uint_eq(sr->storage_entries, 2); /* v and w, the daemon's */
  ck_assert_uint_eq(sr->storage_corrupt_dropped, 0);
  wire_free_response(keep);
  ck_assert(rel_ping_ok(&h));
  rel_rss_peak(&f, &h);
  ck_assert_int_eq(hn_stop(&h), 0);
  char extra[160];
  snprintf(extra, sizeof extra, "bound=%" PRIu64 " spread_arena=%" PRIu64
           " lifted_arena=%" PRIu64, cap, spread_arena, lifted_arena);
  rel_figs_report("bundle", &f, extra);
  ck_assert_uint_eq(f.failures, 0);
  ck_assert_uint_eq(f.wrong, 0);
  wire_plan_msg_cleanup(&ew.req);
  wire_plan_msg_cleanup(&ea.req);
  wire_plan_msg_cleanup(&eb.req);
  planner_plan_cleanup(&good_v);
  planner_plan_cleanup(&good_w);
  free(spread);
  free(lifted);
  rel_vgraph_free(&v);
  rel_vgraph_free(&w);
  hn_cleanup(&h);
}
END_TEST

void reliability_add_isolation(TCase *tc)
{
  tcase_add_test(tc, test_cache_poisoning);
  tcase_add_test(tc, test_bundle_poisoning);
  tcase_add_test(tc, test_access);
}

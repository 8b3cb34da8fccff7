/*
 * check_service.c - the daemon through the real client library: a load
 * test with 32 concurrent client processes, lookups without the graph,
 * the local fallback when the daemon is down or stopped, a long search
 * waited for, concurrent misses that share the CPUs, and in-place
 * sharing on and off; and (check_service_unusable.c) a poisoned stored
 * plan, which the library treats as a miss and the daemon drops; and
 * (check_service_place.c) placement records, stored and fetched by key.
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arenad_client.h"
#include "client_int.h"
#include "check_service.h"
#include "daemon_harness.h"
#include "testutil.h"

#define MAX_MODELS 16

struct models {
  struct hn_graph g[MAX_MODELS];
  char name[MAX_MODELS][96];
  size_t n;
};

static void load_models(struct models *m)
{
  char dir[512];
  snprintf(dir, sizeof dir, "%s/models", tu_data_dir());
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  m->n = 0;
  while ((e = readdir(d)) && m->n < MAX_MODELS) {
    size_t l = strlen(e->d_name);
    if (l < 5 || strcmp(e->d_name + l - 4, ".csv") != 0)
      continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    ck_assert_int_eq(hn_load_csv(path, &m->g[m->n]), 0);
    snprintf(m->name[m->n], sizeof m->name[m->n], "%.90s", e->d_name);
    m->n++;
  }
  closedir(d);
  ck_assert_uint_ge(m->n, 10);
}

static void free_models(struct models *m)
{
  for (size_t i = 0; i < m->n; i++)
    hn_graph_free(&m->g[i]);
}

static arenad_client_t *open_client(const struct harness *h, int fallback)
{
  struct arenad_client_options o;
  arenad_client_options_init(&o);
  o.socket_path = h->sock;
  o.fallback = fallback;
  o.request_timeout_ms = 30000;
  arenad_client_t *c = NULL;
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  return c;
}

/* Plans model i with alignment al; returns 0 when the plan verifies. */
static int plan_model(arenad_client_t *c, const struct models *m, size_t i,
                      uint64_t al, struct arenad_client_result *r)
{
  struct planner_graph g = {m->g[i].t, m->g[i].n};
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = al;
  struct arenad_model_key k = {(const uint8_t *)m->name[i],
                               strlen(m->name[i]), NULL, 0};
  int rc = arenad_client_plan(c, &g, &o, &k, r);
  if (rc)
    return rc;
  return planner_verify(&g, &o, &r->plan, NULL);
}

static int lookup_model(arenad_client_t *c, const struct models *m, size_t i,
                        uint64_t al)
{
  struct planner_graph g = {m->g[i].t, m->g[i].n};
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = al;
  struct arenad_model_key k = {(const uint8_t *)m->name[i],
                               strlen(m->name[i]), NULL, 0};
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  int rc = arenad_client_lookup(c, &k, &g, &o, &r);
  if (!rc)
    rc = planner_verify(&g, &o, &r.plan, NULL);
  arenad_client_result_cleanup(&r);
  return rc;
}

static int stats_call(arenad_client_t *c)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Stats st = ARENAD__V1__STATS__INIT;
  req.body_case = ARENAD__V1__REQUEST__BODY_STATS;
  req.stats = &st;
  Arenad__V1__Response *resp = NULL;
  int rc = arenad_client__call(c, &req, &resp);
  if (!rc && resp->status != ARENAD__V1__STATUS__OK)
    rc = -1;
  wire_free_response(resp);
  return rc;
}

/* One client process: n mixed requests; exits with the failure count. */
static void client_child(const struct harness *h, const struct models *m,
                         int id, int n)
{
  arenad_client_t *c = open_client(h, 0);
  int failures = 0;
  for (int i = 0; i < n; i++) {
    size_t which = (size_t)(i + id) % m->n;
    uint64_t al = (i / 7) % 2 ? 64 : 1;
    int kind = i % 10;
    int rc;
    if (kind < 7) {
      struct arenad_client_result r;
      arenad_client_result_init(&r);
      rc = plan_model(c, m, which, al, &r);
      if (!rc && r.local)
        rc = -1; /* fallback is off: a local plan is a failure */
      arenad_client_result_cleanup(&r);
    } else if (kind < 9) {
      rc = lookup_model(c, m, which, 64);
    } else {
      rc = stats_call(c);
    }
    if (rc) {
      failures++;
      fprintf(stderr, "client %d request %d: %s\n", id, i,
              arenad_client_errmsg(c));
    }
  }
  arenad_client_close(c);
  _exit(failures > 100 ? 100 : failures);
}

/* Runs `clients` client processes of n requests each; returns the total
 * of their failure counts. */
static int run_clients(const struct harness *h, const struct models *m,
                       int clients, int n)
{
  pid_t kids[64];
  for (int k = 0; k < clients; k++) {
    kids[k] = fork();
    ck_assert_int_ge(kids[k], 0);
    if (kids[k] == 0)
      client_child(h, m, k, n);
  }
  int failed = 0;
  for (int k = 0; k < clients; k++) {
    int st;
    ck_assert_int_eq(waitpid(kids[k], &st, 0), kids[k]);
    ck_assert(WIFEXITED(st));
    failed += WEXITSTATUS(st);
  }
  return failed;
}

START_TEST(test_load_32_clients)
{
  struct models m;
  load_models(&m);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, "[daemon]\nworkers = 2\nlog_level = info\n"),
                   0);
  ck_assert_int_eq(hn_start(&h), 0);
  /* warm-up: every model at both alignments, so lookups can succeed */
  arenad_client_t *c = open_client(&h, 0);
  for (int round = 0; round < 3; round++)
    for (size_t i = 0; i < m.n; i++)
      for (int a = 0; a < 2; a++) {
        struct arenad_client_result r;
        arenad_client_result_init(&r);
        ck_assert_int_eq(plan_model(c, &m, i, a ? 64 : 1, &r), 0);
        arenad_client_result_cleanup(&r);
      }
  arenad_client_close(c);
  enum { CLIENTS = 32, REQUESTS = 1000, WARM = 200 };
  /* warm-up with the same pattern, so that per-connection buffers and
   * allocator pools reach their working size before the measurement */
  ck_assert_int_eq(run_clients(&h, &m, CLIENTS, WARM), 0);
  long rss_warm = hn_rss_kib(&h);
  ck_assert_int_gt(rss_warm, 0);
  ck_assert_int_eq(run_clients(&h, &m, CLIENTS, REQUESTS), 0);
  long rss_after = hn_rss_kib(&h);
  printf("load: daemon RSS %ld KiB after warm-up, %ld KiB after %d more "
         "requests\n",
         rss_warm, rss_after, CLIENTS * REQUESTS);
  /* steady state: no growth beyond allocator noise */
  ck_assert_msg(rss_after <= rss_warm + 4096 + rss_warm / 10,
                "RSS grew from %ld KiB to %ld KiB", rss_warm, rss_after);
  Arenad__V1__Response *st = hn_stats(&h);
  ck_assert_ptr_nonnull(st);
  ck_assert_uint_ge(st->stats->requests, CLIENTS * (REQUESTS + WARM));
  ck_assert_uint_eq(st->stats->protocol_errors, 0);
  ck_assert_uint_le(st->stats->plans_computed, 2 * m.n);
  wire_free_response(st);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  free_models(&m);
}
END_TEST

/* With the daemon down, the library plans locally, and the plan equals
 * the one the daemon served. */
START_TEST(test_fallback_matches_daemon)
{
  struct models m;
  load_models(&m);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  arenad_client_t *c = open_client(&h, 1);
  struct arenad_client_result remote[MAX_MODELS];
  for (size_t i = 0; i < m.n; i++) {
    arenad_client_result_init(&remote[i]);
    ck_assert_int_eq(plan_model(c, &m, i, 64, &remote[i]), 0);
    ck_assert_int_eq(remote[i].local, 0);
  }
  ck_assert_int_eq(hn_stop(&h), 0);
  for (size_t i = 0; i < m.n; i++) {
    struct arenad_client_result r;
    arenad_client_result_init(&r);
    ck_assert_int_eq(plan_model(c, &m, i, 64, &r), 0);
    ck_assert_int_eq(r.local, 1);
    ck_assert_uint_eq(r.plan.arena_bytes, remote[i].plan.arena_bytes);
    ck_assert_mem_eq(r.plan.offsets, remote[i].plan.offsets, m.g[i].n * 8);
    arenad_client_result_cleanup(&r);
    arenad_client_result_cleanup(&remote[i]);
  }
  arenad_client_close(c);
  /* without fallback the caller hears that the daemon is unreachable */
  c = open_client(&h, 0);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  ck_assert_int_eq(plan_model(c, &m, 0, 64, &r), ARENA_EUNAVAIL);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
  hn_cleanup(&h);
  free_models(&m);
}
END_TEST

/* Two graphs under one model hash never get each other's plan; a lookup
 * without the graph returns plans the client checks by digest. */
START_TEST(test_same_hash_different_graphs)
{
  struct harness h;
  struct hn_graph a, b;
  hn_random_graph(&a, 50, 1);
  hn_random_graph(&b, 50, 2);
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  arenad_client_t *c = open_client(&h, 0);
  struct planner_options o;
  planner_options_init(&o);
  struct arenad_model_key k = {(const uint8_t *)"H", 1, NULL, 0};
  struct planner_graph ga = {a.t, a.n}, gb = {b.t, b.n};
  struct arenad_client_result ra, rb, la;
  arenad_client_result_init(&ra);
  arenad_client_result_init(&rb);
  arenad_client_result_init(&la);
  ck_assert_int_eq(arenad_client_plan(c, &ga, &o, &k, &ra), 0);
  ck_assert_int_eq(arenad_client_plan(c, &gb, &o, &k, &rb), 0);
  ck_assert_int_eq(planner_verify(&ga, &o, &ra.plan, NULL), 0);
  ck_assert_int_eq(planner_verify(&gb, &o, &rb.plan, NULL), 0);
  ck_assert(memcmp(ra.graph_digest, rb.graph_digest, 32) != 0);
  ck_assert_int_eq(arenad_client_lookup(c, &k, &ga, &o, &la), 0);
  ck_assert_mem_eq(la.plan.offsets, ra.plan.offsets, a.n * 8);
  /* a third graph that was never planned: no stored plan matches */
  struct hn_graph x;
  hn_random_graph(&x, 50, 3);
  struct planner_graph gx = {x.t, x.n};
  struct arenad_client_result rx;
  arenad_client_result_init(&rx);
  ck_assert_int_eq(arenad_client_lookup(c, &k, &gx, &o, &rx), ARENA_ENOENT);
  arenad_client_result_cleanup(&rx);
  arenad_client_result_cleanup(&ra);
  arenad_client_result_cleanup(&rb);
  arenad_client_result_cleanup(&la);
  arenad_client_close(c);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&a);
  hn_graph_free(&b);
  hn_graph_free(&x);
}
END_TEST

static const char *arenactl_path(void)
{
  return tu_bin("ARENACTL");
}

/* Runs `arenactl plan --json --no-fallback OPT [ARG] FILE` (arg may be
 * NULL) with its output in out_path; returns the owned output. */
static char *plan_json(const char *file, const char *opt, const char *arg,
                       const char *out_path, const char *err_path)
{
  const char *argv[8] = {arenactl_path(), "plan", "--json", "--no-fallback",
                         opt};
  size_t n = 5;
  if (arg)
    argv[n++] = arg;
  argv[n++] = file;
  argv[n] = NULL;
  int rc = tu_run(argv, NULL, NULL, out_path, err_path);
  char *err = tu_read_file(err_path, NULL);
  ck_assert_msg(rc == 0, "arenactl plan %s: exit %d: %s", opt, rc,
                err ? err : "");
  free(err);
  char *out = tu_read_file(out_path, NULL);
  ck_assert_ptr_nonnull(out);
  return out;
}

/* `arenactl plan --local` and the same plan through arenad give the same
 * offsets on MiniMalloc's E and G, whose `best` searches end on their
 * effort, even with the machine loaded: CPU hogs take most of the CPU
 * from arenad and arenactl alike. */
START_TEST(test_local_matches_daemon_loaded)
{
  struct tu_hogs hogs;
  ck_assert_int_eq(tu_hogs_start(&hogs, 3, 120), 0);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  static const char *const names[] = {"E", "G"};
  for (int i = 0; i < 2; i++) {
    char file[512], out[600], err[600];
    snprintf(file, sizeof file, "%s/minimalloc/%s.1048576.csv",
             tu_data_dir(), names[i]);
    snprintf(out, sizeof out, "%s/out", h.dir);
    snprintf(err, sizeof err, "%s/err", h.dir);
    char *local = plan_json(file, "--local", NULL, out, err);
    char *remote = plan_json(file, "-s", h.sock, out, err);
    ck_assert_ptr_nonnull(strstr(local, "\"local\":true"));
    ck_assert_ptr_nonnull(strstr(remote, "\"local\":false"));
    ck_assert_ptr_nonnull(strstr(remote, "\"cached\":false"));
    /* The search ran and ended on its effort, not on a proof. */
    ck_assert_ptr_nonnull(strstr(local, "\"proven_optimal\":false"));
    const char *nl = strstr(local, "\"nodes_explored\":");
    const char *nr = strstr(remote, "\"nodes_explored\":");
    ck_assert_ptr_nonnull(nl);
    ck_assert_ptr_nonnull(nr);
    ck_assert_msg(strtoull(nl + 17, NULL, 10) ==
                      strtoull(nr + 17, NULL, 10),
                  "%s: %.40s locally, %.40s through arenad", names[i], nl,
                  nr);
    const char *tl = strstr(local, "\"tensors\":["),
               *tr = strstr(remote, "\"tensors\":[");
    ck_assert_ptr_nonnull(tl);
    ck_assert_ptr_nonnull(tr);
    ck_assert_msg(strcmp(tl, tr) == 0, "%s: the offsets differ", names[i]);
    free(local);
    free(remote);
  }
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  tu_hogs_stop(&hogs);
}
END_TEST

/* Jobs planning side by side share the CPUs (jobs.c): each of three
 * concurrent misses, on graphs large enough for `best` to use threads,
 * gets the plan planner_run() makes on one thread, whatever share of
 * the CPUs its job had. */
START_TEST(test_side_by_side_jobs_match_local)
{
  enum { N = 3 };
  struct harness h;
  ck_assert_int_eq(hn_init(&h, "[daemon]\nworkers = 2\n"), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  struct hn_graph g[N];
  int fd[N];
  for (int i = 0; i < N; i++) {
    hn_random_graph(&g[i], 6000, 300 + (uint64_t)i);
    fd[i] = hn_connect(&h);
    ck_assert_int_ge(fd[i], 0);
  }
  for (int i = 0; i < N; i++) /* all sent before any reply is read */
    ck_assert_int_eq(hn_send_plan(fd[i], 1, &g[i], "side", 0, 64, 0), 0);
  for (int i = 0; i < N; i++) {
    Arenad__V1__Response *r = hn_recv(fd[i], 120000);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
    ck_assert_int_eq(r->plan->cached, 0);
    struct planner_graph pg = {g[i].t, g[i].n};
    struct planner_options o;
    planner_options_init(&o);
    o.threads = 1;
    struct planner_plan p;
    planner_plan_init(&p);
    ck_assert_int_eq(planner_run(&pg, &o, &p, NULL), 0);
    ck_assert_uint_eq(r->plan->n_offsets, g[i].n);
    ck_assert_mem_eq(r->plan->offsets, p.offsets, g[i].n * 8);
    ck_assert_uint_eq(r->plan->arena_bytes, p.arena_bytes);
    ck_assert_uint_eq(r->plan->nodes_explored, p.nodes_explored);
    planner_plan_cleanup(&p);
    wire_free_response(r);
    close(fd[i]);
    hn_graph_free(&g[i]);
  }
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* Two chains of three tensors, each output over its input, one after
 * the other: four legal in-place pairs when with_aliases. */
static void share_chain(struct planner_tensor *t, int with_aliases)
{
  for (size_t i = 0; i < 6; i++) {
    t[i].id = (uint32_t)(50 - i);
    t[i].size = 5000;
    t[i].first = (int64_t)(i < 3 ? i : i + 1);
    t[i].last = t[i].first + 1;
    t[i].align = 0;
    t[i].pinned = PLANNER_NOT_PINNED;
    t[i].alias = t[i].id + 1;
    t[i].has_alias = with_aliases && i != 0 && i != 3;
  }
}

/* Plans, then looks up, g under model hash `hash` with sharing on or
 * off through the real daemon: both give plan `want`, the plan from the
 * second time on from the cache. */
static void share_plan_and_lookup(const struct harness *h, const char *hash,
                                  const struct planner_graph *g,
                                  int in_place,
                                  const struct planner_plan *want)
{
  struct planner_options o;
  arenad_client_plan_options_init(&o);
  o.in_place = in_place;
  uint8_t mh[8] = {0};
  memcpy(mh, hash, strlen(hash) < 8 ? strlen(hash) : 8);
  struct arenad_model_key k = {mh, sizeof mh, NULL, 0};
  arenad_client_t *c = open_client(h, 0);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  for (int round = 0; round < 3; round++) {
    int rc = round < 2 ? arenad_client_plan(c, g, &o, &k, &r)
                       : arenad_client_lookup(c, &k, g, &o, &r);
    ck_assert_msg(rc == 0, "round %d: %s", round, arenad_client_errmsg(c));
    ck_assert_int_eq(r.local, 0);
    ck_assert_int_eq(r.cached, round > 0);
    ck_assert_mem_eq(r.plan.offsets, want->offsets, g->n_tensors * 8);
    ck_assert_uint_eq(r.plan.arena_bytes, want->arena_bytes);
    ck_assert_uint_eq(r.plan.n_shared, want->n_shared);
    ck_assert_uint_eq(r.plan.lower_bound_bytes, want->lower_bound_bytes);
    ck_assert_uint_eq(r.plan.lower_bound_unshared_bytes,
                      want->lower_bound_unshared_bytes);
  }
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}

/* In-place sharing through the daemon and the library: the shared plan
 * with sharing on, the plan of the graph without aliases with it off;
 * each planned, then served from the cache, then found by a lookup, and
 * each equal to what the library plans when the daemon is down. */
START_TEST(test_share_through_daemon)
{
  struct planner_tensor t[6], bare[6];
  share_chain(t, 1);
  share_chain(bare, 0);
  struct planner_graph g = {t, 6}, bg = {bare, 6};
  struct planner_options o;
  arenad_client_plan_options_init(&o);
  struct planner_plan ps, pb;
  planner_plan_init(&ps);
  planner_plan_init(&pb);
  ck_assert_int_eq(planner_run(&g, &o, &ps, NULL), 0);
  ck_assert_int_eq(planner_run(&bg, &o, &pb, NULL), 0);
  ck_assert_uint_eq(ps.n_shared, 4);
  ck_assert_uint_lt(ps.arena_bytes, pb.arena_bytes);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  share_plan_and_lookup(&h, "shared", &g, 1, &ps);
  share_plan_and_lookup(&h, "unshare", &g, 0, &pb);
  ck_assert_int_eq(hn_stop(&h), 0);
  arenad_client_t *c = open_client(&h, 1);
  struct arenad_model_key k = {(const uint8_t *)"shared..", 8, NULL, 0};
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  for (int in_place = 1; in_place >= 0; in_place--) {
    o.in_place = in_place;
    const struct planner_plan *want = in_place ? &ps : &pb;
    ck_assert_int_eq(arenad_client_plan(c, &g, &o, &k, &r), 0);
    ck_assert_int_eq(r.local, 1);
    ck_assert_mem_eq(r.plan.offsets, want->offsets, 6 * 8);
    ck_assert_uint_eq(r.plan.n_shared, want->n_shared);
  }
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
  hn_cleanup(&h);
  planner_plan_cleanup(&ps);
  planner_plan_cleanup(&pb);
}
END_TEST

static double elapsed_ms(const struct timespec *t0)
{
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) * 1e3 +
         (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Plans graph g of model `hash` with default timeouts and fallback on,
 * on client c; returns the call's time in ms, with the result in r. */
static double plan_stopped(arenad_client_t *c, const struct hn_graph *g,
                           const char *hash, struct arenad_client_result *r)
{
  struct planner_graph pg = {g->t, g->n};
  struct arenad_model_key k = {(const uint8_t *)hash, strlen(hash), NULL, 0};
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ck_assert_int_eq(arenad_client_plan(c, &pg, NULL, &k, r), 0);
  return elapsed_ms(&t0);
}

/* A stopped daemon (SIGSTOP) neither reads nor answers: with the default
 * timeouts (answer 2 s, plan 30 s) a client falls back well before the
 * plan timeout, on a connection it kept and on a new one alike, and the
 * daemon serves again once resumed. The guard resumes and kills the
 * daemon should the test fail while it is stopped. */
START_TEST(test_stopped_daemon_falls_back)
{
  struct hn_graph a, b, x;
  hn_random_graph(&a, 80, 21);
  hn_random_graph(&b, 80, 22);
  hn_random_graph(&x, 80, 23);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  struct arenad_client_options o;
  arenad_client_options_init(&o);
  o.socket_path = h.sock;
  arenad_client_t *kept = NULL, *fresh = NULL;
  ck_assert_int_eq(arenad_client_open(&o, &kept), 0);
  ck_assert_int_eq(arenad_client_open(&o, &fresh), 0);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  plan_stopped(kept, &x, "stop-x", &r); /* connects; the daemon answers */
  ck_assert_int_eq(r.local, 0);

  struct tu_stop stop;
  ck_assert_int_eq(tu_stop_start(&stop, (int)h.pid, 120), 0);
  double ms_kept = plan_stopped(kept, &a, "stop-a", &r);
  int local_kept = r.local, why_kept = r.fallback_reason;
  char msg[600];
  snprintf(msg, sizeof msg, "%s", arenad_client_errmsg(kept));
  double ms_fresh = plan_stopped(fresh, &b, "stop-b", &r);
  int local_fresh = r.local, why_fresh = r.fallback_reason;
  tu_stop_end(&stop);

  ck_assert_int_eq(local_kept, 1);
  ck_assert_int_eq(why_kept, ARENA_ETIMEDOUT);
  ck_assert_msg(strstr(msg, "answer timeout"), "%s", msg);
  ck_assert_int_eq(local_fresh, 1);
  ck_assert_int_eq(why_fresh, ARENA_ETIMEDOUT);
  printf("stopped daemon: fell back after %.0f ms (kept connection), "
         "%.0f ms (new connection)\n", ms_kept, ms_fresh);
  ck_assert_msg(ms_kept < 15000 && ms_fresh < 15000,
                "fell back after %.0f and %.0f ms, not well before the "
                "30 s plan timeout", ms_kept, ms_fresh);

  /* Resumed, it answers again. */
  plan_stopped(fresh, &x, "stop-x", &r);
  ck_assert_int_eq(r.local, 0);
  arenad_client_result_cleanup(&r);
  arenad_client_close(kept);
  arenad_client_close(fresh);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&a);
  hn_graph_free(&b);
  hn_graph_free(&x);
}
END_TEST

/* A search that runs for longer than the answer timeout is waited for:
 * the daemon acknowledges the job, and the plan comes from it. The
 * search is `best` on MiniMalloc's E with effort 1000, which ends on its
 * effort after seconds (about 2.5 s here, against an answer timeout of
 * 300 ms); the test says so if it was too quick to test anything. */
START_TEST(test_long_search_is_waited_for)
{
  struct hn_graph g;
  char file[512];
  snprintf(file, sizeof file, "%s/minimalloc/E.1048576.csv", tu_data_dir());
  ck_assert_int_eq(hn_load_csv(file, &g), 0);
  struct harness h;
  ck_assert_int_eq(hn_init(&h, "[planner]\nmax_effort = 1000\n"), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  struct arenad_client_options co;
  arenad_client_options_init(&co);
  co.socket_path = h.sock;
  co.answer_timeout_ms = 300;
  co.request_timeout_ms = 120000;
  arenad_client_t *c = NULL;
  ck_assert_int_eq(arenad_client_open(&co, &c), 0);
  struct planner_graph pg = {g.t, g.n};
  struct planner_options o;
  planner_options_init(&o);
  o.effort = 1000;
  struct arenad_model_key k = {(const uint8_t *)"long", 4, NULL, 0};
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = arenad_client_plan(c, &pg, &o, &k, &r);
  double ms = elapsed_ms(&t0);
  ck_assert_msg(rc == 0 && r.local == 0, "%s: %s", arena_err_name(rc),
                arenad_client_errmsg(c));
  printf("long search: %.0f ms, planning %.0f ms, answer timeout 300 ms\n",
         ms, (double)r.planning_us / 1e3);
  ck_assert_msg(r.planning_us > 300000,
                "the search took %.0f ms, too short to test the wait",
                (double)r.planning_us / 1e3);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&g);
}
END_TEST

Suite *service_suite(void)
{
  Suite *s = suite_create("service");
  TCase *tc = tcase_create("service");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_load_32_clients);
  tcase_add_test(tc, test_fallback_matches_daemon);
  tcase_add_test(tc, test_same_hash_different_graphs);
  tcase_add_test(tc, test_local_matches_daemon_loaded);
  tcase_add_test(tc, test_side_by_side_jobs_match_local);
  tcase_add_test(tc, test_share_through_daemon);
  suite_add_tcase(s, tc);
  /* Room for the 30 s plan timeout the stopped daemon must not cost. */
  tc = tcase_create("stall");
  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, test_stopped_daemon_falls_back);
  tcase_add_test(tc, test_long_search_is_waited_for);
  suite_add_tcase(s, tc);
  tc = tcase_create("unusable");
  tcase_set_timeout(tc, 120);
  service_add_unusable(tc);
  suite_add_tcase(s, tc);
  tc = tcase_create("place");
  tcase_set_timeout(tc, 120);
  service_add_place(tc);
  suite_add_tcase(s, tc);
  return s;
}

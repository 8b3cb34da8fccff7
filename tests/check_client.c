/*
 * check_client.c - tests of the client library (client/arenad_client.c)
 * that need no daemon.
 *
 * A fake daemon runs in a thread of the test process, listening on a Unix
 * socket in a fresh temporary directory and speaking the real wire format.
 * Each accepted connection is served in a scripted way (a "mode"): right
 * plans, wrong plans, plans for another graph, refusals with each status,
 * silence, a reply cut off in the middle, garbage. The tests check that
 * the library returns only verified plans, maps every failure to the
 * documented code, falls back to local planning when allowed, and
 * reconnects after dropping a connection. The last test case runs the
 * arenactl binary (path from $ARENACTL, default build/arenactl) against
 * the same fake to check its daemon commands' output and exit statuses.
 */
#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client_int.h"
#include "digest.h"
#include "testutil.h"
#include "wire_plan.h"

/* ---- the test graph ----------------------------------------------------- */

/* Ids deliberately out of order, lifetimes overlapping. */
static const struct planner_tensor tg[] = {
    {9, 1000, 0, 2, 0, PLANNER_NOT_PINNED},
    {4, 500, 1, 3, 0, PLANNER_NOT_PINNED},
    {7, 2000, 2, 4, 0, PLANNER_NOT_PINNED},
    {1, 300, 0, 4, 0, PLANNER_NOT_PINNED},
    {5, 800, 3, 5, 0, PLANNER_NOT_PINNED},
};
#define TG_N (sizeof tg / sizeof tg[0])
static const struct planner_graph test_graph = {tg, TG_N};

static const uint8_t test_hash[] = {1, 2, 3, 4, 5, 6, 7, 8};
static const int64_t test_dims[] = {1, 3, 224, 224};
static const struct arenad_dims test_input = {test_dims, 4};
static const struct arenad_model_key test_key = {test_hash, sizeof test_hash,
                                                 &test_input, 1};

/* The tensors of g sorted by id (canonical order); owned, free(). */
static struct planner_tensor *sorted_copy(const struct planner_graph *g)
{
  struct planner_tensor *t = malloc(g->n_tensors * sizeof *t);
  ck_assert_ptr_nonnull(t);
  memcpy(t, g->tensors, g->n_tensors * sizeof *t);
  for (size_t i = 1; i < g->n_tensors; i++)
    for (size_t j = i; j > 0 && t[j - 1].id > t[j].id; j--) {
      struct planner_tensor x = t[j];
      t[j] = t[j - 1];
      t[j - 1] = x;
    }
  return t;
}

/* ---- the fake daemon ---------------------------------------------------- */

enum mode {
  M_GOOD,          /* correct plans (cached, planning_us 777), pongs */
  M_ONE_THEN_CLOSE, /* one correct reply, then close the connection */
  M_WRONG_PLAN,    /* all offsets 0: overlapping tensors */
  M_OTHER_DIGEST,  /* a correct plan labelled with another graph digest */
  M_SHORT_PLAN,    /* one offset too few */
  M_REFUSE,        /* on connect: one reply with id 0 and `status`, close */
  M_STATUS,        /* answer each request with `status` and a message */
  M_SILENT,        /* read requests, never answer */
  M_CLOSE_MID,     /* send half a reply, then close */
  M_CLOSE_NOREPLY, /* read the request, close without a word */
  M_GARBAGE,       /* a frame that is not a Response */
  M_ZERO_FRAME,    /* a zero-length frame */
  M_STALE_FIRST,   /* a reply with a wrong id before the right one */
  M_NO_BODY,       /* status OK but no plan in it */
  M_LOOKUP,        /* lookups: a decoy plan, then the matching one */
  M_LOOKUP_DECOY,  /* lookups: only plans for other graphs */
  M_LOOKUP_WRONG,  /* lookups: the matching digests, overlapping offsets */
};

#define MAX_CONNS 8

struct fake {
  char *dir;                     /* temp dir, owned */
  char path[600];                /* socket path */
  int lfd;                       /* listening socket */
  pthread_t th;                  /* server thread */
  enum mode modes[MAX_CONNS];    /* one per accepted connection, in order */
  int n_modes;                   /* connections to serve */
  Arenad__V1__Status status;     /* for M_REFUSE and M_STATUS */
  _Atomic int stop;              /* set by the test to end the thread */
  _Atomic int conns;             /* connections accepted */
  _Atomic int requests;          /* requests read */
  _Atomic int closed;            /* connections closed by the fake */
  _Atomic int lookup_digest_len; /* graph_digest filter of the last lookup */
  _Atomic int last_version;      /* protocol_version of the last request */
};

static struct fake fk;

static void send_bytes(int fd, const void *p, size_t n)
{
  const uint8_t *b = p;
  while (n > 0) {
    ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
    if (k <= 0)
      return; /* the client went away; nothing to do */
    b += k;
    n -= (size_t)k;
  }
}

static void send_resp(int fd, Arenad__V1__Response *r)
{
  uint8_t *buf;
  size_t len;
  if (wire_pack(&r->base, 0, &buf, &len) == 0) {
    send_bytes(fd, buf, len);
    free(buf);
  }
}

/* Reads the next request; NULL at EOF or on any error. */
static Arenad__V1__Request *read_req(int fd, struct wire_reader *rd)
{
  for (;;) {
    const uint8_t *body;
    size_t len;
    int rc = wire_reader_next(rd, &body, &len);
    if (rc < 0)
      return NULL;
    if (rc == 1) {
      Arenad__V1__Request *q = NULL;
      if (wire_unpack_request(body, len, 0, &q) != 0)
        return NULL;
      fk.requests++;
      fk.last_version = (int)q->protocol_version;
      return q;
    }
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) == 0) {
      if (fk.stop)
        return NULL;
      continue;
    }
    uint8_t buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0 || wire_reader_feed(rd, buf, (size_t)n) != 0)
      return NULL;
  }
}

/* Plans the request's graph and sends the reply the mode calls for. */
static void answer_plan(int fd, const Arenad__V1__Request *q, enum mode m)
{
  struct wire_limits l;
  struct wire_graph g;
  struct planner_plan p;
  uint8_t gd[PLANNER_DIGEST_LEN], od[PLANNER_DIGEST_LEN];
  wire_limits_init(&l);
  planner_plan_init(&p);
  if (wire_graph_from_plan(q->plan, &l, &g, NULL) != 0)
    return;
  struct planner_graph pg = {g.tensors, g.n_tensors};
  if (planner_run(&pg, &g.opts, &p, NULL) != 0 ||
      planner_graph_digest(&pg, gd) != 0) {
    wire_graph_cleanup(&g);
    return;
  }
  planner_options_digest(&g.opts, od);
  if (m == M_WRONG_PLAN)
    for (size_t i = 0; i < p.n_offsets; i++)
      p.offsets[i] = 0;
  if (m == M_OTHER_DIGEST)
    gd[0] ^= 1;
  Arenad__V1__PlanReply pr;
  wire_reply_from_plan(&pr, &p, gd, od);
  pr.cached = 1;
  pr.planning_us = 777;
  if (m == M_SHORT_PLAN)
    pr.n_offsets--;
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  r.request_id = q->request_id;
  r.body_case = ARENAD__V1__RESPONSE__BODY_PLAN;
  r.plan = &pr;
  if (m == M_STALE_FIRST) {
    r.request_id = q->request_id + 100;
    send_resp(fd, &r);
    r.request_id = q->request_id;
  }
  if (m == M_CLOSE_MID) {
    uint8_t *buf;
    size_t len;
    if (wire_pack(&r.base, 0, &buf, &len) == 0) {
      send_bytes(fd, buf, len / 2);
      free(buf);
    }
  } else {
    send_resp(fd, &r);
  }
  planner_plan_cleanup(&p);
  wire_graph_cleanup(&g);
}

/* Lookups: plans the test graph in canonical order. */
static void answer_lookup(int fd, const Arenad__V1__Request *q, enum mode m)
{
  fk.lookup_digest_len = (int)q->lookup->graph_digest.len;
  struct planner_tensor *st = sorted_copy(&test_graph);
  struct planner_graph sg = {st, TG_N};
  struct planner_options o;
  struct planner_plan p;
  uint8_t gd[PLANNER_DIGEST_LEN], od[PLANNER_DIGEST_LEN], bad[32];
  planner_options_init(&o);
  planner_plan_init(&p);
  ck_assert_int_eq(planner_run(&sg, &o, &p, NULL), 0);
  ck_assert_int_eq(planner_graph_digest(&sg, gd), 0);
  planner_options_digest(&o, od);
  memcpy(bad, gd, sizeof bad);
  bad[31] ^= 0x80;
  if (m == M_LOOKUP_WRONG)
    for (size_t i = 0; i < p.n_offsets; i++)
      p.offsets[i] = 0;
  Arenad__V1__PlanReply decoy, right;
  wire_reply_from_plan(&decoy, &p, bad, od);
  wire_reply_from_plan(&right, &p, gd, od);
  Arenad__V1__PlanReply *plans[] = {&decoy, &right};
  Arenad__V1__LookupReply lr = ARENAD__V1__LOOKUP_REPLY__INIT;
  lr.plans = plans;
  lr.n_plans = m == M_LOOKUP_DECOY ? 1 : 2;
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  r.request_id = q->request_id;
  r.body_case = ARENAD__V1__RESPONSE__BODY_LOOKUP;
  r.lookup = &lr;
  send_resp(fd, &r);
  planner_plan_cleanup(&p);
  free(st);
}

static void answer(int fd, const Arenad__V1__Request *q, enum mode m)
{
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  r.request_id = q->request_id;
  if (m == M_STATUS) {
    r.status = fk.status;
    r.error = "fake says no\n\033[31m";
    send_resp(fd, &r);
  } else if (m == M_GARBAGE) {
    static const uint8_t g[] = {0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff};
    send_bytes(fd, g, sizeof g);
  } else if (m == M_ZERO_FRAME) {
    static const uint8_t z[] = {0, 0, 0, 0};
    send_bytes(fd, z, sizeof z);
  } else if (m == M_NO_BODY) {
    r.error = "";
    send_resp(fd, &r);
  } else if (q->body_case == ARENAD__V1__REQUEST__BODY_PING) {
    Arenad__V1__Pong pong = ARENAD__V1__PONG__INIT;
    pong.payload = q->ping->payload;
    pong.version = "fake-1";
    r.body_case = ARENAD__V1__RESPONSE__BODY_PONG;
    r.pong = &pong;
    send_resp(fd, &r);
  } else if (q->body_case == ARENAD__V1__REQUEST__BODY_STATS) {
    Arenad__V1__StatsReply st = ARENAD__V1__STATS_REPLY__INIT;
    st.version = "fake-1";
    st.pid = 4242;
    st.uptime_ms = 90061000; /* 1 day, 01:01:01 */
    st.socket_path = fk.path;
    st.db_path = "/nonexistent/fake.db";
    st.requests = 17;
    st.memory_hits = 3;
    st.misses = 1;
    st.storage_ok = 1;
    st.verify_failures = 5;
    r.body_case = ARENAD__V1__RESPONSE__BODY_STATS;
    r.stats = &st;
    send_resp(fd, &r);
  } else if (q->body_case == ARENAD__V1__REQUEST__BODY_LIST) {
    static uint8_t key[] = {0xab, 0xcd}, mh[] = {0x01, 0x02, 0x03};
    int64_t d[] = {1, 96, 96, 1};
    Arenad__V1__Dims dims = ARENAD__V1__DIMS__INIT;
    dims.dims = d;
    dims.n_dims = 4;
    Arenad__V1__Dims *dp[] = {&dims};
    Arenad__V1__CacheEntry e = ARENAD__V1__CACHE_ENTRY__INIT;
    e.key.data = key;
    e.key.len = sizeof key;
    e.model_hash.data = mh;
    e.model_hash.len = sizeof mh;
    e.input_shape = dp;
    e.n_input_shape = 1;
    e.n_tensors = 32;
    e.arena_bytes = 55296;
    e.hits = (uint64_t)q->list->limit; /* echoed so tests see the option */
    e.last_used_unix_ms = 1700000000000;
    Arenad__V1__CacheEntry *ep[] = {&e};
    Arenad__V1__ListReply lr = ARENAD__V1__LIST_REPLY__INIT;
    lr.entries = ep;
    lr.n_entries = 1;
    r.body_case = ARENAD__V1__RESPONSE__BODY_LIST;
    r.list = &lr;
    send_resp(fd, &r);
  } else if (q->body_case == ARENAD__V1__REQUEST__BODY_EVICT) {
    Arenad__V1__EvictReply er = ARENAD__V1__EVICT_REPLY__INIT;
    /* 1 for all, 2 for a model hash, 3 + key length for a key. */
    er.evicted = (uint64_t)q->evict->target_case +
                 (q->evict->target_case == ARENAD__V1__EVICT__TARGET_KEY
                      ? q->evict->key.len
                      : 0);
    r.body_case = ARENAD__V1__RESPONSE__BODY_EVICT;
    r.evict = &er;
    send_resp(fd, &r);
  } else if (q->body_case == ARENAD__V1__REQUEST__BODY_LOOKUP) {
    answer_lookup(fd, q, m);
  } else if (q->body_case == ARENAD__V1__REQUEST__BODY_PLAN) {
    answer_plan(fd, q, m);
  }
}

static void serve_conn(int fd, enum mode m)
{
  if (m == M_REFUSE) {
    Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
    r.status = fk.status;
    r.error = "connection refused by the fake";
    send_resp(fd, &r);
    return;
  }
  struct wire_reader rd;
  wire_reader_init(&rd, 0);
  Arenad__V1__Request *q;
  while ((q = read_req(fd, &rd)) != NULL) {
    if (m == M_CLOSE_NOREPLY) {
      wire_free_request(q);
      break;
    }
    if (m != M_SILENT)
      answer(fd, q, m);
    wire_free_request(q);
    if (m == M_ONE_THEN_CLOSE || m == M_CLOSE_MID)
      break;
  }
  wire_reader_cleanup(&rd);
}

static void *serve(void *arg)
{
  (void)arg;
  for (int k = 0; k < fk.n_modes && !fk.stop;) {
    struct pollfd p = {fk.lfd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0)
      continue;
    int fd = accept(fk.lfd, NULL, NULL);
    if (fd < 0)
      continue;
    fk.conns++;
    serve_conn(fd, fk.modes[k++]);
    close(fd);
    fk.closed++;
  }
  return NULL;
}

/* Starts the fake with one mode per expected connection. */
static void fake_start(int n, const enum mode *modes)
{
  struct sockaddr_un sa;
  ck_assert_int_le(n, MAX_CONNS);
  fk.n_modes = n;
  memcpy(fk.modes, modes, (size_t)n * sizeof *modes);
  fk.lfd = socket(AF_UNIX, SOCK_STREAM, 0);
  ck_assert_int_ge(fk.lfd, 0);
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  ck_assert_uint_lt(strlen(fk.path), sizeof sa.sun_path);
  strcpy(sa.sun_path, fk.path);
  ck_assert_int_eq(bind(fk.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
  ck_assert_int_eq(listen(fk.lfd, 8), 0);
  ck_assert_int_eq(pthread_create(&fk.th, NULL, serve, NULL), 0);
}

static void fake_start1(enum mode m)
{
  fake_start(1, &m);
}

static void setup(void)
{
  memset(&fk, 0, sizeof fk);
  fk.lfd = -1;
  fk.dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(fk.dir);
  snprintf(fk.path, sizeof fk.path, "%s/arenad.sock", fk.dir);
}

static void teardown(void)
{
  if (fk.lfd >= 0) {
    fk.stop = 1;
    pthread_join(fk.th, NULL);
    close(fk.lfd);
  }
  tu_rm_rf(fk.dir);
  free(fk.dir);
}

/* ---- helpers ------------------------------------------------------------ */

static arenad_client_t *open_client(int fallback, uint32_t timeout_ms)
{
  struct arenad_client_options o;
  arenad_client_options_init(&o);
  o.socket_path = fk.path;
  o.fallback = fallback;
  o.request_timeout_ms = timeout_ms;
  o.connect_timeout_ms = 2000;
  arenad_client_t *c = (arenad_client_t *)1;
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  ck_assert_ptr_nonnull(c);
  return c;
}

/* The plan the planner makes for the test graph with default options. */
static void local_plan(struct planner_plan *p)
{
  struct planner_options o;
  planner_options_init(&o);
  planner_plan_init(p);
  ck_assert_int_eq(planner_run(&test_graph, &o, p, NULL), 0);
}

/* Checks that r holds a valid plan of the test graph. */
static void assert_good_result(const struct arenad_client_result *r)
{
  struct planner_options o;
  uint8_t gd[PLANNER_DIGEST_LEN];
  char err[ARENA_ERR_LEN] = "";
  planner_options_init(&o);
  ck_assert_uint_eq(r->plan.n_offsets, TG_N);
  ck_assert_msg(planner_verify(&test_graph, &o, &r->plan, err) == 0, "%s",
                err);
  ck_assert_int_eq(planner_graph_digest(&test_graph, gd), 0);
  ck_assert_int_eq(memcmp(gd, r->graph_digest, sizeof gd), 0);
}

static void assert_empty_result(const struct arenad_client_result *r)
{
  ck_assert_ptr_null(r->plan.offsets);
  ck_assert_uint_eq(r->plan.n_offsets, 0);
  ck_assert_int_eq(r->cached, 0);
  ck_assert_int_eq(r->local, 0);
}

/* Runs one plan call against the fake; returns its code. */
static int plan_once(int fallback, uint32_t timeout_ms,
                     struct arenad_client_result *r, char *msg, size_t cap)
{
  arenad_client_t *c = open_client(fallback, timeout_ms);
  arenad_client_result_init(r);
  int rc = arenad_client_plan(c, &test_graph, NULL, &test_key, r);
  snprintf(msg, cap, "%s", arenad_client_errmsg(c));
  arenad_client_close(c);
  return rc;
}

/* ---- handles and options ------------------------------------------------ */

START_TEST(open_options)
{
  struct arenad_client_options o;
  arenad_client_t *c = (arenad_client_t *)1;
  arenad_client_options_init(&o);
  ck_assert_ptr_null(o.socket_path);
  ck_assert_int_eq(o.fallback, 1);
  ck_assert_uint_eq(o.connect_timeout_ms,
                    ARENAD_CLIENT_DEFAULT_CONNECT_TIMEOUT_MS);

  ck_assert_int_eq(unsetenv(ARENAD_CLIENT_SOCKET_ENV), 0);
  ck_assert_int_eq(arenad_client_open(NULL, &c), 0);
  ck_assert_str_eq(arenad_client__socket_path(c),
                   ARENAD_CLIENT_DEFAULT_SOCKET);
  ck_assert_str_eq(arenad_client_errmsg(c), "");
  arenad_client_close(c);

  ck_assert_int_eq(setenv(ARENAD_CLIENT_SOCKET_ENV, "/tmp/x/env.sock", 1),
                   0);
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  ck_assert_str_eq(arenad_client__socket_path(c), "/tmp/x/env.sock");
  arenad_client_close(c);

  /* An explicit path wins over the environment. */
  o.socket_path = "/tmp/x/explicit.sock";
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  ck_assert_str_eq(arenad_client__socket_path(c), "/tmp/x/explicit.sock");
  arenad_client_close(c);

  char longp[200];
  memset(longp, 'a', sizeof longp - 1);
  longp[sizeof longp - 1] = '\0';
  o.socket_path = longp;
  ck_assert_int_eq(arenad_client_open(&o, &c), ARENA_EINVAL);
  ck_assert_ptr_null(c);
  o.socket_path = "";
  ck_assert_int_eq(arenad_client_open(&o, &c), ARENA_EINVAL);

  arenad_client_close(NULL);
  arenad_client_result_cleanup(NULL);
  ck_assert_str_eq(arenad_client_errmsg(NULL), "");
}
END_TEST

START_TEST(status_mapping)
{
  static const struct {
    Arenad__V1__Status s;
    int code;
  } m[] = {
      {ARENAD__V1__STATUS__OK, 0},
      {ARENAD__V1__STATUS__NOT_FOUND, ARENA_ENOENT},
      {ARENAD__V1__STATUS__INVALID_ARGUMENT, ARENA_EINVAL},
      {ARENAD__V1__STATUS__BUSY, ARENA_EBUSY},
      {ARENAD__V1__STATUS__DENIED, ARENA_EDENIED},
      {ARENAD__V1__STATUS__TOO_LARGE, ARENA_ETOOBIG},
      {ARENAD__V1__STATUS__UNSUPPORTED_VERSION, ARENA_EVERSION},
      {ARENAD__V1__STATUS__INTERNAL, ARENA_EINTERNAL},
      {(Arenad__V1__Status)99, ARENA_EPROTO},
  };
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
    ck_assert_int_eq(arenad_client__status_code(m[i].s), m[i].code);
}
END_TEST

START_TEST(bad_inputs_never_reach_the_daemon)
{
  struct arenad_client_result r;
  arenad_client_t *c = open_client(1, 1000); /* no fake: nothing listens */
  arenad_client_result_init(&r);

  struct arenad_model_key k = test_key;
  k.model_hash_len = 0;
  ck_assert_int_eq(arenad_client_plan(c, &test_graph, NULL, &k, &r),
                   ARENA_EINVAL);
  ck_assert_ptr_nonnull(strstr(arenad_client_errmsg(c), "model hash"));
  k.model_hash_len = ARENAD_CLIENT_MAX_MODEL_HASH + 1;
  ck_assert_int_eq(arenad_client_plan(c, &test_graph, NULL, &k, &r),
                   ARENA_EINVAL);
  int64_t neg[] = {1, -2};
  struct arenad_dims nd = {neg, 2};
  k = test_key;
  k.inputs = &nd;
  ck_assert_int_eq(arenad_client_plan(c, &test_graph, NULL, &k, &r),
                   ARENA_EINVAL);
  ck_assert_ptr_nonnull(strstr(arenad_client_errmsg(c), "negative"));
  ck_assert_int_eq(arenad_client_lookup(c, &k, &test_graph, NULL, &r),
                   ARENA_EINVAL);

  /* An invalid graph fails even with fallback: local planning would
   * fail the same way. */
  struct planner_tensor bad[TG_N];
  memcpy(bad, tg, sizeof bad);
  bad[2].first = 9;
  struct planner_graph bg = {bad, TG_N};
  ck_assert_int_eq(arenad_client_plan(c, &bg, NULL, &test_key, &r),
                   ARENA_ELIFETIME);
  bad[2] = tg[2];
  bad[3].id = bad[0].id;
  ck_assert_int_eq(arenad_client_plan(c, &bg, NULL, &test_key, &r),
                   ARENA_EDUPID);
  struct planner_graph empty = {tg, 0};
  ck_assert_int_eq(arenad_client_plan(c, &empty, NULL, &test_key, &r),
                   ARENA_EEMPTY);
  assert_empty_result(&r);
  arenad_client_close(c);
}
END_TEST

/* ---- unreachable daemon ------------------------------------------------- */

START_TEST(unreachable_with_fallback)
{
  struct arenad_client_result r;
  char msg[600];
  ck_assert_int_eq(plan_once(1, 1000, &r, msg, sizeof msg), 0);
  ck_assert_int_eq(r.local, 1);
  ck_assert_int_eq(r.cached, 0);
  ck_assert_int_eq(r.fallback_reason, ARENA_EUNAVAIL);
  ck_assert_msg(strstr(msg, "unreachable") != NULL, "%s", msg);
  ck_assert_msg(strstr(msg, fk.path) != NULL, "%s", msg);
  assert_good_result(&r);
  struct planner_plan p;
  local_plan(&p);
  for (size_t i = 0; i < TG_N; i++)
    ck_assert_uint_eq(r.plan.offsets[i], p.offsets[i]);
  uint8_t od[PLANNER_DIGEST_LEN];
  struct planner_options o;
  planner_options_init(&o);
  planner_options_digest(&o, od);
  ck_assert_int_eq(memcmp(od, r.options_digest, sizeof od), 0);
  planner_plan_cleanup(&p);
  arenad_client_result_cleanup(&r);
  assert_empty_result(&r);
}
END_TEST

START_TEST(unreachable_without_fallback)
{
  struct arenad_client_result r;
  char msg[600];
  ck_assert_int_eq(plan_once(0, 1000, &r, msg, sizeof msg), ARENA_EUNAVAIL);
  ck_assert_msg(strstr(msg, fk.path) != NULL, "%s", msg);
  assert_empty_result(&r);

  /* A socket file that nobody listens on: connection refused. */
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  strcpy(sa.sun_path, fk.path);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  ck_assert_int_eq(plan_once(0, 1000, &r, msg, sizeof msg), ARENA_EUNAVAIL);
  ck_assert_msg(strstr(msg, "refused") != NULL, "%s", msg);
  close(fd);

  /* Lookup never falls back. */
  arenad_client_t *c = open_client(1, 1000);
  ck_assert_int_eq(arenad_client_lookup(c, &test_key, &test_graph, NULL, &r),
                   ARENA_EUNAVAIL);
  assert_empty_result(&r);
  arenad_client_close(c);
}
END_TEST

/* ---- a well-behaved daemon ---------------------------------------------- */

START_TEST(good_plan_and_connection_reuse)
{
  fake_start1(M_GOOD);
  arenad_client_t *c = open_client(0, 5000);
  struct arenad_client_result r;
  struct planner_plan p;
  arenad_client_result_init(&r);
  local_plan(&p);
  for (int round = 0; round < 3; round++) {
    ck_assert_msg(arenad_client_plan(c, &test_graph, NULL, &test_key, &r) ==
                      0,
                  "%s", arenad_client_errmsg(c));
    ck_assert_int_eq(r.local, 0);
    ck_assert_int_eq(r.cached, 1);
    ck_assert_uint_eq(r.planning_us, 777);
    assert_good_result(&r);
    for (size_t i = 0; i < TG_N; i++)
      ck_assert_uint_eq(r.plan.offsets[i], p.offsets[i]);
  }
  ck_assert_int_eq(fk.conns, 1);
  ck_assert_int_eq(fk.requests, 3);
  ck_assert_int_eq(fk.last_version, 1);

  /* A raw ping on the same connection. */
  Arenad__V1__Ping ping = ARENAD__V1__PING__INIT;
  ping.payload.data = (uint8_t *)"hello";
  ping.payload.len = 5;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.body_case = ARENAD__V1__REQUEST__BODY_PING;
  req.ping = &ping;
  Arenad__V1__Response *resp = NULL;
  ck_assert_int_eq(arenad_client__call(c, &req, &resp), 0);
  ck_assert_uint_eq(resp->request_id, req.request_id);
  ck_assert_int_eq(arenad_client__check_status(c, resp, "ping"), 0);
  ck_assert_int_eq(resp->body_case, ARENAD__V1__RESPONSE__BODY_PONG);
  ck_assert_uint_eq(resp->pong->payload.len, 5);
  ck_assert_int_eq(memcmp(resp->pong->payload.data, "hello", 5), 0);
  ck_assert_str_eq(resp->pong->version, "fake-1");
  wire_free_response(resp);
  ck_assert_int_eq(fk.conns, 1);

  planner_plan_cleanup(&p);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

/* The daemon closes an idle connection between two calls: the second
 * call notices and retries once on a new connection. */
START_TEST(reconnect_after_idle_close)
{
  enum mode m[] = {M_ONE_THEN_CLOSE, M_GOOD};
  fake_start(2, m);
  arenad_client_t *c = open_client(0, 5000);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  ck_assert_int_eq(arenad_client_plan(c, &test_graph, NULL, &test_key, &r),
                   0);
  /* Let the fake close its end before the next call. */
  for (int i = 0; i < 2000 && fk.closed < 1; i++) {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  ck_assert_int_eq(fk.closed, 1);
  ck_assert_msg(arenad_client_plan(c, &test_graph, NULL, &test_key, &r) == 0,
                "%s", arenad_client_errmsg(c));
  ck_assert_int_eq(r.local, 0);
  ck_assert_int_eq(fk.conns, 2);
  assert_good_result(&r);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

START_TEST(stale_reply_skipped)
{
  fake_start1(M_STALE_FIRST);
  struct arenad_client_result r;
  char msg[600];
  ck_assert_msg(plan_once(0, 5000, &r, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_int_eq(r.local, 0);
  assert_good_result(&r);
  arenad_client_result_cleanup(&r);
}
END_TEST

/* ---- a misbehaving daemon ----------------------------------------------- */

/* Modes whose plan must be rejected, the code, and a word of the text. */
static const struct {
  enum mode m;
  int code;
  const char *needle;
} bad_plans[] = {
    {M_WRONG_PLAN, ARENA_EVERIFY, "verification"},
    {M_OTHER_DIGEST, ARENA_EVERIFY, "another graph"},
    {M_SHORT_PLAN, ARENA_EVERIFY, "offsets"},
    {M_GARBAGE, ARENA_EPROTO, "malformed"},
    {M_ZERO_FRAME, ARENA_EPROTO, "malformed"},
    {M_CLOSE_MID, ARENA_EPROTO, "middle of a reply"},
    {M_CLOSE_NOREPLY, ARENA_EUNAVAIL, "closed the connection"},
    {M_NO_BODY, ARENA_EPROTO, "without a plan"},
};

START_TEST(bad_plan_rejected)
{
  fake_start1(bad_plans[_i].m);
  struct arenad_client_result r;
  char msg[600];
  int rc = plan_once(0, 5000, &r, msg, sizeof msg);
  ck_assert_msg(rc == bad_plans[_i].code, "mode %d: %s (%s)", _i,
                arena_err_name(rc), msg);
  ck_assert_msg(strstr(msg, bad_plans[_i].needle) != NULL, "mode %d: %s", _i,
                msg);
  assert_empty_result(&r);
}
END_TEST

START_TEST(bad_plan_falls_back)
{
  fake_start1(bad_plans[_i].m);
  struct arenad_client_result r;
  char msg[600];
  ck_assert_int_eq(plan_once(1, 5000, &r, msg, sizeof msg), 0);
  ck_assert_int_eq(r.local, 1);
  ck_assert_int_eq(r.cached, 0);
  ck_assert_int_eq(r.fallback_reason, bad_plans[_i].code);
  ck_assert_msg(strstr(msg, "planned locally") != NULL, "%s", msg);
  assert_good_result(&r);
  arenad_client_result_cleanup(&r);
}
END_TEST

/* Statuses, sent both as a connection-level refusal (request id 0, then
 * close) and as the answer to the request. */
static const struct {
  Arenad__V1__Status s;
  int code;
} statuses[] = {
    {ARENAD__V1__STATUS__BUSY, ARENA_EBUSY},
    {ARENAD__V1__STATUS__DENIED, ARENA_EDENIED},
    {ARENAD__V1__STATUS__UNSUPPORTED_VERSION, ARENA_EVERSION},
    {ARENAD__V1__STATUS__TOO_LARGE, ARENA_ETOOBIG},
    {ARENAD__V1__STATUS__INVALID_ARGUMENT, ARENA_EINVAL},
    {ARENAD__V1__STATUS__NOT_FOUND, ARENA_ENOENT},
    {ARENAD__V1__STATUS__INTERNAL, ARENA_EINTERNAL},
};
#define N_STATUSES (sizeof statuses / sizeof statuses[0])

START_TEST(status_replies)
{
  int refuse = _i >= (int)N_STATUSES;
  int k = _i % (int)N_STATUSES;
  fk.status = statuses[k].s;
  fake_start1(refuse ? M_REFUSE : M_STATUS);
  struct arenad_client_result r;
  char msg[600];
  int rc = plan_once(0, 5000, &r, msg, sizeof msg);
  ck_assert_msg(rc == statuses[k].code, "%s: got %s (%s)",
                wire_status_name(statuses[k].s), arena_err_name(rc), msg);
  ck_assert_msg(strstr(msg, wire_status_name(statuses[k].s)) != NULL, "%s",
                msg);
  ck_assert_msg(strstr(msg, refuse ? "refused by the fake" : "fake says no"),
                "%s", msg);
  /* The daemon's text reaches the caller without control characters. */
  ck_assert_ptr_null(strchr(msg, '\033'));
  ck_assert_ptr_null(strchr(msg, '\n'));
  assert_empty_result(&r);
}
END_TEST

START_TEST(busy_falls_back)
{
  enum mode m[] = {M_REFUSE, M_STATUS};
  fk.status = ARENAD__V1__STATUS__BUSY;
  fake_start(2, m);
  arenad_client_t *c = open_client(1, 5000);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(arenad_client_plan(c, &test_graph, NULL, &test_key, &r),
                     0);
    ck_assert_int_eq(r.local, 1);
    ck_assert_int_eq(r.fallback_reason, ARENA_EBUSY);
    ck_assert_ptr_nonnull(strstr(arenad_client_errmsg(c), "BUSY"));
    assert_good_result(&r);
  }
  ck_assert_int_eq(fk.conns, 2);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

/* A daemon that never answers: ETIMEDOUT after the request timeout, the
 * connection is dropped, and the next call reconnects. */
START_TEST(silent_daemon_times_out)
{
  enum mode m[] = {M_SILENT, M_GOOD};
  fake_start(2, m);
  arenad_client_t *c = open_client(0, 300);
  struct arenad_client_result r;
  struct timespec t0, t1;
  arenad_client_result_init(&r);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = arenad_client_plan(c, &test_graph, NULL, &test_key, &r);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  ck_assert_msg(rc == ARENA_ETIMEDOUT, "%s: %s", arena_err_name(rc),
                arenad_client_errmsg(c));
  ck_assert_ptr_nonnull(strstr(arenad_client_errmsg(c), "300 ms"));
  /* It returned; the bound is loose on purpose (slow CI machines). */
  ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 20);
  assert_empty_result(&r);
  ck_assert_msg(arenad_client_plan(c, &test_graph, NULL, &test_key, &r) == 0,
                "%s", arenad_client_errmsg(c));
  ck_assert_int_eq(r.local, 0);
  ck_assert_int_eq(fk.conns, 2);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

START_TEST(silent_daemon_falls_back)
{
  fake_start1(M_SILENT);
  struct arenad_client_result r;
  char msg[600];
  ck_assert_int_eq(plan_once(1, 200, &r, msg, sizeof msg), 0);
  ck_assert_int_eq(r.local, 1);
  ck_assert_int_eq(r.fallback_reason, ARENA_ETIMEDOUT);
  assert_good_result(&r);
  arenad_client_result_cleanup(&r);
}
END_TEST

/* ---- lookup ------------------------------------------------------------- */

START_TEST(lookup_maps_canonical_order)
{
  fake_start1(M_LOOKUP);
  arenad_client_t *c = open_client(0, 5000);
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  ck_assert_msg(arenad_client_lookup(c, &test_key, &test_graph, NULL, &r) ==
                    0,
                "%s", arenad_client_errmsg(c));
  ck_assert_int_eq(fk.lookup_digest_len, PLANNER_DIGEST_LEN);
  ck_assert_int_eq(r.cached, 1);
  ck_assert_int_eq(r.local, 0);
  assert_good_result(&r);

  /* Expected: plan the sorted graph, then put each offset back at its
   * tensor's position in the caller's order. */
  struct planner_tensor *st = sorted_copy(&test_graph);
  struct planner_graph sg = {st, TG_N};
  struct planner_options o;
  struct planner_plan p;
  planner_options_init(&o);
  planner_plan_init(&p);
  ck_assert_int_eq(planner_run(&sg, &o, &p, NULL), 0);
  for (size_t k = 0; k < TG_N; k++)
    for (size_t i = 0; i < TG_N; i++)
      if (tg[i].id == st[k].id)
        ck_assert_uint_eq(r.plan.offsets[i], p.offsets[k]);
  planner_plan_cleanup(&p);
  free(st);
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
}
END_TEST

START_TEST(lookup_rejections)
{
  enum mode m[] = {M_LOOKUP_DECOY, M_LOOKUP_WRONG, M_STATUS, M_LOOKUP};
  fk.status = ARENAD__V1__STATUS__NOT_FOUND;
  fake_start(4, m);
  struct arenad_client_result r;
  arenad_client_result_init(&r);

  arenad_client_t *c = open_client(1, 5000);
  ck_assert_int_eq(arenad_client_lookup(c, &test_key, &test_graph, NULL, &r),
                   ARENA_ENOENT);
  ck_assert_ptr_nonnull(strstr(arenad_client_errmsg(c), "none for this"));
  arenad_client_close(c);

  c = open_client(1, 5000);
  ck_assert_int_eq(arenad_client_lookup(c, &test_key, &test_graph, NULL, &r),
                   ARENA_EVERIFY);
  assert_empty_result(&r);
  arenad_client_close(c);

  c = open_client(1, 5000);
  ck_assert_int_eq(arenad_client_lookup(c, &test_key, &test_graph, NULL, &r),
                   ARENA_ENOENT);
  ck_assert_ptr_nonnull(strstr(arenad_client_errmsg(c), "NOT_FOUND"));
  arenad_client_close(c);

  /* Other options than the stored plan's: its options digest differs. */
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = 16;
  c = open_client(1, 5000);
  ck_assert_int_eq(arenad_client_lookup(c, &test_key, &test_graph, &o, &r),
                   ARENA_ENOENT);
  arenad_client_close(c);
  assert_empty_result(&r);
}
END_TEST

/* ---- arenactl's daemon commands --------------------------------------- */

/* What one run of arenactl produced. */
struct run {
  int status; /* exit status, or 128 + signal */
  char *out;  /* stdout, owned */
  char *err;  /* stderr, owned */
};

static const char *arenactl(void)
{
  const char *p = getenv("ARENACTL");
  return p && *p ? p : "build/arenactl";
}

/* Runs arenactl with args (NULL-terminated; argv[0] is added), stdout and
 * stderr captured in files of the temp dir. */
static void run_cli(struct run *r, const char *const *args)
{
  char out[700], err[700];
  const char *argv[32];
  size_t n = 0;
  argv[n++] = arenactl();
  for (; args[n - 1] && n < 31; n++)
    argv[n] = args[n - 1];
  argv[n] = NULL;
  snprintf(out, sizeof out, "%s/out", fk.dir);
  snprintf(err, sizeof err, "%s/err", fk.dir);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
      _exit(126);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  ck_assert_msg(r->status != 127, "cannot run %s (set ARENACTL)", argv[0]);
  r->out = tu_read_file(out, NULL);
  r->err = tu_read_file(err, NULL);
  ck_assert_ptr_nonnull(r->out);
  ck_assert_ptr_nonnull(r->err);
}

#define RUN(r, ...) run_cli((r), (const char *const[]){__VA_ARGS__, NULL})

static void run_free(struct run *r)
{
  free(r->out);
  free(r->err);
}

static void assert_has(const char *hay, const char *needle)
{
  ck_assert_msg(strstr(hay, needle) != NULL, "'%s' not in:\n%s", needle,
                hay);
}

/* Writes the test graph as a CSV file; returns its path (static). */
static const char *graph_csv(void)
{
  static char path[700];
  snprintf(path, sizeof path, "%s/g.csv", fk.dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "id,size,first,last\n");
  for (size_t i = 0; i < TG_N; i++)
    fprintf(f, "%u,%llu,%lld,%lld\n", (unsigned)tg[i].id,
            (unsigned long long)tg[i].size, (long long)tg[i].first,
            (long long)tg[i].last);
  ck_assert_int_eq(fclose(f), 0);
  return path;
}

START_TEST(cli_unreachable)
{
  struct run r;
  static const char *const cmds[][4] = {
      {"ping", NULL},
      {"status", "--json", NULL},
      {"stats", NULL},
      {"ls", NULL},
      {"get", "--model-hash", "00ff", NULL},
      {"evict", "--all", NULL},
  };
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    const char *args[8] = {"-s", fk.path};
    memcpy(args + 2, cmds[i], sizeof cmds[i]);
    run_cli(&r, args);
    ck_assert_msg(r.status == 69, "%s: exit %d", cmds[i][0], r.status);
    assert_has(r.err, "unreachable");
    ck_assert_str_eq(r.out, "");
    run_free(&r);
  }
  /* plan falls back to local planning unless told not to. */
  RUN(&r, "plan", "--json", "-s", fk.path, graph_csv());
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "\"cached\":false,\"local\":true,\"graph_digest\":\"");
  run_free(&r);
  RUN(&r, "plan", "--no-fallback", "--socket", fk.path, graph_csv());
  ck_assert_int_eq(r.status, 69);
  ck_assert_str_eq(r.out, "");
  run_free(&r);
  /* ARENAD_SOCKET is used when there is no -s. */
  ck_assert_int_eq(setenv("ARENAD_SOCKET", fk.path, 1), 0);
  RUN(&r, "ping");
  ck_assert_int_eq(r.status, 69);
  assert_has(r.err, fk.path);
  run_free(&r);
}
END_TEST

START_TEST(cli_usage_errors)
{
  static const char *const bad[][5] = {
      {"get", NULL},
      {"get", "--model-hash", "abc", NULL},
      {"get", "--model-hash", "zz", NULL},
      {"get", "--model-hash", "00", "--shape", "1xx2"},
      {"get", "--model-hash", "00", "--graph-digest", "00"},
      {"ls", "--order", "oldest", NULL},
      {"ls", "--limit", "0", NULL},
      {"evict", NULL},
      {"evict", "--all", "--model-hash", "00", NULL},
      {"evict", "--key", "abc", NULL},
      {"ping", "--bogus", NULL},
      {"status", "extra", NULL},
      {"stats", "--timeout-ms", "0", NULL},
      {"-s", NULL},
      {"-s", "", "ping", NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct run r;
    run_cli(&r, bad[i]);
    ck_assert_msg(r.status == 64, "case %zu (%s): exit %d, %s", i, bad[i][0],
                  r.status, r.err);
    ck_assert_msg(r.err[0] != '\0', "case %zu: no message", i);
    run_free(&r);
  }
  struct run r;
  RUN(&r, "--help");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "ping");
  assert_has(r.out, "evict");
  run_free(&r);
  static const char *const helps[] = {"get", "ls", "evict", "ping",
                                      "status", "stats"};
  for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++) {
    RUN(&r, helps[i], "--help");
    ck_assert_int_eq(r.status, 0);
    assert_has(r.out, "Exit status");
    run_free(&r);
  }
}
END_TEST

START_TEST(cli_ping_status_stats)
{
  enum mode m[] = {M_GOOD, M_GOOD, M_GOOD, M_GOOD, M_GOOD};
  fake_start(5, m);
  struct run r;
  RUN(&r, "-s", fk.path, "ping", "--payload", "abc");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "pong from arenad fake-1");
  run_free(&r);
  RUN(&r, "ping", "-s", fk.path, "--json");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "{\"ok\":true,\"version\":\"fake-1\",\"rtt_us\":");
  run_free(&r);
  RUN(&r, "status", "-s", fk.path);
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "arenad fake-1 (pid 4242)");
  assert_has(r.out, "uptime:      1d 01:01:01");
  assert_has(r.out, "/nonexistent/fake.db");
  assert_has(r.out, "3 hits");
  assert_has(r.out, "hit rate 75.0%");
  run_free(&r);
  RUN(&r, "status", "-s", fk.path, "--json");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "\"pid\":4242,\"uptime_ms\":90061000");
  assert_has(r.out, "\"requests\":17");
  run_free(&r);
  RUN(&r, "stats", "-s", fk.path);
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "verify_failures: 5\n");
  assert_has(r.out, "misses: 1\n");
  run_free(&r);
}
END_TEST

START_TEST(cli_cache_commands)
{
  enum mode m[] = {M_GOOD, M_GOOD, M_GOOD, M_GOOD, M_LOOKUP, M_LOOKUP};
  fake_start(6, m);
  struct run r;
  RUN(&r, "-s", fk.path, "ls", "--limit", "7", "--order", "used");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "010203  1x96x96x1  32  55296");
  assert_has(r.out, "  7  2023-11-14T22:13:20Z  abcd\n");
  run_free(&r);
  RUN(&r, "-s", fk.path, "ls", "--json");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "{\"entries\":[{\"key\":\"abcd\",\"model_hash\":"
                    "\"010203\",\"input_shape\":[[1,96,96,1]]");
  run_free(&r);
  RUN(&r, "-s", fk.path, "evict", "--all");
  ck_assert_int_eq(r.status, 0);
  ck_assert_str_eq(r.out, "evicted 1 plan\n");
  run_free(&r);
  RUN(&r, "-s", fk.path, "evict", "--key", "00112233", "--json");
  ck_assert_int_eq(r.status, 0);
  ck_assert_str_eq(r.out, "{\"evicted\":7}\n");
  run_free(&r);
  RUN(&r, "-s", fk.path, "get", "--model-hash", "0102", "--shape",
      "1x3x224x224");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "plan 1 of 2");
  assert_has(r.out, "plan 2 of 2");
  assert_has(r.out, "graph digest:");
  run_free(&r);
  RUN(&r, "-s", fk.path, "get", "--model-hash", "0102", "--json");
  ck_assert_int_eq(r.status, 0);
  ck_assert_int_eq(strncmp(r.out, "{\"plans\":[{\"graph_digest\":\"", 27), 0);
  assert_has(r.out, "\"offsets\":[");
  ck_assert_int_eq(fk.lookup_digest_len, 0);
  run_free(&r);
}
END_TEST

/* Failures reach the documented exit statuses. */
static const struct {
  enum mode m;
  Arenad__V1__Status s;
  const char *cmd;
  int exit;
} cli_fail[] = {
    {M_REFUSE, ARENAD__V1__STATUS__BUSY, "ping", 75},
    {M_REFUSE, ARENAD__V1__STATUS__DENIED, "ls", 77},
    {M_STATUS, ARENAD__V1__STATUS__UNSUPPORTED_VERSION, "status", 76},
    {M_STATUS, ARENAD__V1__STATUS__NOT_FOUND, "get", 1},
    {M_STATUS, ARENAD__V1__STATUS__INTERNAL, "stats", 1},
    {M_STATUS, ARENAD__V1__STATUS__INVALID_ARGUMENT, "evict", 65},
    {M_GARBAGE, ARENAD__V1__STATUS__OK, "ping", 76},
    {M_SILENT, ARENAD__V1__STATUS__OK, "ping", 69},
    {M_WRONG_PLAN, ARENAD__V1__STATUS__OK, "plan", 1},
    {M_REFUSE, ARENAD__V1__STATUS__BUSY, "plan", 75},
};

START_TEST(cli_failures)
{
  fk.status = cli_fail[_i].s;
  fake_start1(cli_fail[_i].m);
  const char *cmd = cli_fail[_i].cmd;
  struct run r;
  if (strcmp(cmd, "get") == 0)
    RUN(&r, "-s", fk.path, cmd, "--model-hash", "0102");
  else if (strcmp(cmd, "evict") == 0)
    RUN(&r, "-s", fk.path, cmd, "--all");
  else if (strcmp(cmd, "plan") == 0)
    RUN(&r, "-s", fk.path, cmd, "--no-fallback", graph_csv());
  else
    RUN(&r, "-s", fk.path, cmd, "--timeout-ms", "300");
  ck_assert_msg(r.status == cli_fail[_i].exit, "case %d: exit %d, %s", _i,
                r.status, r.err);
  ck_assert_str_eq(r.out, "");
  ck_assert_int_eq(strncmp(r.err, "arenactl: ", 10), 0);
  run_free(&r);
}
END_TEST

START_TEST(cli_plan_through_daemon)
{
  enum mode m[] = {M_GOOD, M_GOOD, M_WRONG_PLAN};
  fake_start(3, m);
  struct run r, l;
  RUN(&r, "plan", "-s", fk.path, "--json", graph_csv());
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "\"cached\":true,\"local\":false,\"graph_digest\":\"");
  RUN(&l, "plan", "--local", "--json", graph_csv());
  ck_assert_int_eq(l.status, 0);
  assert_has(l.out, "\"cached\":false,\"local\":true,");
  /* Same digest and offsets either way. */
  ck_assert_str_eq(strstr(r.out, "\"graph_digest\""),
                   strstr(l.out, "\"graph_digest\""));
  run_free(&r);
  run_free(&l);
  RUN(&r, "plan", "-s", fk.path, "--shape", "1x3,4", graph_csv());
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "source:          arenad (cached)\n");
  assert_has(r.out, "graph digest:    ");
  run_free(&r);
  /* A wrong plan is never printed; with fallback it is replaced. */
  RUN(&r, "plan", "-s", fk.path, graph_csv());
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "source:          this process (arenad not used: plan "
                    "failed verification)");
  run_free(&r);
  RUN(&r, "plan", "-s", fk.path, "--shape", "1y2", graph_csv());
  ck_assert_int_eq(r.status, 64);
  run_free(&r);
}
END_TEST

Suite *client_suite(void)
{
  Suite *s = suite_create("client");
  TCase *tc = tcase_create("api");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, open_options);
  tcase_add_test(tc, status_mapping);
  tcase_add_test(tc, bad_inputs_never_reach_the_daemon);
  tcase_add_test(tc, unreachable_with_fallback);
  tcase_add_test(tc, unreachable_without_fallback);
  suite_add_tcase(s, tc);

  tc = tcase_create("fake-daemon");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, good_plan_and_connection_reuse);
  tcase_add_test(tc, reconnect_after_idle_close);
  tcase_add_test(tc, stale_reply_skipped);
  tcase_add_loop_test(tc, bad_plan_rejected, 0,
                      (int)(sizeof bad_plans / sizeof bad_plans[0]));
  tcase_add_loop_test(tc, bad_plan_falls_back, 0,
                      (int)(sizeof bad_plans / sizeof bad_plans[0]));
  tcase_add_loop_test(tc, status_replies, 0, 2 * (int)N_STATUSES);
  tcase_add_test(tc, busy_falls_back);
  tcase_add_test(tc, silent_daemon_times_out);
  tcase_add_test(tc, silent_daemon_falls_back);
  tcase_add_test(tc, lookup_maps_canonical_order);
  tcase_add_test(tc, lookup_rejections);
  suite_add_tcase(s, tc);

  tc = tcase_create("arenactl");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, cli_unreachable);
  tcase_add_test(tc, cli_usage_errors);
  tcase_add_test(tc, cli_ping_status_stats);
  tcase_add_test(tc, cli_cache_commands);
  tcase_add_loop_test(tc, cli_failures, 0,
                      (int)(sizeof cli_fail / sizeof cli_fail[0]));
  tcase_add_test(tc, cli_plan_through_daemon);
  suite_add_tcase(s, tc);
  return s;
}

/*
 * check_client_harness.c - the fake daemon and the helpers that the
 * client tests share (declared in check_client.h).
 *
 * The fake runs in a thread of the test process, listening on a Unix
 * socket in a fresh temporary directory and speaking the real wire format.
 * Each accepted connection is served in a scripted way (a "mode"): right
 * plans, wrong plans, plans for another graph, plans that share bytes in
 * place when the request turned sharing off, refusals with each status,
 * silence, acknowledged or slow replies, a connection never read, a
 * reply cut off in the middle, garbage, the offsets of an earlier plan
 * or a plan tampered with after a good one, and canned replies to
 * ping, stats, list, evict, lookup, export and preload for the arenactl
 * tests. Also here:
 * the test graph and model key, the fixture, and the client helpers.
 */
#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check_client.h"
#include "digest.h"
#include "testutil.h"
#include "wire_plan.h"

/* ---- the test graph ----------------------------------------------------- */

/* Ids deliberately out of order, lifetimes overlapping. As many as
 * CT_TG_N says: the declaration in check_client.h makes any other count a
 * compile error. */
const struct planner_tensor ct_tg[] = {
    {9, 1000, 0, 2, 0, PLANNER_NOT_PINNED, 0, 0},
    {4, 500, 1, 3, 0, PLANNER_NOT_PINNED, 0, 0},
    {7, 2000, 2, 4, 0, PLANNER_NOT_PINNED, 0, 0},
    {1, 300, 0, 4, 0, PLANNER_NOT_PINNED, 0, 0},
    {5, 800, 3, 5, 0, PLANNER_NOT_PINNED, 0, 0},
};
const struct planner_graph ct_graph = {ct_tg, CT_TG_N};

static const uint8_t test_hash[] = {1, 2, 3, 4, 5, 6, 7, 8};
static const int64_t test_dims[] = {1, 3, 224, 224};
static const struct arenad_dims test_input = {test_dims, 4};
const struct arenad_model_key ct_key = {test_hash, sizeof test_hash,
                                       &test_input, 1};

/* The tensors of g sorted by id (canonical order); owned, free(). */
struct planner_tensor *ct_sorted_copy(const struct planner_graph *g)
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

struct ct_fake ct_fk;

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
      ct_fk.requests++;
      ct_fk.last_version = (int)q->protocol_version;
      ct_fk.last_want_ack = q->want_ack;
      ct_fk.last_id = q->request_id;
      return q;
    }
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) == 0) {
      if (ct_fk.stop)
        return NULL;
      continue;
    }
    uint8_t buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0 || wire_reader_feed(rd, buf, (size_t)n) != 0)
      return NULL;
  }
}

/* Notes the model key of Plan request m for the tests. */
static void note_key(const Arenad__V1__Plan *m)
{
  int64_t sum = 0;
  for (size_t i = 0; i < m->n_input_shape; i++)
    for (size_t j = 0; j < m->input_shape[i]->n_dims; j++)
      sum += m->input_shape[i]->dims[j];
  ct_fk.last_dims_sum = sum;
  ct_fk.last_hash_len = (int)m->model_hash.len;
  ct_fk.last_hash_tail =
      m->model_hash.len ? m->model_hash.data[m->model_hash.len - 1] : -1;
}

/* Replaces p's offsets as M_OLD_OFFSETS and M_TAMPER_LATER call for,
 * from the second plan of a connection on; keeps the first. */
static void lie(struct planner_plan *p, const struct planner_graph *g,
                enum ct_mode m)
{
  if (ct_fk.conn_plans++ == 0) {
    if (m == M_OLD_OFFSETS) {
      planner_plan_cleanup(&ct_fk.first);
      ct_fk.first = *p;
      ct_fk.first.offsets = malloc(p->n_offsets * sizeof *p->offsets);
      ck_assert_ptr_nonnull(ct_fk.first.offsets);
      memcpy(ct_fk.first.offsets, p->offsets,
             p->n_offsets * sizeof *p->offsets);
    }
    return;
  }
  if (m == M_OLD_OFFSETS && ct_fk.first.n_offsets == p->n_offsets) {
    memcpy(p->offsets, ct_fk.first.offsets,
           p->n_offsets * sizeof *p->offsets);
    p->arena_bytes = ct_fk.first.arena_bytes;
  }
  if (m == M_TAMPER_LATER && p->n_offsets >= 2) {
    p->offsets[1] = p->offsets[0];
    p->arena_bytes = 0;
    for (size_t i = 0; i < p->n_offsets; i++)
      if (g->tensors[i].size &&
          p->offsets[i] + g->tensors[i].size > p->arena_bytes)
        p->arena_bytes = p->offsets[i] + g->tensors[i].size;
  }
}

/* Plans the request's graph and sends the reply the mode calls for. */
static void answer_plan(int fd, const Arenad__V1__Request *q, enum ct_mode m)
{
  struct wire_limits l;
  struct wire_graph g;
  struct planner_plan p;
  uint8_t gd[PLANNER_DIGEST_LEN], od[PLANNER_DIGEST_LEN];
  wire_limits_init(&l);
  planner_plan_init(&p);
  Arenad__V1__Plan pm = *q->plan;
  Arenad__V1__PlanOptions po = ARENAD__V1__PLAN_OPTIONS__INIT;
  if (m == M_SHARE_ANYWAY) { /* as if the request asked for sharing */
    if (pm.options)
      po = *pm.options;
    po.no_in_place = 0;
    pm.options = &po;
  }
  if (wire_graph_from_plan(&pm, &l, &g, NULL) != 0)
    return;
  struct planner_graph pg = {g.tensors, g.n_tensors};
  if (planner_run(&pg, &g.opts, &p, NULL) != 0 ||
      planner_graph_digest(&pg, gd) != 0) {
    wire_graph_cleanup(&g);
    return;
  }
  planner_options_digest(&g.opts, od);
  note_key(q->plan);
  if (m == M_OLD_OFFSETS || m == M_TAMPER_LATER)
    lie(&p, &pg, m);
  if (m == M_WRONG_PLAN)
    for (size_t i = 0; i < p.n_offsets; i++)
      p.offsets[i] = 0;
  if (m == M_POISON || (m == M_POISON_ONCE && !ct_fk.conn_reported)) {
    /* Valid, 2^30 apart: no overlap, and an arena of gigabytes. */
    p.arena_bytes = 0;
    for (size_t i = 0; i < p.n_offsets; i++) {
      p.offsets[i] = (uint64_t)i << 30;
      if (pg.tensors[i].size &&
          p.offsets[i] + pg.tensors[i].size > p.arena_bytes)
        p.arena_bytes = p.offsets[i] + pg.tensors[i].size;
    }
  }
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

/* Reports of an unusable plan: counted and checked against the test
 * graph's digests and key; answered evicted 1 (0 with unusable_keep),
 * or with unusable_status as a daemon that predates them. */
static void answer_unusable(int fd, const Arenad__V1__Request *q)
{
  const Arenad__V1__Unusable *u = q->evict->unusable;
  struct planner_options o;
  uint8_t gd[PLANNER_DIGEST_LEN], od[PLANNER_DIGEST_LEN];
  planner_options_init(&o);
  ck_assert_int_eq(planner_graph_digest(&ct_graph, gd), 0);
  planner_options_digest(&o, od);
  ct_fk.unusable_reports++;
  ct_fk.conn_reported = 1;
  ct_fk.unusable_arena = u->arena_bytes;
  ct_fk.unusable_usable = u->usable_bytes;
  ct_fk.unusable_digests_ok =
      u->graph_digest.len == 32 && !memcmp(u->graph_digest.data, gd, 32) &&
      u->options_digest.len == 32 &&
      !memcmp(u->options_digest.data, od, 32) &&
      u->model_hash.len == ct_key.model_hash_len &&
      !memcmp(u->model_hash.data, ct_key.model_hash, ct_key.model_hash_len) &&
      u->n_input_shape == ct_key.n_inputs;
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  r.request_id = q->request_id;
  if (ct_fk.unusable_status != ARENAD__V1__STATUS__OK) {
    r.status = ct_fk.unusable_status;
    r.error = "evict selects nothing: set all, model_hash or key";
    send_resp(fd, &r);
    return;
  }
  Arenad__V1__EvictReply er = ARENAD__V1__EVICT_REPLY__INIT;
  er.evicted = ct_fk.unusable_keep ? 0 : 1;
  r.body_case = ARENAD__V1__RESPONSE__BODY_EVICT;
  r.evict = &er;
  send_resp(fd, &r);
}

/* Lookups with_graph (fetch): entries of the test graph in canonical
 * order with the record "rec-1", after a decoy of another record.
 * M_LOOKUP_WRONG: overlapping offsets; M_LOOKUP_DECOY: the entry's graph
 * digest is another's. */
static void answer_fetch(int fd, const Arenad__V1__Request *q, enum ct_mode m)
{
  struct planner_tensor *st = ct_sorted_copy(&ct_graph);
  struct planner_graph sg = {st, CT_TG_N};
  struct planner_options o;
  struct planner_plan p;
  uint8_t gd[PLANNER_DIGEST_LEN], od[PLANNER_DIGEST_LEN];
  planner_options_init(&o);
  planner_plan_init(&p);
  ck_assert_int_eq(planner_run(&sg, &o, &p, NULL), 0);
  ck_assert_int_eq(planner_graph_digest(&sg, gd), 0);
  planner_options_digest(&o, od);
  if (m == M_LOOKUP_WRONG)
    for (size_t i = 0; i < p.n_offsets; i++)
      p.offsets[i] = 0;
  if (m == M_LOOKUP_DECOY)
    gd[0] ^= 1;
  Arenad__V1__Plan req[2];
  Arenad__V1__PlanOptions mo[2];
  Arenad__V1__PlanReply rep[2];
  Arenad__V1__BundleEntry e[2], *ep[2] = {&e[0], &e[1]};
  static const char *recs[2] = {"other record", "rec-1 the right one"};
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(wire_plan_msg_init(&req[i], &mo[i], &sg, &o,
                                        q->lookup->model_hash.data,
                                        q->lookup->model_hash.len,
                                        q->lookup->input_shape,
                                        q->lookup->n_input_shape), 0);
    wire_reply_from_plan(&rep[i], &p, gd, od);
    arenad__v1__bundle_entry__init(&e[i]);
    e[i].request = &req[i];
    e[i].plan = &rep[i];
    e[i].placement.data = (uint8_t *)recs[i];
    e[i].placement.len = strlen(recs[i]) + 1;
  }
  Arenad__V1__LookupReply lr = ARENAD__V1__LOOKUP_REPLY__INIT;
  lr.entries = ep;
  lr.n_entries = 2;
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  r.request_id = q->request_id;
  r.body_case = ARENAD__V1__RESPONSE__BODY_LOOKUP;
  r.lookup = &lr;
  send_resp(fd, &r);
  for (int i = 0; i < 2; i++)
    wire_plan_msg_cleanup(&req[i]);
  planner_plan_cleanup(&p);
  free(st);
}

/* Lookups: plans the test graph in canonical order. */
static void answer_lookup(int fd, const Arenad__V1__Request *q, enum ct_mode m)
{
  if (q->lookup->with_graph) {
    answer_fetch(fd, q, m);
    return;
  }
  ct_fk.lookup_digest_len = (int)q->lookup->graph_digest.len;
  struct planner_tensor *st = ct_sorted_copy(&ct_graph);
  struct planner_graph sg = {st, CT_TG_N};
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

/* Exports: ct_fk.n_export entries, paged by the request's offset and
 * limit; past CT_MAX_ENTRIES the same entries come round again. */
static void answer_export(int fd, const Arenad__V1__Request *q)
{
  const Arenad__V1__Export *x = q->export_plans;
  struct ct_bundle b;
  ct_fk.export_requests++;
  ct_fk.export_filter = x->key.len ? 2 : x->model_hash.len ? 1 : 0;
  size_t total = (size_t)ct_fk.n_export;
  ct_bundle_init(&b, total < CT_MAX_ENTRIES ? total : CT_MAX_ENTRIES);
  size_t limit = x->limit ? x->limit : 100;
  size_t from = x->offset < total ? x->offset : total;
  size_t n = total - from < limit ? total - from : limit;
  Arenad__V1__BundleEntry **page = calloc(n ? n : 1, sizeof *page);
  ck_assert_ptr_nonnull(page);
  for (size_t i = 0; i < n; i++)
    page[i] = b.ptrs[(from + i) % CT_MAX_ENTRIES];
  Arenad__V1__ExportReply er = ARENAD__V1__EXPORT_REPLY__INIT;
  er.entries = page;
  er.n_entries = n;
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  r.request_id = q->request_id;
  r.body_case = ARENAD__V1__RESPONSE__BODY_EXPORTED;
  r.exported = &er;
  send_resp(fd, &r);
  free(page);
  ct_bundle_cleanup(&b);
}

/* Preloads: keeps the request packed for the test; all but one stored. */
static void answer_preload(int fd, const Arenad__V1__Request *q)
{
  const Arenad__V1__Preload *pl = q->preload_plans;
  size_t n = protobuf_c_message_get_packed_size(&pl->base);
  uint8_t *buf = malloc(n ? n : 1);
  ck_assert_ptr_nonnull(buf);
  protobuf_c_message_pack(&pl->base, buf);
  free(ct_fk.preload);
  ct_fk.preload = buf;
  ct_fk.preload_len = n;
  Arenad__V1__PreloadReply pr = ARENAD__V1__PRELOAD_REPLY__INIT;
  pr.kept = pl->n_entries ? 1 : 0;
  pr.stored = pl->n_entries - pr.kept;
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  r.request_id = q->request_id;
  r.body_case = ARENAD__V1__RESPONSE__BODY_PRELOADED;
  r.preloaded = &pr;
  send_resp(fd, &r);
}

static void answer(int fd, const Arenad__V1__Request *q, enum ct_mode m)
{
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  r.request_id = q->request_id;
  if (m == M_STATUS) {
    r.status = ct_fk.status;
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
    st.socket_path = ct_fk.path;
    st.db_path = "/nonexistent/fake.db";
    st.requests = 17;
    st.memory_hits = 3;
    st.misses = 1;
    st.storage_ok = 1;
    st.verify_failures = 5;
    st.storage_entries = 1; /* singular nouns in the text */
    st.storage_bytes = 1;
    st.improve_enabled = 1;
    st.improve_active = 1;
    st.improve_runs = 7;
    st.improve_gains = 2;
    st.improve_cpu_ms = 1234;
    st.stalled_closes = 3;
    st.reply_refusals = 9;
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
  } else if (q->body_case == ARENAD__V1__REQUEST__BODY_EVICT &&
             q->evict->target_case == ARENAD__V1__EVICT__TARGET_UNUSABLE) {
    answer_unusable(fd, q);
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
  } else if (q->body_case == ARENAD__V1__REQUEST__BODY_EXPORT_PLANS) {
    answer_export(fd, q);
  } else if (q->body_case == ARENAD__V1__REQUEST__BODY_PRELOAD_PLANS) {
    answer_preload(fd, q);
  }
}

/* Waits ms milliseconds, or less when the test stops the fake. */
static void pause_ms(int ms)
{
  for (int t = 0; t < ms && !ct_fk.stop; t += 10)
    poll(NULL, 0, 10);
}

/* Acknowledges request q as accepted work, when it asked. */
static void send_ack(int fd, const Arenad__V1__Request *q)
{
  if (!q->want_ack)
    return;
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  Arenad__V1__Accepted a = ARENAD__V1__ACCEPTED__INIT;
  r.request_id = q->request_id;
  r.body_case = ARENAD__V1__RESPONSE__BODY_ACCEPTED;
  r.accepted = &a;
  send_resp(fd, &r);
}

/* Serves one request in the modes that take their time: acknowledge or
 * not, wait or never answer. */
static void answer_late(int fd, const Arenad__V1__Request *q, enum ct_mode m)
{
  if (m == M_ACK_SLOW || m == M_ACK_SILENT)
    send_ack(fd, q);
  if (m == M_ACK_SILENT)
    return;
  pause_ms(ct_fk.delay_ms);
  answer(fd, q, M_GOOD);
}

static void serve_conn(int fd, enum ct_mode m)
{
  if (m == M_NO_READ) {
    pause_ms(60000);
    return;
  }
  if (m == M_REFUSE) {
    Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
    r.status = ct_fk.status;
    r.error = "connection refused by the fake";
    send_resp(fd, &r);
    return;
  }
  struct wire_reader rd;
  wire_reader_init(&rd, 0);
  ct_fk.conn_plans = 0;
  ct_fk.conn_reported = 0;
  Arenad__V1__Request *q;
  while ((q = read_req(fd, &rd)) != NULL) {
    if (m == M_CLOSE_NOREPLY) {
      wire_free_request(q);
      break;
    }
    if (m == M_ACK_SLOW || m == M_SLOW || m == M_ACK_SILENT)
      answer_late(fd, q, m);
    else if (m != M_SILENT)
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
  for (int k = 0; k < ct_fk.n_modes && !ct_fk.stop;) {
    struct pollfd p = {ct_fk.lfd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0)
      continue;
    int fd = accept(ct_fk.lfd, NULL, NULL);
    if (fd < 0)
      continue;
    ct_fk.conns++;
    serve_conn(fd, ct_fk.modes[k++]);
    close(fd);
    ct_fk.closed++;
  }
  return NULL;
}


/* Starts the fake with one mode per expected connection. */
void ct_fake_start(int n, const enum ct_mode *modes)
{
  struct sockaddr_un sa;
  ck_assert_int_le(n, CT_MAX_CONNS);
  ct_fk.n_modes = n;
  memcpy(ct_fk.modes, modes, (size_t)n * sizeof *modes);
  ct_fk.lfd = socket(AF_UNIX, SOCK_STREAM, 0);
  ck_assert_int_ge(ct_fk.lfd, 0);
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  ck_assert_uint_lt(strlen(ct_fk.path), sizeof sa.sun_path);
  strcpy(sa.sun_path, ct_fk.path);
  ck_assert_int_eq(bind(ct_fk.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
  ck_assert_int_eq(listen(ct_fk.lfd, 8), 0);
  ck_assert_int_eq(pthread_create(&ct_fk.th, NULL, serve, NULL), 0);
}

void ct_fake_start1(enum ct_mode m)
{
  ct_fake_start(1, &m);
}

void ct_setup(void)
{
  memset(&ct_fk, 0, sizeof ct_fk);
  ct_fk.lfd = -1;
  planner_plan_init(&ct_fk.first);
  ct_fk.dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(ct_fk.dir);
  snprintf(ct_fk.path, sizeof ct_fk.path, "%s/arenad.sock", ct_fk.dir);
}

void ct_teardown(void)
{
  if (ct_fk.lfd >= 0) {
    ct_fk.stop = 1;
    pthread_join(ct_fk.th, NULL);
    close(ct_fk.lfd);
  }
  planner_plan_cleanup(&ct_fk.first);
  tu_rm_rf(ct_fk.dir);
  free(ct_fk.dir);
  free(ct_fk.preload);
}

/* ---- bundle entries ----------------------------------------------------- */

void ct_bundle_init(struct ct_bundle *b, size_t n)
{
  struct planner_options o;
  ck_assert_uint_le(n, CT_MAX_ENTRIES);
  memset(b, 0, sizeof *b);
  b->n = n;
  planner_options_init(&o);
  ct_local_plan(&b->plan);
  ck_assert_int_eq(planner_graph_digest(&ct_graph, b->gd), 0);
  planner_options_digest(&o, b->od);
  for (size_t k = 0; k < n; k++) {
    b->hash[k] = (uint8_t)(0xb0 + k);
    ck_assert_int_eq(wire_plan_msg_init(&b->req[k], &b->opts[k], &ct_graph,
                                        &o, &b->hash[k], 1, NULL, 0),
                     0);
    wire_reply_from_plan(&b->reply[k], &b->plan, b->gd, b->od);
    b->reply[k].effort = (uint32_t)(10 * k);
    arenad__v1__bundle_entry__init(&b->e[k]);
    b->e[k].request = &b->req[k];
    b->e[k].plan = &b->reply[k];
    b->ptrs[k] = &b->e[k];
  }
}

void ct_bundle_cleanup(struct ct_bundle *b)
{
  for (size_t k = 0; k < b->n; k++)
    wire_plan_msg_cleanup(&b->req[k]);
  planner_plan_cleanup(&b->plan);
  memset(b, 0, sizeof *b);
}

/* ---- helpers ------------------------------------------------------------ */

/* A client of the fake's socket. */
arenad_client_t *ct_open_client(int fallback, uint32_t timeout_ms)
{
  struct arenad_client_options o;
  arenad_client_options_init(&o);
  o.socket_path = ct_fk.path;
  o.fallback = fallback;
  o.request_timeout_ms = timeout_ms;
  o.connect_timeout_ms = 2000;
  arenad_client_t *c = (arenad_client_t *)1;
  ck_assert_int_eq(arenad_client_open(&o, &c), 0);
  ck_assert_ptr_nonnull(c);
  return c;
}

/* The plan the planner makes for the test graph with default options. */
void ct_local_plan(struct planner_plan *p)
{
  struct planner_options o;
  planner_options_init(&o);
  planner_plan_init(p);
  ck_assert_int_eq(planner_run(&ct_graph, &o, p, NULL), 0);
}

/* Checks that r holds a valid plan of the test graph. */
void ct_assert_good_result(const struct arenad_client_result *r)
{
  struct planner_options o;
  uint8_t gd[PLANNER_DIGEST_LEN];
  char err[ARENA_ERR_LEN] = "";
  planner_options_init(&o);
  ck_assert_uint_eq(r->plan.n_offsets, CT_TG_N);
  ck_assert_msg(planner_verify(&ct_graph, &o, &r->plan, err) == 0, "%s",
                err);
  ck_assert_int_eq(planner_graph_digest(&ct_graph, gd), 0);
  ck_assert_int_eq(memcmp(gd, r->graph_digest, sizeof gd), 0);
}

/* Checks that r holds no plan. */
void ct_assert_empty_result(const struct arenad_client_result *r)
{
  ck_assert_ptr_null(r->plan.offsets);
  ck_assert_uint_eq(r->plan.n_offsets, 0);
  ck_assert_int_eq(r->cached, 0);
  ck_assert_int_eq(r->local, 0);
}

/* Runs one plan call against the fake; returns its code. */
int ct_plan_once(int fallback, uint32_t timeout_ms,
                 struct arenad_client_result *r, char *msg, size_t cap)
{
  arenad_client_t *c = ct_open_client(fallback, timeout_ms);
  arenad_client_result_init(r);
  int rc = arenad_client_plan(c, &ct_graph, NULL, &ct_key, r);
  snprintf(msg, cap, "%s", arenad_client_errmsg(c));
  arenad_client_close(c);
  return rc;
}

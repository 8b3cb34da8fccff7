/*
 * jobs.c - work that must not run on the loop thread: the plan jobs
 * (cache lookups and planning of misses), and the job record and its
 * bookkeeping that the storage jobs of jobs_storage.c share (jobs_int.h).
 *
 * DESIGN
 *  A Plan request is first looked up in the hot LRU on the loop thread
 *  by its identity bytes (see hotcache.h). On a miss it joins an identical
 *  job already in flight (single flight) or starts a new one on the libuv
 *  worker pool. The worker validates the graph, computes its digests,
 *  asks storage, plans on a miss, and stores the verified plan; the
 *  after-work callback, back on the loop, answers every waiter, fills
 *  the hot LRU and, after a large job, gives the allocator's free memory
 *  back to the system (memory.h). Storage handles are used by one worker
 *  at a time under st_lock. A request whose client set want_ack is told
 *  with an Accepted response as soon as it is a job or has joined one
 *  (jobs__ack), so that the client can tell a daemon at work from one
 *  that does not answer; a hot hit or a refusal is answered at once
 *  instead.
 *
 *  A connection that goes away detaches from its jobs. A job nobody
 *  waits for is cancelled: uv_cancel() if it has not started, otherwise
 *  the planner's stop callback sees the flag at its next poll. A plan
 *  job lets the planner run best's heuristics on its share of the CPUs
 *  the daemon may run on: all of them when it plans alone, half when
 *  another job plans beside it, and so on, at least one (planner.h,
 *  THREADS); the plan does not depend on the count.
 *
 *  EFFORT AND THE SPARE WORKER
 *  On the loop thread every Plan request gets its effort: its own, or
 *  default_effort, capped at max_effort (so no request can hold a worker
 *  for longer than max_effort allows). A job whose effort is above
 *  default_effort is "long". The pool has workers + 1 threads, and long
 *  jobs run on at most `workers` of them at once; more wait here, in
 *  order, and start as long jobs finish. So one thread is always left
 *  for storage requests and plans at or below the default effort: a
 *  cache miss of an ordinary request is served while maximal searches
 *  occupy every other worker.
 *
 *  LAYER
 *  Below conn.c and jobs_storage.c, above uses.c and dbhealth.c. A job
 *  answers its waiters, counts itself on their connections and tells the
 *  draining server that it finished only through s->report (report.h),
 *  so this file calls neither conn.c nor server.c. A waiter's
 *  connection pointer is only passed back to those callbacks.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs_int.h"
#include "keycodec.h"
#include "memory.h"
#include "server_int.h"

/* ---- identity bytes of a Plan request ---------------------------------- */

struct buf {
  uint8_t *p;
  size_t len, cap;
  int oom;
};

static void put(struct buf *b, const void *d, size_t n)
{
  if (b->oom || n == 0)
    return;
  if (b->cap - b->len < n) {
    size_t nc = b->cap ? b->cap : 256;
    while (nc - b->len < n)
      nc *= 2;
    uint8_t *np = realloc(b->p, nc);
    if (!np) {
      b->oom = 1;
      return;
    }
    b->p = np;
    b->cap = nc;
  }
  memcpy(b->p + b->len, d, n);
  b->len += n;
}

static void put_u64(struct buf *b, uint64_t v)
{
  put(b, &v, sizeof v);
}

/* Cheap structural checks, enough to make the identity well defined; the
 * worker validates fully. Returns 0 or an error status with msg. */
static Arenad__V1__Status precheck(const struct server *s,
                                   const Arenad__V1__Plan *m, char *msg,
                                   size_t len)
{
  size_t n = m->n_tensor_ids;
  if (n > s->limits.max_tensors) {
    snprintf(msg, len, "graph has %zu tensors, over max_tensors (%zu)", n,
             s->limits.max_tensors);
    return ARENAD__V1__STATUS__TOO_LARGE;
  }
  if (n == 0 || m->n_tensor_sizes != n || m->n_tensor_first != n ||
      m->n_tensor_last != n || (m->n_tensor_align && m->n_tensor_align != n) ||
      (m->n_tensor_pinned && m->n_tensor_pinned != n) ||
      (m->n_tensor_alias && m->n_tensor_alias != n)) {
    snprintf(msg, len, "tensor columns are empty or differ in length");
    return ARENAD__V1__STATUS__INVALID_ARGUMENT;
  }
  if (m->model_hash.len == 0 || m->model_hash.len > WIRE_MAX_MODEL_HASH ||
      m->n_input_shape > WIRE_MAX_INPUTS) {
    snprintf(msg, len, "model hash must be 1 to %u bytes and the shape at "
                       "most %u inputs",
             WIRE_MAX_MODEL_HASH, WIRE_MAX_INPUTS);
    return ARENAD__V1__STATUS__INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < m->n_input_shape; i++)
    if (!m->input_shape[i] || m->input_shape[i]->n_dims > WIRE_MAX_RANK) {
      snprintf(msg, len, "input %zu has no dims or too many", i);
      return ARENAD__V1__STATUS__INVALID_ARGUMENT;
    }
  return ARENAD__V1__STATUS__OK;
}

/* Whether the request's tensor_alias column declares any alias (a
 * column of -1 alone declares none). */
static int declares_aliases(const Arenad__V1__Plan *m)
{
  for (size_t i = 0; i < m->n_tensor_alias; i++)
    if (m->tensor_alias[i] != -1)
      return 1;
  return 0;
}

/* The identity of a Plan request: every byte that the plan depends on.
 * A request that declares aliases adds the column and the in-place
 * option, so one without keeps the identity it had before sharing
 * existed. The column is kept with sharing off too: the worker refuses
 * a bad alias whatever the option, and so a hot entry must never answer
 * for a column it was not checked with. */
static uint8_t *identity(const Arenad__V1__Plan *m, size_t *len)
{
  struct buf b = {0};
  uint8_t hl = (uint8_t)m->model_hash.len;
  put(&b, &hl, 1);
  put(&b, m->model_hash.data, m->model_hash.len);
  put_u64(&b, m->n_input_shape);
  for (size_t i = 0; i < m->n_input_shape; i++) {
    put_u64(&b, m->input_shape[i]->n_dims);
    put(&b, m->input_shape[i]->dims, m->input_shape[i]->n_dims * 8);
  }
  const Arenad__V1__PlanOptions *o = m->options;
  put_u64(&b, o ? (uint64_t)o->algorithm : 0);
  put_u64(&b, o && o->alignment ? o->alignment : PLANNER_DEFAULT_ALIGNMENT);
  put_u64(&b, o ? o->capacity : 0);
  size_t n = m->n_tensor_ids;
  put_u64(&b, n);
  put(&b, m->tensor_ids, n * 4);
  put(&b, m->tensor_sizes, n * 8);
  put(&b, m->tensor_first, n * 8);
  put(&b, m->tensor_last, n * 8);
  put_u64(&b, m->n_tensor_align);
  put(&b, m->tensor_align, m->n_tensor_align * 8);
  put_u64(&b, m->n_tensor_pinned);
  put(&b, m->tensor_pinned, m->n_tensor_pinned * 8);
  if (declares_aliases(m)) {
    put_u64(&b, o && o->no_in_place);
    put(&b, m->tensor_alias, m->n_tensor_alias * 8);
  }
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  *len = b.len;
  return b.p;
}

/* ---- replies ------------------------------------------------------------ */

/* The PlanReply a hit on hp sends. It borrows hp's arrays. */
static void hot_reply(const struct hot_plan *hp, Arenad__V1__PlanReply *pr)
{
  arenad__v1__plan_reply__init(pr);
  pr->offsets = hp->offsets;
  pr->n_offsets = hp->n_offsets;
  pr->arena_bytes = hp->arena_bytes;
  pr->lower_bound_bytes = hp->lower_bound_bytes;
  pr->naive_bytes = hp->naive_bytes;
  pr->proven_optimal = hp->proven_optimal != 0;
  pr->algorithm = (Arenad__V1__Algorithm)hp->algo;
  pr->fit = (Arenad__V1__Fit)hp->fit;
  pr->nodes_explored = hp->nodes_explored;
  pr->lower_bound_unshared_bytes = hp->lower_bound_unshared_bytes;
  pr->shared_pairs = hp->n_shared;
  pr->graph_digest.data = (uint8_t *)hp->graph_digest;
  pr->graph_digest.len = PLANNER_DIGEST_LEN;
  pr->options_digest.data = (uint8_t *)hp->options_digest;
  pr->options_digest.len = PLANNER_DIGEST_LEN;
  pr->cached = 1;
  pr->planning_us = hp->planning_us;
  pr->generation = hp->generation;
  pr->effort = hp->effort;
  pr->improving = hp->improving != 0;
}

/* Answers a hit: from the reply packed when the plan entered the cache,
 * so a hit packs nothing but the request id; or packed now when there
 * was no memory for that copy. */
static void send_hot(struct server *s, struct conn *c, uint64_t request_id,
                     const struct hot_plan *hp)
{
  uint8_t *frame;
  size_t len;
  if (hp->reply && wire_plan_reply_frame(request_id, hp->reply,
                                         hp->reply_len, 0, &frame,
                                         &len) == 0) {
    s->report.send_frame(c, request_id, frame, len);
    return;
  }
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  Arenad__V1__PlanReply pr;
  hot_reply(hp, &pr);
  r.request_id = request_id;
  r.body_case = ARENAD__V1__RESPONSE__BODY_PLAN;
  r.plan = &pr;
  s->report.send(c, &r);
}

static void hot_from_job(const struct job *j, struct hot_plan *hp)
{
  memset(hp, 0, sizeof *hp);
  hp->offsets = j->plan.offsets;
  hp->n_offsets = j->plan.n_offsets;
  hp->arena_bytes = j->plan.arena_bytes;
  hp->lower_bound_bytes = j->plan.lower_bound_bytes;
  hp->naive_bytes = j->plan.naive_bytes;
  hp->algo = j->plan.algo;
  hp->proven_optimal = j->plan.proven_optimal;
  hp->fit = j->plan.fit;
  hp->nodes_explored = j->plan.nodes_explored;
  hp->lower_bound_unshared_bytes = j->plan.lower_bound_unshared_bytes;
  hp->n_shared = j->plan.n_shared;
  hp->planning_us = j->planning_us;
  memcpy(hp->graph_digest, j->gd, PLANNER_DIGEST_LEN);
  memcpy(hp->options_digest, j->od, PLANNER_DIGEST_LEN);
  hp->use_key = j->use_key;
  hp->use_key_len = j->use_key_len;
  hp->generation = j->generation;
  hp->effort = j->plan_effort;
  hp->improving = improve_wanted(j->s->improver, j->row_open, j->n_tensors);
}

/* Puts j's plan in the hot cache, with the reply a hit sends packed once
 * (without it when that packing fails: hits then pack their own). */
static void hot_put(struct server *s, const struct job *j)
{
  struct hot_plan hp;
  Arenad__V1__PlanReply pr;
  uint8_t *reply = NULL;
  hot_from_job(j, &hp);
  hot_reply(&hp, &pr);
  if (wire_plan_reply_pack(&pr, &reply, &hp.reply_len) == 0)
    hp.reply = reply;
  hotcache_put(s->hot, j->ident, j->ident_len, j->h, &hp);
  free(reply);
}

/* ---- job bookkeeping ------------------------------------------------------ */

struct job *jobs__new(struct server *s, enum job_kind kind,
                           Arenad__V1__Request *req)
{
  struct job *j = calloc(1, sizeof *j);
  if (!j)
    return NULL;
  j->s = s;
  j->kind = kind;
  j->cfg.limits = s->limits;
  j->cfg.improve_max_effort = s->cfg.improve_max_effort;
  j->req = req;
  j->work.data = j;
  j->status = ARENAD__V1__STATUS__OK;
  atomic_init(&j->cancel, 0);
  planner_plan_init(&j->plan);
  return j;
}

void jobs__free(struct job *j)
{
  while (j->waiters) {
    struct waiter *w = j->waiters;
    j->waiters = w->next;
    free(w);
  }
  wire_free_request(j->req);
  free(j->ident);
  free(j->use_key);
  planner_plan_cleanup(&j->plan);
  storage_records_free(j->recs, j->n_recs);
  keycodec_cleanup(&j->evict_key);
  free(j);
}

int jobs__add_waiter(struct job *j, struct conn *c, uint64_t request_id)
{
  struct waiter *w = malloc(sizeof *w);
  if (!w)
    return -1;
  w->conn = c;
  w->request_id = request_id;
  w->next = j->waiters;
  j->waiters = w;
  j->live_waiters++;
  j->s->report.job_start(c);
  return 0;
}

void jobs__reject_new(struct job *j, struct conn *c, uint64_t request_id,
                      const char *msg)
{
  const struct daemon_report *up = &j->s->report;
  if (j->waiters)
    up->job_done(c);
  up->send_status(c, request_id, ARENAD__V1__STATUS__INTERNAL, msg);
  jobs__free(j);
}

void jobs__link(struct server *s, struct job *j)
{
  j->next = s->jobs;
  if (s->jobs)
    s->jobs->prev = j;
  s->jobs = j;
  s->n_jobs++;
  atomic_store(&s->n_jobs_busy, s->n_jobs);
}

void jobs__unlink(struct server *s, struct job *j)
{
  if (j->prev)
    j->prev->next = j->next;
  else
    s->jobs = j->next;
  if (j->next)
    j->next->prev = j->prev;
  s->n_jobs--;
  atomic_store(&s->n_jobs_busy, s->n_jobs);
}

/* ---- plan jobs: long slots ---------------------------------------------- */

static void work_plan(uv_work_t *w);
static void after_plan(uv_work_t *w, int status);

/* Hands a plan job to the pool. uv_queue_work fails only for a NULL work
 * callback; the result is still passed on for the first submission. */
static int queue_plan(struct server *s, struct job *j)
{
  int rc = uv_queue_work(&s->loop, &j->work, work_plan, after_plan);
  if (rc == 0) {
    j->on_pool = 1;
    if (j->is_long)
      s->n_long++;
  }
  return rc;
}

/* Starts a new plan job, or queues it behind the running long jobs. */
static int start_plan(struct server *s, struct job *j)
{
  if (!j->is_long || s->n_long < s->cfg.workers)
    return queue_plan(s, j);
  j->wait_next = NULL;
  if (s->wait_tail)
    s->wait_tail->wait_next = j;
  else
    s->wait_head = j;
  s->wait_tail = j;
  return 0;
}

/* Starts waiting long jobs while long slots are free. */
static void start_waiting(struct server *s)
{
  while (s->wait_head && s->n_long < s->cfg.workers) {
    struct job *j = s->wait_head;
    s->wait_head = j->wait_next;
    if (!s->wait_head)
      s->wait_tail = NULL;
    j->wait_next = NULL;
    (void)queue_plan(s, j);
  }
}

/* Takes a waiting job out of the queue. */
static void unwait(struct server *s, struct job *j)
{
  struct job **pp = &s->wait_head, *prev = NULL;
  while (*pp && *pp != j) {
    prev = *pp;
    pp = &(*pp)->wait_next;
  }
  if (!*pp)
    return;
  *pp = j->wait_next;
  if (s->wait_tail == j)
    s->wait_tail = prev;
  j->wait_next = NULL;
}

/* Cancels a plan job. One still waiting for a long slot goes to the pool
 * outside the slots and is cancelled there, so that it completes through
 * after_plan like any other, never from inside this call. */
static void cancel_plan(struct server *s, struct job *j)
{
  atomic_store(&j->cancel, 1);
  if (!j->on_pool) {
    unwait(s, j);
    j->is_long = 0;
    (void)queue_plan(s, j);
  }
  uv_cancel((uv_req_t *)&j->work);
}

void jobs_detach_conn(struct server *s, struct conn *c)
{
  for (struct job *j = s->jobs; j; j = j->next) {
    for (struct waiter *w = j->waiters; w; w = w->next)
      if (w->conn == c) {
        w->conn = NULL;
        j->live_waiters--;
      }
    if (j->live_waiters == 0 && j->kind == JOB_PLAN &&
        !atomic_load(&j->cancel))
      cancel_plan(s, j);
  }
}

void jobs_cancel_all(struct server *s)
{
  for (struct job *j = s->jobs; j; j = j->next)
    if (j->kind == JOB_PLAN && !atomic_load(&j->cancel))
      cancel_plan(s, j);
}

void jobs__ack(struct server *s, struct conn *c, uint64_t request_id,
               int want_ack)
{
  if (!want_ack)
    return;
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  Arenad__V1__Accepted a = ARENAD__V1__ACCEPTED__INIT;
  r.request_id = request_id;
  r.body_case = ARENAD__V1__RESPONSE__BODY_ACCEPTED;
  r.accepted = &a;
  s->report.send(c, &r);
}

int jobs__queue_full(struct server *s, struct conn *c, uint64_t request_id)
{
  if (s->n_jobs < s->cfg.max_queued_jobs)
    return 0;
  s->c.busy_rejections++;
  s->report.send_status(c, request_id, ARENAD__V1__STATUS__BUSY,
                        "planning queue is full; retry later");
  return 1;
}

/* ---- plan jobs: worker side --------------------------------------------- */

static int job_stop(void *ctx)
{
  struct job *j = ctx;
  return atomic_load(&j->cancel);
}

/* Takes the storage for this worker, and first writes the hot-cache uses
 * the loop queued (uses.c), so that the get, put (and the LRU eviction in
 * it), list or evict that follows counts them. */
void jobs__st_enter(struct server *s)
{
  uv_mutex_lock(&s->st_lock);
  uses_write(s);
}

Arenad__V1__Status jobs__status_of(int rc)
{
  switch (rc) {
  case ARENA_ETOOBIG:
    return ARENAD__V1__STATUS__TOO_LARGE;
  case ARENA_ENOMEM:
  case ARENA_EVERIFY:
  case ARENA_ECANCELED:
  case ARENA_EINTERNAL:
    return ARENAD__V1__STATUS__INTERNAL;
  default:
    return ARENAD__V1__STATUS__INVALID_ARGUMENT;
  }
}

/* The planner threads of a job that starts planning while `busy` jobs
 * plan, itself included: an equal share of the CPUs arenad may run on,
 * at least one. Jobs planning side by side thus never ask for more
 * threads than there are CPUs, which would only add the threads' work
 * and memory; a job keeps its share when others start after it. */
static uint32_t planner_threads(unsigned busy)
{
  uint32_t cpus = planner_cpu_threads();
  return cpus > busy ? cpus / busy : 1;
}

static void plan_in_worker(struct job *j, struct wire_graph *g,
                           struct storage_key *k)
{
  struct server *s = j->s;
  struct planner_graph pg = {g->tensors, g->n_tensors};
  struct planner_options o = g->opts;
  struct storage_info info;
  jobs__st_enter(s);
  int rc = s->st ? storage_get(s->st, k, &pg, &o, &j->plan, &info)
                 : ARENA_ENOENT;
  if (rc && rc != ARENA_ENOENT)
    dbhealth_failed(s, "read", rc);
  uv_mutex_unlock(&s->st_lock);
  j->n_tensors = g->n_tensors;
  if (rc == 0) {
    j->from_storage = 1;
    j->planning_us = info.plan_us;
    j->generation = info.generation;
    j->plan_effort = info.effort;
    j->row_open = info.has_graph && !info.improve_done &&
                  !j->plan.proven_optimal;
    return;
  }
  o.effort = j->effort; /* set on the loop thread: SIGHUP cannot race */
  o.stop = job_stop; /* an atomic load: safe from the planner's threads */
  o.stop_ctx = j;
  unsigned busy = atomic_fetch_add(&s->n_planning, 1) + 1;
  o.threads = planner_threads(busy); /* the plan is the same for any */
  uint64_t t0 = uv_hrtime();
  rc = planner_run(&pg, &o, &j->plan, j->err);
  j->planning_us = (uv_hrtime() - t0) / 1000;
  atomic_fetch_sub(&s->n_planning, 1);
  if (rc) {
    j->status = jobs__status_of(rc);
    return;
  }
  j->plan_effort = j->effort;
  enum storage_put_result res = STORAGE_PUT_KEPT;
  /* Background work reads the effort only through the search: a plan of
   * another algorithm is stored done. */
  int done = g->opts.algo != PLANNER_ALGO_BEST &&
             g->opts.algo != PLANNER_ALGO_EXACT;
  jobs__st_enter(s);
  if (s->st) {
    rc = storage_put_effort(s->st, k, &pg, &g->opts, &j->plan,
                            j->planning_us, j->effort, done, &res);
    if (rc) {
      dbhealth_failed(s, "write", rc);
    } else {
      dbhealth_ok(s);
      j->generation = res == STORAGE_PUT_INSERTED ? 1 : 0;
      j->row_open = res != STORAGE_PUT_KEPT && !done &&
                    !j->plan.proven_optimal;
    }
  }
  uv_mutex_unlock(&s->st_lock);
}

static void work_plan(uv_work_t *w)
{
  struct job *j = w->data;
  struct wire_graph g;
  if (atomic_load(&j->cancel)) { /* cancelled while it waited */
    j->status = ARENAD__V1__STATUS__INTERNAL;
    snprintf(j->err, sizeof j->err, "planning was cancelled");
    return;
  }
  /* With in-place sharing off, g comes back without aliases (checked,
   * then cleared): the digest, the key, the plan and every verification
   * below are those of the graph without aliases. */
  int rc = wire_graph_from_plan(j->req->plan, &j->cfg.limits, &g, j->err);
  if (rc) {
    j->status = jobs__status_of(rc);
    return;
  }
  struct planner_graph pg = {g.tensors, g.n_tensors};
  if (planner_graph_digest(&pg, j->gd) != 0) {
    j->status = ARENAD__V1__STATUS__INTERNAL;
    snprintf(j->err, sizeof j->err, "out of memory");
    wire_graph_cleanup(&g);
    return;
  }
  planner_options_digest(&g.opts, j->od);
  j->use_key = keycodec_encode(g.model_hash, g.model_hash_len, g.shape.ranks,
                               g.shape.dims, g.shape.n_inputs, j->gd, j->od,
                               &j->use_key_len);
  struct storage_key k = {g.model_hash, g.model_hash_len, g.shape.ranks,
                          g.shape.n_inputs, g.shape.dims};
  plan_in_worker(j, &g, &k);
  wire_graph_cleanup(&g);
}

/* ---- plan jobs: loop side ------------------------------------------------ */

static void answer_plan(struct job *j, struct waiter *w)
{
  if (j->status != ARENAD__V1__STATUS__OK) {
    j->s->report.send_status(w->conn, w->request_id, j->status,
                             j->err);
    return;
  }
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  Arenad__V1__PlanReply pr;
  wire_reply_from_plan(&pr, &j->plan, j->gd, j->od);
  pr.cached = j->from_storage;
  pr.planning_us = j->planning_us;
  pr.generation = j->generation;
  pr.effort = j->plan_effort;
  pr.improving = improve_wanted(j->s->improver, j->row_open, j->n_tensors);
  r.request_id = w->request_id;
  r.body_case = ARENAD__V1__RESPONSE__BODY_PLAN;
  r.plan = &pr;
  j->s->report.send(w->conn, &r);
  j->s->c.plans_served++;
}

static void after_plan(uv_work_t *w, int status)
{
  struct job *j = w->data;
  struct server *s = j->s;
  jobs__unlink(s, j);
  if (j->is_long) {
    s->n_long--;
    start_waiting(s);
  }
  if (status == UV_ECANCELED || atomic_load(&j->cancel)) {
    s->c.jobs_cancelled++;
  } else {
    if (j->status == ARENAD__V1__STATUS__OK) {
      if (j->from_storage) {
        s->c.storage_hits++;
      } else {
        s->c.misses++;
        s->c.plans_computed++;
      }
      hot_put(s, j);
      if (!j->from_storage &&
          improve_wanted(s->improver, j->row_open, j->n_tensors))
        improve_wake(s->improver);
    }
  }
  for (struct waiter *wt = j->waiters; wt; wt = wt->next)
    if (wt->conn) {
      struct conn *c = wt->conn;
      if (status == UV_ECANCELED)
        s->report.send_status(c, wt->request_id,
                              ARENAD__V1__STATUS__INTERNAL,
                              "planning was cancelled");
      else
        answer_plan(j, wt);
      s->report.job_done(c);
    }
  int large = daemon_memory_large(j->req->plan->n_tensor_ids);
  jobs__free(j);
  if (large)
    daemon_memory_release();
  if (s->draining)
    s->report.drain_check(s);
}

static struct job *find_flight(struct server *s, const uint8_t *ident,
                               size_t len, uint64_t h)
{
  for (struct job *j = s->jobs; j; j = j->next)
    if (j->kind == JOB_PLAN && j->h == h && j->ident_len == len &&
        !atomic_load(&j->cancel) && memcmp(j->ident, ident, len) == 0)
      return j;
  return NULL;
}

static uint32_t default_effort(const struct server *s)
{
  return s->cfg.default_effort ? s->cfg.default_effort
                               : PLANNER_DEFAULT_EFFORT;
}

/* The effort request m gets: its own, else default_effort, at most
 * max_effort. */
static uint32_t effort_of(struct server *s, struct conn *c, uint64_t rid,
                          const Arenad__V1__Plan *m)
{
  uint32_t e = m->options && m->options->effort ? m->options->effort
                                                : default_effort(s);
  if (e <= s->cfg.max_effort)
    return e;
  char who[96];
  dlog(&s->log, DLOG_DEBUG,
       "%s: request %" PRIu64 ": effort %" PRIu32
       " capped at max_effort %" PRIu32,
       s->report.peer_desc(c, who, sizeof who), rid, e,
       s->cfg.max_effort);
  return s->cfg.max_effort;
}

void jobs_submit_plan(struct server *s, struct conn *c, uint64_t request_id,
                      Arenad__V1__Request *req)
{
  char msg[ARENA_ERR_LEN];
  Arenad__V1__Status st = precheck(s, req->plan, msg, sizeof msg);
  if (st != ARENAD__V1__STATUS__OK) {
    s->report.send_status(c, request_id, st, msg);
    wire_free_request(req);
    return;
  }
  size_t len;
  uint8_t *ident = identity(req->plan, &len);
  if (!ident) {
    s->report.send_status(c, request_id, ARENAD__V1__STATUS__INTERNAL,
                          "out of memory");
    wire_free_request(req);
    return;
  }
  uint64_t h = hot_hash(ident, len);
  const struct hot_plan *hp = hotcache_get(s->hot, ident, len, h);
  if (hp) {
    s->c.memory_hits++;
    s->c.plans_served++;
    send_hot(s, c, request_id, hp);
    free(ident);
    wire_free_request(req);
    return;
  }
  int want_ack = req->want_ack;
  struct job *j = find_flight(s, ident, len, h);
  if (j) {
    free(ident);
    wire_free_request(req);
    if (jobs__add_waiter(j, c, request_id) == 0) {
      s->c.single_flight_joined++;
      jobs__ack(s, c, request_id, want_ack);
    } else {
      s->report.send_status(c, request_id, ARENAD__V1__STATUS__INTERNAL,
                            "out of memory");
    }
    return;
  }
  if (jobs__queue_full(s, c, request_id) || !(j = jobs__new(s, JOB_PLAN, req))) {
    free(ident);
    wire_free_request(req);
    return;
  }
  j->ident = ident;
  j->ident_len = len;
  j->h = h;
  /* The effort is not part of the identity, nor of the options digest:
   * a capped request and one at the cap share their plan. */
  j->effort = effort_of(s, c, request_id, req->plan);
  j->is_long = j->effort > default_effort(s);
  uses_collect(s);
  if (jobs__add_waiter(j, c, request_id) || start_plan(s, j)) {
    jobs__reject_new(j, c, request_id, "cannot queue the planning job");
    return;
  }
  jobs__link(s, j);
  jobs__ack(s, c, request_id, want_ack);
}

/*
 * background.c - background improvement of stored plans (background.h): the
 * threads, the choice of the next row and effort, the CPU bounds, and
 * the hand-back of stored plans to the loop thread.
 *
 * A helper of daemon/ beside hotcache.c and keycodec.c: it calls the
 * storage, the planner, keycodec.c and log.c, and reaches the rest of
 * the daemon only through struct improve_env.
 *
 * DESIGN
 *  A thread asks the database for a few rows that want work
 *  (storage_pending), takes the first one no other thread is working on,
 *  runs one step of the ladder on it and writes the outcome: the smaller
 *  plan (storage_put_effort, which verifies it and bumps the generation)
 *  or only the effort tried (storage_note_tried). Since every step
 *  records its effort, the next request for work gives the next step,
 *  here or after a restart. When no row wants work the thread sleeps
 *  until improve_wake() or a minute passes. A step that fails to write
 *  makes its thread wait a second before it asks again, so a failing
 *  database is not hammered.
 *
 *  The planner polls its stop callback (bg_poll) often. That is where a
 *  step pauses for foreground planning and for the hourly budget, gives
 *  up at shutdown or past run_cpu_ms, and where its CPU is counted.
 */
#define _GNU_SOURCE /* SCHED_IDLE */
#include "background.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "keycodec.h"
#include "memory.h"
#include "planner.h"

/* Rows asked for at once: one more than the other threads can be busy
 * with, so that one is always free to take, and no more, since each row
 * comes with its whole graph. */
#define PENDING_BATCH(im) ((size_t)(im)->n_threads + 1)
#define IDLE_WAIT_S 60      /* sleep when no row wants work */
#define ERROR_WAIT_MS 1000  /* after a failed write */
#define PAUSE_NS 2000000L   /* one nap while paused */

/* A stored plan changed, waiting for the loop. */
struct event {
  struct event *next;
  uint8_t model_hash[STORAGE_MODEL_HASH_MAX];
  size_t model_hash_len;
  uint8_t gd[PLANNER_DIGEST_LEN], od[PLANNER_DIGEST_LEN];
  int smaller;
};

struct improver {
  struct improve_env env;
  pthread_mutex_t mu;           /* guards everything below but stopping */
  pthread_cond_t cond;          /* wakes idle threads */
  struct improve_config cfg;
  pthread_t *threads;           /* cfg.threads at start */
  unsigned n_threads;
  atomic_int stopping;
  unsigned wakes;               /* improve_wake calls not yet seen */
  uint8_t **busy;               /* per thread: key of its row, or NULL */
  size_t *busy_len;
  struct improve_stats stats;
  int64_t hour;                 /* clock hour of hour_cpu_ms */
  uint64_t hour_cpu_ms;         /* CPU used in that hour */
  struct event *events, *events_tail;
  uv_async_t async;             /* events for the loop */
};

/* ---- small helpers --------------------------------------------------- */

static uint64_t thread_cpu_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int64_t clock_hour(void)
{
  return (int64_t)(time(NULL) / 3600);
}

static void nap(long ns)
{
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
  nanosleep(&ts, NULL);
}

/* Lowest priority for the calling thread: SCHED_IDLE, or nice 19. */
static void lowest_priority(void)
{
  struct sched_param sp = {0};
  if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
}

/* ---- one step ----------------------------------------------------------- */

/* The stop callback's state for one step. */
struct step {
  struct improver *im;
  uint64_t cpu0;      /* thread CPU at the start, ns */
  uint64_t counted;   /* CPU already added to the stats, ns */
  uint64_t limit_ns;  /* run_cpu_ms */
  int over;           /* gave up past the limit */
};

/* Adds the step's CPU since the last call to the stats and the hour;
 * returns whether the hour's budget is spent. */
static int count_cpu(struct step *st)
{
  struct improver *im = st->im;
  uint64_t used = thread_cpu_ns() - st->cpu0;
  uint64_t ms = (used - st->counted) / 1000000u;
  int spent;
  pthread_mutex_lock(&im->mu);
  if (ms) {
    st->counted += ms * 1000000u;
    im->stats.cpu_ms += ms;
    int64_t h = clock_hour();
    if (h != im->hour) {
      im->hour = h;
      im->hour_cpu_ms = 0;
    }
    im->hour_cpu_ms += ms;
  } else if (clock_hour() != im->hour) {
    im->hour = clock_hour();
    im->hour_cpu_ms = 0;
  }
  spent = im->hour_cpu_ms >= im->cfg.cpu_ms_per_hour;
  pthread_mutex_unlock(&im->mu);
  return spent;
}

static int bg_poll(void *ctx)
{
  struct step *st = ctx;
  struct improver *im = st->im;
  for (;;) {
    if (atomic_load(&im->stopping))
      return 1;
    int spent = count_cpu(st);
    if (thread_cpu_ns() - st->cpu0 >= st->limit_ns) {
      st->over = 1;
      return 1;
    }
    if (!spent && atomic_load(im->env.fg_busy) == 0)
      return 0;
    nap(PAUSE_NS);
  }
}

static void queue_event(struct improver *im, const struct storage_record *r,
                        int smaller)
{
  struct event *e = calloc(1, sizeof *e);
  if (!e)
    return; /* the hot copy then lives until it ages out */
  memcpy(e->model_hash, r->model_hash, r->model_hash_len);
  e->model_hash_len = r->model_hash_len;
  memcpy(e->gd, r->graph_digest, PLANNER_DIGEST_LEN);
  memcpy(e->od, r->options_digest, PLANNER_DIGEST_LEN);
  e->smaller = smaller;
  pthread_mutex_lock(&im->mu);
  if (im->events_tail)
    im->events_tail->next = e;
  else
    im->events = e;
  im->events_tail = e;
  pthread_mutex_unlock(&im->mu);
  uv_async_send(&im->async);
}

/* Writes a step's outcome. Returns 0 or the storage's code. */
static int write_outcome(struct improver *im, const struct storage_record *r,
                         const struct planner_plan *p, uint32_t effort,
                         int done, uint64_t plan_us, int *smaller)
{
  struct storage_key k = {r->model_hash, r->model_hash_len, r->ranks,
                          r->n_inputs, r->dims};
  enum storage_put_result res = STORAGE_PUT_KEPT;
  int rc = ARENA_EUNAVAIL;
  *smaller = 0;
  uv_mutex_lock(im->env.st_lock);
  storage_t *st = *im->env.st;
  if (st && p && p->arena_bytes < r->plan.arena_bytes)
    rc = storage_put_effort(st, &k, &r->graph, &r->opts, p, plan_us, effort,
                            done, &res);
  else if (st)
    rc = storage_note_tried(st, &k, r->graph_digest, r->options_digest,
                            effort, done);
  uv_mutex_unlock(im->env.st_lock);
  *smaller = rc == 0 && res == STORAGE_PUT_UPGRADED;
  return rc;
}

/* Plans r at effort e under the step's stop callback: the whole graph
 * again (planner_run), or, for a graph of more than window_tensors
 * tensors, one window of it around its peak (planner_improve_window).
 * Sets *have when p holds a plan to offer (the whole graph's, or a
 * window's that is strictly smaller than r's). Returns the planner's
 * code; a window that could not be planned is no gain, not a failure,
 * so that the ladder goes on. */
static int plan_step(struct improver *im, const struct storage_record *r,
                     uint32_t e, uint64_t window, struct step *st,
                     struct planner_plan *p, int *have)
{
  struct planner_options o = r->opts;
  char err[ARENA_ERR_LEN] = "";
  int rc;
  o.effort = e;
  o.threads = 1;
  o.stop = bg_poll;
  o.stop_ctx = st;
  *have = 0;
  if (r->graph.n_tensors <= window) {
    rc = planner_run(&r->graph, &o, p, err);
    *have = rc == 0;
  } else {
    rc = planner_improve_window(&r->graph, &o, &r->plan, (size_t)window, p,
                                have, err);
  }
  if (rc && !st->over && !atomic_load(&im->stopping))
    dlog(im->env.log, DLOG_WARNING, "background step at effort %" PRIu32
         "%s failed: %s", e, r->graph.n_tensors > window ? " (window)" : "",
         err[0] ? err : arena_strerror(rc));
  if (rc && r->graph.n_tensors > window && rc != ARENA_ECANCELED)
    rc = 0;
  return rc;
}

/* Runs one step of the ladder on r. Returns 0, 1 when shutting down, or
 * -1 when its outcome could not be written. */
static int run_step(struct improver *im, const struct storage_record *r)
{
  pthread_mutex_lock(&im->mu);
  struct improve_config cfg = im->cfg;
  pthread_mutex_unlock(&im->mu);
  uint32_t effort = improve_next_effort(r->info.effort_tried, cfg.max_effort);
  /* Only the search reads the effort: a plan made by one heuristic alone
   * would come out the same at any effort. */
  int searches = r->opts.algo == PLANNER_ALGO_BEST ||
                 r->opts.algo == PLANNER_ALGO_EXACT;
  /* A graph over the cap is left as it is, not done: the cap may be
   * raised (storage_pending leaves such rows out; this one was fetched
   * before a SIGHUP lowered it). */
  if (r->graph.n_tensors > cfg.max_tensors)
    return 0;
  int done = effort == 0 || !searches;
  struct planner_plan p;
  planner_plan_init(&p);
  int have = 0, ran = 0;
  uint64_t t0 = uv_hrtime();
  struct step st = {im, thread_cpu_ns(), 0, cfg.run_cpu_ms * 1000000u, 0};
  if (!done) {
    int rc = plan_step(im, r, effort, cfg.window_tensors, &st, &p, &have);
    count_cpu(&st);
    if (atomic_load(&im->stopping)) {
      planner_plan_cleanup(&p);
      return 1;
    }
    ran = rc == 0 || st.over;
    done = st.over || rc != 0 || (have && p.proven_optimal) ||
           effort >= cfg.max_effort;
  }
  int smaller;
  int wrc = write_outcome(im, r, have ? &p : NULL, effort, done,
                          (uv_hrtime() - t0) / 1000, &smaller);
  if (smaller)
    dlog(im->env.log, DLOG_INFO, "background: a %" PRIu64 "-byte plan "
         "replaces %" PRIu64 " %s (effort %" PRIu32 ")",
         p.arena_bytes, r->plan.arena_bytes,
         dlog_noun(r->plan.arena_bytes, "byte", "bytes"), effort);
  planner_plan_cleanup(&p);
  pthread_mutex_lock(&im->mu);
  im->stats.runs += ran;
  im->stats.gains += smaller;
  pthread_mutex_unlock(&im->mu);
  /* A row done without a step (a heuristic's plan, stored done by
   * today's daemon; a row of an older one may still wait) was never
   * served as improving, so its hot copy stays; one whose steps ended
   * is dropped, so that replies stop saying improving. */
  if (wrc == 0 && (smaller || (done && effort && searches)))
    queue_event(im, r, smaller);
  return wrc ? -1 : 0;
}

/* ---- choosing rows ----------------------------------------------------- */

static uint8_t *row_key(const struct storage_record *r, size_t *len)
{
  return keycodec_encode(r->model_hash, r->model_hash_len, r->ranks, r->dims,
                         r->n_inputs, r->graph_digest, r->options_digest,
                         len);
}

/* Marks the first row of recs that no thread works on as thread t's;
 * returns its index, or -1. Called with mu held. */
static int claim(struct improver *im, unsigned t, struct storage_record *recs,
                 size_t n)
{
  for (size_t i = 0; i < n; i++) {
    size_t len;
    uint8_t *key = row_key(&recs[i], &len);
    if (!key)
      return -1;
    int taken = 0;
    for (unsigned u = 0; u < im->n_threads && !taken; u++)
      taken = im->busy[u] && im->busy_len[u] == len &&
              memcmp(im->busy[u], key, len) == 0;
    if (!taken) {
      im->busy[t] = key;
      im->busy_len[t] = len;
      return (int)i;
    }
    free(key);
  }
  return -1;
}

static void release(struct improver *im, unsigned t)
{
  pthread_mutex_lock(&im->mu);
  free(im->busy[t]);
  im->busy[t] = NULL;
  im->stats.active--;
  pthread_mutex_unlock(&im->mu);
}

/* Waits up to `secs` for a wake, new settings or the stop. */
static void idle_wait(struct improver *im, unsigned seen_wakes, long ms)
{
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += ms / 1000;
  until.tv_nsec += (ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&im->mu);
  while (!atomic_load(&im->stopping) && im->wakes == seen_wakes) {
    if (pthread_cond_timedwait(&im->cond, &im->mu, &until) == ETIMEDOUT)
      break;
  }
  pthread_mutex_unlock(&im->mu);
}

/* Asks the database for rows that want work. */
static int fetch(struct improver *im, struct storage_record **recs,
                 size_t *n)
{
  *recs = NULL;
  *n = 0;
  pthread_mutex_lock(&im->mu);
  uint64_t max_tensors = im->cfg.max_tensors;
  pthread_mutex_unlock(&im->mu);
  uv_mutex_lock(im->env.st_lock);
  storage_t *st = *im->env.st;
  int rc = st ? storage_pending(st, PENDING_BATCH(im), max_tensors, recs, n)
               : ARENA_EUNAVAIL;
  uv_mutex_unlock(im->env.st_lock);
  return rc;
}

struct thread_arg {
  struct improver *im;
  unsigned t;
};

static void *thread_main(void *arg)
{
  struct improver *im = ((struct thread_arg *)arg)->im;
  unsigned t = ((struct thread_arg *)arg)->t;
  free(arg);
  lowest_priority();
  while (!atomic_load(&im->stopping)) {
    pthread_mutex_lock(&im->mu);
    unsigned seen = im->wakes;
    int enabled = im->cfg.enabled;
    pthread_mutex_unlock(&im->mu);
    struct storage_record *recs;
    size_t n;
    if (!enabled || fetch(im, &recs, &n) != 0) {
      idle_wait(im, seen, enabled ? ERROR_WAIT_MS : IDLE_WAIT_S * 1000L);
      continue;
    }
    pthread_mutex_lock(&im->mu);
    int i = claim(im, t, recs, n);
    im->stats.active += i >= 0;
    pthread_mutex_unlock(&im->mu);
    int rc = 0, large = 0;
    for (size_t j = 0; j < n; j++)
      large |= daemon_memory_large(recs[j].graph.n_tensors);
    if (i >= 0) {
      rc = run_step(im, &recs[i]);
      release(im, t);
    }
    storage_records_free(recs, n);
    /* The rows of a large graph and the step's arrays are freed: give
     * the fragments they leave in the heaps back, as a large plan job
     * does, so that an idle daemon is small again. */
    if (large)
      daemon_memory_release();
    if (i < 0)
      idle_wait(im, seen, IDLE_WAIT_S * 1000L);
    else if (rc < 0)
      idle_wait(im, seen, ERROR_WAIT_MS);
  }
  return NULL;
}

/* ---- the loop side ------------------------------------------------------ */

static void on_async(uv_async_t *a)
{
  struct improver *im = a->data;
  pthread_mutex_lock(&im->mu);
  struct event *e = im->events;
  im->events = im->events_tail = NULL;
  pthread_mutex_unlock(&im->mu);
  while (e) {
    struct event *next = e->next;
    struct improve_change ch = {e->model_hash, e->model_hash_len, e->gd,
                                e->od, e->smaller};
    if (im->env.changed)
      im->env.changed(im->env.ctx, &ch);
    free(e);
    e = next;
  }
}

static void free_improver(struct improver *im)
{
  for (struct event *e = im->events; e;) {
    struct event *next = e->next;
    free(e);
    e = next;
  }
  for (unsigned t = 0; t < im->n_threads; t++)
    free(im->busy[t]);
  free(im->busy);
  free(im->busy_len);
  free(im->threads);
  pthread_cond_destroy(&im->cond);
  pthread_mutex_destroy(&im->mu);
  free(im);
}

static void on_closed(uv_handle_t *h)
{
  free_improver(h->data);
}

/* Joins the first n threads after telling them to stop. */
static void join(struct improver *im, unsigned n)
{
  atomic_store(&im->stopping, 1);
  pthread_mutex_lock(&im->mu);
  pthread_cond_broadcast(&im->cond);
  pthread_mutex_unlock(&im->mu);
  for (unsigned t = 0; t < n; t++)
    pthread_join(im->threads[t], NULL);
}

int improve_start(const struct improve_env *env,
                  const struct improve_config *cfg, struct improver **out)
{
  *out = NULL;
  struct improver *im = calloc(1, sizeof *im);
  unsigned n = cfg->threads ? cfg->threads : 1;
  if (!im)
    return ARENA_ENOMEM;
  im->env = *env;
  im->cfg = *cfg;
  im->stats.enabled = cfg->enabled;
  im->hour = clock_hour();
  im->threads = calloc(n, sizeof *im->threads);
  im->busy = calloc(n, sizeof *im->busy);
  im->busy_len = calloc(n, sizeof *im->busy_len);
  pthread_mutex_init(&im->mu, NULL);
  pthread_cond_init(&im->cond, NULL);
  if (!im->threads || !im->busy || !im->busy_len) {
    free_improver(im);
    return ARENA_ENOMEM;
  }
  im->n_threads = n;
  /* The async handle first: a thread may finish a step and post an
   * event as soon as it starts. */
  if (uv_async_init(env->loop, &im->async, on_async) != 0) {
    free_improver(im);
    return ARENA_EINTERNAL;
  }
  im->async.data = im;
  for (unsigned t = 0; t < n; t++) {
    struct thread_arg *a = malloc(sizeof *a);
    if (a) {
      a->im = im;
      a->t = t;
    }
    if (!a || pthread_create(&im->threads[t], NULL, thread_main, a) != 0) {
      free(a);
      join(im, t);
      uv_close((uv_handle_t *)&im->async, on_closed); /* frees im */
      return ARENA_EINTERNAL;
    }
  }
  *out = im;
  return 0;
}

void improve_configure(struct improver *im, const struct improve_config *cfg)
{
  pthread_mutex_lock(&im->mu);
  unsigned threads = im->cfg.threads;
  im->cfg = *cfg;
  im->cfg.threads = threads;
  im->stats.enabled = cfg->enabled;
  im->wakes++;
  pthread_cond_broadcast(&im->cond);
  pthread_mutex_unlock(&im->mu);
}

void improve_wake(struct improver *im)
{
  if (!im)
    return;
  pthread_mutex_lock(&im->mu);
  im->wakes++;
  pthread_cond_broadcast(&im->cond);
  pthread_mutex_unlock(&im->mu);
}

int improve_enabled(const struct improver *im)
{
  /* Read on the loop thread, which is the only writer of cfg. */
  return im && im->cfg.enabled;
}

int improve_wanted(const struct improver *im, int row_open, size_t n_tensors)
{
  /* Read on the loop thread, which is the only writer of cfg. */
  return im && row_open && im->cfg.enabled && n_tensors <= im->cfg.max_tensors;
}

void improve_get_stats(struct improver *im, struct improve_stats *out)
{
  memset(out, 0, sizeof *out);
  if (!im)
    return;
  pthread_mutex_lock(&im->mu);
  *out = im->stats;
  pthread_mutex_unlock(&im->mu);
}

void improve_stop(struct improver *im)
{
  if (!im)
    return;
  join(im, im->n_threads);
  uv_close((uv_handle_t *)&im->async, on_closed);
}

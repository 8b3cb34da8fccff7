/*
 * planner.c - the public entry points of the planning core: options,
 * planner_run() and the algorithm names.
 *
 * planner_run() is the only way plans leave the core, and it verifies each
 * one before returning it. `best` runs the heuristics from the cheapest to
 * the dearest and keeps the first smallest arena; it stops early once an
 * arena meets the lower bound, since nothing can beat that. When the best
 * heuristic is above the bound it hands over to the exact search for a
 * bounded effort (PLANNER_DEFAULT_EFFORT unless options say otherwise),
 * counted in work units, so the plan never depends on the machine's speed
 * or load.
 */
#include "planner_int.h"
#include "tindex.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const algo_names[PLANNER_ALGO__COUNT] = {
    [PLANNER_ALGO_BEST] = "best",
    [PLANNER_ALGO_NAIVE] = "naive",
    [PLANNER_ALGO_TFLM_GREEDY] = "tflm-greedy",
    [PLANNER_ALGO_TFLITE_BESTFIT] = "tflite-bestfit",
    [PLANNER_ALGO_GREEDY_SIZE] = "greedy-size",
    [PLANNER_ALGO_GREEDY_BREADTH] = "greedy-breadth",
    [PLANNER_ALGO_EXACT] = "exact",
};

/* The heuristics `best` tries, cheapest first (ties go to the earlier). */
static const enum planner_algo best_order[] = {
    PLANNER_ALGO_TFLM_GREEDY,
    PLANNER_ALGO_GREEDY_SIZE,
    PLANNER_ALGO_TFLITE_BESTFIT,
    PLANNER_ALGO_GREEDY_BREADTH,
};

void planner_options_init(struct planner_options *o)
{
  memset(o, 0, sizeof *o);
  o->algo = PLANNER_ALGO_BEST;
  o->alignment = PLANNER_DEFAULT_ALIGNMENT;
}

void planner_plan_init(struct planner_plan *p)
{
  memset(p, 0, sizeof *p);
}

void planner_plan_cleanup(struct planner_plan *p)
{
  if (!p)
    return;
  free(p->offsets);
  planner_plan_init(p);
}

const char *planner_algo_name(enum planner_algo a)
{
  return (unsigned)a < PLANNER_ALGO__COUNT ? algo_names[a] : "?";
}

int planner_algo_parse(const char *name, enum planner_algo *a)
{
  for (int i = 0; name && i < PLANNER_ALGO__COUNT; i++)
    if (strcasecmp(name, algo_names[i]) == 0) {
      *a = (enum planner_algo)i;
      return 0;
    }
  return ARENA_EINVAL;
}

const char *planner_fit_name(enum planner_fit f)
{
  switch (f) {
  case PLANNER_FIT_NA:
    return "n/a";
  case PLANNER_FIT_YES:
    return "fits";
  case PLANNER_FIT_NO:
    return "infeasible";
  case PLANNER_FIT_UNKNOWN:
    return "unknown";
  }
  return "?";
}

const char *planner_bound_name(enum planner_bound b)
{
  return b == PLANNER_BOUND_SEARCH ? "search" : "load";
}

/* ---- best ----------------------------------------------------------------
 *
 * The heuristics of `best` are tasks 0 .. N_BEST - 1, handed out in that
 * order to min(threads, N_BEST) workers: the calling thread and up to
 * N_BEST - 1 threads of its own, all reading one problem. The result
 * is the smallest arena, ties to the lower task, among the tasks up to
 * the first one that meets the lower bound ("settled"): exactly what the
 * tasks run one after another, stopping at the bound, would give, so the
 * thread count never changes the plan. A task above settled cannot win
 * and gives up at its next poll. Each worker keeps its own best so far,
 * so memory grows with the workers, not with the tasks.
 */

#define N_BEST (sizeof best_order / sizeof *best_order)

/* Graphs with fewer tensors than this plan on the calling thread only:
 * starting a thread would cost more than it saves. */
#define BEST_THREADS_MIN 4096

/* What all workers of one `best` share. */
struct best_run {
  const struct planner__prob *p;
  atomic_uint next;     /* next task to hand out */
  atomic_uint settled;  /* lowest task that met the bound, or N_BEST */
  atomic_int fired;     /* the stop callback returned 1 */
  int threaded;         /* lock is initialised and in use */
  pthread_mutex_t lock; /* serialises calls of the stop callback */
  int rc[N_BEST];       /* each task's result; written by its worker */
};

/* One worker: its placements (by rank) and its best so far. */
struct best_worker {
  struct best_run *run;
  struct tindex_span *cur;  /* m: the task being run */
  uint64_t *best;           /* n: offsets of its best task, graph order */
  uint64_t best_arena;      /* UINT64_MAX while it has none */
  unsigned best_task;       /* task of best, N_BEST while none */
  unsigned task;            /* the task being run */
  pthread_t thread;         /* when started as a thread */
  int started;              /* 1: thread is running and must be joined */
};

static int best_poll(const void *ctx)
{
  const struct best_worker *w = ctx;
  struct best_run *b = w->run;
  const struct planner_options *o = b->p->o;
  if (atomic_load(&b->fired) || w->task > atomic_load(&b->settled))
    return 1;
  if (!o->stop)
    return 0;
  if (b->threaded)
    pthread_mutex_lock(&b->lock);
  int stop = o->stop(o->stop_ctx);
  if (b->threaded)
    pthread_mutex_unlock(&b->lock);
  if (stop)
    atomic_store(&b->fired, 1);
  return stop;
}

/* Lowers settled to k unless it is lower already. */
static void settle(struct best_run *b, unsigned k)
{
  unsigned s = atomic_load(&b->settled);
  while (k < s && !atomic_compare_exchange_weak(&b->settled, &s, k))
    ;
}

static void *best_worker_main(void *arg)
{
  struct best_worker *w = arg;
  struct best_run *b = w->run;
  struct planner__poll poll = {best_poll, w};
  for (;;) {
    unsigned k = atomic_fetch_add(&b->next, 1);
    if (k >= N_BEST)
      break;
    w->task = k;
    if (k > atomic_load(&b->settled)) {
      b->rc[k] = ARENA_ECANCELED; /* cannot win: not run */
      continue;
    }
    int rc = planner__heuristic_ranked(b->p, best_order[k], w->cur, &poll);
    b->rc[k] = rc;
    if (rc)
      continue;
    uint64_t arena = planner__arena_ranked(b->p, w->cur);
    if (arena < w->best_arena) {
      planner__offsets_of(b->p, w->cur, w->best);
      w->best_arena = arena;
      w->best_task = k;
    }
    if (arena <= b->p->lb)
      settle(b, k);
  }
  return NULL;
}

/* Allocates worker k's placements; returns 0 or -1. */
static int worker_init(struct best_worker *w, struct best_run *b)
{
  size_t m = b->p->x->m ? b->p->x->m : 1;
  memset(w, 0, sizeof *w);
  w->run = b;
  w->best_arena = UINT64_MAX;
  w->best_task = N_BEST;
  w->cur = malloc(m * sizeof *w->cur);
  w->best = malloc(b->p->n * sizeof *w->best);
  return w->cur && w->best ? 0 : -1;
}

/* Runs the workers, n_w of them, the first one on this thread. */
static void run_workers(struct best_worker *w, unsigned n_w)
{
  struct best_run *b = w[0].run;
  b->threaded = n_w > 1 && pthread_mutex_init(&b->lock, NULL) == 0;
  for (unsigned i = 1; b->threaded && i < n_w; i++)
    w[i].started =
        pthread_create(&w[i].thread, NULL, best_worker_main, &w[i]) == 0;
  best_worker_main(&w[0]);
  for (unsigned i = 1; i < n_w; i++)
    if (w[i].started)
      pthread_join(w[i].thread, NULL);
  if (b->threaded)
    pthread_mutex_destroy(&b->lock);
}

/* The result of the finished run: the first failed task up to settled,
 * else the best worker's plan into off. */
static int best_result(const struct best_run *b, const struct best_worker *w,
                       unsigned n_w, uint64_t *off, enum planner_algo *used)
{
  unsigned last = atomic_load(&b->settled);
  for (unsigned k = 0; k < N_BEST && k <= last; k++)
    if (b->rc[k])
      return b->rc[k];
  const struct best_worker *win = &w[0];
  for (unsigned i = 1; i < n_w; i++)
    if (w[i].best_arena < win->best_arena ||
        (w[i].best_arena == win->best_arena &&
         w[i].best_task < win->best_task))
      win = &w[i];
  *used = best_order[win->best_task];
  memcpy(off, win->best, b->p->n * sizeof *off);
  return 0;
}

/* Runs every heuristic of `best` on up to o->threads threads, keeping the
 * first smallest in off. */
static int run_best(const struct planner__prob *p, uint64_t *off,
                    enum planner_algo *used)
{
  int rc;
  struct best_run b = {.p = p};
  atomic_init(&b.next, 0);
  atomic_init(&b.settled, (unsigned)N_BEST);
  atomic_init(&b.fired, 0);
  unsigned want = p->o->threads < N_BEST ? p->o->threads : N_BEST, n_w = 0;
  if (p->x->m < BEST_THREADS_MIN)
    want = 1;
  struct best_worker w[N_BEST];
  for (; n_w < (want ? want : 1); n_w++)
    if (worker_init(&w[n_w], &b)) { /* fewer workers: the same plan */
      free(w[n_w].cur);
      free(w[n_w].best);
      break;
    }
  if (n_w == 0) {
    rc = ARENA_ENOMEM;
  } else {
    run_workers(w, n_w);
    rc = best_result(&b, w, n_w, off, used);
  }
  for (unsigned i = 0; i < n_w; i++) {
    free(w[i].cur);
    free(w[i].best);
  }
  return rc;
}

static enum planner_fit fit_of(const struct planner_plan *r, uint64_t cap)
{
  if (!cap)
    return PLANNER_FIT_NA;
  if (r->arena_bytes <= cap)
    return PLANNER_FIT_YES;
  return r->lower_bound_bytes > cap ? PLANNER_FIT_NO : PLANNER_FIT_UNKNOWN;
}

/* Whether the exact search should run after the heuristics. */
static int wants_exact(const struct planner_options *o,
                       const struct planner_plan *r)
{
  if (o->algo == PLANNER_ALGO_EXACT)
    return 1;
  if (o->algo != PLANNER_ALGO_BEST || r->arena_bytes <= r->lower_bound_bytes)
    return 0;
  return !o->capacity || r->arena_bytes > o->capacity;
}

static int plan_with(struct planner__prob *p, struct planner_plan *r)
{
  const struct planner_options *o = p->o;
  int rc;
  r->algo = o->algo;
  if (o->algo == PLANNER_ALGO_BEST || o->algo == PLANNER_ALGO_EXACT)
    rc = run_best(p, r->offsets, &r->algo);
  else
    rc = planner__heuristic(p, o->algo, r->offsets);
  if (rc)
    return rc;
  r->arena_bytes = planner__arena_of(p, r->offsets);
  r->lower_bound_bytes = p->lb;
  r->naive_bytes = p->naive;
  r->bound = PLANNER_BOUND_LOAD;
  r->proven_optimal = r->arena_bytes <= r->lower_bound_bytes;
  r->fit = fit_of(r, o->capacity);
  if (!wants_exact(o, r))
    return 0;
  uint64_t before = r->arena_bytes;
  planner__prob_drop_index(p); /* the search has its own structures */
  rc = planner__exact(p, r->offsets, r);
  if (!rc && (o->algo == PLANNER_ALGO_EXACT || r->arena_bytes < before))
    r->algo = PLANNER_ALGO_EXACT;
  return rc;
}

int planner_run(const struct planner_graph *g, const struct planner_options *o,
                struct planner_plan *out, char err[ARENA_ERR_LEN])
{
  struct planner__prob p;
  struct planner_plan r;
  planner_plan_cleanup(out);
  int rc = planner_validate(g, o, err);
  if (rc)
    return rc;
  if ((rc = planner__prob_init(&p, g, o)))
    return planner__errf(err, rc, "out of memory");
  planner_plan_init(&r);
  r.n_offsets = p.n;
  r.offsets = calloc(p.n, sizeof *r.offsets);
  rc = r.offsets ? plan_with(&p, &r) : ARENA_ENOMEM;
  planner__prob_cleanup(&p);
  if (rc == ARENA_ECANCELED)
    planner__errf(err, rc, "planning was cancelled");
  else if (rc)
    planner__errf(err, rc, "out of memory");
  else if ((rc = planner__verify_valid(g, o, &r, err)) != 0)
    rc = ARENA_EVERIFY; /* a planner bug: never hand out such a plan */
  if (rc) {
    planner_plan_cleanup(&r);
    return rc;
  }
  *out = r;
  return 0;
}

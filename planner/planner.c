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
 * The heuristics of `best` are tasks 0 .. N_BEST - 1, ties going to the
 * lower task. The plan is that of the smallest arena, ties to the lower
 * task: exactly what the tasks run one after another in that order,
 * stopping at the lower bound, would give. But a task's arena only grows
 * as it places tensors, and it is never below the lower bound, so
 * max(lower bound, largest end so far) is a lower bound of its arena.
 * A task whose bound reaches the arena of a finished lower task, or
 * passes that of a finished higher one, cannot win and is dropped at
 * once, and so is tflite-bestfit when greedy-size's order is also its
 * own (the two then give the same plan).
 *
 * Tasks run PLANNER_TASK_STEP placements at a time, always the one with
 * the lowest bound first (ties to the lower task): the winner's bound is
 * never above its arena, so the others only run until their bounds pass
 * it, much as if the winner had run first. With threads (the calling
 * thread and up to N_BEST - 1 of its own), each takes the lowest task
 * that no other thread is running. Which thread runs what, and how far
 * a loser gets, depends on timing; the plan never does, since only tasks
 * that provably cannot win are dropped, and the winner always finishes.
 * On one thread, greedy-breadth (the last task) and at most two others
 * hold state at once, which on the benchmark graphs places exactly the
 * tensors that all four at once do.
 */

#define N_BEST (sizeof best_order / sizeof *best_order)

/* Graphs with fewer tensors than this plan on the calling thread only:
 * starting a thread would cost more than it saves. */
#define BEST_THREADS_MIN 4096

/* One task of `best`. */
struct best_task {
  struct planner__task *t; /* NULL until first run, and once dropped */
  uint64_t lower;          /* its arena is at least this, bytes */
  int running;             /* a thread is running it (t is that thread's) */
  int done;                /* every tensor placed: lower is its arena */
  int out;                 /* cannot win: dropped or never run */
};

/* What the threads of one `best` share; under lock when threaded. */
struct best_run {
  const struct planner__prob *p;
  struct best_task task[N_BEST];
  unsigned n_running;   /* tasks running now */
  int rc;               /* first error: ARENA_ENOMEM or ARENA_ECANCELED */
  int threaded;         /* lock and wake are initialised and in use */
  pthread_mutex_t lock; /* guards the above; serialises the stop callback */
  pthread_cond_t wake;  /* a task stopped running */
};

static void best_lock(struct best_run *b)
{
  if (b->threaded)
    pthread_mutex_lock(&b->lock);
}

static void best_unlock(struct best_run *b)
{
  if (b->threaded)
    pthread_mutex_unlock(&b->lock);
}

/* Whether task k cannot win against the finished tasks. */
static int cannot_win(const struct best_run *b, unsigned k)
{
  for (unsigned j = 0; j < N_BEST; j++) {
    const struct best_task *d = &b->task[j];
    if (j != k && d->done && !d->out &&
        (j < k ? b->task[k].lower >= d->lower : b->task[k].lower > d->lower))
      return 1;
  }
  return 0;
}

/* Marks every task that cannot win out, and frees those no thread runs
 * (a finished loser included: only the best finished task is kept). */
static void drop_losers(struct best_run *b)
{
  for (unsigned k = 0; k < N_BEST; k++) {
    struct best_task *t = &b->task[k];
    if (!t->out && cannot_win(b, k))
      t->out = 1;
    if (t->out && !t->running) {
      planner__task_free(t->t);
      t->t = NULL;
    }
  }
}

/* The task to run next: the lowest bound, ties to the lower task, among
 * those that may still win, are not done and run on no thread; N_BEST
 * when there is none. */
static unsigned pick(const struct best_run *b)
{
  unsigned best = N_BEST;
  for (unsigned k = 0; k < N_BEST; k++) {
    const struct best_task *t = &b->task[k];
    if (!t->out && !t->done && !t->running &&
        (best == N_BEST || t->lower < b->task[best].lower))
      best = k;
  }
  return best;
}

/* Runs one step of task k (without the lock): starts it first if
 * needed. Returns 0 or an error. */
static int step(struct best_run *b, unsigned k, int *same_as_gs)
{
  struct best_task *t = &b->task[k];
  int rc = 0;
  if (!t->t) {
    rc = planner__task_new(b->p, best_order[k], &t->t);
    if (!rc && best_order[k] == PLANNER_ALGO_GREEDY_SIZE) {
      size_t m;
      const uint32_t *order = planner__task_order(t->t, &m);
      *same_as_gs = planner__tflite_same_order(b->p, order, m);
    }
  }
  return rc ? rc : planner__task_step(t->t, PLANNER_TASK_STEP);
}

/* Notes a step of task k that went well: its bound, whether it is done,
 * and tflite-bestfit dropped when greedy-size's order is also its own. */
static void note_step(struct best_run *b, unsigned k, int same_as_gs)
{
  struct best_task *t = &b->task[k];
  if (same_as_gs)
    for (unsigned j = 0; j < N_BEST; j++)
      if (best_order[j] == PLANNER_ALGO_TFLITE_BESTFIT)
        b->task[j].out = 1;
  uint64_t top = planner__task_top(t->t);
  t->lower = top > b->p->lb ? top : b->p->lb;
  t->done = planner__task_done(t->t);
}

static int stop_fired(const struct planner_options *o)
{
  return o->stop && o->stop(o->stop_ctx);
}

/* A worker: runs steps of the lowest task until no task is left. */
static void *best_worker_main(void *arg)
{
  struct best_run *b = arg;
  const struct planner__prob *p = b->p;
  best_lock(b);
  for (;;) {
    drop_losers(b);
    unsigned k = b->rc ? N_BEST : pick(b);
    if (k == N_BEST) {
      if (b->n_running == 0 || b->rc || !b->threaded)
        break;
      pthread_cond_wait(&b->wake, &b->lock); /* threaded: others run */
      continue;
    }
    struct best_task *t = &b->task[k];
    t->running = 1;
    b->n_running++;
    best_unlock(b);
    int same_as_gs = 0;
    int rc = step(b, k, &same_as_gs);
    best_lock(b);
    t->running = 0;
    b->n_running--;
    if (!rc && stop_fired(p->o)) /* under the lock: one call at a time */
      rc = ARENA_ECANCELED;
    if (rc && !t->out && !b->rc)
      b->rc = rc;
    if (!rc)
      note_step(b, k, same_as_gs);
    if (b->threaded)
      pthread_cond_broadcast(&b->wake);
  }
  if (b->threaded)
    pthread_cond_broadcast(&b->wake); /* the others may be waiting */
  best_unlock(b);
  return NULL;
}

/* Runs the workers, n_w of them, the first one on this thread. */
static void run_workers(struct best_run *b, unsigned n_w)
{
  pthread_t th[N_BEST];
  int started[N_BEST] = {0};
  if (n_w > 1 && pthread_mutex_init(&b->lock, NULL) == 0) {
    if (pthread_cond_init(&b->wake, NULL) == 0)
      b->threaded = 1;
    else
      pthread_mutex_destroy(&b->lock);
  }
  for (unsigned i = 1; b->threaded && i < n_w; i++)
    started[i] = pthread_create(&th[i], NULL, best_worker_main, b) == 0;
  best_worker_main(b);
  for (unsigned i = 1; i < n_w; i++)
    if (started[i])
      pthread_join(th[i], NULL);
  if (b->threaded) {
    pthread_cond_destroy(&b->wake);
    pthread_mutex_destroy(&b->lock);
  }
}

/* Whether task k may still run: not dropped and not finished. */
static int live(const struct best_run *b, unsigned k)
{
  return !b->task[k].out && !b->task[k].done;
}

/* Tasks other than the last that may hold state at once on one thread. */
#define ALONE_OTHERS 2

/* The task to run next on one thread: as pick(), but among the last
 * task (greedy-breadth, whose bound grows slowest) and at most
 * ALONE_OTHERS others, those already started first, then the first ones
 * not started; N_BEST when none may run. */
static unsigned pick_alone(const struct best_run *b)
{
  unsigned last = N_BEST - 1, held = 0, best = N_BEST;
  for (unsigned k = 0; k < last; k++)
    held += live(b, k) && b->task[k].t != NULL;
  for (unsigned k = 0; k <= last; k++) {
    const struct best_task *t = &b->task[k];
    if (!live(b, k) || (k < last && !t->t && held >= ALONE_OTHERS))
      continue;
    if (k < last && !t->t)
      held++;
    if (best == N_BEST || t->lower < b->task[best].lower)
      best = k;
  }
  return best;
}

/* Runs the tasks on this thread, as pick_alone() chooses them, so that
 * at most 1 + ALONE_OTHERS of them hold state at once. A task that
 * finishes best so far leaves its offsets in off (overwriting those of
 * the one it beats) and frees its state at once. Returns 0 or an
 * error. */
static int run_alone(struct best_run *b, uint64_t *off)
{
  const struct planner__prob *p = b->p;
  for (;;) {
    drop_losers(b);
    unsigned k = pick_alone(b);
    if (k == N_BEST)
      return 0;
    struct best_task *t = &b->task[k];
    int same_as_gs = 0;
    int rc = step(b, k, &same_as_gs);
    if (!rc && stop_fired(p->o))
      rc = ARENA_ECANCELED;
    if (rc)
      return rc;
    note_step(b, k, same_as_gs);
    if (t->done && !cannot_win(b, k)) { /* the best so far */
      planner__offsets_of(p, planner__task_pos(t->t), off);
      planner__task_free(t->t);
      t->t = NULL;
    }
  }
}

/* Runs every heuristic of `best` on up to o->threads threads, keeping the
 * first smallest in off. */
static int run_best(const struct planner__prob *p, uint64_t *off,
                    enum planner_algo *used)
{
  struct best_run b;
  memset(&b, 0, sizeof b);
  b.p = p;
  for (unsigned k = 0; k < N_BEST; k++)
    b.task[k].lower = p->lb;
  unsigned n_w = p->o->threads < N_BEST ? p->o->threads : N_BEST;
  if (n_w == 0 || p->x->m < BEST_THREADS_MIN)
    n_w = 1;
  int rc;
  if (n_w == 1)
    rc = run_alone(&b, off);
  else {
    run_workers(&b, n_w);
    rc = b.rc;
  }
  unsigned win = N_BEST;
  for (unsigned k = 0; k < N_BEST; k++)
    if (b.task[k].done && !b.task[k].out &&
        (win == N_BEST || b.task[k].lower < b.task[win].lower))
      win = k;
  if (!rc && win == N_BEST)
    rc = ARENA_ENOMEM; /* not reached: the winner always finishes */
  if (!rc) {
    *used = best_order[win];
    if (b.task[win].t)
      planner__offsets_of(p, planner__task_pos(b.task[win].t), off);
  }
  for (unsigned k = 0; k < N_BEST; k++)
    planner__task_free(b.task[k].t);
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
  /* the check reads the index's order by first; the rest goes first */
  uint32_t *by_first = p.x ? tindex_take_row_of(p.x) : NULL;
  planner__prob_cleanup(&p);
  if (rc == ARENA_ECANCELED)
    planner__errf(err, rc, "planning was cancelled");
  else if (rc)
    planner__errf(err, rc, "out of memory");
  else if ((rc = planner__verify_valid(g, o, &r, by_first, err)) != 0)
    rc = ARENA_EVERIFY; /* a planner bug: never hand out such a plan */
  free(by_first);
  if (rc) {
    planner_plan_cleanup(&r);
    return rc;
  }
  *out = r;
  return 0;
}

/*
 * best.c - the heuristics of `best`: every heuristic of
 * planner/heuristics/ on one problem, raced on one thread or several, the
 * first smallest arena kept.
 *
 * Part of planner/run/; uses planner/core/ and planner/heuristics/.
 */
#include "best.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "heuristics.h"
#include "tindex.h"

/* The heuristics `best` tries, cheapest first (ties go to the earlier). */
static const enum planner_algo best_order[] = {
    PLANNER_ALGO_TFLM_GREEDY,
    PLANNER_ALGO_GREEDY_SIZE,
    PLANNER_ALGO_TFLITE_BESTFIT,
    PLANNER_ALGO_GREEDY_BREADTH,
};

/* DESIGN
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

int planner__best(const struct planner__prob *p, uint64_t *off,
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

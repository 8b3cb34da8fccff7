/*
 * background.h - background improvement: while the device idles, arenad
 * keeps searching for smaller plans than the ones it served, at rising
 * effort, and stores each verified, strictly smaller plan in place of
 * the old one (docs/daemon.md, "Background improvement").
 *
 * WHAT IS IMPROVED
 *  Every plan stored with its graph whose row is not yet "done"
 *  (storage_pending(): not proven optimal, not tried up to max_effort).
 *  The database is the work list, so the work survives a restart and
 *  needs no memory of its own: a daemon without a database improves
 *  nothing.
 *
 * SCHEDULE
 *  A plan was first made at some effort E0 (the request's). Each step
 *  plans the stored graph again, alone, at the next effort of the ladder
 *  E0 x 4, x 16, ... capped at max_effort, as planner_run() with that
 *  effort and one thread: so the stored plan is always exactly the plan
 *  `arenactl plan --local --effort E` gives for the graph listed in
 *  ascending tensor id. A step that finds a strictly smaller arena
 *  stores it (storage_put_effort verifies it first); the row is done
 *  once its plan is proven optimal or max_effort was tried.
 *
 * BOUNDS
 *  - CPU per step: a step that has used run_cpu_ms of CPU is abandoned
 *    and the row is marked done (its plan stays).
 *  - CPU in total: at most cpu_ms_per_hour of CPU in any clock hour;
 *    once spent, running steps pause until the next hour starts.
 *  - Memory: a graph of more than window_tensors tensors is improved
 *    one window of at most window_tensors tensors at a time
 *    (planner_improve_window), so a step's planning takes memory in
 *    proportion to the window; the row (graph and plan) and the new
 *    plan's verification are in proportion to the graph. The heaps are
 *    trimmed after a step on a large row (memory.h).
 *  - Size: a graph of more than max_tensors tensors is not improved:
 *    storage_pending leaves it out, and it is not marked done, so that a
 *    cap raised by SIGHUP takes it up (improve_wanted says the same).
 *    It is never served as improving meanwhile.
 *  - Algorithm: only plans asked of `best` or `exact` are improved; the
 *    other algorithms are single heuristics, whose plan no effort
 *    changes: the daemon stores such a plan done, and a row an older
 *    daemon stored open is marked done without a step.
 *  - Priority: the threads run under SCHED_IDLE (nice 19 where that is
 *    refused), so any other work on the machine runs first; and a step
 *    pauses, at the planner's next poll, whenever a request is being
 *    served on a worker (*fg_busy > 0: a plan job or a storage job,
 *    queued or running), and goes on from where it paused when that is
 *    done. Pausing never changes a plan: the
 *    effort counts search nodes, not time.
 *  - Shutdown: improve_stop() makes every step give up at its next poll;
 *    an abandoned step stores nothing.
 *
 * THREADS
 *  improve_start() starts `threads` threads. All calls below are made on
 *  the loop thread. The threads take the storage handle only under
 *  st_lock, and report a stored plan back to the loop through a uv_async
 *  (the changed callback), which drops the hot copies of the old plan.
 */
#ifndef ARENAD_BACKGROUND_H
#define ARENAD_BACKGROUND_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "digest.h"
#include "log.h"
#include "planner.h"
#include "storage.h"

struct improver;

/* Settings; a plain value, copied by improve_start and improve_configure. */
struct improve_config {
  int enabled;              /* 0: no step starts; running ones finish */
  unsigned threads;         /* 1..128, fixed at start */
  uint32_t max_effort;      /* the ladder's top, >= 1 */
  uint64_t max_tensors;     /* larger graphs are left alone */
  uint64_t window_tensors;  /* >= 2: larger graphs are improved one
                               window of at most this many tensors at a
                               time (planner_improve_window) */
  uint64_t run_cpu_ms;      /* CPU one step may use, >= 1 */
  uint64_t cpu_ms_per_hour; /* CPU all steps may use per clock hour */
};

/* A stored plan changed: a smaller one replaced it, or its row is done.
 * Borrowed for the call. */
struct improve_change {
  const uint8_t *model_hash;
  size_t model_hash_len;
  const uint8_t *graph_digest;   /* PLANNER_DIGEST_LEN bytes */
  const uint8_t *options_digest; /* PLANNER_DIGEST_LEN bytes */
  int smaller;                   /* 1: a smaller plan was stored */
};

/* What the improver needs from the daemon, all borrowed and outliving
 * the improver. */
struct improve_env {
  uv_loop_t *loop;
  storage_t **st;            /* *st read under st_lock; NULL: none */
  uv_mutex_t *st_lock;
  atomic_uint *fg_busy;      /* foreground jobs queued or running now
                                (plans and storage requests) */
  struct dlog *log;
  void (*changed)(void *ctx, const struct improve_change *ch); /* loop */
  void *ctx;                 /* passed to changed */
};

/* Counters, as Stats reports them. */
struct improve_stats {
  int enabled;
  uint64_t runs;   /* steps finished (not abandoned at shutdown) */
  uint64_t gains;  /* steps that stored a smaller plan */
  uint64_t cpu_ms; /* CPU the steps used */
  unsigned active; /* steps running now */
};

/* Starts the threads. Returns 0 with *out to stop with improve_stop, or
 * ARENA_ENOMEM / ARENA_EINTERNAL (a thread could not start; none left
 * running). */
int improve_start(const struct improve_env *env,
                  const struct improve_config *cfg, struct improver **out);

/* New settings (SIGHUP); threads keeps its value from the start. */
void improve_configure(struct improver *im, const struct improve_config *cfg);

/* A plan that may want work was stored: wakes an idle thread. */
void improve_wake(struct improver *im);

/* Whether background work is on. */
int improve_enabled(const struct improver *im);

/* Whether background work goes on for a stored plan, as every reply's
 * `improving` says it (Plan, Lookup, List; served from memory, from the
 * database or just planned, before a restart or after): work is on, the
 * row is open (stored with its graph, not done, not proven optimal: a
 * plan of an algorithm that does not search is stored done) and its
 * graph has at most max_tensors tensors, the cap in force now. One rule
 * for every path, so that no answer says improving for a plan that no
 * step will take, and no row is closed for a cap that may be raised.
 * Loop thread. */
int improve_wanted(const struct improver *im, int row_open, size_t n_tensors);

void improve_get_stats(struct improver *im, struct improve_stats *out);

/* Makes every step give up, joins the threads and frees im once its
 * async handle has closed (the loop must run once more). Accepts NULL. */
void improve_stop(struct improver *im);

/* The effort of the step after one at `tried` (the ladder above; 0
 * tried means none yet: the planner's default effort), or 0 when tried
 * already reached max_effort. */
static inline uint32_t improve_next_effort(uint32_t tried,
                                           uint32_t max_effort)
{
  if (tried >= max_effort)
    return 0;
  if (tried == 0)
    return max_effort < PLANNER_DEFAULT_EFFORT ? max_effort
                                               : PLANNER_DEFAULT_EFFORT;
  uint64_t next = (uint64_t)tried * 4;
  return next > max_effort ? max_effort : (uint32_t)next;
}

#endif /* ARENAD_BACKGROUND_H */

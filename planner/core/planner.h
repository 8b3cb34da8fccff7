/*
 * planner.h - arenad's planning core: lifetime graphs in, verified arena
 * plans out.
 *
 * The public API of planner/, kept in planner/core/, the folder at the
 * bottom of it: the graph model, validation, the lower bound, the
 * verifier and the time index, using libc only. planner_run() itself is
 * defined in planner/run/, the top, which uses heuristics/ and search/;
 * readers and writers of files live in formats/. docs/architecture.md
 * draws the folders and their one-way dependencies; start there.
 *
 * A graph is a flat array of tensors, each with a size in bytes and an
 * inclusive lifetime [first, last] in operator indexes. A plan gives every
 * tensor a byte offset in one arena so that two tensors whose lifetimes
 * overlap never overlap in memory. The core is pure C: no I/O, no globals;
 * every call is reentrant and may run on any thread. It creates threads
 * only when options->threads asks for them (see THREADS).
 *
 * Conventions:
 *  - Every fallible call returns 0 or a negative ARENA_E* code
 *    (arena_error.h). Calls that take `char err[ARENA_ERR_LEN]` also write
 *    a one-line explanation there; err may be NULL.
 *  - Graphs and options are borrowed: they must outlive the call, and the
 *    core never keeps a pointer to them afterwards.
 *  - A struct planner_plan is caller-allocated: planner_plan_init() it,
 *    let planner_run() fill it, release it with planner_plan_cleanup().
 *
 * ALIGNMENT
 *  Alignment rounds start offsets up, never sizes. A tensor's effective
 *  alignment is the larger of options->alignment and its own `align`
 *  (0 = none of its own), so the interpreter-wide alignment is a floor that
 *  a tensor can only raise. Zero-size tensors take no space and always get
 *  offset 0; they never conflict with anything.
 *
 * LOWER BOUND
 *  For every operator t let S(t) be the non-empty tensors live at t and
 *  A(t) the smallest effective alignment among them. All their offsets are
 *  multiples of A(t), so, ordered by offset, each tensor below the topmost
 *  one uses at least roundup(size, A(t)) bytes before the next can start.
 *  Hence
 *      LB(t) = sum_{i in S(t)} roundup(size_i, A(t))
 *              - max_{i in S(t)} (roundup(size_i, A(t)) - size_i)
 *  is a true lower bound, and lower_bound_bytes = max_t LB(t). With
 *  alignment 1 it is the classic "largest total live at one operator".
 *
 * EFFORT
 *  The exact search (PLANNER_ALGO_EXACT, and `best` when the heuristics
 *  stay above the lower bound) runs for a given effort, never for a given
 *  time. One effort unit is a fixed number of search work units (steps of
 *  the search's inner loops, and of its setup), the same in every build;
 *  nominally it is about 1 ms of search on a 2-core x86-64 machine, but
 *  the clock is never read to enforce it. So the same graph and options
 *  give the same plan on an idle or a loaded machine, in a release or a
 *  sanitizer build; only the wall time varies. docs/exact.md gives the
 *  figures. On graphs of 4096 tensors or more whose tensors of the first
 *  operator hold at least half the lower bound, `best` and `exact` also
 *  try up to three staircase plans first: heuristic runs, which like the
 *  four heuristics of `best` the effort does not bound (docs/exact.md,
 *  "Staircase plans"). On large graphs `best` and `exact` also run two
 *  passes with fixed budgets of their own in work units, not bounded by
 *  the effort either: ruin and recreate (up to 500 units a tensor) and,
 *  while the arena is above 1.001 x the lower bound, the joint re-plan of
 *  the stretch of highest load (up to 4000 units a tensor; docs/exact.md,
 *  "Ruin and recreate" and "Joint re-plan of the stretch").
 *
 * IN-PLACE SHARING
 *  A tensor may declare an alias: the one tensor whose bytes it may
 *  reuse, as an operator that reads element i of its input before it
 *  writes element i of its output may write over that input. Which
 *  operators are safe is the caller's knowledge (formats/tflite.h derives
 *  it from an allowlist of kernels); the core only checks that sharing is
 *  possible. A declared pair (out names in) is legal when
 *    - in.first < in.last == out.first: the input's last use is the
 *      operator that first writes the output, and the input was written
 *      before it;
 *    - both are non-empty and have the same size once rounded up to
 *      options->alignment;
 *    - their pins agree: not both pinned at different offsets, and a
 *      pinned offset is aligned for the other tensor too.
 *  planner_alias_check() says whether a pair is legal and why not. The
 *  planner gives a legal pair one buffer (the same offset) when that does
 *  not make the arena larger; a tensor's bytes go to at most one output,
 *  the first legal one in graph order. Chains (a reuses b, which reuses c)
 *  are fine. An illegal or unused declaration is not an error: the pair
 *  simply gets two buffers. The verifier accepts two tensors that overlap
 *  in time and memory only when they are a declared legal pair at the
 *  same offset, and at most one output per input. With options->in_place
 *  0 a graph plans and verifies exactly as it would with every alias
 *  removed, which is what "in-place sharing off" means to every tool and
 *  to the daemon. Sharing is on by default: a graph declares only the
 *  pairs its producer knows to be safe, and a plan that shares is never
 *  larger than one that does not. A plan's lower_bound_bytes then holds
 *  for every plan the verifier accepts, whichever legal pairs it shares:
 *  the load bound with each legal pair's common operator counted once,
 *  at the larger of the two sizes (docs/planner.md, "In-place sharing").
 *  planner_run() plans with all the pairs it takes or with none, so its
 *  plan may stay above that bound where sharing only some would meet it.
 *
 * THREADS
 *  `best` (and `exact`, which starts from best's heuristics) may run its
 *  four heuristics at once: with options->threads = T > 1 planner_run()
 *  uses the calling thread and at most min(T, 4) - 1 threads of its own,
 *  all joined before it returns. The plan is the same for every T: the
 *  smallest arena wins, ties go to the earlier heuristic in best's fixed
 *  order, and a heuristic that meets the lower bound ends the race
 *  exactly as it ends the sequential run. The exact search itself runs on
 *  the calling thread. With T > 1 the stop callback may be called from
 *  any of these threads, never by two at once. Each extra thread needs
 *  its own working memory (docs/planner.md gives the figures); when a
 *  thread cannot be created or its memory allocated, fewer threads run,
 *  with the same plan. Every other algorithm runs on the calling thread.
 */
#ifndef ARENA_PLANNER_H
#define ARENA_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#include "arena_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PLANNER_DEFAULT_ALIGNMENT 64u /* bytes, as in TFLite */
#define PLANNER_DEFAULT_EFFORT 40u /* exact-search effort, see EFFORT */
#define PLANNER_MAX_ALIGNMENT (1ull << 32) /* bytes */
#define PLANNER_MAX_TENSORS 16000000u /* hard cap on one graph */
#define PLANNER_NOT_PINNED (-1) /* planner_tensor.pinned: free to place */

/* One tensor of a lifetime graph. Value struct; the caller owns arrays. */
struct planner_tensor {
  uint32_t id;     /* unique within the graph */
  uint64_t size;   /* bytes; 0 is legal and takes no space */
  int64_t first;   /* first operator that touches it, inclusive, >= 0 */
  int64_t last;    /* last operator that touches it, inclusive, >= first,
                      < INT64_MAX */
  uint64_t align;  /* own alignment in bytes, power of two; 0 = none */
  int64_t pinned;  /* fixed offset in bytes, or PLANNER_NOT_PINNED */
  uint32_t alias;  /* with has_alias: the id of the tensor whose bytes
                      this one may reuse (IN-PLACE SHARING) */
  uint32_t has_alias; /* 1 = alias is set; 0 = none (zeroed memory) */
};

/* A lifetime graph: a borrowed view of the caller's tensor array. */
struct planner_graph {
  const struct planner_tensor *tensors; /* n_tensors entries, borrowed */
  size_t n_tensors;                     /* 1 .. PLANNER_MAX_TENSORS */
};

/* Algorithms. Values are stable: they travel on the wire and into the
 * cache key, so never renumber them. */
enum planner_algo {
  PLANNER_ALGO_BEST = 0,           /* every heuristic, keep the smallest */
  PLANNER_ALGO_NAIVE = 1,          /* bump allocator in graph order */
  PLANNER_ALGO_TFLM_GREEDY = 2,    /* TFLite Micro GreedyMemoryPlanner */
  PLANNER_ALGO_TFLITE_BESTFIT = 3, /* TFLite ArenaPlanner best fit */
  PLANNER_ALGO_GREEDY_SIZE = 4,    /* size descending, best fit */
  PLANNER_ALGO_GREEDY_BREADTH = 5, /* widest operator first, best fit */
  PLANNER_ALGO_EXACT = 6,          /* branch and bound, within an effort */
  PLANNER_ALGO__COUNT
};

/* Result of a capacity question (options.capacity != 0). */
enum planner_fit {
  PLANNER_FIT_NA = 0,      /* no capacity was given */
  PLANNER_FIT_YES = 1,     /* the returned plan fits the capacity */
  PLANNER_FIT_NO = 2,      /* proven: no plan fits the capacity; the
                              plan is the best found, never larger than
                              planning without the capacity gives */
  PLANNER_FIT_UNKNOWN = 3, /* no fitting plan found, none ruled out; the
                              plan is the best found, never larger than
                              planning without the capacity gives */
};

/* Which bound a plan's lower_bound_bytes comes from. */
enum planner_bound {
  PLANNER_BOUND_LOAD = 0,   /* max live bytes at one operator (above) */
  PLANNER_BOUND_SEARCH = 1, /* raised by an exhausted exact search */
};

/* Returns 1 when this periodically polled callback wants work stopped.
 * Polled from the exact search about every 64 K work units; a stop makes
 * planner_run() fail with ARENA_ECANCELED, never return another plan. */
typedef int (*planner_stop_cb)(void *ctx);

struct planner_options {
  enum planner_algo algo; /* default PLANNER_ALGO_BEST */
  uint64_t alignment;     /* bytes, power of two; 1 = none; default 64 */
  uint64_t capacity;      /* bytes the arena may use; 0 = unlimited */
  uint32_t effort;        /* exact-search effort units (see EFFORT);
                             0 = PLANNER_DEFAULT_EFFORT */
  planner_stop_cb stop;   /* optional cancel poll, may be NULL */
  void *stop_ctx;         /* borrowed, passed to stop */
  uint32_t threads;       /* threads `best` may use, the calling one
                             included; 0 or 1 = the calling thread only
                             (see THREADS). Never changes the plan. */
  int in_place;           /* 1 (default): take the legal pairs the graph
                             declares (IN-PLACE SHARING); 0: plan and
                             verify as if no tensor declared an alias */
};

/* A plan. Caller-allocated; the arrays inside are owned by the plan. */
struct planner_plan {
  uint64_t *offsets;          /* n_offsets entries, in graph order */
  size_t n_offsets;           /* == graph n_tensors */
  uint64_t arena_bytes;       /* max(offset + size), 0 for all-empty */
  uint64_t lower_bound_bytes; /* a proven lower bound, see LOWER BOUND;
                                 with legal in-place pairs, of every plan
                                 the verifier accepts (IN-PLACE SHARING) */
  uint64_t naive_bytes;       /* sum of sizes (no reuse, no padding) */
  enum planner_algo algo;     /* the algorithm that produced offsets */
  int proven_optimal;         /* 1 when arena_bytes == a lower bound */
  enum planner_fit fit;       /* answer to the capacity question */
  enum planner_bound bound;   /* where lower_bound_bytes comes from */
  uint64_t nodes_explored;    /* exact search nodes, 0 for heuristics */
  uint64_t search_us;         /* wall time of the exact search, measured
                                 for reporting only (never a limit) */
  uint64_t lower_bound_unshared_bytes; /* a lower bound with every alias
                                 ignored: the load bound, or
                                 lower_bound_bytes when the graph shares
                                 nothing */
  size_t n_shared;            /* declared legal pairs at one offset in
                                 this plan (IN-PLACE SHARING) */
  uint64_t load_bound_bytes;  /* the load bound of the graph with every
                                 alias ignored, as planner_lower_bound()
                                 gives it; 0 when the plan did not come
                                 from planner_run() */
  /* Where planner_run()'s time went: wall times in microseconds,
   * measured for reporting only (never a limit; never part of what makes
   * two plans the same). plan_us is all of it, from the start of
   * validation to the end of verification; the phases below (and
   * search_us above) add up to it but for bookkeeping of a few
   * microseconds. All are 0 in a plan that did not come from
   * planner_run() in this process. */
  uint64_t plan_us;           /* all of planner_run() */
  uint64_t validate_us;       /* checking the graph and options */
  uint64_t index_us;          /* the problem: alignments, the time
                                 index, the lower bounds; with in-place
                                 pairs also the joined graph */
  uint64_t heuristics_us;     /* the heuristic, or best's race of them */
  uint64_t verify_us;         /* planner_verify() of the plan */
};

/* Fills o with the defaults: best, alignment 64, no capacity, default
 * effort, no stop callback, in-place sharing on. */
void planner_options_init(struct planner_options *o);

/* The CPUs this process may run on, from its affinity mask (which, unlike
 * the online count, needs no file under /sys): a value for
 * options->threads. 1 when the mask cannot be read. Never changes a plan;
 * more threads only make `best` finish sooner. */
uint32_t planner_cpu_threads(void);

/* Checks a graph and options without planning. Returns 0, or
 * ARENA_EEMPTY, ARENA_EINVAL (NULL tensors, bad algorithm, too many
 * tensors, an alias that names the tensor itself or an id not in the
 * graph), ARENA_ELIFETIME (first > last or negative), ARENA_EDUPID,
 * ARENA_EALIGN (global or per-tensor alignment not a power of two or above
 * PLANNER_MAX_ALIGNMENT), ARENA_EOVERFLOW (the sizes, each with the
 * most padding its offset can need, its effective alignment - 1, plus
 * the highest pinned end exceed 2^63 - 1 bytes, the largest arena; or a
 * last operator of INT64_MAX), ARENA_EPINNED (a pinned offset that is misaligned,
 * or two pinned tensors that collide). Describes the first offending
 * tensor in err. O(n log n) time, O(n) memory. */
int planner_validate(const struct planner_graph *g,
                     const struct planner_options *o,
                     char err[ARENA_ERR_LEN]);

/* Computes the load lower bound (see LOWER BOUND) of a graph that passed
 * planner_validate. Returns 0 and sets *lb_bytes, or ARENA_ENOMEM. */
int planner_lower_bound(const struct planner_graph *g,
                        const struct planner_options *o, uint64_t *lb_bytes);

/* The lower bound of every plan the verifier accepts for g under o,
 * which a plan arriving from elsewhere (a bundle, a database) is judged
 * by: with o->in_place and a legal pair declared, the bound of IN-PLACE
 * SHARING (a pair's common operator counted once, at the larger size),
 * which planner_run() reports for such a graph; otherwise the load bound
 * of g with its aliases ignored (planner_lower_bound()). Validates g
 * first. Returns 0 and sets *lb_bytes, a planner_validate() code (with
 * err, which may be NULL), or ARENA_ENOMEM. */
int planner_accepted_lower_bound(const struct planner_graph *g,
                                 const struct planner_options *o,
                                 uint64_t *lb_bytes, char *err);

/* Sets p to an empty plan that planner_plan_cleanup() accepts. */
void planner_plan_init(struct planner_plan *p);

/* Frees what p owns and leaves it empty. Accepts NULL. */
void planner_plan_cleanup(struct planner_plan *p);

/* Validates g and o, plans with o->algo, and verifies the result with
 * planner_verify() before returning it. On success fills *out (which must
 * be planner_plan_init()ed or cleaned up; any old contents are freed).
 * Deterministic: the same graph and options always give the same offsets.
 * Returns 0, any planner_validate() code, ARENA_ENOMEM, ARENA_ECANCELED
 * (the stop callback fired), or ARENA_EVERIFY (an internal bug; never
 * returns an unverified plan). On failure *out is left empty. */
int planner_run(const struct planner_graph *g, const struct planner_options *o,
                struct planner_plan *out, char err[ARENA_ERR_LEN]);

/* WINDOWED IMPROVEMENT
 * One step of improvement of a given plan of a large graph, in memory in
 * proportion to a window of it rather than to the graph: the tensors of
 * one window around the plan's peak (a band of memory below its top over
 * all of time, joined to a stretch of time around the tensor that
 * reaches the top; at most max_window tensors, 2 .. PLANNER_MAX_TENSORS)
 * are planned again by planner_run() under o (one thread, no capacity),
 * every other tensor where it was. Deterministic: the same graph, options
 * and given plan give the same result. When the whole plan that results
 * is strictly smaller than given (arena_bytes), it is verified with
 * planner_verify() and put in *out (planner_plan_init()ed; old contents
 * freed), *better = 1; otherwise *out is untouched and *better = 0. A
 * graph that declares aliases, with o->in_place on, is not improved
 * (*better = 0): pieces of a shared pair would collide in the window.
 * given (offsets in g's order, a valid plan of g under o) and g are
 * borrowed. Returns 0, ARENA_EINVAL (bad arguments), ARENA_ENOMEM,
 * ARENA_ECANCELED (o->stop fired) or ARENA_EVERIFY (an internal bug; the
 * plan is never returned). Extra memory: the window's planning, about
 * what planner_run() takes for 3 x max_window tensors, plus the new
 * offsets and the verification, in proportion to the graph (defined in
 * planner/run/window.c). */
int planner_improve_window(const struct planner_graph *g,
                           const struct planner_options *o,
                           const struct planner_plan *given, size_t max_window,
                           struct planner_plan *out, int *better,
                           char err[ARENA_ERR_LEN]);

/* The arena of the naive algorithm's plan of g under o (bump allocation
 * in id order above the pinned tensors; with o->in_place and declared
 * pairs, as planner_run() shares them): exactly the arena_bytes that
 * planner_run() gives with o->algo = PLANNER_ALGO_NAIVE and no capacity,
 * without its lower bound and verification, which cost most of that
 * run. A baseline for savings. Validates g first. Returns 0 and sets
 * *bytes, or a planner_run() code (with err, which may be NULL); *bytes
 * is 0 on failure. */
int planner_naive_arena(const struct planner_graph *g,
                        const struct planner_options *o, uint64_t *bytes,
                        char err[ARENA_ERR_LEN]);

/* Checks plan p against graph g under options o: the offset count, that
 * every offset is aligned, that no two tensors overlap in both time and
 * memory, that pinned tensors sit at their offsets, and that
 * p->arena_bytes equals max(offset + size). Returns 0, ARENA_EVERIFY with
 * the first bad tensor or pair described in err, a planner_validate()
 * code for a bad graph, or ARENA_ENOMEM. O(n log n). */
int planner_verify(const struct planner_graph *g,
                   const struct planner_options *o,
                   const struct planner_plan *p, char err[ARENA_ERR_LEN]);

/* Whether out may reuse in's bytes (see IN-PLACE SHARING) under o.
 * Returns NULL when the pair is legal, else a static phrase saying why
 * not, such as "the input is used after the output is written". Pure. */
const char *planner_alias_check(const struct planner_tensor *out,
                                const struct planner_tensor *in,
                                const struct planner_options *o);

/* Returns the stable name of an algorithm ("best", "naive", "tflm-greedy",
 * "tflite-bestfit", "greedy-size", "greedy-breadth", "exact"), or "?". */
const char *planner_algo_name(enum planner_algo a);

/* Parses an algorithm name. Returns 0 and sets *a, or ARENA_EINVAL. */
int planner_algo_parse(const char *name, enum planner_algo *a);

/* Returns the name of a fit answer: "n/a", "fits", "infeasible",
 * "unknown". */
const char *planner_fit_name(enum planner_fit f);

/* Returns the name of a lower bound's source: "load" or "search". */
const char *planner_bound_name(enum planner_bound b);

#ifdef __cplusplus
}
#endif

#endif /* ARENA_PLANNER_H */

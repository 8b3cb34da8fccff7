/*
 * exact.c - the exact planner: branch and bound over canonical placements.
 *
 * planner__exact_within() (contract in improve.h) either minimises the
 * arena of a plan, starting from the plan it is given, or answers a
 * capacity question; search.c calls it last, and the improvement passes
 * call it on their windows. docs/exact.md explains the method at length;
 * this comment is the short version for readers of the code.
 *
 * FILES
 *  exact.c         this comment and the drivers
 *  exact_build.c   preprocessing: components, sections, overlap lists
 *  exact_order.c   static rank orders, twins, the restart schedule
 *  exact_search.c  the depth-first search over one component
 *  exact_stream.c  the same search for large components, in linear
 *                  memory (set up by exact_stream_setup.c)
 *  exact_int.h     struct ctx and the exact__ functions they share
 *
 * DESIGN
 *  Only "free" tensors (size > 0, not pinned) are searched. Zero-size
 *  tensors keep offset 0, pinned tensors keep their offset and act as
 *  fixed obstacles.
 *
 *  Decomposition. Free tensors sorted by first use split into components
 *  wherever no lifetime crosses a point in time. Components never
 *  interact (pinned tensors are fixed), so each is searched on its own and
 *  the arena is the maximum over components and pinned tops.
 *
 *  Sections. Inside a component the points where some lifetime starts or
 *  ends cut time into sections; the live set is constant inside one.
 *  Every section keeps a floor (the highest top of the tensors placed so
 *  far that live in it) and rem, the total size of unplaced tensors live
 *  in it.
 *
 *  Canonical solutions. Among the plans that fit a capacity C take one
 *  with the least sum of offsets and list its tensors by (offset, rank),
 *  rank being a fixed priority order. Placing them in that order, each
 *  lands at pos(b): the lowest aligned offset at or above the tops of the
 *  placed tensors it overlaps in time that misses every pinned obstacle
 *  (anything lower would lower the sum). So the search only ever places
 *  an unplaced tensor at pos(b), and the (pos, rank) keys of successive
 *  placements strictly increase; that alone removes every reordering of
 *  one plan. Further rules that the canonical plan obeys, so pruning with
 *  them loses nothing:
 *   - Dominance: a tensor may be placed at x only if x < pos(b') +
 *     size(b') for every other unplaced b'. Otherwise b' could drop to
 *     pos(b'), below everything still to come, and lower the sum.
 *   - Section capacity: later tensors sit at or above x (the last
 *     placement) and above the floor, so in every section
 *     max(floor, x) + rem <= C.
 *   - Fit: pos(b) + size(b) <= C for every unplaced b.
 *   - Stacking: the unplaced tensors of one section all meet in time, so
 *     stacked in order of release max(pos, x) they must end within C
 *     (erd_ok, checked on the sections a placement touched).
 *   - Lowest section: if the lowest section has no slack, the next
 *     placement goes exactly onto its floor.
 *   - Twins: identical tensors are placed in rank order.
 *  When every tensor is placed the plan fits C. When the tree is exhausted
 *  no plan fits C at all, which proves a lower bound of C + granule.
 *
 *  During the search, when the unplaced tensors fall apart into groups
 *  that share no point in time, each group is searched on its own (struct
 *  dec); one group without a completion fails the level that split, in a
 *  single jump. Failed states are remembered in a table keyed by two
 *  64-bit hashes (struct ttent).
 *
 *  Granule. Every canonical offset is a sum of sizes and pinned tops
 *  rounded up to alignments. With g the gcd of all sizes and pinned
 *  offsets, lowered so that each alignment divides g or is a multiple of
 *  it, every canonical arena is a multiple of g; so the optimum is too,
 *  and bounds are rounded up to multiples of g.
 *
 *  Driver. Searches race several rank orders with restarts: in turns,
 *  every base order (and one dynamic order, which ranks the groups of
 *  every split anew by what is left unplaced in them, restarting their
 *  keys at (0, -1)) runs under a node limit that doubles from turn to
 *  turn, then a few jittered orders run under Luby limits
 *  (exact__round_plan()). Minimisation alternates a feasibility
 *  attempt at the lower bound (success proves optimality, exhaustion
 *  raises the bound) with a descent from the incumbent: a bisection of
 *  the targets between the bound and the incumbent, with restarts, in
 *  which each order keeps its own bracket (descend()).
 *
 *  Effort. Every step of the setup and of the search is counted in work
 *  units, and the search stops when the units of its effort are spent.
 *  No clock is read (except to report search_us): the stop callback can
 *  only cancel the whole call, so what is explored, and the plan, depend
 *  on the input and the options alone.
 *
 *  Memory. For components of up to 1000 tensors, O(n + sections +
 *  overlap pairs): their overlap pairs (the adjacency lists) and section
 *  incidences are capped at EXACT_MAX_PAIRS entries in total. Larger
 *  components, and those above that cap, are searched by exact_stream.c
 *  in O(n log n) memory without either (up to 2^17 tensors; beyond that
 *  a component keeps its heuristic placement).
 */
#include "exact_int.h"
#include "improve.h" /* planner__exact_within() */

#include <string.h>

/* ---- drivers ------------------------------------------------------------ */

#define R_NOMEM 100

static uint64_t arena_now(const struct ctx *X)
{
  uint64_t a = X->pintop;
  for (uint32_t c = 0; c < X->nc; c++)
    if (X->carena[c] > a)
      a = X->carena[c];
  return a;
}

/* Makes every component fit cap, searching those that do not yet fit.
 * Returns R_FOUND (all fit now), R_INFEAS (one provably cannot), R_LIMIT
 * (some search hit the node limit), R_SPENT, R_CANCEL, R_GIVEUP (a
 * component too large to search does not fit) or R_NOMEM.
 *
 * `again`: order 0 already searched cap with this limit in this turn.
 * exact_stream.c never splits the unplaced tensors into groups, so under
 * the dynamic order (order 0's keys, re-ranked at splits) it would repeat
 * that search node for node; its large components count as out of reach
 * without a search. */
static int feas_all(struct ctx *X, uint64_t cap, uint64_t limit, unsigned v,
                    int again)
{
  int pending = 0;
  for (uint32_t c = 0; c < X->nc; c++) {
    if (X->carena[c] <= cap)
      continue;
    if (!X->searchable[c])
      return R_GIVEUP;
    if (again && (v & EXACT_DYN) && X->searchable[c] == 2) {
      pending = 1;
      continue;
    }
    if (exact__make_rank(X, c, v))
      return R_NOMEM;
    int r = X->searchable[c] == 2 ? exact__stream_search(X, c, cap, limit)
                                  : exact__search(X, c, cap, limit);
    if (r == R_FOUND) {
      uint32_t a = X->cb[c], m = X->cb[c + 1] - a;
      uint64_t top = 0;
      for (uint32_t q = 0; q < m; q++) {
        X->offsets[X->gi[a + q]] = X->out[q];
        if (X->out[q] + X->size[a + q] > top)
          top = X->out[q] + X->size[a + q];
      }
      X->carena[c] = top;
    } else if (r == R_LIMIT) {
      pending = 1;
    } else {
      return r;
    }
  }
  return pending ? R_LIMIT : R_FOUND;
}

static int stopped(int r)
{
  return r == R_SPENT || r == R_CANCEL || r == R_GIVEUP || r == R_NOMEM;
}

/* The smallest multiple of g above v. */
static uint64_t next_granule(uint64_t v, uint64_t g)
{
  return (v / g + 1) * g;
}

/* The least arena above cap that an optimal plan can have. The top
 * tensor of a plan above cap is free (pinned tops stay within the bounds
 * searched), so the arena is offset + size with the offset a multiple of
 * that tensor's alignment; and an optimal arena is a multiple of g. */
static uint64_t next_arena(const struct ctx *X, uint64_t cap)
{
  uint64_t best = UINT64_MAX;
  for (uint32_t k = 0; k < X->K; k++) {
    uint64_t s = X->size[k], v;
    if (cap + 1 <= s)
      v = s;
    else
      v = planner__align_up(cap + 1 - s, X->align[k]) + s;
    if (v < best)
      best = v;
  }
  uint64_t gr = next_granule(cap, X->g);
  return best != UINT64_MAX && best > gr ? best : gr;
}

/* Targets out of a round's reach that end its descent. */
#define EXACT_DESCENT_MISSES 2

/* One round's descent from the incumbent *ub towards the bound *lb,
 * under order v and node limit `limit`: bisection with restarts.
 *
 * Which capacities a search reaches within a node limit is far from
 * monotone: on MiniMalloc's D one order fits 1024000 bytes in 57 K nodes
 * but not 1030144 in 64 K, and the load bound lies 4% below any arena
 * found. So the descent neither steps down from the incumbent (targets
 * just below it are often the hard ones) nor keeps to fixed fractions of
 * the gap (with a weak bound those all lie below the optimum, and the
 * targets just above it, often the easy ones, are never tried).
 * Instead each order slot v keeps a bracket (X->lo_k[slot], *ub) and
 * tries its midpoint. A plan found lowers *ub and the search goes on in
 * the same round; a target proven infeasible raises *lb; a target out of
 * reach becomes the bracket's low end, so the order's next target lies
 * higher, this round or at its next, larger node limit. When the bracket
 * holds no multiple of g it restarts from *lb. Orders reach very
 * different targets, so one order's misses never narrow another's
 * bracket. A round ends after EXACT_DESCENT_MISSES targets out of reach,
 * keeping most nodes for the attempts at the bound (which prove most of
 * the suite optimal), or when the bracket is empty. Returns the last
 * search's result, R_LIMIT when none ran. */
static int descend(struct ctx *X, uint64_t *lb, uint64_t *ub, int *raised,
                   uint64_t limit, unsigned v)
{
  uint64_t g = X->g, *lo = &X->lo_k[exact__order_slot(v)];
  int r = R_LIMIT, misses = 0;
  while (*ub > *lb && misses < EXACT_DESCENT_MISSES) {
    uint64_t last = (*ub - 1) / g * g; /* the largest target below ub */
    if (*lo < *lb || *lo + g > last)
      *lo = *lb; /* restart */
    if (*lo + g > last)
      break; /* only the bound itself is left below ub */
    uint64_t first = *lo + g;
    uint64_t cap = first + (last - first) / g / 2 * g;
    r = feas_all(X, cap, limit, v, 0);
    if (r == R_FOUND) {
      *ub = arena_now(X);
    } else if (r == R_INFEAS) {
      *lb = next_arena(X, cap);
      *raised = 1;
    } else if (r == R_LIMIT) {
      *lo = cap;
      misses++;
    } else {
      break;
    }
  }
  return r;
}

int planner__exact_within(const struct planner__prob *p, uint64_t *offsets,
                          struct planner_plan *res, uint64_t goal,
                          uint64_t work_limit, uint64_t *work)
{
  struct ctx X;
  memset(&X, 0, sizeof X);
  X.p = p;
  X.offsets = offsets;
  const struct planner_options *o = p->o;
  X.work = *work;
  X.work_limit = work_limit;
  int rc = exact__build(&X);
  if (rc) {
    /* Out of memory, cancelled, or the effort spent on the setup: the
     * plan given stands. */
    *work = X.work;
    exact__free(&X);
    if (rc == R_SPENT)
      return 0;
    return rc == R_CANCEL ? ARENA_ECANCELED : rc;
  }
  uint64_t g = X.g, lb = res->lower_bound_bytes;
  if (X.pintop > lb)
    lb = X.pintop;
  if (lb % g)
    lb = next_granule(lb, g);
  int raised = 0, r = R_FOUND;
  unsigned round = 0, v;
  uint64_t limit = exact__round_plan(round, &v);
  if (o->capacity) {
    uint64_t cap = o->capacity;
    if (arena_now(&X) <= cap) {
      res->fit = PLANNER_FIT_YES;
    } else if (lb > cap) {
      res->fit = PLANNER_FIT_NO;
    } else {
      res->fit = PLANNER_FIT_UNKNOWN;
      for (;;) {
        r = feas_all(&X, cap, limit, v, 1);
        if (r == R_FOUND) {
          res->fit = PLANNER_FIT_YES;
        } else if (r == R_INFEAS) {
          res->fit = PLANNER_FIT_NO;
          if (next_arena(&X, cap) > lb) {
            lb = next_arena(&X, cap);
            raised = 1;
          }
        } else if (r == R_LIMIT) {
          round++;
          limit = exact__round_plan(round, &v);
          if ((r = exact__poll_stop(&X)) == R_FOUND)
            continue;
        }
        break;
      }
    }
  } else {
    uint64_t ub = arena_now(&X), lb0 = lb; /* order 0's target this turn */
    while (ub > lb && ub > goal) {
      if (v == 0)
        lb0 = lb;
      r = feas_all(&X, lb, limit, v, lb == lb0);
      if (r == R_FOUND) {
        ub = arena_now(&X);
        break;
      }
      if (r == R_INFEAS) {
        lb = next_arena(&X, lb);
        raised = 1;
        continue;
      }
      if (stopped(r))
        break;
      r = descend(&X, &lb, &ub, &raised, limit, v);
      if (stopped(r))
        break;
      if ((r = exact__poll_stop(&X)) != R_FOUND)
        break;
      round++;
      limit = exact__round_plan(round, &v);
    }
  }
  res->arena_bytes = arena_now(&X);
  if (lb > res->lower_bound_bytes) {
    res->lower_bound_bytes = lb;
    if (raised)
      res->bound = PLANNER_BOUND_SEARCH;
  }
  res->proven_optimal = res->arena_bytes <= res->lower_bound_bytes;
  res->nodes_explored += X.nodes;
  *work = X.work;
  int cancelled = X.cancelled;
  exact__free(&X);
  if (r == R_NOMEM)
    return ARENA_ENOMEM;
  return cancelled ? ARENA_ECANCELED : 0;
}

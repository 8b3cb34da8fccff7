/*
 * share.h - planner/run/'s internal interface to in-place sharing
 * (share.c): the graph in which every pair the planner takes is one
 * tensor, and the way back to the offsets of the caller's graph.
 * planner_run() (run.c) plans that graph, and the graph as given when
 * sharing does not pay (planner.h, IN-PLACE SHARING).
 */
#ifndef ARENA_SHARE_H
#define ARENA_SHARE_H

#include <stddef.h>
#include <stdint.h>

#include "planner.h"

/* A graph with its chains joined. Caller-allocated; owns its arrays. */
struct planner__share {
  struct planner_graph joined;   /* one tensor per chain, ids 0 .. m-1;
                                    tensors owned */
  uint32_t *group;               /* by row of the caller's graph: its
                                    tensor in joined, owned */
  size_t n;                      /* rows of the caller's graph */
  size_t n_taken;                /* pairs joined */
  uint64_t lb_unshared;          /* the caller's graph's load bound */
};

/* Joins the pairs planner__alias_groups() takes in g (with aliases;
 * borrowed). g is valid under o: planner_validate() returned 0; in_row is
 * the rows its aliases name, as planner__validate() handed them back
 * (borrowed). Returns 0, ARENA_ENOMEM (s then owns nothing), or
 * ARENA_EPINNED when pinned chains collide, the one way the joined graph
 * can fail planner_validate() (then plan g as it is). Free with
 * planner__share_cleanup(). */
int planner__share_init(struct planner__share *s,
                        const struct planner_graph *g,
                        const struct planner_options *o,
                        const uint32_t *in_row);

/* The load lower bound of every plan the verifier accepts for g under o,
 * whichever of g's legal pairs it shares (planner.h, IN-PLACE SHARING).
 * g is valid under o: planner_validate() returned 0; in_row is the rows
 * its aliases name (planner__validate(), borrowed). Sets *legal to
 * whether g declares a legal pair, and then *lb to the bound; with no
 * legal pair no plan shares, and *lb is 0 (use g's own bound).
 *
 * Why neither graph's bound will do: at an operator where only a chain's
 * smaller member is live, the joined graph counts the largest member
 * there (id,size,first,last,alias 0,64,0,1; 1,64,2,2,2; 2,62,0,2 at
 * alignment 64: the joined bound is 128, a plan without sharing needs
 * 126); where a pair meets, the unshared graph counts both members; and
 * a plan that shares some pairs but not others can be below both.
 *
 * The bound is the load bound (LOWER BOUND) of the cut graph: g without
 * aliases or pins, in which each legal pair's one common operator (the
 * input's last, the output's first) is kept only by the larger of the
 * two (of the input and all its legal outputs: the largest, the input on
 * a tie) and given up by the other, which is empty if it lived there
 * alone. At each operator the cut graph thus holds every live tensor
 * alone, except that each group of pairs meeting there counts once, at
 * its largest size. In any accepted plan the tensors live at an operator
 * hold disjoint, aligned byte ranges, one per tensor or one per shared
 * group, at least that large: a group that does not share takes at least
 * as many rounded bytes more as its members' padding can take off. So
 * the load bound of each operator holds for every accepted plan. It is
 * at most the joined and the unshared graph's bounds, and equals the
 * joined graph's when members of a pair have one size and every legal
 * pair is taken. Returns 0 or ARENA_ENOMEM. */
int planner__share_bound(const struct planner_graph *g,
                         const struct planner_options *o,
                         const uint32_t *in_row, uint64_t *lb, int *legal);

/* Writes the caller's offsets (s->n, caller-allocated) from the joined
 * graph's (borrowed). */
void planner__share_expand(const struct planner__share *s,
                           const uint64_t *joined_off, uint64_t *off);

void planner__share_cleanup(struct planner__share *s);

#endif /* ARENA_SHARE_H */

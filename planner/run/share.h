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

/* Writes the caller's offsets (s->n, caller-allocated) from the joined
 * graph's (borrowed). */
void planner__share_expand(const struct planner__share *s,
                           const uint64_t *joined_off, uint64_t *off);

void planner__share_cleanup(struct planner__share *s);

#endif /* ARENA_SHARE_H */

/*
 * cli_share.h - what the arenactl subcommands share about in-place
 * sharing (planner.h, IN-PLACE SHARING; cli_share.c): the --in-place and
 * --no-in-place options, the pairs a plan took, the groups of tensors
 * that aliases join, and the lower bound a plan can reach, for the lines
 * and JSON keys that report them.
 *
 * Private to arenactl. Graphs, options and offsets passed in are
 * borrowed; arrays returned are owned by the caller (free()).
 */
#ifndef ARENA_CLI_SHARE_H
#define ARENA_CLI_SHARE_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "planner.h"

/* The help text of the two options, for the usage of every command that
 * takes them (two lines, each ending in a newline). */
#define CLI_IN_PLACE_HELP                                                   \
  "  --in-place       let an output reuse the bytes of the input its\n"   \
  "                   operator reads last (the default; see --help of\n"  \
  "                   plan)\n"                                             \
  "  --no-in-place    give every tensor bytes of its own\n"

/* One declared pair that a plan took: the output and the input whose
 * bytes it reuses, as rows of the graph. */
struct cli_pair {
  size_t out; /* row of the tensor that declares the alias */
  size_t in;  /* row of the tensor it names */
};

/* Matches arg against --in-place and --no-in-place. Returns 1 and sets
 * *in_place (1 or 0) when it is one of them, else 0. */
int cli_in_place_option(const char *arg, int *in_place);

/* Whether some tensor of g declares an alias. */
int cli_has_aliases(const struct planner_graph *g);

/* The declared pairs a plan took: legal under o (planner_alias_check())
 * and at one offset in offsets (g's order), in graph order of the
 * output. None when o->in_place is 0. On success *pairs is owned (NULL
 * when *n is 0). Returns 0, or CLI_EX_OSERR after printing an error
 * under `what`. g must have unique ids (planner_validate()). */
int cli_pairs_taken(const char *what, const struct planner_graph *g,
                    const struct planner_options *o, const uint64_t *offsets,
                    struct cli_pair **pairs, size_t *n);

/* Groups the rows of g that declared aliases join, legal or not: returns
 * an array of g->n_tensors entries (owned, free()) from which
 * cli_group_of() tells the group of a row; NULL when out of memory. */
size_t *cli_alias_groups(const struct planner_graph *g);

/* The group of row i: equal for rows that aliases join. */
size_t cli_group_of(size_t *groups, size_t i);

/* The lower bound of g under o: the load bound with the pairs the
 * planner takes joined when o->in_place is set and g declares aliases
 * (what planner_run() reports), else planner_lower_bound(). Returns 0 or
 * an ARENA_E* code with err filled. g must be valid under o. */
int cli_lower_bound(const struct planner_graph *g,
                    const struct planner_options *o, uint64_t *lb,
                    char err[ARENA_ERR_LEN]);

#endif /* ARENA_CLI_SHARE_H */

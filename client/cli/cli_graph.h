/*
 * cli_graph.h - the graph arenactl's model subcommands load (a lifetime
 * graph, perhaps with a plan, and what was read of a TFLite model), and
 * its life cycle (cli_graph.c). The readers that fill it are above it:
 * cli_json.h (plan JSON) and cli_model.h (CSV, TFLite, and the choice
 * between the three).
 *
 * Private to arenactl. A cli_graph owns its arrays; cli_graph_cleanup()
 * frees them.
 */
#ifndef ARENA_CLI_GRAPH_H
#define ARENA_CLI_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "planner.h"
#include "tflite.h"

/* What kind of file a graph came from. */
enum cli_graph_kind {
  CLI_GRAPH_CSV = 1,    /* lifetime-graph CSV */
  CLI_GRAPH_TFLITE = 2, /* TFLite model */
  CLI_GRAPH_PLAN = 3,   /* arenactl plan --json output */
};

/* A loaded graph, perhaps with a plan. Arrays are owned. */
struct cli_graph {
  enum cli_graph_kind kind;       /* where it came from */
  const char *what;               /* file name for messages, borrowed */
  struct planner_tensor *tensors; /* n entries; pins cleared */
  char **names;                   /* n names or NULL */
  size_t n;                       /* tensors */
  uint64_t *offsets;              /* n offsets when the file is a plan, else NULL */
  uint64_t arena_bytes;           /* from a plan file, else 0 */
  uint64_t alignment;             /* from a plan file, else 0 */
  char algo[32];                  /* from a plan file, else "" */
  uint64_t batch;                 /* batch a --shape applied, else 0 */
  int has_model;                  /* 1: model below is filled */
  struct planner_tflite_model model; /* when kind == CLI_GRAPH_TFLITE */
};

/* Sets g up empty; cli_graph_cleanup() frees what it then owns and sets
 * it up empty again (it accepts NULL). */
void cli_graph_init(struct cli_graph *g);
void cli_graph_cleanup(struct cli_graph *g);

/* A borrowed planner view of g's tensors. */
struct planner_graph cli_graph_view(const struct cli_graph *g);

#endif /* ARENA_CLI_GRAPH_H */

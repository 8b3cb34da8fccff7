/*
 * cli_graph.c - the life cycle of the graph arenactl's model subcommands
 * load (cli_graph.h): set up empty, freed whole, and seen as a planner
 * graph.
 */
#include "cli_graph.h"

#include <stdlib.h>
#include <string.h>

void cli_graph_init(struct cli_graph *g)
{
  memset(g, 0, sizeof *g);
  planner_tflite_init(&g->model);
}

void cli_graph_cleanup(struct cli_graph *g)
{
  if (!g)
    return;
  if (g->names)
    for (size_t i = 0; i < g->n; i++)
      free(g->names[i]);
  free(g->names);
  free(g->tensors);
  free(g->offsets);
  planner_tflite_cleanup(&g->model);
  cli_graph_init(g);
}

struct planner_graph cli_graph_view(const struct cli_graph *g)
{
  struct planner_graph v;
  v.tensors = g->tensors;
  v.n_tensors = g->n;
  return v;
}

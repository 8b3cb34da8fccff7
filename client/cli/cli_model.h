/*
 * cli_model.h - input loading shared by the model subcommands of arenactl
 * (import, explain, render, diff, embed) and by `plan` for .tflite files.
 *
 * A FILE may be a lifetime-graph CSV (ours or MiniMalloc's; an offset
 * column makes it a plan), the JSON object of `arenactl plan --json` (a
 * plan), or a TFLite model (recognised by "TFL3" at bytes 4..7, whatever
 * its name).
 */
#ifndef ARENA_CLI_MODEL_H
#define ARENA_CLI_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "cli_graph.h"
#include "graph_csv.h"
#include "planner.h"
#include "tflite.h"

/* Options of the loader (set by cli_model_option()). */
struct cli_load_opts {
  int keep_dequant;  /* --keep-dequant */
  int no_in_place;   /* --no-in-place: a .tflite declares no in-place
                        pairs (tflite.h, IN-PLACE PAIRS) */
  const char *shape; /* --shape value, borrowed, or NULL */
  int other_kinds_ok; /* 1: the options may meet non-TFLite files (diff) */
  int tflite_only;    /* 1: refuse anything but a TFLite model (import) */
};

/* Loads path (borrowed; "-" = stdin) into g (cli_graph_init()ed). Prints
 * any error as "arenactl: FILE: message" and returns its exit status
 * (CLI_EX_NOINPUT, CLI_EX_DATAERR, CLI_EX_OSERR), or 0. */
int cli_graph_load(const char *path, const struct cli_load_opts *o,
                   struct cli_graph *g);

/* Tries the loader options (--keep-dequant, --shape S, --in-place,
 * --no-in-place) at argv[*i]. Returns 1 when it was one (0 in *rc, or
 * CLI_EX_USAGE), else 0. A command that plans takes planner_options
 * in_place = !o->no_in_place as well. */
int cli_model_option(int argc, char **argv, int *i, struct cli_load_opts *o,
                     int *rc);

/* Reads a TFLite model that is already in memory into a CSV result, for
 * `arenactl plan`, applying the --shape text shape_in (borrowed; NULL for
 * the model's own shapes) exactly as cli_graph_load() does for import and
 * explain, declaring in-place pairs when in_place is set, and writes into
 * shape (shape_cap bytes, may be NULL) the input
 * shape the sizes were computed for, in the --shape syntax,
 * "1x96x96x1,1x10" ("" when it cannot be written so). Prints errors under
 * `what`; returns 0 or an exit status (CLI_EX_USAGE for --shape text that
 * is not a shape, CLI_EX_DATAERR for a shape that does not apply). */
int cli_model_to_csv(const char *what, const char *buf, size_t len,
                     const char *shape_in, int in_place, struct planner_csv *c,
                     char *shape, size_t shape_cap);

/* Live bytes (sizes summed, no alignment) at every operator 0 .. n-1,
 * where n = 1 + the largest `last`. On success *live is owned (free()).
 * Prints and returns CLI_EX_DATAERR when n would pass CLI_MAX_OPS, or
 * CLI_EX_OSERR. */
#define CLI_MAX_OPS 10000000u
int cli_live_bytes(const struct cli_graph *g, uint64_t **live, size_t *n_ops);

/* Gives g a plan in *p (planner_plan_init()ed): its own offsets when the
 * file was a plan (checked with planner_verify(); o->alignment should
 * then be the plan's; the bounds and n_shared are filled in as
 * planner_run() fills them), otherwise planner_run() with o. Prints
 * errors; returns 0 or an exit status. */
int cli_graph_plan(const struct cli_graph *g, const struct planner_options *o,
                   struct planner_plan *p);

/* Tries --algo A and --align N at argv[*i] for o. Same returns as
 * cli_model_option(). */
int cli_plan_option(int argc, char **argv, int *i, struct planner_options *o,
                    int *rc);

/* Writes s to f with XML/HTML special characters escaped. */
void cli_xml_escape(FILE *f, const char *s);

/* Prints one line per model fact on f, each prefixed by prefix. */
void cli_model_summary(FILE *f, const char *prefix,
                       const struct planner_tflite_model *m);

#endif /* ARENA_CLI_MODEL_H */

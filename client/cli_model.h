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
#include "graph_csv.h"
#include "planner.h"
#include "tflite.h"

/* What kind of file a graph came from. */
enum cli_graph_kind {
  CLI_GRAPH_CSV = 1,    /* lifetime-graph CSV */
  CLI_GRAPH_TFLITE = 2, /* TFLite model */
  CLI_GRAPH_PLAN = 3,   /* arenactl plan --json output */
};

/* Options of the loader (set by cli_model_option()). */
struct cli_load_opts {
  int keep_dequant;  /* --keep-dequant */
  int no_in_place;   /* --no-in-place: a .tflite declares no in-place
                        pairs (tflite.h, IN-PLACE PAIRS) */
  const char *shape; /* --shape value, borrowed, or NULL */
  int other_kinds_ok; /* 1: the options may meet non-TFLite files (diff) */
  int tflite_only;    /* 1: refuse anything but a TFLite model (import) */
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

void cli_graph_init(struct cli_graph *g);
void cli_graph_cleanup(struct cli_graph *g);

/* Loads path (borrowed; "-" = stdin) into g (cli_graph_init()ed). Prints
 * any error as "arenactl: FILE: message" and returns its exit status
 * (CLI_EX_NOINPUT, CLI_EX_DATAERR, CLI_EX_OSERR), or 0. */
int cli_graph_load(const char *path, const struct cli_load_opts *o,
                   struct cli_graph *g);

/* cli_json.c: reads plan JSON (the output of `arenactl plan --json`),
 * buf[0 .. len) borrowed, into g (cli_graph_init()ed; kind becomes
 * CLI_GRAPH_PLAN). Prints any error as "arenactl: WHAT: plan JSON, byte
 * N: message" and returns CLI_EX_DATAERR (CLI_EX_OSERR when out of
 * memory), or 0. */
int cli_json_load(const char *what, const char *buf, size_t len,
                  struct cli_graph *g);

/* cli_json.c: whether buf[0 .. len) (borrowed) can begin plan JSON, for
 * reading it in parts (cli_input.c). Returns 0 when the reader takes it
 * whole or runs out of bytes (or memory) before it finds an error, else
 * ARENA_EPARSE with the message cli_json_load() would print for the
 * whole file, whatever follows, in err. */
int cli_json_prefix_check(const char *buf, size_t len,
                          char err[ARENA_ERR_LEN]);

/* A borrowed planner view of g's tensors. */
struct planner_graph cli_graph_view(const struct cli_graph *g);

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

/* Writes s to f as a JSON string body (no quotes), escaped. */
void cli_json_escape(FILE *f, const char *s);

/* Writes len bytes of data to path (borrowed; NULL or "-" = stdout).
 * Returns 0, or CLI_EX_IOERR after printing why. */
int cli_model_write(const char *path, const void *data, size_t len);

/* Prints one line per model fact on f, each prefixed by prefix. */
void cli_model_summary(FILE *f, const char *prefix,
                       const struct planner_tflite_model *m);

#endif /* ARENA_CLI_MODEL_H */

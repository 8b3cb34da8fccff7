/*
 * cli_input.h - reading the input file of an arenactl subcommand, so
 * that input it is going to refuse is refused early.
 *
 * Private to arenactl. The file is read in parts (cli.h,
 * cli_read_file_checked()), and after each part the bytes so far are
 * checked against the kinds of file the command accepts: a TFLite model
 * ("TFL3" at bytes 4..7), a lifetime-graph CSV, or plan JSON. Reading
 * stops as soon as they cannot begin any of them, so refusing such a file
 * costs memory in proportion to the bytes before its first error, not to
 * the file; the message is the one the whole file would get.
 */
#ifndef ARENA_CLI_INPUT_H
#define ARENA_CLI_INPUT_H

#include <stddef.h>

#include "cli.h"
#include "graph_csv.h"

/* The kinds of file a command accepts. */
enum cli_input_kinds {
  CLI_INPUT_GRAPH = 1,  /* a CSV or a TFLite model (plan) */
  CLI_INPUT_ANY = 2,    /* a CSV, plan JSON or a TFLite model (explain,
                           render, diff) */
  CLI_INPUT_TFLITE = 3, /* a TFLite model only (import, embed) */
  CLI_INPUT_GRAPH_PARSED = 4, /* as CLI_INPUT_GRAPH, but the bytes of a
                           CSV are dropped once parsed: *buf then holds
                           only its unparsed end (plan, when it needs no
                           hash of the file) */
};

/* Longest line of a CSV, in bytes without its line end: a line that
 * reaches it is refused, as no valid one comes near it. */
#define CLI_MAX_LINE_LEN ((size_t)1 << 20)

/* Reads path (borrowed; "-" = standard input) whole, checking it as it
 * arrives against `kinds`:
 *  - a TFLite model is read whole (its reader needs every byte); with
 *    CLI_INPUT_TFLITE anything else is refused after 8 bytes;
 *  - a CSV is refused at a line of CLI_MAX_LINE_LEN bytes or more, and,
 *    after each part, when the CSV parser (graph_csv.h, a stream) finds
 *    an error in its complete lines;
 *  - plan JSON (CLI_INPUT_ANY, a first non-blank '{') is refused, at the
 *    same points, once its reader stops on an error before the end.
 * Refuses a regular file over CLI_MAX_FILE_LEN by its size, a stream
 * once it passes it. On success returns 0 with *buf owned (free()),
 * NUL-terminated, and *len its length. Otherwise prints "arenactl: WHAT:
 * <reason>" and returns CLI_EX_NOINPUT (cannot open or read, over the
 * size limit), CLI_EX_DATAERR (refused for its bytes) or CLI_EX_OSERR,
 * with *buf NULL and *len 0.
 *
 * csv (may be NULL; planner_csv_init()ed) receives the parse of a file
 * found to be a CSV (not for a model, plan JSON, or a text too short to
 * tell, under 8 bytes): the parse made while reading, so the caller need
 * not parse the text again. Its error is printed as "arenactl: WHAT:
 * <message>" and returned as cli_exit_status() maps it, with *buf NULL.
 * csv->n_tensors is 0 when no parse was handed over. */
int cli_input_read(const char *what, const char *path,
                   enum cli_input_kinds kinds, char **buf, size_t *len,
                   struct planner_csv *csv);

#endif /* ARENA_CLI_INPUT_H */

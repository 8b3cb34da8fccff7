/*
 * cli_json.h - the reader of plan JSON, the output of `arenactl plan
 * --json` (cli_json.c), for cli_graph_load() and for the early refusal
 * of cli_input.c.
 *
 * Private to arenactl. Buffers passed in are borrowed; what is read goes
 * into a caller's cli_graph (cli_graph.h), which then owns it.
 */
#ifndef ARENA_CLI_JSON_H
#define ARENA_CLI_JSON_H

#include <stddef.h>

#include "arena_error.h"
#include "cli_graph.h"

/* Reads plan JSON (the output of `arenactl plan --json`),
 * buf[0 .. len) borrowed, into g (cli_graph_init()ed; kind becomes
 * CLI_GRAPH_PLAN). Prints any error as "arenactl: WHAT: plan JSON, byte
 * N: message" and returns CLI_EX_DATAERR (CLI_EX_OSERR when out of
 * memory), or 0. */
int cli_json_load(const char *what, const char *buf, size_t len,
                  struct cli_graph *g);

/* Whether buf[0 .. len) (borrowed) can begin plan JSON, for
 * reading it in parts (cli_input.c). Returns 0 when the reader takes it
 * whole or runs out of bytes (or memory) before it finds an error, else
 * ARENA_EPARSE with the message cli_json_load() would print for the
 * whole file, whatever follows, in err. */
int cli_json_prefix_check(const char *buf, size_t len,
                          char err[ARENA_ERR_LEN]);

#endif /* ARENA_CLI_JSON_H */

/*
 * cli_daemon.h - what the arenactl subcommands that talk to arenad share
 * (cli_daemon.c; planning through it is cli_plan_daemon.c): the common
 * options (-s/--socket, --timeout-ms, --json), opening a client handle,
 * one request/response round with status checking, the mapping from ARENA_E* codes to exit statuses, and small
 * parsers and printers (hex, input shapes, JSON strings).
 *
 * Private to arenactl; built on the client library's private interface
 * (client_int.h).
 */
#ifndef ARENA_CLI_DAEMON_H
#define ARENA_CLI_DAEMON_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "client_int.h"

/* The options every daemon subcommand accepts. */
struct cli_daemon_args {
  const char *socket;  /* -s/--socket PATH, borrowed; NULL: $ARENAD_SOCKET
                          or the default */
  uint32_t timeout_ms; /* --timeout-ms; 0: the library's default */
  int json;            /* --json: one compact JSON object on stdout */
};

/* Matches argv[*i] against -s/--socket, --timeout-ms and --json. Returns
 * 1 when it was one of them (with *rc = 0, or an exit status after a
 * usage error was printed), 0 when it was not. cmd names the subcommand
 * in messages. */
int cli_daemon_option(const char *cmd, int argc, char **argv, int *i,
                      struct cli_daemon_args *a, int *rc);

/* Opens a handle from a (borrowed) with fallback as given. Returns 0 and
 * sets *c (free with arenad_client_close), or prints an error and returns
 * an exit status. */
int cli_daemon_open(const char *cmd, const struct cli_daemon_args *a,
                    int fallback, arenad_client_t **c);

/* Sends req and checks that the answer has status OK and body `want`.
 * Returns 0 and sets *resp (owned, free with wire_free_response), or
 * prints "arenactl: cmd: <reason>" and returns an exit status (see
 * cli_daemon_exit_status); *resp is NULL then. */
int cli_daemon_call(const char *cmd, arenad_client_t *c,
                    Arenad__V1__Request *req,
                    Arenad__V1__Response__BodyCase want,
                    Arenad__V1__Response **resp);

/* Maps an ARENA_E* code from talking to the daemon to an exit status:
 * EUNAVAIL and ETIMEDOUT 69, EBUSY 75, EVERSION and EPROTO 76, EDENIED
 * 77, invalid input (EINVAL, ETOOBIG and the graph errors) 65, anything
 * else as cli_exit_status() does. 0 gives 0. */
int cli_daemon_exit_status(int code);

/* Prints a usage error "arenactl: cmd: <msg>" plus a hint to run
 * `arenactl cmd --help`; returns CLI_EX_USAGE. */
int cli_daemon_usage_error(const char *cmd, const char *fmt, ...)
    CLI_PRINTF(2, 3);

/* Parses 2..128 hex digits into out (caller-allocated, 64 bytes) and sets
 * *len to the number of bytes. Returns 0 or ARENA_EPARSE. */
CLI_WUR int cli_parse_hex(const char *s, uint8_t out[64], size_t *len);

/* Parses a cache key (the hex `ls` prints: any even number of digits, at
 * most the frame size) into a new buffer: *out owned (free()), *len its
 * bytes. Returns 0, or prints an error naming cmd and opt and returns
 * CLI_EX_USAGE or CLI_EX_OSERR, with *out NULL and *len 0. */
int cli_parse_key(const char *cmd, const char *opt, const char *v,
                  uint8_t **out, size_t *len);

/* Prints a time in ms since the epoch as UTC ISO 8601
 * ("2023-11-14T22:13:20Z"), or "-" when it is 0 or negative. */
void cli_print_utc(int64_t unix_ms);

/* An input shape parsed from "1x224x224x3,1x10": inputs separated by
 * commas, dims by 'x'; "" means no inputs. */
struct cli_shape {
  struct arenad_dims *inputs; /* n_inputs, owned */
  int64_t *dims;              /* all dims, owned; inputs point into it */
  size_t n_inputs;
};

/* Parses s (borrowed) into *sh (free with cli_shape_cleanup). Each dim is
 * 1 to 18 decimal digits. Returns 0, ARENA_EPARSE, ARENA_EOVERFLOW (a dim
 * of more than 18 digits), ARENA_ETOOBIG (over 1024 inputs or rank 32) or
 * ARENA_ENOMEM; *sh is empty on failure. */
CLI_WUR int cli_parse_shape(const char *s, struct cli_shape *sh);
void cli_shape_cleanup(struct cli_shape *sh);

/* Reads the value of a --shape option (text, borrowed) into *sh, the
 * same way for `plan` on any file and for the model commands, so that a
 * shape is refused with the same status whatever it is given for: text
 * that is not a shape at all ("", "4y1", "1,,2") is a usage error; dims
 * that read as numbers but that no input shape can have (a negative
 * one, one of more than 18 digits, over 1024 inputs or rank 32) are bad
 * input. what names the input in the message ("arenactl: WHAT: --shape
 * 'TEXT': ..."). Returns 0 (*sh owned, free with cli_shape_cleanup), or
 * prints and returns CLI_EX_USAGE, CLI_EX_DATAERR or CLI_EX_OSERR, with
 * *sh empty. */
int cli_shape_arg(const char *what, const char *text, struct cli_shape *sh);

/* Prints n bytes as lower-case hex. */
void cli_print_hex(const uint8_t *b, size_t n);

/* Prints the shape of a Dims list as "1x224x224x3,1x10" ("-" when
 * empty). */
void cli_print_shape(Arenad__V1__Dims *const *d, size_t n);

/* ---- plan through the daemon (used by cli_plan.c) ----------------------- */

/* Where a plan came from. */
struct cli_plan_source {
  int cached;                  /* 1: served from the daemon's cache */
  int local;                   /* 1: planned in this process */
  int fallback_reason;         /* when local by fallback: why, else 0 */
  uint8_t graph_digest[32];    /* canonical digest of the graph */
  uint64_t planning_us;        /* as reported, microseconds */
  int state_known;             /* 1: the three below came from the daemon */
  uint64_t generation;         /* of the stored plan (0: not known) */
  uint32_t effort;             /* effort that found it (0: not known) */
  int improving;               /* background work on it goes on */
  int wait_ended;              /* --wait-optimal: 1 the wait saw the work
                                  end, 2 it ran out of time */
  int naive_known;             /* 1: naive_bytes below is set */
  uint64_t naive_bytes;        /* planned here with another algorithm:
                                  planner_naive_arena() of the graph,
                                  taken beside the planning */
};

/* Plans g under o for the model hash (SHA-256 of the input file) and the
 * --shape value (borrowed; NULL means no inputs; otherwise read by
 * cli_shape_arg(), which may refuse it). With local = 1 plans in
 * this process; otherwise asks the daemon, falling back to local planning
 * when fallback = 1. A plan from the daemon is followed by a Lookup for
 * its generation, effort and whether background work on it goes on
 * (src->state_known); with wait_ms > 0, the Lookup is repeated every
 * CLI_WAIT_POLL_MS until that work has ended or wait_ms have passed, and
 * the graph is then planned again (a cache hit), so that *p is the
 * daemon's latest plan. On success fills *p (planner_plan_init()ed; owned,
 * planner_plan_cleanup) and *src and returns 0; otherwise prints an error
 * naming `what` and returns an exit status. */
#define CLI_WAIT_POLL_MS 200

int cli_daemon_plan(const char *what, const struct cli_daemon_args *a,
                    int local, int fallback, uint32_t wait_ms,
                    const uint8_t model_hash[32], const char *shape,
                    const struct planner_graph *g,
                    const struct planner_options *o, struct planner_plan *p,
                    struct cli_plan_source *src);

#endif /* ARENA_CLI_DAEMON_H */

/*
 * cli.h - the pieces of the arenactl command-line tool.
 *
 * arenactl.c holds main() and a table of subcommands; each subcommand
 * lives in client/cli/cli_<name>.c and exposes `int cli_<name>_main(int argc,
 * char **argv)`, where argv[0] is the subcommand's name. A subcommand
 * prints its results on stdout, its errors on stderr as
 * "arenactl: <what>: <message>", and returns one of the CLI_EX_* exit
 * statuses (the BSD sysexits values). cli_util.c has the helpers they
 * share: reading a file, strict number options, error printing.
 */
#ifndef ARENA_CLI_H
#define ARENA_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "arena_error.h"

#define CLI_PROG "arenactl"
#define CLI_VERSION "0.1.0"

/* Largest input file arenactl reads into memory, in bytes. */
#define CLI_MAX_FILE_LEN ((size_t)1 << 30)

/* Exit statuses, as in BSD <sysexits.h>. */
enum cli_exit {
  CLI_EX_OK = 0,        /* success */
  CLI_EX_FAIL = 1,      /* the operation failed, e.g. the plan does not fit */
  CLI_EX_USAGE = 64,    /* bad command line */
  CLI_EX_DATAERR = 65,  /* bad input data: parse or validation error */
  CLI_EX_NOINPUT = 66,  /* input file missing or unreadable */
  CLI_EX_UNAVAILABLE = 69, /* the daemon is unreachable or not answering */
  CLI_EX_SOFTWARE = 70, /* internal error (a plan failed verification) */
  CLI_EX_OSERR = 71,    /* out of memory or another system failure */
  CLI_EX_IOERR = 74,    /* writing the output failed */
  CLI_EX_TEMPFAIL = 75, /* the daemon is busy; try again later */
  CLI_EX_PROTOCOL = 76, /* the daemon speaks another protocol version or
                           sent a malformed reply */
  CLI_EX_NOPERM = 77,   /* the daemon denied this user */
};

/* ---- subcommands (one file each) ---------------------------------------- */

/* arenactl plan: plans a lifetime graph and prints the plan. */
int cli_plan_main(int argc, char **argv);

/* arenactl import / explain / render / diff / embed: TFLite models and
 * plans (cli_model.c, cli_explain.c, cli_render.c, cli_diff.c,
 * cli_embed.c; docs/models.md). */
int cli_import_main(int argc, char **argv);
int cli_embed_main(int argc, char **argv);
int cli_explain_main(int argc, char **argv);
int cli_render_main(int argc, char **argv);
int cli_diff_main(int argc, char **argv);

/* arenactl get / ls / evict / ping / status / stats: talk to arenad
 * (cli_cache.c, cli_status.c; docs/arenactl.md "Daemon commands"). */
int cli_get_main(int argc, char **argv);
int cli_ls_main(int argc, char **argv);
int cli_evict_main(int argc, char **argv);
int cli_ping_main(int argc, char **argv);
int cli_status_main(int argc, char **argv);
int cli_stats_main(int argc, char **argv);

/* arenactl export / preload / bundle-info: plan bundles, files that carry
 * plans with their graphs from one machine's arenad to others'
 * (cli_export.c; docs/bundles.md). */
int cli_export_main(int argc, char **argv);
int cli_preload_main(int argc, char **argv);
int cli_bundle_info_main(int argc, char **argv);

/* Consumes the global options before the subcommand: -s PATH or
 * --socket PATH, which sets $ARENAD_SOCKET for every subcommand
 * (cli_daemon.c). Returns how many argv entries after argv[0] it used, or
 * -1 after printing a usage error. */
int cli_global_options(int argc, char **argv);

/* ---- helpers (cli_util.c) ----------------------------------------------- */

#if defined(__GNUC__) || defined(__clang__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define CLI_WUR __attribute__((warn_unused_result))
#else
#define CLI_PRINTF(f, a)
#define CLI_WUR
#endif

/* "s" after a count other than 1, "" after 1: "%llu byte%s". */
#define CLI_PLURAL(n) ((n) == 1 ? "" : "s")

/* Prints "arenactl: <what>: <message>\n" on stderr. what (borrowed) may be
 * NULL, which leaves that part out. The whole line goes through
 * cli_print_text(), since messages quote what files and the daemon
 * sent. */
void cli_error(const char *what, const char *fmt, ...) CLI_PRINTF(2, 3);

/* ---- strings that came from a file or the daemon ------------------------ */

/* Prints s (borrowed; NULL prints nothing) on f so that a terminal shows
 * it and does nothing else: valid UTF-8 as it is, except control
 * characters (U+0000 to U+001F, U+007F to U+009F), which are printed as
 * \xNN per byte, as is every byte that is not part of valid UTF-8. */
void cli_print_text(FILE *f, const char *s);

/* Prints s (borrowed; NULL as "") on f as a JSON string, quotes
 * included, that is valid whatever s holds: '"', '\\' and control
 * characters escaped (\n, \t, \uXXXX), valid UTF-8 as it is, and
 * every byte that is not part of valid UTF-8 replaced by U+FFFD. */
void cli_print_json(FILE *f, const char *s);

/* Reads the whole file at path (borrowed; "-" means standard input) into
 * a new buffer. On success *buf is owned by the caller (free with free()),
 * NUL-terminated, and *len holds its length without the NUL. Returns 0,
 * ARENA_ENOENT (missing, a directory, or no permission),
 * ARENA_EIO (a read error), ARENA_ETOOBIG (over CLI_MAX_FILE_LEN: a
 * regular file by its size, before any reading; a stream once it passes
 * the limit) or ARENA_ENOMEM, with the reason in err. On failure *buf is
 * NULL and *len 0. */
CLI_WUR int cli_read_file(const char *path, char **buf, size_t *len,
                          char err[ARENA_ERR_LEN]);

/* Asked after each part of a file that cli_read_file_checked() reads:
 * buf[0 .. len) is all read so far (borrowed, not NUL-terminated), ctx
 * the caller's. Returns 0 to read on, or an error code (any but those
 * cli_read_file() returns) with a message in err to stop reading: the
 * file is refused. */
typedef int (*cli_read_check_cb)(void *ctx, const char *buf, size_t len,
                                 char err[ARENA_ERR_LEN]);

/* cli_read_file() that reads in parts of at most 256 KiB and calls check
 * (may be NULL) after each, so that a file whose first bytes are already
 * wrong is refused after those: its memory stays in proportion to what
 * was read. Returns what cli_read_file() returns, or check's code. */
CLI_WUR int cli_read_file_checked(const char *path, cli_read_check_cb check,
                                  void *ctx, char **buf, size_t *len,
                                  char err[ARENA_ERR_LEN]);

/* Asked after check by cli_read_file_parts(): how many bytes from the
 * start of the bytes read so far the caller no longer needs (it has
 * already counted them out of its own state); they leave the buffer,
 * whose next part then begins after them. 0 keeps them all. */
typedef size_t (*cli_read_drop_cb)(void *ctx);

/* cli_read_file_checked() that also asks drop (may be NULL) after each
 * part, so that a caller that parses as it reads holds only the bytes it
 * has not parsed: on success *buf holds what was never dropped (all of
 * the file when nothing was), NUL-terminated. */
CLI_WUR int cli_read_file_parts(const char *path, cli_read_check_cb check,
                                cli_read_drop_cb drop, void *ctx, char **buf,
                                size_t *len, char err[ARENA_ERR_LEN]);

/* Parses a byte count: decimal digits with an optional binary suffix K, M
 * or G (1024, 1024^2, 1024^3). Returns 0 and sets *v, or ARENA_EINVAL for
 * anything else (signs, blanks, hex) and ARENA_EOVERFLOW past 2^64 - 1.
 * *v is 0 on failure. */
CLI_WUR int cli_parse_bytes(const char *s, uint64_t *v);

/* Parses a plain decimal count no larger than max. Same returns as
 * cli_parse_bytes(). */
CLI_WUR int cli_parse_u64(const char *s, uint64_t max, uint64_t *v);

/* Matches argv[*i] against the long option `name` (e.g. "--algo") that
 * takes a value, given either as "--algo X" or "--algo=X". Returns 1 and
 * sets *val (borrowed from argv) when it matches, advancing *i past a
 * separate value; 0 when argv[*i] is another option; -1 when the value is
 * missing, after printing a usage error. */
int cli_opt_value(int argc, char **argv, int *i, const char *name,
                  const char **val);

/* Maps an ARENA_E* code from reading or planning to an exit status:
 * parse and validation errors give CLI_EX_DATAERR, a missing file
 * CLI_EX_NOINPUT, out of memory CLI_EX_OSERR, internal errors
 * CLI_EX_SOFTWARE, anything else CLI_EX_FAIL. 0 gives CLI_EX_OK. */
int cli_exit_status(int code);

/* Flushes stdout. Returns CLI_EX_OK, or CLI_EX_IOERR after printing a
 * message when any earlier write to stdout failed. */
int cli_finish_stdout(void);

#endif /* ARENA_CLI_H */

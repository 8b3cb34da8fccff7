/*
 * cli_write.h - how every arenactl subcommand writes an output file
 * (export, import -o, render -o, embed -o): one helper, so that none of
 * them can overwrite what it was not asked to (cli_write.c).
 *
 * WHAT A PATH MAY NAME
 *  "-"                         standard output.
 *  nothing yet, or a regular   replaced atomically: the bytes go to a new
 *  file (not a symbolic link)  temporary file in the same directory,
 *                              named ".NAME.XXXXXX" with a random suffix
 *                              and created with O_CREAT | O_EXCL |
 *                              O_NOFOLLOW, so that nothing planted there
 *                              beforehand, a symbolic link above all, is
 *                              ever opened; it is synced and renamed over
 *                              PATH, and the directory synced. PATH holds
 *                              its old contents or all the new bytes. A
 *                              new file gets mode 0666 less the umask; a
 *                              replaced one keeps its permission bits
 *                              (0777 of them).
 *  a character device or a     written in place, never replaced, reached
 *  FIFO, named directly or     through the link or not: /dev/stdout,
 *  through symbolic links      /dev/null, a named pipe. Opened without
 *                              O_CREAT or O_TRUNC, and written only when
 *                              the opened file is still one of these.
 *  anything else               refused: a directory, a block device, a
 *                              socket, and a symbolic link to a regular
 *                              file, a directory or nothing.
 * A failure leaves no temporary file behind and PATH as it was (a
 * device or FIFO may have taken part of the bytes).
 */
#ifndef ARENA_CLI_WRITE_H
#define ARENA_CLI_WRITE_H

#include <stddef.h>

#include "cli.h"

/* Writes len bytes of data (borrowed) to path (borrowed; NULL or "-":
 * standard output) as the header above says. Returns 0, or prints
 * "arenactl: PATH: <why>" and returns CLI_EX_IOERR (CLI_EX_OSERR when
 * out of memory). */
CLI_WUR int cli_write_file(const char *path, const void *data, size_t len);

/* Whether writing to path (borrowed; NULL or "-" is standard output)
 * would write to the file standard output is: same device and inode.
 * A subcommand that prints a report on stdout prints it on stderr
 * instead then, so that the report does not end up in the file. */
int cli_write_is_stdout(const char *path);

/* ---- for the tests: the temporary name ------------------------------------ */

/* Length of the random suffix of a temporary name. */
#define CLI_WRITE_SUFFIX_LEN 6

/* Fills suffix with CLI_WRITE_SUFFIX_LEN characters of [A-Za-z0-9] and a
 * NUL, the suffix of the attempt-th try (from 0) to create a temporary
 * file; ctx is the caller's. */
typedef void (*cli_write_suffix_cb)(void *ctx, unsigned attempt,
                                    char suffix[CLI_WRITE_SUFFIX_LEN + 1]);

/* cli_write_file() with the suffixes of the temporary names from suffix
 * (NULL: random ones), so that a test can plant files at the names it
 * will try. A name that exists already, whatever it is, is skipped
 * (EEXIST) for the next; after CLI_WRITE_TRIES names, it gives up. */
#define CLI_WRITE_TRIES 64u
CLI_WUR int cli__write_file(const char *path, const void *data, size_t len,
                            cli_write_suffix_cb suffix, void *ctx);

#endif /* ARENA_CLI_WRITE_H */

/*
 * testutil.h - small helpers shared by the Check suites.
 *
 * Nothing here is part of any product module. Helpers return owned memory
 * that the caller frees with free().
 */
#ifndef ARENA_TESTUTIL_H
#define ARENA_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Reads a whole file. Returns an owned NUL-terminated buffer (free()) and
 * sets *len, or NULL when the file cannot be read. */
char *tu_read_file(const char *path, size_t *len);

/* Makes a fresh temporary directory and returns its owned path (free()).
 * tu_rm_rf() removes it again. */
char *tu_mkdtemp(void);
void tu_rm_rf(const char *path);

/* Deterministic 64-bit PRNG (splitmix64) for property tests. */
uint64_t tu_rand(uint64_t *state);
/* Uniform in [lo, hi], inclusive. */
uint64_t tu_rand_range(uint64_t *state, uint64_t lo, uint64_t hi);

/* Runs argv[0] (NULL-terminated argv) in directory cwd (NULL: the
 * current one) with stdin from in_path (NULL: /dev/null) and stdout and
 * stderr written to out_path and err_path. Returns the exit status,
 * 128 + the signal number when it died of a signal, or 127 when it could
 * not be started. */
int tu_run(const char *const *argv, const char *cwd, const char *in_path,
           const char *out_path, const char *err_path);

/* Directory with the test data, "tests/data" unless ARENA_TEST_DATA is set. */
const char *tu_data_dir(void);

#endif

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

/* The program a test runs, from the environment variable env: ARENAD,
 * ARENACTL, ARENAD_FAULTS, TFLM_INFER, TFLITE_INFER or POISON_DB, which
 * tests/run.sh and the Makefile set from BUILD, so that a sanitized
 * build (BUILD=build-asan) tests its own binaries. Returns the path
 * (borrowed from the environment). When env is unset or empty, or names
 * no executable file, prints why on stderr and aborts: a test never
 * falls back to another build's binary. */
const char *tu_bin(const char *env);

struct planner_csv;
/* Parses the lifetime CSV file at path into c, which it initialises;
 * clean it up with planner_csv_cleanup() in every case. Returns 0, or -1
 * after printing why on stderr. */
int tu_load_csv(const char *path, struct planner_csv *c);

/* A loaded machine, made on purpose: child processes that spin on the CPU. */
#define TU_MAX_HOGS 8
struct tu_hogs {
  int pid[TU_MAX_HOGS]; /* the hogs' process ids */
  int n;                /* how many run */
};

/* Starts n (at most TU_MAX_HOGS) CPU hogs, each of which exits by itself
 * after at most max_s seconds, then lowers the calling process's priority
 * by 10 (nice), so the hogs take most of the CPU from it and from every
 * process it starts afterwards. The priority cannot be raised again: call
 * this only in a test's own forked process. Returns 0 or -1. */
int tu_hogs_start(struct tu_hogs *h, int n, unsigned max_s);
/* Kills and reaps the hogs. */
void tu_hogs_stop(struct tu_hogs *h);

/* A process stopped with SIGSTOP on purpose (a daemon that does not
 * answer), under a guard: a child process that resumes it with SIGCONT
 * and kills it with SIGKILL should the calling process end, fail or be
 * killed before tu_stop_end(), or after max_s seconds at most. So a
 * failed or timed-out test never leaves a stopped process behind. */
struct tu_stop {
  int target; /* the stopped process, or 0 */
  int guard;  /* the guard's process id, or 0 */
  int fd;     /* write end of the pipe the guard waits on, or -1 */
};

/* Starts the guard, then stops pid and waits (up to 5 s) until it is
 * stopped. Returns 0, or -1 (nothing stopped, no guard left). */
int tu_stop_start(struct tu_stop *s, int pid, unsigned max_s);
/* Resumes the process (SIGCONT) and ends the guard without it killing
 * anything. Accepts a struct that tu_stop_start() failed on. */
void tu_stop_end(struct tu_stop *s);

/* CPU time (user and system) process pid has used, from /proc, in
 * microseconds; 0 when unknown. */
double tu_proc_cpu_us(int pid);

#endif

/*
 * bench_cli.c - what a user times: `arenactl plan --local --json` end to
 * end (reading the CSV, validating, planning, verifying, writing the
 * JSON) on a large random graph, per algorithm.
 *
 * The graph: BENCH_CLI_TENSORS tensors (default 10^6) over n/4
 * operators, each first operator uniform in [0, n/4), the last 0 to 8
 * operators later (capped at the last operator), the size uniform in
 * 64 .. 2^20 bytes, from a fixed seed (tracegen_rand, the same file on
 * every machine): about 27 MB of CSV with the reference header
 * tensor_index,size_bytes,first_op,last_op. It is written to a fresh
 * directory under $TMPDIR (default /tmp), removed at the end.
 *
 * For each of naive, greedy-size and best the command runs BENCH_REPS
 * times (default 3), its output to a file, and the table gives the
 * median wall time, the median CPU time of the child (user + system,
 * getrusage), and what the output's own timing fields say in the run of
 * the median wall time: read_us (reading and parsing the CSV), plan_us
 * (all of planner_run()) and its phases validate_us, index_us,
 * heuristics_us, search_us and verify_us, and "rest", the wall time
 * neither covers (starting the process, the graph digest when it is not
 * taken while planning, writing the JSON). With
 * BENCH_CLI_BASE naming another arenactl binary (an older build, say),
 * the two take turns in every round and both get a row, so that a
 * before/after comparison is measured in one run, under the same load.
 *
 * Usage: bench_cli [DATA_DIR]  (DATA_DIR is not used: `make bench` passes
 * it to every benchmark). The binary is $ARENACTL, else build/arenactl.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tracegen.h"

#define MAX_REPS 15

static const char *const algos[] = {"naive", "greedy-size", "best"};
#define N_ALGOS (sizeof algos / sizeof algos[0])

/* The output's timing fields, in the order of the table. */
static const char *const fields[] = {"read_us",       "plan_us",
                                     "validate_us",   "index_us",
                                     "heuristics_us", "search_us",
                                     "verify_us"};
#define N_FIELDS (sizeof fields / sizeof fields[0])

/* One timed run. */
struct sample {
  double wall_s;          /* exec to exit */
  double cpu_s;           /* the child's user + system time */
  uint64_t us[N_FIELDS];  /* the output's fields, 0 when absent */
};

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static size_t env_size(const char *name, size_t def, size_t lo, size_t hi)
{
  const char *v = getenv(name);
  if (!v || !*v)
    return def;
  char *end;
  unsigned long long x = strtoull(v, &end, 10);
  if (*end || x < lo || x > hi) {
    fprintf(stderr, "bench_cli: %s: expected %zu .. %zu\n", name, lo, hi);
    exit(2);
  }
  return (size_t)x;
}

/* Writes the random graph of n tensors as CSV to path. */
static int write_graph(const char *path, size_t n)
{
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  uint64_t s = 1, ops = n / 4 ? n / 4 : 1;
  fprintf(f, "tensor_index,size_bytes,first_op,last_op\n");
  for (size_t i = 0; i < n; i++) {
    uint64_t first = tracegen_rand_in(&s, 0, ops - 1);
    uint64_t last = first + tracegen_rand_in(&s, 0, 8);
    uint64_t size = tracegen_rand_in(&s, 64, (uint64_t)1 << 20);
    if (last > ops - 1)
      last = ops - 1;
    fprintf(f, "%zu,%llu,%llu,%llu\n", i, (unsigned long long)size,
            (unsigned long long)first, (unsigned long long)last);
  }
  return fclose(f) == 0 ? 0 : -1;
}

/* The timing fields of the JSON at path, from its first bytes. */
static void json_fields(const char *path, uint64_t us[N_FIELDS])
{
  char buf[2048], pat[64];
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f)
    fclose(f);
  buf[n] = '\0';
  for (size_t k = 0; k < N_FIELDS; k++) {
    snprintf(pat, sizeof pat, "\"%s\":", fields[k]);
    const char *p = strstr(buf, pat);
    us[k] = p ? strtoull(p + strlen(pat), NULL, 10) : 0;
  }
}

/* Runs `bin plan --local --json --algo algo csv > out`. */
static int run_once(const char *bin, const char *algo, const char *csv,
                    const char *out, struct sample *s)
{
  double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
      _exit(127);
    close(fd);
    execl(bin, bin, "plan", "--local", "--json", "--algo", algo, csv,
          (char *)NULL);
    _exit(127);
  }
  int st;
  struct rusage ru;
  while (wait4(pid, &st, 0, &ru) < 0)
    if (errno != EINTR)
      return -1;
  s->wall_s = now_s() - t0;
  s->cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
             (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "bench_cli: %s --algo %s failed (status %d)\n", bin,
            algo, st);
    return -1;
  }
  json_fields(out, s->us);
  return 0;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(const struct sample *s, size_t n, int cpu)
{
  double v[MAX_REPS];
  for (size_t i = 0; i < n; i++)
    v[i] = cpu ? s[i].cpu_s : s[i].wall_s;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The run whose wall time is the median (the lower one of an even
 * count). */
static const struct sample *median_run(const struct sample *s, size_t n)
{
  size_t below[MAX_REPS] = {0};
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++)
      below[i] += s[j].wall_s < s[i].wall_s ||
                  (s[j].wall_s == s[i].wall_s && j < i);
  for (size_t i = 0; i < n; i++)
    if (below[i] == (n - 1) / 2)
      return &s[i];
  return &s[0];
}

static void print_head(void)
{
  printf("%-6s %-12s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s\n", "binary",
         "algorithm", "wall s", "cpu s", "read", "plan", "valid",
         "index", "heur", "search", "verify", "rest");
}

static void print_row(const char *which, const char *algo,
                      const struct sample *s, size_t reps)
{
  const struct sample *m = median_run(s, reps);
  printf("%-6s %-12s %7.3f %7.3f", which, algo, median(s, reps, 0),
         median(s, reps, 1));
  if (!m->us[1]) { /* a build that says nothing of its time */
    printf("\n");
    return;
  }
  for (size_t k = 0; k < N_FIELDS; k++)
    if (m->us[k] || k != 0)
      printf(" %7.3f", m->us[k] / 1e6);
    else
      printf(" %7s", "-");
  printf(" %7.3f\n", m->wall_s - (m->us[0] + m->us[1]) / 1e6);
}

int main(void)
{
  size_t n = env_size("BENCH_CLI_TENSORS", 1000000, 1000, 10000000);
  size_t reps = env_size("BENCH_REPS", 3, 1, MAX_REPS);
  const char *bin = getenv("ARENACTL");
  const char *base = getenv("BENCH_CLI_BASE");
  const char *tmp = getenv("TMPDIR");
  char dir[512], csv[600], out[600];
  if (!bin || !*bin)
    bin = "build/arenactl";
  if (base && !*base)
    base = NULL;
  snprintf(dir, sizeof dir, "%s/bench_cli.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    perror("bench_cli: mkdtemp");
    return 1;
  }
  snprintf(csv, sizeof csv, "%s/random.csv", dir);
  snprintf(out, sizeof out, "%s/plan.json", dir);
  int rc = write_graph(csv, n);
  struct stat st;
  if (rc || stat(csv, &st) != 0) {
    fprintf(stderr, "bench_cli: cannot write %s\n", csv);
    rmdir(dir);
    return 1;
  }
  printf("== arenactl plan --local --json, end to end: %zu random tensors "
         "(%.1f MB of CSV), median of %zu runs\n",
         n, (double)st.st_size / 1e6, reps);
  printf("   new: %s%s%s\n", bin, base ? "; base: " : "", base ? base : "");
  printf("   seconds; read to verify from the JSON of the median run, "
         "rest = wall - read - plan\n");
  print_head();
  for (size_t a = 0; a < N_ALGOS && !rc; a++) {
    struct sample sn[MAX_REPS], sb[MAX_REPS];
    for (size_t r = 0; r < reps && !rc; r++) {
      if (base)
        rc = run_once(base, algos[a], csv, out, &sb[r]);
      if (!rc)
        rc = run_once(bin, algos[a], csv, out, &sn[r]);
    }
    if (rc)
      break;
    if (base)
      print_row("base", algos[a], sb, reps);
    print_row("new", algos[a], sn, reps);
  }
  unlink(csv);
  unlink(out);
  rmdir(dir);
  return rc ? 1 : 0;
}

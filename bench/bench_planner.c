/*
 * bench_planner.c - arena size and speed of every planning algorithm.
 *
 * Usage: bench_planner DATADIR   (run from the repository root)
 *
 * Prints two plain-text tables:
 *  (a) the reference model graphs (tests/data/models), the MiniMalloc
 *      challenging suite (DATADIR/minimalloc) and large real traces
 *      (DATADIR/traces), all at alignment 1: for each instance and
 *      algorithm the arena, its ratio to the lower bound, and the time per
 *      plan; then the geometric mean ratio per group.
 *  (b) random graphs of 10^3 .. 10^6 tensors shaped like inference graphs
 *      (a chain of operators whose outputs are mostly consumed by the next
 *      few, some skip connections, a few tensors that live long), at the
 *      default alignment of 64 bytes, from a fixed seed.
 *  (c) the generated traces of bench/tracegen.h (both shapes, seed 1, at
 *      the sizes of BENCH_SIZES, default 20000,40000,60000), alignment 1.
 *
 * BENCH_SECTIONS (letters, default "abc") picks the tables to print, and
 * BENCH_RANDOM (comma separated sizes, default 1000,10000,100000,1000000)
 * the sizes of table (b).
 *
 * Times are wall-clock (CLOCK_MONOTONIC) medians over repeated runs of
 * planner_run(), which includes validation and verification of the plan.
 * Each measurement repeats a plan until 50 ms have passed and at least
 * MIN_REPS times (at most MAX_REPS runs). `best` includes the exact search
 * with its default effort when the heuristics stay above the lower bound;
 * it is timed on one thread ("best") and on one thread per online CPU
 * ("best/Nt", options.threads = N), which must give the same arena.
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "graph_csv.h"
#include "planner.h"
#include "tracegen.h"

#define TARGET_S 0.050 /* wall time one measurement aims for */
#define MIN_REPS 3     /* runs per measurement at least */
#define MAX_REPS 300   /* runs per measurement at most */
#define SLOW_S 30.0    /* skip a size predicted to take longer per plan */

/* What is timed: an algorithm, on `threads` threads (0: the calling
 * one; BENCH_CPUS: one per online CPU). */
#define BENCH_CPUS UINT32_MAX
static const struct {
  enum planner_algo algo;
  uint32_t threads;
} algos[] = {
    {PLANNER_ALGO_NAIVE, 0},          {PLANNER_ALGO_TFLM_GREEDY, 0},
    {PLANNER_ALGO_TFLITE_BESTFIT, 0}, {PLANNER_ALGO_GREEDY_SIZE, 0},
    {PLANNER_ALGO_GREEDY_BREADTH, 0}, {PLANNER_ALGO_BEST, 0},
    {PLANNER_ALGO_BEST, BENCH_CPUS},
};
#define N_ALGOS (sizeof algos / sizeof algos[0])

static uint32_t cpus(void)
{
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (uint32_t)n : 1;
}

/* The row name of algos[k]: the algorithm's, "/Nt" added for threads. */
static const char *row_name(size_t k)
{
  static char buf[N_ALGOS][32];
  if (algos[k].threads != BENCH_CPUS)
    return planner_algo_name(algos[k].algo);
  snprintf(buf[k], sizeof buf[k], "%s/%ut", planner_algo_name(algos[k].algo),
           cpus());
  return buf[k];
}

/* One timed algorithm on one graph. */
struct result {
  int ok;           /* 1 when planning succeeded */
  uint64_t arena;   /* bytes */
  uint64_t lb;      /* lower bound, bytes */
  double median_s;  /* wall time per plan */
  int reps;         /* runs the median is over */
};

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Runs one plan; returns its wall time, or a negative value on error. */
static double plan_once(const struct planner_graph *g,
                        const struct planner_options *o, struct result *r)
{
  struct planner_plan p;
  char err[ARENA_ERR_LEN] = "";
  planner_plan_init(&p);
  double t0 = now_s();
  int rc = planner_run(g, o, &p, err);
  double t = now_s() - t0;
  if (rc) {
    fprintf(stderr, "bench_planner: %s: %s\n", planner_algo_name(o->algo),
            err[0] ? err : arena_strerror(rc));
    return -1.0;
  }
  r->ok = 1;
  r->arena = p.arena_bytes;
  r->lb = p.lower_bound_bytes;
  planner_plan_cleanup(&p);
  return t;
}

/* Measures algos[k] on g: repeats the plan until TARGET_S have passed
 * and MIN_REPS runs are done, or MAX_REPS runs are, and takes the
 * median. */
static struct result measure(const struct planner_graph *g, uint64_t align,
                             size_t k)
{
  struct planner_options o;
  struct result r = {0, 0, 0, 0.0, 0};
  double times[MAX_REPS], total = 0.0;
  int reps = 0;
  planner_options_init(&o);
  o.algo = algos[k].algo;
  o.alignment = align;
  o.threads = algos[k].threads == BENCH_CPUS ? cpus() : algos[k].threads;
  while (reps < MAX_REPS && (total < TARGET_S || reps < MIN_REPS)) {
    double t = plan_once(g, &o, &r);
    if (t < 0) {
      r.ok = 0;
      return r;
    }
    times[reps++] = t;
    total += t;
  }
  qsort(times, (size_t)reps, sizeof times[0], cmp_double);
  r.median_s = times[reps / 2];
  r.reps = reps;
  return r;
}

static const char *fmt_time(double s, char buf[32])
{
  if (s < 1e-3)
    snprintf(buf, 32, "%.1f us", s * 1e6);
  else if (s < 1.0)
    snprintf(buf, 32, "%.2f ms", s * 1e3);
  else
    snprintf(buf, 32, "%.2f s", s);
  return buf;
}

static double ratio(uint64_t arena, uint64_t lb)
{
  return lb ? (double)arena / (double)lb : 1.0;
}

static void print_result(const char *inst, size_t n, size_t k,
                         const struct result *r)
{
  char t[32];
  if (inst)
    printf("%-40s %9zu %12llu  ", inst, n, (unsigned long long)r->lb);
  else
    printf("%-40s %9s %12s  ", "", "", "");
  if (!r->ok) {
    printf("%-15s %s\n", row_name(k), "failed");
    return;
  }
  printf("%-15s %14llu %10.4f %11s %5d\n", row_name(k),
         (unsigned long long)r->arena, ratio(r->arena, r->lb),
         fmt_time(r->median_s, t), r->reps);
}

static void print_head(void)
{
  printf("%-40s %9s %12s  %-15s %14s %10s %11s %5s\n", "instance", "tensors",
         "lower bound", "algorithm", "arena", "/LB", "median", "reps");
}

/* ---- table (a): files ----------------------------------------------------- */

/* Per-group sums of log(ratio) for the geometric means. */
struct group {
  const char *name;       /* shown in the summary */
  double log_sum[N_ALGOS]; /* sum of log(arena / LB) */
  int n[N_ALGOS];         /* instances counted */
};

static char *read_file(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = NULL;
  long size = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 &&
      fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size + 1)) != NULL &&
      fread(buf, 1, (size_t)size, f) != (size_t)size) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf)
    *len = (size_t)size;
  return buf;
}

static void bench_file(const char *dir, const char *file, struct group *gr)
{
  char path[1024], name[64];
  size_t len = 0;
  struct planner_csv c;
  char err[ARENA_ERR_LEN];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  snprintf(name, sizeof name, "%.*s", (int)(strlen(file) - 4), file);
  char *text = read_file(path, &len);
  planner_csv_init(&c);
  if (!text || planner_csv_parse(text, len, &c, err) != 0) {
    fprintf(stderr, "bench_planner: %s: %s\n", path,
            text ? err : "cannot read");
    free(text);
    return;
  }
  free(text);
  struct planner_graph g = planner_csv_graph(&c);
  for (size_t k = 0; k < N_ALGOS; k++) {
    struct result r = measure(&g, 1, k);
    print_result(k ? NULL : name, c.n_tensors, k, &r);
    if (r.ok && r.lb) {
      gr->log_sum[k] += log(ratio(r.arena, r.lb));
      gr->n[k]++;
    }
  }
  planner_csv_cleanup(&c);
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Benchmarks every *.csv in dir, in name order. */
static void bench_dir(const char *dir, struct group *gr)
{
  char *names[256];
  size_t n = 0;
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "bench_planner: cannot open %s\n", dir);
    return;
  }
  for (struct dirent *e; (e = readdir(d)) != NULL && n < 256;) {
    size_t l = strlen(e->d_name);
    if (l > 4 && strcmp(e->d_name + l - 4, ".csv") == 0)
      names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof names[0], cmp_str);
  for (size_t i = 0; i < n; i++) {
    if (names[i])
      bench_file(dir, names[i], gr);
    free(names[i]);
  }
}

static void print_groups(const struct group *gr, size_t n_groups)
{
  printf("\ngeometric mean of arena / lower bound\n%-15s", "algorithm");
  for (size_t g = 0; g < n_groups; g++)
    printf(" %12s", gr[g].name);
  printf("\n");
  for (size_t k = 0; k < N_ALGOS; k++) {
    printf("%-15s", row_name(k));
    for (size_t g = 0; g < n_groups; g++)
      printf(" %12.4f", gr[g].n[k] ? exp(gr[g].log_sum[k] / gr[g].n[k]) : 0.0);
    printf("\n");
  }
}

/* ---- table (b): random graphs --------------------------------------------- */

/* How long a tensor produced at some operator stays live, in operators:
 * mostly until the next one or two, sometimes a skip connection. */
static int64_t span_of(uint64_t *s)
{
  uint64_t u = tracegen_rand(s) % 1000;
  if (u < 700)
    return 1;
  if (u < 900)
    return (int64_t)tracegen_rand_in(s, 2, 4);
  if (u < 990)
    return (int64_t)tracegen_rand_in(s, 5, 16);
  return (int64_t)tracegen_rand_in(s, 17, 200);
}

/* Fills t with n tensors over about n/2 operators. Sizes are log-uniform
 * from 64 B to 1 MiB; 16 tensors live across most of the graph (inputs,
 * state, outputs). */
static void random_graph(struct planner_tensor *t, size_t n, uint64_t seed)
{
  int64_t ops = (int64_t)(n / 2 > 1 ? n / 2 : 1);
  for (size_t i = 0; i < n; i++) {
    int64_t op = (int64_t)((double)i * (double)ops / (double)n);
    int64_t last = op + span_of(&seed);
    unsigned e = (unsigned)tracegen_rand_in(&seed, 6, 19);
    t[i].id = (uint32_t)i;
    t[i].size = (1ull << e) + tracegen_rand_in(&seed, 0, (1ull << e) - 1);
    t[i].first = op;
    if (last > ops - 1)
      last = ops - 1;
    t[i].last = last < op ? op : last;
    t[i].align = 0;
    t[i].pinned = PLANNER_NOT_PINNED;
    t[i].alias = 0;
    t[i].has_alias = 0;
  }
  for (size_t k = 0; k < 16 && k < n; k++) {
    size_t i = (size_t)tracegen_rand_in(&seed, 0, n - 1);
    t[i].first = (int64_t)tracegen_rand_in(&seed, 0, (uint64_t)ops / 8);
    t[i].last =
        ops - 1 - (int64_t)tracegen_rand_in(&seed, 0, (uint64_t)ops / 8);
    if (t[i].last < t[i].first)
      t[i].last = t[i].first;
  }
}

/* Predicts the time at ten times the size from the last two sizes: the
 * growth seen so far, at least linear and at most quadratic (assumed when
 * only one size is known). */
static double predict(double t, double t_before)
{
  double e = 2.0;
  if (t > 0 && t_before > 0)
    e = log10(t / t_before);
  e = e < 1.0 ? 1.0 : e > 2.0 ? 2.0 : e;
  return t * pow(10.0, e);
}

/* The next size of a comma separated list (sizes of at least min) after
 * *v; 0 at its end. */
static size_t next_size(const char **v, size_t min)
{
  while (**v) {
    char *end;
    unsigned long x = strtoul(*v, &end, 10);
    if (end == *v)
      return 0;
    *v = *end == ',' ? end + 1 : end;
    if (x >= min)
      return (size_t)x;
  }
  return 0;
}

/* The random graphs at each size of BENCH_RANDOM (default 10^3 .. 10^6). */
static void bench_random(void)
{
  const char *env = getenv("BENCH_RANDOM");
  const char *v = env && *env ? env : "1000,10000,100000,1000000";
  double prev[N_ALGOS] = {0};  /* time at the previous size */
  double prev2[N_ALGOS] = {0}; /* and at the one before */
  printf("\n(b) random inference-like graphs, alignment 64, seed 1\n");
  print_head();
  for (size_t n; (n = next_size(&v, 1)) != 0;) {
    char name[32];
    struct planner_tensor *t = malloc(n * sizeof *t);
    if (!t) {
      fprintf(stderr, "bench_planner: out of memory\n");
      return;
    }
    snprintf(name, sizeof name, "random-%zu", n);
    random_graph(t, n, 1);
    struct planner_graph g = {t, n};
    for (size_t k = 0; k < N_ALGOS; k++) {
      if (predict(prev[k], prev2[k]) > SLOW_S) {
        printf("%-40s %9zu %12s  %-15s skipped: predicted over %.0f s\n",
               k ? "" : name, n, "", row_name(k), SLOW_S);
        continue;
      }
      struct result r = measure(&g, PLANNER_DEFAULT_ALIGNMENT, k);
      print_result(k ? NULL : name, n, k, &r);
      prev2[k] = prev[k];
      prev[k] = r.ok ? r.median_s : 1e9;
    }
    free(t);
    fflush(stdout);
  }
}

/* ---- table (c): generated traces ----------------------------------------*/

/* Both shapes of bench/tracegen.h at each size (BENCH_SIZES, default
 * 20000,40000,60000), seed 1: the traces of the exact benchmark. */
static void bench_traces(void)
{
  const char *env = getenv("BENCH_SIZES");
  const char *v = env && *env ? env : "20000,40000,60000";
  printf("\n(c) generated traces (bench/tracegen.h), alignment 1, seed 1\n");
  print_head();
  for (size_t n; (n = next_size(&v, 100)) != 0;) {
    for (int i = TRACEGEN_SOMAS; i <= TRACEGEN_IOPDDL; i++) {
      enum tracegen_shape sh = (enum tracegen_shape)i;
      size_t m = 0;
      struct planner_tensor *t = tracegen_make(sh, n, 1, &m);
      if (!t) {
        fprintf(stderr, "bench_planner: out of memory\n");
        return;
      }
      char name[48];
      snprintf(name, sizeof name, "%s-%zu", tracegen_shape_name(sh), n);
      struct planner_graph g = {t, m};
      for (size_t k = 0; k < N_ALGOS; k++) {
        struct result r = measure(&g, 1, k);
        print_result(k ? NULL : name, m, k, &r);
      }
      free(t);
      fflush(stdout);
    }
  }
}

int main(int argc, char **argv)
{
  int help = argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
  if (argc != 2 || help) {
    fprintf(help ? stdout : stderr,
            "usage: bench_planner DATADIR (from the repository "
            "root; models come from tests/data/models)\n"
            "  Environment: BENCH_SECTIONS, BENCH_RANDOM, BENCH_SIZES "
            "(docs/planner.md)\n");
    return help ? 0 : 64;
  }
  char dir[1024];
  struct group gr[3] = {{"models", {0}, {0}},
                        {"minimalloc", {0}, {0}},
                        {"traces", {0}, {0}}};
  const char *sections = getenv("BENCH_SECTIONS");
  if (!sections || !*sections)
    sections = "abc";
  double t0 = now_s();
  printf("bench_planner: arena and wall-clock median time per plan\n");
  if (strchr(sections, 'a')) {
    printf("\n(a) reference models, MiniMalloc suite and traces, "
           "alignment 1\n");
    print_head();
    bench_dir("tests/data/models", &gr[0]);
    fflush(stdout);
    snprintf(dir, sizeof dir, "%s/minimalloc", argv[1]);
    bench_dir(dir, &gr[1]);
    fflush(stdout);
    snprintf(dir, sizeof dir, "%s/traces", argv[1]);
    bench_dir(dir, &gr[2]);
    print_groups(gr, 3);
    fflush(stdout);
  }
  if (strchr(sections, 'b'))
    bench_random();
  if (strchr(sections, 'c'))
    bench_traces();
  printf("\nbench_planner: done in %.1f s\n", now_s() - t0);
  return 0;
}

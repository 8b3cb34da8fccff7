/*
 * bench_exact.c - benchmarks of the exact planner.
 *
 * Usage: bench_exact DATA_DIR [section...]
 * DATA_DIR holds minimalloc/ and traces/ (bench/data in the repo); the
 * model CSVs are read from tests/data/models. Sections (all by default):
 *   feas     MiniMalloc's challenging suite at capacity 1048576, with the
 *            reference solver's times from its README side by side;
 *   min      minimisation on the same suite (BENCH_LONG=1 gives D and J
 *            an effort of 60000 each instead of 5000);
 *   real     `best` with its default effort on real traces and models;
 *   traces   `best` at the default effort and at BENCH_EFFORT (default
 *            1000; 0 leaves that run out) on the bundled traces and on
 *            generated SOMAS- and IOPDDL-like traces of 20k, 40k and 60k
 *            tensors (tracegen.h, seed 1; BENCH_SIZES=20000,60000 picks
 *            sizes, BENCH_SEEDS=1,2,3 seeds, BENCH_SHAPES=iopddl shapes);
 *   effort   `best` at the default effort on the bundled traces and on
 *            generated ones of 10^4, 3 x 10^4 and 10^5 tensors, seeds 1
 *            to 10 (BENCH_SIZES, BENCH_SEEDS, BENCH_SHAPES as above):
 *            its ratio to the bound and time, and the lowest effort of
 *            a ladder (BENCH_LADDER, default 40,100,200,400,1000) that
 *            brings it within 1.001 of the bound or proves it optimal;
 *   random   `best` on random graphs of 10^3 .. 10^5 tensors.
 * BENCH_ONLY=ADJ limits the suite sections to the instances named.
 * Every plan is checked with planner_verify(); the exit status is 1 only
 * for errors or plans that fail verification.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph_csv.h"
#include "planner.h"
#include "tracegen.h"

static double now_s(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static char *read_all(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap)
      break;
    char *nb = realloc(buf, cap * 2);
    if (!nb) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = nb;
    cap *= 2;
  }
  fclose(f);
  *len = n;
  return buf;
}

/* Loads a CSV into c; returns 0 or -1 after printing why. */
static int load(const char *path, struct planner_csv *c)
{
  size_t len;
  char err[ARENA_ERR_LEN];
  char *buf = read_all(path, &len);
  if (!buf) {
    printf("  %s: cannot read\n", path);
    return -1;
  }
  int rc = planner_csv_parse(buf, len, c, err);
  free(buf);
  if (rc) {
    printf("  %s: %s\n", path, err);
    return -1;
  }
  return 0;
}

/* The bundled traces, DIR/traces/NAME.csv. */
static const char *const bundled[] = {"resnet50", "iopddl_G_1"};
#define N_BUNDLED (sizeof bundled / sizeof *bundled)

/* Initialises c and loads bundled trace i of dir into it; returns 0 or
 * -1 after printing why. */
static int load_bundled(const char *dir, size_t i, struct planner_csv *c)
{
  char path[512];
  snprintf(path, sizeof path, "%s/traces/%s.csv", dir, bundled[i]);
  planner_csv_init(c);
  return load(path, c);
}

/* Plans and verifies. Returns 0 or -1 after printing the error. */
static int plan(const struct planner_graph *g, const struct planner_options *o,
                struct planner_plan *p, double *secs)
{
  char err[ARENA_ERR_LEN];
  double t = now_s();
  int rc = planner_run(g, o, p, err);
  *secs = now_s() - t;
  if (rc) {
    printf("  planner_run: %s\n", err);
    return -1;
  }
  if (planner_verify(g, o, p, err)) {
    printf("  VERIFY FAILED: %s\n", err);
    return -1;
  }
  return 0;
}

static int long_run(void)
{
  const char *v = getenv("BENCH_LONG");
  return v && *v && strcmp(v, "0") != 0;
}

/* Effort of one feasibility run: 20000, or 300000 with BENCH_LONG=1. */
static uint32_t feas_effort(void)
{
  return long_run() ? 300000 : 20000;
}

/* BENCH_ONLY=letters restricts the suite sections to those instances. */
static int wanted(char name)
{
  const char *only = getenv("BENCH_ONLY");
  return !only || !*only || strchr(only, name) != NULL;
}

static const char *bound_name(enum planner_bound b)
{
  return b == PLANNER_BOUND_SEARCH ? "search" : "load";
}

static const char *const NAMES = "ABCDEFGHIJK";
static const double REF_S[] = {4.49, 3.35, 0.58, 2.32, 3.21, 4.56,
                               0.98, 1.53, 3.44, 0.77, 0.56};

/* Loads instance `name` of the suite into c (init'ed here; the caller
 * cleans it up, also on failure) and sets o to `exact` at alignment 1.
 * Returns 0 or -1 after printing why. */
static int load_instance(const char *dir, char name, struct planner_csv *c,
                         struct planner_options *o)
{
  char path[512];
  snprintf(path, sizeof path, "%s/minimalloc/%c.1048576.csv", dir, name);
  planner_csv_init(c);
  planner_options_init(o);
  o->algo = PLANNER_ALGO_EXACT;
  o->alignment = 1;
  return load(path, c);
}

static int bench_feas(const char *dir)
{
  int bad = 0, unsolved = 0;
  double tot = 0, ref = 0, tot_ok = 0, ref_ok = 0;
  printf("== MiniMalloc challenging suite, capacity 1048576 (exact, "
         "alignment 1, effort %u each)\n", feas_effort());
  printf("  %-4s %7s %10s %10s %8s %12s %s\n", "inst", "buffers",
         "time_s", "ref_s", "ratio", "nodes", "answer");
  for (int i = 0; NAMES[i]; i++) {
    if (!wanted(NAMES[i]))
      continue;
    struct planner_csv c;
    struct planner_options o;
    if (load_instance(dir, NAMES[i], &c, &o)) {
      bad++;
      continue;
    }
    struct planner_graph g = planner_csv_graph(&c);
    o.capacity = 1048576;
    o.effort = feas_effort();
    struct planner_plan p;
    planner_plan_init(&p);
    double s;
    if (plan(&g, &o, &p, &s) == 0) {
      printf("  %-4c %7zu %10.3f %10.2f %8.3f %12" PRIu64 " %s (arena %"
             PRIu64 ")\n", NAMES[i], c.n_tensors, s, REF_S[i], s / REF_S[i],
             p.nodes_explored, planner_fit_name(p.fit), p.arena_bytes);
      tot += s;
      ref += REF_S[i];
      if (p.fit != PLANNER_FIT_YES) {
        unsolved++;
      } else {
        tot_ok += s;
        ref_ok += REF_S[i];
      }
    } else {
      bad++;
    }
    fflush(stdout);
    planner_plan_cleanup(&p);
    planner_csv_cleanup(&c);
  }
  printf("  total %.3f s vs reference %.2f s: ratio %.3f; unsolved %d\n",
         tot, ref, tot / ref, unsolved);
  printf("  solved ones: %.3f s vs reference %.2f s for the same: ratio "
         "%.3f\n", tot_ok, ref_ok, ref_ok > 0 ? tot_ok / ref_ok : 0.0);
  return bad; /* errors only: an unsolved instance is a figure */
}

/* Best arena known for each instance, from the suite's README. */
static const uint64_t BEST_KNOWN[] = {1048576, 1048576, 1039360, 1025024,
                                      1048576, 1048576, 1048576, 1048576,
                                      1048576, 1041408, 1048576};

static int bench_min(const char *dir)
{
  int bad = 0;
  uint32_t open = long_run() ? 60000 : 5000;
  printf("== Minimisation on the same suite (exact, alignment 1; D and J "
         "get an effort of %u, the others 30000; BENCH_LONG=1 for 60000)\n",
         open);
  printf("  %-4s %10s %10s %10s %7s %7s %9s %12s\n", "inst", "arena",
         "bound", "best_known", "proven", "by", "time_s", "nodes");
  for (int i = 0; NAMES[i]; i++) {
    if (!wanted(NAMES[i]))
      continue;
    struct planner_csv c;
    struct planner_options o;
    if (load_instance(dir, NAMES[i], &c, &o)) {
      bad++;
      continue;
    }
    struct planner_graph g = planner_csv_graph(&c);
    o.effort = (NAMES[i] == 'D' || NAMES[i] == 'J') ? open : 30000;
    struct planner_plan p;
    planner_plan_init(&p);
    double s;
    if (plan(&g, &o, &p, &s) == 0) {
      printf("  %-4c %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %7s %7s "
             "%9.3f %12" PRIu64 "\n", NAMES[i], p.arena_bytes,
             p.lower_bound_bytes, BEST_KNOWN[i],
             p.proven_optimal ? "yes" : "no", bound_name(p.bound), s,
             p.nodes_explored);
    } else {
      bad++;
    }
    fflush(stdout);
    planner_plan_cleanup(&p);
    planner_csv_cleanup(&c);
  }
  return bad;
}

/* `best` with defaults (alignment as given) on one CSV file. */
static int bench_file(const char *path, const char *label, uint64_t align)
{
  struct planner_csv c;
  planner_csv_init(&c);
  if (load(path, &c))
    return 1;
  struct planner_graph g = planner_csv_graph(&c);
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = align;
  struct planner_plan p, h;
  planner_plan_init(&p);
  planner_plan_init(&h);
  double s, sh;
  int bad = plan(&g, &o, &p, &s) != 0;
  o.algo = PLANNER_ALGO_GREEDY_SIZE;
  bad |= plan(&g, &o, &h, &sh) != 0;
  if (!bad)
    printf("  %-38s %7zu %12" PRIu64 " %8.5f %8.5f %7s %7s %9.3f %9" PRIu64
           "\n", label, c.n_tensors, p.lower_bound_bytes,
           (double)h.arena_bytes / (double)p.lower_bound_bytes,
           (double)p.arena_bytes / (double)p.lower_bound_bytes,
           p.proven_optimal ? "yes" : "no", bound_name(p.bound), s * 1e3,
           p.nodes_explored);
  fflush(stdout);
  planner_plan_cleanup(&p);
  planner_plan_cleanup(&h);
  planner_csv_cleanup(&c);
  return bad;
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int bench_real(const char *dir)
{
  int bad = 0;
  printf("== Real graphs: `best` with its default effort %u "
         "(greedy = greedy-size arena / LB)\n", PLANNER_DEFAULT_EFFORT);
  printf("  %-38s %7s %12s %8s %8s %7s %7s %9s %9s\n", "graph", "tensors",
         "LB", "greedy", "best", "proven", "by", "time_ms", "nodes");
  for (size_t i = 0; i < N_BUNDLED; i++) {
    char path[512], label[64];
    snprintf(path, sizeof path, "%s/traces/%s.csv", dir, bundled[i]);
    snprintf(label, sizeof label, "%s (align 1)", bundled[i]);
    bad += bench_file(path, label, 1);
  }
  const char *mdir = getenv("BENCH_MODELS");
  if (!mdir)
    mdir = "tests/data/models";
  DIR *dp = opendir(mdir);
  if (!dp) {
    printf("  %s: cannot open (set BENCH_MODELS)\n", mdir);
    return bad;
  }
  char *names[256];
  int n = 0;
  struct dirent *de;
  while ((de = readdir(dp)) && n < 256) {
    size_t len = strlen(de->d_name);
    if (len > 4 && !strcmp(de->d_name + len - 4, ".csv"))
      names[n++] = strdup(de->d_name);
  }
  closedir(dp);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  for (int i = 0; i < n; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", mdir, names[i]);
    bad += bench_file(path, names[i], PLANNER_DEFAULT_ALIGNMENT);
    free(names[i]);
  }
  return bad;
}


/* ---- traces: bundled and generated, at two efforts ---------------------- */

/* Effort of the second `best` run of the traces section, 0 for none. */
static uint32_t trace_effort(void)
{
  const char *v = getenv("BENCH_EFFORT");
  long e = v && *v ? strtol(v, NULL, 10) : 1000;
  return e >= 0 && e < 1000000 ? (uint32_t)e : 1000;
}

/* One trace: greedy-size, then `best` at the default effort and at
 * trace_effort(), alignment 1, each plan verified. */
static int bench_trace(const char *label, const struct planner_tensor *t,
                       size_t n)
{
  struct planner_graph g = {t, n};
  struct planner_options o;
  struct planner_plan h, a, b;
  double sh, sa, sb;
  planner_options_init(&o);
  o.alignment = 1;
  planner_plan_init(&h);
  planner_plan_init(&a);
  planner_plan_init(&b);
  o.algo = PLANNER_ALGO_GREEDY_SIZE;
  int bad = plan(&g, &o, &h, &sh) != 0;
  o.algo = PLANNER_ALGO_BEST;
  bad |= plan(&g, &o, &a, &sa) != 0;
  o.effort = trace_effort();
  if (o.effort)
    bad |= plan(&g, &o, &b, &sb) != 0;
  if (!bad) {
    double lb = (double)a.lower_bound_bytes;
    printf("  %-24s %7zu %14" PRIu64 " %8.5f %8.5f %8.3f", label, n,
           a.lower_bound_bytes, (double)h.arena_bytes / lb,
           (double)a.arena_bytes / lb, sa);
    if (o.effort)
      printf(" %8.5f %8.3f %7s", (double)b.arena_bytes / lb, sb,
             b.proven_optimal ? "yes" : "no");
    printf("\n");
  }
  fflush(stdout);
  planner_plan_cleanup(&h);
  planner_plan_cleanup(&a);
  planner_plan_cleanup(&b);
  return bad;
}

/* The comma-separated numbers of at least min in environment variable
 * name into out (at most ENV_LIST_MAX), or def[0 .. ndef-1] when it is
 * unset or empty. Returns the count. */
#define ENV_LIST_MAX 16
static int env_list(const char *name, size_t min, const size_t *def,
                    int ndef, size_t out[ENV_LIST_MAX])
{
  const char *v = getenv(name);
  int n = 0;
  if (!v || !*v) {
    for (; n < ndef; n++)
      out[n] = def[n];
    return n;
  }
  while (*v && n < ENV_LIST_MAX) {
    char *end;
    unsigned long x = strtoul(v, &end, 10);
    if (end == v)
      break;
    if (x >= min)
      out[n++] = x;
    v = *end == ',' ? end + 1 : end;
  }
  return n;
}

/* Whether shape is among BENCH_SHAPES (names, comma separated; all when
 * unset or empty). */
static int shape_wanted(enum tracegen_shape shape)
{
  const char *v = getenv("BENCH_SHAPES");
  return !v || !*v || strstr(v, tracegen_shape_name(shape)) != NULL;
}

static int bench_traces(const char *dir)
{
  int bad = 0;
  printf("== Traces: greedy-size, `best` at the default effort %u and at "
         "effort %u (BENCH_EFFORT), alignment 1\n", PLANNER_DEFAULT_EFFORT,
         trace_effort());
  printf("  %-24s %7s %14s %8s %8s %8s %8s %8s %7s\n", "trace", "tensors",
         "LB", "greedy", "best", "time_s", "best_hi", "time_s", "proven");
  for (size_t i = 0; i < N_BUNDLED; i++) {
    struct planner_csv c;
    if (load_bundled(dir, i, &c)) {
      bad++;
      continue;
    }
    bad += bench_trace(bundled[i], c.tensors, c.n_tensors);
    planner_csv_cleanup(&c);
  }
  static const size_t def_sizes[] = {20000, 40000, 60000}, def_seeds[] = {1};
  size_t sizes[ENV_LIST_MAX], seeds[ENV_LIST_MAX];
  int ns = env_list("BENCH_SIZES", 100, def_sizes, 3, sizes);
  int nseed = env_list("BENCH_SEEDS", 1, def_seeds, 1, seeds);
  for (int q = 0; q < nseed; q++)
    for (int k = 0; k < ns; k++)
      for (int shape = TRACEGEN_SOMAS; shape <= TRACEGEN_IOPDDL; shape++) {
        if (!shape_wanted((enum tracegen_shape)shape))
          continue;
        size_t n;
        struct planner_tensor *t = tracegen_make(
            (enum tracegen_shape)shape, sizes[k], seeds[q], &n);
        if (!t) {
          printf("  tracegen: out of memory\n");
          bad++;
          continue;
        }
        char label[48];
        if (seeds[q] == 1)
          snprintf(label, sizeof label, "%s-%zu",
                   tracegen_shape_name((enum tracegen_shape)shape), sizes[k]);
        else
          snprintf(label, sizeof label, "%s-%zu s%zu",
                   tracegen_shape_name((enum tracegen_shape)shape), sizes[k],
                   seeds[q]);
        bad += bench_trace(label, t, n);
        free(t);
      }
  return bad;
}

/* ---- effort: what the default effort leaves against higher ones ------- */

/* Whether plan p meets the target of the effort section: within 1.001
 * of its lower bound, or proven optimal above it. */
static int near_bound(const struct planner_plan *p)
{
  return p->proven_optimal ||
         (double)p->arena_bytes <= 1.001 * (double)p->lower_bound_bytes;
}

/* Totals of the effort section. */
struct effort_sum {
  int n, near, fast;
  double secs[256]; /* the default runs' times, the first 256 */
};

/* The efforts of the ladder (BENCH_LADDER, ascending, or 40, 100, 200,
 * 400 and 1000) into out; returns their count. */
static int ladder(size_t out[ENV_LIST_MAX])
{
  static const size_t def[] = {40, 100, 200, 400, 1000};
  return env_list("BENCH_LADDER", 1, def, 5, out);
}

/* One instance: `best` at the default effort (its figures), then the
 * efforts of the ladder in turn up to the first whose plan is near the
 * bound (a run at the default effort is not repeated). Every plan is
 * verified. Returns 0 or 1 for an error. */
static int bench_effort_one(const char *label, const struct planner_tensor *t,
                            size_t n, struct effort_sum *sum)
{
  struct planner_graph g = {t, n};
  struct planner_options o;
  struct planner_plan a;
  double sa;
  planner_options_init(&o);
  o.alignment = 1;
  planner_plan_init(&a);
  int bad = plan(&g, &o, &a, &sa) != 0;
  size_t lad[ENV_LIST_MAX];
  int nl = ladder(lad), first = -1;
  for (int k = 0; !bad && k < nl && first < 0; k++) {
    if (lad[k] == PLANNER_DEFAULT_EFFORT) {
      first = near_bound(&a) ? k : -1;
      continue;
    }
    struct planner_plan b;
    double sb;
    planner_plan_init(&b);
    o.effort = (uint32_t)lad[k];
    bad = plan(&g, &o, &b, &sb) != 0;
    if (!bad && near_bound(&b))
      first = k;
    planner_plan_cleanup(&b);
  }
  if (!bad) {
    char reach[16];
    snprintf(reach, sizeof reach, first < 0 ? "-" : "%zu",
             first < 0 ? (size_t)0 : lad[first]);
    printf("  %-22s %7zu %14" PRIu64 " %8.5f %6s %7.3f %6s\n", label, n,
           a.lower_bound_bytes,
           (double)a.arena_bytes / (double)a.lower_bound_bytes,
           a.proven_optimal ? "yes" : "no", sa, reach);
    if (sum->n < 256)
      sum->secs[sum->n] = sa;
    sum->n++;
    sum->near += near_bound(&a);
    sum->fast += sa < 1.0;
  }
  fflush(stdout);
  planner_plan_cleanup(&a);
  return bad;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The generated traces of the effort section: BENCH_SIZES (10^4, 3 x
 * 10^4 and 10^5 tensors), BENCH_SEEDS (1 to 10), BENCH_SHAPES. */
static int bench_effort_generated(struct effort_sum *sum)
{
  static const size_t def_sizes[] = {10000, 30000, 100000};
  static const size_t def_seeds[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  size_t sizes[ENV_LIST_MAX], seeds[ENV_LIST_MAX];
  int ns = env_list("BENCH_SIZES", 100, def_sizes, 3, sizes);
  int nseed = env_list("BENCH_SEEDS", 1, def_seeds, 10, seeds);
  int bad = 0;
  for (int k = 0; k < ns; k++)
    for (int shape = TRACEGEN_SOMAS; shape <= TRACEGEN_IOPDDL; shape++)
      for (int q = 0; q < nseed; q++) {
        enum tracegen_shape sh = (enum tracegen_shape)shape;
        if (!shape_wanted(sh))
          continue;
        size_t n;
        struct planner_tensor *t = tracegen_make(sh, sizes[k], seeds[q], &n);
        if (!t) {
          printf("  tracegen: out of memory\n");
          bad++;
          continue;
        }
        char label[48];
        snprintf(label, sizeof label, "%s-%zu s%zu", tracegen_shape_name(sh),
                 sizes[k], seeds[q]);
        bad += bench_effort_one(label, t, n, sum);
        free(t);
      }
  return bad;
}

static int bench_effort(const char *dir)
{
  int bad = 0;
  size_t lad[ENV_LIST_MAX];
  int nl = ladder(lad);
  printf("== Effort: `best` at the default effort %u, alignment 1; near = "
         "within 1.001 x LB or proven;\n   first = the lowest effort of "
         "the ladder", PLANNER_DEFAULT_EFFORT);
  for (int k = 0; k < nl; k++)
    printf("%s%zu", k ? "," : " ", lad[k]);
  printf(" (BENCH_LADDER) whose plan is near\n");
  printf("  %-22s %7s %14s %8s %6s %7s %6s\n", "trace", "tensors", "LB",
         "best", "proven", "time_s", "first");
  static struct effort_sum sum; /* too large for the stack */
  memset(&sum, 0, sizeof sum);
  for (size_t i = 0; i < N_BUNDLED; i++) {
    struct planner_csv c;
    if (load_bundled(dir, i, &c))
      bad++;
    else
      bad += bench_effort_one(bundled[i], c.tensors, c.n_tensors, &sum);
    planner_csv_cleanup(&c);
  }
  bad += bench_effort_generated(&sum);
  int nt = sum.n < 256 ? sum.n : 256;
  qsort(sum.secs, (size_t)nt, sizeof *sum.secs, cmp_double);
  printf("  %d of %d near the bound at the default effort, %d of %d under "
         "1 s; median %.3f s, slowest %.3f s\n", sum.near, sum.n, sum.fast,
         sum.n, nt ? sum.secs[nt / 2] : 0.0, nt ? sum.secs[nt - 1] : 0.0);
  return bad;
}

static int bench_random(void)
{
  int bad = 0;
  printf("== Random graphs: `best`, alignment 64, default effort\n");
  printf("  %8s %12s %10s %8s %7s %9s %9s %9s\n", "tensors", "LB",
         "greedy", "best", "proven", "time_ms", "search_ms", "nodes");
  static const size_t sizes[] = {1000, 3000, 10000, 30000, 100000};
  for (int k = 0; k < 5; k++) {
    size_t n = sizes[k];
    struct planner_tensor *t = calloc(n, sizeof *t);
    if (!t)
      return bad + 1;
    uint64_t s = 12345 + n;
    /* A chain of operators: most tensors live a few ops, some are long
     * skip connections, sizes spread over four decades. */
    for (size_t i = 0; i < n; i++) {
      int64_t f = (int64_t)(i / 2);
      uint64_t r = tracegen_rand(&s) % 100;
      uint64_t mod = r < 85 ? 4 : r < 98 ? 64 : 2000;
      int64_t len = (int64_t)(tracegen_rand(&s) % mod);
      uint64_t sz = 64u << (tracegen_rand(&s) % 14);
      t[i].id = (uint32_t)i;
      t[i].size = sz + 64 * (tracegen_rand(&s) % 16);
      t[i].first = f;
      t[i].last = f + len;
      t[i].align = 0;
      t[i].pinned = PLANNER_NOT_PINNED;
      t[i].alias = 0;
      t[i].has_alias = 0;
    }
    struct planner_graph g = {t, n};
    struct planner_options o;
    planner_options_init(&o);
    struct planner_plan p, h;
    planner_plan_init(&p);
    planner_plan_init(&h);
    double sec, sh;
    int b = plan(&g, &o, &p, &sec) != 0;
    o.algo = PLANNER_ALGO_GREEDY_SIZE;
    b |= plan(&g, &o, &h, &sh) != 0;
    if (!b)
      printf("  %8zu %12" PRIu64 " %10.5f %8.5f %7s %9.1f %9.1f %9" PRIu64
             "\n", n, p.lower_bound_bytes,
             (double)h.arena_bytes / (double)p.lower_bound_bytes,
             (double)p.arena_bytes / (double)p.lower_bound_bytes,
             p.proven_optimal ? "yes" : "no", sec * 1e3,
             (double)p.search_us / 1e3, p.nodes_explored);
    fflush(stdout);
    bad += b;
    planner_plan_cleanup(&p);
    planner_plan_cleanup(&h);
    free(t);
  }
  return bad;
}

int main(int argc, char **argv)
{
  if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    printf("usage: bench_exact [DATA_DIR [feas|min|real|traces|effort|"
           "random]...]\n"
           "  DATA_DIR defaults to bench/data; all sections by default.\n"
           "  Environment: BENCH_ONLY, BENCH_LONG, BENCH_EFFORT, BENCH_SIZES,\n"
           "  BENCH_SEEDS, BENCH_SHAPES, BENCH_LADDER (docs/exact.md,\n"
           "  \"Figures\").\n");
    return 0;
  }
  const char *dir = argc > 1 ? argv[1] : "bench/data";
  static const char *const all_secs[] = {"feas",   "min",    "real",
                                         "traces", "effort", "random"};
  int bad = 0, nsec = argc > 2 ? argc - 2 : 6;
  for (int i = 0; i < nsec; i++) {
    const char *sec = argc > 2 ? argv[i + 2] : all_secs[i];
    if (!strcmp(sec, "feas"))
      bad += bench_feas(dir);
    else if (!strcmp(sec, "min"))
      bad += bench_min(dir);
    else if (!strcmp(sec, "real"))
      bad += bench_real(dir);
    else if (!strcmp(sec, "traces"))
      bad += bench_traces(dir);
    else if (!strcmp(sec, "effort"))
      bad += bench_effort(dir);
    else if (!strcmp(sec, "random"))
      bad += bench_random();
    else
      printf("unknown section %s\n", sec);
  }
  return bad ? 1 : 0;
}

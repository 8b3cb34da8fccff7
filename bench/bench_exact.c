/*
 * bench_exact.c - benchmarks of the exact planner.
 *
 * Usage: bench_exact DATA_DIR [section...]
 * DATA_DIR holds minimalloc/ and traces/ (bench/data in the repo); the
 * model CSVs are read from tests/data/models. Sections (all by default):
 *   feas     MiniMalloc's challenging suite at capacity 1048576, with the
 *            reference solver's times from its README side by side;
 *   min      minimisation on the same suite (BENCH_LONG=1 gives D and J
 *            60 s each instead of 5 s);
 *   real     `best` with its default budget on real traces and models;
 *   random   `best` on random graphs of 10^3 .. 10^5 tensors.
 * Every plan is checked with planner_verify().
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph_csv.h"
#include "planner.h"

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

static const char *const NAMES = "ABCDEFGHIJK";
static const double REF_S[] = {4.49, 3.35, 0.58, 2.32, 3.21, 4.56,
                               0.98, 1.53, 3.44, 0.77, 0.56};

static int bench_feas(const char *dir)
{
  int bad = 0;
  double tot = 0, ref = 0;
  printf("== MiniMalloc challenging suite, capacity 1048576 (exact, "
         "alignment 1, budget 120 s each)\n");
  printf("  %-4s %7s %10s %10s %8s %12s %s\n", "inst", "buffers",
         "time_s", "ref_s", "ratio", "nodes", "answer");
  for (int i = 0; NAMES[i]; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/minimalloc/%c.1048576.csv", dir,
             NAMES[i]);
    struct planner_csv c;
    planner_csv_init(&c);
    if (load(path, &c)) {
      bad++;
      continue;
    }
    struct planner_graph g = planner_csv_graph(&c);
    struct planner_options o;
    planner_options_init(&o);
    o.algo = PLANNER_ALGO_EXACT;
    o.alignment = 1;
    o.capacity = 1048576;
    o.budget_ms = 120000;
    struct planner_plan p;
    planner_plan_init(&p);
    double s;
    if (plan(&g, &o, &p, &s) == 0) {
      printf("  %-4c %7zu %10.3f %10.2f %8.3f %12" PRIu64 " %s (arena %"
             PRIu64 ")\n", NAMES[i], c.n_tensors, s, REF_S[i], s / REF_S[i],
             p.nodes_explored, planner_fit_name(p.fit), p.arena_bytes);
      tot += s;
      ref += REF_S[i];
      if (p.fit != PLANNER_FIT_YES)
        bad++;
    } else {
      bad++;
    }
    fflush(stdout);
    planner_plan_cleanup(&p);
    planner_csv_cleanup(&c);
  }
  printf("  total %.3f s vs reference %.2f s: ratio %.3f; unsolved %d\n",
         tot, ref, tot / ref, bad);
  return bad;
}

int main(int argc, char **argv)
{
  const char *dir = argc > 1 ? argv[1] : "bench/data";
  int bad = 0, all = argc <= 2;
  for (int i = 2; i < argc || all; i++) {
    const char *sec = all ? "feas" : argv[i];
    if (!strcmp(sec, "feas"))
      bad += bench_feas(dir);
    if (all)
      break;
  }
  return bad ? 1 : 0;
}

/*
 * bench_storage.c - latency and size of the sqlite plan cache.
 *
 * Usage: bench_storage DATADIR   (DATADIR is accepted for symmetry with
 *        the other benchmarks; the graphs here are generated)
 *
 * For cache populations of 0, 10,000 and 100,000 stored plans it measures
 * storage_put and storage_get latency (median and 99th percentile, in
 * microseconds) for graphs of 100 and 10,000 tensors, and reports the
 * database size per stored plan. The population is reached with small
 * filler plans (10 tensors each) written through the public API, one
 * transaction per put like any client; the measured puts insert new keys,
 * and the measured gets hit, so each get includes the checksum, the
 * decode, planner_verify() of the whole plan and the amortised share of
 * the batched hit updates. The database lives in a fresh directory under
 * $TMPDIR (default /tmp) that is removed at the end. Caps are disabled so
 * that nothing is evicted while filling.
 *
 * Times are wall-clock (CLOCK_MONOTONIC) per call.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "storage.h"

#define FILLER_TENSORS 10

/* Measured calls per graph size: enough samples for a p99 without letting
 * the 10,000-tensor case dominate the run. */
struct size_case {
  size_t n_tensors; /* tensors per measured graph */
  int n_puts;       /* measured puts (new keys) */
  int n_gets;       /* measured gets (hits) */
};

static const struct size_case cases[] = {
    {100, 1000, 4000},
    {10000, 60, 300},
};

static const size_t levels[] = {0, 10000, 100000};

static double now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static uint64_t rnd(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A graph shaped like an inference chain: tensor i is produced by
 * operator i/2 and lives a few operators. Owned; free(). */
static struct planner_tensor *make_graph(size_t n, uint64_t seed)
{
  struct planner_tensor *t = calloc(n, sizeof *t);
  if (!t)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    t[i].id = (uint32_t)i;
    t[i].size = 64 + rnd(&seed) % (256 * 1024);
    t[i].first = (int64_t)(i / 2);
    t[i].last = t[i].first + 1 + (int64_t)(rnd(&seed) % 6);
    t[i].pinned = PLANNER_NOT_PINNED;
    t[i].alias = 0;
    t[i].has_alias = 0;
  }
  return t;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts v and returns its q-quantile (nearest rank). */
static double quantile(double *v, int n, double q)
{
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  int i = (int)(q * n + 0.5) - 1;
  if (i < 0)
    i = 0;
  if (i >= n)
    i = n - 1;
  return v[i];
}

/* Key "<tag>-<i>" with one input of shape [1, 224, 224, 3]. The returned
 * key points into buf and the static shape. */
static const uint32_t ranks[1] = {4};
static const int64_t dims[4] = {1, 224, 224, 3};

static struct storage_key make_key(char buf[48], const char *tag, size_t i)
{
  snprintf(buf, 48, "%s-%zu", tag, i);
  struct storage_key k = {(const uint8_t *)buf, strlen(buf), ranks, 1, dims};
  return k;
}

/* Fills the cache up to `target` plans with small filler plans. */
static int fill_to(storage_t *st, size_t *have, size_t target,
                   const struct planner_options *o)
{
  struct planner_tensor *t = make_graph(FILLER_TENSORS, 7);
  struct planner_graph g = {t, FILLER_TENSORS};
  struct planner_plan p;
  char err[ARENA_ERR_LEN];
  planner_plan_init(&p);
  if (!t || planner_run(&g, o, &p, err)) {
    free(t);
    return -1;
  }
  int rc = 0;
  for (; *have < target && !rc; (*have)++) {
    char buf[48];
    struct storage_key k = make_key(buf, "fill", *have);
    rc = storage_put(st, &k, &g, o, &p, 1, NULL);
  }
  if (rc)
    fprintf(stderr, "fill: %s\n", storage_errmsg(st));
  planner_plan_cleanup(&p);
  free(t);
  return rc;
}

/* Measures one graph size at the current population. Returns 0 or -1. */
static int measure(storage_t *st, const struct size_case *c, size_t level,
                   const struct planner_options *o)
{
  struct planner_tensor *t = make_graph(c->n_tensors, c->n_tensors);
  struct planner_graph g = {t, c->n_tensors};
  struct planner_plan p, q;
  char err[ARENA_ERR_LEN];
  double *put_us = malloc((size_t)c->n_puts * sizeof *put_us);
  double *get_us = malloc((size_t)c->n_gets * sizeof *get_us);
  int rc = -1;
  planner_plan_init(&p);
  planner_plan_init(&q);
  if (!t || !put_us || !get_us || planner_run(&g, o, &p, err))
    goto out;

  char tag[32];
  snprintf(tag, sizeof tag, "m%zu-at%zu", c->n_tensors, level);
  for (int i = 0; i < c->n_puts; i++) {
    char buf[48];
    struct storage_key k = make_key(buf, tag, (size_t)i);
    double t0 = now_us();
    if (storage_put(st, &k, &g, o, &p, 1, NULL)) {
      fprintf(stderr, "put: %s\n", storage_errmsg(st));
      goto out;
    }
    put_us[i] = now_us() - t0;
  }
  for (int i = 0; i < c->n_gets; i++) {
    char buf[48];
    struct storage_key k = make_key(buf, tag, (size_t)i % (size_t)c->n_puts);
    double t0 = now_us();
    if (storage_get(st, &k, &g, o, &q, NULL)) {
      fprintf(stderr, "get: %s\n", storage_errmsg(st));
      goto out;
    }
    get_us[i] = now_us() - t0;
  }
  if (storage_flush(st))
    goto out;
  printf("%10zu %9zu %10.1f %10.1f %10.1f %10.1f\n", level, c->n_tensors,
         quantile(put_us, c->n_puts, 0.5), quantile(put_us, c->n_puts, 0.99),
         quantile(get_us, c->n_gets, 0.5), quantile(get_us, c->n_gets, 0.99));
  rc = 0;
out:
  planner_plan_cleanup(&p);
  planner_plan_cleanup(&q);
  free(put_us);
  free(get_us);
  free(t);
  return rc;
}

int main(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  const char *base = getenv("TMPDIR");
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/arenad-bench-XXXXXX", base ? base : "/tmp");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(path, sizeof path, "%s/plans.db", dir);

  struct storage_options so;
  storage_options_init(&so);
  so.max_bytes = 0;
  so.max_entries = 0;
  storage_t *st = NULL;
  char err[ARENA_ERR_LEN];
  if (storage_open(path, &so, &st, err)) {
    fprintf(stderr, "open: %s\n", err);
    return 1;
  }
  struct planner_options o;
  planner_options_init(&o);
  o.algo = PLANNER_ALGO_GREEDY_SIZE; /* fast and deterministic */

  printf("storage: put/get latency in microseconds (median, p99)\n");
  printf("%10s %9s %10s %10s %10s %10s\n", "stored", "tensors", "put p50",
         "put p99", "get p50", "get p99");
  size_t have = 0;
  int rc = 0;
  double t_start = now_us();
  struct storage_stats sizes[3];
  for (size_t l = 0; l < sizeof levels / sizeof *levels && !rc; l++) {
    if ((rc = fill_to(st, &have, levels[l], &o)))
      break;
    for (size_t c = 0; c < sizeof cases / sizeof *cases && !rc; c++)
      rc = measure(st, &cases[c], levels[l], &o);
    if (!rc)
      rc = storage_get_stats(st, &sizes[l]);
  }
  if (!rc) {
    printf("\nfile size per stored plan (database + WAL, after each level)\n");
    printf("%10s %12s %14s %14s\n", "entries", "file bytes", "bytes/plan",
           "accounted/plan");
    for (size_t l = 0; l < sizeof levels / sizeof *levels; l++)
      printf("%10llu %12llu %14.0f %14.0f\n",
             (unsigned long long)sizes[l].entries,
             (unsigned long long)sizes[l].file_bytes,
             (double)sizes[l].file_bytes / (double)sizes[l].entries,
             (double)sizes[l].bytes / (double)sizes[l].entries);
    struct storage_stats s;
    rc = storage_vacuum(st);
    if (!rc)
      rc = storage_get_stats(st, &s);
    if (!rc) {
      printf("%10llu %12llu %14.0f %14s (after storage_vacuum)\n",
             (unsigned long long)s.entries,
             (unsigned long long)s.file_bytes,
             (double)s.file_bytes / (double)s.entries, "");
      /* Reopening runs the header checks and PRAGMA quick_check over the
       * whole file: the start-up cost of a full cache. */
      storage_close(st);
      st = NULL;
      double t0 = now_us();
      rc = storage_open(path, &so, &st, err);
      if (!rc)
        printf("\nreopen with %llu plans (includes quick_check): %.1f ms\n",
               (unsigned long long)s.entries, (now_us() - t0) / 1e3);
    }
    printf("\nfiller plans: %d tensors; total run %.1f s\n", FILLER_TENSORS,
           (now_us() - t_start) / 1e6);
  }
  storage_close(st);
  unlink(path);
  char side[640];
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
  rmdir(dir);
  return rc ? 1 : 0;
}

/*
 * bench_background.c - arenad's background improvement, measured through
 * real daemons on this machine:
 *  - anytime: MiniMalloc's eleven challenging instances (A to K) and the
 *    two bundled traces are each sent once, at alignment 1 and the
 *    default effort, to one daemon with the default [improve] settings;
 *    the table gives each first answer (time and arena) and the arena the
 *    daemon serves after 10 s and 60 s of idle time, against the best
 *    arena known, with the daemon's CPU time meanwhile;
 *  - foreground first: a client's cache misses (fresh random graphs of
 *    2000 tensors, one at a time) on a daemon whose background threads
 *    are all busy with long steps, against the same misses on a daemon
 *    with background improvement off (the busy one stopped meanwhile),
 *    in rounds taking turns; median and p99 and their ratios.
 *  - large: SOMAS-like and IOPDDL-like traces (bench/tracegen) of
 *    3 x 10^4 and 10^5 tensors, each sent once at the default alignment
 *    and effort to a fresh daemon with the default [improve] settings
 *    (so improved one window at a time); per trace the ratio of the
 *    served arena to the lower bound at first and after the idle time,
 *    the generation then, the daemon's peak RSS (VmHWM, the request and
 *    the steps) and its RSS once idle after.
 * Times are wall clock; quote the ratios, not the absolute numbers.
 *
 * Usage: bench_background [DATA_DIR] [-q] [-f | -a | -l]  (DATA_DIR:
 * bench/data; -q: 2 s and 6 s instead of 10 s and 60 s, for a quick
 * look, and 10 s instead of 60 s for the large traces; -f: the
 * foreground table only; -a: the anytime table only; -l: the large
 * traces only).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon_harness.h"
#include "testutil.h"
#include "tracegen.h"
#include "wire.h"

#define N_INST 13
#define MISS_ROUNDS 3
#define MISSES_PER_ROUND 20
#define MISS_TENSORS 2000

static const char *const INST[N_INST] = {
    "minimalloc/A.1048576.csv", "minimalloc/B.1048576.csv",
    "minimalloc/C.1048576.csv", "minimalloc/D.1048576.csv",
    "minimalloc/E.1048576.csv", "minimalloc/F.1048576.csv",
    "minimalloc/G.1048576.csv", "minimalloc/H.1048576.csv",
    "minimalloc/I.1048576.csv", "minimalloc/J.1048576.csv",
    "minimalloc/K.1048576.csv", "traces/resnet50.csv",
    "traces/iopddl_G_1.csv"};

/* Best arena known for MiniMalloc's instances (from the suite's README);
 * 0: none published (the traces). */
static const uint64_t BEST[N_INST] = {1048576, 1048576, 1039360, 1025024,
                                      1048576, 1048576, 1048576, 1048576,
                                      1048576, 1041408, 1048576, 0, 0};

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

/* CPU seconds of process pid (user and system); 0 if unknown. */
static double proc_cpu_s(pid_t pid)
{
  return tu_proc_cpu_us((int)pid) / 1e6;
}

/* One Plan of g (alignment 1, default effort) under hash; returns the
 * reply (owned) or NULL. */
static Arenad__V1__Response *plan(const struct harness *h,
                                  const struct hn_graph *g, const char *hash,
                                  uint64_t align)
{
  int fd = hn_connect(h);
  if (fd < 0)
    return NULL;
  Arenad__V1__Response *r = NULL;
  if (hn_send_plan(fd, 1, g, hash, 0, align, 0) == 0)
    r = hn_recv(fd, 120000);
  close(fd);
  if (r && (r->status != ARENAD__V1__STATUS__OK ||
            r->body_case != ARENAD__V1__RESPONSE__BODY_PLAN)) {
    wire_free_response(r);
    r = NULL;
  }
  return r;
}

/* ---- anytime ------------------------------------------------------------- */

struct inst {
  struct hn_graph g;
  double first_ms;
  uint64_t first, at[2], lb;
  uint32_t effort[2];
  uint64_t gen[2];
  int optimal[2];
};

static void served(const struct harness *h, struct inst *in, int k,
                   const char *hash)
{
  Arenad__V1__Response *r = plan(h, &in->g, hash, 1);
  if (!r)
    return;
  in->at[k] = r->plan->arena_bytes;
  in->effort[k] = r->plan->effort;
  in->gen[k] = r->plan->generation;
  in->optimal[k] = r->plan->proven_optimal;
  wire_free_response(r);
}

static void print_anytime(struct inst *in, const double idle[2],
                          const double cpu[2])
{
  printf("| instance | tensors | lower bound | first answer | ms | "
         "after %.0f s | after %.0f s | effort, generation | best known | "
         "vs best |\n|---|---:|---:|---:|---:|---:|---:|---|---:|---:|\n",
         idle[0], idle[1]);
  for (int i = 0; i < N_INST; i++) {
    const char *name = strrchr(INST[i], '/') + 1;
    printf("| %.*s | %zu | %" PRIu64 " | %" PRIu64 " | %.1f | %" PRIu64
           " | %" PRIu64 "%s | %" PRIu32 ", %" PRIu64 " | ",
           (int)(strchr(name, '.') - name), name, in[i].g.n, in[i].lb,
           in[i].first, in[i].first_ms, in[i].at[0], in[i].at[1],
           in[i].optimal[1] ? " (optimal)" : "", in[i].effort[1],
           in[i].gen[1]);
    if (BEST[i])
      printf("%" PRIu64 " | %.4f |\n", BEST[i],
             (double)in[i].at[1] / (double)BEST[i]);
    else
      printf("- | - |\n");
  }
  printf("\ndaemon CPU: %.1f s in the first %.0f s of idle time, %.1f s in "
         "%.0f s (2 cores; [improve] defaults: threads = workers = 2)\n\n",
         cpu[0], idle[0], cpu[1], idle[1]);
}

static int bench_anytime(const char *dir, const double idle[2])
{
  struct inst in[N_INST];
  memset(in, 0, sizeof in);
  for (int i = 0; i < N_INST; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, INST[i]);
    if (hn_load_csv(path, &in[i].g)) {
      fprintf(stderr, "bench_background: cannot read %s\n", path);
      return 1;
    }
  }
  struct harness h;
  if (hn_init(&h, "[daemon]\nlog_level = warning\n") || hn_start(&h))
    return 1;
  double c0 = proc_cpu_s(h.pid);
  for (int i = 0; i < N_INST; i++) {
    double t0 = now_s();
    Arenad__V1__Response *r = plan(&h, &in[i].g, INST[i], 1);
    in[i].first_ms = (now_s() - t0) * 1e3;
    if (r) {
      in[i].first = r->plan->arena_bytes;
      in[i].lb = r->plan->lower_bound_bytes;
      wire_free_response(r);
    }
  }
  double cpu[2], t_start = now_s();
  for (int k = 0; k < 2; k++) {
    double left = idle[k] - (now_s() - t_start);
    if (left > 0)
      sleep_s(left);
    cpu[k] = proc_cpu_s(h.pid) - c0;
    for (int i = 0; i < N_INST; i++)
      served(&h, &in[i], k, INST[i]);
  }
  hn_stop(&h);
  hn_cleanup(&h);
  printf("\n## Background improvement: first answers and the plans served "
         "after idle time (alignment 1)\n\n");
  print_anytime(in, idle, cpu);
  for (int i = 0; i < N_INST; i++)
    hn_graph_free(&in[i].g);
  return 0;
}

/* ---- foreground first -------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sends MISSES_PER_ROUND fresh graphs to h, one at a time; writes their
 * latencies (ms) to lat. Returns the failures. */
static int misses(const struct harness *h, uint64_t seed, double *lat)
{
  int bad = 0;
  for (int i = 0; i < MISSES_PER_ROUND; i++) {
    struct hn_graph g;
    hn_random_graph(&g, MISS_TENSORS, seed + (uint64_t)i);
    double t0 = now_s();
    Arenad__V1__Response *r = plan(h, &g, "fg", 64);
    lat[i] = (now_s() - t0) * 1e3;
    bad += !r || r->plan->cached;
    wire_free_response(r);
    hn_graph_free(&g);
  }
  return bad;
}

/* Starts the busy daemon and waits until every background thread runs
 * a long step; returns 0 or -1. */
static int make_busy(struct harness *h, const char *dir)
{
  if (hn_init(h, "[daemon]\nlog_level = warning\nworkers = 2\n"
                 "[improve]\nmax_effort = 3600000\nrun_cpu_ms = 3600000\n"
                 "cpu_ms_per_hour = 460800000\n") ||
      hn_start(h))
    return -1;
  const char *hard[] = {"minimalloc/E.1048576.csv", "minimalloc/I.1048576.csv",
                        "minimalloc/D.1048576.csv", "minimalloc/J.1048576.csv"};
  for (int i = 0; i < 4; i++) {
    char path[512];
    struct hn_graph g;
    snprintf(path, sizeof path, "%s/%s", dir, hard[i]);
    if (hn_load_csv(path, &g))
      return -1;
    wire_free_response(plan(h, &g, hard[i], 1));
    hn_graph_free(&g);
  }
  for (int i = 0; i < 600; i++) {
    Arenad__V1__Response *s = hn_stats(h);
    int busy = s && s->stats->improve_active == 2 &&
               s->stats->improve_runs >= 8;
    wire_free_response(s);
    if (busy)
      return 0;
    sleep_s(0.1);
  }
  return -1;
}

static int bench_foreground(const char *dir)
{
  struct harness idle, busy;
  if (hn_init(&idle, "[daemon]\nlog_level = warning\nworkers = 2\n"
                     "[improve]\nenabled = 0\n") ||
      hn_start(&idle))
    return 1;
  if (make_busy(&busy, dir)) {
    fprintf(stderr, "bench_background: the background threads never got "
                    "busy\n");
    return 1;
  }
  double li[MISS_ROUNDS * MISSES_PER_ROUND], lb[MISS_ROUNDS * MISSES_PER_ROUND];
  double r50[MISS_ROUNDS], r99[MISS_ROUNDS];
  int bad = 0;
  double cb0 = proc_cpu_s(busy.pid);
  for (int k = 0; k < MISS_ROUNDS; k++) {
    double *a = li + k * MISSES_PER_ROUND, *b = lb + k * MISSES_PER_ROUND;
    uint64_t seed = 1000u * (uint64_t)(k + 1);
    /* The busy daemon is stopped while the idle one serves, so that its
     * background threads do not run beside the figure they are compared
     * with. */
    kill(busy.pid, SIGSTOP);
    bad += misses(&idle, seed, a);
    kill(busy.pid, SIGCONT);
    bad += misses(&busy, seed + 500, b);
    qsort(a, MISSES_PER_ROUND, sizeof *a, cmp_d);
    qsort(b, MISSES_PER_ROUND, sizeof *b, cmp_d);
    r50[k] = b[MISSES_PER_ROUND / 2] / a[MISSES_PER_ROUND / 2];
    r99[k] = b[MISSES_PER_ROUND - 1] / a[MISSES_PER_ROUND - 1];
  }
  Arenad__V1__Response *s = hn_stats(&busy);
  unsigned active = s ? (unsigned)s->stats->improve_active : 0;
  wire_free_response(s);
  double cb = proc_cpu_s(busy.pid) - cb0;
  hn_stop(&idle);
  hn_stop(&busy);
  hn_cleanup(&idle);
  hn_cleanup(&busy);
  size_t n = MISS_ROUNDS * MISSES_PER_ROUND;
  qsort(li, n, sizeof *li, cmp_d);
  qsort(lb, n, sizeof *lb, cmp_d);
  qsort(r50, MISS_ROUNDS, sizeof *r50, cmp_d);
  qsort(r99, MISS_ROUNDS, sizeof *r99, cmp_d);
  printf("## Foreground first: cache misses (%d tensors, default effort, "
         "one at a time; %d rounds of %d, taking turns)\n\n",
         MISS_TENSORS, MISS_ROUNDS, MISSES_PER_ROUND);
  printf("| daemon | p50 ms | p99 ms | failures |\n|---|---:|---:|---:|\n");
  printf("| background improvement off | %.2f | %.2f | %d |\n",
         li[n / 2], li[n * 99 / 100], 0);
  printf("| both background threads on long steps | %.2f | %.2f | %d |\n\n",
         lb[n / 2], lb[n * 99 / 100], bad);
  printf("busy vs off, median of the rounds' ratios (range): p50 %.2f "
         "(%.2f-%.2f), p99 %.2f (%.2f-%.2f); background steps still running "
         "at the end: %u; the busy daemon used %.1f s of CPU in all\n\n",
         r50[MISS_ROUNDS / 2], r50[0], r50[MISS_ROUNDS - 1],
         r99[MISS_ROUNDS / 2], r99[0], r99[MISS_ROUNDS - 1], active, cb);
  return bad != 0;
}

/* A field of /proc/PID/status in KiB ("VmHWM:", "VmRSS:"); 0 if unknown. */
static unsigned long proc_kib(pid_t pid, const char *field)
{
  char path[64], line[256];
  unsigned long kib = 0;
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, field, strlen(field)))
      kib = strtoul(line + strlen(field), NULL, 10);
  fclose(f);
  return kib;
}

/* One large trace on a fresh daemon (see the file's comment). */
static int bench_large_one(enum tracegen_shape shape, size_t n, double idle)
{
  struct hn_graph g;
  struct harness h;
  g.t = tracegen_make(shape, n, 1, &g.n);
  if (!g.t || hn_init(&h, "") || hn_start(&h)) {
    free(g.t);
    return 1;
  }
  unsigned long rss0 = proc_kib(h.pid, "VmRSS:");
  Arenad__V1__Response *r = plan(&h, &g, "large", 64);
  int bad = !r || r->status != ARENAD__V1__STATUS__OK;
  double lb = bad ? 1 : (double)r->plan->lower_bound_bytes;
  double first = bad ? 0 : (double)r->plan->arena_bytes / lb;
  wire_free_response(r);
  sleep_s(idle);
  r = bad ? NULL : plan(&h, &g, "large", 64);
  bad |= !r || r->status != ARENAD__V1__STATUS__OK;
  double after = bad ? 0 : (double)r->plan->arena_bytes / lb;
  uint64_t gen = bad ? 0 : r->plan->generation;
  wire_free_response(r);
  unsigned long hwm = proc_kib(h.pid, "VmHWM:");
  unsigned long rss = proc_kib(h.pid, "VmRSS:");
  printf("| %s | %zu | %.5f | %.5f | %" PRIu64 " | %.1f | %.1f | %.1f |\n",
         tracegen_shape_name(shape), g.n, first, after, gen, rss0 / 1024.0,
         hwm / 1024.0, rss / 1024.0);
  fflush(stdout);
  hn_stop(&h);
  hn_cleanup(&h);
  free(g.t);
  return bad;
}

static int bench_large(double idle)
{
  static const size_t sizes[] = {30000, 100000};
  int bad = 0;
  printf("Large traces, %.0f s idle each, a fresh daemon each:\n\n"
         "| trace | tensors | first / LB | after / LB | generation | "
         "RSS before (MiB) | peak RSS | idle RSS after |\n"
         "|---|---:|---:|---:|---:|---:|---:|---:|\n", idle);
  for (int s = 0; s < 2; s++)
    for (int k = 0; k < 2; k++)
      bad |= bench_large_one(s ? TRACEGEN_IOPDDL : TRACEGEN_SOMAS, sizes[k],
                             idle);
  printf("\n");
  return bad;
}

int main(int argc, char **argv)
{
  const char *dir = "bench/data";
  double idle[2] = {10, 60};
  int fg = 1, any = 1, large = 1;
  double large_idle = 60;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-q")) {
      idle[0] = 2;
      idle[1] = 6;
      large_idle = 10;
    } else if (!strcmp(argv[i], "-f")) {
      any = large = 0;
    } else if (!strcmp(argv[i], "-a")) {
      fg = large = 0;
    } else if (!strcmp(argv[i], "-l")) {
      fg = any = 0;
    } else {
      dir = argv[i];
    }
  }
  int rc = fg ? bench_foreground(dir) : 0;
  rc |= large ? bench_large(large_idle) : 0;
  return (any && bench_anytime(dir, idle)) || rc;
}

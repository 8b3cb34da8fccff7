/*
 * bench_service.c - arenad's service figures, all measured in one run on
 * this machine:
 *  - cache hits: latency (median, p99), throughput and CPU time per
 *    request (client and server together) with 1, 8 and 32 concurrent
 *    clients, over the raw wire and through the client library (which
 *    also digests the graph, unless the handle digested the same graph
 *    for its previous call, and verifies every plan); the library once
 *    with the same graph every call, and once alternating between two
 *    graphs, so that every call digests its graph;
 *  - the same figures for a bare echo server (below) that answers each
 *    request frame with a frame of the same size as arenad's reply, over
 *    the same kind of socket, and the ratios between the two;
 *  - misses: throughput of cold plans with 1 and 2 workers, at the
 *    default effort (which every pool thread runs, workers + 1) and above
 *    it (long searches, which at most `workers` threads run), with the
 *    CPU the daemon used meanwhile;
 *  - footprint: idle RSS and the time from exec to READY=1.
 * Every figure is measured in several rounds (-r N, default 3), the paths
 * taking turns within a round, and printed as the median over the rounds;
 * a ratio is the median of the rounds' ratios, with their range. Times
 * are wall clock, CPU times from getrusage() and /proc; quote ratios, not
 * absolute numbers.
 *
 * Usage: bench_service [DATA_DIR] [-r ROUNDS]  (DATA_DIR is not used:
 * `make bench` passes it to every benchmark).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arenad_client.h"
#include "daemon_harness.h"
#include "testutil.h"
#include "wire.h"
#include "wire_plan.h"

#define MODEL "tests/data/models/mobilenet_v2_quantized_1x3x224x224.csv"
#define MAX_ROUNDS 15

static double now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of n values (sorts v). */
static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* CPU time of this process (user and system), us. */
static double self_cpu_us(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
         ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

/* ---- the bare echo server --------------------------------------------- */

struct echo {
  char path[256];
  int lfd;
  size_t reply_len; /* body bytes of each answer */
  pthread_t thr;
};

static int read_full(int fd, void *buf, size_t len)
{
  char *p = buf;
  while (len) {
    ssize_t n = recv(fd, p, len, 0);
    if (n <= 0)
      return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

static void *echo_conn(void *arg)
{
  struct echo *e = ((void **)arg)[0];
  int fd = (int)(intptr_t)((void **)arg)[1];
  free(arg);
  uint8_t *reply = calloc(1, 4 + e->reply_len);
  reply[0] = (uint8_t)(e->reply_len >> 24);
  reply[1] = (uint8_t)(e->reply_len >> 16);
  reply[2] = (uint8_t)(e->reply_len >> 8);
  reply[3] = (uint8_t)e->reply_len;
  uint8_t *body = malloc(1 << 20);
  for (;;) {
    uint8_t h[4];
    if (read_full(fd, h, 4))
      break;
    size_t n = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
    if (n > (1 << 20) || read_full(fd, body, n))
      break;
    if (hn_send_raw(fd, reply, 4 + e->reply_len))
      break;
  }
  free(body);
  free(reply);
  close(fd);
  return NULL;
}

static void *echo_accept(void *arg)
{
  struct echo *e = arg;
  for (;;) {
    int fd = accept(e->lfd, NULL, NULL);
    if (fd < 0)
      return NULL;
    void **a = malloc(2 * sizeof *a);
    a[0] = e;
    a[1] = (void *)(intptr_t)fd;
    pthread_t t;
    pthread_create(&t, NULL, echo_conn, a);
    pthread_detach(t);
  }
}

static int echo_start(struct echo *e, const char *dir, size_t reply_len)
{
  snprintf(e->path, sizeof e->path, "%s/echo.sock", dir);
  e->reply_len = reply_len;
  e->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, e->path, strlen(e->path) + 1);
  if (bind(e->lfd, (struct sockaddr *)&a, sizeof a) || listen(e->lfd, 128))
    return -1;
  return pthread_create(&e->thr, NULL, echo_accept, e);
}

/* ---- load generators ------------------------------------------------------ */

enum mode { MODE_ECHO, MODE_WIRE, MODE_LIBRARY, MODE_LIBRARY_NEW, N_MODES };

static const char *const mode_name[N_MODES] = {
    "bare echo", "arenad hit, raw wire", "arenad hit, client library",
    "arenad hit, client library, graph digested every call"};

/* The graphs a load run sends. */
struct graphs {
  const struct hn_graph *g;  /* the model */
  const struct hn_graph *g2; /* the model with one tensor larger */
  const uint8_t *frame;      /* packed request for g (wire and echo) */
  size_t frame_len;
};

struct worker {
  enum mode mode;
  const char *path;          /* socket */
  const struct graphs *gs;
  int n;                     /* requests */
  double *lat;               /* n latencies, us */
  int failures;
};

static int connect_path(const char *path)
{
  struct harness tmp;
  memset(&tmp, 0, sizeof tmp);
  snprintf(tmp.sock, sizeof tmp.sock, "%s", path);
  return hn_connect(&tmp);
}

/* One request over a raw socket: send the frame, read one reply frame. */
static int raw_roundtrip(int fd, const uint8_t *frame, size_t len,
                         uint8_t *buf, size_t cap)
{
  if (hn_send_raw(fd, frame, len))
    return -1;
  uint8_t h[4];
  if (read_full(fd, h, 4))
    return -1;
  size_t n = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
  return n > cap ? -1 : read_full(fd, buf, n);
}

/* Requests through the client library on one handle: the same graph
 * every call, or (MODE_LIBRARY_NEW) two graphs in turn, so that the
 * handle never holds the digest of the graph it is given. */
static void run_library(struct worker *w)
{
  struct arenad_client_options o;
  arenad_client_options_init(&o);
  o.socket_path = w->path;
  arenad_client_t *c;
  arenad_client_open(&o, &c);
  const struct hn_graph *hg[2] = {w->gs->g, w->gs->g2};
  struct planner_options po;
  planner_options_init(&po);
  struct arenad_model_key k = {(const uint8_t *)"bench", 5, NULL, 0};
  for (int i = 0; i < w->n; i++) {
    const struct hn_graph *x = hg[w->mode == MODE_LIBRARY_NEW ? i % 2 : 0];
    struct planner_graph g = {x->t, x->n};
    struct arenad_client_result r;
    arenad_client_result_init(&r);
    double t0 = now_us();
    w->failures += arenad_client_plan(c, &g, &po, &k, &r) != 0 || !r.cached;
    w->lat[i] = now_us() - t0;
    arenad_client_result_cleanup(&r);
  }
  arenad_client_close(c);
}

static void *run_worker(void *arg)
{
  struct worker *w = arg;
  if (w->mode == MODE_LIBRARY || w->mode == MODE_LIBRARY_NEW) {
    run_library(w);
    return NULL;
  }
  uint8_t *buf = malloc(1 << 22);
  int fd = connect_path(w->path);
  for (int i = 0; i < w->n; i++) {
    double t0 = now_us();
    w->failures += raw_roundtrip(fd, w->gs->frame, w->gs->frame_len, buf,
                                 1 << 22) != 0;
    w->lat[i] = now_us() - t0;
  }
  close(fd);
  free(buf);
  return NULL;
}

struct result {
  double p50, p99, rps; /* latency percentiles us, requests per second */
  double cpu_us;        /* CPU per request, clients and server, us */
  int failures;
};

/* Runs `clients` threads of per_client requests each against path;
 * server is the serving process (0: this one, as for the echo). */
static struct result run_load(enum mode mode, const char *path,
                              pid_t server, const struct graphs *gs,
                              int clients, int per_client)
{
  struct worker *w = calloc((size_t)clients, sizeof *w);
  pthread_t *t = calloc((size_t)clients, sizeof *t);
  double *all = malloc(sizeof(double) * (size_t)clients * (size_t)per_client);
  double c0 = self_cpu_us(), s0 = server ? tu_proc_cpu_us(server) : 0;
  double t0 = now_us();
  for (int i = 0; i < clients; i++) {
    w[i] = (struct worker){mode, path, gs, per_client,
                           all + (size_t)i * (size_t)per_client, 0};
    pthread_create(&t[i], NULL, run_worker, &w[i]);
  }
  struct result r = {0};
  for (int i = 0; i < clients; i++) {
    pthread_join(t[i], NULL);
    r.failures += w[i].failures;
  }
  double secs = (now_us() - t0) / 1e6;
  double cpu = self_cpu_us() - c0 + (server ? tu_proc_cpu_us(server) - s0 : 0);
  size_t n = (size_t)clients * (size_t)per_client;
  qsort(all, n, sizeof *all, cmp_d);
  r.p50 = all[n / 2];
  r.p99 = all[n * 99 / 100];
  r.rps = (double)n / secs;
  r.cpu_us = cpu / (double)n;
  free(all);
  free(w);
  free(t);
  return r;
}

/* ---- daemon helpers ------------------------------------------------------- */

/* Starts a daemon with NOTIFY_SOCKET set; returns us until READY=1. */
static double start_timed(struct harness *h)
{
  char nsock[300];
  snprintf(nsock, sizeof nsock, "%s/notify.sock", h->dir);
  /* Not inherited: a daemon holding this socket open would block on its
   * periodic STATUS= messages once nobody reads them any more. */
  int nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, nsock, strlen(nsock) + 1);
  unlink(nsock);
  bind(nfd, (struct sockaddr *)&a, sizeof a);
  setenv("NOTIFY_SOCKET", nsock, 1);
  double t0 = now_us(), ready = -1;
  if (hn_start(h) != 0)
    return -1;
  for (int i = 0; i < 100 && ready < 0; i++) {
    struct pollfd p = {nfd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0)
      continue;
    char msg[512];
    ssize_t n = recv(nfd, msg, sizeof msg - 1, 0);
    if (n > 0) {
      msg[n] = 0;
      if (strstr(msg, "READY=1"))
        ready = now_us() - t0;
    }
  }
  unsetenv("NOTIFY_SOCKET");
  close(nfd);
  return ready;
}

/* Sends one plan request for g and waits for it; returns the reply
 * (owned) or NULL. */
static Arenad__V1__Response *plan_once(const struct harness *h,
                                       const struct hn_graph *g)
{
  int fd = hn_connect(h);
  hn_send_plan(fd, 1, g, "bench", 0, 64, 0);
  Arenad__V1__Response *r = hn_recv(fd, 30000);
  close(fd);
  return r;
}

/* ---- misses --------------------------------------------------------------- */

enum { MISS_CLIENTS = 4, MISS_TENSORS = 2000 };

/* The miss configurations, in the order printed. */
static const struct miss_case {
  int workers;
  uint32_t effort; /* 0: the daemon's default (40); above it: long */
  int n;           /* cold plans */
} miss_cases[] = {
    {1, 0, 64}, {2, 0, 64}, {1, 2 * PLANNER_DEFAULT_EFFORT, 32},
    {2, 2 * PLANNER_DEFAULT_EFFORT, 32},
};
#define N_MISS_CASES (sizeof miss_cases / sizeof miss_cases[0])

struct miss_result {
  double plans_s; /* cold plans per second */
  double cores;   /* daemon CPU time / wall time */
  int failures;
};

/* Plans mc->n fresh random graphs, MISS_CLIENTS at a time, on a fresh
 * daemon. */
static struct miss_result bench_misses(const struct miss_case *mc, int round)
{
  struct harness h;
  char conf[64];
  snprintf(conf, sizeof conf, "[daemon]\nworkers = %d\nlog_level = warning\n",
           mc->workers);
  hn_init(&h, conf);
  hn_start(&h);
  struct hn_graph *g = calloc((size_t)mc->n, sizeof *g);
  for (int i = 0; i < mc->n; i++)
    hn_random_graph(&g[i], MISS_TENSORS,
                    1000 + (uint64_t)i + 100000 * (uint64_t)round);
  struct miss_result mr = {0};
  double t0 = now_us(), c0 = tu_proc_cpu_us(h.pid);
  for (int base = 0; base < mc->n; base += MISS_CLIENTS) {
    int fds[MISS_CLIENTS];
    for (int k = 0; k < MISS_CLIENTS; k++) {
      fds[k] = hn_connect(&h);
      hn_send_plan(fds[k], 1, &g[base + k], "miss", 0, 64, mc->effort);
    }
    for (int k = 0; k < MISS_CLIENTS; k++) {
      Arenad__V1__Response *r = hn_recv(fds[k], 60000);
      mr.failures += !r || r->status != ARENAD__V1__STATUS__OK;
      wire_free_response(r);
      close(fds[k]);
    }
  }
  double us = now_us() - t0;
  mr.cores = (tu_proc_cpu_us(h.pid) - c0) / us;
  mr.plans_s = mc->n / (us / 1e6);
  for (int i = 0; i < mc->n; i++)
    hn_graph_free(&g[i]);
  free(g);
  hn_stop(&h);
  hn_cleanup(&h);
  return mr;
}

/* Planning threads at once: the pool (workers + 1) runs plans at the
 * default effort, at most `workers` run long ones. */
static int planning_at_once(const struct miss_case *mc)
{
  int threads = mc->effort ? mc->workers : mc->workers + 1;
  return threads < MISS_CLIENTS ? threads : MISS_CLIENTS;
}

static void print_misses(int rounds)
{
  struct miss_result mr[N_MISS_CASES][MAX_ROUNDS];
  for (int k = 0; k < rounds; k++)
    for (size_t c = 0; c < N_MISS_CASES; c++)
      mr[c][k] = bench_misses(&miss_cases[c], k);
  printf("| misses (%d cold plans of %d tensors at a time) | planning at "
         "once | plans/s | range | daemon CPU, cores | failures |\n",
         MISS_CLIENTS, MISS_TENSORS);
  printf("|---|---:|---:|---|---:|---:|\n");
  for (size_t c = 0; c < N_MISS_CASES; c++) {
    const struct miss_case *mc = &miss_cases[c];
    double ps[MAX_ROUNDS], cores[MAX_ROUNDS];
    int fails = 0;
    for (int k = 0; k < rounds; k++) {
      ps[k] = mr[c][k].plans_s;
      cores[k] = mr[c][k].cores;
      fails += mr[c][k].failures;
    }
    double m = median(ps, rounds); /* sorts ps: ps[0] min, last max */
    printf("| %d worker%s, effort %u%s | %d | %.1f | %.1f-%.1f | %.2f | %d |\n",
           mc->workers, mc->workers > 1 ? "s" : "",
           mc->effort ? mc->effort : PLANNER_DEFAULT_EFFORT,
           mc->effort ? " (long)" : "", planning_at_once(mc), m, ps[0],
           ps[rounds - 1], median(cores, rounds), fails);
  }
  printf("\n");
}

/* ---- hits ----------------------------------------------------------------- */

/* Prints one path's row: medians over the rounds, and the median and
 * range of its per-round ratios to the echo. */
static void print_hit_row(int clients, enum mode m, struct result *r,
                          struct result *echo, int rounds)
{
  double p50[MAX_ROUNDS], p99[MAX_ROUNDS], rps[MAX_ROUNDS], cpu[MAX_ROUNDS];
  double q50[MAX_ROUNDS], qrps[MAX_ROUNDS], qcpu[MAX_ROUNDS];
  int fails = 0;
  for (int k = 0; k < rounds; k++) {
    p50[k] = r[k].p50;
    p99[k] = r[k].p99;
    rps[k] = r[k].rps;
    cpu[k] = r[k].cpu_us;
    q50[k] = r[k].p50 / echo[k].p50;
    qrps[k] = echo[k].rps / r[k].rps;
    qcpu[k] = r[k].cpu_us / echo[k].cpu_us;
    fails += r[k].failures;
  }
  double m50 = median(q50, rounds), mrps = median(qrps, rounds),
         mcpu = median(qcpu, rounds);
  printf("| %d | %s | %.1f | %.1f | %.0f | %.1f | %.2f (%.2f-%.2f) | "
         "%.2f (%.2f-%.2f) | %.2f | %d |\n",
         clients, mode_name[m], median(p50, rounds), median(p99, rounds),
         median(rps, rounds), median(cpu, rounds), m50, q50[0],
         q50[rounds - 1], mrps, qrps[0], qrps[rounds - 1], mcpu, fails);
}

static void print_hits(const struct harness *h, const struct echo *e,
                       const struct graphs *gs, int rounds)
{
  printf("| clients | path | p50 us | p99 us | req/s | CPU us/req | "
         "vs echo p50 | vs echo req/s | vs echo CPU | failures |\n");
  printf("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  int clients[] = {1, 8, 32};
  for (int c = 0; c < 3; c++) {
    int per = clients[c] == 1 ? 4000 : 16000 / clients[c];
    struct result r[N_MODES][MAX_ROUNDS];
    for (int k = 0; k < rounds; k++)
      for (int m = 0; m < N_MODES; m++)
        r[m][k] = run_load((enum mode)m, m == MODE_ECHO ? e->path : h->sock,
                           m == MODE_ECHO ? 0 : h->pid, gs, clients[c], per);
    for (int m = 0; m < N_MODES; m++)
      print_hit_row(clients[c], (enum mode)m, r[m], r[MODE_ECHO], rounds);
  }
  printf("\n");
}

static int parse_rounds(int argc, char **argv)
{
  int rounds = 3;
  for (int i = 1; i < argc; i++)
    if ((!strcmp(argv[i], "-r") || !strcmp(argv[i], "--rounds")) &&
        i + 1 < argc)
      rounds = atoi(argv[++i]);
  if (rounds < 1 || rounds > MAX_ROUNDS) {
    fprintf(stderr, "bench_service: rounds must be 1 to %d\n", MAX_ROUNDS);
    return -1;
  }
  return rounds;
}

int main(int argc, char **argv)
{
  int rounds = parse_rounds(argc, argv);
  if (rounds < 0)
    return 64;
  signal(SIGPIPE, SIG_IGN);
  struct hn_graph g, g2;
  if (hn_load_csv(MODEL, &g) || hn_load_csv(MODEL, &g2)) {
    fprintf(stderr, "bench_service: cannot read %s\n", MODEL);
    return 1;
  }
  g2.t[g2.n - 1].size += 64;
  struct harness h;
  hn_init(&h, "[daemon]\nlog_level = warning\n");
  double ready_us = start_timed(&h);
  struct timespec ts = {0, 300 * 1000000L};
  nanosleep(&ts, NULL);
  long idle_rss = hn_rss_kib(&h);

  struct graphs gs = {&g, &g2, NULL, 0};
  uint8_t *frame = hn_plan_frame(1, &g, "bench", 0, 64, 0, &gs.frame_len);
  gs.frame = frame;
  /* warm the cache with both graphs and learn the reply size */
  wire_free_response(plan_once(&h, &g2));
  Arenad__V1__Response *r = plan_once(&h, &g);
  size_t reply_len = protobuf_c_message_get_packed_size(&r->base);
  wire_free_response(r);

  struct echo e;
  echo_start(&e, h.dir, reply_len);

  printf("\n## Service (this machine; %s, %zu tensors; request %zu B, reply "
         "%zu B; medians of %d rounds, ratios with their range)\n\n",
         "mobilenet_v2", g.n, gs.frame_len, reply_len + 4, rounds);
  print_hits(&h, &e, &gs, rounds);
  hn_stop(&h);
  hn_cleanup(&h);
  free(frame);
  hn_graph_free(&g);
  hn_graph_free(&g2);

  print_misses(rounds);
  printf("| footprint | idle RSS %ld KiB | start to READY=1 %.1f ms |\n"
         "|---|---|---|\n\n",
         idle_rss, ready_us / 1000.0);
  return 0;
}

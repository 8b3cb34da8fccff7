/*
 * bench_service.c - arenad's service figures, all measured in one run on
 * this machine:
 *  - cache hits: latency (median, p99) and throughput with 1, 8 and 32
 *    concurrent clients, over the raw wire and through the client
 *    library (which also digests and verifies every plan);
 *  - the same figures for a bare echo server (below) that answers each
 *    request frame with a frame of the same size as arenad's reply, over
 *    the same kind of socket, and the ratio between the two;
 *  - misses: throughput of cold plans with 1 and 2 workers;
 *  - footprint: idle RSS and the time from exec to READY=1.
 * Times are wall clock; quote ratios, not absolute numbers.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

enum mode { MODE_WIRE, MODE_LIBRARY, MODE_ECHO };

struct worker {
  enum mode mode;
  const char *path;          /* socket */
  const struct hn_graph *g;
  const uint8_t *frame;      /* packed request (wire and echo) */
  size_t frame_len;
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

static void *run_worker(void *arg)
{
  struct worker *w = arg;
  uint8_t *buf = malloc(1 << 22);
  if (w->mode == MODE_LIBRARY) {
    struct arenad_client_options o;
    arenad_client_options_init(&o);
    o.socket_path = w->path;
    arenad_client_t *c;
    arenad_client_open(&o, &c);
    struct planner_graph g = {w->g->t, w->g->n};
    struct planner_options po;
    planner_options_init(&po);
    struct arenad_model_key k = {(const uint8_t *)"bench", 5, NULL, 0};
    for (int i = 0; i < w->n; i++) {
      struct arenad_client_result r;
      arenad_client_result_init(&r);
      double t0 = now_us();
      w->failures += arenad_client_plan(c, &g, &po, &k, &r) != 0 || !r.cached;
      w->lat[i] = now_us() - t0;
      arenad_client_result_cleanup(&r);
    }
    arenad_client_close(c);
  } else {
    int fd = connect_path(w->path);
    for (int i = 0; i < w->n; i++) {
      double t0 = now_us();
      w->failures += raw_roundtrip(fd, w->frame, w->frame_len, buf, 1 << 22) != 0;
      w->lat[i] = now_us() - t0;
    }
    close(fd);
  }
  free(buf);
  return NULL;
}

struct result {
  double p50, p99, rps;
  int failures;
};

static struct result run_load(enum mode mode, const char *path,
                              const struct hn_graph *g, const uint8_t *frame,
                              size_t frame_len, int clients, int per_client)
{
  struct worker *w = calloc((size_t)clients, sizeof *w);
  pthread_t *t = calloc((size_t)clients, sizeof *t);
  double *all = malloc(sizeof(double) * (size_t)clients * (size_t)per_client);
  double t0 = now_us();
  for (int i = 0; i < clients; i++) {
    w[i] = (struct worker){mode, path, g, frame, frame_len, per_client,
                           all + (size_t)i * (size_t)per_client, 0};
    pthread_create(&t[i], NULL, run_worker, &w[i]);
  }
  struct result r = {0};
  for (int i = 0; i < clients; i++) {
    pthread_join(t[i], NULL);
    r.failures += w[i].failures;
  }
  double secs = (now_us() - t0) / 1e6;
  size_t n = (size_t)clients * (size_t)per_client;
  qsort(all, n, sizeof *all, cmp_d);
  r.p50 = all[n / 2];
  r.p99 = all[n * 99 / 100];
  r.rps = (double)n / secs;
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
  int nfd = socket(AF_UNIX, SOCK_DGRAM, 0);
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

static void bench_misses(int workers)
{
  struct harness h;
  char conf[64];
  snprintf(conf, sizeof conf, "[daemon]\nworkers = %d\nlog_level = warning\n",
           workers);
  hn_init(&h, conf);
  hn_start(&h);
  enum { N = 64, CLIENTS = 4 };
  struct hn_graph g[N];
  for (int i = 0; i < N; i++)
    hn_random_graph(&g[i], 2000, 1000 + (uint64_t)i);
  double t0 = now_us();
  int done = 0, fails = 0;
  for (int base = 0; base < N; base += CLIENTS) {
    int fds[CLIENTS];
    for (int k = 0; k < CLIENTS; k++) {
      fds[k] = hn_connect(&h);
      hn_send_plan(fds[k], 1, &g[base + k], "miss", 0, 64, 0);
    }
    for (int k = 0; k < CLIENTS; k++) {
      Arenad__V1__Response *r = hn_recv(fds[k], 60000);
      fails += !r || r->status != ARENAD__V1__STATUS__OK;
      done++;
      wire_free_response(r);
      close(fds[k]);
    }
  }
  double secs = (now_us() - t0) / 1e6;
  printf("| misses, %d worker%s | %d cold plans of 2000 tensors | %.1f plans/s | failures %d |\n",
         workers, workers > 1 ? "s" : "", done, done / secs, fails);
  for (int i = 0; i < N; i++)
    hn_graph_free(&g[i]);
  hn_stop(&h);
  hn_cleanup(&h);
}

int main(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  signal(SIGPIPE, SIG_IGN);
  struct hn_graph g;
  if (hn_load_csv(MODEL, &g)) {
    fprintf(stderr, "bench_service: cannot read %s\n", MODEL);
    return 1;
  }
  struct harness h;
  hn_init(&h, "[daemon]\nlog_level = warning\n");
  double ready_us = start_timed(&h);
  struct timespec ts = {0, 300 * 1000000L};
  nanosleep(&ts, NULL);
  long idle_rss = hn_rss_kib(&h);

  size_t flen;
  uint8_t *frame = hn_plan_frame(1, &g, "bench", 0, 64, 0, &flen);
  /* warm the cache and learn the reply size */
  int fd = hn_connect(&h);
  hn_send_raw(fd, frame, flen);
  Arenad__V1__Response *r = hn_recv(fd, 30000);
  size_t reply_len = protobuf_c_message_get_packed_size(&r->base);
  wire_free_response(r);
  close(fd);

  struct echo e;
  echo_start(&e, h.dir, reply_len);

  printf("\n## Service (one run, this machine; %s, %zu tensors; request %zu B, reply %zu B)\n\n",
         "mobilenet_v2", g.n, flen, reply_len + 4);
  printf("| clients | path | p50 us | p99 us | req/s | vs echo p50 | vs echo req/s | failures |\n");
  printf("|---:|---|---:|---:|---:|---:|---:|---:|\n");
  int clients[] = {1, 8, 32};
  for (int k = 0; k < 3; k++) {
    int per = clients[k] == 1 ? 4000 : 16000 / clients[k];
    struct result ec = run_load(MODE_ECHO, e.path, &g, frame, flen, clients[k], per);
    struct result wi = run_load(MODE_WIRE, h.sock, &g, frame, flen, clients[k], per);
    struct result li = run_load(MODE_LIBRARY, h.sock, &g, frame, flen, clients[k], per);
    printf("| %d | bare echo | %.1f | %.1f | %.0f | 1.00 | 1.00 | %d |\n",
           clients[k], ec.p50, ec.p99, ec.rps, ec.failures);
    printf("| %d | arenad hit, raw wire | %.1f | %.1f | %.0f | %.2f | %.2f | %d |\n",
           clients[k], wi.p50, wi.p99, wi.rps, wi.p50 / ec.p50, ec.rps / wi.rps,
           wi.failures);
    printf("| %d | arenad hit, client library | %.1f | %.1f | %.0f | %.2f | %.2f | %d |\n",
           clients[k], li.p50, li.p99, li.rps, li.p50 / ec.p50, ec.rps / li.rps,
           li.failures);
  }
  printf("\n");
  hn_stop(&h);
  hn_cleanup(&h);
  free(frame);
  hn_graph_free(&g);

  printf("| measure | figure | | |\n|---|---|---|---|\n");
  bench_misses(1);
  bench_misses(2);
  printf("| footprint | idle RSS %ld KiB | start to READY=1 %.1f ms | |\n\n",
         idle_rss, ready_us / 1000.0);
  return 0;
}

/*
 * check_daemon.c - integration tests that start a real arenad on a
 * temporary socket and database and talk the wire protocol to it: the
 * cache path, restarts, single flight, bad peers, limits and signals.
 * (Load and fallback through the client library: check_service.c;
 * eviction: check_daemon_evict.c; use counts: check_daemon_uses.c;
 * SIGHUP while jobs run: check_daemon_reload.c; injected faults:
 * check_daemon_faults.c; the in-memory cache alone:
 * check_daemon_hotcache.c.)
 */
#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_daemon.h"
#include "testutil.h"
#include "wire.h"

#define MODEL "tests/data/models/person_detect.csv"

static Arenad__V1__Response *plan_once(const struct harness *h,
                                       const struct hn_graph *g,
                                       const char *hash, uint64_t rid)
{
  int fd = hn_connect(h);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(hn_send_plan(fd, rid, g, hash, 0, 64, 0), 0);
  Arenad__V1__Response *r = hn_recv(fd, 20000);
  close(fd);
  return r;
}

void cd_check_plan_reply(const Arenad__V1__Response *r,
                         const struct hn_graph *g, uint64_t rid)
{
  char err[ARENA_ERR_LEN];
  ck_assert_ptr_nonnull(r);
  ck_assert_msg(r->status == ARENAD__V1__STATUS__OK, "status %d: %s",
                r->status, r->error);
  ck_assert_uint_eq(r->request_id, rid);
  ck_assert_uint_eq(r->plan->graph_digest.len, 32);
  ck_assert_msg(hn_plan_reply_ok(r, g, err) == 0, "%s", err);
}

int cd_plan(const struct harness *h, const struct hn_graph *g,
            const char *hash, uint64_t rid)
{
  Arenad__V1__Response *r = plan_once(h, g, hash, rid);
  cd_check_plan_reply(r, g, rid);
  int cached = r->plan->cached;
  wire_free_response(r);
  return cached;
}

START_TEST(test_ping_and_version)
{
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  int fd = hn_connect(&h);
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Ping ping = ARENAD__V1__PING__INIT;
  ping.payload.data = (uint8_t *)"hello";
  ping.payload.len = 5;
  req.protocol_version = 1;
  req.request_id = 7;
  req.body_case = ARENAD__V1__REQUEST__BODY_PING;
  req.ping = &ping;
  ck_assert_int_eq(hn_send(fd, &req), 0);
  Arenad__V1__Response *r = hn_recv(fd, 5000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  ck_assert_uint_eq(r->request_id, 7);
  ck_assert_int_eq(r->body_case, ARENAD__V1__RESPONSE__BODY_PONG);
  ck_assert_uint_eq(r->pong->payload.len, 5);
  ck_assert_int_eq(memcmp(r->pong->payload.data, "hello", 5), 0);
  wire_free_response(r);
  /* an unknown protocol version gets its own status, and the
   * connection stays usable */
  req.protocol_version = 9;
  req.request_id = 8;
  ck_assert_int_eq(hn_send(fd, &req), 0);
  r = hn_recv(fd, 5000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__UNSUPPORTED_VERSION);
  wire_free_response(r);
  req.protocol_version = 1;
  ck_assert_int_eq(hn_send(fd, &req), 0);
  r = hn_recv(fd, 5000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  wire_free_response(r);
  close(fd);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

START_TEST(test_cache_path_and_restart)
{
  struct harness h;
  struct hn_graph g;
  ck_assert_int_eq(hn_load_csv(MODEL, &g), 0);
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  Arenad__V1__Response *a = plan_once(&h, &g, "person", 1);
  cd_check_plan_reply(a, &g, 1);
  ck_assert_int_eq(a->plan->cached, 0);
  Arenad__V1__Response *b = plan_once(&h, &g, "person", 2);
  cd_check_plan_reply(b, &g, 2);
  ck_assert_int_eq(b->plan->cached, 1);
  ck_assert_mem_eq(a->plan->offsets, b->plan->offsets, g.n * 8);
  ck_assert_int_eq(hn_stop(&h), 0);

  /* a new daemon on the same database serves it from sqlite */
  ck_assert_int_eq(hn_start(&h), 0);
  Arenad__V1__Response *c = plan_once(&h, &g, "person", 3);
  cd_check_plan_reply(c, &g, 3);
  ck_assert_int_eq(c->plan->cached, 1);
  ck_assert_mem_eq(a->plan->offsets, c->plan->offsets, g.n * 8);
  Arenad__V1__Response *st = hn_stats(&h);
  ck_assert_ptr_nonnull(st);
  ck_assert_uint_eq(st->stats->storage_hits, 1);
  ck_assert_uint_eq(st->stats->plans_computed, 0);
  ck_assert_uint_ge(st->stats->storage_entries, 1);
  wire_free_response(st);
  wire_free_response(a);
  wire_free_response(b);
  wire_free_response(c);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&g);
}
END_TEST

/* Many identical requests in flight at once cause one planning job. */
START_TEST(test_single_flight)
{
  struct harness h;
  struct hn_graph g;
  hn_random_graph(&g, 60000, 5);
  ck_assert_int_eq(hn_init(&h, "[daemon]\nworkers = 2\n"), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  enum { N = 12 };
  int fds[N];
  for (int i = 0; i < N; i++) {
    fds[i] = hn_connect(&h);
    ck_assert_int_ge(fds[i], 0);
  }
  /* exact with an effort keeps the job busy while the others arrive */
  for (int i = 0; i < N; i++)
    ck_assert_int_eq(hn_send_plan(fds[i], 100 + i, &g, "sf", 6, 64, 1500),
                     0);
  Arenad__V1__Response *first = NULL;
  for (int i = 0; i < N; i++) {
    Arenad__V1__Response *r = hn_recv(fds[i], 60000);
    cd_check_plan_reply(r, &g, 100 + i);
    if (!first)
      first = r;
    else {
      ck_assert_mem_eq(first->plan->offsets, r->plan->offsets, g.n * 8);
      wire_free_response(r);
    }
    close(fds[i]);
  }
  wire_free_response(first);
  Arenad__V1__Response *st = hn_stats(&h);
  ck_assert_ptr_nonnull(st);
  ck_assert_uint_eq(st->stats->plans_computed, 1);
  ck_assert_uint_eq(st->stats->single_flight_joined, N - 1);
  wire_free_response(st);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&g);
}
END_TEST

/* Sends a Plan of g on fd and asserts the status and, when msg is not
 * NULL, that the error text contains it. */
static void expect_status(int fd, const struct hn_graph *g, int algo,
                          Arenad__V1__Status want, const char *msg)
{
  ck_assert_int_eq(hn_send_plan(fd, 9, g, "bad", algo, 64, 0), 0);
  Arenad__V1__Response *r = hn_recv(fd, 20000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, want);
  if (msg)
    ck_assert_msg(strstr(r->error, msg) != NULL, "error '%s'", r->error);
  wire_free_response(r);
}

static void assert_still_serving(const struct harness *h)
{
  Arenad__V1__Response *st = hn_stats(h);
  ck_assert_ptr_nonnull(st);
  ck_assert_int_eq(st->status, ARENAD__V1__STATUS__OK);
  wire_free_response(st);
}

START_TEST(test_bad_peers)
{
  struct harness h;
  ck_assert_int_eq(
      hn_init(&h, "[limits]\nmax_frame_bytes = 1M\nidle_timeout_ms = 400\n"
                  "max_tensors = 1000\n"),
      0);
  ck_assert_int_eq(hn_start(&h), 0);

  /* zero-length frame: one INVALID_ARGUMENT reply, then closed */
  int fd = hn_connect(&h);
  ck_assert_int_eq(hn_send_raw(fd, "\0\0\0\0", 4), 0);
  Arenad__V1__Response *r = hn_recv(fd, 5000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__INVALID_ARGUMENT);
  wire_free_response(r);
  ck_assert(hn_wait_closed(fd, 5000));
  close(fd);
  assert_still_serving(&h);

  /* oversized header: TOO_LARGE before any body arrives */
  fd = hn_connect(&h);
  ck_assert_int_eq(hn_send_raw(fd, "\x7f\xff\xff\xff", 4), 0);
  r = hn_recv(fd, 5000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__TOO_LARGE);
  wire_free_response(r);
  ck_assert(hn_wait_closed(fd, 5000));
  close(fd);

  /* garbage that is not a protobuf Request */
  fd = hn_connect(&h);
  ck_assert_int_eq(hn_send_raw(fd, "\0\0\0\x08\xff\xff\xff\xff\xff\xff\xff\xff",
                               12),
                   0);
  r = hn_recv(fd, 5000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__INVALID_ARGUMENT);
  wire_free_response(r);
  ck_assert(hn_wait_closed(fd, 5000));
  close(fd);
  assert_still_serving(&h);

  /* truncated frame, then hang up */
  fd = hn_connect(&h);
  ck_assert_int_eq(hn_send_raw(fd, "\0\0\1\0abc", 7), 0);
  close(fd);

  /* a client that connects and never sends is closed at the idle timeout */
  fd = hn_connect(&h);
  ck_assert(hn_wait_closed(fd, 5000));
  close(fd);

  /* a request over the tensor limit */
  struct hn_graph g;
  hn_random_graph(&g, 1001, 1);
  fd = hn_connect(&h);
  expect_status(fd, &g, 0, ARENAD__V1__STATUS__TOO_LARGE, NULL);
  /* invalid graph: lifetime ends before it starts */
  g.n = 10;
  g.t[3].first = 9;
  g.t[3].last = 2;
  expect_status(fd, &g, 0, ARENAD__V1__STATUS__INVALID_ARGUMENT,
                "before it starts");
  close(fd);
  hn_graph_free(&g);

  Arenad__V1__Response *st = hn_stats(&h);
  ck_assert_ptr_nonnull(st);
  ck_assert_uint_ge(st->stats->protocol_errors, 3);
  wire_free_response(st);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* A client that disconnects mid-request cancels its job. */
START_TEST(test_disconnect_cancels)
{
  struct harness h;
  struct hn_graph g;
  hn_random_graph(&g, 60000, 9);
  /* Longer lifetimes than the generator's (up to 30 operators): with its
   * own, the planner reaches the load bound and ends long before the
   * disconnect. */
  for (size_t i = 0; i < g.n; i++)
    g.t[i].last += (int64_t)(i * 13 % 24);
  ck_assert_int_eq(hn_init(&h, "[planner]\nmax_effort = 20000\n"), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  int fd = hn_connect(&h);
  ck_assert_int_eq(hn_send_plan(fd, 1, &g, "gone", 6, 64, 20000), 0);
  struct timespec ts = {0, 300 * 1000000L};
  nanosleep(&ts, NULL);
  close(fd);
  /* the job stops long before its effort of 20000 is spent */
  int cancelled = 0;
  for (int i = 0; i < 100 && !cancelled; i++) {
    Arenad__V1__Response *st = hn_stats(&h);
    ck_assert_ptr_nonnull(st);
    cancelled = st->stats->jobs_cancelled == 1 && st->stats->jobs_queued == 0;
    wire_free_response(st);
    nanosleep(&ts, NULL);
  }
  ck_assert(cancelled);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&g);
}
END_TEST

START_TEST(test_max_connections_and_reload)
{
  struct harness h;
  ck_assert_int_eq(hn_init(&h, "[limits]\nmax_connections = 3\n"), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  int fds[4];
  for (int i = 0; i < 3; i++)
    fds[i] = hn_connect(&h);
  int extra = hn_connect(&h);
  Arenad__V1__Response *r = hn_recv(extra, 5000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__BUSY);
  wire_free_response(r);
  ck_assert(hn_wait_closed(extra, 5000));
  close(extra);

  /* raise the limit with SIGHUP: now a fourth connection is served */
  FILE *f = fopen(h.conf, "a");
  fprintf(f, "[limits]\nmax_connections = 10\n");
  fclose(f);
  kill(h.pid, SIGHUP);
  struct timespec ts = {0, 200 * 1000000L};
  nanosleep(&ts, NULL);
  fds[3] = hn_connect(&h);
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Ping ping = ARENAD__V1__PING__INIT;
  req.protocol_version = 1;
  req.request_id = 4;
  req.body_case = ARENAD__V1__REQUEST__BODY_PING;
  req.ping = &ping;
  ck_assert_int_eq(hn_send(fds[3], &req), 0);
  r = hn_recv(fds[3], 5000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  wire_free_response(r);
  for (int i = 0; i < 4; i++)
    close(fds[i]);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* Waits for the daemon, which was sent SIGTERM, to exit with status 0. */
static void assert_exits_0(struct harness *h)
{
  int st;
  ck_assert_int_eq(waitpid(h->pid, &st, 0), h->pid);
  h->pid = 0;
  ck_assert(WIFEXITED(st));
  ck_assert_int_eq(WEXITSTATUS(st), 0);
}

/* SIGTERM with a request in flight: it completes, then exit 0. */
START_TEST(test_sigterm_drains)
{
  struct harness h;
  struct hn_graph g;
  hn_random_graph(&g, 40000, 3);
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  int fd = hn_connect(&h);
  ck_assert_int_eq(hn_send_plan(fd, 77, &g, "drain", 6, 64, 800), 0);
  struct timespec ts = {0, 200 * 1000000L};
  nanosleep(&ts, NULL);
  kill(h.pid, SIGTERM);
  Arenad__V1__Response *r = hn_recv(fd, 20000);
  cd_check_plan_reply(r, &g, 77);
  wire_free_response(r);
  close(fd);
  assert_exits_0(&h);
  ck_assert_int_ne(access(h.sock, F_OK), 0); /* socket removed */
  hn_cleanup(&h);
  hn_graph_free(&g);
}
END_TEST

/* A live daemon is never displaced; a stale socket file is replaced. */
START_TEST(test_socket_ownership)
{
  struct harness h, h2;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  ck_assert_int_eq(hn_init(&h2, NULL), 0);
  FILE *f = fopen(h2.conf, "w");
  fprintf(f, "[daemon]\nsocket = %s\ndatabase = %s\n", h.sock, h2.db);
  fclose(f);
  snprintf(h2.sock, sizeof h2.sock, "%s", h.sock);
  pid_t pid = fork();
  if (pid == 0) {
    FILE *lf = freopen("/dev/null", "w", stderr);
    (void)lf;
    execl("build/arenad", "build/arenad", "--config", h2.conf, (char *)NULL);
    _exit(127);
  }
  int st;
  waitpid(pid, &st, 0);
  ck_assert(WIFEXITED(st));
  ck_assert_int_eq(WEXITSTATUS(st), 1);
  assert_still_serving(&h);
  /* SIGKILL leaves a stale socket file behind; a new daemon replaces it */
  kill(h.pid, SIGKILL);
  waitpid(h.pid, NULL, 0);
  h.pid = 0;
  ck_assert_int_eq(access(h.sock, F_OK), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  assert_still_serving(&h);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_cleanup(&h2);
}
END_TEST

/* arenactl plan MODEL.tflite through the daemon keys the plan by the
 * file's SHA-256 and the model's own input shape. */
START_TEST(test_tflite_key)
{
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  char cmd[1024];
  const char *model = "tests/data/models/person_detect.tflite";
  snprintf(cmd, sizeof cmd,
           "build/arenactl -s %s plan --no-fallback %s >/dev/null", h.sock,
           model);
  ck_assert_int_eq(system(cmd), 0);
  snprintf(cmd, sizeof cmd,
           "build/arenactl -s %s get --model-hash $(sha256sum %s | cut -c1-64)"
           " --shape 1x96x96x1 --json | grep -q '\"arena_bytes\":55296'",
           h.sock, model);
  ck_assert_int_eq(system(cmd), 0);
  /* another shape finds nothing (exit 1) */
  snprintf(cmd, sizeof cmd,
           "build/arenactl -s %s get --model-hash $(sha256sum %s | cut -c1-64)"
           " --shape 1x1 >/dev/null 2>&1",
           h.sock, model);
  ck_assert_int_eq(system(cmd) >> 8, 1);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* Runs build/arenactl (or $ARENACTL) with args against h; returns the
 * exit status and the owned stdout in *out. */
static int cli_out(const struct harness *h, const char *const *args,
                   char **out)
{
  const char *exe = getenv("ARENACTL");
  const char *argv[16] = {exe && *exe ? exe : "build/arenactl", "-s", h->sock};
  char out_path[300], err_path[300];
  int n = 3;
  while (*args && n < 15)
    argv[n++] = *args++;
  argv[n] = NULL;
  snprintf(out_path, sizeof out_path, "%s/cli.out", h->dir);
  snprintf(err_path, sizeof err_path, "%s/cli.err", h->dir);
  int st = tu_run(argv, NULL, NULL, out_path, err_path);
  *out = tu_read_file(out_path, NULL);
  ck_assert_ptr_nonnull(*out);
  return st;
}
#define CLI(h, out, ...) cli_out((h), (const char *const[]){__VA_ARGS__, NULL}, (out))

static void assert_contains(const char *hay, const char *needle)
{
  ck_assert_msg(strstr(hay, needle) != NULL, "'%s' not found in:\n%s",
                needle, hay);
}

static int count_of(const char *hay, const char *needle)
{
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

/* The part of plan --json output from "tensors" on: what a plan is,
 * without where it came from. */
static const char *plan_tensors(const char *json)
{
  const char *p = strstr(json, "\"tensors\":");
  ck_assert_msg(p != NULL, "no tensors in %s", json);
  return p;
}

/* plan --shape on a .tflite through arenad: the plan is sized for the
 * shape (as --local sizes it) and stored under that shape written in
 * full, so the batch alone and the full dims share one entry, and the
 * model's own shape finds nothing. A shape that does not apply stores
 * nothing. */
START_TEST(test_tflite_shape_key)
{
  struct harness h;
  char *daemon, *local, *out, hash[65];
  const char *model = "tests/data/models/hello_world_float.tflite";
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  ck_assert_int_eq(CLI(&h, &daemon, "plan", "--no-fallback", "--json",
                       "--shape", "4", model),
                   0);
  assert_contains(daemon, "\"cached\":false,\"local\":false");
  ck_assert_int_eq(CLI(&h, &local, "plan", "--local", "--json", "--shape",
                       "4x1", model),
                   0);
  ck_assert_str_eq(plan_tensors(daemon), plan_tensors(local));
  assert_contains(local, "\"arena_bytes\":512,"); /* 4 x the 128 of batch 1 */
  ck_assert_int_eq(CLI(&h, &out, "plan", "--no-fallback", "--json",
                       "--shape", "4x1", model),
                   0);
  assert_contains(out, "\"cached\":true");
  ck_assert_str_eq(plan_tensors(out), plan_tensors(local));
  free(out);
  FILE *f = popen("sha256sum tests/data/models/hello_world_float.tflite", "r");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fscanf(f, "%64s", hash), 1);
  pclose(f);
  ck_assert_int_eq(CLI(&h, &out, "get", "--model-hash", hash, "--shape",
                       "4x1", "--json"),
                   0);
  assert_contains(out, "\"arena_bytes\":512,");
  free(out);
  ck_assert_int_eq(CLI(&h, &out, "get", "--model-hash", hash, "--shape",
                       "1x1"),
                   1);
  free(out);
  ck_assert_int_eq(CLI(&h, &out, "get", "--model-hash", hash, "--shape",
                       "4"),
                   1);
  free(out);
  ck_assert_int_eq(CLI(&h, &out, "plan", "--no-fallback", "--shape", "4x2",
                       model),
                   65);
  ck_assert_str_eq(out, "");
  free(out);
  ck_assert_int_eq(CLI(&h, &out, "ls", "--json"), 0);
  ck_assert_int_eq(count_of(out, "\"key\":"), 1); /* the one plan above */
  free(out);
  free(daemon);
  free(local);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

START_TEST(test_check_config)
{
  ck_assert_int_eq(system("build/arenad --check-config --config /nonexistent "
                          ">/dev/null 2>&1") >> 8,
                   78);
  ck_assert_int_eq(system("build/arenad --bogus >/dev/null 2>&1") >> 8, 64);
  ck_assert_int_eq(system("build/arenad --workers 0 >/dev/null 2>&1") >> 8, 64);
  ck_assert_int_eq(system("build/arenad --check-config -s /tmp/x.sock "
                          "| grep -q 'socket = /tmp/x.sock'"),
                   0);
  ck_assert_int_eq(system("build/arenad --help | grep -q Usage"), 0);
}
END_TEST

/* Adds a test case whose tests another file of the suite adds. */
static void add_case(Suite *s, const char *name, int timeout_s,
                     void (*adder)(TCase *))
{
  TCase *tc = tcase_create(name);
  tcase_set_timeout(tc, timeout_s);
  adder(tc);
  suite_add_tcase(s, tc);
}

/* Near 2^63 through the daemon: padded sizes past the largest arena are
 * INVALID_ARGUMENT (arenactl: exit 65), and the daemon keeps serving; a
 * plan whose offsets and arena are just inside the limit is stored and
 * served back from sqlite after a restart, exactly. */
START_TEST(test_overflow_through_daemon)
{
  const uint64_t lim = UINT64_MAX / 2, a32 = 1ull << 32;
  struct planner_tensor over[2] = {
      {1, lim - 2 * a32, 0, 1, 0, PLANNER_NOT_PINNED},
      {2, lim - a32 / 2, 1, 2, a32, PLANNER_NOT_PINNED},
  };
  struct planner_tensor edge[2] = {
      {1, 1ull << 62, 0, 1, 0, PLANNER_NOT_PINNED},
      {2, (1ull << 62) - 256, 1, 2, 0, PLANNER_NOT_PINNED},
  };
  struct hn_graph go = {over, 2}, ge = {edge, 2};
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  for (int algo = 0; algo <= 6; algo += 6) { /* best and exact */
    int fd = hn_connect(&h);
    expect_status(fd, &go, algo, ARENAD__V1__STATUS__INVALID_ARGUMENT,
                  "exceed 2^63 - 1 bytes");
    close(fd);
  }
  assert_still_serving(&h);
  char csv[600], cmd[1600];
  snprintf(csv, sizeof csv, "%s/over.csv", h.dir);
  FILE *f = fopen(csv, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "id,size,first,last,align\n1,%llu,0,1,0\n2,%llu,1,2,%llu\n",
          (unsigned long long)over[0].size, (unsigned long long)over[1].size,
          (unsigned long long)a32);
  fclose(f);
  snprintf(cmd, sizeof cmd, "build/arenactl -s %s plan --no-fallback %s "
           ">/dev/null 2>&1", h.sock, csv);
  ck_assert_int_eq(system(cmd) >> 8, 65);
  /* naive stacks the edge graph's tensors: offsets 0 and 2^62, arena
   * 2^63 - 256 */
  Arenad__V1__Response *a = NULL;
  int fd = hn_connect(&h);
  ck_assert_int_eq(hn_send_plan(fd, 6, &ge, "edge", 1, 64, 0), 0);
  a = hn_recv(fd, 20000);
  close(fd);
  cd_check_plan_reply(a, &ge, 6);
  ck_assert_uint_eq(a->plan->arena_bytes, lim - 255);
  ck_assert_uint_eq(a->plan->offsets[1], 1ull << 62);
  ck_assert_int_eq(hn_stop(&h), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  fd = hn_connect(&h);
  ck_assert_int_eq(hn_send_plan(fd, 7, &ge, "edge", 1, 64, 0), 0);
  Arenad__V1__Response *b = hn_recv(fd, 20000);
  close(fd);
  cd_check_plan_reply(b, &ge, 7);
  ck_assert_int_eq(b->plan->cached, 1);
  ck_assert_uint_eq(b->plan->arena_bytes, a->plan->arena_bytes);
  ck_assert_uint_eq(b->plan->lower_bound_bytes, a->plan->lower_bound_bytes);
  ck_assert_uint_eq(b->plan->naive_bytes, a->plan->naive_bytes);
  ck_assert_mem_eq(b->plan->offsets, a->plan->offsets, 2 * 8);
  wire_free_response(a);
  wire_free_response(b);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* Whether fd has bytes to read right now. */
static int readable(int fd)
{
  struct pollfd p = {fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

/* Receives one reply on fd, which must be an OK plan of g. */
static Arenad__V1__Response *plan_reply(int fd, const struct hn_graph *g,
                                        uint64_t rid)
{
  Arenad__V1__Response *r = hn_recv(fd, 120000);
  cd_check_plan_reply(r, g, rid);
  return r;
}

/* Loads MiniMalloc's instance `name` from the test data into g, and
 * starts a daemon with configuration conf in h. */
static void start_on(struct harness *h, const char *conf, const char *name,
                     struct hn_graph *g)
{
  char path[128];
  snprintf(path, sizeof path, "tests/data/minimalloc/%s.1048576.csv", name);
  ck_assert_int_eq(hn_load_csv(path, g), 0);
  ck_assert_int_eq(hn_init(h, conf), 0);
  ck_assert_int_eq(hn_start(h), 0);
}

/* Asserts that reply r holds the plan planner_run() makes of g with
 * algorithm algo, alignment 64 and the given effort, node for node. */
static void assert_plan_of_effort(const Arenad__V1__Response *r,
                                  const struct hn_graph *g,
                                  enum planner_algo algo, uint32_t effort)
{
  struct planner_graph pg = {g->t, g->n};
  struct planner_options o;
  planner_options_init(&o);
  o.algo = algo;
  o.effort = effort;
  struct planner_plan p;
  planner_plan_init(&p);
  ck_assert_int_eq(planner_run(&pg, &o, &p, NULL), 0);
  ck_assert_uint_gt(p.nodes_explored, 0);
  ck_assert_uint_eq(r->plan->nodes_explored, p.nodes_explored);
  ck_assert_mem_eq(r->plan->offsets, p.offsets, g->n * 8);
  planner_plan_cleanup(&p);
}

/* max_effort caps every request, and long searches never take the last
 * worker. With 2 workers and max_effort 2000, three clients ask for the
 * largest effort there is on MiniMalloc's D and E, which no search
 * finishes within that effort: two run, the third waits for one of them.
 * A fourth client's cache miss on a small graph must be answered while
 * both searches still run. The capped plans are those of effort 2000,
 * and a request at the cap shares the capped one's plan. */
START_TEST(test_max_effort_spare_worker)
{
  struct hn_graph d, e, small;
  ck_assert_int_eq(hn_load_csv("tests/data/minimalloc/E.1048576.csv", &e), 0);
  hn_random_graph(&small, 200, 11);
  struct harness h;
  start_on(&h, "workers = 2\n[planner]\nmax_effort = 2000\n", "D", &d);
  int fa = hn_connect(&h), fb = hn_connect(&h), fx = hn_connect(&h);
  ck_assert_int_ge(fa, 0);
  ck_assert_int_ge(fb, 0);
  ck_assert_int_ge(fx, 0);
  ck_assert_int_eq(hn_send_plan(fa, 1, &d, "max-a", 6, 64, UINT32_MAX), 0);
  ck_assert_int_eq(hn_send_plan(fb, 2, &e, "max-b", 6, 64, UINT32_MAX), 0);
  ck_assert_int_eq(hn_send_plan(fx, 3, &d, "max-x", 6, 64, UINT32_MAX), 0);
  struct timespec ts = {0, 300 * 1000000L};
  nanosleep(&ts, NULL); /* both searches are running */
  Arenad__V1__Response *st = hn_stats(&h);
  ck_assert_ptr_nonnull(st);
  ck_assert_uint_eq(st->stats->jobs_queued, 3);
  wire_free_response(st);
  int fc = hn_connect(&h);
  ck_assert_int_ge(fc, 0);
  ck_assert_int_eq(hn_send_plan(fc, 4, &small, "small", 0, 64, 0), 0);
  Arenad__V1__Response *rc = plan_reply(fc, &small, 4);
  ck_assert_int_eq(rc->plan->cached, 0);
  /* Answered, and no maximal search has finished yet. */
  ck_assert_msg(!readable(fa) && !readable(fb) && !readable(fx),
                "a maximal search finished before the small miss was served");
  wire_free_response(rc);
  close(fc);
  /* The third maximal search waited for a slot: it cannot come first. */
  struct pollfd p[3] = {{fa, POLLIN, 0}, {fb, POLLIN, 0}, {fx, POLLIN, 0}};
  ck_assert_int_ge(poll(p, 3, 120000), 1);
  ck_assert_msg(!(p[2].revents & POLLIN) || (p[0].revents & POLLIN) ||
                    (p[1].revents & POLLIN),
                "the third maximal search ran before a slot was free");
  Arenad__V1__Response *ra = plan_reply(fa, &d, 1);
  Arenad__V1__Response *rb = plan_reply(fb, &e, 2);
  Arenad__V1__Response *rx = plan_reply(fx, &d, 3);
  /* Capped at 2000: the plan of effort 2000, node for node; no search
   * could finish. */
  assert_plan_of_effort(ra, &d, PLANNER_ALGO_EXACT, 2000);
  assert_plan_of_effort(rx, &d, PLANNER_ALGO_EXACT, 2000);
  ck_assert_int_eq(ra->plan->proven_optimal, 0);
  ck_assert_int_eq(rb->plan->proven_optimal, 0);
  /* A request at the cap shares the capped request's plan. */
  ck_assert_int_eq(hn_send_plan(fa, 5, &d, "max-a", 6, 64, 2000), 0);
  Arenad__V1__Response *r2 = plan_reply(fa, &d, 5);
  ck_assert_int_eq(r2->plan->cached, 1);
  ck_assert_mem_eq(r2->plan->offsets, ra->plan->offsets, d.n * 8);
  wire_free_response(r2);
  wire_free_response(ra);
  wire_free_response(rb);
  wire_free_response(rx);
  close(fa);
  close(fb);
  close(fx);
  ck_assert_int_eq(hn_stop(&h), 0);
  char *log = tu_read_file(h.log, NULL);
  ck_assert_ptr_nonnull(log);
  ck_assert_ptr_nonnull(strstr(log, "capped at max_effort 2000"));
  free(log);
  hn_cleanup(&h);
  hn_graph_free(&d);
  hn_graph_free(&e);
  hn_graph_free(&small);
}
END_TEST

/* A long job waiting for a slot: cancelled at once when its client goes
 * away, while the running one goes on; and on SIGTERM a waiting job still
 * runs and is answered before the daemon exits. One worker, so one long
 * slot. */
START_TEST(test_waiting_long_jobs)
{
  struct hn_graph d;
  struct harness h;
  start_on(&h, "workers = 1\n[planner]\nmax_effort = 1500\n"
               "[limits]\ndrain_timeout_ms = 120000\n", "D", &d);
  int fa = hn_connect(&h), fb = hn_connect(&h);
  ck_assert_int_eq(hn_send_plan(fa, 1, &d, "wait-a", 6, 64, 1500), 0);
  ck_assert_int_eq(hn_send_plan(fb, 2, &d, "wait-b", 6, 64, 1500), 0);
  nanosleep(&(struct timespec){0, 200 * 1000000L}, NULL);
  close(fb); /* b waits behind a: cancelled without running */
  int gone = 0;
  for (int i = 0; i < 50 && !gone; i++) {
    Arenad__V1__Response *st = hn_stats(&h);
    ck_assert_ptr_nonnull(st);
    gone = st->stats->jobs_cancelled == 1 && st->stats->jobs_queued == 1;
    wire_free_response(st);
    if (!gone)
      nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
  }
  ck_assert_msg(gone, "the waiting job was not cancelled");
  ck_assert(!readable(fa)); /* a still runs */
  /* Another waiter behind a, then SIGTERM: both are answered. */
  int fc = hn_connect(&h);
  ck_assert_int_eq(hn_send_plan(fc, 3, &d, "wait-c", 6, 64, 1500), 0);
  nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
  kill(h.pid, SIGTERM);
  Arenad__V1__Response *ra = plan_reply(fa, &d, 1);
  Arenad__V1__Response *rc = plan_reply(fc, &d, 3);
  ck_assert_mem_eq(ra->plan->offsets, rc->plan->offsets, d.n * 8);
  wire_free_response(ra);
  wire_free_response(rc);
  close(fa);
  close(fc);
  assert_exits_0(&h);
  hn_cleanup(&h);
  hn_graph_free(&d);
}
END_TEST


/* The effort keys: default_effort and max_effort are printed, the old
 * default_budget_ms still sets default_effort, with a warning, and a
 * default above the cap is a configuration error. */
START_TEST(test_effort_config)
{
  char *dir = tu_mkdtemp();
  ck_assert_ptr_nonnull(dir);
  char conf[600], out[600], err[600], cmd[2400];
  snprintf(conf, sizeof conf, "%s/a.conf", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  snprintf(err, sizeof err, "%s/err", dir);
  FILE *f = fopen(conf, "w");
  ck_assert_ptr_nonnull(f);
  fputs("[planner]\ndefault_budget_ms = 45\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "build/arenad --check-config --config %s >%s "
           "2>%s", conf, out, err);
  ck_assert_int_eq(system(cmd), 0);
  char *o = tu_read_file(out, NULL), *e = tu_read_file(err, NULL);
  ck_assert_ptr_nonnull(o);
  ck_assert_ptr_nonnull(e);
  ck_assert_ptr_nonnull(strstr(o, "\ndefault_effort = 45\n"));
  ck_assert_ptr_nonnull(strstr(o, "\nmax_effort = 400\n"));
  ck_assert_ptr_null(strstr(o, "budget"));
  ck_assert_str_eq(e, "arenad: warning: planner.default_budget_ms is "
                      "deprecated; use planner.default_effort (the same "
                      "number, in effort units)\n");
  free(o);
  free(e);
  f = fopen(conf, "w");
  ck_assert_ptr_nonnull(f);
  fputs("[planner]\ndefault_effort = 500\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "build/arenad --check-config --config %s "
           ">/dev/null 2>%s", conf, err);
  ck_assert_int_eq(system(cmd) >> 8, 78);
  e = tu_read_file(err, NULL);
  ck_assert_ptr_nonnull(e);
  ck_assert_ptr_nonnull(strstr(e, "default_effort is above"));
  free(e);
  tu_rm_rf(dir);
  free(dir);
}
END_TEST

/* The effort keys of a running daemon: with the old key
 * default_budget_ms it logs the deprecation and plans a request that
 * names no effort with the configured one; a request with the largest
 * effort gets the plan of max_effort, and of the new max_effort after
 * SIGHUP. Each the same plan, node for node, as planner_run() with that
 * effort. */
START_TEST(test_effort_keys_applied)
{
  struct hn_graph e;
  struct harness h;
  start_on(&h, "[planner]\ndefault_budget_ms = 7\nmax_effort = 30\n", "E",
           &e);
  Arenad__V1__Response *r = plan_once(&h, &e, "eff", 1);
  cd_check_plan_reply(r, &e, 1);
  assert_plan_of_effort(r, &e, PLANNER_ALGO_BEST, 7);
  wire_free_response(r);
  static const uint32_t caps[] = {30, 60};
  for (int i = 0; i < 2; i++) {
    if (i) {
      FILE *f = fopen(h.conf, "a");
      ck_assert_ptr_nonnull(f);
      fprintf(f, "max_effort = %u\n", caps[i]);
      fclose(f);
      kill(h.pid, SIGHUP);
      nanosleep(&(struct timespec){0, 300 * 1000000L}, NULL);
    }
    char hash[16];
    snprintf(hash, sizeof hash, "reload-%d", i);
    int fd = hn_connect(&h);
    ck_assert_int_eq(hn_send_plan(fd, 1, &e, hash, 6, 64, UINT32_MAX), 0);
    r = plan_reply(fd, &e, 1);
    close(fd);
    assert_plan_of_effort(r, &e, PLANNER_ALGO_EXACT, caps[i]);
    wire_free_response(r);
  }
  ck_assert_int_eq(hn_stop(&h), 0);
  char *log = tu_read_file(h.log, NULL);
  ck_assert_ptr_nonnull(log);
  ck_assert_ptr_nonnull(strstr(log, "planner.default_budget_ms is "
                                    "deprecated"));
  free(log);
  hn_cleanup(&h);
  hn_graph_free(&e);
}
END_TEST

Suite *daemon_suite(void)
{
  Suite *s = suite_create("daemon");
  TCase *tc = tcase_create("daemon");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_ping_and_version);
  tcase_add_test(tc, test_cache_path_and_restart);
  tcase_add_test(tc, test_single_flight);
  tcase_add_test(tc, test_bad_peers);
  tcase_add_test(tc, test_disconnect_cancels);
  tcase_add_test(tc, test_max_connections_and_reload);
  tcase_add_test(tc, test_sigterm_drains);
  tcase_add_test(tc, test_socket_ownership);
  tcase_add_test(tc, test_check_config);
  tcase_add_test(tc, test_effort_config);
  tcase_add_test(tc, test_max_effort_spare_worker);
  tcase_add_test(tc, test_waiting_long_jobs);
  tcase_add_test(tc, test_overflow_through_daemon);
  tcase_add_test(tc, test_effort_keys_applied);
  tcase_add_test(tc, test_tflite_key);
  tcase_add_test(tc, test_tflite_shape_key);
  suite_add_tcase(s, tc);
  add_case(s, "evict", 60, cd_add_evict_tests);
  add_case(s, "uses", 120, cd_add_uses_tests);
  add_case(s, "reload", 120, cd_add_reload_tests);
  add_case(s, "faults", 60, cd_add_faults_tests);
  add_case(s, "hotcache", 30, cd_add_hotcache_tests);
  return s;
}

/*
 * check_daemon.c - integration tests that start a real arenad on a
 * temporary socket and database and talk the wire protocol to it: the
 * cache path, restarts, single flight, bad peers, limits and signals.
 * (Load and fallback through the client library: check_service.c;
 * effort and max_effort: check_daemon_effort.c; eviction:
 * check_daemon_evict.c; use counts: check_daemon_uses.c;
 * SIGHUP while jobs run: check_daemon_reload.c; injected faults:
 * check_daemon_faults.c; the in-memory cache alone:
 * check_daemon_hotcache.c; in-place sharing: check_daemon_share.c;
 * the status of malformed requests: check_daemon_status.c;
 * restarts after SIGKILL: check_daemon_restart.c; connection limits:
 * check_daemon_lockout.c; replies a peer does not read:
 * check_daemon_unread.c; what the configuration file refuses:
 * check_daemon_config.c; the acknowledgement of accepted work:
 * check_daemon_ack.c.)
 */
#include <check.h>
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

Arenad__V1__Response *cd_plan_once(const struct harness *h,
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
  Arenad__V1__Response *r = cd_plan_once(h, g, hash, rid);
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
  Arenad__V1__Response *a = cd_plan_once(&h, &g, "person", 1);
  cd_check_plan_reply(a, &g, 1);
  ck_assert_int_eq(a->plan->cached, 0);
  Arenad__V1__Response *b = cd_plan_once(&h, &g, "person", 2);
  cd_check_plan_reply(b, &g, 2);
  ck_assert_int_eq(b->plan->cached, 1);
  ck_assert_mem_eq(a->plan->offsets, b->plan->offsets, g.n * 8);
  ck_assert_int_eq(hn_stop(&h), 0);

  /* a new daemon on the same database serves it from sqlite */
  ck_assert_int_eq(hn_start(&h), 0);
  Arenad__V1__Response *c = cd_plan_once(&h, &g, "person", 3);
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
  expect_status(fd, &g, 0, ARENAD__V1__STATUS__TOO_LARGE,
                "graph has 1001 tensors, over max_tensors (1000)");
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

/* Waits for the daemon, which was sent SIGTERM, to exit with status 0. */
void cd_assert_exits_0(struct harness *h)
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
  cd_assert_exits_0(&h);
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
    const char *bin = tu_bin("ARENAD");
    execl(bin, bin, "--config", h2.conf, (char *)NULL);
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
  const char *ctl = tu_bin("ARENACTL");
  snprintf(cmd, sizeof cmd, "'%s' -s %s plan --no-fallback %s >/dev/null",
           ctl, h.sock, model);
  ck_assert_int_eq(system(cmd), 0);
  snprintf(cmd, sizeof cmd,
           "'%s' -s %s get --model-hash $(sha256sum %s | cut -c1-64)"
           " --shape 1x96x96x1 --json | grep -q '\"arena_bytes\":55296'",
           ctl, h.sock, model);
  ck_assert_int_eq(system(cmd), 0);
  /* another shape finds nothing (exit 1) */
  snprintf(cmd, sizeof cmd,
           "'%s' -s %s get --model-hash $(sha256sum %s | cut -c1-64)"
           " --shape 1x1 >/dev/null 2>&1",
           ctl, h.sock, model);
  ck_assert_int_eq(system(cmd) >> 8, 1);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* Runs arenactl ($ARENACTL) with args against h; returns the exit
 * status and the owned stdout in *out. */
static int cli_out(const struct harness *h, const char *const *args,
                   char **out)
{
  const char *argv[16] = {tu_bin("ARENACTL"), "-s", h->sock};
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
  static const struct {
    const char *args; /* after the binary */
    int status;       /* system()'s exit status */
  } runs[] = {
      {"--check-config --config /nonexistent >/dev/null 2>&1", 78},
      /* a directory opens, then cannot be read: refused, not empty */
      {"--check-config --config / 2>&1 | grep -q 'cannot read it: Is a "
       "directory'", 0},
      {"--check-config --config / >/dev/null 2>&1", 78},
      {"--bogus >/dev/null 2>&1", 64},
      {"--workers 0 >/dev/null 2>&1", 64},
      {"--check-config -s /tmp/x.sock | grep -q 'socket = /tmp/x.sock'", 0},
      {"--help | grep -q Usage", 0},
  };
  const char *bin = tu_bin("ARENAD");
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s", bin, runs[i].args);
    ck_assert_msg(system(cmd) >> 8 == runs[i].status, "%s", cmd);
  }
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
      {1, lim - 2 * a32, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
      {2, lim - a32 / 2, 1, 2, a32, PLANNER_NOT_PINNED, 0, 0},
  };
  struct planner_tensor edge[2] = {
      {1, 1ull << 62, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
      {2, (1ull << 62) - 256, 1, 2, 0, PLANNER_NOT_PINNED, 0, 0},
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
  snprintf(cmd, sizeof cmd, "'%s' -s %s plan --no-fallback %s "
           ">/dev/null 2>&1", tu_bin("ARENACTL"), h.sock, csv);
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
  tcase_add_test(tc, test_sigterm_drains);
  tcase_add_test(tc, test_socket_ownership);
  tcase_add_test(tc, test_check_config);
  tcase_add_test(tc, test_overflow_through_daemon);
  tcase_add_test(tc, test_tflite_key);
  tcase_add_test(tc, test_tflite_shape_key);
  suite_add_tcase(s, tc);
  add_case(s, "effort", 120, cd_add_effort_tests);
  add_case(s, "evict", 60, cd_add_evict_tests);
  add_case(s, "uses", 120, cd_add_uses_tests);
  add_case(s, "reload", 120, cd_add_reload_tests);
  add_case(s, "faults", 60, cd_add_faults_tests);
  add_case(s, "hotcache", 30, cd_add_hotcache_tests);
  add_case(s, "share", 120, cd_add_share_tests);
  add_case(s, "status", 60, cd_add_status_tests);
  add_case(s, "restart", 120, cd_add_restart_tests);
  add_case(s, "lockout", 120, cd_add_lockout_tests);
  add_case(s, "unread", 60, cd_add_unread_tests);
  add_case(s, "config", 60, cd_add_config_tests);
  add_case(s, "ack", 60, cd_add_ack_tests);
  add_case(s, "improve", 180, cd_add_improve_tests);
  add_case(s, "window", 120, cd_add_window_tests);
  add_case(s, "bundles", 120, cd_add_bundles_tests);
  return s;
}

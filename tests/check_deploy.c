/*
 * check_deploy.c - arenad as a systemd service, proven without a running
 * systemd: the units and man pages (through tests/deploy.sh), install
 * and packaging, the sd_notify protocol as a service manager sees it,
 * socket activation, and who may connect.
 *
 * DESIGN
 *  The static checks (systemd-analyze verify and security, groff, the
 *  install tree, the .deb, the maintainer scripts, the symbols the client
 *  library exports, the daemon's system calls and files traced against
 *  the unit's sandbox) are shell work;
 *  each is one step of tests/deploy.sh, run by check_deploy_static.c
 *  and judged by its exit status and output. The runtime checks play
 *  systemd's part in C: a datagram socket
 *  in NOTIFY_SOCKET that the test reads, a launcher that passes a
 *  listening socket as fd 3 with LISTEN_FDS/LISTEN_PID set in the child
 *  after fork (so LISTEN_PID is the daemon's own pid), and setpriv(1) to
 *  run clients as other users against a daemon that runs as an
 *  unprivileged user itself.
 *
 *  Binaries come from DEPLOY_BUILD (the Makefile's BUILD); the example
 *  client is compiled with DEPLOY_SANFLAGS because a sanitized library
 *  needs the sanitizer runtime in the program that links it.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_deploy.h"
#include "daemon_harness.h"
#include "testutil.h"
#include "wire.h"

#define DAEMON_UID 61234 /* the unprivileged user the daemon runs as */
#define CLIENT_UID 65534 /* nobody */
#define LISTED_UID 61235 /* a client named in allow_uids */
#define NOTIFY_MAX 1024  /* bytes of one sd_notify datagram we keep */

/* ---- helpers ------------------------------------------------------------ */

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Runs argv with stdout and stderr captured into *out (owned, free()).
 * Returns the exit status, or -1 when it could not run or was killed. */
int cdp_run_capture(char *const argv[], char **out)
{
  int p[2];
  *out = NULL;
  if (pipe(p) != 0)
    return -1;
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    dup2(p[1], 1);
    dup2(p[1], 2);
    close(p[0]);
    close(p[1]);
    execvp(argv[0], argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(p[1]);
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  ssize_t n;
  while (buf) {
    if (len + 1024 > cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    n = read(p[0], buf + len, cap - len - 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  close(p[0]);
  if (buf)
    buf[len] = '\0';
  *out = buf;
  int st;
  if (waitpid(pid, &st, 0) != pid)
    return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A datagram socket at dir/notify.sock that stands in for systemd's. */
static int notify_open(const char *dir, char path[108])
{
  snprintf(path, 108, "%s/notify.sock", dir);
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  return fd;
}

/* Receives one notification within timeout_ms into buf (NUL-terminated).
 * Returns its length, or -1 on a timeout. */
static int notify_recv(int fd, char buf[NOTIFY_MAX], int timeout_ms)
{
  struct pollfd p = {fd, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) != 1)
    return -1;
  ssize_t n = recv(fd, buf, NOTIFY_MAX - 1, 0);
  if (n < 0)
    return -1;
  buf[n] = '\0';
  return (int)n;
}

/* Waits for a notification that contains `what`; returns 0 or -1. Other
 * notifications are read and dropped. */
static int notify_wait(int fd, const char *what, int timeout_ms,
                       char buf[NOTIFY_MAX])
{
  double end = now_s() + timeout_ms / 1000.0;
  while (now_s() < end) {
    int left = (int)((end - now_s()) * 1000) + 1;
    if (notify_recv(fd, buf, left) < 0)
      return -1;
    if (strstr(buf, what))
      return 0;
  }
  return -1;
}

/* How the test's stand-in for systemd starts the daemon. */
struct launch {
  const char *notify;   /* NOTIFY_SOCKET, or NULL */
  const char *watchdog; /* WATCHDOG_USEC, or NULL */
  int listen_fd;        /* passed as fd 3 with LISTEN_FDS=1, or -1 */
  int wrong_listen_pid; /* LISTEN_PID names another process */
  const char *const *wrap; /* argv prefix (e.g. setpriv ...), NULL-ended */
  const char *bin;      /* the daemon binary; NULL: DEPLOY_BUILD/arenad */
};

/* Forks and execs the daemon with h's config. The child sets every
 * variable that names it (LISTEN_PID, WATCHDOG_PID) after the fork, so
 * they hold the pid the daemon will run under. Does not wait. */
static void launch(struct harness *h, const struct launch *l)
{
  char bin[512];
  snprintf(bin, sizeof bin, "%s", l->bin ? l->bin : DEPLOY_BUILD "/arenad");
  pid_t parent = getpid();
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    char n[32];
    FILE *lf = freopen(h->log, "a", stderr);
    (void)lf;
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDNAMES");
    if (l->notify)
      setenv("NOTIFY_SOCKET", l->notify, 1);
    if (l->watchdog) {
      setenv("WATCHDOG_USEC", l->watchdog, 1);
      snprintf(n, sizeof n, "%ld", (long)getpid());
      setenv("WATCHDOG_PID", n, 1);
    }
    if (l->listen_fd >= 0) {
      if (l->listen_fd != 3) {
        dup2(l->listen_fd, 3);
        close(l->listen_fd);
      }
      fcntl(3, F_SETFD, 0); /* survive exec */
      setenv("LISTEN_FDS", "1", 1);
      snprintf(n, sizeof n, "%ld",
               (long)(l->wrong_listen_pid ? parent : getpid()));
      setenv("LISTEN_PID", n, 1);
    }
    const char *argv[16];
    int k = 0;
    for (int i = 0; l->wrap && l->wrap[i] && k < 12; i++)
      argv[k++] = l->wrap[i];
    argv[k++] = bin;
    argv[k++] = "--config";
    argv[k++] = h->conf;
    argv[k] = NULL;
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  h->pid = pid;
}

/* Waits until h->sock accepts a connection; 0 or -1 (daemon died). */
static int wait_accepting(struct harness *h)
{
  for (int i = 0; i < 1000; i++) {
    int fd = hn_connect(h);
    if (fd >= 0) {
      close(fd);
      return 0;
    }
    int st;
    if (waitpid(h->pid, &st, WNOHANG) == h->pid) {
      h->pid = 0;
      return -1;
    }
    sleep_ms(10);
  }
  return -1;
}

static int connect_path(const char *path)
{
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int listen_path(const char *path)
{
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(fd, 16), 0);
  return fd;
}

/* One Ping round trip on fd; asserts the pong. */
static void ping_fd(int fd, uint64_t rid)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Ping ping = ARENAD__V1__PING__INIT;
  ping.payload.data = (uint8_t *)"deploy";
  ping.payload.len = 6;
  req.protocol_version = 1;
  req.request_id = rid;
  req.body_case = ARENAD__V1__REQUEST__BODY_PING;
  req.ping = &ping;
  ck_assert_int_eq(hn_send(fd, &req), 0);
  Arenad__V1__Response *r = hn_recv(fd, 10000);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  ck_assert_int_eq(r->body_case, ARENAD__V1__RESPONSE__BODY_PONG);
  ck_assert_uint_eq(r->request_id, rid);
  wire_free_response(r);
}

/* One Plan on fd for g; asserts a verified plan and returns `cached`. */
static int plan_fd(int fd, const struct hn_graph *g, const char *hash,
                   uint64_t rid)
{
  ck_assert_int_eq(hn_send_plan(fd, rid, g, hash, 0, 64, 0), 0);
  Arenad__V1__Response *r = hn_recv(fd, 20000);
  char err[ARENA_ERR_LEN];
  ck_assert_msg(hn_plan_reply_ok(r, g, err) == 0, "%s", err);
  int cached = r->plan->cached;
  wire_free_response(r);
  return cached;
}

/* Sends SIGTERM and returns the exit status (asserting a clean exit is up
 * to the caller). */
int cdp_stop_daemon(struct harness *h)
{
  int rc = hn_stop(h);
  if (rc != 0) {
    char *log = tu_read_file(h->log, NULL);
    printf("daemon log:\n%s\n", log ? log : "(none)");
    free(log);
  }
  return rc;
}

/* Waits up to 30 s for a daemon that was already told to stop, without
 * signalling it again (a second SIGTERM may land after the daemon has
 * released its handlers, as systemd never does). Returns the exit status
 * or -1. */
static int wait_exit(struct harness *h)
{
  for (int i = 0; i < 3000; i++) {
    int st;
    if (waitpid(h->pid, &st, WNOHANG) == h->pid) {
      h->pid = 0;
      return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    sleep_ms(10);
  }
  return -1;
}

/* ---- sd_notify ------------------------------------------------------------ */

START_TEST(test_notify_ready_status_stopping)
{
  struct harness h;
  char npath[108], msg[NOTIFY_MAX];
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  int nfd = notify_open(h.dir, npath);
  struct launch l = {.notify = npath, .listen_fd = -1};
  launch(&h, &l);

  /* READY=1 is the first notification, and the socket accepts at once:
   * no polling of the socket before it. */
  ck_assert_int_ge(notify_recv(nfd, msg, 20000), 0);
  ck_assert_msg(strstr(msg, "READY=1") != NULL, "first notification: %s",
                msg);
  int fd = hn_connect(&h);
  ck_assert_msg(fd >= 0, "READY=1 came before the socket accepted");
  ping_fd(fd, 1);

  /* STATUS= carries the counters, and they move. */
  ck_assert_int_eq(notify_wait(nfd, "STATUS=", 10000, msg), 0);
  ck_assert_ptr_nonnull(strstr(msg, "plans computed"));
  struct hn_graph g;
  hn_random_graph(&g, 200, 42);
  ck_assert_int_eq(plan_fd(fd, &g, "notify", 2), 0);
  ck_assert_int_eq(plan_fd(fd, &g, "notify", 3), 1);
  /* The status is sent every two seconds; wait for one that shows the
   * plan and both requests on the open connection. */
  int seen = 0;
  for (int i = 0; i < 5 && !seen; i++) {
    ck_assert_int_eq(notify_wait(nfd, "STATUS=", 10000, msg), 0);
    seen = strstr(msg, "1 connection, 3 requests, 1 hit, 1 plan computed") !=
           NULL;
  }
  ck_assert_msg(seen, "last status: %s", msg);
  printf("deploy: %s\n", msg);
  close(fd);

  /* SIGTERM: STOPPING=1, then a clean exit. */
  kill(h.pid, SIGTERM);
  ck_assert_int_eq(notify_wait(nfd, "STOPPING=1", 20000, msg), 0);
  ck_assert_int_eq(wait_exit(&h), 0);
  hn_graph_free(&g);
  close(nfd);
  hn_cleanup(&h);
}
END_TEST

/* Load for the watchdog test: plans of new graphs (cache misses that run
 * on the workers) and pings, until killed. */
static void load_child(const struct harness *h, int k)
{
  uint64_t rid = 1;
  for (;;) {
    int fd = hn_connect(h);
    if (fd < 0)
      _exit(1);
    struct hn_graph g;
    hn_random_graph(&g, 3000, (uint64_t)k * 1000003u + rid);
    char hash[32];
    snprintf(hash, sizeof hash, "load-%d-%llu", k, (unsigned long long)rid);
    if (hn_send_plan(fd, rid++, &g, hash, 0, 64, 20) != 0)
      _exit(1);
    Arenad__V1__Response *r = hn_recv(fd, 30000);
    if (!r)
      _exit(1);
    wire_free_response(r);
    hn_graph_free(&g);
    close(fd);
  }
}

START_TEST(test_watchdog_under_load)
{
  enum { N_LOAD = 4, N_PINGS = 7 };
  const double usec = 1000000; /* WATCHDOG_USEC: systemd's deadline */
  struct harness h;
  char npath[108], msg[NOTIFY_MAX];
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  int nfd = notify_open(h.dir, npath);
  struct launch l = {.notify = npath, .watchdog = "1000000", .listen_fd = -1};
  launch(&h, &l);
  ck_assert_int_eq(notify_wait(nfd, "READY=1", 20000, msg), 0);

  pid_t kids[N_LOAD];
  for (int k = 0; k < N_LOAD; k++) {
    kids[k] = fork();
    ck_assert_int_ge(kids[k], 0);
    if (kids[k] == 0)
      load_child(&h, k);
  }
  /* Measure from the first ping after the load started. */
  double t[N_PINGS];
  int n = 0, statuses = 0;
  while (n < N_PINGS) {
    ck_assert_msg(notify_recv(nfd, msg, (int)(usec / 1000) * 3) >= 0,
                  "no notification for 3 watchdog periods");
    if (strstr(msg, "WATCHDOG=1"))
      t[n++] = now_s();
    if (strstr(msg, "STATUS="))
      statuses++;
  }
  for (int k = 0; k < N_LOAD; k++) {
    int st;
    kill(kids[k], SIGKILL);
    waitpid(kids[k], &st, 0);
  }
  Arenad__V1__Response *s = hn_stats(&h);
  ck_assert_ptr_nonnull(s);
  uint64_t computed = s->stats->plans_computed;
  wire_free_response(s);

  double max_gap = 0;
  for (int i = 1; i < n; i++)
    if (t[i] - t[i - 1] > max_gap)
      max_gap = t[i] - t[i - 1];
  double mean = (t[n - 1] - t[0]) / (n - 1);
  printf("deploy: watchdog under load: %d pings, mean %.3f s, max gap "
         "%.3f s, %llu plans computed meanwhile\n",
         n, mean, max_gap, (unsigned long long)computed);
  /* The daemon was really loaded, never missed systemd's deadline, and
   * pinged at about half the interval (0.5 s), not much faster. */
  ck_assert_uint_ge(computed, 3);
  ck_assert_msg(max_gap < usec / 1e6, "a watchdog gap of %.3f s", max_gap);
  ck_assert_msg(mean > 0.3 && mean < 0.75, "mean interval %.3f s", mean);
  ck_assert_int_ge(statuses, N_PINGS - 1); /* STATUS= with each ping */
  ck_assert_int_eq(cdp_stop_daemon(&h), 0);
  close(nfd);
  hn_cleanup(&h);
}
END_TEST

/* ---- socket activation ------------------------------------------------------ */

/* The activated daemon serving act holds the lock beside it, so a
 * daemon started by hand on act gives up (exit 1) and act is still
 * served. */
static void assert_activated_kept(const char *act)
{
  char lock[320];
  snprintf(lock, sizeof lock, "%s.lock", act);
  int kfd = open(lock, O_RDONLY | O_CLOEXEC);
  ck_assert_int_ge(kfd, 0);
  ck_assert_int_ne(flock(kfd, LOCK_EX | LOCK_NB), 0);
  close(kfd);
  struct harness h2;
  ck_assert_int_eq(hn_init(&h2, NULL), 0);
  FILE *f = fopen(h2.conf, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "[daemon]\nsocket = %s\ndatabase = %s\n", act, h2.db);
  fclose(f);
  struct launch l = {.listen_fd = -1};
  launch(&h2, &l);
  ck_assert_int_eq(wait_exit(&h2), 1);
  hn_cleanup(&h2);
  int fd = connect_path(act);
  ck_assert_int_ge(fd, 0);
  ping_fd(fd, 9);
  close(fd);
}

START_TEST(test_socket_activation_launcher)
{
  struct harness h;
  char act[300];
  struct stat st;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  snprintf(act, sizeof act, "%s/activated.sock", h.dir);
  int lfd = listen_path(act);
  struct launch l = {.listen_fd = lfd};
  launch(&h, &l);
  close(lfd);

  /* The first connection may come before arenad runs: it waits in the
   * inherited socket's backlog, as under systemd. */
  struct hn_graph g;
  hn_random_graph(&g, 300, 7);
  int fd = connect_path(act);
  ck_assert_int_ge(fd, 0);
  ping_fd(fd, 1);
  ck_assert_int_eq(plan_fd(fd, &g, "activated", 2), 0);
  ck_assert_int_eq(plan_fd(fd, &g, "activated", 3), 1);
  close(fd);
  /* It served the inherited socket and did not bind its configured one. */
  ck_assert_int_ne(lstat(h.sock, &st), 0);
  assert_activated_kept(act);
  ck_assert_int_eq(cdp_stop_daemon(&h), 0);
  /* ...and left the activated socket file alone. */
  ck_assert_int_eq(lstat(act, &st), 0);
  ck_assert(S_ISSOCK(st.st_mode));

  /* Control: with LISTEN_PID naming another process the fd is not for
   * arenad, which binds its own socket instead. */
  unlink(act);
  lfd = listen_path(act);
  struct launch bad = {.listen_fd = lfd, .wrong_listen_pid = 1};
  launch(&h, &bad);
  close(lfd);
  ck_assert_int_eq(wait_accepting(&h), 0);
  ck_assert_int_eq(lstat(h.sock, &st), 0);
  ck_assert_int_eq(cdp_stop_daemon(&h), 0);
  hn_graph_free(&g);
  hn_cleanup(&h);
}
END_TEST

START_TEST(test_socket_activation_systemd)
{
  struct harness h;
  char act[300];
  struct stat st;
  ck_assert_msg(access("/usr/bin/systemd-socket-activate", X_OK) == 0 ||
                    access("/bin/systemd-socket-activate", X_OK) == 0,
                "systemd-socket-activate is missing: run make deps");
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  snprintf(act, sizeof act, "%s/activated.sock", h.dir);
  char lopt[320];
  snprintf(lopt, sizeof lopt, "--listen=%s", act);
  const char *wrap[] = {"systemd-socket-activate", lopt, NULL};
  struct launch l = {.listen_fd = -1, .wrap = wrap};
  launch(&h, &l);
  int fd = -1;
  for (int i = 0; i < 1000 && fd < 0; i++) {
    fd = connect_path(act);
    if (fd < 0)
      sleep_ms(10);
  }
  ck_assert_int_ge(fd, 0);
  struct hn_graph g;
  hn_random_graph(&g, 300, 8);
  ck_assert_int_eq(plan_fd(fd, &g, "systemd-activated", 1), 0);
  ck_assert_int_eq(plan_fd(fd, &g, "systemd-activated", 2), 1);
  close(fd);
  ck_assert_int_ne(lstat(h.sock, &st), 0);
  char *log = tu_read_file(h.log, NULL);
  ck_assert_ptr_nonnull(log);
  ck_assert_ptr_nonnull(strstr(log, "using the socket passed by systemd"));
  free(log);
  /* systemd-socket-activate execs arenad in its own process, so the
   * signal reaches the daemon itself. */
  ck_assert_int_eq(cdp_stop_daemon(&h), 0);
  hn_graph_free(&g);
  hn_cleanup(&h);
}
END_TEST

/* ---- who may connect --------------------------------------------------------- */

static int is_root(const char *what)
{
  if (geteuid() == 0)
    return 1;
  fprintf(stderr,
          "\n*** deploy: SKIPPED %s: it needs root to run the daemon and "
          "clients as other users (CI runs as root) ***\n\n",
          what);
  printf("*** deploy: SKIPPED %s (not root) ***\n", what);
  return 0;
}

/* Copies src to dst with mode 0755. */
static void copy_exe(const char *src, const char *dst)
{
  size_t len;
  char *b = tu_read_file(src, &len);
  ck_assert_msg(b != NULL, "cannot read %s", src);
  FILE *f = fopen(dst, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
  ck_assert_int_eq(chmod(dst, 0755), 0);
  free(b);
}

/* A daemon running as DAEMON_UID:DAEMON_UID with no supplementary groups,
 * in a directory that it owns and others may traverse, with the binaries
 * copied there (the checkout may sit below a directory only root can
 * enter). */
static void start_unprivileged(struct harness *h, const char *extra_conf)
{
  char p[600];
  ck_assert_int_eq(hn_init(h, extra_conf), 0);
  ck_assert_int_eq(chmod(h->dir, 0755), 0);
  ck_assert_int_eq(chown(h->dir, DAEMON_UID, DAEMON_UID), 0);
  const char *bins[] = {"arenad", "arenactl", "examples/plan_example"};
  const char *names[] = {"arenad", "arenactl", "plan_example"};
  for (int i = 0; i < 3; i++) {
    char from[300];
    snprintf(from, sizeof from, "%s/%s", DEPLOY_BUILD, bins[i]);
    snprintf(p, sizeof p, "%s/%s", h->dir, names[i]);
    copy_exe(from, p);
  }
  snprintf(p, sizeof p, "%s/arenad", h->dir);
  static const char *const wrap[] = {"setpriv", "--reuid=61234",
                                     "--regid=61234", "--clear-groups",
                                     "--", NULL};
  struct launch l = {.listen_fd = -1, .wrap = wrap, .bin = p};
  launch(h, &l);
  ck_assert_int_eq(wait_accepting(h), 0);
}

/* Runs a client copied into h->dir as uid:uid with the given
 * supplementary groups ("" for none): `arenactl -s SOCK CMD` when cmd is
 * set, else `plan_example SOCK`. Returns the exit status and the output
 * (owned). */
static int run_as(const struct harness *h, int uid, const char *groups,
                  const char *cmd, char **out)
{
  char u[32], g[32], gr[64], bin[300];
  snprintf(u, sizeof u, "--reuid=%d", uid);
  snprintf(g, sizeof g, "--regid=%d", uid);
  if (groups[0])
    snprintf(gr, sizeof gr, "--groups=%s", groups);
  else
    snprintf(gr, sizeof gr, "--clear-groups");
  snprintf(bin, sizeof bin, "%s/%s", h->dir, cmd ? "arenactl" : "plan_example");
  char *ctl[] = {"setpriv", u, g, gr, "--", bin, "-s", (char *)h->sock,
                 (char *)cmd, NULL};
  char *ex[] = {"setpriv", u, g, gr, "--", bin, (char *)h->sock, NULL};
  return cdp_run_capture(cmd ? ctl : ex, out);
}

START_TEST(test_socket_mode_admits_group_only)
{
  if (!is_root("socket-permission test"))
    return;
  struct harness h;
  struct stat st;
  char *out;
  start_unprivileged(&h, NULL);
  /* Owned by the daemon's user and group, mode 0660. */
  ck_assert_int_eq(stat(h.sock, &st), 0);
  ck_assert_uint_eq(st.st_mode & 07777, 0660);
  ck_assert_uint_eq(st.st_uid, DAEMON_UID);
  ck_assert_uint_eq(st.st_gid, DAEMON_UID);

  /* Outside the group: the socket's mode refuses the connection. */
  int rc = run_as(&h, CLIENT_UID, "", "ping", &out);
  printf("deploy: nobody, no groups: exit %d: %s", rc, out);
  ck_assert_int_eq(rc, 77);
  ck_assert_msg(strstr(out, "cannot connect") &&
                    strstr(out, "Permission denied"),
                "%s", out);
  free(out);
  /* ...and the library falls back to planning in that process. */
  rc = run_as(&h, CLIENT_UID, "", NULL, &out);
  ck_assert_int_eq(rc, 0);
  ck_assert_ptr_nonnull(strstr(out, "source: planned locally"));
  free(out);

  /* A member of the group is served. */
  rc = run_as(&h, CLIENT_UID, "61234", "ping", &out);
  printf("deploy: nobody in group %d: exit %d: %s", DAEMON_UID, rc, out);
  ck_assert_msg(rc == 0, "%s", out);
  free(out);
  rc = run_as(&h, CLIENT_UID, "61234", NULL, &out);
  ck_assert_int_eq(rc, 0);
  ck_assert_msg(strstr(out, "source: daemon") != NULL, "%s", out);
  ck_assert_ptr_null(strstr(out, "planned locally"));
  free(out);
  ck_assert_int_eq(cdp_stop_daemon(&h), 0);
  hn_cleanup(&h);
}
END_TEST

START_TEST(test_allow_list_denies_group_member)
{
  if (!is_root("allow-list test"))
    return;
  struct harness h;
  char *out;
  start_unprivileged(&h, "[access]\nallow_uids = 61235\n");
  /* In the group, so the socket lets it in, but not on the list. */
  int rc = run_as(&h, CLIENT_UID, "61234", "ping", &out);
  printf("deploy: unlisted group member: exit %d: %s", rc, out);
  ck_assert_int_eq(rc, 77);
  ck_assert_msg(strstr(out, "DENIED") != NULL, "%s", out);
  free(out);
  rc = run_as(&h, LISTED_UID, "61234", "ping", &out);
  ck_assert_msg(rc == 0, "listed uid refused: %s", out);
  free(out);
  /* The refusal is logged with the peer's credentials. */
  char *log = tu_read_file(h.log, NULL);
  ck_assert_ptr_nonnull(log);
  ck_assert_ptr_nonnull(
      strstr(log, "uid 65534 gid 65534): not in the allow-lists, sent DENIED"));
  free(log);
  ck_assert_int_eq(cdp_stop_daemon(&h), 0);
  hn_cleanup(&h);
}
END_TEST

Suite *deploy_suite(void)
{
  Suite *s = suite_create("deploy");
  setenv("ARENAD", DEPLOY_BUILD "/arenad", 0);

  cdp_add_static_tests(s);

  TCase *tc = tcase_create("notify");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_notify_ready_status_stopping);
  tcase_add_test(tc, test_watchdog_under_load);
  suite_add_tcase(s, tc);

  tc = tcase_create("activation");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_socket_activation_launcher);
  tcase_add_test(tc, test_socket_activation_systemd);
  suite_add_tcase(s, tc);

  tc = tcase_create("permissions");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_socket_mode_admits_group_only);
  tcase_add_test(tc, test_allow_list_denies_group_member);
  suite_add_tcase(s, tc);
  return s;
}

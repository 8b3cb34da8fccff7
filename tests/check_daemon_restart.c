/*
 * check_daemon_restart.c - arenad restarted at once after SIGKILL under a
 * load of plan requests: the new daemon must start and serve every time.
 *
 * The old daemon is killed and the new one started without waiting for
 * the old one to be gone, as a supervisor or an operator does: for a
 * moment the dying process still holds its socket open, and a connect()
 * to it succeeds although nothing will ever accept. The new daemon must
 * neither take that for a live daemon (and exit 1, leaving nothing to
 * serve) nor displace a daemon that is alive (test_socket_ownership in
 * check_daemon.c, and the stopped daemon below).
 *
 * The other tests play the parts around the lock beside the socket
 * (daemon/sockguard.h) one at a time: a live daemon that does not
 * answer, a dying one that lets go of its lock and then of its socket,
 * and a program that answers on the path without taking the lock.
 */
#define _GNU_SOURCE 1 /* setresuid, setresgid */
#include <check.h>
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_daemon.h"
#include "testutil.h"
#include "wire.h"

#define RESTARTS 50
#define LOAD_CLIENTS 3
#define LOAD_MAX_S 120     /* a load client stops by itself after this */
#define SERVE_WAIT_MS 15000 /* a restarted daemon must serve within this */

static void sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

static uint64_t now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Starts arenad ($ARENAD) on h's configuration, as uid:gid
 * unless they are -1 (others than ours need root), and returns its pid
 * without waiting for anything: unlike hn_start, which takes any
 * accepted connection as the new daemon's, this must not be fooled by
 * the socket of a daemon that is still dying. */
static pid_t spawn_as(const struct harness *h, int uid, int gid)
{
  const char *bin = tu_bin("ARENAD");
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen(h->log, "a", stderr))
      _exit(126);
    setenv("ASAN_OPTIONS", "quarantine_size_mb=4:malloc_context_size=8", 0);
    setenv("TSAN_OPTIONS", "halt_on_error=1", 0);
    if (uid >= 0 && (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
                     setresuid(uid, uid, uid) != 0))
      _exit(126);
    execl(bin, bin, "--config", h->conf, (char *)NULL);
    _exit(127);
  }
  return pid;
}

static pid_t spawn(const struct harness *h)
{
  return spawn_as(h, -1, -1);
}

/* The pid a daemon answering on h's socket reports in Stats, 0 when
 * none answers within timeout_ms. */
static uint64_t serving_pid(const struct harness *h, int timeout_ms)
{
  int fd = hn_connect(h);
  if (fd < 0)
    return 0;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Stats st = ARENAD__V1__STATS__INIT;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = 1;
  req.body_case = ARENAD__V1__REQUEST__BODY_STATS;
  req.stats = &st;
  Arenad__V1__Response *r = hn_call(fd, &req, timeout_ms);
  close(fd);
  uint64_t pid = r && r->status == ARENAD__V1__STATUS__OK &&
                         r->body_case == ARENAD__V1__RESPONSE__BODY_STATS
                     ? r->stats->pid
                     : 0;
  wire_free_response(r);
  return pid;
}

/* Waits until daemon pid answers on h's socket. Returns 0, or the exit
 * status (>= 0 ... as -1 - status) when it exited first, or 1 on a
 * timeout. */
static int wait_serving(const struct harness *h, pid_t pid)
{
  uint64_t deadline = now_ms() + SERVE_WAIT_MS;
  while (now_ms() < deadline) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid)
      return -1 - (WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    if (serving_pid(h, 500) == (uint64_t)pid)
      return 0;
    sleep_ms(5);
  }
  return 1;
}

struct load {
  atomic_int stop;
  atomic_ulong served; /* plans answered OK, by all clients */
};

/* A client that plans a new graph again and again (each a miss, so each
 * a planning job and a database write), reconnecting whenever the
 * daemon goes away, until told to stop. */
static void load_client(const struct harness *h, struct load *ld, unsigned c)
{
  uint64_t end = now_ms() + LOAD_MAX_S * 1000ull;
  int fd = -1;
  for (uint64_t i = 0; !atomic_load(&ld->stop) && now_ms() < end; i++) {
    if (fd < 0 && (fd = hn_connect(h)) < 0) {
      sleep_ms(2);
      continue;
    }
    struct hn_graph g;
    char hash[64];
    snprintf(hash, sizeof hash, "restart-c%u-i%llu", c, (unsigned long long)i);
    hn_random_graph(&g, 150, (uint64_t)c << 40 | i);
    Arenad__V1__Response *r = NULL;
    if (hn_send_plan(fd, i + 1, &g, hash, PLANNER_ALGO_GREEDY_SIZE, 64, 0) ==
        0)
      r = hn_recv(fd, 3000);
    if (r && r->status == ARENAD__V1__STATUS__OK)
      atomic_fetch_add(&ld->served, 1);
    else {
      close(fd);
      fd = -1;
    }
    wire_free_response(r);
    hn_graph_free(&g);
  }
  if (fd >= 0)
    close(fd);
}

static void assert_serving(const struct harness *h, pid_t pid, unsigned round)
{
  int rc = wait_serving(h, pid);
  ck_assert_msg(rc != 1, "restart %u: pid %ld did not serve within %d ms "
                "(see %s)", round, (long)pid, SERVE_WAIT_MS, h->log);
  ck_assert_msg(rc == 0, "restart %u: arenad exited with status %d instead "
                "of serving (see %s)", round, -1 - rc, h->log);
}

/* 50 times: kill -9 under load, start a new daemon at once, and it
 * serves. */
START_TEST(test_restart_after_kill)
{
  struct harness h;
  ck_assert_int_eq(hn_init(&h, "[daemon]\nworkers = 2\nlog_level = info\n"),
                   0);
  struct load *ld = mmap(NULL, sizeof *ld, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne(ld, MAP_FAILED);
  atomic_init(&ld->stop, 0);
  atomic_init(&ld->served, 0);
  pid_t pid = spawn(&h);
  ck_assert_int_gt(pid, 0);
  assert_serving(&h, pid, 0);
  pid_t kids[LOAD_CLIENTS];
  for (unsigned c = 0; c < LOAD_CLIENTS; c++) {
    kids[c] = fork();
    ck_assert_int_ge(kids[c], 0);
    if (kids[c] == 0) {
      load_client(&h, ld, c);
      _exit(0);
    }
  }
  uint64_t rng = 26;
  for (unsigned round = 1; round <= RESTARTS; round++) {
    sleep_ms((int)tu_rand_range(&rng, 10, 150));
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    pid_t next = spawn(&h); /* at once: the old one may still be dying */
    ck_assert_int_gt(next, 0);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    pid = next;
    h.pid = pid; /* hn_cleanup stops it if an assertion ends the test */
    assert_serving(&h, pid, round);
  }
  atomic_store(&ld->stop, 1);
  for (unsigned c = 0; c < LOAD_CLIENTS; c++) {
    int st;
    ck_assert_int_eq(waitpid(kids[c], &st, 0), kids[c]);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  /* the load was real: plans were served between the kills */
  ck_assert_uint_gt(atomic_load(&ld->served), RESTARTS);
  h.pid = pid;
  ck_assert_int_eq(hn_stop(&h), 0);
  munmap(ld, sizeof *ld);
  hn_cleanup(&h);
}
END_TEST

/* A second daemon on h's socket with a database of its own; returns its
 * pid. The caller frees nothing: its files are in h's directory. */
static pid_t spawn_second(const struct harness *h, struct harness *h2)
{
  ck_assert_int_eq(hn_init(h2, NULL), 0);
  FILE *f = fopen(h2->conf, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "[daemon]\nsocket = %s\ndatabase = %s\n", h->sock, h2->db);
  fclose(f);
  snprintf(h2->sock, sizeof h2->sock, "%s", h->sock);
  pid_t pid = spawn(h2);
  ck_assert_int_gt(pid, 0);
  return pid;
}

/* Waits for pid to exit and returns its exit status (-1 for a signal). */
static int exit_status(pid_t pid)
{
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A daemon that is alive but does not answer (stopped) is never
 * displaced: a new one waits for its lock, then gives up with exit 1,
 * and the old one serves again once it runs. */
START_TEST(test_stopped_daemon_kept)
{
  struct harness h, h2;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  ck_assert_int_eq(kill(h.pid, SIGSTOP), 0);
  pid_t second = spawn_second(&h, &h2);
  ck_assert_int_eq(exit_status(second), 1);
  ck_assert(hn_log_count(&h2, "does not answer"));
  ck_assert_int_eq(kill(h.pid, SIGCONT), 0);
  ck_assert_uint_eq(serving_pid(&h, 5000), (uint64_t)h.pid);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h2);
  hn_cleanup(&h);
}
END_TEST

/* Binds and listens on path (never accepting), like a daemon that is
 * being killed. */
static int silent_listener(const char *path)
{
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(fd, 16), 0);
  return fd;
}

/* Takes the lock beside path as a daemon does; returns the fd. */
static int hold_lock(const char *path)
{
  char lock[300];
  snprintf(lock, sizeof lock, "%s.lock", path);
  int fd = open(lock, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
  return fd;
}

/* A daemon that is dying, played by this test: it holds the lock and a
 * socket that accepts nothing, lets go of the lock, and a moment later
 * of the socket. The new daemon waits through both, then removes the
 * stale socket file and serves. */
START_TEST(test_dying_holder_waited_for)
{
  struct harness h;
  ck_assert_int_eq(hn_init(&h, "[daemon]\nlog_level = info\n"), 0);
  int lfd = silent_listener(h.sock);
  int kfd = hold_lock(h.sock);
  pid_t pid = spawn(&h);
  h.pid = pid;
  sleep_ms(300);
  ck_assert_int_eq(waitpid(pid, NULL, WNOHANG), 0); /* still waiting */
  close(kfd);
  sleep_ms(300);
  ck_assert_int_eq(waitpid(pid, NULL, WNOHANG), 0); /* the socket, too */
  close(lfd);
  assert_serving(&h, pid, 1);
  ck_assert(hn_log_count(&h, "still held or in use"));
  ck_assert(hn_log_count(&h, "removing stale socket"));
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* Something that answers on the path without taking the lock (another
 * program, or an arenad too old to take it) is never displaced. */
START_TEST(test_answering_listener_kept)
{
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  int lfd = silent_listener(h.sock);
  pid_t answerer = fork();
  ck_assert_int_ge(answerer, 0);
  if (answerer == 0) {
    for (;;) {
      int c = accept(lfd, NULL, NULL);
      if (c >= 0) {
        if (write(c, "x", 1) != 1)
          _exit(1);
        close(c);
      }
    }
  }
  close(lfd);
  pid_t pid = spawn(&h);
  ck_assert_int_eq(exit_status(pid), 1);
  ck_assert(hn_log_count(&h, "something answers on"));
  struct stat st;
  ck_assert_int_eq(lstat(h.sock, &st), 0);
  int fd = hn_connect(&h);
  ck_assert_int_ge(fd, 0); /* still the answerer's */
  char b;
  ck_assert_int_eq(read(fd, &b, 1), 1);
  close(fd);
  kill(answerer, SIGKILL);
  waitpid(answerer, NULL, 0);
  hn_cleanup(&h);
}
END_TEST

/* A lock file that cannot be used (here a symlink, which is never
 * followed) costs the lock, not the service: the daemon warns, goes by
 * the socket alone, and serves; the link's target is not created. */
START_TEST(test_unusable_lock_file)
{
  struct harness h;
  char lock[300], target[300];
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  snprintf(lock, sizeof lock, "%s.lock", h.sock);
  snprintf(target, sizeof target, "%s/elsewhere", h.dir);
  ck_assert_int_eq(symlink(target, lock), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  ck_assert_uint_eq(serving_pid(&h, 5000), (uint64_t)h.pid);
  ck_assert(hn_log_count(&h, "going by the socket alone"));
  ck_assert_int_ne(access(target, F_OK), 0);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* A socket that the daemon's user may not connect to cannot be told
 * apart, live or stale: it is left alone (exit 1) with a message that
 * says so. Needs root, for a daemon running as another user. */
START_TEST(test_foreign_socket_kept)
{
  if (geteuid() != 0) {
    printf("daemon: foreign socket: not checked (needs root)\n");
    return;
  }
  struct harness h;
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  ck_assert_int_eq(chown(h.dir, 65534, 65534), 0);
  int lfd = silent_listener(h.sock);
  ck_assert_int_eq(chmod(h.sock, 0600), 0);
  close(lfd); /* stale or not, nobody may connect to it */
  pid_t pid = spawn_as(&h, 65534, 65534);
  ck_assert_int_eq(exit_status(pid), 1);
  ck_assert(hn_log_count(&h, "may not be connected to"));
  struct stat st;
  ck_assert_int_eq(lstat(h.sock, &st), 0);
  ck_assert_int_eq(chown(h.dir, 0, 0), 0);
  hn_cleanup(&h);
}
END_TEST

void cd_add_restart_tests(TCase *tc)
{
  tcase_add_test(tc, test_restart_after_kill);
  tcase_add_test(tc, test_stopped_daemon_kept);
  tcase_add_test(tc, test_dying_holder_waited_for);
  tcase_add_test(tc, test_answering_listener_kept);
  tcase_add_test(tc, test_unusable_lock_file);
  tcase_add_test(tc, test_foreign_socket_kept);
}

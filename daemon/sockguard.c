/*
 * sockguard.c - the lock beside the socket and the liveness probe (see
 * sockguard.h).
 *
 * DESIGN: sockguard_claim() is one loop of short steps until the
 * deadline. While another process holds the lock, each step looks for
 * an answer to the probe's Ping: one means a live daemon (EBUSY at
 * once); none means the holder is dying, starting or stuck, and the
 * next step tries the lock again. Once the lock is ours, each step looks
 * at the socket path: absent is done; a socket nothing listens on is
 * stale (removed, done); one that answers belongs to a program that
 * takes no lock (EBUSY); one that accepts but stays silent is a dying
 * listener, waited for. The probe connection stays open across steps,
 * so a slow daemon has the whole wait to answer, and is opened again
 * only when its peer has closed it. Any byte back counts as an answer:
 * a listener that is dying never accepts, so it never writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sockguard.h"
#include "wire.h"

#define STEP_MS 10 /* one step of the wait */

enum probe_state {
  PROBE_REFUSED,  /* nothing listens on the path */
  PROBE_DENIED,   /* we may not connect: nothing can be told */
  PROBE_SILENT,   /* a listener, but no answer (yet) */
  PROBE_ANSWERED, /* a live peer wrote back */
};

enum step {
  STEP_DONE = 0, /* the path is ours */
  STEP_AGAIN = 1 /* not yet: wait and look again */
  /* negative: an ARENA_E* code, with err set */
};

struct claim {
  struct sockguard *g;
  const char *path;      /* the socket path, borrowed */
  const struct dlog *log;
  char *err;             /* ARENA_ERR_LEN bytes, or NULL */
  int locked;            /* g->fd is locked */
  int probe;             /* connection of the probe, or -1 */
};

static uint64_t now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_step(void)
{
  struct timespec ts = {0, STEP_MS * 1000000L};
  nanosleep(&ts, NULL);
}

/* Writes the reason into err (when not NULL) and returns rc. */
static int fail(char *err, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, int rc, const char *fmt, ...)
{
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ARENA_ERR_LEN, fmt, ap);
    va_end(ap);
  }
  return rc;
}

void sockguard_init(struct sockguard *g)
{
  g->fd = -1;
  g->path[0] = '\0';
}

void sockguard_release(struct sockguard *g)
{
  if (g->fd >= 0)
    close(g->fd); /* closing the only descriptor releases the flock */
  g->fd = -1;
}

/* Opens (creating it, mode 0600) the lock file beside socket_path. */
static int open_lock(struct sockguard *g, const char *socket_path, char *err)
{
  int n = snprintf(g->path, sizeof g->path, "%s%s", socket_path,
                   SOCKGUARD_SUFFIX);
  if (n < 0 || (size_t)n >= sizeof g->path)
    return fail(err, ARENA_EINVAL, "%s%s: path too long", socket_path,
                SOCKGUARD_SUFFIX);
  /* O_NONBLOCK: a FIFO planted there must not block the open. */
  g->fd = open(g->path, O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
                            O_CLOEXEC,
               0600);
  if (g->fd < 0)
    return fail(err, ARENA_EIO, "cannot open the lock file %s: %s", g->path,
                strerror(errno));
  struct stat st;
  if (fstat(g->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    sockguard_release(g);
    return fail(err, ARENA_EIO, "the lock file %s is not a regular file",
                g->path);
  }
  return 0;
}

/* Tries the lock once: 0 taken, 1 held by another process, or an
 * ARENA_E* code. */
static int try_lock(struct sockguard *g, char *err)
{
  for (;;) {
    if (flock(g->fd, LOCK_EX | LOCK_NB) == 0)
      return 0;
    if (errno == EWOULDBLOCK)
      return 1;
    if (errno != EINTR)
      return fail(err, ARENA_EIO, "cannot lock %s: %s", g->path,
                  strerror(errno));
  }
}

/* Sends a Ping on fd, which is connected; the frame fits in an empty
 * socket buffer. Returns 0 or -1. */
static int send_ping(int fd)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Ping ping = ARENAD__V1__PING__INIT;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = 1;
  req.body_case = ARENAD__V1__REQUEST__BODY_PING;
  req.ping = &ping;
  uint8_t *buf;
  size_t len;
  if (wire_pack(&req.base, WIRE_DEFAULT_MAX_FRAME, &buf, &len))
    return -1;
  ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  free(buf);
  return n == (ssize_t)len ? 0 : -1;
}

/* Connects to path without blocking and sends a Ping. Sets *fd to the
 * connection (or -1) and returns REFUSED when nothing listens, DENIED
 * when the socket's mode keeps us out, SILENT otherwise. */
static enum probe_state probe_open(const char *path, int *fd)
{
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  *fd = -1;
  if (strlen(path) >= sizeof a.sun_path)
    return PROBE_SILENT; /* cannot tell: never take it for stale */
  memcpy(a.sun_path, path, strlen(path) + 1);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0)
    return PROBE_SILENT;
  if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
    int e = errno;
    close(s);
    /* EAGAIN: a listener whose backlog is full, alive or dying. */
    return e == ECONNREFUSED || e == ENOENT ? PROBE_REFUSED
           : e == EACCES || e == EPERM      ? PROBE_DENIED
                                            : PROBE_SILENT;
  }
  if (send_ping(s) != 0) {
    close(s);
    return PROBE_SILENT;
  }
  *fd = s;
  return PROBE_SILENT;
}

/* One step of the probe: opens it when needed, then waits up to a step
 * for an answer. */
static enum probe_state probe_step(struct claim *c)
{
  if (c->probe < 0) {
    enum probe_state ps = probe_open(c->path, &c->probe);
    if (ps == PROBE_REFUSED || ps == PROBE_DENIED)
      return ps;
    if (c->probe < 0) {
      sleep_step();
      return PROBE_SILENT;
    }
  }
  struct pollfd p = {c->probe, POLLIN, 0};
  if (poll(&p, 1, STEP_MS) <= 0)
    return PROBE_SILENT;
  char byte;
  ssize_t n = recv(c->probe, &byte, 1, MSG_DONTWAIT);
  if (n > 0)
    return PROBE_ANSWERED;
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return PROBE_SILENT;
  /* Closed without a word (a dying listener resets what it never
   * accepted): open a new one next step. */
  close(c->probe);
  c->probe = -1;
  return PROBE_SILENT;
}

static void probe_close(struct claim *c)
{
  if (c->probe >= 0)
    close(c->probe);
  c->probe = -1;
}

/* While another process holds the lock. */
static int step_held(struct claim *c)
{
  enum probe_state ps = probe_step(c);
  if (ps == PROBE_ANSWERED)
    return fail(c->err, ARENA_EBUSY,
                "another arenad is serving on %s (it holds %s and answers); "
                "not taking it over",
                c->path, c->g->path);
  if (ps == PROBE_REFUSED || ps == PROBE_DENIED)
    sleep_step();
  return STEP_AGAIN;
}

/* With the lock ours: the socket path. */
static int step_path(struct claim *c)
{
  struct stat st;
  if (lstat(c->path, &st) != 0)
    return errno == ENOENT ? STEP_DONE
                           : fail(c->err, ARENA_EIO, "cannot look at %s: %s",
                                  c->path, strerror(errno));
  if (!S_ISSOCK(st.st_mode))
    return fail(c->err, ARENA_EINVAL,
                "%s exists and is not a socket; not touching it", c->path);
  enum probe_state ps = probe_step(c);
  if (ps == PROBE_ANSWERED)
    return fail(c->err, ARENA_EBUSY,
                "something answers on %s although no arenad holds %s (a "
                "program that takes no lock); not taking it over",
                c->path, c->g->path);
  if (ps == PROBE_DENIED)
    return fail(c->err, ARENA_EBUSY,
                "%s may not be connected to, so whether it is served "
                "cannot be told; not taking it over (remove it if nothing "
                "serves it)",
                c->path);
  if (ps == PROBE_SILENT)
    return STEP_AGAIN;
  dlog(c->log, DLOG_NOTICE, "removing stale socket %s", c->path);
  if (unlink(c->path) != 0 && errno != ENOENT)
    return fail(c->err, ARENA_EIO, "cannot remove the stale socket %s: %s",
                c->path, strerror(errno));
  return STEP_DONE;
}

static int step(struct claim *c)
{
  if (!c->locked) {
    int rc = try_lock(c->g, c->err);
    if (rc < 0)
      return rc;
    if (rc == 1)
      return step_held(c);
    c->locked = 1;
    probe_close(c); /* it probed the old holder */
  }
  return step_path(c);
}

static int timed_out(const struct claim *c, uint64_t wait_ms)
{
  if (!c->locked)
    return fail(c->err, ARENA_EBUSY,
                "%s is held by a process that does not answer on %s and "
                "kept it for %" PRIu64 " ms (a stopped or hung arenad?); "
                "not taking it over",
                c->g->path, c->path, wait_ms);
  return fail(c->err, ARENA_EBUSY,
              "something listens on %s without answering and stayed for "
              "%" PRIu64 " ms; not taking it over",
              c->path, wait_ms);
}

int sockguard_claim(struct sockguard *g, const char *socket_path,
                    uint64_t wait_ms, const struct dlog *log,
                    char err[ARENA_ERR_LEN])
{
  struct claim c = {g, socket_path, log, err, 0, -1};
  char why[ARENA_ERR_LEN];
  int rc = open_lock(g, socket_path, why);
  if (rc) {
    /* Say, a file left by a daemon that ran as another user. Going by
     * the socket alone still never displaces a listener that answers or
     * stays; it only loses the wait for a holder that is dying. */
    dlog(log, DLOG_WARNING, "%s; going by the socket alone", why);
    c.locked = 1;
  }
  uint64_t start = now_ms();
  int said = 0;
  while ((rc = step(&c)) == STEP_AGAIN) {
    if (now_ms() - start >= wait_ms) {
      rc = timed_out(&c, wait_ms);
      break;
    }
    if (!said++)
      dlog(log, DLOG_NOTICE,
           "%s is still held or in use; waiting up to %" PRIu64
           " ms for it to be let go",
           c.locked ? socket_path : g->path, wait_ms);
  }
  probe_close(&c);
  if (rc != STEP_DONE)
    sockguard_release(g);
  return rc;
}

int sockguard_try(struct sockguard *g, const char *socket_path,
                  char err[ARENA_ERR_LEN])
{
  int rc = open_lock(g, socket_path, err);
  if (rc)
    return rc;
  rc = try_lock(g, err);
  if (rc == 1)
    rc = fail(err, ARENA_EBUSY, "another process holds %s", g->path);
  if (rc)
    sockguard_release(g);
  return rc;
}

/*
 * arenad_client.c - the client library's handle and its connection: one
 * Unix-socket connection to arenad per handle, blocking requests with
 * deadlines (arenad_client__call, and arenad_client__call_packed for a
 * request packed beforehand), the handle's error text, and thin
 * wrappers for programs that link only the shared library (see
 * arenad_client.h).
 *
 * The lowest layer of the library: it may use proto/wire, the planner
 * and lib_memo.c (the handle's memory of its last call, which it sets up
 * and frees), and calls nothing else in client/. lib_message.c (keys,
 * statuses) and lib_request.c (plan and lookup, with the local fallback)
 * sit above it.
 *
 * DESIGN
 *  A handle holds at most one connection (fd >= 0) and a wire_reader for
 *  the bytes coming back. Requests are strictly one at a time: a call
 *  sends one frame, then reads frames until the one carrying its request
 *  id arrives, discarding stale ones. Every wait goes through poll() on a
 *  monotonic deadline, so no call blocks longer than its timeouts.
 *
 *  Two deadlines bound a request (struct wait). The plan deadline is
 *  fixed when it starts. The answer deadline moves: it is the answer
 *  timeout after the daemon last took or sent a byte, and it stops
 *  counting once the daemon acknowledges the request (every request asks
 *  for that with want_ack; the daemon acknowledges work it queues). So a
 *  stopped daemon, which takes no byte and sends none, is given up on
 *  after the answer timeout, while an acknowledged search may run until
 *  the plan deadline.
 *
 *  The connection is dropped after any transport failure, timeout or
 *  malformed reply, because after those the byte stream can no longer be
 *  trusted to be at a frame boundary (a late reply to the abandoned
 *  request may still arrive). The next call reconnects. A connection kept
 *  from an earlier call may have been closed by the daemon in between
 *  (restart, idle timeout); if sending on it fails, or it reaches EOF
 *  before any reply byte, the request is retried once on a fresh
 *  connection. Requests are idempotent, so the retry is safe.
 *
 *  A request is packed with request id 0 and sent with the id field
 *  appended to the packed bytes (wire_frame_with_id), so that a request
 *  packed once can be sent again under a new id: lib_request.c keeps the
 *  packed Plan request for the handle's last graph (lib_memo.c). The
 *  frame is composed in a buffer the handle keeps, which saves an
 *  allocation a call.
 *
 *  The daemon is never trusted with memory safety: a plan's offsets must
 *  pass planner_verify() against the caller's graph (or be byte for byte
 *  a plan that passed it for this very graph), and its graph digest must
 *  be the digest of the caller's graph, before it is returned.
 */
#include "lib_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"

/* ---- small helpers ------------------------------------------------------ */

int arenad_client__fail(arenad_client_t *c, int code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
  va_end(ap);
  return code;
}

static uint64_t now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Milliseconds left until deadline, for poll(); 0 when it has passed. */
static int left_ms(uint64_t deadline)
{
  uint64_t now = now_ms();
  if (now >= deadline)
    return 0;
  uint64_t d = deadline - now;
  return d > 1000000u ? 1000000 : (int)d;
}

/* ---- options and lifecycle ---------------------------------------------- */

/* The fields of struct arenad_client_options that every caller has: the
 * struct as it was before the sized calls (see SIZED OPTIONS in
 * arenad_client.h). A caller of the unsized entry points has these
 * bytes, perhaps no more. */
#define OPTIONS_V1_END                                                       \
  (offsetof(struct arenad_client_options, fallback) + sizeof(int))

/* Whether field f of struct arenad_client_options lies within a caller's
 * first `size` bytes. */
#define HAS_FIELD(size, f)                                                   \
  (offsetof(struct arenad_client_options, f) +                               \
       sizeof(((struct arenad_client_options *)0)->f) <=                     \
   (size))

void arenad_client_options_init_sized(struct arenad_client_options *o,
                                      size_t size)
{
  memset(o, 0, size);
  if (HAS_FIELD(size, connect_timeout_ms))
    o->connect_timeout_ms = ARENAD_CLIENT_DEFAULT_CONNECT_TIMEOUT_MS;
  if (HAS_FIELD(size, request_timeout_ms))
    o->request_timeout_ms = ARENAD_CLIENT_DEFAULT_REQUEST_TIMEOUT_MS;
  if (HAS_FIELD(size, fallback))
    o->fallback = 1;
  if (HAS_FIELD(size, answer_timeout_ms))
    o->answer_timeout_ms = ARENAD_CLIENT_DEFAULT_ANSWER_TIMEOUT_MS;
}

/* The unsized entry points keep their symbols for programs built
 * against the older header; the parentheses stop the header's macros of
 * the same names. */
void(arenad_client_options_init)(struct arenad_client_options *o)
{
  arenad_client_options_init_sized(o, OPTIONS_V1_END);
}

int(arenad_client_open)(const struct arenad_client_options *o,
                        arenad_client_t **out)
{
  return arenad_client_open_sized(o, OPTIONS_V1_END, out);
}

/* A timeout from the options, or its default for 0. */
static uint32_t or_default(uint32_t ms, uint32_t def)
{
  return ms ? ms : def;
}

int arenad_client_open_sized(const struct arenad_client_options *o,
                             size_t size, arenad_client_t **out)
{
  struct arenad_client_options def;
  struct sockaddr_un sa;
  *out = NULL;
  if (o && size < OPTIONS_V1_END)
    return ARENA_EINVAL;
  if (!o) {
    arenad_client_options_init_sized(&def, sizeof def);
    o = &def;
    size = sizeof def;
  }
  const char *path = o->socket_path;
  if (!path) {
    path = getenv(ARENAD_CLIENT_SOCKET_ENV);
    if (!path || !*path)
      path = ARENAD_CLIENT_DEFAULT_SOCKET;
  }
  if (!*path || strlen(path) >= sizeof sa.sun_path)
    return ARENA_EINVAL;
  arenad_client_t *c = calloc(1, sizeof *c);
  if (!c)
    return ARENA_ENOMEM;
  c->socket_path = strdup(path);
  if (!c->socket_path) {
    free(c);
    return ARENA_ENOMEM;
  }
  c->connect_timeout_ms = or_default(o->connect_timeout_ms,
                                     ARENAD_CLIENT_DEFAULT_CONNECT_TIMEOUT_MS);
  c->request_timeout_ms = or_default(o->request_timeout_ms,
                                     ARENAD_CLIENT_DEFAULT_REQUEST_TIMEOUT_MS);
  c->answer_timeout_ms = or_default(
      HAS_FIELD(size, answer_timeout_ms) ? o->answer_timeout_ms : 0,
      ARENAD_CLIENT_DEFAULT_ANSWER_TIMEOUT_MS);
  c->fallback = o->fallback != 0;
  c->fd = -1;
  c->next_id = 1;
  wire_reader_init(&c->rd, ARENAD_CLIENT_MAX_RESPONSE_FRAME);
  arenad_client__memo_init(&c->memo);
  *out = c;
  return 0;
}

/* Closes the connection and forgets any buffered bytes. */
static void drop(arenad_client_t *c)
{
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
  c->reused = 0;
  wire_reader_cleanup(&c->rd);
  wire_reader_init(&c->rd, ARENAD_CLIENT_MAX_RESPONSE_FRAME);
}

void arenad_client_close(arenad_client_t *c)
{
  if (!c)
    return;
  drop(c);
  wire_reader_cleanup(&c->rd);
  arenad_client__memo_cleanup(&c->memo);
  free(c->frame);
  free(c->socket_path);
  free(c);
}

const char *arenad_client_errmsg(const arenad_client_t *c)
{
  return c ? c->errmsg : "";
}

const char *arenad_client__socket_path(const arenad_client_t *c)
{
  return c->socket_path;
}

void arenad_client__get_timeouts(const arenad_client_t *c,
                                 struct arenad_client__timeouts *t)
{
  t->connect_ms = c->connect_timeout_ms;
  t->answer_ms = c->answer_timeout_ms;
  t->plan_ms = c->request_timeout_ms;
}

/* ---- connecting --------------------------------------------------------- */

static int connect_fail(arenad_client_t *c, int fd, int e)
{
  close(fd);
  if (e == EACCES || e == EPERM)
    return arenad_client__fail(c, ARENA_EDENIED,
                               "cannot connect to %s: %s", c->socket_path,
                               strerror(e));
  return arenad_client__fail(c, ARENA_EUNAVAIL,
                             "daemon unreachable at %s: %s", c->socket_path,
                             strerror(e));
}

/* Opens a non-blocking connection within the connect timeout. */
static int connect_daemon(arenad_client_t *c)
{
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, c->socket_path, strlen(c->socket_path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return arenad_client__fail(c, ARENA_EUNAVAIL, "socket: %s",
                               strerror(errno));
  uint64_t deadline = now_ms() + c->connect_timeout_ms;
  for (;;) {
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
      break;
    int e = errno;
    if (e == EINTR)
      continue;
    if (e == EAGAIN) {
      /* The listen queue is full: the daemon is overloaded. Retry
       * briefly until the connect timeout. */
      int ms = left_ms(deadline);
      if (ms == 0) {
        close(fd);
        return arenad_client__fail(c, ARENA_EUNAVAIL,
                                   "daemon at %s is not accepting "
                                   "connections (listen queue full)",
                                   c->socket_path);
      }
      poll(NULL, 0, ms < 10 ? ms : 10);
      continue;
    }
    if (e != EINPROGRESS)
      return connect_fail(c, fd, e);
    struct pollfd p = {fd, POLLOUT, 0};
    int n;
    do
      n = poll(&p, 1, left_ms(deadline));
    while (n < 0 && errno == EINTR);
    if (n == 0) {
      close(fd);
      return arenad_client__fail(c, ARENA_EUNAVAIL,
                                 "daemon unreachable at %s: connect timed "
                                 "out after %u ms",
                                 c->socket_path, c->connect_timeout_ms);
    }
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
      return connect_fail(c, fd, errno);
    if (soerr)
      return connect_fail(c, fd, soerr);
    break;
  }
  c->fd = fd;
  c->reused = 0;
  return 0;
}

/* ---- sending and receiving ---------------------------------------------- */

/* Outcome of a transport step that failed in a way a retry on a fresh
 * connection may cure. */
#define STALE 1

/* How long the current request may still take (see TIMEOUTS in
 * arenad_client.h). */
struct wait {
  uint64_t plan_deadline; /* the whole request: the plan timeout */
  uint64_t heard_ms;      /* when the daemon last showed it answers: the
                             request's start, or any byte it took or sent */
  int acked;              /* 1: it accepted the request as work */
  int ready;              /* 1: bytes may be waiting, so read before
                             polling (0 right after a request is sent:
                             the reply cannot be there yet, and a read
                             would only return EAGAIN) */
};

/* When the current wait ends: the plan deadline, or, until the daemon
 * has acknowledged the request, the answer timeout after it was last
 * heard from, whichever comes first. */
static uint64_t wait_end(const arenad_client_t *c, const struct wait *w)
{
  uint64_t answer = w->heard_ms + c->answer_timeout_ms;
  return w->acked || answer > w->plan_deadline ? w->plan_deadline : answer;
}

/* The error for a wait that reached wait_end(); `silence` says what the
 * daemon did not do, for the answer timeout's message. */
static int timed_out(arenad_client_t *c, const struct wait *w,
                     const char *silence)
{
  if (wait_end(c, w) == w->plan_deadline)
    return arenad_client__fail(c, ARENA_ETIMEDOUT,
                               "no reply from %s within %u ms (the plan "
                               "timeout)",
                               c->socket_path, c->request_timeout_ms);
  return arenad_client__fail(c, ARENA_ETIMEDOUT,
                             "%s is not answering: it %s for %u ms (the "
                             "answer timeout)",
                             c->socket_path, silence, c->answer_timeout_ms);
}

/* Writes all len bytes within the wait w. Returns 0, STALE (the peer
 * closed the connection), or an error code with errmsg set. */
static int send_all(arenad_client_t *c, const uint8_t *buf, size_t len,
                    struct wait *w)
{
  size_t done = 0;
  while (done < len) {
    ssize_t n = send(c->fd, buf + done, len - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += (size_t)n;
      w->heard_ms = now_ms();
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p = {c->fd, POLLOUT, 0};
      int r = poll(&p, 1, left_ms(wait_end(c, w)));
      if (r == 0)
        return timed_out(c, w, "took no byte of the request");
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
      return STALE;
    return arenad_client__fail(c, ARENA_EUNAVAIL, "sending to %s: %s",
                               c->socket_path, strerror(errno));
  }
  return 0;
}

/* Reads what is available into the reader, waiting within w. Returns 0
 * after reading some bytes, STALE at EOF, or an error code. Unless bytes
 * may be waiting (w->ready), it polls before it reads. */
static int fill(arenad_client_t *c, struct wait *w)
{
  uint8_t buf[65536];
  for (;;) {
    if (!w->ready) {
      struct pollfd p = {c->fd, POLLIN, 0};
      int r = poll(&p, 1, left_ms(wait_end(c, w)));
      if (r == 0)
        return timed_out(c, w, "sent nothing back");
      if (r < 0 && errno == EINTR)
        continue;
    }
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n > 0) {
      w->heard_ms = now_ms();
      w->ready = (size_t)n == sizeof buf;
      int rc = wire_reader_feed(&c->rd, buf, (size_t)n);
      if (rc)
        return arenad_client__fail(c, rc, "reading a reply: %s",
                                   arena_strerror(rc));
      return 0;
    }
    if (n == 0)
      return STALE;
    if (errno == EINTR)
      continue;
    if (errno == ECONNRESET)
      return STALE;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return arenad_client__fail(c, ARENA_EUNAVAIL, "reading from %s: %s",
                                 c->socket_path, strerror(errno));
    w->ready = 0;
  }
}

/* Whether r acknowledges request id: the daemon took it on as a job and
 * replies later. */
static int is_ack(const Arenad__V1__Response *r, uint64_t id)
{
  return r->request_id == id && r->status == ARENAD__V1__STATUS__OK &&
         r->body_case == ARENAD__V1__RESPONSE__BODY_ACCEPTED;
}

/* Waits for the response to request id within w. Returns 0 with *resp
 * set, STALE at EOF between frames, or an error code (EOF inside a frame
 * is ARENA_EPROTO). */
static int receive(arenad_client_t *c, uint64_t id, struct wait *w,
                   Arenad__V1__Response **resp)
{
  for (;;) {
    const uint8_t *body;
    size_t len;
    int rc = wire_reader_next(&c->rd, &body, &len);
    if (rc < 0)
      return arenad_client__fail(c, ARENA_EPROTO,
                                 "malformed reply from %s: %s",
                                 c->socket_path,
                                 rc == ARENA_ETOOBIG
                                     ? "frame over the size limit"
                                     : "zero-length frame");
    if (rc == 1) {
      Arenad__V1__Response *r = NULL;
      rc = wire_unpack_response(body, len, 0, &r);
      if (rc)
        return arenad_client__fail(c, ARENA_EPROTO,
                                   "malformed reply from %s: %s",
                                   c->socket_path, arena_strerror(rc));
      if (is_ack(r, id)) {
        w->acked = 1;
      } else if (r->request_id == id ||
                 (r->request_id == 0 && r->status != ARENAD__V1__STATUS__OK)) {
        *resp = r;
        return 0;
      }
      /* an acknowledgement, or a stale reply to an abandoned request */
      wire_free_response(r);
      continue;
    }
    rc = fill(c, w);
    if (rc == STALE) {
      if (wire_reader_pending(&c->rd))
        return arenad_client__fail(c, ARENA_EPROTO,
                                   "%s closed the connection in the middle "
                                   "of a reply",
                                   c->socket_path);
      return STALE;
    }
    if (rc)
      return rc;
  }
}

/* One attempt of arenad_client__call_packed on the current connection: sends
 * the frame buf (len bytes) and waits for the reply to id. Returns 0
 * with *resp set, STALE, or an error code. */
static int attempt(arenad_client_t *c, const uint8_t *buf, size_t len,
                   uint64_t id, Arenad__V1__Response **resp)
{
  uint64_t t0 = now_ms();
  struct wait w = {t0 + c->request_timeout_ms, t0, 0, 0};
  int rc = send_all(c, buf, len, &w);
  if (rc == STALE) {
    /* The daemon may have refused this connection with a BUSY or DENIED
     * reply before closing it: read that if it is there. */
    struct wait brief = {now_ms() + 100, now_ms(), 1, 1};
    return receive(c, id, &brief, resp) == 0 ? 0 : STALE;
  }
  if (rc)
    return rc;
  return receive(c, id, &w, resp);
}

int arenad_client__pack(arenad_client_t *c, Arenad__V1__Request *req,
                        uint8_t **frame, size_t *len)
{
  req->protocol_version = WIRE_PROTOCOL_VERSION;
  req->want_ack = 1;
  req->request_id = 0; /* appended by arenad_client__call_packed */
  int rc = wire_pack(&req->base, WIRE_DEFAULT_MAX_FRAME, frame, len);
  if (rc == ARENA_ENOMEM)
    return arenad_client__fail(c, rc, "out of memory");
  if (rc)
    return arenad_client__fail(
        c, rc, "request too large for one frame (%zu bytes at most)",
        (size_t)WIRE_DEFAULT_MAX_FRAME);
  return 0;
}

/* Composes in c->frame the frame of body under request id id, growing
 * the buffer when needed. Returns 0 and sets *len, or an error code. */
static int compose(arenad_client_t *c, const uint8_t *body, size_t body_len,
                   uint64_t id, size_t *len)
{
  *len = 0;
  if (body_len > WIRE_DEFAULT_MAX_FRAME)
    return ARENA_ETOOBIG;
  size_t need = WIRE_HEADER_LEN + body_len + WIRE_ID_FIELD_MAX;
  if (need > c->frame_cap) {
    uint8_t *f = realloc(c->frame, need);
    if (!f)
      return ARENA_ENOMEM;
    c->frame = f;
    c->frame_cap = need;
  }
  return wire_frame_with_id(body, body_len, id, WIRE_DEFAULT_MAX_FRAME,
                            c->frame, len);
}

/* Gives back a frame buffer larger than the handle keeps. */
static void trim_frame(arenad_client_t *c)
{
  if (c->frame_cap <= ARENAD_CLIENT__FRAME_KEEP_BYTES)
    return;
  free(c->frame);
  c->frame = NULL;
  c->frame_cap = 0;
}

int arenad_client__call_packed(arenad_client_t *c, const uint8_t *body,
                               size_t body_len, Arenad__V1__Response **resp)
{
  size_t len = 0;
  *resp = NULL;
  c->errmsg[0] = '\0';
  uint64_t id = c->next_id++;
  if (c->next_id == 0)
    c->next_id = 1; /* id 0 is reserved for connection-level replies */
  int rc = compose(c, body, body_len, id, &len);
  if (rc == ARENA_ENOMEM)
    return arenad_client__fail(c, rc, "out of memory");
  if (rc)
    return arenad_client__fail(
        c, rc, "request too large for one frame (%zu bytes at most)",
        (size_t)WIRE_DEFAULT_MAX_FRAME);

  for (int n = 0; n < 2; n++) {
    int reused = c->fd >= 0;
    if (c->fd < 0 && (rc = connect_daemon(c)) != 0)
      break;
    rc = attempt(c, c->frame, len, id, resp);
    if (rc != STALE)
      break;
    drop(c);
    rc = arenad_client__fail(c, ARENA_EUNAVAIL,
                             "%s closed the connection before replying",
                             c->socket_path);
    if (!reused)
      break;
  }
  trim_frame(c);
  if (rc) {
    drop(c);
    return rc;
  }
  if ((*resp)->request_id == 0)
    drop(c); /* a connection-level refusal: the daemon closes it */
  else
    c->reused = 1;
  return 0;
}

int arenad_client__call(arenad_client_t *c, Arenad__V1__Request *req,
                        Arenad__V1__Response **resp)
{
  uint8_t *buf = NULL;
  size_t len = 0;
  *resp = NULL;
  c->errmsg[0] = '\0';
  uint64_t id = c->next_id; /* the one arenad_client__call_packed takes */
  int rc = arenad_client__pack(c, req, &buf, &len);
  if (rc)
    return rc;
  rc = arenad_client__call_packed(c, buf + WIRE_HEADER_LEN,
                                  len - WIRE_HEADER_LEN, resp);
  req->request_id = id;
  free(buf);
  return rc;
}

/* ---- helpers for programs that link only the shared library ----------- */

_Static_assert(ARENAD_CLIENT_DIGEST_LEN == PLANNER_DIGEST_LEN,
               "the header's digest size is the planner's");

void arenad_client_plan_options_init(struct planner_options *o)
{
  planner_options_init(o);
}

void arenad_client_sha256(const void *data, size_t len,
                          uint8_t out[ARENAD_CLIENT_DIGEST_LEN])
{
  planner_sha256(data, len, out);
}

const char *arenad_client_strerror(int code)
{
  return arena_strerror(code);
}

const char *arenad_client_err_name(int code)
{
  return arena_err_name(code);
}

const char *arenad_client_algo_name(enum planner_algo a)
{
  return planner_algo_name(a);
}

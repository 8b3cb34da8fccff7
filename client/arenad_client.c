/*
 * arenad_client.c - the client library: one Unix-socket connection to
 * arenad per handle, blocking requests with deadlines, verification of
 * every plan received, and local planning as a fallback (see
 * arenad_client.h).
 *
 * DESIGN
 *  A handle holds at most one connection (fd >= 0) and a wire_reader for
 *  the bytes coming back. Requests are strictly one at a time: a call
 *  sends one frame, then reads frames until the one carrying its request
 *  id arrives, discarding stale ones. Every wait goes through poll() on a
 *  monotonic deadline, so no call blocks longer than its timeouts.
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
 *  The daemon is never trusted with memory safety: a plan's offsets must
 *  pass planner_verify() against the caller's graph, and its graph digest
 *  must be the digest of the caller's graph, before it is returned.
 */
#include "client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "wire_plan.h"

#define ERRMSG_LEN (2 * ARENA_ERR_LEN) /* room for ours plus the daemon's */

struct arenad_client {
  char *socket_path;           /* owned, NUL-terminated, fits sun_path */
  uint32_t connect_timeout_ms; /* > 0 */
  uint32_t request_timeout_ms; /* > 0 */
  int fallback;                /* 1: plan locally when the daemon fails */
  int fd;                      /* connected socket, or -1 */
  int reused;                  /* 1: fd was opened by an earlier call */
  struct wire_reader rd;       /* bytes from fd not yet taken as frames */
  uint64_t next_id;            /* request id of the next request, >= 1 */
  char errmsg[ERRMSG_LEN];     /* last error text, "" when none */
};

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

static uint64_t now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
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

/* Copies a daemon-supplied message into out, replacing control bytes so
 * that a hostile daemon cannot drive the caller's terminal. */
static void clean_text(const char *in, char *out, size_t cap)
{
  size_t k = 0;
  for (; in && *in && k + 1 < cap; in++) {
    unsigned char ch = (unsigned char)*in;
    out[k++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
  }
  out[k] = '\0';
}

/* ---- options and lifecycle ---------------------------------------------- */

void arenad_client_options_init(struct arenad_client_options *o)
{
  memset(o, 0, sizeof *o);
  o->connect_timeout_ms = ARENAD_CLIENT_DEFAULT_CONNECT_TIMEOUT_MS;
  o->request_timeout_ms = ARENAD_CLIENT_DEFAULT_REQUEST_TIMEOUT_MS;
  o->fallback = 1;
}

int arenad_client_open(const struct arenad_client_options *o,
                       arenad_client_t **out)
{
  struct arenad_client_options def;
  struct sockaddr_un sa;
  *out = NULL;
  if (!o) {
    arenad_client_options_init(&def);
    o = &def;
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
  c->connect_timeout_ms = o->connect_timeout_ms
                              ? o->connect_timeout_ms
                              : ARENAD_CLIENT_DEFAULT_CONNECT_TIMEOUT_MS;
  c->request_timeout_ms = o->request_timeout_ms
                              ? o->request_timeout_ms
                              : ARENAD_CLIENT_DEFAULT_REQUEST_TIMEOUT_MS;
  c->fallback = o->fallback != 0;
  c->fd = -1;
  c->next_id = 1;
  wire_reader_init(&c->rd, ARENAD_CLIENT_MAX_RESPONSE_FRAME);
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

void arenad_client_result_init(struct arenad_client_result *r)
{
  memset(r, 0, sizeof *r);
  planner_plan_init(&r->plan);
}

void arenad_client_result_cleanup(struct arenad_client_result *r)
{
  if (!r)
    return;
  planner_plan_cleanup(&r->plan);
  arenad_client_result_init(r);
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

/* Writes all len bytes before deadline. Returns 0, STALE (the peer closed
 * the connection), or an error code with errmsg set. */
static int send_all(arenad_client_t *c, const uint8_t *buf, size_t len,
                    uint64_t deadline)
{
  size_t done = 0;
  while (done < len) {
    ssize_t n = send(c->fd, buf + done, len - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p = {c->fd, POLLOUT, 0};
      int r = poll(&p, 1, left_ms(deadline));
      if (r == 0)
        return arenad_client__fail(c, ARENA_ETIMEDOUT,
                                   "timed out after %u ms sending a request "
                                   "to %s",
                                   c->request_timeout_ms, c->socket_path);
      continue;
    }
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
      return STALE;
    return arenad_client__fail(c, ARENA_EUNAVAIL, "sending to %s: %s",
                               c->socket_path, strerror(errno));
  }
  return 0;
}

/* Reads what is available into the reader, waiting until deadline.
 * Returns 0 after reading some bytes, STALE at EOF, or an error code. */
static int fill(arenad_client_t *c, uint64_t deadline)
{
  uint8_t buf[65536];
  for (;;) {
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n > 0) {
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
    struct pollfd p = {c->fd, POLLIN, 0};
    int r = poll(&p, 1, left_ms(deadline));
    if (r == 0)
      return arenad_client__fail(c, ARENA_ETIMEDOUT,
                                 "no reply from %s within %u ms",
                                 c->socket_path, c->request_timeout_ms);
  }
}

/* Waits for the response to request id. Returns 0 with *resp set, STALE
 * at EOF between frames, or an error code (EOF inside a frame is
 * ARENA_EPROTO). */
static int receive(arenad_client_t *c, uint64_t id, uint64_t deadline,
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
      if (r->request_id == id ||
          (r->request_id == 0 && r->status != ARENAD__V1__STATUS__OK)) {
        *resp = r;
        return 0;
      }
      wire_free_response(r); /* stale: a reply to an abandoned request */
      continue;
    }
    rc = fill(c, deadline);
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

int arenad_client__call(arenad_client_t *c, Arenad__V1__Request *req,
                        Arenad__V1__Response **resp)
{
  uint8_t *buf = NULL;
  size_t len = 0;
  *resp = NULL;
  c->errmsg[0] = '\0';
  req->protocol_version = WIRE_PROTOCOL_VERSION;
  req->request_id = c->next_id++;
  if (c->next_id == 0)
    c->next_id = 1; /* id 0 is reserved for connection-level replies */
  int rc = wire_pack(&req->base, WIRE_DEFAULT_MAX_FRAME, &buf, &len);
  if (rc)
    return arenad_client__fail(
        c, rc, "request too large for one frame (%zu bytes at most)",
        (size_t)WIRE_DEFAULT_MAX_FRAME);

  for (int attempt = 0; attempt < 2; attempt++) {
    int reused = c->fd >= 0;
    if (c->fd < 0 && (rc = connect_daemon(c)) != 0)
      break;
    uint64_t deadline = now_ms() + c->request_timeout_ms;
    rc = send_all(c, buf, len, deadline);
    if (rc == STALE) {
      /* The daemon may have refused this connection with a BUSY or
       * DENIED reply before closing it: read that if it is there. */
      rc = receive(c, req->request_id, now_ms() + 100, resp);
      if (rc == 0)
        break;
      rc = STALE;
    } else if (rc == 0) {
      rc = receive(c, req->request_id, deadline, resp);
    }
    if (rc != STALE)
      break;
    drop(c);
    rc = arenad_client__fail(c, ARENA_EUNAVAIL,
                             "%s closed the connection before replying",
                             c->socket_path);
    if (!reused)
      break;
  }
  free(buf);
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

/* ---- statuses ----------------------------------------------------------- */

int arenad_client__status_code(Arenad__V1__Status s)
{
  switch (s) {
  case ARENAD__V1__STATUS__OK: return 0;
  case ARENAD__V1__STATUS__NOT_FOUND: return ARENA_ENOENT;
  case ARENAD__V1__STATUS__INVALID_ARGUMENT: return ARENA_EINVAL;
  case ARENAD__V1__STATUS__BUSY: return ARENA_EBUSY;
  case ARENAD__V1__STATUS__DENIED: return ARENA_EDENIED;
  case ARENAD__V1__STATUS__TOO_LARGE: return ARENA_ETOOBIG;
  case ARENAD__V1__STATUS__UNSUPPORTED_VERSION: return ARENA_EVERSION;
  case ARENAD__V1__STATUS__INTERNAL: return ARENA_EINTERNAL;
  default: return ARENA_EPROTO;
  }
}

int arenad_client__check_status(arenad_client_t *c,
                                const Arenad__V1__Response *resp,
                                const char *what)
{
  int code = arenad_client__status_code(resp->status);
  if (code == 0)
    return 0;
  char msg[ARENA_ERR_LEN];
  clean_text(resp->error, msg, sizeof msg);
  if (code == ARENA_EPROTO)
    return arenad_client__fail(c, code, "%s: unknown status %d%s%s", what,
                               (int)resp->status, msg[0] ? ": " : "", msg);
  return arenad_client__fail(c, code, "%s: %s%s%s", what,
                             wire_status_name(resp->status),
                             msg[0] ? ": " : "", msg);
}

/* ---- keys --------------------------------------------------------------- */

int arenad_client__check_key(const struct arenad_model_key *k,
                             char err[ARENA_ERR_LEN])
{
  char tmp[ARENA_ERR_LEN];
  if (!err)
    err = tmp;
  if (!k || !k->model_hash || k->model_hash_len == 0 ||
      k->model_hash_len > ARENAD_CLIENT_MAX_MODEL_HASH) {
    snprintf(err, ARENA_ERR_LEN, "model hash must be 1 to %u bytes",
             ARENAD_CLIENT_MAX_MODEL_HASH);
    return ARENA_EINVAL;
  }
  if (k->n_inputs > WIRE_MAX_INPUTS || (k->n_inputs && !k->inputs)) {
    snprintf(err, ARENA_ERR_LEN, "input shape must have 0 to %u inputs",
             WIRE_MAX_INPUTS);
    return ARENA_EINVAL;
  }
  for (size_t i = 0; i < k->n_inputs; i++) {
    const struct arenad_dims *d = &k->inputs[i];
    if (d->n_dims > WIRE_MAX_RANK || (d->n_dims && !d->dims)) {
      snprintf(err, ARENA_ERR_LEN, "input %zu: rank must be 0 to %u", i,
               WIRE_MAX_RANK);
      return ARENA_EINVAL;
    }
    for (size_t j = 0; j < d->n_dims; j++)
      if (d->dims[j] < 0) {
        snprintf(err, ARENA_ERR_LEN, "input %zu: dim %zu is negative", i, j);
        return ARENA_EINVAL;
      }
  }
  return 0;
}

int arenad_client__shape_init(struct arenad_client__shape *s,
                              const struct arenad_model_key *k)
{
  memset(s, 0, sizeof *s);
  if (k->n_inputs == 0)
    return 0;
  s->dims = calloc(k->n_inputs, sizeof *s->dims);
  s->ptrs = calloc(k->n_inputs, sizeof *s->ptrs);
  if (!s->dims || !s->ptrs) {
    arenad_client__shape_cleanup(s);
    return ARENA_ENOMEM;
  }
  for (size_t i = 0; i < k->n_inputs; i++) {
    arenad__v1__dims__init(&s->dims[i]);
    /* Packing only reads the array; the cast drops const for the
     * generated struct's sake. */
    s->dims[i].dims = (int64_t *)k->inputs[i].dims;
    s->dims[i].n_dims = k->inputs[i].n_dims;
    s->ptrs[i] = &s->dims[i];
  }
  s->n = k->n_inputs;
  return 0;
}

void arenad_client__shape_cleanup(struct arenad_client__shape *s)
{
  free(s->dims);
  free(s->ptrs);
  memset(s, 0, sizeof *s);
}

/* ---- plan --------------------------------------------------------------- */

/* Checks the digests a reply carries against ours. */
static int check_digests(arenad_client_t *c, const Arenad__V1__PlanReply *r,
                         const uint8_t *gd, const uint8_t *od)
{
  if (r->graph_digest.len != PLANNER_DIGEST_LEN)
    return arenad_client__fail(c, ARENA_EPROTO,
                               "daemon's plan has a %zu-byte graph digest",
                               r->graph_digest.len);
  if (memcmp(r->graph_digest.data, gd, PLANNER_DIGEST_LEN) != 0)
    return arenad_client__fail(c, ARENA_EVERIFY,
                               "daemon returned a plan for another graph "
                               "(graph digest mismatch)");
  if (r->options_digest.len != 0 &&
      r->options_digest.len != PLANNER_DIGEST_LEN)
    return arenad_client__fail(c, ARENA_EPROTO,
                               "daemon's plan has a %zu-byte options digest",
                               r->options_digest.len);
  if (r->options_digest.len &&
      memcmp(r->options_digest.data, od, PLANNER_DIGEST_LEN) != 0)
    return arenad_client__fail(c, ARENA_EVERIFY,
                               "daemon returned a plan for other options "
                               "(options digest mismatch)");
  return 0;
}

/* Verifies a plan built from a reply against the caller's graph. */
static int verify(arenad_client_t *c, const struct planner_graph *g,
                  const struct planner_options *o,
                  const struct planner_plan *p)
{
  char err[ARENA_ERR_LEN] = "";
  int rc = planner_verify(g, o, p, err);
  if (rc == ARENA_ENOMEM)
    return arenad_client__fail(c, rc, "verifying the daemon's plan: out of "
                                      "memory");
  if (rc)
    return arenad_client__fail(c, ARENA_EVERIFY,
                               "daemon's plan failed verification: %s",
                               err[0] ? err : arena_strerror(rc));
  if (o->capacity && p->fit == PLANNER_FIT_YES && p->arena_bytes > o->capacity)
    return arenad_client__fail(c, ARENA_EVERIFY,
                               "daemon's plan claims to fit %llu bytes but "
                               "needs %llu",
                               (unsigned long long)o->capacity,
                               (unsigned long long)p->arena_bytes);
  return 0;
}

/* Copies a reply into out->plan, checking the offset count first. */
static int take_reply(arenad_client_t *c, const Arenad__V1__PlanReply *r,
                      size_t n, struct arenad_client_result *out)
{
  if (r->n_offsets != n)
    return arenad_client__fail(c, ARENA_EVERIFY,
                               "daemon's plan has %zu offsets for %zu "
                               "tensors",
                               r->n_offsets, n);
  int rc = wire_plan_from_reply(r, &out->plan);
  if (rc == ARENA_EPROTO)
    return arenad_client__fail(c, rc, "daemon's plan has an unknown "
                                      "algorithm or fit value");
  if (rc)
    return arenad_client__fail(c, rc, "out of memory");
  return 0;
}

/* The daemon path of arenad_client_plan. */
static int plan_remote(arenad_client_t *c, const struct planner_graph *g,
                       const struct planner_options *o,
                       const struct arenad_model_key *k,
                       struct arenad_client_result *out)
{
  Arenad__V1__Plan pm;
  Arenad__V1__PlanOptions po;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Response *resp = NULL;
  struct arenad_client__shape sh;
  int rc = arenad_client__shape_init(&sh, k);
  if (rc)
    return arenad_client__fail(c, rc, "out of memory");
  rc = wire_plan_msg_init(&pm, &po, g, o, k->model_hash, k->model_hash_len,
                          sh.ptrs, sh.n);
  if (rc) {
    arenad_client__shape_cleanup(&sh);
    return arenad_client__fail(c, rc, "out of memory");
  }
  req.body_case = ARENAD__V1__REQUEST__BODY_PLAN;
  req.plan = &pm;
  rc = arenad_client__call(c, &req, &resp);
  wire_plan_msg_cleanup(&pm);
  arenad_client__shape_cleanup(&sh);
  if (rc)
    return rc;
  rc = arenad_client__check_status(c, resp, "daemon");
  if (!rc && (resp->body_case != ARENAD__V1__RESPONSE__BODY_PLAN ||
              !resp->plan))
    rc = arenad_client__fail(c, ARENA_EPROTO,
                             "daemon answered a plan request without a "
                             "plan");
  if (!rc)
    rc = check_digests(c, resp->plan, out->graph_digest,
                       out->options_digest);
  if (!rc)
    rc = take_reply(c, resp->plan, g->n_tensors, out);
  if (!rc)
    rc = verify(c, g, o, &out->plan);
  if (!rc) {
    out->cached = resp->plan->cached;
    out->planning_us = resp->plan->planning_us;
  }
  wire_free_response(resp);
  return rc;
}

/* Validates the caller's inputs and computes both digests into out. */
static int prepare(arenad_client_t *c, const struct planner_graph *g,
                   const struct planner_options *o,
                   const struct arenad_model_key *k,
                   struct arenad_client_result *out)
{
  char err[ARENA_ERR_LEN] = "";
  int rc = planner_validate(g, o, err);
  if (rc)
    return arenad_client__fail(c, rc, "invalid graph: %s",
                               err[0] ? err : arena_strerror(rc));
  if ((rc = arenad_client__check_key(k, err)) != 0)
    return arenad_client__fail(c, rc, "invalid model key: %s", err);
  if ((rc = planner_graph_digest(g, out->graph_digest)) != 0)
    return arenad_client__fail(c, rc, "digest of the graph: %s",
                               arena_strerror(rc));
  planner_options_digest(o, out->options_digest);
  return 0;
}

int arenad_client_plan(arenad_client_t *c, const struct planner_graph *g,
                       const struct planner_options *o,
                       const struct arenad_model_key *k,
                       struct arenad_client_result *out)
{
  struct planner_options def;
  arenad_client_result_cleanup(out);
  c->errmsg[0] = '\0';
  if (!o) {
    planner_options_init(&def);
    o = &def;
  }
  int rc = prepare(c, g, o, k, out);
  if (rc)
    goto fail;
  rc = plan_remote(c, g, o, k, out);
  if (rc == 0)
    return 0;
  if (!c->fallback)
    goto fail;

  /* Fallback: plan here. Keep the daemon's failure in errmsg. */
  char why[ERRMSG_LEN];
  memcpy(why, c->errmsg, sizeof why);
  uint8_t gd[PLANNER_DIGEST_LEN], od[PLANNER_DIGEST_LEN];
  memcpy(gd, out->graph_digest, sizeof gd);
  memcpy(od, out->options_digest, sizeof od);
  arenad_client_result_cleanup(out);
  memcpy(out->graph_digest, gd, sizeof gd);
  memcpy(out->options_digest, od, sizeof od);
  out->local = 1;
  out->fallback_reason = rc;
  char err[ARENA_ERR_LEN] = "";
  uint64_t t0 = now_us();
  int lrc = planner_run(g, o, &out->plan, err);
  out->planning_us = now_us() - t0;
  if (lrc) {
    rc = arenad_client__fail(c, lrc, "planning locally: %s (daemon: %s)",
                             err[0] ? err : arena_strerror(lrc), why);
    goto fail;
  }
  arenad_client__fail(c, 0, "planned locally: %.*s", ARENA_ERR_LEN, why);
  return 0;
fail:
  arenad_client_result_cleanup(out);
  return rc;
}

/* ---- lookup ------------------------------------------------------------- */

/* A tensor's position in the caller's graph, for sorting by id. */
struct by_id {
  uint32_t id;  /* tensor id, unique in a validated graph */
  size_t index; /* position in the caller's array */
};

static int cmp_by_id(const void *a, const void *b)
{
  const struct by_id *x = a, *y = b;
  return (x->id > y->id) - (x->id < y->id);
}

/* Reorders offsets from ascending id order to g's order, in place. */
static int to_caller_order(arenad_client_t *c, const struct planner_graph *g,
                           struct planner_plan *p)
{
  size_t n = g->n_tensors;
  struct by_id *ix = malloc(n * sizeof *ix);
  uint64_t *off = malloc(n * sizeof *off);
  if (!ix || !off) {
    free(ix);
    free(off);
    return arenad_client__fail(c, ARENA_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    ix[i].id = g->tensors[i].id;
    ix[i].index = i;
  }
  qsort(ix, n, sizeof *ix, cmp_by_id);
  for (size_t k = 0; k < n; k++)
    off[ix[k].index] = p->offsets[k];
  free(ix);
  free(p->offsets);
  p->offsets = off;
  return 0;
}

static int bytes_eq(ProtobufCBinaryData b, const uint8_t *d)
{
  return b.len == PLANNER_DIGEST_LEN && memcmp(b.data, d, b.len) == 0;
}

int arenad_client_lookup(arenad_client_t *c, const struct arenad_model_key *k,
                         const struct planner_graph *g,
                         const struct planner_options *o,
                         struct arenad_client_result *out)
{
  struct planner_options def;
  Arenad__V1__Lookup lm = ARENAD__V1__LOOKUP__INIT;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Response *resp = NULL;
  struct arenad_client__shape sh;
  arenad_client_result_cleanup(out);
  c->errmsg[0] = '\0';
  if (!o) {
    planner_options_init(&def);
    o = &def;
  }
  int rc = prepare(c, g, o, k, out);
  if (rc)
    goto out;
  if ((rc = arenad_client__shape_init(&sh, k)) != 0) {
    rc = arenad_client__fail(c, rc, "out of memory");
    goto out;
  }
  lm.model_hash.data = (uint8_t *)k->model_hash;
  lm.model_hash.len = k->model_hash_len;
  lm.input_shape = sh.ptrs;
  lm.n_input_shape = sh.n;
  lm.graph_digest.data = out->graph_digest;
  lm.graph_digest.len = PLANNER_DIGEST_LEN;
  req.body_case = ARENAD__V1__REQUEST__BODY_LOOKUP;
  req.lookup = &lm;
  rc = arenad_client__call(c, &req, &resp);
  arenad_client__shape_cleanup(&sh);
  if (rc)
    goto out;
  if ((rc = arenad_client__check_status(c, resp, "lookup")) != 0)
    goto out;
  if (resp->body_case != ARENAD__V1__RESPONSE__BODY_LOOKUP || !resp->lookup) {
    rc = arenad_client__fail(c, ARENA_EPROTO,
                             "daemon answered a lookup without plans");
    goto out;
  }
  const Arenad__V1__PlanReply *match = NULL;
  for (size_t i = 0; i < resp->lookup->n_plans && !match; i++) {
    const Arenad__V1__PlanReply *r = resp->lookup->plans[i];
    if (r && bytes_eq(r->graph_digest, out->graph_digest) &&
        bytes_eq(r->options_digest, out->options_digest))
      match = r;
  }
  if (!match) {
    rc = arenad_client__fail(c, ARENA_ENOENT,
                             "lookup: %zu stored plan%s, none for this graph "
                             "and these options",
                             resp->lookup->n_plans,
                             resp->lookup->n_plans == 1 ? "" : "s");
    goto out;
  }
  if ((rc = take_reply(c, match, g->n_tensors, out)) != 0 ||
      (rc = to_caller_order(c, g, &out->plan)) != 0 ||
      (rc = verify(c, g, o, &out->plan)) != 0)
    goto out;
  out->cached = 1;
  out->planning_us = match->planning_us;
out:
  wire_free_response(resp);
  if (rc)
    arenad_client_result_cleanup(out);
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

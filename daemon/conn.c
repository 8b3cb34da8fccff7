/*
 * conn.c - one client connection: reading frames, dispatching requests,
 * writing replies, backpressure, the idle timeout and closing. Whether a
 * new connection may stay (peer credentials, allow-lists, room under the
 * connection limits) is admit.c's, which calls into this file through
 * conn_int.h.
 *
 * DESIGN: reading is on only while the connection has room: fewer than
 * max_inflight_per_conn unanswered requests and fewer than
 * write_queue_bytes of unsent replies. Frames already buffered are
 * "pumped" whenever room appears (a job finished, a write completed), so
 * pipelined requests are served in arrival order of their frames.
 * A connection is freed only after both of its handles' close callbacks
 * and all of its write callbacks have run.
 *
 * UNREAD REPLIES: a reply the socket does not take at once waits in
 * libuv's queue, its whole frame held, until the peer reads. A peer that
 * never reads would hold it for ever, so the bytes held are bounded: a
 * reply that would take a connection's held bytes over
 * write_queue_max_bytes, or those of all the connections of its peer
 * uid over write_queue_max_bytes_per_uid, is answered BUSY instead
 * (unless nothing of that connection, or of that uid, waits: one reply
 * always goes, whatever its size; and a status reply, under 1 KiB,
 * always goes). Before refusing one for its uid, the uid's stalled
 * connections are closed, least recently active first. A connection's
 * writes make progress when a write completes or libuv's queue shrinks
 * (looked at on each check); one whose writes made none for
 * idle_timeout_ms is closed, and one that made none for a second (or
 * idle_timeout_ms, if shorter) is stalled: it counts as idle when room
 * is needed (admit.c, ROOM FOR NEW CLIENTS).
 *
 * LAYER: below server.c and admit.c, above the jobs (report.h).
 * Requests go down to jobs_submit_plan() and jobs_submit_storage(); the jobs come back
 * through the entries that conn_report_init() puts in s->report (send,
 * send_status, job_start, job_done, peer_desc), never by calling this
 * file. A close or a finished write tells the draining server through
 * s->report.drain_check.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena_version.h"
#include "conn_int.h"
#include "wire_bundle.h"



struct wreq {
  uv_write_t req;
  struct conn *c;
  uint8_t *buf; /* owned packed frame */
  size_t len;   /* bytes of it handed to libuv */
  size_t held;  /* bytes of it: len and what went at once */
};

static void pump(struct conn *c);
static void on_idle(uv_timer_t *t);

/* Replies of at most this many bytes (a status, a small plan) are never
 * refused for the bounds on unsent bytes: a refusal is one itself. */
#define SMALL_REPLY_BYTES 1024u
/* Writes that made no progress for this long (or idle_timeout_ms, if
 * shorter) make a connection count as idle when room is needed: a peer
 * that reads takes its socket's bytes within moments. */
#define STALL_MS 1000u

/* The ms since c's writes last made progress, 0 when nothing of it is
 * unsent. Looks at libuv's queue: when it shrank since the last look,
 * the peer read some of it, and that is progress now. */
static uint64_t write_stall_ms(struct conn *c, uint64_t now)
{
  if (!c->write_queued)
    return 0;
  size_t q = uv_stream_get_write_queue_size((const uv_stream_t *)&c->pipe);
  if (q < c->wq_seen)
    c->wprogress_ms = now;
  c->wq_seen = q;
  return now - c->wprogress_ms;
}

int conn__same_peer(const struct conn *a, const struct conn *b)
{
  return a->has_cred == b->has_cred && (!a->has_cred || a->uid == b->uid);
}

static uint64_t stall_grace_ms(const struct server *s)
{
  return s->cfg.idle_timeout_ms < STALL_MS ? s->cfg.idle_timeout_ms
                                           : STALL_MS;
}

const char *conn__peer_desc(const struct conn *c, char *buf,
                            size_t len)
{
  if (c->has_cred)
    snprintf(buf, len, "conn %" PRIu64 " (pid %ld uid %lu gid %lu)", c->id,
             (long)c->pid, (unsigned long)c->uid, (unsigned long)c->gid);
  else
    snprintf(buf, len, "conn %" PRIu64 " (peer unknown)", c->id);
  return buf;
}

static void maybe_free(struct conn *c)
{
  if (c->handles == 0 && c->writes == 0) {
    wire_reader_cleanup(&c->rd);
    free(c);
  }
}

static void on_handle_closed(uv_handle_t *h)
{
  struct conn *c = h->data;
  c->handles--;
  maybe_free(c);
}

static void list_unlink(struct conn *c)
{
  struct server *s = c->s;
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  else
    s->conns_tail = c->prev;
  c->prev = c->next = NULL;
}

static void list_append(struct conn *c)
{
  struct server *s = c->s;
  c->prev = s->conns_tail;
  c->next = NULL;
  if (s->conns_tail)
    s->conns_tail->next = c;
  else
    s->conns = c;
  s->conns_tail = c;
}

/* c was active just now: it moves to the end of the list (a closing
 * connection has left the list and stays out). */
static void conn_touch(struct conn *c)
{
  if (c->closing)
    return;
  c->active_ms = uv_now(&c->s->loop);
  if (c->s->conns_tail != c) {
    list_unlink(c);
    list_append(c);
  }
}

void conn__close(struct conn *c)
{
  if (c->closing)
    return;
  struct server *s = c->s;
  c->closing = 1;
  jobs_detach_conn(s, c);
  list_unlink(c);
  s->n_conns--;
  uv_read_stop((uv_stream_t *)&c->pipe);
  uv_close((uv_handle_t *)&c->pipe, on_handle_closed);
  uv_close((uv_handle_t *)&c->idle, on_handle_closed);
  if (s->draining)
    s->report.drain_check(s);
}

void conn_close_all(struct server *s)
{
  while (s->conns)
    conn__close(s->conns);
}

static void on_write(uv_write_t *req, int status)
{
  struct wreq *w = (struct wreq *)req;
  struct conn *c = w->c;
  c->writes--;
  c->write_queued -= w->len;
  c->write_held -= w->held;
  free(w->buf);
  free(w);
  if (!c->closing && status >= 0) {
    /* A whole reply went out: progress, and when it was the last one
     * waiting, activity (the idle timeout counts from here). */
    c->wprogress_ms = uv_now(&c->s->loop);
    c->wq_seen = uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe);
    if (!c->write_queued) {
      uv_timer_again(&c->idle);
      conn_touch(c);
    }
  }
  if (!c->closing) {
    if (status < 0) {
      char who[96];
      dlog(&c->s->log, DLOG_DEBUG, "%s: write failed: %s",
           conn__peer_desc(c, who, sizeof who), uv_strerror(status));
      conn__close(c);
    } else if (c->close_after_write && c->write_queued == 0) {
      conn__close(c);
    } else {
      pump(c);
    }
  }
  if (c->s->draining)
    c->s->report.drain_check(c->s);
  maybe_free(c);
}

/* Largest reply frame: a plan of the largest graph, with slack. */
static size_t reply_max(const struct server *s)
{
  uint64_t m = s->limits.max_tensors * 12 + (1u << 20);
  return m > (256u << 20) ? m : (256u << 20);
}

/* Writes what the socket takes at once when nothing is queued before
 * it, so that a small reply costs one write() and no callback; returns
 * the bytes written (0 when it must wait). While draining every reply
 * goes through the queue, whose completions drive the drain. */
static size_t write_now(struct conn *c, const uint8_t *frame, size_t len)
{
  if (c->writes || c->s->draining)
    return 0;
  uv_buf_t b = uv_buf_init((char *)frame, (unsigned)len);
  int n = uv_try_write((uv_stream_t *)&c->pipe, &b, 1);
  return n > 0 ? (size_t)n : 0;
}

static void conn_send_status(struct conn *c, uint64_t request_id,
                             Arenad__V1__Status st, const char *msg);

/* Bytes of replies held for the connections of c's peer uid, c among
 * them (closing ones have left the list). */
static uint64_t uid_held(const struct server *s, const struct conn *c)
{
  uint64_t q = 0;
  for (const struct conn *o = s->conns; o; o = o->next)
    if (conn__same_peer(o, c))
      q += o->write_held;
  return q;
}

/* The least recently active stalled connection of c's peer uid other
 * than c, or NULL. */
static struct conn *stalled_of_uid(struct server *s, const struct conn *c)
{
  uint64_t now = uv_now(&s->loop);
  for (struct conn *v = s->conns; v; v = v->next)
    if (v != c && v->write_queued && conn__same_peer(v, c) &&
        conn__idle(v, now))
      return v;
  return NULL;
}

/* Which bound a reply would break. */
enum reply_room { ROOM_OK, ROOM_CONN, ROOM_UID };

/* Whether a reply of len bytes may wait on c under the bounds on the
 * replies held (UNREAD REPLIES above), after closing the stalled
 * connections of c's uid that stand in its way; else the bound it
 * would break. */
static enum reply_room reply_fits(struct conn *c, size_t len)
{
  struct server *s = c->s;
  if (len <= SMALL_REPLY_BYTES)
    return ROOM_OK;
  if (c->write_held && c->write_held + len > s->cfg.write_queue_max_bytes)
    return ROOM_CONN;
  uint64_t q = uid_held(s, c);
  while (q && q + len > s->cfg.write_queue_max_bytes_per_uid) {
    struct conn *v = stalled_of_uid(s, c);
    if (!v)
      return ROOM_UID;
    char who[96], whom[96];
    dlog(&s->log, DLOG_WARNING,
         "%s: write_queue_max_bytes_per_uid reached: closed %s, its "
         "replies unread for %" PRIu64 " ms, to make room",
         conn__peer_desc(c, who, sizeof who),
         conn__peer_desc(v, whom, sizeof whom),
         uv_now(&s->loop) - v->wprogress_ms);
    q -= v->write_held;
    s->c.stalled_closes++;
    conn__close(v);
  }
  return ROOM_OK;
}

static void conn_send_frame(struct conn *c, uint64_t request_id,
                            uint8_t *frame, size_t len)
{
  if (c->closing) {
    free(frame);
    return;
  }
  enum reply_room room = reply_fits(c, len);
  if (room != ROOM_OK) {
    struct server *s = c->s;
    char who[96], msg[160];
    free(frame);
    s->c.reply_refusals++;
    dlog(&s->log, DLOG_WARNING,
         "%s: a reply of %zu bytes would take the replies held over "
         "write_queue_max_bytes%s; sent BUSY instead",
         conn__peer_desc(c, who, sizeof who), len,
         room == ROOM_CONN ? "" : "_per_uid");
    snprintf(msg, sizeof msg,
             "a reply of %zu bytes waits: the replies already sent to "
             "this %s are unread; read them, or retry later",
             len, room == ROOM_CONN ? "connection" : "user");
    conn_send_status(c, request_id, ARENAD__V1__STATUS__BUSY, msg);
    return;
  }
  size_t done = write_now(c, frame, len);
  if (done == len) {
    free(frame);
    return;
  }
  struct wreq *w = calloc(1, sizeof *w);
  if (!w) {
    free(frame);
    conn__close(c);
    return;
  }
  w->c = c;
  w->buf = frame;
  w->len = len - done;
  w->held = len;
  uv_buf_t b = uv_buf_init((char *)frame + done, (unsigned)w->len);
  int rc = uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1, on_write);
  if (rc < 0) {
    free(w->buf);
    free(w);
    conn__close(c);
    return;
  }
  if (!c->write_queued)
    c->wprogress_ms = uv_now(&c->s->loop); /* replies begin to wait */
  c->writes++;
  c->write_queued += w->len;
  c->write_held += w->held;
  c->wq_seen = uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe);
}

static void conn_send(struct conn *c, const Arenad__V1__Response *r)
{
  if (c->closing)
    return;
  uint8_t *frame;
  size_t len;
  int rc = wire_pack(&r->base, reply_max(c->s), &frame, &len);
  if (rc) {
    char who[96];
    dlog(&c->s->log, DLOG_ERR, "%s: cannot pack reply: %s",
         conn__peer_desc(c, who, sizeof who), arena_strerror(rc));
    conn__close(c);
    return;
  }
  conn_send_frame(c, r->request_id, frame, len);
}

static void conn_send_status(struct conn *c, uint64_t request_id,
                             Arenad__V1__Status st, const char *msg)
{
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  r.request_id = request_id;
  r.status = st;
  r.error = (char *)(msg ? msg : "");
  conn_send(c, &r);
}

/* Sends a last reply and closes once it is out. */
void conn__reject(struct conn *c, Arenad__V1__Status st, const char *msg)
{
  conn_send_status(c, 0, st, msg);
  c->close_after_write = 1;
  if (!c->closing && c->write_queued == 0)
    conn__close(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);

static void update_reading(struct conn *c)
{
  struct server *s = c->s;
  int want = !c->closing && !c->close_after_write && !s->draining &&
             c->inflight < s->cfg.max_inflight_per_conn &&
             c->write_queued < s->cfg.write_queue_bytes;
  if (want && !c->reading) {
    if (uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) == 0)
      c->reading = 1;
  } else if (!want && c->reading) {
    uv_read_stop((uv_stream_t *)&c->pipe);
    c->reading = 0;
  }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
  (void)suggested;
  struct conn *c = h->data;
  *buf = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

static void protocol_error(struct conn *c, int rc, const char *what)
{
  struct server *s = c->s;
  char who[96];
  s->c.protocol_errors++;
  dlog(&s->log, DLOG_WARNING, "%s: %s: %s; dropping the connection",
       conn__peer_desc(c, who, sizeof who), what, arena_strerror(rc));
  conn__reject(c,
         rc == ARENA_ETOOBIG ? ARENAD__V1__STATUS__TOO_LARGE
                             : ARENAD__V1__STATUS__INVALID_ARGUMENT,
         what);
}

static void handle_ping(struct conn *c, Arenad__V1__Request *req)
{
  Arenad__V1__Response r = ARENAD__V1__RESPONSE__INIT;
  Arenad__V1__Pong pong = ARENAD__V1__PONG__INIT;
  pong.payload = req->ping->payload;
  pong.version = (char *)ARENA_VERSION;
  r.request_id = req->request_id;
  r.body_case = ARENAD__V1__RESPONSE__BODY_PONG;
  r.pong = &pong;
  conn_send(c, &r);
  wire_free_request(req);
}

/* Answers a Preload of more entries than one bundle may hold with
 * TOO_LARGE before it is decoded (a minimal entry of some 30 bytes
 * decodes to about 700: docs/bundles.md, "Limits"). Returns 1 when it
 * answered. */
static int preload_too_large(struct conn *c, const uint8_t *body, size_t len)
{
  uint64_t rid;
  size_t n;
  char why[ARENA_ERR_LEN], msg[ARENA_ERR_LEN + 40];
  if (!wire_bundle_scan_preload(body, len, &rid, &n) ||
      wire_bundle_check_count(n, NULL, why) == 0)
    return 0;
  c->s->c.requests++;
  snprintf(msg, sizeof msg, "preload refused, nothing stored: %s", why);
  conn_send_status(c, rid, ARENAD__V1__STATUS__TOO_LARGE, msg);
  return 1;
}

static void handle_frame(struct conn *c, const uint8_t *body, size_t len)
{
  struct server *s = c->s;
  Arenad__V1__Request *req;
  c->got_frame = 1;
  uv_timer_again(&c->idle);
  conn_touch(c);
  if (preload_too_large(c, body, len))
    return;
  int rc = wire_unpack_request(body, len, s->cfg.request_mem_bytes, &req);
  if (rc) {
    protocol_error(c, rc,
                   rc == ARENA_ETOOBIG ? "request decodes to more than "
                                         "request_mem_bytes"
                                       : "frame is not a valid Request");
    return;
  }
  s->c.requests++;
  if (dlog_enabled(&s->log, DLOG_DEBUG)) {
    char who[96];
    dlog(&s->log, DLOG_DEBUG, "%s: request %" PRIu64 " kind %d",
         conn__peer_desc(c, who, sizeof who), req->request_id,
         (int)req->body_case);
  }
  if (req->protocol_version != WIRE_PROTOCOL_VERSION) {
    char msg[96];
    snprintf(msg, sizeof msg, "protocol version %u is not supported (%u is)",
             req->protocol_version, WIRE_PROTOCOL_VERSION);
    conn_send_status(c, req->request_id,
                     ARENAD__V1__STATUS__UNSUPPORTED_VERSION, msg);
    wire_free_request(req);
    return;
  }
  switch (req->body_case) {
  case ARENAD__V1__REQUEST__BODY_PING:
    handle_ping(c, req);
    return;
  case ARENAD__V1__REQUEST__BODY_PLAN:
    jobs_submit_plan(s, c, req->request_id, req);
    return;
  case ARENAD__V1__REQUEST__BODY_LOOKUP:
  case ARENAD__V1__REQUEST__BODY_LIST:
  case ARENAD__V1__REQUEST__BODY_STATS:
  case ARENAD__V1__REQUEST__BODY_EVICT:
  case ARENAD__V1__REQUEST__BODY_EXPORT_PLANS:
  case ARENAD__V1__REQUEST__BODY_PRELOAD_PLANS:
  case ARENAD__V1__REQUEST__BODY_ATTACH:
    jobs_submit_storage(s, c, req->request_id, req);
    return;
  default:
    conn_send_status(c, req->request_id,
                     ARENAD__V1__STATUS__INVALID_ARGUMENT,
                     "request has no body");
    wire_free_request(req);
    return;
  }
}

static void pump(struct conn *c)
{
  struct server *s = c->s;
  while (!c->closing && !c->close_after_write && !s->draining &&
         c->inflight < s->cfg.max_inflight_per_conn &&
         c->write_queued < s->cfg.write_queue_bytes) {
    const uint8_t *body;
    size_t len;
    int rc = wire_reader_next(&c->rd, &body, &len);
    if (rc == 0)
      break;
    if (rc < 0) {
      protocol_error(c, rc,
                     rc == ARENA_ETOOBIG ? "frame longer than max_frame_bytes"
                                         : "zero-length frame");
      return;
    }
    handle_frame(c, body, len);
  }
  if (!c->closing)
    update_reading(c);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
  (void)buf;
  struct conn *c = st->data;
  if (nread == 0)
    return;
  if (nread < 0) {
    char who[96];
    if (nread != UV_EOF)
      dlog(&c->s->log, DLOG_DEBUG, "%s: read failed: %s",
           conn__peer_desc(c, who, sizeof who), uv_strerror((int)nread));
    conn__close(c);
    return;
  }
  /* No idle-timer restart here: only complete requests count as activity
   * (handle_frame), so a peer that trickles a frame byte by byte is still
   * closed at the idle timeout. */
  int rc = wire_reader_feed(&c->rd, c->rbuf, (size_t)nread);
  if (rc) {
    protocol_error(c, rc, "cannot buffer request");
    return;
  }
  pump(c);
}

/* c's replies wait: closes c when its writes made no progress for
 * idle_timeout_ms, else checks again when they would have. */
static void check_stall(struct conn *c)
{
  struct server *s = c->s;
  uint64_t lim = s->cfg.idle_timeout_ms;
  uint64_t stalled = write_stall_ms(c, uv_now(&s->loop));
  if (stalled < lim) {
    uv_timer_start(&c->idle, on_idle, lim - stalled, lim);
    return;
  }
  char who[96];
  s->c.stalled_closes++;
  dlog(&s->log, DLOG_INFO,
       "%s: replies unread for %" PRIu64 " ms (%zu %s unsent), closing",
       conn__peer_desc(c, who, sizeof who), stalled, c->write_queued,
       dlog_noun(c->write_queued, "byte", "bytes"));
  conn__close(c);
}

static void on_idle(uv_timer_t *t)
{
  struct conn *c = t->data;
  if (c->inflight)
    return; /* busy, not idle: the repeating timer checks again */
  if (c->write_queued) {
    check_stall(c);
    return;
  }
  char who[96];
  conn__peer_desc(c, who, sizeof who);
  if (c->got_frame)
    dlog(&c->s->log, DLOG_INFO, "%s: idle for %" PRIu64 " ms, closing", who,
         uv_now(&c->s->loop) - c->active_ms);
  else
    dlog(&c->s->log, DLOG_INFO,
         "%s: no request within %" PRIu64 " ms of connecting, closing", who,
         uv_now(&c->s->loop) - c->active_ms);
  conn__close(c);
}

static void conn_job_start(struct conn *c)
{
  c->inflight++;
}

static void conn_job_done(struct conn *c)
{
  c->inflight--;
  uv_timer_again(&c->idle);
  conn_touch(c);
  pump(c);
}

void conn_pause_all(struct server *s)
{
  for (struct conn *c = s->conns; c; c = c->next)
    update_reading(c);
}

int conn_writes_pending(const struct server *s)
{
  for (const struct conn *c = s->conns; c; c = c->next)
    if (c->write_queued)
      return 1;
  return 0;
}

void conn_faults_init(struct server *s)
{
#ifdef ARENAD_FAULT_INJECTION
  const char *v = getenv("ARENAD_FAULT_CONN_ALLOC");
  s->conn_alloc_faults = v ? (unsigned)strtoul(v, NULL, 10) : 0;
#else
  s->conn_alloc_faults = 0;
#endif
}

static struct conn *conn_new(struct server *s)
{
  if (s->conn_alloc_faults) {
    s->conn_alloc_faults--;
    return NULL;
  }
  return calloc(1, sizeof(struct conn));
}

/* Whether c waits for nothing but perhaps a peer that does not read its
 * replies (stalled at now), so that closing it loses no work. */
int conn__idle(struct conn *c, uint64_t now)
{
  return !c->closing && !c->close_after_write && c->inflight == 0 &&
         (c->write_queued == 0 ||
          write_stall_ms(c, now) >= stall_grace_ms(c->s));
}

struct conn *conn__accept(struct server *s, int *oom)
{
  struct conn *c = conn_new(s);
  *oom = c == NULL;
  if (!c)
    return NULL;
  c->s = s;
  c->id = ++s->next_conn_id;
  /* libuv accepts a whole backlog in one callback, on the loop time of
   * its start: after a stall (the process stopped, the machine busy)
   * that time is old, and a handshake counted from it would end before
   * the connection's first bytes are even read. */
  uv_update_time(&s->loop);
  c->active_ms = uv_now(&s->loop);
  wire_reader_init(&c->rd, s->cfg.max_frame_bytes);
  uv_pipe_init(&s->loop, &c->pipe, 0);
  uv_timer_init(&s->loop, &c->idle);
  c->pipe.data = c->idle.data = c;
  c->handles = 2;
  int rc = uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)&c->pipe);
  list_append(c);
  s->n_conns++;
  if (rc < 0) {
    conn__close(c);
    return NULL;
  }
  return c;
}

void conn__start(struct conn *c, uint64_t first_ms)
{
  uv_timer_start(&c->idle, on_idle, first_ms, c->s->cfg.idle_timeout_ms);
  pump(c);
}

void conn_report_init(struct daemon_report *r)
{
  r->send = conn_send;
  r->send_frame = conn_send_frame;
  r->send_status = conn_send_status;
  r->job_start = conn_job_start;
  r->job_done = conn_job_done;
  r->peer_desc = conn__peer_desc;
}

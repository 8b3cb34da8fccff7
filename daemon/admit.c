/*
 * admit.c - whether a new client connection may stay: its peer
 * credentials, the allow-lists, and room under max_connections and
 * max_connections_per_uid (ROOM FOR NEW CLIENTS below), closing idle
 * connections to make it; and a connection that cannot even be
 * allocated, accepted into the spare handle and closed at once.
 *
 * ROOM FOR NEW CLIENTS: s->conns is kept in order of last activity
 * (accepted, a request read, a reply done), least recent first. A
 * connection is idle when it waits for nothing: no request in flight,
 * not closing, and no reply unsent, or only replies its peer does not
 * read (stalled: conn.c, UNREAD REPLIES). A new connection past
 * max_connections_per_uid for its peer's uid closes that uid's least
 * recently active idle connection, and one past max_connections the
 * least recently active idle connection of any uid; only when there is
 * none is it refused with BUSY. So idle connections can never keep a
 * fresh client out, and one uid can take at most its share of the
 * table. Counting a uid's connections walks the list, which happens only
 * when the table holds more connections than the per-uid cap. Before its
 * first complete frame a connection is closed at handshake_timeout_ms
 * (or idle_timeout_ms, if sooner).
 *
 * Out of memory at accept: libuv stops reading a listener until its
 * pending connection is accepted, so a connection that cannot be
 * allocated is still accepted, into the server's spare pipe handle, and
 * closed at once; the listener keeps draining its backlog. While the
 * spare is closing, the next such connection waits in the backlog and is
 * taken up again by the spare's close callback.
 *
 * LAYER: called by server.c (conn_accept); calls conn.c through
 * conn_int.h, which never calls back.
 */
#define _GNU_SOURCE 1 /* struct ucred for SO_PEERCRED */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "conn_int.h"

static int allowed(const struct server *s, const struct conn *c)
{
  const struct daemon_config *k = &s->cfg;
  if (k->n_allow_uids == 0 && k->n_allow_gids == 0)
    return 1;
  if (!c->has_cred)
    return 0;
  for (unsigned i = 0; i < k->n_allow_uids; i++)
    if (k->allow_uids[i] == c->uid)
      return 1;
  for (unsigned i = 0; i < k->n_allow_gids; i++)
    if (k->allow_gids[i] == c->gid)
      return 1;
  return 0;
}

static void read_cred(struct conn *c)
{
  uv_os_fd_t fd;
  struct ucred cr;
  socklen_t len = sizeof cr;
  if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0 &&
      getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0) {
    c->has_cred = 1;
    c->pid = cr.pid;
    c->uid = cr.uid;
    c->gid = cr.gid;
  }
}

static void on_spare_closed(uv_handle_t *h)
{
  struct server *s = h->data;
  s->spare_busy = 0;
  if (s->spare_wanted && s->listening) {
    s->spare_wanted = 0;
    conn_accept(s); /* the connection that waited; memory may be back */
  }
}

/* Accepts the pending connection into the spare handle and closes it. */
static void refuse(struct server *s)
{
  if (s->spare_busy) {
    s->spare_wanted = 1; /* stays in the backlog until the spare is free */
    return;
  }
  uv_pipe_init(&s->loop, &s->spare, 0);
  s->spare.data = s;
  s->spare_busy = 1;
  int rc = uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)&s->spare);
  dlog(&s->log, DLOG_WARNING, "out of memory for a new connection: %s",
       rc == 0 ? "closed it at once" : uv_strerror(rc));
  uv_close((uv_handle_t *)&s->spare, on_spare_closed);
}

/* Whether the connections of c's peer uid, c among them, are more than
 * max_connections_per_uid. */
static int over_uid_cap(const struct server *s, const struct conn *c)
{
  unsigned cap = s->cfg.max_connections_per_uid, n = 0;
  if (s->n_conns <= cap)
    return 0;
  for (const struct conn *o = s->conns; o; o = o->next)
    if (conn__same_peer(o, c) && ++n > cap)
      return 1;
  return 0;
}

/* Closes the least recently active idle connection other than c (of c's
 * uid only, when same_uid), to make room for c. Returns whether there was
 * one. */
static int evict_idle(struct server *s, const struct conn *c, int same_uid,
                      const char *limit)
{
  uint64_t now = uv_now(&s->loop);
  struct conn *v = s->conns;
  while (v &&
         (v == c || (same_uid && !conn__same_peer(v, c)) || !conn__idle(v, now)))
    v = v->next;
  if (!v)
    return 0;
  char who[96], whom[96];
  if (v->write_queued)
    dlog(&s->log, DLOG_WARNING,
         "%s: %s reached: closed %s, its replies unread for %" PRIu64
         " ms, to make room",
         conn__peer_desc(c, who, sizeof who), limit,
         conn__peer_desc(v, whom, sizeof whom), now - v->wprogress_ms);
  else
    dlog(&s->log, DLOG_WARNING,
         "%s: %s reached: closed %s, idle for %" PRIu64 " ms, to make room",
         conn__peer_desc(c, who, sizeof who), limit,
         conn__peer_desc(v, whom, sizeof whom), now - v->active_ms);
  s->c.stalled_closes += v->write_queued != 0;
  conn__close(v);
  return 1;
}

/* Makes room for the new connection c under max_connections_per_uid and
 * max_connections, closing idle connections; refuses c with BUSY when it
 * cannot. Returns whether c stays. */
static int make_room(struct server *s, struct conn *c, const char *who)
{
  const char *limit = NULL;
  if (over_uid_cap(s, c) &&
      !evict_idle(s, c, 1, "max_connections_per_uid"))
    limit = "max_connections_per_uid";
  else if (s->n_conns > s->cfg.max_connections &&
           !evict_idle(s, c, 0, "max_connections"))
    limit = "max_connections";
  if (!limit)
    return 1;
  s->c.busy_rejections++;
  dlog(&s->log, DLOG_WARNING,
       "%s: over %s and no connection idle, sent BUSY", who, limit);
  conn__reject(c, ARENAD__V1__STATUS__BUSY,
         strcmp(limit, "max_connections") == 0
             ? "too many connections"
             : "too many connections from this user");
  return 0;
}

/* The first deadline of a new connection: its handshake, unless the idle
 * timeout comes sooner. */
static uint64_t handshake_ms(const struct server *s)
{
  uint64_t h = s->cfg.handshake_timeout_ms, i = s->cfg.idle_timeout_ms;
  return h < i ? h : i;
}

void conn_accept(struct server *s)
{
  int oom = 0;
  struct conn *c = conn__accept(s, &oom);
  if (!c) {
    if (oom)
      refuse(s);
    return;
  }
  s->c.connections_total++;
  read_cred(c);
  char who[96];
  conn__peer_desc(c, who, sizeof who);
  dlog(&s->log, DLOG_DEBUG, "%s: connected", who);
  /* The allow-lists first: a peer that may not connect never makes room
   * for itself by closing anyone. */
  if (!allowed(s, c)) {
    s->c.denied++;
    dlog(&s->log, DLOG_WARNING, "%s: not in the allow-lists, sent DENIED",
         who);
    conn__reject(c, ARENAD__V1__STATUS__DENIED,
                 "this user or group may not use arenad");
    return;
  }
  if (!make_room(s, c, who))
    return;
  conn__start(c, handshake_ms(s));
}

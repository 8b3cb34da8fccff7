/*
 * conn_int.h - what the two halves of a client connection share:
 * struct conn, and the calls admit.c makes into conn.c. conn.c is one
 * connection's life (reading frames, dispatching, writing replies,
 * backpressure, the idle timeout, closing); admit.c decides whether a new
 * connection may stay (peer credentials, allow-lists, room under the
 * connection limits). admit.c calls conn.c, never the other way round.
 *
 * Included by conn.c and admit.c only.
 */
#ifndef ARENAD_CONN_INT_H
#define ARENAD_CONN_INT_H

#include <stddef.h>
#include <stdint.h>

#include "server_int.h"

#define READ_CHUNK 16384

/* One client connection, owned by the server's list s->conns until both
 * of its handles' close callbacks and all of its write callbacks ran. */
struct conn {
  uv_pipe_t pipe;         /* the socket; pipe.data = this */
  uv_timer_t idle;        /* idle timeout; idle.data = this */
  struct server *s;
  struct conn *prev, *next; /* s->conns list, least recently active
                               first */
  uint64_t active_ms;     /* uv_now at accept, or at the last request read
                             or reply done */
  struct wire_reader rd;  /* frames received, not yet handled */
  unsigned inflight;      /* requests waiting on jobs */
  size_t write_queued;    /* reply bytes handed to libuv, not yet sent */
  size_t write_held;      /* bytes of the frames held until they are
                             sent: write_queued and the parts of them
                             that went at once (the memory they take) */
  uint64_t wprogress_ms;  /* uv_now when its writes last made progress,
                             or when replies began to wait */
  size_t wq_seen;         /* libuv's write queue size at the last look */
  unsigned writes;        /* write callbacks still to come */
  unsigned handles;       /* close callbacks still to come */
  int reading;            /* uv_read_start is in effect */
  int closing;            /* conn_close has run */
  int close_after_write;  /* a fatal reply is queued: close once sent */
  int has_cred;           /* peer credentials known */
  int got_frame;          /* a complete frame arrived: past the handshake */
  pid_t pid;
  uid_t uid;
  gid_t gid;
  uint64_t id;            /* for logs */
  char rbuf[READ_CHUNK];  /* libuv reads land here */
};

/* Accepts the listener's pending connection into a new struct conn and
 * appends it to s->conns (its handles open, nothing read yet). Returns
 * it, or NULL: with *oom set when it could not be allocated (the
 * connection is still pending: the caller refuses it), else when the
 * accept failed (the connection is closed). */
struct conn *conn__accept(struct server *s, int *oom);

/* Starts reading c, with first_ms until its first deadline (then the
 * idle timeout). */
void conn__start(struct conn *c, uint64_t first_ms);

/* Sends st with msg and closes c once it is written. */
void conn__reject(struct conn *c, Arenad__V1__Status st, const char *msg);

/* Closes c (idempotent): leaves the list at once, freed later. */
void conn__close(struct conn *c);

/* Whether c waits for nothing but perhaps a peer that does not read its
 * replies (stalled at now), so that closing it loses no work. */
int conn__idle(struct conn *c, uint64_t now);

/* Whether a and b come from the same peer uid (both unknown counts as
 * the same). */
int conn__same_peer(const struct conn *a, const struct conn *b);

/* "conn ID (pid P uid U gid G)" into buf (len bytes); returns buf. */
const char *conn__peer_desc(const struct conn *c, char *buf, size_t len);

#endif /* ARENAD_CONN_INT_H */

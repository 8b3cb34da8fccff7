/*
 * report.h - the one way the lower layers of daemon/ report back to the
 * layers above them: a table of function pointers that the server fills
 * once at start.
 *
 * LAYERS
 *  Each file calls only files below it, in this order:
 *
 *    main.c -> server.c -> conn.c -> jobs_storage.c -> jobs.c
 *           -> uses.c -> dbhealth.c
 *
 *  Some calls skip a layer, all downward: server.c calls jobs.c
 *  (cancel) and uses.c (timer, last flush), conn.c calls jobs.c
 *  (plans, detach), and the job files call uses.c and dbhealth.c. The
 *  helpers config.c, log.c, hotcache.c, keycodec.c, sockguard.c and
 *  memory.c call none of the layered files.
 *
 *  What a lower layer has to tell one above it goes through struct
 *  daemon_report instead of a call into that file, the way a libuv
 *  handle runs the callback it was given: a connection tells the server
 *  that a write or a close may have ended the drain, and a job answers
 *  its waiters, starts and ends its count on their connections, names a
 *  peer in a log line, asks for the server's counters for a Stats reply
 *  and tells the server that it finished.
 *
 * OWNERSHIP AND THREADS
 *  The table is a value inside struct server (s->report). server.c fills
 *  it in setup(), before the loop runs and before any connection or job
 *  exists: conn_report_init() (conn.c) sets the connection entries and
 *  server.c its own. It is never changed afterwards, and every entry is
 *  called on the loop thread only, never from a worker. No entry takes
 *  ownership of anything: connections, responses and buffers are
 *  borrowed for the call.
 */
#ifndef ARENA_DAEMON_REPORT_H
#define ARENA_DAEMON_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "arenad.pb-c.h"

struct conn;
struct server;

struct daemon_report {
  /* -- the connection layer (conn.c), called by the jobs -- */

  /* Packs and queues response r (borrowed) on c; closes c when that
   * fails. Does nothing on a connection that is closing. */
  void (*send)(struct conn *c, const Arenad__V1__Response *r);
  /* Queues a frame packed already, the reply to request_id (owned by
   * the call from here on: freed once written, or at once when c is
   * closing or the write fails). A reply over the bounds on unsent
   * replies is freed and answered BUSY instead (conn.c, UNREAD
   * REPLIES); send does the same. */
  void (*send_frame)(struct conn *c, uint64_t request_id, uint8_t *frame,
                     size_t len);
  /* Sends a body-less response with status st and message msg (borrowed;
   * NULL for none) for request_id on c, like send. */
  void (*send_status)(struct conn *c, uint64_t request_id,
                      Arenad__V1__Status st, const char *msg);
  /* A job that c waits on started / finished: the per-connection count
   * of unanswered requests that pauses reading. job_done may resume
   * reading and handle frames already buffered. */
  void (*job_start)(struct conn *c);
  void (*job_done)(struct conn *c);
  /* Writes "conn N (pid P uid U gid G)" for logs into buf (len bytes)
   * and returns buf. */
  const char *(*peer_desc)(const struct conn *c, char *buf, size_t len);

  /* -- the server (server.c), called by connections and jobs -- */

  /* A job, a write or a connection ended: when the server is draining
   * and no job or unsent reply is left, it shuts down. Does nothing
   * unless the server is draining. */
  void (*drain_check)(struct server *s);
  /* Fills r with the daemon's counters, uptime, paths and the storage
   * health; the strings in r are borrowed from s until the next call. */
  void (*fill_stats)(struct server *s, Arenad__V1__StatsReply *r);
};

#endif

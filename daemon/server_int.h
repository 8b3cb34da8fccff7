/*
 * server_int.h - state shared by the files of daemon/ (server.c, conn.c,
 * jobs.c, jobs_storage.c, uses.c, dbhealth.c). Not for other modules.
 * The helpers beside them (hotcache.c, keycodec.c, sockguard.c,
 * memory.c, background.c, bundles.c, config.c, log.c) do not see the
 * server: each has its own header and is given what it needs.
 *
 * LAYERS
 *  The files call each other one way only, server.c -> conn.c ->
 *  jobs_storage.c -> jobs.c -> uses.c -> dbhealth.c (report.h draws the
 *  whole picture). The calls declared below all go down; what goes up
 *  goes through s->report.
 *
 * THREADS
 *  Everything here belongs to the loop thread, except: the storage handle
 *  (used by workers, one at a time, under st_lock), storage_ok/storage_err
 *  (written by workers, read by the loop, under status_lock), the queue of
 *  hot-cache uses (pushed by the loop, taken by workers, under uses_lock;
 *  see uses.c), the log level (atomic), each job's cancel flag (set
 *  by the loop, polled by the planner on a worker), and n_planning
 *  (atomic, counted by workers around planner_run()). The loop never waits
 *  on st_lock: status_lock and uses_lock are only held to copy a few
 *  bytes, never across sqlite.
 *
 *  cfg and limits are rewritten by SIGHUP on the loop thread while
 *  workers run, so no worker reads them: a job carries its own copy of
 *  every value its worker needs (struct job_config in jobs_int.h),
 *  taken on the loop thread when the job is created.
 */
#ifndef ARENA_DAEMON_SERVER_INT_H
#define ARENA_DAEMON_SERVER_INT_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "arenad.pb-c.h"
#include "config.h"
#include "hotcache.h"
#include "background.h"
#include "log.h"
#include "report.h"
#include "server.h"
#include "sockguard.h"
#include "storage.h"
#include "wire.h"
#include "wire_plan.h"

struct counters {
  uint64_t connections_total;
  uint64_t requests;
  uint64_t plans_served;
  uint64_t memory_hits;
  uint64_t storage_hits;
  uint64_t misses;
  uint64_t plans_computed;
  uint64_t single_flight_joined;
  uint64_t busy_rejections;
  uint64_t denied;
  uint64_t protocol_errors;
  uint64_t jobs_cancelled;
  uint64_t storage_errors;
  uint64_t verify_failures;
  uint64_t stalled_closes;   /* connections closed for unread replies */
  uint64_t reply_refusals;   /* replies answered BUSY for unsent bytes */
};

struct conn;
struct job;
struct use_batch;

struct server {
  uv_loop_t loop;
  struct daemon_config cfg;        /* effective configuration */
  struct daemon_report report;     /* how connections and jobs report
                                      upward (report.h); set in setup,
                                      read-only after */
  const struct server_reload *reload; /* borrowed, for SIGHUP */
  struct dlog log;
  struct wire_limits limits;
  uv_pipe_t listener;
  uv_pipe_t spare;                 /* accepts and closes a connection that
                                      could not be allocated (conn.c) */
  int spare_busy;                  /* spare is closing */
  int spare_wanted;                /* a connection waits for the spare */
  unsigned conn_alloc_faults;      /* connection allocations still to fail;
                                      only test builds set it */
  int listening;                   /* listener open */
  int activated;                   /* listener came from systemd */
  int bound;                       /* we created the socket file */
  struct sockguard guard;          /* the lock beside the socket, held
                                      while this daemon serves its path */
  uv_signal_t sig_term, sig_int, sig_hup;
  uv_timer_t tick;                 /* watchdog and STATUS= */
  uv_timer_t drain;                /* shutdown deadline */
  uint64_t watchdog_usec;          /* 0 = no watchdog */
  storage_t *st;                   /* guarded by st_lock */
  uv_mutex_t st_lock;
  uv_mutex_t status_lock;          /* guards storage_ok, storage_err */
  int storage_ok;                  /* guarded by status_lock */
  char storage_err[ARENA_ERR_LEN]; /* guarded by status_lock */
  char storage_err_copy[ARENA_ERR_LEN]; /* loop thread's copy for Stats */
  struct hotcache *hot;
  struct improver *improver;       /* background improvement, or NULL
                                      (off at start, or stopped) */
  uv_mutex_t uses_lock;            /* guards uses */
  struct use_batch *uses;          /* hot-cache uses not yet written,
                                      newest first; guarded by uses_lock */
  uv_timer_t uses_timer;           /* collects and flushes uses */
  uv_work_t uses_work;             /* the timer's flush job */
  int uses_flushing;               /* uses_work is queued or running */
  struct conn *conns, *conns_tail; /* all open connections, least
                                      recently active first (conn.c) */
  unsigned n_conns;
  struct job *jobs;                /* plan jobs in flight (single-flight) */
  unsigned n_jobs;                 /* all jobs queued or running */
  unsigned n_long;                 /* long plan jobs on the pool, at most
                                      cfg.workers (see jobs.c) */
  struct job *wait_head, *wait_tail; /* long plan jobs waiting for a slot,
                                        oldest first */
  atomic_uint n_jobs_busy;         /* n_jobs, for the background threads,
                                      which pause while it is not 0 */
  atomic_uint n_planning;          /* plan jobs inside planner_run() on
                                      workers, which share the CPUs among
                                      them (jobs.c); zero from calloc */
  struct counters c;
  uint64_t start_ms;               /* uv_now at start */
  int draining;
  uint64_t next_conn_id;
};

/* A reply waiting for a job. */
struct waiter {
  struct waiter *next;
  struct conn *conn;   /* NULL once the connection went away */
  uint64_t request_id;
};

/* conn.c */
/* Accepts the listener's pending connection (on_connection). Out of
 * memory, the connection is accepted and closed at once. */
void conn_accept(struct server *s);
/* Reads the fault-injection settings, once at start. Only a build with
 * -DARENAD_FAULT_INJECTION (build/tests/arenad-faults) reads any:
 * ARENAD_FAULT_CONN_ALLOC=N makes the first N connection allocations
 * fail. Otherwise it sets no fault. */
void conn_faults_init(struct server *s);
/* Sets the connection entries of r (send, send_status, job_start,
 * job_done, peer_desc; see report.h), once at start. */
void conn_report_init(struct daemon_report *r);
/* Closes every connection (shutdown). */
void conn_close_all(struct server *s);
/* Stops or resumes reading on every connection (drain). */
void conn_pause_all(struct server *s);
/* Whether any connection still has reply bytes queued. */
int conn_writes_pending(const struct server *s);

/* jobs.c */
/* Starts or joins the planning job for a Plan request, which it takes.
 * The reply goes to conn when done. */
void jobs_submit_plan(struct server *s, struct conn *c, uint64_t request_id,
                      Arenad__V1__Request *req);
/* jobs_storage.c: runs Lookup, List, Stats or Evict off the loop thread;
 * takes req. */
void jobs_submit_storage(struct server *s, struct conn *c,
                         uint64_t request_id, Arenad__V1__Request *req);
/* Forgets every waiter of connection c; cancels jobs nobody waits for. */
void jobs_detach_conn(struct server *s, struct conn *c);
void jobs_cancel_all(struct server *s);

/* uses.c: hits served from the hot cache, carried to the database. */
/* Sets up the queue; returns 0 or a libuv error. */
int uses_init(struct server *s);
/* Starts the timer that collects and flushes uses (loop thread). */
void uses_start(struct server *s);
/* Moves the hot cache's counts onto the queue (loop thread). Returns 1
 * when it queued a batch. */
int uses_collect(struct server *s);
/* Writes every queued batch in one transaction. Caller holds st_lock. */
void uses_write(struct server *s);
/* Stops and closes the timer (loop thread, at shutdown). */
void uses_stop(struct server *s);
/* After the loop has run dry: collects and writes what is left, then
 * frees the queue. Call before storage_close. */
void uses_cleanup(struct server *s);

/* dbhealth.c: the cache database's health, for Stats and STATUS=. */
/* Records a storage failure during `what` (rc an ARENA_E* code) for
 * Stats and logs the change to failing. Caller holds st_lock. */
void dbhealth_failed(struct server *s, const char *what, int rc);
/* Records a successful write: storage is healthy again (logged when it
 * was not). Any thread. */
void dbhealth_ok(struct server *s);

#endif

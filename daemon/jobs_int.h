/*
 * jobs_int.h - what the two halves of arenad's worker jobs share: the job
 * record and its bookkeeping (jobs.c), used by the plan jobs (jobs.c)
 * and the storage jobs (jobs_storage.c).
 *
 * Included only by jobs.c and jobs_storage.c; the rest of the daemon sees
 * the jobs_* calls of server_int.h. Every function here runs on the loop
 * thread except jobs__st_enter() and jobs__status_of(), which workers
 * call.
 */
#ifndef ARENAD_JOBS_INT_H
#define ARENAD_JOBS_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "keycodec.h"
#include "server_int.h"

enum job_kind { JOB_PLAN, JOB_STORAGE };

/* The configuration a worker reads, copied from s->cfg and s->limits on
 * the loop thread when the job is created, so that a SIGHUP that rewrites
 * them meanwhile neither races with the worker nor changes the rules for
 * a request already accepted. */
struct job_config {
  struct wire_limits limits; /* validation of the Plan request; the
                              * effort is copied into job.effort */
  uint32_t improve_max_effort;  /* the most effort a preloaded plan may
                                   claim */
};

struct job {
  uv_work_t work;            /* work.data = this */
  struct server *s;
  enum job_kind kind;
  struct job_config cfg;     /* copied at creation; workers read only this */
  struct job *prev, *next;   /* s->jobs */
  uint64_t h;                /* identity hash (plan jobs) */
  uint8_t *ident;            /* identity bytes (plan jobs), owned */
  size_t ident_len;
  Arenad__V1__Request *req;  /* owned */
  struct waiter *waiters;    /* owned list */
  unsigned live_waiters;     /* waiters whose conn is still open */
  atomic_int cancel;         /* set by the loop, read by the planner */
  uint32_t effort;           /* plan jobs: the effort, capped (see DESIGN) */
  int is_long;               /* effort above default_effort */
  int on_pool;               /* 1: handed to uv_queue_work */
  struct job *wait_next;     /* s->wait_head list while it waits */
  /* results, written by the worker, read in after-work */
  Arenad__V1__Status status;
  char err[ARENA_ERR_LEN];
  struct planner_plan plan;
  uint8_t gd[PLANNER_DIGEST_LEN];
  uint8_t od[PLANNER_DIGEST_LEN];
  uint8_t *use_key;          /* keycodec key of the stored plan, owned;
                                NULL when out of memory */
  size_t use_key_len;        /* bytes in use_key */
  int from_storage;          /* plan came from sqlite */
  uint64_t planning_us;
  uint64_t generation;       /* of the stored plan; 0: unknown */
  uint32_t plan_effort;      /* effort that found the plan; 0: unknown */
  int row_open;              /* the stored plan wants background work:
                                stored with its graph, not done, not
                                proven optimal (improve_wanted() adds the
                                switch and the size cap in force) */
  size_t n_tensors;          /* tensors in the graph (plan jobs) */
  struct storage_record *recs; /* lookup/list results */
  size_t n_recs;
  struct storage_stats stats;
  int stats_ok;
  uint64_t evicted;
  struct keycodec_key evict_key; /* decoded Evict.key, for the hot LRU */
  size_t n_without;          /* Export: selected plans without a graph */
  size_t preload_stored;     /* Preload: entries stored */
  size_t preload_kept;       /* Preload: entries a plan as small kept out */
};

/* A new job of the given kind for req (owned by the job from here on,
 * also when the call fails), with a copy of s's configuration. NULL when
 * out of memory. Freed by jobs__free(), which also frees its waiters,
 * request and results. */
struct job *jobs__new(struct server *s, enum job_kind kind,
                      Arenad__V1__Request *req);
void jobs__free(struct job *j);

/* Adds (c, request_id) to j's waiters and counts the job on c. Returns 0,
 * or -1 when out of memory (nothing changed). */
int jobs__add_waiter(struct job *j, struct conn *c, uint64_t request_id);

/* A new job j that could not be queued: answers request_id on c with
 * INTERNAL and msg, undoes the job's count on c when c was added as its
 * waiter, and frees j. */
void jobs__reject_new(struct job *j, struct conn *c, uint64_t request_id,
                      const char *msg);

/* Puts j on, or takes it off, s->jobs (the jobs in flight). */
void jobs__link(struct server *s, struct job *j);
void jobs__unlink(struct server *s, struct job *j);

/* A request taken on as a job (queued, waiting for a long slot, or
 * joining one in flight): when its client asked with want_ack, tells it
 * at once with an Accepted response for request_id on c, so that the
 * client knows the daemon is answering while the job runs. Does nothing
 * otherwise. */
void jobs__ack(struct server *s, struct conn *c, uint64_t request_id,
               int want_ack);

/* When s holds as many jobs as its queue limit, answers request_id on c
 * with BUSY and returns 1; otherwise returns 0. */
int jobs__queue_full(struct server *s, struct conn *c, uint64_t request_id);

/* Worker side: takes s->st_lock and first writes the hot-cache uses the
 * loop queued (uses.c). The caller unlocks s->st_lock. */
void jobs__st_enter(struct server *s);

/* The wire status of an ARENA_E* code from the planner or storage. */
Arenad__V1__Status jobs__status_of(int rc);

#endif /* ARENAD_JOBS_INT_H */

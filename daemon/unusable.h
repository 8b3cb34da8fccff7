/*
 * unusable.h - the daemon's half of a client's report that a plan it was
 * served cannot be used (Evict.unusable, docs/protocol.md): too large
 * for the client's arena, or larger than the naive layout of its graph.
 *
 * A report is a request to replace one stored plan, but the daemon
 * trusts no client with it. It plans the stored graph again, under the
 * stored options, and stores the new plan only when it is strictly
 * smaller than the stored one, and only when the stored plan is the one
 * the client got (the same arena). The new plan is verified by the
 * storage layer before it is stored. So a report can only make a stored plan smaller: a
 * plan from elsewhere (a bundle, an older database) that is worse than
 * what the daemon computes gets replaced; a client that reports good
 * plans, its own uid's or another's, changes nothing and costs one plan
 * of a graph already stored, bounded as every request is.
 *
 * Used by jobs_storage.c only, in three steps so that no plan is made
 * under st_lock: unusable_select() on the loop thread when the request
 * arrives; then, on a worker, unusable_fetch() (under st_lock),
 * unusable_replan() (without it) and unusable_store() (under it).
 */
#ifndef ARENAD_UNUSABLE_H
#define ARENAD_UNUSABLE_H

#include <stddef.h>
#include <stdint.h>

#include "keycodec.h"
#include "server_int.h"

/* What a report found and made; unusable_work_cleanup() releases it. */
struct unusable_work {
  struct storage_record *recs; /* owned: the stored entry, or none */
  size_t n_recs;
  struct planner_plan plan;    /* owned: the plan made again */
  int smaller;                 /* plan is strictly smaller than the stored */
};

/* Checks a report (borrowed): a model hash of 1 to 64 bytes, an input
 * shape as a Plan request's, digests of 32 bytes; and fills *k (owned on
 * success, keycodec_cleanup) with the key it names. Returns
 * ARENAD__V1__STATUS__OK, or an error status with the reason in msg
 * (len bytes) and *k empty. */
Arenad__V1__Status unusable_select(const Arenad__V1__Unusable *u,
                                   struct keycodec_key *k, char *msg,
                                   size_t len);

/* Reads the entry stored under k (borrowed) with its graph into w
 * (which it initialises). Caller holds s->st_lock. Returns 0 (found or
 * not) or a storage error. */
int unusable_fetch(struct server *s, const struct keycodec_key *k,
                   struct unusable_work *w);

/* Plans w's stored graph again under its stored options when the report
 * u (borrowed) names the stored plan; sets w->smaller when the new plan
 * is strictly smaller. Runs without st_lock. Logs a report it keeps.
 * Returns 0 or a planner error. */
int unusable_replan(struct server *s, const Arenad__V1__Unusable *u,
                    struct unusable_work *w);

/* Stores w's plan in place of the reported one when w->smaller; sets
 * *replaced to 1 when it did (the storage layer verifies it and keeps
 * whichever plan is smaller, should another have come in between).
 * Caller holds s->st_lock. Logs what it did. Returns 0 or the storage's
 * code. */
int unusable_store(struct server *s, const struct keycodec_key *k,
                   const struct unusable_work *w, uint64_t *replaced);

void unusable_work_cleanup(struct unusable_work *w);

#endif /* ARENAD_UNUSABLE_H */

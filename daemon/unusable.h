/*
 * unusable.h - the daemon's half of a client's report that a plan it was
 * served cannot be used (Evict.unusable, docs/protocol.md): too large
 * for the client's arena, or larger than the naive layout of its graph.
 *
 * A report is a request to drop one stored plan, and so is as strong as
 * an Evict; but the daemon trusts no client with it. It drops the plan
 * only when the plan is the one the client got (the same arena) and is
 * larger than what the naive algorithm gives the stored graph at the
 * plan's alignment. No plan the daemon computes is ever that large, so a
 * report can take out only a plan that came from elsewhere (a bundle,
 * an older database) and is worse than no reuse at all; a client that
 * reports good plans, its own uid's or another's, changes nothing and
 * costs one storage job, bounded as every request is. The next Plan
 * request for the key then plans it anew.
 *
 * Used by jobs_storage.c only: unusable_select() on the loop thread when
 * the Evict request arrives, unusable_drop() on a worker.
 */
#ifndef ARENAD_UNUSABLE_H
#define ARENAD_UNUSABLE_H

#include <stddef.h>
#include <stdint.h>

#include "keycodec.h"
#include "server_int.h"

/* Checks a report (borrowed): a model hash of 1 to 64 bytes, an input
 * shape as a Plan request's, digests of 32 bytes; and fills *k (owned on
 * success, keycodec_cleanup) with the key it names. Returns
 * ARENAD__V1__STATUS__OK, or an error status with the reason in msg
 * (len bytes) and *k empty. */
Arenad__V1__Status unusable_select(const Arenad__V1__Unusable *u,
                                   struct keycodec_key *k, char *msg,
                                   size_t len);

/* Drops the plan stored under k (borrowed) when the report u (borrowed)
 * holds for it (see above); *evicted is 1 when it was dropped, else 0.
 * Runs on a worker; the caller holds s->st_lock. Logs what it decided.
 * Returns 0 (dropped or kept), or a storage or planner error. */
int unusable_drop(struct server *s, const Arenad__V1__Unusable *u,
                  const struct keycodec_key *k, uint64_t *evicted);

#endif /* ARENAD_UNUSABLE_H */

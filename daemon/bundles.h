/*
 * bundles.h - the daemon's side of plan bundles (docs/bundles.md):
 * storing the entries of a Preload request or of a bundle file, all or
 * nothing and each verified against its own graph; building the entries
 * an Export request asks for; and preloading the bundles of a directory
 * at start.
 *
 * A helper of daemon/ beside hotcache.c and keycodec.c: it uses the
 * storage, the wire messages and the planner, and nothing else of the
 * daemon. Every call that takes a storage handle must be made by the
 * thread that holds it (under st_lock once workers run).
 *
 * TRUST
 *  Nothing in an entry is taken on faith. The graph is checked as a Plan
 *  request is (wire_graph_from_plan, under the daemon's limits), the
 *  digests are the daemon's own, and the plan must pass planner_verify
 *  against that graph inside storage, and claim no larger arena than
 *  every tensor in bytes of its own would take (docs/storage.md, "What
 *  a stored plan may claim"). The figures the bundle gives about its
 *  plan are recomputed from the graph: the lower bounds, whether the
 *  plan is proven optimal (its arena equals the load bound), the naive
 *  size and the capacity answer. Only the algorithm, the number of
 *  shared pairs and the effort are kept as the bundle says (they change
 *  no memory and no decision but the background ladder's start), and
 *  the effort only up to improve.max_effort.
 */
#ifndef ARENAD_BUNDLES_H
#define ARENAD_BUNDLES_H

#include <stddef.h>
#include <stdint.h>

#include "arenad.pb-c.h"
#include "log.h"
#include "storage.h"
#include "wire_bundle.h"
#include "wire_plan.h"

/* What a preload did. */
struct bundles_outcome {
  size_t stored; /* new keys, or smaller plans than the stored ones */
  size_t kept;   /* keys that already had a plan as small */
};

/* The rules a preload follows, all copied from the configuration. */
struct bundles_rules {
  const struct wire_limits *graph;  /* each graph, as a Plan request's
                                       (borrowed) */
  struct wire_bundle_limits bundle; /* entries and tensors in all, and
                                       the decoding of a file; zeros:
                                       the defaults */
  uint32_t max_effort;              /* improve.max_effort: the most an
                                       entry's effort may claim */
};

/* Stores the n entries (borrowed; their unknown fields are stripped) in
 * st, all or nothing (storage_preload_begin .. commit), under the rules
 * r (borrowed): first the entries as every reader takes them
 * (wire_bundle_accept_entries: the limits of r->bundle, each entry's
 * shape), then in batches of at most 256 entries or 2^18 tensors, each
 * graph checked as a Plan request is, converted, and checked and
 * written by storage; so the memory this takes beyond the entries is
 * one batch's. An entry's effort is cut to r->max_effort, and a plan of
 * an algorithm that does not search is stored as done (no background
 * work). Returns 0 with *out filled, or an ARENA_E* code with err naming
 * the entry ("entry 3: ...") when the entries are refused (ARENA_EINVAL,
 * ARENA_ETOOBIG, ARENA_EVERIFY or a planner_validate code) or the
 * database fails; nothing is stored then. */
int bundles_preload(storage_t *st, const struct bundles_rules *r,
                    Arenad__V1__BundleEntry *const *e, size_t n,
                    struct bundles_outcome *out, char err[ARENA_ERR_LEN]);

/* The entries of an Export reply, built from storage_export records.
 * Owned; free with bundles_export_free. The records must outlive it. */
struct bundles_export {
  Arenad__V1__BundleEntry *entries;
  Arenad__V1__BundleEntry **ptrs;
  Arenad__V1__Plan *req;
  Arenad__V1__PlanOptions *opts;
  Arenad__V1__PlanReply *plans;
  Arenad__V1__Dims *dims;
  Arenad__V1__Dims **dim_ptrs;
  size_t n;
};

/* Fills *x from n records (borrowed: plans, graphs, options, keys).
 * Returns 0 or ARENA_ENOMEM (then *x is empty). */
int bundles_export_build(const struct storage_record *r, size_t n,
                         struct bundles_export *x);
void bundles_export_free(struct bundles_export *x);

/* Preloads every file whose name ends in ".bundle" in dir, in name order,
 * each all or nothing under the rules r (borrowed; a file is read as
 * wire_bundle_read reads it, under r->bundle, and at most 256 MiB);
 * logs what each file gave, or why it was refused, and goes on with the
 * next. A missing directory is logged at debug level only. Returns the
 * number of plans stored. */
size_t bundles_preload_dir(storage_t *st, const struct bundles_rules *r,
                           const char *dir, struct dlog *log);

#endif /* ARENAD_BUNDLES_H */

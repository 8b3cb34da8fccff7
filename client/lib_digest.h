/*
 * lib_digest.h - the digests the client library checks a daemon's plan
 * against (the graph digest as the daemon keys it, and the options
 * digest), with a handle's memory of the last graph and options it
 * digested, so that asking again for the same graph does not hash it
 * again (lib_digest.c). Private to the library: lib_int.h includes it
 * for the handle's layout.
 */
#ifndef ARENAD_CLIENT_LIB_DIGEST_H
#define ARENAD_CLIENT_LIB_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "planner.h"

/* Graphs of more tensors than this are digested on every call and never
 * remembered, so that a handle's memory stays under about 4 MiB. */
#define ARENAD_CLIENT__MEMO_MAX_TENSORS 65536u

/* A handle's memory of its last digests. Value struct embedded in the
 * handle; init, then any number of arenad_client__digests_get, then
 * cleanup. */
struct arenad_client__digests {
  struct planner_tensor *tensors; /* copy of the graph last digested,
                                     cap entries, owned; may be NULL */
  size_t cap;                     /* entries allocated in tensors */
  size_t n_tensors;               /* entries of tensors in use; 0: none
                                     remembered */
  int use_aliases;                /* 1: gd covers the aliases (in_place
                                     on), 0: gd ignores them */
  uint8_t gd[PLANNER_DIGEST_LEN]; /* graph digest of tensors */
  int have_od;                    /* 1: od is valid for the four fields
                                     below */
  enum planner_algo algo;         /* options od was computed for */
  uint64_t alignment;             /* bytes */
  uint64_t capacity;              /* bytes, 0 = unlimited */
  int in_place;                   /* 0 or 1 */
  uint8_t od[PLANNER_DIGEST_LEN]; /* options digest of the fields above */
};

/* Starts with nothing remembered. d is caller-allocated. Cannot fail. */
void arenad_client__digests_init(struct arenad_client__digests *d);

/* Frees what d remembers; d may then be initialised again. */
void arenad_client__digests_cleanup(struct arenad_client__digests *d);

/* Writes into gd the digest the daemon keys g under o
 * (planner_graph_digest_planned) and into od planner_options_digest(o),
 * both caller-allocated PLANNER_DIGEST_LEN bytes. g and o are borrowed
 * for the call only: a later call compares g, field by field, with the
 * copy d keeps, so a caller may change its array between calls. Takes
 * the digests from d when g's tensors (in the same order) and the
 * options' digested fields equal the last ones, which gives the same
 * bytes as digesting again; otherwise digests and remembers g (when it
 * has at most ARENAD_CLIENT__MEMO_MAX_TENSORS tensors and the copy can
 * be allocated; a failed copy only forgets). Returns 0, or the code of
 * planner_graph_digest_planned() (ARENA_EINVAL, ARENA_ENOMEM) with gd
 * zeroed and nothing remembered. */
int arenad_client__digests_get(struct arenad_client__digests *d,
                               const struct planner_graph *g,
                               const struct planner_options *o,
                               uint8_t gd[PLANNER_DIGEST_LEN],
                               uint8_t od[PLANNER_DIGEST_LEN]);

#endif /* ARENAD_CLIENT_LIB_DIGEST_H */

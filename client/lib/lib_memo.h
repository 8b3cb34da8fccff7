/*
 * lib_memo.h - a client handle's memory of its last call (lib_memo.c):
 * a copy of the last graph it was given and what the handle learnt about
 * that graph, so that asking again for the same graph does not redo the
 * work. What it keeps: the graph digest (as the daemon keys it), that the
 * graph passed planner_validate under the last options, the last plan
 * that passed planner_verify for it, and the packed request for it with
 * the last model key; and, apart from any graph, the options digest.
 * Private to the library: lib_int.h includes it for the handle's layout.
 */
#ifndef ARENAD_CLIENT_LIB_MEMO_H
#define ARENAD_CLIENT_LIB_MEMO_H

#include <stddef.h>
#include <stdint.h>

#include "arenad_client.h"
#include "digest.h"
#include "planner.h"

/* Graphs of more tensors than this are never remembered: they are
 * digested, validated, verified and packed on every call. The limit
 * keeps a handle's memory under about 8 MiB: 3.5 MiB for the copy of the
 * graph, 0.5 MiB for the offsets of its plan, and at most 4 MiB for its
 * packed request (about 1 MiB for a graph without optional columns). */
#define ARENAD_CLIENT__MEMO_MAX_TENSORS 65536u

/* The fields of struct planner_options that validation, verification and
 * the request depend on: all of them but stop, stop_ctx and threads,
 * which never change a result. */
struct arenad_client__memo_opts {
  enum planner_algo algo; /* as in planner_options */
  uint64_t alignment;     /* bytes */
  uint64_t capacity;      /* bytes, 0 = unlimited */
  uint32_t effort;        /* exact-search effort units */
  int in_place;           /* as the caller set it, not reduced to 0/1 */
};

/* A copy of a model key (struct arenad_model_key), for comparing the
 * next call's key with. */
struct arenad_client__memo_key {
  uint8_t hash[ARENAD_CLIENT_MAX_MODEL_HASH]; /* hash_len bytes used */
  size_t hash_len;                            /* 1 .. 64 */
  size_t *ranks;   /* n_inputs ranks, owned; ranks_cap allocated */
  size_t ranks_cap;
  int64_t *dims;   /* the inputs' dims one after another, owned */
  size_t dims_cap; /* entries allocated in dims */
  size_t n_inputs; /* inputs in use */
};

/* A handle's memory. Value struct embedded in the handle; init, then per
 * call arenad_client__memo_begin followed by any of the other calls,
 * then cleanup.
 *
 * Invariants: every fact below n_tensors is about the graph in tensors
 * (n_tensors 0: no graph held, and no fact about one is kept);
 * validated, have_plan and packed are about that graph under opts, and
 * have_plan and packed need validated. */
struct arenad_client__memo {
  struct planner_tensor *tensors; /* copy of the graph, cap entries,
                                     owned; may be NULL */
  size_t cap;                     /* entries allocated in tensors */
  size_t n_tensors;               /* entries in use; 0: none held */
  struct arenad_client__memo_opts opts; /* options of the last begin */
  int have_gd;                    /* 1: gd is the graph's digest */
  int gd_aliases;                 /* 1: gd covers the aliases (in_place
                                     on), 0: gd ignores them */
  uint8_t gd[PLANNER_DIGEST_LEN]; /* graph digest of tensors */
  int validated;                  /* 1: the graph passed planner_validate
                                     under opts */
  uint64_t *offsets;              /* n_tensors offsets of the verified
                                     plan, owned; offsets_cap allocated */
  size_t offsets_cap;
  int have_plan;                  /* 1: offsets and arena_bytes passed
                                     planner_verify for the graph under
                                     opts */
  uint64_t arena_bytes;           /* of the verified plan */
  uint8_t *packed;                /* frame of the Plan request for the
                                     graph, opts and key, request id 0;
                                     owned, or NULL */
  size_t packed_len;              /* bytes in packed, header included */
  struct arenad_client__memo_key key; /* the key packed was built with */
  int have_od;                    /* 1: od is valid for the four fields
                                     below (kept whatever the graph) */
  enum planner_algo od_algo;      /* options od was computed for */
  uint64_t od_alignment;          /* bytes */
  uint64_t od_capacity;           /* bytes, 0 = unlimited */
  int od_in_place;                /* 0 or 1 */
  uint8_t od[PLANNER_DIGEST_LEN]; /* options digest of the fields above */
};

/* Starts with nothing remembered. m is caller-allocated. Cannot fail. */
void arenad_client__memo_init(struct arenad_client__memo *m);

/* Frees what m remembers; m may then be initialised again. */
void arenad_client__memo_cleanup(struct arenad_client__memo *m);

/* Starts a call for graph g under options o (both borrowed for this call
 * only). When g's tensors (same order, every field) equal the copy m
 * holds, m keeps what it knows of it, except what was learnt under other
 * options when o differs from the last options (every field of
 * struct arenad_client__memo_opts). Otherwise m forgets everything about
 * its graph and copies g instead, when g has 1 to
 * ARENAD_CLIENT__MEMO_MAX_TENSORS tensors and the copy can be allocated
 * (a failed copy only forgets). An invalid g is copied as it is, with
 * nothing known of it yet; a NULL g, or one without an array, leaves m
 * holding nothing. Returns 1 when m now holds g, 0 when it holds
 * nothing. The calls below are about the g and o of the
 * last begin, and must follow it within the same call, before the
 * caller can change its array. */
int arenad_client__memo_begin(struct arenad_client__memo *m,
                              const struct planner_graph *g,
                              const struct planner_options *o);

/* Whether the graph passed planner_validate under the options. */
int arenad_client__memo_validated(const struct arenad_client__memo *m);

/* Records that the graph passed planner_validate under the options. Call
 * only after it did. Does nothing when m holds no graph. */
void arenad_client__memo_set_validated(struct arenad_client__memo *m);

/* Writes into gd the digest the daemon keys g under o
 * (planner_graph_digest_planned) and into od planner_options_digest(o),
 * both caller-allocated PLANNER_DIGEST_LEN bytes; g and o are those of
 * the last begin. Takes the digests from m when it has them, which gives
 * the same bytes as digesting again, and remembers them otherwise.
 * Returns 0, or the code of planner_graph_digest_planned() (ARENA_EINVAL,
 * ARENA_ENOMEM) with gd zeroed. */
int arenad_client__memo_digests(struct arenad_client__memo *m,
                                const struct planner_graph *g,
                                const struct planner_options *o,
                                uint8_t gd[PLANNER_DIGEST_LEN],
                                uint8_t od[PLANNER_DIGEST_LEN]);

/* Whether plan p (borrowed) has exactly the offsets (all n_offsets of
 * them) and arena_bytes of the plan that passed planner_verify for the
 * graph under the options, so that verifying p would give the same
 * answer. 0 when m remembers no such plan. */
int arenad_client__memo_verified(const struct arenad_client__memo *m,
                                 const struct planner_plan *p);

/* Remembers a copy of p's offsets and arena_bytes as verified for the
 * graph under the options. Call only after planner_verify passed for
 * them. Does nothing when m holds no validated graph or p has not one
 * offset per tensor; a failed allocation only forgets the previous
 * plan. */
void arenad_client__memo_set_verified(struct arenad_client__memo *m,
                                      const struct planner_plan *p);

/* The frame of the Plan request for the graph, the options and key k
 * (borrowed), with request id 0, when m has it: returns it (owned by m,
 * valid until the next call on m) and sets *len to its length in bytes,
 * header included. Returns NULL and sets *len to 0 otherwise. */
const uint8_t *arenad_client__memo_packed(const struct arenad_client__memo *m,
                                          const struct arenad_model_key *k,
                                          size_t *len);

/* Takes frame (len bytes, malloc()ed; the Plan request for the graph,
 * the options and key k, borrowed, with request id 0): keeps it with a
 * copy of k, or frees it when m holds no validated graph or the copy of
 * k cannot be allocated. */
void arenad_client__memo_set_packed(struct arenad_client__memo *m,
                                    const struct arenad_model_key *k,
                                    uint8_t *frame, size_t len);

#endif /* ARENAD_CLIENT_LIB_MEMO_H */

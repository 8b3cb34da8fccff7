/*
 * arenad_client.h - the C library an interpreter links to get arena plans
 * from the arenad daemon, with a local fallback.
 *
 * An interpreter builds its lifetime graph (planner.h), opens a client
 * handle once, and calls arenad_client_plan() whenever it needs offsets.
 * The daemon answers from its cache or plans the graph; the library
 * verifies every plan it receives against the caller's own graph before
 * returning it, so a buggy or hostile daemon can cost time but never
 * produce overlapping tensors. When the daemon cannot be reached (or is
 * busy, slow or broken) and fallback is enabled, the library plans in
 * the calling process instead and says so in the result: an interpreter
 * never fails just because the daemon is down.
 *
 * ERRORS
 *  Every fallible call returns 0 or a negative ARENA_E* code
 *  (arena_error.h); arenad_client_errmsg() gives the text of the last
 *  failure, including the daemon's own message. Daemon statuses map to:
 *      daemon unreachable          ARENA_EUNAVAIL
 *      no answer or no reply in time ARENA_ETIMEDOUT (see TIMEOUTS)
 *      BUSY                        ARENA_EBUSY
 *      DENIED                      ARENA_EDENIED
 *      UNSUPPORTED_VERSION         ARENA_EVERSION
 *      TOO_LARGE                   ARENA_ETOOBIG
 *      INVALID_ARGUMENT            ARENA_EINVAL
 *      NOT_FOUND                   ARENA_ENOENT
 *      INTERNAL                    ARENA_EINTERNAL
 *      malformed reply             ARENA_EPROTO
 *      plan fails verification     ARENA_EVERIFY
 *      plan verifies, not usable   ARENA_EUNUSABLE (UNUSABLE PLANS)
 *
 * TIMEOUTS
 *  Three, each in milliseconds in struct arenad_client_options:
 *   - connect_timeout_ms (default 1000): connecting to the socket.
 *   - answer_timeout_ms (default 2000): how long the daemon may leave a
 *     request without a sign that it is answering: without taking any
 *     of its bytes while it is sent, and then without sending any byte
 *     back until it has either replied or acknowledged the request as
 *     accepted work (a planning or storage job; docs/protocol.md,
 *     want_ack). A stopped or hung daemon is therefore noticed within
 *     this time, and with fallback on the graph is planned locally.
 *   - request_timeout_ms, the plan timeout (default 30000): the whole
 *     request, from the first byte sent to the last byte of the reply,
 *     however long an acknowledged search runs.
 *  A call blocks at most about the connect timeout plus the plan
 *  timeout (twice, in the rare retry on a stale connection). A daemon
 *  that stops after it has acknowledged a request holds the call until
 *  the plan timeout. A daemon older than the acknowledgement never
 *  sends one, so against it a request must be answered within the
 *  answer timeout.
 *
 * SIZED OPTIONS (ABI)
 *  struct arenad_client_options grows only at its end. The names
 *  arenad_client_options_init() and arenad_client_open() are macros
 *  that pass the library the size of the struct the program was
 *  compiled with (as zlib's deflateInit passes sizeof(z_stream)), so
 *  the library never reads or writes beyond a caller's struct and gives
 *  every field the program does not know its default. Programs built
 *  against a header from before the size was passed call the functions
 *  of those names, which use only the fields up to fallback.
 *
 * THREADS
 *  A handle is not thread-safe: use one handle per thread, or hold a lock
 *  around every call on a shared handle. Different handles are
 *  independent. The library installs no signal handlers; it sends with
 *  MSG_NOSIGNAL so a closed socket never raises SIGPIPE.
 *
 * This header exposes no protobuf-c types; it needs only planner.h and
 * arena_error.h, which are installed next to it (in include/arenad/, so
 * that a program writes #include <arenad/arenad_client.h>).
 *
 * ABI
 *  The shared library exports exactly the functions declared here,
 *  each marked ARENAD_CLIENT_API; everything else inside it (the planner,
 *  the wire codec, protobuf-c messages) is hidden. planner.h and
 *  arena_error.h are installed for their types, constants and error
 *  codes: call their functions only through the wrappers below
 *  (arenad_client_plan_options_init, arenad_client_strerror, ...).
 */
#ifndef ARENAD_CLIENT_H
#define ARENAD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "arena_error.h"
#include "planner.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a function the shared library exports (it is built with
 * -fvisibility=hidden). */
#if defined(__GNUC__)
#define ARENAD_CLIENT_API __attribute__((visibility("default")))
#else
#define ARENAD_CLIENT_API
#endif

#define ARENAD_CLIENT_DEFAULT_SOCKET "/run/arenad/arenad.sock"
#define ARENAD_CLIENT_SOCKET_ENV "ARENAD_SOCKET"
#define ARENAD_CLIENT_DEFAULT_CONNECT_TIMEOUT_MS 1000u
#define ARENAD_CLIENT_DEFAULT_REQUEST_TIMEOUT_MS 30000u /* the plan timeout */
#define ARENAD_CLIENT_DEFAULT_ANSWER_TIMEOUT_MS 2000u
#define ARENAD_CLIENT_DIGEST_LEN 32u /* bytes in a graph or options digest */
#define ARENAD_CLIENT_MAX_MODEL_HASH 64u /* bytes */
#define ARENAD_CLIENT_MAX_PLACEMENT 4096u /* bytes in a placement record */

/* A connection to the daemon. Opaque; arenad_client_open/close. */
typedef struct arenad_client arenad_client_t;

/* How to reach the daemon. Value struct; arenad_client_options_init()
 * fills the defaults. New fields are only ever appended (see SIZED
 * OPTIONS). The timeouts are described under TIMEOUTS. */
struct arenad_client_options {
  const char *socket_path;     /* NULL: $ARENAD_SOCKET, else the default */
  uint32_t connect_timeout_ms; /* 0: ARENAD_CLIENT_DEFAULT_CONNECT_... */
  uint32_t request_timeout_ms; /* the plan timeout, the whole request;
                                  0: ARENAD_CLIENT_DEFAULT_REQUEST_... */
  int fallback;                /* 1: plan locally when the daemon fails */
  /* -- appended: read only through the sized calls -- */
  uint32_t answer_timeout_ms;  /* silence allowed before the daemon has
                                  replied or acknowledged; 0:
                                  ARENAD_CLIENT_DEFAULT_ANSWER_... */
};

/* The dims of one graph input. */
struct arenad_dims {
  const int64_t *dims; /* n_dims entries, each >= 0; borrowed */
  size_t n_dims;       /* 0 .. 32 */
};

/* What a cached plan is stored under: the model's identity (any stable
 * hash of the model file, 1..64 bytes) and the shapes of its inputs. */
struct arenad_model_key {
  const uint8_t *model_hash;       /* model_hash_len bytes, borrowed */
  size_t model_hash_len;           /* 1 .. ARENAD_CLIENT_MAX_MODEL_HASH */
  const struct arenad_dims *inputs; /* n_inputs entries, borrowed; may be
                                       NULL when n_inputs is 0 */
  size_t n_inputs;                 /* 0 .. 1024 */
};

/* A verified plan and where it came from. Caller-allocated:
 * arenad_client_result_init() it, let a call fill it, release it with
 * arenad_client_result_cleanup(). plan is filled as planner_run()
 * fills it, in-place sharing included: plan.n_shared counts the
 * declared alias pairs that share one offset, and
 * plan.lower_bound_unshared_bytes is the bound with every alias ignored
 * (equal to plan.lower_bound_bytes when nothing can be shared, and from
 * a daemon that predates sharing). */
struct arenad_client_result {
  struct planner_plan plan; /* offsets in the caller's tensor order */
  int cached;               /* 1: the daemon served it from its cache */
  int local;                /* 1: planned in this process (fallback) */
  int fallback_reason;      /* when local: the ARENA_E* code that made the
                               daemon path fail, else 0 */
  /* of the caller's graph as the daemon keys it (without its aliases
   * when o->in_place is 0), and of the options */
  uint8_t graph_digest[ARENAD_CLIENT_DIGEST_LEN];
  uint8_t options_digest[ARENAD_CLIENT_DIGEST_LEN];
  uint64_t planning_us; /* time the plan took to compute (daemon or
                           local), in microseconds; for a cache hit, the
                           time of the computation that stored it */
};

/* Fills the first `size` bytes of o (caller-allocated, at least that
 * large) with the defaults: socket from the environment or the default
 * path, default timeouts, fallback enabled; bytes beyond the fields this
 * library knows are zeroed. Call it as arenad_client_options_init(o),
 * which passes sizeof(struct arenad_client_options). */
ARENAD_CLIENT_API void arenad_client_options_init_sized(
    struct arenad_client_options *o, size_t size);

/* Creates a handle. o (borrowed; NULL means the defaults) is read for
 * its first `size` bytes and copied, socket path included; a field
 * beyond them takes its default, one beyond what this library knows is
 * ignored. Does not connect: the first request does, so a daemon that is
 * down at open time costs nothing. Returns 0 and sets *out (owned, free
 * with arenad_client_close), ARENA_EINVAL (socket path empty or too long
 * for a Unix socket; o given with a size that does not reach past
 * fallback) or ARENA_ENOMEM; *out is NULL on failure. Call it as
 * arenad_client_open(o, out), which passes sizeof(struct
 * arenad_client_options). */
ARENAD_CLIENT_API int arenad_client_open_sized(
    const struct arenad_client_options *o, size_t size,
    arenad_client_t **out);

/* The entry points of programs built against a header without the
 * sized calls: they read and write only the fields up to fallback, and
 * the handle takes the default for every later one. */
ARENAD_CLIENT_API void arenad_client_options_init(struct arenad_client_options *o);
ARENAD_CLIENT_API int arenad_client_open(const struct arenad_client_options *o,
                                         arenad_client_t **out);

#define arenad_client_options_init(o)                                        \
  arenad_client_options_init_sized((o), sizeof(struct arenad_client_options))
#define arenad_client_open(o, out)                                           \
  arenad_client_open_sized((o), sizeof(struct arenad_client_options), (out))

/* Closes the connection and frees the handle. Accepts NULL. */
ARENAD_CLIENT_API void arenad_client_close(arenad_client_t *c);

/* Returns the handle's last error text (owned by the handle, valid until
 * the next call on it). After a successful call that fell back to local
 * planning it explains why the daemon was not used. "" when there is
 * nothing to report. Never NULL; c may be NULL, giving "". */
ARENAD_CLIENT_API const char *arenad_client_errmsg(const arenad_client_t *c);

/* Sets r to an empty result that arenad_client_result_cleanup() accepts. */
ARENAD_CLIENT_API void arenad_client_result_init(struct arenad_client_result *r);

/* Frees what r owns and leaves it empty. Accepts NULL. */
ARENAD_CLIENT_API void arenad_client_result_cleanup(struct arenad_client_result *r);

/* Plans graph g under options o (NULL: planner_options_init defaults) for
 * the model key k; all three borrowed. Blocks up to the connect timeout
 * plus the plan timeout; a daemon that does not answer is given up on
 * after the answer timeout (TIMEOUTS). The graph is validated locally first; the
 * daemon's plan is checked with planner_verify and its graph digest must
 * equal the digest of g. On success fills *out (initialised or cleaned;
 * old contents freed) with offsets in g's order.
 *
 * In-place sharing (planner.h, IN-PLACE SHARING) follows o->in_place,
 * on by default: the tensors' aliases are sent and the plan may give a
 * declared pair one buffer. With o->in_place 0 the request says so, and
 * the daemon, the local fallback and the checks all treat g as the
 * graph without aliases: its digest, cache entry and plan are those of
 * that graph. Aliases are validated either way.
 *
 * Returns 0, a planner_validate() code for a bad graph, ARENA_EINVAL for
 * a bad key, or (fallback off) any daemon error listed in ERRORS. With
 * fallback on, a daemon failure is not returned: the graph is planned
 * locally, out->local = 1, out->fallback_reason holds the daemon error,
 * and only a local planning error (ARENA_ENOMEM, ...) can fail the call.
 * A daemon's plan that needs more than any naive layout of g is
 * unusable: see arenad_client_plan_within(), UNUSABLE PLANS. On failure
 * *out is left empty. */
ARENAD_CLIENT_API int arenad_client_plan(arenad_client_t *c,
                                         const struct planner_graph *g,
                                         const struct planner_options *o,
                                         const struct arenad_model_key *k,
                                         struct arenad_client_result *out);

/* arenad_client_plan() for a caller that can use a plan of at most
 * max_arena_bytes bytes (0: no limit), such as an interpreter with an
 * arena of that size, or offsets of a narrower type.
 *
 * UNUSABLE PLANS
 *  Both calls treat a daemon's plan that verifies but cannot be used as
 *  a miss: one that needs more than max_arena_bytes, or more than any
 *  naive layout of g could (the highest pinned end plus every other
 *  tensor's size and alignment padding), which only a plan from
 *  elsewhere (a bundle, a damaged database) can. A plan only over
 *  max_arena_bytes whose arena meets the graph's lower bound (computed
 *  here, planner_accepted_lower_bound) is returned as it is, with
 *  nothing planned or reported: no plan of g is smaller. With fallback
 *  on, the
 *  graph is then planned in this process; when that plan is smaller, it
 *  is returned (out->local = 1, out->fallback_reason = ARENA_EUNUSABLE)
 *  and the daemon's plan is reported to the daemon (an Evict request
 *  naming it as unusable, docs/protocol.md), which plans the stored
 *  graph again and replaces the stored plan when its own is strictly
 *  smaller, so that the next request gets that plan; otherwise the
 *  daemon's plan is returned, as no smaller one was found. With fallback
 *  off, the plan is reported and asked for once more; when that plan is
 *  usable it is returned; else a plan worse than any naive layout makes
 *  the call return ARENA_EUNUSABLE, and a plan only over max_arena_bytes
 *  is returned as it is. arenad_client_errmsg() says
 *  what happened in every case ("planned locally (55296 bytes): the
 *  daemon's plan needs 33286005760 bytes, more than any naive layout of
 *  this graph (55376); reported to the daemon, which replaced it"). A
 *  returned plan can still exceed max_arena_bytes when no smaller plan
 *  was found: the caller checks out->plan.arena_bytes. Otherwise as
 *  arenad_client_plan(). */
ARENAD_CLIENT_API int arenad_client_plan_within(
    arenad_client_t *c, const struct planner_graph *g,
    const struct planner_options *o, const struct arenad_model_key *k,
    uint64_t max_arena_bytes, struct arenad_client_result *out);

/* Asks the daemon for a stored plan of graph g under options o (NULL:
 * defaults) and key k, without sending the graph. The daemon returns the
 * plans stored under k; the library picks the one whose graph and options
 * digests equal those of g and o (g without its aliases when o->in_place
 * is 0, as arenad_client_plan keys it), maps its offsets from ascending
 * tensor id order to g's order and verifies it under o. Never plans locally, fallback or
 * not: a lookup asks what is cached. Returns 0 and fills *out (cached =
 * 1), ARENA_ENOENT when nothing matches, ARENA_EVERIFY when the matching
 * plan is wrong for g, a planner_validate() code, or a daemon error from
 * ERRORS. On failure *out is left empty. */
ARENAD_CLIENT_API int arenad_client_lookup(arenad_client_t *c,
                                           const struct arenad_model_key *k,
                                           const struct planner_graph *g,
                                           const struct planner_options *o,
                                           struct arenad_client_result *out);

/* PLACEMENT RECORDS
 *  An interpreter adapter learns its graph by building the model once;
 *  a process that could ask for the plan by key alone, with no graph,
 *  skips that. arenad_client_attach() stores a placement record beside
 *  a stored plan: up to ARENAD_CLIENT_MAX_PLACEMENT bytes of the
 *  caller's own (what it needs to place the plan besides the graph, and
 *  a fingerprint of what learned it) that the daemon keeps, exports and
 *  serves but never reads. arenad_client_fetch() asks for the plans
 *  stored under a key with their graphs and records, and returns the
 *  first, most recently used first, whose options digest is that of o
 *  and whose record begins with the caller's prefix. The daemon is not
 *  trusted: each graph is validated, digested and compared with the
 *  digest its plan is stored under, and the plan planner_verify()ed
 *  against it. A record is the caller's to check (its own checksum, its
 *  fingerprint, the graph against its interpreter); the library checks
 *  only its length. Neither call plans locally, fallback or not. */

/* A plan fetched by key, with the graph it was made for. Caller-
 * allocated: arenad_client_fetched_init() it, let arenad_client_fetch()
 * fill it, release it with arenad_client_fetched_cleanup(). */
struct arenad_client_fetched {
  struct arenad_client_result result; /* the plan, offsets in graph's
                                         order; cached = 1 */
  struct planner_graph graph; /* owned tensors, in ascending id order */
  uint8_t *placement;         /* owned: the record, placement_len bytes */
  size_t placement_len;       /* 1 .. ARENAD_CLIENT_MAX_PLACEMENT */
};

ARENAD_CLIENT_API void arenad_client_fetched_init(struct arenad_client_fetched *f);
ARENAD_CLIENT_API void arenad_client_fetched_cleanup(struct arenad_client_fetched *f);

/* Fetches the plan stored under key k for options o (NULL: defaults)
 * whose placement record begins with the prefix_len bytes at prefix
 * (both borrowed; prefix_len 0 takes any record), with its graph and
 * record (PLACEMENT RECORDS). On success fills *out (initialised or
 * cleaned; old contents freed). Returns 0, ARENA_ENOENT (no plan stored
 * with a record for these options and prefix, or a daemon that does not
 * serve graphs), ARENA_EVERIFY (the only candidates failed their
 * checks), ARENA_EINVAL (a bad key or prefix), or a daemon error from
 * ERRORS. On failure *out is left empty. */
ARENAD_CLIENT_API int arenad_client_fetch(arenad_client_t *c,
                                          const struct arenad_model_key *k,
                                          const struct planner_options *o,
                                          const uint8_t *prefix,
                                          size_t prefix_len,
                                          struct arenad_client_fetched *out);

/* Stores len bytes at placement (1 .. ARENAD_CLIENT_MAX_PLACEMENT,
 * borrowed) as the placement record of the plan stored under key k with
 * the digests an arenad_client_result gave (PLACEMENT RECORDS),
 * replacing any record it had. Returns 0, ARENA_ENOENT (no such plan:
 * evicted, or planned locally), ARENA_EINVAL (bad arguments, or a daemon
 * that does not know the request) or a daemon error from ERRORS. */
ARENAD_CLIENT_API int arenad_client_attach(
    arenad_client_t *c, const struct arenad_model_key *k,
    const uint8_t graph_digest[ARENAD_CLIENT_DIGEST_LEN],
    const uint8_t options_digest[ARENAD_CLIENT_DIGEST_LEN],
    const void *placement, size_t len);

/* Fills o with the planner's defaults (algorithm best, alignment 64, no
 * capacity question, in-place sharing on): what arenad_client_plan and
 * arenad_client_lookup use when o is NULL. Change fields after this
 * call. */
ARENAD_CLIENT_API void arenad_client_plan_options_init(struct planner_options *o);

/* Writes the SHA-256 of len bytes at data (borrowed; may be NULL when len
 * is 0) to out (caller-allocated, ARENAD_CLIENT_DIGEST_LEN bytes). The
 * SHA-256 of a model file is a good model_hash for struct
 * arenad_model_key, and the one arenactl prints for a .tflite model.
 * Cannot fail. */
ARENAD_CLIENT_API void arenad_client_sha256(const void *data, size_t len,
                                            uint8_t out[ARENAD_CLIENT_DIGEST_LEN]);

/* The text ("invalid argument") and the name ("ARENA_EINVAL") of an
 * ARENA_E* code, 0 included ("success", "ARENA_OK"). Static strings,
 * never NULL; an unknown code gives "unknown error" and
 * "ARENA_EUNKNOWN". */
ARENAD_CLIENT_API const char *arenad_client_strerror(int code);
ARENAD_CLIENT_API const char *arenad_client_err_name(int code);

/* The stable name of an algorithm ("best", "tflm-greedy", ...), as in a
 * plan's algo field; "?" for an unknown value. A static string. */
ARENAD_CLIENT_API const char *arenad_client_algo_name(enum planner_algo a);

#ifdef __cplusplus
}
#endif

#endif /* ARENAD_CLIENT_H */

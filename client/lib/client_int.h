/*
 * client_int.h - private interface of the client library for arenactl and
 * the tests: raw request/response calls with the generated protobuf-c
 * types, which the public arenad_client.h must not expose.
 *
 * Never installed. Everything here may change with the library.
 */
#ifndef ARENAD_CLIENT_INT_H
#define ARENAD_CLIENT_INT_H

#include "arenad_client.h"
#include "wire.h"

/* Largest response frame the client accepts, in bytes. Larger than the
 * daemon's default request limit: a plan reply carries one offset per
 * tensor, up to ten bytes each. */
#define ARENAD_CLIENT_MAX_RESPONSE_FRAME (64u << 20)

/* An input shape as protobuf-c messages, built from a model key. */
struct arenad_client__shape {
  Arenad__V1__Dims *dims;  /* n entries, owned; dims arrays borrowed */
  Arenad__V1__Dims **ptrs; /* n pointers into dims, owned */
  size_t n;                /* number of inputs */
};

/* Checks key k (borrowed): hash 1..64 bytes, at most WIRE_MAX_INPUTS
 * inputs of rank at most WIRE_MAX_RANK, no negative dim. Returns 0 or
 * ARENA_EINVAL with the reason in err (optional). */
int arenad_client__check_key(const struct arenad_model_key *k,
                             char err[ARENA_ERR_LEN]);

/* Builds the Dims messages of k's inputs into *s (borrowing k's dims
 * arrays, which must outlive *s). Returns 0 or ARENA_ENOMEM; on failure
 * *s is empty. Free with arenad_client__shape_cleanup (accepts an empty
 * or cleaned *s). */
int arenad_client__shape_init(struct arenad_client__shape *s,
                              const struct arenad_model_key *k);
void arenad_client__shape_cleanup(struct arenad_client__shape *s);

/* Sends req (borrowed; its protocol_version, request_id and want_ack
 * are set here: request_id to the id it was sent under, which is not
 * packed with the rest but appended to the packed bytes, see
 * wire_frame_with_id) and waits for the response with the same id,
 * connecting first when needed. An Accepted response to it (the daemon
 * took it on as a job) is not returned: it lifts the answer timeout, and
 * the wait goes on for the reply until the plan timeout (see TIMEOUTS in
 * arenad_client.h). Returns 0 and sets *resp (owned; free with
 * wire_free_response) whatever the response's status, or a transport
 * error: ARENA_EUNAVAIL (cannot connect, or the connection closed before
 * a reply), ARENA_EDENIED (no permission on the socket), ARENA_ETIMEDOUT
 * (the answer or the plan timeout passed),
 * ARENA_EPROTO (malformed or truncated reply), ARENA_ETOOBIG (request
 * over the frame limit), ARENA_ENOMEM. When the daemon refuses the whole
 * connection (a response with request id 0 and a non-OK status, e.g.
 * BUSY or DENIED) that response is returned as the answer. After any
 * failure, and after a connection-level refusal, the connection is
 * dropped; the next call reconnects. errmsg explains failures. */
int arenad_client__call(arenad_client_t *c, Arenad__V1__Request *req,
                        Arenad__V1__Response **resp);

/* Maps a response status to an ARENA_E* code (OK gives 0). */
int arenad_client__status_code(Arenad__V1__Status s);

/* Maps resp's status to a code as above and, when it is not OK, sets the
 * handle's errmsg to "<what>: <STATUS>: <daemon's message>". resp is
 * borrowed. Returns the code. */
int arenad_client__check_status(arenad_client_t *c,
                                const Arenad__V1__Response *resp,
                                const char *what);

/* The socket path the handle connects to (owned by the handle). */
const char *arenad_client__socket_path(const arenad_client_t *c);

/* The handle's connect, answer and plan timeouts, in milliseconds, as
 * arenad_client_open settled them (defaults filled in). */
struct arenad_client__timeouts {
  uint32_t connect_ms; /* > 0 */
  uint32_t answer_ms;  /* > 0 */
  uint32_t plan_ms;    /* > 0: request_timeout_ms */
};
void arenad_client__get_timeouts(const arenad_client_t *c,
                                 struct arenad_client__timeouts *t);

/* Sets the handle's errmsg (printf-style) and returns code. */
int arenad_client__fail(arenad_client_t *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* ARENAD_CLIENT_INT_H */

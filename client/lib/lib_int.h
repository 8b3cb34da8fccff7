/*
 * lib_int.h - the layout of the client handle, and the calls only the
 * library's own files make, shared by arenad_client.c (the handle and
 * its connection) and lib_request.c (plan and lookup); the handle's
 * memory of its last call is lib_memo.h's. Included by nothing else:
 * arenactl and the tests see the handle only through arenad_client.h and
 * client_int.h, so it stays opaque to them.
 */
#ifndef ARENAD_CLIENT_LIB_INT_H
#define ARENAD_CLIENT_LIB_INT_H

#include "client_int.h"
#include "lib_memo.h"

#define ERRMSG_LEN (2 * ARENA_ERR_LEN) /* room for ours plus the daemon's */

/* Largest request frame buffer a handle keeps between calls, in bytes;
 * a larger one is freed after its call. */
#define ARENAD_CLIENT__FRAME_KEEP_BYTES (1u << 20)

/* A client handle; see arenad_client.h. Owned by the caller of
 * arenad_client_open, freed by arenad_client_close. */
struct arenad_client {
  char *socket_path;           /* owned, NUL-terminated, fits sun_path */
  uint32_t connect_timeout_ms; /* > 0 */
  uint32_t request_timeout_ms; /* > 0: the plan timeout */
  uint32_t answer_timeout_ms;  /* > 0 */
  int fallback;                /* 1: plan locally when the daemon fails */
  int fd;                      /* connected socket, or -1 */
  int reused;                  /* 1: fd was opened by an earlier call */
  struct wire_reader rd;       /* bytes from fd not yet taken as frames */
  uint64_t next_id;            /* request id of the next request, >= 1 */
  char errmsg[ERRMSG_LEN];     /* last error text, "" when none */
  struct arenad_client__memo memo; /* the last graph, and what is known
                                      of it */
  uint8_t *frame;              /* owned buffer the request frame is
                                  composed in, frame_cap bytes; NULL */
  size_t frame_cap;            /* <= ARENAD_CLIENT__FRAME_KEEP_BYTES
                                  between calls */
};

/* Packs req (borrowed) as a request frame with its protocol_version set
 * to WIRE_PROTOCOL_VERSION, want_ack to 1 and request_id to 0, for
 * arenad_client__call_packed to send under an id of its own. On success
 * *frame is owned (free()) and *len its length, header included. Returns
 * 0, or ARENA_ETOOBIG (over the frame limit) or ARENA_ENOMEM with errmsg
 * set and *frame NULL. */
int arenad_client__pack(arenad_client_t *c, Arenad__V1__Request *req,
                        uint8_t **frame, size_t *len);

/* Sends the request whose body (len bytes, borrowed; a frame of
 * arenad_client__pack without its WIRE_HEADER_LEN header bytes) has no
 * request id, under the handle's next id (c->next_id, which skips 0),
 * appended with wire_frame_with_id, and waits for the reply to it.
 * Otherwise as arenad_client__call (client_int.h): same returns, same
 * retry on a connection found closed, same dropping of the connection. */
int arenad_client__call_packed(arenad_client_t *c, const uint8_t *body,
                               size_t len, Arenad__V1__Response **resp);

#endif /* ARENAD_CLIENT_LIB_INT_H */

/*
 * lib_int.h - the layout of the client handle, shared by the client
 * library's own files: arenad_client.c (the handle and its connection)
 * and lib_request.c (plan and lookup); the handle's memory of digests is
 * lib_digest.h's. Included by nothing else: arenactl and the tests see
 * the handle only through arenad_client.h and client_int.h, so it stays
 * opaque to them.
 */
#ifndef ARENAD_CLIENT_LIB_INT_H
#define ARENAD_CLIENT_LIB_INT_H

#include "client_int.h"
#include "lib_digest.h"

#define ERRMSG_LEN (2 * ARENA_ERR_LEN) /* room for ours plus the daemon's */

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
  struct arenad_client__digests digests; /* the last graph digested */
};

#endif /* ARENAD_CLIENT_LIB_INT_H */

/*
 * lib_message.c - what the client library's requests and replies carry:
 * checking a model key, building its input-shape messages, and mapping a
 * reply's status to an error code and message (client_int.h). arenactl
 * uses these too.
 *
 * It may use arenad_client.c (arenad_client__fail) and proto/wire_plan, none
 * of which calls back into it; lib_request.c sits above it.
 */
#include "client_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire_plan.h"

/* Copies a daemon-supplied message into out, replacing control bytes so
 * that a hostile daemon cannot drive the caller's terminal. */
static void clean_text(const char *in, char *out, size_t cap)
{
  size_t k = 0;
  for (; in && *in && k + 1 < cap; in++) {
    unsigned char ch = (unsigned char)*in;
    out[k++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
  }
  out[k] = '\0';
}

/* ---- statuses ----------------------------------------------------------- */

int arenad_client__status_code(Arenad__V1__Status s)
{
  switch (s) {
  case ARENAD__V1__STATUS__OK: return 0;
  case ARENAD__V1__STATUS__NOT_FOUND: return ARENA_ENOENT;
  case ARENAD__V1__STATUS__INVALID_ARGUMENT: return ARENA_EINVAL;
  case ARENAD__V1__STATUS__BUSY: return ARENA_EBUSY;
  case ARENAD__V1__STATUS__DENIED: return ARENA_EDENIED;
  case ARENAD__V1__STATUS__TOO_LARGE: return ARENA_ETOOBIG;
  case ARENAD__V1__STATUS__UNSUPPORTED_VERSION: return ARENA_EVERSION;
  case ARENAD__V1__STATUS__INTERNAL: return ARENA_EINTERNAL;
  default: return ARENA_EPROTO;
  }
}

int arenad_client__check_status(arenad_client_t *c,
                                const Arenad__V1__Response *resp,
                                const char *what)
{
  int code = arenad_client__status_code(resp->status);
  if (code == 0)
    return 0;
  char msg[ARENA_ERR_LEN];
  clean_text(resp->error, msg, sizeof msg);
  if (code == ARENA_EPROTO)
    return arenad_client__fail(c, code, "%s: unknown status %d%s%s", what,
                               (int)resp->status, msg[0] ? ": " : "", msg);
  return arenad_client__fail(c, code, "%s: %s%s%s", what,
                             wire_status_name(resp->status),
                             msg[0] ? ": " : "", msg);
}

/* ---- keys --------------------------------------------------------------- */

int arenad_client__check_key(const struct arenad_model_key *k,
                             char err[ARENA_ERR_LEN])
{
  char tmp[ARENA_ERR_LEN];
  if (!err)
    err = tmp;
  if (!k || !k->model_hash || k->model_hash_len == 0 ||
      k->model_hash_len > ARENAD_CLIENT_MAX_MODEL_HASH) {
    snprintf(err, ARENA_ERR_LEN, "model hash must be 1 to %u bytes",
             ARENAD_CLIENT_MAX_MODEL_HASH);
    return ARENA_EINVAL;
  }
  if (k->n_inputs > WIRE_MAX_INPUTS || (k->n_inputs && !k->inputs)) {
    snprintf(err, ARENA_ERR_LEN, "input shape must have 0 to %u inputs",
             WIRE_MAX_INPUTS);
    return ARENA_EINVAL;
  }
  for (size_t i = 0; i < k->n_inputs; i++) {
    const struct arenad_dims *d = &k->inputs[i];
    if (d->n_dims > WIRE_MAX_RANK || (d->n_dims && !d->dims)) {
      snprintf(err, ARENA_ERR_LEN, "input %zu: rank must be 0 to %u", i,
               WIRE_MAX_RANK);
      return ARENA_EINVAL;
    }
    for (size_t j = 0; j < d->n_dims; j++)
      if (d->dims[j] < 0) {
        snprintf(err, ARENA_ERR_LEN, "input %zu: dim %zu is negative", i, j);
        return ARENA_EINVAL;
      }
  }
  return 0;
}

int arenad_client__shape_init(struct arenad_client__shape *s,
                              const struct arenad_model_key *k)
{
  memset(s, 0, sizeof *s);
  if (k->n_inputs == 0)
    return 0;
  s->dims = calloc(k->n_inputs, sizeof *s->dims);
  s->ptrs = calloc(k->n_inputs, sizeof *s->ptrs);
  if (!s->dims || !s->ptrs) {
    arenad_client__shape_cleanup(s);
    return ARENA_ENOMEM;
  }
  for (size_t i = 0; i < k->n_inputs; i++) {
    arenad__v1__dims__init(&s->dims[i]);
    /* Packing only reads the array; the cast drops const for the
     * generated struct's sake. */
    s->dims[i].dims = (int64_t *)k->inputs[i].dims;
    s->dims[i].n_dims = k->inputs[i].n_dims;
    s->ptrs[i] = &s->dims[i];
  }
  s->n = k->n_inputs;
  return 0;
}

void arenad_client__shape_cleanup(struct arenad_client__shape *s)
{
  free(s->dims);
  free(s->ptrs);
  memset(s, 0, sizeof *s);
}

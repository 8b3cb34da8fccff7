/*
 * lib_fetch.c - the client library's calls for a caller that does not
 * know its graph before asking: arenad_client_fetch(), which takes a
 * stored plan by key with the graph it was made for and the placement
 * record stored beside it, and arenad_client_attach(), which stores such
 * a record (see arenad_client.h, PLACEMENT RECORDS).
 *
 * Nothing the daemon sends is taken on faith: each graph is validated as
 * the daemon validates a Plan request, digested again and compared with
 * the digest the plan is stored under, and the plan is verified against
 * it with planner_verify before it is handed out.
 *
 * Beside lib_request.c in the top layer of the library: it may use
 * arenad_client.c (the handle, arenad_client__call), lib_message.c
 * (keys, shapes, statuses), proto/wire_plan and the planner; nothing in
 * the library calls into it.
 */
#include "lib_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire_plan.h"

void arenad_client_fetched_init(struct arenad_client_fetched *f)
{
  memset(f, 0, sizeof *f);
  arenad_client_result_init(&f->result);
}

void arenad_client_fetched_cleanup(struct arenad_client_fetched *f)
{
  if (!f)
    return;
  arenad_client_result_cleanup(&f->result);
  free((void *)f->graph.tensors);
  free(f->placement);
  arenad_client_fetched_init(f);
}

static int digest_is(ProtobufCBinaryData b, const uint8_t *d)
{
  return b.len == PLANNER_DIGEST_LEN && memcmp(b.data, d, b.len) == 0;
}

/* Checks one entry of a Lookup with_graph reply against o (options
 * digest od) and the prefix, and when it holds fills *out (cleaned
 * first) with its verified plan, its graph and its record. Returns 0,
 * ARENA_ENOENT (not for these options or this prefix) or the code of
 * what failed, with why set. */
static int take_entry(const Arenad__V1__BundleEntry *e,
                      const struct planner_options *o, const uint8_t *od,
                      const uint8_t *prefix, size_t prefix_len,
                      struct arenad_client_fetched *out,
                      char why[ARENA_ERR_LEN])
{
  if (!e || !e->request || !e->plan || !digest_is(e->plan->options_digest, od)
      || e->placement.len < prefix_len || e->placement.len == 0 ||
      e->placement.len > ARENAD_CLIENT_MAX_PLACEMENT ||
      (prefix_len && memcmp(e->placement.data, prefix, prefix_len) != 0))
    return ARENA_ENOENT;
  struct wire_limits l;
  struct wire_graph g;
  wire_limits_init(&l);
  int rc = wire_graph_from_plan(e->request, &l, &g, why);
  if (rc)
    return rc;
  struct planner_graph pg = {g.tensors, g.n_tensors};
  uint8_t gd[PLANNER_DIGEST_LEN];
  if ((rc = planner_graph_digest(&pg, gd)) != 0) {
    wire_graph_cleanup(&g);
    return rc;
  }
  arenad_client_fetched_cleanup(out);
  if (!digest_is(e->plan->graph_digest, gd) ||
      e->plan->n_offsets != g.n_tensors) {
    snprintf(why, ARENA_ERR_LEN, "a stored plan does not match the graph "
                                 "sent with it");
    rc = ARENA_EVERIFY;
  } else if ((rc = wire_plan_from_reply(e->plan, &out->result.plan)) == 0) {
    rc = planner_verify(&pg, o, &out->result.plan, why);
    if (rc && rc != ARENA_ENOMEM)
      rc = ARENA_EVERIFY;
  }
  if (rc == 0)
    out->placement = malloc(e->placement.len);
  if (rc == 0 && !out->placement)
    rc = ARENA_ENOMEM;
  if (rc) {
    wire_graph_cleanup(&g);
    arenad_client_fetched_cleanup(out);
    return rc;
  }
  memcpy(out->placement, e->placement.data, e->placement.len);
  out->placement_len = e->placement.len;
  out->graph = pg; /* the tensors change hands */
  g.tensors = NULL;
  g.n_tensors = 0;
  wire_graph_cleanup(&g);
  memcpy(out->result.graph_digest, gd, PLANNER_DIGEST_LEN);
  memcpy(out->result.options_digest, od, PLANNER_DIGEST_LEN);
  out->result.cached = 1;
  out->result.planning_us = e->plan->planning_us;
  return 0;
}

/* Sends a Lookup with_graph for k and returns the response (owned) in
 * *resp, or a code with errmsg set. */
static int ask(arenad_client_t *c, const struct arenad_model_key *k,
               Arenad__V1__Response **resp)
{
  Arenad__V1__Lookup lm = ARENAD__V1__LOOKUP__INIT;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  struct arenad_client__shape sh;
  if (arenad_client__shape_init(&sh, k) != 0)
    return arenad_client__fail(c, ARENA_ENOMEM, "out of memory");
  lm.model_hash.data = (uint8_t *)k->model_hash;
  lm.model_hash.len = k->model_hash_len;
  lm.input_shape = sh.ptrs;
  lm.n_input_shape = sh.n;
  lm.with_graph = 1;
  req.body_case = ARENAD__V1__REQUEST__BODY_LOOKUP;
  req.lookup = &lm;
  int rc = arenad_client__call(c, &req, resp);
  arenad_client__shape_cleanup(&sh);
  return rc;
}

int arenad_client_fetch(arenad_client_t *c, const struct arenad_model_key *k,
                        const struct planner_options *o,
                        const uint8_t *prefix, size_t prefix_len,
                        struct arenad_client_fetched *out)
{
  struct planner_options def;
  Arenad__V1__Response *resp = NULL;
  char err[ARENA_ERR_LEN];
  arenad_client_fetched_cleanup(out);
  c->errmsg[0] = '\0';
  if (!o) {
    planner_options_init(&def);
    o = &def;
  }
  int rc = arenad_client__check_key(k, err);
  if (rc)
    return arenad_client__fail(c, rc, "%s", err);
  if (prefix_len > ARENAD_CLIENT_MAX_PLACEMENT || (prefix_len && !prefix))
    return arenad_client__fail(c, ARENA_EINVAL, "a prefix of %zu bytes",
                               prefix_len);
  uint8_t od[PLANNER_DIGEST_LEN];
  planner_options_digest(o, od);
  if ((rc = ask(c, k, &resp)) != 0)
    return rc;
  if ((rc = arenad_client__check_status(c, resp, "fetch")) != 0) {
    wire_free_response(resp);
    return rc;
  }
  if (resp->body_case != ARENAD__V1__RESPONSE__BODY_LOOKUP || !resp->lookup) {
    wire_free_response(resp);
    return arenad_client__fail(c, ARENA_EPROTO,
                               "daemon answered a fetch without plans");
  }
  int bad = 0;
  char why[ARENA_ERR_LEN] = "";
  rc = ARENA_ENOENT;
  for (size_t i = 0; i < resp->lookup->n_entries && rc; i++) {
    rc = take_entry(resp->lookup->entries[i], o, od, prefix, prefix_len,
                    out, err);
    if (rc && rc != ARENA_ENOENT && !bad++)
      snprintf(why, sizeof why, "%s", err);
    if (rc == ARENA_ENOMEM)
      break;
  }
  size_t n = resp->lookup->n_entries;
  wire_free_response(resp);
  if (rc == ARENA_ENOMEM)
    return arenad_client__fail(c, rc, "fetch: out of memory");
  if (rc && bad)
    return arenad_client__fail(c, ARENA_EVERIFY,
                               "fetch: %d of %zu stored plans refused: %s",
                               bad, n, why);
  if (rc)
    return arenad_client__fail(c, ARENA_ENOENT,
                               "fetch: %zu stored plan%s, none with a "
                               "placement record for these options",
                               n, n == 1 ? "" : "s");
  return 0;
}

int arenad_client_attach(arenad_client_t *c, const struct arenad_model_key *k,
                         const uint8_t graph_digest[ARENAD_CLIENT_DIGEST_LEN],
                         const uint8_t options_digest[ARENAD_CLIENT_DIGEST_LEN],
                         const void *placement, size_t len)
{
  char err[ARENA_ERR_LEN];
  c->errmsg[0] = '\0';
  int rc = arenad_client__check_key(k, err);
  if (rc)
    return arenad_client__fail(c, rc, "%s", err);
  if (!graph_digest || !options_digest || !placement || len == 0 ||
      len > ARENAD_CLIENT_MAX_PLACEMENT)
    return arenad_client__fail(c, ARENA_EINVAL,
                               "attach takes both digests and a placement "
                               "record of 1 to %u bytes",
                               ARENAD_CLIENT_MAX_PLACEMENT);
  struct arenad_client__shape sh;
  if (arenad_client__shape_init(&sh, k) != 0)
    return arenad_client__fail(c, ARENA_ENOMEM, "out of memory");
  Arenad__V1__Attach am = ARENAD__V1__ATTACH__INIT;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Response *resp = NULL;
  am.model_hash.data = (uint8_t *)k->model_hash;
  am.model_hash.len = k->model_hash_len;
  am.input_shape = sh.ptrs;
  am.n_input_shape = sh.n;
  am.graph_digest.data = (uint8_t *)graph_digest;
  am.graph_digest.len = ARENAD_CLIENT_DIGEST_LEN;
  am.options_digest.data = (uint8_t *)options_digest;
  am.options_digest.len = ARENAD_CLIENT_DIGEST_LEN;
  am.placement.data = (uint8_t *)placement;
  am.placement.len = len;
  req.body_case = ARENAD__V1__REQUEST__BODY_ATTACH;
  req.attach = &am;
  rc = arenad_client__call(c, &req, &resp);
  arenad_client__shape_cleanup(&sh);
  if (rc == 0)
    rc = arenad_client__check_status(c, resp, "attach");
  if (rc == 0 && resp->body_case != ARENAD__V1__RESPONSE__BODY_ATTACHED)
    rc = arenad_client__fail(c, ARENA_EPROTO,
                             "daemon answered an attach with another reply");
  wire_free_response(resp);
  return rc;
}

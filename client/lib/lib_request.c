/*
 * lib_request.c - the client library's plan and lookup calls: checking the
 * caller's graph and key, asking the daemon, verifying every plan it
 * returns against the caller's graph before handing it out, and planning
 * locally when the daemon fails and the handle allows the fallback (see
 * arenad_client.h and the DESIGN section of arenad_client.c). With
 * options->in_place 0 the graph is digested without its aliases, as the
 * daemon keys it; the request carries the option, and planner_verify and
 * planner_run ignore the aliases by themselves.
 *
 * The handle's memory of its last call (lib_memo.c) spares a call for
 * the graph of the previous one most of the work: validation, digests,
 * packing the request and, when the daemon sends back the plan already
 * verified for this graph, verification. The checks that cost little
 * (the reply's digests, its offset count, the capacity it claims to fit)
 * run on every call.
 *
 * The top layer of the library: it may use arenad_client.c (the handle,
 * arenad_client__call and arenad_client__call_packed), lib_memo.c (the
 * handle's memory of its last call), lib_message.c (keys, shapes,
 * statuses), proto/wire_plan and the planner; nothing in the library
 * calls into it.
 */
#include "lib_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire_plan.h"

static uint64_t now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- results ------------------------------------------------------------ */

void arenad_client_result_init(struct arenad_client_result *r)
{
  memset(r, 0, sizeof *r);
  planner_plan_init(&r->plan);
}

void arenad_client_result_cleanup(struct arenad_client_result *r)
{
  if (!r)
    return;
  planner_plan_cleanup(&r->plan);
  arenad_client_result_init(r);
}

/* ---- plan --------------------------------------------------------------- */

/* Checks the digests a reply carries against ours. */
static int check_digests(arenad_client_t *c, const Arenad__V1__PlanReply *r,
                         const uint8_t *gd, const uint8_t *od)
{
  if (r->graph_digest.len != PLANNER_DIGEST_LEN)
    return arenad_client__fail(c, ARENA_EPROTO,
                               "daemon's plan has a %zu-byte graph digest",
                               r->graph_digest.len);
  if (memcmp(r->graph_digest.data, gd, PLANNER_DIGEST_LEN) != 0)
    return arenad_client__fail(c, ARENA_EVERIFY,
                               "daemon returned a plan for another graph "
                               "(graph digest mismatch)");
  if (r->options_digest.len != 0 &&
      r->options_digest.len != PLANNER_DIGEST_LEN)
    return arenad_client__fail(c, ARENA_EPROTO,
                               "daemon's plan has a %zu-byte options digest",
                               r->options_digest.len);
  if (r->options_digest.len &&
      memcmp(r->options_digest.data, od, PLANNER_DIGEST_LEN) != 0)
    return arenad_client__fail(c, ARENA_EVERIFY,
                               "daemon returned a plan for other options "
                               "(options digest mismatch)");
  return 0;
}

/* Verifies a plan built from a reply against the caller's graph: with
 * planner_verify, unless it is byte for byte the plan that passed it for
 * this graph and these options last (the handle's memo), and then checks
 * the capacity it claims to fit. */
static int verify(arenad_client_t *c, const struct planner_graph *g,
                  const struct planner_options *o,
                  const struct planner_plan *p)
{
  char err[ARENA_ERR_LEN] = "";
  if (!arenad_client__memo_verified(&c->memo, p)) {
    int rc = planner_verify(g, o, p, err);
    if (rc == ARENA_ENOMEM)
      return arenad_client__fail(c, rc, "verifying the daemon's plan: out "
                                        "of memory");
    if (rc)
      return arenad_client__fail(c, ARENA_EVERIFY,
                                 "daemon's plan failed verification: %s",
                                 err[0] ? err : arena_strerror(rc));
    arenad_client__memo_set_verified(&c->memo, p);
  }
  if (o->capacity && p->fit == PLANNER_FIT_YES && p->arena_bytes > o->capacity)
    return arenad_client__fail(c, ARENA_EVERIFY,
                               "daemon's plan claims to fit %llu bytes but "
                               "needs %llu",
                               (unsigned long long)o->capacity,
                               (unsigned long long)p->arena_bytes);
  return 0;
}

/* Copies a reply into out->plan, checking the offset count first. */
static int take_reply(arenad_client_t *c, const Arenad__V1__PlanReply *r,
                      size_t n, struct arenad_client_result *out)
{
  if (r->n_offsets != n)
    return arenad_client__fail(c, ARENA_EVERIFY,
                               "daemon's plan has %zu offsets for %zu "
                               "tensors",
                               r->n_offsets, n);
  int rc = wire_plan_from_reply(r, &out->plan);
  if (rc == ARENA_EPROTO)
    return arenad_client__fail(c, rc, "daemon's plan has an unknown "
                                      "algorithm or fit value");
  if (rc)
    return arenad_client__fail(c, rc, "out of memory");
  return 0;
}

/* Packs the Plan request for g, o and k into *frame (owned, free()) and
 * *len, with request id 0. */
static int pack_plan(arenad_client_t *c, const struct planner_graph *g,
                     const struct planner_options *o,
                     const struct arenad_model_key *k, uint8_t **frame,
                     size_t *len)
{
  Arenad__V1__Plan pm;
  Arenad__V1__PlanOptions po;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  struct arenad_client__shape sh;
  *frame = NULL;
  *len = 0;
  int rc = arenad_client__shape_init(&sh, k);
  if (rc)
    return arenad_client__fail(c, rc, "out of memory");
  rc = wire_plan_msg_init(&pm, &po, g, o, k->model_hash, k->model_hash_len,
                          sh.ptrs, sh.n);
  if (rc) {
    arenad_client__shape_cleanup(&sh);
    return arenad_client__fail(c, rc, "out of memory");
  }
  req.body_case = ARENAD__V1__REQUEST__BODY_PLAN;
  req.plan = &pm;
  rc = arenad_client__pack(c, &req, frame, len);
  wire_plan_msg_cleanup(&pm);
  arenad_client__shape_cleanup(&sh);
  return rc;
}

/* Sends the Plan request for g, o and k: the one the handle packed for
 * its last call when that was for the same graph, options and key, else
 * a new one, which the handle then keeps. */
static int send_plan(arenad_client_t *c, const struct planner_graph *g,
                     const struct planner_options *o,
                     const struct arenad_model_key *k,
                     Arenad__V1__Response **resp)
{
  size_t len;
  const uint8_t *kept = arenad_client__memo_packed(&c->memo, k, &len);
  if (kept)
    return arenad_client__call_packed(c, kept + WIRE_HEADER_LEN,
                                      len - WIRE_HEADER_LEN, resp);
  uint8_t *frame;
  int rc = pack_plan(c, g, o, k, &frame, &len);
  if (rc)
    return rc;
  rc = arenad_client__call_packed(c, frame + WIRE_HEADER_LEN,
                                  len - WIRE_HEADER_LEN, resp);
  arenad_client__memo_set_packed(&c->memo, k, frame, len);
  return rc;
}

/* The daemon path of arenad_client_plan. */
static int plan_remote(arenad_client_t *c, const struct planner_graph *g,
                       const struct planner_options *o,
                       const struct arenad_model_key *k,
                       struct arenad_client_result *out)
{
  Arenad__V1__Response *resp = NULL;
  int rc = send_plan(c, g, o, k, &resp);
  if (rc)
    return rc;
  rc = arenad_client__check_status(c, resp, "daemon");
  if (!rc && (resp->body_case != ARENAD__V1__RESPONSE__BODY_PLAN ||
              !resp->plan))
    rc = arenad_client__fail(c, ARENA_EPROTO,
                             "daemon answered a plan request without a "
                             "plan");
  if (!rc)
    rc = check_digests(c, resp->plan, out->graph_digest,
                       out->options_digest);
  if (!rc)
    rc = take_reply(c, resp->plan, g->n_tensors, out);
  if (!rc)
    rc = verify(c, g, o, &out->plan);
  if (!rc) {
    out->cached = resp->plan->cached;
    out->planning_us = resp->plan->planning_us;
  }
  wire_free_response(resp);
  return rc;
}

/* Validates the caller's inputs (unless the handle's memo knows the
 * graph passed under these options) and computes both digests into
 * out. */
static int prepare(arenad_client_t *c, const struct planner_graph *g,
                   const struct planner_options *o,
                   const struct arenad_model_key *k,
                   struct arenad_client_result *out)
{
  char err[ARENA_ERR_LEN] = "";
  int rc;
  arenad_client__memo_begin(&c->memo, g, o);
  if (!arenad_client__memo_validated(&c->memo)) {
    if ((rc = planner_validate(g, o, err)) != 0)
      return arenad_client__fail(c, rc, "invalid graph: %s",
                                 err[0] ? err : arena_strerror(rc));
    arenad_client__memo_set_validated(&c->memo);
  }
  if ((rc = arenad_client__check_key(k, err)) != 0)
    return arenad_client__fail(c, rc, "invalid model key: %s", err);
  /* The graph digest as the daemon keys it: with in-place sharing off,
   * that of g without its aliases (wire_graph_from_plan clears them). */
  if ((rc = arenad_client__memo_digests(&c->memo, g, o, out->graph_digest,
                                        out->options_digest)) != 0)
    return arenad_client__fail(c, rc, "digest of the graph: %s",
                               arena_strerror(rc));
  return 0;
}

/* ---- unusable plans ----------------------------------------------------- */

/* No plan the naive algorithm makes of g under o needs more than this:
 * the highest end of a pinned tensor plus, for every other tensor, its
 * size and the padding its alignment may cost (planner/heuristics, naive:
 * bump allocation above the pinned tensors). Saturates at UINT64_MAX. */
static uint64_t naive_bound(const struct planner_graph *g,
                            const struct planner_options *o)
{
  uint64_t top = 0, sum = 0;
  for (size_t i = 0; i < g->n_tensors; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    if (t->pinned != PLANNER_NOT_PINNED) {
      uint64_t end = (uint64_t)t->pinned + t->size;
      top = end > top ? end : top;
      continue;
    }
    if (!t->size)
      continue;
    uint64_t a = t->align > o->alignment ? t->align : o->alignment;
    uint64_t add = t->size + (a ? a - 1 : 0);
    sum = add > UINT64_MAX - sum ? UINT64_MAX : sum + add;
  }
  return top > UINT64_MAX - sum ? UINT64_MAX : top + sum;
}

/* Tells the daemon that the plan it served under k for the digests gd
 * and od (arena bytes) cannot be used here (usable: what could be, 0
 * when not known): an Evict request with the unusable target. Returns 1
 * when the daemon replaced it, 0 when it kept it, or an ARENA_E* code
 * (a daemon too old to take reports answers INVALID_ARGUMENT), with why
 * (ARENA_ERR_LEN bytes) set. Leaves the handle's errmsg as it was. */
static int report_unusable(arenad_client_t *c,
                           const struct arenad_model_key *k,
                           const uint8_t *gd, const uint8_t *od,
                           uint64_t arena, uint64_t usable, char *why)
{
  char keep[ERRMSG_LEN];
  memcpy(keep, c->errmsg, sizeof keep);
  struct arenad_client__shape sh;
  int rc = arenad_client__shape_init(&sh, k);
  if (rc) {
    snprintf(why, ARENA_ERR_LEN, "out of memory");
    return rc;
  }
  Arenad__V1__Unusable u = ARENAD__V1__UNUSABLE__INIT;
  u.model_hash.data = (uint8_t *)k->model_hash;
  u.model_hash.len = k->model_hash_len;
  u.input_shape = sh.ptrs;
  u.n_input_shape = sh.n;
  u.graph_digest.data = (uint8_t *)gd;
  u.graph_digest.len = PLANNER_DIGEST_LEN;
  u.options_digest.data = (uint8_t *)od;
  u.options_digest.len = PLANNER_DIGEST_LEN;
  u.arena_bytes = arena;
  u.usable_bytes = usable;
  Arenad__V1__Evict em = ARENAD__V1__EVICT__INIT;
  em.target_case = ARENAD__V1__EVICT__TARGET_UNUSABLE;
  em.unusable = &u;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.body_case = ARENAD__V1__REQUEST__BODY_EVICT;
  req.evict = &em;
  Arenad__V1__Response *resp = NULL;
  rc = arenad_client__call(c, &req, &resp);
  if (!rc)
    rc = arenad_client__check_status(c, resp, "daemon");
  if (!rc && (resp->body_case != ARENAD__V1__RESPONSE__BODY_EVICT ||
              !resp->evict))
    rc = arenad_client__fail(c, ARENA_EPROTO, "daemon answered the report "
                                              "without an EvictReply");
  int dropped = !rc && resp->evict->evicted > 0;
  if (rc)
    snprintf(why, ARENA_ERR_LEN, "%.*s", ARENA_ERR_LEN - 1, c->errmsg);
  wire_free_response(resp);
  arenad_client__shape_cleanup(&sh);
  memcpy(c->errmsg, keep, sizeof keep);
  return rc ? rc : dropped;
}

/* What became of a report, for errmsg. */
static const char *report_outcome(int r, const char *why, char *buf)
{
  if (r == 1)
    return "reported to the daemon, which replaced it";
  if (r == 0)
    return "reported to the daemon, which kept it";
  snprintf(buf, ARENA_ERR_LEN, "the report failed: %s", why);
  return buf;
}

/* Plans g locally into out (its digests kept): the fallback after a
 * daemon failure of code reason (why: the daemon's side of the story),
 * or after an unusable plan. Returns 0 with errmsg "planned locally:
 * WHY", or the planner's error. */
static int plan_here(arenad_client_t *c, const struct planner_graph *g,
                     const struct planner_options *o, int reason,
                     const char *why, struct arenad_client_result *out)
{
  uint8_t gd[PLANNER_DIGEST_LEN], od[PLANNER_DIGEST_LEN];
  memcpy(gd, out->graph_digest, sizeof gd);
  memcpy(od, out->options_digest, sizeof od);
  arenad_client_result_cleanup(out);
  memcpy(out->graph_digest, gd, sizeof gd);
  memcpy(out->options_digest, od, sizeof od);
  out->local = 1;
  out->fallback_reason = reason;
  char err[ARENA_ERR_LEN] = "";
  uint64_t t0 = now_us();
  int lrc = planner_run(g, o, &out->plan, err);
  out->planning_us = now_us() - t0;
  if (lrc)
    return arenad_client__fail(c, lrc, "planning locally: %s (daemon: %s)",
                               err[0] ? err : arena_strerror(lrc), why);
  arenad_client__fail(c, 0, "planned locally: %.*s", ARENA_ERR_LEN, why);
  return 0;
}

/* The daemon's plan in out is verified but cannot be used: it needs more
 * than bound (no naive layout of g needs as much) or than max (0: no
 * limit). Treated as a miss (arenad_client_plan_within): with fallback,
 * planned here, and the daemon's plan reported when the local one is
 * smaller; without, reported and asked for once more. Returns 0 with out holding the plan to use, or an error
 * with out empty. */
static int plan_unusable(arenad_client_t *c, const struct planner_graph *g,
                         const struct planner_options *o,
                         const struct arenad_model_key *k, uint64_t max,
                         uint64_t bound, struct arenad_client_result *out)
{
  char what[ARENA_ERR_LEN], why[ARENA_ERR_LEN] = "", buf[ARENA_ERR_LEN];
  uint64_t got = out->plan.arena_bytes;
  uint64_t usable = max && max < bound ? max : bound;
  int bad = got > bound; /* worse than any naive layout: poisoned */
  if (bad)
    snprintf(what, sizeof what, "the daemon's plan needs %llu bytes, more "
             "than any naive layout of this graph (%llu)",
             (unsigned long long)got, (unsigned long long)bound);
  else
    snprintf(what, sizeof what, "the daemon's plan needs %llu bytes, more "
             "than the %llu this caller can use",
             (unsigned long long)got, (unsigned long long)max);
  /* A plan at the graph's lower bound cannot be beaten: neither this
   * process nor the daemon would find a smaller one, so nothing is
   * planned or reported (the bound is computed here, not believed). */
  uint64_t lb = 0;
  if (!bad && planner_accepted_lower_bound(g, o, &lb, NULL) == 0 &&
      got <= lb) {
    arenad_client__fail(c, 0, "%s; no plan of this graph is smaller (its "
                              "lower bound is %llu bytes)",
                        what, (unsigned long long)lb);
    return 0;
  }
  if (c->fallback) {
    struct arenad_client_result mine;
    arenad_client_result_init(&mine);
    memcpy(mine.graph_digest, out->graph_digest, PLANNER_DIGEST_LEN);
    memcpy(mine.options_digest, out->options_digest, PLANNER_DIGEST_LEN);
    int rc = plan_here(c, g, o, ARENA_EUNUSABLE, what, &mine);
    if (rc) {
      arenad_client_result_cleanup(&mine);
      arenad_client_result_cleanup(out);
      return rc;
    }
    if (mine.plan.arena_bytes >= got) {
      /* Nothing smaller to be had: the daemon's plan stands, and the
       * caller, who sees its size, decides. */
      arenad_client_result_cleanup(&mine);
      arenad_client__fail(c, 0, "%s; no smaller plan was found here",
                          what);
      return 0;
    }
    int r = report_unusable(c, k, out->graph_digest, out->options_digest,
                            got, usable, why);
    arenad_client_result_cleanup(out);
    *out = mine;
    arenad_client__fail(c, 0, "planned locally (%llu bytes): %s; %s",
                        (unsigned long long)out->plan.arena_bytes, what,
                        report_outcome(r, why, buf));
    return 0;
  }
  /* Fallback off: reported, and asked for again whatever the daemon
   * said of the report ("kept" also comes when another client's report
   * replaced the plan first). */
  int r = report_unusable(c, k, out->graph_digest, out->options_digest,
                          got, usable, why);
  const char *outcome = report_outcome(r, why, buf);
  struct arenad_client_result again;
  arenad_client_result_init(&again);
  memcpy(again.graph_digest, out->graph_digest, PLANNER_DIGEST_LEN);
  memcpy(again.options_digest, out->options_digest, PLANNER_DIGEST_LEN);
  int rc = r < 0 ? r : plan_remote(c, g, o, k, &again);
  if (rc == 0 && again.plan.arena_bytes <= bound &&
      (!max || again.plan.arena_bytes <= max)) {
    arenad_client_result_cleanup(out);
    *out = again;
    arenad_client__fail(c, 0, "%s; %s, and its plan asked for again is "
                              "usable",
                        what, outcome);
    return 0;
  }
  arenad_client_result_cleanup(&again);
  if (!bad) {
    /* Only over max: the caller, who sees its size, decides. */
    arenad_client__fail(c, 0, "%s; %s (fallback is off: not planned here)",
                        what, outcome);
    return 0;
  }
  arenad_client_result_cleanup(out);
  return arenad_client__fail(c, ARENA_EUNUSABLE, "%s; %s (fallback is off)",
                             what, outcome);
}

/* ---- the plan calls ------------------------------------------------------ */

/* arenad_client_plan_within, and arenad_client_plan with max 0. */
static int plan_call(arenad_client_t *c, const struct planner_graph *g,
                     const struct planner_options *o,
                     const struct arenad_model_key *k, uint64_t max,
                     struct arenad_client_result *out)
{
  struct planner_options def;
  arenad_client_result_cleanup(out);
  c->errmsg[0] = '\0';
  if (!o) {
    planner_options_init(&def);
    o = &def;
  }
  int rc = prepare(c, g, o, k, out);
  if (rc)
    goto fail;
  rc = plan_remote(c, g, o, k, out);
  if (rc == 0) {
    uint64_t bound = naive_bound(g, o);
    if (out->plan.arena_bytes <= bound &&
        (!max || out->plan.arena_bytes <= max))
      return 0;
    return plan_unusable(c, g, o, k, max, bound, out);
  }
  if (!c->fallback)
    goto fail;
  /* Fallback: plan here. Keep the daemon's failure in errmsg. */
  char why[ERRMSG_LEN];
  memcpy(why, c->errmsg, sizeof why);
  rc = plan_here(c, g, o, rc, why, out);
  if (rc == 0)
    return 0;
fail:
  arenad_client_result_cleanup(out);
  return rc;
}

int arenad_client_plan(arenad_client_t *c, const struct planner_graph *g,
                       const struct planner_options *o,
                       const struct arenad_model_key *k,
                       struct arenad_client_result *out)
{
  return plan_call(c, g, o, k, 0, out);
}

int arenad_client_plan_within(arenad_client_t *c,
                              const struct planner_graph *g,
                              const struct planner_options *o,
                              const struct arenad_model_key *k,
                              uint64_t max_arena_bytes,
                              struct arenad_client_result *out)
{
  return plan_call(c, g, o, k, max_arena_bytes, out);
}

/* ---- lookup ------------------------------------------------------------- */

/* A tensor's position in the caller's graph, for sorting by id. */
struct by_id {
  uint32_t id;  /* tensor id, unique in a validated graph */
  size_t index; /* position in the caller's array */
};

static int cmp_by_id(const void *a, const void *b)
{
  const struct by_id *x = a, *y = b;
  return (x->id > y->id) - (x->id < y->id);
}

/* Reorders offsets from ascending id order to g's order, in place. */
static int to_caller_order(arenad_client_t *c, const struct planner_graph *g,
                           struct planner_plan *p)
{
  size_t n = g->n_tensors;
  struct by_id *ix = malloc(n * sizeof *ix);
  uint64_t *off = malloc(n * sizeof *off);
  if (!ix || !off) {
    free(ix);
    free(off);
    return arenad_client__fail(c, ARENA_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    ix[i].id = g->tensors[i].id;
    ix[i].index = i;
  }
  qsort(ix, n, sizeof *ix, cmp_by_id);
  for (size_t k = 0; k < n; k++)
    off[ix[k].index] = p->offsets[k];
  free(ix);
  free(p->offsets);
  p->offsets = off;
  return 0;
}

static int bytes_eq(ProtobufCBinaryData b, const uint8_t *d)
{
  return b.len == PLANNER_DIGEST_LEN && memcmp(b.data, d, b.len) == 0;
}

int arenad_client_lookup(arenad_client_t *c, const struct arenad_model_key *k,
                         const struct planner_graph *g,
                         const struct planner_options *o,
                         struct arenad_client_result *out)
{
  struct planner_options def;
  Arenad__V1__Lookup lm = ARENAD__V1__LOOKUP__INIT;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Response *resp = NULL;
  struct arenad_client__shape sh;
  arenad_client_result_cleanup(out);
  c->errmsg[0] = '\0';
  if (!o) {
    planner_options_init(&def);
    o = &def;
  }
  int rc = prepare(c, g, o, k, out);
  if (rc)
    goto out;
  if ((rc = arenad_client__shape_init(&sh, k)) != 0) {
    rc = arenad_client__fail(c, rc, "out of memory");
    goto out;
  }
  lm.model_hash.data = (uint8_t *)k->model_hash;
  lm.model_hash.len = k->model_hash_len;
  lm.input_shape = sh.ptrs;
  lm.n_input_shape = sh.n;
  lm.graph_digest.data = out->graph_digest;
  lm.graph_digest.len = PLANNER_DIGEST_LEN;
  req.body_case = ARENAD__V1__REQUEST__BODY_LOOKUP;
  req.lookup = &lm;
  rc = arenad_client__call(c, &req, &resp);
  arenad_client__shape_cleanup(&sh);
  if (rc)
    goto out;
  if ((rc = arenad_client__check_status(c, resp, "lookup")) != 0)
    goto out;
  if (resp->body_case != ARENAD__V1__RESPONSE__BODY_LOOKUP || !resp->lookup) {
    rc = arenad_client__fail(c, ARENA_EPROTO,
                             "daemon answered a lookup without plans");
    goto out;
  }
  const Arenad__V1__PlanReply *match = NULL;
  for (size_t i = 0; i < resp->lookup->n_plans && !match; i++) {
    const Arenad__V1__PlanReply *r = resp->lookup->plans[i];
    if (r && bytes_eq(r->graph_digest, out->graph_digest) &&
        bytes_eq(r->options_digest, out->options_digest))
      match = r;
  }
  if (!match) {
    rc = arenad_client__fail(c, ARENA_ENOENT,
                             "lookup: %zu stored plan%s, none for this graph "
                             "and these options",
                             resp->lookup->n_plans,
                             resp->lookup->n_plans == 1 ? "" : "s");
    goto out;
  }
  if ((rc = take_reply(c, match, g->n_tensors, out)) != 0 ||
      (rc = to_caller_order(c, g, &out->plan)) != 0 ||
      (rc = verify(c, g, o, &out->plan)) != 0)
    goto out;
  out->cached = 1;
  out->planning_us = match->planning_us;
out:
  wire_free_response(resp);
  if (rc)
    arenad_client_result_cleanup(out);
  return rc;
}

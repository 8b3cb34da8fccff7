/*
 * fuzz_request.c - libFuzzer target for request decoding and validation:
 * wire_unpack_request, wire_graph_from_plan, wire_shape_from_msg, and the
 * reply side (wire_unpack_response, wire_plan_from_reply) that the client
 * library runs on what a daemon sends. Built and run by `make fuzz`.
 *
 * The input is one frame body. Decoding runs under a small memory budget
 * so that the over-budget path is reached too. A Plan that passes
 * validation must be a graph planner_validate accepts (without aliases
 * when in-place sharing is off), and must survive being encoded again and
 * decoded: same tensors, aliases, options and shape. Small accepted
 * graphs are planned and the plan verified.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "wire.h"
#include "wire_plan.h"

#define FUZZ_MEM_LIMIT (1u << 20)  /* decoded bytes per message */
#define FUZZ_MAX_TENSORS 4096u     /* wire_limits for the target */
#define FUZZ_PLAN_TENSORS 64u      /* plan graphs up to this size */

static int same_tensor(const struct planner_tensor *a,
                       const struct planner_tensor *b)
{
  return a->id == b->id && a->size == b->size && a->first == b->first &&
         a->last == b->last && a->align == b->align && a->pinned == b->pinned &&
         !a->has_alias == !b->has_alias &&
         (!a->has_alias || a->alias == b->alias);
}

/* Encodes g again, decodes and validates it, and compares. */
static void round_trip(const Arenad__V1__Plan *m, const struct wire_graph *g,
                       const struct wire_limits *l)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Plan pm;
  Arenad__V1__PlanOptions po;
  struct planner_graph pg = {g->tensors, g->n_tensors};
  if (wire_plan_msg_init(&pm, &po, &pg, &g->opts, g->model_hash,
                         g->model_hash_len, m->input_shape,
                         m->n_input_shape) != 0)
    abort();
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.body_case = ARENAD__V1__REQUEST__BODY_PLAN;
  req.plan = &pm;
  uint8_t *buf;
  size_t len;
  if (wire_pack(&req.base, 0, &buf, &len) != 0)
    abort();
  Arenad__V1__Request *back = NULL;
  if (wire_unpack_request(buf + WIRE_HEADER_LEN, len - WIRE_HEADER_LEN, 0,
                          &back) != 0 ||
      back->body_case != ARENAD__V1__REQUEST__BODY_PLAN)
    abort();
  struct wire_graph g2;
  char err[ARENA_ERR_LEN];
  if (wire_graph_from_plan(back->plan, l, &g2, err) != 0)
    abort(); /* an accepted graph, re-encoded, is refused */
  if (g2.n_tensors != g->n_tensors ||
      g2.opts.algo != g->opts.algo ||
      g2.opts.alignment != g->opts.alignment ||
      g2.opts.capacity != g->opts.capacity ||
      g2.opts.effort != g->opts.effort ||
      !g2.opts.in_place != !g->opts.in_place ||
      g2.model_hash_len != g->model_hash_len ||
      memcmp(g2.model_hash, g->model_hash, g->model_hash_len) != 0 ||
      g2.shape.n_inputs != g->shape.n_inputs)
    abort();
  size_t total = 0;
  for (size_t i = 0; i < g->shape.n_inputs; i++) {
    if (g2.shape.ranks[i] != g->shape.ranks[i])
      abort();
    total += g->shape.ranks[i];
  }
  if (total && memcmp(g2.shape.dims, g->shape.dims,
                      total * sizeof *g->shape.dims) != 0)
    abort();
  for (size_t i = 0; i < g->n_tensors; i++)
    if (!same_tensor(&g->tensors[i], &g2.tensors[i]))
      abort();
  wire_graph_cleanup(&g2);
  wire_free_request(back);
  free(buf);
  wire_plan_msg_cleanup(&pm);
}

static void plan_small(const struct wire_graph *g)
{
  if (g->n_tensors > FUZZ_PLAN_TENSORS)
    return;
  struct planner_graph pg = {g->tensors, g->n_tensors};
  struct planner_options o = g->opts;
  struct planner_plan p;
  char err[ARENA_ERR_LEN];
  /* The exact search is covered by fuzz_roundtrip; keep runs short. */
  o.algo = PLANNER_ALGO_GREEDY_SIZE;
  planner_plan_init(&p);
  int rc = planner_run(&pg, &o, &p, err);
  if (rc == ARENA_EVERIFY)
    abort();
  if (rc == 0 && (planner_verify(&pg, &o, &p, err) != 0 ||
                  p.arena_bytes < p.lower_bound_bytes))
    abort();
  planner_plan_cleanup(&p);
}

static void check_request(const uint8_t *data, size_t size)
{
  Arenad__V1__Request *req = NULL;
  int rc = wire_unpack_request(data, size, FUZZ_MEM_LIMIT, &req);
  if (rc != 0) {
    if (req || (rc != ARENA_EPROTO && rc != ARENA_ETOOBIG))
      abort();
    return;
  }
  struct wire_limits l;
  wire_limits_init(&l);
  l.max_tensors = FUZZ_MAX_TENSORS;
  char err[ARENA_ERR_LEN];
  struct wire_shape shape;
  if (req->body_case == ARENAD__V1__REQUEST__BODY_PLAN) {
    struct wire_graph g;
    rc = wire_graph_from_plan(req->plan, &l, &g, err);
    if (rc == 0) {
      struct planner_graph pg = {g.tensors, g.n_tensors};
      if (g.n_tensors != req->plan->n_tensor_ids || g.n_tensors == 0 ||
          g.n_tensors > FUZZ_MAX_TENSORS ||
          planner_validate(&pg, &g.opts, err) != 0 ||
          g.model_hash_len == 0 || g.model_hash_len > WIRE_MAX_MODEL_HASH)
        abort(); /* validation let through something it must refuse */
      for (size_t i = 0; !g.opts.in_place && i < g.n_tensors; i++)
        if (g.tensors[i].has_alias)
          abort(); /* sharing off: the graph must come without aliases */
      round_trip(req->plan, &g, &l);
      plan_small(&g);
      wire_graph_cleanup(&g);
    } else if (g.tensors || g.n_tensors || g.shape.ranks) {
      abort(); /* a failed conversion must leave *out empty */
    }
  } else if (req->body_case == ARENAD__V1__REQUEST__BODY_LOOKUP) {
    if (wire_shape_from_msg(req->lookup->input_shape,
                            req->lookup->n_input_shape, &shape, err) == 0)
      wire_shape_cleanup(&shape);
  }
  wire_free_request(req);
}

static void check_response(const uint8_t *data, size_t size)
{
  Arenad__V1__Response *resp = NULL;
  if (wire_unpack_response(data, size, FUZZ_MEM_LIMIT, &resp) != 0)
    return;
  (void)wire_status_name(resp->status);
  struct planner_plan p;
  planner_plan_init(&p);
  if (resp->body_case == ARENAD__V1__RESPONSE__BODY_PLAN) {
    if (wire_plan_from_reply(resp->plan, &p) == 0 &&
        p.n_offsets != resp->plan->n_offsets)
      abort();
  } else if (resp->body_case == ARENAD__V1__RESPONSE__BODY_LOOKUP) {
    for (size_t i = 0; i < resp->lookup->n_plans; i++)
      (void)wire_plan_from_reply(resp->lookup->plans[i], &p);
  }
  planner_plan_cleanup(&p);
  wire_free_response(resp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  check_request(data, size);
  check_response(data, size);
  return 0;
}

/*
 * wire_plan.h - conversions between arenad.v1 messages and the planner's
 * graphs and plans, with the request validation the daemon applies before
 * the planner sees anything.
 *
 * Depends on the planner's types (planner.h) and the generated messages.
 */
#ifndef ARENA_WIRE_PLAN_H
#define ARENA_WIRE_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "arena_error.h"
#include "arenad.pb-c.h"
#include "digest.h"
#include "planner.h"

#define WIRE_MAX_MODEL_HASH 64u           /* bytes */
#define WIRE_MAX_INPUTS 1024u             /* graph inputs */
#define WIRE_MAX_RANK 32u                 /* dims per input */
#define WIRE_DEFAULT_MAX_TENSORS 2097152u /* tensors per graph */

struct wire_limits {
  size_t max_tensors; /* tensors in one Plan, <= PLANNER_MAX_TENSORS */
};

void wire_limits_init(struct wire_limits *l);

/* An input shape in the flat form storage keys use. */
struct wire_shape {
  uint32_t *ranks; /* n_inputs ranks, owned */
  int64_t *dims;   /* sum(ranks) dims, owned */
  size_t n_inputs; /* 0 .. WIRE_MAX_INPUTS */
};

/* A Plan request turned into planner input. */
struct wire_graph {
  struct planner_tensor *tensors; /* n_tensors, owned */
  size_t n_tensors;
  struct planner_options opts;    /* validated options */
  const uint8_t *model_hash;      /* borrowed from the message */
  size_t model_hash_len;          /* 1 .. WIRE_MAX_MODEL_HASH */
  struct wire_shape shape;        /* owned */
};

/* Checks a message's shape list and copies it into *out (owned; free with
 * wire_shape_cleanup). Returns 0, ARENA_EINVAL (more than WIRE_MAX_INPUTS
 * inputs, an input of rank over WIRE_MAX_RANK, a missing or negative
 * dim) or ARENA_ENOMEM, with err (optional) explaining. */
int wire_shape_from_msg(Arenad__V1__Dims *const *dims, size_t n,
                        struct wire_shape *out, char err[ARENA_ERR_LEN]);
void wire_shape_cleanup(struct wire_shape *s);

/* Validates a Plan message against l and the planner's rules, and builds
 * *out. Returns 0, ARENA_EINVAL (missing or inconsistent fields, a
 * tensor_alias value that is neither -1 nor 0 .. UINT32_MAX, or any
 * alias planner_validate() refuses: the tensor itself, an id not in the
 * graph), ARENA_ETOOBIG (over a limit), any planner_validate() code, or
 * ARENA_ENOMEM; err (optional) explains. On failure *out is empty. The
 * message must outlive *out (model_hash is borrowed).
 * With in-place sharing off (PlanOptions.no_in_place) the aliases are
 * checked like any others and then cleared (has_alias = 0), so that *out
 * is the graph without aliases: the one the daemon digests, keys, plans
 * and verifies. */
int wire_graph_from_plan(const Arenad__V1__Plan *m,
                         const struct wire_limits *l, struct wire_graph *out,
                         char err[ARENA_ERR_LEN]);
void wire_graph_cleanup(struct wire_graph *g);

/* Fills a Plan message (caller-allocated, initialised here) from a graph
 * and options (copied into owned columns) and a key (hash and shape are
 * borrowed and must outlive *m). The optional columns (tensor_align,
 * tensor_pinned, tensor_alias) are written only when some tensor uses
 * them, and no_in_place only when o->in_place is 0, so a graph without
 * them encodes as it did before they existed. Free with
 * wire_plan_msg_cleanup. Returns 0 or ARENA_ENOMEM. */
int wire_plan_msg_init(Arenad__V1__Plan *m, Arenad__V1__PlanOptions *mo,
                       const struct planner_graph *g,
                       const struct planner_options *o,
                       const uint8_t *model_hash, size_t model_hash_len,
                       Arenad__V1__Dims **dims, size_t n_inputs);
void wire_plan_msg_cleanup(Arenad__V1__Plan *m);

/* Fills a PlanReply (caller-allocated, initialised here) from plan p.
 * The reply borrows p->offsets, so p must outlive it; no cleanup needed.
 * graph_digest and options_digest (32 bytes each, borrowed) may be NULL. */
void wire_reply_from_plan(Arenad__V1__PlanReply *r,
                          const struct planner_plan *p,
                          const uint8_t *graph_digest,
                          const uint8_t *options_digest);

/* Packs r into an owned buffer (*out, *out_len bytes; free()), for a
 * reply that is sent many times. Returns 0 or ARENA_ENOMEM. */
int wire_plan_reply_pack(const Arenad__V1__PlanReply *r, uint8_t **out,
                         size_t *out_len);

/* Builds the frame of a Response with status OK, request_id and the
 * PlanReply body already packed by wire_plan_reply_pack (reply, len
 * bytes, borrowed): the same bytes protobuf-c gives for that Response,
 * without unpacking or packing the plan again. Returns 0 with an owned
 * frame in *out (*out_len bytes; free()), ARENA_ETOOBIG when the frame
 * would exceed max_frame (0: WIRE_DEFAULT_MAX_FRAME), or ARENA_ENOMEM. */
int wire_plan_reply_frame(uint64_t request_id, const uint8_t *reply,
                          size_t len, size_t max_frame, uint8_t **out,
                          size_t *out_len);

/* Copies a PlanReply into *out (planner_plan_init()ed or cleaned; old
 * contents freed). A lower_bound_unshared_bytes of 0 (absent, as from a
 * daemon that predates in-place sharing) becomes lower_bound_bytes.
 * Returns 0, ARENA_ENOMEM, or ARENA_EPROTO when the reply's enums are
 * out of range or it claims as many shared pairs as it has offsets, or
 * more (a chain of c tensors is c - 1 pairs). */
int wire_plan_from_reply(const Arenad__V1__PlanReply *r,
                         struct planner_plan *out);

#endif

/*
 * wire_plan.c - messages to planner input and back (see wire_plan.h):
 * Plan requests to validated graphs and options, graphs to Plan
 * requests, plans to PlanReply messages and back.
 */
#include "wire_plan.h"
#include "wire.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((format(printf, 3, 4))) static int
fail(char *err, int code, const char *fmt, ...)
{
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ARENA_ERR_LEN, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* "entry" for one, "entries" for any other count. */
static const char *entries(size_t n)
{
  return n == 1 ? "entry" : "entries";
}

void wire_limits_init(struct wire_limits *l)
{
  l->max_tensors = WIRE_DEFAULT_MAX_TENSORS;
}

void wire_shape_cleanup(struct wire_shape *s)
{
  free(s->ranks);
  free(s->dims);
  memset(s, 0, sizeof *s);
}

int wire_shape_from_msg(Arenad__V1__Dims *const *dims, size_t n,
                        struct wire_shape *out, char err[ARENA_ERR_LEN])
{
  memset(out, 0, sizeof *out);
  /* INVALID_ARGUMENT, as documented for Plan and Lookup alike: the shape
   * limits are the protocol's, not a size the daemon could allow. */
  if (n > WIRE_MAX_INPUTS)
    return fail(err, ARENA_EINVAL, "input shape has %zu inputs, over %u",
                n, WIRE_MAX_INPUTS);
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    if (!dims[i])
      return fail(err, ARENA_EINVAL, "input %zu has no dims", i);
    if (dims[i]->n_dims > WIRE_MAX_RANK)
      return fail(err, ARENA_EINVAL, "input %zu has rank %zu, over %u", i,
                  dims[i]->n_dims, WIRE_MAX_RANK);
    for (size_t k = 0; k < dims[i]->n_dims; k++)
      if (dims[i]->dims[k] < 0)
        return fail(err, ARENA_EINVAL,
                    "input %zu dim %zu is negative (%" PRId64 ")", i, k,
                    dims[i]->dims[k]);
    total += dims[i]->n_dims;
  }
  out->ranks = malloc((n ? n : 1) * sizeof *out->ranks);
  out->dims = malloc((total ? total : 1) * sizeof *out->dims);
  if (!out->ranks || !out->dims) {
    wire_shape_cleanup(out);
    return fail(err, ARENA_ENOMEM, "out of memory");
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    out->ranks[i] = (uint32_t)dims[i]->n_dims;
    for (size_t d = 0; d < dims[i]->n_dims; d++)
      out->dims[k++] = dims[i]->dims[d];
  }
  out->n_inputs = n;
  return 0;
}

static int options_from_msg(const Arenad__V1__PlanOptions *mo,
                            struct planner_options *o, char *err)
{
  planner_options_init(o);
  if (!mo)
    return 0;
  /* Compare as int: the generated enum type may be unsigned, and a peer
   * can send any 32-bit value, negative ones included. */
  if ((int)mo->algorithm < 0 || (int)mo->algorithm >= (int)PLANNER_ALGO__COUNT)
    return fail(err, ARENA_EINVAL, "unknown algorithm %d",
                (int)mo->algorithm);
  o->algo = (enum planner_algo)mo->algorithm;
  if (mo->alignment)
    o->alignment = mo->alignment;
  o->effort = mo->effort;
  o->capacity = mo->capacity;
  o->in_place = !mo->no_in_place;
  return 0;
}

static int check_columns(const Arenad__V1__Plan *m,
                         const struct wire_limits *l, char *err)
{
  size_t n = m->n_tensor_ids;
  if (n == 0)
    return fail(err, ARENA_EEMPTY, "plan request has no tensors");
  if (n > l->max_tensors)
    return fail(err, ARENA_ETOOBIG, "plan request has %zu tensors, over %zu",
                n, l->max_tensors);
  if (m->n_tensor_sizes != n || m->n_tensor_first != n ||
      m->n_tensor_last != n)
    return fail(err, ARENA_EINVAL,
                "tensor columns differ in length (ids %zu, sizes %zu, "
                "first %zu, last %zu)",
                n, m->n_tensor_sizes, m->n_tensor_first, m->n_tensor_last);
  if (m->n_tensor_align && m->n_tensor_align != n)
    return fail(err, ARENA_EINVAL, "tensor_align has %zu %s for %zu",
                m->n_tensor_align, entries(m->n_tensor_align), n);
  if (m->n_tensor_pinned && m->n_tensor_pinned != n)
    return fail(err, ARENA_EINVAL, "tensor_pinned has %zu %s for %zu",
                m->n_tensor_pinned, entries(m->n_tensor_pinned), n);
  if (m->n_tensor_alias && m->n_tensor_alias != n)
    return fail(err, ARENA_EINVAL, "tensor_alias has %zu %s for %zu",
                m->n_tensor_alias, entries(m->n_tensor_alias), n);
  if (m->model_hash.len == 0 || m->model_hash.len > WIRE_MAX_MODEL_HASH)
    return fail(err, ARENA_EINVAL, "model hash must be 1 to %u bytes, not %zu",
                WIRE_MAX_MODEL_HASH, m->model_hash.len);
  return 0;
}

/* Sets t's alias from row i of the tensor_alias column (empty: none).
 * -1 means none; any other value must be a tensor id, 0 .. UINT32_MAX;
 * whether that id is in the graph is planner_validate's to check. */
static int alias_from_msg(const Arenad__V1__Plan *m, size_t i,
                          struct planner_tensor *t, char *err)
{
  int64_t a = m->n_tensor_alias ? m->tensor_alias[i] : -1;
  t->alias = 0;
  t->has_alias = 0;
  if (a == -1)
    return 0;
  if (a < 0 || a > (int64_t)UINT32_MAX)
    return fail(err, ARENA_EINVAL,
                "tensor %" PRIu32 " has alias %" PRId64
                ", which is neither -1 nor a tensor id (0 to %" PRIu32 ")",
                t->id, a, UINT32_MAX);
  t->alias = (uint32_t)a;
  t->has_alias = 1;
  return 0;
}

/* In-place sharing off: the graph becomes the one without aliases, so
 * that it digests, keys, plans and verifies exactly like it. */
static void strip_aliases(struct wire_graph *g)
{
  for (size_t i = 0; i < g->n_tensors; i++)
    g->tensors[i].has_alias = 0;
}

int wire_graph_from_plan(const Arenad__V1__Plan *m,
                         const struct wire_limits *l, struct wire_graph *out,
                         char err[ARENA_ERR_LEN])
{
  memset(out, 0, sizeof *out);
  int rc = check_columns(m, l, err);
  if (!rc)
    rc = options_from_msg(m->options, &out->opts, err);
  if (!rc)
    rc = wire_shape_from_msg(m->input_shape, m->n_input_shape, &out->shape,
                             err);
  if (rc)
    return rc;
  size_t n = m->n_tensor_ids;
  out->tensors = malloc(n * sizeof *out->tensors);
  if (!out->tensors) {
    wire_graph_cleanup(out);
    return fail(err, ARENA_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    struct planner_tensor *t = &out->tensors[i];
    t->id = m->tensor_ids[i];
    t->size = m->tensor_sizes[i];
    t->first = m->tensor_first[i];
    t->last = m->tensor_last[i];
    t->align = m->n_tensor_align ? m->tensor_align[i] : 0;
    /* as sent: planner_validate below refuses any value below -1 and
     * names it in its message */
    t->pinned = m->n_tensor_pinned ? m->tensor_pinned[i] : PLANNER_NOT_PINNED;
    int arc = alias_from_msg(m, i, t, rc ? NULL : err); /* first wins */
    rc = rc ? rc : arc;
  }
  out->n_tensors = n;
  out->model_hash = m->model_hash.data;
  out->model_hash_len = m->model_hash.len;
  struct planner_graph g = {out->tensors, n};
  if (!rc)
    rc = planner_validate(&g, &out->opts, err);
  if (rc)
    wire_graph_cleanup(out);
  else if (!out->opts.in_place)
    strip_aliases(out);
  return rc;
}

void wire_graph_cleanup(struct wire_graph *g)
{
  free(g->tensors);
  wire_shape_cleanup(&g->shape);
  memset(g, 0, sizeof *g);
}

int wire_plan_msg_init(Arenad__V1__Plan *m, Arenad__V1__PlanOptions *mo,
                       const struct planner_graph *g,
                       const struct planner_options *o,
                       const uint8_t *model_hash, size_t model_hash_len,
                       Arenad__V1__Dims **dims, size_t n_inputs)
{
  arenad__v1__plan__init(m);
  arenad__v1__plan_options__init(mo);
  mo->algorithm = (Arenad__V1__Algorithm)o->algo;
  mo->alignment = o->alignment;
  mo->effort = o->effort;
  mo->capacity = o->capacity;
  mo->no_in_place = !o->in_place;
  m->options = mo;
  m->model_hash.data = (uint8_t *)model_hash;
  m->model_hash.len = model_hash_len;
  m->input_shape = dims;
  m->n_input_shape = n_inputs;
  size_t n = g->n_tensors;
  int aligned = 0, pinned = 0, aliased = 0;
  for (size_t i = 0; i < n; i++) {
    aligned |= g->tensors[i].align != 0;
    pinned |= g->tensors[i].pinned != PLANNER_NOT_PINNED;
    aliased |= g->tensors[i].has_alias != 0;
  }
  m->tensor_ids = malloc((n ? n : 1) * sizeof *m->tensor_ids);
  m->tensor_sizes = malloc((n ? n : 1) * sizeof *m->tensor_sizes);
  m->tensor_first = malloc((n ? n : 1) * sizeof *m->tensor_first);
  m->tensor_last = malloc((n ? n : 1) * sizeof *m->tensor_last);
  m->tensor_align = aligned ? malloc(n * sizeof *m->tensor_align) : NULL;
  m->tensor_pinned = pinned ? malloc(n * sizeof *m->tensor_pinned) : NULL;
  m->tensor_alias = aliased ? malloc(n * sizeof *m->tensor_alias) : NULL;
  if (!m->tensor_ids || !m->tensor_sizes || !m->tensor_first ||
      !m->tensor_last || (aligned && !m->tensor_align) ||
      (pinned && !m->tensor_pinned) || (aliased && !m->tensor_alias)) {
    wire_plan_msg_cleanup(m);
    return ARENA_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    m->tensor_ids[i] = g->tensors[i].id;
    m->tensor_sizes[i] = g->tensors[i].size;
    m->tensor_first[i] = g->tensors[i].first;
    m->tensor_last[i] = g->tensors[i].last;
    if (aligned)
      m->tensor_align[i] = g->tensors[i].align;
    if (pinned)
      m->tensor_pinned[i] = g->tensors[i].pinned;
    if (aliased)
      m->tensor_alias[i] =
          g->tensors[i].has_alias ? (int64_t)g->tensors[i].alias : -1;
  }
  m->n_tensor_ids = m->n_tensor_sizes = m->n_tensor_first = n;
  m->n_tensor_last = n;
  m->n_tensor_align = aligned ? n : 0;
  m->n_tensor_pinned = pinned ? n : 0;
  m->n_tensor_alias = aliased ? n : 0;
  return 0;
}

void wire_plan_msg_cleanup(Arenad__V1__Plan *m)
{
  free(m->tensor_ids);
  free(m->tensor_sizes);
  free(m->tensor_first);
  free(m->tensor_last);
  free(m->tensor_align);
  free(m->tensor_pinned);
  free(m->tensor_alias);
  m->tensor_ids = NULL;
  m->tensor_sizes = NULL;
  m->tensor_first = m->tensor_last = m->tensor_pinned = NULL;
  m->tensor_alias = NULL;
  m->tensor_align = NULL;
  m->n_tensor_ids = m->n_tensor_sizes = m->n_tensor_first = 0;
  m->n_tensor_last = m->n_tensor_align = m->n_tensor_pinned = 0;
  m->n_tensor_alias = 0;
}

void wire_reply_from_plan(Arenad__V1__PlanReply *r,
                          const struct planner_plan *p,
                          const uint8_t *graph_digest,
                          const uint8_t *options_digest)
{
  arenad__v1__plan_reply__init(r);
  r->offsets = p->offsets;
  r->n_offsets = p->n_offsets;
  r->arena_bytes = p->arena_bytes;
  r->lower_bound_bytes = p->lower_bound_bytes;
  r->naive_bytes = p->naive_bytes;
  r->proven_optimal = p->proven_optimal != 0;
  r->algorithm = (Arenad__V1__Algorithm)p->algo;
  r->fit = (Arenad__V1__Fit)p->fit;
  r->nodes_explored = p->nodes_explored;
  r->lower_bound_unshared_bytes = p->lower_bound_unshared_bytes;
  r->shared_pairs = p->n_shared;
  if (graph_digest) {
    r->graph_digest.data = (uint8_t *)graph_digest;
    r->graph_digest.len = PLANNER_DIGEST_LEN;
  }
  if (options_digest) {
    r->options_digest.data = (uint8_t *)options_digest;
    r->options_digest.len = PLANNER_DIGEST_LEN;
  }
}

int wire_plan_reply_pack(const Arenad__V1__PlanReply *r, uint8_t **out,
                         size_t *out_len)
{
  size_t n = protobuf_c_message_get_packed_size(&r->base);
  *out = malloc(n ? n : 1);
  *out_len = 0;
  if (!*out)
    return ARENA_ENOMEM;
  *out_len = protobuf_c_message_pack(&r->base, *out);
  return 0;
}

/* Appends v as a base-128 varint at p; returns the bytes written. */
static size_t put_varint(uint8_t *p, uint64_t v)
{
  size_t k = 0;
  while (v >= 0x80) {
    p[k++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[k++] = (uint8_t)v;
  return k;
}

/* The tags of Response.request_id (field 1, varint) and Response.plan
 * (field 10, length-delimited). */
enum { TAG_REQUEST_ID = 1 << 3 | 0, TAG_PLAN = 10 << 3 | 2 };

int wire_plan_reply_frame(uint64_t request_id, const uint8_t *reply,
                          size_t len, size_t max_frame, uint8_t **out,
                          size_t *out_len)
{
  uint8_t head[1 + 10 + 1 + 10];
  size_t h = 0;
  *out = NULL;
  *out_len = 0;
  if (request_id) { /* proto3 leaves a zero out */
    head[h++] = TAG_REQUEST_ID;
    h += put_varint(head + h, request_id);
  }
  head[h++] = TAG_PLAN;
  h += put_varint(head + h, len);
  size_t body = h + len;
  if (body > (max_frame ? max_frame : WIRE_DEFAULT_MAX_FRAME) ||
      body > UINT32_MAX)
    return ARENA_ETOOBIG;
  uint8_t *f = malloc(WIRE_HEADER_LEN + body);
  if (!f)
    return ARENA_ENOMEM;
  f[0] = (uint8_t)(body >> 24);
  f[1] = (uint8_t)(body >> 16);
  f[2] = (uint8_t)(body >> 8);
  f[3] = (uint8_t)body;
  memcpy(f + WIRE_HEADER_LEN, head, h);
  if (len)
    memcpy(f + WIRE_HEADER_LEN + h, reply, len);
  *out = f;
  *out_len = WIRE_HEADER_LEN + body;
  return 0;
}

int wire_plan_from_reply(const Arenad__V1__PlanReply *r,
                         struct planner_plan *out)
{
  planner_plan_cleanup(out);
  if ((int)r->algorithm < 0 || (int)r->algorithm >= (int)PLANNER_ALGO__COUNT ||
      (int)r->fit < 0 || (int)r->fit > (int)PLANNER_FIT_UNKNOWN ||
      (r->shared_pairs && r->shared_pairs >= r->n_offsets))
    return ARENA_EPROTO;
  out->offsets = malloc((r->n_offsets ? r->n_offsets : 1) * sizeof(uint64_t));
  if (!out->offsets)
    return ARENA_ENOMEM;
  if (r->n_offsets)
    memcpy(out->offsets, r->offsets, r->n_offsets * sizeof(uint64_t));
  out->n_offsets = r->n_offsets;
  out->arena_bytes = r->arena_bytes;
  out->lower_bound_bytes = r->lower_bound_bytes;
  out->naive_bytes = r->naive_bytes;
  out->proven_optimal = r->proven_optimal;
  out->algo = (enum planner_algo)r->algorithm;
  out->fit = (enum planner_fit)r->fit;
  out->nodes_explored = r->nodes_explored;
  /* 0 (absent: an older daemon, or nothing shared) means the same bound */
  out->lower_bound_unshared_bytes = r->lower_bound_unshared_bytes
                                        ? r->lower_bound_unshared_bytes
                                        : r->lower_bound_bytes;
  out->n_shared = (size_t)r->shared_pairs;
  return 0;
}

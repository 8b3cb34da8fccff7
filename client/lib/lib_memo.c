/*
 * lib_memo.c - a client handle's memory of its last call: a copy of the
 * last graph, and its digest, validation, verified plan and packed
 * request (lib_memo.h).
 *
 * The lowest layer of the library with arenad_client.c: it uses only the
 * planner's digests and calls nothing else in client/. arenad_client.c
 * sets it up and frees it with the handle; lib_request.c asks it.
 *
 * DESIGN
 *  An interpreter asks for the same graph again and again, and on a
 *  cache hit the library's own work was most of the call: SHA-256 over
 *  the graph first, then planner_validate, building and packing the
 *  request, and planner_verify (which validates the graph again before
 *  it sorts and searches for overlaps). Each of these is a function of
 *  the graph, some fields of the options and, for the request, the model
 *  key. So the handle keeps a copy of the last graph it was given, and
 *  the next call compares the caller's tensors with that copy, field by
 *  field (a few instructions per tensor), before it trusts anything it
 *  remembers about it.
 *
 *  The copy, not a pointer to the caller's array, is what makes this
 *  safe: a caller that changes its tensors in place between two calls
 *  no longer equals the copy, and every fact is forgotten with it. Each
 *  fact is kept only with the inputs it was computed from, and reused
 *  only when they are equal again:
 *   - the graph digest: the graph, and whether the digest covers its
 *     aliases (in-place sharing on or off). Equal fields give equal
 *     digest bytes, so a remembered digest is exactly the one digesting
 *     again would give; a graph in another order is digested again (same
 *     bytes, only slower).
 *   - "passed planner_validate": the graph and every option field it
 *     reads or might (all of them but stop, stop_ctx and threads).
 *   - the verified plan: the same, plus the plan's offsets and
 *     arena_bytes, which are all planner_verify reads of a plan. A reply
 *     whose offsets and arena_bytes are byte for byte those of the plan
 *     that passed is the same plan for the same graph, and would pass
 *     again; any other reply is verified. What verification does not
 *     cover (the digests in the reply, its offset count, the capacity it
 *     claims to fit) is checked on every call by lib_request.c.
 *   - the packed request: the same graph and options, plus a copy of the
 *     model key (hash bytes and every input dim). Its request id is 0;
 *     each call appends its own (wire_frame_with_id).
 *  The options digest depends on a few option fields only and is kept
 *  apart, whatever the graph.
 *
 *  A graph of more than ARENAD_CLIENT__MEMO_MAX_TENSORS tensors is never
 *  copied, so nothing is remembered of it: every call for it does all the
 *  work. A failed allocation, likewise, only forgets.
 */
#include "lib_memo.h"

#include <stdlib.h>
#include <string.h>

void arenad_client__memo_init(struct arenad_client__memo *m)
{
  memset(m, 0, sizeof *m);
}

void arenad_client__memo_cleanup(struct arenad_client__memo *m)
{
  free(m->tensors);
  free(m->offsets);
  free(m->packed);
  free(m->key.ranks);
  free(m->key.dims);
  arenad_client__memo_init(m);
}

/* ---- the graph and its options ------------------------------------------ */

/* Whether a and b agree on every field of a tensor (the alias only where
 * a tensor declares one: nothing reads it otherwise). */
static int same_tensor(const struct planner_tensor *a,
                       const struct planner_tensor *b)
{
  return a->id == b->id && a->size == b->size && a->first == b->first &&
         a->last == b->last && a->align == b->align &&
         a->pinned == b->pinned && a->has_alias == b->has_alias &&
         (!a->has_alias || a->alias == b->alias);
}

/* Whether m holds g. */
static int holds_graph(const struct arenad_client__memo *m,
                       const struct planner_graph *g)
{
  if (m->n_tensors == 0 || m->n_tensors != g->n_tensors)
    return 0;
  for (size_t i = 0; i < g->n_tensors; i++)
    if (!same_tensor(&m->tensors[i], &g->tensors[i]))
      return 0;
  return 1;
}

static void opts_of(struct arenad_client__memo_opts *mo,
                    const struct planner_options *o)
{
  memset(mo, 0, sizeof *mo);
  mo->algo = o->algo;
  mo->alignment = o->alignment;
  mo->capacity = o->capacity;
  mo->effort = o->effort;
  mo->in_place = o->in_place;
}

static int same_opts(const struct arenad_client__memo_opts *a,
                     const struct arenad_client__memo_opts *b)
{
  return a->algo == b->algo && a->alignment == b->alignment &&
         a->capacity == b->capacity && a->effort == b->effort &&
         a->in_place == b->in_place;
}

/* Forgets what was learnt under the options (all but the digests). */
static void forget_opts(struct arenad_client__memo *m)
{
  m->validated = 0;
  m->have_plan = 0;
  free(m->packed);
  m->packed = NULL;
  m->packed_len = 0;
}

/* Forgets the graph and everything about it. */
static void forget_graph(struct arenad_client__memo *m)
{
  forget_opts(m);
  m->have_gd = 0;
  m->n_tensors = 0;
}

/* Copies g into m, which holds nothing; leaves it so on failure. */
static void copy_graph(struct arenad_client__memo *m,
                       const struct planner_graph *g)
{
  size_t n = g->n_tensors;
  if (n == 0 || n > ARENAD_CLIENT__MEMO_MAX_TENSORS)
    return;
  if (n > m->cap) {
    struct planner_tensor *t = realloc(m->tensors, n * sizeof *t);
    if (!t)
      return;
    m->tensors = t;
    m->cap = n;
  }
  memcpy(m->tensors, g->tensors, n * sizeof *g->tensors);
  m->n_tensors = n;
}

int arenad_client__memo_begin(struct arenad_client__memo *m,
                              const struct planner_graph *g,
                              const struct planner_options *o)
{
  struct arenad_client__memo_opts mo;
  opts_of(&mo, o);
  if (!g || !g->tensors) {
    forget_graph(m);
  } else if (!holds_graph(m, g)) {
    forget_graph(m);
    copy_graph(m, g);
  }
  if (!same_opts(&m->opts, &mo)) {
    forget_opts(m);
    m->opts = mo;
  }
  return m->n_tensors != 0;
}

int arenad_client__memo_validated(const struct arenad_client__memo *m)
{
  return m->n_tensors != 0 && m->validated;
}

void arenad_client__memo_set_validated(struct arenad_client__memo *m)
{
  m->validated = m->n_tensors != 0;
}

/* ---- digests ------------------------------------------------------------ */

/* The options digest of o, from m when o's digested fields are the last
 * ones. The in-place flag is part of the key although the digest leaves
 * it out today, so that the memory stays right if the encoding ever
 * takes it in. */
static void options_digest(struct arenad_client__memo *m,
                           const struct planner_options *o,
                           uint8_t od[PLANNER_DIGEST_LEN])
{
  int in_place = o->in_place != 0;
  if (!m->have_od || m->od_algo != o->algo ||
      m->od_alignment != o->alignment || m->od_capacity != o->capacity ||
      m->od_in_place != in_place) {
    planner_options_digest(o, m->od);
    m->od_algo = o->algo;
    m->od_alignment = o->alignment;
    m->od_capacity = o->capacity;
    m->od_in_place = in_place;
    m->have_od = 1;
  }
  memcpy(od, m->od, PLANNER_DIGEST_LEN);
}

int arenad_client__memo_digests(struct arenad_client__memo *m,
                                const struct planner_graph *g,
                                const struct planner_options *o,
                                uint8_t gd[PLANNER_DIGEST_LEN],
                                uint8_t od[PLANNER_DIGEST_LEN])
{
  int use_aliases = o->in_place != 0;
  options_digest(m, o, od);
  if (m->n_tensors && m->have_gd && m->gd_aliases == use_aliases) {
    memcpy(gd, m->gd, PLANNER_DIGEST_LEN);
    return 0;
  }
  m->have_gd = 0;
  int rc = planner_graph_digest_planned(g, o, gd);
  if (rc == 0 && m->n_tensors) {
    memcpy(m->gd, gd, PLANNER_DIGEST_LEN);
    m->gd_aliases = use_aliases;
    m->have_gd = 1;
  }
  return rc;
}

/* ---- the verified plan -------------------------------------------------- */

int arenad_client__memo_verified(const struct arenad_client__memo *m,
                                 const struct planner_plan *p)
{
  return m->n_tensors && m->validated && m->have_plan &&
         p->n_offsets == m->n_tensors && p->offsets &&
         p->arena_bytes == m->arena_bytes &&
         memcmp(p->offsets, m->offsets, m->n_tensors * sizeof *p->offsets) ==
             0;
}

void arenad_client__memo_set_verified(struct arenad_client__memo *m,
                                      const struct planner_plan *p)
{
  size_t n = m->n_tensors;
  m->have_plan = 0;
  if (!n || !m->validated || p->n_offsets != n || !p->offsets)
    return;
  if (n > m->offsets_cap) {
    uint64_t *o = realloc(m->offsets, n * sizeof *o);
    if (!o)
      return;
    m->offsets = o;
    m->offsets_cap = n;
  }
  memcpy(m->offsets, p->offsets, n * sizeof *p->offsets);
  m->arena_bytes = p->arena_bytes;
  m->have_plan = 1;
}

/* ---- the packed request ------------------------------------------------- */

/* Whether the key m keeps is k: the same hash bytes and input dims. */
static int same_key(const struct arenad_client__memo_key *mk,
                    const struct arenad_model_key *k)
{
  if (mk->hash_len != k->model_hash_len ||
      memcmp(mk->hash, k->model_hash, mk->hash_len) != 0 ||
      mk->n_inputs != k->n_inputs)
    return 0;
  const int64_t *d = mk->dims;
  for (size_t i = 0; i < k->n_inputs; i++) {
    size_t r = k->inputs[i].n_dims;
    if (mk->ranks[i] != r ||
        (r && memcmp(d, k->inputs[i].dims, r * sizeof *d) != 0))
      return 0;
    d += r;
  }
  return 1;
}

/* Grows *p (of *cap entries of size each) to at least n entries. */
static int reserve(void **p, size_t *cap, size_t n, size_t size)
{
  if (n <= *cap)
    return 0;
  void *q = realloc(*p, n * size);
  if (!q)
    return ARENA_ENOMEM;
  *p = q;
  *cap = n;
  return 0;
}

/* Copies k (checked by arenad_client__check_key) into mk. Returns 0 or
 * ARENA_ENOMEM, with mk holding no key. */
static int copy_key(struct arenad_client__memo_key *mk,
                    const struct arenad_model_key *k)
{
  size_t total = 0;
  mk->n_inputs = 0;
  mk->hash_len = 0;
  if (k->model_hash_len > sizeof mk->hash)
    return ARENA_EINVAL;
  for (size_t i = 0; i < k->n_inputs; i++)
    total += k->inputs[i].n_dims;
  if (reserve((void **)&mk->ranks, &mk->ranks_cap, k->n_inputs,
              sizeof *mk->ranks) ||
      reserve((void **)&mk->dims, &mk->dims_cap, total, sizeof *mk->dims))
    return ARENA_ENOMEM;
  int64_t *d = mk->dims;
  for (size_t i = 0; i < k->n_inputs; i++) {
    size_t r = k->inputs[i].n_dims;
    mk->ranks[i] = r;
    if (r)
      memcpy(d, k->inputs[i].dims, r * sizeof *d);
    d += r;
  }
  memcpy(mk->hash, k->model_hash, k->model_hash_len);
  mk->hash_len = k->model_hash_len;
  mk->n_inputs = k->n_inputs;
  return 0;
}

const uint8_t *arenad_client__memo_packed(const struct arenad_client__memo *m,
                                          const struct arenad_model_key *k,
                                          size_t *len)
{
  if (m->n_tensors && m->validated && m->packed && same_key(&m->key, k)) {
    *len = m->packed_len;
    return m->packed;
  }
  *len = 0;
  return NULL;
}

void arenad_client__memo_set_packed(struct arenad_client__memo *m,
                                    const struct arenad_model_key *k,
                                    uint8_t *frame, size_t len)
{
  free(m->packed);
  m->packed = NULL;
  m->packed_len = 0;
  if (!m->n_tensors || !m->validated || copy_key(&m->key, k) != 0) {
    free(frame);
    return;
  }
  m->packed = frame;
  m->packed_len = len;
}

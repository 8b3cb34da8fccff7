/*
 * codec.c - byte encodings of the plan cache: the canonical input-shape
 * blob, the canonical tensor order, the compact offsets blob and the
 * value checksum, and since schema v3 the graph and options blobs, their
 * own checksum and the decoding of the daemon's entry keys. Pure C with
 * no sqlite, so every encoding can be tested on its own and the formats
 * stay independent of the database.
 *
 * All multi-byte integers are little-endian; the formats are described in
 * docs/storage.md. A change that older readers would misread needs a
 * schema migration; a new format byte needs none, since every reader
 * refuses a byte it does not know (offsets format 2, for plans that share
 * bytes in place, came that way: older code drops such a row as corrupt
 * and plans again).
 */
#include "storage_int.h"

#include <stdlib.h>
#include <string.h>

#define CHECKSUM_TAG "arenad-plan-v1\n"
#define GRAPH_CHECKSUM_TAG "arenad-plan-graph-v1\n"

static void put_le32(uint8_t *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
  uint32_t v = 0;
  for (int i = 0; i < 4; i++)
    v |= (uint32_t)p[i] << (8 * i);
  return v;
}

static uint64_t get_le64(const uint8_t *p)
{
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* ---- shape -------------------------------------------------------------- */

int storage__shape_encode(const struct storage_key *k, uint8_t **buf,
                          size_t *cap, size_t *len)
{
  *len = 0;
  if (!k->model_hash || k->model_hash_len < 1 ||
      k->model_hash_len > STORAGE_MODEL_HASH_MAX ||
      k->n_inputs > STORAGE_MAX_INPUTS || (k->n_inputs && !k->ranks))
    return ARENA_EINVAL;
  size_t n_dims = 0;
  for (size_t i = 0; i < k->n_inputs; i++) {
    if (k->ranks[i] > STORAGE_MAX_RANK)
      return ARENA_EINVAL;
    n_dims += k->ranks[i];
  }
  if (n_dims && !k->dims)
    return ARENA_EINVAL;
  for (size_t i = 0; i < n_dims; i++)
    if (k->dims[i] < 0)
      return ARENA_EINVAL;

  size_t need = 4 + 4 * k->n_inputs + 8 * n_dims;
  if (need > *cap) {
    uint8_t *nb = realloc(*buf, need);
    if (!nb)
      return ARENA_ENOMEM;
    *buf = nb;
    *cap = need;
  }
  uint8_t *p = *buf;
  put_le32(p, (uint32_t)k->n_inputs);
  p += 4;
  const int64_t *d = k->dims;
  for (size_t i = 0; i < k->n_inputs; i++) {
    put_le32(p, k->ranks[i]);
    p += 4;
    for (uint32_t j = 0; j < k->ranks[i]; j++, p += 8)
      put_le64(p, (uint64_t)*d++);
  }
  *len = need;
  return 0;
}

int storage__shape_decode(const uint8_t *blob, size_t len, uint32_t **ranks,
                          int64_t **dims, size_t *n_inputs)
{
  *ranks = NULL;
  *dims = NULL;
  *n_inputs = 0;
  if (len < 4)
    return ARENA_ECORRUPT;
  uint32_t n = get_le32(blob);
  if (n > STORAGE_MAX_INPUTS)
    return ARENA_ECORRUPT;
  /* First pass: check the structure and count the dims. */
  size_t at = 4, n_dims = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (len - at < 4)
      return ARENA_ECORRUPT;
    uint32_t r = get_le32(blob + at);
    if (r > STORAGE_MAX_RANK || (len - at - 4) / 8 < r)
      return ARENA_ECORRUPT;
    at += 4 + 8 * (size_t)r;
    n_dims += r;
  }
  if (at != len)
    return ARENA_ECORRUPT;
  uint32_t *rk = malloc((n ? n : 1) * sizeof *rk);
  int64_t *dm = malloc((n_dims ? n_dims : 1) * sizeof *dm);
  if (!rk || !dm) {
    free(rk);
    free(dm);
    return ARENA_ENOMEM;
  }
  at = 4;
  size_t d = 0;
  for (uint32_t i = 0; i < n; i++) {
    rk[i] = get_le32(blob + at);
    at += 4;
    for (uint32_t j = 0; j < rk[i]; j++, at += 8)
      dm[d++] = (int64_t)get_le64(blob + at);
  }
  *ranks = rk;
  *dims = dm;
  *n_inputs = n;
  return 0;
}

/* ---- canonical order ---------------------------------------------------- */

/* qsort has no context argument, so the sort works on (tensor, index)
 * pairs instead of bare indexes. */
struct perm_item {
  const struct planner_tensor *t; /* borrowed */
  size_t index;                   /* graph index of t */
};

static int cmp3(uint64_t a, uint64_t b)
{
  return (a > b) - (a < b);
}

static int cmp3s(int64_t a, int64_t b)
{
  return (a > b) - (a < b);
}

/* Same total order as planner_graph_digest, so that both agree on which
 * tensor is the k-th even for duplicate ids. */
static int cmp_item(const void *pa, const void *pb)
{
  const struct planner_tensor *a = ((const struct perm_item *)pa)->t;
  const struct planner_tensor *b = ((const struct perm_item *)pb)->t;
  int c = cmp3(a->id, b->id);
  if (!c)
    c = cmp3(a->size, b->size);
  if (!c)
    c = cmp3s(a->first, b->first);
  if (!c)
    c = cmp3s(a->last, b->last);
  if (!c)
    c = cmp3(a->align, b->align);
  if (!c)
    c = cmp3s(a->pinned, b->pinned);
  return c;
}

int storage__canonical_perm(const struct planner_graph *g, size_t **perm)
{
  *perm = NULL;
  size_t n = g->n_tensors;
  int sorted = 1;
  for (size_t i = 1; i < n && sorted; i++)
    sorted = g->tensors[i - 1].id < g->tensors[i].id;
  if (sorted)
    return 0;
  struct perm_item *items = malloc(n * sizeof *items);
  size_t *p = malloc(n * sizeof *p);
  if (!items || !p) {
    free(items);
    free(p);
    return ARENA_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    items[i].t = &g->tensors[i];
    items[i].index = i;
  }
  qsort(items, n, sizeof *items, cmp_item);
  for (size_t k = 0; k < n; k++)
    p[k] = items[k].index;
  free(items);
  *perm = p;
  return 0;
}

/* ---- the arena a plan may claim ------------------------------------------ */

static uint64_t sat_add(uint64_t a, uint64_t b)
{
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* v rounded up to a (a power of two), saturating. */
static uint64_t round_up(uint64_t v, uint64_t a)
{
  return v > UINT64_MAX - (a - 1) ? UINT64_MAX : (v + a - 1) & ~(a - 1);
}

uint64_t storage__arena_cap(const struct planner_graph *g,
                            const struct planner_options *o)
{
  uint64_t a = o->alignment > 1 ? o->alignment : 1, pin_top = 0, sum = 0;
  for (size_t i = 0; i < g->n_tensors; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    if (t->size && t->pinned == PLANNER_NOT_PINNED && t->align > a)
      a = t->align;
  }
  for (size_t i = 0; i < g->n_tensors; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    if (!t->size)
      continue;
    if (t->pinned != PLANNER_NOT_PINNED) {
      uint64_t end = sat_add((uint64_t)t->pinned, t->size);
      pin_top = end > pin_top ? end : pin_top;
    } else {
      sum = sat_add(sum, round_up(t->size, a));
    }
  }
  return sat_add(round_up(pin_top, a), sum);
}

/* ---- offsets ------------------------------------------------------------ */

static size_t put_varint(uint8_t *p, uint64_t v)
{
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

/* Reads one varint at *at, at most 10 bytes, rejecting values that do not
 * fit in 64 bits. Returns 0 or -1. */
static int get_varint(const uint8_t *p, size_t len, size_t *at, uint64_t *v)
{
  uint64_t r = 0;
  for (unsigned shift = 0; shift < 70; shift += 7) {
    if (*at >= len)
      return -1;
    uint8_t b = p[(*at)++];
    if (shift == 63 && (b & 0x7e))
      return -1;
    r |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return 0;
    }
  }
  return -1;
}

int storage__share_of(const struct planner_plan *p, struct storage__share *sh)
{
  sh->n_shared = p->n_shared;
  sh->lb_unshared = p->lower_bound_unshared_bytes;
  return p->n_shared != 0 ||
         p->lower_bound_unshared_bytes != p->lower_bound_bytes;
}

int storage__offsets_encode(const uint64_t *offsets, size_t n,
                            const size_t *perm,
                            const struct storage__share *sh, uint8_t **blob,
                            size_t *len)
{
  *blob = NULL;
  *len = 0;
  /* The common alignment: the lowest set bit over all offsets. */
  uint64_t any = 0;
  for (size_t i = 0; i < n; i++)
    any |= offsets[i];
  unsigned shift = 0;
  while (any && !(any & 1)) {
    any >>= 1;
    shift++;
  }
  uint8_t *b = malloc(2 + 30 + 10 * n);
  if (!b)
    return ARENA_ENOMEM;
  size_t at = 0;
  b[at++] = sh ? STORAGE__OFFSETS_FORMAT_SHARED : STORAGE__OFFSETS_FORMAT;
  b[at++] = (uint8_t)shift;
  if (sh) {
    at += put_varint(b + at, sh->n_shared);
    at += put_varint(b + at, sh->lb_unshared);
  }
  at += put_varint(b + at, (uint64_t)n);
  for (size_t k = 0; k < n; k++)
    at += put_varint(b + at, offsets[perm ? perm[k] : k] >> shift);
  uint8_t *shrunk = realloc(b, at);
  *blob = shrunk ? shrunk : b;
  *len = at;
  return 0;
}

/* The head of an offsets blob, up to the first offset. */
struct head {
  unsigned shift;           /* every offset is stored >> shift */
  int shared;               /* format 2 */
  struct storage__share sh; /* format 2's sharing, else zero */
  uint64_t count;           /* offsets that follow */
  size_t at;                /* where the first offset starts */
};

/* Reads the head of an offsets blob. Returns 0 or -1. */
static int read_head(const uint8_t *blob, size_t len, struct head *h)
{
  memset(h, 0, sizeof *h);
  if (len < 3 || blob[1] > 63 ||
      (blob[0] != STORAGE__OFFSETS_FORMAT &&
       blob[0] != STORAGE__OFFSETS_FORMAT_SHARED))
    return -1;
  h->shift = blob[1];
  h->shared = blob[0] == STORAGE__OFFSETS_FORMAT_SHARED;
  h->at = 2;
  if (h->shared && (get_varint(blob, len, &h->at, &h->sh.n_shared) ||
                    get_varint(blob, len, &h->at, &h->sh.lb_unshared)))
    return -1;
  if (get_varint(blob, len, &h->at, &h->count))
    return -1;
  /* each input goes to one output at most: a chain of c tensors is c - 1
   * pairs, so a plan has fewer pairs than offsets */
  return h->sh.n_shared && h->sh.n_shared >= h->count ? -1 : 0;
}

int storage__offsets_share(const uint8_t *blob, size_t len,
                           uint64_t lower_bound, struct storage__share *sh)
{
  struct head h;
  if (read_head(blob, len, &h))
    return ARENA_ECORRUPT;
  *sh = h.sh;
  if (!h.shared)
    sh->lb_unshared = lower_bound;
  return 0;
}

int storage__offsets_decode(const uint8_t *blob, size_t len, size_t n,
                            const size_t *perm, uint64_t *out)
{
  struct head h;
  if (read_head(blob, len, &h) || h.count != (uint64_t)n)
    return ARENA_ECORRUPT;
  unsigned shift = h.shift;
  size_t at = h.at;
  for (size_t k = 0; k < n; k++) {
    uint64_t v;
    if (get_varint(blob, len, &at, &v) || (v << shift) >> shift != v)
      return ARENA_ECORRUPT;
    out[perm ? perm[k] : k] = v << shift;
  }
  return at == len ? 0 : ARENA_ECORRUPT;
}

/* ---- checksum ----------------------------------------------------------- */

static void hash_u64(struct planner_sha256 *s, uint64_t v)
{
  uint8_t b[8];
  put_le64(b, v);
  planner_sha256_update(s, b, sizeof b);
}

static void hash_u32(struct planner_sha256 *s, uint32_t v)
{
  uint8_t b[4];
  put_le32(b, v);
  planner_sha256_update(s, b, sizeof b);
}

/* A length-prefixed byte string, so that field boundaries are unique. */
static void hash_bytes(struct planner_sha256 *s, const uint8_t *p, size_t n)
{
  hash_u64(s, (uint64_t)n);
  planner_sha256_update(s, p, n);
}

void storage__checksum(const struct storage__row *r,
                       uint8_t out[PLANNER_DIGEST_LEN])
{
  struct planner_sha256 s;
  planner_sha256_init(&s);
  planner_sha256_update(&s, CHECKSUM_TAG, sizeof CHECKSUM_TAG - 1);
  hash_bytes(&s, r->model_hash, r->model_hash_len);
  hash_bytes(&s, r->shape, r->shape_len);
  planner_sha256_update(&s, r->graph_digest, PLANNER_DIGEST_LEN);
  planner_sha256_update(&s, r->options_digest, PLANNER_DIGEST_LEN);
  hash_u64(&s, r->n_tensors);
  hash_bytes(&s, r->offsets, r->offsets_len);
  hash_u64(&s, r->arena_bytes);
  hash_u64(&s, r->lower_bound);
  hash_u64(&s, r->naive_bytes);
  hash_u32(&s, r->proven_optimal);
  hash_u32(&s, r->algo);
  hash_u32(&s, r->fit);
  hash_u32(&s, r->bound);
  hash_u64(&s, r->plan_us);
  hash_u64(&s, (uint64_t)r->created_ms);
  planner_sha256_final(&s, out);
}

uint64_t storage__entry_bytes(const struct storage__row *r)
{
  return STORAGE__ROW_OVERHEAD + r->model_hash_len + r->shape_len +
         2u * PLANNER_DIGEST_LEN + r->offsets_len + PLANNER_DIGEST_LEN;
}

/* ---- graph and options blobs (schema v3) -------------------------------- */

/* Flag bits of one tensor record in a graph blob. */
#define TFLAG_ALIGN 1u  /* an align varint follows */
#define TFLAG_PINNED 2u /* a pinned varint follows */
#define TFLAG_ALIAS 4u  /* has_alias; an alias varint follows */
#define TFLAG_ALL 7u

/* Worst-case bytes of one tensor record: the flags byte, six varints. */
#define TENSOR_REC_MAX (1u + 6u * 10u)

static uint64_t zigzag(int64_t v)
{
  return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
  return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Writes one tensor; prev_id is the id of the tensor before it in
 * canonical order (0 for the first), so ids cost their gaps only. */
static size_t put_tensor(uint8_t *b, const struct planner_tensor *t,
                         uint32_t prev_id)
{
  unsigned flags = (t->align ? TFLAG_ALIGN : 0u) |
                   (t->pinned != PLANNER_NOT_PINNED ? TFLAG_PINNED : 0u) |
                   (t->has_alias ? TFLAG_ALIAS : 0u);
  size_t at = 0;
  b[at++] = (uint8_t)flags;
  at += put_varint(b + at, (uint64_t)(t->id - prev_id));
  at += put_varint(b + at, t->size);
  at += put_varint(b + at, zigzag(t->first));
  /* Wrapping arithmetic stores any pair exactly, even last < first. */
  at += put_varint(b + at, (uint64_t)t->last - (uint64_t)t->first);
  if (flags & TFLAG_ALIGN)
    at += put_varint(b + at, t->align);
  if (flags & TFLAG_PINNED)
    at += put_varint(b + at, zigzag(t->pinned));
  if (flags & TFLAG_ALIAS)
    at += put_varint(b + at, t->alias);
  return at;
}

int storage__graph_encode(const struct planner_graph *g, const size_t *perm,
                          uint8_t **blob, size_t *len)
{
  *blob = NULL;
  *len = 0;
  size_t n = g->n_tensors;
  if (n > PLANNER_MAX_TENSORS)
    return ARENA_EINVAL;
  uint8_t *b = malloc(1 + 10 + n * TENSOR_REC_MAX);
  if (!b)
    return ARENA_ENOMEM;
  size_t at = 0;
  uint32_t prev = 0;
  b[at++] = STORAGE__GRAPH_FORMAT;
  at += put_varint(b + at, (uint64_t)n);
  for (size_t k = 0; k < n; k++) {
    const struct planner_tensor *t = &g->tensors[perm ? perm[k] : k];
    at += put_tensor(b + at, t, prev);
    prev = t->id;
  }
  uint8_t *shrunk = realloc(b, at);
  *blob = shrunk ? shrunk : b;
  *len = at;
  return 0;
}

/* Reads one tensor record at *at into t. Returns 0 or -1. */
static int get_tensor(const uint8_t *b, size_t len, size_t *at,
                      uint32_t prev_id, struct planner_tensor *t)
{
  uint64_t id_gap, first, span, v;
  if (*at >= len || (b[*at] & ~TFLAG_ALL))
    return -1;
  unsigned flags = b[(*at)++];
  if (get_varint(b, len, at, &id_gap) || id_gap > UINT32_MAX - prev_id ||
      get_varint(b, len, at, &t->size) || get_varint(b, len, at, &first) ||
      get_varint(b, len, at, &span))
    return -1;
  t->id = prev_id + (uint32_t)id_gap;
  t->first = unzigzag(first);
  t->last = (int64_t)((uint64_t)t->first + span);
  t->align = 0;
  t->pinned = PLANNER_NOT_PINNED;
  t->alias = 0;
  t->has_alias = 0;
  if ((flags & TFLAG_ALIGN) &&
      (get_varint(b, len, at, &t->align) || t->align == 0))
    return -1;
  if (flags & TFLAG_PINNED) {
    if (get_varint(b, len, at, &v) ||
        (t->pinned = unzigzag(v)) == PLANNER_NOT_PINNED)
      return -1;
  }
  if (flags & TFLAG_ALIAS) {
    if (get_varint(b, len, at, &v) || v > UINT32_MAX)
      return -1;
    t->alias = (uint32_t)v;
    t->has_alias = 1;
  }
  return 0;
}

int storage__graph_decode(const uint8_t *blob, size_t len, size_t n,
                          struct planner_tensor **out)
{
  *out = NULL;
  size_t at = 1;
  uint64_t count;
  if (len < 2 || blob[0] != STORAGE__GRAPH_FORMAT ||
      get_varint(blob, len, &at, &count) || count != (uint64_t)n ||
      n > PLANNER_MAX_TENSORS || (len - at) / 5 < n)
    return ARENA_ECORRUPT; /* every record takes at least 5 bytes */
  struct planner_tensor *t = malloc((n ? n : 1) * sizeof *t);
  if (!t)
    return ARENA_ENOMEM;
  uint32_t prev = 0;
  for (size_t k = 0; k < n; k++) {
    if (get_tensor(blob, len, &at, prev, &t[k])) {
      free(t);
      return ARENA_ECORRUPT;
    }
    prev = t[k].id;
  }
  if (at != len) {
    free(t);
    return ARENA_ECORRUPT;
  }
  *out = t;
  return 0;
}

size_t storage__opts_encode(const struct planner_options *o,
                            uint8_t out[STORAGE__OPTS_MAX])
{
  size_t at = 0;
  out[at++] = STORAGE__OPTS_FORMAT;
  at += put_varint(out + at, (uint64_t)o->algo);
  at += put_varint(out + at, o->alignment);
  at += put_varint(out + at, o->capacity);
  out[at++] = o->in_place ? 1 : 0;
  return at;
}

int storage__opts_decode(const uint8_t *blob, size_t len,
                         struct planner_options *o)
{
  uint64_t algo, alignment, capacity;
  size_t at = 1;
  planner_options_init(o);
  if (len < 5 || blob[0] != STORAGE__OPTS_FORMAT ||
      get_varint(blob, len, &at, &algo) || algo >= PLANNER_ALGO__COUNT ||
      get_varint(blob, len, &at, &alignment) ||
      get_varint(blob, len, &at, &capacity) || len - at != 1 ||
      blob[at] > 1)
    return ARENA_ECORRUPT;
  o->algo = (enum planner_algo)algo;
  o->alignment = alignment;
  o->capacity = capacity;
  o->in_place = blob[at];
  return 0;
}

void storage__graph_checksum(const uint8_t row_sum[PLANNER_DIGEST_LEN],
                             const struct storage__graph_row *x,
                             uint8_t out[PLANNER_DIGEST_LEN])
{
  struct planner_sha256 s;
  planner_sha256_init(&s);
  planner_sha256_update(&s, GRAPH_CHECKSUM_TAG, sizeof GRAPH_CHECKSUM_TAG - 1);
  planner_sha256_update(&s, row_sum, PLANNER_DIGEST_LEN);
  hash_bytes(&s, x->graph, x->graph_len);
  hash_bytes(&s, x->opts, x->opts_len);
  hash_u32(&s, x->effort);
  planner_sha256_final(&s, out);
}

uint64_t storage__graph_bytes(const struct storage__graph_row *x)
{
  if (!x->graph)
    return 0;
  return (uint64_t)x->graph_len + x->opts_len + PLANNER_DIGEST_LEN;
}

/* ---- the daemon's entry key --------------------------------------------- */

int storage__entry_key_decode(const uint8_t *buf, size_t len,
                              struct storage__entry_key *k)
{
  memset(k, 0, sizeof *k);
  size_t at = 0;
  if (!buf || len < 1)
    return ARENA_EINVAL;
  k->hash_len = buf[at++];
  if (k->hash_len < 1 || k->hash_len > STORAGE_MODEL_HASH_MAX ||
      len - at < k->hash_len + 2)
    return ARENA_EINVAL;
  memcpy(k->hash, buf + at, k->hash_len);
  at += k->hash_len;
  k->n_inputs = (size_t)buf[at] | (size_t)buf[at + 1] << 8;
  at += 2;
  if (k->n_inputs > STORAGE_MAX_INPUTS || len - at < k->n_inputs)
    return ARENA_EINVAL;
  size_t n_dims = 0;
  for (size_t i = 0; i < k->n_inputs; i++) {
    if (buf[at + i] > STORAGE_MAX_RANK)
      return ARENA_EINVAL;
    n_dims += buf[at + i];
  }
  if (len - at - k->n_inputs != 8 * n_dims + 2 * PLANNER_DIGEST_LEN)
    return ARENA_EINVAL;
  k->ranks = malloc((k->n_inputs ? k->n_inputs : 1) * sizeof *k->ranks);
  k->dims = malloc((n_dims ? n_dims : 1) * sizeof *k->dims);
  if (!k->ranks || !k->dims) {
    storage__entry_key_cleanup(k);
    return ARENA_ENOMEM;
  }
  for (size_t i = 0; i < k->n_inputs; i++)
    k->ranks[i] = buf[at++];
  for (size_t i = 0; i < n_dims; i++, at += 8)
    k->dims[i] = (int64_t)get_le64(buf + at);
  memcpy(k->graph_digest, buf + at, PLANNER_DIGEST_LEN);
  memcpy(k->options_digest, buf + at + PLANNER_DIGEST_LEN, PLANNER_DIGEST_LEN);
  k->key.model_hash = k->hash;
  k->key.model_hash_len = k->hash_len;
  k->key.ranks = k->ranks;
  k->key.n_inputs = k->n_inputs;
  k->key.dims = k->dims;
  return 0;
}

void storage__entry_key_cleanup(struct storage__entry_key *k)
{
  free(k->ranks);
  free(k->dims);
  k->ranks = NULL;
  k->dims = NULL;
}

/*
 * hotcache.c - bounded LRU of hot plans (see hotcache.h).
 *
 * DESIGN: a chained hash table (power-of-two buckets, doubled when the
 * load passes 1) plus a doubly-linked recency list. Identity bytes start
 * with the model hash length and the model hash, which lets removal by
 * model hash test a prefix.
 */
#include "hotcache.h"

#include <stdlib.h>
#include <string.h>

struct entry {
  struct entry *chain;      /* next in bucket */
  struct entry *prev, *next; /* recency list, head = most recent */
  uint64_t h;
  uint8_t *ident;
  size_t ident_len;
  size_t bytes;             /* accounted size of this entry */
  struct hot_plan plan;
};

struct hotcache {
  struct entry **buckets;
  size_t n_buckets;     /* power of two */
  struct entry *head, *tail;
  uint64_t n, bytes;
  uint64_t max_bytes, max_entries;
};

uint64_t hot_hash(const void *data, size_t len)
{
  const uint8_t *p = data;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (len * 0xff51afd7ed558ccdull);
  while (len >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h ^= w * 0x87c37b91114253d5ull;
    h = (h << 31 | h >> 33) * 0x4cf5ad432745937full;
    p += 8;
    len -= 8;
  }
  uint64_t w = 0;
  memcpy(&w, p, len);
  h ^= w * 0x87c37b91114253d5ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

struct hotcache *hotcache_new(uint64_t max_bytes, uint64_t max_entries)
{
  struct hotcache *hc = calloc(1, sizeof *hc);
  if (!hc)
    return NULL;
  hc->n_buckets = 64;
  hc->buckets = calloc(hc->n_buckets, sizeof *hc->buckets);
  if (!hc->buckets) {
    free(hc);
    return NULL;
  }
  hc->max_bytes = max_bytes;
  hc->max_entries = max_entries;
  return hc;
}

static void unlink_lru(struct hotcache *hc, struct entry *e)
{
  if (e->prev)
    e->prev->next = e->next;
  else
    hc->head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    hc->tail = e->prev;
  e->prev = e->next = NULL;
}

static void push_front(struct hotcache *hc, struct entry *e)
{
  e->prev = NULL;
  e->next = hc->head;
  if (hc->head)
    hc->head->prev = e;
  hc->head = e;
  if (!hc->tail)
    hc->tail = e;
}

static void drop(struct hotcache *hc, struct entry *e)
{
  struct entry **pp = &hc->buckets[e->h & (hc->n_buckets - 1)];
  while (*pp != e)
    pp = &(*pp)->chain;
  *pp = e->chain;
  unlink_lru(hc, e);
  hc->n--;
  hc->bytes -= e->bytes;
  free(e->ident);
  free(e->plan.offsets);
  free(e);
}

static void enforce(struct hotcache *hc)
{
  while (hc->tail && (hc->n > hc->max_entries || hc->bytes > hc->max_bytes))
    drop(hc, hc->tail);
}

void hotcache_set_caps(struct hotcache *hc, uint64_t max_bytes,
                       uint64_t max_entries)
{
  hc->max_bytes = max_bytes;
  hc->max_entries = max_entries;
  enforce(hc);
}

void hotcache_free(struct hotcache *hc)
{
  if (!hc)
    return;
  hotcache_clear(hc);
  free(hc->buckets);
  free(hc);
}

const struct hot_plan *hotcache_get(struct hotcache *hc, const uint8_t *ident,
                                    size_t len, uint64_t h)
{
  for (struct entry *e = hc->buckets[h & (hc->n_buckets - 1)]; e;
       e = e->chain)
    if (e->h == h && e->ident_len == len && memcmp(e->ident, ident, len) == 0) {
      unlink_lru(hc, e);
      push_front(hc, e);
      return &e->plan;
    }
  return NULL;
}

static void grow(struct hotcache *hc)
{
  size_t nb = hc->n_buckets * 2;
  struct entry **b = calloc(nb, sizeof *b);
  if (!b)
    return; /* keep the longer chains; still correct */
  for (size_t i = 0; i < hc->n_buckets; i++)
    for (struct entry *e = hc->buckets[i], *next; e; e = next) {
      next = e->chain;
      e->chain = b[e->h & (nb - 1)];
      b[e->h & (nb - 1)] = e;
    }
  free(hc->buckets);
  hc->buckets = b;
  hc->n_buckets = nb;
}

int hotcache_put(struct hotcache *hc, const uint8_t *ident, size_t len,
                 uint64_t h, const struct hot_plan *plan)
{
  size_t bytes = sizeof(struct entry) + len + plan->n_offsets * 8;
  if (bytes > hc->max_bytes || hc->max_entries == 0)
    return -1;
  if (hotcache_get(hc, ident, len, h))
    drop(hc, hc->head);
  struct entry *e = calloc(1, sizeof *e);
  if (!e)
    return -1;
  e->ident = malloc(len ? len : 1);
  e->plan = *plan;
  e->plan.offsets = malloc((plan->n_offsets ? plan->n_offsets : 1) * 8);
  if (!e->ident || !e->plan.offsets) {
    free(e->ident);
    free(e->plan.offsets);
    free(e);
    return -1;
  }
  memcpy(e->ident, ident, len);
  if (plan->n_offsets)
    memcpy(e->plan.offsets, plan->offsets, plan->n_offsets * 8);
  e->ident_len = len;
  e->h = h;
  e->bytes = bytes;
  struct entry **b = &hc->buckets[h & (hc->n_buckets - 1)];
  e->chain = *b;
  *b = e;
  push_front(hc, e);
  hc->n++;
  hc->bytes += bytes;
  enforce(hc);
  if (hc->n > hc->n_buckets)
    grow(hc);
  return 0;
}

size_t hotcache_clear(struct hotcache *hc)
{
  size_t k = 0;
  while (hc->head) {
    drop(hc, hc->head);
    k++;
  }
  return k;
}

/* Identity bytes begin with one length byte and the model hash. */
static int same_model(const struct entry *e, const uint8_t *mh, size_t len)
{
  return e->ident_len > len && e->ident[0] == len &&
         memcmp(e->ident + 1, mh, len) == 0;
}

size_t hotcache_remove_model(struct hotcache *hc, const uint8_t *model_hash,
                             size_t len)
{
  size_t k = 0;
  for (struct entry *e = hc->head, *next; e; e = next) {
    next = e->next;
    if (same_model(e, model_hash, len)) {
      drop(hc, e);
      k++;
    }
  }
  return k;
}

size_t hotcache_remove_digests(struct hotcache *hc, const uint8_t *model_hash,
                               size_t len, const uint8_t *graph_digest,
                               const uint8_t *options_digest)
{
  size_t k = 0;
  for (struct entry *e = hc->head, *next; e; e = next) {
    next = e->next;
    if (same_model(e, model_hash, len) &&
        memcmp(e->plan.graph_digest, graph_digest, PLANNER_DIGEST_LEN) == 0 &&
        memcmp(e->plan.options_digest, options_digest, PLANNER_DIGEST_LEN) ==
            0) {
      drop(hc, e);
      k++;
    }
  }
  return k;
}

void hotcache_usage(const struct hotcache *hc, uint64_t *entries,
                    uint64_t *bytes)
{
  *entries = hc->n;
  *bytes = hc->bytes;
}

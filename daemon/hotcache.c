/*
 * hotcache.c - bounded LRU of hot plans (see hotcache.h).
 *
 * DESIGN: a chained hash table (power-of-two buckets, doubled when the
 * load passes 1) plus a doubly-linked recency list. Identity bytes start
 * with the model hash length and the model hash, which lets removal by
 * model hash test a prefix.
 *
 * Uses: entries with uncollected uses are also on the "used" list,
 * ordered by their latest use (head = most recent), so that a take is
 * O(entries used) and lists them least recent first. An entry pushed out
 * with uses left is unhooked from the table and the recency list, loses
 * its ident and offsets, and waits on the "gone" list (oldest first)
 * until the next take: leaving the cache never needs an allocation.
 */
#include "hotcache.h"

#include <stdlib.h>
#include <string.h>

struct entry {
  struct entry *chain;      /* next in bucket */
  struct entry *prev, *next; /* recency list, head = most recent */
  struct entry *uprev, *unext; /* used list while uses > 0; unext links
                                  the gone list once pushed out */
  uint64_t h;
  uint8_t *ident;
  size_t ident_len;
  size_t bytes;             /* accounted size of this entry */
  uint64_t uses;            /* hits not yet taken */
  struct hot_plan plan;     /* offsets and use_key owned */
};

struct hotcache {
  struct entry **buckets;
  size_t n_buckets;     /* power of two */
  struct entry *head, *tail;
  uint64_t n, bytes;
  uint64_t max_bytes, max_entries;
  struct entry *used_head, *used_tail; /* entries with uses > 0 */
  size_t n_used;                       /* entries on the used list */
  struct entry *gone_head, *gone_tail; /* pushed out with uses left */
  size_t n_gone;                       /* entries on the gone list */
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

static void unlink_used(struct hotcache *hc, struct entry *e)
{
  if (e->uprev)
    e->uprev->unext = e->unext;
  else
    hc->used_head = e->unext;
  if (e->unext)
    e->unext->uprev = e->uprev;
  else
    hc->used_tail = e->uprev;
  e->uprev = e->unext = NULL;
  hc->n_used--;
}

static void push_used(struct hotcache *hc, struct entry *e)
{
  e->uprev = NULL;
  e->unext = hc->used_head;
  if (hc->used_head)
    hc->used_head->uprev = e;
  hc->used_head = e;
  if (!hc->used_tail)
    hc->used_tail = e;
  hc->n_used++;
}

/* Counts one use of a cached entry. */
static void note_use(struct hotcache *hc, struct entry *e)
{
  if (!e->plan.use_key)
    return;
  if (e->uses)
    unlink_used(hc, e);
  push_used(hc, e);
  e->uses++;
}

static void free_entry(struct entry *e)
{
  free(e->ident);
  free(e->plan.offsets);
  free((uint8_t *)e->plan.reply);
  free((uint8_t *)e->plan.use_key);
  free(e);
}

/* Takes e out of the cache. With keep_uses, an entry with uses left goes
 * to the gone list instead of being freed. */
static void drop(struct hotcache *hc, struct entry *e, int keep_uses)
{
  struct entry **pp = &hc->buckets[e->h & (hc->n_buckets - 1)];
  while (*pp != e)
    pp = &(*pp)->chain;
  *pp = e->chain;
  unlink_lru(hc, e);
  hc->n--;
  hc->bytes -= e->bytes;
  if (e->uses)
    unlink_used(hc, e);
  if (!keep_uses || !e->uses) {
    free_entry(e);
    return;
  }
  free(e->ident);
  free(e->plan.offsets);
  free((uint8_t *)e->plan.reply);
  e->ident = NULL;
  e->plan.offsets = NULL;
  e->plan.reply = NULL;
  e->unext = NULL;
  if (hc->gone_tail)
    hc->gone_tail->unext = e;
  else
    hc->gone_head = e;
  hc->gone_tail = e;
  hc->n_gone++;
}

static void enforce(struct hotcache *hc)
{
  while (hc->tail && (hc->n > hc->max_entries || hc->bytes > hc->max_bytes))
    drop(hc, hc->tail, 1);
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

/* Finds an entry and makes it the most recent, or returns NULL. */
static struct entry *find(struct hotcache *hc, const uint8_t *ident,
                          size_t len, uint64_t h)
{
  for (struct entry *e = hc->buckets[h & (hc->n_buckets - 1)]; e;
       e = e->chain)
    if (e->h == h && e->ident_len == len && memcmp(e->ident, ident, len) == 0) {
      unlink_lru(hc, e);
      push_front(hc, e);
      return e;
    }
  return NULL;
}

const struct hot_plan *hotcache_get(struct hotcache *hc, const uint8_t *ident,
                                    size_t len, uint64_t h)
{
  struct entry *e = find(hc, ident, len, h);
  if (!e)
    return NULL;
  note_use(hc, e);
  return &e->plan;
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
  size_t bytes = sizeof(struct entry) + len + plan->n_offsets * 8 +
                 plan->use_key_len + (plan->reply ? plan->reply_len : 0);
  if (bytes > hc->max_bytes / HOT_ENTRY_SHARE || hc->max_entries == 0)
    return -1;
  struct entry *old = find(hc, ident, len, h);
  if (old)
    drop(hc, old, 1);
  struct entry *e = calloc(1, sizeof *e);
  if (!e)
    return -1;
  e->ident = malloc(len ? len : 1);
  e->plan = *plan;
  e->plan.offsets = malloc((plan->n_offsets ? plan->n_offsets : 1) * 8);
  e->plan.use_key = NULL;
  e->plan.reply = NULL;
  uint8_t *key = plan->use_key ? malloc(plan->use_key_len + 1) : NULL;
  uint8_t *reply = plan->reply ? malloc(plan->reply_len + 1) : NULL;
  if (!e->ident || !e->plan.offsets || (plan->use_key && !key) ||
      (plan->reply && !reply)) {
    free(key);
    free(reply);
    free_entry(e);
    return -1;
  }
  if (reply)
    memcpy(reply, plan->reply, plan->reply_len);
  e->plan.reply = reply;
  memcpy(e->ident, ident, len);
  if (plan->n_offsets)
    memcpy(e->plan.offsets, plan->offsets, plan->n_offsets * 8);
  if (key)
    memcpy(key, plan->use_key, plan->use_key_len);
  e->plan.use_key = key;
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
    drop(hc, hc->head, 0);
    k++;
  }
  while (hc->gone_head) {
    struct entry *e = hc->gone_head;
    hc->gone_head = e->unext;
    free_entry(e);
  }
  hc->gone_tail = NULL;
  hc->n_gone = 0;
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
      drop(hc, e, 0);
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
      drop(hc, e, 0);
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

int hotcache_has_uses(const struct hotcache *hc)
{
  return hc->used_head || hc->gone_head;
}

void hot_uses_free(struct hot_use *u, size_t n)
{
  for (size_t i = 0; u && i < n; i++)
    free(u[i].key);
  free(u);
}

int hotcache_take_uses(struct hotcache *hc, struct hot_use **out, size_t *n)
{
  size_t total = hc->n_gone + hc->n_used, k = 0;
  *out = NULL;
  *n = 0;
  if (total == 0)
    return 0;
  struct hot_use *u = calloc(total, sizeof *u);
  if (!u)
    return -1;
  /* Copy the keys of cached entries first: the only step that can fail,
   * and it changes nothing. */
  for (struct entry *e = hc->used_tail; e; e = e->uprev, k++) {
    struct hot_use *d = &u[hc->n_gone + k];
    d->key = malloc(e->plan.use_key_len + 1);
    if (!d->key) {
      hot_uses_free(u, total);
      return -1;
    }
    memcpy(d->key, e->plan.use_key, e->plan.use_key_len);
    d->key_len = e->plan.use_key_len;
    d->count = e->uses;
  }
  k = 0;
  while (hc->gone_head) {
    struct entry *e = hc->gone_head;
    hc->gone_head = e->unext;
    u[k].key = (uint8_t *)e->plan.use_key;
    u[k].key_len = e->plan.use_key_len;
    u[k].count = e->uses;
    e->plan.use_key = NULL;
    free_entry(e);
    k++;
  }
  hc->gone_tail = NULL;
  hc->n_gone = 0;
  while (hc->used_head) {
    struct entry *e = hc->used_head;
    e->uses = 0;
    unlink_used(hc, e);
  }
  *out = u;
  *n = total;
  return 0;
}

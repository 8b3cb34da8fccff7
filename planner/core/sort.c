/*
 * sort.c - the planner's stable radix sort of (key, value) pairs
 * (internal to planner/, see planner_sort.h).
 *
 * C11 qsort() is not stable, and a comparison callback per step plus a
 * log n factor cost a million-tensor graph far more than a few linear
 * passes over contiguous arrays. Every order of the planner (and with it
 * every plan) is a stable sort by integer keys, so this is the only sort
 * it needs.
 */
#include "planner_sort.h"

#include <stdlib.h>
#include <string.h>

#define RADIX_MAX_BITS 11 /* digit width at most: 2048 buckets */
#define RADIX_MAX_PASSES 7 /* ceil(64 / RADIX_MAX_BITS) */
#define RADIX_SMALL 32     /* insertion sort at or below this many pairs */
#define RADIX_LATE 16      /* at most n / RADIX_LATE pairs out of order:
                              sorted apart and merged */

static void insertion_pairs(uint64_t *key, uint32_t *val, size_t n)
{
  for (size_t i = 1; i < n; i++) {
    uint64_t k = key[i];
    uint32_t v = val ? val[i] : 0;
    size_t j = i;
    for (; j > 0 && key[j - 1] > k; j--) {
      key[j] = key[j - 1];
      if (val)
        val[j] = val[j - 1];
    }
    key[j] = k;
    if (val)
      val[j] = v;
  }
}

static int radix_reserve(struct planner__radix *s, size_t n)
{
  if (n <= s->cap)
    return 0;
  if (s->borrowed)
    return -1;
  uint64_t *k = realloc(s->key, n * sizeof *k);
  if (!k)
    return -1;
  s->key = k;
  uint32_t *v = realloc(s->val, n * sizeof *v);
  if (!v)
    return -1;
  s->val = v;
  s->cap = n;
  return 0;
}

/* The digits of one sort: passes over bits [lo, lo + passes * width). */
struct digits {
  unsigned lo;     /* lowest bit that differs between keys */
  unsigned width;  /* bits per digit */
  unsigned passes; /* digits */
};

/* Splits the differing bits into as few digits of at most
 * RADIX_MAX_BITS as possible, of equal width (narrower digits scatter
 * into fewer buckets, which is faster). */
static struct digits digits_of(uint64_t differ)
{
  struct digits d;
  d.lo = (unsigned)__builtin_ctzll(differ);
  unsigned span = 64 - (unsigned)__builtin_clzll(differ) - d.lo;
  d.passes = (span + RADIX_MAX_BITS - 1) / RADIX_MAX_BITS;
  d.width = (span + d.passes - 1) / d.passes;
  return d;
}

/* One stable scatter by the digit at shift, from (sk, sv) into (dk, dv)
 * (sv and dv NULL for keys alone); at[] holds each bucket's start. */
static void radix_pass(const uint64_t *restrict sk,
                       const uint32_t *restrict sv, uint64_t *restrict dk,
                       uint32_t *restrict dv, size_t n, unsigned shift,
                       uint64_t mask, uint32_t *restrict at)
{
  if (sv) {
    for (size_t i = 0; i < n; i++) {
      uint32_t k = at[(sk[i] >> shift) & mask]++;
      dk[k] = sk[i];
      dv[k] = sv[i];
    }
  } else {
    for (size_t i = 0; i < n; i++)
      dk[at[(sk[i] >> shift) & mask]++] = sk[i];
  }
}

/* Every digit's bucket counts in one read of the keys, then turned into
 * bucket starts. */
static void histograms(const uint64_t *key, size_t n, struct digits d,
                       uint32_t (*count)[1u << RADIX_MAX_BITS])
{
  uint64_t mask = ((uint64_t)1 << d.width) - 1;
  for (unsigned p = 0; p < d.passes; p++) /* only the buckets in use */
    memset(count[p], 0, (mask + 1) * sizeof count[p][0]);
  for (size_t i = 0; i < n; i++) {
    uint64_t k = key[i] >> d.lo;
    for (unsigned p = 0; p < d.passes; p++, k >>= d.width)
      count[p][k & mask]++;
  }
  for (unsigned p = 0; p < d.passes; p++) {
    uint32_t sum = 0;
    for (size_t b = 0; b <= mask; b++) {
      uint32_t c = count[p][b];
      count[p][b] = sum;
      sum += c;
    }
  }
}

/* A nearly sorted input: the pairs below the running maximum of the
 * keys before them ("late" ones, n_late of n) move to their own arrays
 * and are sorted there, the rest (ascending) close up in place, and the
 * two merge from the back. A pair that ties with a late one comes before
 * it (else it would be late too), so taking the late one on ties keeps
 * the sort stable. Returns 0 or -1 (nothing changed). */
static int sort_late(uint64_t *key, uint32_t *val, size_t n, size_t n_late,
                     struct planner__radix *s)
{
  uint64_t *lk = malloc(n_late * sizeof *lk);
  uint32_t *lv = val ? malloc(n_late * sizeof *lv) : NULL;
  if (!lk || (val && !lv)) {
    free(lk);
    free(lv);
    return -1;
  }
  size_t a = 0, b = 0;
  uint64_t top = key[0];
  for (size_t i = 0; i < n; i++) {
    if (key[i] < top) {
      lk[b] = key[i];
      if (val)
        lv[b] = val[i];
      b++;
      continue;
    }
    top = key[i];
    key[a] = key[i];
    if (val)
      val[a] = val[i];
    a++;
  }
  int rc = planner__radix_sort(lk, lv, n_late, s);
  for (size_t w = n; !rc && b > 0;) { /* a + b == w */
    int late = a == 0 || lk[b - 1] >= key[a - 1];
    size_t from = late ? --b : --a;
    key[--w] = late ? lk[from] : key[from];
    if (val)
      val[w] = late ? lv[from] : val[from];
  }
  free(lk);
  free(lv);
  return rc;
}

int planner__radix_sort(uint64_t *key, uint32_t *val, size_t n,
                        struct planner__radix *s)
{
  if (n <= RADIX_SMALL) {
    insertion_pairs(key, val, n);
    return 0;
  }
  uint64_t any = 0, all = UINT64_MAX, top = 0;
  size_t late = 0;
  for (size_t i = 0; i < n; i++) {
    any |= key[i];
    all &= key[i];
    late += key[i] < top;
    top = key[i] > top ? key[i] : top;
  }
  uint64_t differ = any ^ all; /* bits that are not the same in every key */
  if (!differ || !late)
    return 0;
  if (late <= n / RADIX_LATE)
    return sort_late(key, val, n, late, s);
  if (n > UINT32_MAX || radix_reserve(s, n))
    return -1;
  static const size_t buckets = (size_t)1 << RADIX_MAX_BITS;
  uint32_t(*count)[1u << RADIX_MAX_BITS] =
      malloc(RADIX_MAX_PASSES * buckets * sizeof(uint32_t));
  if (!count)
    return -1;
  struct digits d = digits_of(differ);
  histograms(key, n, d, count);
  uint64_t *sk = key, *dk = s->key;
  uint32_t *sv = val, *dv = val ? s->val : NULL;
  for (unsigned p = 0; p < d.passes; p++) {
    radix_pass(sk, sv, dk, dv, n, d.lo + p * d.width,
               ((uint64_t)1 << d.width) - 1, count[p]);
    uint64_t *tk = sk;
    sk = dk;
    dk = tk;
    uint32_t *tv = sv;
    sv = dv;
    dv = tv;
  }
  if (sk != key) {
    memcpy(key, sk, n * sizeof *key);
    if (val)
      memcpy(val, sv, n * sizeof *val);
  }
  free(count);
  return 0;
}

struct planner__radix planner__radix_borrow(void *mem, size_t bytes)
{
  size_t cap = bytes / (sizeof(uint64_t) + sizeof(uint32_t));
  uint64_t *key = mem;
  return (struct planner__radix){key, (uint32_t *)(void *)(key + cap), cap,
                                 1};
}

void planner__radix_cleanup(struct planner__radix *s)
{
  if (!s->borrowed) {
    free(s->key);
    free(s->val);
  }
  s->key = NULL;
  s->val = NULL;
  s->cap = 0;
  s->borrowed = 0;
}

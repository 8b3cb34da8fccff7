/*
 * tindex.c - segment-tree time index of placed tensors (see tindex.h).
 */
#include "tindex.h"

#include <stdlib.h>
#include <string.h>

/* LSD radix sort of non-negative keys (validated lifetimes), 11 bits a
 * pass, skipping passes above the largest key. Returns -1 on OOM. */
static int radix_i64(int64_t *v, size_t n)
{
  int64_t *tmp = malloc((n ? n : 1) * sizeof *tmp);
  size_t *count = malloc((2048 + 1) * sizeof *count);
  if (!tmp || !count) {
    free(tmp);
    free(count);
    return -1;
  }
  uint64_t all = 0;
  for (size_t i = 0; i < n; i++)
    all |= (uint64_t)v[i];
  int64_t *src = v, *dst = tmp;
  for (unsigned shift = 0; shift < 64 && (all >> shift); shift += 11) {
    memset(count, 0, (2048 + 1) * sizeof *count);
    for (size_t i = 0; i < n; i++)
      count[(((uint64_t)src[i] >> shift) & 2047) + 1]++;
    for (size_t d = 0; d < 2048; d++)
      count[d + 1] += count[d];
    for (size_t i = 0; i < n; i++)
      dst[count[((uint64_t)src[i] >> shift) & 2047]++] = src[i];
    int64_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != v)
    memcpy(v, src, n * sizeof *v);
  free(tmp);
  free(count);
  return 0;
}

static uint32_t leaf_of(const struct tindex *x, int64_t v)
{
  size_t lo = 0, hi = x->n_coord;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (x->coord[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (uint32_t)lo;
}

int tindex_init(struct tindex *x, const struct planner_tensor *t, size_t n)
{
  memset(x, 0, sizeof *x);
  x->coord = malloc((2 * n + 1) * sizeof *x->coord);
  x->fi = malloc((n + 1) * sizeof *x->fi);
  x->li = malloc((n + 1) * sizeof *x->li);
  x->start_next = malloc((n + 1) * sizeof *x->start_next);
  x->soff = malloc((n + 1) * sizeof *x->soff);
  x->send = malloc((n + 1) * sizeof *x->send);
  if (!x->coord || !x->fi || !x->li || !x->start_next || !x->soff ||
      !x->send)
    return -1;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    x->coord[k++] = t[i].first;
    x->coord[k++] = t[i].last;
  }
  if (radix_i64(x->coord, k))
    return -1;
  size_t u = 0;
  for (size_t i = 0; i < k; i++)
    if (u == 0 || x->coord[u - 1] != x->coord[i])
      x->coord[u++] = x->coord[i];
  x->n_coord = u;
  x->size = 1;
  while (x->size < u)
    x->size *= 2;
  for (size_t i = 0; i < n; i++) {
    x->fi[i] = leaf_of(x, t[i].first);
    x->li[i] = leaf_of(x, t[i].last);
  }
  x->node_head = malloc(2 * x->size * sizeof *x->node_head);
  x->start_head = malloc(x->size * sizeof *x->start_head);
  x->count = calloc(2 * x->size, sizeof *x->count);
  x->cap_ent = 4 * n + 16;
  x->ent_t = malloc(x->cap_ent * sizeof *x->ent_t);
  x->ent_next = malloc(x->cap_ent * sizeof *x->ent_next);
  if (!x->node_head || !x->start_head || !x->count || !x->ent_t ||
      !x->ent_next)
    return -1;
  memset(x->node_head, 0xff, 2 * x->size * sizeof *x->node_head);
  memset(x->start_head, 0xff, x->size * sizeof *x->start_head);
  return 0;
}

void tindex_cleanup(struct tindex *x)
{
  free(x->coord);
  free(x->fi);
  free(x->li);
  free(x->node_head);
  free(x->ent_t);
  free(x->ent_next);
  free(x->start_head);
  free(x->start_next);
  free(x->count);
  free(x->soff);
  free(x->send);
  memset(x, 0, sizeof *x);
}

static int add_entry(struct tindex *x, size_t node, uint32_t i)
{
  if (x->n_ent == x->cap_ent) {
    size_t nc = x->cap_ent * 2;
    uint32_t *nt = realloc(x->ent_t, nc * sizeof *nt);
    if (!nt)
      return -1;
    x->ent_t = nt;
    int32_t *nn = realloc(x->ent_next, nc * sizeof *nn);
    if (!nn)
      return -1;
    x->ent_next = nn;
    x->cap_ent = nc;
  }
  x->ent_t[x->n_ent] = i;
  x->ent_next[x->n_ent] = x->node_head[node];
  x->node_head[node] = (int32_t)x->n_ent;
  x->n_ent++;
  return 0;
}

int tindex_insert(struct tindex *x, uint32_t i, uint64_t off, uint64_t end)
{
  x->soff[i] = off;
  x->send[i] = end;
  /* cover [fi, li] with canonical nodes, bottom-up */
  size_t lo = x->fi[i] + x->size, hi = x->li[i] + x->size + 1;
  while (lo < hi) {
    if (lo & 1)
      if (add_entry(x, lo++, i))
        return -1;
    if (hi & 1)
      if (add_entry(x, --hi, i))
        return -1;
    lo >>= 1;
    hi >>= 1;
  }
  size_t leaf = x->fi[i];
  x->start_next[i] = x->start_head[leaf];
  x->start_head[leaf] = (int32_t)i;
  for (size_t node = leaf + x->size; node; node >>= 1)
    x->count[node]++;
  return 0;
}

/* Appends the spans of tensors starting at leaves in [lo, hi] below node
 * (covering leaves [nlo, nhi]) to out[*k]. */
static void starts_in(const struct tindex *x, size_t node, size_t nlo,
                      size_t nhi, size_t lo, size_t hi,
                      struct tindex_span *out, size_t *k)
{
  if (x->count[node] == 0 || nhi < lo || nlo > hi)
    return;
  if (node >= x->size) {
    for (int32_t j = x->start_head[node - x->size]; j >= 0;
         j = x->start_next[j]) {
      out[*k].off = x->soff[j];
      out[*k].end = x->send[j];
      (*k)++;
    }
    return;
  }
  size_t mid = nlo + (nhi - nlo) / 2;
  starts_in(x, 2 * node, nlo, mid, lo, hi, out, k);
  starts_in(x, 2 * node + 1, mid + 1, nhi, lo, hi, out, k);
}

size_t tindex_collect(const struct tindex *x, uint32_t i,
                      struct tindex_span *out)
{
  size_t k = 0;
  for (size_t node = x->fi[i] + x->size; node; node >>= 1)
    for (int32_t e = x->node_head[node]; e >= 0; e = x->ent_next[e]) {
      uint32_t j = x->ent_t[e];
      out[k].off = x->soff[j];
      out[k].end = x->send[j];
      k++;
    }
  size_t lo = x->fi[i] + (size_t)1, hi = x->li[i];
  if (hi >= lo && hi - lo < 64) {
    /* short lifetimes, the common case: read the few leaves directly */
    for (size_t leaf = lo; leaf <= hi; leaf++)
      for (int32_t j = x->start_head[leaf]; j >= 0; j = x->start_next[j]) {
        out[k].off = x->soff[j];
        out[k].end = x->send[j];
        k++;
      }
  } else if (hi >= lo) {
    starts_in(x, 1, 0, x->size - 1, lo, hi, out, &k);
  }
  return k;
}

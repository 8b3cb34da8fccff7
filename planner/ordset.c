/*
 * ordset.c - treap with subtree-max augmentation (see ordset.h).
 *
 * DESIGN: split/merge treap over a fixed array of nodes. A node's heap
 * priority is a hash of its index; the BST order is (key, index), which is
 * a total order, so the tree is a pure function of the set's contents.
 */
#include "ordset.h"

#include <stdlib.h>

static uint32_t prio(uint32_t i)
{
  uint32_t x = i * 0x9e3779b1u + 0x7f4a7c15u;
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  x ^= x >> 16;
  return x;
}

int ordset_init(struct ordset *s, size_t n)
{
  s->root = ORDSET_NIL;
  s->n = n;
  s->left = malloc((n ? n : 1) * sizeof *s->left);
  s->right = malloc((n ? n : 1) * sizeof *s->right);
  s->key = malloc((n ? n : 1) * sizeof *s->key);
  s->aux = malloc((n ? n : 1) * sizeof *s->aux);
  s->maxaux = malloc((n ? n : 1) * sizeof *s->maxaux);
  if (!s->left || !s->right || !s->key || !s->aux || !s->maxaux) {
    ordset_cleanup(s);
    return -1;
  }
  return 0;
}

void ordset_cleanup(struct ordset *s)
{
  free(s->left);
  free(s->right);
  free(s->key);
  free(s->aux);
  free(s->maxaux);
  s->left = s->right = NULL;
  s->key = s->aux = s->maxaux = NULL;
  s->root = ORDSET_NIL;
  s->n = 0;
}

/* (key, index) strictly before? */
static int before(const struct ordset *s, uint32_t a, uint32_t b)
{
  return s->key[a] < s->key[b] || (s->key[a] == s->key[b] && a < b);
}

static void pull(struct ordset *s, uint32_t t)
{
  int64_t m = s->aux[t];
  if (s->left[t] != ORDSET_NIL && s->maxaux[s->left[t]] > m)
    m = s->maxaux[s->left[t]];
  if (s->right[t] != ORDSET_NIL && s->maxaux[s->right[t]] > m)
    m = s->maxaux[s->right[t]];
  s->maxaux[t] = m;
}

/* Splits t into nodes before pivot (*l) and the rest (*r). */
static void split(struct ordset *s, uint32_t t, uint32_t pivot, uint32_t *l,
                  uint32_t *r)
{
  if (t == ORDSET_NIL) {
    *l = *r = ORDSET_NIL;
  } else if (before(s, t, pivot)) {
    split(s, s->right[t], pivot, &s->right[t], r);
    *l = t;
    pull(s, t);
  } else {
    split(s, s->left[t], pivot, l, &s->left[t]);
    *r = t;
    pull(s, t);
  }
}

static uint32_t merge(struct ordset *s, uint32_t a, uint32_t b)
{
  if (a == ORDSET_NIL)
    return b;
  if (b == ORDSET_NIL)
    return a;
  if (prio(a) > prio(b)) {
    s->right[a] = merge(s, s->right[a], b);
    pull(s, a);
    return a;
  }
  s->left[b] = merge(s, a, s->left[b]);
  pull(s, b);
  return b;
}

static uint32_t insert_at(struct ordset *s, uint32_t t, uint32_t i)
{
  if (t == ORDSET_NIL)
    return i;
  if (prio(i) > prio(t)) {
    split(s, t, i, &s->left[i], &s->right[i]);
    pull(s, i);
    return i;
  }
  if (before(s, i, t))
    s->left[t] = insert_at(s, s->left[t], i);
  else
    s->right[t] = insert_at(s, s->right[t], i);
  pull(s, t);
  return t;
}

void ordset_insert(struct ordset *s, uint32_t i, int64_t key, int64_t aux)
{
  s->key[i] = key;
  s->aux[i] = aux;
  s->maxaux[i] = aux;
  s->left[i] = s->right[i] = ORDSET_NIL;
  s->root = insert_at(s, s->root, i);
}

static uint32_t remove_at(struct ordset *s, uint32_t t, uint32_t i)
{
  if (t == i)
    return merge(s, s->left[t], s->right[t]);
  if (before(s, i, t))
    s->left[t] = remove_at(s, s->left[t], i);
  else
    s->right[t] = remove_at(s, s->right[t], i);
  pull(s, t);
  return t;
}

void ordset_remove(struct ordset *s, uint32_t i)
{
  s->root = remove_at(s, s->root, i);
}

uint32_t ordset_prev(const struct ordset *s, uint32_t i)
{
  uint32_t t = s->root, best = ORDSET_NIL;
  while (t != ORDSET_NIL) {
    if (before(s, t, i)) {
      best = t;
      t = s->right[t];
    } else {
      t = s->left[t];
    }
  }
  return best;
}

uint32_t ordset_next(const struct ordset *s, uint32_t i)
{
  uint32_t t = s->root, best = ORDSET_NIL;
  while (t != ORDSET_NIL) {
    if (before(s, i, t)) {
      best = t;
      t = s->left[t];
    } else {
      t = s->right[t];
    }
  }
  return best;
}

static void visit(const struct ordset *s, uint32_t t, int64_t lo, int64_t hi,
                  void (*fn)(uint32_t, void *), void *ctx)
{
  while (t != ORDSET_NIL && s->maxaux[t] >= lo) {
    visit(s, s->left[t], lo, hi, fn, ctx);
    if (s->key[t] > hi)
      return;
    if (s->aux[t] >= lo)
      fn(t, ctx);
    t = s->right[t];
  }
}

void ordset_overlapping(const struct ordset *s, int64_t lo, int64_t hi,
                        void (*fn)(uint32_t i, void *ctx), void *ctx)
{
  visit(s, s->root, lo, hi, fn, ctx);
}

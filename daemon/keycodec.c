/*
 * keycodec.c - encode and decode opaque cache-entry keys (keycodec.h).
 */
#include "keycodec.h"

#include <stdlib.h>
#include <string.h>

uint8_t *keycodec_encode(const uint8_t *hash, size_t hash_len,
                         const uint32_t *ranks, const int64_t *dims,
                         size_t n_inputs, const uint8_t *graph_digest,
                         const uint8_t *options_digest, size_t *out_len)
{
  size_t n_dims = 0;
  for (size_t i = 0; i < n_inputs; i++)
    n_dims += ranks[i];
  size_t len = 1 + hash_len + 2 + n_inputs + 8 * n_dims + 2 * PLANNER_DIGEST_LEN;
  uint8_t *b = malloc(len), *p = b;
  if (!b)
    return NULL;
  *p++ = (uint8_t)hash_len;
  memcpy(p, hash, hash_len);
  p += hash_len;
  *p++ = (uint8_t)n_inputs;
  *p++ = (uint8_t)(n_inputs >> 8);
  for (size_t i = 0; i < n_inputs; i++)
    *p++ = (uint8_t)ranks[i];
  for (size_t i = 0; i < n_dims; i++)
    for (int k = 0; k < 8; k++)
      *p++ = (uint8_t)((uint64_t)dims[i] >> (8 * k));
  memcpy(p, graph_digest, PLANNER_DIGEST_LEN);
  p += PLANNER_DIGEST_LEN;
  memcpy(p, options_digest, PLANNER_DIGEST_LEN);
  *out_len = len;
  return b;
}

void keycodec_cleanup(struct keycodec_key *k)
{
  free(k->ranks);
  free(k->dims);
  k->ranks = NULL;
  k->dims = NULL;
}

int keycodec_decode(const uint8_t *buf, size_t len, struct keycodec_key *k)
{
  memset(k, 0, sizeof *k);
  size_t pos = 0;
  if (len < 1)
    return ARENA_EINVAL;
  k->hash_len = buf[pos++];
  if (k->hash_len == 0 || k->hash_len > STORAGE_MODEL_HASH_MAX ||
      len - pos < k->hash_len + 2)
    return ARENA_EINVAL;
  memcpy(k->hash, buf + pos, k->hash_len);
  pos += k->hash_len;
  k->n_inputs = (size_t)buf[pos] | (size_t)buf[pos + 1] << 8;
  pos += 2;
  if (k->n_inputs > STORAGE_MAX_INPUTS || len - pos < k->n_inputs)
    return ARENA_EINVAL;
  size_t n_dims = 0;
  k->ranks = malloc((k->n_inputs ? k->n_inputs : 1) * sizeof *k->ranks);
  if (!k->ranks)
    return ARENA_ENOMEM;
  for (size_t i = 0; i < k->n_inputs; i++) {
    k->ranks[i] = buf[pos++];
    if (k->ranks[i] > STORAGE_MAX_RANK) {
      keycodec_cleanup(k);
      return ARENA_EINVAL;
    }
    n_dims += k->ranks[i];
  }
  if (len - pos != 8 * n_dims + 2 * PLANNER_DIGEST_LEN) {
    keycodec_cleanup(k);
    return ARENA_EINVAL;
  }
  k->dims = malloc((n_dims ? n_dims : 1) * sizeof *k->dims);
  if (!k->dims) {
    keycodec_cleanup(k);
    return ARENA_ENOMEM;
  }
  for (size_t i = 0; i < n_dims; i++) {
    uint64_t v = 0;
    for (int b = 0; b < 8; b++)
      v |= (uint64_t)buf[pos++] << (8 * b);
    k->dims[i] = (int64_t)v;
  }
  memcpy(k->graph_digest, buf + pos, PLANNER_DIGEST_LEN);
  memcpy(k->options_digest, buf + pos + PLANNER_DIGEST_LEN,
         PLANNER_DIGEST_LEN);
  return 0;
}

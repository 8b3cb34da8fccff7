/*
 * keycodec.h - the opaque cache-entry key that `List` hands out and
 * `Evict.key` takes back: model hash, input shape and both digests in one
 * byte string.
 *
 * Layout (all integers little-endian): u8 hash_len, hash bytes, u16
 * n_inputs, one u8 rank per input, the dims as i64, then the 32-byte graph
 * digest and the 32-byte options digest.
 */
#ifndef ARENA_KEYCODEC_H
#define ARENA_KEYCODEC_H

#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "storage.h"

/* Encodes a key into an owned buffer (free()). Returns NULL on OOM. */
uint8_t *keycodec_encode(const uint8_t *hash, size_t hash_len,
                         const uint32_t *ranks, const int64_t *dims,
                         size_t n_inputs, const uint8_t *graph_digest,
                         const uint8_t *options_digest, size_t *out_len);

/* A decoded key; ranks and dims are owned (keycodec_cleanup). */
struct keycodec_key {
  uint8_t hash[STORAGE_MODEL_HASH_MAX];
  size_t hash_len;
  uint32_t *ranks;
  int64_t *dims;
  size_t n_inputs;
  uint8_t graph_digest[PLANNER_DIGEST_LEN];
  uint8_t options_digest[PLANNER_DIGEST_LEN];
};

/* Decodes buf. Returns 0, ARENA_EINVAL (malformed) or ARENA_ENOMEM. */
int keycodec_decode(const uint8_t *buf, size_t len, struct keycodec_key *k);
void keycodec_cleanup(struct keycodec_key *k);

#endif

/*
 * check_storage_codec.c - the "codec" test case of the storage suite:
 * storage/'s value codecs on their own, without a database. The input
 * shape blob (encode, decode, truncated and padded blobs, bad keys), the
 * offsets blob (shift, varints, permuted encode and decode, corrupt
 * blobs, format 2's sharing head), the canonical tensor order and the value checksum.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_storage.h"
#include "storage.h"
#include "storage_int.h"

/* ---- codec -------------------------------------------------------------- */

START_TEST(codec_shape)
{
  uint32_t ranks[3] = {2, 0, 3};
  int64_t dims[5] = {1, 2, 7, 8, (int64_t)1 << 40};
  struct storage_key k = {(const uint8_t *)"m", 1, ranks, 3, dims};
  uint8_t *buf = NULL;
  size_t cap = 0, len = 0;
  ck_assert_int_eq(storage__shape_encode(&k, &buf, &cap, &len), 0);
  ck_assert_uint_eq(len, 4 + 3 * 4 + 5 * 8);
  uint32_t *r2;
  int64_t *d2;
  size_t n2;
  ck_assert_int_eq(storage__shape_decode(buf, len, &r2, &d2, &n2), 0);
  ck_assert_uint_eq(n2, 3);
  ck_assert_mem_eq(r2, ranks, sizeof ranks);
  ck_assert_mem_eq(d2, dims, sizeof dims);
  free(r2);
  free(d2);
  /* Truncated or padded blobs are corrupt. */
  ck_assert_int_eq(storage__shape_decode(buf, len - 1, &r2, &d2, &n2),
                   ARENA_ECORRUPT);
  ck_assert_ptr_null(r2);
  ck_assert_int_eq(storage__shape_decode(buf, 3, &r2, &d2, &n2),
                   ARENA_ECORRUPT);
  buf[4] = 200; /* rank 200 */
  ck_assert_int_eq(storage__shape_decode(buf, len, &r2, &d2, &n2),
                   ARENA_ECORRUPT);

  /* Bad keys. */
  dims[0] = -1;
  ck_assert_int_eq(storage__shape_encode(&k, &buf, &cap, &len), ARENA_EINVAL);
  dims[0] = 1;
  k.model_hash_len = 65;
  ck_assert_int_eq(storage__shape_encode(&k, &buf, &cap, &len), ARENA_EINVAL);
  k.model_hash_len = 0;
  ck_assert_int_eq(storage__shape_encode(&k, &buf, &cap, &len), ARENA_EINVAL);
  k.model_hash_len = 1;
  ranks[1] = STORAGE_MAX_RANK + 1;
  ck_assert_int_eq(storage__shape_encode(&k, &buf, &cap, &len), ARENA_EINVAL);
  /* No inputs at all is a legal shape. */
  k.n_inputs = 0;
  ck_assert_int_eq(storage__shape_encode(&k, &buf, &cap, &len), 0);
  ck_assert_uint_eq(len, 4);
  free(buf);
}
END_TEST

START_TEST(codec_offsets)
{
  uint64_t off[6] = {0, 64, 128, 1ull << 40, 64 * 3, UINT64_MAX - 63};
  size_t perm[6] = {5, 4, 3, 2, 1, 0};
  uint8_t *blob;
  size_t len;
  uint64_t back[6];
  ck_assert_int_eq(
      storage__offsets_encode(off, 6, NULL, NULL, &blob, &len), 0);
  ck_assert_uint_eq(blob[0], STORAGE__OFFSETS_FORMAT);
  ck_assert_uint_eq(blob[1], 6); /* every offset is a multiple of 64 */
  ck_assert_int_eq(storage__offsets_decode(blob, len, 6, NULL, back), 0);
  ck_assert_mem_eq(back, off, sizeof off);
  /* Wrong count, truncation, trailing bytes and a bad format fail. */
  ck_assert_int_eq(storage__offsets_decode(blob, len, 5, NULL, back),
                   ARENA_ECORRUPT);
  ck_assert_int_eq(storage__offsets_decode(blob, len - 1, 6, NULL, back),
                   ARENA_ECORRUPT);
  uint8_t *longer = malloc(len + 1);
  memcpy(longer, blob, len);
  longer[len] = 0;
  ck_assert_int_eq(storage__offsets_decode(longer, len + 1, 6, NULL, back),
                   ARENA_ECORRUPT);
  longer[0] = 9;
  ck_assert_int_eq(storage__offsets_decode(longer, len, 6, NULL, back),
                   ARENA_ECORRUPT);
  free(longer);
  free(blob);

  /* Permuted encode and decode are inverses. */
  ck_assert_int_eq(
      storage__offsets_encode(off, 6, perm, NULL, &blob, &len), 0);
  ck_assert_int_eq(storage__offsets_decode(blob, len, 6, NULL, back), 0);
  for (int i = 0; i < 6; i++)
    ck_assert_uint_eq(back[i], off[5 - i]);
  ck_assert_int_eq(storage__offsets_decode(blob, len, 6, perm, back), 0);
  ck_assert_mem_eq(back, off, sizeof off);
  free(blob);

  /* Odd offsets: shift 0; all zero: shift 0. */
  uint64_t odd[2] = {3, 0}, zero[3] = {0, 0, 0};
  ck_assert_int_eq(
      storage__offsets_encode(odd, 2, NULL, NULL, &blob, &len), 0);
  ck_assert_uint_eq(blob[1], 0);
  free(blob);
  ck_assert_int_eq(
      storage__offsets_encode(zero, 3, NULL, NULL, &blob, &len), 0);
  ck_assert_uint_eq(len, 6);
  ck_assert_int_eq(storage__offsets_decode(blob, len, 3, NULL, back), 0);
  ck_assert_uint_eq(back[2], 0);
  free(blob);

  /* An 11-byte varint is rejected. */
  uint8_t bad[16] = {STORAGE__OFFSETS_FORMAT, 0, 1};
  memset(bad + 3, 0xff, 10);
  bad[13] = 0x01;
  ck_assert_int_eq(storage__offsets_decode(bad, 14, 1, NULL, back),
                   ARENA_ECORRUPT);
}
END_TEST

/* Format 2 carries a plan's in-place sharing in the head; format 1
 * reads as no sharing, and a bad head is corrupt. */
START_TEST(codec_offsets_shared)
{
  uint64_t off[5] = {0, 0, 128, 0, 256};
  struct storage__share sh = {2, 1ull << 40}, got;
  uint8_t *blob;
  size_t len;
  uint64_t back[5];
  ck_assert_int_eq(storage__offsets_encode(off, 5, NULL, &sh, &blob, &len),
                   0);
  ck_assert_uint_eq(blob[0], STORAGE__OFFSETS_FORMAT_SHARED);
  ck_assert_int_eq(storage__offsets_decode(blob, len, 5, NULL, back), 0);
  ck_assert_mem_eq(back, off, sizeof off);
  ck_assert_int_eq(storage__offsets_share(blob, len, 7, &got), 0);
  ck_assert_uint_eq(got.n_shared, 2);
  ck_assert_uint_eq(got.lb_unshared, 1ull << 40);
  /* the head alone is enough (a listing reads no more) */
  ck_assert_int_eq(storage__offsets_share(blob, 2 + 1 + 6 + 1, 7, &got), 0);
  ck_assert_uint_eq(got.n_shared, 2);
  /* truncated inside the head, or the offsets, is corrupt */
  ck_assert_int_eq(storage__offsets_share(blob, 4, 7, &got), ARENA_ECORRUPT);
  ck_assert_int_eq(storage__offsets_decode(blob, len - 1, 5, NULL, back),
                   ARENA_ECORRUPT);
  /* a format byte nobody wrote */
  blob[0] = 3;
  ck_assert_int_eq(storage__offsets_share(blob, len, 7, &got),
                   ARENA_ECORRUPT);
  ck_assert_int_eq(storage__offsets_decode(blob, len, 5, NULL, back),
                   ARENA_ECORRUPT);
  free(blob);

  /* as many pairs as offsets cannot be: a chain of c tensors has c - 1 */
  sh.n_shared = 5;
  ck_assert_int_eq(storage__offsets_encode(off, 5, NULL, &sh, &blob, &len),
                   0);
  ck_assert_int_eq(storage__offsets_share(blob, len, 7, &got),
                   ARENA_ECORRUPT);
  ck_assert_int_eq(storage__offsets_decode(blob, len, 5, NULL, back),
                   ARENA_ECORRUPT);
  free(blob);
  sh.n_shared = 4;
  ck_assert_int_eq(storage__offsets_encode(off, 5, NULL, &sh, &blob, &len),
                   0);
  ck_assert_int_eq(storage__offsets_decode(blob, len, 5, NULL, back), 0);
  free(blob);

  /* format 1: no pair, and the plan's own bound */
  ck_assert_int_eq(
      storage__offsets_encode(off, 5, NULL, NULL, &blob, &len), 0);
  ck_assert_uint_eq(blob[0], STORAGE__OFFSETS_FORMAT);
  ck_assert_int_eq(storage__offsets_share(blob, len, 7, &got), 0);
  ck_assert_uint_eq(got.n_shared, 0);
  ck_assert_uint_eq(got.lb_unshared, 7);
  free(blob);

  /* which plans need format 2 */
  struct planner_plan p;
  planner_plan_init(&p);
  p.lower_bound_bytes = p.lower_bound_unshared_bytes = 64;
  ck_assert_int_eq(storage__share_of(&p, &sh), 0);
  p.n_shared = 1;
  ck_assert_int_eq(storage__share_of(&p, &sh), 1);
  ck_assert_uint_eq(sh.n_shared, 1);
  p.n_shared = 0;
  p.lower_bound_unshared_bytes = 128; /* shares nothing, bound differs */
  ck_assert_int_eq(storage__share_of(&p, &sh), 1);
  ck_assert_uint_eq(sh.lb_unshared, 128);
}
END_TEST

START_TEST(codec_perm_and_checksum)
{
  struct planner_tensor t[4] = {
      {.id = 7, .size = 1, .pinned = -1},
      {.id = 2, .size = 1, .pinned = -1},
      {.id = 9, .size = 1, .pinned = -1},
      {.id = 0, .size = 1, .pinned = -1},
  };
  struct planner_graph g = {t, 4};
  size_t *perm;
  ck_assert_int_eq(storage__canonical_perm(&g, &perm), 0);
  ck_assert_ptr_nonnull(perm);
  ck_assert_uint_eq(perm[0], 3);
  ck_assert_uint_eq(perm[1], 1);
  ck_assert_uint_eq(perm[2], 0);
  ck_assert_uint_eq(perm[3], 2);
  free(perm);
  g.tensors = t + 3; /* one tensor: already canonical */
  g.n_tensors = 1;
  ck_assert_int_eq(storage__canonical_perm(&g, &perm), 0);
  ck_assert_ptr_null(perm);

  uint8_t gd[32] = {1}, od[32] = {2}, offs[4] = {1, 0, 1, 0};
  struct storage__row r = {
      .model_hash = (const uint8_t *)"m", .model_hash_len = 1,
      .shape = (const uint8_t *)"\0\0\0\0", .shape_len = 4,
      .graph_digest = gd, .options_digest = od, .n_tensors = 1,
      .offsets = offs, .offsets_len = 4, .arena_bytes = 10};
  uint8_t a[32], b[32];
  storage__checksum(&r, a);
  r.arena_bytes = 11;
  storage__checksum(&r, b);
  ck_assert(memcmp(a, b, 32) != 0);
  r.arena_bytes = 10;
  r.model_hash_len = 0; /* the boundary between fields matters */
  storage__checksum(&r, b);
  ck_assert(memcmp(a, b, 32) != 0);
  r.model_hash_len = 1;
  storage__checksum(&r, b);
  ck_assert_mem_eq(a, b, 32);
  ck_assert_uint_eq(storage__entry_bytes(&r), 128 + 1 + 4 + 96 + 4);
}
END_TEST

/* ---- adding the tests --------------------------------------------------- */

void storage_add_codec(TCase *tc)
{
  tcase_add_test(tc, codec_shape);
  tcase_add_test(tc, codec_offsets);
  tcase_add_test(tc, codec_offsets_shared);
  tcase_add_test(tc, codec_perm_and_checksum);
}

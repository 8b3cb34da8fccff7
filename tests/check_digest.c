/*
 * check_digest.c - tests for planner/digest.{c,h}: SHA-256 against the
 * FIPS 180-4 example vectors, streaming versus one-shot hashing, the
 * processor's SHA instructions against the portable code, the
 * canonical graph and options digests (version 1, and version 2 for
 * graphs that declare aliases and options with in-place sharing off),
 * and the hex helpers.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "digest_int.h"
#include "graph_csv.h"
#include "testutil.h"

/* Hashes len bytes one-shot and returns the hex digest in out. */
static const char *sha_hex(const void *data, size_t len,
                           char out[PLANNER_DIGEST_HEX_LEN])
{
  uint8_t d[PLANNER_DIGEST_LEN];
  planner_sha256(data, len, d);
  return planner_hex(d, PLANNER_DIGEST_LEN, out);
}

START_TEST(sha_empty)
{
  char h[PLANNER_DIGEST_HEX_LEN];
  ck_assert_str_eq(
      sha_hex("", 0, h),
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  ck_assert_str_eq(
      sha_hex(NULL, 0, h),
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
END_TEST

START_TEST(sha_abc)
{
  char h[PLANNER_DIGEST_HEX_LEN];
  ck_assert_str_eq(
      sha_hex("abc", 3, h),
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
END_TEST

START_TEST(sha_two_blocks)
{
  /* 56 bytes: the padding spills into a second block. */
  static const char m[] =
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  char h[PLANNER_DIGEST_HEX_LEN];
  ck_assert_str_eq(
      sha_hex(m, strlen(m), h),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

START_TEST(sha_million_a)
{
  size_t n = 1000000;
  char *m = malloc(n);
  ck_assert_ptr_nonnull(m);
  memset(m, 'a', n);
  char h[PLANNER_DIGEST_HEX_LEN];
  ck_assert_str_eq(
      sha_hex(m, n, h),
      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

  /* The same input fed in uneven chunks must give the same digest. */
  struct planner_sha256 s;
  uint8_t d[PLANNER_DIGEST_LEN];
  planner_sha256_init(&s);
  size_t at = 0, step = 1;
  while (at < n) {
    size_t take = step < n - at ? step : n - at;
    planner_sha256_update(&s, m + at, take);
    at += take;
    step = step * 7 % 997 + 1;
  }
  planner_sha256_final(&s, d);
  ck_assert_str_eq(
      planner_hex(d, sizeof d, h),
      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  free(m);
}
END_TEST

/* Every length around the block and padding boundaries, streamed one byte
 * at a time, must match the one-shot digest, and each length must give a
 * different digest from its neighbour. */
START_TEST(sha_stream_boundaries)
{
  uint8_t msg[200];
  for (size_t i = 0; i < sizeof msg; i++)
    msg[i] = (uint8_t)(i * 31 + 7);
  uint8_t prev[PLANNER_DIGEST_LEN] = {0};
  for (size_t len = 0; len <= sizeof msg; len++) {
    uint8_t one[PLANNER_DIGEST_LEN], inc[PLANNER_DIGEST_LEN];
    struct planner_sha256 s;
    planner_sha256(msg, len, one);
    planner_sha256_init(&s);
    for (size_t i = 0; i < len; i++)
      planner_sha256_update(&s, msg + i, 1);
    planner_sha256_final(&s, inc);
    ck_assert_mem_eq(one, inc, PLANNER_DIGEST_LEN);
    ck_assert(memcmp(one, prev, PLANNER_DIGEST_LEN) != 0);
    memcpy(prev, one, sizeof prev);
  }
}
END_TEST

/* ---- graph digest ------------------------------------------------------- */

#define NT 50

static void make_tensors(struct planner_tensor *t, size_t n, uint64_t seed)
{
  uint64_t st = seed;
  for (size_t i = 0; i < n; i++) {
    t[i].id = (uint32_t)(i * 3 + 1);
    t[i].size = tu_rand_range(&st, 0, 1 << 20);
    t[i].first = (int64_t)tu_rand_range(&st, 0, 100);
    t[i].last = t[i].first + (int64_t)tu_rand_range(&st, 0, 20);
    t[i].align = (i % 5 == 0) ? 128 : 0;
    t[i].pinned = (i % 17 == 0) ? (int64_t)(i * 256) : PLANNER_NOT_PINNED;
    t[i].alias = 0;
    t[i].has_alias = 0;
  }
}

static void graph_digest_ok(const struct planner_tensor *t, size_t n,
                            uint8_t out[PLANNER_DIGEST_LEN])
{
  struct planner_graph g = {t, n};
  ck_assert_int_eq(planner_graph_digest(&g, out), 0);
}

START_TEST(graph_order_independent)
{
  struct planner_tensor t[NT], shuf[NT];
  uint8_t a[PLANNER_DIGEST_LEN], b[PLANNER_DIGEST_LEN];
  make_tensors(t, NT, 42);
  graph_digest_ok(t, NT, a);

  uint64_t st = 7;
  for (int round = 0; round < 20; round++) {
    memcpy(shuf, t, sizeof t);
    for (size_t i = NT - 1; i > 0; i--) {
      size_t j = (size_t)tu_rand_range(&st, 0, i);
      struct planner_tensor tmp = shuf[i];
      shuf[i] = shuf[j];
      shuf[j] = tmp;
    }
    graph_digest_ok(shuf, NT, b);
    ck_assert_mem_eq(a, b, PLANNER_DIGEST_LEN);
  }
}
END_TEST

/* Changing any one field of any one tensor changes the digest. */
START_TEST(graph_field_sensitive)
{
  struct planner_tensor t[NT];
  uint8_t base[PLANNER_DIGEST_LEN], d[PLANNER_DIGEST_LEN];
  make_tensors(t, NT, 9);
  graph_digest_ok(t, NT, base);
  for (int field = 0; field < 6; field++) {
    struct planner_tensor c[NT];
    memcpy(c, t, sizeof t);
    struct planner_tensor *x = &c[NT / 2];
    switch (field) {
    case 0: x->id += 1; break;
    case 1: x->size += 1; break;
    case 2: x->first -= 1; break;
    case 3: x->last += 1; break;
    case 4: x->align = 256; break;
    default: x->pinned = 4096; break;
    }
    graph_digest_ok(c, NT, d);
    ck_assert_msg(memcmp(base, d, sizeof d) != 0, "field %d ignored", field);
  }
  /* Dropping a tensor changes it too. */
  graph_digest_ok(t, NT - 1, d);
  ck_assert(memcmp(base, d, sizeof d) != 0);
}
END_TEST

/* Known answer: the digest equals SHA-256 of the documented encoding,
 * built here byte by byte. */
START_TEST(graph_encoding_documented)
{
  struct planner_tensor t[2] = {
      {.id = 9, .size = 0x0102030405060708ull, .first = 3, .last = 5,
       .align = 64, .pinned = PLANNER_NOT_PINNED},
      {.id = 2, .size = 100, .first = 0, .last = 1, .align = 0,
       .pinned = 128},
  };
  uint8_t enc[16 + 8 + 2 * 44];
  memset(enc, 0, sizeof enc);
  memcpy(enc, "arenad-graph-v1\n", 16);
  enc[16] = 2;
  /* id 2 comes first. */
  uint8_t *r = enc + 24;
  r[0] = 2;
  r[4] = 100;
  r[20] = 1;  /* last */
  r[36] = 128; /* pinned */
  r += 44;
  r[0] = 9;
  for (int i = 0; i < 8; i++)
    r[4 + i] = (uint8_t)(8 - i);
  r[12] = 3;
  r[20] = 5;
  r[28] = 64;
  memset(r + 36, 0xff, 8); /* -1 */
  uint8_t want[PLANNER_DIGEST_LEN], got[PLANNER_DIGEST_LEN];
  planner_sha256(enc, sizeof enc, want);
  graph_digest_ok(t, 2, got);
  ck_assert_mem_eq(want, got, PLANNER_DIGEST_LEN);
}
END_TEST

START_TEST(graph_empty_and_null)
{
  uint8_t d[PLANNER_DIGEST_LEN], want[PLANNER_DIGEST_LEN];
  struct planner_graph g = {NULL, 0};
  ck_assert_int_eq(planner_graph_digest(&g, d), 0);
  uint8_t enc[24] = {0};
  memcpy(enc, "arenad-graph-v1\n", 16);
  planner_sha256(enc, sizeof enc, want);
  ck_assert_mem_eq(d, want, sizeof d);

  g.n_tensors = 3;
  memset(d, 0xaa, sizeof d);
  ck_assert_int_eq(planner_graph_digest(&g, d), ARENA_EINVAL);
  memset(want, 0, sizeof want);
  ck_assert_mem_eq(d, want, sizeof d);
}
END_TEST

/* Duplicate ids still give an order-independent digest. */
START_TEST(graph_duplicate_ids)
{
  struct planner_tensor t[3] = {
      {.id = 1, .size = 10, .first = 0, .last = 0, .pinned = -1},
      {.id = 1, .size = 20, .first = 0, .last = 0, .pinned = -1},
      {.id = 0, .size = 30, .first = 0, .last = 0, .pinned = -1},
  };
  struct planner_tensor u[3] = {t[1], t[2], t[0]};
  uint8_t a[PLANNER_DIGEST_LEN], b[PLANNER_DIGEST_LEN];
  graph_digest_ok(t, 3, a);
  graph_digest_ok(u, 3, b);
  ck_assert_mem_eq(a, b, sizeof a);
}
END_TEST

/* ---- aliases (version 2) ------------------------------------------------ */

/* Digests computed before aliases existed: a graph that declares none
 * keeps its version 1 digest, byte for byte. */
START_TEST(graph_v1_digests_kept)
{
  static const struct {
    const char *file;
    const char *hex;
  } pinned[] = {
      {"models/person_detect.csv",
       "f588cf40c963c04b0b1db05d832ab1771fee8027fb58cef804924a7f640b5f2c"},
      {"models/face_detection_short_range.csv",
       "8877125f1dfc7bbd11e9d04a6ef7bc7f15a050d9fee409e196f31f05862dc830"},
      {"golden/small_a.csv",
       "36a010664eaea766c6cee312267934c794c313af021adcabfc107ea65beae14d"},
  };
  for (size_t k = 0; k < sizeof pinned / sizeof pinned[0]; k++) {
    char path[512], hex[PLANNER_DIGEST_HEX_LEN];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s", tu_data_dir(), pinned[k].file);
    char *text = tu_read_file(path, &len);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    struct planner_csv c;
    planner_csv_init(&c);
    ck_assert_int_eq(planner_csv_parse(text, len, &c, NULL), 0);
    /* an alias value without has_alias is not a declaration */
    for (size_t i = 0; i < c.n_tensors; i++)
      c.tensors[i].alias = (uint32_t)(i * 7 + 1);
    uint8_t d[PLANNER_DIGEST_LEN];
    graph_digest_ok(c.tensors, c.n_tensors, d);
    ck_assert_str_eq(planner_hex(d, sizeof d, hex), pinned[k].hex);
    planner_csv_cleanup(&c);
    free(text);
  }
  struct planner_tensor t[2] = {
      {.id = 9, .size = 0x0102030405060708ull, .first = 3, .last = 5,
       .align = 64, .pinned = PLANNER_NOT_PINNED},
      {.id = 2, .size = 100, .first = 0, .last = 1, .align = 0,
       .pinned = 128},
  };
  char hex[PLANNER_DIGEST_HEX_LEN];
  uint8_t d[PLANNER_DIGEST_LEN];
  graph_digest_ok(t, 2, d);
  ck_assert_str_eq(
      planner_hex(d, sizeof d, hex),
      "f1d762da25c131ed5dae1bcad661f7609822f4c7348efd063077ed555f7779b5");
}
END_TEST

/* Declaring an alias, or naming another tensor, changes the digest. */
START_TEST(graph_alias_sensitive)
{
  struct planner_tensor t[NT];
  uint8_t base[PLANNER_DIGEST_LEN], d[PLANNER_DIGEST_LEN],
      e[PLANNER_DIGEST_LEN];
  make_tensors(t, NT, 11);
  graph_digest_ok(t, NT, base);
  t[NT / 2].has_alias = 1;
  t[NT / 2].alias = t[0].id;
  graph_digest_ok(t, NT, d);
  ck_assert(memcmp(base, d, sizeof d) != 0);
  t[NT / 2].alias = t[1].id;
  graph_digest_ok(t, NT, e);
  ck_assert(memcmp(d, e, sizeof d) != 0);
  ck_assert(memcmp(base, e, sizeof d) != 0);
  /* has_alias is a flag: any non-zero value means the same */
  t[NT / 2].has_alias = 5;
  graph_digest_ok(t, NT, d);
  ck_assert_mem_eq(d, e, sizeof d);
  /* another tensor declaring the same pair is another graph */
  t[NT / 2].has_alias = 0;
  t[NT / 3].has_alias = 1;
  t[NT / 3].alias = t[1].id;
  graph_digest_ok(t, NT, d);
  ck_assert(memcmp(d, e, sizeof d) != 0);
  /* taking it back restores the version 1 digest */
  t[NT / 3].has_alias = 0;
  graph_digest_ok(t, NT, d);
  ck_assert_mem_eq(d, base, sizeof d);
}
END_TEST

/* Aliases travel with their tensors under any permutation. */
START_TEST(graph_alias_order_independent)
{
  struct planner_tensor t[NT], shuf[NT];
  uint8_t a[PLANNER_DIGEST_LEN], b[PLANNER_DIGEST_LEN];
  make_tensors(t, NT, 43);
  for (size_t i = 1; i < NT; i += 3) {
    t[i].has_alias = 1;
    t[i].alias = t[i - 1].id;
  }
  graph_digest_ok(t, NT, a);
  uint64_t st = 8;
  for (int round = 0; round < 20; round++) {
    memcpy(shuf, t, sizeof t);
    for (size_t i = NT - 1; i > 0; i--) {
      size_t j = (size_t)tu_rand_range(&st, 0, i);
      struct planner_tensor tmp = shuf[i];
      shuf[i] = shuf[j];
      shuf[j] = tmp;
    }
    graph_digest_ok(shuf, NT, b);
    ck_assert_mem_eq(a, b, PLANNER_DIGEST_LEN);
  }
  /* duplicate ids that differ only in their alias sort the same way */
  struct planner_tensor d[3] = {
      {.id = 1, .size = 10, .pinned = -1, .alias = 0, .has_alias = 1},
      {.id = 1, .size = 10, .pinned = -1, .alias = 2, .has_alias = 1},
      {.id = 0, .size = 10, .pinned = -1},
  };
  struct planner_tensor u[3] = {d[1], d[2], d[0]};
  graph_digest_ok(d, 3, a);
  graph_digest_ok(u, 3, b);
  ck_assert_mem_eq(a, b, sizeof a);
}
END_TEST

/* Known answer: SHA-256 of the documented version 2 encoding. */
START_TEST(graph_v2_encoding_documented)
{
  struct planner_tensor t[2] = {
      {.id = 9, .size = 100, .first = 1, .last = 2, .align = 0,
       .pinned = PLANNER_NOT_PINNED, .alias = 2, .has_alias = 1},
      {.id = 2, .size = 100, .first = 0, .last = 1, .align = 0,
       .pinned = PLANNER_NOT_PINNED, .alias = 77, .has_alias = 0},
  };
  uint8_t enc[16 + 8 + 2 * 52];
  memset(enc, 0, sizeof enc);
  memcpy(enc, "arenad-graph-v2\n", 16);
  enc[16] = 2;
  uint8_t *r = enc + 24; /* id 2: no alias, so 0 and 0 */
  r[0] = 2;
  r[4] = 100;
  r[20] = 1;
  memset(r + 36, 0xff, 8);
  r += 52; /* id 9 reuses 2 */
  r[0] = 9;
  r[4] = 100;
  r[12] = 1;
  r[20] = 2;
  memset(r + 36, 0xff, 8);
  r[44] = 1;
  r[48] = 2;
  uint8_t want[PLANNER_DIGEST_LEN], got[PLANNER_DIGEST_LEN];
  planner_sha256(enc, sizeof enc, want);
  graph_digest_ok(t, 2, got);
  ck_assert_mem_eq(want, got, PLANNER_DIGEST_LEN);
  /* more than one staging block of 64 records */
  struct planner_tensor many[200];
  make_tensors(many, 200, 5);
  many[150].has_alias = 1;
  many[150].alias = many[149].id;
  struct planner_sha256 s;
  planner_sha256_init(&s);
  planner_sha256_update(&s, "arenad-graph-v2\n", 16);
  uint8_t head[8] = {200};
  planner_sha256_update(&s, head, 8);
  for (size_t i = 0; i < 200; i++) {
    uint8_t rec[52] = {0};
    const struct planner_tensor *x = &many[i];
    for (int b = 0; b < 4; b++)
      rec[b] = (uint8_t)(x->id >> (8 * b));
    for (int b = 0; b < 8; b++) {
      rec[4 + b] = (uint8_t)(x->size >> (8 * b));
      rec[12 + b] = (uint8_t)((uint64_t)x->first >> (8 * b));
      rec[20 + b] = (uint8_t)((uint64_t)x->last >> (8 * b));
      rec[28 + b] = (uint8_t)(x->align >> (8 * b));
      rec[36 + b] = (uint8_t)((uint64_t)x->pinned >> (8 * b));
    }
    rec[44] = x->has_alias ? 1 : 0;
    for (int b = 0; b < 4 && x->has_alias; b++)
      rec[48 + b] = (uint8_t)(x->alias >> (8 * b));
    planner_sha256_update(&s, rec, sizeof rec);
  }
  planner_sha256_final(&s, want);
  graph_digest_ok(many, 200, got);
  ck_assert_mem_eq(want, got, PLANNER_DIGEST_LEN);
}
END_TEST

/* ---- options digest ----------------------------------------------------- */

START_TEST(options_fields)
{
  struct planner_options o, p;
  uint8_t a[PLANNER_DIGEST_LEN], b[PLANNER_DIGEST_LEN];
  o.algo = PLANNER_ALGO_BEST;
  o.alignment = 64;
  o.capacity = 0;
  o.effort = 0;
  o.stop = NULL;
  o.stop_ctx = NULL;
  o.threads = 0;
  o.in_place = 1;
  planner_options_digest(&o, a);

  p = o;
  p.effort = 5000;
  p.stop_ctx = &p;
  p.threads = 8;
  p.in_place = 7; /* any non-zero value is on */
  planner_options_digest(&p, b);
  ck_assert_mem_eq(a, b, sizeof a); /* effort, callback, threads not covered */

  p = o;
  p.algo = PLANNER_ALGO_EXACT;
  planner_options_digest(&p, b);
  ck_assert(memcmp(a, b, sizeof a) != 0);
  p = o;
  p.alignment = 16;
  planner_options_digest(&p, b);
  ck_assert(memcmp(a, b, sizeof a) != 0);
  p = o;
  p.capacity = 1 << 20;
  planner_options_digest(&p, b);
  ck_assert(memcmp(a, b, sizeof a) != 0);

  /* Known answer from the documented encoding. */
  uint8_t enc[18 + 20] = {0};
  memcpy(enc, "arenad-options-v1\n", 18);
  enc[18] = 0;  /* algo */
  enc[22] = 64; /* alignment */
  uint8_t want[PLANNER_DIGEST_LEN];
  planner_sha256(enc, sizeof enc, want);
  ck_assert_mem_eq(a, want, sizeof a);
  /* The defaults keep the digest they had before in_place existed. */
  planner_options_init(&p);
  planner_options_digest(&p, b);
  ck_assert_mem_eq(a, b, sizeof a);
}
END_TEST

/* In-place sharing leaves the options digest alone; with it off, the
 * graph is digested as if it declared no alias. */
START_TEST(options_in_place_off)
{
  struct planner_options o;
  uint8_t on[PLANNER_DIGEST_LEN], off[PLANNER_DIGEST_LEN];
  planner_options_init(&o);
  o.alignment = 16;
  planner_options_digest(&o, on);
  o.in_place = 0;
  planner_options_digest(&o, off);
  ck_assert_mem_eq(on, off, sizeof on);
  struct planner_tensor t[2] = {{1, 64, 0, 1, 0, PLANNER_NOT_PINNED, 0, 0},
                                {2, 64, 1, 2, 0, PLANNER_NOT_PINNED, 1, 1}};
  struct planner_graph g = {t, 2};
  uint8_t with[PLANNER_DIGEST_LEN], planned[PLANNER_DIGEST_LEN],
      bare[PLANNER_DIGEST_LEN];
  ck_assert_int_eq(planner_graph_digest(&g, with), 0);
  ck_assert_int_eq(planner_graph_digest_planned(&g, &o, planned), 0);
  t[1].has_alias = 0;
  ck_assert_int_eq(planner_graph_digest(&g, bare), 0);
  ck_assert_mem_eq(planned, bare, sizeof bare);
  ck_assert(memcmp(with, bare, sizeof bare) != 0);
  t[1].has_alias = 1;
  o.in_place = 1;
  ck_assert_int_eq(planner_graph_digest_planned(&g, &o, planned), 0);
  ck_assert_mem_eq(planned, with, sizeof with);
}
END_TEST

/* ---- hex ---------------------------------------------------------------- */

START_TEST(hex_round_trip)
{
  uint8_t b[256], back[256];
  char h[2 * 256 + 1];
  for (int i = 0; i < 256; i++)
    b[i] = (uint8_t)i;
  planner_hex(b, sizeof b, h);
  ck_assert_uint_eq(strlen(h), 512);
  ck_assert(strncmp(h, "000102", 6) == 0);
  ck_assert_str_eq(h + 506, "fdfeff");
  ck_assert_int_eq(planner_unhex(h, back, sizeof back), 0);
  ck_assert_mem_eq(b, back, sizeof b);

  uint8_t two[2];
  ck_assert_int_eq(planner_unhex("aBcD", two, 2), 0);
  ck_assert_uint_eq(two[0], 0xab);
  ck_assert_uint_eq(two[1], 0xcd);
  ck_assert_int_eq(planner_unhex("", two, 0), 0);
  planner_hex(two, 0, h);
  ck_assert_str_eq(h, "");
}
END_TEST

START_TEST(hex_rejects)
{
  uint8_t two[2] = {1, 2};
  static const uint8_t zero[2] = {0, 0};
  ck_assert_int_eq(planner_unhex("abc", two, 2), ARENA_EPARSE);   /* short */
  ck_assert_mem_eq(two, zero, 2);
  ck_assert_int_eq(planner_unhex("abcde", two, 2), ARENA_EPARSE); /* long */
  ck_assert_int_eq(planner_unhex("abcg", two, 2), ARENA_EPARSE);  /* not hex */
  ck_assert_int_eq(planner_unhex("ab c", two, 2), ARENA_EPARSE);
  ck_assert_int_eq(planner_unhex("", two, 2), ARENA_EPARSE);
  ck_assert_int_eq(planner_unhex("0x12", two, 2), ARENA_EPARSE);
}
END_TEST

/* The processor's SHA instructions, where the build and the processor
 * have them, and the portable code give the same chaining value for any
 * blocks from any starting value; where they are missing both calls run
 * the portable code and must still agree. */
START_TEST(sha_blocks_both_ways)
{
  enum { MAX_BLOCKS = 40 };
  uint8_t *m = malloc(64 * MAX_BLOCKS + 1);
  ck_assert_ptr_nonnull(m);
  uint64_t seed = 77;
  for (size_t i = 0; i < 64 * MAX_BLOCKS + 1; i++)
    m[i] = (uint8_t)tu_rand_range(&seed, 0, 255);
  int accelerated = 0;
  for (size_t n = 1; n <= MAX_BLOCKS; n++) {
    uint32_t a[8], b[8];
    for (int i = 0; i < 8; i++)
      a[i] = b[i] = (uint32_t)tu_rand_range(&seed, 0, UINT32_MAX);
    /* from an odd address too: the blocks need no alignment */
    const uint8_t *p = m + (n & 1);
    ck_assert_int_eq(planner__sha256_blocks(a, p, n, 0), 0);
    accelerated |= planner__sha256_blocks(b, p, n, 1);
    ck_assert_mem_eq(a, b, sizeof a);
  }
  printf("digest: SHA instructions %s\n",
         accelerated ? "used" : "not available, portable code only");
  free(m);
}
END_TEST

Suite *digest_suite(void)
{
  Suite *s = suite_create("digest");
  TCase *tc = tcase_create("sha256");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, sha_empty);
  tcase_add_test(tc, sha_abc);
  tcase_add_test(tc, sha_two_blocks);
  tcase_add_test(tc, sha_million_a);
  tcase_add_test(tc, sha_stream_boundaries);
  tcase_add_test(tc, sha_blocks_both_ways);
  suite_add_tcase(s, tc);

  tc = tcase_create("canonical");
  tcase_add_test(tc, graph_order_independent);
  tcase_add_test(tc, graph_field_sensitive);
  tcase_add_test(tc, graph_encoding_documented);
  tcase_add_test(tc, graph_empty_and_null);
  tcase_add_test(tc, graph_duplicate_ids);
  tcase_add_test(tc, options_fields);
  tcase_add_test(tc, options_in_place_off);
  suite_add_tcase(s, tc);

  tc = tcase_create("aliases");
  tcase_add_test(tc, graph_v1_digests_kept);
  tcase_add_test(tc, graph_alias_sensitive);
  tcase_add_test(tc, graph_alias_order_independent);
  tcase_add_test(tc, graph_v2_encoding_documented);
  suite_add_tcase(s, tc);

  tc = tcase_create("hex");
  tcase_add_test(tc, hex_round_trip);
  tcase_add_test(tc, hex_rejects);
  suite_add_tcase(s, tc);
  return s;
}

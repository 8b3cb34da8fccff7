/*
 * check_fuzz_replay.c - the libFuzzer targets in fuzz/, run without
 * libFuzzer as part of `make test`.
 *
 * Each target's LLVMFuzzerTestOneInput is compiled with the normal
 * compiler and flags (so `make SANITIZE=address,undefined test` runs it
 * under ASan and UBSan) and renamed to fuzz_one_<name>. This suite feeds
 * it every seed in fuzz/corpus/<name>/ and then a fixed number of
 * deterministic mutations of those seeds (bit flips, byte insertions and
 * deletions, copied chunks, truncation, interesting integers). A target
 * reports a finding by aborting, which fails its test.
 *
 * This is a smoke test that costs seconds and needs no clang: the real
 * coverage-guided runs are `make fuzz` (see the Reliability section of
 * README.md for their figures). ARENA_FUZZ_REPLAY_SCALE multiplies the
 * mutation counts.
 */
#include <check.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

int fuzz_one_frame(const uint8_t *data, size_t size);
int fuzz_one_request(const uint8_t *data, size_t size);
int fuzz_one_csv(const uint8_t *data, size_t size);
int fuzz_one_roundtrip(const uint8_t *data, size_t size);
int fuzz_one_tflite(const uint8_t *data, size_t size);
int fuzz_one_bundle(const uint8_t *data, size_t size);
int fuzz_one_share(const uint8_t *data, size_t size);
int fuzz_one_tflite_inplace(const uint8_t *data, size_t size);

#define REPLAY_MAX_INPUT (1u << 20) /* bytes; larger seeds are cut */

struct seeds {
  uint8_t **data;
  size_t *len;
  size_t n;
};

static void load_seeds(const char *name, struct seeds *s)
{
  char dir[256];
  snprintf(dir, sizeof dir, "fuzz/corpus/%s", name);
  memset(s, 0, sizeof *s);
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "no seed corpus %s", dir);
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.')
      continue;
    char path[512];
    size_t len;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    char *buf = tu_read_file(path, &len);
    if (!buf)
      continue;
    s->data = realloc(s->data, (s->n + 1) * sizeof *s->data);
    s->len = realloc(s->len, (s->n + 1) * sizeof *s->len);
    ck_assert(s->data && s->len);
    s->data[s->n] = (uint8_t *)buf;
    s->len[s->n] = len < REPLAY_MAX_INPUT ? len : REPLAY_MAX_INPUT;
    s->n++;
  }
  closedir(d);
  ck_assert_msg(s->n > 0, "empty seed corpus %s", dir);
}

static void free_seeds(struct seeds *s)
{
  for (size_t i = 0; i < s->n; i++)
    free(s->data[i]);
  free(s->data);
  free(s->len);
}

/* Applies 1..8 random edits to buf (len bytes, room for cap). */
static size_t mutate(uint8_t *buf, size_t len, size_t cap, uint64_t *rng)
{
  static const uint64_t interesting[] = {0, 1, 0x7f, 0x80, 0xff, 0x7fff,
                                         0xffff, 0x7fffffff, 0xffffffff,
                                         UINT64_MAX};
  unsigned edits = (unsigned)tu_rand_range(rng, 1, 8);
  for (unsigned e = 0; e < edits; e++) {
    size_t at = len ? (size_t)tu_rand_range(rng, 0, len - 1) : 0;
    switch (tu_rand_range(rng, 0, 5)) {
    case 0: /* flip a bit */
      if (len)
        buf[at] ^= (uint8_t)(1u << tu_rand_range(rng, 0, 7));
      break;
    case 1: /* insert a random byte */
      if (len < cap) {
        memmove(buf + at + 1, buf + at, len - at);
        buf[at] = (uint8_t)tu_rand(rng);
        len++;
      }
      break;
    case 2: /* delete a byte */
      if (len) {
        memmove(buf + at, buf + at + 1, len - at - 1);
        len--;
      }
      break;
    case 3: { /* copy a chunk over another place */
      if (len < 2)
        break;
      size_t from = (size_t)tu_rand_range(rng, 0, len - 1);
      size_t n = (size_t)tu_rand_range(rng, 1, 16);
      if (n > len - from)
        n = len - from;
      if (n > len - at)
        n = len - at;
      memmove(buf + at, buf + from, n);
      break;
    }
    case 4: /* truncate */
      len = at;
      break;
    default: { /* write an interesting integer, little or big endian */
      uint64_t v = interesting[tu_rand_range(rng, 0, 9)];
      size_t w = (size_t)1 << tu_rand_range(rng, 0, 3);
      int big = (int)tu_rand_range(rng, 0, 1);
      for (size_t k = 0; k < w && at + k < len; k++)
        buf[at + k] = (uint8_t)(v >> (8 * (big ? w - 1 - k : k)));
      break;
    }
    }
  }
  return len;
}

static unsigned scale(void)
{
  const char *e = getenv("ARENA_FUZZ_REPLAY_SCALE");
  int v = e ? atoi(e) : 1;
  return v > 0 ? (unsigned)v : 1;
}

static void replay(const char *name, int (*one)(const uint8_t *, size_t),
                   unsigned mutations)
{
  struct seeds s;
  load_seeds(name, &s);
  for (size_t i = 0; i < s.n; i++)
    one(s.data[i], s.len[i]);
  size_t cap = 0;
  for (size_t i = 0; i < s.n; i++)
    cap = s.len[i] > cap ? s.len[i] : cap;
  cap += 64;
  uint8_t *buf = malloc(cap);
  ck_assert_ptr_nonnull(buf);
  uint64_t rng = 0x5eed;
  for (size_t c = 0; name[c]; c++)
    rng = rng * 31 + (uint8_t)name[c];
  mutations *= scale();
  for (unsigned m = 0; m < mutations; m++) {
    size_t k = (size_t)tu_rand_range(&rng, 0, s.n - 1);
    memcpy(buf, s.data[k], s.len[k]);
    size_t len = mutate(buf, s.len[k], cap, &rng);
    /* an exact-size copy, so ASan sees reads past the end */
    uint8_t *in = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(in);
    memcpy(in, buf, len);
    one(in, len);
    free(in);
  }
  printf("fuzz replay: %s: %zu seeds, %u mutations\n", name, s.n, mutations);
  free(buf);
  free_seeds(&s);
}

START_TEST(test_frame)
{
  replay("frame", fuzz_one_frame, 100000);
}
END_TEST

START_TEST(test_request)
{
  replay("request", fuzz_one_request, 100000);
}
END_TEST

START_TEST(test_csv)
{
  replay("csv", fuzz_one_csv, 100000);
}
END_TEST

START_TEST(test_roundtrip)
{
  /* every input runs seven planners, the exact search among them */
  replay("roundtrip", fuzz_one_roundtrip, 1500);
}
END_TEST

START_TEST(test_tflite)
{
  replay("tflite", fuzz_one_tflite, 10000);
}
END_TEST

START_TEST(test_bundle)
{
  /* every input is read twice, once with its checksum repaired */
  replay("bundle", fuzz_one_bundle, 20000);
}
END_TEST

START_TEST(test_share)
{
  /* every input plans fourteen times and more, the exact search among
   * them */
  replay("share", fuzz_one_share, 3000);
}
END_TEST

START_TEST(test_tflite_inplace)
{
  replay("tflite_inplace", fuzz_one_tflite_inplace, 3000);
}
END_TEST

Suite *fuzz_replay_suite(void)
{
  Suite *s = suite_create("fuzz_replay");
  TCase *tc = tcase_create("fuzz_replay");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_frame);
  tcase_add_test(tc, test_request);
  tcase_add_test(tc, test_csv);
  tcase_add_test(tc, test_roundtrip);
  tcase_add_test(tc, test_tflite);
  tcase_add_test(tc, test_bundle);
  tcase_add_test(tc, test_share);
  tcase_add_test(tc, test_tflite_inplace);
  suite_add_tcase(s, tc);
  return s;
}

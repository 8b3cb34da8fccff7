/*
 * digest.c - SHA-256 (FIPS 180-4) and the canonical graph and options
 * digests described in digest.h.
 *
 * DESIGN
 *  The hash works on 64-byte blocks. update() first tops up a partial
 *  block in s->buf, then compresses whole blocks straight from the
 *  caller's memory, and keeps the tail for later, so large inputs are never
 *  copied. The graph digest streams one 44-byte record per tensor (52
 *  bytes in version 2, for graphs that declare an alias) through
 *  a small staging buffer, so it needs no memory proportional to the graph
 *  except the sort permutation, and none at all when the tensors already
 *  come in strictly ascending id order (the common case for graphs that a
 *  client builds from an interpreter's tensor table).
 *
 *  Whole blocks go to planner__sha256_blocks(), which uses the x86 SHA
 *  instructions where the build and the processor have them (four to
 *  six times the portable code's speed here) and the portable compress()
 *  below everywhere else.
 */
#include "digest.h"
#include "digest_int.h"

#include <stdlib.h>
#include <string.h>

/* Round constants: the first 32 bits of the fractional parts of the cube
 * roots of the first 64 primes (FIPS 180-4, 4.2.2). */
static const uint32_t K[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu,
    0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u, 0xd807aa98u, 0x12835b01u,
    0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u,
    0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu,
    0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u,
    0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u,
    0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u,
    0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u, 0x1e376c08u,
    0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu,
    0x682e6ff3u, 0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u,
    0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u};

static uint32_t rotr(uint32_t x, unsigned n)
{
  return (x >> n) | (x << (32u - n));
}

static uint32_t load_be32(const uint8_t *p)
{
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
         ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static void store_be32(uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

static void store_le64(uint8_t *p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void store_le32(uint8_t *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* The functions of FIPS 180-4, 4.1.2. Ch and Maj are written in forms
 * with one operation fewer than the standard's, and equal to them bit
 * for bit. */
#define BSIG0(x) (rotr((x), 2) ^ rotr((x), 13) ^ rotr((x), 22))
#define BSIG1(x) (rotr((x), 6) ^ rotr((x), 11) ^ rotr((x), 25))
#define SSIG0(x) (rotr((x), 7) ^ rotr((x), 18) ^ ((x) >> 3))
#define SSIG1(x) (rotr((x), 17) ^ rotr((x), 19) ^ ((x) >> 10))
#define CH(e, f, g) ((g) ^ ((e) & ((f) ^ (g))))
#define MAJ(a, b, c) (((a) & (b)) | ((c) & ((a) | (b))))

/* Round i, with the working variables named as they stand at its start.
 * Instead of shifting all eight along, the next round names them one
 * place further on: the new a is written over h and the new e over d. */
#define ROUND(a, b, c, d, e, f, g, h, i)                                      \
  do {                                                                        \
    uint32_t t1 = (h) + BSIG1(e) + CH(e, f, g) + K[i] + w[i];                 \
    (d) += t1;                                                                \
    (h) = t1 + BSIG0(a) + MAJ(a, b, c);                                       \
  } while (0)

/* Compresses one 64-byte block into the chaining value h. Eight rounds
 * per pass of the loop bring the names back to where they started. */
static void compress(uint32_t h[8], const uint8_t *block)
{
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = load_be32(block + 4 * i);
  for (int i = 16; i < 64; i++)
    w[i] = SSIG1(w[i - 2]) + w[i - 7] + SSIG0(w[i - 15]) + w[i - 16];
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
  uint32_t e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; i += 8) {
    ROUND(a, b, c, d, e, f, g, hh, i);
    ROUND(hh, a, b, c, d, e, f, g, i + 1);
    ROUND(g, hh, a, b, c, d, e, f, i + 2);
    ROUND(f, g, hh, a, b, c, d, e, i + 3);
    ROUND(e, f, g, hh, a, b, c, d, i + 4);
    ROUND(d, e, f, g, hh, a, b, c, i + 5);
    ROUND(c, d, e, f, g, hh, a, b, i + 6);
    ROUND(b, c, d, e, f, g, hh, a, i + 7);
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

/* ---- whole blocks: portable, or the x86 SHA extensions ----------------- */

/* With GCC on x86-64, the processor's SHA-256 instructions compress a
 * block four to six times as fast as the portable code, when the
 * processor has them (__builtin_cpu_supports reads what libgcc found
 * at start, so asking costs nothing). Other compilers and processors use
 * the portable code; both give the same bytes (check_digest compares
 * them). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&     \
    __GNUC__ >= 12
#define DIGEST_SHA_NI 1
#include <immintrin.h>

/* The next four message words, from the four before them (w[g & 3]
 * holds words 4g - 16 .. 4g - 13, and so on; FIPS 180-4, 6.2.2 step 1). */
__attribute__((target("sha,sse4.1"))) static __m128i
schedule(const __m128i *w, int g)
{
  __m128i x = _mm_sha256msg1_epu32(w[g & 3], w[(g - 3) & 3]);
  x = _mm_add_epi32(x, _mm_alignr_epi8(w[(g - 1) & 3], w[(g - 2) & 3], 4));
  return _mm_sha256msg2_epu32(x, w[(g - 1) & 3]);
}

/* Message words 4g .. 4g + 3 of the block at p, in host order. */
__attribute__((target("sha,sse4.1"))) static __m128i
load_words(const uint8_t *p, int g)
{
  const __m128i be =
      _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  return _mm_shuffle_epi8(_mm_loadu_si128((const void *)(p + 16 * g)), be);
}

/* Compresses n blocks into h. The instructions keep the working
 * variables as two vectors, (A, B, E, F) and (C, D, G, H) from the high
 * lane down, and run two rounds at a time. */
__attribute__((target("sha,sse4.1"))) static void
compress_sha_ni(uint32_t h[8], const uint8_t *p, size_t n)
{
  __m128i badc = _mm_shuffle_epi32(_mm_loadu_si128((const void *)h), 0xB1);
  __m128i hgfe =
      _mm_shuffle_epi32(_mm_loadu_si128((const void *)(h + 4)), 0x1B);
  __m128i abef = _mm_alignr_epi8(badc, hgfe, 8);
  __m128i cdgh = _mm_blend_epi16(hgfe, badc, 0xF0);
  for (; n > 0; n--, p += 64) {
    __m128i abef0 = abef, cdgh0 = cdgh, w[4];
    for (int g = 0; g < 16; g++) {
      w[g & 3] = g < 4 ? load_words(p, g) : schedule(w, g);
      __m128i k = _mm_loadu_si128((const void *)&K[4 * g]);
      __m128i wk = _mm_add_epi32(w[g & 3], k);
      cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
      abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
    }
    abef = _mm_add_epi32(abef, abef0);
    cdgh = _mm_add_epi32(cdgh, cdgh0);
  }
  __m128i abef_r = _mm_shuffle_epi32(abef, 0x1B); /* lanes A, B, E, F */
  __m128i cdgh_r = _mm_shuffle_epi32(cdgh, 0xB1); /* lanes G, H, C, D */
  _mm_storeu_si128((void *)h, _mm_blend_epi16(abef_r, cdgh_r, 0xF0));
  _mm_storeu_si128((void *)(h + 4), _mm_alignr_epi8(cdgh_r, abef_r, 8));
}

static int have_sha_ni(void)
{
  return __builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1");
}
#endif

int planner__sha256_blocks(uint32_t h[8], const uint8_t *blocks, size_t n,
                           int accel)
{
#ifdef DIGEST_SHA_NI
  if (accel && have_sha_ni()) {
    compress_sha_ni(h, blocks, n);
    return 1;
  }
#endif
  (void)accel;
  for (; n > 0; n--, blocks += 64)
    compress(h, blocks);
  return 0;
}

void planner_sha256_init(struct planner_sha256 *s)
{
  /* Initial hash value: fractional parts of the square roots of the first
   * eight primes (FIPS 180-4, 5.3.3). */
  static const uint32_t iv[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u,
                                 0xa54ff53au, 0x510e527fu, 0x9b05688cu,
                                 0x1f83d9abu, 0x5be0cd19u};
  memcpy(s->h, iv, sizeof iv);
  s->n_bytes = 0;
  s->buf_len = 0;
}

void planner_sha256_update(struct planner_sha256 *s, const void *data,
                           size_t len)
{
  const uint8_t *p = data;
  s->n_bytes += len;
  if (s->buf_len > 0) {
    size_t take = 64 - s->buf_len;
    if (take > len)
      take = len;
    memcpy(s->buf + s->buf_len, p, take);
    s->buf_len += take;
    p += take;
    len -= take;
    if (s->buf_len < 64)
      return;
    (void)planner__sha256_blocks(s->h, s->buf, 1, 1);
    s->buf_len = 0;
  }
  if (len >= 64) {
    (void)planner__sha256_blocks(s->h, p, len / 64, 1);
    p += len / 64 * 64;
    len %= 64;
  }
  if (len > 0) {
    memcpy(s->buf, p, len);
    s->buf_len = len;
  }
}

void planner_sha256_final(struct planner_sha256 *s,
                          uint8_t out[PLANNER_DIGEST_LEN])
{
  /* Padding: one 0x80 byte, zeros up to 56 mod 64, then the message length
   * in bits as a big-endian 64-bit number. */
  uint64_t bits = s->n_bytes * 8u;
  uint8_t pad[72];
  size_t pad_len = (s->buf_len < 56) ? 56 - s->buf_len : 120 - s->buf_len;
  memset(pad, 0, sizeof pad);
  pad[0] = 0x80;
  for (int i = 0; i < 8; i++)
    pad[pad_len + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
  uint64_t keep = s->n_bytes;
  planner_sha256_update(s, pad, pad_len + 8);
  s->n_bytes = keep;
  for (int i = 0; i < 8; i++)
    store_be32(out + 4 * i, s->h[i]);
}

void planner_sha256(const void *data, size_t len,
                    uint8_t out[PLANNER_DIGEST_LEN])
{
  struct planner_sha256 s;
  planner_sha256_init(&s);
  planner_sha256_update(&s, data, len);
  planner_sha256_final(&s, out);
}

/* ---- canonical digests --------------------------------------------------- */

#define GRAPH_TAG "arenad-graph-v1\n"
#define GRAPH_TAG_V2 "arenad-graph-v2\n" /* graphs that declare an alias */
#define OPTIONS_TAG "arenad-options-v1\n"
#define TENSOR_REC_LEN 44u /* bytes per tensor in the version 1 encoding */
#define ALIAS_REC_LEN 8u   /* bytes version 2 adds: has_alias, alias */
#define MAX_REC_LEN (TENSOR_REC_LEN + ALIAS_REC_LEN)
_Static_assert(sizeof GRAPH_TAG == sizeof GRAPH_TAG_V2,
               "a version's tag has the length of the one before");

static int cmp_u64(uint64_t a, uint64_t b)
{
  return (a > b) - (a < b);
}

static int cmp_i64(int64_t a, int64_t b)
{
  return (a > b) - (a < b);
}

/* The alias as the planner reads it: has_alias is 0 or 1, and alias
 * counts only when has_alias does. */
static uint32_t has_alias(const struct planner_tensor *t)
{
  return t->has_alias != 0;
}

static uint32_t alias_of(const struct planner_tensor *t)
{
  return t->has_alias ? t->alias : 0;
}

/* Total order on tensors: id first, then every other field, so that even
 * duplicate ids sort the same way whatever the input order. */
static int cmp_tensor(const void *pa, const void *pb)
{
  const struct planner_tensor *a = *(const struct planner_tensor *const *)pa;
  const struct planner_tensor *b = *(const struct planner_tensor *const *)pb;
  int c = cmp_u64(a->id, b->id);
  if (!c)
    c = cmp_u64(a->size, b->size);
  if (!c)
    c = cmp_i64(a->first, b->first);
  if (!c)
    c = cmp_i64(a->last, b->last);
  if (!c)
    c = cmp_u64(a->align, b->align);
  if (!c)
    c = cmp_i64(a->pinned, b->pinned);
  if (!c)
    c = cmp_u64(has_alias(a), has_alias(b));
  if (!c)
    c = cmp_u64(alias_of(a), alias_of(b));
  return c;
}

/* Writes t's record (rec_len bytes: version 1's, or version 2's with the
 * alias after it). */
static void encode_tensor(uint8_t *rec, size_t rec_len,
                          const struct planner_tensor *t)
{
  store_le32(rec, t->id);
  store_le64(rec + 4, t->size);
  store_le64(rec + 12, (uint64_t)t->first);
  store_le64(rec + 20, (uint64_t)t->last);
  store_le64(rec + 28, t->align);
  store_le64(rec + 36, (uint64_t)t->pinned);
  if (rec_len == MAX_REC_LEN) {
    store_le32(rec + 44, has_alias(t));
    store_le32(rec + 48, alias_of(t));
  }
}

/* Whether some tensor declares an alias: the graph then takes version 2. */
static int declares_alias(const struct planner_tensor *t, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (t[i].has_alias)
      return 1;
  return 0;
}

/* Returns 1 when the ids are strictly ascending, so that graph order is
 * already the canonical order and no sort is needed. */
static int ids_ascending(const struct planner_tensor *t, size_t n)
{
  for (size_t i = 1; i < n; i++)
    if (t[i - 1].id >= t[i].id)
      return 0;
  return 1;
}

/* The digest of g; with use_aliases 0, of g with every alias ignored. */
static int graph_digest(const struct planner_graph *g, int use_aliases,
                        uint8_t out[PLANNER_DIGEST_LEN])
{
  size_t n = g->n_tensors;
  const struct planner_tensor **order = NULL;
  if (n > 0 && !g->tensors) {
    memset(out, 0, PLANNER_DIGEST_LEN);
    return ARENA_EINVAL;
  }
  if (n > 1 && !ids_ascending(g->tensors, n)) {
    order = malloc(n * sizeof *order);
    if (!order) {
      memset(out, 0, PLANNER_DIGEST_LEN);
      return ARENA_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
      order[i] = &g->tensors[i];
    qsort(order, n, sizeof *order, cmp_tensor);
  }

  int v2 = use_aliases && declares_alias(g->tensors, n);
  size_t rec_len = v2 ? MAX_REC_LEN : TENSOR_REC_LEN;
  struct planner_sha256 s;
  uint8_t head[8];
  planner_sha256_init(&s);
  planner_sha256_update(&s, v2 ? GRAPH_TAG_V2 : GRAPH_TAG,
                        sizeof GRAPH_TAG - 1);
  store_le64(head, (uint64_t)n);
  planner_sha256_update(&s, head, sizeof head);

  /* Stage records in blocks of 64 tensors to keep update() calls few. */
  uint8_t stage[64 * MAX_REC_LEN];
  size_t used = 0;
  for (size_t i = 0; i < n; i++) {
    encode_tensor(stage + used, rec_len, order ? order[i] : &g->tensors[i]);
    used += rec_len;
    if (used == 64 * rec_len) {
      planner_sha256_update(&s, stage, used);
      used = 0;
    }
  }
  planner_sha256_update(&s, stage, used);
  planner_sha256_final(&s, out);
  free(order);
  return 0;
}

int planner_graph_digest(const struct planner_graph *g,
                         uint8_t out[PLANNER_DIGEST_LEN])
{
  return graph_digest(g, 1, out);
}

int planner_graph_digest_planned(const struct planner_graph *g,
                                 const struct planner_options *o,
                                 uint8_t out[PLANNER_DIGEST_LEN])
{
  return graph_digest(g, o->in_place != 0, out);
}

void planner_options_digest(const struct planner_options *o,
                            uint8_t out[PLANNER_DIGEST_LEN])
{
  uint8_t enc[sizeof OPTIONS_TAG - 1 + 4 + 8 + 8];
  size_t at = sizeof OPTIONS_TAG - 1;
  memcpy(enc, OPTIONS_TAG, at);
  store_le32(enc + at, (uint32_t)o->algo);
  store_le64(enc + at + 4, o->alignment);
  store_le64(enc + at + 12, o->capacity);
  planner_sha256(enc, sizeof enc, out);
}

char *planner_hex(const uint8_t *b, size_t n, char *out)
{
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[b[i] >> 4];
    out[2 * i + 1] = digits[b[i] & 15];
  }
  out[2 * n] = '\0';
  return out;
}

/* Returns the value of one hex digit, or -1. */
static int hexval(char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

int planner_unhex(const char *hex, uint8_t *out, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    int hi = hexval(hex[2 * i]);
    int lo = hi < 0 ? -1 : hexval(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      memset(out, 0, n);
      return ARENA_EPARSE;
    }
    out[i] = (uint8_t)(hi << 4 | lo);
  }
  if (hex[2 * n] != '\0') {
    memset(out, 0, n);
    return ARENA_EPARSE;
  }
  return 0;
}

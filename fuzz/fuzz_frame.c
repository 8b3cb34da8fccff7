/*
 * fuzz_frame.c - libFuzzer target for the frame assembler (proto/wire.h).
 * Built and run by `make fuzz`.
 *
 * The input is a byte stream plus a chunking: the first byte picks the
 * maximum frame size, the next bytes the sizes of the pieces the stream
 * is fed in. Whatever the chunking, the assembler must return exactly the
 * frames a straight reading of the stream gives, in order, with the same
 * bytes, and stop with the same error at the same place. Bodies must lie
 * inside the buffer (ASan checks every byte is read), pending bytes must
 * never exceed what was fed, and a drained reader keeps no large buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define FUZZ_N_CHUNK_SIZES 8u

/* A straight reading of the whole stream: returns the number of complete
 * frames, stores each frame's start and length, and sets *err to the
 * error the stream ends in (0 when it simply runs out). */
static size_t reference(const uint8_t *s, size_t n, size_t max_frame,
                        size_t *starts, size_t *lens, size_t cap, int *err)
{
  size_t pos = 0, k = 0;
  *err = 0;
  while (n - pos >= 4) {
    uint32_t len = (uint32_t)s[pos] << 24 | (uint32_t)s[pos + 1] << 16 |
                   (uint32_t)s[pos + 2] << 8 | (uint32_t)s[pos + 3];
    if (len == 0) {
      *err = ARENA_EPROTO;
      break;
    }
    if (len > max_frame) {
      *err = ARENA_ETOOBIG;
      break;
    }
    if (n - pos - 4 < len)
      break;
    if (k < cap) {
      starts[k] = pos + 4;
      lens[k] = len;
    }
    k++;
    pos += 4 + (size_t)len;
  }
  return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1 + FUZZ_N_CHUNK_SIZES)
    return 0;
  /* Small frame limits make both errors reachable. */
  size_t max_frame = 1 + (size_t)data[0] * 3;
  size_t chunk[FUZZ_N_CHUNK_SIZES];
  for (size_t i = 0; i < FUZZ_N_CHUNK_SIZES; i++)
    chunk[i] = 1 + data[1 + i];
  const uint8_t *s = data + 1 + FUZZ_N_CHUNK_SIZES;
  size_t n = size - 1 - FUZZ_N_CHUNK_SIZES;

  size_t cap = n / 5 + 1;
  size_t *starts = malloc(cap * sizeof *starts);
  size_t *lens = malloc(cap * sizeof *lens);
  if (!starts || !lens)
    abort();
  int want_err;
  size_t want = reference(s, n, max_frame, starts, lens, cap, &want_err);

  struct wire_reader r;
  wire_reader_init(&r, max_frame);
  size_t fed = 0, got = 0, consumed = 0, ci = 0;
  int got_err = 0;
  while (!got_err) {
    const uint8_t *body;
    size_t blen;
    int rc = wire_reader_next(&r, &body, &blen);
    if (rc == 1) {
      if (got >= want || blen != lens[got] ||
          memcmp(body, s + starts[got], blen) != 0)
        abort(); /* a frame the stream does not hold */
      consumed += 4 + blen;
      got++;
      continue;
    }
    if (rc < 0) {
      got_err = rc;
      /* An error is sticky for both calls. */
      if (wire_reader_next(&r, &body, &blen) != rc ||
          wire_reader_feed(&r, "x", 1) != rc || body || blen)
        abort();
      break;
    }
    if (rc != 0 || body || blen)
      abort();
    if (wire_reader_pending(&r) != fed - consumed)
      abort();
    if (fed == n)
      break;
    size_t take = chunk[ci++ % FUZZ_N_CHUNK_SIZES];
    if (take > n - fed)
      take = n - fed;
    if (wire_reader_feed(&r, s + fed, take) != 0)
      abort();
    fed += take;
  }
  if (got != want || got_err != want_err)
    abort(); /* chunking changed the outcome */
  /* Once everything fed has been returned, the reader keeps at most
   * WIRE_READER_KEEP_BYTES (the last call was a wire_reader_next). */
  if (!got_err && wire_reader_pending(&r) == 0 &&
      r.cap > WIRE_READER_KEEP_BYTES)
    abort();
  wire_reader_cleanup(&r);
  free(starts);
  free(lens);
  return 0;
}

/*
 * fuzz_bundle.c - libFuzzer target for reading plan bundle files
 * (proto/wire_bundle.h). Built and run by `make fuzz`; its seeds, small
 * valid bundles, are in fuzz/corpus/bundle/.
 *
 * A mutated file almost never keeps a valid SHA-256 trailer, so a fuzzer
 * that fed it as it is would test the checksum and little else. The
 * input is therefore read twice: once as it is (the magic, version,
 * length and checksum checks), and once repaired: its header's body
 * length set to what the input holds and its trailer recomputed, so that
 * every mutation of the body reaches the decoder and the checks after it.
 *
 * What must hold for every input: reading never crashes or leaks; a
 * bundle that is read has at most the limits' entries and tensors, each
 * entry shaped as wire_bundle_check_entry wants, and no unknown field
 * left anywhere; packed again into a Preload request (as `arenactl
 * preload` sends it), it unpacks again (the entries of a file that a
 * reader took are never a frame that another refuses), with the same
 * entries, and wire_bundle_scan_preload counts them without unpacking;
 * and accepting the entries again changes nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "wire.h"
#include "wire_bundle.h"

/* Small limits, so that the fuzzer reaches them with small inputs. */
#define FUZZ_MAX_ENTRIES 16u
#define FUZZ_MAX_TENSORS 64u

/* Whether m or a message inside it keeps an unknown field. */
static int has_unknown(const ProtobufCMessage *m)
{
  if (m->n_unknown_fields)
    return 1;
  const ProtobufCMessageDescriptor *d = m->descriptor;
  const char *base = (const char *)m;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (f->type != PROTOBUF_C_TYPE_MESSAGE)
      continue;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = *(const size_t *)(const void *)(base + f->quantifier_offset);
      ProtobufCMessage *const *v =
          *(ProtobufCMessage *const *const *)(const void *)(base + f->offset);
      for (size_t k = 0; k < n; k++)
        if (v[k] && has_unknown(v[k]))
          return 1;
      continue;
    }
    if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
        *(const uint32_t *)(const void *)(base + f->quantifier_offset) !=
            f->id)
      continue;
    const ProtobufCMessage *sub =
        *(ProtobufCMessage *const *)(const void *)(base + f->offset);
    if (sub && has_unknown(sub))
      return 1;
  }
  return 0;
}

/* Everything that must hold for a bundle that was read. */
static void check_read(Arenad__V1__Bundle *b,
                       const struct wire_bundle_limits *l)
{
  char err[ARENA_ERR_LEN];
  uint64_t tensors = 0;
  if (b->format_version != WIRE_BUNDLE_VERSION ||
      b->n_entries > FUZZ_MAX_ENTRIES || has_unknown(&b->base))
    abort();
  for (size_t i = 0; i < b->n_entries; i++) {
    if (wire_bundle_check_entry(b->entries[i], i, err) != 0)
      abort();
    tensors += b->entries[i]->request->n_tensor_ids;
  }
  if (tensors > FUZZ_MAX_TENSORS)
    abort();
  if (wire_bundle_accept_entries(b->entries, b->n_entries, l, err) != 0)
    abort();

  /* The entries as arenactl preload sends them. */
  Arenad__V1__Preload pl = ARENAD__V1__PRELOAD__INIT;
  pl.entries = b->entries;
  pl.n_entries = b->n_entries;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = 77;
  req.body_case = ARENAD__V1__REQUEST__BODY_PRELOAD_PLANS;
  req.preload_plans = &pl;
  uint8_t *frame;
  size_t len;
  if (wire_pack(&req.base, SIZE_MAX, &frame, &len) != 0)
    abort();
  uint64_t rid;
  size_t counted;
  if (!wire_bundle_scan_preload(frame + WIRE_HEADER_LEN,
                                len - WIRE_HEADER_LEN, &rid, &counted) ||
      rid != 77 || counted != b->n_entries)
    abort();
  Arenad__V1__Request *back = NULL;
  if (wire_unpack_request(frame + WIRE_HEADER_LEN, len - WIRE_HEADER_LEN, 0,
                          &back) != 0 ||
      back->body_case != ARENAD__V1__REQUEST__BODY_PRELOAD_PLANS ||
      back->preload_plans->n_entries != b->n_entries)
    abort();
  for (size_t i = 0; i < b->n_entries; i++) {
    const Arenad__V1__BundleEntry *x = b->entries[i];
    const Arenad__V1__BundleEntry *y = back->preload_plans->entries[i];
    if (y->request->n_tensor_ids != x->request->n_tensor_ids ||
        y->plan->n_offsets != x->plan->n_offsets ||
        (x->plan->n_offsets &&
         memcmp(y->plan->offsets, x->plan->offsets,
                x->plan->n_offsets * sizeof *x->plan->offsets) != 0))
      abort();
  }
  wire_free_request(back);
  free(frame);
}

/* Reads one file; a read bundle must pass check_read. */
static void read_one(const uint8_t *file, size_t len,
                     const struct wire_bundle_limits *l)
{
  Arenad__V1__Bundle *b = NULL;
  char err[ARENA_ERR_LEN];
  int rc = wire_bundle_read(file, len, l, &b, err);
  if (rc == 0) {
    check_read(b, l);
    wire_free_bundle(b);
  } else if (b) {
    abort(); /* a refusal leaves nothing */
  }
  /* The prefix check never refuses what the whole read takes. */
  for (size_t k = 0; k <= len && k < 64; k++)
    if (wire_bundle_check_prefix(file, k, NULL) != 0 && rc == 0)
      abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct wire_bundle_limits l = {1u << 22, FUZZ_MAX_ENTRIES,
                                 FUZZ_MAX_TENSORS};
  read_one(data, size, &l);
  if (size < WIRE_BUNDLE_FRAME_LEN)
    return 0;
  /* Repaired: the body length the input holds, a valid trailer. */
  uint8_t *f = malloc(size);
  if (!f)
    return 0;
  memcpy(f, data, size);
  uint64_t body = size - WIRE_BUNDLE_FRAME_LEN;
  for (int i = 0; i < 8; i++)
    f[12 + i] = (uint8_t)(body >> (8 * (7 - i)));
  planner_sha256(f, size - WIRE_BUNDLE_SUM_LEN, f + size - WIRE_BUNDLE_SUM_LEN);
  read_one(f, size, &l);
  free(f);
  return 0;
}

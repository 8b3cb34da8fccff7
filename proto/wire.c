/*
 * wire.c - frame assembly, packing and bounded unpacking (see wire.h).
 */
#include "wire.h"

#include <stdlib.h>
#include <string.h>

/* ---- frame assembler ---------------------------------------------------- */

void wire_reader_init(struct wire_reader *r, size_t max_frame)
{
  memset(r, 0, sizeof *r);
  r->max_frame = max_frame ? max_frame : WIRE_DEFAULT_MAX_FRAME;
}

void wire_reader_cleanup(struct wire_reader *r)
{
  free(r->buf);
  memset(r, 0, sizeof *r);
}

size_t wire_reader_pending(const struct wire_reader *r)
{
  return r->len - r->pos;
}

static uint32_t be32(const uint8_t *p)
{
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

/* Makes room for `more` bytes, first dropping consumed ones. */
static int reserve(struct wire_reader *r, size_t more)
{
  if (r->pos > 0) {
    memmove(r->buf, r->buf + r->pos, r->len - r->pos);
    r->len -= r->pos;
    r->pos = 0;
  }
  if (r->cap - r->len >= more)
    return 0;
  size_t want = r->cap ? r->cap : 4096;
  while (want - r->len < more)
    want *= 2;
  uint8_t *nb = realloc(r->buf, want);
  if (!nb)
    return ARENA_ENOMEM;
  r->buf = nb;
  r->cap = want;
  return 0;
}

int wire_reader_feed(struct wire_reader *r, const void *data, size_t len)
{
  if (r->failed)
    return r->failed;
  if (len == 0)
    return 0;
  int rc = reserve(r, len);
  if (rc)
    return rc;
  memcpy(r->buf + r->len, data, len);
  r->len += len;
  return 0;
}

int wire_reader_next(struct wire_reader *r, const uint8_t **body,
                     size_t *body_len)
{
  *body = NULL;
  *body_len = 0;
  if (r->failed)
    return r->failed;
  /* Nothing buffered: give a large buffer back, so that a connection that
   * sent one big request does not keep its memory while it idles. The
   * previous frame's view ends with this call, as documented. */
  if (r->pos == r->len && r->cap > WIRE_READER_KEEP_BYTES) {
    free(r->buf);
    r->buf = NULL;
    r->cap = r->len = r->pos = 0;
  }
  size_t avail = r->len - r->pos;
  if (avail < WIRE_HEADER_LEN)
    return 0;
  uint32_t n = be32(r->buf + r->pos);
  if (n == 0)
    return r->failed = ARENA_EPROTO;
  if (n > r->max_frame)
    return r->failed = ARENA_ETOOBIG;
  if (avail - WIRE_HEADER_LEN < n)
    return 0;
  *body = r->buf + r->pos + WIRE_HEADER_LEN;
  *body_len = n;
  r->pos += WIRE_HEADER_LEN + n;
  if (r->pos == r->len)
    r->pos = r->len = 0; /* the view stays valid: no bytes move */
  return 1;
}

/* ---- packing ------------------------------------------------------------ */

int wire_pack(const ProtobufCMessage *m, size_t max_frame, uint8_t **out,
              size_t *out_len)
{
  *out = NULL;
  *out_len = 0;
  size_t n = protobuf_c_message_get_packed_size(m);
  /* A frame may not be empty; every message arenad sends has a field. */
  if (n == 0)
    return ARENA_EINVAL;
  if (n > (max_frame ? max_frame : WIRE_DEFAULT_MAX_FRAME) || n > UINT32_MAX)
    return ARENA_ETOOBIG;
  uint8_t *buf = malloc(WIRE_HEADER_LEN + n);
  if (!buf)
    return ARENA_ENOMEM;
  buf[0] = (uint8_t)(n >> 24);
  buf[1] = (uint8_t)(n >> 16);
  buf[2] = (uint8_t)(n >> 8);
  buf[3] = (uint8_t)n;
  protobuf_c_message_pack(m, buf + WIRE_HEADER_LEN);
  *out = buf;
  *out_len = WIRE_HEADER_LEN + n;
  return 0;
}

/* Writes n as a protobuf varint (7 bits a byte, low first) at p; returns
 * the bytes written, 1 to 10. */
static size_t put_varint(uint8_t *p, uint64_t n)
{
  size_t k = 0;
  while (n >= 0x80) {
    p[k++] = (uint8_t)(n | 0x80);
    n >>= 7;
  }
  p[k++] = (uint8_t)n;
  return k;
}

int wire_frame_with_id(const uint8_t *body, size_t body_len, uint64_t id,
                       size_t max_frame, uint8_t *out, size_t *out_len)
{
  uint8_t field[WIRE_ID_FIELD_MAX];
  field[0] = 2 << 3 | 0; /* field 2 (request_id), wire type 0 (varint) */
  size_t flen = 1 + put_varint(field + 1, id);
  size_t max = max_frame ? max_frame : WIRE_DEFAULT_MAX_FRAME;
  *out_len = 0;
  if (body_len > max || flen > max - body_len ||
      body_len + flen > UINT32_MAX)
    return ARENA_ETOOBIG;
  size_t n = body_len + flen;
  out[0] = (uint8_t)(n >> 24);
  out[1] = (uint8_t)(n >> 16);
  out[2] = (uint8_t)(n >> 8);
  out[3] = (uint8_t)n;
  if (body_len)
    memcpy(out + WIRE_HEADER_LEN, body, body_len);
  memcpy(out + WIRE_HEADER_LEN + body_len, field, flen);
  *out_len = WIRE_HEADER_LEN + n;
  return 0;
}

/* ---- bounded unpacking ------------------------------------------------- */

struct budget {
  size_t used;  /* bytes handed out so far */
  size_t limit; /* cap */
  int refused;  /* set when a request went over the cap */
};

/* Each block carries its size in front, so free() can give it back. */
#define BLOCK_HDR 16u

static void *budget_alloc(void *data, size_t size)
{
  struct budget *b = data;
  if (size > b->limit || b->used > b->limit - size) {
    b->refused = 1;
    return NULL;
  }
  uint8_t *p = malloc(BLOCK_HDR + size);
  if (!p)
    return NULL;
  b->used += size;
  memcpy(p, &size, sizeof size);
  return p + BLOCK_HDR;
}

static void budget_free(void *data, void *ptr)
{
  (void)data;
  if (ptr)
    free((uint8_t *)ptr - BLOCK_HDR);
}

static int unpack(const ProtobufCMessageDescriptor *d, const uint8_t *body,
                  size_t len, size_t mem_limit, ProtobufCMessage **out)
{
  struct budget b = {0, mem_limit ? mem_limit : WIRE_DEFAULT_MEM_LIMIT, 0};
  ProtobufCAllocator a = {budget_alloc, budget_free, &b};
  *out = protobuf_c_message_unpack(d, &a, len, body);
  if (*out)
    return 0;
  return b.refused ? ARENA_ETOOBIG : ARENA_EPROTO;
}

int wire_unpack_request(const uint8_t *body, size_t len, size_t mem_limit,
                        Arenad__V1__Request **out)
{
  ProtobufCMessage *m;
  int rc = unpack(&arenad__v1__request__descriptor, body, len, mem_limit, &m);
  *out = (Arenad__V1__Request *)m;
  return rc;
}

int wire_unpack_response(const uint8_t *body, size_t len, size_t mem_limit,
                         Arenad__V1__Response **out)
{
  ProtobufCMessage *m;
  int rc =
      unpack(&arenad__v1__response__descriptor, body, len, mem_limit, &m);
  *out = (Arenad__V1__Response *)m;
  return rc;
}

int wire_unpack_bundle(const uint8_t *body, size_t len, size_t mem_limit,
                       Arenad__V1__Bundle **out)
{
  ProtobufCMessage *m;
  int rc = unpack(&arenad__v1__bundle__descriptor, body, len, mem_limit, &m);
  *out = (Arenad__V1__Bundle *)m;
  return rc;
}

/* ---- unknown fields -------------------------------------------------- */

/* Frees m's own unknown fields (allocated by budget_alloc). */
static int strip_own(ProtobufCMessage *m)
{
  for (unsigned i = 0; i < m->n_unknown_fields; i++)
    if (m->unknown_fields[i].tag == 0)
      return ARENA_ECORRUPT;
  for (unsigned i = 0; i < m->n_unknown_fields; i++)
    budget_free(NULL, m->unknown_fields[i].data);
  budget_free(NULL, m->unknown_fields);
  m->unknown_fields = NULL;
  m->n_unknown_fields = 0;
  return 0;
}

int wire_strip_unknown(ProtobufCMessage *m)
{
  int rc = strip_own(m);
  const ProtobufCMessageDescriptor *d = m->descriptor;
  char *base = (char *)m;
  for (unsigned i = 0; rc == 0 && i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (f->type != PROTOBUF_C_TYPE_MESSAGE)
      continue;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = *(const size_t *)(const void *)(base + f->quantifier_offset);
      ProtobufCMessage **v = *(ProtobufCMessage ***)(void *)(base + f->offset);
      for (size_t k = 0; rc == 0 && k < n; k++)
        if (v[k])
          rc = wire_strip_unknown(v[k]);
      continue;
    }
    /* A message in a oneof is there only when the case names it. */
    if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
        *(const uint32_t *)(const void *)(base + f->quantifier_offset) !=
            f->id)
      continue;
    ProtobufCMessage *sub = *(ProtobufCMessage **)(void *)(base + f->offset);
    if (sub)
      rc = wire_strip_unknown(sub);
  }
  return rc;
}

/* Freeing needs no budget: budget_free ignores its data pointer. */
static void free_message(ProtobufCMessage *m)
{
  ProtobufCAllocator a = {budget_alloc, budget_free, NULL};
  if (m)
    protobuf_c_message_free_unpacked(m, &a);
}

void wire_free_request(Arenad__V1__Request *m)
{
  free_message(m ? &m->base : NULL);
}

void wire_free_response(Arenad__V1__Response *m)
{
  free_message(m ? &m->base : NULL);
}

void wire_free_bundle(Arenad__V1__Bundle *m)
{
  free_message(m ? &m->base : NULL);
}

const char *wire_status_name(Arenad__V1__Status s)
{
  const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
      &arenad__v1__status__descriptor, (int)s);
  return v ? v->name : "UNKNOWN";
}

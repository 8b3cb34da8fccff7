/*
 * wire.h - arenad's framing and message codec, shared by the daemon and
 * the client library.
 *
 * FRAMES
 *  A frame is a 4-byte big-endian length L, then L bytes of one protobuf
 *  message (arenad.v1.Request or arenad.v1.Response). L = 0 and
 *  L > max_frame are protocol errors, detected from the 4 header bytes
 *  alone, before anything is allocated for the body.
 *
 * MEMORY
 *  A wire_reader grows its buffer only as bytes actually arrive, never to
 *  an announced length, so a peer that announces 16 MiB and sends nothing
 *  costs nothing. Once every buffered byte has been returned as frames, the
 *  next wire_reader_next frees a buffer larger than WIRE_READER_KEEP_BYTES,
 *  so an idle connection holds no more than that. Unpacking goes through
 *  a counting allocator that fails once a message needs more than
 *  `mem_limit` bytes of decoded structures (packed varints can expand up
 *  to 8x).
 *
 * OWNERSHIP
 *  Messages returned by wire_unpack_* are owned by the caller and freed
 *  with wire_free_request / wire_free_response. Buffers returned by
 *  wire_pack are owned by the caller and freed with free().
 */
#ifndef ARENA_WIRE_H
#define ARENA_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "arena_error.h"
#include "arenad.pb-c.h"

#define WIRE_PROTOCOL_VERSION 1u
#define WIRE_HEADER_LEN 4u
#define WIRE_DEFAULT_MAX_FRAME (16u << 20) /* bytes */
#define WIRE_DEFAULT_MEM_LIMIT (256ull << 20)    /* bytes per message */
#define WIRE_READER_KEEP_BYTES (64u << 10) /* kept by an idle reader */
#define WIRE_MAX_PLACEMENT 4096u /* bytes in a placement record (Attach,
                                    BundleEntry) */

/* Incremental frame assembler for one byte stream. Caller-allocated;
 * wire_reader_init / wire_reader_cleanup. */
struct wire_reader {
  uint8_t *buf;     /* owned bytes received and not yet consumed */
  size_t len;       /* valid bytes in buf */
  size_t pos;       /* start of the next unconsumed frame in buf */
  size_t cap;       /* allocated bytes */
  size_t max_frame; /* largest body accepted, bytes */
  int failed;       /* sticky: an error was reported */
};

void wire_reader_init(struct wire_reader *r, size_t max_frame);
void wire_reader_cleanup(struct wire_reader *r);

/* Appends len bytes (copied). Returns 0, ARENA_ENOMEM, or the sticky
 * error of an earlier wire_reader_next. */
int wire_reader_feed(struct wire_reader *r, const void *data, size_t len);

/* Takes the next complete frame. Returns 1 and sets *body and *body_len (a
 * view into r, valid until the next feed or next call) when one is ready,
 * 0 when more bytes are needed, ARENA_EPROTO for a zero length or
 * ARENA_ETOOBIG for a length over max_frame. Errors are sticky. */
int wire_reader_next(struct wire_reader *r, const uint8_t **body,
                     size_t *body_len);

/* Bytes buffered but not yet returned as frames. */
size_t wire_reader_pending(const struct wire_reader *r);

/* Serialises m with its length prefix. On success *out is owned (free())
 * and *out_len = 4 + body. Returns 0, ARENA_ETOOBIG (body over
 * max_frame) or ARENA_ENOMEM; on failure *out is NULL. */
int wire_pack(const ProtobufCMessage *m, size_t max_frame, uint8_t **out,
              size_t *out_len);

/* The most bytes the request id field takes at the end of a frame made
 * by wire_frame_with_id: its tag byte and a varint of up to 10 bytes. */
#define WIRE_ID_FIELD_MAX 11u

/* Writes into out the frame of a Request given as body (body_len bytes,
 * packed with request_id 0, which proto3 leaves out) followed by the
 * field request_id = id: the 4-byte length, the body, then tag byte 0x10
 * (field 2, varint) and id as a varint. Protobuf parsers take fields in
 * any order, so the frame decodes as that Request with its request id
 * set, and a caller can pack a request once and send it many times under
 * new ids. out is caller-allocated with room for WIRE_HEADER_LEN +
 * body_len + WIRE_ID_FIELD_MAX bytes and must not overlap body, which is
 * borrowed. Returns 0 and sets *out_len to the frame's length, or
 * ARENA_ETOOBIG (the body with the id field over max_frame, 0 meaning
 * WIRE_DEFAULT_MAX_FRAME) with *out_len 0 and nothing written. */
int wire_frame_with_id(const uint8_t *body, size_t body_len, uint64_t id,
                       size_t max_frame, uint8_t *out, size_t *out_len);

/* Unpacks one frame body. Returns 0 and an owned message, ARENA_EPROTO
 * (not a valid message) or ARENA_ETOOBIG (decoded size over mem_limit).
 * On failure *out is NULL. */
int wire_unpack_request(const uint8_t *body, size_t len, size_t mem_limit,
                        Arenad__V1__Request **out);
int wire_unpack_response(const uint8_t *body, size_t len, size_t mem_limit,
                         Arenad__V1__Response **out);

/* Unpacks the body of a plan bundle file (one Bundle message, which never
 * travels in a frame) with the same bounded allocator. Same returns as
 * wire_unpack_request. The file format around it (magic, version,
 * length, checksum) is the reader's business (docs/bundles.md). */
int wire_unpack_bundle(const uint8_t *body, size_t len, size_t mem_limit,
                       Arenad__V1__Bundle **out);

/* Frees the unknown fields that protobuf-c kept in m (from
 * wire_unpack_*) and in every message inside it, so that m packs again
 * into bytes any reader takes: fields of a newer peer, which this code
 * does not read anyway. Returns 0, or ARENA_ECORRUPT when one of them is
 * numbered 0, which no protobuf message has (protobuf-c keeps such a
 * field from a two-byte tag like 80 00, then packs it as a tag that it
 * refuses to read back); m may then be partly stripped, and is still
 * freed with its wire_free_* call. */
int wire_strip_unknown(ProtobufCMessage *m);

/* Free what wire_unpack_* returned. Accept NULL. */
void wire_free_request(Arenad__V1__Request *m);
void wire_free_response(Arenad__V1__Response *m);
void wire_free_bundle(Arenad__V1__Bundle *m);

/* Returns the name of a status ("OK", "BUSY", ...). */
const char *wire_status_name(Arenad__V1__Status s);

#endif

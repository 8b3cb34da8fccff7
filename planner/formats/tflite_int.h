/*
 * tflite_int.h - the bounds-checked FlatBuffers primitives shared by the
 * TFLite reader (tflite.c) and the offline-plan writer (tflite_embed.c).
 * Private to planner/formats/.
 *
 * Every primitive checks the bytes it is about to read against the buffer
 * (using 64-bit arithmetic, so no sum can wrap), writes a message naming
 * `what` into the reader's error text on failure, and returns 0 or a
 * negative ARENA_E* code. Vector fetches count their elements against a
 * work cap; everything else the reader does is proportional to those
 * counts, so the cap bounds the total work.
 */
#ifndef ARENA_TFLITE_INT_H
#define ARENA_TFLITE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "tflite.h"

/* Field ids of the schema tables (a union takes two ids). */
enum {
  TFL_MODEL_VERSION = 0,
  TFL_MODEL_OPCODES = 1,
  TFL_MODEL_SUBGRAPHS = 2,
  TFL_MODEL_DESCRIPTION = 3,
  TFL_MODEL_BUFFERS = 4,
  TFL_MODEL_METADATA_BUFFER = 5,
  TFL_MODEL_METADATA = 6,
  TFL_MODEL__FIELDS = 10, /* the schema's Model has ids 0 .. 9 */
  TFL_SG_TENSORS = 0,
  TFL_SG_INPUTS = 1,
  TFL_SG_OUTPUTS = 2,
  TFL_SG_OPERATORS = 3,
  TFL_OP_OPCODE = 0,
  TFL_OP_INPUTS = 1,
  TFL_OP_OUTPUTS = 2,
  TFL_OP_INTERMEDIATES = 8,
  TFL_T_SHAPE = 0,
  TFL_T_TYPE = 1,
  TFL_T_BUFFER = 2,
  TFL_T_NAME = 3,
  TFL_T_IS_VARIABLE = 5,
  TFL_T_SHAPE_SIGNATURE = 7,
  TFL_BUF_DATA = 0,
  TFL_BUF_OFFSET = 1,
  TFL_OC_DEPRECATED = 0,
  TFL_OC_BUILTIN = 3,
  TFL_MD_NAME = 0,
  TFL_MD_BUFFER = 1,
};

#define TFL_OP_DEQUANTIZE 6
#define TFL_OP_CUSTOM 32

/* The file being read. */
struct tfl__buf {
  const uint8_t *b;  /* the bytes, borrowed */
  size_t len;        /* bytes at b, <= PLANNER_TFLITE_MAX_LEN */
  uint64_t work;     /* vector elements fetched so far */
  uint64_t work_cap; /* limit on work */
  char *err;         /* ARENA_ERR_LEN bytes or NULL */
};

/* A table whose header and vtable have been checked. */
struct tfl__table {
  size_t pos;       /* table start (the soffset to its vtable) */
  size_t vt;        /* vtable start */
  uint16_t vt_len;  /* vtable bytes, >= 4, even */
  uint16_t tab_len; /* table bytes, >= 4 */
};

/* A vector whose bytes all lie inside the file. */
struct tfl__vec {
  size_t pos; /* first element */
  uint32_t n; /* element count */
};

int tfl__fail(struct tfl__buf *f, int code, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
uint32_t tfl__rd32(const uint8_t *p);
uint16_t tfl__rd16(const uint8_t *p);
uint64_t tfl__rd64(const uint8_t *p);
void tfl__wr32(uint8_t *p, uint32_t v);
void tfl__wr16(uint8_t *p, uint16_t v);

/* Checks the 8-byte header and opens the root Model table. */
int tfl__root(struct tfl__buf *f, struct tfl__table *model);
/* Opens the table at pos. */
int tfl__table_at(struct tfl__buf *f, size_t pos, const char *what,
                  struct tfl__table *t);
/* Byte offset of field id inside t, or 0 when absent. Fails when the
 * field's size bytes do not fit inside the table. */
int tfl__slot(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
              size_t size, const char *what, size_t *slot);
int tfl__u8(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
            uint8_t def, const char *what, uint8_t *v);
int tfl__u32(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
             uint32_t def, const char *what, uint32_t *v);
int tfl__u64(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
             uint64_t def, const char *what, uint64_t *v);
/* Follows the reference field id; *target = 0 when absent. */
int tfl__ref(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
             const char *what, size_t *target);
/* Opens the vector the reference field id points to (n = 0 when absent),
 * checking that n * elem_size bytes fit and counting n as work. */
int tfl__vector(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
                size_t elem_size, const char *what, struct tfl__vec *v);
/* Opens the table that element j of a vector of tables points to. */
int tfl__vec_table(struct tfl__buf *f, const struct tfl__vec *v, uint32_t j,
                   const char *what, struct tfl__table *t);
/* Element j of a checked vector of 4-byte values. */
int32_t tfl__vec_i32(const struct tfl__buf *f, const struct tfl__vec *v,
                     uint32_t j);
/* Copies the string field id into out (cap bytes, NUL-terminated,
 * truncated); "" when absent. *full_len gets the stored length. */
int tfl__string(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
                const char *what, char *out, size_t cap, size_t *full_len);

#endif /* ARENA_TFLITE_INT_H */

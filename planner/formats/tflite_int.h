/*
 * tflite_int.h - the bounds-checked FlatBuffers primitives shared by the
 * TFLite reader (tflite.c) and the offline-plan writer (tflite_embed.c),
 * and what the reader hands to its in-place pairing (tflite_inplace.c).
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

/* What the reader learns about one tensor of subgraph 0. */
struct tfl__tinfo {
  size_t pos;         /* table position, to fetch the name later */
  int64_t first;      /* first operator naming it, -1 = none yet */
  int64_t last;       /* last operator naming it, -1 = none yet */
  uint64_t size;      /* bytes */
  uint8_t type;       /* TensorType */
  uint8_t bits;       /* bits per element, 0 = no static size */
  uint8_t is_const;   /* 1: backed by a buffer with data */
  uint8_t variable;   /* 1: is_variable */
  uint8_t persistent; /* 1: output of DEQUANTIZE-of-constant */
  uint8_t sized;      /* 1: size is known (not a string/resource/variant) */
  uint8_t io;         /* 1: a graph input or output of subgraph 0 */
  uint64_t elems;     /* elements of its shape (UINT64_MAX on overflow) */
  uint32_t rank;      /* dims of its shape */
  int32_t dim0;       /* its first dim, 0 for a scalar */
  uint32_t row;       /* 1 + its row in the planned tensors; 0 = not planned */
};

/* One operator of subgraph 0: its builtin code and its tensor lists,
 * whose indexes the reader has checked. */
struct tfl__op {
  int32_t code;     /* effective builtin code */
  struct tfl__vec in;  /* inputs (-1 = an absent optional input) */
  struct tfl__vec out; /* outputs */
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
/* tflite_inplace.c: gives each output of an operator on the in-place
 * allowlist the input whose bytes it may reuse (tflite.h, IN-PLACE
 * PAIRS): sets has_alias and alias in planned (the planned tensors, into
 * which t[i].row points) and returns the number of pairs. ops has n_ops
 * entries whose tensor indexes all name entries of t. */
size_t tfl__inplace_pairs(const struct tfl__buf *f, const struct tfl__op *ops,
                          uint32_t n_ops, const struct tfl__tinfo *t,
                          struct planner_tensor *planned);

/* Copies the string field id into out (cap bytes, NUL-terminated,
 * truncated); "" when absent. *full_len gets the stored length. */
int tfl__string(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
                const char *what, char *out, size_t cap, size_t *full_len);

#endif /* ARENA_TFLITE_INT_H */

/*
 * tflite.h - TensorFlow Lite models (.tflite FlatBuffers) in, lifetime
 * graphs out; and offline plans written back into a model.
 *
 * Part of planner/formats/ (CSV, .tflite and digests), which uses only
 * planner/core/ and libc; nothing else in planner/ uses it.
 *
 * The reader is hand-written for the TFLite schema and works on a memory
 * buffer only (no I/O, no globals, nothing beyond libc). It trusts nothing
 * in the file: every offset, vtable, table size and vector length is
 * checked against the buffer before a byte is read, offsets that point at
 * themselves are rejected, and the total number of vector elements it
 * visits is capped (PLANNER_TFLITE_WORK_PER_BYTE times the file size), so
 * a hostile file that makes many tables share one huge vector cannot make
 * it loop for long. A bad file gives ARENA_EPARSE (or another code below)
 * and a message naming the object, never an out-of-bounds read.
 *
 * LIFETIME RULES (as the TFLite interpreter applies them)
 *  Only subgraph 0 is planned; the others are counted. Operators run in
 *  the order they are stored.
 *  - Constant tensors (buffer index > 0 whose buffer has data, or an
 *    out-of-file offset > 1) live in the model, not the arena: skipped.
 *  - A tensor lives from the first to the last operator that names it as
 *    an input, output or intermediate; an input index of -1 is an absent
 *    optional input and is skipped. Graph inputs start at operator 0,
 *    graph outputs end at the last operator, variable tensors span the
 *    whole run. A non-constant tensor that nothing names is not planned.
 *  - Outputs of a DEQUANTIZE whose input is constant are computed once and
 *    kept (persistent): left out unless keep_dequant is set.
 *  - Size = product of the shape times the element size; packed types
 *    (INT4, UINT4, INT2) are rounded up to whole bytes. Size-0 tensors are
 *    kept. STRING, RESOURCE and VARIANT tensors have no static size: they
 *    are counted as not plannable and left out.
 *  - A -1 in shape_signature is a dynamic dimension. Sizes come from
 *    `shape` unless options->batch is set, which replaces dimension 0 of
 *    every tensor whose signature is dynamic in dimension 0 only; a model
 *    with any other dynamic dimension then gives ARENA_EUNSUPPORTED.
 *
 * IN-PLACE PAIRS
 *  Unless options->no_in_place is set, the reader declares in-place
 *  aliases (planner.h, IN-PLACE SHARING) from an allowlist of kernels
 *  that read element i of an input before they write element i of their
 *  output, kept in tflite_inplace.c with the reason for each: ADD, SUB,
 *  MUL, PRELU, the activations RELU, RELU6, LEAKY_RELU, LOGISTIC, TANH,
 *  HARD_SWISH and ELU, QUANTIZE and DEQUANTIZE, and the reshapes
 *  RESHAPE, SQUEEZE and EXPAND_DIMS. For
 *  such an operator k with one output o, o gets has_alias = 1 and alias
 *  = the tensor index of its first input x (absent optional inputs
 *  skipped) such that
 *    - o is planned, non-empty, first written at k, and not an input of k;
 *    - x is planned, first used before k and last used at k;
 *    - x and o have the same element width and the same size in bytes;
 *    - neither is a graph input or output, a variable, or a
 *      DEQUANTIZE-of-constant output (kept by TFLite between runs).
 *  Every other operator (CONV_2D, CONCATENATION, SOFTMAX, ...) gets none.
 *  model->n_aliases counts the pairs; model->op_codes names each
 *  operator's builtin code, planner_tflite_inplace_op() its name when it
 *  is on the allowlist.
 *
 * TFLM SCRATCH
 *  With options->tflm_scratch the reader also lists the scratch buffers
 *  that TensorFlow Lite Micro's reference kernels (at the bundled commit
 *  90b983c2) request from the arena head while preparing an operator,
 *  where the model's shapes and types determine them; each lives during
 *  its operator only, and they come in TFLM's request order:
 *    SVDF                 4 * batch * num_filters bytes, and for an INT8
 *                         input also 4 * batch * num_units
 *    UNIDIRECTIONAL_SEQUENCE_LSTM  four of batch * state bytes times the
 *                         cell state's element size (input 18 holds
 *                         batch * state elements, input 19 is the cell
 *                         state)
 *    MEAN, SUM            for an INT8 or INT16 input 4 * output elements,
 *                         then 4 * input rank and 4 * axis elements
 *  Optimised kernel libraries (CMSIS-NN, Xtensa, ...) request other
 *  buffers, and other operators' requests are not modelled.
 *
 * OFFLINE PLANS
 *  planner_tflite_embed() adds a TFLite Micro "OfflineMemoryAllocation"
 *  metadata entry; see its comment for the layout it writes.
 */
#ifndef ARENA_TFLITE_H
#define ARENA_TFLITE_H

#include <stddef.h>
#include <stdint.h>

#include "arena_error.h"
#include "planner.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define PLANNER_TFLITE_WUR __attribute__((warn_unused_result))
#else
#define PLANNER_TFLITE_WUR
#endif

#define PLANNER_TFLITE_MAX_DIMS 8u        /* dims kept per input/output */
#define PLANNER_TFLITE_NAME_LEN 96u       /* bytes kept of a name, with NUL */
#define PLANNER_TFLITE_WORK_PER_BYTE 8u   /* element visits allowed per byte */
#define PLANNER_TFLITE_MAX_LEN 0x7fffffffu /* FlatBuffers limit: 2 GiB - 1 */
#define PLANNER_TFLITE_OFFLINE_NAME "OfflineMemoryAllocation"

/* TensorType values of the schema that the reader names. */
enum planner_tflite_type {
  PLANNER_TFLITE_STRING = 5,
  PLANNER_TFLITE_RESOURCE = 13,
  PLANNER_TFLITE_VARIANT = 14,
  PLANNER_TFLITE_TYPE__COUNT = 23 /* types this reader knows: 0 .. 22 */
};

/* Options for planner_tflite_read(). Zero-initialise, then set. */
struct planner_tflite_options {
  int keep_dequant; /* 1: plan outputs of DEQUANTIZE-of-constant too */
  uint64_t batch;   /* > 0: size dynamic batch dimensions with this */
  int skip_variable; /* 1: leave variable tensors out (TFLite Micro keeps
                        them in its persistent tail, not the planned head) */
  int tflm_scratch;  /* 1: list the kernel scratch buffers TFLite Micro's
                        reference kernels request (see TFLM SCRATCH) */
  int no_in_place;   /* 1: declare no in-place aliases; 0 (the default):
                        declare those of IN-PLACE PAIRS */
};

/* One graph input or output of subgraph 0. */
struct planner_tflite_io {
  int32_t tensor;                        /* tensor index in subgraph 0 */
  uint32_t rank;                         /* number of dims (may exceed the kept ones) */
  int32_t dims[PLANNER_TFLITE_MAX_DIMS]; /* `shape`, first min(rank, MAX) */
  int32_t sig[PLANNER_TFLITE_MAX_DIMS];  /* `shape_signature` (= dims when absent) */
  int type;                              /* TensorType value */
  int dynamic;                           /* 1 when some sig dim is -1 */
  char name[PLANNER_TFLITE_NAME_LEN];    /* tensor name, truncated */
};

/* What planner_tflite_read() found. Caller-allocated; arrays are owned. */
struct planner_tflite_model {
  uint32_t version;              /* Model.version */
  uint32_t n_subgraphs;          /* >= 1 */
  uint64_t n_tensors_all;        /* tensors over all subgraphs */
  uint32_t n_ops;                /* operators of subgraph 0 */
  uint32_t n_tensors;            /* tensors of subgraph 0 */
  struct planner_tensor *tensors; /* planned tensors, n_planned, owned; id = tensor index */
  char **names;                  /* n_planned tensor names, owned */
  size_t n_planned;              /* entries in tensors and names */
  struct planner_tflite_io *inputs;  /* n_inputs entries, owned */
  struct planner_tflite_io *outputs; /* n_outputs entries, owned */
  size_t n_inputs, n_outputs;    /* graph inputs/outputs of subgraph 0 */
  uint32_t n_const;              /* constant tensors (not planned) */
  uint32_t n_persistent;         /* DEQUANTIZE-of-constant outputs left out */
  uint64_t persistent_bytes;     /* their total size */
  uint32_t n_unplannable;        /* STRING/RESOURCE/VARIANT tensors */
  uint32_t n_unused;             /* non-constant tensors no operator names */
  uint32_t n_variable;           /* variable tensors (planned unless skip_variable) */
  uint32_t n_custom_ops;         /* operators whose code is CUSTOM */
  int dynamic;                   /* 1 when some tensor has a -1 in its signature */
  int batch_applied;             /* 1 when options->batch resized tensors */
  int has_offline_plan;          /* 1 when OfflineMemoryAllocation exists */
  struct planner_tensor *scratch; /* with tflm_scratch: n_scratch kernel
                                     scratch buffers, owned; id =
                                     n_tensors_all + index, first = last =
                                     the operator */
  size_t n_scratch;              /* entries in scratch */
  uint64_t scratch_bytes;        /* their total size */
  int32_t *op_codes;             /* n_ops builtin codes of subgraph 0's
                                    operators, in order, owned */
  size_t n_aliases;              /* planned tensors given an alias (see
                                    IN-PLACE PAIRS) */
  uint8_t sha256[32];            /* SHA-256 of the whole file */
};

/* Returns 1 when len bytes at buf (borrowed) start like a TFLite model:
 * at least 8 bytes with the identifier "TFL3" at bytes 4..7. */
int planner_tflite_is_model(const void *buf, size_t len);

/* Sets m to an empty model that planner_tflite_cleanup() accepts. */
void planner_tflite_init(struct planner_tflite_model *m);

/* Frees what m owns and leaves it empty. Accepts NULL. */
void planner_tflite_cleanup(struct planner_tflite_model *m);

/* Parses len bytes at buf (borrowed; any bytes) as a TFLite model and
 * builds the lifetime graph of subgraph 0 (see LIFETIME RULES). o may be
 * NULL for the defaults. On success fills *out (planner_tflite_init()ed;
 * old contents are freed). Returns 0, or
 *   ARENA_EPARSE       not a TFLite FlatBuffer, or a structural error: an
 *                      offset, table or vector outside the file, an offset
 *                      that points at itself, an index out of range;
 *   ARENA_EEMPTY       no subgraphs, or subgraph 0 plans no tensor;
 *   ARENA_ETOOBIG      the file exceeds 2 GiB or the work cap;
 *   ARENA_EOVERFLOW    a tensor size beyond 64 bits;
 *   ARENA_EUNSUPPORTED options->batch with a dynamic non-batch dimension;
 *   ARENA_ENOMEM, ARENA_EINVAL (NULL out, or NULL buf with len > 0).
 * err (may be NULL) names the offending object. On failure *out is empty. */
PLANNER_TFLITE_WUR int planner_tflite_read(const void *buf, size_t len,
                                           const struct planner_tflite_options *o,
                                           struct planner_tflite_model *out,
                                           char err[ARENA_ERR_LEN]);

/* Returns a graph that borrows m's planned tensors. */
struct planner_graph planner_tflite_graph(const struct planner_tflite_model *m);

/* Returns the schema name of a TensorType ("FLOAT32", "INT4", ...) or
 * "?" for an unknown value. */
const char *planner_tflite_type_name(int type);

/* Returns the schema name of a builtin operator on the in-place allowlist
 * ("ADD", "RELU6", ...; see IN-PLACE PAIRS), or NULL for any other code. */
const char *planner_tflite_inplace_op(int32_t code);

/* Writes a copy of the model at buf (len bytes, borrowed) with an
 * OfflineMemoryAllocation metadata entry whose buffer holds the int32 LE
 * words [1, 0, n, offsets[0], ..., offsets[n-1]]; n must equal the tensor
 * count over all subgraphs, and -1 marks a tensor the runtime plans
 * itself. An existing entry of that name is replaced.
 *
 * LAYOUT
 *  FlatBuffers references are unsigned and point forward, so a new root
 *  table at the end of the file could not reach the old vectors. The
 *  output is therefore: an 8-byte header (root offset, "TFL3"), a new
 *  block B of K bytes (a multiple of 64) holding the new Model table, its
 *  vtable, new buffers and metadata vectors (old elements re-pointed at
 *  the old tables, plus one new Buffer and Metadata), the plan words and
 *  the name string, then bytes 8.. of the original file, unchanged. All
 *  references inside the original bytes are relative, so they stay valid;
 *  K keeps every original alignment (up to 64). The original Model table
 *  stays in the file, unreferenced. Models whose buffers use out-of-file
 *  offsets (> 2 GiB models) are refused with ARENA_EUNSUPPORTED, since
 *  their absolute offsets would move.
 *
 * On success *out is owned by the caller (free with free()) and *out_len
 * is its length. Returns 0, any planner_tflite_read() parse code,
 * ARENA_EINVAL (n does not match), ARENA_EUNSUPPORTED, ARENA_ETOOBIG (the
 * result would pass 2 GiB) or ARENA_ENOMEM; on failure *out is NULL and
 * *out_len 0. */
PLANNER_TFLITE_WUR int planner_tflite_embed(const void *buf, size_t len,
                                            const int32_t *offsets, size_t n,
                                            uint8_t **out, size_t *out_len,
                                            char err[ARENA_ERR_LEN]);

/* Finds the OfflineMemoryAllocation entry of the model at buf and copies
 * its words after the 3-word header. On success *offsets (owned, free()
 * with free(); NULL when *n is 0) holds *n offsets. Returns 0,
 * ARENA_ENOENT (no such entry), ARENA_EPARSE (bad model or an entry
 * shorter than its header says), ARENA_ENOMEM. */
PLANNER_TFLITE_WUR int planner_tflite_offline_plan(const void *buf, size_t len,
                                                   int32_t **offsets, size_t *n,
                                                   char err[ARENA_ERR_LEN]);

#ifdef __cplusplus
}
#endif

#endif /* ARENA_TFLITE_H */

/*
 * tflite_inplace.c - which outputs of a TFLite model may be written over
 * one of their operator's inputs (tflite.h, IN-PLACE PAIRS): the
 * allowlist of kernels, and the pairs the reader declares from it.
 * Private to planner/formats/; the reader (tflite.c) calls it once the
 * planned tensors are known.
 *
 * The planner checks that a declared pair can share (planner.h, IN-PLACE
 * SHARING), but not that the kernel tolerates it: that is this file's
 * knowledge. A kernel may write its output over an input only when, for
 * every i, it reads element i of that input before it writes element i
 * of the output and reads no other element of that input afterwards; a
 * convolution, a pooling, a concatenation, a softmax or a transpose
 * reads other elements after writing some, so writing over its input
 * would change what it reads. Anything not listed gets no pair.
 */
#include "tflite_int.h"

/* One kernel of the allowlist. */
struct inplace_kernel {
  int32_t code;     /* BuiltinOperator value (schema.fbs) */
  const char *name; /* its name in the schema */
};

/* The allowlist, the only place it is kept. Every kind on it is proven
 * in TFLite Micro by tests/check_tflm_share.cc (outputs bit-identical
 * with each pair sharing); a kernel that cannot be proven there is left
 * off, however elementwise it looks. In every entry the output
 * has the shape of the input that shares, and the pair is declared only
 * when both have the same element width and byte size, so element i of
 * one lies on element i of the other. */
static const struct inplace_kernel allowlist[] = {
    /* Elementwise binary: out[i] = in1[i] op in2[j]. The input that
     * shares has the output's size, so it is not the broadcast one: it
     * is read at i only, for out[i]; the other input is never written. */
    {0, "ADD"},
    {41, "SUB"},
    {18, "MUL"},
    /* PRELU: out[i] = in[i] >= 0 ? in[i] : in[i] * alpha[j]. Elementwise
     * in its first input; alpha is broadcast, and when alpha is the one
     * of the output's size it too is read at i only. */
    {54, "PRELU"},
    /* Elementwise unary activations: out[i] = f(in[i]), computed or (for
     * quantized types) looked up in a table built at prepare time. */
    {19, "RELU"},
    {21, "RELU6"},
    {98, "LEAKY_RELU"},
    {14, "LOGISTIC"},
    {28, "TANH"},
    {117, "HARD_SWISH"},
    {111, "ELU"},
    /* Conversions: out[i] = convert(in[i]). Declared only between equal
     * element widths (a requantization, int8 to int8 or int16 to int16),
     * never where the output grows, as float16 to float32 does. */
    {114, "QUANTIZE"},
    {6, "DEQUANTIZE"},
    /* Reshapes: the same bytes under another shape, out[i] = in[i].
     * TFLite Micro's RESHAPE skips its copy when the two buffers are one,
     * EXPAND_DIMS copies element by element, SQUEEZE copies the bytes
     * onto themselves, which changes none of them. */
    {22, "RESHAPE"},
    {43, "SQUEEZE"},
    {70, "EXPAND_DIMS"},
};

const char *planner_tflite_inplace_op(int32_t code)
{
  for (size_t i = 0; i < sizeof allowlist / sizeof allowlist[0]; i++)
    if (allowlist[i].code == code)
      return allowlist[i].name;
  return NULL;
}

/* Whether t may be one side of a pair: planned, and none of a graph
 * input or output (the caller's buffers, read or written around the
 * run), a variable (kept from one run to the next) or a DEQUANTIZE-of-
 * constant output (TFLite computes it once and keeps it). */
static int shareable(const struct tfl__tinfo *t)
{
  return t->row && !t->io && !t->variable && !t->persistent;
}

/* The tensor index at entry j of a checked list, or -1 when absent. */
static int32_t entry(const struct tfl__buf *f, const struct tfl__vec *v,
                     uint32_t j)
{
  return j < v->n ? tfl__vec_i32(f, v, j) : -1;
}

/* Whether tensor index x appears in the list v. */
static int listed(const struct tfl__buf *f, const struct tfl__vec *v,
                  int32_t x)
{
  for (uint32_t j = 0; j < v->n; j++)
    if (tfl__vec_i32(f, v, j) == x)
      return 1;
  return 0;
}

/* The one output of operator k when it may be written over an input:
 * shareable, non-empty, first written at k, and not also an input of k.
 * Returns its index or -1. */
static int32_t fresh_output(const struct tfl__buf *f, const struct tfl__op *op,
                            int64_t k, const struct tfl__tinfo *t)
{
  if (op->out.n != 1)
    return -1;
  int32_t o = entry(f, &op->out, 0);
  if (o < 0 || !shareable(&t[o]) || !t[o].size || t[o].first != k ||
      listed(f, &op->in, o))
    return -1;
  return o;
}

/* The first input of operator k whose bytes output o may reuse:
 * shareable, written before k and last used at k, with o's element
 * width and size. Returns its index or -1. */
static int32_t spent_input(const struct tfl__buf *f, const struct tfl__op *op,
                           int64_t k, const struct tfl__tinfo *t, int32_t o)
{
  for (uint32_t j = 0; j < op->in.n; j++) {
    int32_t x = entry(f, &op->in, j);
    if (x < 0)
      continue; /* an absent optional input */
    const struct tfl__tinfo *in = &t[x];
    if (shareable(in) && in->first < k && in->last == k &&
        in->bits == t[o].bits && in->size == t[o].size)
      return x;
  }
  return -1;
}

size_t tfl__inplace_pairs(const struct tfl__buf *f, const struct tfl__op *ops,
                          uint32_t n_ops, const struct tfl__tinfo *t,
                          struct planner_tensor *planned)
{
  size_t n = 0;
  for (uint32_t k = 0; k < n_ops; k++) {
    if (!planner_tflite_inplace_op(ops[k].code))
      continue;
    int32_t o = fresh_output(f, &ops[k], k, t);
    int32_t x = o < 0 ? -1 : spent_input(f, &ops[k], k, t, o);
    if (x < 0)
      continue;
    struct planner_tensor *out = &planned[t[o].row - 1];
    out->has_alias = 1;
    out->alias = (uint32_t)x;
    n++;
  }
  return n;
}

/*
 * tflite.c - reads a TFLite model and builds the lifetime graph of its
 * first subgraph (see tflite.h for the rules).
 *
 * DESIGN
 *  One pass over the model's tables: buffers (which ones hold data),
 *  operator codes (which builtin each is), then subgraph 0's tensors
 *  (type, shape, size, flags) and operators (first and last use of every
 *  tensor they name), then the graph inputs, outputs and variables widen
 *  the lifetimes. Once the planned tensors are known, tflite_inplace.c
 *  gives the outputs of allowlisted operators their in-place inputs from
 *  the operator lists kept on the way (no second pass over the file).
 *  All structure goes through the checked primitives of tflite_fb.c; this
 *  file never reads the buffer directly except through positions those
 *  primitives have checked.
 */
#include "tflite_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"


/* Element sizes in bits, indexed by TensorType; 0 = no static size. */
static const uint8_t type_bits[PLANNER_TFLITE_TYPE__COUNT] = {
    32, /* FLOAT32 */ 16, /* FLOAT16 */ 32, /* INT32 */ 8,  /* UINT8 */
    64, /* INT64 */   0,  /* STRING */  8,  /* BOOL */  16, /* INT16 */
    64, /* COMPLEX64 */ 8, /* INT8 */   64, /* FLOAT64 */ 128, /* COMPLEX128 */
    64, /* UINT64 */  0,  /* RESOURCE */ 0, /* VARIANT */ 32, /* UINT32 */
    16, /* UINT16 */  4,  /* INT4 */    16, /* BFLOAT16 */ 2, /* INT2 */
    4,  /* UINT4 */   8,  /* FLOAT8_E4M3FN */ 8, /* FLOAT8_E5M2 */
};

static const char *const type_names[PLANNER_TFLITE_TYPE__COUNT] = {
    "FLOAT32", "FLOAT16",  "INT32",      "UINT8",         "INT64",
    "STRING",  "BOOL",     "INT16",      "COMPLEX64",     "INT8",
    "FLOAT64", "COMPLEX128", "UINT64",   "RESOURCE",      "VARIANT",
    "UINT32",  "UINT16",   "INT4",       "BFLOAT16",      "INT2",
    "UINT4",   "FLOAT8_E4M3FN", "FLOAT8_E5M2",
};

const char *planner_tflite_type_name(int type)
{
  if (type < 0 || type >= PLANNER_TFLITE_TYPE__COUNT)
    return "?";
  return type_names[type];
}

int planner_tflite_is_model(const void *buf, size_t len)
{
  return buf && len >= 8 && memcmp((const uint8_t *)buf + 4, "TFL3", 4) == 0;
}

void planner_tflite_init(struct planner_tflite_model *m)
{
  memset(m, 0, sizeof *m);
}

void planner_tflite_cleanup(struct planner_tflite_model *m)
{
  if (!m)
    return;
  if (m->names)
    for (size_t i = 0; i < m->n_planned; i++)
      free(m->names[i]);
  free(m->names);
  free(m->tensors);
  free(m->inputs);
  free(m->outputs);
  free(m->scratch);
  free(m->op_codes);
  planner_tflite_init(m);
}

struct planner_graph planner_tflite_graph(const struct planner_tflite_model *m)
{
  struct planner_graph g;
  g.tensors = m->tensors;
  g.n_tensors = m->n_planned;
  return g;
}

/* ---- reading ------------------------------------------------------------ */

/* The reader's state. */
struct reader {
  struct tfl__buf f;                   /* the file */
  const struct planner_tflite_options *o; /* borrowed, never NULL */
  struct planner_tflite_model *m;      /* being filled */
  uint8_t *buf_const;                  /* per buffer: 1 when it holds data */
  uint32_t n_buffers;                  /* entries in buf_const */
  int32_t *opcode;                     /* effective builtin per opcode */
  uint32_t n_opcodes;                  /* entries in opcode */
  struct tfl__tinfo *t;                /* per tensor of subgraph 0 */
  uint32_t n_t;                        /* entries in t */
  struct tfl__op *ops;                 /* per operator of subgraph 0 */
  size_t cap_scratch;                  /* entries allocated in m->scratch */
};

static int read_buffers(struct reader *r, const struct tfl__table *model)
{
  struct tfl__vec v;
  int rc = tfl__vector(&r->f, model, TFL_MODEL_BUFFERS, 4, "model.buffers", &v);
  if (rc)
    return rc;
  r->n_buffers = v.n;
  r->buf_const = calloc(v.n ? v.n : 1, 1);
  if (!r->buf_const)
    return tfl__fail(&r->f, ARENA_ENOMEM, "out of memory");
  for (uint32_t j = 0; j < v.n; j++) {
    char what[64];
    struct tfl__table b;
    struct tfl__vec data;
    uint64_t off;
    snprintf(what, sizeof what, "buffer %u", (unsigned)j);
    if ((rc = tfl__vec_table(&r->f, &v, j, what, &b)) != 0 ||
        (rc = tfl__vector(&r->f, &b, TFL_BUF_DATA, 1, what, &data)) != 0 ||
        (rc = tfl__u64(&r->f, &b, TFL_BUF_OFFSET, 0, what, &off)) != 0)
      return rc;
    r->buf_const[j] = data.n > 0 || off > 1;
  }
  return 0;
}

static int read_opcodes(struct reader *r, const struct tfl__table *model)
{
  struct tfl__vec v;
  int rc = tfl__vector(&r->f, model, TFL_MODEL_OPCODES, 4,
                       "model.operator_codes", &v);
  if (rc)
    return rc;
  r->n_opcodes = v.n;
  r->opcode = calloc(v.n ? v.n : 1, sizeof *r->opcode);
  if (!r->opcode)
    return tfl__fail(&r->f, ARENA_ENOMEM, "out of memory");
  for (uint32_t j = 0; j < v.n; j++) {
    char what[64];
    struct tfl__table oc;
    uint8_t dep;
    uint32_t code;
    snprintf(what, sizeof what, "operator code %u", (unsigned)j);
    if ((rc = tfl__vec_table(&r->f, &v, j, what, &oc)) != 0 ||
        (rc = tfl__u8(&r->f, &oc, TFL_OC_DEPRECATED, 0, what, &dep)) != 0 ||
        (rc = tfl__u32(&r->f, &oc, TFL_OC_BUILTIN, 0, what, &code)) != 0)
      return rc;
    int32_t d = (int8_t)dep, b = (int32_t)code;
    r->opcode[j] = d > b ? d : b;
  }
  return 0;
}

/* Reads the shape (or signature) vector of a tensor and multiplies it
 * out, skipping negative dims. *elems is 0 for a shape with a 0 dim;
 * *overflow is set when the product passes 64 bits; *neg_at gets the
 * first negative dim or -1. dims (may be NULL; else PLANNER_TFLITE_MAX_DIMS
 * entries) receives the first dims. */
static int read_dims(struct reader *r, const struct tfl__table *t, unsigned id,
                     const char *what, uint32_t *rank, int32_t *dims,
                     uint64_t *elems, int *overflow, int *neg_at)
{
  struct tfl__vec v;
  int rc = tfl__vector(&r->f, t, id, 4, what, &v);
  if (rc)
    return rc;
  uint64_t e = 1;
  *rank = v.n;
  *overflow = 0;
  *neg_at = -1;
  for (uint32_t k = 0; k < v.n; k++) {
    int32_t d = tfl__vec_i32(&r->f, &v, k);
    if (dims && k < PLANNER_TFLITE_MAX_DIMS)
      dims[k] = d;
    if (d < 0) {
      if (*neg_at < 0)
        *neg_at = (int)k;
      continue;
    }
    if (d != 0 && e > UINT64_MAX / (uint64_t)d)
      *overflow = 1;
    else
      e *= (uint64_t)d;
  }
  *elems = e;
  return 0;
}

/* Whether a signature vector has a -1 anywhere but in dim 0. */
static int dynamic_beyond_batch(struct reader *r, const struct tfl__table *t,
                                int *dyn0, int *dyn_other)
{
  struct tfl__vec v;
  int rc = tfl__vector(&r->f, t, TFL_T_SHAPE_SIGNATURE, 4, "shape_signature",
                       &v);
  *dyn0 = *dyn_other = 0;
  if (rc)
    return rc;
  for (uint32_t k = 0; k < v.n; k++)
    if (tfl__vec_i32(&r->f, &v, k) < 0) {
      if (k == 0)
        *dyn0 = 1;
      else
        *dyn_other = 1;
    }
  return 0;
}

static int read_tensor(struct reader *r, const struct tfl__vec *v, uint32_t i)
{
  char what[64];
  struct tfl__table t;
  struct tfl__tinfo *ti = &r->t[i];
  uint8_t type, var;
  uint32_t buffer, rank;
  uint64_t elems;
  int rc, overflow, neg_at, dyn0, dyn_other;
  int32_t dims[PLANNER_TFLITE_MAX_DIMS] = {0};
  snprintf(what, sizeof what, "tensor %u", (unsigned)i);
  if ((rc = tfl__vec_table(&r->f, v, i, what, &t)) != 0 ||
      (rc = tfl__u8(&r->f, &t, TFL_T_TYPE, 0, what, &type)) != 0 ||
      (rc = tfl__u32(&r->f, &t, TFL_T_BUFFER, 0, what, &buffer)) != 0 ||
      (rc = tfl__u8(&r->f, &t, TFL_T_IS_VARIABLE, 0, what, &var)) != 0 ||
      (rc = read_dims(r, &t, TFL_T_SHAPE, what, &rank, dims, &elems,
                      &overflow, &neg_at)) != 0 ||
      (rc = dynamic_beyond_batch(r, &t, &dyn0, &dyn_other)) != 0)
    return rc;
  ti->pos = t.pos;
  ti->first = ti->last = -1;
  ti->type = type;
  ti->variable = var != 0;
  ti->elems = overflow ? UINT64_MAX : elems;
  ti->rank = rank;
  ti->dim0 = rank ? dims[0] : 0;
  if (buffer >= r->n_buffers && buffer != 0)
    return tfl__fail(&r->f, ARENA_EPARSE,
                     "tensor %u: buffer index %u out of range (the model has "
                     "%u buffers)",
                     (unsigned)i, (unsigned)buffer, (unsigned)r->n_buffers);
  ti->is_const = buffer > 0 && r->buf_const[buffer];
  if (type >= PLANNER_TFLITE_TYPE__COUNT)
    return tfl__fail(&r->f, ARENA_EUNSUPPORTED,
                     "tensor %u: unknown tensor type %u", (unsigned)i,
                     (unsigned)type);
  if (dyn0 || dyn_other)
    r->m->dynamic = 1;
  ti->bits = type_bits[type];
  ti->sized = type_bits[type] != 0;
  if (!ti->sized || ti->is_const)
    return 0;
  int batched = 0;
  if (r->o->batch && dyn0 && !dyn_other && rank > 0) {
    /* Replace dimension 0 by the batch (elems skips a negative dim 0). */
    uint64_t rest = dims[0] > 0 ? elems / (uint64_t)dims[0] : elems;
    if (rest && r->o->batch > UINT64_MAX / rest)
      overflow = 1;
    else
      elems = rest * r->o->batch;
    r->m->batch_applied = batched = 1;
  } else if (r->o->batch && dyn_other) {
    return tfl__fail(&r->f, ARENA_EUNSUPPORTED,
                     "tensor %u has a dynamic dimension other than the batch "
                     "(dimension 0); its size cannot be set from a batch "
                     "size, only from running the model",
                     (unsigned)i);
  }
  if (neg_at > 0 || (neg_at == 0 && !batched))
    return tfl__fail(&r->f, ARENA_EUNSUPPORTED,
                     "tensor %u: shape has a negative dimension (%d); its "
                     "size is unknown",
                     (unsigned)i, neg_at);
  if (overflow || elems > UINT64_MAX / 128)
    return tfl__fail(&r->f, ARENA_EOVERFLOW,
                     "tensor %u: shape multiplies out beyond 64 bits",
                     (unsigned)i);
  ti->size = (elems * type_bits[type] + 7) / 8;
  return 0;
}

/* ---- TFLite Micro kernel scratch buffers (tflite.h, TFLM SCRATCH) ------- */

#define TFL_OP_SVDF 27
#define TFL_OP_MEAN 40
#define TFL_OP_LSTM 44 /* UNIDIRECTIONAL_SEQUENCE_LSTM */
#define TFL_OP_SUM 74
#define TFL_TYPE_INT16 7
#define TFL_TYPE_INT8 9
#define TFL_SCRATCH_MAX (1ull << 40) /* bytes: far beyond any kernel's int */

/* The tensor that entry j of an operator's list names, or NULL when the
 * entry is absent (-1 or past the end); indexes were checked by touch(). */
static const struct tfl__tinfo *op_tensor(const struct reader *r,
                                     const struct tfl__vec *v, uint32_t j)
{
  if (j >= v->n)
    return NULL;
  int32_t idx = tfl__vec_i32(&r->f, v, j);
  return idx >= 0 ? &r->t[idx] : NULL;
}

/* Appends a scratch buffer of a * b * c bytes living at operator k. */
static int add_scratch(struct reader *r, int64_t k, uint64_t a, uint64_t b,
                       uint64_t c)
{
  struct planner_tflite_model *m = r->m;
  if ((b && a > TFL_SCRATCH_MAX / b) || (c && a * b > TFL_SCRATCH_MAX / c))
    return tfl__fail(&r->f, ARENA_EOVERFLOW,
                     "operator %lld: its kernel scratch buffer would exceed "
                     "2^40 bytes",
                     (long long)k);
  if (m->n_scratch == r->cap_scratch) {
    size_t cap = r->cap_scratch ? 2 * r->cap_scratch : 16;
    void *p = realloc(m->scratch, cap * sizeof *m->scratch);
    if (!p)
      return tfl__fail(&r->f, ARENA_ENOMEM, "out of memory");
    m->scratch = p;
    r->cap_scratch = cap;
  }
  if (m->n_tensors_all + m->n_scratch >= UINT32_MAX)
    return tfl__fail(&r->f, ARENA_ETOOBIG, "too many tensors and scratch "
                     "buffers for 32-bit ids");
  struct planner_tensor *t = &m->scratch[m->n_scratch];
  t->id = (uint32_t)(m->n_tensors_all + m->n_scratch);
  t->size = a * b * c;
  t->first = t->last = k;
  t->align = 0;
  t->pinned = PLANNER_NOT_PINNED;
  t->alias = 0;
  t->has_alias = 0;
  m->n_scratch++;
  m->scratch_bytes += t->size;
  return 0;
}

static uint64_t dim(int32_t d)
{
  return d > 0 ? (uint64_t)d : 0;
}

/* Adds the scratch buffers operator k (builtin code) requests from TFLM's
 * arena head while it is prepared; in and out are its tensor lists. */
static int tflm_scratch(struct reader *r, int64_t k, int32_t code,
                        const struct tfl__vec *in, const struct tfl__vec *out)
{
  const struct tfl__tinfo *x = op_tensor(r, in, 0), *y = op_tensor(r, out, 0);
  int rc = 0;
  if (code == TFL_OP_SVDF) {
    /* input [batch, input_size], weights_feature [num_filters, input_size],
     * output [batch, num_units] */
    const struct tfl__tinfo *wf = op_tensor(r, in, 1);
    if (!x || !wf || !y)
      return 0;
    rc = add_scratch(r, k, 4, dim(x->dim0), dim(wf->dim0));
    if (!rc && x->type == TFL_TYPE_INT8)
      rc = add_scratch(r, k, 4, y->elems, 1);
  } else if (code == TFL_OP_LSTM) {
    const struct tfl__tinfo *state = op_tensor(r, in, 18);
    const struct tfl__tinfo *cell = op_tensor(r, in, 19);
    if (!state || !cell || cell->type >= PLANNER_TFLITE_TYPE__COUNT)
      return 0;
    for (int i = 0; i < 4 && !rc; i++)
      rc = add_scratch(r, k, state->elems, type_bits[cell->type] / 8, 1);
  } else if (code == TFL_OP_MEAN || code == TFL_OP_SUM) {
    const struct tfl__tinfo *axis = op_tensor(r, in, 1);
    if (!x || !axis || !y)
      return 0;
    if (x->type == TFL_TYPE_INT8 || x->type == TFL_TYPE_INT16)
      rc = add_scratch(r, k, 4, y->elems, 1);
    if (!rc)
      rc = add_scratch(r, k, 4, x->rank, 1);
    if (!rc)
      rc = add_scratch(r, k, 4, axis->elems, 1);
  }
  return rc;
}

/* Marks tensor idx (from operator k's list `list`) as used at k. */
static int touch(struct reader *r, int32_t idx, int64_t k, const char *list)
{
  if (idx == -1)
    return 0; /* absent optional tensor */
  if (idx < 0 || (uint32_t)idx >= r->n_t)
    return tfl__fail(&r->f, ARENA_EPARSE,
                     "operator %lld: %s names tensor %d, but subgraph 0 has "
                     "%u tensors",
                     (long long)k, list, (int)idx, (unsigned)r->n_t);
  struct tfl__tinfo *ti = &r->t[idx];
  if (ti->first < 0 || k < ti->first)
    ti->first = k;
  if (k > ti->last)
    ti->last = k;
  return 0;
}

static int read_operator(struct reader *r, const struct tfl__vec *ops,
                         uint32_t k)
{
  static const struct {
    unsigned id;
    const char *name;
  } lists[] = {{TFL_OP_INPUTS, "inputs"},
               {TFL_OP_OUTPUTS, "outputs"},
               {TFL_OP_INTERMEDIATES, "intermediates"}};
  char what[64];
  struct tfl__table op;
  struct tfl__vec v[3];
  uint32_t oc;
  int rc;
  snprintf(what, sizeof what, "operator %u", (unsigned)k);
  if ((rc = tfl__vec_table(&r->f, ops, k, what, &op)) != 0 ||
      (rc = tfl__u32(&r->f, &op, TFL_OP_OPCODE, 0, what, &oc)) != 0)
    return rc;
  if (oc >= r->n_opcodes)
    return tfl__fail(&r->f, ARENA_EPARSE,
                     "operator %u: opcode index %u out of range (the model has "
                     "%u operator codes)",
                     (unsigned)k, (unsigned)oc, (unsigned)r->n_opcodes);
  if (r->opcode[oc] == TFL_OP_CUSTOM)
    r->m->n_custom_ops++;
  for (int l = 0; l < 3; l++) {
    if ((rc = tfl__vector(&r->f, &op, lists[l].id, 4, what, &v[l])) != 0)
      return rc;
    for (uint32_t j = 0; j < v[l].n; j++)
      if ((rc = touch(r, tfl__vec_i32(&r->f, &v[l], j), k, lists[l].name)) != 0)
        return rc;
  }
  r->ops[k].code = r->opcode[oc];
  r->ops[k].in = v[0];
  r->ops[k].out = v[1];
  r->m->op_codes[k] = r->opcode[oc];
  if (r->o->tflm_scratch &&
      (rc = tflm_scratch(r, k, r->opcode[oc], &v[0], &v[1])) != 0)
    return rc;
  if (r->opcode[oc] == TFL_OP_DEQUANTIZE && v[0].n > 0) {
    int32_t in = tfl__vec_i32(&r->f, &v[0], 0);
    if (in >= 0 && r->t[in].is_const)
      for (uint32_t j = 0; j < v[1].n; j++) {
        int32_t out = tfl__vec_i32(&r->f, &v[1], j);
        if (out >= 0)
          r->t[out].persistent = 1;
      }
  }
  return 0;
}

/* Reads the graph inputs or outputs (field id) into *io. */
static int read_io(struct reader *r, const struct tfl__table *sg, unsigned id,
                   const struct tfl__vec *tensors,
                   struct planner_tflite_io **io, size_t *n)
{
  const char *list = id == TFL_SG_INPUTS ? "subgraph 0 inputs"
                                         : "subgraph 0 outputs";
  struct tfl__vec v;
  int rc = tfl__vector(&r->f, sg, id, 4, list, &v);
  if (rc)
    return rc;
  *io = calloc(v.n ? v.n : 1, sizeof **io);
  if (!*io)
    return tfl__fail(&r->f, ARENA_ENOMEM, "out of memory");
  *n = v.n;
  int64_t last_op = r->m->n_ops ? (int64_t)r->m->n_ops - 1 : 0;
  for (uint32_t j = 0; j < v.n; j++) {
    struct planner_tflite_io *e = &(*io)[j];
    int32_t idx = tfl__vec_i32(&r->f, &v, j);
    struct tfl__table t;
    uint32_t rank, srank;
    uint64_t elems;
    int ovf, neg;
    uint8_t type;
    if (idx < 0 || (uint32_t)idx >= r->n_t)
      return tfl__fail(&r->f, ARENA_EPARSE,
                       "%s: tensor index %d out of range (%u tensors)", list,
                       (int)idx, (unsigned)r->n_t);
    e->tensor = idx;
    if ((rc = tfl__vec_table(&r->f, tensors, (uint32_t)idx, list, &t)) != 0 ||
        (rc = tfl__u8(&r->f, &t, TFL_T_TYPE, 0, list, &type)) != 0 ||
        (rc = read_dims(r, &t, TFL_T_SHAPE, list, &rank, e->dims, &elems,
                        &ovf, &neg)) != 0 ||
        (rc = read_dims(r, &t, TFL_T_SHAPE_SIGNATURE, list, &srank, e->sig,
                        &elems, &ovf, &neg)) != 0 ||
        (rc = tfl__string(&r->f, &t, TFL_T_NAME, list, e->name,
                          sizeof e->name, NULL)) != 0)
      return rc;
    e->type = type;
    e->rank = rank;
    if (srank != rank)
      memcpy(e->sig, e->dims, sizeof e->sig);
    for (uint32_t k = 0; k < rank && k < PLANNER_TFLITE_MAX_DIMS; k++)
      if (e->sig[k] < 0)
        e->dynamic = 1;
    struct tfl__tinfo *ti = &r->t[idx];
    ti->io = 1;
    if (id == TFL_SG_INPUTS) {
      ti->first = 0;
      if (ti->last < 0)
        ti->last = 0;
    } else {
      if (ti->last < last_op)
        ti->last = last_op;
      if (ti->first < 0)
        ti->first = ti->last;
    }
  }
  return 0;
}

static int find_offline(struct reader *r, const struct tfl__table *model)
{
  struct tfl__vec v;
  int rc = tfl__vector(&r->f, model, TFL_MODEL_METADATA, 4, "model.metadata",
                       &v);
  for (uint32_t j = 0; rc == 0 && j < v.n; j++) {
    struct tfl__table md;
    char name[64];
    size_t full;
    if ((rc = tfl__vec_table(&r->f, &v, j, "metadata", &md)) != 0 ||
        (rc = tfl__string(&r->f, &md, TFL_MD_NAME, "metadata name", name,
                          sizeof name, &full)) != 0)
      break;
    if (full == strlen(PLANNER_TFLITE_OFFLINE_NAME) &&
        strcmp(name, PLANNER_TFLITE_OFFLINE_NAME) == 0)
      r->m->has_offline_plan = 1;
  }
  return rc;
}

/* Builds the planned tensor list from r->t. */
static int collect(struct reader *r, const struct tfl__vec *tensors)
{
  struct planner_tflite_model *m = r->m;
  size_t n = r->n_t;
  m->tensors = calloc(n ? n : 1, sizeof *m->tensors);
  m->names = calloc(n ? n : 1, sizeof *m->names);
  if (!m->tensors || !m->names)
    return tfl__fail(&r->f, ARENA_ENOMEM, "out of memory");
  int64_t last_op = m->n_ops ? (int64_t)m->n_ops - 1 : 0;
  for (uint32_t i = 0; i < r->n_t; i++) {
    struct tfl__tinfo *ti = &r->t[i];
    if (ti->is_const) {
      m->n_const++;
      continue;
    }
    if (!ti->sized) {
      m->n_unplannable++;
      continue;
    }
    if (ti->variable) {
      ti->first = 0;
      ti->last = last_op;
      m->n_variable++;
      if (r->o->skip_variable)
        continue;
    }
    if (ti->first < 0) {
      m->n_unused++;
      continue;
    }
    if (ti->persistent && !r->o->keep_dequant) {
      m->n_persistent++;
      m->persistent_bytes += ti->size;
      continue;
    }
    struct planner_tensor *pt = &m->tensors[m->n_planned];
    struct tfl__table t;
    ti->row = (uint32_t)m->n_planned + 1;
    char name[PLANNER_TFLITE_NAME_LEN];
    int rc;
    pt->id = i;
    pt->size = ti->size;
    pt->first = ti->first;
    pt->last = ti->last;
    pt->align = 0;
    pt->pinned = PLANNER_NOT_PINNED;
    pt->alias = 0;
    pt->has_alias = 0;
    if ((rc = tfl__vec_table(&r->f, tensors, i, "tensor", &t)) != 0 ||
        (rc = tfl__string(&r->f, &t, TFL_T_NAME, "tensor name", name,
                          sizeof name, NULL)) != 0)
      return rc;
    m->names[m->n_planned] = strdup(name);
    if (!m->names[m->n_planned])
      return tfl__fail(&r->f, ARENA_ENOMEM, "out of memory");
    m->n_planned++;
  }
  return 0;
}

static int read_model(struct reader *r)
{
  struct tfl__table model, sg;
  struct tfl__vec sgs, tensors, ops;
  int rc;
  if ((rc = tfl__root(&r->f, &model)) != 0 ||
      (rc = tfl__u32(&r->f, &model, TFL_MODEL_VERSION, 0, "model",
                     &r->m->version)) != 0 ||
      (rc = read_buffers(r, &model)) != 0 ||
      (rc = read_opcodes(r, &model)) != 0 ||
      (rc = find_offline(r, &model)) != 0 ||
      (rc = tfl__vector(&r->f, &model, TFL_MODEL_SUBGRAPHS, 4,
                        "model.subgraphs", &sgs)) != 0)
    return rc;
  if (sgs.n == 0)
    return tfl__fail(&r->f, ARENA_EEMPTY, "model has no subgraphs");
  r->m->n_subgraphs = sgs.n;
  for (uint32_t s = 0; s < sgs.n; s++) {
    char what[64];
    snprintf(what, sizeof what, "subgraph %u", (unsigned)s);
    if ((rc = tfl__vec_table(&r->f, &sgs, s, what, &sg)) != 0 ||
        (rc = tfl__vector(&r->f, &sg, TFL_SG_TENSORS, 4, what, &tensors)) != 0)
      return rc;
    r->m->n_tensors_all += tensors.n;
  }
  if ((rc = tfl__vec_table(&r->f, &sgs, 0, "subgraph 0", &sg)) != 0 ||
      (rc = tfl__vector(&r->f, &sg, TFL_SG_TENSORS, 4, "subgraph 0", &tensors)) !=
          0 ||
      (rc = tfl__vector(&r->f, &sg, TFL_SG_OPERATORS, 4, "subgraph 0",
                        &ops)) != 0)
    return rc;
  r->n_t = tensors.n;
  r->m->n_tensors = tensors.n;
  r->m->n_ops = ops.n;
  r->t = calloc(tensors.n ? tensors.n : 1, sizeof *r->t);
  r->ops = calloc(ops.n ? ops.n : 1, sizeof *r->ops);
  r->m->op_codes = calloc(ops.n ? ops.n : 1, sizeof *r->m->op_codes);
  if (!r->t || !r->ops || !r->m->op_codes)
    return tfl__fail(&r->f, ARENA_ENOMEM, "out of memory");
  for (uint32_t i = 0; i < tensors.n; i++)
    if ((rc = read_tensor(r, &tensors, i)) != 0)
      return rc;
  for (uint32_t k = 0; k < ops.n; k++)
    if ((rc = read_operator(r, &ops, k)) != 0)
      return rc;
  if ((rc = read_io(r, &sg, TFL_SG_INPUTS, &tensors, &r->m->inputs,
                    &r->m->n_inputs)) != 0 ||
      (rc = read_io(r, &sg, TFL_SG_OUTPUTS, &tensors, &r->m->outputs,
                    &r->m->n_outputs)) != 0 ||
      (rc = collect(r, &tensors)) != 0)
    return rc;
  if (r->m->n_planned == 0)
    return tfl__fail(&r->f, ARENA_EEMPTY,
                     "subgraph 0 has no tensor to plan (%u tensors, %u "
                     "constant)",
                     (unsigned)r->n_t, (unsigned)r->m->n_const);
  if (!r->o->no_in_place)
    r->m->n_aliases = tfl__inplace_pairs(&r->f, r->ops, ops.n, r->t,
                                         r->m->tensors);
  return 0;
}

int planner_tflite_read(const void *buf, size_t len,
                        const struct planner_tflite_options *o,
                        struct planner_tflite_model *out,
                        char err[ARENA_ERR_LEN])
{
  static const struct planner_tflite_options defaults = {0, 0, 0, 0, 0};
  struct reader r;
  if (err)
    err[0] = '\0';
  if (!out || (!buf && len > 0)) {
    if (err)
      snprintf(err, ARENA_ERR_LEN, "invalid argument");
    return ARENA_EINVAL;
  }
  planner_tflite_cleanup(out);
  memset(&r, 0, sizeof r);
  r.f.b = buf;
  r.f.len = len;
  r.f.err = err;
  r.f.work_cap = (uint64_t)PLANNER_TFLITE_WORK_PER_BYTE * len + 4096;
  r.o = o ? o : &defaults;
  r.m = out;
  int rc = read_model(&r);
  free(r.buf_const);
  free(r.opcode);
  free(r.t);
  free(r.ops);
  if (rc) {
    planner_tflite_cleanup(out);
    return rc;
  }
  planner_sha256(buf, len, out->sha256);
  return 0;
}

/*
 * tflite_embed.c - writes a TFLite Micro offline plan into a model and
 * reads it back (planner_tflite_embed, planner_tflite_offline_plan; see
 * tflite.h for the LAYOUT).
 *
 * DESIGN
 *  The input is first read in full with planner_tflite_read(), so the
 *  writer only ever works on a model whose structure has been checked.
 *  The new block is laid out in one forward pass by `struct out`, which
 *  hands out aligned positions; every reference written is a forward
 *  distance from the slot to its target, as FlatBuffers requires, either
 *  to something later in the block or into the original bytes, which all
 *  move by the block size K.
 */
#include "tflite_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMBED_VERSION 1      /* first word of the plan buffer */
#define EMBED_BLOCK_ALIGN 64 /* K is a multiple of this */

/* The output being built. */
struct out {
  uint8_t *b;   /* the whole output, zero-filled */
  size_t pos;   /* next free byte of the block */
};

static size_t take(struct out *o, size_t n, size_t align)
{
  o->pos = (o->pos + align - 1) / align * align;
  size_t at = o->pos;
  o->pos += n;
  return at;
}

/* Writes at slot the forward distance to target. */
static void ref(struct out *o, size_t slot, size_t target)
{
  tfl__wr32(o->b + slot, (uint32_t)(target - slot));
}

/* Writes a vtable for a table of tab_len bytes with n_fields slots (given
 * as table byte offsets, 0 = absent) and returns its position. */
static size_t vtable(struct out *o, const uint16_t *slots, unsigned n_fields,
                     uint16_t tab_len)
{
  uint16_t vt_len = (uint16_t)(4 + 2 * n_fields);
  size_t at = take(o, vt_len, 2);
  tfl__wr16(o->b + at, vt_len);
  tfl__wr16(o->b + at + 2, tab_len);
  for (unsigned i = 0; i < n_fields; i++)
    tfl__wr16(o->b + at + 4 + 2 * i, slots[i]);
  return at;
}

/* Starts a table whose vtable is at vt. */
static size_t table(struct out *o, size_t vt, size_t tab_len)
{
  size_t at = take(o, tab_len, 4);
  tfl__wr32(o->b + at, (uint32_t)(int32_t)((int64_t)at - (int64_t)vt));
  return at;
}

/* Where element j of a vector of tables points (an original position). */
static size_t elem_target(const struct tfl__buf *f, const struct tfl__vec *v,
                          uint32_t j)
{
  size_t e = v->pos + 4 * (size_t)j;
  return e + tfl__rd32(f->b + e);
}

/* Index of the metadata entry named OfflineMemoryAllocation, or -1. */
static int find_entry(struct tfl__buf *f, const struct tfl__vec *md,
                      uint32_t *buffer, int *rc)
{
  *rc = 0;
  for (uint32_t j = 0; j < md->n; j++) {
    struct tfl__table t;
    char name[64];
    size_t full;
    if ((*rc = tfl__vec_table(f, md, j, "metadata", &t)) != 0 ||
        (*rc = tfl__string(f, &t, TFL_MD_NAME, "metadata name", name,
                           sizeof name, &full)) != 0 ||
        (*rc = tfl__u32(f, &t, TFL_MD_BUFFER, 0, "metadata", buffer)) != 0)
      return -1;
    if (full == strlen(PLANNER_TFLITE_OFFLINE_NAME) &&
        strcmp(name, PLANNER_TFLITE_OFFLINE_NAME) == 0)
      return (int)j;
  }
  return -1;
}

static int set_fail(char *err, int code, const char *msg)
{
  struct tfl__buf f;
  memset(&f, 0, sizeof f);
  f.err = err;
  return tfl__fail(&f, code, "%s", msg);
}

/* What the writer takes from the original model, all checked. */
struct src {
  struct tfl__buf f;                /* the original bytes */
  struct tfl__table model;          /* its Model table */
  struct tfl__vec bufs, md;         /* model.buffers and model.metadata */
  size_t refs[TFL_MODEL__FIELDS];   /* target of each reference field, 0:
                                       absent (index 0, version, unused) */
  uint32_t version;                 /* model.version */
  int replace;                      /* metadata entry to replace, or -1 */
};

/* Checks that the input is a readable model with exactly n tensors. */
static int check_count(const void *buf, size_t len, size_t n, char *err)
{
  struct planner_tflite_model m;
  int rc;
  planner_tflite_init(&m);
  if ((rc = planner_tflite_read(buf, len, NULL, &m, err)) != 0)
    return rc;
  uint64_t n_all = m.n_tensors_all;
  planner_tflite_cleanup(&m);
  if (n != n_all) {
    if (err)
      snprintf(err, ARENA_ERR_LEN,
               "the plan has %zu offsets but the model has %llu tensors",
               n, (unsigned long long)n_all);
    return ARENA_EINVAL;
  }
  return 0;
}

/* Checks that every field of the Model table is one this writer can copy. */
static int check_fields(struct src *s)
{
  int rc;
  for (unsigned id = 0; 4 + 2 * (size_t)id + 2 <= s->model.vt_len; id++) {
    size_t at;
    if ((rc = tfl__slot(&s->f, &s->model, id, 4, "model", &at)) != 0)
      return rc;
    if (at && id >= TFL_MODEL__FIELDS)
      return set_fail(s->f.err, ARENA_EUNSUPPORTED,
                      "the model table has fields newer than this writer "
                      "knows; it cannot copy them safely");
    if (at && id == 9)
      return set_fail(s->f.err, ARENA_EUNSUPPORTED,
                      "the model uses external buffers, whose file offsets "
                      "would move");
  }
  return 0;
}

/* Checks that no buffer lives outside the FlatBuffer at a file offset. */
static int check_buffers(struct src *s)
{
  int rc;
  for (uint32_t j = 0; j < s->bufs.n; j++) {
    struct tfl__table b;
    uint64_t off;
    if ((rc = tfl__vec_table(&s->f, &s->bufs, j, "buffer", &b)) != 0 ||
        (rc = tfl__u64(&s->f, &b, TFL_BUF_OFFSET, 0, "buffer", &off)) != 0)
      return rc;
    if (off > 1)
      return set_fail(s->f.err, ARENA_EUNSUPPORTED,
                      "the model keeps buffers outside the FlatBuffer at "
                      "absolute file offsets, which the new block would move");
  }
  return 0;
}

/* Opens the original model and reads what the writer copies from it. */
static int read_src(const void *buf, size_t len, char *err, struct src *s)
{
  uint32_t dummy;
  int rc;
  memset(s, 0, sizeof *s);
  s->f.b = buf;
  s->f.len = len;
  s->f.err = err;
  s->f.work_cap = (uint64_t)PLANNER_TFLITE_WORK_PER_BYTE * len + 4096;
  if ((rc = tfl__root(&s->f, &s->model)) != 0 ||
      (rc = check_fields(s)) != 0)
    return rc;
  if ((rc = tfl__u32(&s->f, &s->model, TFL_MODEL_VERSION, 0, "model",
                     &s->version)) != 0)
    return rc;
  for (unsigned id = 1; id < TFL_MODEL__FIELDS; id++)
    if ((rc = tfl__ref(&s->f, &s->model, id, "model", &s->refs[id])) != 0)
      return rc;
  if ((rc = tfl__vector(&s->f, &s->model, TFL_MODEL_BUFFERS, 4,
                        "model.buffers", &s->bufs)) != 0 ||
      (rc = tfl__vector(&s->f, &s->model, TFL_MODEL_METADATA, 4,
                        "model.metadata", &s->md)) != 0)
    return rc;
  if ((rc = check_buffers(s)) != 0)
    return rc;
  s->replace = find_entry(&s->f, &s->md, &dummy, &rc);
  return rc;
}

static const char offline_name[] = PLANNER_TFLITE_OFFLINE_NAME;

/* Bytes of the new block for a plan of n offsets: the parts written
 * below, generously rounded up to a multiple of EMBED_BLOCK_ALIGN. */
static uint64_t block_len(const struct src *s, size_t n)
{
  uint32_t n_md = s->md.n + (s->replace < 0 ? 1 : 0);
  uint32_t n_buf = s->bufs.n + 1;
  size_t words = 3 + n;
  uint64_t need = 8 + 24 + 4 + 4 * TFL_MODEL__FIELDS + 8 + 4 +
                  4ull * n_buf + 4 + 4ull * n_md + 8 + 8 + 8 + 12 + 4 +
                  sizeof offline_name + 4 + 16 + 4ull * words + 64;
  return (need + EMBED_BLOCK_ALIGN - 1) / EMBED_BLOCK_ALIGN *
         EMBED_BLOCK_ALIGN;
}

/* Writes the new Model table: version, then one reference per field into
 * the moved original, except buffers and metadata, whose slots (in
 * slots) the caller fills. Returns the table's position. */
static size_t write_model(struct out *o, const struct src *s, size_t K,
                          uint16_t slots[TFL_MODEL__FIELDS])
{
  size_t mtab_len = 4 + 4 * TFL_MODEL__FIELDS;
  for (unsigned id = 0; id < TFL_MODEL__FIELDS; id++)
    slots[id] = (uint16_t)(4 + 4 * id);
  for (unsigned id = 1; id < TFL_MODEL__FIELDS; id++)
    if (!s->refs[id] && id != TFL_MODEL_BUFFERS && id != TFL_MODEL_METADATA)
      slots[id] = 0;
  size_t mvt = vtable(o, slots, TFL_MODEL__FIELDS, (uint16_t)mtab_len);
  size_t mt = table(o, mvt, mtab_len);
  tfl__wr32(o->b, (uint32_t)mt);
  tfl__wr32(o->b + mt + 4, s->version);
  for (unsigned id = 1; id < TFL_MODEL__FIELDS; id++)
    if (slots[id] && id != TFL_MODEL_BUFFERS && id != TFL_MODEL_METADATA)
      ref(o, mt + slots[id], s->refs[id] + K);
  return mt;
}

/* Writes the buffers vector (the old ones, a slot for the plan's last)
 * and referenced from slot; returns its position. */
static size_t write_buffers(struct out *o, const struct src *s, size_t K,
                            size_t slot)
{
  uint32_t n_buf = s->bufs.n + 1;
  size_t bv = take(o, 4 + 4 * (size_t)n_buf, 4);
  tfl__wr32(o->b + bv, n_buf);
  ref(o, slot, bv);
  for (uint32_t j = 0; j < s->bufs.n; j++)
    ref(o, bv + 4 + 4 * (size_t)j, elem_target(&s->f, &s->bufs, j) + K);
  return bv;
}

/* Writes the metadata vector (the old entries, a slot for the plan's
 * replacing one or after them) referenced from slot; returns its
 * position. */
static size_t write_metadata(struct out *o, const struct src *s, size_t K,
                             size_t slot)
{
  uint32_t n_md = s->md.n + (s->replace < 0 ? 1 : 0);
  size_t mv = take(o, 4 + 4 * (size_t)n_md, 4);
  tfl__wr32(o->b + mv, n_md);
  ref(o, slot, mv);
  for (uint32_t j = 0; j < s->md.n; j++)
    if ((int)j != s->replace)
      ref(o, mv + 4 + 4 * (size_t)j, elem_target(&s->f, &s->md, j) + K);
  return mv;
}

/* Writes the plan's Buffer and Metadata tables, the name string and the
 * plan words, into the slots at bv and mv left for them. */
static void write_plan(struct out *o, const struct src *s, size_t bv,
                       size_t mv, const int32_t *offsets, size_t n)
{
  size_t words = 3 + n;
  /* The new Buffer table: data only. */
  uint16_t bslots[1] = {4};
  size_t bvt = vtable(o, bslots, 1, 8);
  size_t bt = table(o, bvt, 8);
  ref(o, bv + 4 + 4 * (size_t)s->bufs.n, bt);

  /* The new Metadata table: name, buffer. */
  uint16_t mdslots[2] = {4, 8};
  size_t mdvt = vtable(o, mdslots, 2, 12);
  size_t mdt = table(o, mdvt, 12);
  tfl__wr32(o->b + mdt + 8, s->bufs.n);
  ref(o, mv + 4 + 4 * (size_t)(s->replace < 0 ? s->md.n
                                              : (uint32_t)s->replace),
      mdt);

  /* The name string, NUL-terminated. */
  size_t sv = take(o, 4 + sizeof offline_name, 4);
  tfl__wr32(o->b + sv, (uint32_t)(sizeof offline_name - 1));
  memcpy(o->b + sv + 4, offline_name, sizeof offline_name);
  ref(o, mdt + 4, sv);

  /* The plan words, their data 16-byte aligned (force_align: 16). */
  o->pos = (o->pos + 4 + 15) / 16 * 16 - 4;
  size_t dv = take(o, 4 + 4 * words, 4);
  tfl__wr32(o->b + dv, (uint32_t)(4 * words));
  tfl__wr32(o->b + dv + 4, EMBED_VERSION);
  tfl__wr32(o->b + dv + 8, 0);
  tfl__wr32(o->b + dv + 12, (uint32_t)n);
  for (size_t i = 0; i < n; i++)
    tfl__wr32(o->b + dv + 16 + 4 * i, (uint32_t)offsets[i]);
  ref(o, bt + 4, dv);
}

int planner_tflite_embed(const void *buf, size_t len, const int32_t *offsets,
                         size_t n, uint8_t **out, size_t *out_len,
                         char err[ARENA_ERR_LEN])
{
  struct src s;
  int rc;
  *out = NULL;
  *out_len = 0;
  if (!offsets && n > 0)
    return set_fail(err, ARENA_EINVAL, "no offsets given");
  if ((rc = check_count(buf, len, n, err)) != 0 ||
      (rc = read_src(buf, len, err, &s)) != 0)
    return rc;

  uint64_t k = block_len(&s, n);
  if ((uint64_t)len + k > PLANNER_TFLITE_MAX_LEN)
    return set_fail(err, ARENA_ETOOBIG,
                    "the model with its plan would pass 2 GiB");
  size_t K = (size_t)k, total = len + K;
  struct out o;
  o.b = calloc(total, 1);
  if (!o.b)
    return set_fail(err, ARENA_ENOMEM, "out of memory");
  o.pos = 8;
  memcpy(o.b + 8 + K, (const uint8_t *)buf + 8, len - 8);
  memcpy(o.b + 4, "TFL3", 4);

  uint16_t slots[TFL_MODEL__FIELDS];
  size_t mt = write_model(&o, &s, K, slots);
  size_t bv = write_buffers(&o, &s, K, mt + slots[TFL_MODEL_BUFFERS]);
  size_t mv = write_metadata(&o, &s, K, mt + slots[TFL_MODEL_METADATA]);
  write_plan(&o, &s, bv, mv, offsets, n);

  if (o.pos > 8 + K) { /* the size estimate above is an upper bound */
    free(o.b);
    return set_fail(err, ARENA_EINTERNAL, "offline plan block overflowed");
  }
  *out = o.b;
  *out_len = total;
  return 0;
}

int planner_tflite_offline_plan(const void *buf, size_t len, int32_t **offsets,
                                size_t *n, char err[ARENA_ERR_LEN])
{
  struct tfl__buf f;
  struct tfl__table model, b;
  struct tfl__vec md, bufs, data;
  uint32_t bi;
  int rc;
  *offsets = NULL;
  *n = 0;
  memset(&f, 0, sizeof f);
  f.b = buf;
  f.len = len;
  f.err = err;
  f.work_cap = (uint64_t)PLANNER_TFLITE_WORK_PER_BYTE * len + 4096;
  if ((rc = tfl__root(&f, &model)) != 0 ||
      (rc = tfl__vector(&f, &model, TFL_MODEL_METADATA, 4, "model.metadata",
                        &md)) != 0)
    return rc;
  if (find_entry(&f, &md, &bi, &rc) < 0)
    return rc ? rc
              : tfl__fail(&f, ARENA_ENOENT,
                          "the model has no OfflineMemoryAllocation metadata");
  if ((rc = tfl__vector(&f, &model, TFL_MODEL_BUFFERS, 4, "model.buffers",
                        &bufs)) != 0)
    return rc;
  if (bi >= bufs.n)
    return tfl__fail(&f, ARENA_EPARSE,
                     "OfflineMemoryAllocation names buffer %u of %u",
                     (unsigned)bi, (unsigned)bufs.n);
  if ((rc = tfl__vec_table(&f, &bufs, bi, "plan buffer", &b)) != 0 ||
      (rc = tfl__vector(&f, &b, TFL_BUF_DATA, 1, "plan buffer", &data)) != 0)
    return rc;
  if (data.n < 12)
    return tfl__fail(&f, ARENA_EPARSE,
                     "OfflineMemoryAllocation holds %u bytes, fewer than its "
                     "12-byte header",
                     (unsigned)data.n);
  uint32_t cnt = tfl__rd32(f.b + data.pos + 8);
  if ((uint64_t)cnt * 4 > data.n - 12)
    return tfl__fail(&f, ARENA_EPARSE,
                     "OfflineMemoryAllocation claims %u offsets but holds "
                     "%u bytes",
                     (unsigned)cnt, (unsigned)data.n);
  int32_t *v = malloc(cnt ? cnt * sizeof *v : 1);
  if (!v)
    return tfl__fail(&f, ARENA_ENOMEM, "out of memory");
  for (uint32_t i = 0; i < cnt; i++)
    v[i] = (int32_t)tfl__rd32(f.b + data.pos + 12 + 4 * (size_t)i);
  *offsets = v;
  *n = cnt;
  return 0;
}

/*
 * tflite_fb.c - bounds-checked FlatBuffers primitives for the TFLite
 * reader and writer (see tflite_int.h).
 *
 * DESIGN
 *  Positions are size_t byte offsets into the file, never pointers, and
 *  every "does it fit" test is done in uint64_t on values that are each
 *  below 2^32, so no sum wraps. Values are read byte by byte in little
 *  endian, so neither host byte order nor alignment matters.
 */
#include "tflite_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int tfl__fail(struct tfl__buf *f, int code, const char *fmt, ...)
{
  if (f->err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->err, ARENA_ERR_LEN, fmt, ap);
    va_end(ap);
  }
  return code;
}

uint16_t tfl__rd16(const uint8_t *p)
{
  return (uint16_t)(p[0] | (p[1] << 8));
}

uint32_t tfl__rd32(const uint8_t *p)
{
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}

uint64_t tfl__rd64(const uint8_t *p)
{
  return (uint64_t)tfl__rd32(p) | ((uint64_t)tfl__rd32(p + 4) << 32);
}

void tfl__wr32(uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

void tfl__wr16(uint8_t *p, uint16_t v)
{
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

/* 1 when [pos, pos + n) lies inside the file. */
static int fits(const struct tfl__buf *f, uint64_t pos, uint64_t n)
{
  return pos <= f->len && n <= f->len - pos;
}

int tfl__table_at(struct tfl__buf *f, size_t pos, const char *what,
                  struct tfl__table *t)
{
  memset(t, 0, sizeof *t);
  if (!fits(f, pos, 4))
    return tfl__fail(f, ARENA_EPARSE,
                     "%s: table at byte %zu is outside the file (%zu bytes)",
                     what, pos, f->len);
  int32_t so = (int32_t)tfl__rd32(f->b + pos);
  int64_t vt = (int64_t)pos - (int64_t)so;
  if (vt < 0 || !fits(f, (uint64_t)vt, 4))
    return tfl__fail(f, ARENA_EPARSE,
                     "%s: vtable of the table at byte %zu is outside the file",
                     what, pos);
  t->pos = pos;
  t->vt = (size_t)vt;
  t->vt_len = tfl__rd16(f->b + t->vt);
  t->tab_len = tfl__rd16(f->b + t->vt + 2);
  if (t->vt_len < 4 || (t->vt_len & 1) || !fits(f, t->vt, t->vt_len))
    return tfl__fail(f, ARENA_EPARSE,
                     "%s: bad vtable at byte %zu (size %u)", what, t->vt,
                     (unsigned)t->vt_len);
  if (t->tab_len < 4 || !fits(f, pos, t->tab_len))
    return tfl__fail(f, ARENA_EPARSE,
                     "%s: table at byte %zu claims %u bytes, past the end of "
                     "the file",
                     what, pos, (unsigned)t->tab_len);
  return 0;
}

int tfl__root(struct tfl__buf *f, struct tfl__table *model)
{
  memset(model, 0, sizeof *model);
  if (f->len > PLANNER_TFLITE_MAX_LEN)
    return tfl__fail(f, ARENA_ETOOBIG,
                     "model: %zu bytes is larger than a FlatBuffer may be",
                     f->len);
  if (f->len < 8)
    return tfl__fail(f, ARENA_EPARSE,
                     "not a TFLite model: %zu bytes is too short for the "
                     "FlatBuffers header",
                     f->len);
  if (memcmp(f->b + 4, "TFL3", 4) != 0)
    return tfl__fail(f, ARENA_EPARSE,
                     "not a TFLite model: no \"TFL3\" identifier at bytes 4-7");
  uint32_t root = tfl__rd32(f->b);
  if (root < 8)
    return tfl__fail(f, ARENA_EPARSE,
                     "model: root offset %u points into the file header",
                     (unsigned)root);
  return tfl__table_at(f, root, "model", model);
}

int tfl__slot(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
              size_t size, const char *what, size_t *slot)
{
  size_t at = 4 + 2 * (size_t)id;
  *slot = 0;
  if (at + 2 > t->vt_len)
    return 0; /* past the vtable: absent */
  uint16_t s = tfl__rd16(f->b + t->vt + at);
  if (s == 0)
    return 0;
  if (s < 4 || (size_t)s + size > t->tab_len)
    return tfl__fail(f, ARENA_EPARSE,
                     "%s: field %u at table byte %u lies outside its table "
                     "(%u bytes)",
                     what, id, (unsigned)s, (unsigned)t->tab_len);
  *slot = s;
  return 0;
}

int tfl__u8(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
            uint8_t def, const char *what, uint8_t *v)
{
  size_t s;
  int rc = tfl__slot(f, t, id, 1, what, &s);
  *v = rc == 0 && s ? f->b[t->pos + s] : def;
  return rc;
}

int tfl__u32(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
             uint32_t def, const char *what, uint32_t *v)
{
  size_t s;
  int rc = tfl__slot(f, t, id, 4, what, &s);
  *v = rc == 0 && s ? tfl__rd32(f->b + t->pos + s) : def;
  return rc;
}

int tfl__u64(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
             uint64_t def, const char *what, uint64_t *v)
{
  size_t s;
  int rc = tfl__slot(f, t, id, 8, what, &s);
  *v = rc == 0 && s ? tfl__rd64(f->b + t->pos + s) : def;
  return rc;
}

int tfl__ref(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
             const char *what, size_t *target)
{
  size_t s;
  *target = 0;
  int rc = tfl__slot(f, t, id, 4, what, &s);
  if (rc || !s)
    return rc;
  uint64_t p = (uint64_t)t->pos + s;
  uint32_t off = tfl__rd32(f->b + p);
  if (off == 0)
    return tfl__fail(f, ARENA_EPARSE,
                     "%s: field %u is an offset that points at itself "
                     "(byte %llu)",
                     what, id, (unsigned long long)p);
  if (!fits(f, p + off, 4))
    return tfl__fail(f, ARENA_EPARSE,
                     "%s: field %u points outside the file (to byte %llu of "
                     "%zu)",
                     what, id, (unsigned long long)(p + off), f->len);
  *target = (size_t)(p + off);
  return 0;
}

int tfl__vector(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
                size_t elem_size, const char *what, struct tfl__vec *v)
{
  size_t at;
  v->pos = 0;
  v->n = 0;
  int rc = tfl__ref(f, t, id, what, &at);
  if (rc || !at)
    return rc;
  uint32_t n = tfl__rd32(f->b + at);
  if (!fits(f, (uint64_t)at + 4, (uint64_t)n * elem_size))
    return tfl__fail(f, ARENA_EPARSE,
                     "%s: vector of %u elements at byte %zu runs past the end "
                     "of the file",
                     what, (unsigned)n, at);
  f->work += n;
  if (f->work > f->work_cap)
    return tfl__fail(f, ARENA_ETOOBIG,
                     "%s: the model's vectors add up to more than %llu "
                     "elements, too many for its size (shared or cyclic "
                     "offsets?)",
                     what, (unsigned long long)f->work_cap);
  v->pos = at + 4;
  v->n = n;
  return 0;
}

int tfl__vec_table(struct tfl__buf *f, const struct tfl__vec *v, uint32_t j,
                   const char *what, struct tfl__table *t)
{
  uint64_t e = (uint64_t)v->pos + 4ull * j;
  uint32_t off = tfl__rd32(f->b + e);
  if (off == 0)
    return tfl__fail(f, ARENA_EPARSE,
                     "%s: element offset points at itself (byte %llu)", what,
                     (unsigned long long)e);
  if (!fits(f, e + off, 4))
    return tfl__fail(f, ARENA_EPARSE,
                     "%s: element points outside the file (to byte %llu of "
                     "%zu)",
                     what, (unsigned long long)(e + off), f->len);
  return tfl__table_at(f, (size_t)(e + off), what, t);
}

int32_t tfl__vec_i32(const struct tfl__buf *f, const struct tfl__vec *v,
                     uint32_t j)
{
  return (int32_t)tfl__rd32(f->b + v->pos + 4 * (size_t)j);
}

int tfl__string(struct tfl__buf *f, const struct tfl__table *t, unsigned id,
                const char *what, char *out, size_t cap, size_t *full_len)
{
  struct tfl__vec v;
  out[0] = '\0';
  if (full_len)
    *full_len = 0;
  int rc = tfl__vector(f, t, id, 1, what, &v);
  if (rc)
    return rc;
  size_t n = v.n < cap - 1 ? v.n : cap - 1;
  memcpy(out, f->b + v.pos, n);
  out[n] = '\0';
  if (full_len)
    *full_len = v.n;
  return 0;
}

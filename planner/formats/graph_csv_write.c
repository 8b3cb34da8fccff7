/*
 * graph_csv_write.c - writes lifetime graphs as our CSV text
 * (planner_csv_write() and planner_csv_write_alloc() in graph_csv.h); the
 * reader is graph_csv.c.
 *
 * The text is produced in one pass into a sink that counts every byte
 * and stores those that fit, so that a caller may size its buffer from a
 * first call, as with snprintf.
 */
#include "graph_csv.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Output sink: counts every byte, stores those that fit. */
struct sink {
  char *buf;  /* destination, may be NULL */
  size_t cap; /* bytes at buf */
  size_t len; /* bytes produced so far (may exceed cap) */
};

static void put(struct sink *s, const char *p, size_t n)
{
  if (s->len < s->cap) {
    size_t room = s->cap - s->len;
    memcpy(s->buf + s->len, p, n < room ? n : room);
  }
  s->len += n;
}

static void put_u64(struct sink *s, uint64_t v)
{
  char tmp[24];
  size_t k = sizeof tmp;
  do {
    tmp[--k] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  put(s, tmp + k, sizeof tmp - k);
}

static void put_i64(struct sink *s, int64_t v)
{
  if (v < 0) {
    put(s, "-", 1);
    put_u64(s, (uint64_t)0 - (uint64_t)v);
  } else {
    put_u64(s, (uint64_t)v);
  }
}

static void put_comment(struct sink *s, const char *c)
{
  while (c && *c) {
    const char *nl = strchr(c, '\n');
    size_t n = nl ? (size_t)(nl - c) : strlen(c);
    put(s, n ? "# " : "#", n ? 2 : 1);
    put(s, c, n);
    put(s, "\n", 1);
    c += n + (nl != NULL);
  }
}

/* Which optional columns the writer adds. */
struct columns {
  int align;  /* some tensor has an alignment of its own */
  int offset; /* some tensor is pinned */
  int alias;  /* some tensor declares an alias */
};

static void put_rows(struct sink *s, const struct planner_graph *g,
                     const struct columns *c)
{
  put(s, "id,size,first,last", 18);
  if (c->align)
    put(s, ",align", 6);
  if (c->offset)
    put(s, ",offset", 7);
  if (c->alias)
    put(s, ",alias", 6);
  put(s, "\n", 1);
  for (size_t i = 0; i < g->n_tensors; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    put_u64(s, t->id);
    put(s, ",", 1);
    put_u64(s, t->size);
    put(s, ",", 1);
    put_i64(s, t->first);
    put(s, ",", 1);
    put_i64(s, t->last);
    if (c->align) {
      put(s, ",", 1);
      put_u64(s, t->align);
    }
    if (c->offset) {
      put(s, ",", 1);
      if (t->pinned != PLANNER_NOT_PINNED)
        put_i64(s, t->pinned);
    }
    if (c->alias) {
      put(s, ",", 1);
      if (t->has_alias)
        put_u64(s, t->alias);
    }
    put(s, "\n", 1);
  }
}

static void write_all(struct sink *s, const struct planner_graph *g,
                      const char *comment)
{
  struct columns c = {0, 0, 0};
  for (size_t i = 0; i < g->n_tensors; i++) {
    c.align |= g->tensors[i].align != 0;
    c.offset |= g->tensors[i].pinned != PLANNER_NOT_PINNED;
    c.alias |= g->tensors[i].has_alias != 0;
  }
  put_comment(s, comment);
  put_rows(s, g, &c);
}

int planner_csv_write(const struct planner_graph *g, const char *comment,
                      char *buf, size_t cap, size_t *len_out)
{
  if (len_out)
    *len_out = 0;
  if (!g || !len_out || (!g->tensors && g->n_tensors > 0) || (!buf && cap))
    return ARENA_EINVAL;
  struct sink s = {buf, cap, 0};
  write_all(&s, g, comment);
  *len_out = s.len;
  if (s.len >= cap) {
    if (cap)
      buf[0] = '\0';
    return ARENA_ETOOBIG;
  }
  buf[s.len] = '\0';
  return 0;
}

int planner_csv_write_alloc(const struct planner_graph *g, const char *comment,
                            char **out, size_t *len_out)
{
  size_t need = 0;
  if (len_out)
    *len_out = 0;
  if (!out)
    return ARENA_EINVAL;
  *out = NULL;
  int rc = planner_csv_write(g, comment, NULL, 0, &need);
  if (rc != ARENA_ETOOBIG)
    return rc == 0 ? ARENA_EINTERNAL : rc;
  char *buf = malloc(need + 1);
  if (!buf)
    return ARENA_ENOMEM;
  rc = planner_csv_write(g, comment, buf, need + 1, &need);
  if (rc) {
    free(buf);
    return rc;
  }
  *out = buf;
  if (len_out)
    *len_out = need;
  return 0;
}

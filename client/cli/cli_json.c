/*
 * cli_json.c - the reader of plan JSON (the output of `arenactl plan
 * --json`) for the model subcommands, behind cli_graph_load().
 *
 * DESIGN
 *  A small recursive-descent reader over the whole file in memory. It
 *  knows the fixed schema of `arenactl plan --json` and skips any other
 *  key, so new keys in that output do not break it; it nests at most
 *  JSON_MAX_DEPTH levels, so hostile input cannot exhaust the stack.
 *  Errors name the byte where reading stopped.
 */
#include "cli_json.h"

#include "cli.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

/* The JSON reading position. */
struct json {
  const char *p;   /* next byte */
  const char *e;   /* end of input */
  int depth;       /* current nesting */
  char msg[128];   /* first error */
};

static int jfail(struct json *j, const char *m)
{
  if (!j->msg[0])
    snprintf(j->msg, sizeof j->msg, "%s", m);
  return -1;
}

static void jws(struct json *j)
{
  while (j->p < j->e && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' ||
                         *j->p == '\r'))
    j->p++;
}

static int jlit(struct json *j, char c)
{
  jws(j);
  if (j->p < j->e && *j->p == c) {
    j->p++;
    return 0;
  }
  char m[48];
  snprintf(m, sizeof m, "expected '%c'", c);
  return jfail(j, m);
}

/* Reads a string into out (cap bytes, truncated; escapes kept raw). */
static int jstr(struct json *j, char *out, size_t cap)
{
  size_t n = 0;
  if (jlit(j, '"'))
    return -1;
  while (j->p < j->e && *j->p != '"') {
    if (*j->p == '\\') {
      j->p++;
      if (j->p >= j->e)
        break;
    }
    if (out && n + 1 < cap)
      out[n++] = *j->p;
    j->p++;
  }
  if (out)
    out[n] = '\0';
  if (j->p >= j->e)
    return jfail(j, "unterminated string");
  j->p++;
  return 0;
}

static int jnum(struct json *j, uint64_t *v)
{
  uint64_t x = 0;
  int any = 0;
  jws(j);
  while (j->p < j->e && isdigit((unsigned char)*j->p)) {
    unsigned d = (unsigned)(*j->p - '0');
    if (x > (UINT64_MAX - d) / 10)
      return jfail(j, "number out of range");
    x = x * 10 + d;
    any = 1;
    j->p++;
  }
  if (!any)
    return jfail(j, "expected a non-negative integer");
  *v = x;
  return 0;
}

static int jskip(struct json *j)
{
  jws(j);
  if (j->p >= j->e)
    return jfail(j, "unexpected end of input");
  char c = *j->p;
  if (c == '"')
    return jstr(j, NULL, 0);
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    if (++j->depth > JSON_MAX_DEPTH)
      return jfail(j, "nested too deeply");
    j->p++;
    jws(j);
    if (j->p < j->e && *j->p == close) {
      j->p++;
      j->depth--;
      return 0;
    }
    for (;;) {
      if (c == '{' && (jstr(j, NULL, 0) || jlit(j, ':')))
        return -1;
      if (jskip(j))
        return -1;
      jws(j);
      if (j->p < j->e && *j->p == ',') {
        j->p++;
        continue;
      }
      if (jlit(j, close))
        return -1;
      j->depth--;
      return 0;
    }
  }
  const char *s = j->p;
  while (j->p < j->e && (isalnum((unsigned char)*j->p) || *j->p == '-' ||
                         *j->p == '+' || *j->p == '.'))
    j->p++;
  return j->p > s ? 0 : jfail(j, "unexpected character");
}

/* Iterates the members of an object: calls f(j, key, ctx) for each. */
static int jobject(struct json *j, int (*f)(struct json *, const char *, void *),
                   void *ctx)
{
  char key[64];
  if (jlit(j, '{'))
    return -1;
  jws(j);
  if (j->p < j->e && *j->p == '}') {
    j->p++;
    return 0;
  }
  for (;;) {
    if (jstr(j, key, sizeof key) || jlit(j, ':') || f(j, key, ctx))
      return -1;
    jws(j);
    if (j->p < j->e && *j->p == ',') {
      j->p++;
      continue;
    }
    return jlit(j, '}');
  }
}

/* One tensor row of a plan, and the growing list of them. */
struct jplan {
  struct cli_graph *g; /* being filled */
  size_t cap;          /* allocated entries */
  struct planner_tensor t; /* the row being read */
  uint64_t off;        /* its offset */
  int seen;            /* bit mask of keys seen */
};

/* The optional "alias" of a tensor: the id whose bytes it may reuse. */
static int jalias(struct json *j, struct planner_tensor *t)
{
  uint64_t v;
  if (jnum(j, &v))
    return -1;
  if (v > UINT32_MAX)
    return jfail(j, "tensor field out of range");
  t->alias = (uint32_t)v;
  t->has_alias = 1;
  return 0;
}

static int jtensor_key(struct json *j, const char *k, void *ctx)
{
  struct jplan *jp = ctx;
  uint64_t v;
  static const char *const keys[] = {"id", "size", "first", "last", "offset"};
  if (strcmp(k, "alias") == 0)
    return jalias(j, &jp->t);
  for (int i = 0; i < 5; i++)
    if (strcmp(k, keys[i]) == 0) {
      if (jnum(j, &v))
        return -1;
      if ((i == 0 && v > UINT32_MAX) || ((i == 2 || i == 3) && v > INT64_MAX))
        return jfail(j, "tensor field out of range");
      jp->seen |= 1 << i;
      switch (i) {
      case 0: jp->t.id = (uint32_t)v; break;
      case 1: jp->t.size = v; break;
      case 2: jp->t.first = (int64_t)v; break;
      case 3: jp->t.last = (int64_t)v; break;
      default: jp->off = v; break;
      }
      return 0;
    }
  return jskip(j);
}

static int jtensors(struct json *j, struct jplan *jp)
{
  struct cli_graph *g = jp->g;
  if (jlit(j, '['))
    return -1;
  jws(j);
  if (j->p < j->e && *j->p == ']') {
    j->p++;
    return 0;
  }
  for (;;) {
    memset(&jp->t, 0, sizeof jp->t);
    jp->t.pinned = PLANNER_NOT_PINNED;
    jp->seen = 0;
    if (jobject(j, jtensor_key, jp))
      return -1;
    if (jp->seen != 0x1f)
      return jfail(j, "a tensor lacks one of id, size, first, last, offset");
    if (g->n == jp->cap) {
      if (jp->cap >= PLANNER_MAX_TENSORS)
        return jfail(j, "too many tensors");
      size_t nc = jp->cap ? jp->cap * 2 : 64;
      struct planner_tensor *nt = realloc(g->tensors, nc * sizeof *nt);
      if (nt)
        g->tensors = nt;
      uint64_t *no = realloc(g->offsets, nc * sizeof *no);
      if (no)
        g->offsets = no;
      if (!nt || !no)
        return jfail(j, "out of memory");
      jp->cap = nc;
    }
    g->tensors[g->n] = jp->t;
    g->offsets[g->n] = jp->off;
    g->n++;
    jws(j);
    if (j->p < j->e && *j->p == ',') {
      j->p++;
      continue;
    }
    return jlit(j, ']');
  }
}

static int jplan_key(struct json *j, const char *k, void *ctx)
{
  struct jplan *jp = ctx;
  if (strcmp(k, "tensors") == 0)
    return jtensors(j, jp);
  if (strcmp(k, "arena_bytes") == 0)
    return jnum(j, &jp->g->arena_bytes);
  if (strcmp(k, "alignment") == 0)
    return jnum(j, &jp->g->alignment);
  if (strcmp(k, "algorithm") == 0)
    return jstr(j, jp->g->algo, sizeof jp->g->algo);
  return jskip(j);
}

/* Reads the plan in buf[0 .. len) into g. Returns 0, or -1 with j's
 * position and message saying where and why it stopped. */
static int read_plan(struct json *j, const char *buf, size_t len,
                     struct cli_graph *g)
{
  struct jplan jp;
  memset(j, 0, sizeof *j);
  memset(&jp, 0, sizeof jp);
  j->p = buf;
  j->e = buf + len;
  jp.g = g;
  g->kind = CLI_GRAPH_PLAN;
  int rc = jobject(j, jplan_key, &jp);
  if (rc == 0) {
    jws(j);
    if (j->p != j->e)
      rc = jfail(j, "text after the JSON object");
  }
  if (rc == 0 && g->n == 0)
    rc = jfail(j, "the plan has no tensors");
  return rc;
}

int cli_json_load(const char *what, const char *buf, size_t len,
                  struct cli_graph *g)
{
  struct json j;
  if (read_plan(&j, buf, len, g)) {
    cli_error(what, "plan JSON, byte %zu: %s", (size_t)(j.p - buf), j.msg);
    return strstr(j.msg, "memory") ? CLI_EX_OSERR : CLI_EX_DATAERR;
  }
  return 0;
}

int cli_json_prefix_check(const char *buf, size_t len,
                          char err[ARENA_ERR_LEN])
{
  struct json j;
  struct cli_graph g;
  memset(&g, 0, sizeof g);
  int rc = read_plan(&j, buf, len, &g);
  free(g.tensors); /* the reader fills nothing else */
  free(g.offsets);
  /* The reader only moves forward, so one that stopped before the end
   * never saw the end: the bytes after cannot change its verdict. One
   * that ran out of bytes, or of memory, may yet read the whole. */
  if (rc == 0 || j.p == j.e || strstr(j.msg, "memory"))
    return 0;
  snprintf(err, ARENA_ERR_LEN, "plan JSON, byte %zu: %s",
           (size_t)(j.p - buf), j.msg);
  return ARENA_EPARSE;
}


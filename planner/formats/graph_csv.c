/*
 * graph_csv.c - reads lifetime graphs from CSV text (see graph_csv.h
 * for the formats); the writer is graph_csv_write.c.
 *
 * DESIGN
 *  The parser walks the buffer once, line by line (memchr for the line
 *  end), so its cost is linear in the input. The header is turned into a
 *  small column map (field position -> meaning); each row is then split
 *  at commas into at most COL__COUNT fields and every field is converted
 *  by the rule for its column. The tensor array grows geometrically.
 *  Nothing reads past buf + len: the text need not be NUL-terminated.
 *
 *  A stream (planner_csv_stream_t) is the same parser kept between
 *  calls: each feed parses the complete lines that arrived since the
 *  last one, and the finish parses the last line and makes the checks
 *  that need the whole text. Its state holds no pointer into the text,
 *  only offsets (bytes consumed, where the header's names are), because
 *  a caller that reads a file into a growing buffer moves the text
 *  between calls. A line parses the same wherever the text is cut, so a
 *  stream gives exactly the result and the message of one parse of the
 *  whole text; planner_csv_parse() is a stream fed once.
 */
#include "graph_csv.h"

#include <assert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* What a column means. */
enum col {
  COL_ID,
  COL_SIZE,
  COL_FIRST,
  COL_LAST,
  COL_LOWER,
  COL_UPPER,
  COL_ALIGN,
  COL_OFFSET,
  COL_ALIAS,
  COL__COUNT
};

static const struct {
  const char *name; /* lower case */
  enum col col;
} col_names[] = {
    {"id", COL_ID},         {"tensor_index", COL_ID}, {"size", COL_SIZE},
    {"size_bytes", COL_SIZE}, {"first", COL_FIRST},   {"first_op", COL_FIRST},
    {"last", COL_LAST},     {"last_op", COL_LAST},    {"lower", COL_LOWER},
    {"upper", COL_UPPER},   {"align", COL_ALIGN},     {"alignment", COL_ALIGN},
    {"offset", COL_OFFSET}, {"alias", COL_ALIAS},
};

/* A byte range [p, e) inside the input. */
struct span {
  const char *p; /* first byte */
  const char *e; /* one past the last byte */
};

/* How a header name is spelled, kept for messages: a stream's text may
 * move, and its consumed lines may be dropped, between the calls. Every
 * name lookup_col() accepts fits. */
struct name_at {
  char s[16]; /* its bytes, as the header has them */
  size_t len; /* bytes */
};

/* The parsed header. */
struct header {
  int n_cols;                      /* fields per row, 1 .. COL__COUNT */
  enum col cols[COL__COUNT];       /* meaning of field i */
  struct name_at names[COL__COUNT]; /* spelling of field i, for messages */
  enum planner_csv_format fmt;     /* dialect */
};

/* Reading position. */
struct cursor {
  const char *p;   /* next unread byte */
  const char *end; /* end of input */
  size_t line;     /* number of the line last returned, 1-based */
};

/* Parser state, kept between the calls of a stream. */
struct parser {
  struct cursor cur;          /* where we are; p and end point into the
                                 text of the current call only */
  size_t done;                /* bytes of the text consumed (whole lines,
                                 or a byte order mark) */
  size_t seen;                /* bytes of the text looked at for a line
                                 end, >= done */
  size_t dropped;             /* bytes the caller dropped from the
                                 text's start (planner_csv_stream_drop) */
  int have_header;            /* 1: the header line was read */
  int fast;                   /* 1: every column is a plain number, so
                                 fast_row() may read a row */
  struct header hdr;          /* column map */
  struct planner_tensor *t;   /* rows so far, owned until handed out */
  size_t n;                   /* rows used */
  size_t cap;                 /* rows allocated */
  int labels;                 /* 1: some MiniMalloc id was not a number */
  int rc;                     /* first error, kept: 0 or ARENA_E* */
  char msg[ARENA_ERR_LEN];    /* its message */
};

struct planner_csv_stream {
  struct parser ps; /* the parser between calls */
};

/* Result of reading one number. */
enum num {
  NUM_OK,
  NUM_EMPTY,
  NUM_NOT_NUMBER,
  NUM_NEGATIVE,
  NUM_RANGE,
};

/* ---- small helpers ------------------------------------------------------ */

#if defined(__GNUC__) || defined(__clang__)
#define CSV_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CSV_PRINTF(f, a)
#endif

static int fail(struct parser *ps, int code, const char *fmt, ...)
    CSV_PRINTF(3, 4);

static int fail(struct parser *ps, int code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ps->msg, sizeof ps->msg, fmt, ap);
  va_end(ap);
  return code;
}

/* The spelling of header field i. */
static struct span name_of(const struct parser *ps, int i)
{
  const struct name_at *a = &ps->hdr.names[i];
  return (struct span){a->s, a->s + a->len};
}

static int is_blank(char c)
{
  return c == ' ' || c == '\t';
}

static struct span trim(struct span s)
{
  while (s.p < s.e && is_blank(*s.p))
    s.p++;
  while (s.e > s.p && is_blank(s.e[-1]))
    s.e--;
  return s;
}

/* Copies up to 40 bytes of s into out (printable ASCII, others as '?')
 * for quoting in a message, with "..." when cut. */
static const char *quote(struct span s, char out[48])
{
  size_t n = (size_t)(s.e - s.p), k = 0;
  for (; k < n && k < 40; k++) {
    unsigned char c = (unsigned char)s.p[k];
    out[k] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
  }
  if (k < n) {
    memcpy(out + k, "...", 3);
    k += 3;
  }
  out[k] = '\0';
  return out;
}

/* Returns the next line in *ln without its "\n" or "\r\n", or 0 at the end
 * of input. */
static int next_line(struct cursor *c, struct span *ln)
{
  if (c->p >= c->end)
    return 0;
  const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
  ln->p = c->p;
  ln->e = nl ? nl : c->end;
  c->p = nl ? nl + 1 : c->end;
  if (ln->e > ln->p && ln->e[-1] == '\r')
    ln->e--;
  c->line++;
  return 1;
}

/* A line that holds nothing or only a comment. */
static int skippable(struct span ln)
{
  ln = trim(ln);
  return ln.p == ln.e || *ln.p == '#';
}

/* Splits ln at commas into at most max fields (trimmed). Returns the total
 * number of fields on the line, which may exceed max. */
static int split(struct span ln, struct span *f, int max)
{
  int n = 0;
  const char *p = ln.p;
  for (;;) {
    const char *c = memchr(p, ',', (size_t)(ln.e - p));
    const char *e = c ? c : ln.e;
    if (n < max)
      f[n] = trim((struct span){p, e});
    n++;
    if (!c)
      return n;
    p = c + 1;
  }
}

/* Reads a plain decimal number no larger than max. */
static enum num read_u64(struct span s, uint64_t max, uint64_t *v)
{
  *v = 0;
  if (s.p == s.e)
    return NUM_EMPTY;
  int neg = *s.p == '-';
  const char *p = s.p + neg;
  if (p == s.e)
    return NUM_NOT_NUMBER;
  uint64_t x = 0;
  int big = 0;
  for (; p < s.e; p++) {
    unsigned d = (unsigned)(unsigned char)*p - '0';
    if (d > 9)
      return NUM_NOT_NUMBER;
    if (x > (UINT64_MAX - d) / 10)
      big = 1;
    else
      x = x * 10 + d;
  }
  if (neg) /* "-0" too: numbers take no sign */
    return NUM_NEGATIVE;
  if (big || x > max)
    return NUM_RANGE;
  *v = x;
  return NUM_OK;
}

static int name_is(struct span s, const char *name)
{
  size_t n = strlen(name);
  if ((size_t)(s.e - s.p) != n)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s.p[i];
    if (c >= 'A' && c <= 'Z')
      c = (char)(c - 'A' + 'a');
    if (c != name[i])
      return 0;
  }
  return 1;
}

/* Returns the column a header name stands for, or -1. */
static int lookup_col(struct span s)
{
  for (size_t i = 0; i < sizeof col_names / sizeof col_names[0]; i++)
    if (name_is(s, col_names[i].name))
      return (int)col_names[i].col;
  return -1;
}

/* ---- header ------------------------------------------------------------- */

static const char *const HDR_HINT =
    "expected 'id,size,first,last' or 'id,lower,upper,size'";

/* Checks that the header holds the columns its dialect needs. */
static int check_columns(struct parser *ps, const int *seen)
{
  static const enum col ours[] = {COL_ID, COL_SIZE, COL_FIRST, COL_LAST};
  static const enum col mm[] = {COL_ID, COL_LOWER, COL_UPPER, COL_SIZE};
  static const char *const name[COL__COUNT] = {
      "id",    "size",  "first",  "last", "lower",
      "upper", "align", "offset", "alias"};
  int is_mm = seen[COL_LOWER] >= 0 || seen[COL_UPPER] >= 0;
  const enum col *need = is_mm ? mm : ours;
  ps->hdr.fmt = is_mm ? PLANNER_CSV_MINIMALLOC : PLANNER_CSV_OURS;
  for (int i = 0; i < 4; i++)
    if (seen[need[i]] < 0)
      return fail(ps, ARENA_EPARSE, "line %zu: header lacks column '%s' (%s)",
                  ps->cur.line, name[need[i]],
                  is_mm ? "MiniMalloc: id,lower,upper,size"
                        : "id,size,first,last");
  if (is_mm && (seen[COL_FIRST] >= 0 || seen[COL_LAST] >= 0)) {
    int at = seen[COL_FIRST] >= 0 ? seen[COL_FIRST] : seen[COL_LAST];
    struct span s = name_of(ps, at);
    return fail(ps, ARENA_EPARSE,
                "line %zu: column '%.*s' cannot be mixed with lower/upper",
                ps->cur.line, (int)(s.e - s.p), s.p);
  }
  return 0;
}

static int parse_header(struct parser *ps, struct span ln)
{
  struct span f[COL__COUNT + 1];
  int seen[COL__COUNT];
  char q[48];
  int n = split(ln, f, COL__COUNT + 1);
  for (int c = 0; c < COL__COUNT; c++)
    seen[c] = -1;
  for (int i = 0; i < n && i <= COL__COUNT; i++) {
    int c = lookup_col(f[i]);
    if (c < 0 && i == 0)
      return fail(ps, ARENA_EPARSE, "line %zu: missing header (%s), found '%s'",
                  ps->cur.line, HDR_HINT, quote(trim(ln), q));
    if (c < 0)
      return fail(ps, ARENA_EPARSE, "line %zu: unknown column '%s'",
                  ps->cur.line, quote(f[i], q));
    if (seen[c] >= 0)
      return fail(ps, ARENA_EPARSE, "line %zu: column '%s' given twice",
                  ps->cur.line, quote(f[i], q));
    seen[c] = i;
    ps->hdr.cols[i] = (enum col)c;
    ps->hdr.names[i].len = (size_t)(f[i].e - f[i].p);
    assert(ps->hdr.names[i].len <= sizeof ps->hdr.names[i].s);
    memcpy(ps->hdr.names[i].s, f[i].p, ps->hdr.names[i].len);
  }
  ps->hdr.n_cols = n;
  ps->fast = 1;
  for (int i = 0; i < n; i++)
    ps->fast &= ps->hdr.cols[i] != COL_OFFSET && ps->hdr.cols[i] != COL_ALIAS;
  return check_columns(ps, seen);
}

/* ---- rows --------------------------------------------------------------- */

/* Converts field s of column i into *v, or fails with a message. */
static int field_u64(struct parser *ps, int i, struct span s, uint64_t max,
                     uint64_t *v)
{
  struct span nm = name_of(ps, i);
  char q[48];
  switch (read_u64(s, max, v)) {
  case NUM_OK:
    return 0;
  case NUM_EMPTY:
    return fail(ps, ARENA_EPARSE, "line %zu: %.*s: empty field", ps->cur.line,
                (int)(nm.e - nm.p), nm.p);
  case NUM_NEGATIVE:
    return fail(ps, ARENA_EPARSE, "line %zu: %.*s: negative: '%s'",
                ps->cur.line, (int)(nm.e - nm.p), nm.p, quote(s, q));
  case NUM_RANGE:
    return fail(ps, ARENA_EOVERFLOW,
                "line %zu: %.*s: out of range (max %llu): '%s'", ps->cur.line,
                (int)(nm.e - nm.p), nm.p, (unsigned long long)max, quote(s, q));
  default:
    return fail(ps, ARENA_EPARSE, "line %zu: %.*s: not a number: '%s'",
                ps->cur.line, (int)(nm.e - nm.p), nm.p, quote(s, q));
  }
}

/* The offset column: empty or -1 means not pinned. */
static int field_offset(struct parser *ps, int i, struct span s, int64_t *pin)
{
  uint64_t v;
  if (s.p == s.e || (s.e - s.p == 2 && s.p[0] == '-' && s.p[1] == '1')) {
    *pin = PLANNER_NOT_PINNED;
    return 0;
  }
  int rc = field_u64(ps, i, s, INT64_MAX, &v);
  *pin = (int64_t)v;
  return rc;
}

/* The alias column: empty means no alias, else the id of the tensor
 * whose bytes this one may reuse, read like an id cell. */
static int field_alias(struct parser *ps, int i, struct span s,
                       struct planner_tensor *t)
{
  uint64_t v = 0;
  if (s.p == s.e)
    return 0;
  int rc = field_u64(ps, i, s, UINT32_MAX, &v);
  t->alias = (uint32_t)v;
  t->has_alias = rc == 0;
  return rc;
}

/* The id column. MiniMalloc ids may be labels; those are noted here and
 * replaced by row numbers once all rows are read. */
static int field_id(struct parser *ps, int i, struct span s, uint32_t *id)
{
  uint64_t v = 0;
  if (ps->hdr.fmt == PLANNER_CSV_MINIMALLOC && s.p != s.e) {
    if (read_u64(s, UINT32_MAX, &v) != NUM_OK)
      ps->labels = 1;
    *id = (uint32_t)v;
    return 0;
  }
  int rc = field_u64(ps, i, s, UINT32_MAX, &v);
  *id = (uint32_t)v;
  return rc;
}

/* Fills t->first and t->last from the raw lifetime fields. */
static int lifetime(struct parser *ps, uint64_t a, uint64_t b,
                    struct planner_tensor *t)
{
  if (ps->hdr.fmt == PLANNER_CSV_MINIMALLOC) {
    if (a >= b)
      return fail(ps, ARENA_EPARSE,
                  "line %zu: lower %llu is not below upper %llu (upper is "
                  "exclusive)",
                  ps->cur.line, (unsigned long long)a, (unsigned long long)b);
    b--;
  } else if (a > b) {
    return fail(ps, ARENA_EPARSE, "line %zu: first %llu is after last %llu",
                ps->cur.line, (unsigned long long)a, (unsigned long long)b);
  }
  t->first = (int64_t)a;
  t->last = (int64_t)b;
  return 0;
}

/* Converts the fields of one row into *t. */
static int parse_fields(struct parser *ps, const struct span *f,
                        struct planner_tensor *t)
{
  uint64_t a = 0, b = 0;
  int rc = 0;
  t->align = 0;
  t->pinned = PLANNER_NOT_PINNED;
  t->alias = 0;
  t->has_alias = 0;
  for (int i = 0; i < ps->hdr.n_cols && rc == 0; i++) {
    switch (ps->hdr.cols[i]) {
    case COL_ID:
      rc = field_id(ps, i, f[i], &t->id);
      break;
    case COL_SIZE:
      rc = field_u64(ps, i, f[i], UINT64_MAX, &t->size);
      break;
    case COL_FIRST:
    case COL_LOWER:
      rc = field_u64(ps, i, f[i], INT64_MAX, &a);
      break;
    case COL_LAST:
    case COL_UPPER:
      rc = field_u64(ps, i, f[i], INT64_MAX, &b);
      break;
    case COL_ALIGN:
      rc = f[i].p == f[i].e ? 0 : field_u64(ps, i, f[i], UINT64_MAX, &t->align);
      break;
    case COL_OFFSET:
      rc = field_offset(ps, i, f[i], &t->pinned);
      break;
    case COL_ALIAS:
      rc = field_alias(ps, i, f[i], t);
      break;
    default:
      assert(0 && "unknown column");
      break;
    }
  }
  return rc ? rc : lifetime(ps, a, b, t);
}

/* Asks for huge pages where the rows' array has room it has not yet
 * written: a million rows take 56 MB, and the first write of each page
 * is a page fault, 512 times fewer in 2 MiB pages. Only a hint (Linux):
 * it changes no byte, and is ignored where it cannot be taken. */
static void advise_huge(void *p, size_t len)
{
#ifdef MADV_HUGEPAGE
  const uintptr_t huge = (uintptr_t)1 << 21;
  uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
  uintptr_t e = ((uintptr_t)p + len) & ~(huge - 1);
  if (e > a)
    (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
  (void)p;
  (void)len;
#endif
}

/* Makes room for one more row. */
static int grow(struct parser *ps)
{
  if (ps->n < ps->cap)
    return 0;
  if (ps->n >= PLANNER_MAX_TENSORS)
    return fail(ps, ARENA_ETOOBIG, "line %zu: more than %u tensors",
                ps->cur.line, PLANNER_MAX_TENSORS);
  size_t cap = ps->cap ? ps->cap * 2 : 256;
  if (cap > PLANNER_MAX_TENSORS)
    cap = PLANNER_MAX_TENSORS;
  struct planner_tensor *t = realloc(ps->t, cap * sizeof *t);
  if (!t)
    return fail(ps, ARENA_ENOMEM, "line %zu: out of memory", ps->cur.line);
  advise_huge(t + ps->cap, (cap - ps->cap) * sizeof *t);
  ps->t = t;
  ps->cap = cap;
  return 0;
}

/* Most rows hold only plain numbers in range: fast_row() reads those in
 * one pass over the line, with no split, trim or message, into *t and
 * the raw lifetime a, b, as parse_fields() would. Any other row (a
 * blank, empty or odd field, a number out of range or of more than 19
 * digits, a MiniMalloc label, the wrong field count) returns 0 before
 * anything is kept, and the general path reads it, with its message. */
static int fast_row(const struct parser *ps, struct span ln,
                    struct planner_tensor *t, uint64_t *a, uint64_t *b)
{
  const char *p = ln.p, *e = ln.e;
  t->align = 0;
  t->pinned = PLANNER_NOT_PINNED;
  t->alias = 0;
  t->has_alias = 0;
  for (int i = 0; i < ps->hdr.n_cols; i++) {
    while (p < e && is_blank(*p))
      p++;
    const char *d = p;
    uint64_t x = 0;
    for (unsigned c; p < e && (c = (unsigned)(unsigned char)*p - '0') < 10;
         p++)
      x = x * 10 + c;
    if (p == d || p - d > 19) /* 19 digits never wrap a uint64_t */
      return 0;
    while (p < e && is_blank(*p))
      p++;
    if (i + 1 < ps->hdr.n_cols ? p == e || *p++ != ',' : p != e)
      return 0;
    switch (ps->hdr.cols[i]) {
    case COL_ID:
      if (x > UINT32_MAX)
        return 0;
      t->id = (uint32_t)x;
      break;
    case COL_SIZE:
      t->size = x;
      break;
    case COL_ALIGN:
      t->align = x;
      break;
    case COL_FIRST:
    case COL_LOWER:
    case COL_LAST:
    case COL_UPPER:
      if (x > INT64_MAX)
        return 0;
      *(ps->hdr.cols[i] == COL_FIRST || ps->hdr.cols[i] == COL_LOWER ? a
                                                                      : b) = x;
      break;
    default:
      return 0;
    }
  }
  return 1;
}

static int parse_row(struct parser *ps, struct span ln)
{
  struct planner_tensor row;
  uint64_t a = 0, b = 0;
  if (ps->fast && fast_row(ps, ln, &row, &a, &b)) {
    int rc = grow(ps);
    if (rc == 0 && (rc = lifetime(ps, a, b, &row)) == 0)
      ps->t[ps->n++] = row;
    return rc;
  }
  struct span f[COL__COUNT];
  int n = split(ln, f, COL__COUNT);
  if (n != ps->hdr.n_cols)
    return fail(ps, ARENA_EPARSE, "line %zu: expected %d fields, found %d",
                ps->cur.line, ps->hdr.n_cols, n);
  int rc = grow(ps);
  if (rc)
    return rc;
  rc = parse_fields(ps, f, &ps->t[ps->n]);
  if (rc == 0)
    ps->n++;
  return rc;
}

/* Replaces MiniMalloc labels by row numbers. An alias names an id, which
 * labels do not have, so a file with labels may not declare any. */
static int renumber(struct parser *ps)
{
  for (size_t i = 0; i < ps->n; i++) {
    if (ps->t[i].has_alias)
      return fail(ps, ARENA_EPARSE,
                  "row %zu: alias: the ids are labels, renumbered by row, "
                  "so an alias cannot name one; use numeric ids",
                  i + 1);
    ps->t[i].id = (uint32_t)i;
  }
  return 0;
}

/* Parses the lines of text (the whole text of this call, which begins
 * with the bytes of the earlier calls) from ps->done up to end; sets
 * ps->rc on an error. */
static int parse_lines(struct parser *ps, const char *text, size_t end)
{
  struct span ln;
  int rc = 0;
  if (ps->done == 0 && ps->dropped == 0 && end >= 3 &&
      memcmp(text, "\xEF\xBB\xBF", 3) == 0)
    ps->done = 3; /* a UTF-8 byte order mark, as some editors write */
  ps->cur.p = text + ps->done;
  ps->cur.end = text + end;
  while (rc == 0 && next_line(&ps->cur, &ln)) {
    if (skippable(ln))
      continue;
    if (ps->have_header) {
      rc = parse_row(ps, ln);
    } else {
      rc = parse_header(ps, ln);
      ps->have_header = 1;
    }
  }
  ps->done = (size_t)(ps->cur.p - text);
  ps->rc = rc;
  return rc;
}

/* The checks that need the whole text, once its last line is parsed. */
static int parse_end(struct parser *ps)
{
  int rc = 0;
  if (!ps->have_header)
    rc = fail(ps, ARENA_EEMPTY, "empty input: no header (%s)", HDR_HINT);
  else if (ps->n == 0)
    rc = fail(ps, ARENA_EEMPTY, "no tensors: the header is not followed by "
                                "any rows");
  else if (ps->labels)
    rc = renumber(ps);
  ps->rc = rc;
  return rc;
}

/* Hands the rows of a finished parse to out (which holds nothing). */
static void hand_out(struct parser *ps, struct planner_csv *out)
{
  struct planner_tensor *t = realloc(ps->t, ps->n * sizeof *t);
  out->tensors = t ? t : ps->t; /* shrinking never needs to succeed */
  out->n_tensors = ps->n;
  out->format = ps->hdr.fmt;
  out->ids_renumbered = ps->labels;
  ps->t = NULL;
  ps->n = ps->cap = 0;
}

/* Returns rc with the parser's message copied to err (may be NULL). */
static int report(const struct parser *ps, int rc, char *err)
{
  if (err)
    snprintf(err, ARENA_ERR_LEN, "%s", rc ? ps->msg : "");
  return rc;
}

/* ---- public parser API ---------------------------------------------------- */

void planner_csv_init(struct planner_csv *c)
{
  assert(c);
  c->tensors = NULL;
  c->n_tensors = 0;
  c->format = PLANNER_CSV_NONE;
  c->ids_renumbered = 0;
}

void planner_csv_cleanup(struct planner_csv *c)
{
  if (!c)
    return;
  free(c->tensors);
  planner_csv_init(c);
}

int planner_csv_parse(const char *buf, size_t len, struct planner_csv *out,
                      char err[ARENA_ERR_LEN])
{
  struct planner_csv_stream st;
  memset(&st, 0, sizeof st);
  int rc = planner_csv_stream_finish(&st, buf, len, out, err);
  free(st.ps.t);
  return rc;
}

int planner_csv_stream_new(planner_csv_stream_t **out)
{
  *out = calloc(1, sizeof **out);
  return *out ? 0 : ARENA_ENOMEM;
}

void planner_csv_stream_free(planner_csv_stream_t *s)
{
  if (!s)
    return;
  free(s->ps.t);
  free(s);
}

int planner_csv_stream_feed(planner_csv_stream_t *s, const char *buf,
                            size_t len, char err[ARENA_ERR_LEN])
{
  struct parser *ps = &s->ps;
  if (ps->rc || (!buf && len > 0))
    return report(ps, ps->rc ? ps->rc
                             : fail(ps, ARENA_EINVAL, "NULL argument"),
                  err);
  assert(len >= ps->seen && "the text never shrinks");
  /* the end of the last complete line: only the new bytes are looked at,
   * so feeding a text in parts costs one pass over it */
  size_t end = len;
  while (end > ps->seen && buf[end - 1] != '\n')
    end--;
  if (end == ps->seen) /* no new line end: [done, seen) holds none */
    end = ps->done;
  ps->seen = len;
  if (end <= ps->done)
    return report(ps, 0, err);
  return report(ps, parse_lines(ps, buf, end), err);
}

size_t planner_csv_stream_drop(planner_csv_stream_t *s)
{
  struct parser *ps = &s->ps;
  size_t d = ps->rc ? 0 : ps->done;
  ps->done -= d;
  ps->seen -= d;
  ps->dropped += d;
  return d;
}

int planner_csv_stream_finish(planner_csv_stream_t *s, const char *buf,
                              size_t len, struct planner_csv *out,
                              char err[ARENA_ERR_LEN])
{
  struct parser *ps = &s->ps;
  if (!out || (!buf && len > 0))
    return report(ps, ps->rc ? ps->rc
                             : fail(ps, ARENA_EINVAL, "NULL argument"),
                  err);
  planner_csv_cleanup(out);
  if (!buf)
    buf = "";
  assert(len >= ps->seen && "the text never shrinks");
  ps->seen = len;
  if (!ps->rc && !parse_lines(ps, buf, len) && !parse_end(ps))
    hand_out(ps, out);
  return report(ps, ps->rc, err);
}

struct planner_graph planner_csv_graph(const struct planner_csv *c)
{
  struct planner_graph g = {NULL, 0};
  if (c) {
    g.tensors = c->tensors;
    g.n_tensors = c->n_tensors;
  }
  return g;
}

const char *planner_csv_format_name(enum planner_csv_format f)
{
  switch (f) {
  case PLANNER_CSV_OURS:
    return "ours";
  case PLANNER_CSV_MINIMALLOC:
    return "minimalloc";
  default:
    return "none";
  }
}

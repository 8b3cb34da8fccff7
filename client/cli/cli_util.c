/*
 * cli_util.c - helpers shared by the arenactl subcommands: error output,
 * whole-file reading, strict number and option parsing, and the mapping
 * from ARENA_E* codes to exit statuses (see cli.h).
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cli_error(const char *what, const char *fmt, ...)
{
  va_list ap, ap2;
  char small[512], *msg = small;
  fflush(stdout); /* keep the order of messages when both go to a tty */
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof small && (msg = malloc((size_t)n + 1)) != NULL)
    vsnprintf(msg, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  if (!msg)
    msg = small; /* out of memory: the message cut short */
  fprintf(stderr, "%s: ", CLI_PROG);
  if (what) {
    cli_print_text(stderr, what);
    fputs(": ", stderr);
  }
  cli_print_text(stderr, n < 0 ? fmt : msg);
  fputc('\n', stderr);
  if (msg != small)
    free(msg);
}

/* ---- strings from files and the daemon -------------------------------------- */

/* The length of the valid UTF-8 sequence at s (1 to 4 bytes), or 0 when
 * the byte at s does not begin one: overlong forms, surrogates and code
 * points past U+10FFFF are not valid. *cp is its code point. */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp)
{
  uint32_t c = s[0], min;
  size_t n;
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    c &= 0x1f;
    min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    c &= 0x0f;
    min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    c &= 0x07;
    min = 0x10000;
  } else {
    return 0;
  }
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
      return 0;
    c = c << 6 | (s[i] & 0x3f);
  }
  if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
    return 0;
  *cp = c;
  return n;
}

static int is_control(uint32_t cp)
{
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

void cli_print_text(FILE *f, const char *s)
{
  const unsigned char *p = (const unsigned char *)s;
  while (p && *p) {
    uint32_t cp;
    size_t n = utf8_seq(p, &cp);
    if (n == 0 || is_control(cp)) {
      for (size_t i = 0; i < (n ? n : 1); i++)
        fprintf(f, "\\x%02x", p[i]);
      p += n ? n : 1;
      continue;
    }
    fwrite(p, 1, n, f);
    p += n;
  }
}

void cli_print_json(FILE *f, const char *s)
{
  const unsigned char *p = (const unsigned char *)s;
  fputc('"', f);
  while (p && *p) {
    uint32_t cp;
    size_t n = utf8_seq(p, &cp);
    if (n == 0) {
      fputs("\\ufffd", f);
      p++;
      continue;
    }
    switch (cp) {
    case '"': fputs("\\\"", f); break;
    case '\\': fputs("\\\\", f); break;
    case '\n': fputs("\\n", f); break;
    case '\t': fputs("\\t", f); break;
    case '\r': fputs("\\r", f); break;
    default:
      if (is_control(cp))
        fprintf(f, "\\u%04x", (unsigned)cp);
      else
        fwrite(p, 1, n, f);
    }
    p += n;
  }
  fputc('"', f);
}

/* ---- file reading ----------------------------------------------------------- */

static int set_err(char *err, int code, const char *fmt, ...) CLI_PRINTF(3, 4);

static int set_err(char *err, int code, const char *fmt, ...)
{
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ARENA_ERR_LEN, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* Bytes one read() may bring at most, so that a check sees a file in
 * parts however it arrives. */
#define READ_CHUNK ((size_t)1 << 18)

/* Makes room in *b (capacity *cap bytes of data, plus one for the NUL)
 * for more data, doubling up to CLI_MAX_FILE_LEN + 1 bytes: one byte
 * past the limit tells a file of exactly the limit from a larger one. */
static int grow(char **b, size_t *cap, char *err)
{
  size_t nc = *cap * 2 < CLI_MAX_FILE_LEN + 1 ? *cap * 2
                                              : CLI_MAX_FILE_LEN + 1;
  char *nb = realloc(*b, nc + 1);
  if (!nb)
    return set_err(err, ARENA_ENOMEM, "out of memory");
  *b = nb;
  *cap = nc;
  return 0;
}

/* The most a buffer starts with, however large the file says it is: a
 * file refused at its first MiB (a sparse one of zeros, say) then never
 * costs the memory of its whole size, which a sanitizer's allocator
 * would touch. */
#define READ_FIRST_MAX ((size_t)64 << 20)

/* What is asked after each part read: check, then drop (either may be
 * NULL), both with ctx. */
struct read_asks {
  cli_read_check_cb check;
  cli_read_drop_cb drop;
  void *ctx;
};

/* Room a buffer starts with when the caller drops what it has read:
 * four parts, whatever the file's size. */
#define READ_DROP_ROOM (4 * READ_CHUNK)

/* Reads fd to its end into a growing buffer, in parts of at most
 * READ_CHUNK bytes, asking ask->check after each, then ask->drop, whose
 * bytes leave the buffer's start. size is the bytes expected (a regular
 * file's size; 0 when unknown): without drop the buffer starts with room
 * for them and one more (up to READ_FIRST_MAX), so that a file that does
 * not change while it is read is read without growing the buffer, and
 * the read that finds its end needs no room. */
static int read_fd(int fd, size_t size, const struct read_asks *ask,
                   char **buf, size_t *len, char *err)
{
  size_t cap = size >= ((size_t)1 << 16) ? size + 1 : (size_t)1 << 16;
  if (cap > (ask->drop ? READ_DROP_ROOM : READ_FIRST_MAX))
    cap = ask->drop ? READ_DROP_ROOM : READ_FIRST_MAX;
  size_t n = 0, total = 0; /* bytes in the buffer, bytes read */
  int rc = 0;
  char *b = malloc(cap + 1);
  if (!b)
    return set_err(err, ARENA_ENOMEM, "out of memory");
  for (;;) {
    if (n == cap && (rc = grow(&b, &cap, err)) != 0)
      break;
    size_t want = cap - n < READ_CHUNK ? cap - n : READ_CHUNK;
    ssize_t got = read(fd, b + n, want);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      rc = set_err(err, ARENA_EIO, "read error: %s", strerror(errno));
      break;
    }
    if (got == 0)
      break;
    n += (size_t)got;
    total += (size_t)got;
    if (total > CLI_MAX_FILE_LEN) {
      rc = set_err(err, ARENA_ETOOBIG, "file is larger than %zu bytes",
                   CLI_MAX_FILE_LEN);
      break;
    }
    if (ask->check && (rc = ask->check(ask->ctx, b, n, err)) != 0)
      break;
    size_t d = ask->drop ? ask->drop(ask->ctx) : 0;
    if (d) {
      memmove(b, b + d, n - d);
      n -= d;
    }
  }
  if (rc) {
    free(b);
    return rc;
  }
  b[n] = '\0';
  *buf = b;
  *len = n;
  return 0;
}

static int read_path(const char *path, const struct read_asks *ask,
                     char **buf, size_t *len, char *err)
{
  struct stat st;
  *buf = NULL;
  *len = 0;
  if (strcmp(path, "-") == 0)
    return read_fd(STDIN_FILENO, 0, ask, buf, len, err);
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return set_err(err, ARENA_ENOENT, "cannot open: %s", strerror(errno));
  if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    close(fd);
    return set_err(err, ARENA_ENOENT, "cannot read: is a directory");
  }
  /* A regular file says its size: one over the limit costs no reading. */
  if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > CLI_MAX_FILE_LEN) {
    close(fd);
    return set_err(err, ARENA_ETOOBIG, "file is larger than %zu bytes",
                   CLI_MAX_FILE_LEN);
  }
  size_t size = S_ISREG(st.st_mode) ? (size_t)st.st_size : 0;
  int rc = read_fd(fd, size, ask, buf, len, err);
  close(fd);
  return rc;
}

int cli_read_file_checked(const char *path, cli_read_check_cb check,
                          void *ctx, char **buf, size_t *len,
                          char err[ARENA_ERR_LEN])
{
  struct read_asks ask = {check, NULL, ctx};
  return read_path(path, &ask, buf, len, err);
}

int cli_read_file_parts(const char *path, cli_read_check_cb check,
                        cli_read_drop_cb drop, void *ctx, char **buf,
                        size_t *len, char err[ARENA_ERR_LEN])
{
  struct read_asks ask = {check, drop, ctx};
  return read_path(path, &ask, buf, len, err);
}

int cli_read_file(const char *path, char **buf, size_t *len,
                  char err[ARENA_ERR_LEN])
{
  return cli_read_file_checked(path, NULL, NULL, buf, len, err);
}

/* ---- numbers and options ---------------------------------------------------- */

int cli_parse_u64(const char *s, uint64_t max, uint64_t *v)
{
  uint64_t x = 0;
  *v = 0;
  if (!s || !*s)
    return ARENA_EINVAL;
  for (; *s; s++) {
    unsigned d = (unsigned)(unsigned char)*s - '0';
    if (d > 9)
      return ARENA_EINVAL;
    if (x > (UINT64_MAX - d) / 10)
      return ARENA_EOVERFLOW;
    x = x * 10 + d;
  }
  if (x > max)
    return ARENA_EOVERFLOW;
  *v = x;
  return 0;
}

int cli_parse_bytes(const char *s, uint64_t *v)
{
  char digits[32];
  unsigned shift = 0;
  *v = 0;
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n >= sizeof digits)
    return n == 0 ? ARENA_EINVAL : ARENA_EOVERFLOW;
  memcpy(digits, s, n + 1);
  switch (digits[n - 1]) {
  case 'K': shift = 10; break;
  case 'M': shift = 20; break;
  case 'G': shift = 30; break;
  default: break;
  }
  if (shift)
    digits[n - 1] = '\0';
  uint64_t x;
  int rc = cli_parse_u64(digits, UINT64_MAX >> shift, &x);
  if (rc == 0)
    *v = x << shift;
  return rc;
}

int cli_opt_value(int argc, char **argv, int *i, const char *name,
                  const char **val)
{
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0)
    return 0;
  if (a[n] == '=') {
    *val = a + n + 1;
    return 1;
  }
  if (a[n] != '\0')
    return 0;
  if (*i + 1 >= argc) {
    cli_error(argv[0], "option %s needs a value", name);
    return -1;
  }
  *i += 1;
  *val = argv[*i];
  return 1;
}

/* ---- statuses --------------------------------------------------------------- */

int cli_exit_status(int code)
{
  switch (code) {
  case 0:
    return CLI_EX_OK;
  case ARENA_EPARSE:
  case ARENA_EEMPTY:
  case ARENA_EINVAL:
  case ARENA_EOVERFLOW:
  case ARENA_ELIFETIME:
  case ARENA_EDUPID:
  case ARENA_EALIGN:
  case ARENA_EPINNED:
  case ARENA_ETOOBIG:
  case ARENA_EUNSUPPORTED:
    return CLI_EX_DATAERR;
  case ARENA_ENOENT:
  case ARENA_EDENIED:
    return CLI_EX_NOINPUT;
  case ARENA_ENOMEM:
  case ARENA_EIO:
    return CLI_EX_OSERR;
  case ARENA_EVERIFY:
  case ARENA_EINTERNAL:
    return CLI_EX_SOFTWARE;
  default:
    return CLI_EX_FAIL;
  }
}

int cli_finish_stdout(void)
{
  if (fflush(stdout) != 0 || ferror(stdout)) {
    cli_error(NULL, "writing the output failed: %s", strerror(errno));
    return CLI_EX_IOERR;
  }
  return CLI_EX_OK;
}

/*
 * cli_input.c - reading an input file with early refusal (cli_input.h):
 * the check that cli_read_file_checked() asks after each part it reads.
 *
 * DESIGN
 *  The first 8 bytes tell a TFLite model ("TFL3" at bytes 4..7) from
 *  text; for the commands that also read plan JSON, the first non-blank
 *  byte tells JSON ('{') from a CSV, as cli_graph_load() does. A model
 *  is not checked: its reader needs the whole file.
 *
 *  A CSV is checked two ways. Its lines: the new bytes are scanned for
 *  line ends, and a line longer than CLI_MAX_LINE_LEN is refused (that
 *  stops a file without line ends, /dev/zero say, after 1 MiB). Its
 *  complete lines: after each part, an incremental CSV parse
 *  (planner_csv_stream_feed()) reads the lines completed since the last
 *  part. A complete line parses the same whatever follows it, so an
 *  error there is the whole file's error. That parse is the file's one
 *  parse: at the end it is finished and handed to the caller, so a CSV
 *  is parsed once, while it is read. Plan JSON is checked by its own
 *  reader each time the bytes read have doubled since the last time
 *  (from 64 KiB on; the doublings keep the work under that of one read
 *  of the whole file), which stops before the end of the bytes only at
 *  an error no later byte can undo (cli_json_prefix_check()).
 *
 *  Text that could still begin a valid file (a CSV of valid rows, blank
 *  lines, JSON with blanks) is read on, up to CLI_MAX_FILE_LEN.
 */
#include "cli_input.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_json.h"
#include "graph_csv.h"
#include "tflite.h"

/* Bytes read before the first check of plan JSON. */
#define FIRST_PARSE ((size_t)1 << 16)

/* What the bytes so far are, as far as they tell. */
enum kind {
  K_UNKNOWN = 0, /* too few bytes to tell, or only blanks so far */
  K_TFLITE,      /* a model: not checked */
  K_CSV,         /* lines and complete lines checked */
  K_JSON,        /* plan JSON: its reader checks it */
};

/* The state of the check over one file. */
struct check {
  enum cli_input_kinds kinds; /* what the command accepts */
  enum kind kind;             /* what the file is, once known */
  size_t blanks;              /* leading bytes known to be blanks */
  size_t scanned;             /* bytes scanned for line ends */
  size_t line_start;          /* offset of the current line's first byte */
  size_t line;                /* 1-based number of the current line */
  size_t next_parse;          /* bytes read at which to check JSON next */
  planner_csv_stream_t *csv;  /* a CSV's parse so far, owned; NULL until
                                 the file is known to be a CSV */
  int refused;                /* 1: the check refused the file */
};

static int refuse(struct check *c, int code, char *err, const char *msg)
{
  c->refused = 1;
  if (msg)
    snprintf(err, ARENA_ERR_LEN, "%s", msg);
  return code;
}

/* Sets c->kind from the first bytes, or leaves it unknown. */
static int find_kind(struct check *c, const char *buf, size_t len, char *err)
{
  if (len < 8)
    return 0;
  if (planner_tflite_is_model(buf, len)) {
    c->kind = K_TFLITE;
    return 0;
  }
  if (c->kinds == CLI_INPUT_TFLITE)
    return refuse(c, ARENA_EPARSE, err,
                  "not a TFLite model (no \"TFL3\" at bytes 4-7)");
  if (c->kinds == CLI_INPUT_GRAPH || c->kinds == CLI_INPUT_GRAPH_PARSED) {
    c->kind = K_CSV; /* plan reads any text as a CSV */
    return 0;
  }
  /* the first non-blank byte, as cli_graph_load() finds it */
  for (; c->blanks < len; c->blanks++)
    if (!isspace((unsigned char)buf[c->blanks])) {
      c->kind = buf[c->blanks] == '{' ? K_JSON : K_CSV;
      break;
    }
  return 0;
}

/* Scans the new bytes for line ends; refuses a line that is too long. */
static int scan_lines(struct check *c, const char *buf, size_t len, char *err)
{
  const char *p = buf + c->scanned, *e = buf + len;
  for (;;) {
    const char *nl = p < e ? memchr(p, '\n', (size_t)(e - p)) : NULL;
    size_t end = nl ? (size_t)(nl - buf) : len;
    if (end - c->line_start > CLI_MAX_LINE_LEN) {
      snprintf(err, ARENA_ERR_LEN, "line %zu: longer than %zu bytes",
               c->line, CLI_MAX_LINE_LEN);
      return refuse(c, ARENA_EPARSE, err, NULL);
    }
    if (!nl)
      break;
    c->line_start = end + 1;
    c->line++;
    p = nl + 1;
  }
  c->scanned = len;
  return 0;
}

/* Checks plan JSON read so far, when it has doubled since the last
 * time. */
static int json_so_far(struct check *c, const char *buf, size_t len,
                       char *err)
{
  if (len < c->next_parse)
    return 0;
  c->next_parse = 2 * len;
  int rc = cli_json_prefix_check(buf, len, err);
  return rc ? refuse(c, rc, err, NULL) : 0;
}

/* Parses the complete lines of a CSV read since the last part. */
static int csv_so_far(struct check *c, const char *buf, size_t len,
                      char *err)
{
  int rc = 0;
  if (!c->csv && (rc = planner_csv_stream_new(&c->csv)) != 0)
    return refuse(c, rc, err, "out of memory");
  if ((rc = planner_csv_stream_feed(c->csv, buf, len, err)) != 0)
    return refuse(c, rc, err, NULL);
  return 0;
}

/* The check cli_read_file_checked() asks after each part. */
static int check_part(void *ctx, const char *buf, size_t len, char *err)
{
  struct check *c = ctx;
  int rc = 0;
  if (c->kind == K_UNKNOWN && (rc = find_kind(c, buf, len, err)) != 0)
    return rc;
  if (c->kind == K_CSV && (rc = scan_lines(c, buf, len, err)) != 0)
    return rc;
  if (c->kind == K_CSV)
    rc = csv_so_far(c, buf, len, err);
  else if (c->kind == K_JSON)
    rc = json_so_far(c, buf, len, err);
  return rc;
}

/* Asked after check_part(): with CLI_INPUT_GRAPH_PARSED, the lines of a
 * CSV parsed so far leave the buffer; the line scan counts them out. */
static size_t drop_part(void *ctx)
{
  struct check *c = ctx;
  if (c->kinds != CLI_INPUT_GRAPH_PARSED || c->kind != K_CSV || !c->csv)
    return 0;
  size_t d = planner_csv_stream_drop(c->csv);
  c->scanned -= d;
  c->line_start -= d;
  return d;
}

/* Ends the parse of a CSV into *csv; prints its error. Returns 0 or an
 * exit status. */
static int csv_finish(struct check *c, const char *what, const char *buf,
                      size_t len, struct planner_csv *csv)
{
  char err[ARENA_ERR_LEN] = "";
  int rc = planner_csv_stream_finish(c->csv, buf, len, csv, err);
  if (rc == 0)
    return 0;
  cli_error(what, "%s", err[0] ? err : arena_strerror(rc));
  return cli_exit_status(rc);
}

int cli_input_read(const char *what, const char *path,
                   enum cli_input_kinds kinds, char **buf, size_t *len,
                   struct planner_csv *csv)
{
  char err[ARENA_ERR_LEN] = "";
  struct check c;
  memset(&c, 0, sizeof c);
  c.kinds = kinds;
  c.line = 1;
  c.next_parse = FIRST_PARSE;
  int rc = cli_read_file_parts(path, check_part, drop_part, &c, buf, len,
                               err);
  if (rc == 0) {
    if (csv && c.csv && (rc = csv_finish(&c, what, *buf, *len, csv)) != 0) {
      free(*buf);
      *buf = NULL;
      *len = 0;
    }
    planner_csv_stream_free(c.csv);
    return rc;
  }
  planner_csv_stream_free(c.csv);
  cli_error(what, "%s", err[0] ? err : arena_strerror(rc));
  if (c.refused)
    return rc == ARENA_ENOMEM ? CLI_EX_OSERR : CLI_EX_DATAERR;
  return rc == ARENA_ENOMEM ? CLI_EX_OSERR : CLI_EX_NOINPUT;
}

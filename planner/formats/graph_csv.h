/*
 * graph_csv.h - lifetime graphs as CSV text: a strict parser and a writer.
 *
 * Part of planner/formats/ (CSV, .tflite and digests), which uses only
 * planner/core/ and libc; nothing else in planner/ uses it.
 *
 * Both work on memory only (no I/O): callers read files themselves and
 * hand the bytes over, or take the written text and store it.
 *
 * FORMATS
 *  The header line (the first line that is neither blank nor a comment)
 *  tells the two formats apart. Column names are case-insensitive and may
 *  come in any order; every row must have exactly as many fields as the
 *  header.
 *
 *  ours       id,size,first,last  (or the reference spelling
 *             tensor_index,size_bytes,first_op,last_op), lifetimes
 *             inclusive. Optional columns: align (or alignment), offset,
 *             alias.
 *  MiniMalloc id,lower,upper,size, lifetimes half-open [lower, upper), so
 *             first = lower and last = upper - 1. Optional columns:
 *             alignment (or align), offset, alias. An id may be any
 *             label; when one of them is not a decimal number in uint32
 *             range, every tensor is renumbered by its row (0, 1, ...)
 *             instead, and then no row may declare an alias.
 *
 *  Shared rules: '#' starts a comment line (leading blanks allowed), blank
 *  lines are skipped anywhere, CRLF line ends are accepted, the last line
 *  may lack its newline, blanks around a field are ignored. Numbers are
 *  plain decimal digits (a leading '-' is read only to reject it with a
 *  clear message, "-0" included); overflow is an error. An `offset` field pins the tensor
 *  at that byte offset; an empty field or -1 leaves it free. An empty
 *  `align` field or 0 means the tensor has no alignment of its own. An
 *  `alias` field names, by id, the tensor whose bytes this one may reuse
 *  (planner.h, IN-PLACE SHARING: has_alias = 1, alias = the id); an
 *  empty field declares none. It is read like an id (decimal, uint32).
 *
 *  Parsing is one linear pass; a million rows take well under a second.
 *  Semantic checks that need the whole graph (duplicate ids, alignments
 *  that are not powers of two, colliding pins, an alias that names the
 *  tensor itself or an id not in the graph) are left to
 *  planner_validate().
 */
#ifndef ARENA_GRAPH_CSV_H
#define ARENA_GRAPH_CSV_H

#include <stddef.h>

#include "planner.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define PLANNER_CSV_WUR __attribute__((warn_unused_result))
#else
#define PLANNER_CSV_WUR
#endif

/* Which dialect a parsed text used. */
enum planner_csv_format {
  PLANNER_CSV_NONE = 0,       /* nothing parsed yet */
  PLANNER_CSV_OURS = 1,       /* id,size,first,last (inclusive) */
  PLANNER_CSV_MINIMALLOC = 2, /* id,lower,upper,size (upper exclusive) */
};

/* A parsed graph. Caller-allocated; the tensor array is owned. */
struct planner_csv {
  struct planner_tensor *tensors; /* n_tensors entries, owned */
  size_t n_tensors;               /* rows parsed, >= 1 after success */
  enum planner_csv_format format; /* dialect the header named */
  int ids_renumbered;             /* 1: labels replaced by row numbers */
};

/* Sets c to an empty result that planner_csv_cleanup() accepts. */
void planner_csv_init(struct planner_csv *c);

/* Frees what c owns and leaves it empty. Accepts NULL. */
void planner_csv_cleanup(struct planner_csv *c);

/* Parses len bytes at buf (borrowed; need not be NUL-terminated, may hold
 * any bytes). On success fills *out, freeing whatever it held before; out
 * must have been planner_csv_init()ed. Returns 0, or
 *   ARENA_EEMPTY    no header at all (empty text, only comments), or a
 *                   header without any rows;
 *   ARENA_EPARSE    bad header, wrong field count, a field that is not a
 *                   number, a negative or reversed lifetime;
 *   ARENA_EOVERFLOW a number out of range for its field;
 *   ARENA_ETOOBIG   more than PLANNER_MAX_TENSORS rows;
 *   ARENA_ENOMEM;
 *   ARENA_EINVAL    NULL out, or NULL buf with len > 0.
 * Messages name the line and column: "line 7: size: not a number: 'abc'".
 * On failure *out is left empty. */
PLANNER_CSV_WUR int planner_csv_parse(const char *buf, size_t len,
                                      struct planner_csv *out,
                                      char err[ARENA_ERR_LEN]);

/* An incremental parse, for text that arrives in parts (a file read
 * chunk by chunk): each part's complete lines are parsed as they come,
 * so that an error is found as soon as its line has arrived, and the
 * text is parsed once in all. The result and the message, success or
 * failure, are exactly those of planner_csv_parse() on the whole text.
 * An opaque handle: planner_csv_stream_new() / planner_csv_stream_free(). */
typedef struct planner_csv_stream planner_csv_stream_t;

/* Makes a stream in *out (owned, free with planner_csv_stream_free()).
 * Returns 0 or ARENA_ENOMEM (then *out is NULL). */
PLANNER_CSV_WUR int planner_csv_stream_new(planner_csv_stream_t **out);

/* Frees s and the rows it holds. Accepts NULL. */
void planner_csv_stream_free(planner_csv_stream_t *s);

/* Parses the complete lines (up to the last '\n') of the len bytes at
 * buf that earlier calls have not parsed. buf (borrowed) is the whole
 * text so far: it begins with the bytes given before, unchanged, though
 * it may have moved; len never shrinks. Returns 0, or the first error
 * of the text as planner_csv_parse() would return it (never
 * ARENA_EEMPTY: that needs the end of the text), with its message in
 * err (may be NULL). After an error every later call returns it again. */
PLANNER_CSV_WUR int planner_csv_stream_feed(planner_csv_stream_t *s,
                                            const char *buf, size_t len,
                                            char err[ARENA_ERR_LEN]);

/* Lets the caller drop the lines parsed so far: returns how many bytes
 * from the start of the text they take (0 after an error), which the
 * caller must remove from its text before the next call: from then on
 * the text passed begins after them. The parse and its messages stay
 * those of the whole text, so a text read in parts can be parsed with
 * only its unparsed end in memory. */
size_t planner_csv_stream_drop(planner_csv_stream_t *s);

/* Ends the text: buf and len as for planner_csv_stream_feed(), with the
 * last bytes (the last line may lack its '\n'). Parses what is left and
 * fills *out as planner_csv_parse() does, with the same return codes; on
 * success the stream hands its rows over to *out and holds none. Free
 * the stream afterwards either way. */
PLANNER_CSV_WUR int planner_csv_stream_finish(planner_csv_stream_t *s,
                                              const char *buf, size_t len,
                                              struct planner_csv *out,
                                              char err[ARENA_ERR_LEN]);

/* Returns a graph that borrows c's tensors (valid until c is cleaned up
 * or parsed into again). */
struct planner_graph planner_csv_graph(const struct planner_csv *c);

/* Returns "ours", "minimalloc" or "none". */
const char *planner_csv_format_name(enum planner_csv_format f);

/* Writes g (borrowed) as our CSV: an optional comment block, the header
 * id,size,first,last (plus align when any tensor has one, plus offset
 * when any is pinned, plus alias when any declares one; rows without a
 * pin or an alias leave that field empty), then one row per
 * tensor in graph order, every line ending in '\n'. comment (borrowed,
 * may be NULL) is split at newlines and each line written as "# line".
 * The tensors are written as given, not validated.
 *
 * Writes into buf (cap bytes, borrowed; may be NULL when cap is 0) and
 * NUL-terminates it. *len_out (required) is set to the length of the full
 * text without the NUL, as snprintf does, whether or not it fit. Returns
 * 0, ARENA_ETOOBIG when cap <= *len_out (buf then holds no useful text;
 * call again with a buffer of *len_out + 1 bytes), or ARENA_EINVAL for a
 * NULL g, len_out or tensor array. */
PLANNER_CSV_WUR int planner_csv_write(const struct planner_graph *g,
                                      const char *comment, char *buf,
                                      size_t cap, size_t *len_out);

/* Like planner_csv_write(), but returns the text in a new NUL-terminated
 * buffer: *out is owned by the caller, free with free(); *len_out (may be
 * NULL) gets its length. Returns 0, ARENA_EINVAL or ARENA_ENOMEM; on
 * failure *out is NULL and *len_out 0. */
PLANNER_CSV_WUR int planner_csv_write_alloc(const struct planner_graph *g,
                                            const char *comment, char **out,
                                            size_t *len_out);

#ifdef __cplusplus
}
#endif

#endif /* ARENA_GRAPH_CSV_H */

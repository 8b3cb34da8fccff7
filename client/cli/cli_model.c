/*
 * cli_model.c - loading graphs from CSV, plan JSON or TFLite files for the
 * model subcommands (cli_model.h), and `arenactl import`.
 *
 * DESIGN
 *  The file is read whole (cli_input.c, which refuses one that cannot be
 *  any of these as soon as its bytes show it); "TFL3" at bytes 4..7
 *  selects the TFLite reader (planner/formats/tflite.h), a first
 *  non-blank '{' selects the plan-JSON reader of cli_json.c, anything
 *  else goes to the CSV parser.
 */
#include "cli_model.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_daemon.h"
#include "cli_input.h"
#include "cli_json.h"
#include "cli_share.h"
#include "cli_write.h"
#include "digest.h"

int cli_model_option(int argc, char **argv, int *i, struct cli_load_opts *o,
                     int *rc)
{
  const char *v;
  int in_place;
  *rc = 0;
  if (strcmp(argv[*i], "--keep-dequant") == 0) {
    o->keep_dequant = 1;
    return 1;
  }
  if (cli_in_place_option(argv[*i], &in_place)) {
    o->no_in_place = !in_place;
    return 1;
  }
  int m = cli_opt_value(argc, argv, i, "--shape", &v);
  if (m == 0)
    return 0;
  if (m < 0)
    *rc = CLI_EX_USAGE;
  else
    o->shape = v;
  return 1;
}

/* ---- --shape ---------------------------------------------------------------- */

/* Prints "arenactl: WHAT: --shape 'TEXT': <message>" and returns
 * CLI_EX_DATAERR: a shape that reads as dims but cannot apply to the
 * model. */
static int shape_error(const char *what, const char *text, const char *fmt,
                       ...) CLI_PRINTF(3, 4);

static int shape_error(const char *what, const char *text, const char *fmt,
                       ...)
{
  char msg[ARENA_ERR_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cli_error(what, "--shape '%s': %s", text, msg);
  return CLI_EX_DATAERR;
}

/* Checks that every given dim is a possible TFLite dimension. */
static int check_dim_values(const char *what, const char *text,
                            const struct cli_shape *sh)
{
  for (size_t i = 0; i < sh->n_inputs; i++)
    for (size_t k = 0; k < sh->inputs[i].n_dims; k++) {
      int64_t d = sh->inputs[i].dims[k];
      if (d == 0)
        return shape_error(what, text, "dimension %zu of input %zu is 0; "
                           "every dimension must be at least 1",
                           k, i);
      if (d > INT32_MAX)
        return shape_error(what, text, "dimension %zu of input %zu is "
                           "%lld, above %d, the largest TFLite dimension",
                           k, i, (long long)d, INT32_MAX);
    }
  return 0;
}

/* Checks dimension 0 of graph input `in` set to d0. A dynamic batch
 * proposes d0 as the batch, and every input must propose the same one
 * (*batch, 0 until the first); a fixed dimension 0 must equal d0. */
static int check_batch_dim(const char *what, const char *text,
                           const struct planner_tflite_model *m,
                           const struct planner_tflite_io *in, uint64_t d0,
                           uint64_t *batch)
{
  if (in->sig[0] < 0) {
    if (*batch && *batch != d0)
      return shape_error(what, text, "batch %llu of input %d differs from "
                         "batch %llu of an earlier input; one batch sizes "
                         "the whole model",
                         (unsigned long long)d0, (int)in->tensor,
                         (unsigned long long)*batch);
    *batch = d0;
    return 0;
  }
  if ((uint64_t)in->dims[0] == d0)
    return 0;
  if (!m->dynamic)
    return shape_error(what, text, "the model's shapes are static (batch "
                       "%d); they cannot be changed without reconverting "
                       "the model",
                       (int)in->dims[0]);
  return shape_error(what, text, "dimension 0 of input %d is fixed at %d",
                     (int)in->tensor, (int)in->dims[0]);
}

/* Checks the rank of graph input `in` and its dims after the first
 * against d (n dims; d = NULL checks only what the batch form needs). */
static int check_input_dims(const char *what, const char *text,
                            const struct planner_tflite_io *in,
                            const int64_t *d, size_t n)
{
  if (in->rank == 0 || in->rank > PLANNER_TFLITE_MAX_DIMS)
    return shape_error(what, text, "input %d has %u dimensions; --shape "
                       "sizes inputs of 1 to %u dimensions only",
                       (int)in->tensor, (unsigned)in->rank,
                       PLANNER_TFLITE_MAX_DIMS);
  if (d && n != in->rank)
    return shape_error(what, text, "gives %zu dimensions for input %d, "
                       "which has %u",
                       n, (int)in->tensor, (unsigned)in->rank);
  for (uint32_t k = 1; k < in->rank; k++) {
    if (in->sig[k] < 0)
      return shape_error(what, text, "input %d is dynamic in dimension %u, "
                         "not only in the batch; arenactl cannot size it "
                         "without running the model",
                         (int)in->tensor, (unsigned)k);
    if (d && (int64_t)in->sig[k] != d[k])
      return shape_error(what, text, "dimension %u of input %d is fixed at "
                         "%d; only a dynamic batch dimension (0) can be set",
                         (unsigned)k, (int)in->tensor, (int)in->sig[k]);
  }
  return 0;
}

/* Checks a --shape against the model's graph inputs and sets *batch to
 * the batch it asks for. The shape is either the batch alone ("4") or
 * one dims list per graph input, inputs separated by commas
 * ("4x96x96x1,4x10"). Prints and returns CLI_EX_USAGE when the text is
 * not a shape, CLI_EX_DATAERR when it cannot apply to the model (or to
 * any: cli_shape_arg()). */
static int check_shape(const char *what, const char *text,
                       const struct planner_tflite_model *m, uint64_t *batch)
{
  struct cli_shape sh;
  *batch = 0;
  int rc = cli_shape_arg(what, text, &sh);
  if (rc)
    return rc;
  if (m->n_inputs == 0)
    rc = shape_error(what, text, "the model has no graph input");
  else
    rc = check_dim_values(what, text, &sh);
  int batch_only = sh.n_inputs == 1 && sh.inputs[0].n_dims == 1;
  if (rc == 0 && !batch_only && sh.n_inputs != m->n_inputs)
    rc = shape_error(what, text, "gives %zu inputs, the model has %zu "
                     "(separate inputs by commas, or give the batch alone)",
                     sh.n_inputs, m->n_inputs);
  for (size_t i = 0; rc == 0 && i < m->n_inputs; i++) {
    const struct planner_tflite_io *in = &m->inputs[i];
    const struct arenad_dims *d = batch_only ? NULL : &sh.inputs[i];
    rc = check_input_dims(what, text, in, d ? d->dims : NULL,
                          d ? d->n_dims : 0);
    /* The batch alone sets the inputs that have a dynamic batch. */
    if (rc == 0 && (d || in->sig[0] < 0))
      rc = check_batch_dim(what, text, m, in,
                           (uint64_t)(d ? d->dims[0] : sh.inputs[0].dims[0]),
                           batch);
  }
  if (rc == 0 && *batch == 0)
    rc = check_batch_dim(what, text, m, &m->inputs[0],
                         (uint64_t)sh.inputs[0].dims[0], batch);
  cli_shape_cleanup(&sh);
  return rc;
}

/* ---- TFLite ----------------------------------------------------------------- */

static int load_tflite(const char *what, const char *buf, size_t len,
                       const struct cli_load_opts *o, struct cli_graph *g)
{
  char err[ARENA_ERR_LEN] = "";
  struct planner_tflite_options to;
  memset(&to, 0, sizeof to);
  to.keep_dequant = o ? o->keep_dequant : 0;
  to.no_in_place = o ? o->no_in_place : 0;
  int rc = planner_tflite_read(buf, len, &to, &g->model, err);
  if (rc == 0 && o && o->shape) {
    uint64_t batch = 0;
    int x = check_shape(what, o->shape, &g->model, &batch);
    if (x)
      return x;
    if (g->model.dynamic && batch) {
      to.batch = batch;
      rc = planner_tflite_read(buf, len, &to, &g->model, err);
      g->batch = batch;
    }
  }
  if (rc) {
    cli_error(what, "%s", err[0] ? err : arena_strerror(rc));
    return cli_exit_status(rc);
  }
  g->has_model = 1;
  g->kind = CLI_GRAPH_TFLITE;
  g->n = g->model.n_planned;
  g->tensors = malloc(g->n * sizeof *g->tensors);
  g->names = calloc(g->n, sizeof *g->names);
  if (!g->tensors || !g->names)
    goto nomem;
  memcpy(g->tensors, g->model.tensors, g->n * sizeof *g->tensors);
  for (size_t i = 0; i < g->n; i++)
    if (!(g->names[i] = strdup(g->model.names[i])))
      goto nomem;
  return 0;
nomem:
  cli_error(what, "out of memory");
  return CLI_EX_OSERR;
}

/* Writes the dims of the model's graph inputs as "1x96x96x1,1x10" into
 * shape (the --shape syntax), with dimension 0 of each input that has a
 * dynamic batch set to `batch` when it is not 0: the input shape the
 * sizes were computed for. Writes "" when some input cannot be written
 * that way (a scalar, or more dims than are kept). */
static void input_shape(const struct planner_tflite_model *m, uint64_t batch,
                        char *shape, size_t cap)
{
  size_t k = 0;
  shape[0] = '\0';
  for (size_t i = 0; i < m->n_inputs; i++) {
    const struct planner_tflite_io *io = &m->inputs[i];
    if (io->rank == 0 || io->rank > PLANNER_TFLITE_MAX_DIMS)
      goto none;
    for (uint32_t d = 0; d < io->rank; d++) {
      long long v = d == 0 && batch && io->sig[0] < 0 ? (long long)batch
                                                      : (long long)io->dims[d];
      int n = snprintf(shape + k, cap - k, "%s%lld",
                       d ? "x" : (i ? "," : ""), v);
      if (n < 0 || (size_t)n >= cap - k || v < 0)
        goto none;
      k += (size_t)n;
    }
  }
  return;
none:
  shape[0] = '\0';
}

int cli_model_to_csv(const char *what, const char *buf, size_t len,
                     const char *shape_in, int in_place, struct planner_csv *c,
                     char *shape, size_t shape_cap)
{
  struct cli_graph g;
  struct cli_load_opts o;
  memset(&o, 0, sizeof o);
  o.shape = shape_in;
  o.no_in_place = !in_place;
  cli_graph_init(&g);
  int rc = load_tflite(what, buf, len, &o, &g);
  if (rc == 0 && shape && shape_cap)
    input_shape(&g.model, g.batch, shape, shape_cap);
  if (rc == 0) {
    planner_csv_cleanup(c);
    c->tensors = g.tensors;
    c->n_tensors = g.n;
    g.tensors = NULL;
  }
  cli_graph_cleanup(&g);
  return rc;
}

/* ---- CSV and dispatch ------------------------------------------------------- */

/* The graph of a CSV: c (taken) when the read parsed it, else the
 * parse of the len bytes at buf. */
static int load_csv(const char *what, const char *buf, size_t len,
                    struct planner_csv c, struct cli_graph *g)
{
  char err[ARENA_ERR_LEN] = "";
  int rc = c.n_tensors ? 0 : planner_csv_parse(buf, len, &c, err);
  if (rc) {
    cli_error(what, "%s", err[0] ? err : arena_strerror(rc));
    return cli_exit_status(rc);
  }
  g->kind = CLI_GRAPH_CSV;
  g->n = c.n_tensors;
  g->tensors = c.tensors;
  c.tensors = NULL;
  int pinned = 0;
  for (size_t i = 0; i < g->n; i++)
    pinned |= g->tensors[i].pinned != PLANNER_NOT_PINNED;
  if (pinned) {
    /* An offset column makes the CSV a plan. */
    g->offsets = calloc(g->n, sizeof *g->offsets);
    if (!g->offsets) {
      planner_csv_cleanup(&c);
      cli_error(what, "out of memory");
      return CLI_EX_OSERR;
    }
    for (size_t i = 0; i < g->n; i++) {
      const struct planner_tensor *t = &g->tensors[i];
      g->offsets[i] = t->pinned >= 0 ? (uint64_t)t->pinned : 0;
    }
  }
  planner_csv_cleanup(&c);
  return 0;
}

int cli_graph_load(const char *path, const struct cli_load_opts *o,
                   struct cli_graph *g)
{
  char *buf = NULL;
  size_t len = 0;
  struct planner_csv c;
  const char *what = strcmp(path, "-") ? path : "<stdin>";
  cli_graph_cleanup(g);
  g->what = what;
  planner_csv_init(&c);
  /* a CSV comes back parsed, as it was read */
  int rc = cli_input_read(what, path,
                          o && o->tflite_only ? CLI_INPUT_TFLITE
                                              : CLI_INPUT_ANY,
                          &buf, &len, &c);
  if (rc)
    return rc;
  size_t k = 0;
  while (k < len && isspace((unsigned char)buf[k]))
    k++;
  if (planner_tflite_is_model(buf, len)) {
    rc = load_tflite(what, buf, len, o, g);
  } else if (o && o->tflite_only) {
    cli_error(what, "not a TFLite model (no \"TFL3\" at bytes 4-7)");
    rc = CLI_EX_DATAERR;
  } else if (k < len && buf[k] == '{') {
    rc = cli_json_load(what, buf, len, g);
  } else {
    rc = load_csv(what, buf, len, c, g);
    planner_csv_init(&c); /* taken */
  }
  planner_csv_cleanup(&c);
  free(buf);
  if (rc == 0 && g->kind != CLI_GRAPH_TFLITE && o && !o->other_kinds_ok &&
      (o->shape || o->keep_dequant)) {
    cli_error(what, "--shape and --keep-dequant apply to .tflite models only");
    rc = CLI_EX_USAGE;
  }
  if (rc == 0)
    for (size_t i = 0; i < g->n; i++)
      g->tensors[i].pinned = PLANNER_NOT_PINNED;
  if (rc)
    cli_graph_cleanup(g);
  return rc;
}

/* ---- analysis helpers ------------------------------------------------------- */

int cli_live_bytes(const struct cli_graph *g, uint64_t **live, size_t *n_ops)
{
  int64_t max_last = 0;
  *live = NULL;
  *n_ops = 0;
  for (size_t i = 0; i < g->n; i++)
    if (g->tensors[i].last > max_last)
      max_last = g->tensors[i].last;
  if (max_last >= (int64_t)CLI_MAX_OPS) {
    cli_error(g->what, "operator indexes reach %lld; more than %u operators "
              "cannot be charted",
              (long long)max_last, CLI_MAX_OPS);
    return CLI_EX_DATAERR;
  }
  size_t n = (size_t)max_last + 1;
  uint64_t *d = calloc(n + 1, sizeof *d);
  if (!d) {
    cli_error(g->what, "out of memory");
    return CLI_EX_OSERR;
  }
  /* A difference array: +size at first, -size after last. Sums stay in
   * range because planner_validate() capped the total. */
  for (size_t i = 0; i < g->n; i++) {
    const struct planner_tensor *t = &g->tensors[i];
    if (t->first < 0 || t->last < t->first)
      continue;
    d[t->first] += t->size;
    d[t->last + 1] -= t->size;
  }
  uint64_t run = 0;
  for (size_t k = 0; k < n; k++) {
    run += d[k];
    d[k] = run;
  }
  *live = d;
  *n_ops = n;
  return 0;
}

/* Sets p->n_shared from the pairs p's offsets take. */
static int count_shared(const struct cli_graph *g,
                        const struct planner_options *o,
                        struct planner_plan *p)
{
  struct planner_graph v = cli_graph_view(g);
  struct cli_pair *pairs;
  if (cli_pairs_taken(g->what, &v, o, p->offsets, &pairs, &p->n_shared))
    return ARENA_ENOMEM;
  free(pairs);
  return 0;
}

int cli_graph_plan(const struct cli_graph *g, const struct planner_options *o,
                   struct planner_plan *p)
{
  char err[ARENA_ERR_LEN] = "";
  struct planner_graph v = cli_graph_view(g);
  int rc;
  if (!g->offsets) {
    rc = planner_run(&v, o, p, err);
  } else {
    planner_plan_cleanup(p);
    p->offsets = malloc(g->n * sizeof *p->offsets);
    if (!p->offsets) {
      cli_error(g->what, "out of memory");
      return CLI_EX_OSERR;
    }
    memcpy(p->offsets, g->offsets, g->n * sizeof *p->offsets);
    p->n_offsets = g->n;
    p->arena_bytes = 0;
    p->naive_bytes = 0;
    for (size_t i = 0; i < g->n; i++) {
      const struct planner_tensor *t = &g->tensors[i];
      p->naive_bytes += t->size;
      if (t->size && p->offsets[i] + t->size > p->arena_bytes)
        p->arena_bytes = p->offsets[i] + t->size;
    }
    if (planner_algo_parse(g->algo, &p->algo) != 0)
      p->algo = PLANNER_ALGO_BEST;
    rc = planner_validate(&v, o, err);
    if (rc == 0)
      rc = cli_lower_bound(&v, o, &p->lower_bound_bytes, err);
    if (rc == 0)
      rc = planner_lower_bound(&v, o, &p->lower_bound_unshared_bytes);
    if (rc == 0)
      rc = planner_verify(&v, o, p, err);
    if (rc == 0)
      rc = count_shared(g, o, p);
    p->proven_optimal = rc == 0 && p->arena_bytes == p->lower_bound_bytes;
  }
  if (rc) {
    cli_error(g->what, "%s", err[0] ? err : arena_strerror(rc));
    return cli_exit_status(rc);
  }
  return 0;
}

int cli_plan_option(int argc, char **argv, int *i, struct planner_options *o,
                    int *rc)
{
  const char *v;
  uint64_t n;
  int m;
  *rc = 0;
  if ((m = cli_opt_value(argc, argv, i, "--algo", &v)) != 0) {
    if (m < 0)
      *rc = CLI_EX_USAGE;
    else if (planner_algo_parse(v, &o->algo) != 0) {
      cli_error(argv[0], "--algo: unknown algorithm '%s' (one of best, "
                "naive, tflm-greedy, tflite-bestfit, greedy-size, "
                "greedy-breadth, exact)",
                v);
      *rc = CLI_EX_USAGE;
    }
    return 1;
  }
  if ((m = cli_opt_value(argc, argv, i, "--align", &v)) != 0) {
    if (m < 0)
      *rc = CLI_EX_USAGE;
    else if (cli_parse_u64(v, PLANNER_MAX_ALIGNMENT, &n) != 0 || n == 0 ||
             (n & (n - 1)) != 0) {
      cli_error(argv[0], "--align: '%s' is not a power of two", v);
      *rc = CLI_EX_USAGE;
    } else {
      o->alignment = n;
    }
    return 1;
  }
  return 0;
}

void cli_xml_escape(FILE *f, const char *s)
{
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    switch (c) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default:
      if (c < 0x20 || c >= 0x7f)
        fputc('?', f); /* control bytes are not XML; others may not be UTF-8 */
      else
        fputc(c, f);
    }
  }
}

/* ---- summary and import ----------------------------------------------------- */

static void print_io(FILE *f, const char *prefix, const char *label,
                     const struct planner_tflite_io *io, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "%s%s %d '", prefix, label, (int)io[i].tensor);
    cli_print_text(f, io[i].name);
    fprintf(f, "': %s [", planner_tflite_type_name(io[i].type));
    for (uint32_t k = 0; k < io[i].rank && k < PLANNER_TFLITE_MAX_DIMS; k++)
      fprintf(f, "%s%d", k ? ", " : "", (int)io[i].dims[k]);
    if (io[i].rank > PLANNER_TFLITE_MAX_DIMS)
      fprintf(f, ", ...");
    fprintf(f, "]");
    if (io[i].dynamic) {
      fprintf(f, " signature [");
      for (uint32_t k = 0; k < io[i].rank && k < PLANNER_TFLITE_MAX_DIMS; k++)
        fprintf(f, "%s%d", k ? ", " : "", (int)io[i].sig[k]);
      fprintf(f, "] (dynamic)");
    }
    fprintf(f, "\n");
  }
}

void cli_model_summary(FILE *f, const char *prefix,
                       const struct planner_tflite_model *m)
{
  char hex[PLANNER_DIGEST_HEX_LEN];
  fprintf(f, "%ssha256=%s\n", prefix, planner_hex(m->sha256, 32, hex));
  fprintf(f, "%sversion=%u subgraphs=%u (only subgraph 0 is planned; %llu "
          "tensors in all)\n",
          prefix, (unsigned)m->version, (unsigned)m->n_subgraphs,
          (unsigned long long)m->n_tensors_all);
  fprintf(f, "%sops=%u tensors=%u planned=%zu constant=%u variable=%u "
          "unused=%u custom_ops=%u\n",
          prefix, (unsigned)m->n_ops, (unsigned)m->n_tensors, m->n_planned,
          (unsigned)m->n_const, (unsigned)m->n_variable, (unsigned)m->n_unused,
          (unsigned)m->n_custom_ops);
  if (m->n_persistent)
    fprintf(f, "%spersistent, not planned (DEQUANTIZE of constant): %u "
            "tensor%s, %llu byte%s (--keep-dequant plans them)\n",
            prefix, (unsigned)m->n_persistent, CLI_PLURAL(m->n_persistent),
            (unsigned long long)m->persistent_bytes,
            CLI_PLURAL(m->persistent_bytes));
  if (m->n_unplannable)
    fprintf(f, "%snot plannable (STRING, RESOURCE or VARIANT): %u "
            "tensor%s\n",
            prefix, (unsigned)m->n_unplannable, CLI_PLURAL(m->n_unplannable));
  print_io(f, prefix, "input", m->inputs, m->n_inputs);
  print_io(f, prefix, "output", m->outputs, m->n_outputs);
  if (m->dynamic)
    fprintf(f, "%sdynamic dimensions: sizes use `shape`%s\n", prefix,
            m->batch_applied ? " with the batch set by --shape"
                             : "; --shape can set a dynamic batch");
  if (m->has_offline_plan)
    fprintf(f, "%scarries an OfflineMemoryAllocation plan\n", prefix);
  if (m->n_aliases)
    fprintf(f, "%sin-place pairs: %zu (outputs of elementwise or reshape "
            "operators that may reuse their input's bytes; --no-in-place "
            "declares none)\n",
            prefix, m->n_aliases);
}

static void import_usage(FILE *f)
{
  fprintf(f,
          "Usage: %s import [options] MODEL.tflite\n"
          "\n"
          "Reads a TFLite model and writes the lifetime graph of subgraph 0\n"
          "as CSV (id,size,first,last; ids are the model's tensor indexes),\n"
          "with the model's facts as '#' comments. An alias column names,\n"
          "for the output of an elementwise or reshape operator, the input\n"
          "whose bytes it may reuse; it is there when some tensor has one.\n"
          "\n"
          "Options:\n"
          "  -o FILE          write to FILE instead of standard output\n"
          "  --keep-dequant   also plan outputs of DEQUANTIZE-of-constant\n"
          "  --shape DIMS     size a dynamic batch, e.g. 4x96x96x1 or 4\n"
          "  --in-place       declare in-place pairs (the default): only\n"
          "                   for kernels known to read element i before\n"
          "                   they write it (docs/models.md)\n"
          "  --no-in-place    declare none: no alias column\n"
          "  -h, --help       show this help\n"
          "\n"
          "Exit status: 0 done, 64 bad command line, 65 bad model,\n"
          "66 cannot read MODEL, 74 cannot write the output.\n",
          CLI_PROG);
}

int cli_import_main(int argc, char **argv)
{
  struct cli_load_opts lo;
  const char *file = NULL, *out = NULL;
  int rc = 0;
  memset(&lo, 0, sizeof lo);
  for (int i = 1; i < argc; i++) {
    const char *v;
    int m;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      import_usage(stdout);
      return cli_finish_stdout();
    }
    if (cli_model_option(argc, argv, &i, &lo, &rc)) {
      if (rc)
        return rc;
    } else if ((m = cli_opt_value(argc, argv, &i, "-o", &v)) != 0) {
      if (m < 0)
        return CLI_EX_USAGE;
      out = v;
    } else if (argv[i][0] == '-' && strcmp(argv[i], "-") != 0) {
      cli_error("import", "unknown option '%s'", argv[i]);
      return CLI_EX_USAGE;
    } else if (file) {
      cli_error("import", "only one MODEL may be given");
      return CLI_EX_USAGE;
    } else {
      file = argv[i];
    }
  }
  if (!file) {
    import_usage(stderr);
    return CLI_EX_USAGE;
  }
  struct cli_graph g;
  cli_graph_init(&g);
  lo.tflite_only = 1;
  if ((rc = cli_graph_load(file, &lo, &g)) != 0)
    return rc;
  char *text = NULL, *comment = NULL;
  size_t text_len = 0, clen = 0;
  FILE *cf = open_memstream(&comment, &clen);
  if (cf) {
    const char *base = strrchr(file, '/');
    fprintf(cf, "model=%s\n", base ? base + 1 : file);
    cli_model_summary(cf, "", &g.model);
    fclose(cf);
  }
  struct planner_graph view = cli_graph_view(&g);
  if (!comment || planner_csv_write_alloc(&view, comment, &text, &text_len)) {
    cli_error(g.what, "out of memory");
    rc = CLI_EX_OSERR;
  } else {
    rc = cli_write_file(out, text, text_len);
  }
  free(text);
  free(comment);
  cli_graph_cleanup(&g);
  return rc;
}

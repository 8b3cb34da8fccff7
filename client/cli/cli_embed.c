/*
 * cli_embed.c - `arenactl embed`: plans subgraph 0 of a TFLite model and
 * writes a copy of the model that carries the plan as TFLite Micro
 * OfflineMemoryAllocation metadata (planner_tflite_embed()).
 *
 * TFLite Micro has no persistent DEQUANTIZE-of-constant outputs: it plans
 * them in the arena like any other tensor, so embed always plans them
 * (as --keep-dequant does elsewhere). Variable tensors are the opposite:
 * TFLite Micro gives them buffers in its persistent tail, outside the
 * planned head, so embed leaves them out and marks them -1. Tensors of
 * other subgraphs, and every tensor the plan leaves out, get -1: the
 * runtime places those itself.
 * The graph planned is the one TFLite Micro plans its arena head with:
 * every size rounded up to 16 bytes (MicroArenaBufferAlignment()), and
 * the kernel scratch buffers TFLM's reference kernels request
 * (tflite.h, TFLM SCRATCH), which get no offline offset (TFLM places them
 * itself, in the room the plan leaves for them) but count in the arena.
 * The same graph is also planned with tflm-greedy, the replica of TFLM's
 * GreedyMemoryPlanner, without in-place sharing (TFLM's planner gives
 * every buffer bytes of its own), and embed warns when its plan is no
 * smaller. With in-place sharing (--in-place, the default), the output
 * of an allowlisted elementwise or reshape operator (tflite.h, IN-PLACE
 * PAIRS) may get the offset of the input it is written over, but only
 * when that makes the arena smaller: two tensors at one offset make
 * TFLite Micro run a kernel in place, which is worth it only for the
 * bytes it saves, so a plan that shares without saving is replaced by
 * the plan without sharing.
 * After writing, the output is read back and its plan compared with the
 * one computed, so a written file is known to round-trip.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_input.h"
#include "cli_model.h"
#include "cli_share.h"
#include "cli_write.h"
#include "planner.h"
#include "tflite.h"

#define EMBED_DEFAULT_ALIGN 16u /* bytes, TFLite Micro's arena alignment */
#define EMBED_TFLM_ROUND 16u    /* bytes TFLite Micro rounds every size to */

static void usage(FILE *f)
{
  fprintf(f,
          "Usage: %s embed [options] MODEL.tflite -o OUT.tflite\n"
          "\n"
          "Plans subgraph 0 of MODEL and writes a copy of it with the plan as\n"
          "TFLite Micro 'OfflineMemoryAllocation' metadata (see\n"
          "docs/models.md). All original bytes are kept; a new root table\n"
          "in front of them adds the plan.\n"
          "\n"
          "Options:\n"
          "  -o FILE       output model (required)\n"
          "  --algo A      algorithm (default best; see 'plan --help')\n"
          "  --align N     offset alignment in bytes (default %u, as TFLite\n"
          "                Micro aligns its arena)\n"
          "  --in-place    let the output of an elementwise or reshape\n"
          "                operator share the offset of the input it is\n"
          "                written over where that makes the arena\n"
          "                smaller (the default; docs/models.md)\n"
          "  --no-in-place give every tensor bytes of its own\n"
          "  -h, --help    show this help\n"
          "\n"
          "Exit status: 0 written, 64 bad command line, 65 bad model or a\n"
          "plan that cannot be embedded, 66 cannot read MODEL, 74 cannot\n"
          "write OUT.\n",
          CLI_PROG, EMBED_DEFAULT_ALIGN);
}

/* Parsed command line. */
struct embed_args {
  const char *file;         /* input model, borrowed */
  const char *out;          /* output path, borrowed */
  struct planner_options o; /* algorithm and alignment */
};

static int parse_args(int argc, char **argv, struct embed_args *a)
{
  for (int i = 1; i < argc; i++) {
    const char *v;
    int m;
    uint64_t n;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return -1;
    } else if ((m = cli_opt_value(argc, argv, &i, "-o", &v)) != 0) {
      if (m < 0)
        return CLI_EX_USAGE;
      a->out = v;
    } else if ((m = cli_opt_value(argc, argv, &i, "--algo", &v)) != 0) {
      if (m < 0)
        return CLI_EX_USAGE;
      if (planner_algo_parse(v, &a->o.algo) != 0) {
        cli_error("embed", "--algo: unknown algorithm '%s'", v);
        return CLI_EX_USAGE;
      }
    } else if ((m = cli_opt_value(argc, argv, &i, "--align", &v)) != 0) {
      if (m < 0)
        return CLI_EX_USAGE;
      if (cli_parse_u64(v, 1u << 30, &n) != 0 || n == 0 || (n & (n - 1))) {
        cli_error("embed", "--align: '%s' is not a power of two", v);
        return CLI_EX_USAGE;
      }
      a->o.alignment = n;
    } else if (cli_in_place_option(argv[i], &a->o.in_place)) {
      continue;
    } else if (argv[i][0] == '-' && strcmp(argv[i], "-") != 0) {
      cli_error("embed", "unknown option '%s'", argv[i]);
      return CLI_EX_USAGE;
    } else if (a->file) {
      cli_error("embed", "only one MODEL may be given");
      return CLI_EX_USAGE;
    } else {
      a->file = argv[i];
    }
  }
  if (!a->file || !a->out) {
    cli_error("embed", "%s", !a->file ? "missing MODEL" : "missing -o OUT");
    return CLI_EX_USAGE;
  }
  return 0;
}

static uint64_t round_tflm(uint64_t n)
{
  return (n + EMBED_TFLM_ROUND - 1) / EMBED_TFLM_ROUND * EMBED_TFLM_ROUND;
}

/* Returns TFLite Micro's graph of m: the planned tensors, then the
 * scratch buffers, every size rounded up as TFLM does. Owned (free());
 * NULL when out of memory. */
static struct planner_tensor *tflm_graph(const struct planner_tflite_model *m,
                                         struct planner_graph *g)
{
  size_t n = m->n_planned + m->n_scratch;
  struct planner_tensor *t = malloc(n * sizeof *t);
  if (!t)
    return NULL;
  memcpy(t, m->tensors, m->n_planned * sizeof *t);
  if (m->n_scratch)
    memcpy(t + m->n_planned, m->scratch, m->n_scratch * sizeof *t);
  for (size_t i = 0; i < n; i++)
    t[i].size = round_tflm(t[i].size);
  g->tensors = t;
  g->n_tensors = n;
  return t;
}

static int run_plan(const char *what, const struct planner_graph *g,
                    const struct planner_options *o, struct planner_plan *p)
{
  char err[ARENA_ERR_LEN] = "";
  int rc = planner_run(g, o, p, err);
  if (rc)
    cli_error(what, "%s", err[0] ? err : arena_strerror(rc));
  return rc ? cli_exit_status(rc) : 0;
}

/* Plans g into p; when p shares in-place pairs, plans g without sharing
 * too and keeps that plan unless sharing makes the arena TFLite Micro
 * gets smaller. *unshared gets the arena without sharing (0 when g was
 * not planned without it). */
static int plan_embedded(const char *what, const struct planner_graph *g,
                         const struct planner_options *o,
                         struct planner_plan *p, uint64_t *unshared)
{
  *unshared = 0;
  int rc = run_plan(what, g, o, p);
  if (rc || !p->n_shared)
    return rc;
  struct planner_options no = *o;
  struct planner_plan u;
  no.in_place = 0;
  planner_plan_init(&u);
  rc = run_plan(what, g, &no, &u);
  *unshared = u.arena_bytes;
  if (!rc && round_tflm(u.arena_bytes) <= round_tflm(p->arena_bytes)) {
    planner_plan_cleanup(p);
    *p = u; /* sharing saves nothing here */
  } else {
    planner_plan_cleanup(&u);
  }
  return rc;
}

/* Plans m as TFLite Micro sees it and fills offs (n_all entries, -1 where
 * unplanned). *tflm_bytes gets the arena of tflm-greedy on the same
 * graph, *unshared the arena without in-place sharing when the plan
 * could share (else 0). */
static int plan_offsets(const char *what, const struct planner_tflite_model *m,
                        const struct planner_options *o, int32_t *offs,
                        struct planner_plan *p, uint64_t *tflm_bytes,
                        uint64_t *unshared)
{
  struct planner_graph g;
  struct planner_tensor *t = tflm_graph(m, &g);
  if (!t) {
    cli_error(what, "out of memory");
    return CLI_EX_OSERR;
  }
  struct planner_options go = *o;
  struct planner_plan gp;
  planner_plan_init(&gp);
  go.algo = PLANNER_ALGO_TFLM_GREEDY;
  go.in_place = 0; /* TFLM's own planner shares nothing */
  int rc = plan_embedded(what, &g, o, p, unshared);
  if (!rc)
    rc = run_plan(what, &g, &go, &gp);
  *tflm_bytes = gp.arena_bytes;
  planner_plan_cleanup(&gp);
  free(t);
  if (rc)
    return rc;
  for (uint64_t i = 0; i < m->n_tensors_all; i++)
    offs[i] = -1;
  for (size_t i = 0; i < m->n_planned; i++) {
    if (p->offsets[i] > INT32_MAX) {
      cli_error(what, "tensor %u sits at byte %llu, beyond the int32 range "
                "of an offline plan",
                (unsigned)m->tensors[i].id, (unsigned long long)p->offsets[i]);
      return CLI_EX_DATAERR;
    }
    offs[m->tensors[i].id] = (int32_t)p->offsets[i];
  }
  return 0;
}

/* Reads the plan back from the written bytes and compares. */
static int round_trip(const char *what, const uint8_t *buf, size_t len,
                      const int32_t *offs, size_t n)
{
  char err[ARENA_ERR_LEN] = "";
  int32_t *back = NULL;
  size_t nb = 0;
  struct planner_tflite_model m;
  planner_tflite_init(&m);
  int rc = planner_tflite_read(buf, len, NULL, &m, err);
  if (rc == 0)
    rc = planner_tflite_offline_plan(buf, len, &back, &nb, err);
  planner_tflite_cleanup(&m);
  if (rc == 0 && (nb != n || memcmp(back, offs, n * sizeof *offs) != 0)) {
    snprintf(err, sizeof err, "the plan read back differs from the one "
             "written");
    rc = ARENA_EINTERNAL;
  }
  free(back);
  if (rc) {
    cli_error(what, "written model failed its check: %s", err);
    return CLI_EX_SOFTWARE;
  }
  return 0;
}

/* The in-place line of the summary, for a model that declares pairs. */
static void print_in_place(const struct planner_tflite_model *m,
                           const struct planner_plan *p, uint64_t unshared)
{
  if (p->n_shared)
    printf("in-place: %zu of %zu declared pairs share an offset (an "
           "output written over the input its operator reads last), "
           "saving %llu byte%s\n",
           p->n_shared, m->n_aliases,
           (unsigned long long)(round_tflm(unshared) -
                                round_tflm(p->arena_bytes)),
           CLI_PLURAL(round_tflm(unshared) - round_tflm(p->arena_bytes)));
  else if (unshared)
    printf("in-place: %zu pair%s declared, none shared: sharing saves no "
           "bytes in this model\n",
           m->n_aliases, m->n_aliases == 1 ? "" : "s");
}

/* The lines embed prints after writing its file (not when the model
 * went to standard output): what was planned, against TFLite Micro's own
 * planner, what is left to TFLite Micro, and what was written. */
static void print_report(const struct embed_args *a,
                         const struct planner_tflite_model *m,
                         const struct planner_plan *p, uint64_t arena,
                         uint64_t tflm_bytes, uint64_t unshared,
                         size_t in_len, size_t out_len)
{
  printf("embedded: %zu of %llu tensor%s planned offline (%s, alignment "
         "%llu), arena %llu byte%s, lower bound %llu byte%s\n",
         m->n_planned, (unsigned long long)m->n_tensors_all,
         CLI_PLURAL(m->n_tensors_all), planner_algo_name(p->algo),
         (unsigned long long)a->o.alignment, (unsigned long long)arena,
         CLI_PLURAL(arena), (unsigned long long)p->lower_bound_bytes,
         CLI_PLURAL(p->lower_bound_bytes));
  printf("tflm:     TFLite Micro's own planner needs %llu byte%s for the "
         "same buffers (sizes rounded up to %u)\n",
         (unsigned long long)round_tflm(tflm_bytes),
         CLI_PLURAL(round_tflm(tflm_bytes)), EMBED_TFLM_ROUND);
  if (m->n_scratch)
    printf("scratch:  %zu kernel scratch buffer%s (%llu byte%s) left to "
           "TFLite Micro, with room for them in the plan\n",
           m->n_scratch, CLI_PLURAL(m->n_scratch),
           (unsigned long long)m->scratch_bytes,
           CLI_PLURAL(m->scratch_bytes));
  if (m->n_variable)
    printf("variable: %u tensor%s left to TFLite Micro's persistent "
           "memory (-1)\n",
           (unsigned)m->n_variable, CLI_PLURAL(m->n_variable));
  if (m->n_aliases)
    print_in_place(m, p, unshared);
  printf("wrote:    %s (%zu byte%s, %zu added)\n", a->out, out_len,
         CLI_PLURAL(out_len), out_len - in_len);
}

int cli_embed_main(int argc, char **argv)
{
  struct embed_args a;
  struct planner_tflite_model m;
  struct planner_tflite_options to;
  struct planner_plan p;
  char err[ARENA_ERR_LEN] = "";
  char *buf = NULL;
  uint8_t *outb = NULL;
  int32_t *offs = NULL;
  size_t len = 0, out_len = 0;
  memset(&a, 0, sizeof a);
  planner_options_init(&a.o);
  a.o.alignment = EMBED_DEFAULT_ALIGN;
  int rc = parse_args(argc, argv, &a);
  if (rc)
    return rc < 0 ? cli_finish_stdout() : rc;
  planner_tflite_init(&m);
  planner_plan_init(&p);
  const char *what = a.file;
  if ((rc = cli_input_read(what, a.file, CLI_INPUT_TFLITE, &buf, &len,
                              NULL)) != 0)
    return rc;
  memset(&to, 0, sizeof to);
  to.keep_dequant = 1;
  to.skip_variable = 1;
  to.tflm_scratch = 1;
  to.no_in_place = !a.o.in_place;
  if (!planner_tflite_is_model(buf, len)) {
    cli_error(what, "not a TFLite model (no \"TFL3\" at bytes 4-7)");
    rc = CLI_EX_DATAERR;
    goto out;
  }
  if ((rc = planner_tflite_read(buf, len, &to, &m, err)) != 0) {
    cli_error(what, "%s", err);
    rc = cli_exit_status(rc);
    goto out;
  }
  offs = malloc((size_t)m.n_tensors_all * sizeof *offs + 1);
  if (!offs) {
    cli_error(what, "out of memory");
    rc = CLI_EX_OSERR;
    goto out;
  }
  uint64_t tflm_bytes = 0, unshared = 0;
  if ((rc = plan_offsets(what, &m, &a.o, offs, &p, &tflm_bytes,
                         &unshared)) != 0)
    goto out;
  uint64_t arena = round_tflm(p.arena_bytes);
  if (arena >= round_tflm(tflm_bytes))
    cli_error(what, "warning: the plan needs %llu byte%s, no fewer than "
              "TFLite Micro's own planner (%llu byte%s): embedding it saves "
              "no memory",
              (unsigned long long)arena, CLI_PLURAL(arena),
              (unsigned long long)round_tflm(tflm_bytes),
              CLI_PLURAL(round_tflm(tflm_bytes)));
  rc = planner_tflite_embed(buf, len, offs, (size_t)m.n_tensors_all, &outb,
                            &out_len, err);
  if (rc) {
    cli_error(what, "%s", err[0] ? err : arena_strerror(rc));
    rc = cli_exit_status(rc);
    goto out;
  }
  /* Asked before writing: a replaced file is another file afterwards. */
  int to_stdout = cli_write_is_stdout(a.out);
  if ((rc = round_trip(a.out, outb, out_len, offs,
                       (size_t)m.n_tensors_all)) != 0 ||
      (rc = cli_write_file(a.out, outb, out_len)) != 0)
    goto out;
  if (!to_stdout) {
    print_report(&a, &m, &p, arena, tflm_bytes, unshared, len, out_len);
    rc = cli_finish_stdout();
  }
out:
  free(outb);
  free(offs);
  free(buf);
  planner_plan_cleanup(&p);
  planner_tflite_cleanup(&m);
  return rc;
}

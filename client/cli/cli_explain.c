/*
 * cli_explain.c - `arenactl explain`: where the memory of a graph goes.
 *
 * For a CSV, plan or TFLite file it prints live bytes at every operator
 * as a text chart, the peak operator(s), the tensors live at the peak
 * (largest first, with their share), how much the lower bound would drop
 * if each of the biggest were halved, and the lower bound against the
 * arena of every algorithm. --json prints the same as one object.
 *
 * Live bytes are plain sums of sizes; the lower bound and arenas use the
 * alignment (--align, default 64 as in `plan`), so the bound can sit a
 * little above the peak of live bytes.
 *
 * When the graph declares in-place aliases (planner.h, IN-PLACE
 * SHARING), the bound and the arenas are those with sharing (unless
 * --no-in-place), and a section lists the pairs `best` took (output,
 * input, operator and, for a model, its type, bytes) and what sharing
 * saves: the bound and best's arena planned without it, against with.
 * Live bytes stay plain sums: a shared pair is counted twice at the
 * operator where the output is written over its input.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_model.h"
#include "cli_share.h"
#include "planner.h"

#define CHART_ROWS 64   /* more operators than this are grouped */
#define CHART_WIDTH 40  /* characters of the longest bar */
#define N_HALVE 5       /* biggest peak tensors tried at half size */

static const enum planner_algo algos[] = {
    PLANNER_ALGO_NAIVE,        PLANNER_ALGO_TFLM_GREEDY,
    PLANNER_ALGO_TFLITE_BESTFIT, PLANNER_ALGO_GREEDY_SIZE,
    PLANNER_ALGO_GREEDY_BREADTH, PLANNER_ALGO_EXACT,
    PLANNER_ALGO_BEST,
};
#define N_ALGOS (sizeof algos / sizeof algos[0])
#define BEST (N_ALGOS - 1) /* best comes last in algos */

/* Everything explain computes. */
struct explain {
  struct cli_graph g;       /* the input */
  struct planner_options o; /* alignment for bounds and arenas */
  uint64_t *live;           /* live bytes per operator, n_ops */
  size_t n_ops;             /* operators charted */
  uint64_t peak;            /* max of live */
  size_t *at_peak;          /* tensor indexes live at the first peak op */
  size_t n_at_peak;         /* entries in at_peak */
  size_t peak_op;           /* first operator at the peak */
  uint64_t lb;              /* lower bound at o.alignment */
  uint64_t halved_lb[N_HALVE]; /* lower bound with at_peak[i] halved */
  uint64_t arena[N_ALGOS];  /* arena of each algorithm */
  enum planner_algo chosen; /* what `best` picked */
  size_t declared;          /* tensors that declare an alias */
  struct cli_pair *pairs;   /* the pairs best's plan took, owned */
  size_t n_pairs;           /* entries in pairs */
  uint64_t lb_unshared;     /* lower bound with every alias ignored */
  uint64_t arena_unshared;  /* best's arena with sharing off */
};

static void usage(FILE *f)
{
  fprintf(f,
          "Usage: %s explain [options] FILE\n"
          "\n"
          "Explains the memory of a lifetime graph (CSV), a plan (plan --json\n"
          "output or a CSV with offsets) or a .tflite model: live bytes at\n"
          "every operator, the peak, the tensors that make it, what halving\n"
          "one would save, and each algorithm's arena against the lower\n"
          "bound.\n"
          "\n"
          "Options:\n"
          "  --align N        alignment for bounds and arenas (default %u)\n"
          "  --keep-dequant   .tflite: plan DEQUANTIZE-of-constant outputs\n"
          "  --shape DIMS     .tflite: size a dynamic batch\n"
          CLI_IN_PLACE_HELP
          "  --json           print one JSON object\n"
          "  -h, --help       show this help\n"
          "\n"
          "When the graph declares in-place pairs (a .tflite's elementwise\n"
          "and reshape operators, a CSV's alias column), it also lists the\n"
          "pairs best took and the bytes sharing saves.\n"
          "\n"
          "Exit status: 0 done, 64 bad command line, 65 bad input,\n"
          "66 cannot read FILE.\n",
          CLI_PROG, PLANNER_DEFAULT_ALIGNMENT);
}

/* Sort key: size descending, then id ascending. qsort has no context
 * argument, so the tensor array goes through this file-local pointer
 * (arenactl is single-threaded). */
static const struct planner_tensor *sort_ctx;
static int by_size_desc(const void *a, const void *b)
{
  const struct planner_tensor *x = &sort_ctx[*(const size_t *)a];
  const struct planner_tensor *y = &sort_ctx[*(const size_t *)b];
  if (x->size != y->size)
    return x->size > y->size ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* The lower bound with tensor h of the peak at half its size, and with
 * it the tensors it may share bytes with when groups is not NULL (a
 * smaller output of an ADD comes with a smaller input); copy holds the
 * graph and is restored. */
static int halved_bound(struct explain *e, struct planner_tensor *copy,
                        size_t *groups, size_t h, char *err)
{
  size_t i = e->at_peak[h], n = e->g.n;
  struct planner_graph cv = {copy, n};
  size_t r = groups ? cli_group_of(groups, i) : i;
  for (size_t k = 0; k < n; k++)
    if (k == i || (groups && cli_group_of(groups, k) == r))
      copy[k].size = (e->g.tensors[k].size + 1) / 2;
  int rc = cli_lower_bound(&cv, &e->o, &e->halved_lb[h], err);
  for (size_t k = 0; k < n; k++)
    copy[k].size = e->g.tensors[k].size;
  return rc;
}

static int halve(struct explain *e, char *err)
{
  struct planner_tensor *copy = malloc(e->g.n * sizeof *copy);
  size_t *groups = NULL;
  struct planner_graph v = cli_graph_view(&e->g);
  if (copy && e->o.in_place && cli_has_aliases(&v))
    groups = cli_alias_groups(&v);
  if (!copy || (e->o.in_place && cli_has_aliases(&v) && !groups)) {
    free(copy);
    return ARENA_ENOMEM;
  }
  memcpy(copy, e->g.tensors, e->g.n * sizeof *copy);
  int rc = 0;
  for (size_t h = 0; rc == 0 && h < N_HALVE && h < e->n_at_peak; h++)
    rc = halved_bound(e, copy, groups, h, err);
  free(groups);
  free(copy);
  return rc;
}

/* Plans with every algorithm; keeps best's pairs. */
static int arenas(struct explain *e, char *err)
{
  struct planner_graph v = cli_graph_view(&e->g);
  int rc = 0;
  for (size_t a = 0; rc == 0 && a < N_ALGOS; a++) {
    struct planner_plan p;
    struct planner_options o = e->o;
    planner_plan_init(&p);
    o.algo = algos[a];
    rc = planner_run(&v, &o, &p, err);
    e->arena[a] = p.arena_bytes;
    if (rc == 0 && algos[a] == PLANNER_ALGO_BEST) {
      e->chosen = p.algo;
      if (cli_pairs_taken(e->g.what, &v, &e->o, p.offsets, &e->pairs,
                          &e->n_pairs))
        rc = ARENA_ENOMEM;
    }
    planner_plan_cleanup(&p);
  }
  return rc;
}

/* For a graph that declares aliases: the bound and best's arena with
 * sharing off, to set against those with it. */
static int unshared(struct explain *e, char *err)
{
  struct planner_graph v = cli_graph_view(&e->g);
  struct planner_options o = e->o;
  struct planner_plan p;
  for (size_t i = 0; i < e->g.n; i++)
    e->declared += e->g.tensors[i].has_alias != 0;
  if (!e->declared)
    return 0;
  o.in_place = 0;
  o.algo = PLANNER_ALGO_BEST;
  planner_plan_init(&p);
  int rc = planner_run(&v, &o, &p, err);
  e->lb_unshared = p.lower_bound_bytes;
  e->arena_unshared = p.arena_bytes;
  planner_plan_cleanup(&p);
  return rc;
}

static int analyse(struct explain *e)
{
  struct planner_graph v = cli_graph_view(&e->g);
  char err[ARENA_ERR_LEN] = "";
  int rc = planner_validate(&v, &e->o, err);
  if (rc) {
    cli_error(e->g.what, "%s", err[0] ? err : arena_strerror(rc));
    return cli_exit_status(rc);
  }
  if ((rc = cli_live_bytes(&e->g, &e->live, &e->n_ops)) != 0)
    return rc;
  for (size_t k = 0; k < e->n_ops; k++)
    if (e->live[k] > e->peak) {
      e->peak = e->live[k];
      e->peak_op = k;
    }
  e->at_peak = malloc((e->g.n + 1) * sizeof *e->at_peak);
  if (!e->at_peak) {
    cli_error(e->g.what, "out of memory");
    return CLI_EX_OSERR;
  }
  for (size_t i = 0; i < e->g.n; i++) {
    const struct planner_tensor *t = &e->g.tensors[i];
    if (t->first <= (int64_t)e->peak_op && (int64_t)e->peak_op <= t->last)
      e->at_peak[e->n_at_peak++] = i;
  }
  sort_ctx = e->g.tensors;
  qsort(e->at_peak, e->n_at_peak, sizeof *e->at_peak, by_size_desc);
  rc = cli_lower_bound(&v, &e->o, &e->lb, err);
  if (rc == 0)
    rc = halve(e, err);
  if (rc == 0)
    rc = arenas(e, err);
  if (rc == 0)
    rc = unshared(e, err);
  if (rc) {
    cli_error(e->g.what, "%s", err[0] ? err : arena_strerror(rc));
    return cli_exit_status(rc);
  }
  return 0;
}

static double pct(uint64_t part, uint64_t whole)
{
  return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static const char *kind_name(enum cli_graph_kind k)
{
  return k == CLI_GRAPH_TFLITE ? "tflite" : k == CLI_GRAPH_PLAN ? "plan" : "csv";
}

static void chart(const struct explain *e)
{
  size_t per = (e->n_ops + CHART_ROWS - 1) / CHART_ROWS;
  if (per < 1)
    per = 1;
  printf("live bytes per operator%s:\n",
         per > 1 ? " (each row: the most over a range of operators)" : "");
  for (size_t k = 0; k < e->n_ops; k += per) {
    size_t end = k + per < e->n_ops ? k + per : e->n_ops;
    uint64_t m = 0;
    for (size_t q = k; q < end; q++)
      if (e->live[q] > m)
        m = e->live[q];
    int w = e->peak ? (int)((m * CHART_WIDTH + e->peak - 1) / e->peak) : 0;
    char label[48];
    if (end - k > 1)
      snprintf(label, sizeof label, "%zu-%zu", k, end - 1);
    else
      snprintf(label, sizeof label, "%zu", k);
    printf("  op %-11s |%.*s%*s| %llu%s\n", label, w,
           "########################################", CHART_WIDTH - w, "",
           (unsigned long long)m, m == e->peak && e->peak ? "  <- peak" : "");
  }
}

/* The operator's type for a model ("ADD"), or NULL. */
static const char *op_type(const struct cli_graph *g, int64_t op)
{
  if (!g->has_model || op < 0 || (uint64_t)op >= g->model.n_ops)
    return NULL;
  return planner_tflite_inplace_op(g->model.op_codes[op]);
}

static uint64_t minus(uint64_t a, uint64_t b)
{
  return a > b ? a - b : 0;
}

/* The in-place section: the pairs best took and what sharing saves. */
static void print_sharing(const struct explain *e)
{
  const struct cli_graph *g = &e->g;
  if (!e->o.in_place) {
    printf("\nin-place sharing: off (--no-in-place); %zu pair%s declared\n",
           e->declared, CLI_PLURAL(e->declared));
    return;
  }
  printf("\nin-place sharing: %zu of %zu declared pair%s taken by best "
         "(an output written over the input its operator reads last):\n",
         e->n_pairs, e->declared, CLI_PLURAL(e->declared));
  if (e->n_pairs)
    printf("  %10s %10s %10s %12s%s\n", "output", "input", "operator",
           "bytes", g->has_model ? "  type" : "");
  for (size_t k = 0; k < e->n_pairs; k++) {
    const struct planner_tensor *o = &g->tensors[e->pairs[k].out];
    const struct planner_tensor *i = &g->tensors[e->pairs[k].in];
    const char *type = op_type(g, o->first);
    printf("  %10u %10u %10lld %12llu%s%s\n", (unsigned)o->id,
           (unsigned)i->id, (long long)o->first, (unsigned long long)o->size,
           type ? "  " : "", type ? type : "");
  }
  printf("saved by sharing: lower bound %llu -> %llu (-%llu byte%s), arena "
         "(best) %llu -> %llu (-%llu byte%s)\n",
         (unsigned long long)e->lb_unshared, (unsigned long long)e->lb,
         (unsigned long long)minus(e->lb_unshared, e->lb),
         CLI_PLURAL(minus(e->lb_unshared, e->lb)),
         (unsigned long long)e->arena_unshared,
         (unsigned long long)e->arena[BEST],
         (unsigned long long)minus(e->arena_unshared, e->arena[BEST]),
         CLI_PLURAL(minus(e->arena_unshared, e->arena[BEST])));
}

static void print_json_sharing(const struct explain *e)
{
  const struct cli_graph *g = &e->g;
  printf(",\"in_place\":%s,\"declared_pairs\":%zu,\"shared_pairs\":[",
         e->o.in_place ? "true" : "false", e->declared);
  for (size_t k = 0; k < e->n_pairs; k++) {
    const struct planner_tensor *o = &g->tensors[e->pairs[k].out];
    const char *type = op_type(g, o->first);
    printf("%s{\"out\":%u,\"in\":%u,\"op\":%lld,", k ? "," : "",
           (unsigned)o->id, (unsigned)g->tensors[e->pairs[k].in].id,
           (long long)o->first);
    if (type)
      printf("\"op_type\":\"%s\",", type);
    printf("\"bytes\":%llu}", (unsigned long long)o->size);
  }
  printf("],\"lower_bound_unshared_bytes\":%llu,\"arena_unshared_bytes\":%llu,"
         "\"saved_lower_bound_bytes\":%llu,\"saved_arena_bytes\":%llu",
         (unsigned long long)e->lb_unshared,
         (unsigned long long)e->arena_unshared,
         (unsigned long long)minus(e->lb_unshared, e->lb),
         (unsigned long long)minus(e->arena_unshared, e->arena[BEST]));
}

static void print_text(const struct explain *e)
{
  const struct cli_graph *g = &e->g;
  printf("file:        %s (%s, %zu tensor%s, %zu operator%s)\n", g->what,
         kind_name(g->kind), g->n, CLI_PLURAL(g->n), e->n_ops,
         CLI_PLURAL(e->n_ops));
  if (g->has_model)
    cli_model_summary(stdout, "model:       ", &g->model);
  printf("\n");
  chart(e);
  printf("\npeak:        %llu byte%s at operator", (unsigned long long)e->peak,
         CLI_PLURAL(e->peak));
  size_t n_peak = 0;
  for (size_t k = 0; k < e->n_ops; k++)
    if (e->live[k] == e->peak)
      n_peak++;
  printf("%s", n_peak > 1 ? "s" : "");
  for (size_t k = 0, shown = 0; k < e->n_ops; k++)
    if (e->live[k] == e->peak && shown++ < 20)
      printf("%s %zu", shown > 1 ? "," : "", k);
  printf("%s\n", n_peak > 20 ? ", ..." : "");
  printf("\ntensors live at operator %zu, largest first:\n", e->peak_op);
  if (g->names)
    printf("  %10s %12s %7s  %-13s %s\n", "id", "bytes", "share", "lifetime",
           "name");
  else
    printf("  %10s %12s %7s  %s\n", "id", "bytes", "share", "lifetime");
  for (size_t h = 0; h < e->n_at_peak; h++) {
    const struct planner_tensor *t = &g->tensors[e->at_peak[h]];
    char life[48];
    snprintf(life, sizeof life, "%lld-%lld", (long long)t->first,
             (long long)t->last);
    if (g->names) {
      printf("  %10u %12llu %6.1f%%  %-13s ", (unsigned)t->id,
             (unsigned long long)t->size, pct(t->size, e->peak), life);
      cli_print_text(stdout, g->names[e->at_peak[h]]);
      putchar('\n');
    } else
      printf("  %10u %12llu %6.1f%%  %s\n", (unsigned)t->id,
             (unsigned long long)t->size, pct(t->size, e->peak), life);
  }
  printf("\nif one tensor were half its size (lower bound %llu byte%s):\n",
         (unsigned long long)e->lb, CLI_PLURAL(e->lb));
  for (size_t h = 0; h < N_HALVE && h < e->n_at_peak; h++) {
    const struct planner_tensor *t = &g->tensors[e->at_peak[h]];
    printf("  tensor %-6u %12llu -> %-12llu lower bound %llu (-%llu byte%s, "
           "-%.1f%%)\n",
           (unsigned)t->id, (unsigned long long)t->size,
           (unsigned long long)((t->size + 1) / 2),
           (unsigned long long)e->halved_lb[h],
           (unsigned long long)minus(e->lb, e->halved_lb[h]),
           CLI_PLURAL(minus(e->lb, e->halved_lb[h])),
           pct(minus(e->lb, e->halved_lb[h]), e->lb));
  }
  printf("\nlower bound: %llu byte%s (alignment %llu)\n",
         (unsigned long long)e->lb, CLI_PLURAL(e->lb),
         (unsigned long long)e->o.alignment);
  printf("arena by algorithm:\n");
  for (size_t a = 0; a < N_ALGOS; a++) {
    printf("  %-15s %12llu  +%.1f%%", planner_algo_name(algos[a]),
           (unsigned long long)e->arena[a],
           pct(minus(e->arena[a], e->lb), e->lb));
    if (algos[a] == PLANNER_ALGO_BEST)
      printf("  (%s)", planner_algo_name(e->chosen));
    printf("%s\n", e->arena[a] == e->lb ? "  optimal" : "");
  }
  if (e->declared)
    print_sharing(e);
}

static void print_json(const struct explain *e)
{
  const struct cli_graph *g = &e->g;
  printf("{\"file\":");
  cli_print_json(stdout, g->what);
  printf(",\"kind\":\"%s\",\"n_tensors\":%zu,\"n_ops\":%zu,"
         "\"alignment\":%llu",
         kind_name(g->kind), g->n, e->n_ops,
         (unsigned long long)e->o.alignment);
  if (g->has_model) {
    char hex[2 * 32 + 1];
    for (int i = 0; i < 32; i++)
      snprintf(hex + 2 * i, 3, "%02x", g->model.sha256[i]);
    printf(",\"sha256\":\"%s\"", hex);
  }
  printf(",\"live_bytes\":[");
  for (size_t k = 0; k < e->n_ops; k++)
    printf("%s%llu", k ? "," : "", (unsigned long long)e->live[k]);
  printf("],\"peak_bytes\":%llu,\"peak_ops\":[", (unsigned long long)e->peak);
  for (size_t k = 0, n = 0; k < e->n_ops; k++)
    if (e->live[k] == e->peak)
      printf("%s%zu", n++ ? "," : "", k);
  printf("],\"peak_tensors\":[");
  for (size_t h = 0; h < e->n_at_peak; h++) {
    const struct planner_tensor *t = &g->tensors[e->at_peak[h]];
    printf("%s{\"id\":%u,\"size\":%llu,\"first\":%lld,\"last\":%lld,"
           "\"share\":%.4f",
           h ? "," : "", (unsigned)t->id, (unsigned long long)t->size,
           (long long)t->first, (long long)t->last,
           e->peak ? (double)t->size / (double)e->peak : 0.0);
    if (g->names) {
      printf(",\"name\":");
      cli_print_json(stdout, g->names[e->at_peak[h]]);
    }
    printf("}");
  }
  printf("],\"if_halved\":[");
  for (size_t h = 0; h < N_HALVE && h < e->n_at_peak; h++)
    printf("%s{\"id\":%u,\"lower_bound_bytes\":%llu,\"drop_bytes\":%llu}",
           h ? "," : "", (unsigned)g->tensors[e->at_peak[h]].id,
           (unsigned long long)e->halved_lb[h],
           (unsigned long long)minus(e->lb, e->halved_lb[h]));
  printf("],\"lower_bound_bytes\":%llu,\"arenas\":[",
         (unsigned long long)e->lb);
  for (size_t a = 0; a < N_ALGOS; a++)
    printf("%s{\"algorithm\":\"%s\",\"arena_bytes\":%llu}", a ? "," : "",
           planner_algo_name(algos[a]), (unsigned long long)e->arena[a]);
  printf("],\"best_choice\":\"%s\"", planner_algo_name(e->chosen));
  if (e->declared)
    print_json_sharing(e);
  printf("}\n");
}

int cli_explain_main(int argc, char **argv)
{
  struct explain e;
  struct cli_load_opts lo;
  const char *file = NULL;
  int json = 0, rc = 0;
  memset(&e, 0, sizeof e);
  memset(&lo, 0, sizeof lo);
  cli_graph_init(&e.g);
  planner_options_init(&e.o);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return cli_finish_stdout();
    } else if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (cli_model_option(argc, argv, &i, &lo, &rc) ||
               cli_plan_option(argc, argv, &i, &e.o, &rc)) {
      if (rc)
        return rc;
    } else if (argv[i][0] == '-' && strcmp(argv[i], "-") != 0) {
      cli_error("explain", "unknown option '%s'", argv[i]);
      return CLI_EX_USAGE;
    } else if (file) {
      cli_error("explain", "only one FILE may be given");
      return CLI_EX_USAGE;
    } else {
      file = argv[i];
    }
  }
  if (!file) {
    usage(stderr);
    return CLI_EX_USAGE;
  }
  e.o.in_place = !lo.no_in_place;
  if ((rc = cli_graph_load(file, &lo, &e.g)) == 0 &&
      (rc = analyse(&e)) == 0) {
    if (json)
      print_json(&e);
    else
      print_text(&e);
    rc = cli_finish_stdout();
  }
  free(e.live);
  free(e.at_peak);
  free(e.pairs);
  cli_graph_cleanup(&e.g);
  return rc;
}

/*
 * cli_plan.c - `arenactl plan`: reads a lifetime-graph CSV, plans it and
 * prints the plan as text or JSON.
 *
 * Without `--local` the graph goes to arenad (cli_daemon.c), keyed by the
 * SHA-256 of the input file and the --shape value, and the command falls
 * back to planning in this process when the daemon cannot be used (unless
 * --no-fallback). `--local` plans in this process only.
 *
 * The JSON object is a stable interface (docs/arenactl.md): keys are only
 * ever added, never renamed or removed.
 */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_daemon.h"
#include "cli_input.h"
#include "cli_model.h"
#include "cli_share.h"
#include "digest.h"
#include "graph_csv.h"
#include "planner.h"

#define WAIT_DEFAULT_S 60u     /* --wait-optimal without a value */
#define WAIT_MAX_S 86400u      /* the longest wait it takes */

/* The parsed command line. */
struct plan_args {
  const char *file;         /* input path, "-" for stdin; borrowed */
  struct planner_options o; /* algorithm, alignment, capacity, effort,
                               in-place sharing */
  int json;                 /* 1: print JSON instead of text */
  int local;                /* 1: --local, never ask the daemon */
  int no_fallback;          /* 1: --no-fallback, fail if the daemon does */
  const char *shape;        /* --shape: a .tflite is resized to it; the
                               cache key's input shape */
  uint32_t wait_ms;         /* --wait-optimal: how long to wait for the
                               daemon's background work, ms; 0: not */
  struct cli_daemon_args d; /* -s, --timeout-ms */
  struct cli_plan_source src; /* where the plan came from */
  uint64_t read_us;         /* wall time of reading and parsing FILE */
};

static void usage(FILE *f)
{
  fprintf(f,
          "Usage: %s plan [--local] [options] FILE\n"
          "\n"
          "Plans arena offsets for the lifetime graph in FILE (a CSV file in\n"
          "arenad's id,size,first,last format or MiniMalloc's\n"
          "id,lower,upper,size format; \"-\" reads standard input) and\n"
          "prints the plan.\n"
          "\n"
          "Options:\n"
          "  --local           plan in this process, without asking arenad\n"
          "  --no-fallback     fail (exit 69, 75, 76 or 77) when arenad cannot\n"
          "                    be used instead of planning in this process\n"
          "  -s, --socket PATH arenad's socket (default: $ARENAD_SOCKET, else\n"
          "                    /run/arenad/arenad.sock)\n"
          "  --shape S         input shape, e.g. 1x96x96x1 (inputs separated\n"
          "                    by commas): a .tflite is resized to it, as\n"
          "                    import does, and keyed by it; for a CSV it is\n"
          "                    only the cache key (default: the model's own\n"
          "                    input shape, none for a CSV)\n"
          "  --timeout-ms N    how long to wait for arenad, in ms\n"
          "  --algo A          algorithm: best (default), naive, tflm-greedy,\n"
          "                    tflite-bestfit, greedy-size, greedy-breadth,\n"
          "                    exact\n"
          "  --align N         alignment of every offset in bytes, a power of\n"
          "                    two (default %u; 1 = none)\n"
          "  --effort N        effort of the exact search, in units of\n"
          "                    nominally 1 ms of search (default %u); the\n"
          "                    plan depends on it, never on the machine's\n"
          "                    speed or load (--budget-ms N: deprecated\n"
          "                    alias)\n"
          "  --capacity BYTES  arena size available; exit status 1 when the\n"
          "                    plan does not fit (suffixes K, M, G = 1024^n)\n"
          "  --in-place        let a tensor reuse the bytes of the input its\n"
          "                    alias column names (a .tflite: of the input\n"
          "                    its elementwise or reshape operator reads\n"
          "                    last); the default: graphs declare only pairs\n"
          "                    whose kernels are known to be safe, and a\n"
          "                    plan that shares is never larger\n"
          "  --no-in-place     plan as if no tensor declared an alias\n"
          "  --wait-optimal[=SECONDS]\n"
          "                    when arenad keeps improving the plan in the\n"
          "                    background, wait until that work ends (the\n"
          "                    plan is proven optimal, or the top effort was\n"
          "                    tried) or SECONDS pass (default %u), then print\n"
          "                    its latest plan\n"
          "  --json            print one JSON object instead of text\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 planned (and fits), 1 does not fit the capacity,\n"
          "64 bad command line, 65 bad input data, 66 cannot read FILE;\n"
          "with --no-fallback also 69 arenad unreachable, 75 busy,\n"
          "76 protocol mismatch, 77 denied.\n",
          CLI_PROG, PLANNER_DEFAULT_ALIGNMENT, PLANNER_DEFAULT_EFFORT,
          WAIT_DEFAULT_S);
}

static int usage_error(const char *fmt, ...) CLI_PRINTF(1, 2);

static int usage_error(const char *fmt, ...)
{
  va_list ap;
  fflush(stdout);
  fprintf(stderr, "%s: plan: ", CLI_PROG);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry '%s plan --help'.\n", CLI_PROG);
  return CLI_EX_USAGE;
}

/* ---- arguments ---------------------------------------------------------- */

static int set_algo(struct plan_args *a, const char *v)
{
  if (planner_algo_parse(v, &a->o.algo) == 0)
    return 0;
  return usage_error("--algo: unknown algorithm '%s' (one of best, naive, "
                     "tflm-greedy, tflite-bestfit, greedy-size, "
                     "greedy-breadth, exact)",
                     v);
}

static int set_align(struct plan_args *a, const char *v)
{
  uint64_t n;
  if (cli_parse_u64(v, PLANNER_MAX_ALIGNMENT, &n) != 0 || n == 0 ||
      (n & (n - 1)) != 0)
    return usage_error("--align: '%s' is not a power of two from 1 to "
                       "4294967296",
                       v);
  a->o.alignment = n;
  return 0;
}

static int parse_effort(struct plan_args *a, const char *opt, const char *v)
{
  uint64_t n;
  if (cli_parse_u64(v, UINT32_MAX, &n) != 0)
    return usage_error("%s: '%s' is not a whole number from 0 to "
                       "4294967295", opt, v);
  a->o.effort = (uint32_t)n;
  return 0;
}

static int set_effort(struct plan_args *a, const char *v)
{
  return parse_effort(a, "--effort", v);
}

/* The option's old name: the same number, read as an effort. */
static int set_budget_ms(struct plan_args *a, const char *v)
{
  fprintf(stderr, "%s: plan: warning: --budget-ms is deprecated; use "
                  "--effort (the same number, in effort units)\n", CLI_PROG);
  return parse_effort(a, "--budget-ms", v);
}

static int set_capacity(struct plan_args *a, const char *v)
{
  uint64_t n;
  if (cli_parse_bytes(v, &n) != 0 || n == 0)
    return usage_error("--capacity: '%s' is not a positive byte count", v);
  a->o.capacity = n;
  return 0;
}

static int set_shape(struct plan_args *a, const char *v)
{
  a->shape = v; /* applied to a .tflite by load(); checked as a key by
                   cli_daemon_plan() */
  return 0;
}

/* Tries the options that take a value. Returns 1 when argv[*i] was one
 * (and *rc holds 0 or an exit status), 0 when it was not. */
static int value_option(int argc, char **argv, int *i, struct plan_args *a,
                        int *rc)
{
  static const struct {
    const char *name;
    int (*set)(struct plan_args *, const char *);
  } opts[] = {
      {"--algo", set_algo},
      {"--align", set_align},
      {"--effort", set_effort},
      {"--budget-ms", set_budget_ms},
      {"--capacity", set_capacity},
      {"--shape", set_shape},
  };
  for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
    const char *v = NULL;
    int m = cli_opt_value(argc, argv, i, opts[k].name, &v);
    if (m == 0)
      continue;
    *rc = m < 0 ? CLI_EX_USAGE : opts[k].set(a, v);
    return 1;
  }
  return 0;
}

/* --wait-optimal[=SECONDS]: 1 to WAIT_MAX_S whole seconds. */
static int set_wait(struct plan_args *a, const char *v)
{
  if (!v) {
    a->wait_ms = WAIT_DEFAULT_S * 1000u;
    return 0;
  }
  char *end;
  unsigned long x = strtoul(v, &end, 10);
  if (!*v || *v < '0' || *v > '9' || *end || x < 1 || x > WAIT_MAX_S)
    return usage_error("--wait-optimal '%s': give whole seconds, 1 to %u",
                       v, WAIT_MAX_S);
  a->wait_ms = (uint32_t)x * 1000u;
  return 0;
}

/* Fills *a from argv. Returns 0 to go on, -1 after printing the help, or
 * an exit status. */
static int parse_args(int argc, char **argv, struct plan_args *a)
{
  int rc = 0, only_files = 0;
  for (int i = 1; i < argc && rc == 0; i++) {
    const char *s = argv[i];
    if (only_files || s[0] != '-' || strcmp(s, "-") == 0) {
      if (a->file)
        return usage_error("unexpected argument '%s' (only one FILE)", s);
      a->file = s;
    } else if (strcmp(s, "--") == 0) {
      only_files = 1;
    } else if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
      usage(stdout);
      return -1;
    } else if (strcmp(s, "--local") == 0) {
      a->local = 1;
    } else if (strcmp(s, "--no-fallback") == 0) {
      a->no_fallback = 1;
    } else if (strcmp(s, "--json") == 0) {
      a->json = 1;
    } else if (strncmp(s, "--wait-optimal", 14) == 0 &&
               (s[14] == '\0' || s[14] == '=')) {
      rc = set_wait(a, s[14] ? s + 15 : NULL);
    } else if (cli_in_place_option(s, &a->o.in_place)) {
      continue;
    } else if (!value_option(argc, argv, &i, a, &rc) &&
               !cli_daemon_option("plan", argc, argv, &i, &a->d, &rc)) {
      return usage_error("unknown option '%s'", s);
    }
  }
  if (rc == 0 && !a->file)
    return usage_error("%s", "missing FILE (the lifetime-graph CSV)");
  if (rc == 0 && a->local && a->wait_ms)
    return usage_error("%s", "--wait-optimal waits for arenad; it cannot "
                             "go with --local");
  return rc;
}

/* ---- output ------------------------------------------------------------- */

/* What the plan did with the pairs the graph declares. */
struct sharing {
  struct cli_pair *pairs; /* the pairs taken, owned */
  size_t n;               /* entries in pairs */
  size_t declared;        /* tensors that declare an alias */
  uint64_t unshared;      /* the lower bound with every alias ignored */
};

#define PAIRS_SHOWN 6 /* pairs the text output names before "..." */

static double percent(uint64_t part, uint64_t whole)
{
  return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static int digits(uint64_t v)
{
  int n = 1;
  while (v >= 10) {
    v /= 10;
    n++;
  }
  return n;
}

/* Prints one row per tensor in aligned columns. */
static void print_table(const struct planner_csv *c,
                        const struct planner_plan *p)
{
  int w[5] = {2, 4, 5, 4, 6}; /* widths of the column names */
  for (size_t i = 0; i < c->n_tensors; i++) {
    const struct planner_tensor *t = &c->tensors[i];
    uint64_t v[5] = {t->id, t->size, (uint64_t)t->first, (uint64_t)t->last,
                     p->offsets[i]};
    for (int k = 0; k < 5; k++)
      if (digits(v[k]) > w[k])
        w[k] = digits(v[k]);
  }
  printf("%*s  %*s  %*s  %*s  %*s\n", w[0], "id", w[1], "size", w[2], "first",
         w[3], "last", w[4], "offset");
  for (size_t i = 0; i < c->n_tensors; i++) {
    const struct planner_tensor *t = &c->tensors[i];
    printf("%*u  %*llu  %*lld  %*lld  %*llu\n", w[0], (unsigned)t->id, w[1],
           (unsigned long long)t->size, w[2], (long long)t->first, w[3],
           (long long)t->last, w[4], (unsigned long long)p->offsets[i]);
  }
}

/* The capacity line. A shortfall is the best plan's, the one printed:
 * what is proven is only that no plan fits, never by how much. */
static void print_capacity(const struct planner_plan *p, uint64_t cap)
{
  uint64_t d = p->fit == PLANNER_FIT_YES ? cap - p->arena_bytes
                                         : p->arena_bytes - cap;
  const char *unit = d == 1 ? "byte" : "bytes";
  printf("capacity:        %llu bytes: ", (unsigned long long)cap);
  if (p->fit == PLANNER_FIT_YES)
    printf("fits (%llu %s spare)\n", (unsigned long long)d, unit);
  else if (p->fit == PLANNER_FIT_NO)
    printf("does not fit: the best plan found is %llu %s over (proven: no "
           "plan fits)\n",
           (unsigned long long)d, unit);
  else
    printf("unknown (the best plan found is %llu %s over; no proof that "
           "none fits)\n",
           (unsigned long long)d, unit);
}

/* Whether the exact search ran, so that its figures mean something. */
static int searched(const struct plan_args *a)
{
  return a->o.algo == PLANNER_ALGO_EXACT || a->o.algo == PLANNER_ALGO_BEST;
}

/* Where the plan came from, and the graph's digest. */
static void print_source(const struct cli_plan_source *s)
{
  char hex[PLANNER_DIGEST_HEX_LEN];
  if (!s->local)
    printf("source:          arenad (%s)\n", s->cached ? "cached" : "planned");
  else if (s->fallback_reason)
    printf("source:          this process (arenad not used: %s)\n",
           arena_strerror(s->fallback_reason));
  else
    printf("source:          this process\n");
  printf("graph digest:    %s\n",
         planner_hex(s->graph_digest, sizeof s->graph_digest, hex));
  if (!s->state_known)
    return;
  printf("generation:      %llu (found at effort %u)\n",
         (unsigned long long)s->generation, (unsigned)s->effort);
  printf("background:      %s\n",
         s->improving ? (s->wait_ended == 2
                             ? "still improving (the wait ran out)"
                             : "improving; `plan --wait-optimal` waits "
                               "for it")
                      : "done");
}

/* The lines on sharing, for a graph that declares aliases. */
static void print_sharing(const struct plan_args *a,
                          const struct planner_csv *c,
                          const struct sharing *sh)
{
  printf("unshared bound:  %llu byte%s (the lower bound with no pair "
         "shared)\n",
         (unsigned long long)sh->unshared, CLI_PLURAL(sh->unshared));
  if (!a->o.in_place) {
    printf("in-place pairs:  off (--no-in-place): %zu declared, none "
           "shared\n",
           sh->declared);
    return;
  }
  printf("in-place pairs:  %zu of %zu declared share their input's bytes",
         sh->n, sh->declared);
  for (size_t k = 0; k < sh->n && k < PAIRS_SHOWN; k++)
    printf("%s%u<-%u", k ? ", " : ": ",
           (unsigned)c->tensors[sh->pairs[k].out].id,
           (unsigned)c->tensors[sh->pairs[k].in].id);
  printf("%s\n", sh->n > PAIRS_SHOWN ? ", ... (explain lists them all)" : "");
}

/* The baseline of the saving line: the arena the naive algorithm (no
 * reuse) gives c's graph under the plan's options, at its alignment, with
 * its pins and in-place pairs, exactly what `--algo naive` prints
 * (planner_naive_arena()); the plan's own arena when it is naive's. 0
 * when it cannot be planned (then no saving is claimed). */
static uint64_t naive_aligned(const struct planner_csv *c,
                              const struct plan_args *a,
                              const struct planner_plan *p)
{
  if (p->algo == PLANNER_ALGO_NAIVE)
    return p->arena_bytes;
  if (a->src.naive_known) /* a plan made here: taken while planning */
    return a->src.naive_bytes;
  struct planner_graph g = planner_csv_graph(c);
  uint64_t v;
  return planner_naive_arena(&g, &a->o, &v, NULL) == 0 ? v : 0;
}

/* The naive and saving lines: the saving is measured against the naive
 * algorithm's arena at the same alignment, so that padding, which no
 * plan at that alignment avoids, never shows as a negative saving, and a
 * plan without reuse shows none; an arena above it (tensors' own larger
 * alignments can do that) is said so in bytes. */
static void print_saving(const struct planner_plan *p, uint64_t aligned)
{
  const char *at = aligned != p->naive_bytes ? " at this alignment" : "";
  printf("naive:           %llu byte%s", (unsigned long long)p->naive_bytes,
         p->naive_bytes == 1 ? "" : "s");
  if (*at)
    printf(" (%llu as the naive algorithm places them at this alignment)",
           (unsigned long long)aligned);
  printf("\n");
  if (!aligned)
    return;
  uint64_t above = p->arena_bytes > aligned ? p->arena_bytes - aligned : 0;
  if (p->arena_bytes <= aligned)
    printf("saving:          %.2f%% vs naive%s\n",
           100.0 - percent(p->arena_bytes, aligned), at);
  else
    printf("saving:          none: the arena is %llu byte%s above naive%s\n",
           (unsigned long long)above, above == 1 ? "" : "s", at);
}

static void print_text(const struct plan_args *a, const struct planner_csv *c,
                       const struct planner_plan *p, const struct sharing *sh)
{
  uint64_t gap = p->arena_bytes - p->lower_bound_bytes;
  /* A graph read from a .tflite model has no CSV dialect. */
  printf("file:            %s (%zu tensor%s, %s)\n",
         strcmp(a->file, "-") ? a->file : "<stdin>", c->n_tensors,
         CLI_PLURAL(c->n_tensors),
         c->format == PLANNER_CSV_NONE
             ? "TFLite model"
             : c->format == PLANNER_CSV_MINIMALLOC ? "MiniMalloc CSV"
                                                   : "CSV");
  print_source(&a->src);
  printf("algorithm:       %s", planner_algo_name(p->algo));
  if (a->o.algo != p->algo)
    printf(" (chosen by %s)", planner_algo_name(a->o.algo));
  printf("\nalignment:       %llu byte%s\n", (unsigned long long)a->o.alignment,
         a->o.alignment == 1 ? "" : "s");
  printf("arena:           %llu byte%s\n", (unsigned long long)p->arena_bytes,
         CLI_PLURAL(p->arena_bytes));
  printf("lower bound:     %llu byte%s (%s bound)\n",
         (unsigned long long)p->lower_bound_bytes,
         CLI_PLURAL(p->lower_bound_bytes), planner_bound_name(p->bound));
  if (sh->declared)
    print_sharing(a, c, sh);
  print_saving(p, naive_aligned(c, a, p));
  printf("proven optimal:  %s\n", p->proven_optimal ? "yes" : "no");
  if (a->o.capacity)
    print_capacity(p, a->o.capacity);
  if (searched(a) && (a->o.algo == PLANNER_ALGO_EXACT || p->nodes_explored ||
                      p->search_us))
    printf("exact search:    %llu nodes in %.3f ms, gap to the bound %llu "
           "bytes (%.2f%%)\n",
           (unsigned long long)p->nodes_explored, (double)p->search_us / 1e3,
           (unsigned long long)gap, percent(gap, p->lower_bound_bytes));
  printf("\n");
  print_table(c, p);
}

static void print_json_pairs(const struct planner_csv *c,
                             const struct sharing *sh)
{
  printf(",\"lower_bound_unshared_bytes\":%llu,\"shared_pairs\":[",
         (unsigned long long)sh->unshared);
  for (size_t k = 0; k < sh->n; k++) {
    const struct planner_tensor *o = &c->tensors[sh->pairs[k].out];
    const struct planner_tensor *i = &c->tensors[sh->pairs[k].in];
    printf("%s{\"out\":%u,\"in\":%u,\"op\":%lld,\"bytes\":%llu}",
           k ? "," : "", (unsigned)o->id, (unsigned)i->id, (long long)o->first,
           (unsigned long long)o->size);
  }
  printf("]");
}

/* The tensor array of the JSON object is most of its bytes (a million
 * tensors: about 70 MB): it is formatted by hand into a buffer that goes
 * to stdout in large writes, as printf would print it. */
struct jbuf {
  char b[1 << 16]; /* text not yet written */
  size_t n;        /* bytes used in b */
};

#define JBUF_ROW 256 /* room one tensor's text needs at most */

static void jb_flush(struct jbuf *j)
{
  fwrite(j->b, 1, j->n, stdout);
  j->n = 0;
}

/* Appends the n bytes at s (n < JBUF_ROW). */
static void jb_put(struct jbuf *j, const char *s, size_t n)
{
  memcpy(j->b + j->n, s, n);
  j->n += n;
}

#define JB_LIT(j, lit) jb_put((j), (lit), sizeof(lit) - 1)

/* "00" to "99": two digits per division. */
static const char DIGIT_PAIRS[] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

static void jb_u64(struct jbuf *j, uint64_t v)
{
  char tmp[20], *e = tmp + sizeof tmp, *p = e;
  while (v >= 100) {
    unsigned d = (unsigned)(v % 100);
    v /= 100;
    p -= 2;
    memcpy(p, DIGIT_PAIRS + 2 * d, 2);
  }
  if (v >= 10) {
    p -= 2;
    memcpy(p, DIGIT_PAIRS + 2 * v, 2);
  } else {
    *--p = (char)('0' + v);
  }
  jb_put(j, p, (size_t)(e - p));
}

static void jb_i64(struct jbuf *j, int64_t v)
{
  if (v < 0) {
    JB_LIT(j, "-");
    jb_u64(j, (uint64_t)0 - (uint64_t)v);
  } else {
    jb_u64(j, (uint64_t)v);
  }
}

static void print_json_tensors(const struct planner_csv *c,
                               const struct planner_plan *p)
{
  struct jbuf jb, *j = &jb; /* 64 KiB of stack, in the command's main */
  j->n = 0;
  for (size_t i = 0; i < c->n_tensors; i++) {
    const struct planner_tensor *t = &c->tensors[i];
    if (sizeof j->b - j->n < JBUF_ROW)
      jb_flush(j);
    if (i)
      JB_LIT(j, ",");
    JB_LIT(j, "{\"id\":");
    jb_u64(j, t->id);
    JB_LIT(j, ",\"size\":");
    jb_u64(j, t->size);
    JB_LIT(j, ",\"first\":");
    jb_i64(j, t->first);
    JB_LIT(j, ",\"last\":");
    jb_i64(j, t->last);
    JB_LIT(j, ",\"offset\":");
    jb_u64(j, p->offsets[i]);
    if (t->has_alias) {
      JB_LIT(j, ",\"alias\":");
      jb_u64(j, t->alias);
    }
    JB_LIT(j, "}");
  }
  jb_flush(j);
}

static void print_json(const struct plan_args *a, const struct planner_csv *c,
                       const struct planner_plan *p, const struct sharing *sh)
{
  printf("{\"arena_bytes\":%llu,\"lower_bound_bytes\":%llu,"
         "\"naive_bytes\":%llu,\"naive_aligned_bytes\":%llu,"
         "\"algorithm\":\"%s\",\"proven_optimal\":%s,"
         "\"alignment\":%llu,\"bound\":\"%s\"",
         (unsigned long long)p->arena_bytes,
         (unsigned long long)p->lower_bound_bytes,
         (unsigned long long)p->naive_bytes,
         (unsigned long long)naive_aligned(c, a, p),
         planner_algo_name(p->algo),
         p->proven_optimal ? "true" : "false",
         (unsigned long long)a->o.alignment, planner_bound_name(p->bound));
  if (a->o.capacity)
    printf(",\"capacity\":%llu,\"fit\":\"%s\"",
           (unsigned long long)a->o.capacity, planner_fit_name(p->fit));
  if (searched(a)) {
    uint64_t gap = p->arena_bytes - p->lower_bound_bytes;
    printf(",\"nodes_explored\":%llu,\"search_us\":%llu,"
           "\"gap_bytes\":%llu,\"gap_percent\":%.2f",
           (unsigned long long)p->nodes_explored,
           (unsigned long long)p->search_us, (unsigned long long)gap,
           percent(gap, p->lower_bound_bytes));
  }
  if (a->src.local) /* planned here: where the command's time went */
    printf(",\"read_us\":%llu,\"plan_us\":%llu,\"validate_us\":%llu,"
           "\"index_us\":%llu,\"heuristics_us\":%llu,\"verify_us\":%llu",
           (unsigned long long)a->read_us,
           (unsigned long long)p->plan_us, (unsigned long long)p->validate_us,
           (unsigned long long)p->index_us,
           (unsigned long long)p->heuristics_us,
           (unsigned long long)p->verify_us);
  char hex[PLANNER_DIGEST_HEX_LEN];
  if (a->src.state_known)
    printf(",\"generation\":%llu,\"effort\":%u,\"improving\":%s",
           (unsigned long long)a->src.generation, (unsigned)a->src.effort,
           a->src.improving ? "true" : "false");
  printf(",\"cached\":%s,\"local\":%s,\"graph_digest\":\"%s\"",
         a->src.cached ? "true" : "false", a->src.local ? "true" : "false",
         planner_hex(a->src.graph_digest, sizeof a->src.graph_digest, hex));
  print_json_pairs(c, sh);
  printf(",\"tensors\":[");
  print_json_tensors(c, p);
  printf("]}\n");
}

/* ---- the command -------------------------------------------------------- */

/* A monotonic clock in microseconds, for read_us only. */
static uint64_t now_us(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* Reads and parses the input. A TFLite model is sized for shape_in (the
 * --shape text, or NULL), declares in-place pairs when in_place is set,
 * and the input shape its sizes were computed for is written into shape.
 * hash (NULL: not wanted) receives the SHA-256 of the file's bytes.
 * Returns 0 or an exit status. */
static int load(const char *file, const char *shape_in, int in_place,
                struct planner_csv *c, uint8_t hash[PLANNER_DIGEST_LEN],
                char *shape, size_t cap)
{
  char err[ARENA_ERR_LEN] = "";
  char *buf = NULL;
  size_t len = 0;
  const char *what = strcmp(file, "-") ? file : "<stdin>";
  /* a CSV comes back parsed, as it was read; without a hash to take,
   * its bytes are dropped as they are parsed */
  int rc = cli_input_read(what, file,
                          hash ? CLI_INPUT_GRAPH : CLI_INPUT_GRAPH_PARSED,
                          &buf, &len, c);
  if (rc)
    return rc;
  if (hash) /* the model hash of the cache key */
    planner_sha256(buf, len, hash);
  if (!c->n_tensors && planner_tflite_is_model(buf, len)) {
    /* TFLite: cli_model.c resizes it as import and explain do */
    rc = cli_model_to_csv(what, buf, len, shape_in, in_place, c, shape,
                          cap);
    free(buf);
    return rc;
  }
  rc = c->n_tensors ? 0 : planner_csv_parse(buf, len, c, err);
  free(buf);
  if (rc) {
    cli_error(what, "%s", err[0] ? err : arena_strerror(rc));
    return cli_exit_status(rc);
  }
  return 0;
}

/* The plan's answer to the capacity question; fills it in if the planner
 * left it open. */
static enum planner_fit fit_of(struct planner_plan *p, uint64_t cap)
{
  if (cap && p->fit == PLANNER_FIT_NA) {
    if (p->arena_bytes <= cap)
      p->fit = PLANNER_FIT_YES;
    else
      p->fit = p->lower_bound_bytes > cap ? PLANNER_FIT_NO
                                          : PLANNER_FIT_UNKNOWN;
  }
  return p->fit;
}

static int report_misfit(const struct plan_args *a, const struct planner_plan *p)
{
  const char *what = strcmp(a->file, "-") ? a->file : "<stdin>";
  if (p->fit == PLANNER_FIT_NO)
    cli_error(what, "does not fit in %llu bytes: the plan needs %llu bytes "
              "and no plan needs fewer than %llu",
              (unsigned long long)a->o.capacity,
              (unsigned long long)p->arena_bytes,
              (unsigned long long)p->lower_bound_bytes);
  else
    cli_error(what, "no plan found that fits in %llu bytes: the best one "
              "needs %llu bytes (whether a fitting plan exists is unknown)",
              (unsigned long long)a->o.capacity,
              (unsigned long long)p->arena_bytes);
  return CLI_EX_FAIL;
}

/* What the plan did with the declared pairs: those its offsets take,
 * and the bound without them (the planner reports it; a plan from
 * arenad may not, and then it is the load bound when a pair was taken). */
static int sharing_of(const struct plan_args *a, const struct planner_graph *g,
                      const struct planner_plan *p, uint64_t load_lb,
                      struct sharing *sh)
{
  const char *what = strcmp(a->file, "-") ? a->file : "<stdin>";
  for (size_t i = 0; i < g->n_tensors; i++)
    sh->declared += g->tensors[i].has_alias != 0;
  int rc = cli_pairs_taken(what, g, &a->o, p->offsets, &sh->pairs, &sh->n);
  if (p->lower_bound_unshared_bytes)
    sh->unshared = p->lower_bound_unshared_bytes;
  else
    sh->unshared = sh->n ? load_lb : p->lower_bound_bytes;
  return rc;
}

int cli_plan_main(int argc, char **argv)
{
  struct plan_args a;
  struct planner_csv c;
  struct planner_plan p;
  struct planner_graph g;
  uint8_t hash[PLANNER_DIGEST_LEN] = {0};
  char model_shape[512] = "";
  struct sharing sh = {NULL, 0, 0, 0};
  enum planner_fit fit;
  memset(&a, 0, sizeof a);
  planner_options_init(&a.o);
  a.o.threads = planner_cpu_threads();
  int rc = parse_args(argc, argv, &a);
  if (rc)
    return rc < 0 ? cli_finish_stdout() : rc;
  planner_csv_init(&c);
  planner_plan_init(&p);
  /* --local asks no cache, so the file's hash is not needed */
  uint64_t t0 = now_us();
  if ((rc = load(a.file, a.shape, a.o.in_place, &c, a.local ? NULL : hash,
                 model_shape, sizeof model_shape)) != 0)
    goto out;
  a.read_us = now_us() - t0;
  /* A .tflite is keyed by the input shape its sizes were computed for:
   * its own, or the --shape it was resized to, written out in full. */
  if (model_shape[0])
    a.shape = model_shape;
  g = planner_csv_graph(&c);
  rc = cli_daemon_plan(strcmp(a.file, "-") ? a.file : "<stdin>", &a.d,
                       a.local, !a.no_fallback, a.wait_ms, hash, a.shape, &g, &a.o, &p,
                       &a.src);
  if (rc)
    goto out;
  /* arenad's reply carries the bound but not its source: a bound above
   * the load bound can only come from an exhausted search. A plan made in
   * this process carries the load bound; only arenad's needs it computed
   * (a second time index over the graph). */
  uint64_t load_lb = p.load_bound_bytes;
  if (a.src.local || planner_lower_bound(&g, &a.o, &load_lb) == 0)
    p.bound = p.lower_bound_bytes > load_lb ? PLANNER_BOUND_SEARCH
                                            : PLANNER_BOUND_LOAD;
  if ((rc = sharing_of(&a, &g, &p, load_lb, &sh)) != 0)
    goto out;
  fit = fit_of(&p, a.o.capacity);
  if (a.json)
    print_json(&a, &c, &p, &sh);
  else
    print_text(&a, &c, &p, &sh);
  rc = cli_finish_stdout();
  if (rc == 0 && (fit == PLANNER_FIT_NO || fit == PLANNER_FIT_UNKNOWN))
    rc = report_misfit(&a, &p);
out:
  free(sh.pairs);
  planner_plan_cleanup(&p);
  planner_csv_cleanup(&c);
  return rc;
}

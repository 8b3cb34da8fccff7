/*
 * cli_diff.c - `arenactl diff A B`: what changed between two plans or
 * graphs.
 *
 * Each side may be a lifetime-graph CSV (planned here with --algo and
 * --align; a CSV with an offset column is taken as a plan), the JSON of
 * `arenactl plan --json` (its offsets and alignment are used as they
 * are) or a .tflite model (planned here). Tensors are matched by id. The
 * report lists tensors added, removed, resized, with a changed lifetime,
 * and moved (same tensor, another offset), then the arena, lower-bound
 * and padding deltas, where padding is the arena above the lower bound:
 * the bytes a plan spends beyond what any plan must.
 *
 * Exit status follows diff(1): 0 when nothing differs, 1 when something
 * does, above that for errors.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_model.h"
#include "cli_share.h"
#include "planner.h"

/* One side of the comparison. */
struct side {
  struct cli_graph g;       /* the input */
  struct planner_options o; /* its planning options */
  struct planner_plan p;    /* its plan */
  size_t *order;            /* tensor indexes sorted by id */
};

/* What changed in one tensor present on both sides. */
enum {
  CH_SIZE = 1,
  CH_LIFE = 2,
  CH_MOVED = 4,
};

static void usage(FILE *f)
{
  fprintf(f,
          "Usage: %s diff [options] A B\n"
          "\n"
          "Compares two plans or graphs: CSV files (planned first; a CSV with\n"
          "an offset column is a plan), 'plan --json' output, or .tflite\n"
          "models (planned first). Reports tensors added, removed, resized,\n"
          "with another lifetime or moved to another offset, and the arena,\n"
          "lower-bound and padding (arena above the lower bound) deltas.\n"
          "\n"
          "Options:\n"
          "  --algo A         algorithm for inputs that are not plans\n"
          "                   (default best)\n"
          "  --align N        alignment for inputs that are not plans\n"
          "                   (default %u)\n"
          "  --keep-dequant   .tflite: plan DEQUANTIZE-of-constant outputs\n"
          "  --shape DIMS     .tflite: size a dynamic batch\n"
          CLI_IN_PLACE_HELP
          "  --json           print one JSON object\n"
          "  -h, --help       show this help\n"
          "\n"
          "Exit status: 0 no differences, 1 differences, 64 bad command line,\n"
          "65 bad input, 66 cannot read a file.\n",
          CLI_PROG, PLANNER_DEFAULT_ALIGNMENT);
}

/* qsort has no context argument; arenactl is single-threaded. */
static const struct planner_tensor *sort_ctx;
static int by_id(const void *a, const void *b)
{
  uint32_t x = sort_ctx[*(const size_t *)a].id;
  uint32_t y = sort_ctx[*(const size_t *)b].id;
  return x < y ? -1 : x > y;
}

static int load_side(const char *path, const struct cli_load_opts *lo,
                     const struct planner_options *o, struct side *s)
{
  int rc = cli_graph_load(path, lo, &s->g);
  if (rc)
    return rc;
  s->o = *o;
  if (s->g.offsets && s->g.alignment)
    s->o.alignment = s->g.alignment;
  if ((rc = cli_graph_plan(&s->g, &s->o, &s->p)) != 0)
    return rc;
  s->order = malloc((s->g.n + 1) * sizeof *s->order);
  if (!s->order) {
    cli_error(s->g.what, "out of memory");
    return CLI_EX_OSERR;
  }
  for (size_t i = 0; i < s->g.n; i++)
    s->order[i] = i;
  sort_ctx = s->g.tensors;
  qsort(s->order, s->g.n, sizeof *s->order, by_id);
  return 0;
}

static void free_side(struct side *s)
{
  free(s->order);
  planner_plan_cleanup(&s->p);
  cli_graph_cleanup(&s->g);
}

static long long delta(uint64_t a, uint64_t b)
{
  return b >= a ? (long long)(b - a) : -(long long)(a - b);
}

static const char *kind(enum cli_graph_kind k)
{
  return k == CLI_GRAPH_TFLITE ? "tflite" : k == CLI_GRAPH_PLAN ? "plan" : "csv";
}

static uint64_t padding(const struct side *s)
{
  return s->p.arena_bytes - s->p.lower_bound_bytes;
}

/* Walks both sides in id order, calling f for every id: ia/ib are the
 * tensor indexes or (size_t)-1 when absent on that side. */
typedef void (*visit_cb)(const struct side *a, const struct side *b, size_t ia,
                         size_t ib, void *ctx);

static void walk(const struct side *a, const struct side *b, visit_cb f,
                 void *ctx)
{
  size_t i = 0, j = 0;
  while (i < a->g.n || j < b->g.n) {
    size_t ia = i < a->g.n ? a->order[i] : (size_t)-1;
    size_t ib = j < b->g.n ? b->order[j] : (size_t)-1;
    if (ib == (size_t)-1 ||
        (ia != (size_t)-1 && a->g.tensors[ia].id < b->g.tensors[ib].id)) {
      f(a, b, ia, (size_t)-1, ctx);
      i++;
    } else if (ia == (size_t)-1 ||
               b->g.tensors[ib].id < a->g.tensors[ia].id) {
      f(a, b, (size_t)-1, ib, ctx);
      j++;
    } else {
      f(a, b, ia, ib, ctx);
      i++;
      j++;
    }
  }
}

static int changes(const struct side *a, const struct side *b, size_t ia,
                   size_t ib)
{
  const struct planner_tensor *x = &a->g.tensors[ia], *y = &b->g.tensors[ib];
  int c = 0;
  if (x->size != y->size)
    c |= CH_SIZE;
  if (x->first != y->first || x->last != y->last)
    c |= CH_LIFE;
  if (a->p.offsets[ia] != b->p.offsets[ib])
    c |= CH_MOVED;
  return c;
}

/* Counts of each kind of change. */
struct counts {
  size_t added, removed, resized, life, moved, same;
};

static void count_cb(const struct side *a, const struct side *b, size_t ia,
                     size_t ib, void *ctx)
{
  struct counts *c = ctx;
  if (ia == (size_t)-1) {
    c->added++;
  } else if (ib == (size_t)-1) {
    c->removed++;
  } else {
    int ch = changes(a, b, ia, ib);
    c->resized += (ch & CH_SIZE) != 0;
    c->life += (ch & CH_LIFE) != 0;
    c->moved += (ch & CH_MOVED) != 0;
    c->same += ch == 0;
  }
}

/* Which list a text or JSON pass is printing. */
struct lister {
  int what;  /* 0 added, 1 removed, 2 resized, 3 lifetime, 4 moved */
  int json;  /* 1: JSON elements */
  size_t n;  /* printed so far */
};

static void print_tensor(const struct side *s, size_t i, int json)
{
  const struct planner_tensor *t = &s->g.tensors[i];
  if (json)
    printf("{\"id\":%u,\"size\":%llu,\"first\":%lld,\"last\":%lld,"
           "\"offset\":%llu}",
           (unsigned)t->id, (unsigned long long)t->size, (long long)t->first,
           (long long)t->last, (unsigned long long)s->p.offsets[i]);
  else
    printf("  %-10u %12llu byte%-1s  ops %lld-%lld  offset %llu\n",
           (unsigned)t->id, (unsigned long long)t->size, CLI_PLURAL(t->size),
           (long long)t->first,
           (long long)t->last, (unsigned long long)s->p.offsets[i]);
}

static void list_cb(const struct side *a, const struct side *b, size_t ia,
                    size_t ib, void *ctx)
{
  struct lister *l = ctx;
  int hit = 0;
  if (l->what == 0)
    hit = ia == (size_t)-1;
  else if (l->what == 1)
    hit = ib == (size_t)-1;
  else if (ia != (size_t)-1 && ib != (size_t)-1)
    hit = (changes(a, b, ia, ib) &
           (l->what == 2 ? CH_SIZE : l->what == 3 ? CH_LIFE : CH_MOVED)) != 0;
  if (!hit)
    return;
  if (l->json && l->n)
    printf(",");
  l->n++;
  if (l->what == 0) {
    print_tensor(b, ib, l->json);
    return;
  }
  if (l->what == 1) {
    print_tensor(a, ia, l->json);
    return;
  }
  const struct planner_tensor *x = &a->g.tensors[ia], *y = &b->g.tensors[ib];
  if (l->what == 2) {
    if (l->json)
      printf("{\"id\":%u,\"from\":%llu,\"to\":%llu}", (unsigned)x->id,
             (unsigned long long)x->size, (unsigned long long)y->size);
    else
      printf("  %-10u %12llu -> %llu byte%s (%+lld)\n", (unsigned)x->id,
             (unsigned long long)x->size, (unsigned long long)y->size,
             CLI_PLURAL(y->size), delta(x->size, y->size));
  } else if (l->what == 3) {
    if (l->json)
      printf("{\"id\":%u,\"from\":[%lld,%lld],\"to\":[%lld,%lld]}",
             (unsigned)x->id, (long long)x->first, (long long)x->last,
             (long long)y->first, (long long)y->last);
    else
      printf("  %-10u ops %lld-%lld -> %lld-%lld\n", (unsigned)x->id,
             (long long)x->first, (long long)x->last, (long long)y->first,
             (long long)y->last);
  } else {
    if (l->json)
      printf("{\"id\":%u,\"from\":%llu,\"to\":%llu}", (unsigned)x->id,
             (unsigned long long)a->p.offsets[ia],
             (unsigned long long)b->p.offsets[ib]);
    else
      printf("  %-10u offset %llu -> %llu\n", (unsigned)x->id,
             (unsigned long long)a->p.offsets[ia],
             (unsigned long long)b->p.offsets[ib]);
  }
}

static const char *const list_names[] = {"added", "removed", "resized",
                                         "lifetime_changed", "moved"};

static void print_side_text(const char *label, const struct side *s)
{
  printf("%s %s (%s, %zu tensor%s): arena %llu, lower bound %llu, padding "
         "%llu byte%s (%s, alignment %llu)\n",
         label, s->g.what, kind(s->g.kind), s->g.n, CLI_PLURAL(s->g.n),
         (unsigned long long)s->p.arena_bytes,
         (unsigned long long)s->p.lower_bound_bytes,
         (unsigned long long)padding(s), CLI_PLURAL(padding(s)),
         planner_algo_name(s->p.algo),
         (unsigned long long)s->o.alignment);
}

static void print_change(const char *label, uint64_t a, uint64_t b)
{
  printf("%-13s %llu -> %llu (%+lld", label, (unsigned long long)a,
         (unsigned long long)b, delta(a, b));
  if (a)
    printf(", %+.2f%%", 100.0 * (double)delta(a, b) / (double)a);
  printf(")\n");
}

static void print_text(const struct side *a, const struct side *b,
                       const struct counts *c)
{
  print_side_text("A:", a);
  print_side_text("B:", b);
  printf("\n");
  print_change("arena:", a->p.arena_bytes, b->p.arena_bytes);
  print_change("lower bound:", a->p.lower_bound_bytes, b->p.lower_bound_bytes);
  print_change("padding:", padding(a), padding(b));
  printf("tensors:      %zu -> %zu: %zu added, %zu removed, %zu resized, %zu "
         "lifetime changed, %zu moved, %zu unchanged\n",
         a->g.n, b->g.n, c->added, c->removed, c->resized, c->life, c->moved,
         c->same);
  size_t n[5] = {c->added, c->removed, c->resized, c->life, c->moved};
  for (int w = 0; w < 5; w++) {
    if (!n[w])
      continue;
    struct lister l = {w, 0, 0};
    printf("\n%s:\n", w == 3 ? "lifetime changed" : list_names[w]);
    walk(a, b, list_cb, &l);
  }
}

static void print_side_json(const struct side *s)
{
  printf("{\"file\":");
  cli_print_json(stdout, s->g.what);
  printf(",\"kind\":\"%s\",\"n_tensors\":%zu,\"arena_bytes\":%llu,"
         "\"lower_bound_bytes\":%llu,\"padding_bytes\":%llu,"
         "\"algorithm\":\"%s\",\"alignment\":%llu}",
         kind(s->g.kind), s->g.n, (unsigned long long)s->p.arena_bytes,
         (unsigned long long)s->p.lower_bound_bytes,
         (unsigned long long)padding(s), planner_algo_name(s->p.algo),
         (unsigned long long)s->o.alignment);
}

static void print_json(const struct side *a, const struct side *b,
                       const struct counts *c, int same)
{
  printf("{\"identical\":%s,\"a\":", same ? "true" : "false");
  print_side_json(a);
  printf(",\"b\":");
  print_side_json(b);
  printf(",\"arena_delta\":%lld,\"lower_bound_delta\":%lld,"
         "\"padding_delta\":%lld,\"unchanged\":%zu",
         delta(a->p.arena_bytes, b->p.arena_bytes),
         delta(a->p.lower_bound_bytes, b->p.lower_bound_bytes),
         delta(padding(a), padding(b)), c->same);
  for (int w = 0; w < 5; w++) {
    struct lister l = {w, 1, 0};
    printf(",\"%s\":[", list_names[w]);
    walk(a, b, list_cb, &l);
    printf("]");
  }
  printf("}\n");
}

int cli_diff_main(int argc, char **argv)
{
  struct side a, b;
  struct cli_load_opts lo;
  struct planner_options o;
  const char *files[2] = {NULL, NULL};
  int json = 0, rc = 0, n_files = 0;
  memset(&lo, 0, sizeof lo);
  lo.other_kinds_ok = 1; /* e.g. a model against its reference CSV */
  planner_options_init(&o);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return cli_finish_stdout();
    } else if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (cli_model_option(argc, argv, &i, &lo, &rc) ||
               cli_plan_option(argc, argv, &i, &o, &rc)) {
      if (rc)
        return rc;
    } else if (argv[i][0] == '-' && strcmp(argv[i], "-") != 0) {
      cli_error("diff", "unknown option '%s'", argv[i]);
      return CLI_EX_USAGE;
    } else if (n_files == 2) {
      cli_error("diff", "give exactly two files, A and B");
      return CLI_EX_USAGE;
    } else {
      files[n_files++] = argv[i];
    }
  }
  if (n_files != 2) {
    usage(stderr);
    return CLI_EX_USAGE;
  }
  o.in_place = !lo.no_in_place;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  cli_graph_init(&a.g);
  cli_graph_init(&b.g);
  planner_plan_init(&a.p);
  planner_plan_init(&b.p);
  if ((rc = load_side(files[0], &lo, &o, &a)) == 0 &&
      (rc = load_side(files[1], &lo, &o, &b)) == 0) {
    struct counts c;
    memset(&c, 0, sizeof c);
    walk(&a, &b, count_cb, &c);
    int same = c.added == 0 && c.removed == 0 && c.same == a.g.n &&
               a.p.arena_bytes == b.p.arena_bytes &&
               a.p.lower_bound_bytes == b.p.lower_bound_bytes;
    if (json)
      print_json(&a, &b, &c, same);
    else
      print_text(&a, &b, &c);
    rc = cli_finish_stdout();
    if (rc == 0 && !same)
      rc = CLI_EX_FAIL;
  }
  free_side(&a);
  free_side(&b);
  return rc;
}

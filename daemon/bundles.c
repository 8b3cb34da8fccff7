/*
 * bundles.c - plan bundles on the daemon's side (bundles.h): Preload
 * entries checked and stored all or nothing, Export entries built from
 * stored rows, and the preload directory read at start.
 */
#include "bundles.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "memory.h"

#define DIR_FILES_MAX 4096 /* bundle files read from one dir */
/* The largest bundle file read: its body could not decode within the
 * WIRE_DEFAULT_MEM_LIMIT that reading it allows (a body never decodes
 * to fewer bytes than it has, but for padding no writer produces). */
#define FILE_MAX_BYTES ((uint64_t)WIRE_DEFAULT_MEM_LIMIT + \
                        WIRE_BUNDLE_FRAME_LEN)
/* What one batch of a preload converts at most (docs/bundles.md): the
 * daemon holds one batch's graphs and plans at a time, never a whole
 * bundle's. */
#define BATCH_ENTRIES 256u
#define BATCH_TENSORS (1u << 18)

/* ---- preload ------------------------------------------------------------ */

/* One entry turned into storage input; everything owned. */
struct conv {
  struct wire_graph g;
  struct planner_plan p;
  int have_g;
};

/* The plan's figures that the bundle may not be trusted with, computed
 * from the graph: bounds, naive size, optimality, capacity answer. */
static int recompute(const struct wire_graph *wg, struct planner_plan *p)
{
  struct planner_graph pg = {wg->tensors, wg->n_tensors};
  struct planner_options o = wg->opts;
  uint64_t lb = 0, lb_unshared = 0, naive = 0;
  /* The bound every accepted plan obeys: with legal in-place pairs the
   * sharing bound, which a plan that shares can meet where the load
   * bound of the graph without its aliases would be above it. */
  int rc = planner_accepted_lower_bound(&pg, &o, &lb, NULL);
  if (rc)
    return rc;
  o.in_place = 0;
  if ((rc = planner_lower_bound(&pg, &o, &lb_unshared)) != 0)
    return rc;
  for (size_t i = 0; i < wg->n_tensors; i++)
    naive += wg->tensors[i].size;
  p->lower_bound_bytes = lb;
  p->lower_bound_unshared_bytes = lb_unshared;
  p->naive_bytes = naive;
  p->bound = PLANNER_BOUND_LOAD;
  p->proven_optimal = p->arena_bytes <= lb;
  p->fit = !wg->opts.capacity                      ? PLANNER_FIT_NA
           : p->arena_bytes <= wg->opts.capacity ? PLANNER_FIT_YES
                                                   : PLANNER_FIT_NO;
  return 0;
}

/* Checks and converts entry i. Returns 0 or a code with err set. */
static int convert(const Arenad__V1__BundleEntry *e, size_t i,
                   const struct wire_limits *l, struct conv *c,
                   char err[ARENA_ERR_LEN])
{
  char why[ARENA_ERR_LEN] = "";
  int rc;
  if ((rc = wire_graph_from_plan(e->request, l, &c->g, why)) != 0) {
    snprintf(err, ARENA_ERR_LEN, "entry %zu: %s", i,
             why[0] ? why : arena_strerror(rc));
    return rc;
  }
  c->have_g = 1;
  if ((rc = wire_plan_from_reply(e->plan, &c->p)) != 0) {
    snprintf(err, ARENA_ERR_LEN, "entry %zu: %s", i,
             rc == ARENA_ENOMEM ? "out of memory"
                                : "the plan has an unknown algorithm or "
                                  "fit value");
    return rc == ARENA_ENOMEM ? rc : ARENA_EINVAL;
  }
  if ((rc = recompute(&c->g, &c->p)) != 0)
    snprintf(err, ARENA_ERR_LEN, "entry %zu: its lower bound: %s", i,
             arena_strerror(rc));
  return rc;
}

static void conv_free(struct conv *c, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    if (c[i].have_g)
      wire_graph_cleanup(&c[i].g);
    planner_plan_cleanup(&c[i].p);
    memset(&c[i], 0, sizeof c[i]);
  }
}

/* Whether background work may ever improve a plan made under o: only
 * `best` and `exact` search; any other algorithm is one heuristic, whose
 * plan no effort changes (background.h). */
static int searches(const struct planner_options *o)
{
  return o->algo == PLANNER_ALGO_BEST || o->algo == PLANNER_ALGO_EXACT;
}

/* The entries from `from` on that make the next batch: at least one, at
 * most BATCH_ENTRIES, and no more than BATCH_TENSORS tensors unless the
 * first alone has more. */
static size_t batch_len(Arenad__V1__BundleEntry *const *e, size_t n,
                        size_t from)
{
  size_t k = 0;
  uint64_t tensors = 0;
  while (from + k < n && k < BATCH_ENTRIES) {
    tensors += e[from + k]->request->n_tensor_ids;
    if (k > 0 && tensors > BATCH_TENSORS)
      break;
    k++;
  }
  return k;
}

/* Converts e[from .. from + k) into c and pe and adds them to the open
 * preload. Returns 0 or a code with err set (the preload is then over,
 * or the caller aborts it). */
static int preload_batch(storage_t *st, const struct bundles_rules *r,
                         Arenad__V1__BundleEntry *const *e, size_t from,
                         size_t k, struct conv *c,
                         struct storage_preload_entry *pe,
                         struct planner_graph *pg, char err[ARENA_ERR_LEN])
{
  for (size_t i = 0; i < k; i++) {
    planner_plan_init(&c[i].p);
    int rc = convert(e[from + i], from + i, r->graph, &c[i], err);
    if (rc)
      return rc;
    const struct wire_graph *g = &c[i].g;
    uint32_t effort = e[from + i]->plan->effort;
    pg[i] = (struct planner_graph){g->tensors, g->n_tensors};
    pe[i].key = (struct storage_key){g->model_hash, g->model_hash_len,
                                     g->shape.ranks, g->shape.n_inputs,
                                     g->shape.dims};
    pe[i].graph = &pg[i];
    pe[i].opts = &g->opts;
    pe[i].plan = &c[i].p;
    /* The effort only sets where the background ladder starts: a bundle
     * claims at most the top of it. */
    pe[i].effort = effort < r->max_effort ? effort : r->max_effort;
    pe[i].done = !searches(&g->opts);
    pe[i].placement = e[from + i]->placement.data;
    pe[i].placement_len = e[from + i]->placement.len;
  }
  int rc = storage_preload_add(st, pe, k, NULL);
  if (rc) /* names the entry, counted over the whole preload */
    snprintf(err, ARENA_ERR_LEN, "%s", storage_errmsg(st));
  return rc;
}

int bundles_preload(storage_t *st, const struct bundles_rules *r,
                    Arenad__V1__BundleEntry *const *e, size_t n,
                    struct bundles_outcome *out, char err[ARENA_ERR_LEN])
{
  memset(out, 0, sizeof *out);
  int rc = wire_bundle_accept_entries(e, n, &r->bundle, err);
  if (rc)
    return rc == ARENA_ECORRUPT ? ARENA_EINVAL : rc;
  if (n == 0)
    return 0;
  size_t cap = n < BATCH_ENTRIES ? n : BATCH_ENTRIES;
  struct conv *c = calloc(cap, sizeof *c);
  struct planner_graph *pg = calloc(cap, sizeof *pg);
  struct storage_preload_entry *pe = calloc(cap, sizeof *pe);
  rc = c && pg && pe ? 0 : ARENA_ENOMEM;
  if (rc)
    snprintf(err, ARENA_ERR_LEN, "out of memory");
  else if ((rc = storage_preload_begin(st)) != 0)
    snprintf(err, ARENA_ERR_LEN, "%s", storage_errmsg(st));
  for (size_t from = 0; !rc && from < n;) {
    size_t k = batch_len(e, n, from);
    rc = preload_batch(st, r, e, from, k, c, pe, pg, err);
    conv_free(c, k);
    from += k;
  }
  if (rc)
    storage_preload_abort(st);
  else if ((rc = storage_preload_commit(st, &out->stored, &out->kept)) != 0)
    snprintf(err, ARENA_ERR_LEN, "%s", storage_errmsg(st));
  free(c);
  free(pg);
  free(pe);
  return rc;
}

/* ---- export ------------------------------------------------------------- */

void bundles_export_free(struct bundles_export *x)
{
  for (size_t i = 0; x->req && i < x->n; i++)
    wire_plan_msg_cleanup(&x->req[i]);
  free(x->entries);
  free(x->ptrs);
  free(x->req);
  free(x->opts);
  free(x->plans);
  free(x->dims);
  free(x->dim_ptrs);
  memset(x, 0, sizeof *x);
}

/* Points dims (one per input of r, caller-allocated) at r's shape. */
static void shape_msgs(const struct storage_record *r, Arenad__V1__Dims *d,
                       Arenad__V1__Dims **ptrs)
{
  const int64_t *at = r->dims;
  for (size_t k = 0; k < r->n_inputs; k++) {
    arenad__v1__dims__init(&d[k]);
    d[k].dims = (int64_t *)at;
    d[k].n_dims = r->ranks[k];
    at += r->ranks[k];
    ptrs[k] = &d[k];
  }
}

int bundles_export_build(const struct storage_record *r, size_t n,
                         struct bundles_export *x)
{
  size_t inputs = 0;
  memset(x, 0, sizeof *x);
  for (size_t i = 0; i < n; i++)
    inputs += r[i].n_inputs;
  x->entries = calloc(n + 1, sizeof *x->entries);
  x->ptrs = calloc(n + 1, sizeof *x->ptrs);
  x->req = calloc(n + 1, sizeof *x->req);
  x->opts = calloc(n + 1, sizeof *x->opts);
  x->plans = calloc(n + 1, sizeof *x->plans);
  x->dims = calloc(inputs + 1, sizeof *x->dims);
  x->dim_ptrs = calloc(inputs + 1, sizeof *x->dim_ptrs);
  if (!x->entries || !x->ptrs || !x->req || !x->opts || !x->plans ||
      !x->dims || !x->dim_ptrs) {
    bundles_export_free(x);
    return ARENA_ENOMEM;
  }
  size_t di = 0;
  for (size_t i = 0; i < n; i++) {
    shape_msgs(&r[i], x->dims + di, x->dim_ptrs + di);
    if (wire_plan_msg_init(&x->req[i], &x->opts[i], &r[i].graph, &r[i].opts,
                           r[i].model_hash, r[i].model_hash_len,
                           x->dim_ptrs + di, r[i].n_inputs) != 0) {
      x->n = i; /* the ones initialised */
      bundles_export_free(x);
      return ARENA_ENOMEM;
    }
    x->n = i + 1;
    di += r[i].n_inputs;
    wire_reply_from_plan(&x->plans[i], &r[i].plan, r[i].graph_digest,
                         r[i].options_digest);
    x->plans[i].cached = 1;
    x->plans[i].planning_us = r[i].info.plan_us;
    x->plans[i].generation = r[i].info.generation;
    x->plans[i].effort = r[i].info.effort;
    arenad__v1__bundle_entry__init(&x->entries[i]);
    x->entries[i].request = &x->req[i];
    x->entries[i].plan = &x->plans[i];
    x->entries[i].placement.data = r[i].placement;
    x->entries[i].placement.len = r[i].placement_len;
    x->ptrs[i] = &x->entries[i];
  }
  return 0;
}

/* ---- the preload directory ---------------------------------------------- */

static int ends_with(const char *s, const char *tail)
{
  size_t a = strlen(s), b = strlen(tail);
  return a > b && strcmp(s + a - b, tail) == 0;
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads the regular file at path whole (at most FILE_MAX_BYTES). Returns
 * 0 with an owned buffer, or an errno value (EFBIG: too large). */
static int read_file(const char *path, uint8_t **out, size_t *len)
{
  struct stat sb;
  *out = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return errno;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return EINVAL;
  }
  if ((uint64_t)sb.st_size > FILE_MAX_BYTES) {
    fclose(f);
    return EFBIG;
  }
  uint8_t *b = malloc((size_t)sb.st_size + 1);
  size_t n = b ? fread(b, 1, (size_t)sb.st_size, f) : 0;
  int bad = !b || n != (size_t)sb.st_size || ferror(f);
  fclose(f);
  if (bad) {
    free(b);
    return b ? EIO : ENOMEM;
  }
  *out = b;
  *len = n;
  return 0;
}

/* Preloads one file; returns the plans it stored. */
static size_t preload_file(storage_t *st, const struct bundles_rules *r,
                           const char *path, struct dlog *log)
{
  uint8_t *b;
  size_t len;
  char err[ARENA_ERR_LEN] = "";
  int e = read_file(path, &b, &len);
  if (e) {
    dlog(log, DLOG_ERR, "preload %s: cannot read it: %s", path,
         e == EFBIG ? "larger than the 256 MiB a bundle may decode to"
                    : strerror(e));
    return 0;
  }
  Arenad__V1__Bundle *bun = NULL;
  int rc = wire_bundle_read(b, len, &r->bundle, &bun, err);
  free(b);
  if (rc) {
    dlog(log, DLOG_ERR, "preload %s: refused, nothing stored: %s", path,
         err);
    return 0;
  }
  struct bundles_outcome o;
  rc = bundles_preload(st, r, bun->entries, bun->n_entries, &o, err);
  if (rc)
    dlog(log, DLOG_ERR, "preload %s: refused, nothing stored: %s", path,
         err);
  else
    dlog(log, DLOG_INFO, "preload %s: %zu %s stored, %zu kept (a plan "
         "as small was stored already)", path, o.stored,
         dlog_noun(o.stored, "plan", "plans"), o.kept);
  wire_free_bundle(bun);
  daemon_memory_release();
  return rc ? 0 : o.stored;
}

size_t bundles_preload_dir(storage_t *st, const struct bundles_rules *r,
                           const char *dir, struct dlog *log)
{
  if (!dir || !*dir || !st)
    return 0;
  DIR *d = opendir(dir);
  if (!d) {
    dlog(log, errno == ENOENT ? DLOG_DEBUG : DLOG_WARNING,
         "preload directory %s: %s", dir, strerror(errno));
    return 0;
  }
  char **names = calloc(DIR_FILES_MAX, sizeof *names);
  size_t n = 0, stored = 0;
  struct dirent *de;
  while (names && n < DIR_FILES_MAX && (de = readdir(d)) != NULL)
    if (de->d_name[0] != '.' && ends_with(de->d_name, ".bundle"))
      names[n] = strdup(de->d_name), n += names[n] != NULL;
  closedir(d);
  if (!names) {
    dlog(log, DLOG_ERR, "preload directory %s: out of memory", dir);
    return 0;
  }
  qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) <
        sizeof path)
      stored += preload_file(st, r, path, log);
    free(names[i]);
  }
  free(names);
  return stored;
}

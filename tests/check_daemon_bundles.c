/*
 * check_daemon_bundles.c - plan bundles through real daemons: a bundle
 * exported from one daemon and preloaded into a fresh one serves the
 * same plans from its cache; a bundle with one bad plan among good ones
 * stores nothing; a smaller plan from a bundle replaces a hot one, with
 * the bounds recomputed rather than believed; and the preload directory
 * is read at start, a damaged file refused without stopping the others.
 * What a bundle may not do, on both ways in (a Preload request and the
 * preload directory): claim an absurd arena, claim more effort than
 * improve.max_effort, hold more entries than the limit, or carry a
 * field numbered 0.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_daemon.h"
#include "testutil.h"
#include "wire.h"
#include "wire_bundle.h"
#include "digest.h"
#include "wire_plan.h"

#define G_CSV "tests/data/minimalloc/G.1048576.csv"
#define PD_CSV "tests/data/models/person_detect.csv"
#define OFF "[improve]\nenabled = 0\n"

/* Runs arenactl ($ARENACTL) with argv[1..] against h's socket;
 * returns its exit status, with stdout and stderr in *out and *err
 * (owned, may be NULL). */
static int ctl(const struct harness *h, const char *const *args, char **out,
               char **err)
{
  const char *argv[16] = {tu_bin("ARENACTL")};
  int n = 1;
  for (; args[n - 1] && n < 13; n++)
    argv[n] = args[n - 1];
  argv[n++] = "-s";
  argv[n++] = h->sock;
  argv[n] = NULL;
  char op[300], ep[300];
  snprintf(op, sizeof op, "%s/ctl.out", h->dir);
  snprintf(ep, sizeof ep, "%s/ctl.err", h->dir);
  int st = tu_run(argv, NULL, NULL, op, ep);
  char *o = tu_read_file(op, NULL), *e = tu_read_file(ep, NULL);
  if (out)
    *out = o;
  else
    free(o);
  if (err)
    *err = e;
  else
    free(e);
  return st;
}
#define CTL(h, out, err, ...)                                               \
  ctl((h), (const char *const[]){__VA_ARGS__, NULL}, (out), (err))

/* One Plan of g at alignment `align` under hash; the OK reply (owned). */
static Arenad__V1__Response *plan(const struct harness *h,
                                  const struct hn_graph *g, const char *hash,
                                  uint64_t align)
{
  int fd = hn_connect(h);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(hn_send_plan(fd, 3, g, hash, 0, align, 0), 0);
  Arenad__V1__Response *r = hn_recv(fd, 60000);
  close(fd);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  ck_assert_uint_eq(r->plan->n_offsets, g->n);
  return r;
}

static size_t entries_of(const struct harness *h)
{
  Arenad__V1__Response *r = hn_list(h, 0);
  ck_assert_ptr_nonnull(r);
  size_t n = r->list->n_entries;
  wire_free_response(r);
  return n;
}

static void start(struct harness *h, const char *conf)
{
  ck_assert_int_eq(hn_init(h, conf), 0);
  ck_assert_int_eq(hn_start(h), 0);
}

/* Exports from A, preloads into a fresh B: B serves both plans from its
 * cache, offset for offset A's, and a second preload keeps them all. */
START_TEST(test_export_preload_round_trip)
{
  struct hn_graph g, pd;
  struct harness a, b;
  ck_assert_int_eq(hn_load_csv(G_CSV, &g), 0);
  ck_assert_int_eq(hn_load_csv(PD_CSV, &pd), 0);
  start(&a, OFF);
  start(&b, OFF);
  Arenad__V1__Response *ga = plan(&a, &g, "G", 1);
  Arenad__V1__Response *pa = plan(&a, &pd, "PD", 64);
  char path[300], *out = NULL, *err = NULL;
  snprintf(path, sizeof path, "%s/x.bundle", a.dir);
  ck_assert_int_eq(CTL(&a, &out, NULL, "export", "-o", path), 0);
  ck_assert_ptr_nonnull(strstr(out, "wrote 2 plans"));
  free(out);
  ck_assert_int_eq(CTL(&b, &out, &err, "preload", path), 0);
  ck_assert_msg(strstr(out, "stored 2, kept 0") != NULL, "%s%s", out, err);
  free(out);
  free(err);
  Arenad__V1__Response *gb = plan(&b, &g, "G", 1);
  Arenad__V1__Response *pb = plan(&b, &pd, "PD", 64);
  ck_assert(gb->plan->cached && pb->plan->cached);
  ck_assert_mem_eq(gb->plan->offsets, ga->plan->offsets, g.n * 8);
  ck_assert_mem_eq(pb->plan->offsets, pa->plan->offsets, pd.n * 8);
  ck_assert_uint_eq(gb->plan->effort, ga->plan->effort);
  ck_assert_uint_eq(gb->plan->generation, 1);
  ck_assert_int_eq(CTL(&b, &out, NULL, "preload", path), 0);
  ck_assert_ptr_nonnull(strstr(out, "stored 0, kept 2"));
  free(out);
  ck_assert_uint_eq(entries_of(&b), 2);
  wire_free_response(ga);
  wire_free_response(pa);
  wire_free_response(gb);
  wire_free_response(pb);
  ck_assert_int_eq(hn_stop(&a), 0);
  ck_assert_int_eq(hn_stop(&b), 0);
  hn_cleanup(&a);
  hn_cleanup(&b);
  hn_graph_free(&g);
  hn_graph_free(&pd);
}
END_TEST

/* A bundle entry for g with the given offsets, arena, bounds and effort
 * (the reply's figures are whatever the caller writes). */
struct one {
  Arenad__V1__Plan req;
  Arenad__V1__PlanOptions opts;
  Arenad__V1__PlanReply reply;
  Arenad__V1__BundleEntry e;
};

static void one_init(struct one *o, const struct hn_graph *g,
                     const char *hash, uint64_t align, uint64_t *offsets,
                     uint64_t arena)
{
  struct planner_graph pg = {g->t, g->n};
  struct planner_options po;
  planner_options_init(&po);
  po.alignment = align;
  ck_assert_int_eq(wire_plan_msg_init(&o->req, &o->opts, &pg, &po,
                                      (const uint8_t *)hash, strlen(hash),
                                      NULL, 0),
                   0);
  arenad__v1__plan_reply__init(&o->reply);
  o->reply.offsets = offsets;
  o->reply.n_offsets = g->n;
  o->reply.arena_bytes = arena;
  o->reply.effort = 2560;
  arenad__v1__bundle_entry__init(&o->e);
  o->e.request = &o->req;
  o->e.plan = &o->reply;
}

/* Writes a bundle of n entries to path. */
static void write_bundle(const char *path, struct one *o, size_t n)
{
  Arenad__V1__BundleEntry *ptrs[4];
  for (size_t i = 0; i < n; i++)
    ptrs[i] = &o[i].e;
  uint8_t *b;
  size_t len;
  ck_assert_int_eq(wire_bundle_write(ptrs, n, "test", 1, 0, &b, &len), 0);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, len, f), len);
  fclose(f);
  free(b);
}

static void plan_of(const struct hn_graph *g, uint64_t align, uint32_t effort,
                    struct planner_plan *p)
{
  struct planner_graph pg = {g->t, g->n};
  struct planner_options o;
  planner_options_init(&o);
  o.alignment = align;
  o.effort = effort;
  planner_plan_init(p);
  ck_assert_int_eq(planner_run(&pg, &o, p, NULL), 0);
}

/* A bundle whose checksum is right but whose second plan overlaps two
 * tensors: refused as a whole (exit 65, naming the entry), and the first,
 * good, entry is not stored either. */
START_TEST(test_tampered_plan_stores_nothing)
{
  struct hn_graph g, pd;
  struct harness h;
  ck_assert_int_eq(hn_load_csv(G_CSV, &g), 0);
  ck_assert_int_eq(hn_load_csv(PD_CSV, &pd), 0);
  start(&h, OFF);
  struct planner_plan pp, pg;
  plan_of(&pd, 64, 40, &pp);
  plan_of(&g, 1, 40, &pg);
  pg.offsets[1] = pg.offsets[0]; /* tensor 1 now sits on tensor 0 */
  struct one o[2];
  one_init(&o[0], &pd, "PD", 64, pp.offsets, pp.arena_bytes);
  one_init(&o[1], &g, "G", 1, pg.offsets, pg.arena_bytes);
  char path[300], *err = NULL;
  snprintf(path, sizeof path, "%s/bad.bundle", h.dir);
  write_bundle(path, o, 2);
  ck_assert_int_eq(CTL(&h, NULL, &err, "preload", path), 65);
  ck_assert_msg(strstr(err, "entry 1") != NULL, "%s", err);
  free(err);
  ck_assert_uint_eq(entries_of(&h), 0);
  /* The same file without the bad entry is stored. */
  write_bundle(path, o, 1);
  ck_assert_int_eq(CTL(&h, NULL, NULL, "preload", path), 0);
  ck_assert_uint_eq(entries_of(&h), 1);
  for (int i = 0; i < 2; i++)
    wire_plan_msg_cleanup(&o[i].req);
  planner_plan_cleanup(&pp);
  planner_plan_cleanup(&pg);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&g);
  hn_graph_free(&pd);
}
END_TEST

/* A smaller plan from a bundle replaces the one the daemon serves from
 * memory, and the daemon's reply carries the bounds it computed (the
 * bundle said nothing of them: no bound, not proven optimal). */
START_TEST(test_smaller_plan_replaces_hot_one)
{
  struct hn_graph g;
  struct harness h;
  ck_assert_int_eq(hn_load_csv(G_CSV, &g), 0);
  start(&h, OFF);
  Arenad__V1__Response *r0 = plan(&h, &g, "G", 1);
  Arenad__V1__Response *r1 = plan(&h, &g, "G", 1);
  ck_assert(r1->plan->cached); /* from the hot LRU */
  struct planner_plan best;
  plan_of(&g, 1, 2560, &best);
  ck_assert_uint_lt(best.arena_bytes, r0->plan->arena_bytes);
  struct one o;
  one_init(&o, &g, "G", 1, best.offsets, best.arena_bytes);
  char path[300], *out = NULL;
  snprintf(path, sizeof path, "%s/best.bundle", h.dir);
  write_bundle(path, &o, 1);
  ck_assert_int_eq(CTL(&h, &out, NULL, "preload", path), 0);
  ck_assert_ptr_nonnull(strstr(out, "stored 1, kept 0"));
  free(out);
  Arenad__V1__Response *r2 = plan(&h, &g, "G", 1);
  ck_assert_uint_eq(r2->plan->arena_bytes, best.arena_bytes);
  ck_assert_mem_eq(r2->plan->offsets, best.offsets, g.n * 8);
  ck_assert_uint_eq(r2->plan->lower_bound_bytes, best.lower_bound_bytes);
  ck_assert(r2->plan->proven_optimal);
  ck_assert_uint_eq(r2->plan->effort, 2560);
  wire_plan_msg_cleanup(&o.req);
  planner_plan_cleanup(&best);
  wire_free_response(r0);
  wire_free_response(r1);
  wire_free_response(r2);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&g);
}
END_TEST

/* preload_dir: its *.bundle files are read at start, in name order; a
 * damaged one is logged and refused, the good one stored, and the daemon
 * serves; files with other names are left alone. */
START_TEST(test_preload_dir_at_start)
{
  struct hn_graph g, pd;
  struct harness h;
  ck_assert_int_eq(hn_load_csv(G_CSV, &g), 0);
  ck_assert_int_eq(hn_load_csv(PD_CSV, &pd), 0);
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  char dir[300], conf[600], path[400];
  snprintf(dir, sizeof dir, "%s/bundles", h.dir);
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  struct planner_plan pp, pg;
  plan_of(&pd, 64, 40, &pp);
  plan_of(&g, 1, 40, &pg);
  struct one o[2];
  one_init(&o[0], &pd, "PD", 64, pp.offsets, pp.arena_bytes);
  one_init(&o[1], &g, "G", 1, pg.offsets, pg.arena_bytes);
  snprintf(path, sizeof path, "%s/a.bundle", dir);
  write_bundle(path, &o[0], 1);
  snprintf(path, sizeof path, "%s/b.bundle", dir);
  write_bundle(path, &o[1], 1);
  FILE *f = fopen(path, "r+b"); /* one byte of its body flipped */
  ck_assert_ptr_nonnull(f);
  fseek(f, 40, SEEK_SET);
  int c = fgetc(f);
  fseek(f, 40, SEEK_SET);
  fputc(c ^ 0x10, f);
  fclose(f);
  snprintf(path, sizeof path, "%s/c.notabundle", dir);
  write_bundle(path, &o[1], 1);
  snprintf(conf, sizeof conf, OFF "[cache]\npreload_dir = %s\n", dir);
  ck_assert_int_eq(hn_write_conf(&h, conf), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  ck_assert_int_eq(hn_log_count(&h, "a.bundle: 1 plan stored"), 1);
  ck_assert_int_eq(hn_log_count(&h, "b.bundle: refused, nothing stored"), 1);
  ck_assert_int_eq(hn_log_count(&h, "notabundle"), 0);
  ck_assert_uint_eq(entries_of(&h), 1);
  Arenad__V1__Response *r = plan(&h, &pd, "PD", 64);
  ck_assert(r->plan->cached);
  ck_assert_mem_eq(r->plan->offsets, pp.offsets, pd.n * 8);
  wire_free_response(r);
  for (int i = 0; i < 2; i++)
    wire_plan_msg_cleanup(&o[i].req);
  planner_plan_cleanup(&pp);
  planner_plan_cleanup(&pg);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&g);
  hn_graph_free(&pd);
}
END_TEST

/* Sends a Preload request of the n entries on a new connection; returns
 * the reply (owned). */
static Arenad__V1__Response *preload_raw(const struct harness *h,
                                         Arenad__V1__BundleEntry **e,
                                         size_t n)
{
  Arenad__V1__Preload pl = ARENAD__V1__PRELOAD__INIT;
  pl.entries = e;
  pl.n_entries = n;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = 9;
  req.body_case = ARENAD__V1__REQUEST__BODY_PRELOAD_PLANS;
  req.preload_plans = &pl;
  int fd = hn_connect(h);
  ck_assert_int_ge(fd, 0);
  Arenad__V1__Response *r = hn_call(fd, &req, 60000);
  close(fd);
  ck_assert_ptr_nonnull(r);
  return r;
}

/* The bundle-poisoning plan: the person detection graph with every
 * tensor i placed at i * 2^30 (aligned, never overlapping, and so it
 * verifies) and an effort of 4e9. Refused on both ways in, whatever
 * else the bundle holds; nothing is stored, and the daemon plans the
 * graph itself. */
START_TEST(test_inflated_plan_refused)
{
  struct hn_graph pd, g;
  struct harness h;
  ck_assert_int_eq(hn_load_csv(PD_CSV, &pd), 0);
  ck_assert_int_eq(hn_load_csv(G_CSV, &g), 0);
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  char dir[300], conf[600], path[400];
  snprintf(dir, sizeof dir, "%s/bundles", h.dir);
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  uint64_t *off = calloc(pd.n, sizeof *off), top = 0;
  for (size_t i = 0; i < pd.n; i++) {
    off[i] = (uint64_t)i << 30;
    if (pd.t[i].size && off[i] + pd.t[i].size > top)
      top = off[i] + pd.t[i].size;
  }
  struct planner_plan pg;
  plan_of(&g, 1, 40, &pg);
  struct one o[2];
  one_init(&o[0], &g, "G", 1, pg.offsets, pg.arena_bytes);
  one_init(&o[1], &pd, "PD", 64, off, top);
  o[1].reply.effort = 4000000000u;
  snprintf(path, sizeof path, "%s/poison.bundle", dir);
  write_bundle(path, o, 2);
  snprintf(conf, sizeof conf, OFF "[cache]\npreload_dir = %s\n", dir);
  ck_assert_int_eq(hn_write_conf(&h, conf), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  ck_assert_int_eq(hn_log_count(&h, "poison.bundle: refused, nothing stored: "
                                    "entry 1: plan rejected: its arena of"),
                   1);
  ck_assert_uint_eq(entries_of(&h), 0);
  Arenad__V1__BundleEntry *ptrs[2] = {&o[0].e, &o[1].e};
  Arenad__V1__Response *r = preload_raw(&h, ptrs, 2);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__INVALID_ARGUMENT);
  ck_assert_msg(strstr(r->error, "entry 1: plan rejected") &&
                    strstr(r->error, "every tensor in bytes of its own"),
                "%s", r->error);
  /* the entry is named once ("entry 0: entry 0:" was a past defect) */
  ck_assert_msg(!strstr(r->error, "entry 1: entry"), "%s", r->error);
  wire_free_response(r);
  ck_assert_uint_eq(entries_of(&h), 0);
  r = plan(&h, &pd, "PD", 64);
  ck_assert(!r->plan->cached);
  ck_assert_uint_lt(r->plan->arena_bytes, 1u << 20);
  wire_free_response(r);
  for (int i = 0; i < 2; i++)
    wire_plan_msg_cleanup(&o[i].req);
  planner_plan_cleanup(&pg);
  free(off);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&pd);
  hn_graph_free(&g);
}
END_TEST

/* A bundle's effort says where the background ladder starts; it is
 * taken up to improve.max_effort, never above. */
START_TEST(test_preload_effort_clamped)
{
  struct hn_graph g;
  struct harness h;
  ck_assert_int_eq(hn_load_csv(G_CSV, &g), 0);
  start(&h, "[improve]\nenabled = 0\nmax_effort = 5000\n");
  struct planner_plan p;
  plan_of(&g, 1, 40, &p);
  struct one o;
  one_init(&o, &g, "G", 1, p.offsets, p.arena_bytes);
  o.reply.effort = 4000000000u;
  Arenad__V1__BundleEntry *ptrs[1] = {&o.e};
  Arenad__V1__Response *r = preload_raw(&h, ptrs, 1);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__OK);
  wire_free_response(r);
  r = hn_list(&h, 0);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->list->n_entries, 1);
  ck_assert_uint_eq(r->list->entries[0]->effort, 5000);
  ck_assert_uint_eq(r->list->entries[0]->effort_tried, 5000);
  wire_free_response(r);
  wire_plan_msg_cleanup(&o.req);
  planner_plan_cleanup(&p);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&g);
}
END_TEST

/* A preloaded plan that shares an in-place pair is judged by the bound
 * every accepted plan obeys: two 100-byte tensors, the second allowed
 * to reuse the first at the operator they meet, at one offset. Its
 * arena is 100 bytes; the load bound with the pair ignored is 200, which
 * the daemon once stored as the plan's lower bound (a bound above its
 * own arena). Now 100, and the plan proven optimal on it; the bound
 * without sharing stays 200. */
START_TEST(test_preloaded_sharing_plan_bound)
{
  struct planner_tensor t[2] = {
      {.id = 0, .size = 100, .first = 0, .last = 1,
       .pinned = PLANNER_NOT_PINNED},
      {.id = 1, .size = 100, .first = 1, .last = 2,
       .pinned = PLANNER_NOT_PINNED, .alias = 0, .has_alias = 1},
  };
  struct hn_graph g = {t, 2};
  struct harness h;
  start(&h, OFF);
  uint64_t offsets[2] = {0, 0};
  struct one o;
  one_init(&o, &g, "S", 1, offsets, 100);
  ck_assert(!o.req.options->no_in_place);
  Arenad__V1__BundleEntry *ptrs[1] = {&o.e};
  Arenad__V1__Response *r = preload_raw(&h, ptrs, 1);
  ck_assert_msg(r->status == ARENAD__V1__STATUS__OK, "%s",
                r->error ? r->error : "");
  wire_free_response(r);
  r = hn_list(&h, 0);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->list->n_entries, 1);
  const Arenad__V1__CacheEntry *e = r->list->entries[0];
  ck_assert_uint_eq(e->arena_bytes, 100);
  ck_assert_uint_eq(e->lower_bound_bytes, 100);
  ck_assert_uint_le(e->lower_bound_bytes, e->arena_bytes);
  ck_assert(e->proven_optimal);
  ck_assert_uint_eq(e->lower_bound_unshared_bytes, 200);
  wire_free_response(r);
  wire_plan_msg_cleanup(&o.req);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* One bundle may hold at most 65,536 entries: a Preload of one more,
 * each a one-tensor graph, is refused as too large before any is
 * converted, and the daemon serves on. */
START_TEST(test_preload_too_many_entries)
{
  struct harness h;
  start(&h, OFF);
  size_t n = WIRE_BUNDLE_MAX_ENTRIES + 1;
  struct planner_tensor t = {0, 64, 0, 0, 0, PLANNER_NOT_PINNED, 0, 0};
  struct hn_graph g1 = {&t, 1};
  uint64_t off = 0;
  struct one o;
  one_init(&o, &g1, "one", 64, &off, 64);
  Arenad__V1__BundleEntry **ptrs = calloc(n, sizeof *ptrs);
  ck_assert_ptr_nonnull(ptrs);
  for (size_t i = 0; i < n; i++)
    ptrs[i] = &o.e;
  Arenad__V1__Response *r = preload_raw(&h, ptrs, n);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__TOO_LARGE);
  ck_assert_msg(strstr(r->error, "65537 entries, more than the 65536"), "%s",
                r->error);
  wire_free_response(r);
  ck_assert_uint_eq(entries_of(&h), 0);
  free(ptrs);
  wire_plan_msg_cleanup(&o.req);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
}
END_TEST

/* Appends a varint to b at *at. */
static void put_var(uint8_t *b, size_t *at, uint64_t v)
{
  while (v >= 0x80) {
    b[(*at)++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  b[(*at)++] = (uint8_t)v;
}

/* An entry that carries a field numbered 0 (the two-byte tag 80 00) is
 * refused alike in a Preload request and in a file of the preload
 * directory (which once took it, while a preload through arenactl could
 * not send it). */
START_TEST(test_entry_field_zero_refused)
{
  struct hn_graph g;
  struct harness h;
  ck_assert_int_eq(hn_load_csv(G_CSV, &g), 0);
  ck_assert_int_eq(hn_init(&h, NULL), 0);
  struct planner_plan p;
  plan_of(&g, 1, 40, &p);
  struct one o;
  one_init(&o, &g, "G", 1, p.offsets, p.arena_bytes);
  size_t elen = protobuf_c_message_get_packed_size(&o.e.base);
  uint8_t *e = malloc(elen + 3);
  protobuf_c_message_pack(&o.e.base, e);
  memcpy(e + elen, "\x80\x00\x01", 3);
  elen += 3;
  /* The file: magic, version, length, body {1: 1, 4: entry}, SHA-256. */
  uint8_t *f = malloc(elen + 128);
  size_t at = WIRE_BUNDLE_HEADER_LEN;
  f[at++] = 0x08;
  f[at++] = 0x01;
  f[at++] = 0x22;
  put_var(f, &at, elen);
  memcpy(f + at, e, elen);
  at += elen;
  uint64_t body = at - WIRE_BUNDLE_HEADER_LEN;
  memcpy(f, WIRE_BUNDLE_MAGIC, 8);
  memset(f + 8, 0, 12);
  f[11] = WIRE_BUNDLE_VERSION;
  for (int i = 0; i < 8; i++)
    f[12 + i] = (uint8_t)(body >> (8 * (7 - i)));
  planner_sha256(f, at, f + at);
  at += WIRE_BUNDLE_SUM_LEN;
  char dir[300], conf[600], path[400];
  snprintf(dir, sizeof dir, "%s/bundles", h.dir);
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  snprintf(path, sizeof path, "%s/zero.bundle", dir);
  FILE *fp = fopen(path, "wb");
  ck_assert_uint_eq(fwrite(f, 1, at, fp), at);
  fclose(fp);
  snprintf(conf, sizeof conf, OFF "[cache]\npreload_dir = %s\n", dir);
  ck_assert_int_eq(hn_write_conf(&h, conf), 0);
  ck_assert_int_eq(hn_start(&h), 0);
  ck_assert_int_eq(hn_log_count(&h, "zero.bundle: refused, nothing stored: "
                                    "entry 0: damaged: a field numbered 0"),
                   1);
  ck_assert_uint_eq(entries_of(&h), 0);
  /* The request: {1: 1, 2: 5, 17: {1: entry}}. */
  uint8_t *req = malloc(elen + 64);
  size_t rl = 4, inner = 0;
  uint8_t head[16];
  head[inner++] = 0x0a;
  put_var(head, &inner, elen);
  req[rl++] = 0x08;
  req[rl++] = 0x01;
  req[rl++] = 0x10;
  req[rl++] = 0x05;
  req[rl++] = 0x8a;
  req[rl++] = 0x01;
  put_var(req, &rl, inner + elen);
  memcpy(req + rl, head, inner);
  rl += inner;
  memcpy(req + rl, e, elen);
  rl += elen;
  for (int i = 0; i < 4; i++)
    req[i] = (uint8_t)((rl - 4) >> (8 * (3 - i)));
  int fd = hn_connect(&h);
  ck_assert_int_eq(hn_send_raw(fd, req, rl), 0);
  Arenad__V1__Response *r = hn_recv(fd, 30000);
  close(fd);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status, ARENAD__V1__STATUS__INVALID_ARGUMENT);
  ck_assert_msg(strstr(r->error, "entry 0: damaged: a field numbered 0"),
                "%s", r->error);
  wire_free_response(r);
  ck_assert_uint_eq(entries_of(&h), 0);
  free(req);
  free(f);
  free(e);
  wire_plan_msg_cleanup(&o.req);
  planner_plan_cleanup(&p);
  ck_assert_int_eq(hn_stop(&h), 0);
  hn_cleanup(&h);
  hn_graph_free(&g);
}
END_TEST

void cd_add_bundles_tests(TCase *tc)
{
  tcase_add_test(tc, test_export_preload_round_trip);
  tcase_add_test(tc, test_tampered_plan_stores_nothing);
  tcase_add_test(tc, test_smaller_plan_replaces_hot_one);
  tcase_add_test(tc, test_preload_dir_at_start);
  tcase_add_test(tc, test_inflated_plan_refused);
  tcase_add_test(tc, test_preload_effort_clamped);
  tcase_add_test(tc, test_preloaded_sharing_plan_bound);
  tcase_add_test(tc, test_preload_too_many_entries);
  tcase_add_test(tc, test_entry_field_zero_refused);
}

/*
 * check_client_cli.c - the "arenactl" case of the client suite: the
 * daemon commands of the arenactl binary against the fake daemon of
 * check_client_harness.c.
 *
 * Each test runs arenactl (path from $ARENACTL, set from BUILD)
 * as a child process with stdout and stderr captured in files of the
 * test's temp dir, and checks its output and exit status: unreachable
 * daemon, usage errors, ping/status/stats, ls/evict/get, failures
 * mapped to the documented exit statuses, plan through the daemon, and
 * the plan bundle commands export, preload and bundle-info.
 * The end-to-end tests of arenactl's local commands are check_cli.c.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_client.h"
#include "wire_bundle.h"
#include "testutil.h"

/* ---- arenactl's daemon commands --------------------------------------- */

/* What one run of arenactl produced. */
struct run {
  int status; /* exit status, or 128 + signal */
  char *out;  /* stdout, owned */
  char *err;  /* stderr, owned */
};

static const char *arenactl(void)
{
  return tu_bin("ARENACTL");
}

/* Runs arenactl with args (NULL-terminated; argv[0] is added), stdout and
 * stderr captured in files of the temp dir. */
static void run_cli(struct run *r, const char *const *args)
{
  char out[700], err[700];
  const char *argv[32];
  size_t n = 0;
  argv[n++] = arenactl();
  for (; args[n - 1] && n < 31; n++)
    argv[n] = args[n - 1];
  argv[n] = NULL;
  snprintf(out, sizeof out, "%s/out", ct_fk.dir);
  snprintf(err, sizeof err, "%s/err", ct_fk.dir);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
      _exit(126);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  ck_assert_msg(r->status != 127, "cannot run %s (set ARENACTL)", argv[0]);
  r->out = tu_read_file(out, NULL);
  r->err = tu_read_file(err, NULL);
  ck_assert_ptr_nonnull(r->out);
  ck_assert_ptr_nonnull(r->err);
}

#define RUN(r, ...) run_cli((r), (const char *const[]){__VA_ARGS__, NULL})

static void run_free(struct run *r)
{
  free(r->out);
  free(r->err);
}

static void assert_has(const char *hay, const char *needle)
{
  ck_assert_msg(strstr(hay, needle) != NULL, "'%s' not in:\n%s", needle,
                hay);
}

/* Writes the test graph as a CSV file; returns its path (static). */
static const char *graph_csv(void)
{
  static char path[700];
  snprintf(path, sizeof path, "%s/g.csv", ct_fk.dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "id,size,first,last\n");
  for (size_t i = 0; i < CT_TG_N; i++)
    fprintf(f, "%u,%llu,%lld,%lld\n", (unsigned)ct_tg[i].id,
            (unsigned long long)ct_tg[i].size, (long long)ct_tg[i].first,
            (long long)ct_tg[i].last);
  ck_assert_int_eq(fclose(f), 0);
  return path;
}

START_TEST(cli_unreachable)
{
  struct run r;
  static const char *const cmds[][4] = {
      {"ping", NULL},
      {"status", "--json", NULL},
      {"stats", NULL},
      {"ls", NULL},
      {"get", "--model-hash", "00ff", NULL},
      {"evict", "--all", NULL},
  };
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    const char *args[8] = {"-s", ct_fk.path};
    memcpy(args + 2, cmds[i], sizeof cmds[i]);
    run_cli(&r, args);
    ck_assert_msg(r.status == 69, "%s: exit %d", cmds[i][0], r.status);
    assert_has(r.err, "unreachable");
    ck_assert_str_eq(r.out, "");
    run_free(&r);
  }
  /* plan falls back to local planning unless told not to. */
  RUN(&r, "plan", "--json", "-s", ct_fk.path, graph_csv());
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "\"cached\":false,\"local\":true,\"graph_digest\":\"");
  run_free(&r);
  RUN(&r, "plan", "--no-fallback", "--socket", ct_fk.path, graph_csv());
  ck_assert_int_eq(r.status, 69);
  ck_assert_str_eq(r.out, "");
  run_free(&r);
  /* ARENAD_SOCKET is used when there is no -s. */
  ck_assert_int_eq(setenv("ARENAD_SOCKET", ct_fk.path, 1), 0);
  RUN(&r, "ping");
  ck_assert_int_eq(r.status, 69);
  assert_has(r.err, ct_fk.path);
  run_free(&r);
}
END_TEST

START_TEST(cli_usage_errors)
{
  static const char *const bad[][8] = {
      {"get", NULL},
      {"get", "--model-hash", "abc", NULL},
      {"get", "--model-hash", "zz", NULL},
      {"get", "--model-hash", "00", "--shape", "1xx2"},
      {"get", "--model-hash", "00", "--graph-digest", "00"},
      {"ls", "--order", "oldest", NULL},
      {"ls", "--limit", "0", NULL},
      {"evict", NULL},
      {"evict", "--all", "--model-hash", "00", NULL},
      {"evict", "--key", "abc", NULL},
      {"ping", "--bogus", NULL},
      {"status", "extra", NULL},
      {"stats", "--timeout-ms", "0", NULL},
      {"-s", NULL},
      {"-s", "", "ping", NULL},
      {"export", NULL},
      {"export", "-o", "x", "--page-size", "0"},
      {"export", "-o", "x", "--key", "00", "--model-hash", "00"},
      {"export", "-o", "x", "--key", "abc", NULL},
      {"preload", NULL},
      {"preload", "a", "b", NULL},
      {"bundle-info", "--bogus", "a", NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct run r;
    run_cli(&r, bad[i]);
    ck_assert_msg(r.status == 64, "case %zu (%s): exit %d, %s", i, bad[i][0],
                  r.status, r.err);
    ck_assert_msg(r.err[0] != '\0', "case %zu: no message", i);
    run_free(&r);
  }
  struct run r;
  RUN(&r, "--help");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "ping");
  assert_has(r.out, "evict");
  run_free(&r);
  static const char *const helps[] = {"get",   "ls",      "evict",
                                      "ping",  "status",  "stats",
                                      "export", "preload", "bundle-info"};
  for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++) {
    RUN(&r, helps[i], "--help");
    ck_assert_int_eq(r.status, 0);
    assert_has(r.out, "Exit status");
    run_free(&r);
  }
}
END_TEST

START_TEST(cli_ping_status_stats)
{
  enum ct_mode m[] = {M_GOOD, M_GOOD, M_GOOD, M_GOOD, M_GOOD, M_GOOD};
  ct_fake_start(6, m);
  struct run r;
  RUN(&r, "-s", ct_fk.path, "ping", "--payload", "abc");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "pong from arenad fake-1");
  run_free(&r);
  RUN(&r, "ping", "-s", ct_fk.path, "--json");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "{\"ok\":true,\"version\":\"fake-1\",\"rtt_us\":");
  run_free(&r);
  RUN(&r, "status", "-s", ct_fk.path);
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "arenad fake-1 (pid 4242)");
  assert_has(r.out, "uptime:      1d 01:01:01");
  assert_has(r.out, "/nonexistent/fake.db");
  assert_has(r.out, "3 hits");
  assert_has(r.out, ", 1 miss, hit rate 75.0%");
  assert_has(r.out, "stored:      1 plan, 1 byte\n");
  run_free(&r);
  RUN(&r, "status", "-s", ct_fk.path, "--json");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "\"pid\":4242,\"uptime_ms\":90061000");
  assert_has(r.out, "\"requests\":17");
  run_free(&r);
  RUN(&r, "stats", "-s", ct_fk.path);
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "verify_failures: 5\n");
  assert_has(r.out, "misses: 1\n");
  /* The background improvement's counters. */
  assert_has(r.out, "improve_enabled: yes\n");
  assert_has(r.out, "improve_active: 1\nimprove_runs: 7\nimprove_gains: 2\n"
                    "improve_cpu_ms: 1234\n");
  /* The bounds on replies nobody reads. */
  assert_has(r.out, "stalled_closes: 3\nreply_refusals: 9\n");
  run_free(&r);
  RUN(&r, "stats", "-s", ct_fk.path, "--json");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "\"improve_active\":1,\"improve_runs\":7,"
                    "\"improve_gains\":2,\"improve_cpu_ms\":1234,"
                    "\"stalled_closes\":3,\"reply_refusals\":9,"
                    "\"improve_enabled\":true}");
  run_free(&r);
}
END_TEST

START_TEST(cli_cache_commands)
{
  enum ct_mode m[] = {M_GOOD, M_GOOD, M_GOOD, M_GOOD, M_LOOKUP, M_LOOKUP};
  ct_fake_start(6, m);
  struct run r;
  RUN(&r, "-s", ct_fk.path, "ls", "--limit", "7", "--order", "used");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "010203  1x96x96x1  32  55296");
  assert_has(r.out, "  7  2023-11-14T22:13:20Z  abcd\n");
  run_free(&r);
  RUN(&r, "-s", ct_fk.path, "ls", "--json");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "{\"entries\":[{\"key\":\"abcd\",\"model_hash\":"
                    "\"010203\",\"input_shape\":[[1,96,96,1]]");
  run_free(&r);
  RUN(&r, "-s", ct_fk.path, "evict", "--all");
  ck_assert_int_eq(r.status, 0);
  ck_assert_str_eq(r.out, "evicted 1 plan\n");
  run_free(&r);
  RUN(&r, "-s", ct_fk.path, "evict", "--key", "00112233", "--json");
  ck_assert_int_eq(r.status, 0);
  ck_assert_str_eq(r.out, "{\"evicted\":7}\n");
  run_free(&r);
  RUN(&r, "-s", ct_fk.path, "get", "--model-hash", "0102", "--shape",
      "1x3x224x224");
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "plan 1 of 2");
  assert_has(r.out, "plan 2 of 2");
  assert_has(r.out, "graph digest:");
  run_free(&r);
  RUN(&r, "-s", ct_fk.path, "get", "--model-hash", "0102", "--json");
  ck_assert_int_eq(r.status, 0);
  ck_assert_int_eq(strncmp(r.out, "{\"plans\":[{\"graph_digest\":\"", 27), 0);
  assert_has(r.out, "\"offsets\":[");
  ck_assert_int_eq(ct_fk.lookup_digest_len, 0);
  run_free(&r);
}
END_TEST

/* Failures reach the documented exit statuses. */
static const struct {
  enum ct_mode m;
  Arenad__V1__Status s;
  const char *cmd;
  int exit;
} cli_fail[] = {
    {M_REFUSE, ARENAD__V1__STATUS__BUSY, "ping", 75},
    {M_REFUSE, ARENAD__V1__STATUS__DENIED, "ls", 77},
    {M_STATUS, ARENAD__V1__STATUS__UNSUPPORTED_VERSION, "status", 76},
    {M_STATUS, ARENAD__V1__STATUS__NOT_FOUND, "get", 1},
    {M_STATUS, ARENAD__V1__STATUS__INTERNAL, "stats", 1},
    {M_STATUS, ARENAD__V1__STATUS__INVALID_ARGUMENT, "evict", 65},
    {M_GARBAGE, ARENAD__V1__STATUS__OK, "ping", 76},
    {M_SILENT, ARENAD__V1__STATUS__OK, "ping", 69},
    {M_WRONG_PLAN, ARENAD__V1__STATUS__OK, "plan", 1},
    {M_REFUSE, ARENAD__V1__STATUS__BUSY, "plan", 75},
};

START_TEST(cli_failures)
{
  ct_fk.status = cli_fail[_i].s;
  ct_fake_start1(cli_fail[_i].m);
  const char *cmd = cli_fail[_i].cmd;
  struct run r;
  if (strcmp(cmd, "get") == 0)
    RUN(&r, "-s", ct_fk.path, cmd, "--model-hash", "0102");
  else if (strcmp(cmd, "evict") == 0)
    RUN(&r, "-s", ct_fk.path, cmd, "--all");
  else if (strcmp(cmd, "plan") == 0)
    RUN(&r, "-s", ct_fk.path, cmd, "--no-fallback", graph_csv());
  else
    RUN(&r, "-s", ct_fk.path, cmd, "--timeout-ms", "300");
  ck_assert_msg(r.status == cli_fail[_i].exit, "case %d: exit %d, %s", _i,
                r.status, r.err);
  ck_assert_str_eq(r.out, "");
  ck_assert_int_eq(strncmp(r.err, "arenactl: ", 10), 0);
  run_free(&r);
}
END_TEST

START_TEST(cli_plan_through_daemon)
{
  enum ct_mode m[] = {M_GOOD, M_GOOD, M_WRONG_PLAN};
  ct_fake_start(3, m);
  struct run r, l;
  RUN(&r, "plan", "-s", ct_fk.path, "--json", graph_csv());
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "\"cached\":true,\"local\":false,\"graph_digest\":\"");
  RUN(&l, "plan", "--local", "--json", graph_csv());
  ck_assert_int_eq(l.status, 0);
  assert_has(l.out, "\"cached\":false,\"local\":true,");
  /* Same digest and offsets either way. */
  ck_assert_str_eq(strstr(r.out, "\"graph_digest\""),
                   strstr(l.out, "\"graph_digest\""));
  run_free(&r);
  run_free(&l);
  RUN(&r, "plan", "-s", ct_fk.path, "--shape", "1x3,4", graph_csv());
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "source:          arenad (cached)\n");
  assert_has(r.out, "graph digest:    ");
  run_free(&r);
  /* A wrong plan is never printed; with fallback it is replaced. */
  RUN(&r, "plan", "-s", ct_fk.path, graph_csv());
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "source:          this process (arenad not used: plan "
                    "failed verification)");
  run_free(&r);
  RUN(&r, "plan", "-s", ct_fk.path, "--shape", "1y2", graph_csv());
  ck_assert_int_eq(r.status, 64);
  run_free(&r);
}
END_TEST

/* --no-in-place goes to the daemon as planner_options.in_place = 0;
 * wherever the plan is made, it is the one --local makes. */
START_TEST(cli_plan_in_place_option)
{
  enum ct_mode m[] = {M_GOOD};
  ct_fake_start(1, m);
  struct run r, l;
  RUN(&r, "plan", "-s", ct_fk.path, "--json", "--no-in-place", graph_csv());
  ck_assert_msg(r.status == 0, "%s", r.err);
  RUN(&l, "plan", "--local", "--json", "--no-in-place", graph_csv());
  ck_assert_int_eq(l.status, 0);
  ck_assert_str_eq(strstr(r.out, "\"graph_digest\""),
                   strstr(l.out, "\"graph_digest\""));
  run_free(&r);
  run_free(&l);
}
END_TEST

/* ---- plan bundles ------------------------------------------------------- */

/* A path in the test's temp dir (static; one at a time). */
static const char *tmp_path(const char *name)
{
  static char path[700];
  snprintf(path, sizeof path, "%s/%s", ct_fk.dir, name);
  return path;
}

/* Writes len bytes to path; 0 or -1. */
static int write_file(const char *path, const void *buf, size_t len)
{
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  size_t n = fwrite(buf, 1, len, f);
  return fclose(f) == 0 && n == len ? 0 : -1;
}

/* Writes a bundle of n test entries to the temp dir; returns its path. */
static const char *bundle_file(size_t n)
{
  struct ct_bundle b;
  uint8_t *buf;
  size_t len;
  ct_bundle_init(&b, n);
  ck_assert_int_eq(wire_bundle_write(b.ptrs, n, "arenactl test", 1700000000000,
                                    0, &buf, &len),
                   0);
  ct_bundle_cleanup(&b);
  const char *path = tmp_path("in.bundle");
  ck_assert_int_eq(write_file(path, buf, len), 0);
  free(buf);
  return path;
}

/* Checks that the bundle at path holds n test entries. */
static void assert_bundle_holds(const char *path, size_t n)
{
  size_t len;
  char *bytes = tu_read_file(path, &len);
  ck_assert_ptr_nonnull(bytes);
  Arenad__V1__Bundle *got;
  char err[ARENA_ERR_LEN] = "";
  ck_assert_msg(wire_bundle_read((uint8_t *)bytes, len, NULL, &got, err) == 0,
                "%s", err);
  ck_assert_uint_eq(got->n_entries, n);
  ck_assert_int_eq(strncmp(got->producer, "arenactl ", 9), 0);
  struct ct_bundle want;
  ct_bundle_init(&want, n);
  for (size_t k = 0; k < n; k++) {
    ck_assert_uint_eq(got->entries[k]->request->model_hash.data[0],
                      0xb0 + k);
    ck_assert_uint_eq(got->entries[k]->plan->n_offsets, CT_TG_N);
    for (size_t i = 0; i < CT_TG_N; i++)
      ck_assert_uint_eq(got->entries[k]->plan->offsets[i],
                        want.plan.offsets[i]);
  }
  ct_bundle_cleanup(&want);
  wire_free_bundle(got);
  free(bytes);
}

START_TEST(cli_export_pages)
{
  enum ct_mode m[] = {M_GOOD, M_GOOD, M_GOOD};
  ct_fk.n_export = 3;
  ct_fake_start(3, m);
  struct run r;
  char out[700];
  snprintf(out, sizeof out, "%s", tmp_path("out.bundle"));
  /* Two pages: 2 plans, then 1. */
  RUN(&r, "-s", ct_fk.path, "export", "--page-size", "2", "-o", out);
  ck_assert_msg(r.status == 0, "%s", r.err);
  assert_has(r.out, "wrote 3 plans to ");
  ck_assert_int_eq(ct_fk.export_requests, 2);
  ck_assert_int_eq(ct_fk.export_filter, 0);
  run_free(&r);
  assert_bundle_holds(out, 3);
  ck_assert_int_eq(access(tmp_path("out.bundle.tmp"), F_OK), -1);
  /* A last full page: one more request, which comes back empty. */
  ct_fk.n_export = 4;
  RUN(&r, "-s", ct_fk.path, "export", "--page-size", "2", "--json",
      "--model-hash", "b0", "-o", out);
  ck_assert_msg(r.status == 0, "%s", r.err);
  assert_has(r.out, "{\"written\":4,\"bytes\":");
  ck_assert_int_eq(ct_fk.export_requests, 5);
  ck_assert_int_eq(ct_fk.export_filter, 1);
  run_free(&r);
  assert_bundle_holds(out, 4);
  /* What bundle-info prints of it. */
  RUN(&r, "bundle-info", out);
  ck_assert_msg(r.status == 0, "%s", r.err);
  assert_has(r.out, "format:   1\nproducer: arenactl ");
  assert_has(r.out, "plans:    4\n");
  assert_has(r.out, "\nb0  -  5  ");
  assert_has(r.out, "\nb3  -  5  ");
  assert_has(r.out, "  30\n");
  run_free(&r);
  RUN(&r, "bundle-info", "--json", out);
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "{\"format_version\":1,\"producer\":\"arenactl ");
  assert_has(r.out, "\"entries\":[{\"model_hash\":\"b0\",\"input_shape\":[],"
                    "\"n_tensors\":5,");
  run_free(&r);
  /* Nothing matched: nothing written, status 1. */
  ct_fk.n_export = 0;
  RUN(&r, "-s", ct_fk.path, "export", "--key", "abcd", "-o",
      tmp_path("none.bundle"));
  ck_assert_int_eq(r.status, 1);
  assert_has(r.err, "no plan with a stored graph matched");
  ck_assert_int_eq(ct_fk.export_filter, 2);
  ck_assert_int_eq(access(tmp_path("none.bundle"), F_OK), -1);
  run_free(&r);
}
END_TEST

/* export writes no bundle that every reader would refuse: one plan more
 * than one bundle may hold (WIRE_BUNDLE_MAX_ENTRIES) is refused with
 * the way out, nothing written; exactly as many is written, and read
 * back whole by bundle-info. */
START_TEST(cli_export_bundle_limits)
{
  enum ct_mode m[] = {M_GOOD, M_GOOD};
  ct_fake_start(2, m);
  struct run r;
  char out[700];
  snprintf(out, sizeof out, "%s", tmp_path("big.bundle"));
  ct_fk.n_export = (int)WIRE_BUNDLE_MAX_ENTRIES + 1;
  RUN(&r, "-s", ct_fk.path, "export", "--page-size", "10000", "-o", out);
  ck_assert_int_eq(r.status, 65);
  assert_has(r.err, "the bundle would hold more than the 65536 plans one "
                    "bundle may hold; export fewer plans at a time");
  ck_assert_int_eq(access(out, F_OK), -1);
  run_free(&r);
  ct_fk.n_export = (int)WIRE_BUNDLE_MAX_ENTRIES;
  RUN(&r, "-s", ct_fk.path, "export", "--page-size", "10000", "-o", out);
  ck_assert_msg(r.status == 0, "%s", r.err);
  assert_has(r.out, "wrote 65536 plans to ");
  run_free(&r);
  RUN(&r, "bundle-info", out);
  ck_assert_msg(r.status == 0, "%s", r.err);
  assert_has(r.out, "plans:    65536\n");
  run_free(&r);
}
END_TEST

/* export writes as every arenactl command does (client/cli/cli_write.c):
 * a link planted at the old temporary name FILE.tmp is not followed; a
 * FILE that is a symbolic link is refused, not replaced; a FIFO and a
 * character device are written in place; - is standard output, with the
 * report on stderr. */
START_TEST(cli_export_writes_safely)
{
  enum ct_mode m[] = {M_GOOD, M_GOOD, M_GOOD, M_GOOD, M_GOOD};
  ct_fk.n_export = 3;
  ct_fake_start(5, m);
  char out[700], victim[700], link[700], fifo[700], dev[700];
  snprintf(out, sizeof out, "%s", tmp_path("out.bundle"));
  snprintf(victim, sizeof victim, "%s", tmp_path("victim"));
  snprintf(link, sizeof link, "%s", tmp_path("link.bundle"));
  snprintf(fifo, sizeof fifo, "%s", tmp_path("pipe"));
  snprintf(dev, sizeof dev, "%s", geteuid() == 0 ? tmp_path("null")
                                                 : "/dev/null");
  ck_assert_int_eq(write_file(victim, "victim\n", 7), 0);
  ck_assert_int_eq(symlink(victim, tmp_path("out.bundle.tmp")), 0);
  struct run r;
  RUN(&r, "-s", ct_fk.path, "export", "-o", out);
  ck_assert_msg(r.status == 0, "%s", r.err);
  run_free(&r);
  assert_bundle_holds(out, 3);
  char *v = tu_read_file(victim, NULL);
  ck_assert_str_eq(v, "victim\n");
  free(v);
  /* FILE a symbolic link: refused, link and victim as they were. */
  ck_assert_int_eq(symlink(victim, link), 0);
  RUN(&r, "-s", ct_fk.path, "export", "-o", link);
  ck_assert_int_eq(r.status, 74);
  assert_has(r.err, "is a symbolic link");
  run_free(&r);
  char to[700];
  ssize_t n = readlink(link, to, sizeof to - 1);
  ck_assert_int_gt(n, 0);
  to[n] = '\0';
  ck_assert_str_eq(to, victim);
  v = tu_read_file(victim, NULL);
  ck_assert_str_eq(v, "victim\n");
  free(v);
  /* A FIFO: a reader gets the bundle; the FIFO stays. */
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  pid_t reader = fork();
  ck_assert_int_ge(reader, 0);
  if (reader == 0) {
    alarm(30);
    int in = open(fifo, O_RDONLY);
    int o = open(tmp_path("from-pipe"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char buf[4096];
    ssize_t k;
    while (in >= 0 && o >= 0 && (k = read(in, buf, sizeof buf)) > 0)
      if (write(o, buf, (size_t)k) != k)
        _exit(1);
    _exit(in < 0 || o < 0);
  }
  RUN(&r, "-s", ct_fk.path, "export", "-o", fifo);
  ck_assert_msg(r.status == 0, "%s", r.err);
  run_free(&r);
  int st;
  ck_assert_int_eq(waitpid(reader, &st, 0), reader);
  ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  assert_bundle_holds(tmp_path("from-pipe"), 3);
  struct stat sb;
  ck_assert_int_eq(lstat(fifo, &sb), 0);
  ck_assert(S_ISFIFO(sb.st_mode));
  /* A character device (as root, the test's own null node). */
  if (geteuid() == 0)
    ck_assert_int_eq(mknod(dev, S_IFCHR | 0666, makedev(1, 3)), 0);
  RUN(&r, "-s", ct_fk.path, "export", "-o", dev);
  ck_assert_msg(r.status == 0, "%s", r.err);
  run_free(&r);
  ck_assert_int_eq(lstat(dev, &sb), 0);
  ck_assert(S_ISCHR(sb.st_mode));
  ck_assert_uint_eq(sb.st_rdev, makedev(1, 3));
  /* -: the bundle on stdout, the report on stderr. */
  RUN(&r, "-s", ct_fk.path, "export", "--json", "-o", "-");
  ck_assert_msg(r.status == 0, "%s", r.err);
  assert_has(r.err, "{\"written\":3,\"bytes\":");
  run_free(&r);
  char path[700];
  snprintf(path, sizeof path, "%s/out", ct_fk.dir);
  assert_bundle_holds(path, 3);
  ck_assert_int_eq(access(tmp_path("-"), F_OK), -1);
}
END_TEST

START_TEST(cli_preload_sends_entries)
{
  enum ct_mode m[] = {M_GOOD, M_GOOD};
  ct_fake_start(2, m);
  const char *path = bundle_file(3);
  struct run r;
  RUN(&r, "-s", ct_fk.path, "preload", path);
  ck_assert_msg(r.status == 0, "%s", r.err);
  ck_assert_str_eq(r.out, "stored 2, kept 1\n");
  run_free(&r);
  /* The daemon got exactly the file's entries. */
  struct ct_bundle b;
  ct_bundle_init(&b, 3);
  Arenad__V1__Preload pm = ARENAD__V1__PRELOAD__INIT;
  pm.entries = b.ptrs;
  pm.n_entries = 3;
  size_t n = protobuf_c_message_get_packed_size(&pm.base);
  uint8_t *want = malloc(n);
  ck_assert_ptr_nonnull(want);
  protobuf_c_message_pack(&pm.base, want);
  ck_assert_uint_eq(ct_fk.preload_len, n);
  ck_assert_int_eq(memcmp(ct_fk.preload, want, n), 0);
  free(want);
  ct_bundle_cleanup(&b);
  RUN(&r, "preload", "--json", "-s", ct_fk.path, path);
  ck_assert_int_eq(r.status, 0);
  ck_assert_str_eq(r.out, "{\"stored\":2,\"kept\":1}\n");
  run_free(&r);
}
END_TEST

/* A file that is not an intact bundle never reaches the daemon. */
START_TEST(cli_preload_refuses_bad_files)
{
  ct_fake_start1(M_GOOD);
  size_t len;
  char *good = tu_read_file(bundle_file(1), &len);
  ck_assert_ptr_nonnull(good);
  const char *path = tmp_path("bad.bundle");
  struct run r;
  static const struct {
    size_t at;       /* byte changed, or the length kept */
    int truncate;    /* 1: keep `at` bytes */
    const char *msg; /* in the error */
  } cases[] = {
      {30, 0, "damaged: checksum mismatch"},
      {3, 0, "not an arenad plan bundle"},
      {10, 0, "is newer than this arenad reads (1)"},
      {40, 1, "truncated: 40 bytes, expected"},
      {5, 1, "truncated: 5 bytes, expected at least 52"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *copy = malloc(len);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, good, len);
    if (!cases[i].truncate)
      copy[cases[i].at] ^= 0x40;
    ck_assert_int_eq(write_file(path, copy,
                                   cases[i].truncate ? cases[i].at : len),
                     0);
    free(copy);
    RUN(&r, "-s", ct_fk.path, "preload", path);
    ck_assert_msg(r.status == 65, "case %zu: exit %d, %s", i, r.status,
                  r.err);
    assert_has(r.err, cases[i].msg);
    assert_has(r.err, path);
    ck_assert_str_eq(r.out, "");
    run_free(&r);
    RUN(&r, "bundle-info", path);
    ck_assert_int_eq(r.status, 65);
    run_free(&r);
  }
  RUN(&r, "-s", ct_fk.path, "preload", graph_csv());
  ck_assert_int_eq(r.status, 65);
  assert_has(r.err, "not an arenad plan bundle");
  run_free(&r);
  RUN(&r, "-s", ct_fk.path, "preload", tmp_path("missing.bundle"));
  ck_assert_int_eq(r.status, 66);
  run_free(&r);
  ck_assert_int_eq(ct_fk.conns, 0);
  ck_assert_int_eq(ct_fk.requests, 0);
  free(good);
}
END_TEST

/* A producer string with an escape sequence and bytes that are not
 * UTF-8: bundle-info prints it escaped, and its JSON stays valid. */
START_TEST(cli_bundle_info_escapes_producer)
{
  struct ct_bundle b;
  uint8_t *buf;
  size_t len;
  ct_bundle_init(&b, 1);
  ck_assert_int_eq(wire_bundle_write(b.ptrs, 1, "evil\x1b[2J\x07\xff!",
                                    1700000000000, 0, &buf, &len),
                   0);
  ct_bundle_cleanup(&b);
  const char *path = tmp_path("evil.bundle");
  ck_assert_int_eq(write_file(path, buf, len), 0);
  free(buf);
  struct run r;
  RUN(&r, "bundle-info", path);
  ck_assert_msg(r.status == 0, "%s", r.err);
  assert_has(r.out, "producer: evil\\x1b[2J\\x07\\xff!\n");
  for (const char *p = r.out; *p; p++)
    ck_assert_msg(((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f) ||
                      *p == '\n',
                  "byte 0x%02x in the text", (unsigned char)*p);
  run_free(&r);
  RUN(&r, "bundle-info", "--json", path);
  ck_assert_int_eq(r.status, 0);
  assert_has(r.out, "\"producer\":\"evil\\u001b[2J\\u0007\\ufffd!\"");
  for (const char *p = r.out; *p; p++)
    ck_assert_msg(((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f) ||
                      p[1] == '\0',
                  "byte 0x%02x in the JSON", (unsigned char)*p);
  run_free(&r);
}
END_TEST

/* Feeds arenactl (args after argv[0]) on a pipe: a bundle header that
 * announces a body of 2 GiB, then zeros, up to 64 MiB or until arenactl
 * stops reading. Returns arenactl's exit status, its stderr in *err
 * (owned) and the bytes it took from the pipe (at most) in *fed. */
static int feed_big_bundle(const char *const *args, char **err,
                           size_t *fed)
{
  int p[2];
  char errp[700];
  ck_assert_int_eq(pipe(p), 0);
  snprintf(errp, sizeof errp, "%s/big.err", ct_fk.dir);
  const char *argv[16] = {arenactl()};
  size_t n = 1;
  for (; args[n - 1] && n < 15; n++)
    argv[n] = args[n - 1];
  argv[n] = NULL;
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int o = open("/dev/null", O_WRONLY);
    if (e < 0 || o < 0 || dup2(p[0], 0) < 0 || dup2(o, 1) < 0 ||
        dup2(e, 2) < 0)
      _exit(126);
    close(p[1]);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(p[0]);
  signal(SIGPIPE, SIG_IGN);
  uint8_t head[WIRE_BUNDLE_HEADER_LEN] = "ARENABDL";
  head[11] = 1;            /* version 1 */
  head[16] = 0x80;         /* body length 2^31 */
  static uint8_t zeros[1 << 16];
  size_t total = 0;
  ssize_t k = write(p[1], head, sizeof head);
  ck_assert_int_eq(k, (ssize_t)sizeof head);
  total += (size_t)k;
  while (total < ((size_t)64 << 20) &&
         (k = write(p[1], zeros, sizeof zeros)) > 0)
    total += (size_t)k;
  close(p[1]);
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  *err = tu_read_file(errp, NULL);
  ck_assert_ptr_nonnull(*err);
  *fed = total;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A piped bundle whose header announces more than 1 GiB is refused at
 * its first part (66), not after a gigabyte, and stdin is named
 * <stdin>. */
START_TEST(cli_bundle_stdin_over_limit)
{
  static const char *const cmds[][5] = {
      {"bundle-info", "-", NULL},
      {"preload", "-s", NULL, "-", NULL},
  };
  for (size_t i = 0; i < 2; i++) {
    const char *args[5];
    memcpy(args, cmds[i], sizeof args);
    if (i == 1)
      args[2] = tmp_path("no.sock");
    char *err;
    size_t fed;
    int rc = feed_big_bundle(args, &err, &fed);
    ck_assert_msg(rc == 66, "%s: exit %d: %s", args[0], rc, err);
    assert_has(err, "arenactl: <stdin>: the header announces 2147483700 "
                    "bytes, more than the 1073741824 this arenactl reads");
    /* What it read: a first part, not the stream. */
    ck_assert_msg(fed < ((size_t)4 << 20), "%s: fed %zu bytes", args[0],
                  fed);
    free(err);
  }
}
END_TEST

/* The daemon's refusal is printed with its own message. */
START_TEST(cli_preload_refused_by_daemon)
{
  ct_fk.status = ARENAD__V1__STATUS__INVALID_ARGUMENT;
  ct_fake_start1(M_STATUS);
  struct run r;
  RUN(&r, "-s", ct_fk.path, "preload", bundle_file(2));
  ck_assert_int_eq(r.status, 65);
  assert_has(r.err, "arenactl: preload: ");
  assert_has(r.err, "INVALID_ARGUMENT");
  assert_has(r.err, "fake says no");
  ck_assert_str_eq(r.out, "");
  run_free(&r);
}
END_TEST

void client_add_arenactl(TCase *tc)
{
  tcase_add_test(tc, cli_unreachable);
  tcase_add_test(tc, cli_usage_errors);
  tcase_add_test(tc, cli_ping_status_stats);
  tcase_add_test(tc, cli_cache_commands);
  tcase_add_loop_test(tc, cli_failures, 0,
                      (int)(sizeof cli_fail / sizeof cli_fail[0]));
  tcase_add_test(tc, cli_plan_through_daemon);
  tcase_add_test(tc, cli_plan_in_place_option);
  tcase_add_test(tc, cli_export_pages);
  tcase_add_test(tc, cli_export_bundle_limits);
  tcase_add_test(tc, cli_export_writes_safely);
  tcase_add_test(tc, cli_preload_sends_entries);
  tcase_add_test(tc, cli_preload_refuses_bad_files);
  tcase_add_test(tc, cli_preload_refused_by_daemon);
  tcase_add_test(tc, cli_bundle_info_escapes_producer);
  tcase_add_test(tc, cli_bundle_stdin_over_limit);
}

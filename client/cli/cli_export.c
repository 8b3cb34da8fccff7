/*
 * cli_export.c - the arenactl subcommands for plan bundles
 * (docs/bundles.md): `export` asks arenad for stored plans with their
 * graphs, page by page, and writes them to a bundle file atomically;
 * `preload` checks a bundle file and hands all its plans to arenad in
 * one Preload request; `bundle-info` prints what a bundle holds, without
 * a daemon. The file format is wire_bundle.c's.
 *
 * A bundle file is read as other inputs are (cli.h,
 * cli_read_file_checked()): in parts, its header checked after the first
 * part, so that a file that is no bundle, or longer than its header
 * announces, is refused before the rest of it is read.
 */
#include "wire_bundle.h"
#include "cli_daemon.h"
#include "cli_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "planner.h"

#define EXPORT_DEFAULT_PAGE 100u /* entries asked for per Export request */

/* ---- reading a bundle file ----------------------------------------------- */

/* After each part: what wire_bundle_check_prefix() checks, and, once
 * the header is there, that the length it announces stays within
 * CLI_MAX_FILE_LEN, so that a stream that announces more is refused at
 * its first part instead of after a gigabyte. */
static int check_part(void *ctx, const char *buf, size_t len,
                      char err[ARENA_ERR_LEN])
{
  (void)ctx;
  int rc = wire_bundle_check_prefix((const uint8_t *)buf, len, err);
  if (rc || len < WIRE_BUNDLE_HEADER_LEN)
    return rc;
  uint64_t body = 0;
  for (int i = 12; i < 20; i++)
    body = body << 8 | (uint8_t)buf[i];
  if (body > CLI_MAX_FILE_LEN - WIRE_BUNDLE_FRAME_LEN) {
    snprintf(err, ARENA_ERR_LEN, "the header announces %llu bytes, more "
             "than the %zu this arenactl reads",
             body > UINT64_MAX - WIRE_BUNDLE_FRAME_LEN
                 ? (unsigned long long)UINT64_MAX
                 : (unsigned long long)(body + WIRE_BUNDLE_FRAME_LEN),
             CLI_MAX_FILE_LEN);
    return ARENA_ETOOBIG;
  }
  return 0;
}

/* Reads and checks the bundle at path (borrowed; "-" is standard input,
 * named "<stdin>" in messages). Returns 0 with *out owned
 * (wire_free_bundle), or prints "arenactl: PATH: <reason>" and returns
 * 65 (not an intact bundle this arenactl reads), 66 (cannot be read, or
 * over CLI_MAX_FILE_LEN, by its size or its header) or 71 (out of
 * memory). */
static int load_bundle(const char *path, Arenad__V1__Bundle **out)
{
  char err[ARENA_ERR_LEN] = "";
  char *buf;
  size_t len;
  *out = NULL;
  int rc = cli_read_file_checked(path, check_part, NULL, &buf, &len, err);
  if (strcmp(path, "-") == 0)
    path = "<stdin>";
  if (rc == 0) {
    rc = wire_bundle_read((const uint8_t *)buf, len, NULL, out, err);
    free(buf);
    if (rc == 0)
      return 0;
    cli_error(path, "%s", rc == ARENA_ENOMEM ? "out of memory" : err);
    return rc == ARENA_ENOMEM ? CLI_EX_OSERR : CLI_EX_DATAERR;
  }
  cli_error(path, "%s", err);
  switch (rc) {
  case ARENA_ECORRUPT:
  case ARENA_EVERSION: return CLI_EX_DATAERR;
  case ARENA_ENOMEM: return CLI_EX_OSERR;
  default: return CLI_EX_NOINPUT;
  }
}

/* ---- export --------------------------------------------------------------- */

static void export_usage(FILE *f)
{
  fprintf(f,
          "Usage: %s export [--model-hash HEX | --key HEX] [--page-size N]\n"
          "                -o FILE [-s PATH] [--timeout-ms N] [--json]\n"
          "\n"
          "Writes the plans arenad stores with their graphs to a plan bundle\n"
          "FILE, for `%s preload` on other machines (docs/bundles.md). A\n"
          "regular FILE is replaced atomically: the bundle goes to a new\n"
          "temporary file beside it, synced and renamed to FILE. A character\n"
          "device or FIFO (/dev/stdout, a named pipe) is written in place;\n"
          "- is standard output; anything else, a symbolic link to a regular\n"
          "file among them, is refused. Plans stored before arenad kept\n"
          "graphs cannot be exported.\n"
          "\n"
          "Options:\n"
          "  --model-hash HEX   only the plans of this model\n"
          "  --key HEX          only the entry with this key (`%s ls`)\n"
          "  --page-size N      plans asked for per request (default %u)\n"
          "  -o, --output FILE  the bundle to write (required)\n"
          "  -s, --socket PATH  daemon socket (default: $%s, else %s)\n"
          "  --timeout-ms N     request timeout in milliseconds\n"
          "  --json             print one JSON object\n"
          "\n"
          "Exit status: 0 written, 1 no plan with a stored graph matched\n"
          "(nothing written), 64 usage, 65 the bundle would exceed 1 GiB,\n"
          "69 unreachable, 74 cannot write FILE, 75 busy, 76 protocol\n"
          "mismatch or a malformed plan from the daemon, 77 denied.\n",
          CLI_PROG, CLI_PROG, CLI_PROG, EXPORT_DEFAULT_PAGE,
          ARENAD_CLIENT_SOCKET_ENV, ARENAD_CLIENT_DEFAULT_SOCKET);
}

/* The entries collected so far, borrowed from the responses they came
 * in, which this owns. */
struct export_list {
  Arenad__V1__Response **pages;     /* n_pages, owned */
  size_t n_pages, cap_pages;
  Arenad__V1__BundleEntry **entries; /* n, borrowed from pages */
  size_t n, cap;
  size_t body_len;                   /* packed bytes the entries need */
  uint64_t tensors;                  /* over all entries */
  uint64_t without_graph;            /* matched, but stored without a
                                        graph: left out */
};

static void export_list_cleanup(struct export_list *l)
{
  for (size_t i = 0; i < l->n_pages; i++)
    wire_free_response(l->pages[i]);
  free(l->pages);
  free(l->entries);
  memset(l, 0, sizeof *l);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
  if (need <= *cap)
    return 0;
  size_t nc = *cap ? *cap * 2 : 16;
  while (nc < need)
    nc *= 2;
  void *np = realloc(*p, nc * elem);
  if (!np)
    return ARENA_ENOMEM;
  *p = np;
  *cap = nc;
  return 0;
}

/* Whether one more entry of n tensors keeps l within what one bundle
 * may hold (wire_bundle.h, WIRE_BUNDLE_MAX_*: every reader refuses a
 * bundle over them). Returns 0, or CLI_EX_DATAERR after printing why. */
static int export_within_limits(const struct export_list *l, size_t n)
{
  if (l->n + 1 > WIRE_BUNDLE_MAX_ENTRIES) {
    cli_error("export", "the bundle would hold more than the %u plans one "
                        "bundle may hold; export fewer plans at a time "
                        "(--model-hash or --key)",
              WIRE_BUNDLE_MAX_ENTRIES);
    return CLI_EX_DATAERR;
  }
  if (l->tensors + n > WIRE_BUNDLE_MAX_TENSORS) {
    cli_error("export", "the bundle would hold more than the %llu tensors "
                        "one bundle may hold; export fewer plans at a time "
                        "(--model-hash or --key)",
              (unsigned long long)WIRE_BUNDLE_MAX_TENSORS);
    return CLI_EX_DATAERR;
  }
  return 0;
}

/* Takes page r (owned) into l: checks each entry as a bundle reader
 * would, and that the bundle stays under the file size limit and the
 * limits of one bundle. Returns 0 or an exit status after printing why;
 * r is l's either way. */
static int export_take(struct export_list *l, Arenad__V1__Response *r)
{
  const Arenad__V1__ExportReply *x = r->exported;
  if (grow((void **)&l->pages, &l->cap_pages, l->n_pages + 1,
           sizeof *l->pages) != 0 ||
      grow((void **)&l->entries, &l->cap, l->n + x->n_entries,
           sizeof *l->entries) != 0) {
    wire_free_response(r);
    cli_error("export", "out of memory");
    return CLI_EX_OSERR;
  }
  l->pages[l->n_pages++] = r;
  for (size_t i = 0; i < x->n_entries; i++) {
    char err[ARENA_ERR_LEN];
    if (wire_bundle_check_entry(x->entries[i], l->n, err) != 0) {
      cli_error("export", "the daemon sent a malformed plan: %s", err);
      return CLI_EX_PROTOCOL;
    }
    size_t nt = x->entries[i]->request->n_tensor_ids;
    int rc = export_within_limits(l, nt);
    if (rc)
      return rc;
    l->tensors += nt;
    /* The entry, its tag and its length prefix (at most 10 bytes). */
    l->body_len += protobuf_c_message_get_packed_size(&x->entries[i]->base)
                   + 11;
    if (l->body_len > CLI_MAX_FILE_LEN - WIRE_BUNDLE_FRAME_LEN - 4096) {
      cli_error("export", "the bundle would be larger than %zu bytes; "
                          "export fewer plans at a time (--model-hash)",
                CLI_MAX_FILE_LEN);
      return CLI_EX_DATAERR;
    }
    l->entries[l->n++] = x->entries[i];
  }
  return 0;
}

/* Sends Export requests from offset 0 on, page entries each, until a
 * page comes back shorter than asked (with --key, after one). */
static int export_collect(arenad_client_t *c, Arenad__V1__Export *em,
                          uint32_t page, struct export_list *l)
{
  em->offset = 0;
  em->limit = page;
  for (;;) {
    Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
    req.body_case = ARENAD__V1__REQUEST__BODY_EXPORT_PLANS;
    req.export_plans = em;
    Arenad__V1__Response *resp;
    int rc = cli_daemon_call("export", c, &req,
                             ARENAD__V1__RESPONSE__BODY_EXPORTED, &resp);
    if (rc)
      return rc;
    size_t n = resp->exported->n_entries;
    if (n > page) {
      wire_free_response(resp);
      cli_error("export", "the daemon sent %zu plans for a page of %u", n,
                (unsigned)page);
      return CLI_EX_PROTOCOL;
    }
    l->without_graph = resp->exported->without_graph;
    if ((rc = export_take(l, resp)) != 0)
      return rc;
    if (n < page || em->key.len > 0)
      return 0;
    if (em->offset > UINT32_MAX - n) {
      cli_error("export", "more than %u plans", (unsigned)UINT32_MAX);
      return CLI_EX_DATAERR;
    }
    em->offset += (uint32_t)n;
  }
}

static int64_t now_unix_ms(void)
{
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
    return 0;
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes the collected entries to path as a bundle and reports it. */
static int export_write(const struct export_list *l, const char *path,
                        int json)
{
  uint8_t *buf;
  size_t len;
  int rc = wire_bundle_write(l->entries, l->n, CLI_PROG " " CLI_VERSION,
                            now_unix_ms(), CLI_MAX_FILE_LEN, &buf, &len);
  if (rc == ARENA_ETOOBIG) {
    cli_error("export", "the bundle would be larger than %zu bytes",
              CLI_MAX_FILE_LEN);
    return CLI_EX_DATAERR;
  }
  if (rc) {
    cli_error("export", "out of memory");
    return CLI_EX_OSERR;
  }
  /* The report goes to stderr when the bundle goes to stdout, so that
   * the stream holds the bundle alone. Asked before writing: a replaced
   * file is another file afterwards. */
  FILE *f = cli_write_is_stdout(path) ? stderr : stdout;
  rc = cli_write_file(path, buf, len);
  free(buf);
  if (rc)
    return rc;
  if (json) {
    fprintf(f, "{\"written\":%zu,\"bytes\":%zu,\"without_graph\":%llu,"
               "\"file\":",
            l->n, len, (unsigned long long)l->without_graph);
    cli_print_json(f, path);
    fprintf(f, "}\n");
  } else {
    fprintf(f, "wrote %zu plan%s to %s (%zu byte%s)\n", l->n,
            CLI_PLURAL(l->n), path, len, CLI_PLURAL(len));
    if (l->without_graph)
      fprintf(f, "left out %llu plan%s stored without its graph (by an "
                 "older arenad); plan it again to export it\n",
              (unsigned long long)l->without_graph,
              CLI_PLURAL(l->without_graph));
  }
  return cli_finish_stdout();
}

/* The command line of export. */
struct export_args {
  struct cli_daemon_args a;
  const char *out;   /* -o FILE, borrowed */
  const char *key;   /* --key HEX, borrowed; parsed later */
  uint8_t hash[64];  /* --model-hash */
  size_t hash_len;   /* 0: none */
  uint32_t page;     /* --page-size */
};

/* Parses one option at argv[*i]. Returns 0 to go on, or an exit status
 * (-1 for a --help already printed, CLI_EX_OK). */
static int export_option(int argc, char **argv, int *i, struct export_args *x)
{
  const char *v;
  uint64_t n;
  int m, rc = 0;
  if (cli_daemon_option("export", argc, argv, i, &x->a, &rc))
    return rc;
  if ((m = cli_opt_value(argc, argv, i, "--model-hash", &v))) {
    if (m < 0)
      return CLI_EX_USAGE;
    if (cli_parse_hex(v, x->hash, &x->hash_len) != 0)
      return cli_daemon_usage_error("export", "--model-hash: '%s' is not 2 "
                                              "to 128 hex digits",
                                    v);
  } else if ((m = cli_opt_value(argc, argv, i, "--key", &v))) {
    if (m < 0)
      return CLI_EX_USAGE;
    x->key = v;
  } else if ((m = cli_opt_value(argc, argv, i, "--page-size", &v))) {
    if (m < 0)
      return CLI_EX_USAGE;
    if (cli_parse_u64(v, UINT32_MAX, &n) != 0 || n == 0)
      return cli_daemon_usage_error("export", "--page-size: '%s' is not a "
                                              "positive count",
                                    v);
    x->page = (uint32_t)n;
  } else if ((m = cli_opt_value(argc, argv, i, "-o", &v)) ||
             (m = cli_opt_value(argc, argv, i, "--output", &v))) {
    if (m < 0)
      return CLI_EX_USAGE;
    if (!*v)
      return cli_daemon_usage_error("export", "the output path is empty");
    x->out = v;
  } else {
    return cli_daemon_usage_error("export", "unexpected argument '%s'",
                                  argv[*i]);
  }
  return 0;
}

int cli_export_main(int argc, char **argv)
{
  struct export_args x;
  memset(&x, 0, sizeof x);
  x.page = EXPORT_DEFAULT_PAGE;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      export_usage(stdout);
      return cli_finish_stdout();
    }
    int rc = export_option(argc, argv, &i, &x);
    if (rc)
      return rc;
  }
  if (!x.out)
    return cli_daemon_usage_error("export", "-o FILE is required");
  if (x.key && x.hash_len)
    return cli_daemon_usage_error("export", "give at most one of "
                                            "--model-hash and --key");
  Arenad__V1__Export em = ARENAD__V1__EXPORT__INIT;
  uint8_t *key = NULL;
  size_t key_len = 0;
  int rc;
  if (x.key && (rc = cli_parse_key("export", "--key", x.key, &key,
                                   &key_len)) != 0)
    return rc;
  em.key.data = key;
  em.key.len = key_len;
  em.model_hash.data = x.hash;
  em.model_hash.len = x.hash_len;
  arenad_client_t *c = NULL;
  struct export_list l;
  memset(&l, 0, sizeof l);
  if ((rc = cli_daemon_open("export", &x.a, 0, &c)) == 0)
    rc = export_collect(c, &em, x.page, &l);
  if (rc == 0 && l.n == 0) {
    cli_error("export", "no plan with a stored graph matched; %s not "
                        "written",
              x.out);
    rc = CLI_EX_FAIL;
  } else if (rc == 0) {
    rc = export_write(&l, x.out, x.a.json);
  }
  export_list_cleanup(&l);
  arenad_client_close(c);
  free(key);
  return rc;
}

/* ---- preload -------------------------------------------------------------- */

static void preload_usage(FILE *f)
{
  fprintf(f,
          "Usage: %s preload [-s PATH] [--timeout-ms N] [--json] FILE\n"
          "\n"
          "Checks the plan bundle FILE (written by `%s export`) and sends\n"
          "all its plans to arenad in one request. arenad verifies every\n"
          "plan against its graph and stores them all or none; a plan\n"
          "smaller than the one stored under its key replaces it. Prints\n"
          "how many were stored and how many kept the plan already there.\n"
          "\n"
          "Options:\n"
          "  -s, --socket PATH  daemon socket (default: $%s, else %s)\n"
          "  --timeout-ms N     request timeout in milliseconds\n"
          "  --json             print one JSON object\n"
          "\n"
          "Exit status: 0 done, 64 usage, 65 not an intact bundle (damaged,\n"
          "truncated, a newer format), a request over 16 MiB, or plans the\n"
          "daemon refused, 66 FILE cannot be read, 69 unreachable, 75 busy,\n"
          "76 protocol mismatch, 77 denied.\n",
          CLI_PROG, CLI_PROG, ARENAD_CLIENT_SOCKET_ENV,
          ARENAD_CLIENT_DEFAULT_SOCKET);
}

static void preload_print(uint64_t stored, uint64_t kept, int json)
{
  if (json)
    printf("{\"stored\":%llu,\"kept\":%llu}\n", (unsigned long long)stored,
           (unsigned long long)kept);
  else
    printf("stored %llu, kept %llu\n", (unsigned long long)stored,
           (unsigned long long)kept);
}

/* Sends b's entries (borrowed) in one Preload request and prints the
 * answer. */
static int preload_send(const char *path, const struct cli_daemon_args *a,
                        const Arenad__V1__Bundle *b)
{
  Arenad__V1__Preload pm = ARENAD__V1__PRELOAD__INIT;
  pm.entries = b->entries;
  pm.n_entries = b->n_entries;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.body_case = ARENAD__V1__REQUEST__BODY_PRELOAD_PLANS;
  req.preload_plans = &pm;
  /* The library adds the version, request id and want_ack: 32 bytes is
   * more than they take. */
  size_t n = protobuf_c_message_get_packed_size(&req.base) + 32;
  if (n > WIRE_DEFAULT_MAX_FRAME) {
    cli_error(path, "its %zu plans make a request of %zu bytes, over the "
                    "limit of %u bytes per request; export them in smaller "
                    "bundles (--model-hash)",
              b->n_entries, n, (unsigned)WIRE_DEFAULT_MAX_FRAME);
    return CLI_EX_DATAERR;
  }
  arenad_client_t *c;
  int rc = cli_daemon_open("preload", a, 0, &c);
  if (rc)
    return rc;
  Arenad__V1__Response *resp;
  rc = cli_daemon_call("preload", c, &req,
                       ARENAD__V1__RESPONSE__BODY_PRELOADED, &resp);
  if (rc == 0) {
    preload_print(resp->preloaded->stored, resp->preloaded->kept, a->json);
    wire_free_response(resp);
    rc = cli_finish_stdout();
  }
  arenad_client_close(c);
  return rc;
}

int cli_preload_main(int argc, char **argv)
{
  struct cli_daemon_args a = {0};
  const char *path = NULL;
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      preload_usage(stdout);
      return cli_finish_stdout();
    }
    if (cli_daemon_option("preload", argc, argv, &i, &a, &rc)) {
      if (rc)
        return rc;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      return cli_daemon_usage_error("preload", "unknown option '%s'",
                                    argv[i]);
    } else if (path) {
      return cli_daemon_usage_error("preload", "unexpected argument '%s'",
                                    argv[i]);
    } else {
      path = argv[i];
    }
  }
  if (!path)
    return cli_daemon_usage_error("preload", "a bundle FILE is required");
  Arenad__V1__Bundle *b;
  if ((rc = load_bundle(path, &b)) != 0)
    return rc;
  if (b->n_entries == 0) {
    /* Nothing to store: the daemon is not asked. */
    preload_print(0, 0, a.json);
    rc = cli_finish_stdout();
  } else {
    rc = preload_send(strcmp(path, "-") ? path : "<stdin>", &a, b);
  }
  wire_free_bundle(b);
  return rc;
}

/* ---- bundle-info ---------------------------------------------------------- */

static void info_usage(FILE *f)
{
  fprintf(f,
          "Usage: %s bundle-info [--json] FILE\n"
          "\n"
          "Checks the plan bundle FILE as `%s preload` does and prints its\n"
          "format, producer, creation time (UTC) and, one line per plan, the\n"
          "model hash, input shape, tensors, arena bytes, algorithm and the\n"
          "search effort that found it (- when not known). Needs no daemon.\n"
          "\n"
          "Options:\n"
          "  --json   print one JSON object\n"
          "\n"
          "Exit status: 0 ok, 64 usage, 65 not an intact bundle, 66 FILE\n"
          "cannot be read.\n",
          CLI_PROG, CLI_PROG);
}

static void json_shape(Arenad__V1__Dims *const *d, size_t n)
{
  printf("[");
  for (size_t i = 0; i < n; i++) {
    printf("%s[", i ? "," : "");
    for (size_t k = 0; d[i] && k < d[i]->n_dims; k++)
      printf("%s%lld", k ? "," : "", (long long)d[i]->dims[k]);
    putchar(']');
  }
  putchar(']');
}

static void info_entry(const Arenad__V1__BundleEntry *e, size_t i, int json)
{
  const Arenad__V1__Plan *q = e->request;
  const Arenad__V1__PlanReply *p = e->plan;
  const char *algo = planner_algo_name((enum planner_algo)p->algorithm);
  if (json) {
    printf("%s{\"model_hash\":\"", i ? "," : "");
    cli_print_hex(q->model_hash.data, q->model_hash.len);
    printf("\",\"input_shape\":");
    json_shape(q->input_shape, q->n_input_shape);
    printf(",\"n_tensors\":%zu,\"arena_bytes\":%llu,\"algorithm\":\"%s\","
           "\"effort\":%u,\"proven_optimal\":%s}",
           q->n_tensor_ids, (unsigned long long)p->arena_bytes, algo,
           (unsigned)p->effort, p->proven_optimal ? "true" : "false");
    return;
  }
  if (q->model_hash.len)
    cli_print_hex(q->model_hash.data, q->model_hash.len);
  else
    putchar('-');
  printf("  ");
  cli_print_shape(q->input_shape, q->n_input_shape);
  printf("  %zu  %llu  %s  ", q->n_tensor_ids,
         (unsigned long long)p->arena_bytes, algo);
  if (p->effort)
    printf("%u\n", (unsigned)p->effort);
  else
    printf("-\n");
}

static void info_print(const Arenad__V1__Bundle *b, int json)
{
  if (json) {
    printf("{\"format_version\":%u,\"producer\":", (unsigned)b->format_version);
    cli_print_json(stdout, b->producer);
    printf(",\"created_unix_ms\":%lld,\"entries\":[",
           (long long)b->created_unix_ms);
  } else {
    printf("format:   %u\nproducer: ", (unsigned)b->format_version);
    if (*b->producer)
      cli_print_text(stdout, b->producer);
    else
      putchar('-');
    printf("\ncreated:  ");
    cli_print_utc(b->created_unix_ms);
    printf("\nplans:    %zu\n", b->n_entries);
    if (b->n_entries)
      printf("model_hash  shape  tensors  arena_bytes  algorithm  effort\n");
  }
  for (size_t i = 0; i < b->n_entries; i++)
    info_entry(b->entries[i], i, json);
  if (json)
    printf("]}\n");
}

int cli_bundle_info_main(int argc, char **argv)
{
  const char *path = NULL;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      info_usage(stdout);
      return cli_finish_stdout();
    }
    if (strcmp(argv[i], "--json") == 0)
      json = 1;
    else if (argv[i][0] == '-' && argv[i][1] != '\0')
      return cli_daemon_usage_error("bundle-info", "unknown option '%s'",
                                    argv[i]);
    else if (path)
      return cli_daemon_usage_error("bundle-info", "unexpected argument "
                                                   "'%s'",
                                    argv[i]);
    else
      path = argv[i];
  }
  if (!path)
    return cli_daemon_usage_error("bundle-info", "a bundle FILE is "
                                                 "required");
  Arenad__V1__Bundle *b;
  int rc = load_bundle(path, &b);
  if (rc)
    return rc;
  info_print(b, json);
  wire_free_bundle(b);
  return cli_finish_stdout();
}

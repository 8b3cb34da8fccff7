/*
 * cli_cache.c - the arenactl subcommands that inspect and manage arenad's
 * plan cache: `get` (Lookup), `ls` (List) and `evict` (Evict).
 *
 * Binary values (model hashes, digests, cache keys) are printed and read
 * as lower-case hex; a model hash is 1 to 64 bytes, so 2 to 128 digits.
 */
#include "cli_daemon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "planner.h"

/* Prints a ProtobufC bytes field as hex ("-" when empty). */
static void print_bytes(ProtobufCBinaryData b)
{
  if (b.len == 0)
    putchar('-');
  else
    cli_print_hex(b.data, b.len);
}

static void json_bytes(const char *key, ProtobufCBinaryData b, int comma)
{
  printf("%s\"%s\":\"", comma ? "," : "", key);
  cli_print_hex(b.data, b.len);
  putchar('"');
}

static void json_shape(Arenad__V1__Dims *const *d, size_t n)
{
  printf(",\"input_shape\":[");
  for (size_t i = 0; i < n; i++) {
    printf("%s[", i ? "," : "");
    for (size_t k = 0; d[i] && k < d[i]->n_dims; k++)
      printf("%s%lld", k ? "," : "", (long long)d[i]->dims[k]);
    putchar(']');
  }
  putchar(']');
}

static const char *algo_name(Arenad__V1__Algorithm a)
{
  return planner_algo_name((enum planner_algo)a);
}

/* Parses --model-hash into buf; prints a usage error on failure. */
static int parse_hash(const char *cmd, const char *opt, const char *v,
                      uint8_t buf[64], size_t *len)
{
  if (cli_parse_hex(v, buf, len) == 0)
    return 0;
  return cli_daemon_usage_error(cmd, "%s: '%s' is not 2 to 128 hex digits",
                                opt, v);
}

/* ---- get ------------------------------------------------------------------- */

static void get_usage(FILE *f)
{
  fprintf(f,
          "Usage: %s get --model-hash HEX [--shape S] [--graph-digest HEX]\n"
          "              [-s PATH] [--timeout-ms N] [--json]\n"
          "\n"
          "Looks up the plans arenad has stored for a model and input shape\n"
          "and prints each with its graph and options digests and offsets\n"
          "(in ascending tensor id order).\n"
          "\n"
          "Options:\n"
          "  --model-hash HEX     the model hash the plans were stored under\n"
          "  --shape S            input shape, e.g. 1x224x224x3 (inputs\n"
          "                       separated by commas; default: none)\n"
          "  --graph-digest HEX   only the plan of this graph (64 digits)\n"
          "  -s, --socket PATH    daemon socket (default: $%s, else %s)\n"
          "  --timeout-ms N       request timeout in milliseconds\n"
          "  --json               print one JSON object\n"
          "\n"
          "Exit status: 0 found, 1 nothing stored, 64 usage, 69 unreachable,\n"
          "75 busy, 76 protocol mismatch, 77 denied.\n",
          CLI_PROG, ARENAD_CLIENT_SOCKET_ENV, ARENAD_CLIENT_DEFAULT_SOCKET);
}

/* The gap of an arena over its lower bound, in percent; -1 without a
 * bound. */
static double gap_pct(uint64_t arena, uint64_t bound)
{
  return bound ? 100.0 * (double)(arena - (arena > bound ? bound : arena)) /
                     (double)bound
               : -1.0;
}

/* What the daemon is doing with a stored plan, in one word. */
static const char *state_word(int proven, int improving)
{
  return proven ? "optimal" : improving ? "improving" : "final";
}

static void get_print(const Arenad__V1__LookupReply *lr, int json)
{
  if (json)
    printf("{\"plans\":[");
  for (size_t i = 0; i < lr->n_plans; i++) {
    const Arenad__V1__PlanReply *p = lr->plans[i];
    if (json) {
      printf("%s{", i ? "," : "");
      json_bytes("graph_digest", p->graph_digest, 0);
      json_bytes("options_digest", p->options_digest, 1);
      printf(",\"arena_bytes\":%llu,\"lower_bound_bytes\":%llu,"
             "\"naive_bytes\":%llu,\"algorithm\":\"%s\",\"proven_optimal\":%s,"
             "\"planning_us\":%llu,\"generation\":%llu,\"effort\":%u,"
             "\"gap_pct\":%.4f,\"improving\":%s,\"offsets\":[",
             (unsigned long long)p->arena_bytes,
             (unsigned long long)p->lower_bound_bytes,
             (unsigned long long)p->naive_bytes, algo_name(p->algorithm),
             p->proven_optimal ? "true" : "false",
             (unsigned long long)p->planning_us,
             (unsigned long long)p->generation, (unsigned)p->effort,
             gap_pct(p->arena_bytes, p->lower_bound_bytes),
             p->improving ? "true" : "false");
      for (size_t k = 0; k < p->n_offsets; k++)
        printf("%s%llu", k ? "," : "", (unsigned long long)p->offsets[k]);
      printf("]}");
      continue;
    }
    printf("%splan %zu of %zu\n", i ? "\n" : "", i + 1, lr->n_plans);
    printf("graph digest:   ");
    print_bytes(p->graph_digest);
    printf("\noptions digest: ");
    print_bytes(p->options_digest);
    printf("\nalgorithm:      %s\narena:          %llu byte%s\n"
           "lower bound:    %llu byte%s\ngap:            %.2f%%\n"
           "proven optimal: %s\n"
           "effort:         %u\ngeneration:     %llu\nstate:          %s\n"
           "tensors:        %zu\noffsets:       ",
           algo_name(p->algorithm), (unsigned long long)p->arena_bytes,
           CLI_PLURAL(p->arena_bytes),
           (unsigned long long)p->lower_bound_bytes,
           CLI_PLURAL(p->lower_bound_bytes),
           gap_pct(p->arena_bytes, p->lower_bound_bytes),
           p->proven_optimal ? "yes" : "no", (unsigned)p->effort,
           (unsigned long long)p->generation,
           state_word(p->proven_optimal, p->improving), p->n_offsets);
    for (size_t k = 0; k < p->n_offsets; k++)
      printf(" %llu", (unsigned long long)p->offsets[k]);
    putchar('\n');
  }
  if (json)
    printf("]}\n");
}

int cli_get_main(int argc, char **argv)
{
  struct cli_daemon_args a = {0};
  uint8_t hash[64], gd[64];
  size_t hash_len = 0, gd_len = 0;
  const char *shape = "";
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    const char *v;
    int m;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      get_usage(stdout);
      return cli_finish_stdout();
    }
    if (cli_daemon_option("get", argc, argv, &i, &a, &rc)) {
      if (rc)
        return rc;
    } else if ((m = cli_opt_value(argc, argv, &i, "--model-hash", &v))) {
      if (m < 0 || (rc = parse_hash("get", "--model-hash", v, hash,
                                    &hash_len)) != 0)
        return m < 0 ? CLI_EX_USAGE : rc;
    } else if ((m = cli_opt_value(argc, argv, &i, "--graph-digest", &v))) {
      if (m < 0)
        return CLI_EX_USAGE;
      if (cli_parse_hex(v, gd, &gd_len) != 0 || gd_len != 32)
        return cli_daemon_usage_error("get", "--graph-digest: '%s' is not "
                                             "64 hex digits",
                                      v);
    } else if ((m = cli_opt_value(argc, argv, &i, "--shape", &v))) {
      if (m < 0)
        return CLI_EX_USAGE;
      shape = v;
    } else {
      return cli_daemon_usage_error("get", "unexpected argument '%s'",
                                    argv[i]);
    }
  }
  if (hash_len == 0)
    return cli_daemon_usage_error("get", "--model-hash is required");
  struct cli_shape sh;
  if (cli_parse_shape(shape, &sh) != 0)
    return cli_daemon_usage_error("get", "--shape '%s': expected dims like "
                                         "1x224x224x3, inputs separated by "
                                         "commas",
                                  shape);
  struct arenad_client__shape ms;
  struct arenad_model_key k = {hash, hash_len, sh.inputs, sh.n_inputs};
  arenad_client_t *c = NULL;
  if (arenad_client__shape_init(&ms, &k) != 0) {
    cli_shape_cleanup(&sh);
    cli_error("get", "out of memory");
    return CLI_EX_OSERR;
  }
  if ((rc = cli_daemon_open("get", &a, 0, &c)) == 0) {
    Arenad__V1__Lookup lm = ARENAD__V1__LOOKUP__INIT;
    lm.model_hash.data = hash;
    lm.model_hash.len = hash_len;
    lm.input_shape = ms.ptrs;
    lm.n_input_shape = ms.n;
    lm.graph_digest.data = gd;
    lm.graph_digest.len = gd_len;
    Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
    req.body_case = ARENAD__V1__REQUEST__BODY_LOOKUP;
    req.lookup = &lm;
    Arenad__V1__Response *resp;
    rc = cli_daemon_call("get", c, &req, ARENAD__V1__RESPONSE__BODY_LOOKUP,
                         &resp);
    if (rc == 0) {
      if (resp->lookup->n_plans == 0) {
        cli_error("get", "no stored plan for this model and shape");
        rc = CLI_EX_FAIL;
      } else {
        get_print(resp->lookup, a.json);
        rc = cli_finish_stdout();
      }
      wire_free_response(resp);
    }
  }
  arenad_client_close(c);
  arenad_client__shape_cleanup(&ms);
  cli_shape_cleanup(&sh);
  return rc;
}

/* ---- ls -------------------------------------------------------------------- */

static void ls_usage(FILE *f)
{
  fprintf(f,
          "Usage: %s ls [--model-hash HEX] [--order newest|used]\n"
          "             [--limit N] [--offset N] [-s PATH] [--timeout-ms N]\n"
          "             [--json]\n"
          "\n"
          "Lists the plans in arenad's cache, one per line: cache key, model\n"
          "hash, input shape, tensors, arena bytes, algorithm, hits and the\n"
          "time of last use (UTC).\n"
          "\n"
          "Options:\n"
          "  --model-hash HEX   only plans of this model\n"
          "  --order ORDER      newest (default) or used (most hits first)\n"
          "  --limit N          at most N entries (default 100)\n"
          "  --offset N         skip the first N entries\n"
          "  -s, --socket PATH  daemon socket (default: $%s, else %s)\n"
          "  --timeout-ms N     request timeout in milliseconds\n"
          "  --json             print one JSON object\n"
          "\n"
          "Exit status: 0 ok, 64 usage, 69 unreachable, 75 busy,\n"
          "76 protocol mismatch, 77 denied.\n",
          CLI_PROG, ARENAD_CLIENT_SOCKET_ENV, ARENAD_CLIENT_DEFAULT_SOCKET);
}

static void ls_print(const Arenad__V1__ListReply *lr, int json)
{
  if (json)
    printf("{\"entries\":[");
  else if (lr->n_entries)
    printf("model_hash  shape  tensors  arena_bytes  gap  effort/tried  "
           "state  gen  algorithm  hits  last_used  key\n");
  for (size_t i = 0; i < lr->n_entries; i++) {
    const Arenad__V1__CacheEntry *e = lr->entries[i];
    if (json) {
      printf("%s{", i ? "," : "");
      json_bytes("key", e->key, 0);
      json_bytes("model_hash", e->model_hash, 1);
      json_shape(e->input_shape, e->n_input_shape);
      json_bytes("graph_digest", e->graph_digest, 1);
      json_bytes("options_digest", e->options_digest, 1);
      printf(",\"n_tensors\":%llu,\"arena_bytes\":%llu,"
             "\"lower_bound_bytes\":%llu,\"proven_optimal\":%s,"
             "\"algorithm\":\"%s\",\"hits\":%llu,\"created_unix_ms\":%lld,"
             "\"last_used_unix_ms\":%lld,\"planning_us\":%llu,"
             "\"generation\":%llu,\"effort\":%u,\"effort_tried\":%u,"
             "\"gap_pct\":%.4f,\"improving\":%s,\"has_graph\":%s}",
             (unsigned long long)e->n_tensors,
             (unsigned long long)e->arena_bytes,
             (unsigned long long)e->lower_bound_bytes,
             e->proven_optimal ? "true" : "false", algo_name(e->algorithm),
             (unsigned long long)e->hits, (long long)e->created_unix_ms,
             (long long)e->last_used_unix_ms,
             (unsigned long long)e->planning_us,
             (unsigned long long)e->generation, (unsigned)e->effort,
             (unsigned)e->effort_tried,
             gap_pct(e->arena_bytes, e->lower_bound_bytes),
             e->improving ? "true" : "false",
             e->has_graph ? "true" : "false");
      continue;
    }
    print_bytes(e->model_hash);
    printf("  ");
    cli_print_shape(e->input_shape, e->n_input_shape);
    printf("  %llu  %llu  %.2f%%  %u/%u  %s  %llu  %s  %llu  ",
           (unsigned long long)e->n_tensors,
           (unsigned long long)e->arena_bytes,
           gap_pct(e->arena_bytes, e->lower_bound_bytes), (unsigned)e->effort,
           (unsigned)e->effort_tried,
           state_word(e->proven_optimal, e->improving),
           (unsigned long long)e->generation, algo_name(e->algorithm),
           (unsigned long long)e->hits);
    cli_print_utc(e->last_used_unix_ms);
    printf("  ");
    print_bytes(e->key);
    putchar('\n');
  }
  if (json)
    printf("]}\n");
  else if (lr->n_entries == 0)
    printf("(no cached plans)\n");
}

int cli_ls_main(int argc, char **argv)
{
  struct cli_daemon_args a = {0};
  uint8_t hash[64];
  size_t hash_len = 0;
  Arenad__V1__List lm = ARENAD__V1__LIST__INIT;
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    const char *v;
    uint64_t n;
    int m;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      ls_usage(stdout);
      return cli_finish_stdout();
    }
    if (cli_daemon_option("ls", argc, argv, &i, &a, &rc)) {
      if (rc)
        return rc;
    } else if ((m = cli_opt_value(argc, argv, &i, "--model-hash", &v))) {
      if (m < 0 ||
          (rc = parse_hash("ls", "--model-hash", v, hash, &hash_len)) != 0)
        return m < 0 ? CLI_EX_USAGE : rc;
    } else if ((m = cli_opt_value(argc, argv, &i, "--order", &v))) {
      if (m < 0)
        return CLI_EX_USAGE;
      if (strcmp(v, "newest") == 0)
        lm.order = ARENAD__V1__LIST_ORDER__NEWEST;
      else if (strcmp(v, "used") == 0)
        lm.order = ARENAD__V1__LIST_ORDER__MOST_USED;
      else
        return cli_daemon_usage_error("ls", "--order: '%s' is not newest or "
                                            "used",
                                      v);
    } else if ((m = cli_opt_value(argc, argv, &i, "--limit", &v))) {
      if (m < 0)
        return CLI_EX_USAGE;
      if (cli_parse_u64(v, UINT32_MAX, &n) != 0 || n == 0)
        return cli_daemon_usage_error("ls", "--limit: '%s' is not a positive "
                                            "count",
                                      v);
      lm.limit = (uint32_t)n;
    } else if ((m = cli_opt_value(argc, argv, &i, "--offset", &v))) {
      if (m < 0)
        return CLI_EX_USAGE;
      if (cli_parse_u64(v, UINT32_MAX, &n) != 0)
        return cli_daemon_usage_error("ls", "--offset: '%s' is not a count",
                                      v);
      lm.offset = (uint32_t)n;
    } else {
      return cli_daemon_usage_error("ls", "unexpected argument '%s'",
                                    argv[i]);
    }
  }
  lm.model_hash.data = hash;
  lm.model_hash.len = hash_len;
  arenad_client_t *c;
  if ((rc = cli_daemon_open("ls", &a, 0, &c)) != 0)
    return rc;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.body_case = ARENAD__V1__REQUEST__BODY_LIST;
  req.list = &lm;
  Arenad__V1__Response *resp;
  rc = cli_daemon_call("ls", c, &req, ARENAD__V1__RESPONSE__BODY_LIST, &resp);
  if (rc == 0) {
    ls_print(resp->list, a.json);
    wire_free_response(resp);
    rc = cli_finish_stdout();
  }
  arenad_client_close(c);
  return rc;
}

/* ---- evict ----------------------------------------------------------------- */

static void evict_usage(FILE *f)
{
  fprintf(f,
          "Usage: %s evict (--all | --model-hash HEX | --key HEX)\n"
          "                [-s PATH] [--timeout-ms N] [--json]\n"
          "\n"
          "Removes plans from arenad's cache (memory and database) and prints\n"
          "how many were removed.\n"
          "\n"
          "Options:\n"
          "  --all              every cached plan\n"
          "  --model-hash HEX   every plan of one model\n"
          "  --key HEX          one entry, by the key `%s ls` prints\n"
          "  -s, --socket PATH  daemon socket (default: $%s, else %s)\n"
          "  --timeout-ms N     request timeout in milliseconds\n"
          "  --json             print one JSON object\n"
          "\n"
          "Exit status: 0 ok (even when nothing matched), 64 usage,\n"
          "69 unreachable, 75 busy, 76 protocol mismatch, 77 denied.\n",
          CLI_PROG, CLI_PROG, ARENAD_CLIENT_SOCKET_ENV,
          ARENAD_CLIENT_DEFAULT_SOCKET);
}

int cli_evict_main(int argc, char **argv)
{
  struct cli_daemon_args a = {0};
  Arenad__V1__Evict em = ARENAD__V1__EVICT__INIT;
  uint8_t bytes[64], *key = NULL;
  const char *key_hex = NULL;
  size_t len = 0;
  int rc = 0, targets = 0;
  for (int i = 1; i < argc; i++) {
    const char *v;
    int m;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      evict_usage(stdout);
      return cli_finish_stdout();
    }
    if (cli_daemon_option("evict", argc, argv, &i, &a, &rc)) {
      if (rc)
        return rc;
    } else if (strcmp(argv[i], "--all") == 0) {
      em.target_case = ARENAD__V1__EVICT__TARGET_ALL;
      em.all = 1;
      targets++;
    } else if ((m = cli_opt_value(argc, argv, &i, "--model-hash", &v))) {
      if (m < 0 ||
          (rc = parse_hash("evict", "--model-hash", v, bytes, &len)) != 0)
        return m < 0 ? CLI_EX_USAGE : rc;
      em.target_case = ARENAD__V1__EVICT__TARGET_MODEL_HASH;
      em.model_hash.data = bytes;
      em.model_hash.len = len;
      targets++;
    } else if ((m = cli_opt_value(argc, argv, &i, "--key", &v))) {
      if (m < 0)
        return CLI_EX_USAGE;
      key_hex = v; /* parsed below, once the command line is known good */
      em.target_case = ARENAD__V1__EVICT__TARGET_KEY;
      targets++;
    } else {
      return cli_daemon_usage_error("evict", "unexpected argument '%s'",
                                    argv[i]);
    }
  }
  if (targets != 1)
    return cli_daemon_usage_error("evict", "give exactly one of --all, "
                                           "--model-hash and --key");
  if (key_hex) {
    if ((rc = cli_parse_key("evict", "--key", key_hex, &key, &len)) != 0)
      return rc;
    em.key.data = key;
    em.key.len = len;
  }
  arenad_client_t *c = NULL;
  if ((rc = cli_daemon_open("evict", &a, 0, &c)) != 0) {
    free(key);
    return rc;
  }
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.body_case = ARENAD__V1__REQUEST__BODY_EVICT;
  req.evict = &em;
  Arenad__V1__Response *resp;
  rc = cli_daemon_call("evict", c, &req, ARENAD__V1__RESPONSE__BODY_EVICT,
                       &resp);
  if (rc == 0) {
    unsigned long long n = (unsigned long long)resp->evict->evicted;
    if (a.json)
      printf("{\"evicted\":%llu}\n", n);
    else
      printf("evicted %llu plan%s\n", n, n == 1 ? "" : "s");
    wire_free_response(resp);
    rc = cli_finish_stdout();
  }
  arenad_client_close(c);
  free(key);
  return rc;
}

/*
 * cli_daemon.c - arenactl's link to arenad: the helpers every daemon
 * subcommand shares (see cli_daemon.h), the global -s option, planning
 * through the daemon for `arenactl plan`, and the subcommands `ping`,
 * `status` and `stats`.
 *
 * Output conventions: text for people on stdout; with --json exactly one
 * compact JSON object per run on stdout. Errors go to stderr as
 * "arenactl: <command>: <reason>", the reason including the daemon's own
 * message when it sent one.
 */
#include "cli_daemon.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "digest.h"
#include "wire_plan.h"

/* ---- exit statuses ------------------------------------------------------- */

int cli_daemon_exit_status(int code)
{
  switch (code) {
  case 0: return CLI_EX_OK;
  case ARENA_EUNAVAIL:
  case ARENA_ETIMEDOUT: return CLI_EX_UNAVAILABLE;
  case ARENA_EBUSY: return CLI_EX_TEMPFAIL;
  case ARENA_EVERSION:
  case ARENA_EPROTO: return CLI_EX_PROTOCOL;
  case ARENA_EDENIED: return CLI_EX_NOPERM;
  case ARENA_ENOENT:
  case ARENA_EVERIFY:
  case ARENA_EINTERNAL: return CLI_EX_FAIL;
  default: return cli_exit_status(code);
  }
}

int cli_daemon_usage_error(const char *cmd, const char *fmt, ...)
{
  va_list ap;
  fflush(stdout);
  fprintf(stderr, "%s: %s: ", CLI_PROG, cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry '%s %s --help'.\n", CLI_PROG, cmd);
  return CLI_EX_USAGE;
}

/* ---- options ----------------------------------------------------------- */

int cli_daemon_option(const char *cmd, int argc, char **argv, int *i,
                      struct cli_daemon_args *a, int *rc)
{
  const char *v = NULL;
  int m;
  *rc = 0;
  if (strcmp(argv[*i], "--json") == 0) {
    a->json = 1;
    return 1;
  }
  if ((m = cli_opt_value(argc, argv, i, "-s", &v)) != 0 ||
      (m = cli_opt_value(argc, argv, i, "--socket", &v)) != 0) {
    if (m < 0)
      *rc = CLI_EX_USAGE;
    else if (!*v)
      *rc = cli_daemon_usage_error(cmd, "the socket path is empty");
    else
      a->socket = v;
    return 1;
  }
  if ((m = cli_opt_value(argc, argv, i, "--timeout-ms", &v)) != 0) {
    uint64_t n;
    if (m < 0)
      *rc = CLI_EX_USAGE;
    else if (cli_parse_u64(v, UINT32_MAX, &n) != 0 || n == 0)
      *rc = cli_daemon_usage_error(cmd, "--timeout-ms: '%s' is not a "
                                        "positive number of milliseconds",
                                   v);
    else
      a->timeout_ms = (uint32_t)n;
    return 1;
  }
  return 0;
}

int cli_global_options(int argc, char **argv)
{
  int i = 1;
  while (i < argc) {
    const char *v = NULL;
    int k = i;
    if ((strcmp(argv[i], "-s") == 0 || strcmp(argv[i], "--socket") == 0) &&
        i + 1 >= argc) {
      cli_error(NULL, "option %s needs a value (the daemon's socket)",
                argv[i]);
      return -1;
    }
    int m = cli_opt_value(argc, argv, &k, "-s", &v);
    if (m == 0)
      m = cli_opt_value(argc, argv, &k, "--socket", &v);
    if (m == 0)
      break;
    if (m < 0)
      return -1;
    if (!*v) {
      cli_error(NULL, "the socket path is empty");
      return -1;
    }
    /* The library reads the variable when no path is given, so setting
     * it here reaches every subcommand without passing it around. */
    if (setenv(ARENAD_CLIENT_SOCKET_ENV, v, 1) != 0) {
      cli_error(NULL, "cannot set %s: %s", ARENAD_CLIENT_SOCKET_ENV,
                strerror(errno));
      return -1;
    }
    i = k + 1;
  }
  return i - 1;
}

int cli_daemon_open(const char *cmd, const struct cli_daemon_args *a,
                    int fallback, arenad_client_t **c)
{
  struct arenad_client_options o;
  arenad_client_options_init(&o);
  o.socket_path = a->socket;
  o.fallback = fallback;
  if (a->timeout_ms)
    o.request_timeout_ms = a->timeout_ms;
  int rc = arenad_client_open(&o, c);
  if (rc == ARENA_EINVAL) {
    cli_error(cmd, "socket path is empty or longer than a Unix socket "
                   "allows");
    return CLI_EX_USAGE;
  }
  if (rc) {
    cli_error(cmd, "%s", arena_strerror(rc));
    return CLI_EX_OSERR;
  }
  return 0;
}

int cli_daemon_call(const char *cmd, arenad_client_t *c,
                    Arenad__V1__Request *req,
                    Arenad__V1__Response__BodyCase want,
                    Arenad__V1__Response **resp)
{
  int rc = arenad_client__call(c, req, resp);
  if (rc == 0)
    rc = arenad_client__check_status(c, *resp, "daemon");
  if (rc == 0 && (*resp)->body_case != want)
    rc = arenad_client__fail(c, ARENA_EPROTO,
                             "daemon answered with the wrong message (%d, "
                             "not %d)",
                             (int)(*resp)->body_case, (int)want);
  if (rc == 0)
    return 0;
  cli_error(cmd, "%s", arenad_client_errmsg(c));
  wire_free_response(*resp);
  *resp = NULL;
  return cli_daemon_exit_status(rc);
}

/* ---- parsers and printers ------------------------------------------------ */

int cli_parse_hex(const char *s, uint8_t out[64], size_t *len)
{
  size_t n = strlen(s);
  *len = 0;
  if (n == 0 || n % 2 != 0 || n > 128)
    return ARENA_EPARSE;
  if (planner_unhex(s, out, n / 2) != 0)
    return ARENA_EPARSE;
  *len = n / 2;
  return 0;
}

int cli_parse_key(const char *cmd, const char *opt, const char *v,
                  uint8_t **out, size_t *len)
{
  size_t n = strlen(v);
  *out = NULL;
  *len = 0;
  if (n == 0 || n % 2 != 0 || n / 2 > WIRE_DEFAULT_MAX_FRAME / 2)
    return cli_daemon_usage_error(cmd, "%s: '%.40s' is not an even number "
                                       "of hex digits",
                                  opt, v);
  *out = malloc(n / 2);
  if (!*out) {
    cli_error(cmd, "out of memory");
    return CLI_EX_OSERR;
  }
  if (planner_unhex(v, *out, n / 2) != 0) {
    free(*out);
    *out = NULL;
    return cli_daemon_usage_error(cmd, "%s: '%.40s' is not hex", opt, v);
  }
  *len = n / 2;
  return 0;
}

void cli_print_utc(int64_t unix_ms)
{
  time_t t = (time_t)(unix_ms / 1000);
  struct tm tm;
  char buf[32];
  if (unix_ms <= 0 || !gmtime_r(&t, &tm) ||
      strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    printf("-");
  else
    printf("%s", buf);
}

void cli_shape_cleanup(struct cli_shape *sh)
{
  free(sh->inputs);
  free(sh->dims);
  memset(sh, 0, sizeof *sh);
}

int cli_parse_shape(const char *s, struct cli_shape *sh)
{
  memset(sh, 0, sizeof *sh);
  if (!*s)
    return 0;
  size_t n_in = 1, n_dims = 1;
  for (const char *p = s; *p; p++) {
    n_in += *p == ',';
    n_dims += *p == ',' || *p == 'x';
  }
  if (n_in > WIRE_MAX_INPUTS)
    return ARENA_ETOOBIG;
  sh->inputs = calloc(n_in, sizeof *sh->inputs);
  sh->dims = calloc(n_dims, sizeof *sh->dims);
  if (!sh->inputs || !sh->dims) {
    cli_shape_cleanup(sh);
    return ARENA_ENOMEM;
  }
  size_t k = 0, in = 0;
  const char *p = s;
  sh->inputs[0].dims = sh->dims;
  for (;;) {
    /* One dim: 1..18 decimal digits. */
    int64_t v = 0;
    int nd = 0;
    while (*p >= '0' && *p <= '9' && nd < 18) {
      v = v * 10 + (*p++ - '0');
      nd++;
    }
    if (nd == 0 || (*p >= '0' && *p <= '9')) {
      cli_shape_cleanup(sh);
      return nd ? ARENA_EOVERFLOW : ARENA_EPARSE;
    }
    sh->dims[k++] = v;
    if (++sh->inputs[in].n_dims > WIRE_MAX_RANK) {
      cli_shape_cleanup(sh);
      return ARENA_ETOOBIG;
    }
    if (*p == 'x') {
      p++;
    } else if (*p == ',') {
      p++;
      sh->inputs[++in].dims = sh->dims + k;
    } else if (*p == '\0') {
      break;
    } else {
      cli_shape_cleanup(sh);
      return ARENA_EPARSE;
    }
  }
  sh->n_inputs = in + 1;
  return 0;
}

/* Whether text has a '-' before a digit: a negative dimension, which
 * cli_parse_shape() reads as a syntax error. */
static int has_negative(const char *s)
{
  for (; *s; s++)
    if (s[0] == '-' && s[1] >= '0' && s[1] <= '9')
      return 1;
  return 0;
}

int cli_shape_arg(const char *what, const char *text, struct cli_shape *sh)
{
  int rc = cli_parse_shape(text, sh);
  if (rc == 0 && sh->n_inputs > 0)
    return 0;
  if (rc == ARENA_ENOMEM) {
    cli_error(what, "out of memory");
    return CLI_EX_OSERR;
  }
  if (rc == 0 || (rc == ARENA_EPARSE && !has_negative(text))) {
    cli_shape_cleanup(sh);
    cli_error(what, "--shape '%s': %sexpected dimensions like 1x96x96x1 "
              "(inputs separated by commas) or a batch alone, like 4",
              text, *text ? "" : "no dimensions given; ");
    return CLI_EX_USAGE;
  }
  cli_error(what, "--shape '%s': %s", text,
            rc == ARENA_EPARSE      ? "a dimension is negative"
            : rc == ARENA_EOVERFLOW ? "a dimension is too large"
                                    : "too many inputs or dimensions");
  return CLI_EX_DATAERR;
}

void cli_json_str(const char *s)
{
  putchar('"');
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      printf("\\%c", ch);
    else if (ch < 0x20 || ch == 0x7f)
      printf("\\u%04x", ch);
    else
      putchar(ch);
  }
  putchar('"');
}

void cli_print_hex(const uint8_t *b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    printf("%02x", b[i]);
}

void cli_print_shape(Arenad__V1__Dims *const *d, size_t n)
{
  if (n == 0) {
    putchar('-');
    return;
  }
  for (size_t i = 0; i < n; i++) {
    if (i)
      putchar(',');
    for (size_t k = 0; d[i] && k < d[i]->n_dims; k++)
      printf("%s%lld", k ? "x" : "", (long long)d[i]->dims[k]);
  }
}

/* Prints a string the daemon sent, with control bytes replaced. */
static void print_text(const char *s)
{
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    putchar(ch < 0x20 || ch == 0x7f ? '?' : ch);
  }
}

/* ---- plan through the daemon ---------------------------------------------- */

/* Asks the daemon (Lookup) for the state of the plan stored under key k,
 * graph digest gd and options digest od into src. Returns 0, or an
 * ARENA_E* code (nothing found is ARENA_ENOENT). */
static int plan_state(arenad_client_t *c, const struct arenad_model_key *k,
                      const uint8_t *gd, const uint8_t *od,
                      struct cli_plan_source *src)
{
  struct arenad_client__shape sh;
  int rc = arenad_client__shape_init(&sh, k);
  if (rc)
    return rc;
  Arenad__V1__Lookup lm = ARENAD__V1__LOOKUP__INIT;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Response *resp = NULL;
  lm.model_hash.data = (uint8_t *)k->model_hash;
  lm.model_hash.len = k->model_hash_len;
  lm.input_shape = sh.ptrs;
  lm.n_input_shape = sh.n;
  lm.graph_digest.data = (uint8_t *)gd;
  lm.graph_digest.len = PLANNER_DIGEST_LEN;
  req.body_case = ARENAD__V1__REQUEST__BODY_LOOKUP;
  req.lookup = &lm;
  rc = arenad_client__call(c, &req, &resp);
  arenad_client__shape_cleanup(&sh);
  if (rc == 0)
    rc = arenad_client__check_status(c, resp, "lookup");
  if (rc == 0 && (resp->body_case != ARENAD__V1__RESPONSE__BODY_LOOKUP ||
                  !resp->lookup))
    rc = ARENA_EPROTO;
  for (size_t i = 0; rc == 0 && i < resp->lookup->n_plans; i++) {
    const Arenad__V1__PlanReply *r = resp->lookup->plans[i];
    if (r->options_digest.len != PLANNER_DIGEST_LEN ||
        memcmp(r->options_digest.data, od, PLANNER_DIGEST_LEN) != 0)
      continue;
    src->state_known = 1;
    src->generation = r->generation;
    src->effort = r->effort;
    src->improving = r->improving;
    break;
  }
  if (rc == 0 && !src->state_known)
    rc = ARENA_ENOENT;
  wire_free_response(resp);
  return rc;
}

static void sleep_ms(uint32_t ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static uint64_t mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Asks for the plan's state; with wait_ms, until its background work
 * ended or the time is up. Returns 1 when the wait went on past the
 * first answer (the stored plan may have changed), else 0. */
static int wait_state(arenad_client_t *c, const struct arenad_model_key *k,
                      const struct arenad_client_result *r, uint32_t wait_ms,
                      struct cli_plan_source *src)
{
  uint64_t end = mono_ms() + wait_ms;
  int polled = 0;
  for (;;) {
    src->state_known = 0;
    if (plan_state(c, k, r->graph_digest, r->options_digest, src) != 0)
      return polled;
    if (!src->improving) {
      src->wait_ended = wait_ms ? 1 : 0;
      return polled;
    }
    if (!wait_ms || mono_ms() >= end) {
      src->wait_ended = wait_ms ? 2 : 0;
      return polled;
    }
    sleep_ms(CLI_WAIT_POLL_MS);
    polled = 1;
  }
}

/* Plans g through the daemon into *r; prints and returns an exit status
 * on failure. */
static int plan_remote(const char *what, arenad_client_t *c,
                       const struct planner_graph *g,
                       const struct planner_options *o,
                       const struct arenad_model_key *k,
                       struct arenad_client_result *r)
{
  arenad_client_result_cleanup(r);
  int rc = arenad_client_plan(c, g, o, k, r);
  if (rc) {
    cli_error(what, "%s", arenad_client_errmsg(c));
    return cli_daemon_exit_status(rc);
  }
  return 0;
}

static int plan_local(const char *what, const struct planner_graph *g,
                      const struct planner_options *o, struct planner_plan *p,
                      struct cli_plan_source *src)
{
  char err[ARENA_ERR_LEN] = "";
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = planner_run(g, o, p, err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (rc) {
    cli_error(what, "%s", err[0] ? err : arena_strerror(rc));
    return cli_exit_status(rc);
  }
  src->local = 1;
  src->planning_us = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000u +
                     (uint64_t)((t1.tv_nsec - t0.tv_nsec) / 1000);
  if ((rc = planner_graph_digest_planned(g, o, src->graph_digest)) != 0) {
    planner_plan_cleanup(p);
    cli_error(what, "%s", arena_strerror(rc));
    return cli_exit_status(rc);
  }
  return 0;
}

int cli_daemon_plan(const char *what, const struct cli_daemon_args *a,
                    int local, int fallback, uint32_t wait_ms,
                    const uint8_t model_hash[32], const char *shape,
                    const struct planner_graph *g,
                    const struct planner_options *o, struct planner_plan *p,
                    struct cli_plan_source *src)
{
  struct cli_shape sh;
  int rc;
  memset(src, 0, sizeof *src);
  /* The shape is checked with or without the daemon, so that --local
   * refuses what the daemon path refuses, and as the model commands
   * check it, so that a CSV and a .tflite refuse it alike. */
  memset(&sh, 0, sizeof sh);
  if (shape && (rc = cli_shape_arg(what, shape, &sh)) != 0)
    return rc;
  if (local) {
    cli_shape_cleanup(&sh);
    return plan_local(what, g, o, p, src);
  }
  arenad_client_t *c;
  if ((rc = cli_daemon_open("plan", a, fallback, &c)) != 0) {
    cli_shape_cleanup(&sh);
    return rc;
  }
  struct arenad_model_key k = {model_hash, 32, sh.inputs, sh.n_inputs};
  struct arenad_client_result r;
  arenad_client_result_init(&r);
  rc = plan_remote(what, c, g, o, &k, &r);
  /* The state is asked only of a daemon that planned; a wait that went on
   * ends with the daemon's latest plan, verified like the first. */
  if (rc == 0 && !r.local && wait_state(c, &k, &r, wait_ms, src))
    rc = plan_remote(what, c, g, o, &k, &r);
  if (rc == 0) {
    *p = r.plan; /* moves the offsets */
    planner_plan_init(&r.plan);
    src->cached = r.cached;
    src->local = r.local;
    src->fallback_reason = r.fallback_reason;
    memcpy(src->graph_digest, r.graph_digest, sizeof src->graph_digest);
    src->planning_us = r.planning_us;
  }
  arenad_client_result_cleanup(&r);
  arenad_client_close(c);
  cli_shape_cleanup(&sh);
  return rc;
}

/* ---- ping ------------------------------------------------------------------ */

static void ping_usage(FILE *f)
{
  fprintf(f,
          "Usage: %s ping [-s PATH] [--payload TEXT] [--timeout-ms N] "
          "[--json]\n"
          "\n"
          "Sends a Ping to arenad and prints its version and the round-trip\n"
          "time. The daemon must echo the payload unchanged.\n"
          "\n"
          "Options:\n"
          "  -s, --socket PATH  daemon socket (default: $%s, else %s)\n"
          "  --payload TEXT     bytes to echo (default \"arenactl\")\n"
          "  --timeout-ms N     request timeout in milliseconds\n"
          "  --json             print one JSON object\n"
          "\n"
          "Exit status: 0 pong, 64 usage, 69 unreachable, 75 busy,\n"
          "76 protocol mismatch, 77 denied.\n",
          CLI_PROG, ARENAD_CLIENT_SOCKET_ENV, ARENAD_CLIENT_DEFAULT_SOCKET);
}

int cli_ping_main(int argc, char **argv)
{
  struct cli_daemon_args a = {0};
  const char *payload = "arenactl";
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    const char *v;
    int m;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      ping_usage(stdout);
      return cli_finish_stdout();
    }
    if (cli_daemon_option("ping", argc, argv, &i, &a, &rc)) {
      if (rc)
        return rc;
    } else if ((m = cli_opt_value(argc, argv, &i, "--payload", &v)) != 0) {
      if (m < 0)
        return CLI_EX_USAGE;
      payload = v;
    } else {
      return cli_daemon_usage_error("ping", "unexpected argument '%s'",
                                    argv[i]);
    }
  }
  arenad_client_t *c;
  if ((rc = cli_daemon_open("ping", &a, 0, &c)) != 0)
    return rc;
  Arenad__V1__Ping ping = ARENAD__V1__PING__INIT;
  ping.payload.data = (uint8_t *)payload;
  ping.payload.len = strlen(payload);
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.body_case = ARENAD__V1__REQUEST__BODY_PING;
  req.ping = &ping;
  Arenad__V1__Response *resp;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  rc = cli_daemon_call("ping", c, &req, ARENAD__V1__RESPONSE__BODY_PONG,
                       &resp);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (rc == 0) {
    const Arenad__V1__Pong *p = resp->pong;
    uint64_t us = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000u +
                  (uint64_t)((t1.tv_nsec - t0.tv_nsec) / 1000);
    if (p->payload.len != ping.payload.len ||
        memcmp(p->payload.data, payload, p->payload.len) != 0) {
      cli_error("ping", "the daemon did not echo the payload");
      rc = CLI_EX_PROTOCOL;
    } else if (a.json) {
      printf("{\"ok\":true,\"version\":");
      cli_json_str(p->version);
      printf(",\"rtt_us\":%llu,\"socket\":", (unsigned long long)us);
      cli_json_str(arenad_client__socket_path(c));
      printf("}\n");
    } else {
      printf("pong from arenad ");
      print_text(p->version);
      printf(" at %s in %.3f ms\n", arenad_client__socket_path(c),
             (double)us / 1e3);
    }
    wire_free_response(resp);
    if (rc == 0)
      rc = cli_finish_stdout();
  }
  arenad_client_close(c);
  return rc;
}

/* ---- status and stats ---------------------------------------------------- */

/* One StatsReply counter: its JSON key and where it is. */
struct counter {
  const char *name;
  size_t off; /* offset of a uint64_t field in Arenad__V1__StatsReply */
};

#define C(f) {#f, offsetof(Arenad__V1__StatsReply, f)}
static const struct counter counters[] = {
    C(connections),      C(connections_total), C(requests),
    C(plans_served),     C(memory_hits),       C(storage_hits),
    C(misses),           C(plans_computed),    C(single_flight_joined),
    C(busy_rejections),  C(denied),            C(protocol_errors),
    C(jobs_queued),      C(jobs_cancelled),    C(storage_entries),
    C(storage_bytes),    C(storage_evictions), C(storage_corrupt_dropped),
    C(storage_file_bytes), C(storage_errors),  C(lru_entries),
    C(lru_bytes),        C(verify_failures),
};
#undef C
#define N_COUNTERS (sizeof counters / sizeof counters[0])

static uint64_t counter(const Arenad__V1__StatsReply *s, size_t k)
{
  uint64_t v;
  memcpy(&v, (const char *)s + counters[k].off, sizeof v);
  return v;
}

static void print_uptime(uint64_t ms)
{
  uint64_t s = ms / 1000;
  if (s >= 86400)
    printf("%llud ", (unsigned long long)(s / 86400));
  printf("%02u:%02u:%02u", (unsigned)(s % 86400 / 3600),
         (unsigned)(s % 3600 / 60), (unsigned)(s % 60));
}

static void stats_json(const Arenad__V1__StatsReply *s, int all)
{
  printf("{\"version\":");
  cli_json_str(s->version);
  printf(",\"pid\":%llu,\"uptime_ms\":%llu,\"socket\":",
         (unsigned long long)s->pid, (unsigned long long)s->uptime_ms);
  cli_json_str(s->socket_path);
  printf(",\"database\":");
  cli_json_str(s->db_path);
  printf(",\"workers\":%u,\"storage_ok\":%s,\"storage_error\":",
         (unsigned)s->workers, s->storage_ok ? "true" : "false");
  cli_json_str(s->storage_error);
  for (size_t k = 0; k < N_COUNTERS; k++) {
    /* status keeps to the counters a person checks first. */
    if (!all && k > 7)
      break;
    printf(",\"%s\":%llu", counters[k].name,
           (unsigned long long)counter(s, k));
  }
  printf("}\n");
}

static void status_text(const Arenad__V1__StatsReply *s)
{
  printf("daemon:      arenad ");
  print_text(s->version);
  printf(" (pid %llu)\nuptime:      ", (unsigned long long)s->pid);
  print_uptime(s->uptime_ms);
  printf("\nsocket:      ");
  print_text(s->socket_path);
  printf("\ndatabase:    ");
  print_text(s->db_path);
  printf(" (%s", s->storage_ok ? "ok" : "failing");
  if (!s->storage_ok && s->storage_error && *s->storage_error) {
    printf(": ");
    print_text(s->storage_error);
  }
  printf(")\nworkers:     %u\n", (unsigned)s->workers);
  printf("connections: %llu open, %llu in total\n",
         (unsigned long long)s->connections,
         (unsigned long long)s->connections_total);
  printf("requests:    %llu, plans served %llu\n",
         (unsigned long long)s->requests,
         (unsigned long long)s->plans_served);
  uint64_t hits = s->memory_hits + s->storage_hits;
  uint64_t all = hits + s->misses;
  printf("cache:       %llu hits (%llu memory, %llu storage), %llu misses",
         (unsigned long long)hits, (unsigned long long)s->memory_hits,
         (unsigned long long)s->storage_hits,
         (unsigned long long)s->misses);
  if (all)
    printf(", hit rate %.1f%%", 100.0 * (double)hits / (double)all);
  printf("\nstored:      %llu plans, %llu bytes\n",
         (unsigned long long)s->storage_entries,
         (unsigned long long)s->storage_bytes);
}

static void stats_text(const Arenad__V1__StatsReply *s)
{
  printf("version: ");
  print_text(s->version);
  printf("\npid: %llu\nuptime_ms: %llu\nsocket: ", (unsigned long long)s->pid,
         (unsigned long long)s->uptime_ms);
  print_text(s->socket_path);
  printf("\ndatabase: ");
  print_text(s->db_path);
  printf("\nworkers: %u\nstorage_ok: %s\n", (unsigned)s->workers,
         s->storage_ok ? "yes" : "no");
  if (s->storage_error && *s->storage_error) {
    printf("storage_error: ");
    print_text(s->storage_error);
    putchar('\n');
  }
  for (size_t k = 0; k < N_COUNTERS; k++)
    printf("%s: %llu\n", counters[k].name, (unsigned long long)counter(s, k));
}

static void stats_usage(FILE *f, const char *cmd)
{
  int st = strcmp(cmd, "status") == 0;
  fprintf(f,
          "Usage: %s %s [-s PATH] [--timeout-ms N] [--json]\n"
          "\n"
          "%s\n"
          "\n"
          "Options:\n"
          "  -s, --socket PATH  daemon socket (default: $%s, else %s)\n"
          "  --timeout-ms N     request timeout in milliseconds\n"
          "  --json             print one JSON object\n"
          "\n"
          "Exit status: 0 ok, 64 usage, 69 unreachable, 75 busy,\n"
          "76 protocol mismatch, 77 denied.\n",
          CLI_PROG, cmd,
          st ? "Prints the daemon's version, uptime, pid, socket, database "
               "and the\nmain counters."
             : "Prints every counter the daemon keeps, one per line.",
          ARENAD_CLIENT_SOCKET_ENV, ARENAD_CLIENT_DEFAULT_SOCKET);
}

/* `status` and `stats`: the same request, printed briefly or in full. */
static int stats_cmd(const char *cmd, int argc, char **argv)
{
  struct cli_daemon_args a = {0};
  int rc = 0, all = strcmp(cmd, "stats") == 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      stats_usage(stdout, cmd);
      return cli_finish_stdout();
    }
    if (cli_daemon_option(cmd, argc, argv, &i, &a, &rc)) {
      if (rc)
        return rc;
    } else {
      return cli_daemon_usage_error(cmd, "unexpected argument '%s'", argv[i]);
    }
  }
  arenad_client_t *c;
  if ((rc = cli_daemon_open(cmd, &a, 0, &c)) != 0)
    return rc;
  Arenad__V1__Stats st = ARENAD__V1__STATS__INIT;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  req.body_case = ARENAD__V1__REQUEST__BODY_STATS;
  req.stats = &st;
  Arenad__V1__Response *resp;
  rc = cli_daemon_call(cmd, c, &req, ARENAD__V1__RESPONSE__BODY_STATS, &resp);
  if (rc == 0) {
    if (a.json)
      stats_json(resp->stats, all);
    else if (all)
      stats_text(resp->stats);
    else
      status_text(resp->stats);
    wire_free_response(resp);
    rc = cli_finish_stdout();
  }
  arenad_client_close(c);
  return rc;
}

int cli_status_main(int argc, char **argv)
{
  return stats_cmd("status", argc, argv);
}

int cli_stats_main(int argc, char **argv)
{
  return stats_cmd("stats", argc, argv);
}

/*
 * cli_daemon.c - arenactl's link to arenad: the helpers every daemon
 * subcommand shares (see cli_daemon.h) and the global -s option.
 * Planning through the daemon is cli_plan_daemon.c; `ping`, `status`
 * and `stats` are cli_status.c.
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

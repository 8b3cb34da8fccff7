/*
 * main.c - arenad's command line: options, configuration, then the
 * service (server.c).
 *
 * Exit status: 0 after a clean shutdown or a successful --check-config,
 * 1 when the service could not start, 64 for bad usage (also a value an
 * option gives that the configuration refuses, like a socket path too
 * long for -s), 78 for a bad configuration (sysexits EX_CONFIG; also a
 * database whose folder does not exist).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena_version.h"
#include "config.h"
#include "server.h"

#define EXIT_USAGE 64
#define EXIT_CONFIG 78
#define MAX_OVERRIDES 8

static void usage(FILE *f)
{
  fprintf(f,
          "Usage: arenad [OPTIONS]\n"
          "Serve verified arena plans to inference processes over a Unix "
          "socket.\n\n"
          "Options:\n"
          "  -c, --config FILE      ini configuration (default %s;\n"
          "                         a missing default file means built-in "
          "defaults)\n"
          "  -s, --socket PATH      listen here (default %s)\n"
          "  -d, --db PATH          plan cache database (default %s)\n"
          "  -w, --workers N        threads for long searches (default 2;\n"
          "                         one more serves everything else)\n"
          "  -l, --log-level LEVEL  error, warning, notice, info or debug\n"
          "      --check-config     validate, print the effective "
          "configuration, exit\n"
          "  -h, --help             show this help\n"
          "  -V, --version          show the version\n\n"
          "Signals: SIGTERM/SIGINT drain and exit 0; SIGHUP reloads the "
          "configuration.\n"
          "See arenad(8) and arenad.conf(5).\n",
          DAEMON_DEFAULT_CONFIG, DAEMON_DEFAULT_SOCKET, DAEMON_DEFAULT_DB);
}

struct cli {
  const char *config;     /* --config, or NULL */
  int check_only;         /* --check-config */
  const char *ov[3 * MAX_OVERRIDES]; /* section, key, value triples */
  int n_ov;
};

static int parse_args(int argc, char **argv, struct cli *cl)
{
  static const struct option opts[] = {
      {"config", required_argument, NULL, 'c'},
      {"socket", required_argument, NULL, 's'},
      {"db", required_argument, NULL, 'd'},
      {"workers", required_argument, NULL, 'w'},
      {"log-level", required_argument, NULL, 'l'},
      {"check-config", no_argument, NULL, 'C'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0},
  };
  int ch;
  while ((ch = getopt_long(argc, argv, "c:s:d:w:l:hV", opts, NULL)) != -1) {
    const char *key = NULL;
    switch (ch) {
    case 'c':
      cl->config = optarg;
      continue;
    case 'C':
      cl->check_only = 1;
      continue;
    case 'h':
      usage(stdout);
      exit(0);
    case 'V':
      printf("arenad %s\n", ARENA_VERSION);
      exit(0);
    case 's':
      key = "socket";
      break;
    case 'd':
      key = "database";
      break;
    case 'w':
      key = "workers";
      break;
    case 'l':
      key = "log_level";
      break;
    default:
      usage(stderr);
      return EXIT_USAGE;
    }
    cl->ov[3 * cl->n_ov] = "daemon";
    cl->ov[3 * cl->n_ov + 1] = key;
    cl->ov[3 * cl->n_ov + 2] = optarg;
    cl->n_ov++;
    if (cl->n_ov == MAX_OVERRIDES) {
      fprintf(stderr, "arenad: too many options\n");
      return EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "arenad: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return EXIT_USAGE;
  }
  return 0;
}

static int build_config(const struct cli *cl, struct daemon_config *c,
                        const char **used_path)
{
  char err[ARENA_ERR_LEN];
  daemon_config_defaults(c);
  const char *path = cl->config ? cl->config : DAEMON_DEFAULT_CONFIG;
  int rc = daemon_config_load(c, path, err);
  *used_path = rc == 0 ? path : NULL;
  if (rc == ARENA_ENOENT && !cl->config)
    rc = 0; /* no default file: built-in defaults */
  if (rc) {
    fprintf(stderr, "arenad: %s\n", err);
    return EXIT_CONFIG;
  }
  struct daemon_config file = *c;
  for (int i = 0; i < cl->n_ov; i++)
    if (daemon_config_set(c, cl->ov[3 * i], cl->ov[3 * i + 1],
                          cl->ov[3 * i + 2], err)) {
      fprintf(stderr, "arenad: option: %s\n", err);
      return EXIT_USAGE;
    }
  if (daemon_config_validate(c, err)) {
    /* Wrong because of an option (a socket path too long for -s, say),
     * when the file alone is right: a usage error, like a bad option. */
    int options = cl->n_ov && daemon_config_validate(&file, NULL) == 0;
    fprintf(stderr, "arenad: %s: %s\n", options ? "option" : "configuration",
            err);
    return options ? EXIT_USAGE : EXIT_CONFIG;
  }
  return 0;
}

int main(int argc, char **argv)
{
  struct cli cl;
  memset(&cl, 0, sizeof cl);
  int rc = parse_args(argc, argv, &cl);
  if (rc)
    return rc;
  struct daemon_config cfg;
  const char *used = NULL;
  if ((rc = build_config(&cl, &cfg, &used)))
    return rc;
  char warn[256];
  if (cl.check_only && daemon_config_deprecation(&cfg, warn, sizeof warn))
    fprintf(stderr, "arenad: warning: %s\n", warn);
  if (cl.check_only) {
    printf("# effective configuration%s%s\n", used ? " from " : " (defaults",
           used ? used : ", no file)");
    daemon_config_print(&cfg, stdout);
    return 0;
  }
  char err[ARENA_ERR_LEN];
  if ((rc = daemon_config_check_paths(&cfg, err)) != 0) {
    fprintf(stderr, "arenad: configuration: %s%s\n", err,
            rc == ARENA_ENOENT ? "; create it, or give another path" : "");
    return EXIT_CONFIG;
  }
  struct server_reload rl = {used, cl.ov, cl.n_ov};
  return server_run(&cfg, &rl);
}

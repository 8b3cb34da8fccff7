/*
 * arenactl.c - entry point of the arenactl command-line tool: global
 * options and the table of subcommands.
 *
 * To add a subcommand, write client/cli/cli_<name>.c with
 * `int cli_<name>_main(int argc, char **argv)`, declare it in cli.h and
 * add one row to `commands` below; the Makefile picks up the new file.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* One subcommand. */
struct cli_command {
  const char *name;                  /* as typed after "arenactl" */
  int (*main)(int argc, char **argv); /* argv[0] is the name */
  const char *summary;               /* one line for --help */
};

static const struct cli_command commands[] = {
    {"plan", cli_plan_main, "plan arena offsets for a lifetime-graph CSV"},
    {"import", cli_import_main, "convert a .tflite model to a lifetime-graph CSV"},
    {"embed", cli_embed_main, "write a plan into a .tflite model for TFLite Micro"},
    {"get", cli_get_main, "show the plans arenad stores for a model and shape"},
    {"ls", cli_ls_main, "list the plans in arenad's cache"},
    {"evict", cli_evict_main, "remove plans from arenad's cache"},
    {"ping", cli_ping_main, "check that arenad answers"},
    {"status", cli_status_main, "show arenad's version, uptime and main counters"},
    {"stats", cli_stats_main, "show every counter arenad keeps"},
    {"export", cli_export_main, "write arenad's stored plans to a plan bundle"},
    {"preload", cli_preload_main, "store the plans of a plan bundle in arenad"},
    {"bundle-info", cli_bundle_info_main, "show what a plan bundle holds"},
    {"explain", cli_explain_main, "show where a graph's memory goes and why"},
    {"render", cli_render_main, "draw a plan as SVG or an HTML page"},
    {"diff", cli_diff_main, "compare two plans, graphs or models"},
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
  fprintf(f,
          "Usage: %s [-s SOCKET] COMMAND [options] [args]\n"
          "       %s --help | --version\n"
          "\n"
          "Memory planning for on-device neural-network inference.\n"
          "\n"
          "Commands:\n",
          CLI_PROG, CLI_PROG);
  for (size_t i = 0; i < N_COMMANDS; i++)
    fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\nRun '%s COMMAND --help' for the options of one command.\n",
          CLI_PROG);
}

static const struct cli_command *find(const char *name)
{
  for (size_t i = 0; i < N_COMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

/* arenactl runs one command and exits, and its large arrays (the input
 * read, the tensors parsed, the planner's indexes, orders and
 * placements) come and go phase after phase. Each page of memory new to
 * the process costs a page fault when first written, which on 10^6
 * tensors was a fifth of `arenactl plan`'s time (docs/planner.md, "End
 * to end"). So with glibc, memory freed stays with the process, in its
 * heap, for the next phase to reuse, instead of being handed back to
 * the kernel (blocks above the mmap threshold are, at free()). */
static void keep_freed_memory(void)
{
#ifdef __GLIBC__
  mallopt(M_MMAP_MAX, 0);               /* every block from the heap */
  mallopt(M_TRIM_THRESHOLD, 1 << 30);   /* its top kept up to 1 GiB */
#endif
}

int main(int argc, char **argv)
{
  keep_freed_memory();
  int shift = cli_global_options(argc, argv); /* -s PATH */
  if (shift < 0)
    return CLI_EX_USAGE;
  argc -= shift;
  argv += shift;
  if (argc < 2) {
    usage(stderr);
    return CLI_EX_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 ||
      strcmp(cmd, "help") == 0) {
    usage(stdout);
    return cli_finish_stdout();
  }
  if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
    printf("%s %s\n", CLI_PROG, CLI_VERSION);
    return cli_finish_stdout();
  }
  const struct cli_command *c = find(cmd);
  if (!c) {
    cli_error(NULL, "unknown command '%s' (try '%s --help')", cmd, CLI_PROG);
    return CLI_EX_USAGE;
  }
  return c->main(argc - 1, argv + 1);
}

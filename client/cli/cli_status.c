/*
 * cli_status.c - the subcommands `ping`, `status` and `stats`: a Ping
 * with its round trip, and the daemon's Stats as text or JSON.
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
      cli_print_json(stdout, p->version);
      printf(",\"rtt_us\":%llu,\"socket\":", (unsigned long long)us);
      cli_print_json(stdout, arenad_client__socket_path(c));
      printf("}\n");
    } else {
      printf("pong from arenad ");
      cli_print_text(stdout, p->version);
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
    C(lru_bytes),        C(verify_failures),   C(improve_active),
    C(improve_runs),     C(improve_gains),     C(improve_cpu_ms),
    C(stalled_closes),   C(reply_refusals),
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
  cli_print_json(stdout, s->version);
  printf(",\"pid\":%llu,\"uptime_ms\":%llu,\"socket\":",
         (unsigned long long)s->pid, (unsigned long long)s->uptime_ms);
  cli_print_json(stdout, s->socket_path);
  printf(",\"database\":");
  cli_print_json(stdout, s->db_path);
  printf(",\"workers\":%u,\"storage_ok\":%s,\"storage_error\":",
         (unsigned)s->workers, s->storage_ok ? "true" : "false");
  cli_print_json(stdout, s->storage_error);
  for (size_t k = 0; k < N_COUNTERS; k++) {
    /* status keeps to the counters a person checks first. */
    if (!all && k > 7)
      break;
    printf(",\"%s\":%llu", counters[k].name,
           (unsigned long long)counter(s, k));
  }
  if (all)
    printf(",\"improve_enabled\":%s", s->improve_enabled ? "true" : "false");
  printf("}\n");
}

static void status_text(const Arenad__V1__StatsReply *s)
{
  printf("daemon:      arenad ");
  cli_print_text(stdout, s->version);
  printf(" (pid %llu)\nuptime:      ", (unsigned long long)s->pid);
  print_uptime(s->uptime_ms);
  printf("\nsocket:      ");
  cli_print_text(stdout, s->socket_path);
  printf("\ndatabase:    ");
  cli_print_text(stdout, s->db_path);
  printf(" (%s", s->storage_ok ? "ok" : "failing");
  if (!s->storage_ok && s->storage_error && *s->storage_error) {
    printf(": ");
    cli_print_text(stdout, s->storage_error);
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
  printf("cache:       %llu hit%s (%llu memory, %llu storage), %llu miss%s",
         (unsigned long long)hits, CLI_PLURAL(hits),
         (unsigned long long)s->memory_hits,
         (unsigned long long)s->storage_hits, (unsigned long long)s->misses,
         s->misses == 1 ? "" : "es");
  if (all)
    printf(", hit rate %.1f%%", 100.0 * (double)hits / (double)all);
  printf("\nstored:      %llu plan%s, %llu byte%s\n",
         (unsigned long long)s->storage_entries,
         CLI_PLURAL(s->storage_entries),
         (unsigned long long)s->storage_bytes, CLI_PLURAL(s->storage_bytes));
}

static void stats_text(const Arenad__V1__StatsReply *s)
{
  printf("version: ");
  cli_print_text(stdout, s->version);
  printf("\npid: %llu\nuptime_ms: %llu\nsocket: ", (unsigned long long)s->pid,
         (unsigned long long)s->uptime_ms);
  cli_print_text(stdout, s->socket_path);
  printf("\ndatabase: ");
  cli_print_text(stdout, s->db_path);
  printf("\nworkers: %u\nstorage_ok: %s\n", (unsigned)s->workers,
         s->storage_ok ? "yes" : "no");
  if (s->storage_error && *s->storage_error) {
    printf("storage_error: ");
    cli_print_text(stdout, s->storage_error);
    putchar('\n');
  }
  printf("improve_enabled: %s\n", s->improve_enabled ? "yes" : "no");
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

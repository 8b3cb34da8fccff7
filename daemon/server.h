/*
 * server.h - arenad's service: the libuv loop, the Unix-socket listener,
 * connections, planning jobs, the caches, signals and systemd
 * notification.
 *
 * One call runs the whole service until SIGTERM/SIGINT drains it.
 */
#ifndef ARENA_DAEMON_SERVER_H
#define ARENA_DAEMON_SERVER_H

#include "config.h"

/* How to rebuild the configuration on SIGHUP: re-read config_path (when
 * non-NULL) over the defaults, then re-apply the command-line overrides
 * (n_overrides triples of section, key, value; all borrowed and alive for
 * the whole run). */
struct server_reload {
  const char *config_path;
  const char *const *overrides;
  int n_overrides;
};

/* Runs arenad with configuration cfg (copied) until it is told to stop.
 * Returns the process exit status: 0 after a clean drain, 1 when it could
 * not start (the reason has been logged). */
int server_run(const struct daemon_config *cfg,
               const struct server_reload *reload);

#endif

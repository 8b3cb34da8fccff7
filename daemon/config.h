/*
 * config.h - arenad's configuration: defaults, the ini file
 * (/etc/arenad/arenad.conf, read with libinih), command-line overrides,
 * validation, and printing the effective values.
 *
 * A struct daemon_config is a plain value: the server copies what it needs
 * and SIGHUP builds a fresh one, so no pointer into a config outlives it.
 * Allow-lists are fixed-size arrays so the struct can be copied whole.
 */
#ifndef ARENA_DAEMON_CONFIG_H
#define ARENA_DAEMON_CONFIG_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "arena_error.h"

#define DAEMON_DEFAULT_CONFIG "/etc/arenad/arenad.conf"
#define DAEMON_DEFAULT_SOCKET "/run/arenad/arenad.sock"
#define DAEMON_DEFAULT_DB "/var/lib/arenad/cache.db"
#define DAEMON_DEFAULT_PRELOAD_DIR "/etc/arenad/bundles"
#define DAEMON_MAX_ALLOW 64 /* entries per allow-list */
#define DAEMON_PATH_MAX 512 /* bytes, including the NUL */
#define DAEMON_EFFORT_MAX 3600000u /* effort units a config may name */

struct daemon_config {
  char socket_path[DAEMON_PATH_MAX];
  char db_path[DAEMON_PATH_MAX];
  char preload_dir[DAEMON_PATH_MAX]; /* bundles read at start; "" none */
  char log_level[16];             /* dlog level name */
  unsigned workers;               /* planning threads, 1..128 */
  unsigned max_connections;       /* open connections at once */
  unsigned max_connections_per_uid; /* open connections of one peer uid */
  unsigned max_inflight_per_conn; /* unanswered requests per connection */
  unsigned max_queued_jobs;       /* planning jobs queued or running */
  uint64_t max_frame_bytes;       /* largest request frame */
  uint64_t request_mem_bytes;     /* decoded size of one request */
  uint64_t max_tensors;           /* tensors in one graph */
  uint64_t write_queue_bytes;     /* unsent reply bytes before reads stop */
  uint64_t write_queue_max_bytes; /* unsent reply bytes of one connection
                                     beyond which a reply is answered
                                     BUSY instead */
  uint64_t write_queue_max_bytes_per_uid; /* the same over all the
                                     connections of one peer uid */
  uint64_t idle_timeout_ms;       /* close a silent, idle connection */
  uint64_t handshake_timeout_ms;  /* close a connection that sent no
                                     complete frame by then (or by
                                     idle_timeout_ms, if sooner) */
  uint64_t drain_timeout_ms;      /* SIGTERM: wait this long for jobs */
  uint32_t default_effort;        /* exact-search effort when a request
                                     sets none; 0 = PLANNER_DEFAULT_EFFORT */
  uint32_t max_effort;            /* cap on any request's effort, >= 1 */
  uint64_t memory_cache_bytes;    /* hot-plan LRU cap */
  uint64_t memory_cache_entries;  /* hot-plan LRU entry cap */
  uint64_t db_max_bytes;          /* storage byte cap */
  uint64_t db_max_entries;        /* storage entry cap */
  unsigned improve_enabled;       /* 1: improve stored plans in the
                                     background (background.h) */
  unsigned improve_threads;       /* 0 = workers; fixed at start */
  uint32_t improve_max_effort;    /* top of the effort ladder */
  uint64_t improve_max_tensors;   /* larger graphs are not improved */
  uint64_t improve_window_tensors; /* larger graphs are improved one
                                      window of this many tensors at a
                                      time; smaller ones whole */
  uint64_t improve_run_cpu_ms;    /* CPU one background step may use */
  uint64_t improve_cpu_ms_per_hour; /* CPU all steps may use per hour */
  uid_t allow_uids[DAEMON_MAX_ALLOW]; /* empty = any uid */
  unsigned n_allow_uids;
  gid_t allow_gids[DAEMON_MAX_ALLOW]; /* empty = any gid */
  unsigned n_allow_gids;
  /* The last deprecated key that set a value, "section.key", and the key
   * that replaces it: static strings, or NULL when none was used. */
  const char *deprecated_key, *replaced_by;
};

/* Fills c with the built-in defaults. */
void daemon_config_defaults(struct daemon_config *c);

/* Reads an ini file into c (keys not in the file keep their values).
 * Returns 0, ARENA_ENOENT (file missing), ARENA_EIO (cannot read it),
 * ARENA_EPARSE (syntax error, unknown key, bad value, a key the file
 * sets twice, or a NUL byte anywhere, found before any key is read; err
 * names the line and key). On failure c may hold the values read before
 * the bad line. */
int daemon_config_load(struct daemon_config *c, const char *path,
                       char err[ARENA_ERR_LEN]);

/* Sets one key ("section.key" or a bare key) from text, as the ini file
 * would (a later call for the same key wins: command-line overrides).
 * Returns 0 or ARENA_EPARSE with err explaining. */
int daemon_config_set(struct daemon_config *c, const char *section,
                      const char *key, const char *value,
                      char err[ARENA_ERR_LEN]);

/* Checks cross-field rules (paths set, limits non-zero, level known,
 * the default effort at most max_effort).
 * Returns 0 or ARENA_EINVAL with err explaining. */
int daemon_config_validate(const struct daemon_config *c,
                           char err[ARENA_ERR_LEN]);

/* Checks what the paths of c need from the machine at start: that the
 * folder of daemon.database exists (arenad creates the file, never its
 * folder: a mistyped path must not make folders; the systemd unit's
 * StateDirectory= makes /var/lib/arenad). Not part of
 * daemon_config_validate, which checks the text alone (--check-config
 * may run where the service's folders are not made yet). Returns 0,
 * ARENA_ENOENT (missing) or ARENA_EINVAL (not a folder), with err
 * explaining. */
int daemon_config_check_paths(const struct daemon_config *c,
                              char err[ARENA_ERR_LEN]);

/* Writes a one-line warning into buf (len bytes) when a deprecated key
 * set a value of c. Returns 1 when it wrote one, 0 when there is none. */
int daemon_config_deprecation(const struct daemon_config *c, char *buf,
                              size_t len);

/* Writes the effective configuration as an ini file to f. */
void daemon_config_print(const struct daemon_config *c, FILE *f);

#endif

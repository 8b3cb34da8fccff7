/*
 * daemon_harness.h - starts a real arenad on a temporary socket and
 * database for integration tests, and speaks the raw wire protocol to it.
 *
 * Every helper returns owned memory or handles that the caller releases
 * with the paired call. Timeouts keep a broken daemon from hanging tests.
 */
#ifndef ARENA_DAEMON_HARNESS_H
#define ARENA_DAEMON_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arenad.pb-c.h"
#include "planner.h"

struct harness {
  char *dir;          /* temp dir, owned */
  char sock[256];     /* socket path */
  char db[256];       /* database path */
  char conf[256];     /* config file path */
  char log[256];      /* daemon stderr */
  pid_t pid;          /* 0 when not running */
};

/* Creates the temp dir and writes extra_conf (ini text, may be NULL)
 * as the config file. Returns 0 or -1. */
int hn_init(struct harness *h, const char *extra_conf);
/* Rewrites the config file: the harness's socket, database and log level
 * (debug, unless extra_conf sets log_level), then extra_conf (may be
 * NULL). arenad refuses a key set twice, so a test that changes a value
 * for SIGHUP rewrites the file rather than appending. Returns 0 or -1. */
int hn_write_conf(const struct harness *h, const char *extra_conf);
/* Starts arenad ($ARENAD, which tests/run.sh and the Makefile set from
 * BUILD; tu_bin() aborts when it is unset) and waits until it accepts. */
int hn_start(struct harness *h);
/* SIGTERM and wait; returns the exit status, or -1 on a timeout/crash. */
int hn_stop(struct harness *h);
/* Stops if running and removes the temp dir. */
void hn_cleanup(struct harness *h);
/* The daemon's RSS in KiB from /proc, or 0. */
long hn_rss_kib(const struct harness *h);
/* How many times the daemon's log holds what (0 when there is no log). */
int hn_log_count(const struct harness *h, const char *what);

/* Connects to the daemon. Returns an fd or -1. */
int hn_connect(const struct harness *h);
/* Sends raw bytes. Returns 0 or -1. */
int hn_send_raw(int fd, const void *buf, size_t len);
/* Packs and sends a request. Returns 0 or -1. */
int hn_send(int fd, const Arenad__V1__Request *req);
/* Reads one response within timeout_ms. Returns an owned response (free
 * with wire_free_response) or NULL on EOF, timeout or garbage. */
Arenad__V1__Response *hn_recv(int fd, int timeout_ms);
/* Whether the peer closed the connection within timeout_ms (reads and
 * discards anything before the EOF). */
int hn_wait_closed(int fd, int timeout_ms);

/* A graph with its request message, for tests. Owned arrays inside. */
struct hn_graph {
  struct planner_tensor *t;
  size_t n;
};
/* Loads a lifetime CSV from tests/data. Returns 0 or -1. */
int hn_load_csv(const char *path, struct hn_graph *g);
/* A random chain-like graph of n tensors (deterministic from seed). */
void hn_random_graph(struct hn_graph *g, size_t n, uint64_t seed);
void hn_graph_free(struct hn_graph *g);

/* Packs one Plan request frame for g; returns it owned (free()) with its
 * length in *len, or NULL. */
uint8_t *hn_plan_frame(uint64_t request_id, const struct hn_graph *g,
                       const char *model_hash, int algo, uint64_t alignment,
                       uint32_t effort, size_t *len);
/* Sends one Plan request for g (algorithm, alignment, effort) under a
 * model hash string. Returns 0 or -1. */
int hn_send_plan(int fd, uint64_t request_id, const struct hn_graph *g,
                 const char *model_hash, int algo, uint64_t alignment,
                 uint32_t effort);
/* Sends a Stats request and returns the reply (owned) or NULL. */
Arenad__V1__Response *hn_stats(const struct harness *h);
/* Sends req on fd and reads one reply within timeout_ms. Returns it
 * owned (wire_free_response) or NULL. */
Arenad__V1__Response *hn_call(int fd, const Arenad__V1__Request *req,
                              int timeout_ms);
/* Sends a Ping with request id rid on fd and reads one reply within
 * timeout_ms. Returns it owned (wire_free_response) or NULL. */
Arenad__V1__Response *hn_ping(int fd, uint64_t rid, int timeout_ms);
/* Checks that r is an OK PlanReply whose offsets verify against g under
 * the default options. Returns 0, or -1 with err (ARENA_ERR_LEN bytes)
 * saying why. */
int hn_plan_reply_ok(const Arenad__V1__Response *r, const struct hn_graph *g,
                     char *err);
/* Lists the cache (most used first when most_used, else newest first; at
 * most 100 entries) on a new connection. Returns the reply (owned) or
 * NULL. */
Arenad__V1__Response *hn_list(const struct harness *h, int most_used);

#endif

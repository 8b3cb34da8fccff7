/*
 * server.c - arenad's lifecycle: opening storage, the listening socket
 * (bound here once the lock beside it is ours, see sockguard.h, or
 * inherited from systemd), signals, systemd notification and the
 * watchdog, SIGHUP reloads, and the graceful drain on SIGTERM.
 *
 * Shutdown order: stop accepting (remove the socket file, then let go
 * of its lock, so that a new daemon may start at once), stop reading,
 * let queued and running jobs finish and replies flush (up to
 * drain_timeout_ms, then cancel), close every handle, run the loop dry,
 * write the hot cache's last use counts (uses.c), then flush and close
 * storage.
 *
 * The top of daemon/'s layers (report.h): it calls conn.c, jobs.c and
 * uses.c, and none of them calls it. Before anything runs it fills
 * s->report, through which connections and jobs report back: its own
 * drain check and Stats counters, and conn.c's reply entries.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "arena_version.h"
#include "memory.h"
#include "bundles.h"
#include "server_int.h"

#define TICK_MS_DEFAULT 2000
/* How long a new daemon waits for the holder of the socket's lock, or a
 * listener on the path, that does not answer a Ping to go away: a daemon
 * that was killed lets go once the kernel has finished with it. */
#define TAKEOVER_WAIT_MS 10000

static void storage_log(void *ctx, enum storage_log_level level,
                        const char *msg)
{
  struct server *s = ctx;
  dlog(&s->log,
       level == STORAGE_LOG_ERROR  ? DLOG_ERR
       : level == STORAGE_LOG_WARN ? DLOG_WARNING
                                   : DLOG_INFO,
       "storage: %s", msg);
}

static void stop_improver(struct server *s);

static void improve_config_of(const struct daemon_config *cfg,
                              struct improve_config *ic)
{
  ic->enabled = cfg->improve_enabled != 0;
  ic->threads = cfg->improve_threads ? cfg->improve_threads : cfg->workers;
  ic->max_effort = cfg->improve_max_effort;
  ic->max_tensors = cfg->improve_max_tensors;
  ic->window_tensors = cfg->improve_window_tensors;
  ic->run_cpu_ms = cfg->improve_run_cpu_ms;
  ic->cpu_ms_per_hour = cfg->improve_cpu_ms_per_hour;
}

static void apply_config(struct server *s, const struct daemon_config *cfg)
{
  enum dlog_level lvl = DLOG_INFO;
  char warn[256];
  s->cfg = *cfg;
  dlog_parse_level(cfg->log_level, &lvl);
  dlog_set_level(&s->log, lvl);
  if (daemon_config_deprecation(cfg, warn, sizeof warn))
    dlog(&s->log, DLOG_WARNING, "configuration: %s", warn);
  wire_limits_init(&s->limits);
  s->limits.max_tensors = cfg->max_tensors;
  if (s->hot)
    hotcache_set_caps(s->hot, cfg->memory_cache_bytes,
                      cfg->memory_cache_entries);
  if (s->improver) {
    struct improve_config ic;
    improve_config_of(cfg, &ic);
    improve_configure(s->improver, &ic);
  }
}

/* Makes the parent directory of the socket path when it is missing (one
 * level), as /run/arenad is lost at every boot. The database's folder is
 * never made (main.c refuses to start without it). */
static void make_parent(const char *path)
{
  char dir[DAEMON_PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir)
    return;
  *slash = '\0';
  if (mkdir(dir, 0750) != 0 && errno != EEXIST)
    return;
}

static int open_storage(struct server *s)
{
  struct storage_options so;
  storage_options_init(&so);
  so.max_bytes = s->cfg.db_max_bytes;
  so.max_entries = s->cfg.db_max_entries;
  so.log = storage_log;
  so.log_ctx = s;
  char err[ARENA_ERR_LEN] = "";
  int rc = storage_open(s->cfg.db_path, &so, &s->st, err);
  if (rc) {
    s->storage_ok = 0;
    snprintf(s->storage_err, sizeof s->storage_err, "open: %s", err);
    dlog(&s->log, DLOG_ERR,
         "cannot open the cache database %s: %s; serving without it",
         s->cfg.db_path, err);
    return rc;
  }
  s->storage_ok = 1;
  return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
  struct server *s = server->data;
  if (status < 0) {
    dlog(&s->log, DLOG_WARNING, "accept failed: %s", uv_strerror(status));
    return;
  }
  conn_accept(s);
}

static int bind_socket(struct server *s)
{
  const char *path = s->cfg.socket_path;
  char err[ARENA_ERR_LEN] = "";
  make_parent(path); /* the lock file lives there too */
  if (sockguard_claim(&s->guard, path, TAKEOVER_WAIT_MS, &s->log, err)) {
    dlog(&s->log, DLOG_ERR, "%s", err);
    return -1;
  }
  mode_t old = umask(0117); /* the socket is born 0660 */
  int rc = uv_pipe_bind(&s->listener, path);
  umask(old);
  if (rc == 0) {
    s->bound = 1;
    chmod(path, 0660);
  }
  else
    dlog(&s->log, DLOG_ERR, "cannot bind %s: %s", path, uv_strerror(rc));
  return rc;
}

/* Under socket activation: takes the lock beside the socket systemd
 * passed, so that an arenad started by hand on that path sees it is
 * served; without it (another holder, no file name, no access) the
 * socket is served all the same. */
static void lock_activated(struct server *s)
{
  struct sockaddr_un a;
  socklen_t len = sizeof a;
  char err[ARENA_ERR_LEN] = "";
  memset(&a, 0, sizeof a);
  if (getsockname(SD_LISTEN_FDS_START, (struct sockaddr *)&a, &len) != 0 ||
      a.sun_family != AF_UNIX || a.sun_path[0] == '\0' ||
      len >= sizeof a) /* unnamed, abstract or unterminated */
    return;
  if (sockguard_try(&s->guard, a.sun_path, err))
    dlog(&s->log, DLOG_WARNING, "%s; serving the socket from systemd anyway",
         err);
}

/* Stops serving the socket path: removes the socket file we created,
 * then lets go of the lock, in that order, so that a daemon that takes
 * the lock next finds the path free. Done when the drain begins, so a
 * new daemon may start while this one finishes its jobs. */
static void release_path(struct server *s)
{
  if (s->bound)
    unlink(s->cfg.socket_path);
  s->bound = 0;
  sockguard_release(&s->guard);
}

/* Binds (or adopts systemd's socket); listening starts later, once the
 * cache is open. */
static int open_listener(struct server *s)
{
  uv_pipe_init(&s->loop, &s->listener, 0);
  s->listener.data = s;
  s->listening = 1;
  if (sd_listen_fds(1) <= 0)
    return bind_socket(s);
  s->activated = 1;
  lock_activated(s);
  int rc = uv_pipe_open(&s->listener, SD_LISTEN_FDS_START);
  if (rc)
    dlog(&s->log, DLOG_ERR, "cannot use the socket from systemd: %s",
         uv_strerror(rc));
  else
    dlog(&s->log, DLOG_INFO, "using the socket passed by systemd");
  return rc;
}

static int start_listening(struct server *s)
{
  int rc = uv_listen((uv_stream_t *)&s->listener, 128, on_connection);
  if (rc)
    dlog(&s->log, DLOG_ERR, "cannot listen on %s: %s", s->cfg.socket_path,
         uv_strerror(rc));
  return rc;
}

/* report.fill_stats: the server's part of a Stats reply. */
static void fill_stats(struct server *s, Arenad__V1__StatsReply *r)
{
  arenad__v1__stats_reply__init(r);
  r->version = (char *)ARENA_VERSION;
  r->pid = (uint64_t)getpid();
  r->uptime_ms = uv_now(&s->loop) - s->start_ms;
  r->socket_path = s->cfg.socket_path;
  r->db_path = s->cfg.db_path;
  r->connections = s->n_conns;
  r->connections_total = s->c.connections_total;
  r->requests = s->c.requests;
  r->plans_served = s->c.plans_served;
  r->memory_hits = s->c.memory_hits;
  r->storage_hits = s->c.storage_hits;
  r->misses = s->c.misses;
  r->plans_computed = s->c.plans_computed;
  r->single_flight_joined = s->c.single_flight_joined;
  r->busy_rejections = s->c.busy_rejections;
  r->denied = s->c.denied;
  r->protocol_errors = s->c.protocol_errors;
  r->jobs_queued = s->n_jobs;
  r->jobs_cancelled = s->c.jobs_cancelled;
  r->verify_failures = s->c.verify_failures;
  r->stalled_closes = s->c.stalled_closes;
  r->reply_refusals = s->c.reply_refusals;
  uint64_t e, b;
  hotcache_usage(s->hot, &e, &b);
  r->lru_entries = e;
  r->lru_bytes = b;
  r->workers = s->cfg.workers;
  struct improve_stats is;
  improve_get_stats(s->improver, &is);
  r->improve_enabled = s->improver && is.enabled;
  r->improve_runs = is.runs;
  r->improve_gains = is.gains;
  r->improve_cpu_ms = is.cpu_ms;
  r->improve_active = is.active;
  /* Copied under the lock: a worker may rewrite storage_err. */
  uv_mutex_lock(&s->status_lock);
  r->storage_ok = s->storage_ok != 0;
  snprintf(s->storage_err_copy, sizeof s->storage_err_copy, "%s",
           s->storage_ok ? "" : s->storage_err);
  uv_mutex_unlock(&s->status_lock);
  r->storage_error = s->storage_err_copy;
}

static void notify_status(struct server *s)
{
  char msg[256];
  uv_mutex_lock(&s->status_lock);
  int ok = s->storage_ok;
  uv_mutex_unlock(&s->status_lock);
  uint64_t hits = s->c.memory_hits + s->c.storage_hits;
  snprintf(msg, sizeof msg,
           "STATUS=%u %s, %" PRIu64 " %s, %" PRIu64 " %s, %" PRIu64
           " %s computed, %u %s%s",
           s->n_conns, dlog_noun(s->n_conns, "connection", "connections"),
           s->c.requests, dlog_noun(s->c.requests, "request", "requests"),
           hits, dlog_noun(hits, "hit", "hits"), s->c.plans_computed,
           dlog_noun(s->c.plans_computed, "plan", "plans"), s->n_jobs,
           dlog_noun(s->n_jobs, "job", "jobs"),
           ok ? "" : ", cache database failing");
  sd_notify(0, msg);
}

static void on_tick(uv_timer_t *t)
{
  struct server *s = t->data;
  if (s->watchdog_usec)
    sd_notify(0, "WATCHDOG=1");
  notify_status(s);
}

static void close_cb_noop(uv_handle_t *h)
{
  (void)h;
}

static void finish(struct server *s)
{
  conn_close_all(s);
  if (s->listening) {
    uv_close((uv_handle_t *)&s->listener, close_cb_noop);
    s->listening = 0;
  }
  uv_timer_stop(&s->drain);
  uv_timer_stop(&s->tick);
  uv_close((uv_handle_t *)&s->drain, close_cb_noop);
  uv_close((uv_handle_t *)&s->tick, close_cb_noop);
  uses_stop(s);
  stop_improver(s);
  uv_close((uv_handle_t *)&s->sig_term, close_cb_noop);
  uv_close((uv_handle_t *)&s->sig_int, close_cb_noop);
  uv_close((uv_handle_t *)&s->sig_hup, close_cb_noop);
}

/* report.drain_check, also called here when the drain begins. */
static void maybe_finish_drain(struct server *s)
{
  if (!s->draining || s->draining == 2 || s->n_jobs > 0 ||
      conn_writes_pending(s))
    return;
  s->draining = 2;
  dlog(&s->log, DLOG_INFO, "drained; shutting down");
  finish(s);
}

static void on_drain_timeout(uv_timer_t *t)
{
  struct server *s = t->data;
  dlog(&s->log, DLOG_WARNING,
       "drain deadline passed with %u %s left; cancelling %s", s->n_jobs,
       dlog_noun(s->n_jobs, "job", "jobs"), dlog_noun(s->n_jobs, "it", "them"));
  jobs_cancel_all(s);
  s->draining = 2;
  finish(s);
}

static void begin_drain(struct server *s, const char *why)
{
  if (s->draining)
    return;
  s->draining = 1;
  sd_notify(0, "STOPPING=1");
  dlog(&s->log, DLOG_INFO, "%s: draining %u %s, then exiting", why,
       s->n_jobs, dlog_noun(s->n_jobs, "job", "jobs"));
  if (s->listening) {
    uv_close((uv_handle_t *)&s->listener, close_cb_noop);
    s->listening = 0;
  }
  release_path(s);
  stop_improver(s); /* background steps give up; nothing waits for them */
  conn_pause_all(s);
  uv_timer_start(&s->drain, on_drain_timeout, s->cfg.drain_timeout_ms, 0);
  maybe_finish_drain(s);
}

static void reload(struct server *s)
{
  struct daemon_config c;
  char err[ARENA_ERR_LEN] = "";
  daemon_config_defaults(&c);
  const struct server_reload *r = s->reload;
  int rc = 0;
  if (r && r->config_path)
    rc = daemon_config_load(&c, r->config_path, err);
  for (int i = 0; !rc && r && i < r->n_overrides; i++)
    rc = daemon_config_set(&c, r->overrides[3 * i], r->overrides[3 * i + 1],
                           r->overrides[3 * i + 2], err);
  if (!rc)
    rc = daemon_config_validate(&c, err);
  if (rc) {
    dlog(&s->log, DLOG_ERR, "SIGHUP: configuration not reloaded: %s", err);
    return;
  }
  /* Paths and the worker count need a restart; keep the running ones. */
  snprintf(c.socket_path, sizeof c.socket_path, "%s", s->cfg.socket_path);
  snprintf(c.db_path, sizeof c.db_path, "%s", s->cfg.db_path);
  c.workers = s->cfg.workers;
  /* A hot copy's reply says whether its plan is improving under the
   * switch and the size cap it was stored under; when they change, the
   * copies go (their uses first), and the next request reads the row. */
  int improve_rule = c.improve_enabled != s->cfg.improve_enabled ||
                     c.improve_max_tensors != s->cfg.improve_max_tensors;
  apply_config(s, &c);
  if (improve_rule && s->hot) {
    uses_collect(s);
    hotcache_clear(s->hot);
  }
  dlog(&s->log, DLOG_NOTICE, "SIGHUP: configuration reloaded (log level %s)",
       c.log_level);
}

static void on_signal(uv_signal_t *h, int signum)
{
  struct server *s = h->data;
  if (signum == SIGHUP)
    reload(s);
  else
    begin_drain(s, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void start_signals(struct server *s)
{
  uv_signal_t *hs[] = {&s->sig_term, &s->sig_int, &s->sig_hup};
  int nums[] = {SIGTERM, SIGINT, SIGHUP};
  for (int i = 0; i < 3; i++) {
    uv_signal_init(&s->loop, hs[i]);
    hs[i]->data = s;
    uv_signal_start(hs[i], on_signal, nums[i]);
  }
  signal(SIGPIPE, SIG_IGN);
}

static void start_timers(struct server *s)
{
  uint64_t usec = 0, every = TICK_MS_DEFAULT;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
    s->watchdog_usec = usec;
    every = usec / 1000 / 2;
    if (every < 1)
      every = 1;
  }
  uv_timer_init(&s->loop, &s->tick);
  uv_timer_init(&s->loop, &s->drain);
  s->tick.data = s->drain.data = s;
  uv_timer_start(&s->tick, on_tick, every, every);
  uses_start(s);
}

/* improve_env.changed: a background step stored a smaller plan, or
 * finished with one: the hot copies go, so that the next request reads
 * the row again (with its new plan, generation and `improving`). */
static void plan_changed(void *ctx, const struct improve_change *ch)
{
  struct server *s = ctx;
  hotcache_remove_digests(s->hot, ch->model_hash, ch->model_hash_len,
                          ch->graph_digest, ch->options_digest);
}

/* Starts background improvement when there is a database to improve;
 * the switch `improve.enabled` is read by the threads, so SIGHUP can
 * turn it on and off. */
static void start_improver(struct server *s)
{
  if (!s->st)
    return;
  struct improve_config ic;
  improve_config_of(&s->cfg, &ic);
  struct improve_env env = {&s->loop,  &s->st, &s->st_lock, &s->n_jobs_busy,
                            &s->log,   plan_changed, s};
  int rc = improve_start(&env, &ic, &s->improver);
  if (rc)
    dlog(&s->log, DLOG_WARNING, "background improvement not started: %s",
         arena_strerror(rc));
}

static void stop_improver(struct server *s)
{
  improve_stop(s->improver);
  s->improver = NULL;
}

/* Fills the table through which connections and jobs report back
 * (report.h), before any of them exists. */
static void init_report(struct server *s)
{
  conn_report_init(&s->report);
  s->report.drain_check = maybe_finish_drain;
  s->report.fill_stats = fill_stats;
}

/* Returns 0, -1 when the listener failed (handles need closing), or -2
 * when nothing was set up. */
static int setup(struct server *s, const struct daemon_config *cfg)
{
  char n[16];
  /* libuv sizes its pool from this on first use, which is still ahead.
   * One thread more than the workers: long searches use at most
   * `workers` of them (jobs.c), the spare serves everything else. */
  snprintf(n, sizeof n, "%u", cfg->workers + 1);
  setenv("UV_THREADPOOL_SIZE", n, 1);
  if (daemon_memory_setup())
    dlog(&s->log, DLOG_WARNING, "could not fix the allocator's thresholds: "
                                "memory of large requests may stay resident");
  if (uv_loop_init(&s->loop))
    return -2;
  if (uv_mutex_init(&s->st_lock)) {
    uv_loop_close(&s->loop);
    return -2;
  }
  if (uv_mutex_init(&s->status_lock)) {
    uv_mutex_destroy(&s->st_lock);
    uv_loop_close(&s->loop);
    return -2;
  }
  s->hot = hotcache_new(cfg->memory_cache_bytes, cfg->memory_cache_entries);
  if (!s->hot || uses_init(s)) {
    hotcache_free(s->hot);
    uv_mutex_destroy(&s->status_lock);
    uv_mutex_destroy(&s->st_lock);
    uv_loop_close(&s->loop);
    return -2;
  }
  s->start_ms = uv_now(&s->loop);
  init_report(s);
  conn_faults_init(s);
  start_signals(s);
  start_timers(s);
  if (open_listener(s))
    return -1;
  open_storage(s);
  if (s->st) {
    struct bundles_rules r = {&s->limits, {0, 0, 0},
                              s->cfg.improve_max_effort};
    bundles_preload_dir(s->st, &r, s->cfg.preload_dir, &s->log);
  }
  start_improver(s);
  return start_listening(s) ? -1 : 0;
}

static void teardown(struct server *s)
{
  uv_run(&s->loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&s->loop) != 0)
    dlog(&s->log, DLOG_WARNING, "event loop closed with handles open");
  uses_cleanup(s); /* no worker is left: the counts go in before close */
  if (s->st) {
    storage_close(s->st);
    s->st = NULL;
  }
  hotcache_free(s->hot);
  uv_mutex_destroy(&s->status_lock);
  uv_mutex_destroy(&s->st_lock);
}

int server_run(const struct daemon_config *cfg,
               const struct server_reload *reload_info)
{
  struct server *s = calloc(1, sizeof *s);
  if (!s)
    return 1;
  s->reload = reload_info;
  sockguard_init(&s->guard);
  apply_config(s, cfg);
  int rc = setup(s, cfg);
  if (rc) {
    if (rc == -1) {
      s->draining = 2;
      finish(s);
      teardown(s);
    }
    release_path(s);
    free(s);
    return 1;
  }
  dlog(&s->log, DLOG_INFO,
       "arenad %s listening on %s (database %s, %u %s, pid %ld)",
       ARENA_VERSION, s->cfg.socket_path, s->cfg.db_path, s->cfg.workers,
       dlog_noun(s->cfg.workers, "worker", "workers"), (long)getpid());
  sd_notify(0, "READY=1");
  notify_status(s);
  uv_run(&s->loop, UV_RUN_DEFAULT);
  teardown(s);
  release_path(s); /* done at the drain's start; this is for safety */
  dlog(&s->log, DLOG_INFO, "stopped");
  free(s);
  return 0;
}

/*
 * cli_plan_daemon.c - `arenactl plan` through arenad (cli_daemon_plan in
 * cli_daemon.h): the plan from the daemon or, when it cannot be used,
 * from this process; the state of the stored plan (generation, effort,
 * background work) from a Lookup; and --wait-optimal, which asks again
 * until that work has ended.
 */
#include "cli_daemon.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "digest.h"
#include "wire_plan.h"

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
  /* A plan from arenad that could not be used (a poisoned cache entry):
   * said on stderr, whatever the output format. */
  if (r->local && r->fallback_reason == ARENA_EUNUSABLE)
    cli_error(what, "warning: %s", arenad_client_errmsg(c));
  return 0;
}

/* What a plan made here needs besides the plan, taken on a second
 * thread while it is planned (both only read the graph): the graph
 * digest and, unless the plan is naive's, the naive arena that its
 * saving is measured against. Most of planning runs on one thread (the
 * checks, the index, the search and the verification; only `best`'s
 * race of heuristics uses more), so the two mostly run at once. */
struct beside_job {
  const struct planner_graph *g;   /* borrowed */
  const struct planner_options *o; /* borrowed */
  uint8_t *digest;                 /* PLANNER_DIGEST_LEN bytes, borrowed */
  int rc;                          /* planner_graph_digest_planned()'s */
  int naive_rc;                    /* planner_naive_arena()'s, or -1 */
  uint64_t naive;                  /* its arena when naive_rc is 0 */
};

static void *beside_main(void *arg)
{
  struct beside_job *j = arg;
  j->rc = planner_graph_digest_planned(j->g, j->o, j->digest);
  if (j->o->algo != PLANNER_ALGO_NAIVE)
    j->naive_rc = planner_naive_arena(j->g, j->o, &j->naive, NULL);
  return NULL;
}

static int plan_local(const char *what, const struct planner_graph *g,
                      const struct planner_options *o, struct planner_plan *p,
                      struct cli_plan_source *src)
{
  char err[ARENA_ERR_LEN] = "";
  struct timespec t0, t1;
  struct beside_job j = {g, o, src->graph_digest, 0, -1, 0};
  pthread_t th;
  int apart = pthread_create(&th, NULL, beside_main, &j) == 0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = planner_run(g, o, p, err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (apart)
    pthread_join(th, NULL);
  else if (!rc)
    beside_main(&j);
  if (rc) {
    cli_error(what, "%s", err[0] ? err : arena_strerror(rc));
    return cli_exit_status(rc);
  }
  src->local = 1;
  src->planning_us = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000u +
                     (uint64_t)((t1.tv_nsec - t0.tv_nsec) / 1000);
  src->naive_known = j.naive_rc == 0;
  src->naive_bytes = j.naive;
  if ((rc = j.rc) != 0) {
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

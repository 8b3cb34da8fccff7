/*
 * daemon_harness.c - real-daemon helpers for integration tests (see
 * daemon_harness.h).
 */
#include "daemon_harness.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "graph_csv.h"
#include "testutil.h"
#include "wire.h"
#include "wire_plan.h"

static void sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int hn_write_conf(const struct harness *h, const char *extra_conf)
{
  const char *extra = extra_conf ? extra_conf : "";
  FILE *f = fopen(h->conf, "w");
  if (!f)
    return -1;
  /* arenad refuses a key set twice, so the default level only goes in
   * when extra sets none. */
  fprintf(f, "[daemon]\nsocket = %s\ndatabase = %s\n%s%s\n", h->sock, h->db,
          strstr(extra, "log_level") ? "" : "log_level = debug\n", extra);
  return fclose(f) == 0 ? 0 : -1;
}

int hn_init(struct harness *h, const char *extra_conf)
{
  memset(h, 0, sizeof *h);
  h->dir = tu_mkdtemp();
  if (!h->dir)
    return -1;
  snprintf(h->sock, sizeof h->sock, "%s/arenad.sock", h->dir);
  snprintf(h->db, sizeof h->db, "%s/cache.db", h->dir);
  snprintf(h->conf, sizeof h->conf, "%s/arenad.conf", h->dir);
  snprintf(h->log, sizeof h->log, "%s/arenad.log", h->dir);
  return hn_write_conf(h, extra_conf);
}

int hn_start(struct harness *h)
{
  const char *bin = tu_bin("ARENAD");
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    FILE *lf = freopen(h->log, "a", stderr);
    (void)lf;
    /* Under AddressSanitizer freed memory sits in a quarantine (256 MB by
     * default) that looks like growth to an RSS check; keep it small so
     * the daemon's RSS reflects what it really holds. No effect on a
     * normal build. */
    setenv("ASAN_OPTIONS", "quarantine_size_mb=4:malloc_context_size=8", 0);
    /* Under ThreadSanitizer a data race stops the daemon at once, so that
     * a test fails even when it ends the daemon with SIGKILL (otherwise
     * only the exit status after SIGTERM, 66, would tell). */
    setenv("TSAN_OPTIONS", "halt_on_error=1", 0);
    execl(bin, bin, "--config", h->conf, (char *)NULL);
    _exit(127);
  }
  h->pid = pid;
  for (int i = 0; i < 500; i++) {
    int fd = hn_connect(h);
    if (fd >= 0) {
      close(fd);
      return 0;
    }
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      h->pid = 0;
      return -1;
    }
    sleep_ms(10);
  }
  return -1;
}

int hn_stop(struct harness *h)
{
  if (!h->pid)
    return -1;
  kill(h->pid, SIGTERM);
  for (int i = 0; i < 3000; i++) {
    int st;
    pid_t r = waitpid(h->pid, &st, WNOHANG);
    if (r == h->pid) {
      h->pid = 0;
      return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    sleep_ms(10);
  }
  kill(h->pid, SIGKILL);
  waitpid(h->pid, NULL, 0);
  h->pid = 0;
  return -1;
}

void hn_cleanup(struct harness *h)
{
  if (h->pid)
    hn_stop(h);
  if (h->dir) {
    if (getenv("ARENA_KEEP_TEST_DIRS") == NULL)
      tu_rm_rf(h->dir);
    free(h->dir);
    h->dir = NULL;
  }
}

int hn_log_count(const struct harness *h, const char *what)
{
  FILE *f = fopen(h->log, "r");
  if (!f)
    return 0;
  char *text = NULL;
  size_t len = 0, cap = 0, n;
  char buf[4096];
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    if (len + n + 1 > cap) {
      size_t ncap = (len + n + 1) * 2;
      char *t = realloc(text, ncap);
      if (!t)
        break;
      text = t;
      cap = ncap;
    }
    memcpy(text + len, buf, n);
    len += n;
  }
  fclose(f);
  int count = 0;
  if (text) {
    text[len] = '\0';
    for (const char *p = text; (p = strstr(p, what)) != NULL; p++)
      count++;
  }
  free(text);
  return count;
}

long hn_rss_kib(const struct harness *h)
{
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%ld/status", (long)h->pid);
  FILE *f = fopen(path, "r");
  long kib = 0;
  if (!f)
    return 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
      break;
  fclose(f);
  return kib;
}

int hn_connect(const struct harness *h)
{
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, h->sock, strlen(h->sock) + 1);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int hn_send_raw(int fd, const void *buf, size_t len)
{
  const char *p = buf;
  while (len) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int hn_send(int fd, const Arenad__V1__Request *req)
{
  uint8_t *buf;
  size_t len;
  if (wire_pack(&req->base, 1u << 30, &buf, &len))
    return -1;
  int rc = hn_send_raw(fd, buf, len);
  free(buf);
  return rc;
}

Arenad__V1__Response *hn_recv(int fd, int timeout_ms)
{
  struct wire_reader r;
  wire_reader_init(&r, 1u << 30);
  Arenad__V1__Response *resp = NULL;
  char buf[65536];
  for (;;) {
    const uint8_t *body;
    size_t blen;
    int rc = wire_reader_next(&r, &body, &blen);
    if (rc == 1) {
      wire_unpack_response(body, blen, 1u << 30, &resp);
      break;
    }
    if (rc < 0)
      break;
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0)
      break;
    /* read only what this frame needs so later frames stay queued */
    size_t want = sizeof buf;
    if (wire_reader_pending(&r) >= 4) {
      const uint8_t *hdr = r.buf + r.pos;
      size_t total = 4 + ((size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 |
                          (size_t)hdr[2] << 8 | hdr[3]);
      size_t missing = total - wire_reader_pending(&r);
      want = missing < want ? missing : want;
    } else {
      want = 4 - wire_reader_pending(&r);
    }
    ssize_t n = recv(fd, buf, want, 0);
    if (n <= 0 || wire_reader_feed(&r, buf, (size_t)n))
      break;
  }
  wire_reader_cleanup(&r);
  return resp;
}

int hn_wait_closed(int fd, int timeout_ms)
{
  char buf[4096];
  for (int waited = 0; waited <= timeout_ms; waited += 10) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 10) > 0) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno == ECONNRESET))
        return 1;
    }
  }
  return 0;
}

int hn_load_csv(const char *path, struct hn_graph *g)
{
  struct planner_csv csv;
  if (tu_load_csv(path, &csv)) {
    planner_csv_cleanup(&csv);
    return -1;
  }
  g->t = csv.tensors;
  g->n = csv.n_tensors;
  csv.tensors = NULL;
  planner_csv_cleanup(&csv);
  return 0;
}

void hn_random_graph(struct hn_graph *g, size_t n, uint64_t seed)
{
  g->t = calloc(n, sizeof *g->t);
  g->n = n;
  uint64_t s = seed;
  for (size_t i = 0; i < n; i++) {
    g->t[i].id = (uint32_t)i;
    g->t[i].size = tu_rand_range(&s, 16, 1 << 16);
    g->t[i].first = (int64_t)(i / 3);
    g->t[i].last = g->t[i].first + (int64_t)tu_rand_range(&s, 0, 6);
    g->t[i].pinned = PLANNER_NOT_PINNED;
    g->t[i].alias = 0;
    g->t[i].has_alias = 0;
  }
}

void hn_graph_free(struct hn_graph *g)
{
  free(g->t);
  g->t = NULL;
  g->n = 0;
}

uint8_t *hn_plan_frame(uint64_t request_id, const struct hn_graph *g,
                       const char *model_hash, int algo, uint64_t alignment,
                       uint32_t effort, size_t *len)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Plan plan;
  Arenad__V1__PlanOptions po;
  struct planner_graph pg = {g->t, g->n};
  struct planner_options o;
  planner_options_init(&o);
  o.algo = (enum planner_algo)algo;
  o.alignment = alignment;
  o.effort = effort;
  if (wire_plan_msg_init(&plan, &po, &pg, &o, (const uint8_t *)model_hash,
                         strlen(model_hash), NULL, 0))
    return NULL;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = request_id;
  req.body_case = ARENAD__V1__REQUEST__BODY_PLAN;
  req.plan = &plan;
  uint8_t *buf = NULL;
  if (wire_pack(&req.base, 1u << 30, &buf, len))
    buf = NULL;
  wire_plan_msg_cleanup(&plan);
  return buf;
}

int hn_send_plan(int fd, uint64_t request_id, const struct hn_graph *g,
                 const char *model_hash, int algo, uint64_t alignment,
                 uint32_t effort)
{
  size_t len;
  uint8_t *buf = hn_plan_frame(request_id, g, model_hash, algo, alignment,
                               effort, &len);
  if (!buf)
    return -1;
  int rc = hn_send_raw(fd, buf, len);
  free(buf);
  return rc;
}

Arenad__V1__Response *hn_call(int fd, const Arenad__V1__Request *req,
                              int timeout_ms)
{
  return hn_send(fd, req) ? NULL : hn_recv(fd, timeout_ms);
}

Arenad__V1__Response *hn_stats(const struct harness *h)
{
  int fd = hn_connect(h);
  if (fd < 0)
    return NULL;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Stats st = ARENAD__V1__STATS__INIT;
  req.protocol_version = 1;
  req.request_id = 99;
  req.body_case = ARENAD__V1__REQUEST__BODY_STATS;
  req.stats = &st;
  Arenad__V1__Response *r = hn_call(fd, &req, 5000);
  close(fd);
  return r;
}

Arenad__V1__Response *hn_ping(int fd, uint64_t rid, int timeout_ms)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Ping ping = ARENAD__V1__PING__INIT;
  req.protocol_version = 1;
  req.request_id = rid;
  req.body_case = ARENAD__V1__REQUEST__BODY_PING;
  req.ping = &ping;
  return hn_call(fd, &req, timeout_ms);
}

int hn_plan_reply_ok(const Arenad__V1__Response *r, const struct hn_graph *g,
                     char *err)
{
  if (!r || r->status != ARENAD__V1__STATUS__OK ||
      r->body_case != ARENAD__V1__RESPONSE__BODY_PLAN ||
      r->plan->n_offsets != g->n) {
    snprintf(err, ARENA_ERR_LEN, "%s",
             !r ? "no reply"
                : r->status != ARENAD__V1__STATUS__OK ? r->error
                                                       : "not a full plan");
    return -1;
  }
  struct planner_graph pg = {g->t, g->n};
  struct planner_options o;
  planner_options_init(&o);
  struct planner_plan p = {0};
  p.offsets = r->plan->offsets;
  p.n_offsets = r->plan->n_offsets;
  p.arena_bytes = r->plan->arena_bytes;
  return planner_verify(&pg, &o, &p, err) == 0 ? 0 : -1;
}

Arenad__V1__Response *hn_list(const struct harness *h, int most_used)
{
  int fd = hn_connect(h);
  if (fd < 0)
    return NULL;
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__List li = ARENAD__V1__LIST__INIT;
  li.order = most_used ? ARENAD__V1__LIST_ORDER__MOST_USED
                       : ARENAD__V1__LIST_ORDER__NEWEST;
  req.protocol_version = 1;
  req.request_id = 98;
  req.body_case = ARENAD__V1__REQUEST__BODY_LIST;
  req.list = &li;
  Arenad__V1__Response *r = hn_call(fd, &req, 5000);
  close(fd);
  return r;
}

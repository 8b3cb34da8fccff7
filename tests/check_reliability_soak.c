/*
 * check_reliability_soak.c - the reliability suite's soak test (see
 * check_reliability.c):
 *
 *   soak        64 concurrent clients mixing hits, misses, lookups, stats
 *               and evictions, with RSS sampled every second.
 *
 * Reports latency percentiles overall and per kind of request, and in
 * full mode (ARENA_RELIABILITY=full) fails if RSS keeps growing after
 * the warm-up.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_reliability.h"
#include "testutil.h"
#include "wire.h"

/* ---- soak: 64 clients, mixed requests, RSS every second ---------------------- */

#define SOAK_CLIENTS 64
#define SOAK_POOL 32
#define SOAK_MAX_SAMPLES 3600

enum { OP_HIT, OP_MISS, OP_LOOKUP, OP_STATS, OP_EVICT, OP__N };
static const char *const op_names[OP__N] = {"hit", "miss", "lookup", "stats",
                                            "evict"};

struct soak_shared {
  uint64_t ok[SOAK_CLIENTS];
  uint64_t failed[SOAK_CLIENTS];
  uint64_t wrong[SOAK_CLIENTS];
  uint64_t not_found[SOAK_CLIENTS];
  /* followed by lat_us[SOAK_CLIENTS * per] and op[SOAK_CLIENTS * per] */
};

static int send_stats(int fd, uint64_t rid)
{
  Arenad__V1__Request req = ARENAD__V1__REQUEST__INIT;
  Arenad__V1__Stats st = ARENAD__V1__STATS__INIT;
  req.protocol_version = WIRE_PROTOCOL_VERSION;
  req.request_id = rid;
  req.body_case = ARENAD__V1__REQUEST__BODY_STATS;
  req.stats = &st;
  return hn_send(fd, &req);
}

static int cmp_u32(const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static void pool_graph(struct vgraph *v, unsigned j)
{
  char hash[32];
  snprintf(hash, sizeof hash, "pool-%u", j);
  rel_vgraph_make(v, 50 + (size_t)j * 11, 5000 + j, PLANNER_ALGO_GREEDY_SIZE,
                  hash);
}

static void soak_client(const struct harness *h, struct soak_shared *sh,
                        uint32_t *lat, uint8_t *ops, unsigned c,
                        unsigned per)
{
  uint64_t rng = 0x9e3779b97f4a7c15ull * (c + 1);
  struct vgraph pool[SOAK_POOL];
  for (unsigned j = 0; j < SOAK_POOL; j++)
    pool_graph(&pool[j], j);
  int fd = hn_connect(h);
  if (fd < 0)
    _exit(3);
  for (unsigned i = 0; i < per; i++) {
    unsigned roll = (unsigned)tu_rand_range(&rng, 0, 99);
    int op = roll < 60   ? OP_HIT
             : roll < 75 ? OP_MISS
             : roll < 90 ? OP_LOOKUP
             : roll < 98 ? OP_STATS
                         : OP_EVICT;
    struct vgraph *v = &pool[tu_rand_range(&rng, 0, SOAK_POOL - 1)];
    struct vgraph miss;
    int sent;
    double t0 = rel_now_ms();
    if (op == OP_MISS) {
      char hash[48];
      snprintf(hash, sizeof hash, "miss-c%u-i%u", c, i);
      rel_vgraph_make(&miss, (size_t)tu_rand_range(&rng, 30, 150),
                      (uint64_t)c << 32 | i,
                      (int)tu_rand_range(&rng, PLANNER_ALGO_NAIVE,
                                     PLANNER_ALGO_GREEDY_BREADTH),
                  hash);
      v = &miss;
    }
    if (op == OP_HIT || op == OP_MISS)
      sent = rel_send_plan(fd, i + 1, v);
    else if (op == OP_LOOKUP)
      sent = rel_send_lookup(fd, i + 1, v->hash, v->gd);
    else if (op == OP_STATS)
      sent = send_stats(fd, i + 1);
    else
      sent = rel_send_evict_model(fd, i + 1, v->hash);
    Arenad__V1__Response *r = sent == 0 ? hn_recv(fd, 30000) : NULL;
    lat[i] = (uint32_t)((rel_now_ms() - t0) * 1e3);
    ops[i] = (uint8_t)op;
    if (!r || r->request_id != i + 1) {
      sh->failed[c]++;
    } else if (op == OP_HIT || op == OP_MISS) {
      int res = rel_classify(r, v);
      if (res == 0)
        sh->ok[c]++;
      else if (res == 1)
        sh->wrong[c]++;
      else
        sh->failed[c]++;
    } else if (op == OP_LOOKUP && r->status == ARENAD__V1__STATUS__NOT_FOUND) {
      sh->not_found[c]++; /* not planned yet, or evicted: a clean answer */
      sh->ok[c]++;
    } else if (r->status != ARENAD__V1__STATUS__OK) {
      sh->failed[c]++;
    } else if (op == OP_LOOKUP) {
      int bad = r->lookup->n_plans == 0;
      for (size_t p = 0; p < r->lookup->n_plans; p++)
        bad |= rel_reply_wrong(r->lookup->plans[p], v);
      if (bad)
        sh->wrong[c]++;
      else
        sh->ok[c]++;
    } else {
      sh->ok[c]++;
    }
    wire_free_response(r);
    if (op == OP_MISS)
      rel_vgraph_free(&miss);
  }
  close(fd);
  for (unsigned j = 0; j < SOAK_POOL; j++)
    rel_vgraph_free(&pool[j]);
}

static double pct(const uint32_t *sorted, size_t n, double q)
{
  if (n == 0)
    return 0;
  size_t k = (size_t)(q * (double)(n - 1) + 0.5);
  return sorted[k] / 1e3;
}

START_TEST(test_soak)
{
  if (rel_skipped("soak"))
    return;
  unsigned per = rel_scaled(40, 3200);
  size_t total = (size_t)SOAK_CLIENTS * per;
  struct figs f = {0};
  struct harness h;
  rel_setup(&h, NULL, "workers = 2\n[cache]\nmemory_bytes = 8M\n");
  ck_assert_int_eq(rel_start(&h), 0);
  int sanitized = rel_daemon_sanitized(&h);
  size_t shlen = sizeof(struct soak_shared) + total * 5;
  struct soak_shared *sh = rel_shared_new(shlen);
  uint32_t *lat = (uint32_t *)(sh + 1);
  uint8_t *ops = (uint8_t *)(lat + total);
  pid_t kids[SOAK_CLIENTS];
  double t0 = rel_now_ms();
  for (unsigned c = 0; c < SOAK_CLIENTS; c++) {
    kids[c] = fork();
    ck_assert_int_ge(kids[c], 0);
    if (kids[c] == 0) {
      soak_client(&h, sh, lat + (size_t)c * per, ops + (size_t)c * per, c,
                  per);
      _exit(0);
    }
  }
  static long rss[SOAK_MAX_SAMPLES];
  size_t n_rss = 0;
  unsigned alive = SOAK_CLIENTS;
  double next = rel_now_ms();
  while (alive) {
    if (rel_now_ms() >= next && n_rss < SOAK_MAX_SAMPLES) {
      rss[n_rss++] = hn_rss_kib(&h);
      next += 1000;
    }
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                    "soak client died");
      alive--;
    } else {
      rel_sleep_ms(20);
    }
  }
  double secs = (rel_now_ms() - t0) / 1e3;
  rss[n_rss++] = hn_rss_kib(&h);
  uint64_t not_found = 0;
  for (unsigned c = 0; c < SOAK_CLIENTS; c++) {
    f.requests += sh->ok[c];
    f.failures += sh->failed[c];
    f.wrong += sh->wrong[c];
    not_found += sh->not_found[c];
  }
  Arenad__V1__Response *keep;
  Arenad__V1__StatsReply *sr = rel_stats_of(&h, &keep);
  ck_assert_uint_ge(sr->requests, total);
  uint64_t hits = sr->memory_hits + sr->storage_hits, misses = sr->misses;
  wire_free_response(keep);
  ck_assert_int_eq(hn_stop(&h), 0);

  /* latency: all requests, then per kind */
  uint32_t *all = malloc(total * sizeof *all);
  memcpy(all, lat, total * sizeof *all);
  qsort(all, total, sizeof *all, cmp_u32);
  char perop[300] = "";
  size_t used = 0;
  for (int op = 0; op < OP__N; op++) {
    size_t k = 0;
    uint32_t *sel = malloc(total * sizeof *sel);
    for (size_t i = 0; i < total; i++)
      if (ops[i] == op)
        sel[k++] = lat[i];
    qsort(sel, k, sizeof *sel, cmp_u32);
    used += (size_t)snprintf(perop + used, sizeof perop - used,
                             " p99_%s_ms=%.2f", op_names[op],
                             pct(sel, k, 0.99));
    free(sel);
  }
  for (size_t i = 0; i < n_rss; i++)
    if (rss[i] > f.peak_rss_kib)
      f.peak_rss_kib = rss[i];
  /* warm-up: the first quarter of the run (at least 3 samples) */
  size_t warm = n_rss / 4 > 3 ? n_rss / 4 : (n_rss > 3 ? 3 : n_rss - 1);
  long growth = rss[n_rss - 1] - rss[warm];
  char extra[600];
  snprintf(extra, sizeof extra,
           "clients=%d total=%zu seconds=%.1f req_per_s=%.0f "
           "daemon_hits=%" PRIu64 " daemon_misses=%" PRIu64
           " lookup_not_found=%" PRIu64
           " p50_ms=%.2f p99_ms=%.2f max_ms=%.2f%s rss_samples=%zu "
           "rss_after_warmup_kib=%ld rss_end_kib=%ld rss_growth_kib=%ld",
           SOAK_CLIENTS, total, secs, (double)total / secs, hits, misses,
           not_found, pct(all, total, 0.5), pct(all, total, 0.99),
           all[total - 1] / 1e3, perop, n_rss, rss[warm], rss[n_rss - 1],
           growth);
  rel_figs_report("soak", &f, extra);
  free(all);
  ck_assert_uint_eq(f.failures, 0);
  ck_assert_uint_eq(f.wrong, 0);
  ck_assert_uint_eq(f.requests, total);
  if (rel_full_mode() && !sanitized)
    ck_assert_msg(growth < 32 * 1024, "RSS grew %ld KiB after warm-up",
                  growth);
  munmap(sh, shlen);
  hn_cleanup(&h);
}
END_TEST

void reliability_add_soak(TCase *tc)
{
  tcase_add_test(tc, test_soak);
}

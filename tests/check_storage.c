/*
 * check_storage.c - tests for storage/: the sqlite plan cache.
 *
 * Covers the codec on its own, round trips of small and 100,000-tensor
 * plans, the key (graph and options digests, tensor order), upgrades,
 * LRU eviction under both caps, lookup, list, explicit eviction, stats
 * and batched hit updates, the v1 -> v2 migration, corrupt values and
 * bad files, crash safety under SIGKILL, and one writer with four reader
 * threads. Every test works in a fresh temporary directory.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "storage.h"
#include "storage_int.h"
#include "testutil.h"

/* ---- fixture and helpers ------------------------------------------------ */

static char *tmpdir;     /* fresh per test */
static char dbpath[512]; /* tmpdir/plans.db */

static void setup(void)
{
  tmpdir = tu_mkdtemp();
  ck_assert_ptr_nonnull(tmpdir);
  snprintf(dbpath, sizeof dbpath, "%s/plans.db", tmpdir);
}

static void teardown(void)
{
  tu_rm_rf(tmpdir);
  free(tmpdir);
  tmpdir = NULL;
}

/* Collects what the library logs. */
struct logbook {
  int n_warn;         /* STORAGE_LOG_WARN lines */
  int n_info;         /* STORAGE_LOG_INFO lines */
  int n_error;        /* STORAGE_LOG_ERROR lines */
  char last[1024];    /* last line */
  char last_warn[1024]; /* last STORAGE_LOG_WARN line */
};

static void log_cb(void *ctx, enum storage_log_level lv, const char *msg)
{
  struct logbook *lb = ctx;
  if (lv == STORAGE_LOG_WARN) {
    lb->n_warn++;
    snprintf(lb->last_warn, sizeof lb->last_warn, "%s", msg);
  }
  else if (lv == STORAGE_LOG_INFO)
    lb->n_info++;
  else
    lb->n_error++;
  snprintf(lb->last, sizeof lb->last, "%s", msg);
  if (getenv("STORAGE_TEST_LOG"))
    fprintf(stderr, "log %d: %s\n", (int)lv, msg);
}

static storage_t *open_with(const struct storage_options *o)
{
  storage_t *st = NULL;
  char err[ARENA_ERR_LEN] = "";
  int rc = storage_open(dbpath, o, &st, err);
  ck_assert_msg(rc == 0, "storage_open: %s (%s)", arena_err_name(rc), err);
  ck_assert_ptr_nonnull(st);
  return st;
}

static storage_t *open_logged(struct logbook *lb)
{
  struct storage_options o;
  storage_options_init(&o);
  o.log = log_cb;
  o.log_ctx = lb;
  return open_with(&o);
}

/* A random graph with ids 0..n-1 in ascending order; free(). */
static struct planner_tensor *make_tensors(size_t n, uint64_t seed)
{
  struct planner_tensor *t = calloc(n, sizeof *t);
  ck_assert_ptr_nonnull(t);
  uint64_t s = seed * 7919 + 1;
  int64_t span = (int64_t)(n / 4 + 8);
  for (size_t i = 0; i < n; i++) {
    t[i].id = (uint32_t)i;
    t[i].size = tu_rand_range(&s, 0, 9) == 0 ? 0 : tu_rand_range(&s, 1, 4096);
    t[i].first = (int64_t)tu_rand_range(&s, 0, (uint64_t)span);
    t[i].last = t[i].first + (int64_t)tu_rand_range(&s, 0, 12);
    t[i].align = 0;
    t[i].pinned = PLANNER_NOT_PINNED;
  }
  return t;
}

/* Options for algorithm a. The exact-search budget is cut to 1 ms: it is
 * not part of the cache key, and the default would dominate the run. */
static void opts(struct planner_options *o, enum planner_algo a)
{
  planner_options_init(o);
  o->algo = a;
  o->budget_ms = 1;
}

static void plan_ok(const struct planner_graph *g, enum planner_algo a,
                    struct planner_plan *p)
{
  struct planner_options o;
  char err[ARENA_ERR_LEN];
  opts(&o, a);
  planner_plan_init(p);
  int rc = planner_run(g, &o, p, err);
  ck_assert_msg(rc == 0, "planner_run: %s", err);
}

/* A key with model hash "model-<m>" and one input of shape [1, s, s, 3]. */
struct tkey {
  char hash[32];           /* model hash bytes */
  uint32_t ranks[1];       /* one input */
  int64_t dims[4];         /* its dims */
  struct storage_key k;    /* points into the above */
};

static void key_init(struct tkey *t, unsigned m, int64_t s)
{
  memset(t, 0, sizeof *t);
  snprintf(t->hash, sizeof t->hash, "model-%u", m);
  t->ranks[0] = 4;
  t->dims[0] = 1;
  t->dims[1] = s;
  t->dims[2] = s;
  t->dims[3] = 3;
  t->k.model_hash = (const uint8_t *)t->hash;
  t->k.model_hash_len = strlen(t->hash);
  t->k.ranks = t->ranks;
  t->k.n_inputs = 1;
  t->k.dims = t->dims;
}

static void stats_of(storage_t *st, struct storage_stats *s)
{
  ck_assert_int_eq(storage_get_stats(st, s), 0);
}

/* Puts plan p of graph g under key k with default best options. */
static enum storage_put_result put_ok(storage_t *st, const struct tkey *k,
                                      const struct planner_graph *g,
                                      const struct planner_plan *p)
{
  struct planner_options o;
  enum storage_put_result res = 0;
  opts(&o, PLANNER_ALGO_BEST);
  int rc = storage_put(st, &k->k, g, &o, p, 1234, &res);
  ck_assert_msg(rc == 0, "put: %s: %s", arena_err_name(rc),
                storage_errmsg(st));
  return res;
}

static int get_rc(storage_t *st, const struct tkey *k,
                  const struct planner_graph *g, struct planner_plan *out)
{
  struct planner_options o;
  opts(&o, PLANNER_ALGO_BEST);
  return storage_get(st, &k->k, g, &o, out, NULL);
}

/* Opens a raw sqlite connection to the cache file. */
static sqlite3 *raw_open(const char *path)
{
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  return db;
}

static void raw_exec(sqlite3 *db, const char *sql)
{
  char *msg = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
  ck_assert_msg(rc == SQLITE_OK, "%s: %s", sql, msg ? msg : "?");
  sqlite3_free(msg);
}

static int64_t raw_int(sqlite3 *db, const char *sql)
{
  sqlite3_stmt *s = NULL;
  ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
  int64_t v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return v;
}

/* Counts entries in tmpdir whose name starts with "plans.db.<word>-". */
static int count_aside(const char *word)
{
  char prefix[64];
  snprintf(prefix, sizeof prefix, "plans.db.%s-", word);
  DIR *d = opendir(tmpdir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 &&
        !strstr(e->d_name, "-wal") && !strstr(e->d_name, "-shm"))
      n++;
  closedir(d);
  return n;
}

static void write_at(const char *path, long at, const void *b, size_t n);

/* Finds needle in hay (memmem is not in POSIX). Returns NULL if absent. */
static char *find_bytes(char *hay, size_t len, const void *needle, size_t n)
{
  for (size_t i = 0; n <= len && i <= len - n; i++)
    if (memcmp(hay + i, needle, n) == 0)
      return hay + i;
  return NULL;
}

/* ---- codec -------------------------------------------------------------- */

START_TEST(codec_shape)
{
  uint32_t ranks[3] = {2, 0, 3};
  int64_t dims[5] = {1, 2, 7, 8, (int64_t)1 << 40};
  struct storage_key k = {(const uint8_t *)"m", 1, ranks, 3, dims};
  uint8_t *buf = NULL;
  size_t cap = 0, len = 0;
  ck_assert_int_eq(storage__shape_encode(&k, &buf, &cap, &len), 0);
  ck_assert_uint_eq(len, 4 + 3 * 4 + 5 * 8);
  uint32_t *r2;
  int64_t *d2;
  size_t n2;
  ck_assert_int_eq(storage__shape_decode(buf, len, &r2, &d2, &n2), 0);
  ck_assert_uint_eq(n2, 3);
  ck_assert_mem_eq(r2, ranks, sizeof ranks);
  ck_assert_mem_eq(d2, dims, sizeof dims);
  free(r2);
  free(d2);
  /* Truncated or padded blobs are corrupt. */
  ck_assert_int_eq(storage__shape_decode(buf, len - 1, &r2, &d2, &n2),
                   ARENA_ECORRUPT);
  ck_assert_ptr_null(r2);
  ck_assert_int_eq(storage__shape_decode(buf, 3, &r2, &d2, &n2),
                   ARENA_ECORRUPT);
  buf[4] = 200; /* rank 200 */
  ck_assert_int_eq(storage__shape_decode(buf, len, &r2, &d2, &n2),
                   ARENA_ECORRUPT);

  /* Bad keys. */
  dims[0] = -1;
  ck_assert_int_eq(storage__shape_encode(&k, &buf, &cap, &len), ARENA_EINVAL);
  dims[0] = 1;
  k.model_hash_len = 65;
  ck_assert_int_eq(storage__shape_encode(&k, &buf, &cap, &len), ARENA_EINVAL);
  k.model_hash_len = 0;
  ck_assert_int_eq(storage__shape_encode(&k, &buf, &cap, &len), ARENA_EINVAL);
  k.model_hash_len = 1;
  ranks[1] = STORAGE_MAX_RANK + 1;
  ck_assert_int_eq(storage__shape_encode(&k, &buf, &cap, &len), ARENA_EINVAL);
  /* No inputs at all is a legal shape. */
  k.n_inputs = 0;
  ck_assert_int_eq(storage__shape_encode(&k, &buf, &cap, &len), 0);
  ck_assert_uint_eq(len, 4);
  free(buf);
}
END_TEST

START_TEST(codec_offsets)
{
  uint64_t off[6] = {0, 64, 128, 1ull << 40, 64 * 3, UINT64_MAX - 63};
  size_t perm[6] = {5, 4, 3, 2, 1, 0};
  uint8_t *blob;
  size_t len;
  uint64_t back[6];
  ck_assert_int_eq(storage__offsets_encode(off, 6, NULL, &blob, &len), 0);
  ck_assert_uint_eq(blob[0], STORAGE__OFFSETS_FORMAT);
  ck_assert_uint_eq(blob[1], 6); /* every offset is a multiple of 64 */
  ck_assert_int_eq(storage__offsets_decode(blob, len, 6, NULL, back), 0);
  ck_assert_mem_eq(back, off, sizeof off);
  /* Wrong count, truncation, trailing bytes and a bad format fail. */
  ck_assert_int_eq(storage__offsets_decode(blob, len, 5, NULL, back),
                   ARENA_ECORRUPT);
  ck_assert_int_eq(storage__offsets_decode(blob, len - 1, 6, NULL, back),
                   ARENA_ECORRUPT);
  uint8_t *longer = malloc(len + 1);
  memcpy(longer, blob, len);
  longer[len] = 0;
  ck_assert_int_eq(storage__offsets_decode(longer, len + 1, 6, NULL, back),
                   ARENA_ECORRUPT);
  longer[0] = 9;
  ck_assert_int_eq(storage__offsets_decode(longer, len, 6, NULL, back),
                   ARENA_ECORRUPT);
  free(longer);
  free(blob);

  /* Permuted encode and decode are inverses. */
  ck_assert_int_eq(storage__offsets_encode(off, 6, perm, &blob, &len), 0);
  ck_assert_int_eq(storage__offsets_decode(blob, len, 6, NULL, back), 0);
  for (int i = 0; i < 6; i++)
    ck_assert_uint_eq(back[i], off[5 - i]);
  ck_assert_int_eq(storage__offsets_decode(blob, len, 6, perm, back), 0);
  ck_assert_mem_eq(back, off, sizeof off);
  free(blob);

  /* Odd offsets: shift 0; all zero: shift 0. */
  uint64_t odd[2] = {3, 0}, zero[3] = {0, 0, 0};
  ck_assert_int_eq(storage__offsets_encode(odd, 2, NULL, &blob, &len), 0);
  ck_assert_uint_eq(blob[1], 0);
  free(blob);
  ck_assert_int_eq(storage__offsets_encode(zero, 3, NULL, &blob, &len), 0);
  ck_assert_uint_eq(len, 6);
  ck_assert_int_eq(storage__offsets_decode(blob, len, 3, NULL, back), 0);
  ck_assert_uint_eq(back[2], 0);
  free(blob);

  /* An 11-byte varint is rejected. */
  uint8_t bad[16] = {STORAGE__OFFSETS_FORMAT, 0, 1};
  memset(bad + 3, 0xff, 10);
  bad[13] = 0x01;
  ck_assert_int_eq(storage__offsets_decode(bad, 14, 1, NULL, back),
                   ARENA_ECORRUPT);
}
END_TEST

START_TEST(codec_perm_and_checksum)
{
  struct planner_tensor t[4] = {
      {.id = 7, .size = 1, .pinned = -1},
      {.id = 2, .size = 1, .pinned = -1},
      {.id = 9, .size = 1, .pinned = -1},
      {.id = 0, .size = 1, .pinned = -1},
  };
  struct planner_graph g = {t, 4};
  size_t *perm;
  ck_assert_int_eq(storage__canonical_perm(&g, &perm), 0);
  ck_assert_ptr_nonnull(perm);
  ck_assert_uint_eq(perm[0], 3);
  ck_assert_uint_eq(perm[1], 1);
  ck_assert_uint_eq(perm[2], 0);
  ck_assert_uint_eq(perm[3], 2);
  free(perm);
  g.tensors = t + 3; /* one tensor: already canonical */
  g.n_tensors = 1;
  ck_assert_int_eq(storage__canonical_perm(&g, &perm), 0);
  ck_assert_ptr_null(perm);

  uint8_t gd[32] = {1}, od[32] = {2}, offs[4] = {1, 0, 1, 0};
  struct storage__row r = {
      .model_hash = (const uint8_t *)"m", .model_hash_len = 1,
      .shape = (const uint8_t *)"\0\0\0\0", .shape_len = 4,
      .graph_digest = gd, .options_digest = od, .n_tensors = 1,
      .offsets = offs, .offsets_len = 4, .arena_bytes = 10};
  uint8_t a[32], b[32];
  storage__checksum(&r, a);
  r.arena_bytes = 11;
  storage__checksum(&r, b);
  ck_assert(memcmp(a, b, 32) != 0);
  r.arena_bytes = 10;
  r.model_hash_len = 0; /* the boundary between fields matters */
  storage__checksum(&r, b);
  ck_assert(memcmp(a, b, 32) != 0);
  r.model_hash_len = 1;
  storage__checksum(&r, b);
  ck_assert_mem_eq(a, b, 32);
  ck_assert_uint_eq(storage__entry_bytes(&r), 128 + 1 + 4 + 96 + 4);
}
END_TEST

/* ---- round trips -------------------------------------------------------- */

static void round_trip(size_t n, enum planner_algo a)
{
  struct planner_tensor *t = make_tensors(n, n);
  struct planner_graph g = {t, n};
  struct planner_plan p, q;
  struct tkey k;
  struct storage_info info;
  struct planner_options o;
  plan_ok(&g, a, &p);
  key_init(&k, 1, 224);
  opts(&o, PLANNER_ALGO_BEST);

  storage_t *st = open_with(NULL);
  ck_assert_int_eq(put_ok(st, &k, &g, &p), STORAGE_PUT_INSERTED);
  planner_plan_init(&q);
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, &info), 0);
  ck_assert_str_eq(storage_errmsg(st), "");
  ck_assert_uint_eq(q.n_offsets, n);
  ck_assert_mem_eq(q.offsets, p.offsets, n * sizeof *p.offsets);
  ck_assert_uint_eq(q.arena_bytes, p.arena_bytes);
  ck_assert_uint_eq(q.lower_bound_bytes, p.lower_bound_bytes);
  ck_assert_uint_eq(q.naive_bytes, p.naive_bytes);
  ck_assert_int_eq(q.algo, p.algo);
  ck_assert_int_eq(q.proven_optimal, p.proven_optimal);
  ck_assert_uint_eq(info.plan_us, 1234);
  ck_assert_uint_eq(info.n_tensors, n);
  ck_assert_int_ge(info.created_ms, 1600000000000ll);
  storage_close(st);

  /* A second handle (as after a restart) gets the same plan. */
  st = open_with(NULL);
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, NULL), 0);
  ck_assert_mem_eq(q.offsets, p.offsets, n * sizeof *p.offsets);
  storage_close(st);
  planner_plan_cleanup(&p);
  planner_plan_cleanup(&q);
  free(t);
}

START_TEST(round_trip_1)
{
  round_trip(1, PLANNER_ALGO_BEST);
}
END_TEST

START_TEST(round_trip_100k)
{
  round_trip(100000, PLANNER_ALGO_GREEDY_SIZE);
}
END_TEST

/* The planner rejects empty graphs, so the cache never holds one: a put
 * of 0 tensors fails with the planner's ARENA_EEMPTY and writes nothing,
 * and a get of 0 tensors is ARENA_EINVAL. 1 tensor is the smallest plan. */
START_TEST(empty_graph_rejected)
{
  struct planner_tensor one = {.id = 0, .size = 8, .pinned = -1};
  struct planner_graph g = {&one, 0};
  struct planner_plan p;
  struct planner_options o;
  struct tkey k;
  struct storage_stats s;
  uint64_t zero = 0;
  planner_plan_init(&p);
  p.offsets = &zero;
  opts(&o, PLANNER_ALGO_BEST);
  key_init(&k, 1, 1);
  storage_t *st = open_with(NULL);
  ck_assert_int_eq(storage_put(st, &k.k, &g, &o, &p, 0, NULL), ARENA_EEMPTY);
  ck_assert_str_ne(storage_errmsg(st), "");
  p.offsets = NULL;
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &p, NULL), ARENA_EINVAL);
  stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 0);
  storage_close(st);
}
END_TEST

/* The same graph listed in another order gets offsets in its own order. */
START_TEST(tensor_order_independent)
{
  size_t n = 300;
  struct planner_tensor *t = make_tensors(n, 5), *u = malloc(n * sizeof *u);
  struct planner_graph g = {t, n}, h = {u, n};
  struct planner_plan p, q;
  struct tkey k;
  uint64_t s = 99;
  memcpy(u, t, n * sizeof *t);
  for (size_t i = n - 1; i > 0; i--) {
    size_t j = (size_t)tu_rand_range(&s, 0, i);
    struct planner_tensor x = u[i];
    u[i] = u[j];
    u[j] = x;
  }
  plan_ok(&g, PLANNER_ALGO_BEST, &p);
  key_init(&k, 1, 2);
  storage_t *st = open_with(NULL);
  put_ok(st, &k, &g, &p);
  planner_plan_init(&q);
  ck_assert_int_eq(get_rc(st, &k, &h, &q), 0);
  for (size_t i = 0; i < n; i++)
    ck_assert_uint_eq(q.offsets[i], p.offsets[u[i].id]);

  /* Put in shuffled order, get in id order: same answer. */
  struct tkey k2;
  key_init(&k2, 2, 2);
  put_ok(st, &k2, &h, &q);
  struct planner_plan r;
  planner_plan_init(&r);
  ck_assert_int_eq(get_rc(st, &k2, &g, &r), 0);
  ck_assert_mem_eq(r.offsets, p.offsets, n * sizeof *p.offsets);
  storage_close(st);
  planner_plan_cleanup(&p);
  planner_plan_cleanup(&q);
  planner_plan_cleanup(&r);
  free(t);
  free(u);
}
END_TEST

/* Different graphs or options under one model hash never share plans. */
START_TEST(key_isolation)
{
  struct planner_tensor *t = make_tensors(50, 1), *u = make_tensors(50, 2);
  struct planner_graph g = {t, 50}, h = {u, 50};
  struct planner_plan p, q;
  struct planner_options o;
  struct tkey k, k_shape;
  key_init(&k, 1, 10);
  key_init(&k_shape, 1, 11);
  plan_ok(&g, PLANNER_ALGO_BEST, &p);
  storage_t *st = open_with(NULL);
  put_ok(st, &k, &g, &p);
  planner_plan_init(&q);
  ck_assert_int_eq(get_rc(st, &k, &h, &q), ARENA_ENOENT); /* other graph */
  ck_assert_ptr_null(q.offsets);
  ck_assert_int_eq(get_rc(st, &k_shape, &g, &q), ARENA_ENOENT);
  opts(&o, PLANNER_ALGO_BEST);
  o.alignment = 128;
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, NULL), ARENA_ENOENT);
  opts(&o, PLANNER_ALGO_BEST);
  o.capacity = 1 << 30;
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, NULL), ARENA_ENOENT);
  opts(&o, PLANNER_ALGO_NAIVE);
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, NULL), ARENA_ENOENT);
  /* The budget is not part of the key. */
  opts(&o, PLANNER_ALGO_BEST);
  o.budget_ms = 7;
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, NULL), 0);
  storage_close(st);
  planner_plan_cleanup(&p);
  planner_plan_cleanup(&q);
  free(t);
  free(u);
}
END_TEST

START_TEST(bad_arguments)
{
  struct planner_tensor *t = make_tensors(5, 1);
  struct planner_graph g = {t, 5};
  struct planner_plan p;
  struct planner_options o;
  struct tkey k;
  plan_ok(&g, PLANNER_ALGO_BEST, &p);
  opts(&o, PLANNER_ALGO_BEST);
  key_init(&k, 1, 1);
  storage_t *st = open_with(NULL);
  k.k.model_hash_len = 0;
  ck_assert_int_eq(storage_put(st, &k.k, &g, &o, &p, 0, NULL), ARENA_EINVAL);
  k.k.model_hash_len = STORAGE_MODEL_HASH_MAX + 1;
  struct planner_plan q;
  planner_plan_init(&q);
  ck_assert_int_eq(storage_get(st, &k.k, &g, &o, &q, NULL), ARENA_EINVAL);
  ck_assert_ptr_null(q.offsets); /* out is empty on failure */
  k.dims[1] = -3;
  k.k.model_hash_len = 3;
  ck_assert_int_eq(storage_put(st, &k.k, &g, &o, &p, 0, NULL), ARENA_EINVAL);

  storage_t *bad = (storage_t *)1;
  char err[ARENA_ERR_LEN];
  char path[600];
  snprintf(path, sizeof path, "%s/no/such/dir/x.db", tmpdir);
  ck_assert_int_ne(storage_open(path, NULL, &bad, err), 0);
  ck_assert_ptr_null(bad);
  ck_assert_int_eq(storage_open("", NULL, &bad, NULL), ARENA_EINVAL);
  storage_close(NULL);
  storage_close(st);
  planner_plan_cleanup(&p);
  free(t);
}
END_TEST

/* ---- upgrades ----------------------------------------------------------- */

START_TEST(upgrade_rules)
{
  size_t n = 200;
  struct planner_tensor *t = make_tensors(n, 3);
  struct planner_graph g = {t, n};
  struct planner_plan naive, best, q;
  struct tkey k;
  struct storage_stats s;
  plan_ok(&g, PLANNER_ALGO_NAIVE, &naive);
  plan_ok(&g, PLANNER_ALGO_BEST, &best);
  ck_assert_uint_lt(best.arena_bytes, naive.arena_bytes);
  key_init(&k, 1, 1);
  storage_t *st = open_with(NULL);

  ck_assert_int_eq(put_ok(st, &k, &g, &naive), STORAGE_PUT_INSERTED);
  ck_assert_int_eq(put_ok(st, &k, &g, &best), STORAGE_PUT_UPGRADED);
  ck_assert_int_eq(put_ok(st, &k, &g, &naive), STORAGE_PUT_KEPT);
  ck_assert_int_eq(put_ok(st, &k, &g, &best), STORAGE_PUT_KEPT);
  planner_plan_init(&q);
  ck_assert_int_eq(get_rc(st, &k, &g, &q), 0);
  ck_assert_uint_eq(q.arena_bytes, best.arena_bytes);
  ck_assert_mem_eq(q.offsets, best.offsets, n * sizeof *q.offsets);

  /* Same arena, now proven optimal: upgrade; the reverse: kept. */
  struct planner_plan proven = best;
  best.proven_optimal = 0;
  proven.proven_optimal = 1;
  struct tkey k2;
  key_init(&k2, 2, 1);
  ck_assert_int_eq(put_ok(st, &k2, &g, &best), STORAGE_PUT_INSERTED);
  ck_assert_int_eq(put_ok(st, &k2, &g, &best), STORAGE_PUT_KEPT);
  ck_assert_int_eq(put_ok(st, &k2, &g, &proven), STORAGE_PUT_UPGRADED);
  ck_assert_int_eq(put_ok(st, &k2, &g, &best), STORAGE_PUT_KEPT);
  ck_assert_int_eq(get_rc(st, &k2, &g, &q), 0);
  ck_assert_int_eq(q.proven_optimal, 1);

  stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 2);

  /* An invalid plan is rejected before anything is written. */
  struct planner_plan broken = best;
  uint64_t *offs = malloc(n * sizeof *offs);
  memcpy(offs, best.offsets, n * sizeof *offs);
  for (size_t i = 0; i < n; i++)
    offs[i] = 0; /* everything at 0 overlaps */
  broken.offsets = offs;
  broken.arena_bytes = 1;
  struct planner_options o;
  opts(&o, PLANNER_ALGO_BEST);
  struct tkey k3;
  key_init(&k3, 3, 1);
  ck_assert_int_eq(storage_put(st, &k3.k, &g, &o, &broken, 0, NULL),
                   ARENA_EVERIFY);
  ck_assert_ptr_nonnull(strstr(storage_errmsg(st), "plan rejected"));
  stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 2);
  free(offs);

  storage_close(st);
  best.proven_optimal = proven.proven_optimal; /* one offsets array */
  planner_plan_cleanup(&naive);
  planner_plan_cleanup(&best);
  planner_plan_cleanup(&q);
  free(t);
}
END_TEST

/* ---- eviction and caps -------------------------------------------------- */

struct fleet {
  struct planner_tensor *t[8]; /* graphs 0..7 */
  struct planner_graph g[8];   /* views */
  struct planner_plan p[8];    /* their plans */
  struct tkey k[8];            /* keys model-0..7 */
};

static void fleet_init(struct fleet *f, size_t n)
{
  for (int i = 0; i < 8; i++) {
    f->t[i] = make_tensors(n, 100 + (uint64_t)i);
    f->g[i].tensors = f->t[i];
    f->g[i].n_tensors = n;
    plan_ok(&f->g[i], PLANNER_ALGO_BEST, &f->p[i]);
    key_init(&f->k[i], (unsigned)i, 8);
  }
}

static void fleet_cleanup(struct fleet *f)
{
  for (int i = 0; i < 8; i++) {
    planner_plan_cleanup(&f->p[i]);
    free(f->t[i]);
  }
}

static int has(storage_t *st, struct fleet *f, int i)
{
  struct planner_plan q;
  planner_plan_init(&q);
  int rc = get_rc(st, &f->k[i], &f->g[i], &q);
  ck_assert(rc == 0 || rc == ARENA_ENOENT);
  planner_plan_cleanup(&q);
  return rc == 0;
}

START_TEST(evict_lru_entries)
{
  struct fleet f;
  struct storage_options o;
  struct storage_stats s;
  fleet_init(&f, 40);
  storage_options_init(&o);
  o.max_entries = 3;
  o.touch_batch = 1000; /* uses stay pending until the next put */
  storage_t *st = open_with(&o);
  put_ok(st, &f.k[0], &f.g[0], &f.p[0]);
  put_ok(st, &f.k[1], &f.g[1], &f.p[1]);
  put_ok(st, &f.k[2], &f.g[2], &f.p[2]);
  ck_assert(has(st, &f, 0)); /* 0 is now the most recent */
  put_ok(st, &f.k[3], &f.g[3], &f.p[3]); /* evicts 1 */
  stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 3);
  ck_assert_uint_eq(s.evictions, 1);
  put_ok(st, &f.k[4], &f.g[4], &f.p[4]); /* evicts 2 */
  ck_assert(!has(st, &f, 1));
  ck_assert(!has(st, &f, 2));
  ck_assert(has(st, &f, 3));
  ck_assert(has(st, &f, 0));
  ck_assert(has(st, &f, 4));
  put_ok(st, &f.k[5], &f.g[5], &f.p[5]); /* evicts 3, the least recent */
  ck_assert(!has(st, &f, 3));
  stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 3);
  ck_assert_uint_eq(s.evictions, 3);
  /* A put that only keeps the stored plan still refreshes nothing and
   * evicts nothing. */
  ck_assert_int_eq(put_ok(st, &f.k[5], &f.g[5], &f.p[5]), STORAGE_PUT_KEPT);
  stats_of(st, &s);
  ck_assert_uint_eq(s.evictions, 3);
  storage_close(st);
  fleet_cleanup(&f);
}
END_TEST

START_TEST(evict_lru_bytes)
{
  struct fleet f;
  struct storage_options o;
  struct storage_stats s;
  fleet_init(&f, 40);
  storage_t *st = open_with(NULL);
  put_ok(st, &f.k[0], &f.g[0], &f.p[0]);
  stats_of(st, &s);
  uint64_t one = s.bytes; /* accounted bytes of one plan, about the same
                             for every plan of the fleet */
  ck_assert_uint_gt(one, 128);
  storage_close(st);
  ck_assert_int_eq(unlink(dbpath), 0);

  storage_options_init(&o);
  o.max_bytes = one * 3 + one / 2;
  st = open_with(&o);
  for (int i = 0; i < 6; i++) {
    put_ok(st, &f.k[i], &f.g[i], &f.p[i]);
    stats_of(st, &s);
    ck_assert_uint_le(s.bytes, o.max_bytes);
  }
  ck_assert_uint_eq(s.entries, 3);
  ck_assert_uint_eq(s.evictions, 3);
  ck_assert(!has(st, &f, 0));
  ck_assert(!has(st, &f, 2));
  ck_assert(has(st, &f, 3));
  ck_assert(has(st, &f, 5));
  storage_close(st);

  /* A plan that alone exceeds the cap is refused. */
  o.max_bytes = one / 2;
  st = open_with(&o);
  struct planner_options po;
  opts(&po, PLANNER_ALGO_BEST);
  ck_assert_int_eq(storage_put(st, &f.k[6].k, &f.g[6], &po, &f.p[6], 0, NULL),
                   ARENA_ETOOBIG);
  ck_assert(!has(st, &f, 6));
  storage_close(st);
  fleet_cleanup(&f);
}
END_TEST

/* ---- lookup, list, evict, stats ---------------------------------------- */

START_TEST(lookup_by_model_and_shape)
{
  struct fleet f;
  fleet_init(&f, 30);
  storage_t *st = open_with(NULL);
  struct tkey m, other_shape, other_model;
  key_init(&m, 77, 8);
  key_init(&other_shape, 77, 9);
  key_init(&other_model, 78, 8);
  for (int i = 0; i < 3; i++)
    put_ok(st, &m, &f.g[i], &f.p[i]);
  put_ok(st, &other_shape, &f.g[3], &f.p[3]);
  put_ok(st, &other_model, &f.g[4], &f.p[4]);

  struct storage_record *r;
  size_t n;
  ck_assert_int_eq(storage_lookup(st, &m.k, &r, &n), 0);
  ck_assert_uint_eq(n, 3);
  int seen[3] = {0, 0, 0};
  for (size_t j = 0; j < n; j++) {
    ck_assert_uint_eq(r[j].model_hash_len, strlen(m.hash));
    ck_assert_mem_eq(r[j].model_hash, m.hash, strlen(m.hash));
    ck_assert_uint_eq(r[j].n_inputs, 1);
    ck_assert_uint_eq(r[j].ranks[0], 4);
    ck_assert_int_eq(r[j].dims[1], 8);
    for (int i = 0; i < 3; i++) {
      uint8_t gd[PLANNER_DIGEST_LEN];
      ck_assert_int_eq(planner_graph_digest(&f.g[i], gd), 0);
      if (memcmp(gd, r[j].graph_digest, sizeof gd) == 0) {
        seen[i]++;
        /* Ids are ascending, so canonical order is graph order. */
        ck_assert_mem_eq(r[j].plan.offsets, f.p[i].offsets,
                         30 * sizeof(uint64_t));
        ck_assert_uint_eq(r[j].plan.arena_bytes, f.p[i].arena_bytes);
      }
    }
  }
  ck_assert(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
  storage_records_free(r, n);

  ck_assert_int_eq(storage_lookup(st, &other_shape.k, &r, &n), 0);
  ck_assert_uint_eq(n, 1);
  storage_records_free(r, n);
  struct tkey none;
  key_init(&none, 79, 8);
  ck_assert_int_eq(storage_lookup(st, &none.k, &r, &n), 0);
  ck_assert_uint_eq(n, 0);
  ck_assert_ptr_null(r);
  storage_close(st);
  fleet_cleanup(&f);
}
END_TEST

START_TEST(list_and_evict)
{
  struct fleet f;
  fleet_init(&f, 20);
  struct storage_options o;
  storage_options_init(&o);
  o.touch_batch = 1000;
  storage_t *st = open_with(&o);
  struct tkey a, b;
  key_init(&a, 1, 8);
  key_init(&b, 2, 8);
  for (int i = 0; i < 5; i++)
    put_ok(st, &a, &f.g[i], &f.p[i]);
  for (int i = 5; i < 8; i++)
    put_ok(st, &b, &f.g[i], &f.p[i]);
  /* Hits: graph 6 three times, graph 2 twice. */
  struct planner_plan q;
  planner_plan_init(&q);
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(get_rc(st, &b, &f.g[6], &q), 0);
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(get_rc(st, &a, &f.g[2], &q), 0);

  struct storage_list_query lq = {NULL, 0, STORAGE_ORDER_MOST_USED, 0, 2};
  struct storage_record *r;
  size_t n;
  uint8_t gd[PLANNER_DIGEST_LEN];
  ck_assert_int_eq(storage_list(st, &lq, &r, &n), 0);
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(r[0].info.hits, 3);
  ck_assert_uint_eq(r[1].info.hits, 2);
  ck_assert_ptr_null(r[0].plan.offsets);
  ck_assert_uint_eq(r[0].plan.n_offsets, 20);
  planner_graph_digest(&f.g[6], gd);
  ck_assert_mem_eq(r[0].graph_digest, gd, sizeof gd);
  ck_assert_int_ge(r[0].info.last_used_ms, r[0].info.created_ms);
  storage_records_free(r, n);

  /* Paging through one model's plans, newest first. */
  lq.model_hash = (const uint8_t *)a.hash;
  lq.model_hash_len = strlen(a.hash);
  lq.order = STORAGE_ORDER_NEWEST;
  size_t total = 0;
  for (lq.offset = 0;; lq.offset += 2) {
    ck_assert_int_eq(storage_list(st, &lq, &r, &n), 0);
    for (size_t j = 0; j < n; j++) {
      ck_assert_mem_eq(r[j].model_hash, a.hash, strlen(a.hash));
      if (j > 0)
        ck_assert_int_ge(r[j - 1].info.created_ms, r[j].info.created_ms);
    }
    storage_records_free(r, n);
    total += n;
    if (n < 2)
      break;
  }
  ck_assert_uint_eq(total, 5);
  lq.limit = 0;
  ck_assert_int_eq(storage_list(st, &lq, &r, &n), ARENA_EINVAL);

  /* Evict one key, then one model, then everything. */
  uint64_t removed;
  uint8_t od[PLANNER_DIGEST_LEN];
  struct planner_options po;
  opts(&po, PLANNER_ALGO_BEST);
  planner_options_digest(&po, od);
  planner_graph_digest(&f.g[0], gd);
  ck_assert_int_eq(storage_evict(st, &a.k, gd, od, &removed), 0);
  ck_assert_uint_eq(removed, 1);
  ck_assert_int_eq(storage_evict(st, &a.k, gd, od, &removed), 0);
  ck_assert_uint_eq(removed, 0);
  ck_assert_int_eq(get_rc(st, &a, &f.g[0], &q), ARENA_ENOENT);
  ck_assert_int_eq(storage_evict_model(st, (const uint8_t *)a.hash,
                                       strlen(a.hash), &removed),
                   0);
  ck_assert_uint_eq(removed, 4);
  struct storage_stats s;
  stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 3);
  ck_assert_uint_eq(s.removed, 5);
  ck_assert_int_eq(storage_evict_all(st, &removed), 0);
  ck_assert_uint_eq(removed, 3);
  stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 0);
  ck_assert_uint_eq(s.bytes, 0);
  ck_assert_uint_eq(s.removed, 8);
  ck_assert_uint_eq(s.evictions, 0);
  ck_assert_int_eq(storage_evict_model(st, NULL, 0, &removed), ARENA_EINVAL);

  planner_plan_cleanup(&q);
  storage_close(st);
  fleet_cleanup(&f);
}
END_TEST

/* Hits are counted in memory and written in one transaction per batch:
 * the database does not change until the batch fills. */
START_TEST(stats_and_batched_touches)
{
  struct fleet f;
  fleet_init(&f, 20);
  struct storage_options o;
  storage_options_init(&o);
  o.touch_batch = 4;
  storage_t *st = open_with(&o);
  put_ok(st, &f.k[0], &f.g[0], &f.p[0]);
  put_ok(st, &f.k[1], &f.g[1], &f.p[1]);
  sqlite3 *db = raw_open(dbpath);
  struct planner_plan q;
  planner_plan_init(&q);
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(get_rc(st, &f.k[0], &f.g[0], &q), 0);
  ck_assert_int_eq(get_rc(st, &f.k[2], &f.g[2], &q), ARENA_ENOENT);
  ck_assert_int_eq(raw_int(db, "SELECT sum(hits) FROM plans"), 0);
  ck_assert_int_eq(raw_int(db, "SELECT hits + misses FROM stats"), 0);
  struct storage_stats s;
  stats_of(st, &s); /* includes what is pending */
  ck_assert_uint_eq(s.hits, 3);
  ck_assert_uint_eq(s.misses, 1);
  ck_assert_uint_eq(s.entries, 2);
  ck_assert_uint_gt(s.file_bytes, 0);
  ck_assert_int_eq(get_rc(st, &f.k[1], &f.g[1], &q), 0); /* 4th: flush */
  ck_assert_int_eq(raw_int(db, "SELECT sum(hits) FROM plans"), 4);
  ck_assert_int_eq(raw_int(db, "SELECT hits FROM stats"), 4);
  ck_assert_int_eq(raw_int(db, "SELECT misses FROM stats"), 1);

  ck_assert_int_eq(get_rc(st, &f.k[1], &f.g[1], &q), 0);
  ck_assert_int_eq(storage_flush(st), 0);
  ck_assert_int_eq(raw_int(db, "SELECT hits FROM plans WHERE hits = 2"), 2);
  ck_assert_int_eq(get_rc(st, &f.k[1], &f.g[1], &q), 0);
  storage_close(st); /* close flushes too */
  ck_assert_int_eq(raw_int(db, "SELECT hits FROM stats"), 6);
  ck_assert_int_eq(raw_int(db, "SELECT max(hits) FROM plans"), 3);

  st = open_with(&o);
  stats_of(st, &s);
  ck_assert_uint_eq(s.hits, 6);
  ck_assert_uint_eq(s.misses, 1);
  ck_assert_uint_eq(s.bytes,
                    (uint64_t)raw_int(db, "SELECT sum(bytes) FROM plans"));
  ck_assert_int_eq(storage_vacuum(st), 0);
  stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 2);
  ck_assert_int_eq(get_rc(st, &f.k[1], &f.g[1], &q), 0);
  storage_close(st);
  sqlite3_close(db);
  planner_plan_cleanup(&q);
  fleet_cleanup(&f);
}
END_TEST

START_TEST(sqlite_settings)
{
  storage_t *st = open_with(NULL);
  sqlite3 *db = raw_open(dbpath);
  ck_assert_int_eq(raw_int(db, "PRAGMA application_id"), STORAGE__APP_ID);
  ck_assert_int_eq(raw_int(db, "PRAGMA user_version"),
                   STORAGE__SCHEMA_VERSION);
  sqlite3_stmt *s;
  ck_assert_int_eq(
      sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
  ck_assert_str_eq((const char *)sqlite3_column_text(s, 0), "wal");
  sqlite3_finalize(s);
  sqlite3_close(db);
  storage_close(st);
}
END_TEST

/* Another connection holding the write lock past the busy timeout makes
 * writes fail with ARENA_EBUSY and change nothing, while reads go on (WAL);
 * pending uses survive a failed flush and are written later. */
START_TEST(busy_writer)
{
  struct fleet f;
  fleet_init(&f, 20);
  struct storage_options o;
  storage_options_init(&o);
  o.busy_timeout_ms = 50;
  o.touch_batch = 1000;
  storage_t *st = open_with(&o);
  put_ok(st, &f.k[0], &f.g[0], &f.p[0]);
  struct planner_plan q;
  planner_plan_init(&q);
  ck_assert_int_eq(get_rc(st, &f.k[0], &f.g[0], &q), 0); /* pending use */

  sqlite3 *db = raw_open(dbpath);
  raw_exec(db, "BEGIN IMMEDIATE");
  struct planner_options po;
  opts(&po, PLANNER_ALGO_BEST);
  ck_assert_int_eq(storage_put(st, &f.k[1].k, &f.g[1], &po, &f.p[1], 0, NULL),
                   ARENA_EBUSY);
  ck_assert_str_ne(storage_errmsg(st), "");
  ck_assert_int_eq(storage_flush(st), ARENA_EBUSY);
  ck_assert_int_eq(get_rc(st, &f.k[0], &f.g[0], &q), 0); /* reads work */
  raw_exec(db, "ROLLBACK");

  ck_assert(!has(st, &f, 1));
  ck_assert_int_eq(storage_flush(st), 0);
  ck_assert_str_eq(storage_errmsg(st), "");
  ck_assert_int_eq(raw_int(db, "SELECT hits FROM plans"), 2);
  ck_assert_int_eq(raw_int(db, "SELECT misses FROM stats"), 1);
  put_ok(st, &f.k[1], &f.g[1], &f.p[1]);
  sqlite3_close(db);
  storage_close(st);
  planner_plan_cleanup(&q);
  fleet_cleanup(&f);
}
END_TEST

/* ---- migration ---------------------------------------------------------- */

/* The version 1 schema exactly as released, frozen here on purpose: the
 * test must keep building v1 files even when schema.c moves on. */
static const char v1_sql[] =
    "CREATE TABLE plans (id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " model_hash BLOB NOT NULL, shape BLOB NOT NULL,"
    " graph_digest BLOB NOT NULL, options_digest BLOB NOT NULL,"
    " n_tensors INTEGER NOT NULL, offsets BLOB NOT NULL,"
    " arena_bytes INTEGER NOT NULL, lower_bound INTEGER NOT NULL,"
    " naive_bytes INTEGER NOT NULL, proven_optimal INTEGER NOT NULL,"
    " algo INTEGER NOT NULL, fit INTEGER NOT NULL, bound INTEGER NOT NULL,"
    " plan_us INTEGER NOT NULL, created_ms INTEGER NOT NULL,"
    " last_used_ms INTEGER NOT NULL, hits INTEGER NOT NULL DEFAULT 0,"
    " checksum BLOB NOT NULL);"
    "CREATE UNIQUE INDEX plans_key"
    " ON plans(model_hash, shape, graph_digest, options_digest);"
    "CREATE INDEX plans_last_used ON plans(last_used_ms);"
    "PRAGMA application_id = 1095910734;" /* 0x4152454e */
    "PRAGMA user_version = 1;";

/* Inserts a v1 row for plan p of graph g under key k. Returns its
 * accounted bytes. */
static uint64_t v1_insert(sqlite3 *db, const struct tkey *k,
                          const struct planner_graph *g,
                          const struct planner_plan *p, int64_t last_used,
                          int64_t hits)
{
  uint8_t *shape = NULL, *blob = NULL;
  size_t cap = 0, shape_len, blob_len;
  uint8_t gd[32], od[32], sum[32];
  struct planner_options o;
  opts(&o, PLANNER_ALGO_BEST);
  ck_assert_int_eq(storage__shape_encode(&k->k, &shape, &cap, &shape_len), 0);
  ck_assert_int_eq(planner_graph_digest(g, gd), 0);
  planner_options_digest(&o, od);
  ck_assert_int_eq(
      storage__offsets_encode(p->offsets, p->n_offsets, NULL, &blob, &blob_len),
      0);
  struct storage__row r = {
      .model_hash = k->k.model_hash, .model_hash_len = k->k.model_hash_len,
      .shape = shape, .shape_len = shape_len, .graph_digest = gd,
      .options_digest = od, .n_tensors = p->n_offsets, .offsets = blob,
      .offsets_len = blob_len, .arena_bytes = p->arena_bytes,
      .lower_bound = p->lower_bound_bytes, .naive_bytes = p->naive_bytes,
      .proven_optimal = (uint32_t)p->proven_optimal, .algo = p->algo,
      .fit = p->fit, .bound = p->bound, .plan_us = 5, .created_ms = 1000};
  storage__checksum(&r, sum);
  sqlite3_stmt *s;
  ck_assert_int_eq(
      sqlite3_prepare_v2(
          db,
          "INSERT INTO plans (model_hash, shape, graph_digest,"
          " options_digest, n_tensors, offsets, arena_bytes, lower_bound,"
          " naive_bytes, proven_optimal, algo, fit, bound, plan_us,"
          " created_ms, last_used_ms, hits, checksum) VALUES (?, ?, ?, ?, ?,"
          " ?, ?, ?, ?, ?, ?, ?, ?, 5, 1000, ?, ?, ?)",
          -1, &s, NULL),
      SQLITE_OK);
  sqlite3_bind_blob(s, 1, r.model_hash, (int)r.model_hash_len, NULL);
  sqlite3_bind_blob(s, 2, shape, (int)shape_len, NULL);
  sqlite3_bind_blob(s, 3, gd, 32, NULL);
  sqlite3_bind_blob(s, 4, od, 32, NULL);
  sqlite3_bind_int64(s, 5, (int64_t)r.n_tensors);
  sqlite3_bind_blob(s, 6, blob, (int)blob_len, NULL);
  sqlite3_bind_int64(s, 7, (int64_t)r.arena_bytes);
  sqlite3_bind_int64(s, 8, (int64_t)r.lower_bound);
  sqlite3_bind_int64(s, 9, (int64_t)r.naive_bytes);
  sqlite3_bind_int64(s, 10, r.proven_optimal);
  sqlite3_bind_int64(s, 11, r.algo);
  sqlite3_bind_int64(s, 12, r.fit);
  sqlite3_bind_int64(s, 13, r.bound);
  sqlite3_bind_int64(s, 14, last_used);
  sqlite3_bind_int64(s, 15, hits);
  sqlite3_bind_blob(s, 16, sum, 32, NULL);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_DONE);
  sqlite3_finalize(s);
  uint64_t bytes = storage__entry_bytes(&r);
  free(shape);
  free(blob);
  return bytes;
}

START_TEST(migrate_from_v1)
{
  struct fleet f;
  fleet_init(&f, 25);
  sqlite3 *db = raw_open(dbpath);
  raw_exec(db, v1_sql);
  /* Last use: plan 0 newest, plan 1 oldest, plan 2 in between. */
  uint64_t bytes = v1_insert(db, &f.k[0], &f.g[0], &f.p[0], 3000, 2);
  bytes += v1_insert(db, &f.k[1], &f.g[1], &f.p[1], 1000, 5);
  bytes += v1_insert(db, &f.k[2], &f.g[2], &f.p[2], 2000, 0);
  sqlite3_close(db);

  struct logbook lb = {0};
  struct storage_options o;
  storage_options_init(&o);
  o.max_entries = 3;
  o.log = log_cb;
  o.log_ctx = &lb;
  storage_t *st = open_with(&o);
  ck_assert_msg(lb.n_info == 1, "%d info lines, last: %s", lb.n_info,
                lb.last);
  ck_assert_ptr_nonnull(strstr(lb.last, "v1 to v2"));
  struct storage_stats s;
  stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 3);
  ck_assert_uint_eq(s.bytes, bytes);
  ck_assert_uint_eq(s.hits, 7);

  /* Plans survive and verify; the LRU order follows the v1 last-use
   * times: the next put evicts plan 1. */
  ck_assert(has(st, &f, 2));
  ck_assert(has(st, &f, 0));
  ck_assert_int_eq(storage_flush(st), 0);
  put_ok(st, &f.k[3], &f.g[3], &f.p[3]);
  ck_assert(!has(st, &f, 1));
  ck_assert(has(st, &f, 3));
  storage_close(st);

  db = raw_open(dbpath);
  ck_assert_int_eq(raw_int(db, "PRAGMA user_version"), 2);
  ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM sqlite_schema WHERE "
                               "name = 'plans_last_used'"),
                   0);
  sqlite3_close(db);

  /* Opening again does not migrate again. */
  lb.n_info = 0;
  st = open_with(&o);
  ck_assert_int_eq(lb.n_info, 0);
  storage_close(st);
  fleet_cleanup(&f);
}
END_TEST

/* ---- corruption --------------------------------------------------------- */

/* Runs one SQL statement on the raw file with a blob parameter. */
static void raw_update_blob(const char *sql, const uint8_t *b, size_t n)
{
  sqlite3 *db = raw_open(dbpath);
  sqlite3_stmt *s;
  ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
  sqlite3_bind_blob(s, 1, b, (int)n, SQLITE_TRANSIENT);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_DONE);
  ck_assert_int_eq(sqlite3_changes(db), 1);
  sqlite3_finalize(s);
  sqlite3_close(db);
}

/* Reads plan `id`'s offsets blob through a raw connection. */
static uint8_t *raw_offsets(int64_t id, size_t *n)
{
  sqlite3 *db = raw_open(dbpath);
  sqlite3_stmt *s;
  ck_assert_int_eq(sqlite3_prepare_v2(db,
                                      "SELECT offsets FROM plans WHERE id = ?",
                                      -1, &s, NULL),
                   SQLITE_OK);
  sqlite3_bind_int64(s, 1, id);
  ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
  *n = (size_t)sqlite3_column_bytes(s, 0);
  uint8_t *b = malloc(*n);
  memcpy(b, sqlite3_column_blob(s, 0), *n);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return b;
}

START_TEST(corrupt_value_flipped)
{
  struct fleet f;
  struct logbook lb = {0};
  fleet_init(&f, 60);
  storage_t *st = open_logged(&lb);
  for (int i = 0; i < 3; i++)
    put_ok(st, &f.k[i], &f.g[i], &f.p[i]);

  /* Flip bytes inside plan 1's offsets blob (row id 2). */
  size_t n;
  uint8_t *b = raw_offsets(2, &n);
  b[n / 2] ^= 0x5a;
  b[n - 1] ^= 0x01;
  raw_update_blob("UPDATE plans SET offsets = ? WHERE id = 2", b, n);
  free(b);

  struct planner_plan q;
  planner_plan_init(&q);
  ck_assert_int_eq(get_rc(st, &f.k[1], &f.g[1], &q), ARENA_ENOENT);
  ck_assert_ptr_null(q.offsets);
  ck_assert_int_eq(lb.n_warn, 1);
  ck_assert_ptr_nonnull(strstr(lb.last, "checksum"));
  struct storage_stats s;
  stats_of(st, &s);
  ck_assert_uint_eq(s.corrupt_dropped, 1);
  ck_assert_uint_eq(s.entries, 2);
  ck_assert_uint_eq(s.misses, 1);
  sqlite3 *db = raw_open(dbpath);
  ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM plans WHERE id = 2"), 0);
  sqlite3_close(db);

  /* A flipped scalar is caught too, and lookup drops it as well. */
  db = raw_open(dbpath);
  raw_exec(db, "UPDATE plans SET arena_bytes = arena_bytes + 64 WHERE id = 3");
  sqlite3_close(db);
  struct storage_record *r;
  size_t nr;
  ck_assert_int_eq(storage_lookup(st, &f.k[2].k, &r, &nr), 0);
  ck_assert_uint_eq(nr, 0);
  stats_of(st, &s);
  ck_assert_uint_eq(s.corrupt_dropped, 2);
  ck_assert_uint_eq(s.entries, 1);
  ck_assert(has(st, &f, 0)); /* the healthy one is untouched */

  /* A put over a corrupt row replaces it instead of comparing with it. */
  b = raw_offsets(1, &n);
  b[2] ^= 0x80;
  raw_update_blob("UPDATE plans SET offsets = ? WHERE id = 1", b, n);
  free(b);
  ck_assert_int_eq(put_ok(st, &f.k[0], &f.g[0], &f.p[0]),
                   STORAGE_PUT_INSERTED);
  stats_of(st, &s);
  ck_assert_uint_eq(s.corrupt_dropped, 3);
  ck_assert_uint_eq(s.entries, 1);
  ck_assert(has(st, &f, 0));
  storage_close(st);
  planner_plan_cleanup(&q);
  fleet_cleanup(&f);
}
END_TEST

/* Bytes flipped in the file itself, inside a stored blob, where sqlite's
 * own structure checks cannot see them: the value checksum catches it. */
START_TEST(corrupt_value_on_disk)
{
  struct fleet f;
  struct logbook lb = {0};
  fleet_init(&f, 400);
  storage_t *st = open_logged(&lb);
  put_ok(st, &f.k[0], &f.g[0], &f.p[0]);
  put_ok(st, &f.k[1], &f.g[1], &f.p[1]);
  size_t n;
  uint8_t *blob = raw_offsets(1, &n);
  ck_assert_uint_gt(n, 64);
  storage_close(st); /* checkpoints the WAL into the main file */

  size_t len;
  char *file = tu_read_file(dbpath, &len);
  ck_assert_ptr_nonnull(file);
  char *at = find_bytes(file, len, blob, n);
  ck_assert_ptr_nonnull(at);
  ck_assert_ptr_null(
      find_bytes(at + 1, len - (size_t)(at + 1 - file), blob, n));
  uint8_t flipped = (uint8_t)(at[n / 2] ^ 0x24);
  write_at(dbpath, (long)(at - file) + (long)(n / 2), &flipped, 1);
  free(file);
  free(blob);

  st = open_logged(&lb);
  ck_assert_int_eq(count_aside("corrupt"), 0); /* the file is fine */
  struct planner_plan q;
  planner_plan_init(&q);
  ck_assert_int_eq(get_rc(st, &f.k[0], &f.g[0], &q), ARENA_ENOENT);
  ck_assert_ptr_nonnull(strstr(lb.last_warn, "deleted plan 1"));
  ck_assert(has(st, &f, 1));
  struct storage_stats s;
  stats_of(st, &s);
  ck_assert_uint_eq(s.corrupt_dropped, 1);
  ck_assert_uint_eq(s.entries, 1);
  storage_close(st);
  fleet_cleanup(&f);
}
END_TEST

/* A value whose checksum is right but whose plan does not verify against
 * the graph (here: two tensors moved on top of each other, checksum
 * recomputed) is never served either. */
START_TEST(corrupt_value_fails_verify)
{
  struct fleet f;
  struct logbook lb = {0};
  fleet_init(&f, 60);
  storage_t *st = open_logged(&lb);
  put_ok(st, &f.k[0], &f.g[0], &f.p[0]);

  uint64_t *offs = calloc(60, sizeof *offs); /* everything at offset 0 */
  uint64_t top = 0; /* so the claimed arena matches and only overlap fails */
  for (size_t i = 0; i < 60; i++)
    top = f.t[0][i].size > top ? f.t[0][i].size : top;
  uint8_t *blob, *shape = NULL, gd[32], od[32], sum[32];
  size_t len, cap = 0, shape_len;
  struct planner_options o;
  opts(&o, PLANNER_ALGO_BEST);
  ck_assert_int_eq(storage__offsets_encode(offs, 60, NULL, &blob, &len), 0);
  ck_assert_int_eq(storage__shape_encode(&f.k[0].k, &shape, &cap, &shape_len),
                   0);
  planner_graph_digest(&f.g[0], gd);
  planner_options_digest(&o, od);
  sqlite3 *db = raw_open(dbpath);
  int64_t created = raw_int(db, "SELECT created_ms FROM plans");
  int64_t plan_us = raw_int(db, "SELECT plan_us FROM plans");
  sqlite3_close(db);
  struct storage__row r = {
      .model_hash = f.k[0].k.model_hash,
      .model_hash_len = f.k[0].k.model_hash_len, .shape = shape,
      .shape_len = shape_len, .graph_digest = gd, .options_digest = od,
      .n_tensors = 60, .offsets = blob, .offsets_len = len,
      .arena_bytes = top,
      .lower_bound = f.p[0].lower_bound_bytes,
      .naive_bytes = f.p[0].naive_bytes,
      .proven_optimal = (uint32_t)f.p[0].proven_optimal,
      .algo = f.p[0].algo, .fit = f.p[0].fit, .bound = f.p[0].bound,
      .plan_us = (uint64_t)plan_us, .created_ms = created};
  storage__checksum(&r, sum);
  raw_update_blob("UPDATE plans SET offsets = ?", blob, len);
  raw_update_blob("UPDATE plans SET checksum = ?", sum, 32);
  sqlite3 *db2 = raw_open(dbpath);
  char sql[96];
  snprintf(sql, sizeof sql, "UPDATE plans SET arena_bytes = %llu",
           (unsigned long long)top);
  raw_exec(db2, sql);
  sqlite3_close(db2);

  struct planner_plan q;
  planner_plan_init(&q);
  ck_assert_int_eq(get_rc(st, &f.k[0], &f.g[0], &q), ARENA_ENOENT);
  ck_assert_int_eq(lb.n_warn, 1);
  ck_assert_msg(strstr(lb.last, "overlap") != NULL, "log: %s", lb.last);
  struct storage_stats s;
  stats_of(st, &s);
  ck_assert_uint_eq(s.corrupt_dropped, 1);
  ck_assert_uint_eq(s.entries, 0);
  storage_close(st);
  free(offs);
  free(blob);
  free(shape);
  fleet_cleanup(&f);
}
END_TEST

/* Fills the cache with a few plans and closes it (checkpointing the WAL
 * into the main file). */
static void fill_some(struct fleet *f)
{
  storage_t *st = open_with(NULL);
  for (int i = 0; i < 8; i++)
    put_ok(st, &f->k[i], &f->g[i], &f->p[i]);
  storage_close(st);
}

/* After a bad file was moved aside: the log says so, the fresh cache
 * works, and it starts empty. */
static void check_recreated(struct fleet *f, struct logbook *lb,
                            storage_t *st, const char *word)
{
  ck_assert_int_eq(count_aside(word), 1);
  ck_assert_int_ge(lb->n_warn, 1);
  ck_assert_ptr_nonnull(strstr(lb->last_warn, "moved it aside"));
  struct storage_stats s;
  stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 0);
  put_ok(st, &f->k[0], &f->g[0], &f->p[0]);
  ck_assert(has(st, f, 0));
}

static void write_at(const char *path, long at, const void *b, size_t n)
{
  FILE *fp = fopen(path, "r+b");
  ck_assert_ptr_nonnull(fp);
  ck_assert_int_eq(fseek(fp, at, SEEK_SET), 0);
  ck_assert_uint_eq(fwrite(b, 1, n, fp), n);
  fclose(fp);
}

START_TEST(bad_file_truncated)
{
  struct fleet f;
  struct logbook lb = {0};
  struct stat sb;
  fleet_init(&f, 400);
  fill_some(&f);
  ck_assert_int_eq(stat(dbpath, &sb), 0);
  ck_assert_int_gt(sb.st_size, 8 * 4096);
  ck_assert_int_eq(truncate(dbpath, sb.st_size / 2 + 100), 0);
  storage_t *st = open_logged(&lb);
  check_recreated(&f, &lb, st, "corrupt");
  storage_close(st);
  fleet_cleanup(&f);
}
END_TEST

START_TEST(bad_file_garbled_header)
{
  struct fleet f;
  struct logbook lb = {0};
  fleet_init(&f, 20);
  fill_some(&f);
  write_at(dbpath, 0, "this is garbage!", 16);
  storage_t *st = open_logged(&lb);
  check_recreated(&f, &lb, st, "notadb");
  storage_close(st);

  /* A plain text file is not a database either. */
  unlink(dbpath);
  FILE *fp = fopen(dbpath, "w");
  fputs("not a database, just some text that is long enough to matter\n", fp);
  fclose(fp);
  lb.n_warn = 0;
  st = open_logged(&lb);
  ck_assert_int_eq(lb.n_warn, 1);
  ck_assert_int_ge(count_aside("notadb"), 1);
  storage_close(st);
  fleet_cleanup(&f);
}
END_TEST

START_TEST(bad_file_foreign_and_newer)
{
  struct fleet f;
  struct logbook lb = {0};
  fleet_init(&f, 20);
  sqlite3 *db = raw_open(dbpath);
  raw_exec(db, "CREATE TABLE contacts(name TEXT); "
               "INSERT INTO contacts VALUES ('keep me');");
  sqlite3_close(db);
  storage_t *st = open_logged(&lb);
  check_recreated(&f, &lb, st, "foreign");
  storage_close(st);

  /* The foreign file is intact where the operator can find it. */
  DIR *d = opendir(tmpdir);
  struct dirent *e;
  char found[700] = "";
  while ((e = readdir(d)))
    if (strncmp(e->d_name, "plans.db.foreign-", 17) == 0)
      snprintf(found, sizeof found, "%s/%s", tmpdir, e->d_name);
  closedir(d);
  db = raw_open(found);
  ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM contacts"), 1);
  sqlite3_close(db);

  /* A database from a newer arenad. */
  db = raw_open(dbpath);
  raw_exec(db, "PRAGMA user_version = 99");
  sqlite3_close(db);
  lb.n_warn = 0;
  st = open_logged(&lb);
  check_recreated(&f, &lb, st, "newer");
  storage_close(st);
  fleet_cleanup(&f);
}
END_TEST

/* ---- crash safety ------------------------------------------------------- */

#define CRASH_ROUNDS 100
#define CRASH_CAP 40

/* The graph, key and plan for crash-test entry i. */
static void crash_item(uint32_t i, struct planner_tensor **t,
                       struct planner_graph *g, struct tkey *k)
{
  size_t n = 20 + i % 60;
  *t = make_tensors(n, 1000 + i);
  g->tensors = *t;
  g->n_tensors = n;
  key_init(k, i, 16);
}

/* The child: puts new plans (and reads some back) until it is killed,
 * reporting each acknowledged put as a uint32 on fd. */
static void crash_child(int fd, uint32_t first)
{
  struct storage_options o;
  storage_options_init(&o);
  o.max_entries = CRASH_CAP;
  o.touch_batch = 3;
  storage_t *st = NULL;
  if (storage_open(dbpath, &o, &st, NULL))
    _exit(3);
  for (uint32_t i = first;; i++) {
    struct planner_tensor *t;
    struct planner_graph g;
    struct tkey k;
    struct planner_plan p, q;
    struct planner_options po;
    crash_item(i, &t, &g, &k);
    opts(&po, PLANNER_ALGO_BEST);
    planner_plan_init(&p);
    planner_plan_init(&q);
    if (planner_run(&g, &po, &p, NULL) ||
        storage_put(st, &k.k, &g, &po, &p, 1, NULL))
      _exit(4);
    if (write(fd, &i, sizeof i) != (ssize_t)sizeof i)
      _exit(5);
    if (i > first) { /* read back the previous one, to write touches */
      free(t);
      crash_item(i - 1, &t, &g, &k);
      int rc = storage_get(st, &k.k, &g, &po, &q, NULL);
      if (rc && rc != ARENA_ENOENT)
        _exit(6);
    }
    planner_plan_cleanup(&p);
    planner_plan_cleanup(&q);
    free(t);
  }
}

START_TEST(crash_safety)
{
  uint64_t seed = 12345;
  uint64_t acked_total = 0, missing_total = 0;
  uint32_t next = 0;
  size_t cap = 1 << 16;
  uint32_t *acked = malloc(cap * sizeof *acked);
  for (int round = 0; round < CRASH_ROUNDS; round++) {
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      crash_child(fds[1], next);
    }
    close(fds[1]);
    /* Odd rounds wait for the first acknowledged put, so that at least
     * half the kills land among writes however slow the machine is; even
     * rounds may also kill the child while it opens the file. */
    size_t n_acked = 0;
    if (round % 2 == 1)
      n_acked = read(fds[0], acked, sizeof *acked) == (ssize_t)sizeof *acked;
    struct timespec ts = {0, (long)tu_rand_range(&seed, 1, 30) * 1000000L};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status), "child exited with %d",
                  WEXITSTATUS(status));

    ssize_t got;
    while ((got = read(fds[0], acked + n_acked, sizeof *acked)) ==
           (ssize_t)sizeof *acked)
      if (++n_acked == cap)
        break;
    close(fds[0]);
    acked_total += n_acked;
    /* The next child starts past anything this one may have written. */
    next = (n_acked ? acked[n_acked - 1] : next) + 2;

    /* Reopen: the file is intact and every plan checks out. */
    struct storage_options o;
    storage_options_init(&o);
    o.max_entries = CRASH_CAP;
    storage_t *st = open_with(&o);
    sqlite3 *db = raw_open(dbpath);
    sqlite3_stmt *ic;
    ck_assert_int_eq(
        sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &ic, NULL),
        SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(ic), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(ic, 0), "ok");
    sqlite3_finalize(ic);
    sqlite3_close(db);

    struct storage_list_query lq = {NULL, 0, STORAGE_ORDER_NEWEST, 0,
                                    STORAGE_LIST_MAX};
    struct storage_record *r;
    size_t nr;
    ck_assert_int_eq(storage_list(st, &lq, &r, &nr), 0);
    ck_assert_uint_le(nr, CRASH_CAP);
    for (size_t j = 0; j < nr; j++) {
      unsigned id;
      char hash[80];
      memcpy(hash, r[j].model_hash, r[j].model_hash_len);
      hash[r[j].model_hash_len] = '\0';
      ck_assert_int_eq(sscanf(hash, "model-%u", &id), 1);
      struct planner_tensor *t;
      struct planner_graph g;
      struct tkey k;
      struct planner_plan q;
      crash_item(id, &t, &g, &k);
      planner_plan_init(&q);
      ck_assert_int_eq(get_rc(st, &k, &g, &q), 0); /* checksum + verify */
      char err[ARENA_ERR_LEN];
      struct planner_options po;
      opts(&po, PLANNER_ALGO_BEST);
      ck_assert_int_eq(planner_verify(&g, &po, &q, err), 0);
      planner_plan_cleanup(&q);
      free(t);
    }
    storage_records_free(r, nr);

    /* Every acknowledged put is there or was evicted. */
    for (size_t j = 0; j < n_acked; j++) {
      struct planner_tensor *t;
      struct planner_graph g;
      struct tkey k;
      struct planner_plan q;
      crash_item(acked[j], &t, &g, &k);
      planner_plan_init(&q);
      int rc = get_rc(st, &k, &g, &q);
      ck_assert(rc == 0 || rc == ARENA_ENOENT);
      missing_total += rc != 0;
      planner_plan_cleanup(&q);
      free(t);
    }
    struct storage_stats s;
    stats_of(st, &s);
    ck_assert_uint_eq(s.corrupt_dropped, 0);
    ck_assert_uint_le(missing_total, s.evictions);
    /* Each put is a new key, so committed puts = entries + evictions; at
     * most one per round was committed but not yet acknowledged. */
    ck_assert_uint_ge(s.entries + s.evictions, acked_total);
    ck_assert_uint_le(s.entries + s.evictions,
                      acked_total + (uint64_t)round + 1);
    storage_close(st);
  }
  /* The children got work done (see the odd rounds above). */
  ck_assert_uint_ge(acked_total, CRASH_ROUNDS / 2);
  free(acked);
}
END_TEST

/* ---- concurrency -------------------------------------------------------- */

#define CONC_READERS 4
#define CONC_PUTS 400
#define CONC_MIN_READS 300

struct conc {
  atomic_uint written;  /* keys 0..written-1 are stored */
  atomic_int writer_done;
  atomic_int errors;    /* any unexpected result */
  char first_error[256];
};

static void conc_fail(struct conc *c, const char *what, int rc)
{
  if (atomic_fetch_add(&c->errors, 1) == 0)
    snprintf(c->first_error, sizeof c->first_error, "%s: %s", what,
             arena_err_name(rc));
}

static void *conc_writer(void *arg)
{
  struct conc *c = arg;
  struct storage_options o;
  storage_options_init(&o);
  o.busy_timeout_ms = 10000;
  storage_t *st = NULL;
  int rc = storage_open(dbpath, &o, &st, NULL);
  if (rc) {
    conc_fail(c, "writer open", rc);
    atomic_store(&c->writer_done, 1);
    return NULL;
  }
  for (uint32_t i = 0; i < CONC_PUTS; i++) {
    struct planner_tensor *t;
    struct planner_graph g;
    struct tkey k;
    struct planner_plan p;
    struct planner_options po;
    crash_item(i, &t, &g, &k);
    opts(&po, PLANNER_ALGO_BEST);
    planner_plan_init(&p);
    if ((rc = planner_run(&g, &po, &p, NULL)) ||
        (rc = storage_put(st, &k.k, &g, &po, &p, 1, NULL)))
      conc_fail(c, "put", rc);
    else
      atomic_store(&c->written, i + 1);
    planner_plan_cleanup(&p);
    free(t);
  }
  storage_close(st);
  atomic_store(&c->writer_done, 1);
  return NULL;
}

static void *conc_reader(void *arg)
{
  struct conc *c = arg;
  struct storage_options o;
  storage_options_init(&o);
  o.busy_timeout_ms = 10000;
  o.touch_batch = 16; /* readers write their uses too */
  storage_t *st = NULL;
  int rc = storage_open(dbpath, &o, &st, NULL);
  if (rc) {
    conc_fail(c, "reader open", rc);
    return NULL;
  }
  uint64_t seed = (uint64_t)(uintptr_t)&o;
  int reads = 0;
  while (reads < CONC_MIN_READS || !atomic_load(&c->writer_done)) {
    unsigned w = atomic_load(&c->written);
    if (w == 0) {
      struct timespec ts = {0, 1000000L}; /* the first put is coming */
      nanosleep(&ts, NULL);
      continue;
    }
    uint32_t i = (uint32_t)tu_rand_range(&seed, 0, w - 1);
    struct planner_tensor *t;
    struct planner_graph g;
    struct tkey k;
    struct planner_plan q;
    struct planner_options po;
    crash_item(i, &t, &g, &k);
    opts(&po, PLANNER_ALGO_BEST);
    planner_plan_init(&q);
    rc = storage_get(st, &k.k, &g, &po, &q, NULL);
    if (rc)
      conc_fail(c, "get", rc);
    else if ((rc = planner_verify(&g, &po, &q, NULL)))
      conc_fail(c, "verify", rc);
    planner_plan_cleanup(&q);
    free(t);
    reads++;
    if (reads % 50 == 0 && (rc = storage_flush(st)))
      conc_fail(c, "flush", rc);
    if (reads % 97 == 0) {
      struct storage_record *r;
      size_t n;
      if ((rc = storage_lookup(st, &k.k, &r, &n)) || n != 1)
        conc_fail(c, "lookup", rc);
      storage_records_free(r, n);
    }
  }
  storage_close(st);
  return NULL;
}

START_TEST(one_writer_four_readers)
{
  struct conc c;
  memset(&c, 0, sizeof c);
  atomic_init(&c.written, 0);
  atomic_init(&c.writer_done, 0);
  atomic_init(&c.errors, 0);
  storage_close(open_with(NULL)); /* create the file up front */
  pthread_t w, r[CONC_READERS];
  ck_assert_int_eq(pthread_create(&w, NULL, conc_writer, &c), 0);
  for (int i = 0; i < CONC_READERS; i++)
    ck_assert_int_eq(pthread_create(&r[i], NULL, conc_reader, &c), 0);
  pthread_join(w, NULL);
  for (int i = 0; i < CONC_READERS; i++)
    pthread_join(r[i], NULL);
  ck_assert_msg(atomic_load(&c.errors) == 0, "%d errors, first: %s",
                atomic_load(&c.errors), c.first_error);
  storage_t *st = open_with(NULL);
  struct storage_stats s;
  stats_of(st, &s);
  ck_assert_uint_eq(s.entries, CONC_PUTS);
  ck_assert_uint_ge(s.hits, CONC_READERS * CONC_MIN_READS);
  ck_assert_uint_eq(s.misses, 0);
  storage_close(st);
}
END_TEST

Suite *storage_suite(void)
{
  Suite *s = suite_create("storage");
  TCase *tc = tcase_create("codec");
  tcase_add_test(tc, codec_shape);
  tcase_add_test(tc, codec_offsets);
  tcase_add_test(tc, codec_perm_and_checksum);
  suite_add_tcase(s, tc);

  tc = tcase_create("cache");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, round_trip_1);
  tcase_add_test(tc, round_trip_100k);
  tcase_add_test(tc, empty_graph_rejected);
  tcase_add_test(tc, tensor_order_independent);
  tcase_add_test(tc, key_isolation);
  tcase_add_test(tc, bad_arguments);
  tcase_add_test(tc, upgrade_rules);
  tcase_add_test(tc, evict_lru_entries);
  tcase_add_test(tc, evict_lru_bytes);
  tcase_add_test(tc, lookup_by_model_and_shape);
  tcase_add_test(tc, list_and_evict);
  tcase_add_test(tc, stats_and_batched_touches);
  tcase_add_test(tc, sqlite_settings);
  tcase_add_test(tc, busy_writer);
  tcase_add_test(tc, migrate_from_v1);
  suite_add_tcase(s, tc);

  tc = tcase_create("recovery");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, corrupt_value_flipped);
  tcase_add_test(tc, corrupt_value_fails_verify);
  tcase_add_test(tc, corrupt_value_on_disk);
  tcase_add_test(tc, bad_file_truncated);
  tcase_add_test(tc, bad_file_garbled_header);
  tcase_add_test(tc, bad_file_foreign_and_newer);
  tcase_add_test(tc, crash_safety);
  tcase_add_test(tc, one_writer_four_readers);
  suite_add_tcase(s, tc);
  return s;
}

/*
 * check_storage_corrupt.c - the first tests of the storage suite's
 * "recovery" test case: damage the cache must survive. Values corrupted
 * through sqlite (flipped blob bytes and scalars) or in the file itself
 * are caught by the value checksum, a value with a right checksum that
 * does not verify is never served, and every such row is dropped. Files
 * that are truncated, not a database, someone else's database or from a
 * newer arenad are moved aside and replaced by a fresh cache.
 */
#include <check.h>
#include <dirent.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_storage.h"
#include "digest.h"
#include "storage.h"
#include "storage_int.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------ */

static storage_t *open_logged(struct st_logbook *lb)
{
  struct storage_options o;
  storage_options_init(&o);
  o.log = st_log_cb;
  o.log_ctx = lb;
  return st_open_with(&o);
}

/* Counts entries in the test's directory whose name starts with
 * "plans.db.<word>-". */
static int count_aside(const char *word)
{
  char prefix[64];
  snprintf(prefix, sizeof prefix, "plans.db.%s-", word);
  DIR *d = opendir(st_tmpdir());
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

/* Finds needle in hay (memmem is not in POSIX). Returns NULL if absent. */
static char *find_bytes(char *hay, size_t len, const void *needle, size_t n)
{
  for (size_t i = 0; n <= len && i <= len - n; i++)
    if (memcmp(hay + i, needle, n) == 0)
      return hay + i;
  return NULL;
}

static void write_at(const char *path, long at, const void *b, size_t n)
{
  FILE *fp = fopen(path, "r+b");
  ck_assert_ptr_nonnull(fp);
  ck_assert_int_eq(fseek(fp, at, SEEK_SET), 0);
  ck_assert_uint_eq(fwrite(b, 1, n, fp), n);
  fclose(fp);
}

/* ---- corrupt values ----------------------------------------------------- */

/* Runs one SQL statement on the raw file with a blob parameter. */
static void raw_update_blob(const char *sql, const uint8_t *b, size_t n)
{
  sqlite3 *db = st_raw_open(st_dbpath());
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
  sqlite3 *db = st_raw_open(st_dbpath());
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
  struct st_fleet f;
  struct st_logbook lb = {0};
  st_fleet_init(&f, 60);
  storage_t *st = open_logged(&lb);
  for (int i = 0; i < 3; i++)
    st_put_ok(st, &f.k[i], &f.g[i], &f.p[i]);

  /* Flip bytes inside plan 1's offsets blob (row id 2). */
  size_t n;
  uint8_t *b = raw_offsets(2, &n);
  b[n / 2] ^= 0x5a;
  b[n - 1] ^= 0x01;
  raw_update_blob("UPDATE plans SET offsets = ? WHERE id = 2", b, n);
  free(b);

  struct planner_plan q;
  planner_plan_init(&q);
  ck_assert_int_eq(st_get_rc(st, &f.k[1], &f.g[1], &q), ARENA_ENOENT);
  ck_assert_ptr_null(q.offsets);
  ck_assert_int_eq(lb.n_warn, 1);
  ck_assert_ptr_nonnull(strstr(lb.last, "checksum"));
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.corrupt_dropped, 1);
  ck_assert_uint_eq(s.entries, 2);
  ck_assert_uint_eq(s.misses, 1);
  sqlite3 *db = st_raw_open(st_dbpath());
  ck_assert_int_eq(st_raw_int(db, "SELECT count(*) FROM plans WHERE id = 2"),
                   0);
  sqlite3_close(db);

  /* A flipped scalar is caught too, and lookup drops it as well. */
  db = st_raw_open(st_dbpath());
  st_raw_exec(db,
              "UPDATE plans SET arena_bytes = arena_bytes + 64 WHERE id = 3");
  sqlite3_close(db);
  struct storage_record *r;
  size_t nr;
  ck_assert_int_eq(storage_lookup(st, &f.k[2].k, &r, &nr), 0);
  ck_assert_uint_eq(nr, 0);
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.corrupt_dropped, 2);
  ck_assert_uint_eq(s.entries, 1);
  ck_assert(st_has(st, &f, 0)); /* the healthy one is untouched */

  /* A put over a corrupt row replaces it instead of comparing with it. */
  b = raw_offsets(1, &n);
  b[2] ^= 0x80;
  raw_update_blob("UPDATE plans SET offsets = ? WHERE id = 1", b, n);
  free(b);
  ck_assert_int_eq(st_put_ok(st, &f.k[0], &f.g[0], &f.p[0]),
                   STORAGE_PUT_INSERTED);
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.corrupt_dropped, 3);
  ck_assert_uint_eq(s.entries, 1);
  ck_assert(st_has(st, &f, 0));
  storage_close(st);
  planner_plan_cleanup(&q);
  st_fleet_cleanup(&f);
}
END_TEST

/* Bytes flipped in the file itself, inside a stored blob, where sqlite's
 * own structure checks cannot see them: the value checksum catches it. */
START_TEST(corrupt_value_on_disk)
{
  struct st_fleet f;
  struct st_logbook lb = {0};
  st_fleet_init(&f, 400);
  storage_t *st = open_logged(&lb);
  st_put_ok(st, &f.k[0], &f.g[0], &f.p[0]);
  st_put_ok(st, &f.k[1], &f.g[1], &f.p[1]);
  size_t n;
  uint8_t *blob = raw_offsets(1, &n);
  ck_assert_uint_gt(n, 64);
  storage_close(st); /* checkpoints the WAL into the main file */

  size_t len;
  char *file = tu_read_file(st_dbpath(), &len);
  ck_assert_ptr_nonnull(file);
  char *at = find_bytes(file, len, blob, n);
  ck_assert_ptr_nonnull(at);
  ck_assert_ptr_null(
      find_bytes(at + 1, len - (size_t)(at + 1 - file), blob, n));
  uint8_t flipped = (uint8_t)(at[n / 2] ^ 0x24);
  write_at(st_dbpath(), (long)(at - file) + (long)(n / 2), &flipped, 1);
  free(file);
  free(blob);

  st = open_logged(&lb);
  ck_assert_int_eq(count_aside("corrupt"), 0); /* the file is fine */
  struct planner_plan q;
  planner_plan_init(&q);
  ck_assert_int_eq(st_get_rc(st, &f.k[0], &f.g[0], &q), ARENA_ENOENT);
  ck_assert_ptr_nonnull(strstr(lb.last_warn, "deleted plan 1"));
  ck_assert(st_has(st, &f, 1));
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.corrupt_dropped, 1);
  ck_assert_uint_eq(s.entries, 1);
  storage_close(st);
  st_fleet_cleanup(&f);
}
END_TEST

/* A value whose checksum is right but whose plan does not verify against
 * the graph (here: two tensors moved on top of each other, checksum
 * recomputed) is never served either. */
START_TEST(corrupt_value_fails_verify)
{
  struct st_fleet f;
  struct st_logbook lb = {0};
  st_fleet_init(&f, 60);
  storage_t *st = open_logged(&lb);
  st_put_ok(st, &f.k[0], &f.g[0], &f.p[0]);

  uint64_t *offs = calloc(60, sizeof *offs); /* everything at offset 0 */
  uint64_t top = 0; /* so the claimed arena matches and only overlap fails */
  for (size_t i = 0; i < 60; i++)
    top = f.t[0][i].size > top ? f.t[0][i].size : top;
  uint8_t *blob, *shape = NULL, gd[32], od[32], sum[32];
  size_t len, cap = 0, shape_len;
  struct planner_options o;
  st_opts(&o, PLANNER_ALGO_BEST);
  ck_assert_int_eq(
      storage__offsets_encode(offs, 60, NULL, NULL, &blob, &len), 0);
  ck_assert_int_eq(storage__shape_encode(&f.k[0].k, &shape, &cap, &shape_len),
                   0);
  planner_graph_digest(&f.g[0], gd);
  planner_options_digest(&o, od);
  sqlite3 *db = st_raw_open(st_dbpath());
  int64_t created = st_raw_int(db, "SELECT created_ms FROM plans");
  int64_t plan_us = st_raw_int(db, "SELECT plan_us FROM plans");
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
  sqlite3 *db2 = st_raw_open(st_dbpath());
  char sql[96];
  snprintf(sql, sizeof sql, "UPDATE plans SET arena_bytes = %llu",
           (unsigned long long)top);
  st_raw_exec(db2, sql);
  sqlite3_close(db2);

  struct planner_plan q;
  planner_plan_init(&q);
  ck_assert_int_eq(st_get_rc(st, &f.k[0], &f.g[0], &q), ARENA_ENOENT);
  ck_assert_int_eq(lb.n_warn, 1);
  ck_assert_msg(strstr(lb.last, "overlap") != NULL, "log: %s", lb.last);
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.corrupt_dropped, 1);
  ck_assert_uint_eq(s.entries, 0);
  storage_close(st);
  free(offs);
  free(blob);
  free(shape);
  st_fleet_cleanup(&f);
}
END_TEST

/* ---- bad files ---------------------------------------------------------- */

/* Fills the cache with a few plans and closes it (checkpointing the WAL
 * into the main file). */
static void fill_some(struct st_fleet *f)
{
  storage_t *st = st_open_with(NULL);
  for (int i = 0; i < 8; i++)
    st_put_ok(st, &f->k[i], &f->g[i], &f->p[i]);
  storage_close(st);
}

/* After a bad file was moved aside: the log says so, the fresh cache
 * works, and it starts empty. */
static void check_recreated(struct st_fleet *f, struct st_logbook *lb,
                            storage_t *st, const char *word)
{
  ck_assert_int_eq(count_aside(word), 1);
  ck_assert_int_ge(lb->n_warn, 1);
  ck_assert_ptr_nonnull(strstr(lb->last_warn, "moved it aside"));
  struct storage_stats s;
  st_stats_of(st, &s);
  ck_assert_uint_eq(s.entries, 0);
  st_put_ok(st, &f->k[0], &f->g[0], &f->p[0]);
  ck_assert(st_has(st, f, 0));
}

START_TEST(bad_file_truncated)
{
  struct st_fleet f;
  struct st_logbook lb = {0};
  struct stat sb;
  st_fleet_init(&f, 400);
  fill_some(&f);
  ck_assert_int_eq(stat(st_dbpath(), &sb), 0);
  ck_assert_int_gt(sb.st_size, 8 * 4096);
  ck_assert_int_eq(truncate(st_dbpath(), sb.st_size / 2 + 100), 0);
  storage_t *st = open_logged(&lb);
  check_recreated(&f, &lb, st, "corrupt");
  storage_close(st);
  st_fleet_cleanup(&f);
}
END_TEST

START_TEST(bad_file_garbled_header)
{
  struct st_fleet f;
  struct st_logbook lb = {0};
  st_fleet_init(&f, 20);
  fill_some(&f);
  write_at(st_dbpath(), 0, "this is garbage!", 16);
  storage_t *st = open_logged(&lb);
  check_recreated(&f, &lb, st, "notadb");
  storage_close(st);

  /* A plain text file is not a database either. */
  unlink(st_dbpath());
  FILE *fp = fopen(st_dbpath(), "w");
  fputs("not a database, just some text that is long enough to matter\n", fp);
  fclose(fp);
  lb.n_warn = 0;
  st = open_logged(&lb);
  ck_assert_int_eq(lb.n_warn, 1);
  ck_assert_int_ge(count_aside("notadb"), 1);
  storage_close(st);
  st_fleet_cleanup(&f);
}
END_TEST

/* Copies the file at from to the path to (both must work). */
static void copy_file(const char *from, const char *to)
{
  size_t n;
  char *b = tu_read_file(from, &n);
  ck_assert_ptr_nonnull(b);
  FILE *fp = fopen(to, "wb");
  ck_assert_ptr_nonnull(fp);
  ck_assert_uint_eq(fwrite(b, 1, n, fp), n);
  fclose(fp);
  free(b);
}

/* A main file overwritten with other bytes while the -wal file of the
 * connection that wrote it is left beside it: sqlite would read every
 * page the WAL holds from the WAL, header included, and take the file
 * for the database. It is moved aside as not a database instead. */
START_TEST(bad_file_garbage_beside_wal)
{
  struct st_fleet f;
  struct st_logbook lb = {0};
  char wal[600], saved[600];
  st_fleet_init(&f, 20);
  snprintf(wal, sizeof wal, "%s-wal", st_dbpath());
  snprintf(saved, sizeof saved, "%s/saved-wal", st_tmpdir());
  storage_t *st = st_open_with(NULL);
  for (int i = 0; i < 8; i++)
    st_put_ok(st, &f.k[i], &f.g[i], &f.p[i]);
  copy_file(wal, saved); /* the WAL as a crash would leave it */
  storage_close(st);
  struct stat sb;
  ck_assert_int_eq(stat(st_dbpath(), &sb), 0);
  char *junk = malloc((size_t)sb.st_size);
  memset(junk, 0x5a, (size_t)sb.st_size);
  write_at(st_dbpath(), 0, junk, (size_t)sb.st_size);
  free(junk);
  copy_file(saved, wal);
  st = open_logged(&lb);
  check_recreated(&f, &lb, st, "notadb");
  storage_close(st);
  st_fleet_cleanup(&f);
}
END_TEST

START_TEST(bad_file_foreign_and_newer)
{
  struct st_fleet f;
  struct st_logbook lb = {0};
  st_fleet_init(&f, 20);
  sqlite3 *db = st_raw_open(st_dbpath());
  st_raw_exec(db, "CREATE TABLE contacts(name TEXT); "
                  "INSERT INTO contacts VALUES ('keep me');");
  sqlite3_close(db);
  storage_t *st = open_logged(&lb);
  check_recreated(&f, &lb, st, "foreign");
  storage_close(st);

  /* The foreign file is intact where the operator can find it. */
  DIR *d = opendir(st_tmpdir());
  struct dirent *e;
  char found[700] = "";
  while ((e = readdir(d)))
    if (strncmp(e->d_name, "plans.db.foreign-", 17) == 0)
      snprintf(found, sizeof found, "%s/%s", st_tmpdir(), e->d_name);
  closedir(d);
  db = st_raw_open(found);
  ck_assert_int_eq(st_raw_int(db, "SELECT count(*) FROM contacts"), 1);
  sqlite3_close(db);

  /* A database from a newer arenad. */
  db = st_raw_open(st_dbpath());
  st_raw_exec(db, "PRAGMA user_version = 99");
  sqlite3_close(db);
  lb.n_warn = 0;
  st = open_logged(&lb);
  check_recreated(&f, &lb, st, "newer");
  storage_close(st);
  st_fleet_cleanup(&f);
}
END_TEST

/* ---- adding the tests --------------------------------------------------- */

void storage_add_corrupt(TCase *tc)
{
  tcase_add_test(tc, corrupt_value_flipped);
  tcase_add_test(tc, corrupt_value_fails_verify);
  tcase_add_test(tc, corrupt_value_on_disk);
  tcase_add_test(tc, bad_file_truncated);
  tcase_add_test(tc, bad_file_garbled_header);
  tcase_add_test(tc, bad_file_garbage_beside_wal);
  tcase_add_test(tc, bad_file_foreign_and_newer);
}

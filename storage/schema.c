/*
 * schema.c - opening the cache file safely, and its numbered migrations.
 *
 * DESIGN
 *  storage__open_db() looks at a file before trusting it. It reads the
 *  sqlite header fields application_id and user_version and runs
 *  PRAGMA quick_check. A file that sqlite cannot read as a database, that
 *  belongs to another application, that a newer arenad wrote, or that
 *  fails the check is renamed to "<path>.<reason>-<UTC time>" (with its
 *  -wal and -shm companions, so that sqlite can never replay a stale WAL
 *  into the fresh file) and a new database is created in its place. The
 *  operator finds the old file next to the new one. Lock timeouts and I/O
 *  errors are not evidence of a bad file and are returned as errors
 *  instead: moving a healthy database aside because it was busy would lose
 *  every plan.
 *
 *  Migrations are a table of SQL scripts indexed by the version they
 *  produce. Each runs in its own BEGIN IMMEDIATE transaction that re-reads
 *  user_version first (another process may have migrated meanwhile) and
 *  stamps application_id and user_version before COMMIT, so a crash leaves
 *  the file at a whole version. The scripts are frozen once released: a
 *  change is a new version, never an edit.
 */
#include "storage_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Version 1: the plans table, keyed by model hash, shape and the two
 * digests, with last-use times for LRU. */
static const char schema_v1[] =
    "CREATE TABLE plans ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " model_hash BLOB NOT NULL,"
    " shape BLOB NOT NULL,"
    " graph_digest BLOB NOT NULL,"
    " options_digest BLOB NOT NULL,"
    " n_tensors INTEGER NOT NULL,"
    " offsets BLOB NOT NULL,"
    " arena_bytes INTEGER NOT NULL,"
    " lower_bound INTEGER NOT NULL,"
    " naive_bytes INTEGER NOT NULL,"
    " proven_optimal INTEGER NOT NULL,"
    " algo INTEGER NOT NULL,"
    " fit INTEGER NOT NULL,"
    " bound INTEGER NOT NULL,"
    " plan_us INTEGER NOT NULL,"
    " created_ms INTEGER NOT NULL,"
    " last_used_ms INTEGER NOT NULL,"
    " hits INTEGER NOT NULL DEFAULT 0,"
    " checksum BLOB NOT NULL);"
    "CREATE UNIQUE INDEX plans_key"
    " ON plans(model_hash, shape, graph_digest, options_digest);"
    "CREATE INDEX plans_last_used ON plans(last_used_ms);";

/* Version 2: a logical LRU clock (use_seq) instead of millisecond times,
 * which tie; per-row accounted bytes; and a one-row stats table whose
 * entry and byte totals triggers keep exact, so caps are checked without
 * scanning the table. */
static const char schema_v2[] =
    "ALTER TABLE plans ADD COLUMN use_seq INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE plans ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;"
    "UPDATE plans SET bytes = 128 + length(model_hash) + length(shape)"
    " + length(graph_digest) + length(options_digest) + length(offsets)"
    " + length(checksum);"
    "UPDATE plans SET use_seq = r.rn FROM"
    " (SELECT id, row_number() OVER (ORDER BY last_used_ms, id) AS rn"
    "  FROM plans) AS r WHERE plans.id = r.id;"
    "DROP INDEX plans_last_used;"
    "CREATE INDEX plans_lru ON plans(use_seq);"
    "CREATE INDEX plans_created ON plans(created_ms);"
    "CREATE TABLE stats ("
    " id INTEGER PRIMARY KEY CHECK (id = 1),"
    " entries INTEGER NOT NULL, bytes INTEGER NOT NULL,"
    " hits INTEGER NOT NULL, misses INTEGER NOT NULL,"
    " evictions INTEGER NOT NULL, removed INTEGER NOT NULL,"
    " corrupt INTEGER NOT NULL);"
    "INSERT INTO stats SELECT 1, count(*), coalesce(sum(bytes), 0),"
    " coalesce(sum(hits), 0), 0, 0, 0, 0 FROM plans;"
    "CREATE TRIGGER plans_ai AFTER INSERT ON plans BEGIN"
    " UPDATE stats SET entries = entries + 1, bytes = bytes + new.bytes"
    " WHERE id = 1; END;"
    "CREATE TRIGGER plans_ad AFTER DELETE ON plans BEGIN"
    " UPDATE stats SET entries = entries - 1, bytes = bytes - old.bytes"
    " WHERE id = 1; END;"
    "CREATE TRIGGER plans_au AFTER UPDATE OF bytes ON plans BEGIN"
    " UPDATE stats SET bytes = bytes - old.bytes + new.bytes"
    " WHERE id = 1; END;";

/* Version 3: plans keep their graph and options (so that they can be
 * improved in the background and exported), the effort that found them
 * and the highest effort tried, a generation counter and whether more
 * background work is wanted. The graph columns come last and the small
 * ones first, so that reading a row's plan never walks the graph's
 * overflow pages. Rows from v2 have no graph: they can be neither
 * improved nor exported, so they start with improve_done 1 and
 * generation 0 (not known). The partial index serves storage_pending. */
static const char schema_v3[] =
    "ALTER TABLE plans ADD COLUMN effort INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE plans ADD COLUMN effort_tried INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE plans ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE plans ADD COLUMN improve_done INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE plans ADD COLUMN graph_sum BLOB;"
    "ALTER TABLE plans ADD COLUMN opts BLOB;"
    "ALTER TABLE plans ADD COLUMN graph BLOB;"
    "UPDATE plans SET improve_done = 1;"
    "CREATE INDEX plans_pending ON plans(hits DESC, use_seq DESC)"
    " WHERE improve_done = 0 AND graph_sum IS NOT NULL;";

/* Version 4: a client's placement record beside a plan (storage_attach),
 * opaque bytes that no checksum of the row covers: the client checks its
 * own. Rows before it have none. */
static const char schema_v4[] = "ALTER TABLE plans ADD COLUMN placement BLOB;";

/* migrations[v] turns a version v-1 file into version v. */
static const char *const migrations[STORAGE__SCHEMA_VERSION + 1] = {
    NULL,
    schema_v1,
    schema_v2,
    schema_v3,
    schema_v4,
};

/* Why a file is moved aside; the words become the file name suffix. */
enum verdict {
  FILE_OK = 0,  /* ours (or empty), this or an older schema, healthy */
  FILE_NOTADB,  /* sqlite cannot read it as a database */
  FILE_FOREIGN, /* a database of another application */
  FILE_NEWER,   /* written by a newer schema than this code knows */
  FILE_CORRUPT, /* quick_check failed */
};

static const char *const verdict_words[] = {
    "ok", "notadb", "foreign", "newer", "corrupt"};

void storage__logf(const struct storage__log *lg, enum storage_log_level lv,
                   const char *fmt, ...)
{
  if (!lg || !lg->cb)
    return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  lg->cb(lg->ctx, lv, line);
}

int storage__err_of(int rc)
{
  switch (rc & 0xff) {
  case SQLITE_OK:
  case SQLITE_ROW:
  case SQLITE_DONE:
    return 0;
  case SQLITE_NOMEM:
    return ARENA_ENOMEM;
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return ARENA_EBUSY;
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB:
    return ARENA_ECORRUPT;
  case SQLITE_TOOBIG:
    return ARENA_ETOOBIG;
  case SQLITE_PERM:
  case SQLITE_READONLY:
  case SQLITE_AUTH:
    return ARENA_EDENIED;
  default:
    return ARENA_EIO;
  }
}

int64_t storage__now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int errf(char err[ARENA_ERR_LEN], int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int errf(char err[ARENA_ERR_LEN], int code, const char *fmt, ...)
{
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ARENA_ERR_LEN, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* Runs a one-column integer query. Returns the sqlite code. */
static int query_int(sqlite3 *db, const char *sql, int64_t *v)
{
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
      *v = sqlite3_column_int64(s, 0);
      rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
      rc = SQLITE_CORRUPT; /* these pragmas always return a row */
    }
  }
  sqlite3_finalize(s);
  return rc;
}

/* Maps a sqlite failure during inspection: unreadable content condemns
 * the file, anything else (locks, I/O, memory) is an error to report. */
static int inspect_fail(int rc, enum verdict *v)
{
  int prim = rc & 0xff;
  if (prim == SQLITE_NOTADB) {
    *v = FILE_NOTADB;
    return 0;
  }
  if (prim == SQLITE_CORRUPT) {
    *v = FILE_CORRUPT;
    return 0;
  }
  return storage__err_of(rc);
}

/* Whether the file at path begins as every sqlite database does. A file
 * that does not is not a database whatever its WAL says: sqlite reads
 * pages from a leftover -wal file first, so a main file overwritten with
 * other bytes could otherwise pass for the database the WAL belonged to.
 * A missing or empty file is FILE_OK (a new database); a file that
 * cannot be read is left for sqlite to report. */
static enum verdict file_header(const char *path)
{
  static const char magic[16] = "SQLite format 3";
  char head[16];
  FILE *f = fopen(path, "rb");
  if (!f)
    return FILE_OK;
  size_t n = fread(head, 1, sizeof head, f);
  fclose(f);
  return n == 0 || (n == sizeof head && memcmp(head, magic, sizeof head) == 0)
             ? FILE_OK
             : FILE_NOTADB;
}

/* Decides whether db is a healthy arenad database. Returns 0 with *v set,
 * or an ARENA_E* code when the file could not be inspected. */
static int inspect(sqlite3 *db, enum verdict *v, char err[ARENA_ERR_LEN])
{
  int64_t app = 0, ver = 0, n_objects = 0;
  int rc;
  *v = FILE_OK;
  if ((rc = query_int(db, "PRAGMA application_id", &app)) ||
      (rc = query_int(db, "PRAGMA user_version", &ver)) ||
      (rc = query_int(db, "SELECT count(*) FROM sqlite_schema", &n_objects))) {
    int code = inspect_fail(rc, v);
    return code ? errf(err, code, "cannot read the database header: %s",
                       sqlite3_errmsg(db))
                : 0;
  }
  if (app != STORAGE__APP_ID && !(app == 0 && ver == 0 && n_objects == 0)) {
    *v = FILE_FOREIGN;
    return 0;
  }
  if (ver > STORAGE__SCHEMA_VERSION) {
    *v = FILE_NEWER;
    return 0;
  }

  sqlite3_stmt *s = NULL;
  rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &s, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
      const unsigned char *txt = sqlite3_column_text(s, 0);
      if (!txt || strcmp((const char *)txt, "ok") != 0)
        *v = FILE_CORRUPT;
      rc = SQLITE_OK;
    }
  }
  sqlite3_finalize(s);
  if (rc != SQLITE_OK && rc != SQLITE_DONE) {
    int code = inspect_fail(rc, v);
    if (code)
      return errf(err, code, "cannot check the database: %s",
                  sqlite3_errmsg(db));
  }
  return 0;
}

/* Renames from to to when from exists. Returns 0 or -1 (errno set). */
static int rename_if_exists(const char *from, const char *to)
{
  struct stat sb;
  if (stat(from, &sb) != 0)
    return errno == ENOENT ? 0 : -1;
  return rename(from, to);
}

/* Moves path and its -wal and -shm files to "<path>.<word>-<UTC time>"
 * (plus "-N" when that name is taken). Writes the new name to aside. */
static int move_aside(const char *path, const char *word, char *aside,
                      size_t aside_len, char err[ARENA_ERR_LEN])
{
  char stamp[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);

  struct stat sb;
  for (int n = 0; n < 1000; n++) {
    int w = n ? snprintf(aside, aside_len, "%s.%s-%s-%d", path, word, stamp, n)
              : snprintf(aside, aside_len, "%s.%s-%s", path, word, stamp);
    if (w < 0 || (size_t)w >= aside_len)
      return errf(err, ARENA_EINVAL, "path too long: %s", path);
    if (stat(aside, &sb) != 0 && errno == ENOENT)
      break;
  }

  size_t cap = strlen(aside) + 8, pcap = strlen(path) + 8;
  char *from = malloc(pcap), *to = malloc(cap);
  if (!from || !to) {
    free(from);
    free(to);
    return errf(err, ARENA_ENOMEM, "out of memory");
  }
  int rc = 0;
  /* The WAL first: if the main rename then failed, the stale WAL could
   * otherwise be replayed into a file it does not belong to. */
  static const char *const sfx[] = {"-wal", "-shm", ""};
  for (size_t i = 0; i < 3 && !rc; i++) {
    snprintf(from, pcap, "%s%s", path, sfx[i]);
    snprintf(to, cap, "%s%s", aside, sfx[i]);
    if (rename_if_exists(from, to) != 0)
      rc = errf(err, ARENA_EIO, "cannot move %s aside to %s: %s", from, to,
                strerror(errno));
  }
  free(from);
  free(to);
  return rc;
}

/* Creates the cache file when it is missing, 0600 whatever the umask and
 * without following a symlink: sqlite would create it 0644, and it
 * creates -wal and -shm with the database's own mode, so they are
 * private too. Returns 0 (also when the file exists), or an ARENA_E*
 * code when it cannot be created (e.g. its folder is missing). */
static int create_private(const char *path, char err[ARENA_ERR_LEN])
{
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                0600);
  if (fd >= 0) {
    close(fd);
    return 0;
  }
  if (errno == EEXIST)
    return 0;
  return errf(err, errno == EACCES || errno == EPERM ? ARENA_EDENIED
                                                     : ARENA_EIO,
              "cannot create %s: %s", path, strerror(errno));
}

/* Takes group and other permissions away from a healthy cache file and
 * its -wal and -shm (those of an older arenad were created 0644), never
 * adding any; logged once. A file of another owner, whose mode we may
 * not change, is left alone. */
static void tighten_modes(const char *path, const struct storage__log *lg)
{
  static const char *const sfx[] = {"", "-wal", "-shm"};
  unsigned was = 0, n = 0;
  for (size_t i = 0; i < 3; i++) {
    char p[4096];
    struct stat sb;
    if ((size_t)snprintf(p, sizeof p, "%s%s", path, sfx[i]) >= sizeof p ||
        lstat(p, &sb) != 0 || !S_ISREG(sb.st_mode) ||
        !(sb.st_mode & 077) || sb.st_uid != geteuid())
      continue;
    if (chmod(p, sb.st_mode & 0700) == 0 && n++ == 0)
      was = (unsigned)(sb.st_mode & 07777);
  }
  if (n)
    storage__logf(lg, STORAGE_LOG_WARN,
                  "plan cache %s was readable by others (mode %04o); made "
                  "it readable by its owner only", path, was);
}

/* Opens the connection without touching the file's contents. */
static int open_conn(const char *path, uint32_t busy_timeout_ms,
                     sqlite3 **db, char err[ARENA_ERR_LEN])
{
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
              SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path, db, flags, NULL);
  if (rc != SQLITE_OK) {
    int code = storage__err_of(rc);
    errf(err, code == ARENA_ECORRUPT ? ARENA_EIO : code,
         "cannot open %s: %s", path,
         *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
    sqlite3_close_v2(*db);
    *db = NULL;
    return code == ARENA_ECORRUPT ? ARENA_EIO : code;
  }
  sqlite3_extended_result_codes(*db, 1);
  sqlite3_busy_timeout(*db, (int)busy_timeout_ms);
  return 0;
}

/* Applies the per-connection settings. journal_mode=WAL is persistent in
 * the file, but setting it again is a cheap no-op; synchronous=NORMAL is
 * per connection and must be set every time. In WAL mode NORMAL loses no
 * committed transaction when the process dies, only possibly the last
 * ones on power loss, and it never corrupts the file. */
static int configure(sqlite3 *db, char err[ARENA_ERR_LEN])
{
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &s, NULL);
  if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    const unsigned char *m = sqlite3_column_text(s, 0);
    rc = (m && strcmp((const char *)m, "wal") == 0) ? SQLITE_OK
                                                    : SQLITE_CANTOPEN;
  }
  sqlite3_finalize(s);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
  if (rc != SQLITE_OK)
    return errf(err, storage__err_of(rc), "cannot configure the database: %s",
                sqlite3_errmsg(db));
  return 0;
}

/* The version one step from ver leads to: an empty file goes to the
 * current schema at once, through every script in one transaction (so
 * a new database is exactly what a migrated one is, from the same frozen
 * scripts), anything else one version up. Called inside the step's
 * transaction. Returns the sqlite code. */
static int step_target(sqlite3 *db, int64_t ver, int64_t *to)
{
  int64_t n_objects = 0;
  *to = ver + 1;
  if (ver != 0)
    return SQLITE_OK;
  int rc = query_int(db, "SELECT count(*) FROM sqlite_schema", &n_objects);
  if (rc == SQLITE_OK && n_objects == 0)
    *to = STORAGE__SCHEMA_VERSION;
  return rc;
}

int storage__migrate(sqlite3 *db, const struct storage__log *lg,
                     char err[ARENA_ERR_LEN])
{
  for (;;) {
    int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
      return errf(err, storage__err_of(rc), "cannot start migration: %s",
                  sqlite3_errmsg(db));
    int64_t ver = 0, to = 0;
    rc = query_int(db, "PRAGMA user_version", &ver);
    if (rc == SQLITE_OK && ver >= STORAGE__SCHEMA_VERSION) {
      sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
      return 0;
    }
    if (rc == SQLITE_OK && ver < 0)
      rc = SQLITE_CORRUPT;
    if (rc == SQLITE_OK)
      rc = step_target(db, ver, &to);
    char stamp[96];
    snprintf(stamp, sizeof stamp,
             "PRAGMA application_id=%d; PRAGMA user_version=%d;",
             STORAGE__APP_ID, (int)to);
    for (int64_t v = ver + 1; rc == SQLITE_OK && v <= to; v++)
      rc = sqlite3_exec(db, migrations[v], NULL, NULL, NULL);
    if (rc == SQLITE_OK)
      rc = sqlite3_exec(db, stamp, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
      rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
      int code = errf(err, storage__err_of(rc),
                      "migration to schema version %d failed: %s",
                      (int)(to ? to : ver + 1), sqlite3_errmsg(db));
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
      return code;
    }
    if (ver == 0)
      storage__logf(lg, STORAGE_LOG_INFO, "created plan cache schema v%d",
                    (int)to);
    else
      storage__logf(lg, STORAGE_LOG_INFO,
                    "migrated plan cache from schema v%d to v%d", (int)ver,
                    (int)to);
  }
}

int storage__open_db(const char *path, uint32_t busy_timeout_ms,
                     const struct storage__log *lg, sqlite3 **out,
                     char err[ARENA_ERR_LEN])
{
  *out = NULL;
  sqlite3 *db = NULL;
  /* Two rounds at most: a fresh file created after a move aside must be
   * healthy, or something else is wrong (e.g. the directory). */
  for (int round = 0; round < 2; round++) {
    enum verdict v = file_header(path);
    int rc = create_private(path, err);
    if (rc)
      return rc;
    rc = open_conn(path, busy_timeout_ms, &db, err);
    if (!rc && v == FILE_OK)
      rc = inspect(db, &v, err);
    if (rc) {
      sqlite3_close_v2(db);
      return rc;
    }
    if (v == FILE_OK) {
      tighten_modes(path, lg);
      if ((rc = configure(db, err)) || (rc = storage__migrate(db, lg, err))) {
        /* A file that passed quick_check but cannot take the schema
         * (e.g. a page sqlite only now finds broken) is still bad. */
        if (rc != ARENA_ECORRUPT || round > 0) {
          sqlite3_close_v2(db);
          return rc;
        }
        v = FILE_CORRUPT;
      } else {
        *out = db;
        return 0;
      }
    }
    sqlite3_close_v2(db);
    db = NULL;
    if (round > 0)
      break;
    char aside[4096];
    if ((rc = move_aside(path, verdict_words[v], aside, sizeof aside, err)))
      return rc;
    storage__logf(lg, STORAGE_LOG_WARN,
                  "plan cache %s was %s; moved it aside to %s and created "
                  "a fresh one",
                  path,
                  v == FILE_NOTADB    ? "not a database"
                  : v == FILE_FOREIGN ? "another application's database"
                  : v == FILE_NEWER   ? "from a newer schema"
                                      : "corrupt",
                  aside);
  }
  return errf(err, ARENA_ECORRUPT,
              "a freshly created plan cache at %s is not usable", path);
}

/*
 * config.c - defaults, ini loading and printing (see config.h).
 *
 * DESIGN: one table lists every key with its section, type and field
 * offset, so loading, command-line overrides and --check-config printing
 * cannot disagree about what exists.
 *
 * A file is read strictly: a key set twice (in one section or two, or
 * under its deprecated name and its own) is an error rather than a
 * silent "last one wins", a list of ids with an empty entry ("0,,1") is
 * an error rather than one entry fewer, and a number outside its range
 * is an error rather than a special meaning (for the database caps, 0
 * would have been "no limit": see the note in keys[]).
 */
#include "config.h"

#include <errno.h>
#include <ini.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "planner.h"

enum kind { K_STR, K_UINT, K_U64, K_U32, K_UIDS, K_GIDS };

struct key {
  const char *section;
  const char *name;
  enum kind kind;
  size_t off;
  uint64_t min, max; /* for numbers */
  const char *below; /* why a number below min is refused, or NULL */
};

#define F(field) offsetof(struct daemon_config, field)
static const struct key keys[] = {
    {"daemon", "socket", K_STR, F(socket_path), 0, 0, NULL},
    {"daemon", "database", K_STR, F(db_path), 0, 0, NULL},
    {"daemon", "log_level", K_STR, F(log_level), 0, 0, NULL},
    {"daemon", "workers", K_UINT, F(workers), 1, 128, NULL},
    {"limits", "max_connections", K_UINT, F(max_connections), 1, 1000000,
     NULL},
    {"limits", "max_connections_per_uid", K_UINT,
     F(max_connections_per_uid), 1, 1000000, NULL},
    {"limits", "max_inflight_per_conn", K_UINT, F(max_inflight_per_conn), 1,
     100000, NULL},
    {"limits", "max_queued_jobs", K_UINT, F(max_queued_jobs), 1, 1000000,
     NULL},
    {"limits", "max_frame_bytes", K_U64, F(max_frame_bytes), 64, 1ull << 30,
     NULL},
    {"limits", "request_mem_bytes", K_U64, F(request_mem_bytes), 4096,
     1ull << 34, NULL},
    {"limits", "max_tensors", K_U64, F(max_tensors), 1, 16000000, NULL},
    {"limits", "write_queue_bytes", K_U64, F(write_queue_bytes), 4096,
     1ull << 32, NULL},
    {"limits", "write_queue_max_bytes", K_U64, F(write_queue_max_bytes),
     4096, 1ull << 34, NULL},
    {"limits", "write_queue_max_bytes_per_uid", K_U64,
     F(write_queue_max_bytes_per_uid), 4096, 1ull << 36, NULL},
    {"limits", "idle_timeout_ms", K_U64, F(idle_timeout_ms), 10,
     86400000ull, NULL},
    {"limits", "handshake_timeout_ms", K_U64, F(handshake_timeout_ms), 10,
     86400000ull, NULL},
    {"limits", "drain_timeout_ms", K_U64, F(drain_timeout_ms), 0,
     3600000ull, NULL},
    {"planner", "default_effort", K_U32, F(default_effort), 0,
     DAEMON_EFFORT_MAX, NULL},
    {"planner", "max_effort", K_U32, F(max_effort), 1, DAEMON_EFFORT_MAX,
     NULL},
    {"cache", "memory_bytes", K_U64, F(memory_cache_bytes), 0, 1ull << 40,
     NULL},
    {"cache", "memory_entries", K_U64, F(memory_cache_entries), 0,
     100000000ull, NULL},
    /* The storage reads a cap of 0 as "no limit"; a configuration that
     * says 0 most likely means something else, so it is refused. */
    {"cache", "db_max_bytes", K_U64, F(db_max_bytes), 1, 1ull << 50,
     "0 would mean no limit at all; give the most bytes the cache may hold"},
    {"cache", "db_max_entries", K_U64, F(db_max_entries), 1, 1ull << 40,
     "0 would mean no limit at all; give the most plans the cache may hold"},
    {"cache", "preload_dir", K_STR, F(preload_dir), 0, 0, NULL},
    {"improve", "enabled", K_UINT, F(improve_enabled), 0, 1, NULL},
    {"improve", "threads", K_UINT, F(improve_threads), 0, 128, NULL},
    {"improve", "max_effort", K_U32, F(improve_max_effort), 1,
     DAEMON_EFFORT_MAX, NULL},
    {"improve", "max_tensors", K_U64, F(improve_max_tensors), 1, 16000000,
     NULL},
    {"improve", "window_tensors", K_U64, F(improve_window_tensors), 2,
     16000000, NULL},
    {"improve", "run_cpu_ms", K_U64, F(improve_run_cpu_ms), 1, 86400000ull,
     NULL},
    {"improve", "cpu_ms_per_hour", K_U64, F(improve_cpu_ms_per_hour), 0,
     3600000ull * 128, NULL},
    {"access", "allow_uids", K_UIDS, F(allow_uids), 0, 0, NULL},
    {"access", "allow_gids", K_GIDS, F(allow_gids), 0, 0, NULL},
};
#undef F

/* Deprecated names that still set a key, with the same value. The effort
 * was once a time budget in ms, with the same numbers. */
static const struct alias {
  const char *section, *name; /* the old name */
  const char *full, *use;     /* "section.old", "section.new" for the log */
  const char *key;            /* the new key, in the same section */
} aliases[] = {
    {"planner", "default_budget_ms", "planner.default_budget_ms",
     "planner.default_effort", "default_effort"},
};

void daemon_config_defaults(struct daemon_config *c)
{
  memset(c, 0, sizeof *c);
  snprintf(c->socket_path, sizeof c->socket_path, "%s", DAEMON_DEFAULT_SOCKET);
  snprintf(c->db_path, sizeof c->db_path, "%s", DAEMON_DEFAULT_DB);
  snprintf(c->preload_dir, sizeof c->preload_dir, "%s",
           DAEMON_DEFAULT_PRELOAD_DIR);
  snprintf(c->log_level, sizeof c->log_level, "info");
  c->workers = 2;
  c->max_connections = 256;
  c->max_connections_per_uid = 128;
  c->max_inflight_per_conn = 32;
  c->max_queued_jobs = 256;
  c->max_frame_bytes = 16u << 20;
  c->request_mem_bytes = 256ull << 20;
  c->max_tensors = 2097152;
  c->write_queue_bytes = 4u << 20;
  c->write_queue_max_bytes = 16u << 20;
  c->write_queue_max_bytes_per_uid = 32u << 20;
  c->idle_timeout_ms = 60000;
  c->handshake_timeout_ms = 5000;
  c->drain_timeout_ms = 10000;
  c->default_effort = PLANNER_DEFAULT_EFFORT;
  c->max_effort = 10 * PLANNER_DEFAULT_EFFORT;
  c->memory_cache_bytes = 64ull << 20;
  c->memory_cache_entries = 4096;
  c->db_max_bytes = 512ull << 20;
  c->db_max_entries = 100000;
  c->improve_enabled = 1;
  c->improve_threads = 0;
  c->improve_max_effort = 20000;
  c->improve_max_tensors = 1048576;
  c->improve_window_tensors = 16384;
  c->improve_run_cpu_ms = 120000;
  c->improve_cpu_ms_per_hour = 900000;
}

static int parse_u64(const char *v, uint64_t min, uint64_t max,
                     uint64_t *out)
{
  if (!*v || *v == '-' || *v == '+')
    return -1;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  /* allow k/M/G suffixes for byte counts */
  uint64_t mul = 1;
  if (*end == 'k' || *end == 'K')
    mul = 1024, end++;
  else if (*end == 'M')
    mul = 1024 * 1024, end++;
  else if (*end == 'G')
    mul = 1024ull * 1024 * 1024, end++;
  if (errno || *end || x > UINT64_MAX / mul)
    return -1;
  x *= mul;
  if (x < min || x > max)
    return -1;
  *out = x;
  return 0;
}

static const char *skip_blanks(const char *p)
{
  while (*p == ' ' || *p == '\t')
    p++;
  return p;
}

/* Parses one id of a list at *p, up to the next comma or the end, and
 * moves *p past it. Writes what is wrong with it into why (len bytes)
 * and returns -1, or returns 0. */
static int parse_id(const char **p, unsigned *id, char *why, size_t len)
{
  const char *s = skip_blanks(*p), *e = s;
  uint64_t x = 0;
  while (*e >= '0' && *e <= '9' && x <= UINT32_MAX)
    x = x * 10 + (uint64_t)(*e++ - '0');
  const char *end = skip_blanks(e);
  if (e == s && (*end == ',' || *end == '\0')) {
    snprintf(why, len, "an empty entry (two commas, or one at an end)");
    return -1;
  }
  if (e == s || (*end != ',' && *end != '\0') || x > UINT32_MAX - 1) {
    snprintf(why, len, "'%.*s' is not a numeric id from 0 to %u",
             (int)strcspn(s, ","), s, UINT32_MAX - 1);
    return -1;
  }
  *id = (unsigned)x;
  *p = end;
  return 0;
}

/* Parses "1000, 1001" into ids: numeric ids separated by commas, blanks
 * around them allowed; nothing at all is the empty list. Returns 0, or
 * -1 with why (len bytes) saying what is wrong. */
static int parse_ids(const char *v, unsigned *ids, unsigned *n, char *why,
                     size_t len)
{
  const char *p = skip_blanks(v);
  *n = 0;
  if (*p == '\0')
    return 0;
  for (;;) {
    if (*n == DAEMON_MAX_ALLOW) {
      snprintf(why, len, "more than %d ids", DAEMON_MAX_ALLOW);
      return -1;
    }
    if (parse_id(&p, &ids[*n], why, len))
      return -1;
    (*n)++;
    if (*p == '\0')
      return 0;
    p++; /* the comma */
  }
}

static int named(const char *sec, const char *name, const char *section,
                 const char *key)
{
  return strcmp(name, key) == 0 &&
         (!section || !*section || strcmp(sec, section) == 0);
}

/* Finds a key by its name or a deprecated one (*alias is then set). */
static const struct key *find_key(const char *section, const char *name,
                                  const struct alias **alias)
{
  *alias = NULL;
  for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
    if (named(aliases[i].section, aliases[i].name, section, name)) {
      *alias = &aliases[i];
      section = aliases[i].section;
      name = aliases[i].key;
      break;
    }
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
    if (named(keys[i].section, keys[i].name, section, name))
      return &keys[i];
  return NULL;
}

/* Sets the id list of k from v. Returns 0, or -1 with why
 * (ARENA_ERR_LEN bytes) saying what is wrong. */
static int set_ids(struct daemon_config *c, const struct key *k,
                   const char *v, char *why)
{
  unsigned ids[DAEMON_MAX_ALLOW], n;
  if (parse_ids(v, ids, &n, why, ARENA_ERR_LEN))
    return -1;
  for (unsigned i = 0; i < n; i++)
    if (k->kind == K_UIDS)
      c->allow_uids[i] = (uid_t)ids[i];
    else
      c->allow_gids[i] = (gid_t)ids[i];
  if (k->kind == K_UIDS)
    c->n_allow_uids = n;
  else
    c->n_allow_gids = n;
  return 0;
}

/* Sets the number k from v, like set_ids. */
static int set_number(struct daemon_config *c, const struct key *k,
                      const char *v, char *why)
{
  char *base = (char *)c + k->off;
  uint64_t x;
  if (parse_u64(v, k->min, k->max, &x)) {
    if (k->below && k->min > 0 && parse_u64(v, 0, k->min - 1, &x) == 0)
      snprintf(why, ARENA_ERR_LEN, "'%s' is refused: %s (%" PRIu64
               " to %" PRIu64 ")", v, k->below, k->min, k->max);
    else
      snprintf(why, ARENA_ERR_LEN, "'%s' is not a whole number from %" PRIu64
               " to %" PRIu64, v, k->min, k->max);
    return -1;
  }
  if (k->kind == K_U64)
    *(uint64_t *)(void *)base = x;
  else if (k->kind == K_U32)
    *(uint32_t *)(void *)base = (uint32_t)x;
  else
    *(unsigned *)(void *)base = (unsigned)x;
  return 0;
}

static int set_value(struct daemon_config *c, const struct key *k,
                     const char *v, char *why)
{
  if (k->kind == K_UIDS || k->kind == K_GIDS)
    return set_ids(c, k, v, why);
  if (k->kind != K_STR)
    return set_number(c, k, v, why);
  size_t cap = k->off == offsetof(struct daemon_config, log_level)
                   ? sizeof c->log_level
                   : DAEMON_PATH_MAX;
  if (strlen(v) >= cap) {
    snprintf(why, ARENA_ERR_LEN, "value too long");
    return -1;
  }
  memcpy((char *)c + k->off, v, strlen(v) + 1);
  return 0;
}

static int unknown_key(const char *section, const char *key, char *err)
{
  if (err)
    snprintf(err, ARENA_ERR_LEN, "unknown key '%s%s%s'",
             section && *section ? section : "",
             section && *section ? "." : "", key);
  return ARENA_EPARSE;
}

/* Sets key k (named by its deprecated alias al, or NULL) from value. */
static int set_key(struct daemon_config *c, const struct key *k,
                   const struct alias *al, const char *value, char *err)
{
  char why[ARENA_ERR_LEN];
  if (set_value(c, k, value, why)) {
    if (err)
      snprintf(err, ARENA_ERR_LEN, "%s.%s: %.200s", k->section,
               al ? al->name : k->name, why);
    return ARENA_EPARSE;
  }
  if (al) {
    c->deprecated_key = al->full;
    c->replaced_by = al->use;
  }
  return 0;
}

int daemon_config_set(struct daemon_config *c, const char *section,
                      const char *key, const char *value,
                      char err[ARENA_ERR_LEN])
{
  const struct alias *al;
  const struct key *k = find_key(section, key, &al);
  return k ? set_key(c, k, al, value, err) : unknown_key(section, key, err);
}

#define N_KEYS (sizeof keys / sizeof *keys)

struct load_ctx {
  struct daemon_config *c;
  char *err;
  int failed;
  unsigned char seen[N_KEYS]; /* 1: set in this file, 2: under an alias */
};

/* A key the file already set: an error, whatever the two values. */
static int set_twice(const struct key *k, const struct alias *al,
                     unsigned char first, char *err)
{
  const struct alias *old = NULL;
  for (size_t i = 0; !old && i < sizeof aliases / sizeof *aliases; i++)
    if (strcmp(aliases[i].key, k->name) == 0 &&
        strcmp(aliases[i].section, k->section) == 0)
      old = &aliases[i];
  if (err && (al || first == 2) && old)
    snprintf(err, ARENA_ERR_LEN,
             "%s.%s is set more than once (%s is its old name)", k->section,
             k->name, old->full);
  else if (err)
    snprintf(err, ARENA_ERR_LEN, "%s.%s is set more than once", k->section,
             k->name);
  return ARENA_EPARSE;
}

static int on_ini(void *user, const char *section, const char *name,
                  const char *value)
{
  struct load_ctx *lc = user;
  const struct alias *al;
  if (lc->failed)
    return 0;
  const struct key *k = find_key(section, name, &al);
  int rc = !k                       ? unknown_key(section, name, lc->err)
           : lc->seen[k - keys] != 0 ? set_twice(k, al, lc->seen[k - keys],
                                                lc->err)
                                     : set_key(lc->c, k, al, value, lc->err);
  if (rc) {
    lc->failed = 1;
    return 0;
  }
  lc->seen[k - keys] = al ? 2 : 1;
  return 1;
}

/* The line of f's first NUL byte, or 0 when it has none; reads f to its
 * end. libinih reads lines as C strings, so a NUL would end its line
 * there and the rest would be dropped without a word. */
static int nul_line(FILE *f)
{
  char buf[4096];
  size_t n;
  int line = 1;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    for (size_t i = 0; i < n; i++) {
      if (buf[i] == '\0')
        return line;
      line += buf[i] == '\n';
    }
  return 0;
}

int daemon_config_load(struct daemon_config *c, const char *path,
                       char err[ARENA_ERR_LEN])
{
  char why[ARENA_ERR_LEN] = "";
  struct load_ctx lc;
  memset(&lc, 0, sizeof lc);
  lc.c = c;
  lc.err = why;
  FILE *f = fopen(path, "r");
  if (!f) {
    if (err)
      snprintf(err, ARENA_ERR_LEN, "%s: %s", path, strerror(errno));
    return errno == ENOENT ? ARENA_ENOENT : ARENA_EIO;
  }
  int nul = nul_line(f);
  if (nul || ferror(f) || fseek(f, 0, SEEK_SET) != 0) {
    if (err && nul)
      snprintf(err, ARENA_ERR_LEN,
               "%s:%d: a NUL byte; the configuration must be text", path,
               nul);
    else if (err) /* a directory: fopen succeeds, reading fails */
      snprintf(err, ARENA_ERR_LEN, "%s: cannot read it: %s", path,
               strerror(errno ? errno : EIO));
    fclose(f);
    return nul ? ARENA_EPARSE : ARENA_EIO;
  }
  int line = ini_parse_file(f, on_ini, &lc);
  fclose(f);
  if (line != 0) {
    if (err)
      snprintf(err, ARENA_ERR_LEN, "%s:%d: %s", path, line,
               lc.failed ? why : "syntax error");
    return ARENA_EPARSE;
  }
  return 0;
}

int daemon_config_validate(const struct daemon_config *c,
                           char err[ARENA_ERR_LEN])
{
  enum dlog_level lvl;
  const char *why = NULL;
  if (!c->socket_path[0])
    why = "daemon.socket is empty";
  else if (!c->db_path[0])
    why = "daemon.database is empty";
  else if (dlog_parse_level(c->log_level, &lvl))
    why = "daemon.log_level must be error, warning, notice, info or debug";
  else if (strlen(c->socket_path) >= 108)
    why = "daemon.socket is longer than a Unix socket path may be (107)";
  else if ((c->default_effort ? c->default_effort : PLANNER_DEFAULT_EFFORT) >
           c->max_effort)
    why = "planner.default_effort is above planner.max_effort";
  if (why && err)
    snprintf(err, ARENA_ERR_LEN, "%s", why);
  return why ? ARENA_EINVAL : 0;
}

int daemon_config_check_paths(const struct daemon_config *c,
                              char err[ARENA_ERR_LEN])
{
  char dir[DAEMON_PATH_MAX];
  struct stat sb;
  snprintf(dir, sizeof dir, "%s", c->db_path);
  char *slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == dir)
    dir[1] = '\0';
  else
    *slash = '\0';
  if (stat(dir, &sb) != 0) {
    int e = errno;
    if (err)
      snprintf(err, ARENA_ERR_LEN,
               "daemon.database is %.80s, but its folder %.80s %.40s", c->db_path,
               dir, e == ENOENT ? "does not exist" : strerror(e));
    return e == ENOENT ? ARENA_ENOENT : ARENA_EINVAL;
  }
  if (!S_ISDIR(sb.st_mode)) {
    if (err)
      snprintf(err, ARENA_ERR_LEN,
               "daemon.database is %.96s, but %.96s is not a folder",
               c->db_path, dir);
    return ARENA_EINVAL;
  }
  return 0;
}

int daemon_config_deprecation(const struct daemon_config *c, char *buf,
                              size_t len)
{
  if (!c->deprecated_key)
    return 0;
  snprintf(buf, len, "%s is deprecated; use %s (the same number, in effort "
                     "units)", c->deprecated_key, c->replaced_by);
  return 1;
}

static void print_ids(FILE *f, const char *name, const unsigned *ids,
                      unsigned n)
{
  fprintf(f, "%s =", name);
  for (unsigned i = 0; i < n; i++)
    fprintf(f, "%s%u", i ? ", " : " ", ids[i]);
  fputc('\n', f);
}

void daemon_config_print(const struct daemon_config *c, FILE *f)
{
  const char *section = "";
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    const struct key *k = &keys[i];
    const char *base = (const char *)c + k->off;
    if (strcmp(section, k->section) != 0) {
      fprintf(f, "%s[%s]\n", i ? "\n" : "", k->section);
      section = k->section;
    }
    switch (k->kind) {
    case K_STR:
      fprintf(f, "%s = %s\n", k->name, base);
      break;
    case K_UINT:
      fprintf(f, "%s = %u\n", k->name, *(const unsigned *)(const void *)base);
      break;
    case K_U32:
      fprintf(f, "%s = %" PRIu32 "\n", k->name,
              *(const uint32_t *)(const void *)base);
      break;
    case K_U64:
      fprintf(f, "%s = %" PRIu64 "\n", k->name,
              *(const uint64_t *)(const void *)base);
      break;
    case K_UIDS: {
      unsigned ids[DAEMON_MAX_ALLOW];
      for (unsigned j = 0; j < c->n_allow_uids; j++)
        ids[j] = (unsigned)c->allow_uids[j];
      print_ids(f, k->name, ids, c->n_allow_uids);
      break;
    }
    case K_GIDS: {
      unsigned ids[DAEMON_MAX_ALLOW];
      for (unsigned j = 0; j < c->n_allow_gids; j++)
        ids[j] = (unsigned)c->allow_gids[j];
      print_ids(f, k->name, ids, c->n_allow_gids);
      break;
    }
    }
  }
}
